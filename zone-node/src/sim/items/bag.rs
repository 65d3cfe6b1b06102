//! An actor's own inventory in the zone: giving and taking items (with the packets that
//! tell the owner), moving, merging and equipping, the Equip Change script, using and
//! eating items, and the action bar.
//!
//! Every change goes through [`give`] / [`take_slot`] / [`take_item`], which apply the
//! pure rules of [`super::inventory`] and send the owner what a Realm Crafter client
//! expects (`"G"` offers, `"T"`), and call [`equipment_changed`] when a slot below 14
//! changed.

use shared::proto::{ActionBarUpdate, InventoryUpdateS2C};
use shared::wire::RcString;

use super::inventory::{self, InventoryError, Placement, Wearer};
use crate::sim::events::{InvSlot, PlayerKey, Rejection};
use crate::sim::state::{ActorId, OutstandingOffer, ZoneState};

pub use super::equip::equipment_changed;
pub(crate) use super::use_item::{eat, use_item};

/// Action bar slots (`P_ActionBarUpdate` slot `0..36`).
pub const ACTION_BAR_SLOTS: usize = 36;
/// The longest spell name a bar slot keeps (Realm Crafter V1's cap).
pub const ACTION_BAR_NAME_MAX: usize = 255;

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
    send_offers(st, id, item_id, &placed);
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

/// One `"G"` offer per placement of items the server has already placed (a gift, a
/// purchase, a trade's settlement), each remembered until the client answers. No-op for an
/// NPC.
pub(crate) fn send_offers(st: &mut ZoneState, id: ActorId, item_id: u16, placed: &[Placement]) {
    for p in placed {
        offer(st, id, item_id, p.slot, p.amount, false);
    }
}

/// Send a player one `"G"` offer for what the server placed in `slot`, and remember it
/// until the client answers (at most [`OutstandingOffer::KEEP`]; the oldest is forgotten,
/// and its late answer refused). No-op for an NPC.
fn offer(st: &mut ZoneState, id: ActorId, item: u16, slot: usize, amount: u16, resent: bool) {
    if st.get(id).is_none_or(|a| a.player_data.is_none()) {
        return;
    }
    let handle = super::exchange::next_handle(st);
    let Ok(slot) = u8::try_from(slot) else { return };
    if let Some(pd) = st.get_mut(id).and_then(|a| a.player_data.as_mut()) {
        if pd.offers.len() >= OutstandingOffer::KEEP {
            pd.offers.remove(0);
        }
        pd.offers.push(OutstandingOffer {
            handle,
            slot,
            item,
            amount,
            resent,
        });
    }
    st.send_packet(
        id,
        &InventoryUpdateS2C::Offer {
            item_handle: handle,
            item_id: item,
            amount,
        },
    );
}

/// `"GY"` / `"GN"`: the client's answer to an offer.
///
/// The server placed the item when it offered it, so the answer changes nothing on the
/// server. It is accepted only for an offer made to this player and not answered yet
/// (anything else is refused and counted). `"GY"` into the server's slot is the normal
/// case. `"GY"` into another slot or `"GN"` means the client's view of its inventory
/// differs from the server's: counted, and corrected once: a `"T"` takes back the copy the
/// client put in the wrong slot, and the item is offered again (Realm Crafter destroyed a
/// refused item; here it stays in the server's slot). See `docs/items.md`.
#[doc(alias = "P_InventoryUpdate")]
pub(crate) fn offer_answered(
    st: &mut ZoneState,
    player: PlayerKey,
    id: ActorId,
    item_handle: u32,
    slot: Option<u8>,
) {
    let rec = st
        .get_mut(id)
        .and_then(|a| a.player_data.as_mut())
        .and_then(|pd| {
            let i = pd.offers.iter().position(|o| o.handle == item_handle)?;
            Some(pd.offers.remove(i))
        });
    let Some(rec) = rec else {
        st.reject(Some(player), Rejection::BadItemRequest);
        return;
    };
    if slot == Some(rec.slot) {
        return;
    }
    st.reject(Some(player), Rejection::BadItemRequest);
    if rec.resent {
        return;
    }
    if let Some(wrong) = slot {
        st.send_packet(
            id,
            &InventoryUpdateS2C::Taken {
                slot: wrong,
                amount: rec.amount,
            },
        );
    }
    offer(st, id, rec.item, usize::from(rec.slot), rec.amount, true);
}

/// The actor whose inventory a `"S"`/`"A"` names: the sender itself or one of its pets.
fn own_or_pet(st: &ZoneState, id: ActorId, runtime_id: u16) -> Option<ActorId> {
    let target = st.by_rid(runtime_id)?;
    let ok = target == id || st.get(target).is_some_and(|t| t.leader == Some(id));
    ok.then_some(target)
}

/// Apply a pure inventory move to an actor's inventory (all or nothing).
fn apply(
    st: &mut ZoneState,
    owner: ActorId,
    f: impl FnOnce(
        &mut [Option<InvSlot>],
        &shared::content::World,
        &Wearer<'_>,
    ) -> Result<(), InventoryError>,
) -> Result<(), InventoryError> {
    let world = st.content.world.clone();
    let mut inv = st
        .get(owner)
        .map(|a| a.inventory.clone())
        .ok_or(InventoryError::BadSlot)?;
    f(&mut inv, &world, &wearer_of(st, owner))?;
    if let Some(a) = st.get_mut(owner) {
        a.inventory = inv;
    }
    Ok(())
}

/// The move rules' signature ([`inventory::swap`], [`inventory::merge`]).
type MoveRule = fn(
    &mut [Option<InvSlot>],
    &shared::content::World,
    &Wearer<'_>,
    usize,
    usize,
    u16,
) -> Result<(), InventoryError>;

/// One stack move by a client in its own inventory or one of its pets': refused and
/// counted (changing nothing) unless `rule` allows it; the Equip Change script and `"O"`
/// when an equipment slot took part. Realm Crafter sends no reply either way, so a client
/// that already moved the item locally stays out of step until its character is loaded
/// again (`docs/items.md`).
#[allow(clippy::too_many_arguments)]
fn client_move(
    st: &mut ZoneState,
    player: PlayerKey,
    id: ActorId,
    runtime_id: u16,
    from: u8,
    to: u8,
    amount: u16,
    rule: MoveRule,
) {
    let (from, to) = (usize::from(from), usize::from(to));
    let Some(owner) = own_or_pet(st, id, runtime_id) else {
        st.reject(Some(player), Rejection::BadItemRequest);
        return;
    };
    let moved = apply(st, owner, |inv, world, w| {
        rule(inv, world, w, from, to, amount)
    });
    if moved.is_err() {
        st.reject(Some(player), Rejection::BadItemRequest);
        return;
    }
    if inventory::is_equipment(from) || inventory::is_equipment(to) {
        equipment_changed(st, owner);
    }
}

/// `"S"`: move, swap or split a stack (`InventorySwap`, [`inventory::swap`]).
#[doc(alias = "InventorySwap")]
pub(crate) fn swap(
    st: &mut ZoneState,
    player: PlayerKey,
    id: ActorId,
    runtime_id: u16,
    from: u8,
    to: u8,
    amount: u16,
) {
    client_move(
        st,
        player,
        id,
        runtime_id,
        from,
        to,
        amount,
        inventory::swap,
    );
}

/// `"A"`: add part of a stack onto an identical stackable backpack stack
/// (`InventoryAdd`, [`inventory::merge`]).
#[doc(alias = "InventoryAdd")]
pub(crate) fn merge(
    st: &mut ZoneState,
    player: PlayerKey,
    id: ActorId,
    runtime_id: u16,
    from: u8,
    to: u8,
    amount: u16,
) {
    client_move(
        st,
        player,
        id,
        runtime_id,
        from,
        to,
        amount,
        inventory::merge,
    );
}

/// `P_ActionBarUpdate`: store a bar slot as Realm Crafter saves it (Latin-1 text):
/// `"S"` + spell name (at most 255 bytes), `"I"` + the item id's two raw bytes, or `""`.
/// The gateway saves the bar with the character and sends it back at login. A slot of 36
/// or more is refused and counted.
#[doc(alias = "P_ActionBarUpdate")]
pub(crate) fn action_bar(st: &mut ZoneState, player: PlayerKey, id: ActorId, msg: ActionBarUpdate) {
    let (slot, bytes) = match &msg {
        ActionBarUpdate::Spell { slot, spell } => {
            let name = spell.as_bytes();
            let name = name
                .get(..name.len().min(ACTION_BAR_NAME_MAX))
                .unwrap_or(name);
            let mut b = vec![b'S'];
            b.extend_from_slice(name);
            (*slot, b)
        }
        ActionBarUpdate::Item { slot, item_id } => {
            let [lo, hi] = item_id.to_le_bytes();
            (*slot, vec![b'I', lo, hi])
        }
        ActionBarUpdate::Clear { slot } => (*slot, Vec::new()),
    };
    let slot = usize::from(slot);
    let Some(pd) = st.get_mut(id).and_then(|a| a.player_data.as_mut()) else {
        return;
    };
    if slot >= ACTION_BAR_SLOTS {
        st.reject(Some(player), Rejection::BadItemRequest);
        return;
    }
    if pd.action_bar.len() < ACTION_BAR_SLOTS {
        pd.action_bar.resize(ACTION_BAR_SLOTS, String::new());
    }
    if let Some(s) = pd.action_bar.get_mut(slot) {
        *s = RcString(bytes).to_latin1();
    }
}
