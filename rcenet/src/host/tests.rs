//! Host-level unit tests: the handshake in both roles (with the spec's bytes), the two trap
//! fixes, the intake checks, ACK rules, bounds, timers.

use std::net::SocketAddr;

use super::*;
use crate::golden::{self, hex};
use crate::wire::{CommandHeader, Datagram};

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

const SERVER: &str = "10.0.0.1:25000";
const CLIENT: &str = "10.0.0.2:50000";

fn drain(h: &mut Host, now: u64) -> Vec<Transmit> {
    std::iter::from_fn(|| h.poll_transmit(now)).collect()
}

fn events(h: &mut Host) -> Vec<Event> {
    std::iter::from_fn(|| h.poll_event()).collect()
}

/// How many of the host's pending events are unreliable packets received.
fn unreliable_received(h: &mut Host) -> usize {
    events(h)
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::Receive {
                    reliable: false,
                    ..
                }
            )
        })
        .count()
}

/// Moves datagrams both ways until neither host has anything to send.
fn pump(c: &mut Host, s: &mut Host, now: u64) {
    for _ in 0..100 {
        let a = drain(c, now);
        let b = drain(s, now);
        if a.is_empty() && b.is_empty() {
            return;
        }
        for t in a {
            s.handle_datagram(now, addr(CLIENT), &t.data);
        }
        for t in b {
            c.handle_datagram(now, addr(SERVER), &t.data);
        }
    }
    panic!("no quiescence");
}

/// A server that got the spec's CONNECT at `now`; returns the VERIFY_CONNECT datagram.
fn server_after_connect(now: u64) -> (Host, Vec<u8>) {
    let mut s = Host::new(HostConfig::default());
    s.handle_datagram(now, addr(CLIENT), &hex(golden::CONNECT));
    let out = drain(&mut s, now);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].dest, addr(CLIENT));
    (s, out[0].data.clone())
}

fn without_sent_time(d: &[u8]) -> Vec<u8> {
    [&d[..6], &d[8..]].concat()
}

fn connected_pair(now: u64) -> (Host, Host, PeerId, PeerId) {
    let mut c = Host::new(HostConfig::client());
    let mut s = Host::new(HostConfig::default());
    let cp = c.connect(now, addr(SERVER), 254, 41).unwrap();
    pump(&mut c, &mut s, now);
    let Some(Event::Connect { peer: sp, .. }) = events(&mut s).pop() else {
        panic!()
    };
    assert!(matches!(events(&mut c)[..], [Event::Connect { .. }]));
    (c, s, cp, sp)
}

#[test]
fn server_answers_the_spec_connect_with_the_spec_verify_connect() {
    let (s, verify) = server_after_connect(0x1_a671);
    assert_eq!(verify.len(), 44);
    assert_eq!(
        without_sent_time(&verify),
        without_sent_time(&hex(golden::VERIFY))
    );
    assert_eq!(
        verify[6..8],
        [0xa6, 0x71],
        "sentTime is the clock's low 16 bits"
    );
    assert_eq!(s.half_open(), 1);
    assert_eq!(s.connected_peers(), 0);
}

#[test]
fn server_answers_the_c_client_connect() {
    let mut s = Host::new(HostConfig::default());
    s.handle_datagram(5, addr(CLIENT), &hex(golden::C_CONNECT));
    let out = drain(&mut s, 5);
    let d = Datagram::decode(&out[0].data).unwrap();
    assert_eq!(d.header.session, 0x6B8B_4567);
    assert_eq!(&out[0].data[..4], &hex("67458b6b")[..]);
    assert!(matches!(d.frames[0].command, Command::VerifyConnect(p) if p.channel_count == 254));
}

#[test]
fn explicit_ack_then_data_in_one_datagram_connects_and_delivers() {
    let (mut s, _) = server_after_connect(0x1_a671);
    // The original client's first data datagram: ACK of VERIFY_CONNECT, then two packets.
    let mut d = hex("29 00 00 00 80 00 a6 80 01 ff 00 01 00 01 a6 71");
    d.extend(&hex(golden::RELIABLE_SEND)[8..]);
    s.handle_datagram(0x1_a680, addr(CLIENT), &d);
    let ev = events(&mut s);
    assert!(matches!(ev[0], Event::Connect { .. }), "{ev:?}");
    assert!(
        matches!(&ev[1], Event::Receive { channel: 1, data, reliable: true, .. } if data[..] == [0])
    );
    assert!(matches!(&ev[2], Event::Receive { data, .. } if data.len() == 38));
    assert_eq!(s.stats().implicit_verify_acks, 0);
    assert_eq!(s.half_open(), 0);
    assert_eq!(s.connected_peers(), 1);
    let p = ev[0].clone();
    let Event::Connect { peer, .. } = p else {
        panic!()
    };
    assert_eq!(
        s.peer_rtt(peer),
        Some(500 - (500 - 15) / 8),
        "RTT sample of 15 ms"
    );
    // Both reliable packets are acknowledged, on channel 1, echoing sentTime 0xa680.
    let out = drain(&mut s, 0x1_a690);
    let d = Datagram::decode(&out[0].data).unwrap();
    assert_eq!(d.header.sent_time, None);
    let acks: Vec<_> = d
        .frames
        .iter()
        .map(|f| (f.header.channel, f.command))
        .filter(|(_, c)| matches!(c, Command::Acknowledge { .. }))
        .collect();
    assert_eq!(
        acks,
        vec![
            (
                1,
                Command::Acknowledge {
                    received_seq: 1,
                    received_sent_time: 0xa680
                }
            ),
            (
                1,
                Command::Acknowledge {
                    received_seq: 2,
                    received_sent_time: 0xa680
                }
            ),
        ]
    );
}

#[test]
fn trap1_lost_verify_ack_the_next_datagram_completes_the_handshake() {
    let (mut s, _) = server_after_connect(0);
    // The ACK is lost; the server resends VERIFY_CONNECT alone after 500 ms.
    s.handle_timeout(500);
    let out = drain(&mut s, 500);
    assert_eq!(out.len(), 1);
    assert_eq!(
        out[0].data.len(),
        44,
        "nothing after a resent VERIFY_CONNECT"
    );
    assert_eq!(s.stats().retransmits, 1);
    // A 1.1 client does not ACK the duplicate; its next datagram carries data only.
    let mut d = hex("29 00 00 00 80 00 02 58");
    d.extend(&hex(golden::RELIABLE_SEND)[8..]);
    s.handle_datagram(600, addr(CLIENT), &d);
    let ev = events(&mut s);
    assert!(matches!(
        ev[..],
        [
            Event::Connect { .. },
            Event::Receive { .. },
            Event::Receive { .. }
        ]
    ));
    assert_eq!(s.stats().implicit_verify_acks, 1);
    // VERIFY_CONNECT is no longer retransmitted.
    s.handle_timeout(5000);
    for t in drain(&mut s, 5000) {
        let d = Datagram::decode(&t.data).unwrap();
        assert!(
            d.frames
                .iter()
                .all(|f| !matches!(f.command, Command::VerifyConnect(_)))
        );
    }
}

#[test]
fn trap2_resent_connect_is_answered_at_once() {
    let (mut s, _) = server_after_connect(0);
    let mut again = hex(golden::CONNECT);
    again[6..8].copy_from_slice(&[0x72, 0x49]);
    s.handle_datagram(500, addr(CLIENT), &again);
    let out = drain(&mut s, 500);
    assert_eq!(out.len(), 1, "answered without waiting for a timer");
    assert_eq!(
        without_sent_time(&out[0].data),
        without_sent_time(&hex(golden::VERIFY))
    );
    assert_eq!(s.stats().verify_resent, 1);
    assert_eq!(s.half_open(), 1, "still one slot");
}

#[test]
fn client_connect_bytes_and_ack_match_the_spec() {
    let mut c = Host::new(HostConfig::client());
    let p = c.connect(0x7055, addr(SERVER), 254, 41).unwrap();
    assert_eq!(p.slot(), 0);
    assert_eq!(c.peer_state(p), Some(PeerState::Connecting));
    let out = drain(&mut c, 0x7055);
    assert_eq!(out[0].data, hex(golden::CONNECT));
    c.handle_datagram(0x1_a680, addr(SERVER), &hex(golden::VERIFY));
    assert_eq!(
        events(&mut c),
        vec![Event::Connect {
            peer: p,
            addr: addr(SERVER)
        }]
    );
    let out = drain(&mut c, 0x1_a680);
    assert_eq!(out[0].data, hex(golden::ACK_VERIFY));
    // A duplicate VERIFY_CONNECT is an error for a 1.1 client: not acknowledged again.
    c.handle_datagram(0x1_a700, addr(SERVER), &hex(golden::VERIFY));
    assert!(drain(&mut c, 0x1_a700).is_empty());
    assert_eq!(c.stats().command_errors, 1);
    assert!(events(&mut c).is_empty());
}

#[test]
fn client_refuses_a_verify_connect_with_other_parameters() {
    let mut c = Host::new(HostConfig::client());
    let p = c.connect(0, addr(SERVER), 2, 41).unwrap();
    drain(&mut c, 0);
    c.handle_datagram(10, addr(SERVER), &hex(golden::VERIFY));
    assert_eq!(
        events(&mut c),
        vec![Event::Disconnect {
            peer: p,
            reason: DisconnectReason::Refused
        }]
    );
    assert_eq!(c.peer_state(p), None);
}

#[test]
fn intake_checks_in_order() {
    let (mut c, mut s, _cp, sp) = connected_pair(0);
    let ping = |session: &str, peer: &str| hex(&format!("{session} {peer} 0001 85ff0005"));
    let before = s.stats().clone();
    s.handle_datagram(10, addr(CLIENT), &hex("29000000 80"));
    assert_eq!(s.stats().malformed, before.malformed + 1);
    s.handle_datagram(10, addr(CLIENT), &ping("29000000", "8009"));
    assert_eq!(s.stats().unknown_peer, before.unknown_peer + 1, "free slot");
    s.handle_datagram(10, addr(CLIENT), &ping("29000000", "ffff")[..8]);
    s.handle_datagram(10, addr(CLIENT), &ping("29000000", "9388"));
    assert_eq!(
        s.stats().unknown_peer,
        before.unknown_peer + 2,
        "slot out of range"
    );
    s.handle_datagram(10, addr("10.0.0.3:50000"), &ping("29000000", "8000"));
    assert_eq!(s.stats().wrong_address, 1);
    s.handle_datagram(10, addr(CLIENT), &ping("2a000000", "8000"));
    assert_eq!(s.stats().bad_session, 1);
    assert!(drain(&mut s, 10).is_empty());
    // The port may change (NAT rebinding): the peer follows.
    s.handle_datagram(10, addr("10.0.0.2:50001"), &ping("29000000", "8000"));
    assert_eq!(s.peer_addr(sp), Some(addr("10.0.0.2:50001")));
    let out = drain(&mut s, 10);
    assert_eq!(out[0].dest, addr("10.0.0.2:50001"));
    let _ = &mut c;
}

#[test]
fn connect_rejections_are_silent() {
    let mut s = Host::new(HostConfig {
        max_peers: 1,
        ..HostConfig::default()
    });
    for channels in ["00000000", "00000100"] {
        let mut d = hex(golden::CONNECT);
        d[20..24].copy_from_slice(&hex(channels));
        s.handle_datagram(0, addr(CLIENT), &d);
    }
    assert_eq!(s.stats().connect_refused, 2);
    assert!(drain(&mut s, 0).is_empty());
    s.handle_datagram(0, addr(CLIENT), &hex(golden::CONNECT));
    assert_eq!(drain(&mut s, 0).len(), 1);
    // No free slot.
    s.handle_datagram(0, addr("10.0.0.9:1"), &hex(golden::CONNECT));
    assert!(drain(&mut s, 0).is_empty());
    assert_eq!(s.stats().connect_refused, 3);
    // Data for no peer is not a CONNECT.
    s.handle_datagram(0, addr(CLIENT), &hex("29000000 ffff 0000 85ff0001"));
    assert!(drain(&mut s, 0).is_empty());
}

#[test]
fn duplicate_of_a_connected_peer_is_refused() {
    let (mut c, mut s, _, _) = connected_pair(0);
    s.handle_datagram(100, addr(CLIENT), &hex(golden::CONNECT));
    assert_eq!(s.stats().connect_refused, 1);
    assert!(drain(&mut s, 100).is_empty());
    let _ = &mut c;
}

#[test]
fn duplicates_are_dropped_but_still_acked() {
    let (_, mut s) = {
        let (s, _) = server_after_connect(0);
        ((), s)
    };
    let d = [
        hex("29 00 00 00 80 00 00 20 01 ff 00 01 00 01 00 00"),
        hex(golden::RELIABLE_SEND)[8..].to_vec(),
    ]
    .concat();
    s.handle_datagram(40, addr(CLIENT), &d);
    s.handle_datagram(50, addr(CLIENT), &d);
    let receives = events(&mut s)
        .iter()
        .filter(|e| matches!(e, Event::Receive { .. }))
        .count();
    assert_eq!(receives, 2);
    assert_eq!(s.stats().duplicates, 2);
    let acks: usize = drain(&mut s, 60)
        .iter()
        .map(|t| {
            Datagram::decode(&t.data)
                .unwrap()
                .frames
                .iter()
                .filter(|f| f.header.kind() == kind::ACKNOWLEDGE)
                .count()
        })
        .sum();
    assert_eq!(acks, 4);
}

#[test]
fn ack_from_the_future_is_ignored() {
    let (mut s, _) = server_after_connect(1000);
    // sentTime 0x0500 > now 0x3E8 (same 64 K period): the future.
    s.handle_datagram(
        1000,
        addr(CLIENT),
        &hex("29 00 00 00 00 00 01 ff 00 01 00 01 05 00"),
    );
    assert_eq!(s.stats().future_acks, 1);
    let Some(Event::Connect { peer, .. }) = events(&mut s).pop() else {
        panic!()
    };
    assert_eq!(s.peer_rtt(peer), Some(500));
}

#[test]
fn rtt_follows_enet_formula() {
    let (mut s, _) = server_after_connect(0);
    // Sample 100 ms: var = 0 - 0; rtt = 500 - 400/8 = 450; var = (450 - 100)/4 = 87.
    s.handle_datagram(
        100,
        addr(CLIENT),
        &hex("29 00 00 00 00 00 01 ff 00 01 00 01 00 00"),
    );
    let Some(Event::Connect { peer, .. }) = events(&mut s).pop() else {
        panic!()
    };
    assert_eq!(s.peer_rtt(peer), Some(450));
    // The next command's retransmission timer is rtt + 4 var = 798.
    s.send(peer, 1, b"x", true).unwrap();
    drain(&mut s, 200);
    assert_eq!(s.poll_timeout(), Some(200 + 450 + 4 * 87));
}

#[test]
fn half_open_expires_silently_and_caps_hold() {
    let cfg = HostConfig {
        max_half_open: 3,
        max_half_open_per_ip: 2,
        evict_half_open_after_ms: None,
        cookies: false,
        ..HostConfig::default()
    };
    let mut s = Host::new(cfg);
    for (i, ip) in [
        "1.1.1.1", "1.1.1.1", "1.1.1.1", "2.2.2.2", "3.3.3.3", "4.4.4.4",
    ]
    .iter()
    .enumerate()
    {
        s.handle_datagram(
            i as u64,
            addr(&format!("{ip}:{}", 1000 + i)),
            &hex(golden::CONNECT),
        );
    }
    assert_eq!(s.half_open(), 3);
    assert_eq!(s.stats().half_open_refused_per_ip, 1);
    assert_eq!(s.stats().half_open_refused_total, 2);
    drain(&mut s, 5);
    assert_eq!(
        s.poll_timeout(),
        Some(505),
        "VERIFY_CONNECT's retransmission"
    );
    s.handle_timeout(5002);
    assert_eq!(s.half_open(), 1);
    s.handle_timeout(5003);
    assert_eq!(s.half_open(), 0);
    assert_eq!(s.stats().half_open_expired, 3);
    assert!(events(&mut s).is_empty());
}

#[test]
fn full_half_open_table_evicts_the_oldest_after_a_second() {
    let cfg = HostConfig {
        max_half_open: 2,
        cookies: false,
        ..HostConfig::default()
    };
    let mut s = Host::new(cfg);
    s.handle_datagram(0, addr("1.1.1.1:1"), &hex(golden::CONNECT));
    s.handle_datagram(0, addr("2.2.2.2:1"), &hex(golden::CONNECT));
    s.handle_datagram(500, addr("3.3.3.3:1"), &hex(golden::CONNECT));
    assert_eq!(s.stats().half_open_refused_total, 1);
    s.handle_datagram(1000, addr("4.4.4.4:1"), &hex(golden::CONNECT));
    assert_eq!(s.stats().half_open_evicted, 1);
    assert_eq!(s.half_open(), 2);
}

#[test]
fn connected_peers_get_bandwidth_limit_and_pings_and_accept_throttle_configure() {
    let (mut c, mut s, cp, sp) = connected_pair(0);
    s.handle_timeout(1000);
    let out = drain(&mut s, 1000);
    let d = Datagram::decode(&out[0].data).unwrap();
    assert!(d.frames.iter().any(|f| f.command
        == Command::BandwidthLimit {
            incoming: 0,
            outgoing: 0
        }
        && f.header.command == 0x8A
        && f.header.channel == 0xFF));
    for t in out {
        c.handle_datagram(1000, addr(SERVER), &t.data);
    }
    pump(&mut c, &mut s, 1000);
    // THROTTLE_CONFIGURE is accepted and acknowledged.
    let _ = cp;
    let pre = s.stats().command_errors;
    s.handle_datagram(
        1001,
        addr(CLIENT),
        &hex("29000000 8000 03e9 8bff0009 00001388 00000002 00000002"),
    );
    assert_eq!(s.stats().command_errors, pre);
    let out = drain(&mut s, 1002);
    let d = Datagram::decode(&out[0].data).unwrap();
    assert!(d.frames.iter().any(|f| f.command
        == Command::Acknowledge {
            received_seq: 9,
            received_sent_time: 0x03e9
        }));
    // Idle for 500 ms after the last ACK: a PING on the system channel.
    let t = s.poll_timeout().unwrap();
    s.handle_timeout(t);
    let out = drain(&mut s, t);
    let d = Datagram::decode(&out[0].data).unwrap();
    assert!(matches!(
        d.frames[..],
        [Frame {
            command: Command::Ping,
            header: CommandHeader {
                command: 0x85,
                channel: 0xFF,
                ..
            }
        }]
    ));
    assert!(d.header.sent_time.is_some());
    let _ = sp;
}

#[test]
fn fragments_match_the_spec_and_reassemble() {
    let (mut c, mut s, cp, sp) = connected_pair(0);
    s.send(sp, 1, &[0], true).unwrap();
    let big: Vec<u8> = (0..3001u32).map(|i| (i % 251) as u8).collect();
    s.send(sp, 1, &big, true).unwrap();
    let out = drain(&mut s, 10);
    let frames: Vec<_> = out
        .iter()
        .flat_map(|t| {
            let d = Datagram::decode(&t.data).unwrap();
            d.frames
                .iter()
                .map(|f| {
                    let mut v = Vec::new();
                    f.encode(&mut v);
                    v
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let frag = frames.iter().find(|f| f[0] == 0x88).unwrap();
    assert_eq!(frag[..24], hex(golden::FRAGMENT_HEAD)[..]);
    assert_eq!(frag.len(), 24 + 1368);
    assert!(out.iter().all(|t| t.data.len() <= 1400));
    for t in out {
        c.handle_datagram(10, addr(SERVER), &t.data);
    }
    let ev = events(&mut c);
    assert!(
        matches!(&ev[1], Event::Receive { peer, channel: 1, data, reliable: true } if *peer == cp && data[..] == big[..]),
        "{ev:?}"
    );
}

#[test]
fn big_unreliable_goes_as_reliable_fragments() {
    let (_c, mut s, _cp, sp) = connected_pair(0);
    s.send(sp, 2, &[7; 2000], false).unwrap();
    let out = drain(&mut s, 10);
    let d = Datagram::decode(&out[0].data).unwrap();
    assert!(d.frames.iter().all(|f| f.header.command == 0x88));
}

#[test]
fn at_most_32_commands_and_mtu_bytes_and_the_window() {
    let (_c, mut s, _cp, sp) = connected_pair(0);
    for i in 0..100u8 {
        s.send(sp, 1, &[i; 3], true).unwrap();
    }
    let out = drain(&mut s, 10);
    for t in &out {
        let d = Datagram::decode(&t.data).unwrap();
        assert!(d.frames.len() <= 32);
    }
    for _ in 0..40 {
        s.send(sp, 1, &[1; 1368], true).unwrap();
    }
    let out = drain(&mut s, 20);
    assert!(out.iter().all(|t| t.data.len() <= 1400));
    let in_flight: usize = out.iter().map(|t| t.data.len() - 8 - 6).sum();
    assert!(in_flight <= 32768, "{in_flight}");
    assert_eq!(
        out.len(),
        32768 / 1368 - 1 + 1,
        "window stops the 24th packet"
    );
}

#[test]
fn queue_full_past_the_outgoing_bound() {
    let cfg = HostConfig {
        max_outgoing_bytes: 1000,
        ..HostConfig::default()
    };
    let mut c = Host::new(HostConfig::client());
    let mut s = Host::new(cfg);
    c.connect(0, addr(SERVER), 2, 41).unwrap();
    pump(&mut c, &mut s, 0);
    let Some(Event::Connect { peer, .. }) = events(&mut s).pop() else {
        panic!()
    };
    s.send(peer, 1, &[0; 600], true).unwrap();
    assert_eq!(s.send(peer, 1, &[0; 600], true), Err(SendError::QueueFull));
    assert_eq!(s.send(peer, 7, &[0], true), Err(SendError::InvalidChannel));
    assert_eq!(s.outgoing_bytes(peer), 600);
    assert_eq!(s.stats().queue_full, 1);
}

#[test]
fn oversized_fragment_total_drops_the_peer() {
    let (_c, mut s, _cp, sp) = connected_pair(0);
    // total 0x20000 > 64 KiB.
    let d = hex("29000000 8000 0010 88010001 0001 00000004 00000000 00020000 00000000 00 00 00 00");
    let d = [
        &d[..8],
        &d[8..12],
        &hex("0001 0001 00000004 00000000 00020000 00000000 ff"),
    ]
    .concat();
    s.handle_datagram(20, addr(CLIENT), &d);
    assert_eq!(
        events(&mut s),
        vec![Event::Disconnect {
            peer: sp,
            reason: DisconnectReason::ProtocolError
        }]
    );
    assert_eq!(s.stats().oversized_packets, 1);
    let out = drain(&mut s, 20);
    assert_eq!(
        out[0].data[6], 0x44,
        "the client is told with DISCONNECT 0x44"
    );
}

#[test]
fn early_packets_past_the_reassembly_bound_drop_the_peer() {
    let cfg = HostConfig {
        max_reassembly_bytes: 4000,
        ..HostConfig::default()
    };
    let mut c = Host::new(HostConfig::client());
    let mut s = Host::new(cfg);
    c.connect(0, addr(SERVER), 2, 41).unwrap();
    pump(&mut c, &mut s, 0);
    let Some(Event::Connect { peer, .. }) = events(&mut s).pop() else {
        panic!()
    };
    // Reliable seq 2..: seq 1 never comes, so everything is held.
    for seq in 2u16..10 {
        let mut d = hex("29000000 8000 0010");
        d.extend([0x86, 1]);
        d.extend(seq.to_be_bytes());
        d.extend(1000u16.to_be_bytes());
        d.extend([0u8; 1000]);
        s.handle_datagram(20, addr(CLIENT), &d);
    }
    assert_eq!(
        events(&mut s),
        vec![Event::Disconnect {
            peer,
            reason: DisconnectReason::ProtocolError
        }]
    );
    assert_eq!(s.stats().reassembly_overflows, 1);
}

#[test]
fn graceful_disconnect_gives_each_side_one_event() {
    let (mut c, mut s, cp, sp) = connected_pair(0);
    c.disconnect(10, cp, 7);
    assert_eq!(c.peer_state(cp), Some(PeerState::Disconnecting));
    let out = drain(&mut c, 10);
    let d = Datagram::decode(&out[0].data).unwrap();
    assert_eq!(d.frames[0].header.command, 0x84);
    for t in out {
        s.handle_datagram(10, addr(CLIENT), &t.data);
    }
    assert_eq!(s.peer_state(sp), Some(PeerState::AcknowledgingDisconnect));
    pump(&mut c, &mut s, 11);
    assert_eq!(
        events(&mut s),
        vec![Event::Disconnect {
            peer: sp,
            reason: DisconnectReason::Graceful(7)
        }]
    );
    assert_eq!(
        events(&mut c),
        vec![Event::Disconnect {
            peer: cp,
            reason: DisconnectReason::Graceful(7)
        }]
    );
    assert_eq!(s.connected_peers() + c.connected_peers(), 0);
}

#[test]
fn disconnect_now_sends_0x44_and_forgets_reset_sends_nothing() {
    let (mut c, mut s, cp, sp) = connected_pair(0);
    c.disconnect_now(10, cp, 3);
    assert_eq!(c.peer_state(cp), None);
    let out = drain(&mut c, 10);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].data.len(), 14);
    assert_eq!(out[0].data[6..10], [0x44, 0xff, 0x00, 0x02]);
    assert!(events(&mut c).is_empty());
    s.handle_datagram(10, addr(CLIENT), &out[0].data);
    assert_eq!(
        events(&mut s),
        vec![Event::Disconnect {
            peer: sp,
            reason: DisconnectReason::Graceful(3)
        }]
    );
    // A reused slot never matches the old id.
    let cp2 = c.connect(20, addr(SERVER), 2, 42).unwrap();
    assert_eq!(cp2.slot(), cp.slot());
    assert_ne!(cp2, cp);
    assert_eq!(c.send(cp, 0, b"x", true), Err(SendError::NotConnected));
    drain(&mut c, 20);
    c.reset(cp2);
    assert!(drain(&mut c, 21).is_empty());
    assert!(events(&mut c).is_empty());
}

#[test]
fn silent_peer_times_out_between_5_and_40_seconds() {
    let (_c, mut s, _cp, sp) = connected_pair(0);
    let mut now = 0;
    loop {
        let Some(t) = s.poll_timeout() else {
            panic!("no timer")
        };
        now = t.max(now);
        s.handle_timeout(now);
        drain(&mut s, now);
        if let Some(e) = events(&mut s).pop() {
            assert_eq!(
                e,
                Event::Disconnect {
                    peer: sp,
                    reason: DisconnectReason::Timeout
                }
            );
            break;
        }
        assert!(now < 60_000);
    }
    // The first unacknowledged command (a PING or BANDWIDTH_LIMIT) went out at ≤ 1 s.
    assert!((5_000..=41_000).contains(&now), "{now}");
    assert_eq!(s.stats().timeouts, 1);
}

#[test]
fn unreliable_newer_only_on_the_current_reliable_number() {
    let (_c, mut s, _cp, _sp) = connected_pair(0);
    let unrel = |seq: u16, rel: u16| {
        let mut d = hex("29000000 0000");
        d.extend([0x07, 2]);
        d.extend(rel.to_be_bytes());
        d.extend(seq.to_be_bytes());
        d.extend([0, 1, 0x0e]);
        d
    };
    for (seq, rel) in [(2, 0), (1, 0), (2, 0), (3, 1), (5, 0)] {
        s.handle_datagram(30, addr(CLIENT), &unrel(seq, rel));
    }
    let n = unreliable_received(&mut s);
    assert_eq!(n, 2, "2 and 5");
    assert_eq!(s.stats().unreliable_dropped, 3);
}

// ---- Stateless cookies ----

/// The default server with a cookie key.
fn keyed() -> HostConfig {
    HostConfig {
        cookie_secret: [7; 16],
        ..HostConfig::default()
    }
}

/// A server whose half-open table (one slot, no eviction) is already taken by someone else.
fn full_server(cfg: HostConfig) -> Host {
    let mut s = Host::new(HostConfig {
        max_half_open: 1,
        evict_half_open_after_ms: None,
        ..cfg
    });
    s.handle_datagram(0, addr("10.9.9.9:1"), &hex(golden::CONNECT));
    assert_eq!(drain(&mut s, 0).len(), 1);
    assert_eq!(s.half_open(), 1);
    s
}

/// The cookie VERIFY_CONNECT for the spec's CONNECT from `from` at `now`: (slot, cookie).
fn cookie_verify(s: &mut Host, now: u64, from: &str) -> (u16, u16, Vec<u8>) {
    let before = s.stats().cookies_sent;
    s.handle_datagram(now, addr(from), &hex(golden::CONNECT));
    let out = drain(s, now);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].dest, addr(from));
    assert_eq!(s.stats().cookies_sent, before + 1);
    let d = out[0].data.clone();
    let slot = u16::from_be_bytes([d[12], d[13]]);
    let cookie = u16::from_be_bytes([d[6], d[7]]);
    (slot, cookie, d)
}

/// The original client's first datagram after VERIFY_CONNECT: its ACK (echoing `cookie`),
/// then NewClient and P_VerifyAccount, to `slot`.
fn ack_and_data(slot: u16, cookie: u16) -> Vec<u8> {
    let mut d = hex("29 00 00 00");
    d.extend((slot | 0x8000).to_be_bytes());
    d.extend([0xa6, 0x80, 0x01, 0xff, 0x00, 0x01, 0x00, 0x01]);
    d.extend(cookie.to_be_bytes());
    d.extend(&hex(golden::RELIABLE_SEND)[8..]);
    d
}

#[test]
fn cookie_verify_is_a_normal_verify_and_takes_no_slot() {
    let mut s = full_server(keyed());
    let (slot, cookie, d) = cookie_verify(&mut s, 0x1_a671, CLIENT);
    let golden = hex(golden::VERIFY);
    assert_eq!(d.len(), 44, "never larger than the 48-byte CONNECT");
    // Equal but for sentTime (the cookie) and outgoingPeerID (the offered slot).
    assert_eq!(d[..6], golden[..6]);
    assert_eq!(d[8..12], golden[8..12]);
    assert_eq!(d[14..], golden[14..]);
    assert_ne!(slot, 0, "slot 0 is the half-open one");
    assert_eq!(
        cookie,
        cookie::cookie(&[7; 16], 0x1_a671 / 5000, addr(CLIENT), 41, slot)
    );
    assert_eq!(s.half_open(), 1, "no half-open slot taken");
    assert_eq!(s.peer_ids().count(), 1, "no slot taken at all");
    assert_eq!(s.stats().half_open_refused_total, 0);
    assert!(events(&mut s).is_empty());
    // No timer either: nothing is retransmitted.
    s.handle_timeout(0x1_a671 + 600);
    assert!(
        drain(&mut s, 0x1_a671 + 600)
            .iter()
            .all(|t| t.dest != addr(CLIENT))
    );
}

#[test]
fn per_ip_cap_also_answers_with_a_cookie() {
    let mut s = Host::new(HostConfig {
        max_half_open_per_ip: 1,
        ..keyed()
    });
    s.handle_datagram(0, addr("10.0.0.2:40000"), &hex(golden::CONNECT));
    drain(&mut s, 0);
    let (slot, cookie, _) = cookie_verify(&mut s, 10, CLIENT);
    assert_eq!(s.half_open(), 1);
    assert_eq!(s.stats().half_open_refused_per_ip, 0);
    s.handle_datagram(20, addr(CLIENT), &ack_and_data(slot, cookie));
    assert_eq!(s.connected_peers(), 1);
    assert_eq!(s.half_open(), 1, "the other half-open slot is untouched");
}

#[test]
fn cookie_ack_connects_and_the_same_datagram_is_delivered() {
    let mut s = full_server(keyed());
    let (slot, cookie, _) = cookie_verify(&mut s, 0x1_a671, CLIENT);
    s.handle_datagram(0x1_a680, addr(CLIENT), &ack_and_data(slot, cookie));
    let ev = events(&mut s);
    let Event::Connect { peer, addr: a } = ev[0] else {
        panic!("{ev:?}")
    };
    assert_eq!((peer.slot(), a), (slot, addr(CLIENT)));
    assert!(
        matches!(&ev[1], Event::Receive { channel: 1, data, reliable: true, .. } if data[..] == [0])
    );
    assert!(matches!(&ev[2], Event::Receive { data, .. } if data.len() == 38));
    assert_eq!(ev.len(), 3);
    assert_eq!(s.peer_state(peer), Some(PeerState::Connected));
    assert_eq!(s.peer_rtt(peer), Some(500), "no RTT sample from a cookie");
    let st = s.stats();
    assert_eq!((st.cookie_connects, st.connects, st.bad_cookies), (1, 1, 0));
    assert_eq!(s.half_open(), 1);
    // Both packets are acknowledged, to the client's slot 0 with its session.
    let out = drain(&mut s, 0x1_a690);
    assert_eq!(out[0].dest, addr(CLIENT));
    let d = Datagram::decode(&out[0].data).unwrap();
    assert_eq!((d.header.session, d.header.peer_id), (41, 0));
    assert_eq!(
        d.frames
            .iter()
            .filter(|f| matches!(
                f.command,
                Command::Acknowledge {
                    received_sent_time: 0xa680,
                    ..
                }
            ))
            .count(),
        2
    );
    // The next system commands (a PING, then BANDWIDTH_LIMIT) follow VERIFY_CONNECT's 1.
    s.handle_timeout(0x1_a690 + 1000);
    let out = drain(&mut s, 0x1_a690 + 1000);
    let d = Datagram::decode(&out[0].data).unwrap();
    let system: Vec<_> = d
        .frames
        .iter()
        .filter(|f| f.header.channel == 0xFF)
        .map(|f| (f.header.command, f.header.reliable_seq))
        .collect();
    assert_eq!(system, vec![(0x85, 2), (0x8A, 3)]);
    // Replies use the host's MTU and the peer can send on RC's channels.
    s.send(peer, 2, &[7; 10], false).unwrap();
    s.send(peer, 1, &[1; 3001], true).unwrap();
    assert!(
        drain(&mut s, 0x1_a690 + 1001)
            .iter()
            .all(|t| t.data.len() <= 1400)
    );
}

#[test]
fn cookie_ack_in_a_6_byte_header_datagram_connects() {
    let mut s = full_server(keyed());
    let (slot, cookie, _) = cookie_verify(&mut s, 100, CLIENT);
    let mut d = hex("29 00 00 00");
    d.extend(slot.to_be_bytes());
    d.extend([0x01, 0xff, 0x00, 0x01, 0x00, 0x01]);
    d.extend(cookie.to_be_bytes());
    s.handle_datagram(120, addr(CLIENT), &d);
    assert!(matches!(events(&mut s)[..], [Event::Connect { .. }]));
    assert_eq!(s.stats().cookie_connects, 1);
}

#[test]
fn bad_cookies_are_refused() {
    // Issued at 4999 (epoch 0); valid in epochs 0 and 1, i.e. until 9999.
    type Tamper = fn(u16, u16) -> (u16, u16);
    let cases: [(&str, u64, Tamper); 5] = [
        ("wrong cookie", 5000, |s, c| (s, c ^ 1)),
        ("wrong slot", 5000, |s, c| (s + 1, c)),
        ("old epoch", 10_000, |s, c| (s, c)),
        ("much older epoch", 60_000, |s, c| (s, c)),
        ("right, at the end of the next epoch", 9_999, |s, c| (s, c)),
    ];
    for (what, at, tamper) in cases {
        let mut s = full_server(keyed());
        let (slot, cookie, _) = cookie_verify(&mut s, 4999, CLIENT);
        let (slot, cookie) = tamper(slot, cookie);
        s.handle_datagram(at, addr(CLIENT), &ack_and_data(slot, cookie));
        let ok = what.starts_with("right");
        assert_eq!(s.connected_peers(), usize::from(ok), "{what}");
        assert_eq!(s.stats().bad_cookies, u64::from(!ok), "{what}");
        assert_eq!(events(&mut s).is_empty(), !ok, "{what}");
        assert!(ok || drain(&mut s, at).is_empty(), "{what}");
    }
    // Another source port (or IP, or session) than the CONNECT's.
    let mut s = full_server(keyed());
    let (slot, cookie, _) = cookie_verify(&mut s, 10, CLIENT);
    s.handle_datagram(20, addr("10.0.0.2:50001"), &ack_and_data(slot, cookie));
    s.handle_datagram(20, addr("10.0.0.3:50000"), &ack_and_data(slot, cookie));
    let mut other_session = ack_and_data(slot, cookie);
    other_session[0] = 42;
    s.handle_datagram(20, addr(CLIENT), &other_session);
    assert_eq!(s.stats().bad_cookies, 3);
    assert_eq!(s.connected_peers(), 0);
    // Not an ACK of VERIFY_CONNECT: dropped as before, not a bad cookie.
    let mut ping = hex("29 00 00 00");
    ping.extend((slot | 0x8000).to_be_bytes());
    ping.extend(hex("0001 85ff0005"));
    s.handle_datagram(20, addr(CLIENT), &ping);
    assert_eq!(s.stats().bad_cookies, 3);
    assert_eq!(s.stats().unknown_peer, 1);
    // The right one still works.
    s.handle_datagram(30, addr(CLIENT), &ack_and_data(slot, cookie));
    assert_eq!(s.connected_peers(), 1);
}

#[test]
fn cookies_off_or_unkeyed_means_refused_and_acks_to_free_slots_are_unknown() {
    let off = HostConfig {
        cookies: false,
        ..keyed()
    };
    // The default all-zero key would let anyone forge cookies: it turns them off.
    for (cfg, key) in [(off, [7; 16]), (HostConfig::default(), [0; 16])] {
        let mut s = full_server(cfg);
        s.handle_datagram(10, addr(CLIENT), &hex(golden::CONNECT));
        assert!(drain(&mut s, 10).is_empty());
        assert_eq!(s.stats().half_open_refused_total, 1);
        assert_eq!(s.stats().cookies_sent, 0);
        for slot in 0..s.config().max_peers as u16 {
            let cookie = cookie::cookie(&key, 0, addr(CLIENT), 41, slot);
            s.handle_datagram(20, addr(CLIENT), &ack_and_data(slot, cookie));
        }
        assert_eq!(s.connected_peers(), 0);
        assert_eq!(s.stats().bad_cookies, 0);
    }
}

#[test]
fn connects_that_do_not_fit_the_stateless_defaults_are_refused() {
    let mut s = full_server(keyed());
    // mtu 1280 < 1400: the server could not know the MTU later.
    let mut small = hex(golden::CONNECT);
    small[14..16].copy_from_slice(&1280u16.to_be_bytes());
    s.handle_datagram(10, addr(CLIENT), &small);
    // A client slot other than 0 cannot be learnt from the ACK.
    let mut slot3 = hex(golden::CONNECT);
    slot3[12..14].copy_from_slice(&3u16.to_be_bytes());
    s.handle_datagram(10, addr(CLIENT), &slot3);
    assert!(drain(&mut s, 10).is_empty());
    assert_eq!(s.stats().half_open_refused_total, 2);
    assert_eq!(s.stats().cookies_sent, 0);
    // A larger mtu is fine: the peer uses ours.
    let mut big = hex(golden::CONNECT);
    big[14..16].copy_from_slice(&1500u16.to_be_bytes());
    s.handle_datagram(10, addr(CLIENT), &big);
    let out = drain(&mut s, 10);
    assert_eq!(out[0].data[14..16], 1400u16.to_be_bytes());
}

#[test]
fn cookie_replies_are_rate_bounded() {
    let mut s = full_server(HostConfig {
        max_cookie_replies_per_sec: 5,
        ..keyed()
    });
    let flood = |s: &mut Host, now: u64| {
        for i in 0..10 {
            s.handle_datagram(now, addr(&format!("10.1.0.{i}:999")), &hex(golden::CONNECT));
        }
        drain(s, now).len()
    };
    assert_eq!(flood(&mut s, 1000), 5);
    assert_eq!(s.stats().cookies_refused, 5);
    assert_eq!(s.stats().half_open_refused_total, 5);
    assert_eq!(flood(&mut s, 1400), 2, "2 tokens in 400 ms");
    assert_eq!(
        flood(&mut s, 60_000),
        5,
        "bursts stay at one second's worth"
    );
    assert_eq!(s.stats().cookies_sent, 12);
    assert_eq!(s.half_open(), 1);
}

#[test]
fn resent_connect_gets_a_fresh_cookie_for_the_same_slot() {
    let mut s = full_server(keyed());
    let (slot, c1, _) = cookie_verify(&mut s, 4000, CLIENT);
    let (slot2, c2, _) = cookie_verify(&mut s, 6000, CLIENT);
    assert_eq!(slot, slot2);
    assert_ne!(c1, c2, "another epoch");
    // Either is accepted in epoch 1.
    s.handle_datagram(6100, addr(CLIENT), &ack_and_data(slot, c1));
    assert_eq!(s.stats().cookie_connects, 1);
    // A later duplicate ACK is for a live peer now (a duplicate ACK, no second peer).
    s.handle_datagram(6200, addr(CLIENT), &ack_and_data(slot, c2));
    assert_eq!(s.connected_peers(), 1);
}

#[test]
fn our_client_connects_to_a_cookie_server() {
    let mut c = Host::new(HostConfig::client());
    // Every CONNECT is answered with a cookie.
    let mut s = Host::new(HostConfig {
        max_half_open: 0,
        ..keyed()
    });
    let cp = c.connect(0, addr(SERVER), 254, 41).unwrap();
    pump(&mut c, &mut s, 0);
    assert!(matches!(events(&mut c)[..], [Event::Connect { .. }]));
    let Some(Event::Connect { peer: sp, .. }) = events(&mut s).pop() else {
        panic!()
    };
    assert_eq!(s.stats().cookie_connects, 1);
    assert_eq!(s.half_open(), 0);
    c.send(cp, 1, &[0], true).unwrap();
    s.send(sp, 1, &[1; 3001], true).unwrap();
    s.send(sp, 2, &[2; 20], false).unwrap();
    pump(&mut c, &mut s, 10);
    assert!(
        matches!(&events(&mut s)[..], [Event::Receive { channel: 1, data, .. }] if data[..] == [0])
    );
    let got = events(&mut c);
    assert!(matches!(&got[0], Event::Receive { channel: 1, data, .. } if data.len() == 3001));
    assert!(matches!(
        &got[1],
        Event::Receive {
            channel: 2,
            reliable: false,
            ..
        }
    ));
    // Bandwidth notices and pings flow; no errors on either side; a graceful disconnect.
    for t in [1000, 1600, 2200] {
        c.handle_timeout(t);
        s.handle_timeout(t);
        pump(&mut c, &mut s, t);
    }
    assert_eq!(c.stats().command_errors + s.stats().command_errors, 0);
    c.disconnect(3000, cp, 5);
    pump(&mut c, &mut s, 3000);
    assert_eq!(
        events(&mut s),
        vec![Event::Disconnect {
            peer: sp,
            reason: DisconnectReason::Graceful(5)
        }]
    );
}

#[test]
fn a_server_may_ping_less_often_than_enet_and_still_pings() {
    let mut c = Host::new(HostConfig::client());
    let mut s = Host::new(HostConfig {
        ping_interval_ms: 2_000,
        ..HostConfig::default()
    });
    let _ = c.connect(0, addr(SERVER), 254, 41).unwrap();
    pump(&mut c, &mut s, 0);
    assert!(matches!(events(&mut s).pop(), Some(Event::Connect { .. })));
    // The handshake's BANDWIDTH_LIMIT and its ACK, then nothing in flight.
    s.handle_timeout(1000);
    pump(&mut c, &mut s, 1000);
    let pings = |s: &mut Host, now: u64| {
        s.handle_timeout(now);
        drain(s, now)
            .iter()
            .filter_map(|t| Datagram::decode(&t.data).ok())
            .flat_map(|d| d.frames.into_iter().map(|f| f.command))
            .filter(|c| *c == Command::Ping)
            .count()
    };
    assert_eq!(pings(&mut s, 1_600), 0, "not at ENet's 500 ms");
    assert_eq!(pings(&mut s, 3_100), 1, "at 2 s");
}

#[test]
fn the_scan_ends_after_the_last_peer_and_follows_it_down() {
    let cfg = HostConfig {
        max_half_open: 8,
        max_half_open_per_ip: 8,
        evict_half_open_after_ms: None,
        cookies: false,
        ..HostConfig::default()
    };
    let mut s = Host::new(cfg);
    assert_eq!(s.in_use_end, 0);
    for i in 0..3u16 {
        s.handle_datagram(
            0,
            addr(&format!("1.1.1.1:{}", 1000 + i)),
            &hex(golden::CONNECT),
        );
    }
    assert_eq!((s.half_open(), s.in_use_end), (3, 3));
    // The handshakes expire: every slot is free again and the scan is empty.
    s.handle_timeout(60_000);
    assert_eq!((s.half_open(), s.in_use_end), (0, 0));
    // A client's peer is scanned: its timers fire.
    let mut c = Host::new(HostConfig::client());
    c.connect(0, addr(SERVER), 254, 7).unwrap();
    assert_eq!(c.in_use_end, 1);
    // Nothing answers: the client's CONNECT times out through handle_timeout.
    let mut dropped = false;
    for t in (0..120_000).step_by(100) {
        let _ = drain(&mut c, t);
        c.handle_timeout(t);
        if events(&mut c)
            .iter()
            .any(|e| matches!(e, Event::Disconnect { .. }))
        {
            dropped = true;
            break;
        }
    }
    assert!(dropped, "the silent server's peer timed out");
    assert_eq!(c.in_use_end, 0);
}

#[test]
fn two_connections_of_one_client_host_count_their_own_traffic() {
    // One client host (one socket) with two peers on one server: the server tells them
    // apart by session, and each peer's counters hold its own datagrams only.
    let now = 1_000;
    let mut c = Host::new(HostConfig {
        max_peers: 2,
        ..HostConfig::client()
    });
    let mut s = Host::new(HostConfig::default());
    let a = c.connect(now, addr(SERVER), 254, 7).unwrap();
    let b = c.connect(now, addr(SERVER), 254, 8).unwrap();
    pump(&mut c, &mut s, now);
    assert_eq!(s.connected_peers(), 2);
    events(&mut c);
    events(&mut s);
    c.send(a, 1, b"\x05hello", true).unwrap();
    pump(&mut c, &mut s, now + 10);
    let ta = c.peer_traffic(a).unwrap();
    let tb = c.peer_traffic(b).unwrap();
    assert!(ta.datagrams_out > tb.datagrams_out, "{ta:?} {tb:?}");
    assert!(ta.bytes_out > tb.bytes_out);
    let st = c.stats();
    assert_eq!(ta.datagrams_in + tb.datagrams_in, st.datagrams_in);
    assert_eq!(ta.datagrams_out + tb.datagrams_out, st.datagrams_out);
    assert_eq!(ta.bytes_in + tb.bytes_in, st.bytes_in);
    let got: Vec<_> = events(&mut s)
        .into_iter()
        .filter_map(|e| match e {
            Event::Receive { data, .. } => Some(data),
            _ => None,
        })
        .collect();
    assert_eq!(got, [&b"\x05hello"[..]]);
    assert_eq!(
        c.peer_traffic(PeerId {
            slot: 9,
            generation: 0
        }),
        None
    );
}

/// Unreliable packets the server's throttle dropped while the client's ACKs came later
/// and later.
fn throttled_under_rising_round_trips(on: bool) -> (u64, usize) {
    let now = 1_000;
    let mut c = Host::new(HostConfig::client());
    let mut s = Host::new(HostConfig {
        unreliable_throttle: on,
        ..HostConfig::default()
    });
    c.connect(now, addr(SERVER), 254, 41).unwrap();
    pump(&mut c, &mut s, now);
    let Some(Event::Connect { peer: sp, .. }) = events(&mut s).pop() else {
        panic!()
    };
    events(&mut c);
    let mut t = now;
    let mut delivered = 0;
    for delay in [
        5u64, 5, 5, 5, 50, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000,
    ] {
        s.send(sp, 1, b"\x05r", true).unwrap();
        for _ in 0..8 {
            s.send(sp, 2, b"\x0eu", false).unwrap();
        }
        for d in drain(&mut s, t) {
            c.handle_datagram(t, addr(SERVER), &d.data);
        }
        delivered += unreliable_received(&mut c);
        t += delay;
        for d in drain(&mut c, t) {
            s.handle_datagram(t, addr(CLIENT), &d.data);
        }
    }
    (s.stats().unreliable_throttled, delivered)
}

#[test]
fn a_peer_whose_round_trip_rises_gets_fewer_unreliable_packets() {
    let (throttled, delivered) = throttled_under_rising_round_trips(true);
    assert!(throttled > 0, "{throttled}");
    assert_eq!(delivered as u64 + throttled, 15 * 8);
    // Off: every one goes.
    assert_eq!(throttled_under_rising_round_trips(false), (0, 15 * 8));
    assert!(
        !HostConfig::default().unreliable_throttle,
        "off unless asked"
    );
}
