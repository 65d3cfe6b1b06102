//! Typed server→client packets the simulation builds from its state (`P_NewActor`,
//! `P_ChangeArea`, `P_StatUpdate`, ...). Every packet's only encoder is its type in
//! `shared::proto`; the sim queues them with [`ZoneState::send_packet`] /
//! [`ZoneState::send_packet_zone`], and the hot path `P_StandardUpdate` is framed by
//! [`shared::proto::StandardUpdateS2C::write_frame`].

use shared::proto::{
    ActorGone, ChangeArea, ChatColour, ChatMessageS2C, NewActor, Packet, RepositionActor,
    StatUpdate,
};
use shared::wire::RcString;

use super::events::RuntimeId;
use super::state::{Actor, ActorId, ZoneState};

/// The packet ids (`Packets.bb`), as `shared::proto::ids` names them.
pub use shared::proto::ids::*;

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

/// A packet's payload (without the type byte), for tests that compare outputs.
pub fn payload<P: Packet>(p: &P) -> Vec<u8> {
    let mut out = Vec::new();
    p.encode_payload(&mut out);
    out
}

/// The sim's text as wire bytes, byte for byte (names and chat are kept as sent).
pub fn text(s: &str) -> RcString {
    // One byte per character, as Realm Crafter (names and text are Latin-1 in the zone,
    // decoded so from the wire and the data files); anything beyond U+00FF becomes `?`.
    RcString::from(s)
}

/// A value on a 16-bit wire field: the low 16 bits, as `RCE_StrFromInt$(v, 2)` writes.
pub fn wire16(v: i32) -> i16 {
    v as i16
}

/// `P_StatUpdate "A"`: current value (truncated to 16 bits).
pub fn stat_update_value(rid: RuntimeId, attr: u8, value: i32) -> StatUpdate {
    StatUpdate::Value {
        runtime_id: rid,
        attribute: attr,
        value: wire16(value),
    }
}

/// `P_StatUpdate "M"`: maximum (truncated to 16 bits).
pub fn stat_update_max(rid: RuntimeId, attr: u8, value: i32) -> StatUpdate {
    StatUpdate::Max {
        runtime_id: rid,
        attribute: attr,
        value: wire16(value),
    }
}

/// `P_StatUpdate "R"`: reputation.
pub fn stat_update_reputation(rid: RuntimeId, value: i32) -> StatUpdate {
    StatUpdate::Reputation {
        runtime_id: rid,
        value: wire16(value),
    }
}

/// The payload of [`stat_update_value`], for tests.
pub fn stat_value(rid: RuntimeId, attr: u8, value: i32) -> Vec<u8> {
    payload(&stat_update_value(rid, attr, value))
}

/// `P_ActorGone`: always the 2-byte form (quirk fix, see docs/simulation.md).
pub fn actor_gone(rid: RuntimeId) -> ActorGone {
    ActorGone {
        runtime_id: u32::from(rid),
        four_bytes: false,
    }
}

/// The `P_ChatMessage` colour of a colour byte; any other byte stays part of the text.
fn chat_message(colour: u8, text: &str) -> ChatMessageS2C {
    let colour = match colour {
        CHAT_SYSTEM => ChatColour::System,
        CHAT_RED => ChatColour::Red,
        CHAT_MAGENTA => ChatColour::Magenta,
        CHAT_GREEN => ChatColour::Green,
        other => {
            let mut t = vec![other];
            t.extend_from_slice(self::text(text).as_bytes());
            return ChatMessageS2C {
                colour: ChatColour::Plain,
                text: RcString(t),
            };
        }
    };
    ChatMessageS2C {
        colour,
        text: self::text(text),
    }
}

/// Queue a chat line in a colour (`CHAT_*`) for one actor's player.
pub fn send_chat(st: &mut ZoneState, to: ActorId, colour: u8, text: &str) {
    st.send_packet(to, &chat_message(colour, text));
}

/// `P_ChangeArea` for an actor now placed in this zone.
pub fn change_area(st: &ZoneState, a: &Actor) -> ChangeArea {
    let area = &st.content.area;
    ChangeArea {
        x: a.x,
        y: a.y,
        z: a.z,
        yaw: a.yaw,
        pvp: u8::from(area.pvp),
        gravity: area.gravity.min(1000),
        instance_handle: st.cfg.instance_handle,
        weather: st.weather,
        area: text(&area.name),
    }
}

/// `P_NewActor` (`ActorInstanceToString$`).
pub fn new_actor(st: &ZoneState, a: &Actor) -> NewActor {
    let genders = st.content.template(a.template).map_or(0, |t| t.genders);
    let fx = st.content.fixed;
    let value = |stat| wire16(a.attr_value(stat).unwrap_or(0)) as u16;
    let max = |stat| wire16(a.attr_maximum(stat).unwrap_or(0)) as u16;
    // Weapon, shield, hat, chest (inventory slots 0, 1, 2, 3).
    let worn = |slot: usize| {
        a.inventory
            .get(slot)
            .and_then(|s| s.as_ref())
            .map_or(65535, |s| s.item)
    };
    NewActor {
        instance_handle: st.cfg.instance_handle,
        runtime_id: a.rid,
        level: a.level,
        xp: a.xp,
        template_id: a.template,
        x: a.x,
        y: a.y,
        z: a.z,
        yaw: a.yaw,
        human: u8::from(a.is_player()),
        actor_name: text(&a.name),
        tag: text(&a.tag),
        gender: (genders == 0).then_some(a.gender),
        reputation: wire16(a.reputation),
        face: a.face,
        hair: a.hair,
        body: a.body,
        beard: a.beard,
        speed: value(fx.speed),
        speed_max: max(fx.speed),
        health: value(fx.health),
        health_max: max(fx.health),
        weapon: worn(0),
        shield: worn(1),
        hat: worn(2),
        chest: worn(3),
        home_faction: a.home_faction,
        ratings: a.ratings[..].to_vec(),
    }
}

/// `P_RepositionActor "M"` (RID, x, y, z, two zero bytes). Realm Crafter's SetArea sent it
/// without the `"M"` (quirk fix, see docs/simulation.md).
pub fn reposition(rid: RuntimeId, x: f32, y: f32, z: f32) -> RepositionActor {
    RepositionActor::Move {
        runtime_id: rid,
        x,
        y,
        z,
        flag1: 0,
        flag2: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_update_matches_the_reference_vector() {
        assert_eq!(stat_value(7, 0, 85), [0x41, 0x07, 0x00, 0x00, 0x55, 0x00]);
        // Values wrap to 16 bits as Realm Crafter writes them.
        assert_eq!(
            stat_value(7, 0, 65535),
            [0x41, 0x07, 0x00, 0x00, 0xff, 0xff]
        );
    }

    #[test]
    fn chat_colours_keep_their_byte() {
        for c in [
            CHAT_SYSTEM,
            CHAT_RED,
            CHAT_MAGENTA,
            CHAT_GREEN,
            CHAT_RGB,
            b'<',
            0,
        ] {
            // One byte per character (Latin-1): é is 0xE9, as the client shows it.
            let mut want = vec![c];
            want.extend_from_slice(b"h\xE9llo");
            assert_eq!(payload(&chat_message(c, "héllo")), want, "{c}");
        }
    }
}
