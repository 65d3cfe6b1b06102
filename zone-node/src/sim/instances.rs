//! Running scripts as data: each [`Instance`] (a script's VM and what it waits for) and
//! the zone's [`Scripts`] table with its wait indexes. The rules that create, run, wake
//! and move instances are in [`runtime`](super::runtime); this module only holds state.
//!
//! # Ownership
//! An instance whose `Actor()` is a player character belongs to that player: it freezes
//! with the player during a SetArea handoff, travels in the transfer and in the player's
//! snapshots ([`ScriptBundle`]), and resumes wherever the player is next live. Every other
//! instance (NPC scripts, `Startup`) belongs to the zone.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};

use script::RStr;
use script::vm::Vm;
use script::vm::saved::SavedVm;
use serde::{Deserialize, Serialize};

/// An instance id (the script's `hSI`), unique in this zone.
pub type InstanceId = u64;

/// A script handle for an actor (`Actor()`, `ContextActor()`, what natives take): 0 is none.
pub type Handle = i32;

/// Which client reply a dialog-like wait expects (`rsl-language.md` §10.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReplyKind {
    /// `OpenDialog`: the client's dialog handle.
    DialogOpened,
    /// `DialogOutput`: the text acknowledgement.
    TextAck,
    /// `DialogInput`: the chosen option.
    Option,
    /// `Input`: the typed text (non-empty).
    Input,
    /// `CreateProgressBar`: the client's bar handle.
    BarCreated,
}

/// What a suspended instance waits for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Wait {
    /// Nothing: it runs at the next scripts phase.
    Ready,
    /// `DoEvents(ms)`: until the zone's clock reaches `until_ms`.
    Sleep {
        /// Zone time to wake at.
        until_ms: u64,
    },
    /// `WaitKill`: `left` more kills of `template` by exactly `killer`.
    Kill {
        /// The killer's handle.
        killer: Handle,
        /// Actor template id.
        template: i32,
        /// Kills still needed.
        left: i32,
    },
    /// `WaitItem`: until `actor` holds `amount` of the item named `item`.
    Item {
        /// Whose inventory.
        actor: Handle,
        /// Item name (trimmed, compared case-insensitively).
        item: RStr,
        /// How many.
        amount: i32,
    },
    /// `WaitSpeak`: until `actor` right-clicks `target`.
    Speak {
        /// Who clicks.
        actor: Handle,
        /// Whom.
        target: Handle,
    },
    /// A client reply (dialogs, input, progress bars).
    Reply {
        /// Which reply.
        kind: ReplyKind,
    },
    /// `WaitTime(h, m)`: game time.
    GameTime {
        /// Hour.
        hour: i32,
        /// Minute.
        minute: i32,
    },
    /// An answer from the cluster's script store (files, zone instances).
    Store {
        /// Request id.
        req: u64,
    },
    /// Its actor is being handed off to another AreaInstance (a `Warp` by this script).
    Transfer,
    /// The low-level `SetWaiting(n)` mailbox wait of Realm Crafter's own `RC_Core.rsl`.
    Mailbox,
    /// A `Persistent(1)` script paused when its player logged out; it resumes at the next
    /// login.
    LoggedOut,
}

impl Wait {
    /// A short name for logs.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Ready => "ready",
            Self::Sleep { .. } => "DoEvents",
            Self::Kill { .. } => "WaitKill",
            Self::Item { .. } => "WaitItem",
            Self::Speak { .. } => "WaitSpeak",
            Self::Reply { .. } => "a client reply",
            Self::GameTime { .. } => "WaitTime",
            Self::Store { .. } => "the script store",
            Self::Transfer => "a warp",
            Self::Mailbox => "SetWaiting",
            Self::LoggedOut => "its player's next login",
        }
    }
}

/// An open script file: its bytes live here until `CloseFile` writes them back.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OpenFile {
    /// Sandboxed name.
    pub name: String,
    /// Contents.
    #[serde(with = "serde_bytes")]
    pub data: Vec<u8>,
    /// Read/write position.
    pub pos: usize,
    /// Whether it was written (and must be stored at close).
    pub dirty: bool,
}

/// The instance-level state Realm Crafter keeps beside the VM (`ScriptInstance`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InstanceCx {
    /// Script name as started.
    pub script: String,
    /// Entry function as started.
    pub func: String,
    /// `Actor()`.
    pub actor: Handle,
    /// `ContextActor()`.
    pub context: Handle,
    /// What `Parameter(n)` splits.
    pub param: RStr,
    /// `Persistent(1)` was called.
    pub persistent: bool,
    /// `WaitResult$`, the reply mailbox.
    pub mailbox: RStr,
    /// Realm Crafter's `Waiting` (0 running, 1 reply, 2 timer, 3 game time).
    pub waiting: i32,
    /// `WaitStart` (MilliSecs).
    pub wait_start: i32,
    /// `WaitTime` (ms).
    pub wait_time: i32,
    /// `WaitHour`.
    pub wait_hour: i32,
    /// `WaitMinute`.
    pub wait_minute: i32,
    /// Open files by handle (1-based, 0 is none).
    pub files: BTreeMap<i32, OpenFile>,
    /// Next file handle.
    pub next_file: i32,
    /// A wait recorded by `SetWaitKill` / `SetWaitItem` / `SetWaitSpeak`, taken when the
    /// script parks with `SetWaiting`.
    pub record: Option<Wait>,
    /// The file operation waiting for the store's answer.
    pub pending_io: Option<PendingIo>,
    /// Item-instance handles given to this script (`ActorWeapon`, `ActorBackpack`, ...):
    /// handle → what it names (`runtime::natives::items`).
    #[serde(default)]
    pub item_refs: BTreeMap<i32, ItemRef>,
    /// The last item-instance handle issued (never reused by this instance).
    #[serde(default)]
    pub last_item_ref: i32,
    /// The client reply this instance asked for and may still receive (a dialog native or
    /// an `RCE_Send*` sender), tied to the player it was sent to.
    #[serde(default)]
    pub reply: Option<PendingReply>,
    /// The client's dialog windows this instance opened and has not closed.
    #[serde(default)]
    pub dialogs: BTreeSet<u32>,
    /// The client's progress bars this instance created and has not deleted.
    #[serde(default)]
    pub bars: BTreeSet<u32>,
    /// This run's cluster-unique id, minted at its first action on a player elsewhere
    /// (`runtime::remote`); saved with the run, so a run resumed from a checkpoint names
    /// its actions as before and none is taken twice.
    #[serde(default)]
    pub run: Option<shared::internal::TransferId>,
    /// Actions on players elsewhere this run has taken (the last one's `ActionId::seq`).
    #[serde(default)]
    pub actions: u32,
    /// The actors of another AreaInstance as its last `FirstActorInZone` listed them
    /// (`NextActorInZone` walks them; bounded by `shared::internal::MAX_ZONE_ACTORS`).
    #[serde(default)]
    pub walk: Vec<i32>,
}

/// A client reply an instance asked for (`OpenDialog`, `DialogOutput`, `DialogInput`,
/// `Input`, `CreateProgressBar`, or their raw `RCE_Send*` senders). Only the player it was
/// sent to may answer it, only in the form asked for, and only until `until_ms`
/// (`sim::dialogs`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingReply {
    /// What answer is expected.
    pub kind: ReplyKind,
    /// The player's script handle.
    pub player: Handle,
    /// The dialog the request is in (text, options); 0 otherwise.
    pub dialog: u32,
    /// How many options were offered (`DialogInput`).
    pub options: u8,
    /// Zone time after which the request is given up.
    pub until_ms: u64,
}

/// What an item-instance handle names: the item of template `item` in slot `slot` of the
/// actor with script handle `actor`. It goes stale as soon as that slot holds anything else.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemRef {
    /// The holder's script handle.
    pub actor: Handle,
    /// Inventory slot.
    pub slot: u8,
    /// Item id.
    pub item: u16,
}

/// A file (or zone) operation waiting for the script store.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PendingIo {
    /// `ReadFile` / `OpenFile` / `AppendFile` of a name.
    Open {
        /// Sandboxed name.
        name: String,
        /// Position at the end (`AppendFile`).
        append: bool,
    },
    /// `CloseFile`, `DeleteFile`, `CreateDir`: answered with 0.
    Done,
    /// `FileType`.
    FileType,
    /// `FileSize`.
    FileSize,
    /// `CopyFile`: the source was read; write it here.
    CopyTo {
        /// Destination name.
        to: String,
    },
    /// A zone-instance question: answered with the store's Int.
    Int,
    /// `FirstActorInZone` of another instance: its actors' handles, kept for
    /// `NextActorInZone`; the first is the answer (0: none).
    Walk,
    /// A query on a player elsewhere (`runtime::remote`): answered with its value; a
    /// failure reads as `""` (`text`) or 0.
    Value {
        /// The command returns a String.
        text: bool,
    },
}

/// One running script.
#[derive(Clone, Debug)]
pub struct Instance {
    /// Its id (`hSI`).
    pub id: InstanceId,
    /// The VM.
    pub vm: Vm,
    /// Realm Crafter's instance fields.
    pub cx: InstanceCx,
    /// What it waits for.
    pub wait: Wait,
    /// Consecutive scripts phases that ended it at its budget.
    pub overruns: u32,
    /// The scripts it started with (or was restored against): it runs on them to its end,
    /// whatever a reload (`RefreshScripts`) swaps in meanwhile.
    pub code: std::sync::Arc<script::bytecode::ScriptSet>,
}

/// A start request (`ThreadScript`), turned into an instance at the next scripts phase.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StartRequest {
    /// Script name.
    pub script: String,
    /// Function.
    pub func: String,
    /// `Actor()`.
    pub actor: Handle,
    /// `ContextActor()`.
    pub context: Handle,
    /// `Param`.
    pub param: RStr,
}

/// Cumulative script figures of the zone (exported as metrics by the shell).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ScriptStats {
    /// Instances started.
    pub started: u64,
    /// Instances that ran to their end.
    pub finished: u64,
    /// Instances ended by a runtime error.
    pub errors: u64,
    /// Instances ended for overrunning their budget tick after tick.
    pub runaway: u64,
    /// Scripts phases in which an instance was paused at its budget.
    pub budget_pauses: u64,
    /// Saved instances that could not resume here (changed or missing scripts).
    pub restore_failures: u64,
    /// Start requests for a missing script or function.
    pub missing: u64,
    /// Native calls.
    pub native_calls: u64,
    /// Questions to a client (dialogs, input, progress bars) given up unanswered.
    pub reply_timeouts: u64,
    /// Engine starts merged into an identical start already queued for the same tick
    /// (the same entry point, actor, context actor and parameter).
    pub coalesced: u64,
    /// Starts refused because their actor had `scripts_per_actor` instances.
    pub refused_actor: u64,
    /// Actions of scripts elsewhere taken on this zone's players (`runtime::remote`).
    pub remote_actions: u64,
    /// Actions of scripts elsewhere delivered again and recognised (not taken twice).
    pub duplicate_actions: u64,
    /// Starts refused because the zone had `scripts_per_zone` instances.
    pub refused_zone: u64,
}

/// The zone's script instances, in creation order, with the indexes that let a tick skip
/// every instance that is waiting (a sleeping instance costs nothing until it is due).
#[derive(Debug, Default)]
pub struct Scripts {
    /// Live instances by id (creation order).
    pub instances: BTreeMap<InstanceId, Instance>,
    /// Instances to run at the next scripts phase.
    pub runnable: BTreeSet<InstanceId>,
    /// Start requests queued since the last scripts phase.
    pub queue: Vec<StartRequest>,
    /// `DoEvents` and timed mailbox waits: `(due, id)`; stale entries are skipped.
    pub sleepers: BinaryHeap<Reverse<(u64, InstanceId)>>,
    /// Instances waiting in `WaitItem` (checked once a second).
    pub item_waiters: BTreeSet<InstanceId>,
    /// Instances waiting in `WaitTime` (checked at every scripts phase; see `sim::clock`).
    pub time_waiters: BTreeSet<InstanceId>,
    /// Instances by the handles they name (`Actor()` and `ContextActor()`).
    pub by_handle: HashMap<Handle, BTreeSet<InstanceId>>,
    /// Store requests in flight: request id → instance.
    pub requests: BTreeMap<u64, InstanceId>,
    /// Next request id.
    pub next_request: u64,
    /// Next instance id.
    pub next_id: InstanceId,
    /// Super globals (100 slots), as last heard from the store.
    pub superglobals: Vec<RStr>,
    /// When the item waits were last checked.
    pub last_item_check_ms: u64,
    /// Figures.
    pub stats: ScriptStats,
    /// Actors warped by the running script, applied once it is parked again.
    pub deferred_warps: Vec<DeferredWarp>,
    /// Live instances by their `Actor()` (for `scripts_per_actor`).
    pub live_by_actor: HashMap<Handle, u32>,
    /// Queued starts by their `Actor()`.
    pub queued_by_actor: HashMap<Handle, u32>,
    /// The engine starts queued for the next scripts phase, as coalescing keys.
    pub queued_keys: std::collections::HashSet<StartKey>,
    /// Refused starts not yet logged, and when the last log line was written.
    pub refusals_unlogged: u64,
    /// Zone time of the last refusal log line.
    pub refusal_logged_ms: Option<u64>,
    /// The game minute the `WaitTime` waiters were last checked at (`None`: a waiter was
    /// added since): they are checked again only when it changes, so a scripts phase costs
    /// nothing per waiting script.
    pub time_checked_minute: Option<i32>,
    /// The scripts new runs use since the last reload (`RefreshScripts`); before any, the
    /// world's (`ZoneContent::scripts`).
    pub code: Option<std::sync::Arc<script::bytecode::ScriptSet>>,
    /// Earlier versions kept for instances that arrive running on them (a handoff, a
    /// checkpoint), newest first.
    pub retained: Vec<std::sync::Arc<script::bytecode::ScriptSet>>,
    /// Instructions scripts answered by the cluster may still run between ticks before
    /// the next scripts phase (`runtime::run_answered`).
    pub between_budget: u64,
    /// The cluster's environment (`GetEnv`/`SetEnv`), as last heard (bounded by
    /// `shared::internal::MAX_ENV_VARS`).
    pub env: BTreeMap<Vec<u8>, Vec<u8>>,
}

/// What makes two engine starts the same start: entry point (case-insensitive), actor,
/// context actor and parameter.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StartKey {
    script: String,
    func: String,
    actor: Handle,
    context: Handle,
    param: RStr,
}

impl StartKey {
    /// The key of a start request.
    pub fn of(req: &StartRequest) -> Self {
        Self {
            script: req.script.to_ascii_lowercase(),
            func: req.func.to_ascii_lowercase(),
            actor: req.actor,
            context: req.context,
            param: req.param.clone(),
        }
    }
}

/// A `Warp` to apply after the running script is back in the table.
#[derive(Clone, Debug, PartialEq)]
pub struct DeferredWarp {
    /// The instance that warps its own actor (it waits in [`Wait::Transfer`]).
    pub instance: InstanceId,
    /// The actor.
    pub actor: super::events::ActorId,
    /// Destination area.
    pub area: String,
    /// Destination instance.
    pub zone_instance: u16,
    /// Portal name.
    pub portal: String,
}

/// Number of super-global slots.
pub const SUPERGLOBALS: usize = 100;

impl Scripts {
    /// An empty table with blank super globals.
    pub fn new() -> Self {
        Self {
            superglobals: vec![RStr::EMPTY; SUPERGLOBALS],
            next_id: 1,
            next_request: 1,
            ..Self::default()
        }
    }

    /// How many instances are live.
    pub fn len(&self) -> usize {
        self.instances.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.instances.is_empty()
    }
}

/// A wait in its portable form (zone time becomes time left).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum SavedWait {
    /// As [`Wait`], for every wait that does not name zone time.
    Same(Wait),
    /// A `DoEvents` with this many ms left.
    SleepLeft(u64),
}

/// One instance in its portable form.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SavedInstance {
    /// The VM.
    pub vm: SavedVm,
    /// Realm Crafter's instance fields.
    pub cx: InstanceCx,
    /// Its wait.
    pub wait: SavedWait,
}

/// A player's scripts as they travel in `ActorState::scripts` (rmp-serde).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ScriptBundle {
    /// Format version ([`BUNDLE_VERSION`]).
    pub version: u32,
    /// The instances, in creation order.
    pub instances: Vec<SavedInstance>,
}

/// The current [`ScriptBundle`] format.
pub const BUNDLE_VERSION: u32 = 1;
