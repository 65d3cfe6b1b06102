//! Level changes through `ZoneSim` (reference §9.32): `SetActorLevel` and the default
//! LevelUp send `P_XPUpdate "U"` to the player and `"L"` (runtime id, level) to the other
//! players of the zone; `SetReputation` sends `P_StatUpdate "R"` to the zone and
//! `CreateFloatingNumber` a `P_FloatingNumber` to the zone.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use shared::proto::{FloatingNumber, Packet, StatUpdate, XpUpdate};
use zone_node::sim::events::PlayerKey;
use zone_node::sim::kill;
use zone_node::sim::testing::SimHarness;

const P_XP_UPDATE: u8 = 32;
const P_STAT_UPDATE: u8 = 22;
const P_FLOATING_NUMBER: u8 = 48;

/// A zone whose LevelUp script (run by `GiveXP` with the player as `Actor()`) is `body`;
/// Ann and Bob are in it, and Ann has just been given XP.
fn run_on_ann(body: &str) -> (SimHarness, PlayerKey, PlayerKey, u16) {
    let src = format!("Function Main()\n{body}\n\tReturn\nEnd Function\n");
    let mut h = SimHarness::with_scripts(&[("LevelUp", src.as_bytes())]);
    let (ann, aid) = h.spawn_player("Ann", 0.0, 0.0);
    let (bob, _) = h.spawn_player("Bob", 5.0, 0.0);
    h.clear();
    kill::give_xp(h.sim.state_mut(), aid, 1, true);
    h.tick();
    h.deliver();
    let rid = h.actor(aid).rid;
    (h, ann, bob, rid)
}

fn xp_packets(h: &SimHarness, p: PlayerKey) -> Vec<XpUpdate> {
    h.reliable_of(p, P_XP_UPDATE)
        .iter()
        .map(|b| XpUpdate::decode_payload(b, &Default::default()).unwrap())
        .collect()
}

/// A `SetActorLevel` from a script: Ann gets "U" 7, Bob gets "L" (Ann's runtime id, 7),
/// Ann gets no "L" about herself.
#[test]
fn set_actor_level_tells_the_owner_and_the_zone() {
    let src = b"Function Main()\n\tSetActorLevel(Actor(), 7)\n\tReturn\nEnd Function\n";
    let mut h = SimHarness::with_scripts(&[("LevelUp", src)]);
    let (ann, aid) = h.spawn_player("Ann", 0.0, 0.0);
    let (bob, _) = h.spawn_player("Bob", 5.0, 0.0);
    h.clear();
    kill::give_xp(h.sim.state_mut(), aid, 10, true);
    h.tick();
    h.deliver();
    assert_eq!(h.actor(aid).level, 7);
    let rid = h.actor(aid).rid;
    assert_eq!(
        xp_packets(&h, ann),
        [
            XpUpdate::Gained { amount: 10 },
            XpUpdate::Level { level: 7 }
        ]
    );
    assert!(xp_packets(&h, bob).contains(&XpUpdate::LevelUp {
        runtime_id: rid,
        level: 7
    }));
}

/// The default LevelUp (no world script) goes through the same path.
#[test]
fn the_default_level_up_tells_the_zone_too() {
    let mut h = SimHarness::new();
    let (ann, aid) = h.spawn_player("Ann", 0.0, 0.0);
    let (bob, _) = h.spawn_player("Bob", 5.0, 0.0);
    let before = h.actor(aid).level;
    h.clear();
    kill::give_xp(h.sim.state_mut(), aid, u32::from(before) * 1000 + 1, true);
    h.tick();
    h.deliver();
    let level = before + 1;
    assert_eq!(h.actor(aid).level, level);
    let rid = h.actor(aid).rid;
    assert!(xp_packets(&h, ann).contains(&XpUpdate::Level { level }));
    assert!(
        !xp_packets(&h, ann)
            .iter()
            .any(|x| matches!(x, XpUpdate::LevelUp { .. }))
    );
    assert!(xp_packets(&h, bob).contains(&XpUpdate::LevelUp {
        runtime_id: rid,
        level
    }));
}

/// `SetReputation` on a player: `P_StatUpdate "R"` to every player of the zone.
#[test]
fn set_reputation_tells_the_zone() {
    let (h, ann, bob, rid) = run_on_ann("\tSetReputation(Actor(), 77)");
    for p in [ann, bob] {
        let r: Vec<StatUpdate> = h
            .reliable_of(p, P_STAT_UPDATE)
            .iter()
            .map(|b| StatUpdate::decode_payload(b, &Default::default()).unwrap())
            .collect();
        assert!(r.contains(&StatUpdate::Reputation {
            runtime_id: rid,
            value: 77
        }));
    }
}

/// `CreateFloatingNumber`: `P_FloatingNumber` to every player of the zone, the subject
/// included; white by default, colours clamped to a byte.
#[test]
fn create_floating_number_goes_to_the_zone() {
    let (h, ann, bob, rid) = run_on_ann(
        "\tCreateFloatingNumber(Actor(), -12)\n\tCreateFloatingNumber(Actor(), 5, 300, 0, -4)",
    );
    for p in [ann, bob] {
        let f: Vec<FloatingNumber> = h
            .reliable_of(p, P_FLOATING_NUMBER)
            .iter()
            .map(|b| FloatingNumber::decode_payload(b, &Default::default()).unwrap())
            .collect();
        assert_eq!(
            f,
            [
                FloatingNumber {
                    runtime_id: rid,
                    amount: -12,
                    r: 255,
                    g: 255,
                    b: 255
                },
                FloatingNumber {
                    runtime_id: rid,
                    amount: 5,
                    r: 255,
                    g: 0,
                    b: 0
                }
            ]
        );
    }
}
