//! The hub: the one task that owns the cluster's control state — the placement
//! [`Directory`], the in-game sessions and their RuntimeIDs, the node links, transfers in
//! flight — and turns client and node events into internal messages.
//!
//! Hot traffic does not pass through here: `P_StandardUpdate` datagrams go straight between
//! a client's connection task and its node link ([`Shared::routes`]), and a zone's reliable
//! frames straight from the node link to the client ([`Shared::clients`]). The hub handles
//! logins entering the world, reliable client frames (low volume, ordered), chat commands that
//! span nodes, snapshots (saved, then acknowledged once committed), and everything about
//! placement and node membership.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use dashmap::DashMap;
use shared::content::World;
use shared::internal::{
    ActorStateDto, ArrivalDto, Envelope, ErrorCode, Generation, GroundItemDto, InstanceKey,
    InstanceLoad, Msg, RunningInstance, SessionId, SnapshotGroup, SnapshotReasonDto,
};
use shared::proto::{
    ChatColour, ChatMessageS2C, KickedPlayer, PartyUpdate, ServerPacket, StartGameReply,
};
use tokio::sync::{mpsc, oneshot};

use crate::admin::{
    ClusterView, InstanceView, NodeView as AdminNode, SessionCounts, UnplacedInstance,
};
use crate::chat::{self, Effect, OnlinePlayer, Route};
use crate::config::GatewayConfig;
use crate::directory::{Action, Directory, NodeId};
use crate::party::{Parties, PartyCommand, PartyEffect};
use crate::script_store::ScriptStore;
use crate::session::{AccountBook, AccountId, LoginThrottle, PasswordHasher, PersistOp, close};
use crate::store::Writer;

mod handoff;
mod metrics;
mod scripts;
pub use metrics::{FAMILIES, Metrics};

use handoff::Transfer;
pub use scripts::{REMOVE_TIMEOUT, STARTUP_FUNC, STARTUP_SCRIPT};

/// Lowest player RuntimeID; players use `1..=MAX_PLAYER_RID` cluster-wide (NPCs use the
/// range above, per instance).
pub const MIN_PLAYER_RID: u16 = 1;
/// Highest player RuntimeID.
pub const MAX_PLAYER_RID: u16 = 15_999;
/// How long a login waits for its instance to be placed and ready.
pub const ATTACH_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a leaving player's node has to send its last snapshot.
pub const DETACH_TIMEOUT: Duration = Duration::from_secs(15);
/// Ended sessions remembered for snapshot fencing.
const MAX_ENDED_SESSIONS: usize = 65_536;
/// Reliable frames kept for a session whose zone is not attached yet.
pub const MAX_QUEUED_FRAMES: usize = 256;
/// Depth of each client's outbound queue; a client that cannot keep up is closed.
pub const CLIENT_QUEUE: usize = 4_096;

/// Something for a client connection task.
#[derive(Debug)]
pub enum ClientOut {
    /// Reliable frames to write on the stream, byte for byte.
    Frames(Bytes),
    /// Close the connection with this application code after flushing.
    Close {
        /// Code of transport.md.
        code: u32,
        /// Why (sent as the close reason and logged).
        reason: String,
    },
}

/// A connected client, as other tasks reach it.
#[derive(Debug, Clone)]
pub struct ClientHandle {
    /// Its outbound queue.
    pub tx: mpsc::Sender<ClientOut>,
    /// Its connection (datagrams are sent on it directly).
    pub conn: quinn::Connection,
    /// The compact profile's encoder when the client negotiated `rc-compact/1` (its
    /// position datagrams are transcoded here, at the edge; the zones speak rc/1 only).
    pub compact: Option<Arc<Mutex<shared::compact::DownEncoder>>>,
}

impl ClientHandle {
    /// Queue frames; a full queue closes the client (it cannot keep up).
    pub fn frames(&self, frames: Bytes, metrics: &Metrics) {
        if self.tx.try_send(ClientOut::Frames(frames)).is_err() {
            Metrics::inc(&metrics.client_queue_overflows);
            self.conn.close(
                close::NORMAL.into(),
                b"send queue overflow: the client is too slow",
            );
        }
    }

    /// Ask the task to close.
    pub fn close(&self, code: u32, reason: &str) {
        let reason = reason.to_owned();
        if self
            .tx
            .try_send(ClientOut::Close {
                code,
                reason: reason.clone(),
            })
            .is_err()
        {
            self.conn.close(code.into(), reason.as_bytes());
        }
    }
}

/// A registered node link, as the hub reaches it.
#[derive(Debug, Clone)]
pub struct NodeLink {
    /// Control messages to the node (the link's writer task encodes them).
    pub tx: mpsc::UnboundedSender<Envelope>,
    /// The QUIC connection (datagrams).
    pub conn: quinn::Connection,
    /// Connection serial (fencing stale connections of the same node id).
    pub serial: u64,
}

impl NodeLink {
    /// Queue `msg`, carrying the current span's trace context when it is exported (a
    /// handoff's, a login's, a placement's); false when the link is gone.
    pub fn send(&self, msg: Msg) -> bool {
        self.tx.send(ops::telemetry::envelope_current(msg)).is_ok()
    }
}

/// Everything the hub hears.
#[derive(Debug)]
pub enum HubEvent {
    /// A session's `P_StartGame` succeeded.
    Entered {
        /// Session.
        session: SessionId,
        /// Account.
        account: AccountId,
        /// Character slot.
        slot: u8,
        /// DM account.
        is_dm: bool,
        /// Saved character.
        state: Box<ActorStateDto>,
        /// The login's trace span (`session.login`), ended once the player is attached.
        login: tracing::Span,
    },
    /// In-game reliable frames for the zone, byte for byte.
    Frames {
        /// Session.
        session: SessionId,
        /// Frames.
        frames: Bytes,
    },
    /// An in-game chat command (`/...`): the hub decides whether the gateway or the zone
    /// handles it.
    Chat {
        /// Session.
        session: SessionId,
        /// The whole frame, to forward unchanged to the zone.
        frame: Bytes,
    },
    /// The client connection ended.
    Gone {
        /// Session.
        session: SessionId,
    },
    /// A node registered.
    NodeUp {
        /// Node id.
        node: NodeId,
        /// Advertised address.
        addr: String,
        /// Capacity.
        capacity: u32,
        /// What it still runs.
        running: Vec<RunningInstance>,
        /// The link.
        link: NodeLink,
        /// The trace context of its `Register`.
        trace: BTreeMap<String, String>,
    },
    /// A control message from a node.
    NodeMsg {
        /// Node id.
        node: NodeId,
        /// Connection serial.
        serial: u64,
        /// The message.
        msg: Msg,
        /// Its envelope's trace context (empty: not traced).
        trace: BTreeMap<String, String>,
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
    /// Save every in-game player (detach them), close every client with code 3, flush the
    /// store, then answer.
    Shutdown {
        /// Answered when done (or at the deadline).
        done: oneshot::Sender<()>,
    },
    /// An operator's command from the admin API (`POST /admin`).
    Admin {
        /// What to do.
        cmd: HubAdmin,
        /// The outcome, as the operator reads it.
        reply: oneshot::Sender<Result<String, String>>,
    },
}

/// The admin commands the hub carries out (the accounts ones are done on the book
/// directly; a ban also kicks through [`HubAdmin::KickAccount`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HubAdmin {
    /// Kick a character by name.
    Kick {
        /// Character name.
        name: String,
    },
    /// Kick every character of an account (it was banned).
    KickAccount {
        /// The account.
        account: AccountId,
    },
    /// Warp a character to an AreaInstance.
    Warp {
        /// Character name.
        name: String,
        /// Area.
        area: String,
        /// Instance.
        instance: u16,
    },
    /// A system line to every player.
    Broadcast {
        /// Text.
        text: String,
    },
    /// Who is online.
    Online,
}

/// Accounts and the login throttle, behind one lock (held for microseconds: argon2 runs
/// outside it).
#[derive(Debug, Default)]
pub struct Accounts {
    /// Every account.
    pub book: AccountBook,
    /// Failed logins per peer.
    pub throttle: LoginThrottle,
}

/// State shared by the hub, the connection tasks and the admin endpoint.
pub struct Shared {
    /// Configuration.
    pub cfg: GatewayConfig,
    /// The world served.
    pub world: Arc<World>,
    /// Accounts (login and snapshots).
    pub accounts: Mutex<Accounts>,
    /// The cluster's script files and super globals (the hub changes them).
    pub scripts: Mutex<ScriptStore>,
    /// Each AreaInstance's ground items as last stored (the hub changes them with every
    /// checkpoint group it stores, and sends them with `AssignInstance`).
    pub ground: Mutex<HashMap<InstanceKey, Vec<GroundItemDto>>>,
    /// The store writer.
    pub writer: Writer,
    /// Password hashing (argon2).
    pub hasher: Arc<dyn PasswordHasher + Send + Sync>,
    /// Connected clients by session.
    pub clients: DashMap<SessionId, ClientHandle>,
    /// In-game sessions → their zone node's connection (the datagram fast path).
    pub routes: DashMap<SessionId, quinn::Connection>,
    /// Counters.
    pub metrics: Metrics,
    /// The hub's inbox.
    pub hub: mpsc::UnboundedSender<HubEvent>,
    /// The latest cluster view (republished by the hub every 200 ms; session counts are
    /// filled in per request).
    pub view: Mutex<ClusterView>,
    /// Set once shutdown began: new connections are refused.
    pub shutting_down: AtomicBool,
    /// The game clock's epoch (Unix ms, from the store; 0 = not set): sent to the nodes
    /// with `AssignInstance`, and the login clock block is read from it.
    pub clock_epoch_ms: AtomicU64,
    /// The gateway's clock for the login limiter (one clock for every connection).
    pub started: Instant,
    /// Slots for password hashing (`max_concurrent_hashes`).
    pub hashes: tokio::sync::Semaphore,
    /// Open client connections (handshaking included) per client network.
    pub per_ip: DashMap<crate::session::PeerKey, u32>,
    /// Open client connections, handshaking included (`max_connections`).
    pub open: std::sync::atomic::AtomicUsize,
    /// Open client connections not yet in the world (`retry_above`).
    pub pregame: std::sync::atomic::AtomicUsize,
    next_session: AtomicU64,
    next_serial: AtomicU64,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("clients", &self.clients.len())
            .field("routes", &self.routes.len())
            .finish_non_exhaustive()
    }
}

impl Shared {
    /// Shared state; returns it with the hub's receiving end.
    pub fn new(
        cfg: GatewayConfig,
        world: Arc<World>,
        book: AccountBook,
        scripts: ScriptStore,
        writer: Writer,
        hasher: Arc<dyn PasswordHasher + Send + Sync>,
        session_base: u64,
    ) -> (Arc<Self>, mpsc::UnboundedReceiver<HubEvent>) {
        let (hub, rx) = mpsc::unbounded_channel();
        let throttle = LoginThrottle::with_limits(crate::session::ThrottleLimits {
            attempts_per_minute: cfg.login_attempts_per_minute,
            creations_per_hour: cfg.account_creations_per_hour,
            connections_per_minute: cfg.connections_per_ip_per_minute,
            handshakes_per_second: cfg.retry_above_rate,
            limit_loopback: cfg.limit_loopback,
        });
        let hash_slots = usize::try_from(cfg.max_concurrent_hashes)
            .unwrap_or(1)
            .max(1);
        let shared = Arc::new(Self {
            cfg,
            world,
            accounts: Mutex::new(Accounts { book, throttle }),
            scripts: Mutex::new(scripts),
            ground: Mutex::new(HashMap::new()),
            writer,
            hasher,
            clients: DashMap::new(),
            routes: DashMap::new(),
            metrics: Metrics::default(),
            hub,
            view: Mutex::new(ClusterView::default()),
            shutting_down: AtomicBool::new(false),
            clock_epoch_ms: AtomicU64::new(0),
            started: Instant::now(),
            hashes: tokio::sync::Semaphore::new(hash_slots),
            per_ip: DashMap::new(),
            open: std::sync::atomic::AtomicUsize::new(0),
            pregame: std::sync::atomic::AtomicUsize::new(0),
            next_session: AtomicU64::new(session_base.max(1)),
            next_serial: AtomicU64::new(1),
        });
        (shared, rx)
    }

    /// A fresh session id (unique across gateway restarts: the base is the start time).
    pub fn next_session(&self) -> SessionId {
        self.next_session.fetch_add(1, Ordering::Relaxed)
    }

    /// A fresh node connection serial.
    pub fn next_serial(&self) -> u64 {
        self.next_serial.fetch_add(1, Ordering::Relaxed)
    }

    /// Lock the accounts (a poisoned lock is recovered: the book stays consistent because
    /// every mutation is a single call).
    pub fn accounts(&self) -> std::sync::MutexGuard<'_, Accounts> {
        match self.accounts.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Lock the stored ground items (a poisoned lock is recovered: each change is one call).
    pub fn ground(&self) -> std::sync::MutexGuard<'_, HashMap<InstanceKey, Vec<GroundItemDto>>> {
        match self.ground.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Lock the script store (a poisoned lock is recovered: each change is one call).
    pub fn scripts(&self) -> std::sync::MutexGuard<'_, ScriptStore> {
        match self.scripts.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Whether `session` is routed to the node connection `conn_id` (`stable_id`): only
    /// the node hosting a session may send to its client.
    pub fn routed_to(&self, session: SessionId, conn_id: usize) -> bool {
        self.routes
            .get(&session)
            .is_some_and(|c| c.stable_id() == conn_id)
    }

    /// Send to the hub (ignored once it stopped).
    pub fn to_hub(&self, e: HubEvent) {
        let _ = self.hub.send(e);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for the instance; frames are queued.
    Attaching { deadline: Instant },
    /// Attached to `Player::node`.
    InGame,
    /// `DetachPlayer` sent; waiting for the snapshot and `PlayerDetached`.
    Leaving { deadline: Instant },
    /// Its zone node was lost: being put back from its last save into the re-placed
    /// instance (a gateway-originated handoff); client frames are dropped meanwhile.
    Recovering { deadline: Instant },
}

#[derive(Debug)]
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
    /// The login's trace span until the player is attached.
    login: Option<tracing::Span>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Waiter {
    Attach(SessionId),
    Transfer(u64),
}

/// The hub's state; [`run`] drives it.
pub struct Hub {
    shared: Arc<Shared>,
    started: Instant,
    dir: Directory,
    nodes: HashMap<NodeId, NodeLink>,
    deregistered: HashSet<(NodeId, u64)>,
    /// Sessions that ended in this gateway's lifetime (bounded, oldest forgotten first):
    /// a snapshot for one of them comes from a node that no longer owns the character.
    ended: HashSet<SessionId>,
    ended_order: std::collections::VecDeque<SessionId>,
    players: HashMap<SessionId, Player>,
    by_name: HashMap<String, SessionId>,
    free_rids: Vec<u16>,
    transfers: HashMap<u64, Transfer>,
    next_transfer: u64,
    parties: Parties,
    waiting: BTreeMap<InstanceKey, Vec<Waiter>>,
    areas: Vec<String>,
    shutdown: Option<(Instant, Vec<oneshot::Sender<()>>)>,
    /// Instances a script asked to remove, until they are stopped.
    removals: HashMap<InstanceKey, scripts::Removal>,
    /// Removed instances told to stop: their stored ground goes once they have stopped.
    removed: HashSet<InstanceKey>,
    /// `Startup.Main` has been sent (once per gateway start).
    startup_done: bool,
    /// Until when (hub clock) placement is held after start (see `Directory::hold`).
    hold_until_ms: Option<u64>,
}

fn fold(name: &str) -> String {
    name.to_lowercase()
}

impl Hub {
    /// A hub over `shared`; `generation_base` should grow across restarts (wall clock ms).
    pub fn new(shared: Arc<Shared>, generation_base: Generation) -> Self {
        let areas: Vec<String> = shared.world.areas.iter().map(|a| a.name.clone()).collect();
        let mut hub = Self {
            dir: Directory::new(areas.clone(), generation_base),
            started: Instant::now(),
            nodes: HashMap::new(),
            deregistered: HashSet::new(),
            ended: HashSet::new(),
            ended_order: std::collections::VecDeque::new(),
            players: HashMap::new(),
            by_name: HashMap::new(),
            free_rids: (MIN_PLAYER_RID..=MAX_PLAYER_RID).rev().collect(),
            transfers: HashMap::new(),
            next_transfer: 1,
            parties: Parties::new(),
            waiting: BTreeMap::new(),
            areas,
            shutdown: None,
            removals: HashMap::new(),
            removed: HashSet::new(),
            startup_done: false,
            hold_until_ms: None,
            shared,
        };
        // A gateway that (re)starts beside separate zone nodes gives them
        // `placement_hold_ms` to report what they still run before it places anything anew
        // (the embedded node of `--standalone` starts empty: nothing to wait for).
        if !hub.shared.cfg.standalone && hub.shared.cfg.placement_hold_ms > 0 {
            hub.dir.hold();
            hub.hold_until_ms = Some(hub.shared.cfg.placement_hold_ms);
        }
        hub
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Send to a node, with the current span's trace context (see [`NodeLink::send`]).
    fn send_node(&self, node: &str, msg: Msg) -> bool {
        match self.nodes.get(node) {
            Some(l) => l.send(msg),
            None => false,
        }
    }

    fn client(&self, session: SessionId) -> Option<ClientHandle> {
        self.shared.clients.get(&session).map(|c| c.clone())
    }

    fn send_packet(&self, session: SessionId, p: &ServerPacket) {
        let Some(c) = self.client(session) else {
            return;
        };
        let mut out = Vec::new();
        if p.encode_frame(&mut out).is_ok() {
            c.frames(Bytes::from(out), &self.shared.metrics);
        }
    }

    fn close_client(&self, session: SessionId, code: u32, reason: &str) {
        if let Some(c) = self.client(session) {
            c.close(code, reason);
        }
    }

    /// Handle one event.
    pub fn handle(&mut self, e: HubEvent) {
        match e {
            HubEvent::Entered {
                session,
                account,
                slot,
                is_dm,
                state,
                login,
            } => self.entered(session, account, slot, is_dm, state, login),
            HubEvent::Frames { session, frames } => self.frames(session, frames),
            HubEvent::Chat { session, frame } => self.chat(session, frame),
            HubEvent::Gone { session } => self.gone(session),
            HubEvent::NodeUp {
                node,
                addr,
                capacity,
                running,
                link,
                trace,
            } => {
                // Registration is one trace with the node's `node.register`.
                let span = tracing::info_span!("node.register", node = %node, addr = %addr,
                    capacity, running = running.len());
                ops::telemetry::set_parent(&span, &trace);
                span.in_scope(|| self.node_up(node, &addr, capacity, &running, link));
            }
            HubEvent::NodeMsg {
                node,
                serial,
                msg,
                trace,
            } => {
                // A traced message (a handoff's) is handled under its sender's span.
                match ops::telemetry::recv_span_parts(&trace, msg.name(), &node) {
                    Some(span) => span.in_scope(|| self.node_msg(&node, serial, msg)),
                    None => self.node_msg(&node, serial, msg),
                }
            }
            HubEvent::NodeDown {
                node,
                serial,
                reason,
            } => self.node_down(&node, serial, &reason),
            HubEvent::Shutdown { done } => self.begin_shutdown(done),
            HubEvent::Admin { cmd, reply } => {
                let _ = reply.send(self.admin(cmd));
            }
        }
    }

    /// An operator's command (see [`HubAdmin`]).
    fn admin(&mut self, cmd: HubAdmin) -> Result<String, String> {
        let session_of = |hub: &Self, name: &str| {
            hub.by_name
                .get(&fold(name))
                .copied()
                .ok_or_else(|| format!("no character called {name:?} is online"))
        };
        tracing::info!(command = ?cmd, "admin command");
        match cmd {
            HubAdmin::Kick { name } => {
                let session = session_of(self, &name)?;
                self.chat_effect(Effect::Kick {
                    session,
                    by: "admin".into(),
                });
                Ok(format!("kicked {name}"))
            }
            HubAdmin::KickAccount { account } => {
                let sessions: Vec<SessionId> = self
                    .players
                    .iter()
                    .filter(|(_, p)| p.account == account)
                    .map(|(s, _)| *s)
                    .collect();
                for &session in &sessions {
                    self.chat_effect(Effect::Kick {
                        session,
                        by: "admin".into(),
                    });
                }
                Ok(format!("{} kicked", sessions.len()))
            }
            HubAdmin::Warp {
                name,
                area,
                instance,
            } => {
                let session = session_of(self, &name)?;
                let Some(area) = self
                    .areas
                    .iter()
                    .find(|a| a.eq_ignore_ascii_case(&area))
                    .cloned()
                else {
                    return Err(format!("there is no area called {area:?}"));
                };
                // As `/warpother`: the node's SetArea asks for the instance, placed then if
                // it is not yet (`hub/handoff.rs`).
                self.chat_effect(Effect::WarpPlayer {
                    session,
                    area: area.clone(),
                    instance,
                });
                Ok(format!("warping {name} to {area} #{instance}"))
            }
            HubAdmin::Broadcast { text } => {
                let packet = ServerPacket::ChatMessage(ChatMessageS2C {
                    colour: ChatColour::System,
                    text: shared::wire::RcString::from(text.as_str()),
                });
                let sessions: Vec<SessionId> = self.players.keys().copied().collect();
                for &s in &sessions {
                    self.send_packet(s, &packet);
                }
                Ok(format!("sent to {} players", sessions.len()))
            }
            HubAdmin::Online => {
                let mut lines: Vec<String> = self
                    .players
                    .values()
                    .map(|p| format!("{}\t{}\t{}", p.online.name, p.key.area, p.key.instance))
                    .collect();
                lines.sort();
                Ok(lines.join("\n"))
            }
        }
    }

    // ----- sessions ---------------------------------------------------------------------

    /// Where a character logs in: its saved area, instance 0 (Realm Crafter's
    /// `SetArea(saved area, 0, saved x,y,z)`); a character whose area no longer exists goes
    /// to its template's start portal.
    fn login_place(&self, state: &ActorStateDto) -> (InstanceKey, ArrivalDto) {
        let world = &self.shared.world;
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

    fn entered(
        &mut self,
        session: SessionId,
        account: AccountId,
        slot: u8,
        is_dm: bool,
        state: Box<ActorStateDto>,
        login: tracing::Span,
    ) {
        let _login = login.enter();
        if self.shutdown.is_some() || self.client(session).is_none() {
            self.shared.accounts().book.set_logged_on(account, false);
            return;
        }
        let Some(rid) = self.free_rids.pop() else {
            self.send_packet(session, &ServerPacket::StartGame(StartGameReply::Failed));
            self.close_client(session, close::SHUTDOWN, "the cluster is full");
            self.shared.accounts().book.set_logged_on(account, false);
            return;
        };
        Metrics::inc(&self.shared.metrics.logins);
        let (ignore, user, email) = self
            .shared
            .accounts()
            .book
            .get(account)
            .map(|a| {
                (
                    a.row.ignore.clone(),
                    a.row.user.clone(),
                    a.row.email.clone(),
                )
            })
            .unwrap_or_default();
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
        let mut state = state;
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
                key: key.clone(),
                state: Some(state),
                arrival,
                node: None,
                phase: Phase::Attaching {
                    deadline: Instant::now() + ATTACH_TIMEOUT,
                },
                queued: Vec::new(),
                login: Some(login.clone()),
            },
        );
        self.try_attach(session);
    }

    fn try_attach(&mut self, session: SessionId) {
        let Some(p) = self.players.get(&session) else {
            return;
        };
        // In the login's trace: the placement it waits for, and the AttachPlayer.
        let login = p.login.clone().unwrap_or_else(tracing::Span::none);
        let _login = login.enter();
        let key = p.key.clone();
        let ready = self
            .dir
            .placement(&key)
            .filter(|pl| pl.ready)
            .map(|pl| (pl.node.clone(), pl.generation));
        let Some((node, generation)) = ready else {
            tracing::debug!(session, instance = %key, "login waits for its instance");
            self.wait(key.clone(), Waiter::Attach(session));
            if let Some(a) = self.dir.ensure(&key) {
                self.apply(vec![a]);
            }
            return;
        };
        let Some(link) = self.nodes.get(&node).cloned() else {
            self.wait(key, Waiter::Attach(session));
            return;
        };
        let Some(p) = self.players.get_mut(&session) else {
            return;
        };
        let Some(state) = p.state.take() else {
            return;
        };
        let arrival = p.arrival.clone();
        let sent = link.send(Msg::AttachPlayer {
            session,
            key,
            generation,
            rid: p.rid,
            is_dm: p.online.is_dm,
            state,
            arrival,
        });
        if !sent {
            return;
        }
        // The login trace ends with the attach (the node's part follows from it).
        p.login = None;
        tracing::debug!(session, node = %node, "player attached");
        p.node = Some(node);
        p.phase = Phase::InGame;
        self.shared.routes.insert(session, link.conn.clone());
        for frames in std::mem::take(&mut p.queued) {
            Metrics::inc(&self.shared.metrics.frames_up);
            let _ = link
                .tx
                .send(Envelope::new(Msg::ClientFrames { session, frames }));
        }
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
                Metrics::inc(&self.shared.metrics.frames_up);
                self.send_node(&node, Msg::ClientFrames { session, frames });
            }
            (Phase::Attaching { .. }, _) if p.queued.len() < MAX_QUEUED_FRAMES => {
                p.queued.push(frames);
            }
            _ => Metrics::inc(&self.shared.metrics.frames_dropped),
        }
    }

    fn chat(&mut self, session: SessionId, frame: Bytes) {
        let text = frame.get(3..).unwrap_or(&[]);
        if let Some(cmd) = PartyCommand::parse(text) {
            self.party_command(session, cmd);
            return;
        }
        let roster = HubRoster {
            players: &self.players,
            by_name: &self.by_name,
        };
        match chat::route(session, text, &roster, &self.areas) {
            Route::Zone => self.frames(session, frame),
            Route::Handled(effects) => {
                Metrics::inc(&self.shared.metrics.chat_commands);
                for e in effects {
                    self.chat_effect(e);
                }
            }
        }
    }

    /// `/invite`, `/accept`, `/leave`, `/p` from an in-game session.
    fn party_command(&mut self, session: SessionId, cmd: PartyCommand) {
        let Some(me) = self.players.get(&session).map(|p| p.online.name.clone()) else {
            return;
        };
        Metrics::inc(&self.shared.metrics.chat_commands);
        let effects = match cmd {
            PartyCommand::Invite(name) => {
                let target = self
                    .by_name
                    .get(&fold(name.trim()))
                    .and_then(|s| self.players.get(s))
                    .filter(|p| !p.online.ignore.iter().any(|i| i.eq_ignore_ascii_case(&me)))
                    .map(|p| p.online.name.clone());
                self.parties.invite(&me, target.as_deref(), name.trim())
            }
            PartyCommand::Accept => {
                let online = |n: &str| self.by_name.contains_key(&fold(n));
                self.parties.accept(&me, online)
            }
            PartyCommand::Leave => self.parties.leave(&me),
            PartyCommand::Say(text) => self.parties.chat(&me, &text),
        };
        self.party_effects(effects);
    }

    fn party_effects(&mut self, effects: Vec<PartyEffect>) {
        for e in effects {
            match e {
                PartyEffect::Update { to, others } => {
                    if let Some(&s) = self.by_name.get(&fold(&to)) {
                        let p = ServerPacket::PartyUpdate(PartyUpdate {
                            members: others.iter().map(|n| n.as_str().into()).collect(),
                        });
                        self.send_packet(s, &p);
                    }
                }
                PartyEffect::Chat { to, red, text } => {
                    if let Some(&s) = self.by_name.get(&fold(&to)) {
                        let colour = if red {
                            ChatColour::Red
                        } else {
                            ChatColour::Green
                        };
                        let p = ServerPacket::ChatMessage(ChatMessageS2C {
                            colour,
                            text: text.as_str().into(),
                        });
                        self.send_packet(s, &p);
                    }
                }
                PartyEffect::Members { who, members } => {
                    if let Some(&s) = self.by_name.get(&fold(&who)) {
                        self.sync_party(s, members);
                    }
                }
            }
        }
    }

    /// Tell a session's zone node the members of its party.
    fn sync_party(&self, session: SessionId, members: Vec<String>) {
        if let Some(node) = self.players.get(&session).and_then(|p| p.node.clone()) {
            self.send_node(&node, Msg::PartyMembers { session, members });
        }
    }

    /// After a session's zone changed (handoff, recovery): its new zone learns its party.
    pub(super) fn resync_party(&self, session: SessionId) {
        let Some(name) = self.players.get(&session).map(|p| p.online.name.clone()) else {
            return;
        };
        if let Some(members) = self.parties.members_of(&name) {
            self.sync_party(session, members.to_vec());
        }
    }

    fn chat_effect(&mut self, e: Effect) {
        match e {
            Effect::Send { to, packet } => self.send_packet(to, &packet),
            Effect::Kick { session, by } => {
                self.send_packet(session, &ServerPacket::KickedPlayer(KickedPlayer {}));
                tracing::info!(session, by = %by, "kicked");
                self.close_client(session, close::KICKED, "kicked");
            }
            Effect::WarpPlayer {
                session,
                area,
                instance,
            } => {
                if let Some(node) = self.players.get(&session).and_then(|p| p.node.clone()) {
                    // `/warpother`: the root of the handoff's trace (the node's SetArea
                    // joins it through the WarpPlayer's context).
                    let span = tracing::info_span!(parent: None, "chat.warp", session,
                        node = %node, to_zone = %area, to_instance = instance);
                    let _span = span.enter();
                    self.send_node(
                        &node,
                        Msg::WarpPlayer {
                            session,
                            area,
                            instance,
                        },
                    );
                }
            }
            Effect::SetIgnore { account, list } => {
                let ops = {
                    let mut acc = self.shared.accounts();
                    acc.book.set_ignore(account, list.clone());
                    acc.book.take_persist()
                };
                if let Err(e) = self.shared.writer.submit(ops) {
                    tracing::error!(error = %e, "store writer unavailable");
                }
                for p in self.players.values_mut() {
                    if p.account == account {
                        p.online.ignore.clone_from(&list);
                    }
                }
            }
        }
    }

    fn gone(&mut self, session: SessionId) {
        self.shared.routes.remove(&session);
        let Some(p) = self.players.get_mut(&session) else {
            return;
        };
        match (p.phase, p.node.clone()) {
            (Phase::InGame, Some(node)) => {
                p.phase = Phase::Leaving {
                    deadline: Instant::now() + DETACH_TIMEOUT,
                };
                if !self.send_node(&node, Msg::DetachPlayer { session }) {
                    self.release(session);
                }
            }
            (Phase::Leaving { .. }, _) => {}
            _ => self.release(session),
        }
    }

    /// Forget an in-game session: RuntimeID back to the pool, the account may log in again.
    fn release(&mut self, session: SessionId) {
        self.shared.routes.remove(&session);
        let leaving = self.players.get(&session).map(|p| p.online.name.clone());
        if let Some(name) = leaving {
            let effects = self.parties.leave(&name);
            self.party_effects(effects);
        }
        let Some(p) = self.players.remove(&session) else {
            return;
        };
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
        self.free_rids.push(p.rid);
        self.shared.accounts().book.set_logged_on(p.account, false);
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
        running: &[RunningInstance],
        link: NodeLink,
    ) {
        if let Some(old) = self.nodes.insert(node.clone(), link.clone()) {
            // The same node on a new connection: the old one is dead or stale.
            old.conn
                .close(0u32.into(), b"superseded by a new registration");
        }
        tracing::info!(node = %node, addr, capacity, running = running.len(), "node registered");
        // Its zones' copy of the super globals, before anything else it hears.
        link.send(self.superglobals_msg());
        let players = &self.players;
        let known = |s: SessionId| players.contains_key(&s);
        let now = self.now_ms();
        let actions = self
            .dir
            .register(now, &node, addr, capacity, link.serial, running, &known);
        // Sessions the node still hosts for us keep routing through the new connection.
        for r in running {
            for s in &r.sessions {
                if let Some(p) = self.players.get_mut(s)
                    && p.node.as_deref() == Some(node.as_str())
                {
                    p.key = r.key.clone();
                    self.shared.routes.insert(*s, link.conn.clone());
                }
            }
        }
        self.apply(actions);
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

    fn live(&self, node: &str, serial: u64) -> bool {
        self.nodes.get(node).is_some_and(|l| l.serial == serial)
    }

    fn node_msg(&mut self, node: &str, serial: u64, msg: Msg) {
        if !self.live(node, serial) {
            Metrics::inc(&self.shared.metrics.internal_refused);
            return;
        }
        let now = self.now_ms();
        match msg {
            Msg::Heartbeat {
                players,
                overruns,
                loads,
                ..
            } => {
                self.dir.heartbeat(now, node, serial, players, overruns);
                for InstanceLoad {
                    key,
                    players,
                    npcs,
                    tick_p99_us,
                } in loads
                {
                    self.dir
                        .instance_load(node, &key, players, npcs, tick_p99_us);
                }
            }
            Msg::InstanceReady { key, generation } => {
                self.dir.heartbeat(now, node, serial, 0, 0);
                if self.dir.ready(node, &key, generation) {
                    tracing::info!(node, instance = %key, generation, "instance ready");
                    self.maybe_startup(node, &key);
                    self.wake(&key);
                } else {
                    self.send_node(node, Msg::StopInstance { key, generation });
                }
            }
            Msg::InstanceStopped { key, generation } => {
                if self.dir.stopped(node, &key, generation) {
                    tracing::info!(node, instance = %key, generation, "instance stopped");
                    if self.removed.remove(&key) {
                        self.forget_ground(&key);
                    }
                    let mut actions = self.dir.place_wanted();
                    // Someone waits for it (a player moved off a draining node): place it
                    // again even if it is not an instance 0.
                    if self.waiting.contains_key(&key)
                        && let Some(a) = self.dir.ensure(&key)
                    {
                        actions.push(a);
                    }
                    self.apply(actions);
                }
            }
            Msg::Snapshot {
                snapshot_id,
                session,
                reason,
                state,
            } => self.snapshot(node, snapshot_id, session, reason, state),
            Msg::SnapshotGroup(g) => self.snapshot_group(node, *g),
            Msg::PlayerDetached { session } => {
                let Some(p) = self.players.get(&session) else {
                    return;
                };
                if p.node.as_deref() != Some(node) {
                    // It moved to another node; the old one let go.
                    return;
                }
                if matches!(p.phase, Phase::InGame) {
                    // The node dropped a live player (instance stopped, node draining): its
                    // snapshot came first, so the character is saved. While the cluster
                    // runs on, the player is put back from that save on another node (a
                    // rolling restart costs no one a reconnect); at shutdown it is closed.
                    if self.shutdown.is_none() {
                        tracing::info!(session, node, "player let go by its node: moving it");
                        self.recover(session);
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
                    self.resync_party(session);
                }
            }
            Msg::Transfer(t) => self.transfer_from(node, t),
            Msg::TransferAck {
                transfer_id,
                generation,
            } => self.transfer_prepared(node, transfer_id, generation),
            Msg::TransferNack {
                transfer_id,
                reason,
            } => self.transfer_refused(node, transfer_id, reason),
            Msg::TransferCommit { transfer_id } => self.transfer_decided(node, transfer_id, true),
            Msg::TransferAbort { transfer_id } => self.transfer_decided(node, transfer_id, false),
            Msg::Drain => {
                tracing::info!(node, "node draining");
                self.dir.draining(node, serial);
            }
            Msg::Deregister => {
                tracing::info!(node, "node deregistered");
                self.deregistered.insert((node.to_owned(), serial));
                if let Some(l) = self.nodes.get(node) {
                    l.conn.close(0u32.into(), b"deregistered");
                }
            }
            Msg::ScriptStore { req, op } => self.script_store(node, req, op),
            Msg::AccountAction { session, action } => self.account_action(node, session, action),
            Msg::Error { code, reason } => {
                tracing::warn!(node, ?code, %reason, "node reported an error");
            }
            other => {
                Metrics::inc(&self.shared.metrics.internal_refused);
                tracing::warn!(node, msg = other.name(), "unexpected message from a node");
                self.send_node(
                    node,
                    Msg::Error {
                        code: ErrorCode::Unexpected,
                        reason: format!("{} is not accepted by the gateway", other.name()),
                    },
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
            Metrics::inc(&self.shared.metrics.fenced);
            tracing::warn!(
                node,
                session,
                ?reason,
                "snapshot from a node that no longer hosts the player dropped"
            );
            self.send_node(node, Msg::SnapshotAck { snapshot_id });
            return;
        }
        let owner = self.players.get(&session).map(|p| (p.account, p.slot));
        if let Some(p) = self.players.get_mut(&session) {
            p.online.team = state.team;
        }
        let ops = {
            let mut acc = self.shared.accounts();
            let target = owner.or_else(|| acc.book.find_character(&state.name));
            match target {
                Some((account, slot)) if acc.book.save_character(account, slot, *state) => {
                    acc.book.take_persist()
                }
                _ => Vec::new(),
            }
        };
        if ops.is_empty() {
            Metrics::inc(&self.shared.metrics.snapshots_orphaned);
            tracing::warn!(
                node,
                session,
                ?reason,
                "snapshot for an unknown character dropped"
            );
        }
        if let Err(e) = self.shared.writer.submit(ops) {
            tracing::error!(error = %e, "store writer unavailable; snapshot not acknowledged");
            return;
        }
        let Some(link) = self.nodes.get(node).cloned() else {
            return;
        };
        let shared = Arc::downgrade(&self.shared);
        let r = self.shared.writer.after_commit(move |ok| {
            if ok {
                if let Some(s) = shared.upgrade() {
                    Metrics::inc(&s.metrics.snapshots_saved);
                }
                let _ = link
                    .tx
                    .send(Envelope::new(Msg::SnapshotAck { snapshot_id }));
            } else {
                tracing::error!(
                    snapshot_id,
                    "snapshot write failed; the node will resend it"
                );
            }
        });
        if let Err(e) = r {
            tracing::error!(error = %e, "store writer unavailable");
        }
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
            Metrics::inc(&self.shared.metrics.fenced);
            Metrics::inc(&self.shared.metrics.snapshot_groups_refused);
            tracing::warn!(node, instance = %key, generation, owner, ?stray,
                entries = entries.len(), "checkpoint group from a node that no longer owns it dropped");
            self.send_node(node, Msg::SnapshotAck { snapshot_id });
            return;
        }
        let n = entries.len();
        let mut targets = Vec::with_capacity(n);
        for e in &entries {
            let owner = self.players.get_mut(&e.session).map(|p| {
                p.online.team = e.state.team;
                (p.account, p.slot)
            });
            targets.push(owner);
        }
        let mut ops = {
            let mut acc = self.shared.accounts();
            for (e, owner) in entries.into_iter().zip(targets) {
                let target = owner.or_else(|| acc.book.find_character(&e.state.name));
                let saved = match target {
                    Some((account, slot)) => acc.book.save_character(account, slot, e.state),
                    None => false,
                };
                if !saved {
                    Metrics::inc(&self.shared.metrics.snapshots_orphaned);
                    tracing::warn!(node, session = e.session, reason = ?e.reason,
                        "snapshot for an unknown character dropped (in a group)");
                }
            }
            acc.book.take_persist()
        };
        if let Some(items) = ground {
            {
                let mut g = self.shared.ground();
                if items.is_empty() {
                    g.remove(&key);
                } else {
                    g.insert(key.clone(), items.clone());
                }
            }
            ops.push(PersistOp::ReplaceGround {
                key: key.clone(),
                items,
            });
        }
        // One submit: one transaction.
        if let Err(e) = self.shared.writer.submit(ops) {
            tracing::error!(error = %e, "store writer unavailable; checkpoint group not acknowledged");
            return;
        }
        let Some(link) = self.nodes.get(node).cloned() else {
            return;
        };
        let shared = Arc::downgrade(&self.shared);
        let r = self.shared.writer.after_commit(move |ok| {
            if ok {
                if let Some(s) = shared.upgrade() {
                    Metrics::inc(&s.metrics.snapshot_groups_saved);
                    s.metrics
                        .snapshot_group_entries
                        .fetch_add(u64::try_from(n).unwrap_or(u64::MAX), Ordering::Relaxed);
                }
                let _ = link
                    .tx
                    .send(Envelope::new(Msg::SnapshotAck { snapshot_id }));
            } else {
                tracing::error!(
                    snapshot_id,
                    instance = %key,
                    "checkpoint group write failed; the node will resend it"
                );
            }
        });
        if let Err(e) = r {
            tracing::error!(error = %e, "store writer unavailable");
        }
    }

    /// An instance removed for good: its stored ground goes with it.
    pub(super) fn forget_ground(&mut self, key: &InstanceKey) {
        if self.shared.ground().remove(key).is_some() {
            tracing::info!(instance = %key, "stored ground items of a removed instance deleted");
        }
        let op = PersistOp::ReplaceGround {
            key: key.clone(),
            items: Vec::new(),
        };
        if let Err(e) = self.shared.writer.submit(vec![op]) {
            tracing::error!(error = %e, "store writer unavailable");
        }
    }

    fn node_down(&mut self, node: &str, serial: u64, reason: &str) {
        let deregistered = self.deregistered.remove(&(node.to_owned(), serial));
        if !self.live(node, serial) {
            return;
        }
        // Node loss (or a drained node leaving) is one trace: the re-placements, and the
        // handoffs that put its players back.
        let span = tracing::info_span!(parent: None, "node.lost", node, reason, deregistered);
        let _span = span.enter();
        tracing::warn!(node, reason, deregistered, "node link closed");
        self.nodes.remove(node);
        let now = self.now_ms();
        let actions = self.dir.disconnected(now, node, serial, deregistered);
        // Transfers first: a player moving off the lost node is committed at its
        // destination, one moving onto it stays where it was.
        self.transfers_node_lost(node);
        self.apply(actions);
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
    }

    fn apply(&mut self, actions: Vec<Action>) {
        for a in actions {
            match a {
                Action::Assign {
                    node,
                    key,
                    generation,
                } => {
                    let span = tracing::info_span!("instance.place", node = %node,
                        zone = %key.area, instance = key.instance, generation);
                    let _span = span.enter();
                    let ground = self.shared.ground().get(&key).cloned().unwrap_or_default();
                    tracing::info!(node = %node, instance = %key, generation,
                        ground = ground.len(), "assigning");
                    self.send_node(
                        &node,
                        Msg::AssignInstance {
                            key,
                            generation,
                            ground,
                            clock_epoch_ms: self.shared.clock_epoch_ms.load(Ordering::Relaxed),
                        },
                    );
                }
                Action::Stop {
                    node,
                    key,
                    generation,
                } => {
                    let span = tracing::info_span!("instance.stop", node = %node,
                        zone = %key.area, instance = key.instance, generation);
                    let _span = span.enter();
                    tracing::info!(node = %node, instance = %key, generation, "stopping a stale copy");
                    self.send_node(&node, Msg::StopInstance { key, generation });
                }
                Action::Lost { key, node } => {
                    let span = tracing::info_span!("instance.lost", node = %node,
                        zone = %key.area, instance = key.instance);
                    let _span = span.enter();
                    Metrics::inc(&self.shared.metrics.instances_lost);
                    tracing::warn!(node = %node, instance = %key, "instance lost with its node");
                    let on_it: Vec<SessionId> = self
                        .players
                        .iter()
                        .filter(|(_, p)| p.key == key && p.node.as_deref() == Some(node.as_str()))
                        .map(|(s, _)| *s)
                        .collect();
                    for s in on_it {
                        if !self.in_transfer(s) {
                            self.recover(s);
                        }
                    }
                }
                Action::DetachOrphan { node, session } => {
                    self.send_node(&node, Msg::DetachPlayer { session });
                }
            }
        }
    }

    /// An instance became ready: run what waited for it.
    fn wake(&mut self, key: &InstanceKey) {
        for w in self.waiting.remove(key).unwrap_or_default() {
            match w {
                Waiter::Attach(s) => self.try_attach(s),
                Waiter::Transfer(id) => self.forward_transfer(id),
            }
        }
    }

    // ----- time -------------------------------------------------------------------------

    /// Periodic work: node expiry, timeouts, the published view, the shutdown's progress.
    pub fn tick(&mut self) {
        let now = self.now_ms();
        if self.hold_until_ms.is_some_and(|t| now >= t) {
            self.hold_until_ms = None;
            let mut actions = self.dir.release();
            // Logins and warps that waited for an instance nobody reported.
            let waited: Vec<InstanceKey> = self.waiting.keys().cloned().collect();
            actions.extend(waited.iter().filter_map(|k| self.dir.ensure(k)));
            tracing::info!(placed = actions.len(), "placement hold over");
            self.apply(actions);
        }
        // The nodes the directory drops are named from the directory itself: a node whose
        // link closed first (a killed process) is no longer in `self.nodes`, but it is
        // only now, at its heartbeat timeout, that its instances are re-placed and its
        // players recovered, and the trace must say which node that was.
        let known: Vec<NodeId> = self.dir.nodes().map(|n| n.id.clone()).collect();
        let actions = self.dir.expire(now, self.shared.cfg.node_timeout_ms);
        if !actions.is_empty() {
            let gone: Vec<NodeId> = known
                .into_iter()
                .filter(|n| self.dir.node(n).is_none())
                .collect();
            // Detection, re-placement and recovery of the silent nodes: one trace.
            let span = tracing::info_span!(parent: None, "node.lost",
                node = %gone.join(","), reason = "missed its heartbeats", deregistered = false);
            let _span = span.enter();
            for n in gone {
                // A link still open is closed; one already closed had its transfers
                // settled by `node_down`.
                if let Some(l) = self.nodes.remove(&n) {
                    tracing::warn!(node = %n, "node missed its heartbeats: removed");
                    l.conn.close(2u32.into(), b"missed its heartbeats");
                    self.transfers_node_lost(&n);
                }
            }
            self.apply(actions);
        }
        let t = Instant::now();
        let late: Vec<(SessionId, Phase)> = self
            .players
            .iter()
            .filter_map(|(s, p)| match p.phase {
                Phase::Attaching { deadline }
                | Phase::Leaving { deadline }
                | Phase::Recovering { deadline }
                    if t >= deadline =>
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
                self.send_packet(s, &ServerPacket::StartGame(StartGameReply::Failed));
                self.close_client(s, close::SHUTDOWN, "no zone is available; try again later");
            } else {
                tracing::warn!(
                    session = s,
                    "the zone node did not confirm the logout in time"
                );
            }
            self.release(s);
        }
        self.transfer_timeouts(t);
        self.progress_removals();
        self.publish();
        self.progress_shutdown();
    }

    fn publish(&self) {
        let now = self.now_ms();
        let nodes = self
            .dir
            .nodes()
            .map(|n| {
                let instances: Vec<InstanceView> = self
                    .dir
                    .placements()
                    .filter(|(_, p)| p.node == n.id)
                    .map(|(k, p)| InstanceView {
                        area: k.area.clone(),
                        instance: k.instance,
                        generation: p.generation,
                        players: u64::from(p.players),
                        npcs: u64::from(p.npcs),
                        tick_p99_ms: f64::from(p.tick_p99_us) / 1000.0,
                    })
                    .collect();
                AdminNode {
                    id: n.id.clone(),
                    address: n.addr.clone(),
                    capacity: n.capacity,
                    load: AdminNode::load_of(instances.len(), n.capacity),
                    players: u64::from(n.players),
                    draining: n.draining,
                    last_heartbeat_ms_ago: now.saturating_sub(n.last_seen_ms),
                    instances,
                }
            })
            .collect();
        let view = ClusterView {
            gateway_id: self.shared.cfg.gateway_id.clone(),
            sessions: SessionCounts {
                connected: 0,
                in_menu: 0,
                in_game: u64::try_from(self.players.len()).unwrap_or(u64::MAX),
            },
            nodes,
            unplaced: self
                .dir
                .unplaced()
                .into_iter()
                .map(|k| UnplacedInstance {
                    area: k.area,
                    instance: k.instance,
                })
                .collect(),
        };
        match self.shared.view.lock() {
            Ok(mut v) => *v = view,
            Err(p) => *p.into_inner() = view,
        }
    }

    fn begin_shutdown(&mut self, done: oneshot::Sender<()>) {
        self.shared.shutting_down.store(true, Ordering::Relaxed);
        if let Some((_, waiters)) = &mut self.shutdown {
            waiters.push(done);
            return;
        }
        tracing::info!(
            players = self.players.len(),
            "shutting down: saving every player"
        );
        let sessions: Vec<SessionId> = self.players.keys().copied().collect();
        for s in sessions {
            self.gone(s);
        }
        self.shutdown = Some((
            Instant::now() + self.shared.cfg.shutdown_timeout(),
            vec![done],
        ));
        self.progress_shutdown();
    }

    fn progress_shutdown(&mut self) {
        let Some((deadline, _)) = &self.shutdown else {
            return;
        };
        if !self.players.is_empty() && Instant::now() < *deadline {
            return;
        }
        if !self.players.is_empty() {
            tracing::warn!(
                left = self.players.len(),
                "shutdown deadline: some logouts unconfirmed"
            );
        }
        for c in &self.shared.clients {
            c.close(close::SHUTDOWN, "the server is shutting down");
        }
        if let Some((_, waiters)) = self.shutdown.take() {
            // Answered after everything queued so far is committed.
            let r = self.shared.writer.after_commit(move |_| {
                for w in waiters {
                    let _ = w.send(());
                }
            });
            if r.is_err() {
                tracing::error!("store writer gone during shutdown");
            }
        }
        // Keep refusing: `shutting_down` stays set.
        self.shutdown = Some((Instant::now() + Duration::from_secs(3600), Vec::new()));
    }
}

/// The in-game players as the chat commands see them.
struct HubRoster<'a> {
    players: &'a HashMap<SessionId, Player>,
    by_name: &'a HashMap<String, SessionId>,
}

impl chat::Roster for HubRoster<'_> {
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

/// Drive the hub until its inbox closes.
pub async fn run(mut hub: Hub, mut rx: mpsc::UnboundedReceiver<HubEvent>) {
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            e = rx.recv() => match e {
                Some(e) => hub.handle(e),
                None => return,
            },
            _ = tick.tick() => hub.tick(),
        }
    }
}
