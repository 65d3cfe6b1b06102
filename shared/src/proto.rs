//! Placeholder for `proto`; filled in by its own change.
