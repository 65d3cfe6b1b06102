//! Phase 3c: water, breath and water damage (reference §7 c.3), over the area's water list
//! (the `FirstWater` chain).
//!
//! * Swim actors are always underwater and skip this.
//! * Inside a volume when `Y < W.Y + 0.5` and strictly inside its X/Z rectangle.
//! * Out of water: with a Breath stat below its maximum, 1 in 10 ticks Breath +1 (owner
//!   only).
//! * In water, once a second: Breath -1 when deeper than 2 (at 0, Health -1 instead);
//!   water damage `max(1, Damage - (Resist[type] - 100))` through `UpdateAttribute`;
//!   Health ≤ 0 queues a deferred kill.

use super::area::Environment;
use super::packets;
use super::state::ZoneState;
use super::stats;

/// Water tick for one actor (slab index).
pub(crate) fn actor(st: &mut ZoneState, idx: u32) {
    let Some(a) = st.at(idx) else { return };
    if a.environment == Environment::Swim || a.dead {
        return;
    }
    let (x, y, z, id) = (a.x, a.y, a.z, a.id);
    let water = st.content.area.water.iter().position(|w| {
        y < w.y + 0.5 && w.x < x && x < w.x + w.width && w.z < z && z < w.z + w.depth
    });
    let fixed = st.content.fixed;
    let now = st.now_ms;
    let Some(wi) = water else {
        // Out of water: breath comes back. (Only touch the actor when something changes.)
        let (was_in, breath) = (a.underwater_ms.is_some() || a.water.is_some(), fixed.breath);
        let regen = breath.and_then(|b| match (a.attr_value(Some(b)), a.attr_maximum(Some(b))) {
            (Some(v), Some(m)) if v < m => Some((b, v)),
            _ => None,
        });
        if was_in && let Some(a) = st.at_mut(idx) {
            a.underwater_ms = None;
            a.water = None;
        }
        if let Some((b, v)) = regen
            && st.rng.one_in(10)
        {
            set_breath(st, idx, b, v + 1);
        }
        return;
    };
    let Some(a) = st.at_mut(idx) else { return };
    let Some(since) = a.underwater_ms else {
        a.underwater_ms = Some(now);
        a.water = u16::try_from(wi).ok();
        return;
    };
    if now.saturating_sub(since) < 1000 {
        return;
    }
    a.underwater_ms = Some(since + 1000);
    let Some(w) = st.content.area.water.get(wi).cloned() else {
        return;
    };
    let health = fixed.health;
    if let Some(b) = fixed.breath
        && w.y - y > 2.0
    {
        let breath = st.at(idx).and_then(|a| a.attr_value(Some(b))).unwrap_or(0);
        if breath - 1 < 0 {
            set_breath(st, idx, b, 0);
            if let Some(h) = health {
                let hp = st.at(idx).and_then(|a| a.attr_value(Some(h))).unwrap_or(0);
                stats::update_attribute(st, id, h, hp - 1);
            }
        } else {
            set_breath(st, idx, b, breath - 1);
        }
    }
    if let Some(h) = health {
        if w.damage > 0 {
            let resist = st
                .at(idx)
                .and_then(|a| a.resist.get(usize::from(w.damage_type)).copied())
                .unwrap_or(100);
            let dmg = (i32::from(w.damage) - (resist - 100)).max(1);
            let hp = st.at(idx).and_then(|a| a.attr_value(Some(h))).unwrap_or(0);
            stats::update_attribute(st, id, h, hp - dmg);
        }
        let hp = st.at(idx).and_then(|a| a.attr_value(Some(h))).unwrap_or(1);
        if hp <= 0 {
            stats::defer_kill(st, id, None);
        }
    }
}

/// Breath changes go to the owner only.
fn set_breath(st: &mut ZoneState, idx: u32, b: u8, value: i32) {
    let Some(a) = st.at_mut(idx) else { return };
    let Some(slot) = a.attr.get_mut(usize::from(b)) else {
        return;
    };
    *slot = value;
    let (id, rid) = (a.id, a.rid);
    st.send_packet(id, &packets::stat_update_value(rid, b, value));
}
