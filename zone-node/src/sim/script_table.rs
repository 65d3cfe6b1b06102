//! The script table: every script instance of the zone and the requests to start one
//! (Realm Crafter's `ScriptInstance` list and `ThreadScript` queue), with what changes
//! them from outside a running script: queue and admit a start (the zone's limits), create,
//! wake, end, the waits the engine satisfies (`WaitKill`, `WaitSpeak`), and a player's
//! instances saved, dropped and restored when it logs out or travels.
//!
//! It sits below the game rules: a rule may wake a waiting instance or save a player's
//! scripts here, but running them is the script phase's (`runtime`, above the rules), and
//! which script an engine event starts is the dispatcher's (`scripts`).

use std::cmp::Reverse;
use std::sync::Arc;

use script::bytecode::ScriptSet;
use script::vm::Vm;
use script::{RStr, Value};
use shared::internal::ScriptStoreOp;

use super::events::{ScriptErrorKind, ZoneOutput};
use super::instances::{
    BUNDLE_VERSION, DeferredWarp, Handle, Instance, InstanceCx, InstanceId, ReplyKind,
    SavedInstance, SavedWait, ScriptBundle, StartKey, StartRequest, Wait,
};
use super::state::{ActorId, ZoneState};

/// The compiled scripts new runs use: the last reload's, or the world's.
pub(crate) fn set(st: &ZoneState) -> Arc<ScriptSet> {
    st.scripts
        .code
        .clone()
        .unwrap_or_else(|| st.content.scripts.clone())
}

/// Whether the world has `script.func` (case-insensitive) and it compiled.
pub fn has_entry(st: &ZoneState, script: &str, func: &str) -> bool {
    !script.is_empty() && set(st).entry(script, func).is_some()
}

/// How many earlier script versions a zone keeps for instances still running on them.
pub const RETAINED_VERSIONS: usize = 8;

/// A reload (`RefreshScripts`): new runs use `current` from now on; instances already
/// running keep theirs. `retained` are the node's earlier versions, newest first (for
/// instances that arrive running on one of them); the zone's own current one joins them.
#[doc(alias = "RefreshScripts")]
pub(crate) fn replace_code(
    st: &mut ZoneState,
    current: Arc<ScriptSet>,
    retained: Vec<Arc<ScriptSet>>,
) {
    let old = set(st);
    let mut keep: Vec<Arc<ScriptSet>> = Vec::with_capacity(RETAINED_VERSIONS);
    for s in std::iter::once(old).chain(retained) {
        if !Arc::ptr_eq(&s, &current)
            && !keep.iter().any(|k| Arc::ptr_eq(k, &s))
            && keep.len() < RETAINED_VERSIONS
        {
            keep.push(s);
        }
    }
    st.scripts.code = Some(current);
    st.scripts.retained = keep;
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

/// How an engine start is queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// Every time.
    Each,
    /// A start the engine makes for a client's action (an equipment change, an item used,
    /// a trigger, a right-click): merged into an identical start already queued for this
    /// tick, so that a client repeating an action faster than the zone ticks starts the
    /// script once a tick, not once a packet.
    OncePerTick,
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

/// Queue a start for actors (their handles; `None` is 0), as [`Start`] says; see
/// [`queue`].
pub fn queue_for(
    st: &mut ZoneState,
    how: Start,
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
    check_entry(st, script, func) && admit(st, req, how == Start::OncePerTick)
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
            code: set,
        },
    );
    st.scripts.stats.started += 1;
    Some(id)
}

/// Put an instance into the table and its indexes.
pub(crate) fn insert(st: &mut ZoneState, inst: Instance) {
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
pub(crate) fn remove(st: &mut ZoneState, id: InstanceId) -> Option<Instance> {
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

pub(crate) fn index_wait(st: &mut ZoneState, id: InstanceId, wait: &Wait) {
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
        store_write(st, &f.name, f.data.clone());
    }
}

/// Store a file without waiting for the answer (request 0: none wanted).
pub(crate) fn store_write(st: &mut ZoneState, name: &str, data: Vec<u8>) {
    st.outputs.push(ZoneOutput::ScriptStore {
        req: 0,
        op: ScriptStoreOp::WriteFile {
            name: name.to_owned(),
            data,
        },
    });
}

/// What a script sees when its question is never answered (timeout, warp, lost node):
/// "" for `Input`, 0 otherwise.
pub fn lost_answer(kind: ReplyKind) -> Value {
    match kind {
        ReplyKind::Input => Value::Str(RStr::EMPTY),
        _ => Value::Int(0),
    }
}

/// The windows of a restored instance (a login, an arrival, a recovery on another node
/// from the player's last checkpoint) are not this zone's to use: forget them and its
/// question, and return the dialogs to close on the client (after a node loss the client
/// still shows them; a client that no longer has one ignores the close, as Realm
/// Crafter's `FreeDialog` does). Progress bars are only forgotten: the original client
/// does not check a bar handle before freeing it.
pub(crate) fn forget_windows(cx: &mut InstanceCx) -> Vec<u32> {
    cx.bars.clear();
    cx.reply = None;
    std::mem::take(&mut cx.dialogs).into_iter().collect()
}

/// Report a script error (and count it).
#[allow(clippy::too_many_arguments)]
pub(crate) fn report(
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
pub(crate) fn report_instance(
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

/// Queue a deferred warp (used by the `Warp` native).
pub(crate) fn defer_warp(st: &mut ZoneState, w: DeferredWarp) {
    st.scripts.deferred_warps.push(w);
}

// ----- what the engine satisfies or changes ---------------------------------------------

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
    let now = st.now_ms;
    let instances: Vec<SavedInstance> = ids
        .iter()
        .filter_map(|id| st.scripts.instances.get(id))
        .map(|i| SavedInstance {
            vm: i.vm.save(&i.code),
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
    // The current scripts first, then the versions kept from earlier reloads: an instance
    // resumes on the code it was saved running.
    let sets: Vec<Arc<ScriptSet>> = std::iter::once(set(st))
        .chain(st.scripts.retained.iter().cloned())
        .collect();
    let now = st.now_ms;
    for s in bundle.instances {
        let mut cx = s.cx;
        // The handle is the character's; keep the instance attached to it.
        cx.actor = h;
        // This client session never saw the windows it had open.
        let asked = cx.reply.is_some();
        for dialog in forget_windows(&mut cx) {
            st.send_packet(player, &shared::proto::DialogS2C::Close { dialog });
        }
        let mut restored = Err(script::vm::saved::RestoreError::Missing(String::new()));
        for set in &sets {
            restored = Vm::restore(&s.vm, set).map(|vm| (vm, set.clone()));
            if restored.is_ok() {
                break;
            }
        }
        let (vm, code) = match restored {
            Ok(x) => x,
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
            code,
        };
        let resume = matches!(
            wait,
            Wait::Transfer | Wait::LoggedOut | Wait::Store { .. } | Wait::Reply { .. }
        );
        if resume {
            // The warp happened, the player is back, or the answer it waited for was lost
            // with the old node: carry on (a lost answer reads as 0 / "").
            let lost = match &wait {
                Wait::Reply { kind } => lost_answer(*kind),
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

/// A cluster environment variable changed (`SetEnv` here or on another node); an empty
/// value removes it. Past `MAX_ENV_VARS` a new name is dropped.
pub(crate) fn set_env(st: &mut ZoneState, name: Vec<u8>, value: Vec<u8>) {
    if value.is_empty() {
        st.scripts.env.remove(&name);
    } else if st.scripts.env.contains_key(&name)
        || st.scripts.env.len() < shared::internal::MAX_ENV_VARS
    {
        st.scripts.env.insert(name, value);
    }
}

/// A super global changed (here or on another node).
pub(crate) fn superglobal(st: &mut ZoneState, slot: u8, value: Vec<u8>) {
    if let Some(s) = st.scripts.superglobals.get_mut(usize::from(slot)) {
        *s = RStr::from_vec(value);
    }
}
