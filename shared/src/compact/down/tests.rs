//! Golden vectors and properties of the snapshot codec: exactness after loss, parts,
//! precision, and hostile datagrams.

use super::*;
use crate::compact::QUANTUM;
use crate::proto::UpdateTail;
use proptest::prelude::*;

fn upd(rid: u16, x: f32, z: f32, dx: f32, dz: f32) -> StandardUpdateS2C {
    StandardUpdateS2C {
        runtime_id: rid,
        x,
        z,
        dest_x: dx,
        dest_z: dz,
        ..StandardUpdateS2C::default()
    }
}

#[test]
fn golden_full_then_unchanged() {
    let mut enc = DownEncoder::new();
    let mut dec = DownDecoder::new();
    let t0 = enc.encode(&[upd(5, 1.0, 2.0, 1.0, 2.0)], 1200);
    assert_eq!(
        t0.datagrams,
        vec![vec![
            0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc9, 0x06, 0x84, 0x40, 0x30, 0x00
        ]]
    );
    let e = dec.on_datagram(&t0.datagrams[0]).unwrap();
    assert_eq!(e, vec![Entry::from_update(&upd(5, 1.0, 2.0, 1.0, 2.0))]);
    assert_eq!(dec.ack(), Some(0));
    assert_eq!(enc.on_ack(0), AckOutcome::Accepted);
    let t1 = enc.encode(&[upd(5, 1.0, 2.0, 1.0, 2.0)], 1200);
    // Tick 1 against tick 0: count 1, RuntimeID 5, delta, unchanged: 13 bits.
    assert_eq!(
        t1.datagrams,
        vec![vec![0x01, 0x01, 0x00, 0x01, 0x00, 0x00, 0xc9, 0x00]]
    );
    assert_eq!(dec.on_datagram(&t1.datagrams[0]).unwrap(), e);
    assert_eq!(enc.on_ack(0), AckOutcome::Stale);
    assert_eq!(enc.on_ack(77), AckOutcome::Unknown);
}

#[test]
fn walking_at_the_destination_costs_about_two_bytes() {
    // 60 actors running diagonally at Realm Crafter's speed (3 units a 33 ms tick, so 9 a
    // 100 ms broadcast), each toward its own far destination.
    let mut enc = DownEncoder::new();
    let mut dec = DownDecoder::new();
    let mut sizes = Vec::new();
    for t in 0..20u16 {
        let ups: Vec<_> = (0..60u16)
            .map(|i| {
                let a = f32::from(i) * 0.37;
                let (c, s) = (a.cos(), a.sin());
                let d = 9.0 * f32::from(t);
                let step = d / (c.abs() + s.abs());
                upd(100 + i, c * step, s * step, c * 5000.0, s * 5000.0)
            })
            .collect();
        let out = enc.encode(&ups, 1200);
        for d in &out.datagrams {
            dec.on_datagram(d).unwrap();
            sizes.push(d.len());
        }
        if let Some(a) = dec.ack() {
            enc.on_ack(a);
        }
    }
    let steady = sizes.last().copied().unwrap_or(0);
    assert!(steady <= 6 + 60 * 2 + 4, "{sizes:?}");
}

#[test]
fn tails_mounts_and_motion_flags_round_trip() {
    let mut enc = DownEncoder::new();
    let mut dec = DownDecoder::new();
    let mut a = upd(1, 10.0, 10.0, 20.0, 10.0);
    let mut b = upd(2, -5.0, 3.0, -5.0, 3.0);
    for t in 0..6 {
        a.tail = UpdateTail::Energy(100 - t);
        a.is_running = (t % 2) as u8;
        b.tail = UpdateTail::FlyY(f32::from(t) * 1.5);
        b.mount = if t > 2 { 9 } else { 0 };
        b.walking_backward = u8::from(t == 4);
        let out = enc.encode(&[a, b], 1200);
        let got = dec.on_datagram(&out.datagrams[0]).unwrap();
        assert_eq!(got, vec![Entry::from_update(&a), Entry::from_update(&b)]);
        enc.on_ack(dec.ack().unwrap());
        a.x += 1.0;
    }
}

#[test]
fn hostile_snapshots_are_refused_and_change_nothing() {
    let mut dec = DownDecoder::new();
    // Truncated header, wrong kind, part index beyond the count.
    assert_eq!(dec.on_datagram(&[1, 0, 0]), Err(CompactError::Truncated));
    assert_eq!(
        dec.on_datagram(&[2, 0, 0, 0, 0, 0, 0]),
        Err(CompactError::UnknownKind(2))
    );
    assert_eq!(
        dec.on_datagram(&[1, 0, 0, 0, 0x21, 0, 0]),
        Err(CompactError::BadPart { index: 2, count: 2 })
    );
    // A base that was never sent.
    assert_eq!(
        dec.on_datagram(&[1, 9, 0, 3, 0, 0, 0xc9, 0x00]),
        Err(CompactError::UnknownBase(6))
    );
    assert_eq!(
        dec.on_datagram(&[1, 9, 0, 200, 0, 0, 0xc9, 0x00]),
        Err(CompactError::BadBaseAge(200))
    );
    // A delta entry in a tick without a base.
    assert_eq!(
        dec.on_datagram(&[1, 9, 0, 0, 0, 0, 0xc9, 0x00]),
        Err(CompactError::MissingBaseEntry(5))
    );
    // A full entry whose x is beyond the world: x = EG12(zigzag(Q_MAX + 1)).
    let mut w = BitWriter::with_prefix(vec![1, 0, 0, 0, 0, 0]);
    w.eg(1, 3);
    w.eg(0, 0);
    w.bit(true);
    w.eg(zigzag(Q_MAX + 1), 12);
    let bad = w.finish();
    assert_eq!(
        dec.on_datagram(&bad),
        Err(CompactError::OutOfRange(Q_MAX + 1))
    );
    // Trailing bytes after a valid tick.
    let mut enc = DownEncoder::new();
    let mut ok = enc
        .encode(&[upd(5, 1.0, 2.0, 1.0, 2.0)], 1200)
        .datagrams
        .remove(0);
    ok.push(0);
    assert_eq!(dec.on_datagram(&ok), Err(CompactError::Trailing));
    // None of that changed anything: the valid tick still decodes, then it is stale.
    ok.pop();
    assert!(dec.on_datagram(&ok).is_ok());
    assert_eq!(dec.ack(), Some(0));
    assert_eq!(dec.on_datagram(&ok), Err(CompactError::Part));
}

#[test]
fn a_step_toward_a_destination_without_direction_is_refused() {
    let mut enc = DownEncoder::new();
    let mut dec = DownDecoder::new();
    let t0 = enc.encode(&[upd(5, 1.0, 2.0, 1.0, 2.0)], 1200);
    dec.on_datagram(&t0.datagrams[0]).unwrap();
    // Tick 1, base age 1: RuntimeID 5, delta, mode 2 (toward), step 3.
    let mut w = BitWriter::with_prefix(vec![1, 1, 0, 1, 0, 0]);
    w.eg(1, 3);
    w.eg(5, 0);
    w.bit(false);
    w.put(2, 2);
    w.eg(3, 0);
    w.eg(0, 0);
    w.eg(0, 0);
    w.bit(false);
    assert_eq!(dec.on_datagram(&w.finish()), Err(CompactError::NoDirection));
}

/// One actor's motion script for the properties.
#[derive(Debug, Clone)]
struct Walker {
    rid: u16,
    x: f32,
    z: f32,
    dx: f32,
    dz: f32,
    speed: f32,
}

fn walkers() -> impl Strategy<Value = Vec<Walker>> {
    prop::collection::btree_map(
        1u16..400,
        (
            -2000f32..2000.0,
            -2000f32..2000.0,
            -2000f32..2000.0,
            -2000f32..2000.0,
            0f32..12.0,
        ),
        1..80,
    )
    .prop_map(|m| {
        m.into_iter()
            .map(|(rid, (x, z, dx, dz, speed))| Walker {
                rid,
                x,
                z,
                dx,
                dz,
                speed,
            })
            .collect()
    })
}

/// Moves each walker one broadcast's worth toward its destination (Manhattan-normalised,
/// as the zone does), with jitter and occasional new destinations.
fn step(ws: &mut [Walker], rng: &mut u64) -> Vec<StandardUpdateS2C> {
    let mut next = || {
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        *rng
    };
    let mut out = Vec::new();
    for w in ws.iter_mut() {
        let (ddx, ddz) = (w.dx - w.x, w.dz - w.z);
        let m = ddx.abs() + ddz.abs();
        if m > w.speed {
            w.x += ddx / m * w.speed;
            w.z += ddz / m * w.speed;
        } else {
            w.x = w.dx;
            w.z = w.dz;
        }
        match next() % 10 {
            0 => {
                w.dx = (next() % 4000) as f32 - 2000.0;
                w.dz = (next() % 4000) as f32 - 2000.0;
            }
            1 => w.x += (next() % 100) as f32 * 0.01 - 0.5,
            _ => {}
        }
        // Some actors are not in every tick (the mid band, leaving view).
        if next() % 7 != 0 {
            out.push(StandardUpdateS2C {
                runtime_id: w.rid,
                x: w.x,
                z: w.z,
                dest_x: w.dx,
                dest_z: w.dz,
                is_running: (next() % 3 == 0).into(),
                walking_backward: 0,
                mount: 0,
                tail: if w.rid == 1 {
                    UpdateTail::Energy((next() % 100) as u16)
                } else {
                    UpdateTail::None
                },
            });
        }
    }
    // The zone lists actors cell by cell, not by RuntimeID, and may repeat one (the last
    // wins): shuffle, and now and then repeat an actor somewhere with another position.
    for i in (1..out.len()).rev() {
        out.swap(i, (next() % (i as u64 + 1)) as usize);
    }
    if !out.is_empty() && next() % 5 == 0 {
        let i = (next() % out.len() as u64) as usize;
        let mut again = out[i];
        again.x += 0.75;
        let at = (next() % (out.len() as u64 + 1)) as usize;
        out.insert(at, again);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// The promise of the profile: whatever datagrams and acknowledgements are lost, every
    /// datagram that arrives decodes, and what it says is exactly the server's quantised
    /// state (so within 1/16 unit of the truth) — no error outlives the next delivery.
    #[test]
    fn every_delivered_datagram_is_exact_whatever_was_lost(
        mut ws in walkers(),
        seed in 1u64..u64::MAX,
        loss in 0u64..60,
        ack_loss in 0u64..80,
        max in prop::sample::select(vec![60usize, 120, 300, 1200]),
        ticks in 5usize..60,
    ) {
        let mut rng = seed;
        let mut enc = DownEncoder::new();
        let mut dec = DownDecoder::new();
        let roll = |rng: &mut u64| {
            *rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (*rng >> 33) % 100
        };
        for _ in 0..ticks {
            let ups = step(&mut ws, &mut rng);
            let out = enc.encode(&ups, max);
            prop_assert!(out.datagrams.len() <= MAX_PARTS);
            let mut sent: Vec<Entry> = Vec::new();
            for d in &out.datagrams {
                prop_assert!(d.len() <= max);
                if roll(&mut rng) < loss {
                    // Decode it on a copy anyway to learn what it carried.
                    continue;
                }
                let got = dec.on_datagram(d);
                prop_assert!(got.is_ok(), "{:?}", got);
                sent.extend(got.unwrap_or_default());
            }
            for e in &sent {
                let truth = ups.iter().rev().find(|u| u.runtime_id == e.runtime_id);
                prop_assert!(truth.is_some());
                let truth = truth.copied().unwrap_or_default();
                let u = e.to_update();
                prop_assert_eq!(*e, Entry::from_update(&truth));
                prop_assert!((u.x - truth.x).abs() <= QUANTUM / 2.0);
                prop_assert!((u.z - truth.z).abs() <= QUANTUM / 2.0);
                prop_assert!((u.dest_x - truth.dest_x).abs() <= QUANTUM / 2.0);
            }
            if let Some(a) = dec.ack()
                && roll(&mut rng) >= ack_loss
            {
                // Unknown only for a tick the encoder has forgotten (the client completed
                // no tick for HISTORY ticks).
                let forgotten = out.tick.wrapping_sub(a) >= HISTORY;
                prop_assert!(enc.on_ack(a) != AckOutcome::Unknown || forgotten);
            }
            prop_assert!(enc.remembered() <= usize::from(HISTORY));
        }
    }

    #[test]
    fn garbage_and_cut_datagrams_never_panic(
        data in prop::collection::vec(any::<u8>(), 0..64),
        mut ws in walkers(),
        cut in 0usize..200,
    ) {
        let mut dec = DownDecoder::new();
        let _ = dec.on_datagram(&data);
        let mut snap = vec![1u8, 0, 0, 0, 0];
        snap.extend_from_slice(&data);
        let _ = dec.on_datagram(&snap);
        let mut enc = DownEncoder::new();
        let mut rng = 7u64;
        let ups = step(&mut ws, &mut rng);
        let out = enc.encode(&ups, 1200);
        let mut fresh = DownDecoder::new();
        if let Some(d) = out.datagrams.first() {
            let n = cut.min(d.len());
            if n < d.len() {
                prop_assert!(fresh.on_datagram(&d[..n]).is_err());
                prop_assert_eq!(fresh.ack(), None);
            }
            prop_assert!(fresh.on_datagram(d).is_ok());
        }
    }
}
