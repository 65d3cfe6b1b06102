//! Typed Realm Crafter packets: [`ClientPacket`] (C→S) and [`ServerPacket`] (S→C).
//!
//! Each packet type lives in the file of its family and implements [`Packet`]: its
//! Realm Crafter id and name, and a decoder/encoder for its payload (the bytes after the
//! type byte). The two enums dispatch on the id; any id they do not know decodes to
//! `Raw { id, bytes }`, which encodes back to the same bytes.
//!
//! # Strictness
//! A packet with a fixed layout must be exactly that long ([`DecodeErrorKind::TrailingBytes`]);
//! a packet whose last field runs to the end (`rest`) or that repeats a record until the
//! end takes the whole payload. Decoders keep every value as sent (no clamping); the
//! simulation clamps floats with [`crate::wire::clamp_world_coord`] where input enters.
//!
//! # JSON
//! The enums are internally tagged by `"name"` (the Realm Crafter name, `"P_StatUpdate"`);
//! packets with sub-codes carry an inner tag `"sub"` (`"A"`, `"C1"`, ...). Strings are
//! Latin-1 text, opaque bytes are hex, and `f32` fields use [`crate::wire::json_f32`] so
//! NaN and infinities survive. [`ServerPacket::to_json`] / [`ClientPacket::to_json`] add
//! the numeric `"id"`; deserialising ignores `"id"` except on `Raw`, and
//! [`ServerPacket::from_json`] / [`ClientPacket::from_json`] check it. The keys `name`,
//! `id` and `sub` are reserved, so no packet has a top-level field of those names (a
//! character's or actor's name is `character_name`, `actor_name`, ...). Example:
//!
//! ```json
//! {"name":"P_StatUpdate","id":22,"sub":"A","runtime_id":7,"attribute":0,"value":85}
//! ```
//!
//! # Hot path
//! `P_StandardUpdate` has dedicated fixed-offset functions in [`update`]:
//! [`StandardUpdateC2S::decode_fast`] and [`StandardUpdateS2C::body`] /
//! [`StandardUpdateS2C::write_frame`].

/// Declares an empty-payload packet type (defined before the modules so any of them can
/// use it).
macro_rules! empty_packet {
    ($(#[$meta:meta])* $ty:ident, $id:expr, $name:literal) => {
        $(#[$meta])*
        #[doc = ""]
        #[doc = "Payload: empty."]
        #[derive(
            Debug, Clone, Copy, Default, PartialEq, Eq, ::serde::Serialize, ::serde::Deserialize,
        )]
        pub struct $ty {}

        impl $crate::proto::Packet for $ty {
            const ID: u8 = $id;
            const NAME: &'static str = $name;
            fn decode_payload(
                payload: &[u8],
                _ctx: &$crate::proto::DecodeCtx<'_>,
            ) -> Result<Self, $crate::wire::DecodeError> {
                $crate::proto::decode_empty(payload).map(|()| Self {})
            }
            fn encode_payload(&self, _out: &mut Vec<u8>) {}
        }
    };
}

#[macro_use]
pub mod account;
pub mod actor;
pub mod catalogue;
pub mod character;
pub mod chat;
pub mod combat;
pub mod dialog;
pub mod effect;
pub mod items;
pub mod quest;
pub mod spell;
pub mod start;
pub mod trade;
pub mod ui;
pub mod update;

use serde::{Deserialize, Serialize};

pub use account::*;
pub use actor::*;
pub use catalogue::*;
pub use character::*;
pub use chat::*;
pub use combat::*;
pub use dialog::*;
pub use effect::*;
pub use items::*;
pub use quest::*;
pub use spell::*;
pub use start::*;
pub use trade::*;
pub use ui::*;
pub use update::*;

use crate::wire::{DecodeError, DecodeErrorKind, HexBytes, Reader};

/// Knowledge the decoder needs for the few context-dependent layouts.
///
/// * `P_NewActor` carries a gender byte only when the template's `Genders == 0`. The
///   payload length already tells the two forms apart (they differ by exactly one byte and
///   every other length is explicit), so without a context the decoder takes the form that
///   parses exactly; with `template_has_gender` it insists on the form the template implies.
/// * `P_CreateCharacter` carries 40 attribute-point bytes only when the project's
///   attribute `Assignment > 0`; the name runs to the end, so this cannot be guessed:
///   `create_character_points` says (default `true`, as in the sample project).
#[derive(Clone, Copy)]
pub struct DecodeCtx<'a> {
    /// Whether a template id's actors carry the `P_NewActor` gender byte (`Genders == 0`).
    pub template_has_gender: Option<&'a dyn Fn(u16) -> bool>,
    /// Whether `P_CreateCharacter` carries the 40 attribute-point bytes.
    pub create_character_points: bool,
}

impl Default for DecodeCtx<'_> {
    fn default() -> Self {
        Self {
            template_has_gender: None,
            create_character_points: true,
        }
    }
}

impl std::fmt::Debug for DecodeCtx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecodeCtx")
            .field("template_has_gender", &self.template_has_gender.is_some())
            .field("create_character_points", &self.create_character_points)
            .finish()
    }
}

/// One packet type: its id, its Realm Crafter name and its payload codec.
pub trait Packet: Sized {
    /// The `P_*` type byte.
    const ID: u8;
    /// The Realm Crafter name, e.g. `"P_StandardUpdate"`.
    const NAME: &'static str;
    /// Decodes a payload (the bytes after the type byte).
    fn decode_payload(payload: &[u8], ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError>;
    /// Appends the payload (without the type byte) to `out`.
    fn encode_payload(&self, out: &mut Vec<u8>);
}

/// Realm Crafter packet ids (`Packets.bb`).
pub mod ids {
    /// `NewClient`: the empty packet a client sends right after connecting.
    pub const NEW_CLIENT: u8 = 0;
    /// `P_CreateAccount`.
    pub const P_CREATE_ACCOUNT: u8 = 1;
    /// `P_VerifyAccount`.
    pub const P_VERIFY_ACCOUNT: u8 = 2;
    /// `P_FetchCharacter`.
    pub const P_FETCH_CHARACTER: u8 = 3;
    /// `P_CreateCharacter`.
    pub const P_CREATE_CHARACTER: u8 = 4;
    /// `P_DeleteCharacter`.
    pub const P_DELETE_CHARACTER: u8 = 5;
    /// `P_ChangePassword`.
    pub const P_CHANGE_PASSWORD: u8 = 6;
    /// `P_FetchActors`.
    pub const P_FETCH_ACTORS: u8 = 7;
    /// `P_FetchItems` (unused in Realm Crafter).
    pub const P_FETCH_ITEMS: u8 = 8;
    /// `P_ChangeArea`.
    pub const P_CHANGE_AREA: u8 = 9;
    /// `P_FetchUpdateFiles`.
    pub const P_FETCH_UPDATE_FILES: u8 = 10;
    /// `P_NewActor`.
    pub const P_NEW_ACTOR: u8 = 11;
    /// `P_StartGame`.
    pub const P_START_GAME: u8 = 12;
    /// `P_ActorGone`.
    pub const P_ACTOR_GONE: u8 = 13;
    /// `P_StandardUpdate`.
    pub const P_STANDARD_UPDATE: u8 = 14;
    /// `P_ChatMessage`.
    pub const P_CHAT_MESSAGE: u8 = 16;
    /// `P_WeatherChange`.
    pub const P_WEATHER_CHANGE: u8 = 17;
    /// `P_AttackActor`.
    pub const P_ATTACK_ACTOR: u8 = 18;
    /// `P_ActorDead`.
    pub const P_ACTOR_DEAD: u8 = 19;
    /// `P_RightClick`.
    pub const P_RIGHT_CLICK: u8 = 20;
    /// `P_Dialog`.
    pub const P_DIALOG: u8 = 21;
    /// `P_StatUpdate`.
    pub const P_STAT_UPDATE: u8 = 22;
    /// `P_QuestLog`.
    pub const P_QUEST_LOG: u8 = 23;
    /// `P_GoldChange`.
    pub const P_GOLD_CHANGE: u8 = 24;
    /// `P_NameChange`.
    pub const P_NAME_CHANGE: u8 = 25;
    /// `P_KnownSpellUpdate`.
    pub const P_KNOWN_SPELL_UPDATE: u8 = 26;
    /// `P_SpellUpdate`.
    pub const P_SPELL_UPDATE: u8 = 27;
    /// `P_CreateEmitter`.
    pub const P_CREATE_EMITTER: u8 = 28;
    /// `P_Sound`.
    pub const P_SOUND: u8 = 29;
    /// `P_AnimateActor`.
    pub const P_ANIMATE_ACTOR: u8 = 30;
    /// `P_XPUpdate`.
    pub const P_XP_UPDATE: u8 = 32;
    /// `P_ScreenFlash`.
    pub const P_SCREEN_FLASH: u8 = 33;
    /// `P_Music`.
    pub const P_MUSIC: u8 = 34;
    /// `P_Projectile`.
    pub const P_PROJECTILE: u8 = 37;
    /// `P_ActorEffect`.
    pub const P_ACTOR_EFFECT: u8 = 36;
    /// `P_PartyUpdate`.
    pub const P_PARTY_UPDATE: u8 = 38;
    /// `P_AppearanceUpdate`.
    pub const P_APPEARANCE_UPDATE: u8 = 39;
    /// `P_Jump`.
    pub const P_JUMP: u8 = 46;
    /// `P_Dismount`.
    pub const P_DISMOUNT: u8 = 47;
    /// `P_FloatingNumber`.
    pub const P_FLOATING_NUMBER: u8 = 48;
    /// `P_RepositionActor`.
    pub const P_REPOSITION_ACTOR: u8 = 49;
    /// `P_Speech`.
    pub const P_SPEECH: u8 = 50;
    /// `P_ProgressBar`.
    pub const P_PROGRESS_BAR: u8 = 51;
    /// `P_BubbleMessage`.
    pub const P_BUBBLE_MESSAGE: u8 = 52;
    /// `P_ScriptInput`.
    pub const P_SCRIPT_INPUT: u8 = 53;
    /// `P_KickedPlayer`.
    pub const P_KICKED_PLAYER: u8 = 60;
    /// `P_InventoryUpdate`.
    pub const P_INVENTORY_UPDATE: u8 = 15;
    /// `P_ActionBarUpdate`.
    pub const P_ACTION_BAR_UPDATE: u8 = 31;
    /// `P_OpenTrading`.
    pub const P_OPEN_TRADING: u8 = 35;
    /// `P_CloseTrading`.
    pub const P_CLOSE_TRADING: u8 = 40;
    /// `P_UpdateTrading`.
    pub const P_UPDATE_TRADING: u8 = 41;
    /// `P_SelectScenery` (disabled in Realm Crafter).
    pub const P_SELECT_SCENERY: u8 = 42;
    /// `P_ItemScript`.
    pub const P_ITEM_SCRIPT: u8 = 43;
    /// `P_EatItem`.
    pub const P_EAT_ITEM: u8 = 44;
    /// `P_ItemHealth`.
    pub const P_ITEM_HEALTH: u8 = 45;
    /// `P_Examine`.
    pub const P_EXAMINE: u8 = 61;
    /// `P_Trade`.
    pub const P_TRADE: u8 = 62;
}

/// The Realm Crafter name of a packet id (`"P_StandardUpdate"` for 14), for every id in
/// `Packets.bb`, or `None`.
pub fn packet_name(id: u8) -> Option<&'static str> {
    Some(match id {
        0 => "NewClient",
        1 => "P_CreateAccount",
        2 => "P_VerifyAccount",
        3 => "P_FetchCharacter",
        4 => "P_CreateCharacter",
        5 => "P_DeleteCharacter",
        6 => "P_ChangePassword",
        7 => "P_FetchActors",
        8 => "P_FetchItems",
        9 => "P_ChangeArea",
        10 => "P_FetchUpdateFiles",
        11 => "P_NewActor",
        12 => "P_StartGame",
        13 => "P_ActorGone",
        14 => "P_StandardUpdate",
        15 => "P_InventoryUpdate",
        16 => "P_ChatMessage",
        17 => "P_WeatherChange",
        18 => "P_AttackActor",
        19 => "P_ActorDead",
        20 => "P_RightClick",
        21 => "P_Dialog",
        22 => "P_StatUpdate",
        23 => "P_QuestLog",
        24 => "P_GoldChange",
        25 => "P_NameChange",
        26 => "P_KnownSpellUpdate",
        27 => "P_SpellUpdate",
        28 => "P_CreateEmitter",
        29 => "P_Sound",
        30 => "P_AnimateActor",
        31 => "P_ActionBarUpdate",
        32 => "P_XPUpdate",
        33 => "P_ScreenFlash",
        34 => "P_Music",
        35 => "P_OpenTrading",
        36 => "P_ActorEffect",
        37 => "P_Projectile",
        38 => "P_PartyUpdate",
        39 => "P_AppearanceUpdate",
        40 => "P_CloseTrading",
        41 => "P_UpdateTrading",
        42 => "P_SelectScenery",
        43 => "P_ItemScript",
        44 => "P_EatItem",
        45 => "P_ItemHealth",
        46 => "P_Jump",
        47 => "P_Dismount",
        48 => "P_FloatingNumber",
        49 => "P_RepositionActor",
        50 => "P_Speech",
        51 => "P_ProgressBar",
        52 => "P_BubbleMessage",
        53 => "P_ScriptInput",
        60 => "P_KickedPlayer",
        61 => "P_Examine",
        62 => "P_Trade",
        200 => "PlayerTimedOut",
        201 => "PlayerHasLeft",
        202 => "PlayerKicked",
        _ => return None,
    })
}

/// Errors from the JSON helpers.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JsonError {
    /// The JSON is not a packet.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// The `"id"` does not match the `"name"`.
    #[error("\"id\" {id} does not match \"name\" {name}")]
    IdMismatch {
        /// The id in the JSON.
        id: u64,
        /// The name in the JSON.
        name: String,
    },
}

fn json_with_id(mut v: serde_json::Value, id: u8) -> serde_json::Value {
    if let serde_json::Value::Object(m) = &mut v {
        m.insert("id".to_owned(), serde_json::Value::from(id));
    }
    v
}

fn check_json_id(v: &serde_json::Value, id: u8) -> Result<(), JsonError> {
    match v.get("id").and_then(serde_json::Value::as_u64) {
        Some(j) if j != u64::from(id) => Err(JsonError::IdMismatch {
            id: j,
            name: v
                .get("name")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("")
                .to_owned(),
        }),
        _ => Ok(()),
    }
}

macro_rules! packet_enum {
    (
        $(#[$meta:meta])*
        $enum:ident { $( $(#[$vmeta:meta])* $variant:ident($ty:ty) = $name:literal ),* $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "name")]
        pub enum $enum {
            $(
                $(#[$vmeta])*
                #[serde(rename = $name)]
                $variant($ty),
            )*
            /// A packet id this enum does not model, kept byte for byte.
            Raw {
                /// The type byte.
                id: u8,
                /// The payload.
                bytes: HexBytes,
            },
        }

        $(
            impl From<$ty> for $enum {
                fn from(p: $ty) -> Self {
                    Self::$variant(p)
                }
            }
        )*

        impl $enum {
            /// Decodes a payload (the bytes after the type byte `id`) with the default
            /// [`DecodeCtx`]. Unknown ids become `Raw`.
            pub fn decode(id: u8, payload: &[u8]) -> Result<Self, DecodeError> {
                Self::decode_with(id, payload, &DecodeCtx::default())
            }

            /// Decodes with an explicit [`DecodeCtx`].
            pub fn decode_with(
                id: u8,
                payload: &[u8],
                ctx: &DecodeCtx<'_>,
            ) -> Result<Self, DecodeError> {
                match id {
                    $( <$ty as Packet>::ID => {
                        <$ty as Packet>::decode_payload(payload, ctx).map(Self::$variant)
                    } )*
                    _ => Ok(Self::Raw { id, bytes: HexBytes(payload.to_vec()) }),
                }
            }

            /// Decodes a whole packet: type byte, then payload. Error offsets count the
            /// type byte (they are one more than [`Self::decode`]'s).
            pub fn decode_packet(packet: &[u8]) -> Result<Self, DecodeError> {
                let mut r = Reader::new(packet);
                let id = r.u8()?;
                Self::decode(id, r.rest()).map_err(|mut e| {
                    e.offset += 1;
                    e
                })
            }

            /// Appends the type byte and the payload to `out`.
            pub fn encode(&self, out: &mut Vec<u8>) {
                out.push(self.id());
                self.encode_payload(out);
            }

            /// Appends the payload only (no type byte) to `out`.
            pub fn encode_payload(&self, out: &mut Vec<u8>) {
                match self {
                    $( Self::$variant(p) => p.encode_payload(out), )*
                    Self::Raw { bytes, .. } => out.extend_from_slice(&bytes.0),
                }
            }

            /// Appends the packet as one QUIC frame `[len u16][type][payload]`
            /// (transport.md). Fails only if the payload is over 65534 bytes.
            pub fn encode_frame(
                &self,
                out: &mut Vec<u8>,
            ) -> Result<(), crate::frame::FrameError> {
                crate::frame::write_packet_frame(out, |o| self.encode(o))
            }

            /// The whole packet (type byte and payload) in a new buffer.
            pub fn to_bytes(&self) -> Vec<u8> {
                let mut v = Vec::new();
                self.encode(&mut v);
                v
            }

            /// The type byte.
            pub fn id(&self) -> u8 {
                match self {
                    $( Self::$variant(_) => <$ty as Packet>::ID, )*
                    Self::Raw { id, .. } => *id,
                }
            }

            /// The Realm Crafter name (`"P_StandardUpdate"`); for `Raw`, the name of its id
            /// if Realm Crafter has one, else `"Raw"`.
            pub fn name(&self) -> &'static str {
                match self {
                    $( Self::$variant(_) => <$ty as Packet>::NAME, )*
                    Self::Raw { id, .. } => packet_name(*id).unwrap_or("Raw"),
                }
            }

            /// The packet as a JSON object with `"name"`, `"id"` and every field.
            pub fn to_json(&self) -> serde_json::Value {
                // Through text, so `f32` fields keep their short form (`-52.7`, not the
                // widened `f64` digits).
                let v = serde_json::to_string(self)
                    .ok()
                    .and_then(|s| serde_json::from_str(&s).ok())
                    .unwrap_or(serde_json::Value::Null);
                json_with_id(v, self.id())
            }

            /// Reads a packet back from [`Self::to_json`]'s shape, checking `"id"` if present.
            pub fn from_json(v: &serde_json::Value) -> Result<Self, JsonError> {
                let p = Self::deserialize(v)?;
                check_json_id(v, p.id())?;
                Ok(p)
            }
        }
    };
}

packet_enum! {
    /// Every packet a client sends (C→S).
    #[doc(alias = "ServerNet")]
    ClientPacket {
        /// `NewClient` (0, empty).
        NewClient(NewClient) = "NewClient",
        /// `P_CreateAccount` (1).
        CreateAccount(CreateAccount) = "P_CreateAccount",
        /// `P_VerifyAccount` (2).
        VerifyAccount(VerifyAccount) = "P_VerifyAccount",
        /// `P_FetchCharacter` (3).
        FetchCharacter(FetchCharacter) = "P_FetchCharacter",
        /// `P_CreateCharacter` (4).
        CreateCharacter(CreateCharacter) = "P_CreateCharacter",
        /// `P_DeleteCharacter` (5).
        DeleteCharacter(DeleteCharacter) = "P_DeleteCharacter",
        /// `P_ChangePassword` (6).
        ChangePassword(ChangePassword) = "P_ChangePassword",
        /// `P_FetchActors` (7, empty).
        FetchActors(FetchActors) = "P_FetchActors",
        /// `P_FetchItems` (8, empty): unused in Realm Crafter; the server ignores it.
        FetchItems(FetchItems) = "P_FetchItems",
        /// `P_ChangeArea` acknowledgement (9).
        ChangeArea(ChangeAreaAck) = "P_ChangeArea",
        /// `P_FetchUpdateFiles` (10, empty): asks for the update file list.
        FetchUpdateFiles(FetchUpdateFiles) = "P_FetchUpdateFiles",
        /// `P_StartGame` (12).
        StartGame(StartGame) = "P_StartGame",
        /// `P_StandardUpdate` (14).
        StandardUpdate(StandardUpdateC2S) = "P_StandardUpdate",
        /// `P_InventoryUpdate` (15).
        InventoryUpdate(InventoryUpdateC2S) = "P_InventoryUpdate",
        /// `P_ChatMessage` (16).
        ChatMessage(ChatMessageC2S) = "P_ChatMessage",
        /// `P_AttackActor` (18).
        AttackActor(AttackActorC2S) = "P_AttackActor",
        /// `P_RightClick` (20).
        RightClick(RightClick) = "P_RightClick",
        /// `P_Dialog` (21): the client's answers to a script dialog.
        Dialog(DialogC2S) = "P_Dialog",
        /// `P_SpellUpdate` (27): memorise, un-memorise or cast an ability.
        SpellUpdate(SpellUpdate) = "P_SpellUpdate",
        /// `P_ActionBarUpdate` (31).
        ActionBarUpdate(ActionBarUpdate) = "P_ActionBarUpdate",
        /// `P_OpenTrading` (35): cancel or confirm a trade or a purchase.
        OpenTrading(OpenTradingC2S) = "P_OpenTrading",
        /// `P_UpdateTrading` (41).
        UpdateTrading(UpdateTradingC2S) = "P_UpdateTrading",
        /// `P_SelectScenery` (42): disabled in Realm Crafter; the server ignores it.
        SelectScenery(SelectScenery) = "P_SelectScenery",
        /// `P_ItemScript` (43).
        ItemScript(ItemScript) = "P_ItemScript",
        /// `P_EatItem` (44).
        EatItem(EatItem) = "P_EatItem",
        /// `P_Jump` (46, empty).
        Jump(JumpC2S) = "P_Jump",
        /// `P_Dismount` (47, empty).
        Dismount(Dismount) = "P_Dismount",
        /// `P_RepositionActor` acknowledgement (49).
        RepositionActor(RepositionAck) = "P_RepositionActor",
        /// `P_ProgressBar` (51): the client created a script's progress bar.
        ProgressBar(ProgressBarC2S) = "P_ProgressBar",
        /// `P_ScriptInput` (53): the player's answer to a script's text input.
        ScriptInput(ScriptInputC2S) = "P_ScriptInput",
        /// `P_Examine` (61).
        Examine(Examine) = "P_Examine",
        /// `P_Trade` (62).
        Trade(Trade) = "P_Trade",
    }
}

packet_enum! {
    /// Every packet the server sends (S→C).
    #[doc(alias = "ClientNet")]
    ServerPacket {
        /// `P_CreateAccount` reply (1).
        CreateAccount(CreateAccountReply) = "P_CreateAccount",
        /// `P_VerifyAccount` reply (2).
        VerifyAccount(VerifyAccountReply) = "P_VerifyAccount",
        /// `P_FetchCharacter` reply block (3).
        FetchCharacter(FetchCharacterReply) = "P_FetchCharacter",
        /// `P_CreateCharacter` reply (4).
        CreateCharacter(CreateCharacterReply) = "P_CreateCharacter",
        /// `P_DeleteCharacter` reply (5).
        DeleteCharacter(DeleteCharacterReply) = "P_DeleteCharacter",
        /// `P_ChangePassword` reply (6).
        ChangePassword(ChangePasswordReply) = "P_ChangePassword",
        /// `P_FetchActors` catalogue block (7).
        FetchActors(FetchActorsReply) = "P_FetchActors",
        /// `P_ChangeArea` (9).
        ChangeArea(ChangeArea) = "P_ChangeArea",
        /// `P_FetchUpdateFiles` reply (10): one chunk of the update file list.
        FetchUpdateFiles(UpdateFiles) = "P_FetchUpdateFiles",
        /// `P_NewActor` (11).
        NewActor(NewActor) = "P_NewActor",
        /// `P_StartGame` reply part (12).
        StartGame(StartGameReply) = "P_StartGame",
        /// `P_ActorGone` (13).
        ActorGone(ActorGone) = "P_ActorGone",
        /// `P_StandardUpdate` (14).
        StandardUpdate(StandardUpdateS2C) = "P_StandardUpdate",
        /// `P_InventoryUpdate` (15).
        InventoryUpdate(InventoryUpdateS2C) = "P_InventoryUpdate",
        /// `P_ChatMessage` (16).
        ChatMessage(ChatMessageS2C) = "P_ChatMessage",
        /// `P_WeatherChange` (17).
        WeatherChange(WeatherChange) = "P_WeatherChange",
        /// `P_AttackActor` (18).
        AttackActor(AttackActorS2C) = "P_AttackActor",
        /// `P_ActorDead` (19).
        ActorDead(ActorDead) = "P_ActorDead",
        /// `P_Dialog` (21): a script dialog.
        Dialog(DialogS2C) = "P_Dialog",
        /// `P_StatUpdate` (22).
        StatUpdate(StatUpdate) = "P_StatUpdate",
        /// `P_QuestLog` (23): the owner's quest log.
        QuestLog(QuestLog) = "P_QuestLog",
        /// `P_GoldChange` (24).
        GoldChange(GoldChange) = "P_GoldChange",
        /// `P_NameChange` (25).
        NameChange(NameChange) = "P_NameChange",
        /// `P_KnownSpellUpdate` (26).
        KnownSpellUpdate(KnownSpellUpdate) = "P_KnownSpellUpdate",
        /// `P_CreateEmitter` (28).
        CreateEmitter(CreateEmitter) = "P_CreateEmitter",
        /// `P_Sound` (29).
        Sound(Sound) = "P_Sound",
        /// `P_AnimateActor` (30).
        AnimateActor(AnimateActor) = "P_AnimateActor",
        /// `P_XPUpdate` (32).
        XpUpdate(XpUpdate) = "P_XPUpdate",
        /// `P_ScreenFlash` (33).
        ScreenFlash(ScreenFlash) = "P_ScreenFlash",
        /// `P_Music` (34).
        Music(Music) = "P_Music",
        /// `P_OpenTrading` (35): one chunk of a trade or shop window.
        OpenTrading(OpenTradingS2C) = "P_OpenTrading",
        /// `P_ActorEffect` (36).
        ActorEffect(ActorEffect) = "P_ActorEffect",
        /// `P_Projectile` (37).
        Projectile(Projectile) = "P_Projectile",
        /// `P_PartyUpdate` (38).
        PartyUpdate(PartyUpdate) = "P_PartyUpdate",
        /// `P_AppearanceUpdate` (39).
        AppearanceUpdate(AppearanceUpdate) = "P_AppearanceUpdate",
        /// `P_CloseTrading` (40).
        CloseTrading(CloseTrading) = "P_CloseTrading",
        /// `P_UpdateTrading` (41).
        UpdateTrading(UpdateTradingS2C) = "P_UpdateTrading",
        /// `P_ItemHealth` (45).
        ItemHealth(ItemHealth) = "P_ItemHealth",
        /// `P_Jump` (46).
        Jump(JumpS2C) = "P_Jump",
        /// `P_FloatingNumber` (48).
        FloatingNumber(FloatingNumber) = "P_FloatingNumber",
        /// `P_RepositionActor` (49).
        RepositionActor(RepositionActor) = "P_RepositionActor",
        /// `P_Speech` (50).
        Speech(Speech) = "P_Speech",
        /// `P_ProgressBar` (51): create, update or delete a script's progress bar.
        ProgressBar(ProgressBarS2C) = "P_ProgressBar",
        /// `P_BubbleMessage` (52).
        BubbleMessage(BubbleMessage) = "P_BubbleMessage",
        /// `P_ScriptInput` (53): a script asks the player for text.
        ScriptInput(ScriptInputS2C) = "P_ScriptInput",
        /// `P_KickedPlayer` (60, empty).
        KickedPlayer(KickedPlayer) = "P_KickedPlayer",
    }
}

/// Decodes a payload that must be empty.
pub(crate) fn decode_empty(payload: &[u8]) -> Result<(), DecodeError> {
    Reader::new(payload).finish()
}

/// The error for an unknown sub-code read at `offset`.
pub(crate) fn bad_sub(offset: usize, code: u8) -> DecodeError {
    DecodeError::new(offset, DecodeErrorKind::BadSubCode(code))
}

empty_packet!(
    /// `NewClient`: sent once, reliable, right after connecting; the server ignores it.
    NewClient,
    ids::NEW_CLIENT,
    "NewClient"
);
empty_packet!(
    /// `P_FetchActors` request: asks for the catalogue blocks.
    #[doc(alias = "P_FetchActors")]
    FetchActors,
    ids::P_FETCH_ACTORS,
    "P_FetchActors"
);
empty_packet!(
    /// `P_Jump` C→S: the player jumped (not while mounted).
    #[doc(alias = "P_Jump")]
    JumpC2S,
    ids::P_JUMP,
    "P_Jump"
);
empty_packet!(
    /// `P_Dismount` C→S: get off the mount (`Mount.Dismount`).
    #[doc(alias = "P_Dismount")]
    Dismount,
    ids::P_DISMOUNT,
    "P_Dismount"
);
empty_packet!(
    /// `P_KickedPlayer` S→C: the player was kicked; the connection closes with code 1.
    #[doc(alias = "P_KickedPlayer")]
    KickedPlayer,
    ids::P_KICKED_PLAYER,
    "P_KickedPlayer"
);
empty_packet!(
    /// `P_CloseTrading` (40) S→C: the client hides its trade window.
    #[doc(alias = "P_CloseTrading")]
    CloseTrading,
    ids::P_CLOSE_TRADING,
    "P_CloseTrading"
);
