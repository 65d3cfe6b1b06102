//! One way out of a zone: [`despawn`] is the only path that removes an actor from an
//! AreaInstance (Realm Crafter's `FreeActorInstance` with everything that must let go of
//! the actor first). Every cause runs the same clean-ups, in one order:
//!
//! 1. NPCs chasing it drop it (Chase → Patrol, PetChase → Pet);
//! 2. a trade it is in ends (the partner's window closes);
//! 3. its party membership is forgotten here (the party lives on at the gateway);
//! 4. its scripts: a player's that are still here end (a logout or a handoff saved the
//!    persistent ones first), an NPC's end with it (`FreeActorScripts`);
//! 5. a spawned NPC frees its spawn point's slot (`Spawned - 1`);
//! 6. the zone is told: `P_ActorGone`, except after a kill (the victim's `P_ActorDead`
//!    already told it, and Realm Crafter's client plays the death from that);
//! 7. the slot is freed: chains, grid, RuntimeID, handle, rider and mount, leader and pets.
//!
//! # Decisions
//! * Which companions go along is the caller's: a logout takes the mount and pets that are
//!   not players ([`with_companions`]), a committed handoff the actors it froze, a kill
//!   only the victim (its pets stay, leaderless, as in Realm Crafter).
//! * Before this module the four hand-written copies differed: only a kill made NPCs drop
//!   the departing actor as a target. A player who logged out or warped away was chased
//!   by a freed id until the NPC's next target check; now every cause drops it at once.
//!   A trade and a party are let go for every cause (each was already let go before a
//!   logout or a handoff; both are no-ops for an NPC).

use super::state::{Actor, ActorId, AiMode, ChainKind, ZoneState};

/// Why an actor leaves its AreaInstance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// `KillActor` of an NPC (a dead player keeps its actor until its Death hook).
    Killed,
    /// Its player disconnected (or was removed), or it left with a player who did.
    LoggedOut,
    /// A SetArea handoff committed: the destination holds it now.
    Transferred,
}

/// Removes `id` from the zone after every clean-up (module docs); returns the freed actor.
#[doc(alias = "FreeActorInstance")]
pub(crate) fn despawn(st: &mut ZoneState, id: ActorId, cause: Cause) -> Option<Actor> {
    let (is_player, rid) = st.get(id).map(|a| (a.is_player(), a.rid))?;
    drop_as_target(st, id);
    super::items::trade::cancel_for(st, id);
    super::party::forget(st, id);
    if is_player {
        super::script_table::drop_owned(st, id);
    } else {
        let h = st.handle_of(id);
        super::script_table::actor_freed(st, h);
    }
    super::spawns::release(st, id);
    if cause != Cause::Killed {
        st.send_packet_zone(&super::packets::actor_gone(rid), Some(id));
    }
    st.free_actor(id)
}

/// `id` and, first, its mount and pets that are not players (recursively): what leaves
/// with a player who logs out.
pub(crate) fn with_companions(st: &ZoneState, id: ActorId) -> Vec<ActorId> {
    let mut out = Vec::new();
    collect(st, id, &mut out, 0);
    out
}

fn collect(st: &ZoneState, id: ActorId, out: &mut Vec<ActorId>, depth: u8) {
    if out.contains(&id) {
        return;
    }
    let mount = st.get(id).and_then(|a| a.mount);
    for c in mount.into_iter().chain(st.slaves_of(id)) {
        if depth < 16 && st.get(c).is_some_and(|a| !a.is_player()) {
            collect(st, c, out, depth + 1);
        }
    }
    out.push(id);
}

/// Every NPC chasing `target` drops it (Chase → Patrol, PetChase → Pet). Also for a player
/// who dies and stays (`kill`).
pub(crate) fn drop_as_target(st: &mut ZoneState, target: ActorId) {
    let members = st.chain_members(st.zone, ChainKind::Zone);
    for idx in members {
        let Some(a) = st.at_mut(idx) else { continue };
        if a.ai_target != Some(target) {
            continue;
        }
        a.ai_target = None;
        match a.ai_mode {
            AiMode::Chase => {
                a.ai_mode = AiMode::Patrol;
                a.is_running = false;
                a.dest_x = a.x;
                a.dest_z = a.z;
            }
            AiMode::PetChase => a.ai_mode = AiMode::Pet,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use super::*;
    use crate::sim::packets::P_ACTOR_GONE;
    use crate::sim::testing::{SimHarness, templates};

    /// A watching player, a spawned deer (slot 0 of its spawn point counted), a wolf
    /// chasing the deer and a pet chasing it too.
    fn scene() -> (
        SimHarness,
        crate::sim::events::PlayerKey,
        ActorId,
        [ActorId; 2],
    ) {
        let mut h = SimHarness::new();
        let (watcher, _) = h.spawn_player("Watcher", 0.0, 0.0);
        let deer = h.spawn_npc(templates::HUMAN, 5.0, 0.0);
        let wolf = h.spawn_npc(templates::WOLF, 8.0, 0.0);
        let pet = h.spawn_npc(templates::WOLF, 9.0, 0.0);
        {
            let st = h.sim.state_mut();
            if st.spawned.is_empty() {
                st.spawned.push(0);
            }
            st.spawned[0] = 1;
        }
        h.actor_mut(deer).source_spawn = Some(0);
        let w = h.actor_mut(wolf);
        w.ai_mode = AiMode::Chase;
        w.ai_target = Some(deer);
        let p = h.actor_mut(pet);
        p.ai_mode = AiMode::PetChase;
        p.ai_target = Some(deer);
        h.clear();
        (h, watcher, deer, [wolf, pet])
    }

    #[test]
    fn every_cause_runs_the_same_clean_ups() {
        for cause in [Cause::Killed, Cause::LoggedOut, Cause::Transferred] {
            let (mut h, watcher, deer, [wolf, pet]) = scene();
            let rid = h.actor(deer).rid;
            let gone = despawn(h.sim.state_mut(), deer, cause);
            assert!(gone.is_some(), "{cause:?}: freed");
            assert!(h.sim.state().get(deer).is_none(), "{cause:?}");
            assert_eq!(h.sim.state().spawned[0], 0, "{cause:?}: spawn slot freed");
            assert_eq!(h.actor(wolf).ai_target, None, "{cause:?}");
            assert_eq!(h.actor(wolf).ai_mode, AiMode::Patrol, "{cause:?}");
            assert_eq!(h.actor(pet).ai_target, None, "{cause:?}");
            assert_eq!(h.actor(pet).ai_mode, AiMode::Pet, "{cause:?}");
            h.tick();
            h.deliver();
            let told = h.reliable_of(watcher, P_ACTOR_GONE);
            if cause == Cause::Killed {
                assert!(told.is_empty(), "a kill is told by P_ActorDead");
            } else {
                assert_eq!(told, vec![rid.to_le_bytes().to_vec()], "{cause:?}");
            }
            // Nothing is left to free twice.
            assert!(despawn(h.sim.state_mut(), deer, cause).is_none());
        }
    }

    #[test]
    fn a_logout_takes_the_mount_and_the_pets_first() {
        let mut h = SimHarness::new();
        let (_, rider) = h.spawn_player("Rider", 0.0, 0.0);
        let (_, other) = h.spawn_player("Other", 2.0, 0.0);
        let horse = h.spawn_npc(templates::HUMAN, 1.0, 0.0);
        let pet = h.spawn_npc(templates::WOLF, 1.0, 1.0);
        let st = h.sim.state_mut();
        st.get_mut(rider).unwrap().mount = Some(horse);
        st.get_mut(horse).unwrap().rider = Some(rider);
        st.slave_link(rider, pet);
        // Another player's pet does not go along, nor does another player.
        let stray = h.spawn_npc(templates::WOLF, 3.0, 0.0);
        h.sim.state_mut().slave_link(other, stray);
        let list = with_companions(h.sim.state(), rider);
        assert_eq!(list.len(), 3);
        assert_eq!(list.last(), Some(&rider));
        assert!(list.contains(&horse) && list.contains(&pet));
        assert!(!list.contains(&stray) && !list.contains(&other));
    }
}
