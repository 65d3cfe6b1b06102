//! The compact position profile, ALPN `rc-compact/1`: `P_StandardUpdate` in both directions
//! as quantised, variable-width, delta-coded datagrams; every other packet stays Realm
//! Crafter's, byte for byte, on the reliable stream.
//!
//! Sans-IO: [`DownEncoder`] (the server's per-connection state), [`DownDecoder`] (the
//! client's), and the stateless upstream codec ([`encode_input`], [`encode_ack`],
//! [`decode_upstream`]). The complete specification, for client authors, is the section
//! "The compact profile" of `docs/protocol.md`; this module is its reference
//! implementation.
//!
//! In one paragraph: positions are integers in steps of 1/8 unit ([`QUANTUM`]; error at most
//! 1/16 unit). Each broadcast tick the server sends every actor the zone reported, sorted by
//! RuntimeID, as one or more datagrams ("parts") numbered by a 16-bit tick. An entry is
//! either *full* (absolute values) or a *delta* against the same actor's entry in a base
//! tick the client has acknowledged; an unchanged actor costs five bits, one walking
//! straight at its destination about two bytes. The client acknowledges the newest tick
//! it received whole in every position datagram it sends (or in an ack-only datagram), so a
//! lost datagram costs nothing but its own update: the next one that arrives is decoded
//! against a tick the client has, and is exact.

pub mod bits;
mod down;
mod index;
mod up;

pub use down::{AckOutcome, DownDecoder, DownEncoder, EncodedTick};
pub use index::TickIndex;
pub use up::{QInput, Upstream, decode_upstream, encode_ack, encode_input};

use serde::{Deserialize, Serialize};

use crate::proto::{StandardUpdateS2C, UpdateTail};
use crate::wire::{WORLD_COORD_MAX, clamp_world_coord};

/// The ALPN protocol id of the compact profile (beside `rc/1`).
pub const ALPN: &[u8] = b"rc-compact/1";

/// Steps per world unit: positions travel as integers `round(v * 8)`.
pub const STEPS_PER_UNIT: f32 = 8.0;

/// One step in world units (1/8); a decoded position is within half of it of the truth.
pub const QUANTUM: f32 = 1.0 / STEPS_PER_UNIT;

/// The largest quantised coordinate magnitude (`WORLD_COORD_MAX * 8`).
pub const Q_MAX: i64 = (WORLD_COORD_MAX as i64) * (STEPS_PER_UNIT as i64);

/// The oldest base a snapshot may refer to, in ticks (`base_age` is 1..=HISTORY); a client
/// keeps at least this many complete ticks.
pub const HISTORY: u16 = 32;

/// The most datagrams one tick may take (the part byte has four bits for each of the
/// index and the count).
pub const MAX_PARTS: usize = 16;

/// Datagram kinds (first byte).
pub mod kind {
    /// Server → client: one part of a tick's snapshot.
    pub const SNAPSHOT: u8 = 0x01;
    /// Client → server: a position update, with or without an acknowledgement.
    pub const INPUT: u8 = 0x02;
    /// Client → server: an acknowledgement only.
    pub const ACK: u8 = 0x03;
}

/// Why a compact datagram was refused. Every error leaves the decoder as it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CompactError {
    /// The datagram ended inside a field.
    #[error("truncated")]
    Truncated,
    /// An exp-Golomb code with more than 40 leading zeros.
    #[error("variable-width code too long")]
    BadCode,
    /// Bytes or non-zero padding bits after the last field.
    #[error("trailing data")]
    Trailing,
    /// An unknown first byte (datagram kind).
    #[error("unknown datagram kind {0:#04x}")]
    UnknownKind(u8),
    /// Reserved flag bits set.
    #[error("reserved bits set")]
    Reserved,
    /// A quantised coordinate beyond ±`Q_MAX` (the world's clamp).
    #[error("quantised value {0} out of range")]
    OutOfRange(i64),
    /// A LEB128 varint longer than needed or beyond 32 bits.
    #[error("malformed varint")]
    Varint,
    /// A part index not below the part count.
    #[error("part {index} of {count}")]
    BadPart {
        /// Index.
        index: u8,
        /// Count.
        count: u8,
    },
    /// A delta against a tick this decoder does not have (never received whole, too old,
    /// or never sent).
    #[error("base tick {0} unknown")]
    UnknownBase(u16),
    /// `base_age` 0 with delta entries, or beyond [`HISTORY`].
    #[error("base age {0} not allowed")]
    BadBaseAge(u8),
    /// A delta entry for an actor the base tick does not have.
    #[error("actor {0} is not in the base tick")]
    MissingBaseEntry(u16),
    /// RuntimeIDs not strictly increasing or beyond 65535.
    #[error("RuntimeID out of order or out of range")]
    RuntimeId,
    /// A reserved position mode or tail kind.
    #[error("reserved mode")]
    BadMode,
    /// A move "toward the destination" for an actor standing on its destination.
    #[error("no direction to move along")]
    NoDirection,
    /// A tick older than one already received.
    #[error("stale tick {0}")]
    Stale(u16),
    /// A part received twice, or parts of one tick that disagree on the count or base.
    #[error("duplicate or inconsistent part")]
    Part,
}

/// A tail of `P_StandardUpdate`, quantised.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum QTail {
    /// No tail.
    #[default]
    None,
    /// The recipient's own Energy.
    Energy(u16),
    /// A flying actor's Y, in steps.
    Fly(i32),
}

/// One actor's `P_StandardUpdate` (S→C), quantised: what a snapshot entry carries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QState {
    /// X in steps.
    pub x: i32,
    /// Z in steps.
    pub z: i32,
    /// Destination X in steps.
    pub dest_x: i32,
    /// Destination Z in steps.
    pub dest_z: i32,
    /// `IsRunning` (non-zero on the rc/1 wire).
    pub running: bool,
    /// `WalkingBackward`.
    pub backward: bool,
    /// The mount's RuntimeID, 0 for none.
    pub mount: u16,
    /// The tail.
    pub tail: QTail,
}

/// A snapshot entry: an actor and its quantised state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The actor's RuntimeID.
    pub runtime_id: u16,
    /// Its state.
    pub state: QState,
}

/// `round(clamp_world_coord(v) * 8)`: NaN, infinities and values beyond the world's clamp
/// become 0, as ClampWorldCoord makes them.
#[doc(alias = "ClampWorldCoord")]
#[inline]
pub fn quantise(v: f32) -> i32 {
    // Round half away from zero without a libm call: in f64, `t ± 0.5` is exact for every
    // f32 `t` below 2^24 (|t| ≤ Q_MAX by the clamp), and the cast truncates toward zero.
    let t = f64::from(clamp_world_coord(v) * STEPS_PER_UNIT);
    (t + 0.5f64.copysign(t)) as i32
}

/// `q / 8` (exact: `q` fits the f32 mantissa and 8 is a power of two).
#[inline]
pub fn dequantise(q: i32) -> f32 {
    q as f32 / STEPS_PER_UNIT
}

/// Checks a decoded coordinate against ±[`Q_MAX`].
#[inline]
pub(crate) fn in_range(v: i64) -> Result<i32, CompactError> {
    if (-Q_MAX..=Q_MAX).contains(&v) {
        Ok(v as i32)
    } else {
        Err(CompactError::OutOfRange(v))
    }
}

impl QState {
    /// Quantises an rc/1 update.
    pub fn from_update(u: &StandardUpdateS2C) -> Self {
        Self {
            x: quantise(u.x),
            z: quantise(u.z),
            dest_x: quantise(u.dest_x),
            dest_z: quantise(u.dest_z),
            running: u.is_running != 0,
            backward: u.walking_backward != 0,
            mount: u.mount,
            tail: match u.tail {
                UpdateTail::None => QTail::None,
                UpdateTail::Energy(e) => QTail::Energy(e),
                UpdateTail::FlyY(y) => QTail::Fly(quantise(y)),
            },
        }
    }

    /// The rc/1 update a client shows for this state.
    pub fn to_update(&self, runtime_id: u16) -> StandardUpdateS2C {
        StandardUpdateS2C {
            runtime_id,
            x: dequantise(self.x),
            z: dequantise(self.z),
            is_running: u8::from(self.running),
            walking_backward: u8::from(self.backward),
            dest_x: dequantise(self.dest_x),
            dest_z: dequantise(self.dest_z),
            mount: self.mount,
            tail: match self.tail {
                QTail::None => UpdateTail::None,
                QTail::Energy(e) => UpdateTail::Energy(e),
                QTail::Fly(y) => UpdateTail::FlyY(dequantise(y)),
            },
        }
    }
}

impl Entry {
    /// Quantises an rc/1 update.
    pub fn from_update(u: &StandardUpdateS2C) -> Self {
        Self {
            runtime_id: u.runtime_id,
            state: QState::from_update(u),
        }
    }

    /// The rc/1 update a client shows for this entry.
    pub fn to_update(&self) -> StandardUpdateS2C {
        self.state.to_update(self.runtime_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The stated precision: within the world's clamp a coordinate comes back within
        /// half a step (1/16 unit).
        #[test]
        fn quantisation_error_is_at_most_half_a_step(v in -99_999.9f32..99_999.9) {
            let back = dequantise(quantise(v));
            prop_assert!((back - v).abs() <= QUANTUM / 2.0 + f32::EPSILON * v.abs(), "{} -> {}", v, back);
        }

        #[test]
        fn any_float_quantises_in_range(bits in any::<u32>()) {
            let q = i64::from(quantise(f32::from_bits(bits)));
            prop_assert!(in_range(q).is_ok());
        }
    }

    #[test]
    fn out_of_world_values_quantise_like_clamp_world_coord() {
        assert_eq!(quantise(f32::NAN), 0);
        assert_eq!(quantise(f32::INFINITY), 0);
        assert_eq!(quantise(1e6), 0);
        assert_eq!(quantise(-2.5), -20);
        assert_eq!(quantise(0.0625), 1);
        assert_eq!(dequantise(-20), -2.5);
    }
}
