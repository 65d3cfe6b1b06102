//! The RCEnet endpoint (ENet 1.1, Realm Crafter's own clients; docs/rcenet.md): each host
//! task owns one UDP socket on the RCEnet port (`enet_shards` of them, `SO_REUSEPORT`)
//! and one sans-IO [`rcenet::Host`]; each peer past ENet's handshake
//! gets a session task that is a QUIC connection's in all but its transport (the same
//! [`Conn`]: login flow, limits, budgets, routing, logout on disconnect).
//!
//! Realm Crafter's framing: one ENet packet is one RC packet `[type u8][payload]`; reliable
//! packets on channel 1, `P_StandardUpdate` unreliable on channel 2. Types 200–202 are the
//! server's own messages (`PlayerTimedOut`, `PlayerHasLeft`, `PlayerKicked`) and are never
//! taken from the network; type 0 is never sent to a client (its menu reads it as "lost
//! connection").

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use rcenet::{Event, Host, HostConfig, PeerId};
use shared::proto::{KickedPlayer, ServerPacket, ids};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tracing::Instrument as _;

use super::client::{
    ConnSlot, Doors, End, KeptSession, NoSlot, Opened, Out, budgets, kept_slot, open, peer_key,
    to_node,
};
use super::udp::{self, Outbox};
use crate::hub::{ClientLink, ClientOut, ENET_COMMANDS, EnetCmd, EnetLink, Metrics, Shared};
use crate::session::budget::{InputBudget, Verdict};
use crate::session::close;

/// The RC channel of reliable packets.
pub const CHANNEL_RELIABLE: u8 = 1;
/// The RC channel of `P_StandardUpdate` (unreliable).
pub const CHANNEL_UPDATES: u8 = 2;

/// Most bytes of one peer's packets waiting for its session task (its login's password
/// hash, a slow hub); past it the peer is disconnected as a flood.
pub const INBOUND_BYTES: usize = 256 * 1024;
/// ...and most packets.
const INBOUND_PACKETS: usize = 1_024;
/// How long a closing peer has to receive its `P_KickedPlayer` before the disconnect.
const KICK_GRACE_MS: u64 = 1_000;
/// How long a disconnecting peer has to acknowledge it before it is forgotten.
const DISCONNECT_GRACE_MS: u64 = 3_000;
/// Most datagrams read in one flush window (the rest wait for the next; the kernel's
/// buffer drops past its size).
const READ_PER_TICK: usize = 8_192;
/// Most commands taken in one flush window.
const COMMANDS_PER_TICK: usize = 65_536;
/// How often the host's timers run (ms): ENet's retransmissions, pings and timeouts at
/// this resolution (the original client serviced its host once a frame, 16-33 ms), and
/// no scan of every peer per datagram.
const TIMER_MS: u64 = 20;
/// The host task's window (ms): it wakes once per window, reads what arrived, takes its
/// commands and sends its datagrams. What a peer is sent within it (its broadcast, the
/// zone's reliable packets of the same tick, the ACK of its PING) shares datagrams, and
/// what a peer sends waits at most this long, at the cost of at most this much latency
/// each way. ENet 1.1 flushed at every service call; a datagram is a system call and a
/// wake-up on each side.
const FLUSH_MS: u64 = 5;
/// How often the server PINGs an idle client (ms; ENet 1.1: 500).
const PING_MS: u64 = 2_000;
/// How often the host's counters are copied into the metrics (ms).
const METRICS_MS: u64 = 1_000;

/// Something from the host task for one peer's session task: a reliable RC packet
/// `[type][payload]`. (Positions go from the host task straight to the player's zone
/// node, as a QUIC connection task sends its datagrams: no hop through the session task.)
struct Inbound(Bytes);

/// The host task's view of one peer.
struct Peer {
    /// Its session (the key of its route to a zone node once in the world).
    session: u64,
    /// Its position budget (`input_budgets`' `position`): positions are admitted here.
    positions: InputBudget,
    /// To its session task (`None` once closing: the task has ended or is told to).
    inbound: Option<mpsc::Sender<Inbound>>,
    /// Bytes in `inbound`.
    inbound_bytes: Arc<AtomicUsize>,
    /// The client's `queued` (`ClientHandle`): frames from the hub and the node links
    /// not yet taken by this task.
    queued: Arc<AtomicUsize>,
    /// When closing: the time by which the disconnect goes out, whether it went, and the
    /// close code it carries.
    closing: Option<(u64, bool, u32)>,
}

/// The settings of one of `shards` ENet hosts from the gateway's: the gateway-wide bounds
/// (half-open slots, cookie replies) are split between them.
pub fn host_config(cfg: &crate::config::GatewayConfig, shards: usize) -> HostConfig {
    let shards = shards.max(1);
    let half_open = (usize::try_from(cfg.enet_half_open).unwrap_or(usize::MAX) / shards).max(1);
    let per_ip = usize::try_from(cfg.enet_half_open_per_ip)
        .unwrap_or(usize::MAX)
        .min(half_open);
    let cookie_rate = HostConfig::default().max_cookie_replies_per_sec;
    let peers = usize::try_from(cfg.max_connections)
        .unwrap_or(usize::MAX)
        .saturating_add(half_open)
        // ENet 1.1's peer ids are 15 bits.
        .min(0x7FFF);
    HostConfig {
        max_peers: peers,
        max_half_open: half_open,
        max_half_open_per_ip: per_ip,
        max_cookie_replies_per_sec: (cookie_rate / u32::try_from(shards).unwrap_or(1)).max(1),
        connect_timeout_ms: cfg.enet_connect_timeout_ms,
        // A client's RC packet is at most one frame's payload and type.
        max_packet_bytes: cfg.max_frame_len.saturating_add(1),
        max_outgoing_bytes: cfg.client_queue_bytes,
        // Past the half-open caps, CONNECTs get stateless cookies keyed by this.
        cookies: true,
        cookie_secret: cookie_secret(),
        // The clients ping every 500 ms on their own; the server's own pings (and their
        // ACKs) every 2 s are enough to notice a silent client within ENet's bounds.
        ping_interval_ms: PING_MS,
        unreliable_throttle: cfg.enet_throttle,
        ..HostConfig::default()
    }
}

/// A fresh key for the ENet host's handshake cookies, from the operating system.
fn cookie_secret() -> [u8; 16] {
    let mut secret = [0u8; 16];
    ops::random::fill(&mut secret);
    secret
}

/// An RCEnet host another task of this process served until now, with its socket: this
/// gateway's edge, taking over (`edge::Handover`). Its peers' ENet state (sequence
/// numbers, windows, what is in flight) is in the host, so a kept peer goes on as it was.
pub struct Adopted {
    /// The host's socket (non-blocking, one of the shards on the RCEnet address).
    pub socket: std::net::UdpSocket,
    /// The host.
    pub host: Host,
    /// The host's clock: its times are ms since this instant.
    pub epoch: Instant,
    /// The peers whose players are in the world, to serve as this gateway's own.
    pub kept: Vec<KeptPeer>,
    /// The peers that connected while the edge had no leader, to open as new ones.
    pub fresh: Vec<FreshPeer>,
}

/// An RCEnet peer that connected to an edge while it had no leader (the previous one had
/// just gone) and waited: opened as a new connection, what it sent meanwhile read then.
#[derive(Debug)]
pub struct FreshPeer {
    /// The peer in the adopted host.
    pub peer: PeerId,
    /// Its address.
    pub addr: SocketAddr,
    /// Its reliable packets so far (channel, `[type][payload]`), in order.
    pub packets: Vec<(u8, Bytes)>,
}

/// An [`Adopted`] host without its socket (which the task is given apart).
#[derive(Debug)]
pub struct AdoptedHost {
    /// The host.
    pub host: Host,
    /// The host's clock.
    pub epoch: Instant,
    /// Its peers in the world.
    pub kept: Vec<KeptPeer>,
    /// Its peers that waited for a leader.
    pub fresh: Vec<FreshPeer>,
}

impl Adopted {
    /// The socket, and the rest.
    pub fn split(self) -> (std::net::UdpSocket, AdoptedHost) {
        (
            self.socket,
            AdoptedHost {
                host: self.host,
                epoch: self.epoch,
                kept: self.kept,
                fresh: self.fresh,
            },
        )
    }
}

impl std::fmt::Debug for Adopted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Adopted")
            .field("kept", &self.kept.len())
            .field("fresh", &self.fresh.len())
            .finish_non_exhaustive()
    }
}

/// An RCEnet peer kept through a leader change: its player is in the world on a zone node
/// under the previous leader's session.
#[derive(Debug)]
pub struct KeptPeer {
    /// The peer in the adopted host.
    pub peer: PeerId,
    /// Its address.
    pub addr: SocketAddr,
    /// Who its player is, where.
    pub who: KeptSession,
}

/// Serve RCEnet on `socket` (one of `shards` on the same port, non-blocking) until
/// `shutdown` turns true; with `adopted`, on the host (and socket) an edge of this process
/// served, its kept peers resumed in the world and its fresh ones opened.
pub async fn serve(
    socket: std::net::UdpSocket,
    shards: usize,
    shared: Arc<Shared>,
    doors: Arc<Doors>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
    adopted: Option<AdoptedHost>,
) {
    let (tx, mut cmds) = mpsc::channel(ENET_COMMANDS);
    let (host, epoch, kept, fresh) = match adopted {
        Some(a) => (a.host, a.epoch, a.kept, a.fresh),
        None => (
            Host::new(host_config(&shared.cfg, shards)),
            Instant::now(),
            Vec::new(),
            Vec::new(),
        ),
    };
    let mut t = HostTask {
        host,
        synced: Synced::default(),
        peers: HashMap::new(),
        pool: BytesMut::new(),
        epoch,
        shared,
        doors,
        tx,
    };
    for k in kept {
        t.resume(k);
    }
    for f in fresh {
        t.connected(f.peer, f.addr);
        for (channel, data) in f.packets {
            t.received(f.peer, channel, data, true);
        }
    }
    // The runtime does not watch the socket: it is read and written on the host's clock
    // (net::udp), one wake-up per flush window whatever the load.
    let mut buf = vec![0u8; 65_536];
    let mut outbox = Outbox::default();
    let mut timers = tokio::time::interval(Duration::from_millis(FLUSH_MS));
    timers.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut next_timers = 0u64;
    let mut next_metrics = 0u64;
    loop {
        tokio::select! {
            _ = timers.tick() => {}
            r = shutdown.changed() => {
                if r.is_err() || *shutdown.borrow() {
                    break;
                }
            }
        }
        // What arrived since the last window: datagrams, then the commands of the session
        // tasks, the hub and the node links (each bounded: a flood waits in the kernel's
        // buffer, which drops past it, and the host's flush still goes out).
        udp::read(&socket, &mut buf, READ_PER_TICK, |from, data| {
            t.datagram(from, data);
        });
        for _ in 0..COMMANDS_PER_TICK {
            match cmds.try_recv() {
                Ok(cmd) => t.command(cmd),
                Err(_) => break,
            }
        }
        let now = t.now();
        if now >= next_timers {
            next_timers = now + TIMER_MS;
            t.host.handle_timeout(now);
            t.closing(now);
        }
        t.events();
        t.flush(&socket, &mut outbox, now);
        if now >= next_metrics {
            next_metrics = now + METRICS_MS;
            t.sync_metrics();
        }
    }
    // Shutting down: every player is told, and the datagrams go out once.
    let ids: Vec<PeerId> = t.peers.keys().copied().collect();
    let now = t.now();
    for p in ids {
        t.kick(p);
        t.host.disconnect(now, p, close::SHUTDOWN);
    }
    t.flush(&socket, &mut outbox, now);
}

/// A host task's counters as last added to the gateway's metrics.
#[derive(Default)]
struct Synced {
    malformed: u64,
    half_open_refused: u64,
    half_open_expired: u64,
    cookies_sent: u64,
    cookies_connected: u64,
    cookies_bad: u64,
    cookies_refused: u64,
    timeouts: u64,
    retransmits: u64,
    throttled: u64,
    peers: u64,
    half_open: u64,
}

struct HostTask {
    host: Host,
    synced: Synced,
    peers: HashMap<PeerId, Peer>,
    /// Pooled buffer the forwarded positions are cut from (no allocation per datagram).
    pool: BytesMut,
    epoch: Instant,
    shared: Arc<Shared>,
    doors: Arc<Doors>,
    tx: mpsc::Sender<EnetCmd>,
}

impl HostTask {
    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Hands the host's datagrams to the socket (what does not fit waits in `outbox`).
    fn flush(&mut self, socket: &std::net::UdpSocket, outbox: &mut Outbox, now: u64) {
        let f = outbox.send_from(&mut self.host, socket, now);
        let m = &self.shared.metrics;
        Metrics::add(&m.enet_bytes_out, f.bytes);
        Metrics::add(&m.enet_send_dropped, f.failed + f.dropped);
    }

    fn datagram(&mut self, from: SocketAddr, data: &[u8]) {
        Metrics::add(&self.shared.metrics.enet_bytes_in, data.len());
        let now = self.now();
        self.host.handle_datagram(now, from, data);
        // Packets go to their session tasks as they come: a datagram may carry the end of
        // the handshake, then data (the original client's ACK + NewClient + login).
        self.events();
    }

    /// Adds what the host's counters gained since the last call to the gateway's metrics
    /// (several host tasks share them).
    fn sync_metrics(&mut self) {
        let s = self.host.stats();
        let now = Synced {
            // Datagrams ENet refuses: unreadable, for no peer, from the wrong address or
            // session, or whose commands fail.
            malformed: s
                .malformed
                .saturating_add(s.bad_session)
                .saturating_add(s.unknown_peer)
                .saturating_add(s.wrong_address)
                .saturating_add(s.command_errors),
            half_open_refused: s
                .half_open_refused_total
                .saturating_add(s.half_open_refused_per_ip),
            half_open_expired: s.half_open_expired,
            cookies_sent: s.cookies_sent,
            cookies_connected: s.cookie_connects,
            cookies_bad: s.bad_cookies,
            cookies_refused: s.cookies_refused,
            timeouts: s.timeouts,
            retransmits: s.retransmits,
            throttled: s.unreliable_throttled,
            peers: u64::try_from(self.host.connected_peers()).unwrap_or(u64::MAX),
            half_open: u64::try_from(self.host.half_open()).unwrap_or(u64::MAX),
        };
        let m = &self.shared.metrics;
        let before = std::mem::replace(&mut self.synced, now);
        let now = &self.synced;
        // Wrapping: the gauges (peers, half-open) also go down.
        let add = |c: &std::sync::atomic::AtomicU64, new: u64, old: u64| {
            c.fetch_add(new.wrapping_sub(old), Ordering::Relaxed);
        };
        add(&m.enet_malformed, now.malformed, before.malformed);
        add(
            &m.enet_half_open_refused,
            now.half_open_refused,
            before.half_open_refused,
        );
        add(
            &m.enet_half_open_expired,
            now.half_open_expired,
            before.half_open_expired,
        );
        add(&m.enet_cookies_sent, now.cookies_sent, before.cookies_sent);
        add(
            &m.enet_cookies_connected,
            now.cookies_connected,
            before.cookies_connected,
        );
        add(&m.enet_cookies_bad, now.cookies_bad, before.cookies_bad);
        add(
            &m.enet_cookies_refused,
            now.cookies_refused,
            before.cookies_refused,
        );
        add(&m.enet_timeouts, now.timeouts, before.timeouts);
        add(&m.enet_retransmits, now.retransmits, before.retransmits);
        add(&m.enet_throttled, now.throttled, before.throttled);
        add(&m.enet_peers, now.peers, before.peers);
        add(&m.enet_half_open, now.half_open, before.half_open);
    }

    fn events(&mut self) {
        while let Some(e) = self.host.poll_event() {
            match e {
                Event::Connect { peer, addr } => self.connected(peer, addr),
                Event::Receive {
                    peer,
                    channel,
                    data,
                    reliable,
                } => self.received(peer, channel, data, reliable),
                Event::Disconnect { peer, .. } => {
                    // The session task sees its queue close: the player is logged out
                    // (Realm Crafter's 201), each peer on its own. Its logout is in
                    // flight from now on, before the session task catches up.
                    if let Some(p) = self.peers.remove(&peer) {
                        self.shared.peer_gone(p.session);
                    }
                }
            }
        }
    }

    /// A peer finished ENet's handshake: the same doors as a QUIC connection (network
    /// rate, per-network cap, the lobby), then its session task.
    fn connected(&mut self, peer: PeerId, addr: SocketAddr) {
        let shared = self.shared.clone();
        let m = &shared.metrics;
        let refuse = |host: &mut Host, now: u64, c: &std::sync::atomic::AtomicU64| {
            Metrics::inc(c);
            host.disconnect_now(now, peer, 0);
        };
        let now = self.now();
        let now_ms = u64::try_from(shared.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        if shared.shutting_down.load(Ordering::Relaxed) {
            refuse(&mut self.host, now, &m.refused_shutting_down);
            return;
        }
        let net = peer_key(addr);
        if !shared.accounts().throttle.try_connect(net, now_ms) {
            refuse(&mut self.host, now, &m.refused_rate);
            return;
        }
        let session = shared.next_session();
        let slot = match ConnSlot::take(&shared, &self.doors, net, session, now_ms) {
            Ok(s) => s,
            Err(why) => {
                let c = match why {
                    NoSlot::PerIp => &m.refused_per_ip,
                    NoSlot::Full => &m.refused_full,
                    NoSlot::Lobby => &m.refused_lobby,
                };
                refuse(&mut self.host, now, c);
                return;
            }
        };
        Metrics::inc(&m.connections_accepted);
        Metrics::inc(&m.enet_connections);
        self.session(peer, addr, session, slot, None);
    }

    /// A peer this gateway's edge kept through the leader change: its session task starts
    /// in the world under the previous leader's session id (the zone node knows the player
    /// by it); kicked when there is no room.
    fn resume(&mut self, k: KeptPeer) {
        let KeptPeer { peer, addr, who } = k;
        let session = who.session;
        let Some(slot) = kept_slot(&self.shared, &self.doors, addr, session) else {
            self.kick(peer);
            let now = self.now();
            self.host.disconnect(now, peer, close::SHUTDOWN);
            return;
        };
        self.session(peer, addr, session, slot, Some(who));
    }

    /// A peer's entry and its session task.
    fn session(
        &mut self,
        peer: PeerId,
        addr: SocketAddr,
        session: u64,
        slot: ConnSlot,
        kept: Option<KeptSession>,
    ) {
        let shared = self.shared.clone();
        let (in_tx, in_rx) = mpsc::channel(INBOUND_PACKETS);
        let inbound_bytes = Arc::new(AtomicUsize::new(0));
        let queued = Arc::new(AtomicUsize::new(0));
        self.peers.insert(
            peer,
            Peer {
                session,
                positions: InputBudget::new(budgets(&shared.cfg), 0),
                inbound: Some(in_tx),
                inbound_bytes: inbound_bytes.clone(),
                queued: queued.clone(),
                closing: None,
            },
        );
        let link = EnetLink {
            peer,
            addr,
            tx: self.tx.clone(),
        };
        let span = match kept {
            Some(_) => {
                tracing::info_span!("session", session, peer = %addr, transport = "enet", kept = true)
            }
            None => tracing::info_span!("session", session, peer = %addr, transport = "enet"),
        };
        tokio::spawn(
            session_task(
                shared,
                session,
                link,
                in_rx,
                inbound_bytes,
                queued,
                slot,
                kept,
            )
            .instrument(span),
        );
    }

    fn received(&mut self, peer: PeerId, channel: u8, data: Bytes, reliable: bool) {
        let shared = self.shared.clone();
        let m = &shared.metrics;
        Metrics::inc(&m.enet_packets_in);
        let Some(&ty) = data.first() else {
            Metrics::inc(&m.enet_bad_packets);
            return;
        };
        if (200..=202).contains(&ty) {
            // The server's own messages (PlayerTimedOut, PlayerHasLeft, PlayerKicked): the
            // original server took them from anyone; never from the network here.
            Metrics::inc(&m.enet_reserved_types);
            return;
        }
        if !reliable {
            if ty == ids::P_STANDARD_UPDATE && channel == CHANNEL_UPDATES {
                self.position(peer, &data);
            } else {
                // Realm Crafter sends only P_StandardUpdate unreliably.
                Metrics::inc(&m.enet_bad_packets);
            }
            return;
        }
        let Some(p) = self.peers.get(&peer) else {
            return;
        };
        let Some(tx) = &p.inbound else { return };
        let len = data.len();
        let before = p.inbound_bytes.fetch_add(len, Ordering::Relaxed);
        let refused = if before.saturating_add(len) > INBOUND_BYTES {
            true
        } else {
            match tx.try_send(Inbound(data)) {
                Ok(()) => false,
                Err(mpsc::error::TrySendError::Full(_)) => true,
                Err(mpsc::error::TrySendError::Closed(_)) => {
                    // The session ended (a kick, a logout): its close is on its way to this
                    // task; the packet is moot.
                    p.inbound_bytes.fetch_sub(len, Ordering::Relaxed);
                    return;
                }
            }
        };
        if refused {
            p.inbound_bytes.fetch_sub(len, Ordering::Relaxed);
            // A reliable packet cannot be dropped without breaking the stream: the peer
            // sends faster than its session is served.
            Metrics::inc(&m.enet_inbound_overflows);
            tracing::info!(?peer, "RCEnet peer flooding its session: disconnecting");
            self.close(peer, true, close::RATE_LIMITED);
        }
    }

    /// A `P_StandardUpdate` (`[14][payload]`): against the player's position budget, then
    /// as an rc/1 frame `[session][len u16][14][payload]` straight to its zone node, as a
    /// QUIC connection's datagram goes (`Conn::datagram`).
    #[doc(alias = "P_StandardUpdate")]
    fn position(&mut self, peer: PeerId, data: &[u8]) {
        let shared = self.shared.clone();
        let m = &shared.metrics;
        Metrics::add(&m.bytes_up_datagram, data.len() + 2);
        let now_ms = u64::try_from(shared.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let Some(p) = self.peers.get_mut(&peer) else {
            return;
        };
        if p.closing.is_some() {
            return;
        }
        let session = p.session;
        match p.positions.admit_positions(now_ms, 1) {
            Verdict::Admit => {}
            Verdict::Drop(a) => {
                if let Some(c) = m.input_dropped.get(a.index()) {
                    Metrics::inc(c);
                }
                return;
            }
            Verdict::Kick(a) => {
                if let Some(c) = m.input_dropped.get(a.index()) {
                    Metrics::inc(c);
                }
                Metrics::inc(&m.input_kicks);
                tracing::info!(action = a.name(), "input flood: disconnecting the player");
                if let Some(h) = shared.clients.get(&session) {
                    h.close(close::RATE_LIMITED, &format!("input flood ({a})"));
                }
                return;
            }
        }
        let payload = data.get(1..).unwrap_or(&[]);
        let Ok(len) = u16::try_from(payload.len() + 1) else {
            Metrics::inc(&m.bad_datagrams);
            return;
        };
        // The rc/1 frame: `[len u16][14][payload]`.
        let head = len.to_le_bytes();
        let parts: [&[u8]; 3] = [&head, &[ids::P_STANDARD_UPDATE], payload];
        to_node(&shared, &mut self.pool, session, &parts);
    }

    fn command(&mut self, cmd: EnetCmd) {
        match cmd {
            EnetCmd::Frames {
                peer,
                frames,
                counted,
            } => {
                if counted && let Some(p) = self.peers.get(&peer) {
                    p.queued.fetch_sub(frames.len(), Ordering::Relaxed);
                }
                self.frames(peer, &frames, true);
            }
            EnetCmd::Datagram { peer, frames } => self.frames(peer, &frames, false),
            EnetCmd::Close { peer, kick, code } => self.close(peer, kick, code),
        }
    }

    /// rc/1 frames to the peer, one ENet packet `[type][payload]` each: reliable on
    /// channel 1, or (datagrams) only `P_StandardUpdate`, unreliable on channel 2. Each
    /// packet is a slice of `frames` (a frame's `[type][payload]` is the RC packet): no
    /// copy.
    fn frames(&mut self, peer: PeerId, frames: &Bytes, reliable: bool) {
        if self.peers.get(&peer).is_none_or(|p| p.closing.is_some()) {
            return;
        }
        let shared = self.shared.clone();
        let m = &shared.metrics;
        let channel = if reliable {
            CHANNEL_RELIABLE
        } else {
            CHANNEL_UPDATES
        };
        // Counted once per call: the shards share the counter's cache line.
        let mut sent = 0usize;
        let mut at = 0usize;
        while at < frames.len() {
            let Some(&[lo, hi]) = frames.get(at..at + 2) else {
                Metrics::add(&m.enet_packets_out, sent);
                Metrics::inc(&m.datagrams_down_dropped);
                return;
            };
            let len = usize::from(u16::from_le_bytes([lo, hi]));
            let (start, end) = (at + 2, at + 2 + len);
            at = end;
            let Some(&ty) = frames.get(start) else {
                Metrics::add(&m.enet_packets_out, sent);
                Metrics::inc(&m.datagrams_down_dropped);
                return;
            };
            if end > frames.len() || len == 0 {
                Metrics::add(&m.enet_packets_out, sent);
                Metrics::inc(&m.datagrams_down_dropped);
                return;
            }
            // The original client's menu reads a type-0 packet as "connection lost"; a
            // datagram carries positions only.
            if ty == 0 || (!reliable && ty != ids::P_STANDARD_UPDATE) {
                continue;
            }
            // Copied, not shared: a broadcast's buffer goes to many peers on several
            // host tasks, and counting references on it costs more than the few bytes.
            let packet = frames.get(start..end).unwrap_or_default();
            match self.host.send(peer, channel, packet, reliable) {
                Ok(()) => sent += 1,
                Err(_) if !reliable => Metrics::inc(&m.datagrams_down_dropped),
                Err(_) => {
                    // More unacknowledged than `client_queue_bytes`: it cannot keep up.
                    Metrics::inc(&m.client_queue_overflows);
                    tracing::info!(?peer, "RCEnet client too slow: disconnecting");
                    let now = self.now();
                    self.host.disconnect_now(now, peer, close::TOO_SLOW);
                    self.peers.remove(&peer);
                    break;
                }
            }
        }
        Metrics::add(&m.enet_packets_out, sent);
    }

    /// Sends `P_KickedPlayer` (60): the only way to tell the original client it is out.
    fn kick(&mut self, peer: PeerId) {
        let packet = ServerPacket::KickedPlayer(KickedPlayer {}).to_bytes();
        let _ = self.host.send(peer, CHANNEL_RELIABLE, &packet, true);
    }

    /// Begins closing a peer: its session task is let go (it logs the player out), a
    /// kick is sent when asked, and the disconnect follows once it is delivered.
    fn close(&mut self, peer: PeerId, kick: bool, code: u32) {
        let now = self.now();
        let Some(p) = self.peers.get_mut(&peer) else {
            return;
        };
        if p.closing.is_some() {
            return;
        }
        p.inbound = None;
        p.closing = Some((now + KICK_GRACE_MS, false, code));
        if kick {
            self.kick(peer);
        }
    }

    /// Closing peers: the disconnect once their last packets are acknowledged (or the
    /// grace passed); forgotten if they never acknowledge it.
    fn closing(&mut self, now: u64) {
        let mut gone = Vec::new();
        for (&peer, p) in &mut self.peers {
            let Some((at, sent, code)) = p.closing else {
                continue;
            };
            if !sent && (now >= at || self.host.outgoing_bytes(peer) == 0) {
                self.host.disconnect(now, peer, code);
                p.closing = Some((now + DISCONNECT_GRACE_MS, true, code));
            } else if sent && now >= at {
                self.host.reset(peer);
                gone.push(peer);
            }
        }
        for p in gone {
            self.peers.remove(&p);
        }
    }
}

/// One RCEnet peer's session: the QUIC connection task's loop, fed by the host task. A
/// kept session (`kept`) starts in the world.
#[allow(clippy::too_many_arguments)]
async fn session_task(
    shared: Arc<Shared>,
    session_id: u64,
    link: EnetLink,
    mut inbound: mpsc::Receiver<Inbound>,
    inbound_bytes: Arc<AtomicUsize>,
    queued: Arc<AtomicUsize>,
    slot: ConnSlot,
    kept: Option<KeptSession>,
) {
    let peer = link.addr;
    let login = tracing::info_span!(parent: None, "session.login", session = session_id,
        peer = %peer, transport = "enet", account = tracing::field::Empty,
        character = tracing::field::Empty, outcome = tracing::field::Empty);
    let Opened {
        mut c,
        mut rx,
        lingering,
    } = open(
        &shared,
        session_id,
        peer,
        ClientLink::Enet(link.clone()),
        Out::Enet(link.clone()),
        slot,
        login,
        false,
        queued.clone(),
    );
    if let Some(k) = kept {
        c.adopt(k);
    }
    let end: End = loop {
        let (logged_in, in_game) = (c.is_logged_in(), c.in_game());
        tokio::select! {
            end = lingering.due(&shared, logged_in, in_game) => break Some(end),
            () = tokio::time::sleep(Duration::from_millis(5)), if !c.may_read() => {}
            m = inbound.recv(), if c.may_read() => match m {
                Some(Inbound(p)) => {
                    inbound_bytes.fetch_sub(p.len(), Ordering::Relaxed);
                    Metrics::add(&shared.metrics.bytes_up_stream, p.len());
                    let ty = p.first().copied().unwrap_or(0);
                    let end = c.frame(ty, p.get(1..).unwrap_or(&[])).await;
                    c.flush_batch();
                    if let Some(end) = end {
                        break end;
                    }
                }
                // The peer disconnected or timed out.
                None => break None,
            },
            o = rx.recv() => match o {
                Some(ClientOut::Frames(b)) => {
                    Metrics::inc(&shared.metrics.frames_down);
                    Metrics::add(&shared.metrics.bytes_down_stream, b.len());
                    let sent = link.frames(b.clone()).await;
                    queued.fetch_sub(b.len(), Ordering::Relaxed);
                    if sent.is_err() {
                        break None;
                    }
                }
                Some(ClientOut::Close { code, reason }) => break Some((code, reason)),
                None => break None,
            },
        }
    };
    c.ended();
    let kick = end
        .as_ref()
        .is_some_and(|(code, _)| *code != close::NORMAL && *code != close::KICKED);
    if let Some((code, reason)) = &end {
        tracing::debug!(code, %reason, "closing");
    }
    let code = end.as_ref().map_or(close::NORMAL, |(code, _)| *code);
    // Waits for room: the host must hear of it (it forgets the peer otherwise only when
    // the peer goes silent).
    let _ = link
        .tx
        .send(EnetCmd::Close {
            peer: link.peer,
            kick,
            code,
        })
        .await;
}
