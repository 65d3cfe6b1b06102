//! Level changes through `ZoneSim` (reference §9.32): `SetActorLevel` and the default
//! LevelUp send `P_XPUpdate "U"` to the player and `"L"` (runtime id, level) to the other
//! players of the zone.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use shared::proto::{Packet, XpUpdate};
use zone_node::sim::events::PlayerKey;
use zone_node::sim::kill;
use zone_node::sim::testing::SimHarness;

const P_XP_UPDATE: u8 = 32;

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
