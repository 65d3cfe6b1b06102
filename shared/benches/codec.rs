//! Criterion benchmarks for the wire codec hot path: `P_StandardUpdate` in both
//! directions, and a full per-recipient datagram batch (50 updates into 1200-byte
//! datagrams), and the compact profile's encoder and decoder for one tick of 60 movers.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use shared::frame::{Batcher, split_datagram};
use shared::proto::{ClientPacket, ServerPacket, StandardUpdateC2S, StandardUpdateS2C, UpdateTail};

fn c2s() -> StandardUpdateC2S {
    StandardUpdateC2S {
        dest_x: 10.0,
        dest_z: -5.5,
        y: 2.0,
        x: 9.0,
        z: -5.0,
        is_running: 1,
        walking_backward: 0,
    }
}

fn s2c(i: u16) -> StandardUpdateS2C {
    StandardUpdateS2C {
        runtime_id: i,
        x: 9.0 + f32::from(i),
        z: -5.0,
        is_running: 1,
        walking_backward: 0,
        dest_x: 10.0,
        dest_z: -5.5,
        mount: 0,
        tail: UpdateTail::None,
    }
}

fn standard_update(c: &mut Criterion) {
    let mut g = c.benchmark_group("P_StandardUpdate");
    g.throughput(Throughput::Elements(1));

    let payload = c2s().to_payload();
    g.bench_function("c2s decode_fast", |b| {
        b.iter(|| StandardUpdateC2S::decode_fast(black_box(&payload)))
    });
    g.bench_function("c2s decode via ClientPacket", |b| {
        b.iter(|| ClientPacket::decode(14, black_box(&payload)))
    });
    let u = c2s();
    g.bench_function("c2s encode frame", |b| {
        let mut out = Vec::with_capacity(64);
        b.iter(|| {
            out.clear();
            black_box(&u).write_frame(&mut out);
            black_box(out.len())
        })
    });

    let s = s2c(7);
    g.bench_function("s2c body", |b| b.iter(|| black_box(&s).body()));
    let body = s.body();
    g.bench_function("s2c push_update into batch (per update)", |b| {
        let mut batch = Batcher::new(1200);
        let mut n = 0u32;
        b.iter(|| {
            n += 1;
            if n.is_multiple_of(50) {
                batch.clear();
            }
            batch
                .push_update(black_box(&body), UpdateTail::Energy(100))
                .map(|()| batch.len())
        })
    });
    let mut framed = Vec::new();
    ServerPacket::StandardUpdate(s).encode(&mut framed);
    let s_payload = framed.get(1..).unwrap_or(&[]).to_vec();
    g.bench_function("s2c decode_fast", |b| {
        b.iter(|| StandardUpdateS2C::decode_fast(black_box(&s_payload)))
    });
    g.bench_function("s2c decode via ServerPacket", |b| {
        b.iter(|| ServerPacket::decode(14, black_box(&s_payload)))
    });
    g.finish();
}

fn batch(c: &mut Criterion) {
    let mut g = c.benchmark_group("batch");
    let updates: Vec<StandardUpdateS2C> = (1..=50).map(s2c).collect();
    g.throughput(Throughput::Elements(updates.len() as u64));
    g.bench_function("50 updates -> 1200 B datagrams (body + push)", |b| {
        let mut batch = Batcher::new(1200);
        b.iter(|| {
            batch.clear();
            for u in &updates {
                let body = black_box(u).body();
                let _ = batch.push_update(&body, u.tail);
            }
            batch.len()
        })
    });
    let mut batch_out = Batcher::new(1200);
    for u in &updates {
        let _ = batch_out.push_update(&u.body(), UpdateTail::None);
    }
    let datagrams: Vec<Vec<u8>> = batch_out.datagrams().map(<[u8]>::to_vec).collect();
    g.bench_function("split + decode 50 updates", |b| {
        b.iter(|| {
            let mut n = 0usize;
            for d in &datagrams {
                if let Ok(frames) = split_datagram(black_box(d), Some(14)) {
                    for f in frames {
                        if StandardUpdateS2C::decode_fast(f.payload).is_ok() {
                            n += 1;
                        }
                    }
                }
            }
            n
        })
    });
    g.finish();
}

/// 60 actors walking at their destinations: one tick for one compact client (the
/// gateway's work per player and broadcast), and the client's decode of it.
fn compact(c: &mut Criterion) {
    use shared::compact::{DownDecoder, DownEncoder, Entry, TickIndex};
    let tick = |t: u16| -> Vec<StandardUpdateS2C> {
        (0..60u16)
            .map(|i| {
                let a = f32::from(i) * 0.37;
                let d = 9.0 * f32::from(t % 200);
                StandardUpdateS2C {
                    runtime_id: 100 + i,
                    x: a.cos() * d,
                    z: a.sin() * d,
                    dest_x: a.cos() * 5000.0,
                    dest_z: a.sin() * 5000.0,
                    ..s2c(i)
                }
            })
            .collect()
    };
    let ticks: Vec<_> = (0..256).map(tick).collect();
    // What the gateway hands the encoder: each tick quantised once (`TickIndex`), in the
    // zone's order (cell by cell, not by RuntimeID).
    let scrambled: Vec<Vec<Entry>> = ticks
        .iter()
        .map(|u| {
            let mut e: Vec<Entry> = u.iter().map(Entry::from_update).collect();
            for i in 0..e.len() {
                e.swap(i, (i * 37 + 11) % 60);
            }
            e
        })
        .collect();
    let mut g = c.benchmark_group("compact");
    g.throughput(Throughput::Elements(60));
    let mut frames = Vec::new();
    for u in &ticks[0] {
        u.write_frame(&mut frames);
    }
    let end = u32::try_from(frames.len()).unwrap_or(u32::MAX);
    let mut index = TickIndex::new();
    let mut out = Vec::new();
    g.bench_function(
        "index a broadcast of 60 frames (gateway, once a tick)",
        |b| {
            b.iter(|| {
                index.rebuild(black_box(&frames));
                out.clear();
                index.extend_range(0, end, &mut out);
                black_box(out.len())
            });
        },
    );
    let mut enc = DownEncoder::new();
    let mut t = 0usize;
    g.bench_function("encode a tick of 60 movers (gateway)", |b| {
        b.iter(|| {
            let out = enc.encode_entries(black_box(&scrambled[t % scrambled.len()]), 1200);
            t += 1;
            // Delivered and acknowledged at once: the next tick is a delta against it.
            enc.on_ack(out.tick);
            black_box(out)
        });
    });
    // The client's side: the same ticks, each acknowledged, decoded in turn.
    let mut enc = DownEncoder::new();
    let parts: Vec<Vec<u8>> = ticks
        .iter()
        .map(|u| {
            let out = enc.encode(u, 1200);
            enc.on_ack(out.tick);
            out.datagrams.concat()
        })
        .collect();
    g.bench_function("decode a tick of 60 movers (client)", |b| {
        b.iter_batched(
            || (DownDecoder::new(), 0usize),
            |(mut dec, _)| {
                for p in &parts {
                    let _ = black_box(dec.on_datagram(p));
                }
            },
            criterion::BatchSize::LargeInput,
        );
    });
    g.finish();
}

criterion_group!(benches, standard_update, batch, compact);
criterion_main!(benches);
