//! Content errors and warnings: every message names the file, the record and the problem.

use std::fmt;

/// A content file could not be loaded, or the world failed [`super::World::validate`].
///
/// Displayed as `"<file>: <record>: <problem>"`, e.g.
/// `"Areas/Plains.dat: portal 3: string length -5 at byte 1234 is negative"`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", fmt_parts(file, record, problem))]
pub struct ContentError {
    /// The file (relative to the world root, e.g. `Areas/Plains.dat`), or `world` for
    /// whole-world validation of an in-memory `World`.
    pub file: String,
    /// The record within the file (e.g. `portal 3`, `actor 7`), empty when not applicable.
    pub record: String,
    /// What is wrong.
    pub problem: String,
}

impl ContentError {
    /// Builds an error.
    pub fn new(
        file: impl Into<String>,
        record: impl Into<String>,
        problem: impl Into<String>,
    ) -> Self {
        Self {
            file: file.into(),
            record: record.into(),
            problem: problem.into(),
        }
    }
}

/// Something suspicious that Realm Crafter tolerates (e.g. a portal linking to a missing
/// area: the portal simply does nothing). Collected, never fatal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentWarning {
    /// The file (or `world`).
    pub file: String,
    /// The record within the file.
    pub record: String,
    /// What is suspicious.
    pub problem: String,
}

impl ContentWarning {
    /// Builds a warning.
    pub fn new(
        file: impl Into<String>,
        record: impl Into<String>,
        problem: impl Into<String>,
    ) -> Self {
        Self {
            file: file.into(),
            record: record.into(),
            problem: problem.into(),
        }
    }
}

impl fmt::Display for ContentWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&fmt_parts(&self.file, &self.record, &self.problem))
    }
}

fn fmt_parts(file: &str, record: &str, problem: &str) -> String {
    if record.is_empty() {
        format!("{file}: {problem}")
    } else {
        format!("{file}: {record}: {problem}")
    }
}
