//! Fuzzes the internal link's codec (`shared::internal::codec`): the length-prefixed
//! frame decoder fed in arbitrary chunks, and the envelope decoder on arbitrary bodies.
//!
//! Invariants: nothing panics; a body that decodes to an envelope re-encodes, and the
//! re-encoded frame decodes to the same envelope.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shared::internal::codec::{FrameDecoder, decode_envelope, to_frame};

fuzz_target!(|data: &[u8]| {
    if let Ok(env) = decode_envelope(data)
        && let Ok(frame) = to_frame(&env)
    {
        let mut dec = FrameDecoder::new();
        dec.push(&frame);
        assert_eq!(dec.next_envelope().ok().flatten(), Some(env));
    }
    // The same bytes as a stream, split where the first byte says.
    let cut = usize::from(data.first().copied().unwrap_or(0)).min(data.len());
    let (a, b) = data.split_at(cut);
    let mut dec = FrameDecoder::with_max(1 << 16);
    for chunk in [a, b] {
        dec.push(chunk);
        loop {
            match dec.next_envelope() {
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
    }
});
