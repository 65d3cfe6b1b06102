//! Hostile item, trade and shop input over the wire (issue 19): a logged-in player of the
//! demo world (with its starter kit from `Login.rsl`) sends every malformed or out-of-turn
//! item request a modified client could, on one cluster and in one sequence. Each refused
//! request is counted on the zone node's `/metrics` (`bad_item_request`, `trade_refused`)
//! and changes nothing: after it all the player's inventory and gold, in the SDK's view and
//! as saved, are what its legitimate actions made them, two players racing for one dropped
//! item end with exactly one copy of it, an undecodable frame is dropped and counted by the
//! zone, and the connection stays up with nothing crashed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::time::Duration;

use client::{CloseCode, Connection, Event, GameStart, NewCharacter};
use cluster_tests::multiprocess::http_get;
use cluster_tests::{Cluster, WAIT, connect};
use gateway::hub::Metrics;
use shared::proto::{
    ActionBarUpdate, ClientPacket, EatItem, InventoryUpdateC2S, ItemScript, OpenTradingC2S,
    ShopBuy, ShopSell, TradeExpect, TradeWindow, UpdateTradingC2S, ids,
};
use tokio::time::Instant;

/// The demo world's starter kit (`Login.rsl`) and the Meadow merchant's template.
const SWORD: u16 = 0;
const TUNIC: u16 = 10;
const POTION: u16 = 20;
const MERCHANT: u16 = 8;
/// A handle no one was given.
const BOGUS: u32 = 0xDEAD_BEEF;

/// `(item, amount)` per slot.
type Bag = Vec<Option<(u16, u16)>>;

fn bag(c: &Connection) -> Bag {
    c.items()
        .slots()
        .iter()
        .map(|s| s.as_ref().map(|h| (h.item.item_id, h.amount)))
        .collect()
}

fn saved_bag(c: &Cluster, user: &str) -> (Bag, i64) {
    let s = c.saved(user);
    let mut b: Bag = s
        .inventory
        .iter()
        .map(|s| s.as_ref().map(|i| (i.item, i.amount)))
        .collect();
    b.resize(46, None);
    (b, i64::from(s.gold))
}

/// The kit as the first-fit rule places it, with `potions` in backpack slot 14.
fn kit(potions: u16) -> Bag {
    let mut b: Bag = vec![None; 46];
    b[0] = Some((SWORD, 1));
    b[3] = Some((TUNIC, 1));
    if potions > 0 {
        b[14] = Some((POTION, potions));
    }
    b
}

/// Apply events (and the SDK's view) until `f` matches one; `None` after `within`.
async fn until(
    c: &mut Connection,
    within: Duration,
    mut f: impl FnMut(&Event) -> bool,
) -> Option<Event> {
    let end = Instant::now() + within;
    loop {
        match tokio::time::timeout_at(end, c.next_event()).await {
            Ok(Ok(e)) if f(&e) => return Some(e),
            Ok(Ok(_)) => {}
            Ok(Err(e)) => panic!("connection error: {e}"),
            Err(_) => return None,
        }
    }
}

/// Apply every event for a while; returns them.
async fn drain(c: &mut Connection, within: Duration) -> Vec<Event> {
    let mut out = Vec::new();
    until(c, within, |e| {
        out.push(e.clone());
        false
    })
    .await;
    out
}

/// Stand at a point and wait for the server's own update there (re-sent every 300 ms),
/// applying every event on the way: the connection is alive and the zone still plays.
async fn stand(c: &mut Connection, rid: u16, at: (f32, f32, f32)) {
    let end = Instant::now() + WAIT;
    while Instant::now() < end {
        c.move_to(at.0, at.1, at.2, false).unwrap();
        let got = until(c, Duration::from_millis(300), |e| {
            matches!(e, Event::ActorMoved { runtime_id, x, z, .. }
                if *runtime_id == rid && (x - at.0).abs() < 0.5 && (z - at.2).abs() < 0.5)
        })
        .await;
        if got.is_some() {
            return;
        }
    }
    panic!("no update of {rid} at {at:?}");
}

async fn send(c: &mut Connection, p: impl Into<ClientPacket>) {
    c.send(&p.into()).await.unwrap();
}

/// One series of the zone node's `/metrics`.
fn counter(admin: SocketAddr, series: &str) -> u64 {
    let (status, m) = http_get(admin, "/metrics").expect("the node's /metrics answers");
    assert_eq!(status, 200, "{m}");
    m.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {series} in /metrics:\n{m}"))
}

fn rejections(admin: SocketAddr, reason: &str) -> u64 {
    counter(
        admin,
        &format!("rc_zone_rejections_total{{reason=\"{reason}\"}}"),
    )
}

/// The node's refusal counters since `base`, once they reach `want` (and a moment more,
/// so an extra refusal would show): `(bad_item_request, trade_refused)`.
async fn counted(admin: SocketAddr, base: (u64, u64), want: (u64, u64)) -> (u64, u64) {
    let read = move || {
        (
            rejections(admin, "bad_item_request") - base.0,
            rejections(admin, "trade_refused") - base.1,
        )
    };
    let end = Instant::now() + WAIT;
    loop {
        let now = tokio::task::spawn_blocking(read).await.unwrap();
        if (now.0 >= want.0 && now.1 >= want.1) || Instant::now() > end {
            tokio::time::sleep(Duration::from_millis(300)).await;
            return tokio::task::spawn_blocking(read).await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn free_port() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

/// Create an account and a character and enter the world as Realm Crafter's client does:
/// the character sheet (`P_FetchCharacter`: gold, inventory) first, so that the SDK's view
/// starts from it.
async fn new_player(addr: SocketAddr, user: &str) -> (Connection, GameStart) {
    let mut c = connect(addr).await;
    c.create_account(user, "secret", "a@b.c").await.unwrap();
    assert!(c.login(user, "secret").await.unwrap().is_empty());
    let cat = c.fetch_catalogue().await.unwrap();
    let t = cat.playable().next().expect("a playable template").id;
    c.create_character(&NewCharacter::new(user, t))
        .await
        .unwrap();
    c.login(user, "secret").await.unwrap();
    c.fetch_character(0).await.unwrap();
    let g = c.start_game(0).await.unwrap();
    (c, g)
}

fn accept(cost: i32, expect: Vec<TradeExpect>) -> OpenTradingC2S {
    OpenTradingC2S::PlayerAccept {
        cost,
        expect,
        give: vec![],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_item_requests_change_nothing_and_are_counted() {
    let admin = free_port();
    let admin_s = admin.to_string();
    let c = Cluster::start_with_env(
        "items-hostile",
        &[("n1", 64)],
        &[("ZONE_NODE_ADMIN_LISTEN", admin_s.as_str())],
    )
    .await;
    let addr = c.gw.client_addr;
    let (mut hero, hg) = new_player(addr, "hero").await;
    let (mut rival, rg) = new_player(addr, "rival").await;
    let (me, them) = (hg.runtime_id, rg.runtime_id);
    let mut merchant = hg
        .packets
        .iter()
        .find_map(|i| match Event::from(i.packet.clone()) {
            Event::ActorAppeared {
                runtime_id,
                template_id: MERCHANT,
                ..
            } => Some(runtime_id),
            _ => None,
        });

    // The starter kit: a sword (weapon slot), a tunic (chest slot), three potions; 50 gold.
    for (p, name) in [(&mut hero, "hero"), (&mut rival, "rival")] {
        let end = Instant::now() + WAIT;
        while bag(p) != kit(3) && Instant::now() < end {
            until(p, Duration::from_millis(200), |e| {
                if let Event::ActorAppeared {
                    runtime_id,
                    template_id: MERCHANT,
                    ..
                } = e
                {
                    merchant = Some(*runtime_id);
                }
                false
            })
            .await;
        }
        assert_eq!(bag(p), kit(3), "{name}'s starter kit");
        assert_eq!(p.items().gold(), 50, "{name}'s start gold");
    }
    if merchant.is_none() {
        let e = until(&mut hero, WAIT, |e| {
            matches!(
                e,
                Event::ActorAppeared {
                    template_id: MERCHANT,
                    ..
                }
            )
        })
        .await;
        if let Some(Event::ActorAppeared { runtime_id, .. }) = e {
            merchant = Some(runtime_id);
        }
    }
    let merchant = merchant.expect("the Meadow merchant is in view");
    let at = (hg.area.x, hg.area.y, hg.area.z);
    let base = counted(admin, (0, 0), (0, 0)).await;
    let (mut bad, mut refused) = (0u64, 0u64);

    // 1. Slots out of range, amounts 0 and 65535, empty slots, another player's
    //    inventory, a stack into an equipment slot, a non-food eaten, a bar slot of 200,
    //    offer answers for handles never offered. A legitimate split first, so that a
    //    merge has an identical stack to go onto (merged back at the end).
    hero.swap_items(me, me, 14, 15, 1).await.unwrap();
    let swap = |runtime_id, from, to, amount| InventoryUpdateC2S::Swap {
        runtime_id,
        from,
        to,
        amount,
    };
    let merge = |runtime_id, from, to, amount| InventoryUpdateC2S::Merge {
        runtime_id,
        from,
        to,
        amount,
    };
    let drop = |slot, amount| InventoryUpdateC2S::Drop { slot, amount };
    let hostile: Vec<ClientPacket> = vec![
        drop(46, 1).into(),
        drop(255, 1).into(),
        drop(14, 0).into(),
        drop(14, 65535).into(),
        drop(20, 1).into(),
        swap(me, 46, 16, 0).into(),
        swap(me, 14, 255, 0).into(),
        swap(me, 14, 16, 65535).into(),
        swap(me, 20, 21, 0).into(),
        swap(me, 14, 0, 0).into(),
        swap(me, 14, 3, 0).into(),
        swap(me, 14, 14, 1).into(),
        swap(them, 14, 16, 1).into(),
        merge(me, 46, 14, 1).into(),
        merge(me, 15, 255, 1).into(),
        merge(me, 15, 14, 0).into(),
        merge(me, 15, 14, 65535).into(),
        merge(me, 20, 14, 1).into(),
        merge(them, 15, 14, 1).into(),
        ItemScript {
            slot: 46,
            target: None,
        }
        .into(),
        ItemScript {
            slot: 255,
            target: None,
        }
        .into(),
        ItemScript {
            slot: 20,
            target: None,
        }
        .into(),
        ItemScript {
            slot: 0,
            target: Some(them),
        }
        .into(),
        EatItem {
            slot: 46,
            amount: 1,
        }
        .into(),
        EatItem {
            slot: 255,
            amount: 1,
        }
        .into(),
        EatItem {
            slot: 14,
            amount: 0,
        }
        .into(),
        EatItem {
            slot: 14,
            amount: 65535,
        }
        .into(),
        EatItem {
            slot: 20,
            amount: 1,
        }
        .into(),
        EatItem { slot: 0, amount: 1 }.into(),
        EatItem { slot: 3, amount: 1 }.into(),
        ActionBarUpdate::Clear { slot: 200 }.into(),
        ActionBarUpdate::Item {
            slot: 200,
            item_id: POTION,
        }
        .into(),
        InventoryUpdateC2S::OfferAccepted {
            item_handle: BOGUS,
            slot: 14,
        }
        .into(),
        InventoryUpdateC2S::OfferRefused { item_handle: BOGUS }.into(),
        InventoryUpdateC2S::Pickup {
            dropped: BOGUS,
            slot: 16,
        }
        .into(),
    ];
    bad += hostile.len() as u64;
    for p in hostile {
        hero.send(&p).await.unwrap();
    }
    // Trade and shop requests out of turn: offers, an OK and a shop's OK with nothing open.
    send(&mut hero, UpdateTradingC2S { slot: 0, amount: 1 }).await;
    send(
        &mut hero,
        UpdateTradingC2S {
            slot: 200,
            amount: 65535,
        },
    )
    .await;
    send(&mut hero, accept(-10, vec![])).await;
    send(
        &mut hero,
        OpenTradingC2S::ShopAccept {
            buy: vec![ShopBuy {
                item_handle: BOGUS,
                amount: 1,
            }],
            sell: vec![ShopSell {
                slot: 14,
                amount: 1,
            }],
        },
    )
    .await;
    refused += 4;
    // Trading with oneself.
    hero.trade_invite("hero").await.unwrap();
    refused += 1;
    assert!(
        until(&mut hero, WAIT, |e| matches!(e, Event::Chat { text, .. }
            if text.contains("cannot trade with yourself")))
        .await
        .is_some()
    );
    hero.merge_items(me, me, 15, 14, 1).await.unwrap();
    assert_eq!(counted(admin, base, (bad, refused)).await, (bad, refused));
    assert_eq!(bag(&hero), kit(3), "nothing changed");
    assert_eq!(hero.items().gold(), 50);

    // 2. The ground: a legitimate drop, then pickups of an unknown handle, with slots out
    //    of range, out of reach, and two players racing for it: exactly one gets it.
    hero.drop_item(14, 1).await.unwrap();
    let mut handle = None;
    for p in [&mut hero, &mut rival] {
        let e = until(p, WAIT, |e| {
            matches!(e, Event::GroundItemAppeared { amount: 1, item, .. } if item.item_id == POTION)
        })
        .await
        .expect("the drop is shown to the zone");
        if let Event::GroundItemAppeared { dropped, .. } = e {
            assert!(handle.is_none_or(|h| h == dropped));
            handle = Some(dropped);
        }
    }
    let h = handle.unwrap();
    for slot in [46, 255] {
        send(&mut hero, InventoryUpdateC2S::Pickup { dropped: h, slot }).await;
        bad += 1;
    }
    let far = (at.0 + 40.0, at.1, at.2);
    stand(&mut rival, them, far).await;
    send(
        &mut rival,
        InventoryUpdateC2S::Pickup {
            dropped: h,
            slot: 14,
        },
    )
    .await;
    bad += 1;
    assert_eq!(counted(admin, base, (bad, refused)).await, (bad, refused));
    assert!(
        rival.items().ground().contains_key(&h),
        "still on the ground"
    );
    let near = (at.0 + 1.0, at.1, at.2);
    stand(&mut rival, them, near).await;
    let pick = InventoryUpdateC2S::Pickup {
        dropped: h,
        slot: 14,
    }
    .into();
    let (a, b) = tokio::join!(hero.send(&pick), rival.send(&pick));
    a.unwrap();
    b.unwrap();
    bad += 1;
    let got = |es: &[Event]| {
        es.iter()
            .filter(|e| matches!(e, Event::PickedUp { dropped, .. } if *dropped == h))
            .count()
    };
    let (eh, er) = tokio::join!(
        drain(&mut hero, Duration::from_millis(1_500)),
        drain(&mut rival, Duration::from_millis(1_500))
    );
    let (wh, wr) = (got(&eh), got(&er));
    assert_eq!(wh + wr, 1, "exactly one of the two got the item");
    let hero_won = wh == 1;
    // The item already taken: the winner asks again.
    let winner = if hero_won { &mut hero } else { &mut rival };
    winner.send(&pick).await.unwrap();
    bad += 1;
    assert_eq!(counted(admin, base, (bad, refused)).await, (bad, refused));
    let (hp, rp) = if hero_won { (3, 3) } else { (2, 4) };
    assert_eq!(bag(&hero), kit(hp));
    assert_eq!(bag(&rival), kit(rp));
    assert!(hero.items().ground().is_empty() && rival.items().ground().is_empty());

    // 3. A trade of one potion for 10 gold: a double-clicked OK (two in one write), the
    //    settlement, then a replayed OK.
    hero.trade_invite("rival").await.unwrap();
    assert!(
        until(&mut rival, WAIT, |e| matches!(e, Event::Chat { text, .. }
            if text.contains("invited to trade with hero")))
        .await
        .is_some()
    );
    rival.trade_accept_invite().await.unwrap();
    for p in [&mut hero, &mut rival] {
        assert!(
            until(p, WAIT, |e| matches!(
                e,
                Event::TradeOpened(TradeWindow::Player)
            ))
            .await
            .is_some()
        );
    }
    hero.update_trading(0, 1).await.unwrap();
    assert!(
        until(&mut rival, WAIT, |e| matches!(
            e,
            Event::PartnerOffer {
                slot: 0,
                amount: 1,
                ..
            }
        ))
        .await
        .is_some()
    );
    let mut twice = Vec::new();
    for _ in 0..2 {
        ClientPacket::from(accept(-10, vec![]))
            .encode_frame(&mut twice)
            .unwrap();
    }
    hero.send_raw(&twice).await.unwrap();
    refused += 1;
    assert_eq!(counted(admin, base, (bad, refused)).await, (bad, refused));
    rival
        .accept_trade(10, vec![TradeExpect { slot: 0, amount: 1 }], vec![])
        .await
        .unwrap();
    let mut offers = Vec::new();
    for p in [&mut hero, &mut rival] {
        let closed = until(p, WAIT, |e| {
            if let Event::ItemOffered {
                item_handle,
                slot: Some(slot),
                ..
            } = e
            {
                offers.push((*item_handle, *slot));
            }
            matches!(e, Event::TradeClosed)
        })
        .await;
        assert!(closed.is_some());
        // Gold may follow the close; let the view catch up.
        drain(p, Duration::from_millis(300)).await;
    }
    // The rival's client answers the trade's offer with the slot it placed it in, as Realm
    // Crafter's does: the server's own slot, accepted (nothing counted).
    assert_eq!(offers, [(offers[0].0, 14)], "one offer, into the potions");
    rival.answer_offer(offers[0].0, Some(14)).await.unwrap();
    send(&mut hero, accept(-10, vec![])).await;
    send(
        &mut rival,
        accept(10, vec![TradeExpect { slot: 0, amount: 1 }]),
    )
    .await;
    refused += 2;
    assert_eq!(counted(admin, base, (bad, refused)).await, (bad, refused));
    let (hp, rp) = (hp - 1, rp + 1);
    assert_eq!(bag(&hero), kit(hp));
    assert_eq!(bag(&rival), kit(rp));
    assert_eq!((hero.items().gold(), rival.items().gold()), (60, 40));

    // 4. Shops: an OK naming a closed window's handle, then in an open window a stale and
    //    a foreign handle (a ground item's) and sales of an equipment slot and slot 255.
    let wares = |e: &Event| match e {
        Event::TradeOpened(TradeWindow::Shop { wares }) => {
            Some(wares.iter().map(|w| w.item_handle).collect::<Vec<_>>())
        }
        _ => None,
    };
    hero.trade_with(merchant).await.unwrap();
    let first = until(&mut hero, WAIT, |e| wares(e).is_some())
        .await
        .and_then(|e| wares(&e))
        .expect("the merchant's shop opens");
    let stale = *first.first().expect("the merchant has wares");
    hero.cancel_trade().await.unwrap();
    let buy = |item_handle| ShopBuy {
        item_handle,
        amount: 1,
    };
    hero.shop_accept(vec![buy(stale)], vec![]).await.unwrap();
    refused += 1;
    hero.trade_with(merchant).await.unwrap();
    let second = until(&mut hero, WAIT, |e| wares(e).is_some())
        .await
        .and_then(|e| wares(&e))
        .expect("the shop opens again");
    assert!(!second.contains(&stale), "a new window has new handles");
    hero.shop_accept(
        vec![buy(stale), buy(h)],
        vec![
            ShopSell { slot: 3, amount: 1 },
            ShopSell {
                slot: 255,
                amount: 1,
            },
        ],
    )
    .await
    .unwrap();
    refused += 2;
    bad += 2;
    assert_eq!(counted(admin, base, (bad, refused)).await, (bad, refused));

    // 5. An undecodable frame (a 5-byte P_OpenTrading): in the world the gateway forwards
    //    frames byte for byte, and the zone drops what does not decode, counted as bad
    //    client input; the connection stays. Then: still alive and unchanged, in the SDK's
    //    view and as saved after logging out.
    let undecodable = counter(admin, "rc_zone_bad_client_input_total");
    hero.send_frame(ids::P_OPEN_TRADING, &[1, 2, 3, 4, 5])
        .await
        .unwrap();
    let end = Instant::now() + WAIT;
    while counter(admin, "rc_zone_bad_client_input_total") == undecodable && Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        counter(admin, "rc_zone_bad_client_input_total"),
        undecodable + 1,
        "the zone dropped and counted the undecodable frame"
    );
    stand(&mut hero, me, (at.0 - 1.0, at.1, at.2)).await;
    drain(&mut hero, Duration::from_millis(300)).await;
    assert!(hero.close_reason().is_none(), "the connection is up");
    assert_eq!(bag(&hero), kit(hp));
    assert_eq!(hero.items().gold(), 60);
    hero.close(CloseCode::Normal).await;
    let end = Instant::now() + WAIT;
    while c.online("hero") && Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!c.online("hero"), "hero logged out");
    assert_eq!(saved_bag(&c, "hero"), (kit(hp), 60), "hero as saved");
    // The zone plays on: the rival moves, the node answers, nothing more was refused.
    stand(&mut rival, them, (at.0 + 2.0, at.1, at.2)).await;
    assert_eq!(counted(admin, base, (bad, refused)).await, (bad, refused));
    assert_eq!(
        Metrics::get(&c.gw.shared().metrics.protocol_violations),
        0,
        "no connection was closed for a protocol violation"
    );
    rival.close(CloseCode::Normal).await;
    let end = Instant::now() + WAIT;
    while c.online("rival") && Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(saved_bag(&c, "rival"), (kit(rp), 40), "rival as saved");
    assert_eq!(hp + rp, 6, "no potion created or lost");
}
