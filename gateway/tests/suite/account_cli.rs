//! `gateway account create|set-dm|ban` end to end: accounts made by the operator command
//! on a stopped gateway's database log in to `gateway --standalone` through the client SDK
//! (a DM account's `/gm` is accepted), and a banned account is refused.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead as _, Read as _, Write as _};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use client::{CloseCode, Connection, Event, LoginError, NewCharacter, Verify};
use shared::proto::ChatColour;
use tokio::time::Instant;

/// Bound on every wait.
const WAIT: Duration = Duration::from_secs(20);

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gw-account-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// `gateway account ARGS --data-dir DATA`, with the tests' cheap argon2.
fn account(data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gateway"))
        .arg("account")
        .args(args)
        .arg("--data-dir")
        .arg(data)
        .env("GATEWAY_PASSWORD_HASH", "fast")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// `gateway account create USER --password-stdin ARGS`, the password on its standard input.
fn create(data: &Path, user: &str, password: &str, args: &[&str]) -> Output {
    use std::io::Write as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_gateway"))
        .args(["account", "create", user, "--password-stdin"])
        .args(args)
        .arg("--data-dir")
        .arg(data)
        .env("GATEWAY_PASSWORD_HASH", "fast")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{password}\n").as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn assert_ok(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The one-line error of a failed command.
fn error_line(out: &Output) -> String {
    assert!(!out.status.success(), "the command should fail");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err:?}");
    err
}

/// A gateway process, killed (SIGKILL) when dropped, even if the test panics.
struct Server {
    child: Child,
    client: SocketAddr,
    admin: SocketAddr,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The address after `marker` in the ready line (up to a space, comma or the end).
fn addr_after(line: &str, marker: &str) -> SocketAddr {
    line.split(marker)
        .nth(1)
        .and_then(|s| s.split([' ', ',']).next())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("no address after {marker:?} in {line:?}"))
}

/// `gateway --standalone` on ephemeral loopback ports; waits (bounded) for its ready line
/// and for its embedded node to have placed every area (`/healthz` is 200).
fn start_standalone(data: &Path) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_gateway"))
        .args(["--standalone", "--listen", "127.0.0.1:0"])
        .args([
            "--internal-listen",
            "127.0.0.1:0",
            "--admin-listen",
            "127.0.0.1:0",
        ])
        .arg("--data-dir")
        .arg(data)
        .env("GATEWAY_PASSWORD_HASH", "fast")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    // A thread reads stdout (and keeps draining it), so the wait below is bounded.
    let out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut server = Server {
        child,
        client: SocketAddr::from(([127, 0, 0, 1], 0)),
        admin: SocketAddr::from(([127, 0, 0, 1], 0)),
    };
    let deadline = std::time::Instant::now() + WAIT;
    let line = loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) if l.contains("gateway ready") => break l,
            Ok(_) => {}
            Err(e) => panic!("no ready line from the gateway: {e}"),
        }
    };
    server.client = addr_after(&line, "clients on udp ");
    server.admin = addr_after(&line, "admin on http://");
    while healthz(server.admin) != Some(200) {
        assert!(
            std::time::Instant::now() < deadline,
            "the embedded node never became ready"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

/// The status code of `GET /healthz`, or `None` when the endpoint does not answer.
fn healthz(admin: SocketAddr) -> Option<u16> {
    let mut s = std::net::TcpStream::connect_timeout(&admin, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    text.split(' ').nth(1)?.parse().ok()
}

async fn connect(addr: SocketAddr) -> Connection {
    Connection::connect(addr, "gateway", Verify::Insecure)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accounts_made_offline_log_in_with_their_flags() {
    let dir = temp_dir("e2e");
    let data = dir.join("data");
    assert_ok(&create(&data, "admin", "s3cret", &["--dm"]));
    // A password from a file (its first line).
    std::fs::create_dir_all(&dir).unwrap();
    let pw = dir.join("pw.txt");
    std::fs::write(&pw, "pw\nnot this line\n").unwrap();
    assert_ok(&account(
        &data,
        &[
            "create",
            "mallory",
            "--password-file",
            pw.to_str().unwrap(),
            "--email",
            "m@example.com",
        ],
    ));
    assert_ok(&account(&data, &["ban", "mallory"]));
    // Operator mistakes are one-line errors with a non-zero exit code; a password is never
    // an argument.
    assert!(error_line(&create(&data, "Admin", "x", &[])).contains("already exists"));
    assert!(error_line(&account(&data, &["create", "eve"])).contains("no password"));
    assert!(
        !account(&data, &["create", "eve", "secret"])
            .status
            .success()
    );
    assert!(error_line(&account(&data, &["set-dm", "nobody"])).contains("no account called"));
    let nowhere = dir.join("typo");
    assert!(error_line(&account(&nowhere, &["ban", "admin"])).contains("no database"));
    let bad = create(&nowhere, "bad name", "x", &[]);
    assert!(error_line(&bad).contains("invalid user name"));
    assert!(!nowhere.exists(), "a refused command creates nothing");

    let gw = start_standalone(&data);
    // The DM account logs in with its password, makes a character and enters the world.
    let mut c = connect(gw.client).await;
    assert!(matches!(
        c.login("admin", "wrong").await,
        Err(LoginError::BadPassword)
    ));
    assert!(c.login("admin", "s3cret").await.unwrap().is_empty());
    let cat = c.fetch_catalogue().await.unwrap();
    let t = cat.playable().next().expect("a playable template").id;
    c.create_character(&NewCharacter::new("Boss", t))
        .await
        .unwrap();
    assert_eq!(c.login("admin", "s3cret").await.unwrap().len(), 1);
    c.start_game(0).await.unwrap();
    // `/gm` is for DMs only; a DM gets the staff line back.
    c.command("gm hello").await.unwrap();
    let deadline = Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let e = tokio::time::timeout(left, c.next_event())
            .await
            .expect("the /gm line in time")
            .expect("the connection is up");
        if let Event::Chat { colour, text } = e {
            assert!(
                !text.contains("permission"),
                "the account is not a DM: {text}"
            );
            if text == "<GM> <Boss> hello" {
                assert_eq!(colour, ChatColour::System);
                break;
            }
        }
    }
    c.close(CloseCode::Normal).await;

    // The banned account is refused.
    refused_as_banned(gw.client, "mallory", "pw").await;

    // An online backup while the gateway runs; it refuses to overwrite a file.
    let copy = dir.join("backup.sqlite3");
    let backup = || {
        Command::new(env!("CARGO_BIN_EXE_gateway"))
            .arg("backup")
            .arg(&copy)
            .arg("--data-dir")
            .arg(&data)
            .output()
            .unwrap()
    };
    assert_ok(&backup());
    assert!(error_line(&backup()).contains("exists"));
    // The offline commands refuse a database a running gateway holds.
    assert!(error_line(&account(&data, &["set-dm", "mallory"])).contains("running gateway"));
    drop(gw);
    // Restored into another data directory: the accounts, flags and character are there.
    let restored = dir.join("restored");
    std::fs::create_dir_all(&restored).unwrap();
    std::fs::copy(&copy, restored.join("gateway.sqlite3")).unwrap();
    let gw = start_standalone(&restored);
    let mut c = connect(gw.client).await;
    assert_eq!(c.login("admin", "s3cret").await.unwrap().len(), 1);
    c.close(CloseCode::Normal).await;
    refused_as_banned(gw.client, "mallory", "pw").await;
    drop(gw);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A login of a banned account: its password is right, and the answer is "banned".
async fn refused_as_banned(addr: SocketAddr, user: &str, password: &str) {
    let mut m = connect(addr).await;
    assert!(matches!(
        m.login(user, password).await,
        Err(LoginError::Banned)
    ));
    m.close(CloseCode::Normal).await;
}
