//! `shared::npos`: golden vectors (the seed's example and our own), quirks, and properties
//! (encode→decode within the quantisation bounds, bytes→wire→bytes identity exactly on
//! canonical messages, no panic on arbitrary bytes).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use shared::npos::{self, Decoded, MAX_DIR, NposError, NposPlayer, NposWire};

/// The example of `seed-sauerbraten-N_POS.txt`, decimal.
const SEED: [u8; 17] = [
    4, 1, 17, 16, 11, 39, 102, 35, 207, 27, 134, 112, 90, 132, 151, 126, 35,
];

fn close(a: [f32; 3], b: [f32; 3], tol: f32) -> bool {
    a.iter().zip(b).all(|(x, y)| (x - y).abs() <= tol)
}

#[test]
fn seed_example_decodes() {
    let d = npos::decode(&SEED).unwrap();
    assert_eq!(d.cn, 1);
    assert_eq!(
        (d.physstate, d.lifesequence, d.move_, d.strafe),
        (1, 0, 1, 0)
    );
    assert!(!d.gameclip);
    assert_eq!(d.feet, [624.6875, 566.375, 444.9375]);
    // 28806 = 6 + 80 * 360: yaw 6, pitch 80 - 90 (the seed's "-9.984" is a misreading).
    assert_eq!((d.yaw, d.pitch, d.roll), (6.0, -10.0, 0.0));
    // 132 at 32407 = 7 + 90 * 360: yaw 7, pitch 0.
    let expect = [
        -(7.0f32.to_radians()).sin() * 132.0,
        (7.0f32.to_radians()).cos() * 132.0,
        0.0,
    ];
    assert!(close(d.vel, expect, 1e-3), "{:?}", d.vel);
    // No fall direction: straight down.
    assert_eq!(d.falling, [0.0, 0.0, -35.0]);
    let w = NposWire::decode(&SEED).unwrap();
    assert_eq!(w.flags(), 16);
    assert_eq!(
        (w.dir, w.roll, w.vel, w.veldir, w.fall, w.falldir),
        (28806, 90, 132, 32407, 35, None)
    );
}

#[test]
fn seed_example_reencodes() {
    // Bytes → wire → bytes.
    assert_eq!(NposWire::decode(&SEED).unwrap().encode(), SEED);
    // The decoded player, eye = feet + 14, encodes to the same bytes.
    let d = npos::decode(&SEED).unwrap();
    assert_eq!(d.to_player().encode(), SEED);
    // And an equivalent player as a game would hold it (fractions that truncate away).
    let yaw = 7.5f32.to_radians();
    let p = NposPlayer {
        cn: 1,
        physstate: 1,
        lifesequence: 2,
        move_: 1,
        o: [624.6875, 566.375, 458.9375],
        yaw: 6.5,
        pitch: -9.5,
        roll: 0.4,
        vel: [-yaw.sin() * 132.5, yaw.cos() * 132.5, 0.0],
        falling: [0.0, 0.0, -35.9],
        ..NposPlayer::default()
    };
    assert_eq!(p.encode(), SEED);
}

/// cn 200 (2-byte putuint), 3-byte and negative coordinates, vel.2, a fall with a direction
/// and game clip (which makes the flags field two bytes).
#[test]
fn own_vector_everything_optional() {
    let p = NposPlayer {
        cn: 200,
        physstate: 2,
        lifesequence: 3,
        move_: -1,
        strafe: 1,
        o: [5000.0, -1.0, 30.0],
        yaw: 90.5,
        pitch: 45.7,
        roll: -30.2,
        vel: [0.0, 300.0, 0.0],
        falling: [3.0, 4.0, 0.0],
        gameclip: true,
        ..NposPlayer::default()
    };
    let bytes = p.encode();
    let expect: Vec<u8> = vec![
        0x04, // N_POS
        0xC8, 0x01, // cn 200, putuint
        0x7A, // 2 | 1<<3 | 3<<4 | 1<<6
        0xDB, 0x01, // flags 0xDB (x.3 y.3 vel.2 fall falldir gameclip), putuint: 2 bytes
        0x80, 0x38, 0x01, // x 80000 = 5000 * 16
        0xF0, 0xFF, 0xFF, // y -16 = -1 * 16, 24-bit two's complement
        0x00, 0x01, // z 256 = (30 - 14) * 16
        0x32, 0xBE, // dir 90 + 135 * 360 = 48690
        0x3B, // roll int(-30.2 + 90) = 59
        0x2C, 0x01, // vel 300
        0x90, 0x7E, // veldir 0 + 90 * 360
        0x05, // fall 5
        0xD4, 0x7F, // falldir 324 + 90 * 360 (yaw -36.87 → 360 + -36)
    ];
    assert_eq!(bytes, expect);
    let d = npos::decode(&bytes).unwrap();
    assert_eq!(d.cn, 200);
    assert_eq!(
        (d.physstate, d.lifesequence, d.move_, d.strafe),
        (2, 1, -1, 1)
    );
    assert!(d.gameclip);
    assert_eq!(d.feet, [5000.0, -1.0, 16.0]);
    assert_eq!((d.yaw, d.pitch, d.roll), (90.0, 45.0, -31.0));
    assert!(close(d.vel, [0.0, 300.0, 0.0], 1e-3), "{:?}", d.vel);
    let a = 324.0f32.to_radians();
    assert!(
        close(d.falling, [-a.sin() * 5.0, a.cos() * 5.0, 0.0], 1e-4),
        "{:?}",
        d.falling
    );
    assert_eq!(NposWire::decode(&bytes).unwrap().encode(), bytes);
}

#[test]
fn fall_straight_up_has_direction_and_two_bytes() {
    let p = NposPlayer {
        falling: [0.0, 0.0, 300.0],
        ..NposPlayer::default()
    };
    let w = p.to_wire();
    assert_eq!((w.fall, w.falldir), (300, Some(64800)));
    let bytes = p.encode();
    // flags: fall | fall.2 | falldir = 0x70; feet z = -14 * 16 = -224 → 3 bytes.
    assert_eq!(
        bytes,
        [
            4, 0, 0, 0x74, 0, 0, 0, 0, 0x20, 0xFF, 0xFF, 0x90, 0x7E, 90, 0, 0x90, 0x7E, 0x2C, 0x01,
            0x20, 0xFD
        ]
    );
    let d = npos::decode(&bytes).unwrap();
    assert_eq!(d.feet, [0.0, 0.0, -14.0]);
    assert!(close(d.falling, [0.0, 0.0, 300.0], 1e-3), "{:?}", d.falling);
}

#[test]
fn quirk_negative_yaw_carries_into_pitch() {
    let p = NposPlayer {
        yaw: -0.5,
        pitch: 10.0,
        eyeheight: 0.0,
        ..NposPlayer::default()
    };
    assert_eq!(p.to_wire().dir, 360 + 100 * 360);
    let d = npos::decode(&p.encode()).unwrap();
    assert_eq!((d.yaw, d.pitch), (0.0, 11.0));
    // -10.5 → 350, not 349.
    assert_eq!(npos::pack_dir(-10.5, 0.0), 350 + 90 * 360);
    // At pitch 90 the carry gives MAX_DIR, which clamps back to pitch 90.
    assert_eq!(npos::pack_dir(-0.5, 90.0), MAX_DIR);
    assert_eq!(npos::unpack_dir(MAX_DIR), (0.0, 90.0));
    assert_eq!(npos::unpack_dir(0xFFFF), (0xFFFF_u16 as f32 % 360.0, 90.0));
}

#[test]
fn quirk_truncation_and_clamps() {
    let p = NposPlayer {
        o: [-0.01, -1.07, 14.0],
        pitch: 120.0,
        roll: -100.0,
        vel: [0.0, 0.0, -1e9],
        falling: [0.0, 0.0, -0.99],
        move_: 2,
        strafe: -2,
        ..NposPlayer::default()
    };
    let w = p.to_wire();
    assert_eq!(w.o, [0, -17, 0]);
    assert_eq!(w.dir, 180 * 360);
    assert_eq!(w.roll, 0);
    assert_eq!(w.vel, 0xFFFF);
    assert_eq!(w.fall, 0, "a fall slower than 1 is not sent");
    let bytes = p.encode();
    let d = npos::decode(&bytes).unwrap();
    assert_eq!(
        (d.move_, d.strafe),
        (-1, -1),
        "2 & 3 and -2 & 3 are both 0b10"
    );
    assert_eq!(d.feet, [0.0, -1.0625, 0.0]);
    assert_eq!((d.pitch, d.roll), (90.0, -90.0));
    assert_eq!(d.falling, [0.0; 3]);
    assert!(close(d.vel, [0.0, 0.0, -65535.0], 0.1), "{:?}", d.vel);
    // Roll bytes above 180 clamp to 90.
    let mut w = NposWire::decode(&bytes).unwrap();
    w.roll = 250;
    assert_eq!(w.to_decoded().roll, 90.0);
}

#[test]
fn quirk_coordinates_wrap_at_24_bits() {
    // 0x900000 / 16: positive on the sender, negative on the wire.
    let p = NposPlayer {
        o: [0x90_0000 as f32 / 16.0, 0.0, 14.0],
        ..NposPlayer::default()
    };
    let d = npos::decode(&p.encode()).unwrap();
    assert_eq!(d.feet[0], (0x90_0000 - 0x100_0000) as f32 / 16.0);
}

#[test]
fn cn_is_putuint() {
    for (cn, len) in [
        (0, 1),
        (127, 1),
        (128, 2),
        (16383, 2),
        (16384, 3),
        (1 << 21, 4),
        (-1, 4),
    ] {
        let p = NposPlayer {
            cn,
            ..NposPlayer::default()
        };
        let bytes = p.encode();
        // 4, cn, state, flags (1 byte: feet z -224 only sets bit 2)
        assert_eq!(bytes.len(), 1 + len + 1 + 1 + 7 + 3 + 3, "cn {cn}");
        assert_eq!(npos::decode(&bytes).unwrap().cn, cn);
    }
}

#[test]
fn errors_name_the_offset() {
    assert_eq!(
        npos::decode(&[]),
        Err(NposError::Truncated {
            offset: 0,
            field: "the type byte"
        })
    );
    assert_eq!(
        npos::decode(&[5]),
        Err(NposError::NotNpos {
            offset: 0,
            found: 5
        })
    );
    for cut in 1..SEED.len() {
        let e = npos::decode(&SEED[..cut]).unwrap_err();
        assert!(matches!(e, NposError::Truncated { .. }));
        assert_eq!(e.offset(), cut);
    }
    let mut long = SEED.to_vec();
    long.extend([4, 0]);
    assert_eq!(
        npos::decode(&long),
        Err(NposError::Trailing {
            offset: 17,
            count: 2
        })
    );
    assert_eq!(NposWire::decode_prefix(&long).unwrap().1, 17);
}

/// Sauerbraten's `getuint`, returning its length too (independent of the crate's reader).
fn getuint_len(bytes: &[u8]) -> Option<(i32, usize)> {
    let b = |i: usize| bytes.get(i).map(|&v| i32::from(v));
    let mut n = b(0)?;
    let mut len = 1;
    if n & 0x80 != 0 {
        n += (b(1)? << 7) - 0x80;
        len = 2;
        if n & (1 << 14) != 0 {
            n += (b(2)? << 14) - (1 << 14);
            len = 3;
        }
        if n & (1 << 21) != 0 {
            n += (b(3)? << 21) - (1 << 21);
            len = 4;
        }
        if n & (1 << 28) != 0 {
            n |= !0 << 28;
        }
    }
    Some((n, len))
}

fn putuint(n: i32) -> Vec<u8> {
    // Through the encoder: a message with this cn, cut after the cn.
    let w = NposWire {
        cn: n,
        ..NposWire::default()
    };
    let bytes = w.encode();
    let (_, len) = getuint_len(&bytes[1..]).unwrap();
    bytes[1..1 + len].to_vec()
}

fn wire_strategy() -> impl Strategy<Value = NposWire> {
    (
        -(1i32 << 28)..(1 << 28),
        any::<u8>(),
        any::<bool>(),
        prop::array::uniform3(-(1i32 << 23)..(1 << 23)),
        (0..=MAX_DIR, 0u8..=180, any::<u16>(), 0..=MAX_DIR),
        (any::<u16>(), prop::option::of(0..=MAX_DIR)),
    )
        .prop_map(
            |(cn, state, gameclip, o, (dir, roll, vel, veldir), (fall, falldir))| NposWire {
                cn,
                state,
                gameclip,
                o,
                dir,
                roll,
                vel,
                veldir,
                fall,
                falldir: if fall == 0 { None } else { falldir },
            },
        )
}

fn player_strategy() -> impl Strategy<Value = NposPlayer> {
    let v3 = || prop::array::uniform3(-700.0f32..700.0);
    (
        (
            any::<i32>(),
            0u8..8,
            any::<i32>(),
            -1i32..=1,
            -1i32..=1,
            any::<bool>(),
        ),
        prop::array::uniform3(-20000.0f32..20000.0),
        0.0f32..20.0,
        (0.0f32..360.0, -90.0f32..=90.0, -90.0f32..=90.0),
        (v3(), v3()),
    )
        .prop_map(
            |(
                (cn, physstate, lifesequence, move_, strafe, gameclip),
                o,
                eyeheight,
                (yaw, pitch, roll),
                (vel, falling),
            )| {
                NposPlayer {
                    cn: cn >> 4, // putuint carries 28 bits
                    physstate,
                    lifesequence,
                    move_,
                    strafe,
                    o,
                    eyeheight,
                    yaw,
                    pitch,
                    roll,
                    vel,
                    falling,
                    gameclip,
                }
            },
        )
}

fn len3(v: [f32; 3]) -> f32 {
    (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt()
}

fn check_vector(sent: [f32; 3], got: [f32; 3]) -> Result<(), TestCaseError> {
    let m = len3(sent);
    let q = m.trunc();
    prop_assert!(
        (len3(got) - q).abs() <= 1e-3 + q * 1e-5,
        "{sent:?} → {got:?}"
    );
    // Whole-degree yaw and pitch (one more degree of pitch for the negative-yaw carry):
    // under 3 degrees of angle, plus the truncated fraction of the magnitude.
    let err = len3([got[0] - sent[0], got[1] - sent[1], got[2] - sent[2]]);
    prop_assert!(err <= 1.0 + m * 0.06, "{sent:?} → {got:?}");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..40)) {
        let _ = npos::decode(&bytes);
        let _ = NposWire::decode_prefix(&bytes);
    }

    /// Bytes → wire → bytes is the identity exactly when `cn` and `flags` are in
    /// Sauerbraten's own form (the shortest `putuint`, flags agreeing with the fields).
    #[test]
    fn decodable_bytes_reencode_iff_canonical(tail in prop::collection::vec(any::<u8>(), 0..40)) {
        let mut bytes = vec![4u8];
        bytes.extend(tail);
        if let Ok((wire, used)) = NposWire::decode_prefix(&bytes) {
            let (cn, cn_len) = getuint_len(&bytes[1..]).unwrap();
            let (flags, flags_len) = getuint_len(&bytes[2 + cn_len..]).unwrap();
            prop_assert_eq!(cn, wire.cn);
            let canonical = bytes[1..1 + cn_len] == putuint(cn)[..]
                && flags == i32::from(wire.flags())
                && flags_len == putuint(flags).len();
            let again = wire.encode();
            prop_assert_eq!(again == bytes[..used], canonical, "{:?}", wire);
            // Whatever the form, the re-encoding means the same.
            let d1 = wire.to_decoded();
            let d2 = npos::decode(&again).unwrap();
            prop_assert_eq!((d1.cn, d1.feet, d1.yaw, d1.pitch, d1.roll), (d2.cn, d2.feet, d2.yaw, d2.pitch, d2.roll));
        }
    }

    #[test]
    fn canonical_wire_round_trips(w in wire_strategy()) {
        let bytes = w.encode();
        prop_assert_eq!(NposWire::decode(&bytes).unwrap(), w);
    }

    #[test]
    fn encode_decode_within_quantisation(p in player_strategy()) {
        let w = p.to_wire();
        let bytes = p.encode();
        prop_assert_eq!(NposWire::decode(&bytes).unwrap(), w);
        let d: Decoded = npos::decode(&bytes).unwrap();
        prop_assert_eq!(d.cn, p.cn);
        prop_assert_eq!(d.physstate, p.physstate);
        prop_assert_eq!(i32::from(d.lifesequence), p.lifesequence & 1);
        prop_assert_eq!((d.move_, d.strafe), (p.move_, p.strafe));
        prop_assert_eq!(d.gameclip, p.gameclip);
        let feet = [p.o[0], p.o[1], p.o[2] - p.eyeheight];
        for k in 0..3 {
            // Truncated towards zero: never further from 0, less than 1/16 off.
            prop_assert!(d.feet[k].abs() <= feet[k].abs() && (feet[k] - d.feet[k]).abs() < 1.0 / 16.0,
                "{:?} → {:?}", feet, d.feet);
        }
        prop_assert_eq!(d.yaw, p.yaw.trunc() % 360.0);
        prop_assert_eq!(d.pitch, (p.pitch + 90.0).trunc() - 90.0);
        prop_assert_eq!(d.roll, (p.roll + 90.0).trunc() - 90.0);
        check_vector(p.vel, d.vel)?;
        if len3(p.falling) < 1.0 {
            prop_assert_eq!(d.falling, [0.0; 3]);
        } else {
            check_vector(p.falling, d.falling)?;
        }
    }
}

/// Found by the fuzz invariant: a fall block with magnitude 0 (which no sender writes) and a
/// direction; re-encoding drops the block, and both mean "not falling".
#[test]
fn zero_fall_block_is_not_canonical_but_means_the_same() {
    let mut bytes = SEED.to_vec();
    bytes[3] = 16 | 64; // fall block with direction
    bytes[16] = 0; // magnitude 0
    bytes.extend([0x6C, 0xB2]);
    let w = NposWire::decode(&bytes).unwrap();
    assert_eq!((w.fall, w.falldir), (0, Some(0xB26C)));
    let again = w.encode();
    assert_eq!(again.len(), 16);
    assert_eq!(npos::decode(&again).unwrap(), w.to_decoded());
    assert_eq!(w.to_decoded().falling, [0.0; 3]);
}
