//! `P_ActorEffect` (36) S→C: actor effects (buffs and debuffs) shown to their owner
//! (reference §9.36).

use serde::{Deserialize, Serialize};

use super::{DecodeCtx, Packet, bad_sub, ids};
use crate::wire::{DecodeError, RcString, Reader, WireWrite};

/// How many attribute deltas an `"R"` carries.
pub const EFFECT_DELTAS: usize = 40;

/// `P_ActorEffect` (36) S→C, to the effect's owner only.
///
/// | sub | layout |
/// |---|---|
/// |`"A"`|`effect handle u32, icon u16, name (rest)`: the client adds an icon|
/// |`"E"`|`attr u8, delta i32`: `Me.Value[attr] += delta`|
/// |`"R"`|`effect handle u32, 40 × delta i32`: removes the icon, `Value[i] -= delta[i]`|
#[doc(alias = "P_ActorEffect")]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "sub")]
pub enum ActorEffect {
    /// `"A"`: an effect was added.
    #[serde(rename = "A")]
    Added {
        /// The effect's handle (stable while it lives).
        handle: u32,
        /// Icon texture id.
        icon: u16,
        /// The effect's name (rest of the packet).
        effect_name: RcString,
    },
    /// `"E"`: one attribute of the owner changed by `delta`.
    #[serde(rename = "E")]
    Delta {
        /// Attribute index.
        attr: u8,
        /// Change.
        delta: i32,
    },
    /// `"R"`: the effect ended; its deltas are taken back.
    #[serde(rename = "R")]
    Removed {
        /// The effect's handle.
        handle: u32,
        /// The 40 deltas (encoded padded or cut to 40).
        deltas: Vec<i32>,
    },
}

impl Packet for ActorEffect {
    const ID: u8 = ids::P_ACTOR_EFFECT;
    const NAME: &'static str = "P_ActorEffect";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let v = match r.u8()? {
            b'A' => Self::Added {
                handle: r.u32()?,
                icon: r.u16()?,
                effect_name: RcString::from(r.rest()),
            },
            b'E' => Self::Delta {
                attr: r.u8()?,
                delta: r.i32()?,
            },
            b'R' => {
                let handle = r.u32()?;
                let mut deltas = Vec::with_capacity(EFFECT_DELTAS);
                for _ in 0..EFFECT_DELTAS {
                    deltas.push(r.i32()?);
                }
                Self::Removed { handle, deltas }
            }
            c => return Err(bad_sub(0, c)),
        };
        r.finish()?;
        Ok(v)
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        match self {
            Self::Added {
                handle,
                icon,
                effect_name,
            } => {
                out.push(b'A');
                out.put_u32(*handle);
                out.put_u16(*icon);
                out.put_bytes(&effect_name.0);
            }
            Self::Delta { attr, delta } => {
                out.push(b'E');
                out.put_u8(*attr);
                out.put_i32(*delta);
            }
            Self::Removed { handle, deltas } => {
                out.push(b'R');
                out.put_u32(*handle);
                for i in 0..EFFECT_DELTAS {
                    out.put_i32(deltas.get(i).copied().unwrap_or(0));
                }
            }
        }
    }
}
