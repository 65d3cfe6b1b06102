//! Connection errors, and the application close codes of transport.md as a type, so that a
//! test can assert "the server closed with code 2".

use std::fmt;
use std::time::Duration;

use shared::frame::FrameError;
use shared::wire::DecodeError;

/// An application close code (transport.md, "Application close codes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CloseCode {
    /// 0: normal close.
    Normal,
    /// 1: kicked (a `P_KickedPlayer` came first).
    Kicked,
    /// 2: protocol violation (malformed frame, packet before login, oversized frame).
    ProtocolViolation,
    /// 3: server shutting down (the character was saved first).
    ShuttingDown,
    /// 4: too many failed logins, rate limited.
    RateLimited,
    /// 5: the server is locked for maintenance (the reason says so; players in the game
    /// get `P_KickedPlayer` first), the account's saved data could not be read (the
    /// operator must repair it), or the server cannot save right now (its store fails):
    /// try again later.
    Unavailable,
    /// 6: the client did not read what the server sent (its send queue passed the
    /// server's byte limit).
    TooSlow,
    /// Any other code.
    Other(u64),
}

impl CloseCode {
    /// The code for a number.
    pub const fn from_u64(code: u64) -> Self {
        match code {
            0 => Self::Normal,
            1 => Self::Kicked,
            2 => Self::ProtocolViolation,
            3 => Self::ShuttingDown,
            4 => Self::RateLimited,
            5 => Self::Unavailable,
            6 => Self::TooSlow,
            other => Self::Other(other),
        }
    }

    /// The number on the wire.
    pub const fn as_u64(self) -> u64 {
        match self {
            Self::Normal => 0,
            Self::Kicked => 1,
            Self::ProtocolViolation => 2,
            Self::ShuttingDown => 3,
            Self::RateLimited => 4,
            Self::Unavailable => 5,
            Self::TooSlow => 6,
            Self::Other(c) => c,
        }
    }

    pub(crate) fn varint(self) -> quinn::VarInt {
        quinn::VarInt::from_u64(self.as_u64()).unwrap_or(quinn::VarInt::MAX)
    }
}

impl From<u64> for CloseCode {
    fn from(code: u64) -> Self {
        Self::from_u64(code)
    }
}

impl From<u32> for CloseCode {
    fn from(code: u32) -> Self {
        Self::from_u64(u64::from(code))
    }
}

impl fmt::Display for CloseCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self {
            Self::Normal => "normal close",
            Self::Kicked => "kicked",
            Self::ProtocolViolation => "protocol violation",
            Self::ShuttingDown => "server shutting down",
            Self::RateLimited => "rate limited",
            Self::Unavailable => "unavailable: locked for maintenance, or data unreadable",
            Self::TooSlow => "too slow: the client did not read what the server sent",
            Self::Other(_) => "unknown code",
        };
        write!(f, "{} ({what})", self.as_u64())
    }
}

/// Why a connection ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CloseReason {
    /// The server closed it with an application code.
    Server {
        /// The code.
        code: CloseCode,
        /// The reason bytes the server sent, read as Latin-1 (often empty).
        reason: String,
    },
    /// This side closed it.
    Local,
    /// Nothing was heard from the server for the idle timeout.
    TimedOut,
    /// The server reset the connection (a stateless reset: it lost the connection's state).
    Reset,
    /// The QUIC or TLS layer closed it (handshake failure, transport error, version
    /// mismatch).
    Transport(String),
}

impl CloseReason {
    /// The server's application close code, if the server closed the connection.
    pub fn server_code(&self) -> Option<CloseCode> {
        match self {
            Self::Server { code, .. } => Some(*code),
            _ => None,
        }
    }
}

impl From<quinn::ConnectionError> for CloseReason {
    fn from(e: quinn::ConnectionError) -> Self {
        use quinn::ConnectionError as E;
        match e {
            E::ApplicationClosed(c) => Self::Server {
                code: CloseCode::from_u64(c.error_code.into_inner()),
                reason: c.reason.iter().map(|&b| char::from(b)).collect(),
            },
            E::LocallyClosed => Self::Local,
            E::TimedOut => Self::TimedOut,
            E::Reset => Self::Reset,
            other => Self::Transport(other.to_string()),
        }
    }
}

impl fmt::Display for CloseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Server { code, reason } if reason.is_empty() => {
                write!(f, "closed by the server with code {code}")
            }
            Self::Server { code, reason } => {
                write!(f, "closed by the server with code {code}: {reason}")
            }
            Self::Local => f.write_str("closed by this client"),
            Self::TimedOut => f.write_str("idle timeout"),
            Self::Reset => f.write_str("reset by the server"),
            Self::Transport(e) => write!(f, "transport error: {e}"),
        }
    }
}

/// What can go wrong on a [`Connection`](crate::Connection).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The TLS or QUIC configuration could not be built.
    #[error("client configuration: {0}")]
    Config(String),
    /// No UDP socket could be bound.
    #[error("binding a UDP socket: {0}")]
    Bind(#[source] std::io::Error),
    /// quinn refused to start connecting (e.g. an invalid server name).
    #[error("starting the connection: {0}")]
    Connect(#[from] quinn::ConnectError),
    /// The QUIC/TLS handshake failed.
    #[error("handshake failed: {0}")]
    Handshake(CloseReason),
    /// The server's certificate does not match [`Verify::PinSha256`](crate::Verify).
    #[error(
        "the server certificate's SHA-256 is {}, the pin is {}",
        hex::encode(got),
        hex::encode(expected)
    )]
    PinMismatch {
        /// The pinned fingerprint.
        expected: [u8; 32],
        /// The fingerprint of the certificate the server showed.
        got: [u8; 32],
    },
    /// The server did not negotiate the ALPN asked for (`rc/1` or `rc-compact/1`).
    #[error("the server negotiated ALPN {0:?}, not the profile asked for")]
    Alpn(Option<String>),
    /// The connection is closed; the reason says who closed it and with which code.
    #[error("connection {0}")]
    Closed(CloseReason),
    /// The server reset its side of the reliable stream with this code.
    #[error("the server reset the reliable stream with code {0}")]
    StreamReset(u64),
    /// The server stopped reading the reliable stream with this code.
    #[error("the server stopped the reliable stream with code {0}")]
    StreamStopped(u64),
    /// Another stream failure.
    #[error("reliable stream: {0}")]
    Stream(String),
    /// The server sent a malformed frame on the reliable stream (or a frame to send is too
    /// long). A malformed incoming frame is fatal: the client closes with code 2.
    #[error("framing: {0}")]
    Frame(#[from] FrameError),
    /// A well-framed packet from the server did not decode. Not fatal: the connection stays
    /// usable and the next `recv` returns the next packet.
    #[error("undecodable {} ({ty}) from the server: {error}", shared::proto::packet_name(*ty).unwrap_or("packet"))]
    Decode {
        /// The type byte.
        ty: u8,
        /// Why it did not decode.
        error: DecodeError,
        /// The payload as received.
        payload: Vec<u8>,
    },
    /// The server or this client does not allow datagrams on this connection.
    #[error("datagrams are not available on this connection: {0}")]
    DatagramsUnavailable(&'static str),
    /// A datagram is larger than the path currently allows.
    #[error("datagram of {len} bytes is larger than the path allows ({max:?})")]
    DatagramTooLarge {
        /// Its size.
        len: usize,
        /// The current limit, if datagrams are allowed at all.
        max: Option<usize>,
    },
    /// The handshake did not finish in time (no server there, or UDP blocked).
    #[error("no handshake with the server within {0:?}")]
    ConnectTimeout(Duration),
    /// Nothing (or not the expected packet) arrived in time.
    #[error("nothing arrived within {0:?}")]
    Timeout(Duration),
    /// A dialog answer the open windows do not allow: no such dialog or option, or no
    /// input prompt is open (nothing was sent).
    #[error("dialog {dialog} offers no option {option} (or no prompt is open)")]
    NoSuchChoice {
        /// The dialog handle (0 for an input prompt).
        dialog: u32,
        /// The option.
        option: u8,
    },
}

impl ClientError {
    /// The server's application close code, if this error means the server closed the
    /// connection (during the handshake or after).
    pub fn server_close_code(&self) -> Option<CloseCode> {
        match self {
            Self::Closed(r) | Self::Handshake(r) => r.server_code(),
            _ => None,
        }
    }

    /// The server's close reason, if this error means the server closed the connection.
    pub fn server_close_reason(&self) -> Option<&str> {
        match self {
            Self::Closed(CloseReason::Server { reason, .. })
            | Self::Handshake(CloseReason::Server { reason, .. }) => Some(reason),
            _ => None,
        }
    }

    /// Whether the connection is gone (every later call fails too).
    pub fn is_closed(&self) -> bool {
        matches!(self, Self::Closed(_) | Self::Handshake(_))
    }
}

impl From<quinn::ConnectionError> for ClientError {
    fn from(e: quinn::ConnectionError) -> Self {
        Self::Closed(e.into())
    }
}

impl From<quinn::ReadError> for ClientError {
    fn from(e: quinn::ReadError) -> Self {
        use quinn::ReadError as E;
        match e {
            E::ConnectionLost(c) => c.into(),
            E::Reset(code) => Self::StreamReset(code.into_inner()),
            other => Self::Stream(other.to_string()),
        }
    }
}

impl From<quinn::WriteError> for ClientError {
    fn from(e: quinn::WriteError) -> Self {
        use quinn::WriteError as E;
        match e {
            E::ConnectionLost(c) => c.into(),
            E::Stopped(code) => Self::StreamStopped(code.into_inner()),
            other => Self::Stream(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_codes_round_trip() {
        for n in 0..8u64 {
            assert_eq!(CloseCode::from_u64(n).as_u64(), n);
        }
        assert_eq!(CloseCode::from(2u32), CloseCode::ProtocolViolation);
        assert_eq!(
            CloseCode::ProtocolViolation.to_string(),
            "2 (protocol violation)"
        );
        assert_eq!(CloseCode::Other(u64::MAX).varint(), quinn::VarInt::MAX);
    }
}
