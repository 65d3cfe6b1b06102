//! Items on the ground, money and the item chat commands: drop and pickup (range, races,
//! full inventories, hostile input), what arrivals see, expiry and the cap, `SpawnItem`,
//! the money natives and `GOLD`, `GIVE` / `/give`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::float_cmp)]

use std::sync::Arc;

use shared::content::{Item, ItemKind, WeaponType, World};
use shared::proto::{GoldChange, InventoryUpdateC2S, InventoryUpdateS2C, Packet};
use zone_node::sim::events::{InvSlot, PlayerAction, Rejection};
use zone_node::sim::items::inventory::{self, BACKPACK, SLOTS, WEAPON};
use zone_node::sim::packets::P_GOLD_CHANGE;
use zone_node::sim::state::GroundConfig;
use zone_node::sim::testing::{SimHarness, content_with_scripts, test_content, test_world};
use zone_node::sim::{ActorId, PlayerKey, ZoneConfig, ZoneContent};

const SWORD: u16 = 0;
const POTION: u16 = 1;
const P_INVENTORY_UPDATE: u8 = 15;

fn items_world() -> World {
    let mut w = test_world();
    w.items = vec![
        Item {
            id: SWORD,
            name: "Sword".into(),
            kind: ItemKind::Weapon {
                damage: 10,
                damage_type: 0,
                weapon_type: WeaponType::default(),
                projectile: 0,
                range: 0.0,
                anim: String::new(),
            },
            ..Item::default()
        },
        Item {
            id: POTION,
            name: "Potion".into(),
            stackable: true,
            kind: ItemKind::Potion { secs: 10 },
            ..Item::default()
        },
    ];
    w
}

fn content() -> ZoneContent {
    let mut c = test_content();
    c.world = Arc::new(items_world());
    c
}

fn harness(ground: GroundConfig) -> SimHarness {
    SimHarness::with(
        ZoneConfig {
            ground,
            ..ZoneConfig::default()
        },
        content(),
    )
}

fn item(id: u16, amount: u16) -> InvSlot {
    let w = items_world();
    inventory::instance(w.item(id).unwrap(), amount)
}

fn give_slot(h: &mut SimHarness, id: ActorId, slot: usize, it: InvSlot) {
    h.actor_mut(id).inventory[slot] = Some(it);
}

fn amount_in(h: &SimHarness, id: ActorId, slot: usize) -> u16 {
    h.actor(id).inventory[slot].as_ref().map_or(0, |s| s.amount)
}

/// How many of an item an actor holds plus how many lie on the ground.
fn total(h: &SimHarness, ids: &[ActorId], item: u16) -> u32 {
    let held: u32 = ids
        .iter()
        .map(|id| inventory::count(&h.actor(*id).inventory, item))
        .sum();
    let ground: u32 = h
        .sim
        .state()
        .ground
        .values()
        .filter(|g| g.item.item == item)
        .map(|g| u32::from(g.item.amount))
        .sum();
    held + ground
}

fn drop_(h: &mut SimHarness, p: PlayerKey, slot: u8, amount: u16) {
    h.act(
        p,
        PlayerAction::Inventory(InventoryUpdateC2S::Drop { slot, amount }),
    );
}

fn pick(h: &mut SimHarness, p: PlayerKey, dropped: u32, slot: u8) {
    h.act(
        p,
        PlayerAction::Inventory(InventoryUpdateC2S::Pickup { dropped, slot }),
    );
}

fn inv_packets(h: &SimHarness, p: PlayerKey) -> Vec<InventoryUpdateS2C> {
    h.reliable_of(p, P_INVENTORY_UPDATE)
        .iter()
        .map(|b| InventoryUpdateS2C::decode_payload(b, &Default::default()).unwrap())
        .collect()
}

/// `(handle, amount, item id)` of every `"D"` a player got.
fn dropped_seen(h: &SimHarness, p: PlayerKey) -> Vec<(u32, u16, u16)> {
    inv_packets(h, p)
        .into_iter()
        .filter_map(|u| match u {
            InventoryUpdateS2C::Dropped {
                dropped,
                amount,
                item,
                ..
            } => Some((dropped, amount, item.item_id)),
            _ => None,
        })
        .collect()
}

fn gone_seen(h: &SimHarness, p: PlayerKey) -> Vec<u32> {
    inv_packets(h, p)
        .into_iter()
        .filter_map(|u| match u {
            InventoryUpdateS2C::Gone { dropped } => Some(dropped),
            _ => None,
        })
        .collect()
}

fn handles(h: &SimHarness) -> Vec<u32> {
    h.sim.state().ground.keys().copied().collect()
}

fn cmd(word: &str, params: &str) -> PlayerAction {
    PlayerAction::Command {
        word: word.into(),
        params: params.into(),
    }
}

fn gold_changes(h: &SimHarness, p: PlayerKey) -> Vec<GoldChange> {
    h.reliable_of(p, P_GOLD_CHANGE)
        .iter()
        .map(|b| GoldChange::decode_payload(b, &Default::default()).unwrap())
        .collect()
}

#[test]
fn a_drop_is_seen_by_the_whole_zone_and_by_whoever_arrives_later() {
    let mut h = harness(GroundConfig::default());
    let (a, aid) = h.spawn_player("Ann", 100.0, 50.0);
    let (b, _) = h.spawn_player("Bob", 400.0, 400.0);
    give_slot(&mut h, aid, 14, item(POTION, 5));
    h.clear();
    drop_(&mut h, a, 14, 2);
    h.tick();
    h.deliver();
    assert!(h.rejections().is_empty(), "{:?}", h.rejections());
    assert_eq!(amount_in(&h, aid, 14), 3);
    let ground = handles(&h);
    assert_eq!(ground.len(), 1);
    let g = &h.sim.state().ground[&ground[0]];
    assert_eq!((g.x, g.z, g.item.amount), (100.0, 50.0, 2));
    // The dropper and the far player both see it (no distance culling, as RC).
    assert_eq!(dropped_seen(&h, a), vec![(ground[0], 2, POTION)]);
    assert_eq!(dropped_seen(&h, b), vec![(ground[0], 2, POTION)]);
    // The next checkpoint saves Ann and the ground together.
    assert!(h.sim.state().entangled.contains(&aid));
    assert!(h.sim.state().ground_dirty);
    // A late arrival is shown it with its arrival.
    h.clear();
    let (c, _) = h.spawn_player("Cat", 0.0, 0.0);
    assert_eq!(dropped_seen(&h, c), vec![(ground[0], 2, POTION)]);
    // So is a player who warps inside the instance (its client reloads the area).
    h.clear();
    zone_node::sim::setarea::set_area(
        h.sim.state_mut(),
        aid,
        "Testland",
        0,
        &zone_node::sim::Arrival::Position {
            x: 5.0,
            y: 0.0,
            z: 5.0,
        },
    );
    h.tick();
    assert_eq!(dropped_seen(&h, a), vec![(ground[0], 2, POTION)]);
}

#[test]
fn pickup_needs_reach_and_goes_to_the_picker_while_the_others_see_it_go() {
    let mut h = harness(GroundConfig::default());
    let (a, aid) = h.spawn_player("Ann", 0.0, 0.0);
    let (b, bid) = h.spawn_player("Bob", 20.0, 0.0);
    give_slot(&mut h, aid, 14, item(POTION, 5));
    drop_(&mut h, a, 14, 2);
    h.tick();
    h.deliver();
    let handle = handles(&h)[0];
    h.clear();
    // Exactly 20 away: out of reach (distance² < 400).
    pick(&mut h, b, handle, 14);
    h.tick();
    assert_eq!(h.rejections(), vec![Rejection::BadItemRequest]);
    assert_eq!(handles(&h), vec![handle]);
    assert_eq!(amount_in(&h, bid, 14), 0);
    // A step closer, it works.
    h.actor_mut(bid).x = 19.0;
    h.clear();
    pick(&mut h, b, handle, 20);
    h.tick();
    h.deliver();
    assert!(h.rejections().is_empty(), "{:?}", h.rejections());
    assert!(h.sim.state().ground.is_empty());
    assert_eq!(amount_in(&h, bid, 20), 2);
    assert_eq!(
        inv_packets(&h, b),
        vec![InventoryUpdateS2C::Received {
            dropped: handle,
            slot: 20
        }]
    );
    assert_eq!(gone_seen(&h, a), vec![handle]);
    assert!(gone_seen(&h, b).is_empty());
    assert!(h.sim.state().entangled.contains(&bid));
    assert_eq!(total(&h, &[aid, bid], POTION), 5);
}

#[test]
fn a_pickup_stacks_onto_an_identical_stack_and_a_slot_that_cannot_take_it_falls_back() {
    let mut h = harness(GroundConfig::default());
    let (a, aid) = h.spawn_player("Ann", 0.0, 0.0);
    give_slot(&mut h, aid, 14, item(POTION, 5));
    give_slot(&mut h, aid, 30, item(SWORD, 3));
    drop_(&mut h, a, 14, 2);
    drop_(&mut h, a, 30, 2);
    h.tick();
    h.deliver();
    let hs = handles(&h);
    let (potions, swords) = (hs[0], hs[1]);
    h.clear();
    // Potions asked into the weapon slot: the first slot that takes them is the stack in 14.
    pick(&mut h, a, potions, WEAPON as u8);
    // Two swords asked into the weapon slot: an equipment slot holds one, so the backpack.
    pick(&mut h, a, swords, WEAPON as u8);
    h.tick();
    assert!(h.rejections().is_empty(), "{:?}", h.rejections());
    assert_eq!(amount_in(&h, aid, 14), 5);
    assert!(h.actor(aid).inventory[WEAPON].is_none());
    assert_eq!(amount_in(&h, aid, 15), 2);
    assert_eq!(
        inv_packets(&h, a),
        vec![
            InventoryUpdateS2C::Received {
                dropped: potions,
                slot: 14
            },
            InventoryUpdateS2C::Received {
                dropped: swords,
                slot: 15
            }
        ]
    );
    // One sword goes into the weapon slot when asked.
    drop_(&mut h, a, 30, 1);
    h.tick();
    let one = handles(&h)[0];
    pick(&mut h, a, one, WEAPON as u8);
    h.tick();
    assert_eq!(amount_in(&h, aid, WEAPON), 1);
}

#[test]
fn two_players_racing_for_one_item_one_wins_and_nothing_is_duplicated() {
    let mut h = harness(GroundConfig::default());
    let (a, aid) = h.spawn_player("Ann", 0.0, 0.0);
    let (b, bid) = h.spawn_player("Bob", 3.0, 0.0);
    give_slot(&mut h, aid, 14, item(POTION, 5));
    drop_(&mut h, a, 14, 5);
    h.tick();
    h.deliver();
    let handle = handles(&h)[0];
    h.clear();
    pick(&mut h, b, handle, 14);
    pick(&mut h, a, handle, 14);
    h.tick();
    assert_eq!(h.rejections(), vec![Rejection::BadItemRequest]);
    assert_eq!(amount_in(&h, bid, 14), 5);
    assert_eq!(amount_in(&h, aid, 14), 0);
    assert_eq!(total(&h, &[aid, bid], POTION), 5);
    // And asking again later is refused too.
    h.clear();
    pick(&mut h, b, handle, 15);
    h.tick();
    assert_eq!(h.rejections(), vec![Rejection::BadItemRequest]);
    assert_eq!(total(&h, &[aid, bid], POTION), 5);
}

#[test]
fn a_full_inventory_refuses_the_pickup_and_the_item_stays() {
    let mut h = harness(GroundConfig::default());
    let (a, aid) = h.spawn_player("Ann", 0.0, 0.0);
    let (b, bid) = h.spawn_player("Bob", 1.0, 0.0);
    give_slot(&mut h, aid, 14, item(POTION, 1));
    drop_(&mut h, a, 14, 1);
    h.tick();
    h.deliver();
    let handle = handles(&h)[0];
    for s in BACKPACK..SLOTS {
        give_slot(&mut h, bid, s, item(SWORD, 1));
    }
    let before = h.actor(bid).inventory.clone();
    h.clear();
    pick(&mut h, b, handle, 20);
    h.tick();
    assert_eq!(h.rejections(), vec![Rejection::BadItemRequest]);
    assert_eq!(h.actor(bid).inventory, before);
    assert_eq!(handles(&h), vec![handle]);
    assert!(inv_packets(&h, b).is_empty());
}

#[test]
fn hostile_drops_and_pickups_are_refused_counted_and_change_nothing() {
    let mut h = harness(GroundConfig::default());
    let (a, aid) = h.spawn_player("Ann", 0.0, 0.0);
    give_slot(&mut h, aid, 14, item(POTION, 5));
    drop_(&mut h, a, 14, 1);
    h.tick();
    let handle = handles(&h)[0];
    let inv = h.actor(aid).inventory.clone();
    h.clear();
    drop_(&mut h, a, 200, 1); // no such slot
    drop_(&mut h, a, 46, 1); // one past the last
    drop_(&mut h, a, 14, 0); // nothing
    drop_(&mut h, a, 14, 5); // more than the stack (4 left)
    drop_(&mut h, a, 14, u16::MAX);
    drop_(&mut h, a, 15, 1); // an empty slot
    pick(&mut h, a, 0, 15); // a handle never issued
    pick(&mut h, a, handle.wrapping_add(999), 15);
    pick(&mut h, a, handle, 46); // no such slot
    pick(&mut h, a, handle, 255);
    h.tick();
    assert_eq!(h.rejections(), vec![Rejection::BadItemRequest; 10]);
    assert_eq!(
        h.last_stats.counters.rejected(Rejection::BadItemRequest),
        10
    );
    assert_eq!(h.actor(aid).inventory, inv);
    assert_eq!(handles(&h), vec![handle]);
    // The pickup then works once; a second pickup of it is refused.
    h.clear();
    pick(&mut h, a, handle, 14);
    pick(&mut h, a, handle, 14);
    h.tick();
    assert_eq!(h.rejections(), vec![Rejection::BadItemRequest]);
    assert_eq!(amount_in(&h, aid, 14), 5);
    // A dead player can neither drop nor pick up.
    drop_(&mut h, a, 14, 1);
    h.tick();
    let handle = handles(&h)[0];
    h.actor_mut(aid).dead = true;
    h.clear();
    drop_(&mut h, a, 14, 1);
    pick(&mut h, a, handle, 14);
    h.tick();
    assert_eq!(h.rejections(), vec![Rejection::BadItemRequest; 2]);
    assert_eq!(amount_in(&h, aid, 14), 4);
    assert_eq!(handles(&h), vec![handle]);
}

#[test]
fn items_expire_after_their_lifetime_and_the_cap_removes_the_oldest_first() {
    let mut h = harness(GroundConfig {
        lifetime_ms: 5000,
        cap: 3,
        pickup_radius: 20.0,
    });
    let (a, aid) = h.spawn_player("Ann", 0.0, 0.0);
    give_slot(&mut h, aid, 14, item(POTION, 10));
    for _ in 0..3 {
        drop_(&mut h, a, 14, 1);
    }
    h.tick();
    let first = handles(&h);
    assert_eq!(first.len(), 3);
    h.clear();
    drop_(&mut h, a, 14, 1);
    h.tick();
    h.deliver();
    let now = handles(&h);
    assert_eq!(now.len(), 3);
    assert!(!now.contains(&first[0]), "the oldest made room");
    assert_eq!(gone_seen(&h, a), vec![first[0]]);
    assert_eq!(amount_in(&h, aid, 14), 6, "an evicted item is destroyed");
    // Past the lifetime (and the one-second sweep), everything is gone and the zone told.
    h.clear();
    let until = h.now + 5000 + 1100;
    while h.now < until {
        h.tick();
    }
    h.deliver();
    assert!(h.sim.state().ground.is_empty());
    let mut gone = gone_seen(&h, a);
    gone.sort_unstable();
    assert_eq!(gone, now);
}

#[test]
fn a_lifetime_of_zero_keeps_items_as_realm_crafter_did() {
    let mut h = harness(GroundConfig {
        lifetime_ms: 0,
        ..GroundConfig::default()
    });
    let (a, aid) = h.spawn_player("Ann", 0.0, 0.0);
    give_slot(&mut h, aid, 14, item(POTION, 1));
    drop_(&mut h, a, 14, 1);
    h.tick();
    h.step = 60_000;
    h.run_ticks(30);
    assert_eq!(h.sim.state().ground.len(), 1);
}

const MONEY: &[u8] = b"Function Main()\r\n\
\tA = Actor()\r\n\
\tChangeGold(A, 100)\r\n\
\tChangeMoney(A, -30)\r\n\
\tOutput(A, \"G\" + Gold(A))\r\n\
\tChangeGold(A, -1000)\r\n\
\tOutput(A, \"G\" + Money(A))\r\n\
\tSetGold(A, -5)\r\n\
\tOutput(A, \"G\" + Gold(A))\r\n\
\tSetMoney(A, 2147483647)\r\n\
\tChangeGold(A, 2147483647)\r\n\
\tOutput(A, \"G\" + Gold(A))\r\n\
\tChangeGold(A, -2147483647 - 1)\r\n\
\tOutput(A, \"G\" + Gold(A))\r\n\
\tOutput(A, \"N\" + Gold(0))\r\n\
\tChangeGold(0, 5)\r\n\
End Function\r\n";

const SPAWN: &[u8] = b"Function Main()\r\n\
\tSpawnItem(\"potion\", 7, \"testland\", 3.0, 0.0, 4.0)\r\n\
End Function\r\n\
Function Unknown()\r\n\
\tSpawnItem(\"Nothing\", 1, \"Testland\", 0.0, 0.0, 0.0)\r\n\
End Function\r\n\
Function Zero()\r\n\
\tSpawnItem(\"Potion\", 0, \"Testland\", 0.0, 0.0, 0.0)\r\n\
End Function\r\n\
Function Huge()\r\n\
\tSpawnItem(\"Potion\", 40000, \"Testland\", 0.0, 0.0, 0.0)\r\n\
End Function\r\n\
Function Other()\r\n\
\tSpawnItem(\"Potion\", 1, \"Elsewhere\", 0.0, 0.0, 0.0)\r\n\
End Function\r\n\
Function OtherInstance()\r\n\
\tSpawnItem(\"Potion\", 1, \"Testland\", 0.0, 0.0, 0.0, 2)\r\n\
End Function\r\n\
Function NoArea()\r\n\
\tSpawnItem(\"Potion\", 1, \"Atlantis\", 0.0, 0.0, 0.0)\r\n\
End Function\r\n";

fn scripted() -> SimHarness {
    SimHarness::with(
        ZoneConfig::default(),
        content_with_scripts(content(), &[("Money", MONEY), ("Spawn", SPAWN)]),
    )
}

#[test]
fn the_money_natives_floor_at_zero_saturate_and_tell_the_applied_change() {
    let mut h = scripted();
    let (p, pid) = h.spawn_dm("Ann", 0.0, 0.0);
    h.clear();
    h.act(p, cmd("SCRIPT", "Money,Main"));
    h.run_ticks(3);
    assert!(h.script_errors().is_empty(), "{:?}", h.script_errors());
    assert_eq!(
        h.chat(p),
        ["G70", "G0", "G0", "G2147483647", "G0", "N0"],
        "an unknown actor has no gold and changes nothing"
    );
    assert_eq!(h.actor(pid).gold, 0);
    use GoldChange::{Down, Up};
    assert_eq!(
        gold_changes(&h, p),
        vec![
            Up { amount: 100 },
            Down { amount: 30 },
            Down { amount: 70 }, // asked for 1000, had 70
            Up {
                amount: 2_147_483_647
            },
            Down {
                amount: 2_147_483_647
            },
        ],
        "SetGold(-5) at 0 and a change past the cap send nothing"
    );
}

#[test]
fn spawn_item_puts_an_item_here_and_refuses_what_it_cannot_do_with_an_error() {
    let mut h = scripted();
    let (p, _) = h.spawn_dm("Ann", 0.0, 0.0);
    h.clear();
    h.act(p, cmd("SCRIPT", "Spawn,Main"));
    h.run_ticks(3);
    h.deliver();
    assert!(h.script_errors().is_empty(), "{:?}", h.script_errors());
    let hs = handles(&h);
    assert_eq!(hs.len(), 1);
    let g = &h.sim.state().ground[&hs[0]];
    assert_eq!(
        (g.item.item, g.item.amount, g.x, g.z),
        (POTION, 7, 3.0, 4.0)
    );
    assert_eq!(g.item.health, 100);
    assert_eq!(dropped_seen(&h, p), vec![(hs[0], 7, POTION)]);
    for (func, says) in [
        ("Unknown", "no item named"),
        ("Zero", "amount 0"),
        ("Huge", "amount 40000"),
        ("NoArea", "no area named"),
    ] {
        h.clear();
        h.act(p, cmd("SCRIPT", &format!("Spawn,{func}")));
        h.run_ticks(3);
        let errs = h.script_errors();
        assert_eq!(errs.len(), 1, "{func}: {errs:?}");
        assert!(errs[0].0.contains("SpawnItem"), "{func}: {errs:?}");
        assert!(errs[0].0.contains(says), "{func}: {errs:?}");
        assert_eq!(handles(&h).len(), 1, "{func} spawned nothing");
    }
}

/// `SpawnItem` into another AreaInstance (another area, or another instance of this one)
/// asks the cluster, whose zone there puts the item down; nothing is spawned here. A zone
/// asked by the gateway puts the item on its ground and answers its handle (an unknown
/// item: none, logged).
#[test]
fn spawn_item_elsewhere_asks_the_cluster_and_the_zone_there_puts_it_down() {
    use shared::internal::{ScriptStoreOp, ValueDto};
    use zone_node::sim::events::{ZoneInput, ZoneOutput};
    let mut h = scripted();
    let (p, _) = h.spawn_dm("Ann", 0.0, 0.0);
    for (func, area, instance) in [("Other", "Elsewhere", 0), ("OtherInstance", "Testland", 2)] {
        h.clear();
        h.act(p, cmd("SCRIPT", &format!("Spawn,{func}")));
        h.run_ticks(3);
        assert!(
            h.script_errors().is_empty(),
            "{func}: {:?}",
            h.script_errors()
        );
        assert!(
            h.outputs.iter().any(|o| matches!(
                o,
                ZoneOutput::ScriptStore { op: ScriptStoreOp::SpawnItem { item, amount: 1, area: a, instance: i, .. }, .. }
                    if item == "Potion" && a == area && *i == instance
            )),
            "{func}"
        );
        assert!(handles(&h).is_empty(), "{func}: nothing here");
    }
    h.clear();
    h.push(ZoneInput::SpawnItem {
        qid: 4,
        item: "potion".into(),
        amount: 3,
        pos: (1.0, 0.0, 2.0),
    });
    h.push(ZoneInput::SpawnItem {
        qid: 5,
        item: "Nothing".into(),
        amount: 1,
        pos: (1.0, 0.0, 2.0),
    });
    h.tick();
    let hs = handles(&h);
    assert_eq!(hs.len(), 1);
    let g = &h.sim.state().ground[&hs[0]];
    assert_eq!((g.item.item, g.item.amount), (POTION, 3));
    let answers: Vec<_> = h
        .outputs
        .iter()
        .filter_map(|o| match o {
            ZoneOutput::ScriptStore {
                op: ScriptStoreOp::ActorAnswer { qid, value },
                ..
            } => Some((*qid, value.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        answers,
        [
            (4, Some(ValueDto::Int(i32::try_from(hs[0]).unwrap()))),
            (5, None)
        ]
    );
}

#[test]
fn the_gold_command_goes_through_the_one_rule_and_saturates() {
    let mut h = harness(GroundConfig::default());
    let (d, did) = h.spawn_dm("Dee", 0.0, 0.0);
    let (p, pid) = h.spawn_player("Pat", 0.0, 0.0);
    h.clear();
    h.act(d, cmd("GOLD", "250"));
    h.act(d, cmd("GOLD", "-1000"));
    h.act(d, cmd("GOLD", "99999999999"));
    h.act(d, cmd("GOLD", "1"));
    h.act(d, cmd("GOLD", "-99999999999"));
    h.act(d, cmd("GOLD", "lots"));
    h.act(p, cmd("GOLD", "100"));
    h.tick();
    use GoldChange::{Down, Up};
    assert_eq!(
        gold_changes(&h, d),
        vec![
            Up { amount: 250 },
            Down { amount: 250 },
            Up {
                amount: 2_147_483_647
            },
            Down {
                amount: 2_147_483_647
            },
        ]
    );
    assert_eq!(h.actor(did).gold, 0);
    assert_eq!(h.actor(pid).gold, 0);
    assert_eq!(
        h.rejections(),
        vec![Rejection::Invalid, Rejection::NotPermitted]
    );
}

#[test]
fn give_offers_one_item_to_a_dm_and_answers_an_unknown_name_or_no_room() {
    let mut h = harness(GroundConfig::default());
    let (d, did) = h.spawn_dm("Dee", 0.0, 0.0);
    let (p, pid) = h.spawn_player("Pat", 0.0, 0.0);
    h.clear();
    // What a client sends: `/give sword` becomes the GIVE command.
    let give = zone_node::sim::chat::parse_chat("/give sword");
    assert_eq!(give, cmd("GIVE", "sword"));
    h.act(d, give);
    h.act(p, cmd("GIVE", "Sword"));
    h.tick();
    assert_eq!(h.rejections(), vec![Rejection::NotPermitted]);
    assert_eq!(amount_in(&h, did, WEAPON), 1, "equipped by first fit");
    assert!(h.actor(pid).inventory.iter().all(Option::is_none));
    let offers: Vec<_> = inv_packets(&h, d)
        .into_iter()
        .filter_map(|u| match u {
            InventoryUpdateS2C::Offer {
                item_id, amount, ..
            } => Some((item_id, amount)),
            _ => None,
        })
        .collect();
    assert_eq!(offers, vec![(SWORD, 1)]);
    h.clear();
    h.act(d, cmd("GIVE", "Excalibur"));
    h.tick();
    assert_eq!(h.chat(d), ["No item named Excalibur"]);
    assert_eq!(h.rejections(), vec![Rejection::BadItemRequest]);
    for s in BACKPACK..SLOTS {
        give_slot(&mut h, did, s, item(SWORD, 1));
    }
    let before = h.actor(did).inventory.clone();
    h.clear();
    h.act(d, cmd("GIVE", "potion"));
    h.tick();
    assert_eq!(h.chat(d), ["No room for Potion"]);
    assert_eq!(h.rejections(), vec![Rejection::BadItemRequest]);
    assert_eq!(h.actor(did).inventory, before);
}

/// The operator's live map (`sim::inspect::map_view`): every actor where it stands, with
/// its RuntimeID, kind and health, and the ground items by name; taking it changes
/// nothing.
#[test]
fn the_live_map_view_shows_actors_and_ground_items_as_they_are() {
    let mut h = harness(GroundConfig::default());
    let (ann, ann_id) = h.spawn_player("Ann", 10.0, 20.0);
    let (_, bob_id) = h.spawn_player("Bob", -4.0, 7.5);
    let wolf = h.spawn_npc(zone_node::sim::testing::templates::WOLF, 30.0, -12.0);
    give_slot(&mut h, ann_id, BACKPACK, item(POTION, 3));
    drop_(&mut h, ann, BACKPACK as u8, 3);
    h.tick();
    let before = h.sim.state().actor_count();
    let view = zone_node::sim::inspect::map_view(h.sim.state());
    assert_eq!(h.sim.state().actor_count(), before);
    assert_eq!(view.actors.len(), 3);
    for (id, player) in [(ann_id, true), (bob_id, true), (wolf, false)] {
        let a = h.actor(id);
        let m = view
            .actors
            .iter()
            .find(|m| m.runtime_id == a.rid)
            .unwrap_or_else(|| panic!("{} on the map", a.cold.name));
        assert_eq!((m.name.as_str(), m.player), (a.cold.name.as_str(), player));
        assert_eq!((m.x, m.y, m.z), (a.x, a.y, a.z));
        assert_eq!(m.level, a.cold.level);
        assert!(m.health_max >= m.health);
    }
    assert_eq!(view.items.len(), 1);
    assert_eq!(
        (view.items[0].name.as_str(), view.items[0].amount),
        ("Potion", 3)
    );
    assert_eq!((view.items[0].x, view.items[0].z), (10.0, 20.0));
}
