//! Plain counters a host keeps about what it received, sent, refused and dropped.

/// Counters; they only grow.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Datagrams handed to `handle_datagram`.
    pub datagrams_in: u64,
    /// Datagrams returned by `poll_transmit`.
    pub datagrams_out: u64,
    /// Bytes in.
    pub bytes_in: u64,
    /// Bytes out.
    pub bytes_out: u64,
    /// Datagrams or commands that did not decode (short, unknown kind, overrun).
    pub malformed: u64,
    /// Datagrams whose session value did not match the addressed slot.
    pub bad_session: u64,
    /// Datagrams for a slot out of range, free, or a zombie.
    pub unknown_peer: u64,
    /// Datagrams from another IP than the addressed slot's.
    pub wrong_address: u64,
    /// Commands a peer may not send in its state, or inconsistent ones (reading stopped).
    pub command_errors: u64,
    /// CONNECTs refused: bad channel count, duplicate, no free slot.
    pub connect_refused: u64,
    /// CONNECTs refused because `max_half_open` slots were half-open.
    pub half_open_refused_total: u64,
    /// CONNECTs refused because the network had `max_half_open_per_ip` half-open slots.
    pub half_open_refused_per_ip: u64,
    /// Half-open slots freed after `connect_timeout_ms`.
    pub half_open_expired: u64,
    /// Half-open slots (older than a second) evicted to make room when the table was full.
    pub half_open_evicted: u64,
    /// Resent CONNECTs answered at once with VERIFY_CONNECT again.
    pub verify_resent: u64,
    /// Handshakes completed by a datagram other than the ACK of VERIFY_CONNECT.
    pub implicit_verify_acks: u64,
    /// Connections established (Connect events).
    pub connects: u64,
    /// Peers dropped because their reliable commands went unacknowledged too long.
    pub timeouts: u64,
    /// Reliable commands sent again.
    pub retransmits: u64,
    /// Peers dropped for holding more than `max_reassembly_bytes`.
    pub reassembly_overflows: u64,
    /// Peers dropped for announcing a fragmented packet above `max_packet_bytes`.
    pub oversized_packets: u64,
    /// ACKs ignored because their sentTime lies in the future.
    pub future_acks: u64,
    /// Duplicate or old reliable commands (acknowledged, then dropped).
    pub duplicates: u64,
    /// Unreliable packets dropped as old or out of place.
    pub unreliable_dropped: u64,
    /// `send` calls refused with `QueueFull`.
    pub queue_full: u64,
    /// Unreliable packets dropped unsent by the throttle (`HostConfig::unreliable_throttle`)
    /// while a peer's round trip rose.
    pub unreliable_throttled: u64,
    /// ACKs not queued because a peer had too many pending.
    pub acks_dropped: u64,
    /// Stateless VERIFY_CONNECTs (cookies) sent instead of refusing at a half-open cap.
    pub cookies_sent: u64,
    /// Connections made by the ACK of a cookie VERIFY_CONNECT (also counted in `connects`).
    pub cookie_connects: u64,
    /// ACKs of VERIFY_CONNECT to a free slot whose cookie did not verify (dropped).
    pub bad_cookies: u64,
    /// CONNECTs refused because `max_cookie_replies_per_sec` was spent.
    pub cookies_refused: u64,
}

/// One peer's traffic: the datagrams that reached its slot (session checked) and the
/// datagrams built for it. Several connections sharing one host (and one socket) read
/// their own share here; [`Stats`] counts the host's whole traffic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PeerTraffic {
    /// Datagrams received for this peer.
    pub datagrams_in: u64,
    /// Datagrams sent to this peer.
    pub datagrams_out: u64,
    /// Bytes of datagrams received for this peer.
    pub bytes_in: u64,
    /// Bytes of datagrams sent to this peer.
    pub bytes_out: u64,
}
