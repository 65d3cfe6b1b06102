//! The script runtime: Realm Crafter's `UpdateScripts` as the scripts phase of
//! [`ZoneSim::tick`](super::ZoneSim::tick), and everything that starts, wakes, ends and
//! moves script instances.
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

use std::cmp::Reverse;
use std::sync::Arc;

use script::bytecode::ScriptSet;
use script::vm::{Exit, Vm};
use script::{RStr, Value};

use super::events::{ScriptErrorKind, ZoneOutput};
use super::instances::{
    BUNDLE_VERSION, DeferredWarp, Handle, Instance, InstanceCx, InstanceId, SavedInstance,
    SavedWait, ScriptBundle, StartKey, StartRequest, Wait,
};
use super::state::{ActorId, ZoneState};

/// The compiled scripts of this zone's world.
fn set(st: &ZoneState) -> Arc<ScriptSet> {
    st.content.scripts.clone()
}

/// Whether the world has `script.func` (case-insensitive) and it compiled.
pub fn has_entry(st: &ZoneState, script: &str, func: &str) -> bool {
    !script.is_empty() && st.content.scripts.entry(script, func).is_some()
}

/// `ThreadScript(script, func, actor, context, param)`: queue a start for the next scripts
/// phase. An unknown script or function is logged and nothing runs, and so is a start past
/// the zone's limits (`scripts_per_actor`, `scripts_per_zone`); both return `false`.
#[doc(alias = "ThreadScript")]
pub fn queue(
    st: &mut ZoneState,
    script: &str,
    func: &str,
    actor: Handle,
    context: Handle,
    param: RStr,
) -> bool {
    if !check_entry(st, script, func) {
        return false;
    }
    admit(
        st,
        StartRequest {
            script: script.to_owned(),
            func: func.to_owned(),
            actor,
            context,
            param,
        },
        false,
    )
}

/// A start the engine makes for a client's action (an equipment change, an item used, a
/// trigger, a right-click): as [`queue_for`], but merged into an identical start already
/// queued for this tick, so that a client repeating an action faster than the zone ticks
/// starts the script once a tick, not once a packet.
pub fn queue_coalesced(
    st: &mut ZoneState,
    script: &str,
    func: &str,
    actor: Option<ActorId>,
    context: Option<ActorId>,
    param: &str,
) -> bool {
    let req = StartRequest {
        script: script.to_owned(),
        func: func.to_owned(),
        actor: actor.map_or(0, |a| st.handle_of(a)),
        context: context.map_or(0, |c| st.handle_of(c)),
        param: RStr::from_latin1(param),
    };
    check_entry(st, script, func) && admit(st, req, true)
}

/// Why a start was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Limit {
    Actor,
    Zone,
}

/// Queue `req` unless a limit refuses it (or, when `coalesce`, an identical start is
/// queued already: then it is that start).
fn admit(st: &mut ZoneState, req: StartRequest, coalesce: bool) -> bool {
    let key = coalesce.then(|| StartKey::of(&req));
    if let Some(k) = &key
        && st.scripts.queued_keys.contains(k)
    {
        st.scripts.stats.coalesced += 1;
        return true;
    }
    let sc = &st.scripts;
    let zone = sc.instances.len().saturating_add(sc.queue.len());
    let limit = if zone >= usize::try_from(st.cfg.scripts_per_zone).unwrap_or(usize::MAX) {
        Some(Limit::Zone)
    } else if req.actor != 0 {
        let live = sc.live_by_actor.get(&req.actor).copied().unwrap_or(0);
        let queued = sc.queued_by_actor.get(&req.actor).copied().unwrap_or(0);
        (live.saturating_add(queued) >= st.cfg.scripts_per_actor).then_some(Limit::Actor)
    } else {
        None
    };
    if let Some(limit) = limit {
        refuse(st, &req, limit);
        if let Some(k) = key {
            // The same start again this tick is refused as this one was, uncounted.
            st.scripts.queued_keys.insert(k);
        }
        return false;
    }
    if req.actor != 0 {
        *st.scripts.queued_by_actor.entry(req.actor).or_insert(0) += 1;
    }
    if let Some(k) = key {
        st.scripts.queued_keys.insert(k);
    }
    st.scripts.queue.push(req);
    true
}

/// Count a refused start, and log it: the first at once, then at most one line a second
/// with how many were refused since.
fn refuse(st: &mut ZoneState, req: &StartRequest, limit: Limit) {
    let (what, n) = match limit {
        Limit::Actor => {
            st.scripts.stats.refused_actor += 1;
            ("its actor has", st.cfg.scripts_per_actor)
        }
        Limit::Zone => {
            st.scripts.stats.refused_zone += 1;
            ("the zone has", st.cfg.scripts_per_zone)
        }
    };
    st.scripts.refusals_unlogged += 1;
    let now = st.now_ms;
    if st
        .scripts
        .refusal_logged_ms
        .is_some_and(|at| now.saturating_sub(at) < 1_000)
    {
        return;
    }
    let refused = std::mem::take(&mut st.scripts.refusals_unlogged);
    st.scripts.refusal_logged_ms = Some(now);
    let message = format!(
        "start of {}.{} for actor {} refused: {what} {n} scripts running or queued ({refused} refused since the last such line)",
        req.script, req.func, req.actor
    );
    log(st, &req.script, message);
}

/// Queue a start for actors (their handles; `None` is 0); see [`queue`].
pub fn queue_for(
    st: &mut ZoneState,
    script: &str,
    func: &str,
    actor: Option<ActorId>,
    context: Option<ActorId>,
    param: &str,
) -> bool {
    let a = actor.map_or(0, |a| st.handle_of(a));
    let c = context.map_or(0, |c| st.handle_of(c));
    queue(st, script, func, a, c, RStr::from_latin1(param))
}

fn check_entry(st: &mut ZoneState, script: &str, func: &str) -> bool {
    let set = set(st);
    match set.module(script) {
        None => {
            log(st, script, format!("Script {script} does not exist."));
            st.scripts.stats.missing += 1;
            false
        }
        Some((_, m)) if !m.ok => {
            log(
                st,
                script,
                format!(
                    "Function {func} not found in {}: the script did not compile",
                    m.file
                ),
            );
            st.scripts.stats.missing += 1;
            false
        }
        Some((_, m)) => {
            if set.entry(script, func).is_none() {
                log(
                    st,
                    script,
                    format!("Function {func} not found in {}", m.file),
                );
                st.scripts.stats.missing += 1;
                false
            } else {
                true
            }
        }
    }
}

/// A log line from the scripts (`ScriptLog`, missing scripts, ...), for the shell.
pub(crate) fn log(st: &mut ZoneState, script: &str, message: String) {
    st.outputs.push(ZoneOutput::ScriptLog {
        script: script.to_owned(),
        message,
    });
}

/// Create an instance now from a request (it runs at the next scripts phase, or at once
/// with [`run_now`]).
pub(crate) fn create(st: &mut ZoneState, req: StartRequest) -> Option<InstanceId> {
    let set = set(st);
    let entry = set.entry(&req.script, &req.func)?;
    let vm = match Vm::new(&set, entry) {
        Ok(vm) => vm,
        Err(e) => {
            let (script, func, actor) = (req.script.clone(), req.func.clone(), req.actor);
            report(
                st,
                &script,
                &func,
                actor,
                String::new(),
                0,
                &e.to_string(),
                ScriptErrorKind::Runtime,
            );
            return None;
        }
    };
    let id = st.scripts.next_id;
    st.scripts.next_id += 1;
    let cx = InstanceCx {
        script: req.script,
        func: req.func,
        actor: req.actor,
        context: req.context,
        param: req.param,
        next_file: 1,
        ..InstanceCx::default()
    };
    insert(
        st,
        Instance {
            id,
            vm,
            cx,
            wait: Wait::Ready,
            overruns: 0,
        },
    );
    st.scripts.stats.started += 1;
    Some(id)
}

/// Put an instance into the table and its indexes.
fn insert(st: &mut ZoneState, inst: Instance) {
    let id = inst.id;
    if inst.cx.actor != 0 {
        *st.scripts.live_by_actor.entry(inst.cx.actor).or_insert(0) += 1;
    }
    for h in [inst.cx.actor, inst.cx.context] {
        if h != 0 {
            st.scripts.by_handle.entry(h).or_default().insert(id);
        }
    }
    index_wait(st, id, &inst.wait);
    st.scripts.instances.insert(id, inst);
}

/// Take an instance out of the table and its indexes.
fn remove(st: &mut ZoneState, id: InstanceId) -> Option<Instance> {
    let inst = st.scripts.instances.remove(&id)?;
    if let Some(n) = st.scripts.live_by_actor.get_mut(&inst.cx.actor) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            st.scripts.live_by_actor.remove(&inst.cx.actor);
        }
    }
    for h in [inst.cx.actor, inst.cx.context] {
        if let Some(s) = st.scripts.by_handle.get_mut(&h) {
            s.remove(&id);
            if s.is_empty() {
                st.scripts.by_handle.remove(&h);
            }
        }
    }
    st.scripts.runnable.remove(&id);
    st.scripts.item_waiters.remove(&id);
    st.scripts.time_waiters.remove(&id);
    st.scripts.requests.retain(|_, i| *i != id);
    Some(inst)
}

fn index_wait(st: &mut ZoneState, id: InstanceId, wait: &Wait) {
    match wait {
        Wait::Ready => {
            st.scripts.runnable.insert(id);
        }
        Wait::Sleep { until_ms } => st.scripts.sleepers.push(Reverse((*until_ms, id))),
        Wait::Item { .. } => {
            st.scripts.item_waiters.insert(id);
        }
        Wait::GameTime { .. } => {
            st.scripts.time_waiters.insert(id);
            // Checked at the next scripts phase even if the game minute has not changed.
            st.scripts.time_checked_minute = None;
        }
        Wait::Store { req } => {
            st.scripts.requests.insert(*req, id);
        }
        _ => {}
    }
}

/// Resume a waiting instance with its native's result.
pub(crate) fn wake(st: &mut ZoneState, id: InstanceId, value: Value) {
    let Some(inst) = st.scripts.instances.get_mut(&id) else {
        return;
    };
    if inst.vm.is_suspended() {
        inst.vm.resume(value);
    } else {
        // Parked by `SetWaiting`: its busy loop sees the mailbox filled and returns.
        inst.vm.resume_parked();
        if inst.cx.mailbox.is_empty() {
            inst.cx.mailbox = RStr::new(b"1");
        }
    }
    inst.cx.waiting = 0;
    inst.wait = Wait::Ready;
    st.scripts.item_waiters.remove(&id);
    st.scripts.time_waiters.remove(&id);
    st.scripts.runnable.insert(id);
}

/// End an instance without running it further (its open files are written back).
pub(crate) fn end(st: &mut ZoneState, id: InstanceId) {
    if let Some(inst) = remove(st, id) {
        flush_files(st, &inst.cx);
    }
}

fn flush_files(st: &mut ZoneState, cx: &InstanceCx) {
    for f in cx.files.values().filter(|f| f.dirty) {
        natives::files::store_write(st, &f.name, f.data.clone());
    }
}

/// Report a script error (and count it).
#[allow(clippy::too_many_arguments)]
fn report(
    st: &mut ZoneState,
    script: &str,
    func: &str,
    actor: Handle,
    file: String,
    line: u32,
    message: &str,
    kind: ScriptErrorKind,
) {
    match kind {
        ScriptErrorKind::Runaway => st.scripts.stats.runaway += 1,
        ScriptErrorKind::Restore => st.scripts.stats.restore_failures += 1,
        ScriptErrorKind::Runtime => st.scripts.stats.errors += 1,
    }
    st.outputs.push(ZoneOutput::ScriptError {
        script: script.to_owned(),
        func: func.to_owned(),
        actor,
        file,
        line,
        message: message.to_owned(),
        kind,
    });
}

/// Report a failure of instance `id` (named by its script, function and actor).
fn report_instance(
    st: &mut ZoneState,
    id: InstanceId,
    file: String,
    line: u32,
    message: &str,
    kind: ScriptErrorKind,
) {
    let (script, func, actor) = st
        .scripts
        .instances
        .get(&id)
        .map(|i| (i.cx.script.clone(), i.cx.func.clone(), i.cx.actor))
        .unwrap_or_default();
    report(st, &script, &func, actor, file, line, message, kind);
}

/// Create `script.func` now with `actor` as `Actor()` (context 0, no `Param`).
pub(crate) fn create_for(
    st: &mut ZoneState,
    script: &str,
    func: &str,
    actor: ActorId,
) -> Option<InstanceId> {
    let h = st.handle_of(actor);
    create(
        st,
        StartRequest {
            script: script.to_owned(),
            func: func.to_owned(),
            actor: h,
            context: 0,
            param: RStr::EMPTY,
        },
    )
}

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
    let set = set(st);
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

/// Queue a deferred warp (used by the `Warp` native).
pub(crate) fn defer_warp(st: &mut ZoneState, w: DeferredWarp) {
    st.scripts.deferred_warps.push(w);
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

// ----- events from the engine ---------------------------------------------------------

/// `KillActor(victim, killer)`: count `WaitKill`s whose killer is exactly `killer`.
pub(crate) fn on_kill(st: &mut ZoneState, victim_template: u16, killer: Option<ActorId>) {
    let Some(k) = killer else { return };
    let kh = st.handle_of(k);
    if kh == 0 {
        return;
    }
    let ids: Vec<InstanceId> = st
        .scripts
        .instances
        .iter()
        .filter(|(_, i)| matches!(&i.wait, Wait::Kill { killer, .. } if *killer == kh))
        .map(|(id, _)| *id)
        .collect();
    for id in ids {
        let done = match st.scripts.instances.get_mut(&id).map(|i| &mut i.wait) {
            Some(Wait::Kill { template, left, .. }) if *template == i32::from(victim_template) => {
                *left -= 1;
                *left <= 0
            }
            _ => false,
        };
        if done {
            wake(st, id, Value::Int(0));
        }
    }
}

/// A right-click by `clicker` on `target`: wake the `WaitSpeak`s it satisfies.
pub(crate) fn on_right_click(st: &mut ZoneState, clicker: ActorId, target: ActorId) {
    let (a, b) = (st.handle_of(clicker), st.handle_of(target));
    let ids: Vec<InstanceId> = st
        .scripts
        .instances
        .iter()
        .filter(|(_, i)| matches!(&i.wait, Wait::Speak { actor, target } if *actor == a && *target == b))
        .map(|(id, _)| *id)
        .collect();
    for id in ids {
        wake(st, id, Value::Int(0));
    }
}

/// Whether an instance of `script` with this actor and context is still running (a
/// right-click does not start a second one).
pub(crate) fn running(st: &ZoneState, script: &str, actor: ActorId, context: ActorId) -> bool {
    let (a, c) = (st.handle_of(actor), st.handle_of(context));
    st.scripts
        .by_handle
        .get(&a)
        .into_iter()
        .flatten()
        .filter_map(|id| st.scripts.instances.get(id))
        .any(|i| i.cx.actor == a && i.cx.context == c && i.cx.script.eq_ignore_ascii_case(script))
        || st
            .scripts
            .queue
            .iter()
            .any(|q| q.actor == a && q.context == c && q.script.eq_ignore_ascii_case(script))
}

/// `FreeActorScripts(actor)`: an NPC died or left; end every instance that names it, and
/// every wait on it.
#[doc(alias = "FreeActorScripts")]
pub(crate) fn actor_freed(st: &mut ZoneState, handle: Handle) {
    if handle == 0 {
        return;
    }
    let mut ids: Vec<InstanceId> = st
        .scripts
        .by_handle
        .get(&handle)
        .map(|s| s.iter().copied().collect())
        .unwrap_or_default();
    ids.extend(
        st.scripts
            .instances
            .iter()
            .filter_map(|(id, i)| match &i.wait {
                Wait::Speak { actor, target } if *actor == handle || *target == handle => Some(*id),
                Wait::Item { actor, .. } if *actor == handle => Some(*id),
                _ => None,
            }),
    );
    ids.sort_unstable();
    ids.dedup();
    for id in ids {
        end(st, id);
    }
}

/// Instances owned by the player with this handle (their `Actor()` is the player).
fn owned(st: &ZoneState, handle: Handle) -> Vec<InstanceId> {
    st.scripts
        .by_handle
        .get(&handle)
        .into_iter()
        .flatten()
        .filter(|id| {
            st.scripts
                .instances
                .get(id)
                .is_some_and(|i| i.cx.actor == handle)
        })
        .copied()
        .collect()
}

/// A player logs out: non-persistent instances that name it end; persistent ones it owns
/// are kept for its snapshot, paused (`rsl-language.md` §11; the V0 bug where a
/// non-persistent script also ended the persistent ones is not copied).
pub(crate) fn player_logout(st: &mut ZoneState, player: ActorId) {
    let h = st.handle_of(player);
    let ids: Vec<InstanceId> = st
        .scripts
        .by_handle
        .get(&h)
        .map(|s| s.iter().copied().collect())
        .unwrap_or_default();
    for id in ids {
        let keep = st
            .scripts
            .instances
            .get(&id)
            .is_some_and(|i| i.cx.persistent && i.cx.actor == h);
        if !keep {
            end(st, id);
        } else if let Some(i) = st.scripts.instances.get_mut(&id)
            && i.wait == Wait::Ready
        {
            i.wait = Wait::LoggedOut;
            st.scripts.runnable.remove(&id);
        }
    }
}

/// The portable bundle of the instances a player owns (for its transfer and snapshots).
pub(crate) fn save_owned(st: &ZoneState, player: ActorId) -> Vec<u8> {
    let h = st.handle_of(player);
    if h == 0 {
        return Vec::new();
    }
    let ids = owned(st, h);
    if ids.is_empty() {
        return Vec::new();
    }
    let set = set(st);
    let now = st.now_ms;
    let instances: Vec<SavedInstance> = ids
        .iter()
        .filter_map(|id| st.scripts.instances.get(id))
        .map(|i| SavedInstance {
            vm: i.vm.save(&set),
            cx: i.cx.clone(),
            wait: match &i.wait {
                Wait::Sleep { until_ms } => SavedWait::SleepLeft(until_ms.saturating_sub(now)),
                w => SavedWait::Same(w.clone()),
            },
        })
        .collect();
    rmp_serde::to_vec_named(&ScriptBundle {
        version: BUNDLE_VERSION,
        instances,
    })
    .unwrap_or_default()
}

/// The player left for good (transfer committed): drop its instances here.
pub(crate) fn drop_owned(st: &mut ZoneState, player: ActorId) {
    let h = st.handle_of(player);
    for id in owned(st, h) {
        let _ = remove(st, id);
    }
}

/// A handoff of this player was rolled back: scripts waiting for their warp continue.
pub(crate) fn transfer_rolled_back(st: &mut ZoneState, player: ActorId) {
    let h = st.handle_of(player);
    for id in owned(st, h) {
        if st
            .scripts
            .instances
            .get(&id)
            .is_some_and(|i| i.wait == Wait::Transfer)
        {
            wake(st, id, Value::Int(0));
        }
    }
}

/// A player arrived (login or transfer) with its scripts: restore them here. Scripts that
/// waited for their warp or for this login continue; any that cannot resume here (the
/// script changed or is missing) are reported and dropped.
pub(crate) fn restore_owned(st: &mut ZoneState, player: ActorId, bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    let h = st.handle_of(player);
    let bundle: ScriptBundle = match rmp_serde::from_slice(bytes) {
        Ok(b) => b,
        Err(e) => {
            report(
                st,
                "",
                "",
                h,
                String::new(),
                0,
                &format!("saved scripts unreadable: {e}"),
                ScriptErrorKind::Restore,
            );
            return;
        }
    };
    if bundle.version != BUNDLE_VERSION {
        let msg = format!(
            "saved scripts have format {}, this node reads {BUNDLE_VERSION}",
            bundle.version
        );
        report(
            st,
            "",
            "",
            h,
            String::new(),
            0,
            &msg,
            ScriptErrorKind::Restore,
        );
        return;
    }
    let set = set(st);
    let now = st.now_ms;
    for s in bundle.instances {
        let mut cx = s.cx;
        // The handle is the character's; keep the instance attached to it.
        cx.actor = h;
        // This client session never saw the windows it had open.
        let asked = cx.reply.is_some();
        let windows = crate::sim::dialogs::forget_windows(&mut cx);
        crate::sim::dialogs::close_dialogs(st, player, &windows);
        let vm = match Vm::restore(&s.vm, &set) {
            Ok(vm) => vm,
            Err(e) => {
                report(
                    st,
                    &cx.script,
                    &cx.func,
                    h,
                    String::new(),
                    0,
                    &format!("cannot resume here: {e}"),
                    ScriptErrorKind::Restore,
                );
                continue;
            }
        };
        let wait = match s.wait {
            SavedWait::SleepLeft(ms) => Wait::Sleep { until_ms: now + ms },
            SavedWait::Same(w) => w,
        };
        let id = st.scripts.next_id;
        st.scripts.next_id += 1;
        let mut inst = Instance {
            id,
            vm,
            cx,
            wait: wait.clone(),
            overruns: 0,
        };
        let resume = matches!(
            wait,
            Wait::Transfer | Wait::LoggedOut | Wait::Store { .. } | Wait::Reply { .. }
        );
        if resume {
            // The warp happened, the player is back, or the answer it waited for was lost
            // with the old node: carry on (a lost answer reads as 0 / "").
            let lost = match &wait {
                Wait::Reply { kind } => crate::sim::dialogs::lost_answer(*kind),
                _ => Value::Int(0),
            };
            inst.vm.resume(lost);
            inst.wait = Wait::Ready;
        } else if asked && wait == Wait::Mailbox {
            // A raw `RCE_Send*` question parked with `SetWaiting(1)`: its answer is lost.
            inst.vm.resume_parked();
            inst.cx.mailbox = RStr::new(b"0");
            inst.cx.waiting = 0;
            inst.wait = Wait::Ready;
        }
        insert(st, inst);
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

/// A super global changed (here or on another node).
pub(crate) fn superglobal(st: &mut ZoneState, slot: u8, value: Vec<u8>) {
    if let Some(s) = st.scripts.superglobals.get_mut(usize::from(slot)) {
        *s = RStr::from_vec(value);
    }
}
