//! Gold: every change goes through [`change_gold`], which floors at 0 and tells the owner
//! the change actually applied (`P_GoldChange`), as rc-content-reference §3 asks.
//!
//! Realm Crafter changed gold in five places with three rules: `/gold` (no floor),
//! `ChangeGold` (floored, but the packet carried the asked change, not the applied one) and
//! `SetGold` (any value, negative included, which the client floored and so desynced).
//! Here the scripts' `ChangeGold`/`ChangeMoney`/`SetGold`/`SetMoney`, the DM's `GOLD n`,
//! trades and shops all go through [`change_gold`]: gold stays within `0..=i32::MAX`
//! (saturating: no amount overflows it) and the client is told exactly what changed, so
//! its display never drifts (`docs/items.md`, "Money").

use shared::proto::GoldChange;

use crate::sim::state::{ActorId, ZoneState};

/// The most gold an actor holds (it is an i32 in saves and the wire's `"C1"`).
pub const MAX_GOLD: i64 = i32::MAX as i64;

/// An actor's gold (`Gold`, `Money`); 0 for a gone actor.
#[doc(alias = "Gold")]
#[doc(alias = "Money")]
pub fn gold(st: &ZoneState, id: ActorId) -> i32 {
    st.get(id).map_or(0, |a| a.gold)
}

/// Add `delta` (negative to take) to an actor's gold, floored at 0 and capped at
/// `i32::MAX`; sends the applied change to a player as `"U"`/`"D"` (nothing when nothing
/// changed) and returns it.
#[doc(alias = "ChangeGold")]
#[doc(alias = "ChangeMoney")]
pub fn change_gold(st: &mut ZoneState, id: ActorId, delta: i64) -> i64 {
    let Some(a) = st.get_mut(id) else { return 0 };
    let old = i64::from(a.gold);
    let new = old.saturating_add(delta).clamp(0, MAX_GOLD);
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

/// Set an actor's gold (`SetGold`, `SetMoney`), floored at 0 (Realm Crafter stored a
/// negative value, which its client showed as 0); returns the change applied.
#[doc(alias = "SetGold")]
#[doc(alias = "SetMoney")]
pub fn set_gold(st: &mut ZoneState, id: ActorId, value: i64) -> i64 {
    let old = st.get(id).map_or(0, |a| i64::from(a.gold));
    change_gold(st, id, value.saturating_sub(old))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::testing::SimHarness;

    #[test]
    fn change_is_floored_capped_and_reports_what_applied() {
        let mut h = SimHarness::new();
        let (_, id) = h.spawn_player("Ann", 0.0, 0.0);
        let st = h.sim.state_mut();
        assert_eq!(change_gold(st, id, 100), 100);
        assert_eq!(change_gold(st, id, -250), -100);
        assert_eq!(gold(st, id), 0);
        assert_eq!(change_gold(st, id, -1), 0);
        assert_eq!(change_gold(st, id, i64::MAX), MAX_GOLD);
        assert_eq!(change_gold(st, id, 1), 0);
        assert_eq!(gold(st, id), i32::MAX);
        assert_eq!(change_gold(st, id, i64::MIN), -MAX_GOLD);
        assert_eq!(gold(st, id), 0);
        assert_eq!(set_gold(st, id, -5), 0);
        assert_eq!(set_gold(st, id, 40), 40);
        assert_eq!(set_gold(st, id, i64::from(i32::MIN)), -40);
        assert_eq!(gold(st, id), 0);
    }
}
