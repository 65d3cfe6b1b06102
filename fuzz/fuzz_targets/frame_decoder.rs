//! Fuzzes the reliable-stream `FrameDecoder`: arbitrary bytes, fed in arbitrary chunks.
//!
//! Invariants: it never panics; every frame it yields is well formed (len ≥ 1 and within
//! the maximum); the bytes it consumed plus what it still buffers equal what was pushed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shared::frame::FrameDecoder;

fuzz_target!(|data: &[u8]| {
    let Some((&chunk, rest)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(chunk).max(1);
    let mut dec = FrameDecoder::with_max_frame_len(4096);
    let mut consumed = 0usize;
    let mut pushed = 0usize;
    'outer: for piece in rest.chunks(chunk) {
        dec.push(piece);
        pushed += piece.len();
        loop {
            match dec.next_frame() {
                Ok(Some(frame)) => {
                    let len = frame.len_field();
                    assert!(len >= 1 && len <= 4096);
                    consumed += 2 + len;
                }
                Ok(None) => break,
                Err(_) => break 'outer,
            }
        }
        assert_eq!(consumed + dec.buffered(), pushed);
    }
    let _ = dec.finish();
});
