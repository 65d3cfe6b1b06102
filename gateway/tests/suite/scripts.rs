//! The zones' scripts and the gateway, end to end over real QUIC (`--standalone`): the
//! world's `Startup.Main` runs once when the cluster starts, and what it asks of the
//! cluster (script files, super globals, a new instance) goes through its zone node to
//! the gateway's script store and is kept across a restart. A character that enters the
//! game has its script handle and carries its account's name and e-mail.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use client::{CloseCode, CloseReason, Connection, GameStart, LoginError, NewCharacter, Verify};
use gateway::config::GatewayConfig;
use gateway::hub::Metrics;
use gateway::server::{self, Gateway};
use gateway::store::Store;
use shared::content::model::ScriptSource;
use shared::internal::InstanceKey;
use shared::proto::ServerPacket;

const WAIT: Duration = Duration::from_secs(20);

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gw-scripts-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// The demo world with a `Startup` script that uses the script store.
fn world() -> shared::content::World {
    let mut w = shared::content::demo_world();
    let startup = r#"; Startup: run once when the cluster starts.
Function Main()
	SetSuperGlobal(3, "booted")
	F = WriteFile("Logs\Boot.txt")
	WriteLine(F, "Startup ran")
	CloseFile(F)
	CreateDir("saves")
	If FileType("logs/boot.txt") = 1
		SetSuperGlobal(4, "file of " + FileSize("logs/boot.txt") + " bytes")
	EndIf
	N = CreateZoneInstance("Meadow", 0)
	SetSuperGlobal(5, "instance " + N)
	SetSuperGlobal(6, "exists " + ZoneInstanceExists("Meadow", N))
End Function
"#;
    let commands = r#"; In-game Commands: the player's own /commands.
Function WHOAMI()
	P = Actor()
	Output(P, "account " + PlayerAccountName(P) + " " + PlayerAccountEmail(P), 255, 255, 255)
End Function

Function MOVEOUT()
	RemoveZoneInstance("Darkwood", 3)
End Function

Function BANME()
	BanPlayer(Actor())
	Output(Actor(), "banned: " + PlayerIsBanned(Actor()), 255, 255, 255)
End Function

Function KICKME()
	KickPlayer(Actor())
End Function
"#;
    w.scripts.push(ScriptSource {
        name: "Startup".into(),
        bytes: startup.as_bytes().to_vec(),
    });
    w.scripts.push(ScriptSource {
        name: "In-game Commands".into(),
        bytes: commands.as_bytes().to_vec(),
    });
    w.scripts.sort_by(|a, b| a.name.cmp(&b.name));
    w
}

fn config(data: &Path) -> GatewayConfig {
    GatewayConfig {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        internal_listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        enet_listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        admin_listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        data_dir: data.to_path_buf(),
        standalone: true,
        password_hash: "fast".into(),
        checkpoint_ms: 500,
        handshake_timeout_ms: 500,
        shutdown_timeout_ms: 5_000,
        ..GatewayConfig::default()
    }
}

async fn start(data: &Path) -> Gateway {
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .try_init();
    server::start(config(data), world()).await.unwrap()
}

/// Wait until `f` holds (polling the gateway's state).
async fn until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !f() {
        assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn connect(addr: SocketAddr) -> Connection {
    Connection::connect(addr, "gateway", Verify::Insecure)
        .await
        .unwrap()
}

/// Create an account and a character (first playable template), then start the game.
async fn new_player(addr: SocketAddr, user: &str, name: &str) -> (Connection, GameStart) {
    let mut c = connect(addr).await;
    c.create_account(user, "secret", &format!("{user}@example.org"))
        .await
        .unwrap();
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

/// Log in again once the zone has confirmed the previous logout.
async fn login_again(addr: SocketAddr, user: &str) -> (Connection, GameStart) {
    let mut c = connect(addr).await;
    let mut tries = 0;
    loop {
        match c.login(user, "secret").await {
            Err(LoginError::AlreadyLoggedIn) if tries < 100 => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            r => {
                assert_eq!(r.unwrap().len(), 1);
                break;
            }
        }
    }
    let g = c.start_game(0).await.unwrap();
    (c, g)
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

/// Wait for a `P_ChangeArea`; its area name.
async fn change_area(c: &mut Connection) -> String {
    let got = c
        .recv_until(|i| matches!(i.packet, ServerPacket::ChangeArea(_)), WAIT)
        .await
        .unwrap();
    let ServerPacket::ChangeArea(a) = got.packet else {
        unreachable!()
    };
    String::from_utf8_lossy(&a.area.0).into_owned()
}

fn placed(gw: &Gateway, area: &str, instance: u16) -> bool {
    gw.shared()
        .view
        .lock()
        .unwrap()
        .nodes
        .iter()
        .flat_map(|n| &n.instances)
        .any(|i| i.area == area && i.instance == instance)
}

fn global(gw: &Gateway, slot: u8) -> String {
    String::from_utf8_lossy(gw.shared().scripts().global(slot)).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn startup_uses_the_script_store_and_a_restart_keeps_it() {
    let data = temp_dir("startup");
    let gw = start(&data).await;
    until("Startup.Main ran to its end", || !global(&gw, 6).is_empty()).await;
    assert_eq!(global(&gw, 3), "booted");
    // WriteLine ends a line with CR LF: 11 + 2 bytes.
    assert_eq!(global(&gw, 4), "file of 13 bytes");
    assert_eq!(global(&gw, 5), "instance 1");
    assert_eq!(global(&gw, 6), "exists 1");
    {
        let scripts = gw.shared().scripts();
        assert_eq!(
            scripts.read("logs/boot.txt").unwrap(),
            Some(&b"Startup ran\r\n"[..])
        );
        assert_eq!(scripts.info("saves").unwrap(), (2, 0));
    }
    // The instance the script created is placed (and comes up).
    let meadow1 = InstanceKey {
        area: "Meadow".into(),
        instance: 1,
    };
    until("Meadow#1 is running", || {
        placed(&gw, &meadow1.area, meadow1.instance)
    })
    .await;
    let m = &gw.shared().metrics;
    assert!(Metrics::get(&m.script_store_requests) >= 9);
    assert_eq!(Metrics::get(&m.script_store_refused), 0);
    gw.shutdown().await;

    // On disk, as the script left it.
    let (stored, warnings) = Store::open_dir(&data).unwrap().load_scripts().unwrap();
    assert!(warnings.is_empty());
    assert_eq!(
        stored.read("logs/boot.txt").unwrap(),
        Some(&b"Startup ran\r\n"[..])
    );
    assert_eq!(stored.global(5), b"instance 1");

    // A restarted gateway serves what was stored, and runs Startup again (once).
    let gw = start(&data).await;
    assert_eq!(global(&gw, 3), "booted");
    assert_eq!(
        gw.shared().scripts().read("logs/boot.txt").unwrap(),
        Some(&b"Startup ran\r\n"[..])
    );
    gw.shutdown().await;
    let _ = std::fs::remove_dir_all(&data);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_character_gets_a_handle_and_carries_its_account() {
    let data = temp_dir("handle");
    let gw = start(&data).await;
    let addr = gw.client_addr;
    let mut c = Connection::connect(addr, "gateway", Verify::Insecure)
        .await
        .unwrap();
    c.create_account("carol", "secret", "carol@example.org")
        .await
        .unwrap();
    assert!(c.login("carol", "secret").await.unwrap().is_empty());
    let cat = c.fetch_catalogue().await.unwrap();
    let t = cat.playable().next().expect("a playable template").id;
    c.create_character(&NewCharacter {
        name: "Carol".into(),
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
    assert_eq!(c.login("carol", "secret").await.unwrap().len(), 1);
    c.start_game(0).await.unwrap();
    c.close(CloseCode::Normal).await;
    // The logout snapshot is the zone's copy of the character: what the gateway gave it.
    let saved = || {
        let acc = gw.shared().accounts();
        let id = acc.book.find_user("carol")?;
        let a = acc.book.get(id)?;
        (!a.logged_on).then(|| a.characters.first().cloned())?
    };
    until("Carol's logout is saved", || {
        saved().is_some_and(|c| !c.account.is_empty())
    })
    .await;
    let carol = saved().unwrap();
    assert_eq!(carol.handle, 1);
    assert_eq!(carol.account, "carol");
    assert_eq!(carol.email, "carol@example.org");
    gw.shutdown().await;
    let book = Store::open_dir(&data).unwrap().load_book().unwrap();
    let id = book.find_user("carol").unwrap();
    assert_eq!(book.get(id).unwrap().characters[0].handle, 1);
    assert_eq!(book.next_handle(), 2);
    let _ = std::fs::remove_dir_all(&data);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_act_on_accounts_and_remove_instances() {
    let data = temp_dir("accounts");
    let gw = start(&data).await;
    let addr = gw.client_addr;
    let (dm, _) = new_player(addr, "gm", "Gamemaster").await;
    let (mut eve, _) = new_player(addr, "eve", "Eve").await;
    {
        let mut acc = gw.shared().accounts();
        let id = acc.book.find_user("gm").unwrap();
        acc.book.set_dm(id, true);
    }
    dm.close(CloseCode::Normal).await;
    let (mut dm, _) = login_again(addr, "gm").await;

    // The account natives read what the gateway gave the character at entry.
    eve.send_frame(16, b"/whoami").await.unwrap();
    assert_eq!(
        chat_line(&mut eve, "account ").await,
        "account eve eve@example.org"
    );

    // RemoveZoneInstance: the players in it go to instance 0, then it stops.
    dm.send_frame(16, b"/warpother Eve,Darkwood,3")
        .await
        .unwrap();
    assert_eq!(change_area(&mut eve).await, "Darkwood");
    until("Darkwood#3 is running", || placed(&gw, "Darkwood", 3)).await;
    until("Eve is in Darkwood#3", || {
        gw.shared()
            .view
            .lock()
            .unwrap()
            .nodes
            .iter()
            .flat_map(|n| &n.instances)
            .any(|i| i.area == "Darkwood" && i.instance == 3 && i.players == 1)
    })
    .await;
    eve.send_frame(16, b"/moveout").await.unwrap();
    assert_eq!(change_area(&mut eve).await, "Darkwood");
    until("Darkwood#3 is removed", || !placed(&gw, "Darkwood", 3)).await;
    assert!(placed(&gw, "Darkwood", 0));

    // BanPlayer sets the flag and keeps the player in the game; KickPlayer disconnects.
    eve.send_frame(16, b"/banme").await.unwrap();
    chat_line(&mut eve, "banned: 1").await;
    until("the ban reaches the account", || {
        let acc = gw.shared().accounts();
        acc.book
            .find_user("eve")
            .and_then(|id| acc.book.get(id))
            .is_some_and(|a| a.row.banned)
    })
    .await;
    eve.send_frame(16, b"/kickme").await.unwrap();
    eve.recv_until(|i| matches!(i.packet, ServerPacket::KickedPlayer(_)), WAIT)
        .await
        .unwrap();
    match tokio::time::timeout(WAIT, eve.closed()).await.unwrap() {
        CloseReason::Server { code, .. } => assert_eq!(code, CloseCode::Kicked),
        other => panic!("closed by {other:?}"),
    }
    // Banned: the next login is refused.
    let mut again = connect(addr).await;
    let mut tries = 0;
    loop {
        match again.login("eve", "secret").await {
            Err(LoginError::AlreadyLoggedIn) if tries < 100 => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(LoginError::Banned) => break,
            other => panic!("login of a banned account: {other:?}"),
        }
    }
    dm.close(CloseCode::Normal).await;
    gw.shutdown().await;
    // The ban is stored.
    let book = Store::open_dir(&data).unwrap().load_book().unwrap();
    let id = book.find_user("eve").unwrap();
    assert!(book.get(id).unwrap().row.banned);
    let _ = std::fs::remove_dir_all(&data);
}
