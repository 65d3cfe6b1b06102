//! How the rest of the gateway reaches a client's connection, whatever its transport: a
//! QUIC connection (`rc/1`), or a peer of the RCEnet host (ENet 1.1, Realm Crafter's own
//! clients; `net/enet.rs`). Closing, the size of a datagram and sending one are the only
//! things the hub and the broadcast fan-out need.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::mpsc;

/// A client connection as the hub and the fan-out reach it.
#[derive(Debug, Clone)]
pub enum ClientLink {
    /// A QUIC connection: reliable frames on its stream, positions as QUIC datagrams.
    Quic(quinn::Connection),
    /// A peer of the RCEnet host.
    Enet(EnetLink),
    /// A client of an edge gateway, relayed over its edge link (`rc-edge/1`).
    Relay(RelayLink),
}

/// The largest rc/1 datagram the fan-out gathers for an RCEnet peer: its frames are cut
/// apart again and each `P_StandardUpdate` goes as one unreliable ENet packet, so this only
/// bounds the batch.
pub const ENET_DATAGRAM: usize = 1_200;

impl ClientLink {
    /// Closes the connection with `code` (transport.md). An RCEnet client is sent
    /// `P_KickedPlayer` first unless the close is normal: the original client ignores
    /// ENet disconnects and only reacts to that packet.
    pub fn close(&self, code: u32, reason: &str) {
        match self {
            Self::Quic(c) => c.close(code.into(), reason.as_bytes()),
            Self::Enet(e) => e.close(code, reason),
            Self::Relay(r) => r.close(code, reason),
        }
    }

    /// The largest datagram the fan-out may gather for this client.
    pub fn max_datagram_size(&self) -> Option<usize> {
        match self {
            Self::Quic(c) => c.max_datagram_size(),
            Self::Enet(_) => Some(ENET_DATAGRAM),
            Self::Relay(r) => r.max_datagram_size(),
        }
    }

    /// Room in the datagram send buffer (QUIC drops its oldest datagram past it; the
    /// RCEnet host's command queue is bounded instead).
    pub fn datagram_send_buffer_space(&self) -> usize {
        match self {
            Self::Quic(c) => c.datagram_send_buffer_space(),
            Self::Enet(e) => e.room(),
            Self::Relay(r) => r.conn.datagram_send_buffer_space(),
        }
    }

    /// Sends rc/1 datagram frames (`P_StandardUpdate`s) unreliably.
    pub fn send_datagram(&self, d: Bytes) -> Result<(), LinkError> {
        match self {
            Self::Quic(c) => c.send_datagram(d).map_err(|_| LinkError),
            Self::Enet(e) => e.send(EnetCmd::Datagram {
                peer: e.peer,
                frames: d,
            }),
            Self::Relay(r) => r.send_datagram(&d),
        }
    }

    /// The client's address.
    pub fn remote_address(&self) -> SocketAddr {
        match self {
            Self::Quic(c) => c.remote_address(),
            Self::Enet(e) => e.addr,
            Self::Relay(r) => r.addr,
        }
    }
}

/// A datagram or command could not be queued (the connection is gone or its queue full).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the client link cannot take it")]
pub struct LinkError;

/// What a session task, the hub or the fan-out asks of the RCEnet host task about one
/// peer.
#[derive(Debug)]
pub enum EnetCmd {
    /// rc/1 frames (`[len u16][type][payload]`, one or more) to send reliably on channel
    /// 1, one ENet packet `[type][payload]` each.
    Frames {
        /// The peer.
        peer: rcenet::PeerId,
        /// The frames.
        frames: Bytes,
        /// Whether their bytes are counted in the client's `queued` (frames from the hub
        /// and the node links; the host subtracts them once it has taken them).
        counted: bool,
    },
    /// rc/1 datagram frames to send unreliably on channel 2, one packet each.
    Datagram {
        /// The peer.
        peer: rcenet::PeerId,
        /// The frames.
        frames: Bytes,
    },
    /// End the connection: `P_KickedPlayer` first when `kick`, then an ENet disconnect
    /// once it is delivered (or after a grace period).
    Close {
        /// The peer.
        peer: rcenet::PeerId,
        /// Whether to send `P_KickedPlayer` first.
        kick: bool,
        /// The close code (transport.md), sent as the ENet DISCONNECT's data: the SDK
        /// reports it; the original client ignores it.
        code: u32,
    },
}

/// Most commands queued for the RCEnet host task, every peer together (a broadcast tick
/// brings one per player at once): past it datagrams are dropped (counted) and frames
/// wait (a session's) or close their client as too slow (the hub's, which each client
/// also bounds by `client_queue_bytes`). The channel's memory grows only as it fills.
pub const ENET_COMMANDS: usize = 1 << 18;

/// One RCEnet peer as the gateway reaches it: commands to the host task.
#[derive(Debug, Clone)]
pub struct EnetLink {
    /// The host's id of the peer.
    pub peer: rcenet::PeerId,
    /// Its address when it connected.
    pub addr: SocketAddr,
    /// The host task's command queue.
    pub tx: mpsc::Sender<EnetCmd>,
}

impl EnetLink {
    fn send(&self, cmd: EnetCmd) -> Result<(), LinkError> {
        self.tx.try_send(cmd).map_err(|_| LinkError)
    }

    /// Room left in the host's command queue, in bytes of datagrams (an estimate: the
    /// fan-out compares it with one datagram's length).
    pub fn room(&self) -> usize {
        self.tx.capacity().saturating_mul(ENET_DATAGRAM)
    }

    /// Queues reliable frames, waiting for room in the host task's queue.
    pub async fn frames(&self, frames: Bytes) -> Result<(), LinkError> {
        self.tx
            .send(EnetCmd::Frames {
                peer: self.peer,
                frames,
                counted: false,
            })
            .await
            .map_err(|_| LinkError)
    }

    /// Asks the host task to end the connection (see [`EnetCmd::Close`]).
    pub fn close(&self, code: u32, reason: &str) {
        tracing::debug!(code, reason, "closing an RCEnet peer");
        use crate::session::close;
        // A kick (code 1) has had its `P_KickedPlayer` already.
        let kick = code != close::NORMAL && code != close::KICKED;
        // A full queue: the host task ends peers whose session task is gone anyway.
        let _ = self.send(EnetCmd::Close {
            peer: self.peer,
            kick,
            code,
        });
    }
}

/// Messages queued for one edge link's writer, every relayed session together: a session
/// task waits for room (its client's frames back up in its `client_queue_bytes`).
pub const RELAY_QUEUE: usize = 4_096;

/// A client of an edge gateway as the leader reaches it: messages to the edge link's
/// writer, datagrams on the link itself (`shared::internal::edge`).
#[derive(Debug, Clone)]
pub struct RelayLink {
    /// The edge's number of the session.
    pub id: shared::internal::edge::RelayId,
    /// The client's address (the edge's peer).
    pub addr: SocketAddr,
    /// The edge link's writer.
    pub tx: mpsc::Sender<shared::internal::edge::EdgeMsg>,
    /// The edge link.
    pub conn: quinn::Connection,
    /// The largest datagram the client takes (0: none).
    pub max_datagram: usize,
    /// The link's version (`edge::link_version`): what the edge understands.
    pub version: u16,
    /// Where the zone nodes reach the edge to fan its clients' broadcasts out themselves
    /// (`None`: the edge did not say; its clients' datagrams come through this gateway).
    pub fanout: Option<Arc<shared::internal::FanoutEdge>>,
}

impl RelayLink {
    /// Asks the edge to close the client. Never waits: when the link's queue is full the
    /// message is queued from a task of its own.
    pub fn close(&self, code: u32, reason: &str) {
        use shared::internal::edge::{EdgeMsg, short_reason};
        self.send(EdgeMsg::Close {
            id: self.id,
            code,
            reason: short_reason(reason),
        });
    }

    /// Sends `msg` to the edge, never waiting and never dropping it: when the link's queue
    /// is full it is queued from a task of its own (the edge acts on it: a close, where
    /// the player is, his party). Dropped only when the link is gone.
    pub fn send(&self, msg: shared::internal::edge::EdgeMsg) {
        if let Err(mpsc::error::TrySendError::Full(msg)) = self.tx.try_send(msg) {
            let tx = self.tx.clone();
            tokio::spawn(async move {
                let _ = tx.send(msg).await;
            });
        }
    }

    /// The largest rc/1 datagram for the client: its own limit, and the link's less the
    /// session header.
    pub fn max_datagram_size(&self) -> Option<usize> {
        let link = self
            .conn
            .max_datagram_size()?
            .checked_sub(shared::internal::datagram::HEADER_LEN)?;
        (self.max_datagram > 0).then_some(link.min(self.max_datagram))
    }

    /// Sends rc/1 datagram frames to the client through the edge.
    pub fn send_datagram(&self, d: &[u8]) -> Result<(), LinkError> {
        let mut b =
            bytes::BytesMut::with_capacity(d.len() + shared::internal::datagram::HEADER_LEN);
        shared::internal::datagram::put_header(&mut b, self.id);
        b.extend_from_slice(d);
        self.conn.send_datagram(b.freeze()).map_err(|_| LinkError)
    }

    /// Queues the server's reliable frames for the client, waiting for room; false once
    /// the link is gone.
    pub async fn frames(&self, frames: &[u8]) -> bool {
        use shared::internal::edge::{EdgeMsg, MAX_CHUNK};
        for chunk in frames.chunks(MAX_CHUNK) {
            let msg = EdgeMsg::Stream {
                id: self.id,
                bytes: chunk.to_vec(),
            };
            if self.tx.send(msg).await.is_err() {
                return false;
            }
        }
        true
    }
}
