//! Host configuration: slots, MTU and the bounds that keep a server's memory finite.

/// How a [`crate::Host`] behaves. [`Default`] is a Realm Crafter server; [`HostConfig::client`]
/// a one-slot client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostConfig {
    /// Peer slots (Realm Crafter's server uses 5000; at most 0x7FFF).
    pub max_peers: usize,
    /// This host's MTU (1400, as ENet 1.1); peers use the smaller of both, clamped 576..4096.
    pub mtu: u16,
    /// Most channels accepted (server) or requested (client); at most 255.
    pub channel_limit: usize,
    /// Server: most slots in ACKNOWLEDGING_CONNECT at once (half-open), in total.
    pub max_half_open: usize,
    /// Server: most half-open slots per network (an IPv4 address, an IPv6 /64).
    pub max_half_open_per_ip: usize,
    /// Server: a half-open slot is freed this long after its CONNECT.
    pub connect_timeout_ms: u64,
    /// Server: when `max_half_open` is reached, a new CONNECT evicts the oldest half-open
    /// slot if that one is at least this old (a real client answers within one round trip);
    /// `None` refuses instead. Keeps a sustained spoofed flood from locking real clients out.
    pub evict_half_open_after_ms: Option<u64>,
    /// Largest reassembled packet accepted; a larger fragment total is a protocol error.
    pub max_packet_bytes: usize,
    /// Per peer: bytes held in partial fragments and early reliable packets; past it the
    /// peer is dropped.
    pub max_reassembly_bytes: usize,
    /// Per peer: outgoing bytes queued or in flight; `send` fails past it.
    pub max_outgoing_bytes: usize,
    /// Server: when a CONNECT would be refused for a half-open cap, answer it with a
    /// stateless VERIFY_CONNECT carrying a cookie instead of refusing (see `docs/rcenet.md`,
    /// "Stateless cookies under a flood"). The half-open caps then bound memory only.
    /// Needs a non-zero `cookie_secret`.
    pub cookies: bool,
    /// Server: the key of the cookie MAC and of the stateless slot choice; set it from the
    /// OS's randomness and keep it secret. The crate has no randomness of its own, so the
    /// default is all zeros, and an all-zero key turns cookies off: anyone could forge
    /// cookies under a known key.
    pub cookie_secret: [u8; 16],
    /// Server: most cookie replies per second, host-wide (a token bucket on `now`); past it
    /// the CONNECT is refused as without cookies (`Stats::cookies_refused`).
    pub max_cookie_replies_per_sec: u32,
    /// How long a connected peer with nothing reliable in flight and no ACK received may
    /// go before this host PINGs it (ms). ENet 1.1's is 500; a server may ping less often
    /// (its peers ping it on their own, and its timeout rules still drop a silent peer
    /// within ENet's bounds), which saves a PING and its ACK each way per peer.
    pub ping_interval_ms: u64,
    /// Floor of a reliable command's first retransmission timer (ms). ENet 1.1 starts it at
    /// `rtt + 4·var` with no floor: on a LAN or loopback that is a few milliseconds, so a
    /// receiver that is late by a scheduler hiccup gets everything again, and under load
    /// the resends feed themselves (measured: 125,000 spurious resends a second at 1,000
    /// players on one machine). Nothing on the wire changes; the timeout rules still drop
    /// a silent peer within ENet's 5–40 s. 1 restores ENet 1.1 exactly.
    pub min_rto_ms: u64,
    /// ENet 1.1's unreliable packet throttle: when a peer's round-trip time rises, a share
    /// of the unreliable packets queued for it is dropped before sending (and fewer again
    /// as it falls); nothing on the wire changes. Off by default: on loopback it dropped
    /// positions at a load the machine held without it, and it did not keep an overloaded
    /// gateway from collapsing (docs/benchmarks.md). `true` restores 1.1.
    pub unreliable_throttle: bool,
}

impl Default for HostConfig {
    fn default() -> Self {
        Self {
            max_peers: 5000,
            mtu: 1400,
            channel_limit: 255,
            max_half_open: 256,
            max_half_open_per_ip: 8,
            connect_timeout_ms: 5000,
            evict_half_open_after_ms: Some(1000),
            max_packet_bytes: 64 * 1024,
            max_reassembly_bytes: 256 * 1024,
            max_outgoing_bytes: 1024 * 1024,
            cookies: true,
            cookie_secret: [0; 16],
            max_cookie_replies_per_sec: 20_000,
            ping_interval_ms: crate::peer::PING_INTERVAL,
            min_rto_ms: 100,
            unreliable_throttle: false,
        }
    }
}

impl HostConfig {
    /// A client: one slot, otherwise the defaults.
    pub fn client() -> Self {
        Self {
            max_peers: 1,
            ..Self::default()
        }
    }
}
