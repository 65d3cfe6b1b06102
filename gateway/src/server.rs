//! Starting and stopping a whole gateway: the store, the certificate, the two QUIC
//! endpoints, the hub, the admin endpoint, and for `--standalone` an embedded zone node
//! (its own actix `System` on its own thread, connected over loopback QUIC: the same code
//! paths as a remote node).
//!
//! [`start`] runs inside a tokio runtime; [`Gateway::shutdown`] saves every player, closes
//! the clients with code 3, drains the embedded node and flushes the store.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use shared::content::World;
use tokio::sync::{oneshot, watch};

use crate::admin::{self, AdminCommand, AdminFuture, AdminSource, ClusterView, MetricsText};
use crate::config::GatewayConfig;
use crate::hub::{self, Hub, HubAdmin, HubEvent, Shared};
use crate::lock;
use crate::net;
use crate::session::{Argon2Hasher, PasswordHasher};
use crate::store::{Store, StoreError, Writer};
use crate::tls::{self, Limits, TlsError};

/// Why the gateway could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The store.
    #[error("database: {0}")]
    Store(#[from] StoreError),
    /// The certificate.
    #[error("certificate: {0}")]
    Tls(#[from] TlsError),
    /// A socket.
    #[error("cannot listen on {addr} ({what}): {source}")]
    Bind {
        /// Which endpoint.
        what: &'static str,
        /// Address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The edge (a standby with peers) did not start.
    #[error("edge: {0}")]
    Edge(String),
    /// The embedded zone node.
    #[error("embedded zone node: {0}")]
    Node(String),
    /// The update list (`Files.dat`) does not load.
    #[error("update list: {0}")]
    Updates(#[from] shared::content::ContentError),
}

/// How often a standby gateway tries for the database.
const STANDBY_POLL: Duration = Duration::from_millis(500);

/// How long a stepping-down leader waits between ending its edges' links and closing its
/// own clients ([`Gateway::step_down`]): an edge reading its link's end first holds
/// those clients, logging in again at once, until it takes over, instead of opening them
/// at the leaving gateway and closing them a moment later.
const LINKS_END_FIRST: Duration = Duration::from_millis(200);

/// The standby's wait is logged once.
static STANDBY_LOGGED: AtomicBool = AtomicBool::new(false);

/// Opens the store and reads what the gateway keeps in memory. A standby first waits,
/// polling every [`STANDBY_POLL`], until the database is free. Blocking: on a thread of
/// its own (Postgres' client must not block inside the async runtime).
fn load_store(
    database_url: &str,
    data_dir: &std::path::Path,
    standby: bool,
) -> Result<Loaded, StoreError> {
    let (store, control_epoch) = loop {
        let store = match Store::open_configured(database_url, data_dir) {
            Ok(s) => s,
            // A standby outlives a database that is not up yet (an orchestrator starts
            // everything at once) or briefly gone: it waits for it too.
            Err(e @ StoreError::Postgres(_)) if standby => {
                tracing::warn!(error = %e, "standing by: the database does not answer yet");
                std::thread::sleep(STANDBY_POLL * 4);
                continue;
            }
            Err(e) => return Err(e),
        };
        match store.claim_exclusive(wall_ms()) {
            Ok(epoch) => break (store, epoch),
            Err(e) if standby => {
                tracing::debug!(error = %e, "standing by");
                drop(store);
                if !STANDBY_LOGGED.swap(true, Ordering::Relaxed) {
                    tracing::info!(
                        "standing by: another gateway holds the database; taking over when it is gone"
                    );
                }
                std::thread::sleep(STANDBY_POLL);
            }
            Err(e) => return Err(e),
        }
    };
    if standby {
        tracing::warn!("taking over: the gateway that held the database is gone");
    }
    // Read now, after the wait: the game clock's epoch is stored once anyway.
    let now = wall_ms();
    let (book, quarantined) = store.load_book_quarantining()?;
    let scripts = store.load_scripts()?;
    let clock_epoch = store.clock_epoch(now)?;
    let audit = store.load_audit(crate::console::operators::AUDIT_RECENT)?;
    let ground = store.load_ground()?;
    tracing::info!(epoch = control_epoch, "control plane epoch");
    Ok(Loaded {
        store,
        control_epoch,
        book,
        quarantined,
        scripts,
        clock_epoch,
        audit,
        ground,
    })
}

/// A standby's probes while it waits for the database (on `admin_listen`, until it takes
/// over and the admin endpoint proper binds there): `/livez` 200, `/readyz` and
/// `/healthz` 503, or 200 while it is an edge linked to the leader; and an edge passes
/// every other request (`/cluster`, `/metrics`, `/admin`, the console and `/api/v1/`) to
/// the leader's admin endpoint, so they show the whole cluster through any gateway.
/// Returns the stop signal and the server's end.
async fn standby_probes(
    addr: SocketAddr,
    edge: Option<watch::Receiver<Option<crate::edge::Linked>>>,
) -> Result<(oneshot::Sender<()>, tokio::task::JoinHandle<()>), StartError> {
    use axum::response::IntoResponse as _;
    use axum::routing::get;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| StartError::Bind {
            what: "admin HTTP (standby)",
            addr,
            source,
        })?;
    // An edge is ready while it is linked to the leader: it serves clients.
    let linked = edge.clone();
    let ready = move || {
        let edge = linked.clone();
        async move {
            match edge.as_ref().and_then(|e| e.borrow().clone()) {
                Some(leader) => (
                    axum::http::StatusCode::OK,
                    format!("ok: edge, relaying clients to {}\n", leader.name),
                ),
                None => (
                    axum::http::StatusCode::SERVICE_UNAVAILABLE,
                    "standing by: another gateway holds the database\n".to_owned(),
                ),
            }
        }
    };
    let client: hyper_util::client::legacy::Client<_, axum::body::Body> =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build_http();
    let proxy = move |mut req: axum::extract::Request| {
        let edge = edge.clone();
        let client = client.clone();
        async move {
            let Some(leader) = edge.as_ref().and_then(|e| e.borrow().clone()) else {
                return (
                    axum::http::StatusCode::SERVICE_UNAVAILABLE,
                    "standing by: no leader to ask\n",
                )
                    .into_response();
            };
            let path = req.uri().path_and_query().map_or("/", |p| p.as_str());
            let Ok(uri) = format!("http://{}{path}", leader.admin).parse::<axum::http::Uri>()
            else {
                return axum::http::StatusCode::BAD_REQUEST.into_response();
            };
            *req.uri_mut() = uri;
            match tokio::time::timeout(Duration::from_secs(15), client.request(req)).await {
                Ok(Ok(resp)) => resp.map(axum::body::Body::new).into_response(),
                _ => (
                    axum::http::StatusCode::BAD_GATEWAY,
                    "the leader's admin endpoint did not answer\n",
                )
                    .into_response(),
            }
        }
    };
    let app = axum::Router::new()
        .route("/livez", get(|| async { "ok: standing by\n" }))
        .route("/readyz", get(ready.clone()))
        .route("/healthz", get(ready))
        .fallback(proxy);
    let (stop, stopped) = oneshot::channel::<()>();
    let served = tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
            })
            .await;
    });
    Ok((stop, served))
}

/// What the store held at start.
struct Loaded {
    store: Store,
    control_epoch: u64,
    book: crate::session::AccountBook,
    quarantined: Vec<crate::store::Quarantined>,
    scripts: (crate::script_store::ScriptStore, Vec<String>),
    clock_epoch: u64,
    audit: Vec<crate::console::AuditEntry>,
    ground: (crate::store::StoredGround, Vec<String>),
}

/// A running gateway.
pub struct Gateway {
    /// Client endpoint address (ALPN `rc/1`).
    pub client_addr: SocketAddr,
    /// Internal endpoint address (ALPN `rc-internal/1`).
    pub internal_addr: SocketAddr,
    /// RCEnet endpoint address (ENet 1.1, Realm Crafter's own clients), when enabled.
    pub enet_addr: Option<SocketAddr>,
    /// Admin HTTP address.
    pub admin_addr: SocketAddr,
    /// The update host's address (`update_listen`), when it is on.
    pub update_addr: Option<SocketAddr>,
    /// SHA-256 of the client certificate (hex).
    pub fingerprint: String,
    /// SHA-256 of the internal endpoint's certificate (hex), for the nodes to pin.
    pub internal_fingerprint: String,
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    client_ep: quinn::Endpoint,
    internal_ep: quinn::Endpoint,
    hub: tokio::task::JoinHandle<()>,
    embedded: Option<crate::standalone::Embedded>,
    /// The data directory's lock, held until the gateway is dropped.
    _lock: crate::store::DirLock,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("client_addr", &self.client_addr)
            .field("internal_addr", &self.internal_addr)
            .finish_non_exhaustive()
    }
}

/// The wall clock, Unix ms.
pub fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(1)
}

/// UDP receive and send buffer asked of the kernel for both endpoints (capped by
/// `net.core.rmem_max` / `wmem_max`; docs/operations.md says how to raise them).
const SOCKET_BUFFER: usize = 4 << 20;

/// A UDP socket on `addr` with [`SOCKET_BUFFER`]-sized buffers (best effort).
fn udp_socket(what: &'static str, addr: SocketAddr) -> Result<std::net::UdpSocket, StartError> {
    use socket2::{Domain, Protocol, Socket, Type};
    let err = |source| StartError::Bind { what, addr, source };
    let socket =
        Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP)).map_err(err)?;
    let _ = socket.set_recv_buffer_size(SOCKET_BUFFER);
    let _ = socket.set_send_buffer_size(SOCKET_BUFFER);
    // An edge that just stopped (this gateway taking over) may hold the address a moment
    // longer while its endpoint drains: try again for up to two seconds.
    let mut tries = 0;
    loop {
        match socket.bind(&addr.into()) {
            Ok(()) => break,
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && tries < 20 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => return Err(err(e)),
        }
    }
    socket.set_nonblocking(true).map_err(err)?;
    Ok(socket.into())
}

/// The edge's RCEnet sockets: as many as the full gateway's host tasks, on its address,
/// so that the full gateway this edge may become serves its peers on them as they are.
pub(crate) fn edge_enet_sockets(
    cfg: &GatewayConfig,
    addr: SocketAddr,
) -> Result<Vec<std::net::UdpSocket>, StartError> {
    enet_sockets(addr, enet_shards(cfg))
}

/// The edge's endpoint for its link to the leader (a client endpoint), with the large
/// socket buffers of the gateway's own endpoints.
pub(crate) fn edge_link_endpoint(addr: SocketAddr) -> Result<quinn::Endpoint, StartError> {
    let err = |source| StartError::Bind {
        what: "edge link",
        addr,
        source,
    };
    let socket = udp_socket("edge link", addr)?;
    let runtime = quinn::default_runtime()
        .ok_or_else(|| err(std::io::Error::other("no async runtime for quinn")))?;
    quinn::Endpoint::new(quinn::EndpointConfig::default(), None, socket, runtime).map_err(err)
}

/// The edge's client endpoint: the same socket, buffers and reset key as the full
/// gateway's.
pub(crate) fn edge_endpoint(
    gw: &GatewayConfig,
    cfg: quinn::ServerConfig,
) -> Result<quinn::Endpoint, StartError> {
    bind("clients (edge)", gw.listen, cfg, (gw, "clients"))
}

/// The endpoint configuration of a server endpoint of this gateway bound to `addr`
/// (`role`: clients or zone nodes). With a cluster secret its stateless reset key is
/// derived from the secret, the gateway's id, the role and the address, so the same gateway started
/// again on the same address has the same key: a client (or zone node) still sending to
/// the connection of the process that died is told at its next packet, by a stateless
/// reset (RFC 9000 §10.3) it can verify, that the connection is gone, instead of waiting
/// out its idle timeout. (Found by `deploy/failover.sh`: the bots of a killed gateway
/// noticed only after their 5-second idle timeout, though the gateway was back in 2 s; a
/// zone node sent a restarted edge's players' broadcasts into its dead fan-out link for
/// as long.) Without a secret (one gateway, nothing to restart beside): a random key.
fn endpoint_config(gw: &GatewayConfig, role: &str, addr: SocketAddr) -> quinn::EndpointConfig {
    use ring::hmac;
    if gw.cluster_secret.is_empty() {
        return quinn::EndpointConfig::default();
    }
    let secret = hmac::Key::new(hmac::HMAC_SHA256, gw.cluster_secret.as_bytes());
    let label = format!("rc stateless reset key/{}/{role}/{addr}", gw.gateway_id);
    let key = hmac::sign(&secret, label.as_bytes());
    let mut cfg =
        quinn::EndpointConfig::new(Arc::new(hmac::Key::new(hmac::HMAC_SHA256, key.as_ref())));
    // The connection ids carry a check under a key of their own: the restarted process
    // must take the dead one's ids for its own to answer them with a reset (with a fresh
    // key it drops them as forged, and says nothing).
    let mut cid_key = [0u8; 8];
    cid_key.copy_from_slice(key.as_ref().get(..8).unwrap_or(&[0; 8]));
    let cid_key = u64::from_le_bytes(cid_key);
    cfg.cid_generator(move || {
        Box::new(quinn_proto::HashedConnectionIdGenerator::from_key(cid_key))
    });
    // Every client of a dead process is told within moments, not 50 a second (a reset is
    // smaller than the packet that incited it: no amplification).
    cfg.min_reset_interval(Duration::from_millis(1));
    cfg
}

/// How many RCEnet host tasks: `enet_shards`, or one per CPU (at most 8) when 0.
fn enet_shards(cfg: &GatewayConfig) -> usize {
    match cfg.enet_shards {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get().min(8)),
        n => usize::try_from(n).unwrap_or(1),
    }
}

/// `n` UDP sockets on one `addr` for RCEnet's host tasks, with `SO_REUSEPORT` so that the
/// kernel spreads clients over them by address (and keeps each client on one). Where the
/// option is missing, one socket.
fn enet_sockets(addr: SocketAddr, n: usize) -> Result<Vec<std::net::UdpSocket>, StartError> {
    use socket2::{Domain, Protocol, Socket, Type};
    let what = "RCEnet clients";
    let err = |source| StartError::Bind { what, addr, source };
    if n <= 1 {
        return Ok(vec![udp_socket(what, addr)?]);
    }
    let mut out = Vec::with_capacity(n);
    let mut bind_to = addr;
    for i in 0..n {
        let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
            .map_err(err)?;
        let _ = socket.set_recv_buffer_size(SOCKET_BUFFER);
        let _ = socket.set_send_buffer_size(SOCKET_BUFFER);
        if !reuse_port(&socket) {
            if i == 0 {
                tracing::info!("no SO_REUSEPORT here: one RCEnet host task");
                return Ok(vec![udp_socket(what, addr)?]);
            }
            break;
        }
        // An edge that just stopped may hold the port a moment longer (see `udp_socket`).
        let mut tries = 0;
        loop {
            match socket.bind(&bind_to.into()) {
                Ok(()) => break,
                Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && tries < 20 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(e) => return Err(err(e)),
            }
        }
        socket.set_nonblocking(true).map_err(err)?;
        let socket: std::net::UdpSocket = socket.into();
        if i == 0 {
            // Port 0: the others join the port the first one got.
            bind_to = socket.local_addr().map_err(err)?;
        }
        out.push(socket);
    }
    Ok(out)
}

#[cfg(all(
    unix,
    not(any(target_os = "solaris", target_os = "illumos", target_os = "cygwin"))
))]
fn reuse_port(socket: &socket2::Socket) -> bool {
    socket.set_reuse_port(true).is_ok()
}

#[cfg(not(all(
    unix,
    not(any(target_os = "solaris", target_os = "illumos", target_os = "cygwin"))
)))]
fn reuse_port(_: &socket2::Socket) -> bool {
    false
}

/// A server endpoint on `addr` with [`SOCKET_BUFFER`]-sized socket buffers (best effort).
/// Every client's 5 Hz updates and acknowledgements land on one socket; with the kernel's
/// default 208 KiB the kernel drops them while the gateway is busy with a broadcast burst.
/// Its stateless reset key is `gw`'s for `role` ([`endpoint_config`]) on the address
/// bound (the port given, or the one port 0 got: a restart is given that one).
fn bind(
    what: &'static str,
    addr: SocketAddr,
    cfg: quinn::ServerConfig,
    (gw, role): (&GatewayConfig, &str),
) -> Result<quinn::Endpoint, StartError> {
    let err = |source| StartError::Bind { what, addr, source };
    let socket = udp_socket(what, addr)?;
    let bound = socket.local_addr().map_err(err)?;
    let runtime = quinn::default_runtime()
        .ok_or_else(|| err(std::io::Error::other("no async runtime for quinn")))?;
    let endpoint = endpoint_config(gw, role, bound);
    quinn::Endpoint::new(endpoint, Some(cfg), socket, runtime).map_err(err)
}

/// Load the configured world (`None`: the embedded demo world), logging warnings.
pub fn load_world(cfg: &GatewayConfig) -> Result<World, shared::content::ContentError> {
    let (world, warnings) = shared::content::fs::load_or_demo(cfg.world.as_deref())?;
    for w in &warnings {
        tracing::warn!(warning = %w, "content warning");
    }
    Ok(world)
}

/// Start everything. With `cfg.standalone`, an empty `cluster_secret` is replaced by a
/// random one (only the embedded node needs it).
pub async fn start(mut cfg: GatewayConfig, world: World) -> Result<Gateway, StartError> {
    if cfg.standalone && cfg.cluster_secret.is_empty() {
        let mut s = [0u8; 32];
        ops::random::fill(&mut s);
        cfg.cluster_secret = hex::encode(s);
    }
    // One gateway per data directory; the offline commands refuse it while this runs.
    let lock = crate::store::lock_dir(&cfg.data_dir)?;
    // The store is read on a thread of its own: Postgres' client blocks, and must not
    // from inside the async runtime.
    let (database_url, data_dir) = (cfg.database_url.clone(), cfg.data_dir.clone());
    let standby = cfg.standby;
    // A standby answers its probes while it waits: alive, not ready.
    // With peers it serves clients meanwhile, relaying them to the leader (an edge).
    let edge = if standby && !cfg.peers.is_empty() {
        Some(crate::edge::Edge::start(&cfg).map_err(|e| StartError::Edge(e.to_string()))?)
    } else {
        None
    };
    let probes = if standby {
        Some(standby_probes(cfg.admin_listen, edge.as_ref().map(|e| e.linked.clone())).await?)
    } else {
        None
    };
    let (loaded_tx, loaded_rx) = oneshot::channel();
    std::thread::spawn(move || {
        let _ = loaded_tx.send(load_store(&database_url, &data_dir, standby));
    });
    let loaded = loaded_rx
        .await
        .map_err(|_| StoreError::Unsupported("the store's loading thread panicked".into()))??;
    if let Some((stop, served)) = probes {
        let _ = stop.send(());
        let _ = served.await;
    }
    // The edge's clients whose players are in the world go on as this gateway's own (the
    // zone nodes still host them); the others log in again.
    let handover = match edge {
        Some(edge) => Some(edge.hand_over().await),
        None => None,
    };
    let Loaded {
        store,
        control_epoch,
        mut book,
        quarantined,
        scripts: (scripts, warnings),
        clock_epoch,
        audit,
        ground: (ground, ground_warnings),
    } = loaded;
    tracing::info!(backend = store.backend(), "store opened");

    for q in &quarantined {
        tracing::error!(account = q.account, character = %q.name, reason = %q.reason,
            "unreadable stored row: its account is quarantined (cannot log in) until repaired");
    }
    let accounts = book.len();
    for w in &warnings {
        tracing::warn!(warning = %w, "script store");
    }
    tracing::info!(
        script_files = scripts.entries(),
        script_bytes = scripts.total_bytes(),
        super_globals = scripts.globals().len(),
        "script store loaded"
    );
    for w in &ground_warnings {
        tracing::warn!(warning = %w, "stored ground items skipped");
    }
    let writer = Writer::spawn(store)?;
    // Handles given at load to characters of an older database.
    writer.submit(book.take_persist())?;
    let (client_cfg, identity, created) = tls::client_endpoint_config(&cfg, false)?;
    let fingerprint = identity.fingerprint();
    tracing::info!(sha256 = %fingerprint, created, "client certificate");
    // Kept in the data directory: nodes may pin its fingerprint, which must survive
    // restarts (it was generated afresh at every start).
    let (internal_identity, _) = tls::load_or_create_internal(&cfg.data_dir)?;
    let internal_fp = internal_identity.fingerprint();
    tracing::info!(sha256 = %internal_fp, "internal certificate (pin it on the nodes: ZONE_NODE_GATEWAY_CERT_SHA256)");
    let internal_cfg = tls::server_config(
        &internal_identity,
        &[shared::internal::ALPN, shared::internal::edge::ALPN],
        Limits {
            idle: Duration::from_millis(cfg.node_timeout_ms.max(2_000)),
            bidi_streams: 1,
            datagram_buffer: 8 << 20,
            peer_acks: Some(tls::PeerAcks::NODES),
        },
    )?;
    let (client_ep, kept, adopted, fanout_links, members) = match handover {
        // The kept clients' connections live on the edge's endpoint, its RCEnet peers in
        // its hosts: they stay.
        Some(h) => {
            h.endpoint.set_server_config(Some(client_cfg));
            (h.endpoint, h.kept, h.enet, h.fanout, h.members)
        }
        None => (
            bind("clients", cfg.listen, client_cfg, (&cfg, "clients"))?,
            Vec::new(),
            Vec::new(),
            Vec::new(),
            None,
        ),
    };
    let internal_ep = bind(
        "zone nodes",
        cfg.internal_listen,
        internal_cfg,
        (&cfg, "zone nodes"),
    )?;
    let client_addr = client_ep.local_addr().map_err(|source| StartError::Bind {
        what: "clients",
        addr: cfg.listen,
        source,
    })?;
    let internal_addr = internal_ep
        .local_addr()
        .map_err(|source| StartError::Bind {
            what: "zone nodes",
            addr: cfg.internal_listen,
            source,
        })?;
    let enet = match cfg.enet_listen {
        Some(addr) => {
            let err = |source| StartError::Bind {
                what: "RCEnet clients",
                addr,
                source,
            };
            // The edge's sockets and hosts, its kept peers in them; else fresh ones.
            let shards: Vec<(std::net::UdpSocket, Option<_>)> = if adopted.is_empty() {
                enet_sockets(addr, enet_shards(&cfg))?
                    .into_iter()
                    .map(|s| (s, None))
                    .collect()
            } else {
                adopted
                    .into_iter()
                    .map(|a| {
                        let (socket, host) = a.split();
                        (socket, Some(host))
                    })
                    .collect()
            };
            let local = match shards.first() {
                Some((s, _)) => s.local_addr().map_err(err)?,
                None => addr,
            };
            Some((shards, local))
        }
        None => None,
    };
    let enet_addr = enet.as_ref().map(|(_, a)| *a);
    let admin_listener = tokio::net::TcpListener::bind(cfg.admin_listen)
        .await
        .map_err(|source| StartError::Bind {
            what: "admin HTTP",
            addr: cfg.admin_listen,
            source,
        })?;
    let admin_addr = admin_listener
        .local_addr()
        .map_err(|source| StartError::Bind {
            what: "admin HTTP",
            addr: cfg.admin_listen,
            source,
        })?;
    if let Some(w) = admin::exposure_warning(admin_addr, !cfg.admin_token.is_empty()) {
        tracing::warn!(addr = %admin_addr, "{w}");
    }
    let hasher: Arc<dyn PasswordHasher + Send + Sync> = if cfg.password_hash == "fast" {
        tracing::warn!("password_hash = fast: weak argon2 parameters, for tests only");
        Arc::new(Argon2Hasher::fast_for_tests())
    } else {
        Arc::new(Argon2Hasher::production())
    };
    let updates = Arc::new(crate::updates::UpdateService::new(
        crate::updates::world_list_path(cfg.world.as_deref())?,
        world.update_files.clone(),
        cfg.update_dir.clone(),
        cfg.update_max_file_bytes,
        cfg.update_max_downloads,
    )?);
    tracing::info!(files = updates.gate().files().len(), "update list");
    let update_listener = match cfg.update_listen {
        Some(addr) => {
            let err = |source| StartError::Bind {
                what: "update host",
                addr,
                source,
            };
            let l = tokio::net::TcpListener::bind(addr).await.map_err(err)?;
            let local = l.local_addr().map_err(err)?;
            Some((l, local))
        }
        None => None,
    };
    let update_addr = update_listener.as_ref().map(|(_, a)| *a);
    let world = Arc::new(world);
    let standalone = cfg.standalone;
    let (shared, rx) = Shared::new(
        cfg.clone(),
        world.clone(),
        book,
        scripts,
        writer,
        hasher,
        updates.clone(),
        // Session ids never repeat across restarts: nodes may still hold old ones.
        wall_ms() << 16,
    );
    *shared.ground() = ground;
    *shared.console.audit() = crate::console::AuditLog::with(audit);
    if !shared.console.operators.is_empty() {
        let names: Vec<String> = shared
            .console
            .operators
            .iter()
            .map(|o| format!("{}:{}", o.name, o.role))
            .collect();
        tracing::info!(operators = %names.join(","), "admin API and console at /api/v1/ and /console/");
    }
    shared.clock_epoch_ms.store(clock_epoch, Ordering::Relaxed);
    shared.control_epoch.store(control_epoch, Ordering::Relaxed);
    // Generations, transfer ids and fencing tokens count from this base: the wall clock,
    // but never below the control epoch, which each new leader raises above the last
    // one's, so a leader whose clock is behind its predecessor's still mints numbers
    // above the predecessor's base.
    let hub_task = tokio::spawn(hub::run(
        Hub::new(shared.clone(), wall_ms().max(control_epoch)),
        rx,
    ));
    let (stop, stop_rx) = watch::channel(false);
    let doors = net::client::Doors::new(&shared);
    let kept_enet: usize = enet
        .iter()
        .flat_map(|(shards, _)| shards.iter())
        .filter_map(|(_, a)| a.as_ref().map(|a| a.kept.len()))
        .sum();
    if !kept.is_empty() || kept_enet > 0 {
        tracing::info!(
            kept = kept.len(),
            kept_enet,
            "resuming the sessions this gateway's edge kept through the leader change"
        );
    }
    // Taking over from a leader whose nodes and other edges this gateway's edge heard of:
    // the placement hold ends once each of those nodes is back and every kept session is
    // claimed (its own, and each other edge's, which says when it is done), not at its
    // deadline.
    if let Some(m) = members {
        let sessions = kept
            .iter()
            .map(|k| k.who.session)
            .chain(
                enet.iter()
                    .flat_map(|(shards, _)| shards.iter())
                    .filter_map(|(_, a)| a.as_ref())
                    .flat_map(|a| a.kept.iter().map(|p| p.who.session)),
            )
            .collect();
        tracing::info!(
            nodes = m.nodes.len(),
            edges = m.edges.len(),
            "taking over: placement is held until each node of the previous leader is back and each edge has claimed its players"
        );
        shared.take_over(m.nodes, m.edges, sessions);
    }
    for k in kept {
        net::client::resume(&shared, &doors, k);
    }
    tokio::spawn(net::client::serve(
        client_ep.clone(),
        shared.clone(),
        doors.clone(),
        stop_rx.clone(),
    ));
    if let Some((sockets, _)) = enet {
        let shards = sockets.len();
        for (socket, adopted) in sockets {
            tokio::spawn(net::enet::serve(
                socket,
                shards,
                shared.clone(),
                doors.clone(),
                stop_rx.clone(),
                adopted,
            ));
        }
    }
    tokio::spawn(net::node::serve(
        internal_ep.clone(),
        shared.clone(),
        doors.clone(),
        stop_rx.clone(),
    ));
    // The zone nodes the edge had fan-out links from register here now, not when their
    // link to the previous leader times out.
    crate::edge::announce_lead(fanout_links, control_epoch);
    let source: Arc<dyn AdminSource> = Arc::new(Admin(shared.clone()));
    let console = crate::console::api::router(Arc::new(Admin(shared.clone())));
    let mut admin_stop = stop_rx.clone();
    tokio::spawn(async move {
        let until = async move {
            while admin_stop.changed().await.is_ok() {
                if *admin_stop.borrow() {
                    return;
                }
            }
        };
        if let Err(e) = admin::serve(admin_listener, source, console, until).await {
            tracing::error!(error = %e, "admin endpoint failed");
        }
    });
    if let Some((listener, addr)) = update_listener {
        let mut stop = stop_rx.clone();
        tokio::spawn(async move {
            let until = async move {
                while stop.changed().await.is_ok() {
                    if *stop.borrow() {
                        return;
                    }
                }
            };
            if let Err(e) = crate::updates::serve(listener, updates, until).await {
                tracing::error!(error = %e, %addr, "update host failed");
            }
        });
    }
    tracing::info!(
        clients = %client_addr,
        enet = %enet_addr.map_or_else(|| "off".to_owned(), |a| a.to_string()),
        internal = %internal_addr,
        admin = %admin_addr,
        updates = ?update_addr,
        accounts,
        areas = world.areas.len(),
        "gateway listening"
    );
    let embedded = if standalone {
        Some(crate::standalone::start(
            &cfg,
            internal_addr,
            &internal_fp,
            (*world).clone(),
            &shared.extra_metrics,
        )?)
    } else {
        None
    };
    Ok(Gateway {
        client_addr,
        internal_addr,
        enet_addr,
        admin_addr,
        update_addr,
        fingerprint,
        internal_fingerprint: internal_fp.clone(),
        shared,
        stop,
        client_ep,
        internal_ep,
        hub: hub_task,
        embedded,
        _lock: lock,
    })
}

impl Gateway {
    /// The shared state (tests and the admin endpoint read it).
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Completes when an operator hands the lead over (`gateway admin hand-over`): then
    /// [`Gateway::step_down`].
    pub async fn hand_over_requested(&self) {
        let mut rx = self.shared.hand_over.subscribe();
        let _ = rx.wait_for(|due| *due).await;
    }

    /// Completes when a shutdown an operator scheduled (`POST /api/v1/shutdown`) is due.
    pub async fn scheduled_stop(&self) {
        let mut rx = self.shared.stop_requested.subscribe();
        let _ = rx.wait_for(|due| *due).await;
    }

    /// Resolves with the reason once this gateway no longer holds the store (Postgres:
    /// another gateway claimed it, or the connection and its lock are gone): it must
    /// [`Gateway::step_down`]. Never resolves on SQLite.
    pub async fn deposed(&self) -> String {
        let mut rx = self.shared.writer.deposed();
        match rx.wait_for(Option::is_some).await {
            Ok(why) => why.clone().unwrap_or_default(),
            // The writer is gone: the gateway is stopping anyway.
            Err(_) => std::future::pending().await,
        }
    }

    /// Leaves the cluster to the gateway that holds the store now, without a save (this
    /// one cannot write any more): every client is closed with code 3 (RCEnet ones are
    /// sent `P_KickedPlayer`), to log in again through another address, and the zone
    /// nodes' links are closed, so they keep their players and instances and register
    /// with the next gateway address, which rebuilds the directory from them as after a
    /// restart. Nothing is told to the nodes: a deposed gateway must decide nothing.
    pub async fn step_down(self, why: &str) {
        tracing::error!(reason = %why, epoch = self.shared.control_epoch.load(Ordering::Relaxed),
            "stepping down: another gateway serves the cluster now");
        self.shared.shutting_down.store(true, Ordering::Relaxed);
        self.hub.abort();
        // The edges' links end first: an edge then holds the clients that reach it (this
        // gateway's own, logging in again) until a leader is linked or it takes over,
        // instead of opening them here and closing them a moment later (found by
        // `deploy/failover.sh`: 64 logins in one cut-off closed that way, each costing
        // its bot a round to the stepped-down gateway, 3–5 s). The clients an edge relays
        // are left to it: it keeps those in the world for the gateway that takes over.
        self.internal_ep.close(0u32.into(), b"gateway stepped down");
        // A moment for the edges to read it before this gateway's clients come (2 of 10
        // fault runs still had a few reach an edge whose link stood): the takeover they
        // will wait for takes longer than this anyway.
        tokio::time::sleep(LINKS_END_FIRST).await;
        for c in &self.shared.clients {
            if !matches!(c.link, hub::ClientLink::Relay(_)) {
                c.close(
                    crate::session::close::SHUTDOWN,
                    "this gateway left the cluster: log in again",
                );
            }
        }
        self.client_ep
            .close(3u32.into(), b"this gateway left the cluster: log in again");
        let _ = self.stop.send(true);
        if let Some(e) = self.embedded {
            e.stop(Duration::from_secs(1)).await;
        }
        // RCEnet kicks and QUIC closes reach the clients before the process ends.
        let _ = tokio::time::timeout(Duration::from_millis(500), self.client_ep.wait_idle()).await;
        let shared = self.shared.clone();
        let _ = tokio::task::spawn_blocking(move || shared.writer.close()).await;
    }

    /// Save every player, close every client with code 3, stop the embedded node, flush
    /// the store; bounded by `shutdown_timeout_ms` (plus the node's own drain).
    pub async fn shutdown(self) {
        let limit = self.shared.cfg.shutdown_timeout() + Duration::from_secs(2);
        self.shared.shutting_down.store(true, Ordering::Relaxed);
        let (done_tx, done_rx) = oneshot::channel();
        self.shared.to_hub(HubEvent::Shutdown { done: done_tx });
        if tokio::time::timeout(limit, done_rx).await.is_err() {
            tracing::warn!("players not all saved before the deadline");
        }
        let _ = self.stop.send(true);
        if let Some(e) = self.embedded {
            e.stop(limit).await;
        }
        let shared = self.shared.clone();
        let _ = tokio::task::spawn_blocking(move || shared.writer.flush()).await;
        if let Some(e) = self.shared.writer.last_error() {
            let unsaved = self.shared.writer.take_dirty();
            tracing::error!(error = %e, accounts = unsaved.accounts.len(),
                instances = unsaved.ground.len(),
                "stopping while the store fails: the latest changes of these were not written");
        }
        self.client_ep.close(3u32.into(), b"server shutting down");
        self.internal_ep
            .close(0u32.into(), b"gateway shutting down");
        self.hub.abort();
        let _ = tokio::time::timeout(Duration::from_secs(1), self.client_ep.wait_idle()).await;
        // Closed, the store is free for another gateway (Postgres: the connection and its
        // lock go now, not when the last task holding the shared state ends).
        let shared = self.shared.clone();
        let _ = tokio::task::spawn_blocking(move || shared.writer.close()).await;
        tracing::info!("gateway stopped");
    }
}

/// The admin endpoint's view of the shared state.
struct Admin(Arc<Shared>);

impl AdminSource for Admin {
    fn health(&self) -> Result<(), String> {
        let s = &self.0;
        if s.shutting_down.load(Ordering::Relaxed) {
            return Err("shutting down".into());
        }
        if let Some(e) = s.writer.last_error() {
            return Err(format!("store: {e}"));
        }
        let view = self.view();
        if view.nodes.is_empty() {
            return Err("no zone node registered".into());
        }
        if !view.unplaced.is_empty() {
            return Err(format!("{} areas have no zone node", view.unplaced.len()));
        }
        Ok(())
    }

    fn metrics(&self) -> String {
        let s = &self.0;
        let m = &s.metrics;
        let v = self.view();
        let mut t = MetricsText::new();
        ops::process::process_and_build(&mut t, "rc_gateway_build_info", env!("CARGO_PKG_VERSION"));
        m.render(&mut t);
        if let Some(extra) = s.extra_metrics.get() {
            extra(&mut t);
        }
        let st = s.writer.stats();
        t.counter(
            "rc_gateway_store_ops_written_total",
            "Persistence ops committed.",
            st.ops_written.load(Ordering::Relaxed),
        );
        t.counter(
            "rc_gateway_store_failures_total",
            "Persistence ops that failed.",
            st.failures.load(Ordering::Relaxed),
        );
        t.gauge(
            "rc_gateway_store_queue_depth",
            "Persistence ops queued.",
            st.queue_depth.load(Ordering::Relaxed) as f64,
        );
        t.histogram_of(
            "rc_gateway_store_write_seconds",
            "Duration of each persistence batch (one SQLite transaction).",
            &[],
            &st.write_latency,
        );
        for cause in crate::store::FailCause::ALL {
            t.counter_with(
                "rc_gateway_store_write_failures_total",
                "Failed writes (submitted batches, each stored whole or not at all), by cause: disk_full (SQLITE_FULL), io, read_only, busy, corrupt, constraint, encode, other.",
                &[("cause", cause.label())],
                st.failed_writes(cause),
            );
        }
        // The data directory's file system (the store's disk): what the disk-full alert reads.
        if let Ok(fs) = rustix::fs::statvfs(&s.cfg.data_dir) {
            let unit = fs.f_frsize.max(1);
            t.gauge(
                "rc_gateway_data_dir_free_bytes",
                "Bytes free for the gateway on its data directory's file system.",
                fs.f_bavail.saturating_mul(unit) as f64,
            );
            t.gauge(
                "rc_gateway_data_dir_size_bytes",
                "Size of the gateway's data directory's file system.",
                fs.f_blocks.saturating_mul(unit) as f64,
            );
        }
        t.gauge(
            "rc_gateway_store_up",
            "1 while the store takes writes; 0 from a failed write of the disk or the file until a write succeeds again (logins and new accounts are refused meanwhile).",
            if s.writer.is_failing() { 0.0 } else { 1.0 },
        );
        let u = &s.updates;
        let gate = u.gate();
        t.gauge(
            "rc_gateway_locked",
            "1 while an operator holds the server locked for maintenance (no logins, no update downloads), else 0.",
            if gate.is_locked() { 1.0 } else { 0.0 },
        );
        t.counter(
            "rc_gateway_lock_refusals_total",
            "Logins, account creations, P_StartGame, P_FetchUpdateFiles and update downloads refused because the server was locked.",
            u.lock_refusals.load(Ordering::Relaxed),
        );
        t.gauge(
            "rc_gateway_update_files",
            "Files in the update list answered to P_FetchUpdateFiles (Files.dat).",
            gate.files().len() as f64,
        );
        for (outcome, n) in [
            ("served", &u.served),
            ("not_found", &u.not_found),
            ("busy", &u.busy),
            ("failed", &u.failed),
        ] {
            t.counter_with(
                "rc_gateway_update_downloads_total",
                "Update host requests by outcome: served, not_found (not listed or not built), busy (update_max_downloads), failed (unreadable or too large); refusals while locked are rc_gateway_lock_refusals_total.",
                &[("outcome", outcome)],
                n.load(Ordering::Relaxed),
            );
        }
        t.gauge(
            "rc_gateway_sessions_connected",
            "Open client connections.",
            s.clients.len() as f64,
        );
        t.gauge(
            "rc_gateway_sessions_in_game",
            "Sessions in the world.",
            v.sessions.in_game as f64,
        );
        t.gauge(
            "rc_gateway_quarantined_accounts",
            "Accounts with a stored row that could not be read (they cannot log in until repaired; see the log).",
            s.accounts().book.quarantined_count() as f64,
        );
        t.gauge(
            "rc_gateway_nodes",
            "Registered zone nodes.",
            v.nodes.len() as f64,
        );
        t.gauge(
            "rc_gateway_unplaced_instances",
            "Wanted AreaInstances with no node.",
            v.unplaced.len() as f64,
        );
        for n in &v.nodes {
            t.gauge_with(
                "rc_gateway_node_players",
                "Players per zone node.",
                &[("node", &n.id)],
                n.players as f64,
            );
            t.gauge_with(
                "rc_gateway_node_load",
                "Instances over capacity per zone node.",
                &[("node", &n.id)],
                n.load,
            );
            for i in &n.instances {
                let inst = i.instance.to_string();
                let labels = [
                    ("node", n.id.as_str()),
                    ("area", i.area.as_str()),
                    ("area_instance", inst.as_str()),
                ];
                t.gauge_with(
                    "rc_gateway_instance_players",
                    "Players per AreaInstance.",
                    &labels,
                    i.players as f64,
                );
                t.gauge_with(
                    "rc_gateway_instance_npcs",
                    "NPCs per AreaInstance.",
                    &labels,
                    i.npcs as f64,
                );
                t.gauge_with(
                    "rc_gateway_instance_tick_p99_seconds",
                    "Tick duration p99 per AreaInstance.",
                    &labels,
                    i.tick_p99_ms / 1000.0,
                );
                t.gauge_with(
                    "rc_gateway_instance_tick_age_seconds",
                    "Time since the AreaInstance last completed a tick (its node's tick watchdog; also under --standalone).",
                    &labels,
                    i.tick_age_ms as f64 / 1000.0,
                );
                t.gauge_with(
                    "rc_gateway_instance_stuck",
                    "1 while the AreaInstance's node holds it stuck (no new player goes to it).",
                    &labels,
                    if i.stuck { 1.0 } else { 0.0 },
                );
            }
        }
        t.render()
    }

    fn cluster(&self) -> ClusterView {
        self.view()
    }

    /// An admin operator's token (`operators` with the admin role, or `admin_token`, which
    /// is the operator `admin`), compared in constant time (`console::Operators`).
    fn reader_token_ok(&self, token: &str) -> Option<bool> {
        let ops = &self.0.console.operators;
        if ops.is_empty() {
            return None;
        }
        Some(ops.authenticate(token).is_some())
    }

    fn admin_token_ok(&self, token: &str) -> Option<bool> {
        let ops = &self.0.console.operators;
        if ops.is_empty() {
            return None;
        }
        Some(
            ops.authenticate(token)
                .is_some_and(|o| o.role == crate::console::Role::Admin),
        )
    }

    fn admin(&self, cmd: AdminCommand) -> AdminFuture {
        let shared = self.0.clone();
        Box::pin(async move { run_admin(&shared, cmd).await })
    }

    fn audited(&self, token: &str, cmd: &AdminCommand, outcome: &Result<String, String>) {
        let (ok, result) = match outcome {
            Ok(t) => (true, t.clone()),
            Err(t) => (false, t.clone()),
        };
        let operator = self
            .0
            .console
            .operators
            .authenticate(token)
            .map_or_else(|| "admin".to_owned(), |o| o.name.clone());
        tracing::info!(operator = %operator, action = cmd.name(), target = cmd.target(), ok,
            result = %result, "admin command");
        let entry = self.0.console.audit().record(crate::console::AuditEntry {
            id: 0,
            at_ms: crate::console::unix_ms(),
            operator,
            role: crate::console::Role::Admin,
            action: cmd.name().into(),
            target: cmd.target().into(),
            detail: cmd.audit_detail(),
            ok,
            result,
        });
        crate::console::api::ConsoleSource::persist_audit(self, entry);
    }
}

/// Changes an account's flag on the book and persists it at once; returns the account.
fn set_flag(
    shared: &Shared,
    user: &str,
    set: impl FnOnce(&mut crate::session::AccountBook, crate::session::AccountId) -> bool,
) -> Result<crate::session::AccountId, String> {
    let (id, ops) = {
        let mut acc = shared.accounts();
        let id = acc
            .book
            .find_user(user)
            .ok_or_else(|| format!("there is no account called {user:?}"))?;
        set(&mut acc.book, id);
        (id, acc.book.take_persist())
    };
    persist(shared, ops)?;
    Ok(id)
}

/// Puts one character back as the backup file `backup` holds it (its account offline).
async fn restore_character(
    shared: &Arc<Shared>,
    name: String,
    backup: String,
) -> Result<String, String> {
    let dir = shared.cfg.backups();
    let (file, who) = (backup.clone(), name.clone());
    let found = tokio::task::spawn_blocking(move || {
        crate::store::backups::read_character(&dir, &file, &who)
    })
    .await
    .map_err(|e| format!("the restore task failed: {e}"))?
    .map_err(|e| format!("{backup}: {e}"))?;
    let Some(back) = found else {
        return Err(format!("{backup} holds no character called {name:?}"));
    };
    let most = usize::from(shared.world.misc.max_account_chars).max(1);
    let (slot, ops) = {
        let mut acc = shared.accounts();
        let id = acc.book.find_user(&back.user).ok_or_else(|| {
            format!(
                "{name:?}'s account {:?} (in the backup) is gone: create it first",
                back.user
            )
        })?;
        if shared.leaving.contains_key(&id) {
            return Err(format!(
                "{:?} is leaving the world: try again in a moment",
                back.user
            ));
        }
        let slot = acc.book.restore_from_backup(id, back.state, most)?;
        (slot, acc.book.take_persist())
    };
    persist(shared, ops)?;
    Ok(format!(
        "{name:?} is restored from {backup} (slot {slot} of {:?})",
        back.user
    ))
}

/// Hands an admin change to the store writer (committed in its next batch).
fn persist(shared: &Shared, ops: Vec<crate::session::PersistOp>) -> Result<(), String> {
    shared
        .writer
        .submit(ops)
        .map_err(|e| format!("the store did not take it: {e}"))
}

/// An admin command for the hub; its outcome.
async fn hub_admin(shared: &Shared, cmd: HubAdmin) -> Result<String, String> {
    let (reply, rx) = oneshot::channel();
    shared.to_hub(HubEvent::Admin { cmd, reply });
    rx.await
        .map_err(|_| "the gateway is shutting down".to_owned())?
}

/// One admin command: the accounts ones on the book (persisted at once), the others
/// through the hub.
async fn run_admin(shared: &Arc<Shared>, cmd: AdminCommand) -> Result<String, String> {
    let hub = |cmd: HubAdmin| hub_admin(shared, cmd);
    match cmd {
        AdminCommand::CreateAccount { user, password, dm } => {
            let bytes: Option<Vec<u8>> = user.chars().map(|c| u8::try_from(c).ok()).collect();
            if !bytes.is_some_and(|b| crate::session::valid_user_name(&b)) {
                return Err(format!(
                    "invalid user name {user:?}: 1 to {} letters, digits or `_`",
                    crate::session::MAX_USER_LEN
                ));
            }
            if password.is_empty() {
                return Err("the password must not be empty".into());
            }
            // What a client sends: the lowercase MD5 hex of the password as typed.
            let md5 = shared::wire::md5_hex(password.as_bytes());
            let hasher = shared.hasher.clone();
            let _slot = shared.hashes.acquire().await.ok();
            let hash = tokio::task::spawn_blocking(move || {
                let mut salt = [0u8; 16];
                ops::random::fill(&mut salt);
                hasher.hash(md5.as_bytes(), &salt)
            })
            .await
            .map_err(|e| format!("hashing failed: {e}"))?
            .map_err(|e| format!("hashing failed: {e}"))?;
            let ops = {
                let mut acc = shared.accounts();
                let Some(id) = acc.book.create_account(user.clone(), hash, String::new()) else {
                    return Err(format!("an account called {user:?} already exists"));
                };
                if dm {
                    acc.book.set_dm(id, true);
                }
                acc.book.take_persist()
            };
            persist(shared, ops)?;
            Ok(format!(
                "created account {user:?}{}",
                if dm { " (DM)" } else { "" }
            ))
        }
        AdminCommand::SetDm { user, on } => {
            set_flag(shared, &user, |book, id| book.set_dm(id, on))?;
            Ok(format!(
                "{user:?} is {}a DM (from its next login)",
                if on { "" } else { "not " }
            ))
        }
        AdminCommand::SetBanned { user, on } => {
            let id = set_flag(shared, &user, |book, id| book.set_banned(id, on))?;
            if on {
                let kicked = hub(HubAdmin::KickAccount { account: id }).await?;
                Ok(format!("{user:?} is banned ({kicked})"))
            } else {
                Ok(format!("{user:?} is no longer banned"))
            }
        }
        AdminCommand::Kick { name } => {
            hub(HubAdmin::Kick {
                name,
                reason: String::new(),
            })
            .await
        }
        AdminCommand::Warp {
            name,
            area,
            instance,
        } => {
            hub(HubAdmin::Warp {
                name,
                area,
                instance,
            })
            .await
        }
        AdminCommand::Broadcast { text } => hub(HubAdmin::Broadcast { text }).await,
        AdminCommand::Online => hub(HubAdmin::Online).await,
        AdminCommand::Lock { reason } => {
            // Locked first, so that no login gets in while the players are removed (one
            // entering meanwhile is removed by the hub as it enters).
            let message = shared.updates.lock(&reason);
            let removed = hub(HubAdmin::RemoveForLock {
                message: message.clone(),
            })
            .await?;
            Ok(format!("locked: {message} ({removed})"))
        }
        AdminCommand::ReloadScripts => hub(HubAdmin::ReloadScripts).await,
        AdminCommand::ImportScriptData { data } => {
            hub(HubAdmin::ImportScriptData {
                data: Box::new(data),
            })
            .await
        }
        AdminCommand::HandOver => {
            if shared.edges.is_empty() {
                return Err(
                    "no edge is linked to this gateway: a hand-over would disconnect every player (stop it with SIGTERM instead)"
                        .into(),
                );
            }
            let _ = shared.hand_over.send(true);
            Ok("handing the lead over: this gateway exits; an edge takes over".into())
        }
        AdminCommand::Unlock => {
            let updates = shared.updates.clone();
            let files = tokio::task::spawn_blocking(move || updates.unlock())
                .await
                .map_err(|e| format!("unlock failed: {e}"))??;
            Ok(format!("unlocked; the update list has {files} files"))
        }
    }
}

impl Admin {
    fn view(&self) -> ClusterView {
        let s = &self.0;
        let mut v = match s.view.lock() {
            Ok(v) => v.clone(),
            Err(p) => p.into_inner().clone(),
        };
        let connected = u64::try_from(s.clients.len()).unwrap_or(u64::MAX);
        v.sessions.connected = connected;
        v.sessions.in_menu = connected.saturating_sub(v.sessions.in_game);
        // The lock as of this request (the hub's copy may be 200 ms old).
        let gate = s.updates.gate();
        v.locked = gate.is_locked();
        v.lock_reason.clone_from(&gate.lock);
        v.update_files = u64::try_from(gate.files().len()).unwrap_or(u64::MAX);
        v.shutdown_at_ms = lock(&s.shutdown_plan).as_ref().map(|p| p.at_ms);
        v
    }
}

// ----- the operator's console (`/api/v1/`, `/console/`) ---------------------------------

impl Admin {
    /// Asks the hub a console question.
    async fn ask<T>(
        &self,
        q: impl FnOnce(oneshot::Sender<T>) -> hub::console::ConsoleQuery,
    ) -> Option<T> {
        let (reply, rx) = oneshot::channel();
        self.0.to_hub(HubEvent::Console(q(reply)));
        rx.await.ok()
    }

    /// The players online (none if the hub is gone).
    async fn online(&self) -> Vec<hub::console::OnlineRow> {
        self.ask(|reply| hub::console::ConsoleQuery::Online { reply })
            .await
            .unwrap_or_default()
    }
}

/// Schedules the gateway's shutdown in `seconds` (replacing one already scheduled): every
/// player is told at each of `console::ANNOUNCE_AT_S`, then the gateway stops as on
/// SIGTERM (every player saved, closed with code 3).
fn schedule_shutdown(shared: &Arc<Shared>, seconds: u64, message: String) -> String {
    let at_ms = crate::console::unix_ms().saturating_add(seconds.saturating_mul(1000));
    let s = shared.clone();
    let msg = message.clone();
    let task = tokio::spawn(async move {
        let start = tokio::time::Instant::now();
        let end = start + Duration::from_secs(seconds);
        let say = |left: u64| {
            let text = format!(
                "The server shuts down in {}.{}",
                crate::console::countdown_text(left),
                if msg.is_empty() {
                    String::new()
                } else {
                    format!(" {msg}")
                }
            );
            let (reply, _) = oneshot::channel();
            s.to_hub(HubEvent::Admin {
                cmd: HubAdmin::Broadcast { text },
                reply,
            });
        };
        say(seconds);
        for &left in crate::console::ANNOUNCE_AT_S {
            if left >= seconds {
                continue;
            }
            tokio::time::sleep_until(end - Duration::from_secs(left)).await;
            say(left);
        }
        tokio::time::sleep_until(end).await;
        tracing::info!("the scheduled shutdown is due");
        let _ = s.stop_requested.send(true);
    });
    let old = lock(&shared.shutdown_plan).replace(crate::console::ShutdownPlan {
        at_ms,
        message,
        task: task.abort_handle(),
    });
    if let Some(old) = old {
        old.task.abort();
    }
    format!(
        "the server shuts down in {}",
        crate::console::countdown_text(seconds)
    )
}

/// Cancels a scheduled shutdown and tells the players.
async fn cancel_shutdown(shared: &Arc<Shared>) -> Result<String, String> {
    let Some(plan) = lock(&shared.shutdown_plan).take() else {
        return Err("no shutdown is scheduled".into());
    };
    plan.task.abort();
    let text = "The scheduled shutdown is cancelled.".to_owned();
    let _ = hub_admin(shared, HubAdmin::Broadcast { text }).await;
    Ok("the scheduled shutdown is cancelled".into())
}

/// A timed mute or ban's end (Unix ms) `minutes` from now.
fn minutes_from_now(minutes: u64) -> u64 {
    crate::console::unix_ms().saturating_add(minutes.saturating_mul(60_000))
}

impl crate::console::api::ConsoleSource for Admin {
    fn console(&self) -> &crate::console::ConsoleState {
        &self.0.console
    }

    fn world(&self) -> &World {
        &self.0.world
    }

    fn cluster(&self) -> ClusterView {
        self.view()
    }

    fn map(
        &self,
        area: String,
        instance: u16,
    ) -> crate::console::api::BoxFuture<Option<shared::internal::MapViewDto>> {
        let me = Admin(self.0.clone());
        Box::pin(async move {
            let key = shared::internal::InstanceKey { area, instance };
            me.ask(|reply| hub::console::ConsoleQuery::Map { key, reply })
                .await
                .flatten()
        })
    }

    fn players(
        &self,
        query: String,
        limit: usize,
    ) -> crate::console::api::BoxFuture<Vec<crate::console::api::PlayerRow>> {
        let me = Admin(self.0.clone());
        Box::pin(async move {
            let online = me.online().await;
            let q = query.to_ascii_lowercase();
            let acc = me.0.accounts();
            let mut rows = Vec::new();
            let row = |a: &crate::session::Account, c: Option<&shared::internal::ActorStateDto>| {
                let live =
                    c.and_then(|c| online.iter().find(|o| o.name.eq_ignore_ascii_case(&c.name)));
                crate::console::api::PlayerRow {
                    account: a.row.user.clone(),
                    character: c.map(|c| c.name.clone()).unwrap_or_default(),
                    online: live.is_some(),
                    area: live
                        .map(|o| o.key.area.clone())
                        .or_else(|| c.map(|c| c.area.clone()))
                        .unwrap_or_default(),
                    instance: live
                        .map(|o| o.key.instance)
                        .or_else(|| c.map(|c| c.instance))
                        .unwrap_or_default(),
                    level: c.map_or(0, |c| c.level),
                    dm: a.row.is_dm,
                    banned: a.row.banned,
                    ban_until_ms: a.row.status.ban_until_ms,
                    mute_until_ms: a.row.status.mute_until_ms,
                    last_login_ms: a.row.status.last_login_ms,
                }
            };
            if q.is_empty() {
                // The players online, by name.
                for o in &online {
                    let Some(a) = acc.book.get(o.account) else {
                        continue;
                    };
                    let c = a
                        .characters
                        .iter()
                        .find(|c| c.name.eq_ignore_ascii_case(&o.name));
                    rows.push(row(a, c));
                }
                rows.sort_by(|a, b| a.character.cmp(&b.character));
                rows.truncate(limit);
                return rows;
            }
            for a in acc.book.accounts() {
                let user_hit = a.row.user.to_ascii_lowercase().contains(&q);
                if a.characters.is_empty() && user_hit {
                    rows.push(row(a, None));
                }
                for c in &a.characters {
                    if user_hit || c.name.to_ascii_lowercase().contains(&q) {
                        rows.push(row(a, Some(c)));
                    }
                }
                if rows.len() >= limit {
                    break;
                }
            }
            rows.truncate(limit);
            rows
        })
    }

    fn character(&self, name: String) -> crate::console::api::BoxFuture<Option<serde_json::Value>> {
        let me = Admin(self.0.clone());
        Box::pin(async move {
            let (account, state) = {
                let acc = me.0.accounts();
                let (id, slot) = acc.book.find_character(&name)?;
                let a = acc.book.get(id)?;
                (a.row.clone(), a.characters.get(usize::from(slot))?.clone())
            };
            let online = me
                .online()
                .await
                .into_iter()
                .find(|o| o.name.eq_ignore_ascii_case(&state.name));
            // Where it is now: from its zone when online, else as last saved.
            let (mut area, mut instance) = (state.area.clone(), state.instance);
            let (mut x, mut y, mut z) = (state.x, state.y, state.z);
            let mut live = serde_json::Value::Null;
            if let Some(o) = &online {
                area.clone_from(&o.key.area);
                instance = o.key.instance;
                let view = tokio::time::timeout(
                    crate::console::api::MAP_TIMEOUT,
                    crate::console::api::ConsoleSource::map(&me, area.clone(), instance),
                )
                .await
                .ok()
                .flatten();
                if let Some(a) = view.as_ref().and_then(|v| {
                    v.actors
                        .iter()
                        .find(|a| a.player && a.name.eq_ignore_ascii_case(&state.name))
                }) {
                    (x, y, z) = (a.x, a.y, a.z);
                    live = serde_json::json!({ "runtime_id": a.runtime_id, "health": a.health,
                        "health_max": a.health_max, "level": a.level });
                }
            }
            let world = &me.0.world;
            let attributes: Vec<serde_json::Value> = state
                .attributes
                .iter()
                .enumerate()
                .filter_map(|(i, v)| {
                    let def = world.attributes.defs.get(i)?;
                    (!def.name.trim().is_empty()).then(|| {
                        serde_json::json!({ "name": def.name.trim(), "value": v,
                            "max": state.attribute_max.get(i).copied().unwrap_or(0) })
                    })
                })
                .collect();
            let inventory: Vec<serde_json::Value> = state
                .inventory
                .iter()
                .enumerate()
                .filter_map(|(slot, s)| {
                    let s = s.as_ref()?;
                    let name = world
                        .item(s.item)
                        .map_or_else(|| format!("item {}", s.item), |t| t.name.clone());
                    Some(
                        serde_json::json!({ "slot": slot, "item": s.item, "name": name,
                        "amount": s.amount, "health": s.health }),
                    )
                })
                .collect();
            let quests: Vec<serde_json::Value> = state
                .quests
                .iter()
                .map(|(q, status)| serde_json::json!({ "name": q, "status": status }))
                .collect();
            let effects: Vec<serde_json::Value> = state
                .effects
                .iter()
                .map(|e| serde_json::json!({ "name": e.name, "remaining_ms": e.remaining_ms }))
                .collect();
            Some(serde_json::json!({
                "name": state.name,
                "account": account.user,
                "online": online.is_some(),
                "node": online.and_then(|o| o.node),
                "area": area,
                "instance": instance,
                "x": x, "y": y, "z": z,
                "live": live,
                "level": state.level,
                "xp": state.xp,
                "gold": state.gold,
                "reputation": state.reputation,
                "attributes": attributes,
                "inventory": inventory,
                "quests": quests,
                "effects": effects,
                "dm": account.is_dm,
                "banned": account.banned,
                "ban_until_ms": account.status.ban_until_ms,
                "ban_reason": account.status.ban_reason,
                "mute_until_ms": account.status.mute_until_ms,
                "mute_reason": account.status.mute_reason,
                "last_login_ms": account.status.last_login_ms,
            }))
        })
    }

    fn act(
        &self,
        action: crate::console::api::Action,
    ) -> crate::console::api::BoxFuture<Result<String, String>> {
        use crate::console::api::Action;
        let shared = self.0.clone();
        Box::pin(async move {
            let hub = |cmd: HubAdmin| hub_admin(&shared, cmd);
            match action {
                Action::Kick { name, reason } => hub(HubAdmin::Kick { name, reason }).await,
                Action::Warp {
                    name,
                    area,
                    instance,
                } => {
                    hub(HubAdmin::Warp {
                        name,
                        area,
                        instance,
                    })
                    .await
                }
                Action::Message { name, text } => hub(HubAdmin::Message { name, text }).await,
                Action::Broadcast { text } => hub(HubAdmin::Broadcast { text }).await,
                Action::Mute {
                    user,
                    minutes,
                    reason,
                } => {
                    let until = minutes_from_now(minutes);
                    set_flag(&shared, &user, |book, id| book.set_mute(id, until, &reason))?;
                    Ok(format!("{user:?} is muted for {minutes} minutes"))
                }
                Action::Unmute { user } => {
                    set_flag(&shared, &user, |book, id| book.set_mute(id, 0, ""))?;
                    Ok(format!("{user:?} is no longer muted"))
                }
                Action::Ban {
                    user,
                    minutes,
                    reason,
                } => {
                    let until = if minutes == 0 {
                        0
                    } else {
                        minutes_from_now(minutes)
                    };
                    let id = set_flag(&shared, &user, |book, id| {
                        book.set_ban(id, true, until, &reason)
                    })?;
                    let kicked = hub(HubAdmin::KickAccount { account: id }).await?;
                    let how_long = if minutes == 0 {
                        "for good".to_owned()
                    } else {
                        format!("for {minutes} minutes")
                    };
                    Ok(format!("{user:?} is banned {how_long} ({kicked})"))
                }
                Action::Unban { user } => {
                    set_flag(&shared, &user, |book, id| book.set_ban(id, false, 0, ""))?;
                    Ok(format!("{user:?} is no longer banned"))
                }
                Action::CreateAccount { user, password, dm } => {
                    run_admin(&shared, AdminCommand::CreateAccount { user, password, dm }).await
                }
                Action::SetDm { user, on } => {
                    run_admin(&shared, AdminCommand::SetDm { user, on }).await
                }
                Action::Lock { reason } => run_admin(&shared, AdminCommand::Lock { reason }).await,
                Action::Unlock => run_admin(&shared, AdminCommand::Unlock).await,
                Action::ReloadScripts => run_admin(&shared, AdminCommand::ReloadScripts).await,
                Action::ScheduleShutdown { seconds, message } => {
                    Ok(schedule_shutdown(&shared, seconds, message))
                }
                Action::CancelShutdown => cancel_shutdown(&shared).await,
                Action::Backup { name } => {
                    if !shared.cfg.database_url.is_empty() {
                        return Err("the store is on Postgres: back it up with Postgres' own \
                             tools (pg_dump); these backups are of the SQLite store"
                            .into());
                    }
                    let data = shared.cfg.data_dir.clone();
                    let dir = shared.cfg.backups();
                    let made = tokio::task::spawn_blocking(move || {
                        crate::store::backups::make(&data, &dir, &name)
                    })
                    .await
                    .map_err(|e| format!("the backup task failed: {e}"))?;
                    made.map(|p| format!("backed up to {}", p.display()))
                        .map_err(|e| format!("no backup: {e}"))
                }
                Action::RestoreCharacter { name, backup } => {
                    restore_character(&shared, name, backup).await
                }
                Action::DrainNode { node } => hub(HubAdmin::DrainNode { node }).await,
            }
        })
    }

    fn backups(
        &self,
    ) -> crate::console::api::BoxFuture<Result<Vec<crate::store::backups::BackupFile>, String>>
    {
        let dir = self.0.cfg.backups();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || crate::store::backups::list(&dir))
                .await
                .map_err(|e| format!("the listing task failed: {e}"))?
                .map_err(|e| e.to_string())
        })
    }

    fn persist_audit(&self, entry: crate::console::AuditEntry) {
        if let Err(e) = self
            .0
            .writer
            .submit(vec![crate::session::PersistOp::Audit(Box::new(entry))])
        {
            tracing::error!(error = %e, "audit entry not stored");
        }
    }
}
