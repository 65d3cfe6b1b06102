//! The menu flow of Realm Crafter (reference §5, transport.md "Session flow") as typed
//! calls on [`Connection`]: fetch the update list, create an account, log in, fetch the
//! catalogue, create, fetch and delete characters, and enter the world.
//!
//! Passwords are given as typed; [`Creds::from_password`] sends their lowercase hex MD5
//! (`shared::wire::md5_hex`). After a successful [`Connection::login`] the credentials are
//! kept and every later menu packet carries them, as the protocol requires.
//!
//! Each call sends its request and waits (at most [`Connection::reply_timeout`]) for the
//! reply packets. Other packets that arrive meanwhile are held back and returned, in order,
//! by the next [`Connection::recv`]. The calls are not cancel-safe: cancelling one between
//! its request and its reply leaves the reply to a later `recv`.

use shared::proto::{
    ActionSlot, ActorTemplateDef, AttributeDef, AttributePair, ChangeArea, CharacterSummary,
    ClientPacket, CreateAccount, CreateAccountReply, CreateCharacter, CreateCharacterReply, Creds,
    DeleteCharacter, DeleteCharacterReply, FactionDef, FetchActors, FetchActorsReply,
    FetchCharacter, FetchCharacterReply, FetchUpdateFiles, InventorySlot, ItemDef, KnownSpell,
    MonthDef, QuestEntry, SeasonDef, ServerPacket, StartGame, StartGameReply, UpdateFileEntry,
    VerifyAccount, VerifyAccountReply, ids,
};
use shared::wire::RcString;
use tokio::time::Instant;

use crate::conn::{Channel, Connection, Incoming};
use crate::error::{ClientError, CloseCode};

/// Number of `P_StartGame` messages that complete the start sequence: 12 action-bar parts
/// and the RuntimeID, in whatever order they arrive.
pub const START_GAME_PARTS: usize = 13;

/// Action-bar slots.
pub const ACTION_BAR_SLOTS: usize = 36;

/// Attribute-point bytes of `P_CreateCharacter` when the project's `Assignment > 0`.
pub const CREATION_POINTS: usize = 40;

/// Why a menu call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoginError {
    /// The connection failed (closed, timed out, undecodable reply ...).
    #[error(transparent)]
    Client(#[from] ClientError),
    /// `"P"`: wrong password. The gateway (like Realm Crafter V1) answers `"P"` for every
    /// failure before the password verifies, unknown accounts included.
    #[error("wrong user name or password (\"P\")")]
    BadPassword,
    /// `"N"`: no such account (Realm Crafter V0 servers).
    #[error("no such account (\"N\")")]
    NoAccount,
    /// `"B"`: the account is banned.
    #[error("the account is banned (\"B\")")]
    Banned,
    /// `"L"`: the account is already in the game.
    #[error("the account is already logged in (\"L\")")]
    AlreadyLoggedIn,
    /// A call that carries credentials was made before [`Connection::login`] or
    /// [`Connection::set_credentials`].
    #[error("no credentials: log in first")]
    NotLoggedIn,
    /// The server answered `"N"` to this packet.
    #[error("the server refused {0} (\"N\")")]
    Refused(&'static str),
    /// `"I"`: the character name is invalid or taken.
    #[error("invalid or taken character name (\"I\")")]
    InvalidName,
    /// A reply that does not fit the request.
    #[error("expected a {expected} reply, got {}", got.name())]
    Unexpected {
        /// What was expected.
        expected: &'static str,
        /// The packet that came.
        got: Box<ServerPacket>,
    },
    /// The end marker announces a different count than the blocks delivered.
    #[error("{what}: the end marker announces {announced}, {received} arrived")]
    CountMismatch {
        /// What was counted.
        what: &'static str,
        /// The count in the end marker.
        announced: u16,
        /// The count received.
        received: usize,
    },
    /// A part of a reply sequence never came.
    #[error("{0} is missing from the reply")]
    Missing(&'static str),
}

impl LoginError {
    /// The server's application close code, if the server closed the connection.
    pub fn server_close_code(&self) -> Option<CloseCode> {
        match self {
            Self::Client(e) => e.server_close_code(),
            _ => None,
        }
    }
}

fn unexpected(expected: &'static str, got: ServerPacket) -> LoginError {
    LoginError::Unexpected {
        expected,
        got: Box::new(got),
    }
}

/// The `"E"` block: calendar and clock.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    /// Year.
    pub year: u32,
    /// Day of the year.
    pub day: u16,
    /// Hour.
    pub hour: u8,
    /// Minute.
    pub minute: u8,
    /// Game minutes per real minute.
    pub time_factor: u8,
    /// 12 seasons.
    pub seasons: Vec<SeasonDef>,
    /// 20 months.
    pub months: Vec<MonthDef>,
}

/// Everything `P_FetchActors` returns.
#[doc(alias = "P_FetchActors")]
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Catalogue {
    /// Attribute points a new character may assign (`Assignment`; 0 if the `"A"` block
    /// did not come).
    pub assignment: u8,
    /// The 40 attributes.
    pub attributes: Vec<AttributeDef>,
    /// The 20 damage type names.
    pub damage_types: Vec<RcString>,
    /// Calendar and clock.
    pub environment: Option<Environment>,
    /// Every item.
    pub items: Vec<ItemDef>,
    /// Faction names.
    pub factions: Vec<FactionDef>,
    /// Every actor template (id, `playable`, `race`, `class`, `genders` ...).
    pub actors: Vec<ActorTemplateDef>,
}

impl Catalogue {
    /// The templates players may pick.
    pub fn playable(&self) -> impl Iterator<Item = &ActorTemplateDef> + '_ {
        self.actors.iter().filter(|t| t.playable != 0)
    }

    /// A template by id.
    pub fn template(&self, id: u16) -> Option<&ActorTemplateDef> {
        self.actors.iter().find(|t| t.id == id)
    }
}

/// A character to create (`P_CreateCharacter`).
#[doc(alias = "P_CreateCharacter")]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewCharacter {
    /// The name (Latin-1; other characters become `?`).
    pub name: String,
    /// Actor template id.
    pub actor_id: u16,
    /// 0 male, 1 female.
    pub gender: u8,
    /// Face index.
    pub face: u8,
    /// Hair index.
    pub hair: u8,
    /// Beard index.
    pub beard: u8,
    /// Body index.
    pub body: u8,
    /// Creation points per attribute. Sent padded or cut to 40 entries when the project's
    /// `Assignment > 0` (or is not known yet: fetch the catalogue first to be sure), and
    /// left out when the catalogue said `Assignment == 0`.
    pub points: Vec<u8>,
}

impl NewCharacter {
    /// A character of a template with every appearance index 0 and no points.
    pub fn new(name: &str, actor_id: u16) -> Self {
        Self {
            name: name.to_owned(),
            actor_id,
            ..Self::default()
        }
    }
}

/// Everything `P_FetchCharacter` returns.
#[doc(alias = "P_FetchCharacter")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CharacterSheet {
    /// Gold.
    pub gold: u32,
    /// Reputation.
    pub reputation: i16,
    /// Level.
    pub level: u16,
    /// Experience.
    pub xp: u32,
    /// Home faction.
    pub home_faction: u8,
    /// 40 attribute value/maximum pairs.
    pub attributes: Vec<AttributePair>,
    /// Inventory slots in order (`None` = empty).
    pub inventory: Vec<Option<InventorySlot>>,
    /// Known spells.
    pub spells: Vec<KnownSpell>,
    /// Quest log.
    pub quests: Vec<QuestEntry>,
}

/// The result of entering the world.
#[doc(alias = "P_StartGame")]
#[derive(Debug, Clone, PartialEq)]
pub struct GameStart {
    /// The player's RuntimeID.
    pub runtime_id: u16,
    /// The `P_ChangeArea` that placed the player (area name, position, instance handle ...).
    pub area: ChangeArea,
    /// The 36 action-bar slots from the 12 action-bar parts.
    pub action_bar: Vec<ActionSlot>,
    /// Every packet received from the request to the 13th `P_StartGame`, in order, those
    /// above included (`P_NewActor`s, chat, updates ...).
    pub packets: Vec<Incoming>,
}

impl Connection {
    /// Keeps credentials for the menu calls without sending `P_VerifyAccount` (for tests
    /// of what the server does with wrong or unverified credentials).
    pub fn set_credentials(&mut self, user: &str, password: &str) {
        self.creds = Some(Creds::from_password(user, password));
    }

    /// The credentials the menu calls send, if any.
    pub fn credentials(&self) -> Option<&Creds> {
        self.creds.as_ref()
    }

    fn require_creds(&self) -> Result<Creds, LoginError> {
        self.creds.clone().ok_or(LoginError::NotLoggedIn)
    }

    fn deadline(&self) -> Instant {
        Instant::now() + self.reply_timeout
    }

    /// The next reliable packet of type `ty`; other packets are held for `recv`.
    async fn await_reply(&mut self, ty: u8, deadline: Instant) -> Result<ServerPacket, LoginError> {
        loop {
            let p = self.next_until(deadline).await?;
            if p.channel == Channel::Reliable && p.packet.id() == ty {
                return Ok(p.packet);
            }
            self.held.push_back(p);
        }
    }

    async fn next_until(&mut self, deadline: Instant) -> Result<Incoming, ClientError> {
        match tokio::time::timeout_at(deadline, self.recv_network()).await {
            Ok(r) => r,
            Err(_) => Err(ClientError::Timeout(self.reply_timeout)),
        }
    }

    /// `P_FetchUpdateFiles`: the game's update list (each file's name, relative to the
    /// game folder with `\` separators, and its checksum,
    /// `shared::content::updates::checksum`), collected over its chunks until the one
    /// carrying the total; the count is checked. Realm Crafter's client asks for it first,
    /// before logging in. A locked server closes the connection instead (code 5).
    #[doc(alias = "P_FetchUpdateFiles")]
    pub async fn fetch_update_files(&mut self) -> Result<Vec<UpdateFileEntry>, LoginError> {
        self.send(&ClientPacket::FetchUpdateFiles(FetchUpdateFiles {}))
            .await?;
        let deadline = self.deadline();
        let mut files = Vec::new();
        loop {
            let chunk = match self
                .await_reply(ids::P_FETCH_UPDATE_FILES, deadline)
                .await?
            {
                ServerPacket::FetchUpdateFiles(c) => c,
                other => return Err(unexpected("P_FetchUpdateFiles", other)),
            };
            files.extend(chunk.entries);
            if let Some(total) = chunk.total {
                check_count("update files", Some(total), files.len())?;
                return Ok(files);
            }
        }
    }

    /// `P_CreateAccount`: creates an account (the e-mail is obfuscated on the wire by the
    /// codec). Returns the server's answer; `Refused` covers a taken or invalid name and a
    /// server that does not allow account creation.
    #[doc(alias = "P_CreateAccount")]
    pub async fn create_account(
        &mut self,
        user: &str,
        password: &str,
        email: &str,
    ) -> Result<CreateAccountReply, LoginError> {
        let p = CreateAccount {
            creds: Creds::from_password(user, password),
            email: RcString::from(email),
        };
        self.send(&ClientPacket::CreateAccount(p)).await?;
        match self
            .await_reply(ids::P_CREATE_ACCOUNT, self.deadline())
            .await?
        {
            ServerPacket::CreateAccount(r) => Ok(r),
            other => Err(unexpected("P_CreateAccount", other)),
        }
    }

    /// `P_VerifyAccount`: logs in and returns the account's characters. On success the
    /// credentials are kept for the later menu calls.
    #[doc(alias = "P_VerifyAccount")]
    pub async fn login(
        &mut self,
        user: &str,
        password: &str,
    ) -> Result<Vec<CharacterSummary>, LoginError> {
        let creds = Creds::from_password(user, password);
        self.send(&ClientPacket::VerifyAccount(VerifyAccount {
            creds: creds.clone(),
        }))
        .await?;
        match self
            .await_reply(ids::P_VERIFY_ACCOUNT, self.deadline())
            .await?
        {
            ServerPacket::VerifyAccount(r) => match r {
                VerifyAccountReply::Ok { characters } => {
                    self.creds = Some(creds);
                    Ok(characters)
                }
                VerifyAccountReply::BadPassword => Err(LoginError::BadPassword),
                VerifyAccountReply::NoAccount => Err(LoginError::NoAccount),
                VerifyAccountReply::Banned => Err(LoginError::Banned),
                VerifyAccountReply::LoggedOn => Err(LoginError::AlreadyLoggedIn),
            },
            other => Err(unexpected("P_VerifyAccount", other)),
        }
    }

    /// `P_FetchActors`: the catalogue, collected until both the last item block (`"IY"`)
    /// and the last actor block (`"Y"`) came; their totals are checked.
    ///
    /// Also tells the connection the templates' `Genders` (for decoding `P_NewActor`) and
    /// the `Assignment` (for [`create_character`](Self::create_character)).
    #[doc(alias = "P_FetchActors")]
    pub async fn fetch_catalogue(&mut self) -> Result<Catalogue, LoginError> {
        self.send(&ClientPacket::FetchActors(FetchActors {}))
            .await?;
        let deadline = self.deadline();
        let mut cat = Catalogue::default();
        let mut assignment = None;
        let (mut items_total, mut actors_total) = (None, None);
        while items_total.is_none() || actors_total.is_none() {
            let block = match self.await_reply(ids::P_FETCH_ACTORS, deadline).await? {
                ServerPacket::FetchActors(b) => b,
                other => return Err(unexpected("P_FetchActors", other)),
            };
            match block {
                FetchActorsReply::Attributes {
                    assignment: a,
                    attributes,
                } => {
                    assignment = Some(a);
                    cat.attributes = attributes;
                }
                FetchActorsReply::DamageTypes { names } => cat.damage_types = names,
                FetchActorsReply::Environment {
                    year,
                    day,
                    hour,
                    minute,
                    time_factor,
                    seasons,
                    months,
                } => {
                    cat.environment = Some(Environment {
                        year,
                        day,
                        hour,
                        minute,
                        time_factor,
                        seasons,
                        months,
                    });
                }
                FetchActorsReply::Items { items } => cat.items.extend(items),
                FetchActorsReply::ItemsDone { total } => items_total = Some(total),
                FetchActorsReply::Factions { factions } => cat.factions.extend(factions),
                FetchActorsReply::Actors { actors } => cat.actors.extend(actors),
                FetchActorsReply::ActorsDone { total } => actors_total = Some(total),
            }
        }
        check_count("items", items_total, cat.items.len())?;
        check_count("actor templates", actors_total, cat.actors.len())?;
        if let Some(a) = assignment {
            cat.assignment = a;
            self.assignment = Some(a);
        }
        self.set_actor_templates(&cat.actors);
        self.items.set_item_templates(&cat.items);
        if let Some(e) = &cat.environment {
            self.set_clock_from_block(e);
        }
        Ok(cat)
    }

    /// `P_CreateCharacter`. The reply carries no list: call [`login`](Self::login) again
    /// for the new list (the new character is last).
    #[doc(alias = "P_CreateCharacter")]
    pub async fn create_character(&mut self, c: &NewCharacter) -> Result<(), LoginError> {
        let creds = self.require_creds()?;
        let points = match self.assignment {
            Some(0) => Vec::new(),
            _ => {
                let mut p = c.points.clone();
                p.resize(CREATION_POINTS, 0);
                p
            }
        };
        let p = CreateCharacter {
            creds,
            actor_id: c.actor_id,
            gender: c.gender,
            face: c.face,
            hair: c.hair,
            beard: c.beard,
            body: c.body,
            points,
            character_name: RcString::from(c.name.as_str()),
        };
        self.send(&ClientPacket::CreateCharacter(p)).await?;
        match self
            .await_reply(ids::P_CREATE_CHARACTER, self.deadline())
            .await?
        {
            ServerPacket::CreateCharacter(r) => match r {
                CreateCharacterReply::Created => Ok(()),
                CreateCharacterReply::Refused => Err(LoginError::Refused("P_CreateCharacter")),
                CreateCharacterReply::InvalidName => Err(LoginError::InvalidName),
            },
            other => Err(unexpected("P_CreateCharacter", other)),
        }
    }

    /// `P_FetchCharacter`: the `"C1"`, `"C3"`, `"S"` and `"Q"` blocks of character `index`
    /// up to the `"F"` end marker, whose counts are checked.
    #[doc(alias = "P_FetchCharacter")]
    pub async fn fetch_character(&mut self, index: u8) -> Result<CharacterSheet, LoginError> {
        let creds = self.require_creds()?;
        self.send(&ClientPacket::FetchCharacter(FetchCharacter {
            creds,
            index,
        }))
        .await?;
        let deadline = self.deadline();
        let mut stats = None;
        let mut inventory = Vec::new();
        let mut spells = Vec::new();
        let mut quests = Vec::new();
        loop {
            let block = match self.await_reply(ids::P_FETCH_CHARACTER, deadline).await? {
                ServerPacket::FetchCharacter(b) => b,
                other => return Err(unexpected("P_FetchCharacter", other)),
            };
            match block {
                FetchCharacterReply::Stats {
                    gold,
                    reputation,
                    level,
                    xp,
                    home_faction,
                    attributes,
                } => stats = Some((gold, reputation, level, xp, home_faction, attributes)),
                FetchCharacterReply::Inventory { slots } => inventory.extend(slots),
                FetchCharacterReply::Spells { spells: s } => spells.extend(s),
                FetchCharacterReply::Quests { quests: q } => quests.extend(q),
                FetchCharacterReply::Finished {
                    quests: nq,
                    spells: ns,
                } => {
                    check_count("quests", Some(nq), quests.len())?;
                    check_count("spells", Some(ns), spells.len())?;
                    break;
                }
                FetchCharacterReply::Failed => {
                    return Err(LoginError::Refused("P_FetchCharacter"));
                }
            }
        }
        let (gold, reputation, level, xp, home_faction, attributes) =
            stats.ok_or(LoginError::Missing("the \"C1\" block"))?;
        let sheet = CharacterSheet {
            gold,
            reputation,
            level,
            xp,
            home_faction,
            attributes,
            inventory,
            spells,
            quests,
        };
        self.items.load_sheet(&sheet);
        self.spells.load(&sheet.spells);
        self.ui.load_quests(&sheet.quests);
        Ok(sheet)
    }

    /// `P_DeleteCharacter`: deletes character `index` and returns the remaining list.
    #[doc(alias = "P_DeleteCharacter")]
    pub async fn delete_character(
        &mut self,
        index: u8,
    ) -> Result<Vec<CharacterSummary>, LoginError> {
        let creds = self.require_creds()?;
        self.send(&ClientPacket::DeleteCharacter(DeleteCharacter {
            creds,
            index,
        }))
        .await?;
        match self
            .await_reply(ids::P_DELETE_CHARACTER, self.deadline())
            .await?
        {
            ServerPacket::DeleteCharacter(DeleteCharacterReply::List { characters }) => {
                Ok(characters)
            }
            ServerPacket::DeleteCharacter(DeleteCharacterReply::Refused) => {
                Err(LoginError::Refused("P_DeleteCharacter"))
            }
            other => Err(unexpected("P_DeleteCharacter", other)),
        }
    }

    /// `P_StartGame`: enters the world with character `index` and waits, as Realm
    /// Crafter's client does, for the 13 `P_StartGame` messages (12 action-bar parts and
    /// the RuntimeID, in any order). `"N"` fails with [`LoginError::Refused`].
    ///
    /// Returns the RuntimeID, the `P_ChangeArea` that came before, the action bar and every
    /// packet received meanwhile. Later packets stay for [`recv`](Self::recv).
    #[doc(alias = "P_StartGame")]
    pub async fn start_game(&mut self, index: u8) -> Result<GameStart, LoginError> {
        let creds = self.require_creds()?;
        self.send(&ClientPacket::StartGame(StartGame { creds, index }))
            .await?;
        let deadline = self.deadline();
        let mut parts = 0usize;
        let mut runtime_id = None;
        let mut area = None;
        let mut action_bar = vec![ActionSlot::Empty; ACTION_BAR_SLOTS];
        let mut packets = Vec::new();
        while parts < START_GAME_PARTS {
            let p = self.next_until(deadline).await?;
            match &p.packet {
                ServerPacket::StartGame(StartGameReply::Failed) => {
                    return Err(LoginError::Refused("P_StartGame"));
                }
                ServerPacket::StartGame(StartGameReply::RuntimeId { runtime_id: rid }) => {
                    parts += 1;
                    runtime_id = Some(*rid);
                }
                ServerPacket::StartGame(StartGameReply::ActionBar { first_slot, slots }) => {
                    parts += 1;
                    for (i, s) in slots.iter().enumerate() {
                        if let Some(d) = action_bar.get_mut(usize::from(*first_slot) + i) {
                            *d = s.clone();
                        }
                    }
                }
                ServerPacket::ChangeArea(c) => area = Some(c.clone()),
                _ => {}
            }
            packets.push(p);
        }
        // Ground items, offers and gold that came with the arrival update the view.
        for p in &packets {
            let _ = self.items.event(p.packet.clone());
        }
        Ok(GameStart {
            runtime_id: runtime_id.ok_or(LoginError::Missing(
                "the P_StartGame carrying the RuntimeID",
            ))?,
            area: area.ok_or(LoginError::Missing("P_ChangeArea"))?,
            action_bar,
            packets,
        })
    }
}

fn check_count(
    what: &'static str,
    announced: Option<u16>,
    received: usize,
) -> Result<(), LoginError> {
    match announced {
        Some(n) if usize::from(n) != received => Err(LoginError::CountMismatch {
            what,
            announced: n,
            received,
        }),
        _ => Ok(()),
    }
}
