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
pub mod node_core;
pub mod retention;
pub mod schedule;
pub mod transfers;
pub mod watchdog;
pub mod zone;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix::{Actor, Addr, ArbiterHandle};
use dashmap::DashMap;
use shared::content::World;
use shared::internal::fanout::Broadcast;
use shared::internal::{
    Envelope, Generation, GroundItemDto, InstanceKey, MAX_SCRIPT_FILE, Msg, RunningInstance,
    SUPER_GLOBALS, ScriptStoreOp, ScriptStoreResult, SessionId, TransferDto,
};

use crate::sim::events::{
    AccountAction, PlayerAction, PlayerKey, Rejection, TransferId, ZoneInput, ZoneOutput,
};
use crate::sim::state::GroundConfig;
use crate::sim::{ZoneConfig, ZoneContent};

pub use node_core::RegistryError;
pub use zone::{InstanceStats, ZoneActor};

use node_core::{NodeCore, NodeEffect, Removed};

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
        "rc_zone_script_reloads_total",
        "Script reloads applied on this node (RefreshScripts): new runs use them, running scripts finish on theirs.",
    ),
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
        "rc_zone_fanout_direct_total",
        "Broadcast datagrams sent straight to the edge gateway holding their client (rc-fanout/1) instead of through the leader.",
    ),
    (
        "rc_zone_fanout_dropped_total",
        "Broadcasts for an edge gateway not sent: its fan-out link's queue was full.",
    ),
    (
        "rc_zone_fanout_links_total",
        "Fan-out links to edge gateways established (rc-fanout/1).",
    ),
    (
        "rc_zone_fanout_inputs_total",
        "Client position datagrams an edge gateway sent straight here over its fan-out link (its clients' P_StandardUpdate), instead of through the leader.",
    ),
    (
        "rc_zone_lead_announced_total",
        "Edge gateways that announced over their fan-out link they had taken the lead, so this node registered with them without waiting for its old leader link to time out.",
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
        /// Script reloads applied on this node (`RefreshScripts`).
        script_reloads => "rc_zone_script_reloads_total";
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
        /// Broadcast datagrams sent straight to an edge gateway.
        fanout_direct => "rc_zone_fanout_direct_total";
        /// Broadcasts for an edge gateway dropped (its link's queue was full).
        fanout_dropped => "rc_zone_fanout_dropped_total";
        /// Fan-out links established.
        fanout_links => "rc_zone_fanout_links_total";
        /// Client position datagrams received over fan-out links.
        fanout_inputs => "rc_zone_fanout_inputs_total";
        /// Edges that announced taking the lead over their fan-out link.
        lead_announced => "rc_zone_lead_announced_total";
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

/// The shell's part of a hosted copy (its generation and stop state are the
/// [`NodeCore`]'s).
#[derive(Clone)]
pub struct InstanceHandle {
    /// Its inbox.
    pub inbox: Arc<Inbox>,
    /// Its actor.
    pub addr: Addr<ZoneActor>,
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
    /// The world's compiled scripts as the node started, shared by every zone.
    scripts: Arc<script::bytecode::ScriptSet>,
    /// Since a reload (`RefreshScripts`): the version new runs use and the earlier ones
    /// kept for instances still running on them (newest first). A new zone starts with
    /// them.
    reloaded: Mutex<Option<Reloaded>>,
    /// The cluster's environment (`SetEnv`) and the areas' weathers (`WeatherLink`), as
    /// the gateway last said; a new zone starts with them.
    shared_vars: Mutex<SharedVars>,
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
    /// The node's decisions ([`NodeCore`], pure): the hosted copies (with their actor
    /// handles), where each session lives, every handoff (its context is the transfer's
    /// span), the minters and ids. Held only while an event is decided; the effects are
    /// carried out after (the messages of a copy that stopped before it is let go).
    core: Mutex<NodeCore<tracing::Span, InstanceHandle>>,
    /// The trace context of a `WarpPlayer` (the gateway's `/warpother`) until the
    /// player's SetArea starts: its handoff joins that trace.
    warps: DashMap<SessionId, opentelemetry::Context>,
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
            world,
            scripts,
            reloaded: Mutex::new(None),
            shared_vars: Mutex::new(SharedVars::default()),
            out,
            next_arbiter_id: AtomicU64::new(u64::try_from(arbiters.len()).unwrap_or(u64::MAX)),
            arbiters: Mutex::new((0u64..).zip(arbiters).collect()),
            next_arbiter: AtomicUsize::new(0),
            epoch: Instant::now(),
            watchdog: Mutex::new(watchdog::Watchdog::default()),
            // Random start: ids stay unique across restarts of this node.
            core: Mutex::new(NodeCore::new(cfg.capacity, ops::random::u64() >> 16)),
            warps: DashMap::new(),
            store_waits: DashMap::new(),
            superglobals: Mutex::new(BTreeMap::new()),
            clock_epoch_ms: AtomicU64::new(0),
            metrics: Metrics::default(),
            stats: DashMap::new(),
            cfg,
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

    /// A node-unique id (snapshots, script store requests).
    pub fn next_id(&self) -> u64 {
        self.lock_core().next_id()
    }

    /// A minter of its own for a zone sim rebuilt after a panic: `(block, minter)`.
    pub fn next_minter(&self) -> (u64, u32) {
        self.lock_core().next_minter()
    }

    /// The gateway's id block for this registration (`TransferIds`): sims created from now
    /// on mint their transfer ids in it. Running sims keep theirs (a block is never handed
    /// out twice, so their ids stay unique).
    pub fn set_transfer_block(&self, block: u64) {
        self.lock_core().set_transfer_block(block);
    }

    /// Whether the node is draining.
    pub fn is_draining(&self) -> bool {
        self.lock_core().is_draining()
    }

    /// Instances hosted.
    pub fn instance_count(&self) -> usize {
        self.lock_core().instance_count()
    }

    /// Sessions hosted.
    pub fn session_count(&self) -> usize {
        self.lock_core().session_count()
    }

    fn lock_core(&self) -> std::sync::MutexGuard<'_, NodeCore<tracing::Span, InstanceHandle>> {
        match self.core.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Every hosted copy: key, generation and the shell's part, key order.
    fn handles(&self) -> Vec<(InstanceKey, Generation, InstanceHandle)> {
        self.lock_core()
            .instances()
            .map(|(k, h)| (k.clone(), h.generation, h.shell.clone()))
            .collect()
    }

    /// Per-instance figures for the heartbeat: every hosted instance (one that has not
    /// completed a tick yet too), with its tick age now.
    pub fn loads(&self) -> Vec<shared::internal::InstanceLoad> {
        let now = self.now_ms();
        let stuck = self.lock_watchdog().stuck();
        let mut v: Vec<shared::internal::InstanceLoad> = self
            .handles()
            .into_iter()
            .map(|(key, _, h)| {
                let tick_age_ms = now.saturating_sub(h.last_tick.load(Ordering::Relaxed));
                let s = self.stats.get(&key);
                let s = s.as_deref();
                let players = s.map_or(0, |s| s.players);
                shared::internal::InstanceLoad {
                    stuck: stuck.contains(&key),
                    players,
                    npcs: s.map_or(0, |s| s.actors.saturating_sub(players)),
                    tick_p99_us: s.map_or(0, |s| s.tick_p99_us),
                    tick_age_ms,
                    tick_p50_us: s.map_or(0, |s| s.tick_p50_us),
                    handoffs: s.map_or(0, |s| s.handoffs),
                    handoffs_failed: s.map_or(0, |s| s.handoffs_failed),
                    errors: s.map_or(0, |s| s.errors),
                    key,
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
            .handles()
            .into_iter()
            .map(|(key, _, h)| {
                let age = now.saturating_sub(h.last_tick.load(Ordering::Relaxed));
                (key, age)
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
            .handles()
            .into_iter()
            .map(|(key, generation, h)| watchdog::Observed {
                key,
                generation,
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
        let Some((removed, effects)) = self.lock_core().give_up(key, generation) else {
            return false;
        };
        let Removed {
            sessions, shell, ..
        } = removed;
        shell.fenced.store(true, Ordering::Relaxed);
        Metrics::inc(&self.metrics.given_up);
        for s in &sessions {
            self.warps.remove(s);
        }
        self.stats.remove(key);
        self.replace_arbiter(shell.arbiter);
        // Handoffs into or out of it end with it, the gateway hears `InstanceGivenUp`, and
        // a newer generation assigned while it was stopping starts now (on a healthy
        // arbiter).
        self.apply(effects);
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
        let bad: Vec<u64> = {
            let core = self.lock_core();
            stuck
                .iter()
                .filter_map(|k| core.hosted(k).map(|h| h.shell.arbiter))
                .collect()
        };
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
        self.lock_core().session_instance(session).cloned()
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
        self.lock_core().hosted(key).map(|h| h.shell.clone())
    }

    /// What this node runs, for (re-)registration.
    pub fn running(&self) -> Vec<RunningInstance> {
        self.lock_core().running()
    }

    fn push(&self, key: &InstanceKey, input: ZoneInput) -> bool {
        let Some(h) = self.instance(key) else {
            return false;
        };
        let kick = crate::sim::ingest::between_ticks(&input);
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
        // Every super global first, then changes as they come: the lock is held until the
        // instance is listed, so a change either is in this copy or finds the instance.
        // (The super globals' lock is always taken before the core's.)
        let globals = self.lock_superglobals();
        let ground = self.known_ground(&key, ground);
        let picked = self.pick_arbiter();
        let clock_epoch_ms = self.clock_epoch_ms.load(Ordering::Relaxed);
        let make = |c: &node_core::Creation| -> Result<InstanceHandle, RegistryError> {
            let mut content = ZoneContent::from_world(self.world.clone(), &c.key.area)
                .ok_or_else(|| RegistryError::UnknownArea(c.key.area.clone()))?;
            content.scripts = self.scripts.clone();
            let content = Arc::new(content);
            let (npc_handle_base, npc_handle_span) =
                crate::world_scripts::npc_handles(&self.world, &c.key.area, c.key.instance);
            let epoch_ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(0));
            let (transfer_block, transfer_minter) = c.minter;
            let zcfg = ZoneConfig {
                npc_handle_base,
                npc_handle_span,
                epoch_ms,
                clock_epoch_ms,
                transfer_block,
                transfer_minter,
                instance: c.key.instance,
                instance_handle: instance_handle(&c.key),
                seed: seed_for(&c.key, c.generation),
                broadcast_ms: self.cfg.broadcast_ms,
                broadcast_groups: broadcast_groups(self.cfg.broadcast_ms, self.cfg.tick_ms),
                persist_every_ms: self.cfg.persist_every_ms,
                datagram_budget: self.cfg.datagram_budget,
                ground: self.cfg.ground,
                scripts_per_actor: self.cfg.scripts.0,
                scripts_per_zone: self.cfg.scripts.1,
                ..ZoneConfig::default()
            };
            let mut first = superglobal_inputs(&globals);
            first.extend(self.scripts_input());
            first.extend(self.shared_var_inputs());
            if !c.ground.is_empty() {
                first.push(ZoneInput::RestoreGround {
                    items: c.ground.clone(),
                });
            }
            let inbox: Arc<Inbox> = Arc::new(Mutex::new(inbox::InboxQueue::with(first)));
            let arbiter = picked.as_ref().map_or(0, |(id, _)| *id);
            let last_tick = Arc::new(AtomicU64::new(self.now_ms()));
            let fenced = Arc::new(AtomicBool::new(false));
            let reg = self.clone();
            let (k2, ib2, ground) = (c.key.clone(), inbox.clone(), c.ground.clone());
            let (generation, copy) = (c.generation, c.copy);
            let watch = (last_tick.clone(), fenced.clone());
            let make = move |_: &mut actix::Context<ZoneActor>| {
                ZoneActor::new(
                    reg,
                    k2,
                    (generation, copy),
                    ib2,
                    zcfg,
                    content,
                    ground,
                    watch,
                )
            };
            let addr = match &picked {
                Some((_, arb)) => ZoneActor::start_in_arbiter(arb, make),
                None => ZoneActor::create(make),
            };
            tracing::info!(node = %self.cfg.node_id, instance = %c.key, generation, arbiter,
                copy, "instance assigned");
            Ok(InstanceHandle {
                inbox,
                addr,
                arbiter,
                last_tick,
                fenced,
            })
        };
        let assigned = self
            .lock_core()
            .assign(key.clone(), generation, ground, make);
        drop(globals);
        let effects = assigned?;
        // Nothing to do and another generation kept: the copy is stopping.
        let have = self.generation_of(&key);
        if effects.is_empty() && have != generation {
            tracing::info!(node = %self.cfg.node_id, instance = %key, generation,
                running = have, "assigned while stopping: starts once stopped");
        }
        self.apply(effects);
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
        self.lock_core().generation_of(key)
    }

    /// Save the instance's players and stop it (fenced by generation).
    pub fn stop(
        self: &Arc<Self>,
        key: &InstanceKey,
        generation: Generation,
    ) -> Result<(), RegistryError> {
        let effects = self.lock_core().stop(key, generation)?;
        self.apply(effects);
        Ok(())
    }

    /// Called by an actor once it has flushed its players and stopped; `copy` is its
    /// number ([`node_core::Creation::copy`]): a report of an older copy changes nothing.
    pub(crate) fn stopped(self: &Arc<Self>, key: &InstanceKey, copy: u64) {
        let effects = {
            let mut core = self.lock_core();
            let Some((_, effects)) = core.stopped(key, copy) else {
                return;
            };
            // Its messages (`InstanceStopped` first) are queued before the core is let
            // go, so a drain that sees no instance left finds them in the outbound queue.
            let (sends, rest): (Vec<_>, Vec<_>) = effects
                .into_iter()
                .partition(|e| matches!(e, NodeEffect::Send { .. }));
            for e in sends {
                if let NodeEffect::Send { msg, .. } = e {
                    self.send(msg);
                }
            }
            rest
        };
        self.stats.remove(key);
        // Handoffs into or out of it that were still open end with it; a newer generation
        // assigned meanwhile starts now.
        self.apply(effects);
    }

    /// A player enters the game in a local instance.
    pub fn attach(self: &Arc<Self>, a: node_core::Attach) -> Result<(), RegistryError> {
        let effects = self.lock_core().attach(a)?;
        self.apply(effects);
        Ok(())
    }

    /// The player disconnected: the zone saves it (Snapshot, reason Logout) and removes it.
    pub fn detach(self: &Arc<Self>, session: SessionId) -> Result<(), RegistryError> {
        let effects = self
            .lock_core()
            .to_session(session, |player| ZoneInput::PlayerLeft { player })?;
        self.apply(effects);
        Ok(())
    }

    /// Called by an actor when the sim removed a player: forget the session unless it
    /// has moved to another instance meanwhile.
    pub(crate) fn player_removed(self: &Arc<Self>, key: &InstanceKey, session: SessionId) {
        let effects = self.lock_core().player_removed(key, session);
        if !effects.is_empty() {
            self.warps.remove(&session);
        }
        self.apply(effects);
    }

    /// The members of a session's party (the gateway's), for its zone's XP split.
    pub fn party_members(
        self: &Arc<Self>,
        session: SessionId,
        members: Vec<String>,
    ) -> Result<(), RegistryError> {
        let effects = self
            .lock_core()
            .to_session(session, |player| ZoneInput::PartyMembers {
                player,
                members,
            })?;
        self.apply(effects);
        Ok(())
    }

    /// Reliable client frames for a session.
    pub fn client_frames(&self, session: SessionId, frames: &[u8]) -> Result<(), RegistryError> {
        let h = {
            let core = self.lock_core();
            let (_, h) = core
                .route(session)
                .ok_or(RegistryError::UnknownSession(session))?;
            h.clone()
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
        let Some(h) = self
            .lock_core()
            .route(session)
            .map(|(_, h)| h.inbox.clone())
        else {
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

    /// Carries out the core's effects, in order; `false` when a message did not go out.
    fn apply(self: &Arc<Self>, effects: Vec<NodeEffect<tracing::Span>>) -> bool {
        use transfers::Count;
        let mut sent = true;
        for e in effects {
            match e {
                NodeEffect::Push(key, input) => {
                    self.push(&key, input);
                }
                NodeEffect::Send { msg, ctx } => {
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
                NodeEffect::Stop(key) => {
                    if let Some(h) = self.instance(&key) {
                        h.addr.do_send(zone::Stop);
                    }
                }
                NodeEffect::Assign {
                    key,
                    generation,
                    ground,
                } => {
                    if let Err(e) = self.assign_with_ground(key.clone(), generation, ground) {
                        tracing::warn!(node = %self.cfg.node_id, instance = %key, generation,
                            error = %e, "the generation assigned while stopping could not start");
                    }
                }
                NodeEffect::Count(c) => Metrics::inc(match c {
                    Count::Local => &self.metrics.local_transfers,
                    Count::Remote => &self.metrics.remote_transfers,
                    Count::Expired => &self.metrics.transfers_expired,
                    Count::Refused => &self.metrics.refused_msgs,
                }),
                NodeEffect::Outcome(span, outcome) => {
                    span.record("outcome", outcome);
                }
            }
        }
        sent
    }

    /// A tick's output of a local instance that the node acts on (handoffs, removed and
    /// refused players; [`NodeCore::zone_output`]). A `TransferOut` (SetArea phase one)
    /// goes to the destination instance when it is here, else to the gateway, which routes
    /// it to the destination's node; it is the root of the handoff's trace (or a child of
    /// the gateway's `/warpother`).
    pub(crate) fn zone_output(self: &Arc<Self>, source: &InstanceKey, o: &ZoneOutput) {
        let removed = match o {
            ZoneOutput::PlayerRemoved { player }
            | ZoneOutput::Rejected {
                player: Some(player),
                reason: Rejection::BadJoin,
            } => Some(player.0),
            _ => None,
        };
        let ctx = |local: bool| match o {
            ZoneOutput::TransferOut(t) => {
                let span = tracing::info_span!(parent: None, "handoff.source",
                    node = %self.cfg.node_id, session = t.player.map(|p| p.0),
                    zone = %source.area, instance = source.instance, to_zone = %t.area,
                    to_instance = t.instance, transfer = %t.transfer_id, local,
                    outcome = tracing::field::Empty);
                if let Some((_, cx)) = t.player.and_then(|p| self.warps.remove(&p.0)) {
                    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
                    let _ = span.set_parent(cx);
                }
                span
            }
            _ => tracing::Span::none(),
        };
        let effects = self.lock_core().zone_output(source, o, ctx);
        if let Some(session) = removed
            && !effects.is_empty()
        {
            self.warps.remove(&session);
        }
        if let ZoneOutput::AckTransfer { transfer_id } = o {
            tracing::debug!(transfer = %transfer_id, effects = effects.len(), "transfer prepared");
        }
        if !self.apply(effects)
            && let ZoneOutput::TransferOut(t) = o
        {
            self.remote_transfer_answer(
                t.transfer_id,
                Err("the destination is unreachable".into()),
            );
        }
    }

    /// A transfer from another node arrives (via the gateway): phase one at a local
    /// instance, which must be the generation the gateway placed.
    pub fn transfer_in(self: &Arc<Self>, t: TransferDto) -> Result<(), RegistryError> {
        let dest = InstanceKey {
            area: t.area.clone(),
            instance: t.instance,
        };
        let (id, session, generation) = (t.transfer_id, t.session, t.generation);
        // A child of the message's `internal.recv` span (the gateway's handoff), made only
        // once the transfer is admitted.
        let span = || {
            tracing::info_span!("handoff.destination", node = %self.cfg.node_id,
                session, zone = %dest.area, instance = dest.instance, generation,
                transfer = %id, outcome = tracing::field::Empty)
        };
        let result = self.lock_core().transfer_in(t, span);
        match result {
            Ok(effects) => {
                self.apply(effects);
                Ok(())
            }
            Err(e) => {
                if matches!(e, RegistryError::StaleGeneration { .. }) {
                    Metrics::inc(&self.metrics.stale);
                }
                Err(e)
            }
        }
    }

    /// Transfers out of `key` still waiting for an answer: `(id, player)`.
    pub(crate) fn pending_from(&self, key: &InstanceKey) -> Vec<(TransferId, Option<PlayerKey>)> {
        self.lock_core().pending_from(key)
    }

    /// The gateway's answer to a transfer we sent to another node: an ack (the remote
    /// destination is prepared) goes to the source instance, which decides; a nack
    /// restores the actor there. An ack for a transfer we no longer know is aborted.
    pub fn remote_transfer_answer(self: &Arc<Self>, id: TransferId, result: Result<(), String>) {
        if let Err(reason) = &result {
            tracing::info!(transfer = %id, %reason, "the handoff was refused");
        }
        let effects = self.lock_core().remote_answer(id, result);
        self.apply(effects);
    }

    /// The link to the gateway ended: a handoff it carried out that no destination had
    /// acknowledged yet is given up now (its player is put back where he was), not at
    /// the zone's transfer timeout: its answer went with the link.
    pub fn gateway_lost(self: &Arc<Self>) {
        let effects = self.lock_core().gateway_lost();
        if !effects.is_empty() {
            tracing::info!(
                effects = effects.len(),
                "the gateway link ended: handoffs it had not answered are given up"
            );
        }
        self.apply(effects);
    }

    /// The gateway passes on the source's decision for a transfer into this node.
    pub fn remote_transfer_decided(self: &Arc<Self>, id: TransferId, commit: bool) {
        tracing::debug!(transfer = %id, commit, "gateway passes on a transfer decision");
        let effects = self.lock_core().remote_decided(id, commit);
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

    /// The super globals (and, after a reload, the scripts) as a new (or rebuilt) zone's
    /// first inputs.
    pub fn superglobal_inputs(&self) -> Vec<ZoneInput> {
        let mut v = superglobal_inputs(&self.lock_superglobals());
        v.extend(self.scripts_input());
        v.extend(self.shared_var_inputs());
        v
    }

    /// The gateway asks about (or, with `action`, acts on) the player of `session` for a
    /// script elsewhere: its zone answers; a session not here is answered "not here" at
    /// once.
    pub fn actor_query(
        &self,
        qid: u64,
        session: SessionId,
        native: String,
        args: Vec<shared::internal::ValueDto>,
        action: Option<shared::internal::ActionId>,
    ) {
        let input = ZoneInput::ActorQuery {
            qid,
            player: PlayerKey(session),
            native,
            args,
            action,
        };
        let sent = self
            .session_instance(session)
            .is_some_and(|key| self.push(&key, input));
        if !sent {
            self.send(Msg::ScriptStore {
                req: 0,
                op: ScriptStoreOp::ActorAnswer { qid, value: None },
            });
        }
    }

    /// The gateway has the zone of `key` spawn an NPC for a script elsewhere; an instance
    /// not here is answered "none" at once.
    pub fn spawn_npc(
        &self,
        qid: u64,
        key: &InstanceKey,
        template: u16,
        pos: (u32, u32, u32),
        script: String,
        death_script: String,
    ) {
        let input = ZoneInput::SpawnNpc {
            qid,
            template,
            pos: shared::internal::pos_from_bits(pos),
            script,
            death_script,
        };
        if !self.push(key, input) {
            self.send(Msg::ScriptStore {
                req: 0,
                op: ScriptStoreOp::ActorAnswer { qid, value: None },
            });
        }
    }

    /// The gateway asks about (or acts on) an NPC of `key`, or has it spawn an item, for a
    /// script elsewhere; an instance not here is answered "not there" at once.
    pub fn npc_query(&self, qid: u64, key: &InstanceKey, input: ZoneInput) {
        if !self.push(key, input) {
            self.send(Msg::ScriptStore {
                req: 0,
                op: ScriptStoreOp::ActorAnswer { qid, value: None },
            });
        }
    }

    /// The operator's live map asks what `key` holds; an instance not here answers `None`.
    pub fn map_query(&self, qid: u64, key: &InstanceKey) {
        match self.instance(key) {
            Some(h) => h.addr.do_send(zone::MapQuery { qid }),
            None => self.send(Msg::MapAnswer { qid, view: None }),
        }
    }

    /// The gateway asks for the actors of `key` for a script elsewhere; an instance not
    /// here has none.
    pub fn zone_actors(&self, qid: u64, key: &InstanceKey) {
        if !self.push(key, ZoneInput::ZoneActors { qid }) {
            self.send(Msg::ScriptStore {
                req: 0,
                op: ScriptStoreOp::ZoneActorsAnswer {
                    qid,
                    handles: Vec::new(),
                },
            });
        }
    }

    /// The cluster's environment and the areas' weathers as zone inputs.
    fn shared_var_inputs(&self) -> Vec<ZoneInput> {
        let vars = match self.shared_vars.lock() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        };
        vars.inputs()
    }

    /// The gateway's environment and weathers (`Msg::SharedVars`): the whole set after a
    /// registration, else changes; every running zone hears what changed.
    pub fn shared_vars(
        &self,
        whole: bool,
        env: Vec<(String, Vec<u8>)>,
        weather: Vec<(String, u8)>,
    ) {
        let mut vars = match self.shared_vars.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let mut changes = SharedVars::default();
        if whole {
            // Every name we had that is gone now is removed in the zones too.
            for k in vars.env.keys() {
                if !env.iter().any(|(n, _)| n == k) {
                    changes.env.insert(k.clone(), Vec::new());
                }
            }
            vars.env.clear();
        }
        for (name, value) in env {
            if name.len() > shared::internal::MAX_ENV_NAME
                || value.len() > shared::internal::MAX_ENV_VALUE
            {
                Metrics::inc(&self.metrics.refused_msgs);
                continue;
            }
            if value.is_empty() {
                vars.env.remove(&name);
            } else if vars.env.contains_key(&name)
                || vars.env.len() < shared::internal::MAX_ENV_VARS
            {
                vars.env.insert(name.clone(), value.clone());
            }
            changes.env.insert(name, value);
        }
        for (area, w) in weather {
            let area = area.to_ascii_lowercase();
            if vars.weather.contains_key(&area)
                || vars.weather.len() < crate::sim::weather::MAX_LINKED
            {
                vars.weather.insert(area.clone(), w);
                changes.weather.insert(area, w);
            }
        }
        for input in changes.inputs() {
            self.push_all(&input);
        }
    }

    /// The reloaded scripts as a zone input (none before the first reload).
    fn scripts_input(&self) -> Option<ZoneInput> {
        let r = match self.reloaded.lock() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        }?;
        Some(ZoneInput::Scripts {
            current: r.current,
            retained: r.retained,
        })
    }

    /// The gateway's scripts of a reload (`RefreshScripts`, `Msg::ScriptsUpdate`): compiled
    /// here (the gateway checked them), then every zone runs new scripts on them while
    /// running ones finish on their own code. The same version again changes nothing; a
    /// set that does not compile here (it did at the gateway) is logged and ignored.
    #[doc(alias = "RefreshScripts")]
    pub fn scripts_update(&self, version: u64, files: Vec<shared::internal::ScriptFileDto>) {
        let mut guard = match self.reloaded.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        if guard.as_ref().is_some_and(|r| r.version == version) {
            return;
        }
        let sources: Vec<script::compile::SourceFile> = files
            .into_iter()
            .map(|f| script::compile::SourceFile::new(f.name, f.bytes))
            .collect();
        let compiled = script::compile::compile(&sources);
        let errors: Vec<String> = compiled.errors().map(ToString::to_string).collect();
        if !errors.is_empty() {
            Metrics::inc(&self.metrics.refused_msgs);
            tracing::error!(version = format!("{version:016x}"), errors = %errors.join(" | "),
                "script reload ignored: the scripts do not compile on this node");
            return;
        }
        let current = Arc::new(compiled.set);
        let (old, mut retained) = match guard.take() {
            Some(r) => (r.current, r.retained),
            None => (self.scripts.clone(), Vec::new()),
        };
        retained.insert(0, old);
        retained.truncate(crate::sim::script_table::RETAINED_VERSIONS);
        *guard = Some(Reloaded {
            version,
            current: current.clone(),
            retained: retained.clone(),
        });
        // Under the lock: a zone created meanwhile either got the old version and hears
        // this, or starts with the new one.
        self.push_all(&ZoneInput::Scripts { current, retained });
        drop(guard);
        Metrics::inc(&self.metrics.script_reloads);
        tracing::info!(
            version = format!("{version:016x}"),
            scripts = sources.len(),
            "scripts reloaded: new runs use them, running scripts finish on theirs"
        );
    }

    /// Push an input to every running instance.
    fn push_all(&self, input: &ZoneInput) {
        for (_, _, h) in self.handles() {
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
    pub fn drain_all(self: &Arc<Self>) -> usize {
        let effects = self.lock_core().drain();
        let n = self.instance_count();
        self.apply(effects);
        n
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

/// The cluster's environment and the areas' weathers on this node.
#[derive(Clone, Default)]
struct SharedVars {
    env: BTreeMap<String, Vec<u8>>,
    weather: BTreeMap<String, u8>,
}

impl SharedVars {
    fn inputs(&self) -> Vec<ZoneInput> {
        self.env
            .iter()
            .map(|(k, v)| ZoneInput::Env {
                name: k.as_bytes().to_vec(),
                value: v.clone(),
            })
            .chain(self.weather.iter().map(|(a, w)| ZoneInput::LinkedWeather {
                area: a.clone(),
                weather: *w,
            }))
            .collect()
    }
}

/// A reload's scripts on this node.
#[derive(Clone)]
struct Reloaded {
    version: u64,
    current: Arc<script::bytecode::ScriptSet>,
    retained: Vec<Arc<script::bytecode::ScriptSet>>,
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
            reg.attach(node_core::Attach {
                session: 7,
                key: key.clone(),
                generation: 4,
                rid: 1,
                is_dm: false,
                state: crate::sim::events::ActorState::default(),
                arrival: crate::sim::events::Arrival::Saved,
            })
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
