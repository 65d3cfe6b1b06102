//! Atomic checkpoints: players whose items or money moved between them (a trade, a shop, a
//! drop, a pickup: [`ZoneState::entangle`]) are saved together, with the area's ground
//! items when those changed, as one [`ZoneOutput::Checkpoint`] that the gateway stores in
//! one transaction (`docs/handoff.md`, "Items and the ground").
//!
//! # The rule
//! Whenever a player is persisted (logout, transfer out, the periodic checkpoint,
//! `SaveState`, the instance's shutdown) and it is entangled, the output is one group:
//! its snapshot, the current state of every other entangled player (a frozen one too: its
//! state does not change while frozen) with reason `Periodic`, and, when
//! `ground_dirty`, every ground item. Then `entangled` and `ground_dirty` are cleared: what
//! they protected is on its way to the store, ahead of anything that lets the player live
//! elsewhere (the group is output before the transfer or the removal). A player who is not
//! entangled is saved alone ([`ZoneOutput::Persist`]), as before.
//!
//! So a node lost at any moment restores, from the store, either both sides of an exchange
//! or neither: items are never duplicated or lost across a node loss.

use shared::internal::GroundItemDto;

use super::events::{ActorState, CharacterSnapshot, Checkpoint, SnapshotReason, ZoneOutput};
use super::state::{Actor, ActorId, ChainKind, GroundItem, ZoneState};

/// The whole state of an actor with its mount and pets and, for a player, its running
/// scripts (they travel with it and are saved with it).
pub(crate) fn player_state(st: &ZoneState, id: ActorId) -> Option<ActorState> {
    let mut s = st.actor_state(id)?;
    if st.get(id).is_some_and(Actor::is_player) {
        s.scripts = super::script_table::save_owned(st, id);
    }
    Some(s)
}

/// The area's ground items as saved: the time each may still lie there.
pub(crate) fn ground_dto(st: &ZoneState) -> Vec<GroundItemDto> {
    st.ground
        .values()
        .map(|g| GroundItemDto {
            item: g.item.clone(),
            x: g.x,
            y: g.y,
            z: g.z,
            remaining_ms: g.expires_ms.saturating_sub(st.now_ms),
        })
        .collect()
}

/// The ground for a group: every item when it changed since the last save, else `None`.
fn take_ground(st: &mut ZoneState) -> Option<Vec<GroundItemDto>> {
    let g = st.ground_dirty.then(|| ground_dto(st));
    st.ground_dirty = false;
    g
}

/// The snapshots of every entangled player but `except`, reason `Periodic`, in id order;
/// the set is emptied.
fn take_entangled(st: &mut ZoneState, except: Option<ActorId>) -> Vec<CharacterSnapshot> {
    let ids = std::mem::take(&mut st.entangled);
    ids.into_iter()
        .filter(|&id| Some(id) != except)
        .filter_map(|id| {
            let player = st.get(id)?.player?;
            let state = player_state(st, id)?;
            Some(CharacterSnapshot {
                player,
                reason: SnapshotReason::Periodic,
                state,
            })
        })
        .collect()
}

/// Persist one player's snapshot by the rule: alone when `id` is not entangled, else as
/// one group with every other entangled player and the ground when it is dirty.
pub(crate) fn persist(st: &mut ZoneState, id: ActorId, snapshot: CharacterSnapshot) {
    if !st.entangled.contains(&id) {
        st.outputs.push(ZoneOutput::Persist(Box::new(snapshot)));
        return;
    }
    let mut players = vec![snapshot];
    players.extend(take_entangled(st, Some(id)));
    let ground = take_ground(st);
    st.outputs.push(ZoneOutput::Checkpoint(Box::new(Checkpoint {
        players,
        ground,
    })));
}

/// Save every entangled player and, when dirty, the ground, now, as one group (nothing when
/// nobody is entangled and the ground is clean). The trade and shop rules call this once
/// an exchange is settled, so it is on disk long before the next periodic checkpoint.
pub fn checkpoint_entangled(st: &mut ZoneState) {
    if st.entangled.is_empty() && !st.ground_dirty {
        return;
    }
    let players = take_entangled(st, None);
    let ground = take_ground(st);
    push_group(st, players, ground);
}

/// Emit one group, unless it would be empty.
fn push_group(
    st: &mut ZoneState,
    players: Vec<CharacterSnapshot>,
    ground: Option<Vec<GroundItemDto>>,
) {
    if players.is_empty() && ground.is_none() {
        return;
    }
    st.outputs.push(ZoneOutput::Checkpoint(Box::new(Checkpoint {
        players,
        ground,
    })));
}

/// The periodic checkpoint and `SaveState`: one group of every online player (one frozen
/// in a handoff only when entangled: otherwise its handoff saves it), with the ground when
/// it is dirty. Nothing when there is nothing to save.
pub(crate) fn checkpoint_all(st: &mut ZoneState) {
    let mut players = Vec::new();
    for idx in st.chain_members(st.online, ChainKind::Online) {
        let Some((id, Some(player), frozen)) = st.at(idx).map(|a| (a.id, a.player, a.frozen()))
        else {
            continue;
        };
        if frozen && !st.entangled.contains(&id) {
            continue;
        }
        if let Some(state) = player_state(st, id) {
            players.push(CharacterSnapshot {
                player,
                reason: SnapshotReason::Periodic,
                state,
            });
        }
    }
    // Entangled players are all online (a player leaving takes itself out), so they are
    // in the list already.
    st.entangled.clear();
    let ground = take_ground(st);
    push_group(st, players, ground);
}

/// Put back the ground items an earlier run of this instance saved (before anyone is in
/// it): fresh handles from 1 after the last one issued, each expiring `remaining_ms` from
/// now. An item this world does not know, or an empty stack, is skipped.
pub(crate) fn restore_ground(st: &mut ZoneState, items: Vec<GroundItemDto>) {
    let c = shared::wire::clamp_world_coord;
    for g in items {
        if g.item.amount == 0 || st.content.world.item(g.item.item).is_none() {
            continue;
        }
        let Some(handle) = st.ground_handle.checked_add(1) else {
            return;
        };
        st.ground_handle = handle;
        st.ground.insert(
            handle,
            GroundItem {
                item: g.item,
                x: c(g.x),
                y: c(g.y),
                z: c(g.z),
                // The lifetime now configured bounds what was saved (a lifetime of 0,
                // "never", restores every item as never expiring).
                expires_ms: match st.cfg.ground.lifetime_ms {
                    0 => u64::MAX,
                    l => st.now_ms.saturating_add(g.remaining_ms.min(l)),
                },
            },
        );
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use std::sync::Arc;

    use super::*;
    use crate::sim::events::{InvSlot, PlayerKey, ZoneInput};
    use crate::sim::testing::{SimHarness, test_content};
    use crate::sim::{ZoneConfig, ZoneOutput};

    const SWORD: u16 = 7;

    fn harness(cfg: ZoneConfig) -> SimHarness {
        let mut content = test_content();
        let mut world = (*content.world).clone();
        world.items.push(shared::content::Item {
            id: SWORD,
            name: "Sword".into(),
            ..Default::default()
        });
        content.world = Arc::new(world);
        SimHarness::with(cfg, content)
    }

    fn sword(amount: u16) -> InvSlot {
        InvSlot {
            item: SWORD,
            attributes: vec![0; 40],
            health: 100,
            amount,
        }
    }

    fn drop_on_ground(h: &mut SimHarness, x: f32, expires_in: u64) -> u32 {
        let st = h.sim.state_mut();
        st.ground_handle += 1;
        let handle = st.ground_handle;
        let expires_ms = st.now_ms + expires_in;
        st.ground.insert(
            handle,
            GroundItem {
                item: sword(1),
                x,
                y: 0.0,
                z: 0.0,
                expires_ms,
            },
        );
        handle
    }

    fn groups(h: &SimHarness) -> Vec<&Checkpoint> {
        h.outputs
            .iter()
            .filter_map(|o| match o {
                ZoneOutput::Checkpoint(c) => Some(&**c),
                _ => None,
            })
            .collect()
    }

    fn singles(h: &SimHarness) -> Vec<&CharacterSnapshot> {
        h.outputs
            .iter()
            .filter_map(|o| match o {
                ZoneOutput::Persist(s) => Some(&**s),
                _ => None,
            })
            .collect()
    }

    fn names(c: &Checkpoint) -> Vec<(&str, SnapshotReason)> {
        c.players
            .iter()
            .map(|s| (s.state.name.as_str(), s.reason))
            .collect()
    }

    fn position(h: &SimHarness, f: impl Fn(&ZoneOutput) -> bool) -> usize {
        h.outputs.iter().position(f).expect("output present")
    }

    #[test]
    fn a_player_who_is_not_entangled_is_saved_alone() {
        let mut h = harness(ZoneConfig::default());
        let (a, _) = h.spawn_player("Alice", 0.0, 0.0);
        h.spawn_player("Bob", 1.0, 0.0);
        drop_on_ground(&mut h, 3.0, 60_000);
        h.sim.state_mut().ground_dirty = true;
        h.clear();
        h.push(ZoneInput::PlayerLeft { player: a });
        h.tick();
        assert!(groups(&h).is_empty());
        let s = singles(&h);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].state.name, "Alice");
        assert_eq!(s[0].reason, SnapshotReason::Logout);
        // The ground waits for a group that needs it.
        assert!(h.sim.state().ground_dirty);
    }

    #[test]
    fn an_entangled_logout_saves_the_others_and_the_ground_in_one_group_first() {
        let mut h = harness(ZoneConfig::default());
        let (a, ia) = h.spawn_player("Alice", 0.0, 0.0);
        let (_, ib) = h.spawn_player("Bob", 1.0, 0.0);
        h.spawn_player("Carol", 2.0, 0.0);
        let handle = drop_on_ground(&mut h, 3.0, 60_000);
        h.actor_mut(ib).gold = 50;
        h.sim.state_mut().entangle(&[ia, ib], true);
        h.clear();
        let now = h.now;
        h.push(ZoneInput::PlayerLeft { player: a });
        h.tick();
        let g = groups(&h);
        assert_eq!(g.len(), 1, "{:?}", h.outputs);
        assert_eq!(
            names(g[0]),
            vec![
                ("Alice", SnapshotReason::Logout),
                ("Bob", SnapshotReason::Periodic)
            ]
        );
        assert_eq!(g[0].players[1].state.gold, 50);
        let ground = g[0].ground.as_ref().expect("the ground is saved");
        assert_eq!(ground.len(), 1);
        assert_eq!(ground[0].item, sword(1));
        assert_eq!(
            ground[0].remaining_ms,
            h.sim.state().ground[&handle].expires_ms - now
        );
        assert!(singles(&h).is_empty());
        // Before the player is let go; and everything is saved, so nothing is pending.
        let saved = position(&h, |o| matches!(o, ZoneOutput::Checkpoint(_)));
        let removed = position(
            &h,
            |o| matches!(o, ZoneOutput::PlayerRemoved { player } if *player == a),
        );
        assert!(saved < removed);
        let st = h.sim.state();
        assert!(st.entangled.is_empty());
        assert!(!st.ground_dirty);
        // Bob's next save is a plain one again.
        let b = st.get(ib).unwrap().player.unwrap();
        h.clear();
        h.push(ZoneInput::PlayerLeft { player: b });
        h.tick();
        assert!(groups(&h).is_empty());
        assert_eq!(singles(&h).len(), 1);
    }

    #[test]
    fn an_entangled_player_is_saved_with_the_others_before_its_transfer_goes_out() {
        let mut h = harness(ZoneConfig::default());
        let (a, ia) = h.spawn_player("Alice", 0.0, 0.0);
        let (_, ib) = h.spawn_player("Bob", 1.0, 0.0);
        h.sim.state_mut().entangle(&[ia, ib], false);
        h.clear();
        h.push(ZoneInput::Warp {
            player: a,
            area: "Elsewhere".into(),
            instance: 0,
        });
        h.tick();
        let g = groups(&h);
        assert_eq!(g.len(), 1, "{:?}", h.outputs);
        assert_eq!(
            names(g[0]),
            vec![
                ("Alice", SnapshotReason::Transfer),
                ("Bob", SnapshotReason::Periodic)
            ]
        );
        assert_eq!(g[0].ground, None);
        let saved = position(&h, |o| matches!(o, ZoneOutput::Checkpoint(_)));
        let out = position(&h, |o| matches!(o, ZoneOutput::TransferOut(_)));
        assert!(saved < out);
        // The state saved is the state that travels.
        let ZoneOutput::TransferOut(t) = &h.outputs[out] else {
            unreachable!()
        };
        assert_eq!(t.state, g[0].players[0].state);
        assert!(h.sim.state().entangled.is_empty());
    }

    #[test]
    fn a_frozen_entangled_player_is_in_the_group_of_another() {
        let mut h = harness(ZoneConfig::default());
        let (a, ia) = h.spawn_player("Alice", 0.0, 0.0);
        let (b, ib) = h.spawn_player("Bob", 1.0, 0.0);
        h.push(ZoneInput::Warp {
            player: b,
            area: "Elsewhere".into(),
            instance: 0,
        });
        h.tick();
        assert!(h.actor(ib).frozen());
        h.sim.state_mut().entangle(&[ia, ib], true);
        h.clear();
        h.push(ZoneInput::PlayerLeft { player: a });
        h.tick();
        let g = groups(&h);
        assert_eq!(g.len(), 1);
        assert_eq!(
            names(g[0]),
            vec![
                ("Alice", SnapshotReason::Logout),
                ("Bob", SnapshotReason::Periodic)
            ]
        );
        assert_eq!(g[0].ground.as_deref(), Some(&[][..]));
    }

    #[test]
    fn the_periodic_checkpoint_is_one_group_with_the_ground_only_when_dirty() {
        let cfg = ZoneConfig {
            persist_every_ms: 1000,
            ..Default::default()
        };
        let mut h = harness(cfg);
        h.spawn_player("Alice", 0.0, 0.0);
        h.spawn_player("Bob", 1.0, 0.0);
        drop_on_ground(&mut h, 3.0, 600_000);
        h.clear();
        h.run_ticks(31);
        let g = groups(&h);
        assert_eq!(g.len(), 1, "{:?}", h.outputs);
        assert_eq!(g[0].players.len(), 2);
        assert_eq!(g[0].ground, None);
        h.sim.state_mut().ground_dirty = true;
        h.clear();
        h.run_ticks(31);
        let g = groups(&h);
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].ground.as_ref().map(Vec::len), Some(1));
        assert!(!h.sim.state().ground_dirty);
        assert!(singles(&h).is_empty());
    }

    #[test]
    fn checkpoint_entangled_saves_the_entangled_now_and_nothing_when_clean() {
        let mut h = harness(ZoneConfig::default());
        let (_, ia) = h.spawn_player("Alice", 0.0, 0.0);
        let (_, ib) = h.spawn_player("Bob", 1.0, 0.0);
        h.spawn_player("Carol", 2.0, 0.0);
        h.clear();
        checkpoint_entangled(h.sim.state_mut());
        assert!(h.sim.state().outputs.is_empty());
        h.sim.state_mut().entangle(&[ia, ib], false);
        checkpoint_entangled(h.sim.state_mut());
        let st = h.sim.state();
        let [ZoneOutput::Checkpoint(c)] = st.outputs.as_slice() else {
            panic!("{:?}", st.outputs);
        };
        let mut n = names(c);
        n.sort_unstable_by_key(|x| x.0);
        assert_eq!(
            n,
            vec![
                ("Alice", SnapshotReason::Periodic),
                ("Bob", SnapshotReason::Periodic)
            ]
        );
        assert_eq!(c.ground, None);
        assert!(st.entangled.is_empty());
    }

    #[test]
    fn a_shutdown_saves_every_player_with_the_ground_as_one_group_then_removes_them() {
        let mut h = harness(ZoneConfig::default());
        let (a, _) = h.spawn_player("Alice", 0.0, 0.0);
        let (b, _) = h.spawn_player("Bob", 1.0, 0.0);
        drop_on_ground(&mut h, 3.0, 60_000);
        h.clear();
        h.push(ZoneInput::Shutdown);
        h.tick();
        let g = groups(&h);
        assert_eq!(g.len(), 1);
        let mut n = names(g[0]);
        n.sort_unstable_by_key(|x| x.0);
        assert_eq!(
            n,
            vec![
                ("Alice", SnapshotReason::Logout),
                ("Bob", SnapshotReason::Logout)
            ]
        );
        assert_eq!(g[0].ground.as_ref().map(Vec::len), Some(1));
        let saved = position(&h, |o| matches!(o, ZoneOutput::Checkpoint(_)));
        for p in [a, b] {
            let removed = position(
                &h,
                |o| matches!(o, ZoneOutput::PlayerRemoved { player } if *player == p),
            );
            assert!(saved < removed);
        }
        assert_eq!(h.sim.state().by_player(PlayerKey(1)), None);
        // Stopped again, empty, with its items: the ground alone.
        h.clear();
        h.push(ZoneInput::Shutdown);
        h.tick();
        let g = groups(&h);
        assert_eq!(g.len(), 1);
        assert!(g[0].players.is_empty());
        assert_eq!(g[0].ground.as_ref().map(Vec::len), Some(1));
    }

    #[test]
    fn an_empty_instance_that_never_had_ground_items_saves_nothing_when_it_stops() {
        let mut h = harness(ZoneConfig::default());
        h.push(ZoneInput::Shutdown);
        h.tick();
        assert!(groups(&h).is_empty());
    }

    #[test]
    fn saved_ground_comes_back_with_fresh_handles_and_its_remaining_time() {
        let mut h = harness(ZoneConfig::default());
        let dto = |item: u16, amount: u16, remaining_ms: u64| GroundItemDto {
            item: InvSlot {
                item,
                amount,
                ..sword(1)
            },
            x: 5.0,
            y: 1.0,
            z: f32::NAN,
            remaining_ms,
        };
        let now = h.now;
        h.push(ZoneInput::RestoreGround {
            items: vec![
                dto(SWORD, 2, 10_000),
                dto(999, 1, 10_000),   // unknown here: skipped
                dto(SWORD, 0, 10_000), // an empty stack: skipped
                dto(SWORD, 1, 0),
            ],
        });
        h.tick();
        let st = h.sim.state();
        assert_eq!(st.ground_handle, 2);
        // The item with no time left expired in the same tick's housekeeping.
        assert_eq!(st.ground.keys().copied().collect::<Vec<_>>(), vec![1]);
        let g1 = &st.ground[&1];
        assert_eq!(g1.item.amount, 2);
        assert_eq!(g1.expires_ms, now + 10_000);
        assert_eq!((g1.x, g1.z), (5.0, 0.0));
        // And it round-trips through a save.
        let saved = ground_dto(st);
        assert_eq!(saved.len(), 1);
        assert_eq!(saved[0].remaining_ms, 10_000);
    }
}
