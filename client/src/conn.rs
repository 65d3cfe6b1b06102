//! [`Connection`]: one connection to the gateway speaking the client contract
//! (transport.md): on QUIC, reliable packets as `[len][type][payload]` frames on one
//! bidirectional stream that the client opens, `P_StandardUpdate` in datagrams; on RCEnet
//! (ENet 1.1, [`Transport::Enet`]), one RC packet per ENet packet, reliable on channel 1,
//! `P_StandardUpdate` unreliable on channel 2, as Realm Crafter's own client.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use shared::frame::{FrameDecoder, FrameError, MAX_FRAME_LEN, split_datagram, write_frame};
use shared::proto::{
    ActorTemplateDef, ClientPacket, Creds, DecodeCtx, NewClient, ServerPacket, StandardUpdateC2S,
    ids,
};
use shared::wire::DecodeError;
use tokio::time::Instant;

use crate::error::{ClientError, CloseCode, CloseReason};
use crate::verify::{ALPN, Verify, tls_config};

/// Realm Crafter's default port, also the gateway's.
pub const DEFAULT_PORT: u16 = 25000;

/// Largest chunk read from the stream at once.
const READ_CHUNK: usize = 64 * 1024;
/// Datagram receive buffer: a few hundred broadcast ticks of updates.
const DATAGRAM_RECEIVE_BUFFER: usize = 1 << 20;
/// How long [`Connection::close`] waits for queued data to be acknowledged, and then for
/// the close to reach the server.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// Where a packet travelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Channel {
    /// The reliable, ordered stream.
    Reliable,
    /// A QUIC datagram (only `P_StandardUpdate`).
    Datagram,
}

/// UDP receive and send buffer asked of the kernel for a client endpoint (it caps them at
/// `net.core.rmem_max` / `wmem_max`).
pub const SOCKET_BUFFER: usize = 2 << 20;

/// A client-only quinn endpoint on `bind` with [`SOCKET_BUFFER`]-sized socket buffers.
///
/// A broadcast tick arrives as a burst (every connection sharing the socket gets its
/// datagrams at once); with the kernel's default 208 KiB receive buffer, a socket shared
/// by a hundred bots overflows and the kernel drops datagrams before QUIC sees them.
/// Setting the sizes is best effort: a kernel that refuses keeps its defaults.
pub fn client_endpoint(bind: SocketAddr) -> std::io::Result<quinn::Endpoint> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(bind), Type::DGRAM, Some(Protocol::UDP))?;
    let _ = socket.set_recv_buffer_size(SOCKET_BUFFER);
    let _ = socket.set_send_buffer_size(SOCKET_BUFFER);
    socket.bind(&bind.into())?;
    socket.set_nonblocking(true)?;
    let runtime = quinn::default_runtime()
        .ok_or_else(|| std::io::Error::other("no async runtime for quinn"))?;
    quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        None,
        socket.into(),
        runtime,
    )
}

/// A packet from the server and the channel it came on.
#[derive(Debug, Clone, PartialEq)]
pub struct Incoming {
    /// The decoded packet.
    pub packet: ServerPacket,
    /// Where it travelled.
    pub channel: Channel,
}

impl Incoming {
    /// The packet's Realm Crafter name (`"P_StandardUpdate"`).
    pub fn name(&self) -> &'static str {
        self.packet.name()
    }

    /// The packet's type byte.
    pub fn id(&self) -> u8 {
        self.packet.id()
    }

    /// Whether it came on the reliable stream.
    pub fn is_reliable(&self) -> bool {
        self.channel == Channel::Reliable
    }
}

/// Which position encoding the connection speaks (transport.md; docs/protocol.md, "The
/// compact profile"). Every other packet is Realm Crafter's in both.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Profile {
    /// ALPN `rc/1`: `P_StandardUpdate` frames byte for byte in datagrams.
    #[default]
    Rc,
    /// ALPN `rc-compact/1`: quantised, delta-coded position datagrams. The connection
    /// decodes them back into `P_StandardUpdate` packets (positions within 1/16 unit) and
    /// acknowledges the ticks it receives, so callers see the same packets as on `rc/1`.
    #[doc(alias = "rc-compact/1")]
    Compact,
}

impl Profile {
    /// The ALPN protocol id.
    pub fn alpn(self) -> &'static [u8] {
        match self {
            Self::Rc => ALPN,
            Self::Compact => shared::compact::ALPN,
        }
    }
}

impl std::str::FromStr for Profile {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "rc" | "rc/1" => Ok(Self::Rc),
            "compact" | "rc-compact/1" => Ok(Self::Compact),
            _ => Err(format!("unknown profile {s:?} (rc or compact)")),
        }
    }
}

/// An idle compact client acknowledges its newest whole tick at least this often (an
/// ack-only datagram when no position update carried it).
const COMPACT_ACK_EVERY: Duration = Duration::from_millis(250);

/// The compact profile's client state.
#[derive(Debug, Default)]
struct CompactState {
    dec: shared::compact::DownDecoder,
    /// When a datagram carrying an acknowledgement last went out, and which tick (a lock
    /// so that [`Connection::send_update`] can take `&self`).
    last_ack: std::sync::Mutex<Option<(Instant, Option<u16>)>>,
}

impl CompactState {
    fn sent_ack(&self, ack: Option<u16>) {
        if let Ok(mut l) = self.last_ack.lock() {
            *l = Some((Instant::now(), ack));
        }
    }

    /// Whether an ack-only datagram is due for `ack`.
    fn ack_due(&self, ack: Option<u16>) -> bool {
        match self.last_ack.lock().map(|l| *l) {
            Ok(None) => true,
            Ok(Some((at, sent))) => sent != ack && at.elapsed() >= COMPACT_ACK_EVERY,
            Err(_) => false,
        }
    }
}

/// The transport a connection speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Transport {
    /// QUIC (ALPN `rc/1` or `rc-compact/1`): the gateway's `listen` port.
    #[default]
    Quic,
    /// RCEnet, ENet 1.1 as Realm Crafter's own client speaks it: the gateway's
    /// `enet_listen` port. No encryption; the profile is always [`Profile::Rc`].
    #[doc(alias = "RCEnet")]
    Enet,
}

impl std::str::FromStr for Transport {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "quic" => Ok(Self::Quic),
            "enet" | "rcenet" => Ok(Self::Enet),
            _ => Err(format!("unknown transport {s:?} (quic or enet)")),
        }
    }
}

/// Connection settings. Build with [`ConnectOptions::new`] and change the fields.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ConnectOptions {
    /// Certificate check.
    pub verify: Verify,
    /// QUIC keep-alive interval (zero disables it). Default 5 s.
    pub keep_alive: Duration,
    /// Idle timeout after which the connection is dropped (QUIC's, and on RCEnet the
    /// silence after which the server counts as gone: it pings an idle client every half
    /// second). Default 30 s.
    pub idle_timeout: Duration,
    /// Limit on the handshake. Default 10 s.
    pub connect_timeout: Duration,
    /// How long the menu calls ([`Connection::login`] ...) wait for their reply. Default 10 s.
    pub reply_timeout: Duration,
    /// Send Realm Crafter's empty `NewClient` (type 0) right after opening the stream, as
    /// the original client does. The server ignores it, but it makes the stream exist on the
    /// server's side at once (QUIC announces a stream with its first byte). Default on.
    pub send_new_client: bool,
    /// Largest frame `len` accepted from the server (1..=65535). Default 65535.
    pub max_frame_len: usize,
    /// Connect from this endpoint instead of binding a new UDP socket (share one socket
    /// between many connections, e.g. a bot swarm).
    pub endpoint: Option<quinn::Endpoint>,
    /// The position profile. Default [`Profile::Rc`].
    pub profile: Profile,
    /// How many bytes of the server's stream QUIC accepts ahead of [`Connection::recv`]
    /// (the stream's and the connection's flow-control window); `None`: quinn's default.
    /// A small window makes a client that stops reading stall the server at once (the
    /// slow-reader tests).
    pub receive_window: Option<u32>,
    /// The transport. Default [`Transport::Quic`]; with [`Transport::Enet`] the
    /// certificate check, keep-alive, endpoint, profile and window settings do not apply.
    pub transport: Transport,
    /// On RCEnet: connect through this endpoint (one UDP socket and ENet host shared by
    /// many connections, e.g. a bot swarm) instead of a new one of its own.
    #[doc(alias = "RCEnet")]
    pub enet_endpoint: Option<crate::enet::EnetEndpoint>,
}

impl ConnectOptions {
    /// The defaults with this certificate check.
    pub fn new(verify: Verify) -> Self {
        Self {
            verify,
            keep_alive: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            reply_timeout: Duration::from_secs(10),
            send_new_client: true,
            max_frame_len: MAX_FRAME_LEN,
            endpoint: None,
            profile: Profile::Rc,
            receive_window: None,
            transport: Transport::Quic,
            enet_endpoint: None,
        }
    }
}

/// Counters of what arrived.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConnectionStats {
    /// Frames read from the reliable stream.
    pub frames_received: u64,
    /// Datagrams received, dropped ones included.
    pub datagrams_received: u64,
    /// Datagrams dropped whole: frames not parsing exactly to the end, a type other than
    /// 14, or a `P_StandardUpdate` that does not decode; on the compact profile, a
    /// datagram the decoder refused (see [`compact_refused`](Self::compact_refused)).
    pub datagrams_dropped: u64,
    /// Compact datagrams refused, by why: stale (older than one already received),
    /// against a base this client does not have, or malformed.
    pub compact_refused: CompactRefused,
    /// Stream packets that did not decode (returned as [`ClientError::Decode`]).
    pub undecodable_packets: u64,
}

/// Compact datagrams refused by the client's decoder.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactRefused {
    /// Older than a tick already received (reordered).
    pub stale: u64,
    /// Coded against a tick this client did not receive whole.
    pub unknown_base: u64,
    /// Anything else (garbage, truncated, out of range).
    pub malformed: u64,
}

/// One connection to the gateway.
///
/// * Reliable packets go out with [`send`](Self::send) (or [`send_frame`](Self::send_frame)
///   and [`send_raw`](Self::send_raw) for tests that need malformed input) as frames on the
///   one stream the client opened; `P_StandardUpdate` goes out with
///   [`send_update`](Self::send_update) as a datagram holding one frame.
/// * [`recv`](Self::recv) returns the next packet from either channel. It is cancel-safe,
///   so it can sit in a `tokio::select!` loop next to a timer that sends updates.
/// * The menu flow (login, catalogue, characters, start game) is in the methods of the
///   [`login`](crate::login) module.
///
/// Its `Debug` output shows the user name but never the password hash.
pub struct Connection {
    link: Link,
    /// Frames queued for the stream; `out[out_sent..]` is not yet written.
    out: Vec<u8>,
    out_sent: usize,
    decoder: FrameDecoder,
    stream_finished: bool,
    /// Decoded datagram packets not yet returned.
    ready: VecDeque<Incoming>,
    /// Packets the menu calls passed over while waiting for their reply; returned first.
    pub(crate) held: VecDeque<Incoming>,
    /// `Genders` of each known actor template, for decoding `P_NewActor`.
    genders: HashMap<u16, u8>,
    /// The catalogue's attribute `Assignment` once known (decides `P_CreateCharacter`'s
    /// layout).
    pub(crate) assignment: Option<u8>,
    pub(crate) creds: Option<Creds>,
    pub(crate) reply_timeout: Duration,
    stats: ConnectionStats,
    /// The view of the player's items, gold, ground and trade window.
    pub(crate) items: crate::items::Items,
    /// The view of the player's abilities.
    pub(crate) spells: crate::spells::Spellbook,
    /// The game clock, from the login block `"E"` and `/time` replies.
    pub(crate) clock: Option<crate::clock::SdkClock>,
    /// The script windows and the quest log.
    pub(crate) ui: crate::ui::Ui,
    /// The compact profile's state, when negotiated.
    compact: Option<CompactState>,
    /// The broadcast clock, learnt from datagram arrivals ([`Connection::next_input_at`]).
    pacer: crate::pacer::InputPacer,
}

/// What carries a connection's packets.
enum Link {
    Quic(QuicLink),
    Enet(crate::enet::EnetTransport),
}

/// A QUIC connection and its one stream.
struct QuicLink {
    conn: quinn::Connection,
    endpoint: quinn::Endpoint,
    owns_endpoint: bool,
    send: quinn::SendStream,
    recv: quinn::RecvStream,
}

/// The largest rc/1 datagram of updates an RCEnet connection takes at once (its frames go
/// as separate ENet packets).
const ENET_DATAGRAM: usize = 1_200;

/// Each rc/1 frame of `bytes` as an RC packet `[type][payload]`.
fn rc_packets(bytes: &[u8]) -> Result<Vec<Vec<u8>>, ClientError> {
    let frames = split_datagram(bytes, None)
        .map_err(|e| ClientError::Stream(format!("not rc/1 frames: {e}")))?;
    Ok(frames
        .map(|f| {
            let mut p = Vec::with_capacity(f.payload.len() + 1);
            p.push(f.ty);
            p.extend_from_slice(f.payload);
            p
        })
        .collect())
}

impl Connection {
    /// Connects with the default [`ConnectOptions`], opens the reliable stream and sends
    /// `NewClient`.
    ///
    /// `server_name` is the TLS server name (a DNS name or an IP literal); it matters only
    /// for [`Verify::Roots`].
    pub async fn connect(
        addr: SocketAddr,
        server_name: &str,
        verify: Verify,
    ) -> Result<Self, ClientError> {
        Self::connect_with(addr, server_name, ConnectOptions::new(verify)).await
    }

    /// Connects to the first of `addrs` that answers, trying them in order (an active
    /// gateway and its standbys: docs/operations.md, "A standby gateway"); each attempt is
    /// bounded by `opts.connect_timeout`. The last attempt's error when none answers.
    pub async fn connect_any(
        addrs: &[SocketAddr],
        server_name: &str,
        opts: ConnectOptions,
    ) -> Result<Self, ClientError> {
        let mut last = ClientError::Config("no gateway address given".into());
        for &addr in addrs {
            match Self::connect_with(addr, server_name, opts.clone()).await {
                Ok(c) => return Ok(c),
                Err(e) => {
                    tracing::debug!(%addr, error = %e, "gateway did not answer; trying the next");
                    last = e;
                }
            }
        }
        Err(last)
    }

    /// Connects with explicit options.
    pub async fn connect_with(
        addr: SocketAddr,
        server_name: &str,
        opts: ConnectOptions,
    ) -> Result<Self, ClientError> {
        if opts.transport == Transport::Enet {
            let link = crate::enet::EnetTransport::connect(
                opts.enet_endpoint.as_ref(),
                addr,
                opts.connect_timeout,
                opts.send_new_client,
                opts.idle_timeout,
            )
            .await?;
            tracing::debug!(%addr, "connected (RCEnet)");
            return Ok(Self::with_link(Link::Enet(link), &opts));
        }
        if matches!(opts.verify, Verify::Insecure) {
            tracing::warn!(%addr, "server certificate verification is off (development mode)");
        }
        let (mut tls, fingerprint) = tls_config(&opts.verify)?;
        tls.alpn_protocols = vec![opts.profile.alpn().to_vec()];
        let quic = quinn::crypto::rustls::QuicClientConfig::try_from(tls)
            .map_err(|e| ClientError::Config(e.to_string()))?;
        let mut config = quinn::ClientConfig::new(Arc::new(quic));
        let mut transport = quinn::TransportConfig::default();
        transport.keep_alive_interval(Some(opts.keep_alive).filter(|d| !d.is_zero()));
        let idle = quinn::IdleTimeout::try_from(opts.idle_timeout)
            .map_err(|e| ClientError::Config(format!("idle timeout: {e}")))?;
        transport.max_idle_timeout(Some(idle));
        transport.datagram_receive_buffer_size(Some(DATAGRAM_RECEIVE_BUFFER));
        if let Some(w) = opts.receive_window {
            transport.stream_receive_window(quinn::VarInt::from_u32(w));
            transport.receive_window(quinn::VarInt::from_u32(w));
        }
        // The gateway may hold its acknowledgement of our moves for a while, so it rides
        // the next batch of updates instead of a packet of its own (QUIC ACK frequency
        // extension; servers that do not support it ignore this): 50 ms on rc/1; on the
        // compact profile, where those ACK-only packets would be an eighth of the
        // downstream bytes, 250 ms (longer than a 5 Hz broadcast period; it only delays
        // the retransmission of lost stream data, by at most that much).
        let (threshold, delay) = match opts.profile {
            Profile::Rc => (4, 50),
            Profile::Compact => (10, 250),
        };
        let mut acks = quinn::AckFrequencyConfig::default();
        acks.ack_eliciting_threshold(quinn::VarInt::from_u32(threshold))
            .max_ack_delay(Some(Duration::from_millis(delay)));
        transport.ack_frequency_config(Some(acks));
        config.transport_config(Arc::new(transport));

        let (endpoint, owns_endpoint) = match opts.endpoint.clone() {
            Some(e) => (e, false),
            None => {
                let bind = if addr.is_ipv4() {
                    SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0))
                } else {
                    SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0))
                };
                (client_endpoint(bind).map_err(ClientError::Bind)?, true)
            }
        };
        let connecting = endpoint.connect_with(config, addr, server_name)?;
        let conn = match tokio::time::timeout(opts.connect_timeout, connecting).await {
            Err(_) => return Err(ClientError::ConnectTimeout(opts.connect_timeout)),
            Ok(Err(e)) => {
                if let Some(v) = &fingerprint
                    && let (Some(expected), Some(got)) = (v.pin(), v.rejected())
                {
                    return Err(ClientError::PinMismatch { expected, got });
                }
                return Err(ClientError::Handshake(e.into()));
            }
            Ok(Ok(c)) => c,
        };
        let alpn = conn
            .handshake_data()
            .and_then(|d| d.downcast::<quinn::crypto::rustls::HandshakeData>().ok())
            .and_then(|d| d.protocol);
        if alpn.as_deref() != Some(opts.profile.alpn()) {
            conn.close(CloseCode::ProtocolViolation.varint(), b"ALPN");
            return Err(ClientError::Alpn(
                alpn.map(|p| String::from_utf8_lossy(&p).into_owned()),
            ));
        }
        let (send, recv) = conn.open_bi().await?;
        tracing::debug!(%addr, "connected");
        let link = Link::Quic(QuicLink {
            conn,
            endpoint,
            owns_endpoint,
            send,
            recv,
        });
        let mut c = Self::with_link(link, &opts);
        if opts.send_new_client {
            c.send(&ClientPacket::NewClient(NewClient {})).await?;
        }
        Ok(c)
    }

    fn with_link(link: Link, opts: &ConnectOptions) -> Self {
        let compact = matches!(link, Link::Quic(_)) && opts.profile == Profile::Compact;
        Self {
            link,
            out: Vec::new(),
            out_sent: 0,
            decoder: FrameDecoder::with_max_frame_len(opts.max_frame_len),
            stream_finished: false,
            ready: VecDeque::new(),
            held: VecDeque::new(),
            genders: HashMap::new(),
            assignment: None,
            creds: None,
            reply_timeout: opts.reply_timeout,
            stats: ConnectionStats::default(),
            items: crate::items::Items::new(),
            spells: crate::spells::Spellbook::default(),
            clock: None,
            ui: crate::ui::Ui::default(),
            compact: compact.then(CompactState::default),
            pacer: crate::pacer::InputPacer::new(),
        }
    }

    // ---------------------------------------------------------------------------------
    // Sending.

    /// Sends a packet: as a frame on the reliable stream, except `P_StandardUpdate`, which
    /// goes as a datagram ([`send_update`](Self::send_update)).
    ///
    /// Cancel-safe: if the future is dropped, the frame was either not queued at all or
    /// queued whole, and a queued frame goes out with the next send, [`flush`](Self::flush)
    /// or [`close`](Self::close); the stream never carries part of a frame.
    pub async fn send(&mut self, packet: &ClientPacket) -> Result<(), ClientError> {
        if let ClientPacket::StandardUpdate(u) = packet {
            return self.send_update(u);
        }
        packet.encode_frame(&mut self.out)?;
        self.flush().await
    }

    /// Queues a packet on the reliable stream without waiting: it goes out with the next
    /// send or while the connection waits for packets (the automatic answers to script
    /// windows).
    pub(crate) fn queue(&mut self, packet: &ClientPacket) -> Result<(), ClientError> {
        packet.encode_frame(&mut self.out)?;
        Ok(())
    }

    /// Sends one frame `[len][ty][payload]` on the reliable stream, whatever `ty` and
    /// `payload` are (for tests that send unknown or malformed packets). Cancel-safe like
    /// [`send`](Self::send).
    pub async fn send_frame(&mut self, ty: u8, payload: &[u8]) -> Result<(), ClientError> {
        write_frame(&mut self.out, ty, payload)?;
        self.flush().await
    }

    /// Writes bytes to the reliable stream as they are, not framed (for tests of the
    /// server's framing checks: a zero length, an oversized or a cut-off frame).
    pub async fn send_raw(&mut self, bytes: &[u8]) -> Result<(), ClientError> {
        self.out.extend_from_slice(bytes);
        self.flush().await
    }

    /// Writes out any frames still queued by a cancelled send. On RCEnet each frame goes
    /// as one reliable packet on channel 1 (bytes that are not whole frames are an error).
    pub async fn flush(&mut self) -> Result<(), ClientError> {
        match &mut self.link {
            Link::Quic(q) => {
                while let Some(rest) = self.out.get(self.out_sent..).filter(|r| !r.is_empty()) {
                    let n = q.send.write(rest).await?;
                    self.out_sent += n;
                }
            }
            Link::Enet(e) => {
                let rest = self.out.get(self.out_sent..).unwrap_or(&[]);
                if !rest.is_empty() {
                    let packets = rc_packets(rest);
                    self.out.clear();
                    self.out_sent = 0;
                    for p in packets? {
                        e.send(crate::enet::CHANNEL_RELIABLE, p, true)?;
                    }
                }
            }
        }
        self.out.clear();
        self.out_sent = 0;
        Ok(())
    }

    /// Flushes, then ends the client's side of the reliable stream (QUIC FIN). Nothing
    /// more can be sent on it; receiving goes on. RCEnet has no stream to end: it only
    /// flushes.
    pub async fn finish_stream(&mut self) -> Result<(), ClientError> {
        self.flush().await?;
        match &mut self.link {
            Link::Quic(q) => q
                .send
                .finish()
                .map_err(|e| ClientError::Stream(e.to_string())),
            Link::Enet(_) => Ok(()),
        }
    }

    /// The transport this connection speaks.
    pub fn transport(&self) -> Transport {
        match self.link {
            Link::Quic(_) => Transport::Quic,
            Link::Enet(_) => Transport::Enet,
        }
    }

    /// Sends `P_StandardUpdate` as a QUIC datagram holding exactly one frame (25 bytes);
    /// on the compact profile as a compact input datagram carrying the newest tick received
    /// whole. Datagrams are unreliable: when the send buffer is full the oldest queued one
    /// is dropped, which is what a position update wants.
    #[doc(alias = "P_StandardUpdate")]
    pub fn send_update(&self, update: &StandardUpdateC2S) -> Result<(), ClientError> {
        let mut buf = Vec::with_capacity(25);
        match &self.compact {
            None => update.write_frame(&mut buf),
            Some(c) => {
                let ack = c.dec.ack();
                shared::compact::encode_input(
                    &shared::compact::QInput::from_update(update),
                    ack,
                    &mut buf,
                );
                c.sent_ack(ack);
            }
        }
        self.send_raw_datagram(buf)
    }

    /// When to send the next position update, for updates every `input_period` after one
    /// sent at `previous`: just ahead of the next broadcast, so that the move is in it and
    /// the gateway's acknowledgement rides it ([`crate::pacer`]; docs/protocol.md, "Pacing
    /// input"). Until the connection has seen three broadcasts, `previous + input_period`.
    pub fn next_input_at(&self, previous: Instant, input_period: Duration) -> Instant {
        Instant::from_std(self.pacer.next_send(
            Instant::now().into_std(),
            previous.into_std(),
            input_period,
            match &self.link {
                Link::Quic(q) => q.conn.rtt(),
                Link::Enet(e) => e.rtt(),
            },
        ))
    }

    /// The broadcast period learnt from the datagrams received, once three were seen.
    pub fn broadcast_period(&self) -> Option<Duration> {
        self.pacer.period()
    }

    /// The position profile this connection speaks.
    pub fn profile(&self) -> Profile {
        if self.compact.is_some() {
            Profile::Compact
        } else {
            Profile::Rc
        }
    }

    /// Sends a datagram with these exact bytes (for tests: batches, other types, garbage).
    /// On RCEnet each rc/1 frame of it goes as one unreliable packet on channel 2 (bytes
    /// that are not whole frames are an error).
    pub fn send_raw_datagram(&self, bytes: impl Into<Bytes>) -> Result<(), ClientError> {
        let bytes = bytes.into();
        let len = bytes.len();
        let q = match &self.link {
            Link::Quic(q) => q,
            Link::Enet(e) => {
                for p in rc_packets(&bytes)? {
                    e.send(crate::enet::CHANNEL_UPDATES, p, false)?;
                }
                return Ok(());
            }
        };
        q.conn.send_datagram(bytes).map_err(|e| {
            use quinn::SendDatagramError as E;
            match e {
                E::UnsupportedByPeer => {
                    ClientError::DatagramsUnavailable("the server does not accept them")
                }
                E::Disabled => ClientError::DatagramsUnavailable("disabled on this side"),
                E::TooLarge => ClientError::DatagramTooLarge {
                    len,
                    max: q.conn.max_datagram_size(),
                },
                E::ConnectionLost(c) => c.into(),
            }
        })
    }

    // ---------------------------------------------------------------------------------
    // Receiving.

    /// The next packet from the server, from the stream or a datagram.
    ///
    /// Cancel-safe: dropping the future loses nothing; bytes already read stay buffered for
    /// the next call.
    ///
    /// Errors: [`ClientError::Closed`] when the connection ends (with the server's close
    /// code, see [`ClientError::server_close_code`]); [`ClientError::Decode`] for a frame
    /// that does not decode (not fatal); [`ClientError::Frame`] when the server breaks the
    /// framing (fatal: the client closes with code 2). Malformed datagrams are dropped and
    /// counted in [`stats`](Self::stats), as the server does.
    pub async fn recv(&mut self) -> Result<Incoming, ClientError> {
        if let Some(p) = self.held.pop_front() {
            return Ok(p);
        }
        self.recv_network().await
    }

    /// [`recv`](Self::recv) with a time limit ([`ClientError::Timeout`]). Cancel-safe.
    pub async fn recv_timeout(&mut self, timeout: Duration) -> Result<Incoming, ClientError> {
        match tokio::time::timeout(timeout, self.recv()).await {
            Ok(r) => r,
            Err(_) => Err(ClientError::Timeout(timeout)),
        }
    }

    /// Receives until a packet matches `pred` and returns it; the packets before it are
    /// dropped. [`ClientError::Timeout`] if none matches within `timeout`.
    pub async fn recv_until(
        &mut self,
        mut pred: impl FnMut(&Incoming) -> bool,
        timeout: Duration,
    ) -> Result<Incoming, ClientError> {
        let deadline = Instant::now() + timeout;
        loop {
            let p = match tokio::time::timeout_at(deadline, self.recv()).await {
                Ok(r) => r?,
                Err(_) => return Err(ClientError::Timeout(timeout)),
            };
            if pred(&p) {
                return Ok(p);
            }
        }
    }

    /// Like [`recv_until`](Self::recv_until), but also returns the packets passed over, in
    /// order.
    pub async fn collect_until(
        &mut self,
        mut pred: impl FnMut(&Incoming) -> bool,
        timeout: Duration,
    ) -> Result<(Incoming, Vec<Incoming>), ClientError> {
        let deadline = Instant::now() + timeout;
        let mut skipped = Vec::new();
        loop {
            let p = match tokio::time::timeout_at(deadline, self.recv()).await {
                Ok(r) => r?,
                Err(_) => return Err(ClientError::Timeout(timeout)),
            };
            if pred(&p) {
                return Ok((p, skipped));
            }
            skipped.push(p);
        }
    }

    /// The next packet from the network, ignoring `held` (the menu calls use this so that
    /// what they pass over stays in order for [`recv`](Self::recv)). Cancel-safe.
    pub(crate) async fn recv_network(&mut self) -> Result<Incoming, ClientError> {
        loop {
            if let Some(p) = self.ready.pop_front() {
                return Ok(p);
            }
            if let Some(p) = self.next_stream_packet()? {
                return Ok(p);
            }
            let pending = self.out.len() > self.out_sent;
            let q = match &mut self.link {
                Link::Quic(q) => q,
                Link::Enet(_) => {
                    self.recv_enet(pending).await?;
                    continue;
                }
            };
            tokio::select! {
                biased;
                // Frames queued by the connection itself (the P_ChangeArea acknowledgement)
                // or by a cancelled send go out while waiting.
                r = q.send.write(self.out.get(self.out_sent..).unwrap_or(&[])), if pending => {
                    self.out_sent += r?;
                    if self.out_sent >= self.out.len() {
                        self.out.clear();
                        self.out_sent = 0;
                    }
                }
                r = q.recv.read_chunk(READ_CHUNK, true), if !self.stream_finished => match r {
                    Ok(Some(chunk)) => self.decoder.push(&chunk.bytes),
                    Ok(None) => {
                        // The server ended its side: a frame cut off here is a violation;
                        // otherwise wait for the close (and datagrams) on the connection.
                        self.stream_finished = true;
                        if let Err(e) = self.decoder.finish() {
                            return Err(self.violation(e));
                        }
                    }
                    Err(e) => return Err(e.into()),
                },
                r = q.conn.read_datagram() => self.on_datagram(r?),
            }
        }
    }

    /// One RC packet from the RCEnet transport, after sending what is queued: a reliable
    /// one goes through the frame decoder as a stream frame would, a `P_StandardUpdate`
    /// through the datagram path. Cancel-safe.
    async fn recv_enet(&mut self, pending: bool) -> Result<(), ClientError> {
        if pending {
            self.flush().await?;
        }
        let Link::Enet(e) = &mut self.link else {
            return Ok(());
        };
        // A datagram's packets at once: its updates are read as one rc/1 datagram.
        let batch = e.recv_batch().await.map_err(ClientError::Closed)?;
        // Each packet becomes a frame ([len u16][type][payload]): sized once.
        let room = batch
            .iter()
            .filter(|p| !p.reliable)
            .map(|p| p.data.len() + 2)
            .sum();
        let mut updates = Vec::with_capacity(room);
        let mut frame = Vec::new();
        for p in batch {
            let Some((&ty, payload)) = p.data.split_first() else {
                continue;
            };
            let out = if p.reliable {
                frame.clear();
                &mut frame
            } else {
                &mut updates
            };
            let mark = out.len();
            if write_frame(out, ty, payload).is_err() {
                // Larger than a frame: not an RC packet the SDK can read.
                out.truncate(mark);
                self.stats.undecodable_packets += 1;
                continue;
            }
            if p.reliable {
                self.decoder.push(&frame);
            }
        }
        if !updates.is_empty() {
            self.on_datagram(Bytes::from(updates));
        }
        Ok(())
    }

    /// The next complete frame on the stream, decoded.
    fn next_stream_packet(&mut self) -> Result<Option<Incoming>, ClientError> {
        let (ty, result) = match self.decoder.next_frame() {
            Ok(None) => return Ok(None),
            Ok(Some(f)) => (
                f.ty,
                decode_server(f.ty, f.payload, &self.genders).map_err(|e| (e, f.payload.to_vec())),
            ),
            Err(e) => return Err(self.violation(e)),
        };
        self.stats.frames_received += 1;
        if let Ok(ServerPacket::ChangeArea(_)) = &result {
            // As Realm Crafter's client does once the area is loaded: acknowledge it, so
            // the server applies this client's updates again (IgnoreUpdate).
            let _ = write_frame(&mut self.out, ids::P_CHANGE_AREA, &[]);
        }
        match result {
            Ok(packet) => Ok(Some(Incoming {
                packet,
                channel: Channel::Reliable,
            })),
            Err((error, payload)) => {
                self.stats.undecodable_packets += 1;
                Err(ClientError::Decode { ty, error, payload })
            }
        }
    }

    /// The server broke the framing: close with code 2 (as the server would).
    fn violation(&mut self, e: FrameError) -> ClientError {
        tracing::debug!(error = %e, "malformed frame from the server");
        if let Link::Quic(q) = &self.link {
            q.conn
                .close(CloseCode::ProtocolViolation.varint(), b"malformed frame");
        }
        ClientError::Frame(e)
    }

    fn on_datagram(&mut self, datagram: Bytes) {
        self.stats.datagrams_received += 1;
        self.pacer.on_datagram(Instant::now().into_std());
        if self.compact.is_some() {
            self.on_compact_datagram(&datagram);
            return;
        }
        let frames = match split_datagram(&datagram, Some(ids::P_STANDARD_UPDATE)) {
            Ok(f) => f,
            Err(e) => {
                self.stats.datagrams_dropped += 1;
                tracing::debug!(error = %e, "dropped a malformed datagram");
                return;
            }
        };
        let mut packets = Vec::new();
        for f in frames {
            match decode_server(f.ty, f.payload, &self.genders) {
                Ok(packet) => packets.push(Incoming {
                    packet,
                    channel: Channel::Datagram,
                }),
                Err(e) => {
                    self.stats.datagrams_dropped += 1;
                    tracing::debug!(error = %e, "dropped a datagram with an undecodable update");
                    return;
                }
            }
        }
        self.ready.extend(packets);
    }

    /// A compact snapshot part: its entries become `P_StandardUpdate` packets; a new whole
    /// tick is acknowledged with an ack-only datagram when no position update carried an
    /// acknowledgement for [`COMPACT_ACK_EVERY`].
    fn on_compact_datagram(&mut self, datagram: &[u8]) {
        use shared::compact::CompactError as E;
        let Some(c) = &mut self.compact else { return };
        match c.dec.on_datagram(datagram) {
            Ok(entries) => {
                self.ready.extend(entries.iter().map(|e| Incoming {
                    packet: ServerPacket::StandardUpdate(e.to_update()),
                    channel: Channel::Datagram,
                }));
            }
            Err(e) => {
                self.stats.datagrams_dropped += 1;
                let r = &mut self.stats.compact_refused;
                match e {
                    E::Stale(_) | E::Part => r.stale += 1,
                    E::UnknownBase(_) => r.unknown_base += 1,
                    _ => r.malformed += 1,
                }
                tracing::debug!(error = %e, "dropped a compact datagram");
                return;
            }
        }
        let ack = c.dec.ack();
        if let (true, Some(a)) = (c.ack_due(ack), ack) {
            c.sent_ack(ack);
            let mut buf = Vec::with_capacity(3);
            shared::compact::encode_ack(a, &mut buf);
            let _ = self.send_raw_datagram(buf);
        }
    }

    // ---------------------------------------------------------------------------------
    // Closing.

    /// Closes the connection with an application code (transport.md: 0 normal ...).
    ///
    /// Best effort, bounded by about two seconds: queued frames are written, the stream is
    /// finished and its data acknowledged, then the close is sent and, if the connection
    /// owns its endpoint, the endpoint drains.
    pub async fn close(mut self, code: CloseCode) {
        let _ = tokio::time::timeout(CLOSE_GRACE, self.flush()).await;
        match self.link {
            Link::Quic(mut q) => {
                let _ = tokio::time::timeout(CLOSE_GRACE, async {
                    if q.send.finish().is_ok() {
                        let _ = q.send.stopped().await;
                    }
                })
                .await;
                q.conn.close(code.varint(), b"");
                if q.owns_endpoint {
                    let _ = tokio::time::timeout(CLOSE_GRACE, q.endpoint.wait_idle()).await;
                }
            }
            // A graceful ENet disconnect carrying the code.
            Link::Enet(e) => e.close(code, CLOSE_GRACE).await,
        }
    }

    /// Waits until the connection is closed, by either side, and says why. On RCEnet the
    /// server's code comes as the ENet disconnect's data.
    pub async fn closed(&self) -> CloseReason {
        match &self.link {
            Link::Quic(q) => q.conn.closed().await.into(),
            Link::Enet(e) => e.closed().await,
        }
    }

    /// Why the connection closed, or `None` while it is open.
    pub fn close_reason(&self) -> Option<CloseReason> {
        match &self.link {
            Link::Quic(q) => q.conn.close_reason().map(Into::into),
            Link::Enet(e) => e.close_reason(),
        }
    }

    // ---------------------------------------------------------------------------------
    // State and accessors.

    /// Tells the decoder each template's `Genders`, so that `P_NewActor` is decoded in the
    /// form its template implies (a gender byte only when `Genders == 0`). Without this the
    /// form is told apart by length. [`fetch_catalogue`](Self::fetch_catalogue) calls it.
    pub fn set_actor_templates(&mut self, templates: &[ActorTemplateDef]) {
        self.genders = templates.iter().map(|t| (t.id, t.genders)).collect();
    }

    /// What arrived so far.
    pub fn stats(&self) -> ConnectionStats {
        self.stats
    }

    /// How long the menu calls wait for a reply.
    pub fn reply_timeout(&self) -> Duration {
        self.reply_timeout
    }

    /// Changes how long the menu calls wait for a reply.
    pub fn set_reply_timeout(&mut self, timeout: Duration) {
        self.reply_timeout = timeout;
    }

    /// The largest datagram the path allows now, `None` if the server does not accept
    /// datagrams.
    pub fn max_datagram_size(&self) -> Option<usize> {
        match &self.link {
            Link::Quic(q) => q.conn.max_datagram_size(),
            Link::Enet(_) => Some(ENET_DATAGRAM),
        }
    }

    /// The server's address.
    pub fn remote_address(&self) -> SocketAddr {
        match &self.link {
            Link::Quic(q) => q.conn.remote_address(),
            Link::Enet(e) => e.remote_address(),
        }
    }

    /// An RCEnet connection's UDP traffic so far; `None` on QUIC (see [`quic`](Self::quic)).
    pub fn enet_counts(&self) -> Option<crate::enet::EnetCounts> {
        match &self.link {
            Link::Quic(_) => None,
            Link::Enet(e) => Some(e.counts()),
        }
    }

    /// The underlying quinn connection (RTT, statistics, ...); `None` on RCEnet.
    pub fn quic(&self) -> Option<&quinn::Connection> {
        match &self.link {
            Link::Quic(q) => Some(&q.conn),
            Link::Enet(_) => None,
        }
    }
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("remote", &self.remote_address())
            .field("transport", &self.transport())
            .field("user", &self.creds.as_ref().map(|c| c.user.to_latin1()))
            .field("stream_finished", &self.stream_finished)
            .field("unsent", &self.out.len().saturating_sub(self.out_sent))
            .field("buffered", &self.decoder.buffered())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// Decodes a server packet. `P_NewActor` carries a gender byte only when its template's
/// `Genders == 0`; when the template is known the decoder insists on that form, otherwise
/// it tells the two forms apart by length.
fn decode_server(
    ty: u8,
    payload: &[u8],
    genders: &HashMap<u16, u8>,
) -> Result<ServerPacket, DecodeError> {
    let known = match payload.get(12..14) {
        Some(&[lo, hi]) if ty == ids::P_NEW_ACTOR => genders.get(&u16::from_le_bytes([lo, hi])),
        _ => None,
    };
    match known {
        Some(&g) => {
            let has_gender = move |_: u16| g == 0;
            let ctx = DecodeCtx {
                template_has_gender: Some(&has_gender),
                ..DecodeCtx::default()
            };
            ServerPacket::decode_with(ty, payload, &ctx)
        }
        None => ServerPacket::decode(ty, payload),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::proto::NewActor;

    fn new_actor(template_id: u16, gender: Option<u8>) -> Vec<u8> {
        let a = NewActor {
            instance_handle: 1,
            runtime_id: 7,
            level: 1,
            xp: 0,
            template_id,
            x: 0.0,
            y: 0.0,
            z: 0.0,
            yaw: 0.0,
            human: 1,
            actor_name: "Bob".into(),
            tag: "".into(),
            gender,
            reputation: 0,
            face: 0,
            hair: 0,
            body: 0,
            beard: 0,
            speed: 10,
            speed_max: 10,
            health: 10,
            health_max: 10,
            weapon: 65535,
            shield: 65535,
            hat: 65535,
            chest: 65535,
            home_faction: 0,
            ratings: vec![100; 100],
        };
        let mut v = Vec::new();
        ServerPacket::NewActor(a).encode_payload(&mut v);
        v
    }

    #[test]
    fn new_actor_follows_the_template_when_known() {
        let with = new_actor(3, Some(1));
        let without = new_actor(3, None);
        let none = HashMap::new();
        assert!(decode_server(ids::P_NEW_ACTOR, &with, &none).is_ok());
        assert!(decode_server(ids::P_NEW_ACTOR, &without, &none).is_ok());
        // Template 3 has Genders == 1 (male only): no gender byte allowed.
        let male_only = HashMap::from([(3u16, 1u8)]);
        assert!(decode_server(ids::P_NEW_ACTOR, &without, &male_only).is_ok());
        assert!(decode_server(ids::P_NEW_ACTOR, &with, &male_only).is_err());
        let both = HashMap::from([(3u16, 0u8)]);
        assert!(decode_server(ids::P_NEW_ACTOR, &with, &both).is_ok());
        assert!(decode_server(ids::P_NEW_ACTOR, &without, &both).is_err());
        // Short payloads never panic.
        assert!(decode_server(ids::P_NEW_ACTOR, &with[..13], &both).is_err());
    }
}
