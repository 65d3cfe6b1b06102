//! The `P_StandardUpdate`s of one broadcast tick, parsed and quantised once for every
//! compact recipient ([`TickIndex`]), so that a server's per-recipient work is a copy of
//! the entries its datagrams name, not a parse of their bytes.
//!
//! A zone encodes each actor's frame once per tick and describes each recipient's datagram
//! as byte ranges of that shared buffer (`shared::internal::fanout`). Most of a crowd's
//! recipients see most of the same actors, so parsing the buffer once instead of once per
//! recipient is most of what transcoding would otherwise cost.

use super::Entry;
use crate::proto::{StandardUpdateS2C, ids};

/// The frames of one tick's buffer (`[len u16][type][payload]`*), each with its quantised
/// entry when it is a well-formed `P_StandardUpdate`.
#[doc(alias = "P_StandardUpdate")]
#[derive(Debug, Default)]
pub struct TickIndex {
    /// Start offset of each frame, increasing.
    starts: Vec<u32>,
    /// One past the end of each frame.
    ends: Vec<u32>,
    /// The entry of each frame (`None`: another packet, or a malformed update).
    entries: Vec<Option<Entry>>,
}

impl TickIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Index `frames` (reusing the buffers). Frames are read from the start until the
    /// buffer ends or a frame does not parse (its length is zero or runs past the end); the
    /// bytes from there on are not indexed, and [`Self::extend_range`] refuses any range
    /// that reaches them.
    pub fn rebuild(&mut self, frames: &[u8]) {
        self.starts.clear();
        self.ends.clear();
        self.entries.clear();
        let mut at = 0usize;
        while let Some(&[lo, hi, ty]) = frames.get(at..at + 3) {
            let len = usize::from(u16::from_le_bytes([lo, hi]));
            let end = at + 2 + len;
            let (Some(payload), Ok(start32), Ok(end32)) = (
                frames.get(at + 3..end).filter(|_| len > 0),
                u32::try_from(at),
                u32::try_from(end),
            ) else {
                break;
            };
            let entry = (ty == ids::P_STANDARD_UPDATE)
                .then(|| StandardUpdateS2C::decode_fast(payload).ok())
                .flatten()
                .map(|u| Entry::from_update(&u));
            self.starts.push(start32);
            self.ends.push(end32);
            self.entries.push(entry);
            at = end;
        }
    }

    /// Frames indexed.
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// Whether no frame is indexed.
    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// Appends the entries of the frames making up exactly the byte range `[start, end)`
    /// to `out`. `false`, with `out` unchanged, when the range does not begin and end on
    /// indexed frame boundaries (the caller parses those bytes itself).
    pub fn extend_range(&self, start: u32, end: u32, out: &mut Vec<Entry>) -> bool {
        if start == end {
            return true;
        }
        let Ok(first) = self.starts.binary_search(&start) else {
            return false;
        };
        // Frames are contiguous from the first indexed one: the range ends on a frame end.
        let Ok(last) = self.ends.binary_search(&end) else {
            return false;
        };
        if last < first {
            return false;
        }
        let Some(entries) = self.entries.get(first..=last) else {
            return false;
        };
        out.extend(entries.iter().flatten().copied());
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::UpdateTail;

    fn update(rid: u16, x: f32, tail: UpdateTail) -> StandardUpdateS2C {
        StandardUpdateS2C {
            runtime_id: rid,
            x,
            z: -2.5,
            is_running: 1,
            walking_backward: 0,
            dest_x: x + 3.0,
            dest_z: 4.0,
            mount: 0,
            tail,
        }
    }

    fn buffer(us: &[StandardUpdateS2C]) -> (Vec<u8>, Vec<u32>) {
        let mut out = Vec::new();
        let mut offs = vec![0];
        for u in us {
            u.write_frame(&mut out);
            offs.push(out.len() as u32);
        }
        (out, offs)
    }

    #[test]
    fn ranges_on_frame_boundaries_give_the_parsed_entries() {
        let us = [
            update(5, 1.0, UpdateTail::None),
            update(2, 2.0, UpdateTail::FlyY(7.0)),
            update(9, 3.0, UpdateTail::Energy(40)),
        ];
        let (buf, offs) = buffer(&us);
        let mut ix = TickIndex::new();
        ix.rebuild(&buf);
        assert_eq!(ix.len(), 3);
        let mut out = Vec::new();
        assert!(ix.extend_range(offs[1], offs[3], &mut out));
        assert!(ix.extend_range(offs[0], offs[1], &mut out));
        let want: Vec<Entry> = [&us[1], &us[2], &us[0]]
            .into_iter()
            .map(Entry::from_update)
            .collect();
        assert_eq!(out, want);
    }

    #[test]
    fn ranges_off_the_boundaries_are_refused_and_change_nothing() {
        let us = [
            update(5, 1.0, UpdateTail::None),
            update(6, 2.0, UpdateTail::None),
        ];
        let (buf, offs) = buffer(&us);
        let mut ix = TickIndex::new();
        ix.rebuild(&buf);
        let mut out = Vec::new();
        assert!(!ix.extend_range(offs[0] + 1, offs[2], &mut out));
        assert!(!ix.extend_range(offs[0], offs[2] - 1, &mut out));
        assert!(!ix.extend_range(offs[1], offs[1] + 1, &mut out));
        assert!(!ix.extend_range(offs[1], offs[0] + 3, &mut out));
        assert!(!ix.extend_range(offs[0], offs[2] + 40, &mut out));
        assert!(out.is_empty());
        assert!(ix.extend_range(offs[1], offs[1], &mut out));
        assert!(out.is_empty());
    }

    #[test]
    fn other_packets_are_skipped_and_a_broken_tail_is_not_indexed() {
        let mut buf = Vec::new();
        update(1, 1.0, UpdateTail::None).write_frame(&mut buf);
        let other_at = buf.len() as u32;
        buf.extend_from_slice(&[2, 0, 99, 7]); // another packet type, one byte of payload
        let good_end = buf.len() as u32;
        buf.extend_from_slice(&[0, 0, 14]); // a zero length: indexing stops here
        buf.extend_from_slice(&[9; 30]);
        let mut ix = TickIndex::new();
        ix.rebuild(&buf);
        assert_eq!(ix.len(), 2);
        let mut out = Vec::new();
        assert!(ix.extend_range(0, good_end, &mut out));
        assert_eq!(out.len(), 1);
        assert!(ix.extend_range(other_at, good_end, &mut out));
        assert_eq!(out.len(), 1);
        assert!(!ix.extend_range(good_end, buf.len() as u32, &mut out));
    }

    proptest::proptest! {
        /// Garbage never panics, and whatever is refused leaves `out` alone.
        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
                                a in 0u32..320, b in 0u32..320) {
            let mut ix = TickIndex::new();
            ix.rebuild(&bytes);
            let mut out = Vec::new();
            if !ix.extend_range(a, b, &mut out) {
                proptest::prop_assert!(out.is_empty());
            }
        }
    }
}
