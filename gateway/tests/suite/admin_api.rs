//! The admin API on a running gateway (issue 23), through `gateway admin …` as an
//! operator runs it: an account created, a DM flag set and a ban put on and lifted while
//! the gateway runs (each persisted at once), the players online listed, a broadcast, a
//! warp and a kick; a wrong token and unknown names are one-line errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use client::{CloseCode, CloseReason, Connection, Event, LoginError, NewCharacter, Verify};
use gateway::config::GatewayConfig;
use gateway::server;

const WAIT: Duration = Duration::from_secs(15);
const TOKEN: &str = "admin-token-for-the-tests-0123456789";

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gw-admin-api-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `gateway admin --admin-addr ADDR --token-file FILE ARGS`, `stdin` on its standard input.
fn admin(addr: SocketAddr, token_file: &Path, args: &[&str], stdin: &str) -> Output {
    use std::io::Write as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_gateway"))
        .arg("admin")
        .arg("--admin-addr")
        .arg(addr.to_string())
        .arg("--token-file")
        .arg(token_file)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn failed(out: &Output) -> String {
    assert!(!out.status.success(), "the command should fail");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// One GET (blocking): the body.
fn get(addr: SocketAddr, path: &str, token: Option<&str>) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    assert!(raw.starts_with("HTTP/1.1 200"), "{path}: {raw}");
    raw.split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default()
}

async fn connect(addr: SocketAddr) -> Connection {
    Connection::connect(addr, "gateway", Verify::Insecure)
        .await
        .unwrap()
}

/// Waits for a chat line containing `needle`.
async fn chat_line(c: &mut Connection, needle: &str) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match tokio::time::timeout(left, c.next_event()).await {
            Ok(Ok(Event::Chat { text, .. })) if text.contains(needle) => return,
            Ok(Ok(_)) => {}
            other => panic!("no chat line {needle:?}: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_manage_a_running_gateway_through_the_admin_api() {
    let dir = temp_dir("e2e");
    let token_file = dir.join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let cfg = GatewayConfig {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        internal_listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        enet_listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        admin_listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        data_dir: dir.join("data"),
        standalone: true,
        password_hash: "fast".into(),
        admin_token: TOKEN.into(),
        ..GatewayConfig::default()
    };
    let world = server::load_world(&cfg).unwrap();
    let gw = server::start(cfg, world).await.unwrap();
    let (addr, admin_addr) = (gw.client_addr, gw.admin_addr);
    let run = |args: &'static [&'static str], stdin: &'static str| {
        let token_file = token_file.clone();
        async move {
            tokio::task::spawn_blocking(move || admin(admin_addr, &token_file, args, stdin))
                .await
                .unwrap()
        }
    };

    // An account made by the operator, while the gateway runs; the player uses it at once.
    let out = run(&["create-account", "alice", "--password-stdin"], "pw\n").await;
    assert!(ok(&out).contains("created"));
    assert!(
        failed(&run(&["create-account", "alice", "--password-stdin"], "x\n").await)
            .contains("already exists")
    );
    let mut a = connect(addr).await;
    assert!(a.login("alice", "pw").await.unwrap().is_empty());
    let cat = a.fetch_catalogue().await.unwrap();
    let t = cat.playable().next().expect("a playable template").id;
    a.create_character(&NewCharacter::new("Alice", t))
        .await
        .unwrap();
    a.login("alice", "pw").await.unwrap();
    let g = a.start_game(0).await.unwrap();

    // Who is online, a broadcast, a warp.
    let online = ok(&run(&["online"], "").await);
    assert!(online.starts_with("Alice\t"), "{online}");
    assert!(ok(&run(&["broadcast", "maintenance at noon"], "").await).contains("1 players"));
    chat_line(&mut a, "maintenance at noon").await;
    let area = String::from_utf8_lossy(g.area.area.as_bytes()).into_owned();
    let out = run(&["warp", "Alice", "Lakeshore"], "").await;
    assert!(ok(&out).contains("Lakeshore"), "from {area}");
    let out = run(&["warp", "Alice", "Atlantis"], "").await;
    assert!(failed(&out).contains("no area called"));
    // Where she is now, as JSON from the zone; a mute; the instances.
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let out = ok(&run(&["--json", "actors", "Lakeshore"], "").await);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        if v.as_array()
            .unwrap()
            .iter()
            .any(|a| a["name"] == "Alice" && a["kind"] == "player")
        {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "Alice in Lakeshore: {v}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        ok(&run(&["mute", "alice", "--minutes", "5", "--reason", "spam"], "").await)
            .contains("muted for 5 minutes")
    );
    assert!(ok(&run(&["mute", "alice", "--off"], "").await).contains("no longer muted"));
    // The cluster view is the hub's, republished every 200 ms.
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let out = ok(&run(&["instances"], "").await);
        if out.contains("Lakeshore\t0\tembedded") {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{out}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // A DM flag, persisted at once.
    assert!(ok(&run(&["set-dm", "alice"], "").await).contains("is a DM"));

    // A ban kicks the player online and refuses the next login; lifting it lets her in.
    assert!(ok(&run(&["ban", "alice"], "").await).contains("1 kicked"));
    let r = tokio::time::timeout(WAIT, a.closed()).await.unwrap();
    assert!(
        matches!(
            r,
            CloseReason::Server {
                code: CloseCode::Kicked,
                ..
            }
        ),
        "{r:?}"
    );
    let mut b = connect(addr).await;
    assert!(matches!(
        b.login("alice", "pw").await,
        Err(LoginError::Banned)
    ));
    b.close(CloseCode::Normal).await;
    ok(&run(&["ban", "alice", "--off"], "").await);
    let mut c = connect(addr).await;
    assert_eq!(c.login("alice", "pw").await.unwrap().len(), 1);
    c.close(CloseCode::Normal).await;

    // A Realm Crafter server's script data, imported while the gateway runs, and a
    // reload of the world's scripts (`RefreshScripts`) on the embedded node.
    let rc = dir.join("Server Data");
    std::fs::create_dir_all(rc.join("Script Files")).unwrap();
    let mut sg = 4u32.to_le_bytes().to_vec();
    sg.extend_from_slice(b"gold");
    std::fs::write(rc.join("Superglobals.dat"), sg).unwrap();
    std::fs::write(rc.join("Script Files/Notes.txt"), b"hi").unwrap();
    let (tf, rcs) = (token_file.clone(), rc.to_string_lossy().into_owned());
    let out = tokio::task::spawn_blocking(move || {
        admin(admin_addr, &tf, &["import-script-data", &rcs], "")
    })
    .await
    .unwrap();
    assert!(
        ok(&out).starts_with("imported 1 super globals (of 100 slots), 1 script files"),
        "{}",
        ok(&out)
    );
    let out = ok(&run(&["reload-scripts"], "").await);
    assert!(
        out.starts_with("reloaded ") && out.contains("1 node"),
        "{out}"
    );

    // Mistakes and strangers.
    assert!(failed(&run(&["kick", "Nobody"], "").await).contains("no character called"));
    assert!(failed(&run(&["set-dm", "nobody"], "").await).contains("no account called"));
    let wrong = dir.join("wrong");
    std::fs::write(&wrong, "not-the-token-at-all-0123456789").unwrap();
    let out = tokio::task::spawn_blocking(move || admin(admin_addr, &wrong, &["online"], ""))
        .await
        .unwrap();
    assert!(failed(&out).contains("401"));

    // Under --standalone the gateway's /metrics carries the embedded zone node's families,
    // and the disk the alerts watch.
    let metrics = tokio::task::spawn_blocking(move || get(admin_addr, "/metrics", None))
        .await
        .unwrap();
    for family in [
        "rc_zone_ticks_total",
        "rc_zone_instance_tick_age_seconds",
        "rc_zone_tick_seconds_bucket",
        "rc_zone_ready",
        "rc_gateway_data_dir_free_bytes",
    ] {
        assert!(metrics.contains(family), "{family} in /metrics");
    }
    assert_eq!(
        metrics.matches("# TYPE process_cpu_seconds_total").count(),
        1
    );
    // Every command that changed something is in the audit log, as the operator `admin`.
    let audit = tokio::task::spawn_blocking(move || {
        get(admin_addr, "/api/v1/audit?limit=1000", Some(TOKEN))
    })
    .await
    .unwrap();
    let audit: serde_json::Value = serde_json::from_str(&audit).unwrap();
    let actions: Vec<(&str, &str, bool)> = audit
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["action"].as_str().unwrap(),
                e["target"].as_str().unwrap(),
                e["ok"] == true,
            )
        })
        .collect();
    for want in [
        ("create_account", "alice", true),
        ("create_account", "alice", false),
        ("set_dm", "alice", true),
        ("ban", "alice", true),
        ("unban", "alice", true),
        ("kick", "Nobody", false),
    ] {
        assert!(actions.contains(&want), "{want:?} in {actions:?}");
    }
    assert!(
        !audit.to_string().contains("\"password\""),
        "no password in the audit log"
    );
    assert!(
        audit
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["operator"] == "admin")
    );

    gw.shutdown().await;
    // Everything the operator changed is in the database.
    let all = gateway::store::Store::open_dir(&dir.join("data"))
        .unwrap()
        .load_all()
        .unwrap();
    let (row, characters) = all.iter().find(|(r, _)| r.user == "alice").unwrap();
    assert!(row.is_dm && !row.banned, "{row:?}");
    assert_eq!(characters.len(), 1);
    let (scripts, _) = gateway::store::Store::open_dir(&dir.join("data"))
        .unwrap()
        .load_scripts()
        .unwrap();
    assert_eq!(scripts.global(0), b"gold");
    assert_eq!(scripts.read("notes.txt").unwrap(), Some(&b"hi"[..]));
    let _ = std::fs::remove_dir_all(&dir);
}
