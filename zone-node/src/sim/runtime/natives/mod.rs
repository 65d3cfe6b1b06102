//! The host natives: what a script can do to the world, one module per category of
//! `rsl-natives.md`. [`call`] dispatches on the native's category; each module answers its
//! own natives with Realm Crafter's semantics (invalid handles do nothing and return 0,
//! `""` or 0.0).
//!
//! The script UI natives (dialogs, input, progress bars, sounds, speech) are [`dialogs`],
//! the quest log [`quests`]. The ability natives are [`spells`]. The items natives are
//! [`items`] (inventory and item queries), [`money`] and `SpawnItem` ([`ground`]);
//! `OpenTrading` arrives with the trade code. The actor effect natives are [`effects`].

pub mod actor;
pub mod clock;
pub mod dialogs;
pub mod effects;
pub mod files;
pub mod globals;
pub mod ground;
pub mod items;
pub mod look;
pub mod money;
pub mod quests;
pub mod scr;
pub mod spells;
pub mod trading;
pub mod waits;
pub mod world;

use script::natives::{self, Cat, Kind, Native};
use script::vm::{Flow, NativeCx};
use script::{RStr, RuntimeError, Value};

use super::host::ZoneHost;
use crate::sim::state::ActorId;

/// A native's result.
pub type NResult = Result<Flow, RuntimeError>;

/// Positional arguments, already converted to the parameter types.
#[derive(Clone, Copy)]
pub struct Args<'a>(pub &'a [Value]);

impl Args<'_> {
    /// Argument `i` as an Int (0 if missing).
    pub fn int(&self, i: usize) -> i32 {
        self.0.get(i).map_or(0, Value::to_int)
    }
    /// Argument `i` as a Float.
    pub fn float(&self, i: usize) -> f32 {
        self.0.get(i).map_or(0.0, Value::to_float)
    }
    /// Argument `i` as bytes.
    pub fn rstr(&self, i: usize) -> RStr {
        self.0.get(i).map(Value::to_rstr).unwrap_or_default()
    }
    /// Argument `i` as text (Latin-1).
    pub fn text(&self, i: usize) -> String {
        self.rstr(i).to_latin1()
    }
}

/// Return an Int.
pub fn int(v: i32) -> NResult {
    Ok(Flow::Return(Value::Int(v)))
}

/// Return a Float.
pub fn float(v: f32) -> NResult {
    Ok(Flow::Return(Value::Float(v)))
}

/// Return a String.
pub fn string(v: RStr) -> NResult {
    Ok(Flow::Return(Value::Str(v)))
}

/// Return text.
pub fn text(v: &str) -> NResult {
    Ok(Flow::Return(Value::Str(RStr::from_latin1(v))))
}

/// Return nothing (0).
pub fn none() -> NResult {
    Ok(Flow::Return(Value::Int(0)))
}

/// The "not supported yet" error for a native of a later part of the port.
pub fn not_supported(n: Native) -> NResult {
    let sig = natives::sig(n);
    Err(RuntimeError::NotSupported {
        native: sig.map_or("?", |s| s.name),
        what: sig
            .and_then(|s| s.kind.later_area())
            .unwrap_or("not implemented by this server"),
    })
}

impl ZoneHost<'_> {
    /// The live actor a handle names, if it is in this zone.
    pub fn actor(&self, handle: i32) -> Option<ActorId> {
        self.st.actor_by_handle(handle)
    }
}

/// Run a host native.
pub fn call(h: &mut ZoneHost<'_>, n: Native, args: &[Value], cx: &mut NativeCx<'_>) -> NResult {
    let Some(sig) = natives::sig(n) else {
        return Err(RuntimeError::Internal(format!("{n:?} has no signature")));
    };
    // A query on a player elsewhere in the cluster: ask, and wait for the answer.
    if let Some(r) = crate::sim::runtime::remote::ask(h, n, args) {
        return r;
    }
    // The items natives (the table still marks the whole group `Items`).
    match n {
        Native::SpawnItem => return ground::call(h, n, Args(args)),
        _ if clock::handles(n) => return clock::call(h, n, args),
        _ if effects::handles(n) => return effects::call(h, n, Args(args)),
        _ if spells::handles(n) => return spells::call(h, n, Args(args)),
        _ if dialogs::handles(n) => return dialogs::call(h, n, Args(args)),
        _ if quests::handles(n) => return quests::call(h, n, Args(args)),
        _ if sig.cat == Cat::Gold => return money::call(h, n, Args(args)),
        _ if items::handles(n) => return items::call(h, n, Args(args)),
        _ => {}
    }
    if sig.kind.later_area().is_some() {
        return not_supported(n);
    }
    if sig.kind != Kind::Host {
        return Err(RuntimeError::Internal(format!(
            "{} is not a host native",
            sig.name
        )));
    }
    let a = Args(args);
    match n {
        Native::Rand | Native::Rnd | Native::MilliSecs | Native::GetRnid | Native::GetRuntimeId => {
            return scr::call(h, n, a, cx);
        }
        Native::ReadBytes | Native::WriteBytes => return files::bank_io(h, n, a, cx),
        Native::OpenTrading => return trading::call(h, n, a),
        Native::GetEnv | Native::SetEnv => return globals::call(h, n, a),
        _ => {}
    }
    match sig.cat {
        Cat::Scr | Cat::Math => scr::call(h, n, a, cx),
        Cat::Io => files::call(h, n, a),
        Cat::Glob | Cat::Acct => globals::call(h, n, a),
        Cat::Wld | Cat::Time => world::call(h, n, a),
        Cat::Qst if matches!(n, Native::WaitKill | Native::WaitItem | Native::WaitSpeak) => {
            waits::call(h, n, a)
        }
        _ => actor::call(h, n, a),
    }
}

#[cfg(test)]
mod tests {
    use script::natives::{self, Kind};
    use script::vm::NativeCx;
    use script::{RuntimeError, Ty, Value};

    use crate::sim::instances::InstanceCx;
    use crate::sim::runtime::host::ZoneHost;
    use crate::sim::testing::SimHarness;

    /// Every command of the native table is implemented: called with zeros (and with the
    /// player's handle as the first argument), none answers "not supported", none panics.
    #[test]
    fn every_host_command_is_implemented() {
        let mut h = SimHarness::new();
        let (_, pid) = h.spawn_player("Ann", 0.0, 0.0);
        let handle = h.sim.state().handle_of(pid);
        let mut missing = Vec::new();
        // Every command a host implements (the pure ones run in the script crate).
        let done = |s: &&natives::NativeSig| {
            matches!(
                s.kind,
                Kind::Host | Kind::Items | Kind::Spells | Kind::Dialogs
            )
        };
        for sig in natives::all().iter().filter(done) {
            for first in [0, handle] {
                let args: Vec<Value> = sig
                    .params
                    .iter()
                    .enumerate()
                    .map(|(i, p)| match (i, p.ty) {
                        (0, Ty::Int) => Value::Int(first),
                        (_, t) => t.zero(),
                    })
                    .collect();
                let mut cx = InstanceCx {
                    actor: handle,
                    next_file: 1,
                    ..InstanceCx::default()
                };
                let mut banks = natives::pure::Banks::default();
                let mut ncx = NativeCx {
                    banks: &mut banks,
                    file: "T.rsl",
                    line: 1,
                };
                let st = h.sim.state_mut();
                let mut host = ZoneHost::new(st, 1, &mut cx);
                if let Err(RuntimeError::NotSupported { native, .. }) =
                    super::call(&mut host, sig.native, &args, &mut ncx)
                {
                    missing.push(native);
                }
            }
        }
        missing.dedup();
        assert!(
            missing.is_empty(),
            "host commands not implemented: {missing:?}"
        );
    }
}
