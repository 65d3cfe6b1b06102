//! Commands on a player that is not in the zone (`Name`, `Attribute`, `GiveItem`,
//! `SetAttribute`, `Warp`, … of a handle the zone does not host): the script waits while
//! the gateway asks the zone hosting the player, which runs the same command on its own
//! copy and answers. A query that finds no player, or no answer in time, reads as 0, 0.0
//! or "". An action carries an [`ActionId`]; the hosting zone takes it once (the
//! character remembers it, `PlayerData::applied`, and travels with it), so the gateway may
//! deliver it again after a handoff or a node loss without duplicating an item or gold.

use script::natives::{self, Native};
use script::vm::{Flow, NativeCx};
use script::{RStr, Value};
use shared::internal::{ActionId, MAX_APPLIED_ACTIONS, ScriptStoreOp, ValueDto};

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

/// The commands a script may have a zone elsewhere carry out on its player: they change
/// the player (or what its client shows) and take no handle but the player's own.
pub fn is_remote_action(n: Native) -> bool {
    matches!(
        n,
        Native::GiveItem
            | Native::GiveXp
            | Native::SetAttribute
            | Native::ChangeAttribute
            | Native::SetMaxAttribute
            | Native::ChangeMaxAttribute
            | Native::SetGold
            | Native::ChangeGold
            | Native::SetMoney
            | Native::ChangeMoney
            | Native::SetActorGlobal
            | Native::SetReputation
            | Native::SetFactionRating
            | Native::ChangeFactionRating
            | Native::SetHomeFaction
            | Native::SetResistance
            | Native::SetActorLevel
            | Native::SetActorGuild
            | Native::KillActor
            | Native::Warp
            | Native::NewQuest
            | Native::UpdateQuest
            | Native::CompleteQuest
            | Native::DeleteQuest
            | Native::AddAbility
            | Native::DeleteAbility
            | Native::SetAbilityLevel
            | Native::SetName
            | Native::SetTag
            | Native::AddActorEffect
            | Native::DeleteActorEffect
            | Native::ScreenFlash
            | Native::PlaySound
            | Native::PlayMusic
            | Native::PlaySpeech
            | Native::UpdateXpBar
            | Native::CreateFloatingNumber
            | Native::MoveActor
            | Native::RotateActor
            | Native::AnimateActor
    )
}

/// If `n` is a query or an action on a player handle this zone does not host, ask the
/// cluster and suspend; `None` to run the command here.
pub fn ask(
    h: &mut ZoneHost<'_>,
    n: Native,
    args: &[Value],
) -> Option<Result<Flow, script::RuntimeError>> {
    let action = is_remote_action(n);
    if !action && !is_remote_query(n) {
        return None;
    }
    let handle = args.first()?.to_int();
    if handle <= 0 || h.actor(handle).is_some() {
        return None;
    }
    let handle = u32::try_from(handle).ok()?;
    // An NPC handle of this instance's own range names no one here any more (stale): run
    // here, doing nothing, rather than asking the cluster.
    let own = h.st.cfg.npc_handle_base;
    if handle >= NPC_HANDLE_BASE && handle >= own && handle - own < h.st.cfg.npc_handle_span {
        return None;
    }
    let sig = natives::sig(n)?;
    let action = action.then(|| {
        let run = *h.cx.run.get_or_insert_with(|| h.st.transfer_ids.mint());
        h.cx.actions = h.cx.actions.saturating_add(1);
        ActionId {
            run,
            seq: h.cx.actions,
        }
    });
    let req = h.st.scripts.next_request;
    h.st.scripts.next_request += 1;
    h.st.scripts.requests.insert(req, h.id);
    h.st.outputs.push(ZoneOutput::ScriptStore {
        req,
        op: ScriptStoreOp::ActorQuery {
            handle,
            native: sig.name.to_owned(),
            args: args.iter().map(to_dto).collect(),
            action,
        },
    });
    h.cx.pending_io = Some(PendingIo::Value {
        text: sig.ret == Some(script::Ty::Str),
    });
    Some(h.suspend(Wait::Store { req }))
}

/// The gateway asks about `player`, who plays here, or has an action taken on it: run the
/// command on it and answer (`None` when it is not here, is leaving in a handoff, or the
/// command is neither; the gateway delivers an action again wherever the player is then).
/// An action this player has taken already is answered 0 and not taken again.
pub(crate) fn answer(
    st: &mut ZoneState,
    qid: u64,
    player: PlayerKey,
    native: &str,
    args: &[ValueDto],
    action: Option<ActionId>,
) {
    let value = match action {
        None => evaluate(st, player, native, args, false),
        Some(id) => act(st, player, native, args, id),
    };
    st.outputs.push(ZoneOutput::ScriptStore {
        req: 0,
        op: ScriptStoreOp::ActorAnswer { qid, value },
    });
}

/// An action on a player here, taken once: `None` while it cannot be taken here (the
/// player is not here or is frozen in a handoff, whose copy would not carry it).
fn act(
    st: &mut ZoneState,
    player: PlayerKey,
    native: &str,
    args: &[ValueDto],
    id: ActionId,
) -> Option<ValueDto> {
    let sig = natives::lookup(&native.to_ascii_lowercase())?;
    if !is_remote_action(sig.native) {
        return None;
    }
    let actor = st.by_player(player)?;
    let a = st.get(actor)?;
    if a.frozen() {
        return None;
    }
    let p = a.player_data.as_deref()?;
    if p.applied.iter().any(|x| x.run == id.run && x.seq >= id.seq) {
        st.scripts.stats.duplicate_actions += 1;
        return Some(ValueDto::Int(0));
    }
    let value = evaluate(st, player, native, args, true);
    if let Some(p) = st.get_mut(actor).and_then(|a| a.player_data.as_deref_mut()) {
        p.applied.retain(|x| x.run != id.run);
        if p.applied.len() >= MAX_APPLIED_ACTIONS {
            p.applied.remove(0);
        }
        p.applied.push(id);
    }
    st.scripts.stats.remote_actions += 1;
    // Taken, whatever the command returned (an unknown item gives nothing, as here).
    Some(value.unwrap_or(ValueDto::Int(0)))
}

fn evaluate(
    st: &mut ZoneState,
    player: PlayerKey,
    native: &str,
    args: &[ValueDto],
    action: bool,
) -> Option<ValueDto> {
    let id = st.by_player(player)?;
    evaluate_on(st, id, native, args, action)
}

/// The gateway asks about (or acts on) an NPC of this instance for a script elsewhere
/// (its handle is in this instance's range): run the command on it and answer (`None`
/// when no such NPC lives here). An NPC does not travel, so an action on it is delivered
/// once and taken at most once.
pub(crate) fn answer_npc(
    st: &mut ZoneState,
    qid: u64,
    native: &str,
    args: &[ValueDto],
    action: bool,
) {
    let value = match args.first() {
        Some(ValueDto::Int(h)) => st
            .actor_by_handle(*h)
            .filter(|&id| st.get(id).is_some_and(|a| !a.is_player()))
            .and_then(|id| evaluate_on(st, id, native, args, action)),
        _ => None,
    };
    st.outputs.push(ZoneOutput::ScriptStore {
        req: 0,
        op: ScriptStoreOp::ActorAnswer { qid, value },
    });
}

/// The gateway asks for this instance's actors (`FirstActorInZone` of a script elsewhere):
/// their handles in the zone's order, at most [`MAX_WALK`].
pub(crate) fn answer_walk(st: &mut ZoneState, qid: u64) {
    let handles: Vec<i32> = st
        .chain_members(st.zone, crate::sim::state::ChainKind::Zone)
        .into_iter()
        .filter_map(|i| st.at(i))
        .map(|a| a.handle)
        .take(MAX_WALK)
        .collect();
    st.outputs.push(ZoneOutput::ScriptStore {
        req: 0,
        op: ScriptStoreOp::ZoneActorsAnswer { qid, handles },
    });
}

/// The most actors a walk of another instance lists (`FirstActorInZone`).
pub const MAX_WALK: usize = shared::internal::MAX_ZONE_ACTORS;

fn evaluate_on(
    st: &mut ZoneState,
    id: crate::sim::events::ActorId,
    native: &str,
    args: &[ValueDto],
    action: bool,
) -> Option<ValueDto> {
    let sig = natives::lookup(&native.to_ascii_lowercase())?;
    let allowed = if action {
        is_remote_action(sig.native)
    } else {
        is_remote_query(sig.native)
    };
    if !allowed || args.len() > 8 {
        return None;
    }
    let handle = st.handle_of(id);
    let mut values: Vec<Value> = args.iter().map(from_dto).collect();
    // The handle asked about is this actor's (a player's is the same on every node).
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

/// The gateway has this zone put an item on its ground for a script elsewhere
/// (`SpawnItem` into this instance); its handle answers (`None`: an unknown item or a bad
/// amount, logged).
pub(crate) fn spawn_item(
    st: &mut ZoneState,
    qid: u64,
    item: &str,
    amount: u16,
    pos: (f32, f32, f32),
) {
    let area = st.content.area.name.clone();
    let instance = i32::from(st.cfg.instance);
    let spawned = crate::sim::items::ground::spawn_item(
        st,
        item,
        i32::from(amount),
        &area,
        pos.0,
        pos.1,
        pos.2,
        instance,
    );
    let value = match spawned {
        Ok(h) => Some(ValueDto::Int(i32::try_from(h).unwrap_or(0))),
        Err(e) => {
            crate::sim::script_table::log(
                st,
                "SpawnItem",
                format!("SpawnItem from elsewhere: {e}"),
            );
            None
        }
    };
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
