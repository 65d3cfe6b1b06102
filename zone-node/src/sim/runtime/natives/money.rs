//! Money (`gold`): `Gold`/`Money`, `ChangeGold`/`ChangeMoney`, `SetGold`/`SetMoney`, all
//! through [`crate::sim::items::money`] (one rule: floored at 0, capped at `i32::MAX`, the
//! client told the change applied). An invalid actor handle does nothing and returns 0.

use script::natives::Native;

use super::{Args, NResult, int, none};
use crate::sim::items::money;
use crate::sim::runtime::host::ZoneHost;

/// Run a money native.
pub fn call(h: &mut ZoneHost<'_>, n: Native, a: Args<'_>) -> NResult {
    let Some(id) = h.actor(a.int(0)) else {
        return none();
    };
    match n {
        Native::Gold | Native::Money => int(money::gold(h.st, id)),
        Native::ChangeGold | Native::ChangeMoney => {
            money::change_gold(h.st, id, i64::from(a.int(1)));
            none()
        }
        Native::SetGold | Native::SetMoney => {
            money::set_gold(h.st, id, i64::from(a.int(1)));
            none()
        }
        _ => none(),
    }
}
