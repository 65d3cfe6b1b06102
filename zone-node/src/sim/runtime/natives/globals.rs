//! Globals and accounts (`glob`, `acct`): super globals (cluster-wide, owned by the
//! gateway's script store and copied to every zone), actor globals (saved with the
//! character), and the account natives.

use script::RStr;
use script::natives::Native;

use super::{Args, NResult, int, none, string};
use crate::sim::events::{AccountAction, ZoneOutput};
use crate::sim::instances::SUPERGLOBALS;
use crate::sim::runtime::host::ZoneHost;
use shared::internal::{MAX_ENV_NAME, MAX_ENV_VALUE, MAX_ENV_VARS, ScriptStoreOp};

/// Number of actor-global slots.
pub const ACTOR_GLOBALS: usize = 10;

fn slot(v: i32, n: usize) -> Option<usize> {
    usize::try_from(v).ok().filter(|&s| s < n)
}

/// Run a globals or account native.
pub fn call(h: &mut ZoneHost<'_>, n: Native, a: Args<'_>) -> NResult {
    match n {
        // Realm Crafter's process environment is the cluster's here: every zone's
        // `GetEnv` sees what any zone `SetEnv`s (through the gateway; not saved). The
        // servers' own environment is never shown to scripts (it holds secrets).
        Native::GetEnv => string(
            h.st.scripts
                .env
                .get(a.rstr(0).as_bytes())
                .map(|v| RStr::new(v))
                .unwrap_or_default(),
        ),
        Native::SetEnv => {
            let (name, value) = (a.rstr(0), a.rstr(1));
            let (name, value) = (name.as_bytes(), value.as_bytes());
            let known = h.st.scripts.env.contains_key(name);
            if name.is_empty()
                || name.len() > MAX_ENV_NAME
                || value.len() > MAX_ENV_VALUE
                || (!known && !value.is_empty() && h.st.scripts.env.len() >= MAX_ENV_VARS)
            {
                crate::sim::script_table::log(
                    h.st,
                    &h.cx.script,
                    format!(
                        "SetEnv refused: names of 1 to {MAX_ENV_NAME} bytes, values of at most {MAX_ENV_VALUE}, at most {MAX_ENV_VARS} variables"
                    ),
                );
                return none();
            }
            crate::sim::script_table::set_env(h.st, name.to_vec(), value.to_vec());
            h.st.outputs.push(ZoneOutput::ScriptStore {
                req: 0,
                op: ScriptStoreOp::SetEnv {
                    name: String::from_utf8_lossy(name).into_owned(),
                    value: value.to_vec(),
                },
            });
            none()
        }
        Native::SuperGlobal => {
            let v = slot(a.int(0), SUPERGLOBALS)
                .and_then(|s| h.st.scripts.superglobals.get(s).cloned())
                .unwrap_or_default();
            string(v)
        }
        Native::SetSuperGlobal => {
            if let Some(s) = slot(a.int(0), SUPERGLOBALS) {
                let v = a.rstr(1);
                if let Some(x) = h.st.scripts.superglobals.get_mut(s) {
                    *x = v.clone();
                }
                h.st.outputs.push(ZoneOutput::ScriptStore {
                    req: 0,
                    op: ScriptStoreOp::SetSuperGlobal {
                        slot: u8::try_from(s).unwrap_or(0),
                        value: v.as_bytes().to_vec(),
                    },
                });
            }
            none()
        }
        Native::ActorGlobal => {
            let v = slot(a.int(1), ACTOR_GLOBALS)
                .and_then(|s| {
                    let id = h.actor(a.int(0))?;
                    h.st.get(id)?.script_globals.get(s).cloned()
                })
                .map(|s| RStr::from_latin1(&s))
                .unwrap_or_default();
            string(v)
        }
        Native::SetActorGlobal => {
            if let (Some(s), Some(id)) = (slot(a.int(1), ACTOR_GLOBALS), h.actor(a.int(0)))
                && let Some(x) = h.st.get_mut(id)
            {
                if x.script_globals.len() < ACTOR_GLOBALS {
                    x.script_globals.resize(ACTOR_GLOBALS, String::new());
                }
                if let Some(g) = x.script_globals.get_mut(s) {
                    *g = a.text(2);
                }
            }
            none()
        }
        Native::PlayerAccountName | Native::PlayerAccountEmail => {
            let v = h
                .actor(a.int(0))
                .and_then(|id| h.st.get(id))
                .and_then(|x| x.player_data.as_ref())
                .map(|p| {
                    if n == Native::PlayerAccountName {
                        p.account.clone()
                    } else {
                        p.email.clone()
                    }
                })
                .unwrap_or_default();
            string(RStr::from_latin1(&v))
        }
        Native::PlayerIsGm | Native::PlayerIsDm => {
            let v = h
                .actor(a.int(0))
                .and_then(|id| h.st.get(id))
                .is_some_and(|x| x.is_player() && x.is_dm);
            int(i32::from(v))
        }
        Native::PlayerIsBanned => {
            let v = h
                .actor(a.int(0))
                .and_then(|id| h.st.get(id))
                .and_then(|x| x.player_data.as_ref())
                .is_some_and(|p| p.banned);
            int(i32::from(v))
        }
        Native::BanPlayer | Native::KickPlayer => {
            let player = h
                .actor(a.int(0))
                .and_then(|id| h.st.get_mut(id))
                .and_then(|x| {
                    if n == Native::BanPlayer
                        && let Some(p) = x.player_data.as_mut()
                    {
                        p.banned = true;
                    }
                    x.player
                });
            if let Some(player) = player {
                let action = if n == Native::BanPlayer {
                    AccountAction::Ban
                } else {
                    AccountAction::Kick
                };
                h.st.outputs.push(ZoneOutput::Account { player, action });
            }
            none()
        }
        _ => super::not_supported(n),
    }
}
