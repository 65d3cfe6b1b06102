//! Phase 3a: spell recharge, every 100 ms (`LastSpellRecharge`): each known spell with a
//! positive charge loses one step (V1: all known spells, keyed by spell id).

use super::state::ZoneState;

/// Recharge one actor's spells by one step.
pub(crate) fn actor(st: &mut ZoneState, idx: u32) {
    let step = i32::try_from(st.cfg.recharge_ms).unwrap_or(100);
    let Some(a) = st.at_mut(idx) else { return };
    for s in a.spells.iter_mut() {
        if s.charge_ms > 0 {
            s.charge_ms = (s.charge_ms - step).max(0);
        }
    }
}
