//! Mounts: `P_RightClick` (script hook or mount, `InteractDist`), `P_Dismount`.
//!
//! * `P_RightClick` needs the target in this instance (not frozen, not self) within XZ
//!   dist² < 400. The right-click hook runs first; when no script handles it and the
//!   target is Rideable, an NPC, without a rider and not someone else's pet, the clicker
//!   (not already riding) mounts it. The mount stops its AI (a ridden mount runs none)
//!   and moves with its rider (movement and `P_StandardUpdate`).
//! * `P_Dismount`: an NPC mount that is nobody's pet returns to Patrol; a pet mount
//!   returns to Pet.

use super::engine::EngineEvent;
use super::events::{Rejection, RuntimeId};
use super::state::{ActorId, AiMode, ZoneState};

/// `InteractDist`: XZ dist² for right-click.
pub const INTERACT_D2: f32 = 400.0;

/// The actor `target` names, if a player may interact with it (`P_RightClick`,
/// `P_Examine`, `P_Trade`): another actor of this AreaInstance, not mid-warp, within XZ
/// dist² `reach_sq`. Otherwise the request is refused and counted (`UnknownTarget`, or
/// `Invalid` when out of reach).
pub(crate) fn interact_target(
    st: &mut ZoneState,
    who: ActorId,
    target: RuntimeId,
    reach_sq: f32,
) -> Option<ActorId> {
    let c = st.get(who)?;
    let player = c.player;
    let (cx, cz) = (c.x, c.z);
    let Some((t, ta)) = st
        .by_rid(target)
        .filter(|t| *t != who)
        .and_then(|t| st.get(t).map(|a| (t, a)))
        .filter(|(_, a)| !a.frozen())
    else {
        st.reject(player, Rejection::UnknownTarget);
        return None;
    };
    let (dx, dz) = (ta.x - cx, ta.z - cz);
    if dx * dx + dz * dz >= reach_sq {
        st.reject(player, Rejection::Invalid);
        return None;
    }
    Some(t)
}

/// `P_RightClick` on a target RID.
pub(crate) fn right_click(st: &mut ZoneState, clicker: ActorId, target: RuntimeId) {
    let Some(t) = interact_target(st, clicker, target, INTERACT_D2) else {
        return;
    };
    // `WaitSpeak`s this click satisfies.
    super::script_table::on_right_click(st, clicker, t);
    // Its script, or else a mount (the dispatcher decides).
    st.announce(EngineEvent::RightClicked { clicker, target: t });
}

/// `Mount.Mount`: `rider` mounts `mount` if allowed (silently refused otherwise, counted).
pub fn mount(st: &mut ZoneState, rider: ActorId, mount: ActorId) {
    let (Some(r), Some(m)) = (st.get(rider), st.get(mount)) else {
        return;
    };
    let ok = m.rideable
        && !m.is_player()
        && m.rider.is_none()
        && m.mount.is_none()
        && m.leader.is_none_or(|l| l == rider)
        && r.mount.is_none()
        && r.rider.is_none()
        && !r.dead;
    if !ok {
        let p = r.player;
        st.reject(p, Rejection::Invalid);
        return;
    }
    let (x, y, z) = (r.x, r.y, r.z);
    if let Some((r, m)) = st.pair_mut(rider, mount) {
        r.mount = Some(m.id);
        m.rider = Some(r.id);
        m.ai_target = None;
        m.x = x;
        m.y = y;
        m.z = z;
        m.dest_x = r.dest_x;
        m.dest_z = r.dest_z;
    }
    st.grid_update(mount.idx);
    st.announce(EngineEvent::Mounted { rider, mount });
}

/// `P_Dismount`.
pub(crate) fn dismount(st: &mut ZoneState, rider: ActorId) {
    let Some(r) = st.get(rider) else { return };
    let player = r.player;
    let Some(m) = r.mount else {
        st.reject(player, Rejection::Invalid);
        return;
    };
    if let Some(r) = st.get_mut(rider) {
        r.mount = None;
    }
    if let Some(a) = st.get_mut(m) {
        a.rider = None;
        a.is_running = false;
        a.dest_x = a.x;
        a.dest_z = a.z;
        if !a.is_player() {
            a.ai_mode = if a.leader.is_some() {
                AiMode::Pet
            } else {
                AiMode::Patrol
            };
        }
    }
    st.announce(EngineEvent::Dismounted {
        rider,
        mount: Some(m),
    });
}
