//! One connection: sequence numbers, outgoing queues and retransmission, incoming ordering
//! and reassembly, acknowledgements and the RTT estimate (ENet 1.1 peer.c and protocol.c).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::SocketAddr;

use bytes::Bytes;

use crate::config::HostConfig;
use crate::error::SendError;
use crate::event::{PeerId, PeerState};
use crate::host::Src;
use crate::seq::{Order, classify};
use crate::stats::PeerTraffic;
use crate::wire::{
    self, Command, CommandHeader, ConnectParams, FLAG_ACKNOWLEDGE, FragmentInfo, Frame, Header,
    SYSTEM_CHANNEL, kind,
};

/// RTT a connection starts with (ms).
pub(crate) const DEFAULT_RTT: u32 = 500;
/// A PING goes out after this long without an ACK and with nothing reliable in flight.
pub(crate) const PING_INTERVAL: u64 = 500;
/// A command's retransmission timer may grow to this many times its start.
const TIMEOUT_LIMIT: u64 = 32;
/// Most expired reliable commands resent at one check when the peer is not in recovery.
const RESEND_BURST: usize = 8;
/// Below this wait since the oldest unacknowledged send a peer is never dropped.
pub(crate) const TIMEOUT_MINIMUM: u64 = 5000;
/// Past this wait since the oldest unacknowledged send a peer is always dropped.
pub(crate) const TIMEOUT_MAXIMUM: u64 = 30000;
/// Default packet throttle parameters (sent in CONNECT, echoed in VERIFY_CONNECT).
pub(crate) const THROTTLE_INTERVAL: u32 = 5000;
pub(crate) const THROTTLE_ACCELERATION: u32 = 2;
pub(crate) const THROTTLE_DECELERATION: u32 = 2;
/// Most ACKs queued for one peer; a reliable flood beyond it is simply not acknowledged.
const MAX_PENDING_ACKS: usize = 4096;
/// Bandwidth per 4096 bytes of window (ENet's window size scale).
const WINDOW_SIZE_SCALE: u32 = 64 * 1024;
/// Most reliable numbers a channel may span from its oldest unacknowledged command to the
/// next one sent (see `span_ok`).
const MAX_SEQ_SPAN: u64 = 0x0FFF;
/// ENet 1.1's unsequenced window, in groups.
const UNSEQUENCED_WINDOW: u32 = 128;

/// A queued or sent command. Its body is stored without data; the payload travels apart.
#[derive(Debug, Clone)]
pub(crate) struct OutCmd {
    header: CommandHeader,
    body: Command<'static>,
    payload: Bytes,
    sent_time: u64,
    rto: u64,
    rto_limit: u64,
    /// The channel's reliable number without wrap (0 on the system channel and for
    /// unreliable commands).
    ext: u64,
}

impl OutCmd {
    fn new(header: CommandHeader, body: Command<'static>, payload: Bytes) -> Self {
        Self {
            header,
            body,
            payload,
            sent_time: 0,
            rto: 0,
            rto_limit: 0,
            ext: 0,
        }
    }

    fn fixed_size(&self) -> usize {
        wire::command_size(self.body.kind()).unwrap_or(0)
    }

    fn encode(&self, out: &mut Vec<u8>) {
        Frame {
            header: self.header,
            command: self.body.with_data(&self.payload),
        }
        .encode(out);
    }
}

/// Unreliable commands waiting to be sent, encoded when queued (header and payload side
/// by side in one buffer): a broadcast goes to many peers, and each copies its few bytes
/// here rather than sharing the broadcast's buffer (a reference count every peer's thread
/// would touch) and keeping a command record per packet.
#[derive(Debug, Default)]
struct Unreliables {
    /// Encoded commands; the oldest starts at `head`.
    buf: Vec<u8>,
    head: usize,
    /// Each command's encoded size and its payload's size, oldest first.
    sizes: VecDeque<(u16, u16)>,
}

impl Unreliables {
    /// What a drained queue may keep of its buffer (a burst's buffer is given back).
    const KEEP: usize = 16 * 1024;

    fn push(&mut self, frame: &Frame<'_>, payload: usize) {
        let before = self.buf.len();
        frame.encode(&mut self.buf);
        let size = self.buf.len() - before;
        match (u16::try_from(size), u16::try_from(payload)) {
            (Ok(size), Ok(payload)) => self.sizes.push_back((size, payload)),
            // Larger than any MTU: such a packet goes as fragments, never here.
            _ => self.buf.truncate(before),
        }
    }

    /// The oldest command's encoded size.
    fn front(&self) -> Option<usize> {
        self.sizes.front().map(|&(size, _)| usize::from(size))
    }

    /// Removes the oldest command, appending its encoding to `out` if given; returns its
    /// payload's size.
    fn pop(&mut self, out: Option<&mut Vec<u8>>) -> Option<usize> {
        let (size, payload) = self.sizes.pop_front()?;
        let end = self.head + usize::from(size);
        if let (Some(out), Some(bytes)) = (out, self.buf.get(self.head..end)) {
            out.extend_from_slice(bytes);
        }
        self.head = end;
        if self.sizes.is_empty() {
            self.clear();
        } else if self.head > Self::KEEP && self.head * 2 > self.buf.len() {
            self.buf.drain(..self.head);
            self.head = 0;
        }
        Some(usize::from(payload))
    }

    fn clear(&mut self) {
        self.sizes.clear();
        self.head = 0;
        self.buf.clear();
        if self.buf.capacity() > Self::KEEP {
            self.buf.shrink_to(Self::KEEP);
        }
    }

    fn is_empty(&self) -> bool {
        self.sizes.is_empty()
    }
}

/// A packet to send: shared (kept as given until sent and, reliable, acknowledged), or
/// borrowed (copied: into the encoded unreliable queue, or into a buffer of its own).
#[derive(Debug)]
pub enum Payload<'a> {
    Shared(Bytes),
    Borrowed(&'a [u8]),
}

impl Payload<'_> {
    fn as_slice(&self) -> &[u8] {
        match self {
            Self::Shared(b) => b,
            Self::Borrowed(s) => s,
        }
    }

    fn len(&self) -> usize {
        self.as_slice().len()
    }

    fn into_bytes(self) -> Bytes {
        match self {
            Self::Shared(b) => b,
            Self::Borrowed(s) => Bytes::copy_from_slice(s),
        }
    }
}

/// An acknowledgement waiting to be sent.
#[derive(Debug, Clone, Copy)]
struct Ack {
    channel: u8,
    seq: u16,
    sent_time: u16,
    disconnect: bool,
}

/// Per-channel sequence counters (small: a client asks for 254 channels).
#[derive(Debug, Clone, Copy, Default)]
struct Channel {
    /// Reliable numbers handed out, without wrap; the wire carries the low 16 bits.
    out_reliable: u64,
    out_unreliable: u16,
    in_reliable: u16,
    in_unreliable: u16,
}

/// An early reliable packet or a fragmented packet being assembled.
#[derive(Debug)]
enum Held {
    Packet(Bytes),
    Fragments {
        count: u32,
        remaining: u32,
        bitmap: Vec<u32>,
        buf: Vec<u8>,
    },
}

impl Held {
    fn footprint(&self) -> usize {
        match self {
            Self::Packet(b) => b.len(),
            Self::Fragments { bitmap, buf, .. } => buf.len() + bitmap.len() * 4,
        }
    }
}

/// A packet ready for the application.
#[derive(Debug)]
pub(crate) struct Delivery {
    pub channel: u8,
    pub data: Bytes,
    pub reliable: bool,
}

/// Why a received command was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// ENet 1.1's command failure: stop reading the datagram.
    Command,
    /// Client: VERIFY_CONNECT did not echo our parameters.
    Refused,
    /// More than `max_reassembly_bytes` held: drop the peer.
    Overflow,
    /// A fragmented packet larger than `max_packet_bytes`: drop the peer.
    Oversized,
}

/// What an ACK did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AckResult {
    /// Its sentTime lies in the future: ignored.
    Future,
    /// Accepted; the kind of the command it removed, if any.
    Removed(Option<u8>),
}

/// The result of one datagram built for a peer.
#[derive(Debug, Default)]
pub(crate) struct Built {
    pub data: Vec<u8>,
    pub acked_disconnect: bool,
}

/// ENet's throttle scale: a throttle of 32 sends every unreliable packet, 0 almost none.
const THROTTLE_SCALE: u32 = 32;
/// What the throttle counter advances per unreliable packet (mod the scale).
const THROTTLE_COUNTER_STEP: u32 = 7;

/// ENet 1.1's unreliable packet throttle (`enet_peer_throttle` and the RTT epochs of
/// `handle_acknowledge`): each ACK's round trip against the lowest of the last interval.
#[derive(Debug, Clone, Copy)]
struct Throttle {
    on: bool,
    /// 0..=`THROTTLE_SCALE`: the share of unreliable packets sent, in 32ths.
    value: u32,
    counter: u32,
    last_rtt: u32,
    last_rtt_var: u32,
    lowest_rtt: u32,
    highest_rtt_var: u32,
    epoch: Option<u64>,
}

impl Throttle {
    fn new(on: bool) -> Self {
        Self {
            on,
            value: THROTTLE_SCALE,
            counter: 0,
            last_rtt: DEFAULT_RTT,
            last_rtt_var: 0,
            lowest_rtt: DEFAULT_RTT,
            highest_rtt_var: 0,
            epoch: None,
        }
    }

    /// One round-trip sample, before the RTT estimate takes it (`enet_peer_throttle`).
    fn sample(&mut self, rtt: u32, acceleration: u32, deceleration: u32) {
        if self.last_rtt <= self.last_rtt_var {
            self.value = THROTTLE_SCALE;
        } else if rtt < self.last_rtt {
            self.value = self.value.saturating_add(acceleration).min(THROTTLE_SCALE);
        } else if rtt
            > self
                .last_rtt
                .saturating_add(self.last_rtt_var.saturating_mul(2))
        {
            self.value = self.value.saturating_sub(deceleration);
        }
    }

    /// After the RTT estimate took a sample: the interval's extremes, and a new interval
    /// every `interval` ms.
    fn after(&mut self, now: u64, rtt: u32, rtt_var: u32, interval: u32) {
        self.lowest_rtt = self.lowest_rtt.min(rtt);
        self.highest_rtt_var = self.highest_rtt_var.max(rtt_var);
        if self
            .epoch
            .is_none_or(|e| now.saturating_sub(e) >= u64::from(interval))
        {
            self.last_rtt = self.lowest_rtt;
            self.last_rtt_var = self.highest_rtt_var;
            self.lowest_rtt = rtt;
            self.highest_rtt_var = rtt_var;
            self.epoch = Some(now);
        }
    }

    /// Whether the next unreliable packet goes (ENet's counter against the throttle).
    fn pass(&mut self) -> bool {
        if !self.on {
            return true;
        }
        self.counter = (self.counter + THROTTLE_COUNTER_STEP) % THROTTLE_SCALE;
        self.counter <= self.value
    }
}

/// One connection.
#[derive(Debug)]
pub(crate) struct Peer {
    /// Floor of a reliable command's first retransmission timer (`HostConfig::min_rto_ms`).
    min_rto: u64,
    /// A command was resent and no ACK has arrived since (see `check_timeouts`).
    recovering: bool,
    /// In recovery: when the next probe may go.
    probe_due: u64,
    pub id: PeerId,
    pub state: PeerState,
    pub addr: SocketAddr,
    pub session: u32,
    /// The remote slot: put in every header we send.
    pub outgoing_peer_id: u16,
    pub mtu: u16,
    window: u32,
    channels: Vec<Channel>,
    system_seq: u16,
    pub rtt: u32,
    rtt_var: u32,
    pub last_receive: u64,
    pub next_timeout: u64,
    earliest_timeout: Option<u64>,
    acks: VecDeque<Ack>,
    outgoing_reliable: VecDeque<OutCmd>,
    sent_reliable: VecDeque<OutCmd>,
    outgoing_unreliable: Unreliables,
    in_transit: usize,
    /// The reliable bytes this side lets be in flight for commands never sent yet, after
    /// losses (sender side only, invisible on the wire): halved at each round of
    /// retransmissions, grown by each acknowledged command's bytes, within `window`;
    /// resent commands go within `window` alone. 1.1 keeps the fixed window.
    loss_window: usize,
    queued_bytes: usize,
    held: BTreeMap<(u8, u16), Held>,
    held_bytes: usize,
    /// `(channel, ext)` of every reliable data command not yet acknowledged.
    unacked: BTreeSet<(u8, u64)>,
    in_unsequenced_group: u32,
    unsequenced_window: [u32; 4],
    incoming_bandwidth: u32,
    outgoing_bandwidth: u32,
    throttle: (u32, u32, u32),
    pub disconnect_data: u32,
    /// When the slot was taken (half-open expiry).
    pub created: u64,
    /// Whether the application knows this peer (a Connect event, or its own `connect`):
    /// only those get a Disconnect event.
    pub visible: bool,
    /// Whether the slot sits in the host's transmit queue.
    pub queued_for_transmit: bool,
    /// The peer's own datagrams and bytes, both ways.
    pub traffic: PeerTraffic,
    /// The unreliable packet throttle.
    unreliable_throttle: Throttle,
    /// Unreliable packets the throttle dropped.
    pub throttled: u64,
}

impl Peer {
    fn blank(
        id: PeerId,
        addr: SocketAddr,
        session: u32,
        channels: usize,
        mtu: u16,
        cfg: &HostConfig,
        now: u64,
    ) -> Self {
        Self {
            min_rto: cfg.min_rto_ms.max(1),
            recovering: false,
            probe_due: 0,
            id,
            state: PeerState::Connecting,
            addr,
            session,
            outgoing_peer_id: wire::NO_PEER,
            mtu,
            window: wire::MAX_WINDOW,
            channels: vec![Channel::default(); channels],
            system_seq: 0,
            rtt: DEFAULT_RTT,
            rtt_var: 0,
            last_receive: now,
            next_timeout: 0,
            earliest_timeout: None,
            acks: VecDeque::new(),
            outgoing_reliable: VecDeque::new(),
            sent_reliable: VecDeque::new(),
            outgoing_unreliable: Unreliables::default(),
            in_transit: 0,
            loss_window: wire::MAX_WINDOW as usize,
            queued_bytes: 0,
            held: BTreeMap::new(),
            held_bytes: 0,
            unacked: BTreeSet::new(),
            in_unsequenced_group: 0,
            unsequenced_window: [0; 4],
            incoming_bandwidth: 0,
            outgoing_bandwidth: 0,
            throttle: (
                THROTTLE_INTERVAL,
                THROTTLE_ACCELERATION,
                THROTTLE_DECELERATION,
            ),
            disconnect_data: 0,
            created: now,
            traffic: PeerTraffic::default(),
            unreliable_throttle: Throttle::new(cfg.unreliable_throttle),
            throttled: 0,
            visible: false,
            queued_for_transmit: false,
        }
    }

    /// Client: a new connection with its CONNECT queued (system sequence 1).
    pub fn new_client(
        id: PeerId,
        addr: SocketAddr,
        session: u32,
        channels: u8,
        cfg: &HostConfig,
        now: u64,
    ) -> Self {
        let mut p = Self::blank(id, addr, session, usize::from(channels), cfg.mtu, cfg, now);
        p.visible = true;
        let params = ConnectParams {
            outgoing_peer_id: id.slot,
            mtu: p.mtu,
            window_size: p.window,
            channel_count: u32::from(channels),
            incoming_bandwidth: 0,
            outgoing_bandwidth: 0,
            throttle_interval: p.throttle.0,
            throttle_acceleration: p.throttle.1,
            throttle_deceleration: p.throttle.2,
        };
        p.queue_system(FLAG_ACKNOWLEDGE, Command::Connect { params, session });
        p
    }

    /// Server: a half-open connection with its VERIFY_CONNECT queued (system sequence 1).
    /// `params.channel_count` must already be checked to lie in 1..=255.
    pub fn new_server(
        id: PeerId,
        addr: SocketAddr,
        session: u32,
        params: &ConnectParams,
        cfg: &HostConfig,
        now: u64,
    ) -> Self {
        let channels = usize::try_from(params.channel_count).unwrap_or(0);
        let mtu = clamp_mtu(params.mtu).min(clamp_mtu(cfg.mtu));
        let mut p = Self::blank(id, addr, session, channels, mtu, cfg, now);
        p.state = PeerState::AcknowledgingConnect;
        p.outgoing_peer_id = params.outgoing_peer_id & wire::NO_PEER;
        p.incoming_bandwidth = params.incoming_bandwidth;
        p.outgoing_bandwidth = params.outgoing_bandwidth;
        p.throttle = (
            params.throttle_interval,
            params.throttle_acceleration,
            params.throttle_deceleration,
        );
        p.window = window_for(p.incoming_bandwidth);
        let verify = verify_params(id.slot, params, cfg);
        p.queue_system(FLAG_ACKNOWLEDGE, Command::VerifyConnect(verify));
        p
    }

    /// Server: a connection made by the ACK of a cookie VERIFY_CONNECT (no state was kept
    /// for its CONNECT). It gets what a 1.1 server would have computed for a Realm Crafter
    /// client's CONNECT: the client's slot 0, our MTU (the cookie was only given for a
    /// CONNECT mtu ≥ ours), bandwidths 0 (window 32768), throttle 5000/2/2, start RTT; and
    /// `channel_limit` channels, a superset of what the client asked for. System sequence 1
    /// went out in the VERIFY_CONNECT.
    pub fn new_cookie(
        id: PeerId,
        addr: SocketAddr,
        session: u32,
        cfg: &HostConfig,
        now: u64,
    ) -> Self {
        let channels = cfg.channel_limit.clamp(1, 255);
        let mut p = Self::blank(id, addr, session, channels, clamp_mtu(cfg.mtu), cfg, now);
        p.state = PeerState::Connected;
        p.visible = true;
        p.outgoing_peer_id = 0;
        p.system_seq = 1;
        p
    }

    /// Queues a command on the system channel with the next system sequence number.
    pub fn queue_system(&mut self, flags: u8, body: Command<'static>) {
        self.system_seq = self.system_seq.wrapping_add(1);
        let header = CommandHeader {
            command: flags | body.kind(),
            channel: SYSTEM_CHANNEL,
            reliable_seq: self.system_seq,
        };
        if flags & FLAG_ACKNOWLEDGE != 0 {
            self.outgoing_reliable
                .push_back(OutCmd::new(header, body, Bytes::new()));
        } else {
            self.outgoing_unreliable.push(
                &Frame {
                    header,
                    command: body,
                },
                0,
            );
        }
    }

    /// A one-off datagram holding a DISCONNECT 0x44 (unsequenced, not acknowledged) with
    /// the next system sequence number; for `disconnect_now`.
    pub fn disconnect_now_datagram(&mut self, data: u32) -> Vec<u8> {
        self.system_seq = self.system_seq.wrapping_add(1);
        let frame = Frame {
            header: CommandHeader {
                command: wire::FLAG_UNSEQUENCED | kind::DISCONNECT,
                channel: SYSTEM_CHANNEL,
                reliable_seq: self.system_seq,
            },
            command: Command::Disconnect { data },
        };
        let mut out = Vec::with_capacity(14);
        Header {
            session: self.session,
            peer_id: self.outgoing_peer_id,
            sent_time: None,
        }
        .encode(&mut out);
        frame.encode(&mut out);
        out
    }

    /// Queued plus unacknowledged payload bytes.
    pub fn outgoing_bytes(&self) -> usize {
        self.queued_bytes
    }

    /// Whether nothing reliable is queued or in flight (the PING condition).
    pub fn reliable_idle(&self) -> bool {
        self.outgoing_reliable.is_empty() && self.sent_reliable.is_empty()
    }

    /// Whether reliable commands await their ACK.
    pub fn has_sent_reliable(&self) -> bool {
        !self.sent_reliable.is_empty()
    }

    /// Drops every queue, as ENet does on DISCONNECT (acks, outgoing, sent, held).
    pub fn reset_queues(&mut self) {
        self.acks.clear();
        self.outgoing_reliable.clear();
        self.sent_reliable.clear();
        self.outgoing_unreliable.clear();
        self.held.clear();
        self.held_bytes = 0;
        self.unacked.clear();
        self.in_transit = 0;
        self.queued_bytes = 0;
    }

    /// Queues an application packet (ENet 1.1 `enet_peer_send`).
    pub fn send(
        &mut self,
        channel: u8,
        data: Payload<'_>,
        reliable: bool,
        cfg: &HostConfig,
    ) -> Result<(), SendError> {
        if self.state != PeerState::Connected {
            return Err(SendError::NotConnected);
        }
        let fragment_len = usize::from(self.mtu)
            .saturating_sub(wire::HEADER_SIZE + 24)
            .max(1);
        let len = data.len();
        if self.queued_bytes.saturating_add(len) > cfg.max_outgoing_bytes {
            return Err(SendError::QueueFull);
        }
        let count = len.div_ceil(fragment_len);
        if len > fragment_len && count > usize::from(u16::MAX) {
            return Err(SendError::TooLarge);
        }
        let total = u32::try_from(len).map_err(|_| SendError::TooLarge)?;
        let ch = self
            .channels
            .get_mut(usize::from(channel))
            .ok_or(SendError::InvalidChannel)?;
        let mut reliable_cmds = Vec::new();
        if len > fragment_len {
            let payload = data.into_bytes();
            let start_seq = (ch.out_reliable + 1) as u16;
            let count32 = u32::try_from(count).map_err(|_| SendError::TooLarge)?;
            for (number, offset) in (0..count32).zip((0..len).step_by(fragment_len)) {
                ch.out_reliable += 1;
                let end = offset.saturating_add(fragment_len).min(len);
                let info = FragmentInfo {
                    start_seq,
                    count: count32,
                    number,
                    total_length: total,
                    offset: u32::try_from(offset).map_err(|_| SendError::TooLarge)?,
                };
                let header = CommandHeader {
                    command: FLAG_ACKNOWLEDGE | kind::SEND_FRAGMENT,
                    channel,
                    reliable_seq: ch.out_reliable as u16,
                };
                let body = Command::SendFragment { info, data: &[] };
                let mut cmd = OutCmd::new(header, body, payload.slice(offset..end));
                cmd.ext = ch.out_reliable;
                reliable_cmds.push(cmd);
            }
        } else if reliable {
            ch.out_reliable += 1;
            let header = CommandHeader {
                command: FLAG_ACKNOWLEDGE | kind::SEND_RELIABLE,
                channel,
                reliable_seq: ch.out_reliable as u16,
            };
            let body = Command::SendReliable { data: &[] };
            let mut cmd = OutCmd::new(header, body, data.into_bytes());
            cmd.ext = ch.out_reliable;
            reliable_cmds.push(cmd);
        } else {
            ch.out_unreliable = ch.out_unreliable.wrapping_add(1);
            let header = CommandHeader {
                command: kind::SEND_UNRELIABLE,
                channel,
                reliable_seq: ch.out_reliable as u16,
            };
            let command = Command::SendUnreliable {
                unreliable_seq: ch.out_unreliable,
                data: data.as_slice(),
            };
            self.outgoing_unreliable
                .push(&Frame { header, command }, len);
        }
        for cmd in reliable_cmds {
            self.unacked.insert((channel, cmd.ext));
            self.outgoing_reliable.push_back(cmd);
        }
        self.queued_bytes = self.queued_bytes.saturating_add(len);
        Ok(())
    }

    /// Queues the ACK of a received command (the caller applies the state rules).
    /// Returns false if the ACK queue was full.
    pub fn queue_ack(&mut self, header: &CommandHeader, sent_time: u16) -> bool {
        if self.acks.len() >= MAX_PENDING_ACKS {
            return false;
        }
        self.acks.push_back(Ack {
            channel: header.channel,
            seq: header.reliable_seq,
            sent_time,
            disconnect: header.kind() == kind::DISCONNECT,
        });
        true
    }

    /// Handles an ACK: RTT update, removal of the acknowledged command (spec §4.4).
    pub fn handle_ack(
        &mut self,
        now: u64,
        channel: u8,
        received_seq: u16,
        sent16: u16,
    ) -> AckResult {
        let Some(sent) = reconstruct_time(now, sent16).filter(|&t| t <= now) else {
            return AckResult::Future;
        };
        self.last_receive = now;
        self.earliest_timeout = None;
        if self.recovering {
            // The peer reads: the commands parked in recovery may go at the next check.
            self.recovering = false;
            self.next_timeout = now;
        }
        let sample = u32::try_from(now - sent).unwrap_or(u32::MAX);
        let (interval, acceleration, deceleration) = self.throttle;
        self.unreliable_throttle
            .sample(sample, acceleration, deceleration);
        self.rtt_var -= self.rtt_var / 4;
        if sample >= self.rtt {
            self.rtt += (sample - self.rtt) / 8;
            self.rtt_var = self.rtt_var.saturating_add((sample - self.rtt) / 4);
        } else {
            self.rtt -= (self.rtt - sample) / 8;
            self.rtt_var = self.rtt_var.saturating_add((self.rtt - sample) / 4);
        }
        self.unreliable_throttle
            .after(now, self.rtt, self.rtt_var, interval);
        AckResult::Removed(self.remove_sent(received_seq, channel))
    }

    /// Removes the command `(channel, seq)` from the sent list (or, unlike ENet 1.1, from
    /// the outgoing list if it waits there for retransmission); returns its kind.
    pub fn remove_sent(&mut self, seq: u16, channel: u8) -> Option<u8> {
        let matches = |c: &OutCmd| c.header.reliable_seq == seq && c.header.channel == channel;
        let found = if let Some(i) = self.sent_reliable.iter().position(matches) {
            let cmd = self.sent_reliable.remove(i)?;
            self.in_transit = self.in_transit.saturating_sub(cmd.payload.len());
            self.loss_window = self
                .loss_window
                .saturating_add(cmd.payload.len().max(1))
                .min(wire::MAX_WINDOW as usize);
            cmd
        } else {
            let i = self.outgoing_reliable.iter().position(matches)?;
            self.outgoing_reliable.remove(i)?
        };
        self.queued_bytes = self.queued_bytes.saturating_sub(found.payload.len());
        self.unacked.remove(&(channel, found.ext));
        Some(found.body.kind())
    }

    /// Client: VERIFY_CONNECT arrived (ENet 1.1 `handle_verify_connect`).
    pub fn handle_verify_connect(&mut self, now: u64, v: &ConnectParams) -> Result<(), Fault> {
        if self.state != PeerState::Connecting {
            return Err(Fault::Command);
        }
        if usize::try_from(v.channel_count).ok() != Some(self.channels.len())
            || (
                v.throttle_interval,
                v.throttle_acceleration,
                v.throttle_deceleration,
            ) != self.throttle
        {
            self.state = PeerState::Zombie;
            return Err(Fault::Refused);
        }
        self.remove_sent(1, SYSTEM_CHANNEL);
        self.outgoing_peer_id = v.outgoing_peer_id & wire::NO_PEER;
        self.mtu = self.mtu.min(clamp_mtu(v.mtu));
        self.window = self
            .window
            .min(v.window_size.clamp(wire::MIN_WINDOW, wire::MAX_WINDOW));
        self.incoming_bandwidth = v.incoming_bandwidth;
        self.outgoing_bandwidth = v.outgoing_bandwidth;
        self.state = PeerState::Connected;
        self.last_receive = now;
        Ok(())
    }

    /// Server: the handshake is complete (the VERIFY_CONNECT is acknowledged, explicitly or
    /// by the client's first datagram to our slot).
    pub fn complete_handshake(&mut self, now: u64) {
        self.remove_sent(1, SYSTEM_CHANNEL);
        self.state = PeerState::Connected;
        self.visible = true;
        self.last_receive = now;
    }

    /// BANDWIDTH_LIMIT received: store the limits, recompute the window.
    pub fn handle_bandwidth_limit(&mut self, incoming: u32, outgoing: u32) {
        self.incoming_bandwidth = incoming;
        self.outgoing_bandwidth = outgoing;
        self.window = window_for(incoming);
    }

    /// THROTTLE_CONFIGURE received.
    pub fn handle_throttle_configure(
        &mut self,
        interval: u32,
        acceleration: u32,
        deceleration: u32,
    ) {
        self.throttle = (interval, acceleration, deceleration);
    }

    fn check_data_state(&self, channel: u8) -> Result<(), Fault> {
        if self.state != PeerState::Connected || usize::from(channel) >= self.channels.len() {
            return Err(Fault::Command);
        }
        Ok(())
    }

    /// SEND_RELIABLE received. `Ok(false)`: a duplicate or old command (still acknowledged).
    pub fn receive_reliable(
        &mut self,
        header: &CommandHeader,
        data: &[u8],
        src: Src<'_>,
        cfg: &HostConfig,
        out: &mut Vec<Delivery>,
    ) -> Result<bool, Fault> {
        self.check_data_state(header.channel)?;
        let ch = header.channel;
        let incoming = self.channel(ch)?.in_reliable;
        let seq = header.reliable_seq;
        if classify(incoming, seq) != Order::New || self.held.contains_key(&(ch, seq)) {
            return Ok(false);
        }
        // An early packet is copied: a slice would keep its whole datagram alive for as
        // long as it waits, beyond what `max_reassembly_bytes` counts.
        let bytes = if seq == incoming.wrapping_add(1) {
            src.bytes(data)
        } else {
            Bytes::copy_from_slice(data)
        };
        self.hold(ch, seq, Held::Packet(bytes));
        self.drain(ch, out);
        self.check_held(cfg)?;
        Ok(true)
    }

    /// SEND_FRAGMENT received. `Ok(false)`: old or duplicate (still acknowledged).
    pub fn receive_fragment(
        &mut self,
        header: &CommandHeader,
        info: &FragmentInfo,
        data: &[u8],
        cfg: &HostConfig,
        out: &mut Vec<Delivery>,
    ) -> Result<bool, Fault> {
        self.check_data_state(header.channel)?;
        let ch = header.channel;
        let incoming = self.channel(ch)?.in_reliable;
        if classify(incoming, info.start_seq) != Order::New {
            return Ok(false);
        }
        let offset = u64::from(info.offset);
        let total = u64::from(info.total_length);
        let len = data.len() as u64;
        if offset >= total || offset + len > total || info.number >= info.count {
            return Err(Fault::Command);
        }
        if total > cfg.max_packet_bytes as u64 {
            return Err(Fault::Oversized);
        }
        if u64::from(info.count) > total || info.count > u32::from(u16::MAX) {
            return Err(Fault::Command);
        }
        let key = (ch, info.start_seq);
        match self.held.get(&key) {
            Some(Held::Fragments { count, buf, .. }) => {
                if *count != info.count || buf.len() as u64 != total {
                    return Err(Fault::Command);
                }
            }
            Some(Held::Packet(_)) => return Err(Fault::Command),
            None => {
                let words = usize::try_from(info.count.div_ceil(32)).unwrap_or(usize::MAX);
                let size = usize::try_from(total).map_err(|_| Fault::Oversized)?;
                let fresh = Held::Fragments {
                    count: info.count,
                    remaining: info.count,
                    bitmap: vec![0; words],
                    buf: vec![0; size],
                };
                self.hold(ch, info.start_seq, fresh);
            }
        }
        let mut fresh_piece = false;
        if let Some(Held::Fragments {
            remaining,
            bitmap,
            buf,
            ..
        }) = self.held.get_mut(&key)
        {
            let word = usize::try_from(info.number / 32).unwrap_or(usize::MAX);
            let bit = 1u32 << (info.number % 32);
            if let Some(w) = bitmap.get_mut(word)
                && *w & bit == 0
            {
                *w |= bit;
                *remaining = remaining.saturating_sub(1);
                let start = usize::try_from(offset).unwrap_or(usize::MAX);
                if let Some(dst) = buf.get_mut(start..start.saturating_add(data.len())) {
                    dst.copy_from_slice(data);
                }
                fresh_piece = true;
            }
        }
        self.drain(ch, out);
        self.check_held(cfg)?;
        Ok(fresh_piece)
    }

    /// SEND_UNRELIABLE received: delivered at once if it belongs to the channel's current
    /// reliable number and is newer than the last unreliable delivered; else dropped.
    pub fn receive_unreliable(
        &mut self,
        header: &CommandHeader,
        unreliable_seq: u16,
        data: &[u8],
        src: Src<'_>,
        out: &mut Vec<Delivery>,
    ) -> Result<bool, Fault> {
        self.check_data_state(header.channel)?;
        let chan = self.channel_mut(header.channel)?;
        if header.reliable_seq != chan.in_reliable
            || classify(chan.in_unreliable, unreliable_seq) != Order::New
        {
            return Ok(false);
        }
        chan.in_unreliable = unreliable_seq;
        out.push(Delivery {
            channel: header.channel,
            data: src.bytes(data),
            reliable: false,
        });
        Ok(true)
    }

    /// SEND_UNSEQUENCED received (ENet 1.1's 128-group window).
    pub fn receive_unsequenced(
        &mut self,
        header: &CommandHeader,
        group: u16,
        data: &[u8],
        src: Src<'_>,
        out: &mut Vec<Delivery>,
    ) -> Result<bool, Fault> {
        self.check_data_state(header.channel)?;
        let group = u32::from(group);
        let index = group % UNSEQUENCED_WINDOW;
        if group >= self.in_unsequenced_group + UNSEQUENCED_WINDOW
            || (self.in_unsequenced_group >= 0xF000 && group < 0x1000)
        {
            self.in_unsequenced_group = group - index;
            self.unsequenced_window = [0; 4];
        } else {
            let word = self
                .unsequenced_window
                .get(usize::try_from(index / 32).unwrap_or(0));
            if group < self.in_unsequenced_group
                || word.is_some_and(|w| w & (1 << (index % 32)) != 0)
            {
                return Ok(false);
            }
        }
        if let Some(w) = self
            .unsequenced_window
            .get_mut(usize::try_from(index / 32).unwrap_or(0))
        {
            *w |= 1 << (index % 32);
        }
        out.push(Delivery {
            channel: header.channel,
            data: src.bytes(data),
            reliable: false,
        });
        Ok(true)
    }

    fn channel(&self, ch: u8) -> Result<&Channel, Fault> {
        self.channels.get(usize::from(ch)).ok_or(Fault::Command)
    }

    fn channel_mut(&mut self, ch: u8) -> Result<&mut Channel, Fault> {
        self.channels.get_mut(usize::from(ch)).ok_or(Fault::Command)
    }

    fn hold(&mut self, ch: u8, seq: u16, held: Held) {
        self.held_bytes = self.held_bytes.saturating_add(held.footprint());
        self.held.insert((ch, seq), held);
    }

    /// After delivery: whether what is still held fits the bound.
    fn check_held(&self, cfg: &HostConfig) -> Result<(), Fault> {
        if self.held_bytes > cfg.max_reassembly_bytes {
            Err(Fault::Overflow)
        } else {
            Ok(())
        }
    }

    /// Delivers the channel's next reliable packets while they are complete and in order.
    fn drain(&mut self, ch: u8, out: &mut Vec<Delivery>) {
        loop {
            let Some(chan) = self.channels.get(usize::from(ch)) else {
                return;
            };
            let next = chan.in_reliable.wrapping_add(1);
            let key = (ch, next);
            let advance = match self.held.get(&key) {
                Some(Held::Packet(_)) => 1u16,
                Some(Held::Fragments {
                    remaining: 0,
                    count,
                    ..
                }) => u16::try_from(*count).unwrap_or(u16::MAX).max(1),
                _ => return,
            };
            let Some(held) = self.held.remove(&key) else {
                return;
            };
            self.held_bytes = self.held_bytes.saturating_sub(held.footprint());
            let data = match held {
                Held::Packet(b) => b,
                Held::Fragments { buf, .. } => Bytes::from(buf),
            };
            if let Some(chan) = self.channels.get_mut(usize::from(ch)) {
                chan.in_reliable = next.wrapping_add(advance - 1);
            }
            if advance > 1 {
                // Sequence numbers the fragments used can never be delivered: drop anything
                // (inconsistent) held there.
                let mut freed = 0;
                self.held.retain(|&(c, s), h| {
                    let covered = c == ch && s.wrapping_sub(next) < advance;
                    if covered {
                        freed += h.footprint();
                    }
                    !covered
                });
                self.held_bytes = self.held_bytes.saturating_sub(freed);
            }
            out.push(Delivery {
                channel: ch,
                data,
                reliable: true,
            });
        }
    }

    /// Retransmission and timeout check (ENet 1.1 `check_timeouts`). Returns `Err(())` when
    /// the peer must be dropped, else the number of commands queued again.
    ///
    /// One deviation, on the sender's side only: ENet 1.1 resends *every* command whose
    /// timer ran out, at once. When a receiver is merely late (a busy machine, a scheduler
    /// hiccup) that resends a whole window to a peer that still has it, and on a loaded
    /// host the resends feed themselves until peers time out (measured: see
    /// docs/rcenet.md). Here at most [`RESEND_BURST`] expired commands go at a time; then
    /// the peer is in *recovery*: nothing more is resent until an ACK arrives (it reads:
    /// the next check may send another burst) or the earliest resent command's doubled
    /// timer runs out. Every command's timer still doubles on each resend and the drop
    /// rules are unchanged.
    pub fn check_timeouts(&mut self, now: u64) -> Result<usize, ()> {
        if self.timeout_deadline().is_some_and(|d| now >= d) {
            return Err(());
        }
        if self.recovering && now < self.probe_due {
            // Resent commands are in flight: nothing else goes until the earliest of them
            // is due again or an ACK comes.
            self.next_timeout = self.probe_due;
            return Ok(0);
        }
        let mut resend: Vec<OutCmd> = Vec::new();
        let mut next = u64::MAX;
        let mut i = 0;
        while let Some(cmd) = self.sent_reliable.get(i) {
            let expiry = cmd.sent_time.saturating_add(cmd.rto);
            if now < expiry {
                next = next.min(expiry);
                i += 1;
                continue;
            }
            let earliest = self
                .earliest_timeout
                .map_or(cmd.sent_time, |e| e.min(cmd.sent_time));
            self.earliest_timeout = Some(earliest);
            let waited = now.saturating_sub(earliest);
            if waited >= TIMEOUT_MAXIMUM || (cmd.rto >= cmd.rto_limit && waited >= TIMEOUT_MINIMUM)
            {
                return Err(());
            }
            if resend.len() >= RESEND_BURST {
                // Parked until an ACK shows the peer reading (`handle_ack` re-arms the
                // check) or the resent ones are due again (`probe_due`).
                i += 1;
                continue;
            }
            let Some(mut cmd) = self.sent_reliable.remove(i) else {
                break;
            };
            self.in_transit = self.in_transit.saturating_sub(cmd.payload.len());
            cmd.rto = cmd.rto.saturating_mul(2);
            resend.push(cmd);
        }
        let n = resend.len();
        if n > 0 {
            self.loss_window = (self.loss_window / 2).max(usize::from(self.mtu));
        }
        if let Some(rto) = resend.iter().map(|c| c.rto).min() {
            self.recovering = true;
            self.probe_due = now.saturating_add(rto);
            next = next.min(self.probe_due);
        }
        for cmd in resend.into_iter().rev() {
            self.outgoing_reliable.push_front(cmd);
        }
        // The resent commands arm their timers again when they go out (`build`).
        self.next_timeout = next;
        Ok(n)
    }

    /// When the 30 s rule drops this peer: 30 s after the oldest unacknowledged send that
    /// timed out (stock ENet checks it only at the next retransmission, up to 63 timer
    /// starts later).
    pub fn timeout_deadline(&self) -> Option<u64> {
        self.earliest_timeout
            .map(|e| e.saturating_add(TIMEOUT_MAXIMUM))
    }

    /// Server, resent CONNECT while half-open: put the VERIFY_CONNECT back at the front of
    /// the queue to go out at once (its timer is kept; this is not counted as a loss).
    pub fn resend_verify_now(&mut self) -> bool {
        let is_verify = |c: &OutCmd| c.body.kind() == kind::VERIFY_CONNECT;
        if let Some(i) = self.sent_reliable.iter().position(is_verify)
            && let Some(cmd) = self.sent_reliable.remove(i)
        {
            self.outgoing_reliable.push_front(cmd);
            if let Some(front) = self.sent_reliable.front() {
                self.next_timeout = front.sent_time.saturating_add(front.rto);
            }
            return true;
        }
        self.outgoing_reliable.iter().any(is_verify)
    }

    /// Whether `build` would put anything in a datagram now.
    pub fn has_sendable(&self) -> bool {
        !self.acks.is_empty()
            || !self.outgoing_unreliable.is_empty()
            || self.outgoing_reliable.front().is_some_and(|c| {
                let window = if c.rto == 0 {
                    (self.window as usize).min(self.loss_window)
                } else {
                    self.window as usize
                };
                self.in_transit + c.payload.len() <= window && span_ok(&self.unacked, c)
            })
    }

    /// Builds the next datagram for this peer (ENet 1.1 `send_outgoing_commands` for one
    /// peer): ACKs first, then reliable commands within the flow window, then unreliable
    /// ones; at most 32 commands and `mtu` bytes. `None` if there is nothing to send.
    /// Nothing ever follows a VERIFY_CONNECT (a 1.1 client stops reading at a duplicate one).
    pub fn build(&mut self, now: u64) -> Option<Built> {
        let mtu = usize::from(self.mtu);
        let mut size = wire::HEADER_SIZE;
        let mut n = 0usize;
        if !self.has_sendable() {
            return None;
        }
        // One buffer: room for the long header first, the commands after it.
        let mut body = Vec::with_capacity(mtu);
        body.resize(wire::HEADER_SIZE, 0);
        let mut wants_sent_time = false;
        let mut acked_disconnect = false;
        let room = |size: usize| mtu.saturating_sub(size);

        while let Some(ack) = self.acks.front().copied() {
            if n >= wire::MAX_COMMANDS_PER_DATAGRAM || room(size) < 8 {
                break;
            }
            self.acks.pop_front();
            Frame {
                header: CommandHeader {
                    command: kind::ACKNOWLEDGE,
                    channel: ack.channel,
                    reliable_seq: ack.seq,
                },
                command: Command::Acknowledge {
                    received_seq: ack.seq,
                    received_sent_time: ack.sent_time,
                },
            }
            .encode(&mut body);
            size += 8;
            n += 1;
            acked_disconnect |= ack.disconnect;
        }

        let mut stop = false;
        let fresh_window = (self.window as usize).min(self.loss_window);
        while let Some(cmd) = self.outgoing_reliable.front_mut() {
            let fixed = cmd.fixed_size();
            let plen = cmd.payload.len();
            if n >= wire::MAX_COMMANDS_PER_DATAGRAM || room(size) < fixed {
                break;
            }
            // A command never sent waits for the loss window; a resent one only for 1.1's.
            let window = if cmd.rto == 0 {
                fresh_window
            } else {
                self.window as usize
            };
            if plen > 0 && (self.in_transit + plen > window || room(size) < fixed + plen) {
                break;
            }
            if !span_ok(&self.unacked, cmd) {
                break;
            }
            if cmd.rto == 0 {
                cmd.rto = (u64::from(self.rtt) + 4 * u64::from(self.rtt_var)).max(self.min_rto);
                cmd.rto_limit = TIMEOUT_LIMIT * cmd.rto;
            }
            if self.sent_reliable.is_empty() || self.next_timeout > now.saturating_add(cmd.rto) {
                self.next_timeout = now.saturating_add(cmd.rto);
            }
            cmd.sent_time = now;
            cmd.encode(&mut body);
            size += fixed + plen;
            n += 1;
            wants_sent_time = true;
            self.in_transit += plen;
            stop = cmd.body.kind() == kind::VERIFY_CONNECT;
            if let Some(cmd) = self.outgoing_reliable.pop_front() {
                self.sent_reliable.push_back(cmd);
            }
            if stop {
                break;
            }
        }

        // (Unreliable commands never ask for an ACK: they need no sent time.)
        while !stop && let Some(need) = self.outgoing_unreliable.front() {
            if n >= wire::MAX_COMMANDS_PER_DATAGRAM || room(size) < need {
                if n == 0 && need > room(wire::HEADER_SIZE) {
                    // Can never fit (cannot happen with ENet's fragment threshold): drop it.
                    if let Some(len) = self.outgoing_unreliable.pop(None) {
                        self.queued_bytes = self.queued_bytes.saturating_sub(len);
                    }
                    continue;
                }
                break;
            }
            if !self.unreliable_throttle.pass() {
                // Throttled (ENet 1.1): dropped unsent while the round trip is rising.
                if let Some(len) = self.outgoing_unreliable.pop(None) {
                    self.queued_bytes = self.queued_bytes.saturating_sub(len);
                }
                self.throttled += 1;
                continue;
            }
            if let Some(len) = self.outgoing_unreliable.pop(Some(&mut body)) {
                self.queued_bytes = self.queued_bytes.saturating_sub(len);
            }
            size += need;
            n += 1;
        }

        if n == 0 {
            return None;
        }
        let header = Header {
            session: self.session,
            peer_id: self.outgoing_peer_id,
            sent_time: wants_sent_time.then_some((now & 0xFFFF) as u16),
        };
        let mut head = Vec::with_capacity(wire::HEADER_SIZE);
        header.encode(&mut head);
        // A 6-byte header starts 2 bytes in.
        let skip = wire::HEADER_SIZE.saturating_sub(head.len());
        if let Some(dst) = body.get_mut(skip..wire::HEADER_SIZE) {
            dst.copy_from_slice(&head);
        }
        body.drain(..skip);
        Some(Built {
            data: body,
            acked_disconnect,
        })
    }
}

/// Whether sending `cmd` keeps its channel's unacknowledged reliable numbers within
/// [`MAX_SEQ_SPAN`] of each other. A 1.1 receiver tells old from new only by the
/// 0xF000/0x1000 wrap rule, so a wider span across the wrap would be taken as old,
/// acknowledged and lost for good (stock 1.1 senders have this flaw with many small packets;
/// 1.2 added reliable windows for it). Nothing changes on the wire.
fn span_ok(unacked: &BTreeSet<(u8, u64)>, cmd: &OutCmd) -> bool {
    if cmd.ext == 0 {
        return true;
    }
    let ch = cmd.header.channel;
    unacked
        .range((ch, 0)..=(ch, u64::MAX))
        .next()
        .is_none_or(|&(_, oldest)| cmd.ext.saturating_sub(oldest) < MAX_SEQ_SPAN)
}

/// The VERIFY_CONNECT answering `params` from server slot `slot` (spec §4.1): our slot,
/// the smaller MTU, the client's window clamped, its channel count and throttle echoed.
pub(crate) fn verify_params(slot: u16, params: &ConnectParams, cfg: &HostConfig) -> ConnectParams {
    ConnectParams {
        outgoing_peer_id: slot,
        mtu: clamp_mtu(params.mtu).min(clamp_mtu(cfg.mtu)),
        window_size: params.window_size.clamp(wire::MIN_WINDOW, wire::MAX_WINDOW),
        channel_count: params.channel_count,
        incoming_bandwidth: 0,
        outgoing_bandwidth: 0,
        throttle_interval: params.throttle_interval,
        throttle_acceleration: params.throttle_acceleration,
        throttle_deceleration: params.throttle_deceleration,
    }
}

/// MTU clamped to 576..=4096.
pub(crate) fn clamp_mtu(mtu: u16) -> u16 {
    mtu.clamp(wire::MIN_MTU, wire::MAX_MTU)
}

/// The flow window for a peer's announced incoming bandwidth (ours is unlimited).
fn window_for(incoming_bandwidth: u32) -> u32 {
    if incoming_bandwidth == 0 {
        wire::MAX_WINDOW
    } else {
        ((incoming_bandwidth / WINDOW_SIZE_SCALE).saturating_mul(wire::MIN_WINDOW))
            .clamp(wire::MIN_WINDOW, wire::MAX_WINDOW)
    }
}

/// A 16-bit sentTime made whole against the local clock, as ENet 1.1 does: `None` if that
/// would lie before time 0.
pub(crate) fn reconstruct_time(now: u64, sent16: u16) -> Option<u64> {
    let t = (now & !0xFFFF) | u64::from(sent16);
    if (t & 0x8000) > (now & 0x8000) {
        t.checked_sub(0x10000)
    } else {
        Some(t)
    }
}

#[cfg(test)]
mod tests;
