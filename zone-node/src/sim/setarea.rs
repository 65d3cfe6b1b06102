//! `SetArea` (reference §7.8) and everything that brings an actor into or out of this
//! AreaInstance: login join, logout, NPC spawn, warps inside the instance, and transfers to
//! and from other AreaInstances.
//!
//! # Inside the instance
//! The mount is warped first, then the pets; the actor is placed at the waypoint, portal or
//! position; its target is cleared and `Dest = Old = position`; the speed clamp is
//! re-baselined (the next client update is accepted). The player gets `P_ChangeArea`, the
//! others `P_RepositionActor "M"` (quirk fix: Realm Crafter omitted the `"M"`).
//!
//! # To another instance
//! A two-phase handoff (`docs/handoff.md`). [`transfer_out`] freezes the actor with its
//! mount and pets (`IgnoreUpdate`, out of the chains and the grid, so out of every
//! broadcast) and emits [`ZoneOutput::TransferOut`] with the whole state. The destination
//! checks and holds it invisibly ([`transfer_in`]) and acknowledges. `TransferAck` frees
//! the actor here for good (`P_ActorGone` to the zone) and commits; the destination then
//! makes it live ([`transfer_commit`]). `TransferNack` or the timeout (2 s default) puts it
//! back, playable, and tells the player why; an ack that comes after that is answered
//! with an abort, so the destination drops its copy: the actor is never in two places. A
//! player's RuntimeID travels with it; pets and mounts get fresh NPC RIDs at the
//! destination. Incoming duplicate transfer ids are refused.

use shared::proto::{ActionSlot, StartGameReply, XpUpdate};

use super::area::TemplateProps;
use super::engine::EngineEvent;
use super::events::{
    ActorState, Arrival, CharacterSnapshot, Checkpoint, PlayerKey, Rejection, RuntimeId,
    SnapshotReason, TransferId, TransferOut, ZoneOutput,
};
use super::packets::{self, CHAT_RED};
use super::state::{
    Actor, ActorId, ChainKind, PendingTransfer, PlayerData, PreparedArrival, ZoneState,
};

/// How long an arrived player's updates may be ignored while its client loads the new
/// area (cleared earlier by its `P_ChangeArea` acknowledgement or an update at the
/// arrival point).
pub const ARRIVAL_ACK_TIMEOUT_MS: u64 = 5_000;

/// How many incoming transfer ids are remembered for duplicate detection.
const SEEN_TRANSFERS: usize = 4096;

fn template_or_default(st: &ZoneState, id: u16) -> TemplateProps {
    st.content
        .template(id)
        .cloned()
        .unwrap_or_else(|| TemplateProps {
            id,
            aggressive_range: 50.0,
            ..TemplateProps::default()
        })
}

/// Place an actor (fresh state) according to an arrival.
fn place(st: &ZoneState, a: &mut Actor, arrival: &Arrival) {
    let p = st.resolve_arrival(arrival, (a.x, a.y, a.z, a.yaw));
    a.x = p.x;
    a.y = p.y;
    a.z = p.z;
    a.yaw = p.yaw;
    a.dest_x = p.x;
    a.dest_z = p.z;
    a.old_x = p.x;
    a.old_z = p.z;
    a.last_pos_update_ms = None;
    if let Some(w) = p.waypoint {
        a.current_waypoint = w;
        a.last_portal = None;
    }
    if let Some(portal) = p.portal {
        a.last_portal = Some(portal);
        a.last_portal_ms = st.now_ms;
    } else if matches!(arrival, Arrival::Saved) {
        // Fix (docs/simulation.md): a character saved standing in a portal (it logged out
        // right after arriving through it) is not bounced through that portal on login;
        // the portal is locked as if it had just arrived there.
        let inside = st.content.area.portals.iter().position(|q| {
            let (dx, dy, dz) = (a.x - q.x, a.y - q.y, a.z - q.z);
            q.size > 0.0 && dx * dx + dy * dy + dz * dz < q.size * q.size
        });
        if let Some(i) = inside.and_then(|i| u16::try_from(i).ok()) {
            a.last_portal = Some(i);
            a.last_portal_ms = st.now_ms;
        }
    }
}

/// Insert a player and its companions from a state; `None` if refused.
fn insert_player(
    st: &mut ZoneState,
    player: PlayerKey,
    rid: RuntimeId,
    is_dm: bool,
    state: &ActorState,
    arrival: &Arrival,
) -> Option<ActorId> {
    if st.by_player(player).is_some() || !st.player_rid_ok(rid) {
        return None;
    }
    let t = template_or_default(st, state.template);
    let mut a = Actor::from_state(&t, state);
    a.player = Some(player);
    a.is_dm = is_dm;
    a.player_data = Some(Box::new(PlayerData {
        quests: state.quests.clone(),
        action_bar: state.action_bar.clone(),
        outbox: Vec::new(),
        outbox_urgent: false,
        account: state.account.clone(),
        email: state.email.clone(),
        banned: false,
        offers: Vec::new(),
        spell_view: Vec::new(),
        memorising: Vec::new(),
        last_cast_ms: None,
        fence: state.fence,
        applied: state
            .applied_actions
            .iter()
            .rev()
            .take(shared::internal::MAX_APPLIED_ACTIONS)
            .rev()
            .copied()
            .collect(),
    }));
    place(st, &mut a, arrival);
    let id = st.insert_actor(a, rid)?;
    super::effects::restore(st, id, &state.effects);
    super::spells::restore(st, id, state);
    insert_companions(st, id, id, state);
    super::appear::announce_arrival(st, id);
    // Its scripts come with it and carry on here.
    super::script_table::restore_owned(st, id, &state.scripts);
    Some(id)
}

/// Insert the mount and pets carried in a state, next to their owner.
fn insert_companions(st: &mut ZoneState, root: ActorId, owner: ActorId, state: &ActorState) {
    let Some((x, y, z)) = st.get(owner).map(|a| (a.x, a.y, a.z)) else {
        return;
    };
    if let Some(ms) = &state.mount
        && let Some(m) = insert_npc_from_state(st, ms, x, y, z)
    {
        if let Some((r, mo)) = st.pair_mut(owner, m) {
            r.mount = Some(mo.id);
            mo.rider = Some(r.id);
        }
        announce_companion(st, m, root);
    }
    for ps in &state.pets {
        if let Some(p) = insert_npc_from_state(st, ps, x, y, z) {
            st.slave_link(owner, p);
            announce_companion(st, p, root);
            insert_companions(
                st,
                root,
                p,
                &ActorState {
                    pets: Vec::new(),
                    ..ps.clone()
                },
            );
        }
    }
}

/// A companion's `P_NewActor` to the zone, except its owner (who gets it with the list of
/// every other actor on arrival).
fn announce_companion(st: &mut ZoneState, id: ActorId, root: ActorId) {
    if !st.announce {
        return;
    }
    let Some(a) = st.get(id) else { return };
    let na = packets::new_actor(st, a);
    st.send_packet_zone(&na, Some(root));
}

fn insert_npc_from_state(
    st: &mut ZoneState,
    s: &ActorState,
    x: f32,
    y: f32,
    z: f32,
) -> Option<ActorId> {
    let t = template_or_default(st, s.template);
    let mut a = Actor::from_state(&t, s);
    a.x = x;
    a.y = y;
    a.z = z;
    a.dest_x = x;
    a.dest_z = z;
    a.old_x = x;
    a.old_z = z;
    let rid = st.alloc_npc_rid()?;
    let id = st.insert_actor(a, rid)?;
    super::effects::restore(st, id, &s.effects);
    Some(id)
}

/// The rest of Realm Crafter's start sequence after `P_ChangeArea` and the `P_NewActor`s
/// (reference §5 step 6): twelve `P_StartGame` action-bar parts (`firstSlot u8` + 3 ×
/// `u16`-length slot strings, as saved), the `P_StartGame` carrying the RuntimeID, then
/// `P_XPUpdate "B"` with the XP bar, then `P_ActorEffect "A"` for every effect the
/// character owns (reference §9.12).
#[doc(alias = "P_StartGame")]
fn start_sequence(st: &mut ZoneState, id: ActorId, rid: RuntimeId, state: &ActorState) {
    for part in 0..12u8 {
        let slots = (0..3)
            .map(|k| {
                // Saved as Latin-1 text (an item slot is `"I"` + two raw bytes).
                let bytes = state
                    .action_bar
                    .get(usize::from(part * 3 + k))
                    .map(|s| {
                        shared::wire::RcString::from_latin1(s)
                            .map_or_else(|| s.as_bytes().to_vec(), |r| r.0)
                    })
                    .unwrap_or_default();
                // As saved, at most 1024 bytes.
                ActionSlot::from_saved(bytes.get(..bytes.len().min(1024)).unwrap_or(&[]))
            })
            .collect();
        let bar = StartGameReply::ActionBar {
            first_slot: part * 3,
            slots,
        };
        st.send_packet(id, &bar);
    }
    st.send_packet(id, &StartGameReply::RuntimeId { runtime_id: rid });
    // Realm Crafter's `LoginMessage$` (it sent a lone system byte when empty: not copied).
    if !st.content.rules.login_message.is_empty() {
        let text = st.content.rules.login_message.clone();
        packets::send_chat(st, id, packets::CHAT_SYSTEM, &text);
    }
    st.send_packet(
        id,
        &XpUpdate::BarLevel {
            bar_level: state.xp_bar,
        },
    );
    super::effects::announce(st, id);
}

/// A player joins the game in this instance (`P_StartGame` → `SetArea`).
pub(crate) fn join(
    st: &mut ZoneState,
    player: PlayerKey,
    rid: RuntimeId,
    is_dm: bool,
    state: ActorState,
    arrival: &Arrival,
) {
    match insert_player(st, player, rid, is_dm, &state, arrival) {
        Some(id) => {
            super::spells::on_login(st, id);
            start_sequence(st, id, rid, &state);
            // Rules: `Login.Main`, then the area's Entry script.
            st.announce(EngineEvent::LoggedIn { actor: id });
            st.announce(EngineEvent::EnteredArea { actor: id });
        }
        None => st.reject(Some(player), Rejection::BadJoin),
    }
}

/// The player disconnected: persist (by the checkpoint rule), tell the zone, free the
/// actor with its companions.
pub(crate) fn leave(st: &mut ZoneState, player: PlayerKey) {
    let Some(id) = st.by_player(player) else {
        st.reject(Some(player), Rejection::UnknownPlayer);
        return;
    };
    if let Some(snapshot) = depart(st, player) {
        // (`id` is freed, but still names it in `entangled`, the set the rule reads.)
        super::checkpoint::persist(st, id, snapshot);
    }
    st.entangled.remove(&id);
    st.outputs.push(ZoneOutput::PlayerRemoved { player });
}

/// The instance stops (`StopInstance`, a drain): every player leaves, and their final
/// snapshots and every ground item go out as one group, before any of them is reported
/// removed. An instance that never had a player leave this way nor an item on its ground
/// (no handle ever issued, none restored) has nothing to save and sends nothing.
pub(crate) fn shutdown(st: &mut ZoneState) {
    let mut players = Vec::new();
    let mut removed = Vec::new();
    for idx in st.chain_members(st.online, ChainKind::Online) {
        let Some(player) = st.at(idx).and_then(|a| a.player) else {
            continue;
        };
        if let Some(s) = depart(st, player) {
            players.push(s);
        }
        removed.push(player);
    }
    // Whether the stored ground may differ from what lies here (an item now, or a change
    // since the last save: all of them picked up).
    let ground_matters = st.ground_dirty || !st.ground.is_empty();
    st.entangled.clear();
    st.ground_dirty = false;
    if players.is_empty() && !ground_matters {
        return;
    }
    let ground = Some(super::checkpoint::ground_dto(st));
    st.outputs.push(ZoneOutput::Checkpoint(Box::new(Checkpoint {
        players,
        ground,
    })));
    for player in removed {
        st.outputs.push(ZoneOutput::PlayerRemoved { player });
    }
}

/// A player leaves the instance for good: `Logout.Main`, its scripts saved or ended, the
/// actor freed with its companions. Returns its final snapshot (reason `Logout`) for the
/// caller to persist, before it reports the player removed.
pub(crate) fn depart(st: &mut ZoneState, player: PlayerKey) -> Option<CharacterSnapshot> {
    let id = st.by_player(player)?;
    // The party lives on at the gateway (which tells the others); forget it here.
    super::party::forget(st, id);
    // A trade never outlives its trader here: the partner's window closes.
    super::items::trade::cancel_for(st, id);
    // Rules: `Logout.Main` before the snapshot, so what it changes is saved.
    st.trigger(EngineEvent::LoggingOut { actor: id });
    // Its scripts: persistent ones are saved with it (paused), the others end.
    super::script_table::player_logout(st, id);
    let snapshot = super::checkpoint::player_state(st, id).map(|state| CharacterSnapshot {
        player,
        reason: SnapshotReason::Logout,
        state,
    });
    st.flush_player(id);
    // Its persistent scripts left in the snapshot.
    super::script_table::drop_owned(st, id);
    // A frozen player (mid-transfer) leaves too: its pending transfer is decided as an
    // abort (it was saved here), so the shell's transfer table and the destination let go.
    let dropped: Vec<TransferId> = st
        .transfers
        .iter()
        .filter(|(_, t)| t.actor == id)
        .map(|(k, _)| *k)
        .collect();
    for tid in dropped {
        st.transfers.remove(&tid);
        st.outputs
            .push(ZoneOutput::AbortTransfer { transfer_id: tid });
    }
    // Its mount and pets go with it, then the player: the one way out of a zone.
    for c in super::despawn::with_companions(st, id) {
        super::despawn::despawn(st, c, super::despawn::Cause::LoggedOut);
    }
    snapshot
}

/// `SetArea(A, area, inst, …)`: inside this instance, or a transfer to another.
#[doc(alias = "SetArea")]
pub fn set_area(st: &mut ZoneState, id: ActorId, area: &str, instance: u16, arrival: &Arrival) {
    if st.get(id).is_none() {
        return;
    }
    let here = area.eq_ignore_ascii_case(&st.content.area.name) && instance == st.cfg.instance;
    if !here {
        transfer_out(st, id, area, instance, arrival);
        return;
    }
    // The mount first (it follows the rider to the same spot), then the pets.
    let mount = st.get(id).and_then(|a| a.mount);
    let pets = st.slaves_of(id);
    let mut a_place = None;
    if let Some(a) = st.get(id) {
        let mut tmp = a.clone();
        place(st, &mut tmp, arrival);
        a_place = Some((
            tmp.x,
            tmp.y,
            tmp.z,
            tmp.yaw,
            tmp.current_waypoint,
            tmp.last_portal,
            tmp.last_portal_ms,
        ));
    }
    let Some((x, y, z, yaw, wp, lp, lpt)) = a_place else {
        return;
    };
    for c in mount
        .into_iter()
        .chain(pets.iter().copied())
        .chain(std::iter::once(id))
    {
        let Some(a) = st.get_mut(c) else { continue };
        a.x = x;
        a.y = y;
        a.z = z;
        a.yaw = yaw;
        a.dest_x = x;
        a.dest_z = z;
        a.old_x = x;
        a.old_z = z;
        a.ai_target = None;
        a.last_pos_update_ms = None;
        if c == id {
            a.current_waypoint = wp;
            a.last_portal = lp;
            a.last_portal_ms = lpt;
        }
        let rid = a.rid;
        st.grid_update(c.idx);
        st.send_packet_zone(&packets::reposition(rid, x, y, z), Some(c));
    }
    if let Some(a) = st.get(id)
        && a.is_player()
    {
        let ca = packets::change_area(st, a);
        st.send_packet(id, &ca);
        // The client reloads the area: show it the items on the ground again.
        super::items::ground::show_all(st, id);
    }
}

/// `/warp area[,inst]` (DM): to the area's first named portal.
pub(crate) fn warp_command(st: &mut ZoneState, id: ActorId, area: &str, instance: u16) {
    let world = st.content.world.clone();
    let dest = if area.eq_ignore_ascii_case(&st.content.area.name) {
        st.content
            .area
            .portals
            .iter()
            .position(|p| !p.name.is_empty())
            .and_then(|i| u16::try_from(i).ok())
    } else {
        match world.area_by_name(area) {
            Some(a) => a
                .portals
                .iter()
                .find(|p| !p.name.is_empty())
                .map(|p| p.index),
            None => {
                let player = st.get(id).and_then(|a| a.player);
                st.reject(player, Rejection::Invalid);
                packets::send_chat(st, id, CHAT_RED, "Area not found");
                return;
            }
        }
    };
    let name = world
        .area_by_name(area)
        .map_or_else(|| area.to_owned(), |a| a.name.clone());
    set_area(st, id, &name, instance, &Arrival::Portal(dest.unwrap_or(0)));
}

fn freeze(st: &mut ZoneState, id: ActorId, tid: TransferId) -> Vec<ActorId> {
    let mut all = vec![id];
    let mut i = 0;
    while let Some(&cur) = all.get(i) {
        i += 1;
        if all.len() > 64 {
            break;
        }
        if let Some(m) = st.get(cur).and_then(|a| a.mount)
            && !all.contains(&m)
        {
            all.push(m);
        }
        for p in st.slaves_of(cur) {
            if !all.contains(&p) {
                all.push(p);
            }
        }
    }
    for &c in &all {
        if let Some(a) = st.get_mut(c) {
            a.transfer = Some(tid);
            a.ignore_update = true;
        }
        st.unlink_from_zone(c);
    }
    all
}

/// SetArea to another AreaInstance: freeze and emit a transfer request.
pub(crate) fn transfer_out(
    st: &mut ZoneState,
    id: ActorId,
    area: &str,
    instance: u16,
    arrival: &Arrival,
) {
    let Some(a) = st.get(id) else { return };
    if a.frozen() {
        return;
    }
    if a.rider.is_some() {
        // A ridden mount goes with its rider, not alone.
        return;
    }
    let (player, is_dm) = (a.player, a.is_dm);
    if player.is_some() {
        // Leaving the instance ends a trade (the partner's window closes).
        super::items::trade::cancel_for(st, id);
        // Rules: the old area's Exit script, before the state is taken.
        st.trigger(EngineEvent::LeavingArea { actor: id });
        // Script windows do not travel: close them and answer their questions as lost.
        super::dialogs::close_for_departure(st, id);
        // What it was sent here goes out now, before anything of its destination.
        st.flush_player(id);
    }
    let Some(state) = super::checkpoint::player_state(st, id) else {
        return;
    };
    if let Some(p) = player
        && st.entangled.contains(&id)
    {
        // Items moved between this player and others since they were saved: save them
        // together now, before the player can live anywhere else (a source lost after
        // this point leaves the destination committing exactly this state).
        let snapshot = CharacterSnapshot {
            player: p,
            reason: SnapshotReason::Transfer,
            state: state.clone(),
        };
        super::checkpoint::persist(st, id, snapshot);
    }
    let tid = st.transfer_ids.mint();
    let companions = freeze(st, id, tid);
    let deadline_ms = st.now_ms + st.cfg.transfer_timeout_ms;
    st.transfers.insert(
        tid,
        PendingTransfer {
            actor: id,
            companions,
            deadline_ms,
        },
    );
    st.outputs
        .push(ZoneOutput::TransferOut(Box::new(TransferOut {
            transfer_id: tid,
            player,
            is_dm,
            area: area.to_owned(),
            instance,
            arrival: arrival.clone(),
            state,
        })));
}

/// The destination holds the actor prepared: free it here for good and commit; or, for
/// a transfer already rolled back (a late ack), abort the destination's copy.
pub(crate) fn transfer_ack(st: &mut ZoneState, tid: TransferId) {
    let Some(t) = st.transfers.remove(&tid) else {
        st.reject(None, Rejection::UnknownTransfer);
        st.outputs
            .push(ZoneOutput::AbortTransfer { transfer_id: tid });
        return;
    };
    let player = st.get(t.actor).and_then(|a| a.player);
    if player.is_some() {
        // What it was sent here goes out before it is gone.
        st.flush_player(t.actor);
    }
    // Companions first, the player last; its scripts went with it (the one way out).
    for &c in t.companions.iter().rev() {
        super::despawn::despawn(st, c, super::despawn::Cause::Transferred);
    }
    st.outputs
        .push(ZoneOutput::CommitTransfer { transfer_id: tid });
    if let Some(p) = player {
        st.outputs.push(ZoneOutput::PlayerRemoved { player: p });
    }
}

fn rollback(st: &mut ZoneState, t: PendingTransfer, reason: &str) {
    for &c in &t.companions {
        if let Some(a) = st.get_mut(c) {
            a.transfer = None;
            a.ignore_update = false;
            a.last_pos_update_ms = None;
        }
        st.link_into_zone(c);
    }
    if st.get(t.actor).is_some_and(|a| a.is_player()) {
        let text = format!("Transfer failed: {reason}");
        packets::send_chat(st, t.actor, CHAT_RED, &text);
        // Scripts waiting for this warp carry on here.
        super::script_table::transfer_rolled_back(st, t.actor);
    }
}

/// The destination refused: restore the actor here.
pub(crate) fn transfer_nack(st: &mut ZoneState, tid: TransferId, reason: &str) {
    let Some(t) = st.transfers.remove(&tid) else {
        st.reject(None, Rejection::UnknownTransfer);
        return;
    };
    rollback(st, t, reason);
}

/// Roll back transfers whose destination did not answer in time, and drop prepared
/// arrivals whose source never decided.
pub(crate) fn check_timeouts(st: &mut ZoneState) {
    let now = st.now_ms;
    if !st.awaiting_area_ack.is_empty() {
        let mut waiting = std::mem::take(&mut st.awaiting_area_ack);
        waiting.retain(|&id| {
            let Some(a) = st.get_mut(id) else {
                return false;
            };
            match a.area_ack_deadline_ms {
                Some(d) if now >= d => {
                    // No acknowledgement: accept updates again rather than freeze forever.
                    a.ignore_update = false;
                    a.area_ack_deadline_ms = None;
                    false
                }
                Some(_) => true,
                None => false,
            }
        });
        st.awaiting_area_ack = waiting;
    }
    if !st.transfers.is_empty() {
        let due: Vec<TransferId> = st
            .transfers
            .iter()
            .filter(|(_, t)| now >= t.deadline_ms)
            .map(|(k, _)| *k)
            .collect();
        for tid in due {
            if let Some(t) = st.transfers.remove(&tid) {
                rollback(st, t, "the destination did not answer");
                // The decision is abort: the shell's transfer table forgets the transfer
                // and tells the destination (through the gateway). Without it a transfer
                // whose request was lost with a link would stay pending at the node
                // forever (found by the control-plane simulator, seed 3).
                st.outputs
                    .push(ZoneOutput::AbortTransfer { transfer_id: tid });
            }
        }
    }
    if !st.prepared.is_empty() {
        let due: Vec<TransferId> = st
            .prepared
            .iter()
            .filter(|(_, p)| now >= p.deadline_ms)
            .map(|(k, _)| *k)
            .collect();
        for tid in due {
            st.prepared.remove(&tid);
            st.outputs
                .push(ZoneOutput::PreparedExpired { transfer_id: tid });
        }
    }
}

/// An actor arrives from another AreaInstance (phase one): check it can be inserted, hold
/// it invisibly and acknowledge. Nothing is shown to anyone until [`transfer_commit`].
pub(crate) fn transfer_in(
    st: &mut ZoneState,
    tid: TransferId,
    player: Option<PlayerKey>,
    is_dm: bool,
    state: ActorState,
    arrival: &Arrival,
) {
    if st.seen_transfers.contains_key(&tid) {
        st.reject(player, Rejection::DuplicateTransfer);
        st.outputs.push(ZoneOutput::NackTransfer {
            transfer_id: tid,
            reason: "duplicate transfer".into(),
        });
        return;
    }
    st.seen_transfers.insert(tid, st.now_ms);
    while st.seen_transfers.len() > SEEN_TRANSFERS {
        let Some(oldest) = st
            .seen_transfers
            .iter()
            .min_by_key(|(_, t)| **t)
            .map(|(k, _)| *k)
        else {
            break;
        };
        st.seen_transfers.remove(&oldest);
    }
    let ok = match player {
        Some(p) => {
            st.by_player(p).is_none()
                && st.player_rid_ok(state.rid)
                && !st.prepared.values().any(|q| {
                    q.player == Some(p) || (q.player.is_some() && q.state.rid == state.rid)
                })
        }
        None => true,
    };
    if !ok {
        // No player is named: the refused copy never joined, and the player it names may
        // be live here already (a stale copy's warp into the instance he is in). Naming
        // him would make the node forget that live player's route (found by the
        // control-plane simulator, issue 41: he lived on unrouted, a ghost whose stale
        // saves refused his zone's checkpoints). The `NackTransfer` tells the source.
        st.reject(None, Rejection::BadJoin);
        st.outputs.push(ZoneOutput::NackTransfer {
            transfer_id: tid,
            reason: "refused".into(),
        });
        return;
    }
    let deadline_ms = st.now_ms + st.cfg.prepare_timeout_ms;
    st.prepared.insert(
        tid,
        PreparedArrival {
            player,
            is_dm,
            state,
            arrival: arrival.clone(),
            deadline_ms,
        },
    );
    st.outputs
        .push(ZoneOutput::AckTransfer { transfer_id: tid });
}

/// Phase two: the source let go; the prepared actor goes live here (`P_ChangeArea` and
/// the actor set to the player, `P_NewActor` to the zone, the Entry script), and the
/// character is persisted with its new area.
pub(crate) fn transfer_commit(st: &mut ZoneState, tid: TransferId) {
    let Some(p) = st.prepared.remove(&tid) else {
        st.reject(None, Rejection::UnknownTransfer);
        return;
    };
    match p.player {
        Some(player) => {
            match insert_player(st, player, p.state.rid, p.is_dm, &p.state, &p.arrival) {
                Some(id) => {
                    // IgnoreUpdate until the client shows it loaded the area.
                    let deadline = st.now_ms + ARRIVAL_ACK_TIMEOUT_MS;
                    if let Some(a) = st.get_mut(id) {
                        a.ignore_update = true;
                        a.area_ack_deadline_ms = Some(deadline);
                        st.awaiting_area_ack.push(id);
                    }
                    // Rules: the new area's Entry script.
                    st.announce(EngineEvent::EnteredArea { actor: id });
                    if let Some(state) = super::checkpoint::player_state(st, id) {
                        let snapshot = CharacterSnapshot {
                            player,
                            reason: SnapshotReason::Transfer,
                            state,
                        };
                        super::checkpoint::persist(st, id, snapshot);
                    }
                }
                None => {
                    // Checked at prepare time, so only a join that raced the commit gets
                    // here: keep the character (persist what arrived) and let go.
                    st.reject(Some(player), Rejection::BadJoin);
                    st.outputs
                        .push(ZoneOutput::Persist(Box::new(CharacterSnapshot {
                            player,
                            reason: SnapshotReason::Logout,
                            state: p.state,
                        })));
                    st.outputs.push(ZoneOutput::PlayerRemoved { player });
                }
            }
        }
        None => {
            let t = template_or_default(st, p.state.template);
            let mut a = Actor::from_state(&t, &p.state);
            place(st, &mut a, &p.arrival);
            if let Some(id) = st.alloc_npc_rid().and_then(|rid| st.insert_actor(a, rid)) {
                super::effects::restore(st, id, &p.state.effects);
                insert_companions(st, id, id, &p.state);
                super::appear::announce_arrival(st, id);
            } else {
                st.reject(None, Rejection::BadJoin);
            }
        }
    }
}

/// The source rolled back or is gone: forget the prepared actor (no one ever saw it). The
/// id is forgotten too: the gateway may send the same transfer again under it (a copy it
/// re-fenced, or one re-sent after this node's link closed), always after this abort.
pub(crate) fn transfer_abort(st: &mut ZoneState, tid: TransferId) {
    st.seen_transfers.remove(&tid);
    if st.prepared.remove(&tid).is_none() {
        st.reject(None, Rejection::UnknownTransfer);
    }
}

/// Every `persist_every_ms`, one checkpoint group ([`super::checkpoint::checkpoint_all`]):
/// a [`SnapshotReason::Periodic`] snapshot of each online, unfrozen player, in
/// `FirstOnlinePlayer` order, with the ground items when they changed.
pub(crate) fn periodic_snapshots(st: &mut ZoneState) {
    let every = st.cfg.persist_every_ms;
    if every == 0 {
        return;
    }
    if st.next_persist_ms == 0 {
        st.next_persist_ms = st.now_ms + every;
        return;
    }
    if st.now_ms < st.next_persist_ms {
        return;
    }
    st.next_persist_ms = st.now_ms + every;
    super::checkpoint::checkpoint_all(st);
}
