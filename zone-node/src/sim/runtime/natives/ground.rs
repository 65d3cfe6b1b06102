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
                Err(e) => Err(RuntimeError::Native {
                    native: "SpawnItem",
                    message: e.to_string(),
                }),
            }
        }
        _ => none(),
    }
}
