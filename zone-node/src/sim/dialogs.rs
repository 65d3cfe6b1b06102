//! Script windows: the client's answers to `OpenDialog`, `DialogOutput`, `DialogInput`,
//! `Input` and `CreateProgressBar` (`P_Dialog`, `P_ProgressBar`, `P_ScriptInput`), their
//! timeouts, and what happens to open windows when their player leaves the instance.
//!
//! A native that needs an answer records a [`PendingReply`] in its instance (kind, the
//! player it asked, the dialog, the number of options, a deadline) and suspends with
//! `Wait::Reply`; the raw `RCE_Send*` senders record it too but do not suspend (their
//! script parks itself with `SetWaiting(1)` and reads `GetWaitResult$`). An answer wakes
//! the instance only if it is exactly the one asked for, from that player; anything else
//! is counted as [`Rejection::ScriptReply`] and changes nothing (Realm Crafter accepted any
//! answer for any script from anyone, and waited forever).
//!
//! | event | what the script sees | the client's window |
//! |---|---|---|
//! | the answer | the dialog or bar handle, 0 for a text acknowledgement, the 1-based option, the typed text (`""` too) | stays |
//! | no answer within `script_reply_timeout_ms` | 0 (`""` for `Input`) | closed (dialog) or deleted (bar) |
//! | its player warps to another AreaInstance (any node) | 0 (`""`), at once | every window the player's scripts opened is closed first |
//! | its player logs out (`Persistent(1)` scripts) | 0 (`""`) when the script resumes at the next login | gone with the session |
//! | its node is lost | 0 (`""`) when the script resumes from the last checkpoint | the dialogs open at that checkpoint are closed |
//!
//! A dialog or bar handle the instance did not open (or already closed) is ignored by the
//! natives: text, options and updates to it are not sent and never wait.

use script::{RStr, Value};

use super::events::{Rejection, ScriptReply};
use super::instances::{InstanceId, PendingReply, ReplyKind, Wait};
use super::script_table;
use super::state::{ActorId, ZoneState};
use shared::proto::DialogS2C;

/// The most bytes an `Input` answer keeps (the client caps input at 150 characters).
pub const INPUT_MAX: usize = 150;

/// The wire handle (`hSI`) of an instance, as the `hSI` host global reads it.
pub fn script_handle(id: InstanceId) -> u32 {
    u32::try_from(id & 0x7fff_ffff).unwrap_or(0)
}

/// A handle as the script's Int (Blitz handles are positive).
fn as_int(h: u32) -> Option<i32> {
    i32::try_from(h).ok().filter(|v| *v > 0)
}

/// A client answered a script window.
pub(crate) fn on_reply(st: &mut ZoneState, from: ActorId, reply: ScriptReply) {
    let Some(player) = st.get(from).and_then(|a| a.player) else {
        return;
    };
    let h = st.handle_of(from);
    let (script, kind) = match &reply {
        ScriptReply::DialogOpened { script, .. } => (*script, ReplyKind::DialogOpened),
        ScriptReply::TextShown { script } => (*script, ReplyKind::TextAck),
        ScriptReply::Chosen { script, .. } => (*script, ReplyKind::Option),
        ScriptReply::BarCreated { script, .. } => (*script, ReplyKind::BarCreated),
        ScriptReply::Input { script, .. } => (*script, ReplyKind::Input),
    };
    let id = InstanceId::from(script);
    let asked = st
        .scripts
        .instances
        .get(&id)
        .and_then(|i| i.cx.reply.as_ref())
        .filter(|r| r.player == h && r.kind == kind && script != 0)
        .cloned();
    let Some(asked) = asked else {
        st.reject(Some(player), Rejection::ScriptReply);
        // A window whose script is gone is closed, as Realm Crafter did.
        match reply {
            ScriptReply::DialogOpened { dialog, .. } if dialog != 0 => {
                st.send_packet(from, &DialogS2C::Close { dialog });
            }
            ScriptReply::BarCreated { bar, .. } if bar != 0 => {
                st.send_packet(from, &shared::proto::ProgressBarS2C::Delete { bar });
            }
            _ => {}
        }
        return;
    };
    let (value, mailbox) = match reply {
        ScriptReply::DialogOpened { dialog, .. } => {
            let Some(v) = as_int(dialog) else {
                st.reject(Some(player), Rejection::ScriptReply);
                return;
            };
            if let Some(i) = st.scripts.instances.get_mut(&id) {
                i.cx.dialogs.insert(dialog);
            }
            (Value::Int(v), v.to_string())
        }
        ScriptReply::TextShown { .. } => (Value::Int(0), "0".to_owned()),
        ScriptReply::Chosen { option, .. } => {
            if option == 0 || option > asked.options {
                st.reject(Some(player), Rejection::ScriptReply);
                return;
            }
            (Value::Int(i32::from(option)), option.to_string())
        }
        ScriptReply::BarCreated { bar, .. } => {
            let Some(v) = as_int(bar) else {
                st.reject(Some(player), Rejection::ScriptReply);
                return;
            };
            if let Some(i) = st.scripts.instances.get_mut(&id) {
                i.cx.bars.insert(bar);
            }
            (Value::Int(v), v.to_string())
        }
        ScriptReply::Input { mut text, .. } => {
            text.truncate(INPUT_MAX);
            let s = RStr::from_vec(text);
            let m = s.to_latin1();
            (Value::Str(s), m)
        }
    };
    answer(st, id, value, RStr::from_latin1(&mailbox));
}

/// Give instance `id` its answer: the mailbox (`GetWaitResult$`) and, if it waits for it,
/// the native's result.
fn answer(st: &mut ZoneState, id: InstanceId, value: Value, mailbox: RStr) {
    let Some(inst) = st.scripts.instances.get_mut(&id) else {
        return;
    };
    inst.cx.reply = None;
    inst.cx.mailbox = mailbox;
    let waits = match inst.wait {
        Wait::Reply { .. } => true,
        Wait::Mailbox => inst.cx.waiting == 1,
        _ => false,
    };
    if waits {
        script_table::wake(st, id, value);
    }
}

/// Whether instance `id`'s pending request is due to time out at `due`.
pub(crate) fn times_out_at(st: &ZoneState, id: InstanceId, due: u64) -> bool {
    st.scripts
        .instances
        .get(&id)
        .and_then(|i| i.cx.reply.as_ref())
        .is_some_and(|r| r.until_ms == due)
}

/// Nobody answered in time: close the window the question was in and carry on.
pub(crate) fn time_out(st: &mut ZoneState, id: InstanceId) {
    let Some(r) = st
        .scripts
        .instances
        .get(&id)
        .and_then(|i| i.cx.reply.clone())
    else {
        return;
    };
    st.scripts.stats.reply_timeouts += 1;
    if let Some(p) = st.actor_by_handle(r.player) {
        close_window_of(st, id, p, &r);
    }
    answer(st, id, script_table::lost_answer(r.kind), RStr::EMPTY);
}

/// Close the window a request is in (its dialog), if the instance still has it open.
fn close_window_of(st: &mut ZoneState, id: InstanceId, player: ActorId, r: &PendingReply) {
    let open = st
        .scripts
        .instances
        .get_mut(&id)
        .is_some_and(|i| r.dialog != 0 && i.cx.dialogs.remove(&r.dialog));
    if open {
        st.send_packet(player, &DialogS2C::Close { dialog: r.dialog });
    }
}

/// The player leaves this instance (a warp): every window its scripts opened is closed on
/// its client, and every question they asked it is answered as lost, before its scripts
/// are saved for the journey.
pub(crate) fn close_for_departure(st: &mut ZoneState, player: ActorId) {
    let h = st.handle_of(player);
    if h == 0 {
        return;
    }
    let ids: Vec<InstanceId> = st
        .scripts
        .by_handle
        .get(&h)
        .into_iter()
        .flatten()
        .copied()
        .collect();
    for id in ids {
        let Some(inst) = st.scripts.instances.get_mut(&id) else {
            continue;
        };
        let asked_player = inst.cx.reply.as_ref().is_some_and(|r| r.player == h);
        let mine = inst.cx.actor == h;
        if !mine && !asked_player {
            continue;
        }
        let dialogs = if mine {
            std::mem::take(&mut inst.cx.dialogs)
        } else {
            Default::default()
        };
        let bars = if mine {
            std::mem::take(&mut inst.cx.bars)
        } else {
            Default::default()
        };
        let pending = inst.cx.reply.clone().filter(|r| r.player == h);
        for dialog in dialogs {
            st.send_packet(player, &DialogS2C::Close { dialog });
        }
        for bar in bars {
            st.send_packet(player, &shared::proto::ProgressBarS2C::Delete { bar });
        }
        if let Some(r) = pending {
            close_window_of(st, id, player, &r);
            answer(st, id, script_table::lost_answer(r.kind), RStr::EMPTY);
        }
    }
}
