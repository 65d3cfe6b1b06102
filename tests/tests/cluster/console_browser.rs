//! The operator's console in a real browser (headless Chromium through `chromedriver`,
//! issue 40): sign in, watch players move on the live map, kick one, read the audit line;
//! a player's markup in chat shows as text. With `RC_UPDATE_SCREENSHOTS=1` the pages'
//! screenshots are written to `docs/console/` (docs/operations.md shows them).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cluster_tests::webdriver::Browser;
use cluster_tests::{Cluster, new_player};
use serde_json::{Value, json};

const MODERATOR: &str = "moderator-token-0123456789abcdef";

/// Saves a screenshot as `name.png` in the test's directory (and in `docs/console/` when
/// asked).
fn keep(b: &Browser, dir: &std::path::Path, name: &str) {
    let png = b.screenshot();
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(format!("{name}.png")), &png).unwrap();
    if std::env::var("RC_UPDATE_SCREENSHOTS").is_ok_and(|v| v == "1") {
        let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/console");
        std::fs::create_dir_all(&docs).unwrap();
        std::fs::write(docs.join(format!("{name}.png")), &png).unwrap();
    }
}

/// Each actor of the live map's table: name → (x, z).
fn map_rows(b: &Browser) -> Vec<(String, f64, f64)> {
    let v = b.eval(
        "return [...document.querySelectorAll('#map-actors tbody tr')].map(r => [...r.cells].map(c => c.textContent));",
        json!([]),
    );
    v.as_array()
        .map(|rows| {
            rows.iter()
                .filter_map(|r| {
                    let name = r.get(1)?.as_str()?.to_owned();
                    let x = r.get(5)?.as_str()?.parse().ok()?;
                    let z = r.get(7)?.as_str()?.parse().ok()?;
                    Some((name, x, z))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_operator_watches_the_live_map_kicks_a_player_and_reads_the_audit_line() {
    let c = Cluster::start_with_config("console-browser", &[("n1", 64)], |cfg| {
        cfg.operators = format!("moe:moderator:{MODERATOR}");
    })
    .await;
    let admin = c.gw.admin_addr;
    // Three players walking in circles around where they started, as bots do.
    // Where each says it is (the last move it sent), as a bot reports it.
    let said: Arc<Mutex<HashMap<String, (f32, f32)>>> = Arc::default();
    let mut walkers = Vec::new();
    for name in ["walker", "strider", "rambler"] {
        let (mut conn, g) = new_player(c.gw.client_addr, name).await;
        let (x0, y0, z0) = (g.area.x, g.area.y, g.area.z);
        let said = said.clone();
        walkers.push(tokio::spawn(async move {
            let mut t = 0.0f32;
            loop {
                t += 0.03;
                let (x, z) = (x0 + 8.0 * t.cos(), z0 + 8.0 * t.sin());
                if conn.move_to(x, y0, z, false).is_err() {
                    return;
                }
                said.lock().unwrap().insert(name.to_owned(), (x, z));
                let end = tokio::time::Instant::now() + Duration::from_millis(200);
                while let Ok(r) = tokio::time::timeout_at(end, conn.next_event()).await {
                    if r.is_err() {
                        return;
                    }
                }
            }
        }));
    }
    // A line of markup in chat, to see it shown as text.
    let (mut talker, _) = new_player(c.gw.client_addr, "talker").await;
    talker
        .chat("<img src=x onerror=\"document.title='owned'\">hi")
        .await
        .unwrap();
    let dir = c.dir.join("screens");
    let online_walker = c.online("walker");
    assert!(online_walker);

    let said_b = said.clone();
    let b = tokio::task::spawn_blocking(move || {
        let b = Browser::start(1280, 1000);
        b.goto(&format!("http://{admin}/console/"));
        // Sign in.
        b.type_into("#token", MODERATOR);
        b.click("#login-form button");
        b.wait_text("#who", Duration::from_secs(10), |t| t.contains("moe"));
        b.wait_text("#cluster-summary", Duration::from_secs(10), |t| t.contains("players in game"));
        keep(&b, &dir, "cluster");
        // The live map: every walker listed, and moving.
        b.click("nav button[data-tab=map]");
        b.wait_text("#map-status", Duration::from_secs(10), |t| t.contains("actors"));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let first = loop {
            let rows = map_rows(&b);
            if ["walker", "strider", "rambler"]
                .iter()
                .all(|n| rows.iter().any(|r| r.0 == *n))
            {
                break rows;
            }
            assert!(std::time::Instant::now() < deadline, "walkers on the map: {rows:?}");
            std::thread::sleep(Duration::from_millis(200));
        };
        std::thread::sleep(Duration::from_millis(1500));
        let later = map_rows(&b);
        let moved = first.iter().filter(|(n, x, z)| {
            later
                .iter()
                .any(|(m, x2, z2)| m == n && ((x - x2).abs() > 0.5 || (z - z2).abs() > 0.5))
        });
        assert!(moved.count() >= 2, "the walkers move on the map: {first:?} then {later:?}");
        // Each where it says it is, within a few units (a frame every 500 ms; a walker
        // goes about 1.2 units a second).
        let now = said_b.lock().unwrap().clone();
        for (name, (x, z)) in &now {
            let (_, mx, mz) = later.iter().find(|r| &r.0 == name).cloned().unwrap();
            let off = ((mx - f64::from(*x)).powi(2) + (mz - f64::from(*z)).powi(2)).sqrt();
            assert!(off < 3.0, "{name} on the map at ({mx}, {mz}), says ({x}, {z})");
        }
        // The canvas is drawn (not blank).
        let painted = b.eval(
            "const c = document.getElementById('map-canvas'); const d = c.getContext('2d').getImageData(0,0,c.width,c.height).data; let n = 0; for (let i = 0; i < d.length; i += 4) if (d[i] > 60 && d[i+2] > 150) n++; return n;",
            json!([]),
        );
        assert!(painted.as_u64().unwrap_or(0) > 0, "players drawn on the map");
        // What one frame of 2,000 actors costs the page (a figure, docs/benchmarks.md).
        let cost = b.eval(
            "const f = state.frame; const big = { ...f, actors: [] };
             for (let i = 0; i < 2000; i++) big.actors.push({ runtime_id: i, name: 'npc' + i, kind: i % 10 ? 'npc' : 'player',
               level: 1, health: 10, health_max: 10, x: (i % 50) * 4, y: 0, z: Math.floor(i / 50) * 4, yaw: 0, handle: 0 });
             state.frame = big; const t0 = performance.now();
             for (let k = 0; k < 20; k++) { drawMap(); listActors(); }
             const ms = (performance.now() - t0) / 20; state.frame = f; drawMap(); listActors(); return ms;",
            json!([]),
        );
        println!("console: one 2,000-actor frame drawn and listed in {cost} ms");
        assert!(cost.as_f64().is_some(), "{cost}");
        // Hover a player: his name, level and health.
        b.type_into("#map-follow", "walker");
        b.click("#map-form button");
        std::thread::sleep(Duration::from_millis(700));
        keep(&b, &dir, "map");
        // Players: find the walker, kick him.
        b.click("nav button[data-tab=players]");
        b.type_into("#players-q", "walker");
        b.click("#players-form button");
        b.wait_text("#players-table tbody", Duration::from_secs(10), |t| t.contains("walker"));
        b.click("#players-table tbody tr");
        b.wait_text("#character-detail", Duration::from_secs(10), |t| {
            t.contains("Inventory") && t.contains("Last login")
        });
        b.type_into("#act-reason", "testing the console");
        b.click("#character-actions button[data-act=kick]");
        b.wait_text("#act-result", Duration::from_secs(10), |t| t.contains("kicked"));
        keep(&b, &dir, "players");
        // The chat log: the markup is text.
        b.click("nav button[data-tab=chat]");
        b.wait_text("#chat-table tbody", Duration::from_secs(10), |t| t.contains("<img"));
        let imgs = b.eval("return document.querySelectorAll('#chat-table img').length;", json!([]));
        assert_eq!(imgs, Value::from(0), "a player's markup is not markup");
        let title = b.eval("return document.title;", json!([]));
        assert_ne!(title, Value::from("owned"));
        keep(&b, &dir, "chat");
        // The audit line.
        b.click("nav button[data-tab=audit]");
        let line = b.wait_text("#audit-table tbody", Duration::from_secs(10), |t| {
            t.contains("kick") && t.contains("walker")
        });
        assert!(line.contains("moe"), "{line}");
        keep(&b, &dir, "audit");
        b.click("nav button[data-tab=maintenance]");
        keep(&b, &dir, "maintenance");
        b
    })
    .await
    .unwrap();
    drop(b);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while c.online("walker") && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!c.online("walker"), "kicked from the console");
    assert!(c.online("strider"));
    for w in walkers {
        w.abort();
    }
}
