//! Phase 1: apply [`ZoneInput`]s in order. Joins, leaves and transfers go to [`setarea`];
//! player actions are dispatched to their rule modules; `P_StandardUpdate` is validated
//! here with the V1 hardening (reference §4.1):
//!
//! 1. nothing is applied while `IgnoreUpdate` is set (also while frozen in a transfer),
//!    nor to a mount that has a rider;
//! 2. all five floats go through `ClampWorldCoord`; a field whose float was invalid keeps
//!    its previous value (hardening: a NaN does not become a jump to 0);
//! 3. `WalkingBackward` clears `IsRunning`;
//! 4. the speed clamp `maxDelta = max(2.0, 0.15 × (ratio + 0.5) × elapsed)` keeps the old
//!    X/Z when exceeded, except on the first update or when `elapsed < 0` or `> 5 s`
//!    (accept and re-baseline);
//! 5. `LastPosUpdateMs = now`, `Old = X/Z`;
//! 6. a rider's update moves its mount.
//!
//! [`setarea`]: super::setarea

use shared::proto::SpellUpdate;

use super::events::{PlayerAction, PlayerKey, Rejection, StandardUpdateIn, ZoneInput};
use super::state::{ActorId, ZoneState};
use super::{checkpoint, combat, commands, items, mount, party, pets, setarea, spells, stats};

/// Whether a float passes `ClampWorldCoord` unchanged.
#[inline]
fn valid_coord(v: f32) -> bool {
    v > -shared::wire::WORLD_COORD_MAX && v < shared::wire::WORLD_COORD_MAX
}

/// Lag-spike window: an update later than this re-baselines instead of clamping.
pub const REBASELINE_MS: u64 = 5000;

/// Apply one input.
pub(crate) fn apply(st: &mut ZoneState, input: ZoneInput) {
    match input {
        ZoneInput::PlayerJoined {
            player,
            rid,
            is_dm,
            state,
            arrival,
        } => {
            setarea::join(st, player, rid, is_dm, *state, &arrival);
        }
        ZoneInput::PlayerLeft { player } => setarea::leave(st, player),
        ZoneInput::Player { player, action } => {
            let Some(id) = st.by_player(player) else {
                st.reject(Some(player), Rejection::UnknownPlayer);
                return;
            };
            dispatch(st, player, id, action);
        }
        ZoneInput::TransferIn {
            transfer_id,
            player,
            is_dm,
            state,
            arrival,
        } => {
            setarea::transfer_in(st, transfer_id, player, is_dm, *state, &arrival);
        }
        ZoneInput::Warp {
            player,
            area,
            instance,
        } => match st.by_player(player) {
            Some(id) => setarea::warp_command(st, id, &area, instance),
            None => st.reject(Some(player), Rejection::UnknownPlayer),
        },
        ZoneInput::TransferAck { transfer_id } => setarea::transfer_ack(st, transfer_id),
        ZoneInput::TransferCommit { transfer_id } => setarea::transfer_commit(st, transfer_id),
        ZoneInput::TransferAbort { transfer_id } => setarea::transfer_abort(st, transfer_id),
        ZoneInput::PartyMembers { player, members } => match st.by_player(player) {
            Some(id) => party::set_members(st, id, members),
            None => st.reject(Some(player), Rejection::UnknownPlayer),
        },
        ZoneInput::TransferNack {
            transfer_id,
            reason,
        } => {
            setarea::transfer_nack(st, transfer_id, &reason);
        }
        ZoneInput::ScriptStoreReply { req, result } => {
            super::runtime::store_reply(st, req, result);
        }
        ZoneInput::SuperGlobal { slot, value } => super::script_table::superglobal(st, slot, value),
        ZoneInput::Env { name, value } => super::script_table::set_env(st, name, value),
        ZoneInput::ActorQuery {
            qid,
            player,
            native,
            args,
            action,
        } => super::runtime::remote::answer(st, qid, player, &native, &args, action),
        ZoneInput::NpcQuery {
            qid,
            native,
            args,
            action,
        } => super::runtime::remote::answer_npc(st, qid, &native, &args, action),
        ZoneInput::ZoneActors { qid } => super::runtime::remote::answer_walk(st, qid),
        ZoneInput::SpawnItem {
            qid,
            item,
            amount,
            pos,
        } => super::runtime::remote::spawn_item(st, qid, &item, amount, pos),
        ZoneInput::SpawnNpc {
            qid,
            template,
            pos,
            script,
            death_script,
        } => super::runtime::remote::spawn(st, qid, template, pos, script, death_script),
        ZoneInput::LinkedWeather { area, weather } => {
            super::weather::linked(st, area, weather);
        }
        ZoneInput::Scripts { current, retained } => {
            super::script_table::replace_code(st, current, retained);
        }
        ZoneInput::RunScript { script, func } => {
            super::script_table::queue(st, &script, &func, 0, 0, script::RStr::EMPTY);
        }
        ZoneInput::RestoreGround { items } => checkpoint::restore_ground(st, items),
        ZoneInput::Shutdown => setarea::shutdown(st),
    }
}

/// Whether an input is applied as it arrives, between ticks: a handoff message, a request
/// that starts one (a DM's `/warp`, an operator's `/warpother`) or the client's
/// acknowledgement that ends one
/// ([`super::ZoneSim::handoff`] applies those between ticks, so a SetArea does not wait for
/// the next tick: Realm Crafter's server ran a `/warp` as its packet arrived); or a
/// script's conversation with the cluster — a question from a script elsewhere about this
/// zone, or the answer to one of this zone's scripts, which then runs on at once — so a
/// command on an actor elsewhere costs a round trip, not a tick at each end (Realm
/// Crafter's scripts asked one process).
pub fn between_ticks(input: &ZoneInput) -> bool {
    matches!(
        input,
        ZoneInput::ActorQuery { .. }
            | ZoneInput::NpcQuery { .. }
            | ZoneInput::ZoneActors { .. }
            | ZoneInput::ScriptStoreReply { .. }
            | ZoneInput::TransferIn { .. }
            | ZoneInput::TransferAck { .. }
            | ZoneInput::TransferNack { .. }
            | ZoneInput::TransferCommit { .. }
            | ZoneInput::TransferAbort { .. }
            | ZoneInput::Warp { .. }
            | ZoneInput::Player {
                action: PlayerAction::Warp { .. } | PlayerAction::AreaAck,
                ..
            }
    )
}

/// Distance from the arrival point within which a client update proves the client has
/// loaded the new area.
const ARRIVAL_PROOF_RADIUS: f32 = 8.0;

/// After a handoff (`area_ack_deadline_ms` set), whether `action` ends the wait: the
/// client's `P_ChangeArea` acknowledgement, or an update at the arrival point. Clears
/// `IgnoreUpdate` when it does.
fn arrival_acknowledged(st: &mut ZoneState, id: ActorId, action: &PlayerAction) -> bool {
    let Some(a) = st.get_mut(id) else {
        return false;
    };
    if a.area_ack_deadline_ms.is_none() || a.frozen() {
        return false;
    }
    let ok = match action {
        PlayerAction::AreaAck => true,
        PlayerAction::StandardUpdate(u) => {
            let (dx, dz) = (u.x - a.x, u.z - a.z);
            dx.is_finite() && dz.is_finite() && dx * dx + dz * dz <= ARRIVAL_PROOF_RADIUS.powi(2)
        }
        _ => false,
    };
    if ok {
        a.ignore_update = false;
        a.area_ack_deadline_ms = None;
    }
    ok
}

/// Dispatch one player action to its rule.
pub(crate) fn dispatch(st: &mut ZoneState, player: PlayerKey, id: ActorId, action: PlayerAction) {
    let (mut ignoring, is_dm) = match st.get(id) {
        Some(a) => (a.ignore_update || a.frozen(), a.is_dm),
        None => return,
    };
    if ignoring && arrival_acknowledged(st, id, &action) {
        ignoring = false;
    }
    if matches!(action, PlayerAction::AreaAck) {
        return;
    }
    if ignoring {
        st.reject(Some(player), Rejection::IgnoredUpdate);
        return;
    }
    match action {
        PlayerAction::StandardUpdate(u) => standard_update(st, player, id, &u),
        PlayerAction::AreaAck => {}
        PlayerAction::Attack { target } => combat::player_attack(st, id, target),
        PlayerAction::RightClick { target } => mount::right_click(st, id, target),
        PlayerAction::Dismount => mount::dismount(st, id),
        PlayerAction::Inventory(i) => items::on_inventory_update(st, player, id, i),
        PlayerAction::ActionBar(a) => items::bag::action_bar(st, player, id, a),
        PlayerAction::Spell(s) => match s {
            SpellUpdate::Memorise { index } => spells::memorise::request(st, player, id, index),
            SpellUpdate::Unmemorise { index } => {
                spells::memorise::forget_slot(st, player, id, index);
            }
            SpellUpdate::Fire { spell_id, target } => {
                spells::cast::cast(st, player, id, spell_id, target);
            }
        },
        PlayerAction::UseItem { slot, target } => {
            items::bag::use_item(st, player, id, slot, target)
        }
        PlayerAction::EatItem { slot, amount } => items::bag::eat(st, player, id, slot, amount),
        PlayerAction::OpenTrading(o) => items::trade::open_trading(st, player, id, o),
        PlayerAction::UpdateTrading { slot, amount } => {
            items::trade::update_trading(st, player, id, slot, amount);
        }
        PlayerAction::TradeWith { target } => items::shop::trade_with(st, id, target),
        PlayerAction::Examine { target } => super::scripts::examine_request(st, id, target),
        PlayerAction::ScriptReply(r) => super::dialogs::on_reply(st, id, r),
        PlayerAction::Jump => jump(st, id),
        PlayerAction::Chat { text } => commands::chat(st, id, &text),
        PlayerAction::SetAttribute { name, value } => {
            if is_dm {
                stats::set_attribute_by_name(st, id, &name, value, false);
            } else {
                st.reject(Some(player), Rejection::NotPermitted);
            }
        }
        PlayerAction::SetAttributeMax { name, value } => {
            if is_dm {
                stats::set_attribute_by_name(st, id, &name, value, true);
            } else {
                st.reject(Some(player), Rejection::NotPermitted);
            }
        }
        PlayerAction::Pet { pet, command } => pets::command(st, id, pet.as_deref(), &command),
        PlayerAction::Warp { area, instance } => {
            if is_dm {
                setarea::warp_command(st, id, &area, instance);
            } else {
                st.reject(Some(player), Rejection::NotPermitted);
            }
        }
        PlayerAction::Command { word, params } => commands::command(st, id, &word, &params),
    }
}

/// `P_Jump`: broadcast the jumper's RID to the other players of the zone (not while
/// mounted).
pub(crate) fn jump(st: &mut ZoneState, id: ActorId) {
    let Some(a) = st.get(id) else { return };
    if a.mount.is_some() {
        let p = a.player;
        st.reject(p, Rejection::Invalid);
        return;
    }
    let rid = a.rid;
    st.send_packet_zone(&shared::proto::JumpS2C { runtime_id: rid }, Some(id));
}

/// C→S `P_StandardUpdate` (reference §4.1 with the V1 hardening).
pub(crate) fn standard_update(
    st: &mut ZoneState,
    player: PlayerKey,
    id: ActorId,
    u: &StandardUpdateIn,
) {
    let now = st.now_ms;
    let (rider, mount, last) = match st.get(id) {
        Some(a) => (a.rider, a.mount, a.last_pos_update_ms),
        None => return,
    };
    if rider.is_some_and(|r| st.get(r).is_some()) {
        st.reject(Some(player), Rejection::RiddenMount);
        return;
    }
    let all = [u.dest_x, u.dest_z, u.y, u.x, u.z];
    let bad = all.iter().filter(|v| !valid_coord(**v)).count();
    if bad > 0 {
        st.reject(Some(player), Rejection::ClampedCoord);
    }
    if u.walking_backward && u.is_running {
        st.reject(Some(player), Rejection::RunningBackward);
    }
    // The speed clamp uses the speed that moves the actor: its mount's when riding.
    let ratio = st.speed_ratio(mount.filter(|m| st.get(*m).is_some()).unwrap_or(id));
    let Some(a) = st.get_mut(id) else { return };
    if valid_coord(u.dest_x) && valid_coord(u.dest_z) {
        a.dest_x = u.dest_x;
        a.dest_z = u.dest_z;
    } else {
        a.dest_x = a.x;
        a.dest_z = a.z;
    }
    if valid_coord(u.y) {
        a.y = u.y;
    }
    a.walking_backward = u.walking_backward;
    a.is_running = u.is_running && !u.walking_backward;
    let mut clamped = false;
    if valid_coord(u.x) && valid_coord(u.z) {
        let accept = match last {
            None => true,
            Some(l) if now < l => true,
            Some(l) if now - l > REBASELINE_MS => true,
            Some(l) => {
                let elapsed = (now - l) as f32;
                let max_delta = (0.15 * (ratio.max(0.0) + 0.5) * elapsed).max(2.0);
                let (dx, dz) = (u.x - a.x, u.z - a.z);
                (dx * dx + dz * dz).sqrt() <= max_delta
            }
        };
        if accept {
            a.x = u.x;
            a.z = u.z;
        } else {
            clamped = true;
        }
    }
    a.last_pos_update_ms = Some(now);
    a.old_x = a.x;
    a.old_z = a.z;
    let (x, y, z, dx, dz, run, back) = (
        a.x,
        a.y,
        a.z,
        a.dest_x,
        a.dest_z,
        a.is_running,
        a.walking_backward,
    );
    if clamped {
        st.reject(Some(player), Rejection::SpeedClamp);
    }
    st.grid_update(id.idx);
    if let Some(m) = mount.and_then(|m| st.get_mut(m)) {
        m.x = x;
        m.y = y;
        m.z = z;
        m.old_x = x;
        m.old_z = z;
        m.dest_x = dx;
        m.dest_z = dz;
        m.is_running = run;
        m.walking_backward = back;
        let midx = m.id.idx;
        st.grid_update(midx);
    }
}
