//! The store's health, as plain data: why a write failed ([`FailCause`], `SQLITE_FULL`
//! named as such), the outage a run of failures makes and its root cause
//! ([`Health`]: a later error caused by the first, such as a FOREIGN KEY error for an
//! account row the full disk never took, never hides it), and what a failed write left
//! unsaved ([`Dirty`]), rewritten from the gateway's memory once the store heals
//! ([`resync_ops`]). No clock, no I/O: the writer thread feeds it results.

use std::collections::{BTreeSet, HashMap};

use shared::internal::{GroundItemDto, InstanceKey};

use super::StoreError;
use crate::session::{AccountBook, AccountId, PersistOp};

/// Why a write failed: the label of the log line and of
/// `rc_gateway_store_write_failures_total{cause}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailCause {
    /// `SQLITE_FULL`: the disk (or the database's page quota) is full.
    DiskFull,
    /// `SQLITE_IOERR`, `SQLITE_CANTOPEN`, `SQLITE_PERM`: the file system failed.
    Io,
    /// `SQLITE_READONLY`: the file or its directory became read-only.
    ReadOnly,
    /// `SQLITE_BUSY` / `SQLITE_LOCKED` past the busy timeout.
    Busy,
    /// `SQLITE_CORRUPT` / `SQLITE_NOTADB`.
    Corrupt,
    /// A constraint (UNIQUE, FOREIGN KEY, CHECK): a problem of the data, not of the disk.
    Constraint,
    /// A value that could not be encoded.
    Encode,
    /// Anything else (the writer thread gone, an unexpected SQLite code).
    Other,
}

impl FailCause {
    /// Every cause, in the order the metric lists them.
    pub const ALL: [Self; 8] = [
        Self::DiskFull,
        Self::Io,
        Self::ReadOnly,
        Self::Busy,
        Self::Corrupt,
        Self::Constraint,
        Self::Encode,
        Self::Other,
    ];

    /// The label (`disk_full`, `io`, ...).
    pub const fn label(self) -> &'static str {
        match self {
            Self::DiskFull => "disk_full",
            Self::Io => "io",
            Self::ReadOnly => "read_only",
            Self::Busy => "busy",
            Self::Corrupt => "corrupt",
            Self::Constraint => "constraint",
            Self::Encode => "encode",
            Self::Other => "other",
        }
    }

    /// Its index in [`Self::ALL`].
    pub fn index(self) -> usize {
        Self::ALL.iter().position(|&c| c == self).unwrap_or(0)
    }

    /// The cause of a storage error.
    pub fn of(e: &StoreError) -> Self {
        use rusqlite::ErrorCode as C;
        match e {
            StoreError::Sqlite(e) => match e.sqlite_error_code() {
                Some(C::DiskFull) => Self::DiskFull,
                Some(
                    C::SystemIoFailure
                    | C::CannotOpen
                    | C::PermissionDenied
                    | C::NoLargeFileSupport
                    | C::FileLockingProtocolFailed,
                ) => Self::Io,
                Some(C::ReadOnly) => Self::ReadOnly,
                Some(C::DatabaseBusy | C::DatabaseLocked) => Self::Busy,
                Some(C::DatabaseCorrupt | C::NotADatabase) => Self::Corrupt,
                Some(C::ConstraintViolation) => Self::Constraint,
                _ => Self::Other,
            },
            StoreError::Postgres(e) => match e.code().map(postgres::error::SqlState::code) {
                // By SQLSTATE class: 23 integrity, 53 resources (53100 disk full), 25006
                // a read-only transaction, 40 and 55P03 conflicts, 08 the connection,
                // 58 the server's I/O, XX001/XX002 corruption.
                Some(c) if c.starts_with("23") => Self::Constraint,
                Some("53100") => Self::DiskFull,
                Some("25006") => Self::ReadOnly,
                Some(c) if c.starts_with("40") || c == "55P03" => Self::Busy,
                Some(c) if c.starts_with("08") || c.starts_with("58") => Self::Io,
                Some("XX001" | "XX002") => Self::Corrupt,
                Some(_) => Self::Other,
                // No SQLSTATE: the connection itself failed.
                None => Self::Io,
            },
            StoreError::Dir { .. } => Self::Io,
            StoreError::Encode(_) => Self::Encode,
            _ => Self::Other,
        }
    }

    /// Whether the cause is the store's (the disk, the file) rather than one write's data:
    /// such a failure puts the store out of service until a write succeeds again.
    pub const fn is_outage(self) -> bool {
        !matches!(self, Self::Constraint | Self::Encode)
    }

    /// The SQLite name an operator searches for, when there is one.
    pub const fn sqlite_name(self) -> &'static str {
        match self {
            Self::DiskFull => "SQLITE_FULL",
            Self::Io => "SQLITE_IOERR",
            Self::ReadOnly => "SQLITE_READONLY",
            Self::Busy => "SQLITE_BUSY",
            Self::Corrupt => "SQLITE_CORRUPT",
            Self::Constraint => "SQLITE_CONSTRAINT",
            Self::Encode | Self::Other => "",
        }
    }
}

/// One failed write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Why.
    pub cause: FailCause,
    /// The error's text.
    pub message: String,
}

impl Failure {
    /// A failure from a storage error.
    pub fn of(e: &StoreError) -> Self {
        Self {
            cause: FailCause::of(e),
            message: e.to_string(),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.cause.sqlite_name() {
            "" => write!(f, "{}: {}", self.cause.label(), self.message),
            n => write!(f, "{} ({n}): {}", self.cause.label(), self.message),
        }
    }
}

/// What one write result changed in the health.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Nothing new.
    None,
    /// The store went out of service with this root cause.
    Outage,
    /// Another failure while out of service (its root cause is kept).
    StillFailing,
    /// A failure of one write's data while in service (the store stays in service).
    DataError,
    /// A write succeeded after an outage of `failures` failed writes.
    Healed {
        /// Failed writes during the outage.
        failures: u64,
    },
}

/// The store's service state: in service, or out of service since a root-cause failure.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Health {
    /// The failure that began the outage (kept however many others follow).
    pub root: Option<Failure>,
    /// The latest failure of the outage (may differ: a FOREIGN KEY error after the row it
    /// refers to was never stored).
    pub latest: Option<Failure>,
    /// Failed writes since the outage began.
    pub failures: u64,
}

impl Health {
    /// Whether the store is out of service.
    pub fn is_failing(&self) -> bool {
        self.root.is_some()
    }

    /// One write failed.
    pub fn failed(&mut self, f: Failure) -> Change {
        if self.root.is_some() {
            self.failures = self.failures.saturating_add(1);
            self.latest = Some(f);
            return Change::StillFailing;
        }
        if !f.cause.is_outage() {
            return Change::DataError;
        }
        self.root = Some(f.clone());
        self.latest = Some(f);
        self.failures = 1;
        Change::Outage
    }

    /// A write that needs new pages succeeded (the writer's probe): an outage ends.
    pub fn succeeded(&mut self) -> Change {
        if self.root.is_none() {
            return Change::None;
        }
        let failures = self.failures;
        *self = Self::default();
        Change::Healed { failures }
    }

    /// One line for `/healthz` and the log: the root cause first.
    pub fn describe(&self) -> Option<String> {
        let root = self.root.as_ref()?;
        let mut s = format!("store writes failing ({} so far): {root}", self.failures);
        if let Some(l) = &self.latest
            && l != root
        {
            s.push_str(&format!("; latest: {l}"));
        }
        Some(s)
    }
}

/// What failed writes left unsaved, by the key the gateway can rewrite it from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dirty {
    /// Accounts whose row or characters were not stored.
    pub accounts: BTreeSet<AccountId>,
    /// AreaInstances whose ground items were not stored.
    pub ground: BTreeSet<InstanceKey>,
    /// The character handle floor was not stored.
    pub handle_floor: bool,
    /// Script store changes lost (the script was told; counted for the log).
    pub script_ops: u64,
}

impl Dirty {
    /// Whether nothing is left unsaved.
    pub fn is_empty(&self) -> bool {
        self.accounts.is_empty() && self.ground.is_empty() && !self.handle_floor
    }

    /// Records the ops of a failed write.
    pub fn add(&mut self, ops: &[PersistOp]) {
        for op in ops {
            match op {
                PersistOp::UpsertAccount(a) => {
                    self.accounts.insert(a.id);
                }
                PersistOp::ReplaceCharacters { account, .. }
                | PersistOp::SaveCharacter { account, .. } => {
                    self.accounts.insert(*account);
                }
                PersistOp::HandleFloor(_) => self.handle_floor = true,
                PersistOp::ReplaceGround { key, .. } => {
                    self.ground.insert(key.clone());
                }
                PersistOp::PutScriptFile { .. }
                | PersistOp::DeleteScriptFile { .. }
                | PersistOp::SetSuperGlobal { .. }
                | PersistOp::Audit(_) => {
                    self.script_ops = self.script_ops.saturating_add(1);
                }
            }
        }
    }

    /// Merges another set (a rewrite that failed again).
    pub fn merge(&mut self, other: Self) {
        self.accounts.extend(other.accounts);
        self.ground.extend(other.ground);
        self.handle_floor |= other.handle_floor;
        self.script_ops = self.script_ops.saturating_add(other.script_ops);
    }
}

/// The writes that store again, from the gateway's memory (its newest accepted state),
/// what `dirty` lists: each account whole (its row and every character, one submission
/// each, so one bad account does not hold back the others), each instance's ground, the
/// handle floor. An account no longer in the book, or quarantined, is skipped.
pub fn resync_ops(
    dirty: &Dirty,
    book: &AccountBook,
    ground: &HashMap<InstanceKey, Vec<GroundItemDto>>,
) -> Vec<Vec<PersistOp>> {
    let mut out = Vec::new();
    for &id in &dirty.accounts {
        let Some(a) = book.get(id) else { continue };
        if book.is_quarantined(id) {
            continue;
        }
        out.push(vec![
            PersistOp::UpsertAccount(a.row.clone()),
            PersistOp::ReplaceCharacters {
                account: id,
                characters: a.characters.clone(),
            },
        ]);
    }
    for key in &dirty.ground {
        out.push(vec![PersistOp::ReplaceGround {
            key: key.clone(),
            items: ground.get(key).cloned().unwrap_or_default(),
        }]);
    }
    if dirty.handle_floor {
        out.push(vec![PersistOp::HandleFloor(book.next_handle())]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> StoreError {
        StoreError::Sqlite(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
            Some("database or disk is full".into()),
        ))
    }

    fn foreign_key() -> StoreError {
        StoreError::Sqlite(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY),
            Some("FOREIGN KEY constraint failed".into()),
        ))
    }

    #[test]
    fn sqlite_full_is_named_as_such() {
        let f = Failure::of(&full());
        assert_eq!(f.cause, FailCause::DiskFull);
        assert!(f.to_string().starts_with("disk_full (SQLITE_FULL)"), "{f}");
        assert_eq!(FailCause::of(&foreign_key()), FailCause::Constraint);
    }

    #[test]
    fn a_later_error_never_masks_the_root_cause_and_a_success_heals() {
        let mut h = Health::default();
        assert_eq!(h.failed(Failure::of(&full())), Change::Outage);
        assert_eq!(h.failed(Failure::of(&foreign_key())), Change::StillFailing);
        assert!(h.is_failing());
        let d = h.describe().unwrap_or_default();
        assert!(
            d.contains("disk_full (SQLITE_FULL)") && d.contains("latest: constraint"),
            "{d}"
        );
        assert_eq!(h.root.as_ref().map(|r| r.cause), Some(FailCause::DiskFull));
        assert_eq!(h.succeeded(), Change::Healed { failures: 2 });
        assert!(!h.is_failing());
        assert_eq!(h.describe(), None);
        assert_eq!(h.succeeded(), Change::None);
    }

    #[test]
    fn a_data_error_alone_is_no_outage() {
        let mut h = Health::default();
        assert_eq!(h.failed(Failure::of(&foreign_key())), Change::DataError);
        assert!(!h.is_failing());
    }

    #[test]
    fn dirty_accounts_are_rewritten_whole_from_the_book_and_unknown_ones_skipped() {
        let mut book = AccountBook::new();
        let id = book
            .create_account("ann".into(), "h".into(), String::new())
            .unwrap_or(0);
        book.add_character(
            id,
            shared::internal::ActorStateDto {
                name: "Ann".into(),
                ..Default::default()
            },
        );
        let _ = book.take_persist();
        let mut d = Dirty::default();
        d.add(&[
            PersistOp::SaveCharacter {
                account: id,
                slot: 0,
                state: Box::default(),
            },
            PersistOp::HandleFloor(3),
            PersistOp::UpsertAccount(crate::session::AccountRow {
                id: 99,
                user: "gone".into(),
                password_hash: String::new(),
                email: String::new(),
                is_dm: false,
                banned: false,
                ignore: Vec::new(),
                status: Default::default(),
            }),
        ]);
        let ops = resync_ops(&d, &book, &HashMap::new());
        assert_eq!(ops.len(), 2, "{ops:?}");
        assert!(matches!(ops.first().and_then(|v| v.get(1)),
            Some(PersistOp::ReplaceCharacters { characters, .. }) if characters.len() == 1));
        assert!(matches!(
            ops.get(1).and_then(|v| v.first()),
            Some(PersistOp::HandleFloor(_))
        ));
    }
}
