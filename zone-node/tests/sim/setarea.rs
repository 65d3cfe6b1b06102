//! Scenarios for SetArea inside the instance and transfers to and from other
//! AreaInstances (freeze, ack, nack, timeout, duplicates, RID kept, companions carried).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::float_cmp)]

use zone_node::sim::events::{Arrival, PlayerAction, Rejection, ZoneInput, ZoneOutput};
use zone_node::sim::packets::*;
use zone_node::sim::setarea::set_area;
use zone_node::sim::testing::{SimHarness, templates};

/// A transfer id as a source zone mints it.
fn tx(serial: u32) -> zone_node::sim::TransferId {
    zone_node::sim::TransferId {
        block: 1,
        minter: 1,
        serial,
    }
}

fn transfer_out(h: &SimHarness) -> Option<zone_node::sim::TransferOut> {
    h.outputs.iter().find_map(|o| match o {
        ZoneOutput::TransferOut(t) => Some((**t).clone()),
        _ => None,
    })
}

#[test]
fn warp_inside_the_instance_repositions_and_rebaselines() {
    let mut h = SimHarness::new();
    let (p, id) = h.spawn_player("Alice", 0.0, 0.0);
    let (o, _) = h.spawn_player("Obs", 3.0, 0.0);
    h.update(p, 1.0, 0.0, 1.0, 0.0, false, false);
    h.tick();
    h.clear();
    let st = h.sim.state_mut();
    set_area(st, id, "testland", 0, &Arrival::PortalNamed("gate".into()));
    h.tick();
    h.deliver();
    let a = h.actor(id);
    assert_eq!((a.x, a.z, a.dest_x, a.old_x), (500.0, 500.0, 500.0, 500.0));
    assert_eq!(a.last_portal, Some(1));
    assert_eq!(h.reliable_of(p, P_CHANGE_AREA).len(), 1);
    let rep = h.reliable_of(o, P_REPOSITION_ACTOR);
    assert_eq!(rep.len(), 1);
    assert_eq!(rep[0][0], b'M');
    assert_eq!(rep[0].len(), 17);
    // The next client update after the warp is accepted (re-baselined).
    h.update(p, 501.0, 500.0, 501.0, 500.0, false, false);
    h.tick();
    assert_eq!(h.actor(id).x, 501.0);
}

#[test]
fn dm_warp_to_another_area_is_a_transfer_with_freeze_and_ack() {
    let mut h = SimHarness::new();
    let (p, id) = h.spawn_dm("Alice", 0.0, 0.0);
    let (o, _) = h.spawn_player("Obs", 3.0, 0.0);
    h.clear();
    h.act(
        p,
        PlayerAction::Warp {
            area: "Elsewhere".into(),
            instance: 2,
        },
    );
    h.tick();
    let t = transfer_out(&h).expect("transfer out");
    assert_eq!(
        (t.area.as_str(), t.instance, t.player),
        ("Elsewhere", 2, Some(p))
    );
    assert_eq!(t.state.rid, 1);
    assert_eq!(t.state.name, "Alice");
    // Frozen: updates ignored, out of the broadcast, out of the chains.
    assert!(h.actor(id).ignore_update);
    h.clear();
    h.update(p, 5.0, 5.0, 5.0, 5.0, false, false);
    h.run_ticks(8);
    assert_eq!(h.rejections(), vec![Rejection::IgnoredUpdate]);
    assert!(!h.updates(o).iter().any(|u| u.rid == 1));
    assert!(h.updates(p).is_empty());
    assert_eq!(h.sim.state().online.len, 1);
    // Ack: gone for good.
    h.clear();
    h.push(ZoneInput::TransferAck {
        transfer_id: t.transfer_id,
    });
    h.tick();
    assert!(h.sim.state().get(id).is_none());
    h.deliver();
    assert_eq!(h.reliable_of(o, P_ACTOR_GONE), vec![vec![1, 0]]);
    assert!(
        h.outputs
            .iter()
            .any(|x| matches!(x, ZoneOutput::PlayerRemoved { player } if *player == p))
    );
    // The source commits (the destination may now make the player live).
    assert!(h.outputs.iter().any(
        |x| matches!(x, ZoneOutput::CommitTransfer { transfer_id } if *transfer_id == t.transfer_id)
    ));
    // A second ack is unknown, counted, and aborted: it must not make a second copy live.
    h.clear();
    h.push(ZoneInput::TransferAck {
        transfer_id: t.transfer_id,
    });
    h.tick();
    assert_eq!(h.rejections(), vec![Rejection::UnknownTransfer]);
    assert!(h.outputs.iter().any(
        |x| matches!(x, ZoneOutput::AbortTransfer { transfer_id } if *transfer_id == t.transfer_id)
    ));
}

#[test]
fn a_late_ack_after_the_rollback_is_aborted_and_the_player_stays() {
    let mut h = SimHarness::new();
    let (p, id) = h.spawn_dm("Alice", 0.0, 0.0);
    h.act(
        p,
        PlayerAction::Warp {
            area: "Elsewhere".into(),
            instance: 0,
        },
    );
    h.tick();
    let t = transfer_out(&h).unwrap();
    // 2 s pass with no answer: rolled back, playable.
    h.run_ticks(70);
    assert!(!h.actor(id).frozen());
    h.clear();
    h.push(ZoneInput::TransferAck {
        transfer_id: t.transfer_id,
    });
    h.tick();
    assert!(h.outputs.iter().any(
        |x| matches!(x, ZoneOutput::AbortTransfer { transfer_id } if *transfer_id == t.transfer_id)
    ));
    assert!(!h.outputs.iter().any(|x| matches!(
        x,
        ZoneOutput::CommitTransfer { .. } | ZoneOutput::PlayerRemoved { .. }
    )));
    assert!(h.sim.state().get(id).is_some(), "still here, exactly once");
    assert_eq!(h.sim.state().online.len, 1);
}

#[test]
fn a_prepared_arrival_is_invisible_until_committed_and_gone_when_aborted() {
    let mut h = SimHarness::new();
    let (obs, _) = h.spawn_player("Local", 10.0, 10.0);
    let mut state = h.player_state("Visitor", 0.0, 0.0);
    state.rid = 90;
    let visitor = zone_node::sim::PlayerKey(900);
    h.clear();
    h.push(ZoneInput::TransferIn {
        transfer_id: tx(1),
        player: Some(visitor),
        is_dm: false,
        state: Box::new(state.clone()),
        arrival: Arrival::Saved,
    });
    h.tick();
    assert!(
        h.outputs
            .iter()
            .any(|o| matches!(o, ZoneOutput::AckTransfer { transfer_id } if *transfer_id == tx(1)))
    );
    assert!(h.sim.state().by_player(visitor).is_none());
    assert!(h.reliable_of(obs, P_NEW_ACTOR).is_empty());
    assert!(h.reliable(visitor).is_empty());
    // Aborted: never seen by anyone.
    h.clear();
    h.push(ZoneInput::TransferAbort { transfer_id: tx(1) });
    h.run_ticks(10);
    assert!(h.sim.state().by_player(visitor).is_none());
    assert!(h.reliable_of(obs, P_NEW_ACTOR).is_empty());
    // A commit for it now is unknown.
    h.push(ZoneInput::TransferCommit { transfer_id: tx(1) });
    h.tick();
    assert_eq!(h.rejections(), vec![Rejection::UnknownTransfer]);
    assert!(h.sim.state().by_player(visitor).is_none());

    // Prepared and never decided: dropped after the prepare timeout (10 s).
    h.clear();
    h.push(ZoneInput::TransferIn {
        transfer_id: tx(2),
        player: Some(visitor),
        is_dm: false,
        state: Box::new(state),
        arrival: Arrival::Saved,
    });
    h.tick();
    h.run_ticks(310);
    assert!(h.outputs.iter().any(
        |o| matches!(o, ZoneOutput::PreparedExpired { transfer_id } if *transfer_id == tx(2))
    ));
    h.push(ZoneInput::TransferCommit { transfer_id: tx(2) });
    h.tick();
    assert!(h.sim.state().by_player(visitor).is_none());
}

#[test]
fn nack_restores_the_player_and_tells_it() {
    let mut h = SimHarness::new();
    let (p, id) = h.spawn_dm("Alice", 0.0, 0.0);
    h.act(
        p,
        PlayerAction::Warp {
            area: "Elsewhere".into(),
            instance: 0,
        },
    );
    h.tick();
    let t = transfer_out(&h).unwrap();
    h.clear();
    h.push(ZoneInput::TransferNack {
        transfer_id: t.transfer_id,
        reason: "full".into(),
    });
    h.tick();
    let a = h.actor(id);
    assert!(!a.ignore_update && a.transfer.is_none());
    assert_eq!(h.sim.state().online.len, 1);
    let chat = h.reliable_of(p, P_CHAT_MESSAGE);
    assert!(
        chat.iter()
            .any(|c| c[0] == CHAT_RED && String::from_utf8_lossy(&c[1..]).contains("full"))
    );
    // Playable again.
    h.update(p, 30.0, 0.0, 30.0, 0.0, false, false);
    h.tick();
    assert_eq!(h.actor(id).x, 30.0);
    h.clear();
    h.run_ticks(7);
    assert!(h.updates(p).iter().any(|u| u.rid == 1));
}

#[test]
fn an_unanswered_transfer_times_out_after_2_s() {
    let mut h = SimHarness::new();
    let (p, id) = h.spawn_dm("Alice", 0.0, 0.0);
    h.act(
        p,
        PlayerAction::Warp {
            area: "Elsewhere".into(),
            instance: 0,
        },
    );
    h.tick();
    h.run_ticks(59);
    assert!(h.actor(id).transfer.is_some());
    h.run_ticks(2);
    assert!(h.actor(id).transfer.is_none());
    assert!(!h.actor(id).ignore_update);
}

#[test]
fn transfer_carries_mount_and_pets_and_keeps_the_player_rid() {
    let mut src = SimHarness::new();
    let (p, id) = src.spawn_player("Rider", 0.0, 0.0);
    let horse = src.spawn_npc(templates::HORSE, 0.0, 0.0);
    let wolf = src.spawn_npc(templates::WOLF, 1.0, 0.0);
    {
        let st = src.sim.state_mut();
        st.get_mut(id).unwrap().mount = Some(horse);
        st.get_mut(horse).unwrap().rider = Some(id);
        st.slave_link(id, wolf);
        st.get_mut(wolf).unwrap().name = "Fang".into();
    }
    src.clear();
    let st = src.sim.state_mut();
    set_area(
        st,
        id,
        "Elsewhere",
        0,
        &Arrival::PortalNamed("Begin".into()),
    );
    src.tick();
    let t = transfer_out(&src).unwrap();
    assert!(t.state.mount.is_some());
    assert_eq!(t.state.pets.len(), 1);
    assert_eq!(t.state.pets[0].name, "Fang");
    // Mount and pet are frozen with the rider.
    assert!(src.actor(horse).frozen() && src.actor(wolf).frozen());

    // The destination: another zone with its own players.
    let mut dst = SimHarness::new();
    let (obs, _) = dst.spawn_player("Local", 10.0, 10.0);
    // The local player took RID 1 here in the harness; use a cluster-unique RID instead.
    let mut state = t.state.clone();
    state.rid = 77;
    dst.clear();
    let p = zone_node::sim::PlayerKey(1000 + p.0);
    dst.push(ZoneInput::TransferIn {
        transfer_id: t.transfer_id,
        player: Some(p),
        is_dm: t.is_dm,
        state: Box::new(state.clone()),
        arrival: t.arrival.clone(),
    });
    dst.tick();
    assert!(dst.outputs.iter().any(
        |o| matches!(o, ZoneOutput::AckTransfer { transfer_id } if *transfer_id == t.transfer_id)
    ));
    // Prepared only: nobody sees it until the source commits.
    assert!(dst.sim.state().by_player(p).is_none());
    assert!(dst.reliable_of(obs, P_NEW_ACTOR).is_empty());
    dst.push(ZoneInput::TransferCommit {
        transfer_id: t.transfer_id,
    });
    dst.tick();
    // Persisted with its new area after the switch.
    assert!(
        dst.outputs
            .iter()
            .any(|o| matches!(o, ZoneOutput::Persist(s)
        if s.player == p && s.reason == zone_node::sim::events::SnapshotReason::Transfer))
    );
    let arrived = dst.sim.state().by_player(p).unwrap();
    let a = dst.actor(arrived).clone();
    assert_eq!(a.rid, 77);
    assert_eq!((a.x, a.z), (10.0, 10.0)); // Portal "Begin".
    let m = dst.actor(a.mount.unwrap()).clone();
    assert_eq!(m.rider, Some(arrived));
    assert!(m.rid >= 16000);
    assert_eq!(dst.sim.state().slaves_of(arrived).len(), 1);
    // The local player learns about all three; the newcomer gets P_ChangeArea.
    dst.deliver();
    assert_eq!(dst.reliable_of(obs, P_NEW_ACTOR).len(), 3);
    assert_eq!(dst.reliable_of(p, P_CHANGE_AREA).len(), 1);
    // A duplicate is refused.
    dst.clear();
    dst.push(ZoneInput::TransferIn {
        transfer_id: t.transfer_id,
        player: Some(zone_node::sim::PlayerKey(3000)),
        is_dm: false,
        state: Box::new(state),
        arrival: Arrival::Saved,
    });
    dst.tick();
    assert_eq!(dst.rejections(), vec![Rejection::DuplicateTransfer]);
    assert!(
        dst.outputs
            .iter()
            .any(|o| matches!(o, ZoneOutput::NackTransfer { .. }))
    );

    // Source: ack frees all three.
    src.clear();
    src.push(ZoneInput::TransferAck {
        transfer_id: t.transfer_id,
    });
    src.tick();
    let st = src.sim.state();
    assert!(st.get(id).is_none() && st.get(horse).is_none() && st.get(wolf).is_none());
    assert_eq!(st.zone.len, 0);
}

#[test]
fn a_transfer_in_with_a_used_rid_is_nacked() {
    let mut h = SimHarness::new();
    h.spawn_player("Local", 0.0, 0.0);
    let mut state = h.player_state("Twin", 0.0, 0.0);
    state.rid = 1;
    h.clear();
    h.push(ZoneInput::TransferIn {
        transfer_id: tx(5),
        player: Some(zone_node::sim::PlayerKey(500)),
        is_dm: false,
        state: Box::new(state),
        arrival: Arrival::Saved,
    });
    h.tick();
    assert!(h.outputs.iter().any(
        |o| matches!(o, ZoneOutput::NackTransfer { transfer_id, .. } if *transfer_id == tx(5))
    ));
}

#[test]
fn transfer_shapes_round_trip_through_serde() {
    let mut h = SimHarness::new();
    let (p, _) = h.spawn_dm("Alice", 0.0, 0.0);
    h.act(
        p,
        PlayerAction::Warp {
            area: "Elsewhere".into(),
            instance: 1,
        },
    );
    h.tick();
    let t = transfer_out(&h).unwrap();
    let json = serde_json::to_string(&t).unwrap();
    let back: zone_node::sim::TransferOut = serde_json::from_str(&json).unwrap();
    assert_eq!(back, t);
}

#[test]
fn online_players_are_snapshotted_periodically() {
    let cfg = zone_node::sim::ZoneConfig {
        persist_every_ms: 1000,
        ..Default::default()
    };
    let mut h = SimHarness::with(cfg, zone_node::sim::testing::test_content());
    let (p, _) = h.spawn_player("Alice", 0.0, 0.0);
    h.spawn_player("Bob", 1.0, 0.0);
    h.clear();
    h.run_ticks(31);
    let snaps: Vec<_> = h
        .outputs
        .iter()
        .filter_map(|o| match o {
            ZoneOutput::Checkpoint(c) => Some(c),
            _ => None,
        })
        .flat_map(|c| c.players.iter())
        .map(|s| (s.player, s.reason, s.state.name.clone()))
        .collect();
    // One checkpoint group holding both.
    assert_eq!(snaps.len(), 2, "{snaps:?}");
    assert_eq!(
        h.outputs
            .iter()
            .filter(|o| matches!(o, ZoneOutput::Checkpoint(_)))
            .count(),
        1
    );
    assert!(snaps.iter().any(|s| s.0 == p && s.2 == "Alice"));
    assert!(
        snaps
            .iter()
            .all(|s| s.1 == zone_node::sim::events::SnapshotReason::Periodic)
    );
}

#[test]
fn an_arrived_player_ignores_stale_updates_until_the_client_acknowledges_the_area() {
    let mut h = SimHarness::new();
    let mut state = h.player_state("Visitor", 0.0, 0.0);
    state.rid = 91;
    let visitor = zone_node::sim::PlayerKey(901);
    h.push(ZoneInput::TransferIn {
        transfer_id: tx(7),
        player: Some(visitor),
        is_dm: false,
        state: Box::new(state),
        arrival: Arrival::PortalNamed("Begin".into()),
    });
    h.tick();
    h.push(ZoneInput::TransferCommit { transfer_id: tx(7) });
    h.tick();
    let id = h.sim.state().by_player(visitor).unwrap();
    assert!(h.actor(id).ignore_update, "IgnoreUpdate until acknowledged");
    let (x, z) = (h.actor(id).x, h.actor(id).z);
    // A stale update from the old area (far from the arrival point) is ignored.
    h.clear();
    h.update(
        visitor,
        x + 300.0,
        z + 300.0,
        x + 300.0,
        z + 300.0,
        false,
        false,
    );
    h.tick();
    assert_eq!(h.rejections(), vec![Rejection::IgnoredUpdate]);
    assert_eq!((h.actor(id).x, h.actor(id).z), (x, z));
    // The client's P_ChangeArea acknowledgement clears it; updates are applied again.
    h.clear();
    h.act(visitor, PlayerAction::AreaAck);
    h.tick();
    assert!(!h.actor(id).ignore_update);
    h.update(visitor, x + 1.0, z, x + 1.0, z, false, false);
    h.tick();
    assert!(h.rejections().is_empty(), "{:?}", h.rejections());
}

#[test]
fn an_update_at_the_arrival_point_or_the_timeout_also_ends_the_wait() {
    let mut h = SimHarness::new();
    let arrive = |h: &mut SimHarness, tid: u32, key: u64, rid: u16| {
        let mut state = h.player_state(&format!("V{key}"), 0.0, 0.0);
        state.rid = rid;
        let p = zone_node::sim::PlayerKey(key);
        h.push(ZoneInput::TransferIn {
            transfer_id: tx(tid),
            player: Some(p),
            is_dm: false,
            state: Box::new(state),
            arrival: Arrival::PortalNamed("Begin".into()),
        });
        h.tick();
        h.push(ZoneInput::TransferCommit {
            transfer_id: tx(tid),
        });
        h.tick();
        (p, h.sim.state().by_player(p).unwrap())
    };
    let (a, ida) = arrive(&mut h, 1, 801, 81);
    let (x, z) = (h.actor(ida).x, h.actor(ida).z);
    h.update(a, x + 0.5, z, x + 0.5, z, false, false);
    h.tick();
    assert!(
        !h.actor(ida).ignore_update,
        "an update at the arrival point"
    );
    let (_, idb) = arrive(&mut h, 2, 802, 82);
    assert!(h.actor(idb).ignore_update);
    h.run_ticks(160);
    assert!(
        !h.actor(idb).ignore_update,
        "cleared after 5 s without an ack"
    );
}

#[test]
fn handoff_messages_apply_between_ticks_and_other_inputs_wait() {
    let mut h = SimHarness::new();
    let (obs, _) = h.spawn_player("Local", 10.0, 10.0);
    h.tick();
    let mut state = h.player_state("Quick", 0.0, 0.0);
    state.rid = 95;
    let quick = zone_node::sim::PlayerKey(950);
    let (out, rest) = h.sim.handoff(vec![
        ZoneInput::TransferIn {
            transfer_id: tx(3),
            player: Some(quick),
            is_dm: false,
            state: Box::new(state),
            arrival: Arrival::Saved,
        },
        ZoneInput::PlayerLeft { player: obs },
        ZoneInput::TransferCommit { transfer_id: tx(3) },
    ]);
    assert!(
        out.outputs
            .iter()
            .any(|o| matches!(o, ZoneOutput::AckTransfer { transfer_id } if *transfer_id == tx(3)))
    );
    // Live at once, with P_ChangeArea flushed to the newcomer, without a tick.
    assert!(
        out.outputs
            .iter()
            .any(|o| matches!(o, ZoneOutput::Reliable { player, .. } if *player == quick))
    );
    assert!(matches!(rest.as_slice(), [ZoneInput::PlayerLeft { player }] if *player == obs));
    assert!(h.sim.state().by_player(quick).is_some());
    assert!(
        h.sim.state().by_player(obs).is_some(),
        "the leave waits for the tick"
    );
}

#[test]
fn a_transfer_in_of_a_player_already_live_here_is_nacked_without_naming_him() {
    // A stale copy's warp into the very instance where the player's current copy lives
    // (after a leader change): refused, and the rejection names no player, so the node
    // keeps routing the live one (found by the control-plane simulator, issue 41).
    let mut h = SimHarness::new();
    let (p, id) = h.spawn_player("Live", 0.0, 0.0);
    let mut state = h.player_state("Live", 3.0, 3.0);
    state.rid = 40;
    h.clear();
    h.push(ZoneInput::TransferIn {
        transfer_id: tx(6),
        player: Some(p),
        is_dm: false,
        state: Box::new(state),
        arrival: Arrival::Saved,
    });
    h.tick();
    assert!(h.outputs.iter().any(
        |o| matches!(o, ZoneOutput::NackTransfer { transfer_id, .. } if *transfer_id == tx(6))
    ));
    assert!(
        !h.outputs.iter().any(|o| matches!(
            o,
            ZoneOutput::Rejected {
                player: Some(_),
                ..
            }
        )),
        "{:?}",
        h.outputs
    );
    assert_eq!(h.sim.state().by_player(p), Some(id), "he plays on");
}
