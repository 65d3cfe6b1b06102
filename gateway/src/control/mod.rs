//! The gateway's control plane as a pure state machine: login placement and attach, the
//! two-phase SetArea handoff between nodes, snapshot fencing, node up/down and loss
//! recovery, `RemoveZoneInstance`, timeouts and shutdown.
//!
//! [`Control::handle`] takes one [`Event`] at a time `now` and returns the [`Action`]s the
//! hub shell ([`crate::hub`]) carries out, in order: messages to nodes, packets and closes
//! for clients, route switches, saves to acknowledge once committed, counters and trace
//! marks. [`Control::poll_timeout`] names the next instant something is due and
//! [`Control::on_timeout`] does it. Nothing here reads a clock, owns a socket, a channel, a
//! lock or a task: `now` is passed in (time since the gateway started), so the same
//! schedule of events gives the same actions, which is what the deterministic simulator
//! (`cluster-tests --bin simulate`, docs/testing.md) relies on.
//!
//! Invariants kept here (checked by the simulator after every step):
//! * a player is attached to at most one node (`Player::node`), and a transfer carries
//!   at most one player; a player in a transfer keeps its source node until the commit;
//! * only the node that hosts a session saves it or moves it (fencing, [`Save`]);
//! * every transfer ends (committed, refused, aborted or timed out) by its deadline.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use shared::content::World;
use shared::internal::{
    ActorStateDto, ArrivalDto, ErrorCode, Generation, GroundItemDto, InstanceKey, InstanceLoad,
    Msg, RunningInstance, SessionId, SnapshotEntry, SnapshotGroup, SnapshotReasonDto, TransferId,
    TransferMinter,
};
use shared::proto::{ServerPacket, StartGameReply};

use crate::chat::{self, OnlinePlayer};
use crate::directory::{self, Directory, NodeId};
use crate::session::{AccountId, close};

mod handoff;
mod removal;

pub use handoff::{DECISION_TIMEOUT, FORWARD_TIMEOUT, MAX_HANDOFF, RECOVER_TIMEOUT};
pub use removal::REMOVE_TIMEOUT;

/// Lowest player RuntimeID; players use `1..=MAX_PLAYER_RID` cluster-wide (NPCs use the
/// range above, per instance).
pub const MIN_PLAYER_RID: u16 = 1;
/// Highest player RuntimeID.
pub const MAX_PLAYER_RID: u16 = 15_999;
/// How long a login waits for its instance to be placed and ready.
pub const ATTACH_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a leaving player's node has to send its last snapshot.
pub const DETACH_TIMEOUT: Duration = Duration::from_secs(15);
/// Reliable frames kept for a session whose zone is not attached yet.
pub const MAX_QUEUED_FRAMES: usize = 256;
/// Ended sessions remembered for snapshot fencing.
const MAX_ENDED_SESSIONS: usize = 65_536;
/// How often work without a deadline of its own (`RemoveZoneInstance`'s warps, the
/// shutdown's progress) is looked at again.
pub const POLL_INTERVAL: Duration = Duration::from_millis(200);
/// The script run once when the cluster starts.
pub const STARTUP_SCRIPT: &str = "Startup";
/// Its function.
pub const STARTUP_FUNC: &str = "Main";

/// What the placement hold of a gateway taking over waits for ([`Event::TakeOver`]).
#[derive(Debug, Clone)]
struct Takeover {
    /// The previous leader's nodes (done once each is registered here).
    nodes: BTreeSet<NodeId>,
    /// Whether this gateway's own edge's claims are all in.
    own_claimed: bool,
    /// The other edges still to say they are done claiming.
    edges: BTreeSet<String>,
}

/// What the control plane is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlConfig {
    /// `--standalone`: the embedded node starts empty, so placement is not held.
    pub standalone: bool,
    /// How long placement waits after start for nodes to report what they still run.
    pub placement_hold_ms: u64,
    /// A node silent this long is removed and its instances re-placed.
    pub node_timeout_ms: u64,
    /// How long a shutdown waits for the players' last saves.
    pub shutdown_timeout: Duration,
}

impl ControlConfig {
    /// The control plane's part of the gateway's configuration.
    pub fn of(cfg: &crate::config::GatewayConfig) -> Self {
        Self {
            standalone: cfg.standalone,
            placement_hold_ms: cfg.placement_hold_ms,
            node_timeout_ms: cfg.node_timeout_ms,
            shutdown_timeout: cfg.shutdown_timeout(),
        }
    }
}

/// The saved characters, as the control plane reads them (the account book, behind the
/// shell's lock; a map in the simulator).
pub trait Characters {
    /// The last saved state of a character, with its account's name and e-mail filled in
    /// (`PlayerAccountName`, `PlayerAccountEmail`).
    fn saved(&self, account: AccountId, slot: u8) -> Option<ActorStateDto>;
}

/// A login entering the world (`P_StartGame` succeeded).
#[derive(Debug, Clone, PartialEq)]
pub struct Login {
    /// Session.
    pub session: SessionId,
    /// Account.
    pub account: AccountId,
    /// Character slot.
    pub slot: u8,
    /// DM account.
    pub is_dm: bool,
    /// The saved character.
    pub state: Box<ActorStateDto>,
    /// The account's ignore list.
    pub ignore: Vec<String>,
    /// The account's name (the scripts' `PlayerAccountName`).
    pub user: String,
    /// The account's e-mail.
    pub email: String,
    /// Whether the client is still connected.
    pub connected: bool,
}

/// Everything the control plane hears.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A session entered the world.
    Entered(Box<Login>),
    /// In-game reliable frames for the session's zone.
    Frames {
        /// Session.
        session: SessionId,
        /// Frames, byte for byte.
        frames: Bytes,
    },
    /// The client connection ended.
    Gone {
        /// Session.
        session: SessionId,
    },
    /// A node registered on a connection.
    NodeUp {
        /// Node id.
        node: NodeId,
        /// Advertised address.
        addr: String,
        /// Capacity.
        capacity: u32,
        /// Connection serial.
        serial: u64,
        /// What it still runs.
        running: Vec<RunningInstance>,
    },
    /// A control message from a node.
    NodeMsg {
        /// Node id.
        node: NodeId,
        /// Connection serial.
        serial: u64,
        /// The message.
        msg: Msg,
    },
    /// A node's connection ended.
    NodeDown {
        /// Node id.
        node: NodeId,
        /// Connection serial.
        serial: u64,
        /// Why.
        reason: String,
    },
    /// Save every in-game player (detach them), then end ([`Action::ShutdownDone`]).
    Shutdown,
    /// A session of the gateway this one took over from, kept through the change by its
    /// edge (this gateway, before it led): its player is adopted where a zone node still
    /// hosts it, instead of being logged out; unless a node reports it within
    /// [`RESUME_WINDOW`], its client is closed and the account logged off.
    Resume(Box<Resume>),
    /// This gateway takes over from a leader that had `nodes` registered and `edges` linked
    /// besides this gateway (its edge heard so, `rc-edge` `Members`): the placement hold
    /// ends as soon as each of these nodes has registered here and every claimer (this
    /// gateway's own edge, and each of `edges`) has said [`Event::Claimed`], not at its
    /// deadline. A node missing from `nodes` (registered after the edge last heard) only
    /// registers after the hold, as a slow node would: its copies are orphans then,
    /// detached and fenced. An edge that never says it is done (it died too, or speaks an
    /// older link) keeps the hold to its deadline.
    TakeOver {
        /// The previous leader's registered nodes.
        nodes: BTreeSet<NodeId>,
        /// The previous leader's other edges, as `name@address` (`hub::edge_key`).
        edges: BTreeSet<String>,
    },
    /// Every session a claimer kept has been handed over ([`Event::Resume`], each before
    /// this) or given up: no claim of its is still to come. `edge`: `None` for this
    /// gateway's own edge, else the edge's `name@address`.
    Claimed {
        /// Who is done claiming.
        edge: Option<String>,
    },
    /// The store committed ([`Action::HandOut`]) a character's new fencing token, or
    /// refused it (`stored` false: a deposed leader's write, a failing store). A login's
    /// `AttachPlayer` waits for this, and so does the `Transfer` of a recovery or of a
    /// handoff whose source node was given up: no copy of a character ever carries a token the
    /// store may not hold, so the next leader can always adopt what the nodes report.
    HandedOut {
        /// The account.
        account: AccountId,
        /// The character slot.
        slot: u8,
        /// The token.
        fence: u64,
        /// Committed (false: refused or failed).
        stored: bool,
    },
}

/// A session kept through a leader change ([`Event::Resume`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Resume {
    /// The session (the previous leader's id, which the zone nodes know it by).
    pub session: SessionId,
    /// The account.
    pub account: AccountId,
    /// The character slot.
    pub slot: u8,
    /// The player's RuntimeID.
    pub rid: u16,
    /// The node the previous leader had the player on, as last heard.
    pub node: NodeId,
    /// The fencing token of the player's copy there (the previous leader's last hand-out
    /// of the character): adopted only if the store holds the same, so a copy older than
    /// a recovery the edge did not hear of is never taken for the player.
    pub fence: u64,
    /// The player as chat and parties see him.
    pub online: OnlinePlayer,
}

/// Who an in-game session is, as an edge keeps it ([`Control::session_ids`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionIds {
    /// The account.
    pub account: AccountId,
    /// The character slot.
    pub slot: u8,
    /// The RuntimeID.
    pub rid: u16,
    /// The node hosting the player, when attached.
    pub node: Option<NodeId>,
    /// The fencing token this gateway last handed the character out with.
    pub fence: u64,
}

/// How long a kept session waits for a zone node to report its player (the nodes
/// register with the new leader within their reconnect backoff).
pub const RESUME_WINDOW: Duration = Duration::from_secs(15);

/// How long after the placement hold logins may still wait ([`Control::settling`]; they
/// go on sooner once every orphan's node says it left): the
/// orphans the nodes reported are detached at their registration, and their last saves
/// (progress since the last checkpoint, items picked up or dropped) reach the store
/// within this; a login loaded before would take the character back to its checkpoint
/// and fence that save out, while the ground keeps what he dropped or lacks what he
/// picked up (an item made or lost: found by `deploy/failover.sh ECONOMY=1
/// LOST_AFTER=1`).
pub const SETTLE_AFTER_HOLD: Duration = Duration::from_secs(1);

/// Which trace an action belongs to (the shell keeps the spans).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trace {
    /// Whatever trace the event came in (the shell's current span).
    Current,
    /// The session's login (`session.login`), until it is attached.
    Login(SessionId),
    /// The transfer's (`handoff.gateway`).
    Transfer(TransferId),
}

/// A counter the shell adds one to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    /// A login entered the world.
    Login,
    /// Frames forwarded to a zone.
    FramesUp,
    /// Frames dropped (no zone to take them).
    FramesDropped,
    /// A message from a stale link or naming an unknown transfer.
    InternalRefused,
    /// A write from a node that no longer owns what it wrote (fencing).
    Fenced,
    /// A checkpoint group refused as a whole.
    GroupRefused,
    /// An instance lost with its node.
    InstanceLost,
    /// A handoff began.
    HandoffStarted,
    /// A transfer was forwarded to its destination.
    TransferRouted,
    /// A transfer was refused.
    TransferRefused,
    /// A handoff was rolled back.
    HandoffRolledBack,
    /// A handoff committed.
    HandoffCompleted,
    /// A player was put back from its last save.
    Recovery,
    /// A node reported an instance stuck (its tick watchdog).
    InstanceStuck,
    /// A node's tick watchdog gave an instance up; it was placed anew.
    InstanceGivenUp,
}

/// How a node's link ends ([`Action::CloseLink`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkEnd {
    /// It already closed (`Event::NodeDown`): only forget it.
    Closed,
    /// The gateway closes it and forgets it (the node missed its heartbeats).
    Dropped,
    /// The gateway closes it but keeps it until it has closed (a deregistered node).
    Draining,
}

/// A save the shell stores, acknowledging `snapshot_id` to `node` once committed.
#[derive(Debug, Clone, PartialEq)]
pub enum Save {
    /// One character (`Msg::Snapshot`).
    One {
        /// The node to acknowledge.
        node: NodeId,
        /// Its id.
        snapshot_id: u64,
        /// The session.
        session: SessionId,
        /// The character's account and slot, when the session is known here; the shell
        /// finds the character by name otherwise.
        owner: Option<(AccountId, u8)>,
        /// Why it was saved.
        reason: SnapshotReasonDto,
        /// The character.
        state: Box<ActorStateDto>,
    },
    /// An instance's atomic checkpoint (`Msg::SnapshotGroup`): one transaction.
    Group {
        /// The node to acknowledge.
        node: NodeId,
        /// Its id.
        snapshot_id: u64,
        /// The instance.
        key: InstanceKey,
        /// The characters, each with its owner when known.
        entries: Vec<(Option<(AccountId, u8)>, SnapshotEntry)>,
        /// The ground items replacing the stored ones (`None`: unchanged).
        ground: Option<Vec<GroundItemDto>>,
    },
}

/// What the shell does, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Send a control message to a node (dropped when its link is gone).
    Send {
        /// The node.
        node: NodeId,
        /// The message.
        msg: Msg,
        /// Its trace.
        trace: Trace,
    },
    /// Send `AssignInstance`, with the instance's stored ground items and the clock epoch.
    Assign {
        /// The node.
        node: NodeId,
        /// The instance.
        key: InstanceKey,
        /// Its new generation.
        generation: Generation,
        /// Its trace.
        trace: Trace,
    },
    /// Send a packet to a client.
    Packet {
        /// Session.
        session: SessionId,
        /// The packet.
        packet: ServerPacket,
    },
    /// Close a client connection (after what was queued).
    CloseClient {
        /// Session.
        session: SessionId,
        /// Application code (transport.md).
        code: u32,
        /// Why.
        reason: &'static str,
    },
    /// Route the session's traffic to `node`'s connection (the datagram fast path).
    Route {
        /// Session.
        session: SessionId,
        /// Its node.
        node: NodeId,
    },
    /// The session has no route (its traffic is dropped).
    Unroute {
        /// Session.
        session: SessionId,
    },
    /// Close a node's link.
    CloseLink {
        /// The node.
        node: NodeId,
        /// Application code.
        code: u32,
        /// Why.
        reason: &'static str,
        /// What becomes of the link.
        end: LinkEnd,
    },
    /// Store a snapshot; acknowledge it once committed.
    Save(Box<Save>),
    /// Delete the stored ground items of an instance removed for good.
    ForgetGround {
        /// The instance.
        key: InstanceKey,
    },
    /// The character is handed out from the store with a new fencing token (a login, a
    /// recovery, a transfer whose source node was given up): store it, so older copies'
    /// saves are refused from now on.
    HandOut {
        /// The account.
        account: AccountId,
        /// The character slot.
        slot: u8,
        /// The new token.
        fence: u64,
        /// The transfer whose copy now carries it (its source node was given up).
        transfer: Option<TransferId>,
    },
    /// The account may log in again.
    LoggedOff {
        /// The account.
        account: AccountId,
    },
    /// A session left the world (its party is told; its login trace, if open, ends).
    Released {
        /// Session.
        session: SessionId,
        /// Its character's name.
        name: String,
    },
    /// A session kept through a leader change was adopted (its party, as its edge kept
    /// it, is put back).
    Adopted {
        /// Session.
        session: SessionId,
        /// Its character's name.
        name: String,
    },
    /// A session's zone changed (its new zone learns its party).
    ZoneChanged {
        /// Session.
        session: SessionId,
    },
    /// A login was attached: its trace ends.
    Attached {
        /// Session.
        session: SessionId,
    },
    /// Add one to a counter.
    Count(Count),
    /// A handoff completed this long after the gateway first heard of it.
    HandoffLatency(Duration),
    /// A transfer began: the shell opens its trace (`handoff.gateway`) under `parent`.
    TransferBegan {
        /// Which.
        id: TransferId,
        /// The player.
        session: Option<SessionId>,
        /// Destination.
        key: InstanceKey,
        /// The source node, if a node holds the actor.
        source: Option<NodeId>,
        /// The gateway puts back a player whose node was lost.
        recovery: bool,
        /// The trace it belongs to.
        parent: Trace,
    },
    /// A transfer was forwarded to its destination node.
    TransferForwarded {
        /// Which.
        id: TransferId,
        /// The destination node.
        dest: NodeId,
    },
    /// A transfer is settled: its trace ends with this outcome.
    TransferEnded {
        /// Which.
        id: TransferId,
        /// How it ended.
        outcome: &'static str,
    },
    /// The actions up to the next [`Action::NodeLostEnd`] are one trace (`node.lost`).
    NodeLost {
        /// The node(s).
        node: String,
        /// Why.
        reason: String,
        /// It deregistered (drained) first.
        deregistered: bool,
    },
    /// The end of a [`Action::NodeLost`] trace.
    NodeLostEnd,
    /// The shutdown is complete: close every client and answer once the store committed.
    ShutdownDone,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for the instance; frames are queued.
    Attaching { deadline: Duration },
    /// Attached to `Player::node`.
    InGame,
    /// `DetachPlayer` sent; waiting for the snapshot and `PlayerDetached`.
    Leaving { deadline: Duration },
    /// Its zone node was lost: being put back from its last save into the re-placed
    /// instance (a gateway-originated handoff); client frames are dropped meanwhile.
    Recovering { deadline: Duration },
}

/// Where a session is, as the control plane sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Where {
    /// Waiting for its instance.
    Attaching,
    /// Attached to its node.
    InGame,
    /// Detached; waiting for the last save.
    Leaving,
    /// Being put back after its node was lost.
    Recovering,
}

#[derive(Debug, Clone)]
struct Player {
    account: AccountId,
    slot: u8,
    online: OnlinePlayer,
    rid: u16,
    key: InstanceKey,
    state: Option<Box<ActorStateDto>>,
    arrival: ArrivalDto,
    node: Option<NodeId>,
    phase: Phase,
    queued: Vec<Bytes>,
    /// The login's trace is open (until the attach).
    login_open: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Waiter {
    Attach(SessionId),
    Transfer(TransferId),
}

/// The control plane's state (see the module docs).
#[derive(Debug, Clone)]
pub struct Control {
    cfg: ControlConfig,
    world: Arc<World>,
    areas: Vec<String>,
    dir: Directory,
    /// Live node links: node → connection serial.
    nodes: BTreeMap<NodeId, u64>,
    deregistered: BTreeSet<(NodeId, u64)>,
    /// Sessions that ended in this gateway's lifetime (bounded, oldest forgotten first):
    /// a snapshot for one of them comes from a node that no longer owns the character.
    ended: BTreeSet<SessionId>,
    ended_order: VecDeque<SessionId>,
    players: BTreeMap<SessionId, Player>,
    /// Sessions kept through a leader change, until a node reports their player or the
    /// deadline passes ([`Event::Resume`]).
    resumable: BTreeMap<SessionId, (Resume, Duration)>,
    /// The fencing token each character was last handed out with (or adopted with).
    fences: BTreeMap<(AccountId, u8), u64>,
    /// Tokens handed out and not yet committed by the store ([`Event::HandedOut`]).
    unstored: BTreeMap<(AccountId, u8), u64>,
    by_name: BTreeMap<String, SessionId>,
    /// Free player RuntimeIDs, least recently freed first: a freed one is reused last, so
    /// a new login never gets the RID of a leaving copy a node has not removed yet (found
    /// by the simulator: the join was refused and the player stuck).
    free_rids: VecDeque<u16>,
    /// Transfers in flight, by the id their source minted.
    transfers: BTreeMap<TransferId, handoff::Transfer>,
    /// Mints the ids of the transfers the gateway starts itself (recoveries).
    minter: TransferMinter,
    /// The next id block handed to a node registration ([`Msg::TransferIds`]): from the
    /// generation base, so no two registrations of any gateway run share one.
    next_block: u64,
    waiting: BTreeMap<InstanceKey, Vec<Waiter>>,
    /// The shutdown's deadline, once it began; `done` once answered.
    shutdown: Option<(Duration, bool)>,
    removals: BTreeMap<InstanceKey, removal::Removal>,
    /// Removed instances told to stop: their stored ground goes once they have stopped.
    removed: BTreeSet<InstanceKey>,
    /// `Startup.Main` has been sent (once per gateway start).
    startup_done: bool,
    /// Until when placement is held after start (see `Directory::hold`).
    hold_until: Option<Duration>,
    /// Until when logins wait after the hold ([`SETTLE_AFTER_HOLD`]).
    settle_until: Option<Duration>,
    /// Taking over ([`Event::TakeOver`]): what the placement hold still waits for.
    takeover: Option<Takeover>,
    /// Sessions the nodes reported that nobody here owns, during the placement hold: an
    /// edge whose leader died may still claim them (`Event::Resume`, adopted at once);
    /// detached as orphans when the hold ends. (Session, node) → (instance, the fencing
    /// token of the node's copy when the node said): two nodes may report copies of one
    /// session (a stale one on a node given up), and each that is not adopted goes.
    unclaimed: BTreeMap<(SessionId, NodeId), (InstanceKey, Option<u64>)>,
    /// The orphans detached when the hold ended whose node has not yet said they left
    /// (`PlayerDetached`, which follows their last save): logins wait for these, for
    /// [`SETTLE_AFTER_HOLD`] at most.
    detaching: BTreeSet<(SessionId, NodeId)>,
    /// The next fencing token handed out (`ActorStateDto::fence`): from the generation
    /// base, so a restarted gateway's tokens are larger.
    next_fence: u64,
    now: Duration,
    out: Vec<Action>,
}

fn fold(name: &str) -> String {
    name.to_lowercase()
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Control {
    /// A control plane serving `world`; `generation_base` should grow across restarts
    /// (wall clock ms).
    pub fn new(cfg: ControlConfig, world: Arc<World>, generation_base: Generation) -> Self {
        let areas: Vec<String> = world.areas.iter().map(|a| a.name.clone()).collect();
        let mut c = Self {
            dir: Directory::new(areas.clone(), generation_base),
            areas,
            world,
            nodes: BTreeMap::new(),
            deregistered: BTreeSet::new(),
            ended: BTreeSet::new(),
            ended_order: VecDeque::new(),
            players: BTreeMap::new(),
            resumable: BTreeMap::new(),
            fences: BTreeMap::new(),
            unstored: BTreeMap::new(),
            by_name: BTreeMap::new(),
            free_rids: (MIN_PLAYER_RID..=MAX_PLAYER_RID).collect(),
            transfers: BTreeMap::new(),
            // Unique across gateway restarts too: a node may still hold a transfer of the
            // previous gateway under its id (found by the simulator). The gateway's own
            // block is the first; nodes get the next ones.
            minter: TransferMinter::new(generation_base.max(1), 0),
            next_block: generation_base.max(1).saturating_add(1),
            waiting: BTreeMap::new(),
            shutdown: None,
            removals: BTreeMap::new(),
            removed: BTreeSet::new(),
            startup_done: false,
            hold_until: None,
            settle_until: None,
            takeover: None,
            unclaimed: BTreeMap::new(),
            detaching: BTreeSet::new(),
            next_fence: generation_base.saturating_mul(1024).max(1),
            now: Duration::ZERO,
            out: Vec::new(),
            cfg,
        };
        // A gateway that (re)starts beside separate zone nodes gives them
        // `placement_hold_ms` to report what they still run before it places anything anew
        // (the embedded node of `--standalone` starts empty: nothing to wait for).
        if !c.cfg.standalone && c.cfg.placement_hold_ms > 0 {
            c.dir.hold();
            c.hold_until = Some(Duration::from_millis(c.cfg.placement_hold_ms));
        }
        c
    }

    // ----- the interface ----------------------------------------------------------------

    /// Handle one event at `now`.
    pub fn handle(&mut self, now: Duration, e: Event, chars: &dyn Characters) -> Vec<Action> {
        self.now = self.now.max(now);
        match e {
            Event::Entered(login) => self.entered(*login),
            Event::Frames { session, frames } => self.frames(session, frames),
            Event::Gone { session } => {
                if let Some((r, _)) = self.resumable.remove(&session) {
                    self.free_rids.push_back(r.rid);
                    self.out.push(Action::LoggedOff { account: r.account });
                } else {
                    self.gone(session);
                }
            }
            Event::Resume(r) => self.resume(*r, chars),
            Event::NodeUp {
                node,
                addr,
                capacity,
                serial,
                running,
            } => self.node_up(node, &addr, capacity, serial, &running, chars),
            Event::NodeMsg { node, serial, msg } => self.node_msg(&node, serial, msg, chars),
            Event::NodeDown {
                node,
                serial,
                reason,
            } => self.node_down(&node, serial, &reason, chars),
            Event::Shutdown => self.begin_shutdown(),
            Event::HandedOut {
                account,
                slot,
                fence,
                stored,
            } => self.handed_out(account, slot, fence, stored, chars),
            Event::TakeOver { nodes, edges } => {
                if self.hold_until.is_some() {
                    self.takeover = Some(Takeover {
                        nodes,
                        own_claimed: false,
                        edges,
                    });
                }
            }
            Event::Claimed { edge } => {
                if let Some(t) = &mut self.takeover {
                    match edge {
                        None => t.own_claimed = true,
                        Some(e) => {
                            t.edges.remove(&e);
                        }
                    }
                }
            }
        }
        self.end_hold_once_all_are_back(chars);
        std::mem::take(&mut self.out)
    }

    /// Whether a login should wait before its character is loaded: a (re)started
    /// gateway's placement hold, and after it, while the copies the previous gateway left
    /// on the nodes (orphans) are detached, until each node still linked has said its
    /// orphans left (their last saves came first, so the book has them and the store has
    /// them queued before any login's hand-out), for [`SETTLE_AFTER_HOLD`] at most. The
    /// shell holds [`Event::Entered`] back meanwhile and loads the character when it is
    /// over; it asks after every event while a login waits, so this is O(1).
    pub fn settling(&self) -> bool {
        self.hold_until.is_some()
            || (self.settle_until.is_some_and(|t| self.now < t) && !self.detaching.is_empty())
    }

    /// The next instant [`Control::on_timeout`] has work (`None`: nothing is due until
    /// the next event).
    pub fn poll_timeout(&self) -> Option<Duration> {
        let mut next = self.hold_until;
        let mut at = |t: Duration| next = Some(next.map_or(t, |n: Duration| n.min(t)));
        if let Some(t) = self.settle_until.filter(|&t| t > self.now) {
            at(t);
        }
        for n in self.dir.nodes() {
            let due = n.last_seen_ms.saturating_add(self.cfg.node_timeout_ms);
            at(Duration::from_millis(due.saturating_add(1)));
        }
        for p in self.players.values() {
            match p.phase {
                Phase::Attaching { deadline }
                | Phase::Leaving { deadline }
                | Phase::Recovering { deadline } => at(deadline),
                Phase::InGame => {}
            }
        }
        for t in self.transfers.values() {
            at(t.deadline);
        }
        for (_, deadline) in self.resumable.values() {
            at(*deadline);
        }
        if !self.removals.is_empty() {
            at(self.now + POLL_INTERVAL);
        }
        if let Some((deadline, false)) = self.shutdown {
            at(deadline);
        }
        next
    }

    /// Ends the placement hold of a gateway taking over ([`Event::TakeOver`]) once each of
    /// the previous leader's nodes has registered here and every claimer is done.
    fn end_hold_once_all_are_back(&mut self, chars: &dyn Characters) {
        let back = self.hold_until.is_some()
            && self.takeover.as_ref().is_some_and(|t| {
                t.own_claimed
                    && t.edges.is_empty()
                    && t.nodes.iter().all(|n| self.nodes.contains_key(n))
            });
        if back {
            self.end_hold(true, chars);
        }
    }

    /// The placement hold ends (at its deadline, or `early`: every node is back): the
    /// copies no edge claimed are detached as orphans, and what the nodes did not report is
    /// placed anew.
    fn end_hold(&mut self, early: bool, chars: &dyn Characters) {
        self.hold_until = None;
        self.takeover = None;
        self.settle_until = Some(self.now + SETTLE_AFTER_HOLD);
        // Copies no edge claimed: orphans, detached (their saves land within the settling
        // second).
        self.detaching.clear();
        for ((session, node), _) in std::mem::take(&mut self.unclaimed) {
            if self.nodes.contains_key(&node) {
                self.send(&node, Msg::DetachPlayer { session }, Trace::Current);
                self.detaching.insert((session, node));
            }
        }
        let mut actions = self.dir.release();
        // Logins and warps that waited for an instance nobody reported.
        let waited: Vec<InstanceKey> = self.waiting.keys().cloned().collect();
        actions.extend(waited.iter().filter_map(|k| self.dir.ensure(k)));
        tracing::info!(
            placed = actions.len(),
            early,
            "placement hold over{}",
            if early {
                ": every node of the previous leader is back"
            } else {
                ""
            }
        );
        self.apply(actions, Trace::Current, chars);
    }

    /// Do what is due at `now`: node expiry, the placement hold's end, login, logout,
    /// recovery and transfer timeouts, `RemoveZoneInstance`'s progress, the shutdown's.
    pub fn on_timeout(&mut self, now: Duration, chars: &dyn Characters) -> Vec<Action> {
        self.now = self.now.max(now);
        let now = self.now;
        if self.hold_until.is_some_and(|t| now >= t) {
            self.end_hold(false, chars);
        }
        if self.settle_until.is_some_and(|t| now >= t) {
            // Given up on: logins go on without their last saves' word.
            self.detaching.clear();
        }
        // Kept sessions no node reported: their players are not in the world.
        let expired: Vec<SessionId> = self
            .resumable
            .iter()
            .filter(|(_, (_, d))| now >= *d)
            .map(|(s, _)| *s)
            .collect();
        for session in expired {
            if let Some((r, _)) = self.resumable.remove(&session) {
                tracing::warn!(
                    session,
                    "a kept session's player is on no zone node: closing it"
                );
                self.free_rids.push_back(r.rid);
                self.close_client(
                    session,
                    close::SHUTDOWN,
                    "your session could not be kept: log in again",
                );
                self.out.push(Action::LoggedOff { account: r.account });
            }
        }
        // The nodes the directory drops are named from the directory itself: a node whose
        // link closed first (a killed process) is no longer live, but it is only now, at
        // its heartbeat timeout, that its instances are re-placed and its players
        // recovered, and the trace must say which node that was.
        let known: Vec<NodeId> = self.dir.nodes().map(|n| n.id.clone()).collect();
        let actions = self.dir.expire(ms(now), self.cfg.node_timeout_ms);
        if !actions.is_empty() {
            let gone: Vec<NodeId> = known
                .into_iter()
                .filter(|n| self.dir.node(n).is_none())
                .collect();
            // Detection, re-placement and recovery of the silent nodes: one trace.
            self.out.push(Action::NodeLost {
                node: gone.join(","),
                reason: "missed its heartbeats".into(),
                deregistered: false,
            });
            for n in gone {
                // A link still open is closed; one already closed had its transfers
                // settled by `node_down`.
                self.detaching.retain(|(_, node)| node != &n);
                if self.nodes.remove(&n).is_some() {
                    tracing::warn!(node = %n, "node missed its heartbeats: removed");
                    self.out.push(Action::CloseLink {
                        node: n.clone(),
                        code: 2,
                        reason: "missed its heartbeats",
                        end: LinkEnd::Dropped,
                    });
                }
                // Its copies are dead now (a paused node that comes back is fenced).
                self.transfers_source_gone(&n, chars);
            }
            self.apply(actions, Trace::Current, chars);
            self.out.push(Action::NodeLostEnd);
        }
        let late: Vec<(SessionId, Phase)> = self
            .players
            .iter()
            .filter_map(|(s, p)| match p.phase {
                Phase::Attaching { deadline }
                | Phase::Leaving { deadline }
                | Phase::Recovering { deadline }
                    if now >= deadline =>
                {
                    Some((*s, p.phase))
                }
                _ => None,
            })
            .collect();
        for (s, phase) in late {
            if matches!(phase, Phase::Recovering { .. }) {
                self.recovery_failed(s, "the instance did not come back in time");
                continue;
            }
            if matches!(phase, Phase::Attaching { .. }) {
                tracing::warn!(session = s, "no zone became ready for this login in time");
                self.packet(s, ServerPacket::StartGame(StartGameReply::Failed));
                self.close_client(s, close::SHUTDOWN, "no zone is available; try again later");
            } else {
                tracing::warn!(
                    session = s,
                    "the zone node did not confirm the logout in time"
                );
            }
            self.release(s);
        }
        self.transfer_timeouts(chars);
        self.progress_removals();
        self.progress_shutdown();
        std::mem::take(&mut self.out)
    }

    // ----- what the shell reads ---------------------------------------------------------

    /// The placement directory.
    pub fn directory(&self) -> &Directory {
        &self.dir
    }

    /// The areas served.
    pub fn areas(&self) -> &[String] {
        &self.areas
    }

    /// In-game sessions (attaching, leaving and recovering ones included).
    pub fn player_count(&self) -> usize {
        self.players.len()
    }

    /// Every in-game session with its character name, account, instance, node and phase.
    pub fn players(
        &self,
    ) -> impl Iterator<Item = (SessionId, &OnlinePlayer, &InstanceKey, Option<&str>, Where)> {
        self.players.iter().map(|(s, p)| {
            let w = match p.phase {
                Phase::Attaching { .. } => Where::Attaching,
                Phase::InGame => Where::InGame,
                Phase::Leaving { .. } => Where::Leaving,
                Phase::Recovering { .. } => Where::Recovering,
            };
            (*s, &p.online, &p.key, p.node.as_deref(), w)
        })
    }

    /// Whether `session` is in the world (attaching, in game, leaving or recovering).
    pub fn knows(&self, session: SessionId) -> bool {
        self.players.contains_key(&session)
    }

    /// Who a session in the world is and where its player lives (what an edge keeps).
    pub fn session_ids(&self, session: SessionId) -> Option<SessionIds> {
        self.players.get(&session).map(|p| SessionIds {
            account: p.account,
            slot: p.slot,
            rid: p.rid,
            node: p.node.clone(),
            fence: self.fences.get(&(p.account, p.slot)).copied().unwrap_or(0),
        })
    }

    /// Sessions kept through a leader change, not yet adopted.
    pub fn kept(&self) -> usize {
        self.resumable.len()
    }

    fn resume(&mut self, r: Resume, chars: &dyn Characters) {
        let session = r.session;
        let taken = self.players.contains_key(&session)
            || self.resumable.contains_key(&session)
            || self.by_name.contains_key(&fold(&r.online.name));
        let Some(i) = self
            .free_rids
            .iter()
            .position(|&x| x == r.rid)
            .filter(|_| !taken)
        else {
            tracing::warn!(
                session,
                rid = r.rid,
                "a kept session clashes with one in the world: closing it"
            );
            self.close_client(
                session,
                close::SHUTDOWN,
                "your session could not be kept: log in again",
            );
            if !taken {
                self.out.push(Action::LoggedOff { account: r.account });
            }
            return;
        };
        self.free_rids.remove(i);
        let deadline = self.now + RESUME_WINDOW;
        self.resumable.insert(session, (r, deadline));
        // Its node registered already (an edge of another gateway, linking after it):
        // adopted from what the node reported, if that is the copy the edge names.
        let reported: Vec<(NodeId, InstanceKey, Option<u64>)> = self
            .unclaimed
            .range((session, NodeId::new())..)
            .take_while(|((s, _), _)| *s == session)
            .map(|((_, n), (k, f))| (n.clone(), k.clone(), *f))
            .collect();
        for (node, key, fence) in reported {
            self.adopt(session, &node, &key, fence, chars);
        }
    }

    /// Adopts the kept sessions whose player `node` hosts (it registers): in the world
    /// there, routed to it, with no new fencing token (the node's copy carries the one
    /// the store holds).
    fn adopt_kept(&mut self, node: &str, running: &[RunningInstance], chars: &dyn Characters) {
        // Only in a copy the directory keeps: one placed elsewhere since is stopped.
        let kept: Vec<&RunningInstance> = running
            .iter()
            .filter(|r| self.dir.would_keep(node, r))
            .collect();
        for inst in kept {
            for s in &inst.sessions {
                self.adopt(*s, node, &inst.key, inst.fence_of(*s), chars);
            }
        }
    }

    /// Adopts kept session `s` if `node` hosts its player in instance `key`: only the
    /// copy where the previous leader had the player, of the lineage the store holds (any
    /// other is an orphan, detached as after a restart). `fence` is the token of the
    /// node's copy, when the node said: it must be the stored one too. (A deposed leader
    /// that did not know it yet may have put the player back on the same node with a
    /// token the store never took: found by the simulator, issue 41.)
    fn adopt(
        &mut self,
        s: SessionId,
        node: &str,
        key: &InstanceKey,
        fence: Option<u64>,
        chars: &dyn Characters,
    ) {
        let current = self.resumable.get(&s).is_some_and(|(r, _)| {
            r.node == node
                && chars.saved(r.account, r.slot).map(|c| c.fence) == Some(r.fence)
                && fence.is_none_or(|f| f == r.fence)
        });
        if !current {
            return;
        }
        let Some((r, _)) = self.resumable.remove(&s) else {
            return;
        };
        // Only this copy is his; another node's stale copy still goes at the hold's end
        // (found by the simulator: it was forgotten and lived on, and every checkpoint of
        // its zone was refused for its stale token).
        self.unclaimed.remove(&(s, node.to_owned()));
        self.fences.insert((r.account, r.slot), r.fence);
        tracing::info!(session = s, node, instance = %key, "adopting a kept session");
        self.out.push(Action::Adopted {
            session: s,
            name: r.online.name.clone(),
        });
        self.by_name.insert(fold(&r.online.name), s);
        self.players.insert(
            s,
            Player {
                account: r.account,
                slot: r.slot,
                online: r.online,
                rid: r.rid,
                key: key.clone(),
                state: None,
                arrival: ArrivalDto::Saved,
                node: Some(node.to_owned()),
                phase: Phase::InGame,
                queued: Vec::new(),
                login_open: false,
            },
        );
        self.out.push(Action::Route {
            session: s,
            node: node.to_owned(),
        });
        self.out.push(Action::ZoneChanged { session: s });
    }

    /// The session of an online character (ASCII case-insensitive).
    pub fn session_by_name(&self, name: &str) -> Option<SessionId> {
        self.by_name.get(&fold(name)).copied()
    }

    /// The node a session is attached to.
    pub fn node_of(&self, session: SessionId) -> Option<&str> {
        self.players.get(&session).and_then(|p| p.node.as_deref())
    }

    /// The in-game players as the chat commands see them.
    pub fn roster(&self) -> impl chat::Roster + '_ {
        Roster {
            players: &self.players,
            by_name: &self.by_name,
        }
    }

    /// Whether `serial` is `node`'s live link.
    pub fn is_live(&self, node: &str, serial: u64) -> bool {
        self.nodes.get(node) == Some(&serial)
    }

    /// The live nodes.
    pub fn live_nodes(&self) -> impl Iterator<Item = &str> {
        self.nodes.keys().map(String::as_str)
    }

    /// Transfers in flight: (id, session, destination, destination node, prepared).
    pub fn transfers(
        &self,
    ) -> impl Iterator<
        Item = (
            TransferId,
            Option<SessionId>,
            InstanceKey,
            Option<&str>,
            bool,
        ),
    > {
        self.transfers.iter().map(|(id, t)| {
            (
                *id,
                t.dto.session,
                t.key(),
                t.forwarded_to.as_deref(),
                t.prepared,
            )
        })
    }

    /// The source node of a transfer in flight (`None` once no node holds it).
    pub fn transfer_source(&self, id: TransferId) -> Option<&str> {
        self.transfers.get(&id).and_then(|t| t.source.as_deref())
    }

    /// The deadline of a transfer in flight.
    pub fn transfer_deadline(&self, id: TransferId) -> Option<Duration> {
        self.transfers.get(&id).map(|t| t.deadline)
    }

    /// The account and character of `session` when `node` hosts it (a zone's script may act
    /// on its own players only).
    pub fn hosted_by(&self, node: &str, session: SessionId) -> Option<(AccountId, &str)> {
        self.players
            .get(&session)
            .filter(|p| p.node.as_deref() == Some(node))
            .map(|p| (p.account, p.online.name.as_str()))
    }

    /// Whether a shutdown began.
    pub fn shutting_down(&self) -> bool {
        self.shutdown.is_some()
    }

    // ----- what the shell changes -------------------------------------------------------

    /// `/ignore`: the account's sessions see the new list.
    pub fn set_ignore(&mut self, account: AccountId, list: &[String]) {
        for p in self.players.values_mut() {
            if p.account == account {
                p.online.ignore = list.to_vec();
            }
        }
    }

    /// Work on the directory (a script store request may place an instance), then carry
    /// out the placements it returns.
    pub fn with_directory<R>(
        &mut self,
        now: Duration,
        chars: &dyn Characters,
        f: impl FnOnce(&mut Directory, &[String]) -> (R, Vec<directory::Action>),
    ) -> (R, Vec<Action>) {
        self.now = self.now.max(now);
        let (r, placements) = f(&mut self.dir, &self.areas);
        self.apply(placements, Trace::Current, chars);
        (r, std::mem::take(&mut self.out))
    }

    /// `RemoveZoneInstance` (see [`removal`]).
    pub fn remove_instance(&mut self, now: Duration, key: InstanceKey) -> Vec<Action> {
        self.now = self.now.max(now);
        self.begin_removal(key);
        std::mem::take(&mut self.out)
    }

    /// An operator drains `node` (the console's "drain"): the directory places nothing
    /// more on it, and the node is told to save and stop its instances; its players are
    /// then moved, each from the save it just made, as when the node drains on its own
    /// SIGTERM. Refused for an unknown or already draining node, and for the last node
    /// taking work (its players would have nowhere to go).
    pub fn drain_node(&mut self, now: Duration, node: &str) -> Result<Vec<Action>, String> {
        self.now = self.now.max(now);
        let Some(&serial) = self.nodes.get(node) else {
            return Err(format!("no node called {node:?} is connected"));
        };
        if self.dir.node(node).is_some_and(|n| n.draining) {
            return Err(format!("{node} is draining already"));
        }
        let others = self
            .nodes
            .keys()
            .filter(|n| n.as_str() != node)
            .filter(|n| self.dir.node(n).is_some_and(|d| d.connected && !d.draining))
            .count();
        if others == 0 {
            return Err(format!(
                "{node} is the only node taking work: start another before draining it"
            ));
        }
        tracing::info!(node, "an operator drains the node");
        self.dir.draining(node, serial);
        self.send(node, Msg::Drain, Trace::Current);
        Ok(std::mem::take(&mut self.out))
    }

    // ----- output helpers ---------------------------------------------------------------

    fn send(&mut self, node: &str, msg: Msg, trace: Trace) -> bool {
        if !self.nodes.contains_key(node) {
            return false;
        }
        self.out.push(Action::Send {
            node: node.to_owned(),
            msg,
            trace,
        });
        true
    }

    fn packet(&mut self, session: SessionId, packet: ServerPacket) {
        self.out.push(Action::Packet { session, packet });
    }

    fn close_client(&mut self, session: SessionId, code: u32, reason: &'static str) {
        self.out.push(Action::CloseClient {
            session,
            code,
            reason,
        });
    }

    fn count(&mut self, c: Count) {
        self.out.push(Action::Count(c));
    }

    /// Hand a character out from the store: a new fencing token, stored first.
    fn hand_out(&mut self, account: AccountId, slot: u8, state: &mut ActorStateDto) {
        self.hand_out_for(account, slot, state, None);
    }

    /// [`Control::hand_out`], for the copy a transfer carries.
    fn hand_out_for(
        &mut self,
        account: AccountId,
        slot: u8,
        state: &mut ActorStateDto,
        transfer: Option<TransferId>,
    ) {
        // Larger than any token the character already carries (a clock set back).
        let fence = self.next_fence.max(state.fence.saturating_add(1));
        self.next_fence = fence.saturating_add(1);
        state.fence = fence;
        self.fences.insert((account, slot), fence);
        self.unstored.insert((account, slot), fence);
        self.out.push(Action::HandOut {
            account,
            slot,
            fence,
            transfer,
        });
    }

    // ----- sessions ---------------------------------------------------------------------

    /// Where a character logs in: its saved area, instance 0 (Realm Crafter's
    /// `SetArea(saved area, 0, saved x,y,z)`); a character whose area no longer exists goes
    /// to its template's start portal.
    fn login_place(&self, state: &ActorStateDto) -> (InstanceKey, ArrivalDto) {
        let world = &self.world;
        if let Some(a) = world
            .areas
            .iter()
            .find(|a| a.name.eq_ignore_ascii_case(&state.area))
        {
            return (
                InstanceKey {
                    area: a.name.clone(),
                    instance: 0,
                },
                ArrivalDto::Saved,
            );
        }
        let template = world.actors.iter().find(|t| t.id == state.template);
        let area = template
            .and_then(|t| {
                world
                    .areas
                    .iter()
                    .find(|a| a.name.eq_ignore_ascii_case(&t.start_area))
            })
            .or_else(|| world.areas.first())
            .map(|a| a.name.clone())
            .unwrap_or_default();
        let portal = template.map(|t| t.start_portal.clone()).unwrap_or_default();
        (
            InstanceKey { area, instance: 0 },
            ArrivalDto::PortalNamed(portal),
        )
    }

    fn entered(&mut self, login: Login) {
        let Login {
            session,
            account,
            slot,
            is_dm,
            mut state,
            ignore,
            user,
            email,
            connected,
        } = login;
        if self.shutdown.is_some() || !connected || self.players.contains_key(&session) {
            self.out.push(Action::LoggedOff { account });
            return;
        }
        let Some(rid) = self.free_rids.pop_front() else {
            self.packet(session, ServerPacket::StartGame(StartGameReply::Failed));
            self.close_client(session, close::SHUTDOWN, "the cluster is full");
            self.out.push(Action::LoggedOff { account });
            return;
        };
        self.count(Count::Login);
        self.hand_out(account, slot, &mut state);
        let (key, arrival) = self.login_place(&state);
        let online = OnlinePlayer {
            session,
            account,
            name: state.name.clone(),
            team: state.team,
            is_dm,
            ignore,
        };
        self.by_name.insert(fold(&state.name), session);
        state.rid = rid;
        // The scripts' `PlayerAccountName` and `PlayerAccountEmail`.
        state.account = user;
        state.email = email;
        // A new client numbers its known spells afresh from the login "S" block and has
        // no memorisation in progress (the zone rebuilds the numbering).
        state.spell_view.clear();
        state.memorising.clear();
        self.players.insert(
            session,
            Player {
                account,
                slot,
                online,
                rid,
                key,
                state: Some(state),
                arrival,
                node: None,
                phase: Phase::Attaching {
                    deadline: self.now + ATTACH_TIMEOUT,
                },
                queued: Vec::new(),
                login_open: true,
            },
        );
        self.try_attach(session);
    }

    fn try_attach(&mut self, session: SessionId) {
        let Some(p) = self.players.get(&session) else {
            return;
        };
        if !matches!(p.phase, Phase::Attaching { .. }) {
            return;
        }
        // In the login's trace: the placement it waits for, and the AttachPlayer.
        let trace = Trace::Login(session);
        let key = p.key.clone();
        // A stuck instance (its node's watchdog says so) takes no one until it ticks again
        // or is given up and placed anew.
        let ready = self
            .dir
            .placement(&key)
            .filter(|pl| pl.ready && !pl.stuck)
            .map(|pl| (pl.node.clone(), pl.generation));
        let Some((node, generation)) = ready.filter(|(n, _)| self.nodes.contains_key(n)) else {
            tracing::debug!(session, instance = %key, "login waits for its instance");
            self.wait(key.clone(), Waiter::Attach(session));
            if let Some(a) = self.dir.ensure(&key) {
                self.apply_placement(a, trace);
            }
            return;
        };
        let Some(p) = self.players.get_mut(&session) else {
            return;
        };
        // Its token must be in the store first: a leader that dies before the store has
        // it leaves no copy the next one cannot adopt ([`Event::HandedOut`]).
        let unstored = self.unstored.get(&(p.account, p.slot));
        if p.state.as_ref().is_some_and(|s| unstored == Some(&s.fence)) {
            tracing::debug!(session, "login waits for its hand-out to be stored");
            return;
        }
        let Some(state) = p.state.take() else {
            return;
        };
        let msg = Msg::AttachPlayer {
            session,
            key,
            generation,
            rid: p.rid,
            is_dm: p.online.is_dm,
            state,
            arrival: p.arrival.clone(),
        };
        // The login trace ends with the attach (the node's part follows from it).
        p.login_open = false;
        p.node = Some(node.clone());
        p.phase = Phase::InGame;
        let queued = std::mem::take(&mut p.queued);
        tracing::debug!(session, node = %node, "player attached");
        self.out.push(Action::Send {
            node: node.clone(),
            msg,
            trace,
        });
        self.out.push(Action::Attached { session });
        self.out.push(Action::Route {
            session,
            node: node.clone(),
        });
        for frames in queued {
            self.count(Count::FramesUp);
            self.send(&node, Msg::ClientFrames { session, frames }, Trace::Current);
        }
    }

    /// The store answered a hand-out: the login or the transfer waiting for it goes on,
    /// or fails.
    fn handed_out(
        &mut self,
        account: AccountId,
        slot: u8,
        fence: u64,
        stored: bool,
        chars: &dyn Characters,
    ) {
        if self.unstored.get(&(account, slot)) != Some(&fence) {
            return;
        }
        self.unstored.remove(&(account, slot));
        let login = self
            .players
            .iter()
            .find(|(_, p)| {
                p.account == account
                    && p.slot == slot
                    && matches!(p.phase, Phase::Attaching { .. })
                    && p.state.as_ref().is_some_and(|s| s.fence == fence)
            })
            .map(|(s, _)| *s);
        let Some(session) = login else {
            // A recovery's or a transfer's copy, waiting in its transfer.
            let carried = self
                .transfers
                .iter()
                .find(|(_, t)| t.dto.state.fence == fence && self.owner(t) == Some((account, slot)))
                .map(|(id, _)| *id);
            if let Some(id) = carried {
                self.transfer_handed_out(id, stored, chars);
            }
            return;
        };
        if stored {
            self.try_attach(session);
            return;
        }
        tracing::warn!(session, "the store did not take the login's hand-out");
        self.packet(session, ServerPacket::StartGame(StartGameReply::Failed));
        self.close_client(
            session,
            close::SHUTDOWN,
            "your character could not be loaded; try again later",
        );
        self.release(session);
    }

    fn wait(&mut self, key: InstanceKey, w: Waiter) {
        let list = self.waiting.entry(key).or_default();
        if !list.contains(&w) {
            list.push(w);
        }
    }

    fn frames(&mut self, session: SessionId, frames: Bytes) {
        let Some(p) = self.players.get_mut(&session) else {
            return;
        };
        match (p.phase, &p.node) {
            (Phase::InGame, Some(node)) => {
                let node = node.clone();
                self.count(Count::FramesUp);
                self.send(&node, Msg::ClientFrames { session, frames }, Trace::Current);
            }
            (Phase::Attaching { .. }, _) if p.queued.len() < MAX_QUEUED_FRAMES => {
                p.queued.push(frames);
            }
            _ => self.count(Count::FramesDropped),
        }
    }

    fn gone(&mut self, session: SessionId) {
        self.out.push(Action::Unroute { session });
        let Some(p) = self.players.get_mut(&session) else {
            return;
        };
        match (p.phase, p.node.clone()) {
            (Phase::InGame, Some(node)) => {
                p.phase = Phase::Leaving {
                    deadline: self.now + DETACH_TIMEOUT,
                };
                if !self.send(&node, Msg::DetachPlayer { session }, Trace::Current) {
                    self.release(session);
                }
            }
            (Phase::Leaving { .. }, _) => {}
            _ => self.release(session),
        }
    }

    /// Forget an in-game session: RuntimeID back to the pool, the account may log in again.
    fn release(&mut self, session: SessionId) {
        self.out.push(Action::Unroute { session });
        let Some(p) = self.players.remove(&session) else {
            return;
        };
        self.out.push(Action::Released {
            session,
            name: p.online.name.clone(),
        });
        if self.ended.insert(session) {
            self.ended_order.push_back(session);
            if self.ended_order.len() > MAX_ENDED_SESSIONS
                && let Some(old) = self.ended_order.pop_front()
            {
                self.ended.remove(&old);
            }
        }
        if self.by_name.get(&fold(&p.online.name)) == Some(&session) {
            self.by_name.remove(&fold(&p.online.name));
        }
        self.free_rids.push_back(p.rid);
        self.out.push(Action::LoggedOff { account: p.account });
        for list in self.waiting.values_mut() {
            list.retain(|w| *w != Waiter::Attach(session));
        }
    }

    // ----- nodes ------------------------------------------------------------------------

    fn node_up(
        &mut self,
        node: NodeId,
        addr: &str,
        capacity: u32,
        serial: u64,
        running: &[RunningInstance],
        chars: &dyn Characters,
    ) {
        let previous = self.nodes.insert(node.clone(), serial);
        // Its id block first, before anything makes it create a zone.
        let block = self.next_block;
        self.next_block = self.next_block.saturating_add(1);
        self.send(&node, Msg::TransferIds { block }, Trace::Current);
        if previous.is_some_and(|s| s != serial) {
            // It registers again before this gateway saw its old link close (a restart
            // within moments): what was sent on that link is lost, so transfers sent to it
            // go out again, as on a link loss (seed 9,069 of the simulator: a commit went
            // to the restarted node for a prepared copy that had died with it).
            self.transfers_link_lost(&node);
        }
        tracing::info!(node = %node, addr, capacity, running = running.len(), "node registered");
        // What it reported before is superseded by what it reports now.
        self.unclaimed.retain(|(_, n), _| *n != node);
        self.adopt_kept(&node, running, chars);
        // A session is the node's to keep only while the gateway still has it there: one
        // recovered or moved elsewhere meanwhile is an orphan on it (detached, its save
        // fenced).
        let players = &self.players;
        let known = |s: SessionId| {
            players
                .get(&s)
                .is_some_and(|p| p.node.as_deref() == Some(node.as_str()))
        };
        let actions =
            self.dir
                .register(ms(self.now), &node, addr, capacity, serial, running, &known);
        // Sessions the node still hosts for us keep routing through the new connection.
        for r in running {
            for s in &r.sessions {
                if let Some(p) = self.players.get_mut(s)
                    && p.node.as_deref() == Some(node.as_str())
                {
                    p.key = r.key.clone();
                    self.out.push(Action::Route {
                        session: *s,
                        node: node.clone(),
                    });
                }
            }
        }
        // Its transfers' answers were lost with its old link: settle them by what it hosts.
        let hosted: BTreeSet<SessionId> = running
            .iter()
            .flat_map(|r| r.sessions.iter().copied())
            .collect();
        // Players the gateway has there that it does not host: their attach (or their
        // handoff's commit) was lost with the old link. A leaving one is done (its last
        // save is what there is); one in game is put back from its last save. Players in
        // a transfer are the transfers' to settle (below, first).
        let missing: Vec<(SessionId, bool)> = self
            .players
            .iter()
            .filter(|(s, p)| {
                p.node.as_deref() == Some(node.as_str())
                    && !hosted.contains(s)
                    && !matches!(p.phase, Phase::Attaching { .. })
            })
            .map(|(s, p)| (*s, matches!(p.phase, Phase::Leaving { .. })))
            .filter(|(s, _)| !self.in_transfer(*s))
            .collect();
        self.transfers_source_back(&node, &hosted, chars);
        for (s, leaving) in missing {
            if leaving {
                self.release(s);
            } else {
                tracing::warn!(session = s, node = %node, "the node does not host a player it was given: putting it back");
                self.recover(s, chars);
            }
        }
        // Instances it no longer runs (it restarted) are lost: their players come back.
        self.apply(actions, Trace::Current, chars);
        // The orphans held for a claim keep their copies' tokens (checked at adoption).
        for ((s, n), (_, fence)) in &mut self.unclaimed {
            if *n == node {
                *fence = running.iter().find_map(|r| r.fence_of(*s));
            }
        }
        // What waited for one of them (a transfer whose prepared copy died with the
        // restart) has it placed again now, not once its wait times out.
        let lost: Vec<InstanceKey> = self
            .waiting
            .keys()
            .filter(|k| self.dir.placement(k).is_none())
            .cloned()
            .collect();
        let again: Vec<directory::Action> =
            lost.iter().filter_map(|k| self.dir.ensure(k)).collect();
        self.apply(again, Trace::Current, chars);
        // What waits for an instance it runs (a transfer whose copy there went with the old
        // link, a login) goes now.
        let ready_here: Vec<InstanceKey> = self
            .waiting
            .keys()
            .filter(|k| {
                self.dir
                    .placement(k)
                    .is_some_and(|p| p.ready && p.node == node)
            })
            .cloned()
            .collect();
        for k in ready_here {
            self.wake(&k, chars);
        }
        // After a gateway restart the first ready instance may be one a node still runs.
        let ready = self
            .dir
            .placements()
            .find(|(_, p)| p.node == node && p.ready)
            .map(|(k, _)| k.clone());
        if let Some(key) = ready {
            self.maybe_startup(&node, &key);
        }
    }

    fn node_msg(&mut self, node: &str, serial: u64, msg: Msg, chars: &dyn Characters) {
        if !self.is_live(node, serial) {
            self.count(Count::InternalRefused);
            return;
        }
        let now = ms(self.now);
        match msg {
            Msg::Heartbeat {
                players,
                overruns,
                loads,
                ..
            } => {
                self.dir.heartbeat(now, node, serial, players, overruns);
                let was_stuck = self.dir.has_stuck(node);
                let mut unstuck = Vec::new();
                for load in loads {
                    self.dir.instance_load(node, &load);
                    let InstanceLoad {
                        key,
                        tick_age_ms,
                        stuck,
                        ..
                    } = load;
                    let before = self.dir.instance_watch(node, &key, tick_age_ms, stuck);
                    if before != stuck {
                        if stuck {
                            self.count(Count::InstanceStuck);
                            tracing::warn!(node, instance = %key, tick_age_ms,
                                "instance stuck on its node: no new player goes to it");
                        } else {
                            tracing::info!(node, instance = %key, "instance ticks again");
                            unstuck.push(key);
                        }
                    }
                }
                // What waited for an instance that ticks again, then what waited for the
                // node to take placements again.
                for key in unstuck {
                    self.wake(&key, chars);
                }
                if was_stuck && !self.dir.has_stuck(node) {
                    self.node_unstuck(chars);
                }
            }
            Msg::InstanceGivenUp {
                key,
                generation,
                sessions,
            } => {
                // Copies held for a claim went with it (found by the simulator: a late
                // claim adopted a player whose copy no longer existed).
                self.unclaimed
                    .retain(|(_, n), (k, _)| !(n.as_str() == node && *k == key));
                self.instance_given_up(node, key, generation, &sessions, chars);
            }
            Msg::InstanceReady { key, generation } => {
                self.dir.heartbeat(now, node, serial, 0, 0);
                if self.dir.ready(node, &key, generation) {
                    tracing::info!(node, instance = %key, generation, "instance ready");
                    self.maybe_startup(node, &key);
                    self.wake(&key, chars);
                } else {
                    self.send(node, Msg::StopInstance { key, generation }, Trace::Current);
                }
            }
            Msg::InstanceStopped { key, generation } => {
                self.unclaimed
                    .retain(|(_, n), (k, _)| !(n.as_str() == node && *k == key));
                if self.dir.stopped(node, &key, generation) {
                    tracing::info!(node, instance = %key, generation, "instance stopped");
                    if self.removed.remove(&key) {
                        self.out.push(Action::ForgetGround { key: key.clone() });
                    }
                    let mut actions = self.dir.place_wanted();
                    // Someone waits for it (a player moved off a draining node): place it
                    // again even if it is not an instance 0.
                    if self.waiting.contains_key(&key)
                        && let Some(a) = self.dir.ensure(&key)
                    {
                        actions.push(a);
                    }
                    self.apply(actions, Trace::Current, chars);
                }
            }
            Msg::Snapshot {
                snapshot_id,
                session,
                reason,
                state,
            } => self.snapshot(node, snapshot_id, session, reason, state),
            Msg::SnapshotGroup(g) => self.snapshot_group(node, *g),
            Msg::PlayerDetached { session, key } => {
                self.unclaimed.remove(&(session, node.to_owned()));
                self.detaching.remove(&(session, node.to_owned()));
                let Some(p) = self.players.get(&session) else {
                    return;
                };
                if p.node.as_deref() != Some(node) {
                    // It moved to another node; the old one let go.
                    return;
                }
                if key.is_some_and(|k| k != p.key) {
                    // A stale copy on the same node left (one restored after a handoff
                    // this gateway settled without it), not the one placed here.
                    tracing::info!(session, node, "a stale copy left its node");
                    return;
                }
                if matches!(p.phase, Phase::InGame) {
                    // The node dropped a live player (instance stopped, node draining): its
                    // snapshot came first, so the character is saved. While the cluster
                    // runs on, the player is put back from that save on another node (a
                    // rolling restart costs no one a reconnect); at shutdown it is closed.
                    if self.shutdown.is_none() {
                        tracing::info!(session, node, "player let go by its node: moving it");
                        self.recover(session, chars);
                        return;
                    }
                    self.close_client(
                        session,
                        close::SHUTDOWN,
                        "your zone was shut down; your character was saved",
                    );
                }
                self.release(session);
            }
            Msg::PlayerMoved { session, key } => {
                if let Some(p) = self.players.get_mut(&session)
                    && p.node.as_deref() == Some(node)
                {
                    p.key = key;
                    // A handoff inside the node: the new zone learns the party too.
                    self.out.push(Action::ZoneChanged { session });
                } else {
                    // A copy this gateway does not place there moved inside its node: an
                    // orphan (its `DetachPlayer` may have reached the instance it was
                    // leaving just after it left; seed 189,143 of the simulator). Told
                    // again where it lives now; its saves are fenced meanwhile.
                    tracing::info!(session, node, instance = %key, "an orphan moved inside its node: detaching it");
                    self.count(Count::InternalRefused);
                    self.send(node, Msg::DetachPlayer { session }, Trace::Current);
                }
            }
            Msg::Transfer(t) => self.transfer_from(node, t, chars),
            Msg::TransferAck {
                transfer_id,
                generation,
            } => self.transfer_prepared(node, transfer_id, generation, chars),
            Msg::TransferNack {
                transfer_id,
                reason,
            } => self.transfer_refused(node, transfer_id, &reason, chars),
            Msg::TransferCommit { transfer_id } => {
                self.transfer_decided(node, transfer_id, true, chars);
            }
            Msg::TransferAbort { transfer_id } => {
                self.transfer_decided(node, transfer_id, false, chars);
            }
            Msg::Drain => {
                tracing::info!(node, "node draining");
                self.dir.draining(node, serial);
            }
            Msg::Deregister => {
                tracing::info!(node, "node deregistered");
                self.deregistered.insert((node.to_owned(), serial));
                self.out.push(Action::CloseLink {
                    node: node.to_owned(),
                    code: 0,
                    reason: "deregistered",
                    end: LinkEnd::Draining,
                });
            }
            Msg::Error { code, reason } => {
                tracing::warn!(node, ?code, %reason, "node reported an error");
            }
            other => {
                self.count(Count::InternalRefused);
                tracing::warn!(node, msg = other.name(), "unexpected message from a node");
                self.send(
                    node,
                    Msg::Error {
                        code: ErrorCode::Unexpected,
                        reason: format!("{} is not accepted by the gateway", other.name()),
                    },
                    Trace::Current,
                );
            }
        }
    }

    fn snapshot(
        &mut self,
        node: &str,
        snapshot_id: u64,
        session: SessionId,
        reason: SnapshotReasonDto,
        state: Box<ActorStateDto>,
    ) {
        if self.snapshot_fenced(node, session, &state.name) {
            self.count(Count::Fenced);
            tracing::warn!(
                node,
                session,
                ?reason,
                "snapshot from a node that no longer hosts the player dropped"
            );
            self.send(node, Msg::SnapshotAck { snapshot_id }, Trace::Current);
            return;
        }
        let owner = self.players.get_mut(&session).map(|p| {
            p.online.team = state.team;
            (p.account, p.slot)
        });
        self.out.push(Action::Save(Box::new(Save::One {
            node: node.to_owned(),
            snapshot_id,
            session,
            owner,
            reason,
            state,
        })));
    }

    /// Fencing: only the node that hosts a session saves it. A node that was removed
    /// (paused, cut off) and comes back must not overwrite progress made since on the
    /// node that took its players over; its snapshot is acknowledged and dropped.
    fn snapshot_fenced(&self, node: &str, session: SessionId, name: &str) -> bool {
        match self.players.get(&session) {
            Some(p) => p.node.as_deref() != Some(node),
            // Unknown: accepted after a gateway restart (the node re-sends what it
            // holds), refused for a session that ended here or a character online.
            None => self.ended.contains(&session) || self.by_name.contains_key(&fold(name)),
        }
    }

    /// A zone's atomic checkpoint: every character and the ground in one transaction,
    /// acknowledged once committed; refused as a whole (acknowledged and dropped) when the
    /// sender no longer owns the instance at that generation or does not host one of the
    /// sessions, so a stale node can never restore one side of an exchange.
    fn snapshot_group(&mut self, node: &str, g: SnapshotGroup) {
        let SnapshotGroup {
            snapshot_id,
            key,
            generation,
            entries,
            ground,
        } = g;
        let owner = self.dir.owns(node, &key, generation);
        let stray = entries
            .iter()
            .find(|e| self.snapshot_fenced(node, e.session, &e.state.name))
            .map(|e| e.session);
        if !owner || stray.is_some() {
            self.count(Count::Fenced);
            self.count(Count::GroupRefused);
            tracing::warn!(node, instance = %key, generation, owner, ?stray,
                entries = entries.len(), "checkpoint group from a node that no longer owns it dropped");
            self.send(node, Msg::SnapshotAck { snapshot_id }, Trace::Current);
            return;
        }
        let entries = entries
            .into_iter()
            .map(|e| {
                let owner = self.players.get_mut(&e.session).map(|p| {
                    p.online.team = e.state.team;
                    (p.account, p.slot)
                });
                (owner, e)
            })
            .collect();
        self.out.push(Action::Save(Box::new(Save::Group {
            node: node.to_owned(),
            snapshot_id,
            key,
            entries,
            ground,
        })));
    }

    /// A node's tick watchdog gave an instance up (`InstanceGivenUp`): it is lost as a
    /// lost node's instances are — its players put back from their last saves with new
    /// fencing tokens, the instance placed again with a new generation — while the node's
    /// other instances run on. Stale (the node no longer owns it at that generation):
    /// ignored.
    fn instance_given_up(
        &mut self,
        node: &str,
        key: InstanceKey,
        generation: Generation,
        sessions: &[SessionId],
        chars: &dyn Characters,
    ) {
        let actions = self.dir.given_up(node, &key, generation);
        if actions.is_empty() {
            tracing::info!(node, instance = %key, generation, "stale InstanceGivenUp ignored");
            return;
        }
        self.count(Count::InstanceGivenUp);
        tracing::error!(node, instance = %key, generation, players = sessions.len(),
            "instance given up by its node's watchdog: re-placing it and recovering its players");
        // Transfers whose destination it was go out again once it is placed anew.
        self.transfers_dest_given_up(node, &key);
        self.apply(actions, Trace::Current, chars);
        // Anyone still waiting for it (a login, a transfer, a recovery) needs a placement.
        if self.waiting.contains_key(&key)
            && let Some(a) = self.dir.ensure(&key)
        {
            self.apply(vec![a], Trace::Current, chars);
        }
    }

    /// A node took placements again (no instance of it is stuck any more): place what is
    /// wanted, and whatever logins, transfers and recoveries wait for.
    fn node_unstuck(&mut self, chars: &dyn Characters) {
        let mut actions = self.dir.place_wanted();
        let waited: Vec<InstanceKey> = self.waiting.keys().cloned().collect();
        for key in waited {
            if let Some(a) = self.dir.ensure(&key) {
                actions.push(a);
            }
        }
        self.apply(actions, Trace::Current, chars);
    }

    fn node_down(&mut self, node: &str, serial: u64, reason: &str, chars: &dyn Characters) {
        let deregistered = self.deregistered.remove(&(node.to_owned(), serial));
        if !self.is_live(node, serial) {
            return;
        }
        self.unclaimed.retain(|(_, n), _| n != node);
        self.detaching.retain(|(_, n)| n != node);
        // Node loss (or a drained node leaving) is one trace: the re-placements, and the
        // handoffs that put its players back.
        self.out.push(Action::NodeLost {
            node: node.to_owned(),
            reason: reason.to_owned(),
            deregistered,
        });
        tracing::warn!(node, reason, deregistered, "node link closed");
        self.nodes.remove(node);
        self.out.push(Action::CloseLink {
            node: node.to_owned(),
            code: 0,
            reason: "link closed",
            end: LinkEnd::Closed,
        });
        let actions = self
            .dir
            .disconnected(ms(self.now), node, serial, deregistered);
        // Transfers first: one moving onto it goes out again once its instance is ready;
        // one moving off it waits for the node to come back or to be given up.
        self.transfers_link_lost(node);
        self.apply(actions, Trace::Current, chars);
        // Players on it: a leaving one is done (its last save is what we have).
        let leaving: Vec<SessionId> = self
            .players
            .iter()
            .filter(|(_, p)| {
                p.node.as_deref() == Some(node) && matches!(p.phase, Phase::Leaving { .. })
            })
            .map(|(s, _)| *s)
            .collect();
        for s in leaving {
            self.release(s);
        }
        self.out.push(Action::NodeLostEnd);
    }

    fn apply_placement(&mut self, a: directory::Action, trace: Trace) {
        match a {
            directory::Action::Assign {
                node,
                key,
                generation,
            } => {
                tracing::info!(node = %node, instance = %key, generation, "assigning");
                if self.nodes.contains_key(&node) {
                    self.out.push(Action::Assign {
                        node,
                        key,
                        generation,
                        trace,
                    });
                }
            }
            directory::Action::Stop {
                node,
                key,
                generation,
            } => {
                tracing::info!(node = %node, instance = %key, generation, "stopping a stale copy");
                self.send(&node, Msg::StopInstance { key, generation }, trace);
            }
            directory::Action::DetachOrphan { node, key, session } => {
                if self.hold_until.is_some() {
                    // Within the placement hold an edge of another gateway may still
                    // claim it (`Event::Resume`); detached when the hold ends.
                    self.unclaimed.insert((session, node), (key, None));
                } else {
                    self.send(&node, Msg::DetachPlayer { session }, trace);
                }
            }
            directory::Action::Lost { key, node } => {
                // `apply` handles it; a placement alone never loses an instance.
                tracing::warn!(node = %node, instance = %key, "instance lost outside a node loss");
            }
        }
    }

    fn apply(&mut self, actions: Vec<directory::Action>, trace: Trace, chars: &dyn Characters) {
        for a in actions {
            match a {
                directory::Action::Lost { key, node } => {
                    self.count(Count::InstanceLost);
                    tracing::warn!(node = %node, instance = %key, "instance lost with its node");
                    let on_it: Vec<SessionId> = self
                        .players
                        .iter()
                        .filter(|(_, p)| p.key == key && p.node.as_deref() == Some(node.as_str()))
                        .map(|(s, _)| *s)
                        .collect();
                    let connected = self.nodes.contains_key(&node);
                    for s in on_it {
                        if !self.in_transfer(s) {
                            if connected {
                                // The node lives on (its copy of the instance is being
                                // stopped): the player may have moved inside it meanwhile
                                // (its `PlayerMoved` on the way). That copy is detached,
                                // so it does not linger there holding the session (its
                                // save is fenced by the recovery's token; seed 397,769).
                                self.send(&node, Msg::DetachPlayer { session: s }, Trace::Current);
                            }
                            self.recover(s, chars);
                        }
                    }
                }
                directory::Action::Stop {
                    node,
                    key,
                    generation,
                } => {
                    let (n, k) = (node.clone(), key.clone());
                    self.apply_placement(
                        directory::Action::Stop {
                            node,
                            key,
                            generation,
                        },
                        trace,
                    );
                    self.transfers_dest_withdrawn(&n, &k, chars);
                }
                other => self.apply_placement(other, trace),
            }
        }
    }

    /// An instance became ready: run what waited for it.
    fn wake(&mut self, key: &InstanceKey, chars: &dyn Characters) {
        for w in self.waiting.remove(key).unwrap_or_default() {
            match w {
                Waiter::Attach(s) => self.try_attach(s),
                Waiter::Transfer(id) => self.forward_transfer(id, chars),
            }
        }
    }

    /// Run the world's `Startup.Main` once per gateway start, in the first instance that
    /// is ready (Realm Crafter ran it once when the server started; a cluster has no one
    /// server, so it runs once per cluster start, in one zone).
    fn maybe_startup(&mut self, node: &str, key: &InstanceKey) {
        if self.startup_done {
            return;
        }
        let has_startup = self
            .world
            .scripts
            .iter()
            .any(|s| s.name.eq_ignore_ascii_case(STARTUP_SCRIPT));
        if !has_startup {
            self.startup_done = true;
            return;
        }
        let sent = self.send(
            node,
            Msg::RunScript {
                key: key.clone(),
                script: STARTUP_SCRIPT.into(),
                func: STARTUP_FUNC.into(),
            },
            Trace::Current,
        );
        if sent {
            tracing::info!(node, instance = %key, "running Startup.Main");
            self.startup_done = true;
        }
    }

    // ----- shutdown ---------------------------------------------------------------------

    fn begin_shutdown(&mut self) {
        if self.shutdown.is_some() {
            // Answered again when done (the shell keeps every waiter).
            if matches!(self.shutdown, Some((_, true))) {
                self.out.push(Action::ShutdownDone);
            }
            return;
        }
        tracing::info!(
            players = self.players.len(),
            "shutting down: saving every player"
        );
        self.shutdown = Some((self.now + self.cfg.shutdown_timeout, false));
        let sessions: Vec<SessionId> = self.players.keys().copied().collect();
        for s in sessions {
            self.gone(s);
        }
        self.progress_shutdown();
    }

    fn progress_shutdown(&mut self) {
        let Some((deadline, false)) = self.shutdown else {
            return;
        };
        if !self.players.is_empty() && self.now < deadline {
            return;
        }
        if !self.players.is_empty() {
            tracing::warn!(
                left = self.players.len(),
                "shutdown deadline: some logouts unconfirmed"
            );
        }
        // Done; logins stay refused.
        self.shutdown = Some((deadline, true));
        self.out.push(Action::ShutdownDone);
    }
}

/// The in-game players as the chat commands see them.
struct Roster<'a> {
    players: &'a BTreeMap<SessionId, Player>,
    by_name: &'a BTreeMap<String, SessionId>,
}

impl chat::Roster for Roster<'_> {
    fn get(&self, s: SessionId) -> Option<&OnlinePlayer> {
        self.players.get(&s).map(|p| &p.online)
    }

    fn by_name(&self, name: &str) -> Option<&OnlinePlayer> {
        self.by_name
            .get(&fold(name))
            .and_then(|s| self.players.get(s))
            .map(|p| &p.online)
    }

    fn for_each(&self, f: &mut dyn FnMut(&OnlinePlayer)) {
        for p in self.players.values() {
            if !matches!(p.phase, Phase::Leaving { .. }) {
                f(&p.online);
            }
        }
    }

    fn len(&self) -> usize {
        self.players.len()
    }
}

#[cfg(test)]
mod tests;
