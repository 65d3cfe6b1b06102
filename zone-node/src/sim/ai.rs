//! NPC AI (`UpdateActorInstances` AI section, reference §7.1): Wait, Patrol, Run, Chase,
//! PatrolPause, Pet, PetChase, PetWait; `AILookForTargets` and `AICallForHelp` (§7.2).
//!
//! # Decisions
//! * Patrol arrival uses `|dx| ≤ 2 and |dz| ≤ 2` (quirk fix: Realm Crafter used the signed
//!   deltas, so an NPC west/south of its waypoint "arrived" at once).
//! * `AILookForTargets` asks the spatial grid for candidates within `AggressiveRange`
//!   (XZ), then applies the 3-D test. Quirk fix: the **nearest** match wins (ties: the
//!   lowest RuntimeID), not the last one in chain order, so the choice does not depend on
//!   chain order. NPCs still target NPCs whose faction they rate below 150, as Realm
//!   Crafter does (factions are how a game keeps wolves off each other).
//! * `AICallForHelp` only recruits NPCs (players have no AI) and searches the grid with the
//!   largest `AggressiveRange` of any template; each helper then checks its own range.
//! * Dead (waiting for the death script), frozen (mid-transfer) and Health ≤ 0 actors are
//!   never targets, and a target that becomes one is dropped.
//! * A ridden mount runs no AI (its rider moves it).
//! * PatrolPause keeps Realm Crafter's timing: the pause starts when the NPC sets off for a
//!   waypoint that has a pause, and it walks there meanwhile.

use super::combat;
use super::state::{ActorId, AiMode, ZoneState};

/// `Rand(1..10) = 1`: one tick in ten looks for targets.
const LOOK_ONE_IN: i32 = 10;
/// Patrol arrival tolerance.
const ARRIVE: f32 = 2.0;
/// Chase stops within `(CHASE_REACH + rA + rB)²`.
pub const CHASE_REACH: f32 = 4.0;
/// A pet stops within `(PET_REACH + rA + rB)²` of its leader.
pub const PET_REACH: f32 = 5.0;
/// A pet engages the leader's target within this XZ dist² of the leader.
pub const PET_ENGAGE_D2: f32 = 1000.0;
/// A chasing pet gives up beyond this XZ dist² from its leader.
pub const PET_LEASH_D2: f32 = 3500.0;
/// Ratings below this are hostile (aggressive NPCs attack).
pub const RATING_HOSTILE: u8 = 150;
/// Ratings at or above this answer calls for help.
pub const RATING_HELP: u8 = 190;

fn xz_d2(st: &ZoneState, a: ActorId, b: ActorId) -> Option<f32> {
    let (x, y) = (st.get(a)?, st.get(b)?);
    let (dx, dz) = (x.x - y.x, x.z - y.z);
    Some(dx * dx + dz * dz)
}

/// AI for one NPC (slab index), called inside the actor loop after movement and water.
pub(crate) fn update_npc(st: &mut ZoneState, idx: u32) {
    let Some(a) = st.at(idx) else { return };
    if a.dead || a.is_player() || a.rider.is_some() {
        return;
    }
    let (id, mode) = (a.id, a.ai_mode);
    // Killed earlier this tick (the kill is deferred): no more AI.
    if !st.alive(id) {
        return;
    }
    match mode {
        AiMode::Wait => {
            if st.rng.one_in(LOOK_ONE_IN) {
                look_for_targets(st, id);
            }
        }
        AiMode::Patrol | AiMode::Run => {
            if st.rng.one_in(LOOK_ONE_IN) && look_for_targets(st, id) {
                return;
            }
            patrol(st, id, mode);
        }
        AiMode::PatrolPause => {
            if st.rng.one_in(LOOK_ONE_IN) && look_for_targets(st, id) {
                return;
            }
            let now = st.now_ms;
            if let Some(a) = st.get_mut(id)
                && now >= a.pause_until_ms
            {
                a.ai_mode = AiMode::Patrol;
            }
        }
        AiMode::Chase => chase(st, id),
        AiMode::Pet => pet(st, id),
        AiMode::PetChase => pet_chase(st, id),
        AiMode::PetWait => {
            if st
                .get(id)
                .and_then(|a| a.leader)
                .and_then(|l| st.get(l))
                .is_none()
            {
                to_wait(st, id);
            }
        }
    }
}

fn to_wait(st: &mut ZoneState, id: ActorId) {
    // Detach from a vanished leader through the chain code (clears the link too).
    st.slave_unlink(id);
    if let Some(a) = st.get_mut(id) {
        a.ai_mode = AiMode::Wait;
        a.ai_target = None;
        a.dest_x = a.x;
        a.dest_z = a.z;
        a.is_running = false;
    }
}

/// Patrol / Run: arrival at the current waypoint, then wander or pick the next one.
fn patrol(st: &mut ZoneState, id: ActorId, mode: AiMode) {
    let Some(a) = st.get(id) else { return };
    if (a.dest_x - a.x).abs() > ARRIVE || (a.dest_z - a.z).abs() > ARRIVE {
        return;
    }
    let cur = a.current_waypoint;
    let area = waypoint_view(&st.content.area, cur);
    let Some(wp) = area.current else {
        if let Some(a) = st.get_mut(id) {
            a.ai_mode = AiMode::Wait;
        }
        return;
    };
    if let Some(a) = st.get_mut(id) {
        a.is_running = mode == AiMode::Run;
    }
    // Wander around the spawn waypoint.
    if let Some(range) = area.wander {
        let dx = st.rng.rnd(-range, range);
        let dz = st.rng.rnd(-range, range);
        if let Some(a) = st.get_mut(id) {
            a.dest_x = wp.x + dx;
            a.dest_z = wp.z + dz;
        }
        return;
    }
    let jitter_y = st.rng.rnd(-1.5, 1.5);
    // Next: A or B 50/50 (falling back to the other), then Prev.
    let prefer_a = st.rng.rand_range(1, 2) == 1;
    let valid = |w: Option<u16>| w.filter(|&i| st.content.area.waypoint(i).is_some());
    let (first, second) = if prefer_a {
        (wp.next_a, wp.next_b)
    } else {
        (wp.next_b, wp.next_a)
    };
    let next = valid(first)
        .or_else(|| valid(second))
        .or_else(|| valid(wp.prev));
    let Some(next) = next else {
        if let Some(a) = st.get_mut(id) {
            a.y = wp.y + jitter_y;
            a.old_x = wp.x;
            a.old_z = wp.z;
            a.ai_mode = AiMode::Wait;
            a.is_running = false;
        }
        return;
    };
    let Some(nw) = st.content.area.waypoint(next).cloned() else {
        return;
    };
    let jx = st.rng.rnd(-2.0, 2.0);
    let jz = st.rng.rnd(-2.0, 2.0);
    let now = st.now_ms;
    if let Some(a) = st.get_mut(id) {
        a.y = wp.y + jitter_y;
        a.old_x = wp.x;
        a.old_z = wp.z;
        a.dest_x = nw.x + jx;
        a.dest_z = nw.z + jz;
        a.current_waypoint = next;
        if nw.pause_s > 0 {
            a.ai_mode = AiMode::PatrolPause;
            a.pause_until_ms = now + u64::try_from(nw.pause_s).unwrap_or(0) * 1000;
        }
    }
}

/// What patrol needs from the area for one waypoint.
struct WaypointView {
    current: Option<super::area::Waypoint>,
    wander: Option<f32>,
}

/// The waypoint and the wander range of the spawn slot whose `SpawnWaypoint` it is
/// (`Some` when that range is ≥ 5).
fn waypoint_view(area: &super::area::AreaData, cur: u16) -> WaypointView {
    let wander = area
        .spawns
        .iter()
        .find(|s| s.max > 0 && s.waypoint == cur)
        .map(|s| s.range)
        .filter(|r| r.is_finite() && *r >= 5.0);
    WaypointView {
        current: area.waypoint(cur).cloned(),
        wander,
    }
}

/// Back to Patrol, walking to the current waypoint.
fn to_patrol(st: &mut ZoneState, id: ActorId) {
    let wp = st
        .get(id)
        .and_then(|a| st.content.area.waypoint(a.current_waypoint))
        .map(|w| (w.x, w.z));
    if let Some(a) = st.get_mut(id) {
        a.ai_mode = AiMode::Patrol;
        a.ai_target = None;
        a.is_running = false;
        match wp {
            Some((x, z)) => {
                a.dest_x = x;
                a.dest_z = z;
            }
            None => {
                a.dest_x = a.x;
                a.dest_z = a.z;
            }
        }
    }
}

/// Run to `target` or, within reach, stop and attack on the combat delay.
fn close_and_attack(st: &mut ZoneState, id: ActorId, target: ActorId) {
    let (Some(d2), Some(ra), Some(rb)) = (
        xz_d2(st, id, target),
        st.get(id).map(|a| a.radius),
        st.get(target).map(|a| a.radius),
    ) else {
        return;
    };
    let reach = CHASE_REACH + ra + rb;
    let (tx, tz) = st.get(target).map_or((0.0, 0.0), |t| (t.x, t.z));
    let delay = st.content.rules.combat_delay_ms;
    let now = st.now_ms;
    let Some(a) = st.get_mut(id) else { return };
    if d2 > reach * reach {
        a.dest_x = tx;
        a.dest_z = tz;
        a.is_running = true;
        return;
    }
    a.dest_x = a.x;
    a.dest_z = a.z;
    a.is_running = false;
    let ready = a
        .last_attack_ms
        .is_none_or(|l| now.saturating_sub(l) >= delay || now < l);
    if ready {
        combat::actor_attack(st, id, target);
    }
}

fn chase(st: &mut ZoneState, id: ActorId) {
    let target = st.get(id).and_then(|a| a.ai_target);
    match target {
        Some(t) if st.alive(t) && t != id => close_and_attack(st, id, t),
        _ => to_patrol(st, id),
    }
}

fn pet(st: &mut ZoneState, id: ActorId) {
    let Some(leader) = st
        .get(id)
        .and_then(|a| a.leader)
        .filter(|l| st.get(*l).is_some())
    else {
        to_wait(st, id);
        return;
    };
    let (Some(d2), Some(a), Some(l)) = (xz_d2(st, id, leader), st.get(id), st.get(leader)) else {
        return;
    };
    let reach = PET_REACH + a.radius + l.radius;
    let (lx, ly, lz, run, ltarget) = (l.x, l.y, l.z, l.is_running, l.ai_target);
    let aggr = a.aggressiveness;
    if let Some(a) = st.get_mut(id) {
        a.y += (ly - a.y) / 50.0;
        a.is_running = run;
        if d2 <= reach * reach {
            a.dest_x = a.x;
            a.dest_z = a.z;
        } else {
            a.dest_x = lx;
            a.dest_z = lz;
        }
    }
    // Pet aggression: engage the leader's target near the leader.
    if aggr < 3
        && let Some(t) = ltarget
        && t != id
        && st.alive(t)
        && xz_d2(st, t, leader).is_some_and(|d| d <= PET_ENGAGE_D2)
        && let Some(a) = st.get_mut(id)
    {
        a.ai_mode = AiMode::PetChase;
        a.ai_target = Some(t);
    }
}

fn pet_chase(st: &mut ZoneState, id: ActorId) {
    let Some(leader) = st
        .get(id)
        .and_then(|a| a.leader)
        .filter(|l| st.get(*l).is_some())
    else {
        to_wait(st, id);
        return;
    };
    let target = st
        .get(leader)
        .and_then(|l| l.ai_target)
        .filter(|t| st.alive(*t))
        .or_else(|| st.get(id).and_then(|a| a.ai_target));
    let leashed = xz_d2(st, id, leader).is_none_or(|d| d > PET_LEASH_D2);
    match target {
        Some(t) if !leashed && t != id && t != leader && st.alive(t) => {
            if let Some(a) = st.get_mut(id) {
                a.ai_target = Some(t);
            }
            close_and_attack(st, id, t);
        }
        _ => {
            if let Some(a) = st.get_mut(id) {
                a.ai_mode = AiMode::Pet;
                a.ai_target = None;
            }
        }
    }
}

/// `AILookForTargets(AI)`: an aggressive NPC (Aggressiveness 2) picks the nearest actor it
/// rates below 150, not a non-combatant, within `AggressiveRange` (3-D), and chases it.
/// Returns whether it found one.
#[doc(alias = "AILookForTargets")]
pub fn look_for_targets(st: &mut ZoneState, id: ActorId) -> bool {
    let Some(a) = st.get(id) else { return false };
    if a.aggressiveness != 2 {
        return false;
    }
    let (x, y, z, range) = (a.x, a.y, a.z, a.aggressive_range);
    if !range.is_finite() || range <= 0.0 {
        return false;
    }
    let r2 = range * range;
    let ratings = &a.ratings;
    // Evaluated inside the grid walk: no allocation per look.
    let mut best: Option<(f32, u16, ActorId)> = None;
    st.grid.for_each_near(
        x,
        z,
        range,
        |i| st.at(i).map(|c| (c.x, c.z)),
        |i| {
            let Some(c) = st.at(i) else { return };
            let cid = c.id;
            if cid == id || c.aggressiveness == 3 || !st.alive(cid) {
                return;
            }
            if ratings
                .get(usize::from(c.home_faction))
                .is_none_or(|r| *r >= RATING_HOSTILE)
            {
                return;
            }
            let (dx, dy, dz) = (c.x - x, c.y - y, c.z - z);
            let d2 = dx * dx + dy * dy + dz * dz;
            if d2 >= r2 {
                return;
            }
            let better = match best {
                None => true,
                Some((bd, brid, _)) => d2 < bd || (d2 == bd && c.rid < brid),
            };
            if better {
                best = Some((d2, c.rid, cid));
            }
        },
    );
    let Some((_, _, t)) = best else { return false };
    if let Some(a) = st.get_mut(id) {
        a.ai_mode = AiMode::Chase;
        a.ai_target = Some(t);
    }
    true
}

/// `AICallForHelp(victim)`: every NPC near enough (its own `AggressiveRange`, 3-D), not
/// passive or non-combatant, not already chasing, not a pet, and rating the victim's
/// faction ≥ 190, chases the victim's target.
#[doc(alias = "AICallForHelp")]
pub fn call_for_help(st: &mut ZoneState, victim: ActorId) {
    let Some(v) = st.get(victim) else { return };
    let Some(target) = v.ai_target.filter(|t| st.get(*t).is_some()) else {
        return;
    };
    let (x, y, z, home) = (v.x, v.y, v.z, v.home_faction);
    let radius = st
        .content
        .templates
        .values()
        .map(|t| t.aggressive_range)
        .filter(|r| r.is_finite())
        .fold(0.0f32, f32::max);
    if radius <= 0.0 {
        return;
    }
    let mut cands = Vec::new();
    st.grid.for_each_near(
        x,
        z,
        radius,
        |i| st.at(i).map(|c| (c.x, c.z)),
        |i| cands.push(i),
    );
    cands.sort_unstable();
    for i in cands {
        let Some(h) = st.at(i) else { continue };
        let hid = h.id;
        if hid == victim
            || hid == target
            || h.is_player()
            || h.leader.is_some()
            || h.dead
            || h.aggressiveness == 0
            || h.aggressiveness == 3
            || h.ai_mode == AiMode::Chase
            || h.ratings
                .get(usize::from(home))
                .is_none_or(|r| *r < RATING_HELP)
        {
            continue;
        }
        let (dx, dy, dz) = (h.x - x, h.y - y, h.z - z);
        let r = h.aggressive_range;
        if dx * dx + dy * dy + dz * dz >= r * r {
            continue;
        }
        if let Some(h) = st.at_mut(i) {
            h.ai_mode = AiMode::Chase;
            h.ai_target = Some(target);
            h.is_running = true;
        }
    }
}
