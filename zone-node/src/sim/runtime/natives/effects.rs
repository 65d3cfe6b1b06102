//! Actor effect natives (`eff`): `AddActorEffect`, `DeleteActorEffect`, `ActorHasEffect`
//! over [`crate::sim::effects`], `CreateFloatingNumber` (`P_FloatingNumber` to every
//! player of the zone, the subject included; colour components outside `0..=255` are
//! clamped where Realm Crafter kept the low byte) and `CreateEmitter` (`P_CreateEmitter`).
//!
//! Differences from Realm Crafter: an empty name, seconds outside
//! `0..=`[`effects::MAX_EFFECT_SECS`], an icon outside `0..=65535`, a non-empty unknown
//! attribute name or a 65th effect on one actor end the script with a clear error (and
//! count an `invalid` rejection) instead of being taken as they come. An empty attribute
//! name only creates or refreshes the effect, as an unknown one did in Realm Crafter.

use script::RuntimeError;
use script::natives::{self, Native};
use shared::proto::{CreateEmitter, FloatingNumber};
use shared::wire::RcString;

use super::{Args, NResult, int, none};
use crate::sim::effects::{self, EffectError};
use crate::sim::events::Rejection;
use crate::sim::runtime::host::ZoneHost;

/// Whether `n` is one of this module's natives.
pub fn handles(n: Native) -> bool {
    matches!(
        n,
        Native::AddActorEffect
            | Native::DeleteActorEffect
            | Native::ActorHasEffect
            | Native::CreateFloatingNumber
            | Native::CreateEmitter
    )
}

/// `CreateEmitter(actor, emitter$, texID, ms, offX, offY, offZ, showTo)`: `P_CreateEmitter`
/// to every player of this AreaInstance, or only to `showTo` when that names a player
/// here. An invalid actor places the emitter at the offset (RuntimeID 0), as Realm Crafter
/// did; a texture outside `0..=65535` or a negative lifetime is clamped, and a non-finite
/// offset is 0.
fn create_emitter(h: &mut ZoneHost<'_>, a: Args<'_>) -> NResult {
    let runtime_id = h
        .actor(a.int(0))
        .and_then(|id| h.st.get(id))
        .map_or(0, |x| x.rid);
    let f = |i: usize| {
        let v = a.float(i);
        if v.is_finite() { v } else { 0.0 }
    };
    let p = CreateEmitter {
        texture: u16::try_from(a.int(2).clamp(0, i32::from(u16::MAX))).unwrap_or(0),
        lifetime_ms: u32::try_from(a.int(3).max(0)).unwrap_or(0),
        runtime_id,
        offset_x: f(4),
        offset_y: f(5),
        offset_z: f(6),
        emitter: RcString(a.rstr(1).as_bytes().to_vec()),
    };
    match h.actor(a.int(7)) {
        Some(to) if h.st.get(to).is_some_and(|x| x.is_player()) => h.st.send_packet(to, &p),
        _ => h.st.send_packet_zone(&p, None),
    }
    none()
}

fn refuse(h: &mut ZoneHost<'_>, n: Native, e: &EffectError) -> NResult {
    h.st.reject(None, Rejection::Invalid);
    Err(RuntimeError::Native {
        native: natives::sig(n).map_or("?", |s| s.name),
        message: e.to_string(),
    })
}

/// Run one of the effect natives (invalid actor handles do nothing and return 0).
pub fn call(h: &mut ZoneHost<'_>, n: Native, a: Args<'_>) -> NResult {
    if n == Native::CreateEmitter {
        return create_emitter(h, a);
    }
    let Some(id) = h.actor(a.int(0)) else {
        return none();
    };
    if n == Native::CreateFloatingNumber {
        let Some(runtime_id) = h.st.get(id).map(|x| x.rid) else {
            return none();
        };
        let c = |i: usize| u8::try_from(a.int(i).clamp(0, 255)).unwrap_or(u8::MAX);
        let p = FloatingNumber {
            runtime_id,
            amount: a.int(1),
            r: c(2),
            g: c(3),
            b: c(4),
        };
        h.st.send_packet_zone(&p, None);
        return none();
    }
    let name = a.text(1);
    match n {
        Native::AddActorEffect => {
            let attr_name = a.text(2);
            let deltas = if attr_name.trim().is_empty() {
                Vec::new()
            } else {
                match h.st.content.find_attribute(&attr_name) {
                    Some(attr) => vec![(attr, a.int(3))],
                    None => return refuse(h, n, &EffectError::UnknownAttribute(attr_name)),
                }
            };
            let icon = a.int(5);
            let Ok(icon) = u16::try_from(icon) else {
                return refuse(h, n, &EffectError::BadIcon(i64::from(icon)));
            };
            match effects::add_effect(h.st, id, &name, &deltas, i64::from(a.int(4)), icon) {
                Ok(()) => none(),
                Err(e) => refuse(h, n, &e),
            }
        }
        Native::DeleteActorEffect => {
            effects::delete_effect(h.st, id, &name);
            none()
        }
        Native::ActorHasEffect => int(i32::from(effects::has_effect(h.st, id, &name))),
        _ => none(),
    }
}
