//! Queries on a player that is not in the zone (`Name`, `ActorX`, `Attribute`, `Gold`, …
//! of a handle the zone does not host): the asking script waits while the gateway asks the
//! zone hosting the player, which evaluates the same command on its own copy and answers.
//! Read-only commands only; a player that is not in the game, or a zone that does not
//! answer within the gateway's timeout, reads as 0, 0.0 or "".

use script::natives::{self, Native};
use script::vm::{Flow, NativeCx};
use script::{RStr, Value};
use shared::internal::{ScriptStoreOp, ValueDto};

use super::host::ZoneHost;
use crate::sim::events::{PlayerKey, ZoneOutput};
use crate::sim::instances::{InstanceCx, PendingIo, Wait};
use crate::sim::state::{NPC_HANDLE_BASE, ZoneState};

/// The commands a script may ask about a player elsewhere: they read, never change.
pub fn is_remote_query(n: Native) -> bool {
    matches!(
        n,
        Native::Name
            | Native::ActorX
            | Native::ActorY
            | Native::ActorZ
            | Native::ActorZone
            | Native::ActorLevel
            | Native::ActorIsHuman
            | Native::ActorGender
            | Native::Race
            | Native::Class
            | Native::Attribute
            | Native::MaxAttribute
            | Native::ActorGlobal
            | Native::Gold
            | Native::Money
            | Native::HasItem
    )
}

/// If `n` is a query on a player handle this zone does not host, ask the cluster and
/// suspend; `None` to run the command here.
pub fn ask(
    h: &mut ZoneHost<'_>,
    n: Native,
    args: &[Value],
) -> Option<Result<Flow, script::RuntimeError>> {
    if !is_remote_query(n) {
        return None;
    }
    let handle = args.first()?.to_int();
    if handle <= 0 || h.actor(handle).is_some() {
        return None;
    }
    let handle = u32::try_from(handle)
        .ok()
        .filter(|&x| x < NPC_HANDLE_BASE)?;
    let sig = natives::sig(n)?;
    let req = h.st.scripts.next_request;
    h.st.scripts.next_request += 1;
    h.st.scripts.requests.insert(req, h.id);
    h.st.outputs.push(ZoneOutput::ScriptStore {
        req,
        op: ScriptStoreOp::ActorQuery {
            handle,
            native: sig.name.to_owned(),
            args: args.iter().map(to_dto).collect(),
        },
    });
    h.cx.pending_io = Some(PendingIo::Value {
        text: sig.ret == Some(script::Ty::Str),
    });
    Some(h.suspend(Wait::Store { req }))
}

/// The gateway asks about `player`, who plays here: evaluate the command on it and answer
/// (`None` when it is not here or the command is not a query).
pub(crate) fn answer(
    st: &mut ZoneState,
    qid: u64,
    player: PlayerKey,
    native: &str,
    args: &[ValueDto],
) {
    let value = evaluate(st, player, native, args);
    st.outputs.push(ZoneOutput::ScriptStore {
        req: 0,
        op: ScriptStoreOp::ActorAnswer { qid, value },
    });
}

fn evaluate(
    st: &mut ZoneState,
    player: PlayerKey,
    native: &str,
    args: &[ValueDto],
) -> Option<ValueDto> {
    let sig = natives::lookup(&native.to_ascii_lowercase())?;
    if !is_remote_query(sig.native) || args.len() > 8 {
        return None;
    }
    let id = st.by_player(player)?;
    let handle = st.handle_of(id);
    let mut values: Vec<Value> = args.iter().map(from_dto).collect();
    // The handle asked about is this player's (the same number on every node).
    if values.first().map(Value::to_int) != Some(handle) {
        return None;
    }
    // Defaults for the parameters not given, converted as a call converts them.
    for (i, p) in sig.params.iter().enumerate() {
        match values.get_mut(i) {
            Some(v) => *v = v.clone().convert(p.ty),
            None => values.push(
                p.default
                    .as_ref()
                    .map_or_else(|| p.ty.zero(), |l| l.value(p.ty)),
            ),
        }
    }
    let mut cx = InstanceCx::default();
    let mut banks = natives::pure::Banks::default();
    let mut ncx = NativeCx {
        banks: &mut banks,
        file: "",
        line: 0,
    };
    let mut host = ZoneHost::new(st, 0, &mut cx);
    match super::natives::call(&mut host, sig.native, &values, &mut ncx) {
        Ok(Flow::Return(v)) => Some(to_dto(&v)),
        _ => None,
    }
}

/// The gateway has this zone spawn an NPC for a script elsewhere: spawned in AI Wait with
/// its scripts, as `Spawn` does here; its handle answers (`None`: an unknown template or
/// no room).
pub(crate) fn spawn(
    st: &mut ZoneState,
    qid: u64,
    template: u16,
    pos: (f32, f32, f32),
    script: String,
    death_script: String,
) {
    let value = st
        .content
        .template(template)
        .is_some()
        .then(|| crate::sim::appear::spawn_npc(st, template, pos.0, pos.1, pos.2))
        .flatten()
        .map(|id| {
            if let Some(x) = st.get_mut(id) {
                x.ai_mode = crate::sim::state::AiMode::Wait;
                x.script = script;
                x.death_script = death_script;
            }
            ValueDto::Int(st.handle_of(id))
        });
    st.outputs.push(ZoneOutput::ScriptStore {
        req: 0,
        op: ScriptStoreOp::ActorAnswer { qid, value },
    });
}

/// A value for the wire.
pub fn to_dto(v: &Value) -> ValueDto {
    match v {
        Value::Int(i) => ValueDto::Int(*i),
        Value::Float(f) => ValueDto::Float(f.to_bits()),
        Value::Str(s) => ValueDto::Str(s.as_bytes().to_vec()),
    }
}

/// A value from the wire.
pub fn from_dto(v: &ValueDto) -> Value {
    match v {
        ValueDto::Int(i) => Value::Int(*i),
        ValueDto::Float(b) => Value::Float(f32::from_bits(*b)),
        ValueDto::Str(s) => Value::Str(RStr::new(s)),
    }
}
