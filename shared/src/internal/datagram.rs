//! The internal datagram header: `[session u64 LE][frames ...]`.
//!
//! `P_StandardUpdate` frames ride QUIC datagrams on the internal link, both directions,
//! prefixed with the session they belong to. Decoding is zero-copy (a [`Bytes`] slice of
//! the datagram quinn handed over); encoding writes into a caller-owned buffer, so a
//! whole tick's datagrams can share one allocation ([`BytesMut::split`]).

use bytes::{BufMut, Bytes, BytesMut};

use super::SessionId;

/// Header length.
pub const HEADER_LEN: usize = 8;

/// A datagram shorter than its header.
#[derive(Debug, thiserror::Error, Clone, Copy, PartialEq, Eq)]
#[error("internal datagram of {0} bytes is shorter than its 8-byte header")]
pub struct ShortDatagram(pub usize);

/// Split a datagram into its session and its frames, without copying.
pub fn decode(datagram: &Bytes) -> Result<(SessionId, Bytes), ShortDatagram> {
    let session = peek_session(datagram).ok_or(ShortDatagram(datagram.len()))?;
    Ok((session, datagram.slice(HEADER_LEN..)))
}

/// The session of a datagram, borrowing.
pub fn peek_session(datagram: &[u8]) -> Option<SessionId> {
    let h: [u8; HEADER_LEN] = datagram.get(..HEADER_LEN)?.try_into().ok()?;
    Some(u64::from_le_bytes(h))
}

/// The frames of a datagram, borrowing.
pub fn frames(datagram: &[u8]) -> Option<&[u8]> {
    datagram.get(HEADER_LEN..)
}

/// Append the header for `session` to `out`; the caller appends the frames.
pub fn put_header(out: &mut BytesMut, session: SessionId) {
    out.put_u64_le(session);
}

/// One datagram as `Bytes` (allocates; for tests and cold paths).
pub fn encode(session: SessionId, frames: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(HEADER_LEN + frames.len());
    put_header(&mut b, session);
    b.extend_from_slice(frames);
    b.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn header_round_trip_shares_the_buffer() {
        let d = encode(0x0102_0304_0506_0708, &[3, 0, 14, 1, 2]);
        assert_eq!(d.get(..8), Some(&[8, 7, 6, 5, 4, 3, 2, 1][..]));
        let (s, f) = decode(&d).unwrap();
        assert_eq!(s, 0x0102_0304_0506_0708);
        assert_eq!(&f[..], &[3, 0, 14, 1, 2]);
        assert_eq!(f.as_ptr(), d[8..].as_ptr(), "zero-copy");
        assert_eq!(
            decode(&Bytes::from_static(&[1, 2, 3])),
            Err(ShortDatagram(3))
        );
    }

    proptest! {
        #[test]
        fn any_bytes_decode_or_refuse(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let b = Bytes::from(bytes.clone());
            match decode(&b) {
                Ok((s, f)) => {
                    prop_assert!(bytes.len() >= 8);
                    prop_assert_eq!(encode(s, &f), b);
                }
                Err(_) => prop_assert!(bytes.len() < 8),
            }
        }
    }
}
