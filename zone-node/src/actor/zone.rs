//! `ZoneActor`: one AreaInstance. Drains its inbox into [`ZoneSim::tick_timed`] on a
//! fixed step and routes the output; contains panics and rebuilds the sim from its
//! players' last snapshots.
//!
//! # Timing
//! Tick `n` is due at `origin + n × tick`; the sim's `now_ms` is `n × tick_ms`, so game
//! time does not drift. A `run_interval` wakes the actor every step and
//! [`FixedStep`](super::schedule::FixedStep) says which ticks are due: at most
//! `max_catch_up` in a row (late ticks are counted); beyond that the rest are skipped and
//! the schedule re-baselined (an overrun): no burst after a stall.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use actix::{Actor, ActorContext, AsyncContext, Context, Handler, Message};
use bytes::Bytes;
use shared::internal::fanout::{Broadcast, FanoutDatagram};
use shared::internal::{Generation, GroundItemDto, InstanceKey, Msg, SnapshotEntry, SnapshotGroup};
use shared::metrics_text::Histogram;

use super::node_core::save_reason;
use super::schedule::FixedStep;
use super::{Inbox, Metrics, Registry, convert};
use crate::sim::events::{
    ActorState, Arrival, PlayerAction, PlayerKey, TickOutput, TransferId, ZoneInput, ZoneOutput,
};
use crate::sim::{PhaseClock, ZoneConfig, ZoneContent, ZoneSim};

/// Per-instance statistics, published after every tick.
#[derive(Clone, Debug, Default)]
pub struct InstanceStats {
    /// Ticks run.
    pub ticks: u64,
    /// Late (catch-up) ticks.
    pub late_ticks: u64,
    /// Re-baselines after a stall.
    pub overruns: u64,
    /// Panics caught.
    pub panics: u64,
    /// Players hosted.
    pub players: u32,
    /// Actors in the zone.
    pub actors: u32,
    /// Scripts running (or waiting) in the zone.
    pub scripts: u32,
    /// The zone's cumulative script figures.
    pub script_stats: crate::sim::instances::ScriptStats,
    /// Last tick's phase durations (ns), in `sim::events::PHASE_NAMES` order.
    pub phase_ns: [u64; 8],
    /// The sim's `now_ms` of the last tick.
    pub now_ms: u64,
    /// 99th percentile tick duration over the last [`TICK_WINDOW`] ticks, µs.
    pub tick_p99_us: u32,
    /// Median tick duration over the last [`TICK_WINDOW`] ticks, µs.
    pub tick_p50_us: u32,
    /// Handoffs out of the instance begun (SetArea warps, portals), since it started.
    pub handoffs: u64,
    /// Handoffs out of it that failed (the destination refused, or it timed out).
    pub handoffs_failed: u64,
    /// Script errors (runtime, runaway, restore) and caught panics, since it started.
    pub errors: u64,
    /// Histograms of every tick's duration and of each phase's, since the instance started.
    pub timings: Arc<TickTimings>,
}

/// Tick and phase duration histograms of one instance (lock-free; the actor records, the
/// admin endpoint reads).
#[derive(Debug)]
pub struct TickTimings {
    /// Whole ticks (the sum of the phases).
    pub tick: Histogram,
    /// Each phase, in `sim::events::PHASE_NAMES` order.
    pub phases: [Histogram; 8],
}

impl Default for TickTimings {
    fn default() -> Self {
        Self {
            tick: Histogram::new(Histogram::TICK),
            phases: std::array::from_fn(|_| Histogram::new(Histogram::TICK)),
        }
    }
}

impl TickTimings {
    /// Record one tick's phase durations (ns).
    pub fn observe(&self, phase_ns: &[u64; 8]) {
        for (h, ns) in self.phases.iter().zip(phase_ns) {
            h.observe_ns(*ns);
        }
        self.tick.observe_ns(phase_ns.iter().sum());
    }
}

/// Ticks over which [`InstanceStats::tick_p99_us`] is taken.
pub const TICK_WINDOW: usize = 256;

/// The 50th and 99th percentiles of `window` (µs), 0 when empty.
fn percentiles(window: &[u32]) -> (u32, u32) {
    let mut v = window.to_vec();
    v.sort_unstable();
    let at = |pc: usize| {
        let i = (v.len() * pc).div_ceil(100).saturating_sub(1);
        v.get(i).copied().unwrap_or(0)
    };
    (at(50), at(99))
}

/// Save every player and stop.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Stop;

/// Test hook: the next tick panics.
#[derive(Message)]
#[rtype(result = "()")]
pub struct InjectPanic;

/// Test hook: the next tick blocks its thread (the arbiter) this long before it runs, as
/// a tick stuck in a loop would: the watchdog's test.
#[derive(Message)]
#[rtype(result = "()")]
pub struct InjectStall(pub Duration);

struct MonoClock(Instant);

impl PhaseClock for MonoClock {
    fn now_ns(&self) -> u64 {
        u64::try_from(self.0.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// What the shell remembers of a player to rebuild the instance after a panic.
#[derive(Clone, Debug)]
struct PlayerRecord {
    rid: u16,
    is_dm: bool,
    last: ActorState,
}

/// The actor hosting one AreaInstance.
pub struct ZoneActor {
    reg: Arc<Registry>,
    key: InstanceKey,
    inbox: Arc<Inbox>,
    cfg: ZoneConfig,
    content: Arc<ZoneContent>,
    sim: ZoneSim,
    origin: Instant,
    /// Script errors reported to the gateway: `(second since origin, how many in it)`.
    error_reports: (u64, u32),
    schedule: FixedStep,
    players: HashMap<PlayerKey, PlayerRecord>,
    /// Transfers in (their `TransferIn` input) until committed or aborted: a sim rebuilt
    /// after a panic is given them again, so a prepared arrival survives it.
    arriving: HashMap<TransferId, ZoneInput>,
    batch: Vec<ZoneInput>,
    batch_left: Vec<PlayerKey>,
    batch_joined: Vec<PlayerKey>,
    /// Players whose transfer out was in flight when the sim was rebuilt, by the old
    /// sim's transfer id: restored on a Nack, dropped on an Ack.
    held: HashMap<TransferId, (PlayerKey, PlayerRecord)>,
    /// The ground items as last saved (or as assigned): a sim rebuilt after a panic gets
    /// them back, consistent with its players' last snapshots.
    ground: Vec<GroundItemDto>,
    stopping: bool,
    /// This copy's number on the node ([`super::node_core::Creation::copy`]): what it
    /// names when it has stopped.
    copy: u64,
    /// This instance's broadcast counter (see [`crate::actor::Outbound::Broadcast`]).
    broadcasts: Arc<AtomicU64>,
    stats: InstanceStats,
    /// Recent tick durations (µs), a ring of [`TICK_WINDOW`].
    tick_us: Vec<u32>,
    panic_next: bool,
    stop_ticks: u32,
    span: tracing::Span,
    /// When it last completed a tick (the registry's [`Registry::now_ms`]): the watchdog
    /// reads it ([`super::InstanceHandle::last_tick`]).
    last_tick: Arc<AtomicU64>,
    /// Set by the registry when the watchdog gave this instance up: nothing it still
    /// produces is sent, and it stops at its next chance.
    fenced: Arc<AtomicBool>,
    /// Test hook: the next tick first blocks the thread this long.
    stall_next: Option<Duration>,
}

impl ZoneActor {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        reg: Arc<Registry>,
        key: InstanceKey,
        (generation, copy): (Generation, u64),
        inbox: Arc<Inbox>,
        cfg: ZoneConfig,
        content: Arc<ZoneContent>,
        ground: Vec<GroundItemDto>,
        watch: (Arc<AtomicU64>, Arc<AtomicBool>),
    ) -> Self {
        let span = tracing::info_span!("zone", node = %reg.config().node_id, zone = %key.area,
            instance = key.instance, generation);
        let schedule = FixedStep::new(reg.config().tick_ms, reg.config().max_catch_up);
        Self {
            sim: ZoneSim::new(cfg.clone(), content.clone()),
            reg,
            key,
            copy,
            inbox,
            cfg,
            content,
            origin: Instant::now(),
            error_reports: (0, 0),
            schedule,
            players: HashMap::new(),
            arriving: HashMap::new(),
            batch: Vec::new(),
            batch_left: Vec::new(),
            batch_joined: Vec::new(),
            held: HashMap::new(),
            ground,
            stopping: false,
            broadcasts: Arc::new(AtomicU64::new(0)),
            stats: InstanceStats::default(),
            tick_us: Vec::with_capacity(TICK_WINDOW),
            panic_next: false,
            stop_ticks: 0,
            span,
            last_tick: watch.0,
            fenced: watch.1,
            stall_next: None,
        }
    }

    /// Ask the sim to save and remove every known player: the first time as one group
    /// with the ground (`ZoneInput::Shutdown`), then one by one (players that joined
    /// after the stop request).
    fn leave_all(&mut self, first: bool) {
        let mut q = match self.inbox.lock() {
            Ok(q) => q,
            Err(p) => p.into_inner(),
        };
        if first {
            q.push(ZoneInput::Shutdown);
            return;
        }
        for p in self.players.keys() {
            q.push(ZoneInput::PlayerLeft { player: *p });
        }
    }

    /// Run every due tick (bounded), re-baselining after a long stall.
    fn on_interval(&mut self, ctx: &mut Context<Self>) {
        if self.is_fenced(ctx) {
            return;
        }
        let elapsed = u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX);
        let due = self.schedule.poll(elapsed);
        let ran = due.run;
        for i in 0..u64::from(due.run) {
            if i > 0 {
                self.stats.late_ticks += 1;
                Metrics::inc(&self.reg.metrics.late_ticks);
            }
            self.step(due.first + i);
        }
        if due.skipped > 0 {
            self.stats.overruns += 1;
            Metrics::inc(&self.reg.metrics.overruns);
            let _g = self.span.enter();
            tracing::warn!(skipped = due.skipped, "tick overrun: re-baselining");
        }
        if self.is_fenced(ctx) {
            // Given up while this tick ran: its players live elsewhere now.
            return;
        }
        self.last_tick.store(self.reg.now_ms(), Ordering::Relaxed);
        if self.stopping && ran > 0 {
            self.stop_ticks += 1;
            match super::node_core::stop_step(self.stop_ticks, self.players.len()) {
                super::node_core::StopStep::Stopped => {
                    // Every player was saved and removed (or we gave up waiting).
                    self.reg.stopped(&self.key, self.copy);
                    ctx.stop();
                }
                // Players that joined after the stop request: save them too.
                super::node_core::StopStep::SaveAgain => self.leave_all(false),
            }
        }
        self.reg.publish_stats(&self.key, self.stats.clone());
    }

    /// Whether the watchdog gave this instance up; if so, the actor stops (quietly: the
    /// registry has forgotten it, the gateway has re-placed it).
    fn is_fenced(&self, ctx: &mut Context<Self>) -> bool {
        if !self.fenced.load(Ordering::Relaxed) {
            return false;
        }
        let _g = self.span.enter();
        tracing::warn!(
            ticks = self.stats.ticks,
            "a given-up instance ran again: stopping it, its output dropped"
        );
        ctx.stop();
        true
    }

    /// One tick with panic containment.
    fn step(&mut self, n: u64) {
        {
            let mut q = match self.inbox.lock() {
                Ok(q) => q,
                Err(p) => p.into_inner(),
            };
            q.drain_into(&mut self.batch);
        }
        let mut batch = std::mem::take(&mut self.batch);
        self.batch_left.clear();
        self.batch_joined.clear();
        if !self.held.is_empty() {
            self.resolve_held(&mut batch);
        }
        for input in &batch {
            self.observe_input(input);
        }
        self.batch = batch;
        let now_ms = self.schedule.now_ms(n);
        let clock = MonoClock(Instant::now());
        let panic_now = std::mem::take(&mut self.panic_next);
        let stall = self.stall_next.take();
        // One tick in `trace_tick_every` is traced (`zone.tick`); the others make no span.
        let traced = crate::telemetry::TickSampler::new(self.reg.config().trace_tick_every).start(
            n,
            &self.reg.config().node_id,
            &self.key.area,
            self.key.instance,
        );
        let entered = traced.as_ref().map(|t| t.span().clone().entered());
        let (sim, batch, mut router) = self.split();
        let result = catch_unwind(AssertUnwindSafe(|| {
            if panic_now {
                panic!("injected panic (test hook)");
            }
            if let Some(d) = stall {
                std::thread::sleep(d);
            }
            let out = sim.tick_timed(now_ms, batch.drain(..), &clock);
            router.route(out)
        }));
        drop(entered);
        if let (Some(t), Ok((players_n, actors_n, phase_ns))) = (traced, &result) {
            t.finish(*actors_n, *players_n, phase_ns);
        }
        batch.clear();
        self.stats.ticks += 1;
        Metrics::inc(&self.reg.metrics.ticks);
        match result {
            Ok((players_n, actors_n, phase_ns)) => {
                self.stats.players = players_n;
                self.stats.actors = actors_n;
                let scripts = &self.sim.state().scripts;
                self.stats.scripts = u32::try_from(scripts.len()).unwrap_or(u32::MAX);
                if self.stats.ticks.is_multiple_of(32) {
                    self.stats.script_stats = scripts.stats.clone();
                }
                self.stats.phase_ns = phase_ns;
                self.stats.timings.observe(&phase_ns);
                self.stats.now_ms = now_ms;
                let us = u32::try_from(phase_ns.iter().sum::<u64>() / 1_000).unwrap_or(u32::MAX);
                if self.tick_us.len() < TICK_WINDOW {
                    self.tick_us.push(us);
                } else if let Some(slot) = self
                    .tick_us
                    .get_mut(usize::try_from(self.stats.ticks).unwrap_or(0) % TICK_WINDOW)
                {
                    *slot = us;
                }
                if self.stats.ticks.is_multiple_of(32) {
                    (self.stats.tick_p50_us, self.stats.tick_p99_us) = percentiles(&self.tick_us);
                }
            }
            Err(_) => self.rebuild(),
        }
    }

    /// The inbox's handoff messages, applied between ticks (with panic containment, as a
    /// tick); other inputs stay queued, in order, for the next tick.
    fn handoff_now(&mut self) {
        let mut batch = {
            let mut q = match self.inbox.lock() {
                Ok(q) => q,
                Err(p) => p.into_inner(),
            };
            if !q.iter().any(crate::sim::ingest::between_ticks) {
                return;
            }
            std::mem::take(&mut **q)
        };
        // (resolve_held may turn an answer into a rejoin, which is not a handoff message:
        // it then waits for the tick, as it would have.)
        if !self.held.is_empty() {
            self.resolve_held(&mut batch);
        }
        // The handoff messages go now, ahead of the players' queued inputs (those of a
        // player being handed off are ignored either way); the rest keep their order. A
        // player's own request (a `/warp`, the area acknowledgement) goes now only if none
        // of that player's reliable inputs is queued before it: those keep their order.
        let (handoff, later) = take_handoff(batch);
        let batch = handoff;
        self.requeue_front(later);
        if batch.is_empty() {
            return;
        }
        self.batch_left.clear();
        self.batch_joined.clear();
        for input in &batch {
            self.observe_input(input);
        }
        let (sim, _, mut router) = self.split();
        let result = catch_unwind(AssertUnwindSafe(|| {
            let (out, rest) = sim.handoff(batch);
            router.route(out);
            rest
        }));
        match result {
            // Not applicable yet (before the first tick): back to the inbox, first.
            Ok(rest) => self.requeue_front(rest),
            Err(_) => self.rebuild(),
        }
    }

    /// Put inputs back at the front of the inbox, ahead of what arrived since.
    fn requeue_front(&self, items: Vec<ZoneInput>) {
        if items.is_empty() {
            return;
        }
        let mut q = match self.inbox.lock() {
            Ok(q) => q,
            Err(p) => p.into_inner(),
        };
        let newer = std::mem::take(&mut **q);
        **q = items;
        q.extend(newer);
    }

    /// The sim, the tick's input batch and a router over the rest of the actor's fields.
    fn split(&mut self) -> (&mut ZoneSim, &mut Vec<ZoneInput>, Router<'_>) {
        let Self {
            sim,
            batch,
            reg,
            key,
            players,
            arriving,
            ground,
            stopping,
            broadcasts,
            fenced,
            origin,
            error_reports,
            stats,
            ..
        } = self;
        let groups = sim.state().cfg.groups();
        let router = Router {
            reg,
            key,
            players,
            arriving,
            ground,
            stopping: *stopping,
            broadcasts,
            groups,
            fenced,
            origin: *origin,
            error_reports,
            stats,
        };
        (sim, batch, router)
    }

    /// Answers to transfers the rebuilt sim no longer knows: an Ack means the destination
    /// holds the player, so commit (the player is hosted there now); a Nack brings it
    /// back here from its record.
    fn resolve_held(&mut self, batch: &mut Vec<ZoneInput>) {
        let held = &mut self.held;
        let (reg, key) = (&self.reg, &self.key);
        batch.retain_mut(|input| {
            let (tid, restore) = match input {
                ZoneInput::TransferAck { transfer_id } => (*transfer_id, false),
                ZoneInput::TransferNack { transfer_id, .. } => (*transfer_id, true),
                _ => return true,
            };
            let Some((player, rec)) = held.remove(&tid) else {
                return true;
            };
            if !restore {
                reg.zone_output(key, &ZoneOutput::CommitTransfer { transfer_id: tid });
                return false;
            }
            *input = ZoneInput::PlayerJoined {
                player,
                rid: rec.rid,
                is_dm: rec.is_dm,
                state: Box::new(rec.last),
                arrival: Arrival::Saved,
            };
            true
        });
    }

    /// Remember what joins and arrives, so a rebuilt sim can restore it.
    fn observe_input(&mut self, input: &ZoneInput) {
        match input {
            ZoneInput::PlayerJoined {
                player,
                rid,
                is_dm,
                state,
                ..
            } => {
                self.batch_joined.push(*player);
                self.players.insert(
                    *player,
                    PlayerRecord {
                        rid: *rid,
                        is_dm: *is_dm,
                        last: (**state).clone(),
                    },
                );
            }
            ZoneInput::TransferIn { transfer_id, .. } => {
                self.arriving.insert(*transfer_id, input.clone());
            }
            ZoneInput::TransferCommit { transfer_id } => {
                if let Some(ZoneInput::TransferIn {
                    player: Some(player),
                    is_dm,
                    state,
                    ..
                }) = self.arriving.remove(transfer_id)
                {
                    self.players.insert(
                        player,
                        PlayerRecord {
                            rid: state.rid,
                            is_dm,
                            last: *state,
                        },
                    );
                }
            }
            ZoneInput::TransferAbort { transfer_id } => {
                self.arriving.remove(transfer_id);
            }
            // The destination refused one of this instance's handoffs (or it timed out):
            // the player stays here.
            ZoneInput::TransferNack { .. } => self.stats.handoffs_failed += 1,
            ZoneInput::PlayerLeft { player } => self.batch_left.push(*player),
            _ => {}
        }
    }

    /// After a panic: a fresh sim with every player still placed here re-joined from its
    /// last snapshot; unacknowledged arrivals are refused (their source restores them).
    fn rebuild(&mut self) {
        if self.fenced.load(Ordering::Relaxed) {
            // Given up: its players were put back elsewhere; nothing to rebuild.
            return;
        }
        self.stats.panics += 1;
        self.stats.errors += 1;
        Metrics::inc(&self.reg.metrics.panics);
        Metrics::inc(&self.reg.metrics.restarts);
        let _g = self.span.enter();
        tracing::error!(
            players = self.players.len(),
            "zone tick panicked; rebuilding the instance from the last snapshots"
        );
        // A minter of its own: the old sim's ids may still be pending (held below).
        (self.cfg.transfer_block, self.cfg.transfer_minter) = self.reg.next_minter();
        self.sim = ZoneSim::new(self.cfg.clone(), self.content.clone());
        // Arrivals not yet committed: prepared again in the new sim (the registry sends
        // the source at most one ack), so neither side loses them.
        let again: Vec<ZoneInput> = self.arriving.values().cloned().collect();
        // Players with a transfer out in flight wait for its answer (see `resolve_held`).
        for (tid, player) in self.reg.pending_from(&self.key) {
            if let Some(p) = player
                && let Some(rec) = self.players.remove(&p)
            {
                self.held.insert(tid, (p, rec));
            }
        }
        // Players who joined in the lost tick may be what made it panic: they are not
        // restored (the gateway hears PlayerDetached and may retry elsewhere).
        for p in std::mem::take(&mut self.batch_joined) {
            if self.players.remove(&p).is_some() {
                tracing::warn!(
                    session = p.0,
                    "not restoring a player that joined in the failed tick"
                );
                self.reg.player_removed(&self.key, p.0);
            }
        }
        // Only players the registry still places here (not those that moved away).
        let (reg, key) = (&self.reg, &self.key);
        self.players
            .retain(|p, _| reg.session_instance(p.0).as_ref() == Some(key));
        // The fresh sim knows no super globals: every value first, as for a new zone (taken
        // before the inbox is locked: a change meanwhile is queued in it, so it comes after).
        let mut rejoin: Vec<ZoneInput> = self.reg.superglobal_inputs();
        // The ground as last saved, before the players (saved with it) come back.
        if !self.ground.is_empty() {
            rejoin.push(ZoneInput::RestoreGround {
                items: self.ground.clone(),
            });
        }
        let mut q = match self.inbox.lock() {
            Ok(q) => q,
            Err(p) => p.into_inner(),
        };
        rejoin.extend(self.players.iter().map(|(p, r)| ZoneInput::PlayerJoined {
            player: *p,
            rid: r.rid,
            is_dm: r.is_dm,
            state: Box::new(r.last.clone()),
            arrival: Arrival::Saved,
        }));
        // Leaves of the lost tick are replayed (a detach must not be forgotten); other
        // inputs of that tick are dropped, as they may be what made it panic.
        rejoin.extend(
            self.batch_left
                .drain(..)
                .map(|player| ZoneInput::PlayerLeft { player }),
        );
        rejoin.extend(again);
        rejoin.append(&mut q);
        **q = rejoin;
    }
}

/// Routes one tick's output; borrows the actor's fields apart from the sim.
struct Router<'a> {
    reg: &'a Arc<Registry>,
    key: &'a InstanceKey,
    players: &'a mut HashMap<PlayerKey, PlayerRecord>,
    arriving: &'a mut HashMap<TransferId, ZoneInput>,
    ground: &'a mut Vec<GroundItemDto>,
    stopping: bool,
    broadcasts: &'a Arc<AtomicU64>,
    /// The instance's broadcast groups.
    groups: u32,
    /// Given up by the watchdog ([`ZoneActor::fenced`]): nothing is routed.
    fenced: &'a AtomicBool,
    /// The actor's start (the script error reports' seconds count from it).
    origin: Instant,
    /// Script errors reported this second ([`ZoneActor::error_reports`]).
    error_reports: &'a mut (u64, u32),
    /// The instance's figures (its handoff and error counts).
    stats: &'a mut InstanceStats,
}

impl Router<'_> {
    fn route(&mut self, out: &TickOutput) -> (u32, u32, [u64; 8]) {
        let c = &out.stats.counters;
        if self.fenced.load(Ordering::Relaxed) {
            // The watchdog gave this instance up while the tick ran: its players were put
            // back from their last saves elsewhere, so nothing of it may reach the gateway
            // (its saves carry older fencing tokens and would be refused anyway).
            return (c.players, c.actors, out.stats.phase_ns);
        }
        for o in &out.outputs {
            match o {
                ZoneOutput::Reliable { player, bytes } => {
                    self.reg.send(Msg::ToClient {
                        session: player.0,
                        frames: Bytes::copy_from_slice(bytes),
                    });
                }
                ZoneOutput::TransferOut(_) => {
                    self.stats.handoffs += 1;
                    self.reg.zone_output(self.key, o);
                }
                ZoneOutput::AckTransfer { .. }
                | ZoneOutput::CommitTransfer { .. }
                | ZoneOutput::AbortTransfer { .. } => self.reg.zone_output(self.key, o),
                ZoneOutput::Persist(s) => {
                    if let Some(r) = self.players.get_mut(&s.player) {
                        r.last = s.state.clone();
                    }
                    let reason = save_reason(self.stopping, convert::reason_to_dto(s.reason));
                    self.reg.send(Msg::Snapshot {
                        snapshot_id: self.reg.next_id(),
                        session: s.player.0,
                        reason,
                        state: Box::new(s.state.clone()),
                    });
                }
                ZoneOutput::Checkpoint(c) => self.checkpoint(c),
                ZoneOutput::PlayerRemoved { player } => {
                    self.players.remove(player);
                    self.reg.zone_output(self.key, o);
                }
                ZoneOutput::NackTransfer { transfer_id, .. }
                | ZoneOutput::PreparedExpired { transfer_id } => {
                    self.arriving.remove(transfer_id);
                    self.reg.zone_output(self.key, o);
                }
                ZoneOutput::Rejected { reason, .. } => {
                    self.reg.metrics.rejected(*reason);
                    // A join the zone refused (its RuntimeID or session taken): the node
                    // does not host the player after all, and the gateway is told so (it
                    // puts the player back elsewhere, or disconnects it) instead of
                    // leaving the client waiting for a world that never comes.
                    self.reg.zone_output(self.key, o);
                }
                ZoneOutput::ScriptError {
                    script,
                    func,
                    actor,
                    file,
                    line,
                    message,
                    kind,
                } => {
                    let c = match kind {
                        crate::sim::events::ScriptErrorKind::Runtime => {
                            &self.reg.metrics.script_errors
                        }
                        crate::sim::events::ScriptErrorKind::Runaway => {
                            &self.reg.metrics.script_runaways
                        }
                        crate::sim::events::ScriptErrorKind::Restore => {
                            &self.reg.metrics.script_restore_failures
                        }
                    };
                    Metrics::inc(c);
                    self.stats.errors += 1;
                    tracing::warn!(
                        zone = %self.key,
                        script = %script,
                        func = %func,
                        actor,
                        kind = ?kind,
                        "script ended: {file}:{line}: {message}"
                    );
                    // For the console, a few a second.
                    let second = self.origin.elapsed().as_secs();
                    if self.error_reports.0 != second {
                        *self.error_reports = (second, 0);
                    }
                    if self.error_reports.1 < shared::internal::SCRIPT_ERRORS_PER_SECOND {
                        self.error_reports.1 += 1;
                        self.reg.send(Msg::ScriptError {
                            key: self.key.clone(),
                            script: script.clone(),
                            func: func.clone(),
                            file: file.clone(),
                            line: *line,
                            message: message.clone(),
                            kind: match kind {
                                crate::sim::events::ScriptErrorKind::Runtime => "runtime",
                                crate::sim::events::ScriptErrorKind::Runaway => "runaway",
                                crate::sim::events::ScriptErrorKind::Restore => "restore",
                            }
                            .into(),
                        });
                    }
                }
                ZoneOutput::ScriptLog { script, message } => {
                    tracing::info!(zone = %self.key, script = %script, "{message}");
                }
                ZoneOutput::ScriptStore { req, op } => {
                    self.reg.script_store(self.key, *req, op.clone());
                }
                ZoneOutput::Account { player, action } => {
                    self.reg.account_action(*player, *action);
                }
            }
        }
        self.send_datagrams(out);
        (c.players, c.actors, out.stats.phase_ns)
    }

    /// One atomic group: a `SnapshotGroup` under this instance's current generation, on
    /// the same ordered queue as the transfer or removal that follows it.
    fn checkpoint(&mut self, c: &crate::sim::Checkpoint) {
        let mut entries = Vec::with_capacity(c.players.len());
        for s in &c.players {
            if let Some(r) = self.players.get_mut(&s.player) {
                r.last = s.state.clone();
            }
            let reason = save_reason(self.stopping, convert::reason_to_dto(s.reason));
            entries.push(SnapshotEntry {
                session: s.player.0,
                reason,
                state: s.state.clone(),
            });
        }
        if let Some(g) = &c.ground {
            self.ground.clone_from(g);
        }
        Metrics::inc(&self.reg.metrics.snapshot_groups);
        Metrics::add(
            &self.reg.metrics.snapshot_group_entries,
            u64::try_from(entries.len()).unwrap_or(u64::MAX),
        );
        self.reg.send(Msg::SnapshotGroup(Box::new(SnapshotGroup {
            snapshot_id: self.reg.next_id(),
            key: self.key.clone(),
            generation: self.reg.generation_of_copy(self.key, self.fenced),
            entries,
            ground: c.ground.clone(),
        })));
    }

    /// The tick's `P_StandardUpdate` broadcast as one [`Broadcast`]: every frame once, each
    /// client datagram as ranges of them; the gateway gathers the datagrams.
    fn send_datagrams(&mut self, out: &TickOutput) {
        let batch = &out.datagrams;
        if batch.datagrams.is_empty() {
            return;
        }
        let datagrams = batch
            .datagrams
            .iter()
            .map(|d| FanoutDatagram {
                session: d.player.0,
                first: d.first,
                end: d.end,
            })
            .collect();
        self.reg.send_broadcast(
            self.broadcasts,
            self.groups,
            Broadcast {
                frames: Bytes::copy_from_slice(&batch.frames),
                segments: batch.segments.clone(),
                datagrams,
            },
        );
    }
}

impl Actor for ZoneActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.origin = Instant::now();
        let tick = Duration::from_millis(self.schedule.tick_ms());
        ctx.run_interval(tick, Self::on_interval);
        let _g = self.span.enter();
        tracing::info!("zone actor started");
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        let _g = self.span.enter();
        tracing::info!(ticks = self.stats.ticks, "zone actor stopped");
    }
}

impl Handler<Stop> for ZoneActor {
    type Result = ();

    fn handle(&mut self, _: Stop, _ctx: &mut Self::Context) {
        if self.stopping {
            return;
        }
        self.stopping = true;
        self.leave_all(true);
    }
}

/// Handoff messages are waiting in the inbox: apply them now rather than at the next tick.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Kick;

/// Splits an inbox into what `ZoneSim::handoff` applies now and what waits for the tick,
/// each in its order. A player's input is taken only while none of that player's reliable
/// inputs (its stream frames) has been left for the tick. Its movement updates come as
/// datagrams, which the network never ordered against the stream: a `/warp` may pass them.
fn take_handoff(batch: Vec<ZoneInput>) -> (Vec<ZoneInput>, Vec<ZoneInput>) {
    let mut now = Vec::new();
    let mut later = Vec::new();
    let mut waiting: Vec<PlayerKey> = Vec::new();
    for input in batch {
        let player = match &input {
            ZoneInput::Player {
                action: PlayerAction::StandardUpdate(_),
                ..
            } => None,
            ZoneInput::Player { player, .. } => Some(*player),
            _ => None,
        };
        let blocked = player.is_some_and(|p| waiting.contains(&p));
        if crate::sim::ingest::between_ticks(&input) && !blocked {
            now.push(input);
        } else {
            if let Some(p) = player
                && !waiting.contains(&p)
            {
                waiting.push(p);
            }
            later.push(input);
        }
    }
    (now, later)
}

impl Handler<Kick> for ZoneActor {
    type Result = ();

    fn handle(&mut self, _: Kick, _ctx: &mut Self::Context) {
        if self.fenced.load(Ordering::Relaxed) {
            return;
        }
        self.handoff_now();
    }
}

/// The operator's live map asks what the instance holds (`Msg::MapQuery`): answered from
/// the zone's state between ticks, read only.
#[derive(Message)]
#[rtype(result = "()")]
pub struct MapQuery {
    /// The gateway's query id.
    pub qid: u64,
}

impl Handler<MapQuery> for ZoneActor {
    type Result = ();

    fn handle(&mut self, q: MapQuery, _ctx: &mut Self::Context) {
        let view = (!self.fenced.load(Ordering::Relaxed))
            .then(|| crate::sim::inspect::map_view(self.sim.state()));
        self.reg.send(Msg::MapAnswer { qid: q.qid, view });
    }
}

impl Handler<InjectPanic> for ZoneActor {
    type Result = ();

    fn handle(&mut self, _: InjectPanic, _ctx: &mut Self::Context) {
        self.panic_next = true;
    }
}

impl Handler<InjectStall> for ZoneActor {
    type Result = ();

    fn handle(&mut self, m: InjectStall, _ctx: &mut Self::Context) {
        self.stall_next = Some(m.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_percentiles_of_a_window() {
        assert_eq!(percentiles(&[]), (0, 0));
        assert_eq!(percentiles(&[7]), (7, 7));
        let w: Vec<u32> = (1..=100).rev().collect();
        assert_eq!(percentiles(&w), (50, 99));
    }

    /// A transfer id as a source zone mints it.
    fn tx(serial: u32) -> TransferId {
        TransferId {
            block: 1,
            minter: 1,
            serial,
        }
    }

    fn player(p: u64, action: PlayerAction) -> ZoneInput {
        ZoneInput::Player {
            player: PlayerKey(p),
            action,
        }
    }

    fn warp(p: u64) -> ZoneInput {
        player(
            p,
            PlayerAction::Warp {
                area: "Meadow".into(),
                instance: 0,
            },
        )
    }

    #[test]
    fn a_warp_goes_now_unless_its_player_has_reliable_input_waiting_before_it() {
        let chat = |p| player(p, PlayerAction::Chat { text: "hi".into() });
        let moved = |p| {
            player(
                p,
                PlayerAction::StandardUpdate(crate::sim::events::StandardUpdateIn {
                    dest_x: 0.0,
                    dest_z: 0.0,
                    y: 0.0,
                    x: 0.0,
                    z: 0.0,
                    is_running: false,
                    walking_backward: false,
                }),
            )
        };
        let batch = vec![
            chat(1),
            warp(1),
            moved(3),
            player(2, PlayerAction::AreaAck),
            warp(2),
            warp(3),
            ZoneInput::TransferAbort { transfer_id: tx(4) },
        ];
        let (now, later) = take_handoff(batch);
        // Player 1's warp waits behind its chat; player 2's acknowledgement and warp go
        // now in their order, as do player 3's warp and the handoff message.
        assert_eq!(
            now,
            vec![
                player(2, PlayerAction::AreaAck),
                warp(2),
                warp(3),
                ZoneInput::TransferAbort { transfer_id: tx(4) },
            ]
        );
        // A movement datagram does not hold its player's warp back.
        assert_eq!(later, vec![chat(1), warp(1), moved(3)]);
    }
}
