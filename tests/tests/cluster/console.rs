//! The operator's console's API against a running cluster (issue 40): the live map's actors
//! where the players are, its stream moving, roles, the audit log, bans and mutes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use cluster_tests::{Cluster, chat_containing, echo, login_again, new_player};
use serde_json::Value;

const VIEWER: &str = "viewer-token-0123456789abcdef";
const MODERATOR: &str = "moderator-token-0123456789abcdef";
const ADMIN: &str = "admin-token-0123456789abcdef";

fn operators() -> String {
    format!("vera:viewer:{VIEWER}\nmoe:moderator:{MODERATOR}\nada:admin:{ADMIN}")
}

/// One HTTP/1.1 request (`Connection: close`): the status and the body.
fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &str,
) -> (u16, String) {
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    // Chunked bodies (axum's JSON has a length; keep both readable).
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    (status, body)
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((len, rest)) = s.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(len.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

async fn call(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &str,
) -> (u16, Value) {
    let (m, p, t, b) = (
        method.to_owned(),
        path.to_owned(),
        token.map(str::to_owned),
        body.to_owned(),
    );
    let (status, text) = tokio::task::spawn_blocking(move || http(addr, &m, &p, t.as_deref(), &b))
        .await
        .unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// The first `n` events of a live map stream (`event`, parsed `data`), each within 5 s.
fn stream_events(addr: SocketAddr, path: &str, token: &str, n: usize) -> Vec<(String, Value)> {
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    let mut buf = [0u8; 65536];
    let mut events = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(5 * n as u64 + 5);
    while events.len() < n && Instant::now() < deadline {
        let got = s.read(&mut buf).unwrap();
        assert!(got > 0, "the stream ended: {text}");
        text.push_str(&String::from_utf8_lossy(&buf[..got]));
        // Each event: `event: NAME\ndata: JSON\n\n` (inside HTTP chunks: find the lines).
        events = text
            .split("event: ")
            .skip(1)
            .filter_map(|e| {
                let (name, rest) = e.split_once('\n')?;
                let data = rest.strip_prefix("data: ")?;
                let line = data.split('\n').next()?;
                let v: Value = serde_json::from_str(line)
                    .ok()
                    .unwrap_or_else(|| Value::String(line.into()));
                rest.contains("\n\n").then(|| (name.trim().to_owned(), v))
            })
            .collect();
    }
    events
}

fn find<'a>(actors: &'a Value, name: &str) -> Option<&'a Value> {
    actors.as_array()?.iter().find(|a| a["name"] == name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_live_map_shows_the_players_and_moderation_is_by_role_and_audited() {
    let c = Cluster::start_with_config("console-api", &[("n1", 64)], |cfg| {
        cfg.operators = operators();
    })
    .await;
    let admin = c.gw.admin_addr;
    let (mut alice, ga) = new_player(c.gw.client_addr, "alice").await;
    let (mut bob, gb) = new_player(c.gw.client_addr, "bob").await;
    let area = String::from_utf8_lossy(ga.area.area.as_bytes()).into_owned();
    let instance = ga.area.instance_handle;
    let _ = instance;
    let a_at = (ga.area.x + 3.0, ga.area.y, ga.area.z + 4.0);
    let b_at = (gb.area.x - 5.0, gb.area.y, gb.area.z + 2.0);
    assert!(echo(&mut alice, ga.runtime_id, a_at, Duration::from_secs(5)).await);
    assert!(echo(&mut bob, gb.runtime_id, b_at, Duration::from_secs(5)).await);

    // Who may read: anyone with a token; nobody without.
    assert_eq!(
        call(admin, "GET", "/api/v1/instances", None, "").await.0,
        401
    );
    assert_eq!(
        call(
            admin,
            "GET",
            "/api/v1/instances",
            Some("wrong-token-0123456789abcdef"),
            ""
        )
        .await
        .0,
        401
    );
    let (status, me) = call(admin, "GET", "/api/v1/whoami", Some(VIEWER), "").await;
    assert_eq!(
        (status, me["name"].as_str(), me["role"].as_str()),
        (200, Some("vera"), Some("viewer"))
    );
    let (status, list) = call(admin, "GET", "/api/v1/instances", Some(VIEWER), "").await;
    assert_eq!(status, 200, "{list}");
    let row = list
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["area"] == area.as_str() && i["instance"] == 0)
        .unwrap_or_else(|| panic!("{area} #0 in {list}"));
    assert_eq!(row["node"], "n1");

    // The actors, each where its player says it is.
    let path = format!("/api/v1/instances/{}/0/actors", area.replace(' ', "%20"));
    let (status, actors) = call(admin, "GET", &path, Some(VIEWER), "").await;
    assert_eq!(status, 200, "{actors}");
    for (name, at, rid) in [("alice", a_at, ga.runtime_id), ("bob", b_at, gb.runtime_id)] {
        let a = find(&actors, name).unwrap_or_else(|| panic!("{name} in {actors}"));
        assert_eq!(a["kind"], "player");
        assert_eq!(a["runtime_id"], rid);
        let (x, z) = (a["x"].as_f64().unwrap(), a["z"].as_f64().unwrap());
        assert!(
            (x - f64::from(at.0)).abs() < 1.0 && (z - f64::from(at.2)).abs() < 1.0,
            "{name} at {x},{z}, the client says {at:?}"
        );
    }

    // The stream: a frame with the statics, then frames that follow the players.
    let stream = format!("/api/v1/instances/{}/0/stream", area.replace(' ', "%20"));
    let first = tokio::task::spawn_blocking({
        let s = stream.clone();
        move || stream_events(admin, &s, VIEWER, 1)
    })
    .await
    .unwrap();
    assert_eq!(first[0].0, "map");
    assert!(
        first[0].1["statics"]["portals"].is_array(),
        "{}",
        first[0].1
    );
    let moved = (a_at.0 + 6.0, a_at.1, a_at.2);
    let reader = tokio::task::spawn_blocking({
        let s = stream.clone();
        move || stream_events(admin, &s, VIEWER, 6)
    });
    assert!(echo(&mut alice, ga.runtime_id, moved, Duration::from_secs(5)).await);
    let frames = reader.await.unwrap();
    assert!(frames.iter().all(|(e, _)| e == "map"), "{frames:?}");
    assert!(
        frames.iter().any(|(_, f)| {
            find(&f["actors"], "alice")
                .is_some_and(|a| (a["x"].as_f64().unwrap() - f64::from(moved.0)).abs() < 1.0)
        }),
        "alice's move on the live map"
    );

    // Bad input: clear errors.
    for (path, want) in [
        ("/api/v1/instances/Nowhere/0/actors".to_owned(), 404),
        (
            format!("/api/v1/instances/{}/x/actors", area.replace(' ', "%20")),
            400,
        ),
        (
            format!("/api/v1/instances/{}/9/actors", area.replace(' ', "%20")),
            404,
        ),
        ("/api/v1/players?limit=0".to_owned(), 400),
    ] {
        let (status, body) = call(admin, "GET", &path, Some(VIEWER), "").await;
        assert_eq!(status, want, "{path}: {body}");
        assert!(body["error"].is_string(), "{body}");
    }
    let (status, _) = call(
        admin,
        "POST",
        "/api/v1/accounts/bob/ban",
        Some(MODERATOR),
        "{not json",
    )
    .await;
    assert_eq!(status, 400);
    let (status, _) = call(
        admin,
        "POST",
        "/api/v1/accounts/bob/ban",
        Some(MODERATOR),
        r#"{"minutes": 99999999}"#,
    )
    .await;
    assert_eq!(status, 400);
    let (status, _) = call(
        admin,
        "POST",
        "/api/v1/accounts/bob/explode",
        Some(ADMIN),
        "",
    )
    .await;
    assert_eq!(status, 404);

    // A mute: bob's talk reaches nobody, he is told, the chat log keeps it.
    let (status, r) = call(
        admin,
        "POST",
        "/api/v1/accounts/bob/mute",
        Some(MODERATOR),
        r#"{"minutes": 5, "reason": "spam"}"#,
    )
    .await;
    assert_eq!(status, 200, "{r}");
    bob.chat("buy gold at example.com").await.unwrap();
    assert!(
        chat_containing(&mut bob, "muted", Duration::from_secs(3))
            .await
            .is_some()
    );
    assert!(
        chat_containing(&mut alice, "buy gold", Duration::from_millis(800))
            .await
            .is_none()
    );
    alice.chat("hello <script>alert(1)</script>").await.unwrap();
    assert!(
        chat_containing(&mut bob, "hello", Duration::from_secs(3))
            .await
            .is_some()
    );
    let (_, chat) = call(admin, "GET", "/api/v1/chat?player=bob", Some(VIEWER), "").await;
    assert_eq!(chat[0]["text"], "buy gold at example.com");
    assert_eq!(chat[0]["muted"], true);
    let (_, chat) = call(admin, "GET", "/api/v1/chat?q=script", Some(VIEWER), "").await;
    assert_eq!(
        chat[0]["text"], "hello <script>alert(1)</script>",
        "kept as sent"
    );

    // A ban: not for a viewer; a moderator's kicks bob and stops his logins.
    let ban = r#"{"minutes": 60, "reason": "griefing"}"#;
    assert_eq!(
        call(admin, "POST", "/api/v1/accounts/bob/ban", None, ban)
            .await
            .0,
        401
    );
    let (status, r) = call(admin, "POST", "/api/v1/accounts/bob/ban", Some(VIEWER), ban).await;
    assert_eq!(status, 403, "{r}");
    assert!(c.online("bob"));
    let (status, r) = call(
        admin,
        "POST",
        "/api/v1/accounts/bob/ban",
        Some(MODERATOR),
        ban,
    )
    .await;
    assert_eq!(status, 200, "{r}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while c.online("bob") && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!c.online("bob"), "a banned player is kicked");
    drop(bob);
    let (_, found) = call(admin, "GET", "/api/v1/players?q=bob", Some(VIEWER), "").await;
    assert_eq!(found[0]["banned"], true, "{found}");
    assert!(found[0]["ban_until_ms"].as_u64().unwrap() > 0);
    let (status, detail) = call(admin, "GET", "/api/v1/characters/alice", Some(VIEWER), "").await;
    assert_eq!(status, 200);
    assert_eq!(detail["online"], true);
    assert!(
        (detail["x"].as_f64().unwrap() - f64::from(moved.0)).abs() < 1.0,
        "{detail}"
    );
    assert!(detail["inventory"].is_array() && detail["attributes"].is_array());

    // The audit log: the refused viewer and the moderator's ban, newest first.
    let (_, log) = call(admin, "GET", "/api/v1/audit?q=ban", Some(VIEWER), "").await;
    let log = log.as_array().unwrap();
    let ok = log
        .iter()
        .find(|e| e["operator"] == "moe" && e["action"] == "ban")
        .unwrap();
    assert_eq!(
        (ok["target"].as_str(), ok["ok"].as_bool()),
        (Some("bob"), Some(true))
    );
    assert!(ok["detail"].as_str().unwrap().contains("griefing"));
    let refused = log.iter().find(|e| e["operator"] == "vera").unwrap();
    assert_eq!(refused["ok"], false);
    assert!(refused["result"].as_str().unwrap().contains("moderator"));

    // A shutdown scheduled with a countdown to every player, then cancelled; admins only.
    let plan = r#"{"seconds": 600, "message": "Patch 1.2"}"#;
    assert_eq!(
        call(admin, "POST", "/api/v1/shutdown", Some(MODERATOR), plan)
            .await
            .0,
        403
    );
    let (status, r) = call(admin, "POST", "/api/v1/shutdown", Some(ADMIN), plan).await;
    assert_eq!(status, 200, "{r}");
    let line = chat_containing(&mut alice, "shuts down in", Duration::from_secs(5)).await;
    assert_eq!(
        line.as_deref(),
        Some("The server shuts down in 10 minutes. Patch 1.2")
    );
    let (_, view) = call(admin, "GET", "/api/v1/cluster", Some(VIEWER), "").await;
    assert!(view["shutdown_at_ms"].as_u64().is_some(), "{view}");
    let (status, _) = call(
        admin,
        "POST",
        "/api/v1/shutdown",
        Some(ADMIN),
        r#"{"seconds": 1}"#,
    )
    .await;
    assert_eq!(status, 400, "at least 10 s");
    let (status, _) = call(admin, "POST", "/api/v1/cancel-shutdown", Some(ADMIN), "").await;
    assert_eq!(status, 200);
    assert!(
        chat_containing(&mut alice, "cancelled", Duration::from_secs(5))
            .await
            .is_some()
    );
    let (_, view) = call(admin, "GET", "/api/v1/cluster", Some(VIEWER), "").await;
    assert!(view.get("shutdown_at_ms").is_none(), "{view}");
    assert_eq!(
        call(admin, "POST", "/api/v1/cancel-shutdown", Some(ADMIN), "")
            .await
            .0,
        400
    );

    // Lifted by an admin; bob logs in again.
    let (status, _) = call(admin, "POST", "/api/v1/accounts/bob/unban", Some(ADMIN), "").await;
    assert_eq!(status, 200);
    let (_bob, _) = login_again(c.gw.client_addr, "bob").await;
    drop(alice);
}

/// A script that fails in a zone is on the console's script error list, with its file,
/// line and message, a moment later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_error_in_a_zone_reaches_the_console() {
    let dir = cluster_tests::temp_dir("console-scripts-world");
    let world = shared::content::demo_world();
    shared::content::fs::write_native(&world, &dir).expect("the world is written");
    std::fs::write(
        dir.join("scripts").join("In-game Commands.rsl"),
        "Function Oops()\r\n\tA = 0\r\n\tB = 5 / A\r\nEnd Function\r\n",
    )
    .unwrap();
    let c = Cluster::start_with_world_and("console-scripts", &[("n1", 64)], &dir, |cfg| {
        cfg.operators = operators();
    })
    .await;
    let admin = c.gw.admin_addr;
    let (mut ann, _) = new_player(c.gw.client_addr, "ann").await;
    ann.command("oops").await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let e = loop {
        let (status, list) = call(
            admin,
            "GET",
            "/api/v1/script-errors?q=oops",
            Some(VIEWER),
            "",
        )
        .await;
        assert_eq!(status, 200, "{list}");
        if let Some(e) = list.as_array().and_then(|l| l.first()).cloned() {
            break e;
        }
        assert!(Instant::now() < deadline, "no script error listed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        e["func"].as_str().unwrap().eq_ignore_ascii_case("oops"),
        "{e}"
    );
    assert_eq!(e["script"], "In-game Commands");
    assert_eq!(e["kind"], "runtime");
    assert_eq!(e["line"], 3);
    assert!(
        e["message"].as_str().unwrap().contains("Division by zero"),
        "{e}"
    );
    assert_eq!(e["node"], "n1");
    // The Cluster page counts it against its instance (from the node's next heartbeat).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, rows) = call(admin, "GET", "/api/v1/instances", Some(VIEWER), "").await;
        let errors: u64 = rows
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r["errors"].as_u64())
            .sum();
        if errors >= 1 {
            assert!(rows[0]["tick_p50_ms"].as_f64().is_some(), "{rows}");
            break;
        }
        assert!(Instant::now() < deadline, "no error counted: {rows}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        call(admin, "GET", "/api/v1/script-errors", None, "")
            .await
            .0
            == 401
    );
}

/// Draining a node from the API (issue 40's "drain a node"): an admin call, refused to a
/// moderator and for the last node taking work; the node's players move to the other
/// node without reconnecting, and the node stays registered, draining, with nothing on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_drains_a_node_and_its_players_move_to_another() {
    let mut c = Cluster::start_with_config("console-drain", &[("n1", 64)], |cfg| {
        cfg.operators = operators();
    })
    .await;
    let admin = c.gw.admin_addr;
    let addr = c.gw.client_addr;
    let mut players = Vec::new();
    for name in ["drained1", "drained2"] {
        let (conn, g) = new_player(addr, name).await;
        players.push((conn, g.runtime_id));
    }
    let first = c.owner("Meadow", 0).unwrap().0;
    // Alone, the node cannot be drained: its players would have nowhere to go.
    let path = format!("/api/v1/nodes/{first}/drain");
    let (status, body) = call(admin, "POST", &path, Some(ADMIN), "{}").await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("only node"),
        "{body}"
    );
    c.spawn_node("n2");
    c.wait_for("n2 to register", |v| v.nodes.iter().any(|n| n.id == "n2"))
        .await;
    let (status, _) = call(admin, "POST", &path, Some(MODERATOR), "{}").await;
    assert_eq!(status, 403, "draining needs the admin role");
    let (status, body) = call(admin, "POST", "/api/v1/nodes/nope/drain", Some(ADMIN), "{}").await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = call(admin, "POST", &path, Some(ADMIN), "{}").await;
    assert_eq!(status, 200, "{body}");
    for (conn, rid) in &mut players {
        let (i, _) = cluster_tests::next_change_area(conn, cluster_tests::WAIT)
            .await
            .expect("moved to the other node");
        assert_eq!(cluster_tests::area_of(&i.packet).as_deref(), Some("Meadow"));
        assert!(
            echo(conn, *rid, (2.0, 1.0, 2.0), cluster_tests::WAIT).await,
            "plays on"
        );
        assert!(conn.close_reason().is_none(), "never disconnected");
    }
    assert_eq!(c.owner("Meadow", 0).map(|o| o.0).as_deref(), Some("n2"));
    // The live map follows the instance to the node now running it.
    let (status, actors) = call(
        admin,
        "GET",
        "/api/v1/instances/Meadow/0/actors",
        Some(VIEWER),
        "",
    )
    .await;
    assert_eq!(status, 200, "{actors}");
    for name in ["drained1", "drained2"] {
        assert!(
            actors.as_array().unwrap().iter().any(|a| a["name"] == name),
            "{name} on n2's map: {actors}"
        );
    }
    let (_, cluster) = call(admin, "GET", "/api/v1/cluster", Some(ADMIN), "").await;
    let node = cluster["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == first.as_str())
        .cloned()
        .unwrap();
    assert_eq!(node["draining"], true, "{node}");
    assert_eq!(
        node["instances"].as_array().map(Vec::len),
        Some(0),
        "{node}"
    );
    // Again: it drains already.
    let (status, body) = call(admin, "POST", &path, Some(ADMIN), "{}").await;
    assert_eq!(status, 400, "{body}");
    let (_, audit) = call(admin, "GET", "/api/v1/audit?q=drain_node", Some(ADMIN), "").await;
    let audit = audit.as_array().unwrap();
    assert!(
        audit
            .iter()
            .any(|e| e["ok"] == true && e["operator"] == "ada" && e["target"] == first.as_str()),
        "{audit:?}"
    );
    assert!(
        audit
            .iter()
            .any(|e| e["ok"] == false && e["operator"] == "moe")
    );
}

/// Restoring one character from a backup file (issue 40): an admin makes a backup through
/// the API, the character loses its gold, the restore is refused while it plays and puts
/// the gold back once it is out; a backup name outside the backup directory is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_restores_one_character_from_a_backup_file() {
    let c = Cluster::start_with_config("console-restore", &[("n1", 64)], |cfg| {
        cfg.operators = operators();
    })
    .await;
    let admin = c.gw.admin_addr;
    let (conn, _) = new_player(c.gw.client_addr, "restored").await;
    conn.close(client::CloseCode::Normal).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.online("restored") {
        assert!(Instant::now() < deadline, "logged out");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let before = c.saved("restored");
    let (status, body) = call(
        admin,
        "POST",
        "/api/v1/backups",
        Some(ADMIN),
        r#"{"name":"before.sqlite3"}"#,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, list) = call(admin, "GET", "/api/v1/backups", Some(VIEWER), "").await;
    assert_eq!(status, 200);
    assert_eq!(list[0]["name"], "before.sqlite3", "{list}");
    // A moderator may not restore; a name with a path is refused.
    let restore = |token: &'static str, backup: &str| {
        let body = serde_json::json!({ "backup": backup }).to_string();
        async move {
            call(
                admin,
                "POST",
                "/api/v1/characters/restored/restore",
                Some(token),
                &body,
            )
            .await
        }
    };
    assert_eq!(restore(MODERATOR, "before.sqlite3").await.0, 403);
    assert_eq!(restore(ADMIN, "../gateway.sqlite3").await.0, 400);
    assert_eq!(restore(ADMIN, "missing.sqlite3").await.0, 400);

    // In the world: refused (a restore never races a live copy).
    let (conn, _) = login_again(c.gw.client_addr, "restored").await;
    let (status, body) = restore(ADMIN, "before.sqlite3").await;
    assert_eq!(status, 400, "refused while it plays: {body}");
    assert!(
        body["error"].as_str().unwrap().contains("in the world"),
        "{body}"
    );
    conn.close(client::CloseCode::Normal).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.online("restored") {
        assert!(Instant::now() < deadline, "logged out");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    {
        // Since the backup, the character changed (a script's doing, a bad trade).
        let shared = c.gw.shared();
        let mut acc = shared.accounts();
        let (id, slot) = acc.book.find_character("restored").unwrap();
        let mut s = acc.book.get(id).unwrap().characters[usize::from(slot)].clone();
        s.gold = before.gold + 12_345;
        assert!(acc.book.save_character(id, slot, s));
        let ops = acc.book.take_persist();
        drop(acc);
        shared.writer.submit(ops).unwrap();
    }
    assert_eq!(c.saved("restored").gold, before.gold + 12_345);
    let (status, body) = restore(ADMIN, "before.sqlite3").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        c.saved("restored").gold,
        before.gold,
        "as the backup holds it"
    );
    let (_, audit) = call(admin, "GET", "/api/v1/audit?q=restore", Some(ADMIN), "").await;
    assert!(
        audit
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["ok"] == true && e["target"] == "restored" && e["operator"] == "ada"),
        "{audit}"
    );
    // It logs in with what was restored.
    let (conn, _) = login_again(c.gw.client_addr, "restored").await;
    conn.close(client::CloseCode::Normal).await;
}
