//! What eating a potion or an ingredient does to the eater (`P_EatItem` step 1,
//! reference §6): an actor effect named after the item.
//!
//! As in Realm Crafter, eating creates (or refreshes) an actor effect named after the
//! item, whose deltas are the eaten **instance's** nonzero attributes, lasting the
//! template's `EatEffectsLength` seconds (0 = permanent), with the `P_ActorEffect`
//! `"A"`/`"E"`/`"R"` packets ([`effects::add_effect`]). Unlike Realm Crafter, the item's
//! thumbnail is stored as the effect's icon, so it survives a relog; and an effect the
//! eater cannot take (a 65th one, [`effects::MAX_EFFECTS`]) is found out by
//! [`check_eat_effect`] **before** anything is eaten: the items stay, no script runs.

use shared::content::{Item, ItemKind};

use crate::sim::effects::{self, EffectError};
use crate::sim::events::InvSlot;
use crate::sim::state::{ActorId, ZoneState};

/// The effect's length in seconds: the template's `EatEffectsLength`.
fn eat_secs(item: &Item) -> i64 {
    match item.kind {
        ItemKind::Potion { secs } | ItemKind::Ingredient { secs } => i64::from(secs),
        _ => 0,
    }
}

/// The effect's deltas: the instance's nonzero attributes.
fn eat_deltas(instance: &InvSlot) -> Vec<(u8, i32)> {
    instance
        .attributes
        .iter()
        .enumerate()
        .filter(|(_, d)| **d != 0)
        .filter_map(|(i, d)| u8::try_from(i).ok().map(|a| (a, *d)))
        .collect()
}

/// Whether eating `instance` (of template `item`) can give `id` its effect, changing
/// nothing. An item with no nonzero attribute gives no effect and is always fine.
pub fn check_eat_effect(
    st: &ZoneState,
    id: ActorId,
    item: &Item,
    instance: &InvSlot,
) -> Result<(), EffectError> {
    if eat_deltas(instance).is_empty() {
        return Ok(());
    }
    effects::check_add(st, id, &item.name, eat_secs(item))
}

/// Apply the effect of eating `amount` of `instance` (of template `item`) to `id`; the
/// caller has asked [`check_eat_effect`] first.
///
/// The effect is applied **once**, whatever `amount` is (as in Realm Crafter): an effect
/// does not stack with itself, eating another refreshes its timer and sets the same
/// deltas again, so eating three at once is eating one three times in a row. The items
/// are all consumed by the caller.
#[doc(alias = "AddActorEffect")]
pub fn apply_eat_effect(
    st: &mut ZoneState,
    id: ActorId,
    item: &Item,
    instance: &InvSlot,
    amount: u16,
) -> Result<(), EffectError> {
    let _ = amount;
    let deltas = eat_deltas(instance);
    if deltas.is_empty() {
        return Ok(());
    }
    effects::add_effect(st, id, &item.name, &deltas, eat_secs(item), item.thumbnail)
}
