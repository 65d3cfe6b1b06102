//! Peer-level unit tests: sentTime reconstruction, the RTT update, fragment checks, the
//! sequence-span rule, the retransmission schedule and the loss window.

use std::net::SocketAddr;

use super::*;
use crate::host::Src;
use crate::wire::Datagram;

fn peer() -> Peer {
    let id = PeerId {
        slot: 0,
        generation: 0,
    };
    let addr: SocketAddr = "10.0.0.1:25000".parse().unwrap();
    let mut p = Peer::new_client(id, addr, 41, 4, &HostConfig::client(), 0);
    let v = ConnectParams {
        outgoing_peer_id: 3,
        mtu: 1400,
        window_size: 32768,
        channel_count: 4,
        incoming_bandwidth: 0,
        outgoing_bandwidth: 0,
        throttle_interval: THROTTLE_INTERVAL,
        throttle_acceleration: THROTTLE_ACCELERATION,
        throttle_deceleration: THROTTLE_DECELERATION,
    };
    p.handle_verify_connect(0, &v).unwrap();
    p
}

#[test]
fn sent_time_reconstruction_follows_the_clock_period() {
    assert_eq!(reconstruct_time(0x1_0010, 0x0005), Some(0x1_0005));
    assert_eq!(
        reconstruct_time(0x1_0010, 0xFFF0),
        Some(0x0_FFF0),
        "previous period"
    );
    assert_eq!(reconstruct_time(0x10, 0xFFF0), None, "before time 0");
    assert_eq!(reconstruct_time(0x1_8010, 0x8005), Some(0x1_8005));
}

#[test]
fn rtt_update_and_future_acks() {
    let mut p = peer();
    assert_eq!(p.handle_ack(1000, 0xFF, 9, 900), AckResult::Removed(None));
    // Sample 100: rtt 500 - 400/8 = 450, var (450 - 100)/4 = 87.
    assert_eq!((p.rtt, p.rtt_var), (450, 87));
    // Sample 1000: var 87 - 21 = 66; rtt 450 + 550/8 = 518; var += (1000 - 518)/4 = 120 → 186.
    p.handle_ack(2000, 0xFF, 9, 1000);
    assert_eq!((p.rtt, p.rtt_var), (518, 186));
    assert_eq!(p.handle_ack(2000, 0xFF, 9, 2001), AckResult::Future);
    assert_eq!(p.last_receive, 2000);
}

#[test]
fn retransmission_doubles_and_the_peer_times_out() {
    let mut p = peer();
    let cfg = HostConfig::client();
    p.send(1, Payload::Shared(Bytes::from_static(b"hello")), true, &cfg)
        .unwrap();
    assert!(p.build(0).is_some());
    let mut resends = Vec::new();
    let mut now = 0;
    loop {
        now = now.max(p.next_timeout.min(p.timeout_deadline().unwrap_or(u64::MAX)));
        match p.check_timeouts(now) {
            Ok(n) => {
                assert_eq!(n, 1);
                resends.push(now);
                p.build(now).unwrap();
            }
            Err(()) => break,
        }
    }
    assert_eq!(resends, vec![500, 1500, 3500, 7500, 15500]);
    assert_eq!(now, 30_000, "30 s after the oldest unacknowledged send");
}

/// A peer whose RTT estimate is `rtt` ms with no variance (a LAN or loopback).
fn fast_peer(rtt: u32) -> Peer {
    let mut p = peer();
    p.rtt = rtt;
    p.rtt_var = 0;
    p
}

/// A fast peer with 40 reliable packets of 100 bytes sent at time 0.
fn forty_in_flight() -> Peer {
    let cfg = HostConfig::client();
    let mut p = fast_peer(2);
    for i in 0..40u8 {
        p.send(1, Payload::Shared(Bytes::from(vec![i; 100])), true, &cfg)
            .unwrap();
    }
    while p.build(0).is_some() {}
    p
}

#[test]
fn the_first_retransmission_timer_has_a_floor() {
    let cfg = HostConfig::client();
    assert_eq!(cfg.min_rto_ms, 100);
    let mut p = fast_peer(2);
    p.send(1, Payload::Shared(Bytes::from_static(b"hello")), true, &cfg)
        .unwrap();
    assert!(p.build(1000).is_some());
    // ENet 1.1 would resend at 1002; the floor waits 100 ms.
    assert_eq!(p.check_timeouts(1050), Ok(0));
    assert_eq!(p.next_timeout, 1100);
    assert_eq!(p.check_timeouts(1100), Ok(1));
    // ...and `min_rto_ms = 1` is ENet 1.1's own rule.
    let exact = HostConfig {
        min_rto_ms: 1,
        ..HostConfig::client()
    };
    let id = p.id;
    let mut q = Peer::new_client(id, p.addr, 41, 4, &exact, 0);
    q.state = PeerState::Connected;
    q.rtt = 2;
    q.rtt_var = 0;
    q.send(
        1,
        Payload::Shared(Bytes::from_static(b"hello")),
        true,
        &exact,
    )
    .unwrap();
    while q.build(1000).is_some() {}
    assert!(q.check_timeouts(1002).is_ok_and(|n| n >= 1));
}

#[test]
fn a_late_receiver_gets_bursts_not_the_whole_window_again() {
    let mut p = forty_in_flight();
    assert_eq!(p.sent_reliable.len(), 40);
    // First expiry: a burst of RESEND_BURST (ENet 1.1 would resend all 40), then recovery.
    assert_eq!(p.check_timeouts(100), Ok(RESEND_BURST));
    while p.build(100).is_some() {}
    // No ACK: the other 32 expired commands wait until the resent ones are due again
    // (200 ms after their resend).
    assert_eq!(p.check_timeouts(110), Ok(0));
    assert_eq!(p.check_timeouts(250), Ok(0));
    assert_eq!(p.next_timeout, 300);
    assert_eq!(p.check_timeouts(300), Ok(RESEND_BURST));
    while p.build(300).is_some() {}
    assert_eq!(p.check_timeouts(310), Ok(0));
    // An ACK shows the peer reading: the next check sends a burst at once.
    let seq = p
        .sent_reliable
        .front()
        .map(|c| c.header.reliable_seq)
        .unwrap();
    assert!(matches!(
        p.handle_ack(320, 1, seq, 300),
        AckResult::Removed(_)
    ));
    assert!(p.next_timeout <= 320);
    assert_eq!(p.check_timeouts(320), Ok(RESEND_BURST));
}

#[test]
fn a_silent_peer_in_recovery_is_still_dropped_within_enet_bounds() {
    let mut p = forty_in_flight();
    let mut now = 0;
    let dropped_at = loop {
        now = now.max(p.next_timeout.min(p.timeout_deadline().unwrap_or(u64::MAX)));
        match p.check_timeouts(now) {
            Ok(_) => while p.build(now).is_some() {},
            Err(()) => break now,
        }
        assert!(now < 60_000, "never dropped");
    };
    assert!(
        (5_000..=40_000).contains(&dropped_at),
        "dropped at {dropped_at}"
    );
}

#[test]
fn fragment_checks() {
    let mut p = peer();
    let cfg = HostConfig::client();
    let mut out = Vec::new();
    let h = CommandHeader {
        command: 0x88,
        channel: 1,
        reliable_seq: 1,
    };
    let info = |count, number, total, offset| FragmentInfo {
        start_seq: 1,
        count,
        number,
        total_length: total,
        offset,
    };
    assert_eq!(
        p.receive_fragment(&h, &info(2, 2, 10, 0), &[0; 5], &cfg, &mut out),
        Err(Fault::Command)
    );
    assert_eq!(
        p.receive_fragment(&h, &info(2, 0, 10, 8), &[0; 5], &cfg, &mut out),
        Err(Fault::Command)
    );
    assert_eq!(
        p.receive_fragment(&h, &info(11, 0, 10, 0), &[0; 5], &cfg, &mut out),
        Err(Fault::Command)
    );
    assert_eq!(
        p.receive_fragment(&h, &info(2, 0, 70_000, 0), &[0; 5], &cfg, &mut out),
        Err(Fault::Oversized)
    );
    assert_eq!(
        p.receive_fragment(&h, &info(2, 1, 10, 5), &[2; 5], &cfg, &mut out),
        Ok(true)
    );
    // Inconsistent with the first fragment seen.
    assert_eq!(
        p.receive_fragment(&h, &info(3, 0, 10, 0), &[1; 5], &cfg, &mut out),
        Err(Fault::Command)
    );
    assert_eq!(
        p.receive_fragment(&h, &info(2, 1, 10, 5), &[2; 5], &cfg, &mut out),
        Ok(false)
    );
    assert!(out.is_empty());
    assert_eq!(
        p.receive_fragment(&h, &info(2, 0, 10, 0), &[1; 5], &cfg, &mut out),
        Ok(true)
    );
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].data[..], [1, 1, 1, 1, 1, 2, 2, 2, 2, 2]);
    // The packet took sequence numbers 1 and 2: 2 is next-to-old, 3 is new.
    let h3 = CommandHeader {
        command: 0x86,
        channel: 1,
        reliable_seq: 2,
    };
    assert_eq!(
        p.receive_reliable(&h3, b"x", Src::default(), &cfg, &mut out),
        Ok(false)
    );
    let h3 = CommandHeader {
        reliable_seq: 3,
        ..h3
    };
    assert_eq!(
        p.receive_reliable(&h3, b"y", Src::default(), &cfg, &mut out),
        Ok(true)
    );
    assert_eq!(out.len(), 2);
}

#[test]
fn a_channel_never_spans_more_than_4095_unacknowledged_numbers() {
    let mut p = peer();
    let cfg = HostConfig::client();
    for _ in 0..5000 {
        p.send(1, Payload::Shared(Bytes::from_static(&[0])), true, &cfg)
            .unwrap();
    }
    let mut sent = 0;
    while let Some(b) = p.build(0) {
        sent += Datagram::decode(&b.data).unwrap().frames.len();
    }
    assert_eq!(sent, MAX_SEQ_SPAN as usize);
    // Acknowledging the oldest lets exactly one more go.
    p.remove_sent(1, 1);
    let b = p.build(1).unwrap();
    assert_eq!(Datagram::decode(&b.data).unwrap().frames.len(), 1);
    assert!(p.build(1).is_none());
}

#[test]
fn unreliable_packets_go_out_in_order_from_their_encoded_queue() {
    let cfg = HostConfig::default();
    let mut p = peer();
    // Enough to cross the queue's compaction point more than once, borrowed and shared.
    let packets: Vec<Vec<u8>> = (0..3000u32)
        .map(|i| vec![(i % 251) as u8; 1 + (i as usize * 7) % 60])
        .collect();
    for (i, data) in packets.iter().enumerate() {
        let payload = if i % 2 == 0 {
            Payload::Borrowed(data)
        } else {
            Payload::Shared(Bytes::copy_from_slice(data))
        };
        p.send(2, payload, false, &cfg).unwrap();
    }
    assert_eq!(
        p.outgoing_bytes(),
        packets.iter().map(Vec::len).sum::<usize>()
    );
    let mut got = Vec::new();
    let mut seqs = Vec::new();
    let mut late_after = None;
    while let Some(b) = p.build(1_000) {
        assert!(b.data.len() <= usize::from(p.mtu));
        for f in Datagram::decode(&b.data).unwrap().frames {
            match f.command {
                Command::SendUnreliable {
                    unreliable_seq,
                    data,
                } => {
                    assert_eq!(f.header.channel, 2);
                    seqs.push(unreliable_seq);
                    got.push(data.to_vec());
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        // A send while the queue drains goes after what is already queued.
        if late_after.is_none() && got.len() >= 1500 {
            late_after = Some(got.len());
            p.send(2, Payload::Borrowed(b"late"), false, &cfg).unwrap();
        }
    }
    let mut want = packets.clone();
    want.push(b"late".to_vec());
    assert!(late_after.is_some_and(|n| n < packets.len()));
    assert_eq!(got.len(), want.len());
    assert!(got == want, "the packets, in order");
    assert!(seqs.windows(2).all(|w| w[1] == w[0].wrapping_add(1)));
    assert_eq!(p.outgoing_bytes(), 0);
    assert!(!p.has_sendable());
}

#[test]
fn the_throttle_follows_enet_1_1() {
    let mut t = Throttle::new(true);
    // The first ACK opens an interval: its lowest RTT and highest variance become the
    // reference.
    t.after(0, 10, 2, 5_000);
    assert_eq!(
        (t.last_rtt, t.last_rtt_var, t.value),
        (10, 2, THROTTLE_SCALE)
    );
    // A round trip above last + 2·variance takes `deceleration` off, down to 0.
    t.sample(15, 2, 2);
    assert_eq!(t.value, 30);
    for _ in 0..20 {
        t.sample(100, 2, 2);
    }
    assert_eq!(t.value, 0);
    // At 0, one unreliable packet in 32 goes (ENet's counter steps by 7 mod 32).
    let sent = (0..320).filter(|_| t.pass()).count();
    assert_eq!(sent, 10);
    // Within the band: no change; below the reference: `acceleration` back, up to 32.
    t.sample(12, 2, 2);
    assert_eq!(t.value, 0);
    for _ in 0..20 {
        t.sample(5, 2, 2);
    }
    assert_eq!(t.value, THROTTLE_SCALE);
    assert_eq!((0..64).filter(|_| t.pass()).count(), 64);
    // A reference within its own variance (loopback, a LAN): everything goes.
    t.value = 0;
    t.last_rtt = 1;
    t.last_rtt_var = 1;
    t.sample(500, 2, 2);
    assert_eq!(t.value, THROTTLE_SCALE);
    // A new interval after `interval` ms takes the last one's extremes.
    t.after(1_000, 40, 9, 5_000);
    assert_eq!(t.last_rtt, 1);
    t.after(5_000, 30, 3, 5_000);
    assert_eq!((t.last_rtt, t.last_rtt_var), (10, 9));
    // Off: every packet goes whatever the value.
    let mut off = Throttle::new(false);
    off.value = 0;
    assert_eq!((0..64).filter(|_| off.pass()).count(), 64);
}

#[test]
fn the_loss_window_holds_new_commands_back_after_losses_and_grows_with_acks() {
    let cfg = HostConfig::client();
    let mut p = forty_in_flight();
    assert_eq!(p.loss_window, wire::MAX_WINDOW as usize);
    // A round of retransmissions halves it.
    assert_eq!(p.check_timeouts(100), Ok(RESEND_BURST));
    assert_eq!(p.loss_window, wire::MAX_WINDOW as usize / 2);
    // 4,000 bytes in flight: 20 new packets of 1,000 bytes would pass 1.1's 32 KiB
    // window, but only the loss window's share goes; the resent ones go all the same.
    for _ in 0..20 {
        p.send(1, Payload::Shared(Bytes::from(vec![7; 1_000])), true, &cfg)
            .unwrap();
    }
    while p.build(100).is_some() {}
    let sent_now = |fresh: bool| {
        p.sent_reliable
            .iter()
            .filter(|c| c.sent_time == 100 && (c.payload.len() == 1_000) == fresh)
            .count()
    };
    let fresh_sent = sent_now(true);
    assert_eq!(sent_now(false), RESEND_BURST);
    assert!(
        p.in_transit <= p.loss_window,
        "{} {}",
        p.in_transit,
        p.loss_window
    );
    assert!((10..20).contains(&fresh_sent), "{fresh_sent}");
    assert_eq!(p.outgoing_reliable.len(), 20 - fresh_sent);
    // Each ACK gives its command's bytes back to the window, never past 32 KiB.
    let acked: Vec<(u16, u8)> = p
        .sent_reliable
        .iter()
        .map(|c| (c.header.reliable_seq, c.header.channel))
        .collect();
    let before = p.loss_window;
    for (seq, ch) in acked {
        p.handle_ack(150, ch, seq, 100);
    }
    assert!(p.loss_window > before);
    assert!(p.loss_window <= wire::MAX_WINDOW as usize);
    // ...and what was held back goes.
    while p.build(150).is_some() {}
    assert!(p.outgoing_reliable.is_empty());
}

#[test]
fn the_loss_window_halves_each_round_down_to_the_mtu() {
    let mut p = forty_in_flight();
    let mut now = 0;
    let mut windows = Vec::new();
    for _ in 0..6 {
        now = now.max(p.next_timeout);
        assert!(p.check_timeouts(now).is_ok_and(|n| n > 0));
        windows.push(p.loss_window);
        while p.build(now).is_some() {}
    }
    assert_eq!(windows, [16_384, 8_192, 4_096, 2_048, 1_400, 1_400]);
}
