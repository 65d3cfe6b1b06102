//! Actor effects (buffs and debuffs) through `ZoneSim`: `P_ActorEffect` "A"/"E"/"R" and
//! the stats, expiry on the zone clock, the remaining time across a logout and a
//! handoff, the effect natives, and eating a timed potion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::float_cmp)]

use std::sync::Arc;

use shared::content::{Item, ItemKind};
use shared::proto::{ActorEffect, Packet, StatUpdate};
use zone_node::sim::area::ZoneContent;
use zone_node::sim::effects::{self, EffectError, MAX_EFFECTS};
use zone_node::sim::events::{PlayerAction, PlayerKey, Rejection, ZoneInput, ZoneOutput};
use zone_node::sim::items::inventory;
use zone_node::sim::testing::{SimHarness, attrs, content_with_scripts, test_content};
use zone_node::sim::{ActorState, ZoneConfig};

const P_ACTOR_EFFECT: u8 = 36;
const P_STAT_UPDATE: u8 = 22;

fn effect_packets(h: &SimHarness, p: PlayerKey) -> Vec<ActorEffect> {
    h.reliable_of(p, P_ACTOR_EFFECT)
        .iter()
        .map(|b| ActorEffect::decode_payload(b, &Default::default()).unwrap())
        .collect()
}

fn stat_packets(h: &SimHarness, p: PlayerKey) -> Vec<StatUpdate> {
    h.reliable_of(p, P_STAT_UPDATE)
        .iter()
        .map(|b| StatUpdate::decode_payload(b, &Default::default()).unwrap())
        .collect()
}

fn strength(h: &SimHarness, id: zone_node::sim::state::ActorId) -> i32 {
    h.actor(id).attr[usize::from(attrs::STRENGTH)]
}

/// Adding sends "A" then "E" and moves the stat (with a P_StatUpdate); the end time
/// passing sends "R" with the deltas and puts the stat back.
#[test]
fn an_effect_applies_and_expires_on_the_zone_clock() {
    let mut h = SimHarness::new();
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    h.actor_mut(pid).attr_max[usize::from(attrs::STRENGTH)] = 100;
    h.actor_mut(pid).attr[usize::from(attrs::STRENGTH)] = 10;
    h.clear();
    let st = h.sim.state_mut();
    effects::add_effect(st, pid, "Might", &[(attrs::STRENGTH, 5)], 2, 9).unwrap();
    h.tick();
    assert_eq!(strength(&h, pid), 15);
    let pk = effect_packets(&h, p);
    assert!(
        matches!(&pk[0], ActorEffect::Added { handle: 1, icon: 9, effect_name } if effect_name.as_bytes() == b"Might")
    );
    assert_eq!(
        pk[1],
        ActorEffect::Delta {
            attr: attrs::STRENGTH,
            delta: 5
        }
    );
    assert!(!stat_packets(&h, p).is_empty());
    assert!(effects::has_effect(h.sim.state(), pid, "MIGHT"));
    // Refreshing with the same name sets the delta, it does not stack.
    let st = h.sim.state_mut();
    effects::add_effect(st, pid, "might", &[(attrs::STRENGTH, 7)], 2, 9).unwrap();
    h.tick();
    assert_eq!(strength(&h, pid), 17);
    h.clear();
    // 2 s at 33 ms a tick.
    h.run_ticks(70);
    assert_eq!(strength(&h, pid), 10);
    let pk = effect_packets(&h, p);
    assert_eq!(pk.len(), 1);
    match &pk[0] {
        ActorEffect::Removed { handle, deltas } => {
            assert_eq!(*handle, 1);
            assert_eq!(deltas[usize::from(attrs::STRENGTH)], 7);
        }
        o => panic!("{o:?}"),
    }
    assert!(!effects::has_effect(h.sim.state(), pid, "Might"));
}

/// Values are clamped to [0, Max]; Health taken to 0 by an effect kills.
#[test]
fn effects_clamp_and_a_deadly_one_kills() {
    let mut h = SimHarness::new();
    let (_, pid) = h.spawn_player("Ann", 0.0, 0.0);
    let max = h.actor(pid).attr_max[usize::from(attrs::HEALTH)];
    let st = h.sim.state_mut();
    effects::add_effect(st, pid, "Boost", &[(attrs::HEALTH, 1_000_000)], 0, 0).unwrap();
    h.tick();
    assert_eq!(h.actor(pid).attr[usize::from(attrs::HEALTH)], max);
    let st = h.sim.state_mut();
    effects::add_effect(st, pid, "Poison", &[(attrs::HEALTH, -1_000_000)], 5, 0).unwrap();
    h.tick();
    h.tick();
    assert_eq!(h.actor(pid).attr[usize::from(attrs::HEALTH)], 0);
    assert!(h.actor(pid).dead);
}

/// Bad input is refused, never a panic.
#[test]
fn absurd_effects_are_refused() {
    let mut h = SimHarness::new();
    let (_, pid) = h.spawn_player("Ann", 0.0, 0.0);
    let st = h.sim.state_mut();
    assert_eq!(
        effects::add_effect(st, pid, " ", &[], 1, 0),
        Err(EffectError::EmptyName)
    );
    assert!(matches!(
        effects::add_effect(st, pid, "A", &[], -1, 0),
        Err(EffectError::BadSeconds(-1))
    ));
    assert!(effects::add_effect(st, pid, "A", &[], i64::MAX, 0).is_err());
    for i in 0..MAX_EFFECTS {
        effects::add_effect(st, pid, &format!("E{i}"), &[(200, 1)], 0, 0).unwrap();
    }
    assert_eq!(
        effects::add_effect(st, pid, "One more", &[], 0, 0),
        Err(EffectError::TooMany)
    );
    // Refreshing an existing one is still allowed.
    effects::add_effect(st, pid, "E3", &[], 0, 0).unwrap();
}

fn logout_state(h: &SimHarness, p: PlayerKey) -> ActorState {
    h.outputs
        .iter()
        .find_map(|o| match o {
            ZoneOutput::Persist(s) if s.player == p => Some(s.state.clone()),
            _ => None,
        })
        .expect("a snapshot")
}

/// A logout saves the remaining time (frozen while offline); logging in again sends "A"
/// in the P_StartGame tail and the effect ends after what was left.
#[test]
fn effects_survive_a_logout_with_their_remaining_time() {
    let mut h = SimHarness::new();
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    h.actor_mut(pid).attr_max[usize::from(attrs::STRENGTH)] = 100;
    h.actor_mut(pid).attr[usize::from(attrs::STRENGTH)] = 10;
    let st = h.sim.state_mut();
    effects::add_effect(st, pid, "Might", &[(attrs::STRENGTH, 5)], 3, 4).unwrap();
    h.run_ticks(30); // ~1 s
    h.clear();
    h.push(ZoneInput::PlayerLeft { player: p });
    h.tick();
    let saved = logout_state(&h, p);
    assert_eq!(saved.attributes[usize::from(attrs::STRENGTH)], 15);
    assert_eq!(saved.effects.len(), 1);
    let rem = saved.effects[0].remaining_ms;
    assert!((1900..=2100).contains(&rem), "{rem}");
    assert_eq!(saved.effects[0].icon, 4);

    // Much later, in another zone.
    let mut h2 = SimHarness::new();
    h2.now += 1_000_000;
    h2.clear();
    let (p2, id2) = h2.join(saved, false);
    h2.tick();
    assert_eq!(strength(&h2, id2), 15);
    let pk = effect_packets(&h2, p2);
    assert!(
        matches!(
            &pk[..],
            [ActorEffect::Added {
                handle: 1,
                icon: 4,
                ..
            }]
        ),
        "{pk:?}"
    );
    h2.clear();
    h2.run_ticks(70);
    assert_eq!(strength(&h2, id2), 10);
    assert!(matches!(
        &effect_packets(&h2, p2)[..],
        [ActorEffect::Removed { .. }]
    ));
}

/// An effect already due at logout is expired then (Realm Crafter's fix 3): not saved,
/// its deltas out of the saved stats.
#[test]
fn an_effect_due_at_logout_is_expired() {
    let mut h = SimHarness::new();
    let (_, pid) = h.spawn_player("Ann", 0.0, 0.0);
    h.actor_mut(pid).attr_max[usize::from(attrs::STRENGTH)] = 100;
    h.actor_mut(pid).attr[usize::from(attrs::STRENGTH)] = 10;
    let st = h.sim.state_mut();
    effects::add_effect(st, pid, "Might", &[(attrs::STRENGTH, 5)], 1, 0).unwrap();
    h.tick();
    // Make it due now without a housekeeping pass.
    let now = h.sim.state().now_ms;
    h.actor_mut(pid).effects[0].expires_ms = now;
    let saved = h.sim.state().actor_state(pid).unwrap();
    assert!(saved.effects.is_empty());
    assert_eq!(saved.attributes[usize::from(attrs::STRENGTH)], 10);
}

/// A handoff carries the effects with their remaining time.
#[test]
fn effects_travel_in_a_handoff() {
    let mut src = SimHarness::new();
    let (_, id) = src.spawn_player("Ann", 0.0, 0.0);
    let st = src.sim.state_mut();
    effects::add_effect(st, id, "Might", &[(attrs::STRENGTH, 5)], 10, 3).unwrap();
    effects::add_effect(st, id, "Curse", &[(attrs::SPEED, -1)], 0, 0).unwrap();
    src.tick();
    let state = src.set_area_out(id, "Elsewhere");
    let e = &state.effects;
    assert_eq!(e.len(), 2);
    assert_eq!(e[0].name, "Might");
    assert!(e[0].remaining_ms > 9000 && e[0].remaining_ms <= 10_000);
    assert_eq!(e[1].remaining_ms, 0, "permanent stays permanent");
}

fn potion_content(scripts: &[(&str, &[u8])]) -> ZoneContent {
    let mut c = content_with_scripts(test_content(), scripts);
    let mut w = (*c.world).clone();
    let mut attributes = vec![0; 40];
    attributes[usize::from(attrs::STRENGTH)] = 4;
    w.items = vec![Item {
        id: 0,
        name: "Giant Potion".into(),
        stackable: true,
        thumbnail: 77,
        attributes,
        kind: ItemKind::Potion { secs: 1 },
        ..Item::default()
    }];
    c.world = Arc::new(w);
    c
}

/// Eating a potion with EatEffectsLength 1 gives a 1 s effect named after the item with
/// its thumbnail as icon, once whatever the amount.
#[test]
fn eating_a_potion_gives_a_timed_effect() {
    let mut h = SimHarness::with(ZoneConfig::default(), potion_content(&[]));
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    h.actor_mut(pid).attr_max[usize::from(attrs::STRENGTH)] = 100;
    h.actor_mut(pid).attr[usize::from(attrs::STRENGTH)] = 10;
    let t = h.sim.state().content.world.item(0).unwrap().clone();
    h.actor_mut(pid).inventory[14] = Some(inventory::instance(&t, 3));
    h.clear();
    h.act(
        p,
        PlayerAction::EatItem {
            slot: 14,
            amount: 2,
        },
    );
    h.tick();
    assert_eq!(strength(&h, pid), 14);
    let pk = effect_packets(&h, p);
    assert!(
        matches!(&pk[0], ActorEffect::Added { icon: 77, effect_name, .. } if effect_name.as_bytes() == b"Giant Potion")
    );
    assert_eq!(h.actor(pid).effects[0].icon, 77);
    h.run_ticks(40);
    assert_eq!(strength(&h, pid), 10);
    assert!(h.actor(pid).effects.is_empty());
}

/// The natives: AddActorEffect / ActorHasEffect / DeleteActorEffect, and a clear error
/// for an unknown attribute or negative seconds.
#[test]
fn the_effect_natives() {
    let src: &[u8] = br#"
Function Test()
    P = Actor()
    AddActorEffect(P, "Might", "Strength", 6, 60, 2)
    Output(P, "has " + ActorHasEffect(P, "might") + " str " + Attribute(P, "Strength"))
    DeleteActorEffect(P, "Might")
    Output(P, "has " + ActorHasEffect(P, "Might") + " str " + Attribute(P, "Strength"))
End Function

Function Bad()
    AddActorEffect(Actor(), "X", "Nonsense", 1, 5, 0)
End Function

Function Neg()
    AddActorEffect(Actor(), "X", "Strength", 1, -5, 0)
End Function
"#;
    let mut h = SimHarness::with(
        ZoneConfig::default(),
        potion_content(&[("In-game Commands", src)]),
    );
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    h.actor_mut(pid).attr_max[usize::from(attrs::STRENGTH)] = 100;
    h.actor_mut(pid).attr[usize::from(attrs::STRENGTH)] = 10;
    h.clear();
    h.act(
        p,
        PlayerAction::Command {
            word: "Test".into(),
            params: String::new(),
        },
    );
    h.tick();
    h.tick();
    assert!(h.script_errors().is_empty(), "{:?}", h.script_errors());
    assert_eq!(h.chat(p), ["has 1 str 16", "has 0 str 10"]);
    assert_eq!(effect_packets(&h, p).len(), 3);
    for w in ["Bad", "Neg"] {
        h.clear();
        h.act(
            p,
            PlayerAction::Command {
                word: w.into(),
                params: String::new(),
            },
        );
        h.tick();
        h.tick();
        let errs = h.script_errors();
        assert_eq!(errs.len(), 1, "{w}: {errs:?}");
        assert!(errs[0].0.contains("AddActorEffect"), "{errs:?}");
        assert!(h.rejections().contains(&Rejection::Invalid));
    }
    assert!(h.actor(pid).effects.is_empty());
}

/// An eater that already carries [`MAX_EFFECTS`] effects cannot take the potion's: the
/// eat is refused (`bad_item_request`) before anything happens: the potions stay, the
/// item's script does not run, no `P_ActorEffect` is sent and the stats do not move.
/// Refreshing an effect the eater already has is still a fine eat.
#[test]
fn an_eat_whose_effect_is_refused_consumes_nothing() {
    let script: &[u8] = br#"
Function Main()
    Output(Actor(), "drank")
End Function
"#;
    let mut c = potion_content(&[("Quaff", script)]);
    let mut w = (*c.world).clone();
    w.items[0].script = "Quaff".into();
    c.world = Arc::new(w);
    let mut h = SimHarness::with(ZoneConfig::default(), c);
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    h.actor_mut(pid).attr_max[usize::from(attrs::STRENGTH)] = 100;
    h.actor_mut(pid).attr[usize::from(attrs::STRENGTH)] = 10;
    let t = h.sim.state().content.world.item(0).unwrap().clone();
    h.actor_mut(pid).inventory[14] = Some(inventory::instance(&t, 3));
    let st = h.sim.state_mut();
    for i in 0..MAX_EFFECTS {
        effects::add_effect(st, pid, &format!("E{i}"), &[(200, 1)], 0, 0).unwrap();
    }
    h.tick();
    h.clear();
    h.act(
        p,
        PlayerAction::EatItem {
            slot: 14,
            amount: 2,
        },
    );
    h.tick();
    h.tick();
    assert_eq!(h.rejections(), [Rejection::BadItemRequest]);
    assert_eq!(
        h.actor(pid).inventory[14].as_ref().map(|s| s.amount),
        Some(3)
    );
    assert!(h.chat(p).is_empty(), "the script ran: {:?}", h.chat(p));
    assert!(effect_packets(&h, p).is_empty());
    assert!(stat_packets(&h, p).is_empty());
    assert_eq!(strength(&h, pid), 10);
    assert_eq!(h.actor(pid).effects.len(), MAX_EFFECTS);

    // With one slot free the same eat goes through: one effect, two potions, the script.
    let st = h.sim.state_mut();
    assert!(effects::delete_effect(st, pid, "E0"));
    h.tick();
    h.clear();
    h.act(
        p,
        PlayerAction::EatItem {
            slot: 14,
            amount: 2,
        },
    );
    h.tick();
    h.tick();
    assert!(h.rejections().is_empty(), "{:?}", h.rejections());
    assert_eq!(
        h.actor(pid).inventory[14].as_ref().map(|s| s.amount),
        Some(1)
    );
    assert_eq!(h.chat(p), ["drank"]);
    assert_eq!(strength(&h, pid), 14);
    // Full again, but the potion's own effect is a refresh: allowed.
    assert_eq!(h.actor(pid).effects.len(), MAX_EFFECTS);
    h.clear();
    h.act(
        p,
        PlayerAction::EatItem {
            slot: 14,
            amount: 1,
        },
    );
    h.tick();
    h.tick();
    assert!(h.rejections().is_empty(), "{:?}", h.rejections());
    assert!(h.actor(pid).inventory[14].is_none());
}

/// Expiry visits only the owners whose end time has come: refreshing an effect leaves a
/// stale end time behind, which finds nothing due; thousands of refreshes do not grow the
/// heap without bound; the effect ends at its last end time, and an owner that left
/// leaves only stale entries.
#[test]
fn refreshed_effects_end_at_their_last_time_and_the_heap_stays_bounded() {
    let mut h = SimHarness::new();
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    let (_, bob) = h.spawn_player("Bob", 5.0, 0.0);
    h.actor_mut(pid).attr_max[usize::from(attrs::STRENGTH)] = 100;
    h.actor_mut(pid).attr[usize::from(attrs::STRENGTH)] = 10;
    let st = h.sim.state_mut();
    effects::add_effect(st, pid, "Might", &[(attrs::STRENGTH, 5)], 1, 0).unwrap();
    effects::add_effect(st, bob, "Haste", &[(attrs::SPEED, 1)], 1, 0).unwrap();
    for _ in 0..5000 {
        effects::add_effect(st, pid, "Might", &[(attrs::STRENGTH, 5)], 2, 0).unwrap();
    }
    let len = st.effect_ends.heap.len();
    assert!(len <= 2 * st.effect_ends.floor + 1025, "{len} entries");
    assert!(len < 5000, "{len} entries");
    // Past the first end time: the stale entry finds nothing, Might lives on.
    h.run_ticks(40);
    assert_eq!(strength(&h, pid), 15);
    assert!(h.actor(bob).effects.is_empty(), "Haste ended after 1 s");
    h.clear();
    h.run_ticks(30);
    assert_eq!(strength(&h, pid), 10);
    assert!(matches!(
        effect_packets(&h, p)[..],
        [ActorEffect::Removed { handle: 1, .. }]
    ));
    assert!(h.sim.state().effect_ends.heap.is_empty());
}
