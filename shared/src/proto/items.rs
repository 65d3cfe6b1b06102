//! Items: `P_InventoryUpdate` (15), `P_ActionBarUpdate` (31), `P_ItemScript` (43),
//! `P_EatItem` (44), `P_ItemHealth` (45) (rc-content-reference §2, §9.15, §9.31, §9.43-45).

use serde::{Deserialize, Serialize};

use super::{DecodeCtx, ItemString, Packet, bad_sub, ids};
use crate::wire::{DecodeError, RcString, Reader, WireWrite, json_f32};

/// `P_InventoryUpdate` (15) C→S.
///
/// | sub | layout |
/// |---|---|
/// |`"P"` pickup|`droppedH u32, slot u8`|
/// |`"D"` drop|`slot u8, amount u16`|
/// |`"G"` offer reply|`'Y', itemH u32, slot u8` or `'N', itemH u32`|
/// |`"S"` swap / `"A"` merge|`RID u16, from u8, to u8, amount u16`|
#[doc(alias = "P_InventoryUpdate")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "sub")]
pub enum InventoryUpdateC2S {
    /// `"P"`: pick up a dropped item into a slot.
    #[serde(rename = "P")]
    Pickup {
        /// The dropped item's handle.
        dropped: u32,
        /// The slot the client chose.
        slot: u8,
    },
    /// `"D"`: drop part of a stack at the player's feet.
    #[serde(rename = "D")]
    Drop {
        /// Slot.
        slot: u8,
        /// How many.
        amount: u16,
    },
    /// `"G"` `'Y'`: the client placed an offered item into `slot`.
    #[serde(rename = "GY")]
    OfferAccepted {
        /// The offer's handle.
        item_handle: u32,
        /// Where the client put it.
        slot: u8,
    },
    /// `"G"` `'N'`: the client had no room for an offered item.
    #[serde(rename = "GN")]
    OfferRefused {
        /// The offer's handle.
        item_handle: u32,
    },
    /// `"S"`: move, swap or split a stack (`InventorySwap`).
    #[serde(rename = "S")]
    Swap {
        /// The actor whose inventory (the player or one of its pets).
        runtime_id: u16,
        /// From slot.
        from: u8,
        /// To slot.
        to: u8,
        /// How many (0 = the whole stack).
        amount: u16,
    },
    /// `"A"`: add part of a stack onto an identical stack (`InventoryAdd`).
    #[serde(rename = "A")]
    Merge {
        /// The actor whose inventory.
        runtime_id: u16,
        /// From slot.
        from: u8,
        /// To slot (a backpack slot).
        to: u8,
        /// How many.
        amount: u16,
    },
}

impl Packet for InventoryUpdateC2S {
    const ID: u8 = ids::P_INVENTORY_UPDATE;
    const NAME: &'static str = "P_InventoryUpdate";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let v = match r.u8()? {
            b'P' => Self::Pickup {
                dropped: r.u32()?,
                slot: r.u8()?,
            },
            b'D' => Self::Drop {
                slot: r.u8()?,
                amount: r.u16()?,
            },
            b'G' => match r.u8()? {
                b'Y' => Self::OfferAccepted {
                    item_handle: r.u32()?,
                    slot: r.u8()?,
                },
                b'N' => Self::OfferRefused {
                    item_handle: r.u32()?,
                },
                c => return Err(bad_sub(1, c)),
            },
            c @ (b'S' | b'A') => {
                let (runtime_id, from, to, amount) = (r.u16()?, r.u8()?, r.u8()?, r.u16()?);
                if c == b'S' {
                    Self::Swap {
                        runtime_id,
                        from,
                        to,
                        amount,
                    }
                } else {
                    Self::Merge {
                        runtime_id,
                        from,
                        to,
                        amount,
                    }
                }
            }
            c => return Err(bad_sub(0, c)),
        };
        r.finish()?;
        Ok(v)
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        match *self {
            Self::Pickup { dropped, slot } => {
                out.push(b'P');
                out.put_u32(dropped);
                out.put_u8(slot);
            }
            Self::Drop { slot, amount } => {
                out.push(b'D');
                out.put_u8(slot);
                out.put_u16(amount);
            }
            Self::OfferAccepted { item_handle, slot } => {
                out.put_bytes(b"GY");
                out.put_u32(item_handle);
                out.put_u8(slot);
            }
            Self::OfferRefused { item_handle } => {
                out.put_bytes(b"GN");
                out.put_u32(item_handle);
            }
            Self::Swap {
                runtime_id,
                from,
                to,
                amount,
            }
            | Self::Merge {
                runtime_id,
                from,
                to,
                amount,
            } => {
                out.push(if matches!(self, Self::Swap { .. }) {
                    b'S'
                } else {
                    b'A'
                });
                out.put_u16(runtime_id);
                out.put_u8(from);
                out.put_u8(to);
                out.put_u16(amount);
            }
        }
    }
}

/// `P_InventoryUpdate` (15) S→C.
///
/// | sub | layout | sent |
/// |---|---|---|
/// |`"T"` taken|`slot u8, amount u16`|trade, shop sale, negative `GiveItem`|
/// |`"R"` received|`droppedH u32, slot u8`|pickup, to the picker|
/// |`"P"` gone|`droppedH u32`|pickup, to the other players|
/// |`"D"` dropped|`amount u16, x, y, z f32, droppedH u32, item (83 B)`|drop, `SpawnItem`, arrival|
/// |`"O"` equipment|`RID u16, weapon, shield, chest, hat u16, gubbins u8×6`|equipment change|
/// |`"G"` offer|`itemH u32, itemID u16, amount u16`|an item given to the player|
/// |`"H"` health|`slot u8, health u8`|`SetItemHealth`|
#[doc(alias = "P_InventoryUpdate")]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "sub")]
pub enum InventoryUpdateS2C {
    /// `"T"`: items taken from a slot.
    #[serde(rename = "T")]
    Taken {
        /// Slot.
        slot: u8,
        /// How many.
        amount: u16,
    },
    /// `"R"`: the picker's pickup went into `slot`.
    #[serde(rename = "R")]
    Received {
        /// The dropped item's handle.
        dropped: u32,
        /// Slot.
        slot: u8,
    },
    /// `"P"`: a dropped item was picked up by someone else.
    #[serde(rename = "P")]
    Gone {
        /// The dropped item's handle.
        dropped: u32,
    },
    /// `"D"`: an item lies on the ground.
    #[serde(rename = "D")]
    Dropped {
        /// Stack size.
        amount: u16,
        /// Position.
        #[serde(with = "json_f32")]
        x: f32,
        /// Position.
        #[serde(with = "json_f32")]
        y: f32,
        /// Position.
        #[serde(with = "json_f32")]
        z: f32,
        /// Its handle.
        dropped: u32,
        /// The item.
        item: ItemString,
    },
    /// `"O"`: an actor's visible equipment.
    #[serde(rename = "O")]
    Equipment {
        /// Whose.
        runtime_id: u16,
        /// Weapon item id (65535 = none).
        weapon: u16,
        /// Shield item id.
        shield: u16,
        /// Chest item id.
        chest: u16,
        /// Hat item id.
        hat: u16,
        /// Gubbin flags (1 = shown).
        gubbins: [u8; 6],
    },
    /// `"G"`: an item offered to (placed into the inventory of) the player.
    #[serde(rename = "G")]
    Offer {
        /// The offer's handle.
        item_handle: u32,
        /// Item id.
        item_id: u16,
        /// How many.
        amount: u16,
    },
    /// `"H"`: an item's health changed.
    #[serde(rename = "H")]
    Health {
        /// Slot.
        slot: u8,
        /// Health 0..100.
        health: u8,
    },
}

impl Packet for InventoryUpdateS2C {
    const ID: u8 = ids::P_INVENTORY_UPDATE;
    const NAME: &'static str = "P_InventoryUpdate";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let v = match r.u8()? {
            b'T' => Self::Taken {
                slot: r.u8()?,
                amount: r.u16()?,
            },
            b'R' => Self::Received {
                dropped: r.u32()?,
                slot: r.u8()?,
            },
            b'P' => Self::Gone { dropped: r.u32()? },
            b'D' => Self::Dropped {
                amount: r.u16()?,
                x: r.f32()?,
                y: r.f32()?,
                z: r.f32()?,
                dropped: r.u32()?,
                item: ItemString::read(&mut r)?,
            },
            b'O' => {
                let (runtime_id, weapon, shield, chest, hat) =
                    (r.u16()?, r.u16()?, r.u16()?, r.u16()?, r.u16()?);
                let g = r.bytes(6)?;
                let mut gubbins = [0u8; 6];
                gubbins.copy_from_slice(g);
                Self::Equipment {
                    runtime_id,
                    weapon,
                    shield,
                    chest,
                    hat,
                    gubbins,
                }
            }
            b'G' => Self::Offer {
                item_handle: r.u32()?,
                item_id: r.u16()?,
                amount: r.u16()?,
            },
            b'H' => Self::Health {
                slot: r.u8()?,
                health: r.u8()?,
            },
            c => return Err(bad_sub(0, c)),
        };
        r.finish()?;
        Ok(v)
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        match self {
            Self::Taken { slot, amount } => {
                out.push(b'T');
                out.put_u8(*slot);
                out.put_u16(*amount);
            }
            Self::Received { dropped, slot } => {
                out.push(b'R');
                out.put_u32(*dropped);
                out.put_u8(*slot);
            }
            Self::Gone { dropped } => {
                out.push(b'P');
                out.put_u32(*dropped);
            }
            Self::Dropped {
                amount,
                x,
                y,
                z,
                dropped,
                item,
            } => {
                out.push(b'D');
                out.put_u16(*amount);
                out.put_f32(*x);
                out.put_f32(*y);
                out.put_f32(*z);
                out.put_u32(*dropped);
                item.write(out);
            }
            Self::Equipment {
                runtime_id,
                weapon,
                shield,
                chest,
                hat,
                gubbins,
            } => {
                out.push(b'O');
                for v in [runtime_id, weapon, shield, chest, hat] {
                    out.put_u16(*v);
                }
                out.put_bytes(gubbins);
            }
            Self::Offer {
                item_handle,
                item_id,
                amount,
            } => {
                out.push(b'G');
                out.put_u32(*item_handle);
                out.put_u16(*item_id);
                out.put_u16(*amount);
            }
            Self::Health { slot, health } => {
                out.push(b'H');
                out.put_u8(*slot);
                out.put_u8(*health);
            }
        }
    }
}

/// `P_ActionBarUpdate` (31) C→S: `"S"` + slot u8 + spell name (rest) | `"I"` + slot u8 +
/// item id u16 | `"N"` + slot u8.
#[doc(alias = "P_ActionBarUpdate")]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "sub")]
pub enum ActionBarUpdate {
    /// `"S"`: a spell in a bar slot.
    #[serde(rename = "S")]
    Spell {
        /// Bar slot (0..35).
        slot: u8,
        /// Spell name.
        spell: RcString,
    },
    /// `"I"`: an item in a bar slot.
    #[serde(rename = "I")]
    Item {
        /// Bar slot.
        slot: u8,
        /// Item id.
        item_id: u16,
    },
    /// `"N"`: the bar slot is cleared.
    #[serde(rename = "N")]
    Clear {
        /// Bar slot.
        slot: u8,
    },
}

impl Packet for ActionBarUpdate {
    const ID: u8 = ids::P_ACTION_BAR_UPDATE;
    const NAME: &'static str = "P_ActionBarUpdate";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let v = match r.u8()? {
            b'S' => Self::Spell {
                slot: r.u8()?,
                spell: RcString::from(r.rest()),
            },
            b'I' => Self::Item {
                slot: r.u8()?,
                item_id: r.u16()?,
            },
            b'N' => Self::Clear { slot: r.u8()? },
            c => return Err(bad_sub(0, c)),
        };
        r.finish()?;
        Ok(v)
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        match self {
            Self::Spell { slot, spell } => {
                out.push(b'S');
                out.put_u8(*slot);
                out.put_bytes(spell.as_bytes());
            }
            Self::Item { slot, item_id } => {
                out.push(b'I');
                out.put_u8(*slot);
                out.put_u16(*item_id);
            }
            Self::Clear { slot } => {
                out.push(b'N');
                out.put_u8(*slot);
            }
        }
    }
}

/// `P_ItemScript` (43) C→S: `slot u8 [, targetRID u16]` (1 or 3 bytes): use an item.
#[doc(alias = "P_ItemScript")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemScript {
    /// Slot.
    pub slot: u8,
    /// The target's RuntimeID, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<u16>,
}

impl Packet for ItemScript {
    const ID: u8 = ids::P_ITEM_SCRIPT;
    const NAME: &'static str = "P_ItemScript";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let slot = r.u8()?;
        let target = if r.is_empty() { None } else { Some(r.u16()?) };
        r.finish()?;
        Ok(Self { slot, target })
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        out.put_u8(self.slot);
        if let Some(t) = self.target {
            out.put_u16(t);
        }
    }
}

/// `P_EatItem` (44) C→S: `slot u8, amount u16`: eat a potion or an ingredient.
#[doc(alias = "P_EatItem")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EatItem {
    /// Slot.
    pub slot: u8,
    /// How many.
    pub amount: u16,
}

impl Packet for EatItem {
    const ID: u8 = ids::P_EAT_ITEM;
    const NAME: &'static str = "P_EatItem";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let v = Self {
            slot: r.u8()?,
            amount: r.u16()?,
        };
        r.finish()?;
        Ok(v)
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        out.put_u8(self.slot);
        out.put_u16(self.amount);
    }
}

/// `P_ItemHealth` (45) S→C: `slot u8, health u16`, to the owner (combat wear).
#[doc(alias = "P_ItemHealth")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemHealth {
    /// Slot.
    pub slot: u8,
    /// Health 0..100 (0 = broken).
    pub health: u16,
}

impl Packet for ItemHealth {
    const ID: u8 = ids::P_ITEM_HEALTH;
    const NAME: &'static str = "P_ItemHealth";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let v = Self {
            slot: r.u8()?,
            health: r.u16()?,
        };
        r.finish()?;
        Ok(v)
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        out.put_u8(self.slot);
        out.put_u16(self.health);
    }
}
