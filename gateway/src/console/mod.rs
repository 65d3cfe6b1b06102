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

/// The console's state in the gateway's `Shared`.
#[derive(Debug, Default)]
pub struct ConsoleState {
    /// Who may use the API, and as what.
    pub operators: Operators,
    /// The audit log's recent entries (the store keeps all).
    pub audit: Mutex<AuditLog>,
    /// Recent chat.
    pub chat: Mutex<ChatLog>,
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
        self.chat
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The audit log.
    pub fn audit(&self) -> std::sync::MutexGuard<'_, AuditLog> {
        self.audit
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
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
