//! The persistent and cross-node shapes of an actor (`ActorState`, `Arrival`, the
//! transfer, the snapshot reason): the one definition the zone simulation uses (it
//! re-exports them in `zone_node::sim::events`), the internal link carries and the gateway
//! stores.

use serde::{Deserialize, Serialize};

/// One inventory slot's content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InvSlotDto {
    /// Item template id.
    pub item: u16,
    /// Per-instance attribute modifiers (40 entries, may be shorter when loaded).
    pub attributes: Vec<i32>,
    /// Item health 0..=100.
    pub health: u8,
    /// Stack size (>= 1).
    pub amount: u16,
}

/// A spell the actor knows, with its level and remaining recharge.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnownSpellDto {
    /// Spell id.
    pub id: u16,
    /// Ability level.
    pub level: u16,
    /// Remaining recharge in milliseconds (`SpellCharge`); `<= 0` means ready.
    pub charge_ms: i32,
}

/// The whole persistent state of one actor instance: what a save file stores, what a
/// transfer carries, what the gateway persists. A player carries its pets and its mount.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct ActorStateDto {
    /// Actor template id (`Actors.dat`).
    pub template: u16,
    /// Character name.
    pub name: String,
    /// Tag shown under the name.
    pub tag: String,
    /// Area name (`Area$`).
    pub area: String,
    /// Area instance number.
    pub instance: u16,
    /// Position.
    pub x: f32,
    /// Position.
    pub y: f32,
    /// Position.
    pub z: f32,
    /// Facing.
    pub yaw: f32,
    /// Gender byte.
    pub gender: u8,
    /// Appearance.
    pub face: u16,
    /// Appearance.
    pub hair: u16,
    /// Appearance.
    pub beard: u16,
    /// Appearance.
    pub body: u16,
    /// Level.
    pub level: u16,
    /// Experience.
    pub xp: u32,
    /// XP bar level.
    pub xp_bar: u8,
    /// Gold.
    pub gold: i32,
    /// Reputation (signed 16-bit on the wire).
    pub reputation: i32,
    /// Guild (`TeamID`).
    pub team: i32,
    /// Home faction 0..=99.
    pub home_faction: u8,
    /// Faction ratings, 100 bytes, 100 = neutral.
    pub ratings: Vec<u8>,
    /// Attribute values (40).
    pub attributes: Vec<i32>,
    /// Attribute maxima (40).
    pub attribute_max: Vec<i32>,
    /// Resistances (20), 100 = neutral.
    pub resistances: Vec<i32>,
    /// Inventory slots (46).
    pub inventory: Vec<Option<InvSlotDto>>,
    /// Known spells.
    pub known_spells: Vec<KnownSpellDto>,
    /// Memorised spell slots (10); 5000 = empty.
    pub memorised: Vec<u16>,
    /// `ScriptGlobals$[10]`.
    pub script_globals: Vec<String>,
    /// Quest log `(name, status)`.
    pub quests: Vec<(String, String)>,
    /// Action bar (36 slots).
    pub action_bar: Vec<String>,
    /// Right-click script.
    pub script: String,
    /// Death script.
    pub death_script: String,
    /// The RuntimeID the actor had. Players keep it across SetArea; NPCs (pets, mounts)
    /// get a fresh one in the destination instance.
    pub rid: u16,
    /// AI mode of a pet or mount (`AIMode`), so a waiting pet keeps waiting.
    pub ai_mode: u8,
    /// Pets (slaves), recursively.
    pub pets: Vec<ActorStateDto>,
    /// The mount this actor rides, if any.
    pub mount: Option<Box<ActorStateDto>>,
    /// A player character's script handle: a cluster-wide number the gateway gives the
    /// character once, so a script's `Actor()` names the same character on every node and
    /// after a re-login (0: not assigned yet).
    #[serde(default)]
    pub handle: u32,
    /// The account's user name (`PlayerAccountName`); set by the gateway when the
    /// character enters the game, carried with it.
    #[serde(default)]
    pub account: String,
    /// The account's e-mail (`PlayerAccountEmail`), likewise.
    #[serde(default)]
    pub email: String,
    /// The character's running scripts (the zone's `ScriptBundle`, rmp-serde bytes; empty:
    /// none). Opaque to the gateway: it stores and carries them.
    #[serde(default, with = "serde_bytes")]
    pub scripts: Vec<u8>,
    /// Active actor effects (buffs and debuffs) with their **remaining** time, frozen
    /// while the actor is not in a zone (reference §6). The attributes above already
    /// include their deltas.
    #[doc(alias = "ActorEffect")]
    #[serde(default)]
    pub effects: Vec<ActorEffectDto>,
    /// The client's own numbering of the known spells (it appends every spell it is told
    /// of and leaves a hole where one is forgotten; `P_SpellUpdate "M"/"U"` name spells by
    /// that index): spell ids by client index, [`SPELL_VIEW_HOLE`] for a hole. Session
    /// state carried across SetArea; rebuilt from `known_spells` at every login.
    #[serde(default)]
    pub spell_view: Vec<u16>,
    /// Memorisations in progress (`MemorisingSpell`), with their remaining time.
    #[doc(alias = "MemorisingSpell")]
    #[serde(default)]
    pub memorising: Vec<MemorisingDto>,
    /// The fencing token of this copy of the character: the gateway draws a new, larger one
    /// each time it hands the character out from the store (a login, a recovery after a
    /// node loss); handoffs carry it; the store refuses a save whose token is not the one
    /// it holds, so a copy left behind on a node the cluster gave up on (a smaller token),
    /// or one a deposed leader handed out without reaching the store (a larger one), can
    /// never overwrite the current copy's progress, even across a gateway restart (0:
    /// none yet).
    #[serde(default)]
    pub fence: u64,
    /// The scripts' actions from other zones this character has taken
    /// ([`ActionId`]; the latest of each script run, at most [`MAX_APPLIED_ACTIONS`]): a
    /// repeated delivery of one of them (after a handoff, a node loss) is recognised and
    /// not applied twice. Carried in handoffs and saves with the rest of the character.
    #[serde(default)]
    pub applied_actions: Vec<ActionId>,
}

/// How many script runs' latest [`ActionId`]s a character keeps
/// ([`ActorStateDto::applied_actions`]).
pub const MAX_APPLIED_ACTIONS: usize = 64;

/// One action of a script on a player another zone hosts (`GiveItem`, `GiveXP`,
/// `SetAttribute`, `Warp`, … of a remote handle, `docs/scripting.md`, "Across nodes"):
/// the script run that took it (an id minted once per run, saved with the run, so a run
/// resumed from a checkpoint names its actions the same again) and its count in that run.
/// A run waits for each action's answer before its next, so the counts of one run reach a
/// character in order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ActionId {
    /// The script run (cluster-unique).
    pub run: super::TransferId,
    /// The action's number in that run, from 1.
    pub seq: u32,
}

/// A hole in [`ActorStateDto::spell_view`] (a spell the client was told to forget).
pub const SPELL_VIEW_HOLE: u16 = u16::MAX;

/// One memorisation in progress (Realm Crafter's `MemorisingSpell`).
#[doc(alias = "MemorisingSpell")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct MemorisingDto {
    /// The spell id.
    pub spell: u16,
    /// Milliseconds until it is memorised.
    pub remaining_ms: u64,
}

/// One saved actor effect (Realm Crafter's `ActorEffect`, reference §6).
#[doc(alias = "ActorEffect")]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ActorEffectDto {
    /// Its handle, unique per owner (the client's `P_ActorEffect` key).
    pub handle: u32,
    /// Name, unique per owner (case-insensitive).
    pub name: String,
    /// Per-attribute deltas currently applied (40).
    pub deltas: Vec<i32>,
    /// Remaining milliseconds; 0 = permanent.
    pub remaining_ms: u64,
    /// Icon texture id.
    pub icon: u16,
}

/// Where an arriving actor is placed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ArrivalDto {
    /// At the position stored in the state.
    Saved,
    /// At an explicit position.
    Position {
        /// X.
        x: f32,
        /// Y.
        y: f32,
        /// Z.
        z: f32,
    },
    /// At a waypoint index (yaw 0).
    Waypoint(u16),
    /// At a portal by index (position and yaw of the portal).
    Portal(u16),
    /// At the portal with this name (case-insensitive); portal 0 when absent.
    PortalNamed(String),
}

/// One item lying on the ground of an AreaInstance (Realm Crafter's `DroppedItem`): what
/// a zone checkpoint saves and a restarted instance restores.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroundItemDto {
    /// The item and its stack size.
    pub item: InvSlotDto,
    /// Position.
    pub x: f32,
    /// Position.
    pub y: f32,
    /// Position.
    pub z: f32,
    /// Milliseconds it may still lie there before it expires (`docs/items.md`).
    pub remaining_ms: u64,
}

/// One AreaInstance as the operator's live map shows it ([`super::Msg::MapAnswer`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MapViewDto {
    /// Its actors (players and NPCs), in the zone's order.
    pub actors: Vec<MapActorDto>,
    /// Its ground items.
    pub items: Vec<MapItemDto>,
}

/// One actor on the live map.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MapActorDto {
    /// Its RuntimeID in the instance.
    #[doc(alias = "RuntimeID")]
    pub runtime_id: u16,
    /// Its script handle.
    pub handle: i32,
    /// Its name.
    pub name: String,
    /// A player (else an NPC).
    pub player: bool,
    /// Position.
    pub x: f32,
    /// Position.
    pub y: f32,
    /// Position.
    pub z: f32,
    /// Facing (degrees).
    pub yaw: f32,
    /// Level.
    pub level: u16,
    /// Health now.
    pub health: i32,
    /// Health at most.
    pub health_max: i32,
}

/// One ground item on the live map.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MapItemDto {
    /// The item's name.
    pub name: String,
    /// Stack size.
    pub amount: u16,
    /// Position.
    pub x: f32,
    /// Position.
    pub y: f32,
    /// Position.
    pub z: f32,
}

/// Why a snapshot is persisted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SnapshotReasonDto {
    /// The player left the game.
    Logout,
    /// The player left the instance.
    Transfer,
    /// Periodic save.
    Periodic,
    /// The node is draining or the instance is stopping.
    Shutdown,
}

/// A SetArea to another AreaInstance (the same shape node-local transfers use).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TransferDto {
    /// The transfer's id, as its source minted it (the same at every hop).
    pub transfer_id: super::TransferId,
    /// The generation of the destination the sender believes in (0 = unknown).
    pub generation: u64,
    /// The player's session, `None` for an NPC.
    pub session: Option<u64>,
    /// DM account.
    pub is_dm: bool,
    /// Destination area.
    pub area: String,
    /// Destination instance.
    pub instance: u16,
    /// Placement.
    pub arrival: ArrivalDto,
    /// The actor with its mount and pets.
    pub state: ActorStateDto,
}

/// A request from a zone's scripts to the cluster-wide script store (owned by the gateway):
/// script files, super globals and zone instances (`docs/scripting.md`, "Across nodes").
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ScriptStoreOp {
    /// Read a whole file (`ReadFile`, `OpenFile`, `AppendFile`).
    ReadFile {
        /// Sandboxed name (see `script_file_name`).
        name: String,
    },
    /// Replace a file's contents (`CloseFile` of a written file).
    WriteFile {
        /// Sandboxed name.
        name: String,
        /// The bytes.
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
    },
    /// `DeleteFile`.
    DeleteFile {
        /// Sandboxed name.
        name: String,
    },
    /// `FileType` and `FileSize`.
    FileInfo {
        /// Sandboxed name.
        name: String,
    },
    /// `CreateDir`.
    CreateDir {
        /// Sandboxed name.
        name: String,
    },
    /// `RefreshScripts`: reload the world's scripts on every node (answered `Done`, or
    /// `Error` with the diagnostics of a script set that does not compile, which changes
    /// nothing).
    RefreshScripts,
    /// `SetEnv`: a variable of the cluster's environment (Realm Crafter's process
    /// environment; every zone's `GetEnv` sees it; not saved). No answer: every node gets
    /// it in a `SharedVars`.
    SetEnv {
        /// Its name (at most [`super::MAX_ENV_NAME`] bytes).
        name: String,
        /// Its value (at most [`super::MAX_ENV_VALUE`] bytes; empty removes it).
        #[serde(with = "serde_bytes")]
        value: Vec<u8>,
    },
    /// `FindActor` (players) and `PartyMember` for a player not in the asking zone: the
    /// script handle of the character called `name` if it is in the game anywhere in the
    /// cluster, else 0 (answered `Int`).
    FindPlayer {
        /// The character's name (case-insensitive).
        name: String,
    },
    /// `Output` to a player handle that is not in the asking zone: the line goes to that
    /// player wherever it is (nothing if it is not in the game). No answer.
    Tell {
        /// The player's script handle.
        handle: u32,
        /// The text.
        #[serde(with = "serde_bytes")]
        text: Vec<u8>,
        /// Red, green, blue.
        rgb: (u8, u8, u8),
    },
    /// A query on a player who is not in the asking zone (`Name`, `ActorX`, `Attribute`,
    /// …, of a handle the zone does not host): the gateway asks the zone hosting it and
    /// answers `Value` (or `Error` when it is not in the game or does not answer in time).
    ActorQuery {
        /// The player's script handle (also the native's first argument).
        handle: u32,
        /// The native's name.
        native: String,
        /// Its arguments, as converted for the call.
        args: Vec<ValueDto>,
        /// `Some` for an action (it changes the player): applied exactly once; the
        /// gateway delivers it again until the hosting zone answers (`None`: a query).
        #[serde(default)]
        action: Option<ActionId>,
    },
    /// `Spawn` into another AreaInstance (started if it is not running): the NPC's handle
    /// there (`Value(Int)`), or `Error`.
    Spawn {
        /// The area (as the script wrote it).
        area: String,
        /// The instance.
        instance: u16,
        /// The actor template.
        template: u16,
        /// Where.
        x: u32,
        /// Where (f32 bits).
        y: u32,
        /// Where (f32 bits).
        z: u32,
        /// Its right-click script.
        script: String,
        /// Its death script.
        death_script: String,
    },
    /// `SpawnItem` into another AreaInstance (started if it is not running): the item is
    /// put on its ground once; answered `Value(Int(handle))`, or `Error`.
    SpawnItem {
        /// The item's name.
        item: String,
        /// How many (1..=65535).
        amount: u16,
        /// The area (as the script wrote it).
        area: String,
        /// The instance.
        instance: u16,
        /// Where (f32 bits).
        x: u32,
        /// Where (f32 bits).
        y: u32,
        /// Where (f32 bits).
        z: u32,
    },
    /// `FirstActorInZone` of another AreaInstance: the handles of its actors, in its order
    /// (at most [`super::MAX_ZONE_ACTORS`]), answered `Handles` (empty when it does not run
    /// or does not answer in time). The script walks them with `NextActorInZone`.
    ZoneActors {
        /// The area (as the script wrote it).
        area: String,
        /// The instance.
        instance: u16,
    },
    /// A zone's answer to a [`super::Msg::ZoneActors`].
    ZoneActorsAnswer {
        /// The gateway's query id.
        qid: u64,
        /// The handles.
        handles: Vec<i32>,
    },
    /// A zone's answer to a [`super::Msg::ActorQuery`] or [`super::Msg::SpawnNpc`] (no
    /// answer to it).
    ActorAnswer {
        /// The gateway's query id.
        qid: u64,
        /// The value, or `None` when the player is not there.
        value: Option<ValueDto>,
    },
    /// The weather of an area's instance 0 changed (for the areas whose `WeatherLink`
    /// names it, on whatever node). No answer: every node gets it in a `SharedVars`.
    #[doc(alias = "WeatherLink")]
    Weather {
        /// The area (lower case).
        area: String,
        /// Its weather now (0 sun … 5 wind).
        weather: u8,
    },
    /// `SetSuperGlobal` (no answer: every zone gets the new value as a `SuperGlobal`).
    SetSuperGlobal {
        /// Slot 0..=99.
        slot: u8,
        /// The value.
        #[serde(with = "serde_bytes")]
        value: Vec<u8>,
    },
    /// `ZoneInstanceExists`.
    InstanceExists {
        /// Area.
        area: String,
        /// Instance.
        instance: u16,
    },
    /// `CreateZoneInstance` (`instance` 0: the first free one in 1..=99).
    CreateInstance {
        /// Area.
        area: String,
        /// Instance.
        instance: u16,
    },
    /// `RemoveZoneInstance`.
    RemoveInstance {
        /// Area.
        area: String,
        /// Instance (> 0).
        instance: u16,
    },
    /// `ActorsInZone` / `PlayersInZone` of another AreaInstance (from the nodes' latest
    /// heartbeats).
    CountActors {
        /// Area.
        area: String,
        /// Instance, or -1 for all of the area's instances.
        instance: i32,
        /// Count only online players.
        players_only: bool,
    },
}

/// The store's answer to a [`ScriptStoreOp`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ScriptStoreResult {
    /// A file's bytes, or `None` when there is no such file.
    File(#[serde(with = "serde_bytes")] Option<Vec<u8>>),
    /// `FileType` (0 none, 1 file, 2 directory) and size.
    Info {
        /// 0 none, 1 file, 2 directory.
        kind: u8,
        /// Bytes.
        size: u64,
    },
    /// Done (writes, deletes).
    Done,
    /// An Int answer (instance exists 1/0, the created instance or 0).
    Int(i32),
    /// Refused or failed (logged; the script gets 0 or "").
    Error(String),
    /// A value (a remote actor query's answer).
    Value(ValueDto),
    /// The actors of another AreaInstance, in its order (`FirstActorInZone` elsewhere).
    Handles(Vec<i32>),
}

/// A script value crossing the cluster (a remote actor query's arguments and answer).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ValueDto {
    /// An Int.
    Int(i32),
    /// A Float, as its bits.
    Float(u32),
    /// A String.
    Str(#[serde(with = "serde_bytes")] Vec<u8>),
}

/// One script file of a [`super::Msg::ScriptsUpdate`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScriptFileDto {
    /// The script's name (the file name without `.rsl`).
    pub name: String,
    /// Its bytes.
    #[serde(with = "serde_bytes")]
    pub bytes: Vec<u8>,
}
