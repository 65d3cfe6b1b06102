//! Scenario tests of the control plane: events in, actions out, on a manual clock.
