//! The SDK's view of the player's own items, gold, the ground and the trade window
//! (rc-content-reference §2-§4), kept from the login blocks and the item packets so a bot
//! can act on it: [`Items`], fed by [`Connection::next_event`](crate::Connection::next_event).
//!
//! # Placement of offered items
//! The server places an item it gives (`"G"` offer) by Realm Crafter's first-fit rule
//! and tells the client only the item id and the amount; the client places it by the same
//! rule (`sim::items::inventory::first_fit` in the zone). [`Items`] does so when it knows
//! the item templates ([`Items::set_item_templates`], done by
//! [`Connection::fetch_catalogue`](crate::Connection::fetch_catalogue)) and reports the
//! slot in [`Event::ItemOffered`]. It builds the item from its template (template
//! attributes, health 100), as Realm Crafter's client does, so an item whose server copy
//! differs (a traded, worn item) may land in another stack than the server's; without
//! templates the slot is `None` and placement is the caller's business.
//!
//! The wearer's race, class and slot mask (which equipment slots an item may take) come
//! from [`Items::set_wearer`]; until then every slot is allowed.

use std::collections::{BTreeMap, HashMap};

use shared::proto::{
    ActorTemplateDef, GoldChange, InventorySlot, ItemDef, ItemString, OpenTradingS2C, ServerPacket,
    ShopWare, TradeWindow,
};

use shared::proto::{
    ActionBarUpdate, ClientPacket, EatItem, Examine, InventoryUpdateC2S, ItemScript,
    OpenTradingC2S, ShopBuy, ShopSell, Trade, TradeExpect, UpdateTradingC2S,
};

use crate::conn::Connection;
use crate::error::ClientError;
use crate::event::Event;
use crate::login::CharacterSheet;

/// Inventory slots: 14 equipment slots, then 32 backpack slots.
pub const SLOTS: usize = 46;
/// The first backpack slot (trade slot `i` is backpack slot `BACKPACK + i`).
pub const BACKPACK: usize = 14;
/// The largest stack.
pub const STACK_MAX: u16 = 32767;
/// A fresh item's health.
const FULL_HEALTH: u8 = 100;
/// Attributes in an item string.
const ATTRIBUTES: usize = 40;

/// Items in one inventory slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// The item (id, attributes, health).
    pub item: ItemString,
    /// How many.
    pub amount: u16,
}

/// An item lying on the ground of the player's area.
#[derive(Debug, Clone, PartialEq)]
pub struct GroundItem {
    /// The item.
    pub item: ItemString,
    /// Stack size.
    pub amount: u16,
    /// Where it lies.
    pub position: (f32, f32, f32),
}

/// The trade window, as the server last described it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum TradeState {
    /// No window.
    #[default]
    Closed,
    /// A player trade: what the partner offers, by the partner's trade slot (0..31).
    Player {
        /// The partner's offers: amount and item.
        partner: BTreeMap<u8, (u16, Option<ItemString>)>,
    },
    /// An NPC shop and its wares.
    Shop {
        /// The wares (their handles name a purchase).
        wares: Vec<ShopWare>,
    },
}

/// Who wears the items: what the equipment slots accept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wearer {
    /// Race (an item's `ExclusiveRace` must match, or be empty).
    pub race: String,
    /// Class (an item's `ExclusiveClass` must match, or be empty).
    pub class: String,
    /// The template's `InventorySlots` mask: bit `t - 1` enables slot type `t`.
    pub slots_mask: u32,
}

impl Default for Wearer {
    fn default() -> Self {
        Self {
            race: String::new(),
            class: String::new(),
            slots_mask: u32::MAX,
        }
    }
}

impl Wearer {
    /// The wearer an actor template describes.
    pub fn of(t: &ActorTemplateDef) -> Self {
        Self {
            race: latin1(t.race.as_bytes()),
            class: latin1(t.class.as_bytes()),
            slots_mask: u32::from(t.inventory_slots),
        }
    }
}

fn latin1(b: &[u8]) -> String {
    b.iter().map(|&c| char::from(c)).collect()
}

/// A slot's type (1..7 the equipment slots, 9 rings, 10 amulets, 11 the backpack).
fn slot_type(slot: usize) -> Option<u16> {
    Some(match slot {
        0..=7 => u16::try_from(slot).ok()? + 1,
        8..=11 => 9,
        12..=13 => 10,
        14..SLOTS => 11,
        _ => return None,
    })
}

/// Whether a template may go into a slot (`SlotsMatch` and `ActorHasSlot`).
fn fits(w: &Wearer, slot: usize, t: &ItemDef) -> bool {
    let kind_ok = match slot {
        0 => t.item_type == 1,
        1..=7 => t.item_type == 2 && usize::from(t.slot_type) == slot + 1,
        8..=11 => t.item_type == 3 && t.slot_type == 9,
        12..=13 => t.item_type == 3 && t.slot_type != 9,
        14..SLOTS => true,
        _ => false,
    };
    let Some(ty) = slot_type(slot) else {
        return false;
    };
    let enabled = w.slots_mask & (1u32 << (ty - 1)) != 0;
    let ok = |need: &[u8], have: &str| need.is_empty() || latin1(need).eq_ignore_ascii_case(have);
    let may_use =
        ok(t.exclusive_race.as_bytes(), &w.race) && ok(t.exclusive_class.as_bytes(), &w.class);
    kind_ok && enabled && (slot >= BACKPACK || may_use)
}

/// The SDK's view of the player's items, gold, the ground and the trade window.
///
/// Apply every server packet with [`Items::event`] (the [`Connection`](crate::Connection)
/// does, in `next_event`); the actions on the connection apply what the server does not
/// confirm (a drop, eating, moving items), as Realm Crafter's client does.
#[derive(Debug, Clone)]
pub struct Items {
    slots: Vec<Option<Held>>,
    gold: i64,
    ground: BTreeMap<u32, GroundItem>,
    trade: TradeState,
    chunks: Vec<OpenTradingS2C>,
    templates: HashMap<u16, ItemDef>,
    wearer: Wearer,
}

impl Default for Items {
    fn default() -> Self {
        Self {
            slots: vec![None; SLOTS],
            gold: 0,
            ground: BTreeMap::new(),
            trade: TradeState::Closed,
            chunks: Vec::new(),
            templates: HashMap::new(),
            wearer: Wearer::default(),
        }
    }
}

impl Items {
    /// An empty view.
    pub fn new() -> Self {
        Self::default()
    }

    /// The item templates (`P_FetchItems`), for placing offers.
    pub fn set_item_templates(&mut self, items: &[ItemDef]) {
        self.templates = items.iter().map(|i| (i.id, i.clone())).collect();
    }

    /// Whose equipment slots: the character's actor template.
    pub fn set_wearer(&mut self, wearer: Wearer) {
        self.wearer = wearer;
    }

    /// Gold and inventory from the character sheet (`P_FetchCharacter` "C1", "C3").
    pub fn load_sheet(&mut self, sheet: &CharacterSheet) {
        self.gold = i64::from(sheet.gold as i32).max(0);
        self.load_inventory(&sheet.inventory);
    }

    /// The inventory from a `"C3"` block (slots out of range are ignored).
    pub fn load_inventory(&mut self, inventory: &[Option<InventorySlot>]) {
        self.slots = vec![None; SLOTS];
        for s in inventory.iter().flatten() {
            if let Some(cell) = self.slots.get_mut(usize::from(s.slot)) {
                *cell = Some(Held {
                    item: s.item.clone(),
                    amount: s.amount,
                });
            }
        }
    }

    /// The 46 slots.
    pub fn slots(&self) -> &[Option<Held>] {
        &self.slots
    }

    /// One slot.
    pub fn slot(&self, slot: u8) -> Option<&Held> {
        self.slots.get(usize::from(slot)).and_then(Option::as_ref)
    }

    /// Gold (never below 0, as the client floors it).
    pub fn gold(&self) -> i64 {
        self.gold
    }

    /// The dropped items in view, by handle.
    pub fn ground(&self) -> &BTreeMap<u32, GroundItem> {
        &self.ground
    }

    /// The trade window.
    pub fn trade(&self) -> &TradeState {
        &self.trade
    }

    /// How many of an item the player holds.
    pub fn count(&self, item_id: u16) -> u32 {
        self.slots
            .iter()
            .flatten()
            .filter(|h| h.item.item_id == item_id)
            .map(|h| u32::from(h.amount))
            .sum()
    }

    /// The first slot holding an item.
    pub fn find(&self, item_id: u16) -> Option<u8> {
        self.slots
            .iter()
            .position(|s| s.as_ref().is_some_and(|h| h.item.item_id == item_id))
            .and_then(|i| u8::try_from(i).ok())
    }

    /// The first empty backpack slot.
    pub fn free_backpack_slot(&self) -> Option<u8> {
        (BACKPACK..SLOTS)
            .find(|&i| self.slots.get(i).is_some_and(Option::is_none))
            .and_then(|i| u8::try_from(i).ok())
    }

    /// A fresh item of a known template (its attributes, health 100).
    pub fn instance(&self, item_id: u16) -> Option<ItemString> {
        let t = self.templates.get(&item_id)?;
        let mut attributes = t.attributes.clone();
        attributes.resize(ATTRIBUTES, 0);
        Some(ItemString {
            item_id,
            attributes,
            health: FULL_HEALTH,
        })
    }

    /// The slot an item goes to by the first-fit rule: the first slot, equipment first,
    /// that is empty or holds an identical stackable item with room (backpack only), and
    /// that the item fits. `None` when the template is unknown or nothing fits.
    pub fn first_fit(&self, item: &ItemString) -> Option<u8> {
        let t = self.templates.get(&item.item_id)?;
        (0..SLOTS)
            .find(|&slot| {
                let room = match self.slots.get(slot) {
                    Some(None) => true,
                    Some(Some(h)) => {
                        slot >= BACKPACK
                            && t.stackable != 0
                            && h.item == *item
                            && h.amount < STACK_MAX
                    }
                    None => false,
                };
                room && fits(&self.wearer, slot, t)
            })
            .and_then(|s| u8::try_from(s).ok())
    }

    /// Adds `amount` of `item` to `slot` (a new stack, or onto the one there).
    fn add(&mut self, slot: u8, item: ItemString, amount: u16) {
        if let Some(cell) = self.slots.get_mut(usize::from(slot)) {
            match cell {
                Some(h) => h.amount = h.amount.saturating_add(amount),
                None => *cell = Some(Held { item, amount }),
            }
        }
    }

    /// Removes up to `amount` from `slot`, freeing it at 0; returns what was removed.
    pub(crate) fn remove(&mut self, slot: u8, amount: u16) -> Option<Held> {
        let cell = self.slots.get_mut(usize::from(slot))?;
        let h = cell.as_mut()?;
        let n = amount.min(h.amount);
        h.amount -= n;
        let taken = Held {
            item: h.item.clone(),
            amount: n,
        };
        if h.amount == 0 {
            *cell = None;
        }
        Some(taken)
    }

    /// Moves `amount` (0 = all) from one slot to another, swapping whole stacks when the
    /// target is taken (the client side of `"S"`).
    pub(crate) fn swap(&mut self, from: u8, to: u8, amount: u16) {
        let (f, t) = (usize::from(from), usize::from(to));
        if f == t || f >= SLOTS || t >= SLOTS {
            return;
        }
        let whole = self
            .slots
            .get(f)
            .and_then(Option::as_ref)
            .is_none_or(|h| amount == 0 || amount >= h.amount);
        if whole {
            self.slots.swap(f, t);
        } else if self.slots.get(t).is_some_and(Option::is_none)
            && let Some(part) = self.remove(from, amount)
        {
            self.add(to, part.item, part.amount);
        }
    }

    /// Adds `amount` from one stack onto an identical one (the client side of `"A"`).
    pub(crate) fn merge(&mut self, from: u8, to: u8, amount: u16) {
        let same = match (self.slot(from), self.slot(to)) {
            (Some(a), Some(b)) => a.item == b.item && from != to,
            _ => false,
        };
        if same && let Some(part) = self.remove(from, amount) {
            self.add(to, part.item, part.amount);
        }
    }

    fn apply_gold(&mut self, g: &GoldChange) {
        // The client reads the amount as an i32, adds or subtracts, and floors at 0.
        let delta = match *g {
            GoldChange::Up { amount } => i64::from(amount as i32),
            GoldChange::Down { amount } => -i64::from(amount as i32),
        };
        self.gold = (self.gold + delta).max(0);
    }

    /// Applies one server packet to the view and returns its [`Event`]: an offer with the
    /// slot the item was placed in, and a trade window once all its chunks are in. A
    /// `P_ChangeArea` forgets the ground items of the area left.
    pub fn event(&mut self, packet: ServerPacket) -> Event {
        if let ServerPacket::OpenTrading(c) = &packet {
            return self.window_chunk(c.clone());
        }
        let mut e = Event::from(packet);
        match &mut e {
            Event::ItemOffered {
                item_id,
                amount,
                slot,
                ..
            } => {
                *slot = self.place_offer(*item_id, *amount);
            }
            Event::ItemTaken { slot, amount } => {
                self.remove(*slot, *amount);
            }
            Event::PickedUp { dropped, slot } => {
                if let Some(g) = self.ground.remove(dropped) {
                    self.add(*slot, g.item, g.amount);
                }
            }
            Event::GroundItemAppeared {
                dropped,
                amount,
                position,
                item,
            } => {
                self.ground.insert(
                    *dropped,
                    GroundItem {
                        item: item.clone(),
                        amount: *amount,
                        position: *position,
                    },
                );
            }
            Event::GroundItemGone { dropped } => {
                self.ground.remove(dropped);
            }
            // The new area's items come as `"D"`s right after it (the zone sends every
            // item of the instance on arrival); the old area's are out of reach.
            Event::AreaChanged { .. } => self.ground.clear(),
            Event::ItemHealth { slot, health } => {
                if let Some(h) = self
                    .slots
                    .get_mut(usize::from(*slot))
                    .and_then(Option::as_mut)
                {
                    h.item.health = u8::try_from(*health).unwrap_or(u8::MAX);
                }
            }
            Event::Gold(g) => self.apply_gold(g),
            Event::TradeClosed => self.trade = TradeState::Closed,
            Event::PartnerOffer { slot, amount, item } => {
                if let TradeState::Player { partner } = &mut self.trade {
                    if *amount == 0 {
                        partner.remove(slot);
                    } else {
                        partner.insert(*slot, (*amount, item.clone()));
                    }
                }
            }
            _ => {}
        }
        e
    }

    /// Places an offer by the first-fit rule, as many times as the amount needs (a stack
    /// fills up, an equipment slot takes one); `None` if the template is unknown or it
    /// does not fit whole (then nothing is placed).
    fn place_offer(&mut self, item_id: u16, amount: u16) -> Option<u8> {
        let item = self.instance(item_id)?;
        let before = self.slots.clone();
        let mut left = amount;
        let mut first = None;
        while left > 0 {
            let Some(slot) = self.first_fit(&item) else {
                self.slots = before;
                return None;
            };
            first.get_or_insert(slot);
            let n = match self.slot(slot) {
                Some(h) => left.min(STACK_MAX - h.amount),
                None if usize::from(slot) < BACKPACK => 1,
                None => left.min(STACK_MAX),
            };
            self.add(slot, item.clone(), n);
            left -= n;
        }
        first
    }

    fn window_chunk(&mut self, c: OpenTradingS2C) -> Event {
        if c.part <= 1 {
            self.chunks.clear();
        }
        let (part, parts) = (c.part, c.parts);
        self.chunks.push(c);
        if self.chunks.len() < usize::from(parts) {
            return Event::TradeWindowPart { part, parts };
        }
        let chunks = std::mem::take(&mut self.chunks);
        match OpenTradingS2C::assemble(&chunks).map(|p| TradeWindow::from_payload(&p)) {
            Some(Ok(w)) => {
                self.trade = match &w {
                    TradeWindow::Player => TradeState::Player {
                        partner: BTreeMap::new(),
                    },
                    TradeWindow::Shop { wares } => TradeState::Shop {
                        wares: wares.clone(),
                    },
                };
                Event::TradeOpened(w)
            }
            _ => Event::TradeWindowPart { part, parts },
        }
    }
}

/// Item, gold and trade actions (rc-content-reference §2-§4, §9.15-§9.62). Those the
/// server does not answer (a drop, eating, moving or merging items, offering in a trade)
/// are applied to [`Connection::items`] at once, as Realm Crafter's client does; the rest
/// update it when the server's reply arrives through [`Connection::next_event`].
impl Connection {
    /// The SDK's view of the player's items, gold, the ground and the trade window.
    pub fn items(&self) -> &Items {
        &self.items
    }

    /// The view, to set the wearer or load a sheet by hand.
    pub fn items_mut(&mut self) -> &mut Items {
        &mut self.items
    }

    async fn send_item_packet(&mut self, p: ClientPacket) -> Result<(), ClientError> {
        self.send(&p).await
    }

    /// Pick up a dropped item into a slot (`P_InventoryUpdate "P"`); the server answers
    /// `"R"` ([`Event::PickedUp`]). `slot` is usually [`Items::first_fit`] of the item.
    #[doc(alias = "P_InventoryUpdate")]
    pub async fn pick_up(&mut self, dropped: u32, slot: u8) -> Result<(), ClientError> {
        self.send_item_packet(InventoryUpdateC2S::Pickup { dropped, slot }.into())
            .await
    }

    /// Drop `amount` from a slot at the player's feet (`"D"`). Removed from the view now.
    pub async fn drop_item(&mut self, slot: u8, amount: u16) -> Result<(), ClientError> {
        self.send_item_packet(InventoryUpdateC2S::Drop { slot, amount }.into())
            .await?;
        self.items.remove(slot, amount);
        Ok(())
    }

    /// Answer an offer (`"G"`): `Some(slot)` where the client put it (`"GY"`), `None` when
    /// it had no room (`"GN"`).
    pub async fn answer_offer(
        &mut self,
        item_handle: u32,
        slot: Option<u8>,
    ) -> Result<(), ClientError> {
        let p = match slot {
            Some(slot) => InventoryUpdateC2S::OfferAccepted { item_handle, slot },
            None => InventoryUpdateC2S::OfferRefused { item_handle },
        };
        self.send_item_packet(p.into()).await
    }

    /// Move, swap or split a stack of the actor `runtime_id` (the player or a pet)
    /// (`"S"`; `amount` 0 = the whole stack). The player's own view changes now.
    pub async fn swap_items(
        &mut self,
        runtime_id: u16,
        own_runtime_id: u16,
        from: u8,
        to: u8,
        amount: u16,
    ) -> Result<(), ClientError> {
        let p = InventoryUpdateC2S::Swap {
            runtime_id,
            from,
            to,
            amount,
        };
        self.send_item_packet(p.into()).await?;
        if runtime_id == own_runtime_id {
            self.items.swap(from, to, amount);
        }
        Ok(())
    }

    /// Add part of a stack onto an identical stack (`"A"`). The player's own view changes
    /// now.
    pub async fn merge_items(
        &mut self,
        runtime_id: u16,
        own_runtime_id: u16,
        from: u8,
        to: u8,
        amount: u16,
    ) -> Result<(), ClientError> {
        let p = InventoryUpdateC2S::Merge {
            runtime_id,
            from,
            to,
            amount,
        };
        self.send_item_packet(p.into()).await?;
        if runtime_id == own_runtime_id {
            self.items.merge(from, to, amount);
        }
        Ok(())
    }

    /// Use the item in a slot, on a target or none (`P_ItemScript`): runs its script.
    #[doc(alias = "P_ItemScript")]
    pub async fn use_item(&mut self, slot: u8, target: Option<u16>) -> Result<(), ClientError> {
        self.send_item_packet(ItemScript { slot, target }.into())
            .await
    }

    /// Eat a potion or an ingredient (`P_EatItem`). Removed from the view now (the server
    /// does not reply).
    #[doc(alias = "P_EatItem")]
    pub async fn eat(&mut self, slot: u8, amount: u16) -> Result<(), ClientError> {
        self.send_item_packet(EatItem { slot, amount }.into())
            .await?;
        self.items.remove(slot, amount);
        Ok(())
    }

    /// Put a spell, an item or nothing in an action-bar slot (`P_ActionBarUpdate`).
    #[doc(alias = "P_ActionBarUpdate")]
    pub async fn set_action_bar(&mut self, update: ActionBarUpdate) -> Result<(), ClientError> {
        self.send_item_packet(update.into()).await
    }

    /// Invite a player to trade (chat `/trade Name`).
    pub async fn trade_invite(&mut self, name: &str) -> Result<(), ClientError> {
        self.command(&format!("trade {name}")).await
    }

    /// Accept a trade invitation (chat `/trade`); the window opens when both accepted
    /// ([`Event::TradeOpened`]).
    pub async fn trade_accept_invite(&mut self) -> Result<(), ClientError> {
        self.command("trade").await
    }

    /// Offer `amount` from trade slot `slot` (backpack slot 14 + `slot`; 0 withdraws)
    /// (`P_UpdateTrading`).
    #[doc(alias = "P_UpdateTrading")]
    pub async fn update_trading(&mut self, slot: u8, amount: u16) -> Result<(), ClientError> {
        self.send_item_packet(UpdateTradingC2S { slot, amount }.into())
            .await
    }

    /// Confirm a player trade (`P_OpenTrading`, 164 bytes): `cost` is what I pay (negative
    /// = I receive), `expect` what I expect from the partner's trade slots, `give[i]` what
    /// I give from backpack slot 14 + i (lists are padded to 32).
    #[doc(alias = "P_OpenTrading")]
    pub async fn accept_trade(
        &mut self,
        cost: i32,
        expect: Vec<TradeExpect>,
        give: Vec<u16>,
    ) -> Result<(), ClientError> {
        self.send_item_packet(OpenTradingC2S::PlayerAccept { cost, expect, give }.into())
            .await
    }

    /// Close the trade or shop window (`P_OpenTrading`, empty).
    pub async fn cancel_trade(&mut self) -> Result<(), ClientError> {
        self.send_item_packet(OpenTradingC2S::Cancel.into()).await?;
        self.items.trade = TradeState::Closed;
        Ok(())
    }

    /// Buy wares (by their handles) and sell own backpack slots (absolute 14..45) in an
    /// open shop (`P_OpenTrading`, 288 bytes); lists are padded to 32. The client closes
    /// its window itself: the server sends no close, only the `"T"`, `"G"` and gold.
    pub async fn shop_accept(
        &mut self,
        buy: Vec<ShopBuy>,
        sell: Vec<ShopSell>,
    ) -> Result<(), ClientError> {
        self.send_item_packet(OpenTradingC2S::ShopAccept { buy, sell }.into())
            .await?;
        self.items.trade = TradeState::Closed;
        Ok(())
    }

    /// Trade with an actor (`P_Trade`): its `Trade` script, which opens an NPC's shop.
    #[doc(alias = "P_Trade")]
    pub async fn trade_with(&mut self, target: u16) -> Result<(), ClientError> {
        self.send_item_packet(Trade { target }.into()).await
    }

    /// Examine an actor (`P_Examine`).
    #[doc(alias = "P_Examine")]
    pub async fn examine(&mut self, target: u16) -> Result<(), ClientError> {
        self.send_item_packet(Examine { target }.into()).await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use shared::frame::FrameDecoder;
    use shared::proto::{ItemTail, TradeWindow};

    use super::*;

    const SWORD: u16 = 1;
    const POTION: u16 = 2;

    fn def(id: u16, item_type: u8, slot_type: u16, stackable: u8) -> ItemDef {
        ItemDef {
            id,
            item_type,
            takes_damage: 0,
            value: 10,
            mass: 1,
            thumb: 0,
            gubbins: [0; 6],
            male_mesh: 0,
            female_mesh: 0,
            slot_type,
            stackable,
            attributes: vec![0; 40],
            name: "x".into(),
            exclusive_race: "".into(),
            exclusive_class: "".into(),
            tail: ItemTail::None,
            misc: "".into(),
        }
    }

    fn items() -> Items {
        let mut i = Items::new();
        i.set_item_templates(&[def(SWORD, 1, 1, 0), def(POTION, 4, 11, 1)]);
        i
    }

    /// Decodes a recorded stream of frames (`[len u16][type][payload]`, hex) and applies
    /// each packet, returning the events.
    fn feed(i: &mut Items, hex_frames: &str) -> Vec<Event> {
        let clean: String = hex_frames.split_whitespace().collect();
        let bytes = hex::decode(clean).unwrap();
        let mut d = FrameDecoder::new();
        d.push(&bytes);
        let mut out = Vec::new();
        while let Some(f) = d.next_frame().unwrap() {
            let p = ServerPacket::decode(f.ty, f.payload).unwrap();
            out.push(i.event(p));
        }
        d.finish().unwrap();
        out
    }

    /// The little-endian length prefix of a frame given as hex (type byte included).
    fn len_prefix(hex_packet: &str) -> String {
        let n = u16::try_from(hex_packet.replace(' ', "").len() / 2).unwrap();
        hex::encode(n.to_le_bytes())
    }

    fn offered_slot(e: &Event) -> Option<u8> {
        match e {
            Event::ItemOffered { slot, .. } => *slot,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn offers_are_placed_first_fit_equipment_first() {
        let mut i = items();
        // Two swords (handles 0x10, 0x11), then 5 and 3 potions (0x12, 0x13).
        let ev = feed(
            &mut i,
            "0a00 0f 47 10000000 0100 0100
             0a00 0f 47 11000000 0100 0100
             0a00 0f 47 12000000 0200 0500
             0a00 0f 47 13000000 0200 0300",
        );
        assert_eq!(
            ev.iter().map(offered_slot).collect::<Vec<_>>(),
            [Some(0), Some(14), Some(15), Some(15)]
        );
        assert_eq!(i.slot(0).unwrap().item.item_id, SWORD);
        assert_eq!(i.slot(15).unwrap().amount, 8);
        assert_eq!(i.count(POTION), 8);
        assert_eq!(i.find(SWORD), Some(0));
        assert_eq!(i.free_backpack_slot(), Some(16));
        // "T": 8 taken from slot 15 frees it.
        let ev = feed(&mut i, "0500 0f 54 0f 0800");
        assert_eq!(
            ev,
            [Event::ItemTaken {
                slot: 15,
                amount: 8
            }]
        );
        assert!(i.slot(15).is_none());
        // An unknown item is left to the caller.
        let ev = feed(&mut i, "0a00 0f 47 14000000 0900 0100");
        assert_eq!(offered_slot(&ev[0]), None);
    }

    #[test]
    fn the_wearers_slot_mask_and_race_gate_equipment() {
        let mut i = items();
        // No weapon slot (bit 0 clear): the sword goes to the backpack.
        i.set_wearer(Wearer {
            race: "Human".into(),
            class: "Warrior".into(),
            slots_mask: !1,
        });
        let ev = feed(&mut i, "0a00 0f 47 10000000 0100 0100");
        assert_eq!(offered_slot(&ev[0]), Some(14));
        // An elf-only sword cannot be equipped by a human.
        let mut elvish = def(3, 1, 1, 0);
        elvish.exclusive_race = "Elf".into();
        i.set_item_templates(&[elvish]);
        i.set_wearer(Wearer {
            race: "Human".into(),
            class: String::new(),
            slots_mask: u32::MAX,
        });
        let ev = feed(&mut i, "0a00 0f 47 11000000 0300 0100");
        assert_eq!(offered_slot(&ev[0]), Some(15));
    }

    #[test]
    fn sheet_ground_items_pickup_and_health() {
        let mut i = items();
        let sword = i.instance(SWORD).unwrap();
        i.load_sheet(&CharacterSheet {
            gold: 50,
            reputation: 0,
            level: 1,
            xp: 0,
            home_faction: 0,
            attributes: vec![],
            inventory: vec![
                Some(InventorySlot {
                    slot: 0,
                    item: sword.clone(),
                    amount: 1,
                }),
                Some(InventorySlot {
                    slot: 99,
                    item: sword,
                    amount: 1,
                }),
            ],
            spells: vec![],
            quests: vec![],
        });
        assert_eq!(i.gold(), 50);
        assert_eq!(i.count(SWORD), 1);
        // "D": 3 potions at (10, 1, -5.5), handle 0x1234, a 40-attribute item string.
        let mut d = String::from("0f 44 0300 00002041 0000803f 0000b0c0 34120000 0200");
        d.push_str(&"0000".repeat(40));
        d.push_str("64");
        let frame = len_prefix(&d);
        let ev = feed(&mut i, &format!("{frame}{d}"));
        assert!(matches!(
            ev[0],
            Event::GroundItemAppeared {
                dropped: 0x1234,
                amount: 3,
                position: (10.0, 1.0, -5.5),
                ..
            }
        ));
        assert_eq!(i.ground().len(), 1);
        // "R": the pickup went into slot 20; "P": another item gone; "H": health 40.
        let ev = feed(
            &mut i,
            "0700 0f 52 34120000 14
             0600 0f 50 99000000
             0400 0f 48 00 28",
        );
        assert_eq!(
            ev[0],
            Event::PickedUp {
                dropped: 0x1234,
                slot: 20
            }
        );
        assert!(i.ground().is_empty());
        assert_eq!(i.slot(20).unwrap().amount, 3);
        // A ground item of an area left is forgotten on P_ChangeArea.
        feed(&mut i, &format!("{frame}{d}"));
        assert_eq!(i.ground().len(), 1);
        i.event(ServerPacket::ChangeArea(shared::proto::ChangeArea {
            area: "Darkwood".into(),
            ..Default::default()
        }));
        assert!(i.ground().is_empty());
        assert_eq!(i.slot(0).unwrap().item.health, 40);
        // P_ItemHealth (u16): the sword is broken.
        feed(&mut i, "0400 2d 00 0000");
        assert_eq!(i.slot(0).unwrap().item.health, 0);
    }

    #[test]
    fn gold_is_applied_and_floored() {
        let mut i = Items::new();
        let ev = feed(&mut i, "0600 18 55 fa000000 0600 18 44 2c010000");
        assert_eq!(ev[0], Event::Gold(GoldChange::Up { amount: 250 }));
        assert_eq!(i.gold(), 0);
        feed(&mut i, "0600 18 55 0a000000");
        assert_eq!(i.gold(), 10);
    }

    #[test]
    fn a_three_chunk_shop_window_opens_once_whole() {
        let mut i = items();
        let wares: Vec<ShopWare> = (0..32u16)
            .map(|n| ShopWare {
                item: i.instance(POTION).unwrap(),
                amount: n + 1,
                item_handle: 0x100 + u32::from(n),
            })
            .collect();
        let window = TradeWindow::Shop {
            wares: wares.clone(),
        };
        let mut stream = Vec::new();
        for c in window.to_packets() {
            ServerPacket::OpenTrading(c)
                .encode_frame(&mut stream)
                .unwrap();
        }
        let ev = feed(&mut i, &hex::encode(&stream));
        assert_eq!(
            ev,
            [
                Event::TradeWindowPart { part: 1, parts: 3 },
                Event::TradeWindowPart { part: 2, parts: 3 },
                Event::TradeOpened(window),
            ]
        );
        assert_eq!(i.trade(), &TradeState::Shop { wares });
    }

    #[test]
    fn a_player_trade_window_tracks_the_partners_offers() {
        let mut i = items();
        // "11P", then P_UpdateTrading: slot 3, amount 2, item 0x0200; then withdrawn.
        let mut upd = String::from("29 03 0200 0002");
        upd.push_str(&"0000".repeat(40));
        upd.push_str("64");
        let frame = len_prefix(&upd);
        let ev = feed(
            &mut i,
            &format!("0400 23 3131 50 {frame}{upd} 0400 29 03 0000"),
        );
        assert_eq!(ev[0], Event::TradeOpened(TradeWindow::Player));
        match &ev[1] {
            Event::PartnerOffer {
                slot: 3,
                amount: 2,
                item: Some(it),
            } => assert_eq!(it.item_id, 0x0200),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            ev[2],
            Event::PartnerOffer {
                slot: 3,
                amount: 0,
                item: None
            }
        );
        assert_eq!(
            i.trade(),
            &TradeState::Player {
                partner: BTreeMap::new()
            }
        );
        let ev = feed(&mut i, "0100 28");
        assert_eq!(ev, [Event::TradeClosed]);
        assert_eq!(i.trade(), &TradeState::Closed);
    }

    #[test]
    fn local_moves_swap_split_and_merge() {
        let mut i = items();
        feed(&mut i, "0a00 0f 47 12000000 0200 0500");
        assert_eq!(i.slot(14).unwrap().amount, 5);
        i.swap(14, 20, 2);
        assert_eq!(
            (i.slot(14).unwrap().amount, i.slot(20).unwrap().amount),
            (3, 2)
        );
        i.merge(20, 14, 2);
        assert_eq!(i.slot(14).unwrap().amount, 5);
        assert!(i.slot(20).is_none());
        i.swap(14, 30, 0);
        assert!(i.slot(14).is_none());
        assert_eq!(i.slot(30).unwrap().amount, 5);
        // Out of range does nothing.
        i.swap(30, 200, 0);
        assert_eq!(i.slot(30).unwrap().amount, 5);
    }
}
