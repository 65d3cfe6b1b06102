//! Items on the ground (`inv`): `SpawnItem`, through [`crate::sim::items::ground`].
//!
//! An unknown item or area, an amount outside `1..=32767`, or another AreaInstance than the
//! script's own (the sim has no call path to another instance yet) is a runtime error that
//! names the native and the reason, and nothing is spawned (`docs/items.md`).

use script::RuntimeError;
use script::natives::Native;

use super::{Args, NResult, none};
use crate::sim::items::ground;
use crate::sim::runtime::host::ZoneHost;

/// Run a ground-item native.
pub fn call(h: &mut ZoneHost<'_>, n: Native, a: Args<'_>) -> NResult {
    match n {
        Native::SpawnItem => {
            let spawned = ground::spawn_item(
                h.st,
                &a.text(0),
                a.int(1),
                &a.text(2),
                a.float(3),
                a.float(4),
                a.float(5),
                a.int(6),
            );
            match spawned {
                Ok(_) => none(),
                // Another instance: its zone puts it down (started if nobody runs it); the
                // script waits for that, as for a `Spawn` elsewhere.
                Err(ground::SpawnError::OtherInstance { area, instance, .. }) => {
                    let (Ok(instance), Ok(amount)) =
                        (u16::try_from(instance), u16::try_from(a.int(1)))
                    else {
                        return none();
                    };
                    let op = shared::internal::ScriptStoreOp::SpawnItem {
                        item: a.text(0),
                        amount,
                        area,
                        instance: instance.min(99),
                        x: a.float(3).to_bits(),
                        y: a.float(4).to_bits(),
                        z: a.float(5).to_bits(),
                    };
                    h.ask_int(op)
                }
                Err(e) => Err(RuntimeError::Native {
                    native: "SpawnItem",
                    message: e.to_string(),
                }),
            }
        }
        _ => none(),
    }
}
