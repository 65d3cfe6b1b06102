//! Phase 6: the position broadcast (reference §7.5), every 200 ms.
//!
//! **Groups.** With `ZoneConfig::broadcast_groups` G > 1, the players are split by slab
//! slot into G groups and the ticks of an interval take turns (group 0 on the interval's
//! first tick, group 1 on the next...), so a crowd's datagrams leave in G smaller bursts.
//! Each player still gets one broadcast per interval, with its zone-wide reliable packets.
//!
//! **Encode once.** Every actor in the grid is encoded once per broadcast tick into one
//! buffer as a complete `P_StandardUpdate` frame (`[len u16][14][22 bytes]`, plus the
//! flying-Y tail for `Environment = Fly`), laid out cell by cell, so the actors of one grid
//! cell are one contiguous byte range.
//!
//! **Copy per recipient.** For each online player, the cells within the band radius are
//! visited: a cell wholly inside the band is copied as one slice (split only at the
//! datagram budget), a cell crossing the band edge is filtered actor by actor, a cell
//! wholly outside is skipped. The only recipient-specific bytes are the player's own frame
//! (with its Energy tail, and never a flying-Y tail). A datagram is a list of byte ranges
//! of the shared buffer ([`DatagramBatch`]): no per-recipient copy happens here; the IO
//! shell gathers each datagram into its send buffer, the one copy it needs anyway.
//!
//! **Bands.** `d² < 500²` always; `500² ≤ d² ≤ 1000²` once a second per player: on one
//! broadcast tick in five (`mid_band_ms / broadcast_ms`), staggered by slab slot so each
//! broadcast tick carries a fifth of the players' mid bands (quirk fix: Realm Crafter's
//! `AlsoUpdateMiddleRange` fired rarely and irregularly, and all at once); beyond 1000
//! never.
//!
//! Cost: O(actors) to encode plus O(cells in range + bytes copied) per recipient.

use shared::proto::{StandardUpdateS2C, UpdateTail};

use super::area::Environment;
use super::events::{DatagramBatch, DatagramRef, PlayerKey};
use super::state::{Actor, AiMode, ChainKind, NIL, ZoneState};

/// Buffers reused from one broadcast to the next.
#[derive(Debug, Default)]
pub struct Scratch {
    /// Start offset of each frame in `DatagramBatch::frames`, plus a final sentinel.
    off: Vec<u32>,
    fx: Vec<f32>,
    fz: Vec<f32>,
    /// Frame range `[a, b)` of each grid cell.
    cell_range: Vec<(u32, u32)>,
    /// Frame index of each slab slot (or NIL).
    frame_of: Vec<u32>,
    recipients: Vec<u32>,
}

/// Builds one recipient's datagrams as segments of the shared frame buffer, cutting at
/// `budget` bytes.
struct Writer<'a> {
    batch: &'a mut DatagramBatch,
    player: PlayerKey,
    /// First segment of the open datagram.
    first: usize,
    /// Bytes in the open datagram.
    len: usize,
    budget: usize,
    frames: u32,
    bytes: u64,
}

impl Writer<'_> {
    #[inline]
    fn room(&self) -> usize {
        self.budget.saturating_sub(self.len)
    }

    #[inline]
    fn close(&mut self) {
        let end = self.batch.segments.len();
        if self.len > 0 {
            self.batch.datagrams.push(DatagramRef {
                player: self.player,
                first: u32::try_from(self.first).unwrap_or(u32::MAX),
                end: u32::try_from(end).unwrap_or(u32::MAX),
                len: u32::try_from(self.len).unwrap_or(u32::MAX),
            });
        }
        self.bytes += self.len as u64;
        self.first = end;
        self.len = 0;
    }

    /// Add the byte range `[s, e)` to the open datagram, merging with the previous
    /// segment when contiguous.
    #[inline]
    fn segment(&mut self, s: u32, e: u32) {
        self.len += (e - s) as usize;
        if self.batch.segments.len() > self.first
            && let Some(last) = self.batch.segments.last_mut()
            && last.1 == s
        {
            last.1 = e;
            return;
        }
        self.batch.segments.push((s, e));
    }

    /// Add frames `a..b` of the encoded buffer, splitting at the budget.
    #[inline]
    fn frames(&mut self, sc: &Scratch, mut a: u32, b: u32) {
        while a < b {
            let (Some(&base), Some(&end)) = (sc.off.get(a as usize), sc.off.get(b as usize)) else {
                return;
            };
            let room = self.room();
            if (end - base) as usize <= room {
                self.segment(base, end);
                self.frames += b - a;
                return;
            }
            // The furthest frame end that still fits.
            let window = sc.off.get(a as usize + 1..=b as usize).unwrap_or(&[]);
            let fit = window.partition_point(|&e| (e - base) as usize <= room);
            let k = if fit == 0 {
                if self.len > 0 {
                    self.close();
                    continue;
                }
                1 // A single frame larger than the budget still goes out alone.
            } else {
                fit
            };
            let k32 = u32::try_from(k).unwrap_or(1);
            let e = sc.off.get((a + k32) as usize).copied().unwrap_or(base);
            self.segment(base, e);
            self.frames += k32;
            a += k32;
        }
    }

    /// Add a recipient-specific frame already written at `[s, e)`.
    #[inline]
    fn own(&mut self, s: u32, e: u32) {
        if self.room() < (e - s) as usize && self.len > 0 {
            self.close();
        }
        self.segment(s, e);
        self.frames += 1;
    }
}

/// Encode every visible actor once, then build the datagrams of each recipient in the
/// broadcast groups of `groups` (bit g: group g, see `ZoneConfig::broadcast_groups`).
pub(crate) fn run(st: &mut ZoneState, sc: &mut Scratch, out: &mut DatagramBatch, groups: u32) {
    encode(st, sc, &mut out.frames);
    let close2 = st.cfg.update_distance * st.cfg.update_distance;
    let far2 = st.cfg.far_distance * st.cfg.far_distance;
    let n_groups = st.cfg.groups();
    let stagger = (st.cfg.mid_band_ms / st.cfg.broadcast_ms.max(1)).max(1);
    let phase = st.broadcasts % stagger;
    let budget = st.cfg.datagram_budget.max(64);
    let energy = st.content.fixed.energy;

    let mut recipients = std::mem::take(&mut sc.recipients);
    st.chain_collect(st.online, ChainKind::Online, &mut recipients);
    let mut sent = 0u32;
    let mut mids = 0u32;
    let mut bytes = 0u64;
    for &pidx in &recipients {
        let Some(p) = st.at(pidx) else { continue };
        let Some(player) = p.player else { continue };
        if p.frozen() || !super::state::in_broadcast_groups(groups, pidx, n_groups) {
            continue;
        }
        let (px, pz) = (p.x, p.z);
        // This player's mid-band turn: once every `stagger` broadcasts, spread by slot
        // (within its broadcast group).
        let mid = (u64::from(pidx) / u64::from(n_groups)) % stagger == phase;
        mids += u32::from(mid);
        let (limit2, radius) = if mid {
            (far2, st.cfg.far_distance)
        } else {
            (close2, st.cfg.update_distance)
        };
        let own = sc.frame_of.get(pidx as usize).copied().unwrap_or(NIL);
        let tail = energy
            .and_then(|e| p.attr.get(usize::from(e)))
            .map_or(UpdateTail::None, |v| UpdateTail::Energy(*v as u16));
        let mount_rid = p.mount.and_then(|m| st.get(m)).map_or(0, |m| m.rid);
        // The recipient's own frame, with its Energy tail, after the shared frames.
        let own_at = u32::try_from(out.frames.len()).unwrap_or(u32::MAX);
        update_of(p, mount_rid, tail).write_frame(&mut out.frames);
        let own_end = u32::try_from(out.frames.len()).unwrap_or(u32::MAX);
        let first = out.segments.len();
        let mut w = Writer {
            batch: out,
            player,
            first,
            len: 0,
            budget,
            frames: 0,
            bytes: 0,
        };
        // The band is one disc: `d² < 500²`, or `d² ≤ 1000²` on this player's mid turn.
        let r2 = limit2;
        let keep = |d2: f32| if mid { d2 <= r2 } else { d2 < r2 };
        let g = &st.grid;
        let (_, r0, _, r1) = g.span(px, pz, radius);
        let edge = |w: &mut Writer<'_>, cell: u32| {
            let Some(&(a, b)) = sc.cell_range.get(cell as usize) else {
                return;
            };
            let xs = sc.fx.get(a as usize..b as usize).unwrap_or(&[]);
            let zs = sc.fz.get(a as usize..b as usize).unwrap_or(&[]);
            let mut run = a;
            for (k, (&x, &z)) in xs.iter().zip(zs).enumerate() {
                let i = a + k as u32;
                let (dx, dz) = (x - px, z - pz);
                if i == own || !keep(dx * dx + dz * dz) {
                    w.frames(sc, run, i);
                    if i == own {
                        w.own(own_at, own_end);
                    }
                    run = i + 1;
                }
            }
            w.frames(sc, run, b);
        };
        for row in r0..=r1 {
            // Per row: the columns the disc touches, and among them the run of inner
            // (non-overflow) cells wholly inside it, which is one contiguous frame range.
            let rz0 = g.z0 + row as f32 * g.cell;
            let rz1 = rz0 + g.cell;
            let dzn = if pz < rz0 {
                rz0 - pz
            } else if pz > rz1 {
                pz - rz1
            } else {
                0.0
            };
            let row_overflow = row == 0 || row + 1 >= g.nz;
            if dzn * dzn > r2 && !row_overflow {
                continue;
            }
            let hn = (r2 - dzn * dzn).max(0.0).sqrt();
            let (ce0, ce1) = (g.col(px - hn), g.col(px + hn));
            let dzf = (pz - rz0).abs().max((rz1 - pz).abs());
            // Whole columns: both x edges within `hw` of the player (with a margin, so a
            // borderline cell is filtered actor by actor instead).
            let (mut cw0, mut cw1) = (1u32, 0u32);
            if !row_overflow && dzf * dzf < r2 {
                let hw = (r2 - dzf * dzf).sqrt() - 0.01;
                let lo = ((px - hw - g.x0) / g.cell).ceil();
                let hi = ((px + hw - g.x0) / g.cell).floor() - 1.0;
                if lo.is_finite() && hi.is_finite() && hi >= lo {
                    cw0 = (lo.max(1.0) as u32).max(ce0);
                    cw1 = (hi.min((g.nx - 2) as f32).max(0.0) as u32).min(ce1);
                }
            }
            let base = row * g.nx;
            if cw0 > cw1 {
                for col in ce0..=ce1 {
                    edge(&mut w, base + col);
                }
                continue;
            }
            for col in ce0..cw0 {
                edge(&mut w, base + col);
            }
            let a = sc.cell_range.get((base + cw0) as usize).map_or(0, |r| r.0);
            let b = sc.cell_range.get((base + cw1) as usize).map_or(0, |r| r.1);
            if own >= a && own < b {
                w.frames(sc, a, own);
                w.own(own_at, own_end);
                w.frames(sc, own + 1, b);
            } else {
                w.frames(sc, a, b);
            }
            for col in cw1 + 1..=ce1 {
                edge(&mut w, base + col);
            }
        }
        w.close();
        sent += w.frames;
        bytes += w.bytes;
    }
    sc.recipients = recipients;
    st.counters.updates_sent += sent;
    st.counters.mid_band += mids;
    st.counters.datagrams += u32::try_from(out.datagrams.len()).unwrap_or(u32::MAX);
    st.counters.datagram_bytes += bytes;
}

/// An actor's `P_StandardUpdate` (framed by `shared::proto`'s fixed-offset writer).
#[inline]
fn update_of(a: &Actor, mount: u16, tail: UpdateTail) -> StandardUpdateS2C {
    StandardUpdateS2C {
        runtime_id: a.rid,
        x: a.x,
        z: a.z,
        is_running: u8::from(a.is_running),
        walking_backward: u8::from(a.walking_backward),
        dest_x: a.dest_x,
        dest_z: a.dest_z,
        mount,
        tail,
    }
}

/// Encode every actor in the grid once, cell by cell.
fn encode(st: &ZoneState, sc: &mut Scratch, buf: &mut Vec<u8>) {
    buf.clear();
    sc.off.clear();
    sc.fx.clear();
    sc.fz.clear();
    let cells = st.grid.len() as usize;
    sc.cell_range.clear();
    sc.cell_range.resize(cells, (0, 0));
    sc.frame_of.clear();
    sc.frame_of.resize(st.slab_len() as usize, NIL);
    let area = &st.content.area;
    let mut n = 0u32;
    for cell in 0..st.grid.len() {
        let first = n;
        for e in st.grid.members(cell) {
            let idx = e.idx;
            let Some(a) = st.at(idx) else { continue };
            let mount = a.mount.and_then(|m| st.get(m)).map_or(0, |m| m.rid);
            sc.off.push(u32::try_from(buf.len()).unwrap_or(u32::MAX));
            if a.environment == Environment::Fly {
                // Patrolling NPCs interpolate Y toward their waypoint.
                let mut y = a.y;
                if !a.is_player()
                    && (a.ai_mode as u8) < AiMode::Pet as u8
                    && let Some(wp) = area.waypoint(a.current_waypoint)
                {
                    let pd = (a.x - a.dest_x).powi(2) + (a.z - a.dest_z).powi(2);
                    let od = (a.old_x - a.dest_x).powi(2) + (a.old_z - a.dest_z).powi(2);
                    if od > 0.0 && od.is_finite() {
                        y = a.y + (wp.y - a.y) * (pd / od);
                    }
                }
                let y = shared::wire::clamp_world_coord(y);
                update_of(a, mount, UpdateTail::FlyY(y)).write_frame(buf);
            } else {
                update_of(a, mount, UpdateTail::None).write_frame(buf);
            }
            sc.fx.push(a.x);
            sc.fz.push(a.z);
            if let Some(f) = sc.frame_of.get_mut(idx as usize) {
                *f = n;
            }
            n += 1;
        }
        if let Some(r) = sc.cell_range.get_mut(cell as usize) {
            *r = (first, n);
        }
    }
    sc.off.push(u32::try_from(buf.len()).unwrap_or(u32::MAX));
}
