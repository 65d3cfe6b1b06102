//! Persistence: SQLite in WAL mode in the data directory, schema migrations by
//! `PRAGMA user_version`, and a [`Writer`] thread that applies [`PersistOp`]s in batches off
//! the packet path.
//!
//! # Crash safety
//! Each batch the writer drains from its channel is one transaction, so after a crash the
//! database holds a prefix of the ops (never half a batch). Character progress reaches the
//! gateway as zone snapshots — on logout, after every handoff, on shutdown and on the periodic
//! checkpoint (default every 30 s, sent by the zone nodes) — so a crash of a zone node, or of
//! the gateway, loses at most one checkpoint interval of a character's progress plus the
//! writer's queue (milliseconds). `synchronous=FULL`: a commit is fsynced before the writer
//! reports it, so nothing acknowledged (to a zone node, to a client) is lost on power loss.
//!
//! # Failure
//! A failed write is logged with its cause ([`FailCause`], `SQLITE_FULL` named as such) and
//! counted; a failure of the disk or the file puts the store out of service ([`Health`], its
//! root cause kept however many errors follow) until a write that needs new pages (the
//! writer's probe, tried every 2 s and after any write that succeeds meanwhile) succeeds
//! again. What a failed write left unsaved is rewritten from the gateway's memory
//! then ([`Dirty`], [`resync_ops`]); changes a client waits for are undone instead
//! ([`Writer::submit_or_undo`]).
//!
//! # Schema
//! * `accounts(id, user UNIQUE NOCASE, password_hash, email, is_dm, banned, ignore_list)`;
//! * `characters(account_id, slot, name UNIQUE NOCASE, area, instance, x, y, z,
//!   state_version, state)` where `state` is the complete [`ActorStateDto`] as an rmp-serde
//!   BLOB (named fields) in format [`STATE_VERSION`]; the other columns are copies for
//!   queries and operators;
//! * `script_files(name PRIMARY KEY, kind 1 file / 2 directory, data)` and
//!   `super_globals(slot PRIMARY KEY, value)`: the cluster's script store
//!   ([`crate::script_store`]), loaded whole at start ([`Store::load_scripts`]);
//! * `meta(key PRIMARY KEY, value)`: `next_handle`, the lowest character script handle
//!   never given out;
//! * `ground_items(area, instance, version, items)`, primary key `(area, instance)`: the
//!   items lying in each AreaInstance as its last checkpoint saved them, one row per
//!   instance, `items` a `Vec<GroundItemDto>` as an rmp-serde BLOB (named fields) in format
//!   [`GROUND_VERSION`]; written in the transaction of the checkpoint group that carried
//!   them ([`PersistOp::ReplaceGround`]), loaded whole at start ([`Store::load_ground`]).
//!
//! # Atomic groups
//! One [`Writer::submit`] call is never split over two transactions: a zone's checkpoint
//! group (entangled players and the ground) is stored entirely or not at all.

pub mod backups;
pub mod copy;
pub mod economy;
mod health;
pub mod pg;
pub mod pg_server;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, Transaction, params};
use shared::internal::{ActorStateDto, GroundItemDto, InstanceKey};
use shared::metrics_text::Histogram;

pub use health::{Change, Dirty, FailCause, Failure, Health, resync_ops};

use crate::console::AuditEntry;
use crate::lock;
use crate::script_store::{ScriptStore, StoredEntry};
use crate::session::{AccountBook, AccountId, AccountRow, PersistOp};

/// Version of the character BLOB format.
pub const STATE_VERSION: i64 = 1;
/// Version of the ground items BLOB format.
pub const GROUND_VERSION: i64 = 1;
/// Database file name inside the data directory.
pub const DB_FILE: &str = "gateway.sqlite3";

/// Schema migrations, applied in order; `user_version` is the number applied.
const MIGRATIONS: &[&str] = &[
    // 1: accounts and characters.
    "CREATE TABLE accounts (
        id INTEGER PRIMARY KEY,
        user TEXT NOT NULL COLLATE NOCASE UNIQUE,
        password_hash TEXT NOT NULL,
        email TEXT NOT NULL DEFAULT '',
        is_dm INTEGER NOT NULL DEFAULT 0,
        banned INTEGER NOT NULL DEFAULT 0,
        ignore_list BLOB NOT NULL
    );
    CREATE TABLE characters (
        account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        slot INTEGER NOT NULL,
        name TEXT NOT NULL COLLATE NOCASE UNIQUE,
        area TEXT NOT NULL,
        instance INTEGER NOT NULL,
        x REAL NOT NULL, y REAL NOT NULL, z REAL NOT NULL,
        state_version INTEGER NOT NULL,
        state BLOB NOT NULL,
        PRIMARY KEY (account_id, slot)
    );",
    // 2: the script store (files and super globals) and the character handle floor.
    "CREATE TABLE script_files (
        name TEXT PRIMARY KEY,
        kind INTEGER NOT NULL CHECK (kind IN (1, 2)),
        data BLOB NOT NULL
    );
    CREATE TABLE super_globals (
        slot INTEGER PRIMARY KEY CHECK (slot BETWEEN 0 AND 99),
        value BLOB NOT NULL
    );
    CREATE TABLE meta (
        key TEXT PRIMARY KEY,
        value INTEGER NOT NULL
    );",
    // 3: the ground items of each AreaInstance, saved by its checkpoints.
    "CREATE TABLE ground_items (
        area TEXT NOT NULL,
        instance INTEGER NOT NULL,
        version INTEGER NOT NULL,
        items BLOB NOT NULL,
        PRIMARY KEY (area, instance)
    );",
    // 4: moderation (timed bans with a reason, mutes), last logins, and the operators'
    // audit log (`/api/v1/`).
    "ALTER TABLE accounts ADD COLUMN ban_until_ms INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE accounts ADD COLUMN ban_reason TEXT NOT NULL DEFAULT '';
    ALTER TABLE accounts ADD COLUMN mute_until_ms INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE accounts ADD COLUMN mute_reason TEXT NOT NULL DEFAULT '';
    ALTER TABLE accounts ADD COLUMN last_login_ms INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE audit (
        id INTEGER PRIMARY KEY,
        at_ms INTEGER NOT NULL,
        operator TEXT NOT NULL,
        role TEXT NOT NULL,
        action TEXT NOT NULL,
        target TEXT NOT NULL,
        detail TEXT NOT NULL,
        ok INTEGER NOT NULL,
        result TEXT NOT NULL
    );",
];

/// The `meta` key of the character handle floor.
const META_NEXT_HANDLE: &str = "next_handle";
/// The `meta` key of the game clock's epoch (Unix ms; `shared::clock`).
const META_CLOCK_EPOCH: &str = "clock_epoch_ms";
/// The `meta` key of the control plane's epoch: raised by each gateway that takes the
/// store over ([`Store::claim_exclusive`]).
const META_LEADER_EPOCH: &str = "leader_epoch";

/// The epoch a gateway taking the store over holds: above the stored one, and at least the
/// wall clock in ms, so it also rises across a database restored from an older copy (the
/// zone nodes refuse a gateway older than one they have registered with).
fn next_epoch(stored: Option<u64>, now_unix_ms: u64) -> u64 {
    stored.map_or(1, |e| e.saturating_add(1)).max(now_unix_ms)
}

/// Script files and directories, and the super globals, as stored.
pub type ScriptRows = (Vec<StoredEntry>, Vec<(u8, Vec<u8>)>);

/// Every AreaInstance's stored ground items ([`Store::load_ground`]).
pub type StoredGround = HashMap<InstanceKey, Vec<GroundItemDto>>;

/// A storage failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The data directory.
    #[error("data directory {path}: {source}")]
    Dir {
        /// The directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Encoding a BLOB.
    #[error("encode: {0}")]
    Encode(#[from] rmp_serde::encode::Error),
    /// A stored BLOB that does not decode.
    #[error("character {name:?} of account {account}: {reason}")]
    BadRow {
        /// The account.
        account: AccountId,
        /// The character name column.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// Another gateway has taken the store over, or this one lost it (Postgres: its
    /// connection, and the lock with it): this gateway must step down.
    #[error("this gateway no longer holds the store: {0}")]
    Deposed(String),
    /// The database is newer than this program.
    #[error("schema version {0} is newer than this gateway ({1})")]
    TooNew(i64, i64),
    /// The writer thread is gone.
    #[error("the store writer has stopped")]
    WriterGone,
    /// A call the backend does not have.
    #[error("{0}")]
    Unsupported(String),
    /// Postgres.
    #[error("postgres: {}", pg::detail(.0))]
    Postgres(#[from] postgres::Error),
    /// Another gateway holds the data directory.
    #[error(
        "the data directory {0} is in use by a running gateway (stop it first; `gateway backup` works while it runs)"
    )]
    Locked(PathBuf),
}

/// The lock file a running gateway holds in its data directory.
pub const LOCK_FILE: &str = "gateway.lock";

/// An exclusive advisory lock on a data directory (`LOCK_FILE`), held by a running gateway
/// and by the offline commands while they write, so neither changes a database the other
/// holds in memory. Released when dropped or when the process ends (even by SIGKILL).
#[derive(Debug)]
pub struct DirLock {
    _file: std::fs::File,
}

/// Takes the data directory's lock, or says who holds it.
pub fn lock_dir(dir: &Path) -> Result<DirLock, StoreError> {
    let io = |source| StoreError::Dir {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(LOCK_FILE))
        .map_err(io)?;
    match file.try_lock() {
        Ok(()) => Ok(DirLock { _file: file }),
        Err(std::fs::TryLockError::WouldBlock) => Err(StoreError::Locked(dir.to_path_buf())),
        Err(std::fs::TryLockError::Error(e)) => Err(io(e)),
    }
}

/// A consistent copy of the database in `dir`, written to `to` (a new file), while a
/// gateway may be running on it: SQLite's online backup API copies every page under one
/// read transaction, so the copy is the database as of one moment, and the gateway's
/// writer goes on meanwhile (WAL). The copy is checked with `PRAGMA integrity_check`.
/// Restoring is copying it back as `DB_FILE` into a stopped gateway's data directory.
pub fn backup(dir: &Path, to: &Path) -> Result<(), StoreError> {
    let src_path = dir.join(DB_FILE);
    if !src_path.is_file() {
        return Err(StoreError::Dir {
            path: src_path,
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no database here"),
        });
    }
    if to.exists() {
        return Err(StoreError::Dir {
            path: to.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "the backup file exists already",
            ),
        });
    }
    let src = Connection::open_with_flags(
        &src_path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    src.busy_timeout(Duration::from_secs(10))?;
    let mut dst = Connection::open(to)?;
    {
        use rusqlite::backup::StepResult;
        let b = rusqlite::backup::Backup::new(&src, &mut dst)?;
        // All pages in one step (-1): one read transaction, one moment. Busy or locked
        // (the writer mid-checkpoint): try again, for at most ten seconds.
        let mut tries = 0u32;
        loop {
            match b.step(-1)? {
                StepResult::Done => break,
                _ if tries >= 100 => {
                    return Err(StoreError::Sqlite(rusqlite::Error::SqliteFailure(
                        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
                        Some("the database stayed busy for ten seconds".into()),
                    )));
                }
                _ => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }
    let check: String = dst.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    if check != "ok" {
        return Err(StoreError::BadRow {
            account: 0,
            name: String::new(),
            reason: format!("the copy failed its integrity check: {check}"),
        });
    }
    Ok(())
}

/// One stored account and its characters.
pub type Record = (AccountRow, Vec<ActorStateDto>);

/// A stored row that could not be read, and why: its account is quarantined (it cannot
/// log in, and nothing of it is written) until an operator repairs or removes the row;
/// everyone else plays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quarantined {
    /// The account.
    pub account: AccountId,
    /// The character's name, empty for the account row itself.
    pub name: String,
    /// What is wrong.
    pub reason: String,
}

/// An open store: SQLite (embedded, the default) or Postgres (`database_url`).
#[derive(Debug)]
pub enum Store {
    /// `data_dir/gateway.sqlite3`.
    Sqlite(SqliteStore),
    /// A Postgres server.
    Postgres(Box<pg::PgStore>),
}

/// An open SQLite database.
pub struct SqliteStore {
    conn: Connection,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").finish_non_exhaustive()
    }
}

/// What only the SQLite store does (its page limit, a full disk's simulation).
fn sqlite_only(what: &str) -> StoreError {
    StoreError::Unsupported(format!("{what} is for the SQLite store only"))
}

impl Store {
    /// Opens (creating) `DIR/gateway.sqlite3`, enables WAL and runs the migrations.
    pub fn open_dir(dir: &Path) -> Result<Self, StoreError> {
        SqliteStore::open_dir(dir).map(Self::Sqlite)
    }

    /// Opens (creating) a SQLite database file.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        SqliteStore::open(path).map(Self::Sqlite)
    }

    /// Connects to a Postgres server (`postgres://…`) and runs the migrations. Blocking:
    /// never from an async task.
    pub fn open_postgres(url: &str) -> Result<Self, StoreError> {
        pg::PgStore::open(url).map(|p| Self::Postgres(Box::new(p)))
    }

    /// The store `database_url` names (`postgres://…`, `postgresql://…`), or the SQLite
    /// database in `data_dir` when it is empty.
    pub fn open_configured(database_url: &str, data_dir: &Path) -> Result<Self, StoreError> {
        if database_url.is_empty() {
            Self::open_dir(data_dir)
        } else {
            Self::open_postgres(database_url)
        }
    }

    /// Takes the store for this process alone and returns the control plane's new epoch
    /// (sent to every zone node, which refuses an older gateway): on Postgres an advisory
    /// lock held as long as the connection (see [`pg::PgStore::claim_exclusive`]); on
    /// SQLite the data directory's lock ([`lock_dir`]) does it, and the epoch is raised.
    pub fn claim_exclusive(&self, now_unix_ms: u64) -> Result<u64, StoreError> {
        match self {
            Self::Sqlite(s) => s.raise_epoch(now_unix_ms),
            Self::Postgres(p) => p.claim_exclusive(now_unix_ms),
        }
    }

    /// Whether this process still holds the store (Postgres: the connection is open and no
    /// other gateway has claimed it since, [`StoreError::Deposed`] otherwise). SQLite: the
    /// data directory's lock cannot be taken away.
    pub fn check_lease(&self) -> Result<(), StoreError> {
        match self {
            Self::Sqlite(_) => Ok(()),
            Self::Postgres(p) => p.check_lease(),
        }
    }

    /// Which backend: `"sqlite"` or `"postgres"`.
    pub fn backend(&self) -> &'static str {
        match self {
            Self::Sqlite(_) => "sqlite",
            Self::Postgres(_) => "postgres",
        }
    }

    /// The schema version (the number of migrations applied).
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        match self {
            Self::Sqlite(s) => s.schema_version(),
            Self::Postgres(p) => p.schema_version(),
        }
    }

    /// SQLite's journal mode (`"wal"` when open normally).
    pub fn journal_mode(&self) -> Result<String, StoreError> {
        match self {
            Self::Sqlite(s) => s.journal_mode(),
            Self::Postgres(_) => Err(sqlite_only("the journal mode")),
        }
    }

    /// Applies ops in one transaction.
    pub fn apply(&mut self, ops: &[PersistOp]) -> Result<(), StoreError> {
        match self {
            Self::Sqlite(s) => s.apply(ops),
            Self::Postgres(p) => p.apply(ops),
        }
    }

    /// Every account with its characters in slot order (for [`crate::session::AccountBook`]).
    pub fn load_all(&self) -> Result<Vec<(AccountRow, Vec<ActorStateDto>)>, StoreError> {
        let (rows, bad) = self.load_all_quarantining()?;
        match bad.into_iter().next() {
            Some(q) => Err(StoreError::BadRow {
                account: q.account,
                name: q.name,
                reason: q.reason,
            }),
            None => Ok(rows),
        }
    }

    /// Every account and its readable characters, and what could not be read (see
    /// [`SqliteStore::load_all_quarantining`]).
    pub fn load_all_quarantining(&self) -> Result<(Vec<Record>, Vec<Quarantined>), StoreError> {
        match self {
            Self::Sqlite(s) => s.load_all_quarantining(),
            Self::Postgres(p) => p.load_all_quarantining(),
        }
    }

    /// The newest `limit` entries of the operators' audit log, oldest first.
    pub fn load_audit(&self, limit: usize) -> Result<Vec<AuditEntry>, StoreError> {
        match self {
            Self::Sqlite(s) => s.load_audit(limit),
            Self::Postgres(p) => p.load_audit(limit),
        }
    }

    /// The lowest character handle never given out (1 when none was).
    pub fn handle_floor(&self) -> Result<u32, StoreError> {
        match self {
            Self::Sqlite(s) => s.handle_floor(),
            Self::Postgres(p) => p.handle_floor(),
        }
    }

    /// The cluster's game clock epoch (Unix ms), stored once (see
    /// [`SqliteStore::clock_epoch`]).
    pub fn clock_epoch(&self, now_unix_ms: u64) -> Result<u64, StoreError> {
        match self {
            Self::Sqlite(s) => s.clock_epoch(now_unix_ms),
            Self::Postgres(p) => p.clock_epoch(now_unix_ms),
        }
    }

    /// Every account and character, with the handle floor: the gateway's account book.
    /// Characters of an older database get their handles here; those saves are queued in
    /// the book (submit [`AccountBook::take_persist`] to the writer).
    pub fn load_book(&self) -> Result<AccountBook, StoreError> {
        Ok(self.load_book_quarantining()?.0)
    }

    /// [`Self::load_book`], with the accounts of unreadable rows quarantined in the book
    /// (and listed, for the log and the metrics) instead of failing the whole load.
    pub fn load_book_quarantining(&self) -> Result<(AccountBook, Vec<Quarantined>), StoreError> {
        let (rows, bad) = self.load_all_quarantining()?;
        let mut book = AccountBook::from_records_with_handle_floor(rows, self.handle_floor()?);
        for q in &bad {
            book.quarantine(q.account);
        }
        Ok((book, bad))
    }

    /// The script files and super globals, with warnings for rows that were skipped.
    pub fn load_scripts(&self) -> Result<(ScriptStore, Vec<String>), StoreError> {
        let (entries, globals) = self.script_rows()?;
        Ok(ScriptStore::load(entries, globals))
    }

    /// The script files and super globals as stored (a copy between stores).
    pub fn script_rows(&self) -> Result<ScriptRows, StoreError> {
        match self {
            Self::Sqlite(s) => s.script_rows(),
            Self::Postgres(p) => p.script_rows(),
        }
    }

    /// Every AreaInstance's stored ground items, with a warning for each skipped row.
    pub fn load_ground(&self) -> Result<(StoredGround, Vec<String>), StoreError> {
        match self {
            Self::Sqlite(s) => s.load_ground(),
            Self::Postgres(p) => p.load_ground(),
        }
    }

    /// Whether an account row exists (tests and tools).
    pub fn account_exists(&self, id: AccountId) -> Result<bool, StoreError> {
        match self {
            Self::Sqlite(s) => s.account_exists(id),
            Self::Postgres(p) => p.account_exists(id),
        }
    }

    /// SQLite's page limit (see [`SqliteStore::set_max_pages`]).
    pub fn set_max_pages(&self, pages: u64) -> Result<u64, StoreError> {
        match self {
            Self::Sqlite(s) => s.set_max_pages(pages),
            Self::Postgres(_) => Err(sqlite_only("a page limit")),
        }
    }

    /// Fills a SQLite store as a full disk would (tests; see [`SqliteStore::fill_to`]).
    pub fn fill_to(&mut self, pages: u64) -> Result<u64, StoreError> {
        match self {
            Self::Sqlite(s) => s.fill_to(pages),
            Self::Postgres(_) => Err(sqlite_only("filling the store")),
        }
    }

    /// Undoes [`Store::fill_to`].
    pub fn unfill(&mut self, pages: u64) -> Result<u64, StoreError> {
        match self {
            Self::Sqlite(s) => s.unfill(pages),
            Self::Postgres(_) => Err(sqlite_only("filling the store")),
        }
    }

    /// SQLite's page limit; 0 on Postgres (none).
    pub fn max_pages(&self) -> Result<u64, StoreError> {
        match self {
            Self::Sqlite(s) => s.max_pages(),
            Self::Postgres(_) => Ok(0),
        }
    }

    fn probe(&mut self) -> Result<(), StoreError> {
        match self {
            Self::Sqlite(s) => s.probe(),
            Self::Postgres(p) => p.probe(),
        }
    }
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn from_i64(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

impl SqliteStore {
    /// Opens (creating) `DIR/gateway.sqlite3`, enables WAL and runs the migrations.
    pub fn open_dir(dir: &Path) -> Result<Self, StoreError> {
        std::fs::create_dir_all(dir).map_err(|source| StoreError::Dir {
            path: dir.to_path_buf(),
            source,
        })?;
        Self::open(&dir.join(DB_FILE))
    }

    /// Opens (creating) a database file.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // FULL: a commit is on disk (the WAL fsynced) before the writer reports it, so a
        // snapshot acknowledged to a zone node (which then forgets its copy) survives a
        // power cut; NORMAL could lose the last commits (docs/operations.md).
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.busy_timeout(Duration::from_secs(5))?;
        let mut s = Self { conn };
        s.migrate()?;
        Ok(s)
    }

    /// The schema version (`PRAGMA user_version`).
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        Ok(self
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))?)
    }

    /// The journal mode (`"wal"` when open normally).
    pub fn journal_mode(&self) -> Result<String, StoreError> {
        Ok(self
            .conn
            .pragma_query_value(None, "journal_mode", |r| r.get(0))?)
    }

    fn migrate(&mut self) -> Result<(), StoreError> {
        let have = self.schema_version()?;
        let want = i64::try_from(MIGRATIONS.len()).unwrap_or(i64::MAX);
        if have > want {
            return Err(StoreError::TooNew(have, want));
        }
        for (i, sql) in MIGRATIONS
            .iter()
            .enumerate()
            .skip(usize::try_from(have).unwrap_or(0))
        {
            let tx = self.conn.transaction()?;
            tx.execute_batch(sql)?;
            tx.pragma_update(None, "user_version", i64::try_from(i + 1).unwrap_or(0))?;
            tx.commit()?;
        }
        Ok(())
    }

    /// Applies ops in one transaction.
    pub fn apply(&mut self, ops: &[PersistOp]) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        for op in ops {
            apply_one(&tx, op)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Every account and its readable characters, and what could not be read: an account
    /// with an unreadable row (its ignore list, a character's state) is listed in the
    /// second vector and must be quarantined (see [`Store::load_book`]); everything else
    /// loads as usual.
    pub fn load_all_quarantining(&self) -> Result<(Vec<Record>, Vec<Quarantined>), StoreError> {
        let mut st = self.conn.prepare(
            "SELECT id, user, password_hash, email, is_dm, banned, ignore_list,
                    ban_until_ms, ban_reason, mute_until_ms, mute_reason, last_login_ms
             FROM accounts ORDER BY id",
        )?;
        let rows = st.query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, bool>(4)?,
                r.get::<_, bool>(5)?,
                r.get::<_, Vec<u8>>(6)?,
                crate::session::AccountStatus {
                    ban_until_ms: from_i64(r.get::<_, i64>(7)?),
                    ban_reason: r.get::<_, String>(8)?,
                    mute_until_ms: from_i64(r.get::<_, i64>(9)?),
                    mute_reason: r.get::<_, String>(10)?,
                    last_login_ms: from_i64(r.get::<_, i64>(11)?),
                },
            ))
        })?;
        let mut out = Vec::new();
        let mut bad = Vec::new();
        for row in rows {
            let (id, user, password_hash, email, is_dm, banned, ignore, status) = row?;
            let id = u64::try_from(id).unwrap_or(0);
            let ignore: Vec<String> = rmp_serde::from_slice(&ignore).unwrap_or_else(|e| {
                bad.push(Quarantined {
                    account: id,
                    name: String::new(),
                    reason: format!("ignore list: {e}"),
                });
                Vec::new()
            });
            let characters = self.load_characters(id, &mut bad)?;
            out.push((
                AccountRow {
                    id,
                    user,
                    password_hash,
                    email,
                    is_dm,
                    banned,
                    ignore,
                    status,
                },
                characters,
            ));
        }
        Ok((out, bad))
    }

    fn load_characters(
        &self,
        account: AccountId,
        bad: &mut Vec<Quarantined>,
    ) -> Result<Vec<ActorStateDto>, StoreError> {
        let mut st = self.conn.prepare_cached(
            "SELECT name, state_version, state FROM characters
             WHERE account_id = ?1 ORDER BY slot",
        )?;
        let rows = st.query_map([to_i64(account)], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, Vec<u8>>(2)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (name, version, blob) = row?;
            out.extend(decode_character(account, name, version, &blob, bad));
        }
        Ok(out)
    }

    /// The newest `limit` entries of the operators' audit log, oldest first.
    pub fn load_audit(&self, limit: usize) -> Result<Vec<AuditEntry>, StoreError> {
        let mut st = self.conn.prepare(
            "SELECT id, at_ms, operator, role, action, target, detail, ok, result
             FROM audit ORDER BY id DESC LIMIT ?1",
        )?;
        let rows = st.query_map([to_i64(limit as u64)], |r| {
            Ok(AuditEntry {
                id: from_i64(r.get(0)?),
                at_ms: from_i64(r.get(1)?),
                operator: r.get(2)?,
                role: crate::console::Role::parse(&r.get::<_, String>(3)?)
                    .unwrap_or(crate::console::Role::Viewer),
                action: r.get(4)?,
                target: r.get(5)?,
                detail: r.get(6)?,
                ok: r.get(7)?,
                result: r.get(8)?,
            })
        })?;
        let mut out = rows.collect::<Result<Vec<_>, _>>()?;
        out.reverse();
        Ok(out)
    }

    /// The lowest character handle never given out (1 when none was).
    pub fn handle_floor(&self) -> Result<u32, StoreError> {
        let v: Option<i64> = self
            .conn
            .query_row(
                "SELECT value FROM meta WHERE key = ?1",
                [META_NEXT_HANDLE],
                |r| r.get(0),
            )
            .optional()?;
        Ok(v.and_then(|v| u32::try_from(v).ok()).unwrap_or(1).max(1))
    }

    /// The cluster's game clock epoch (Unix ms): the real time at which the clock read
    /// `Environment.dat`'s stored time. Stored once, the first time the cluster starts
    /// (`now_unix_ms` then), so the game time survives restarts.
    fn raise_epoch(&self, now_unix_ms: u64) -> Result<u64, StoreError> {
        let stored: Option<i64> = self
            .conn
            .query_row(
                "SELECT value FROM meta WHERE key = ?1",
                [META_LEADER_EPOCH],
                |r| r.get(0),
            )
            .optional()?;
        let epoch = next_epoch(stored.map(from_i64), now_unix_ms);
        self.conn.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)",
            params![META_LEADER_EPOCH, to_i64(epoch)],
        )?;
        Ok(epoch)
    }

    pub fn clock_epoch(&self, now_unix_ms: u64) -> Result<u64, StoreError> {
        self.conn.execute(
            "INSERT OR IGNORE INTO meta (key, value) VALUES (?1, ?2)",
            params![
                META_CLOCK_EPOCH,
                i64::try_from(now_unix_ms).unwrap_or(i64::MAX)
            ],
        )?;
        let v: i64 = self.conn.query_row(
            "SELECT value FROM meta WHERE key = ?1",
            [META_CLOCK_EPOCH],
            |r| r.get(0),
        )?;
        Ok(u64::try_from(v).unwrap_or(0))
    }

    /// The script files and super globals as stored.
    pub fn script_rows(&self) -> Result<ScriptRows, StoreError> {
        let mut st = self
            .conn
            .prepare("SELECT name, kind, data FROM script_files ORDER BY name")?;
        let entries = st
            .query_map([], |r| {
                Ok(StoredEntry {
                    name: r.get(0)?,
                    kind: u8::try_from(r.get::<_, i64>(1)?).unwrap_or(0),
                    data: r.get(2)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        let mut st = self
            .conn
            .prepare("SELECT slot, value FROM super_globals ORDER BY slot")?;
        let globals = st
            .query_map([], |r| {
                Ok((
                    u8::try_from(r.get::<_, i64>(0)?).unwrap_or(u8::MAX),
                    r.get::<_, Vec<u8>>(1)?,
                ))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok((entries, globals))
    }

    /// Every AreaInstance's stored ground items, with a warning for each row that was
    /// skipped (a BLOB that does not decode, an unknown format): bad stored data never
    /// stops the gateway, the instance just starts with a clean ground.
    pub fn load_ground(&self) -> Result<(StoredGround, Vec<String>), StoreError> {
        let mut st = self
            .conn
            .prepare("SELECT area, instance, version, items FROM ground_items")?;
        let rows = st
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, Vec<u8>>(3)?,
                ))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        let mut out = HashMap::new();
        let mut warnings = Vec::new();
        for (area, instance, version, blob) in rows {
            decode_ground(area, instance, version, &blob, &mut out, &mut warnings);
        }
        Ok((out, warnings))
    }

    /// One account row by id (tests and tools).
    pub fn account_exists(&self, id: AccountId) -> Result<bool, StoreError> {
        Ok(self
            .conn
            .query_row("SELECT 1 FROM accounts WHERE id = ?1", [to_i64(id)], |_| {
                Ok(())
            })
            .optional()?
            .is_some())
    }
}

/// A stored character's state, or why it is unreadable (in `bad`: its account is
/// quarantined). Both backends read their rows through it.
fn decode_character(
    account: AccountId,
    name: String,
    version: i64,
    blob: &[u8],
    bad: &mut Vec<Quarantined>,
) -> Option<ActorStateDto> {
    if version != STATE_VERSION {
        bad.push(Quarantined {
            account,
            name,
            reason: format!("unknown state version {version}"),
        });
        return None;
    }
    match rmp_serde::from_slice::<ActorStateDto>(blob) {
        Ok(state) => Some(state),
        Err(e) => {
            bad.push(Quarantined {
                account,
                name,
                reason: e.to_string(),
            });
            None
        }
    }
}

/// One stored ground row into `out`, or a warning (a bad row never stops the gateway: the
/// instance starts with a clean ground). Both backends read their rows through it.
fn decode_ground(
    area: String,
    instance: i64,
    version: i64,
    blob: &[u8],
    out: &mut StoredGround,
    warnings: &mut Vec<String>,
) {
    let Ok(instance) = u16::try_from(instance) else {
        warnings.push(format!("ground of {area}#{instance}: bad instance number"));
        return;
    };
    let key = InstanceKey { area, instance };
    if version != GROUND_VERSION {
        warnings.push(format!("ground of {key}: unknown format {version}"));
        return;
    }
    match rmp_serde::from_slice::<Vec<GroundItemDto>>(blob) {
        Ok(items) => {
            out.insert(key, items);
        }
        Err(e) => warnings.push(format!("ground of {key}: {e}")),
    }
}

fn insert_character(
    tx: &Transaction<'_>,
    account: AccountId,
    slot: u8,
    c: &ActorStateDto,
) -> Result<(), StoreError> {
    let blob = rmp_serde::to_vec_named(c)?;
    tx.execute(
        "INSERT OR REPLACE INTO characters
         (account_id, slot, name, area, instance, x, y, z, state_version, state)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            to_i64(account),
            slot,
            c.name,
            c.area,
            c.instance,
            f64::from(c.x),
            f64::from(c.y),
            f64::from(c.z),
            STATE_VERSION,
            blob
        ],
    )?;
    Ok(())
}

fn apply_one(tx: &Transaction<'_>, op: &PersistOp) -> Result<(), StoreError> {
    match op {
        PersistOp::UpsertAccount(a) => {
            let ignore = rmp_serde::to_vec(&a.ignore)?;
            tx.execute(
                "INSERT INTO accounts (id, user, password_hash, email, is_dm, banned, ignore_list,
                   ban_until_ms, ban_reason, mute_until_ms, mute_reason, last_login_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
                 ON CONFLICT(id) DO UPDATE SET user = excluded.user,
                   password_hash = excluded.password_hash, email = excluded.email,
                   is_dm = excluded.is_dm, banned = excluded.banned,
                   ignore_list = excluded.ignore_list, ban_until_ms = excluded.ban_until_ms,
                   ban_reason = excluded.ban_reason, mute_until_ms = excluded.mute_until_ms,
                   mute_reason = excluded.mute_reason, last_login_ms = excluded.last_login_ms",
                params![
                    to_i64(a.id),
                    a.user,
                    a.password_hash,
                    a.email,
                    a.is_dm,
                    a.banned,
                    ignore,
                    to_i64(a.status.ban_until_ms),
                    a.status.ban_reason,
                    to_i64(a.status.mute_until_ms),
                    a.status.mute_reason,
                    to_i64(a.status.last_login_ms)
                ],
            )?;
        }
        PersistOp::ReplaceCharacters {
            account,
            characters,
        } => {
            tx.execute(
                "DELETE FROM characters WHERE account_id = ?1",
                [to_i64(*account)],
            )?;
            for (i, c) in characters.iter().enumerate() {
                let slot = u8::try_from(i).unwrap_or(u8::MAX);
                insert_character(tx, *account, slot, c)?;
            }
        }
        PersistOp::SaveCharacter {
            account,
            slot,
            state,
        } => insert_character(tx, *account, *slot, state)?,
        PersistOp::HandleFloor(n) => {
            tx.execute(
                "INSERT INTO meta (key, value) VALUES (?1, ?2)
                 ON CONFLICT(key) DO UPDATE SET value = max(value, excluded.value)",
                params![META_NEXT_HANDLE, i64::from(*n)],
            )?;
        }
        PersistOp::PutScriptFile { name, kind, data } => {
            tx.execute(
                "INSERT OR REPLACE INTO script_files (name, kind, data) VALUES (?1, ?2, ?3)",
                params![name, kind, data],
            )?;
        }
        PersistOp::DeleteScriptFile { name } => {
            tx.execute("DELETE FROM script_files WHERE name = ?1", [name])?;
        }
        PersistOp::ReplaceGround { key, items } => {
            if items.is_empty() {
                tx.execute(
                    "DELETE FROM ground_items WHERE area = ?1 AND instance = ?2",
                    params![key.area, key.instance],
                )?;
            } else {
                let blob = rmp_serde::to_vec_named(items)?;
                tx.execute(
                    "INSERT OR REPLACE INTO ground_items (area, instance, version, items)
                     VALUES (?1, ?2, ?3, ?4)",
                    params![key.area, key.instance, GROUND_VERSION, blob],
                )?;
            }
        }
        PersistOp::Audit(e) => {
            tx.execute(
                "INSERT OR REPLACE INTO audit (id, at_ms, operator, role, action, target, detail, ok, result)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    to_i64(e.id),
                    to_i64(e.at_ms),
                    e.operator,
                    e.role.name(),
                    e.action,
                    e.target,
                    e.detail,
                    e.ok,
                    e.result
                ],
            )?;
        }
        PersistOp::SetSuperGlobal { slot, value } => {
            if value.is_empty() {
                tx.execute("DELETE FROM super_globals WHERE slot = ?1", [slot])?;
            } else {
                tx.execute(
                    "INSERT OR REPLACE INTO super_globals (slot, value) VALUES (?1, ?2)",
                    params![slot, value],
                )?;
            }
        }
    }
    Ok(())
}

/// Writer counters (read from any thread).
#[derive(Debug)]
pub struct WriterStats {
    /// Ops queued and not yet committed.
    pub queue_depth: AtomicU64,
    /// Ops committed.
    pub ops_written: AtomicU64,
    /// Transactions committed.
    pub batches: AtomicU64,
    /// Ops that failed and were dropped (see [`Writer::health`]); a failing transaction
    /// is replayed one submitted batch per transaction, so the other batches still land (a
    /// submitted batch is never split: it lands whole or not at all).
    pub failures: AtomicU64,
    /// Failed writes (submitted batches) by cause, in [`FailCause::ALL`]'s order.
    pub failed_writes: [AtomicU64; FailCause::ALL.len()],
    /// Whether the store is out of service (a write failed for a cause of the disk or the
    /// file, and none has succeeded since).
    pub failing: AtomicBool,
    /// Duration of the last batch, µs.
    pub last_batch_us: AtomicU64,
    /// Total time spent writing, µs.
    pub total_write_us: AtomicU64,
    /// Duration of each batch (one transaction, or the op-by-op replay of a failed one).
    pub write_latency: Histogram,
}

impl Default for WriterStats {
    fn default() -> Self {
        Self {
            queue_depth: AtomicU64::new(0),
            ops_written: AtomicU64::new(0),
            batches: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            failed_writes: std::array::from_fn(|_| AtomicU64::new(0)),
            failing: AtomicBool::new(false),
            last_batch_us: AtomicU64::new(0),
            total_write_us: AtomicU64::new(0),
            write_latency: Histogram::new(Histogram::DISK),
        }
    }
}

impl WriterStats {
    /// Failed writes of one cause.
    pub fn failed_writes(&self, cause: FailCause) -> u64 {
        self.failed_writes
            .get(cause.index())
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }
}

/// What a submission's callback is told: stored, or why not.
pub type WriteResult = Result<(), Failure>;

/// A callback run on the writer thread once everything queued before it is committed.
type AfterCommit = Box<dyn FnOnce(bool) + Send>;
/// A submission's own callback.
type Done = Box<dyn FnOnce(WriteResult) + Send>;

enum Msg {
    Ops {
        ops: Vec<PersistOp>,
        done: Option<Done>,
        /// Whether a failure is recorded in [`Dirty`] (rewritten from memory later);
        /// false when the submitter undoes its change instead.
        dirty: bool,
    },
    Flush(mpsc::Sender<()>),
    After(AfterCommit),
    MaxPages(Option<u64>, mpsc::Sender<Result<u64, String>>),
    /// Commit what came before, then check the lease now: true while it holds.
    Lease(tokio::sync::oneshot::Sender<bool>),
    /// Commit what came before, then close the store (its connection) and stop.
    Close(mpsc::Sender<()>),
}

/// One drained message, with its ops' range in the transaction.
enum Item {
    Ops {
        start: usize,
        end: usize,
        done: Option<Done>,
        dirty: bool,
    },
    Flush(mpsc::Sender<()>),
    After(AfterCommit),
    MaxPages(Option<u64>, mpsc::Sender<Result<u64, String>>),
    Lease(tokio::sync::oneshot::Sender<bool>),
    Close(mpsc::Sender<()>),
}

/// Most ops committed in one transaction.
pub const MAX_BATCH_OPS: usize = 512;

/// How often the writer tries a probe write while the store is out of service, so that
/// it heals once space is back even when nothing else writes.
pub const PROBE_EVERY: Duration = Duration::from_secs(2);

/// How often a gateway on Postgres checks it still holds the database (besides every
/// write): with the connection's 5 s timeouts, a gateway cut off from the database
/// steps down within about 6 s.
pub const LEASE_EVERY: Duration = Duration::from_secs(1);

/// The least time between two probes run because a write succeeded while out of service.
const PROBE_MIN_GAP: Duration = Duration::from_millis(250);

/// The `meta` key of the probe row (written and deleted in one transaction, never seen).
const META_PROBE: &str = "store_probe";
/// The `meta` key prefix of the rows [`Store::fill_to`] fills the free pages with.
const META_FILL: &str = "store_fill_";
/// Bytes of the probe row: a write that needs new pages, as a player's save does.
pub const PROBE_BYTES: i64 = 64 * 1024;

/// The batching writer: a dedicated thread owning the [`Store`], fed through a channel.
/// Dropping it (or [`Writer::shutdown`]) drains the queue and joins the thread.
///
/// Every failed write is logged with its cause (`SQLITE_FULL` named as such) and counted
/// ([`WriterStats::failed_writes`]); a failure of the disk or the file puts the store out
/// of service ([`Writer::is_failing`]: logins and account creation are refused, `/healthz`
/// answers 503) until a write that needs new pages succeeds again: a probe write
/// ([`PROBE_BYTES`], undone in its transaction) tried every [`PROBE_EVERY`] and after any
/// write that succeeds meanwhile.
/// What a failed plain [`Writer::submit`] did not store is listed in [`Writer::take_dirty`]
/// for the gateway to rewrite from memory once the store heals.
pub struct Writer {
    tx: Option<mpsc::Sender<Msg>>,
    thread: Option<JoinHandle<()>>,
    stats: Arc<WriterStats>,
    health: Arc<Mutex<Health>>,
    dirty: Arc<Mutex<Dirty>>,
    deposed: tokio::sync::watch::Receiver<Option<String>>,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("stats", &self.stats)
            .finish()
    }
}

/// The writer thread's state.
struct Worker {
    store: Store,
    stats: Arc<WriterStats>,
    health: Arc<Mutex<Health>>,
    dirty: Arc<Mutex<Dirty>>,
    /// A write failed since the last [`Writer::after_commit`] callback ran.
    failed_since_after: bool,
    /// The page limit the database opened with (restored by `set_max_pages(None)`).
    default_max_pages: u64,
    /// When the last probe ran.
    last_probe: Option<Instant>,
    /// Asked to close: acknowledged once the store is closed.
    closing: Option<mpsc::Sender<()>>,
    /// How often the store's lease is checked ([`Store::check_lease`]); `None`: never
    /// (SQLite: the data directory's lock cannot be taken away).
    lease_every: Option<Duration>,
    /// When the lease was last checked.
    last_lease: Instant,
    /// Told once why this gateway no longer holds the store.
    deposed: tokio::sync::watch::Sender<Option<String>>,
}

impl Worker {
    fn run(mut self, rx: &mpsc::Receiver<Msg>, probe_every: Duration) {
        loop {
            let failing = self.stats.failing.load(Ordering::Relaxed);
            let wait = match (failing, self.lease_every) {
                (true, Some(l)) => Some(probe_every.min(l)),
                (true, None) => Some(probe_every),
                (false, l) => l,
            };
            let first = if let Some(wait) = wait {
                match rx.recv_timeout(wait) {
                    Ok(m) => m,
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        self.check_lease();
                        if failing && self.last_probe.is_none_or(|t| t.elapsed() >= probe_every) {
                            self.probe();
                        }
                        continue;
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => return,
                }
            } else {
                match rx.recv() {
                    Ok(m) => m,
                    Err(_) => return,
                }
            };
            let mut ops: Vec<PersistOp> = Vec::new();
            let mut items: Vec<Item> = Vec::new();
            let mut last = Self::take(first, &mut ops, &mut items);
            // Whole submitted batches only: the last one may take it past the cap. A page
            // limit change ends the group (it applies to what comes after it).
            while !last && ops.len() < MAX_BATCH_OPS {
                match rx.try_recv() {
                    Ok(m) => last = Self::take(m, &mut ops, &mut items),
                    Err(_) => break,
                }
            }
            self.group(&ops, items);
            if let Some(t) = self.closing.take() {
                // Dropping the store closes it (Postgres: its connection, and the lock
                // that came with it) before the caller hears so.
                let Self { store, .. } = self;
                drop(store);
                let _ = t.send(());
                return;
            }
            // A busy queue never times out: check the lease and probe on time anyway.
            if self
                .lease_every
                .is_some_and(|l| self.last_lease.elapsed() >= l)
            {
                self.check_lease();
            }
            if self.stats.failing.load(Ordering::Relaxed)
                && self.last_probe.is_none_or(|t| t.elapsed() >= probe_every)
            {
                self.probe();
            }
        }
    }

    /// Checks this gateway still holds the store; once it does not, says why (once) and
    /// stops checking.
    fn check_lease(&mut self) {
        if self.lease_every.is_none() {
            return;
        }
        self.last_lease = Instant::now();
        match self.store.check_lease() {
            Ok(()) => {}
            Err(e @ StoreError::Deposed(_)) => self.depose(&e),
            // A failing query on a live connection is the store's health, not its lease.
            Err(e) => tracing::warn!(error = %e, "store lease check failed"),
        }
    }

    /// This gateway no longer holds the store: tell the server (once).
    fn depose(&mut self, why: &StoreError) {
        if self.deposed.borrow().is_none() {
            tracing::error!(error = %why, "this gateway no longer holds the store");
            let _ = self.deposed.send(Some(why.to_string()));
        }
        self.lease_every = None;
    }

    /// Adds one message to the group; true when the group must end after it.
    fn take(m: Msg, ops: &mut Vec<PersistOp>, items: &mut Vec<Item>) -> bool {
        match m {
            Msg::Ops {
                ops: v,
                done,
                dirty,
            } => {
                let start = ops.len();
                ops.extend(v);
                items.push(Item::Ops {
                    start,
                    end: ops.len(),
                    done,
                    dirty,
                });
                false
            }
            Msg::Flush(t) => {
                items.push(Item::Flush(t));
                false
            }
            Msg::After(f) => {
                items.push(Item::After(f));
                false
            }
            Msg::MaxPages(p, t) => {
                items.push(Item::MaxPages(p, t));
                true
            }
            Msg::Lease(t) => {
                items.push(Item::Lease(t));
                false
            }
            Msg::Close(t) => {
                items.push(Item::Close(t));
                true
            }
        }
    }

    /// Writes one group: one transaction, or, when it fails, one per submitted batch.
    fn group(&mut self, ops: &[PersistOp], items: Vec<Item>) {
        let batches = items
            .iter()
            .filter(|i| matches!(i, Item::Ops { .. }))
            .count();
        let mut results: Vec<Result<(), StoreError>> = Vec::new();
        if !ops.is_empty() {
            // One trace per batch (one transaction, or its op-by-op replay).
            let span = tracing::info_span!(parent: None, "store.write_batch",
                ops = ops.len(), failed = tracing::field::Empty);
            let _span = span.enter();
            let t0 = Instant::now();
            match self.store.apply(ops) {
                Ok(()) => {
                    self.stats.batches.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) if batches == 1 => {
                    span.record("failed", true);
                    results.push(Err(e));
                }
                Err(_) => {
                    // One bad op must not lose the other batches: replay one submitted
                    // batch per transaction and drop only the failing ones, each whole (a
                    // checkpoint group is all or nothing).
                    for i in &items {
                        if let Item::Ops { start, end, .. } = i {
                            let r = self.store.apply(ops.get(*start..*end).unwrap_or(&[]));
                            if r.is_ok() {
                                self.stats.batches.fetch_add(1, Ordering::Relaxed);
                            } else {
                                span.record("failed", true);
                            }
                            results.push(r);
                        }
                    }
                }
            }
            let took = t0.elapsed();
            self.stats.write_latency.observe(took);
            let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
            self.stats.last_batch_us.store(us, Ordering::Relaxed);
            self.stats.total_write_us.fetch_add(us, Ordering::Relaxed);
        }
        let mut results = results.into_iter();
        for item in items {
            match item {
                Item::Ops {
                    start,
                    end,
                    done,
                    dirty,
                } => {
                    let batch = ops.get(start..end).unwrap_or(&[]);
                    let k = u64::try_from(batch.len()).unwrap_or(u64::MAX);
                    self.stats.queue_depth.fetch_sub(k, Ordering::Relaxed);
                    // No entry: the whole group committed.
                    let r = match results.next() {
                        None | Some(Ok(())) => {
                            self.stats.ops_written.fetch_add(k, Ordering::Relaxed);
                            if !batch.is_empty() {
                                self.succeeded();
                            }
                            Ok(())
                        }
                        Some(Err(e)) => {
                            if matches!(e, StoreError::Deposed(_)) {
                                self.depose(&e);
                            }
                            self.failed_since_after = true;
                            self.stats.failures.fetch_add(k, Ordering::Relaxed);
                            Err(self.failed(&e, batch, dirty))
                        }
                    };
                    if let Some(f) = done {
                        f(r);
                    }
                }
                Item::Flush(t) => {
                    let _ = t.send(());
                }
                Item::After(f) => {
                    f(!std::mem::take(&mut self.failed_since_after));
                }
                Item::MaxPages(p, t) => {
                    let r = match p {
                        Some(n) => self.store.fill_to(n),
                        None => self.store.unfill(self.default_max_pages),
                    }
                    .map_err(|e| e.to_string());
                    if let Ok(n) = &r {
                        tracing::warn!(max_pages = n, "store page limit set");
                    }
                    let _ = t.send(r);
                }
                Item::Lease(t) => {
                    self.check_lease();
                    let _ = t.send(self.deposed.borrow().is_none());
                }
                Item::Close(t) => self.closing = Some(t),
            }
        }
    }

    /// Records, logs and counts one failed write; returns it.
    fn failed(&mut self, e: &StoreError, batch: &[PersistOp], dirty: bool) -> Failure {
        let f = Failure::of(e);
        if let Some(c) = self.stats.failed_writes.get(f.cause.index()) {
            c.fetch_add(1, Ordering::Relaxed);
        }
        let (change, root) = {
            let mut h = lock(&self.health);
            let change = h.failed(f.clone());
            (change, h.root.clone())
        };
        // Only what an outage left unsaved is rewritten once it heals: a write refused for
        // its own data alone would only fail again.
        if dirty && change != Change::DataError {
            lock(&self.dirty).add(batch);
        }
        let cause = f.cause.label();
        let sqlite = f.cause.sqlite_name();
        let ops = batch.len();
        match (change, root) {
            (Change::Outage, _) => {
                self.stats.failing.store(true, Ordering::Relaxed);
                tracing::error!(cause, sqlite, error = %f.message, ops,
                    "store write failed, nothing of it stored; the store is out of service \
                     (logins and new accounts refused) until a write succeeds again");
            }
            (_, Some(root)) if root.cause != f.cause => {
                tracing::error!(cause, sqlite, error = %f.message, ops,
                    root_cause = root.cause.label(), root_error = %root.message,
                    "store write failed, nothing of it stored (the root cause is earlier)");
            }
            _ => {
                tracing::error!(cause, sqlite, error = %f.message, ops,
                    "store write failed, nothing of it stored");
            }
        }
        f
    }

    /// A write succeeded. While out of service, a write that fit in pages freed by the
    /// rows it replaced proves little (on a full disk, rewriting a player in place may
    /// work while nothing new fits): the store is back once a write that needs new pages
    /// succeeds, so the probe runs now (at most every [`PROBE_MIN_GAP`]).
    fn succeeded(&mut self) {
        if !self.stats.failing.load(Ordering::Relaxed) {
            return;
        }
        if self.last_probe.is_some_and(|t| t.elapsed() < PROBE_MIN_GAP) {
            return;
        }
        self.probe();
    }

    fn healed(&mut self) {
        let (change, root) = {
            let mut h = lock(&self.health);
            let root = h.root.clone();
            (h.succeeded(), root)
        };
        if let Change::Healed { failures } = change {
            self.stats.failing.store(false, Ordering::Relaxed);
            let root = root.map(|r| r.to_string()).unwrap_or_default();
            tracing::warn!(failures, root_cause = %root,
                "store writes succeed again: the store is back in service");
        }
    }

    /// While out of service: one write that needs new pages, undone in its transaction.
    fn probe(&mut self) {
        self.last_probe = Some(Instant::now());
        match self.store.probe() {
            Ok(()) => self.healed(),
            Err(e) => {
                let f = Failure::of(&e);
                tracing::debug!(error = %f, "store probe failed; still out of service");
                lock(&self.health).latest = Some(f);
            }
        }
    }
}

impl SqliteStore {
    /// Sets the database's page limit (`PRAGMA max_page_count`; never below its size);
    /// returns the limit now in force. Writes that need pages past it fail with
    /// `SQLITE_FULL`, as on a full disk.
    pub fn set_max_pages(&self, pages: u64) -> Result<u64, StoreError> {
        let n: i64 = self.conn.query_row(
            &format!("PRAGMA max_page_count = {}", to_i64(pages)),
            [],
            |r| r.get(0),
        )?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// Limits the database to `pages` pages (never below its size) and fills its free
    /// pages, as a full disk leaves none: writes that need a page more fail with
    /// `SQLITE_FULL`. Returns the limit. Tests fill a store this way.
    pub fn fill_to(&mut self, pages: u64) -> Result<u64, StoreError> {
        let n = self.set_max_pages(pages)?;
        let page: i64 = self
            .conn
            .pragma_query_value(None, "page_size", |r| r.get(0))?;
        // Rows of half a page each take a page of their own (overflow), until none is left.
        for i in 0..100_000u32 {
            let r = self.conn.execute(
                "INSERT INTO meta (key, value) VALUES (?1, zeroblob(?2))",
                params![format!("{META_FILL}{i}"), page / 2],
            );
            if r.is_err() {
                break;
            }
        }
        Ok(n)
    }

    /// Undoes [`Store::fill_to`]: the filler rows go and the page limit is `pages`.
    pub fn unfill(&mut self, pages: u64) -> Result<u64, StoreError> {
        let n = self.set_max_pages(pages)?;
        self.conn.execute(
            "DELETE FROM meta WHERE key LIKE ?1",
            [format!("{META_FILL}%")],
        )?;
        Ok(n)
    }

    /// The database's page limit (`PRAGMA max_page_count`).
    pub fn max_pages(&self) -> Result<u64, StoreError> {
        let n: i64 = self
            .conn
            .pragma_query_value(None, "max_page_count", |r| r.get(0))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// A write of [`PROBE_BYTES`] new bytes, deleted in the same transaction: it succeeds
    /// only when the store can take a player's save again.
    fn probe(&mut self) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, zeroblob(?2))",
            params![META_PROBE, PROBE_BYTES],
        )?;
        tx.execute("DELETE FROM meta WHERE key = ?1", [META_PROBE])?;
        tx.commit()?;
        Ok(())
    }
}

impl Writer {
    /// Starts the writer thread over `store`.
    pub fn spawn(store: Store) -> Result<Self, StoreError> {
        Self::spawn_probing(store, PROBE_EVERY)
    }

    /// [`Writer::spawn`], probing every `probe_every` while out of service (tests).
    pub fn spawn_probing(store: Store, probe_every: Duration) -> Result<Self, StoreError> {
        let (tx, rx) = mpsc::channel::<Msg>();
        let stats = Arc::new(WriterStats::default());
        let health = Arc::new(Mutex::new(Health::default()));
        let dirty = Arc::new(Mutex::new(Dirty::default()));
        let (deposed_tx, deposed) = tokio::sync::watch::channel(None);
        let worker = Worker {
            default_max_pages: store.max_pages()?,
            lease_every: (store.backend() == "postgres").then_some(LEASE_EVERY),
            last_lease: Instant::now(),
            deposed: deposed_tx,
            store,
            stats: Arc::clone(&stats),
            health: Arc::clone(&health),
            dirty: Arc::clone(&dirty),
            failed_since_after: false,
            last_probe: None,
            closing: None,
        };
        let thread = std::thread::Builder::new()
            .name("store-writer".into())
            .spawn(move || worker.run(&rx, probe_every))
            .map_err(|source| StoreError::Dir {
                path: PathBuf::from("<store-writer thread>"),
                source,
            })?;
        Ok(Self {
            tx: Some(tx),
            thread: Some(thread),
            stats,
            health,
            dirty,
            deposed,
        })
    }

    /// Becomes `Some(why)` once this gateway no longer holds the store (Postgres: another
    /// gateway claimed it, or the connection and its lock are gone): the gateway must step
    /// down. Checked every [`LEASE_EVERY`] and on every write.
    pub fn deposed(&self) -> tokio::sync::watch::Receiver<Option<String>> {
        self.deposed.clone()
    }

    /// Checks the lease now, after what is queued: resolves to true while this gateway
    /// still holds the store (always, on SQLite), false once it was deposed or the
    /// writer is gone. A leader asks before it logs out the players of an edge whose link
    /// ended: the edge may have ended it to take the database over, and a deposed leader
    /// must leave those players in the world for it to adopt.
    pub fn confirm_lease(&self) -> tokio::sync::oneshot::Receiver<bool> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        if let Some(w) = self.tx.as_ref() {
            // A writer gone drops `tx`: the receiver resolves to an error (not held).
            let _ = w.send(Msg::Lease(tx));
        }
        rx
    }

    fn send_ops(
        &self,
        ops: Vec<PersistOp>,
        done: Option<Done>,
        dirty: bool,
    ) -> Result<(), StoreError> {
        let n = u64::try_from(ops.len()).unwrap_or(u64::MAX);
        self.stats.queue_depth.fetch_add(n, Ordering::Relaxed);
        let tx = self.tx.as_ref().ok_or(StoreError::WriterGone);
        let sent = tx.and_then(|tx| {
            tx.send(Msg::Ops { ops, done, dirty })
                .map_err(|_| StoreError::WriterGone)
        });
        if sent.is_err() {
            self.stats.queue_depth.fetch_sub(n, Ordering::Relaxed);
        }
        sent
    }

    /// Queues ops (never blocks). If they fail, what they change is listed in
    /// [`Writer::take_dirty`], to be written again from memory.
    pub fn submit(&self, ops: Vec<PersistOp>) -> Result<(), StoreError> {
        if ops.is_empty() {
            return Ok(());
        }
        self.send_ops(ops, None, true)
    }

    /// [`Writer::submit`], then `f` on the writer thread with this submission's own result:
    /// `Ok` once it is committed (on disk: `synchronous=FULL`), the failure otherwise. The
    /// gateway acknowledges a zone's snapshot this way.
    pub fn submit_then(
        &self,
        ops: Vec<PersistOp>,
        f: impl FnOnce(WriteResult) + Send + 'static,
    ) -> Result<(), StoreError> {
        self.submit_with_result(ops, f, true)
    }

    /// [`Writer::submit_then`] for a change its submitter undoes in memory when it fails (a
    /// new account, a character created or deleted, a password): nothing of it is listed
    /// as dirty. The client's reply waits for `f`.
    pub fn submit_or_undo(
        &self,
        ops: Vec<PersistOp>,
        f: impl FnOnce(WriteResult) + Send + 'static,
    ) -> Result<(), StoreError> {
        self.submit_with_result(ops, f, false)
    }

    /// `ops` with `f` told their own result (at once for none); `dirty`: whether a failure
    /// lists what they touch for the rewrite after healing.
    fn submit_with_result(
        &self,
        ops: Vec<PersistOp>,
        f: impl FnOnce(WriteResult) + Send + 'static,
        dirty: bool,
    ) -> Result<(), StoreError> {
        if ops.is_empty() {
            f(Ok(()));
            return Ok(());
        }
        self.send_ops(ops, Some(Box::new(f)), dirty)
    }

    /// Runs `f(ok)` on the writer thread once everything queued before this call has been
    /// written; `ok` is false when a write queued since the previous `after_commit`
    /// callback (and before this one's group was written) failed. Prefer
    /// [`Writer::submit_then`], which reports one submission's own result.
    pub fn after_commit(&self, f: impl FnOnce(bool) + Send + 'static) -> Result<(), StoreError> {
        let tx = self.tx.as_ref().ok_or(StoreError::WriterGone)?;
        tx.send(Msg::After(Box::new(f)))
            .map_err(|_| StoreError::WriterGone)
    }

    /// Commits everything queued before this call, then closes the store (on Postgres its
    /// connection, releasing the database for another gateway) and stops the thread; what
    /// is submitted later fails with [`StoreError::WriterGone`]. Blocks until done.
    pub fn close(&self) -> Result<(), StoreError> {
        let (done_tx, done_rx) = mpsc::channel();
        let tx = self.tx.as_ref().ok_or(StoreError::WriterGone)?;
        tx.send(Msg::Close(done_tx))
            .map_err(|_| StoreError::WriterGone)?;
        done_rx.recv().map_err(|_| StoreError::WriterGone)
    }

    /// Blocks until everything queued before this call is committed (tests, shutdown).
    pub fn flush(&self) -> Result<(), StoreError> {
        let (done_tx, done_rx) = mpsc::channel();
        let tx = self.tx.as_ref().ok_or(StoreError::WriterGone)?;
        tx.send(Msg::Flush(done_tx))
            .map_err(|_| StoreError::WriterGone)?;
        done_rx.recv().map_err(|_| StoreError::WriterGone)
    }

    /// Limits the database to `pages` pages (`PRAGMA max_page_count` on the writer's
    /// connection, after everything queued before; never below its size) and fills its
    /// free pages ([`Store::fill_to`]): writes that need a page more fail with
    /// `SQLITE_FULL` as on a full disk. `None` removes the filler and restores the limit
    /// the database opened with. Returns the limit now in force. Tests fill the store this
    /// way, and heal it.
    pub fn set_max_pages(&self, pages: Option<u64>) -> Result<u64, StoreError> {
        let (done_tx, done_rx) = mpsc::channel();
        let tx = self.tx.as_ref().ok_or(StoreError::WriterGone)?;
        tx.send(Msg::MaxPages(pages, done_tx))
            .map_err(|_| StoreError::WriterGone)?;
        done_rx
            .recv()
            .map_err(|_| StoreError::WriterGone)?
            .map_err(|e| {
                StoreError::Sqlite(rusqlite::Error::SqliteFailure(
                    rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
                    Some(e),
                ))
            })
    }

    /// The counters.
    pub fn stats(&self) -> &WriterStats {
        &self.stats
    }

    /// Whether the store is out of service (see [`Health`]).
    pub fn is_failing(&self) -> bool {
        self.stats.failing.load(Ordering::Relaxed)
    }

    /// The store's service state: the root cause and the latest failure of an outage.
    pub fn health(&self) -> Health {
        lock(&self.health).clone()
    }

    /// While the store is out of service: what is wrong, the root cause first; `None` once
    /// a write succeeds again.
    pub fn last_error(&self) -> Option<String> {
        lock(&self.health).describe()
    }

    /// Takes what failed plain submissions left unsaved (submit it again from memory with
    /// [`resync_ops`]).
    pub fn take_dirty(&self) -> Dirty {
        std::mem::take(&mut *lock(&self.dirty))
    }

    /// Whether failed writes left something unsaved.
    pub fn has_dirty(&self) -> bool {
        !lock(&self.dirty).is_empty()
    }

    /// Drains the queue and stops the thread.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.stop();
    }
}
