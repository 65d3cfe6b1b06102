//! Server → client snapshots of the compact profile: [`DownEncoder`] (one per client
//! connection on the server) and [`DownDecoder`] (the client's).
//!
//! ```text
//! part:  01 tick:u16 base_age:u8 part:u8 orders:u8 | bitstream
//!        part = index << 4 | (count - 1); orders = kd | ks << 4
//! bits:  n:EG3, then n entries sorted by RuntimeID:
//!   gap:EG0 (RuntimeID - previous - 1; the first: the RuntimeID itself)
//!   full:1
//!   full=1:  x:EG12z z:EG12z (dest_x-x):EGkd z (dest_z-z):EGkd z running:1 backward:1
//!            mounted:1 [mount:16] tail
//!   full=0:  pos:2  0 unchanged | 1 dx:EGkd z dz:EGkd z
//!                   | 2 toward the base destination: s:EGks rx:EG0z rz:EG0z | 3 reserved
//!            more:1 [dest:1 motion:1 mount:1 tail:1
//!                    [ddest_x:EGkd z ddest_z:EGkd z] [running:1 backward:1] [mount:16] [tail]]
//!   tail:    kind:2  0 none | 1 energy:16 | 2 fly_y:EG12z | 3 reserved
//! ```
//! `EGk z` is `EG_k` of the zigzagged signed value. A delta entry's fields are relative to
//! the same actor's entry in the base tick `tick - base_age`.
//!
//! **Toward the destination.** With the base position `P`, base destination `D`,
//! `d = D - P` and `m = |d.x| + |d.z|` (> 0), the predicted position after a step of
//! Manhattan length `s` is `P + round(d * s / m)` per axis (`round(a / m)` =
//! `floor((2a + m) / 2m)`), and `r` is the residual to the actual position. This is how
//! Realm Crafter moves actors (a Manhattan-normalised step toward `Dest`), so an actor
//! walking at its destination costs its step length and two one-bit residuals.

use std::collections::VecDeque;

use super::bits::{BitReader, BitWriter, eg_len, unzigzag, zigzag};
use super::{CompactError, Entry, HISTORY, MAX_PARTS, Q_MAX, QState, QTail, in_range, kind};
use crate::proto::StandardUpdateS2C;

/// Header bytes of a snapshot part.
pub const PART_HEADER: usize = 6;
/// `EG` order of absolute coordinates.
const K_ABS: u32 = 12;
/// `EG` order of the entry count.
const K_COUNT: u32 = 3;

/// One tick as both sides remember it: its entries, sorted by RuntimeID.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Snapshot {
    tick: u16,
    entries: Vec<Entry>,
}

impl Snapshot {
    fn get(&self, rid: u16) -> Option<&QState> {
        self.entries
            .binary_search_by_key(&rid, |e| e.runtime_id)
            .ok()
            .and_then(|i| self.entries.get(i))
            .map(|e| &e.state)
    }
}

/// Something bits can be written to: the writer, or a counter that only adds up lengths
/// (so the encoder sizes parts with the same code that writes them).
trait Sink {
    fn put(&mut self, v: u64, bits: u32);
    fn eg(&mut self, u: u64, k: u32);
    fn bit(&mut self, b: bool) {
        self.put(u64::from(b), 1);
    }
}

impl Sink for BitWriter {
    fn put(&mut self, v: u64, bits: u32) {
        BitWriter::put(self, v, bits);
    }
    fn eg(&mut self, u: u64, k: u32) {
        BitWriter::eg(self, u, k);
    }
}

#[derive(Default)]
struct Counter(usize);

impl Sink for Counter {
    fn put(&mut self, _v: u64, bits: u32) {
        self.0 += bits as usize;
    }
    fn eg(&mut self, u: u64, k: u32) {
        self.0 += eg_len(u, k) as usize;
    }
}

fn zz(v: i64) -> u64 {
    zigzag(v)
}

/// `floor((2a + m) / 2m)` for `m > 0`: round to nearest, halves up.
fn round_div(a: i64, m: i64) -> i64 {
    (2 * a + m).div_euclid(2 * m)
}

/// Where a step of Manhattan length `s` from `base` toward its destination lands.
fn predict(base: &QState, s: i64) -> Option<(i64, i64)> {
    let dx = i64::from(base.dest_x) - i64::from(base.x);
    let dz = i64::from(base.dest_z) - i64::from(base.z);
    let m = dx.abs() + dz.abs();
    if m == 0 {
        return None;
    }
    Some((
        i64::from(base.x) + round_div(dx * s, m),
        i64::from(base.z) + round_div(dz * s, m),
    ))
}

/// How a delta entry codes its position.
#[derive(Debug, Clone, Copy)]
enum Pos {
    Same,
    Plain(i64, i64),
    Toward { s: u64, rx: i64, rz: i64 },
}

/// The position options of an entry against its base.
fn pos_options(base: &QState, now: &QState) -> (Pos, Option<Pos>) {
    let (dx, dz) = (
        i64::from(now.x) - i64::from(base.x),
        i64::from(now.z) - i64::from(base.z),
    );
    if dx == 0 && dz == 0 {
        return (Pos::Same, None);
    }
    let s = dx.abs() + dz.abs();
    let toward = predict(base, s).map(|(px, pz)| Pos::Toward {
        s: s as u64,
        rx: i64::from(now.x) - px,
        rz: i64::from(now.z) - pz,
    });
    (Pos::Plain(dx, dz), toward)
}

/// The part orders: `kd` for deltas and offsets, `ks` for step lengths.
#[derive(Debug, Clone, Copy, Default)]
struct Orders {
    kd: u32,
    ks: u32,
}

fn pos_cost(p: Pos, o: Orders) -> usize {
    (match p {
        Pos::Same => 0,
        Pos::Plain(dx, dz) => eg_len(zz(dx), o.kd) + eg_len(zz(dz), o.kd),
        Pos::Toward { s, rx, rz } => eg_len(s, o.ks) + eg_len(zz(rx), 0) + eg_len(zz(rz), 0),
    }) as usize
}

/// The values an order will code, by bit length: the order is chosen by an estimate over
/// the bit lengths (O(16 × 42)), then exactly among its neighbours (O(3n)) instead of
/// trying every order on every value.
struct Hist<'a> {
    lens: [u32; 42],
    /// The values, for [`Self::best`]'s exact step (a buffer the encoder keeps).
    vals: &'a mut Vec<u64>,
}

impl<'a> Hist<'a> {
    fn new(vals: &'a mut Vec<u64>) -> Self {
        vals.clear();
        Self {
            lens: [0; 42],
            vals,
        }
    }

    fn add(&mut self, u: u64) {
        let b = (64 - u.leading_zeros()) as usize;
        if let Some(c) = self.lens.get_mut(b.min(41)) {
            *c += 1;
        }
        self.vals.push(u);
    }

    /// The order with the fewest bits (any order decodes; this one is small).
    fn best(&self) -> u32 {
        let estimate = self.estimate();
        (estimate.saturating_sub(1)..=(estimate + 1).min(15))
            .min_by_key(|&k| {
                self.vals
                    .iter()
                    .map(|&u| u64::from(eg_len(u, k)))
                    .sum::<u64>()
            })
            .unwrap_or(estimate)
    }

    /// The order with the fewest bits counting each value as `2·max(b, k+1) − k − 1` bits
    /// for its bit length `b` (exact but for a carry).
    fn estimate(&self) -> u32 {
        // Only the buckets in use, and no order beyond the longest value.
        let top = self.lens.iter().rposition(|&n| n > 0).unwrap_or(0);
        let used = self.lens.get(..=top).unwrap_or(&[]);
        (0..=(top as u32).min(15))
            .min_by_key(|&k| {
                used.iter()
                    .enumerate()
                    .map(|(b, &n)| u64::from(n) * u64::from(2 * (b as u32).max(k + 1) - k - 1))
                    .sum::<u64>()
            })
            .unwrap_or(0)
    }
}

/// How one entry is written: its position coding and, when delta-coded, the index of its
/// base entry in the base tick.
#[derive(Debug, Clone, Copy)]
struct Plan {
    pos: Pos,
    base: Option<u32>,
}

fn write_tail<S: Sink>(w: &mut S, t: QTail) {
    match t {
        QTail::None => w.put(0, 2),
        QTail::Energy(e) => {
            w.put(1, 2);
            w.put(u64::from(e), 16);
        }
        QTail::Fly(y) => {
            w.put(2, 2);
            w.eg(zz(y.into()), K_ABS);
        }
    }
}

fn write_entry<S: Sink>(
    w: &mut S,
    prev: Option<u16>,
    e: &Entry,
    base: Option<&QState>,
    pos: Pos,
    o: Orders,
) {
    let rid = e.runtime_id;
    let gap = match prev {
        None => u64::from(rid),
        Some(q) => u64::from(rid.wrapping_sub(q).wrapping_sub(1)),
    };
    w.eg(gap, 0);
    let s = &e.state;
    let Some(b) = base else {
        w.bit(true);
        w.eg(zz(s.x.into()), K_ABS);
        w.eg(zz(s.z.into()), K_ABS);
        w.eg(zz(i64::from(s.dest_x) - i64::from(s.x)), o.kd);
        w.eg(zz(i64::from(s.dest_z) - i64::from(s.z)), o.kd);
        w.bit(s.running);
        w.bit(s.backward);
        w.bit(s.mount != 0);
        if s.mount != 0 {
            w.put(u64::from(s.mount), 16);
        }
        write_tail(w, s.tail);
        return;
    };
    // The full bit (0) and the position mode, first bit lowest.
    match pos {
        Pos::Same => w.put(0, 3),
        Pos::Plain(dx, dz) => {
            w.put(1 << 1, 3);
            w.eg(zz(dx), o.kd);
            w.eg(zz(dz), o.kd);
        }
        Pos::Toward { s, rx, rz } => {
            w.put(2 << 1, 3);
            w.eg(s, o.ks);
            w.eg(zz(rx), 0);
            w.eg(zz(rz), 0);
        }
    }
    let dest = (s.dest_x, s.dest_z) != (b.dest_x, b.dest_z);
    let motion = (s.running, s.backward) != (b.running, b.backward);
    let mount = s.mount != b.mount;
    let tail = s.tail != b.tail;
    if !(dest || motion || mount || tail) {
        w.put(0, 1);
        return;
    }
    // `more`, then the four flags.
    let flags =
        u64::from(dest) | u64::from(motion) << 1 | u64::from(mount) << 2 | u64::from(tail) << 3;
    w.put(1 | flags << 1, 5);
    if dest {
        w.eg(zz(i64::from(s.dest_x) - i64::from(b.dest_x)), o.kd);
        w.eg(zz(i64::from(s.dest_z) - i64::from(b.dest_z)), o.kd);
    }
    if motion {
        w.bit(s.running);
        w.bit(s.backward);
    }
    if mount {
        w.put(u64::from(s.mount), 16);
    }
    if tail {
        write_tail(w, s.tail);
    }
}

/// What [`DownEncoder::encode`] produced for one tick.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EncodedTick {
    /// The tick number.
    pub tick: u16,
    /// The base tick, `None` for a tick of full entries.
    pub base: Option<u16>,
    /// The datagrams (parts), in order.
    pub datagrams: Vec<Vec<u8>>,
    /// Entries left out because the tick needed more than [`MAX_PARTS`] datagrams or one
    /// entry did not fit an empty datagram.
    pub dropped: usize,
    /// Entries coded as deltas.
    pub deltas: usize,
}

/// What became of an acknowledgement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckOutcome {
    /// The newest acknowledged tick moved forward.
    Accepted,
    /// Not newer than the one already acknowledged (reordered or repeated): ignored.
    Stale,
    /// A tick this encoder never sent or has forgotten: ignored.
    Unknown,
}

/// Buffers an encoder reuses from tick to tick (nothing is allocated per tick but the
/// datagrams themselves).
#[derive(Debug, Default)]
struct Scratch {
    /// Sort keys: `RuntimeID << 16 | (0xFFFF - index)`.
    keys: Vec<u32>,
    plans: Vec<Plan>,
    vals_d: Vec<u64>,
    vals_s: Vec<u64>,
}

/// The server's side of one compact connection: numbers the ticks, remembers the ticks
/// sent since the newest acknowledged one, and codes each tick against that one.
#[derive(Debug, Default)]
pub struct DownEncoder {
    next_tick: u16,
    /// Ticks sent, oldest first; the acknowledged one (if any) is the first.
    history: VecDeque<Snapshot>,
    acked: Option<u16>,
    /// Entry lists of forgotten ticks, reused for new ones (no allocation per tick).
    spare: Vec<Vec<Entry>>,
    /// The last tick's orders: they choose between a delta's position codings (the orders
    /// of a tick are much like the last one's, and this saves a pass).
    orders: Orders,
    scratch: Scratch,
}

/// `src` sorted by RuntimeID into `out`, of duplicates the last one (the zone's newest).
fn sort_entries(src: &[Entry], keys: &mut Vec<u32>, out: &mut Vec<Entry>) {
    out.clear();
    if src
        .windows(2)
        .all(|w| matches!(w, [a, b] if a.runtime_id < b.runtime_id))
    {
        out.extend_from_slice(src);
        return;
    }
    if src.len() > 0x1_0000 {
        // Beyond the key's index bits (never in practice): a stable sort.
        out.extend(src.iter().rev().copied());
        out.sort_by_key(|e| e.runtime_id);
        out.dedup_by_key(|e| e.runtime_id);
        return;
    }
    // Sorting 4-byte keys is much cheaper than sorting the entries; for one RuntimeID the
    // latest index sorts first and is the one kept.
    keys.clear();
    keys.extend(
        src.iter()
            .enumerate()
            .map(|(i, e)| (u32::from(e.runtime_id) << 16) | (0xFFFF - i as u32)),
    );
    keys.sort_unstable();
    let mut last = None;
    for &k in keys.iter() {
        let rid = (k >> 16) as u16;
        if last == Some(rid) {
            continue;
        }
        last = Some(rid);
        if let Some(e) = src.get((0xFFFF - (k & 0xFFFF)) as usize) {
            out.push(*e);
        }
    }
}

impl DownEncoder {
    /// A fresh encoder (its first tick is full).
    pub fn new() -> Self {
        Self::default()
    }

    /// The newest acknowledged tick.
    pub fn acked(&self) -> Option<u16> {
        self.acked
    }

    /// How many ticks it remembers (bounded by [`HISTORY`] + 1).
    pub fn remembered(&self) -> usize {
        self.history.len()
    }

    /// The client's acknowledgement of tick `t` (received whole).
    pub fn on_ack(&mut self, t: u16) -> AckOutcome {
        let Some(pos) = self.history.iter().position(|s| s.tick == t) else {
            return AckOutcome::Unknown;
        };
        if let Some(a) = self.acked
            && self.next_tick.wrapping_sub(t) >= self.next_tick.wrapping_sub(a)
        {
            return AckOutcome::Stale;
        }
        self.acked = Some(t);
        for old in self.history.drain(..pos) {
            if self.spare.len() < 4 {
                self.spare.push(old.entries);
            }
        }
        AckOutcome::Accepted
    }

    /// Codes one broadcast tick (the zone's `P_StandardUpdate`s for this client) into
    /// datagrams of at most `max_datagram` bytes.
    pub fn encode(&mut self, updates: &[StandardUpdateS2C], max_datagram: usize) -> EncodedTick {
        let entries: Vec<Entry> = updates.iter().map(Entry::from_update).collect();
        self.encode_entries(&entries, max_datagram)
    }

    /// [`Self::encode`] for updates already quantised (a server that quantises each
    /// actor's update once per broadcast for all its compact recipients, see
    /// [`TickIndex`](super::TickIndex)), in any order.
    pub fn encode_entries(&mut self, src: &[Entry], max_datagram: usize) -> EncodedTick {
        let mut entries = self.spare.pop().unwrap_or_default();
        sort_entries(src, &mut self.scratch.keys, &mut entries);

        let tick = self.next_tick;
        self.next_tick = self.next_tick.wrapping_add(1);
        let Self {
            history,
            acked,
            orders: last_orders,
            scratch,
            ..
        } = self;
        let base = acked
            .and_then(|a| history.iter().find(|s| s.tick == a))
            .filter(|s| (1..=HISTORY).contains(&tick.wrapping_sub(s.tick)));
        let base_tick = base.map(|s| s.tick);
        let base_age = base.map_or(0, |s| tick.wrapping_sub(s.tick) as u8);
        let base_entries = base.map_or(&[][..], |s| &s.entries[..]);

        // One pass: each entry's base (a merge, both lists being sorted by RuntimeID), its
        // cheaper position coding under the last tick's orders, and the values the orders
        // of this tick are chosen from.
        let Scratch {
            plans,
            vals_d,
            vals_s,
            ..
        } = scratch;
        plans.clear();
        let (mut kd, mut ks) = (Hist::new(vals_d), Hist::new(vals_s));
        let mut cursor = 0usize;
        for e in &entries {
            while base_entries
                .get(cursor)
                .is_some_and(|b| b.runtime_id < e.runtime_id)
            {
                cursor += 1;
            }
            let s = &e.state;
            let b = base_entries
                .get(cursor)
                .filter(|b| b.runtime_id == e.runtime_id)
                .map(|b| &b.state);
            let Some(b) = b else {
                kd.add(zz(i64::from(s.dest_x) - i64::from(s.x)));
                kd.add(zz(i64::from(s.dest_z) - i64::from(s.z)));
                plans.push(Plan {
                    pos: Pos::Same,
                    base: None,
                });
                continue;
            };
            let (plain, toward) = pos_options(b, s);
            let pos = match toward {
                Some(t) if pos_cost(t, *last_orders) < pos_cost(plain, *last_orders) => t,
                _ => plain,
            };
            match pos {
                Pos::Plain(dx, dz) => {
                    kd.add(zz(dx));
                    kd.add(zz(dz));
                }
                Pos::Toward { s, .. } => ks.add(s),
                Pos::Same => {}
            }
            if (s.dest_x, s.dest_z) != (b.dest_x, b.dest_z) {
                kd.add(zz(i64::from(s.dest_x) - i64::from(b.dest_x)));
                kd.add(zz(i64::from(s.dest_z) - i64::from(b.dest_z)));
            }
            plans.push(Plan {
                pos,
                base: u32::try_from(cursor).ok(),
            });
        }
        let orders = Orders {
            kd: kd.best(),
            ks: ks.best(),
        };
        *last_orders = orders;
        let n = entries.len();
        let base_of = |p: &Plan| {
            p.base
                .and_then(|i| base_entries.get(i as usize))
                .map(|b| &b.state)
        };

        let header = |index: usize, count: usize, out: &mut Vec<u8>| {
            let [t0, t1] = tick.to_le_bytes();
            out.extend_from_slice(&[
                kind::SNAPSHOT,
                t0,
                t1,
                base_age,
                ((index as u8) << 4) | (count.max(1) as u8 - 1),
                (orders.kd as u8) | ((orders.ks as u8) << 4),
            ]);
        };
        // The usual case first: the whole tick in one datagram, written once.
        if n > 0 {
            // About two bytes an entry; more only for full entries.
            let mut first = Vec::with_capacity(PART_HEADER + 4 * n + 8);
            header(0, 1, &mut first);
            let mut w = BitWriter::with_prefix(first);
            w.eg(n as u64, K_COUNT);
            let mut prev = None;
            for (e, p) in entries.iter().zip(plans.iter()) {
                write_entry(&mut w, prev, e, base_of(p), p.pos, orders);
                prev = Some(e.runtime_id);
            }
            if w.len_bytes() <= max_datagram {
                let deltas = plans.iter().filter(|p| p.base.is_some()).count();
                self.remember(tick, entries);
                return EncodedTick {
                    tick,
                    base: base_tick,
                    datagrams: vec![w.finish()],
                    dropped: 0,
                    deltas,
                };
            }
        }

        // Split into parts: a part holds entries while header + count + entries fit.
        let budget_bits = max_datagram.saturating_sub(PART_HEADER) * 8;
        let mut parts: Vec<(usize, usize)> = Vec::new();
        let mut start = 0usize;
        let mut bits = 0usize;
        let mut prev: Option<u16> = None;
        let mut dropped = 0usize;
        let mut i = 0usize;
        while let (Some(e), Some(p)) = (entries.get(i), plans.get(i)) {
            let mut c = Counter::default();
            write_entry(&mut c, prev, e, base_of(p), p.pos, orders);
            let count_bits = eg_len((i - start + 1) as u64, K_COUNT) as usize;
            if count_bits + bits + c.0 <= budget_bits {
                bits += c.0;
                prev = Some(e.runtime_id);
                i += 1;
                continue;
            }
            if i == start {
                // Does not fit an empty part: leave it out.
                dropped += 1;
                i += 1;
                start = i;
                continue;
            }
            parts.push((start, i));
            start = i;
            bits = 0;
            prev = None;
        }
        if i > start {
            parts.push((start, i));
        }
        if parts.len() > MAX_PARTS {
            dropped += parts.drain(MAX_PARTS..).map(|(a, b)| b - a).sum::<usize>();
        }
        let count = parts.len();
        let mut datagrams = Vec::with_capacity(count);
        let mut sent = Vec::new();
        let mut deltas = 0;
        for (index, &(a, b)) in parts.iter().enumerate() {
            let mut head = Vec::with_capacity(max_datagram);
            header(index, count, &mut head);
            let mut w = BitWriter::with_prefix(head);
            w.eg((b - a) as u64, K_COUNT);
            let mut prev = None;
            let es = entries.get(a..b).unwrap_or(&[]);
            let ps = plans.get(a..b).unwrap_or(&[]);
            for (e, p) in es.iter().zip(ps) {
                write_entry(&mut w, prev, e, base_of(p), p.pos, orders);
                prev = Some(e.runtime_id);
                deltas += usize::from(p.base.is_some());
                sent.push(*e);
            }
            datagrams.push(w.finish());
        }
        if self.spare.len() < 4 {
            self.spare.push(entries);
        }
        if !datagrams.is_empty() {
            self.remember(tick, sent);
        }
        EncodedTick {
            tick,
            base: base_tick,
            datagrams,
            dropped,
            deltas,
        }
    }

    /// Keeps a sent tick, forgetting the oldest beyond [`HISTORY`].
    fn remember(&mut self, tick: u16, entries: Vec<Entry>) {
        self.history.push_back(Snapshot { tick, entries });
        while self.history.len() > usize::from(HISTORY) {
            let Some(old) = self.history.pop_front() else {
                break;
            };
            if Some(old.tick) == self.acked {
                self.acked = None;
            }
            if self.spare.len() < 4 {
                self.spare.push(old.entries);
            }
        }
    }
}

/// A tick being assembled from its parts.
#[derive(Debug)]
struct Partial {
    tick: u16,
    count: u8,
    base_age: u8,
    got: u16,
    entries: Vec<Entry>,
}

/// The client's side of a compact connection: decodes each part against the ticks it has
/// received whole and says which tick to acknowledge.
#[derive(Debug, Default)]
pub struct DownDecoder {
    /// Complete ticks, oldest first, none more than [`HISTORY`] older than the newest.
    history: VecDeque<Snapshot>,
    partial: Option<Partial>,
    /// The newest tick seen in any part.
    newest: Option<u16>,
    /// The newest complete tick: what to acknowledge.
    ack: Option<u16>,
}

impl DownDecoder {
    /// A fresh decoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// The tick to acknowledge: the newest received whole.
    pub fn ack(&self) -> Option<u16> {
        self.ack
    }

    /// Decodes one snapshot datagram and returns its entries (the actors' new states).
    /// On error nothing changes.
    pub fn on_datagram(&mut self, d: &[u8]) -> Result<Vec<Entry>, CompactError> {
        let (head, body) = d
            .split_at_checked(PART_HEADER)
            .ok_or(CompactError::Truncated)?;
        let &[k, t0, t1, base_age, part, orders] = head else {
            return Err(CompactError::Truncated);
        };
        if k != kind::SNAPSHOT {
            return Err(CompactError::UnknownKind(k));
        }
        let tick = u16::from_le_bytes([t0, t1]);
        let (index, count) = (part >> 4, (part & 15) + 1);
        if index >= count {
            return Err(CompactError::BadPart { index, count });
        }
        if let Some(n) = self.newest
            && n != tick
            && n.wrapping_sub(tick) < 0x8000
        {
            return Err(CompactError::Stale(tick));
        }
        if self.ack == Some(tick) {
            return Err(CompactError::Part);
        }
        if let Some(p) = &self.partial
            && p.tick == tick
            && (p.count != count || p.base_age != base_age || p.got & (1 << index) != 0)
        {
            return Err(CompactError::Part);
        }
        if base_age > HISTORY as u8 {
            return Err(CompactError::BadBaseAge(base_age));
        }
        let base = if base_age == 0 {
            None
        } else {
            let bt = tick.wrapping_sub(u16::from(base_age));
            Some(
                self.history
                    .iter()
                    .find(|s| s.tick == bt)
                    .ok_or(CompactError::UnknownBase(bt))?,
            )
        };
        let o = Orders {
            kd: u32::from(orders & 15),
            ks: u32::from(orders >> 4),
        };
        let entries = decode_entries(body, base, o)?;

        // Commit.
        self.newest = Some(tick);
        let p = match self.partial.take() {
            Some(p) if p.tick == tick => p,
            _ => Partial {
                tick,
                count,
                base_age,
                got: 0,
                entries: Vec::new(),
            },
        };
        let mut p = p;
        p.got |= 1 << index;
        p.entries.extend_from_slice(&entries);
        if p.got.count_ones() == u32::from(count) {
            let mut all = p.entries;
            all.sort_by_key(|e| e.runtime_id);
            all.dedup_by_key(|e| e.runtime_id);
            self.history.push_back(Snapshot { tick, entries: all });
            while let Some(f) = self.history.front()
                && tick.wrapping_sub(f.tick) > HISTORY
            {
                self.history.pop_front();
            }
            self.ack = Some(tick);
        } else {
            self.partial = Some(p);
        }
        Ok(entries)
    }
}

fn read_tail(r: &mut BitReader<'_>) -> Result<QTail, CompactError> {
    Ok(match r.bits(2)? {
        0 => QTail::None,
        1 => QTail::Energy(r.bits(16)? as u16),
        2 => QTail::Fly(in_range(unzigzag(r.eg(K_ABS)?))?),
        _ => return Err(CompactError::BadMode),
    })
}

fn signed(r: &mut BitReader<'_>, k: u32) -> Result<i64, CompactError> {
    Ok(unzigzag(r.eg(k)?))
}

fn decode_entries(
    body: &[u8],
    base: Option<&Snapshot>,
    o: Orders,
) -> Result<Vec<Entry>, CompactError> {
    let mut r = BitReader::new(body);
    let n = r.eg(K_COUNT)?;
    // Each entry takes at least five bits: a count beyond that is a lie.
    if n > (body.len() as u64) * 8 / 5 + 1 {
        return Err(CompactError::Truncated);
    }
    let mut out = Vec::with_capacity(n as usize);
    let mut prev: Option<u16> = None;
    for _ in 0..n {
        let gap = r.eg(0)?;
        let rid = match prev {
            None => gap,
            Some(p) => u64::from(p) + 1 + gap,
        };
        let rid = u16::try_from(rid).map_err(|_| CompactError::RuntimeId)?;
        prev = Some(rid);
        let state = if r.bit()? {
            let x = in_range(signed(&mut r, K_ABS)?)?;
            let z = in_range(signed(&mut r, K_ABS)?)?;
            let dest_x = in_range(i64::from(x) + signed(&mut r, o.kd)?)?;
            let dest_z = in_range(i64::from(z) + signed(&mut r, o.kd)?)?;
            let running = r.bit()?;
            let backward = r.bit()?;
            let mount = if r.bit()? { r.bits(16)? as u16 } else { 0 };
            let tail = read_tail(&mut r)?;
            QState {
                x,
                z,
                dest_x,
                dest_z,
                running,
                backward,
                mount,
                tail,
            }
        } else {
            let b = base
                .and_then(|s| s.get(rid))
                .ok_or(CompactError::MissingBaseEntry(rid))?;
            let mut s = *b;
            match r.bits(2)? {
                0 => {}
                1 => {
                    s.x = in_range(i64::from(b.x) + signed(&mut r, o.kd)?)?;
                    s.z = in_range(i64::from(b.z) + signed(&mut r, o.kd)?)?;
                }
                2 => {
                    let step = r.eg(o.ks)?;
                    // A Manhattan step longer than the world is a lie (and would overflow).
                    let step = i64::try_from(step)
                        .ok()
                        .filter(|&s| s <= 4 * Q_MAX)
                        .ok_or(CompactError::OutOfRange(4 * Q_MAX + 1))?;
                    let (px, pz) = predict(b, step).ok_or(CompactError::NoDirection)?;
                    s.x = in_range(px + signed(&mut r, 0)?)?;
                    s.z = in_range(pz + signed(&mut r, 0)?)?;
                }
                _ => return Err(CompactError::BadMode),
            }
            if r.bit()? {
                let (dest, motion, mount, tail) = (r.bit()?, r.bit()?, r.bit()?, r.bit()?);
                if dest {
                    s.dest_x = in_range(i64::from(b.dest_x) + signed(&mut r, o.kd)?)?;
                    s.dest_z = in_range(i64::from(b.dest_z) + signed(&mut r, o.kd)?)?;
                }
                if motion {
                    s.running = r.bit()?;
                    s.backward = r.bit()?;
                }
                if mount {
                    s.mount = r.bits(16)? as u16;
                }
                if tail {
                    s.tail = read_tail(&mut r)?;
                }
            }
            s
        };
        out.push(Entry {
            runtime_id: rid,
            state,
        });
    }
    r.finish()?;
    Ok(out)
}

#[cfg(test)]
mod tests;
