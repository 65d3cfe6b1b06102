//! QUIC framing of Realm Crafter packets (transport.md): `[len u16 LE][type u8][payload]`
//! with `len = 1 + payload length` (1..=65535).
//!
//! * [`FrameDecoder`]: sans-IO incremental decoder for the reliable stream — push bytes in,
//!   pull frames out, [`FrameDecoder::finish`] at end of stream.
//! * [`Batcher`]: packs frames into datagrams up to a byte budget, reusing its buffers.
//! * [`split_datagram`]: validates a received datagram, which must parse exactly to its
//!   end, and iterates its frames.
//! * [`write_frame`] / [`begin_frame`] + [`end_frame`]: write frames into the caller's
//!   buffer.

use crate::proto::UpdateTail;
use crate::proto::ids::P_STANDARD_UPDATE;
use crate::proto::update::{STANDARD_UPDATE_LEN, StandardUpdateS2C};

/// The largest `len` the 16-bit prefix can carry.
pub const MAX_FRAME_LEN: usize = 65535;

/// The close reason (with code 2) of a connection whose reliable stream did not open
/// within the server's handshake timeout. A client that sent its first frame at once and
/// still gets it was not heard in time (load), not a broken contract.
pub const NO_STREAM_IN_TIME: &str = "no stream opened in time";

/// Default datagram byte budget for [`Batcher`] (a conservative QUIC datagram size).
pub const DEFAULT_DATAGRAM_BUDGET: usize = 1200;

/// One frame: its type byte and payload, borrowed from the buffer it was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The `P_*` type byte.
    pub ty: u8,
    /// The payload (may be empty).
    pub payload: &'a [u8],
}

impl Frame<'_> {
    /// An owned copy.
    pub fn to_owned_frame(&self) -> OwnedFrame {
        OwnedFrame {
            ty: self.ty,
            payload: self.payload.to_vec(),
        }
    }

    /// The frame's `len` field (1 + payload length).
    pub fn len_field(&self) -> usize {
        1 + self.payload.len()
    }
}

/// An owned frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedFrame {
    /// The `P_*` type byte.
    pub ty: u8,
    /// The payload.
    pub payload: Vec<u8>,
}

/// A framing violation. On the reliable stream every one of these closes the connection
/// with application error code 2.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// A frame's `len` field is 0 (a frame always holds at least its type byte).
    #[error("frame at stream offset {offset} has length 0")]
    ZeroLength {
        /// Stream offset of the length prefix.
        offset: u64,
    },
    /// A frame is longer than the configured maximum.
    #[error("frame at stream offset {offset} has length {len}, over the maximum {max}")]
    TooLong {
        /// Stream offset of the length prefix.
        offset: u64,
        /// The frame's `len`.
        len: usize,
        /// The configured maximum.
        max: usize,
    },
    /// The stream ended inside a frame.
    #[error("stream ended inside a frame: {buffered} byte(s) buffered, {needed} needed")]
    Truncated {
        /// Bytes buffered.
        buffered: usize,
        /// Bytes the frame needs in total (2 when the length prefix itself is cut).
        needed: usize,
    },
    /// A payload too long to frame (more than 65534 bytes), on the encoding side.
    #[error("payload of {len} bytes cannot be framed (at most 65534)")]
    PayloadTooLong {
        /// The payload length.
        len: usize,
    },
    /// A frame does not fit in the datagram budget at all.
    #[error("frame of {len} bytes does not fit a datagram budget of {budget}")]
    TooLargeForDatagram {
        /// Encoded frame size (prefix included).
        len: usize,
        /// The budget.
        budget: usize,
    },
}

/// Appends the frame `[len][ty][payload]` to `out`.
#[inline]
pub fn write_frame(out: &mut Vec<u8>, ty: u8, payload: &[u8]) -> Result<(), FrameError> {
    let len = 1 + payload.len();
    let Ok(len16) = u16::try_from(len) else {
        return Err(FrameError::PayloadTooLong { len: payload.len() });
    };
    out.reserve(2 + len);
    out.extend_from_slice(&len16.to_le_bytes());
    out.push(ty);
    out.extend_from_slice(payload);
    Ok(())
}

/// A frame under construction in a buffer (see [`begin_frame`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "finish the frame with end_frame"]
pub struct FrameStart(usize);

/// Reserves the 2-byte length prefix at the end of `out`. Write the type byte and payload
/// (e.g. with `ServerPacket::encode`), then call [`end_frame`].
#[inline]
pub fn begin_frame(out: &mut Vec<u8>) -> FrameStart {
    let at = out.len();
    out.extend_from_slice(&[0, 0]);
    FrameStart(at)
}

/// Patches the length prefix reserved by [`begin_frame`]. On error (empty or over-long
/// frame) the partial frame is removed from `out`.
#[inline]
pub fn end_frame(out: &mut Vec<u8>, start: FrameStart) -> Result<(), FrameError> {
    let body = out.len().saturating_sub(start.0 + 2);
    let len = match u16::try_from(body) {
        Ok(0) => {
            out.truncate(start.0);
            return Err(FrameError::ZeroLength { offset: 0 });
        }
        Ok(l) => l,
        Err(_) => {
            out.truncate(start.0);
            return Err(FrameError::PayloadTooLong {
                len: body.saturating_sub(1),
            });
        }
    };
    if let Some(prefix) = out.get_mut(start.0..start.0 + 2) {
        prefix.copy_from_slice(&len.to_le_bytes());
    }
    Ok(())
}

/// Appends a whole packet as a frame, letting `encode` write the type byte and payload.
#[inline]
pub fn write_packet_frame(
    out: &mut Vec<u8>,
    encode: impl FnOnce(&mut Vec<u8>),
) -> Result<(), FrameError> {
    let s = begin_frame(out);
    encode(out);
    end_frame(out, s)
}

/// Sans-IO incremental frame decoder for the reliable stream.
///
/// ```
/// # use shared::frame::FrameDecoder;
/// let mut d = FrameDecoder::new();
/// d.push(&[3, 0, 14]);
/// assert!(d.next_frame().unwrap().is_none());
/// d.push(&[0xde, 0xad]);
/// let f = d.next_frame().unwrap().unwrap();
/// assert_eq!((f.ty, f.payload), (14, &[0xde, 0xad][..]));
/// d.finish().unwrap();
/// ```
///
/// After an error the decoder is poisoned: every later call returns the same error.
#[derive(Debug, Clone)]
pub struct FrameDecoder {
    buf: Vec<u8>,
    start: usize,
    consumed: u64,
    max_len: usize,
    error: Option<FrameError>,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl FrameDecoder {
    /// A decoder that accepts frames up to [`MAX_FRAME_LEN`].
    pub fn new() -> Self {
        Self::with_max_frame_len(MAX_FRAME_LEN)
    }

    /// A decoder that rejects frames whose `len` exceeds `max_len` (clamped to 1..=65535).
    pub fn with_max_frame_len(max_len: usize) -> Self {
        Self {
            buf: Vec::new(),
            start: 0,
            consumed: 0,
            max_len: max_len.clamp(1, MAX_FRAME_LEN),
            error: None,
        }
    }

    /// The configured maximum `len`.
    pub fn max_frame_len(&self) -> usize {
        self.max_len
    }

    /// Bytes received but not yet returned as frames.
    pub fn buffered(&self) -> usize {
        self.buf.len().saturating_sub(self.start)
    }

    /// Feeds bytes from the stream.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 && (self.start >= self.buf.len() / 2 || self.start > 64 * 1024) {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete frame, `None` if more bytes are needed, or a violation.
    pub fn next_frame(&mut self) -> Result<Option<Frame<'_>>, FrameError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let start = self.start;
        let Some(&[lo, hi]) = self.buf.get(start..start + 2) else {
            return Ok(None);
        };
        let len = usize::from(u16::from_le_bytes([lo, hi]));
        if len == 0 {
            return Err(self.fail(FrameError::ZeroLength {
                offset: self.consumed,
            }));
        }
        if len > self.max_len {
            return Err(self.fail(FrameError::TooLong {
                offset: self.consumed,
                len,
                max: self.max_len,
            }));
        }
        let end = start + 2 + len;
        if self.buf.len() < end {
            return Ok(None);
        }
        self.start = end;
        self.consumed += (2 + len) as u64;
        let Some((&ty, payload)) = self.buf.get(start + 2..end).and_then(|f| f.split_first())
        else {
            return Ok(None);
        };
        Ok(Some(Frame { ty, payload }))
    }

    /// Call at end of stream: fails if a partial frame is buffered.
    pub fn finish(&self) -> Result<(), FrameError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let avail = self.buf.get(self.start..).unwrap_or(&[]);
        match *avail {
            [] => Ok(()),
            [_] => Err(FrameError::Truncated {
                buffered: 1,
                needed: 2,
            }),
            [lo, hi, ..] => Err(FrameError::Truncated {
                buffered: avail.len(),
                needed: 2 + usize::from(u16::from_le_bytes([lo, hi])),
            }),
        }
    }

    fn fail(&mut self, e: FrameError) -> FrameError {
        self.error = Some(e.clone());
        e
    }
}

/// Why a datagram was rejected (it is dropped whole and counted; the connection stays up).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DatagramError {
    /// The datagram is empty.
    #[error("empty datagram")]
    Empty,
    /// A frame has `len` 0.
    #[error("frame at datagram offset {offset} has length 0")]
    ZeroLength {
        /// Offset of the frame's length prefix.
        offset: usize,
    },
    /// A frame runs past the end of the datagram (or the prefix itself is cut).
    #[error("frame at datagram offset {offset} is cut off by the end of the datagram")]
    Truncated {
        /// Offset of the frame's length prefix.
        offset: usize,
    },
    /// A frame has a type the caller does not accept here (only 14 on datagrams).
    #[error("frame at datagram offset {offset} has type {ty}, not allowed in a datagram")]
    WrongType {
        /// Offset of the frame's length prefix.
        offset: usize,
        /// Its type byte.
        ty: u8,
    },
}

/// Validates that `datagram` is a sequence of frames parsing exactly to its end, with
/// every type equal to `only_type` if given (use `Some(14)` for `P_StandardUpdate`), and
/// returns an iterator over them. Allocation-free.
pub fn split_datagram(
    datagram: &[u8],
    only_type: Option<u8>,
) -> Result<DatagramFrames<'_>, DatagramError> {
    if datagram.is_empty() {
        return Err(DatagramError::Empty);
    }
    let mut at = 0usize;
    while at < datagram.len() {
        let Some(&[lo, hi]) = datagram.get(at..at + 2) else {
            return Err(DatagramError::Truncated { offset: at });
        };
        let len = usize::from(u16::from_le_bytes([lo, hi]));
        if len == 0 {
            return Err(DatagramError::ZeroLength { offset: at });
        }
        let Some(&ty) = datagram.get(at + 2) else {
            return Err(DatagramError::Truncated { offset: at });
        };
        if at + 2 + len > datagram.len() {
            return Err(DatagramError::Truncated { offset: at });
        }
        if let Some(only) = only_type
            && ty != only
        {
            return Err(DatagramError::WrongType { offset: at, ty });
        }
        at += 2 + len;
    }
    Ok(DatagramFrames { rest: datagram })
}

/// Iterator over the frames of a datagram validated by [`split_datagram`].
#[derive(Debug, Clone)]
pub struct DatagramFrames<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for DatagramFrames<'a> {
    type Item = Frame<'a>;

    fn next(&mut self) -> Option<Frame<'a>> {
        let [lo, hi, ref tail @ ..] = *self.rest else {
            return None;
        };
        let len = usize::from(u16::from_le_bytes([lo, hi]));
        let (frame, rest) = tail.split_at_checked(len)?;
        let (&ty, payload) = frame.split_first()?;
        self.rest = rest;
        Some(Frame { ty, payload })
    }
}

/// Packs frames into datagrams of at most `budget` bytes, appending into buffers that are
/// reused across [`Batcher::clear`] calls (no allocation in steady state).
///
/// Typical use per recipient and broadcast tick: `clear()`, then
/// [`push_update`](Self::push_update) for every visible actor, then send each of
/// [`datagrams`](Self::datagrams).
#[derive(Debug, Clone)]
pub struct Batcher {
    budget: usize,
    bufs: Vec<Vec<u8>>,
    used: usize,
}

impl Default for Batcher {
    fn default() -> Self {
        Self::new(DEFAULT_DATAGRAM_BUDGET)
    }
}

impl Batcher {
    /// A batcher with a datagram byte budget (at least 3, the smallest frame).
    pub fn new(budget: usize) -> Self {
        Self {
            budget: budget.max(3),
            bufs: Vec::new(),
            used: 0,
        }
    }

    /// The byte budget.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Changes the budget (e.g. when the path MTU changes); takes effect for new datagrams.
    pub fn set_budget(&mut self, budget: usize) {
        self.budget = budget.max(3);
    }

    /// Empties the batch, keeping the buffers.
    pub fn clear(&mut self) {
        for b in self.bufs.iter_mut().take(self.used) {
            b.clear();
        }
        self.used = 0;
    }

    /// Number of datagrams in use.
    pub fn len(&self) -> usize {
        self.used
    }

    /// Whether no frame has been pushed since the last clear.
    pub fn is_empty(&self) -> bool {
        self.used == 0
    }

    /// The datagrams built so far.
    pub fn datagrams(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.bufs.iter().take(self.used).map(Vec::as_slice)
    }

    /// The buffer that has room for `size` more bytes, opening a new datagram if needed.
    #[inline]
    fn room(&mut self, size: usize) -> Result<&mut Vec<u8>, FrameError> {
        if size > self.budget {
            return Err(FrameError::TooLargeForDatagram {
                len: size,
                budget: self.budget,
            });
        }
        let fits = self
            .used
            .checked_sub(1)
            .and_then(|i| self.bufs.get(i))
            .is_some_and(|b| b.len() + size <= self.budget);
        if !fits {
            if self.used == self.bufs.len() {
                self.bufs.push(Vec::with_capacity(self.budget));
            }
            self.used += 1;
        }
        let i = self.used - 1;
        match self.bufs.get_mut(i) {
            Some(b) => Ok(b),
            None => Err(FrameError::TooLargeForDatagram {
                len: size,
                budget: self.budget,
            }),
        }
    }

    /// Adds one frame.
    pub fn push_frame(&mut self, ty: u8, payload: &[u8]) -> Result<(), FrameError> {
        let size = 3 + payload.len();
        if size - 2 > MAX_FRAME_LEN {
            return Err(FrameError::PayloadTooLong { len: payload.len() });
        }
        let buf = self.room(size)?;
        write_frame(buf, ty, payload)
    }

    /// Adds one S→C `P_StandardUpdate` frame from a precomputed body
    /// ([`StandardUpdateS2C::body`]) and this recipient's tail. Hot path.
    #[inline]
    pub fn push_update(
        &mut self,
        body: &[u8; STANDARD_UPDATE_LEN],
        tail: UpdateTail,
    ) -> Result<(), FrameError> {
        let (_, n) = tail.bytes();
        let buf = self.room(3 + STANDARD_UPDATE_LEN + n)?;
        StandardUpdateS2C::write_frame_from_body(buf, body, tail);
        Ok(())
    }

    /// The frame type a batch of updates carries.
    pub const UPDATE_TYPE: u8 = P_STANDARD_UPDATE;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_vector() {
        let mut v = Vec::new();
        write_frame(&mut v, 14, &[0xde, 0xad]).unwrap();
        assert_eq!(v, [3, 0, 14, 0xde, 0xad]);
    }

    #[test]
    fn decoder_errors() {
        let mut d = FrameDecoder::new();
        d.push(&[0, 0]);
        assert_eq!(
            d.next_frame().unwrap_err(),
            FrameError::ZeroLength { offset: 0 }
        );
        let mut d = FrameDecoder::with_max_frame_len(10);
        d.push(&[11, 0]);
        assert!(matches!(
            d.next_frame().unwrap_err(),
            FrameError::TooLong { len: 11, .. }
        ));
        let mut d = FrameDecoder::new();
        d.push(&[5, 0, 1]);
        assert_eq!(d.next_frame().unwrap(), None);
        assert_eq!(
            d.finish().unwrap_err(),
            FrameError::Truncated {
                buffered: 3,
                needed: 7
            }
        );
    }
}
