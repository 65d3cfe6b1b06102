//! Abilities (spells): `P_KnownSpellUpdate` (26) S→C, `P_SpellUpdate` (27) C→S, and the
//! script effect `P_CreateEmitter` (28) S→C (reference §5, §9.26, §9.27, table §9).

use serde::{Deserialize, Serialize};

use super::{DecodeCtx, KnownSpell, Packet, bad_sub, ids};
use crate::wire::{DecodeError, RcString, Reader, WireWrite};

/// `P_KnownSpellUpdate` (26) S→C, to the owner only (client `ClientNet.bb`).
///
/// | sub | layout |
/// |---|---|
/// |`"A"`|a [`KnownSpell`] record: `level u16, id u16, thumb u16, recharge u16` (ms, cut to 16 bits), `name str16, desc str16, memorised u8`; the client appends it to its known list|
/// |`"D"`|spell name (rest): the client removes it by name from the action bar, the memorised slots and the known list (leaving a hole)|
/// |`"L"`|`level u32`, spell name (rest)|
#[doc(alias = "P_KnownSpellUpdate")]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "sub")]
pub enum KnownSpellUpdate {
    /// `"A"`: a spell was learned (`AddSpell`).
    #[serde(rename = "A")]
    Added {
        /// The spell, as in the login `"S"` block.
        spell: KnownSpell,
    },
    /// `"D"`: a spell was forgotten (`DeleteSpell`).
    #[serde(rename = "D")]
    Deleted {
        /// The spell's name (rest of the packet).
        spell_name: RcString,
    },
    /// `"L"`: a spell's level changed (`SetAbilityLevel`).
    #[serde(rename = "L")]
    Level {
        /// The new level (`u32` on the wire).
        level: u32,
        /// The spell's name (rest of the packet).
        spell_name: RcString,
    },
}

impl Packet for KnownSpellUpdate {
    const ID: u8 = ids::P_KNOWN_SPELL_UPDATE;
    const NAME: &'static str = "P_KnownSpellUpdate";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let v = match r.u8()? {
            b'A' => Self::Added {
                spell: KnownSpell::read(&mut r)?,
            },
            b'D' => Self::Deleted {
                spell_name: RcString::from(r.rest()),
            },
            b'L' => Self::Level {
                level: r.u32()?,
                spell_name: RcString::from(r.rest()),
            },
            c => return Err(bad_sub(0, c)),
        };
        r.finish()?;
        Ok(v)
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        match self {
            Self::Added { spell } => {
                out.push(b'A');
                spell.write(out);
            }
            Self::Deleted { spell_name } => {
                out.push(b'D');
                out.put_bytes(spell_name.as_bytes());
            }
            Self::Level { level, spell_name } => {
                out.push(b'L');
                out.put_u32(*level);
                out.put_bytes(spell_name.as_bytes());
            }
        }
    }
}

/// `P_SpellUpdate` (27) C→S (`ServerNet.bb`).
///
/// | sub | layout | meaning |
/// |---|---|---|
/// |`"M"`|`knownIndex u16`|memorise the client's known spell at that index (6 s, no reply)|
/// |`"U"`|`knownIndex u16`|un-memorise it|
/// |`"F"`|`spellID u16 [targetRID u16]`|cast (`"F"` sends the spell **id**, not an index)|
///
/// Vector: `1b 46 00 00 07 00` is Fireball (id 0) at RuntimeID 7.
#[doc(alias = "P_SpellUpdate")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "sub")]
pub enum SpellUpdate {
    /// `"M"`: memorise.
    #[serde(rename = "M")]
    Memorise {
        /// The client's known-spell index.
        index: u16,
    },
    /// `"U"`: un-memorise.
    #[serde(rename = "U")]
    Unmemorise {
        /// The client's known-spell index.
        index: u16,
    },
    /// `"F"`: fire (cast).
    #[serde(rename = "F")]
    Fire {
        /// The spell id.
        spell_id: u16,
        /// The target's RuntimeID, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<u16>,
    },
}

impl Packet for SpellUpdate {
    const ID: u8 = ids::P_SPELL_UPDATE;
    const NAME: &'static str = "P_SpellUpdate";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let v = match r.u8()? {
            b'M' => Self::Memorise { index: r.u16()? },
            b'U' => Self::Unmemorise { index: r.u16()? },
            b'F' => {
                let spell_id = r.u16()?;
                let target = if r.is_empty() { None } else { Some(r.u16()?) };
                Self::Fire { spell_id, target }
            }
            c => return Err(bad_sub(0, c)),
        };
        r.finish()?;
        Ok(v)
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        match self {
            Self::Memorise { index } => {
                out.push(b'M');
                out.put_u16(*index);
            }
            Self::Unmemorise { index } => {
                out.push(b'U');
                out.put_u16(*index);
            }
            Self::Fire { spell_id, target } => {
                out.push(b'F');
                out.put_u16(*spell_id);
                if let Some(t) = target {
                    out.put_u16(*t);
                }
            }
        }
    }
}

/// `P_CreateEmitter` (28) S→C: `tex u16, lifetime ms u32, RID u16 (0: no actor), offset
/// x, y, z f32, config name (rest)`. The client loads `Data\Emitter Configs\<name>.rpc`
/// and attaches the emitter to the actor (or places it at the offset).
#[doc(alias = "P_CreateEmitter")]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateEmitter {
    /// Texture id.
    pub texture: u16,
    /// Lifetime in milliseconds.
    pub lifetime_ms: u32,
    /// The actor it is attached to (0: none).
    pub runtime_id: u16,
    /// Offset X.
    #[serde(with = "crate::wire::json_f32")]
    pub offset_x: f32,
    /// Offset Y.
    #[serde(with = "crate::wire::json_f32")]
    pub offset_y: f32,
    /// Offset Z.
    #[serde(with = "crate::wire::json_f32")]
    pub offset_z: f32,
    /// The emitter configuration's name (rest of the packet).
    pub emitter: RcString,
}

impl Packet for CreateEmitter {
    const ID: u8 = ids::P_CREATE_EMITTER;
    const NAME: &'static str = "P_CreateEmitter";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let v = Self {
            texture: r.u16()?,
            lifetime_ms: r.u32()?,
            runtime_id: r.u16()?,
            offset_x: r.f32()?,
            offset_y: r.f32()?,
            offset_z: r.f32()?,
            emitter: RcString::from(r.rest()),
        };
        r.finish()?;
        Ok(v)
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        out.put_u16(self.texture);
        out.put_u32(self.lifetime_ms);
        out.put_u16(self.runtime_id);
        out.put_f32(self.offset_x);
        out.put_f32(self.offset_y);
        out.put_f32(self.offset_z);
        out.put_bytes(self.emitter.as_bytes());
    }
}
