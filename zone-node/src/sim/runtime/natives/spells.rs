//! Ability natives (`spl`): `AddAbility`, `DeleteAbility`, `AbilityKnown`,
//! `AbilityMemorised`, `AbilityLevel`, `SetAbilityLevel` over [`crate::sim::spells`].
//!
//! Invalid actor handles do nothing and return 0, as in Realm Crafter, and so do the
//! queries and `DeleteAbility` for a name no spell has. Differences: `AddAbility` or
//! `SetAbilityLevel` with a name no spell of the world has, a level outside `1..=65535`
//! (`AddAbility` still takes 0 and below as 1), or a 1001st ability end the script with a
//! clear error and count an `invalid` rejection instead of doing nothing.

use script::RuntimeError;
use script::natives::{self, Native};

use super::{Args, NResult, int, none};
use crate::sim::events::Rejection;
use crate::sim::runtime::host::ZoneHost;
use crate::sim::spells::{self, SpellError};

/// Whether `n` is one of this module's natives.
pub fn handles(n: Native) -> bool {
    matches!(
        n,
        Native::AddAbility
            | Native::DeleteAbility
            | Native::AbilityKnown
            | Native::AbilityMemorised
            | Native::AbilityLevel
            | Native::SetAbilityLevel
    )
}

fn refuse(h: &mut ZoneHost<'_>, n: Native, e: &SpellError) -> NResult {
    h.st.reject(None, Rejection::Invalid);
    Err(RuntimeError::Native {
        native: natives::sig(n).map_or("?", |s| s.name),
        message: e.to_string(),
    })
}

/// Run one of the ability natives.
pub fn call(h: &mut ZoneHost<'_>, n: Native, a: Args<'_>) -> NResult {
    let Some(id) = h.actor(a.int(0)) else {
        return none();
    };
    let spell = match spells::spell_id(h.st, &a.text(1)) {
        Ok(s) => s,
        // Asking about, or forgetting, a spell no one can know answers 0.
        Err(_) if !matches!(n, Native::AddAbility | Native::SetAbilityLevel) => return none(),
        Err(e) => return refuse(h, n, &e),
    };
    match n {
        Native::AddAbility => match spells::learn(h.st, id, spell, i64::from(a.int(2))) {
            Ok(_) => none(),
            Err(e) => refuse(h, n, &e),
        },
        Native::DeleteAbility => {
            spells::forget(h.st, id, spell);
            none()
        }
        Native::AbilityKnown => int(i32::from(spells::known(h.st, id, spell).is_some())),
        Native::AbilityMemorised => int(i32::from(spells::is_memorised(h.st, id, spell))),
        Native::AbilityLevel => {
            int(spells::known(h.st, id, spell).map_or(0, |k| i32::from(k.level)))
        }
        Native::SetAbilityLevel => match spells::set_level(h.st, id, spell, i64::from(a.int(2))) {
            Ok(_) => none(),
            Err(e) => refuse(h, n, &e),
        },
        _ => none(),
    }
}
