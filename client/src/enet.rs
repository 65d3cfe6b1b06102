//! The SDK's RCEnet transport (ENet 1.1, what Realm Crafter's own clients speak): an
//! [`EnetEndpoint`] is one UDP socket and one client [`rcenet::Host`] driven by one task,
//! shared by any number of connections (a bot swarm puts many on one socket, as it does
//! with QUIC endpoints). It passes RC packets `[type][payload]` between the host and each
//! [`Connection`](crate::Connection): reliable on channel 1, `P_StandardUpdate` unreliable
//! on channel 2, as the original client does.

use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use bytes::Bytes;
use rcenet::{DisconnectReason, Event, Host, HostConfig, PeerId};
use tokio::net::UdpSocket;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use crate::error::{ClientError, CloseCode, CloseReason};

/// The channel of reliable RC packets.
pub const CHANNEL_RELIABLE: u8 = 1;
/// The channel of `P_StandardUpdate`.
pub const CHANNEL_UPDATES: u8 = 2;
/// Channels the original client asks for.
pub const CHANNELS: u8 = 254;
/// Commands each connection may have queued for the task before its sends fail (the
/// task's queue holds this many per connection the endpoint takes).
const COMMANDS: usize = 4_096;
/// Batches (the packets of one datagram) the task may queue for a connection; a
/// connection that lets more pile up is disconnected (it fell behind: the shared socket
/// cannot stop for one connection).
const INBOUND: usize = 1_024;
/// The task's wake-up when ENet has nothing scheduled (ms); also how often it looks for
/// connections dropped without a close and publishes counters.
const IDLE_WAKE_MS: u64 = 100;
/// Datagrams read per wake-up before the task runs timers and sends.
const READ_BURST: usize = 256;
/// Commands taken per wake-up.
const COMMAND_BURST: usize = 4_096;
/// How long a graceful close waits for the server's acknowledgement (ms).
const CLOSE_WAIT_MS: u64 = 500;

/// Something for the endpoint's task.
enum Cmd {
    /// Open a connection.
    Connect {
        addr: SocketAddr,
        deadline: Instant,
        timeout: Duration,
        send_new_client: bool,
        /// Silence after which the connection counts as lost.
        idle: Duration,
        reply: oneshot::Sender<Result<Parts, ClientError>>,
    },
    /// One RC packet.
    Send {
        peer: PeerId,
        channel: u8,
        data: Vec<u8>,
        reliable: bool,
    },
    /// A graceful disconnect carrying `data`.
    Close { peer: PeerId, data: u32 },
    /// The connection was dropped: an immediate disconnect.
    Drop(PeerId),
}

/// One RC packet from the server.
pub(crate) struct Packet {
    /// `[type][payload]`.
    pub data: Bytes,
    /// Whether it came reliably.
    pub reliable: bool,
}

/// An RCEnet connection's UDP traffic so far (its own datagrams, also on a shared
/// endpoint).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EnetCounts {
    /// Bytes of datagrams sent.
    pub bytes_up: u64,
    /// Bytes of datagrams received.
    pub bytes_down: u64,
    /// Datagrams sent.
    pub datagrams_up: u64,
    /// Datagrams received.
    pub datagrams_down: u64,
}

/// The counters the task publishes for one connection.
#[derive(Debug, Default)]
struct Counts([std::sync::atomic::AtomicU64; 4]);

impl Counts {
    fn set(&self, t: &rcenet::PeerTraffic) {
        for (c, v) in self
            .0
            .iter()
            .zip([t.bytes_out, t.bytes_in, t.datagrams_out, t.datagrams_in])
        {
            c.store(v, Ordering::Relaxed);
        }
    }

    fn get(&self) -> EnetCounts {
        let [a, b, c, d] = &self.0;
        EnetCounts {
            bytes_up: a.load(Ordering::Relaxed),
            bytes_down: b.load(Ordering::Relaxed),
            datagrams_up: c.load(Ordering::Relaxed),
            datagrams_down: d.load(Ordering::Relaxed),
        }
    }
}

/// What the task hands a connection once its handshake completed.
struct Parts {
    peer: PeerId,
    inbound: mpsc::Receiver<Vec<Packet>>,
    closed: watch::Receiver<Option<CloseReason>>,
    rtt_ms: Arc<AtomicU32>,
    counts: Arc<Counts>,
}

/// One UDP socket and one ENet client host, shared by many RCEnet connections
/// ([`ConnectOptions::enet_endpoint`](crate::ConnectOptions::enet_endpoint)). Cheap to
/// clone; its task ends once every clone and every connection made through it is gone.
#[derive(Clone, Debug)]
pub struct EnetEndpoint {
    cmd: mpsc::Sender<Cmd>,
    local: SocketAddr,
}

impl EnetEndpoint {
    /// Binds a UDP socket on `bind` (with [`SOCKET_BUFFER`](crate::SOCKET_BUFFER)-sized
    /// buffers) for at most `connections` connections at once (1..=32,766) and starts its
    /// task. Call inside a Tokio runtime.
    pub fn bind(bind: SocketAddr, connections: usize) -> Result<Self, ClientError> {
        let std = std::net::UdpSocket::bind(bind).map_err(ClientError::Bind)?;
        let sock = socket2::Socket::from(std);
        let _ = sock.set_recv_buffer_size(crate::SOCKET_BUFFER);
        let _ = sock.set_send_buffer_size(crate::SOCKET_BUFFER);
        let std: std::net::UdpSocket = sock.into();
        std.set_nonblocking(true).map_err(ClientError::Bind)?;
        let socket = UdpSocket::from_std(std).map_err(ClientError::Bind)?;
        let local = socket.local_addr().map_err(ClientError::Bind)?;
        let connections = connections.clamp(1, 0x7FFE);
        let (cmd, cmds) = mpsc::channel(COMMANDS.saturating_mul(connections));
        let host = Host::new(HostConfig {
            max_peers: connections,
            ..HostConfig::client()
        });
        let driver = Driver {
            host,
            socket,
            epoch: Instant::now(),
            cmds,
            peers: HashMap::new(),
            pending: HashMap::new(),
            next_session: session_seed(),
            swept: Instant::now(),
        };
        tokio::spawn(driver.run());
        Ok(Self { cmd, local })
    }

    /// The socket's local address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }
}

/// The connection's side of the endpoint's task. Dropping it disconnects at once.
pub(crate) struct EnetTransport {
    peer: PeerId,
    cmd: mpsc::Sender<Cmd>,
    inbound: mpsc::Receiver<Vec<Packet>>,
    closed: watch::Receiver<Option<CloseReason>>,
    rtt_ms: Arc<AtomicU32>,
    counts: Arc<Counts>,
    remote: SocketAddr,
    /// Set once `close` asked for a graceful disconnect (no immediate one on drop).
    closing: bool,
}

/// A first session value, as the original client would choose it (MSVC's `rand()` is
/// below 0x8000), drawn from the clock and the process so that two clients of one machine
/// differ; an endpoint's connections then take the next values.
fn session_seed() -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(7_919, Ordering::Relaxed);
    (t ^ std::process::id().rotate_left(16) ^ n) & 0x7FFF
}

impl EnetTransport {
    /// Connects to `addr` within `timeout` (ENet's handshake) through `endpoint` (a new
    /// one-connection endpoint when `None`), then sends `NewClient` when asked, as the
    /// original client's DLL does.
    pub(crate) async fn connect(
        endpoint: Option<&EnetEndpoint>,
        addr: SocketAddr,
        timeout: Duration,
        send_new_client: bool,
        idle: Duration,
    ) -> Result<Self, ClientError> {
        let own;
        let endpoint = match endpoint {
            Some(e) => e,
            None => {
                let bind = if addr.is_ipv4() {
                    SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0))
                } else {
                    SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0))
                };
                own = EnetEndpoint::bind(bind, 1)?;
                &own
            }
        };
        let (reply, answer) = oneshot::channel();
        let deadline = Instant::now() + timeout;
        endpoint
            .cmd
            .send(Cmd::Connect {
                addr,
                deadline,
                timeout,
                send_new_client,
                idle,
                reply,
            })
            .await
            .map_err(|_| ClientError::Closed(CloseReason::Local))?;
        let parts = match tokio::time::timeout_at(deadline + Duration::from_secs(1), answer).await {
            Ok(Ok(r)) => r?,
            Ok(Err(_)) => return Err(ClientError::Closed(CloseReason::Local)),
            Err(_) => return Err(ClientError::ConnectTimeout(timeout)),
        };
        Ok(Self {
            peer: parts.peer,
            cmd: endpoint.cmd.clone(),
            inbound: parts.inbound,
            closed: parts.closed,
            rtt_ms: parts.rtt_ms,
            counts: parts.counts,
            remote: addr,
            closing: false,
        })
    }

    /// Queues one RC packet `[type][payload]`.
    pub(crate) fn send(
        &self,
        channel: u8,
        data: Vec<u8>,
        reliable: bool,
    ) -> Result<(), ClientError> {
        if let Some(r) = self.close_reason() {
            return Err(ClientError::Closed(r));
        }
        self.cmd
            .try_send(Cmd::Send {
                peer: self.peer,
                channel,
                data,
                reliable,
            })
            .map_err(|e| match e {
                mpsc::error::TrySendError::Full(_) => {
                    ClientError::Stream("RCEnet send queue full".into())
                }
                mpsc::error::TrySendError::Closed(_) => ClientError::Closed(self.reason()),
            })
    }

    /// The packets of the next datagram (at least one), or why the connection ended.
    /// Cancel-safe.
    pub(crate) async fn recv_batch(&mut self) -> Result<Vec<Packet>, CloseReason> {
        loop {
            match self.inbound.recv().await {
                Some(batch) if batch.is_empty() => {}
                Some(batch) => return Ok(batch),
                None => return Err(self.reason()),
            }
        }
    }

    fn reason(&self) -> CloseReason {
        self.closed
            .borrow()
            .clone()
            .unwrap_or_else(|| CloseReason::Transport("RCEnet transport ended".into()))
    }

    /// Why it closed, `None` while open.
    pub(crate) fn close_reason(&self) -> Option<CloseReason> {
        self.closed.borrow().clone()
    }

    /// Waits until the connection closed.
    pub(crate) async fn closed(&self) -> CloseReason {
        let mut rx = self.closed.clone();
        loop {
            if let Some(r) = rx.borrow().clone() {
                return r;
            }
            if rx.changed().await.is_err() {
                return rx.borrow().clone().unwrap_or(CloseReason::Local);
            }
        }
    }

    /// ENet's round-trip estimate.
    pub(crate) fn rtt(&self) -> Duration {
        Duration::from_millis(u64::from(self.rtt_ms.load(Ordering::Relaxed)))
    }

    /// The UDP traffic so far.
    pub(crate) fn counts(&self) -> EnetCounts {
        self.counts.get()
    }

    /// The server's address.
    pub(crate) fn remote_address(&self) -> SocketAddr {
        self.remote
    }

    /// A graceful disconnect with `code` as its data; waits (bounded) for it to end.
    pub(crate) async fn close(mut self, code: CloseCode, grace: Duration) {
        let data = u32::try_from(code.as_u64()).unwrap_or(u32::MAX);
        self.closing = true;
        if self
            .cmd
            .send(Cmd::Close {
                peer: self.peer,
                data,
            })
            .await
            .is_err()
        {
            return;
        }
        let _ = tokio::time::timeout(grace, self.closed()).await;
    }
}

impl Drop for EnetTransport {
    fn drop(&mut self) {
        if !self.closing && self.closed.borrow().is_none() {
            // If the task's queue is full, its sweep finds the dropped connection.
            let _ = self.cmd.try_send(Cmd::Drop(self.peer));
        }
    }
}

/// A connection the task serves.
struct Live {
    inbound: mpsc::Sender<Vec<Packet>>,
    closed: watch::Sender<Option<CloseReason>>,
    rtt_ms: Arc<AtomicU32>,
    counts: Arc<Counts>,
    /// After a local close: when the task stops waiting for the acknowledgement.
    closing: Option<Instant>,
    /// Silence after which it counts as lost (the server pings an idle client every
    /// half second, so only a server gone quiet is this silent).
    idle: Duration,
    /// When a datagram of the server last came, and how many had come by then.
    heard: (Instant, u64),
    /// Packets of this turn, handed over at its end.
    batch: Vec<Packet>,
}

impl Live {
    /// Publishes the host's round trip and traffic counts of `peer` to its connection.
    fn publish(&self, host: &Host, peer: PeerId) {
        if let Some(rtt) = host.peer_rtt(peer) {
            self.rtt_ms.store(rtt, Ordering::Relaxed);
        }
        if let Some(t) = host.peer_traffic(peer) {
            self.counts.set(&t);
        }
    }
}

/// A connection in its handshake.
struct Pending {
    deadline: Instant,
    /// The caller's limit, for its error.
    timeout: Duration,
    send_new_client: bool,
    idle: Duration,
    reply: oneshot::Sender<Result<Parts, ClientError>>,
}

struct Driver {
    host: Host,
    socket: UdpSocket,
    epoch: Instant,
    cmds: mpsc::Receiver<Cmd>,
    peers: HashMap<PeerId, Live>,
    pending: HashMap<PeerId, Pending>,
    next_session: u32,
    /// The last sweep for dropped connections.
    swept: Instant,
}

impl Driver {
    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    async fn run(mut self) {
        let mut buf = vec![0u8; 65_536];
        loop {
            let now = self.now();
            let mut wake = self.epoch
                + Duration::from_millis(
                    self.host
                        .poll_timeout()
                        .unwrap_or(u64::MAX)
                        .min(now.saturating_add(IDLE_WAKE_MS)),
                );
            for d in self
                .pending
                .values()
                .map(|p| p.deadline)
                .chain(self.peers.values().filter_map(|l| l.closing))
            {
                wake = wake.min(d);
            }
            tokio::select! {
                r = self.socket.readable() => {
                    if r.is_ok() {
                        self.read(&mut buf);
                    }
                }
                c = self.cmds.recv() => match c {
                    Some(c) => {
                        self.apply(c);
                        for _ in 1..COMMAND_BURST {
                            let Ok(c) = self.cmds.try_recv() else { break };
                            self.apply(c);
                        }
                    }
                    None => {
                        // Every endpoint handle and connection is gone.
                        let now = self.now();
                        let ids: Vec<PeerId> = self.host.peer_ids().collect();
                        for p in ids {
                            self.host.disconnect_now(now, p, 0);
                        }
                        self.flush().await;
                        return;
                    }
                },
                () = tokio::time::sleep_until(wake) => {}
            }
            let now = self.now();
            self.host.handle_timeout(now);
            self.dispatch();
            self.deadlines();
            self.flush().await;
        }
    }

    /// Reads what the socket holds (at most [`READ_BURST`] datagrams).
    fn read(&mut self, buf: &mut [u8]) {
        for _ in 0..READ_BURST {
            match self.socket.try_recv_from(buf) {
                Ok((n, from)) => {
                    let now = self.now();
                    // One allocation per datagram; its packets are slices of it.
                    let data = Bytes::copy_from_slice(buf.get(..n).unwrap_or(&[]));
                    self.host.handle_datagram_bytes(now, from, data);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                // ICMP errors and the like: the next read goes on.
                Err(_) => {}
            }
        }
    }

    fn apply(&mut self, c: Cmd) {
        let now = self.now();
        match c {
            Cmd::Connect {
                addr,
                deadline,
                timeout,
                send_new_client,
                idle,
                reply,
            } => {
                let session = self.next_session;
                self.next_session = (self.next_session + 1) & 0x7FFF;
                match self.host.connect(now, addr, CHANNELS, session) {
                    Ok(peer) => {
                        self.pending.insert(
                            peer,
                            Pending {
                                deadline,
                                timeout,
                                send_new_client,
                                idle,
                                reply,
                            },
                        );
                    }
                    Err(e) => {
                        let _ =
                            reply.send(Err(ClientError::Config(format!("RCEnet connect: {e}"))));
                    }
                }
            }
            Cmd::Send {
                peer,
                channel,
                data,
                reliable,
            } => {
                if self.peers.get(&peer).is_some_and(|l| l.closing.is_none()) {
                    let _ = self.host.send(peer, channel, &data, reliable);
                }
            }
            Cmd::Close { peer, data } => {
                if let Some(l) = self.peers.get_mut(&peer).filter(|l| l.closing.is_none()) {
                    self.host.disconnect(now, peer, data);
                    l.closing = Some(Instant::now() + Duration::from_millis(CLOSE_WAIT_MS));
                }
            }
            Cmd::Drop(peer) => self.end(peer, CloseReason::Local, true),
        }
    }

    /// Ends a connection: tells its side why, and drops the ENet peer at once when asked.
    fn end(&mut self, peer: PeerId, why: CloseReason, disconnect: bool) {
        if let Some(l) = self.peers.remove(&peer) {
            if disconnect {
                let now = self.now();
                self.host.disconnect_now(now, peer, 0);
            }
            l.publish(&self.host, peer);
            let _ = l.closed.send(Some(why));
        }
    }

    /// Hands the host's events to their connections.
    fn dispatch(&mut self) {
        let mut touched = Vec::new();
        while let Some(e) = self.host.poll_event() {
            match e {
                Event::Receive {
                    peer,
                    data,
                    reliable,
                    ..
                } => {
                    if let Some(l) = self.peers.get_mut(&peer) {
                        if l.batch.is_empty() {
                            touched.push(peer);
                        }
                        l.batch.push(Packet { data, reliable });
                    }
                }
                Event::Connect { peer, .. } => self.connected(peer),
                Event::Disconnect { peer, reason } => {
                    if let Some(p) = self.pending.remove(&peer) {
                        let why = match reason {
                            DisconnectReason::Timeout => CloseReason::TimedOut,
                            _ => CloseReason::Transport(
                                "the server refused the RCEnet connection".into(),
                            ),
                        };
                        let _ = p.reply.send(Err(ClientError::Handshake(why)));
                        continue;
                    }
                    let closing = self.peers.get(&peer).is_some_and(|l| l.closing.is_some());
                    let why = match reason {
                        DisconnectReason::Graceful(code) if !closing => CloseReason::Server {
                            code: CloseCode::from(code),
                            reason: String::new(),
                        },
                        DisconnectReason::Graceful(_) => CloseReason::Local,
                        DisconnectReason::Timeout => CloseReason::TimedOut,
                        other => CloseReason::Transport(format!("{other:?}")),
                    };
                    // Packets that came before the disconnect are still delivered.
                    self.hand_over(peer);
                    self.end(peer, why, false);
                }
            }
        }
        for peer in touched {
            self.hand_over(peer);
        }
    }

    /// Gives a connection its packets of this turn.
    fn hand_over(&mut self, peer: PeerId) {
        let Some(l) = self.peers.get_mut(&peer) else {
            return;
        };
        if l.batch.is_empty() {
            return;
        }
        let batch = std::mem::take(&mut l.batch);
        l.publish(&self.host, peer);
        match l.inbound.try_send(batch) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => self.end(
                peer,
                CloseReason::Transport(
                    "the connection fell behind (its received packets were not read)".into(),
                ),
                true,
            ),
            Err(mpsc::error::TrySendError::Closed(_)) => self.end(peer, CloseReason::Local, true),
        }
    }

    /// A handshake completed.
    fn connected(&mut self, peer: PeerId) {
        let Some(p) = self.pending.remove(&peer) else {
            return;
        };
        if p.send_new_client {
            // NewClient (type 0, empty), reliable on channel 1.
            let _ = self.host.send(peer, CHANNEL_RELIABLE, &[0], true);
        }
        let (in_tx, in_rx) = mpsc::channel(INBOUND);
        let (closed_tx, closed_rx) = watch::channel(None);
        let rtt_ms = Arc::new(AtomicU32::new(self.host.peer_rtt(peer).unwrap_or(500)));
        let counts = Arc::new(Counts::default());
        let parts = Parts {
            peer,
            inbound: in_rx,
            closed: closed_rx,
            rtt_ms: rtt_ms.clone(),
            counts: counts.clone(),
        };
        if p.reply.send(Ok(parts)).is_err() {
            // The caller gave up (its connect was cancelled).
            let now = self.now();
            self.host.disconnect_now(now, peer, 0);
            return;
        }
        self.peers.insert(
            peer,
            Live {
                inbound: in_tx,
                closed: closed_tx,
                rtt_ms,
                counts,
                closing: None,
                idle: p.idle,
                heard: (Instant::now(), 0),
                batch: Vec::new(),
            },
        );
    }

    /// Handshakes past their deadline, closes past their wait, and (every
    /// [`IDLE_WAKE_MS`]) connections dropped without a word; publishes counters.
    fn deadlines(&mut self) {
        let at = Instant::now();
        let late: Vec<PeerId> = self
            .pending
            .iter()
            .filter(|(_, p)| p.deadline <= at || p.reply.is_closed())
            .map(|(&id, _)| id)
            .collect();
        for peer in late {
            if let Some(p) = self.pending.remove(&peer) {
                let now = self.now();
                self.host.disconnect_now(now, peer, 0);
                let _ = p.reply.send(Err(ClientError::ConnectTimeout(p.timeout)));
            }
        }
        let closed: Vec<PeerId> = self
            .peers
            .iter()
            .filter(|(_, l)| l.closing.is_some_and(|c| c <= at))
            .map(|(&id, _)| id)
            .collect();
        for peer in closed {
            self.end(peer, CloseReason::Local, true);
        }
        if at.duration_since(self.swept) < Duration::from_millis(IDLE_WAKE_MS) {
            return;
        }
        self.swept = at;
        let gone: Vec<PeerId> = self
            .peers
            .iter()
            .filter(|(_, l)| l.inbound.is_closed() && l.closing.is_none())
            .map(|(&id, _)| id)
            .collect();
        for peer in gone {
            self.end(peer, CloseReason::Local, true);
        }
        // A server that went silent (killed, or restarted without this connection's
        // state) is noticed after the idle timeout, as QUIC's is, not ENet's own (up to
        // 30 s of resends).
        let mut silent = Vec::new();
        for (&peer, l) in &mut self.peers {
            l.publish(&self.host, peer);
            let came = self.host.peer_traffic(peer).map_or(0, |t| t.datagrams_in);
            if came != l.heard.1 {
                l.heard = (at, came);
            } else if l.closing.is_none() && at.duration_since(l.heard.0) >= l.idle {
                silent.push(peer);
            }
        }
        for peer in silent {
            self.end(peer, CloseReason::TimedOut, true);
        }
    }

    async fn flush(&mut self) {
        let now = self.now();
        while let Some(t) = self.host.poll_transmit(now) {
            let _ = self.socket.send_to(&t.data, t.dest).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-socket ENet 1.1 server on loopback that echoes each packet back to its
    /// sender (reliable, channel 1) and reports what it saw.
    async fn echo_server() -> (SocketAddr, mpsc::UnboundedReceiver<(SocketAddr, Event)>) {
        let (addr, rx, _) = echo_server_task().await;
        (addr, rx)
    }

    /// [`echo_server`], with its task (abort it to kill the server without a word).
    async fn echo_server_task() -> (
        SocketAddr,
        mpsc::UnboundedReceiver<(SocketAddr, Event)>,
        tokio::task::JoinHandle<()>,
    ) {
        let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = socket.local_addr().unwrap();
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            let epoch = Instant::now();
            let now = || u64::try_from(epoch.elapsed().as_millis()).unwrap();
            let mut host = Host::new(HostConfig::default());
            let mut buf = vec![0u8; 65_536];
            loop {
                if let Ok(Ok((n, from))) =
                    tokio::time::timeout(Duration::from_millis(10), socket.recv_from(&mut buf))
                        .await
                {
                    host.handle_datagram(now(), from, &buf[..n]);
                }
                host.handle_timeout(now());
                while let Some(e) = host.poll_event() {
                    if let Event::Receive { peer, data, .. } = &e {
                        host.send(*peer, CHANNEL_RELIABLE, data, true).unwrap();
                    }
                    let from = match &e {
                        Event::Receive { peer, .. }
                        | Event::Connect { peer, .. }
                        | Event::Disconnect { peer, .. } => host.peer_addr(*peer),
                    };
                    let _ = tx.send((from.unwrap_or(addr), e));
                }
                while let Some(t) = host.poll_transmit(now()) {
                    socket.send_to(&t.data, t.dest).await.unwrap();
                }
            }
        });
        (addr, rx, task)
    }

    async fn packet(t: &mut EnetTransport) -> Vec<u8> {
        let batch = tokio::time::timeout(Duration::from_secs(5), t.recv_batch())
            .await
            .unwrap()
            .unwrap();
        batch[0].data.to_vec()
    }

    #[tokio::test]
    async fn connections_sharing_an_endpoint_get_their_own_packets_and_counts() {
        let (server, mut seen) = echo_server().await;
        let endpoint = EnetEndpoint::bind("127.0.0.1:0".parse().unwrap(), 2).unwrap();
        let timeout = Duration::from_secs(5);
        let connect = || {
            EnetTransport::connect(
                Some(&endpoint),
                server,
                timeout,
                false,
                Duration::from_secs(30),
            )
        };
        let mut a = connect().await.unwrap();
        let mut b = connect().await.unwrap();
        // The endpoint takes two: a third is refused, not queued.
        let third = connect().await;
        assert!(
            matches!(third, Err(ClientError::Config(_))),
            "{:?}",
            third.err()
        );
        a.send(CHANNEL_RELIABLE, b"\x05from a".to_vec(), true)
            .unwrap();
        b.send(CHANNEL_RELIABLE, b"\x05from b, longer".to_vec(), true)
            .unwrap();
        assert_eq!(packet(&mut a).await, b"\x05from a");
        assert_eq!(packet(&mut b).await, b"\x05from b, longer");
        // Both came from the endpoint's one socket.
        let mut connects = Vec::new();
        while connects.len() < 2 {
            let (from, e) = seen.recv().await.unwrap();
            if matches!(e, Event::Connect { .. }) {
                connects.push(from);
            }
        }
        assert_eq!(connects[0], connects[1]);
        assert_eq!(connects[0].port(), endpoint.local_addr().port());
        // Each counts its own datagrams (published at the latest on the task's sweep).
        tokio::time::sleep(Duration::from_millis(2 * IDLE_WAKE_MS)).await;
        let (ca, cb) = (a.counts(), b.counts());
        assert!(
            ca.datagrams_up >= 2 && cb.datagrams_up >= 2,
            "{ca:?} {cb:?}"
        );
        assert!(
            ca.datagrams_down >= 2 && cb.datagrams_down >= 2,
            "{ca:?} {cb:?}"
        );
        assert!(cb.bytes_down > ca.bytes_down, "{ca:?} {cb:?}");
        // Dropping one disconnects it alone; the other goes on.
        drop(a);
        loop {
            let (_, e) = tokio::time::timeout(Duration::from_secs(5), seen.recv())
                .await
                .unwrap()
                .unwrap();
            if matches!(e, Event::Disconnect { .. }) {
                break;
            }
        }
        b.send(CHANNEL_RELIABLE, b"\x05still here".to_vec(), true)
            .unwrap();
        assert_eq!(packet(&mut b).await, b"\x05still here");
        assert!(b.close_reason().is_none());
        b.close(CloseCode::from(0u32), Duration::from_secs(2)).await;
    }

    #[tokio::test]
    async fn a_server_gone_silent_is_noticed_after_the_idle_timeout() {
        let (server, _seen, task) = echo_server_task().await;
        let idle = Duration::from_millis(1_500);
        let mut t = EnetTransport::connect(None, server, Duration::from_secs(5), false, idle)
            .await
            .unwrap();
        t.send(CHANNEL_RELIABLE, b"\x05hi".to_vec(), true).unwrap();
        assert_eq!(packet(&mut t).await, b"\x05hi");
        // Quiet but alive (ENet's pings): still open well past the idle timeout.
        tokio::time::sleep(idle * 2).await;
        assert!(t.close_reason().is_none(), "{:?}", t.close_reason());
        // Killed without a word: lost after the idle timeout, not ENet's 30 s.
        task.abort();
        let gone = Instant::now();
        tokio::time::timeout(Duration::from_secs(10), t.closed())
            .await
            .unwrap();
        assert!(matches!(t.close_reason(), Some(CloseReason::TimedOut)));
        assert!(
            gone.elapsed() < Duration::from_secs(5),
            "{:?}",
            gone.elapsed()
        );
    }

    #[tokio::test]
    async fn a_silent_server_is_a_connect_timeout() {
        let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = silent.local_addr().unwrap();
        let r = EnetTransport::connect(
            None,
            addr,
            Duration::from_millis(300),
            true,
            Duration::from_secs(30),
        )
        .await;
        assert!(
            matches!(r, Err(ClientError::ConnectTimeout(_))),
            "{:?}",
            r.err()
        );
    }
}
