//! The store on Postgres (`database_url = postgres://…`, issue 41): the same tables,
//! migrations, atomic batches and fencing tokens as the SQLite store, for a cluster whose
//! shared state lives on a database server instead of one gateway's disk.
//!
//! Names are unique case-insensitively as in SQLite (`COLLATE NOCASE` there, unique
//! indexes on `lower(…)` here); the schema version is the row of `schema_version`.
//! Blocking (the `postgres` crate): called from the writer thread and at start-up, never
//! from an async task.

use postgres::{Client, NoTls, Transaction};
use shared::internal::{ActorStateDto, InstanceKey};

use super::{
    GROUND_VERSION, META_CLOCK_EPOCH, META_LEADER_EPOCH, META_NEXT_HANDLE, META_PROBE, PROBE_BYTES,
    Quarantined, Record, STATE_VERSION, ScriptRows, StoreError, StoredGround, decode_character,
    decode_ground, from_i64, to_i64,
};
use crate::console::AuditEntry;
use crate::script_store::StoredEntry;
use crate::session::{AccountRow, AccountStatus, PersistOp};

/// A Postgres error with the server's message (the crate's own `Display` says only
/// "db error").
pub fn detail(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {} ({})", db.severity(), db.message(), db.code().code()),
        // Its causes follow as the error's sources.
        None => e.to_string(),
    }
}

/// The advisory lock key a gateway holds on its database ([`PgStore::claim_exclusive`]).
const EXCLUSIVE_LOCK: i64 = 0x7263_6761_7465; // "rcgate"

/// How long a silent server or network is waited for (connect, unacknowledged data,
/// keepalive idle), unless `database_url` says otherwise.
const LINK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Refuses a transaction or a lease check of a store whose epoch `ours` is no longer the
/// database's `stored`.
fn check_epoch(ours: u64, stored: Option<i64>) -> Result<(), StoreError> {
    match stored.map(from_i64) {
        Some(now) if now == ours => Ok(()),
        Some(now) => Err(StoreError::Deposed(format!(
            "another gateway has taken the database over (control epoch {now}, ours {ours})"
        ))),
        None => Err(StoreError::Deposed(
            "the database's control epoch is gone (the database was replaced)".into(),
        )),
    }
}

/// Postgres migrations, one per SQLite migration of the same number.
const MIGRATIONS: &[&str] = &[
    // 1: accounts and characters.
    r#"CREATE TABLE accounts (
        id BIGINT PRIMARY KEY,
        "user" TEXT NOT NULL,
        password_hash TEXT NOT NULL,
        email TEXT NOT NULL DEFAULT '',
        is_dm BOOLEAN NOT NULL DEFAULT FALSE,
        banned BOOLEAN NOT NULL DEFAULT FALSE,
        ignore_list BYTEA NOT NULL
    );
    CREATE UNIQUE INDEX accounts_user ON accounts (lower("user"));
    CREATE TABLE characters (
        account_id BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        slot BIGINT NOT NULL,
        name TEXT NOT NULL,
        area TEXT NOT NULL,
        instance BIGINT NOT NULL,
        x DOUBLE PRECISION NOT NULL, y DOUBLE PRECISION NOT NULL, z DOUBLE PRECISION NOT NULL,
        state_version BIGINT NOT NULL,
        state BYTEA NOT NULL,
        PRIMARY KEY (account_id, slot)
    );
    CREATE UNIQUE INDEX characters_name ON characters (lower(name));"#,
    // 2: the script store and the character handle floor.
    "CREATE TABLE script_files (
        name TEXT PRIMARY KEY,
        kind BIGINT NOT NULL CHECK (kind IN (1, 2)),
        data BYTEA NOT NULL
    );
    CREATE TABLE super_globals (
        slot BIGINT PRIMARY KEY CHECK (slot BETWEEN 0 AND 99),
        value BYTEA NOT NULL
    );
    CREATE TABLE meta (
        key TEXT PRIMARY KEY,
        value BIGINT NOT NULL
    );",
    // 3: ground items.
    "CREATE TABLE ground_items (
        area TEXT NOT NULL,
        instance BIGINT NOT NULL,
        version BIGINT NOT NULL,
        items BYTEA NOT NULL,
        PRIMARY KEY (area, instance)
    );",
    // 4: moderation, last logins, the audit log.
    "ALTER TABLE accounts ADD COLUMN ban_until_ms BIGINT NOT NULL DEFAULT 0;
    ALTER TABLE accounts ADD COLUMN ban_reason TEXT NOT NULL DEFAULT '';
    ALTER TABLE accounts ADD COLUMN mute_until_ms BIGINT NOT NULL DEFAULT 0;
    ALTER TABLE accounts ADD COLUMN mute_reason TEXT NOT NULL DEFAULT '';
    ALTER TABLE accounts ADD COLUMN last_login_ms BIGINT NOT NULL DEFAULT 0;
    CREATE TABLE audit (
        id BIGINT PRIMARY KEY,
        at_ms BIGINT NOT NULL,
        operator TEXT NOT NULL,
        role TEXT NOT NULL,
        action TEXT NOT NULL,
        target TEXT NOT NULL,
        detail TEXT NOT NULL,
        ok BOOLEAN NOT NULL,
        result TEXT NOT NULL
    );",
];

/// A store on a Postgres server.
pub struct PgStore {
    // Behind a lock so reads take `&self`, as the SQLite store's do.
    client: std::sync::Mutex<Client>,
    /// The control-plane epoch this connection claimed ([`PgStore::claim_exclusive`]);
    /// 0 until then. Every transaction checks it is still the database's.
    epoch: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").finish_non_exhaustive()
    }
}

impl PgStore {
    /// Connects to `url` (`postgres://user:password@host:port/database`, or the key=value
    /// form) and runs the migrations.
    ///
    /// Unless the URL says otherwise, a dead server or network is noticed within seconds:
    /// connecting gives up after 5 s, unacknowledged data after 5 s (`tcp_user_timeout`),
    /// and an idle connection is probed after 5 s (TCP keepalives), so a gateway cut off
    /// from its database learns it before another takes the database over.
    pub fn open(url: &str) -> Result<Self, StoreError> {
        let mut config: postgres::Config = url.parse()?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(LINK_TIMEOUT);
        }
        if config.get_tcp_user_timeout().is_none() {
            config.tcp_user_timeout(LINK_TIMEOUT);
        }
        if config.get_keepalives_idle() == std::time::Duration::from_secs(2 * 60 * 60) {
            config.keepalives_idle(LINK_TIMEOUT);
            config.keepalives_interval(std::time::Duration::from_secs(2));
            config.keepalives_retries(3);
        }
        // The server's notices (a migration's "relation already exists, skipping", every
        // time a standby polls for the database) are not news to an operator: debug level.
        config.notice_callback(|n| {
            tracing::debug!(
                severity = n.severity(),
                notice = n.message(),
                "postgres notice"
            );
        });
        let client = config.connect(NoTls)?;
        let s = Self {
            client: std::sync::Mutex::new(client),
            epoch: std::sync::atomic::AtomicU64::new(0),
        };
        s.migrate()?;
        Ok(s)
    }

    fn client(&self) -> std::sync::MutexGuard<'_, Client> {
        crate::lock(&self.client)
    }

    /// Takes this database for this process alone (a session advisory lock, released when
    /// the connection closes, a crash included): one gateway writes a database at a time
    /// until several gateways share one (issue 41). Raises the control-plane epoch
    /// (`meta.leader_epoch`: the later of the stored one plus one and `now_unix_ms`) and
    /// returns it: from now on every transaction of this store is refused once the
    /// database holds a newer one ([`StoreError::Deposed`]).
    pub fn claim_exclusive(&self, now_unix_ms: u64) -> Result<u64, StoreError> {
        let mut client = self.client();
        let got: bool = client
            .query_one("SELECT pg_try_advisory_lock($1)", &[&EXCLUSIVE_LOCK])?
            .get(0);
        if !got {
            return Err(StoreError::Unsupported(
                "another gateway (or copy-store) uses this Postgres database: one writer at a time"
                    .into(),
            ));
        }
        // The server notices a vanished holder within seconds too, and frees the lock for
        // a standby (best effort: a server may refuse these settings).
        let _ = client.batch_execute(
            "SET tcp_keepalives_idle = 5; SET tcp_keepalives_interval = 2; \
             SET tcp_keepalives_count = 3; SET tcp_user_timeout = 5000;",
        );
        let mut tx = client.transaction()?;
        let stored: Option<i64> = tx
            .query_opt(
                "SELECT value FROM meta WHERE key = $1 FOR UPDATE",
                &[&META_LEADER_EPOCH],
            )?
            .map(|r| r.get(0));
        let epoch = super::next_epoch(stored.map(from_i64), now_unix_ms);
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ($1, $2)
             ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            &[&META_LEADER_EPOCH, &to_i64(epoch)],
        )?;
        tx.commit()?;
        self.epoch
            .store(epoch, std::sync::atomic::Ordering::Relaxed);
        Ok(epoch)
    }

    /// Whether this store still holds the database: its connection is open and the
    /// database's epoch is the one it claimed. Nothing to check before a claim.
    pub fn check_lease(&self) -> Result<(), StoreError> {
        let ours = self.epoch.load(std::sync::atomic::Ordering::Relaxed);
        if ours == 0 {
            return Ok(());
        }
        let mut client = self.client();
        if client.is_closed() {
            return Err(StoreError::Deposed(
                "the connection to the database is closed (its lock went with it)".into(),
            ));
        }
        let now: Option<i64> = match client.query_opt(
            "SELECT value FROM meta WHERE key = $1",
            &[&META_LEADER_EPOCH],
        ) {
            Ok(r) => r.map(|r| r.get(0)),
            Err(e) if e.is_closed() || client.is_closed() => {
                return Err(StoreError::Deposed(format!(
                    "the connection to the database is lost: {}",
                    detail(&e)
                )));
            }
            Err(e) => return Err(e.into()),
        };
        check_epoch(ours, now)
    }

    /// The schema version (the number of migrations applied).
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        self.client().batch_execute(
            "CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL);",
        )?;
        let row = self
            .client()
            .query_opt("SELECT version FROM schema_version", &[])?;
        Ok(row.map_or(0, |r| r.get(0)))
    }

    fn migrate(&self) -> Result<(), StoreError> {
        // One migrator at a time across gateways: a transaction-scoped advisory lock.
        let mut client = self.client();
        let mut tx = client.transaction()?;
        tx.execute("SELECT pg_advisory_xact_lock(4177)", &[])?;
        tx.batch_execute("CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL);")?;
        let have: i64 = tx
            .query_opt("SELECT version FROM schema_version", &[])?
            .map_or(0, |r| r.get(0));
        let want = i64::try_from(MIGRATIONS.len()).unwrap_or(i64::MAX);
        if have > want {
            return Err(StoreError::TooNew(have, want));
        }
        for sql in MIGRATIONS.iter().skip(usize::try_from(have).unwrap_or(0)) {
            tx.batch_execute(sql)?;
        }
        tx.execute("DELETE FROM schema_version", &[])?;
        tx.execute("INSERT INTO schema_version (version) VALUES ($1)", &[&want])?;
        tx.commit()?;
        Ok(())
    }

    /// Applies ops in one transaction; refused whole once another gateway has claimed the
    /// database ([`StoreError::Deposed`]: the epoch row is read with a share lock, so a
    /// claim waits for a transaction under way and every later one sees it).
    pub fn apply(&self, ops: &[PersistOp]) -> Result<(), StoreError> {
        let ours = self.epoch.load(std::sync::atomic::Ordering::Relaxed);
        let mut client = self.client();
        if client.is_closed() {
            return Err(StoreError::Deposed(
                "the connection to the database is closed (its lock went with it)".into(),
            ));
        }
        let mut tx = client.transaction()?;
        if ours != 0 {
            let now: Option<i64> = tx
                .query_opt(
                    "SELECT value FROM meta WHERE key = $1 FOR SHARE",
                    &[&META_LEADER_EPOCH],
                )?
                .map(|r| r.get(0));
            check_epoch(ours, now)?;
        }
        for op in ops {
            apply_one(&mut tx, op)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Every account and its readable characters, and what could not be read.
    pub fn load_all_quarantining(&self) -> Result<(Vec<Record>, Vec<Quarantined>), StoreError> {
        let accounts = self.client().query(
            r#"SELECT id, "user", password_hash, email, is_dm, banned, ignore_list,
                    ban_until_ms, ban_reason, mute_until_ms, mute_reason, last_login_ms
             FROM accounts ORDER BY id"#,
            &[],
        )?;
        let characters = self.client().query(
            "SELECT account_id, name, state_version, state FROM characters
             ORDER BY account_id, slot",
            &[],
        )?;
        let mut bad = Vec::new();
        let mut by_account: std::collections::HashMap<u64, Vec<ActorStateDto>> =
            std::collections::HashMap::new();
        for r in &characters {
            let account = from_i64(r.get(0));
            if let Some(c) = decode_character(
                account,
                r.get(1),
                r.get(2),
                &r.get::<_, Vec<u8>>(3),
                &mut bad,
            ) {
                by_account.entry(account).or_default().push(c);
            }
        }
        let mut out = Vec::with_capacity(accounts.len());
        for r in &accounts {
            let id = from_i64(r.get(0));
            let ignore: Vec<String> = rmp_serde::from_slice(&r.get::<_, Vec<u8>>(6))
                .unwrap_or_else(|e| {
                    bad.push(Quarantined {
                        account: id,
                        name: String::new(),
                        reason: format!("ignore list: {e}"),
                    });
                    Vec::new()
                });
            out.push((
                AccountRow {
                    id,
                    user: r.get(1),
                    password_hash: r.get(2),
                    email: r.get(3),
                    is_dm: r.get(4),
                    banned: r.get(5),
                    ignore,
                    status: AccountStatus {
                        ban_until_ms: from_i64(r.get(7)),
                        ban_reason: r.get(8),
                        mute_until_ms: from_i64(r.get(9)),
                        mute_reason: r.get(10),
                        last_login_ms: from_i64(r.get(11)),
                    },
                },
                by_account.remove(&id).unwrap_or_default(),
            ));
        }
        Ok((out, bad))
    }

    /// The newest `limit` entries of the audit log, oldest first.
    pub fn load_audit(&self, limit: usize) -> Result<Vec<AuditEntry>, StoreError> {
        let rows = self.client().query(
            "SELECT id, at_ms, operator, role, action, target, detail, ok, result
             FROM audit ORDER BY id DESC LIMIT $1",
            &[&to_i64(limit as u64)],
        )?;
        let mut out: Vec<AuditEntry> = rows
            .iter()
            .map(|r| AuditEntry {
                id: from_i64(r.get(0)),
                at_ms: from_i64(r.get(1)),
                operator: r.get(2),
                role: crate::console::Role::parse(&r.get::<_, String>(3))
                    .unwrap_or(crate::console::Role::Viewer),
                action: r.get(4),
                target: r.get(5),
                detail: r.get(6),
                ok: r.get(7),
                result: r.get(8),
            })
            .collect();
        out.reverse();
        Ok(out)
    }

    /// The lowest character handle never given out (1 when none was).
    pub fn handle_floor(&self) -> Result<u32, StoreError> {
        let v: Option<i64> = self
            .client()
            .query_opt(
                "SELECT value FROM meta WHERE key = $1",
                &[&META_NEXT_HANDLE],
            )?
            .map(|r| r.get(0));
        Ok(v.and_then(|v| u32::try_from(v).ok()).unwrap_or(1).max(1))
    }

    /// The cluster's game clock epoch, stored once.
    pub fn clock_epoch(&self, now_unix_ms: u64) -> Result<u64, StoreError> {
        self.client().execute(
            "INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING",
            &[&META_CLOCK_EPOCH, &to_i64(now_unix_ms)],
        )?;
        let v: i64 = self
            .client()
            .query_one(
                "SELECT value FROM meta WHERE key = $1",
                &[&META_CLOCK_EPOCH],
            )?
            .get(0);
        Ok(from_i64(v))
    }

    /// The script files and super globals as stored.
    pub fn script_rows(&self) -> Result<ScriptRows, StoreError> {
        let entries = self
            .client()
            .query(
                "SELECT name, kind, data FROM script_files ORDER BY name",
                &[],
            )?
            .iter()
            .map(|r| StoredEntry {
                name: r.get(0),
                kind: u8::try_from(r.get::<_, i64>(1)).unwrap_or(0),
                data: r.get(2),
            })
            .collect();
        let globals = self
            .client()
            .query("SELECT slot, value FROM super_globals ORDER BY slot", &[])?
            .iter()
            .map(|r| {
                (
                    u8::try_from(r.get::<_, i64>(0)).unwrap_or(u8::MAX),
                    r.get::<_, Vec<u8>>(1),
                )
            })
            .collect();
        Ok((entries, globals))
    }

    /// Every AreaInstance's stored ground items, with a warning per skipped row.
    pub fn load_ground(&self) -> Result<(StoredGround, Vec<String>), StoreError> {
        let rows = self.client().query(
            "SELECT area, instance, version, items FROM ground_items",
            &[],
        )?;
        let mut out = StoredGround::new();
        let mut warnings = Vec::new();
        for r in &rows {
            decode_ground(
                r.get(0),
                r.get(1),
                r.get(2),
                &r.get::<_, Vec<u8>>(3),
                &mut out,
                &mut warnings,
            );
        }
        Ok((out, warnings))
    }

    /// Whether an account row exists.
    pub fn account_exists(&self, id: u64) -> Result<bool, StoreError> {
        Ok(self
            .client()
            .query_opt("SELECT 1 FROM accounts WHERE id = $1", &[&to_i64(id)])?
            .is_some())
    }

    /// A write of [`PROBE_BYTES`] new bytes, undone: it succeeds only when the server
    /// takes writes again.
    pub fn probe(&self) -> Result<(), StoreError> {
        let mut client = self.client();
        let mut tx = client.transaction()?;
        tx.execute(
            "INSERT INTO script_files (name, kind, data) VALUES ($1, 1, $2)
             ON CONFLICT (name) DO UPDATE SET data = EXCLUDED.data",
            &[
                &META_PROBE,
                &vec![0u8; usize::try_from(PROBE_BYTES).unwrap_or(0)],
            ],
        )?;
        tx.rollback()?;
        Ok(())
    }
}

fn insert_character(
    tx: &mut Transaction<'_>,
    account: u64,
    slot: u8,
    c: &ActorStateDto,
) -> Result<(), StoreError> {
    let blob = rmp_serde::to_vec_named(c)?;
    tx.execute(
        "INSERT INTO characters
         (account_id, slot, name, area, instance, x, y, z, state_version, state)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         ON CONFLICT (account_id, slot) DO UPDATE SET name = EXCLUDED.name,
           area = EXCLUDED.area, instance = EXCLUDED.instance, x = EXCLUDED.x,
           y = EXCLUDED.y, z = EXCLUDED.z, state_version = EXCLUDED.state_version,
           state = EXCLUDED.state",
        &[
            &to_i64(account),
            &i64::from(slot),
            &c.name,
            &c.area,
            &i64::from(c.instance),
            &f64::from(c.x),
            &f64::from(c.y),
            &f64::from(c.z),
            &STATE_VERSION,
            &blob,
        ],
    )?;
    Ok(())
}

fn apply_one(tx: &mut Transaction<'_>, op: &PersistOp) -> Result<(), StoreError> {
    match op {
        PersistOp::UpsertAccount(a) => {
            let ignore = rmp_serde::to_vec(&a.ignore)?;
            tx.execute(
                r#"INSERT INTO accounts (id, "user", password_hash, email, is_dm, banned,
                   ignore_list, ban_until_ms, ban_reason, mute_until_ms, mute_reason,
                   last_login_ms)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
                 ON CONFLICT (id) DO UPDATE SET "user" = EXCLUDED."user",
                   password_hash = EXCLUDED.password_hash, email = EXCLUDED.email,
                   is_dm = EXCLUDED.is_dm, banned = EXCLUDED.banned,
                   ignore_list = EXCLUDED.ignore_list, ban_until_ms = EXCLUDED.ban_until_ms,
                   ban_reason = EXCLUDED.ban_reason, mute_until_ms = EXCLUDED.mute_until_ms,
                   mute_reason = EXCLUDED.mute_reason, last_login_ms = EXCLUDED.last_login_ms"#,
                &[
                    &to_i64(a.id),
                    &a.user,
                    &a.password_hash,
                    &a.email,
                    &a.is_dm,
                    &a.banned,
                    &ignore,
                    &to_i64(a.status.ban_until_ms),
                    &a.status.ban_reason,
                    &to_i64(a.status.mute_until_ms),
                    &a.status.mute_reason,
                    &to_i64(a.status.last_login_ms),
                ],
            )?;
        }
        PersistOp::ReplaceCharacters {
            account,
            characters,
        } => {
            tx.execute(
                "DELETE FROM characters WHERE account_id = $1",
                &[&to_i64(*account)],
            )?;
            for (i, c) in characters.iter().enumerate() {
                insert_character(tx, *account, u8::try_from(i).unwrap_or(u8::MAX), c)?;
            }
        }
        PersistOp::SaveCharacter {
            account,
            slot,
            state,
        } => insert_character(tx, *account, *slot, state)?,
        PersistOp::HandleFloor(n) => {
            tx.execute(
                "INSERT INTO meta (key, value) VALUES ($1, $2)
                 ON CONFLICT (key) DO UPDATE SET value = GREATEST(meta.value, EXCLUDED.value)",
                &[&META_NEXT_HANDLE, &i64::from(*n)],
            )?;
        }
        PersistOp::PutScriptFile { name, kind, data } => {
            tx.execute(
                "INSERT INTO script_files (name, kind, data) VALUES ($1, $2, $3)
                 ON CONFLICT (name) DO UPDATE SET kind = EXCLUDED.kind, data = EXCLUDED.data",
                &[name, &i64::from(*kind), data],
            )?;
        }
        PersistOp::DeleteScriptFile { name } => {
            tx.execute("DELETE FROM script_files WHERE name = $1", &[name])?;
        }
        PersistOp::ReplaceGround { key, items } => {
            let InstanceKey { area, instance } = key;
            if items.is_empty() {
                tx.execute(
                    "DELETE FROM ground_items WHERE area = $1 AND instance = $2",
                    &[area, &i64::from(*instance)],
                )?;
            } else {
                let blob = rmp_serde::to_vec_named(items)?;
                tx.execute(
                    "INSERT INTO ground_items (area, instance, version, items)
                     VALUES ($1, $2, $3, $4)
                     ON CONFLICT (area, instance) DO UPDATE SET version = EXCLUDED.version,
                       items = EXCLUDED.items",
                    &[area, &i64::from(*instance), &GROUND_VERSION, &blob],
                )?;
            }
        }
        PersistOp::Audit(e) => {
            tx.execute(
                "INSERT INTO audit (id, at_ms, operator, role, action, target, detail, ok, result)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                 ON CONFLICT (id) DO UPDATE SET at_ms = EXCLUDED.at_ms,
                   operator = EXCLUDED.operator, role = EXCLUDED.role,
                   action = EXCLUDED.action, target = EXCLUDED.target,
                   detail = EXCLUDED.detail, ok = EXCLUDED.ok, result = EXCLUDED.result",
                &[
                    &to_i64(e.id),
                    &to_i64(e.at_ms),
                    &e.operator,
                    &e.role.name(),
                    &e.action,
                    &e.target,
                    &e.detail,
                    &e.ok,
                    &e.result,
                ],
            )?;
        }
        PersistOp::SetSuperGlobal { slot, value } => {
            if value.is_empty() {
                tx.execute(
                    "DELETE FROM super_globals WHERE slot = $1",
                    &[&i64::from(*slot)],
                )?;
            } else {
                tx.execute(
                    "INSERT INTO super_globals (slot, value) VALUES ($1, $2)
                     ON CONFLICT (slot) DO UPDATE SET value = EXCLUDED.value",
                    &[&i64::from(*slot), value],
                )?;
            }
        }
    }
    Ok(())
}
