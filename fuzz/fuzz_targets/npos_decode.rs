//! Fuzzes Sauerbraten's `N_POS` decoder (`shared::npos`) with arbitrary bytes.
//!
//! Invariants: decoding never panics; a message that decodes re-encodes to bytes that
//! decode to the same player values, and to the very same bytes when its `cn` and `flags` are in
//! Sauerbraten's own form (the shortest `putuint`, flags agreeing with the fields).
#![no_main]

use libfuzzer_sys::fuzz_target;
use shared::npos::{self, NposWire};

fuzz_target!(|data: &[u8]| {
    let _ = npos::decode(data);
    if let Ok((wire, used)) = NposWire::decode_prefix(data) {
        let again = wire.encode();
        let meaning = NposWire::decode(&again).map(|w| w.to_decoded());
        assert_eq!(
            meaning,
            Ok(wire.to_decoded()),
            "re-encoding {wire:?} changed its meaning"
        );
        // Sauerbraten's own form: the header (type, cn, state, flags) the encoder writes is
        // the one received; then every other field follows from the flags.
        let cn_len = putuint_len(&again[1..]);
        let header = 1 + cn_len + 1 + putuint_len(&again[2 + cn_len..]);
        if data.get(..header) == again.get(..header) {
            assert_eq!(
                &again[..],
                &data[..used],
                "canonical {wire:?} re-encoded differently"
            );
        }
    }
});

/// The length of the `putuint` at the start of `bytes` (as `getuint` reads it).
fn putuint_len(bytes: &[u8]) -> usize {
    let b = |i: usize| bytes.get(i).map_or(0, |&v| i32::from(v));
    let mut n = b(0);
    if n & 0x80 == 0 {
        return 1;
    }
    n += (b(1) << 7) - 0x80;
    if n & (1 << 14) == 0 {
        return 2;
    }
    n += (b(2) << 14) - (1 << 14);
    if n & (1 << 21) == 0 { 3 } else { 4 }
}
