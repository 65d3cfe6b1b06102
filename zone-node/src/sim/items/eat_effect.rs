//! What eating a potion or an ingredient does to the eater (`P_EatItem` step 1,
//! reference §6): the seam where actor effects will go.
//!
//! Realm Crafter creates (or refreshes) an actor effect named after the item, whose deltas
//! are the eaten **instance's** nonzero attributes, lasting the template's
//! `EatEffectsLength` seconds (0 = permanent), with the `P_ActorEffect` `"A"`/`"E"`/`"R"`
//! packets. Actor effects do not exist in this server yet (issue 20); until they do, the
//! deltas are applied **permanently**, through [`stats::update_attribute`] (clamped to the
//! maximum, the right audience), so a healing potion heals.

use shared::content::Item;

use crate::sim::events::InvSlot;
use crate::sim::state::{ActorId, ZoneState};
use crate::sim::stats;

/// Apply the effect of eating `amount` of `instance` (of template `item`) to `id`.
///
/// Today: for each nonzero attribute of the instance, value += delta × amount, clamped to
/// `0..=Max` (Realm Crafter applied one effect for any amount and did not clamp; a potion
/// that takes Health to 0 kills, where Realm Crafter's could not). With issue 20 this
/// becomes an effect named `item.name` lasting the item's `secs` (0 = permanent).
#[doc(alias = "AddActorEffect")]
pub fn apply_eat_effect(
    st: &mut ZoneState,
    id: ActorId,
    item: &Item,
    instance: &InvSlot,
    amount: u16,
) {
    // The effect's name and length (`item.name`, `secs`) are for issue 20's effects.
    let _ = item;
    let health = st.content.fixed.health;
    for (i, delta) in instance.attributes.iter().enumerate() {
        if *delta == 0 {
            continue;
        }
        let Ok(attr) = u8::try_from(i) else { continue };
        let Some(cur) = st.get(id).and_then(|a| a.attr_value(Some(attr))) else {
            continue;
        };
        let new = cur
            .saturating_add(delta.saturating_mul(i32::from(amount)))
            .max(0);
        stats::update_attribute(st, id, attr, new);
        if Some(attr) == health && new <= 0 {
            stats::defer_kill(st, id, None);
        }
    }
}
