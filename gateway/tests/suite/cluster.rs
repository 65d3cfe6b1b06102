//! The gateway over real QUIC on loopback, with its embedded zone node (`--standalone`) and
//! the client SDK: the login flow, playing, a portal into another area and back, logout and
//! login with the state kept, bad input and floods that must not disturb other sessions, and
//! a SIGKILL of the whole process that loses at most one checkpoint interval.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use client::{
    Channel, CloseCode, CloseReason, ConnectOptions, Connection, GameStart, NewCharacter, Verify,
};
use gateway::config::GatewayConfig;
use gateway::hub::Metrics;
use gateway::server::{self, Gateway};
use shared::proto::{ServerPacket, StandardUpdateC2S};

const WAIT: Duration = Duration::from_secs(15);

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gw-cluster-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn config(data: &Path, world: Option<PathBuf>) -> GatewayConfig {
    GatewayConfig {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        internal_listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        enet_listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        admin_listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        data_dir: data.to_path_buf(),
        world,
        standalone: true,
        password_hash: "fast".into(),
        checkpoint_ms: 500,
        handshake_timeout_ms: 500,
        shutdown_timeout_ms: 5_000,
        // The login flood below comes from loopback, like every client here.
        limit_loopback: true,
        ..GatewayConfig::default()
    }
}

async fn start(data: &Path, world: Option<PathBuf>) -> Gateway {
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .try_init();
    let cfg = config(data, world);
    let w = server::load_world(&cfg).unwrap();
    let gw = server::start(cfg, w).await.unwrap();
    // Wait until every area's instance 0 is placed and ready.
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let v = gw.shared().view.lock().unwrap().clone();
        let ready = !v.nodes.is_empty() && v.unplaced.is_empty();
        if ready {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the embedded node never became ready"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    gw
}

async fn connect(addr: SocketAddr) -> Connection {
    Connection::connect(addr, "gateway", Verify::Insecure)
        .await
        .unwrap()
}

/// Create an account and a character (first playable template), then start the game.
async fn new_player(addr: SocketAddr, user: &str, name: &str) -> (Connection, GameStart) {
    let mut c = connect(addr).await;
    c.create_account(user, "secret", "a@b.c").await.unwrap();
    assert!(c.login(user, "secret").await.unwrap().is_empty());
    let cat = c.fetch_catalogue().await.unwrap();
    let t = cat.playable().next().expect("a playable template").id;
    c.create_character(&NewCharacter {
        name: name.into(),
        actor_id: t,
        gender: 0,
        face: 0,
        hair: 0,
        beard: 0,
        body: 0,
        points: Vec::new(),
    })
    .await
    .unwrap();
    assert_eq!(c.login(user, "secret").await.unwrap().len(), 1);
    let g = c.start_game(0).await.unwrap();
    (c, g)
}

async fn login_again(addr: SocketAddr, user: &str) -> (Connection, GameStart) {
    let mut c = connect(addr).await;
    // Until the zone confirms the previous logout the account is still online ("L").
    let mut tries = 0;
    let chars = loop {
        match c.login(user, "secret").await {
            Err(client::LoginError::AlreadyLoggedIn) if tries < 100 => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            r => break r.unwrap(),
        }
    };
    assert_eq!(chars.len(), 1);
    for _ in 0..50 {
        match c.start_game(0).await {
            Ok(g) => return (c, g),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    panic!("could not start the game again");
}

fn update(x: f32, y: f32, z: f32) -> StandardUpdateC2S {
    StandardUpdateC2S {
        dest_x: x,
        dest_z: z,
        y,
        x,
        z,
        is_running: 1,
        walking_backward: 0,
    }
}

/// Walk from `from` to `to` in steps the speed clamp accepts; returns the first
/// `P_ChangeArea` seen on the way (or after arriving, within a second).
async fn walk(c: &mut Connection, from: (f32, f32, f32), to: (f32, f32, f32)) -> Option<String> {
    let steps = 40;
    let mut seen = None;
    for i in 0..=steps + 20 {
        let k = (i.min(steps) as f32) / steps as f32;
        let p = (
            from.0 + (to.0 - from.0) * k,
            from.1 + (to.1 - from.1) * k,
            from.2 + (to.2 - from.2) * k,
        );
        c.send_update(&update(p.0, p.1, p.2)).unwrap();
        let end = tokio::time::Instant::now() + Duration::from_millis(50);
        while let Ok(Ok(inc)) = tokio::time::timeout_at(end, c.recv()).await {
            if let ServerPacket::ChangeArea(a) = &inc.packet {
                seen = Some(String::from_utf8_lossy(&a.area.0).into_owned());
            }
        }
        if seen.is_some() {
            return seen;
        }
    }
    seen
}

fn area(g: &GameStart) -> String {
    String::from_utf8_lossy(&g.area.area.0).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn play_through_a_portal_and_come_back_with_state_kept() {
    let data = temp_dir("journey");
    let gw = start(&data, None).await;
    let addr = gw.client_addr;

    let (mut c, g) = new_player(addr, "alice", "Alice").await;
    assert_eq!(area(&g), "Meadow");
    assert!((1..=15_999).contains(&g.runtime_id));
    let start = (g.area.x, g.area.y, g.area.z);
    // Position updates come back as datagrams once somebody else is around: not needed here.
    let to = walk(&mut c, start, (120.0, 1.0, 0.0)).await;
    assert_eq!(
        to.as_deref(),
        Some("Darkwood"),
        "the portal took us to Darkwood"
    );
    c.close(CloseCode::Normal).await;

    // Logged out in Darkwood: the character comes back there.
    let (mut c, g) = login_again(addr, "alice").await;
    assert_eq!(area(&g), "Darkwood");
    let here = (g.area.x, g.area.y, g.area.z);
    // Logged out standing in the arrival portal: not bounced back through it on login.
    assert!(
        g.packets
            .iter()
            .filter(|p| matches!(p.packet, ServerPacket::ChangeArea(_)))
            .count()
            == 1,
        "no second P_ChangeArea at login"
    );
    let off = (20.0, 2.0, 0.0);
    assert!(walk(&mut c, here, off).await.is_none());
    c.close(CloseCode::Normal).await;
    // From where it stood, back into the portal: the Meadow.
    let (mut c, g) = login_again(addr, "alice").await;
    assert!((g.area.x - off.0).abs() < 1.0, "{:?}", g.area);
    let back = walk(&mut c, off, (0.0, 2.0, 0.0)).await;
    assert_eq!(back.as_deref(), Some("Meadow"), "the portal took us back");
    c.close(CloseCode::Normal).await;

    let (c, g) = login_again(addr, "alice").await;
    assert_eq!(area(&g), "Meadow");
    assert!(
        (g.area.x - 120.0).abs() < 10.0,
        "arrived at the Meadow's Darkwood portal, at {:?}",
        (g.area.x, g.area.z)
    );
    c.close(CloseCode::Normal).await;
    // Each logout's save reaches the gateway after the client closed: wait for the three.
    let m = &gw.shared().metrics;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while Metrics::get(&m.snapshots_saved) < 3 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} snapshots saved, not 3",
            Metrics::get(&m.snapshots_saved)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    gw.shutdown().await;
    let _ = std::fs::remove_dir_all(&data);
}

/// A child process killed when dropped, also when the test panics (a failed run left its
/// gateway running).
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The checkpoints stored, from the admin endpoint's `/metrics`: single snapshots and
/// the periodic groups (0 when it cannot be read).
fn saved_snapshots(admin: SocketAddr) -> u64 {
    use std::io::{Read as _, Write as _};
    let Ok(mut s) = std::net::TcpStream::connect(admin) else {
        return 0;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    if s.write_all(b"GET /metrics HTTP/1.0\r\nHost: test\r\n\r\n")
        .is_err()
    {
        return 0;
    }
    let mut body = String::new();
    let _ = s.read_to_string(&mut body);
    let metric = |name: &str| {
        body.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .map_or(0, |v| v as u64)
    };
    metric("rc_gateway_snapshots_saved_total") + metric("rc_gateway_snapshot_groups_saved_total")
}

fn close_code(r: &CloseReason) -> Option<CloseCode> {
    match r {
        CloseReason::Server { code, .. } => Some(*code),
        _ => None,
    }
}

async fn expect_closed(c: &Connection, want: CloseCode) {
    let r = tokio::time::timeout(WAIT, c.closed())
        .await
        .expect("closed in time");
    assert_eq!(close_code(&r), Some(want), "closed with {r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_and_other_sessions_keep_playing() {
    let data = temp_dir("bad");
    let gw = start(&data, None).await;
    let addr = gw.client_addr;
    let (mut alice, g) = new_player(addr, "alice", "Alice").await;
    let pos = (g.area.x, g.area.y, g.area.z);

    // A zero-length frame.
    let mut c = connect(addr).await;
    c.send_raw(&[0, 0]).await.unwrap();
    expect_closed(&c, CloseCode::ProtocolViolation).await;
    // A frame longer than the limit.
    let mut c = connect(addr).await;
    let mut big = vec![0x28, 0x23, 16];
    big.extend(std::iter::repeat_n(b'x', 9_000));
    let _ = c.send_raw(&big).await;
    expect_closed(&c, CloseCode::ProtocolViolation).await;
    // An in-game packet before login.
    let mut c = connect(addr).await;
    c.send_frame(16, b"hello").await.unwrap();
    expect_closed(&c, CloseCode::ProtocolViolation).await;
    // A packet that does not decode.
    let mut c = connect(addr).await;
    c.send_frame(2, &[200]).await.unwrap();
    expect_closed(&c, CloseCode::ProtocolViolation).await;
    // A client that never opens its stream.
    let mut opts = ConnectOptions::new(Verify::Insecure);
    opts.send_new_client = false;
    let c = Connection::connect_with(addr, "gateway", opts)
        .await
        .unwrap();
    expect_closed(&c, CloseCode::ProtocolViolation).await;
    // Datagrams that do not parse, or carry another type: dropped, the connection stays.
    alice.send_raw_datagram(vec![1u8, 2, 3]).unwrap();
    alice.send_raw_datagram(vec![2u8, 0, 16, 33]).unwrap();
    // A login flood from one address: the attempt beyond `login_attempts_per_minute`
    // (10, counting the logins above) closes with code 4.
    let mut c = connect(addr).await;
    let mut closed = None;
    for _ in 0..16 {
        match c.login("alice", "wrong").await {
            Err(e) if e.server_close_code().is_some() => {
                closed = e.server_close_code();
                break;
            }
            _ => {}
        }
    }
    if closed.is_none() {
        closed = close_code(&tokio::time::timeout(WAIT, c.closed()).await.unwrap());
    }
    assert_eq!(closed, Some(CloseCode::RateLimited));

    // Alice still plays: she moves and a gateway chat command answers her.
    alice
        .send_update(&update(pos.0 + 1.0, pos.1, pos.2 + 1.0))
        .unwrap();
    alice.send_frame(16, b"/allplayers").await.unwrap();
    // (The demo world's own lines, such as its starter kit's, may come first.)
    let reply = alice
        .recv_until(
            |i| {
                matches!(&i.packet, ServerPacket::ChatMessage(m)
                    if String::from_utf8_lossy(&m.text.0).contains("players"))
                    && i.channel == Channel::Reliable
            },
            WAIT,
        )
        .await;
    assert!(reply.is_ok(), "{reply:?}");
    assert!(alice.close_reason().is_none());
    let m = &gw.shared().metrics;
    assert!(Metrics::get(&m.bad_datagrams) >= 2);
    assert!(Metrics::get(&m.protocol_violations) >= 4);
    assert!(Metrics::get(&m.handshake_timeouts) >= 1);
    alice.close(CloseCode::Normal).await;
    gw.shutdown().await;
    let _ = std::fs::remove_dir_all(&data);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_saves_players_and_closes_with_code_3() {
    let data = temp_dir("shutdown");
    let gw = start(&data, None).await;
    let addr = gw.client_addr;
    let (mut c, g) = new_player(addr, "bob", "Bob").await;
    let to = (g.area.x + 15.0, g.area.y, g.area.z + 15.0);
    assert!(
        walk(&mut c, (g.area.x, g.area.y, g.area.z), to)
            .await
            .is_none()
    );
    gw.shutdown().await;
    expect_closed(&c, CloseCode::ShuttingDown).await;
    // A new gateway on the same data: Bob is where he stood.
    let gw = start(&data, None).await;
    let (c, g) = login_again(gw.client_addr, "bob").await;
    assert!(
        (g.area.x - to.0).abs() < 1.0 && (g.area.z - to.2).abs() < 1.0,
        "{:?}",
        g.area
    );
    c.close(CloseCode::Normal).await;
    gw.shutdown().await;
    let _ = std::fs::remove_dir_all(&data);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ground_items_saved_by_an_instance_come_back_when_it_is_assigned_again() {
    use gateway::session::PersistOp;
    use gateway::store::Store;
    use shared::internal::{GroundItemDto, InstanceKey, InvSlotDto};
    let data = temp_dir("ground");
    let meadow = InstanceKey {
        area: "Meadow".into(),
        instance: 0,
    };
    let item = |id: u16| GroundItemDto {
        item: InvSlotDto {
            item: id,
            attributes: vec![0; 40],
            health: 100,
            amount: 3,
        },
        x: 12.0,
        y: 0.0,
        z: -4.0,
        remaining_ms: 600_000,
    };
    // An earlier run of the Meadow left a Short Sword on its ground, and an item this
    // world does not know (skipped, not refused).
    Store::open_dir(&data)
        .unwrap()
        .apply(&[PersistOp::ReplaceGround {
            key: meadow.clone(),
            items: vec![item(0), item(9_999)],
        }])
        .unwrap();
    let gw = start(&data, None).await;
    assert_eq!(gw.shared().ground().get(&meadow).map(Vec::len), Some(2));
    // The instance was assigned with its ground; stopping it (the embedded node drains)
    // saves the ground it holds with its players' last snapshots, as one group.
    gw.shutdown().await;
    let (ground, warnings) = Store::open_dir(&data).unwrap().load_ground().unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let saved = ground.get(&meadow).expect("the Meadow's ground came back");
    assert_eq!(saved.len(), 1, "{saved:?}");
    assert_eq!(saved[0].item, item(0).item);
    assert_eq!((saved[0].x, saved[0].z), (12.0, -4.0));
    assert!(saved[0].remaining_ms <= 600_000 && saved[0].remaining_ms > 500_000);
    // The other instances had nothing on the ground: nothing stored for them.
    assert_eq!(ground.len(), 1, "{ground:?}");
    let _ = std::fs::remove_dir_all(&data);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_realm_crafter_sample_data_is_served() {
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/rc-sample-data");
    if !sample.exists() {
        eprintln!("skipped: {} is absent", sample.display());
        return;
    }
    let data = temp_dir("sample");
    let gw = start(&data, Some(sample)).await;
    let (mut c, g) = new_player(gw.client_addr, "carol", "Carol").await;
    assert!(!area(&g).is_empty());
    let p = (g.area.x, g.area.y, g.area.z);
    walk(&mut c, p, (p.0 + 3.0, p.1, p.2)).await;
    assert!(c.close_reason().is_none());
    c.close(CloseCode::Normal).await;
    let (c, g2) = login_again(gw.client_addr, "carol").await;
    assert_eq!(area(&g2), area(&g));
    c.close(CloseCode::Normal).await;
    gw.shutdown().await;
    let _ = std::fs::remove_dir_all(&data);
}

/// The gateway binary, killed with SIGKILL: a character's progress older than one
/// checkpoint interval survives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_loses_at_most_one_checkpoint_interval() {
    use std::io::BufRead as _;
    let data = temp_dir("sigkill");
    let spawn = || {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_gateway"))
            .args([
                "--standalone",
                "--listen",
                "127.0.0.1:0",
                "--admin-listen",
                "127.0.0.1:0",
            ])
            .args(["--internal-listen", "127.0.0.1:0", "--checkpoint-ms", "300"])
            .arg("--data-dir")
            .arg(&data)
            .env("GATEWAY_PASSWORD_HASH", "fast")
            .env("RUST_LOG", "warn")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let mut out = std::io::BufReader::new(out);
        let mut line = String::new();
        while !line.contains("gateway ready") {
            line.clear();
            assert!(
                out.read_line(&mut line).unwrap() > 0,
                "the gateway exited early"
            );
        }
        let addr: SocketAddr = line
            .split("udp ")
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .expect("the ready line names the address")
            .parse()
            .unwrap();
        let admin: SocketAddr = line
            .split("admin on http://")
            .nth(1)
            .and_then(|s| s.split([',', ' ', '\n']).next())
            .expect("the ready line names the admin address")
            .trim()
            .parse()
            .unwrap();
        (KillOnDrop(child), addr, admin)
    };
    let (mut child, addr, admin) = spawn();
    // The embedded node registers right after start.
    let (mut c, g) = {
        let mut tries = 0;
        loop {
            let mut c = connect(addr).await;
            if c.create_account("dave", "secret", "d@e.f").await.is_ok() {
                c.close(CloseCode::Normal).await;
                break new_player_existing(addr, "dave").await;
            }
            tries += 1;
            assert!(tries < 50);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let to = (g.area.x + 20.0, g.area.y, g.area.z - 20.0);
    walk(&mut c, (g.area.x, g.area.y, g.area.z), to).await;
    // More than one checkpoint interval (300 ms) passes, then the process dies hard: at
    // least 1.5 s and three checkpoints stored after the walk (a busy machine can run
    // the zone late; a fixed 1.5 s once lost the walk's last steps).
    let stored = saved_snapshots(admin);
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while saved_snapshots(admin) < stored + 3 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no checkpoints stored"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    drop(c);
    let (mut child, addr, _) = spawn();
    let (c, g) = login_again(addr, "dave").await;
    assert!(
        (g.area.x - to.0).abs() < 1.0 && (g.area.z - to.2).abs() < 1.0,
        "kept the position of the last checkpoint: {:?}",
        (g.area.x, g.area.z)
    );
    c.close(CloseCode::Normal).await;
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    let _ = std::fs::remove_dir_all(&data);
}

/// Log in to an existing account, create a character, start the game.
async fn new_player_existing(addr: SocketAddr, user: &str) -> (Connection, GameStart) {
    let mut c = connect(addr).await;
    c.login(user, "secret").await.unwrap();
    let cat = c.fetch_catalogue().await.unwrap();
    let t = cat.playable().next().unwrap().id;
    c.create_character(&NewCharacter {
        name: "Dave".into(),
        actor_id: t,
        gender: 0,
        face: 0,
        hair: 0,
        beard: 0,
        body: 0,
        points: Vec::new(),
    })
    .await
    .unwrap();
    c.login(user, "secret").await.unwrap();
    let mut tries = 0;
    loop {
        match c.start_game(0).await {
            Ok(g) => return (c, g),
            Err(e) => {
                tries += 1;
                assert!(tries < 3, "start_game: {e}");
            }
        }
    }
}

/// Wait for a chat line containing `needle`.
async fn chat_line(c: &mut Connection, needle: &str) -> String {
    let got = c
        .recv_until(
            |i| match &i.packet {
                ServerPacket::ChatMessage(m) => String::from_utf8_lossy(&m.text.0).contains(needle),
                _ => false,
            },
            WAIT,
        )
        .await
        .unwrap_or_else(|e| panic!("no chat line with {needle:?}: {e}"));
    let ServerPacket::ChatMessage(m) = got.packet else {
        unreachable!()
    };
    String::from_utf8_lossy(&m.text.0).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_that_span_zones_and_on_demand_instances() {
    let data = temp_dir("commands");
    let gw = start(&data, None).await;
    let addr = gw.client_addr;
    let (dm, _) = new_player(addr, "gm", "Gamemaster").await;
    let (mut eve, _) = new_player(addr, "eve", "Eve").await;
    // Make "gm" a DM, then log in again so the session carries the flag.
    {
        let mut acc = gw.shared().accounts();
        let id = acc.book.find_user("gm").unwrap();
        acc.book.set_dm(id, true);
    }
    dm.close(CloseCode::Normal).await;
    let (mut dm, _) = login_again(addr, "gm").await;

    // /yell reaches everyone; /pm reaches its target.
    eve.send_frame(16, b"/yell hello all").await.unwrap();
    assert!(chat_line(&mut dm, "hello all").await.contains("Eve"));
    dm.send_frame(16, b"/pm Eve,psst").await.unwrap();
    assert!(chat_line(&mut eve, "psst").await.contains("Gamemaster"));

    // A non-DM may not /warpother; the DM may, into an instance nobody runs yet: the
    // gateway places it on demand and routes the transfer.
    eve.send_frame(16, b"/warpother Gamemaster,Darkwood,3")
        .await
        .unwrap();
    chat_line(&mut eve, "permission").await;
    dm.send_frame(16, b"/warpother Eve,Darkwood,3")
        .await
        .unwrap();
    let moved = eve
        .recv_until(|i| matches!(i.packet, ServerPacket::ChangeArea(_)), WAIT)
        .await
        .unwrap();
    let ServerPacket::ChangeArea(a) = moved.packet else {
        unreachable!()
    };
    assert_eq!(String::from_utf8_lossy(&a.area.0), "Darkwood");
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let v = gw.shared().view.lock().unwrap().clone();
        let placed = v
            .nodes
            .iter()
            .flat_map(|n| n.instances.iter())
            .any(|i| i.area == "Darkwood" && i.instance == 3);
        if placed {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "Darkwood#3 was placed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // /kick: the target gets P_KickedPlayer and close code 1.
    dm.send_frame(16, b"/kick Eve").await.unwrap();
    eve.recv_until(|i| matches!(i.packet, ServerPacket::KickedPlayer(_)), WAIT)
        .await
        .unwrap();
    expect_closed(&eve, CloseCode::Kicked).await;
    // Eve comes back in Darkwood#0 (Realm Crafter logs in to instance 0 of the saved area).
    let (eve, g) = login_again(addr, "eve").await;
    assert_eq!(area(&g), "Darkwood");
    eve.close(CloseCode::Normal).await;
    dm.close(CloseCode::Normal).await;
    gw.shutdown().await;
    let _ = std::fs::remove_dir_all(&data);
}
