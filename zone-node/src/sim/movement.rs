//! Phase 3b: movement toward `Dest` (reference §7 c.2).
//!
//! * A ridden mount copies its rider's position.
//! * Otherwise `speed = 1.5 × Speed.Value / Speed.Max` per tick (the mount's speed when
//!   riding; 1.5 when Max is 0), ÷2 walking backward, ×2 running. A running actor with an
//!   Energy stat, not mounted, spends 1 Energy per tick and stops running at 0 (direct
//!   write; the owner sees it in the self tail of `P_StandardUpdate`).
//! * The step is `(dx, dz) / (|dx| + |dz|) × speed` (Manhattan-normalised) while
//!   `|dx| > 0.5 or |dz| > 0.5`. Quirk fix: a step that would pass the destination stops on
//!   it instead of overshooting. Y is not integrated.

use super::state::ZoneState;

/// Base speed per tick at full Speed.
pub const BASE_SPEED: f32 = 1.5;

/// Move one actor (slab index).
pub(crate) fn actor(st: &mut ZoneState, idx: u32) {
    let Some(a) = st.at(idx) else { return };
    if a.dead {
        return;
    }
    // A ridden mount copies its rider.
    if let Some(r) = a.rider.and_then(|r| st.get(r)) {
        let (x, y, z, dx, dz, run, back) = (
            r.x,
            r.y,
            r.z,
            r.dest_x,
            r.dest_z,
            r.is_running,
            r.walking_backward,
        );
        if let Some(m) = st.at_mut(idx) {
            m.x = x;
            m.y = y;
            m.z = z;
            m.dest_x = dx;
            m.dest_z = dz;
            m.is_running = run;
            m.walking_backward = back;
        }
        st.grid_update(idx);
        return;
    }
    let (dx, dz) = (a.dest_x - a.x, a.dest_z - a.z);
    if dx.abs() <= 0.5 && dz.abs() <= 0.5 {
        return;
    }
    let mover = a.mount.filter(|m| st.get(*m).is_some()).unwrap_or(a.id);
    let mounted = mover != a.id;
    let mut speed = BASE_SPEED * st.speed_ratio(mover);
    let energy = st.content.fixed.energy;
    let Some(a) = st.at_mut(idx) else { return };
    if a.walking_backward {
        speed /= 2.0;
    }
    if a.is_running {
        match energy.and_then(|e| a.attr.get_mut(usize::from(e))) {
            Some(e) if !mounted => {
                if *e <= 0 {
                    a.is_running = false;
                } else {
                    *e -= 1;
                    speed *= 2.0;
                }
            }
            _ => speed *= 2.0,
        }
    }
    let n = dx.abs() + dz.abs();
    if !n.is_finite() || !speed.is_finite() {
        return;
    }
    if speed >= n {
        a.x = a.dest_x;
        a.z = a.dest_z;
    } else {
        a.x += dx / n * speed;
        a.z += dz / n * speed;
    }
    let (x, y, z, run) = (a.x, a.y, a.z, a.is_running);
    st.grid_update(idx);
    // The mount moves with its rider in the same tick, whatever the chain order.
    if mounted && let Some(m) = st.get_mut(mover) {
        m.x = x;
        m.y = y;
        m.z = z;
        m.is_running = run;
        let midx = m.id.idx;
        st.grid_update(midx);
    }
}
