//! SetArea across zone-node processes (issue 6): many warps between two nodes keep one
//! owner and the character unchanged; a destination that dies mid-transfer rolls back; a
//! lost node's players come back without reconnecting; a paused node is fenced and
//! rejoins. A gateway in this process, `zone-node` processes on loopback.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use client::{CloseCode, Connection};
use cluster_tests::{
    Cluster, WAIT, area_of, chat_containing, echo, login_again, new_player, next_change_area,
};
use shared::internal::ActorStateDto;
use tokio::time::Instant;

/// What a warp must not change.
fn essentials(s: &ActorStateDto) -> String {
    let mut s = s.clone();
    s.area.clear();
    s.instance = 0;
    (s.x, s.y, s.z, s.yaw) = (0.0, 0.0, 0.0, 0.0);
    format!("{s:?}")
}

/// A DM player logged in, with some XP and gold to keep.
async fn dm_player(c: &Cluster, user: &str) -> (Connection, u16) {
    let (conn, _) = new_player(c.gw.client_addr, user).await;
    conn.close(CloseCode::Normal).await;
    c.make_dm(user);
    let (mut conn, g) = login_again(c.gw.client_addr, user).await;
    conn.send_frame(16, b"/xp 700").await.unwrap();
    conn.send_frame(16, b"/gold 350").await.unwrap();
    (conn, g.runtime_id)
}

/// Warp and wait for the `P_ChangeArea` into `area`.
async fn warp(conn: &mut Connection, area: &str, instance: u16) -> Duration {
    conn.send_frame(16, format!("/warp {area},{instance}").as_bytes())
        .await
        .unwrap();
    let (i, took) = next_change_area(conn, WAIT)
        .await
        .unwrap_or_else(|| panic!("no P_ChangeArea after /warp {area},{instance}"));
    assert_eq!(area_of(&i.packet).as_deref(), Some(area));
    took
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_warps_between_two_nodes_keep_one_owner_and_the_character() {
    let c = Cluster::start("warps", &["n1", "n2"]).await;
    // Instance 0 of every area went to n1 (first to register); a new instance goes to
    // the least loaded node, n2.
    let bots = ["wa", "wb", "wc", "wd", "we"];
    let mut players = Vec::new();
    for b in bots {
        players.push(dm_player(&c, b).await);
    }
    let (first, _) = players.first_mut().unwrap();
    warp(first, "Darkwood", 7).await;
    warp(first, "Meadow", 0).await;
    c.wait_placed("Darkwood", 7).await;
    let (a, _) = c.owner("Meadow", 0).unwrap();
    let (b, _) = c.owner("Darkwood", 7).unwrap();
    assert_ne!(a, b, "the two instances are on different nodes");
    // Let a checkpoint store the XP and gold, then remember the characters.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let before: Vec<String> = bots.iter().map(|b| essentials(&c.saved(b))).collect();

    // 5 bots × 200 warps, all at once.
    let per_bot = 200;
    let mut tasks = tokio::task::JoinSet::new();
    for (conn, _) in players {
        tasks.spawn(async move {
            let mut conn = conn;
            let mut times = Vec::new();
            for i in 0..per_bot {
                let to = if i % 2 == 0 {
                    ("Darkwood", 7)
                } else {
                    ("Meadow", 0)
                };
                times.push(warp(&mut conn, to.0, to.1).await);
            }
            (conn, times)
        });
    }
    let mut conns = Vec::new();
    let mut times = Vec::new();
    while let Some(r) = tasks.join_next().await {
        let (conn, t) = r.unwrap();
        conns.push(conn);
        times.extend(t);
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{} warps across nodes: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms (/warp sent → P_ChangeArea)",
        times.len(),
        ms(times[times.len() / 2]),
        ms(times[times.len() * 99 / 100]),
        ms(*times.last().unwrap())
    );
    assert_eq!(times.len(), bots.len() * per_bot);

    // Every bot ended in Meadow #0 (an even number of warps): exactly one owner each.
    c.wait_for("the heartbeats to settle on 5 players in Meadow #0", |v| {
        let count = |area: &str, inst: u16| -> u64 {
            v.nodes
                .iter()
                .flat_map(|n| n.instances.iter())
                .filter(|i| i.area == area && i.instance == inst)
                .map(|i| i.players)
                .sum()
        };
        count("Meadow", 0) == 5 && count("Darkwood", 7) == 0
    })
    .await;
    assert_eq!(c.players_total(), 5, "no player is hosted twice");
    let m = &c.gw.shared().metrics;
    let shared::metrics_text::HistogramSnapshot {
        buckets,
        sum,
        count,
    } = m.handoff_latency.snapshot();
    println!(
        "handoffs completed {}, rolled back {}; gateway Transfer → commit: mean {:.2} ms, buckets {:?}",
        gateway::hub::Metrics::get(&m.handoffs_completed),
        gateway::hub::Metrics::get(&m.handoffs_rolled_back),
        sum * 1000.0 / count.max(1) as f64,
        buckets
    );

    // Log out: the characters are what they were, but for where they stand.
    for conn in conns {
        conn.close(CloseCode::Normal).await;
    }
    let deadline = Instant::now() + WAIT;
    while bots.iter().any(|b| c.online(b)) {
        assert!(Instant::now() < deadline, "logouts were not confirmed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for (b, was) in bots.iter().zip(&before) {
        let now = c.saved(b);
        assert_eq!(now.area, "Meadow");
        assert_eq!(&essentials(&now), was, "{b}'s character changed");
        assert!(
            now.xp >= 700 && now.gold >= 350,
            "{b}: {} xp, {} gold",
            now.xp,
            now.gold
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_destination_killed_mid_transfer_rolls_back_and_the_player_keeps_playing() {
    let mut c = Cluster::start("midtransfer", &["n1", "n2"]).await;
    let (mut p, rid) = dm_player(&c, "mover").await;
    // Create Darkwood #3 on n2 and come back.
    warp(&mut p, "Darkwood", 3).await;
    warp(&mut p, "Meadow", 0).await;
    c.wait_placed("Darkwood", 3).await;
    let (dest, _) = c.owner("Darkwood", 3).unwrap();
    let (src, _) = c.owner("Meadow", 0).unwrap();
    assert_ne!(dest, src);

    // The destination stops answering, the warp goes out, then the destination dies.
    c.signal(&dest, "STOP");
    p.send_frame(16, b"/warp Darkwood,3").await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    c.kill(&dest);
    let told = chat_containing(&mut p, "Transfer failed", WAIT).await;
    assert!(told.is_some(), "the player is told the warp failed");
    // Still in Meadow, still playing: its moves come back.
    let at = (3.0, 1.0, 3.0);
    assert!(
        echo(&mut p, rid, at, WAIT).await,
        "the player keeps playing"
    );
    assert!(
        p.recv_timeout(Duration::from_millis(500))
            .await
            .map_or(true, |i| area_of(&i.packet).is_none()),
        "no P_ChangeArea came"
    );
    // And it can still warp within the surviving node.
    warp(&mut p, "Lakeshore", 0).await;
    c.wait_players(1).await;
    p.close(CloseCode::Normal).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_node_s_fifty_players_come_back_without_reconnecting() {
    let mut c = Cluster::start("nodeloss", &["n1"]).await;
    let addr = c.gw.client_addr;
    let mut players = Vec::new();
    for i in 0..50 {
        let user = format!("np{i}");
        let (conn, g) = new_player(addr, &user).await;
        players.push((user, conn, g.runtime_id));
    }
    // Each moves somewhere of its own, and a checkpoint saves it.
    for (i, (_, conn, _)) in players.iter_mut().enumerate() {
        let x = (i % 10) as f32;
        let z = (i / 10) as f32;
        conn.send_update(&cluster_tests::update(x, 1.0, z)).unwrap();
    }
    let deadline = Instant::now() + WAIT;
    for (i, (user, _, _)) in players.iter().enumerate() {
        let want = ((i % 10) as f32, (i / 10) as f32);
        loop {
            let s = c.saved(user);
            if (s.x - want.0).abs() < 0.01 && (s.z - want.1).abs() < 0.01 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{user} was not checkpointed: saved at ({}, {}), stands at {want:?}",
                s.x,
                s.z
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    c.spawn_node("n2");
    c.wait_for("n2 to register", |v| v.nodes.iter().any(|n| n.id == "n2"))
        .await;
    let (gen_before, lost) = {
        let (n, g) = c.owner("Meadow", 0).unwrap();
        (g, n)
    };
    assert_eq!(lost, "n1");

    let t0 = Instant::now();
    c.kill("n1");
    let mut tasks = tokio::task::JoinSet::new();
    for (user, conn, rid) in players {
        tasks.spawn(async move {
            let mut conn = conn;
            let back = next_change_area(&mut conn, Duration::from_secs(15)).await;
            (user, conn, rid, back)
        });
    }
    let mut back_in = Vec::new();
    let mut conns = Vec::new();
    while let Some(r) = tasks.join_next().await {
        let (user, conn, rid, back) = r.unwrap();
        let (i, _) = back.unwrap_or_else(|| panic!("{user} was not put back"));
        assert_eq!(area_of(&i.packet).as_deref(), Some("Meadow"));
        back_in.push(t0.elapsed());
        conns.push((user, conn, rid));
    }
    back_in.sort();
    println!(
        "node loss: all 50 players back in the world after {:.2} s (first {:.2} s)",
        back_in.last().unwrap().as_secs_f64(),
        back_in.first().unwrap().as_secs_f64()
    );
    let (now_on, gen_after) = c.owner("Meadow", 0).unwrap();
    assert_eq!(now_on, "n2");
    assert!(gen_after > gen_before, "re-placed with a newer generation");
    // They play on, from their saved position, each exactly once.
    for (i, (_, conn, rid)) in conns.iter_mut().enumerate() {
        let x = (i % 10) as f32;
        let z = (i / 10) as f32 + 1.0;
        assert!(
            echo(conn, *rid, (x, 1.0, z), WAIT).await,
            "player {i} plays on"
        );
    }
    c.wait_players(50).await;
    for (_, conn, _) in conns {
        conn.close(CloseCode::Normal).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_node_is_fenced_and_rejoins_cleanly() {
    let c = Cluster::start("paused", &["n1"]).await;
    let addr = c.gw.client_addr;
    let (mut p, g) = new_player(addr, "sleeper").await;
    let rid = g.runtime_id;
    assert!(echo(&mut p, rid, (2.0, 1.0, 2.0), WAIT).await);
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    let mut c = c;
    c.spawn_node("n2");
    c.wait_for("n2 to register", |v| v.nodes.iter().any(|n| n.id == "n2"))
        .await;

    // n1 freezes past its heartbeat deadline: removed, Meadow re-placed on n2, the
    // player put back there.
    c.signal("n1", "STOP");
    let (i, took) = next_change_area(&mut p, WAIT)
        .await
        .expect("the player is put back");
    assert_eq!(area_of(&i.packet).as_deref(), Some("Meadow"));
    println!("paused node: player back after {:.2} s", took.as_secs_f64());
    assert_eq!(c.owner("Meadow", 0).map(|o| o.0).as_deref(), Some("n2"));
    // It plays on n2 and walks somewhere new.
    let far = (6.0, 1.0, 6.0);
    assert!(echo(&mut p, rid, far, WAIT).await);

    // n1 wakes up with its stale copy: it is fenced (it cannot reach the client or save
    // the character), stops the copy, and registers again.
    c.signal("n1", "CONT");
    c.wait_for("n1 back without the re-placed instances", |v| {
        v.nodes.iter().any(|n| {
            n.id == "n1"
                && !n
                    .instances
                    .iter()
                    .any(|i| i.area == "Meadow" && i.instance == 0)
        })
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert!(
        echo(&mut p, rid, (6.5, 1.0, 6.5), WAIT).await,
        "still playing on n2"
    );
    assert_eq!(c.owner("Meadow", 0).map(|o| o.0).as_deref(), Some("n2"));
    c.wait_players(1).await;
    // The character saved is n2's, not the stale copy's.
    p.close(CloseCode::Normal).await;
    let deadline = Instant::now() + WAIT;
    while c.online("sleeper") {
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let s = c.saved("sleeper");
    assert!(
        (s.x - 6.5).abs() < 0.6 && (s.z - 6.5).abs() < 0.6,
        "saved where it was on n2: ({}, {})",
        s.x,
        s.z
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draining_node_s_players_move_to_another_node_without_reconnecting() {
    let mut c = Cluster::start("drain", &["n1"]).await;
    let addr = c.gw.client_addr;
    let mut players = Vec::new();
    for i in 0..3 {
        let (conn, g) = new_player(addr, &format!("dr{i}")).await;
        players.push((conn, g.runtime_id, "Meadow"));
    }
    // One more in an on-demand instance, which must be placed again elsewhere.
    let (mut dm, rid) = dm_player(&c, "drdm").await;
    warp(&mut dm, "Darkwood", 2).await;
    players.push((dm, rid, "Darkwood"));
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    c.spawn_node("n2");
    c.wait_for("n2 to register", |v| v.nodes.iter().any(|n| n.id == "n2"))
        .await;

    // A rolling restart: n1 drains (SIGTERM): saves everyone, stops, deregisters.
    c.signal("n1", "TERM");
    for (conn, rid, area) in &mut players {
        let (i, took) = next_change_area(conn, WAIT)
            .await
            .expect("moved to the other node");
        assert_eq!(area_of(&i.packet).as_deref(), Some(*area));
        println!(
            "drain: {area} player back after {:.2} s",
            took.as_secs_f64()
        );
        assert!(echo(conn, *rid, (1.0, 1.0, 1.0), WAIT).await, "plays on");
        assert!(conn.close_reason().is_none(), "never disconnected");
    }
    assert_eq!(c.owner("Meadow", 0).map(|o| o.0).as_deref(), Some("n2"));
    c.wait_placed("Darkwood", 2).await;
    assert_eq!(c.owner("Darkwood", 2).map(|o| o.0).as_deref(), Some("n2"));
    c.wait_for("n1 gone", |v| !v.nodes.iter().any(|n| n.id == "n1"))
        .await;
    c.wait_players(4).await;
    for (conn, _, _) in players {
        conn.close(CloseCode::Normal).await;
    }
}
