//! NPC shops (vendors): `OpenTrading(player, npc)` shows the NPC's backpack as wares;
//! buying and selling for money.

use crate::sim::events::{PlayerKey, RuntimeId};
use crate::sim::state::{ActorId, ZoneState};

/// `P_Trade` (Realm Crafter V1): trade with an actor, i.e. run `Default.Trade`, which
/// opens an NPC's shop.
pub(crate) fn trade_with(st: &mut ZoneState, player: PlayerKey, id: ActorId, target: RuntimeId) {
    let _ = (st, player, id, target);
}
