//! What eating a potion or an ingredient does to the eater (`P_EatItem` step 1,
//! reference §6): an actor effect named after the item.
//!
//! As in Realm Crafter, eating creates (or refreshes) an actor effect named after the
//! item, whose deltas are the eaten **instance's** nonzero attributes, lasting the
//! template's `EatEffectsLength` seconds (0 = permanent), with the `P_ActorEffect`
//! `"A"`/`"E"`/`"R"` packets ([`effects::add_effect`]). Unlike Realm Crafter, the item's
//! thumbnail is stored as the effect's icon, so it survives a relog.

use shared::content::{Item, ItemKind};

use crate::sim::effects;
use crate::sim::events::InvSlot;
use crate::sim::state::{ActorId, ZoneState};

/// Apply the effect of eating `amount` of `instance` (of template `item`) to `id`.
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
) {
    let _ = amount;
    let secs = match item.kind {
        ItemKind::Potion { secs } | ItemKind::Ingredient { secs } => i64::from(secs),
        _ => 0,
    };
    let deltas: Vec<(u8, i32)> = instance
        .attributes
        .iter()
        .enumerate()
        .filter(|(_, d)| **d != 0)
        .filter_map(|(i, d)| u8::try_from(i).ok().map(|a| (a, *d)))
        .collect();
    if deltas.is_empty() {
        return;
    }
    let player = st.get(id).and_then(|a| a.player);
    if effects::add_effect(st, id, &item.name, &deltas, secs, item.thumbnail).is_err() {
        st.reject(player, crate::sim::events::Rejection::BadItemRequest);
    }
}
