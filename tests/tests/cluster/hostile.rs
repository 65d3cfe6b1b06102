//! A hostile client against a cluster of a gateway and two `zone-node` processes while
//! bots play (issue 7): garbage and oversize frames, datagrams that do not parse, NaN and
//! infinite floats, packets before login, a login flood and half-open handshakes are
//! refused the right way, and the bots see no error and keep getting their updates. And
//! floods (issue 23): password guessing over many connections, connections that never log
//! in, a handshake flood and a `/yell` flood cost the flooder and no honest bot.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use client::{CloseCode, CloseReason, ConnectOptions, Connection, Verify};
use cluster_tests::{Cluster, WAIT, connect, echo, new_player, walking_bot};
use gateway::hub::Metrics;
use shared::proto::StandardUpdateC2S;

async fn expect_closed(c: &Connection, want: CloseCode) {
    let r = tokio::time::timeout(WAIT, c.closed())
        .await
        .expect("closed in time");
    let got = match r {
        CloseReason::Server { code, .. } => Some(code),
        _ => None,
    };
    assert_eq!(got, Some(want), "closed with {r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_client_is_refused_while_bots_keep_playing() {
    let c = Cluster::start_with_config("hostile", &[("n1", 2), ("n2", 64)], |cfg| {
        // Its login flood comes from loopback, like its bots.
        cfg.limit_loopback = true;
        cfg.account_creations_per_hour = 100;
    })
    .await;
    let addr = c.gw.client_addr;
    let stop = Arc::new(AtomicBool::new(false));
    let mut bots = tokio::task::JoinSet::new();
    for i in 0..4 {
        let (conn, g) = new_player(addr, &format!("bot{i}")).await;
        let start = (g.area.x + i as f32, g.area.y, g.area.z);
        bots.spawn(walking_bot(conn, g.runtime_id, start, stop.clone()));
    }

    // Frames: zero length, over the limit, undecodable, in-game before login.
    let mut h = connect(addr).await;
    h.send_raw(&[0, 0]).await.unwrap();
    expect_closed(&h, CloseCode::ProtocolViolation).await;
    let mut h = connect(addr).await;
    let mut big = vec![0x28, 0x23, 16];
    big.extend(std::iter::repeat_n(b'x', 9_000));
    let _ = h.send_raw(&big).await;
    expect_closed(&h, CloseCode::ProtocolViolation).await;
    let mut h = connect(addr).await;
    h.send_frame(2, &[200]).await.unwrap();
    expect_closed(&h, CloseCode::ProtocolViolation).await;
    let mut h = connect(addr).await;
    h.send_frame(16, b"/yell before login").await.unwrap();
    expect_closed(&h, CloseCode::ProtocolViolation).await;
    // A position before login (a datagram): dropped, counted.
    let h = connect(addr).await;
    h.move_to(1.0, 1.0, 1.0, false).unwrap();

    // In the world: datagrams that do not parse, another type in a datagram, NaN and
    // infinite floats. Dropped or clamped; the hostile player stays and still plays.
    let (mut bad, g) = new_player(addr, "mallory").await;
    bad.send_raw_datagram(vec![1u8, 2, 3]).unwrap();
    bad.send_raw_datagram(vec![2u8, 0, 16, 33]).unwrap();
    for v in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, f32::MAX] {
        bad.send_update(&StandardUpdateC2S {
            dest_x: v,
            dest_z: v,
            y: v,
            x: v,
            z: v,
            is_running: 1,
            walking_backward: 0,
        })
        .unwrap();
    }
    let here = (g.area.x + 1.0, g.area.y, g.area.z + 1.0);
    assert!(
        echo(&mut bad, g.runtime_id, here, WAIT).await,
        "positions are still applied after the bad ones"
    );

    // Half-open: a client that never opens its stream, a handshake abandoned midway, and
    // UDP garbage shaped like QUIC Initial packets.
    let mut opts = ConnectOptions::new(Verify::Insecure);
    opts.send_new_client = false;
    let h = Connection::connect_with(addr, "gateway", opts)
        .await
        .unwrap();
    expect_closed(&h, CloseCode::ProtocolViolation).await;
    let abandoned = tokio::time::timeout(
        Duration::from_millis(2),
        Connection::connect(addr, "gateway", Verify::Insecure),
    )
    .await;
    drop(abandoned);
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    for i in 0..50u8 {
        let mut junk = vec![0xC0 | (i & 0x3F), 0, 0, 0, 1, 8];
        junk.extend(std::iter::repeat_n(i, 1194));
        udp.send_to(&junk, addr).unwrap();
        udp.send_to(&[i; 7], addr).unwrap();
    }

    // The gateway still takes new players, and every bot played on with no error.
    let (fresh, _) = new_player(addr, "latecomer").await;
    // Last (the throttle is per network): a login flood, closed with code 4.
    let mut h = connect(addr).await;
    let mut closed = None;
    for _ in 0..16 {
        if let Err(e) = h.login("bot0", "wrong").await
            && e.server_close_code().is_some()
        {
            closed = e.server_close_code();
            break;
        }
    }
    if closed.is_none() {
        expect_closed(&h, CloseCode::RateLimited).await;
    } else {
        assert_eq!(closed, Some(CloseCode::RateLimited));
    }

    tokio::time::sleep(Duration::from_millis(1_000)).await;
    stop.store(true, Ordering::Relaxed);
    while let Some(r) = bots.join_next().await {
        let own = r.expect("the bot did not fail");
        assert!(own > 0, "the bot kept getting its own updates");
    }
    let m = &c.gw.shared().metrics;
    assert!(Metrics::get(&m.protocol_violations) >= 4);
    assert!(Metrics::get(&m.rate_limited) >= 1);
    assert!(Metrics::get(&m.bad_datagrams) >= 2);
    fresh.close(CloseCode::Normal).await;
    bad.close(CloseCode::Normal).await;
}

/// The compact profile's decoder at the gateway (issue 22): garbage, truncated datagrams,
/// reserved bits, malformed varints, out-of-range quantised positions, an rc/1 frame on a
/// compact connection, and acknowledgements of ticks that were never sent are refused and
/// counted; the hostile player stays and still plays, and a bot beside it sees no error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_compact_client_is_refused_while_a_bot_keeps_playing() {
    use shared::compact::{Q_MAX, encode_ack};
    let c = Cluster::start("hostile-compact", &["n1"]).await;
    let addr = c.gw.client_addr;
    let stop = Arc::new(AtomicBool::new(false));
    let (conn, g) = new_player(addr, "bot").await;
    let start = (g.area.x, g.area.y, g.area.z);
    let bot = tokio::spawn(walking_bot(conn, g.runtime_id, start, stop.clone()));

    let (mut bad, g) = cluster_tests::new_player_with(addr, "eve", client::Profile::Compact).await;
    // A zigzag LEB128 varint, as the profile writes them.
    let varint = |v: i64| {
        let mut u = ((v << 1) ^ (v >> 63)) as u64;
        let mut out = Vec::new();
        loop {
            let b = (u & 0x7f) as u8;
            u >>= 7;
            if u == 0 {
                out.push(b);
                return out;
            }
            out.push(b | 0x80);
        }
    };
    let mut out_of_range = vec![0x02, 0x00];
    out_of_range.extend(varint(Q_MAX + 1));
    out_of_range.extend([0, 0, 0, 0]);
    let mut far_dest = vec![0x02, 0x00, 0, 0, 0];
    far_dest.extend(varint(2 * Q_MAX));
    far_dest.push(0);
    let mut rc_frame = Vec::new();
    cluster_tests::update(1.0, 1.0, 1.0).write_frame(&mut rc_frame);
    let refused: Vec<Vec<u8>> = vec![
        vec![0xff],
        vec![0x02],
        vec![0x02, 0x04, 0x01],
        vec![0x02, 0x80, 0, 0, 0, 0, 0],
        vec![0x02, 0x00, 0x80, 0x00, 0, 0, 0, 0],
        vec![0x02, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0, 0, 0],
        out_of_range,
        far_dest,
        vec![0x03, 0x01],
        vec![0x03, 0x01, 0x02, 0x03],
        vec![0x01, 0, 0, 0, 0, 0, 0xc9, 0x00],
        rc_frame,
    ];
    let n = refused.len() as u64;
    for d in refused {
        bad.send_raw_datagram(d).unwrap();
    }
    // Acknowledgements of ticks never sent: ignored (the next ticks are still decodable).
    for t in [60_000u16, 65_535, 12_345] {
        let mut a = Vec::new();
        encode_ack(t, &mut a);
        bad.send_raw_datagram(a).unwrap();
    }
    let here = (g.area.x + 1.0, g.area.y, g.area.z + 1.0);
    assert!(
        echo(&mut bad, g.runtime_id, here, WAIT).await,
        "the compact player's positions are still applied after the bad ones"
    );
    let m = &c.gw.shared().metrics;
    let deadline = tokio::time::Instant::now() + WAIT;
    while Metrics::get(&m.compact_bad_input) < n && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(Metrics::get(&m.compact_bad_input), n);
    assert!(Metrics::get(&m.compact_unknown_acks) >= 3);
    assert!(
        bad.close_reason().is_none(),
        "the hostile player stays connected"
    );
    assert_eq!(
        bad.stats().datagrams_dropped,
        0,
        "the gateway's snapshots all decode"
    );

    stop.store(true, Ordering::Relaxed);
    assert!(bot.await.expect("the bot did not fail") > 0);
    bad.close(CloseCode::Normal).await;
}

/// Floods while bots play (issue 23): a password-guessing attacker spread over many
/// connections gets at most `login_attempts_per_minute` answers; connections that never
/// log in are closed at the login deadline; a burst of connections beyond
/// `max_connections_per_ip` is refused, and above `retry_above` must prove its address; a
/// reconnect loop beyond `connections_per_ip_per_minute` is refused before its handshake; a
/// `/yell` flood is dropped at the flooder's own connection. Every honest bot stays
/// connected, error-free, and keeps getting its own updates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn floods_cost_the_flooder_and_no_honest_bot() {
    let c = Cluster::start_with_config("flood", &[("n1", 64)], |cfg| {
        cfg.limit_loopback = true; // everyone here, attacker and bots, is on loopback
        cfg.account_creations_per_hour = 100;
        cfg.login_attempts_per_minute = 10;
        cfg.max_connections_per_ip = 24;
        cfg.login_deadline_ms = 1_500;
        cfg.retry_above = 6;
        cfg.connections_per_ip_per_minute = 80;
        cfg.chat_per_second = 2;
        cfg.chat_burst = 8;
    })
    .await;
    let addr = c.gw.client_addr;
    let t0 = std::time::Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let mut bots = tokio::task::JoinSet::new();
    for i in 0..3 {
        let (conn, g) = new_player(addr, &format!("honest{i}")).await;
        let start = (g.area.x + i as f32, g.area.y, g.area.z);
        bots.spawn(walking_bot(conn, g.runtime_id, start, stop.clone()));
    }
    let (mut yeller, _) = new_player(addr, "yeller").await;
    // Four of the network's ten verifications are spent (three bots and the yeller).

    // 1. The /yell flood: 200 lines at once. At most the burst (8) and two a second get
    //    through; the rest are dropped at the yeller's connection, and it is told.
    for i in 0..200 {
        yeller
            .send_frame(16, format!("/yell spam {i}").as_bytes())
            .await
            .unwrap();
    }
    assert!(
        cluster_tests::chat_containing(&mut yeller, "too fast", WAIT)
            .await
            .is_some(),
        "the flooder is told"
    );

    // 2. Password guessing over 20 connections, two guesses each.
    let mut answered = 0u32;
    let mut refused = 0u32;
    for _ in 0..20 {
        let mut h = connect(addr).await;
        for _ in 0..2 {
            match h.login("honest0", "guess").await {
                Err(client::LoginError::BadPassword) => answered += 1,
                Err(e) if e.server_close_code() == Some(CloseCode::RateLimited) => {
                    refused += 1;
                    break;
                }
                Err(_) => {
                    refused += 1;
                    break;
                }
                Ok(_) => panic!("a guess logged in"),
            }
        }
        h.close(CloseCode::Normal).await;
    }
    // Ten at once and one more every six seconds, four of them spent by the honest logins.
    let refilled = u32::try_from(t0.elapsed().as_secs() / 6).unwrap_or(u32::MAX);
    assert!(
        answered + 4 <= 10 + refilled + 1,
        "at most the network's verifications were answered: {answered} in {:?}",
        t0.elapsed()
    );
    assert!(refused >= 14, "the rest were refused: {refused}");

    // 3. Connections that never log in, more of them than one network may hold: those
    //    beyond the cap are refused, those above `retry_above` prove their address first,
    //    and the rest are closed at the login deadline.
    let mut idle = tokio::task::JoinSet::new();
    for _ in 0..30 {
        idle.spawn(async move {
            match tokio::time::timeout(WAIT, Connection::connect(addr, "gateway", Verify::Insecure))
                .await
            {
                Ok(Ok(h)) => Some(tokio::time::timeout(WAIT, h.closed()).await.ok()),
                _ => None,
            }
        });
    }
    let mut deadline_closed = 0u32;
    while let Some(r) = idle.join_next().await {
        if let Ok(Some(Some(CloseReason::Server { code, .. }))) = r
            && code == CloseCode::RateLimited
        {
            deadline_closed += 1;
        }
    }
    assert!(
        deadline_closed >= 1,
        "idle connections are closed at the deadline"
    );

    // 4. A reconnect loop from another network (127.0.0.2): of 100 connections opened and
    //    closed one after the other, those beyond its 80 a minute are refused before any
    //    handshake.
    let lo2 = client::client_endpoint(std::net::SocketAddr::from(([127, 0, 0, 2], 0))).unwrap();
    let mut rate_refused = 0u32;
    for _ in 0..100 {
        let mut opts = ConnectOptions::new(Verify::Insecure);
        opts.endpoint = Some(lo2.clone());
        opts.connect_timeout = Duration::from_secs(2);
        match Connection::connect_with(addr, "gateway", opts).await {
            Ok(h) => h.close(CloseCode::Normal).await,
            Err(_) => rate_refused += 1,
        }
    }
    assert!(
        rate_refused >= 15,
        "reconnects beyond the rate: {rate_refused}"
    );

    // The honest bots played through all of it.
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    stop.store(true, Ordering::Relaxed);
    while let Some(r) = bots.join_next().await {
        let own = r.expect("an honest bot did not fail");
        assert!(own > 0, "the bot kept getting its own updates");
    }
    let m = &c.gw.shared().metrics;
    let chat_limited = Metrics::get(&m.chat_limited);
    assert!(
        chat_limited >= 150,
        "the yells were dropped at the source: {chat_limited}"
    );
    assert!(Metrics::get(&m.rate_limited) >= 14);
    assert!(Metrics::get(&m.login_deadlines) >= 1);
    assert!(
        Metrics::get(&m.refused_per_ip) >= 1,
        "beyond the cap per network"
    );
    assert!(
        Metrics::get(&m.retries) >= 1,
        "a crowd must prove its address"
    );
    assert!(
        Metrics::get(&m.refused_rate) >= 10,
        "a reconnect loop is refused at the door"
    );
    assert!(
        yeller.close_reason().is_none(),
        "the flooder itself only lost its lines"
    );
    yeller.close(CloseCode::Normal).await;
}
