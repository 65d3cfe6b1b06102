//! A broadcast tick encoded once: the node sends every `P_StandardUpdate` frame of the tick
//! once, and each client datagram as a list of byte ranges of it; the gateway gathers each
//! client's datagram from those ranges ("encode once, fan out at the edge").
//!
//! Sending each client's datagram over the internal link instead costs the link
//! O(players²) bytes per broadcast (every player sees every other), encrypted on the node
//! and decrypted on the gateway for nothing, and a burst that size overflowed quinn's
//! datagram send buffer, which drops the oldest datagrams without telling anyone. A
//! [`Broadcast`] is O(players) frame bytes plus a few ranges per client, and rides the
//! reliable control stream.
//!
//! Sans-IO: [`Broadcast::gather`] checks every range, so a malformed batch is an error for
//! that datagram, never a panic.

use bytes::{BufMut as _, Bytes, BytesMut};
use serde::{Deserialize, Serialize};

use super::SessionId;

/// One client datagram of a [`Broadcast`]: the session it is for and the range
/// `[first, end)` of [`Broadcast::segments`] that makes it up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FanoutDatagram {
    /// The client session.
    pub session: SessionId,
    /// First segment.
    pub first: u32,
    /// One past the last segment.
    pub end: u32,
}

/// One instance's broadcast tick (Realm Crafter's per-tick `P_StandardUpdate` loop),
/// node → gateway.
#[doc(alias = "P_StandardUpdate")]
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Broadcast {
    /// Every frame of the tick, back to back (`[len u16][14][payload]`*).
    pub frames: Bytes,
    /// Byte ranges `[start, end)` of `frames`.
    pub segments: Vec<(u32, u32)>,
    /// The client datagrams.
    pub datagrams: Vec<FanoutDatagram>,
}

/// Why one datagram of a [`Broadcast`] could not be gathered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FanoutError {
    /// Its segment range is outside `segments`.
    #[error("segment range {first}..{end} outside the {len} segments")]
    Segments {
        /// First segment.
        first: u32,
        /// End.
        end: u32,
        /// How many segments there are.
        len: usize,
    },
    /// A segment is outside `frames`.
    #[error("byte range {start}..{end} outside the {len} frame bytes")]
    Bytes {
        /// Start.
        start: u32,
        /// End.
        end: u32,
        /// How many frame bytes there are.
        len: usize,
    },
    /// The datagram would be larger than the limit.
    #[error("datagram of {len} bytes is larger than {max}")]
    TooLarge {
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The datagram is empty.
    #[error("empty datagram")]
    Empty,
}

impl Broadcast {
    /// The byte ranges of one datagram, every one checked against `segments` and `frames`.
    fn checked(&self, d: &FanoutDatagram) -> Result<&[(u32, u32)], FanoutError> {
        let segs =
            self.segments
                .get(d.first as usize..d.end as usize)
                .ok_or(FanoutError::Segments {
                    first: d.first,
                    end: d.end,
                    len: self.segments.len(),
                })?;
        for &(start, end) in segs {
            if start > end || end as usize > self.frames.len() {
                return Err(FanoutError::Bytes {
                    start,
                    end,
                    len: self.frames.len(),
                });
            }
        }
        Ok(segs)
    }

    /// The byte ranges `[start, end)` of `frames` that make up one datagram, each checked
    /// (for a gateway that re-encodes the updates instead of forwarding them: the compact
    /// profile). Each range is a whole number of frames.
    pub fn ranges_of(&self, d: &FanoutDatagram) -> Result<&[(u32, u32)], FanoutError> {
        self.checked(d)
    }

    /// The bytes of one datagram's ranges, each checked, without copying. Each range is a
    /// whole number of frames.
    pub fn segments_of<'a>(
        &'a self,
        d: &FanoutDatagram,
    ) -> Result<impl Iterator<Item = &'a [u8]> + 'a, FanoutError> {
        Ok(self
            .checked(d)?
            .iter()
            .filter_map(|&(start, end)| self.frames.get(start as usize..end as usize)))
    }

    /// Append one datagram's frames to `out` and return them as their own [`Bytes`] (split
    /// off `out`, so a whole tick's datagrams can share one allocation). `max` bounds the
    /// datagram's length. On error `out` is left as it was.
    pub fn gather(
        &self,
        d: &FanoutDatagram,
        max: usize,
        out: &mut BytesMut,
    ) -> Result<Bytes, FanoutError> {
        let segs = self.checked(d)?;
        let len: usize = segs
            .iter()
            .map(|&(start, end)| (end - start) as usize)
            .sum();
        if len == 0 {
            return Err(FanoutError::Empty);
        }
        if len > max {
            return Err(FanoutError::TooLarge { len, max });
        }
        out.reserve(len);
        for &(start, end) in segs {
            if let Some(b) = self.frames.get(start as usize..end as usize) {
                out.put_slice(b);
            }
        }
        Ok(out.split().freeze())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> Broadcast {
        Broadcast {
            frames: Bytes::from_static(b"aaaabbbbccccOWN1OWN2"),
            segments: vec![(0, 8), (12, 16), (8, 12), (0, 4), (16, 20)],
            datagrams: vec![
                FanoutDatagram {
                    session: 1,
                    first: 0,
                    end: 3,
                },
                FanoutDatagram {
                    session: 2,
                    first: 3,
                    end: 5,
                },
            ],
        }
    }

    #[test]
    fn gathers_each_clients_ranges_in_order() {
        let b = sample();
        let mut buf = BytesMut::new();
        let d0 = b.gather(&b.datagrams[0], 1200, &mut buf).unwrap();
        let d1 = b.gather(&b.datagrams[1], 1200, &mut buf).unwrap();
        assert_eq!(&d0[..], b"aaaabbbbOWN1cccc");
        assert_eq!(&d1[..], b"aaaaOWN2");
    }

    #[test]
    fn segments_of_yields_the_same_bytes_without_copying() {
        let b = sample();
        let segs: Vec<&[u8]> = b.segments_of(&b.datagrams[0]).unwrap().collect();
        assert_eq!(segs, vec![&b"aaaabbbb"[..], b"OWN1", b"cccc"]);
        let bad = FanoutDatagram {
            session: 3,
            first: 4,
            end: 9,
        };
        assert!(b.segments_of(&bad).is_err());
    }

    #[test]
    fn bad_ranges_are_errors_not_panics() {
        let mut b = sample();
        let mut buf = BytesMut::new();
        let bad = FanoutDatagram {
            session: 3,
            first: 4,
            end: 9,
        };
        assert!(matches!(
            b.gather(&bad, 1200, &mut buf),
            Err(FanoutError::Segments { .. })
        ));
        let backwards = FanoutDatagram {
            session: 3,
            first: 2,
            end: 1,
        };
        assert!(b.gather(&backwards, 1200, &mut buf).is_err());
        b.segments.push((18, 40));
        b.segments.push((9, 3));
        for first in [5, 6] {
            let d = FanoutDatagram {
                session: 3,
                first,
                end: first + 1,
            };
            assert!(matches!(
                b.gather(&d, 1200, &mut buf),
                Err(FanoutError::Bytes { .. })
            ));
        }
        assert!(matches!(
            b.gather(&b.datagrams[0], 10, &mut buf),
            Err(FanoutError::TooLarge { len: 16, max: 10 })
        ));
        let empty = FanoutDatagram {
            session: 3,
            first: 0,
            end: 0,
        };
        assert_eq!(b.gather(&empty, 1200, &mut buf), Err(FanoutError::Empty));
        assert!(buf.is_empty());
    }

    proptest! {
        /// Whatever the ranges, gathering never panics, and what it returns is exactly
        /// the concatenation of the ranges.
        #[test]
        fn gather_is_total(
            frames in proptest::collection::vec(any::<u8>(), 0..64),
            segments in proptest::collection::vec((0u32..80, 0u32..80), 0..8),
            first in 0u32..10,
            end in 0u32..10,
            max in 0usize..100,
        ) {
            let b = Broadcast {
                frames: Bytes::from(frames.clone()),
                segments: segments.clone(),
                datagrams: vec![],
            };
            let d = FanoutDatagram { session: 0, first, end };
            let mut buf = BytesMut::new();
            if let Ok(got) = b.gather(&d, max, &mut buf) {
                let mut want = Vec::new();
                for &(a, e) in &segments[first as usize..end as usize] {
                    want.extend_from_slice(&frames[a as usize..e as usize]);
                }
                prop_assert_eq!(&got[..], &want[..]);
                prop_assert!(!got.is_empty() && got.len() <= max);
            }
        }
    }
}
