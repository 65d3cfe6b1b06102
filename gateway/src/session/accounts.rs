//! The in-memory account book: every account and character, as Realm Crafter keeps them in
//! RAM. Loaded from the store at start; every change is queued as a [`PersistOp`] for the
//! writer (drain with [`AccountBook::take_persist`]).
//!
//! User names and character names are bytes on the wire (ASCII or Latin-1 bytes ≥ 192); they
//! are held as `String`s by mapping each byte to the char of the same code point (Latin-1),
//! see [`latin1`] / [`latin1_bytes`]. Names compare case-insensitively (ASCII folding, the
//! same as SQLite's `NOCASE`).

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use shared::internal::ActorStateDto;

/// Account id (the SQLite row id).
pub type AccountId = u64;

/// Bytes to a `String`, one char per byte (Latin-1).
pub fn latin1(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| char::from(b)).collect()
}

/// A `String` back to bytes (chars above U+00FF become `?`).
pub fn latin1_bytes(s: &str) -> Vec<u8> {
    s.chars()
        .map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?'))
        .collect()
}

/// The case-folded key of a name.
pub fn name_key(s: &str) -> String {
    s.to_ascii_lowercase()
}

/// One account's persistent fields (no characters).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountRow {
    /// Row id.
    pub id: AccountId,
    /// User name (Latin-1 mapped).
    pub user: String,
    /// argon2id PHC string of the client's password MD5 hex.
    pub password_hash: String,
    /// E-mail in clear.
    pub email: String,
    /// Dungeon master.
    pub is_dm: bool,
    /// Banned.
    pub banned: bool,
    /// Ignored player names.
    pub ignore: Vec<String>,
    /// Its moderation (ban reason and expiry, mute) and last login.
    #[serde(default)]
    pub status: AccountStatus,
}

/// An account's moderation and last login (`/api/v1/`'s ban and mute).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountStatus {
    /// While `banned`: when the ban ends (Unix ms; 0: never).
    pub ban_until_ms: u64,
    /// Why it is banned (told at login).
    pub ban_reason: String,
    /// Muted until (Unix ms; 0 or past: not muted): its chat goes nowhere.
    pub mute_until_ms: u64,
    /// Why it is muted (told to the player).
    pub mute_reason: String,
    /// When a character of it last entered the world (Unix ms; 0: never seen).
    pub last_login_ms: u64,
}

impl AccountStatus {
    /// Whether it is muted at `now_unix_ms`.
    pub fn muted_at(&self, now_unix_ms: u64) -> bool {
        self.mute_until_ms > now_unix_ms
    }
}

/// One account in memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Account {
    /// The persistent fields.
    pub row: AccountRow,
    /// Characters by slot index.
    pub characters: Vec<ActorStateDto>,
    /// Whether a session of this account is in the world.
    pub logged_on: bool,
}

/// A change for the store writer.
#[derive(Debug, Clone, PartialEq)]
pub enum PersistOp {
    /// Insert or replace an account row.
    UpsertAccount(AccountRow),
    /// Replace the whole character list of an account (slots renumbered 0..n).
    ReplaceCharacters {
        /// The account.
        account: AccountId,
        /// Its characters in slot order.
        characters: Vec<ActorStateDto>,
    },
    /// Save one character (logout, checkpoint, shutdown, handoff).
    SaveCharacter {
        /// The account.
        account: AccountId,
        /// Slot index.
        slot: u8,
        /// The complete state.
        state: Box<ActorStateDto>,
    },
    /// The lowest character handle never given out (kept so a deleted character's handle
    /// is never given to another; only ever raised).
    HandleFloor(u32),
    /// Insert or replace a script file (`kind` 1) or directory (`kind` 2).
    PutScriptFile {
        /// Its name (confined, see `script_store::check_name`).
        name: String,
        /// 1 file, 2 directory.
        kind: u8,
        /// A file's bytes.
        data: Vec<u8>,
    },
    /// Delete a script file or directory.
    DeleteScriptFile {
        /// Its name.
        name: String,
    },
    /// Set a super global (an empty value clears it).
    SetSuperGlobal {
        /// Slot 0..=99.
        slot: u8,
        /// The value.
        value: Vec<u8>,
    },
    /// One entry of the operators' audit log (`crate::operators`).
    Audit(Box<crate::console::AuditEntry>),
    /// Replace an AreaInstance's stored ground items (none: the row goes).
    ReplaceGround {
        /// The instance.
        key: shared::internal::InstanceKey,
        /// Its items now.
        items: Vec<shared::internal::GroundItemDto>,
    },
}

/// Character handles are below this (the zones number scripted actors above it).
pub const HANDLE_LIMIT: u32 = 1 << 28;

/// Every account, indexed by id, by folded user name and by folded character name.
///
/// Every character has a script handle (`ActorStateDto::handle`): a number below
/// [`HANDLE_LIMIT`], unique in the cluster and never given to another character, so a
/// script's `Actor()` names the same character on every node and after a re-login.
#[derive(Debug, Default)]
pub struct AccountBook {
    accounts: BTreeMap<AccountId, Account>,
    by_user: HashMap<String, AccountId>,
    by_character: HashMap<String, AccountId>,
    next_id: AccountId,
    /// The next handle to give (1 + the highest ever given).
    next_handle: u32,
    pending: Vec<PersistOp>,
    /// Accounts with a stored row that could not be read: they cannot log in.
    quarantined: std::collections::BTreeSet<AccountId>,
}

impl AccountBook {
    /// An empty book.
    pub fn new() -> Self {
        Self {
            next_id: 1,
            next_handle: 1,
            ..Self::default()
        }
    }

    /// Builds the book from stored records; characters without a handle get one (those
    /// saves are queued, see [`AccountBook::take_persist`]).
    pub fn from_records(records: Vec<(AccountRow, Vec<ActorStateDto>)>) -> Self {
        Self::from_records_with_handle_floor(records, 1)
    }

    /// [`AccountBook::from_records`] with the stored handle floor (no handle below it is
    /// given out again, even one whose character was deleted).
    pub fn from_records_with_handle_floor(
        records: Vec<(AccountRow, Vec<ActorStateDto>)>,
        floor: u32,
    ) -> Self {
        let mut book = Self::new();
        book.next_handle = floor.max(1);
        for (row, characters) in records {
            book.insert_loaded(row, characters);
        }
        // Every handle in use is kept (the first holder of a duplicate keeps it)...
        let mut seen = std::collections::HashSet::new();
        let mut missing = Vec::new();
        for (id, a) in &book.accounts {
            for (slot, c) in a.characters.iter().enumerate() {
                if c.handle != 0 && c.handle < HANDLE_LIMIT && seen.insert(c.handle) {
                    book.next_handle = book.next_handle.max(c.handle.saturating_add(1));
                } else {
                    missing.push((*id, slot));
                }
            }
        }
        // ... and the others (older databases) get new ones, saved.
        for (id, slot) in missing {
            let handle = book.new_handle();
            let Some(c) = book
                .accounts
                .get_mut(&id)
                .and_then(|a| a.characters.get_mut(slot))
            else {
                continue;
            };
            c.handle = handle;
            book.pending.push(PersistOp::SaveCharacter {
                account: id,
                slot: u8::try_from(slot).unwrap_or(u8::MAX),
                state: Box::new(c.clone()),
            });
        }
        book
    }

    /// A fresh handle, with the raised floor queued for the store; 0 (no handle) once
    /// [`HANDLE_LIMIT`] is reached.
    fn new_handle(&mut self) -> u32 {
        if self.next_handle >= HANDLE_LIMIT {
            return 0;
        }
        let h = self.next_handle;
        self.next_handle += 1;
        self.pending.push(PersistOp::HandleFloor(self.next_handle));
        h
    }

    /// The next handle a new character would get.
    pub fn next_handle(&self) -> u32 {
        self.next_handle
    }

    fn insert_loaded(&mut self, row: AccountRow, characters: Vec<ActorStateDto>) {
        let id = row.id;
        self.next_id = self.next_id.max(id.saturating_add(1));
        self.by_user.insert(name_key(&row.user), id);
        for c in &characters {
            self.by_character.insert(name_key(&c.name), id);
        }
        self.accounts.insert(
            id,
            Account {
                row,
                characters,
                logged_on: false,
            },
        );
    }

    /// Marks an account whose stored data could not be read: it cannot log in.
    pub fn quarantine(&mut self, id: AccountId) {
        self.quarantined.insert(id);
    }

    /// Whether the account is quarantined (see [`Self::quarantine`]).
    pub fn is_quarantined(&self, id: AccountId) -> bool {
        self.quarantined.contains(&id)
    }

    /// How many accounts are quarantined.
    pub fn quarantined_count(&self) -> usize {
        self.quarantined.len()
    }

    /// Number of accounts.
    pub fn len(&self) -> usize {
        self.accounts.len()
    }

    /// Whether there are no accounts.
    pub fn is_empty(&self) -> bool {
        self.accounts.is_empty()
    }

    /// The account with this user name (case-insensitive).
    pub fn find_user(&self, user: &str) -> Option<AccountId> {
        self.by_user.get(&name_key(user)).copied()
    }

    /// Whether a character of this name exists on any account (case-insensitive).
    pub fn character_name_taken(&self, name: &str) -> bool {
        self.by_character.contains_key(&name_key(name))
    }

    /// An account.
    pub fn get(&self, id: AccountId) -> Option<&Account> {
        self.accounts.get(&id)
    }

    /// Creates an account; `None` if the name is taken.
    pub fn create_account(
        &mut self,
        user: String,
        password_hash: String,
        email: String,
    ) -> Option<AccountId> {
        if self.find_user(&user).is_some() {
            return None;
        }
        let id = self.next_id;
        self.next_id = self.next_id.saturating_add(1);
        let row = AccountRow {
            id,
            user,
            password_hash,
            email,
            is_dm: false,
            banned: false,
            ignore: Vec::new(),
            status: AccountStatus::default(),
        };
        self.pending.push(PersistOp::UpsertAccount(row.clone()));
        self.insert_loaded(row, Vec::new());
        Some(id)
    }

    /// Imports a complete account (used by `import-accounts`); `None` if the user name or a
    /// character name is taken. Queues the account and its characters.
    pub fn import_account(
        &mut self,
        mut row: AccountRow,
        mut characters: Vec<ActorStateDto>,
    ) -> Option<AccountId> {
        if self.find_user(&row.user).is_some()
            || characters
                .iter()
                .any(|c| self.character_name_taken(&c.name))
        {
            return None;
        }
        row.id = self.next_id;
        self.next_id = self.next_id.saturating_add(1);
        let id = row.id;
        for c in &mut characters {
            c.handle = self.new_handle();
        }
        self.pending.push(PersistOp::UpsertAccount(row.clone()));
        self.pending.push(PersistOp::ReplaceCharacters {
            account: id,
            characters: characters.clone(),
        });
        self.insert_loaded(row, characters);
        Some(id)
    }

    fn update_row(&mut self, id: AccountId, f: impl FnOnce(&mut AccountRow)) -> bool {
        match self.accounts.get_mut(&id) {
            Some(a) => {
                f(&mut a.row);
                self.pending.push(PersistOp::UpsertAccount(a.row.clone()));
                true
            }
            None => false,
        }
    }

    /// Replaces the password hash.
    pub fn set_password_hash(&mut self, id: AccountId, hash: String) -> bool {
        self.update_row(id, |r| r.password_hash = hash)
    }

    /// Sets the DM flag.
    pub fn set_dm(&mut self, id: AccountId, is_dm: bool) -> bool {
        self.update_row(id, |r| r.is_dm = is_dm)
    }

    /// Sets the banned flag.
    pub fn set_banned(&mut self, id: AccountId, banned: bool) -> bool {
        self.update_row(id, |r| r.banned = banned)
    }

    /// Bans (until `until_ms`, Unix ms, 0: for good, with `reason`) or lifts the ban.
    pub fn set_ban(&mut self, id: AccountId, on: bool, until_ms: u64, reason: &str) -> bool {
        self.update_row(id, |r| {
            r.banned = on;
            r.status.ban_until_ms = if on { until_ms } else { 0 };
            r.status.ban_reason = if on { reason.to_owned() } else { String::new() };
        })
    }

    /// Mutes until `until_ms` (Unix ms; 0 lifts it) with `reason`.
    pub fn set_mute(&mut self, id: AccountId, until_ms: u64, reason: &str) -> bool {
        self.update_row(id, |r| {
            r.status.mute_until_ms = until_ms;
            r.status.mute_reason = if until_ms == 0 {
                String::new()
            } else {
                reason.to_owned()
            };
        })
    }

    /// Records a character's entry into the world (Unix ms).
    pub fn set_last_login(&mut self, id: AccountId, at_ms: u64) -> bool {
        self.update_row(id, |r| r.status.last_login_ms = at_ms)
    }

    /// The accounts whose timed ban ended by `now_unix_ms`.
    pub fn expired_bans(&self, now_unix_ms: u64) -> Vec<AccountId> {
        self.accounts
            .values()
            .map(|a| &a.row)
            .filter(|r| {
                r.banned && r.status.ban_until_ms != 0 && r.status.ban_until_ms <= now_unix_ms
            })
            .map(|r| r.id)
            .collect()
    }

    /// Every account, by id.
    pub fn accounts(&self) -> impl Iterator<Item = &Account> {
        self.accounts.values()
    }

    /// Sets the ignore list.
    pub fn set_ignore(&mut self, id: AccountId, ignore: Vec<String>) -> bool {
        self.update_row(id, |r| r.ignore = ignore)
    }

    /// Marks the account in the world (or not).
    pub fn set_logged_on(&mut self, id: AccountId, on: bool) {
        if let Some(a) = self.accounts.get_mut(&id) {
            a.logged_on = on;
        }
    }

    /// Adds a character at the end of the list, with a new handle; returns its slot.
    pub fn add_character(&mut self, id: AccountId, mut state: ActorStateDto) -> Option<u8> {
        let slot = u8::try_from(self.accounts.get(&id)?.characters.len()).ok()?;
        state.handle = self.new_handle();
        let a = self.accounts.get_mut(&id)?;
        self.by_character.insert(name_key(&state.name), id);
        a.characters.push(state);
        self.pending.push(PersistOp::ReplaceCharacters {
            account: id,
            characters: a.characters.clone(),
        });
        Some(slot)
    }

    /// Deletes the character in `slot` (later slots move down).
    pub fn delete_character(&mut self, id: AccountId, slot: u8) -> bool {
        let Some(a) = self.accounts.get_mut(&id) else {
            return false;
        };
        let i = usize::from(slot);
        if i >= a.characters.len() {
            return false;
        }
        let gone = a.characters.remove(i);
        self.by_character.remove(&name_key(&gone.name));
        self.pending.push(PersistOp::ReplaceCharacters {
            account: id,
            characters: a.characters.clone(),
        });
        true
    }

    /// Forgets an account the store never took (its creation failed to write); nothing is
    /// queued. False when it is unknown or in the world.
    pub fn remove_account(&mut self, id: AccountId) -> bool {
        if self.accounts.get(&id).is_none_or(|a| a.logged_on) {
            return false;
        }
        let Some(a) = self.accounts.remove(&id) else {
            return false;
        };
        self.by_user.remove(&name_key(&a.row.user));
        for c in &a.characters {
            self.by_character.remove(&name_key(&c.name));
        }
        true
    }

    /// Forgets a character the store never took (its creation failed to write); nothing
    /// is queued. False when the account has no character of that name.
    pub fn remove_character_named(&mut self, id: AccountId, name: &str) -> bool {
        let Some(a) = self.accounts.get_mut(&id) else {
            return false;
        };
        let key = name_key(name);
        let Some(i) = a.characters.iter().position(|c| name_key(&c.name) == key) else {
            return false;
        };
        a.characters.remove(i);
        self.by_character.remove(&key);
        true
    }

    /// Puts back a character whose deletion the store never took, in its slot (at the end
    /// if the list is shorter now); nothing is queued. False when its name was taken since.
    pub fn restore_character(&mut self, id: AccountId, slot: u8, state: ActorStateDto) -> bool {
        if self.character_name_taken(&state.name) {
            return false;
        }
        let Some(a) = self.accounts.get_mut(&id) else {
            return false;
        };
        self.by_character.insert(name_key(&state.name), id);
        let i = usize::from(slot).min(a.characters.len());
        a.characters.insert(i, state);
        true
    }

    /// Puts a character back as a backup held it (the console's restore): over the
    /// account's character of that name (keeping its name, handle and fencing token), or,
    /// when it was deleted since, as a new last slot (keeping its handle, which was never
    /// given to another). Its fencing token is raised past every copy handed out, so a
    /// late save of one never lands over the restore. The account must be out of the
    /// world, and the name must not belong to another account now. Returns the slot.
    pub fn restore_from_backup(
        &mut self,
        id: AccountId,
        mut state: ActorStateDto,
        max_characters: usize,
    ) -> Result<u8, String> {
        let Some(a) = self.accounts.get(&id) else {
            return Err("the account is gone".into());
        };
        if a.logged_on {
            return Err(format!(
                "{:?} is in the world: kick it first (a restore never races a live copy)",
                a.row.user
            ));
        }
        if self.quarantined.contains(&id) {
            return Err(format!(
                "{:?} is quarantined (unreadable rows): repair it offline",
                a.row.user
            ));
        }
        if let Some((owner, slot)) = self.find_character(&state.name) {
            if owner != id {
                return Err(format!(
                    "the name {:?} belongs to another account now",
                    state.name
                ));
            }
            let Some(c) = self.character_mut(id, slot) else {
                return Err("the character is gone".into());
            };
            state.name.clone_from(&c.name);
            state.handle = c.handle;
            // Above every copy handed out so far: a straggling save of one is refused.
            state.fence = c.fence.saturating_add(1);
            *c = state.clone();
            self.pending.push(PersistOp::SaveCharacter {
                account: id,
                slot,
                state: Box::new(state),
            });
            return Ok(slot);
        }
        if a.characters.len() >= max_characters {
            return Err(format!(
                "{:?} has {} characters already (the most an account holds)",
                a.row.user,
                a.characters.len()
            ));
        }
        let handle_free = state.handle != 0
            && state.handle < self.next_handle
            && !self
                .accounts
                .values()
                .flat_map(|a| &a.characters)
                .any(|c| c.handle == state.handle);
        if !handle_free {
            state.handle = self.new_handle();
        }
        let a = self
            .accounts
            .get_mut(&id)
            .ok_or_else(|| "the account is gone".to_owned())?;
        let slot = u8::try_from(a.characters.len()).map_err(|_| "too many characters")?;
        self.by_character.insert(name_key(&state.name), id);
        a.characters.push(state);
        self.pending.push(PersistOp::ReplaceCharacters {
            account: id,
            characters: a.characters.clone(),
        });
        Ok(slot)
    }

    /// The account and slot of the character called `name` (case-insensitive).
    pub fn find_character(&self, name: &str) -> Option<(AccountId, u8)> {
        let id = *self.by_character.get(&name_key(name))?;
        let slot = self
            .accounts
            .get(&id)?
            .characters
            .iter()
            .position(|c| name_key(&c.name) == name_key(name))?;
        Some((id, u8::try_from(slot).ok()?))
    }

    /// Stores a character's latest state (a zone's snapshot: logout, checkpoint, handoff).
    /// The name and the handle are kept as stored (zones cannot change them).
    pub fn save_character(&mut self, id: AccountId, slot: u8, mut state: ActorStateDto) -> bool {
        let Some(c) = self.character_mut(id, slot) else {
            return false;
        };
        if state.fence < c.fence {
            // A copy the cluster handed out again since: never over the newer one.
            return false;
        }
        state.name.clone_from(&c.name);
        state.handle = c.handle;
        *c = state.clone();
        self.pending.push(PersistOp::SaveCharacter {
            account: id,
            slot,
            state: Box::new(state),
        });
        true
    }

    fn character_mut(&mut self, id: AccountId, slot: u8) -> Option<&mut ActorStateDto> {
        self.accounts
            .get_mut(&id)
            .and_then(|a| a.characters.get_mut(usize::from(slot)))
    }

    /// Whether a save of `state` (for `owner`, or found by its name) comes from a copy
    /// that is not the current one: its fencing token is not the stored one.
    pub fn superseded(&self, owner: Option<(AccountId, u8)>, state: &ActorStateDto) -> bool {
        owner
            .or_else(|| self.find_character(&state.name))
            .is_some_and(|(a, s)| !self.fence_ok(a, s, state.fence))
    }

    /// Whether a save carrying fencing token `fence` may replace the stored character
    /// (see [`ActorStateDto::fence`]): only the token the store holds, the one of the
    /// current copy; false for an unknown character too.
    ///
    /// A smaller token is a copy handed out again since. A larger one was handed out by
    /// a gateway whose hand-out never reached the store: a leader that crashed before its
    /// write committed, or one deposed and not yet aware of it (its writes are refused
    /// by its old epoch) that put a player of a node it gave up on back elsewhere. That
    /// copy must not overwrite the one the new leader adopted with the stored token, so
    /// it is refused too (found by the simulator's deposed leader, issue 41). This
    /// gateway's own hand-outs change the book before any copy they make can save.
    pub fn fence_ok(&self, id: AccountId, slot: u8, fence: u64) -> bool {
        self.accounts
            .get(&id)
            .and_then(|a| a.characters.get(usize::from(slot)))
            .is_some_and(|c| fence == c.fence)
    }

    /// The character is handed out again with fencing token `fence` (a login, a
    /// recovery): from now on only saves carrying at least that token are stored.
    pub fn hand_out(&mut self, id: AccountId, slot: u8, fence: u64) -> bool {
        let Some(c) = self.character_mut(id, slot) else {
            return false;
        };
        if fence <= c.fence {
            return false;
        }
        c.fence = fence;
        let state = Box::new(c.clone());
        self.pending.push(PersistOp::SaveCharacter {
            account: id,
            slot,
            state,
        });
        true
    }

    /// Takes the queued persistence ops, oldest first.
    pub fn take_persist(&mut self) -> Vec<PersistOp> {
        std::mem::take(&mut self.pending)
    }
}
