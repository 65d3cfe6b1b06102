//! Errors of the two application calls that can fail: `connect` and `send`.

use thiserror::Error;

/// Why [`crate::Host::connect`] failed.
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnectError {
    /// Every slot is in use.
    #[error("no free peer slot")]
    NoFreeSlot,
}

/// Why [`crate::Host::send`] failed.
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SendError {
    /// The peer is unknown, gone, or not in the CONNECTED state.
    #[error("peer not connected")]
    NotConnected,
    /// The channel is not below the connection's channel count.
    #[error("no such channel")]
    InvalidChannel,
    /// The peer's outgoing queue would exceed `max_outgoing_bytes`.
    #[error("outgoing queue full")]
    QueueFull,
    /// The packet would need more fragments than a 32-bit count (never in practice).
    #[error("packet too large")]
    TooLarge,
}
