//! What an actor wears, as the zone sees it: Realm Crafter's `SendEquippedUpdate` (the
//! `Equip Change` script, then `P_InventoryUpdate "O"` to the other players) and the `"O"`
//! an arriving player gets for everyone already wearing gubbins (reference §2.4).
//!
//! The engine adds no attribute bonus for what is worn (as Realm Crafter): a game's
//! `Equip Change.Main` does that, and runs after every change of a slot below 14.

use shared::proto::InventoryUpdateS2C;

use super::inventory::{BACKPACK, CHEST, HAT, SHIELD, WEAPON};
use crate::sim::engine::EngineEvent;
use crate::sim::state::{ActorId, ChainKind, ZoneState};

/// The id sent for an empty slot.
pub const NO_ITEM: u16 = 65535;

/// `SendEquippedUpdate`: run `Equip Change.Main` for the actor, then tell the other
/// players of the zone what it wears (`"O"`). Called after every change of a slot below
/// 14 (a move, a merge, a give, a take, a drop, a trade).
#[doc(alias = "SendEquippedUpdate")]
pub fn equipment_changed(st: &mut ZoneState, id: ActorId) {
    if st.get(id).is_none() {
        return;
    }
    st.announce(EngineEvent::EquipmentChanged { actor: id });
    if let Some(p) = equipment_packet(st, id) {
        st.send_packet_zone(&p, Some(id));
    }
}

/// The actor's `"O"`: its RuntimeID, the item ids in the weapon, shield, **chest, hat**
/// slots (65535 = none; that order, unlike `P_NewActor`'s hat, chest) and the gubbin
/// flags: gubbin *i* is shown when any item in slots 0..13 has gubbin *i* set to 1.
pub fn equipment_packet(st: &ZoneState, id: ActorId) -> Option<InventoryUpdateS2C> {
    let a = st.get(id)?;
    let world = &st.content.world;
    let item_in = |slot: usize| {
        a.inventory
            .get(slot)
            .and_then(Option::as_ref)
            .map_or(NO_ITEM, |s| s.item)
    };
    let mut gubbins = [0u8; 6];
    for s in a.inventory.iter().take(BACKPACK).flatten() {
        if let Some(t) = world.item(s.item) {
            for (g, v) in gubbins.iter_mut().zip(t.gubbins) {
                if v == 1 {
                    *g = 1;
                }
            }
        }
    }
    Some(InventoryUpdateS2C::Equipment {
        runtime_id: a.rid,
        weapon: item_in(WEAPON),
        shield: item_in(SHIELD),
        chest: item_in(CHEST),
        hat: item_in(HAT),
        gubbins,
    })
}

/// Whether an actor's `"O"` shows any gubbin (what `P_NewActor` cannot carry).
fn shows_gubbins(p: &InventoryUpdateS2C) -> bool {
    matches!(p, InventoryUpdateS2C::Equipment { gubbins, .. } if gubbins.iter().any(|g| *g != 0))
}

/// After an actor's arrival was announced (`P_NewActor` both ways): `P_NewActor` lists the
/// four visible items but no gubbin flags (Realm Crafter's quirk: a newcomer saw no gubbins
/// until the wearer's next change). So an arriving player gets the `"O"` of every actor of
/// the zone wearing gubbins, and the zone gets the arriving actor's when it wears any.
pub fn on_arrival(st: &mut ZoneState, id: ActorId) {
    let Some(me) = st.get(id) else { return };
    let is_player = me.is_player();
    if let Some(p) = equipment_packet(st, id).filter(shows_gubbins) {
        st.send_packet_zone(&p, Some(id));
    }
    if !is_player {
        return;
    }
    let members = st.chain_members(st.zone, ChainKind::Zone);
    for idx in members {
        let Some(other) = st.at(idx).map(|a| a.id) else {
            continue;
        };
        if other == id {
            continue;
        }
        if let Some(p) = equipment_packet(st, other).filter(shows_gubbins) {
            st.send_packet(id, &p);
        }
    }
}
