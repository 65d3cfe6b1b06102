//! The update host and the maintenance lock (issue 37, item 4), on a whole cluster: the
//! client's `P_FetchUpdateFiles` gets the game's `Files.dat`; the update host serves each
//! listed file bzip2-compressed under the name the original client asks for, and nothing
//! else; locking removes a player in the game (told, `P_KickedPlayer`, code 5), refuses
//! logins, the list and downloads; unlocking opens the server again with the list read anew.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read as _, Write as _};
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use client::{CloseCode, Incoming};
use cluster_tests::{Cluster, connect, login_again, new_player};
use shared::content::updates;
use shared::proto::{ServerPacket, UpdateFileEntry};
use shared::wire::RcString;

const TOKEN: &str = "updates-admin-token-0123456789abcdef";

/// The files of a small game, as `rccontent build-updates` lays them out: each compressed
/// under its download name, and `Files.dat`.
fn build(dir: &Path, files: &[(&str, Vec<u8>)]) -> Vec<UpdateFileEntry> {
    std::fs::create_dir_all(dir).unwrap();
    let list: Vec<UpdateFileEntry> = files
        .iter()
        .map(|(name, bytes)| {
            let download = RcString(updates::download_name(name.as_bytes())).to_latin1();
            std::fs::write(dir.join(download), updates::compress(bytes).unwrap()).unwrap();
            UpdateFileEntry {
                crc: updates::checksum(bytes),
                name: RcString::from(*name),
            }
        })
        .collect();
    std::fs::write(
        dir.join(updates::FILES_DAT),
        updates::write_files_dat(&list),
    )
    .unwrap();
    list
}

/// One HTTP/1.1 request as Realm Crafter's `DownloadFile` makes it (no `Connection: close`:
/// the body is read to its `Content-Length`), with extra header lines; the status, the
/// headers and the body.
fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    extra: &str,
    body: &str,
) -> (u16, String, Vec<u8>) {
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: RC-Updater\r\nAccept: */*\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    let (head, mut rest) = loop {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "the connection closed before the headers");
        raw.extend_from_slice(&buf[..n]);
        if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break (
                String::from_utf8_lossy(&raw[..i]).into_owned(),
                raw[i + 4..].to_vec(),
            );
        }
    };
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let len: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length: ")
                .map(str::to_owned)
        })
        .expect("a Content-Length, which the original client needs")
        .trim()
        .parse()
        .unwrap();
    while rest.len() < len {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "the body ended early");
        rest.extend_from_slice(&buf[..n]);
    }
    (status, head, rest)
}

async fn get(addr: SocketAddr, path: &str) -> (u16, Vec<u8>) {
    let path = path.to_owned();
    let (status, _, body) = tokio::task::spawn_blocking(move || http(addr, "GET", &path, "", ""))
        .await
        .unwrap();
    (status, body)
}

async fn admin(addr: SocketAddr, path: &str, body: &str) -> (u16, String) {
    let (path, body) = (path.to_owned(), body.to_owned());
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    let (status, _, body) =
        tokio::task::spawn_blocking(move || http(addr, "POST", &path, &auth, &body))
            .await
            .unwrap();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// `GET /cluster` with the admin token.
async fn cluster(addr: SocketAddr) -> gateway::admin::ClusterView {
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    let (status, _, body) =
        tokio::task::spawn_blocking(move || http(addr, "GET", "/cluster", &auth, ""))
            .await
            .unwrap();
    assert_eq!(status, 200);
    serde_json::from_slice(&body).unwrap()
}

async fn metric(addr: SocketAddr, name: &str) -> f64 {
    let (status, body) = get(addr, "/metrics").await;
    assert_eq!(status, 200);
    String::from_utf8_lossy(&body)
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_update_host_and_the_maintenance_lock() {
    let big: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 253) as u8).collect();
    let files = vec![
        ("Data\\Textures\\Menu\\a b.png", big.clone()),
        (
            "Data\\Game Data\\Hosts.dat",
            b"game.example\r\nupdates.example\r\n".to_vec(),
        ),
        ("Game.exe", vec![1, 2, 3]),
    ];
    let base = std::env::temp_dir().join(format!("rc-updates-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let dir = base.join("updates");
    let list = build(&dir, &files);
    let c = Cluster::start_with_config("updates", &[("n1", 64)], |cfg| {
        cfg.update_listen = Some(SocketAddr::from(([127, 0, 0, 1], 0)));
        cfg.update_dir = Some(dir.clone());
        cfg.admin_token = TOKEN.into();
    })
    .await;
    let addr = c.gw.client_addr;
    let host = c.gw.update_addr.expect("the update host is on");
    let admin_addr = c.gw.admin_addr;

    // The list, as the original client asks for it before logging in.
    let mut conn = connect(addr).await;
    assert_eq!(conn.fetch_update_files().await.unwrap(), list);
    conn.close(CloseCode::Normal).await;

    // Each listed file under its mangled name, bzip2, decompressing to the file.
    let (status, body) = get(host, "/DATA!!TEXTURES!!MENU!!A!!!B.PNG.DAT").await;
    assert_eq!(status, 200);
    assert_eq!(&body[..3], b"BZh");
    assert_eq!(updates::decompress(&body, 1 << 20).unwrap(), big);
    let (status, body) = get(host, "/GAME.EXE.DAT").await;
    assert_eq!(status, 200);
    assert_eq!(updates::decompress(&body, 100).unwrap(), [1, 2, 3]);
    // Nothing else: the list itself, unlisted names, other paths, traversal.
    for path in [
        "/",
        "/FILES.DAT",
        "/Files.dat",
        "/NOPE.DAT",
        "/../updates/GAME.EXE.DAT",
        "/x/GAME.EXE.DAT",
        "/..%2F..%2Fetc%2Fpasswd",
        "/%2e%2e/FILES.DAT",
    ] {
        assert_eq!(get(host, path).await.0, 404, "{path}");
    }

    // A player in the game when the server is locked: told, kicked, closed with code 5.
    let (mut player, _) = new_player(addr, "locky").await;
    // Without the admin token, no lock.
    let (status, _, _) =
        tokio::task::spawn_blocking(move || http(admin_addr, "POST", "/lock", "", ""))
            .await
            .unwrap();
    assert_eq!(status, 401);
    let (status, answer) = admin(admin_addr, "/lock", r#"{"reason":"patch 1.2"}"#).await;
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("1 players removed"), "{answer}");
    let mut told = false;
    let mut kicked = false;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let reason = loop {
        match tokio::time::timeout_at(deadline, player.recv())
            .await
            .expect("closed in time")
        {
            Ok(Incoming {
                packet: ServerPacket::ChatMessage(m),
                ..
            }) => {
                told |= m
                    .text
                    .to_latin1()
                    .contains("locked for maintenance (patch 1.2)");
            }
            Ok(p) => kicked |= matches!(p.packet, ServerPacket::KickedPlayer(_)),
            Err(e) => break e,
        }
    };
    assert!(told && kicked, "told {told}, kicked {kicked}");
    assert_eq!(
        reason.server_close_code(),
        Some(CloseCode::Unavailable),
        "{reason}"
    );

    // While locked: no login, no list, no download; /cluster and the metrics say so.
    let mut conn = connect(addr).await;
    let e = conn.login("locky", "secret").await.unwrap_err();
    assert_eq!(e.server_close_code(), Some(CloseCode::Unavailable), "{e}");
    let mut conn = connect(addr).await;
    let e = conn.fetch_update_files().await.unwrap_err();
    assert_eq!(e.server_close_code(), Some(CloseCode::Unavailable), "{e}");
    assert_eq!(get(host, "/GAME.EXE.DAT").await.0, 503);
    let v = cluster(admin_addr).await;
    assert!(v.locked);
    assert_eq!(v.lock_reason.as_deref(), Some("patch 1.2"));
    assert_eq!(v.update_files, 3);
    assert!((metric(admin_addr, "rc_gateway_locked").await - 1.0).abs() < f64::EPSILON);
    assert!(metric(admin_addr, "rc_gateway_lock_refusals_total").await >= 3.0);

    // The operator uploads a new version meanwhile; unlocking reads the list again.
    let mut files = files;
    files[2].1 = vec![4, 5, 6, 7];
    let list = build(&dir, &files);
    let (status, answer) = admin(admin_addr, "/unlock", "").await;
    assert_eq!(status, 200, "{answer}");
    assert!(!cluster(admin_addr).await.locked);
    let (status, body) = get(host, "/GAME.EXE.DAT").await;
    assert_eq!(status, 200);
    assert_eq!(updates::decompress(&body, 100).unwrap(), [4, 5, 6, 7]);
    let mut conn = connect(addr).await;
    assert_eq!(conn.fetch_update_files().await.unwrap(), list);
    let (_player, _) = login_again(addr, "locky").await;
    assert!((metric(admin_addr, "rc_gateway_locked").await).abs() < f64::EPSILON);
    let _ = std::fs::remove_dir_all(&base);
}
