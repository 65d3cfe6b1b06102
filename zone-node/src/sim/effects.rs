//! Actor effects (buffs and debuffs): Realm Crafter's `ActorEffect` (reference §6) with
//! its fixes: created or refreshed by eating and by `AddActorEffect`, ended by
//! `DeleteActorEffect` or on the zone clock, kept with their remaining time across a
//! handoff, a logout and a checkpoint.
//!
//! * An effect is `{handle, name, 40 deltas, end time (0 = permanent), icon}`, unique per
//!   owner by name (case-insensitive); an owner has at most [`MAX_EFFECTS`].
//! * Its deltas are part of the owner's attributes while it lives. Applying and taking
//!   them back goes through [`stats::update_attribute`] (the right audience, clamped to
//!   `[0, Max]`), after the owner's `P_ActorEffect` `"E"`/`"R"`, so the absolute
//!   `P_StatUpdate` that follows corrects the client's own `+= delta`.
//! * Health reaching 0 through an effect kills, through the normal deferred kill.
//! * Expiry runs in the housekeeping phase and visits only the owners whose effects' end
//!   time has come ([`ZoneState::effect_ends`], a heap of `(end time, owner)`), never the
//!   whole zone: with many timed effects one ends in almost every tick.

use shared::proto::ActorEffect;
use thiserror::Error;

use super::events::ATTRIBUTE_COUNT;
use std::cmp::Reverse;

use super::state::{ActiveEffect, ActorId, ChainKind, ZoneState};
use super::stats;

/// The most effects one actor may carry.
pub const MAX_EFFECTS: usize = 64;
/// The longest timed effect, in seconds (30 days).
pub const MAX_EFFECT_SECS: i64 = 30 * 86_400;
/// The longest effect name kept, in bytes.
pub const MAX_EFFECT_NAME: usize = 200;

/// Why an effect was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum EffectError {
    /// The actor is not in this zone.
    #[error("the actor does not exist")]
    NoActor,
    /// An empty (or blank) name.
    #[error("an actor effect needs a name")]
    EmptyName,
    /// A name longer than [`MAX_EFFECT_NAME`].
    #[error("actor effect name is too long")]
    NameTooLong,
    /// Seconds below 0 or above [`MAX_EFFECT_SECS`].
    #[error("actor effect seconds {0} out of range 0..={MAX_EFFECT_SECS}")]
    BadSeconds(i64),
    /// An attribute name the project does not have.
    #[error("unknown attribute {0:?}")]
    UnknownAttribute(String),
    /// An icon outside `0..=65535`.
    #[error("icon texture id {0} out of range")]
    BadIcon(i64),
    /// The actor already has [`MAX_EFFECTS`] effects.
    #[error("the actor already has {MAX_EFFECTS} effects")]
    TooMany,
}

fn find(effects: &[ActiveEffect], name: &str) -> Option<usize> {
    effects
        .iter()
        .position(|e| e.name.eq_ignore_ascii_case(name))
}

/// Whether `id` has an effect called `name` (case-insensitive).
#[doc(alias = "ActorHasEffect")]
pub fn has_effect(st: &ZoneState, id: ActorId, name: &str) -> bool {
    st.get(id).is_some_and(|a| find(&a.effects, name).is_some())
}

/// Change `id`'s attribute `attr` by `diff`, clamped to `[0, Max]` through
/// [`stats::update_attribute`]; Health at 0 queues a kill.
fn shift_attribute(st: &mut ZoneState, id: ActorId, attr: u8, diff: i32) {
    if diff == 0 {
        return;
    }
    let Some(cur) = st.get(id).and_then(|a| a.attr_value(Some(attr))) else {
        return;
    };
    let new = cur.saturating_add(diff).max(0);
    stats::update_attribute(st, id, attr, new);
    let health = st.content.fixed.health;
    if Some(attr) == health && st.get(id).and_then(|a| a.attr_value(health)) == Some(0) {
        stats::defer_kill(st, id, None);
    }
}

/// Whether [`add_effect`] would accept `name` for `secs` seconds on `id`, without changing
/// anything: the name and the seconds are valid, the actor is here, and it either has an
/// effect of that name already (a refresh) or fewer than [`MAX_EFFECTS`]. Eating asks this
/// before it consumes anything or runs the item's script.
pub fn check_add(st: &ZoneState, id: ActorId, name: &str, secs: i64) -> Result<(), EffectError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(EffectError::EmptyName);
    }
    if name.len() > MAX_EFFECT_NAME {
        return Err(EffectError::NameTooLong);
    }
    if !(0..=MAX_EFFECT_SECS).contains(&secs) {
        return Err(EffectError::BadSeconds(secs));
    }
    let a = st.get(id).ok_or(EffectError::NoActor)?;
    if find(&a.effects, name).is_none() && a.effects.len() >= MAX_EFFECTS {
        return Err(EffectError::TooMany);
    }
    Ok(())
}

/// `AddActorEffect` / eating: create `name` on `id` (sending `"A"` to a player owner) or
/// refresh it, restart its timer at `secs` seconds (0 = permanent), and set each
/// `(attribute, value)` of `deltas` as the effect's delta for it (`"E"` with the change,
/// then the attribute moves by it). `icon` replaces the stored icon.
#[doc(alias = "AddActorEffect")]
pub fn add_effect(
    st: &mut ZoneState,
    id: ActorId,
    name: &str,
    deltas: &[(u8, i32)],
    secs: i64,
    icon: u16,
) -> Result<(), EffectError> {
    check_add(st, id, name, secs)?;
    let name = name.trim();
    let now = st.now_ms;
    let expires_ms = match u64::try_from(secs) {
        Ok(0) | Err(_) => 0,
        Ok(s) => now.saturating_add(s.saturating_mul(1000)),
    };
    let a = st.get_mut(id).ok_or(EffectError::NoActor)?;
    let is_player = a.is_player();
    let (idx, created) = match find(&a.effects, name) {
        Some(i) => (i, false),
        None => {
            if a.effects.len() >= MAX_EFFECTS {
                return Err(EffectError::TooMany);
            }
            let handle = a
                .effects
                .iter()
                .map(|e| e.handle)
                .max()
                .unwrap_or(0)
                .wrapping_add(1)
                .max(1);
            a.effects.push(ActiveEffect {
                handle,
                name: name.to_owned(),
                deltas: [0; ATTRIBUTE_COUNT],
                expires_ms,
                icon,
            });
            (a.effects.len() - 1, true)
        }
    };
    let Some(e) = a.effects.get_mut(idx) else {
        return Err(EffectError::NoActor);
    };
    e.expires_ms = expires_ms;
    e.icon = icon;
    let (handle, stored_name) = (e.handle, e.name.clone());
    let mut diffs = Vec::with_capacity(deltas.len());
    for &(attr, value) in deltas {
        let Some(slot) = e.deltas.get_mut(usize::from(attr)) else {
            continue;
        };
        let diff = value.saturating_sub(*slot);
        *slot = value;
        diffs.push((attr, diff));
    }
    schedule(st, id, expires_ms);
    if created && is_player {
        let pkt = ActorEffect::Added {
            handle,
            icon,
            effect_name: shared::wire::RcString::from_latin1(&stored_name)
                .unwrap_or_else(|| stored_name.as_str().into()),
        };
        st.send_packet(id, &pkt);
    }
    for (attr, diff) in diffs {
        if diff == 0 {
            continue;
        }
        if is_player {
            st.send_packet(id, &ActorEffect::Delta { attr, delta: diff });
        }
        shift_attribute(st, id, attr, diff);
    }
    Ok(())
}

/// Take effect `idx` off `id`: `"R"` to a player owner, then its deltas back.
fn remove_at(st: &mut ZoneState, id: ActorId, idx: usize) {
    let Some(a) = st.get_mut(id) else { return };
    if idx >= a.effects.len() {
        return;
    }
    let e = a.effects.remove(idx);
    if a.is_player() {
        let pkt = ActorEffect::Removed {
            handle: e.handle,
            deltas: e.deltas.to_vec(),
        };
        st.send_packet(id, &pkt);
    }
    for (i, d) in e.deltas.iter().enumerate() {
        if let Ok(attr) = u8::try_from(i) {
            shift_attribute(st, id, attr, d.saturating_neg());
        }
    }
}

/// `DeleteActorEffect`: end `name` on `id` now. Returns whether there was one.
#[doc(alias = "DeleteActorEffect")]
pub fn delete_effect(st: &mut ZoneState, id: ActorId, name: &str) -> bool {
    let Some(idx) = st.get(id).and_then(|a| find(&a.effects, name)) else {
        return false;
    };
    remove_at(st, id, idx);
    true
}

/// `"A"` for every effect `id` owns (the tail of `P_StartGame`, reference §9.12): the
/// deltas are not re-sent, the stats the client has already include them.
#[doc(alias = "P_StartGame")]
pub fn announce(st: &mut ZoneState, id: ActorId) {
    let Some(a) = st.get(id) else { return };
    let pkts: Vec<ActorEffect> = a
        .effects
        .iter()
        .map(|e| ActorEffect::Added {
            handle: e.handle,
            icon: e.icon,
            effect_name: shared::wire::RcString::from_latin1(&e.name)
                .unwrap_or_else(|| e.name.as_str().into()),
        })
        .collect();
    for p in &pkts {
        st.send_packet(id, p);
    }
}

/// Give an actor that just arrived (login, handoff, checkpoint) its saved effects, their
/// remaining time restarting now (at most [`MAX_EFFECTS`]; the saved attributes already
/// include the deltas).
pub fn restore(st: &mut ZoneState, id: ActorId, saved: &[shared::internal::ActorEffectDto]) {
    let now = st.now_ms;
    let Some(a) = st.get_mut(id) else { return };
    a.effects = saved
        .iter()
        .take(MAX_EFFECTS)
        .map(|d| ActiveEffect::from_dto(d, now))
        .collect();
    note_arrival(st, id);
}

/// Note the end times of `id`'s timed effects (after it arrives with effects).
fn note_arrival(st: &mut ZoneState, id: ActorId) {
    let ends: Vec<u64> = st.get(id).map_or_else(Vec::new, |a| {
        a.effects.iter().map(|e| e.expires_ms).collect()
    });
    for t in ends {
        schedule(st, id, t);
    }
}

/// Remember that an effect of `id` ends at `expires_ms` (0: permanent, nothing to do).
/// When stale entries (refreshed effects) have piled up to more than twice the entries
/// of the last rebuild, rebuild the heap from the actors: amortised O(1) per call.
fn schedule(st: &mut ZoneState, id: ActorId, expires_ms: u64) {
    if expires_ms == 0 {
        return;
    }
    let ends = &mut st.effect_ends;
    ends.heap.push(Reverse((expires_ms, id)));
    if ends.heap.len() > ends.floor.saturating_mul(2).saturating_add(1024) {
        rebuild(st);
    }
}

/// The heap again, one entry per timed effect of the zone's actors.
fn rebuild(st: &mut ZoneState) {
    let mut order = Vec::new();
    st.chain_collect(st.zone, ChainKind::Zone, &mut order);
    let mut heap = Vec::new();
    for idx in order {
        let Some(a) = st.at(idx) else { continue };
        for e in &a.effects {
            if e.expires_ms != 0 {
                heap.push(Reverse((e.expires_ms, a.id)));
            }
        }
    }
    st.effect_ends.floor = heap.len();
    st.effect_ends.heap = heap.into();
}

/// The housekeeping phase: end every effect whose time has come (RC `UpdateActorEffects`,
/// GS:538-568), visiting only the owners the end-time heap names. An entry whose effect
/// was refreshed, deleted or whose owner left finds nothing due and is dropped.
pub(crate) fn expire(st: &mut ZoneState) {
    let now = st.now_ms;
    while let Some(&Reverse((t, id))) = st.effect_ends.heap.peek() {
        if t > now {
            break;
        }
        st.effect_ends.heap.pop();
        while let Some(i) = st.get(id).and_then(|a| {
            a.effects
                .iter()
                .position(|e| e.expires_ms != 0 && e.expires_ms <= now)
        }) {
            remove_at(st, id, i);
        }
    }
}
