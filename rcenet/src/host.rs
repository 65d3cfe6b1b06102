//! The host: peer slots, datagram intake with ENet 1.1's checks, the handshake in both
//! roles, timers, and the transmit queue that turns peers' queued commands into datagrams.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use bytes::Bytes;

use crate::config::HostConfig;
use crate::cookie::{self, ReplyBudget};
use crate::error::{ConnectError, SendError};
use crate::event::{DisconnectReason, Event, PeerId, PeerState, Transmit};
use crate::peer::{AckResult, Delivery, Fault, Payload, Peer, clamp_mtu, verify_params};
use crate::stats::{PeerTraffic, Stats};
use crate::wire::{self, Command, Commands, FLAG_ACKNOWLEDGE, Frame, Header, SYSTEM_CHANNEL, kind};

/// ENet recomputes bandwidth limits at most this often (ms).
const BANDWIDTH_THROTTLE_INTERVAL: u64 = 1000;

/// A network for the per-IP half-open cap: an IPv4 address or an IPv6 /64.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum NetKey {
    V4(u32),
    V6(u64),
}

impl NetKey {
    fn of(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(v4) => Self::V4(u32::from(v4)),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Self::V4(u32::from(v4)),
                None => Self::V6((u128::from(v6) >> 64) as u64),
            },
        }
    }
}

#[derive(Debug, Default)]
struct Slot {
    generation: u32,
    peer: Option<Box<Peer>>,
}

/// What to do after a command, once the peer is no longer borrowed.
enum After {
    Continue,
    Stop,
    Gone,
    Drop(Option<DisconnectReason>, bool),
}

/// An ENet 1.1 host, client or server; sans-IO (see the crate docs for the call order).
#[derive(Debug)]
pub struct Host {
    cfg: HostConfig,
    slots: Vec<Slot>,
    /// One past the highest slot holding a peer: the timers and the scans stop there
    /// (the lowest free slot is taken first, so peers sit at the front).
    in_use_end: usize,
    free: BTreeSet<u16>,
    by_addr_session: HashMap<(SocketAddr, u32), u16>,
    half_open_count: usize,
    half_open_by_net: HashMap<NetKey, usize>,
    half_open_fifo: VecDeque<PeerId>,
    transmit_queue: VecDeque<PeerId>,
    direct: VecDeque<Transmit>,
    events: VecDeque<Event>,
    deliveries: Vec<Delivery>,
    /// The datagram being handled, when the caller gave it as `Bytes`: received packets
    /// are slices of it instead of copies.
    rx: Option<Bytes>,
    stats: Stats,
    recalc_bandwidth: bool,
    bandwidth_epoch: u64,
    cookie_budget: ReplyBudget,
}

impl Host {
    /// A host with `cfg.max_peers` slots (clamped to 1..=0x7FFE).
    pub fn new(cfg: HostConfig) -> Self {
        let n = cfg.max_peers.clamp(1, usize::from(wire::NO_PEER) - 1);
        let mut slots = Vec::with_capacity(n);
        slots.resize_with(n, Slot::default);
        let free = (0..n).filter_map(|i| u16::try_from(i).ok()).collect();
        Self {
            cookie_budget: ReplyBudget::new(cfg.max_cookie_replies_per_sec),
            cfg,
            slots,
            in_use_end: 0,
            free,
            by_addr_session: HashMap::new(),
            half_open_count: 0,
            half_open_by_net: HashMap::new(),
            half_open_fifo: VecDeque::new(),
            transmit_queue: VecDeque::new(),
            direct: VecDeque::new(),
            events: VecDeque::new(),
            deliveries: Vec::new(),
            rx: None,
            stats: Stats::default(),
            recalc_bandwidth: false,
            bandwidth_epoch: 0,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &HostConfig {
        &self.cfg
    }

    /// Counters.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Peers in the CONNECTED state.
    pub fn connected_peers(&self) -> usize {
        self.peers()
            .filter(|p| p.state == PeerState::Connected)
            .count()
    }

    /// Server slots in ACKNOWLEDGING_CONNECT.
    pub fn half_open(&self) -> usize {
        self.half_open_count
    }

    /// A peer's current address (it follows NAT rebinding: same IP, new port).
    pub fn peer_addr(&self, peer: PeerId) -> Option<SocketAddr> {
        self.peer(peer).map(|p| p.addr)
    }

    /// A peer's state.
    pub fn peer_state(&self, peer: PeerId) -> Option<PeerState> {
        self.peer(peer).map(|p| p.state)
    }

    /// A peer's smoothed round-trip time in ms (500 until the first ACK).
    pub fn peer_rtt(&self, peer: PeerId) -> Option<u32> {
        self.peer(peer).map(|p| p.rtt)
    }

    /// A peer's own traffic (its share of [`Host::stats`]).
    pub fn peer_traffic(&self, peer: PeerId) -> Option<PeerTraffic> {
        self.peer(peer).map(|p| p.traffic)
    }

    /// Payload bytes queued for a peer or sent and not yet acknowledged (0 if unknown).
    pub fn outgoing_bytes(&self, peer: PeerId) -> usize {
        self.peer(peer).map_or(0, Peer::outgoing_bytes)
    }

    /// Every live peer's id.
    pub fn peer_ids(&self) -> impl Iterator<Item = PeerId> + '_ {
        self.peers().map(|p| p.id)
    }

    fn peers(&self) -> impl Iterator<Item = &Peer> {
        self.slots
            .iter()
            .take(self.in_use_end)
            .filter_map(|s| s.peer.as_deref())
    }

    fn peer(&self, id: PeerId) -> Option<&Peer> {
        let slot = self.slots.get(usize::from(id.slot))?;
        if slot.generation != id.generation {
            return None;
        }
        slot.peer.as_deref()
    }

    fn peer_mut(&mut self, id: PeerId) -> Option<&mut Peer> {
        let slot = self.slots.get_mut(usize::from(id.slot))?;
        if slot.generation != id.generation {
            return None;
        }
        slot.peer.as_deref_mut()
    }

    /// Next event for the application.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Client role: starts a connection with `channels` channels (clamped to
    /// 1..=`channel_limit`, at most 255); `session` is the header session value.
    pub fn connect(
        &mut self,
        now: u64,
        to: SocketAddr,
        channels: u8,
        session: u32,
    ) -> Result<PeerId, ConnectError> {
        let limit = u8::try_from(self.cfg.channel_limit.clamp(1, 255)).unwrap_or(u8::MAX);
        let channels = channels.clamp(1, limit);
        let slot = self.free.pop_first().ok_or(ConnectError::NoFreeSlot)?;
        self.in_use_end = self.in_use_end.max(usize::from(slot) + 1);
        let Some(s) = self.slots.get_mut(usize::from(slot)) else {
            return Err(ConnectError::NoFreeSlot);
        };
        let id = PeerId {
            slot,
            generation: s.generation,
        };
        s.peer = Some(Box::new(Peer::new_client(
            id, to, session, channels, &self.cfg, now,
        )));
        self.by_addr_session.insert((to, session), slot);
        self.schedule(id);
        Ok(id)
    }

    /// Queues one packet; see the crate docs for reliability and fragmentation.
    pub fn send(
        &mut self,
        peer: PeerId,
        channel: u8,
        data: &[u8],
        reliable: bool,
    ) -> Result<(), SendError> {
        self.send_payload(peer, channel, Payload::Borrowed(data), reliable)
    }

    /// [`send`](Self::send) without a copy: the packet is kept as given until it is
    /// sent (and, reliable, acknowledged). A slice of a larger buffer keeps that buffer.
    pub fn send_bytes(
        &mut self,
        peer: PeerId,
        channel: u8,
        data: Bytes,
        reliable: bool,
    ) -> Result<(), SendError> {
        self.send_payload(peer, channel, Payload::Shared(data), reliable)
    }

    fn send_payload(
        &mut self,
        peer: PeerId,
        channel: u8,
        data: Payload<'_>,
        reliable: bool,
    ) -> Result<(), SendError> {
        let cfg = &self.cfg;
        let Some(p) = self.slots.get_mut(usize::from(peer.slot)) else {
            return Err(SendError::NotConnected);
        };
        let p = match p.peer.as_deref_mut() {
            Some(p) if p.id == peer => p,
            _ => return Err(SendError::NotConnected),
        };
        match p.send(channel, data, reliable, cfg) {
            Ok(()) => {
                self.schedule(peer);
                Ok(())
            }
            Err(e) => {
                if e == SendError::QueueFull {
                    self.stats.queue_full += 1;
                }
                Err(e)
            }
        }
    }

    /// Graceful disconnect (DISCONNECT 0x84, queued packets dropped as ENet does); the
    /// Disconnect event comes when it is acknowledged or times out. A peer not yet connected
    /// gets a DISCONNECT 0x44 and is forgotten at once, without an event (ENet 1.1).
    pub fn disconnect(&mut self, now: u64, peer: PeerId, data: u32) {
        let Some(p) = self.peer_mut(peer) else { return };
        match p.state {
            PeerState::Connected => {
                p.reset_queues();
                p.queue_system(FLAG_ACKNOWLEDGE, Command::Disconnect { data });
                p.state = PeerState::Disconnecting;
                p.disconnect_data = data;
                self.schedule(peer);
            }
            PeerState::Disconnecting | PeerState::Zombie => {}
            _ => self.disconnect_now(now, peer, data),
        }
    }

    /// Immediate disconnect: one datagram with DISCONNECT 0x44 (not acknowledged), then the
    /// peer is forgotten; no event.
    pub fn disconnect_now(&mut self, _now: u64, peer: PeerId, data: u32) {
        let Some(p) = self.peer_mut(peer) else { return };
        if !matches!(p.state, PeerState::Zombie | PeerState::Disconnecting) {
            p.reset_queues();
            let dest = p.addr;
            let datagram = p.disconnect_now_datagram(data);
            self.direct.push_back(Transmit {
                dest,
                data: datagram,
            });
        }
        self.free_slot(peer);
    }

    /// Forgets a peer silently: no datagram, no event.
    pub fn reset(&mut self, peer: PeerId) {
        if self.peer(peer).is_some() {
            self.free_slot(peer);
        }
    }

    /// Frees a slot: index, half-open bookkeeping, generation.
    fn free_slot(&mut self, id: PeerId) {
        let Some(slot) = self.slots.get_mut(usize::from(id.slot)) else {
            return;
        };
        if slot.generation != id.generation {
            return;
        }
        let Some(peer) = slot.peer.take() else { return };
        slot.generation = slot.generation.wrapping_add(1);
        self.free.insert(id.slot);
        while self.in_use_end > 0
            && self
                .slots
                .get(self.in_use_end - 1)
                .is_some_and(|s| s.peer.is_none())
        {
            self.in_use_end -= 1;
        }
        if self.by_addr_session.get(&(peer.addr, peer.session)) == Some(&id.slot) {
            self.by_addr_session.remove(&(peer.addr, peer.session));
        }
        match peer.state {
            PeerState::AcknowledgingConnect => self.half_open_done(peer.addr),
            PeerState::Connected
            | PeerState::Disconnecting
            | PeerState::AcknowledgingDisconnect => self.recalc_bandwidth = true,
            _ => {}
        }
    }

    /// Drops a peer, with a Disconnect event if the application knows it.
    fn drop_peer(&mut self, id: PeerId, reason: Option<DisconnectReason>, notify_remote: bool) {
        let Some(p) = self.peer_mut(id) else { return };
        if notify_remote {
            p.reset_queues();
            let dest = p.addr;
            let datagram = p.disconnect_now_datagram(0);
            self.direct.push_back(Transmit {
                dest,
                data: datagram,
            });
        }
        let visible = self.peer(id).is_some_and(|p| p.visible);
        if let (true, Some(reason)) = (visible, reason) {
            self.events
                .push_back(Event::Disconnect { peer: id, reason });
        }
        self.free_slot(id);
    }

    fn half_open_done(&mut self, addr: SocketAddr) {
        self.half_open_count = self.half_open_count.saturating_sub(1);
        let key = NetKey::of(addr.ip());
        if let Some(n) = self.half_open_by_net.get_mut(&key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.half_open_by_net.remove(&key);
            }
        }
    }

    fn schedule(&mut self, id: PeerId) {
        if let Some(p) = self.peer_mut(id)
            && !p.queued_for_transmit
            && p.has_sendable()
        {
            p.queued_for_transmit = true;
            self.transmit_queue.push_back(id);
        }
    }

    /// One received UDP datagram as `Bytes`: as [`Host::handle_datagram`], but the packets
    /// it delivers are slices of `data`, not copies (one allocation per datagram instead
    /// of one per packet). A delivered slice keeps the whole datagram alive until it is
    /// dropped, so a receiver that queues packets should bound its queue by datagrams
    /// (as the SDK does), not only by packet bytes; early reliable packets and fragments
    /// are still copied.
    pub fn handle_datagram_bytes(&mut self, now: u64, from: SocketAddr, data: Bytes) {
        self.rx = Some(data.clone());
        self.handle_datagram(now, from, &data);
        self.rx = None;
    }

    /// One received UDP datagram. Never panics; malformed input is dropped and counted.
    pub fn handle_datagram(&mut self, now: u64, from: SocketAddr, data: &[u8]) {
        self.stats.datagrams_in += 1;
        self.stats.bytes_in += data.len() as u64;
        if data.len() < wire::HEADER_SIZE {
            self.stats.malformed += 1;
            return;
        }
        let Ok((header, used)) = Header::decode(data) else {
            self.stats.malformed += 1;
            return;
        };
        let body = data.get(used..).unwrap_or_default();
        if header.peer_id == wire::NO_PEER {
            self.handle_connectless(now, from, body);
            return;
        }
        let Some(slot) = self.slots.get_mut(usize::from(header.peer_id)) else {
            self.stats.unknown_peer += 1;
            return;
        };
        if slot.peer.is_none() && cookies_on(&self.cfg) {
            self.cookie_ack(now, from, &header, body);
            return;
        }
        let Some(peer) = slot
            .peer
            .as_deref_mut()
            .filter(|p| p.state != PeerState::Zombie)
        else {
            self.stats.unknown_peer += 1;
            return;
        };
        if from.ip() != peer.addr.ip() && peer.addr.ip() != IpAddr::V4(Ipv4Addr::BROADCAST) {
            self.stats.wrong_address += 1;
            return;
        }
        if header.session != peer.session {
            self.stats.bad_session += 1;
            return;
        }
        let id = peer.id;
        peer.traffic.datagrams_in += 1;
        peer.traffic.bytes_in += data.len() as u64;
        if from != peer.addr {
            let old = peer.addr;
            peer.addr = from;
            if self.by_addr_session.get(&(old, peer.session)) == Some(&id.slot) {
                self.by_addr_session.remove(&(old, peer.session));
            }
            self.by_addr_session.insert((from, peer.session), id.slot);
        }
        if peer.state == PeerState::AcknowledgingConnect {
            // Trap 1: a 1.1 client never ACKs a resent VERIFY_CONNECT; its first datagram
            // to our slot with its session proves that it has the VERIFY_CONNECT.
            match Commands::new(body).next() {
                Some(Ok(first)) => {
                    let explicit = matches!(
                        first.command,
                        Command::Acknowledge {
                            received_seq: 1,
                            ..
                        }
                    ) && first.header.channel == SYSTEM_CHANNEL;
                    if !explicit {
                        self.stats.implicit_verify_acks += 1;
                    }
                    self.complete_server_handshake(id, now);
                }
                _ => {
                    self.stats.malformed += 1;
                    return;
                }
            }
        }
        self.run_commands(now, id, &header, body, 0);
    }

    /// Handles a datagram's commands for a live peer, from the `skip`-th on.
    fn run_commands(&mut self, now: u64, id: PeerId, header: &Header, body: &[u8], skip: usize) {
        for item in Commands::new(body).skip(skip) {
            let Ok(frame) = item else {
                self.stats.malformed += 1;
                break;
            };
            match self.handle_command(now, id, header, &frame) {
                After::Continue => {}
                After::Stop => break,
                After::Gone => return,
                After::Drop(reason, notify) => {
                    self.drop_peer(id, reason, notify);
                    return;
                }
            }
        }
        self.schedule(id);
    }

    fn complete_server_handshake(&mut self, id: PeerId, now: u64) {
        let Some(p) = self.peer_mut(id) else { return };
        p.complete_handshake(now);
        let addr = p.addr;
        self.half_open_done(addr);
        self.recalc_bandwidth = true;
        self.stats.connects += 1;
        self.events.push_back(Event::Connect { peer: id, addr });
    }

    /// A datagram with peer ID 0x7FFF: only CONNECT is read (server role).
    fn handle_connectless(&mut self, now: u64, from: SocketAddr, body: &[u8]) {
        let (params, session) = match Commands::new(body).next() {
            Some(Ok(Frame {
                command: Command::Connect { params, session },
                ..
            })) => (params, session),
            Some(Ok(_)) => {
                self.stats.unknown_peer += 1;
                return;
            }
            _ => {
                self.stats.malformed += 1;
                return;
            }
        };
        let limit = self.cfg.channel_limit.min(255) as u32;
        if params.channel_count < 1 || params.channel_count > limit {
            self.stats.connect_refused += 1;
            return;
        }
        if let Some(&slot) = self.by_addr_session.get(&(from, session)) {
            let id = self
                .slots
                .get(usize::from(slot))
                .and_then(|s| s.peer.as_deref())
                .map(|p| p.id);
            let Some(id) = id else { return };
            // Trap 2: the 1.1 client gives up 5 s after CONNECT; answer a resent CONNECT at
            // once instead of waiting for our own backed-off retransmission.
            if let Some(p) = self.peer_mut(id)
                && p.state == PeerState::AcknowledgingConnect
            {
                if p.resend_verify_now() {
                    self.stats.verify_resent += 1;
                    self.schedule(id);
                }
            } else {
                self.stats.connect_refused += 1;
            }
            return;
        }
        let net = NetKey::of(from.ip());
        if self.half_open_by_net.get(&net).copied().unwrap_or(0) >= self.cfg.max_half_open_per_ip {
            if !self.cookie_reply(now, from, &params, session) {
                self.stats.half_open_refused_per_ip += 1;
            }
            return;
        }
        if self.half_open_count >= self.cfg.max_half_open && !self.evict_half_open(now) {
            if !self.cookie_reply(now, from, &params, session) {
                self.stats.half_open_refused_total += 1;
            }
            return;
        }
        let Some(slot) = self.free.pop_first() else {
            self.stats.connect_refused += 1;
            return;
        };
        self.in_use_end = self.in_use_end.max(usize::from(slot) + 1);
        let Some(s) = self.slots.get_mut(usize::from(slot)) else {
            return;
        };
        let id = PeerId {
            slot,
            generation: s.generation,
        };
        s.peer = Some(Box::new(Peer::new_server(
            id, from, session, &params, &self.cfg, now,
        )));
        self.by_addr_session.insert((from, session), slot);
        self.half_open_count += 1;
        *self.half_open_by_net.entry(net).or_insert(0) += 1;
        self.half_open_fifo.push_back(id);
        if self.half_open_fifo.len() > 2 * self.cfg.max_half_open + 64 {
            let slots = &self.slots;
            self.half_open_fifo.retain(|&id| is_half_open(slots, id));
        }
        self.schedule(id);
    }

    /// A CONNECT the half-open caps would refuse: answer it with a stateless VERIFY_CONNECT
    /// whose header sentTime is a cookie, without taking a slot. Returns false (refuse as
    /// without cookies) when cookies are off or unkeyed, the CONNECT does not fit the stateless
    /// defaults (client slot 0, mtu ≥ ours), no slot near the keyed hint is free, or the
    /// reply budget is spent.
    fn cookie_reply(
        &mut self,
        now: u64,
        from: SocketAddr,
        params: &wire::ConnectParams,
        session: u32,
    ) -> bool {
        if !cookies_on(&self.cfg)
            || params.outgoing_peer_id != 0
            || clamp_mtu(params.mtu) < clamp_mtu(self.cfg.mtu)
        {
            return false;
        }
        let n = self.slots.len();
        let start = cookie::first_slot(n, &self.cfg.cookie_secret, from, session);
        let free = (0..cookie::PROBE.min(n))
            .map(|k| (start + k) % n)
            .find(|&i| self.slots.get(i).is_some_and(|s| s.peer.is_none()));
        let Some(slot) = free.and_then(|i| u16::try_from(i).ok()) else {
            return false;
        };
        if !self
            .cookie_budget
            .take(now, self.cfg.max_cookie_replies_per_sec)
        {
            self.stats.cookies_refused += 1;
            return false;
        }
        let epoch = now / cookie::EPOCH_MS;
        let mac = cookie::cookie(&self.cfg.cookie_secret, epoch, from, session, slot);
        let mut data = Vec::with_capacity(wire::HEADER_SIZE + 36);
        Header {
            session,
            peer_id: params.outgoing_peer_id,
            sent_time: Some(mac),
        }
        .encode(&mut data);
        Frame {
            header: wire::CommandHeader {
                command: FLAG_ACKNOWLEDGE | kind::VERIFY_CONNECT,
                channel: SYSTEM_CHANNEL,
                reliable_seq: 1,
            },
            command: Command::VerifyConnect(verify_params(slot, params, &self.cfg)),
        }
        .encode(&mut data);
        self.direct.push_back(Transmit { dest: from, data });
        self.stats.cookies_sent += 1;
        true
    }

    /// A datagram for a free slot with cookies on: if it starts with the ACK of a cookie
    /// VERIFY_CONNECT (system channel, sequence 1) whose receivedSentTime is the cookie of
    /// this epoch or the last one for (source address, session, slot), the slot becomes a
    /// Connected peer (`Event::Connect`) and the rest of the datagram is read as usual.
    fn cookie_ack(&mut self, now: u64, from: SocketAddr, header: &Header, body: &[u8]) {
        let echoed = match Commands::new(body).next() {
            Some(Ok(Frame {
                header: h,
                command:
                    Command::Acknowledge {
                        received_seq: 1,
                        received_sent_time,
                    },
            })) if h.channel == SYSTEM_CHANNEL => received_sent_time,
            _ => {
                self.stats.unknown_peer += 1;
                return;
            }
        };
        let slot = header.peer_id;
        let n = self.slots.len();
        let start = cookie::first_slot(n, &self.cfg.cookie_secret, from, header.session);
        let near = (usize::from(slot) + n - start) % n < cookie::PROBE;
        let epoch = now / cookie::EPOCH_MS;
        let valid = near
            && [Some(epoch), epoch.checked_sub(1)]
                .into_iter()
                .flatten()
                .any(|e| {
                    cookie::cookie(&self.cfg.cookie_secret, e, from, header.session, slot) == echoed
                });
        if !valid {
            self.stats.bad_cookies += 1;
            return;
        }
        // The same client may also hold a half-open slot (a resent CONNECT that found room);
        // it chose this one. A live peer with its address and session is a duplicate.
        if let Some(&other) = self.by_addr_session.get(&(from, header.session)) {
            let Some(other) = self
                .slots
                .get(usize::from(other))
                .and_then(|s| s.peer.as_deref())
                .map(|p| (p.id, p.state))
            else {
                return;
            };
            if other.1 != PeerState::AcknowledgingConnect {
                self.stats.connect_refused += 1;
                return;
            }
            self.free_slot(other.0);
        }
        let Some(s) = self.slots.get_mut(usize::from(slot)) else {
            return;
        };
        let id = PeerId {
            slot,
            generation: s.generation,
        };
        s.peer = Some(Box::new(Peer::new_cookie(
            id,
            from,
            header.session,
            &self.cfg,
            now,
        )));
        self.free.remove(&slot);
        self.in_use_end = self.in_use_end.max(usize::from(slot) + 1);
        self.by_addr_session.insert((from, header.session), slot);
        self.recalc_bandwidth = true;
        self.stats.connects += 1;
        self.stats.cookie_connects += 1;
        self.events.push_back(Event::Connect {
            peer: id,
            addr: from,
        });
        self.run_commands(now, id, header, body, 1);
    }

    /// Frees the oldest half-open slot if it is older than `evict_half_open_after_ms`.
    fn evict_half_open(&mut self, now: u64) -> bool {
        let Some(min_age) = self.cfg.evict_half_open_after_ms else {
            return false;
        };
        while let Some(&id) = self.half_open_fifo.front() {
            let Some(created) = self
                .peer(id)
                .filter(|p| p.state == PeerState::AcknowledgingConnect)
                .map(|p| p.created)
            else {
                self.half_open_fifo.pop_front();
                continue;
            };
            if now.saturating_sub(created) < min_age {
                return false;
            }
            self.half_open_fifo.pop_front();
            self.stats.half_open_evicted += 1;
            self.free_slot(id);
            return true;
        }
        false
    }

    /// One command for a known peer.
    fn handle_command(&mut self, now: u64, id: PeerId, dgram: &Header, frame: &Frame<'_>) -> After {
        let cfg = &self.cfg;
        let src = Src(self.rx.as_ref());
        let Some(peer) = self
            .slots
            .get_mut(usize::from(id.slot))
            .and_then(|s| s.peer.as_deref_mut())
            .filter(|p| p.id == id)
        else {
            return After::Gone;
        };
        let h = frame.header;
        let mut connected = false;
        let result: Result<bool, Fault> = match frame.command {
            Command::Acknowledge {
                received_seq,
                received_sent_time,
            } => match peer.handle_ack(now, h.channel, received_seq, received_sent_time) {
                AckResult::Future => {
                    self.stats.future_acks += 1;
                    Ok(true)
                }
                AckResult::Removed(k) => match peer.state {
                    PeerState::Disconnecting if k == Some(kind::DISCONNECT) => {
                        let data = peer.disconnect_data;
                        return After::Drop(Some(DisconnectReason::Graceful(data)), false);
                    }
                    PeerState::Disconnecting => Err(Fault::Command),
                    _ => Ok(true),
                },
            },
            Command::Connect { .. } => Err(Fault::Command),
            Command::VerifyConnect(v) => match peer.handle_verify_connect(now, &v) {
                Ok(()) => {
                    connected = true;
                    Ok(true)
                }
                Err(Fault::Refused) => {
                    return After::Drop(Some(DisconnectReason::Refused), false);
                }
                Err(e) => Err(e),
            },
            Command::Disconnect { data } => {
                peer.reset_queues();
                peer.disconnect_data = data;
                match peer.state {
                    PeerState::Connected if h.wants_ack() => {
                        peer.state = PeerState::AcknowledgingDisconnect;
                        Ok(true)
                    }
                    _ => return After::Drop(Some(DisconnectReason::Graceful(data)), false),
                }
            }
            Command::Ping => Ok(true),
            Command::SendReliable { data } => {
                peer.receive_reliable(&h, data, src, cfg, &mut self.deliveries)
            }
            Command::SendUnreliable {
                unreliable_seq,
                data,
            } => {
                let r =
                    peer.receive_unreliable(&h, unreliable_seq, data, src, &mut self.deliveries);
                if r == Ok(false) {
                    self.stats.unreliable_dropped += 1;
                }
                r.map(|_| true)
            }
            Command::SendFragment { info, data } => {
                peer.receive_fragment(&h, &info, data, cfg, &mut self.deliveries)
            }
            Command::SendUnsequenced { group, data } => peer
                .receive_unsequenced(&h, group, data, src, &mut self.deliveries)
                .map(|_| true),
            Command::BandwidthLimit { incoming, outgoing } => {
                peer.handle_bandwidth_limit(incoming, outgoing);
                Ok(true)
            }
            Command::ThrottleConfigure {
                interval,
                acceleration,
                deceleration,
            } => {
                peer.handle_throttle_configure(interval, acceleration, deceleration);
                Ok(true)
            }
        };
        let mut after = After::Continue;
        match result {
            Ok(fresh) => {
                if !fresh {
                    self.stats.duplicates += 1;
                }
                if h.wants_ack() {
                    match dgram.sent_time {
                        None => after = After::Stop,
                        Some(t) => {
                            let queue = match peer.state {
                                PeerState::Disconnecting | PeerState::AcknowledgingConnect => false,
                                PeerState::AcknowledgingDisconnect => h.kind() == kind::DISCONNECT,
                                _ => true,
                            };
                            if queue && !peer.queue_ack(&h, t) {
                                self.stats.acks_dropped += 1;
                            }
                        }
                    }
                }
            }
            Err(Fault::Command | Fault::Refused) => {
                self.stats.command_errors += 1;
                after = After::Stop;
            }
            Err(Fault::Overflow) => {
                self.stats.reassembly_overflows += 1;
                after = After::Drop(Some(DisconnectReason::ProtocolError), true);
            }
            Err(Fault::Oversized) => {
                self.stats.oversized_packets += 1;
                after = After::Drop(Some(DisconnectReason::ProtocolError), true);
            }
        }
        let addr = peer.addr;
        if connected {
            self.stats.connects += 1;
            self.recalc_bandwidth = true;
            self.events.push_back(Event::Connect { peer: id, addr });
        }
        for d in self.deliveries.drain(..) {
            self.events.push_back(Event::Receive {
                peer: id,
                channel: d.channel,
                data: d.data,
                reliable: d.reliable,
            });
        }
        after
    }

    /// Does what time requires: half-open expiry, retransmissions and timeouts, pings, the
    /// bandwidth-limit notices.
    pub fn handle_timeout(&mut self, now: u64) {
        for i in 0..self.in_use_end.min(self.slots.len()) {
            let Some(peer) = self.slots.get_mut(i).and_then(|s| s.peer.as_deref_mut()) else {
                continue;
            };
            let id = peer.id;
            if peer.state == PeerState::AcknowledgingConnect
                && now >= peer.created.saturating_add(self.cfg.connect_timeout_ms)
            {
                self.stats.half_open_expired += 1;
                self.free_slot(id);
                continue;
            }
            if peer.has_sent_reliable()
                && (now >= peer.next_timeout || peer.timeout_deadline().is_some_and(|d| now >= d))
            {
                match peer.check_timeouts(now) {
                    Err(()) => {
                        self.stats.timeouts += 1;
                        self.drop_peer(id, Some(DisconnectReason::Timeout), false);
                        continue;
                    }
                    Ok(n) => self.stats.retransmits += n as u64,
                }
            }
            if peer.state == PeerState::Connected
                && peer.reliable_idle()
                && now.saturating_sub(peer.last_receive) >= self.cfg.ping_interval_ms.max(1)
            {
                peer.queue_system(FLAG_ACKNOWLEDGE, Command::Ping);
            }
            self.schedule(id);
        }
        if self.recalc_bandwidth
            && now.saturating_sub(self.bandwidth_epoch) >= BANDWIDTH_THROTTLE_INTERVAL
        {
            self.recalc_bandwidth = false;
            let ids: Vec<PeerId> = self
                .peers()
                .filter(|p| p.state == PeerState::Connected)
                .map(|p| p.id)
                .collect();
            if !ids.is_empty() {
                self.bandwidth_epoch = now;
            }
            for id in ids {
                if let Some(p) = self.peer_mut(id) {
                    p.queue_system(
                        FLAG_ACKNOWLEDGE,
                        Command::BandwidthLimit {
                            incoming: 0,
                            outgoing: 0,
                        },
                    );
                }
                self.schedule(id);
            }
        }
    }

    /// When `handle_timeout` should next run; `None` if no timer is pending.
    pub fn poll_timeout(&self) -> Option<u64> {
        let mut next: Option<u64> = None;
        let mut consider = |t: u64| next = Some(next.map_or(t, |n| n.min(t)));
        for p in self.peers() {
            match p.state {
                PeerState::AcknowledgingConnect => {
                    consider(p.created.saturating_add(self.cfg.connect_timeout_ms));
                }
                PeerState::Connected if p.reliable_idle() => {
                    consider(
                        p.last_receive
                            .saturating_add(self.cfg.ping_interval_ms.max(1)),
                    );
                }
                _ => {}
            }
            if p.has_sent_reliable() {
                consider(p.next_timeout);
                if let Some(d) = p.timeout_deadline() {
                    consider(d);
                }
            }
        }
        if self.recalc_bandwidth {
            consider(
                self.bandwidth_epoch
                    .saturating_add(BANDWIDTH_THROTTLE_INTERVAL),
            );
        }
        next
    }

    /// Next datagram to send; call until `None` after every `handle_*`, `send` and
    /// `disconnect*`.
    pub fn poll_transmit(&mut self, now: u64) -> Option<Transmit> {
        if let Some(t) = self.direct.pop_front() {
            self.count_out(&t);
            return Some(t);
        }
        while let Some(id) = self.transmit_queue.pop_front() {
            let Some(peer) = self.peer_mut(id) else {
                continue;
            };
            peer.queued_for_transmit = false;
            if peer.state == PeerState::Zombie {
                continue;
            }
            let throttled = peer.throttled;
            let built = peer.build(now);
            let throttled = peer.throttled - throttled;
            let Some(built) = built else {
                self.stats.unreliable_throttled += throttled;
                continue;
            };
            let t = Transmit {
                dest: peer.addr,
                data: built.data,
            };
            peer.traffic.datagrams_out += 1;
            peer.traffic.bytes_out += t.data.len() as u64;
            let disconnect = (built.acked_disconnect
                && peer.state == PeerState::AcknowledgingDisconnect)
                .then_some(peer.disconnect_data);
            self.stats.unreliable_throttled += throttled;
            if let Some(data) = disconnect {
                self.drop_peer(id, Some(DisconnectReason::Graceful(data)), false);
            } else {
                self.schedule(id);
            }
            self.count_out(&t);
            return Some(t);
        }
        None
    }

    fn count_out(&mut self, t: &Transmit) {
        self.stats.datagrams_out += 1;
        self.stats.bytes_out += t.data.len() as u64;
    }
}

/// Where received packet bytes come from: slices of the datagram when it was given as
/// `Bytes`, else copies.
#[derive(Clone, Copy, Default)]
pub(crate) struct Src<'a>(Option<&'a Bytes>);

impl Src<'_> {
    /// `sub` (a slice of the datagram being handled) as `Bytes`.
    pub(crate) fn bytes(self, sub: &[u8]) -> Bytes {
        if let Some(whole) = self.0 {
            let start = whole.as_ptr() as usize;
            let at = sub.as_ptr() as usize;
            if at >= start && at.saturating_add(sub.len()) <= start.saturating_add(whole.len()) {
                let from = at - start;
                return whole.slice(from..from + sub.len());
            }
        }
        Bytes::copy_from_slice(sub)
    }
}

/// Cookies are on and keyed (an all-zero key would be public).
fn cookies_on(cfg: &HostConfig) -> bool {
    cfg.cookies && cfg.cookie_secret != [0; 16]
}

fn is_half_open(slots: &[Slot], id: PeerId) -> bool {
    slots
        .get(usize::from(id.slot))
        .and_then(|s| s.peer.as_deref())
        .is_some_and(|p| p.id == id && p.state == PeerState::AcknowledgingConnect)
}

#[cfg(test)]
mod tests;
