//! Fuzzes the `P_OpenTrading` window: chunk reassembly and the window payload parser.
//!
//! Input: a selector byte, then bytes. Even selector: the bytes are one assembled window
//! payload. Odd: the bytes are cut into up to three `P_OpenTrading` chunk packets (each a
//! u8 length, then `[35][part][parts][chunk]`), joined with `OpenTradingS2C::assemble`.
//!
//! Invariants: nothing panics; a window that parses re-encodes to the very same payload
//! and splits into chunks that assemble back to it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shared::proto::{OpenTradingS2C, ServerPacket, TradeWindow};

fn check_window(payload: &[u8]) {
    if let Ok(w) = TradeWindow::from_payload(payload) {
        assert_eq!(w.to_payload(), payload, "re-encoding {w:?} changed the bytes");
        let chunks = w.to_packets();
        assert_eq!(OpenTradingS2C::assemble(&chunks).as_deref(), Some(payload));
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    if sel % 2 == 0 {
        check_window(rest);
        return;
    }
    let mut chunks = Vec::new();
    let mut rest = rest;
    while let Some((&len, tail)) = rest.split_first() {
        let len = usize::from(len).min(tail.len());
        let (packet, next) = tail.split_at(len);
        rest = next;
        if let Ok(ServerPacket::OpenTrading(c)) = ServerPacket::decode_packet(packet) {
            chunks.push(c);
        }
        if chunks.len() == 3 {
            break;
        }
    }
    if let Some(payload) = OpenTradingS2C::assemble(&chunks) {
        let total: usize = chunks.iter().map(|c| c.chunk.0.len()).sum();
        assert_eq!(payload.len(), total);
        check_window(&payload);
    }
});
