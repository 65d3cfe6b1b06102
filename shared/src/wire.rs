//! Placeholder for `wire`; filled in by its own change.
