//! Phase 3a: spell recharge (`LastSpellRecharge`, reference §7): every 100 ms step, each
//! known spell with a positive charge loses the step (V1: all known spells, keyed by
//! spell id). Every step that came due since the last tick is counted
//! (`ZoneState::recharge_steps`), so a cooldown lasts its `RechargeTime`, not Realm
//! Crafter's up to ~35 % more.

use super::state::ZoneState;

/// Recharge one actor's spells by the steps due at this tick.
pub(crate) fn actor(st: &mut ZoneState, idx: u32) {
    let step = i64::try_from(st.cfg.recharge_ms).unwrap_or(100);
    let total = step.saturating_mul(i64::from(st.recharge_steps));
    let total = i32::try_from(total).unwrap_or(i32::MAX);
    let Some(a) = st.at_mut(idx) else { return };
    for s in a.spells.iter_mut() {
        if s.charge_ms > 0 {
            s.charge_ms = s.charge_ms.saturating_sub(total).max(0);
        }
    }
}
