//! Spawn points (reference §7.6): `Spawned[]`/`SpawnLast[]` per instance, one spawn per
//! due slot per visit.
//!
//! * A new instance sets `SpawnLast = now` for every slot, so the first spawn comes one
//!   frequency after the instance starts (Realm Crafter never calls `PreLoadSpawns`).
//! * On a visit, a slot below `SpawnMax` with `SpawnLast = 0` starts its timer; one whose
//!   `now - SpawnLast > SpawnFrequency × 1000` spawns **one** NPC. A full slot resets
//!   `SpawnLast` to 0, so a slot that drops below the maximum waits a whole frequency.
//! * The NPC appears at the spawn waypoint with X/Z scattered by `Rnd(±SpawnSize/2)`,
//!   in Patrol with `Dest` = the waypoint, `CurrentWaypoint` = it, `SourceSP` = the slot,
//!   the slot's right-click and death scripts; then the `SpawnScript` hook runs.
//! * `Spawned` goes down when the NPC dies ([`release`] from `KillActor`) or leaves.
//! * Unused slots (`SpawnMax = 0`), unknown templates and bad waypoints are skipped.

use super::engine::EngineEvent;
use super::state::{ActorId, AiMode, ZoneState};

/// A new instance sets `SpawnLast = now` for every slot.
pub(crate) fn start_instance(st: &mut ZoneState) {
    let now = st.now_ms.max(1);
    for s in st.spawn_last.iter_mut() {
        *s = now;
    }
}

/// The spawn part of the round-robin visit.
pub(crate) fn visit(st: &mut ZoneState) {
    let now = st.now_ms;
    let n = st.content.area.spawns.len().min(st.spawned.len());
    for i in 0..n {
        let Some(sp) = st.content.area.spawns.get(i) else {
            continue;
        };
        if sp.max == 0 {
            continue;
        }
        let (max, freq) = (sp.max, u64::from(sp.frequency_s) * 1000);
        let spawned = st.spawned.get(i).copied().unwrap_or(u16::MAX);
        let Some(last) = st.spawn_last.get(i).copied() else {
            continue;
        };
        if spawned >= max {
            if let Some(l) = st.spawn_last.get_mut(i) {
                *l = 0;
            }
            continue;
        }
        if last == 0 {
            if let Some(l) = st.spawn_last.get_mut(i) {
                *l = now.max(1);
            }
            continue;
        }
        if now.saturating_sub(last) > freq {
            spawn_one(st, i);
        }
    }
}

/// Spawn one NPC from slot `i` (template and waypoint guarded).
#[doc(alias = "SpawnActor")]
fn spawn_one(st: &mut ZoneState, i: usize) {
    let Some(sp) = st.content.area.spawns.get(i).cloned() else {
        return;
    };
    let Some(slot) = u16::try_from(i).ok() else {
        return;
    };
    let Some(wp) = st.content.area.waypoint(sp.waypoint).cloned() else {
        // A slot pointing at a missing waypoint never spawns; don't retry every visit.
        if let Some(l) = st.spawn_last.get_mut(i) {
            *l = st.now_ms.max(1);
        }
        return;
    };
    if st.content.template(sp.template).is_none() {
        if let Some(l) = st.spawn_last.get_mut(i) {
            *l = st.now_ms.max(1);
        }
        return;
    }
    let half = if sp.size.is_finite() {
        sp.size.abs() / 2.0
    } else {
        0.0
    };
    let dx = st.rng.rnd(-half, half);
    let dz = st.rng.rnd(-half, half);
    let Some(id) = super::appear::spawn_npc(st, sp.template, wp.x + dx, wp.y, wp.z + dz) else {
        return;
    };
    let now = st.now_ms.max(1);
    if let Some(c) = st.spawned.get_mut(i) {
        *c = c.saturating_add(1);
    }
    if let Some(l) = st.spawn_last.get_mut(i) {
        *l = now;
    }
    if let Some(a) = st.get_mut(id) {
        a.source_spawn = Some(slot);
        a.ai_mode = AiMode::Patrol;
        a.current_waypoint = sp.waypoint;
        a.dest_x = wp.x;
        a.dest_z = wp.z;
        a.script.clone_from(&sp.actor_script);
        a.death_script.clone_from(&sp.death_script);
    }
    st.announce(EngineEvent::Spawned {
        npc: id,
        spawn_point: slot,
    });
}

/// `Spawned[SourceSP] - 1` when a spawned NPC dies or leaves the instance (once).
pub fn release(st: &mut ZoneState, id: ActorId) {
    let Some(slot) = st.get_mut(id).and_then(|a| a.source_spawn.take()) else {
        return;
    };
    if let Some(c) = st.spawned.get_mut(usize::from(slot)) {
        *c = c.saturating_sub(1);
    }
}
