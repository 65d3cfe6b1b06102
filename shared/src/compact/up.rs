//! Client → server datagrams of the compact profile: a position update (Realm Crafter's
//! `P_StandardUpdate` C→S, quantised) carrying the client's acknowledgement, or an
//! acknowledgement alone. Byte-aligned LEB128 varints; stateless.
//!
//! ```text
//! input: 02 flags [ack u16] x z y (dest_x - x) (dest_z - z)     each a zigzag LEB128 varint
//!        flags: bit 0 IsRunning, bit 1 WalkingBackward, bit 2 ack present, bits 3-7 zero
//! ack:   03 ack u16
//! ```

use serde::{Deserialize, Serialize};

use super::bits::{unzigzag, zigzag};
use super::{CompactError, in_range, kind, quantise};
use crate::proto::StandardUpdateC2S;

/// A position update from the client, quantised.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QInput {
    /// Sampled X in steps.
    pub x: i32,
    /// Sampled Y in steps.
    pub y: i32,
    /// Sampled Z in steps.
    pub z: i32,
    /// Destination X in steps.
    pub dest_x: i32,
    /// Destination Z in steps.
    pub dest_z: i32,
    /// `IsRunning`.
    pub running: bool,
    /// `WalkingBackward`.
    pub backward: bool,
}

impl QInput {
    /// Quantises an rc/1 update (ClampWorldCoord first, as the server would).
    pub fn from_update(u: &StandardUpdateC2S) -> Self {
        Self {
            x: quantise(u.x),
            y: quantise(u.y),
            z: quantise(u.z),
            dest_x: quantise(u.dest_x),
            dest_z: quantise(u.dest_z),
            running: u.is_running != 0,
            backward: u.walking_backward != 0,
        }
    }

    /// The rc/1 update the server hands to the zone.
    pub fn to_update(&self) -> StandardUpdateC2S {
        use super::dequantise as d;
        StandardUpdateC2S {
            dest_x: d(self.dest_x),
            dest_z: d(self.dest_z),
            y: d(self.y),
            x: d(self.x),
            z: d(self.z),
            is_running: u8::from(self.running),
            walking_backward: u8::from(self.backward),
        }
    }
}

/// A decoded client datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Upstream {
    /// A position update and, when the client has received a whole tick, the newest such
    /// tick.
    Input {
        /// The acknowledged tick.
        ack: Option<u16>,
        /// The update.
        input: QInput,
    },
    /// An acknowledgement only.
    Ack(u16),
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn put_signed(out: &mut Vec<u8>, v: i64) {
    put_varint(out, zigzag(v));
}

/// Appends an input datagram.
pub fn encode_input(input: &QInput, ack: Option<u16>, out: &mut Vec<u8>) {
    let flags =
        u8::from(input.running) | u8::from(input.backward) << 1 | u8::from(ack.is_some()) << 2;
    out.extend_from_slice(&[kind::INPUT, flags]);
    if let Some(a) = ack {
        out.extend_from_slice(&a.to_le_bytes());
    }
    put_signed(out, input.x.into());
    put_signed(out, input.z.into());
    put_signed(out, input.y.into());
    put_signed(out, i64::from(input.dest_x) - i64::from(input.x));
    put_signed(out, i64::from(input.dest_z) - i64::from(input.z));
}

/// Appends an ack-only datagram.
pub fn encode_ack(ack: u16, out: &mut Vec<u8>) {
    out.push(kind::ACK);
    out.extend_from_slice(&ack.to_le_bytes());
}

struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn byte(&mut self) -> Result<u8, CompactError> {
        let b = *self.data.get(self.pos).ok_or(CompactError::Truncated)?;
        self.pos += 1;
        Ok(b)
    }

    fn u16(&mut self) -> Result<u16, CompactError> {
        Ok(u16::from_le_bytes([self.byte()?, self.byte()?]))
    }

    /// A canonical LEB128 varint of at most 32 bits.
    fn varint(&mut self) -> Result<u64, CompactError> {
        let mut v = 0u64;
        for i in 0..5 {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                if (i > 0 && b == 0) || v > u64::from(u32::MAX) {
                    return Err(CompactError::Varint);
                }
                return Ok(v);
            }
        }
        Err(CompactError::Varint)
    }

    fn signed(&mut self) -> Result<i64, CompactError> {
        Ok(unzigzag(self.varint()?))
    }

    fn end(&self) -> Result<(), CompactError> {
        if self.pos == self.data.len() {
            Ok(())
        } else {
            Err(CompactError::Trailing)
        }
    }
}

/// Decodes one client datagram. Never panics; every field is range-checked (coordinates
/// within ±`Q_MAX`, reserved bits zero, nothing after the last field).
pub fn decode_upstream(d: &[u8]) -> Result<Upstream, CompactError> {
    let mut c = Cursor { data: d, pos: 0 };
    match c.byte()? {
        kind::INPUT => {
            let flags = c.byte()?;
            if flags & !0b111 != 0 {
                return Err(CompactError::Reserved);
            }
            let ack = if flags & 4 != 0 { Some(c.u16()?) } else { None };
            let x = in_range(c.signed()?)?;
            let z = in_range(c.signed()?)?;
            let y = in_range(c.signed()?)?;
            let dest_x = in_range(i64::from(x) + c.signed()?)?;
            let dest_z = in_range(i64::from(z) + c.signed()?)?;
            c.end()?;
            Ok(Upstream::Input {
                ack,
                input: QInput {
                    x,
                    y,
                    z,
                    dest_x,
                    dest_z,
                    running: flags & 1 != 0,
                    backward: flags & 2 != 0,
                },
            })
        }
        kind::ACK => {
            let a = c.u16()?;
            c.end()?;
            Ok(Upstream::Ack(a))
        }
        k => Err(CompactError::UnknownKind(k)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::Q_MAX;
    use proptest::prelude::*;

    #[test]
    fn golden_input_and_ack() {
        // At (10, 0.5, -4) running toward (12, -4), having received tick 7 whole.
        let input = QInput::from_update(&StandardUpdateC2S {
            dest_x: 12.0,
            dest_z: -4.0,
            y: 0.5,
            x: 10.0,
            z: -4.0,
            is_running: 1,
            walking_backward: 0,
        });
        let mut out = Vec::new();
        encode_input(&input, Some(7), &mut out);
        // x = 80 → zigzag 160 = a0 01; z = -32 → 63 = 3f; y = 4 → 8; dx = 16 → 32; dz = 0.
        assert_eq!(
            out,
            [0x02, 0x05, 0x07, 0x00, 0xa0, 0x01, 0x3f, 0x08, 0x20, 0x00]
        );
        assert_eq!(
            decode_upstream(&out),
            Ok(Upstream::Input {
                ack: Some(7),
                input
            })
        );
        out.clear();
        encode_ack(0x1234, &mut out);
        assert_eq!(out, [0x03, 0x34, 0x12]);
        assert_eq!(decode_upstream(&out), Ok(Upstream::Ack(0x1234)));
    }

    #[test]
    fn hostile_inputs_are_errors() {
        assert_eq!(decode_upstream(&[]), Err(CompactError::Truncated));
        assert_eq!(decode_upstream(&[0x09]), Err(CompactError::UnknownKind(9)));
        assert_eq!(decode_upstream(&[0x03, 1]), Err(CompactError::Truncated));
        assert_eq!(
            decode_upstream(&[0x03, 1, 2, 3]),
            Err(CompactError::Trailing)
        );
        assert_eq!(
            decode_upstream(&[0x02, 0x08, 0, 0, 0, 0, 0]),
            Err(CompactError::Reserved)
        );
        // Overlong varint (0 written as 80 00), and one beyond 32 bits.
        assert_eq!(
            decode_upstream(&[0x02, 0, 0x80, 0x00, 0, 0, 0, 0]),
            Err(CompactError::Varint)
        );
        assert_eq!(
            decode_upstream(&[0x02, 0, 0xff, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0]),
            Err(CompactError::Varint)
        );
        // x = Q_MAX + 1.
        let mut out = vec![0x02, 0];
        put_signed(&mut out, Q_MAX + 1);
        out.extend_from_slice(&[0, 0, 0, 0]);
        assert_eq!(
            decode_upstream(&out),
            Err(CompactError::OutOfRange(Q_MAX + 1))
        );
        // A destination pushed out of range by its offset.
        let mut out = vec![0x02, 0];
        put_signed(&mut out, Q_MAX);
        out.extend_from_slice(&[0, 0]);
        put_signed(&mut out, 1);
        out.push(0);
        assert_eq!(
            decode_upstream(&out),
            Err(CompactError::OutOfRange(Q_MAX + 1))
        );
    }

    fn coord() -> impl Strategy<Value = f32> {
        -99_999.0f32..99_999.0
    }

    proptest! {
        #[test]
        fn inputs_round_trip_within_half_a_step(
            x in coord(), y in coord(), z in coord(), dx in coord(), dz in coord(),
            run in any::<bool>(), back in any::<bool>(), ack in any::<Option<u16>>()
        ) {
            let u = StandardUpdateC2S { dest_x: dx, dest_z: dz, y, x, z, is_running: run.into(), walking_backward: back.into() };
            let q = QInput::from_update(&u);
            let mut out = Vec::new();
            encode_input(&q, ack, &mut out);
            prop_assert!(out.len() <= 2 + 2 + 5 * 4);
            let Ok(Upstream::Input { ack: a, input }) = decode_upstream(&out) else {
                return Err(TestCaseError::fail("did not decode"));
            };
            prop_assert_eq!(a, ack);
            prop_assert_eq!(input, q);
            let back = input.to_update();
            for (got, want) in [(back.x, x), (back.y, y), (back.z, z), (back.dest_x, dx), (back.dest_z, dz)] {
                prop_assert!((got - want).abs() <= 1.0 / 16.0);
            }
        }

        #[test]
        fn garbage_never_panics(d in prop::collection::vec(any::<u8>(), 0..32)) {
            let _ = decode_upstream(&d);
        }
    }
}
