//! Casting an ability (`P_SpellUpdate "F"` + spell id [+ target RuntimeID], reference §5).
//!
//! Checks, in order: the spell exists and the caster knows it, is alive and is not
//! frozen in a transfer; with `RequireMemorise`, it sits in a memorised slot; casts are
//! at least [`MIN_CAST_GAP_MS`] apart (V1); the caster's race and class may use it (V1,
//! with its red `"<Race> only"` line); its recharge is over (else Realm Crafter's red
//! `"Ability not yet recharged!"`); a target, when given, is an actor of this
//! AreaInstance within the world's `cast_range` (a dead or departed target makes the cast
//! untargeted, as V1). Then the spell's script runs (`<Script>.<Method or Main>`, with the
//! caster as `Actor()`, the target as `ContextActor()` and the level as `Param()`) and the
//! recharge starts (keyed by spell id, counted down by [`crate::sim::recharge`]).
//!
//! Differences from Realm Crafter: the range check (it had none; `[misc] cast_range`,
//! default 300, 0 = none, with a red `"Target is out of range"` line); an empty method
//! runs `Main` (Realm Crafter ran nothing); every refusal is counted
//! (`rc_zone_rejections_total{reason="spell_refused"}`).

use super::super::engine::EngineEvent;
use super::super::events::{PlayerKey, Rejection, RuntimeId};
use super::super::packets::{self, CHAT_RED};
use super::super::state::{ActorId, ZoneState};

/// Shortest time between two casts of one player (V1).
pub const MIN_CAST_GAP_MS: u64 = 100;

/// Realm Crafter's refusal line for a spell still recharging.
pub const NOT_RECHARGED: &str = "Ability not yet recharged!";

/// The refusal line for a target beyond `cast_range`.
pub const OUT_OF_RANGE: &str = "Target is out of range";

/// `"F"`: cast `spell_id` at an optional target.
#[doc(alias = "P_SpellUpdate")]
pub(crate) fn cast(
    st: &mut ZoneState,
    player: PlayerKey,
    id: ActorId,
    spell_id: u16,
    target: Option<RuntimeId>,
) {
    let refuse = |st: &mut ZoneState| st.reject(Some(player), Rejection::SpellRefused);
    let Some(def) = st.content.world.spell(spell_id).cloned() else {
        return refuse(st);
    };
    let Some(k) = super::known(st, id, spell_id) else {
        return refuse(st);
    };
    let Some(a) = st.get(id) else { return };
    if a.dead || a.frozen() {
        return refuse(st);
    }
    if st.content.rules.require_memorise && !super::is_memorised(st, id, spell_id) {
        return refuse(st);
    }
    let now = st.now_ms;
    let last = a.player_data.as_ref().and_then(|p| p.last_cast_ms);
    if last.is_some_and(|t| now.saturating_sub(t) < MIN_CAST_GAP_MS) {
        return refuse(st);
    }
    // Race and class (V1).
    if let Some(t) = st.content.template(a.template) {
        let excluded =
            |need: &str, have: &str| !need.is_empty() && !need.eq_ignore_ascii_case(have);
        let line = if excluded(&def.exclusive_race, &t.race) {
            Some(format!("{} only", def.exclusive_race))
        } else if excluded(&def.exclusive_class, &t.class) {
            Some(format!("{} only", def.exclusive_class))
        } else {
            None
        };
        if let Some(line) = line {
            packets::send_chat(st, id, CHAT_RED, &line);
            return refuse(st);
        }
    }
    if k.charge_ms > 0 {
        packets::send_chat(st, id, CHAT_RED, NOT_RECHARGED);
        return refuse(st);
    }
    let target = match target {
        None => None,
        Some(rid) => match live_target(st, rid) {
            None => None,
            Some(t) if in_range(st, id, t) => Some(t),
            Some(_) => {
                packets::send_chat(st, id, CHAT_RED, OUT_OF_RANGE);
                return refuse(st);
            }
        },
    };
    // The recharge counts down in 100 ms steps on the zone's grid; the time already
    // passed since the last step is added, so the spell is ready at the first step at or
    // after `RechargeTime` from now (never early).
    let step = st.cfg.recharge_ms.max(1);
    let since_step = now.saturating_sub(st.next_recharge_ms.saturating_sub(step));
    let charge = i64::from(def.recharge_ms.max(0)) + i64::try_from(since_step).unwrap_or(0);
    let charge = if def.recharge_ms > 0 {
        i32::try_from(charge).unwrap_or(i32::MAX)
    } else {
        0
    };
    if let Some(a) = st.get_mut(id) {
        if let Some(k) = a.spells.iter_mut().find(|k| k.id == spell_id) {
            k.charge_ms = charge;
        }
        if let Some(p) = a.player_data.as_mut() {
            p.last_cast_ms = Some(now);
        }
    }
    st.announce(EngineEvent::SpellCast {
        script: def.script.clone(),
        method: def.method.clone(),
        caster: id,
        target,
        level: k.level,
    });
}

/// The actor a RuntimeID names here, if it is alive and not leaving.
fn live_target(st: &ZoneState, rid: RuntimeId) -> Option<ActorId> {
    let t = st.by_rid(rid)?;
    let a = st.get(t)?;
    (!a.dead && !a.frozen()).then_some(t)
}

/// Whether `target` is within the world's cast range of `caster` (XZ distance).
fn in_range(st: &ZoneState, caster: ActorId, target: ActorId) -> bool {
    let Some(range) = st.content.rules.cast_range else {
        return true;
    };
    let (Some(a), Some(b)) = (st.get(caster), st.get(target)) else {
        return false;
    };
    let (dx, dz) = (a.x - b.x, a.z - b.z);
    dx * dx + dz * dz <= range * range
}
