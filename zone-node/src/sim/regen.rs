//! Opt-in regeneration (reference §7): every `interval_ms`, each living actor out of
//! combat gains `max(1, percent × Max / 100)` of each configured attribute, capped at Max.
//!
//! Realm Crafter regenerates only Breath (see [`super::water`]) and leaves Health and
//! Energy to games (its `RegenTime` is declared but unused); this rule is the engine's own
//! and runs only when the world turns it on (`[misc.regen]`, [`super::area::RegenRule`]).
//! Called from the housekeeping phase of [`super::ZoneSim::tick`]: one pass over the zone
//! per interval, nothing in between.
//!
//! "In combat" is read from the sim's state: an actor is in combat when it attacked within
//! the last [`COMBAT_MS`] (`LastAttack`), when it was attacked within the last
//! [`COMBAT_MS`] (`last_attacked_ms`, stamped on the victim by every melee, ranged and
//! projectile attack, hit or miss: a player an NPC or another player hits and who does not
//! hit back is in combat too), when it has an AI target (an NPC hunting), or when an actor
//! of the zone has it as its AI target (it is being hunted).

use super::state::{ActorId, ChainKind, ZoneState};
use super::stats;

/// How long after its last attack an actor counts as in combat.
pub const COMBAT_MS: u64 = 5000;

/// The regeneration step, when due. Cheap when the rule is off or not due.
#[doc(alias = "RegenTime")]
pub fn step(st: &mut ZoneState) {
    let Some(rule) = st.content.rules.regen.clone() else {
        return;
    };
    let now = st.now_ms;
    if st.next_regen_ms == 0 {
        st.next_regen_ms = now + rule.interval_ms;
        return;
    }
    if now < st.next_regen_ms {
        return;
    }
    st.next_regen_ms += rule.interval_ms;
    if st.next_regen_ms <= now {
        st.next_regen_ms = now + rule.interval_ms;
    }
    let mut order = Vec::new();
    st.chain_collect(st.zone, ChainKind::Zone, &mut order);
    // Actors somebody is hunting.
    let hunted: Vec<ActorId> = order
        .iter()
        .filter_map(|&i| st.at(i).and_then(|a| a.ai_target))
        .collect();
    for &idx in &order {
        let Some(a) = st.at(idx) else { continue };
        let id = a.id;
        let recent = |t: Option<u64>| t.is_some_and(|t| now.saturating_sub(t) < COMBAT_MS);
        let fighting = a.ai_target.is_some()
            || recent(a.last_attack_ms)
            || recent(a.last_attacked_ms)
            || hunted.contains(&id);
        if fighting || !st.alive(id) {
            continue;
        }
        for &attr in &rule.attributes {
            let Some(a) = st.get(id) else { break };
            let (Some(v), Some(max)) = (a.attr_value(Some(attr)), a.attr_maximum(Some(attr)))
            else {
                continue;
            };
            if v >= max {
                continue;
            }
            let gain = (i64::from(max) * i64::from(rule.percent) / 100).max(1);
            let nv = (i64::from(v) + gain).min(i64::from(max));
            stats::update_attribute(st, id, attr, i32::try_from(nv).unwrap_or(max));
        }
    }
}
