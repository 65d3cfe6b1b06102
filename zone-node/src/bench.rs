//! `zone-node bench`: one headless `ZoneSim` on a generated world, timed per tick and per
//! phase, reported as one JSON object.
//!
//! The world is a square sized for a fixed density (10,000 actors on 4 km × 4 km by
//! default), with a grid of linked waypoints. NPCs (a third aggressive, the rest passive,
//! AI on) start on waypoints in Patrol; players random-walk, each sending a
//! `P_StandardUpdate` every 200 ms (staggered) that passes the speed clamp. Set-up (the
//! joins and spawns) is not announced and not timed; the timed ticks include the broadcast
//! encoding and batching. Time here is the real clock: this module is outside `sim`.
//!
//! `--effects N` gives every actor N actor effects (`AddActorEffect`, reference §6), each
//! with a delta on one attribute and a random length of 2 to 30 s: they end during the run
//! (the housekeeping phase's expiry, `"R"` and a `P_StatUpdate` to player owners) and the
//! bench adds each one again right after it ended (`"A"`, `"E"`, `P_StatUpdate`), inside
//! the timed tick, as a script's `AddActorEffect` would be.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::sim::area::{
    AreaData, Environment, FixedAttributes, GameRules, SpawnPoint, TemplateProps, Waypoint,
    ZoneContent,
};
use crate::sim::effects;
use crate::sim::events::{
    ActorState, Arrival, PHASE_NAMES, PlayerAction, PlayerKey, StandardUpdateIn, ZoneInput,
};
use crate::sim::state::{ActorId, AiMode, RidRanges, ZoneConfig, ZoneState};
use crate::sim::{PhaseClock, ZoneSim};

/// Bench parameters.
#[derive(Clone, Debug)]
pub struct BenchArgs {
    /// Total actors (players + NPCs).
    pub actors: u32,
    /// Players among them.
    pub players: u32,
    /// Timed ticks.
    pub ticks: u32,
    /// Untimed warm-up ticks.
    pub warmup: u32,
    /// Actors per square kilometre (625 = 10,000 on 4 km × 4 km).
    pub density: f32,
    /// Seed.
    pub seed: u64,
    /// One tick in this many gets a `zone.tick` span, as in a zone actor (0: none).
    pub trace_tick_every: u32,
    /// Actor effects per actor (NPCs and players), each ending and added again.
    pub effects: u32,
}

impl Default for BenchArgs {
    fn default() -> Self {
        Self {
            actors: 10_000,
            players: 1_000,
            ticks: 600,
            warmup: 60,
            density: 625.0,
            seed: 1,
            trace_tick_every: crate::telemetry::DEFAULT_TICK_EVERY,
            effects: 0,
        }
    }
}

/// Timing summary of one series, in milliseconds.
#[derive(Clone, Debug, Serialize, Default)]
pub struct Summary {
    /// Mean.
    pub mean_ms: f64,
    /// Median.
    pub p50_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Maximum.
    pub max_ms: f64,
}

impl Summary {
    fn of(ns: &mut [u64]) -> Self {
        if ns.is_empty() {
            return Self::default();
        }
        ns.sort_unstable();
        let ms = |v: u64| v as f64 / 1e6;
        let at = |q: f64| {
            let i = ((ns.len() as f64 - 1.0) * q).round() as usize;
            ms(ns.get(i).copied().unwrap_or(0))
        };
        Self {
            mean_ms: ms(ns.iter().sum::<u64>()) / ns.len() as f64,
            p50_ms: at(0.5),
            p99_ms: at(0.99),
            max_ms: ms(ns.last().copied().unwrap_or(0)),
        }
    }
}

/// The bench's JSON report.
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    /// Actors at the end.
    pub actors: u32,
    /// Players at the end.
    pub players: u32,
    /// Timed ticks.
    pub ticks: u32,
    /// Side of the square world (m).
    pub side_m: f32,
    /// Whole-tick timings.
    pub tick: Summary,
    /// Per-phase timings.
    pub phases: HashMap<&'static str, Summary>,
    /// Broadcast ticks among the timed ones.
    pub broadcast_ticks: u32,
    /// Mean datagram bytes per broadcast tick.
    pub bytes_per_broadcast_tick: f64,
    /// Mean actor updates per broadcast tick.
    pub updates_per_broadcast_tick: f64,
    /// Mean datagrams per broadcast tick.
    pub datagrams_per_broadcast_tick: f64,
    /// Mean reliable bytes per tick.
    pub reliable_bytes_per_tick: f64,
    /// Timings of broadcast ticks only.
    pub broadcast_tick: Summary,
    /// Actor effects per actor (`--effects`).
    pub effects_per_actor: u32,
    /// Effects that ended (and were added again) during the timed ticks.
    pub effects_ended: u64,
}

/// The shortest and longest bench effect, in seconds.
const EFFECT_SECS: std::ops::RangeInclusive<i64> = 2..=30;

/// The bench's effects: when each ends, so it can be added again once it has.
struct BenchEffects {
    /// `Bench0`, `Bench1`, ...
    names: Vec<String>,
    /// (end time, actor, effect index), earliest first.
    due: BinaryHeap<Reverse<(u64, ActorId, u32)>>,
}

impl BenchEffects {
    /// Effect `j` on `id`: a delta of ±3 on one of the attributes no rule reads (10..40),
    /// for 2..=30 s. With `stagger` (the set-up) it ends after a random number of
    /// **milliseconds** in that range instead, so the first generation does not end in
    /// lockstep on whole seconds.
    fn add(
        &mut self,
        st: &mut ZoneState,
        rng: &mut ChaCha8Rng,
        id: ActorId,
        j: u32,
        stagger: bool,
    ) -> bool {
        let Some(name) = self.names.get(j as usize) else {
            return false;
        };
        let attr = u8::try_from(10 + (j % 30)).unwrap_or(10);
        let delta = if j.is_multiple_of(2) { 3 } else { -3 };
        let secs = rng.gen_range(EFFECT_SECS);
        if effects::add_effect(st, id, name, &[(attr, delta)], secs, 0).is_err() {
            return false;
        }
        let mut ends = st.now_ms.saturating_add(secs.unsigned_abs() * 1000);
        if stagger {
            let lo = EFFECT_SECS.start().unsigned_abs() * 1000;
            let hi = EFFECT_SECS.end().unsigned_abs() * 1000;
            ends = st.now_ms.saturating_add(rng.gen_range(lo..=hi));
            if let Some(e) = st
                .get_mut(id)
                .and_then(|a| a.effects.iter_mut().find(|e| e.name == *name))
            {
                e.expires_ms = ends;
            }
            // The entry for the whole-second end is stale now: expiry skips it.
            st.effect_ends.heap.push(Reverse((ends, id)));
        }
        self.due.push(Reverse((ends, id, j)));
        true
    }

    /// Add again every effect that ended by the last tick. Returns how many.
    fn renew(&mut self, st: &mut ZoneState, rng: &mut ChaCha8Rng) -> u64 {
        let now = st.now_ms;
        let mut n = 0;
        while let Some(&Reverse((ends, id, j))) = self.due.peek() {
            if ends > now {
                break;
            }
            self.due.pop();
            if st.get(id).is_none() {
                continue;
            }
            if self.add(st, rng, id, j, false) {
                n += 1;
            }
        }
        n
    }
}

struct RealClock(Instant);

impl PhaseClock for RealClock {
    fn now_ns(&self) -> u64 {
        u64::try_from(self.0.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

const NPC_AGGRESSIVE: u16 = 1;
const NPC_PASSIVE: u16 = 2;
const HUMAN: u16 = 3;

/// The generated content: a square of `side` metres with a waypoint grid.
pub fn generated_content(side: f32) -> ZoneContent {
    let n = 40u16; // 40 × 40 = 1600 waypoints (< 2000).
    let step = side / f32::from(n);
    let mut waypoints = Vec::with_capacity(usize::from(n) * usize::from(n));
    for r in 0..n {
        for c in 0..n {
            let i = r * n + c;
            waypoints.push(Waypoint {
                x: (f32::from(c) + 0.5) * step,
                y: 0.0,
                z: (f32::from(r) + 0.5) * step,
                next_a: Some(r * n + (c + 1) % n),
                next_b: Some(((r + 1) % n) * n + c),
                prev: Some(if i == 0 { n * n - 1 } else { i - 1 }),
                pause_s: 0,
            });
        }
    }
    let spawns = vec![SpawnPoint {
        template: NPC_PASSIVE,
        waypoint: 0,
        max: 0,
        ..SpawnPoint::default()
    }];
    let mut attributes = vec![(50, 100); 40];
    attributes[0] = (100, 100);
    attributes[4] = (100, 100);
    let t = |id: u16, aggr: u8| TemplateProps {
        id,
        race: format!("T{id}"),
        class: String::new(),
        environment: Environment::Walk,
        radius: 0.5,
        aggressiveness: aggr,
        aggressive_range: 50.0,
        rideable: false,
        faction: u8::from(id == HUMAN),
        xp_multiplier: 10,
        default_damage_type: 0,
        genders: 0,
        attributes: attributes.clone(),
        resistances: vec![100; 20],
        slots_disabled: 0,
    };
    let templates = [t(NPC_AGGRESSIVE, 2), t(NPC_PASSIVE, 0), t(HUMAN, 0)]
        .into_iter()
        .map(|t| (t.id, t))
        .collect();
    // Factions 0 (NPCs) and 1 (players) like themselves and each other, so the bench
    // measures AI scans without turning into a brawl.
    let mut faction_defaults = vec![vec![100u8; 100]; 100];
    for row in faction_defaults.iter_mut().take(2) {
        for v in row.iter_mut().take(2) {
            *v = 160;
        }
    }
    ZoneContent {
        scripts: Arc::default(),
        area: AreaData {
            name: "Bench".into(),
            gravity: 300,
            outdoors: true,
            waypoints,
            spawns,
            ..AreaData::default()
        },
        templates,
        fixed: FixedAttributes::sample(),
        rules: GameRules::default(),
        attribute_names: (0..40).map(|i| format!("A{i}")).collect(),
        faction_defaults,
        world: Arc::default(),
    }
}

/// Run the bench.
pub fn run(args: &BenchArgs) -> BenchReport {
    let players = args.players.min(args.actors);
    let npcs = args.actors - players;
    let side = ((args.actors.max(1) as f32 / args.density.max(1.0)).sqrt() * 1000.0).max(200.0);
    let content = Arc::new(generated_content(side));
    let player_hi = u16::try_from(players.clamp(1, 60_000))
        .unwrap_or(60_000)
        .max(1);
    let cfg = ZoneConfig {
        seed: args.seed,
        rids: RidRanges {
            player_lo: 1,
            player_hi,
            npc_lo: player_hi + 1,
            npc_hi: 65534,
        },
        ..ZoneConfig::default()
    };
    let mut sim = ZoneSim::new(cfg, content.clone());
    let mut rng = ChaCha8Rng::seed_from_u64(args.seed ^ 0xbe4c);
    let mut now = 10_000u64;

    // Set-up, unannounced: NPCs on waypoints in Patrol, players scattered.
    sim.state_mut().announce = false;
    let wps = content.area.waypoints.len();
    for i in 0..npcs {
        let template = if i % 3 == 0 {
            NPC_AGGRESSIVE
        } else {
            NPC_PASSIVE
        };
        let (x, z) = (rng.gen_range(0.0..side), rng.gen_range(0.0..side));
        if let Some(id) = sim.spawn_npc(template, x, 0.0, z) {
            let w = rng.gen_range(0..wps.max(1));
            if let (Some(wp), Some(a)) =
                (content.area.waypoints.get(w), sim.state_mut().get_mut(id))
            {
                a.ai_mode = AiMode::Patrol;
                a.current_waypoint = u16::try_from(w).unwrap_or(0);
                a.dest_x = wp.x;
                a.dest_z = wp.z;
            }
        }
    }
    let human = content.template(HUMAN).cloned().unwrap_or_default();
    let mut joins = Vec::with_capacity(players as usize);
    for i in 0..players {
        let mut s: ActorState =
            crate::sim::state::Actor::from_template(&human).to_state("Bench", 0);
        s.name = format!("P{i}");
        s.x = rng.gen_range(0.0..side);
        s.z = rng.gen_range(0.0..side);
        joins.push(ZoneInput::PlayerJoined {
            player: PlayerKey(u64::from(i) + 1),
            rid: u16::try_from(i + 1).unwrap_or(1),
            is_dm: false,
            state: Box::new(s),
            arrival: Arrival::Saved,
        });
    }
    sim.tick(now, joins);
    now += 33;
    sim.state_mut().announce = true;

    // The effects (their "A"/"E" packets go out in the untimed warm-up).
    let mut fx = BenchEffects {
        names: (0..args.effects).map(|j| format!("Bench{j}")).collect(),
        due: BinaryHeap::new(),
    };
    if args.effects > 0 {
        let st = sim.state_mut();
        let mut ids = Vec::new();
        st.chain_collect(st.zone, crate::sim::state::ChainKind::Zone, &mut ids);
        let ids: Vec<ActorId> = ids.iter().filter_map(|&i| st.at(i).map(|a| a.id)).collect();
        for id in ids {
            for j in 0..args.effects {
                fx.add(st, &mut rng, id, j, true);
            }
        }
    }
    let mut effects_ended = 0u64;

    let clock = RealClock(Instant::now());
    let mut tick_ns = Vec::with_capacity(args.ticks as usize);
    let mut bcast_ns = Vec::new();
    let mut phase_ns: Vec<Vec<u64>> =
        vec![Vec::with_capacity(args.ticks as usize); PHASE_NAMES.len()];
    let (mut btick, mut bytes, mut updates, mut dgrams, mut reliable) =
        (0u32, 0u64, 0u64, 0u64, 0u64);
    let mut inputs = Vec::with_capacity(players as usize / 4 + 1);
    let sampler = crate::telemetry::TickSampler::new(args.trace_tick_every);
    let actors_now = sim.state().zone.len;
    for t in 0..(args.warmup + args.ticks) {
        inputs.clear();
        for i in 0..players {
            if (t + i) % 6 != 0 {
                continue;
            }
            let key = PlayerKey(u64::from(i) + 1);
            let st = sim.state();
            let Some(a) = st.by_player(key).and_then(|id| st.get(id)) else {
                continue;
            };
            let (dx, dz) = (
                (a.x + rng.gen_range(-60.0..60.0)).clamp(0.0, side),
                (a.z + rng.gen_range(-60.0..60.0)).clamp(0.0, side),
            );
            inputs.push(ZoneInput::Player {
                player: key,
                action: PlayerAction::StandardUpdate(StandardUpdateIn {
                    dest_x: dx,
                    dest_z: dz,
                    y: a.y,
                    x: a.x,
                    z: a.z,
                    is_running: i % 4 == 0,
                    walking_backward: false,
                }),
            });
        }
        // The zone actor's tick path: a `zone.tick` span on the sampled ticks (timed too).
        let start = clock.now_ns();
        // Effects that ended in the last tick are added again (timed: it is the work a
        // script's AddActorEffect does in a tick).
        let renewed = fx.renew(sim.state_mut(), &mut rng);
        let traced = sampler.start(u64::from(t), "bench", "Bench", 0);
        let entered = traced.as_ref().map(|t| t.span().clone().entered());
        let out = sim.tick_timed(now, inputs.drain(..), &clock);
        drop(entered);
        if let Some(span) = traced {
            span.finish(actors_now, players, &out.stats.phase_ns);
        }
        let took = clock.now_ns().saturating_sub(start);
        now += 33;
        if t < args.warmup {
            continue;
        }
        effects_ended += renewed;
        tick_ns.push(took);
        for (v, p) in phase_ns.iter_mut().zip(out.stats.phase_ns) {
            v.push(p);
        }
        let c = &out.stats.counters;
        reliable += c.reliable_bytes;
        if c.broadcast {
            btick += 1;
            bytes += c.datagram_bytes;
            updates += u64::from(c.updates_sent);
            dgrams += u64::from(c.datagrams);
            bcast_ns.push(took);
        }
    }
    let per = |v: u64| {
        if btick == 0 {
            0.0
        } else {
            v as f64 / f64::from(btick)
        }
    };
    let st = sim.state();
    BenchReport {
        actors: st.zone.len,
        players: st.online.len,
        ticks: args.ticks,
        side_m: side,
        tick: Summary::of(&mut tick_ns),
        phases: PHASE_NAMES
            .iter()
            .copied()
            .zip(phase_ns.iter_mut().map(|v| Summary::of(v)))
            .collect(),
        broadcast_ticks: btick,
        bytes_per_broadcast_tick: per(bytes),
        updates_per_broadcast_tick: per(updates),
        datagrams_per_broadcast_tick: per(dgrams),
        reliable_bytes_per_tick: reliable as f64 / f64::from(args.ticks.max(1)),
        broadcast_tick: Summary::of(&mut bcast_ns),
        effects_per_actor: args.effects,
        effects_ended,
    }
}
