//! `P_StartGame` (12): the request that enters the world, and the reply parts: twelve
//! action-bar parts, the player's RuntimeID, or `"N"` (reference §5 step 6).

use serde::{Deserialize, Serialize};

use super::{Creds, DecodeCtx, Packet, ids};
use crate::wire::{DecodeError, DecodeErrorKind, HexBytes, RcString, Reader, WireWrite};

creds_index_packet!(
    /// `P_StartGame` (12) C→S: `creds, index u8`.
    StartGame, ids::P_START_GAME, "P_StartGame"
);

/// One action-bar slot of a [`StartGameReply::ActionBar`] part, a `u16`-length string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ActionSlot {
    /// Empty string: nothing in the slot.
    Empty,
    /// `"S"` + spell name.
    Spell(RcString),
    /// `"I"` + item id `u16` (exactly 3 bytes).
    Item(u16),
    /// Any other content, kept as is (never empty, never starting with `S`, and not a
    /// 3-byte string starting with `I`).
    Other(HexBytes),
}

impl ActionSlot {
    /// A slot from its saved string (`"S"` + name, `"I"` + 2 bytes, `""`), which is also
    /// what the wire carries after the length.
    pub fn from_saved(s: &[u8]) -> Self {
        match s {
            [] => Self::Empty,
            [b'S', name @ ..] => Self::Spell(RcString::from(name)),
            [b'I', lo, hi] => Self::Item(u16::from_le_bytes([*lo, *hi])),
            other => Self::Other(HexBytes::from(other)),
        }
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Self::from_saved(r.str16()?))
    }

    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Self::Empty => out.put_u16(0),
            Self::Spell(name) => {
                let n = name.len().min(65534);
                out.put_u16(n as u16 + 1);
                out.push(b'S');
                out.put_bytes(name.0.get(..n).unwrap_or(&[]));
            }
            Self::Item(id) => {
                out.put_u16(3);
                out.push(b'I');
                out.put_u16(*id);
            }
            Self::Other(b) => out.put_str16(&b.0),
        }
    }
}

/// `P_StartGame` (12) S→C: one part of the start sequence, told apart by length.
///
/// | payload length | form |
/// |---|---|
/// |1|`"N"`: failure|
/// |2|`RuntimeID u16`: the player's world id, the 13th and last part|
/// |≥ 7|action-bar part: `firstSlot u8` + 3 × `(u16 len, slot$)` (12 of these, queued)|
#[doc(alias = "P_StartGame")]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "sub")]
pub enum StartGameReply {
    /// Three action-bar slots starting at `first_slot`.
    #[serde(rename = "ActionBar")]
    ActionBar {
        /// The first of the three slots (0..35).
        first_slot: u8,
        /// The slots; exactly 3 on the wire.
        slots: Vec<ActionSlot>,
    },
    /// The player's RuntimeID.
    #[serde(rename = "RuntimeID")]
    RuntimeId {
        /// The RuntimeID.
        runtime_id: u16,
    },
    /// `"N"`: the start failed.
    #[serde(rename = "N")]
    Failed,
}

impl Packet for StartGameReply {
    const ID: u8 = ids::P_START_GAME;
    const NAME: &'static str = "P_StartGame";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let v = match payload.len() {
            1 => match r.u8()? {
                b'N' => Self::Failed,
                c => return Err(super::bad_sub(0, c)),
            },
            2 => Self::RuntimeId {
                runtime_id: r.u16()?,
            },
            n if n >= 7 => Self::ActionBar {
                first_slot: r.u8()?,
                slots: r.many(3, ActionSlot::read)?,
            },
            n => {
                return Err(DecodeError::new(
                    0,
                    DecodeErrorKind::LengthMismatch {
                        expected: "1 (\"N\"), 2 (RuntimeID) or at least 7 (action bar)",
                        actual: n,
                    },
                ));
            }
        };
        r.finish()?;
        Ok(v)
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        match self {
            Self::ActionBar { first_slot, slots } => {
                out.push(*first_slot);
                for s in slots {
                    s.write(out);
                }
            }
            Self::RuntimeId { runtime_id } => out.put_u16(*runtime_id),
            Self::Failed => out.push(b'N'),
        }
    }
}
