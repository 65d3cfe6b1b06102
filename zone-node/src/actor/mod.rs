//! The thin actix shell around [`ZoneSim`](crate::sim::ZoneSim): one [`ZoneActor`] per
//! AreaInstance, spread over the node's arbiters, and the [`Registry`] that creates,
//! stops, routes to and supervises them.
//!
//! Data flow: the link (or a test) calls `Registry` methods, which push [`ZoneInput`]s
//! into the target instance's [`Inbox`] (a mutex-guarded vector, no actor message per
//! packet). Each `ZoneActor` drains its inbox into `tick` on a fixed step and routes the
//! [`TickOutput`](crate::sim::TickOutput): frames and snapshots to the outbound channel
//! (the link), node-local transfers into the destination's inbox.

pub mod convert;
pub mod decode;
pub mod inbox;
pub mod schedule;
pub mod transfers;
pub mod watchdog;
pub mod zone;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix::{Actor, Addr, ArbiterHandle};
use dashmap::DashMap;
use shared::content::World;
use shared::internal::fanout::Broadcast;
use shared::internal::{
    ArrivalDto, Envelope, ErrorCode, Generation, GroundItemDto, InstanceKey, MAX_SCRIPT_FILE, Msg,
    RunningInstance, SUPER_GLOBALS, ScriptStoreOp, ScriptStoreResult, SessionId, TransferDto,
};

use crate::sim::events::{
    AccountAction, ActorState, Arrival, PlayerAction, PlayerKey, Rejection, TransferId,
    TransferOut, ZoneInput,
};
use crate::sim::state::GroundConfig;
use crate::sim::{ZoneConfig, ZoneContent};

pub use zone::{InstanceStats, ZoneActor};

/// The broadcast groups of an instance (`ZoneConfig::broadcast_groups`): one per tick of
/// the broadcast interval, so the interval's ticks each send to one group.
pub fn broadcast_groups(broadcast_ms: u64, tick_ms: u64) -> u32 {
    u32::try_from(broadcast_ms / tick_ms.max(1))
        .unwrap_or(u32::MAX)
        .clamp(1, ZoneConfig::MAX_BROADCAST_GROUPS)
}

/// Something for the link to send.
#[derive(Debug)]
pub enum Outbound {
    /// A control message.
    Msg(Msg),
    /// A control message with its trace context (a handoff's messages).
    Envelope(Envelope),
    /// One instance's position broadcast (one tick's broadcast groups), best effort:
    /// stale, and shed by the link, once the instance has queued `groups` newer ones
    /// (`latest` ≥ `seq + groups`). The groups take turns in order, so by then every
    /// player in this one has a newer datagram queued.
    Broadcast {
        /// The instance's broadcast counter: the `seq` of its newest queued broadcast.
        latest: Arc<AtomicU64>,
        /// This broadcast's number.
        seq: u64,
        /// The instance's broadcast groups (`ZoneConfig::broadcast_groups`).
        groups: u64,
        /// The broadcast.
        broadcast: Broadcast,
    },
}

impl Outbound {
    /// Whether this is a broadcast whose players all have a newer one queued behind it.
    pub fn is_stale(&self) -> bool {
        match self {
            Self::Broadcast {
                latest,
                seq,
                groups,
                ..
            } => latest.load(Ordering::Relaxed) >= seq.saturating_add((*groups).max(1)),
            _ => false,
        }
    }
}

/// Where zone actors send what the link must carry.
pub type OutboundTx = tokio::sync::mpsc::UnboundedSender<Outbound>;

/// An instance's input queue, filled from any thread, drained by its actor each tick;
/// what players send is bounded per player and in total ([`inbox::InboxLimits`]).
pub type Inbox = Mutex<inbox::InboxQueue>;

/// Every family of the node's counters ([`Metrics`]) and its help; `rc_zone_rejections_total`
/// (one series per [`Rejection`]) is rendered from [`Metrics::rejections`].
pub const FAMILIES: &[(&str, &str)] = &[
    ("rc_zone_ticks_total", "Zone ticks run."),
    ("rc_zone_late_ticks_total", "Ticks run late (catch-up)."),
    ("rc_zone_overruns_total", "Stalls past the catch-up budget."),
    ("rc_zone_panics_total", "Panics caught inside a tick."),
    ("rc_zone_restarts_total", "Instances rebuilt after a panic."),
    (
        "rc_zone_refused_messages_total",
        "Internal messages refused.",
    ),
    (
        "rc_zone_bad_client_input_total",
        "Client frames or datagrams the zone could not use.",
    ),
    (
        "rc_zone_datagrams_unroutable_total",
        "Client datagrams for sessions this node does not host (dropped).",
    ),
    (
        "rc_zone_local_handoffs_total",
        "Handoffs between two instances of this node.",
    ),
    (
        "rc_zone_remote_handoffs_total",
        "Handoffs from other nodes committed here.",
    ),
    (
        "rc_zone_handoffs_expired_total",
        "Prepared handoff arrivals dropped because no commit or abort came in time.",
    ),
    (
        "rc_zone_stale_generation_total",
        "Messages refused for naming an older placement generation.",
    ),
    (
        "rc_zone_outbound_dropped_total",
        "Messages not sent to the gateway: its link was down, a position broadcast was stale (a newer one of its instance was queued), or a message did not encode.",
    ),
    (
        "rc_zone_snapshots_superseded_total",
        "Unacknowledged periodic snapshots forgotten while the gateway was away, because a newer one saves the same characters.",
    ),
    (
        "rc_zone_script_store_requests_total",
        "Requests of the zones' scripts to the cluster's script store (files, super globals, zone instances).",
    ),
    (
        "rc_zone_script_store_errors_total",
        "Script store requests answered with an error by the node (link down, no answer in time).",
    ),
    (
        "rc_zone_script_errors_total",
        "Scripts ended by a runtime error (division by zero, a command not supported yet, End, ...).",
    ),
    (
        "rc_zone_script_runaways_total",
        "Scripts ended for running past their instruction budget phase after phase.",
    ),
    (
        "rc_zone_script_restore_failures_total",
        "Saved scripts (a handoff, a login) that could not resume here: the script changed or is missing.",
    ),
    (
        "rc_zone_snapshot_groups_total",
        "Atomic checkpoint groups sent (SnapshotGroup: players saved together, the ground items).",
    ),
    (
        "rc_zone_snapshot_group_entries_total",
        "Character snapshots sent inside checkpoint groups.",
    ),
    (
        "rc_zone_inbox_refused_total",
        "Player inputs dropped because the instance's inbox held inbox_per_player of that player's, or inbox_total of all players', since the last tick.",
    ),
    (
        "rc_zone_snapshots_resent_total",
        "Snapshots sent again because the gateway had not acknowledged them within snapshot_resend_ms (it acknowledges only what it stored).",
    ),
    (
        "rc_zone_stuck_instances_total",
        "Times an instance went without a completed tick for longer than stuck_tick_ms (the tick watchdog).",
    ),
    (
        "rc_zone_instances_given_up_total",
        "Instances the tick watchdog gave up (stuck past give_up_tick_ms): dropped here, re-placed by the gateway.",
    ),
];

shared::counters! {
    /// Node-wide counters (monotonic), one per series of a family in [`FAMILIES`].
    pub struct Metrics {
        /// Ticks run, all instances.
        ticks => "rc_zone_ticks_total";
        /// Ticks that ran late (catch-up).
        late_ticks => "rc_zone_late_ticks_total";
        /// Stalls longer than the catch-up budget (re-baselined; ticks skipped).
        overruns => "rc_zone_overruns_total";
        /// Panics caught inside a tick.
        panics => "rc_zone_panics_total";
        /// Instances rebuilt after a panic.
        restarts => "rc_zone_restarts_total";
        /// Internal messages that did not decode, or were refused (unauthenticated, unexpected).
        refused_msgs => "rc_zone_refused_messages_total";
        /// Client frames or datagrams the zone could not use.
        bad_client_input => "rc_zone_bad_client_input_total";
        /// Datagrams for unknown sessions.
        unroutable => "rc_zone_datagrams_unroutable_total";
        /// Transfers between two local instances completed.
        local_transfers => "rc_zone_local_handoffs_total";
        /// Transfers from other nodes committed here.
        remote_transfers => "rc_zone_remote_handoffs_total";
        /// Prepared arrivals dropped because no commit or abort came in time.
        transfers_expired => "rc_zone_handoffs_expired_total";
        /// Messages refused because they named an older placement generation (fencing).
        stale => "rc_zone_stale_generation_total";
        /// Outbound messages dropped because the link was closed.
        outbound_dropped => "rc_zone_outbound_dropped_total";
        /// Unacknowledged periodic snapshots forgotten because a newer one saves the same
        /// characters (the gateway was away).
        snapshots_superseded => "rc_zone_snapshots_superseded_total";
        /// Requests the zones sent to the cluster's script store (files, super globals,
        /// instances).
        script_store_requests => "rc_zone_script_store_requests_total";
        /// Script store requests answered with an error by this node: the link was down, or
        /// the gateway did not answer within [`SCRIPT_STORE_TIMEOUT`].
        script_store_errors => "rc_zone_script_store_errors_total";
        /// Scripts ended by a runtime error.
        script_errors => "rc_zone_script_errors_total";
        /// Scripts ended for running past their budget tick after tick.
        script_runaways => "rc_zone_script_runaways_total";
        /// Saved scripts that could not resume on this node (changed or missing scripts).
        script_restore_failures => "rc_zone_script_restore_failures_total";
        /// Atomic checkpoint groups sent (`SnapshotGroup`: entangled players, the ground).
        snapshot_groups => "rc_zone_snapshot_groups_total";
        /// Character snapshots sent inside those groups.
        snapshot_group_entries => "rc_zone_snapshot_group_entries_total";
        /// Player inputs dropped: the player had `inbox_per_player` queued.
        inbox_refused_player => "rc_zone_inbox_refused_total" ["limit" = "player"];
        /// Player inputs dropped: the instance had `inbox_total` queued.
        inbox_refused_total => "rc_zone_inbox_refused_total" ["limit" = "total"];
        /// Snapshots sent again, unacknowledged past `snapshot_resend_ms`.
        snapshots_resent => "rc_zone_snapshots_resent_total";
        /// Instances found stuck by the tick watchdog (each time one becomes stuck).
        stuck_instances => "rc_zone_stuck_instances_total";
        /// Instances the tick watchdog gave up.
        given_up => "rc_zone_instances_given_up_total";
    }
    extra {
        /// Sim rejections by reason (index `Rejection as usize`, one per `Rejected` output).
        rejections: [AtomicU64; Rejection::COUNT],
    }
}

impl Metrics {
    /// Read a counter.
    pub fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }

    pub(crate) fn inc(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    /// Count one sim rejection of this reason.
    pub(crate) fn rejected(&self, reason: Rejection) {
        if let Some(c) = self.rejections.get(reason as usize) {
            Self::inc(c);
        }
    }

    /// Sim rejections of one reason so far.
    pub fn rejections_of(&self, reason: Rejection) -> u64 {
        self.rejections.get(reason as usize).map_or(0, Self::get)
    }
}

/// A live instance.
#[derive(Clone)]
pub struct InstanceHandle {
    /// Generation it was assigned with.
    pub generation: Generation,
    /// Its inbox.
    pub inbox: Arc<Inbox>,
    /// Its actor.
    pub addr: Addr<ZoneActor>,
    /// Asked to stop: it saves its players and goes ([`Registry::stop`]).
    pub stopping: bool,
    /// A newer generation assigned while it was stopping: a fresh instance, started once
    /// this one has stopped (with the ground items of the assignment).
    pub then: Option<(Generation, Vec<GroundItemDto>)>,
    /// The id of the arbiter (thread) it runs on (see [`Registry::give_up`]).
    pub arbiter: u64,
    /// When it last completed a tick ([`Registry::now_ms`]), stored by its actor.
    pub last_tick: Arc<AtomicU64>,
    /// Set when the watchdog gives it up: its actor sends nothing more and stops.
    pub fenced: Arc<AtomicBool>,
}

/// How long a zone's script waits for the script store before it is answered with an
/// error (the gateway answers in milliseconds; this only bounds a lost answer).
pub const SCRIPT_STORE_TIMEOUT: Duration = Duration::from_secs(10);

/// What a zone's scripts are told when the script store cannot answer.
pub const STORE_UNAVAILABLE: &str = "script store unavailable";

/// A zone's script store request in flight, by the node-unique id sent to the gateway.
#[derive(Clone, Debug)]
struct StoreWait {
    /// The asking instance.
    key: InstanceKey,
    /// The zone's own request id (what its `ScriptStoreReply` must name).
    req: u64,
    /// When it is answered with an error if the gateway has not answered.
    deadline: Instant,
}

/// Why a registry request was refused.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum RegistryError {
    /// The node is draining.
    #[error("the node is draining")]
    Draining,
    /// No such instance here.
    #[error("instance {0} is not hosted here")]
    UnknownInstance(InstanceKey),
    /// The request names an older generation.
    #[error("instance {key} has generation {have}, request names {got}")]
    StaleGeneration {
        /// Which.
        key: InstanceKey,
        /// Ours.
        have: Generation,
        /// The request's.
        got: Generation,
    },
    /// No such area in the world.
    #[error("area {0:?} does not exist in the loaded world")]
    UnknownArea(String),
    /// Capacity reached.
    #[error("capacity of {0} instances reached")]
    Full(u32),
    /// The session is not hosted here.
    #[error("session {0} is not hosted here")]
    UnknownSession(SessionId),
    /// The session is already hosted here.
    #[error("session {0} is already hosted here")]
    DuplicateSession(SessionId),
    /// A transfer id already in progress here.
    #[error("transfer {0} is already in progress here")]
    DuplicateTransfer(TransferId),
}

impl RegistryError {
    /// The wire error code.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Draining => ErrorCode::Draining,
            Self::UnknownInstance(_) | Self::UnknownArea(_) | Self::Full(_) => {
                ErrorCode::UnknownInstance
            }
            Self::StaleGeneration { .. } => ErrorCode::StaleGeneration,
            Self::UnknownSession(_) | Self::DuplicateSession(_) => ErrorCode::UnknownSession,
            Self::DuplicateTransfer(_) => ErrorCode::Unexpected,
        }
    }
}

/// Settings the registry gives every instance.
#[derive(Clone, Debug)]
pub struct ShellConfig {
    /// Node id (for spans).
    pub node_id: String,
    /// Tick period, ms.
    pub tick_ms: u64,
    /// Broadcast period, ms.
    pub broadcast_ms: u64,
    /// Catch-up budget.
    pub max_catch_up: u32,
    /// Periodic snapshot period, ms.
    pub persist_every_ms: u64,
    /// Capacity in instances.
    pub capacity: u32,
    /// Position datagram budget (bytes, without the internal header).
    pub datagram_budget: usize,
    /// One tick in this many gets a `zone.tick` span (0: none).
    pub trace_tick_every: u32,
    /// Items on the ground: lifetime, cap, pickup reach.
    pub ground: GroundConfig,
    /// Player inputs an instance's inbox holds between ticks.
    pub inbox: inbox::InboxLimits,
    /// `scripts_per_actor` and `scripts_per_zone` of every zone.
    pub scripts: (u32, u32),
}

/// The node's instance directory and router; shared (`Arc`) by the link and every actor.
pub struct Registry {
    cfg: ShellConfig,
    world: Arc<World>,
    /// The world's compiled scripts, shared by every zone.
    scripts: Arc<script::bytecode::ScriptSet>,
    out: OutboundTx,
    /// The arbiters instances are placed on, each with an id; one the watchdog found
    /// stuck is replaced by a fresh one ([`Registry::give_up`]).
    arbiters: Mutex<Vec<(u64, ArbiterHandle)>>,
    next_arbiter: AtomicUsize,
    next_arbiter_id: AtomicU64,
    /// The time base of the instances' `last_tick` ([`Registry::now_ms`]).
    epoch: Instant,
    /// The tick watchdog ([`watchdog::Watchdog`], pure).
    watchdog: Mutex<watchdog::Watchdog>,
    instances: DashMap<InstanceKey, InstanceHandle>,
    sessions: DashMap<SessionId, InstanceKey>,
    /// Every handoff this node takes part in ([`transfers::TransferTable`], pure; its
    /// context is the transfer's span). Held only while an event is decided; the effects
    /// are carried out after.
    transfers: Mutex<transfers::TransferTable<tracing::Span>>,
    /// The trace context of a `WarpPlayer` (the gateway's `/warpother`) until the
    /// player's SetArea starts: its handoff joins that trace.
    warps: DashMap<SessionId, opentelemetry::Context>,
    next_id: AtomicU64,
    /// The id block of the current registration and the next minter number in it: every
    /// zone sim created (a rebuild included) mints its transfer ids as its own minter
    /// ([`shared::internal::TransferId`]).
    minters: Mutex<(u64, u32)>,
    draining: AtomicBool,
    /// Script store requests waiting for the gateway's answer, by the id sent.
    store_waits: DashMap<u64, StoreWait>,
    /// The cluster's super globals (slot → value; empty slots absent), as the gateway
    /// last said. Held while an instance is created, so a new zone gets every value
    /// before its first tick and misses no change.
    superglobals: Mutex<BTreeMap<u8, Vec<u8>>>,
    /// The cluster's game clock epoch (Unix ms) as the gateway last said; 0 = unknown.
    clock_epoch_ms: AtomicU64,
    /// Counters.
    pub metrics: Metrics,
    stats: DashMap<InstanceKey, InstanceStats>,
}

impl Registry {
    /// A registry placing instances round-robin over `arbiters` (at least one).
    pub fn new(
        cfg: ShellConfig,
        world: Arc<World>,
        out: OutboundTx,
        arbiters: Vec<ArbiterHandle>,
    ) -> Arc<Self> {
        let scripts = crate::world_scripts::compile_and_log(&world);
        Arc::new(Self {
            cfg,
            world,
            scripts,
            out,
            next_arbiter_id: AtomicU64::new(u64::try_from(arbiters.len()).unwrap_or(u64::MAX)),
            arbiters: Mutex::new((0u64..).zip(arbiters).collect()),
            next_arbiter: AtomicUsize::new(0),
            epoch: Instant::now(),
            watchdog: Mutex::new(watchdog::Watchdog::default()),
            instances: DashMap::new(),
            sessions: DashMap::new(),
            transfers: Mutex::new(transfers::TransferTable::new()),
            warps: DashMap::new(),
            // Random start: ids stay unique across restarts of this node.
            next_id: AtomicU64::new((ops::random::u64() >> 16).max(1)),
            minters: Mutex::new((0, 1)),
            draining: AtomicBool::new(false),
            store_waits: DashMap::new(),
            superglobals: Mutex::new(BTreeMap::new()),
            clock_epoch_ms: AtomicU64::new(0),
            metrics: Metrics::default(),
            stats: DashMap::new(),
        })
    }

    /// Shell settings.
    pub fn config(&self) -> &ShellConfig {
        &self.cfg
    }

    /// Queue an instance's position broadcast; `latest` is the instance's own counter and
    /// `groups` its broadcast groups (see [`Outbound::Broadcast`]).
    pub fn send_broadcast(&self, latest: &Arc<AtomicU64>, groups: u32, broadcast: Broadcast) {
        let seq = latest.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        let o = Outbound::Broadcast {
            latest: latest.clone(),
            seq,
            groups: u64::from(groups),
            broadcast,
        };
        if self.out.send(o).is_err() {
            Metrics::inc(&self.metrics.outbound_dropped);
        }
    }

    /// Queue a message for the link (dropped and counted when the link is gone).
    pub fn send(&self, msg: Msg) {
        if self.out.send(Outbound::Msg(msg)).is_err() {
            Metrics::inc(&self.metrics.outbound_dropped);
        }
    }

    /// Queue a message carrying `span`'s trace context (when it is exported).
    pub fn send_traced(&self, msg: Msg, span: &tracing::Span) {
        let env = crate::telemetry::envelope(msg, span);
        let o = if env.trace.is_empty() {
            Outbound::Msg(env.msg)
        } else {
            Outbound::Envelope(env)
        };
        if self.out.send(o).is_err() {
            Metrics::inc(&self.metrics.outbound_dropped);
        }
    }

    /// A node-unique id (transfers, snapshots).
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// A minter of its own for a new zone sim: `(block, minter)`.
    pub fn next_minter(&self) -> (u64, u32) {
        let mut m = match self.minters.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let got = *m;
        m.1 = m.1.checked_add(1).unwrap_or(1);
        got
    }

    /// The gateway's id block for this registration (`TransferIds`): sims created from now
    /// on mint their transfer ids in it. Running sims keep theirs (a block is never handed
    /// out twice, so their ids stay unique).
    pub fn set_transfer_block(&self, block: u64) {
        let mut m = match self.minters.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        if m.0 != block {
            *m = (block, 1);
        }
    }

    /// Whether the node is draining.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Relaxed)
    }

    /// Stop taking players and instances.
    pub fn set_draining(&self) {
        self.draining.store(true, Ordering::Relaxed);
    }

    /// Instances hosted.
    pub fn instance_count(&self) -> usize {
        self.instances.len()
    }

    /// Sessions hosted.
    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }

    /// Per-instance figures for the heartbeat: every hosted instance (one that has not
    /// completed a tick yet too), with its tick age now.
    pub fn loads(&self) -> Vec<shared::internal::InstanceLoad> {
        let now = self.now_ms();
        let stuck = self.lock_watchdog().stuck();
        let mut v: Vec<shared::internal::InstanceLoad> = self
            .instances
            .iter()
            .map(|h| {
                let key = h.key().clone();
                let tick_age_ms = now.saturating_sub(h.last_tick.load(Ordering::Relaxed));
                let (players, actors, tick_p99_us) = self
                    .stats
                    .get(&key)
                    .map_or((0, 0, 0), |s| (s.players, s.actors, s.tick_p99_us));
                shared::internal::InstanceLoad {
                    stuck: stuck.contains(&key),
                    key,
                    players,
                    npcs: actors.saturating_sub(players),
                    tick_p99_us,
                    tick_age_ms,
                }
            })
            .collect();
        v.sort_by(|a, b| a.key.cmp(&b.key));
        v
    }

    // ----- the tick watchdog -------------------------------------------------------------

    /// Milliseconds since the registry was made: the time base of every instance's
    /// `last_tick`.
    pub fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn lock_watchdog(&self) -> std::sync::MutexGuard<'_, watchdog::Watchdog> {
        match self.watchdog.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// The watchdog's thresholds (the node's `stuck_tick_ms`, `give_up_tick_ms`); the
    /// instances it holds stuck are forgotten.
    pub fn set_watchdog(&self, thresholds: watchdog::Thresholds) {
        *self.lock_watchdog() = watchdog::Watchdog::new(thresholds);
    }

    /// Every hosted instance's tick age (ms since it last completed a tick), key order.
    pub fn tick_ages(&self) -> Vec<(InstanceKey, u64)> {
        let now = self.now_ms();
        let mut v: Vec<(InstanceKey, u64)> = self
            .instances
            .iter()
            .map(|h| {
                let age = now.saturating_sub(h.last_tick.load(Ordering::Relaxed));
                (h.key().clone(), age)
            })
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// Whether the node takes new players: not draining, and no instance stuck (the
    /// node's `/readyz`).
    pub fn is_ready(&self) -> bool {
        !self.is_draining() && self.lock_watchdog().ready()
    }

    /// The instances the watchdog holds stuck (not yet given up), key order.
    pub fn stuck_instances(&self) -> Vec<InstanceKey> {
        self.lock_watchdog().stuck()
    }

    /// One look of the tick watchdog (the node runs it a few times a second, off the zone
    /// arbiters): logs and counts newly stuck instances, and gives up those stuck past
    /// `give_up_tick_ms` ([`Registry::give_up`]). Returns the verdicts.
    pub fn watchdog_check(self: &Arc<Self>) -> Vec<watchdog::Verdict> {
        let now = self.now_ms();
        let seen: Vec<watchdog::Observed> = self
            .instances
            .iter()
            .map(|h| watchdog::Observed {
                key: h.key().clone(),
                generation: h.generation,
                age_ms: now.saturating_sub(h.last_tick.load(Ordering::Relaxed)),
            })
            .collect();
        let (verdicts, t) = {
            let mut w = self.lock_watchdog();
            (w.check(&seen), w.thresholds())
        };
        for v in &verdicts {
            match v {
                watchdog::Verdict::Stuck { key, age_ms } => {
                    Metrics::inc(&self.metrics.stuck_instances);
                    tracing::error!(node = %self.cfg.node_id, instance = %key, age_ms,
                        stuck_tick_ms = t.stuck_ms,
                        "instance stuck: no tick completed; the node is not ready");
                }
                watchdog::Verdict::Recovered { key, age_ms } => {
                    tracing::warn!(node = %self.cfg.node_id, instance = %key, age_ms,
                        "stuck instance ticks again");
                }
                watchdog::Verdict::GiveUp {
                    key,
                    generation,
                    age_ms,
                } => {
                    tracing::error!(node = %self.cfg.node_id, instance = %key, generation,
                        age_ms, give_up_tick_ms = t.give_up_ms,
                        "instance stuck too long: giving it up (the gateway re-places it)");
                    self.give_up(key, *generation);
                }
            }
        }
        verdicts
    }

    /// Give an instance up (the watchdog's verdict): the registry forgets it and its
    /// sessions (no input reaches it any more), fences its actor (whatever it still
    /// produces is dropped; it stops if it ever runs again), replaces its arbiter with a
    /// fresh one for new instances (a stuck OS thread cannot be killed), and tells the
    /// gateway (`InstanceGivenUp`), which re-places it and puts its players back from their
    /// last saves with new fencing tokens. Other instances keep running. Returns whether it
    /// was hosted at that generation.
    pub fn give_up(self: &Arc<Self>, key: &InstanceKey, generation: Generation) -> bool {
        let Some((_, h)) = self
            .instances
            .remove_if(key, |_, h| h.generation == generation)
        else {
            return false;
        };
        h.fenced.store(true, Ordering::Relaxed);
        Metrics::inc(&self.metrics.given_up);
        let mut sessions: Vec<SessionId> = self
            .sessions
            .iter()
            .filter(|s| s.value() == key)
            .map(|s| *s.key())
            .collect();
        sessions.sort_unstable();
        for s in &sessions {
            self.sessions.remove_if(s, |_, k| k == key);
            self.warps.remove(s);
        }
        self.stats.remove(key);
        // Handoffs into or out of it end with it, as for a stopped instance.
        let effects = self.lock_transfers().instance_stopped(key);
        self.apply(effects);
        self.replace_arbiter(h.arbiter);
        self.send(Msg::InstanceGivenUp {
            key: key.clone(),
            generation,
            sessions,
        });
        // A newer generation assigned while it was stopping starts now, as it would have
        // once the old copy stopped (on a healthy arbiter).
        if let Some((newer, ground)) = h.then
            && let Err(e) = self.assign_with_ground(key.clone(), newer, ground)
        {
            tracing::warn!(node = %self.cfg.node_id, instance = %key, generation = newer,
                error = %e, "the generation assigned while stopping could not start");
        }
        true
    }

    /// A fresh arbiter in place of `id` (stuck); nothing when there is no actix system on
    /// this thread to start one in (then `id` stays, skipped while it hosts a stuck
    /// instance). The old thread is left alone: it cannot be killed, and instances still on
    /// it either tick again or are given up in their turn.
    fn replace_arbiter(&self, id: u64) {
        if actix::System::try_current().is_none() {
            return;
        }
        let mut slots = match self.arbiters.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        if let Some(slot) = slots.iter_mut().find(|(i, _)| *i == id) {
            let fresh = self.next_arbiter_id.fetch_add(1, Ordering::Relaxed);
            // The handle is all the registry keeps: the thread lives until it is stopped
            // ([`Registry::stop_arbiters`]).
            let arbiter = actix::Arbiter::new();
            *slot = (fresh, arbiter.handle());
            tracing::warn!(node = %self.cfg.node_id, stuck = id, fresh, "arbiter replaced");
        }
    }

    /// The arbiter for a new instance: round-robin over those that host no stuck instance
    /// (`None`: no arbiters, the caller's own).
    fn pick_arbiter(&self) -> Option<(u64, ArbiterHandle)> {
        let stuck = self.stuck_instances();
        let bad: Vec<u64> = stuck
            .iter()
            .filter_map(|k| self.instances.get(k).map(|h| h.arbiter))
            .collect();
        let slots = match self.arbiters.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let n = slots.len();
        if n == 0 {
            return None;
        }
        let start = self.next_arbiter.fetch_add(1, Ordering::Relaxed) % n;
        (0..n)
            .filter_map(|j| slots.get((start + j) % n))
            .find(|(id, _)| !bad.contains(id))
            .or_else(|| slots.get(start))
            .cloned()
    }

    /// Stop every arbiter of the registry (the node's shutdown; those it started in place
    /// of stuck ones too).
    pub fn stop_arbiters(&self) {
        let slots = match self.arbiters.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        for (_, a) in slots.iter() {
            a.stop();
        }
    }

    /// The generation an instance's own copy writes its checkpoints under: the registry's,
    /// unless the copy was given up (`fenced`), whose writes name no generation (0) so the
    /// gateway refuses them even if a newer copy of the key runs here.
    pub(crate) fn generation_of_copy(&self, key: &InstanceKey, fenced: &AtomicBool) -> Generation {
        if fenced.load(Ordering::Relaxed) {
            return 0;
        }
        self.generation_of(key)
    }

    /// Move a hosted player to another AreaInstance (`Msg::WarpPlayer`, the gateway's
    /// `/warpother`).
    pub fn warp(
        &self,
        session: SessionId,
        area: String,
        instance: u16,
    ) -> Result<(), RegistryError> {
        let key = self
            .session_instance(session)
            .ok_or(RegistryError::UnknownSession(session))?;
        {
            use opentelemetry::trace::TraceContextExt as _;
            use tracing_opentelemetry::OpenTelemetrySpanExt as _;
            let cx = tracing::Span::current().context();
            if cx.span().span_context().is_valid() {
                if self.warps.len() >= 4096 {
                    self.warps.clear();
                }
                self.warps.insert(session, cx);
            }
        }
        self.push(
            &key,
            ZoneInput::Warp {
                player: PlayerKey(session),
                area,
                instance,
            },
        );
        Ok(())
    }

    /// The instance a session is in.
    pub fn session_instance(&self, session: SessionId) -> Option<InstanceKey> {
        self.sessions.get(&session).map(|k| k.clone())
    }

    /// Latest per-instance statistics.
    pub fn instance_stats(&self, key: &InstanceKey) -> Option<InstanceStats> {
        self.stats.get(key).map(|s| s.clone())
    }

    /// Every instance's latest statistics, in key order.
    pub fn all_stats(&self) -> Vec<(InstanceKey, InstanceStats)> {
        let mut v: Vec<_> = self
            .stats
            .iter()
            .map(|e| (e.key().clone(), e.value().clone()))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    pub(crate) fn publish_stats(&self, key: &InstanceKey, s: InstanceStats) {
        self.stats.insert(key.clone(), s);
    }

    /// Handle of an instance.
    pub fn instance(&self, key: &InstanceKey) -> Option<InstanceHandle> {
        self.instances.get(key).map(|h| h.clone())
    }

    /// What this node runs, for (re-)registration.
    pub fn running(&self) -> Vec<RunningInstance> {
        let mut by_key: HashMap<InstanceKey, Vec<SessionId>> = HashMap::new();
        for s in &self.sessions {
            by_key.entry(s.value().clone()).or_default().push(*s.key());
        }
        let mut v: Vec<RunningInstance> = self
            .instances
            .iter()
            .map(|h| {
                let mut sessions = by_key.remove(h.key()).unwrap_or_default();
                sessions.sort_unstable();
                RunningInstance {
                    key: h.key().clone(),
                    generation: h.generation,
                    sessions,
                }
            })
            .collect();
        v.sort_by(|a, b| a.key.cmp(&b.key));
        v
    }

    fn push(&self, key: &InstanceKey, input: ZoneInput) -> bool {
        let Some(h) = self.instances.get(key) else {
            return false;
        };
        let kick = crate::sim::ingest::is_handoff(&input);
        match h.inbox.lock() {
            Ok(mut q) => q.push(input),
            Err(poisoned) => poisoned.into_inner().push(input),
        }
        if kick {
            // Handoff messages are applied at once, not at the next tick.
            h.addr.do_send(zone::Kick);
        }
        true
    }

    /// Create an instance (idempotent for the same generation; a newer generation of a
    /// running instance just adopts the new number; one that is stopping is started
    /// afresh once it has stopped).
    pub fn assign(
        self: &Arc<Self>,
        key: InstanceKey,
        generation: Generation,
    ) -> Result<(), RegistryError> {
        self.assign_with_ground(key, generation, Vec::new())
    }

    /// The cluster's game clock epoch (Unix ms), from the gateway's `AssignInstance`; the
    /// zones created after it read the clock from it (0 is ignored).
    pub fn set_clock_epoch(&self, epoch_ms: u64) {
        if epoch_ms != 0 {
            self.clock_epoch_ms.store(epoch_ms, Ordering::Relaxed);
        }
    }

    /// [`Registry::assign`] with the ground items the instance's last checkpoint saved: a
    /// new instance starts with them (an item this world does not know is skipped with a
    /// warning); a running one keeps its own.
    pub fn assign_with_ground(
        self: &Arc<Self>,
        key: InstanceKey,
        generation: Generation,
        ground: Vec<GroundItemDto>,
    ) -> Result<(), RegistryError> {
        if self.is_draining() {
            return Err(RegistryError::Draining);
        }
        if let Some(mut h) = self.instances.get_mut(&key) {
            if h.stopping {
                // The copy being stopped keeps its number (its `InstanceStopped` names
                // it, and its players' saves are its own): the new generation is a new
                // instance, once it is gone.
                if generation > h.generation {
                    tracing::info!(node = %self.cfg.node_id, instance = %key, generation,
                        stopping = h.generation, "assigned while stopping: starts once stopped");
                    h.then = Some((generation, ground));
                }
                return Ok(());
            }
            if generation < h.generation {
                return Err(RegistryError::StaleGeneration {
                    key,
                    have: h.generation,
                    got: generation,
                });
            }
            h.generation = generation;
            return Ok(());
        }
        if self.instances.len() >= self.cfg.capacity as usize {
            return Err(RegistryError::Full(self.cfg.capacity));
        }
        let mut content = ZoneContent::from_world(self.world.clone(), &key.area)
            .ok_or_else(|| RegistryError::UnknownArea(key.area.clone()))?;
        content.scripts = self.scripts.clone();
        let content = Arc::new(content);
        let (npc_handle_base, npc_handle_span) =
            crate::world_scripts::npc_handles(&self.world, &key.area, key.instance);
        let epoch_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(0));
        let (transfer_block, transfer_minter) = self.next_minter();
        let zcfg = ZoneConfig {
            npc_handle_base,
            npc_handle_span,
            epoch_ms,
            clock_epoch_ms: self.clock_epoch_ms.load(Ordering::Relaxed),
            transfer_block,
            transfer_minter,
            instance: key.instance,
            instance_handle: instance_handle(&key),
            seed: seed_for(&key, generation),
            broadcast_ms: self.cfg.broadcast_ms,
            broadcast_groups: broadcast_groups(self.cfg.broadcast_ms, self.cfg.tick_ms),
            persist_every_ms: self.cfg.persist_every_ms,
            datagram_budget: self.cfg.datagram_budget,
            ground: self.cfg.ground,
            scripts_per_actor: self.cfg.scripts.0,
            scripts_per_zone: self.cfg.scripts.1,
            ..ZoneConfig::default()
        };
        // Every super global first, then changes as they come: the lock is held until the
        // instance is listed, so a change either is in this copy or finds the instance.
        let ground = self.known_ground(&key, ground);
        let globals = self.lock_superglobals();
        let mut first = superglobal_inputs(&globals);
        if !ground.is_empty() {
            first.push(ZoneInput::RestoreGround {
                items: ground.clone(),
            });
        }
        let inbox: Arc<Inbox> = Arc::new(Mutex::new(inbox::InboxQueue::with(first)));
        let picked = self.pick_arbiter();
        let i = picked.as_ref().map_or(0, |(id, _)| *id);
        let last_tick = Arc::new(AtomicU64::new(self.now_ms()));
        let fenced = Arc::new(AtomicBool::new(false));
        let reg = self.clone();
        let (k2, ib2) = (key.clone(), inbox.clone());
        let watch = (last_tick.clone(), fenced.clone());
        let make = move |_: &mut actix::Context<ZoneActor>| {
            ZoneActor::new(reg, k2, generation, ib2, zcfg, content, ground, watch)
        };
        let addr = match &picked {
            Some((_, arb)) => ZoneActor::start_in_arbiter(arb, make),
            None => ZoneActor::create(make),
        };
        self.instances.insert(
            key.clone(),
            InstanceHandle {
                generation,
                inbox,
                addr,
                stopping: false,
                then: None,
                arbiter: i,
                last_tick,
                fenced,
            },
        );
        drop(globals);
        tracing::info!(node = %self.cfg.node_id, instance = %key, generation, arbiter = i, "instance assigned");
        self.send(Msg::InstanceReady { key, generation });
        Ok(())
    }

    /// The stored ground items this world knows; the others are skipped with a warning
    /// (bad stored data never refuses an instance).
    fn known_ground(&self, key: &InstanceKey, ground: Vec<GroundItemDto>) -> Vec<GroundItemDto> {
        let n = ground.len();
        let known: Vec<GroundItemDto> = ground
            .into_iter()
            .filter(|g| g.item.amount > 0 && self.world.item(g.item.item).is_some())
            .collect();
        if known.len() < n {
            tracing::warn!(instance = %key, skipped = n - known.len(),
                "stored ground items of unknown items (or empty stacks) skipped");
        }
        known
    }

    /// The generation this node runs an instance at (0 when it does not).
    pub fn generation_of(&self, key: &InstanceKey) -> Generation {
        self.instances.get(key).map_or(0, |h| h.generation)
    }

    /// Save the instance's players and stop it (fenced by generation).
    pub fn stop(&self, key: &InstanceKey, generation: Generation) -> Result<(), RegistryError> {
        let mut h = self
            .instances
            .get_mut(key)
            .ok_or_else(|| RegistryError::UnknownInstance(key.clone()))?;
        if generation < h.generation {
            return Err(RegistryError::StaleGeneration {
                key: key.clone(),
                have: h.generation,
                got: generation,
            });
        }
        h.stopping = true;
        h.addr.do_send(zone::Stop);
        Ok(())
    }

    /// Called by an actor once it has flushed its players and stopped.
    pub(crate) fn stopped(self: &Arc<Self>, key: &InstanceKey, inbox: &Arc<Inbox>) {
        // Only this actor's entry (matched by its inbox), whatever generation it adopted.
        // The message is queued before the entry goes, so a drain that sees no instance
        // left finds it in the outbound queue.
        let generation = match self.instances.get(key) {
            Some(h) if Arc::ptr_eq(&h.inbox, inbox) => h.generation,
            _ => return,
        };
        self.send(Msg::InstanceStopped {
            key: key.clone(),
            generation,
        });
        let then = self
            .instances
            .remove_if(key, |_, h| Arc::ptr_eq(&h.inbox, inbox))
            .and_then(|(_, h)| h.then);
        self.stats.remove(key);
        // Handoffs into or out of it that were still open end with it.
        let effects = self.lock_transfers().instance_stopped(key);
        self.apply(effects);
        // A newer generation assigned meanwhile starts now.
        if let Some((generation, ground)) = then
            && let Err(e) = self.assign_with_ground(key.clone(), generation, ground)
        {
            tracing::warn!(node = %self.cfg.node_id, instance = %key, generation, error = %e,
                "the generation assigned while stopping could not start");
        }
    }

    /// A player enters the game in a local instance.
    #[allow(clippy::too_many_arguments)]
    pub fn attach(
        &self,
        session: SessionId,
        key: &InstanceKey,
        generation: Generation,
        rid: u16,
        is_dm: bool,
        state: ActorState,
        arrival: Arrival,
    ) -> Result<(), RegistryError> {
        if self.is_draining() {
            return Err(RegistryError::Draining);
        }
        let h = self
            .instance(key)
            .ok_or_else(|| RegistryError::UnknownInstance(key.clone()))?;
        if generation != h.generation {
            return Err(RegistryError::StaleGeneration {
                key: key.clone(),
                have: h.generation,
                got: generation,
            });
        }
        if self.sessions.contains_key(&session) {
            return Err(RegistryError::DuplicateSession(session));
        }
        self.sessions.insert(session, key.clone());
        self.push(
            key,
            ZoneInput::PlayerJoined {
                player: PlayerKey(session),
                rid,
                is_dm,
                state: Box::new(state),
                arrival,
            },
        );
        Ok(())
    }

    /// The player disconnected: the zone saves it (Snapshot, reason Logout) and removes it.
    pub fn detach(&self, session: SessionId) -> Result<(), RegistryError> {
        let key = self
            .session_instance(session)
            .ok_or(RegistryError::UnknownSession(session))?;
        self.push(
            &key,
            ZoneInput::PlayerLeft {
                player: PlayerKey(session),
            },
        );
        Ok(())
    }

    /// Called by an actor when the sim removed a player: forget the session unless it
    /// has moved to another instance meanwhile.
    pub(crate) fn player_removed(&self, key: &InstanceKey, session: SessionId) {
        if self.sessions.remove_if(&session, |_, k| k == key).is_some() {
            self.warps.remove(&session);
            self.send(Msg::PlayerDetached {
                session,
                key: Some(key.clone()),
            });
        }
    }

    /// The members of a session's party (the gateway's), for its zone's XP split.
    pub fn party_members(
        &self,
        session: SessionId,
        members: Vec<String>,
    ) -> Result<(), RegistryError> {
        let key = self
            .session_instance(session)
            .ok_or(RegistryError::UnknownSession(session))?;
        if self.push(
            &key,
            ZoneInput::PartyMembers {
                player: PlayerKey(session),
                members,
            },
        ) {
            Ok(())
        } else {
            Err(RegistryError::UnknownInstance(key))
        }
    }

    /// Reliable client frames for a session.
    pub fn client_frames(&self, session: SessionId, frames: &[u8]) -> Result<(), RegistryError> {
        let key = self
            .session_instance(session)
            .ok_or(RegistryError::UnknownSession(session))?;
        let Some(h) = self.instance(&key) else {
            return Err(RegistryError::UnknownInstance(key));
        };
        let mut q = match h.inbox.lock() {
            Ok(q) => q,
            Err(p) => p.into_inner(),
        };
        let mut kick = false;
        let limits = self.inbox_limits();
        let (_, bad) = decode::reliable_actions(frames, |action| {
            let handoff = matches!(action, PlayerAction::Warp { .. } | PlayerAction::AreaAck);
            match q.push_player(limits, session, action) {
                Ok(()) => kick |= handoff,
                Err(r) => self.inbox_refused(r),
            }
        });
        drop(q);
        for _ in 0..bad {
            Metrics::inc(&self.metrics.bad_client_input);
        }
        if kick {
            // A `/warp`: its handoff starts now, not at the next tick.
            h.addr.do_send(zone::Kick);
        }
        Ok(())
    }

    /// One internal datagram (`[session][P_StandardUpdate frames]`) from the gateway.
    pub fn client_datagram(&self, datagram: &[u8]) {
        let Some(session) = shared::internal::datagram::peek_session(datagram) else {
            Metrics::inc(&self.metrics.bad_client_input);
            return;
        };
        let frames = shared::internal::datagram::frames(datagram).unwrap_or(&[]);
        let Some(key) = self.sessions.get(&session).map(|k| k.clone()) else {
            Metrics::inc(&self.metrics.unroutable);
            return;
        };
        let Some(h) = self.instances.get(&key).map(|h| h.inbox.clone()) else {
            Metrics::inc(&self.metrics.unroutable);
            return;
        };
        let mut q = match h.lock() {
            Ok(q) => q,
            Err(p) => p.into_inner(),
        };
        let limits = self.inbox_limits();
        let r = decode::datagram_actions(frames, |action: PlayerAction| {
            if let Err(refused) = q.push_player(limits, session, action) {
                self.inbox_refused(refused);
            }
        });
        drop(q);
        if r.is_err() {
            Metrics::inc(&self.metrics.bad_client_input);
        }
    }

    /// How many player inputs an instance's inbox holds between ticks.
    fn inbox_limits(&self) -> inbox::InboxLimits {
        self.cfg.inbox
    }

    /// Count a player input the inbox refused.
    fn inbox_refused(&self, r: inbox::Refused) {
        Metrics::inc(match r {
            inbox::Refused::Player => &self.metrics.inbox_refused_player,
            inbox::Refused::Total => &self.metrics.inbox_refused_total,
        });
    }

    fn lock_transfers(&self) -> std::sync::MutexGuard<'_, transfers::TransferTable<tracing::Span>> {
        match self.transfers.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Carries out the transfer table's effects, in order; `false` when a message did not
    /// go out.
    fn apply(&self, effects: Vec<transfers::Effect<tracing::Span>>) -> bool {
        use transfers::{Count, Effect};
        let mut sent = true;
        for e in effects {
            match e {
                Effect::Push(key, input) => {
                    self.push(&key, input);
                }
                Effect::Send { msg, ctx } => {
                    let o = match &ctx {
                        Some(span) => {
                            let env = crate::telemetry::envelope(msg, span);
                            if env.trace.is_empty() {
                                Outbound::Msg(env.msg)
                            } else {
                                Outbound::Envelope(env)
                            }
                        }
                        None => Outbound::Msg(msg),
                    };
                    if self.out.send(o).is_err() {
                        Metrics::inc(&self.metrics.outbound_dropped);
                        sent = false;
                    }
                }
                Effect::Route { session, to } => {
                    self.sessions.insert(session, to);
                }
                Effect::Unroute { session, from } => {
                    self.sessions.remove_if(&session, |_, k| *k == from);
                }
                Effect::Count(c) => Metrics::inc(match c {
                    Count::Local => &self.metrics.local_transfers,
                    Count::Remote => &self.metrics.remote_transfers,
                    Count::Expired => &self.metrics.transfers_expired,
                    Count::Refused => &self.metrics.refused_msgs,
                }),
                Effect::Outcome(span, outcome) => {
                    span.record("outcome", outcome);
                }
            }
        }
        sent
    }

    /// A local instance's `TransferOut` (SetArea phase one): to the destination instance
    /// when it is here, else to the gateway, which routes it to the destination's node.
    pub(crate) fn route_transfer(&self, source: &InstanceKey, t: &TransferOut) {
        let id = t.transfer_id;
        let dest = InstanceKey {
            area: t.area.clone(),
            instance: t.instance,
        };
        let local = self.instances.contains_key(&dest);
        // The root of the handoff's trace (or a child of the gateway's `/warpother`).
        let span = tracing::info_span!(parent: None, "handoff.source",
            node = %self.cfg.node_id, session = t.player.map(|p| p.0), zone = %source.area,
            instance = source.instance, to_zone = %dest.area, to_instance = dest.instance,
            transfer = %id, local, outcome = tracing::field::Empty);
        if let Some((_, cx)) = t.player.and_then(|p| self.warps.remove(&p.0)) {
            use tracing_opentelemetry::OpenTelemetrySpanExt as _;
            let _ = span.set_parent(cx);
        }
        let effects = self.lock_transfers().start(source.clone(), t, local, span);
        if !self.apply(effects) {
            self.remote_transfer_answer(id, Err("the destination is unreachable".into()));
        }
    }

    /// A transfer from another node arrives (via the gateway): phase one at a local
    /// instance, which must be the generation the gateway placed.
    pub fn transfer_in(&self, t: TransferDto) -> Result<(), RegistryError> {
        use transfers::InRefusal;
        let dest = InstanceKey {
            area: t.area.clone(),
            instance: t.instance,
        };
        let hosted = self.instance(&dest).map(|h| h.generation);
        let (id, generation) = (t.transfer_id, t.generation);
        let refused = |r: InRefusal| match r {
            InRefusal::Draining => RegistryError::Draining,
            InRefusal::UnknownInstance => RegistryError::UnknownInstance(dest.clone()),
            InRefusal::StaleGeneration { have } => {
                Metrics::inc(&self.metrics.stale);
                RegistryError::StaleGeneration {
                    key: dest.clone(),
                    have,
                    got: generation,
                }
            }
            InRefusal::Duplicate => RegistryError::DuplicateTransfer(id),
        };
        let draining = self.is_draining();
        // Checked before the span exists, so a refused transfer leaves no empty span.
        self.lock_transfers()
            .admit(&t, hosted, draining)
            .map_err(refused)?;
        // A child of the message's `internal.recv` span (the gateway's handoff).
        let span = tracing::info_span!("handoff.destination", node = %self.cfg.node_id,
            session = t.session, zone = %dest.area, instance = dest.instance,
            generation = t.generation, transfer = %id, outcome = tracing::field::Empty);
        let effects = self
            .lock_transfers()
            .arrive(t, hosted, draining, span)
            .map_err(refused)?;
        self.apply(effects);
        Ok(())
    }

    /// A local destination holds the actor prepared: acknowledge to the source (once; a
    /// destination rebuilt after a panic prepares again).
    pub(crate) fn transfer_prepared(&self, id: TransferId) {
        let effects = self
            .lock_transfers()
            .prepared(id, |key| self.instance(key).map_or(0, |h| h.generation));
        tracing::debug!(transfer = %id, effects = effects.len(), "transfer prepared");
        self.apply(effects);
    }

    /// A local destination refused the actor (or dropped a prepared one that was never
    /// decided): a source still waiting is told, so it restores the actor.
    pub(crate) fn transfer_refused(&self, id: TransferId, reason: String) {
        let effects = self.lock_transfers().refused(id, reason);
        self.apply(effects);
    }

    /// The source instance decided (phase two): commit after it let go of the actor, or
    /// abort when the ack came after its rollback. Routing moves before the destination
    /// hears, so whatever it sends finds the session where it now lives.
    pub(crate) fn transfer_decided(&self, source: &InstanceKey, id: TransferId, commit: bool) {
        let effects = self.lock_transfers().decided(source, id, commit);
        tracing::debug!(instance = %source, transfer = %id, commit, effects = effects.len(), "transfer decided");
        self.apply(effects);
    }

    /// Transfers out of `key` still waiting for an answer: `(id, player)`.
    pub(crate) fn pending_from(&self, key: &InstanceKey) -> Vec<(TransferId, Option<PlayerKey>)> {
        self.lock_transfers().pending_from(key)
    }

    /// The gateway's answer to a transfer we sent to another node: an ack (the remote
    /// destination is prepared) goes to the source instance, which decides; a nack
    /// restores the actor there. An ack for a transfer we no longer know is aborted.
    pub fn remote_transfer_answer(&self, id: TransferId, result: Result<(), String>) {
        if let Err(reason) = &result {
            tracing::info!(transfer = %id, %reason, "the handoff was refused");
        }
        let effects = self.lock_transfers().remote_answer(id, result);
        self.apply(effects);
    }

    /// The gateway passes on the source's decision for a transfer into this node.
    pub fn remote_transfer_decided(&self, id: TransferId, commit: bool) {
        tracing::debug!(transfer = %id, commit, "gateway passes on a transfer decision");
        let effects = self.lock_transfers().remote_decided(id, commit);
        self.apply(effects);
    }

    // ----- the script store --------------------------------------------------------------

    fn lock_superglobals(&self) -> std::sync::MutexGuard<'_, BTreeMap<u8, Vec<u8>>> {
        match self.superglobals.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// A zone's request to the cluster's script store: sent to the gateway under a
    /// node-unique id; the answer comes back to that zone under its own `req`. A request
    /// that cannot be sent, or is not answered in [`SCRIPT_STORE_TIMEOUT`], is answered
    /// with [`STORE_UNAVAILABLE`], so no script waits forever. `req` 0 wants no answer.
    pub(crate) fn script_store(&self, key: &InstanceKey, req: u64, op: ScriptStoreOp) {
        Metrics::inc(&self.metrics.script_store_requests);
        if let ScriptStoreOp::WriteFile { data, .. } = &op
            && data.len() > MAX_SCRIPT_FILE
        {
            // It would not fit a frame; the zone refuses it first, this is the backstop.
            if req != 0 {
                Metrics::inc(&self.metrics.script_store_errors);
                self.push(
                    key,
                    ZoneInput::ScriptStoreReply {
                        req,
                        result: ScriptStoreResult::Error(format!(
                            "a script file may hold at most {MAX_SCRIPT_FILE} bytes"
                        )),
                    },
                );
            }
            return;
        }
        if req == 0 {
            self.send(Msg::ScriptStore { req: 0, op });
            return;
        }
        let id = self.next_id();
        self.store_waits.insert(
            id,
            StoreWait {
                key: key.clone(),
                req,
                deadline: Instant::now() + SCRIPT_STORE_TIMEOUT,
            },
        );
        if self
            .out
            .send(Outbound::Msg(Msg::ScriptStore { req: id, op }))
            .is_err()
        {
            Metrics::inc(&self.metrics.outbound_dropped);
            self.script_store_failed(id);
        }
    }

    /// The gateway answered a script store request: to the zone that asked, under its own
    /// request id. An answer for a request already given up on is dropped.
    pub fn script_store_reply(&self, id: u64, result: ScriptStoreResult) {
        let Some((_, w)) = self.store_waits.remove(&id) else {
            tracing::debug!(
                req = id,
                "script store answer for a request no longer waiting"
            );
            return;
        };
        self.push(&w.key, ZoneInput::ScriptStoreReply { req: w.req, result });
    }

    /// A request that will not be answered (not sent: the link is down): answered with
    /// [`STORE_UNAVAILABLE`] now.
    pub fn script_store_failed(&self, id: u64) {
        if let Some((_, w)) = self.store_waits.remove(&id) {
            self.store_error(w);
        }
    }

    fn store_error(&self, w: StoreWait) {
        Metrics::inc(&self.metrics.script_store_errors);
        self.push(
            &w.key,
            ZoneInput::ScriptStoreReply {
                req: w.req,
                result: ScriptStoreResult::Error(STORE_UNAVAILABLE.into()),
            },
        );
    }

    /// The link to the gateway dropped: nothing sent on it will be answered, so every
    /// waiting request gets [`STORE_UNAVAILABLE`]. Returns how many.
    pub fn fail_script_store(&self) -> usize {
        let mut ids: Vec<u64> = self.store_waits.iter().map(|w| *w.key()).collect();
        // In the order they were asked (ids grow).
        ids.sort_unstable();
        let n = ids.len();
        for id in ids {
            self.script_store_failed(id);
        }
        n
    }

    /// Requests past their deadline get [`STORE_UNAVAILABLE`]. Returns how many.
    pub fn expire_script_store(&self, now: Instant) -> usize {
        if self.store_waits.is_empty() {
            return 0;
        }
        let mut late: Vec<u64> = self
            .store_waits
            .iter()
            .filter(|w| now >= w.deadline)
            .map(|w| *w.key())
            .collect();
        late.sort_unstable();
        let n = late.len();
        for id in late {
            if let Some((_, w)) = self.store_waits.remove(&id) {
                tracing::warn!(instance = %w.key, req = w.req, "the script store did not answer in time");
                self.store_error(w);
            }
        }
        n
    }

    /// Script store requests waiting for the gateway.
    pub fn script_store_waiting(&self) -> usize {
        self.store_waits.len()
    }

    /// The gateway's whole set of super globals (after every registration): it replaces
    /// ours, and every running zone is told each slot that changed (one now empty too).
    pub fn set_superglobals(&self, values: Vec<(u8, Vec<u8>)>) {
        let mut globals = self.lock_superglobals();
        let new: BTreeMap<u8, Vec<u8>> = values
            .into_iter()
            .filter(|(slot, value)| *slot < SUPER_GLOBALS && !value.is_empty())
            .collect();
        let mut changed: Vec<(u8, Vec<u8>)> = new
            .iter()
            .filter(|(slot, value)| globals.get(*slot) != Some(*value))
            .map(|(slot, value)| (*slot, value.clone()))
            .collect();
        changed.extend(
            globals
                .keys()
                .filter(|slot| !new.contains_key(*slot))
                .map(|slot| (*slot, Vec::new())),
        );
        *globals = new;
        for (slot, value) in changed {
            self.push_all(&ZoneInput::SuperGlobal { slot, value });
        }
    }

    /// One super global changed (any zone of the cluster set it): every running zone
    /// hears it.
    pub fn set_superglobal(&self, slot: u8, value: Vec<u8>) {
        if slot >= SUPER_GLOBALS {
            Metrics::inc(&self.metrics.refused_msgs);
            return;
        }
        let mut globals = self.lock_superglobals();
        if value.is_empty() {
            globals.remove(&slot);
        } else {
            globals.insert(slot, value.clone());
        }
        self.push_all(&ZoneInput::SuperGlobal { slot, value });
    }

    /// The super globals as a new (or rebuilt) zone's first inputs.
    pub fn superglobal_inputs(&self) -> Vec<ZoneInput> {
        superglobal_inputs(&self.lock_superglobals())
    }

    /// Push an input to every running instance.
    fn push_all(&self, input: &ZoneInput) {
        for h in &self.instances {
            match h.inbox.lock() {
                Ok(mut q) => q.push(input.clone()),
                Err(p) => p.into_inner().push(input.clone()),
            }
        }
    }

    /// Run `script.func` with no actor in a local instance (the cluster's `Startup.Main`).
    pub fn run_script(
        &self,
        key: &InstanceKey,
        script: String,
        func: String,
    ) -> Result<(), RegistryError> {
        if self.push(key, ZoneInput::RunScript { script, func }) {
            Ok(())
        } else {
            Err(RegistryError::UnknownInstance(key.clone()))
        }
    }

    /// A zone's script acts on its player's account (`BanPlayer`, `KickPlayer`): the
    /// gateway does it.
    pub(crate) fn account_action(&self, player: PlayerKey, action: AccountAction) {
        self.send(Msg::AccountAction {
            session: player.0,
            action: convert::account_action_to_dto(action),
        });
    }

    /// Drain: stop taking players, and save and remove every player of every instance.
    /// Returns the number of instances asked.
    pub fn drain_all(&self) -> usize {
        self.set_draining();
        let handles: Vec<InstanceHandle> = self.instances.iter().map(|h| h.clone()).collect();
        for h in &handles {
            h.addr.do_send(zone::Stop);
        }
        handles.len()
    }

    /// Test hook: make the next tick of an instance block its arbiter for `for_` (the
    /// watchdog's tests; the node's `POST /test/stall` with `test_hooks`).
    pub fn inject_stall(&self, key: &InstanceKey, for_: Duration) -> bool {
        self.instance(key)
            .map(|h| h.addr.do_send(zone::InjectStall(for_)))
            .is_some()
    }

    /// Test hook: make the next tick of an instance panic.
    #[cfg(any(test, feature = "testing"))]
    pub fn inject_panic(&self, key: &InstanceKey) -> bool {
        self.instance(key)
            .map(|h| h.addr.do_send(zone::InjectPanic))
            .is_some()
    }
}

/// The client's `CurrentAreaID` for an instance: a stable hash, never 0.
pub fn instance_handle(key: &InstanceKey) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in key.area.bytes().chain(key.instance.to_le_bytes()) {
        h ^= u32::from(b.to_ascii_lowercase());
        h = h.wrapping_mul(0x0100_0193);
    }
    h.max(1)
}

fn seed_for(key: &InstanceKey, generation: Generation) -> u64 {
    u64::from(instance_handle(key)) ^ generation.rotate_left(32) ^ 0x5eed
}

/// The super globals as zone inputs, slot order.
fn superglobal_inputs(globals: &BTreeMap<u8, Vec<u8>>) -> Vec<ZoneInput> {
    globals
        .iter()
        .map(|(slot, value)| ZoneInput::SuperGlobal {
            slot: *slot,
            value: value.clone(),
        })
        .collect()
}

/// Convert a wire `AttachPlayer` into the sim's shapes (helper for the link).
pub fn attach_from_wire(
    state: shared::internal::ActorStateDto,
    arrival: ArrivalDto,
) -> (ActorState, Arrival) {
    (state, arrival)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn every_counter_has_a_family_and_every_family_a_counter() {
        let m = Metrics::default();
        assert_eq!(
            shared::metrics_text::declaration_errors(FAMILIES, &m.series(), &[]),
            Vec::<String>::new()
        );
    }
    use tokio::sync::mpsc;

    fn registry() -> (
        Arc<Registry>,
        mpsc::UnboundedReceiver<Outbound>,
        InstanceKey,
    ) {
        let (tx, rx) = mpsc::unbounded_channel();
        let cfg = ShellConfig {
            node_id: "t".into(),
            tick_ms: 33,
            broadcast_ms: 200,
            max_catch_up: 3,
            persist_every_ms: 60_000,
            capacity: 10,
            datagram_budget: 1100,
            trace_tick_every: 0,
            ground: GroundConfig::default(),
            inbox: inbox::InboxLimits::default(),
            scripts: (64, 4_096),
        };
        let world = shared::content::demo_world();
        let key = InstanceKey {
            area: world.areas.first().map(|a| a.name.clone()).unwrap(),
            instance: 0,
        };
        (Registry::new(cfg, Arc::new(world), tx, Vec::new()), rx, key)
    }

    /// Everything queued for the link so far.
    fn sent(rx: &mut mpsc::UnboundedReceiver<Outbound>) -> Vec<Msg> {
        let mut v = Vec::new();
        while let Ok(o) = rx.try_recv() {
            match o {
                Outbound::Msg(m) => v.push(m),
                Outbound::Envelope(e) => v.push(e.msg),
                Outbound::Broadcast { .. } => {}
            }
        }
        v
    }

    /// What the instance's zone will read at its next tick (taken).
    fn inbox(reg: &Registry, key: &InstanceKey) -> Vec<ZoneInput> {
        let h = reg.instance(key).unwrap();
        let mut q = h.inbox.lock().unwrap();
        std::mem::take(&mut *q)
    }

    fn replies(inputs: &[ZoneInput]) -> Vec<(u64, ScriptStoreResult)> {
        inputs
            .iter()
            .filter_map(|i| match i {
                ZoneInput::ScriptStoreReply { req, result } => Some((*req, result.clone())),
                _ => None,
            })
            .collect()
    }

    // The zone actors are created inside a System but never run: the test's future does
    // not yield, so their inboxes hold exactly what the registry pushed.

    #[test]
    fn a_request_goes_out_under_a_node_id_and_its_answer_comes_back_to_the_zone() {
        actix::System::new().block_on(async {
            let (reg, mut rx, key) = registry();
            reg.assign(key.clone(), 1).unwrap();
            sent(&mut rx);
            reg.script_store(&key, 5, ScriptStoreOp::ReadFile { name: "a".into() });
            let id = match sent(&mut rx).as_slice() {
                [Msg::ScriptStore { req, op }] => {
                    assert_eq!(op, &ScriptStoreOp::ReadFile { name: "a".into() });
                    *req
                }
                other => panic!("{other:?}"),
            };
            assert_ne!(id, 0);
            assert_eq!(reg.script_store_waiting(), 1);
            reg.script_store_reply(id, ScriptStoreResult::File(Some(b"x".to_vec())));
            assert_eq!(
                replies(&inbox(&reg, &key)),
                vec![(5, ScriptStoreResult::File(Some(b"x".to_vec())))]
            );
            // A second answer for it (or one for an unknown id) goes nowhere.
            reg.script_store_reply(id, ScriptStoreResult::Done);
            reg.script_store_reply(id.wrapping_add(99), ScriptStoreResult::Done);
            assert!(inbox(&reg, &key).is_empty());
            // Fire and forget: sent with req 0, nothing waits.
            reg.script_store(
                &key,
                0,
                ScriptStoreOp::SetSuperGlobal {
                    slot: 1,
                    value: b"v".to_vec(),
                },
            );
            assert!(matches!(
                sent(&mut rx).as_slice(),
                [Msg::ScriptStore { req: 0, .. }]
            ));
            assert_eq!(reg.script_store_waiting(), 0);
            assert_eq!(Metrics::get(&reg.metrics.script_store_requests), 2);
            assert_eq!(Metrics::get(&reg.metrics.script_store_errors), 0);
        });
    }

    #[test]
    fn no_script_waits_forever_for_the_store() {
        actix::System::new().block_on(async {
            let (reg, mut rx, key) = registry();
            reg.assign(key.clone(), 1).unwrap();
            let info = || ScriptStoreOp::FileInfo { name: "a".into() };
            reg.script_store(&key, 1, info());
            reg.script_store(&key, 2, info());
            // The link drops: both are answered with an error at once.
            assert_eq!(reg.fail_script_store(), 2);
            let unavailable = ScriptStoreResult::Error(STORE_UNAVAILABLE.into());
            assert_eq!(
                replies(&inbox(&reg, &key)),
                vec![(1, unavailable.clone()), (2, unavailable.clone())]
            );
            // No answer within the deadline: an error too, and not before.
            reg.script_store(&key, 3, info());
            assert_eq!(reg.expire_script_store(Instant::now()), 0);
            let later = Instant::now() + SCRIPT_STORE_TIMEOUT + Duration::from_millis(1);
            assert_eq!(reg.expire_script_store(later), 1);
            assert_eq!(replies(&inbox(&reg, &key)), vec![(3, unavailable.clone())]);
            // The gateway's late answer is dropped.
            let late = sent(&mut rx)
                .into_iter()
                .filter_map(|m| match m {
                    Msg::ScriptStore { req, .. } => Some(req),
                    _ => None,
                })
                .last()
                .unwrap();
            reg.script_store_reply(late, ScriptStoreResult::Info { kind: 1, size: 2 });
            assert!(replies(&inbox(&reg, &key)).is_empty());
            // A file too large for the link is refused here.
            reg.script_store(
                &key,
                4,
                ScriptStoreOp::WriteFile {
                    name: "big".into(),
                    data: vec![0; MAX_SCRIPT_FILE + 1],
                },
            );
            assert!(matches!(
                replies(&inbox(&reg, &key)).as_slice(),
                [(4, ScriptStoreResult::Error(_))]
            ));
            assert_eq!(Metrics::get(&reg.metrics.script_store_errors), 4);
        });
    }

    #[test]
    fn a_stuck_instance_is_given_up_alone_and_fenced() {
        actix::System::new().block_on(async {
            let (reg, mut rx, key) = registry();
            let other = InstanceKey {
                area: key.area.clone(),
                instance: 1,
            };
            reg.assign(key.clone(), 4).unwrap();
            reg.assign(other.clone(), 5).unwrap();
            reg.attach(
                7,
                &key,
                4,
                1,
                false,
                ActorState::default(),
                Arrival::Saved,
            )
            .unwrap();
            sent(&mut rx);
            assert!(reg.is_ready());
            // The actors never run here (the test does not yield): only a tick age grows.
            // `other` has just ticked; `key` has not for a while.
            reg.set_watchdog(watchdog::Thresholds {
                stuck_ms: 5,
                give_up_ms: 50,
            });
            std::thread::sleep(Duration::from_millis(10));
            reg.instance(&other)
                .unwrap()
                .last_tick
                .store(reg.now_ms(), Ordering::Relaxed);
            let v = reg.watchdog_check();
            assert!(
                matches!(v.as_slice(), [watchdog::Verdict::Stuck { key: k, .. }] if *k == key),
                "{v:?}"
            );
            assert!(!reg.is_ready());
            assert_eq!(reg.stuck_instances(), vec![key.clone()]);
            let loads = reg.loads();
            let stuck: Vec<(bool, bool)> = loads
                .iter()
                .map(|l| (l.stuck, l.tick_age_ms >= 5))
                .collect();
            assert_eq!(stuck, vec![(true, true), (false, false)]);
            std::thread::sleep(Duration::from_millis(50));
            reg.instance(&other)
                .unwrap()
                .last_tick
                .store(reg.now_ms(), Ordering::Relaxed);
            let h = reg.instance(&key).unwrap();
            let v = reg.watchdog_check();
            assert!(
                matches!(v.as_slice(), [watchdog::Verdict::GiveUp { key: k, generation: 4, .. }] if *k == key),
                "{v:?}"
            );
            // Dropped with its session, fenced, and the gateway told; the other instance
            // stays, and the node is ready again.
            assert!(reg.instance(&key).is_none());
            assert!(reg.instance(&other).is_some());
            assert_eq!(reg.session_instance(7), None);
            assert!(h.fenced.load(Ordering::Relaxed));
            assert_eq!(reg.generation_of_copy(&key, &h.fenced), 0);
            assert!(reg.is_ready());
            assert!(sent(&mut rx).contains(&Msg::InstanceGivenUp {
                key: key.clone(),
                generation: 4,
                sessions: vec![7],
            }));
            assert_eq!(Metrics::get(&reg.metrics.stuck_instances), 1);
            assert_eq!(Metrics::get(&reg.metrics.given_up), 1);
            // Nothing reaches it any more; a second give-up is nothing.
            assert!(reg.client_frames(7, &[]).is_err());
            assert!(!reg.give_up(&key, 4));
            // Placed anew (a new generation): a fresh instance, not stuck.
            reg.assign(key.clone(), 9).unwrap();
            assert_eq!(reg.generation_of(&key), 9);
            assert!(reg.watchdog_check().is_empty());
        });
    }

    #[test]
    fn every_zone_gets_the_super_globals_new_ones_first_and_then_each_change() {
        actix::System::new().block_on(async {
            let (reg, _rx, key) = registry();
            reg.set_superglobals(vec![(3, b"three".to_vec()), (7, b"seven".to_vec())]);
            reg.assign(key.clone(), 1).unwrap();
            let sg = |slot: u8, v: &[u8]| ZoneInput::SuperGlobal {
                slot,
                value: v.to_vec(),
            };
            assert_eq!(inbox(&reg, &key), vec![sg(3, b"three"), sg(7, b"seven")]);
            reg.set_superglobal(9, b"nine".to_vec());
            assert_eq!(inbox(&reg, &key), vec![sg(9, b"nine")]);
            // A whole new set (a gateway's, after a reconnect): only the differences,
            // slots no longer set included (as empty).
            reg.set_superglobals(vec![(3, b"three".to_vec()), (9, b"NINE".to_vec())]);
            let mut got = inbox(&reg, &key);
            got.sort_by_key(|i| match i {
                ZoneInput::SuperGlobal { slot, .. } => *slot,
                _ => u8::MAX,
            });
            assert_eq!(got, vec![sg(7, b""), sg(9, b"NINE")]);
            reg.set_superglobal(200, b"x".to_vec());
            assert!(inbox(&reg, &key).is_empty());
            assert_eq!(
                reg.superglobal_inputs(),
                vec![sg(3, b"three"), sg(9, b"NINE")]
            );
            // RunScript reaches the instance; an unknown one is an error.
            reg.run_script(&key, "Startup".into(), "Main".into())
                .unwrap();
            assert_eq!(
                inbox(&reg, &key),
                vec![ZoneInput::RunScript {
                    script: "Startup".into(),
                    func: "Main".into()
                }]
            );
            let other = InstanceKey {
                area: key.area.clone(),
                instance: 9,
            };
            assert!(
                reg.run_script(&other, "Startup".into(), "Main".into())
                    .is_err()
            );
        });
    }
}
