//! The operators of the admin API and console (`/api/v1/`, `/console/`): their
//! credentials and roles, and the audit log of what they change — sans-IO.
//!
//! Each operator has a name, a [`Role`] and a bearer token. The list comes from the
//! `operators` setting (`GATEWAY_OPERATORS_FILE`, one operator a line: `name:role:token`,
//! where the token may be given as `sha256:HEX` so the file need not hold it in clear). The
//! old single `admin_token` is the operator `admin` with the admin role. A request's token
//! is hashed (SHA-256) and compared with every operator's hash in constant time.
//!
//! Every state-changing call is an [`AuditEntry`] (who, what, on what, when, the result),
//! kept in the store and, the most recent [`AUDIT_RECENT`], in memory for the console.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Shortest token accepted in clear (bytes).
pub const MIN_TOKEN_LEN: usize = 24;
/// Longest operator name (bytes).
pub const MAX_NAME_LEN: usize = 32;
/// Most operators.
pub const MAX_OPERATORS: usize = 256;
/// Audit entries kept in memory (the store keeps all).
pub const AUDIT_RECENT: usize = 2_000;

/// What an operator may do. Each role may do what the ones before it may.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Reads: the cluster, the live map, players, characters, chat, script errors, the
    /// audit log.
    Viewer,
    /// Player support and moderation: kick, warp, mute, ban, message, broadcast.
    Moderator,
    /// Everything: accounts and DM rights, the maintenance lock and shutdowns, script
    /// reloads and imports, restoring characters, draining nodes.
    Admin,
}

impl Role {
    /// Its name (`viewer`, `moderator`, `admin`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Viewer => "viewer",
            Self::Moderator => "moderator",
            Self::Admin => "admin",
        }
    }

    /// The role of a name (ASCII case ignored).
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "viewer" => Some(Self::Viewer),
            "moderator" => Some(Self::Moderator),
            "admin" => Some(Self::Admin),
            _ => None,
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operator {
    /// Its name (in the audit log).
    pub name: String,
    /// What it may do.
    pub role: Role,
    token_sha256: [u8; 32],
}

impl Operator {
    /// An operator whose token is `token` (in clear).
    pub fn new(name: &str, role: Role, token: &str) -> Self {
        Self {
            name: name.to_owned(),
            role,
            token_sha256: digest(token),
        }
    }
}

/// Why the operator list was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("operators, line {line}: {why}")]
pub struct OperatorsError {
    /// 1-based line (or `;`-separated entry).
    pub line: usize,
    /// What is wrong.
    pub why: String,
}

/// Every operator.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Operators {
    list: Vec<Operator>,
}

impl Operators {
    /// Reads the list: one operator a line (or `;`-separated), `name:role:token`; blank
    /// lines and lines starting with `#` are skipped. `token` is at least
    /// [`MIN_TOKEN_LEN`] bytes, or `sha256:` and the 64 hex digits of its SHA-256. With
    /// `admin_token` set, `admin` is added as an admin with that token (unless the list
    /// names `admin` itself).
    pub fn parse(text: &str, admin_token: &str) -> Result<Self, OperatorsError> {
        let mut list: Vec<Operator> = Vec::new();
        for (i, entry) in text.split(['\n', ';']).enumerate() {
            let line = i + 1;
            let entry = entry.trim();
            if entry.is_empty() || entry.starts_with('#') {
                continue;
            }
            let bad = |why: &str| OperatorsError {
                line,
                why: why.to_owned(),
            };
            let mut parts = entry.splitn(3, ':');
            let (Some(name), Some(role), Some(token)) = (parts.next(), parts.next(), parts.next())
            else {
                return Err(bad("expected name:role:token"));
            };
            let name = name.trim();
            if name.is_empty()
                || name.len() > MAX_NAME_LEN
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
            {
                return Err(bad(&format!(
                    "the name must be 1 to {MAX_NAME_LEN} letters, digits, `_`, `-` or `.`"
                )));
            }
            let Some(role) = Role::parse(role) else {
                return Err(bad("the role must be viewer, moderator or admin"));
            };
            let token = token.trim();
            let hash = if let Some(hex_digits) = token.strip_prefix("sha256:") {
                let mut h = [0u8; 32];
                hex::decode_to_slice(hex_digits.trim(), &mut h)
                    .map_err(|_| bad("sha256: needs 64 hex digits"))?;
                h
            } else if token.len() < MIN_TOKEN_LEN {
                return Err(bad(&format!(
                    "the token must be at least {MIN_TOKEN_LEN} bytes (or sha256:HEX)"
                )));
            } else {
                digest(token)
            };
            if list.iter().any(|o| o.name.eq_ignore_ascii_case(name)) {
                return Err(bad(&format!("{name:?} is named twice")));
            }
            if list.len() >= MAX_OPERATORS {
                return Err(bad(&format!("at most {MAX_OPERATORS} operators")));
            }
            list.push(Operator {
                name: name.to_owned(),
                role,
                token_sha256: hash,
            });
        }
        if !admin_token.is_empty() && !list.iter().any(|o| o.name.eq_ignore_ascii_case("admin")) {
            list.push(Operator::new("admin", Role::Admin, admin_token));
        }
        Ok(Self { list })
    }

    /// Whether there is no operator (the API is off).
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// How many operators.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// The operator whose token `token` is. Every operator's hash is compared, each in
    /// constant time, so the time taken says nothing about which hash matched or how
    /// much of one did.
    pub fn authenticate(&self, token: &str) -> Option<&Operator> {
        if token.is_empty() {
            return None;
        }
        let got = digest(token);
        let mut found = None;
        for o in &self.list {
            if ct_eq(&o.token_sha256, &got) && found.is_none() {
                found = Some(o);
            }
        }
        found
    }

    /// The operators (names and roles).
    pub fn iter(&self) -> impl Iterator<Item = &Operator> {
        self.list.iter()
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Equal, in time independent of where they differ.
fn ct_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// One state-changing call of the admin API (or `POST /admin`), as the audit log keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// Its number (increasing).
    pub id: u64,
    /// When (Unix ms).
    pub at_ms: u64,
    /// The operator.
    pub operator: String,
    /// Its role then.
    pub role: Role,
    /// What (e.g. `ban`, `kick`, `lock`).
    pub action: String,
    /// On what (an account, a character, a node; empty: the cluster).
    pub target: String,
    /// The call's parameters (JSON, passwords left out).
    pub detail: String,
    /// Whether it succeeded.
    pub ok: bool,
    /// What it answered.
    pub result: String,
}

/// The most recent audit entries, newest last.
#[derive(Debug, Default)]
pub struct AuditLog {
    recent: VecDeque<AuditEntry>,
    next_id: u64,
}

impl AuditLog {
    /// A log continuing after `stored` (oldest first, as the store loaded them).
    pub fn with(stored: Vec<AuditEntry>) -> Self {
        let next_id = stored.iter().map(|e| e.id).max().map_or(1, |m| m + 1);
        let mut recent: VecDeque<AuditEntry> = stored.into();
        while recent.len() > AUDIT_RECENT {
            recent.pop_front();
        }
        Self { recent, next_id }
    }

    /// Records `entry` with the next number; returns it as recorded (for the store).
    pub fn record(&mut self, mut entry: AuditEntry) -> AuditEntry {
        entry.id = self.next_id;
        self.next_id += 1;
        if self.recent.len() >= AUDIT_RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back(entry.clone());
        entry
    }

    /// The newest `limit` entries matching `filter` (case-insensitive, in the operator,
    /// action or target), newest first.
    pub fn query(&self, filter: &str, limit: usize) -> Vec<AuditEntry> {
        let f = filter.to_ascii_lowercase();
        self.recent
            .iter()
            .rev()
            .filter(|e| {
                f.is_empty()
                    || e.operator.to_ascii_lowercase().contains(&f)
                    || e.action.to_ascii_lowercase().contains(&f)
                    || e.target.to_ascii_lowercase().contains(&f)
            })
            .take(limit)
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T1: &str = "a-token-of-twenty-four-b1";
    const T2: &str = "a-token-of-twenty-four-b2";

    #[test]
    fn parses_names_roles_and_tokens() {
        let hashed = hex::encode(digest(T2));
        let text = format!("# the staff\nalice:admin:{T1}\n\n bob : Moderator : sha256:{hashed}\n");
        let ops = Operators::parse(&text, "").unwrap();
        assert_eq!(ops.len(), 2);
        let a = ops.authenticate(T1).unwrap();
        assert_eq!((a.name.as_str(), a.role), ("alice", Role::Admin));
        let b = ops.authenticate(T2).unwrap();
        assert_eq!((b.name.as_str(), b.role), ("bob", Role::Moderator));
        assert!(ops.authenticate("").is_none());
        assert!(ops.authenticate("a-token-of-twenty-four-b3").is_none());
        assert!(ops.authenticate(&T1[..20]).is_none());
    }

    #[test]
    fn semicolons_separate_entries_and_the_admin_token_is_the_admin() {
        let ops = Operators::parse(
            &format!("v:viewer:{T1};m:moderator:{T2}"),
            "x".repeat(30).as_str(),
        )
        .unwrap();
        assert_eq!(ops.len(), 3);
        assert_eq!(ops.authenticate(&"x".repeat(30)).unwrap().role, Role::Admin);
        assert_eq!(ops.authenticate(T1).unwrap().role, Role::Viewer);
        // A list naming `admin` keeps its own.
        let ops = Operators::parse(&format!("admin:viewer:{T1}"), &"x".repeat(30)).unwrap();
        assert_eq!(ops.len(), 1);
        assert!(Operators::parse("", "").unwrap().is_empty());
    }

    #[test]
    fn bad_lists_are_refused_with_the_line() {
        for (text, line, why) in [
            ("alice:admin", 1, "name:role:token"),
            (&format!("\nalice:root:{T1}") as &str, 2, "role"),
            ("alice:admin:short", 1, "at least"),
            ("alice:admin:sha256:12", 1, "hex"),
            (&format!("a b:admin:{T1}"), 1, "name"),
            (&format!("alice:admin:{T1}\nALICE:viewer:{T2}"), 2, "twice"),
        ] {
            let e = Operators::parse(text, "").unwrap_err();
            assert_eq!(e.line, line, "{text}");
            assert!(e.why.contains(why), "{text}: {e}");
        }
    }

    #[test]
    fn roles_are_ordered() {
        assert!(Role::Viewer < Role::Moderator && Role::Moderator < Role::Admin);
        assert_eq!(Role::parse("ADMIN"), Some(Role::Admin));
        assert_eq!(Role::parse("root"), None);
    }

    fn entry(op: &str, action: &str, target: &str) -> AuditEntry {
        AuditEntry {
            id: 0,
            at_ms: 1,
            operator: op.into(),
            role: Role::Moderator,
            action: action.into(),
            target: target.into(),
            detail: "{}".into(),
            ok: true,
            result: "done".into(),
        }
    }

    #[test]
    fn the_audit_log_numbers_keeps_and_filters() {
        let mut log = AuditLog::with(vec![AuditEntry {
            id: 7,
            ..entry("alice", "ban", "Bob")
        }]);
        let e = log.record(entry("carol", "kick", "Dave"));
        assert_eq!(e.id, 8);
        assert_eq!(log.query("", 10).len(), 2);
        assert_eq!(log.query("", 10)[0].id, 8, "newest first");
        assert_eq!(log.query("BOB", 10).len(), 1);
        assert_eq!(log.query("kick", 10)[0].operator, "carol");
        for _ in 0..AUDIT_RECENT + 5 {
            log.record(entry("x", "warp", "y"));
        }
        assert_eq!(log.query("", usize::MAX).len(), AUDIT_RECENT);
    }
}
