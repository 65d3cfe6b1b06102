//! Fuzzes the edge link's codec (`shared::internal::edge`): the length-prefixed message
//! decoder fed arbitrary bytes in two chunks, and every message it yields re-encoded.
//!
//! Invariants: nothing panics; a message that decodes re-encodes (unless too long), and
//! the re-encoded frame decodes to the same message.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shared::internal::edge::{Decoder, encode};

fuzz_target!(|data: &[u8]| {
    let cut = usize::from(data.first().copied().unwrap_or(0)).min(data.len());
    let (a, b) = data.split_at(cut);
    let mut dec = Decoder::default();
    for chunk in [a, b] {
        dec.push(chunk);
        loop {
            match dec.next_msg() {
                Ok(Some(m)) => {
                    let mut v = Vec::new();
                    if encode(&m, &mut v).is_ok() {
                        let mut again = Decoder::default();
                        again.push(&v);
                        assert_eq!(again.next_msg().ok().flatten(), Some(m));
                    }
                }
                Ok(None) | Err(_) => break,
            }
        }
    }
});
