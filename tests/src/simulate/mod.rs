//! The deterministic simulator of the control plane (in the spirit of quinn-proto's `Pair`,
//! TigerBeetle's VOPR and FoundationDB's simulation): one gateway [`Control`], several
//! zone nodes — each the node's real decisions (`zone_node::actor::node_core::NodeCore`:
//! instances, generations, stop rules, sessions, the transfer table), its real snapshot
//! retention and handshake, over real `ZoneSim`s — and a simulated network on a manual
//! clock with a seeded RNG. A schedule injects logins, logouts and warps, delays messages
//! (in order per link and direction, as a QUIC stream keeps them), drops links, kills,
//! pauses and restarts nodes and restarts the gateway; after every step it checks the
//! invariants ([`Violation`]). A seed reproduces its schedule exactly; a failing one prints its trace.
//!
//! What is checked:
//! * **No duplicate:** at most one live copy of a character holds its current lineage
//!   (a lineage starts when the gateway hands a character out from the store: a login or
//!   a recovery; a handoff carries it on). Older copies may linger on a node the gateway
//!   gave up on, but then …
//! * **Fencing:** … no write from a copy of an older lineage is ever accepted.
//! * **No duplicate login:** one session per account.
//! * **Handoffs end:** no gateway transfer outlives its deadline; after the faults stop and
//!   the cluster heals, no transfer is pending anywhere and no actor is frozen or prepared.
//! * **Nothing lost:** once healed, every session the gateway holds is live in exactly one
//!   instance, on the node the gateway routes it to, and every connected client has one.
//! * **Progress:** a node kill loses at most one checkpoint interval of a character's
//!   progress (its last committed save is that recent).
//!
//! The glue in `node.rs` mirrors `zone-node/src/link.rs` (`dispatch`, `offline`),
//! `actor/mod.rs` (the registry's `apply`) and `actor/zone.rs` (ticks and outputs); every
//! decision is the real modules' (checked by `tidy.rs`).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use gateway::control::{
    Action, Characters, Control, ControlConfig, Event, LinkEnd, Login, Resume, Save, Where,
};
use gateway::session::AccountBook;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shared::content::World;
use shared::internal::{
    ActorStateDto, InstanceKey, Msg, RunningInstance, SessionId, SnapshotEntry, TransferId,
};
use zone_node::actor::retention::Retention;
use zone_node::sim::area::ZoneContent;

pub use shrink::{Schedule, Timed, shrink};

/// How a schedule runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Zone nodes.
    pub nodes: usize,
    /// Accounts (one character each) that log in and out.
    pub accounts: usize,
    /// How long faults and client actions are injected (ms of simulated time).
    pub chaos_ms: u64,
    /// How long the healed cluster then runs before the final checks (ms).
    pub heal_ms: u64,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            nodes: 3,
            accounts: 6,
            chaos_ms: 12_000,
            heal_ms: 48_000,
        }
    }
}

/// An invariant that did not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// When (simulated ms).
    pub at_ms: u64,
    /// Which invariant and how.
    pub what: String,
}

/// The outcome of one schedule.
#[derive(Debug, Clone)]
pub struct Report {
    /// The seed.
    pub seed: u64,
    /// Events delivered and timeouts run.
    pub steps: u64,
    /// The first invariant broken, if any.
    pub violation: Option<Violation>,
    /// The schedule's trace (what was injected and delivered, in order): with the seed,
    /// enough to replay and read it.
    pub trace: Vec<String>,
    /// Handoffs committed at the gateway.
    pub handoffs: u64,
    /// Players put back after a node loss.
    pub recoveries: u64,
    /// Sessions in the world kept through a gateway restart (a leader change whose new
    /// leader was their edge).
    pub kept: u64,
    /// Kept sessions whose player the new gateway adopted from a node.
    pub adopted: u64,
    /// Hand-outs (new fencing tokens) that never reached the store: their gateway died,
    /// or was deposed, with the write queued.
    pub lost_hand_outs: u64,
    /// Leader changes where the gateway taking over knew the old leader's nodes and ended
    /// its placement hold once they were back (`Event::TakeOver`).
    pub informed_takeovers: u64,
    /// The faults and client actions the schedule injected, as a replayable [`Schedule`]
    /// would list them.
    pub faults: Vec<Timed>,
}

/// Run the schedule of `seed`.
pub fn run(seed: u64, opts: &Options) -> Report {
    finish(seed, Sim::new(seed, opts.clone(), None))
}

/// Run an explicit schedule (a shrunk one, say): its faults at their times, the network
/// drawn from its `net_seed`.
pub fn replay(schedule: &Schedule, opts: &Options) -> Report {
    let script = schedule.faults.iter().cloned().collect();
    finish(
        schedule.net_seed,
        Sim::new(schedule.net_seed, opts.clone(), Some(script)),
    )
}

fn finish(seed: u64, mut sim: Sim) -> Report {
    let violation = sim.run().err();
    Report {
        seed,
        steps: sim.steps,
        violation,
        trace: sim.trace,
        handoffs: sim.handoffs,
        recoveries: sim.recoveries,
        kept: sim.kept,
        adopted: sim.adopted,
        lost_hand_outs: sim.lost_hand_outs,
        informed_takeovers: sim.informed_takeovers,
        faults: sim.faults,
    }
}

// ----- constants of the simulated cluster ----------------------------------------------

/// The zones' tick.
const TICK_MS: u64 = 100;
/// Node heartbeats.
const HEARTBEAT_MS: u64 = 1_000;
/// The gateway's node timeout.
const NODE_TIMEOUT_MS: u64 = 3_000;
/// The zones' checkpoint interval.
const PERSIST_MS: u64 = 2_000;
/// A reconnecting node's delay.
const RECONNECT_MS: u64 = 500;
/// The longest a gateway transfer may live: `MAX_HANDOFF` to find a prepared destination,
/// then `DECISION_TIMEOUT` for the source's decision, plus a second.
const TRANSFER_BOUND: Duration = Duration::from_secs(30 + 15 + 1);
/// How long the final checks wait for handoffs begun just before the end.
const SETTLE_MS: u64 = 10_000;
/// Marks the lineages the deposed leader handed out ([`Sim::deposed_lineage`]).
const DEPOSED_LINEAGE: u64 = 1 << 62;
/// How late after its deadline a transfer may still be listed (the timeout runs at the
/// deadline; a step may be in between).
const POLL_SLACK: Duration = Duration::from_millis(1);

/// Where a message travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Dir {
    ToNode,
    ToGateway,
}

#[derive(Debug, Clone)]
enum Delivery {
    /// A control message on a link (`serial`), with the lineage of the copy it carries.
    Msg {
        node: usize,
        serial: u64,
        dir: Dir,
        msg: Box<Msg>,
        tag: Tags,
    },
    /// The gateway notices a link closed.
    LinkDown { node: usize, serial: u64 },
    /// A node notices its link closed (it reconnects later).
    NodeLinkLost { node: usize, serial: u64 },
    /// A node (re)connects.
    Connect { node: usize },
    /// A paused node resumes.
    Resume { node: usize },
    /// A killed node's process starts again, empty.
    Restart { node: usize },
    /// The deposed leader of `epoch` notices it lost the store and steps down.
    StepDown { epoch: u64 },
    /// Edge `edge` of another gateway claims a session it kept (`EdgeMsg::Resume`) at the
    /// control plane of `epoch`, after the leader change.
    Claim {
        epoch: u64,
        edge: usize,
        resume: Box<Resume>,
    },
    /// Edge `edge` has claimed every session it kept (`EdgeMsg::Claimed`), at the control
    /// plane of `epoch`.
    EdgeClaimed { epoch: u64, edge: usize },
    /// The store's answer to a hand-out of the control plane of `epoch` reaches it
    /// (`Event::HandedOut`): the gateway's writer runs apart from its control plane.
    /// `undo`: the token the store held before, put back if the write is lost with its
    /// process (None: the store refused it).
    HandedOut {
        epoch: u64,
        answer: Box<Event>,
        undo: Option<u64>,
    },
    /// A store commit completes: acknowledge `snapshot_id` on `serial`.
    Committed {
        node: usize,
        serial: u64,
        snapshot_id: u64,
    },
}

/// A save's characters, each with its (account, slot) when the gateway knows it.
type SaveEntries = Vec<(Option<(u64, u8)>, SnapshotEntry)>;

/// Lineages of the characters a message carries (by session), for the checks.
type Tags = Vec<(SessionId, u64)>;

/// What a node registered with (the gateway's half of the handshake says it).
struct Registration {
    node_id: String,
    advertised_addr: String,
    capacity: u32,
    running: Vec<RunningInstance>,
}

/// One zone node: the real node core (instances with real sims, sessions, handoffs), the
/// real snapshot retention, the link.
struct Node {
    id: String,
    /// The process runs (false: killed).
    up: bool,
    /// Paused: neither ticks, nor reads, nor sends.
    paused: bool,
    /// What reached it while paused, by link serial, in the link's order: read first when
    /// it resumes (a stream keeps its order across a pause).
    held: VecDeque<(u64, Box<Msg>, Tags)>,
    /// The link's serial while connected.
    link: Option<u64>,
    /// The node's decisions (`zone_node::actor::node_core`).
    core: node::Core,
    /// Saves not acknowledged yet (re-sent after a reconnect), with their tags
    /// (`zone_node::actor::retention`).
    unacked: Retention<(Msg, Tags)>,
    /// Lineage of each player copy this node holds, by (instance, session).
    copies: BTreeMap<(InstanceKey, SessionId), u64>,
    /// Lineage of each transfer this node sent out.
    out_tags: BTreeMap<TransferId, u64>,
    /// Lineage of each transfer that came in.
    in_tags: BTreeMap<TransferId, u64>,
    /// Copies pushed to a zone, not taken or refused yet: transfer → (session, lineage).
    arriving: BTreeMap<TransferId, (SessionId, u64)>,
    /// Since when it has been connected and running without a break.
    stable_since: u64,
    next_heartbeat: u64,
    next_tick: u64,
}

/// The store: the gateway's real account book (its fencing rule included), and when each
/// character was last saved (for the progress check).
#[derive(Default)]
struct Store {
    book: AccountBook,
    saved_at: BTreeMap<u64, u64>,
    /// When each character was frozen by a handoff out of its zone (a frozen character
    /// makes no progress and is not checkpointed).
    frozen_at: BTreeMap<u64, Vec<u64>>,
    /// When a copy of each character was prepared in a destination zone (a handoff's
    /// copy, which goes live at its commit right after).
    prepared_at: BTreeMap<u64, Vec<u64>>,
}

/// Adds `now` to `account`'s times in `times` (a freeze, a preparation).
fn note_at(times: &mut BTreeMap<u64, Vec<u64>>, account: u64, now: u64) {
    times.entry(account).or_default().push(now);
}

impl Store {
    /// A hand-out of token `fence` never reached the store (its gateway died with the
    /// write queued): the character carries `undo` again, as before it. Nothing else of it
    /// changed meanwhile: no copy carried `fence` before the store answered.
    fn lose_hand_out(&mut self, account: u64, slot: u8, fence: u64, undo: u64) {
        let Some(mut state) = self.book.get(account).and_then(|a| {
            a.characters
                .get(usize::from(slot))
                .filter(|c| c.fence == fence)
                .cloned()
        }) else {
            return;
        };
        state.fence = undo;
        self.book.delete_character(account, slot);
        self.book.restore_character(account, slot, state);
        self.book.take_persist();
    }
}

impl Characters for Store {
    fn saved(&self, account: u64, slot: u8) -> Option<ActorStateDto> {
        let a = self.book.get(account)?;
        let mut s = a.characters.get(usize::from(slot))?.clone();
        s.account.clone_from(&a.row.user);
        s.email.clone_from(&a.row.email);
        Some(s)
    }
}

/// The deposed leader's view of the characters: its own in-memory book, as the store
/// was when it was deposed, with its own hand-outs and saves since (which never reach the
/// store).
struct Book(BTreeMap<(u64, u8), ActorStateDto>);

impl Characters for Book {
    fn saved(&self, account: u64, slot: u8) -> Option<ActorStateDto> {
        self.0.get(&(account, slot)).cloned()
    }
}

struct Client {
    account: u64,
    /// The gateway's session is in the world (not refused, not closed).
    open: bool,
}

/// A leader another gateway took the store over from while it still ran (cut off from
/// the store, it has not noticed yet): it goes on deciding over the node links it holds,
/// and nodes reconnecting meanwhile may register with it, until its lease check tells it
/// and it steps down (its links close; it says nothing more). The store refuses all it
/// writes (its epoch is old): hand-outs, saves, logouts.
struct Deposed {
    control: Control,
    epoch: u64,
    /// When its process started (simulated ms): its clock counts from there.
    offset: u64,
    /// The node links it holds: node → serial.
    links: BTreeMap<usize, u64>,
    /// The lineage of each of its transfers (as `Sim::gw_tags`).
    tags: BTreeMap<TransferId, u64>,
    /// What it reads the characters from.
    book: Book,
}

struct Sim {
    rng: SmallRng,
    /// Decides, per gateway restart, whether the gateway taking over kept the sessions in
    /// the world (it was their edge); apart from `rng`, so a schedule's other draws stay
    /// what they were.
    keep_seed: u64,
    /// Draws how long the store's answer to each hand-out takes; apart from `rng` too.
    store_rng: SmallRng,
    opts: Options,
    now: u64,
    world: Arc<World>,
    contents: BTreeMap<String, Arc<ZoneContent>>,
    control: Control,
    gateway_epoch: u64,
    /// The previous leader, while it runs on deposed.
    deposed: Option<Deposed>,
    nodes: Vec<Node>,
    queue: BTreeMap<(u64, u64), Delivery>,
    seq: u64,
    /// The last delivery time per (node, serial, direction): links are FIFO.
    tails: BTreeMap<(usize, u64, Dir), u64>,
    store: Store,
    logged_on: BTreeSet<u64>,
    clients: BTreeMap<SessionId, Client>,
    next_session: u64,
    next_serial: u64,
    /// The current lineage of each account's character.
    lineage: BTreeMap<u64, u64>,
    /// Numbers the lineages.
    lineage_seq: u64,
    /// Lineages handed out for a login (or a put-back) whose `AttachPlayer` is not sent
    /// yet, by (control epoch, account): a leader deposed meanwhile still sends it.
    handed: BTreeMap<(u64, u64), u64>,
    /// The newest lineage of each account's character that has been live or written.
    materialized: BTreeMap<u64, u64>,
    /// Lineage of each gateway transfer (by the gateway's id).
    gw_tags: BTreeMap<TransferId, u64>,
    /// The tags of the delivery being handled (a node's `Transfer`).
    current_tags: Tags,
    trace: Vec<String>,
    steps: u64,
    handoffs: u64,
    recoveries: u64,
    kept: u64,
    adopted: u64,
    lost_hand_outs: u64,
    informed_takeovers: u64,
    /// Kept sessions not adopted yet.
    kept_pending: BTreeSet<SessionId>,
    /// An informed takeover of the current gateway (`Event::TakeOver`): its placement
    /// hold's deadline.
    takeover_waits: Option<u64>,
    healing: bool,
    /// A violation found while handling an event, reported by the next check.
    pending_violation: Option<Violation>,
    /// When (gateway clock) each gateway transfer began.
    gw_started: BTreeMap<TransferId, Duration>,
    /// When the gateway process started (simulated ms): its clock counts from there.
    gw_offset: u64,
    /// An explicit schedule's faults still to come (`None`: drawn from the seed).
    script: Option<VecDeque<Timed>>,
    /// The faults injected so far.
    faults: Vec<Timed>,
}

impl Sim {
    fn new(seed: u64, opts: Options, script: Option<VecDeque<Timed>>) -> Self {
        let world = Arc::new(shared::content::demo_world());
        let contents = world
            .areas
            .iter()
            .filter_map(|a| {
                ZoneContent::from_world(world.clone(), &a.name)
                    .map(|c| (a.name.clone(), Arc::new(c)))
            })
            .collect();
        let control = Control::new(gateway_config(), world.clone(), 1_000);
        let keep_seed = seed;
        let mut store = Store::default();
        let template = world.actors.iter().find(|t| t.playable).cloned();
        for a in 0..opts.accounts as u64 {
            let Some(account) =
                store
                    .book
                    .create_account(format!("user{}", a + 1), String::new(), String::new())
            else {
                continue;
            };
            let state = match &template {
                Some(t) => gateway::session::new_character(
                    &world,
                    t,
                    &shared::proto::CreateCharacter::default(),
                    format!("Hero{account}"),
                ),
                None => ActorStateDto {
                    name: format!("Hero{account}"),
                    ..ActorStateDto::default()
                },
            };
            store.book.add_character(account, state);
            store.saved_at.insert(account, 0);
        }
        store.book.take_persist();
        let nodes = (0..opts.nodes)
            .map(|i| Node {
                id: format!("node-{i}"),
                up: true,
                paused: false,
                held: VecDeque::new(),
                link: None,
                core: node::new_core(),
                unacked: Retention::new(),
                copies: BTreeMap::new(),
                out_tags: BTreeMap::new(),
                in_tags: BTreeMap::new(),
                arriving: BTreeMap::new(),
                stable_since: 0,
                next_heartbeat: 0,
                next_tick: 0,
            })
            .collect();
        let mut sim = Self {
            rng: SmallRng::seed_from_u64(seed),
            keep_seed,
            store_rng: SmallRng::seed_from_u64(seed ^ 0x0073_746f_7265),
            opts,
            now: 0,
            world,
            contents,
            control,
            gateway_epoch: 1,
            deposed: None,
            nodes,
            queue: BTreeMap::new(),
            seq: 0,
            tails: BTreeMap::new(),
            store,
            logged_on: BTreeSet::new(),
            clients: BTreeMap::new(),
            next_session: 1,
            next_serial: 1,
            lineage: BTreeMap::new(),
            lineage_seq: 0,
            handed: BTreeMap::new(),
            materialized: BTreeMap::new(),
            gw_tags: BTreeMap::new(),
            current_tags: Vec::new(),
            trace: Vec::new(),
            steps: 0,
            handoffs: 0,
            recoveries: 0,
            kept: 0,
            adopted: 0,
            lost_hand_outs: 0,
            informed_takeovers: 0,
            kept_pending: BTreeSet::new(),
            takeover_waits: None,
            healing: false,
            pending_violation: None,
            gw_started: BTreeMap::new(),
            gw_offset: 0,
            script,
            faults: Vec::new(),
        };
        for i in 0..sim.nodes.len() {
            let at = sim.rng.gen_range(0..300);
            sim.at(at, Delivery::Connect { node: i });
        }
        sim
    }

    fn log(&mut self, line: impl FnOnce() -> String) {
        let l = line();
        self.trace.push(format!("{:>6} {l}", self.now));
    }

    fn at(&mut self, at: u64, d: Delivery) {
        self.seq += 1;
        self.queue.insert((at, self.seq), d);
    }

    /// A message on a link, after a random delay, never before the previous one on the
    /// same link and direction.
    fn post(&mut self, node: usize, serial: u64, dir: Dir, msg: Msg, tag: Tags) {
        let spike = self.rng.gen_ratio(1, 50);
        let delay = if spike {
            self.rng.gen_range(50..400)
        } else {
            self.rng.gen_range(0..15)
        };
        let tail = self.tails.entry((node, serial, dir)).or_insert(0);
        let at = (self.now + delay).max(*tail);
        *tail = at;
        self.at(
            at,
            Delivery::Msg {
                node,
                serial,
                dir,
                msg: Box::new(msg),
                tag,
            },
        );
    }

    // ----- the main loop ------------------------------------------------------------------

    fn run(&mut self) -> Result<(), Violation> {
        let chaos_end = self.opts.chaos_ms;
        let mut end = chaos_end + self.opts.heal_ms;
        // Healed players still walk through portals: a handoff begun just before the end
        // is let finish (up to `SETTLE_MS` more) before the final checks.
        let last = end + SETTLE_MS;
        let mut next_chaos = match &self.script {
            None => 200,
            Some(script) => script.front().map_or(u64::MAX, |f| f.at),
        };
        loop {
            if self.now >= end {
                if end < last && self.handoff_in_flight() {
                    end = (end + 500).min(last);
                    continue;
                }
                break;
            }
            // The next thing due: a delivery, a gateway timeout, a node tick or heartbeat,
            // or the next injected action.
            let mut next = end;
            if let Some(((t, _), _)) = self.queue.first_key_value() {
                next = next.min(*t);
            }
            if let Some(t) = self.control.poll_timeout() {
                next = next.min((ms(t) + self.gw_offset).max(self.now));
            }
            if let Some(t) = self.deposed_due() {
                next = next.min(t.max(self.now));
            }
            for n in &self.nodes {
                if n.up && !n.paused {
                    next = next.min(n.next_tick).min(n.next_heartbeat);
                }
            }
            if !self.healing {
                next = next.min(next_chaos);
            }
            self.now = next.max(self.now);
            if !self.healing && self.now >= chaos_end {
                self.heal();
            }
            if !self.healing && self.now >= next_chaos {
                next_chaos = self.chaos();
            }
            while let Some(entry) = self.queue.first_entry() {
                if entry.key().0 > self.now {
                    break;
                }
                let d = entry.remove();
                self.steps += 1;
                self.deliver(d)?;
                self.check()?;
            }
            if self
                .control
                .poll_timeout()
                .is_some_and(|t| ms(t) + self.gw_offset <= self.now)
            {
                self.steps += 1;
                let now = self.gw_now();
                let actions = self.control.on_timeout(now, &self.store);
                self.gateway_actions(actions)?;
                self.check()?;
            }
            if self.deposed_due().is_some_and(|t| t <= self.now)
                && let Some(d) = &mut self.deposed
            {
                self.steps += 1;
                let now = Duration::from_millis(self.now.saturating_sub(d.offset));
                let actions = d.control.on_timeout(now, &d.book);
                self.deposed_actions(actions);
                self.check()?;
            }
            for i in 0..self.nodes.len() {
                let n = &self.nodes[i];
                if !n.up || n.paused {
                    continue;
                }
                if n.next_heartbeat <= self.now {
                    self.nodes[i].next_heartbeat = self.now + HEARTBEAT_MS;
                    self.heartbeat(i);
                }
                if self.nodes[i].next_tick <= self.now {
                    self.nodes[i].next_tick = self.now + TICK_MS;
                    self.steps += 1;
                    self.tick_node(i);
                    self.check()?;
                }
            }
        }
        self.final_check()
    }

    // ----- faults and client actions ----------------------------------------------------

    /// Injects the fault or client action due now; returns when the next one is due.
    fn chaos(&mut self) -> u64 {
        let Some(script) = &mut self.script else {
            if let Some(f) = self.draw_fault() {
                self.apply(f);
            }
            return self.now + self.rng.gen_range(50..600);
        };
        let mut due = Vec::new();
        while script.front().is_some_and(|f| f.at <= self.now) {
            due.extend(script.pop_front());
        }
        let next = script.front().map_or(u64::MAX, |f| f.at);
        for t in due {
            self.apply(t.fault);
        }
        next
    }

    /// A random fault or client action, its target drawn from what exists now.
    fn draw_fault(&mut self) -> Option<Fault> {
        let roll = self.rng.gen_range(0..100);
        match roll {
            0..=24 => {
                let free: Vec<u64> = (1..=self.opts.accounts as u64)
                    .filter(|a| !self.logged_on.contains(a))
                    .collect();
                if free.is_empty() {
                    return None;
                }
                let account = free[self.rng.gen_range(0..free.len())];
                Some(Fault::Login { account })
            }
            25..=34 => {
                let open = self.open_sessions();
                if open.is_empty() {
                    return None;
                }
                let s = open[self.rng.gen_range(0..open.len())];
                let account = self.clients.get(&s)?.account;
                Some(Fault::Logout { account })
            }
            35..=64 => {
                let players = self.players_in_game();
                if players.is_empty() {
                    return None;
                }
                let (session, _) = players[self.rng.gen_range(0..players.len())];
                let areas = self.control.areas().to_vec();
                let area = areas[self.rng.gen_range(0..areas.len())].clone();
                let instance = if self.rng.gen_ratio(1, 4) { 1 } else { 0 };
                let account = self.clients.get(&session)?.account;
                Some(Fault::Warp {
                    account,
                    area,
                    instance,
                })
            }
            65..=70 => Some(Fault::DropLink {
                node: self.rng.gen_range(0..self.nodes.len()),
            }),
            71..=75 => {
                let node = self.rng.gen_range(0..self.nodes.len());
                // The time it stays down is drawn when it dies (after the link's).
                self.nodes[node]
                    .up
                    .then_some(Fault::Kill { node, back_ms: 0 })
            }
            76..=80 => {
                let node = self.rng.gen_range(0..self.nodes.len());
                if !self.nodes[node].up || self.nodes[node].paused {
                    return None;
                }
                let ms = self.rng.gen_range(500..7_000);
                Some(Fault::Pause { node, ms })
            }
            81..=82 => Some(Fault::RestartGateway),
            83..=85 => {
                let node = self.rng.gen_range(0..self.nodes.len());
                let n = &self.nodes[node];
                if !n.up || n.paused || n.core.instance_count() == 0 {
                    return None;
                }
                let keys: Vec<&InstanceKey> = n.core.instances().map(|(k, _)| k).collect();
                let key = keys[self.rng.gen_range(0..keys.len())].clone();
                Some(Fault::GiveUp {
                    node,
                    area: key.area,
                    instance: key.instance,
                })
            }
            _ => None,
        }
    }

    /// Injects `fault` and records it.
    fn apply(&mut self, fault: Fault) {
        let fault = match fault {
            Fault::Login { account } => {
                if self.logged_on.contains(&account) {
                    return;
                }
                self.login_account(account);
                fault
            }
            Fault::Logout { account } => {
                let Some(s) = self.open_session_of(account) else {
                    return;
                };
                self.close_session(s, "logout");
                self.gateway_event(Event::Gone { session: s });
                fault
            }
            Fault::Warp {
                account,
                ref area,
                instance,
            } => {
                let Some((session, node)) = self
                    .players_in_game()
                    .into_iter()
                    .find(|(s, _)| self.clients.get(s).is_some_and(|c| c.account == account))
                else {
                    return;
                };
                self.warp(session, &node, area.clone(), instance);
                fault
            }
            Fault::DropLink { node } => {
                let Some(serial) = self.nodes.get(node).and_then(|n| n.link) else {
                    return;
                };
                self.log(|| format!("link of node-{node} (serial {serial}) drops"));
                self.cut(node, serial);
                fault
            }
            Fault::Kill { node, back_ms } => {
                if !self.nodes.get(node).is_some_and(|n| n.up) {
                    return;
                }
                let back_ms = self.kill(node, back_ms);
                Fault::Kill { node, back_ms }
            }
            Fault::Pause { node, ms } => {
                if !self.nodes.get(node).is_some_and(|n| n.up && !n.paused) {
                    return;
                }
                self.log(|| format!("node-{node} paused for {ms} ms"));
                self.nodes[node].paused = true;
                self.at(self.now + ms, Delivery::Resume { node });
                fault
            }
            Fault::RestartGateway => {
                self.restart_gateway();
                fault
            }
            Fault::GiveUp {
                node,
                ref area,
                instance,
            } => {
                let key = InstanceKey {
                    area: area.clone(),
                    instance,
                };
                if !self
                    .nodes
                    .get(node)
                    .is_some_and(|n| n.up && !n.paused && n.core.hosted(&key).is_some())
                {
                    return;
                }
                self.log(|| format!("node-{node} gives {key} up (its tick froze)"));
                self.give_up(node, &key);
                fault
            }
        };
        self.faults.push(Timed {
            at: self.now,
            fault,
        });
    }

    /// Faults stop; every node comes back and reconnects; clients stay as they are.
    fn heal(&mut self) {
        self.healing = true;
        self.log(|| "heal: faults stop".into());
        for i in 0..self.nodes.len() {
            if !self.nodes[i].up {
                self.at(self.now + 10, Delivery::Restart { node: i });
            } else if self.nodes[i].paused {
                self.at(self.now + 10, Delivery::Resume { node: i });
            }
        }
        // Every account in the world again, for the final checks.
        for a in 1..=self.opts.accounts as u64 {
            if !self.logged_on.contains(&a) {
                self.login_account(a);
            }
        }
    }

    fn login_account(&mut self, account: u64) {
        let Some(state) = self.store.saved(account, 0) else {
            return;
        };
        let session = self.next_session;
        self.next_session += 1;
        self.logged_on.insert(account);
        self.clients.insert(
            session,
            Client {
                account,
                open: true,
            },
        );
        self.log(|| format!("login account {account} as session {session}"));
        let e = Event::Entered(Box::new(Login {
            session,
            account,
            slot: 0,
            is_dm: false,
            state: Box::new(state),
            ignore: Vec::new(),
            user: format!("user{account}"),
            email: String::new(),
            connected: true,
        }));
        self.gateway_event(e);
    }

    /// The sessions whose client is connected.
    fn open_sessions(&self) -> Vec<SessionId> {
        self.clients
            .iter()
            .filter(|(_, c)| c.open)
            .map(|(s, _)| *s)
            .collect()
    }

    /// The connected session of `account`, if any.
    fn open_session_of(&self, account: u64) -> Option<SessionId> {
        self.clients
            .iter()
            .rev()
            .find(|(_, c)| c.open && c.account == account)
            .map(|(s, _)| *s)
    }

    fn close_session(&mut self, session: SessionId, why: &str) {
        if let Some(c) = self.clients.get_mut(&session)
            && c.open
        {
            c.open = false;
            self.log(|| format!("session {session} closed: {why}"));
        }
    }

    /// The players in game, with their nodes.
    fn players_in_game(&self) -> Vec<(SessionId, String)> {
        self.control
            .players()
            .filter(|(.., w)| *w == Where::InGame)
            .filter_map(|(s, _, _, node, _)| node.map(|n| (s, n.to_owned())))
            .collect()
    }

    fn warp(&mut self, session: SessionId, node: &str, area: String, instance: u16) {
        self.log(|| format!("warp session {session} to {area} #{instance}"));
        // As `/warpother` does: the gateway asks the player's node.
        if let Some(i) = self.node_index(node)
            && let Some(serial) = self.gateway_link(i)
        {
            self.post(
                i,
                serial,
                Dir::ToNode,
                Msg::WarpPlayer {
                    session,
                    area,
                    instance,
                },
                Vec::new(),
            );
        }
    }

    /// A link closes: both ends learn it, the node reconnects.
    fn cut(&mut self, i: usize, serial: u64) {
        let d1 = self.rng.gen_range(1..50);
        let d2 = self.rng.gen_range(1..50);
        self.at(self.now + d1, Delivery::LinkDown { node: i, serial });
        self.at(self.now + d2, Delivery::NodeLinkLost { node: i, serial });
        self.tails.retain(|(n, s, _), _| !(*n == i && *s == serial));
    }

    /// Kills node `i`; it starts again, empty, after `back_ms` (drawn when 0). Returns
    /// that delay.
    fn kill(&mut self, i: usize, back_ms: u64) -> u64 {
        self.log(|| format!("node-{i} killed"));
        self.check_progress_on_kill(i);
        let n = &mut self.nodes[i];
        n.up = false;
        n.paused = false;
        n.held.clear();
        n.core = node::new_core();
        n.unacked.clear();
        n.copies.clear();
        n.out_tags.clear();
        n.in_tags.clear();
        n.arriving.clear();
        if let Some(serial) = n.link.take() {
            let d = self.rng.gen_range(1..50);
            self.at(self.now + d, Delivery::LinkDown { node: i, serial });
            self.tails.retain(|(n, s, _), _| !(*n == i && *s == serial));
        }
        let back = if back_ms == 0 {
            self.rng.gen_range(500..6_000)
        } else {
            back_ms
        };
        self.at(self.now + back, Delivery::Restart { node: i });
        back
    }

    fn restart_gateway(&mut self) {
        // Half the restarts are a leader change where the gateway taking over was the edge
        // of the players in the world: it keeps their clients, and its control plane adopts
        // them from the nodes (`Event::Resume`) instead of logging them out. Some of those
        // are kept by another edge, which claims them later (during the new leader's
        // placement hold, or after it). Half the leader changes leave the old leader
        // running on, deposed, for a while (cut off from the store, it has not noticed).
        let mut draw = SmallRng::seed_from_u64(self.keep_seed ^ self.gateway_epoch);
        let keep = draw.gen_bool(0.5);
        let linger = draw.gen_bool(0.5).then(|| draw.gen_range(100..4_000));
        let kept: Vec<Resume> = if keep {
            self.control
                .players()
                .filter(|(s, .., w)| {
                    *w == Where::InGame && self.clients.get(s).is_some_and(|c| c.open)
                })
                .filter_map(|(session, online, ..)| {
                    let ids = self.control.session_ids(session)?;
                    Some(Resume {
                        session,
                        account: ids.account,
                        slot: ids.slot,
                        rid: ids.rid,
                        node: ids.node?,
                        fence: ids.fence,
                        online: online.clone(),
                    })
                })
                .collect()
        } else {
            Vec::new()
        };
        // A leader already deposed steps down now (one deposed at a time).
        self.step_down();
        self.lose_queued_hand_outs(&mut draw);
        // A player in game carries a token the store holds: a copy made before its
        // hand-out was committed would be refused by the next leader, and its kept
        // session closed although its node hosts it.
        for k in &kept {
            let stored = self.store.saved(k.account, k.slot).map(|c| c.fence);
            if stored != Some(k.fence) {
                let v = self.violation(format!(
                    "session {} is in game with token {} the store does not hold ({stored:?})",
                    k.session, k.fence
                ));
                self.pending_violation.get_or_insert(v);
            }
        }
        self.log(|| {
            format!(
                "gateway restarts (keeping {} sessions{})",
                kept.len(),
                linger.map_or(String::new(), |ms| format!(
                    "; the old leader runs on deposed for {ms} ms"
                ))
            )
        });
        let old_epoch = self.gateway_epoch;
        self.gateway_epoch += 1;
        // The new process's clock starts now.
        let old_offset = std::mem::replace(&mut self.gw_offset, self.now);
        let old = std::mem::replace(
            &mut self.control,
            Control::new(
                gateway_config(),
                self.world.clone(),
                self.gateway_epoch * 1_000_000_000,
            ),
        );
        let old_tags = std::mem::take(&mut self.gw_tags);
        // The nodes the old leader had (`rc-edge` `Members`), as its edge last heard.
        let old_nodes: BTreeSet<String> = old.directory().nodes().map(|n| n.id.clone()).collect();
        self.gw_started.clear();
        // Every client connection ends with the process; the accounts are free again.
        let open = self.open_sessions();
        for s in open {
            if !kept.iter().any(|k| k.session == s) {
                self.close_session(s, "gateway restart");
            }
        }
        self.logged_on
            .retain(|a| kept.iter().any(|k| k.account == *a));
        if let Some(ms) = linger {
            // The old leader keeps its node links (and what is on its way on them) until
            // it steps down.
            let links = (0..self.nodes.len())
                .filter_map(|i| {
                    let n = &self.nodes[i];
                    n.link.filter(|s| old.is_live(&n.id, *s)).map(|s| (i, s))
                })
                .collect();
            let book = Book(
                (1..=self.opts.accounts as u64)
                    .filter_map(|a| self.store.saved(a, 0).map(|s| ((a, 0), s)))
                    .collect(),
            );
            self.deposed = Some(Deposed {
                control: old,
                epoch: old_epoch,
                offset: old_offset,
                links,
                tags: old_tags,
                book,
            });
            self.at(self.now + ms, Delivery::StepDown { epoch: old_epoch });
        } else {
            // Every node link ends too (the nodes reconnect).
            for i in 0..self.nodes.len() {
                if let Some(serial) = self.nodes[i].link {
                    let d = self.rng.gen_range(1..50);
                    self.at(self.now + d, Delivery::NodeLinkLost { node: i, serial });
                    self.tails.retain(|(n, s, _), _| !(*n == i && *s == serial));
                }
            }
            // Commits not yet acknowledged are lost with the process's memory, but what
            // the store committed stays (this store commits at once).
            self.queue.retain(|_, d| {
                !matches!(d, Delivery::LinkDown { .. } | Delivery::Committed { .. })
            });
        }
        self.kept_pending.clear();
        // The old leader's other edges (none to two), each linking to the new leader at a
        // time of its own, claiming what it kept, and saying it is done (`Claimed`); now
        // and then one never does (it died too, or speaks an older link).
        let edges = draw.gen_range(0..=2usize);
        let link_up: Vec<u64> = (0..edges).map(|_| draw.gen_range(0..3_500)).collect();
        let mut own = Vec::new();
        for k in kept {
            self.kept += 1;
            if edges > 0 && draw.gen_bool(0.25) {
                // Kept by another edge: claimed when it finds the new leader.
                let edge = draw.gen_range(0..edges);
                let after = link_up[edge] + draw.gen_range(0..20);
                let epoch = self.gateway_epoch;
                self.at(
                    self.now + after,
                    Delivery::Claim {
                        epoch,
                        edge,
                        resume: Box::new(k),
                    },
                );
            } else {
                own.push(k);
            }
        }
        let epoch = self.gateway_epoch;
        for (edge, up) in link_up.iter().enumerate() {
            if draw.gen_bool(0.9) {
                self.at(self.now + up + 20, Delivery::EdgeClaimed { epoch, edge });
            }
        }
        // Half the gateways taking over knew the old leader's nodes and other edges, and
        // end their hold once those nodes are back and those edges have claimed: now and
        // then the edge had not heard of the last node to register (it registers after
        // the hold).
        self.takeover_waits = None;
        if draw.gen_bool(0.5) {
            let mut nodes = old_nodes;
            if draw.gen_bool(0.1)
                && let Some(last) = nodes
                    .iter()
                    .nth(draw.gen_range(0..nodes.len().max(1)))
                    .cloned()
            {
                nodes.remove(&last);
            }
            self.informed_takeovers += 1;
            self.log(|| {
                format!("the gateway taking over waits for nodes {nodes:?} and {edges} edges")
            });
            self.takeover_waits = Some(self.now + gateway_config().placement_hold_ms);
            self.gateway_event(Event::TakeOver {
                nodes,
                edges: (0..edges).map(edge_name).collect(),
            });
        }
        for k in own {
            self.kept_pending.insert(k.session);
            self.gateway_event(Event::Resume(Box::new(k)));
        }
        self.gateway_event(Event::Claimed { edge: None });
    }

    /// The leader's store writer goes with it (killed, or cut off from the store): of the
    /// hand-outs it has not answered yet, the last few never reach the store (its queue is
    /// in order), the rest did and only their answers are lost. A deposed leader hears
    /// "refused" for the lost ones.
    fn lose_queued_hand_outs(&mut self, draw: &mut SmallRng) {
        let epoch = self.gateway_epoch;
        let mut queued: Vec<(u64, u64)> = self
            .queue
            .iter()
            .filter_map(|((at, seq), d)| match d {
                Delivery::HandedOut {
                    epoch: e,
                    undo: Some(_),
                    ..
                } if *e == epoch => Some((*seq, *at)),
                _ => None,
            })
            .collect();
        // In the order they were queued (the writer's order).
        queued.sort_unstable();
        let lost = draw.gen_range(0..=queued.len());
        for (seq, at) in queued.into_iter().rev().take(lost) {
            let Some(Delivery::HandedOut { answer, undo, .. }) = self.queue.get_mut(&(at, seq))
            else {
                continue;
            };
            let (
                Event::HandedOut {
                    account,
                    slot,
                    fence,
                    stored,
                },
                Some(prev),
            ) = (answer.as_mut(), undo.take())
            else {
                continue;
            };
            *stored = false;
            self.lost_hand_outs += 1;
            let (account, slot, fence) = (*account, *slot, *fence);
            self.log(|| format!("account {account}'s hand-out {fence} never reached the store"));
            self.store.lose_hand_out(account, slot, fence, prev);
        }
    }

    /// The deposed leader notices and steps down: its process ends, and with it its node
    /// links (the nodes reconnect) and whatever it had not sent.
    fn step_down(&mut self) {
        let Some(d) = self.deposed.take() else {
            return;
        };
        self.log(|| format!("the deposed gateway (epoch {}) steps down", d.epoch));
        for (i, serial) in d.links {
            if self.nodes[i].link == Some(serial) {
                let delay = self.rng.gen_range(1..50);
                self.at(self.now + delay, Delivery::NodeLinkLost { node: i, serial });
            }
            self.tails.retain(|(n, s, _), _| !(*n == i && *s == serial));
        }
    }

    /// The serial of node `i`'s link to the deposed leader, if it holds one.
    fn deposed_link(&self, i: usize) -> Option<u64> {
        self.deposed.as_ref()?.links.get(&i).copied()
    }

    /// When the deposed leader's next timeout is due (simulated ms).
    fn deposed_due(&self) -> Option<u64> {
        let d = self.deposed.as_ref()?;
        d.control.poll_timeout().map(|t| ms(t) + d.offset)
    }

    /// The store's answer to a hand-out reaches the control plane of `epoch` later: at
    /// once mostly, now and then after a writer lagging by seconds (a leader that dies
    /// meanwhile never hears it).
    fn answer_hand_out(
        &mut self,
        epoch: u64,
        (account, slot, fence): (u64, u8, u64),
        undo: Option<u64>,
    ) {
        let d = if self.store_rng.gen_bool(0.8) {
            self.store_rng.gen_range(0..10)
        } else {
            self.store_rng.gen_range(10..2_500)
        };
        let answer = Box::new(Event::HandedOut {
            account,
            slot,
            fence,
            stored: undo.is_some(),
        });
        self.at(
            self.now + d,
            Delivery::HandedOut {
                epoch,
                answer,
                undo,
            },
        );
    }

    fn deposed_event(&mut self, e: Event) {
        let Some(d) = &mut self.deposed else {
            return;
        };
        let now = Duration::from_millis(self.now.saturating_sub(d.offset));
        let actions = d.control.handle(now, e, &d.book);
        self.deposed_actions(actions);
    }

    /// What the deposed leader decided: it still talks to the nodes it holds links to;
    /// the store refuses its writes (saves are never acknowledged, hand-outs never
    /// land); its clients are gone (their sessions were closed or kept by the leader).
    fn deposed_actions(&mut self, actions: Vec<Action>) {
        for a in actions {
            if self.deposed.is_none() {
                return;
            }
            match a {
                Action::Send { node, msg, .. } => self.deposed_send(&node, msg),
                Action::Assign {
                    node,
                    key,
                    generation,
                    ..
                } => self.deposed_send(
                    &node,
                    Msg::AssignInstance {
                        key,
                        generation,
                        ground: Vec::new(),
                        clock_epoch_ms: 0,
                    },
                ),
                Action::CloseLink {
                    node, reason, end, ..
                } => {
                    if let Some(i) = self.node_index(&node)
                        && let Some(serial) = self.deposed_link(i)
                    {
                        let line = format!("deposed gw closes the link of {node}: {reason}");
                        self.close_link(i, serial, end, line);
                    }
                }
                Action::Save(save) => {
                    let (node, id, entries) = save_entries(*save);
                    // Its own book takes what its fencing passes; the store refuses it.
                    if let Some(d) = &mut self.deposed {
                        for (owner, e) in entries {
                            if let Some(k) = owner
                                && d.book.0.get(&k).is_some_and(|c| c.fence == e.state.fence)
                            {
                                d.book.0.insert(k, e.state);
                            }
                        }
                    }
                    self.log(|| format!("the store refuses deposed save {id} of {node}"));
                }
                Action::HandOut {
                    account,
                    slot,
                    fence,
                    transfer,
                } => {
                    // Refused by the store, but the copy it hands out is real.
                    if let Some(d) = &self.deposed {
                        let epoch = d.epoch;
                        self.answer_hand_out(epoch, (account, slot, fence), None);
                    }
                    if let Some(c) = self
                        .deposed
                        .as_mut()
                        .and_then(|d| d.book.0.get_mut(&(account, slot)))
                    {
                        c.fence = fence;
                    }
                    let l = self.deposed_lineage();
                    match (transfer, &mut self.deposed) {
                        (Some(id), Some(d)) => {
                            d.tags.insert(id, l);
                        }
                        (None, Some(d)) => {
                            let epoch = d.epoch;
                            self.handed.insert((epoch, account), l);
                        }
                        _ => {}
                    }
                }
                Action::TransferBegan {
                    id,
                    session,
                    recovery,
                    ..
                } => {
                    let tag = if recovery {
                        Some(self.deposed_lineage())
                    } else {
                        self.carried_tag(session)
                    };
                    if let (Some(t), Some(d)) = (tag, &mut self.deposed) {
                        d.tags.insert(id, t);
                    }
                }
                _ => {}
            }
        }
    }

    fn deposed_send(&mut self, node: &str, msg: Msg) {
        let Some(i) = self.node_index(node) else {
            return;
        };
        let Some(serial) = self.deposed_link(i) else {
            return;
        };
        if self.nodes[i].link != Some(serial)
            || self
                .deposed
                .as_ref()
                .is_none_or(|d| !d.control.is_live(node, serial))
        {
            return;
        }
        self.send_to_node(i, serial, msg, true);
    }

    // ----- deliveries -------------------------------------------------------------------

    fn deliver(&mut self, d: Delivery) -> Result<(), Violation> {
        match d {
            Delivery::Msg {
                node,
                serial,
                dir: Dir::ToGateway,
                msg,
                tag,
            } => {
                if self.deposed_link(node) == Some(serial) {
                    let id = self.nodes[node].id.clone();
                    self.log(|| format!("{id} -> deposed gw: {}", describe(&msg)));
                    self.current_tags = tag;
                    self.deposed_event(Event::NodeMsg {
                        node: id,
                        serial,
                        msg: *msg,
                    });
                    self.current_tags.clear();
                    return Ok(());
                }
                // A link the gateway no longer has (it restarted, or closed it) is gone.
                if self.nodes.get(node).and_then(|n| n.link) != Some(serial)
                    && !self.control.is_live(&self.nodes[node].id, serial)
                {
                    return Ok(());
                }
                let id = self.nodes[node].id.clone();
                self.log(|| format!("{id} -> gw: {}", describe(&msg)));
                self.current_tags = tag;
                let e = Event::NodeMsg {
                    node: id,
                    serial,
                    msg: *msg,
                };
                self.gateway_event(e);
                self.current_tags.clear();
            }
            Delivery::Msg {
                node,
                serial,
                dir: Dir::ToNode,
                msg,
                tag,
            } => {
                let n = &self.nodes[node];
                if !n.up || n.link != Some(serial) {
                    return Ok(());
                }
                if n.paused {
                    // Read when it resumes, before anything that arrives after it (found
                    // by the simulator, seed 750,652: a message put back by a fixed delay
                    // was overtaken by a later one on the same link).
                    self.nodes[node].held.push_back((serial, msg, tag));
                    return Ok(());
                }
                let id = n.id.clone();
                self.log(|| format!("gw -> {id}: {}", describe(&msg)));
                self.node_msg(node, *msg, &tag);
            }
            Delivery::LinkDown { node, serial } if self.deposed_link(node) == Some(serial) => {
                let id = self.nodes[node].id.clone();
                self.log(|| format!("deposed gw: link {serial} of {id} closed"));
                if let Some(d) = &mut self.deposed {
                    d.links.remove(&node);
                }
                self.deposed_event(Event::NodeDown {
                    node: id,
                    serial,
                    reason: "connection lost".into(),
                });
            }
            Delivery::LinkDown { node, serial } => {
                let id = self.nodes[node].id.clone();
                self.log(|| format!("gw: link {serial} of {id} closed"));
                self.gateway_event(Event::NodeDown {
                    node: id,
                    serial,
                    reason: "connection lost".into(),
                });
            }
            Delivery::NodeLinkLost { node, serial } => {
                let n = &mut self.nodes[node];
                if n.up && n.link == Some(serial) {
                    n.link = None;
                    // `link.rs`: the handoffs the link carried out unanswered are given up.
                    let fx = n.core.gateway_lost();
                    self.log(|| format!("node-{node}: link {serial} lost; reconnecting"));
                    self.effects(node, fx);
                    let at = self.now + RECONNECT_MS + self.rng.gen_range(0..1_000);
                    self.at(at, Delivery::Connect { node });
                }
            }
            Delivery::Connect { node } => {
                let n = &self.nodes[node];
                if !n.up || n.link.is_some() {
                    return Ok(());
                }
                if n.paused {
                    self.at(self.now + 100, Delivery::Connect { node });
                    return Ok(());
                }
                self.connect(node);
            }
            Delivery::Resume { node } => {
                if self.nodes[node].up && self.nodes[node].paused {
                    self.log(|| format!("node-{node} resumes"));
                    self.nodes[node].paused = false;
                    self.nodes[node].next_tick = self.now;
                    self.nodes[node].next_heartbeat = self.now;
                    self.nodes[node].stable_since = self.now;
                    let held = std::mem::take(&mut self.nodes[node].held);
                    for (serial, msg, tag) in held {
                        let n = &self.nodes[node];
                        if !n.up || n.link != Some(serial) {
                            continue;
                        }
                        let id = n.id.clone();
                        self.log(|| format!("gw -> {id}: {} (read on resuming)", describe(&msg)));
                        self.node_msg(node, *msg, &tag);
                    }
                }
            }
            Delivery::Restart { node } => {
                if !self.nodes[node].up {
                    self.log(|| format!("node-{node} starts again, empty"));
                    let n = &mut self.nodes[node];
                    n.up = true;
                    n.paused = false;
                    n.next_tick = self.now;
                    n.next_heartbeat = self.now + HEARTBEAT_MS;
                    self.connect(node);
                }
            }
            Delivery::StepDown { epoch } => {
                if self.deposed.as_ref().is_some_and(|d| d.epoch == epoch) {
                    self.step_down();
                }
            }
            Delivery::Claim {
                epoch,
                edge,
                resume,
            } => {
                let session = resume.session;
                // An informed takeover ends its hold early only once every edge it waits
                // for has claimed: a claim after that is one it did not wait for.
                if epoch == self.gateway_epoch
                    && let Some(deadline) = self.takeover_waits
                    && self.now < deadline
                    && !self.control.directory().is_holding()
                {
                    let v = self.violation(format!(
                        "edge {edge} claims session {session} after the placement hold ended early"
                    ));
                    self.pending_violation.get_or_insert(v);
                }
                if epoch == self.gateway_epoch && self.clients.get(&session).is_some_and(|c| c.open)
                {
                    self.log(|| format!("an edge claims kept session {session}"));
                    self.kept_pending.insert(session);
                    self.gateway_event(Event::Resume(resume));
                }
            }
            Delivery::EdgeClaimed { epoch, edge } => {
                if epoch == self.gateway_epoch {
                    self.log(|| format!("edge {edge} has claimed all it kept"));
                    self.gateway_event(Event::Claimed {
                        edge: Some(edge_name(edge)),
                    });
                }
            }
            Delivery::HandedOut { epoch, answer, .. } => {
                if epoch == self.gateway_epoch {
                    self.gateway_event(*answer);
                } else if self.deposed.as_ref().is_some_and(|d| d.epoch == epoch) {
                    self.deposed_event(*answer);
                }
            }
            Delivery::Committed {
                node,
                serial,
                snapshot_id,
            } => {
                self.post(
                    node,
                    serial,
                    Dir::ToNode,
                    Msg::SnapshotAck { snapshot_id },
                    Vec::new(),
                );
            }
        }
        Ok(())
    }

    /// A node registers on a new link, reporting what it runs; unacknowledged snapshots
    /// follow.
    fn connect(&mut self, i: usize) {
        let serial = self.next_serial;
        self.next_serial += 1;
        let Some(r) = self.register(i, serial) else {
            self.log(|| format!("node-{i}: the handshake on link {serial} failed"));
            return;
        };
        self.nodes[i].link = Some(serial);
        let id = self.nodes[i].id.clone();
        // While a deposed leader runs on, it still accepts nodes: a node trying every
        // gateway address may register with either.
        let to_deposed = self.deposed.is_some() && self.rng.gen_bool(0.5);
        let whom = if to_deposed { "the deposed gw" } else { "gw" };
        self.log(|| {
            format!(
                "{id} registers with {whom} on link {serial} running {}",
                r.running.len()
            )
        });
        let e = Event::NodeUp {
            node: r.node_id,
            addr: r.advertised_addr,
            capacity: r.capacity,
            serial,
            running: r.running,
        };
        if to_deposed {
            if let Some(d) = &mut self.deposed {
                d.links.insert(i, serial);
            }
            self.deposed_event(e);
        } else {
            self.gateway_event(e);
        }
        self.resend_unacked(i, serial);
        self.nodes[i].stable_since = self.now;
    }

    fn node_index(&self, id: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.id == id)
    }

    /// The serial of node `i`'s link, when the gateway has it live.
    fn gateway_link(&self, i: usize) -> Option<u64> {
        let n = self.nodes.get(i)?;
        n.link.filter(|s| self.control.is_live(&n.id, *s))
    }

    // ----- the gateway ------------------------------------------------------------------

    fn gateway_event(&mut self, e: Event) {
        let now = self.gw_now();
        let actions = self.control.handle(now, e, &self.store);
        // Checked by the caller's `check`; a violation here is recorded there.
        if let Err(v) = self.gateway_actions(actions) {
            self.pending_violation.get_or_insert(v);
        }
    }

    fn gateway_actions(&mut self, actions: Vec<Action>) -> Result<(), Violation> {
        for a in actions {
            match a {
                Action::Send { node, msg, .. } => self.gateway_send(&node, msg),
                Action::Assign {
                    node,
                    key,
                    generation,
                    ..
                } => self.gateway_send(
                    &node,
                    Msg::AssignInstance {
                        key,
                        generation,
                        ground: Vec::new(),
                        clock_epoch_ms: 0,
                    },
                ),
                Action::CloseClient { session, .. } => {
                    self.close_session(session, "closed by the gateway")
                }
                Action::CloseLink {
                    node, reason, end, ..
                } => {
                    if let Some(i) = self.node_index(&node)
                        && let Some(serial) = self.nodes[i].link
                    {
                        let line = format!("gw closes the link of {node}: {reason}");
                        self.close_link(i, serial, end, line);
                    }
                }
                Action::Save(save) => self.save(*save)?,
                Action::HandOut {
                    account,
                    slot,
                    fence,
                    transfer,
                } => {
                    let undo = self.store.saved(account, slot).map_or(0, |c| c.fence);
                    self.store.book.hand_out(account, slot, fence);
                    self.store.book.take_persist();
                    let epoch = self.gateway_epoch;
                    self.answer_hand_out(epoch, (account, slot, fence), Some(undo));
                    // Handed out again: a new lineage, which the transfer's copy (or the
                    // `AttachPlayer` that follows) carries.
                    let l = self.new_lineage(account);
                    match transfer {
                        Some(id) => {
                            self.gw_tags.insert(id, l);
                        }
                        None => {
                            self.handed.insert((self.gateway_epoch, account), l);
                        }
                    }
                }
                Action::LoggedOff { account } => {
                    self.logged_on.remove(&account);
                }
                Action::Released { session, .. } => self.close_session(session, "released"),
                Action::TransferEnded { id, .. } => {
                    self.gw_started.remove(&id);
                }
                Action::Count(gateway::control::Count::HandoffCompleted) => self.handoffs += 1,
                Action::Count(gateway::control::Count::Recovery) => self.recoveries += 1,
                Action::Route { session, .. } if self.kept_pending.remove(&session) => {
                    self.adopted += 1;
                }
                Action::TransferBegan {
                    id,
                    session,
                    recovery,
                    ..
                } => {
                    let tag = if recovery {
                        // A recovery hands the character out from the store: a new lineage.
                        session
                            .and_then(|s| self.clients.get(&s))
                            .map(|c| c.account)
                            .map(|a| self.new_lineage(a))
                    } else {
                        self.carried_tag(session)
                    };
                    if let Some(t) = tag {
                        self.gw_tags.insert(id, t);
                    }
                    let now = self.gw_now();
                    self.gw_started.insert(id, now);
                    if recovery && let Some(c) = session.and_then(|s| self.clients.get(&s)) {
                        // Progress is counted from the hand-out.
                        self.store.saved_at.insert(c.account, self.now);
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The lineage the message being handled carries for `session` (a node's
    /// `Transfer`): a handoff carries its copy's lineage on.
    fn carried_tag(&self, session: Option<SessionId>) -> Option<u64> {
        let s = session?;
        self.current_tags
            .iter()
            .find(|(x, _)| *x == s)
            .map(|(_, l)| *l)
    }

    /// A gateway closes node `i`'s link `serial` (`Action::CloseLink`): the node notices
    /// and reconnects; a draining link still delivers what is on its way.
    fn close_link(&mut self, i: usize, serial: u64, end: LinkEnd, line: String) {
        if end == LinkEnd::Closed {
            return;
        }
        self.log(|| line);
        let d = self.rng.gen_range(1..30);
        self.at(self.now + d, Delivery::NodeLinkLost { node: i, serial });
        if end != LinkEnd::Draining {
            self.tails.retain(|(n, s, _), _| !(*n == i && *s == serial));
        }
    }

    fn gateway_send(&mut self, node: &str, msg: Msg) {
        let Some(i) = self.node_index(node) else {
            return;
        };
        let Some(serial) = self.gateway_link(i) else {
            return;
        };
        self.send_to_node(i, serial, msg, false);
    }

    /// Posts a gateway's message to node `i` on link `serial`, tagged with the lineages
    /// it carries; `deposed`: from the deposed leader (its hand-outs never reach the
    /// store).
    fn send_to_node(&mut self, i: usize, serial: u64, msg: Msg, deposed: bool) {
        let mut tag = Vec::new();
        match &msg {
            Msg::AttachPlayer { session, .. } => {
                // A login hands the character out from the store: a new lineage.
                if let Some(account) = self.clients.get(session).map(|c| c.account) {
                    let epoch = match &self.deposed {
                        Some(d) if deposed => d.epoch,
                        _ => self.gateway_epoch,
                    };
                    let l = match self.handed.remove(&(epoch, account)) {
                        Some(l) => l,
                        None if deposed => self.deposed_lineage(),
                        None => self.new_lineage(account),
                    };
                    tag.push((*session, l));
                    if !deposed {
                        // Progress is counted from the hand-out.
                        self.store.saved_at.insert(account, self.now);
                    }
                }
            }
            Msg::Transfer(t) => {
                let tags = match &self.deposed {
                    Some(d) if deposed => &d.tags,
                    _ => &self.gw_tags,
                };
                if let (Some(s), Some(l)) = (t.session, tags.get(&t.transfer_id)) {
                    tag.push((s, *l));
                }
            }
            _ => {}
        }
        self.post(i, serial, Dir::ToNode, msg, tag);
    }

    /// A new lineage of `account`'s character, handed out by the leader: the current one.
    fn new_lineage(&mut self, account: u64) -> u64 {
        self.lineage_seq += 1;
        let l = self.lineage_seq;
        self.lineage.insert(account, l);
        l
    }

    /// A lineage the deposed leader handed out: its hand-out never reaches the store, so
    /// it is never the current one, and no write of it may ever be accepted.
    fn deposed_lineage(&mut self) -> u64 {
        self.lineage_seq += 1;
        DEPOSED_LINEAGE | self.lineage_seq
    }

    /// The store commits a save the gateway accepted, as the hub does (a group is refused
    /// whole when one of its copies is fenced by its token); the oracle then checks that
    /// no write of a superseded lineage got through.
    fn save(&mut self, save: Save) -> Result<(), Violation> {
        let (node, snapshot_id, entries) = save_entries(save);
        let target = |book: &AccountBook, owner: Option<(u64, u8)>, e: &SnapshotEntry| {
            owner.or_else(|| book.find_character(&e.state.name))
        };
        let stale = entries
            .iter()
            .any(|(owner, e)| self.store.book.superseded(*owner, &e.state));
        if !stale {
            for (owner, e) in entries {
                let Some((account, slot)) = target(&self.store.book, owner, &e) else {
                    continue;
                };
                let tag = self
                    .current_tags
                    .iter()
                    .find(|(s, _)| *s == e.session)
                    .map(|(_, l)| *l);
                // Stale: a newer lineage of the character has been live (a hand-out that
                // never became live, its gateway gone, fences nothing).
                let newest = self.materialized.get(&account).copied().unwrap_or(0);
                if let Some(t) = tag {
                    if t & DEPOSED_LINEAGE != 0 {
                        return Err(self.violation(format!(
                            "fencing: a write of account {account}'s character from {node} was \
                             accepted from a copy the deposed leader handed out"
                        )));
                    }
                    if t < newest {
                        return Err(self.violation(format!(
                            "fencing: a write of account {account}'s character from {node} \
                             (lineage {t}) was accepted after lineage {newest} was live"
                        )));
                    }
                    let m = self.materialized.entry(account).or_insert(0);
                    *m = (*m).max(t);
                }
                if self.store.book.save_character(account, slot, e.state) {
                    self.store.saved_at.insert(account, self.now);
                }
            }
            self.store.book.take_persist();
        }
        if let Some(i) = self.node_index(&node)
            && let Some(serial) = self.nodes[i].link
        {
            let d = self.rng.gen_range(0..10);
            self.at(
                self.now + d,
                Delivery::Committed {
                    node: i,
                    serial,
                    snapshot_id,
                },
            );
        }
        Ok(())
    }

    /// The gateway's clock: time since its process started.
    fn gw_now(&self) -> Duration {
        Duration::from_millis(self.now.saturating_sub(self.gw_offset))
    }

    fn violation(&self, what: String) -> Violation {
        Violation {
            at_ms: self.now,
            what,
        }
    }
}

/// A save's node, snapshot id and characters, one or a group alike.
fn save_entries(save: Save) -> (String, u64, SaveEntries) {
    match save {
        Save::One {
            node,
            snapshot_id,
            session,
            owner,
            reason,
            state,
        } => (
            node,
            snapshot_id,
            vec![(
                owner,
                SnapshotEntry {
                    session,
                    reason,
                    state: *state,
                },
            )],
        ),
        Save::Group {
            node,
            snapshot_id,
            entries,
            ..
        } => (node, snapshot_id, entries),
    }
}

/// The name (`hub::edge_key`) of the old leader's other edge `i`.
fn edge_name(i: usize) -> String {
    format!("e{i}@10.0.1.{i}:4000")
}

fn gateway_config() -> ControlConfig {
    ControlConfig {
        standalone: false,
        placement_hold_ms: 2_000,
        node_timeout_ms: NODE_TIMEOUT_MS,
        shutdown_timeout: Duration::from_secs(10),
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn describe(m: &Msg) -> String {
    match m {
        Msg::AssignInstance {
            key, generation, ..
        } => format!("AssignInstance {key} g{generation}"),
        Msg::StopInstance { key, generation } => format!("StopInstance {key} g{generation}"),
        Msg::InstanceReady { key, generation } => format!("InstanceReady {key} g{generation}"),
        Msg::InstanceStopped { key, generation } => format!("InstanceStopped {key} g{generation}"),
        Msg::AttachPlayer {
            session,
            key,
            generation,
            ..
        } => {
            format!("AttachPlayer s{session} {key} g{generation}")
        }
        Msg::DetachPlayer { session } => format!("DetachPlayer s{session}"),
        Msg::PlayerDetached { session, key } => match key {
            Some(k) => format!("PlayerDetached s{session} {k}"),
            None => format!("PlayerDetached s{session}"),
        },
        Msg::PlayerMoved { session, key } => format!("PlayerMoved s{session} {key}"),
        Msg::WarpPlayer {
            session,
            area,
            instance,
        } => format!("WarpPlayer s{session} {area} #{instance}"),
        Msg::Transfer(t) => format!(
            "Transfer #{} s{:?} -> {} #{} g{}",
            t.transfer_id, t.session, t.area, t.instance, t.generation
        ),
        Msg::TransferAck { transfer_id, .. } => format!("TransferAck #{transfer_id}"),
        Msg::TransferNack {
            transfer_id,
            reason,
        } => format!("TransferNack #{transfer_id} ({reason})"),
        Msg::TransferCommit { transfer_id } => format!("TransferCommit #{transfer_id}"),
        Msg::TransferAbort { transfer_id } => format!("TransferAbort #{transfer_id}"),
        Msg::Snapshot {
            snapshot_id,
            session,
            ..
        } => format!("Snapshot {snapshot_id} s{session}"),
        Msg::SnapshotGroup(g) => format!(
            "SnapshotGroup {} {} g{} [{}]",
            g.snapshot_id,
            g.key,
            g.generation,
            g.entries
                .iter()
                .map(|e| format!("s{}", e.session))
                .collect::<Vec<_>>()
                .join(",")
        ),
        Msg::SnapshotAck { snapshot_id } => format!("SnapshotAck {snapshot_id}"),
        Msg::Heartbeat { players, .. } => format!("Heartbeat ({players} players)"),
        other => other.name().to_owned(),
    }
}

mod checks;
mod node;
mod shrink;

use shrink::Fault;
