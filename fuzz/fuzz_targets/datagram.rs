//! Fuzzes the datagram splitter: a datagram is accepted only if its frames parse exactly
//! to its end, and then the frames cover it byte for byte.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shared::frame::split_datagram;
use shared::proto::ClientPacket;

fuzz_target!(|data: &[u8]| {
    if let Ok(frames) = split_datagram(data, Some(14)) {
        let mut covered = 0usize;
        for frame in frames {
            assert_eq!(frame.ty, 14);
            covered += 2 + frame.len_field();
            let _ = ClientPacket::decode(frame.ty, frame.payload);
        }
        assert_eq!(covered, data.len());
    }
});
