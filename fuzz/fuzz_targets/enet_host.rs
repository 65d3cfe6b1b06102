//! Fuzzes the ENet 1.1 host (`rcenet::Host`) in both roles with arbitrary datagrams.
//!
//! Input: records `[flags][len][bytes; len]` until the bytes run out. Flag bit 0 puts a valid
//! header (session 41, slot 0) in front, bit 1 sets its sentTime flag, bit 2 sends the record
//! to the client host instead of the server, bit 3 advances the clock by a second (else
//! 37 ms), bit 4 addresses server slot 5 instead of 0 (a free slot: with a body starting
//! `01 ff 00 01`, the cookie-ACK check). Both hosts start with one live connection, so
//! records reach the per-peer paths; the server has one half-open slot, so a second CONNECT
//! gets a stateless cookie reply.
//!
//! Invariants: nothing panics; no datagram exceeds the MTU bound; no delivered packet exceeds
//! `max_packet_bytes`; half-open slots stay within `max_half_open`.
#![no_main]

use std::net::SocketAddr;

use libfuzzer_sys::fuzz_target;
use rcenet::{Event, Host, HostConfig};

fn service(h: &mut Host, now: u64) {
    h.handle_timeout(now);
    while let Some(t) = h.poll_transmit(now) {
        assert!(t.data.len() <= 4096);
    }
    while let Some(e) = h.poll_event() {
        if let Event::Receive { data, .. } = e {
            assert!(data.len() <= h.config().max_packet_bytes);
        }
    }
    assert!(h.half_open() <= h.config().max_half_open);
}

fuzz_target!(|data: &[u8]| {
    let server_addr = SocketAddr::from(([10, 0, 0, 1], 25000));
    let client_addr = SocketAddr::from(([10, 0, 0, 2], 50000));
    let mut c = Host::new(HostConfig::client());
    let mut s = Host::new(HostConfig {
        max_peers: 8,
        max_half_open: 1,
        cookie_secret: [1; 16],
        ..HostConfig::default()
    });
    if c.connect(0, server_addr, 4, 41).is_err() {
        return;
    }
    for _ in 0..10 {
        while let Some(t) = c.poll_transmit(0) {
            s.handle_datagram(0, client_addr, &t.data);
        }
        while let Some(t) = s.poll_transmit(0) {
            c.handle_datagram(0, server_addr, &t.data);
        }
    }
    let mut now = 1u64;
    let mut rest = data;
    while let [flags, len, tail @ ..] = rest {
        let n = usize::from(*len).min(tail.len());
        let (body, next) = tail.split_at(n);
        rest = next;
        let mut d = Vec::with_capacity(8 + n);
        if flags & 1 != 0 {
            d.extend(41u32.to_le_bytes());
            let slot: u16 = if flags & 16 != 0 { 5 } else { 0 };
            let raw = slot | if flags & 2 != 0 { 0x8000 } else { 0 };
            d.extend(raw.to_be_bytes());
            if flags & 2 != 0 {
                d.extend([0, 5]);
            }
        }
        d.extend_from_slice(body);
        let (host, from) = if flags & 4 != 0 { (&mut c, server_addr) } else { (&mut s, client_addr) };
        host.handle_datagram(now, from, &d);
        now += if flags & 8 != 0 { 1000 } else { 37 };
        service(host, now);
    }
});
