//! The hub: the one task that drives the cluster's control plane — the pure
//! [`Control`](crate::control::Control) state machine — and carries out its actions: it
//! owns the node links, switches the session routes, closes connections, stores snapshots
//! and acknowledges them once committed, and keeps the trace spans the core names.
//!
//! Hot traffic does not pass through here: `P_StandardUpdate` datagrams go straight between
//! a client's connection task and its node link ([`Shared::routes`]), and a zone's reliable
//! frames straight from the node link to the client ([`Shared::clients`]). The hub handles
//! logins entering the world, reliable client frames (low volume, ordered), chat commands that
//! span nodes, snapshots (saved, then acknowledged once committed), and everything about
//! placement and node membership.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use dashmap::DashMap;
use shared::content::World;
use shared::internal::{
    ActorStateDto, Envelope, Generation, GroundItemDto, InstanceKey, Msg, RunningInstance,
    SessionId,
};
use shared::proto::{ChatColour, ChatMessageS2C, KickedPlayer, PartyUpdate, ServerPacket};
use tokio::sync::{mpsc, oneshot};

use crate::admin::{
    ClusterView, InstanceView, NodeView as AdminNode, SessionCounts, UnplacedInstance,
};
use crate::chat::{self, Effect, Route};
use crate::config::GatewayConfig;
use crate::control::{self, Action, Characters, Control, ControlConfig, Count, Save, Trace};
use crate::directory::NodeId;
use crate::lock;
use crate::party::{Parties, PartyCommand, PartyEffect};
use crate::script_store::ScriptStore;
use crate::session::{AccountBook, AccountId, LoginThrottle, PasswordHasher, PersistOp, close};
use crate::store::Writer;

pub mod console;
mod link;
mod metrics;
mod remote;
mod scripts;
pub use link::{
    ClientLink, ENET_COMMANDS, ENET_DATAGRAM, EnetCmd, EnetLink, LinkError, RELAY_QUEUE, RelayLink,
};
pub use metrics::{FAMILIES, Metrics};

pub use control::{
    ATTACH_TIMEOUT, DETACH_TIMEOUT, MAX_PLAYER_RID, MAX_QUEUED_FRAMES, MIN_PLAYER_RID,
    REMOVE_TIMEOUT, STARTUP_FUNC, STARTUP_SCRIPT,
};
/// Most entries in each client's outbound queue (its bytes are bounded by
/// `client_queue_bytes`); a client that cannot keep up is closed.
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
    /// Bytes in `tx` not yet written to the connection (the task subtracts what it wrote).
    pub queued: Arc<std::sync::atomic::AtomicUsize>,
    /// `client_queue_bytes`: past it the client is closed as too slow.
    pub queue_limit: usize,
    /// Its connection (datagrams are sent on it directly), QUIC or RCEnet.
    pub link: ClientLink,
    /// The compact profile's encoder when the client negotiated `rc-compact/1` (its
    /// position datagrams are transcoded here, at the edge; the zones speak rc/1 only).
    pub compact: Option<Arc<Mutex<shared::compact::DownEncoder>>>,
}

impl ClientHandle {
    /// Queue frames; a queue past `client_queue_bytes` (or [`CLIENT_QUEUE`] entries) closes
    /// the client with code 6: it cannot keep up, and must not cost anyone memory.
    ///
    /// An RCEnet client's frames go straight to the RCEnet host task (no hop through its
    /// session task, so they share datagrams with the broadcast of the same tick); the
    /// host bounds what the client has not acknowledged by `client_queue_bytes`.
    pub fn frames(&self, frames: Bytes, metrics: &Metrics) {
        if let ClientLink::Enet(e) = &self.link {
            // Counted until the host task takes them: one client cannot fill its queue.
            let len = frames.len();
            let before = self.queued.fetch_add(len, Ordering::Relaxed);
            if before.saturating_add(len) <= self.queue_limit
                && e.tx
                    .try_send(EnetCmd::Frames {
                        peer: e.peer,
                        frames,
                        counted: true,
                    })
                    .is_ok()
            {
                Metrics::inc(&metrics.frames_down);
                Metrics::add(&metrics.bytes_down_stream, len);
            } else {
                self.queued.fetch_sub(len, Ordering::Relaxed);
                Metrics::inc(&metrics.client_queue_overflows);
                tracing::info!(
                    queued = before,
                    "RCEnet client too slow: send queue past its limit"
                );
                self.close(
                    close::TOO_SLOW,
                    "send queue overflow: the client is too slow",
                );
            }
            return;
        }
        let len = frames.len();
        let before = self.queued.fetch_add(len, Ordering::Relaxed);
        if before.saturating_add(len) > self.queue_limit
            || self.tx.try_send(ClientOut::Frames(frames)).is_err()
        {
            self.queued.fetch_sub(len, Ordering::Relaxed);
            Metrics::inc(&metrics.client_queue_overflows);
            tracing::info!(
                queued = before,
                limit = self.queue_limit,
                "client too slow: send queue past its limit"
            );
            self.link.close(
                close::TOO_SLOW,
                "send queue overflow: the client is too slow",
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
            self.link.close(code, &reason);
        }
    }
}

/// Most bytes of messages queued for one node link's writer; past it the link is closed
/// (the node cannot keep up, or its connection stalled) and the node reconnects.
pub const NODE_LINK_BYTES: usize = 64 * 1024 * 1024;

/// Most bytes of client frames in the hub's inbox, all clients together; past it every
/// client task stops reading its stream until the hub catches up.
pub const HUB_INBOX_BYTES: usize = 32 * 1024 * 1024;

/// A registered node link, as the hub reaches it.
#[derive(Debug, Clone)]
pub struct NodeLink {
    /// Control messages to the node (the link's writer task encodes them); send through
    /// [`NodeLink::send`], which counts them against [`NODE_LINK_BYTES`].
    pub tx: mpsc::UnboundedSender<Envelope>,
    /// Bytes queued in `tx` (estimated by [`queued_len`]; the writer subtracts what it
    /// wrote); bounded by [`NODE_LINK_BYTES`].
    pub queued: Arc<std::sync::atomic::AtomicUsize>,
    /// The QUIC connection (datagrams).
    pub conn: quinn::Connection,
    /// Connection serial (fencing stale connections of the same node id).
    pub serial: u64,
}

impl NodeLink {
    /// Queue `msg`, carrying the current span's trace context when it is exported (a
    /// handoff's, a login's, a placement's); false when the link is gone, or past
    /// [`NODE_LINK_BYTES`] (then the link is closed: the node reconnects and registers
    /// again, as after any link loss).
    pub fn send(&self, msg: Msg) -> bool {
        self.send_envelope(ops::telemetry::envelope_current(msg))
    }

    /// As [`send`](Self::send), with no trace context (from outside any span: the store
    /// writer's thread).
    pub fn send_untraced(&self, msg: Msg) -> bool {
        self.send_envelope(Envelope::new(msg))
    }

    fn send_envelope(&self, env: Envelope) -> bool {
        let len = queued_len(&env.msg);
        let before = self.queued.fetch_add(len, Ordering::Relaxed);
        if before.saturating_add(len) > NODE_LINK_BYTES {
            self.queued.fetch_sub(len, Ordering::Relaxed);
            tracing::warn!(
                serial = self.serial,
                queued = before,
                "node link writer past its byte limit: closing the link"
            );
            self.conn.close(2u32.into(), b"link writer backlog");
            return false;
        }
        if self.tx.send(env).is_ok() {
            true
        } else {
            self.queued.fetch_sub(len, Ordering::Relaxed);
            false
        }
    }
}

/// What a message counts against its link's [`NODE_LINK_BYTES`]: the client bytes it
/// carries, plus a fixed allowance for the rest of its encoding.
pub fn queued_len(msg: &Msg) -> usize {
    const FIXED: usize = 64;
    match msg {
        Msg::ClientFrames { frames, .. } => FIXED + frames.len(),
        _ => FIXED,
    }
}

/// Client bytes on their way through the hub: added when a client task sends them, given
/// back when the event is dropped (handled, or the hub gone). Each client task reads its
/// stream only while its own and the hub's totals are under their limits
/// (`client_inflight_bytes`, [`HUB_INBOX_BYTES`]), so a client the hub cannot keep up with
/// waits in QUIC's flow control instead of in the gateway's memory.
#[derive(Debug)]
pub struct InFlight {
    client: Arc<std::sync::atomic::AtomicUsize>,
    hub: Arc<std::sync::atomic::AtomicUsize>,
    len: usize,
}

impl InFlight {
    /// Count `len` bytes against `client` and the hub's total.
    pub fn new(
        client: &Arc<std::sync::atomic::AtomicUsize>,
        hub: &Arc<std::sync::atomic::AtomicUsize>,
        len: usize,
    ) -> Self {
        client.fetch_add(len, Ordering::Relaxed);
        hub.fetch_add(len, Ordering::Relaxed);
        Self {
            client: client.clone(),
            hub: hub.clone(),
            len,
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.client.fetch_sub(self.len, Ordering::Relaxed);
        self.hub.fetch_sub(self.len, Ordering::Relaxed);
    }
}

/// A session whose `P_StartGame` succeeded, entering the world.
#[derive(Debug)]
pub struct Entering {
    /// Session.
    pub session: SessionId,
    /// Account.
    pub account: AccountId,
    /// Character slot.
    pub slot: u8,
    /// DM account.
    pub is_dm: bool,
    /// Saved character.
    pub state: Box<ActorStateDto>,
    /// The login's trace span (`session.login`), ended once the player is attached.
    pub login: tracing::Span,
}

/// Everything the hub hears.
#[derive(Debug)]
pub enum HubEvent {
    /// A session's `P_StartGame` succeeded.
    Entered(Entering),
    /// In-game reliable frames for the zone, byte for byte.
    Frames {
        /// Session.
        session: SessionId,
        /// Frames.
        frames: Bytes,
        /// Their bytes in the client's and the hub's in-flight totals.
        inflight: InFlight,
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
    /// A session kept through a leader change (this gateway's edge held its client): its
    /// player is adopted where a zone node still hosts it (`control::Event::Resume`).
    Resume {
        /// Session (the previous leader's id).
        session: SessionId,
        /// Account.
        account: AccountId,
        /// Character slot.
        slot: u8,
        /// RuntimeID.
        rid: u16,
        /// The node the previous leader had the player on.
        node: String,
        /// The fencing token of the player's copy there.
        fence: u64,
        /// Its party as the edge kept it (every member, leader first; empty: none).
        party: Vec<String>,
    },
    /// This gateway takes over ([`Shared::take_over`]): the previous leader's nodes and
    /// other edges.
    TakeOver {
        /// The nodes' ids.
        nodes: BTreeSet<NodeId>,
        /// The edges' `name@address` ([`edge_key`]).
        edges: BTreeSet<String>,
    },
    /// Every session a claimer kept (`None`: this gateway's edge; else the edge's
    /// [`edge_key`]) has reached the hub or was given up, and it said it has no more.
    Claimed {
        /// Who.
        edge: Option<String>,
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
    /// An edge's fan-out address came or went ([`Shared::fanouts`]): every node hears
    /// the new list.
    Edges,
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
    /// A question of the operator's console.
    Console(console::ConsoleQuery),
    /// The store answered a character's hand-out (`control::Event::HandedOut`).
    HandedOut {
        /// The account.
        account: AccountId,
        /// The character slot.
        slot: u8,
        /// The new fencing token.
        fence: u64,
        /// Committed.
        stored: bool,
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
        /// Why (a system line to the player first; empty: none).
        reason: String,
    },
    /// A system line to one online character.
    Message {
        /// Character name.
        name: String,
        /// Text.
        text: String,
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
    /// The server was just locked for maintenance ([`Shared::updates`]): tell every
    /// player, send each `P_KickedPlayer` and close it with code 5 and `message`.
    #[doc(alias = "ServerLocked")]
    RemoveForLock {
        /// The lock's message.
        message: String,
    },
    /// Reload the world's scripts on every node (`RefreshScripts`).
    #[doc(alias = "RefreshScripts")]
    ReloadScripts,
    /// Drain a zone node (the console's "drain"): see [`control::Control::drain_node`].
    DrainNode {
        /// The node's id.
        node: String,
    },
    /// Realm Crafter script data into the script store ([`crate::script_import`]).
    ImportScriptData {
        /// What was read.
        data: Box<crate::script_import::ScriptData>,
    },
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
    /// Client bytes in the hub's inbox ([`InFlight`], bounded by [`HUB_INBOX_BYTES`]).
    pub hub_bytes: Arc<std::sync::atomic::AtomicUsize>,
    /// The latest cluster view (republished by the hub every 200 ms; session counts are
    /// filled in per request).
    pub view: Mutex<ClusterView>,
    /// Set once shutdown began: new connections are refused.
    pub shutting_down: AtomicBool,
    /// The game clock's epoch (Unix ms, from the store; 0 = not set): sent to the nodes
    /// with `AssignInstance`, and the login clock block is read from it.
    pub clock_epoch_ms: AtomicU64,
    /// The control plane's epoch this gateway claimed with the store (sent to every zone
    /// node in `RegisterAck`; a node refuses a gateway older than one it has seen).
    pub control_epoch: AtomicU64,
    /// The gateway's clock for the login limiter (one clock for every connection).
    pub started: Instant,
    /// Slots for password hashing (`max_concurrent_hashes`).
    pub hashes: tokio::sync::Semaphore,
    /// The update list and the maintenance lock (and the update host's counters).
    pub updates: Arc<crate::updates::UpdateService>,
    /// Open client connections (handshaking included) per client network.
    pub per_ip: DashMap<crate::session::PeerKey, u32>,
    /// Accounts whose player's connection ended and whose logout (detach, save) is still
    /// in flight: a new login of one waits for it a moment (`net/client.rs`).
    pub leaving: DashMap<AccountId, ()>,
    /// In-world sessions → their account, so a transport that sees its peer go (an
    /// RCEnet DISCONNECT, handled by the host task before the session task hears of it)
    /// can mark the logout in flight at once ([`Shared::peer_gone`]).
    pub in_world: DashMap<SessionId, AccountId>,
    /// Edge gateways linked to this one (`rc-edge/1`), by name, with their relayed
    /// clients.
    pub edges: DashMap<(String, std::net::SocketAddr), usize>,
    /// Where the zone nodes reach each linked edge for the direct fan-out, by
    /// [`edge_key`], once it said (`rc-edge` `Fanout`): every node hears the list
    /// ([`Msg::Edges`], [`HubEvent::Edges`]) and keeps a fan-out link to each.
    pub fanouts: DashMap<String, shared::internal::FanoutEdge>,
    /// Each linked edge's link, by [`edge_key`]: a new link from an edge at the fan-out
    /// address an older link gave ends that one (the edge was restarted there; the old
    /// link's timeout would keep its players "logged in" for seconds more).
    pub edge_links: DashMap<String, quinn::Connection>,
    /// The registered zone nodes and linked edges, as each edge link tells its edge
    /// (`rc-edge` `Members`): the hub sets the nodes, the edge links the edges.
    pub members: tokio::sync::watch::Sender<Members>,
    /// The kept sessions claimed here (by this gateway's edge at takeover, or by another
    /// edge, `rc-edge` `Resume`) that have not yet reached the hub
    /// ([`Shared::claim_settled`]); once a claimer has said it is done and its last one
    /// has, [`HubEvent::Claimed`].
    claims: Mutex<Claims>,
    /// Open client connections, handshaking included (`max_connections`).
    pub open: std::sync::atomic::AtomicUsize,
    /// Open client connections not yet in the world (`retry_above`).
    pub pregame: std::sync::atomic::AtomicUsize,
    /// The operator's console: operators, the audit log, recent chat.
    pub console: crate::console::ConsoleState,
    /// More metrics for `/metrics`: the embedded zone node's under `--standalone`.
    pub extra_metrics: std::sync::OnceLock<ExtraMetrics>,
    /// A shutdown an operator scheduled: when (Unix ms), why, and its countdown task.
    pub shutdown_plan: Mutex<Option<crate::console::ShutdownPlan>>,
    /// Turns true when a scheduled shutdown's time comes (`Gateway::scheduled_stop`).
    pub stop_requested: tokio::sync::watch::Sender<bool>,
    /// Turns true when an operator hands the lead over (`AdminCommand::HandOver`).
    pub hand_over: tokio::sync::watch::Sender<bool>,
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
    /// The transport saw `session`'s peer go: if it was in the world, its logout is in
    /// flight from now on (a login of the account waits for it). The session task may
    /// lag behind its transport; a client that reconnects as soon as its disconnect was
    /// acknowledged must not race it into "already logged in".
    pub fn peer_gone(&self, session: SessionId) {
        // The read guard is held while `leaving` is written: the session task's own
        // `ended` removes the entry first, so the hub cannot clear `leaving` in between.
        if let Some(account) = self.in_world.get(&session) {
            self.leaving.insert(*account, ());
        }
    }

    /// Shared state; returns it with the hub's receiving end.
    #[allow(clippy::too_many_arguments)] // Each is built (and can fail) in `server::start`.
    pub fn new(
        cfg: GatewayConfig,
        world: Arc<World>,
        book: AccountBook,
        scripts: ScriptStore,
        writer: Writer,
        hasher: Arc<dyn PasswordHasher + Send + Sync>,
        updates: Arc<crate::updates::UpdateService>,
        session_base: u64,
    ) -> (Arc<Self>, mpsc::UnboundedReceiver<HubEvent>) {
        let (hub, rx) = mpsc::unbounded_channel();
        let throttle = LoginThrottle::with_limits(crate::session::ThrottleLimits {
            attempts_per_minute: cfg.login_attempts_per_minute,
            creations_per_hour: cfg.account_creations_per_hour,
            connections_per_minute: cfg.connections_per_ip_per_minute,
            handshakes_per_second: cfg.retry_above_rate,
            limit_loopback: cfg.limit_loopback,
            account_delay_ms: cfg.login_account_delay_ms,
            account_delay_max_ms: cfg.login_account_delay_max_ms,
            accounts_tracked: usize::try_from(cfg.login_accounts_tracked).unwrap_or(usize::MAX),
        });
        let hash_slots = usize::try_from(cfg.max_concurrent_hashes)
            .unwrap_or(1)
            .max(1);
        // The configuration was validated: a list that does not parse here leaves the API off.
        let operators =
            crate::console::Operators::parse(&cfg.operators, &cfg.admin_token).unwrap_or_default();
        let shared = Arc::new(Self {
            console: crate::console::ConsoleState::new(operators),
            extra_metrics: std::sync::OnceLock::new(),
            shutdown_plan: Mutex::new(None),
            stop_requested: tokio::sync::watch::channel(false).0,
            hand_over: tokio::sync::watch::channel(false).0,
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
            hub_bytes: Arc::default(),
            view: Mutex::new(ClusterView::default()),
            shutting_down: AtomicBool::new(false),
            clock_epoch_ms: AtomicU64::new(0),
            control_epoch: AtomicU64::new(0),
            started: Instant::now(),
            hashes: tokio::sync::Semaphore::new(hash_slots),
            updates,
            per_ip: DashMap::new(),
            leaving: DashMap::new(),
            in_world: DashMap::new(),
            edges: DashMap::new(),
            fanouts: DashMap::new(),
            edge_links: DashMap::new(),
            members: tokio::sync::watch::channel(Members::default()).0,
            claims: Mutex::new(Claims::default()),
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

    /// Keeps `session` (a kept session of the previous leader) from ever being handed
    /// out again here.
    pub fn reserve_session(&self, session: SessionId) {
        self.next_session
            .fetch_max(session.saturating_add(1), Ordering::Relaxed);
    }

    /// A fresh node connection serial.
    pub fn next_serial(&self) -> u64 {
        self.next_serial.fetch_add(1, Ordering::Relaxed)
    }

    /// Lock the accounts (a poisoned lock is recovered: the book stays consistent because
    /// every mutation is a single call).
    pub fn accounts(&self) -> std::sync::MutexGuard<'_, Accounts> {
        lock(&self.accounts)
    }

    /// Lock the stored ground items (a poisoned lock is recovered: each change is one call).
    pub fn ground(&self) -> std::sync::MutexGuard<'_, HashMap<InstanceKey, Vec<GroundItemDto>>> {
        lock(&self.ground)
    }

    /// Lock the script store (a poisoned lock is recovered: each change is one call).
    pub fn scripts(&self) -> std::sync::MutexGuard<'_, ScriptStore> {
        lock(&self.scripts)
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

    /// This gateway takes over from a leader that had `nodes` registered and `edges` linked
    /// besides it: its placement hold ends once those nodes are back, `kept` (the sessions
    /// its edge kept) have each reached the hub or been given up
    /// ([`Shared::claim_settled`]), and each of `edges` has said it is done claiming and
    /// its claims have too. Call before any kept session is served.
    pub fn take_over(
        &self,
        nodes: BTreeSet<NodeId>,
        edges: BTreeSet<String>,
        kept: BTreeSet<SessionId>,
    ) {
        self.to_hub(HubEvent::TakeOver { nodes, edges });
        let mut claims = lock(&self.claims);
        *claims = Claims::default();
        for s in kept {
            claims.claim(None, s);
        }
        if let Some(done) = claims.done(None) {
            self.to_hub(HubEvent::Claimed { edge: done });
        }
    }

    /// Edge `edge` ([`edge_key`]) claims kept session `session` (`rc-edge` `Resume`):
    /// counted until it reaches the hub or is given up ([`Shared::claim_settled`]).
    pub fn claim(&self, edge: &str, session: SessionId) {
        lock(&self.claims).claim(Some(edge.to_owned()), session);
    }

    /// Edge `edge` has sent every claim it will (`rc-edge` `Claimed`): once those have
    /// reached the hub, [`HubEvent::Claimed`].
    pub fn claims_done(&self, edge: &str) {
        if let Some(done) = lock(&self.claims).done(Some(edge.to_owned())) {
            self.to_hub(HubEvent::Claimed { edge: done });
        }
    }

    /// Kept session `session` has reached the hub (`HubEvent::Resume`, sent before this)
    /// or was given up; the last of its claimer's, once the claimer is done, sends
    /// [`HubEvent::Claimed`], after every one of their `Resume`s. (A session nobody
    /// claimed: nothing.)
    pub fn claim_settled(&self, session: SessionId) {
        if let Some(done) = lock(&self.claims).settled(session) {
            self.to_hub(HubEvent::Claimed { edge: done });
        }
    }

    /// The edges linked here changed: each link tells its edge.
    pub fn edges_changed(&self) {
        let edges: BTreeSet<String> = self
            .edges
            .iter()
            .map(|e| edge_key(&e.key().0, e.key().1))
            .collect();
        self.members.send_if_modified(|m| {
            let changed = m.edges != edges;
            m.edges = edges;
            changed
        });
    }
}

/// Who else is in the cluster, as a leader tells its edges (`rc-edge` `Members`): what an
/// edge taking over waits for before it places anything anew.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Members {
    /// The zone nodes in this gateway's directory.
    pub nodes: BTreeSet<NodeId>,
    /// The edges linked to this gateway, each as [`edge_key`] names it (told an edge: the
    /// *other* edges; names alone need not be unique).
    pub edges: BTreeSet<String>,
}

/// An edge link as [`Members::edges`] names it: `name@address`.
pub fn edge_key(name: &str, addr: std::net::SocketAddr) -> String {
    format!("{name}@{addr}")
}

/// Who claims a kept session: `None`, this gateway's own edge (at takeover); else another
/// edge, by [`edge_key`].
type Claimer = Option<String>;

/// The kept sessions claimed here that have not reached the hub yet, by claimer
/// ([`Shared::claim`]); pure, so that its bookkeeping is tested on its own.
#[derive(Debug, Default)]
struct Claims {
    /// Each claimed session not yet at the hub, and its claimer.
    pending: BTreeMap<SessionId, Claimer>,
    /// Per claimer: how many of `pending` are its, and whether it said it is done.
    by: BTreeMap<Claimer, (usize, bool)>,
}

impl Claims {
    /// `who` claims `session`.
    fn claim(&mut self, who: Claimer, session: SessionId) {
        if let Some(prev) = self.pending.insert(session, who.clone()) {
            self.forget_one(&prev);
        }
        self.by.entry(who).or_default().0 += 1;
    }

    /// `who` has no more claims: `Some(who)` when none of its is pending (tell the hub).
    fn done(&mut self, who: Claimer) -> Option<Claimer> {
        let e = self.by.entry(who.clone()).or_default();
        e.1 = true;
        self.finish_if_done(who)
    }

    /// `session` reached the hub or was given up: `Some(claimer)` when it was the claimer's
    /// last and the claimer is done (tell the hub).
    fn settled(&mut self, session: SessionId) -> Option<Claimer> {
        let who = self.pending.remove(&session)?;
        self.forget_one(&who);
        self.finish_if_done(who)
    }

    /// One of `who`'s pending claims is gone (an entry left at none pending and not done
    /// is dropped: an edge that never says it is done leaves nothing behind).
    fn forget_one(&mut self, who: &Claimer) {
        if let Some(e) = self.by.get_mut(who) {
            e.0 = e.0.saturating_sub(1);
            if *e == (0, false) {
                self.by.remove(who);
            }
        }
    }

    fn finish_if_done(&mut self, who: Claimer) -> Option<Claimer> {
        match self.by.get(&who) {
            Some(&(0, true)) => {
                self.by.remove(&who);
                Some(who)
            }
            _ => None,
        }
    }
}

/// The account book, as the control plane reads saved characters from it.
struct Book<'a>(&'a Shared);

impl Characters for Book<'_> {
    fn saved(&self, account: AccountId, slot: u8) -> Option<ActorStateDto> {
        let acc = self.0.accounts();
        let a = acc.book.get(account)?;
        let mut state = a.characters.get(usize::from(slot))?.clone();
        state.account.clone_from(&a.row.user);
        state.email.clone_from(&a.row.email);
        Some(state)
    }
}

/// Renders more metric families into the gateway's `/metrics`.
pub type ExtraMetrics = Arc<dyn Fn(&mut crate::admin::MetricsText) + Send + Sync>;

/// The hub: the control plane and what it needs from the world around it; [`run`] drives
/// it.
pub struct Hub {
    shared: Arc<Shared>,
    started: Instant,
    control: Control,
    /// The node links (the control plane names nodes; the shell holds their connections).
    links: HashMap<NodeId, NodeLink>,
    parties: Parties,
    /// Open login traces (`session.login`), until the attach.
    logins: HashMap<SessionId, tracing::Span>,
    /// Open handoff traces (`handoff.gateway`), by transfer id.
    handoffs: HashMap<shared::internal::TransferId, tracing::Span>,
    /// Who waits for the shutdown to complete.
    shutdown_waiters: Vec<oneshot::Sender<()>>,
    /// The last script reload (`RefreshScripts`), sent to every node that registers.
    scripts_update: Option<Msg>,
    /// When a reload was last asked for (a zone's are taken at most once a second).
    last_reload: Option<Instant>,
    /// Scripts' queries and actions on players other zones host, in flight, and actions
    /// not yet in a save (`remote`).
    remote: remote::Remote,
    /// The console's live map questions in flight.
    maps: console::Maps,
    /// The cluster's environment (`SetEnv`/`GetEnv`; Realm Crafter's process
    /// environment), in memory only.
    env: BTreeMap<String, Vec<u8>>,
    /// Each area's instance-0 weather as last announced (`WeatherLink`).
    weather: BTreeMap<String, u8>,
    /// Logins held back while the cluster settles after a (re)start
    /// ([`Hub::enter_deferred`]).
    deferred: Vec<Entering>,
}

impl Hub {
    /// A hub over `shared`; `generation_base` should grow across restarts (wall clock ms).
    pub fn new(shared: Arc<Shared>, generation_base: Generation) -> Self {
        let control = Control::new(
            ControlConfig::of(&shared.cfg),
            shared.world.clone(),
            generation_base,
        );
        Self {
            shared,
            started: Instant::now(),
            control,
            links: HashMap::new(),
            parties: Parties::new(),
            logins: HashMap::new(),
            handoffs: HashMap::new(),
            shutdown_waiters: Vec::new(),
            scripts_update: None,
            last_reload: None,
            remote: remote::Remote::default(),
            maps: console::Maps::default(),
            env: BTreeMap::new(),
            weather: BTreeMap::new(),
            deferred: Vec::new(),
        }
    }

    fn now(&self) -> Duration {
        self.started.elapsed()
    }

    /// Feed one event to the control plane and carry out what it answers.
    fn control(&mut self, e: control::Event) {
        let now = self.now();
        let shared = self.shared.clone();
        // Only a node's own events change the directory's nodes (its expiry is the tick's):
        // a client's frames, the hot path, skip the comparison.
        let nodes = matches!(
            e,
            control::Event::NodeUp { .. }
                | control::Event::NodeDown { .. }
                | control::Event::NodeMsg { .. }
        );
        let actions = self.control.handle(now, e, &Book(&shared));
        self.apply(actions);
        if nodes {
            self.publish_nodes();
        }
    }

    /// The nodes in the directory (registered, and not yet given up: one whose link just
    /// dropped will register again somewhere), for the edges, at once: an edge that takes
    /// over waits for every node it heard of, and one it missed only costs the sessions of
    /// that node's players.
    fn publish_nodes(&self) {
        let dir = self.control.directory();
        self.shared.members.send_if_modified(|m| {
            if m.nodes.iter().eq(dir.nodes().map(|n| &n.id)) {
                return false;
            }
            m.nodes = dir.nodes().map(|n| n.id.clone()).collect();
            true
        });
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

    /// Every linked edge's fan-out address, as each node hears them ([`Msg::Edges`]).
    fn edges_msg(&self) -> Msg {
        let mut edges: Vec<_> = self
            .shared
            .fanouts
            .iter()
            .map(|e| e.value().clone())
            .collect();
        edges.sort_by(|a, b| a.addr.cmp(&b.addr));
        edges.truncate(shared::internal::MAX_EDGES);
        Msg::Edges { edges }
    }

    /// Send to a node, with the current span's trace context (see [`NodeLink::send`]).
    fn send_node(&self, node: &str, msg: Msg) -> bool {
        self.links.get(node).is_some_and(|l| l.send(msg))
    }

    /// A login enters the world: the control plane places and attaches it
    /// (`P_StartGame`'s end).
    fn enter(&mut self, e: Entering) {
        let Entering {
            session,
            account,
            slot,
            is_dm,
            state,
            login,
        } = e;
        let _login = login.enter();
        self.entered_at(account);
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
        self.logins.insert(session, login.clone());
        let connected = self.client(session).is_some();
        self.control(control::Event::Entered(Box::new(control::Login {
            session,
            account,
            slot,
            is_dm,
            state,
            ignore,
            user,
            email,
            connected,
        })));
        if !self.control.knows(session) {
            // Refused: its trace ends here.
            self.logins.remove(&session);
        } else if let Some(message) = self.shared.updates.gate().lock_message() {
            // Locked between its P_StartGame and now: removed as the others were.
            self.remove_for_lock(session, &message);
        }
    }

    /// Logins held back while the cluster settled ([`control::Control::settling`]) go on,
    /// each with its character as the store now has it (the previous gateway's copy of
    /// it saved meanwhile).
    fn enter_deferred(&mut self) {
        if self.deferred.is_empty() || self.control.settling() {
            return;
        }
        for mut d in std::mem::take(&mut self.deferred) {
            let fresh = self
                .shared
                .accounts()
                .book
                .get(d.account)
                .and_then(|a| a.characters.get(usize::from(d.slot)).cloned());
            // The control plane sets what is the login's own (RuntimeID, fencing token,
            // account name and e-mail) on whichever copy it is given.
            if let Some(c) = fresh.filter(|c| c.name == d.state.name) {
                d.state = Box::new(c);
            }
            self.enter(d);
        }
    }

    /// Handle one event; logins held back while the cluster settled go on as soon as it
    /// has (the last orphan's node said it left), not at the next tick.
    pub fn handle(&mut self, e: HubEvent) {
        self.handle_event(e);
        if !self.deferred.is_empty() {
            self.enter_deferred();
        }
    }

    fn handle_event(&mut self, e: HubEvent) {
        match e {
            HubEvent::Entered(e) => {
                if self.control.settling() {
                    // After a (re)start: loaded once the previous gateway's copies on the
                    // nodes are detached and saved (`Control::settling`).
                    tracing::info!(parent: &e.login, session = e.session,
                        "login waits for the cluster to settle");
                    self.deferred.push(e);
                } else {
                    self.enter(e);
                }
            }
            HubEvent::Frames {
                session,
                frames,
                inflight,
            } => {
                self.control(control::Event::Frames { session, frames });
                drop(inflight);
            }
            HubEvent::Chat { session, frame } => self.chat(session, frame),
            HubEvent::Gone { session } => self.control(control::Event::Gone { session }),
            HubEvent::TakeOver { nodes, edges } => {
                self.control(control::Event::TakeOver { nodes, edges });
            }
            HubEvent::Claimed { edge } => self.control(control::Event::Claimed { edge }),
            HubEvent::Resume {
                session,
                account,
                slot,
                rid,
                node,
                fence,
                party,
            } => {
                let online = {
                    let mut acc = self.shared.accounts();
                    let found = acc.book.get(account).and_then(|a| {
                        let c = a.characters.get(usize::from(slot))?;
                        Some(chat::OnlinePlayer {
                            session,
                            account,
                            name: c.name.clone(),
                            team: c.team,
                            is_dm: a.row.is_dm,
                            ignore: a.row.ignore.clone(),
                        })
                    });
                    if found.is_some() {
                        acc.book.set_logged_on(account, true);
                    }
                    found
                };
                match online {
                    Some(online) => {
                        self.parties.expect(&online.name, party);
                        self.control(control::Event::Resume(Box::new(control::Resume {
                            session,
                            account,
                            slot,
                            rid,
                            node,
                            fence,
                            online,
                        })))
                    }
                    None => {
                        if let Some(c) = self.client(session) {
                            c.close(
                                close::SHUTDOWN,
                                "your session could not be kept: log in again",
                            );
                        }
                    }
                }
            }
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
                let _span = span.enter();
                let serial = link.serial;
                if let Some(old) = self.links.insert(node.clone(), link.clone()) {
                    // The same node on a new connection: the old one is dead or stale.
                    old.conn
                        .close(0u32.into(), b"superseded by a new registration");
                }
                // Its zones' copy of the super globals, before anything else it hears, and
                // the scripts of the last reload (its own disk has the ones of its start).
                link.send(self.superglobals_msg());
                link.send(self.shared_vars_msg());
                // The edges, for the fan-out links that also carry an edge's lead.
                link.send(self.edges_msg());
                if let Some(m) = self.scripts_update_msg() {
                    link.send(m);
                }
                self.control(control::Event::NodeUp {
                    node,
                    addr,
                    capacity,
                    serial,
                    running,
                });
            }
            HubEvent::NodeMsg {
                node,
                serial,
                msg,
                trace,
            } => {
                // A traced message (a handoff's) is handled under its sender's span.
                let span = ops::telemetry::recv_span_parts(&trace, msg.name(), &node);
                let _span = span.as_ref().map(tracing::Span::enter);
                self.node_msg(node, serial, msg);
            }
            HubEvent::NodeDown {
                node,
                serial,
                reason,
            } => self.control(control::Event::NodeDown {
                node,
                serial,
                reason,
            }),
            HubEvent::Shutdown { done } => {
                self.shared.shutting_down.store(true, Ordering::Relaxed);
                self.shutdown_waiters.push(done);
                self.control(control::Event::Shutdown);
            }
            HubEvent::Admin { cmd, reply } => {
                let _ = reply.send(self.admin(cmd));
            }
            HubEvent::Console(q) => self.console_query(q),
            HubEvent::Edges => {
                for link in self.links.values() {
                    link.send(self.edges_msg());
                }
            }
            HubEvent::HandedOut {
                account,
                slot,
                fence,
                stored,
            } => self.control(control::Event::HandedOut {
                account,
                slot,
                fence,
                stored,
            }),
        }
    }

    fn node_msg(&mut self, node: NodeId, serial: u64, msg: Msg) {
        match msg {
            Msg::ScriptStore { req, op } if self.control.is_live(&node, serial) => {
                self.script_store(&node, req, op);
            }
            Msg::AccountAction { session, action } if self.control.is_live(&node, serial) => {
                self.account_action(&node, session, action);
            }
            Msg::MapAnswer { qid, view } => self.map_answer(qid, view),
            Msg::ScriptError {
                key,
                script,
                func,
                file,
                line,
                message,
                kind,
            } if self.control.is_live(&node, serial) => {
                self.shared
                    .console
                    .script_error(crate::console::ScriptErrorLine {
                        at_ms: crate::console::unix_ms(),
                        node: node.clone(),
                        area: key.area,
                        instance: key.instance,
                        script,
                        func,
                        file,
                        line,
                        message,
                        kind,
                    });
            }
            msg => {
                match &msg {
                    Msg::Snapshot { session, .. } => self.actions_saved(&node, &[*session]),
                    Msg::SnapshotGroup(g) => {
                        let sessions: Vec<SessionId> =
                            g.entries.iter().map(|e| e.session).collect();
                        self.actions_saved(&node, &sessions);
                    }
                    _ => {}
                }
                self.control(control::Event::NodeMsg { node, serial, msg });
            }
        }
    }

    /// Carry out the control plane's actions, in order.
    fn apply(&mut self, actions: Vec<Action>) {
        // The `node.lost` trace the core opened, until it closes it.
        let mut lost: Option<tracing::span::EnteredSpan> = None;
        for a in actions {
            match a {
                Action::Send { node, msg, trace } => {
                    let span = self.span_of(trace);
                    let _span = span.as_ref().map(tracing::Span::enter);
                    self.send_node(&node, msg);
                }
                Action::Assign {
                    node,
                    key,
                    generation,
                    trace,
                } => {
                    let parent = self.span_of(trace);
                    let _parent = parent.as_ref().map(tracing::Span::enter);
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
                Action::Packet { session, packet } => self.send_packet(session, &packet),
                Action::CloseClient {
                    session,
                    code,
                    reason,
                } => self.close_client(session, code, reason),
                Action::Route { session, node } => {
                    if let Some(l) = self.links.get(&node) {
                        self.shared.routes.insert(session, l.conn.clone());
                    }
                    self.actions_redeliver(session, &node);
                    // A relayed player's edge follows him from node to node.
                    self.tell_edge_entered(session);
                }
                Action::Unroute { session } => {
                    self.shared.routes.remove(&session);
                }
                Action::CloseLink {
                    node,
                    code,
                    reason,
                    end,
                } => {
                    if let Some(l) = self.links.get(&node) {
                        l.conn.close(code.into(), reason.as_bytes());
                    }
                    // A deregistered node's link stays until it closes (its `NodeDown`).
                    if end != control::LinkEnd::Draining {
                        self.links.remove(&node);
                    }
                }
                Action::Save(save) => self.save(*save),
                Action::ForgetGround { key } => self.forget_ground(&key),
                Action::HandOut {
                    account,
                    slot,
                    fence,
                    ..
                } => {
                    let ops = {
                        let mut acc = self.shared.accounts();
                        acc.book.hand_out(account, slot, fence);
                        acc.book.take_persist()
                    };
                    // A login attaches once the store has the token (its answer comes
                    // back to the control plane through the hub's own queue).
                    let hub = self.shared.hub.clone();
                    let shared = Arc::downgrade(&self.shared);
                    let handed = Instant::now();
                    let answer = move |stored: bool| {
                        if let Some(s) = shared.upgrade() {
                            s.metrics.handout_commit.observe(handed.elapsed());
                        }
                        let _ = hub.send(HubEvent::HandedOut {
                            account,
                            slot,
                            fence,
                            stored,
                        });
                    };
                    let done = answer.clone();
                    let r = self
                        .shared
                        .writer
                        .submit_then(ops, move |r| done(r.is_ok()));
                    if let Err(e) = r {
                        tracing::error!(error = %e, "store writer unavailable");
                        answer(false);
                    }
                }
                Action::LoggedOff { account } => {
                    self.shared.accounts().book.set_logged_on(account, false);
                    self.shared.leaving.remove(&account);
                }
                Action::Released { session, name } => {
                    self.logins.remove(&session);
                    self.actions_forget(session);
                    let effects = self.parties.leave(&name);
                    self.party_effects(effects);
                }
                Action::Adopted { session, name } => {
                    let effects = self.parties.restore(&name);
                    self.party_effects(effects);
                    // A relayed one's edge keeps who it is for the next leader change.
                    self.tell_edge_entered(session);
                }
                Action::ZoneChanged { session } => self.resync_party(session),
                Action::Attached { session } => {
                    self.logins.remove(&session);
                    self.handle_attached(session);
                    self.tell_edge_entered(session);
                }
                Action::Count(c) => Metrics::inc(self.counter(c)),
                Action::HandoffLatency(d) => self.shared.metrics.handoff_latency.observe(d),
                Action::TransferBegan {
                    id,
                    session,
                    key,
                    source,
                    recovery,
                    parent,
                } => {
                    let parent = self.span_of(parent);
                    let _parent = parent.as_ref().map(tracing::Span::enter);
                    let span = tracing::info_span!("handoff.gateway", transfer = %id,
                        session, zone = %key.area, instance = key.instance,
                        source = source.as_deref(), recovery,
                        dest = tracing::field::Empty, outcome = tracing::field::Empty);
                    self.handoffs.insert(id, span);
                }
                Action::TransferForwarded { id, dest } => {
                    if let Some(s) = self.handoffs.get(&id) {
                        s.record("dest", dest.as_str());
                    }
                }
                Action::TransferEnded { id, outcome } => {
                    if let Some(s) = self.handoffs.remove(&id) {
                        s.record("outcome", outcome);
                    }
                }
                Action::NodeLost {
                    node,
                    reason,
                    deregistered,
                } => {
                    // A trace still open ends first.
                    drop(lost.take());
                    lost = Some(
                        tracing::info_span!(parent: None, "node.lost", node = %node,
                            reason = %reason, deregistered)
                        .entered(),
                    );
                }
                Action::NodeLostEnd => lost = None,
                Action::ShutdownDone => self.shutdown_done(),
            }
        }
        drop(lost);
    }

    /// The span a trace names (`None`: the current one).
    fn span_of(&self, trace: Trace) -> Option<tracing::Span> {
        match trace {
            Trace::Current => None,
            Trace::Login(s) => self.logins.get(&s).cloned(),
            Trace::Transfer(id) => self.handoffs.get(&id).cloned(),
        }
    }

    fn counter(&self, c: Count) -> &AtomicU64 {
        let m = &self.shared.metrics;
        match c {
            Count::Login => &m.logins,
            Count::FramesUp => &m.frames_up,
            Count::FramesDropped => &m.frames_dropped,
            Count::InternalRefused => &m.internal_refused,
            Count::Fenced => &m.fenced,
            Count::GroupRefused => &m.snapshot_groups_refused,
            Count::InstanceLost => &m.instances_lost,
            Count::HandoffStarted => &m.handoffs_started,
            Count::TransferRouted => &m.transfers_routed,
            Count::TransferRefused => &m.transfers_refused,
            Count::HandoffRolledBack => &m.handoffs_rolled_back,
            Count::HandoffCompleted => &m.handoffs_completed,
            Count::Recovery => &m.recoveries,
            Count::InstanceStuck => &m.instances_stuck,
            Count::InstanceGivenUp => &m.instances_given_up,
        }
    }

    /// An operator's command (see [`HubAdmin`]).
    fn admin(&mut self, cmd: HubAdmin) -> Result<String, String> {
        let session_of = |hub: &Self, name: &str| {
            hub.control
                .session_by_name(name)
                .ok_or_else(|| format!("no character called {name:?} is online"))
        };
        tracing::info!(command = ?cmd, "admin command");
        match cmd {
            HubAdmin::Kick { name, reason } => {
                let session = session_of(self, &name)?;
                if !reason.is_empty() {
                    let packet = ServerPacket::ChatMessage(ChatMessageS2C {
                        colour: ChatColour::Red,
                        text: shared::wire::RcString::from(format!("Kicked: {reason}").as_str()),
                    });
                    self.send_packet(session, &packet);
                }
                self.chat_effect(Effect::Kick {
                    session,
                    by: "admin".into(),
                });
                Ok(format!("kicked {name}"))
            }
            HubAdmin::KickAccount { account } => {
                let sessions: Vec<SessionId> = self
                    .control
                    .players()
                    .filter(|(_, p, ..)| p.account == account)
                    .map(|(s, ..)| s)
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
                    .control
                    .areas()
                    .iter()
                    .find(|a| a.eq_ignore_ascii_case(&area))
                    .cloned()
                else {
                    return Err(format!("there is no area called {area:?}"));
                };
                // As `/warpother`: the node's SetArea asks for the instance, placed then if
                // it is not yet (`control/handoff.rs`).
                self.chat_effect(Effect::WarpPlayer {
                    session,
                    area: area.clone(),
                    instance,
                });
                Ok(format!("warping {name} to {area} #{instance}"))
            }
            HubAdmin::Message { name, text } => {
                let session = session_of(self, &name)?;
                let packet = ServerPacket::ChatMessage(ChatMessageS2C {
                    colour: ChatColour::System,
                    text: shared::wire::RcString::from(text.as_str()),
                });
                self.send_packet(session, &packet);
                Ok(format!("sent to {name}"))
            }
            HubAdmin::Broadcast { text } => {
                let packet = ServerPacket::ChatMessage(ChatMessageS2C {
                    colour: ChatColour::System,
                    text: shared::wire::RcString::from(text.as_str()),
                });
                let sessions: Vec<SessionId> = self.control.players().map(|(s, ..)| s).collect();
                for &s in &sessions {
                    self.send_packet(s, &packet);
                }
                Ok(format!("sent to {} players", sessions.len()))
            }
            HubAdmin::RemoveForLock { message } => {
                let sessions: Vec<SessionId> = self.control.players().map(|(s, ..)| s).collect();
                for &s in &sessions {
                    self.remove_for_lock(s, &message);
                }
                Ok(format!("{} players removed", sessions.len()))
            }
            HubAdmin::ReloadScripts => self.reload_scripts("admin"),
            HubAdmin::DrainNode { node } => {
                let now = self.now();
                let actions = self.control.drain_node(now, &node)?;
                self.apply(actions);
                self.publish();
                Ok(format!(
                    "{node} is draining: its players move to the other nodes"
                ))
            }
            HubAdmin::ImportScriptData { data } => {
                let (ops, report) = {
                    let mut scripts = self.shared.scripts();
                    crate::script_import::apply(&mut scripts, *data)
                };
                let changed: Vec<(u8, Vec<u8>)> = ops
                    .iter()
                    .filter_map(|op| match op {
                        PersistOp::SetSuperGlobal { slot, value } => Some((*slot, value.clone())),
                        _ => None,
                    })
                    .collect();
                if !ops.is_empty() {
                    self.shared
                        .writer
                        .submit(ops)
                        .map_err(|e| format!("the store did not take it: {e}"))?;
                }
                for (slot, value) in changed {
                    for link in self.links.values() {
                        link.send(Msg::SuperGlobal {
                            slot,
                            value: value.clone(),
                        });
                    }
                }
                for why in &report.skipped {
                    tracing::warn!(why, "script data import: skipped");
                }
                tracing::info!(
                    globals = report.globals,
                    files = report.files,
                    dirs = report.dirs,
                    skipped = report.skipped.len(),
                    "script data imported"
                );
                let mut text = report.to_string();
                for why in &report.skipped {
                    text.push_str("\nskipped ");
                    text.push_str(why);
                }
                Ok(text)
            }
            HubAdmin::Online => {
                let mut lines: Vec<String> = self
                    .control
                    .players()
                    .map(|(_, p, key, ..)| format!("{}\t{}\t{}", p.name, key.area, key.instance))
                    .collect();
                lines.sort();
                Ok(lines.join("\n"))
            }
        }
    }

    /// Realm Crafter's lock boots every player with `P_KickedPlayer`; here each is told
    /// why first (a system line), then kicked and closed with code 5 (its character is
    /// saved as at any disconnect).
    #[doc(alias = "P_KickedPlayer")]
    fn remove_for_lock(&mut self, session: SessionId, message: &str) {
        let mut line = message.to_owned();
        if let Some(first) = line.get(..1) {
            let upper = first.to_ascii_uppercase();
            line.replace_range(..1, &upper);
        }
        let chat = ServerPacket::ChatMessage(ChatMessageS2C {
            colour: ChatColour::System,
            text: shared::wire::RcString::from(format!("{line}.").as_str()),
        });
        self.send_packet(session, &chat);
        self.send_packet(session, &ServerPacket::KickedPlayer(KickedPlayer {}));
        tracing::info!(session, "removed: the server is locked");
        self.close_client(session, close::UNAVAILABLE, message);
    }

    // ----- chat and parties (the gateway's, beyond one zone) ----------------------------

    fn chat(&mut self, session: SessionId, frame: Bytes) {
        let text = frame.get(3..).unwrap_or(&[]);
        if !self.chat_seen(session, text) {
            return;
        }
        if let Some(cmd) = PartyCommand::parse(text) {
            self.party_command(session, cmd);
            return;
        }
        let route = {
            let roster = self.control.roster();
            chat::route(session, text, &roster, self.control.areas())
        };
        match route {
            Route::Zone => self.control(control::Event::Frames {
                session,
                frames: frame,
            }),
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
        use chat::Roster as _;
        let roster = self.control.roster();
        let Some(me) = roster.get(session).map(|p| p.name.clone()) else {
            return;
        };
        Metrics::inc(&self.shared.metrics.chat_commands);
        let effects = match cmd {
            PartyCommand::Invite(name) => {
                let target = roster
                    .by_name(name.trim())
                    .filter(|p| !p.ignore.iter().any(|i| i.eq_ignore_ascii_case(&me)))
                    .map(|p| p.name.clone());
                self.parties.invite(&me, target.as_deref(), name.trim())
            }
            PartyCommand::Accept => {
                let online = |n: &str| self.control.session_by_name(n).is_some();
                self.parties.accept(&me, online)
            }
            PartyCommand::Leave => self.parties.leave(&me),
            PartyCommand::Say(text) => self.parties.chat(&me, &text),
        };
        drop(roster);
        self.party_effects(effects);
    }

    fn party_effects(&mut self, effects: Vec<PartyEffect>) {
        for e in effects {
            match e {
                PartyEffect::Update { to, others } => {
                    if let Some(s) = self.control.session_by_name(&to) {
                        let p = ServerPacket::PartyUpdate(PartyUpdate {
                            members: others.iter().map(|n| n.as_str().into()).collect(),
                        });
                        self.send_packet(s, &p);
                    }
                }
                PartyEffect::Chat { to, red, text } => {
                    if let Some(s) = self.control.session_by_name(&to) {
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
                    if let Some(s) = self.control.session_by_name(&who) {
                        self.tell_edge_party(s, &members);
                        self.sync_party(s, members);
                    }
                }
            }
        }
    }

    /// Tell a session's zone node the members of its party.
    fn sync_party(&self, session: SessionId, members: Vec<String>) {
        if let Some(node) = self.control.node_of(session) {
            self.send_node(node, Msg::PartyMembers { session, members });
        }
    }

    /// After a session's zone changed (handoff, recovery): its new zone learns its party.
    fn resync_party(&self, session: SessionId) {
        use chat::Roster as _;
        let roster = self.control.roster();
        let Some(name) = roster.get(session).map(|p| p.name.clone()) else {
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
                if let Some(node) = self.control.node_of(session) {
                    // `/warpother`: the root of the handoff's trace (the node's SetArea
                    // joins it through the WarpPlayer's context).
                    let span = tracing::info_span!(parent: None, "chat.warp", session,
                        node = %node, to_zone = %area, to_instance = instance);
                    let _span = span.enter();
                    self.send_node(
                        node,
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
                self.control.set_ignore(account, &list);
            }
        }
    }

    // ----- the store --------------------------------------------------------------------

    /// Store a snapshot the control plane accepted; acknowledge it once committed.
    fn save(&mut self, save: Save) {
        match save {
            Save::One {
                node,
                snapshot_id,
                session,
                owner,
                reason,
                state,
            } => {
                let stale = self.shared.accounts().book.superseded(owner, &state);
                if stale {
                    self.fenced_save(&node, snapshot_id, &format!("session {session}"));
                    return;
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
                self.commit_then_ack(&node, snapshot_id, ops, 1, None);
            }
            Save::Group {
                node,
                snapshot_id,
                key,
                entries,
                ground,
            } => {
                // One stale copy refuses the whole group (it is one transaction).
                let stale = {
                    let acc = self.shared.accounts();
                    entries
                        .iter()
                        .find(|(owner, e)| acc.book.superseded(*owner, &e.state))
                        .map(|(_, e)| e.session)
                };
                if let Some(s) = stale {
                    Metrics::inc(&self.shared.metrics.snapshot_groups_refused);
                    self.fenced_save(&node, snapshot_id, &format!("{key}, session {s}"));
                    return;
                }
                let n = entries.len();
                let mut ops = {
                    let mut acc = self.shared.accounts();
                    for (owner, e) in entries {
                        let target = owner.or_else(|| acc.book.find_character(&e.state.name));
                        let saved = match target {
                            Some((account, slot)) => {
                                acc.book.save_character(account, slot, e.state)
                            }
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
                self.commit_then_ack(&node, snapshot_id, ops, n, Some(key));
            }
        }
    }

    /// A save from a copy that is not the current one (its fencing token is not the
    /// stored one: `AccountBook::fence_ok`): acknowledged, so the node stops resending
    /// it, and dropped.
    fn fenced_save(&self, node: &str, snapshot_id: u64, what: &str) {
        Metrics::inc(&self.shared.metrics.fenced);
        tracing::warn!(
            node,
            what,
            "a save from a superseded copy of the character dropped"
        );
        self.send_node(node, Msg::SnapshotAck { snapshot_id });
    }

    /// Submit `ops` as one transaction and acknowledge `snapshot_id` to `node` once it is
    /// committed (on disk). A failed write is not acknowledged: the node sends it again on
    /// its timer, and what it changed is rewritten from the book once the store heals.
    fn commit_then_ack(
        &self,
        node: &str,
        snapshot_id: u64,
        ops: Vec<PersistOp>,
        entries: usize,
        group: Option<InstanceKey>,
    ) {
        let link = self.links.get(node).cloned();
        let shared = Arc::downgrade(&self.shared);
        let node_id = node.to_owned();
        let r = self.shared.writer.submit_then(ops, move |r| match r {
            Ok(()) => {
                if let Some(s) = shared.upgrade() {
                    if group.is_some() {
                        Metrics::inc(&s.metrics.snapshot_groups_saved);
                        s.metrics.snapshot_group_entries.fetch_add(
                            u64::try_from(entries).unwrap_or(u64::MAX),
                            Ordering::Relaxed,
                        );
                    } else {
                        Metrics::inc(&s.metrics.snapshots_saved);
                    }
                }
                if let Some(link) = link {
                    link.send_untraced(Msg::SnapshotAck { snapshot_id });
                }
            }
            Err(f) => {
                tracing::error!(node = %node_id, snapshot_id, instance = ?group, cause = f.cause.label(),
                    error = %f.message, "snapshot not stored nor acknowledged; the node will send it again");
            }
        });
        if let Err(e) = r {
            tracing::error!(error = %e, "store writer unavailable; snapshot not acknowledged");
        }
    }

    /// Once the store takes writes again: what failed writes left unsaved is written again
    /// from the book and the stored ground (the newest state the gateway accepted), one
    /// account per submission. A rewrite that fails is listed again.
    fn rewrite_unsaved(&self) {
        let w = &self.shared.writer;
        if w.is_failing() || !w.has_dirty() {
            return;
        }
        let dirty = w.take_dirty();
        let batches = {
            let acc = self.shared.accounts();
            let ground = self.shared.ground();
            crate::store::resync_ops(&dirty, &acc.book, &ground)
        };
        tracing::warn!(
            accounts = dirty.accounts.len(),
            instances = dirty.ground.len(),
            script_changes_lost = dirty.script_ops,
            "the store is back: writing again what failed writes left unsaved"
        );
        for ops in batches {
            Metrics::inc(&self.shared.metrics.store_rewrites);
            if let Err(e) = w.submit(ops) {
                tracing::error!(error = %e, "store writer unavailable");
            }
        }
    }

    /// An instance removed for good: its stored ground goes with it.
    fn forget_ground(&mut self, key: &InstanceKey) {
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

    // ----- time -------------------------------------------------------------------------

    /// Periodic work: the control plane's timeouts, the published view.
    pub fn tick(&mut self) {
        let now = self.now();
        let shared = self.shared.clone();
        let actions = self.control.on_timeout(now, &Book(&shared));
        self.apply(actions);
        self.publish_nodes();
        self.enter_deferred();
        self.expire_actor_queries();
        self.publish();
        self.rewrite_unsaved();
        self.lift_expired_bans();
    }

    fn publish(&self) {
        let now = u64::try_from(self.now().as_millis()).unwrap_or(u64::MAX);
        let dir = self.control.directory();
        let nodes = dir
            .nodes()
            .map(|n| {
                let instances: Vec<InstanceView> = dir
                    .placements()
                    .filter(|(_, p)| p.node == n.id)
                    .map(|(k, p)| InstanceView {
                        area: k.area.clone(),
                        instance: k.instance,
                        generation: p.generation,
                        players: u64::from(p.players),
                        npcs: u64::from(p.npcs),
                        tick_p99_ms: f64::from(p.tick_p99_us) / 1000.0,
                        tick_p50_ms: f64::from(p.tick_p50_us) / 1000.0,
                        handoffs: p.handoffs,
                        handoffs_failed: p.handoffs_failed,
                        errors: p.errors,
                        // The report's age plus the time since it (a silent node's
                        // instances age too).
                        tick_age_ms: p
                            .tick_age_ms
                            .saturating_add(now.saturating_sub(n.last_seen_ms)),
                        stuck: p.stuck,
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
        let gate = self.shared.updates.gate();
        let view = ClusterView {
            gateway_id: self.shared.cfg.gateway_id.clone(),
            sessions: SessionCounts {
                connected: 0,
                in_menu: 0,
                in_game: u64::try_from(self.control.player_count()).unwrap_or(u64::MAX),
            },
            nodes,
            unplaced: dir
                .unplaced()
                .into_iter()
                .map(|k| UnplacedInstance {
                    area: k.area,
                    instance: k.instance,
                })
                .collect(),
            locked: gate.is_locked(),
            lock_reason: gate.lock.clone(),
            update_files: u64::try_from(gate.files().len()).unwrap_or(u64::MAX),
            shutdown_at_ms: None,
            control_epoch: self.shared.control_epoch.load(Ordering::Relaxed),
            edges: {
                let mut e: Vec<crate::admin::EdgeView> = self
                    .shared
                    .edges
                    .iter()
                    .map(|e| crate::admin::EdgeView {
                        name: e.key().0.clone(),
                        address: e.key().1.to_string(),
                        clients: u64::try_from(*e.value()).unwrap_or(u64::MAX),
                    })
                    .collect();
                e.sort_by(|a, b| (&a.name, &a.address).cmp(&(&b.name, &b.address)));
                e
            },
        };
        match self.shared.view.lock() {
            Ok(mut v) => *v = view,
            Err(p) => *p.into_inner() = view,
        }
    }

    /// Every logout is confirmed (or the deadline passed): close every client, answer
    /// once everything queued so far is committed.
    fn shutdown_done(&mut self) {
        for c in &self.shared.clients {
            c.close(close::SHUTDOWN, "the server is shutting down");
        }
        let waiters = std::mem::take(&mut self.shutdown_waiters);
        let r = self.shared.writer.after_commit(move |_| {
            for w in waiters {
                let _ = w.send(());
            }
        });
        if r.is_err() {
            tracing::error!("store writer gone during shutdown");
        }
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

#[cfg(test)]
mod tests {
    use super::Claims;

    #[test]
    fn a_claimer_is_done_once_it_said_so_and_its_last_claim_reached_the_hub() {
        let mut c = Claims::default();
        let e2 = Some("e2@10.0.0.2:4000".to_owned());
        // This gateway's edge kept sessions 1 and 2; e2 claims 3.
        c.claim(None, 1);
        c.claim(None, 2);
        assert_eq!(c.done(None), None, "1 and 2 still to reach the hub");
        c.claim(e2.clone(), 3);
        assert_eq!(c.settled(1), None);
        assert_eq!(c.settled(3), None, "e2 has not said it is done");
        assert_eq!(c.settled(2), Some(None), "the own edge's last");
        assert_eq!(c.settled(2), None, "once");
        assert_eq!(
            c.done(e2.clone()),
            Some(e2.clone()),
            "e2's claims are all in"
        );
        assert_eq!(c.settled(99), None, "nobody's");
        // An edge with nothing kept is done at once; one that never says so leaves nothing.
        let e3 = Some("e3@10.0.0.3:4000".to_owned());
        assert_eq!(c.done(e3.clone()), Some(e3));
        c.claim(Some("old@10.0.0.4:4000".to_owned()), 4);
        assert_eq!(c.settled(4), None);
        assert!(c.pending.is_empty() && c.by.is_empty(), "{c:?}");
    }
}
