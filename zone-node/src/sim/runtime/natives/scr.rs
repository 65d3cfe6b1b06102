//! Script control and context (`scr`, and the math natives that need the zone: `Rand`,
//! `Rnd`, `MilliSecs`): `Actor`, `ContextActor`, `Parameter`, `Persistent`,
//! `ThreadExecute`, logging, `End`, `RuntimeError`, `DoEvents` and Realm Crafter's
//! low-level wait helpers (`SetWaiting`, `GetWaitResult`, ...).

use script::natives::Native;
use script::natives::pure::safe_split;
use script::vm::{Flow, NativeCx};
use script::{RStr, RuntimeError, Value};

use super::{Args, NResult, int, none, string};
use crate::sim::events::ZoneOutput;
use crate::sim::instances::Wait;
use crate::sim::runtime::host::ZoneHost;
use crate::sim::script_table as table;
use shared::internal::ScriptStoreOp;

/// `MilliSecs()`: the zone's clock as a wrapping i32 (deterministic: the tick's `now_ms`).
pub fn millisecs(now_ms: u64) -> i32 {
    now_ms as u32 as i32
}

/// Run a script-control native.
pub fn call(h: &mut ZoneHost<'_>, n: Native, a: Args<'_>, cx: &mut NativeCx<'_>) -> NResult {
    match n {
        Native::Actor => int(h.cx.actor),
        Native::ContextActor => int(h.cx.context),
        Native::Parameter => string(safe_split(h.cx.param.as_bytes(), a.int(0))),
        Native::Persistent => {
            h.cx.persistent = a.int(0) != 0;
            none()
        }
        Native::ThreadExecute => {
            table::queue(h.st, &a.text(0), &a.text(1), a.int(2), a.int(3), a.rstr(4));
            none()
        }
        Native::ScriptLog => {
            let msg = format!("Script log: {}", a.text(0));
            table::log(h.st, &h.cx.script, msg);
            none()
        }
        Native::Print | Native::Write | Native::DebugLog | Native::HostDebugLog => {
            let msg = format!("{}:{}: {}", cx.file, cx.line, a.text(0));
            table::log(h.st, &h.cx.script, msg);
            none()
        }
        Native::FlushDebugLog => none(),
        Native::Goto | Native::GotoIf => {
            let msg = format!(
                "{}:{}: The GoTo command is no longer supported",
                cx.file, cx.line
            );
            table::log(h.st, &h.cx.script, msg);
            none()
        }
        Native::End => Err(RuntimeError::End),
        Native::RuntimeError => Err(RuntimeError::Raised(a.text(0))),
        Native::RefreshScripts => {
            // Ask the cluster to reload the world's scripts (the gateway compiles and
            // checks them once, then every node swaps them in). Unlike Realm Crafter, which
            // killed every running script, nothing running stops: each finishes on the
            // code it started with, the caller too; new runs use the new code.
            h.st.outputs.push(ZoneOutput::ScriptStore {
                req: 0,
                op: ScriptStoreOp::RefreshScripts,
            });
            table::log(
                h.st,
                &h.cx.script,
                "RefreshScripts: the cluster reloads the world's scripts; running scripts finish on their code".into(),
            );
            none()
        }
        Native::SaveState => {
            crate::sim::checkpoint::checkpoint_all(h.st);
            none()
        }
        Native::Rand => {
            let (lo, hi) = (a.int(0), a.int(1));
            let (lo, hi) = if lo > hi { (hi, lo) } else { (lo, hi) };
            int(h.st.rng.rand_range(lo, hi))
        }
        Native::Rnd => {
            let v = h.st.rng.rnd(a.float(0), a.float(1));
            Ok(Flow::Return(Value::Float(v)))
        }
        Native::MilliSecs => int(millisecs(h.st.now_ms)),
        Native::DoEvents => {
            let ms = a.int(0);
            if ms <= 0 {
                return none();
            }
            let until_ms = h.st.now_ms + u64::from(ms.unsigned_abs());
            h.suspend(Wait::Sleep { until_ms })
        }
        Native::SetWaiting => {
            h.cx.waiting = a.int(0);
            h.cx.mailbox = RStr::EMPTY;
            if h.cx.waiting == 0 {
                none()
            } else {
                Ok(Flow::ReturnThenPark(Value::Int(0)))
            }
        }
        Native::SetWaitStart => {
            h.cx.wait_start = a.int(0);
            none()
        }
        Native::SetWaitTime => {
            h.cx.wait_time = a.int(0);
            none()
        }
        Native::SetWaitInfo => {
            h.cx.wait_hour = a.int(0);
            h.cx.wait_minute = a.int(1);
            none()
        }
        Native::SetWaitKill | Native::SetWaitItem | Native::SetWaitSpeak => {
            match super::waits::record(h, n, a) {
                Some(w) => h.cx.record = Some(w),
                None => {
                    let msg = format!(
                        "{}:{}: the wait record was refused (invalid actor or template)",
                        cx.file, cx.line
                    );
                    table::log(h.st, &h.cx.script, msg);
                }
            }
            none()
        }
        Native::GetWaitResult => string(h.cx.mailbox.clone()),
        Native::GetRnid => {
            let v = match h.actor(a.int(0)).and_then(|id| h.st.get(id)) {
                Some(x) if x.is_player() => i32::from(x.rid),
                Some(_) => -1,
                None => 0,
            };
            int(v)
        }
        Native::GetRuntimeId => {
            let v = h
                .actor(a.int(0))
                .and_then(|id| h.st.get(id))
                .map_or(0, |x| i32::from(x.rid));
            int(v)
        }
        _ => super::not_supported(n),
    }
}
