//! An actor's own inventory through `ZoneSim`: moving, splitting, merging and equipping
//! (`P_InventoryUpdate "S"`/`"A"`), Equip Change and `"O"`, offer answers, using and
//! eating, the action bar, and the inventory and item script natives.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::float_cmp)]

use std::path::PathBuf;
use std::sync::Arc;

use shared::content::{Item, ItemKind, WeaponType};
use shared::proto::{ActionBarUpdate, InventoryUpdateC2S, InventoryUpdateS2C, Packet};
use zone_node::sim::ZoneConfig;
use zone_node::sim::area::ZoneContent;
use zone_node::sim::events::{PlayerAction, PlayerKey, Rejection, ZoneOutput};
use zone_node::sim::items::{bag, inventory};
use zone_node::sim::state::ActorId;
use zone_node::sim::testing::{
    SimHarness, attrs, content_with_scripts, demo_content, templates, test_content,
};

const SWORD: u16 = 0;
const AXE: u16 = 1;
const SHIELD: u16 = 2;
const HELMET: u16 = 3;
const POTION: u16 = 4;
const HORN: u16 = 5;
const RING: u16 = 6;

fn weapon(id: u16, name: &str, wt: WeaponType, damage: u16) -> Item {
    Item {
        id,
        name: name.into(),
        kind: ItemKind::Weapon {
            damage,
            damage_type: 0,
            weapon_type: wt,
            projectile: 0,
            range: 0.0,
            anim: String::new(),
        },
        ..Item::default()
    }
}

fn items() -> Vec<Item> {
    let mut attributes = vec![0; 40];
    attributes[usize::from(attrs::STRENGTH)] = 5;
    let mut heal = vec![0; 40];
    heal[usize::from(attrs::HEALTH)] = 20;
    vec![
        Item {
            gubbins: [1, 0, 0, 0, 0, 0],
            value: 20,
            ..weapon(SWORD, "Sword", WeaponType::OneHanded, 10)
        },
        weapon(AXE, "Axe", WeaponType::TwoHanded, 20),
        Item {
            id: SHIELD,
            name: "Shield".into(),
            slot_type: 2,
            kind: ItemKind::Armour { level: 3 },
            ..Item::default()
        },
        Item {
            id: HELMET,
            name: "Helmet".into(),
            slot_type: 3,
            attributes,
            kind: ItemKind::Armour { level: 2 },
            ..Item::default()
        },
        Item {
            id: POTION,
            name: "Potion".into(),
            stackable: true,
            attributes: heal,
            kind: ItemKind::Potion { secs: 0 },
            ..Item::default()
        },
        Item {
            id: HORN,
            name: "Horn".into(),
            script: "Horn".into(),
            method: "Blow".into(),
            exclusive_race: "Human".into(),
            kind: ItemKind::Image { id: 3 },
            ..Item::default()
        },
        Item {
            id: RING,
            name: "Ring".into(),
            slot_type: 9,
            kind: ItemKind::Ring,
            ..Item::default()
        },
    ]
}

fn content(scripts: &[(&str, &[u8])]) -> ZoneContent {
    let mut c = if scripts.is_empty() {
        test_content()
    } else {
        content_with_scripts(test_content(), scripts)
    };
    let mut w = (*c.world).clone();
    w.items = items();
    c.world = Arc::new(w);
    c
}

fn harness(scripts: &[(&str, &[u8])]) -> SimHarness {
    SimHarness::with(ZoneConfig::default(), content(scripts))
}

fn put(h: &mut SimHarness, id: ActorId, slot: usize, item: u16, amount: u16) {
    let t = h.sim.state().content.world.item(item).unwrap().clone();
    h.actor_mut(id).inventory[slot] = Some(inventory::instance(&t, amount));
}

fn slot(h: &SimHarness, id: ActorId, slot: usize) -> Option<(u16, u16)> {
    h.actor(id).inventory[slot]
        .as_ref()
        .map(|s| (s.item, s.amount))
}

fn inv_packets(h: &SimHarness, p: PlayerKey) -> Vec<InventoryUpdateS2C> {
    h.reliable_of(p, 15)
        .iter()
        .map(|b| InventoryUpdateS2C::decode_payload(b, &Default::default()).unwrap())
        .collect()
}

fn swap(rid: u16, from: u8, to: u8, amount: u16) -> PlayerAction {
    PlayerAction::Inventory(InventoryUpdateC2S::Swap {
        runtime_id: rid,
        from,
        to,
        amount,
    })
}

fn merge(rid: u16, from: u8, to: u8, amount: u16) -> PlayerAction {
    PlayerAction::Inventory(InventoryUpdateC2S::Merge {
        runtime_id: rid,
        from,
        to,
        amount,
    })
}

fn bad_requests(h: &SimHarness) -> usize {
    h.rejections()
        .iter()
        .filter(|r| **r == Rejection::BadItemRequest)
        .count()
}

fn cmd(word: &str) -> PlayerAction {
    PlayerAction::Command {
        word: word.into(),
        params: String::new(),
    }
}

/// Equipping a sword from the backpack runs Equip Change and shows the sword (and its
/// gubbin) to the other players, not to the wearer.
#[test]
fn equipping_runs_equip_change_and_tells_the_others() {
    let equip: &[u8] = b"Function Main()\n  Output(Actor(), \"wielding \" + ItemName(ActorWeapon(Actor())))\nEnd Function\n";
    let mut h = harness(&[("Equip Change", equip)]);
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    let (w, _) = h.spawn_player("Watcher", 5.0, 0.0);
    put(&mut h, pid, 14, SWORD, 1);
    let rid = h.actor(pid).rid;
    h.clear();
    h.act(p, swap(rid, 14, 0, 0));
    h.tick();
    h.deliver();
    assert_eq!(slot(&h, pid, 0), Some((SWORD, 1)));
    assert_eq!(slot(&h, pid, 14), None);
    assert_eq!(h.chat(p), ["wielding Sword"]);
    let seen = inv_packets(&h, w);
    assert_eq!(
        seen,
        [InventoryUpdateS2C::Equipment {
            runtime_id: rid,
            weapon: SWORD,
            shield: 65535,
            chest: 65535,
            hat: 65535,
            gubbins: [1, 0, 0, 0, 0, 0],
        }]
    );
    assert!(inv_packets(&h, p).is_empty(), "the wearer is not told");
    // A backpack-only move tells nobody.
    put(&mut h, pid, 20, POTION, 3);
    h.clear();
    h.act(p, swap(rid, 20, 21, 2));
    h.tick();
    h.deliver();
    assert_eq!(slot(&h, pid, 20), Some((POTION, 1)));
    assert_eq!(slot(&h, pid, 21), Some((POTION, 2)));
    assert!(inv_packets(&h, w).is_empty());
    assert!(h.chat(p).is_empty());
    assert_eq!(bad_requests(&h), 0);
}

/// Every refused move is counted and changes nothing: a stranger's RID, the same slot, a
/// slot out of range, too many, a stack into an equipment slot, a two-hander with a
/// shield, a merge of unstackable items.
#[test]
fn refused_moves_are_counted_and_change_nothing() {
    let mut h = harness(&[]);
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    let (_, other) = h.spawn_player("Bob", 5.0, 0.0);
    let rid = h.actor(pid).rid;
    let other_rid = h.actor(other).rid;
    put(&mut h, pid, 14, POTION, 5);
    put(&mut h, pid, 15, SWORD, 1);
    put(&mut h, pid, 16, SWORD, 1);
    put(&mut h, pid, 17, SHIELD, 1);
    put(&mut h, pid, 0, AXE, 1);
    let before = h.actor(pid).inventory.clone();
    h.clear();
    for a in [
        swap(other_rid, 14, 20, 1),
        swap(9999, 14, 20, 1),
        swap(rid, 14, 14, 1),
        swap(rid, 14, 46, 1),
        swap(rid, 200, 20, 1),
        swap(rid, 14, 20, 6),
        swap(rid, 14, 0, 0),
        swap(rid, 17, 1, 0),
        merge(rid, 15, 16, 1),
        merge(rid, 14, 0, 1),
        merge(rid, 14, 15, 1),
        merge(rid, 14, 30, 1),
        merge(rid, 14, 14, 1),
    ] {
        h.act(p, a);
    }
    h.tick();
    assert_eq!(bad_requests(&h), 13);
    assert_eq!(h.actor(pid).inventory, before);
    assert_eq!(h.actor(other).inventory, vec![None; 46]);
}

/// A player may move the items of its own pet, and the pet's equipment change is shown.
#[test]
fn a_pets_inventory_is_the_leaders_to_arrange() {
    let mut h = harness(&[]);
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    let (w, _) = h.spawn_player("Watcher", 5.0, 0.0);
    let pet = h.spawn_npc(templates::HUMAN, 3.0, 0.0);
    h.sim.state_mut().slave_link(pid, pet);
    put(&mut h, pet, 14, SWORD, 1);
    let pet_rid = h.actor(pet).rid;
    h.clear();
    h.act(p, swap(pet_rid, 14, 0, 0));
    h.tick();
    h.deliver();
    assert_eq!(slot(&h, pet, 0), Some((SWORD, 1)));
    assert!(
        inv_packets(&h, w)
            .iter()
            .any(|o| matches!(o, InventoryUpdateS2C::Equipment { runtime_id, weapon: SWORD, .. } if *runtime_id == pet_rid))
    );
    // Someone else's pet is not.
    let stray = h.spawn_npc(templates::HUMAN, 3.0, 3.0);
    put(&mut h, stray, 14, SWORD, 1);
    let stray_rid = h.actor(stray).rid;
    h.clear();
    h.act(p, swap(stray_rid, 14, 0, 0));
    h.tick();
    assert_eq!(bad_requests(&h), 1);
    assert_eq!(slot(&h, stray, 14), Some((SWORD, 1)));
}

/// Merging two identical potion stacks; the total is kept.
#[test]
fn merging_stackables_keeps_the_total() {
    let mut h = harness(&[]);
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    let rid = h.actor(pid).rid;
    put(&mut h, pid, 14, POTION, 5);
    put(&mut h, pid, 30, POTION, 2);
    h.act(p, merge(rid, 14, 30, 4));
    h.tick();
    assert_eq!(slot(&h, pid, 14), Some((POTION, 1)));
    assert_eq!(slot(&h, pid, 30), Some((POTION, 6)));
    assert_eq!(bad_requests(&h), 0);
}

fn offers(h: &SimHarness, p: PlayerKey) -> Vec<(u32, u16, u16)> {
    inv_packets(h, p)
        .into_iter()
        .filter_map(|o| match o {
            InventoryUpdateS2C::Offer {
                item_handle,
                item_id,
                amount,
            } => Some((item_handle, item_id, amount)),
            _ => None,
        })
        .collect()
}

fn answer(handle: u32, slot: Option<u8>) -> PlayerAction {
    PlayerAction::Inventory(match slot {
        Some(slot) => InventoryUpdateC2S::OfferAccepted {
            item_handle: handle,
            slot,
        },
        None => InventoryUpdateC2S::OfferRefused {
            item_handle: handle,
        },
    })
}

/// Offer answers: the right slot is fine; a replay, a stranger's handle or an unknown one
/// is refused; a wrong slot or a "GN" is counted and corrected once ("T" for the wrong
/// copy, the offer again), and the item stays where the server put it.
#[test]
fn offer_answers_are_checked_against_the_servers_placement() {
    let mut h = harness(&[]);
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    let (q, _) = h.spawn_player("Bob", 5.0, 0.0);
    let t = h.sim.state().content.world.item(SWORD).unwrap().clone();
    h.clear();
    bag::give(h.sim.state_mut(), pid, inventory::instance(&t, 1)).unwrap();
    h.tick();
    let o = offers(&h, p);
    assert_eq!(o.len(), 1);
    let (handle, item, amount) = o[0];
    assert_eq!((item, amount), (SWORD, 1));
    assert_eq!(slot(&h, pid, 0), Some((SWORD, 1)), "placed at once");
    h.clear();
    h.act(q, answer(handle, Some(0)));
    h.tick();
    assert_eq!(bad_requests(&h), 1, "not Bob's offer");
    h.act(p, answer(handle, Some(0)));
    h.tick();
    assert_eq!(bad_requests(&h), 1, "the right answer");
    h.act(p, answer(handle, Some(0)));
    h.act(p, answer(123_456, None));
    h.tick();
    assert_eq!(bad_requests(&h), 3, "a replay and an unknown handle");

    // A potion the server put in slot 14; the client says it went to 20.
    let t = h.sim.state().content.world.item(POTION).unwrap().clone();
    h.clear();
    bag::give(h.sim.state_mut(), pid, inventory::instance(&t, 3)).unwrap();
    h.tick();
    let (h1, _, _) = offers(&h, p)[0];
    h.clear();
    h.act(p, answer(h1, Some(20)));
    h.tick();
    assert_eq!(bad_requests(&h), 1);
    let sent = inv_packets(&h, p);
    assert_eq!(
        sent[0],
        InventoryUpdateS2C::Taken {
            slot: 20,
            amount: 3
        }
    );
    let InventoryUpdateS2C::Offer {
        item_handle: h2,
        item_id: POTION,
        amount: 3,
    } = sent[1]
    else {
        panic!("{sent:?}")
    };
    assert_ne!(h2, h1);
    // The correction is refused too: counted, not corrected again; nothing is lost.
    h.clear();
    h.act(p, answer(h2, None));
    h.tick();
    assert_eq!(bad_requests(&h), 1);
    assert!(inv_packets(&h, p).is_empty());
    assert_eq!(slot(&h, pid, 14), Some((POTION, 3)));
}

/// Using an item runs its script with the user and a target in reach; a target out of
/// reach, an empty slot, a race that may not use it or an item without a script is
/// refused. Nothing is consumed.
#[test]
fn using_an_item_runs_its_script() {
    let horn: &[u8] =
        b"Function Blow()\n  Output(Actor(), \"horn at \" + Name(ContextActor()))\nEnd Function\n";
    let mut h = harness(&[("Horn", horn)]);
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    let (_, near) = h.spawn_player("Near", 10.0, 10.0);
    let (_, far) = h.spawn_player("Far", 30.0, 0.0);
    put(&mut h, pid, 14, HORN, 1);
    put(&mut h, pid, 15, SWORD, 1);
    let (near_rid, far_rid) = (h.actor(near).rid, h.actor(far).rid);
    h.clear();
    h.act(
        p,
        PlayerAction::UseItem {
            slot: 14,
            target: Some(near_rid),
        },
    );
    for (slot, target) in [
        (14, Some(far_rid)),
        (14, Some(9999)),
        (20, None),
        (15, None),
        (46, None),
    ] {
        h.act(p, PlayerAction::UseItem { slot, target });
    }
    h.tick();
    h.tick();
    assert_eq!(h.chat(p), ["horn at Near"]);
    assert_eq!(bad_requests(&h), 5);
    assert_eq!(slot(&h, pid, 14), Some((HORN, 1)));
}

/// Eating potions: one actor effect named after the item (its deltas once, whatever the
/// amount; a permanent one here, `secs: 0`), then the stack shrinks with no "T"; bad
/// amounts and things that are not food are refused. Eating another refreshes the same
/// effect: it does not stack.
#[test]
fn eating_potions_heals_and_uses_them_up() {
    let mut h = harness(&[]);
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    h.actor_mut(pid).attr[usize::from(attrs::HEALTH)] = 30;
    put(&mut h, pid, 14, POTION, 3);
    put(&mut h, pid, 15, SWORD, 1);
    h.clear();
    h.act(
        p,
        PlayerAction::EatItem {
            slot: 14,
            amount: 2,
        },
    );
    h.tick();
    assert_eq!(h.actor(pid).attr[usize::from(attrs::HEALTH)], 50);
    assert_eq!(slot(&h, pid, 14), Some((POTION, 1)));
    assert!(inv_packets(&h, p).is_empty(), "no \"T\"");
    for (slot, amount) in [(14, 0), (14, 2), (15, 1), (16, 1), (99, 1)] {
        h.act(p, PlayerAction::EatItem { slot, amount });
    }
    h.tick();
    assert_eq!(bad_requests(&h), 5);
    h.act(
        p,
        PlayerAction::EatItem {
            slot: 14,
            amount: 1,
        },
    );
    h.tick();
    assert_eq!(h.actor(pid).attr[usize::from(attrs::HEALTH)], 50);
    assert_eq!(h.actor(pid).effects.len(), 1);
    assert_eq!(slot(&h, pid, 14), None);
}

/// The action bar keeps "S"+name, "I"+two raw bytes or "" per slot; slot 36 is refused.
#[test]
fn the_action_bar_is_stored() {
    let mut h = harness(&[]);
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    h.clear();
    h.act(
        p,
        PlayerAction::ActionBar(ActionBarUpdate::Spell {
            slot: 0,
            spell: "Fireball".into(),
        }),
    );
    h.act(
        p,
        PlayerAction::ActionBar(ActionBarUpdate::Item {
            slot: 35,
            item_id: 0xE912,
        }),
    );
    h.act(
        p,
        PlayerAction::ActionBar(ActionBarUpdate::Item {
            slot: 36,
            item_id: 1,
        }),
    );
    h.tick();
    assert_eq!(bad_requests(&h), 1);
    let bar = h
        .actor(pid)
        .player_data
        .as_ref()
        .unwrap()
        .action_bar
        .clone();
    assert_eq!(bar.len(), 36);
    assert_eq!(bar[0], "SFireball");
    assert_eq!(bar[35], "I\u{12}\u{e9}");
    let state = h.sim.state().actor_state(pid).unwrap();
    assert_eq!(state.action_bar[35], "I\u{12}\u{e9}");
    h.act(
        p,
        PlayerAction::ActionBar(ActionBarUpdate::Clear { slot: 0 }),
    );
    h.tick();
    assert_eq!(h.actor(pid).player_data.as_ref().unwrap().action_bar[0], "");
}

/// A player arriving sees the gubbins of those already wearing some, and they see its.
#[test]
fn an_arriving_player_is_shown_the_gubbins() {
    let mut h = harness(&[]);
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    put(&mut h, pid, 0, SWORD, 1);
    let rid = h.actor(pid).rid;
    h.clear();
    let (q, _) = h.spawn_player("Bob", 5.0, 0.0);
    h.deliver();
    assert!(
        inv_packets(&h, q)
            .iter()
            .any(|o| matches!(o, InventoryUpdateS2C::Equipment { runtime_id, gubbins: [1, ..], .. } if *runtime_id == rid))
    );
    assert!(inv_packets(&h, p).is_empty(), "Bob wears nothing");
}

fn script_logs(h: &SimHarness) -> Vec<String> {
    h.outputs
        .iter()
        .filter_map(|o| match o {
            ZoneOutput::ScriptLog { message, .. } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

/// The item natives: handles from the slot natives, the template fields through them,
/// health, attributes, counts, giving and taking, and a handle that goes stale when the
/// item leaves its slot.
#[test]
fn the_item_natives() {
    let src: &[u8] = br#"
Function Test()
    P = Actor()
    W = ActorWeapon(P)
    Output(P, ItemName(W) + "," + ItemID(W) + "," + ItemValue(W) + "," + ItemDamage(W) + "," + ItemWeaponType(W))
    Output(P, "same " + (W = ActorWeapon(P)) + " none " + ActorShield(P) + " ring " + ItemName(ActorRing(P, 1)) + " ring5 " + ActorRing(P, 5))
    H = ActorHat(P)
    Output(P, "hat " + ItemArmor(H) + " str " + ItemAttribute(H, "Strength") + " armour " + ArmourLevel(P))
    SetItemHealth(W, 40)
    Output(P, "health " + ItemHealth(W))
    Output(P, "potions " + BackpackCount(P, 1) + " " + ItemName(ActorBackpack(P, 1)) + " has " + HasItem(P, "potion", 4) + HasItem(P, "Potion", 5))
    GiveItem(P, "Potion", -2)
    GiveItem(P, "Nothing", 1)
    GiveItem(P, "Shield", 1)
    Output(P, "left " + BackpackCount(P, 1) + " shield " + ItemName(ActorShield(P)))
End Function

Function Stale()
    P = Actor()
    W = ActorWeapon(P)
    GiveItem(P, "Sword", -1)
    Output(P, "stale [" + ItemName(W) + "] " + ItemHealth(W))
End Function
"#;
    let mut h = harness(&[("In-game Commands", src)]);
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    put(&mut h, pid, 0, SWORD, 1);
    put(&mut h, pid, 2, HELMET, 1);
    put(&mut h, pid, 8, RING, 1);
    put(&mut h, pid, 14, POTION, 4);
    h.clear();
    h.act(p, cmd("Test"));
    h.tick();
    h.tick();
    assert!(h.script_errors().is_empty(), "{:?}", h.script_errors());
    assert_eq!(
        h.chat(p),
        [
            "Sword,0,20,10,1",
            "same 1 none 0 ring Ring ring5 0",
            "hat 2 str 5 armour 2",
            "health 40",
            "potions 4 Potion has 10",
            "left 2 shield Shield",
        ]
    );
    assert_eq!(h.actor(pid).inventory[0].as_ref().unwrap().health, 40);
    let sent = inv_packets(&h, p);
    assert!(sent.contains(&InventoryUpdateS2C::Health {
        slot: 0,
        health: 40
    }));
    assert!(sent.contains(&InventoryUpdateS2C::Taken {
        slot: 14,
        amount: 2
    }));
    assert!(
        script_logs(&h)
            .iter()
            .any(|l| l.contains("no item called \"Nothing\"")),
        "{:?}",
        script_logs(&h)
    );
    h.clear();
    h.act(p, cmd("Stale"));
    h.tick();
    h.tick();
    assert_eq!(h.chat(p), ["stale [] 0"]);
    assert_eq!(slot(&h, pid, 0), None);
}

/// `GiveItem` to a player with no room gives nothing and says so in the script log; to an
/// NPC it places the items with no packet.
#[test]
fn give_item_is_all_or_nothing() {
    let src: &[u8] = b"Function Test()\n  GiveItem(Actor(), \"Potion\", 3)\n  GiveItem(ContextActor(), \"Sword\", 2)\nEnd Function\n";
    let mut h = harness(&[("Gift", src)]);
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    let npc = h.spawn_npc(templates::HUMAN, 3.0, 0.0);
    for s in 14..46 {
        put(&mut h, pid, s, SWORD, 1);
    }
    h.clear();
    use zone_node::sim::scripts::{DefaultHooks, ScriptHooks};
    DefaultHooks.on_item_used(h.sim.state_mut(), "Gift", "Test", pid, Some(npc));
    h.tick();
    h.tick();
    assert!(h.script_errors().is_empty(), "{:?}", h.script_errors());
    assert_eq!(inventory::count(&h.actor(pid).inventory, POTION), 0);
    assert!(script_logs(&h).iter().any(|l| l.contains("no room")));
    assert!(offers(&h, p).is_empty());
    assert_eq!(slot(&h, npc, 0), Some((SWORD, 1)));
    assert_eq!(slot(&h, npc, 14), Some((SWORD, 1)));
}

fn sample_dir() -> PathBuf {
    let candidates = [
        std::env::var_os("RC_SAMPLE_DATA").map(PathBuf::from),
        Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/rc-sample-data")),
        Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/rc-sample-data")),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|p| p.join("Items.dat").exists())
        .unwrap_or_default()
}

/// The sample project's `/ItemPack` gives its four items (Sword, Imperial Armor, Imperial
/// Helmet, Scarred Shield) from the sample `Items.dat`.
#[test]
fn the_sample_itempack_gives_four_items() {
    let dir = sample_dir();
    let read = |n: &str| std::fs::read(dir.join("Scripts").join(n)).ok();
    let (Some(cmds), Some(pg), Ok((world, _))) = (
        read("In-game Commands.rsl"),
        read("ProcessGlobals.rsl"),
        shared::content::fs::load_world(&dir),
    ) else {
        eprintln!("skipped: the sample data is not there");
        return;
    };
    let mut c = content_with_scripts(
        test_content(),
        &[("In-game Commands", &cmds), ("ProcessGlobals", &pg)],
    );
    let mut w = (*c.world).clone();
    w.items = world.items.clone();
    c.world = Arc::new(w);
    let mut h = SimHarness::with(ZoneConfig::default(), c);
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    h.clear();
    h.act(p, cmd("ITEMPACK"));
    h.tick();
    h.tick();
    assert!(h.script_errors().is_empty(), "{:?}", h.script_errors());
    let names = [
        "Sword",
        "Imperial Armor",
        "Imperial Helmet",
        "Scarred Shield",
    ];
    for n in names {
        let t = world.items.iter().find(|i| i.name == n).unwrap();
        assert_eq!(inventory::count(&h.actor(pid).inventory, t.id), 1, "{n}");
    }
    assert_eq!(offers(&h, p).len(), 4);
    assert_eq!(bad_requests(&h), 0);
}

/// The demo world: a new character gets its starter kit once (Login.rsl), wears the sword
/// and tunic at once (first fit), and Equip Change.rsl adds the tunic's Toughness while it
/// is worn, and takes it back when it is taken off, however often it runs.
#[test]
fn the_demo_world_gives_a_kit_and_equip_change_adds_bonuses() {
    let mut h = SimHarness::with(ZoneConfig::default(), demo_content("Meadow"));
    let world = h.sim.state().content.world.clone();
    let playable = world.first_playable().unwrap();
    let t = h.sim.state().content.template(playable.id).unwrap().clone();
    let (p, pid) = h.join(h.new_character("Newbie"), false);
    h.run_ticks(3);
    let item = |n: &str| world.items.iter().find(|i| i.name == n).unwrap().id;
    let inv = h.actor(pid).inventory.clone();
    assert_eq!(inv[0].as_ref().map(|s| s.item), Some(item("Short Sword")));
    assert_eq!(inv[3].as_ref().map(|s| s.item), Some(item("Leather Tunic")));
    assert_eq!(inventory::count(&inv, item("Healing Potion")), 3);
    let tough = usize::from(world.fixed_attributes.toughness.unwrap());
    let base = t.attributes[tough];
    assert_eq!(h.actor(pid).attr[tough], base.0 + 3, "the tunic's +3");
    assert_eq!(h.actor(pid).attr_max[tough], base.1 + 3);
    // Take the tunic off: back to the base values.
    let rid = h.actor(pid).rid;
    h.act(p, swap(rid, 3, 40, 0));
    h.run_ticks(3);
    assert_eq!(h.actor(pid).attr[tough], base.0);
    assert_eq!(h.actor(pid).attr_max[tough], base.1);
    // Put it on again; a second login gives no second kit.
    h.act(p, swap(rid, 40, 3, 0));
    h.run_ticks(3);
    assert_eq!(h.actor(pid).attr[tough], base.0 + 3);
    let st = h.sim.state_mut();
    st.announce(zone_node::sim::engine::EngineEvent::LoggedIn { actor: pid });
    st.react();
    h.run_ticks(3);
    assert_eq!(
        inventory::count(&h.actor(pid).inventory, item("Healing Potion")),
        3
    );
    assert!(h.script_errors().is_empty(), "{:?}", h.script_errors());
}

/// Issue 36: a client swapping its sword in and out of the weapon slot thousands of times a
/// tick starts `Equip Change` once a tick (identical starts are coalesced), and an Equip
/// Change that waits piles up to `scripts_per_actor` instances and no more: further starts
/// are refused, counted and logged once a second, and the zone's scripts stay bounded.
#[test]
fn an_equipment_swap_flood_starts_equip_change_once_a_tick_up_to_the_cap() {
    let equip: &[u8] = b"Function Main()\n  DoEvents(600000)\nEnd Function\n";
    let cfg = ZoneConfig {
        scripts_per_actor: 16,
        ..ZoneConfig::default()
    };
    let mut h = SimHarness::with(cfg, content(&[("Equip Change", equip)]));
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    put(&mut h, pid, 14, SWORD, 1);
    let rid = h.actor(pid).rid;
    h.clear();
    // One tick's worth of a flood: 2,000 swaps in and out.
    for _ in 0..1_000 {
        h.act(p, swap(rid, 14, 0, 0));
        h.act(p, swap(rid, 0, 14, 0));
    }
    h.tick();
    let stats = h.sim.state().scripts.stats.clone();
    assert_eq!(stats.started, 1, "one Equip Change for the tick: {stats:?}");
    assert_eq!(stats.coalesced, 1_999);
    // The flood goes on for 100 ticks: one more waiting instance a tick up to the cap.
    for _ in 0..100 {
        for _ in 0..50 {
            h.act(p, swap(rid, 14, 0, 0));
            h.act(p, swap(rid, 0, 14, 0));
        }
        h.tick();
    }
    let s = &h.sim.state().scripts;
    assert_eq!(s.len(), 16, "live instances capped at scripts_per_actor");
    assert_eq!(s.stats.started, 16);
    assert_eq!(s.stats.refused_actor, 85);
    assert_eq!(s.stats.refused_zone, 0);
    let logs: Vec<String> = h
        .outputs
        .iter()
        .filter_map(|o| match o {
            ZoneOutput::ScriptLog { message, .. } if message.contains("refused") => {
                Some(message.clone())
            }
            _ => None,
        })
        .collect();
    // 85 refusals over 3.3 s of zone time: the first at once, then one line a second.
    assert!((3..=5).contains(&logs.len()), "{logs:?}");
    assert!(logs[0].contains("scripts_per_actor") || logs[0].contains("16 scripts"));
    // The items are where the last swap left them, whatever was refused.
    assert_eq!(slot(&h, pid, 14), Some((SWORD, 1)));
}

/// A zone's scripts are capped in total too: starts past `scripts_per_zone` are refused.
#[test]
fn the_zone_caps_its_scripts_in_total() {
    let equip: &[u8] = b"Function Main()\n  DoEvents(600000)\nEnd Function\n";
    let cfg = ZoneConfig {
        scripts_per_zone: 5,
        ..ZoneConfig::default()
    };
    let mut h = SimHarness::with(cfg, content(&[("Equip Change", equip)]));
    let mut players = Vec::new();
    for i in 0..8 {
        let (p, pid) = h.spawn_player(&format!("P{i}"), i as f32, 0.0);
        put(&mut h, pid, 14, SWORD, 1);
        players.push((p, h.actor(pid).rid));
    }
    h.clear();
    for (p, rid) in &players {
        h.act(*p, swap(*rid, 14, 0, 0));
    }
    h.tick();
    let s = &h.sim.state().scripts;
    assert_eq!(s.len(), 5);
    assert_eq!(s.stats.refused_zone, 3);
}

/// An action a script elsewhere takes on a player of this zone (`GiveItem` of a remote
/// handle, delivered by the gateway with its `ActionId`) is taken once: delivered again
/// (after a handoff, a node loss) it is recognised and answered without a second item, an
/// older one of the same run too; a player frozen in a handoff does not take it (the
/// gateway delivers it again where the player lands); the ids travel with the character.
#[test]
fn an_action_from_a_script_elsewhere_is_taken_exactly_once() {
    use shared::internal::{ActionId, ScriptStoreOp, TransferId, ValueDto};
    use zone_node::sim::events::ZoneInput;
    let mut h = harness(&[]);
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    let handle = h.sim.state().handle_of(pid);
    let run = TransferId {
        block: 5,
        minter: 2,
        serial: 7,
    };
    let give = |seq, amount| ZoneInput::ActorQuery {
        qid: u64::from(seq),
        player: p,
        native: "GiveItem".into(),
        args: vec![
            ValueDto::Int(handle),
            ValueDto::Str(b"Potion".to_vec()),
            ValueDto::Int(amount),
        ],
        action: Some(ActionId { run, seq }),
    };
    let potions = |h: &SimHarness| -> u32 {
        h.actor(pid)
            .inventory
            .iter()
            .flatten()
            .filter(|s| s.item == POTION)
            .map(|s| u32::from(s.amount))
            .sum()
    };
    let answers = |h: &SimHarness| -> Vec<Option<ValueDto>> {
        h.outputs
            .iter()
            .filter_map(|o| match o {
                ZoneOutput::ScriptStore {
                    op: ScriptStoreOp::ActorAnswer { value, .. },
                    ..
                } => Some(value.clone()),
                _ => None,
            })
            .collect()
    };
    h.clear();
    h.push(give(1, 2));
    h.push(give(1, 2));
    h.tick();
    assert_eq!(potions(&h), 2, "taken once");
    assert_eq!(answers(&h).len(), 2, "both deliveries answered");
    assert!(answers(&h).iter().all(Option::is_some));
    h.clear();
    h.push(give(2, 3));
    h.push(give(1, 2));
    h.tick();
    assert_eq!(
        potions(&h),
        5,
        "the next action of the run is taken, the older one not"
    );
    assert_eq!(h.sim.state().scripts.stats.remote_actions, 2);
    assert_eq!(h.sim.state().scripts.stats.duplicate_actions, 2);
    // Frozen in a handoff: not taken here, answered "not here".
    h.actor_mut(pid).transfer = Some(TransferId::default());
    h.clear();
    h.push(give(3, 1));
    h.tick();
    assert_eq!(answers(&h), [None]);
    assert_eq!(potions(&h), 5);
    h.actor_mut(pid).transfer = None;
    // The character carries what it took.
    let state = h.sim.state().actor_state(pid).unwrap();
    assert_eq!(state.applied_actions, [ActionId { run, seq: 2 }]);
    // A query never changes anything, an action must be one of the actions.
    h.clear();
    h.push(ZoneInput::ActorQuery {
        qid: 9,
        player: p,
        native: "Name".into(),
        args: vec![ValueDto::Int(handle)],
        action: Some(ActionId { run, seq: 4 }),
    });
    h.tick();
    assert_eq!(answers(&h), [None]);
}
