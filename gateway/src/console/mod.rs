//! The operator's console: the web pages at `/console/`, the JSON admin API under
//! `/api/v1/` behind them ([`api`]), the operators and their roles, the audit log
//! ([`operators`]) and the recent chat kept for moderation ([`ChatLog`]).
//!
//! The pages are plain HTML, CSS and JavaScript built into the binary (`assets/`): no CDN,
//! no JavaScript toolchain. Every player-controlled string is put into the page as text,
//! never as markup.

pub mod api;
pub mod operators;

use std::collections::VecDeque;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

pub use operators::{AuditEntry, AuditLog, Operator, Operators, Role};

/// Chat lines kept in memory for the console.
pub const CHAT_RECENT: usize = 5_000;
/// Longest chat line kept (bytes; longer ones are cut at a char boundary).
pub const CHAT_LINE_BYTES: usize = 512;

/// One line a player sent (zone chat or a command), as the console shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatLine {
    /// When (Unix ms).
    pub at_ms: u64,
    /// The character who sent it.
    pub character: String,
    /// Where it was: area.
    pub area: String,
    /// Where it was: instance.
    pub instance: u16,
    /// The text as sent (Latin-1 read as such).
    pub text: String,
    /// Dropped because the sender was muted.
    #[serde(default)]
    pub muted: bool,
}

/// The most recent chat lines, newest last.
#[derive(Debug, Default)]
pub struct ChatLog {
    lines: VecDeque<ChatLine>,
}

impl ChatLog {
    /// Keeps `line` (cut to [`CHAT_LINE_BYTES`]), dropping the oldest past [`CHAT_RECENT`].
    pub fn push(&mut self, mut line: ChatLine) {
        if line.text.len() > CHAT_LINE_BYTES {
            let mut end = CHAT_LINE_BYTES;
            while !line.text.is_char_boundary(end) {
                end -= 1;
            }
            line.text.truncate(end);
        }
        if self.lines.len() >= CHAT_RECENT {
            self.lines.pop_front();
        }
        self.lines.push_back(line);
    }

    /// The newest `limit` lines whose character contains `player` and whose text contains
    /// `text` (both ignoring ASCII case; empty: any), newest first.
    pub fn query(&self, player: &str, text: &str, limit: usize) -> Vec<ChatLine> {
        let (p, t) = (player.to_ascii_lowercase(), text.to_ascii_lowercase());
        self.lines
            .iter()
            .rev()
            .filter(|l| p.is_empty() || l.character.to_ascii_lowercase().contains(&p))
            .filter(|l| t.is_empty() || l.text.to_ascii_lowercase().contains(&t))
            .take(limit)
            .cloned()
            .collect()
    }
}

/// Script errors kept in memory for the console.
pub const SCRIPT_ERRORS_RECENT: usize = 1_000;

/// A script of a zone that ended in an error, as the console shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScriptErrorLine {
    /// When it reached the gateway (Unix ms).
    pub at_ms: u64,
    /// The zone node.
    pub node: String,
    /// Area.
    pub area: String,
    /// Instance.
    pub instance: u16,
    /// Script.
    pub script: String,
    /// Entry function.
    pub func: String,
    /// File of the failing code.
    pub file: String,
    /// Its line.
    pub line: u32,
    /// What happened.
    pub message: String,
    /// `runtime`, `runaway` or `restore`.
    pub kind: String,
}

/// The console's state in the gateway's `Shared`.
#[derive(Debug, Default)]
pub struct ConsoleState {
    /// Who may use the API, and as what.
    pub operators: Operators,
    /// The audit log's recent entries (the store keeps all).
    pub audit: Mutex<AuditLog>,
    /// Recent chat.
    pub chat: Mutex<ChatLog>,
    /// Recent script errors of every zone, newest last.
    pub script_errors: Mutex<VecDeque<ScriptErrorLine>>,
}

impl ConsoleState {
    /// The console of `operators`, with no history yet.
    pub fn new(operators: Operators) -> Self {
        Self {
            operators,
            ..Self::default()
        }
    }

    /// Recent chat (a poisoned lock is recovered: each change is one call).
    pub fn chat(&self) -> std::sync::MutexGuard<'_, ChatLog> {
        crate::lock(&self.chat)
    }

    /// Keeps a script error (the oldest past [`SCRIPT_ERRORS_RECENT`] goes).
    pub fn script_error(&self, e: ScriptErrorLine) {
        let mut q = crate::lock(&self.script_errors);
        if q.len() >= SCRIPT_ERRORS_RECENT {
            q.pop_front();
        }
        q.push_back(e);
    }

    /// The newest `limit` script errors whose script, function, area or message contains
    /// `text`
    /// (ASCII case ignored), newest first.
    pub fn script_errors(&self, text: &str, limit: usize) -> Vec<ScriptErrorLine> {
        let t = text.to_ascii_lowercase();
        let q = crate::lock(&self.script_errors);
        q.iter()
            .rev()
            .filter(|e| {
                t.is_empty()
                    || e.script.to_ascii_lowercase().contains(&t)
                    || e.func.to_ascii_lowercase().contains(&t)
                    || e.area.to_ascii_lowercase().contains(&t)
                    || e.message.to_ascii_lowercase().contains(&t)
            })
            .take(limit)
            .cloned()
            .collect()
    }

    /// The audit log.
    pub fn audit(&self) -> std::sync::MutexGuard<'_, AuditLog> {
        crate::lock(&self.audit)
    }
}

/// A shutdown an operator scheduled (`POST /api/v1/shutdown`).
#[derive(Debug)]
pub struct ShutdownPlan {
    /// When (Unix ms).
    pub at_ms: u64,
    /// Told to the players with each announcement.
    pub message: String,
    /// The countdown (aborted by a cancel).
    pub task: tokio::task::AbortHandle,
}

/// The seconds before a scheduled shutdown at which the players are told.
pub const ANNOUNCE_AT_S: &[u64] = &[
    3_600, 1_800, 900, 600, 300, 180, 120, 60, 30, 10, 5, 4, 3, 2, 1,
];

/// "5 minutes", "1 minute", "30 seconds".
pub fn countdown_text(secs: u64) -> String {
    let (n, unit) = if secs >= 120 && secs.is_multiple_of(60) {
        (secs / 60, "minute")
    } else if secs == 60 {
        (1, "minute")
    } else {
        (secs, "second")
    };
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

/// The time now (Unix ms).
pub fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(who: &str, text: &str) -> ChatLine {
        ChatLine {
            at_ms: 1,
            character: who.into(),
            area: "Start".into(),
            instance: 0,
            text: text.into(),
            muted: false,
        }
    }

    #[test]
    fn countdowns_read_as_players_expect() {
        assert_eq!(countdown_text(600), "10 minutes");
        assert_eq!(countdown_text(60), "1 minute");
        assert_eq!(countdown_text(90), "90 seconds");
        assert_eq!(countdown_text(1), "1 second");
        assert!(ANNOUNCE_AT_S.windows(2).all(|w| w[0] > w[1]));
    }

    #[test]
    fn chat_is_kept_cut_and_searched() {
        let mut log = ChatLog::default();
        log.push(line("Alice", "hello there"));
        log.push(line("Bob", "HELLO back"));
        log.push(line("Alice", &"é".repeat(400)));
        assert_eq!(log.query("", "", 10).len(), 3);
        assert_eq!(log.query("alice", "", 10).len(), 2);
        assert_eq!(log.query("", "hello", 10)[0].character, "Bob");
        let long = &log.query("alice", "", 1)[0].text;
        assert!(long.len() <= CHAT_LINE_BYTES && long.chars().all(|c| c == 'é'));
        for _ in 0..CHAT_RECENT {
            log.push(line("Carol", "x"));
        }
        assert_eq!(log.query("", "", usize::MAX).len(), CHAT_RECENT);
        assert!(log.query("bob", "", 10).is_empty());
    }
}
