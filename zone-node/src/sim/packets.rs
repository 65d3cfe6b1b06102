//! Server→client packet bodies the simulation emits, written straight into framed byte
//! buffers (`[len u16 LE][type u8][payload]`, `docs/protocol.md`). Layouts follow the
//! reference §4; the bytes are checked against `shared::proto` in the tests.

use super::events::RuntimeId;
use super::state::{Actor, ActorId, ZoneState};

/// `P_ChangeArea`.
pub const P_CHANGE_AREA: u8 = 9;
/// `P_NewActor`.
pub const P_NEW_ACTOR: u8 = 11;
/// `P_ActorGone`.
pub const P_ACTOR_GONE: u8 = 13;
/// `P_StandardUpdate`.
pub const P_STANDARD_UPDATE: u8 = 14;
/// `P_ChatMessage`.
pub const P_CHAT_MESSAGE: u8 = 16;
/// `P_WeatherChange`.
pub const P_WEATHER_CHANGE: u8 = 17;
/// `P_AttackActor`.
pub const P_ATTACK_ACTOR: u8 = 18;
/// `P_ActorDead`.
pub const P_ACTOR_DEAD: u8 = 19;
/// `P_StatUpdate`.
pub const P_STAT_UPDATE: u8 = 22;
/// `P_GoldChange`.
pub const P_GOLD_CHANGE: u8 = 24;
/// `P_NameChange`.
pub const P_NAME_CHANGE: u8 = 25;
/// `P_StartGame`.
pub const P_START_GAME: u8 = 12;
/// `P_XPUpdate`.
pub const P_XP_UPDATE: u8 = 32;
/// `P_Projectile`.
pub const P_PROJECTILE: u8 = 37;
/// `P_PartyUpdate`.
pub const P_PARTY_UPDATE: u8 = 38;
/// `P_ItemHealth`.
pub const P_ITEM_HEALTH: u8 = 45;
/// `P_Jump`.
pub const P_JUMP: u8 = 46;
/// `P_FloatingNumber`.
pub const P_FLOATING_NUMBER: u8 = 48;
/// `P_RepositionActor`.
pub const P_REPOSITION_ACTOR: u8 = 49;

/// Chat colour byte: yellow system text.
pub const CHAT_SYSTEM: u8 = 254;
/// Chat colour byte: red (errors, yell).
pub const CHAT_RED: u8 = 253;
/// Chat colour byte: magenta (/me, /pm).
pub const CHAT_MAGENTA: u8 = 252;
/// Chat colour byte: green (guild, party).
pub const CHAT_GREEN: u8 = 251;
/// Chat colour byte: RGB in the next three bytes.
pub const CHAT_RGB: u8 = 250;

/// Size of the S→C `P_StandardUpdate` body without a tail.
pub const UPDATE_BODY: usize = 22;

/// Append one frame. Payloads longer than 65534 bytes are truncated (never produced here).
pub fn push_frame(out: &mut Vec<u8>, ptype: u8, payload: &[u8]) {
    let n = payload.len().min(65534);
    let len = u16::try_from(n + 1).unwrap_or(u16::MAX);
    out.extend_from_slice(&len.to_le_bytes());
    out.push(ptype);
    out.extend_from_slice(payload.get(..n).unwrap_or(payload));
}

/// Write a whole `P_StandardUpdate` frame (header, 22-byte body, optional tail).
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn write_update_frame(
    out: &mut Vec<u8>,
    rid: RuntimeId,
    x: f32,
    z: f32,
    running: bool,
    backward: bool,
    dest_x: f32,
    dest_z: f32,
    mount: RuntimeId,
    tail: &[u8],
) {
    let len = u16::try_from(1 + UPDATE_BODY + tail.len()).unwrap_or(u16::MAX);
    let mut b = [0u8; 3 + UPDATE_BODY];
    b[0..2].copy_from_slice(&len.to_le_bytes());
    b[2] = P_STANDARD_UPDATE;
    b[3..5].copy_from_slice(&rid.to_le_bytes());
    b[5..9].copy_from_slice(&x.to_le_bytes());
    b[9..13].copy_from_slice(&z.to_le_bytes());
    b[13] = u8::from(running);
    b[14] = u8::from(backward);
    b[15..19].copy_from_slice(&dest_x.to_le_bytes());
    b[19..23].copy_from_slice(&dest_z.to_le_bytes());
    b[23..25].copy_from_slice(&mount.to_le_bytes());
    out.extend_from_slice(&b);
    out.extend_from_slice(tail);
}

/// `P_StatUpdate "A"`: current value (truncated to 16 bits).
pub fn stat_value(rid: RuntimeId, attr: u8, value: i32) -> [u8; 6] {
    stat(b'A', rid, attr, value)
}

/// `P_StatUpdate "M"`: maximum.
pub fn stat_max(rid: RuntimeId, attr: u8, value: i32) -> [u8; 6] {
    stat(b'M', rid, attr, value)
}

fn stat(code: u8, rid: RuntimeId, attr: u8, value: i32) -> [u8; 6] {
    let r = rid.to_le_bytes();
    let v = (value as u16).to_le_bytes();
    [code, r[0], r[1], attr, v[0], v[1]]
}

/// `P_StatUpdate "R"`: reputation.
pub fn stat_reputation(rid: RuntimeId, value: i32) -> [u8; 5] {
    let r = rid.to_le_bytes();
    let v = (value as u16).to_le_bytes();
    [b'R', r[0], r[1], v[0], v[1]]
}

/// `P_ActorGone`: always the 2-byte form (quirk fix, see docs/simulation.md).
pub fn actor_gone(rid: RuntimeId) -> [u8; 2] {
    rid.to_le_bytes()
}

/// Queue a chat line in a colour for one actor's player.
pub fn send_chat(st: &mut ZoneState, to: ActorId, colour: u8, text: &str) {
    let mut p = Vec::with_capacity(text.len() + 1);
    p.push(colour);
    p.extend_from_slice(text.as_bytes());
    st.send_to(to, P_CHAT_MESSAGE, &p);
}

fn str8(out: &mut Vec<u8>, s: &str) {
    let b = s.as_bytes();
    let n = b.len().min(255);
    out.push(n as u8);
    out.extend_from_slice(b.get(..n).unwrap_or(b));
}

/// `P_ChangeArea` for an actor now placed in this zone.
pub fn change_area(st: &ZoneState, a: &Actor) -> Vec<u8> {
    let area = &st.content.area;
    let mut p = Vec::with_capacity(32 + area.name.len());
    for f in [a.x, a.y, a.z, a.yaw] {
        p.extend_from_slice(&f.to_le_bytes());
    }
    p.push(u8::from(area.pvp));
    p.extend_from_slice(&area.gravity.min(1000).to_le_bytes());
    p.extend_from_slice(&st.cfg.instance_handle.to_le_bytes());
    p.push(st.weather);
    str8(&mut p, &area.name);
    p
}

/// `P_NewActor` (`ActorInstanceToString$`).
pub fn new_actor(st: &ZoneState, a: &Actor) -> Vec<u8> {
    let mut p = Vec::with_capacity(190);
    p.extend_from_slice(&st.cfg.instance_handle.to_le_bytes());
    p.extend_from_slice(&a.rid.to_le_bytes());
    p.extend_from_slice(&a.level.to_le_bytes());
    p.extend_from_slice(&a.xp.to_le_bytes());
    p.extend_from_slice(&a.template.to_le_bytes());
    for f in [a.x, a.y, a.z, a.yaw] {
        p.extend_from_slice(&f.to_le_bytes());
    }
    p.push(u8::from(a.is_player()));
    str8(&mut p, &a.name);
    str8(&mut p, &a.tag);
    let genders = st.content.template(a.template).map_or(0, |t| t.genders);
    if genders == 0 {
        p.push(a.gender);
    }
    let u16s = |v: i32| (v as u16).to_le_bytes();
    p.extend_from_slice(&u16s(a.reputation));
    p.extend_from_slice(&a.face.to_le_bytes());
    p.extend_from_slice(&a.hair.to_le_bytes());
    p.extend_from_slice(&a.body.to_le_bytes());
    p.extend_from_slice(&a.beard.to_le_bytes());
    let fx = st.content.fixed;
    for stat in [fx.speed, fx.health] {
        p.extend_from_slice(&u16s(a.attr_value(stat).unwrap_or(0)));
        p.extend_from_slice(&u16s(a.attr_maximum(stat).unwrap_or(0)));
    }
    // Weapon, shield, hat, chest (inventory slots 0, 1, 2, 3).
    for slot in [0usize, 1, 2, 3] {
        let id = a
            .inventory
            .get(slot)
            .and_then(|s| s.as_ref())
            .map_or(65535, |s| s.item);
        p.extend_from_slice(&id.to_le_bytes());
    }
    p.push(a.home_faction);
    p.extend_from_slice(&a.ratings[..]);
    p
}

/// `P_RepositionActor "M"` (RID, x, y, z, two zero bytes). Realm Crafter's SetArea sent it
/// without the `"M"` (quirk fix, see docs/simulation.md).
pub fn reposition(rid: RuntimeId, x: f32, y: f32, z: f32) -> Vec<u8> {
    let mut p = Vec::with_capacity(17);
    p.push(b'M');
    p.extend_from_slice(&rid.to_le_bytes());
    for f in [x, y, z] {
        p.extend_from_slice(&f.to_le_bytes());
    }
    p.extend_from_slice(&[0, 0]);
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_update_matches_the_reference_vector() {
        let mut out = Vec::new();
        push_frame(&mut out, P_STAT_UPDATE, &stat_value(7, 0, 85));
        assert_eq!(out, [7, 0, 0x16, 0x41, 0x07, 0x00, 0x00, 0x55, 0x00]);
    }

    #[test]
    fn self_update_matches_the_reference_vector() {
        let mut out = Vec::new();
        write_update_frame(
            &mut out,
            7,
            9.0,
            -5.0,
            true,
            false,
            10.0,
            -5.5,
            0,
            &100u16.to_le_bytes(),
        );
        let expect = [
            0x0e, 0x07, 0x00, 0x00, 0x00, 0x10, 0x41, 0x00, 0x00, 0xa0, 0xc0, 0x01, 0x00, 0x00,
            0x00, 0x20, 0x41, 0x00, 0x00, 0xb0, 0xc0, 0x00, 0x00, 0x64, 0x00,
        ];
        assert_eq!(out.get(2..), Some(&expect[..]));
        assert_eq!(u16::from_le_bytes([out[0], out[1]]) as usize, expect.len());
    }
}
