//! The cluster on Postgres (issue 41's first part): a gateway whose store is a real
//! Postgres server (started by the test) logs players in, saves them, and a new gateway on
//! the same database finds them where they left off.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use cluster_tests::{Cluster, echo, login_again, new_player};
use gateway::store::pg_server;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_on_postgres_saves_players_and_another_finds_them() {
    let Some(server) = pg_server::start_or_skip() else {
        return;
    };
    let url = server.database("rc_cluster").unwrap();
    let at = (12.5, 1.0, -7.25);
    {
        let u = url.clone();
        let c = Cluster::start_with_config("pg-first", &[("n1", 64)], move |cfg| {
            cfg.database_url = u;
        })
        .await;
        let (mut conn, g) = new_player(c.gw.client_addr, "pgplayer").await;
        assert!(echo(&mut conn, g.runtime_id, at, Duration::from_secs(5)).await);
        conn.close(client::CloseCode::Normal).await;
        let deadline = Instant::now() + Duration::from_secs(10);
        while c.online("pgplayer") {
            assert!(Instant::now() < deadline, "logged out");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // As a gateway's shutdown ends: its store closed (and the database free).
        let shared = c.gw.shared().clone();
        tokio::task::spawn_blocking(move || shared.writer.close())
            .await
            .unwrap()
            .unwrap();
    }
    // In Postgres, as the gateway saved it (read on a thread: the client blocks).
    let u = url.clone();
    let saved = std::thread::spawn(move || {
        let store = gateway::store::Store::open_postgres(&u).unwrap();
        assert_eq!(store.backend(), "postgres");
        store.load_book().unwrap()
    })
    .join()
    .unwrap();
    let id = saved
        .find_user("pgplayer")
        .expect("the account is in Postgres");
    let ch = &saved.get(id).unwrap().characters[0];
    assert!(
        (ch.x - at.0).abs() < 0.6 && (ch.z - at.2).abs() < 0.6,
        "saved where it left: ({}, {})",
        ch.x,
        ch.z
    );
    // Another gateway (its own empty data directory) on the same database.
    let c = Cluster::start_with_config("pg-second", &[("n1", 64)], move |cfg| {
        cfg.database_url = url;
    })
    .await;
    let (conn, g) = login_again(c.gw.client_addr, "pgplayer").await;
    assert!(
        (g.area.x - at.0).abs() < 0.6 && (g.area.z - at.2).abs() < 0.6,
        "back where it left: ({}, {})",
        g.area.x,
        g.area.z
    );
    conn.close(client::CloseCode::Normal).await;
}
