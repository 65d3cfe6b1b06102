//! Arbitrary bytes into `handle_datagram` of a server and a client host (fresh, and with a
//! live connection so the bytes reach the per-peer paths) never panic, and the hosts keep
//! their bounds; a cookie server accepts no guessed cookie.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;

use proptest::prelude::*;
use rcenet::{Event, Host, HostConfig};

fn server_addr() -> SocketAddr {
    SocketAddr::from(([10, 0, 0, 1], 25000))
}

fn client_addr() -> SocketAddr {
    SocketAddr::from(([10, 0, 0, 2], 50000))
}

/// A connected client/server pair (lossless, instant).
fn pair() -> (Host, Host) {
    let mut c = Host::new(HostConfig::client());
    let mut s = Host::new(HostConfig {
        max_peers: 8,
        ..HostConfig::default()
    });
    c.connect(0, server_addr(), 4, 41).unwrap();
    for _ in 0..10 {
        while let Some(t) = c.poll_transmit(0) {
            s.handle_datagram(0, client_addr(), &t.data);
        }
        while let Some(t) = s.poll_transmit(0) {
            c.handle_datagram(0, server_addr(), &t.data);
        }
    }
    assert_eq!(s.connected_peers(), 1);
    assert_eq!(c.connected_peers(), 1);
    (c, s)
}

/// `body`, optionally behind a valid header for slot 0, session 41 (with or without a
/// sentTime).
fn datagram(with_header: bool, sent_time: bool, body: &[u8]) -> Vec<u8> {
    let mut d = Vec::new();
    if with_header {
        d.extend(41u32.to_le_bytes());
        d.extend(if sent_time {
            [0x80, 0, 0, 5].as_slice()
        } else {
            [0, 0].as_slice()
        });
    }
    d.extend(body);
    d
}

/// Feeds `datagrams` (each optionally behind a valid header for slot 0, session 41) and
/// services the host after each.
fn feed(h: &mut Host, from: SocketAddr, datagrams: &[(bool, bool, Vec<u8>)]) {
    let mut now = 1;
    for (with_header, sent_time, body) in datagrams {
        let d = datagram(*with_header, *sent_time, body);
        h.handle_datagram(now, from, &d);
        while let Some(t) = h.poll_transmit(now) {
            assert!(t.data.len() <= 4096);
        }
        while let Some(e) = h.poll_event() {
            if let Event::Receive { data, .. } = e {
                assert!(data.len() <= h.config().max_packet_bytes);
            }
        }
        now += 37;
        h.handle_timeout(now);
        while h.poll_transmit(now).is_some() {}
        assert!(h.half_open() <= h.config().max_half_open);
    }
}

/// Feeds `datagrams` as `feed` does, through `handle_datagram` or `handle_datagram_bytes`,
/// and returns everything the host did: events and datagrams, in order.
fn trace(
    h: &mut Host,
    from: SocketAddr,
    datagrams: &[(bool, bool, Vec<u8>)],
    bytes: bool,
) -> Vec<String> {
    let mut out = Vec::new();
    let mut now = 1;
    for (with_header, sent_time, body) in datagrams {
        let d = datagram(*with_header, *sent_time, body);
        if bytes {
            h.handle_datagram_bytes(now, from, bytes::Bytes::from(d));
        } else {
            h.handle_datagram(now, from, &d);
        }
        while let Some(t) = h.poll_transmit(now) {
            out.push(format!("tx {:?}", t.data));
        }
        while let Some(e) = h.poll_event() {
            out.push(format!("{e:?}"));
        }
        now += 37;
    }
    out
}

/// Real traffic: what a connected server sends (reliable, unreliable, fragmented).
fn server_traffic(sizes: &[(usize, bool)]) -> Vec<(bool, bool, Vec<u8>)> {
    let (_, mut s) = pair();
    let peer = s.peer_ids().next().unwrap();
    for (i, &(len, reliable)) in sizes.iter().enumerate() {
        let data = vec![u8::try_from(i % 251).unwrap(); len.max(1)];
        let _ = s.send(peer, if reliable { 1 } else { 2 }, &data, reliable);
    }
    let mut out = Vec::new();
    while let Some(t) = s.poll_transmit(1) {
        // Whole datagrams: no header to add.
        out.push((false, false, t.data.to_vec()));
    }
    out
}

fn datagrams() -> impl Strategy<Value = Vec<(bool, bool, Vec<u8>)>> {
    let body = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..64),
        // Command-shaped bodies: a known kind byte, a small channel, then noise.
        (
            1u8..12,
            0u8..6,
            proptest::collection::vec(any::<u8>(), 0..80)
        )
            .prop_map(|(k, ch, mut v)| {
                v.splice(0..0, [0x80 | k, ch]);
                v
            }),
        // The ACK of a VERIFY_CONNECT with a guessed cookie, then noise (the cookie path).
        (any::<u16>(), proptest::collection::vec(any::<u8>(), 0..40)).prop_map(|(c, mut v)| {
            let [hi, lo] = c.to_be_bytes();
            v.splice(0..0, [0x01, 0xFF, 0, 1, 0, 1, hi, lo]);
            v
        }),
    ];
    proptest::collection::vec((any::<bool>(), any::<bool>(), body), 1..12)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn fresh_hosts_never_panic(ds in datagrams()) {
        feed(&mut Host::new(HostConfig::default()), client_addr(), &ds);
        feed(&mut Host::new(HostConfig::client()), server_addr(), &ds);
    }

    #[test]
    fn cookie_servers_never_panic(ds in datagrams()) {
        // Every CONNECT is answered with a cookie; slot 0 is free.
        let cfg = HostConfig {
            max_half_open: 0,
            max_peers: 8,
            cookie_secret: [3; 16],
            ..HostConfig::default()
        };
        let mut s = Host::new(cfg);
        feed(&mut s, client_addr(), &ds);
        prop_assert_eq!(s.stats().cookie_connects, 0, "a guessed cookie was accepted");
    }

    #[test]
    fn bytes_input_delivers_exactly_what_slice_input_does(ds in datagrams()) {
        let (mut c1, mut s1) = pair();
        let (mut c2, mut s2) = pair();
        prop_assert_eq!(trace(&mut s1, client_addr(), &ds, false), trace(&mut s2, client_addr(), &ds, true));
        prop_assert_eq!(trace(&mut c1, server_addr(), &ds, false), trace(&mut c2, server_addr(), &ds, true));
    }

    #[test]
    fn bytes_input_delivers_real_traffic_as_slice_input_does(
        sizes in proptest::collection::vec((0usize..3000, any::<bool>()), 1..40)
    ) {
        let ds = server_traffic(&sizes);
        let (mut c1, _) = pair();
        let (mut c2, _) = pair();
        let a = trace(&mut c1, server_addr(), &ds, false);
        let b = trace(&mut c2, server_addr(), &ds, true);
        prop_assert!(a.iter().any(|e| e.starts_with("Receive")));
        prop_assert_eq!(a, b);
    }

    #[test]
    fn connected_hosts_never_panic(ds in datagrams()) {
        let (mut c, mut s) = pair();
        feed(&mut s, client_addr(), &ds);
        feed(&mut c, server_addr(), &ds);
    }
}
