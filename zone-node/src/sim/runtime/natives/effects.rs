//! Actor effect natives (`eff`): `AddActorEffect`, `DeleteActorEffect`, `ActorHasEffect`
//! over [`crate::sim::effects`], and `CreateFloatingNumber` (`P_FloatingNumber` to every
//! player of the zone, the subject included; colour components outside `0..=255` are
//! clamped where Realm Crafter kept the low byte).
//!
//! Differences from Realm Crafter: an empty name, seconds outside
//! `0..=`[`effects::MAX_EFFECT_SECS`], an icon outside `0..=65535`, a non-empty unknown
//! attribute name or a 65th effect on one actor end the script with a clear error (and
//! count an `invalid` rejection) instead of being taken as they come. An empty attribute
//! name only creates or refreshes the effect, as an unknown one did in Realm Crafter.

use script::RuntimeError;
use script::natives::{self, Native};
use shared::proto::FloatingNumber;

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
    )
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
