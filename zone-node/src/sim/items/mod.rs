//! Items: the inventory rules, and (one module each) what players do with items.
//!
//! [`inventory`] is pure: Realm Crafter's slot rules over a 46-slot inventory, with no
//! zone, packet or script in it. The modules beside it apply those rules to the zone and
//! tell the clients (`docs/items.md`):
//!
//! * [`bag`]: giving and taking items (the `"G"` offers and `"T"`), moving, merging and
//!   equipping, the action bar; [`equip`]: the Equip Change script and `"O"`;
//!   [`use_item`]: using and eating ([`eat_effect`]: what eating does);
//! * [`ground`]: dropped items (drop, pick up, `SpawnItem`, expiry);
//! * [`money`]: gold and `P_GoldChange`;
//! * [`trade`]: player-to-player trade; [`shop`]: NPC shops; [`exchange`]: what both
//!   share (item strings, offer handles, the packets after a settlement).

pub mod bag;
pub mod eat_effect;
pub mod equip;
pub mod exchange;
pub mod ground;
pub mod inventory;
pub mod money;
pub mod shop;
pub mod trade;
pub mod use_item;

use shared::proto::InventoryUpdateC2S;

use super::events::PlayerKey;
use super::state::{ActorId, ZoneState};

/// `P_InventoryUpdate` (15) from a client: each sub-code to its rule.
#[doc(alias = "P_InventoryUpdate")]
pub(crate) fn on_inventory_update(
    st: &mut ZoneState,
    player: PlayerKey,
    id: ActorId,
    msg: InventoryUpdateC2S,
) {
    match msg {
        InventoryUpdateC2S::Pickup { dropped, slot } => {
            ground::pick_up(st, player, id, dropped, slot);
        }
        InventoryUpdateC2S::Drop { slot, amount } => ground::drop(st, player, id, slot, amount),
        InventoryUpdateC2S::OfferAccepted { item_handle, slot } => {
            bag::offer_answered(st, player, id, item_handle, Some(slot));
        }
        InventoryUpdateC2S::OfferRefused { item_handle } => {
            bag::offer_answered(st, player, id, item_handle, None);
        }
        InventoryUpdateC2S::Swap {
            runtime_id,
            from,
            to,
            amount,
        } => bag::swap(st, player, id, runtime_id, from, to, amount),
        InventoryUpdateC2S::Merge {
            runtime_id,
            from,
            to,
            amount,
        } => bag::merge(st, player, id, runtime_id, from, to, amount),
    }
}
