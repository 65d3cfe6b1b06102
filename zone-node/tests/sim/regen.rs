//! Opt-in regeneration through `ZoneSim` (`[misc.regen]`, zone-node `sim::regen`): out of
//! combat Health and Energy come back every interval; in combat they do not; Realm
//! Crafter data (and the harness's default rules) regenerate nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;

use shared::proto::{Packet, StatUpdate};
use zone_node::sim::ZoneConfig;
use zone_node::sim::area::{RegenRule, ZoneContent};
use zone_node::sim::combat;
use zone_node::sim::events::PlayerKey;
use zone_node::sim::state::ActorId;
use zone_node::sim::testing::{SimHarness, attrs, templates, test_content};

const P_STAT_UPDATE: u8 = 22;

/// The harness zone with regeneration on: Health and Energy, 5 % every 16 s.
fn regen_harness() -> SimHarness {
    let mut c = test_content();
    c.rules.regen = Some(RegenRule {
        interval_ms: 16_000,
        percent: 5,
        attributes: vec![attrs::HEALTH, attrs::ENERGY],
    });
    let mut h = SimHarness::with(ZoneConfig::default(), c);
    h.step = 250;
    h
}

fn attr(h: &SimHarness, id: ActorId, a: u8) -> i32 {
    h.actor(id).attr[usize::from(a)]
}

fn drain(h: &mut SimHarness, id: ActorId, a: u8, max: i32, value: i32) {
    let actor = h.actor_mut(id);
    actor.attr_max[usize::from(a)] = max;
    actor.attr[usize::from(a)] = value;
}

fn energy_updates(h: &SimHarness, p: PlayerKey) -> Vec<StatUpdate> {
    h.reliable_of(p, P_STAT_UPDATE)
        .iter()
        .map(|b| StatUpdate::decode_payload(b, &Default::default()).unwrap())
        .filter(|u| matches!(u, StatUpdate::Value { attribute, .. } if *attribute == attrs::ENERGY))
        .collect()
}

/// A player whose Energy drained gets it back, 5 % of Max per 16 s step (at least 1),
/// capped at Max, with a `P_StatUpdate` per step; Health too.
#[test]
fn drained_energy_comes_back_out_of_combat() {
    let mut h = regen_harness();
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    drain(&mut h, pid, attrs::ENERGY, 100, 10);
    drain(&mut h, pid, attrs::HEALTH, 10, 3);
    h.clear();
    // Nothing before the first interval has passed.
    h.run_ticks(60); // 15 s
    assert_eq!(attr(&h, pid, attrs::ENERGY), 10);
    h.run_ticks(8); // past 16 s
    assert_eq!(attr(&h, pid, attrs::ENERGY), 15);
    // 5 % of 10 is 0: at least 1.
    assert_eq!(attr(&h, pid, attrs::HEALTH), 4);
    h.deliver();
    assert!(
        energy_updates(&h, p)
            .iter()
            .any(|u| matches!(u, StatUpdate::Value { value: 15, .. }))
    );
    // Enough steps fill it, never above Max.
    h.run_ticks(64 * 20);
    assert_eq!(attr(&h, pid, attrs::ENERGY), 100);
    assert_eq!(attr(&h, pid, attrs::HEALTH), 10);
}

/// Nobody in combat regenerates: not an actor that attacked within the last 5 s, not one
/// somebody has as its AI target; the dead do not either.
#[test]
fn none_in_combat_or_dead() {
    let mut h = regen_harness();
    let (_, ann) = h.spawn_player("Ann", 0.0, 0.0);
    let (_, bob) = h.spawn_player("Bob", 5.0, 0.0);
    let (_, cid) = h.spawn_player("Cid", 9.0, 0.0);
    for id in [ann, bob, cid] {
        drain(&mut h, id, attrs::ENERGY, 100, 10);
    }
    h.actor_mut(cid).dead = true;
    // Ann keeps attacking; an actor hunts Bob.
    h.actor_mut(ann).ai_target = None;
    for _ in 0..80 {
        let now = h.now;
        h.actor_mut(ann).last_attack_ms = Some(now);
        h.actor_mut(cid).ai_target = Some(bob);
        h.tick();
    }
    assert_eq!(attr(&h, ann, attrs::ENERGY), 10);
    assert_eq!(attr(&h, bob, attrs::ENERGY), 10);
    assert_eq!(attr(&h, cid, attrs::ENERGY), 10);
    // The fight over (5 s after the last attack, the hunter gone), both regenerate.
    h.actor_mut(cid).ai_target = None;
    h.run_ticks(64 * 2);
    assert!(attr(&h, ann, attrs::ENERGY) > 10);
    assert!(attr(&h, bob, attrs::ENERGY) > 10);
    assert_eq!(attr(&h, cid, attrs::ENERGY), 10);
}

/// A player who is hit and never hits back is in combat too: by an NPC that is not
/// hunting it (no AI target anywhere in the zone) and by another player. It does not
/// regenerate until 5 s after the last attack on it; a bystander does meanwhile.
#[test]
fn a_victim_that_does_not_hit_back_is_in_combat() {
    let mut h = regen_harness();
    let (_, ann) = h.spawn_player("Ann", 0.0, 0.0);
    let (_, bob) = h.spawn_player("Bob", 20.0, 0.0);
    let (_, cid) = h.spawn_player("Cid", 21.0, 0.0);
    let (_, dan) = h.spawn_player("Dan", 40.0, 40.0);
    let wolf = h.spawn_npc(templates::WOLF, 1.0, 0.0);
    // A passive wolf: it never picks a target of its own.
    h.actor_mut(wolf).aggressiveness = 0;
    for id in [ann, bob, dan] {
        drain(&mut h, id, attrs::ENERGY, 100, 10);
        // Enough Health to take 20 s of blows.
        drain(&mut h, id, attrs::HEALTH, 100_000, 100_000);
    }
    // 20 s: a blow a second from the wolf on Ann and from Cid on Bob.
    for i in 0..80 {
        if i % 4 == 0 {
            let st = h.sim.state_mut();
            assert!(combat::actor_attack(st, wolf, ann));
            assert!(combat::actor_attack(st, cid, bob));
        }
        for id in [ann, bob, cid, wolf] {
            assert_eq!(h.actor(id).ai_target, None, "nobody hunts anybody");
        }
        h.tick();
    }
    assert_eq!(attr(&h, ann, attrs::ENERGY), 10, "hit by an NPC");
    assert_eq!(attr(&h, bob, attrs::ENERGY), 10, "hit by a player");
    assert!(attr(&h, dan, attrs::ENERGY) > 10, "the interval passed");
    // The blows over, both come back within two intervals.
    h.run_ticks(64 * 2);
    assert!(attr(&h, ann, attrs::ENERGY) > 10);
    assert!(attr(&h, bob, attrs::ENERGY) > 10);
}

/// Off by default: the harness's default rules regenerate nothing.
#[test]
fn off_by_default() {
    let mut h = SimHarness::new();
    h.step = 250;
    let (_, pid) = h.spawn_player("Ann", 0.0, 0.0);
    drain(&mut h, pid, attrs::ENERGY, 100, 10);
    h.run_ticks(64 * 3);
    assert_eq!(attr(&h, pid, attrs::ENERGY), 10);
}

/// The demo world turns it on for Health and Energy; Realm Crafter's sample project
/// (`Misc.dat` has no such setting) leaves it off.
#[test]
fn the_demo_world_turns_it_on_and_rc_data_does_not() {
    let demo = Arc::new(shared::content::demo_world());
    let c = ZoneContent::from_world(demo.clone(), &demo.areas[0].name).unwrap();
    let rule = c.rules.regen.expect("demo regen");
    assert_eq!(rule.interval_ms, 16_000);
    assert_eq!(
        rule.attributes,
        vec![
            demo.fixed_attributes.health.unwrap(),
            demo.fixed_attributes.energy.unwrap()
        ]
    );

    let candidates = [
        std::env::var_os("RC_SAMPLE_DATA").map(PathBuf::from),
        Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/rc-sample-data")),
        Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/rc-sample-data")),
    ];
    let Some(dir) = candidates
        .into_iter()
        .flatten()
        .find(|p| p.join("Server Data").join("Misc.dat").exists() || p.join("Misc.dat").exists())
    else {
        eprintln!("sample data not found: skipped");
        return;
    };
    let (world, _) = shared::content::fs::load_world(&dir).unwrap();
    assert!(!world.misc.regen.enabled);
    let world = Arc::new(world);
    let area = world.areas[0].name.clone();
    let c = ZoneContent::from_world(world, &area).unwrap();
    assert_eq!(c.rules.regen, None);
}
