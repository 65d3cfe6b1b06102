//! Diagnostics from loading and compiling scripts, and the runtime errors that end a script
//! instance (never the zone).

use crate::ast::Span;

/// How bad a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// The script (or the function) cannot run.
    Error,
    /// Suspicious but compiled (e.g. top-level code that never runs).
    Warning,
}

/// One compile-time message: `file:line:col: message`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Diagnostic {
    /// The file name as shown (e.g. `Death.rsl`).
    pub file: String,
    /// Where.
    pub span: Span,
    /// Error or warning.
    pub severity: Severity,
    /// What is wrong, in one line.
    pub message: String,
}

impl Diagnostic {
    /// An error.
    pub fn error(file: &str, span: Span, message: impl Into<String>) -> Self {
        Self {
            file: file.to_owned(),
            span,
            severity: Severity::Error,
            message: message.into(),
        }
    }

    /// A warning.
    pub fn warning(file: &str, span: Span, message: impl Into<String>) -> Self {
        Self {
            file: file.to_owned(),
            span,
            severity: Severity::Warning,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sev = match self.severity {
            Severity::Error => "",
            Severity::Warning => "warning: ",
        };
        write!(
            f,
            "{}:{}:{}: {sev}{}",
            self.file, self.span.line, self.span.col, self.message
        )
    }
}

/// A parse error (one line of text at a position).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// Where.
    pub span: Span,
    /// What.
    pub message: String,
}

impl ParseError {
    /// An error at a span.
    pub fn new(span: Span, message: impl Into<String>) -> Self {
        Self {
            span,
            message: message.into(),
        }
    }
}

/// Why a running script stopped with an error. The instance ends; the zone plays on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RuntimeError {
    /// Int division or `Mod` by zero.
    #[error("Division by zero")]
    DivisionByZero,
    /// An array index outside `0..=bound`.
    #[error("Index #{dim} out of bound, found {index} but should be in [0..{bound}]")]
    IndexOutOfBounds {
        /// Which dimension (1-based).
        dim: usize,
        /// The index given.
        index: i32,
        /// The upper bound.
        bound: u32,
    },
    /// Calls nested too deeply.
    #[error("Stack overflow (calls nested deeper than {0})")]
    StackOverflow(usize),
    /// A string or array larger than the instance may hold.
    #[error("memory limit: {0}")]
    Memory(String),
    /// `End` was called.
    #[error("End called")]
    End,
    /// `RuntimeError(msg)` was called.
    #[error("RuntimeError: {0}")]
    Raised(String),
    /// A native that belongs to a later part of the port.
    #[error("{native} is not supported yet ({what})")]
    NotSupported {
        /// Native name.
        native: &'static str,
        /// Which area (items, spells and effects, dialogs and quests).
        what: &'static str,
    },
    /// A native refused because it would reach outside the script's sandbox.
    #[error("{native} is refused: {why}")]
    Refused {
        /// Native name.
        native: &'static str,
        /// Why.
        why: &'static str,
    },
    /// A native failed.
    #[error("{native}: {message}")]
    Native {
        /// Native name.
        native: &'static str,
        /// What went wrong.
        message: String,
    },
    /// Ended by the runtime (budget overruns, an invalid wait, ...).
    #[error("{0}")]
    Ended(String),
    /// The bytecode or the saved state is inconsistent (a bug, or a state saved by other
    /// code).
    #[error("internal error: {0}")]
    Internal(String),
}
