//! The client endpoint (transport.md): one task per QUIC connection. Before `P_StartGame`
//! it drives the sans-IO [`Session`] (argon2 precomputed on the blocking pool); in game it
//! forwards reliable frames to the hub and `P_StandardUpdate` datagrams straight to the
//! player's zone node, and writes what the zone and the hub send back.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::{BufMut as _, Bytes, BytesMut};
use shared::frame::{FrameDecoder, split_datagram};
use shared::proto::{ClientPacket, Creds, DecodeCtx, ServerPacket, VerifyAccountReply, ids};
use tokio::sync::mpsc;
use tracing::Instrument as _;

use crate::hub::{CLIENT_QUEUE, ClientHandle, ClientOut, HubEvent, InFlight, Metrics, Shared};
use crate::session::budget::{Budgets, InputBudget, Verdict};
use crate::session::{
    Admit, Ctx, Lobby, PeerKey, Precomputed, Session, SessionEvent, close, latin1,
};

/// Accept client connections until `shutdown` turns true.
pub async fn serve(
    endpoint: quinn::Endpoint,
    shared: Arc<Shared>,
    doors: Arc<Doors>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    while let Some(incoming) = super::next_incoming(&endpoint, &mut shutdown).await {
        if shared.shutting_down.load(Ordering::Relaxed) {
            Metrics::inc(&shared.metrics.refused_shutting_down);
            incoming.refuse();
            continue;
        }
        // Under load (many connections not yet in the world), a new one first proves it
        // can receive at its address: one round trip, and no state kept here until then.
        let validated = incoming.remote_address_validated();
        let peer = peer_key(incoming.remote_address());
        let now_ms = u64::try_from(shared.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        // Above the handshake rate too; a connection that has proven its address already
        // had its turn.
        let crowded = shared.pregame.load(Ordering::Relaxed)
            >= usize::try_from(shared.cfg.retry_above).unwrap_or(usize::MAX)
            || (!validated && !shared.accounts().throttle.try_handshake(now_ms));
        if crowded && !validated && incoming.may_retry() {
            Metrics::inc(&shared.metrics.retries);
            if let Err(e) = incoming.retry() {
                tracing::debug!(error = %e, "retry not sent");
            }
            continue;
        }
        // A network reconnecting in a loop is refused before its handshake.
        if !shared.accounts().throttle.try_connect(peer, now_ms) {
            Metrics::inc(&shared.metrics.refused_rate);
            incoming.refuse();
            continue;
        }
        let session = shared.next_session();
        let slot = match ConnSlot::take(&shared, &doors, peer, session, now_ms) {
            Ok(slot) => slot,
            Err(why) => {
                Metrics::inc(match why {
                    NoSlot::PerIp => &shared.metrics.refused_per_ip,
                    NoSlot::Full => &shared.metrics.refused_full,
                    NoSlot::Lobby => &shared.metrics.refused_lobby,
                });
                incoming.refuse();
                continue;
            }
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let span = tracing::info_span!("session", session, peer = %incoming.remote_address());
            connection(incoming, shared, session, slot)
                .instrument(span)
                .await;
        });
    }
}

/// The room for connections not yet in the world ([`Lobby`]) and, per connection in it,
/// how to close it when a newcomer displaces it: one for every transport.
pub struct Doors {
    lobby: std::sync::Mutex<Lobby>,
    kicks: dashmap::DashMap<u64, Arc<tokio::sync::Notify>>,
}

impl Doors {
    /// The doors of `shared`'s configuration (`max_connections`, `pregame_share_percent`,
    /// `lobby_grace_ms`).
    pub fn new(shared: &Shared) -> Arc<Self> {
        Arc::new(Self {
            lobby: std::sync::Mutex::new(Lobby::new(
                Lobby::cap_for(shared.cfg.max_connections, shared.cfg.pregame_share_percent),
                shared.cfg.lobby_grace_ms,
            )),
            kicks: dashmap::DashMap::new(),
        })
    }

    fn lobby(&self) -> std::sync::MutexGuard<'_, Lobby> {
        crate::lock(&self.lobby)
    }
}

/// Why a connection got no slot.
pub(super) enum NoSlot {
    /// Its network has `max_connections_per_ip` open.
    PerIp,
    /// `max_connections` open, and no idler to displace.
    Full,
    /// Connections not yet in the world hold `pregame_share_percent`, none displaceable.
    Lobby,
}

/// One open client connection as the limits count it: in `open`, in its network's
/// `per_ip` count and, until it enters the world, in `pregame` and the [`Lobby`].
/// Dropping it gives all back.
pub(super) struct ConnSlot {
    shared: Arc<Shared>,
    doors: Arc<Doors>,
    peer: PeerKey,
    session: u64,
    pregame: bool,
    logged_in: bool,
    /// Notified when a newcomer displaces this connection (it has not logged in in time).
    kick: Arc<tokio::sync::Notify>,
}

impl ConnSlot {
    /// A slot for connection `session` from `peer`, unless its network has
    /// `max_connections_per_ip` or there is no room (see [`Lobby`]); a displaced idler is
    /// told to close.
    pub(super) fn take(
        shared: &Arc<Shared>,
        doors: &Arc<Doors>,
        peer: PeerKey,
        session: u64,
        now_ms: u64,
    ) -> Result<Self, NoSlot> {
        let cap = if peer.is_loopback() && !shared.cfg.limit_loopback {
            u32::MAX
        } else {
            shared.cfg.max_connections_per_ip
        };
        {
            let mut n = shared.per_ip.entry(peer).or_insert(0);
            if *n >= cap {
                return Err(NoSlot::PerIp);
            }
            *n += 1;
        }
        let max_open = usize::try_from(shared.cfg.max_connections).unwrap_or(usize::MAX);
        let open = shared.open.load(Ordering::Relaxed);
        let kick = Arc::new(tokio::sync::Notify::new());
        let admit = {
            let mut lobby = doors.lobby();
            let a = lobby.admit(session, now_ms, open, max_open);
            if a != Admit::Full {
                // Registered under the lobby's lock: a displacer finds it.
                doors.kicks.insert(session, kick.clone());
            }
            a
        };
        match admit {
            Admit::Yes => {}
            Admit::Displace(victim) => {
                Metrics::inc(&shared.metrics.displaced);
                if let Some((_, k)) = doors.kicks.remove(&victim) {
                    k.notify_one();
                }
            }
            Admit::Full => {
                shared.per_ip.remove_if_mut(&peer, |_, n| {
                    *n = n.saturating_sub(1);
                    *n == 0
                });
                return Err(if open >= max_open {
                    NoSlot::Full
                } else {
                    NoSlot::Lobby
                });
            }
        }
        shared.open.fetch_add(1, Ordering::Relaxed);
        shared.pregame.fetch_add(1, Ordering::Relaxed);
        Ok(Self {
            shared: shared.clone(),
            doors: doors.clone(),
            peer,
            session,
            pregame: true,
            logged_in: false,
            kick,
        })
    }

    /// Notified when a newcomer displaces this connection.
    pub(super) fn kicked(&self) -> Arc<tokio::sync::Notify> {
        self.kick.clone()
    }

    /// The connection verified an account: it can no longer be displaced.
    fn logged_in(&mut self) {
        if self.pregame && !std::mem::replace(&mut self.logged_in, true) {
            self.doors.lobby().logged_in(self.session);
            self.doors.kicks.remove(&self.session);
        }
    }

    /// The connection entered the world.
    fn entered(&mut self) {
        if std::mem::take(&mut self.pregame) {
            self.shared.pregame.fetch_sub(1, Ordering::Relaxed);
            self.doors.lobby().left(self.session);
            self.doors.kicks.remove(&self.session);
        }
    }
}

impl Drop for ConnSlot {
    fn drop(&mut self) {
        self.entered();
        self.shared.open.fetch_sub(1, Ordering::Relaxed);
        self.shared.per_ip.remove_if_mut(&self.peer, |_, n| {
            *n = n.saturating_sub(1);
            *n == 0
        });
    }
}

/// The limiter key of a peer: its network (IPv4 address, IPv6 /64).
pub fn peer_key(addr: SocketAddr) -> PeerKey {
    let v6 = match addr.ip() {
        std::net::IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        std::net::IpAddr::V6(v6) => v6,
    };
    PeerKey::network(v6.octets())
}

/// Each player's input budgets (validated with the configuration; the defaults if not).
pub(crate) fn budgets(cfg: &crate::config::GatewayConfig) -> Budgets {
    cfg.budgets().unwrap_or_default()
}

/// Why the connection task ends: the close code and reason to send (`None`: the peer or
/// the network already closed it).
pub(super) type End = Option<(u32, String)>;

pub(super) struct Conn {
    shared: Arc<Shared>,
    session_id: u64,
    /// The client's address when it connected.
    peer_addr: SocketAddr,
    /// Where replies go: the QUIC stream or the RCEnet peer.
    out: Out,
    session: Session,
    in_game: bool,
    /// This connection in the connection limits.
    slot: ConnSlot,
    /// What this player may still send (`input_budgets`, `chat_per_second`, ...).
    budget: InputBudget,
    /// This client's bytes on their way through the hub (`client_inflight_bytes`).
    inflight: Arc<std::sync::atomic::AtomicUsize>,
    /// Reused buffer for frames forwarded to the zone.
    batch: Vec<u8>,
    /// Pooled buffer the forwarded datagrams are cut from (no allocation per datagram).
    pool: BytesMut,
    /// Salts for the session core's fallback hashing.
    rng: rand_chacha::ChaCha20Rng,
    /// The login's trace (`session.login`: connect, verify, character selection, start),
    /// handed to the hub with `P_StartGame`.
    login: Option<tracing::Span>,
    /// The account name last recorded on `login` (recorded again only when it changes:
    /// each record adds the field once more to the log line).
    login_account: Vec<u8>,
    /// The compact profile's encoder (shared with the broadcast fan-out), when negotiated.
    compact: Option<Arc<std::sync::Mutex<shared::compact::DownEncoder>>>,
    /// The account in the world, once `P_StartGame` succeeded.
    account: Option<crate::session::AccountId>,
}

/// How long a login waits for its account's previous connection to finish logging out
/// (Realm Crafter's server logged out at once: its clients reconnect at once).
const LOGOUT_WAIT: Duration = Duration::from_secs(3);

/// How long a login of an account that is logged on, and not yet known to be leaving,
/// waits for its old connection's disconnect to be seen (`Conn::await_logout`).
const DISCONNECT_RACE: Duration = Duration::from_secs(1);

/// Where a connection's reliable replies are written.
pub(super) enum Out {
    /// The connection's QUIC stream.
    Quic(quinn::SendStream),
    /// The RCEnet host task (channel 1, one packet per frame).
    Enet(crate::hub::EnetLink),
    /// The edge gateway that holds the client (`rc-edge/1`).
    Relay(crate::hub::RelayLink),
}

impl Out {
    /// Writes rc/1 frames; false once the connection is gone.
    async fn write(&mut self, frames: &[u8]) -> bool {
        match self {
            Self::Quic(s) => s.write_all(frames).await.is_ok(),
            Self::Enet(e) => e.frames(Bytes::copy_from_slice(frames)).await.is_ok(),
            Self::Relay(r) => r.frames(frames).await,
        }
    }
}

/// The ALPN the client negotiated.
pub(super) fn negotiated(conn: &quinn::Connection) -> Option<Vec<u8>> {
    negotiated_alpn(conn)
}

/// The ALPN a connection negotiated (the edge's clients too).
pub fn negotiated_alpn(conn: &quinn::Connection) -> Option<Vec<u8>> {
    conn.handshake_data()
        .and_then(|d| d.downcast::<quinn::crypto::rustls::HandshakeData>().ok())
        .and_then(|d| d.protocol)
}

/// A ChaCha20 RNG seeded from the operating system.
pub fn os_rng() -> rand_chacha::ChaCha20Rng {
    let mut seed = [0u8; 32];
    ops::random::fill(&mut seed);
    rand::SeedableRng::from_seed(seed)
}

async fn connection(
    incoming: quinn::Incoming,
    shared: Arc<Shared>,
    session_id: u64,
    slot: ConnSlot,
) {
    let hs = Duration::from_millis(shared.cfg.handshake_timeout_ms);
    let kick = slot.kicked();
    let handshake = tokio::select! {
        r = tokio::time::timeout(hs, incoming) => r,
        () = kick.notified() => {
            tracing::debug!("displaced while handshaking");
            return;
        }
    };
    let conn = match handshake {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "handshake failed");
            return;
        }
        Err(_) => {
            Metrics::inc(&shared.metrics.handshake_timeouts);
            return;
        }
    };
    Metrics::inc(&shared.metrics.connections_accepted);
    let peer = conn.remote_address();
    // One trace per login, from the accepted connection to the player in its zone.
    let login = tracing::info_span!(parent: None, "session.login", session = session_id,
        peer = %peer, account = tracing::field::Empty, character = tracing::field::Empty,
        outcome = tracing::field::Empty);
    let (send, recv) = match tokio::time::timeout(hs, conn.accept_bi()).await {
        Ok(Ok(s)) => s,
        Ok(Err(_)) => return,
        Err(_) => {
            Metrics::inc(&shared.metrics.handshake_timeouts);
            conn.close(
                close::PROTOCOL.into(),
                shared::frame::NO_STREAM_IN_TIME.as_bytes(),
            );
            return;
        }
    };
    serve_conn(shared, session_id, slot, conn, send, recv, login, None).await;
}

/// A connection's session task, set up ([`open`]): its state, what the hub and the node
/// readers send it, and when it must close if it lingers before the world.
pub(super) struct Opened {
    pub(super) c: Conn,
    pub(super) rx: mpsc::Receiver<ClientOut>,
    pub(super) lingering: Lingering,
}

/// When a connection not yet in the world is closed: no login by `login_deadline_ms`, no
/// character chosen by `menu_deadline_ms`, or displaced by a newcomer (the lobby is full).
pub(super) struct Lingering {
    login: tokio::time::Instant,
    menu: tokio::time::Instant,
    kick: Arc<tokio::sync::Notify>,
}

impl Lingering {
    /// Resolves when the connection must close (never once it is in the world), counted
    /// and logged; `logged_in` and `in_game` as they are now.
    pub(super) async fn due(
        &self,
        shared: &Shared,
        logged_in: bool,
        in_game: bool,
    ) -> (u32, String) {
        if in_game {
            return std::future::pending().await;
        }
        tokio::select! {
            () = tokio::time::sleep_until(self.login), if !logged_in => {
                Metrics::inc(&shared.metrics.login_deadlines);
                tracing::info!("no login within the deadline");
                (close::RATE_LIMITED, "no login in time".into())
            }
            () = tokio::time::sleep_until(self.menu) => {
                Metrics::inc(&shared.metrics.menu_deadlines);
                tracing::info!("no character chosen within the menu deadline");
                (close::RATE_LIMITED, "no character chosen in time".into())
            }
            () = self.kick.notified() => {
                tracing::info!("displaced: the lobby is full and this connection had not logged in");
                (close::RATE_LIMITED, "server busy: log in sooner".into())
            }
        }
    }
}

/// Registers a new connection's client handle (how the hub and the node readers reach it;
/// `queued` counts the bytes queued to it and not yet written) and builds its session
/// state, whatever its transport.
#[allow(clippy::too_many_arguments)]
pub(super) fn open(
    shared: &Arc<Shared>,
    session_id: u64,
    peer: SocketAddr,
    link: crate::hub::ClientLink,
    out: Out,
    slot: ConnSlot,
    login: tracing::Span,
    compact: bool,
    queued: Arc<std::sync::atomic::AtomicUsize>,
) -> Opened {
    let kick = slot.kicked();
    let (tx, rx) = mpsc::channel(CLIENT_QUEUE);
    if compact {
        Metrics::inc(&shared.metrics.compact_sessions);
    }
    let compact = compact.then(|| {
        Arc::new(std::sync::Mutex::new(
            shared::compact::DownEncoder::default(),
        ))
    });
    shared.clients.insert(
        session_id,
        ClientHandle {
            tx,
            queued,
            queue_limit: shared.cfg.client_queue_bytes,
            link,
            compact: compact.clone(),
        },
    );
    tracing::debug!("client connected");
    let mut c = Conn::new(shared.clone(), session_id, peer, out, slot, login);
    c.compact = compact;
    let start = tokio::time::Instant::now();
    Opened {
        c,
        rx,
        lingering: Lingering {
            login: start + Duration::from_millis(shared.cfg.login_deadline_ms),
            // A logged-in connection must also choose a character in time: the lobby is
            // not a place to stay.
            menu: start + Duration::from_millis(shared.cfg.menu_deadline_ms),
            kick,
        },
    }
}

/// A client an edge kept through a leader change: its player is in the world on a zone
/// node under the previous leader's session (what the edge link's `Resume` carries).
pub type KeptSession = shared::internal::edge::KeptClient;

/// Serves a client the edge of this process kept when the leader it relayed to went
/// (`edge::Handover`): its connection goes on as one of this gateway's own, in the world,
/// once the control plane adopts its player from the zone node that hosts it.
pub fn resume(shared: &Arc<Shared>, doors: &Arc<Doors>, kept: crate::edge::Kept) {
    let crate::edge::Kept {
        conn,
        send,
        recv,
        who,
    } = kept;
    let session = who.session;
    let peer = conn.remote_address();
    let Some(cslot) = kept_slot(shared, doors, peer, session) else {
        conn.close(
            close::SHUTDOWN.into(),
            b"your session could not be kept: log in again",
        );
        return;
    };
    let shared = shared.clone();
    let login = tracing::Span::none();
    tokio::spawn(
        async move {
            serve_conn(shared, session, cslot, conn, send, recv, login, Some(who)).await;
        }
        .instrument(tracing::info_span!("session", session, peer = %peer, kept = true)),
    );
}

/// The connection slot of a session kept through a leader change (`session` is the
/// previous leader's id, which this gateway never gives out again): counted in the
/// connection limits, past the lobby. `None` when there is no room.
pub(super) fn kept_slot(
    shared: &Arc<Shared>,
    doors: &Arc<Doors>,
    peer: SocketAddr,
    session: u64,
) -> Option<ConnSlot> {
    shared.reserve_session(session);
    let now_ms = u64::try_from(shared.started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let Ok(mut slot) = ConnSlot::take(shared, doors, peer_key(peer), session, now_ms) else {
        // Given up: no claim of it is to come.
        shared.claim_settled(session);
        return None;
    };
    slot.logged_in();
    slot.entered();
    Some(slot)
}

/// A connection past its handshake, until it ends: the session task's loop. A kept
/// session (`kept`) starts in the world.
#[allow(clippy::too_many_arguments)]
async fn serve_conn(
    shared: Arc<Shared>,
    session_id: u64,
    slot: ConnSlot,
    conn: quinn::Connection,
    send: quinn::SendStream,
    mut recv: quinn::RecvStream,
    login: tracing::Span,
    kept: Option<KeptSession>,
) {
    let peer = conn.remote_address();
    let compact = negotiated(&conn).as_deref() == Some(shared::compact::ALPN);
    let queued = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let Opened {
        mut c,
        mut rx,
        lingering,
    } = open(
        &shared,
        session_id,
        peer,
        crate::hub::ClientLink::Quic(conn.clone()),
        Out::Quic(send),
        slot,
        login,
        compact,
        queued.clone(),
    );
    if let Some(k) = kept {
        c.adopt(k);
    }
    let mut dec = FrameDecoder::with_max_frame_len(shared.cfg.max_frame_len);
    let mut buf = vec![0u8; 16 * 1024];
    let end: End = loop {
        let (logged_in, in_game) = (c.session.is_logged_in(), c.in_game);
        tokio::select! {
            end = lingering.due(&shared, logged_in, in_game) => break Some(end),
            // The hub has not caught up with this client's frames (or anyone's): read on
            // once it has; meanwhile the client waits in QUIC's flow control.
            () = tokio::time::sleep(Duration::from_millis(5)), if !c.may_read() => {}
            r = recv.read(&mut buf), if c.may_read() => match r {
                Ok(Some(n)) => {
                    Metrics::add(&shared.metrics.bytes_up_stream, n);
                    dec.push(buf.get(..n).unwrap_or(&[]));
                    if let Some(end) = c.frames(&mut dec).await {
                        break end;
                    }
                    if c.session.is_logged_in() {
                        c.slot.logged_in();
                    }
                }
                Ok(None) => break match dec.finish() {
                    Ok(()) => Some((close::NORMAL, "stream finished".into())),
                    Err(e) => Some(c.violation(&e.to_string())),
                },
                Err(_) => break None,
            },
            d = conn.read_datagram() => match d {
                Ok(d) => c.datagram(d),
                Err(_) => break None,
            },
            o = rx.recv() => {
                if let Some(end) = c.deliver(o, &queued).await {
                    break end;
                }
            }
        }
    };
    c.ended();
    if let (Some((code, reason)), Out::Quic(send)) = (end, &mut c.out) {
        // Let queued packets (a P_KickedPlayer, a refusal) reach the client first.
        let _ = send.finish();
        let _ = tokio::time::timeout(Duration::from_millis(500), send.stopped()).await;
        tracing::debug!(code, %reason, "closing");
        conn.close(code.into(), reason.as_bytes());
    }
}

/// A relayed session's inputs from its edge link: stream bytes (with their count, bounded
/// by the link's reader) and datagrams.
pub(super) struct RelayedIn {
    pub(super) stream: mpsc::UnboundedReceiver<Relayed>,
    pub(super) stream_bytes: Arc<std::sync::atomic::AtomicUsize>,
    pub(super) datagrams: mpsc::Receiver<Bytes>,
}

/// What an edge link hands a relayed session's task (`net/relay.rs`).
#[derive(Debug)]
pub(super) enum Relayed {
    /// Reliable stream bytes, as the client sent them.
    Stream(Vec<u8>),
}

/// Admits a client an edge gateway relays (`EdgeMsg::Open`) through the same doors as a
/// connection of this gateway's own (shutting down, the per-network connection rate, the
/// per-network and total connection limits, the lobby): its slot, or why not.
pub(super) fn admit_relayed(
    shared: &Arc<Shared>,
    doors: &Arc<Doors>,
    addr: SocketAddr,
) -> Result<(u64, ConnSlot), &'static str> {
    if shared.shutting_down.load(Ordering::Relaxed) {
        Metrics::inc(&shared.metrics.refused_shutting_down);
        return Err("the server is shutting down");
    }
    let peer = peer_key(addr);
    let now_ms = u64::try_from(shared.started.elapsed().as_millis()).unwrap_or(u64::MAX);
    if !shared.accounts().throttle.try_connect(peer, now_ms) {
        Metrics::inc(&shared.metrics.refused_rate);
        return Err("too many connections from your network: wait a moment");
    }
    let session = shared.next_session();
    match ConnSlot::take(shared, doors, peer, session, now_ms) {
        Ok(slot) => Ok((session, slot)),
        Err(why) => {
            Metrics::inc(match why {
                NoSlot::PerIp => &shared.metrics.refused_per_ip,
                NoSlot::Full => &shared.metrics.refused_full,
                NoSlot::Lobby => &shared.metrics.refused_lobby,
            });
            Err("server busy: try again later")
        }
    }
}

/// One client of an edge gateway: the QUIC connection task's loop, fed by the edge link
/// (its stream bytes and datagrams), writing back through it.
pub(super) async fn relayed(
    shared: Arc<Shared>,
    session_id: u64,
    link: crate::hub::RelayLink,
    compact: bool,
    input: RelayedIn,
    slot: ConnSlot,
    kept: Option<KeptSession>,
) {
    let RelayedIn {
        mut stream,
        stream_bytes,
        mut datagrams,
    } = input;
    let peer = link.addr;
    let login = tracing::info_span!(parent: None, "session.login", session = session_id,
        peer = %peer, transport = "edge", account = tracing::field::Empty,
        character = tracing::field::Empty, outcome = tracing::field::Empty);
    let queued = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let Opened {
        mut c,
        mut rx,
        lingering,
    } = open(
        &shared,
        session_id,
        peer,
        crate::hub::ClientLink::Relay(link.clone()),
        Out::Relay(link.clone()),
        slot,
        login,
        compact,
        queued.clone(),
    );
    if let Some(k) = kept {
        c.adopt(k);
    }
    let mut dec = FrameDecoder::with_max_frame_len(shared.cfg.max_frame_len);
    let end: End = loop {
        let (logged_in, in_game) = (c.session.is_logged_in(), c.in_game);
        tokio::select! {
            end = lingering.due(&shared, logged_in, in_game) => break Some(end),
            () = tokio::time::sleep(Duration::from_millis(5)), if !c.may_read() => {}
            r = stream.recv(), if c.may_read() => match r {
                Some(Relayed::Stream(b)) => {
                    stream_bytes.fetch_sub(b.len(), Ordering::Relaxed);
                    Metrics::add(&shared.metrics.bytes_up_stream, b.len());
                    dec.push(&b);
                    if let Some(end) = c.frames(&mut dec).await {
                        break end;
                    }
                    if c.session.is_logged_in() {
                        c.slot.logged_in();
                    }
                }
                // The client left the edge, or the edge link ended.
                None => break None,
            },
            Some(d) = datagrams.recv() => c.datagram(d),
            o = rx.recv() => {
                if let Some(end) = c.deliver(o, &queued).await {
                    break end;
                }
            }
        }
    };
    c.ended();
    let (code, reason) = end.unwrap_or((close::NORMAL, String::new()));
    tracing::debug!(code, %reason, "closing a relayed client");
    link.close(code, &reason);
}

impl Conn {
    /// A new connection's session task state.
    pub(super) fn new(
        shared: Arc<Shared>,
        session_id: u64,
        peer_addr: SocketAddr,
        out: Out,
        slot: ConnSlot,
        login: tracing::Span,
    ) -> Self {
        Self {
            session_id,
            peer_addr,
            out,
            session: Session::new(peer_key(peer_addr)),
            in_game: false,
            slot,
            budget: InputBudget::new(budgets(&shared.cfg), 0),
            inflight: Arc::default(),
            batch: Vec::with_capacity(4096),
            pool: BytesMut::new(),
            rng: os_rng(),
            login: Some(login),
            login_account: Vec::new(),
            compact: None,
            account: None,
            shared,
        }
    }

    /// What the hub or a node reader queued for the client (`None`: the queue closed):
    /// frames written to its connection (counted, then out of `queued`), or the end.
    /// `Some(end)` ends the connection.
    async fn deliver(
        &mut self,
        o: Option<ClientOut>,
        queued: &std::sync::atomic::AtomicUsize,
    ) -> Option<End> {
        match o {
            Some(ClientOut::Frames(b)) => {
                Metrics::inc(&self.shared.metrics.frames_down);
                Metrics::add(&self.shared.metrics.bytes_down_stream, b.len());
                let sent = self.out.write(&b).await;
                queued.fetch_sub(b.len(), Ordering::Relaxed);
                (!sent).then_some(None)
            }
            Some(ClientOut::Close { code, reason }) => Some(Some((code, reason))),
            None => Some(None),
        }
    }

    /// The connection is over: it leaves the client table and its route, and a player in
    /// the world is logged out (Realm Crafter's 201, `PlayerHasLeft`).
    #[doc(alias = "PlayerHasLeft")]
    pub(super) fn ended(&mut self) {
        self.shared.clients.remove(&self.session_id);
        self.shared.routes.remove(&self.session_id);
        if let Some(login) = self.login.take() {
            login.record("outcome", "closed before entering the world");
        }
        self.shared.in_world.remove(&self.session_id);
        if self.in_game {
            if let Some(a) = self.account {
                self.shared.leaving.insert(a, ());
            }
            self.shared.to_hub(HubEvent::Gone {
                session: self.session_id,
            });
        }
    }

    /// A login (`P_VerifyAccount`, `P_StartGame`) of an account whose last connection just
    /// ended waits up to [`LOGOUT_WAIT`] for that logout to finish, so that a client that
    /// reconnects at once is not told "already logged in". An account that is logged on
    /// and not yet known to be leaving is given [`DISCONNECT_RACE`] to become so: a
    /// client's new connection can overtake its old one's disconnect between the gateway's
    /// tasks (the new connection's login reaches its session task while the host task has
    /// yet to hand over the old peer's disconnect). A real second login is answered "already
    /// logged in" after that grace.
    async fn await_logout(&self, p: &ClientPacket) {
        let creds = match p {
            ClientPacket::VerifyAccount(m) => &m.creds,
            ClientPacket::StartGame(m) => &m.creds,
            _ => return,
        };
        let user = latin1(&creds.user.0);
        let start = tokio::time::Instant::now();
        loop {
            let (logged_on, leaving) = {
                let acc = self.shared.accounts();
                acc.book
                    .find_user(&user)
                    .filter(|&id| acc.book.get(id).is_some_and(|a| a.logged_on))
                    .map_or((false, false), |id| {
                        (true, self.shared.leaving.contains_key(&id))
                    })
            };
            let waited = start.elapsed();
            let wait = if leaving {
                LOGOUT_WAIT
            } else {
                DISCONNECT_RACE
            };
            if !logged_on || waited >= wait {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// A session kept through a leader change starts in the world: the hub marks the
    /// account logged on and the control plane adopts the player once its zone node
    /// reports it (`control::Event::Resume`).
    pub(super) fn adopt(&mut self, k: KeptSession) {
        self.in_game = true;
        self.account = Some(k.account);
        self.shared.in_world.insert(self.session_id, k.account);
        self.shared.to_hub(HubEvent::Resume {
            session: k.session,
            account: k.account,
            slot: k.slot,
            rid: k.rid,
            node: k.node,
            fence: k.fence,
            party: k.party,
        });
        self.shared.claim_settled(k.session);
    }

    /// Whether the player is in the world.
    pub(super) fn in_game(&self) -> bool {
        self.in_game
    }

    /// Whether the connection verified an account.
    pub(super) fn is_logged_in(&self) -> bool {
        self.session.is_logged_in()
    }

    /// The gateway's clock (one for every connection: the login limiter must not see a
    /// clock per connection).
    fn now_ms(&self) -> u64 {
        u64::try_from(self.shared.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn violation(&self, why: &str) -> (u32, String) {
        Metrics::inc(&self.shared.metrics.protocol_violations);
        tracing::info!(reason = why, "protocol violation");
        (close::PROTOCOL, why.to_owned())
    }

    /// Every complete frame in the decoder.
    async fn frames(&mut self, dec: &mut FrameDecoder) -> Option<End> {
        loop {
            let (ty, payload) = match dec.next_frame() {
                Ok(Some(f)) => (f.ty, f.payload.to_vec()),
                Ok(None) => break,
                Err(e) => return Some(Some(self.violation(&e.to_string()))),
            };
            let end = self.frame(ty, &payload).await;
            if end.is_some() {
                self.flush_batch();
                return end;
            }
        }
        self.flush_batch();
        None
    }

    /// One reliable packet from the client, whatever its transport: through the login
    /// session before `P_StartGame`, batched for the zone after it (call
    /// [`flush_batch`](Self::flush_batch) after a run of them).
    pub(super) async fn frame(&mut self, ty: u8, payload: &[u8]) -> Option<End> {
        if self.in_game {
            return self.game_frame(ty, payload);
        }
        // The menu has its budget too: each character created or deleted is a write to
        // the store.
        let now = self.now_ms();
        let verdict = self.budget.admit(now, ty, payload.len() + 3);
        match self.over_budget(verdict) {
            Some(end) => end.map(Some),
            None => {
                let login = self.login.clone().unwrap_or_else(tracing::Span::none);
                let end = self.menu_frame(ty, payload).instrument(login).await;
                if self.session.is_logged_in() {
                    self.slot.logged_in();
                }
                end
            }
        }
    }

    pub(super) fn flush_batch(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let frames = Bytes::copy_from_slice(&self.batch);
        self.batch.clear();
        let inflight = InFlight::new(&self.inflight, &self.shared.hub_bytes, frames.len());
        self.shared.to_hub(HubEvent::Frames {
            session: self.session_id,
            frames,
            inflight,
        });
    }

    /// Whether to read more of the client's stream: its frames (and everyone's) on their
    /// way through the hub are under their limits.
    pub(super) fn may_read(&self) -> bool {
        self.inflight.load(Ordering::Relaxed) < self.shared.cfg.client_inflight_bytes
            && self.shared.hub_bytes.load(Ordering::Relaxed) < crate::hub::HUB_INBOX_BYTES
    }

    /// An in-game input against the player's budget: `None` to forward it, `Some(None)` to
    /// drop it (counted), `Some(Some(end))` to disconnect a flooder.
    fn over_budget(&mut self, verdict: Verdict) -> Option<End> {
        let (action, kick) = match verdict {
            Verdict::Admit => return None,
            Verdict::Drop(a) => (a, false),
            Verdict::Kick(a) => (a, true),
        };
        let m = &self.shared.metrics;
        if let Some(c) = m.input_dropped.get(action.index()) {
            Metrics::inc(c);
        }
        if !kick {
            return Some(None);
        }
        Metrics::inc(&m.input_kicks);
        tracing::info!(
            action = action.name(),
            dropped = self.budget.dropped(),
            "input flood: disconnecting the player"
        );
        Some(Some((
            close::RATE_LIMITED,
            format!("input flood ({action})"),
        )))
    }

    /// One in-game frame: menu packets are violations; chat commands go to the hub on their
    /// own; everything else is batched for the zone byte for byte.
    fn game_frame(&mut self, ty: u8, payload: &[u8]) -> Option<End> {
        if is_menu_packet(ty) {
            return Some(Some(
                self.violation(&format!("menu packet {ty} while in game")),
            ));
        }
        let mut frame = Vec::with_capacity(payload.len() + 3);
        if shared::frame::write_frame(&mut frame, ty, payload).is_err() {
            return Some(Some(self.violation("oversized frame")));
        }
        let now = self.now_ms();
        let verdict = self.budget.admit(now, ty, frame.len());
        if let Some(end) = self.over_budget(verdict) {
            // Past its budget: the flood costs the flooder (dropped here, before any zone
            // or other player sees it); a flood that goes on is disconnected.
            if end.is_some() {
                return Some(end);
            }
            if ty != ids::P_CHAT_MESSAGE {
                return None;
            }
            Metrics::inc(&self.shared.metrics.chat_limited);
            let note = ServerPacket::ChatMessage(shared::proto::ChatMessageS2C::system(
                "You are sending messages too fast.",
            ));
            let mut out = Vec::new();
            if note.encode_frame(&mut out).is_ok()
                && let Some(h) = self.shared.clients.get(&self.session_id)
            {
                h.frames(Bytes::from(out), &self.shared.metrics);
            }
            return None;
        }
        // Every chat line goes through the hub: it routes the commands that reach beyond
        // one zone, keeps the line for the operator's console and holds a muted player's.
        if ty == ids::P_CHAT_MESSAGE {
            self.flush_batch();
            self.shared.to_hub(HubEvent::Chat {
                session: self.session_id,
                frame: Bytes::from(frame),
            });
        } else {
            self.batch.extend_from_slice(&frame);
        }
        None
    }

    /// One login-phase frame through the sans-IO session.
    async fn menu_frame(&mut self, ty: u8, payload: &[u8]) -> Option<End> {
        let packet = {
            let dctx = DecodeCtx {
                template_has_gender: None,
                create_character_points: self.shared.world.attributes.assignment_points > 0,
            };
            ClientPacket::decode_with(ty, payload, &dctx).ok()
        };
        if let Some(
            ClientPacket::VerifyAccount(shared::proto::VerifyAccount { creds, .. })
            | ClientPacket::CreateAccount(shared::proto::CreateAccount { creds, .. }),
        ) = &packet
            && let Some(login) = &self.login
            && self.login_account != creds.user.0
        {
            login.record("account", latin1(&creds.user.0).as_str());
            self.login_account.clone_from(&creds.user.0);
        }
        if let Some(p) = &packet {
            self.await_logout(p).await;
        }
        // Read once per packet: the session and the password work agree on it.
        let store_down = self.shared.writer.is_failing();
        let gate = self.shared.updates.gate();
        let pre = match &packet {
            Some(p)
                if (store_down || gate.is_locked())
                    && crate::session::refused_while_store_down(p) =>
            {
                Pre::default()
            }
            Some(p) => self.precompute(p).await,
            None => Pre::default(),
        };
        let now = self.now_ms();
        let shared = self.shared.clone();
        let mut ops = Vec::new();
        {
            let mut acc = shared.accounts();
            let acc = &mut *acc;
            let hasher = Precomputed {
                inner: &*shared.hasher,
                verified: pre.verified,
                burned: pre.burned,
                fresh: pre.fresh,
            };
            let mut ctx = Ctx {
                world: &shared.world,
                book: &mut acc.book,
                throttle: &mut acc.throttle,
                hasher: &hasher,
                rng: &mut self.rng,
                clock: Some(crate::session::ClockNow {
                    epoch_ms: shared.clock_epoch_ms.load(Ordering::Relaxed),
                    now_ms: std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(0)),
                }),
                gate: &gate,
            };
            self.session.set_store_down(store_down);
            match &packet {
                Some(p) => self.session.handle_packet(now, &mut ctx, p),
                None => self.session.handle_frame(now, &mut ctx, ty, payload),
            }
        }
        let mut events = Vec::new();
        while let Some(e) = self.session.poll_event() {
            match e {
                SessionEvent::Persist(op) => ops.push(op),
                e => events.push(e),
            }
        }
        if self.session.awaits_commit() {
            // "Created", "deleted", "changed" only once it is on disk; otherwise the change
            // is undone in the book, refused, and the connection closed with code 5.
            if self.commit(std::mem::take(&mut ops)).await {
                self.session.committed();
            } else {
                Metrics::inc(&shared.metrics.store_refused_failed);
                self.session.commit_failed(&mut shared.accounts().book);
                while let Some(e) = self.session.poll_event() {
                    events.push(e);
                }
            }
        }
        let mut out = Vec::new();
        while let Some(p) = self.session.poll_transmit() {
            if let ServerPacket::VerifyAccount(r) = &p {
                let m = &shared.metrics;
                match r {
                    VerifyAccountReply::BadPassword => Metrics::inc(&m.login_bad_password),
                    VerifyAccountReply::Banned => Metrics::inc(&m.login_banned),
                    VerifyAccountReply::LoggedOn => Metrics::inc(&m.login_logged_on),
                    _ => {}
                }
            }
            if p.encode_frame(&mut out).is_err() {
                tracing::error!(packet = p.name(), "reply too large for a frame");
            }
        }
        Metrics::add(&shared.metrics.bytes_down_stream, out.len());
        if !out.is_empty() && !self.out.write(&out).await {
            return Some(None);
        }
        let mut end = None;
        for e in events {
            match e {
                SessionEvent::Close { code, reason } => {
                    match code {
                        close::RATE_LIMITED => Metrics::inc(&shared.metrics.rate_limited),
                        close::UNAVAILABLE
                            if store_down && reason == crate::session::STORE_UNAVAILABLE =>
                        {
                            Metrics::inc(&shared.metrics.store_refused_down);
                        }
                        // A failed write: counted as `write_failed` above.
                        close::UNAVAILABLE if reason == crate::session::STORE_UNAVAILABLE => {}
                        close::UNAVAILABLE if gate.lock_message().is_some_and(|m| m == reason) => {
                            shared.updates.refused();
                        }
                        close::UNAVAILABLE => Metrics::inc(&shared.metrics.login_unavailable),
                        close::PROTOCOL => Metrics::inc(&shared.metrics.protocol_violations),
                        _ => {}
                    }
                    tracing::info!(code, %reason, "session closing");
                    end = Some(Some((code, reason)));
                }
                SessionEvent::Persist(op) => ops.push(op),
                SessionEvent::EnterWorld {
                    account,
                    index,
                    is_dm,
                    state,
                } => {
                    self.in_game = true;
                    self.account = Some(account);
                    shared.in_world.insert(self.session_id, account);
                    self.slot.entered();
                    tracing::info!(account, character = %state.name, "entering the world");
                    let login = self.login.take().unwrap_or_else(tracing::Span::none);
                    login.record("character", state.name.as_str());
                    login.record("outcome", "entered the world");
                    shared.to_hub(HubEvent::Entered(crate::hub::Entering {
                        session: self.session_id,
                        account,
                        slot: index,
                        is_dm,
                        state,
                        login,
                    }));
                }
                SessionEvent::ToZone(_) => {}
                SessionEvent::Ignored { id } => {
                    Metrics::inc(&shared.metrics.client_packets_ignored);
                    tracing::debug!(id, "ignored a packet Realm Crafter never used");
                }
            }
        }
        if let Err(e) = shared.writer.submit(ops) {
            tracing::error!(error = %e, "store writer unavailable");
        }
        end
    }

    /// Submits a client's change and waits for its write: true once committed; false
    /// (logged) when it failed, so the caller undoes it and refuses.
    async fn commit(&self, ops: Vec<crate::session::PersistOp>) -> bool {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let r = self.shared.writer.submit_or_undo(ops, move |r| {
            let _ = tx.send(r);
        });
        if let Err(e) = r {
            tracing::error!(error = %e, "store writer unavailable; the change is refused");
            return false;
        }
        match rx.await {
            Ok(Ok(())) => true,
            Ok(Err(f)) => {
                tracing::warn!(error = %f, "a client's change was not stored: undone and refused");
                false
            }
            Err(_) => false,
        }
    }

    /// Run the expensive password work for `p` on the blocking pool.
    async fn precompute(&self, p: &ClientPacket) -> Pre {
        let (creds, new_md5, creating): (&Creds, Option<Vec<u8>>, bool) = match p {
            ClientPacket::CreateAccount(m) => (&m.creds, None, true),
            ClientPacket::VerifyAccount(m) => (&m.creds, None, false),
            ClientPacket::FetchCharacter(m) => (&m.creds, None, false),
            ClientPacket::CreateCharacter(m) => (&m.creds, None, false),
            ClientPacket::DeleteCharacter(m) => (&m.creds, None, false),
            ClientPacket::StartGame(m) => (&m.creds, None, false),
            ClientPacket::ChangePassword(m) => {
                (&m.creds, Some(m.new_password_md5.0.clone()), false)
            }
            _ => return Pre::default(),
        };
        let md5 = creds.password_md5.0.clone();
        let verified_before = self.session.has_verified(creds);
        let stored = {
            let (peer, now) = (self.session_peer(), self.now_ms());
            let mut acc = self.shared.accounts();
            if acc.throttle.is_blocked(peer, now) {
                // The session closes with code 4 without hashing anything.
                return Pre::default();
            }
            if !creating
                && !verified_before
                && acc.throttle.account_wait_ms(&creds.user.0, peer, now) > 0
            {
                // The account name waits: the session closes with code 4, unhashed.
                return Pre::default();
            }
            let stored = acc
                .book
                .find_user(&latin1(&creds.user.0))
                .and_then(|id| acc.book.get(id))
                .map(|a| a.row.password_hash.clone());
            // A creation the session will refuse costs no hash: the creation cell is
            // taken here, before hashing (the session then uses it).
            if creating
                && stored.is_none()
                && (!self.shared.world.misc.allow_account_creation
                    || !crate::session::valid_user_name(&creds.user.0)
                    || !acc.throttle.reserve_create(peer, now))
            {
                return Pre::default();
            }
            stored
        };
        let hasher = self.shared.hasher.clone();
        // At most `max_concurrent_hashes` at once (each argon2 hash takes 19 MiB).
        let _slot = match self.shared.hashes.try_acquire() {
            Ok(p) => Some(p),
            Err(_) => {
                Metrics::inc(&self.shared.metrics.hash_waits);
                self.shared.hashes.acquire().await.ok()
            }
        };
        let job = move || {
            let mut pre = Pre::default();
            let mut salt = [0u8; 16];
            let mut fresh = |md5: &[u8], pre: &mut Pre| {
                ops::random::fill(&mut salt);
                if let Ok(h) = hasher.hash(md5, &salt) {
                    pre.fresh.push((md5.to_vec(), h));
                }
            };
            match (&stored, creating) {
                (None, true) => fresh(&md5, &mut pre),
                (Some(_), true) => {}
                (Some(s), false) if !verified_before => {
                    let ok = hasher.verify(&md5, s);
                    if ok && hasher.needs_rehash(s) {
                        fresh(&md5, &mut pre);
                    }
                    pre.verified = Some((md5.clone(), s.clone(), ok));
                }
                (Some(_), false) => {}
                (None, false) => {
                    hasher.burn(&md5);
                    pre.burned = Some(md5.clone());
                }
            }
            if let Some(n) = &new_md5 {
                fresh(n, &mut pre);
            }
            pre
        };
        tokio::task::spawn_blocking(job).await.unwrap_or_default()
    }

    fn session_peer(&self) -> PeerKey {
        peer_key(self.peer_addr)
    }

    /// A client datagram: only well-formed `P_StandardUpdate` frames (or, on a compact
    /// connection, a well-formed compact input or ack, transcoded to the rc/1 frame), only
    /// in game; then `[session][frames]` to the zone node without a per-datagram
    /// allocation.
    pub(super) fn datagram(&mut self, d: Bytes) {
        let m = &self.shared.metrics;
        Metrics::add(&m.bytes_up_datagram, d.len());
        if !self.in_game {
            Metrics::inc(&m.bad_datagrams);
            return;
        }
        let frame;
        let d: &[u8] = match &self.compact {
            None => &d,
            Some(enc) => match self.compact_input(enc, &d) {
                Some(f) => {
                    frame = f;
                    &frame
                }
                None => return,
            },
        };
        let frames = match split_datagram(d, Some(ids::P_STANDARD_UPDATE)) {
            Ok(f) => f.count(),
            Err(_) => {
                Metrics::inc(&m.bad_datagrams);
                return;
            }
        };
        let now = self.now_ms();
        let verdict = self.budget.admit_positions(now, frames);
        if let Some(end) = self.over_budget(verdict) {
            if let Some((code, reason)) = end
                && let Some(h) = self.shared.clients.get(&self.session_id)
            {
                h.close(code, &reason);
            }
            return;
        }
        let shared = self.shared.clone();
        to_node(&shared, &mut self.pool, self.session_id, &[d]);
    }
}

/// A player's positions to its zone node: `[session u64]` then `parts`, as one datagram
/// cut from `pool` (one allocation serves many datagrams; space comes back once they are
/// sent), counted. Only a player in the world has a route; without one it is dropped.
pub(super) fn to_node(shared: &Shared, pool: &mut BytesMut, session: u64, parts: &[&[u8]]) {
    let m = &shared.metrics;
    let Some(node) = shared.routes.get(&session).map(|c| c.clone()) else {
        Metrics::inc(&m.bad_datagrams);
        return;
    };
    let need =
        shared::internal::datagram::HEADER_LEN + parts.iter().map(|p| p.len()).sum::<usize>();
    if pool.capacity() < need {
        pool.reserve(need.max(64 * 1024));
    }
    pool.put_u64_le(session);
    for p in parts {
        pool.extend_from_slice(p);
    }
    if node.send_datagram(pool.split().freeze()).is_ok() {
        Metrics::inc(&m.datagrams_up);
    } else {
        Metrics::inc(&m.bad_datagrams);
    }
}

impl Conn {
    /// A compact client datagram: applies its acknowledgement and returns the rc/1
    /// `P_StandardUpdate` frame of its input (`[len u16][14][22 bytes]`, on the stack), if
    /// it has one.
    fn compact_input(
        &self,
        enc: &std::sync::Mutex<shared::compact::DownEncoder>,
        d: &[u8],
    ) -> Option<[u8; 25]> {
        use shared::compact::{AckOutcome, Upstream, decode_upstream};
        let m = &self.shared.metrics;
        let (ack, input) = match decode_upstream(d) {
            Ok(Upstream::Input { ack, input }) => (ack, Some(input)),
            Ok(Upstream::Ack(a)) => (Some(a), None),
            Err(e) => {
                Metrics::inc(&m.bad_datagrams);
                Metrics::inc(&m.compact_bad_input);
                tracing::debug!(error = %e, "dropped a malformed compact datagram");
                return None;
            }
        };
        if let Some(a) = ack
            && let Ok(mut enc) = enc.lock()
            && enc.on_ack(a) == AckOutcome::Unknown
        {
            Metrics::inc(&m.compact_unknown_acks);
        }
        let payload = input?.to_update().to_payload();
        let mut frame = [
            23,
            0,
            ids::P_STANDARD_UPDATE,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
        ];
        if let Some(rest) = frame.get_mut(3..) {
            rest.copy_from_slice(&payload);
        }
        Some(frame)
    }
}

/// Precomputed password work for one packet.
#[derive(Debug, Default)]
struct Pre {
    verified: Option<(Vec<u8>, String, bool)>,
    burned: Option<Vec<u8>>,
    fresh: Vec<(Vec<u8>, String)>,
}

/// Whether `ty` is a login-phase packet (a violation once in game).
pub fn is_menu_packet(ty: u8) -> bool {
    crate::session::MENU_PACKETS.contains(&ty)
}
