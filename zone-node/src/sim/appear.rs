//! An actor appears in the zone: an NPC made from a template ([`spawn_npc`], for spawn
//! points, scripts and scenarios), and any new arrival announced to the players who see it
//! ([`announce_arrival`]: `P_NewActor` both ways, `P_ChangeArea` and the ground items to a
//! player, the gubbins `P_NewActor` cannot carry).

use super::packets;
use super::state::{Actor, ActorId, ChainKind, ZoneState};

/// Spawn an NPC of a template at a position with a fresh NPC RID and announce it.
pub(crate) fn spawn_npc(
    st: &mut ZoneState,
    template: u16,
    x: f32,
    y: f32,
    z: f32,
) -> Option<ActorId> {
    let t = st.content.template(template)?.clone();
    let mut a = Actor::from_template(&t);
    let c = shared::wire::clamp_world_coord;
    a.x = c(x);
    a.y = c(y);
    a.z = c(z);
    a.dest_x = a.x;
    a.dest_z = a.z;
    a.old_x = a.x;
    a.old_z = a.z;
    for (r, i) in a.ratings.iter_mut().zip(0..) {
        *r = st.content.default_rating(t.faction, i);
    }
    let rid = st.alloc_npc_rid()?;
    let id = st.insert_actor(a, rid)?;
    announce_arrival(st, id);
    Some(id)
}

/// Tell the zone about a newly placed actor: `P_ChangeArea`, the items on the ground and
/// every other actor's `P_NewActor` to it (if a player), its `P_NewActor` to the other
/// players.
pub(crate) fn announce_arrival(st: &mut ZoneState, id: ActorId) {
    if !st.announce {
        return;
    }
    let Some(a) = st.get(id) else { return };
    let na = packets::new_actor(st, a);
    let is_player = a.is_player();
    if is_player {
        let ca = packets::change_area(st, a);
        st.send_packet(id, &ca);
        // The instance's items on the ground, as `SetArea` shows them.
        super::items::ground::show_all(st, id);
        let members = st.chain_members(st.zone, ChainKind::Zone);
        let others: Vec<_> = members
            .into_iter()
            .filter(|&idx| idx != id.idx)
            .filter_map(|idx| st.at(idx).map(|o| packets::new_actor(st, o)))
            .collect();
        for o in &others {
            st.send_packet(id, o);
        }
    }
    st.send_packet_zone(&na, Some(id));
    // The gubbins `P_NewActor` cannot carry, both ways.
    super::items::equip::on_arrival(st, id);
}
