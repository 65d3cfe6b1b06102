//! The waits of `RC_Core`: `WaitKill`, `WaitItem`, `WaitSpeak` (and `DoEvents` in
//! [`super::scr`]) as suspensions of the script, with their checks; and the mailbox waits of
//! Realm Crafter's low-level helpers (`SetWaiting` and the `SetWait*` records), for scripts
//! that build their own waits.

use script::natives::Native;
use script::{RStr, RuntimeError, Value};

use super::{Args, NResult, int};
use crate::sim::instances::{InstanceId, Wait};
use crate::sim::runtime::host::ZoneHost;
use crate::sim::script_table as table;
use crate::sim::state::{ActorId, ZoneState};

/// Run a wait native.
pub fn call(h: &mut ZoneHost<'_>, n: Native, a: Args<'_>) -> NResult {
    let Some(w) = record(h, n, a) else {
        // Realm Crafter's busy loop would wait forever: end the script instead.
        let what = match n {
            Native::WaitKill => "WaitKill: the actor or the actor template does not exist",
            Native::WaitItem => "WaitItem: the actor does not exist",
            _ => "WaitSpeak: an actor does not exist",
        };
        return Err(RuntimeError::Ended(format!(
            "{what}, so the wait could never end"
        )));
    };
    if let Wait::Item {
        actor,
        item,
        amount,
    } = &w
        && holds(h.st, *actor, item, *amount)
    {
        return int(0);
    }
    h.suspend(w)
}

/// The wait a `Wait*` / `SetWait*` call asks for, if its actors (and template) exist.
pub fn record(h: &ZoneHost<'_>, n: Native, a: Args<'_>) -> Option<Wait> {
    match n {
        Native::WaitKill | Native::SetWaitKill => {
            let killer = a.int(0);
            h.actor(killer)?;
            let template = a.int(1);
            let t = u16::try_from(template).ok()?;
            h.st.content.template(t)?;
            Some(Wait::Kill {
                killer,
                template,
                left: a.int(2).max(1),
            })
        }
        Native::WaitItem | Native::SetWaitItem => {
            let actor = a.int(0);
            h.actor(actor)?;
            let item = RStr::new(trim(a.rstr(1).as_bytes()));
            Some(Wait::Item {
                actor,
                item,
                amount: a.int(2),
            })
        }
        Native::WaitSpeak | Native::SetWaitSpeak => {
            let (actor, target) = (a.int(0), a.int(1));
            h.actor(actor)?;
            h.actor(target)?;
            Some(Wait::Speak { actor, target })
        }
        _ => None,
    }
}

fn trim(b: &[u8]) -> &[u8] {
    let start = b.iter().position(|&c| c > 32).unwrap_or(b.len());
    let end = b.iter().rposition(|&c| c > 32).map_or(start, |e| e + 1);
    b.get(start..end).unwrap_or(&[])
}

/// How many of the item named `name` (case-insensitive) an actor holds, over all slots.
pub fn count_item(st: &ZoneState, actor: ActorId, name: &[u8]) -> i64 {
    let Some(a) = st.get(actor) else { return 0 };
    let world = &st.content.world;
    a.inventory
        .iter()
        .flatten()
        .filter(|slot| {
            world
                .items
                .iter()
                .find(|i| i.id == slot.item)
                .is_some_and(|i| i.name.as_bytes().eq_ignore_ascii_case(name))
        })
        .map(|slot| i64::from(slot.amount))
        .sum()
}

fn holds(st: &ZoneState, actor: i32, item: &RStr, amount: i32) -> bool {
    st.actor_by_handle(actor)
        .is_some_and(|id| count_item(st, id, item.as_bytes()) >= i64::from(amount))
}

/// The once-a-second `WaitItem` check.
pub fn check_items(st: &mut ZoneState) {
    let ids: Vec<InstanceId> = st.scripts.item_waiters.iter().copied().collect();
    for id in ids {
        let (actor, ok) = match st.scripts.instances.get(&id).map(|i| &i.wait) {
            Some(Wait::Item {
                actor,
                item,
                amount,
            }) => (*actor, holds(st, *actor, item, *amount)),
            _ => {
                st.scripts.item_waiters.remove(&id);
                continue;
            }
        };
        if st.actor_by_handle(actor).is_none() {
            // The actor is gone: the record is freed, and with it the script.
            table::end(st, id);
        } else if ok {
            table::wake(st, id, Value::Int(0));
        }
    }
}

/// An instance parked after `SetWaiting(n)`: what it really waits for (a `SetWait*`
/// record made before, else the mailbox), and when it is due for a timer wait.
pub fn parked(st: &mut ZoneState, id: InstanceId) -> (Wait, Option<u64>) {
    let now = st.now_ms;
    let Some(inst) = st.scripts.instances.get_mut(&id) else {
        return (Wait::Mailbox, None);
    };
    if let Some(w) = inst.cx.record.take() {
        return (w, None);
    }
    match inst.cx.waiting {
        2 => {
            let elapsed = super::scr::millisecs(now).wrapping_sub(inst.cx.wait_start);
            let left = i64::from(inst.cx.wait_time) - i64::from(elapsed);
            (
                Wait::Mailbox,
                Some(now + u64::try_from(left.max(0)).unwrap_or(0)),
            )
        }
        _ => (Wait::Mailbox, None),
    }
}
