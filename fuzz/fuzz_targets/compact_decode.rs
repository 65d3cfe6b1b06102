//! Fuzzes the compact profile's decoders (`shared::compact`): the server's upstream decoder
//! and the client's snapshot decoder, fresh and holding a few real ticks as bases.
//!
//! Invariants: nothing panics; an upstream datagram that decodes re-encodes to the same
//! bytes (the format is canonical); a refused snapshot changes nothing (the next real tick
//! still decodes).
#![no_main]

use libfuzzer_sys::fuzz_target;
use shared::compact::{DownDecoder, DownEncoder, Upstream, decode_upstream, encode_ack, encode_input};
use shared::proto::StandardUpdateS2C;

fuzz_target!(|data: &[u8]| {
    if let Ok(u) = decode_upstream(data) {
        let mut again = Vec::new();
        match u {
            Upstream::Input { ack, input } => encode_input(&input, ack, &mut again),
            Upstream::Ack(a) => encode_ack(a, &mut again),
        }
        assert_eq!(again, data, "{u:?} is not canonical");
    }
    let _ = DownDecoder::new().on_datagram(data);

    // A decoder that holds ticks 0..3 as bases.
    let mut enc = DownEncoder::new();
    let mut dec = DownDecoder::new();
    let ups = |t: f32| {
        (1..6u16)
            .map(|i| StandardUpdateS2C {
                runtime_id: i,
                x: f32::from(i) + t,
                z: t,
                dest_x: 100.0,
                dest_z: 50.0,
                ..StandardUpdateS2C::default()
            })
            .collect::<Vec<_>>()
    };
    for t in 0..3 {
        for d in enc.encode(&ups(t as f32), 1200).datagrams {
            let _ = dec.on_datagram(&d);
        }
        if let Some(a) = dec.ack() {
            enc.on_ack(a);
        }
    }
    let refused = dec.on_datagram(data).is_err();
    for d in enc.encode(&ups(3.0), 1200).datagrams {
        let r = dec.on_datagram(&d);
        assert!(r.is_ok() || !refused, "a refused datagram changed the decoder: {r:?}");
    }
});
