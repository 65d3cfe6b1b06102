//! Trade and shops through `ZoneSim`: the `/trade` handshake, offers, the atomic
//! settlement (items both ways and gold, totals conserved), cancellation by the client and
//! by leaving (logout, warp, death), refused settlements and hostile input (each refused,
//! counted, nothing moved); NPC shops (buying and selling conserve items and gold between
//! player and vendor, stock decreases, foreign and stale handles refused); the sample
//! project's `tradetest.rsl` and the demo world's merchant.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;

use shared::content::{Item, ItemKind, WeaponType};
use shared::proto::{
    CloseTrading, GoldChange, InventoryUpdateC2S, InventoryUpdateS2C, OpenTradingC2S,
    OpenTradingS2C, Packet, ShopBuy, ShopSell, TradeExpect, TradeWindow, UpdateTradingS2C,
};
use zone_node::sim::ZoneConfig;
use zone_node::sim::events::{
    Arrival, InvSlot, PlayerAction, PlayerKey, Rejection, ZoneInput, ZoneOutput,
};
use zone_node::sim::items::inventory;
use zone_node::sim::kill::kill_actor;
use zone_node::sim::state::ActorId;
use zone_node::sim::testing::{
    SimHarness, content_with_scripts, templates, test_content, test_world,
};

const SWORD: u16 = 0;
const POTION: u16 = 1;
const GEM: u16 = 2;

fn items() -> Vec<Item> {
    vec![
        Item {
            id: SWORD,
            name: "Sword".into(),
            value: 20,
            kind: ItemKind::Weapon {
                damage: 5,
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
            value: 5,
            stackable: true,
            kind: ItemKind::Potion { secs: 1 },
            ..Item::default()
        },
        Item {
            id: GEM,
            name: "Gem".into(),
            value: 50,
            kind: ItemKind::Other {
                misc: String::new(),
            },
            ..Item::default()
        },
    ]
}

fn harness_with(scripts: &[(&str, &[u8])]) -> SimHarness {
    let mut c = test_content();
    let mut w = test_world();
    w.items = items();
    c.world = Arc::new(w);
    if !scripts.is_empty() {
        c = content_with_scripts(c, scripts);
    }
    SimHarness::with(ZoneConfig::default(), c)
}

fn stack(item: u16, amount: u16) -> InvSlot {
    let t = items().into_iter().find(|i| i.id == item).unwrap();
    inventory::instance(&t, amount)
}

fn put(h: &mut SimHarness, id: ActorId, slot: usize, item: u16, amount: u16) {
    h.actor_mut(id).inventory[slot] = Some(stack(item, amount));
}

fn cmd(h: &mut SimHarness, p: PlayerKey, params: &str) {
    h.act(
        p,
        PlayerAction::Command {
            word: "TRADE".into(),
            params: params.into(),
        },
    );
}

fn offer(h: &mut SimHarness, p: PlayerKey, slot: u8, amount: u16) {
    h.act(p, PlayerAction::UpdateTrading { slot, amount });
}

fn ok(h: &mut SimHarness, p: PlayerKey, cost: i32, expect: &[(u8, u16)]) {
    h.act(
        p,
        PlayerAction::OpenTrading(OpenTradingC2S::PlayerAccept {
            cost,
            expect: expect
                .iter()
                .map(|&(slot, amount)| TradeExpect { slot, amount })
                .collect(),
            give: vec![0; 32],
        }),
    );
}

fn got<P: Packet>(h: &SimHarness, p: PlayerKey) -> Vec<P> {
    h.reliable_of(p, P::ID)
        .into_iter()
        .filter_map(|b| P::decode_payload(&b, &Default::default()).ok())
        .collect()
}

fn windows(h: &SimHarness, p: PlayerKey) -> Vec<TradeWindow> {
    got::<OpenTradingS2C>(h, p)
        .chunks(1)
        .filter_map(OpenTradingS2C::assemble)
        .filter_map(|b| TradeWindow::from_payload(&b).ok())
        .collect()
}

fn count(h: &SimHarness, id: ActorId, item: u16) -> u32 {
    inventory::count(&h.actor(id).inventory, item)
}

fn state(h: &SimHarness, id: ActorId) -> u8 {
    h.actor(id).trading.number()
}

fn refused(h: &SimHarness, r: Rejection) -> usize {
    h.rejections().iter().filter(|x| **x == r).count()
}

/// Everything two actors hold: (swords, potions, gems, gold).
fn totals(h: &SimHarness, ids: &[ActorId]) -> (u32, u32, u32, i64) {
    let mut t = (0, 0, 0, 0);
    for &id in ids {
        t.0 += count(h, id, SWORD);
        t.1 += count(h, id, POTION);
        t.2 += count(h, id, GEM);
        t.3 += i64::from(h.actor(id).gold);
    }
    t
}

struct Two {
    h: SimHarness,
    ann: (PlayerKey, ActorId),
    bob: (PlayerKey, ActorId),
}

/// Ann (10 potions in trade slot 0, 100 gold) and Bob (a gem in trade slot 1, 20 gold)
/// with their trade windows open.
fn open_trade() -> Two {
    let mut h = harness_with(&[]);
    let ann = h.spawn_player("Ann", 0.0, 0.0);
    let bob = h.spawn_player("Bob", 5.0, 0.0);
    put(&mut h, ann.1, 14, POTION, 10);
    put(&mut h, bob.1, 15, GEM, 1);
    h.actor_mut(ann.1).gold = 100;
    h.actor_mut(bob.1).gold = 20;
    h.clear();
    cmd(&mut h, ann.0, "bob");
    h.tick();
    assert_eq!(
        h.chat(bob.0),
        ["You have been invited to trade with Ann. Send /trade to accept."]
    );
    assert_eq!((state(&h, ann.1), state(&h, bob.1)), (4, 3));
    cmd(&mut h, bob.0, "");
    h.tick();
    for p in [ann.0, bob.0] {
        assert_eq!(windows(&h, p), [TradeWindow::Player]);
    }
    assert_eq!((state(&h, ann.1), state(&h, bob.1)), (4, 4));
    h.clear();
    Two { h, ann, bob }
}

#[test]
fn a_full_trade_moves_items_both_ways_and_gold_and_conserves_totals() {
    let Two { mut h, ann, bob } = open_trade();
    let before = totals(&h, &[ann.1, bob.1]);
    offer(&mut h, ann.0, 0, 4);
    offer(&mut h, bob.0, 1, 1);
    h.tick();
    let relayed = got::<UpdateTradingS2C>(&h, bob.0);
    assert_eq!(relayed.len(), 1);
    assert_eq!((relayed[0].slot, relayed[0].amount), (0, 4));
    assert_eq!(relayed[0].item.as_ref().map(|i| i.item_id), Some(POTION));
    assert_eq!(got::<UpdateTradingS2C>(&h, ann.0)[0].slot, 1);
    // Nothing moves before both confirm.
    ok(&mut h, ann.0, 30, &[(1, 1)]);
    h.tick();
    assert_eq!(state(&h, ann.1), 5);
    assert_eq!(count(&h, ann.1, POTION), 10);
    h.clear();
    ok(&mut h, bob.0, -30, &[(0, 4)]);
    h.tick();
    assert_eq!((count(&h, ann.1, POTION), count(&h, ann.1, GEM)), (6, 1));
    assert_eq!((count(&h, bob.1, POTION), count(&h, bob.1, GEM)), (4, 0));
    assert_eq!((h.actor(ann.1).gold, h.actor(bob.1).gold), (70, 50));
    assert_eq!(totals(&h, &[ann.1, bob.1]), before);
    // The packets: "T" to the giver, "G" to the receiver, gold with the right letters.
    let inv_a = got::<InventoryUpdateS2C>(&h, ann.0);
    assert!(inv_a.contains(&InventoryUpdateS2C::Taken {
        slot: 14,
        amount: 4
    }));
    assert!(inv_a.iter().any(|m| matches!(
        m,
        InventoryUpdateS2C::Offer {
            item_id: GEM,
            amount: 1,
            ..
        }
    )));
    let inv_b = got::<InventoryUpdateS2C>(&h, bob.0);
    assert!(inv_b.contains(&InventoryUpdateS2C::Taken {
        slot: 15,
        amount: 1
    }));
    assert!(inv_b.iter().any(|m| matches!(
        m,
        InventoryUpdateS2C::Offer {
            item_id: POTION,
            amount: 4,
            ..
        }
    )));
    assert_eq!(
        got::<GoldChange>(&h, ann.0),
        [GoldChange::Down { amount: 30 }]
    );
    assert_eq!(
        got::<GoldChange>(&h, bob.0),
        [GoldChange::Up { amount: 30 }]
    );
    for p in [ann.0, bob.0] {
        assert_eq!(got::<CloseTrading>(&h, p).len(), 1);
    }
    assert_eq!((state(&h, ann.1), state(&h, bob.1)), (0, 0));
    // Both sides were saved at once, in one atomic group, the moment it settled.
    let saved: Vec<Vec<PlayerKey>> = h
        .outputs
        .iter()
        .filter_map(|o| match o {
            ZoneOutput::Checkpoint(c) => Some(c.players.iter().map(|s| s.player).collect()),
            _ => None,
        })
        .collect();
    assert!(
        saved
            .iter()
            .any(|g| g.contains(&ann.0) && g.contains(&bob.0)),
        "{saved:?}"
    );
    assert!(h.sim.state().entangled.is_empty());
    assert!(h.rejections().is_empty(), "{:?}", h.rejections());
    // Each receiver's client answers its offers ("GY") with the slot it placed them in by
    // the same first-fit rule: the server's slot, so nothing is refused or corrected.
    for (p, id, inv) in [(ann.0, ann.1, &inv_a), (bob.0, bob.1, &inv_b)] {
        for m in inv {
            if let InventoryUpdateS2C::Offer {
                item_handle,
                item_id,
                ..
            } = *m
            {
                let slot = (14..46)
                    .find(|&s| h.actor(id).inventory[s].as_ref().map(|i| i.item) == Some(item_id))
                    .unwrap();
                h.act(
                    p,
                    PlayerAction::Inventory(InventoryUpdateC2S::OfferAccepted {
                        item_handle,
                        slot: u8::try_from(slot).unwrap(),
                    }),
                );
            }
        }
    }
    h.clear();
    h.tick();
    assert!(h.rejections().is_empty(), "{:?}", h.rejections());
    assert!(got::<InventoryUpdateS2C>(&h, ann.0).is_empty());
    assert!(got::<InventoryUpdateS2C>(&h, bob.0).is_empty());
}

/// Realm Crafter sent the negative cost with the letters swapped, so both clients moved
/// gold the wrong way; here the receiver gets "U", the payer "D", both positive.
#[test]
fn a_negative_cost_pays_the_other_way_with_positive_amounts() {
    let Two { mut h, ann, bob } = open_trade();
    ok(&mut h, ann.0, -15, &[]);
    ok(&mut h, bob.0, 15, &[]);
    h.tick();
    assert_eq!((h.actor(ann.1).gold, h.actor(bob.1).gold), (115, 5));
    assert_eq!(
        got::<GoldChange>(&h, ann.0),
        [GoldChange::Up { amount: 15 }]
    );
    assert_eq!(
        got::<GoldChange>(&h, bob.0),
        [GoldChange::Down { amount: 15 }]
    );
}

#[test]
fn a_cancel_closes_both_windows() {
    let Two { mut h, ann, bob } = open_trade();
    offer(&mut h, ann.0, 0, 4);
    ok(&mut h, ann.0, 0, &[]);
    h.tick();
    h.clear();
    h.act(bob.0, PlayerAction::OpenTrading(OpenTradingC2S::Cancel));
    h.tick();
    for p in [ann, bob] {
        assert_eq!(got::<CloseTrading>(&h, p.0).len(), 1);
        assert_eq!(state(&h, p.1), 0);
    }
    assert_eq!(h.chat(ann.0), ["Bob cancelled the trade"]);
    assert_eq!(count(&h, ann.1, POTION), 10);
    // A late OK from Ann is refused and moves nothing.
    ok(&mut h, ann.0, 0, &[]);
    h.tick();
    assert_eq!(refused(&h, Rejection::TradeRefused), 1);
    assert_eq!(count(&h, ann.1, POTION), 10);
}

fn assert_cancelled_for(h: &SimHarness, who: (PlayerKey, ActorId)) {
    assert_eq!(got::<CloseTrading>(h, who.0).len(), 1);
    assert_eq!(state(h, who.1), 0);
    assert_eq!(count(h, who.1, POTION), 10);
    assert_eq!(h.actor(who.1).gold, 100);
}

#[test]
fn the_partner_disconnecting_mid_trade_cancels_it() {
    let Two { mut h, ann, bob } = open_trade();
    offer(&mut h, ann.0, 0, 4);
    ok(&mut h, ann.0, 10, &[]);
    h.tick();
    h.push(ZoneInput::PlayerLeft { player: bob.0 });
    h.tick();
    assert_cancelled_for(&h, ann);
}

#[test]
fn the_partner_warping_out_mid_trade_cancels_it() {
    let Two { mut h, ann, bob } = open_trade();
    offer(&mut h, ann.0, 0, 4);
    h.tick();
    zone_node::sim::setarea::set_area(
        h.sim.state_mut(),
        bob.1,
        "Elsewhere",
        0,
        &Arrival::Portal(0),
    );
    h.tick();
    assert_cancelled_for(&h, ann);
}

#[test]
fn the_partner_dying_mid_trade_cancels_it() {
    let Two { mut h, ann, bob } = open_trade();
    offer(&mut h, ann.0, 0, 4);
    ok(&mut h, ann.0, 0, &[]);
    h.tick();
    kill_actor(h.sim.state_mut(), bob.1, None);
    h.tick();
    assert_cancelled_for(&h, ann);
    assert_eq!(state(&h, bob.1), 0);
}

#[test]
fn no_room_moves_nothing_and_tells_both() {
    let Two { mut h, ann, bob } = open_trade();
    for s in 16..46 {
        put(&mut h, bob.1, s, GEM, 1);
    }
    put(&mut h, bob.1, 14, SWORD, 1);
    let before = (
        h.actor(ann.1).inventory.clone(),
        h.actor(bob.1).inventory.clone(),
    );
    // Bob's backpack is full (potions do not equip) and he gives nothing back. (Had he
    // offered his gem, its slot would have taken the potions: the settlement counts what
    // each side gives away.)
    offer(&mut h, ann.0, 0, 4);
    ok(&mut h, ann.0, 0, &[]);
    h.tick();
    ok(&mut h, bob.0, 0, &[(0, 4)]);
    h.clear();
    h.tick();
    assert_eq!(h.actor(ann.1).inventory, before.0);
    assert_eq!(h.actor(bob.1).inventory, before.1);
    for p in [ann, bob] {
        assert_eq!(got::<CloseTrading>(&h, p.0).len(), 1);
        assert!(got::<InventoryUpdateS2C>(&h, p.0).is_empty());
        let chat = h.chat(p.0);
        assert_eq!(chat.len(), 1);
        assert!(chat[0].contains("not enough room"), "{chat:?}");
    }
    assert_eq!(refused(&h, Rejection::TradeRefused), 1);
}

#[test]
fn self_trade_is_refused() {
    let mut h = harness_with(&[]);
    let ann = h.spawn_player("Ann", 0.0, 0.0);
    h.clear();
    cmd(&mut h, ann.0, "ANN");
    h.tick();
    assert_eq!(state(&h, ann.1), 0);
    assert_eq!(refused(&h, Rejection::TradeRefused), 1);
    assert_eq!(h.chat(ann.0), ["You cannot trade with yourself"]);
    cmd(&mut h, ann.0, "Nobody");
    h.tick();
    assert_eq!(refused(&h, Rejection::UnknownTarget), 1);
    // A script cannot make one either.
    assert!(!zone_node::sim::items::trade::invite_both(
        h.sim.state_mut(),
        ann.1,
        ann.1
    ));
}

#[test]
fn offers_out_of_turn_or_out_of_range_are_refused() {
    let mut h = harness_with(&[]);
    let ann = h.spawn_player("Ann", 0.0, 0.0);
    let bob = h.spawn_player("Bob", 5.0, 0.0);
    put(&mut h, ann.1, 14, POTION, 10);
    h.clear();
    // No trade.
    offer(&mut h, ann.0, 0, 1);
    h.tick();
    // Invited but the window is not open on Bob's side yet.
    cmd(&mut h, ann.0, "Bob");
    h.tick();
    offer(&mut h, ann.0, 0, 1);
    h.tick();
    assert_eq!(refused(&h, Rejection::TradeRefused), 2);
    cmd(&mut h, bob.0, "");
    h.tick();
    h.clear();
    offer(&mut h, ann.0, 32, 1);
    offer(&mut h, ann.0, 255, 1);
    offer(&mut h, ann.0, 5, 1); // an empty slot
    h.tick();
    assert_eq!(refused(&h, Rejection::BadItemRequest), 3);
    assert!(got::<UpdateTradingS2C>(&h, bob.0).is_empty());
    // An amount above the stack is clamped to it.
    offer(&mut h, ann.0, 0, 999);
    h.tick();
    let r = got::<UpdateTradingS2C>(&h, bob.0);
    assert_eq!(r.last().map(|u| u.amount), Some(10));
    // Confirmed: no more offers.
    ok(&mut h, ann.0, 0, &[]);
    h.tick();
    h.clear();
    offer(&mut h, ann.0, 0, 3);
    h.tick();
    assert_eq!(refused(&h, Rejection::TradeRefused), 1);
    assert!(got::<UpdateTradingS2C>(&h, bob.0).is_empty());
}

#[test]
fn a_replayed_or_double_clicked_accept_is_refused_and_settles_once() {
    let Two { mut h, ann, bob } = open_trade();
    offer(&mut h, ann.0, 0, 4);
    h.tick();
    // Two OKs in one tick: the second is refused.
    ok(&mut h, ann.0, 0, &[]);
    ok(&mut h, ann.0, 0, &[]);
    h.tick();
    assert_eq!(refused(&h, Rejection::TradeRefused), 1);
    assert_eq!(state(&h, ann.1), 5);
    // Bob's OK settles; a replay of either afterwards changes nothing.
    ok(&mut h, bob.0, 0, &[(0, 4)]);
    ok(&mut h, bob.0, 0, &[(0, 4)]);
    ok(&mut h, ann.0, 0, &[]);
    h.tick();
    assert_eq!(refused(&h, Rejection::TradeRefused), 3);
    assert_eq!((count(&h, ann.1, POTION), count(&h, bob.1, POTION)), (6, 4));
    h.clear();
    ok(&mut h, ann.0, 0, &[]);
    ok(&mut h, bob.0, 0, &[(0, 4)]);
    h.tick();
    assert_eq!(refused(&h, Rejection::TradeRefused), 2);
    assert_eq!((count(&h, ann.1, POTION), count(&h, bob.1, POTION)), (6, 4));
    assert!(got::<InventoryUpdateS2C>(&h, bob.0).is_empty());
}

/// Settle with these confirmations after Ann offered 4 potions; returns the harness with
/// nothing moved asserted.
fn refused_settlement(ann_cost: i32, bob_cost: i32, bob_expects: &[(u8, u16)]) -> Two {
    let Two { mut h, ann, bob } = open_trade();
    offer(&mut h, ann.0, 0, 4);
    ok(&mut h, ann.0, ann_cost, &[]);
    h.tick();
    let before = totals(&h, &[ann.1, bob.1]);
    let gold = (h.actor(ann.1).gold, h.actor(bob.1).gold);
    h.clear();
    ok(&mut h, bob.0, bob_cost, bob_expects);
    h.tick();
    assert_eq!(totals(&h, &[ann.1, bob.1]), before);
    assert_eq!((h.actor(ann.1).gold, h.actor(bob.1).gold), gold);
    assert_eq!(
        (count(&h, ann.1, POTION), count(&h, bob.1, POTION)),
        (10, 0)
    );
    assert_eq!(refused(&h, Rejection::TradeRefused), 1);
    for p in [ann, bob] {
        assert_eq!(got::<CloseTrading>(&h, p.0).len(), 1);
        assert!(got::<GoldChange>(&h, p.0).is_empty());
        assert_eq!(state(&h, p.1), 0);
    }
    Two { h, ann, bob }
}

#[test]
fn mismatched_costs_are_refused() {
    let Two { h, ann, .. } = refused_settlement(10, 0, &[(0, 4)]);
    assert!(h.chat(ann.0)[0].contains("gold do not match"));
}

#[test]
fn paying_gold_one_does_not_have_is_refused() {
    // Bob has 20 and would pay 500.
    let Two { h, bob, .. } = refused_settlement(-500, 500, &[(0, 4)]);
    assert!(h.chat(bob.0)[0].contains("not enough gold"));
}

#[test]
fn a_confirmation_expecting_other_items_is_refused() {
    let Two { h, bob, .. } = refused_settlement(0, 0, &[(0, 9)]);
    assert!(h.chat(bob.0)[0].contains("offers changed"));
}

#[test]
fn an_item_moved_away_before_settlement_is_refused() {
    let Two { mut h, ann, bob } = open_trade();
    offer(&mut h, ann.0, 0, 4);
    ok(&mut h, ann.0, 0, &[]);
    h.tick();
    // The stack goes elsewhere (a swap, a drop, equipping) after the offer.
    let s = h.actor_mut(ann.1).inventory[14].take();
    h.actor_mut(ann.1).inventory[20] = s;
    h.clear();
    ok(&mut h, bob.0, 0, &[(0, 4)]);
    h.tick();
    assert_eq!(
        (count(&h, ann.1, POTION), count(&h, bob.1, POTION)),
        (10, 0)
    );
    assert_eq!(refused(&h, Rejection::TradeRefused), 1);
    assert!(h.chat(bob.0)[0].contains("no longer there"));
    assert!(got::<InventoryUpdateS2C>(&h, bob.0).is_empty());
}

/// A changed offer after the partner's OK withdraws that OK (bait and switch) and is
/// relayed as a withdrawal and a new offer.
#[test]
fn changing_an_offer_withdraws_the_partners_confirmation() {
    let Two { mut h, ann, bob } = open_trade();
    offer(&mut h, ann.0, 0, 4);
    h.tick();
    ok(&mut h, bob.0, 0, &[(0, 4)]);
    h.tick();
    assert_eq!(state(&h, bob.1), 5);
    h.clear();
    offer(&mut h, ann.0, 0, 1);
    h.tick();
    assert_eq!(state(&h, bob.1), 4);
    let r = got::<UpdateTradingS2C>(&h, bob.0);
    assert_eq!(
        r.iter().map(|u| (u.slot, u.amount)).collect::<Vec<_>>(),
        [(0, 0), (0, 1)]
    );
    assert_eq!(
        h.chat(bob.0),
        ["Ann changed the offer: press OK again to accept"]
    );
    ok(&mut h, ann.0, 0, &[]);
    ok(&mut h, bob.0, 0, &[(0, 1)]);
    h.tick();
    assert_eq!((count(&h, ann.1, POTION), count(&h, bob.1, POTION)), (9, 1));
}

#[test]
fn a_script_invites_both_players() {
    let src: &[u8] = b"Function Main()\n  OpenTrading(Actor(), ContextActor())\nEnd Function\n";
    let mut h = harness_with(&[("Invite", src)]);
    let ann = h.spawn_player("Ann", 0.0, 0.0);
    let bob = h.spawn_player("Bob", 5.0, 0.0);
    h.actor_mut(bob.1).script = "Invite".into();
    let rid = h.actor(bob.1).rid;
    h.clear();
    h.act(ann.0, PlayerAction::RightClick { target: rid });
    h.run_ticks(2);
    assert_eq!((state(&h, ann.1), state(&h, bob.1)), (3, 3));
    assert_eq!(
        h.chat(ann.0),
        ["You have been invited to trade with Bob. Send /trade to accept."]
    );
    cmd(&mut h, ann.0, "");
    h.tick();
    assert!(windows(&h, ann.0).is_empty());
    cmd(&mut h, bob.0, "");
    h.tick();
    assert_eq!(windows(&h, ann.0), [TradeWindow::Player]);
    assert_eq!(windows(&h, bob.0), [TradeWindow::Player]);
    assert!(h.script_errors().is_empty(), "{:?}", h.script_errors());
}

// ----- shops --------------------------------------------------------------------------

struct Shop {
    h: SimHarness,
    p: (PlayerKey, ActorId),
    vendor: ActorId,
}

const SHOP_SCRIPT: &[u8] =
    b"Function Main()\n  OpenTrading(Actor(), ContextActor())\nEnd Function\n";

/// A vendor with 20 potions (slot 14) and a sword (slot 16), 100 gold; a player with 50
/// gold and 3 gems (slot 20).
fn shop() -> Shop {
    let mut h = harness_with(&[("Shop", SHOP_SCRIPT)]);
    let p = h.spawn_player("Ann", 0.0, 0.0);
    let vendor = h.spawn_npc(templates::HUMAN, 3.0, 0.0);
    put(&mut h, vendor, 14, POTION, 20);
    put(&mut h, vendor, 16, SWORD, 1);
    h.actor_mut(vendor).gold = 100;
    h.actor_mut(vendor).script = "Shop".into();
    h.actor_mut(p.1).gold = 50;
    put(&mut h, p.1, 20, GEM, 1);
    put(&mut h, p.1, 21, GEM, 1);
    put(&mut h, p.1, 22, GEM, 1);
    Shop { h, p, vendor }
}

/// Right-click the vendor; returns the wares `(handle, item id, amount)`.
fn open_shop(
    h: &mut SimHarness,
    vendor: ActorId,
    who: (PlayerKey, ActorId),
) -> Vec<(u32, u16, u16)> {
    let rid = h.actor(vendor).rid;
    h.clear();
    h.act(who.0, PlayerAction::RightClick { target: rid });
    h.run_ticks(2);
    assert_eq!(state(h, who.1), 1);
    match windows(h, who.0).as_slice() {
        [TradeWindow::Shop { wares }] => wares
            .iter()
            .map(|w| (w.item_handle, w.item.item_id, w.amount))
            .collect(),
        other => panic!("no shop window: {other:?}"),
    }
}

fn shop_ok(h: &mut SimHarness, p: PlayerKey, buy: &[(u32, u16)], sell: &[(u8, u16)]) {
    h.act(
        p,
        PlayerAction::OpenTrading(OpenTradingC2S::ShopAccept {
            buy: buy
                .iter()
                .map(|&(item_handle, amount)| ShopBuy {
                    item_handle,
                    amount,
                })
                .collect(),
            sell: sell
                .iter()
                .map(|&(slot, amount)| ShopSell { slot, amount })
                .collect(),
        }),
    );
}

#[test]
fn buying_and_selling_conserve_items_and_gold_and_the_stock_decreases() {
    let mut s = shop();
    let wares = open_shop(&mut s.h, s.vendor, s.p);
    assert_eq!(wares.len(), 2);
    assert_eq!((wares[0].1, wares[0].2), (POTION, 20));
    assert_eq!((wares[1].1, wares[1].2), (SWORD, 1));
    assert!(wares[0].0 != 0 && wares[0].0 != wares[1].0);
    let ids = [s.p.1, s.vendor];
    let before = totals(&s.h, &ids);
    // Buy 3 potions (15), sell one gem (50).
    shop_ok(&mut s.h, s.p.0, &[(wares[0].0, 3)], &[(20, 1)]);
    s.h.tick();
    let h = &s.h;
    assert_eq!(totals(h, &ids), before);
    assert_eq!(
        (count(h, s.p.1, POTION), count(h, s.vendor, POTION)),
        (3, 17)
    );
    assert_eq!((count(h, s.p.1, GEM), count(h, s.vendor, GEM)), (2, 1));
    assert_eq!((h.actor(s.p.1).gold, h.actor(s.vendor).gold), (85, 65));
    assert_eq!(got::<GoldChange>(h, s.p.0), [GoldChange::Up { amount: 35 }]);
    let inv = got::<InventoryUpdateS2C>(h, s.p.0);
    assert!(inv.contains(&InventoryUpdateS2C::Taken {
        slot: 20,
        amount: 1
    }));
    assert!(inv.iter().any(|m| matches!(
        m,
        InventoryUpdateS2C::Offer {
            item_id: POTION,
            amount: 3,
            ..
        }
    )));
    assert_eq!(state(h, s.p.1), 0);
    // The gem sold is now in the vendor's stock (backpack) and for sale.
    assert!(
        h.actor(s.vendor).inventory[..14]
            .iter()
            .all(Option::is_none)
    );
    let wares = open_shop(&mut s.h, s.vendor, s.p);
    assert_eq!(wares.len(), 3);
    // Asking for more than the stock buys the stock.
    let potions = wares.iter().find(|w| w.1 == POTION).unwrap().0;
    s.h.actor_mut(s.p.1).gold = 1000;
    shop_ok(&mut s.h, s.p.0, &[(potions, 500)], &[]);
    s.h.tick();
    assert_eq!(count(&s.h, s.p.1, POTION), 20);
    assert_eq!(count(&s.h, s.vendor, POTION), 0);
    assert!(s.h.rejections().is_empty(), "{:?}", s.h.rejections());
}

#[test]
fn a_purchase_one_cannot_afford_or_has_no_room_for_moves_nothing() {
    let mut s = shop();
    s.h.actor_mut(s.p.1).gold = 10;
    let wares = open_shop(&mut s.h, s.vendor, s.p);
    let before = totals(&s.h, &[s.p.1, s.vendor]);
    let inv = s.h.actor(s.p.1).inventory.clone();
    shop_ok(&mut s.h, s.p.0, &[(wares[1].0, 1)], &[]); // the sword, 20
    s.h.tick();
    assert_eq!(s.h.actor(s.p.1).inventory, inv);
    assert_eq!(totals(&s.h, &[s.p.1, s.vendor]), before);
    assert_eq!(s.h.actor(s.p.1).gold, 10);
    assert_eq!(refused(&s.h, Rejection::TradeRefused), 1);
    assert_eq!(s.h.chat(s.p.0), ["You cannot afford 1 Sword"]);
    // No room: a full inventory (the weapon slot taken too).
    for slot in (0..46).filter(|s| *s == 0 || *s >= 14) {
        put(&mut s.h, s.p.1, slot, SWORD, 1);
    }
    s.h.actor_mut(s.p.1).gold = 100;
    let wares = open_shop(&mut s.h, s.vendor, s.p);
    shop_ok(&mut s.h, s.p.0, &[(wares[0].0, 2)], &[]);
    s.h.tick();
    assert_eq!(s.h.actor(s.p.1).gold, 100, "nothing paid");
    assert_eq!(count(&s.h, s.vendor, POTION), 20);
    assert_eq!(s.h.chat(s.p.0), ["You have no room for 2 Potion"]);
}

#[test]
fn foreign_and_stale_handles_are_refused() {
    let mut s = shop();
    let bob = s.h.spawn_player("Bob", 2.0, 0.0);
    s.h.actor_mut(bob.1).gold = 100;
    let ann_wares = open_shop(&mut s.h, s.vendor, s.p);
    let _ = open_shop(&mut s.h, s.vendor, bob);
    // Bob names Ann's handle.
    shop_ok(&mut s.h, bob.0, &[(ann_wares[0].0, 1), (12345, 1)], &[]);
    s.h.tick();
    assert_eq!(refused(&s.h, Rejection::TradeRefused), 2);
    assert_eq!(count(&s.h, bob.1, POTION), 0);
    assert_eq!(s.h.actor(bob.1).gold, 100);
    // Ann's window closed (she cancels): her handles are gone.
    s.h.act(s.p.0, PlayerAction::OpenTrading(OpenTradingC2S::Cancel));
    s.h.tick();
    s.h.clear();
    shop_ok(&mut s.h, s.p.0, &[(ann_wares[0].0, 1)], &[]);
    s.h.tick();
    assert_eq!(refused(&s.h, Rejection::TradeRefused), 1);
    assert_eq!(count(&s.h, s.p.1, POTION), 0);
    // A ware sold out meanwhile: the handle is stale.
    let ann_wares = open_shop(&mut s.h, s.vendor, s.p);
    s.h.actor_mut(s.vendor).inventory[16] = None;
    shop_ok(&mut s.h, s.p.0, &[(ann_wares[1].0, 1)], &[]);
    s.h.tick();
    assert_eq!(s.h.chat(s.p.0), ["The Sword is no longer for sale"]);
    assert_eq!(s.h.actor(s.p.1).gold, 50);
    // A shop OK with no shop open.
    shop_ok(&mut s.h, s.p.0, &[], &[(20, 1)]);
    s.h.tick();
    assert_eq!(count(&s.h, s.p.1, GEM), 3);
}

#[test]
fn sales_are_backpack_only_and_need_the_vendors_money_and_room() {
    let mut s = shop();
    put(&mut s.h, s.p.1, 0, SWORD, 1);
    s.h.actor_mut(s.vendor).gold = 60;
    let _ = open_shop(&mut s.h, s.vendor, s.p);
    // The weapon slot (1..13 were sellable in Realm Crafter), two gems at 50 from a purse
    // of 60: the second is refused.
    shop_ok(&mut s.h, s.p.0, &[], &[(1, 1), (20, 1), (21, 1), (60, 1)]);
    s.h.tick();
    assert_eq!(refused(&s.h, Rejection::BadItemRequest), 2);
    assert_eq!(refused(&s.h, Rejection::TradeRefused), 1);
    assert_eq!(count(&s.h, s.p.1, GEM), 2);
    assert_eq!(count(&s.h, s.vendor, GEM), 1);
    assert_eq!((s.h.actor(s.p.1).gold, s.h.actor(s.vendor).gold), (100, 10));
    assert!(s.h.actor(s.p.1).inventory[0].is_some());
}

#[test]
fn p_trade_opens_a_shop_within_reach_only() {
    let mut h = harness_with(&[]);
    let p = h.spawn_player("Ann", 0.0, 0.0);
    let near = h.spawn_npc(templates::HUMAN, 10.0, 10.0);
    let far = h.spawn_npc(templates::HUMAN, 20.0, 0.0);
    for v in [near, far] {
        put(&mut h, v, 14, POTION, 5);
    }
    let (near_rid, far_rid) = (h.actor(near).rid, h.actor(far).rid);
    h.clear();
    h.act(p.0, PlayerAction::TradeWith { target: far_rid });
    h.act(p.0, PlayerAction::TradeWith { target: 9999 });
    h.tick();
    assert_eq!(state(&h, p.1), 0);
    assert_eq!(h.rejections().len(), 2);
    h.act(p.0, PlayerAction::TradeWith { target: near_rid });
    h.tick();
    assert_eq!(state(&h, p.1), 1);
    assert_eq!(windows(&h, p.0).len(), 1);
    // Already in a shop: a second one does not open.
    h.clear();
    h.act(p.0, PlayerAction::TradeWith { target: near_rid });
    h.tick();
    assert!(windows(&h, p.0).is_empty());
}

// ----- sample and demo ------------------------------------------------------------------

fn sample(name: &str) -> Option<Vec<u8>> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/rc-sample-data/Scripts")
        .join(name);
    match std::fs::read(&p) {
        Ok(b) => Some(b),
        Err(_) => {
            eprintln!("skipped: {} is not there", p.display());
            None
        }
    }
}

/// The sample project's `tradetest.rsl` (`OpenTrading(Actor(), ContextActor())` on a
/// right-click) opens the clicked NPC's shop.
#[test]
fn the_sample_tradetest_script_opens_a_shop() {
    let (Some(tt), Some(core)) = (sample("tradetest.rsl"), sample("RC_Core.rsl")) else {
        return;
    };
    let mut h = harness_with(&[("tradetest", &tt), ("RC_Core", &core)]);
    let p = h.spawn_player("Ann", 0.0, 0.0);
    let npc = h.spawn_npc(templates::HUMAN, 3.0, 0.0);
    put(&mut h, npc, 14, POTION, 7);
    h.actor_mut(npc).script = "tradetest".into();
    let rid = h.actor(npc).rid;
    h.clear();
    h.act(p.0, PlayerAction::RightClick { target: rid });
    h.run_ticks(2);
    assert!(h.script_errors().is_empty(), "{:?}", h.script_errors());
    assert_eq!(state(&h, p.1), 1);
    match windows(&h, p.0).as_slice() {
        [TradeWindow::Shop { wares }] => {
            assert_eq!(wares.len(), 1);
            assert_eq!((wares[0].item.item_id, wares[0].amount), (POTION, 7));
        }
        other => panic!("{other:?}"),
    }
}

/// The demo world's Meadow merchant: its spawn script stocks it (with `GiveItem`, once the
/// item natives are there; until then the stock is placed here) and its right-click
/// script opens its shop, which sells its wares for its purse.
#[test]
fn the_demo_merchant_sells_its_wares() {
    let world = Arc::new(shared::content::demo_world());
    let scripts: Vec<(String, Vec<u8>)> = shared::content::demo_scripts()
        .into_iter()
        .map(|s| (s.name, s.bytes))
        .collect();
    let files: Vec<(&str, &[u8])> = scripts
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    let content = zone_node::sim::ZoneContent::from_world(world.clone(), "Meadow").unwrap();
    let mut h = SimHarness::with(ZoneConfig::default(), content_with_scripts(content, &files));
    // The spawn point's frequency is 5 s.
    let find = |h: &SimHarness| {
        let st = h.sim.state();
        st.chain_members(st.zone, zone_node::sim::state::ChainKind::Zone)
            .into_iter()
            .filter_map(|i| st.at(i))
            .find(|a| a.template == 8)
            .map(|a| a.id)
    };
    let mut merchant = None;
    for _ in 0..400 {
        h.tick();
        merchant = find(&h);
        if merchant.is_some() {
            break;
        }
    }
    let merchant = merchant.expect("the merchant spawned");
    h.run_ticks(2);
    assert_eq!(h.actor(merchant).script, "Merchant");
    let potion = world
        .items
        .iter()
        .find(|i| i.name == "Healing Potion")
        .unwrap();
    let potions = || inventory::instance(potion, 20);
    let stocked = h
        .actor(merchant)
        .inventory
        .iter()
        .flatten()
        .any(|s| s.item == potion.id);
    if !stocked {
        // The item natives are not in this build: the spawn script stopped at GiveItem.
        assert!(
            h.script_errors()
                .iter()
                .any(|e| e.0.contains("not supported yet")),
            "{:?}",
            h.script_errors()
        );
        h.actor_mut(merchant).inventory[14] = Some(potions());
        h.actor_mut(merchant).gold = 500;
    }
    let (x, z) = (h.actor(merchant).x, h.actor(merchant).z);
    let mut state = h.player_state("Ann", x + 1.0, z);
    state.gold = 100;
    let p = h.join(state, false);
    let wares = open_shop(&mut h, merchant, p);
    let (handle, _, stock) = *wares.iter().find(|w| w.1 == potion.id).unwrap();
    let vendor_gold = h.actor(merchant).gold;
    // The demo's Login script may have given a starter kit with potions.
    let had = inventory::count(&h.actor(p.1).inventory, potion.id);
    shop_ok(&mut h, p.0, &[(handle, 3)], &[]);
    h.tick();
    assert_eq!(
        inventory::count(&h.actor(p.1).inventory, potion.id),
        had + 3
    );
    let left = inventory::count(&h.actor(merchant).inventory, potion.id);
    assert_eq!(left, u32::from(stock) - 3);
    let price = 3 * potion.value;
    assert_eq!(h.actor(p.1).gold, 100 - price);
    assert_eq!(h.actor(merchant).gold, vendor_gold + price);
}
