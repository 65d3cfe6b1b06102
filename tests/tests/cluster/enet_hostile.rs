//! Hostile RCEnet input while honest players play (issue 37): ENet 1.1 has no address
//! validation, so a flood of CONNECTs from many addresses (here 39 loopback addresses, as a
//! spoofer's would be) must not take the slots of real players; malformed datagrams are
//! dropped and counted; RC types 200–202 (the server's own "timed out", "has left",
//! "kicked" messages) sent over the wire are dropped. Throughout, honest bots on RCEnet and
//! QUIC keep getting their updates and are never disconnected, and a new RCEnet player
//! logs in in the middle of the flood.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use client::CloseCode;
use cluster_tests::{Cluster, WAIT, echo, new_enet_player, new_player, walking_bot};
use rand::{Rng as _, SeedableRng as _};
use tokio::net::UdpSocket;

/// An ENet 1.1 CONNECT (rcenet.md §9) with session value `session` and sent time `t`.
fn connect_datagram(session: u32, t: u16) -> Vec<u8> {
    let mut d = Vec::with_capacity(48);
    d.extend_from_slice(&session.to_le_bytes());
    d.extend_from_slice(&[0xFF, 0xFF]);
    d.extend_from_slice(&t.to_be_bytes());
    d.extend_from_slice(&[0x82, 0xFF, 0x00, 0x01]);
    d.extend_from_slice(&[0x00, 0x00, 0x05, 0x78]);
    for v in [0x8000u32, 254, 0, 0, 5000, 2, 2] {
        d.extend_from_slice(&v.to_be_bytes());
    }
    d.extend_from_slice(&session.to_le_bytes());
    d
}

/// `GET /metrics` of the gateway; the value of `series` (0 when absent).
async fn metric(c: &Cluster, series: &'static str) -> u64 {
    let addr = c.gw.admin_addr;
    let (_, body) = tokio::task::spawn_blocking(move || {
        cluster_tests::multiprocess::http_get(addr, "/metrics")
    })
    .await
    .unwrap()
    .expect("/metrics answers");
    body.lines()
        .find_map(|l| {
            l.strip_prefix(series)
                .and_then(|v| v.trim().parse::<f64>().ok())
        })
        .map_or(0, |v| v as u64)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_rcenet_flood_hurts_no_honest_player() {
    let c = Cluster::start("enet-hostile", &["n1"]).await;
    let enet = c.gw.enet_addr.expect("the RCEnet endpoint is on");
    let quic = c.gw.client_addr;
    let stop = Arc::new(AtomicBool::new(false));
    let mut bots = tokio::task::JoinSet::new();
    for i in 0..3 {
        let user = format!("honest{i}");
        let (conn, g) = if i < 2 {
            let (c, g, _) = new_enet_player(enet, &user).await;
            (c, g)
        } else {
            new_player(quic, &user).await
        };
        let start = (g.area.x + i as f32, g.area.y, g.area.z);
        bots.spawn(walking_bot(conn, g.runtime_id, start, stop.clone()));
    }

    eprintln!("step: the flood");
    let sent = Arc::new(AtomicU64::new(0));
    let flood_stop = Arc::new(AtomicBool::new(false));
    let mut flooders = tokio::task::JoinSet::new();
    for host in 2..41u8 {
        let (sent, flood_stop) = (sent.clone(), flood_stop.clone());
        flooders.spawn(async move {
            let ip = Ipv4Addr::new(127, 0, 0, host);
            let mut socks = Vec::new();
            for _ in 0..2 {
                if let Ok(s) = UdpSocket::bind(SocketAddr::from((ip, 0))).await {
                    socks.push(s);
                }
            }
            let mut rng = rand::rngs::SmallRng::seed_from_u64(u64::from(host));
            let mut t = 0u16;
            while !flood_stop.load(Ordering::Relaxed) {
                for s in &socks {
                    // CONNECTs that never finish their handshake...
                    let session = rng.r#gen::<u32>() & 0x7FFF;
                    t = t.wrapping_add(1);
                    let _ = s.send_to(&connect_datagram(session, t), enet).await;
                    // ...and garbage: random bytes, a cut header, a command for no peer,
                    // a fragment announcing a huge packet to a slot that is not there.
                    let len = rng.gen_range(0..64);
                    let junk: Vec<u8> = (0..len).map(|_| rng.r#gen()).collect();
                    let _ = s.send_to(&junk, enet).await;
                    let _ = s.send_to(&[0x29, 0, 0, 0, 0x80], enet).await;
                    let mut frag = vec![0x29, 0, 0, 0, 0x80, 0x05, 0, 1];
                    frag.extend_from_slice(&[0x88, 1, 0, 1, 0, 1, 0, 8]);
                    frag.extend_from_slice(&[0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0]);
                    frag.extend_from_slice(&[0x7F, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0]);
                    frag.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
                    let _ = s.send_to(&frag, enet).await;
                    sent.fetch_add(4, Ordering::Relaxed);
                }
                // About 4,000 CONNECTs a second from 39 addresses (the half-open table's
                // 256 slots sixteen times over each second) and three times as much
                // garbage: a flood far past the caps
                // that still leaves this 2-core test machine's gateway (a debug build,
                // sharing the cores with the flooders) the time to read its socket.
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
    }
    tokio::time::sleep(Duration::from_secs(2)).await;

    eprintln!("step: a new RCEnet player logs in during the flood");
    let (mut late, gl, _) = new_enet_player(enet, "latecomer").await;
    let at = (gl.area.x + 1.0, gl.area.y, gl.area.z + 1.0);
    assert!(echo(&mut late, gl.runtime_id, at, WAIT).await);

    eprintln!("step: RC types 200-202 from the wire are dropped");
    for ty in [200u8, 201, 202] {
        late.send_frame(ty, &[1, 0, 0, 0]).await.unwrap();
    }
    assert!(
        echo(&mut late, gl.runtime_id, at, WAIT).await,
        "still playing"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    flood_stop.store(true, Ordering::Relaxed);
    while flooders.join_next().await.is_some() {}
    eprintln!("{} hostile datagrams sent", sent.load(Ordering::Relaxed));

    eprintln!("step: the honest bots played through it");
    stop.store(true, Ordering::Relaxed);
    // Each bot asserts its connection stayed up.
    while let Some(r) = bots.join_next().await {
        assert!(r.unwrap() > 0, "a bot got its own updates");
    }
    assert!(
        c.online("latecomer"),
        "the latecomer was never disconnected"
    );
    assert!(metric(&c, "rc_gateway_enet_dropped_total{reason=\"malformed\"}").await > 0);
    assert!(
        metric(
            &c,
            "rc_gateway_enet_dropped_total{reason=\"reserved_type\"}"
        )
        .await
            >= 3,
        "types 200-202 counted"
    );
    let half_open = metric(&c, "rc_gateway_enet_half_open").await;
    assert!(
        half_open <= 256,
        "half-open connections capped: {half_open}"
    );
    assert!(
        metric(&c, "rc_gateway_enet_cookies_total{outcome=\"sent\"}").await > 0,
        "CONNECTs past the caps answered with stateless cookies and counted"
    );
    late.close(CloseCode::Normal).await;
}
