//! Items on the ground (Realm Crafter's `DroppedItem`): dropping, picking up,
//! `SpawnItem`, what an arriving player is shown, and expiry.

use crate::sim::events::PlayerKey;
use crate::sim::state::{ActorId, ZoneState};

/// `"P"`: pick up a dropped item into the slot the client chose.
pub(crate) fn pick_up(st: &mut ZoneState, player: PlayerKey, id: ActorId, dropped: u32, slot: u8) {
    let _ = (st, player, id, dropped, slot);
}

/// `"D"`: drop part of a stack at the player's feet.
pub(crate) fn drop(st: &mut ZoneState, player: PlayerKey, id: ActorId, slot: u8, amount: u16) {
    let _ = (st, player, id, slot, amount);
}
