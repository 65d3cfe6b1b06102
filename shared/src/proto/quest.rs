//! The quest log: `P_QuestLog` (23) S→C, to the owner only (reference §9.23). Scripts
//! write it with `NewQuest`, `UpdateQuest`, `CompleteQuest` and `DeleteQuest`; the client
//! keeps 500 entries of (name, status) and matches names case-insensitively.

use serde::{Deserialize, Serialize};

use super::{DecodeCtx, Packet, bad_sub, ids};
use crate::wire::{DecodeError, RcString, Reader, WireWrite};

/// The stored status of a completed quest (`CompleteQuest`): colour `FF E1 64`, then the
/// single byte `0xFE` as its text. The client shows "Completed!" for it and can hide it.
pub const QUEST_COMPLETED: [u8; 4] = [0xFF, 0xE1, 0x64, 0xFE];

/// `P_QuestLog` (23) S→C (client `ClientNet.bb` CN:769-807).
///
/// | sub | layout |
/// |---|---|
/// |`"N"`|`name str8, status str16`: a new entry in the first free slot|
/// |`"U"`|`name str8, status str16`: the entry's new status (the server upper-cases the name)|
/// |`"D"`|name (rest; upper-cased): the entry is removed|
///
/// `status` is the raw stored status: `r u8, g u8, b u8`, then the text (the three colour
/// bytes included); [`QUEST_COMPLETED`] is the completed one.
///
/// Vector: `17 4e 04 52 61 74 73 09 00 ff ff ff 4b 69 6c 6c 20 35` is the new quest "Rats"
/// with the white status "Kill 5".
#[doc(alias = "P_QuestLog")]
#[doc(alias = "NewQuest", alias = "UpdateQuest", alias = "CompleteQuest")]
#[doc(alias = "DeleteQuest")]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "sub")]
pub enum QuestLog {
    /// `"N"`: a new quest (`NewQuest`).
    #[serde(rename = "N")]
    New {
        /// The quest's name (`str8`; `"quest_name"` in JSON, where `"name"` is the packet's).
        #[serde(rename = "quest_name")]
        name: RcString,
        /// The raw status: `r, g, b`, then the text (`str16`).
        status: RcString,
    },
    /// `"U"`: a quest's status changed (`UpdateQuest`, `CompleteQuest`).
    #[serde(rename = "U")]
    Update {
        /// The quest's name (`str8`; `"quest_name"` in JSON, where `"name"` is the packet's).
        #[serde(rename = "quest_name")]
        name: RcString,
        /// The raw status: `r, g, b`, then the text (`str16`).
        status: RcString,
    },
    /// `"D"`: a quest was deleted (`DeleteQuest`).
    #[serde(rename = "D")]
    Delete {
        /// The quest's name (rest of the packet; `"quest_name"` in JSON).
        #[serde(rename = "quest_name")]
        name: RcString,
    },
}

impl Packet for QuestLog {
    const ID: u8 = ids::P_QUEST_LOG;
    const NAME: &'static str = "P_QuestLog";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let v = match r.u8()? {
            b'N' => Self::New {
                name: r.string8()?,
                status: r.string16()?,
            },
            b'U' => Self::Update {
                name: r.string8()?,
                status: r.string16()?,
            },
            b'D' => Self::Delete {
                name: RcString::from(r.rest()),
            },
            c => return Err(bad_sub(0, c)),
        };
        r.finish()?;
        Ok(v)
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        match self {
            Self::New { name, status } => {
                out.push(b'N');
                out.put_str8(name.as_bytes());
                out.put_str16(status.as_bytes());
            }
            Self::Update { name, status } => {
                out.push(b'U');
                out.put_str8(name.as_bytes());
                out.put_str16(status.as_bytes());
            }
            Self::Delete { name } => {
                out.push(b'D');
                out.put_bytes(name.as_bytes());
            }
        }
    }
}
