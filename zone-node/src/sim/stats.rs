//! `UpdateAttribute`, `UpdateAttributeMax`, `UpdateReputation` (Server.bb) with the right
//! audiences (reference §4.2), and the `/setattribute` family.
//!
//! * Health, Speed and Energy ("important") go to every player of the instance, for
//!   players and NPCs alike; reputation (players only) too.
//! * Any other attribute goes to the owner only.
//! * `UpdateAttribute` caps the value at the maximum.
//! * An unknown attribute name bails before any write (counted rejection).
//! * Bounds: values are kept in `-32768..=65535` (the wire carries 16 bits); maxima in
//!   `0..=65535`.
//! * A level change ([`set_level`]): `P_XPUpdate "U"` to the owner (players), `"L"` to
//!   the rest of the zone.

use shared::proto::{StatUpdate, XpUpdate};

use super::events::{ATTRIBUTE_COUNT, Rejection};
use super::packets;
use super::state::{ActorId, ZoneState};

/// Lowest attribute value kept.
pub const VALUE_MIN: i32 = -32768;
/// Highest attribute value or maximum kept.
pub const VALUE_MAX: i32 = 65535;

fn send_attr(st: &mut ZoneState, id: ActorId, attr: u8, packet: &StatUpdate) {
    if st.content.fixed.is_important(attr) {
        st.send_packet_zone(packet, None);
    } else {
        st.send_packet(id, packet);
    }
}

/// `UpdateAttribute(A, attr, value)`: cap at Max, write, tell the right audience.
#[doc(alias = "UpdateAttribute")]
pub fn update_attribute(st: &mut ZoneState, id: ActorId, attr: u8, value: i32) {
    if usize::from(attr) >= ATTRIBUTE_COUNT {
        return;
    }
    let Some(a) = st.get_mut(id) else { return };
    let max = a
        .attr_max
        .get(usize::from(attr))
        .copied()
        .unwrap_or(VALUE_MAX);
    let v = value.min(max).clamp(VALUE_MIN, VALUE_MAX);
    if let Some(slot) = a.attr.get_mut(usize::from(attr)) {
        *slot = v;
    }
    let rid = a.rid;
    send_attr(st, id, attr, &packets::stat_update_value(rid, attr, v));
}

/// `UpdateAttributeMax(A, attr, value)`: write the maximum (a value above it is lowered
/// through [`update_attribute`]).
#[doc(alias = "UpdateAttributeMax")]
pub fn update_attribute_max(st: &mut ZoneState, id: ActorId, attr: u8, value: i32) {
    let Some(m) = write_attribute_max(st, id, attr, value) else {
        return;
    };
    let cur = st
        .get(id)
        .and_then(|a| a.attr_value(Some(attr)))
        .unwrap_or(0);
    if cur > m {
        update_attribute(st, id, attr, m);
    }
}

/// Write an attribute's maximum (clamped to `0..=VALUE_MAX`) and tell the right audience,
/// leaving the current value as it is (the script commands `SetMaxAttribute` /
/// `ChangeMaxAttribute`, as in Realm Crafter). Returns the maximum written.
pub fn write_attribute_max(st: &mut ZoneState, id: ActorId, attr: u8, value: i32) -> Option<i32> {
    if usize::from(attr) >= ATTRIBUTE_COUNT {
        return None;
    }
    let a = st.get_mut(id)?;
    let m = value.clamp(0, VALUE_MAX);
    *a.attr_max.get_mut(usize::from(attr))? = m;
    let rid = a.rid;
    send_attr(st, id, attr, &packets::stat_update_max(rid, attr, m));
    Some(m)
}

/// `UpdateReputation(A, value)`: players only, broadcast to the instance.
#[doc(alias = "UpdateReputation")]
pub fn update_reputation(st: &mut ZoneState, id: ActorId, value: i32) {
    let Some(a) = st.get_mut(id) else { return };
    if !a.is_player() {
        return;
    }
    a.reputation = value.clamp(-32768, 32767);
    let (rid, v) = (a.rid, a.reputation);
    st.send_packet_zone(&packets::stat_update_reputation(rid, v), None);
}

/// Set an actor's level and tell the zone, as `SetActorLevel` does (reference §9.32):
/// `P_XPUpdate "U"` (level) to the actor when it is a player, `"L"` (runtime id, level) to
/// every other player of the zone. XP is left as it is (the native clears it itself).
#[doc(alias = "SetActorLevel")]
pub fn set_level(st: &mut ZoneState, id: ActorId, level: u16) {
    let Some(a) = st.get_mut(id) else { return };
    a.level = level;
    let (rid, player) = (a.rid, a.is_player());
    if player {
        st.send_packet(id, &XpUpdate::Level { level });
    }
    st.send_packet_zone(
        &XpUpdate::LevelUp {
            runtime_id: rid,
            level,
        },
        Some(id),
    );
}

/// `/setattribute` and `/setattributemax`: find the attribute (bail before any write when
/// unknown), then important attributes go through the helpers and the others are written
/// directly with an `"A"`/`"M"` to the owner only. Health ≤ 0 queues a kill.
pub fn set_attribute_by_name(st: &mut ZoneState, id: ActorId, name: &str, value: i32, max: bool) {
    let player = st.get(id).and_then(|a| a.player);
    let Some(attr) = st.content.find_attribute(name) else {
        st.reject(player, Rejection::UnknownAttribute);
        return;
    };
    let important = st.content.fixed.is_important(attr);
    match (max, important) {
        (false, true) => update_attribute(st, id, attr, value),
        (true, true) => update_attribute_max(st, id, attr, value),
        (false, false) => {
            let Some(a) = st.get_mut(id) else { return };
            let v = value.clamp(VALUE_MIN, VALUE_MAX);
            if let Some(s) = a.attr.get_mut(usize::from(attr)) {
                *s = v;
            }
            let rid = a.rid;
            st.send_packet(id, &packets::stat_update_value(rid, attr, v));
        }
        (true, false) => {
            let Some(a) = st.get_mut(id) else { return };
            let v = value.clamp(0, VALUE_MAX);
            if let Some(s) = a.attr_max.get_mut(usize::from(attr)) {
                *s = v;
            }
            let rid = a.rid;
            st.send_packet(id, &packets::stat_update_max(rid, attr, v));
        }
    }
    let health = st.content.fixed.health;
    if Some(attr) == health && !max {
        let hp = st.get(id).and_then(|a| a.attr_value(health)).unwrap_or(1);
        if hp <= 0 {
            defer_kill(st, id, None);
        }
    }
}

/// `DeferKillActor`: queue a kill for after the actor loop (once per victim per tick).
#[doc(alias = "DeferKillActor")]
pub fn defer_kill(st: &mut ZoneState, victim: ActorId, killer: Option<ActorId>) {
    if st.get(victim).is_some_and(|a| a.dead) {
        return;
    }
    if !st.pending_kills.iter().any(|(v, _)| *v == victim) {
        st.pending_kills.push((victim, killer));
    }
}
