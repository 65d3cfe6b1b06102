//! Fuzzes every client→server decoder: `[type][payload]` from arbitrary bytes.
//!
//! Invariants: decoding never panics, and a packet that decodes encodes back to the very
//! same bytes (so `rcwire decode` then `rcwire encode` is the identity).
#![no_main]

use libfuzzer_sys::fuzz_target;
use shared::proto::ClientPacket;

fuzz_target!(|data: &[u8]| {
    if let Ok(packet) = ClientPacket::decode_packet(data) {
        let mut out = Vec::new();
        packet.encode(&mut out);
        assert_eq!(out, data, "re-encoding {packet:?} changed the bytes");
    }
});
