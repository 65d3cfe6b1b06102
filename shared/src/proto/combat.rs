//! Combat and stats: `P_AttackActor` (18), `P_RightClick` (20), `P_StatUpdate` (22),
//! `P_GoldChange` (24), `P_XPUpdate` (32), `P_Projectile` (37) (reference §4.2, §4.3).

use serde::{Deserialize, Serialize};

use super::{DecodeCtx, Packet, bad_sub, ids};
use crate::wire::{DecodeError, RcString, Reader, WireWrite};

/// `P_AttackActor` (18) C→S: `targetRID u16`, exactly 2 bytes.
#[doc(alias = "P_AttackActor")]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttackActorC2S {
    /// The target's RuntimeID.
    pub target: u16,
}

impl Packet for AttackActorC2S {
    const ID: u8 = ids::P_ATTACK_ACTOR;
    const NAME: &'static str = "P_AttackActor";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let target = r.u16()?;
        r.finish()?;
        Ok(Self { target })
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        out.put_u16(self.target);
    }
}

/// `P_RightClick` (20) C→S: `RID u16`, exactly 2 bytes.
#[doc(alias = "P_RightClick")]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RightClick {
    /// The clicked actor's RuntimeID.
    pub target: u16,
}

impl Packet for RightClick {
    const ID: u8 = ids::P_RIGHT_CLICK;
    const NAME: &'static str = "P_RightClick";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let target = r.u16()?;
        r.finish()?;
        Ok(Self { target })
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        out.put_u16(self.target);
    }
}

/// `P_AttackActor` (18) S→C.
///
/// | sub | layout | to |
/// |---|---|---|
/// |`"H"`|`victimRID u16, (dmg+1) u16, type u8`|the attacker|
/// |`"Y"`|`attackerRID u16, (dmg+1) u16, type u8`|the victim|
/// |`"O"`|`attackerRID u16, victimRID u16`|other players in the zone|
///
/// `damage` is the real damage: the wire carries `damage + 1` as `u16`, so a miss (-1) is
/// wire 0 and decoded values are in -1..=65534.
#[doc(alias = "P_AttackActor")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "sub")]
pub enum AttackActorS2C {
    /// `"H"`: you hit someone.
    #[serde(rename = "H")]
    Hit {
        /// The victim.
        victim: u16,
        /// Damage (>0 hit, <0 miss/parry, 0 nothing).
        damage: i32,
        /// Damage type.
        damage_type: u8,
    },
    /// `"Y"`: someone hit you.
    #[serde(rename = "Y")]
    HitYou {
        /// The attacker.
        attacker: u16,
        /// Damage.
        damage: i32,
        /// Damage type.
        damage_type: u8,
    },
    /// `"O"`: observers see a swing, without damage.
    #[serde(rename = "O")]
    Observed {
        /// The attacker.
        attacker: u16,
        /// The victim.
        victim: u16,
    },
}

impl Packet for AttackActorS2C {
    const ID: u8 = ids::P_ATTACK_ACTOR;
    const NAME: &'static str = "P_AttackActor";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let v = match r.u8()? {
            b'H' => Self::Hit {
                victim: r.u16()?,
                damage: i32::from(r.u16()?) - 1,
                damage_type: r.u8()?,
            },
            b'Y' => Self::HitYou {
                attacker: r.u16()?,
                damage: i32::from(r.u16()?) - 1,
                damage_type: r.u8()?,
            },
            b'O' => Self::Observed {
                attacker: r.u16()?,
                victim: r.u16()?,
            },
            c => return Err(bad_sub(0, c)),
        };
        r.finish()?;
        Ok(v)
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        match *self {
            Self::Hit {
                victim,
                damage,
                damage_type,
            } => {
                out.push(b'H');
                out.put_u16(victim);
                out.put_u16(damage.wrapping_add(1) as u16);
                out.put_u8(damage_type);
            }
            Self::HitYou {
                attacker,
                damage,
                damage_type,
            } => {
                out.push(b'Y');
                out.put_u16(attacker);
                out.put_u16(damage.wrapping_add(1) as u16);
                out.put_u8(damage_type);
            }
            Self::Observed { attacker, victim } => {
                out.push(b'O');
                out.put_u16(attacker);
                out.put_u16(victim);
            }
        }
    }
}

/// `P_StatUpdate` (22) S→C.
///
/// | sub | layout |
/// |---|---|
/// |`"A"`|`RID u16, attr u8, value i16`: current value|
/// |`"M"`|`RID u16, attr u8, value i16`: maximum|
/// |`"R"`|`RID u16, value i16`: reputation|
///
/// Values are signed 16-bit on the wire (the server truncates). The client drops
/// attributes ≥ 40 and unknown RuntimeIDs.
#[doc(alias = "P_StatUpdate")]
#[doc(alias = "UpdateAttribute")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "sub")]
pub enum StatUpdate {
    /// `"A"`: current value.
    #[serde(rename = "A")]
    Value {
        /// The actor.
        runtime_id: u16,
        /// Attribute index.
        attribute: u8,
        /// New value.
        value: i16,
    },
    /// `"M"`: maximum.
    #[serde(rename = "M")]
    Max {
        /// The actor.
        runtime_id: u16,
        /// Attribute index.
        attribute: u8,
        /// New maximum.
        value: i16,
    },
    /// `"R"`: reputation.
    #[serde(rename = "R")]
    Reputation {
        /// The actor.
        runtime_id: u16,
        /// New reputation.
        value: i16,
    },
}

impl Packet for StatUpdate {
    const ID: u8 = ids::P_STAT_UPDATE;
    const NAME: &'static str = "P_StatUpdate";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let v = match r.u8()? {
            b'A' => Self::Value {
                runtime_id: r.u16()?,
                attribute: r.u8()?,
                value: r.i16()?,
            },
            b'M' => Self::Max {
                runtime_id: r.u16()?,
                attribute: r.u8()?,
                value: r.i16()?,
            },
            b'R' => Self::Reputation {
                runtime_id: r.u16()?,
                value: r.i16()?,
            },
            c => return Err(bad_sub(0, c)),
        };
        r.finish()?;
        Ok(v)
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        match *self {
            Self::Value {
                runtime_id,
                attribute,
                value,
            } => {
                out.push(b'A');
                out.put_u16(runtime_id);
                out.put_u8(attribute);
                out.put_i16(value);
            }
            Self::Max {
                runtime_id,
                attribute,
                value,
            } => {
                out.push(b'M');
                out.put_u16(runtime_id);
                out.put_u8(attribute);
                out.put_i16(value);
            }
            Self::Reputation { runtime_id, value } => {
                out.push(b'R');
                out.put_u16(runtime_id);
                out.put_i16(value);
            }
        }
    }
}

/// `P_GoldChange` (24) S→C: `"U"` + u32 adds, `"D"` + u32 subtracts.
#[doc(alias = "P_GoldChange")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "sub")]
pub enum GoldChange {
    /// `"U"`: gold gained.
    #[serde(rename = "U")]
    Up {
        /// Amount.
        amount: u32,
    },
    /// `"D"`: gold lost.
    #[serde(rename = "D")]
    Down {
        /// Amount.
        amount: u32,
    },
}

impl Packet for GoldChange {
    const ID: u8 = ids::P_GOLD_CHANGE;
    const NAME: &'static str = "P_GoldChange";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let v = match r.u8()? {
            b'U' => Self::Up { amount: r.u32()? },
            b'D' => Self::Down { amount: r.u32()? },
            c => return Err(bad_sub(0, c)),
        };
        r.finish()?;
        Ok(v)
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        match *self {
            Self::Up { amount } => {
                out.push(b'U');
                out.put_u32(amount);
            }
            Self::Down { amount } => {
                out.push(b'D');
                out.put_u32(amount);
            }
        }
    }
}

/// `P_XPUpdate` (32) S→C.
///
/// | sub | layout |
/// |---|---|
/// |`"M"`|`gained u32`|
/// |`"B"`|`barLevel u8` (at login)|
/// |`"U"`|`level u16`|
/// |`"L"`|`RID u16` + the rest, kept as bytes (layout not pinned down)|
#[doc(alias = "P_XPUpdate")]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "sub")]
pub enum XpUpdate {
    /// `"M"`: experience gained.
    #[serde(rename = "M")]
    Gained {
        /// Amount.
        amount: u32,
    },
    /// `"B"`: XP bar level.
    #[serde(rename = "B")]
    BarLevel {
        /// Bar level.
        bar_level: u8,
    },
    /// `"U"`: new level.
    #[serde(rename = "U")]
    Level {
        /// Level.
        level: u16,
    },
    /// `"L"`: another actor's level changed (`SetActorLevel`, to the zone except the
    /// subject).
    #[serde(rename = "L")]
    LevelUp {
        /// The actor.
        runtime_id: u16,
        /// Its new level.
        level: u16,
    },
}

impl Packet for XpUpdate {
    const ID: u8 = ids::P_XP_UPDATE;
    const NAME: &'static str = "P_XPUpdate";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let v = match r.u8()? {
            b'M' => Self::Gained { amount: r.u32()? },
            b'B' => Self::BarLevel { bar_level: r.u8()? },
            b'U' => Self::Level { level: r.u16()? },
            b'L' => Self::LevelUp {
                runtime_id: r.u16()?,
                level: r.u16()?,
            },
            c => return Err(bad_sub(0, c)),
        };
        r.finish()?;
        Ok(v)
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        match self {
            Self::Gained { amount } => {
                out.push(b'M');
                out.put_u32(*amount);
            }
            Self::BarLevel { bar_level } => {
                out.push(b'B');
                out.put_u8(*bar_level);
            }
            Self::Level { level } => {
                out.push(b'U');
                out.put_u16(*level);
            }
            Self::LevelUp { runtime_id, level } => {
                out.push(b'L');
                out.put_u16(*runtime_id);
                out.put_u16(*level);
            }
        }
    }
}

/// `P_Projectile` (37) S→C: `src u16, tgt u16, mesh u16, tex1 u16, tex2 u16, homing u8,
/// speed u8, u8 len emitter1, emitter2 (rest)`.
#[doc(alias = "P_Projectile")]
#[doc(alias = "FireProjectile")]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Projectile {
    /// Shooter.
    pub source: u16,
    /// Target.
    pub target: u16,
    /// Mesh id.
    pub mesh: u16,
    /// First texture.
    pub texture1: u16,
    /// Second texture.
    pub texture2: u16,
    /// Whether it homes.
    pub homing: u8,
    /// Speed.
    pub speed: u8,
    /// First emitter name.
    pub emitter1: RcString,
    /// Second emitter name (rest of the packet).
    pub emitter2: RcString,
}

impl Packet for Projectile {
    const ID: u8 = ids::P_PROJECTILE;
    const NAME: &'static str = "P_Projectile";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        Ok(Self {
            source: r.u16()?,
            target: r.u16()?,
            mesh: r.u16()?,
            texture1: r.u16()?,
            texture2: r.u16()?,
            homing: r.u8()?,
            speed: r.u8()?,
            emitter1: r.string8()?,
            emitter2: RcString::from(r.rest()),
        })
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        out.put_u16(self.source);
        out.put_u16(self.target);
        out.put_u16(self.mesh);
        out.put_u16(self.texture1);
        out.put_u16(self.texture2);
        out.put_u8(self.homing);
        out.put_u8(self.speed);
        out.put_str8(&self.emitter1.0);
        out.put_bytes(&self.emitter2.0);
    }
}
