//! Placeholder for `content`; filled in by its own change.
