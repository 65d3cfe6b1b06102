//! `OpenTrading(actor, other)` (rsl-natives.md, inventory): a player trade invitation or an
//! NPC's shop, as Realm Crafter's `BVM_OPENTRADING`.

use script::natives::Native;

use super::{Args, NResult, none};
use crate::sim::items::{shop, trade};
use crate::sim::runtime::host::ZoneHost;

/// Run a trading native.
pub fn call(h: &mut ZoneHost<'_>, n: Native, a: Args<'_>) -> NResult {
    match n {
        Native::OpenTrading => open_trading(h, a),
        _ => none(),
    }
}

/// `OpenTrading(p, other)`: with another player, both are invited (each accepts with
/// `/trade`); with an NPC, its shop opens for `p`. Nothing happens when `p` is no player,
/// is already trading, or names itself (invalid handles do nothing, as every native).
#[doc(alias = "BVM_OPENTRADING")]
fn open_trading(h: &mut ZoneHost<'_>, a: Args<'_>) -> NResult {
    let (Some(p), Some(other)) = (h.actor(a.int(0)), h.actor(a.int(1))) else {
        return none();
    };
    let st = &mut *h.st;
    if st.get(other).is_some_and(|o| o.is_player()) {
        trade::invite_both(st, p, other);
    } else {
        shop::open_shop(st, p, other);
    }
    none()
}
