//! What a host reports to its application, and the handles it reports them with.

use std::net::SocketAddr;

use bytes::Bytes;

/// A peer handle: a slot and the slot's generation, so a reused slot never matches an old id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PeerId {
    pub(crate) slot: u16,
    pub(crate) generation: u32,
}

impl PeerId {
    /// The slot number: the peer ID the remote side puts in its headers to reach this
    /// connection.
    pub fn slot(&self) -> u16 {
        self.slot
    }

    /// The slot's generation.
    pub fn generation(&self) -> u32 {
        self.generation
    }
}

/// A connection's state, as ENet 1.1 names them (the transient CONNECTION_PENDING,
/// CONNECTION_SUCCEEDED and DISCONNECT_LATER do not exist here).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PeerState {
    /// Client: CONNECT sent, waiting for VERIFY_CONNECT.
    Connecting,
    /// Server: VERIFY_CONNECT sent, waiting for the client (half-open).
    AcknowledgingConnect,
    /// Connected.
    Connected,
    /// Our DISCONNECT is waiting for its ACK.
    Disconnecting,
    /// The remote DISCONNECT's ACK is queued.
    AcknowledgingDisconnect,
    /// Gone, about to be freed.
    Zombie,
}

/// Why a connection ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DisconnectReason {
    /// A DISCONNECT was received, or ours was acknowledged; the DISCONNECT's data.
    Graceful(u32),
    /// Reliable commands went unacknowledged (ENet's 5–30 s rule).
    Timeout,
    /// Client: the VERIFY_CONNECT did not echo our channel count and throttle.
    Refused,
    /// The peer broke a bound: reassembly memory, packet size.
    ProtocolError,
}

/// Something the application must know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A connection is established (server: the client's first datagram after VERIFY_CONNECT;
    /// client: VERIFY_CONNECT received).
    Connect {
        /// The peer.
        peer: PeerId,
        /// Its address.
        addr: SocketAddr,
    },
    /// A packet arrived.
    Receive {
        /// The peer.
        peer: PeerId,
        /// Channel.
        channel: u8,
        /// The packet (reassembled if it was fragmented).
        data: Bytes,
        /// Whether it came as SEND_RELIABLE or SEND_FRAGMENT.
        reliable: bool,
    },
    /// A connection ended; every peer that had a `Connect` (or, client side, a `connect`
    /// call) gets exactly one, unless the application ended it with `disconnect_now`/`reset`.
    Disconnect {
        /// The peer.
        peer: PeerId,
        /// Why.
        reason: DisconnectReason,
    },
}

/// One datagram to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transmit {
    /// Destination.
    pub dest: SocketAddr,
    /// The datagram.
    pub data: Vec<u8>,
}
