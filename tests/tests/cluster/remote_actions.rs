//! A script's action on a player another node hosts survives that node's loss (issue 39):
//! the hosting zone took a `GiveItem`, and its node is killed before any checkpoint saved
//! it. The player comes back from his last save on the surviving node, and the gateway
//! delivers the action again to the zone that takes him over: he ends with the items
//! exactly once, not lost with the node and not given twice.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use client::CloseCode;
use cluster_tests::adventurer::Adventurer;
use cluster_tests::{Cluster, WAIT, new_player, next_change_area, temp_dir, walk_through};

/// Five potions to Bob, wherever he is; and how many he has (everyone starts with 3,
/// `Login.rsl`: 8 after one gift, 13 after two).
const COMMANDS: &str = "Function Gift()\r\n\tP = FindActor(\"bob\", 1)\r\n\
    \tGiveItem(P, \"Healing Potion\", 5)\r\n\tOutput(Actor(), \"given \" + (P > 0))\r\nEnd Function\r\n\
    Function Tally()\r\n\tP = FindActor(\"bob\", 1)\r\n\
    \tOutput(Actor(), \"bob \" + HasItem(P, \"Healing Potion\", 1) + HasItem(P, \"Healing Potion\", 8) + HasItem(P, \"Healing Potion\", 9))\r\n\
    End Function\r\n";

/// A new player, walked through `portal` to the other node's area.
async fn on_the_other_node(
    c: &Cluster,
    portal: &shared::content::Portal,
    user: &str,
) -> (client::Connection, Adventurer) {
    let (mut conn, g) = new_player(c.gw.client_addr, user).await;
    let mut h = Adventurer::new(&g);
    let from = h.at;
    h.at = walk_through(
        &mut conn,
        from,
        (portal.x, portal.y, portal.z),
        &portal.link_area,
        |e| h.observe(e),
    )
    .await;
    (conn, h)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_action_taken_on_a_lost_node_is_delivered_again_and_taken_once() {
    let dir = temp_dir("actions-world");
    let world = shared::content::demo_world();
    shared::content::fs::write_native(&world, &dir).expect("the world is written");
    std::fs::write(dir.join("scripts").join("In-game Commands.rsl"), COMMANDS).unwrap();
    // Checkpoints far apart: the node is killed between the action and the next one.
    let mut c = Cluster::start_with_world_env(
        "actions",
        &[("n1", 1), ("n2", 64)],
        &dir,
        &[("ZONE_NODE_PERSIST_EVERY_MS", "4000")],
    )
    .await;
    let (meadow_node, portal) = c.portal_to_another_node(&world, "Meadow");
    let (mut bob, _) = new_player(c.gw.client_addr, "bob").await;
    let (mut ann, mut h) = on_the_other_node(&c, &portal, "ann").await;
    // Bob's first save (with Login.rsl's potions) is in.
    let deadline = std::time::Instant::now() + WAIT;
    let potion = world
        .items
        .iter()
        .find(|i| i.name == "Healing Potion")
        .map(|i| i.id)
        .unwrap();
    let count = |s: &shared::internal::ActorStateDto| {
        s.inventory
            .iter()
            .flatten()
            .filter(|i| i.item == potion)
            .map(|i| u32::from(i.amount))
            .sum::<u32>()
    };
    while count(&c.saved("bob")) != 3 {
        assert!(std::time::Instant::now() < deadline, "Bob was not saved");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // A node to take Bob's area over.
    c.spawn_node("n3");
    c.wait_for("n3 to register", |v| v.nodes.iter().any(|n| n.id == "n3"))
        .await;

    eprintln!("step: Ann, on another node, gives Bob five potions; his node dies at once");
    ann.command("gift").await.unwrap();
    h.chat_line(&mut ann, "given 1", WAIT).await;
    c.kill(&meadow_node);
    assert!(
        next_change_area(&mut bob, Duration::from_secs(15))
            .await
            .is_some(),
        "Bob was put back"
    );
    // Asked again until the gift is there: a query while his new zone is still taking
    // him in finds no one ("bob 000"), one before the gift is delivered again sees his
    // saved potions only ("bob 100"); twice the gift would read "bob 111".
    let deadline = std::time::Instant::now() + WAIT;
    let line = loop {
        ann.command("tally").await.unwrap();
        let line = h.chat_line(&mut ann, "bob ", WAIT).await;
        if !["bob 000", "bob 100"].contains(&line.as_str()) || std::time::Instant::now() > deadline
        {
            break line;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(line, "bob 110", "eight potions: the gift once");

    eprintln!("step: his save after logging out holds them once");
    bob.close(CloseCode::Normal).await;
    let deadline = std::time::Instant::now() + WAIT;
    while c.online("bob") {
        assert!(std::time::Instant::now() < deadline, "Bob did not log out");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(count(&c.saved("bob")), 8, "saved once");
    ann.close(CloseCode::Normal).await;
}

/// A benchmark, not a check (run by hand, `docs/benchmarks.md`): the latency a script sees
/// of a query on a player another node hosts (500 `ActorLevel`s, each timed with
/// `MilliSecs`, the zone's tick clock), and the time of a walk over another node's
/// instance of 500 actors (`FirstActorInZone`, then `NextActorInZone` and `Name` of each).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: cargo nextest run -p cluster-tests --run-ignored only -E 'test(remote_query_figures)' --no-capture"]
async fn remote_query_figures() {
    const BENCH: &str = "Function Crowd()\r\n\tFor I = 1 To 500\r\n\
        \t\tSpawn(2, ActorZone(Actor()), 10 + (I Mod 20), 0, 10 + (I / 20), \"\", \"\", 0)\r\n\
        \tNext\r\n\tOutput(Actor(), \"crowd \" + ActorsInZone(ActorZone(Actor()), 0))\r\nEnd Function\r\n\
        Function Probe()\r\n\tP = FindActor(\"bob\", 1)\r\n\tZ$ = ActorZone(P)\r\n\
        \tFor J = 1 To 10\r\n\t\tS$ = \"lat\"\r\n\t\tFor I = 1 To 50\r\n\
        \t\t\tT = MilliSecs()\r\n\t\t\tX = ActorLevel(P)\r\n\t\t\tS$ = S$ + \" \" + (MilliSecs() - T)\r\n\
        \t\tNext\r\n\t\tOutput(Actor(), S$)\r\n\tNext\r\n\
        \tT = MilliSecs()\r\n\tA = FirstActorInZone(Z$, 0)\r\n\tF = A\r\n\tN = 0\r\n\
        \tRepeat\r\n\t\tL = Len(Name(A))\r\n\t\tN = N + 1\r\n\t\tA = NextActorInZone(A)\r\n\
        \tUntil A = F Or A = 0\r\n\
        \tOutput(Actor(), \"walk \" + N + \" \" + (MilliSecs() - T))\r\nEnd Function\r\n";
    let dir = temp_dir("bench-world");
    let world = shared::content::demo_world();
    shared::content::fs::write_native(&world, &dir).expect("the world is written");
    std::fs::write(dir.join("scripts").join("In-game Commands.rsl"), BENCH).unwrap();
    let c =
        Cluster::start_with_world_env("actions-bench", &[("n1", 1), ("n2", 64)], &dir, &[]).await;
    let (_, portal) = c.portal_to_another_node(&world, "Meadow");
    let (mut bob, gb) = new_player(c.gw.client_addr, "bob").await;
    let mut hb = Adventurer::new(&gb);
    bob.command("crowd").await.unwrap();
    let crowd = hb.chat_line(&mut bob, "crowd ", WAIT).await;
    let (mut ann, mut h) = on_the_other_node(&c, &portal, "ann").await;
    let before = c.gw.shared().metrics.remote_query_latency.snapshot();
    let t0 = std::time::Instant::now();
    ann.command("probe").await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(300);
    while !h.chat.iter().any(|l| l.starts_with("walk ")) {
        assert!(
            std::time::Instant::now() < deadline,
            "the probe did not finish"
        );
        h.pump(&mut ann, Duration::from_millis(100)).await;
    }
    let wall = t0.elapsed();
    let mut ticks: Vec<u32> = h
        .chat
        .iter()
        .filter(|l| l.starts_with("lat "))
        .flat_map(|l| l.split(' ').skip(1).filter_map(|x| x.parse::<u32>().ok()))
        .collect();
    let walk = h
        .chat
        .iter()
        .find(|l| l.starts_with("walk "))
        .cloned()
        .unwrap();
    ticks.sort_unstable();
    let after = c.gw.shared().metrics.remote_query_latency.snapshot();
    // The gateway's histogram over this probe alone: (upper bound, how many at or below).
    let hist: Vec<(f64, u64)> = after
        .buckets
        .iter()
        .zip(&before.buckets)
        .map(|(a, b)| (a.0, a.1 - b.1))
        .collect();
    let n = after.count - before.count;
    let quantile = |q: f64| {
        hist.iter()
            .find(|(_, c)| *c as f64 >= q * n as f64)
            .map_or(f64::INFINITY, |(b, _)| *b)
    };
    let zero_tick = ticks.iter().filter(|&&t| t == 0).count();
    println!(
        "remote commands: {n} answered through the gateway, p50 <= {} ms, p99 <= {} ms, mean {:.2} ms (gateway to the answering zone and back); \
         script-visible: {zero_tick} of {} ActorLevel queries answered within the tick they were asked in (MilliSecs, the tick clock, unchanged), the rest one tick later; \
         {walk} (actors, ms of zone clock); probe wall time {:.2} s; {crowd} on Bob's node",
        quantile(0.5) * 1e3,
        quantile(0.99) * 1e3,
        (after.sum - before.sum) / n.max(1) as f64 * 1e3,
        ticks.len(),
        wall.as_secs_f64(),
    );
    ann.close(CloseCode::Normal).await;
    bob.close(CloseCode::Normal).await;
}
