//! The SDK's RCEnet transport (ENet 1.1, what Realm Crafter's own clients speak): a task
//! owns a UDP socket and a client [`rcenet::Host`] and passes RC packets `[type][payload]`
//! between it and the [`Connection`](crate::Connection): reliable on channel 1,
//! `P_StandardUpdate` unreliable on channel 2, as the original client does.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use bytes::Bytes;
use rcenet::{DisconnectReason, Event, Host, HostConfig, PeerId};
use tokio::net::UdpSocket;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::error::{ClientError, CloseCode, CloseReason};

/// The channel of reliable RC packets.
pub const CHANNEL_RELIABLE: u8 = 1;
/// The channel of `P_StandardUpdate`.
pub const CHANNEL_UPDATES: u8 = 2;
/// Channels the original client asks for.
pub const CHANNELS: u8 = 254;
/// Commands the connection may queue for the task before sends fail.
const COMMANDS: usize = 4_096;
/// Batches (the packets of one datagram or one turn of the task) the task may queue for
/// the connection before it stops reading the socket; at most 32 × this many packets.
const INBOUND: usize = 128;
/// The task's wake-up when ENet has nothing scheduled (ms).
const IDLE_WAKE_MS: u64 = 100;

/// Something for the transport task.
enum Cmd {
    /// One RC packet.
    Send {
        channel: u8,
        data: Vec<u8>,
        reliable: bool,
    },
    /// A graceful disconnect carrying `data`.
    Close(u32),
}

/// One RC packet from the server.
pub(crate) struct Packet {
    /// `[type][payload]`.
    pub data: Bytes,
    /// Whether it came reliably.
    pub reliable: bool,
}

/// An RCEnet connection's UDP traffic so far (the ENet host's counters).
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

/// The counters the task publishes.
#[derive(Debug, Default)]
struct Counts([std::sync::atomic::AtomicU64; 4]);

impl Counts {
    fn set(&self, s: &rcenet::Stats) {
        for (c, v) in self
            .0
            .iter()
            .zip([s.bytes_out, s.bytes_in, s.datagrams_out, s.datagrams_in])
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

/// The connection's side of the transport task. Dropping it ends the task (an immediate
/// ENet disconnect).
pub(crate) struct EnetTransport {
    cmd: mpsc::Sender<Cmd>,
    inbound: mpsc::Receiver<Vec<Packet>>,
    closed: watch::Receiver<Option<CloseReason>>,
    rtt_ms: Arc<AtomicU32>,
    counts: Arc<Counts>,
    remote: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

/// A session value as the original client would choose it: MSVC's `rand()` is below
/// 0x8000; this one is drawn from the clock and the process so that two clients of one
/// machine differ.
fn session_value() -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(7_919, Ordering::Relaxed);
    (t ^ std::process::id().rotate_left(16) ^ n) & 0x7FFF
}

impl EnetTransport {
    /// Connects to `addr` within `timeout` (ENet's handshake), then sends `NewClient`
    /// when asked, as the original client's DLL does.
    pub(crate) async fn connect(
        addr: SocketAddr,
        timeout: Duration,
        send_new_client: bool,
    ) -> Result<Self, ClientError> {
        let bind = if addr.is_ipv4() {
            SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0))
        } else {
            SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0))
        };
        let socket = UdpSocket::bind(bind).await.map_err(ClientError::Bind)?;
        let epoch = Instant::now();
        let now = || u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        let mut host = Host::new(HostConfig::client());
        let peer = host
            .connect(now(), addr, CHANNELS, session_value())
            .map_err(|e| ClientError::Config(format!("RCEnet connect: {e}")))?;
        let deadline = epoch + timeout;
        let mut buf = vec![0u8; 65_536];
        // The handshake, here: the connection exists only once it completed.
        loop {
            while let Some(t) = host.poll_transmit(now()) {
                let _ = socket.send_to(&t.data, t.dest).await;
            }
            match host.poll_event() {
                Some(Event::Connect { .. }) => break,
                Some(Event::Disconnect { .. }) => {
                    return Err(ClientError::Handshake(CloseReason::Transport(
                        "the server refused the RCEnet connection".into(),
                    )));
                }
                Some(Event::Receive { .. }) => continue,
                None => {}
            }
            let wake = host
                .poll_timeout()
                .map_or(IDLE_WAKE_MS, |t| t.saturating_sub(now()).min(IDLE_WAKE_MS));
            let wake = (Instant::now() + Duration::from_millis(wake)).min(deadline);
            tokio::select! {
                r = socket.recv_from(&mut buf) => {
                    if let Ok((n, from)) = r {
                        host.handle_datagram(now(), from, buf.get(..n).unwrap_or(&[]));
                    }
                }
                () = tokio::time::sleep_until(wake) => {
                    if Instant::now() >= deadline {
                        return Err(ClientError::ConnectTimeout(timeout));
                    }
                    host.handle_timeout(now());
                }
            }
        }
        if send_new_client {
            // NewClient (type 0, empty), reliable on channel 1.
            let _ = host.send(peer, CHANNEL_RELIABLE, &[0], true);
        }
        let (cmd_tx, cmd_rx) = mpsc::channel(COMMANDS);
        let (in_tx, in_rx) = mpsc::channel(INBOUND);
        let (closed_tx, closed_rx) = watch::channel(None);
        let rtt_ms = Arc::new(AtomicU32::new(500));
        let counts = Arc::new(Counts::default());
        let driver = Driver {
            counts: counts.clone(),
            host,
            peer,
            socket,
            epoch,
            cmds: cmd_rx,
            inbound: in_tx,
            closed: closed_tx,
            rtt_ms: rtt_ms.clone(),
        };
        let task = tokio::spawn(driver.run());
        Ok(Self {
            cmd: cmd_tx,
            inbound: in_rx,
            closed: closed_rx,
            rtt_ms,
            counts,
            remote: addr,
            task,
        })
    }

    /// Queues one RC packet `[type][payload]`.
    pub(crate) fn send(
        &self,
        channel: u8,
        data: Vec<u8>,
        reliable: bool,
    ) -> Result<(), ClientError> {
        self.cmd
            .try_send(Cmd::Send {
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

    /// A graceful disconnect with `code` as its data; waits (bounded) for the task to end.
    pub(crate) async fn close(self, code: CloseCode, grace: Duration) {
        let data = u32::try_from(code.as_u64()).unwrap_or(u32::MAX);
        let _ = self.cmd.send(Cmd::Close(data)).await;
        let mut task = self.task;
        if tokio::time::timeout(grace, &mut task).await.is_err() {
            task.abort();
        }
    }
}

struct Driver {
    host: Host,
    peer: PeerId,
    socket: UdpSocket,
    epoch: Instant,
    cmds: mpsc::Receiver<Cmd>,
    inbound: mpsc::Sender<Vec<Packet>>,
    closed: watch::Sender<Option<CloseReason>>,
    rtt_ms: Arc<AtomicU32>,
    counts: Arc<Counts>,
}

impl Driver {
    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    async fn run(mut self) {
        let mut buf = vec![0u8; 65_536];
        // After a local close: the moment the task stops waiting for the acknowledgement.
        let mut closing: Option<Instant> = None;
        let reason = loop {
            let now = self.now();
            let wake = self
                .host
                .poll_timeout()
                .unwrap_or(now + IDLE_WAKE_MS)
                .min(now + IDLE_WAKE_MS);
            let mut wake = self.epoch + Duration::from_millis(wake);
            if let Some(c) = closing {
                wake = wake.min(c);
            }
            // Room for another batch.
            let room = self.inbound.capacity() >= 1;
            tokio::select! {
                r = self.socket.recv_from(&mut buf), if room => {
                    if let Ok((n, from)) = r {
                        let now = self.now();
                        // One allocation per datagram; its packets are slices of it.
                        let data = Bytes::copy_from_slice(buf.get(..n).unwrap_or(&[]));
                        self.host.handle_datagram_bytes(now, from, data);
                    }
                }
                c = self.cmds.recv(), if closing.is_none() => match c {
                    Some(Cmd::Send { channel, data, reliable }) => {
                        let _ = self.host.send(self.peer, channel, &data, reliable);
                    }
                    Some(Cmd::Close(data)) => {
                        let now = self.now();
                        self.host.disconnect(now, self.peer, data);
                        closing = Some(Instant::now() + Duration::from_millis(500));
                    }
                    None => {
                        let now = self.now();
                        self.host.disconnect_now(now, self.peer, 0);
                        self.flush().await;
                        break CloseReason::Local;
                    }
                },
                () = tokio::time::sleep_until(wake) => {}
                // Nothing to wait for when there is no room and no timer: the loop goes
                // round when the connection reads.
                () = tokio::time::sleep(Duration::from_millis(5)), if !room => {}
            }
            let now = self.now();
            self.host.handle_timeout(now);
            if let Some(rtt) = self.host.peer_rtt(self.peer) {
                self.rtt_ms.store(rtt, Ordering::Relaxed);
            }
            let mut ended = None;
            let mut batch = Vec::new();
            while let Some(e) = self.host.poll_event() {
                match e {
                    Event::Receive { data, reliable, .. } => {
                        batch.push(Packet { data, reliable });
                    }
                    Event::Disconnect { reason, .. } => {
                        ended = Some(match reason {
                            DisconnectReason::Graceful(code) if closing.is_none() => {
                                CloseReason::Server {
                                    code: CloseCode::from(code),
                                    reason: String::new(),
                                }
                            }
                            DisconnectReason::Graceful(_) => CloseReason::Local,
                            DisconnectReason::Timeout => CloseReason::TimedOut,
                            other => CloseReason::Transport(format!("{other:?}")),
                        });
                    }
                    Event::Connect { .. } => {}
                }
            }
            if !batch.is_empty() {
                // Bounded: the socket is read only with room for a batch (one producer).
                let _ = self.inbound.try_send(batch);
            }
            self.flush().await;
            self.counts.set(self.host.stats());
            if let Some(r) = ended {
                break r;
            }
            if closing.is_some_and(|c| Instant::now() >= c) {
                break CloseReason::Local;
            }
        };
        let _ = self.closed.send(Some(reason));
    }

    async fn flush(&mut self) {
        let now = self.now();
        while let Some(t) = self.host.poll_transmit(now) {
            let _ = self.socket.send_to(&t.data, t.dest).await;
        }
    }
}
