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

    /// Moves the datagrams `to` gives a destination into one broadcast per destination;
    /// the datagrams it gives none stay. Every part shares the frames (not copied) and
    /// carries only the segments of its own datagrams, so each gateway decodes its
    /// clients' share of the tick, not everyone's; the order of the datagrams is kept, and
    /// each gathers the same bytes as before. Nothing is touched when no datagram has a
    /// destination. A zone node splits its broadcast so that each edge gateway fans out
    /// its own clients' datagrams, and the leader the rest.
    pub fn split_off_by<K: PartialEq>(
        &mut self,
        mut to: impl FnMut(SessionId) -> Option<K>,
    ) -> Vec<(K, Broadcast)> {
        let dests: Vec<Option<K>> = self.datagrams.iter().map(|d| to(d.session)).collect();
        if dests.iter().all(Option::is_none) {
            return Vec::new();
        }
        let mut parts: Vec<(K, Broadcast)> = Vec::new();
        let mut kept = Broadcast {
            frames: self.frames.clone(),
            segments: Vec::new(),
            datagrams: Vec::new(),
        };
        for (d, dest) in self.datagrams.iter().zip(dests) {
            let part = match dest {
                None => &mut kept,
                Some(k) => match parts.iter().position(|(p, _)| *p == k) {
                    Some(i) => match parts.get_mut(i) {
                        Some((_, b)) => b,
                        None => continue,
                    },
                    None => {
                        parts.push((
                            k,
                            Broadcast {
                                frames: self.frames.clone(),
                                segments: Vec::new(),
                                datagrams: Vec::new(),
                            },
                        ));
                        match parts.last_mut() {
                            Some((_, b)) => b,
                            None => continue,
                        }
                    }
                },
            };
            part.push_from(&self.segments, d);
        }
        *self = kept;
        parts
    }

    /// Appends datagram `d` of a broadcast whose segments are `segments`, with its own
    /// segments copied over (one out of range becomes an empty datagram, which gathers
    /// to [`FanoutError::Empty`] as the original's error would).
    fn push_from(&mut self, segments: &[(u32, u32)], d: &FanoutDatagram) {
        let src = segments
            .get(d.first as usize..d.end as usize)
            .unwrap_or(&[]);
        let first = u32::try_from(self.segments.len()).unwrap_or(u32::MAX);
        self.segments.extend_from_slice(src);
        let end = u32::try_from(self.segments.len()).unwrap_or(u32::MAX);
        self.datagrams.push(FanoutDatagram {
            session: d.session,
            first,
            end,
        });
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

    #[test]
    fn a_split_moves_each_datagram_to_its_destination_once() {
        let mut b = sample();
        b.datagrams.push(FanoutDatagram {
            session: 7,
            first: 3,
            end: 4,
        });
        let parts =
            b.split_off_by(|s| (s != 2).then_some(if s == 1 { "edge-b" } else { "edge-c" }));
        let sessions = |b: &Broadcast| b.datagrams.iter().map(|d| d.session).collect::<Vec<_>>();
        assert_eq!(sessions(&b), vec![2]);
        assert_eq!(parts.len(), 2);
        assert_eq!((parts[0].0, sessions(&parts[0].1)), ("edge-b", vec![1]));
        assert_eq!((parts[1].0, sessions(&parts[1].1)), ("edge-c", vec![7]));
        // Each part gathers the same bytes as the whole did.
        let mut buf = BytesMut::new();
        let d = parts[0]
            .1
            .gather(&parts[0].1.datagrams[0], 1200, &mut buf)
            .unwrap();
        assert_eq!(&d[..], b"aaaabbbbOWN1cccc");
        // Nothing to split off: no part, the broadcast untouched.
        let mut whole = sample();
        assert!(whole.split_off_by(|_| None::<u8>).is_empty());
        assert_eq!(whole, sample());
    }

    proptest! {
        /// Splitting keeps every datagram exactly once, in its order, under its
        /// destination.
        #[test]
        fn split_keeps_every_datagram_once(sessions in proptest::collection::vec(0u64..12, 0..40)) {
            let mut b = Broadcast {
                frames: Bytes::from_static(b"xxxx"),
                segments: vec![(0, 4)],
                datagrams: sessions.iter().map(|&session| FanoutDatagram { session, first: 0, end: 1 }).collect(),
            };
            let to = |s: u64| (!s.is_multiple_of(3)).then_some(s % 3);
            let parts = b.split_off_by(to);
            let kept: Vec<u64> = b.datagrams.iter().map(|d| d.session).collect();
            prop_assert_eq!(kept, sessions.iter().copied().filter(|s| to(*s).is_none()).collect::<Vec<_>>());
            for (k, p) in &parts {
                let got: Vec<u64> = p.datagrams.iter().map(|d| d.session).collect();
                prop_assert_eq!(got, sessions.iter().copied().filter(|s| to(*s) == Some(*k)).collect::<Vec<_>>());
            }
            let total: usize = parts.iter().map(|(_, p)| p.datagrams.len()).sum::<usize>() + b.datagrams.len();
            prop_assert_eq!(total, sessions.len());
        }

        /// Every datagram gathers the same bytes (or the same kind of error) after the
        /// split as before it, wherever it went; each part holds only its own segments.
        #[test]
        fn split_gathers_what_the_whole_did(
            frames in proptest::collection::vec(any::<u8>(), 0..64),
            segments in proptest::collection::vec((0u32..70, 0u32..70), 0..12),
            datagrams in proptest::collection::vec((0u64..6, 0u32..14, 0u32..14), 0..16),
        ) {
            let whole = Broadcast {
                frames: Bytes::from(frames),
                segments,
                datagrams: datagrams.iter().map(|&(session, first, end)| FanoutDatagram { session, first, end }).collect(),
            };
            let mut kept = whole.clone();
            let parts = kept.split_off_by(|s| (s > 1).then_some(s % 2));
            let mut buf = BytesMut::new();
            let mut after = Vec::new();
            for b in std::iter::once(&kept).chain(parts.iter().map(|(_, p)| p)) {
                for d in &b.datagrams {
                    after.push((d.session, b.gather(d, 1_000, &mut buf).ok()));
                }
            }
            for d in &whole.datagrams {
                let before = whole.gather(d, 1_000, &mut buf).ok();
                let i = after.iter().position(|(s, g)| *s == d.session && *g == before);
                prop_assert!(i.is_some(), "datagram of {} gathers otherwise", d.session);
                after.remove(i.unwrap_or(0));
            }
            prop_assert!(after.is_empty());
            for (_, p) in &parts {
                let own: usize = p.datagrams.iter().map(|d| (d.end - d.first) as usize).sum();
                prop_assert_eq!(p.segments.len(), own);
            }
        }

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
