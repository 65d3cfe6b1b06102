//! Actor lifecycle, placement and looks: `P_ChangeArea` (9), `P_NewActor` (11),
//! `P_ActorGone` (13), `P_ActorDead` (19), `P_NameChange` (25), `P_AnimateActor` (30),
//! `P_AppearanceUpdate` (39), `P_Jump` (46), `P_FloatingNumber` (48), `P_RepositionActor`
//! (49) (reference §4.4–§4.6, §7.8; content reference §9.x for the script-driven ones).

use serde::{Deserialize, Serialize};

use super::{DecodeCtx, Packet, ids};
use crate::wire::{DecodeError, DecodeErrorKind, HexBytes, RcString, Reader, WireWrite, json_f32};

/// `P_ChangeArea` (9) S→C, to the warped player.
///
/// | off | type | field |
/// |---|---|---|
/// |1|f32|X|
/// |5|f32|Y|
/// |9|f32|Z|
/// |13|f32|Yaw|
/// |17|u8|PvP|
/// |18|u16|Gravity (0–1000, default 300)|
/// |20|u32|area-instance handle (the client's CurrentAreaID)|
/// |24|u8|weather|
/// |25|u8 len + bytes|area name|
#[doc(alias = "P_ChangeArea")]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChangeArea {
    /// X.
    #[serde(with = "json_f32")]
    pub x: f32,
    /// Y.
    #[serde(with = "json_f32")]
    pub y: f32,
    /// Z.
    #[serde(with = "json_f32")]
    pub z: f32,
    /// Yaw.
    #[serde(with = "json_f32")]
    pub yaw: f32,
    /// Whether PvP is on in the area.
    pub pvp: u8,
    /// Gravity.
    pub gravity: u16,
    /// The area-instance handle.
    pub instance_handle: u32,
    /// Current weather (0 sun .. 5 wind).
    pub weather: u8,
    /// The area (zone) name.
    pub area: RcString,
}

impl Packet for ChangeArea {
    const ID: u8 = ids::P_CHANGE_AREA;
    const NAME: &'static str = "P_ChangeArea";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let v = Self {
            x: r.f32()?,
            y: r.f32()?,
            z: r.f32()?,
            yaw: r.f32()?,
            pvp: r.u8()?,
            gravity: r.u16()?,
            instance_handle: r.u32()?,
            weather: r.u8()?,
            area: r.string8()?,
        };
        r.finish()?;
        Ok(v)
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        out.put_f32(self.x);
        out.put_f32(self.y);
        out.put_f32(self.z);
        out.put_f32(self.yaw);
        out.put_u8(self.pvp);
        out.put_u16(self.gravity);
        out.put_u32(self.instance_handle);
        out.put_u8(self.weather);
        out.put_str8(&self.area.0);
    }
}

/// `P_ChangeArea` (9) C→S acknowledgement. The server only clears `IgnoreUpdate`; the
/// payload is kept as sent.
#[doc(alias = "P_ChangeArea")]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeAreaAck {
    /// The payload, uninterpreted.
    pub bytes: HexBytes,
}

impl Packet for ChangeAreaAck {
    const ID: u8 = ids::P_CHANGE_AREA;
    const NAME: &'static str = "P_ChangeArea";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            bytes: HexBytes::from(payload),
        })
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        out.put_bytes(&self.bytes.0);
    }
}

/// `P_RepositionActor` (49) C→S acknowledgement; the payload is kept as sent.
#[doc(alias = "P_RepositionActor")]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepositionAck {
    /// The payload, uninterpreted.
    pub bytes: HexBytes,
}

impl Packet for RepositionAck {
    const ID: u8 = ids::P_REPOSITION_ACTOR;
    const NAME: &'static str = "P_RepositionActor";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            bytes: HexBytes::from(payload),
        })
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        out.put_bytes(&self.bytes.0);
    }
}

/// Bytes after the tag in a `P_NewActor` without the gender byte.
const NEW_ACTOR_TAIL: usize = 127;

/// `P_NewActor` (11) S→C (`ActorInstanceToString$`).
///
/// | off | type | field |
/// |---|---|---|
/// |1|u32|instance handle (dropped by the client if not current)|
/// |5|u16|RuntimeID|
/// |7|u16|Level|
/// |9|u32|XP|
/// |13|u16|template id|
/// |15|4 × f32|X, Y, Z, Yaw|
/// |31|u8|human (0 for NPCs)|
/// |32|u8 len + bytes|name|
/// |…|u8 len + bytes|tag|
/// |…|u8|gender, **only if the template's `Genders == 0`**|
/// |…|5 × u16|reputation, face, hair, body, beard|
/// |…|4 × u16|Speed value/max, Health value/max|
/// |…|4 × u16|weapon, shield, hat, chest item ids (65535 = none)|
/// |…|u8|home faction|
/// |…|100 × u8|faction ratings|
///
/// The gender byte's presence is decided by length (the two forms differ by exactly one
/// byte); see [`DecodeCtx`]. `reputation` is signed.
#[doc(alias = "P_NewActor")]
#[doc(alias = "ActorInstanceToString")]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewActor {
    /// Area-instance handle.
    pub instance_handle: u32,
    /// RuntimeID.
    pub runtime_id: u16,
    /// Level.
    pub level: u16,
    /// Experience.
    pub xp: u32,
    /// Actor template id.
    pub template_id: u16,
    /// X.
    #[serde(with = "json_f32")]
    pub x: f32,
    /// Y.
    #[serde(with = "json_f32")]
    pub y: f32,
    /// Z.
    #[serde(with = "json_f32")]
    pub z: f32,
    /// Yaw.
    #[serde(with = "json_f32")]
    pub yaw: f32,
    /// 1 for a player, 0 for an NPC.
    pub human: u8,
    /// Name.
    pub actor_name: RcString,
    /// Tag (guild or title).
    pub tag: RcString,
    /// Gender, present only when the template's `Genders == 0`.
    pub gender: Option<u8>,
    /// Reputation (signed).
    pub reputation: i16,
    /// Face.
    pub face: u16,
    /// Hair.
    pub hair: u16,
    /// Body.
    pub body: u16,
    /// Beard.
    pub beard: u16,
    /// Speed value.
    pub speed: u16,
    /// Speed maximum.
    pub speed_max: u16,
    /// Health value.
    pub health: u16,
    /// Health maximum.
    pub health_max: u16,
    /// Weapon item id (65535 = none).
    pub weapon: u16,
    /// Shield item id.
    pub shield: u16,
    /// Hat item id.
    pub hat: u16,
    /// Chest item id.
    pub chest: u16,
    /// Home faction.
    pub home_faction: u8,
    /// 100 faction ratings (100 = neutral).
    pub ratings: Vec<u8>,
}

impl Packet for NewActor {
    const ID: u8 = ids::P_NEW_ACTOR;
    const NAME: &'static str = "P_NewActor";
    fn decode_payload(payload: &[u8], ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let instance_handle = r.u32()?;
        let runtime_id = r.u16()?;
        let level = r.u16()?;
        let xp = r.u32()?;
        let template_id = r.u16()?;
        let x = r.f32()?;
        let y = r.f32()?;
        let z = r.f32()?;
        let yaw = r.f32()?;
        let human = r.u8()?;
        let actor_name = r.string8()?;
        let tag = r.string8()?;
        let has_gender = match ctx.template_has_gender {
            Some(f) => f(template_id),
            None => match r.remaining() {
                NEW_ACTOR_TAIL => false,
                n if n == NEW_ACTOR_TAIL + 1 => true,
                n => {
                    return Err(r.error(DecodeErrorKind::LengthMismatch {
                        expected: "127 or 128 bytes after the tag",
                        actual: n,
                    }));
                }
            },
        };
        let gender = if has_gender { Some(r.u8()?) } else { None };
        let v = Self {
            instance_handle,
            runtime_id,
            level,
            xp,
            template_id,
            x,
            y,
            z,
            yaw,
            human,
            actor_name,
            tag,
            gender,
            reputation: r.i16()?,
            face: r.u16()?,
            hair: r.u16()?,
            body: r.u16()?,
            beard: r.u16()?,
            speed: r.u16()?,
            speed_max: r.u16()?,
            health: r.u16()?,
            health_max: r.u16()?,
            weapon: r.u16()?,
            shield: r.u16()?,
            hat: r.u16()?,
            chest: r.u16()?,
            home_faction: r.u8()?,
            ratings: r.bytes(100)?.to_vec(),
        };
        r.finish()?;
        Ok(v)
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        out.put_u32(self.instance_handle);
        out.put_u16(self.runtime_id);
        out.put_u16(self.level);
        out.put_u32(self.xp);
        out.put_u16(self.template_id);
        out.put_f32(self.x);
        out.put_f32(self.y);
        out.put_f32(self.z);
        out.put_f32(self.yaw);
        out.put_u8(self.human);
        out.put_str8(&self.actor_name.0);
        out.put_str8(&self.tag.0);
        if let Some(g) = self.gender {
            out.put_u8(g);
        }
        out.put_i16(self.reputation);
        for v in [
            self.face,
            self.hair,
            self.body,
            self.beard,
            self.speed,
            self.speed_max,
            self.health,
            self.health_max,
            self.weapon,
            self.shield,
            self.hat,
            self.chest,
        ] {
            out.put_u16(v);
        }
        out.put_u8(self.home_faction);
        for i in 0..100 {
            out.put_u8(self.ratings.get(i).copied().unwrap_or(100));
        }
    }
}

/// `P_ActorGone` (13) S→C: free an actor.
///
/// The RuntimeID is 2 bytes on disconnect and **4 bytes** from SetArea (quirk kept);
/// `four_bytes` records which form was sent. In the 2-byte form only the low 16 bits of
/// `runtime_id` are written.
#[doc(alias = "P_ActorGone")]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActorGone {
    /// The RuntimeID.
    pub runtime_id: u32,
    /// Whether the 4-byte (SetArea) form was used.
    pub four_bytes: bool,
}

impl Packet for ActorGone {
    const ID: u8 = ids::P_ACTOR_GONE;
    const NAME: &'static str = "P_ActorGone";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        match *payload {
            [a, b] => Ok(Self {
                runtime_id: u32::from(u16::from_le_bytes([a, b])),
                four_bytes: false,
            }),
            [a, b, c, d] => Ok(Self {
                runtime_id: u32::from_le_bytes([a, b, c, d]),
                four_bytes: true,
            }),
            _ => Err(DecodeError::new(
                0,
                DecodeErrorKind::LengthMismatch {
                    expected: "2 or 4",
                    actual: payload.len(),
                },
            )),
        }
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        if self.four_bytes {
            out.put_u32(self.runtime_id);
        } else {
            out.put_u16(self.runtime_id as u16);
        }
    }
}

/// `P_ActorDead` (19) S→C: `RID u16 [, killerRID u16]` (NPC deaths, to the zone).
#[doc(alias = "P_ActorDead")]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActorDead {
    /// The dead actor.
    pub runtime_id: u16,
    /// The killer, if any.
    pub killer: Option<u16>,
}

impl Packet for ActorDead {
    const ID: u8 = ids::P_ACTOR_DEAD;
    const NAME: &'static str = "P_ActorDead";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let runtime_id = r.u16()?;
        let killer = if r.is_empty() { None } else { Some(r.u16()?) };
        r.finish()?;
        Ok(Self { runtime_id, killer })
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        out.put_u16(self.runtime_id);
        if let Some(k) = self.killer {
            out.put_u16(k);
        }
    }
}

/// `P_NameChange` (25) S→C: `RID u16, u8 len, name, tag (rest)`.
#[doc(alias = "P_NameChange")]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NameChange {
    /// The actor.
    pub runtime_id: u16,
    /// New name.
    pub actor_name: RcString,
    /// New tag (rest of the packet).
    pub tag: RcString,
}

impl Packet for NameChange {
    const ID: u8 = ids::P_NAME_CHANGE;
    const NAME: &'static str = "P_NameChange";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        Ok(Self {
            runtime_id: r.u16()?,
            actor_name: r.string8()?,
            tag: RcString::from(r.rest()),
        })
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        out.put_u16(self.runtime_id);
        out.put_str8(&self.actor_name.0);
        out.put_bytes(&self.tag.0);
    }
}

/// `P_AnimateActor` (30) S→C: `RID u16, fixedSpeed u8, speed f32, anim name (rest)`.
///
/// Sent to the zone by the script command `AnimateActor(actor, anim$, speed#, fixed%)`;
/// the client looks the name up in the actor's (gender's) animation set, plays it once and
/// stops the actor where it stands. An unknown name is ignored by the client.
#[doc(alias = "P_AnimateActor")]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AnimateActor {
    /// The actor.
    pub runtime_id: u16,
    /// The script's `fixed%` (low byte). The client compares it with 1: at 1, `speed` is
    /// multiplied by the sequence's frame count (a fixed duration whatever its length);
    /// any other value plays at `speed` as given.
    pub fixed_speed: u8,
    /// Playback speed.
    #[serde(with = "json_f32")]
    pub speed: f32,
    /// The animation's name (rest of the packet).
    pub animation: RcString,
}

impl Packet for AnimateActor {
    const ID: u8 = ids::P_ANIMATE_ACTOR;
    const NAME: &'static str = "P_AnimateActor";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        Ok(Self {
            runtime_id: r.u16()?,
            fixed_speed: r.u8()?,
            speed: r.f32()?,
            animation: RcString::from(r.rest()),
        })
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        out.put_u16(self.runtime_id);
        out.put_u8(self.fixed_speed);
        out.put_f32(self.speed);
        out.put_bytes(&self.animation.0);
    }
}

/// `P_AppearanceUpdate` (39) S→C: `sub u8, RID u16`, then one value, to the zone.
///
/// | sub | value | script command |
/// |---|---|---|
/// |`"C"`|actor template id u16|`ChangeActor`|
/// |`"G"`|gender u8|`SetActorGender`|
/// |`"D"`|beard u8|`SetActorBeard`|
/// |`"H"`|hair u8|`SetActorHair`|
/// |`"F"`|face u8|`SetActorFace`|
/// |`"B"`|body (clothes) u8|`SetActorClothes`|
///
/// Indices are 0-based (the script commands take 1-based values and subtract 1). Realm
/// Crafter's `SetActorHair` sends `"D"` instead of `"H"` (content reference §9.x); the codec
/// models both codes as the client reads them. An unknown sub-code is an error.
#[doc(alias = "P_AppearanceUpdate")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "sub")]
pub enum AppearanceUpdate {
    /// `"C"`: the actor becomes another template (`ChangeActor`).
    #[serde(rename = "C")]
    ChangeActor {
        /// The actor.
        runtime_id: u16,
        /// The new actor template id.
        template_id: u16,
    },
    /// `"G"`: gender (0 male, 1 female).
    #[serde(rename = "G")]
    Gender {
        /// The actor.
        runtime_id: u16,
        /// The new gender.
        gender: u8,
    },
    /// `"D"`: beard index.
    #[serde(rename = "D")]
    Beard {
        /// The actor.
        runtime_id: u16,
        /// The new beard index (0-based).
        beard: u8,
    },
    /// `"H"`: hair index.
    #[serde(rename = "H")]
    Hair {
        /// The actor.
        runtime_id: u16,
        /// The new hair index (0-based).
        hair: u8,
    },
    /// `"F"`: face texture index.
    #[serde(rename = "F")]
    Face {
        /// The actor.
        runtime_id: u16,
        /// The new face index (0-based).
        face: u8,
    },
    /// `"B"`: body (clothes) texture index.
    #[serde(rename = "B")]
    Body {
        /// The actor.
        runtime_id: u16,
        /// The new body index (0-based).
        body: u8,
    },
}

impl AppearanceUpdate {
    /// The actor whose appearance changed.
    pub fn runtime_id(&self) -> u16 {
        match *self {
            Self::ChangeActor { runtime_id, .. }
            | Self::Gender { runtime_id, .. }
            | Self::Beard { runtime_id, .. }
            | Self::Hair { runtime_id, .. }
            | Self::Face { runtime_id, .. }
            | Self::Body { runtime_id, .. } => runtime_id,
        }
    }
}

impl Packet for AppearanceUpdate {
    const ID: u8 = ids::P_APPEARANCE_UPDATE;
    const NAME: &'static str = "P_AppearanceUpdate";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let v = match r.u8()? {
            b'C' => Self::ChangeActor {
                runtime_id: r.u16()?,
                template_id: r.u16()?,
            },
            b'G' => Self::Gender {
                runtime_id: r.u16()?,
                gender: r.u8()?,
            },
            b'D' => Self::Beard {
                runtime_id: r.u16()?,
                beard: r.u8()?,
            },
            b'H' => Self::Hair {
                runtime_id: r.u16()?,
                hair: r.u8()?,
            },
            b'F' => Self::Face {
                runtime_id: r.u16()?,
                face: r.u8()?,
            },
            b'B' => Self::Body {
                runtime_id: r.u16()?,
                body: r.u8()?,
            },
            c => return Err(super::bad_sub(0, c)),
        };
        r.finish()?;
        Ok(v)
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        let (sub, value) = match *self {
            Self::ChangeActor { template_id, .. } => {
                out.push(b'C');
                out.put_u16(self.runtime_id());
                out.put_u16(template_id);
                return;
            }
            Self::Gender { gender, .. } => (b'G', gender),
            Self::Beard { beard, .. } => (b'D', beard),
            Self::Hair { hair, .. } => (b'H', hair),
            Self::Face { face, .. } => (b'F', face),
            Self::Body { body, .. } => (b'B', body),
        };
        out.push(sub);
        out.put_u16(self.runtime_id());
        out.put_u8(value);
    }
}

/// `P_Jump` (46) S→C: `RID u16`, broadcast to the zone.
#[doc(alias = "P_Jump")]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JumpS2C {
    /// The jumping actor.
    pub runtime_id: u16,
}

impl Packet for JumpS2C {
    const ID: u8 = ids::P_JUMP;
    const NAME: &'static str = "P_Jump";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let runtime_id = r.u16()?;
        r.finish()?;
        Ok(Self { runtime_id })
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        out.put_u16(self.runtime_id);
    }
}

/// `P_FloatingNumber` (48) S→C: `RID u16, amount i32, r, g, b u8`.
#[doc(alias = "P_FloatingNumber")]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FloatingNumber {
    /// The actor the number floats above.
    pub runtime_id: u16,
    /// The number.
    pub amount: i32,
    /// Red.
    pub r: u8,
    /// Green.
    pub g: u8,
    /// Blue.
    pub b: u8,
}

impl Packet for FloatingNumber {
    const ID: u8 = ids::P_FLOATING_NUMBER;
    const NAME: &'static str = "P_FloatingNumber";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut rd = Reader::new(payload);
        let runtime_id = rd.u16()?;
        let amount = rd.i32()?;
        let [r, g, b] = rd.array::<3>()?;
        rd.finish()?;
        Ok(Self {
            runtime_id,
            amount,
            r,
            g,
            b,
        })
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        out.put_u16(self.runtime_id);
        out.put_i32(self.amount);
        out.put_bytes(&[self.r, self.g, self.b]);
    }
}

/// `P_RepositionActor` (49) S→C, told apart by length and sub-code.
///
/// | form | length | layout |
/// |---|---|---|
/// |`"M"`|17|`"M"`, `RID u16`, `x, y, z f32`, 2 × u8|
/// |`"R"`|7|`"R"`, `RID u16`, `yaw f32`|
/// |SetArea quirk|15|`RID u16`, `x, y, z f32`, `u8` — **no `"M"`** (reference §7.8)|
#[doc(alias = "P_RepositionActor")]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "sub")]
pub enum RepositionActor {
    /// `"M"`: move.
    #[serde(rename = "M")]
    Move {
        /// The actor.
        runtime_id: u16,
        /// X.
        #[serde(with = "json_f32")]
        x: f32,
        /// Y.
        #[serde(with = "json_f32")]
        y: f32,
        /// Z.
        #[serde(with = "json_f32")]
        z: f32,
        /// First flag byte.
        flag1: u8,
        /// Second flag byte.
        flag2: u8,
    },
    /// `"R"`: rotate.
    #[serde(rename = "R")]
    Rotate {
        /// The actor.
        runtime_id: u16,
        /// Yaw.
        #[serde(with = "json_f32")]
        yaw: f32,
    },
    /// SetArea's same-instance form without the `"M"` byte (the client mis-parses it).
    #[serde(rename = "SetArea")]
    SetArea {
        /// The actor.
        runtime_id: u16,
        /// X.
        #[serde(with = "json_f32")]
        x: f32,
        /// Y.
        #[serde(with = "json_f32")]
        y: f32,
        /// Z.
        #[serde(with = "json_f32")]
        z: f32,
        /// The trailing byte (0).
        flag: u8,
    },
}

impl Packet for RepositionActor {
    const ID: u8 = ids::P_REPOSITION_ACTOR;
    const NAME: &'static str = "P_RepositionActor";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let v = match (payload.len(), payload.first()) {
            (17, Some(b'M')) => {
                r.u8()?;
                Self::Move {
                    runtime_id: r.u16()?,
                    x: r.f32()?,
                    y: r.f32()?,
                    z: r.f32()?,
                    flag1: r.u8()?,
                    flag2: r.u8()?,
                }
            }
            (7, Some(b'R')) => {
                r.u8()?;
                Self::Rotate {
                    runtime_id: r.u16()?,
                    yaw: r.f32()?,
                }
            }
            (15, _) => Self::SetArea {
                runtime_id: r.u16()?,
                x: r.f32()?,
                y: r.f32()?,
                z: r.f32()?,
                flag: r.u8()?,
            },
            (17 | 7, Some(&c)) => return Err(super::bad_sub(0, c)),
            (n, _) => {
                return Err(DecodeError::new(
                    0,
                    DecodeErrorKind::LengthMismatch {
                        expected: "17 (\"M\"), 7 (\"R\") or 15 (SetArea form)",
                        actual: n,
                    },
                ));
            }
        };
        r.finish()?;
        Ok(v)
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        match *self {
            Self::Move {
                runtime_id,
                x,
                y,
                z,
                flag1,
                flag2,
            } => {
                out.push(b'M');
                out.put_u16(runtime_id);
                out.put_f32(x);
                out.put_f32(y);
                out.put_f32(z);
                out.put_bytes(&[flag1, flag2]);
            }
            Self::Rotate { runtime_id, yaw } => {
                out.push(b'R');
                out.put_u16(runtime_id);
                out.put_f32(yaw);
            }
            Self::SetArea {
                runtime_id,
                x,
                y,
                z,
                flag,
            } => {
                out.put_u16(runtime_id);
                out.put_f32(x);
                out.put_f32(y);
                out.put_f32(z);
                out.put_u8(flag);
            }
        }
    }
}
