//! Appearance (`app`): gender, face, hair, beard, clothes, the template swap and
//! animations, sent to the zone as `P_AppearanceUpdate` and `P_AnimateActor`. Script
//! values are 1-based and stored 0-based.
//!
//! Realm Crafter bugs fixed here (`docs/scripting.md`): `ActorBeard`/`ActorHair` return the
//! value (V0 always returned 0); `SetActorHair` sends the hair code `"H"` (V0 sent the
//! beard's `"D"`) and works for any gender (V0: only a male's).

use script::natives::Native;
use shared::proto::{AnimateActor, AppearanceUpdate};
use shared::wire::RcString;

use super::actor::send_zone;
use super::{Args, NResult, int, none};
use crate::sim::runtime::host::ZoneHost;
use crate::sim::state::{Actor, ActorId, ZoneState};

/// The template's genders byte: 0 both, 1 male only, 2 female only, 3 none.
fn genders(st: &ZoneState, a: &Actor) -> u8 {
    st.content.template(a.template).map_or(0, |t| t.genders)
}

/// The gender a template allows for a wished one (0 male, 1 female).
fn allowed_gender(genders: u8, wished: u8) -> u8 {
    match genders {
        1 | 3 => 0,
        2 => 1,
        _ => wished.min(1),
    }
}

fn u8_of(v: i32) -> u8 {
    u8::try_from(v.clamp(0, 255)).unwrap_or(0)
}

fn stored(v: i32) -> u8 {
    u8_of(v.saturating_sub(1))
}

/// Run an appearance native.
pub fn call(h: &mut ZoneHost<'_>, n: Native, a: Args<'_>) -> NResult {
    let me: Option<ActorId> = h.actor(a.int(0));
    let Some(id) = me else {
        return match n {
            Native::ActorGender
            | Native::ActorBeard
            | Native::ActorHair
            | Native::ActorFace
            | Native::ActorClothes => int(0),
            Native::ChangeActor
            | Native::SetActorGender
            | Native::SetActorBeard
            | Native::SetActorHair
            | Native::SetActorFace
            | Native::SetActorClothes
            | Native::AnimateActor => none(),
            _ => super::not_supported(n),
        };
    };
    let Some(x) = h.st.get(id) else { return none() };
    let rid = x.rid;
    match n {
        Native::ActorGender => {
            let v = match x.gender {
                0 if genders(h.st, x) == 3 => 3,
                0 => 1,
                _ => 2,
            };
            int(v)
        }
        Native::ActorBeard => int(i32::from(x.beard) + 1),
        Native::ActorHair => int(i32::from(x.hair) + 1),
        Native::ActorFace => int(i32::from(x.face) + 1),
        Native::ActorClothes => int(i32::from(x.body) + 1),
        Native::SetActorGender => {
            let mut g = stored(a.int(1));
            if g == 2 {
                g = 0;
            }
            let g = allowed_gender(genders(h.st, x), g);
            if let Some(x) = h.st.get_mut(id) {
                x.gender = g;
            }
            send_zone(
                h.st,
                &AppearanceUpdate::Gender {
                    runtime_id: rid,
                    gender: g,
                },
                None,
            );
            none()
        }
        Native::SetActorBeard => {
            // Beards are for male actors (gender 0), as in Realm Crafter.
            if x.gender == 0 {
                let v = stored(a.int(1));
                if let Some(x) = h.st.get_mut(id) {
                    x.beard = u16::from(v);
                }
                send_zone(
                    h.st,
                    &AppearanceUpdate::Beard {
                        runtime_id: rid,
                        beard: v,
                    },
                    None,
                );
            }
            none()
        }
        Native::SetActorHair => {
            let v = stored(a.int(1));
            if let Some(x) = h.st.get_mut(id) {
                x.hair = u16::from(v);
            }
            send_zone(
                h.st,
                &AppearanceUpdate::Hair {
                    runtime_id: rid,
                    hair: v,
                },
                None,
            );
            none()
        }
        Native::SetActorFace => {
            let v = stored(a.int(1));
            if let Some(x) = h.st.get_mut(id) {
                x.face = u16::from(v);
            }
            send_zone(
                h.st,
                &AppearanceUpdate::Face {
                    runtime_id: rid,
                    face: v,
                },
                None,
            );
            none()
        }
        Native::SetActorClothes => {
            let v = stored(a.int(1));
            if let Some(x) = h.st.get_mut(id) {
                x.body = u16::from(v);
            }
            send_zone(
                h.st,
                &AppearanceUpdate::Body {
                    runtime_id: rid,
                    body: v,
                },
                None,
            );
            none()
        }
        Native::ChangeActor => {
            let Some(t) = u16::try_from(a.int(1))
                .ok()
                .and_then(|t| h.st.content.template(t).cloned())
            else {
                let script = h.cx.script.clone();
                crate::sim::script_table::log(
                    h.st,
                    &script,
                    format!("ChangeActor: no actor template {}", a.int(1)),
                );
                return none();
            };
            if let Some(x) = h.st.get_mut(id) {
                x.template = t.id;
                x.environment = t.environment;
                x.aggressiveness = t.aggressiveness;
                x.aggressive_range = t.aggressive_range;
                x.radius = t.radius;
                x.rideable = t.rideable;
                x.xp_multiplier = t.xp_multiplier;
                x.default_damage_type = t.default_damage_type;
                x.gender = allowed_gender(t.genders, x.gender);
            }
            send_zone(
                h.st,
                &AppearanceUpdate::ChangeActor {
                    runtime_id: rid,
                    template_id: t.id,
                },
                None,
            );
            none()
        }
        Native::AnimateActor => {
            let speed = a.float(2);
            let p = AnimateActor {
                runtime_id: rid,
                fixed_speed: u8_of(a.int(3)),
                speed: if speed.is_finite() { speed } else { 0.0 },
                animation: RcString(a.rstr(1).as_bytes().to_vec()),
            };
            send_zone(h.st, &p, None);
            none()
        }
        _ => super::not_supported(n),
    }
}
