//! Helpers shared by the whole-workspace tests in `tests/tests/`.
