//! The script UI natives: `RC_Core`'s dialogs, text input and progress bars (`OpenDialog`,
//! `DialogOutput`, `DialogInput`, `CloseDialog`, `Input`, `CreateProgressBar`,
//! `UpdateProgressBar`, `DeleteProgressBar`) and their raw `RCE_Send*` senders, and the
//! cosmetic commands (`PlaySound`, `PlayMusic`, `PlaySpeech`, `ScreenFlash`,
//! `BubbleOutput`).
//!
//! The `RC_Core` functions that wait suspend the script until its player answers
//! ([`crate::sim::dialogs`]); the raw senders only record what answer to accept and leave
//! the waiting to the script (`SetWaiting(1)`, `GetWaitResult$`), as Realm Crafter's own
//! `RC_Core.rsl` does. Differences from Realm Crafter (`docs/quests.md`): a window the
//! instance did not open is never written to or waited on; `DialogInput` with no options
//! does not wait; every question times out; `ScreenFlash`'s texture 0 means none.

use std::cmp::Reverse;

use script::natives::{Native, pure};
use script::{RStr, Value};
use shared::proto::{
    BubbleMessage, DialogS2C, Music, ProgressBarS2C, ScreenFlash, ScriptInputS2C, Sound, Speech,
};
use shared::wire::RcString;

use super::{Args, NResult, int, none, string};
use crate::sim::dialogs::script_handle;
use crate::sim::instances::{PendingReply, ReplyKind, Wait};
use crate::sim::runtime::host::ZoneHost;
use crate::sim::script_table as table;
use crate::sim::state::ActorId;

/// Whether `n` is one of this module's natives.
pub fn handles(n: Native) -> bool {
    matches!(
        n,
        Native::OpenDialog
            | Native::CloseDialog
            | Native::DialogOutput
            | Native::DialogInput
            | Native::Input
            | Native::CreateProgressBar
            | Native::UpdateProgressBar
            | Native::DeleteProgressBar
            | Native::RceSendOpenDialog
            | Native::RceSendCloseDialog
            | Native::RceSendDialogOutput
            | Native::RceSendDialogInput
            | Native::RceSendInput
            | Native::RceSendCreateProgressBar
            | Native::RceSendDeleteProgressBar
            | Native::RceSendUpdateProgressBar
            | Native::PlaySound
            | Native::PlayMusic
            | Native::PlaySpeech
            | Native::ScreenFlash
            | Native::BubbleOutput
    )
}

/// The low byte, as `RCE_StrFromInt$(v, 1)` sends it.
fn byte(v: i32) -> u8 {
    v.to_le_bytes()[0]
}

/// A u16 field, clamped.
fn u16_of(v: i32) -> u16 {
    u16::try_from(v.clamp(0, i32::from(u16::MAX))).unwrap_or(0)
}

/// A handle argument as the client's u32 (handles are positive).
fn handle_arg(v: i32) -> Option<u32> {
    u32::try_from(v).ok().filter(|h| *h > 0)
}

/// A finite float, else 0.
fn finite(v: f32) -> f32 {
    if v.is_finite() { v } else { 0.0 }
}

/// The online player a handle names here (not mid-warp), for a window or a sound.
fn player(h: &ZoneHost<'_>, handle: i32) -> Option<ActorId> {
    h.actor(handle)
        .filter(|id| h.st.get(*id).is_some_and(|a| a.is_player() && !a.frozen()))
}

/// The online player with a RuntimeID (the `rnid` of the raw senders).
fn player_by_rnid(h: &ZoneHost<'_>, rnid: i32) -> Option<ActorId> {
    let rid = u16::try_from(rnid).ok()?;
    h.st.by_rid(rid)
        .filter(|id| h.st.get(*id).is_some_and(|a| a.is_player() && !a.frozen()))
}

fn log(h: &mut ZoneHost<'_>, msg: &str) {
    let script = h.cx.script.clone();
    table::log(h.st, &script, format!("Error: {msg}"));
}

/// Record the answer this instance accepts from `to`, with its deadline.
fn ask(h: &mut ZoneHost<'_>, to: ActorId, kind: ReplyKind, dialog: u32, options: u8) {
    let until_ms = h.st.now_ms + h.st.cfg.script_reply_timeout_ms.max(1);
    let player = h.st.handle_of(to);
    h.cx.mailbox = RStr::EMPTY;
    h.cx.reply = Some(PendingReply {
        kind,
        player,
        dialog,
        options,
        until_ms,
    });
    h.st.scripts.sleepers.push(Reverse((until_ms, h.id)));
}

/// Ask, and for the `RC_Core` form wait for the answer.
fn ask_and_wait(
    h: &mut ZoneHost<'_>,
    to: ActorId,
    kind: ReplyKind,
    dialog: u32,
    options: u8,
    wait: bool,
) -> NResult {
    ask(h, to, kind, dialog, options);
    if wait {
        h.suspend(Wait::Reply { kind })
    } else {
        none()
    }
}

/// Which form of a command: `RC_Core`'s (it waits, the player is an actor handle) or the
/// raw sender's (no wait, the player is a RuntimeID after an ignored `host`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    Core,
    Raw,
}

impl Form {
    /// The argument index where the command's own arguments start (after the player).
    fn rest(self) -> usize {
        match self {
            Self::Core => 1,
            Self::Raw => 2,
        }
    }
    fn player(self, h: &ZoneHost<'_>, a: Args<'_>) -> Option<ActorId> {
        match self {
            Self::Core => player(h, a.int(0)),
            Self::Raw => player_by_rnid(h, a.int(1)),
        }
    }
}

/// Run one of the script UI natives.
pub fn call(h: &mut ZoneHost<'_>, n: Native, a: Args<'_>) -> NResult {
    match n {
        Native::OpenDialog => open_dialog(h, a, Form::Core),
        Native::RceSendOpenDialog => open_dialog(h, a, Form::Raw),
        Native::CloseDialog => close_dialog(h, a, Form::Core),
        Native::RceSendCloseDialog => close_dialog(h, a, Form::Raw),
        Native::DialogOutput => dialog_output(h, a, Form::Core),
        Native::RceSendDialogOutput => dialog_output(h, a, Form::Raw),
        Native::DialogInput => dialog_input(h, a, Form::Core),
        Native::RceSendDialogInput => dialog_input(h, a, Form::Raw),
        Native::Input => input(h, a, Form::Core),
        Native::RceSendInput => input(h, a, Form::Raw),
        Native::CreateProgressBar => create_bar(h, a, Form::Core),
        Native::RceSendCreateProgressBar => create_bar(h, a, Form::Raw),
        Native::UpdateProgressBar => update_bar(h, a, Form::Core),
        Native::RceSendUpdateProgressBar => update_bar(h, a, Form::Raw),
        Native::DeleteProgressBar => delete_bar(h, a, Form::Core),
        Native::RceSendDeleteProgressBar => delete_bar(h, a, Form::Raw),
        _ => cosmetic(h, n, a),
    }
}

/// `OpenDialog(p, ctx, title$, bgTex, x, y, w, h)` / `RCE_SendOpenDialog(host, rnid,
/// ctxRID, bgTex, title$)`: `P_Dialog "N"`, then (core) wait for the client's dialog handle.
#[doc(alias = "OpenDialog")]
fn open_dialog(h: &mut ZoneHost<'_>, a: Args<'_>, form: Form) -> NResult {
    let Some(to) = form.player(h, a) else {
        log(h, "Invalid Actor in OpenDialog");
        return int(0);
    };
    let (context, background, title) = match form {
        Form::Core => {
            let context = h
                .actor(a.int(1))
                .and_then(|c| h.st.get(c))
                .map_or(u16::MAX, |c| c.rid);
            let bg = a.int(3);
            let background = if bg <= 0 || bg > i32::from(u16::MAX) {
                u16::MAX
            } else {
                u16_of(bg)
            };
            (context, background, a.rstr(2))
        }
        Form::Raw => (u16_of(a.int(2)), u16_of(a.int(3)), a.rstr(4)),
    };
    let script = script_handle(h.id);
    h.st.send_packet(
        to,
        &DialogS2C::Open {
            script,
            context,
            background,
            title: RcString(title.as_bytes().to_vec()),
        },
    );
    ask_and_wait(h, to, ReplyKind::DialogOpened, 0, 0, form == Form::Core)
}

/// The dialog argument, if this instance has that dialog open.
fn open_dialog_arg(h: &mut ZoneHost<'_>, v: i32, what: &str) -> Option<u32> {
    match handle_arg(v) {
        Some(d) if h.cx.dialogs.contains(&d) => Some(d),
        _ => {
            log(h, &format!("Invalid Dialog handle in {what}"));
            None
        }
    }
}

/// `CloseDialog(p, d)`: `P_Dialog "C"`; returns 0.
#[doc(alias = "CloseDialog")]
fn close_dialog(h: &mut ZoneHost<'_>, a: Args<'_>, form: Form) -> NResult {
    let Some(to) = form.player(h, a) else {
        log(h, "Invalid Actor in CloseDialog");
        return int(0);
    };
    if let Some(d) = open_dialog_arg(h, a.int(form.rest()), "CloseDialog") {
        h.cx.dialogs.remove(&d);
        if h.cx.reply.as_ref().is_some_and(|r| r.dialog == d) {
            h.cx.reply = None;
        }
        h.st.send_packet(to, &DialogS2C::Close { dialog: d });
    }
    int(0)
}

/// `DialogOutput(p, d, text$, r, g, b)` / `RCE_SendDialogOutput(host, rnid, r, g, b, d,
/// msg$)`: `P_Dialog "T"`, then (core) wait for the acknowledgement.
#[doc(alias = "DialogOutput")]
fn dialog_output(h: &mut ZoneHost<'_>, a: Args<'_>, form: Form) -> NResult {
    let Some(to) = form.player(h, a) else {
        log(h, "Invalid Actor in DialogOutput");
        return int(0);
    };
    let (d, text, rgb) = match form {
        Form::Core => (a.int(1), a.rstr(2), (a.int(3), a.int(4), a.int(5))),
        Form::Raw => (a.int(5), a.rstr(6), (a.int(2), a.int(3), a.int(4))),
    };
    let Some(dialog) = open_dialog_arg(h, d, "DialogOutput") else {
        return int(0);
    };
    h.st.send_packet(
        to,
        &DialogS2C::Text {
            r: byte(rgb.0),
            g: byte(rgb.1),
            b: byte(rgb.2),
            dialog,
            text: RcString(text.as_bytes().to_vec()),
        },
    );
    ask_and_wait(h, to, ReplyKind::TextAck, dialog, 0, form == Form::Core)
}

/// `DialogInput(p, d, options$, delim$)`: `P_Dialog "O"` with up to 9 options, then
/// (core) wait for the 1-based choice.
#[doc(alias = "DialogInput")]
fn dialog_input(h: &mut ZoneHost<'_>, a: Args<'_>, form: Form) -> NResult {
    let Some(to) = form.player(h, a) else {
        log(h, "Invalid Actor in DialogInput");
        return int(0);
    };
    let r = form.rest();
    let Some(dialog) = open_dialog_arg(h, a.int(r), "DialogInput") else {
        return int(0);
    };
    let options: Vec<RcString> =
        pure::dialog_options(a.rstr(r + 1).as_bytes(), a.rstr(r + 2).as_bytes())
            .into_iter()
            .map(|o| RcString(o.as_bytes().iter().take(255).copied().collect()))
            .collect();
    if options.is_empty() {
        // Realm Crafter sent an empty list and waited forever for a click.
        log(h, "DialogInput has no options to choose from");
        return int(0);
    }
    let count = u8::try_from(options.len()).unwrap_or(u8::MAX);
    h.st.send_packet(to, &DialogS2C::Options { dialog, options });
    ask_and_wait(h, to, ReplyKind::Option, dialog, count, form == Form::Core)
}

/// `Input$(p, title$, prompt$, type)` / `RCE_SendInput(host, rnid, type, title$,
/// prompt$)`: `P_ScriptInput`, then (core) wait for the text (an empty answer counts).
#[doc(alias = "Input")]
fn input(h: &mut ZoneHost<'_>, a: Args<'_>, form: Form) -> NResult {
    let Some(to) = form.player(h, a) else {
        log(h, "Invalid Actor in Input");
        return match form {
            Form::Core => string(RStr::EMPTY),
            Form::Raw => none(),
        };
    };
    let (title, prompt, kind) = match form {
        Form::Core => (a.rstr(1), a.rstr(2), a.int(3)),
        Form::Raw => (a.rstr(3), a.rstr(4), a.int(2)),
    };
    let title: Vec<u8> = title
        .as_bytes()
        .iter()
        .take(usize::from(u16::MAX))
        .copied()
        .collect();
    h.st.send_packet(
        to,
        &ScriptInputS2C {
            script: script_handle(h.id),
            kind: byte(kind),
            title: RcString(title),
            prompt: RcString(prompt.as_bytes().to_vec()),
        },
    );
    ask_and_wait(h, to, ReplyKind::Input, 0, 0, form == Form::Core)
}

/// `CreateProgressBar(p, r, g, b, x, y, w, h, max, value, label$)`: `P_ProgressBar "C"`,
/// then (core) wait for the client's bar handle.
#[doc(alias = "CreateProgressBar")]
fn create_bar(h: &mut ZoneHost<'_>, a: Args<'_>, form: Form) -> NResult {
    let Some(to) = form.player(h, a) else {
        log(h, "Invalid Actor in CreateProgressBar");
        return int(0);
    };
    let r = form.rest();
    h.st.send_packet(
        to,
        &ProgressBarS2C::Create {
            r: byte(a.int(r)),
            g: byte(a.int(r + 1)),
            b: byte(a.int(r + 2)),
            x: finite(a.float(r + 3)),
            y: finite(a.float(r + 4)),
            w: finite(a.float(r + 5)),
            h: finite(a.float(r + 6)),
            script: script_handle(h.id),
            max: u16_of(a.int(r + 7)),
            value: u16_of(a.int(r + 8)),
            label: RcString(a.rstr(r + 9).as_bytes().to_vec()),
        },
    );
    ask_and_wait(h, to, ReplyKind::BarCreated, 0, 0, form == Form::Core)
}

/// The bar argument, if this instance created that bar.
fn bar_arg(h: &mut ZoneHost<'_>, v: i32, what: &str) -> Option<u32> {
    match handle_arg(v) {
        Some(b) if h.cx.bars.contains(&b) => Some(b),
        _ => {
            log(h, &format!("Invalid progress bar handle in {what}"));
            None
        }
    }
}

/// `UpdateProgressBar(p, bar, value)`: `P_ProgressBar "U"`.
#[doc(alias = "UpdateProgressBar")]
fn update_bar(h: &mut ZoneHost<'_>, a: Args<'_>, form: Form) -> NResult {
    let Some(to) = form.player(h, a) else {
        return int(0);
    };
    let r = form.rest();
    if let Some(bar) = bar_arg(h, a.int(r), "UpdateProgressBar") {
        let value = u16_of(a.int(r + 1));
        h.st.send_packet(to, &ProgressBarS2C::Update { bar, value });
    }
    int(0)
}

/// `DeleteProgressBar(p, bar)`: `P_ProgressBar "D"`.
#[doc(alias = "DeleteProgressBar")]
fn delete_bar(h: &mut ZoneHost<'_>, a: Args<'_>, form: Form) -> NResult {
    let Some(to) = form.player(h, a) else {
        return int(0);
    };
    if let Some(bar) = bar_arg(h, a.int(form.rest()), "DeleteProgressBar") {
        h.cx.bars.remove(&bar);
        h.st.send_packet(to, &ProgressBarS2C::Delete { bar });
    }
    int(0)
}

/// Send to the actor's own client, or (`all`) to every player of this AreaInstance.
fn to_owner_or_zone<P: shared::proto::Packet>(
    h: &mut ZoneHost<'_>,
    actor: ActorId,
    all: bool,
    p: &P,
) {
    if all {
        h.st.send_packet_zone(p, None);
    } else if h.st.get(actor).is_some_and(|x| x.is_player()) {
        h.st.send_packet(actor, p);
    }
}

/// The cosmetic commands: packets only, no state (invalid actors do nothing).
fn cosmetic(h: &mut ZoneHost<'_>, n: Native, a: Args<'_>) -> NResult {
    let Some(actor) = h.actor(a.int(0)) else {
        return none();
    };
    let rid = h.st.get(actor).map_or(0, |x| x.rid);
    match n {
        // `PlaySound(actor, id, all)`: 3D at the actor.
        Native::PlaySound => {
            let p = Sound {
                sound: u16_of(a.int(1)),
                actor: rid,
            };
            to_owner_or_zone(h, actor, a.int(2) != 0, &p);
        }
        // `PlayMusic(actor, id, all)`: loops on the client.
        Native::PlayMusic => {
            let p = Music {
                music: u16_of(a.int(1)),
            };
            to_owner_or_zone(h, actor, a.int(2) != 0, &p);
        }
        // `PlaySpeech(actor, index)`: the actor's greeting, goodbye, ... to the zone.
        Native::PlaySpeech => {
            let p = Speech {
                index: u16_of(a.int(1)),
                actor: rid,
            };
            h.st.send_packet_zone(&p, None);
        }
        // `ScreenFlash(actor, r, g, b, alpha, ms, tex)`: the owner; texture 0 is none.
        Native::ScreenFlash => {
            let tex = a.int(6);
            let p = ScreenFlash {
                r: byte(a.int(1)),
                g: byte(a.int(2)),
                b: byte(a.int(3)),
                alpha: byte(a.int(4)),
                ms: u32::try_from(a.int(5).max(0)).unwrap_or(0),
                texture: if tex <= 0 { u16::MAX } else { u16_of(tex) },
            };
            to_owner_or_zone(h, actor, false, &p);
        }
        // `BubbleOutput(actor, msg$, r, g, b)`: a speech bubble over the actor, to the zone.
        Native::BubbleOutput => {
            let p = BubbleMessage {
                actor: rid,
                r: byte(a.int(2)),
                g: byte(a.int(3)),
                b: byte(a.int(4)),
                text: RcString(a.rstr(1).as_bytes().to_vec()),
            };
            h.st.send_packet_zone(&p, None);
        }
        _ => {}
    }
    Ok(script::vm::Flow::Return(Value::Int(0)))
}
