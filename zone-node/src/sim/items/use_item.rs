//! Using and eating items: `P_ItemScript` (reference §9.43) and `P_EatItem` (§9.44), with
//! Realm Crafter V1's checks (slot ≤ 45, race **and** class gates, a target within reach).

use shared::content::{Item, ItemKind};

use super::bag::{take_slot, wearer_of};
use super::eat_effect::{apply_eat_effect, check_eat_effect};
use super::inventory::{self, SLOTS};
use crate::sim::engine::EngineEvent;
use crate::sim::events::{InvSlot, PlayerKey, Rejection, RuntimeId};
use crate::sim::state::{ActorId, ZoneState};

/// How close a target of an item must be: dist² (X and Z) below this (Realm Crafter V1's
/// `InteractDist`).
pub const ITEM_REACH2: f32 = 400.0;

/// The instance in `slot` and its template, if the actor holds something there.
fn held(st: &ZoneState, id: ActorId, slot: u8) -> Option<(InvSlot, Item)> {
    let slot = usize::from(slot);
    if slot >= SLOTS {
        return None;
    }
    let s = st.get(id)?.inventory.get(slot)?.as_ref()?.clone();
    let t = st.content.world.item(s.item)?.clone();
    (s.amount > 0).then_some((s, t))
}

/// The target of a use, if it is an actor of this AreaInstance within reach.
fn target_in_reach(st: &ZoneState, id: ActorId, rid: RuntimeId) -> Option<ActorId> {
    let t = st.by_rid(rid)?;
    let (a, b) = (st.get(id)?, st.get(t)?);
    if b.frozen() {
        return None;
    }
    let (dx, dz) = (a.x - b.x, a.z - b.z);
    (dx * dx + dz * dz < ITEM_REACH2).then_some(t)
}

/// `P_ItemScript`: use the item in a slot, optionally on a target. Checks: the slot holds
/// an item (slot ≤ 45), the user's race and class may use it, it has a script, and a
/// target (when given) is an actor here within reach. Then `<Script>.<Method or Main>`
/// runs with the user and the target. Nothing is consumed (the script takes the item
/// itself with a negative `GiveItem` if it should be used up). Anything else is refused
/// and counted.
#[doc(alias = "P_ItemScript")]
pub(crate) fn use_item(
    st: &mut ZoneState,
    player: PlayerKey,
    id: ActorId,
    slot: u8,
    target: Option<RuntimeId>,
) {
    let Some((_, item)) = held(st, id, slot) else {
        st.reject(Some(player), Rejection::BadItemRequest);
        return;
    };
    if !inventory::may_use(&wearer_of(st, id), &item) || item.script.is_empty() {
        st.reject(Some(player), Rejection::BadItemRequest);
        return;
    }
    let target = match target {
        None => None,
        Some(rid) => match target_in_reach(st, id, rid) {
            Some(t) => Some(t),
            None => {
                st.reject(Some(player), Rejection::BadItemRequest);
                return;
            }
        },
    };
    st.announce(EngineEvent::ItemUsed {
        script: item.script.clone(),
        method: item.method.clone(),
        user: id,
        target,
    });
}

/// `P_EatItem`: eat `amount` of the potion or ingredient in a slot. Checks: the slot holds
/// one (slot ≤ 45), `1 <= amount <= stack`, the race and class may use it, and the eater
/// can take the item's effect (not a 65th one: [`check_eat_effect`]; Realm Crafter had no
/// limit, so it never refused here). Then, in Realm
/// Crafter's order: the effect ([`apply_eat_effect`]), the item's script if it has one
/// (with the eater as actor and no target), and the items are used up (no `"T"`: the
/// client removed them already). Anything else is refused and counted.
#[doc(alias = "P_EatItem")]
pub(crate) fn eat(st: &mut ZoneState, player: PlayerKey, id: ActorId, slot: u8, amount: u16) {
    let Some((instance, item)) = held(st, id, slot) else {
        st.reject(Some(player), Rejection::BadItemRequest);
        return;
    };
    let edible = matches!(
        item.kind,
        ItemKind::Potion { .. } | ItemKind::Ingredient { .. }
    );
    if amount == 0
        || amount > instance.amount
        || !edible
        || !inventory::may_use(&wearer_of(st, id), &item)
        || check_eat_effect(st, id, &item, &instance).is_err()
    {
        st.reject(Some(player), Rejection::BadItemRequest);
        return;
    }
    if apply_eat_effect(st, id, &item, &instance, amount).is_err() {
        // Cannot happen after the check above; if it did, nothing was changed yet.
        st.reject(Some(player), Rejection::BadItemRequest);
        return;
    }
    if !item.script.is_empty() {
        st.announce(EngineEvent::ItemUsed {
            script: item.script.clone(),
            method: item.method.clone(),
            user: id,
            target: None,
        });
    }
    let _ = take_slot(st, id, usize::from(slot), amount, false);
}
