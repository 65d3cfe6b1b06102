//! The closed input and output enums of [`ZoneSim::tick`](super::ZoneSim::tick), and the
//! serialisable actor state that travels with transfers and snapshots.
//!
//! Everything a zone can be told is a [`ZoneInput`]; everything it can say is a
//! [`ZoneOutput`] (plus the datagram batch and the statistics in [`TickOutput`]). The
//! shell (actor, bench, harness) never reaches into the state: it pushes inputs and routes
//! outputs. The shapes that cross nodes ([`ActorState`], [`TransferOut`],
//! [`CharacterSnapshot`]) derive serde so the cluster layer can send them with rmp-serde.

use serde::{Deserialize, Serialize};

/// A player's session key, assigned by the gateway (Realm Crafter's RNID, which is `>0`
/// for a player). NPCs have none (RNID `-1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PlayerKey(pub u64);

/// A Realm Crafter RuntimeID: the u16 every packet names an actor by. `0` is never
/// allocated, because a mount RID of 0 means "no mount" on the wire.
pub type RuntimeId = u16;

/// Identifies one cross-instance transfer (SetArea to another AreaInstance), the same id
/// at every hop of the handoff; the zone mints its own with [`TransferMinter`].
pub use shared::internal::{TransferId, TransferMinter};

/// Number of attribute slots (`Attributes\Value[40]`).
pub const ATTRIBUTE_COUNT: usize = 40;
/// Number of resistances (one per damage type).
pub const RESISTANCE_COUNT: usize = 20;
/// Number of faction ratings.
pub const FACTION_COUNT: usize = 100;
/// Inventory slots `0..=45`.
pub const INVENTORY_SLOTS: usize = 46;
/// Memorised spell slots; 5000 means empty.
pub const MEMORISED_SLOTS: usize = 10;
/// The "empty" memorised slot marker.
pub const MEMORISED_EMPTY: u16 = 5000;

// The persistent shapes live in `shared` so the gateway stores and the zones exchange
// exactly one definition; the simulation knows them by their Realm Crafter-side names.
pub use shared::internal::dto::{
    ActorStateDto as ActorState, ArrivalDto as Arrival, GroundItemDto, InvSlotDto as InvSlot,
    KnownSpellDto as KnownSpell, ScriptStoreOp, ScriptStoreResult,
};

/// A handle to an actor: slab index plus generation, so a stale handle (a freed target,
/// leader or mount) resolves to `None` instead of to whoever reused the slot. Defined
/// here, with the other ids, so that the layers below the state (`instances`) need not
/// import it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ActorId {
    /// Slab index.
    pub idx: u32,
    /// Generation of the slot when the handle was made.
    pub generation: u32,
}

/// A decoded C→S `P_StandardUpdate` (14), before any validation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StandardUpdateIn {
    /// DestX.
    pub dest_x: f32,
    /// DestZ.
    pub dest_z: f32,
    /// Y.
    pub y: f32,
    /// X.
    pub x: f32,
    /// Z.
    pub z: f32,
    /// IsRunning byte.
    pub is_running: bool,
    /// WalkingBackward byte.
    pub walking_backward: bool,
}

/// A pet command (`/pet name|ALL,cmd[,args]`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PetCommand {
    /// WAIT / STAY.
    Wait,
    /// FOLLOW / COME.
    Follow,
    /// ATTACK: the leader's target.
    Attack,
    /// NAME x.
    Name(String),
}

/// A client's answer to a script window, each naming the waiting script instance (`hSI`)
/// the server gave it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScriptReply {
    /// `P_Dialog "N"`: the dialog window is open; `dialog` is the client's handle.
    #[doc(alias = "OpenDialog")]
    DialogOpened {
        /// Instance.
        script: u32,
        /// The client's dialog handle.
        dialog: u32,
    },
    /// `P_Dialog "T"`: a line of text was shown.
    TextShown {
        /// Instance.
        script: u32,
    },
    /// `P_Dialog "O"`: an option was chosen (1-based).
    #[doc(alias = "DialogInput")]
    Chosen {
        /// Instance.
        script: u32,
        /// The option, 1-based.
        option: u8,
    },
    /// `P_ProgressBar "C"`: the bar exists; `bar` is the client's handle.
    #[doc(alias = "CreateProgressBar")]
    BarCreated {
        /// Instance.
        script: u32,
        /// The client's bar handle.
        bar: u32,
    },
    /// `P_ScriptInput`: the text typed into an input prompt.
    #[doc(alias = "P_ScriptInput")]
    Input {
        /// Instance.
        script: u32,
        /// The text.
        text: Vec<u8>,
    },
}

/// One thing a player in the zone did, decoded by the shell.
#[derive(Clone, Debug, PartialEq)]
pub enum PlayerAction {
    /// `P_StandardUpdate` (14).
    StandardUpdate(StandardUpdateIn),
    /// The client's `P_ChangeArea` (9) or `P_RepositionActor` (49) acknowledgement: it
    /// has loaded the area; clears `IgnoreUpdate` after a handoff.
    #[doc(alias = "P_ChangeArea")]
    AreaAck,
    /// `P_AttackActor` (18) on a target RID.
    Attack {
        /// Target.
        target: RuntimeId,
    },
    /// `P_RightClick` (20): run the target's script or mount it.
    RightClick {
        /// Target.
        target: RuntimeId,
    },
    /// `P_InventoryUpdate` (15): pick up, drop, answer an offer, move or merge a stack.
    #[doc(alias = "P_InventoryUpdate")]
    Inventory(shared::proto::InventoryUpdateC2S),
    /// `P_ActionBarUpdate` (31).
    #[doc(alias = "P_ActionBarUpdate")]
    ActionBar(shared::proto::ActionBarUpdate),
    /// `P_SpellUpdate` (27): memorise, un-memorise or cast an ability.
    #[doc(alias = "P_SpellUpdate")]
    Spell(shared::proto::SpellUpdate),
    /// `P_ItemScript` (43): use the item in a slot, on a target.
    #[doc(alias = "P_ItemScript")]
    UseItem {
        /// Slot.
        slot: u8,
        /// Target.
        target: Option<RuntimeId>,
    },
    /// `P_EatItem` (44).
    #[doc(alias = "P_EatItem")]
    EatItem {
        /// Slot.
        slot: u8,
        /// How many.
        amount: u16,
    },
    /// `P_OpenTrading` (35): cancel or confirm a trade or a purchase.
    #[doc(alias = "P_OpenTrading")]
    OpenTrading(shared::proto::OpenTradingC2S),
    /// `P_UpdateTrading` (41): offer (or withdraw) a backpack stack in a trade.
    #[doc(alias = "P_UpdateTrading")]
    UpdateTrading {
        /// Trade slot 0..31 (backpack slot 14 + slot).
        slot: u8,
        /// How many (0 = withdraw).
        amount: u16,
    },
    /// `P_Trade` (62): trade with an actor (its shop).
    #[doc(alias = "P_Trade")]
    TradeWith {
        /// Target.
        target: RuntimeId,
    },
    /// `P_Examine` (61): run the target's `Examine` method (or `Default.Examine`).
    #[doc(alias = "P_Examine")]
    Examine {
        /// Target.
        target: RuntimeId,
    },
    /// A client's answer to a script window (`P_Dialog`, `P_ProgressBar`, `P_ScriptInput`).
    ScriptReply(ScriptReply),
    /// `P_Dismount` (47).
    Dismount,
    /// `P_Jump` (46).
    Jump,
    /// Zone chat (a `P_ChatMessage` that is not a command).
    Chat {
        /// The text.
        text: String,
    },
    /// `/setattribute name,value` (DM).
    SetAttribute {
        /// Attribute name (case-insensitive).
        name: String,
        /// New value.
        value: i32,
    },
    /// `/setattributemax name,value` (DM).
    SetAttributeMax {
        /// Attribute name (case-insensitive).
        name: String,
        /// New maximum.
        value: i32,
    },
    /// `/pet name|ALL,cmd`.
    Pet {
        /// Pet name, or `None` for ALL.
        pet: Option<String>,
        /// The command.
        command: PetCommand,
    },
    /// `/warp area[,inst]` (DM).
    Warp {
        /// Area name.
        area: String,
        /// Instance.
        instance: u16,
    },
    /// Any other chat command, for the script hooks (`In-game Commands`).
    Command {
        /// Upper-cased command word.
        word: String,
        /// Parameters, the trimmed rest.
        params: String,
    },
}

/// Everything a zone can be told. Inputs are applied in order at the start of a tick.
#[derive(Clone, Debug, PartialEq)]
pub enum ZoneInput {
    /// A player enters the game in this instance with its full character state.
    PlayerJoined {
        /// Session key.
        player: PlayerKey,
        /// The player's cluster-wide RuntimeID, assigned by the gateway at login.
        rid: RuntimeId,
        /// Whether the account is a DM.
        is_dm: bool,
        /// The character.
        state: Box<ActorState>,
        /// Where to place it.
        arrival: Arrival,
    },
    /// The player disconnected (Realm Crafter 201 `PlayerHasLeft`).
    PlayerLeft {
        /// Session key.
        player: PlayerKey,
    },
    /// A player's packet-derived action.
    Player {
        /// Session key.
        player: PlayerKey,
        /// What it did.
        action: PlayerAction,
    },
    /// An actor arriving from another AreaInstance.
    TransferIn {
        /// The transfer id (duplicates are refused).
        transfer_id: TransferId,
        /// The player's session, `None` for an NPC.
        player: Option<PlayerKey>,
        /// Whether the account is a DM.
        is_dm: bool,
        /// The actor with its mount and pets.
        state: Box<ActorState>,
        /// Where to place it.
        arrival: Arrival,
    },
    /// Move a player to another AreaInstance on an operator's or DM's behalf (the gateway's
    /// `/warpother`): SetArea as for `/warp`, without the DM check (the gateway did it).
    #[doc(alias = "WARPOTHER")]
    Warp {
        /// Session key.
        player: PlayerKey,
        /// Destination area.
        area: String,
        /// Destination instance.
        instance: u16,
    },
    /// The destination holds the actor prepared (phase one of the handoff): let go of it
    /// and answer [`ZoneOutput::CommitTransfer`], or [`ZoneOutput::AbortTransfer`] when
    /// this transfer was already rolled back (a late acknowledgement).
    TransferAck {
        /// Which transfer.
        transfer_id: TransferId,
    },
    /// Phase two at the destination: the source let go; make the prepared actor live.
    TransferCommit {
        /// Which transfer (this zone's id for the arrival).
        transfer_id: TransferId,
    },
    /// The source rolled back (or is gone): drop the prepared actor.
    TransferAbort {
        /// Which transfer (this zone's id for the arrival).
        transfer_id: TransferId,
    },
    /// The gateway's word on a player's party across the cluster (leader first; empty:
    /// none), for the XP split among the members in this instance.
    PartyMembers {
        /// Session key.
        player: PlayerKey,
        /// Character names.
        members: Vec<String>,
    },
    /// The destination refused a transfer: the actor is restored here.
    TransferNack {
        /// Which transfer.
        transfer_id: TransferId,
        /// Why, told to the player in chat.
        reason: String,
    },
    /// The script store answered a [`ZoneOutput::ScriptStore`] request.
    ScriptStoreReply {
        /// The request.
        req: u64,
        /// The answer.
        result: ScriptStoreResult,
    },
    /// A script reload (`RefreshScripts`): new runs use `current`; running instances keep
    /// their code; `retained` are the node's earlier versions, newest first.
    #[doc(alias = "RefreshScripts")]
    Scripts {
        /// The scripts new runs use.
        current: std::sync::Arc<script::bytecode::ScriptSet>,
        /// Earlier versions, for instances arriving on them.
        retained: Vec<std::sync::Arc<script::bytecode::ScriptSet>>,
    },
    /// The gateway asks about a player of this zone for a script elsewhere
    /// (`runtime::remote`): evaluate the command and answer.
    ActorQuery {
        /// The gateway's query id.
        qid: u64,
        /// The player.
        player: PlayerKey,
        /// The command.
        native: String,
        /// Its arguments.
        args: Vec<shared::internal::ValueDto>,
        /// `Some`: an action, taken at most once per id.
        action: Option<shared::internal::ActionId>,
    },
    /// The gateway asks about (or acts on) an NPC of this zone for a script elsewhere
    /// (`runtime::remote::answer_npc`).
    NpcQuery {
        /// The gateway's query id.
        qid: u64,
        /// The command.
        native: String,
        /// Its arguments (the NPC's handle first).
        args: Vec<shared::internal::ValueDto>,
        /// An action.
        action: bool,
    },
    /// The gateway has this zone put an item on its ground for a script elsewhere
    /// (`SpawnItem` into this instance): place it and answer its handle.
    SpawnItem {
        /// The gateway's query id.
        qid: u64,
        /// The item's name.
        item: String,
        /// How many.
        amount: u16,
        /// Where.
        pos: (f32, f32, f32),
    },
    /// The gateway asks for this zone's actors for a script elsewhere (`FirstActorInZone`).
    ZoneActors {
        /// The gateway's query id.
        qid: u64,
    },
    /// The gateway has this zone spawn an NPC for a script elsewhere (`Spawn` into this
    /// instance): spawn and answer its handle.
    SpawnNpc {
        /// The gateway's query id.
        qid: u64,
        /// The actor template.
        template: u16,
        /// Where.
        pos: (f32, f32, f32),
        /// Its right-click script.
        script: String,
        /// Its death script.
        death_script: String,
    },
    /// A cluster environment variable (`SetEnv` anywhere; an empty value removes it).
    Env {
        /// Name.
        name: Vec<u8>,
        /// Value.
        value: Vec<u8>,
    },
    /// The weather of another area's instance 0 (`WeatherLink`), from whatever node.
    #[doc(alias = "WeatherLink")]
    LinkedWeather {
        /// The area (lower case).
        area: String,
        /// Its weather.
        weather: u8,
    },
    /// A super global's value (at start, and whenever any zone sets one).
    SuperGlobal {
        /// Slot 0..=99.
        slot: u8,
        /// The value (bytes).
        value: Vec<u8>,
    },
    /// Run `script.func` with no actor (the cluster's `Startup.Main`, an operator's
    /// command).
    RunScript {
        /// Script name.
        script: String,
        /// Function.
        func: String,
    },
    /// The ground items an earlier run of this instance saved; given before anyone joins.
    RestoreGround {
        /// The items, each with the time it may still lie there.
        items: Vec<GroundItemDto>,
    },
    /// The instance stops: every player leaves, saved in one group with the ground.
    Shutdown,
}

/// What a script asks the gateway to do to an account.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AccountAction {
    /// `BanPlayer`: set the account's banned flag (no kick).
    Ban,
    /// `KickPlayer`: disconnect the player (`P_KickedPlayer`).
    Kick,
}

/// Which kind of script failure a [`ZoneOutput::ScriptError`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ScriptErrorKind {
    /// A runtime error (division by zero, an index out of bounds, `End`, a native that is
    /// not supported yet, ...).
    Runtime,
    /// A script ended for running past its budget phase after phase.
    Runaway,
    /// A saved script that cannot resume on this node (changed or missing script).
    Restore,
}

/// Why the sim asks for a snapshot to be persisted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SnapshotReason {
    /// The player left the game.
    Logout,
    /// The player left this instance (transfer acknowledged).
    Transfer,
    /// Periodic save.
    Periodic,
}

/// A character to persist.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CharacterSnapshot {
    /// Whose.
    pub player: PlayerKey,
    /// Why.
    pub reason: SnapshotReason,
    /// The state.
    pub state: ActorState,
}

/// An atomic group of snapshots of this instance, with its ground items when they are
/// saved too: the cluster stores it in one transaction (`sim::checkpoint`).
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint {
    /// The characters (may be empty when only the ground is saved).
    pub players: Vec<CharacterSnapshot>,
    /// `Some`: every ground item of the area now, replacing the saved ones; `None`: the
    /// saved ground stays.
    pub ground: Option<Vec<GroundItemDto>>,
}

/// A SetArea to another AreaInstance: the destination must insert the actor and answer
/// with `TransferAck` or `TransferNack` (as a [`ZoneInput`] to this zone).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TransferOut {
    /// The transfer id, unique per zone (instance-tagged by the shell).
    pub transfer_id: TransferId,
    /// The player's session, `None` for an NPC.
    pub player: Option<PlayerKey>,
    /// Whether the account is a DM.
    pub is_dm: bool,
    /// Destination area name.
    pub area: String,
    /// Destination instance.
    pub instance: u16,
    /// Destination placement.
    pub arrival: ArrivalWire,
    /// The whole actor state with its mount and pets.
    pub state: ActorState,
}

/// A serialisable copy of [`Arrival`] (kept separate so `Arrival` may grow non-serde data).
pub type ArrivalWire = Arrival;

/// Why an input was refused. Each is counted in [`Counters`]; none stops the zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Rejection {
    /// The player key is not in this zone.
    UnknownPlayer,
    /// A join for a player already in the zone, or a RID in use / outside the player range.
    BadJoin,
    /// A duplicate transfer id.
    DuplicateTransfer,
    /// A transfer ack/nack/commit/abort for an unknown id.
    UnknownTransfer,
    /// An update while `IgnoreUpdate` is set.
    IgnoredUpdate,
    /// An update for a mount with a rider.
    RiddenMount,
    /// A float that `ClampWorldCoord` zeroed.
    ClampedCoord,
    /// A position rejected by the speed clamp.
    SpeedClamp,
    /// Running while walking backward.
    RunningBackward,
    /// An unknown attribute name.
    UnknownAttribute,
    /// A DM-only command from a non-DM.
    NotPermitted,
    /// A target RID that does not exist here.
    UnknownTarget,
    /// Any other invalid request (range, state).
    Invalid,
    /// An item request the rules refuse: a slot or amount out of range, an item the
    /// player does not have, a slot it does not fit, no room, out of reach, already taken.
    BadItemRequest,
    /// A trade or shop request out of turn: no trade open, a replayed or mismatched
    /// confirmation, a partner who left, not enough money.
    TradeRefused,
    /// An ability request the rules refuse (`P_SpellUpdate`): an unknown, unlearned,
    /// unmemorised or recharging spell, a race or class it excludes, a target out of range
    /// or elsewhere, a known-spell index the client was never given, casts too close
    /// together, or no free memorised slot.
    SpellRefused,
    /// A client's answer to a script window (`P_Dialog`, `P_ProgressBar`, `P_ScriptInput`)
    /// that nothing waits for: the window is not open, belongs to another player's script,
    /// was already answered or timed out, or the option number is out of range. The
    /// waiting script is unaffected.
    ScriptReply,
}

impl Rejection {
    /// How many kinds there are (the length of [`Counters::rejections`]).
    pub const COUNT: usize = 17;

    /// Every kind, in `as usize` order.
    pub const ALL: [Rejection; Self::COUNT] = [
        Self::UnknownPlayer,
        Self::BadJoin,
        Self::DuplicateTransfer,
        Self::UnknownTransfer,
        Self::IgnoredUpdate,
        Self::RiddenMount,
        Self::ClampedCoord,
        Self::SpeedClamp,
        Self::RunningBackward,
        Self::UnknownAttribute,
        Self::NotPermitted,
        Self::UnknownTarget,
        Self::Invalid,
        Self::BadItemRequest,
        Self::TradeRefused,
        Self::SpellRefused,
        Self::ScriptReply,
    ];

    /// The snake_case name (the `reason` label of `rc_zone_rejections_total`).
    pub fn name(self) -> &'static str {
        match self {
            Self::UnknownPlayer => "unknown_player",
            Self::BadJoin => "bad_join",
            Self::DuplicateTransfer => "duplicate_transfer",
            Self::UnknownTransfer => "unknown_transfer",
            Self::IgnoredUpdate => "ignored_update",
            Self::RiddenMount => "ridden_mount",
            Self::ClampedCoord => "clamped_coord",
            Self::SpeedClamp => "speed_clamp",
            Self::RunningBackward => "running_backward",
            Self::UnknownAttribute => "unknown_attribute",
            Self::NotPermitted => "not_permitted",
            Self::UnknownTarget => "unknown_target",
            Self::Invalid => "invalid",
            Self::BadItemRequest => "bad_item_request",
            Self::TradeRefused => "trade_refused",
            Self::SpellRefused => "spell_refused",
            Self::ScriptReply => "script_reply",
        }
    }
}

/// Counters for one tick (all reset each tick).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    /// Inputs processed.
    pub inputs: u32,
    /// Rejections by kind (index = `Rejection as usize`).
    pub rejections: [u32; Rejection::COUNT],
    /// Actors in the zone.
    pub actors: u32,
    /// Online players in the zone.
    pub players: u32,
    /// Actor updates written into datagrams this tick.
    pub updates_sent: u32,
    /// Datagram bytes produced this tick.
    pub datagram_bytes: u64,
    /// Datagrams produced this tick.
    pub datagrams: u32,
    /// Reliable bytes produced this tick.
    pub reliable_bytes: u64,
    /// Whether this tick broadcast positions.
    pub broadcast: bool,
    /// Recipients that got the mid band this tick.
    pub mid_band: u32,
    /// Kills processed after the actor loop.
    pub kills: u32,
}

impl Counters {
    /// Total rejections.
    pub fn total_rejections(&self) -> u32 {
        self.rejections.iter().sum()
    }
    /// Rejections of one kind.
    pub fn rejected(&self, r: Rejection) -> u32 {
        self.rejections.get(r as usize).copied().unwrap_or(0)
    }
}

/// The phases of a tick, in order; index into [`TickStats::phase_ns`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Inputs (joins, leaves, packets, transfers).
    Ingest = 0,
    /// Actor effects and transfer timeouts.
    Housekeeping = 1,
    /// The actor loop: recharge, movement, water, AI.
    Actors = 2,
    /// Deferred kills.
    Kills = 3,
    /// Round-robin visit: weather, spawns, portals, triggers.
    Visit = 4,
    /// Scripts (`UpdateScripts`).
    Scripts = 5,
    /// Position broadcast.
    Broadcast = 6,
    /// Output assembly.
    Flush = 7,
}

/// Names of [`Phase`]s, for reports.
pub const PHASE_NAMES: [&str; 8] = [
    "ingest",
    "housekeeping",
    "actors",
    "kills",
    "visit",
    "scripts",
    "broadcast",
    "flush",
];

/// Per-tick statistics: phase durations from the injected clock, and counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TickStats {
    /// The tick's `now_ms`.
    pub now_ms: u64,
    /// Nanoseconds spent per phase (0 with the no-op clock).
    pub phase_ns: [u64; 8],
    /// Counters.
    pub counters: Counters,
}

/// Everything a zone can say, besides position datagrams.
#[derive(Clone, Debug, PartialEq)]
pub enum ZoneOutput {
    /// Reliable packets for one player: one or more `[len u16][type u8][payload]` frames,
    /// in order.
    Reliable {
        /// Recipient.
        player: PlayerKey,
        /// Framed bytes.
        bytes: Vec<u8>,
    },
    /// SetArea to another AreaInstance: route to the destination.
    TransferOut(Box<TransferOut>),
    /// A character to persist.
    Persist(Box<CharacterSnapshot>),
    /// Characters (and the ground items) to persist together, atomically. Output before
    /// anything that lets one of these players live elsewhere (its transfer, its removal).
    Checkpoint(Box<Checkpoint>),
    /// The player is no longer hosted here (left, or transfer acknowledged).
    PlayerRemoved {
        /// Who.
        player: PlayerKey,
    },
    /// A transfer into this zone is prepared (held, not yet live): answer the source with
    /// `TransferAck`; `TransferCommit` or `TransferAbort` comes back.
    AckTransfer {
        /// Which.
        transfer_id: TransferId,
    },
    /// The source let go of the actor after the destination's ack: tell the destination
    /// to make it live (`TransferCommit`).
    CommitTransfer {
        /// This zone's id for the outgoing transfer.
        transfer_id: TransferId,
    },
    /// An ack came for a transfer this zone already rolled back: tell the destination to
    /// drop its prepared copy (`TransferAbort`), so the actor exists in one place only.
    AbortTransfer {
        /// This zone's id for the outgoing transfer.
        transfer_id: TransferId,
    },
    /// A prepared arrival was neither committed nor aborted in time and was dropped.
    PreparedExpired {
        /// Which.
        transfer_id: TransferId,
    },
    /// A transfer into this zone was refused: answer the source with `TransferNack`.
    NackTransfer {
        /// Which.
        transfer_id: TransferId,
        /// Why.
        reason: String,
    },
    /// A script failed and was ended (counted in [`ScriptStats`](super::instances::ScriptStats)).
    ScriptError {
        /// Script name.
        script: String,
        /// Entry function.
        func: String,
        /// Its `Actor()` handle.
        actor: i32,
        /// The file of the failing code (`Name.rsl`), empty if none.
        file: String,
        /// Its line (0 if none).
        line: u32,
        /// What happened.
        message: String,
        /// Which kind of failure.
        kind: ScriptErrorKind,
    },
    /// A log line from the scripts (`ScriptLog`, a missing script or function, ...).
    ScriptLog {
        /// Script name.
        script: String,
        /// The line.
        message: String,
    },
    /// A request to the cluster's script store (files, super globals, zone instances);
    /// answered with [`ZoneInput::ScriptStoreReply`] unless `req` is 0.
    ScriptStore {
        /// Request id (0: no answer wanted).
        req: u64,
        /// What.
        op: ScriptStoreOp,
    },
    /// A script acts on a player's account (`BanPlayer`, `KickPlayer`).
    Account {
        /// Whose.
        player: PlayerKey,
        /// What.
        action: AccountAction,
    },
    /// An input was refused (also counted).
    Rejected {
        /// Whose input, if a player's.
        player: Option<PlayerKey>,
        /// Why.
        reason: Rejection,
    },
}

/// One datagram in [`DatagramBatch`]: a run of segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DatagramRef {
    /// Recipient.
    pub player: PlayerKey,
    /// First segment index in [`DatagramBatch::segments`].
    pub first: u32,
    /// End segment index (exclusive).
    pub end: u32,
    /// Total bytes.
    pub len: u32,
}

/// All position datagrams of a tick, zero-copy: every visible actor's `P_StandardUpdate`
/// frame is encoded once into [`DatagramBatch::frames`] (followed by each recipient's own
/// frame with its tail), and a datagram is a list of byte ranges of that buffer. The IO
/// shell gathers a datagram into its send buffer with [`DatagramBatch::write`], the one
/// copy the transport needs anyway. Each datagram is at most the configured byte budget
/// and never splits a frame. Reused from tick to tick.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DatagramBatch {
    /// Encoded frames.
    pub frames: Vec<u8>,
    /// Byte ranges `[start, end)` of `frames`.
    pub segments: Vec<(u32, u32)>,
    /// The datagrams.
    pub datagrams: Vec<DatagramRef>,
}

impl DatagramBatch {
    /// Append one datagram's bytes to `out`.
    pub fn write(&self, d: &DatagramRef, out: &mut Vec<u8>) {
        let segs = self
            .segments
            .get(d.first as usize..d.end as usize)
            .unwrap_or(&[]);
        out.reserve(d.len as usize);
        for &(a, b) in segs {
            if let Some(bytes) = self.frames.get(a as usize..b as usize) {
                out.extend_from_slice(bytes);
            }
        }
    }

    /// One datagram's bytes.
    pub fn to_vec(&self, d: &DatagramRef) -> Vec<u8> {
        let mut v = Vec::with_capacity(d.len as usize);
        self.write(d, &mut v);
        v
    }

    /// Iterate `(recipient, bytes)` (allocates each datagram; for tests and simple shells).
    pub fn iter(&self) -> impl Iterator<Item = (PlayerKey, Vec<u8>)> + '_ {
        self.datagrams.iter().map(|d| (d.player, self.to_vec(d)))
    }

    /// Total datagram bytes.
    pub fn total_bytes(&self) -> u64 {
        self.datagrams.iter().map(|d| u64::from(d.len)).sum()
    }

    pub(crate) fn clear(&mut self) {
        self.frames.clear();
        self.segments.clear();
        self.datagrams.clear();
    }
}

/// What one tick produced. Owned by the sim and reused from tick to tick.
#[derive(Clone, Debug, Default)]
pub struct TickOutput {
    /// Reliable packets, transfers, snapshots, rejections, in the order they happened.
    pub outputs: Vec<ZoneOutput>,
    /// Position datagrams (broadcast ticks only).
    pub datagrams: DatagramBatch,
    /// Timings and counters.
    pub stats: TickStats,
}

#[cfg(test)]
mod tests {
    use super::Rejection;

    #[test]
    fn every_rejection_is_listed_once_in_order_with_a_distinct_name() {
        for (i, r) in Rejection::ALL.iter().enumerate() {
            assert_eq!(*r as usize, i);
        }
        let mut names: Vec<_> = Rejection::ALL.iter().map(|r| r.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Rejection::COUNT);
    }
}
