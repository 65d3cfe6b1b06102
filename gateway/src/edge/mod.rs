//! An edge gateway: a standby with peers (`--standby --peers A,B`) serves clients while
//! another gateway leads, and relays each to the leader over the edge link (`rc-edge/1`,
//! `shared::internal::edge`; the leader's side is `net/relay.rs`). The edge terminates
//! the client's QUIC connection and pipes its stream bytes and datagrams, nothing more:
//! the leader runs the login flow, the budgets, the routing and the logout, so a
//! character is online through one gateway at most, and chat, parties, kicks and admin
//! actions reach every client wherever it connected.
//!
//! Realm Crafter's own clients (RCEnet) are relayed the same way by [`enet`]'s host task.
//!
//! The edge finds the leader by trying its peers in turn (a standby binds nothing, so
//! only the leader answers), keeps the newest control epoch it has seen (an older
//! leader is refused, as the zone nodes refuse one), and when the link ends closes its
//! clients with code 3 ("log in again"): their sessions were the leader's. When this
//! gateway takes the database over itself, the edge stops first and the full gateway
//! binds the same addresses.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use dashmap::DashMap;
use shared::internal::edge::{self, Decoder, EdgeMsg, RelayId};
use shared::internal::{EXPORTER_LABEL, EXPORTER_LEN, datagram};
use tokio::sync::{mpsc, watch};
use tracing::Instrument as _;

mod enet;
mod fanout;

use crate::config::GatewayConfig;
use crate::lock;
use crate::net::client::KeptSession;
use crate::session::close;
use crate::tls;

/// How long the edge waits between rounds over its peers when none leads.
const RETRY: Duration = Duration::from_millis(500);

/// How long new clients wait, once the link to the leader is gone, for the edge to link
/// again or take over, before they are refused (found by `deploy/failover.sh`: a cut-off
/// leader closed its clients before the edge took over, the edge refused them, and they
/// tried the stepped-down gateway next, costing their connect timeout).
const UNLINKED_GRACE: Duration = Duration::from_secs(3);

/// How long a client whose player is in the world waits, once the leader is gone, for
/// this gateway to take over and adopt it (then it is closed: log in again).
const KEEP_FOR: Duration = Duration::from_secs(10);

/// What a client task hears from the leader.
#[derive(Debug)]
enum Down {
    /// The server's frames.
    Stream(Vec<u8>),
    /// Close the client.
    Close(u32, String),
    /// The session's player entered the world.
    Entered(KeptSession),
    /// The session's party changed (every member, leader first; empty: none).
    Party(Vec<String>),
    /// The link to the leader ended (or this gateway takes over): keep the client if its
    /// player is in the world, else close it.
    LeaderLost,
}

/// A client whose player was in the world when the leader went, kept for the gateway
/// that takes over ([`Edge::hand_over`]): its connection, untouched, and who it is.
#[derive(Debug)]
pub struct Kept {
    /// The client's connection.
    pub conn: quinn::Connection,
    /// Its stream's halves.
    pub send: quinn::SendStream,
    /// Its stream's receiving half.
    pub recv: quinn::RecvStream,
    /// Who its player is and where the previous leader had him.
    pub who: KeptSession,
}

/// What a stopped edge hands the full gateway of the same process: its bound client
/// endpoint (the kept clients' connections live on it), the kept clients, and its RCEnet
/// hosts with their sockets and kept peers (the peers' ENet state lives in them).
#[derive(Debug)]
pub struct Handover {
    /// The client endpoint.
    pub endpoint: quinn::Endpoint,
    /// The clients kept.
    pub kept: Vec<Kept>,
    /// The RCEnet host tasks' sockets and hosts, one per shard (empty: none, or they
    /// failed; the full gateway binds its own).
    pub enet: Vec<crate::net::enet::Adopted>,
    /// The zone nodes' fan-out links, open until [`announce_lead`] (or dropped).
    pub fanout: Vec<Parked>,
    /// The cluster's members as the last leader told (`EdgeMsg::Members`; `None`: it did
    /// not, or a list may have been cut): the nodes the gateway taking over waits for.
    pub members: Option<crate::hub::Members>,
}

/// A zone node's fan-out link kept open, its stream too, while the edge hands over
/// ([`Handover::fanout`]).
#[derive(Debug)]
pub struct Parked {
    conn: quinn::Connection,
    _stream: (quinn::SendStream, quinn::RecvStream),
}

/// Tells each zone node linked here for the direct fan-out ([`Handover::fanout`]) that
/// this gateway leads now, with control epoch `epoch`, closing its link
/// ([`shared::internal::FANOUT_CLOSE_LEADS`]): the node registers here at once instead of
/// waiting for its link to the previous leader, which may have died without a word, to
/// time out. Called once the zone nodes' endpoint is bound.
pub fn announce_lead(fanout: Vec<Parked>, epoch: u64) {
    if !fanout.is_empty() {
        tracing::info!(
            nodes = fanout.len(),
            epoch,
            "telling the zone nodes linked for the fan-out that this gateway leads"
        );
    }
    for link in fanout {
        // Closed with its stream still open: the close is what the node hears.
        link.conn.close(
            shared::internal::FANOUT_CLOSE_LEADS.into(),
            epoch.to_string().as_bytes(),
        );
    }
}

/// One relayed client as the link's reader reaches it.
struct Client {
    down: mpsc::UnboundedSender<Down>,
    /// The leader's session id once its player entered the world (0: not yet).
    session: AtomicU64,
    /// Bytes in `down` not yet written (bounded by `client_queue_bytes`).
    queued: Arc<AtomicUsize>,
    /// Where its datagrams go.
    sink: Sink,
}

/// Where a relayed client's datagrams go.
enum Sink {
    /// Its QUIC connection.
    Quic(quinn::Connection),
    /// Its RCEnet peer, through the edge's RCEnet host task.
    Enet(rcenet::PeerId, mpsc::Sender<enet::EnetOut>),
}

/// The link to the leader.
struct Leader {
    name: String,
    admin: SocketAddr,
    conn: quinn::Connection,
    tx: mpsc::Sender<EdgeMsg>,
    clients: DashMap<RelayId, Client>,
    /// Each relayed player's session (the zone nodes' key) → its client here and the node
    /// the leader last said hosts it: where the direct fan-out delivers ([`fanout`]).
    sessions: DashMap<u64, (RelayId, String)>,
    /// Set when the link ended, before its clients are told ([`Leader::join`]).
    gone: std::sync::atomic::AtomicBool,
    /// The link's version (`edge::link_version`).
    version: u16,
    /// The kept clients' `Resume`s still to be queued on this link before `Claimed`.
    claims: Tally,
}

/// What a new link still has to queue before it says [`EdgeMsg::Claimed`]: the `Resume`
/// of each QUIC client kept when the previous leader went, and one word from each RCEnet
/// host task once it has queued its kept peers' (so `Claimed` follows every `Resume` on
/// the link's one queue, and a gateway taking over ends its hold only after them).
#[derive(Debug, Default)]
struct Tally {
    left: AtomicUsize,
    all_in: tokio::sync::Notify,
}

impl Tally {
    /// `n` more to come (before any of them can come in).
    fn add(&self, n: usize) {
        self.left.fetch_add(n, Ordering::SeqCst);
    }

    /// One came in.
    fn one_in(&self) {
        let was = self
            .left
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        if was == Ok(1) {
            self.all_in.notify_one();
        }
    }

    /// Until every one has come in.
    async fn all_in(&self) {
        loop {
            let notified = self.all_in.notified();
            if self.left.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }
}

impl Leader {
    /// Relays client `id` through this link; told at once that the leader is lost if the
    /// link ended meanwhile. (Found by `deploy/failover.sh`: a client that joined as the
    /// link's end told the others was never told, and the edge's takeover waited for it
    /// two seconds while its client waited for a login answer that could not come.)
    fn join(&self, id: RelayId, client: Client) {
        self.clients.insert(id, client);
        if self.gone.load(Ordering::SeqCst)
            && let Some((_, c)) = self.clients.remove(&id)
        {
            let _ = c.down.send(Down::LeaderLost);
        }
    }

    /// The link ended: every client relayed through it hears so (each once, also one
    /// joining meanwhile, [`Leader::join`]).
    fn lost(&self) {
        self.gone.store(true, Ordering::SeqCst);
        let ids: Vec<RelayId> = self.clients.iter().map(|c| *c.key()).collect();
        for id in ids {
            if let Some((_, c)) = self.clients.remove(&id) {
                let _ = c.down.send(Down::LeaderLost);
            }
        }
    }

    /// Forgets relayed client `id` (and its session's fan-out entry).
    fn forget(&self, id: RelayId) {
        if let Some((_, c)) = self.clients.remove(&id) {
            let session = c.session.load(Ordering::Relaxed);
            if session != 0 {
                self.sessions.remove_if(&session, |_, e| e.0 == id);
            }
        }
    }
}

/// The edge's state every task shares.
struct State {
    cfg: GatewayConfig,
    leader: watch::Sender<Option<Arc<Leader>>>,
    next_id: AtomicU64,
    open: AtomicUsize,
    per_ip: DashMap<crate::session::PeerKey, u32>,
    /// The newest control epoch a leader welcomed this edge with.
    epoch: AtomicU64,
    /// Clients kept when the leader went, by relay id.
    kept: DashMap<RelayId, Kept>,
    /// Broadcast datagrams zone nodes sent here that went to their clients.
    fanout_sent: AtomicU64,
    /// Those that did not (no such client here, another node hosts it, no room).
    fanout_dropped: AtomicU64,
    /// The zone nodes' fan-out links when the edge stopped, for [`Handover`].
    parked: std::sync::Mutex<Vec<Parked>>,
    /// Each zone node's fan-out link, by node id: where its players' clients' position
    /// datagrams go ([`fanout::input`]).
    links: DashMap<String, quinn::Connection>,
    /// Client position datagrams sent straight to their zone node.
    inputs_direct: AtomicU64,
    /// Every client's input budgets (`input_budgets`).
    budgets: crate::session::budget::Budgets,
    /// The cluster's members as the leader last told (`None` until it does, and again at
    /// every new link): kept when the link ends, for [`Handover::members`].
    members: std::sync::Mutex<Option<crate::hub::Members>>,
    /// How many RCEnet host tasks run (each says when it has resumed its kept peers at a
    /// new leader, [`Tally`]).
    enet_shards: usize,
}

/// The leader an edge is linked to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Linked {
    /// Its name (`gateway_id`).
    pub name: String,
    /// Its admin HTTP address, as this edge reaches it.
    pub admin: SocketAddr,
}

/// A running edge; [`Edge::hand_over`] gives its clients to the gateway taking over.
pub struct Edge {
    state: Arc<State>,
    stop: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// The RCEnet host tasks: each hands back its socket, host and kept peers.
    enet_tasks: Vec<tokio::task::JoinHandle<Option<crate::net::enet::Adopted>>>,
    endpoint: quinn::Endpoint,
    /// The leader while linked.
    pub linked: watch::Receiver<Option<Linked>>,
}

impl std::fmt::Debug for Edge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Edge").finish_non_exhaustive()
    }
}

/// Why the edge did not start.
#[derive(Debug, thiserror::Error)]
pub enum EdgeError {
    /// TLS configuration.
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
    /// The client endpoint could not be bound.
    #[error("{0}")]
    Endpoint(String),
    /// An address could not be bound.
    #[error("cannot bind {what} on {addr}: {source}")]
    Bind {
        /// What.
        what: &'static str,
        /// Where.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

impl Edge {
    /// Binds the client endpoint on `cfg.listen` and starts looking for the leader among
    /// `cfg.peers`.
    pub fn start(cfg: &GatewayConfig) -> Result<Self, EdgeError> {
        let (server, _, _) = tls::client_endpoint_config(cfg, cfg.fanout_advertised().is_some())?;
        let endpoint = crate::server::edge_endpoint(cfg, server)
            .map_err(|e| EdgeError::Endpoint(e.to_string()))?;
        let heartbeat = Duration::from_millis(cfg.heartbeat_ms.max(10));
        let idle = Duration::from_millis(cfg.node_timeout_ms.max(2_000));
        let client_cfg = tls::edge_client_config(heartbeat, idle)?;
        let unspecified: SocketAddr = if cfg.internal_listen.is_ipv6() {
            SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, 0))
        } else {
            SocketAddr::from(([0, 0, 0, 0], 0))
        };
        // The link carries every relayed client's positions: a broadcast tick arrives as a
        // burst of hundreds of datagrams, which the default socket buffer would drop.
        let mut link_ep = crate::server::edge_link_endpoint(unspecified)
            .map_err(|e| EdgeError::Endpoint(e.to_string()))?;
        link_ep.set_default_client_config(client_cfg);
        let (leader, _) = watch::channel(None);
        let enet_sockets = match cfg.enet_listen {
            Some(addr) => crate::server::edge_enet_sockets(cfg, addr)
                .map_err(|e| EdgeError::Endpoint(e.to_string()))?,
            None => Vec::new(),
        };
        let state = Arc::new(State {
            cfg: cfg.clone(),
            leader,
            next_id: AtomicU64::new(1),
            open: AtomicUsize::new(0),
            per_ip: DashMap::new(),
            epoch: AtomicU64::new(0),
            kept: DashMap::new(),
            fanout_sent: AtomicU64::new(0),
            fanout_dropped: AtomicU64::new(0),
            parked: std::sync::Mutex::new(Vec::new()),
            links: DashMap::new(),
            inputs_direct: AtomicU64::new(0),
            budgets: crate::net::client::budgets(cfg),
            members: std::sync::Mutex::new(None),
            enet_shards: enet_sockets.len(),
        });
        let (stop, stop_rx) = watch::channel(false);
        let (linked_tx, linked) = watch::channel(None);
        let state_for_edge = state.clone();
        let mut enet_tasks = Vec::new();
        let shards = enet_sockets.len();
        for socket in enet_sockets {
            enet_tasks.push(tokio::spawn(
                enet::serve(state.clone(), socket, shards, stop_rx.clone())
                    .instrument(tracing::info_span!("edge_enet")),
            ));
        }
        let tasks = vec![
            tokio::spawn(
                find_leader(state.clone(), link_ep, linked_tx, stop_rx.clone())
                    .instrument(tracing::info_span!("edge")),
            ),
            tokio::spawn(
                accept(state, endpoint.clone(), stop_rx).instrument(tracing::info_span!("edge")),
            ),
        ];
        tracing::info!(listen = %cfg.listen, peers = %cfg.peers.join(","),
            "edge: serving clients, relaying them to the leading gateway");
        Ok(Self {
            state: state_for_edge,
            stop,
            tasks,
            enet_tasks,
            endpoint,
            linked,
        })
    }

    /// Stops relaying to hand this gateway's clients to the full gateway starting in this
    /// process (it took the database over): the link ends, every client whose player is
    /// in the world is kept (its connection untouched, or its ENet peer in its host; the
    /// zone node still hosts the player), the others are closed with code 3 (RCEnet:
    /// kicked), and the client endpoint and RCEnet sockets stay bound for the full
    /// gateway to serve on.
    pub async fn hand_over(self) -> Handover {
        let _ = self.stop.send(true);
        for t in self.tasks {
            let _ = tokio::time::timeout(Duration::from_secs(2), t).await;
        }
        let mut enet = Vec::new();
        let shards = self.enet_tasks.len();
        for t in self.enet_tasks {
            if let Ok(Ok(Some(a))) = tokio::time::timeout(Duration::from_secs(2), t).await {
                enet.push(a);
            }
        }
        if enet.len() != shards {
            // A host task failed: the full gateway binds its own sockets (these close).
            enet.clear();
        }
        // Each client task parks or closes its client on `LeaderLost`.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        while self.state.open.load(Ordering::Relaxed) > 0 && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let ids: Vec<RelayId> = self.state.kept.iter().map(|k| *k.key()).collect();
        let kept: Vec<Kept> = ids
            .into_iter()
            .filter_map(|id| self.state.kept.remove(&id).map(|(_, k)| k))
            .collect();
        let kept_enet: usize = enet.iter().map(|a| a.kept.len()).sum();
        tracing::info!(
            kept = kept.len(),
            kept_enet,
            "edge: handing its clients in the world to this gateway"
        );
        let fanout = std::mem::take(&mut *lock(&self.state.parked));
        let members = lock(&self.state.members).take();
        Handover {
            endpoint: self.endpoint,
            kept,
            enet,
            fanout,
            members,
        }
    }
}

/// Tries the peers in turn until one welcomes this edge, serves the link until it ends,
/// and starts over; until `stop`.
async fn find_leader(
    state: Arc<State>,
    ep: quinn::Endpoint,
    linked: watch::Sender<Option<Linked>>,
    mut stop: watch::Receiver<bool>,
) {
    let mut logged_none = false;
    loop {
        let round = async {
            let mut addrs: Vec<SocketAddr> = Vec::new();
            for peer in &state.cfg.peers {
                // A name may stand for several gateways (a headless service): each.
                match tokio::net::lookup_host(peer.as_str()).await {
                    Ok(a) => addrs.extend(a),
                    Err(e) => {
                        tracing::debug!(peer = %peer, error = %e, "edge: peer does not resolve");
                    }
                }
            }
            if addrs.is_empty() {
                return None;
            }
            // Every peer at once: a dead one (the leader that just went) costs its
            // timeout beside the others, not before them, so the edge links to the
            // gateway that took over while it still holds placement for its claims.
            let tries = addrs.into_iter().map(|addr| {
                let (state, ep) = (&state, &ep);
                Box::pin(async move {
                    connect(state, ep, addr).await.map_err(|e| {
                        tracing::debug!(%addr, error = %e, "edge: not the leader");
                    })
                })
            });
            futures_util::future::select_ok(tries)
                .await
                .ok()
                .map(|(l, _)| l)
        };
        let found = tokio::select! {
            f = round => f,
            _ = stop.wait_for(|s| *s) => return,
        };
        if let Some((leader, recv)) = found {
            logged_none = false;
            let leader = Arc::new(leader);
            tracing::info!(leader = %leader.name, "edge: linked to the leader");
            // Clients kept when the previous leader went (another gateway took over):
            // resumed at this one, in the world (RCEnet peers: by the host tasks), and
            // then `Claimed`, so that a gateway taking over knows when this edge's claims
            // are all in.
            let ids: Vec<RelayId> = state.kept.iter().map(|k| *k.key()).collect();
            let kept: Vec<Kept> = ids
                .into_iter()
                .filter_map(|id| state.kept.remove(&id).map(|(_, k)| k))
                .collect();
            leader.claims.add(kept.len() + state.enet_shards);
            state.leader.send_replace(Some(leader.clone()));
            for k in kept {
                state.open.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(
                    resume(state.clone(), leader.clone(), k)
                        .instrument(tracing::info_span!("edge_client", kept = true)),
                );
            }
            if leader.version >= 5 {
                let leader = leader.clone();
                tokio::spawn(async move {
                    if tokio::time::timeout(KEEP_FOR, leader.claims.all_in())
                        .await
                        .is_ok()
                    {
                        let _ = leader.tx.send(EdgeMsg::Claimed).await;
                    }
                });
            }
            let _ = linked.send(Some(Linked {
                name: leader.name.clone(),
                admin: leader.admin,
            }));
            let why = tokio::select! {
                why = serve_link(&state, &leader, recv) => why,
                _ = stop.wait_for(|s| *s) => "this gateway stops relaying".to_owned(),
            };
            state.leader.send_replace(None);
            let _ = linked.send(None);
            tracing::warn!(leader = %leader.name, reason = %why, clients = leader.clients.len(),
                "edge: the link to the leader ended; its clients log in again");
            // Every relayed session was the leader's: those in the world are kept a moment
            // for a gateway taking over (this one) to adopt, the others close.
            leader.lost();
            leader.conn.close(0u32.into(), b"edge link ended");
        } else if !logged_none {
            logged_none = true;
            tracing::warn!(peers = %state.cfg.peers.join(","), "edge: no peer leads yet; new clients are refused until one does");
        }
        if *stop.borrow() {
            return;
        }
        tokio::select! {
            () = tokio::time::sleep(RETRY) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

async fn write_one(send: &mut quinn::SendStream, msg: &EdgeMsg) -> Result<(), String> {
    let mut v = Vec::new();
    edge::encode(msg, &mut v).map_err(|e| e.to_string())?;
    send.write_all(&v).await.map_err(|e| e.to_string())
}

/// Connects to `peer` and runs the handshake: the link, its stream halves.
async fn connect(
    state: &State,
    ep: &quinn::Endpoint,
    addr: SocketAddr,
) -> Result<(Leader, Decoding), String> {
    let timeout = Duration::from_secs(3);
    let connecting = ep.connect(addr, "gateway").map_err(|e| e.to_string())?;
    let conn = tokio::time::timeout(timeout, connecting)
        .await
        .map_err(|_| "no answer")?
        .map_err(|e| e.to_string())?;
    let (mut send, recv) = conn.open_bi().await.map_err(|e| e.to_string())?;
    let mut exporter = [0u8; EXPORTER_LEN];
    conn.export_keying_material(&mut exporter, EXPORTER_LABEL, b"")
        .map_err(|_| "no exporter")?;
    let secret = state.cfg.cluster_secret.as_bytes();
    write_one(
        &mut send,
        &EdgeMsg::Hello {
            version: edge::VERSION,
            edge: state.cfg.gateway_id.clone(),
            proof: edge::edge_proof(secret, &exporter),
        },
    )
    .await?;
    let mut rd = Decoding {
        recv,
        dec: Decoder::default(),
        buf: vec![0u8; 64 * 1024],
    };
    let answer = tokio::time::timeout(timeout, rd.next())
        .await
        .map_err(|_| "no welcome")??;
    match answer {
        EdgeMsg::Welcome {
            version,
            leader,
            epoch,
            admin,
            proof,
        } => {
            if !edge::verify_leader(secret, &exporter, &proof) {
                conn.close(2u32.into(), b"authentication failed");
                return Err("the peer's proof does not verify (another cluster secret?)".into());
            }
            if !(edge::MIN_VERSION..=edge::VERSION).contains(&version) {
                return Err(format!(
                    "edge link version {version}, ours {}..={}",
                    edge::MIN_VERSION,
                    edge::VERSION
                ));
            }
            let seen = state.epoch.load(Ordering::Relaxed);
            if epoch < seen {
                conn.close(2u32.into(), b"stale epoch");
                return Err(format!(
                    "epoch {epoch} is older than {seen}: a deposed leader"
                ));
            }
            state.epoch.store(epoch, Ordering::Relaxed);
            // What the previous leader said of the cluster is not this one's.
            *lock(&state.members) = None;
            let (tx, rx) = mpsc::channel(crate::hub::RELAY_QUEUE);
            // First, before any client: where the zone nodes reach this edge.
            if version >= 3
                && let Some(addr) = state.cfg.fanout_advertised()
            {
                let _ = tx.try_send(EdgeMsg::Fanout { addr });
            }
            tokio::spawn(writer(send, rx));
            // An unspecified admin address is the one this edge reached the leader at.
            let admin = match admin.parse::<SocketAddr>() {
                Ok(a) if a.ip().is_unspecified() => SocketAddr::new(addr.ip(), a.port()),
                Ok(a) => a,
                Err(_) => SocketAddr::new(addr.ip(), 9180),
            };
            let leader = Leader {
                admin,
                name: edge::short_reason(&leader),
                conn,
                tx,
                clients: DashMap::new(),
                sessions: DashMap::new(),
                gone: std::sync::atomic::AtomicBool::new(false),
                version,
                claims: Tally::default(),
            };
            Ok((leader, rd))
        }
        EdgeMsg::Refused { reason } => Err(format!("refused: {reason}")),
        _ => Err("an unexpected answer".into()),
    }
}

/// The link's stream, read into whole messages.
struct Decoding {
    recv: quinn::RecvStream,
    dec: Decoder,
    buf: Vec<u8>,
}

impl Decoding {
    async fn next(&mut self) -> Result<EdgeMsg, String> {
        loop {
            if let Some(m) = self.dec.next_msg().map_err(|e| e.to_string())? {
                return Ok(m);
            }
            match self.recv.read(&mut self.buf).await {
                Ok(Some(n)) => self.dec.push(self.buf.get(..n).unwrap_or(&[])),
                Ok(None) => return Err("the leader ended the link".into()),
                Err(e) => return Err(e.to_string()),
            }
        }
    }
}

/// Writes every queued message, batched, until the queue closes or the stream fails
/// (both ends of the edge link).
pub(crate) async fn writer(mut send: quinn::SendStream, mut rx: mpsc::Receiver<EdgeMsg>) {
    let mut out = Vec::new();
    while let Some(m) = rx.recv().await {
        out.clear();
        if edge::encode(&m, &mut out).is_err() {
            continue;
        }
        while out.len() < 64 * 1024 {
            match rx.try_recv() {
                Ok(m) => {
                    let _ = edge::encode(&m, &mut out);
                }
                Err(_) => break,
            }
        }
        if send.write_all(&out).await.is_err() {
            return;
        }
    }
}

/// Reads the leader's messages and datagrams until the link ends; returns why.
async fn serve_link(state: &State, leader: &Leader, mut rd: Decoding) -> String {
    loop {
        tokio::select! {
            m = rd.next() => match m {
                Ok(EdgeMsg::Stream { id, bytes }) => {
                    let Some(c) = leader.clients.get(&id) else { continue };
                    let len = bytes.len();
                    let before = c.queued.fetch_add(len, Ordering::Relaxed);
                    if before.saturating_add(len) > state.cfg.client_queue_bytes {
                        tracing::info!(relay = id, "edge: client too slow: send queue past its limit");
                        let _ = c.down.send(Down::Close(close::TOO_SLOW,
                            "send queue overflow: the client is too slow".into()));
                    } else if c.down.send(Down::Stream(bytes)).is_err() {
                        c.queued.fetch_sub(len, Ordering::Relaxed);
                    }
                }
                Ok(EdgeMsg::Close { id, code, reason }) => {
                    if let Some(c) = leader.clients.get(&id) {
                        let _ = c.down.send(Down::Close(code, reason));
                    }
                }
                Ok(EdgeMsg::Entered { id, session, account, slot, rid, node, fence }) => {
                    if let Some(c) = leader.clients.get(&id) {
                        c.session.store(session, Ordering::Relaxed);
                        leader.sessions.insert(session, (id, node.clone()));
                        // Its party comes on its own (`Party`), kept beside this.
                        let who = KeptSession { session, account, slot, rid, node, fence, party: Vec::new() };
                        match &c.sink {
                            Sink::Quic(_) => {
                                let _ = c.down.send(Down::Entered(who));
                            }
                            // The host task keeps an RCEnet peer itself.
                            Sink::Enet(peer, tx) => {
                                let _ = tx.try_send(enet::EnetOut::Entered { peer: *peer, who });
                            }
                        }
                    }
                }
                Ok(EdgeMsg::Party { id, mut members }) => {
                    members.truncate(edge::MAX_PARTY);
                    if let Some(c) = leader.clients.get(&id) {
                        match &c.sink {
                            Sink::Quic(_) => {
                                let _ = c.down.send(Down::Party(members));
                            }
                            Sink::Enet(peer, tx) => {
                                let _ = tx.try_send(enet::EnetOut::Party { peer: *peer, members });
                            }
                        }
                    }
                }
                Ok(EdgeMsg::Members { nodes, edges }) => {
                    // A list this long may have been cut: not a view to wait on.
                    let whole = nodes.len() < edge::MAX_MEMBERS && edges.len() < edge::MAX_MEMBERS;
                    *lock(&state.members) = whole.then(|| crate::hub::Members {
                        nodes: nodes.into_iter().collect(),
                        edges: edges.into_iter().collect(),
                    });
                }
                Ok(_) => return "the leader sent an unexpected message".into(),
                Err(e) => return e,
            },
            d = leader.conn.read_datagram() => match d {
                Ok(d) => {
                    if let Ok((id, frames)) = datagram::decode(&d)
                        && let Some(c) = leader.clients.get(&id)
                    {
                        match &c.sink {
                            Sink::Quic(conn) => {
                                if conn.datagram_send_buffer_space() >= frames.len() {
                                    let _ = conn.send_datagram(frames);
                                }
                            }
                            Sink::Enet(peer, tx) => {
                                let _ = tx.try_send(enet::EnetOut::Datagram { peer: *peer, frames });
                            }
                        }
                    }
                }
                Err(e) => return e.to_string(),
            },
        }
    }
}

/// Accepts clients while a leader is linked, within `max_connections` and
/// `max_connections_per_ip`. With none linked, a new client waits in the endpoint's queue
/// for up to [`UNLINKED_GRACE`] since the link went (the edge links to the gateway that
/// took over, or becomes it and its full gateway accepts the client from the same
/// endpoint); past that it is refused, to try another address.
async fn accept(state: Arc<State>, endpoint: quinn::Endpoint, mut stop: watch::Receiver<bool>) {
    let mut linked = state.leader.subscribe();
    let mut unlinked_at: Option<tokio::time::Instant> = None;
    loop {
        if linked.borrow_and_update().is_some() {
            unlinked_at = None;
        } else {
            let since = *unlinked_at.get_or_insert_with(tokio::time::Instant::now);
            let until = since + UNLINKED_GRACE;
            if tokio::time::Instant::now() < until {
                tokio::select! {
                    _ = linked.wait_for(Option::is_some) => {}
                    () = tokio::time::sleep_until(until) => {}
                    _ = stop.wait_for(|s| *s) => return,
                }
                continue;
            }
        }
        // The link going while this waits sends the loop back to the grace above: a
        // client arriving just after the leader left waits too instead of being refused.
        let incoming = tokio::select! {
            i = endpoint.accept() => match i {
                Some(i) => i,
                None => return,
            },
            changed = linked.changed() => match changed {
                Ok(()) => continue,
                Err(_) => return,
            },
            _ = stop.wait_for(|s| *s) => return,
        };
        let Some(leader) = state.leader.borrow().clone() else {
            incoming.refuse();
            continue;
        };
        let addr = incoming.remote_address();
        let peer = crate::net::client::peer_key(addr);
        if !admit(&state, addr) {
            incoming.refuse();
            continue;
        }
        let state = state.clone();
        let stop = stop.clone();
        tokio::spawn(
            async move {
                client(&state, leader, incoming, stop).await;
                state.open.fetch_sub(1, Ordering::Relaxed);
                state.per_ip.remove_if_mut(&peer, |_, n| {
                    *n = n.saturating_sub(1);
                    *n == 0
                });
            }
            .instrument(tracing::info_span!("edge_client", peer = %addr)),
        );
    }
}

/// Counts a new client from `addr` in the edge's limits (`max_connections`,
/// `max_connections_per_ip`), unless they are reached.
fn admit(state: &State, addr: SocketAddr) -> bool {
    let peer = crate::net::client::peer_key(addr);
    let cap = if peer.is_loopback() && !state.cfg.limit_loopback {
        u32::MAX
    } else {
        state.cfg.max_connections_per_ip
    };
    let max = usize::try_from(state.cfg.max_connections).unwrap_or(usize::MAX);
    let mut n = state.per_ip.entry(peer).or_insert(0);
    if *n >= cap || state.open.load(Ordering::Relaxed) >= max {
        return false;
    }
    *n += 1;
    state.open.fetch_add(1, Ordering::Relaxed);
    true
}

/// One client: opened at the leader, its bytes piped both ways until either side ends.
/// (Or a zone node's fan-out link, [`fanout`], until it ends or the edge stops.)
async fn client(
    state: &Arc<State>,
    leader: Arc<Leader>,
    incoming: quinn::Incoming,
    stop: watch::Receiver<bool>,
) {
    let hs = Duration::from_millis(state.cfg.handshake_timeout_ms);
    let Ok(Ok(conn)) = tokio::time::timeout(hs, incoming).await else {
        return;
    };
    if crate::net::client::negotiated_alpn(&conn).as_deref() == Some(shared::internal::FANOUT_ALPN)
    {
        return fanout::serve(state.clone(), conn, stop).await;
    }
    let Ok(Ok((send, recv))) = tokio::time::timeout(hs, conn.accept_bi()).await else {
        conn.close(
            close::PROTOCOL.into(),
            shared::frame::NO_STREAM_IN_TIME.as_bytes(),
        );
        return;
    };
    pipe(state, leader, conn, send, recv, None).await;
}

/// A QUIC client's compact flag and largest datagram, as the edge link's `Open` and
/// `Resume` carry them.
fn client_caps(conn: &quinn::Connection) -> (bool, u16) {
    let compact =
        crate::net::client::negotiated_alpn(conn).as_deref() == Some(shared::compact::ALPN);
    let max_datagram = conn
        .max_datagram_size()
        .map_or(0, |m| u16::try_from(m).unwrap_or(u16::MAX));
    (compact, max_datagram)
}

/// A client kept when the previous leader went, relayed again to the one now linked
/// (another gateway took over): `Resume`d there, in the world, and piped as before.
async fn resume(state: Arc<State>, leader: Arc<Leader>, k: Kept) {
    let Kept {
        conn,
        send,
        recv,
        who,
    } = k;
    pipe(&state, leader, conn, send, recv, Some(who)).await;
    state.open.fetch_sub(1, Ordering::Relaxed);
}

/// One client's bytes piped both ways until either side ends; opened at the leader
/// (`Open`), or resumed in the world when `kept` (`Resume`). A client in the world whose
/// leader goes is kept for the next (in [`State::kept`]).
async fn pipe(
    state: &Arc<State>,
    leader: Arc<Leader>,
    conn: quinn::Connection,
    mut send: quinn::SendStream,
    mut recv: quinn::RecvStream,
    kept: Option<KeptSession>,
) {
    let id = state.next_id.fetch_add(1, Ordering::Relaxed);
    let (down_tx, mut down) = mpsc::unbounded_channel();
    let queued = Arc::new(AtomicUsize::new(0));
    leader.join(
        id,
        Client {
            down: down_tx,
            session: AtomicU64::new(0),
            queued: queued.clone(),
            sink: Sink::Quic(conn.clone()),
        },
    );
    let (compact, max_datagram) = client_caps(&conn);
    let addr = conn.remote_address();
    let mut party = kept.as_ref().map(|k| k.party.clone()).unwrap_or_default();
    let first = match &kept {
        None => EdgeMsg::Open {
            id,
            addr,
            compact,
            max_datagram,
        },
        Some(who) => EdgeMsg::Resume {
            id,
            addr,
            compact,
            max_datagram,
            who: who.clone(),
        },
    };
    let opened = leader.tx.send(first).await.is_ok();
    if kept.is_some() {
        leader.claims.one_in();
    }
    let mut buf = vec![0u8; edge::MAX_CHUNK];
    let mut pool = BytesMut::new();
    let mut entered: Option<KeptSession> = kept;
    // Its position datagrams go straight to its zone node when it can (not a compact
    // client's: the leader decodes those), under this budget.
    let mut budget =
        (!compact).then(|| crate::session::budget::InputBudget::new(state.budgets.clone(), 0));
    let born = std::time::Instant::now();
    let lost = || {
        (
            close::SHUTDOWN,
            "the gateway lost its leader: log in again".to_owned(),
        )
    };
    let end: (u32, String) = if !opened {
        (
            close::SHUTDOWN,
            "the gateway lost its leader: log in again".into(),
        )
    } else {
        loop {
            tokio::select! {
                r = recv.read(&mut buf) => match r {
                    Ok(Some(n)) => {
                        let bytes = buf.get(..n).unwrap_or(&[]).to_vec();
                        if leader.tx.send(EdgeMsg::Stream { id, bytes }).await.is_err() {
                            break (close::SHUTDOWN, "the gateway lost its leader: log in again".into());
                        }
                    }
                    // The client finished its stream or its connection ended.
                    _ => break (close::NORMAL, String::new()),
                },
                d = conn.read_datagram() => match d {
                    Ok(d) => {
                        if let Some(budget) = &mut budget {
                            let now = u64::try_from(born.elapsed().as_millis()).unwrap_or(u64::MAX);
                            match fanout::input(state, &leader, (id, entered.as_ref().map(|w| w.session)), budget, now, &d, &mut pool) {
                                fanout::Up::Sent | fanout::Up::Dropped => continue,
                                fanout::Up::Kick(reason) => break (close::RATE_LIMITED, reason),
                                fanout::Up::Relay => {}
                            }
                        }
                        pool.reserve(d.len() + datagram::HEADER_LEN);
                        datagram::put_header(&mut pool, id);
                        pool.extend_from_slice(&d);
                        let out: Bytes = pool.split().freeze();
                        let _ = leader.conn.send_datagram(out);
                    }
                    Err(_) => break (close::NORMAL, String::new()),
                },
                m = down.recv() => match m {
                    Some(Down::Stream(b)) => {
                        let ok = send.write_all(&b).await.is_ok();
                        queued.fetch_sub(b.len(), Ordering::Relaxed);
                        if !ok {
                            break (close::NORMAL, String::new());
                        }
                    }
                    Some(Down::Close(code, reason)) => break (code, reason),
                    Some(Down::Entered(who)) => entered = Some(who),
                    Some(Down::Party(members)) => party = members,
                    Some(Down::LeaderLost) | None => break lost(),
                },
            }
        }
    };
    leader.forget(id);
    // The leader forgets the session (a no-op when it closed it).
    let _ = leader.tx.try_send(EdgeMsg::Gone { id });
    // A player in the world whose leader is gone: kept for a gateway taking over.
    if let (Some(mut who), true) = (entered, end == lost()) {
        who.party = party;
        state.kept.insert(
            id,
            Kept {
                conn,
                send,
                recv,
                who,
            },
        );
        let state = state.clone();
        tokio::spawn(async move {
            tokio::time::sleep(KEEP_FOR).await;
            // Not handed over in time: no gateway of this process took over.
            if let Some((_, k)) = state.kept.remove(&id) {
                k.conn.close(
                    close::SHUTDOWN.into(),
                    b"the gateway lost its leader: log in again",
                );
            }
        });
        return;
    }
    // Let queued packets (a P_KickedPlayer, a refusal) reach the client first.
    let _ = send.finish();
    let _ = tokio::time::timeout(Duration::from_millis(500), send.stopped()).await;
    conn.close(end.0.into(), end.1.as_bytes());
}
