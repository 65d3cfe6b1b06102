//! `P_StandardUpdate` (14), both directions: the hot path. Fixed offsets, no allocation.
//!
//! The client sends its destination and sampled position at most every 200 ms; the server
//! sends one S→C update per visible actor per broadcast tick to every nearby player, so
//! the S→C body is encoded once per actor ([`StandardUpdateS2C::body`]) and copied into
//! each recipient's datagram batch with that recipient's tail
//! ([`StandardUpdateS2C::write_frame_from_body`], [`crate::frame::Batcher::push_update`]).

use serde::{Deserialize, Serialize};

use super::{DecodeCtx, Packet, ids};
use crate::wire::{DecodeError, DecodeErrorKind, clamp_world_coord, json_f32};

/// Payload length of a C→S update and of an S→C update body.
pub const STANDARD_UPDATE_LEN: usize = 22;

/// `P_StandardUpdate` (14) C→S, 22 bytes (reference §4.1).
///
/// | off | type | field |
/// |---|---|---|
/// |1|f32|DestX|
/// |5|f32|DestZ|
/// |9|f32|Y|
/// |13|f32|X|
/// |17|f32|Z|
/// |21|u8|IsRunning|
/// |22|u8|WalkingBackward|
///
/// Values are kept as sent; the server applies [`Self::clamped`] (ClampWorldCoord on all
/// five floats) where the input enters the simulation.
#[doc(alias = "P_StandardUpdate")]
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct StandardUpdateC2S {
    /// Where the client is heading, X.
    #[serde(with = "json_f32")]
    pub dest_x: f32,
    /// Where the client is heading, Z.
    #[serde(with = "json_f32")]
    pub dest_z: f32,
    /// Sampled Y.
    #[serde(with = "json_f32")]
    pub y: f32,
    /// Sampled X.
    #[serde(with = "json_f32")]
    pub x: f32,
    /// Sampled Z.
    #[serde(with = "json_f32")]
    pub z: f32,
    /// `IsRunning` (non-zero = running).
    pub is_running: u8,
    /// `WalkingBackward` (non-zero = backward).
    pub walking_backward: u8,
}

impl StandardUpdateC2S {
    /// Decodes a 22-byte payload at fixed offsets, without allocating.
    #[inline]
    pub fn decode_fast(payload: &[u8]) -> Result<Self, DecodeError> {
        let Ok(
            &[
                d0,
                d1,
                d2,
                d3,
                e0,
                e1,
                e2,
                e3,
                y0,
                y1,
                y2,
                y3,
                x0,
                x1,
                x2,
                x3,
                z0,
                z1,
                z2,
                z3,
                run,
                back,
            ],
        ) = <&[u8; STANDARD_UPDATE_LEN]>::try_from(payload)
        else {
            return Err(length_error(payload.len(), "22"));
        };
        Ok(Self {
            dest_x: f32::from_le_bytes([d0, d1, d2, d3]),
            dest_z: f32::from_le_bytes([e0, e1, e2, e3]),
            y: f32::from_le_bytes([y0, y1, y2, y3]),
            x: f32::from_le_bytes([x0, x1, x2, x3]),
            z: f32::from_le_bytes([z0, z1, z2, z3]),
            is_running: run,
            walking_backward: back,
        })
    }

    /// The 22-byte payload.
    #[inline]
    pub fn to_payload(&self) -> [u8; STANDARD_UPDATE_LEN] {
        let [d0, d1, d2, d3] = self.dest_x.to_le_bytes();
        let [e0, e1, e2, e3] = self.dest_z.to_le_bytes();
        let [y0, y1, y2, y3] = self.y.to_le_bytes();
        let [x0, x1, x2, x3] = self.x.to_le_bytes();
        let [z0, z1, z2, z3] = self.z.to_le_bytes();
        [
            d0,
            d1,
            d2,
            d3,
            e0,
            e1,
            e2,
            e3,
            y0,
            y1,
            y2,
            y3,
            x0,
            x1,
            x2,
            x3,
            z0,
            z1,
            z2,
            z3,
            self.is_running,
            self.walking_backward,
        ]
    }

    /// A copy with ClampWorldCoord applied to all five floats (V1 rule).
    #[doc(alias = "ClampWorldCoord")]
    #[inline]
    pub fn clamped(&self) -> Self {
        Self {
            dest_x: clamp_world_coord(self.dest_x),
            dest_z: clamp_world_coord(self.dest_z),
            y: clamp_world_coord(self.y),
            x: clamp_world_coord(self.x),
            z: clamp_world_coord(self.z),
            ..*self
        }
    }

    /// Appends a whole frame `[len u16][14][22 bytes]` to `out`.
    #[inline]
    pub fn write_frame(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[23, 0, ids::P_STANDARD_UPDATE]);
        out.extend_from_slice(&self.to_payload());
    }
}

impl Packet for StandardUpdateC2S {
    const ID: u8 = ids::P_STANDARD_UPDATE;
    const NAME: &'static str = "P_StandardUpdate";
    #[inline]
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        Self::decode_fast(payload)
    }
    #[inline]
    fn encode_payload(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_payload());
    }
}

fn length_error(actual: usize, expected: &'static str) -> DecodeError {
    DecodeError::new(
        actual.min(STANDARD_UPDATE_LEN),
        DecodeErrorKind::LengthMismatch { expected, actual },
    )
}

/// The optional tail of an S→C update at offset 23, told apart by payload length.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub enum UpdateTail {
    /// No tail (22 bytes).
    #[default]
    None,
    /// The recipient's own Energy `u16` (24 bytes; the client ignores it).
    Energy(u16),
    /// A flying actor's Y `f32` (26 bytes).
    FlyY(#[serde(with = "json_f32")] f32),
}

impl UpdateTail {
    /// The tail's bytes and their count (0, 2 or 4).
    #[inline]
    pub fn bytes(&self) -> ([u8; 4], usize) {
        match *self {
            Self::None => ([0; 4], 0),
            Self::Energy(e) => {
                let [a, b] = e.to_le_bytes();
                ([a, b, 0, 0], 2)
            }
            Self::FlyY(y) => (y.to_le_bytes(), 4),
        }
    }
}

/// `P_StandardUpdate` (14) S→C: one actor's position, 22 bytes plus an optional tail.
///
/// | off | type | field |
/// |---|---|---|
/// |1|u16|RuntimeID|
/// |3|f32|X|
/// |7|f32|Z|
/// |11|u8|IsRunning|
/// |12|u8|WalkingBackward|
/// |13|f32|DestX|
/// |17|f32|DestZ|
/// |21|u16|mount RuntimeID (0 = none)|
/// |23|tail|[`UpdateTail`]: none (22), Energy u16 (24), flying Y f32 (26)|
#[doc(alias = "P_StandardUpdate")]
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct StandardUpdateS2C {
    /// The actor's RuntimeID.
    pub runtime_id: u16,
    /// Authoritative X.
    #[serde(with = "json_f32")]
    pub x: f32,
    /// Authoritative Z.
    #[serde(with = "json_f32")]
    pub z: f32,
    /// `IsRunning`.
    pub is_running: u8,
    /// `WalkingBackward`.
    pub walking_backward: u8,
    /// Destination X.
    #[serde(with = "json_f32")]
    pub dest_x: f32,
    /// Destination Z.
    #[serde(with = "json_f32")]
    pub dest_z: f32,
    /// The mount's RuntimeID, 0 for none.
    pub mount: u16,
    /// The tail.
    pub tail: UpdateTail,
}

impl StandardUpdateS2C {
    /// The 22-byte body (everything but the tail), computed once per actor and tick.
    #[inline]
    pub fn body(&self) -> [u8; STANDARD_UPDATE_LEN] {
        let [r0, r1] = self.runtime_id.to_le_bytes();
        let [x0, x1, x2, x3] = self.x.to_le_bytes();
        let [z0, z1, z2, z3] = self.z.to_le_bytes();
        let [d0, d1, d2, d3] = self.dest_x.to_le_bytes();
        let [e0, e1, e2, e3] = self.dest_z.to_le_bytes();
        let [m0, m1] = self.mount.to_le_bytes();
        [
            r0,
            r1,
            x0,
            x1,
            x2,
            x3,
            z0,
            z1,
            z2,
            z3,
            self.is_running,
            self.walking_backward,
            d0,
            d1,
            d2,
            d3,
            e0,
            e1,
            e2,
            e3,
            m0,
            m1,
        ]
    }

    /// Decodes a 22-, 24- or 26-byte payload at fixed offsets, without allocating.
    #[inline]
    pub fn decode_fast(payload: &[u8]) -> Result<Self, DecodeError> {
        let (body, tail) = payload.split_at(payload.len().min(STANDARD_UPDATE_LEN));
        let Ok(
            &[
                r0,
                r1,
                x0,
                x1,
                x2,
                x3,
                z0,
                z1,
                z2,
                z3,
                run,
                back,
                d0,
                d1,
                d2,
                d3,
                e0,
                e1,
                e2,
                e3,
                m0,
                m1,
            ],
        ) = <&[u8; STANDARD_UPDATE_LEN]>::try_from(body)
        else {
            return Err(length_error(payload.len(), "22, 24 or 26"));
        };
        let tail = match *tail {
            [] => UpdateTail::None,
            [a, b] => UpdateTail::Energy(u16::from_le_bytes([a, b])),
            [a, b, c, d] => UpdateTail::FlyY(f32::from_le_bytes([a, b, c, d])),
            _ => return Err(length_error(payload.len(), "22, 24 or 26")),
        };
        Ok(Self {
            runtime_id: u16::from_le_bytes([r0, r1]),
            x: f32::from_le_bytes([x0, x1, x2, x3]),
            z: f32::from_le_bytes([z0, z1, z2, z3]),
            is_running: run,
            walking_backward: back,
            dest_x: f32::from_le_bytes([d0, d1, d2, d3]),
            dest_z: f32::from_le_bytes([e0, e1, e2, e3]),
            mount: u16::from_le_bytes([m0, m1]),
            tail,
        })
    }

    /// Appends a whole frame `[len u16][14][body][tail]` to `out`.
    #[inline]
    pub fn write_frame(&self, out: &mut Vec<u8>) {
        Self::write_frame_from_body(out, &self.body(), self.tail);
    }

    /// Appends a frame built from a precomputed [`Self::body`] and a per-recipient tail.
    #[inline]
    pub fn write_frame_from_body(
        out: &mut Vec<u8>,
        body: &[u8; STANDARD_UPDATE_LEN],
        tail: UpdateTail,
    ) {
        let (t, n) = tail.bytes();
        // One stack buffer and a single copy into `out`.
        let mut f = [0u8; 3 + STANDARD_UPDATE_LEN + 4];
        let (head, rest) = f.split_at_mut(3);
        head.copy_from_slice(&[
            (1 + STANDARD_UPDATE_LEN + n) as u8,
            0,
            ids::P_STANDARD_UPDATE,
        ]);
        let (b, tl) = rest.split_at_mut(STANDARD_UPDATE_LEN);
        b.copy_from_slice(body);
        tl.copy_from_slice(&t);
        out.extend_from_slice(f.get(..3 + STANDARD_UPDATE_LEN + n).unwrap_or(&f));
    }
}

impl Packet for StandardUpdateS2C {
    const ID: u8 = ids::P_STANDARD_UPDATE;
    const NAME: &'static str = "P_StandardUpdate";
    #[inline]
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        Self::decode_fast(payload)
    }
    #[inline]
    fn encode_payload(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.body());
        let (t, n) = self.tail.bytes();
        out.extend_from_slice(t.get(..n).unwrap_or(&[]));
    }
}
