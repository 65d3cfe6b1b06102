//! Gold: every change goes through [`change_gold`], which floors at 0 and tells the owner
//! the change actually applied (`P_GoldChange`), as rc-content-reference §3 asks.

use shared::proto::GoldChange;

use crate::sim::state::{ActorId, ZoneState};

/// Add `delta` (negative to take) to an actor's gold, floored at 0 and capped at
/// `i32::MAX`; sends the applied change to a player as `"U"`/`"D"` and returns it.
#[doc(alias = "ChangeGold")]
#[doc(alias = "ChangeMoney")]
pub fn change_gold(st: &mut ZoneState, id: ActorId, delta: i64) -> i64 {
    let Some(a) = st.get_mut(id) else { return 0 };
    let old = i64::from(a.gold);
    let new = (old + delta).clamp(0, i64::from(i32::MAX));
    a.gold = i32::try_from(new).unwrap_or(i32::MAX);
    let applied = new - old;
    let amount = u32::try_from(applied.unsigned_abs()).unwrap_or(u32::MAX);
    if applied > 0 {
        st.send_packet(id, &GoldChange::Up { amount });
    } else if applied < 0 {
        st.send_packet(id, &GoldChange::Down { amount });
    }
    applied
}

/// Set an actor's gold (`SetGold`, `SetMoney`), floored at 0; returns the change applied.
#[doc(alias = "SetMoney")]
pub fn set_gold(st: &mut ZoneState, id: ActorId, value: i64) -> i64 {
    let old = st.get(id).map_or(0, |a| i64::from(a.gold));
    change_gold(st, id, value - old)
}
