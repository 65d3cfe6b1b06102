//! `ZoneSim`: a pure, deterministic simulation of one Realm Crafter AreaInstance
//! (`UpdateActorInstances` and the packet handlers that feed it).
//!
//! No actix, tokio, sockets, wall clock or global RNG in here: time (`now_ms`, Realm
//! Crafter's `MilliSecs`) and a seed are inputs, so the same seed and inputs give the same
//! outputs byte for byte. Phase timings come from an injected [`PhaseClock`].
//!
//! # Phase order of [`ZoneSim::tick`]
//! 1. **Ingest** ([`ingest`]): apply every [`ZoneInput`] in order (joins, leaves,
//!    `P_StandardUpdate`, attack, right-click, dismount, jump, chat-derived actions,
//!    transfer in/ack/nack).
//! 2. **Housekeeping**: transfer timeouts ([`setarea::check_timeouts`]), periodic
//!    snapshots ([`setarea::periodic_snapshots`]), scheduled actions
//!    ([`scripts::run_scheduled`], e.g. the death script's 5 s wait), expired items on the
//!    ground ([`items::ground`], looked for once a second), ended actor effects
//!    ([`effects`], looked at only once the zone's earliest end time has passed; a Health
//!    that reaches 0 queues a kill for phase 4), completed memorisations
//!    ([`spells::memorise::complete_due`], likewise only past the earliest due time), and
//!    the opt-in regeneration step
//!    ([`regen::step`], one pass over the zone every `interval_ms` when the world turns
//!    it on).
//! 3. **Actor loop** over `FirstInZone`, per actor, in this order:
//!    a. spell recharge ([`recharge::actor`], when the 100 ms step is due);
//!    b. movement ([`movement::actor`]);
//!    c. water, breath and water damage ([`water::actor`]);
//!    d. NPC AI ([`ai::update_npc`], NPCs only) — RULES CALL SITE.
//!    Kills found here are deferred (`ZoneState::pending_kills`).
//! 4. **Kills** ([`kill::process_pending`]) — RULES CALL SITE.
//! 5. **Visit** (Realm Crafter's round-robin area visit, once per tick here): weather
//!    ([`weather::visit`]), spawn points ([`spawns::visit`]), portals and triggers
//!    ([`portals::visit`]) — RULES CALL SITES.
//! 6. **Scripts** ([`runtime::phase`], Realm Crafter's `UpdateScripts`): queued script
//!    starts become instances, due waits wake, and every runnable instance runs within its
//!    instruction budget, in creation order (`docs/scripting.md`).
//! 7. **Broadcast** ([`broadcast::run`], every 200 ms; each player gets the mid band once
//!    a second, staggered over the broadcast ticks).
//! 8. **Flush**: each player's queued reliable frames become one [`ZoneOutput::Reliable`].
//!
//! Between ticks, [`ZoneSim::handoff`] applies handoff messages (transfer in, ack, nack,
//! commit, abort) at once and flushes, so a SetArea costs no tick per hop; every other
//! input waits for the next tick's ingest.
//!
//! # How to add a rule
//! Put it in its own module as a free function over `&mut ZoneState` (and an actor index or
//! [`state::ActorId`] where it is per actor). Call it from the matching call site in
//! [`ZoneSim::tick`] below (or from [`ingest::dispatch`] for a player action). Use
//! `st.rng` for randomness, `st.now_ms` for time, [`stats`] to change Health/Speed/Energy
//! (right audiences), `st.send_packet` / `st.send_packet_zone` with a typed
//! `shared::proto` packet (builders from state in [`packets`]) to talk,
//! `st.pending_kills.push` to kill from inside the actor loop, and `st.reject` for bad
//! input. Never panic on input: count and return.

pub mod area;
pub mod engine;
pub mod events;
pub mod grid;
pub mod inspect;
pub mod instances;
pub mod packets;
pub mod rng;
pub mod state;

pub mod script_table;

pub mod appear;
pub mod broadcast;
pub mod checkpoint;
pub mod despawn;
pub mod effects;
pub mod ingest;
pub mod movement;
pub mod recharge;
pub mod regen;
pub mod setarea;
pub mod spells;
pub mod stats;
pub mod water;

pub mod ai;
pub mod chat;
pub mod clock;
pub mod combat;
pub mod commands;
pub mod dialogs;
pub mod items;
pub mod kill;
pub mod mount;
pub mod party;
pub mod pets;
pub mod portals;
pub mod quests;
pub mod runtime;
pub mod scripts;
pub mod spawns;
pub mod weather;

#[cfg(any(test, feature = "testing"))]
pub mod testing;

use std::sync::Arc;

pub use area::ZoneContent;
pub use events::{
    ActorState, Arrival, CharacterSnapshot, Checkpoint, DatagramBatch, PlayerAction, PlayerKey,
    RuntimeId, TickOutput, TickStats, TransferId, TransferOut, ZoneInput, ZoneOutput,
};
pub use state::{ActorId, ZoneConfig, ZoneState};

use events::Phase;
use state::{ChainKind, NIL};

/// A nanosecond timer for per-phase durations, injected from outside the simulation (the
/// sim never reads the clock itself).
pub trait PhaseClock {
    /// Monotonic nanoseconds.
    fn now_ns(&self) -> u64;
}

/// The no-op clock: every phase takes 0 ns (tests, determinism).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoClock;

impl PhaseClock for NoClock {
    fn now_ns(&self) -> u64 {
        0
    }
}

/// One AreaInstance.
pub struct ZoneSim {
    st: ZoneState,
    out: TickOutput,
    bcast: broadcast::Scratch,
    first_tick: bool,
}

impl ZoneSim {
    /// A zone with the default script hooks (the default project's behaviour).
    pub fn new(cfg: ZoneConfig, content: Arc<ZoneContent>) -> Self {
        Self::with_hooks(cfg, content, Arc::new(scripts::DefaultHooks))
    }

    /// A zone with custom script hooks.
    pub fn with_hooks(
        cfg: ZoneConfig,
        content: Arc<ZoneContent>,
        hooks: Arc<dyn scripts::ScriptHooks>,
    ) -> Self {
        Self {
            st: ZoneState::new(cfg, content, Arc::new(scripts::Dispatcher::new(hooks))),
            out: TickOutput::default(),
            bcast: broadcast::Scratch::default(),
            first_tick: true,
        }
    }

    /// The state (read-only), for tests, the bench and the shell's metrics.
    pub fn state(&self) -> &ZoneState {
        &self.st
    }

    /// The state, mutably (tests and the bench set up scenarios with it).
    pub fn state_mut(&mut self) -> &mut ZoneState {
        &mut self.st
    }

    /// Spawn an NPC of a template at a position, with a fresh NPC RuntimeID, announcing it
    /// to the players in the zone (spawn points and scenario set-up use this).
    pub fn spawn_npc(&mut self, template: u16, x: f32, y: f32, z: f32) -> Option<ActorId> {
        appear::spawn_npc(&mut self.st, template, x, y, z)
    }

    /// Apply handoff messages between ticks, at the last tick's time, so that a SetArea
    /// does not wait one tick per hop: `TransferIn` (prepare), `TransferAck` /
    /// `TransferNack` (the source's decision or rollback), `TransferCommit` (the arrival
    /// goes live) and `TransferAbort`. Any other input is left for the next [`tick`]
    /// (returned unapplied, in order). Players' packets sent to them alone are flushed, as
    /// a tick's last phase does (zone-wide ones wait for the broadcast). Deterministic like
    /// `tick`: the result depends only on the state and the inputs.
    ///
    /// [`tick`]: Self::tick
    pub fn handoff(&mut self, inputs: Vec<ZoneInput>) -> (&TickOutput, Vec<ZoneInput>) {
        let st = &mut self.st;
        self.out.outputs.clear();
        self.out.datagrams.clear();
        let mut rest = Vec::new();
        let mut answered = Vec::new();
        for input in inputs {
            if ingest::between_ticks(&input) && !self.first_tick {
                if let ZoneInput::ScriptStoreReply { req, .. } = &input
                    && let Some(&id) = st.scripts.requests.get(req)
                {
                    answered.push(id);
                }
                ingest::apply(st, input);
                st.react();
            } else {
                rest.push(input);
            }
        }
        // Scripts the cluster just answered run on now, within a budget of their own per
        // tick (a script asking about actors elsewhere waits a round trip per question).
        if !answered.is_empty() {
            runtime::run_answered(st, &answered);
            kill::process_pending(st);
            st.react();
        }
        flush_online(st, 0);
        std::mem::swap(&mut self.out.outputs, &mut st.outputs);
        self.out.stats = TickStats {
            now_ms: st.now_ms,
            phase_ns: [0; 8],
            counters: Default::default(),
        };
        (&self.out, rest)
    }

    /// One world tick with no timings (the no-op clock).
    pub fn tick(
        &mut self,
        now_ms: u64,
        inputs: impl IntoIterator<Item = ZoneInput>,
    ) -> &TickOutput {
        self.tick_timed(now_ms, inputs, &NoClock)
    }

    /// One world tick: apply `inputs`, run the phases in the documented order, and return
    /// what the zone has to say. The returned buffers are reused by the next tick.
    #[doc(alias = "UpdateActorInstances")]
    pub fn tick_timed(
        &mut self,
        now_ms: u64,
        inputs: impl IntoIterator<Item = ZoneInput>,
        clock: &dyn PhaseClock,
    ) -> &TickOutput {
        let st = &mut self.st;
        st.now_ms = now_ms;
        st.counters = Default::default();
        // `st.outputs` is not cleared: anything queued between ticks (scenario set-up,
        // `spawn_npc`) goes out with this tick.
        self.out.outputs.clear();
        self.out.datagrams.clear();
        if self.first_tick {
            self.first_tick = false;
            st.next_broadcast_ms = now_ms;
            st.next_recharge_ms = now_ms + st.cfg.recharge_ms;
            spawns::start_instance(st);
        }
        // Engine events announced between ticks (scenario set-up, an embedding game).
        st.react();
        let mut phase_ns = [0u64; 8];
        let mut t = clock.now_ns();
        let mut lap = |p: Phase, t: &mut u64| {
            let n = clock.now_ns();
            if let Some(s) = phase_ns.get_mut(p as usize) {
                *s = n.saturating_sub(*t);
            }
            *t = n;
        };

        // 1. Ingest.
        for input in inputs {
            st.counters.inputs += 1;
            ingest::apply(st, input);
            st.react();
        }
        lap(Phase::Ingest, &mut t);

        // 2. Housekeeping.
        setarea::check_timeouts(st);
        setarea::periodic_snapshots(st);
        st.run_scheduled();
        items::ground::expire(st);
        effects::expire(st);
        spells::memorise::complete_due(st);
        regen::step(st);
        st.react();
        lap(Phase::Housekeeping, &mut t);

        // 3. Actor loop.
        // Every 100 ms step that came due since the last one is counted, so a slow tick
        // loses no recharge time (Realm Crafter's one step per pass ran cooldowns up to
        // ~35 % long).
        st.recharge_steps = 0;
        if now_ms >= st.next_recharge_ms {
            let step = st.cfg.recharge_ms.max(1);
            let steps = (now_ms - st.next_recharge_ms) / step + 1;
            st.recharge_steps = u32::try_from(steps).unwrap_or(u32::MAX);
            st.next_recharge_ms += steps.saturating_mul(step);
        }
        st.recharge_now = st.recharge_steps > 0;
        // `FirstInZone` order (a snapshot, so the loop may link and unlink safely).
        let mut order = std::mem::take(&mut st.scratch);
        st.chain_collect(st.zone, ChainKind::Zone, &mut order);
        for &idx in &order {
            let (frozen, npc) = match st.at(idx) {
                Some(a) => (a.frozen(), !a.is_player()),
                None => continue,
            };
            if frozen {
                continue;
            }
            if st.recharge_now {
                recharge::actor(st, idx);
            }
            movement::actor(st, idx);
            water::actor(st, idx);
            if npc {
                // RULES CALL SITE: AI per NPC.
                ai::update_npc(st, idx);
            }
        }
        st.scratch = order;
        st.react();
        lap(Phase::Actors, &mut t);

        // 4. Deferred kills. RULES CALL SITE.
        kill::process_pending(st);
        st.react();
        lap(Phase::Kills, &mut t);

        // 5. Round-robin visit. RULES CALL SITES.
        weather::visit(st);
        spawns::visit(st);
        portals::visit(st);
        st.react();
        lap(Phase::Visit, &mut t);

        // 6. Scripts.
        runtime::phase(st);
        // Kills made by scripts.
        kill::process_pending(st);
        st.react();
        lap(Phase::Scripts, &mut t);

        // 7. Broadcast: the groups due this tick (see `ZoneConfig::broadcast_groups`).
        let groups = st.cfg.groups();
        let mut due = 0u32;
        let interval_starts = now_ms >= st.next_broadcast_ms;
        if interval_starts {
            st.next_broadcast_ms += st.cfg.broadcast_ms.max(1);
            if st.next_broadcast_ms <= now_ms {
                st.next_broadcast_ms = now_ms + st.cfg.broadcast_ms.max(1);
            }
            // Groups the last interval still owes (its ticks ran late) go now, with the
            // new interval's first.
            for g in st.broadcast_group..groups {
                due |= 1 << g;
            }
            due |= 1;
            st.broadcast_group = 1;
        } else if st.broadcast_group < groups {
            due = 1 << st.broadcast_group;
            st.broadcast_group += 1;
        }
        if due != 0 {
            st.counters.broadcast = true;
            broadcast::run(st, &mut self.bcast, &mut self.out.datagrams, due);
        }
        if interval_starts {
            st.broadcasts += 1;
        }
        lap(Phase::Broadcast, &mut t);

        // 8. Flush.
        flush_online(st, due);
        std::mem::swap(&mut self.out.outputs, &mut st.outputs);
        st.counters.actors = st.zone.len;
        st.counters.players = st.online.len;
        lap(Phase::Flush, &mut t);

        self.out.stats = TickStats {
            now_ms,
            phase_ns,
            counters: st.counters.clone(),
        };
        &self.out
    }
}

/// Online players' queued reliable frames become their [`ZoneOutput::Reliable`]: those of
/// the players broadcast to this tick (in the groups of `broadcast`), and of players with a
/// frame sent to them alone (`PlayerData::outbox_urgent`); zone-wide frames wait for the
/// player's broadcast.
fn flush_online(st: &mut ZoneState, broadcast: u32) {
    let groups = st.cfg.groups();
    let mut cur = st.online.first;
    let mut guard = 0;
    while cur != NIL && guard <= st.online.len {
        guard += 1;
        let next = st.link(cur, ChainKind::Online).next;
        let with_broadcast = state::in_broadcast_groups(broadcast, cur, groups);
        let due = st.at(cur).and_then(|a| {
            let urgent = a.player_data.as_ref().is_some_and(|pd| pd.outbox_urgent);
            (with_broadcast || urgent).then_some(a.id)
        });
        if let Some(id) = due {
            st.flush_player(id);
        }
        cur = next;
    }
}
