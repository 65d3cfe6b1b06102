//! One player cannot hurt anyone else (issue 36): the floods a plain client can make, against
//! a gateway and a `zone-node` process while honest bots play.
//!
//! - An equipment-swap flood (the starter sword in and out of the weapon slot as fast as a
//!   stream carries it) is dropped at the gateway past the player's inventory budget and the
//!   flooder disconnected (code 4); with the gateway's budgets opened wide, the zone's own
//!   defences hold: the inbox bounds each player's inputs a tick, `Equip Change` starts are
//!   coalesced to one a tick, and the node's memory stays where it was.
//! - A jump flood reaches the other players as a handful of jumps, not as the flood.
//! - Players who stop reading their stream while a chat flood fans out to them are
//!   disconnected as too slow (code 6) once their queue passes `client_queue_bytes`,
//!   before they cost the gateway memory; the bots beside them play on.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use client::{CloseCode, CloseReason, ConnectOptions, Connection, NewCharacter, Verify};
use cluster_tests::{Cluster, WAIT, multiprocess::http_get, new_player, walking_bot};
use gateway::hub::Metrics;
use gateway::session::budget::Action;
use shared::proto::{ChatMessageC2S, ClientPacket, InventoryUpdateC2S, JumpC2S, ServerPacket};
use shared::wire::RcString;
use tokio::task::JoinSet;

/// The sum of every sample of a node's `/metrics` whose line starts with `prefix`.
async fn node_metric(admin: SocketAddr, prefix: &'static str) -> f64 {
    tokio::task::spawn_blocking(move || {
        let (status, m) = http_get(admin, "/metrics").expect("the node's /metrics answers");
        assert_eq!(status, 200, "{m}");
        m.lines()
            .filter(|l| l.starts_with(prefix))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    })
    .await
    .unwrap()
}

async fn node_rss(admin: SocketAddr) -> f64 {
    node_metric(admin, "process_resident_memory_bytes").await
}

/// Three bots walking at their own spots of the start area.
async fn start_bots(addr: SocketAddr, prefix: &str, stop: &Arc<AtomicBool>) -> JoinSet<u64> {
    let mut bots = JoinSet::new();
    for i in 0..3 {
        let (conn, g) = new_player(addr, &format!("{prefix}{i}")).await;
        let start = (g.area.x + 3.0 + i as f32, g.area.y, g.area.z + 3.0);
        bots.spawn(walking_bot(conn, g.runtime_id, start, stop.clone()));
    }
    bots
}

/// Stop the bots; each must have kept getting its own updates (a 5 Hz broadcast: at least
/// one a second over `secs`).
async fn stop_bots(mut bots: JoinSet<u64>, stop: &Arc<AtomicBool>, secs: u64) {
    stop.store(true, Ordering::Relaxed);
    while let Some(r) = bots.join_next().await {
        let own = r.expect("a bot played on without an error");
        assert!(own >= secs, "a bot got only {own} own updates in {secs} s");
    }
}

/// Wait (bounded) until the starter kit's sword is in the weapon slot (slot 0).
pub(crate) async fn wait_for_sword(c: &mut Connection) {
    let end = tokio::time::Instant::now() + WAIT;
    while c.items().slot(0).is_none() {
        assert!(tokio::time::Instant::now() < end, "no starter sword");
        let _ = tokio::time::timeout(Duration::from_millis(200), c.next_event()).await;
    }
}

/// `n` swaps of the weapon slot with backpack slot 30 and back, as one write.
pub(crate) fn swap_flood(rid: u16, n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..n {
        let (from, to) = if i % 2 == 0 { (0, 30) } else { (30, 0) };
        ClientPacket::InventoryUpdate(InventoryUpdateC2S::Swap {
            runtime_id: rid,
            from,
            to,
            amount: 0,
        })
        .encode_frame(&mut out)
        .unwrap();
    }
    out
}

pub(crate) async fn closed_with(c: &Connection) -> Option<CloseCode> {
    match tokio::time::timeout(WAIT, c.closed()).await {
        Ok(CloseReason::Server { code, .. }) => Some(code),
        _ => None,
    }
}

/// With the default budgets, 100,000 equipment changes in one write: the flooder is
/// disconnected with code 4 after its burst and a few hundred drops, the drops are counted
/// by action, the zone sees a few dozen changes at most, and the bots play on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_equipment_swap_flood_is_dropped_and_its_player_disconnected() {
    let (c, admin) = Cluster::start_with_admin_and("flood-equip", |cfg| {
        let d = gateway::config::GatewayConfig::default();
        cfg.input_budgets = d.input_budgets;
        cfg.chat_per_second = d.chat_per_second;
        cfg.chat_burst = d.chat_burst;
    })
    .await;
    let addr = c.gw.client_addr;
    let stop = Arc::new(AtomicBool::new(false));
    let bots = start_bots(addr, "eqbot", &stop).await;
    let (mut flooder, g) = new_player(addr, "swapper").await;
    wait_for_sword(&mut flooder).await;
    let rss = node_rss(admin).await;
    let _ = flooder.send_raw(&swap_flood(g.runtime_id, 100_000)).await;
    assert_eq!(closed_with(&flooder).await, Some(CloseCode::RateLimited));
    tokio::time::sleep(Duration::from_secs(3)).await;
    let m = &c.gw.shared().metrics;
    let dropped = Metrics::get(&m.input_dropped[Action::Inventory.index()]);
    assert!((200..1_000).contains(&dropped), "dropped {dropped}");
    assert!(Metrics::get(&m.input_kicks) >= 1);
    let grew = node_rss(admin).await - rss;
    println!(
        "equip flood, default budgets: {dropped} dropped, node RSS grew {:.1} MB",
        grew / 1e6
    );
    assert!(grew < 100e6, "the node grew by {grew} bytes");
    stop_bots(bots, &stop, 3).await;
}

/// With the gateway's budgets opened wide (as a misconfigured or compromised gateway would
/// let a flood through), the zone holds on its own: each player's inputs a tick are bounded
/// by the inbox, `Equip Change` starts are coalesced to one a tick, the node's memory stays
/// put, and the bots play on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_zone_holds_an_equipment_swap_flood_the_gateway_let_through() {
    let (c, admin) = Cluster::start_with_admin_env(
        "flood-zone",
        &[("ZONE_NODE_INBOX_PER_PLAYER", "64")],
        |cfg| cfg.input_kick_drops = 0,
    )
    .await;
    let addr = c.gw.client_addr;
    let stop = Arc::new(AtomicBool::new(false));
    let bots = start_bots(addr, "znbot", &stop).await;
    let (mut flooder, g) = new_player(addr, "zswapper").await;
    wait_for_sword(&mut flooder).await;
    let rss = node_rss(admin).await;
    // 300,000 changes, as fast as the stream carries them.
    for _ in 0..3 {
        flooder
            .send_raw(&swap_flood(g.runtime_id, 100_000))
            .await
            .unwrap();
    }
    // Until the zone has seen them all (the gateway reads the flooder only as fast as the
    // zone's link drains).
    let end = tokio::time::Instant::now() + WAIT;
    loop {
        let refused = node_metric(admin, "rc_zone_inbox_refused_total{limit=\"player\"}").await;
        let coalesced = node_metric(admin, "rc_zone_instance_script_starts_coalesced_total").await;
        if refused + coalesced >= 250_000.0 || tokio::time::Instant::now() > end {
            println!("zone flood: {refused} refused by the inbox, {coalesced} starts coalesced");
            assert!(refused > 0.0, "the inbox bounded the flood");
            assert!(coalesced > 0.0, "Equip Change starts were coalesced");
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let grew = node_rss(admin).await - rss;
    println!(
        "equip flood through the zone: node RSS grew {:.1} MB",
        grew / 1e6
    );
    assert!(grew < 200e6, "the node grew by {grew} bytes");
    assert!(
        flooder.close_reason().is_none(),
        "kicks are off in this test"
    );
    stop_bots(bots, &stop, 3).await;
}

/// A jump flood with the default budgets: a watcher beside the jumper sees at most the
/// jump burst and rate, and the jumper is disconnected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jump_flood_reaches_the_others_as_a_few_jumps() {
    let c = Cluster::start_with_config("flood-jump", &[("n1", 64)], |cfg| {
        cfg.input_budgets = String::new();
    })
    .await;
    let addr = c.gw.client_addr;
    let (mut watcher, _) = new_player(addr, "watcher").await;
    let (mut jumper, g) = new_player(addr, "jumper").await;
    let mut flood = Vec::new();
    for _ in 0..50_000 {
        ClientPacket::Jump(JumpC2S {})
            .encode_frame(&mut flood)
            .unwrap();
    }
    let _ = jumper.send_raw(&flood).await;
    assert_eq!(closed_with(&jumper).await, Some(CloseCode::RateLimited));
    let mut jumps = 0;
    let end = tokio::time::Instant::now() + Duration::from_secs(3);
    while let Ok(Ok(i)) = tokio::time::timeout_at(end, watcher.recv()).await {
        if matches!(i.packet, ServerPacket::Jump(j) if j.runtime_id == g.runtime_id) {
            jumps += 1;
        }
    }
    println!("jump flood: the watcher saw {jumps} of 50,000 jumps");
    assert!(jumps <= 20, "the watcher saw {jumps} jumps");
    let m = &c.gw.shared().metrics;
    assert!(Metrics::get(&m.input_dropped[Action::Jump.index()]) >= 200);
}

/// Two players who stop reading while a chat flood (let through by generous chat limits)
/// fans out to them are disconnected as too slow (code 6) once their send queues pass
/// `client_queue_bytes`; the gateway's memory is what the limits allow, and the bots beside
/// them play on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn players_who_stop_reading_are_disconnected_before_they_cost_memory() {
    let (c, admin) = Cluster::start_with_admin_and("flood-stalled", |cfg| {
        cfg.client_queue_bytes = 64 * 1024;
    })
    .await;
    let addr = c.gw.client_addr;
    let stop = Arc::new(AtomicBool::new(false));
    let bots = start_bots(addr, "stbot", &stop).await;
    let mut stalled = Vec::new();
    for i in 0..2 {
        let mut opts = ConnectOptions::new(Verify::Insecure);
        opts.receive_window = Some(16 * 1024);
        let mut s = Connection::connect_with(addr, "gateway", opts)
            .await
            .unwrap();
        let user = format!("stalled{i}");
        s.create_account(&user, "secret", "a@b.c").await.unwrap();
        s.login(&user, "secret").await.unwrap();
        let cat = s.fetch_catalogue().await.unwrap();
        let t = cat.playable().next().unwrap().id;
        s.create_character(&NewCharacter::new(&user, t))
            .await
            .unwrap();
        s.login(&user, "secret").await.unwrap();
        s.start_game(0).await.unwrap();
        // From here on it never reads again.
        stalled.push(s);
    }
    let (mut yeller, _) = new_player(addr, "yeller").await;
    let line = "x".repeat(200);
    let mut flood = Vec::new();
    for _ in 0..60 {
        ClientPacket::ChatMessage(ChatMessageC2S {
            text: RcString(line.clone().into_bytes()),
        })
        .encode_frame(&mut flood)
        .unwrap();
    }
    // 600 lines a second for 5 s: 126 KB/s to each player of the zone.
    for _ in 0..50 {
        yeller.send_raw(&flood).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let m = &c.gw.shared().metrics;
    println!(
        "stalled readers: {} queue overflows, {} frame batches down, {} chat dropped, {} up {} bytes",
        Metrics::get(&m.client_queue_overflows),
        Metrics::get(&m.frames_down),
        Metrics::get(&m.input_dropped[Action::Chat.index()]),
        Metrics::get(&m.frames_up),
        Metrics::get(&m.bytes_up_stream),
    );
    println!(
        "node: bad {} inbox {} rejections {}",
        node_metric(admin, "rc_zone_bad_client_input_total").await,
        node_metric(admin, "rc_zone_inbox_refused_total").await,
        node_metric(admin, "rc_zone_rejections_total").await
    );
    for s in &stalled {
        assert_eq!(closed_with(s).await, Some(CloseCode::TooSlow));
    }
    assert!(Metrics::get(&m.client_queue_overflows) >= 2);
    stop_bots(bots, &stop, 3).await;
}
