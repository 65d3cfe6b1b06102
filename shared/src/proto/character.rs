//! `P_FetchCharacter` (3): the request and the character blocks `"C1"`, `"C3"`, `"S"`,
//! `"Q"`, `"F"`, `"N"` (reference §5 step 5), and the 83-byte item string.

use serde::{Deserialize, Serialize};

use super::{AttributePair, Creds, DecodeCtx, Packet, bad_sub, ids};
use crate::wire::{DecodeError, RcString, Reader, WireWrite};

creds_index_packet!(
    /// `P_FetchCharacter` (3) C→S: `creds, index u8`.
    FetchCharacter, ids::P_FETCH_CHARACTER, "P_FetchCharacter"
);

/// The item string (83 bytes): `itemID u16 + 40 × (attr+5000) u16 + health u8`.
/// Item id 65535 means no item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemString {
    /// Item id (65535 = none).
    pub item_id: u16,
    /// 40 attribute modifiers as sent (`attr + 5000`).
    pub attributes: Vec<u16>,
    /// Item health 0..100.
    pub health: u8,
}

impl ItemString {
    /// Wire length of an item string.
    pub const LEN: usize = 83;

    /// Reads an item string.
    pub fn read(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            item_id: r.u16()?,
            attributes: r.many(40, Reader::u16)?,
            health: r.u8()?,
        })
    }

    /// Writes an item string (always 83 bytes: missing attributes are written as 5000,
    /// extra ones dropped).
    pub fn write(&self, out: &mut Vec<u8>) {
        out.put_u16(self.item_id);
        for i in 0..40 {
            out.put_u16(self.attributes.get(i).copied().unwrap_or(5000));
        }
        out.put_u8(self.health);
    }
}

/// One occupied inventory slot in a `"C3"` block: `slot u8, item (83 B), amount u16`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InventorySlot {
    /// Slot index 0..45 (never 99).
    pub slot: u8,
    /// The item.
    pub item: ItemString,
    /// Stack size.
    pub amount: u16,
}

/// One known spell in an `"S"` block: `level u16, id u16, thumb u16, recharge u16,
/// u16len name, u16len desc, memorised u8`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnownSpell {
    /// Spell level.
    pub level: u16,
    /// Spell id.
    pub id: u16,
    /// Thumbnail texture.
    pub thumb: u16,
    /// Recharge time.
    pub recharge: u16,
    /// Name (`u16` length).
    pub name: RcString,
    /// Description (`u16` length).
    pub description: RcString,
    /// Whether memorised.
    pub memorised: u8,
}

impl KnownSpell {
    /// Reads one record (the `"S"` block's and `P_KnownSpellUpdate "A"`'s layout).
    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            level: r.u16()?,
            id: r.u16()?,
            thumb: r.u16()?,
            recharge: r.u16()?,
            name: r.string16()?,
            description: r.string16()?,
            memorised: r.u8()?,
        })
    }

    /// Writes one record.
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.put_u16(self.level);
        out.put_u16(self.id);
        out.put_u16(self.thumb);
        out.put_u16(self.recharge);
        out.put_str16(&self.name.0);
        out.put_str16(&self.description.0);
        out.put_u8(self.memorised);
    }
}

/// One quest in a `"Q"` block: `u8 len name, u16 len status`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestEntry {
    /// Quest name.
    pub name: RcString,
    /// Status text (`u16` length).
    pub status: RcString,
}

/// Byte that marks an empty slot in a `"C3"` block.
pub const EMPTY_SLOT: u8 = 99;

/// `P_FetchCharacter` (3) S→C: one character block.
///
/// | sub | layout |
/// |---|---|
/// |`"C1"`|`gold u32, rep u16, level u16, xp u32, homeFaction u8`, 40 × `(v u16, m u16)`|
/// |`"C3"`|slots in order, each [`InventorySlot`] or the single byte 99 (empty)|
/// |`"S"`|[`KnownSpell`]s to the end|
/// |`"Q"`|[`QuestEntry`]s to the end|
/// |`"F"`|`nQuests u16, nSpells u16`: end marker|
/// |`"N"`|failure|
#[doc(alias = "P_FetchCharacter")]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "sub")]
pub enum FetchCharacterReply {
    /// `"C1"`: gold, reputation, level, XP, home faction, attributes.
    #[serde(rename = "C1")]
    Stats {
        /// Gold.
        gold: u32,
        /// Reputation (signed).
        reputation: i16,
        /// Level.
        level: u16,
        /// Experience.
        xp: u32,
        /// Home faction.
        home_faction: u8,
        /// 40 attribute value/maximum pairs.
        attributes: Vec<AttributePair>,
    },
    /// `"C3"`: a chunk of inventory slots; `None` is an empty slot (byte 99).
    #[serde(rename = "C3")]
    Inventory {
        /// The slots in this chunk.
        slots: Vec<Option<InventorySlot>>,
    },
    /// `"S"`: a chunk of known spells.
    #[serde(rename = "S")]
    Spells {
        /// The spells.
        spells: Vec<KnownSpell>,
    },
    /// `"Q"`: a chunk of quests.
    #[serde(rename = "Q")]
    Quests {
        /// The quests.
        quests: Vec<QuestEntry>,
    },
    /// `"F"`: the end marker with the counts.
    #[serde(rename = "F")]
    Finished {
        /// Number of quests sent.
        quests: u16,
        /// Number of spells sent.
        spells: u16,
    },
    /// `"N"`: failure.
    #[serde(rename = "N")]
    Failed,
}

impl Packet for FetchCharacterReply {
    const ID: u8 = ids::P_FETCH_CHARACTER;
    const NAME: &'static str = "P_FetchCharacter";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let v = match r.u8()? {
            b'C' => {
                let at = r.offset();
                match r.u8()? {
                    b'1' => Self::Stats {
                        gold: r.u32()?,
                        reputation: r.i16()?,
                        level: r.u16()?,
                        xp: r.u32()?,
                        home_faction: r.u8()?,
                        attributes: r.many(40, AttributePair::read)?,
                    },
                    b'3' => Self::Inventory {
                        slots: r.until_end(|r| {
                            let slot = r.u8()?;
                            if slot == EMPTY_SLOT {
                                return Ok(None);
                            }
                            Ok(Some(InventorySlot {
                                slot,
                                item: ItemString::read(r)?,
                                amount: r.u16()?,
                            }))
                        })?,
                    },
                    c => return Err(bad_sub(at, c)),
                }
            }
            b'S' => Self::Spells {
                spells: r.until_end(KnownSpell::read)?,
            },
            b'Q' => Self::Quests {
                quests: r.until_end(|r| {
                    Ok(QuestEntry {
                        name: r.string8()?,
                        status: r.string16()?,
                    })
                })?,
            },
            b'F' => Self::Finished {
                quests: r.u16()?,
                spells: r.u16()?,
            },
            b'N' => Self::Failed,
            c => return Err(bad_sub(0, c)),
        };
        r.finish()?;
        Ok(v)
    }

    fn encode_payload(&self, out: &mut Vec<u8>) {
        match self {
            Self::Stats {
                gold,
                reputation,
                level,
                xp,
                home_faction,
                attributes,
            } => {
                out.extend_from_slice(b"C1");
                out.put_u32(*gold);
                out.put_i16(*reputation);
                out.put_u16(*level);
                out.put_u32(*xp);
                out.put_u8(*home_faction);
                for a in attributes {
                    a.write(out);
                }
            }
            Self::Inventory { slots } => {
                out.extend_from_slice(b"C3");
                for s in slots {
                    match s {
                        None => out.push(EMPTY_SLOT),
                        Some(s) => {
                            out.push(s.slot);
                            s.item.write(out);
                            out.put_u16(s.amount);
                        }
                    }
                }
            }
            Self::Spells { spells } => {
                out.push(b'S');
                for s in spells {
                    s.write(out);
                }
            }
            Self::Quests { quests } => {
                out.push(b'Q');
                for q in quests {
                    out.put_str8(&q.name.0);
                    out.put_str16(&q.status.0);
                }
            }
            Self::Finished { quests, spells } => {
                out.push(b'F');
                out.put_u16(*quests);
                out.put_u16(*spells);
            }
            Self::Failed => out.push(b'N'),
        }
    }
}
