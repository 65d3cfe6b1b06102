//! The closed economy (issue 19): players trade, drop and pick up, buy and sell at the
//! demo world's merchant, warp to another zone node, leave a trade half done by
//! disconnecting, and are caught mid-trade by the loss of their zone node. Afterwards the
//! count of every item and the total gold, over every character (in the database) and
//! every item on the ground, is exactly what it was, apart from what the merchant (the one
//! source and sink in play) sold and bought, as its buyer saw it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::Duration;

use client::{CloseCode, Connection, Event};
use cluster_tests::{Cluster, WAIT, login_again, new_player, walk_through};
use shared::proto::{GoldChange, ServerPacket, ShopBuy, ShopSell, TradeExpect, TradeWindow};
use tokio::time::Instant;

/// The demo world's Healing Potion (stackable, in every starter kit).
const POTION: u16 = 20;
/// The demo world's merchant template.
const MERCHANT: u16 = 8;
/// The first backpack slot: the starter kit's potions.
const POTIONS_SLOT: u8 = 14;

/// Every item (by id) and the gold, summed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Totals {
    items: BTreeMap<u16, i64>,
    gold: i64,
}

impl Totals {
    fn add_item(&mut self, item: u16, n: i64) {
        *self.items.entry(item).or_default() += n;
        self.items.retain(|_, v| *v != 0);
    }
}

/// Every character's saved items and gold, and every item stored on the ground.
fn saved_totals(c: &Cluster, users: &[&str]) -> Totals {
    let mut t = Totals::default();
    for u in users {
        let s = c.saved(u);
        t.gold += i64::from(s.gold);
        for slot in s.inventory.iter().flatten() {
            t.add_item(slot.item, i64::from(slot.amount));
        }
    }
    for items in c.gw.shared().ground().values() {
        for g in items {
            t.add_item(g.item.item, i64::from(g.item.amount));
        }
    }
    t
}

/// Pump events until one satisfies `f` (bounded); every event also goes to `seen`.
async fn until(
    c: &mut Connection,
    what: &str,
    seen: &mut Vec<Event>,
    mut f: impl FnMut(&Event) -> bool,
) -> Event {
    let deadline = Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, c.next_event()).await {
            Ok(Ok(e)) => {
                seen.push(e.clone());
                if f(&e) {
                    return e;
                }
            }
            Ok(Err(e)) => panic!("waiting for {what}: {e}"),
            Err(_) => panic!("timed out waiting for {what}"),
        }
    }
}

/// Drain what has arrived for a while (keeps queues short, collects events).
async fn drain(c: &mut Connection, seen: &mut Vec<Event>, ms: u64) {
    let end = Instant::now() + Duration::from_millis(ms);
    while let Ok(Ok(e)) = tokio::time::timeout_at(end, c.next_event()).await {
        seen.push(e);
    }
}

/// Every user offline in the gateway's book (their logout snapshots are stored).
async fn all_offline(c: &Cluster, users: &[&str]) {
    let deadline = Instant::now() + WAIT;
    while users.iter().any(|u| c.online(u)) {
        assert!(Instant::now() < deadline, "players still online");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Open a player trade between `a` (inviting) and `b` (accepting): both windows open.
async fn open_trade(
    a: &mut Connection,
    b: &mut Connection,
    b_name: &str,
    seen: &mut (Vec<Event>, Vec<Event>),
) {
    a.trade_invite(b_name).await.unwrap();
    until(
        b,
        "the invitation",
        &mut seen.1,
        |e| matches!(e, Event::Chat { text, .. } if text.contains("invited to trade")),
    )
    .await;
    b.trade_accept_invite().await.unwrap();
    for (c, s) in [(&mut *a, &mut seen.0), (&mut *b, &mut seen.1)] {
        until(c, "the trade window", s, |e| {
            matches!(e, Event::TradeOpened(TradeWindow::Player))
        })
        .await;
    }
}

/// Offer one potion from the first backpack slot, and see the partner's offer.
async fn offer_potion_each(
    a: &mut Connection,
    b: &mut Connection,
    seen: &mut (Vec<Event>, Vec<Event>),
) {
    a.update_trading(0, 1).await.unwrap();
    b.update_trading(0, 1).await.unwrap();
    for (c, s) in [(&mut *a, &mut seen.0), (&mut *b, &mut seen.1)] {
        until(c, "the partner's offer", s, |e| {
            matches!(e, Event::PartnerOffer { amount: 1, .. })
        })
        .await;
    }
}

/// Confirm: I pay `cost` (negative: I receive), I expect one item from the partner's trade
/// slot 0 and give one from mine.
async fn confirm(c: &mut Connection, cost: i32) {
    let mut give = vec![0u16; 32];
    give[0] = 1;
    c.accept_trade(cost, vec![TradeExpect { slot: 0, amount: 1 }], give)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn items_and_gold_are_conserved_through_trades_drops_shops_warps_and_a_node_loss() {
    // No periodic checkpoints: what a node loss restores is only what the event-driven
    // saves (trades, purchases, leaving players with their entangled partners) stored.
    let mut c = Cluster::start_with_env(
        "economy",
        &[("n1", 1), ("n2", 64)],
        &[("ZONE_NODE_PERSIST_EVERY_MS", "600000")],
    )
    .await;
    let addr = c.gw.client_addr;
    let world = shared::content::demo_world();
    let users = ["eco_a", "eco_b", "eco_c", "eco_d"];

    // New characters get the demo world's starter kit (a script: a source of items) and
    // their StartGold; then they leave, and that is the economy under test.
    for u in users {
        let (mut p, g) = new_player(addr, u).await;
        let kit = |i: &client::Incoming| {
            matches!(&i.packet, ServerPacket::ChatMessage(m)
                if String::from_utf8_lossy(m.text.as_bytes()).contains("Welcome!"))
        };
        if !g.packets.iter().any(kit) {
            chat_seen(&mut p, "Welcome!").await;
        }
        p.close(CloseCode::Normal).await;
    }
    all_offline(&c, &users).await;
    let before = saved_totals(&c, &users);
    assert!(
        before.items.get(&POTION).is_some_and(|n| *n >= 12),
        "{before:?}"
    );

    let (mut a, _) = login_again(addr, "eco_a").await;
    let (mut b, gb) = login_again(addr, "eco_b").await;
    let (mut cc, _) = login_again(addr, "eco_c").await;
    let (mut d, gd) = login_again(addr, "eco_d").await;
    let mut sa = Vec::new();
    let mut sb = Vec::new();
    let mut sc = Vec::new();
    let mut sd = Vec::new();

    // 1. A trade that settles: a potion each way, and A pays B 5 gold.
    let mut pair = (std::mem::take(&mut sa), std::mem::take(&mut sb));
    open_trade(&mut a, &mut b, "eco_b", &mut pair).await;
    offer_potion_each(&mut a, &mut b, &mut pair).await;
    confirm(&mut a, 5).await;
    confirm(&mut b, -5).await;
    until(&mut a, "A's gold paid", &mut pair.0, |e| {
        matches!(e, Event::Gold(GoldChange::Down { amount: 5 }))
    })
    .await;
    until(&mut b, "B's gold received", &mut pair.1, |e| {
        matches!(e, Event::Gold(GoldChange::Up { amount: 5 }))
    })
    .await;
    (sa, sb) = pair;

    // 2. A drops a potion; C picks it up.
    a.drop_item(POTIONS_SLOT, 1).await.unwrap();
    let dropped_seen = until(&mut cc, "the dropped potion", &mut sc, |e| {
        matches!(e, Event::GroundItemAppeared { .. })
    })
    .await;
    let Event::GroundItemAppeared { dropped, .. } = dropped_seen else {
        unreachable!()
    };
    cc.pick_up(dropped, POTIONS_SLOT).await.unwrap();
    until(
        &mut cc,
        "the pickup",
        &mut sc,
        |e| matches!(e, Event::PickedUp { dropped: h, .. } if *h == dropped),
    )
    .await;
    // A second pickup of the same item is refused: it is gone.
    a.pick_up(dropped, 20).await.unwrap();

    // 3. D shops at the merchant: buys two potions, sells one.
    let merchant = gd.packets.iter().find_map(|i| match &i.packet {
        ServerPacket::NewActor(n) if n.template_id == MERCHANT => Some(n.runtime_id),
        _ => None,
    });
    let merchant = match merchant {
        Some(m) => m,
        None => match until(&mut d, "the merchant", &mut sd, |e| {
            matches!(
                e,
                Event::ActorAppeared {
                    template_id: MERCHANT,
                    ..
                }
            )
        })
        .await
        {
            Event::ActorAppeared { runtime_id, .. } => runtime_id,
            _ => unreachable!(),
        },
    };
    d.right_click(merchant).await.unwrap();
    let window = until(&mut d, "the shop", &mut sd, |e| {
        matches!(e, Event::TradeOpened(TradeWindow::Shop { .. }))
    })
    .await;
    let Event::TradeOpened(TradeWindow::Shop { wares }) = window else {
        unreachable!()
    };
    let ware = wares
        .iter()
        .find(|w| w.item.item_id == POTION && w.amount >= 2)
        .expect("the merchant sells potions");
    let shop_from = sd.len();
    d.shop_accept(
        vec![ShopBuy {
            item_handle: ware.item_handle,
            amount: 2,
        }],
        vec![ShopSell {
            slot: POTIONS_SLOT,
            amount: 1,
        }],
    )
    .await
    .unwrap();
    // One gold change for the lot: 2 × 10 paid, 1 × 10 received.
    until(&mut d, "the purchase's gold", &mut sd, |e| {
        matches!(e, Event::Gold(_))
    })
    .await;
    drain(&mut d, &mut sd, 500).await;
    let mut shop = Totals::default();
    for e in &sd[shop_from..] {
        match e {
            Event::ItemOffered {
                item_id, amount, ..
            } => shop.add_item(*item_id, i64::from(*amount)),
            Event::ItemTaken { amount, .. } => shop.add_item(POTION, -i64::from(*amount)),
            Event::Gold(GoldChange::Up { amount }) => shop.gold += i64::from(*amount),
            Event::Gold(GoldChange::Down { amount }) => shop.gold -= i64::from(*amount),
            _ => {}
        }
    }
    assert_eq!(shop.items.get(&POTION), Some(&1), "{shop:?}");
    assert_eq!(shop.gold, -10, "{shop:?}");

    // 4. A trade peer disconnects mid-trade: nothing moves, the other side's window closes.
    let mut pair = (std::mem::take(&mut sa), std::mem::take(&mut sc));
    open_trade(&mut a, &mut cc, "eco_c", &mut pair).await;
    offer_potion_each(&mut a, &mut cc, &mut pair).await;
    confirm(&mut a, 0).await;
    cc.close(CloseCode::Normal).await;
    until(&mut a, "the window closing", &mut pair.0, |e| {
        matches!(e, Event::TradeClosed)
    })
    .await;
    (sa, sc) = pair;
    let (mut cc, _) = login_again(addr, "eco_c").await;

    // 5. B warps to another zone node (carrying what it traded for).
    let (meadow_node, portal) = c.portal_to_another_node(&world, "Meadow");
    let start = (gb.area.x, gb.area.y, gb.area.z);
    walk_through(
        &mut b,
        start,
        (portal.x, portal.y, portal.z),
        &portal.link_area,
        |e| sb.push(e.clone()),
    )
    .await;

    // 6. C and D are mid-trade (C has confirmed) when their zone node dies.
    let mut pair = (std::mem::take(&mut sc), std::mem::take(&mut sd));
    open_trade(&mut cc, &mut d, "eco_d", &mut pair).await;
    offer_potion_each(&mut cc, &mut d, &mut pair).await;
    confirm(&mut cc, 3).await;
    drain(&mut cc, &mut pair.0, 200).await;
    // A node with room to take the Meadow over, then the Meadow's node dies.
    c.spawn_node("n3");
    c.wait_for("n3 to register", |v| v.nodes.iter().any(|n| n.id == "n3"))
        .await;
    c.kill(&meadow_node);
    c.wait_for("the Meadow placed again", |_| {
        c.owner("Meadow", 0).is_some_and(|(n, _)| n != meadow_node)
    })
    .await;
    // Its players are put back from their last checkpoint (they stay connected).
    for (p, s) in [
        (&mut a, &mut sa),
        (&mut cc, &mut pair.0),
        (&mut d, &mut pair.1),
    ] {
        until(p, "the player put back", s, |e| {
            matches!(e, Event::AreaChanged { .. })
        })
        .await;
    }
    for p in [a, cc, d, b] {
        p.close(CloseCode::Normal).await;
    }
    all_offline(&c, &users).await;

    // Everything is where it was, but for what the merchant sold and bought.
    let after = saved_totals(&c, &users);
    for u in users {
        let s = c.saved(u);
        eprintln!(
            "{u}: gold {} items {:?}",
            s.gold,
            s.inventory
                .iter()
                .flatten()
                .map(|i| (i.item, i.amount))
                .collect::<Vec<_>>()
        );
    }
    eprintln!("before {before:?}\nafter {after:?}\nshop {shop:?}");
    let mut expected = before.clone();
    for (item, n) in &shop.items {
        expected.add_item(*item, *n);
    }
    expected.gold += shop.gold;
    assert_eq!(after, expected, "before {before:?}, shop {shop:?}");
}

/// Wait for a chat line containing `needle`.
async fn chat_seen(c: &mut Connection, needle: &str) {
    until(
        c,
        needle,
        &mut Vec::new(),
        |e| matches!(e, Event::Chat { text, .. } if text.contains(needle)),
    )
    .await;
}
