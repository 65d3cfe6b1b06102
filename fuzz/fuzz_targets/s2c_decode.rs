//! Fuzzes every server→client decoder: `[type][payload]` from arbitrary bytes.
//!
//! Invariants: decoding never panics, and a packet that decodes encodes back to the very
//! same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shared::proto::ServerPacket;

fuzz_target!(|data: &[u8]| {
    if let Ok(packet) = ServerPacket::decode_packet(data) {
        let mut out = Vec::new();
        packet.encode(&mut out);
        assert_eq!(out, data, "re-encoding {packet:?} changed the bytes");
    }
});
