//! Scenarios for joins, leaves, `P_StandardUpdate` validation (anti-cheat), movement,
//! stats audiences, water and recharge.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::float_cmp)]

use zone_node::sim::events::{KnownSpell, PlayerAction, Rejection, StandardUpdateIn, ZoneOutput};
use zone_node::sim::packets::*;
use zone_node::sim::testing::{SimHarness, attrs, templates};

#[test]
fn join_announces_both_ways_and_keeps_the_gateway_rid() {
    let mut h = SimHarness::new();
    let (a, aid) = h.spawn_player("Alice", 0.0, 0.0);
    h.clear();
    let (b, bid) = h.spawn_player("Bob", 10.0, 0.0);
    // Bob's own start goes out at once; Alice's announcement of him with the broadcast.
    let bob = h.reliable(b);
    assert_eq!(bob.first().map(|f| f.0), Some(P_CHANGE_AREA));
    h.deliver();
    assert_eq!(h.actor(aid).rid, 1);
    assert_eq!(h.actor(bid).rid, 2);
    // Bob: P_ChangeArea then Alice's P_NewActor.
    let bob = h.reliable(b);
    assert_eq!(bob.first().map(|f| f.0), Some(P_CHANGE_AREA));
    let na = h.reliable_of(b, P_NEW_ACTOR);
    assert_eq!(na.len(), 1);
    assert_eq!(u16::from_le_bytes([na[0][4], na[0][5]]), 1);
    // Alice: Bob's P_NewActor.
    let na = h.reliable_of(a, P_NEW_ACTOR);
    assert_eq!(na.len(), 1);
    assert_eq!(u16::from_le_bytes([na[0][4], na[0][5]]), 2);
}

#[test]
fn join_with_a_used_or_out_of_range_rid_is_refused() {
    let mut h = SimHarness::new();
    h.spawn_player("Alice", 0.0, 0.0);
    let state = h.player_state("Mallory", 0.0, 0.0);
    for rid in [1u16, 0, 20000] {
        h.push(zone_node::sim::ZoneInput::PlayerJoined {
            player: zone_node::sim::PlayerKey(99),
            rid,
            is_dm: false,
            state: Box::new(state.clone()),
            arrival: zone_node::sim::Arrival::Saved,
        });
    }
    h.clear();
    h.tick();
    assert_eq!(h.rejections(), vec![Rejection::BadJoin; 3]);
    assert!(
        h.sim
            .state()
            .by_player(zone_node::sim::PlayerKey(99))
            .is_none()
    );
}

#[test]
fn leave_persists_and_tells_the_zone() {
    let mut h = SimHarness::new();
    let (a, _) = h.spawn_player("Alice", 0.0, 0.0);
    let (b, _) = h.spawn_player("Bob", 5.0, 0.0);
    h.clear();
    h.push(zone_node::sim::ZoneInput::PlayerLeft { player: b });
    h.tick();
    assert!(
        h.outputs
            .iter()
            .any(|o| matches!(o, ZoneOutput::Persist(s) if s.state.name == "Bob"))
    );
    assert!(
        h.outputs
            .iter()
            .any(|o| matches!(o, ZoneOutput::PlayerRemoved { player } if *player == b))
    );
    h.deliver();
    assert_eq!(h.reliable_of(a, P_ACTOR_GONE), vec![vec![2, 0]]);
    assert_eq!(h.sim.state().online.len, 1);
    assert_eq!(h.sim.state().zone.len, 1);
}

#[test]
fn first_update_is_accepted_then_teleports_are_clamped() {
    let mut h = SimHarness::new();
    let (p, id) = h.spawn_player("Alice", 0.0, 0.0);
    // First update: accepted outright even far away (re-baseline).
    h.update(p, 50.0, 50.0, 50.0, 50.0, false, false);
    h.tick();
    assert_eq!((h.actor(id).x, h.actor(id).z), (50.0, 50.0));
    // 33 ms later a 100-unit jump: clamped, position kept.
    h.clear();
    h.update(p, 150.0, 50.0, 50.0, 50.0, false, false);
    h.tick();
    assert_eq!(h.actor(id).x, 50.0);
    assert_eq!(h.rejections(), vec![Rejection::SpeedClamp]);
    // A small step is fine (maxDelta floor 2.0 plus 0.15 × 1.5 × elapsed).
    h.clear();
    h.update(p, 51.5, 50.0, 51.5, 50.0, false, false);
    h.tick();
    assert_eq!(h.actor(id).x, 51.5);
    assert!(h.rejections().is_empty());
    // After more than 5 s of silence, the jump is accepted and re-baselines.
    h.run_ticks(160);
    h.update(p, 900.0, 50.0, 900.0, 50.0, false, false);
    h.tick();
    assert_eq!(h.actor(id).x, 900.0);
}

#[test]
fn nan_inf_and_huge_coordinates_are_rejected_without_moving() {
    let mut h = SimHarness::new();
    let (p, id) = h.spawn_player("Alice", 0.0, 0.0);
    h.update(p, 5.0, 5.0, 5.0, 5.0, false, false);
    h.tick();
    for bad in [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        1e6,
        100_000.0,
        -100_000.0,
    ] {
        h.clear();
        h.act(
            p,
            PlayerAction::StandardUpdate(StandardUpdateIn {
                dest_x: bad,
                dest_z: bad,
                y: bad,
                x: bad,
                z: 5.0,
                is_running: false,
                walking_backward: false,
            }),
        );
        h.tick();
        let a = h.actor(id);
        assert_eq!((a.x, a.z), (5.0, 5.0), "{bad}");
        assert!(a.y.is_finite() && a.dest_x.is_finite() && a.dest_z.is_finite());
        assert_eq!(h.rejections(), vec![Rejection::ClampedCoord], "{bad}");
    }
    // Nothing non-finite ever reaches the wire.
    h.run_ticks(10);
    for u in h.updates(p) {
        assert!(u.x.is_finite() && u.z.is_finite());
    }
}

#[test]
fn running_backward_clears_running() {
    let mut h = SimHarness::new();
    let (p, id) = h.spawn_player("Alice", 0.0, 0.0);
    h.clear();
    h.update(p, 0.0, 0.0, 100.0, 0.0, true, true);
    h.tick();
    let a = h.actor(id);
    assert!(!a.is_running && a.walking_backward);
    assert_eq!(h.rejections(), vec![Rejection::RunningBackward]);
}

#[test]
fn updates_while_ignore_update_is_set_are_dropped() {
    let mut h = SimHarness::new();
    let (p, id) = h.spawn_player("Alice", 0.0, 0.0);
    h.actor_mut(id).ignore_update = true;
    h.clear();
    h.update(p, 1.0, 1.0, 50.0, 50.0, true, false);
    h.act(p, PlayerAction::Jump);
    h.tick();
    let a = h.actor(id);
    assert_eq!((a.x, a.z, a.dest_x, a.is_running), (0.0, 0.0, 0.0, false));
    assert_eq!(h.rejections(), vec![Rejection::IgnoredUpdate; 2]);
}

#[test]
fn a_rider_moves_its_mount_and_a_ridden_mount_cannot_move_itself() {
    let mut h = SimHarness::new();
    let (rider, rid_id) = h.spawn_player("Rider", 0.0, 0.0);
    let (horse_p, horse) = h.spawn_player("Horse", 0.0, 0.0);
    // Make "Horse" the rider's mount.
    h.actor_mut(rid_id).mount = Some(horse);
    h.actor_mut(horse).rider = Some(rid_id);
    h.clear();
    h.update(horse_p, 1.0, 1.0, 40.0, 40.0, false, false);
    h.tick();
    assert_eq!(h.rejections(), vec![Rejection::RiddenMount]);
    assert_eq!(h.actor(horse).dest_x, 0.0);
    h.update(rider, 1.0, 1.0, 30.0, 0.0, true, false);
    h.tick();
    let (r, m) = (h.actor(rid_id).clone(), h.actor(horse).clone());
    assert_eq!((m.dest_x, m.is_running), (30.0, true));
    assert_eq!((m.x, m.z), (r.x, r.z));
    // The rider's broadcast frame names the mount.
    h.clear();
    h.run_ticks(7);
    let seen = h.updates(rider);
    let own = seen.iter().find(|u| u.rid == h.actor(rid_id).rid).unwrap();
    assert_eq!(own.mount, h.actor(horse).rid);
}

#[test]
fn movement_uses_manhattan_steps_halved_backward_doubled_running() {
    let mut h = SimHarness::new();
    let (p, id) = h.spawn_player("Alice", 0.0, 0.0);
    h.update(p, 0.0, 0.0, 100.0, 0.0, false, false);
    h.run_ticks(10);
    // 1.5 per tick at full speed; the update tick moves too.
    assert!((h.actor(id).x - 15.0).abs() < 0.01, "{}", h.actor(id).x);
    // Diagonal: Manhattan-normalised, so each axis moves 0.75 per tick.
    h.update(p, 0.0, 0.0, 100.0, 100.0, false, false);
    h.run_ticks(4);
    let a = h.actor(id);
    assert!(
        (a.x - 3.0).abs() < 0.01 && (a.z - 3.0).abs() < 0.01,
        "{} {}",
        a.x,
        a.z
    );
    // Backward: half speed.
    h.run_ticks(200);
    h.update(p, 0.0, 0.0, 100.0, 0.0, false, true);
    h.run_ticks(10);
    assert!((h.actor(id).x - 7.5).abs() < 0.01);
    // Running: double, Energy -1 per tick.
    h.run_ticks(200);
    h.update(p, 0.0, 0.0, 100.0, 0.0, true, false);
    h.run_ticks(10);
    let a = h.actor(id);
    assert!((a.x - 30.0).abs() < 0.01, "{}", a.x);
    assert_eq!(a.attr[usize::from(attrs::ENERGY)], 90);
    // Out of energy: running stops.
    h.actor_mut(id).attr[usize::from(attrs::ENERGY)] = 0;
    h.tick();
    assert!(!h.actor(id).is_running);
    // No overshoot: stops on the destination.
    h.run_ticks(200);
    assert_eq!(h.actor(id).x, 100.0);
}

#[test]
fn slow_actors_move_slower() {
    let mut h = SimHarness::new();
    let (p, id) = h.spawn_player("Alice", 0.0, 0.0);
    h.actor_mut(id).attr[usize::from(attrs::SPEED)] = 50;
    h.update(p, 0.0, 0.0, 100.0, 0.0, false, false);
    h.run_ticks(10);
    assert!((h.actor(id).x - 7.5).abs() < 0.01);
}

#[test]
fn set_attribute_audiences_and_unknown_names() {
    let mut h = SimHarness::new();
    let (dm, dm_id) = h.spawn_dm("Dm", 0.0, 0.0);
    let (other, _) = h.spawn_player("Other", 5.0, 0.0);
    h.clear();
    let set = |name: &str, value: i32| PlayerAction::SetAttribute {
        name: name.into(),
        value,
    };
    h.act(dm, set("health", 80));
    h.tick();
    h.deliver();
    let rid = h.actor(dm_id).rid;
    let expect = stat_value(rid, attrs::HEALTH, 80).to_vec();
    assert_eq!(h.reliable_of(dm, P_STAT_UPDATE), vec![expect.clone()]);
    assert_eq!(h.reliable_of(other, P_STAT_UPDATE), vec![expect]);
    // Dexterity: owner only.
    h.clear();
    h.act(dm, set("DEXTERITY", 7));
    h.tick();
    assert_eq!(h.reliable_of(dm, P_STAT_UPDATE).len(), 1);
    assert!(h.reliable_of(other, P_STAT_UPDATE).is_empty());
    assert_eq!(h.actor(dm_id).attr[usize::from(attrs::DEXTERITY)], 7);
    // Unknown: bails before any write.
    let before = h.actor(dm_id).attr;
    h.clear();
    h.act(dm, set("Charisma", 5));
    h.act(
        dm,
        PlayerAction::SetAttributeMax {
            name: String::new(),
            value: 5,
        },
    );
    h.tick();
    assert_eq!(h.actor(dm_id).attr, before);
    assert_eq!(h.rejections(), vec![Rejection::UnknownAttribute; 2]);
    // Caps at Max; bounds.
    h.clear();
    h.act(dm, set("Health", 5000));
    h.tick();
    assert_eq!(h.actor(dm_id).attr[usize::from(attrs::HEALTH)], 100);
    h.act(
        dm,
        PlayerAction::SetAttributeMax {
            name: "Speed".into(),
            value: 1_000_000,
        },
    );
    h.tick();
    assert_eq!(h.actor(dm_id).attr_max[usize::from(attrs::SPEED)], 65535);
    // Not a DM.
    h.clear();
    h.act(other, set("Health", 1));
    h.tick();
    assert_eq!(h.rejections(), vec![Rejection::NotPermitted]);
}

#[test]
fn setting_health_to_zero_queues_a_deferred_kill() {
    let mut h = SimHarness::new();
    let (dm, _) = h.spawn_dm("Dm", 0.0, 0.0);
    h.act(
        dm,
        PlayerAction::SetAttribute {
            name: "Health".into(),
            value: 0,
        },
    );
    let s = h.tick().clone();
    assert_eq!(s.counters.kills, 1);
}

#[test]
fn water_breath_and_damage_once_a_second() {
    let mut h = SimHarness::new();
    let (p, id) = h.spawn_player("Diver", 120.0, 120.0);
    let (watcher, _) = h.spawn_player("Watcher", 0.0, 0.0);
    h.actor_mut(id).y = 5.0; // 5 below the surface: deep enough to lose breath.
    h.clear();
    h.run_ticks(31); // 1.023 s
    let a = h.actor(id);
    assert_eq!(a.attr[usize::from(attrs::BREATH)], 19);
    // Water damage 5 with neutral resistance: -5 Health, broadcast to the zone.
    assert_eq!(a.attr[usize::from(attrs::HEALTH)], 95);
    let rid = a.rid;
    assert!(
        h.reliable_of(watcher, P_STAT_UPDATE)
            .contains(&stat_value(rid, attrs::HEALTH, 95).to_vec())
    );
    // Breath goes to the owner only.
    assert!(
        h.reliable_of(p, P_STAT_UPDATE)
            .contains(&stat_value(rid, attrs::BREATH, 19).to_vec())
    );
    assert!(
        !h.reliable_of(watcher, P_STAT_UPDATE)
            .contains(&stat_value(rid, attrs::BREATH, 19).to_vec())
    );
    // Resistance counts: 200 resistance → still 1 damage minimum.
    h.actor_mut(id).resist[3] = 200;
    h.run_ticks(31);
    assert_eq!(h.actor(id).attr[usize::from(attrs::HEALTH)], 94);
    // Out of breath: Health -1 a second; then death is deferred to after the loop.
    h.actor_mut(id).attr[usize::from(attrs::BREATH)] = 0;
    h.actor_mut(id).attr[usize::from(attrs::HEALTH)] = 2;
    let mut kills = 0;
    for _ in 0..31 {
        kills += h.tick().counters.kills;
    }
    assert_eq!(kills, 1);
}

#[test]
fn swimmers_skip_the_water_tick() {
    let mut h = SimHarness::new();
    let fish = h.spawn_npc(templates::FISH, 120.0, 120.0);
    h.actor_mut(fish).y = 0.0;
    h.run_ticks(100);
    assert_eq!(h.actor(fish).attr[usize::from(attrs::HEALTH)], 100);
}

#[test]
fn spells_recharge_every_100_ms() {
    let mut h = SimHarness::new();
    let (_, id) = h.spawn_player("Mage", 0.0, 0.0);
    h.actor_mut(id).spells.push(KnownSpell {
        id: 3,
        level: 1,
        charge_ms: 1000,
    });
    h.run_ticks(16); // 528 ms: 5 steps.
    let c = h.actor(id).spells[0].charge_ms;
    assert!((400..=600).contains(&c), "{c}");
    h.run_ticks(30);
    assert_eq!(h.actor(id).spells[0].charge_ms, 0);
}

#[test]
fn jump_goes_to_the_others_not_while_mounted() {
    let mut h = SimHarness::new();
    let (a, aid) = h.spawn_player("A", 0.0, 0.0);
    let (b, _) = h.spawn_player("B", 1.0, 0.0);
    h.clear();
    h.act(a, PlayerAction::Jump);
    h.tick();
    h.deliver();
    let rid = h.actor(aid).rid;
    assert_eq!(h.reliable_of(b, P_JUMP), vec![rid.to_le_bytes().to_vec()]);
    assert!(h.reliable_of(a, P_JUMP).is_empty());
}

#[test]
fn unknown_players_are_counted_not_fatal() {
    let mut h = SimHarness::new();
    h.act(zone_node::sim::PlayerKey(4242), PlayerAction::Jump);
    h.tick();
    assert_eq!(h.rejections(), vec![Rejection::UnknownPlayer]);
}

#[test]
fn zone_wide_packets_wait_for_the_broadcast_and_keep_their_order() {
    let mut h = SimHarness::new();
    let (a, aid) = h.spawn_player("A", 0.0, 0.0);
    let (b, _) = h.spawn_dm("B", 1.0, 0.0);
    h.deliver();
    h.clear();
    // A jump between broadcasts reaches B only with the next broadcast...
    h.act(a, PlayerAction::Jump);
    h.tick();
    assert!(!h.last_stats.counters.broadcast);
    assert!(h.reliable(b).is_empty());
    // ...or sooner, ahead of a packet sent to B alone, in the order they were queued.
    h.act(
        b,
        PlayerAction::Command {
            word: "GOLD".into(),
            params: "5".into(),
        },
    );
    h.tick();
    assert!(!h.last_stats.counters.broadcast);
    let kinds: Vec<u8> = h.reliable(b).iter().map(|f| f.0).collect();
    assert_eq!(kinds, vec![P_JUMP, P_GOLD_CHANGE]);
    // Nothing is sent twice, and a quiet broadcast sends nothing.
    h.clear();
    h.deliver();
    assert!(h.reliable(b).is_empty());
    // A zone-wide packet alone goes out with the broadcast.
    h.act(a, PlayerAction::Jump);
    h.tick();
    h.deliver();
    let rid = h.actor(aid).rid;
    assert_eq!(h.reliable_of(b, P_JUMP), vec![rid.to_le_bytes().to_vec()]);
}
