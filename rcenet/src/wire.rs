//! The ENet 1.1 datagram layout: the 6- or 8-byte header and the eleven commands, typed.
//!
//! Everything is big-endian except the session value (the header's first four bytes and
//! CONNECT's last field), which ENet 1.1 copies raw from an x86 host: little-endian.
//! Decoding never panics; it stops at the first command that is unknown, has size 0 or runs
//! past the end, exactly where an ENet 1.1 receiver stops (spec §3.3).

use thiserror::Error;

/// Header bit 15: a 16-bit sentTime follows the peer ID.
pub const HEADER_FLAG_SENT_TIME: u16 = 0x8000;
/// The peer ID meaning "no slot yet" (only CONNECT is accepted with it).
pub const NO_PEER: u16 = 0x7FFF;
/// Command flag: the receiver must acknowledge this command.
pub const FLAG_ACKNOWLEDGE: u8 = 0x80;
/// Command flag: unsequenced (DISCONNECT from `disconnect_now`, SEND_UNSEQUENCED).
pub const FLAG_UNSEQUENCED: u8 = 0x40;
/// The connection's system channel (CONNECT, VERIFY_CONNECT, PING, DISCONNECT, limits).
pub const SYSTEM_CHANNEL: u8 = 0xFF;
/// Size of a header with sentTime (ENet counts this size against the MTU even without it).
pub const HEADER_SIZE: usize = 8;
/// Size of a header without sentTime.
pub const SHORT_HEADER_SIZE: usize = 6;
/// At most this many commands go into one datagram.
pub const MAX_COMMANDS_PER_DATAGRAM: usize = 32;
/// Smallest MTU a peer may announce (clamped up to it).
pub const MIN_MTU: u16 = 576;
/// Largest MTU a peer may announce (clamped down to it).
pub const MAX_MTU: u16 = 4096;
/// Smallest flow window.
pub const MIN_WINDOW: u32 = 4096;
/// Largest flow window (used with unlimited bandwidth).
pub const MAX_WINDOW: u32 = 32768;

/// Command kinds (the low nibble of the command byte).
pub mod kind {
    /// ACKNOWLEDGE.
    pub const ACKNOWLEDGE: u8 = 1;
    /// CONNECT.
    pub const CONNECT: u8 = 2;
    /// VERIFY_CONNECT.
    pub const VERIFY_CONNECT: u8 = 3;
    /// DISCONNECT.
    pub const DISCONNECT: u8 = 4;
    /// PING.
    pub const PING: u8 = 5;
    /// SEND_RELIABLE.
    pub const SEND_RELIABLE: u8 = 6;
    /// SEND_UNRELIABLE.
    pub const SEND_UNRELIABLE: u8 = 7;
    /// SEND_FRAGMENT.
    pub const SEND_FRAGMENT: u8 = 8;
    /// SEND_UNSEQUENCED.
    pub const SEND_UNSEQUENCED: u8 = 9;
    /// BANDWIDTH_LIMIT.
    pub const BANDWIDTH_LIMIT: u8 = 10;
    /// THROTTLE_CONFIGURE.
    pub const THROTTLE_CONFIGURE: u8 = 11;
}

/// Fixed size of each command kind (header included, data excluded); 0 = invalid kind.
pub const COMMAND_SIZES: [usize; 12] = [0, 8, 40, 36, 8, 4, 6, 8, 24, 8, 12, 16];

/// Fixed size of a command kind, `None` for 0 and kinds ≥ 12.
pub fn command_size(kind: u8) -> Option<usize> {
    COMMAND_SIZES
        .get(usize::from(kind))
        .copied()
        .filter(|&s| s != 0)
}

/// Why decoding stopped.
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WireError {
    /// The input ends inside the header, a command or its data.
    #[error("truncated")]
    Truncated,
    /// The command kind is 0 or ≥ 12.
    #[error("unknown command kind {0}")]
    UnknownKind(u8),
}

/// The datagram header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The session value, written raw (little-endian) by ENet 1.1.
    pub session: u32,
    /// The receiver's slot (15 bits); [`NO_PEER`] before the handshake.
    pub peer_id: u16,
    /// Low 16 bits of the sender's clock; present iff the datagram holds an ACK-wanted command.
    pub sent_time: Option<u16>,
}

impl Header {
    /// Encoded size: 8 with sentTime, 6 without.
    pub fn size(&self) -> usize {
        if self.sent_time.is_some() {
            HEADER_SIZE
        } else {
            SHORT_HEADER_SIZE
        }
    }

    /// Reads a header; returns it and its size.
    pub fn decode(buf: &[u8]) -> Result<(Self, usize), WireError> {
        let mut r = Reader::new(buf);
        let session = r.u32_le()?;
        let raw = r.u16()?;
        let sent_time = if raw & HEADER_FLAG_SENT_TIME != 0 {
            Some(r.u16()?)
        } else {
            None
        };
        Ok((
            Self {
                session,
                peer_id: raw & !HEADER_FLAG_SENT_TIME,
                sent_time,
            },
            r.pos,
        ))
    }

    /// Appends the header.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.session.to_le_bytes());
        let flag = if self.sent_time.is_some() {
            HEADER_FLAG_SENT_TIME
        } else {
            0
        };
        out.extend_from_slice(&((self.peer_id & NO_PEER) | flag).to_be_bytes());
        if let Some(t) = self.sent_time {
            out.extend_from_slice(&t.to_be_bytes());
        }
    }
}

/// The 4-byte command header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandHeader {
    /// The raw command byte: kind in the low nibble, [`FLAG_ACKNOWLEDGE`], [`FLAG_UNSEQUENCED`].
    pub command: u8,
    /// Channel, [`SYSTEM_CHANNEL`] for connection management.
    pub channel: u8,
    /// Reliable sequence number (garbage in ACKs sent by ENet 1.1: never read it there).
    pub reliable_seq: u16,
}

impl CommandHeader {
    /// The command kind (low nibble).
    pub fn kind(&self) -> u8 {
        self.command & 0x0F
    }

    /// Whether the sender wants an ACK.
    pub fn wants_ack(&self) -> bool {
        self.command & FLAG_ACKNOWLEDGE != 0
    }
}

/// CONNECT's body, also VERIFY_CONNECT's (which has no session).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectParams {
    /// The sender's slot for this connection: the receiver puts it in every header.
    pub outgoing_peer_id: u16,
    /// The sender's MTU.
    pub mtu: u16,
    /// Flow window.
    pub window_size: u32,
    /// Channels requested (CONNECT) or granted (VERIFY_CONNECT, an echo).
    pub channel_count: u32,
    /// Incoming bandwidth in bytes/s, 0 = unlimited.
    pub incoming_bandwidth: u32,
    /// Outgoing bandwidth in bytes/s, 0 = unlimited.
    pub outgoing_bandwidth: u32,
    /// Packet throttle interval (ms), echoed by VERIFY_CONNECT.
    pub throttle_interval: u32,
    /// Packet throttle acceleration, echoed.
    pub throttle_acceleration: u32,
    /// Packet throttle deceleration, echoed.
    pub throttle_deceleration: u32,
}

/// SEND_FRAGMENT's fields besides the data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FragmentInfo {
    /// Reliable sequence number of the first fragment.
    pub start_seq: u16,
    /// Number of fragments.
    pub count: u32,
    /// This fragment's index.
    pub number: u32,
    /// Length of the whole packet.
    pub total_length: u32,
    /// Byte offset of this fragment in the whole packet.
    pub offset: u32,
}

/// One command's body. Data slices borrow from the datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command<'a> {
    /// Acknowledges `(channel, received_seq)`, echoing the datagram's sentTime.
    Acknowledge {
        /// The acknowledged reliable sequence number.
        received_seq: u16,
        /// The acknowledged datagram's sentTime.
        received_sent_time: u16,
    },
    /// A connection request.
    Connect {
        /// Parameters.
        params: ConnectParams,
        /// Session value (raw, little-endian like the header).
        session: u32,
    },
    /// The answer to CONNECT.
    VerifyConnect(ConnectParams),
    /// Disconnect with application data.
    Disconnect {
        /// Application data.
        data: u32,
    },
    /// Keep-alive; the receiver acknowledges it.
    Ping,
    /// A reliable packet.
    SendReliable {
        /// Payload.
        data: &'a [u8],
    },
    /// An unreliable packet.
    SendUnreliable {
        /// Per-channel unreliable sequence number.
        unreliable_seq: u16,
        /// Payload.
        data: &'a [u8],
    },
    /// One fragment of a reliable packet.
    SendFragment {
        /// Fragment fields.
        info: FragmentInfo,
        /// This fragment's bytes.
        data: &'a [u8],
    },
    /// An unsequenced packet (never sent by Realm Crafter).
    SendUnsequenced {
        /// Unsequenced group.
        group: u16,
        /// Payload.
        data: &'a [u8],
    },
    /// The sender's bandwidth limits.
    BandwidthLimit {
        /// Incoming bytes/s.
        incoming: u32,
        /// Outgoing bytes/s.
        outgoing: u32,
    },
    /// Packet throttle parameters.
    ThrottleConfigure {
        /// Interval (ms).
        interval: u32,
        /// Acceleration.
        acceleration: u32,
        /// Deceleration.
        deceleration: u32,
    },
}

impl<'a> Command<'a> {
    /// The kind number of this body.
    pub fn kind(&self) -> u8 {
        match self {
            Self::Acknowledge { .. } => kind::ACKNOWLEDGE,
            Self::Connect { .. } => kind::CONNECT,
            Self::VerifyConnect(_) => kind::VERIFY_CONNECT,
            Self::Disconnect { .. } => kind::DISCONNECT,
            Self::Ping => kind::PING,
            Self::SendReliable { .. } => kind::SEND_RELIABLE,
            Self::SendUnreliable { .. } => kind::SEND_UNRELIABLE,
            Self::SendFragment { .. } => kind::SEND_FRAGMENT,
            Self::SendUnsequenced { .. } => kind::SEND_UNSEQUENCED,
            Self::BandwidthLimit { .. } => kind::BANDWIDTH_LIMIT,
            Self::ThrottleConfigure { .. } => kind::THROTTLE_CONFIGURE,
        }
    }

    /// The payload, for the four data-carrying kinds.
    pub fn data(&self) -> Option<&'a [u8]> {
        match *self {
            Self::SendReliable { data }
            | Self::SendUnreliable { data, .. }
            | Self::SendFragment { data, .. }
            | Self::SendUnsequenced { data, .. } => Some(data),
            _ => None,
        }
    }

    /// The same command with its payload replaced (for bodies stored without data).
    pub fn with_data<'b>(&self, new: &'b [u8]) -> Command<'b> {
        match *self {
            Self::SendReliable { .. } => Command::SendReliable { data: new },
            Self::SendUnreliable { unreliable_seq, .. } => Command::SendUnreliable {
                unreliable_seq,
                data: new,
            },
            Self::SendFragment { info, .. } => Command::SendFragment { info, data: new },
            Self::SendUnsequenced { group, .. } => Command::SendUnsequenced { group, data: new },
            Self::Acknowledge {
                received_seq,
                received_sent_time,
            } => Command::Acknowledge {
                received_seq,
                received_sent_time,
            },
            Self::Connect { params, session } => Command::Connect { params, session },
            Self::VerifyConnect(p) => Command::VerifyConnect(p),
            Self::Disconnect { data } => Command::Disconnect { data },
            Self::Ping => Command::Ping,
            Self::BandwidthLimit { incoming, outgoing } => {
                Command::BandwidthLimit { incoming, outgoing }
            }
            Self::ThrottleConfigure {
                interval,
                acceleration,
                deceleration,
            } => Command::ThrottleConfigure {
                interval,
                acceleration,
                deceleration,
            },
        }
    }

    /// Encoded size: the fixed size plus the data (capped at 65535, as the length field is).
    pub fn encoded_len(&self) -> usize {
        let fixed = command_size(self.kind()).unwrap_or(0);
        fixed
            + self
                .data()
                .map_or(0, |d| d.len().min(usize::from(u16::MAX)))
    }
}

/// A command header and its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    /// Command byte, channel, reliable sequence number.
    pub header: CommandHeader,
    /// The body.
    pub command: Command<'a>,
}

impl<'a> Frame<'a> {
    /// Decodes one command at the start of `buf`; returns it and the bytes it used.
    pub fn decode(buf: &'a [u8]) -> Result<(Self, usize), WireError> {
        let mut r = Reader::new(buf);
        let command = r.u8()?;
        let channel = r.u8()?;
        let reliable_seq = r.u16()?;
        let header = CommandHeader {
            command,
            channel,
            reliable_seq,
        };
        let k = header.kind();
        let size = command_size(k).ok_or(WireError::UnknownKind(k))?;
        if buf.len() < size {
            return Err(WireError::Truncated);
        }
        let body = match k {
            kind::ACKNOWLEDGE => Command::Acknowledge {
                received_seq: r.u16()?,
                received_sent_time: r.u16()?,
            },
            kind::CONNECT => {
                let params = r.connect_params()?;
                Command::Connect {
                    params,
                    session: r.u32_le()?,
                }
            }
            kind::VERIFY_CONNECT => Command::VerifyConnect(r.connect_params()?),
            kind::DISCONNECT => Command::Disconnect { data: r.u32()? },
            kind::PING => Command::Ping,
            kind::SEND_RELIABLE => {
                let len = r.u16()?;
                Command::SendReliable {
                    data: r.bytes(len)?,
                }
            }
            kind::SEND_UNRELIABLE => {
                let unreliable_seq = r.u16()?;
                let len = r.u16()?;
                Command::SendUnreliable {
                    unreliable_seq,
                    data: r.bytes(len)?,
                }
            }
            kind::SEND_FRAGMENT => {
                let start_seq = r.u16()?;
                let len = r.u16()?;
                let info = FragmentInfo {
                    start_seq,
                    count: r.u32()?,
                    number: r.u32()?,
                    total_length: r.u32()?,
                    offset: r.u32()?,
                };
                Command::SendFragment {
                    info,
                    data: r.bytes(len)?,
                }
            }
            kind::SEND_UNSEQUENCED => {
                let group = r.u16()?;
                let len = r.u16()?;
                Command::SendUnsequenced {
                    group,
                    data: r.bytes(len)?,
                }
            }
            kind::BANDWIDTH_LIMIT => Command::BandwidthLimit {
                incoming: r.u32()?,
                outgoing: r.u32()?,
            },
            kind::THROTTLE_CONFIGURE => Command::ThrottleConfigure {
                interval: r.u32()?,
                acceleration: r.u32()?,
                deceleration: r.u32()?,
            },
            other => return Err(WireError::UnknownKind(other)),
        };
        Ok((
            Self {
                header,
                command: body,
            },
            r.pos,
        ))
    }

    /// Appends the command. The command byte is written as stored (its kind nibble should
    /// match the body); data longer than 65535 bytes is cut to fit the length field.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let h = &self.header;
        out.push((h.command & 0xF0) | self.command.kind());
        out.push(h.channel);
        put16(out, h.reliable_seq);
        let put_data = |out: &mut Vec<u8>, d: &[u8]| {
            let n = d.len().min(usize::from(u16::MAX));
            out.extend_from_slice(d.get(..n).unwrap_or_default());
        };
        let len16 = |d: &[u8]| u16::try_from(d.len()).unwrap_or(u16::MAX);
        match self.command {
            Command::Acknowledge {
                received_seq,
                received_sent_time,
            } => {
                put16(out, received_seq);
                put16(out, received_sent_time);
            }
            Command::Connect { params, session } => {
                put_params(out, &params);
                out.extend_from_slice(&session.to_le_bytes());
            }
            Command::VerifyConnect(params) => put_params(out, &params),
            Command::Disconnect { data } => put32(out, data),
            Command::Ping => {}
            Command::SendReliable { data } => {
                put16(out, len16(data));
                put_data(out, data);
            }
            Command::SendUnreliable {
                unreliable_seq,
                data,
            } => {
                put16(out, unreliable_seq);
                put16(out, len16(data));
                put_data(out, data);
            }
            Command::SendFragment { info, data } => {
                put16(out, info.start_seq);
                put16(out, len16(data));
                put32(out, info.count);
                put32(out, info.number);
                put32(out, info.total_length);
                put32(out, info.offset);
                put_data(out, data);
            }
            Command::SendUnsequenced { group, data } => {
                put16(out, group);
                put16(out, len16(data));
                put_data(out, data);
            }
            Command::BandwidthLimit { incoming, outgoing } => {
                put32(out, incoming);
                put32(out, outgoing);
            }
            Command::ThrottleConfigure {
                interval,
                acceleration,
                deceleration,
            } => {
                put32(out, interval);
                put32(out, acceleration);
                put32(out, deceleration);
            }
        }
    }
}

/// The commands of a datagram body, in order; yields one `Err` at the point where an ENet
/// 1.1 receiver stops reading, then ends.
#[derive(Debug, Clone)]
pub struct Commands<'a> {
    rest: &'a [u8],
    done: bool,
}

impl<'a> Commands<'a> {
    /// Iterates over the commands in `body` (the datagram after its header).
    pub fn new(body: &'a [u8]) -> Self {
        Self {
            rest: body,
            done: false,
        }
    }
}

impl<'a> Iterator for Commands<'a> {
    type Item = Result<Frame<'a>, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.rest.is_empty() {
            return None;
        }
        match Frame::decode(self.rest) {
            Ok((frame, used)) => {
                self.rest = self.rest.get(used..).unwrap_or_default();
                Some(Ok(frame))
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// A whole datagram, owned view for tests and tools: header plus the commands that decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Datagram<'a> {
    /// The header.
    pub header: Header,
    /// Commands in order.
    pub frames: Vec<Frame<'a>>,
}

impl<'a> Datagram<'a> {
    /// Decodes a datagram strictly: every byte must belong to a valid command.
    pub fn decode(buf: &'a [u8]) -> Result<Self, WireError> {
        let (header, used) = Header::decode(buf)?;
        let frames =
            Commands::new(buf.get(used..).unwrap_or_default()).collect::<Result<Vec<_>, _>>()?;
        Ok(Self { header, frames })
    }

    /// Encodes the datagram.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            self.header.size()
                + self
                    .frames
                    .iter()
                    .map(|f| f.command.encoded_len())
                    .sum::<usize>(),
        );
        self.header.encode(&mut out);
        for f in &self.frames {
            f.encode(&mut out);
        }
        out
    }
}

fn put16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_be_bytes());
}

fn put32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_be_bytes());
}

fn put_params(out: &mut Vec<u8>, p: &ConnectParams) {
    put16(out, p.outgoing_peer_id);
    put16(out, p.mtu);
    put32(out, p.window_size);
    put32(out, p.channel_count);
    put32(out, p.incoming_bandwidth);
    put32(out, p.outgoing_bandwidth);
    put32(out, p.throttle_interval);
    put32(out, p.throttle_acceleration);
    put32(out, p.throttle_deceleration);
}

/// A checked big-endian reader.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    fn bytes(&mut self, n: impl Into<usize>) -> Result<&'a [u8], WireError> {
        let n = n.into();
        let end = self.pos.checked_add(n).ok_or(WireError::Truncated)?;
        let s = self.buf.get(self.pos..end).ok_or(WireError::Truncated)?;
        self.pos = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        self.bytes(N)?.try_into().map_err(|_| WireError::Truncated)
    }

    fn u8(&mut self) -> Result<u8, WireError> {
        Ok(u8::from_be_bytes(self.array()?))
    }

    fn u16(&mut self) -> Result<u16, WireError> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    fn u32(&mut self) -> Result<u32, WireError> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    fn u32_le(&mut self) -> Result<u32, WireError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn connect_params(&mut self) -> Result<ConnectParams, WireError> {
        Ok(ConnectParams {
            outgoing_peer_id: self.u16()?,
            mtu: self.u16()?,
            window_size: self.u32()?,
            channel_count: self.u32()?,
            incoming_bandwidth: self.u32()?,
            outgoing_bandwidth: self.u32()?,
            throttle_interval: self.u32()?,
            throttle_acceleration: self.u32()?,
            throttle_deceleration: self.u32()?,
        })
    }
}

#[cfg(test)]
mod tests;
