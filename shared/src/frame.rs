//! Placeholder for `frame`; filled in by its own change.
