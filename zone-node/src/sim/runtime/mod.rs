//! The script phase: Realm Crafter's `UpdateScripts` as phase 6 of
//! [`ZoneSim::tick`](super::ZoneSim::tick), the host a running instance talks to, and the
//! natives (the command set) that act on the zone. It sits above the game rules, which it
//! calls; the instances themselves and what changes them from outside are the script
//! table's ([`super::script_table`], below the rules).
//!
//! # The scripts phase
//! 1. Start requests queued since the last phase (`ThreadScript`: engine events,
//!    `ThreadExecute`) become instances, in order.
//! 2. Due `DoEvents` sleepers wake (a heap: a sleeping instance costs nothing until due);
//!    `WaitItem`s are checked once a second.
//! 3. Every runnable instance runs, in creation order, for at most
//!    [`ZoneConfig::script_budget`](super::ZoneConfig::script_budget) units (loop back
//!    edges and calls), and the phase for at most `script_tick_budget` in all. An instance
//!    stopped by its budget continues at the next phase; one that overruns
//!    `script_max_overruns` phases in a row is ended as a runaway (counted, reported).
//! 4. Warps made by the scripts that ran are applied (a script that warps its own player
//!    waits until the handoff settles, then continues wherever the player is).
//!
//! Runtime errors end the instance with a [`ZoneOutput::ScriptError`](super::ZoneOutput)
//! naming file and line; the zone plays on.

pub mod host;
pub mod natives;
pub mod remote;

use std::cmp::Reverse;

use script::Value;
use script::vm::Exit;

use super::events::ScriptErrorKind;
use super::instances::{Handle, InstanceId, Wait};
use super::script_table::{create, end, index_wait, log, report_instance, wake};
use super::state::ZoneState;

/// The scripts phase.
#[doc(alias = "UpdateScripts")]
pub(crate) fn phase(st: &mut ZoneState) {
    // 1. Queued starts.
    st.scripts.queued_keys.clear();
    if !st.scripts.queue.is_empty() {
        let queue = std::mem::take(&mut st.scripts.queue);
        st.scripts.queued_by_actor.clear();
        for req in queue {
            create(st, req);
        }
    }
    // 2. Due sleepers; item waits once a second.
    let now = st.now_ms;
    while let Some(&Reverse((due, id))) = st.scripts.sleepers.peek() {
        if due > now {
            break;
        }
        st.scripts.sleepers.pop();
        let current = st.scripts.instances.get(&id).map(|i| &i.wait);
        if matches!(current, Some(Wait::Reply { .. } | Wait::Mailbox))
            && crate::sim::dialogs::times_out_at(st, id, due)
        {
            crate::sim::dialogs::time_out(st, id);
            continue;
        }
        let fires = match current {
            Some(Wait::Sleep { until_ms }) => *until_ms == due,
            Some(Wait::Mailbox) => st
                .scripts
                .instances
                .get(&id)
                .is_some_and(|i| i.cx.waiting == 2),
            _ => false,
        };
        if fires {
            wake(st, id, Value::Int(0));
        }
    }
    if !st.scripts.item_waiters.is_empty()
        && now.saturating_sub(st.scripts.last_item_check_ms) >= 1000
    {
        st.scripts.last_item_check_ms = now;
        natives::waits::check_items(st);
    }
    if !st.scripts.time_waiters.is_empty() {
        crate::sim::clock::check_waiters(st);
    }
    // 3. Run.
    st.scripts.between_budget = st.cfg.script_tick_budget;
    if st.scripts.runnable.is_empty() {
        return;
    }
    let mut total = st.cfg.script_tick_budget;
    let ids: Vec<InstanceId> = st.scripts.runnable.iter().copied().collect();
    for id in ids {
        if total == 0 {
            break;
        }
        run_one(st, id, &mut total);
    }
}

/// Run the instances `ids` that a store answer made ready between ticks, out of the
/// between-ticks budget (`Scripts::between_budget`, refilled to `script_tick_budget` at
/// each scripts phase); one left unrun waits for the next scripts phase as before.
pub(crate) fn run_answered(st: &mut ZoneState, ids: &[InstanceId]) {
    for &id in ids {
        if st.scripts.between_budget == 0 {
            return;
        }
        if st.scripts.runnable.contains(&id) {
            let mut total = st.scripts.between_budget;
            run_one(st, id, &mut total);
            st.scripts.between_budget = total;
        }
    }
}

/// Whether an instance's owner is frozen in a handoff (then it does not run).
fn owner_frozen(st: &ZoneState, actor: Handle) -> bool {
    st.actor_by_handle(actor)
        .and_then(|id| st.get(id))
        .is_some_and(|a| a.frozen())
}

/// Run one instance for its budget.
pub(crate) fn run_one(st: &mut ZoneState, id: InstanceId, total: &mut u64) {
    let Some(peek) = st.scripts.instances.get(&id) else {
        st.scripts.runnable.remove(&id);
        return;
    };
    if peek.wait != Wait::Ready {
        st.scripts.runnable.remove(&id);
        return;
    }
    if owner_frozen(st, peek.cx.actor) {
        return;
    }
    let Some(mut inst) = st.scripts.instances.remove(&id) else {
        return;
    };
    // Its own scripts: a reload since it started does not change its code.
    let set = inst.code.clone();
    let per = st.cfg.script_budget.max(1);
    let given = per.min(*total);
    let mut budget = given;
    let (exit, wait, end_self) = {
        let mut host = host::ZoneHost::new(st, id, &mut inst.cx);
        let exit = inst.vm.run(&set, &mut host, &mut budget);
        (exit, host.wait.take(), host.end_self)
    };
    *total = total.saturating_sub(given - budget);
    st.scripts.instances.insert(id, inst);
    if end_self {
        end(st, id);
        apply_warps(st);
        return;
    }
    match exit {
        Exit::Finished(_) => {
            st.scripts.stats.finished += 1;
            end(st, id);
        }
        Exit::Suspended => {
            let wait = wait.unwrap_or(Wait::Ready);
            st.scripts.runnable.remove(&id);
            if let Some(i) = st.scripts.instances.get_mut(&id) {
                i.overruns = 0;
                i.wait = wait.clone();
            }
            if wait == Wait::Ready {
                // A native that suspended without saying why: continue at once next time.
                if let Some(i) = st.scripts.instances.get_mut(&id) {
                    i.vm.resume(Value::Int(0));
                }
            }
            index_wait(st, id, &wait);
        }
        Exit::Parked => {
            st.scripts.runnable.remove(&id);
            let (wait, due) = natives::waits::parked(st, id);
            if let Some(i) = st.scripts.instances.get_mut(&id) {
                i.overruns = 0;
                i.wait = wait.clone();
            }
            index_wait(st, id, &wait);
            if let Some(due) = due {
                st.scripts.sleepers.push(Reverse((due, id)));
            }
        }
        Exit::Budget => {
            st.scripts.stats.budget_pauses += 1;
            let max = st.cfg.script_max_overruns;
            let over = st.scripts.instances.get_mut(&id).map(|i| {
                // Stopped because the phase's total ran out: not the script's fault.
                if given == per {
                    i.overruns += 1;
                }
                i.overruns
            });
            if over.is_some_and(|o| o > max) {
                let (file, line) = st
                    .scripts
                    .instances
                    .get(&id)
                    .map(|i| i.vm.location(&set))
                    .unwrap_or_default();
                let msg = format!(
                    "ended: it ran past its budget of {per} units in {max} scripts phases in a row (a loop with no DoEvents?)"
                );
                report_instance(st, id, file, line, &msg, ScriptErrorKind::Runaway);
                end(st, id);
            }
        }
        Exit::Error { error, file, line } => {
            report_instance(
                st,
                id,
                file,
                line,
                &error.to_string(),
                ScriptErrorKind::Runtime,
            );
            end(st, id);
        }
    }
    apply_warps(st);
}

/// Apply the warps the last script asked for (`Warp` of its own player across instances).
fn apply_warps(st: &mut ZoneState) {
    if st.scripts.deferred_warps.is_empty() {
        return;
    }
    let warps = std::mem::take(&mut st.scripts.deferred_warps);
    for w in warps {
        natives::world::do_warp(st, w.actor, &w.area, w.zone_instance, &w.portal);
        // The handoff started: the script waits for it. Otherwise (same instance, refused)
        // it continues at once.
        let frozen = st.get(w.actor).is_some_and(|a| a.frozen());
        if !frozen {
            wake(st, w.instance, Value::Int(0));
        }
    }
}

/// Run a freshly created instance at once, to its end or first wait (the `Logout` script,
/// which must see its player before the player leaves). Anything left waiting is ended.
pub(crate) fn run_to_wait(st: &mut ZoneState, id: InstanceId) {
    let mut total = st.cfg.script_budget.max(1);
    run_one(st, id, &mut total);
    if st.scripts.instances.contains_key(&id) {
        let script = st
            .scripts
            .instances
            .get(&id)
            .map(|i| i.cx.script.clone())
            .unwrap_or_default();
        log(
            st,
            &script,
            format!("{script} had not finished when its player left; it was ended"),
        );
        end(st, id);
    }
}

/// The store answered a request.
pub(crate) fn store_reply(
    st: &mut ZoneState,
    req: u64,
    result: shared::internal::ScriptStoreResult,
) {
    let Some(id) = st.scripts.requests.remove(&req) else {
        return;
    };
    natives::files::answer(st, id, result);
}
