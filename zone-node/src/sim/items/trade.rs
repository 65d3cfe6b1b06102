//! Player-to-player trade (Realm Crafter's `IsTrading` handshake, V1's structure): invite,
//! accept, offers, confirmation and an atomic settlement.

use shared::proto::OpenTradingC2S;

use crate::sim::events::PlayerKey;
use crate::sim::state::{ActorId, ZoneState};

/// `P_OpenTrading` from a client: cancel, or confirm a trade or a purchase.
pub(crate) fn open_trading(
    st: &mut ZoneState,
    player: PlayerKey,
    id: ActorId,
    msg: OpenTradingC2S,
) {
    let _ = (st, player, id, msg);
}

/// `P_UpdateTrading`: offer or withdraw a backpack stack.
pub(crate) fn update_trading(
    st: &mut ZoneState,
    player: PlayerKey,
    id: ActorId,
    slot: u8,
    amount: u16,
) {
    let _ = (st, player, id, slot, amount);
}
