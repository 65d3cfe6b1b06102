//! Chat and zone-wide messages: `P_ChatMessage` (16), `P_WeatherChange` (17),
//! `P_PartyUpdate` (38) (reference §4.7).

use serde::{Deserialize, Serialize};

use super::{DecodeCtx, Packet, ids};
use crate::wire::{DecodeError, RcString, Reader, WireWrite};

/// `P_ChatMessage` (16) C→S: raw text to the end of the packet.
///
/// A leading `/` or `\` marks a command; anything else is zone chat.
#[doc(alias = "P_ChatMessage")]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessageC2S {
    /// The text as typed.
    pub text: RcString,
}

impl ChatMessageC2S {
    /// Whether the text is a command (`/` or `\` first).
    pub fn is_command(&self) -> bool {
        matches!(self.text.0.first(), Some(b'/' | b'\\'))
    }
}

impl Packet for ChatMessageC2S {
    const ID: u8 = ids::P_CHAT_MESSAGE;
    const NAME: &'static str = "P_ChatMessage";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            text: RcString::from(payload),
        })
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        out.put_bytes(&self.text.0);
    }
}

/// The colour selected by the first byte of an S→C chat message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChatColour {
    /// 254, yellow: system messages.
    System,
    /// 253, red: yell, errors.
    Red,
    /// 252, magenta: /me, /pm.
    Magenta,
    /// 251, green: guild, party.
    Green,
    /// 250 + R, G, B (critical hits use 255, 225, 100).
    Rgb(u8, u8, u8),
    /// No colour byte: the text starts at the first byte (a text starting `"<name> "` may
    /// show as a chat bubble). Its text must not start with a byte 250..=254.
    #[default]
    Plain,
}

/// `P_ChatMessage` (16) S→C: colour byte then text.
///
/// | first byte | colour | then |
/// |---|---|---|
/// |254|yellow (system)|text|
/// |253|red|text|
/// |252|magenta|text|
/// |251|green|text|
/// |250|R, G, B u8|text|
/// |other|plain|the whole payload is the text|
#[doc(alias = "P_ChatMessage")]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessageS2C {
    /// The colour.
    pub colour: ChatColour,
    /// The text.
    pub text: RcString,
}

impl ChatMessageS2C {
    /// A yellow system message (254).
    pub fn system(text: &str) -> Self {
        Self {
            colour: ChatColour::System,
            text: RcString::from(text),
        }
    }
}

impl Packet for ChatMessageS2C {
    const ID: u8 = ids::P_CHAT_MESSAGE;
    const NAME: &'static str = "P_ChatMessage";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let colour = match r.peek_u8() {
            Some(254) => ChatColour::System,
            Some(253) => ChatColour::Red,
            Some(252) => ChatColour::Magenta,
            Some(251) => ChatColour::Green,
            Some(250) => {
                r.u8()?;
                let [red, g, b] = r.array::<3>()?;
                ChatColour::Rgb(red, g, b)
            }
            _ => ChatColour::Plain,
        };
        if !matches!(colour, ChatColour::Plain | ChatColour::Rgb(..)) {
            r.u8()?;
        }
        Ok(Self {
            colour,
            text: RcString::from(r.rest()),
        })
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        match self.colour {
            ChatColour::System => out.push(254),
            ChatColour::Red => out.push(253),
            ChatColour::Magenta => out.push(252),
            ChatColour::Green => out.push(251),
            ChatColour::Rgb(r, g, b) => out.put_bytes(&[250, r, g, b]),
            ChatColour::Plain => {}
        }
        out.put_bytes(&self.text.0);
    }
}

/// `P_WeatherChange` (17) S→C: `instHandle u32, weather u8` (0 Sun, 1 Rain, 2 Snow,
/// 3 Fog, 4 Storm, 5 Wind).
#[doc(alias = "P_WeatherChange")]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WeatherChange {
    /// Area-instance handle.
    pub instance_handle: u32,
    /// Weather.
    pub weather: u8,
}

impl Packet for WeatherChange {
    const ID: u8 = ids::P_WEATHER_CHANGE;
    const NAME: &'static str = "P_WeatherChange";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let v = Self {
            instance_handle: r.u32()?,
            weather: r.u8()?,
        };
        r.finish()?;
        Ok(v)
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        out.put_u32(self.instance_handle);
        out.put_u8(self.weather);
    }
}

/// `P_PartyUpdate` (38) S→C: up to 7 × `u8 len, name` (the other members). The decoder
/// accepts any number of names.
#[doc(alias = "P_PartyUpdate")]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartyUpdate {
    /// The other members' names.
    pub members: Vec<RcString>,
}

impl Packet for PartyUpdate {
    const ID: u8 = ids::P_PARTY_UPDATE;
    const NAME: &'static str = "P_PartyUpdate";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        Ok(Self {
            members: r.until_end(Reader::string8)?,
        })
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        for m in &self.members {
            out.put_str8(&m.0);
        }
    }
}
