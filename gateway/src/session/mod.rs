//! The per-connection login state machine (reference §5 with the V1 hardening), sans-IO in
//! the style of quinn-proto: the shell feeds [`Session::handle_packet`] with the current time
//! and each decoded-or-raw reliable frame, then drains [`Session::poll_transmit`] (packets to
//! send, in order) and [`Session::poll_event`] ([`SessionEvent`]s: close, enter world,
//! persistence ops, packets for the zone).
//!
//! Shared state lives outside the session and is passed in through [`Ctx`]: the world, the
//! [`AccountBook`], the login and account-creation limiter [`LoginThrottle`], the [`PasswordHasher`] and an RNG for
//! salts. Nothing here reads a clock, a socket, a file or a global RNG.
//!
//! Rules enforced:
//! * every menu packet carries `creds`; they are verified each time (a successful
//!   verification is cached per connection so argon2 runs once);
//! * `P_VerifyAccount` answers `"P"` for every pre-auth failure; `"B"`/`"L"` only after the
//!   password verifies;
//! * at most 5 failed credential checks per 60 s per peer address, after which any further
//!   credential-bearing packet closes the connection with code 4;
//! * any packet that is not a menu packet before `P_StartGame` succeeded, any packet that does
//!   not decode, and any menu packet after it, closes the connection with code 2, except:
//! * `P_FetchUpdateFiles` (10), whatever its payload, is answered before login with the
//!   game's update list (`Files.dat`, [`Gate`]; the empty list `0a 00 00` when there is
//!   none), and the connection stays up (a stock client asks for it first);
//! * while the server is locked for maintenance ([`Gate::lock`], Realm Crafter's "lock
//!   updates server"), `P_FetchUpdateFiles` and every packet that logs in or writes
//!   (account creation, `P_VerifyAccount`, character changes, `P_StartGame`) gets its
//!   refusal, if it has one, and the connection closes with code 5 and the lock's message;
//! * `P_FetchItems` (8) and `P_SelectScenery` (42), which Realm Crafter never handled, are
//!   ignored before login, whatever their payload, and reported as
//!   [`SessionEvent::Ignored`] for the shell to count.

mod accounts;
mod blocks;
pub mod budget;
mod gate;
mod lobby;
mod password;
mod throttle;

use std::collections::VecDeque;

use rand::RngCore;
use shared::content::World;
use shared::internal::ActorStateDto;
use shared::proto::{
    ChangePasswordReply, CharacterSummary, ClientPacket, CreateAccountReply, CreateCharacterReply,
    Creds, DecodeCtx, DeleteCharacterReply, FetchCharacterReply, ServerPacket, StartGameReply,
    VerifyAccountReply, ids, update_file_chunks,
};

pub use accounts::{
    Account, AccountBook, AccountId, AccountRow, AccountStatus, HANDLE_LIMIT, PersistOp, latin1,
    latin1_bytes, name_key,
};
pub use blocks::{INVENTORY_SLOTS, catalogue_blocks, catalogue_blocks_at, character_blocks};
pub use gate::{Gate, MAX_LOCK_REASON, clean_reason, lock_message};
pub use lobby::{Admit, Lobby};
pub use password::{Argon2Hasher, HashError, PasswordHasher, Precomputed, verify_rc_v1};
pub use throttle::{LoginThrottle, PeerKey, ThrottleLimits};

/// Close codes (transport.md).
pub mod close {
    /// Normal close.
    pub const NORMAL: u32 = 0;
    /// Kicked.
    pub const KICKED: u32 = 1;
    /// Protocol violation.
    pub const PROTOCOL: u32 = 2;
    /// Server shutting down.
    pub const SHUTDOWN: u32 = 3;
    /// Too many failed logins.
    pub const RATE_LIMITED: u32 = 4;
    /// The account's stored data could not be read (it is quarantined until an operator
    /// repairs it), or the store cannot save right now (a full disk): logins, new accounts
    /// and character changes are refused until it heals.
    pub const UNAVAILABLE: u32 = 5;
    /// The client did not read what the server sent: its send queue passed
    /// `client_queue_bytes`.
    pub const TOO_SLOW: u32 = 6;
}

/// Longest user name (bytes).
pub const MAX_USER_LEN: usize = 50;
/// Longest character name (bytes).
pub const MAX_CHARACTER_NAME_LEN: usize = 32;
/// `P_FetchActors` answers per connection (the catalogue is large and needs no login, so it
/// must not become an amplifier); one more closes with code 2.
pub const MAX_CATALOGUE_REQUESTS: u8 = 3;
/// Action bar slots of a new character.
pub const ACTION_BAR_SLOTS: usize = 36;

/// What the session asks of its shell.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionEvent {
    /// Close the connection with this application code (after sending queued packets).
    Close {
        /// Code of transport.md.
        code: u32,
        /// Why, for the log.
        reason: String,
    },
    /// `P_StartGame` succeeded: attach the character to its zone (the zone sends the start
    /// sequence). The account is marked logged on; call [`Session::disconnected`] at the end.
    EnterWorld {
        /// The account.
        account: AccountId,
        /// The character's slot.
        index: u8,
        /// Whether the account is a dungeon master.
        is_dm: bool,
        /// The saved state.
        state: Box<ActorStateDto>,
    },
    /// A change for the store writer.
    Persist(PersistOp),
    /// An in-game packet for the zone that owns this player.
    ToZone(ClientPacket),
    /// A packet Realm Crafter never handled (`P_FetchItems`, `P_SelectScenery`) was
    /// ignored before login; the shell counts it. The connection stays up.
    Ignored {
        /// The packet's type byte.
        id: u8,
    },
}

/// Shared state a session works on.
pub struct Ctx<'a> {
    /// The world being served.
    pub world: &'a World,
    /// All accounts.
    pub book: &'a mut AccountBook,
    /// Failed-login counts per peer.
    pub throttle: &'a mut LoginThrottle,
    /// Password hashing.
    pub hasher: &'a dyn PasswordHasher,
    /// Source of salts.
    pub rng: &'a mut dyn RngCore,
    /// The game clock's epoch and the real time now (both Unix ms), for the clock block
    /// `"E"` of `P_FetchActors`; `None` sends `Environment.dat`'s stored time.
    pub clock: Option<ClockNow>,
    /// The update list and the maintenance lock.
    pub gate: &'a Gate,
}

/// The game clock's epoch and the real time (Unix ms) of the packet being handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockNow {
    /// The cluster's clock epoch.
    pub epoch_ms: u64,
    /// Now.
    pub now_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Menu,
    InGame { account: AccountId, index: u8 },
    Closed,
}

/// Why a store-unavailable session closes (code 5).
pub const STORE_UNAVAILABLE: &str = "the server cannot save right now; try again later";

/// A change to the book a reply waits on: undone when its write fails, so the book never
/// keeps what the database does not hold.
#[derive(Debug, Clone, PartialEq)]
enum Undo {
    /// A new account.
    Account(AccountId),
    /// A character added at the end of an account's list.
    CharacterAdded { account: AccountId, name: String },
    /// A character deleted from its slot.
    CharacterDeleted {
        account: AccountId,
        slot: u8,
        state: Box<ActorStateDto>,
    },
    /// A password changed; the old hash and the connection's verified credentials.
    Password {
        account: AccountId,
        old: String,
        verified: Option<(AccountId, Vec<u8>)>,
    },
}

/// Why a credential check failed.
enum AuthFail {
    /// Wrong user or password (already counted).
    Bad,
    /// The peer is throttled; the session is closing.
    Throttled,
}

/// One client connection's login state.
#[doc(
    alias = "P_CreateAccount",
    alias = "P_VerifyAccount",
    alias = "P_FetchActors"
)]
#[doc(
    alias = "P_FetchCharacter",
    alias = "P_CreateCharacter",
    alias = "P_DeleteCharacter"
)]
#[doc(alias = "P_ChangePassword", alias = "P_StartGame")]
#[derive(Debug)]
pub struct Session {
    peer: PeerKey,
    phase: Phase,
    closed: bool,
    catalogue_requests: u8,
    verified: Option<(AccountId, Vec<u8>)>,
    transmit: VecDeque<ServerPacket>,
    events: VecDeque<SessionEvent>,
    /// The store is out of service (set by the shell before each packet).
    store_down: bool,
    /// The last packet's change to the book and the refusal sent instead of its reply if
    /// its write fails.
    pending: Option<(Undo, ServerPacket)>,
}

/// Whether a menu packet is refused while the store is out of service (it logs in or
/// writes): the shell skips its password work then.
pub fn refused_while_store_down(p: &ClientPacket) -> bool {
    matches!(
        p,
        ClientPacket::CreateAccount(_)
            | ClientPacket::VerifyAccount(_)
            | ClientPacket::CreateCharacter(_)
            | ClientPacket::DeleteCharacter(_)
            | ClientPacket::ChangePassword(_)
            | ClientPacket::StartGame(_)
    )
}

/// Whether a user name is acceptable: 1..=50 bytes of `[0-9A-Za-z_]` or bytes ≥ 192.
pub fn valid_user_name(name: &[u8]) -> bool {
    !name.is_empty()
        && name.len() <= MAX_USER_LEN
        && name
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'_' || b >= 192)
}

/// Whether a password field looks like a lowercase 32-hex MD5.
fn valid_md5_hex(p: &[u8]) -> bool {
    p.len() == 32
        && p.iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
}

/// Whether a character name is acceptable before the filter and uniqueness checks.
fn valid_character_name(name: &[u8]) -> bool {
    !name.is_empty()
        && name.len() <= MAX_CHARACTER_NAME_LEN
        && name.iter().all(|&b| b >= 0x20 && b != 0x7F)
        && name.first() != Some(&b' ')
        && name.last() != Some(&b' ')
}

fn summary(c: &ActorStateDto) -> CharacterSummary {
    let b = |v: u16| u8::try_from(v).unwrap_or(u8::MAX);
    CharacterSummary {
        name: latin1_bytes(&c.name).into(),
        actor_id: c.template,
        gender: c.gender,
        face: b(c.face),
        hair: b(c.hair),
        beard: b(c.beard),
        body: b(c.body),
    }
}

fn summaries(a: &Account) -> Vec<CharacterSummary> {
    a.characters.iter().map(summary).collect()
}

impl Session {
    /// A new session for a connection from `peer`.
    pub fn new(peer: PeerKey) -> Self {
        Self {
            peer,
            phase: Phase::Menu,
            closed: false,
            catalogue_requests: 0,
            verified: None,
            transmit: VecDeque::new(),
            events: VecDeque::new(),
            store_down: false,
            pending: None,
        }
    }

    /// Whether the store is out of service: while it is, logins, account creation and
    /// character changes are refused (their refusal, then close code 5,
    /// [`STORE_UNAVAILABLE`]) without hashing anything; the catalogue and the character
    /// screen still answer. The shell sets it before each packet.
    pub fn set_store_down(&mut self, down: bool) {
        self.store_down = down;
    }

    /// Whether the last packet's reply must wait until its [`SessionEvent::Persist`] ops
    /// are committed (a new account, a character created or deleted, a password changed):
    /// the shell then holds [`Session::poll_transmit`] back until it knows, and calls
    /// [`Session::commit_failed`] if the write failed.
    pub fn awaits_commit(&self) -> bool {
        self.pending.is_some()
    }

    /// The last packet's write failed: its change to the book is undone, its reply
    /// replaced by the refusal, and the session closes with code 5.
    pub fn commit_failed(&mut self, book: &mut AccountBook) {
        let Some((undo, refusal)) = self.pending.take() else {
            return;
        };
        match undo {
            Undo::Account(id) => {
                book.remove_account(id);
            }
            Undo::CharacterAdded { account, name } => {
                book.remove_character_named(account, &name);
            }
            Undo::CharacterDeleted {
                account,
                slot,
                state,
            } => {
                book.restore_character(account, slot, *state);
            }
            Undo::Password {
                account,
                old,
                verified,
            } => {
                book.set_password_hash(account, old);
                self.verified = verified;
            }
        }
        // The undo is what the database holds already: nothing to write.
        let _ = book.take_persist();
        self.transmit.clear();
        self.send(refusal);
        self.close(close::UNAVAILABLE, STORE_UNAVAILABLE);
    }

    /// The last packet's write is committed: its reply stands.
    pub fn committed(&mut self) {
        self.pending = None;
    }

    /// Refuses a packet that would log in, write or fetch the update list while the
    /// server is locked; true when it did.
    fn refuse_locked(&mut self, p: &ClientPacket, message: String) -> bool {
        if !refused_while_store_down(p) && !matches!(p, ClientPacket::FetchUpdateFiles(_)) {
            return false;
        }
        self.refuse(p, message);
        true
    }

    /// Refuses a packet that would log in or write while the store is out of service;
    /// true when it did.
    fn refuse_store_down(&mut self, p: &ClientPacket) -> bool {
        if !refused_while_store_down(p) {
            return false;
        }
        self.refuse(p, STORE_UNAVAILABLE.to_owned());
        true
    }

    /// Sends `p`'s refusal (if it has one) and closes with code 5 and `reason`.
    fn refuse(&mut self, p: &ClientPacket, reason: String) {
        let refusal = match p {
            ClientPacket::CreateAccount(_) => {
                Some(ServerPacket::CreateAccount(CreateAccountReply::Refused))
            }
            ClientPacket::CreateCharacter(_) => {
                Some(ServerPacket::CreateCharacter(CreateCharacterReply::Refused))
            }
            ClientPacket::DeleteCharacter(_) => {
                Some(ServerPacket::DeleteCharacter(DeleteCharacterReply::Refused))
            }
            ClientPacket::ChangePassword(_) => {
                Some(ServerPacket::ChangePassword(ChangePasswordReply::Refused))
            }
            ClientPacket::StartGame(_) => Some(ServerPacket::StartGame(StartGameReply::Failed)),
            _ => None,
        };
        if let Some(r) = refusal {
            self.send(r);
        }
        self.close(close::UNAVAILABLE, reason);
    }

    /// Whether the session has closed.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// The account and slot in the world, if any.
    pub fn in_game(&self) -> Option<(AccountId, u8)> {
        match self.phase {
            Phase::InGame { account, index } => Some((account, index)),
            _ => None,
        }
    }

    /// Whether an account's credentials have been verified on this connection (the login
    /// deadline stops counting).
    pub fn is_logged_in(&self) -> bool {
        self.verified.is_some()
    }

    /// Whether these credentials were already verified on this connection (the shell then
    /// skips precomputing a password hash check for them).
    pub fn has_verified(&self, creds: &Creds) -> bool {
        self.verified
            .as_ref()
            .is_some_and(|(_, md5)| *md5 == creds.password_md5.0)
    }

    /// The next packet to send.
    pub fn poll_transmit(&mut self) -> Option<ServerPacket> {
        self.transmit.pop_front()
    }

    /// The next event for the shell.
    pub fn poll_event(&mut self) -> Option<SessionEvent> {
        self.events.pop_front()
    }

    /// The connection ended (any reason): clears the account's logged-on mark.
    pub fn disconnected(&mut self, book: &mut AccountBook) {
        if let Phase::InGame { account, .. } = self.phase {
            book.set_logged_on(account, false);
        }
        self.phase = Phase::Closed;
        self.closed = true;
    }

    /// Closes: one `Close` event; every later packet is ignored. An in-game session keeps
    /// its account until [`Session::disconnected`].
    fn close(&mut self, code: u32, reason: impl Into<String>) {
        if !self.closed {
            self.events.push_back(SessionEvent::Close {
                code,
                reason: reason.into(),
            });
        }
        self.closed = true;
    }

    fn send(&mut self, p: ServerPacket) {
        self.transmit.push_back(p);
    }

    fn flush_persist(&mut self, book: &mut AccountBook) {
        for op in book.take_persist() {
            self.events.push_back(SessionEvent::Persist(op));
        }
    }

    /// Handles one raw reliable frame (`ty` and payload). Undecodable input closes with
    /// code 2; nothing panics.
    pub fn handle_frame(&mut self, now_ms: u64, ctx: &mut Ctx<'_>, ty: u8, payload: &[u8]) {
        if self.closed {
            return;
        }
        let dctx = DecodeCtx {
            template_has_gender: None,
            create_character_points: ctx.world.attributes.assignment_points > 0,
        };
        match ClientPacket::decode_with(ty, payload, &dctx) {
            Ok(p) => self.handle_packet(now_ms, ctx, &p),
            // Realm Crafter reads nothing of these, so neither does the menu: an odd
            // payload is answered or ignored like a well-formed one.
            Err(_) if self.phase == Phase::Menu && self.menu_any_payload(ctx, ty) => {}
            Err(e) => self.close(close::PROTOCOL, format!("undecodable packet {ty}: {e}")),
        }
    }

    /// Answers `P_FetchUpdateFiles` or ignores the unused ids, by type byte alone; `false`
    /// for any other id.
    fn menu_any_payload(&mut self, ctx: &Ctx<'_>, ty: u8) -> bool {
        match ty {
            ids::P_FETCH_UPDATE_FILES => self.update_files(ctx.gate),
            ids::P_FETCH_ITEMS | ids::P_SELECT_SCENERY => {
                self.events.push_back(SessionEvent::Ignored { id: ty });
            }
            _ => return false,
        }
        true
    }

    /// The game's update list, in Realm Crafter's chunks (SN:1542-1554); empty when the
    /// game has none, so a stock client's updater finishes at once and goes on to the
    /// login screen. Realm Crafter answers nothing while locked (its network is off): here
    /// the connection closes with code 5 and the lock's message.
    #[doc(alias = "P_FetchUpdateFiles")]
    fn update_files(&mut self, gate: &Gate) {
        if let Some(message) = gate.lock_message() {
            self.close(close::UNAVAILABLE, message);
            return;
        }
        for chunk in update_file_chunks(gate.files()) {
            self.send(ServerPacket::FetchUpdateFiles(chunk));
        }
    }

    /// Handles one decoded packet.
    pub fn handle_packet(&mut self, now_ms: u64, ctx: &mut Ctx<'_>, p: &ClientPacket) {
        if self.closed {
            return;
        }
        match self.phase {
            Phase::Closed => return,
            Phase::InGame { .. } => {
                match p {
                    ClientPacket::NewClient(_)
                    | ClientPacket::CreateAccount(_)
                    | ClientPacket::VerifyAccount(_)
                    | ClientPacket::FetchCharacter(_)
                    | ClientPacket::CreateCharacter(_)
                    | ClientPacket::DeleteCharacter(_)
                    | ClientPacket::ChangePassword(_)
                    | ClientPacket::FetchActors(_)
                    | ClientPacket::StartGame(_) => {
                        self.close(close::PROTOCOL, format!("{} while in game", p.name()));
                    }
                    other => self.events.push_back(SessionEvent::ToZone(other.clone())),
                }
                return;
            }
            Phase::Menu => {}
        }
        self.pending = None;
        if let Some(message) = ctx.gate.lock_message()
            && self.refuse_locked(p, message)
        {
            return;
        }
        if self.store_down && self.refuse_store_down(p) {
            return;
        }
        match p {
            ClientPacket::NewClient(_) => {}
            ClientPacket::FetchUpdateFiles(_) => self.update_files(ctx.gate),
            ClientPacket::FetchItems(_) | ClientPacket::SelectScenery(_) => {
                self.events.push_back(SessionEvent::Ignored { id: p.id() });
            }
            ClientPacket::CreateAccount(m) => {
                self.create_account(now_ms, ctx, &m.creds, &m.email.0)
            }
            ClientPacket::VerifyAccount(m) => self.verify_account(now_ms, ctx, &m.creds),
            ClientPacket::FetchActors(_) if self.catalogue_requests >= MAX_CATALOGUE_REQUESTS => {
                self.close(close::PROTOCOL, "P_FetchActors requested too often");
            }
            ClientPacket::FetchActors(_) => {
                self.catalogue_requests = self.catalogue_requests.saturating_add(1);
                let blocks = match ctx.clock {
                    Some(c) => catalogue_blocks_at(ctx.world, c.epoch_ms, c.now_ms),
                    None => catalogue_blocks(ctx.world),
                };
                for b in blocks {
                    self.send(ServerPacket::FetchActors(b));
                }
            }
            ClientPacket::FetchCharacter(m) => self.fetch_character(now_ms, ctx, &m.creds, m.index),
            ClientPacket::CreateCharacter(m) => self.create_character(now_ms, ctx, m),
            ClientPacket::DeleteCharacter(m) => {
                self.delete_character(now_ms, ctx, &m.creds, m.index);
            }
            ClientPacket::ChangePassword(m) => {
                self.change_password(now_ms, ctx, &m.creds, &m.new_password_md5.0);
            }
            ClientPacket::StartGame(m) => self.start_game(now_ms, ctx, &m.creds, m.index),
            other => self.close(
                close::PROTOCOL,
                format!("{} before entering the world", other.name()),
            ),
        }
        self.flush_persist(ctx.book);
    }

    /// Verifies `creds`, counting failures against the peer. On throttle the session closes
    /// with code 4.
    fn authenticate(
        &mut self,
        now_ms: u64,
        ctx: &mut Ctx<'_>,
        creds: &Creds,
    ) -> Result<AccountId, AuthFail> {
        let user = latin1(&creds.user.0);
        let found = ctx.book.find_user(&user);
        if let (Some(id), Some((vid, md5))) = (found, &self.verified)
            && *vid == id
            && *md5 == creds.password_md5.0
        {
            return Ok(id);
        }
        // The account name's own wait first, whatever network asks (see `throttle`).
        let wait = ctx
            .throttle
            .account_wait_ms(&creds.user.0, self.peer, now_ms);
        if wait > 0 {
            self.close(
                close::RATE_LIMITED,
                format!(
                    "too many failed logins for this account: try again in {} s",
                    wait.div_ceil(1000)
                ),
            );
            return Err(AuthFail::Throttled);
        }
        // Every verification takes a cell, before its answer is known (see `throttle`).
        if !ctx.throttle.try_attempt(self.peer, now_ms) {
            self.close(close::RATE_LIMITED, "too many login attempts");
            return Err(AuthFail::Throttled);
        }
        let ok = found.and_then(|id| {
            let a = ctx.book.get(id)?;
            ctx.hasher
                .verify(&creds.password_md5.0, &a.row.password_hash)
                .then(|| (id, ctx.hasher.needs_rehash(&a.row.password_hash)))
        });
        match ok {
            Some((_, _)) if found.is_some_and(|id| ctx.book.is_quarantined(id)) => {
                // Only the owner learns it (after the password); nothing of it is touched.
                self.close(
                    close::UNAVAILABLE,
                    "this account's saved data could not be read; the operator has been told",
                );
                Err(AuthFail::Throttled)
            }
            Some((id, rehash)) => {
                if rehash && let Some(h) = Self::new_hash(ctx, &creds.password_md5.0) {
                    // Legacy record (imported V1 or V0): upgrade to argon2id now.
                    ctx.book.set_password_hash(id, h);
                }
                self.verified = Some((id, creds.password_md5.0.clone()));
                ctx.throttle.account_ok(&creds.user.0, self.peer);
                Ok(id)
            }
            None => {
                ctx.throttle
                    .account_failed(&creds.user.0, self.peer, now_ms);
                if found.is_none() {
                    // Same cost as a real verification: no user enumeration by timing.
                    ctx.hasher.burn(&creds.password_md5.0);
                }
                Err(AuthFail::Bad)
            }
        }
    }

    fn new_hash(ctx: &mut Ctx<'_>, md5: &[u8]) -> Option<String> {
        let mut salt = [0u8; 16];
        ctx.rng.fill_bytes(&mut salt);
        ctx.hasher.hash(md5, &salt).ok()
    }

    #[doc(alias = "P_CreateAccount")]
    fn create_account(&mut self, now_ms: u64, ctx: &mut Ctx<'_>, creds: &Creds, email: &[u8]) {
        // Creation has its own bucket per network (it hashes a password and takes a name),
        // and a network out of login attempts cannot probe names with it either.
        if ctx.throttle.is_blocked(self.peer, now_ms) || !ctx.throttle.try_create(self.peer, now_ms)
        {
            self.close(close::RATE_LIMITED, "too many accounts created");
            return;
        }
        let ok = ctx.world.misc.allow_account_creation
            && valid_user_name(&creds.user.0)
            && valid_md5_hex(&creds.password_md5.0)
            && email.len() <= 255
            && ctx.book.find_user(&latin1(&creds.user.0)).is_none();
        let created = if ok {
            Self::new_hash(ctx, &creds.password_md5.0).and_then(|hash| {
                ctx.book
                    .create_account(latin1(&creds.user.0), hash, latin1(email))
            })
        } else {
            None
        };
        if let Some(id) = created {
            self.pending = Some((
                Undo::Account(id),
                ServerPacket::CreateAccount(CreateAccountReply::Refused),
            ));
        }
        self.send(ServerPacket::CreateAccount(if created.is_some() {
            CreateAccountReply::Created
        } else {
            CreateAccountReply::Refused
        }));
    }

    #[doc(alias = "P_VerifyAccount")]
    fn verify_account(&mut self, now_ms: u64, ctx: &mut Ctx<'_>, creds: &Creds) {
        let id = match self.authenticate(now_ms, ctx, creds) {
            Ok(id) => id,
            Err(AuthFail::Bad) => {
                self.send(ServerPacket::VerifyAccount(VerifyAccountReply::BadPassword));
                return;
            }
            Err(AuthFail::Throttled) => return,
        };
        let reply = match ctx.book.get(id) {
            Some(a) if a.row.banned => VerifyAccountReply::Banned,
            Some(a) if a.logged_on => VerifyAccountReply::LoggedOn,
            Some(a) => VerifyAccountReply::Ok {
                characters: summaries(a),
            },
            None => VerifyAccountReply::BadPassword,
        };
        self.send(ServerPacket::VerifyAccount(reply));
    }

    /// Authenticates and refuses banned accounts; `None` means "reply with the failure".
    fn auth_usable(&mut self, now_ms: u64, ctx: &mut Ctx<'_>, creds: &Creds) -> Option<AccountId> {
        let id = self.authenticate(now_ms, ctx, creds).ok()?;
        match ctx.book.get(id) {
            Some(a) if !a.row.banned => Some(id),
            _ => None,
        }
    }

    #[doc(alias = "P_FetchCharacter")]
    fn fetch_character(&mut self, now_ms: u64, ctx: &mut Ctx<'_>, creds: &Creds, index: u8) {
        let blocks = self.auth_usable(now_ms, ctx, creds).and_then(|id| {
            let c = ctx.book.get(id)?.characters.get(usize::from(index))?;
            Some(character_blocks(ctx.world, c))
        });
        if self.is_closed() {
            return;
        }
        match blocks {
            Some(bs) => {
                for b in bs {
                    self.send(ServerPacket::FetchCharacter(b));
                }
            }
            None => self.send(ServerPacket::FetchCharacter(FetchCharacterReply::Failed)),
        }
    }

    #[doc(alias = "P_CreateCharacter")]
    fn create_character(
        &mut self,
        now_ms: u64,
        ctx: &mut Ctx<'_>,
        m: &shared::proto::CreateCharacter,
    ) {
        let reply = match self.auth_usable(now_ms, ctx, &m.creds) {
            Some(id) => self.try_create_character(ctx, id, m),
            None => CreateCharacterReply::Refused,
        };
        if !self.is_closed() {
            self.send(ServerPacket::CreateCharacter(reply));
        }
    }

    fn try_create_character(
        &mut self,
        ctx: &mut Ctx<'_>,
        id: AccountId,
        m: &shared::proto::CreateCharacter,
    ) -> CreateCharacterReply {
        let world = ctx.world;
        let Some(t) = world
            .actors
            .iter()
            .find(|t| t.id == m.actor_id && t.playable)
        else {
            return CreateCharacterReply::Refused;
        };
        let count = ctx.book.get(id).map_or(usize::MAX, |a| a.characters.len());
        if count >= usize::from(world.misc.max_account_chars) {
            return CreateCharacterReply::Refused;
        }
        use shared::content::model::Genders;
        let gender_ok = match t.genders {
            Genders::Both => m.gender <= 1,
            Genders::Male => m.gender == 0,
            Genders::Female => m.gender == 1,
            Genders::None => true,
        };
        if !gender_ok || m.face >= 5 || m.hair >= 5 || m.beard >= 5 || m.body >= 5 {
            return CreateCharacterReply::Refused;
        }
        let assignment = world.attributes.assignment_points;
        let points_ok = if assignment > 0 {
            m.points.len() == 40
                && m.points.iter().map(|&p| u32::from(p)).sum::<u32>() <= u32::from(assignment)
        } else {
            m.points.iter().all(|&p| p == 0)
        };
        if !points_ok {
            return CreateCharacterReply::Refused;
        }
        let name_bytes = &m.character_name.0;
        if !valid_character_name(name_bytes) {
            return CreateCharacterReply::InvalidName;
        }
        let name = latin1(name_bytes);
        let folded = name_key(&name);
        let filtered = world.names_filter.iter().any(|f| {
            let f = name_key(f.trim());
            !f.is_empty() && folded.contains(&f)
        });
        if filtered || ctx.book.character_name_taken(&name) {
            return CreateCharacterReply::InvalidName;
        }
        let state = new_character(world, t, m, name.clone());
        match ctx.book.add_character(id, state) {
            Some(_) => {
                self.pending = Some((
                    Undo::CharacterAdded { account: id, name },
                    ServerPacket::CreateCharacter(CreateCharacterReply::Refused),
                ));
                CreateCharacterReply::Created
            }
            None => CreateCharacterReply::Refused,
        }
    }

    #[doc(alias = "P_DeleteCharacter")]
    fn delete_character(&mut self, now_ms: u64, ctx: &mut Ctx<'_>, creds: &Creds, index: u8) {
        let mut gone = None;
        let reply = self
            .auth_usable(now_ms, ctx, creds)
            .filter(|&id| ctx.book.get(id).is_some_and(|a| !a.logged_on))
            .filter(|&id| {
                gone = ctx
                    .book
                    .get(id)
                    .and_then(|a| a.characters.get(usize::from(index)).cloned());
                ctx.book.delete_character(id, index)
            })
            .and_then(|id| ctx.book.get(id))
            .map_or(DeleteCharacterReply::Refused, |a| {
                if let Some(state) = gone.take() {
                    self.pending = Some((
                        Undo::CharacterDeleted {
                            account: a.row.id,
                            slot: index,
                            state: Box::new(state),
                        },
                        ServerPacket::DeleteCharacter(DeleteCharacterReply::Refused),
                    ));
                }
                DeleteCharacterReply::List {
                    characters: summaries(a),
                }
            });
        if !self.is_closed() {
            self.send(ServerPacket::DeleteCharacter(reply));
        }
    }

    #[doc(alias = "P_ChangePassword")]
    fn change_password(&mut self, now_ms: u64, ctx: &mut Ctx<'_>, creds: &Creds, new_md5: &[u8]) {
        let reply = match self.authenticate(now_ms, ctx, creds) {
            Err(AuthFail::Throttled) => return,
            Err(AuthFail::Bad) => ChangePasswordReply::BadPassword,
            Ok(id) => {
                if !valid_md5_hex(new_md5) || ctx.book.get(id).is_none_or(|a| a.row.banned) {
                    ChangePasswordReply::Refused
                } else {
                    let hash = Self::new_hash(ctx, new_md5);
                    let old = ctx.book.get(id).map(|a| a.row.password_hash.clone());
                    match hash.map(|h| ctx.book.set_password_hash(id, h)) {
                        Some(true) => {
                            self.pending = Some((
                                Undo::Password {
                                    account: id,
                                    old: old.unwrap_or_default(),
                                    verified: self.verified.clone(),
                                },
                                ServerPacket::ChangePassword(ChangePasswordReply::Refused),
                            ));
                            self.verified = Some((id, new_md5.to_vec()));
                            ChangePasswordReply::Changed
                        }
                        _ => ChangePasswordReply::Refused,
                    }
                }
            }
        };
        self.send(ServerPacket::ChangePassword(reply));
    }

    #[doc(alias = "P_StartGame")]
    fn start_game(&mut self, now_ms: u64, ctx: &mut Ctx<'_>, creds: &Creds, index: u8) {
        let entered = self.auth_usable(now_ms, ctx, creds).and_then(|id| {
            let a = ctx.book.get(id)?;
            if a.logged_on {
                return None;
            }
            let state = a.characters.get(usize::from(index))?.clone();
            Some((id, a.row.is_dm, state))
        });
        if self.is_closed() {
            return;
        }
        match entered {
            Some((account, is_dm, state)) => {
                ctx.book.set_logged_on(account, true);
                self.phase = Phase::InGame { account, index };
                self.events.push_back(SessionEvent::EnterWorld {
                    account,
                    index,
                    is_dm,
                    state: Box::new(state),
                });
            }
            None => self.send(ServerPacket::StartGame(StartGameReply::Failed)),
        }
    }
}

/// The initial state of a new character from its template (reference §5 step 4).
pub fn new_character(
    world: &World,
    t: &shared::content::model::ActorTemplate,
    m: &shared::proto::CreateCharacter,
    name: String,
) -> ActorStateDto {
    let (x, y, z, yaw) = world
        .areas
        .iter()
        .find(|a| a.name.eq_ignore_ascii_case(&t.start_area))
        .and_then(|a| {
            a.portals
                .iter()
                .find(|p| p.name.eq_ignore_ascii_case(&t.start_portal))
        })
        .map_or((0.0, 0.0, 0.0, 0.0), |p| (p.x, p.y, p.z, p.yaw));
    let attributes = (0..40)
        .map(|i| {
            let base = t.attributes.get(i).map_or(0, |p| i32::from(p.value));
            base + i32::from(m.points.get(i).copied().unwrap_or(0))
        })
        .collect();
    let attribute_max = (0..40)
        .map(|i| t.attributes.get(i).map_or(0, |p| i32::from(p.max)))
        .collect();
    let home = t.home_faction;
    ActorStateDto {
        template: t.id,
        name,
        area: t.start_area.clone(),
        instance: 0,
        x,
        y,
        z,
        yaw,
        gender: m.gender,
        face: u16::from(m.face),
        hair: u16::from(m.hair),
        beard: u16::from(m.beard),
        body: u16::from(m.body),
        level: 1,
        gold: world.misc.start_gold,
        reputation: world.misc.start_reputation,
        home_faction: home,
        ratings: (0..=99u8)
            .map(|o| world.factions.default_rating(home, o))
            .collect(),
        attributes,
        attribute_max,
        resistances: t.resistances.iter().map(|&r| i32::from(r)).collect(),
        inventory: vec![None; INVENTORY_SLOTS],
        action_bar: vec![String::new(); ACTION_BAR_SLOTS],
        ..ActorStateDto::default()
    }
}

/// Packet ids that are legal before entering the world.
pub const MENU_PACKETS: [u8; 9] = [
    ids::NEW_CLIENT,
    ids::P_CREATE_ACCOUNT,
    ids::P_VERIFY_ACCOUNT,
    ids::P_FETCH_CHARACTER,
    ids::P_CREATE_CHARACTER,
    ids::P_DELETE_CHARACTER,
    ids::P_CHANGE_PASSWORD,
    ids::P_FETCH_ACTORS,
    ids::P_START_GAME,
];
