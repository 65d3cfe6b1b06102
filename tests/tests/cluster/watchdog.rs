//! The tick watchdog (issue 36, item 4), on a whole cluster: a gateway in this process and
//! a `zone-node` process with two arbiters and its test hooks on. One instance's tick is
//! made to block its thread (`POST /test/stall`, as a script or a flood that never ends
//! would): its tick age grows on the node's `/metrics`, the node goes not-ready
//! (`/readyz` 503) and tells the gateway (`/cluster` shows it stuck), the instance is
//! given up and placed anew, and its player comes back from the last checkpoint and plays
//! on — while a player in another instance of the same node, on the other arbiter, keeps
//! getting updates throughout.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use client::{CloseCode, Connection};
use cluster_tests::multiprocess::http_get;
use cluster_tests::{Cluster, WAIT, area_of, echo, login_again, new_player, next_change_area};
use tokio::time::Instant;

/// How long the stalled tick blocks its thread: far past the give-up threshold.
const STALL_MS: u64 = 40_000;

/// A DM player logged in (it may `/warp` and `/xp`).
async fn dm_player(c: &Cluster, user: &str) -> (Connection, u16) {
    let (conn, _) = new_player(c.gw.client_addr, user).await;
    conn.close(CloseCode::Normal).await;
    c.make_dm(user);
    let (conn, g) = login_again(c.gw.client_addr, user).await;
    (conn, g.runtime_id)
}

/// Warp and wait for the `P_ChangeArea` into `area`.
async fn warp(conn: &mut Connection, area: &str, instance: u16) {
    conn.send_frame(16, format!("/warp {area},{instance}").as_bytes())
        .await
        .unwrap();
    let (i, _) = next_change_area(conn, WAIT)
        .await
        .unwrap_or_else(|| panic!("no P_ChangeArea after /warp {area},{instance}"));
    assert_eq!(area_of(&i.packet).as_deref(), Some(area));
}

/// `POST path` (no body); the status.
fn post(addr: SocketAddr, path: &str) -> u16 {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Length: 0\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    text.split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// One series of the node's `/metrics` (its full name with labels), if present.
fn metric(admin: SocketAddr, series: &str) -> Option<f64> {
    let (status, m) = http_get(admin, "/metrics").ok()?;
    assert_eq!(status, 200, "{m}");
    m.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
}

/// The node's `/readyz` status.
fn readyz(admin: SocketAddr) -> u16 {
    http_get(admin, "/readyz").map_or(0, |(s, _)| s)
}

/// Poll `f` (blocking, off the runtime) every 100 ms until it holds, at most `within`.
async fn until(what: &str, within: Duration, f: impl Fn() -> bool + Send + Clone + 'static) {
    let deadline = Instant::now() + within;
    loop {
        let g = f.clone();
        if tokio::task::spawn_blocking(g).await.unwrap() {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stuck_instance_is_given_up_its_player_comes_back_and_the_others_play_on() {
    let admin = cluster_tests::free_port();
    let admin_s = admin.to_string();
    let c = Cluster::start_with_env(
        "watchdog",
        &[("n1", 64)],
        &[
            ("ZONE_NODE_ADMIN_LISTEN", admin_s.as_str()),
            ("ZONE_NODE_TEST_HOOKS", "true"),
            ("ZONE_NODE_ARBITERS", "2"),
            ("ZONE_NODE_STUCK_TICK_MS", "1000"),
            ("ZONE_NODE_GIVE_UP_TICK_MS", "4000"),
        ],
    )
    .await;
    until("the node to be ready", WAIT, move || readyz(admin) == 200).await;

    // Two instances placed one after the other go to the node's two arbiters (round
    // robin): Ann plays in Darkwood#5, Bob in Darkwood#6.
    let (mut ann, ann_rid) = dm_player(&c, "ann").await;
    let (mut bob, bob_rid) = dm_player(&c, "bob").await;
    warp(&mut ann, "Darkwood", 5).await;
    warp(&mut bob, "Darkwood", 6).await;
    c.wait_placed("Darkwood", 5).await;
    c.wait_placed("Darkwood", 6).await;
    let (_, gen_before) = c.owner("Darkwood", 5).unwrap();

    // Ann earns XP and walks; a checkpoint stores both.
    ann.send_frame(16, b"/xp 700").await.unwrap();
    let spot = (4.0, 1.0, 4.0);
    assert!(echo(&mut ann, ann_rid, spot, WAIT).await, "Ann plays");
    assert!(
        echo(&mut bob, bob_rid, (1.0, 1.0, 1.0), WAIT).await,
        "Bob plays"
    );
    let deadline = Instant::now() + WAIT;
    loop {
        let s = c.saved("ann");
        if (s.x - spot.0).abs() < 0.01 && (s.z - spot.2).abs() < 0.01 && s.xp >= 700 {
            break;
        }
        assert!(Instant::now() < deadline, "Ann was not checkpointed: {s:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let age = "rc_zone_instance_tick_age_seconds{area=\"Darkwood\",area_instance=\"5\"}";
    let fresh = tokio::task::spawn_blocking(move || metric(admin, age))
        .await
        .unwrap()
        .expect("the tick age of Darkwood#5 on /metrics");
    assert!(
        fresh < 1.0,
        "a ticking instance's tick age is small: {fresh}"
    );

    // Bob keeps playing, throughout: every move of his comes back within 2 s.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    let bob_task = tokio::spawn(async move {
        let mut moves = 0u32;
        let mut i = 0u32;
        while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
            i += 1;
            let at = (1.0 + (i % 8) as f32, 1.0, 1.0);
            assert!(
                echo(&mut bob, bob_rid, at, Duration::from_secs(2)).await,
                "Bob (Darkwood#6, the other arbiter) froze after {moves} moves"
            );
            moves += 1;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        (bob, moves)
    });

    // Freeze Darkwood#5's thread.
    let t0 = Instant::now();
    let status = tokio::task::spawn_blocking(move || {
        post(
            admin,
            &format!("/test/stall?area=Darkwood&instance=5&ms={STALL_MS}"),
        )
    })
    .await
    .unwrap();
    assert_eq!(status, 200, "the stall hook answers");

    // Its tick age grows on /metrics, the node goes not-ready, the gateway sees it stuck.
    until("Darkwood#5's tick age to pass 1.5 s", WAIT, move || {
        metric(admin, age).is_some_and(|a| a > 1.5)
    })
    .await;
    until("the node to be not ready", WAIT, move || {
        readyz(admin) == 503
    })
    .await;
    let stuck_total = tokio::task::spawn_blocking(move || {
        metric(admin, "rc_zone_stuck_instances_total").unwrap_or(0.0)
    })
    .await
    .unwrap();
    assert!(stuck_total >= 1.0, "counted: {stuck_total}");
    // The new families keep Prometheus' conventions.
    let (_, body) = tokio::task::spawn_blocking(move || http_get(admin, "/metrics"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        shared::metrics_text::lint(&body),
        Vec::<String>::new(),
        "{body}"
    );
    c.wait_for("the gateway to show Darkwood#5 stuck", |v| {
        v.nodes
            .iter()
            .flat_map(|n| &n.instances)
            .any(|i| i.area == "Darkwood" && i.instance == 5 && i.stuck && i.tick_age_ms >= 1_000)
    })
    .await;
    // And on its /metrics (what a `--standalone` gateway, whose node has no admin
    // endpoint, shows), in Prometheus' conventions.
    let gw_admin = c.gw.admin_addr;
    let (_, gm) = tokio::task::spawn_blocking(move || http_get(gw_admin, "/metrics"))
        .await
        .unwrap()
        .unwrap();
    let series =
        "rc_gateway_instance_tick_age_seconds{node=\"n1\",area=\"Darkwood\",area_instance=\"5\"}";
    let gw_age: f64 = gm
        .lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {series} in {gm}"));
    assert!(gw_age >= 1.0, "{gw_age}");
    assert!(gm.contains(
        "rc_gateway_instance_stuck{node=\"n1\",area=\"Darkwood\",area_instance=\"5\"} 1"
    ));
    assert_eq!(
        shared::metrics_text::lint(&gm),
        Vec::<String>::new(),
        "{gm}"
    );

    // Given up and placed anew: Ann is put back (without reconnecting) from her last
    // checkpoint, into a new generation of Darkwood#5.
    let (i, _) = next_change_area(&mut ann, WAIT)
        .await
        .expect("Ann is put back");
    assert_eq!(area_of(&i.packet).as_deref(), Some("Darkwood"));
    println!(
        "watchdog: Ann back {:.2} s after her instance froze",
        t0.elapsed().as_secs_f64()
    );
    assert!(
        t0.elapsed() < Duration::from_millis(STALL_MS),
        "she came back before the stall ended"
    );
    c.wait_for("Darkwood#5 placed anew, with a new generation", |v| {
        v.nodes.iter().flat_map(|n| &n.instances).any(|i| {
            i.area == "Darkwood" && i.instance == 5 && i.generation > gen_before && !i.stuck
        })
    })
    .await;
    let given_up = tokio::task::spawn_blocking(move || {
        metric(admin, "rc_zone_instances_given_up_total").unwrap_or(0.0)
    })
    .await
    .unwrap();
    assert!(given_up >= 1.0, "counted: {given_up}");
    // She plays on, with what her checkpoint saved.
    assert!(
        echo(&mut ann, ann_rid, (6.0, 1.0, 6.0), WAIT).await,
        "Ann plays on in the new copy"
    );
    assert!(c.saved("ann").xp >= 700, "her XP was kept");
    // The node is ready again once every instance of the frozen thread is given up.
    until("the node to be ready again", WAIT, move || {
        readyz(admin) == 200
    })
    .await;

    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (bob, moves) = bob_task.await.expect("Bob never froze");
    assert!(moves >= 5, "Bob moved throughout: {moves} moves");
    ann.close(CloseCode::Normal).await;
    bob.close(CloseCode::Normal).await;
}
