//! Trading: `P_OpenTrading` (35), `P_CloseTrading` (40), `P_UpdateTrading` (41),
//! `P_Examine` (61) and `P_Trade` (62) (rc-content-reference §4, §9.35, §9.61).

use serde::{Deserialize, Serialize};

use super::{DecodeCtx, ItemString, Packet, bad_sub, ids};
use crate::wire::{DecodeError, DecodeErrorKind, HexBytes, Reader, WireWrite};

/// Entries in each list of a trade or shop window (32 backpack slots).
pub const TRADE_ENTRIES: usize = 32;
/// Largest chunk of a `P_OpenTrading` window payload.
const CHUNK: usize = 999;

/// `P_OpenTrading` (35) S→C: one chunk of a window, `part` ASCII digit, `parts` ASCII
/// digit, then the chunk's bytes. [`OpenTradingS2C::split`] cuts a [`TradeWindow`]'s
/// payload as Realm Crafter does and [`OpenTradingS2C::assemble`] joins the chunks.
#[doc(alias = "P_OpenTrading")]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenTradingS2C {
    /// This chunk's number, 1-based.
    pub part: u8,
    /// How many chunks.
    pub parts: u8,
    /// The chunk.
    pub chunk: HexBytes,
}

impl Packet for OpenTradingS2C {
    const ID: u8 = ids::P_OPEN_TRADING;
    const NAME: &'static str = "P_OpenTrading";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let digit = |c: u8, at: usize| {
            if c.is_ascii_digit() {
                Ok(c - b'0')
            } else {
                Err(bad_sub(at, c))
            }
        };
        let part = digit(r.u8()?, 0)?;
        let parts = digit(r.u8()?, 1)?;
        Ok(Self {
            part,
            parts,
            chunk: HexBytes::from(r.rest()),
        })
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        out.put_u8(b'0' + self.part.min(9));
        out.put_u8(b'0' + self.parts.min(9));
        out.put_bytes(&self.chunk.0);
    }
}

impl OpenTradingS2C {
    /// Cuts a window payload into chunks as Realm Crafter does: one below 1000 bytes, two
    /// below 2000, else three (999, 1000 and the rest).
    pub fn split(payload: &[u8]) -> Vec<Self> {
        let cuts: &[usize] = if payload.len() < 1000 {
            &[]
        } else if payload.len() < 2000 {
            &[CHUNK]
        } else {
            &[CHUNK, CHUNK + 1000]
        };
        let parts = u8::try_from(cuts.len() + 1).unwrap_or(3);
        let mut out = Vec::new();
        let mut start = 0;
        for (i, end) in cuts.iter().copied().chain([payload.len()]).enumerate() {
            out.push(Self {
                part: u8::try_from(i + 1).unwrap_or(3),
                parts,
                chunk: HexBytes::from(payload.get(start..end).unwrap_or_default()),
            });
            start = end;
        }
        out
    }

    /// Joins chunks (in any order) back into the window payload; `None` unless exactly
    /// parts `1..=parts` are present once each.
    pub fn assemble(chunks: &[Self]) -> Option<Vec<u8>> {
        let parts = chunks.first()?.parts;
        if parts == 0 || chunks.len() != usize::from(parts) {
            return None;
        }
        let mut out = Vec::new();
        for n in 1..=parts {
            let mut it = chunks.iter().filter(|c| c.part == n && c.parts == parts);
            let c = it.next()?;
            if it.next().is_some() {
                return None;
            }
            out.extend_from_slice(&c.chunk.0);
        }
        Some(out)
    }
}

/// One ware in a shop window: `item (83 B), amount u16, itemH u32` (89 bytes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShopWare {
    /// The item.
    pub item: ItemString,
    /// How many are for sale.
    pub amount: u16,
    /// The offer handle a purchase names.
    pub item_handle: u32,
}

/// The assembled payload of a `P_OpenTrading` window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind")]
pub enum TradeWindow {
    /// `"P"`: a player trade window opens.
    #[serde(rename = "P")]
    Player,
    /// `"N"` + up to 32 wares: an NPC's shop.
    #[serde(rename = "N")]
    Shop {
        /// The wares.
        wares: Vec<ShopWare>,
    },
}

impl TradeWindow {
    /// The payload (`"P"`, or `"N"` and the records).
    pub fn to_payload(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Self::Player => out.push(b'P'),
            Self::Shop { wares } => {
                out.push(b'N');
                for w in wares.iter().take(TRADE_ENTRIES) {
                    w.item.write(&mut out);
                    out.put_u16(w.amount);
                    out.put_u32(w.item_handle);
                }
            }
        }
        out
    }

    /// Parses an assembled payload (`"P"`, or `"N"` and at most 32 whole records).
    pub fn from_payload(payload: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        match r.u8()? {
            b'P' => {
                r.finish()?;
                Ok(Self::Player)
            }
            b'N' => {
                // At most 32 records, as `to_payload` writes: a 33rd is trailing bytes,
                // so whatever decodes re-encodes to the same payload.
                let mut wares = Vec::new();
                while !r.is_empty() && wares.len() < TRADE_ENTRIES {
                    wares.push(ShopWare {
                        item: ItemString::read(&mut r)?,
                        amount: r.u16()?,
                        item_handle: r.u32()?,
                    });
                }
                r.finish()?;
                Ok(Self::Shop { wares })
            }
            c => Err(bad_sub(0, c)),
        }
    }

    /// The window as the chunks the server sends.
    pub fn to_packets(&self) -> Vec<OpenTradingS2C> {
        OpenTradingS2C::split(&self.to_payload())
    }
}

/// What a player expects from the partner's trade slot `slot` (`slot u8, amount u16`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TradeExpect {
    /// The partner's trade slot (0..31); 0 also means an unused entry.
    pub slot: u8,
    /// How many.
    pub amount: u16,
}

/// One purchase line (`itemH u32, amount u16`; handle 0xFFFFFFFF = unused).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShopBuy {
    /// The ware's offer handle.
    pub item_handle: u32,
    /// How many.
    pub amount: u16,
}

/// One sale line (`slot u8` absolute 14..45, 0 = unused; `amount u16`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShopSell {
    /// Inventory slot.
    pub slot: u8,
    /// How many.
    pub amount: u16,
}

/// `P_OpenTrading` (35) C→S, told apart by length: empty = cancel, 164 bytes = a player
/// trade's confirmation, 288 bytes = a shop's.
#[doc(alias = "P_OpenTrading")]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "sub")]
pub enum OpenTradingC2S {
    /// Empty payload: the window was closed.
    Cancel,
    /// 164 bytes: `cost i32` (what I pay; negative = I receive), 32 ×
    /// [`TradeExpect`], 32 × amount u16 I give from backpack slot `14 + i`.
    PlayerAccept {
        /// What I pay.
        cost: i32,
        /// What I expect (32 entries).
        expect: Vec<TradeExpect>,
        /// What I give per backpack slot (32 entries).
        give: Vec<u16>,
    },
    /// 288 bytes: 32 × [`ShopBuy`], then 32 × [`ShopSell`].
    ShopAccept {
        /// Purchases (32 entries).
        buy: Vec<ShopBuy>,
        /// Sales (32 entries).
        sell: Vec<ShopSell>,
    },
}

impl Packet for OpenTradingC2S {
    const ID: u8 = ids::P_OPEN_TRADING;
    const NAME: &'static str = "P_OpenTrading";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let v = match payload.len() {
            0 => Self::Cancel,
            164 => Self::PlayerAccept {
                cost: r.i32()?,
                expect: r.many(TRADE_ENTRIES, |r| {
                    Ok(TradeExpect {
                        slot: r.u8()?,
                        amount: r.u16()?,
                    })
                })?,
                give: r.many(TRADE_ENTRIES, Reader::u16)?,
            },
            288 => Self::ShopAccept {
                buy: r.many(TRADE_ENTRIES, |r| {
                    Ok(ShopBuy {
                        item_handle: r.u32()?,
                        amount: r.u16()?,
                    })
                })?,
                sell: r.many(TRADE_ENTRIES, |r| {
                    Ok(ShopSell {
                        slot: r.u8()?,
                        amount: r.u16()?,
                    })
                })?,
            },
            actual => {
                return Err(DecodeError::new(
                    0,
                    DecodeErrorKind::LengthMismatch {
                        expected: "0, 164 or 288",
                        actual,
                    },
                ));
            }
        };
        r.finish()?;
        Ok(v)
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        // Always the full fixed layout: missing entries are written unused, extra ones
        // dropped, so the length tells the form apart again.
        match self {
            Self::Cancel => {}
            Self::PlayerAccept { cost, expect, give } => {
                out.put_i32(*cost);
                for i in 0..TRADE_ENTRIES {
                    let e = expect.get(i).copied().unwrap_or_default();
                    out.put_u8(e.slot);
                    out.put_u16(e.amount);
                }
                for i in 0..TRADE_ENTRIES {
                    out.put_u16(give.get(i).copied().unwrap_or(0));
                }
            }
            Self::ShopAccept { buy, sell } => {
                for i in 0..TRADE_ENTRIES {
                    let b = buy.get(i).copied().unwrap_or(ShopBuy {
                        item_handle: u32::MAX,
                        amount: 0,
                    });
                    out.put_u32(b.item_handle);
                    out.put_u16(b.amount);
                }
                for i in 0..TRADE_ENTRIES {
                    let s = sell.get(i).copied().unwrap_or_default();
                    out.put_u8(s.slot);
                    out.put_u16(s.amount);
                }
            }
        }
    }
}

// `P_CloseTrading` (40) is declared with the other empty packets in `proto/mod.rs`.

/// `P_UpdateTrading` (41) C→S: `slot u8` (trade slot 0..31 = backpack `14 + slot`),
/// `amount u16` (0 = withdrawn).
#[doc(alias = "P_UpdateTrading")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpdateTradingC2S {
    /// Trade slot.
    pub slot: u8,
    /// How many (0 = withdraw).
    pub amount: u16,
}

impl Packet for UpdateTradingC2S {
    const ID: u8 = ids::P_UPDATE_TRADING;
    const NAME: &'static str = "P_UpdateTrading";
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

/// `P_UpdateTrading` (41) S→C: the partner's offer relayed: `slot u8, amount u16`, plus
/// the item (83 bytes) when amount > 0.
#[doc(alias = "P_UpdateTrading")]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpdateTradingS2C {
    /// The partner's trade slot.
    pub slot: u8,
    /// How many (0 = withdrawn).
    pub amount: u16,
    /// The item, when offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item: Option<ItemString>,
}

impl Packet for UpdateTradingS2C {
    const ID: u8 = ids::P_UPDATE_TRADING;
    const NAME: &'static str = "P_UpdateTrading";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let slot = r.u8()?;
        let amount = r.u16()?;
        let item = if r.is_empty() {
            None
        } else {
            Some(ItemString::read(&mut r)?)
        };
        r.finish()?;
        Ok(Self { slot, amount, item })
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        out.put_u8(self.slot);
        out.put_u16(self.amount);
        if let Some(i) = &self.item {
            i.write(out);
        }
    }
}

/// `P_Examine` (61) C→S: `RID u16`: examine an actor (Realm Crafter V1).
#[doc(alias = "P_Examine")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Examine {
    /// The target's RuntimeID.
    pub target: u16,
}

impl Packet for Examine {
    const ID: u8 = ids::P_EXAMINE;
    const NAME: &'static str = "P_Examine";
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

/// `P_Trade` (62) C→S: `RID u16`: trade with an actor (Realm Crafter V1; runs
/// `Default.Trade`, which opens an NPC's shop).
#[doc(alias = "P_Trade")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trade {
    /// The target's RuntimeID.
    pub target: u16,
}

impl Packet for Trade {
    const ID: u8 = ids::P_TRADE;
    const NAME: &'static str = "P_Trade";
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
