//! The swarm bots' item play (`--item-chance`, rc-content-reference §2-§4): an idle bot
//! picks up an item it sees on the ground (walking to it first), drops one from its
//! backpack, equips a backpack weapon or armour (`"S"`) or takes a worn one off, eats a
//! potion, trades one
//! backpack stack with another bot it sees (`/trade Name`, the other accepts with
//! `/trade`, both offer and both confirm with matching costs), or buys and sells at a
//! shop NPC (a right-click opens its window, `shop_accept` settles). Everything goes
//! through the client SDK's items API ([`client::Items`], [`Connection`]'s item actions).
//!
//! A refused action is fine: the server counts it and changes nothing, and the bot only
//! forgets what it was doing after a timeout. Nothing here closes the connection; only a
//! transport error from a send ends the bot, as for its moves.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use client::items::{BACKPACK, SLOTS};
use client::{Catalogue, ClientError, Connection, Event, Items, TradeState};
use rand::Rng as _;
use rand::rngs::SmallRng;
use shared::proto::{ChatColour, ShopBuy, ShopSell, ShopWare, TradeExpect, TradeWindow};
use tokio::time::Instant;

/// Item types (`ItemDef::item_type`).
const WEAPON: u8 = 1;
const ARMOUR: u8 = 2;
const RING: u8 = 3;
const POTION: u8 = 4;
const INGREDIENT: u8 = 5;
/// The first ring and amulet slots.
const RING_SLOT: u8 = 8;
const AMULET_SLOT: u8 = 12;
/// The slot type of a ring (any other ring-type item is an amulet).
const RING_SLOT_TYPE: u16 = 9;
/// Trade slots (backpack slot `BACKPACK + i`).
const TRADE_SLOTS: usize = 32;
/// The first backpack slot as a slot number.
const FIRST_BACKPACK: u8 = 14;

/// How close a bot walks to a ground item before picking it up (the server's default
/// reach is 20; the server's copy of the bot's position may lag a step behind).
const PICKUP_REACH: f32 = 2.5;
/// Ground items farther than this are not worth the walk.
const FETCH_RANGE: f32 = 60.0;
/// How close to a shop NPC the right-click is sent (the server's reach is 20).
const SHOP_REACH: f32 = 12.0;
/// Shops farther than this are not visited.
const SHOP_RANGE: f32 = 60.0;
/// Players within this distance are trade partners.
const TRADE_RANGE: f32 = 40.0;
/// How long after entering before the first item action: the starter kit's offers arrive.
const SETTLE_IN: Duration = Duration::from_secs(3);
/// After the trade window opened, when both sides confirm (their offers have crossed).
const CONFIRM_AFTER: Duration = Duration::from_millis(1500);
/// How long a trade may take from the invitation to the close.
const TRADE_TIMEOUT: Duration = Duration::from_secs(12);
/// A pause after an activity ends, so a late close or offer of the old one is not taken
/// for the next one's.
const COOLDOWN: Duration = Duration::from_secs(1);

/// What the bots count (summed over all bots).
#[derive(Default)]
pub struct ItemStats {
    trades_completed: AtomicU64,
    trades_cancelled: AtomicU64,
    trade_invites_refused: AtomicU64,
    picked_up: AtomicU64,
    dropped: AtomicU64,
    bought: AtomicU64,
    sold: AtomicU64,
    equipped: AtomicU64,
    unequipped: AtomicU64,
    eaten: AtomicU64,
    offers_received: AtomicU64,
    shop_windows: AtomicU64,
    /// Bots whose start and end are counted (those that played to the end).
    bots: AtomicU64,
    items_start: AtomicU64,
    items_end: AtomicU64,
    gold_start: AtomicI64,
    gold_end: AtomicI64,
}

fn add(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

impl ItemStats {
    /// The summary's `items` object.
    pub fn json(&self) -> serde_json::Value {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let s = |c: &AtomicI64| c.load(Ordering::Relaxed);
        serde_json::json!({
            "trades_completed": g(&self.trades_completed),
            "trades_cancelled": g(&self.trades_cancelled),
            "trade_invites_refused": g(&self.trade_invites_refused),
            "picked_up": g(&self.picked_up),
            "dropped": g(&self.dropped),
            "bought": g(&self.bought),
            "sold": g(&self.sold),
            "equipped": g(&self.equipped),
            "unequipped": g(&self.unequipped),
            "eaten": g(&self.eaten),
            "offers_received": g(&self.offers_received),
            "shop_windows": g(&self.shop_windows),
            "bots_counted": g(&self.bots),
            "items_start": g(&self.items_start),
            "items_end": g(&self.items_end),
            "gold_start": s(&self.gold_start),
            "gold_end": s(&self.gold_end),
        })
    }

    /// One line for the progress display.
    pub fn progress(&self) -> String {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        format!(
            "trades {} | picked up {} dropped {} | bought {} sold {} | equipped {} eaten {}",
            g(&self.trades_completed),
            g(&self.picked_up),
            g(&self.dropped),
            g(&self.bought),
            g(&self.sold),
            g(&self.equipped),
            g(&self.eaten),
        )
    }
}

/// What a bot needs to know of an item template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemInfo {
    item_type: u8,
    slot_type: u16,
    value: u32,
}

/// The world's items and shop NPCs, from the catalogue (`P_FetchActors`).
#[derive(Debug, Clone, Default)]
pub struct ItemWorld {
    items: HashMap<u16, ItemInfo>,
    /// Actor templates whose trade mode is "shop".
    shops: HashSet<u16>,
}

impl ItemWorld {
    /// The item templates and the shop templates of a catalogue.
    pub fn of(cat: &Catalogue) -> Self {
        Self {
            items: cat
                .items
                .iter()
                .map(|i| {
                    let info = ItemInfo {
                        item_type: i.item_type,
                        slot_type: i.slot_type,
                        value: i.value,
                    };
                    (i.id, info)
                })
                .collect(),
            shops: cat
                .actors
                .iter()
                .filter(|t| t.trade == 2)
                .map(|t| t.id)
                .collect(),
        }
    }

    fn info(&self, item_id: u16) -> Option<ItemInfo> {
        self.items.get(&item_id).copied()
    }
}

/// The equipment slot an item is worn in (the first of the rings and amulets), or `None`
/// for an item that is not worn.
fn equip_slot(info: ItemInfo) -> Option<u8> {
    match info.item_type {
        WEAPON => Some(0),
        // Armour slot types 2..=8: shield, hat, chest, hands, belt, legs, feet (slots 1..7).
        ARMOUR => u8::try_from(info.slot_type)
            .ok()
            .filter(|t| (2..=8).contains(t))
            .map(|t| t - 1),
        RING if info.slot_type == RING_SLOT_TYPE => Some(RING_SLOT),
        RING => Some(AMULET_SLOT),
        _ => None,
    }
}

/// A system line the bot acts on (the zone's trade messages, `sim/items/trade.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TradeLine {
    /// `"You have been invited to trade with <name>. Send /trade to accept."`
    Invited,
    /// `"<name> changed the offer: press OK again to accept"`
    OfferChanged,
    /// `"The trade was refused: ..."` or `"<name> cancelled the trade"`.
    Failed,
    /// The invitation was not sent or is gone: `"<name> cannot trade now"`, `"<name> is
    /// not in this area"`, `"You are already trading"`, `"The trade is no longer on
    /// offer"`, `"You cannot trade with yourself"`.
    Refused,
}

fn trade_line(text: &[u8]) -> Option<TradeLine> {
    let ends = |s: &[u8]| text.ends_with(s);
    if text.starts_with(b"You have been invited to trade with ") {
        Some(TradeLine::Invited)
    } else if ends(b" changed the offer: press OK again to accept") {
        Some(TradeLine::OfferChanged)
    } else if text.starts_with(b"The trade was refused") || ends(b" cancelled the trade") {
        Some(TradeLine::Failed)
    } else if ends(b" cannot trade now")
        || ends(b" is not in this area")
        || text == b"You are already trading"
        || text == b"The trade is no longer on offer"
        || text == b"You cannot trade with yourself"
    {
        Some(TradeLine::Refused)
    } else {
        None
    }
}

/// A player trade in progress.
#[derive(Debug, Clone)]
struct TradeRun {
    /// This bot invited (only the inviter counts the trade, so each counts once).
    inviter: bool,
    /// The window is open (`"11P"`).
    opened: bool,
    /// When to press OK.
    confirm_at: Option<Instant>,
    confirmed: bool,
    /// A refusal or a cancellation was said.
    failed: bool,
    until: Instant,
}

/// A shop visit's step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ShopStep {
    /// Walking to the NPC.
    Walk,
    /// Right-clicked, waiting for the window.
    Opening,
    /// Sent the deal: the `"G"` offers that come are purchases, the `"T"`s sales.
    Deal,
}

/// What the bot is doing with items.
#[derive(Debug, Clone)]
enum Activity {
    Idle,
    /// Walking to a ground item (`sent`: the pickup went out), until.
    Fetch {
        dropped: u32,
        sent: bool,
        until: Instant,
    },
    Shop {
        npc: u16,
        step: ShopStep,
        until: Instant,
    },
    Trade(TradeRun),
}

/// An idle bot's choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    PickUp,
    Drop,
    Equip,
    /// Take a worn item off into the backpack (so there is something to equip, trade or
    /// sell later: the shop's equipment sells out early).
    Unequip,
    Eat,
    Trade,
    Shop,
}

/// One bot's item play.
pub struct ItemBot {
    world: std::sync::Arc<ItemWorld>,
    /// Chance per idle second of starting an item action.
    chance: f64,
    /// `--closed-economy`: no eating, no shops.
    closed: bool,
    /// Bots' names start with it: only they are invited.
    prefix: String,
    own_rid: u16,
    /// Other players in view: RuntimeID → (name, x, z).
    players: HashMap<u16, (String, f32, f32)>,
    /// Shop NPCs in view: RuntimeID → (x, z).
    shops: HashMap<u16, (f32, f32)>,
    activity: Activity,
    /// No new activity before this.
    not_before: Instant,
    /// Items held and gold when the bot started to play with them.
    start: Option<(u64, i64)>,
}

/// Items held (all slots) and gold in the SDK's view.
fn totals(items: &Items) -> (u64, i64) {
    let n = items
        .slots()
        .iter()
        .flatten()
        .map(|h| u64::from(h.amount))
        .sum();
    (n, items.gold())
}

fn dist2(a: (f32, f32), b: (f32, f32)) -> f32 {
    (a.0 - b.0) * (a.0 - b.0) + (a.1 - b.1) * (a.1 - b.1)
}

/// Backpack slots holding something, with the item id and amount.
fn backpack(items: &Items) -> impl Iterator<Item = (u8, u16, u16)> + '_ {
    (BACKPACK..SLOTS).filter_map(|s| {
        let slot = u8::try_from(s).ok()?;
        items.slot(slot).map(|h| (slot, h.item.item_id, h.amount))
    })
}

fn pick<T: Copy>(rng: &mut SmallRng, v: &[T]) -> Option<T> {
    if v.is_empty() {
        None
    } else {
        v.get(rng.gen_range(0..v.len())).copied()
    }
}

/// The deal a bot makes in a shop window: sell one of a random backpack stack (half the
/// time), buy one of a random ware it can afford with its gold and that sale. `None`
/// when there is nothing to do.
fn shop_deal(
    world: &ItemWorld,
    items: &Items,
    wares: &[ShopWare],
    rng: &mut SmallRng,
) -> Option<(Vec<ShopBuy>, Vec<ShopSell>)> {
    let stacks: Vec<(u8, u16, u16)> = backpack(items).collect();
    let sale = if rng.gen_bool(0.5) {
        pick(rng, &stacks)
    } else {
        None
    };
    let income = sale
        .and_then(|(_, id, _)| world.info(id))
        .map_or(0, |i| i64::from(i.value));
    let budget = items.gold() + income;
    let affordable: Vec<&ShopWare> = wares
        .iter()
        .filter(|w| {
            w.amount > 0
                && world
                    .info(w.item.item_id)
                    .is_some_and(|i| i64::from(i.value) <= budget)
        })
        .collect();
    let buy = pick(rng, &affordable).map(|w| ShopBuy {
        item_handle: w.item_handle,
        amount: 1,
    });
    let sell = sale.map(|(slot, _, _)| ShopSell { slot, amount: 1 });
    if buy.is_none() && sell.is_none() {
        return None;
    }
    Some((buy.into_iter().collect(), sell.into_iter().collect()))
}

/// What a bot expects from its partner: exactly the partner's offers as relayed.
fn expectations(trade: &TradeState) -> Vec<TradeExpect> {
    match trade {
        TradeState::Player { partner } => partner
            .iter()
            .map(|(&slot, &(amount, _))| TradeExpect { slot, amount })
            .collect(),
        _ => Vec::new(),
    }
}

impl ItemBot {
    /// A bot's item play; `chance` is `--item-chance`, `closed` `--closed-economy` (no
    /// eating, no shops).
    pub fn new(
        world: std::sync::Arc<ItemWorld>,
        chance: f64,
        closed: bool,
        prefix: &str,
        own_rid: u16,
    ) -> Self {
        Self {
            world,
            chance: chance.clamp(0.0, 1.0),
            closed,
            prefix: prefix.to_owned(),
            own_rid,
            players: HashMap::new(),
            shops: HashMap::new(),
            activity: Activity::Idle,
            not_before: Instant::now() + SETTLE_IN,
            start: None,
        }
    }

    /// Not doing anything with items (the bot may hunt).
    pub fn is_idle(&self) -> bool {
        matches!(self.activity, Activity::Idle)
    }

    /// An actor came into view (`P_NewActor`).
    pub fn actor_appeared(&mut self, a: &shared::proto::NewActor) {
        if a.runtime_id == self.own_rid {
            return;
        }
        if a.human != 0 {
            let name: String = a
                .actor_name
                .as_bytes()
                .iter()
                .map(|&b| char::from(b))
                .collect();
            self.players.insert(a.runtime_id, (name, a.x, a.z));
        } else if self.world.shops.contains(&a.template_id) {
            self.shops.insert(a.runtime_id, (a.x, a.z));
        }
    }

    /// An actor moved.
    pub fn actor_moved(&mut self, runtime_id: u16, x: f32, z: f32) {
        if let Some(p) = self.players.get_mut(&runtime_id) {
            p.1 = x;
            p.2 = z;
        } else if let Some(p) = self.shops.get_mut(&runtime_id) {
            *p = (x, z);
        }
    }

    /// An actor left view or died.
    pub fn actor_gone(&mut self, runtime_id: u16) {
        self.players.remove(&runtime_id);
        self.shops.remove(&runtime_id);
    }

    /// The bot is in another area (or was put back): what it saw is gone, and a trade or
    /// a shop window does not survive it.
    pub fn area_changed(&mut self, stats: &ItemStats) {
        self.players.clear();
        self.shops.clear();
        if let Activity::Trade(t) = &self.activity
            && t.inviter
        {
            add(&stats.trades_cancelled, 1);
        }
        self.idle();
    }

    fn idle(&mut self) {
        self.activity = Activity::Idle;
        self.not_before = Instant::now() + COOLDOWN;
    }

    /// The bot played to the end: its start and end totals go into the summary.
    pub fn finish(&self, c: &Connection, stats: &ItemStats) {
        let Some((n0, g0)) = self.start else { return };
        let (n1, g1) = totals(c.items());
        add(&stats.bots, 1);
        add(&stats.items_start, n0);
        add(&stats.items_end, n1);
        stats.gold_start.fetch_add(g0, Ordering::Relaxed);
        stats.gold_end.fetch_add(g1, Ordering::Relaxed);
    }

    /// One input tick of an otherwise idle bot at `pos`: goes on with the activity or,
    /// by chance, starts one. Returns where to walk, if the activity needs a walk.
    pub async fn tick(
        &mut self,
        c: &mut Connection,
        pos: (f32, f32, f32),
        input_hz: f64,
        rng: &mut SmallRng,
        stats: &ItemStats,
    ) -> Result<Option<(f32, f32, f32)>, ClientError> {
        let now = Instant::now();
        let me = (pos.0, pos.2);
        match self.activity.clone() {
            Activity::Idle => {
                if now < self.not_before {
                    return Ok(None);
                }
                if self.start.is_none() {
                    self.start = Some(totals(c.items()));
                }
                // `chance` per second of idling.
                let p = (self.chance / input_hz.max(0.1)).clamp(0.0, 1.0);
                if rng.gen_bool(p) {
                    return self.start_action(c, pos, rng, stats).await;
                }
                Ok(None)
            }
            Activity::Fetch {
                dropped,
                sent,
                until,
            } => {
                let Some(g) = c.items().ground().get(&dropped).cloned() else {
                    self.idle();
                    return Ok(None);
                };
                if now >= until {
                    self.idle();
                    return Ok(None);
                }
                let at = (g.position.0, g.position.2);
                if sent {
                    return Ok(None);
                }
                if dist2(me, at) <= PICKUP_REACH * PICKUP_REACH {
                    let slot = c
                        .items()
                        .first_fit(&g.item)
                        .or_else(|| c.items().free_backpack_slot());
                    match slot {
                        Some(slot) => {
                            c.pick_up(dropped, slot).await?;
                            self.activity = Activity::Fetch {
                                dropped,
                                sent: true,
                                until: now + Duration::from_secs(3),
                            };
                        }
                        None => self.idle(),
                    }
                    return Ok(None);
                }
                Ok(Some((at.0, pos.1, at.1)))
            }
            Activity::Shop { npc, step, until } => {
                if now >= until {
                    if step == ShopStep::Opening && !matches!(c.items().trade(), TradeState::Closed)
                    {
                        c.cancel_trade().await?;
                    }
                    self.idle();
                    return Ok(None);
                }
                if step != ShopStep::Walk {
                    return Ok(None);
                }
                let Some(&at) = self.shops.get(&npc) else {
                    self.idle();
                    return Ok(None);
                };
                if dist2(me, at) < SHOP_REACH * SHOP_REACH {
                    c.right_click(npc).await?;
                    self.activity = Activity::Shop {
                        npc,
                        step: ShopStep::Opening,
                        until: now + Duration::from_secs(5),
                    };
                    return Ok(None);
                }
                Ok(Some((at.0 + 2.0, pos.1, at.1 + 2.0)))
            }
            Activity::Trade(mut t) => {
                if now >= t.until {
                    if t.inviter {
                        add(&stats.trades_cancelled, 1);
                    }
                    c.cancel_trade().await?;
                    self.idle();
                    return Ok(None);
                }
                if t.opened && !t.confirmed && t.confirm_at.is_some_and(|at| now >= at) {
                    let expect = expectations(c.items().trade());
                    c.accept_trade(0, expect, vec![0; TRADE_SLOTS]).await?;
                    t.confirmed = true;
                    self.activity = Activity::Trade(t);
                }
                Ok(None)
            }
        }
    }

    async fn start_action(
        &mut self,
        c: &mut Connection,
        pos: (f32, f32, f32),
        rng: &mut SmallRng,
        stats: &ItemStats,
    ) -> Result<Option<(f32, f32, f32)>, ClientError> {
        let now = Instant::now();
        let me = (pos.0, pos.2);
        let items = c.items();
        let stacks: Vec<(u8, u16, u16)> = backpack(items).collect();
        let ground = items
            .ground()
            .iter()
            .map(|(&h, g)| (h, dist2(me, (g.position.0, g.position.2))))
            .filter(|(_, d)| *d < FETCH_RANGE * FETCH_RANGE)
            .min_by(|a, b| a.1.total_cmp(&b.1));
        let wearable: Vec<(u8, u8)> = stacks
            .iter()
            .filter_map(|&(slot, id, _)| {
                let to = equip_slot(self.world.info(id)?)?;
                Some((slot, to))
            })
            .collect();
        let worn: Vec<u8> = (0..FIRST_BACKPACK)
            .filter(|&s| items.slot(s).is_some())
            .collect();
        let free = items.free_backpack_slot();
        let edible: Vec<u8> = stacks
            .iter()
            .filter(|(_, id, _)| {
                self.world
                    .info(*id)
                    .is_some_and(|i| matches!(i.item_type, POTION | INGREDIENT))
            })
            .map(|s| s.0)
            .collect();
        let partners: Vec<&str> = self
            .players
            .values()
            .filter(|(name, x, z)| {
                name.starts_with(&self.prefix) && dist2(me, (*x, *z)) < TRADE_RANGE * TRADE_RANGE
            })
            .map(|(name, _, _)| name.as_str())
            .collect();
        let shop = self
            .shops
            .iter()
            .map(|(&r, &at)| (r, dist2(me, at)))
            .filter(|(_, d)| *d < SHOP_RANGE * SHOP_RANGE)
            .min_by(|a, b| a.1.total_cmp(&b.1));
        let mut options: Vec<(Action, u32)> = Vec::new();
        if ground.is_some() {
            options.push((Action::PickUp, 3));
        }
        if !stacks.is_empty() {
            options.push((Action::Drop, 1));
        }
        if !wearable.is_empty() {
            options.push((Action::Equip, 3));
        }
        if !worn.is_empty() && free.is_some() {
            options.push((Action::Unequip, 1));
        }
        if !edible.is_empty() && !self.closed {
            options.push((Action::Eat, 1));
        }
        if !partners.is_empty() {
            options.push((Action::Trade, 2));
        }
        if shop.is_some() && !self.closed {
            options.push((Action::Shop, 2));
        }
        let total: u32 = options.iter().map(|o| o.1).sum();
        if total == 0 {
            return Ok(None);
        }
        let mut roll = rng.gen_range(0..total);
        let Some(action) = options.iter().find_map(|&(a, w)| {
            if roll < w {
                Some(a)
            } else {
                roll -= w;
                None
            }
        }) else {
            return Ok(None);
        };
        match action {
            Action::PickUp => {
                if let Some((dropped, _)) = ground {
                    self.activity = Activity::Fetch {
                        dropped,
                        sent: false,
                        until: now + Duration::from_secs(15),
                    };
                }
            }
            Action::Drop => {
                if let Some((slot, _, _)) = pick(rng, &stacks) {
                    c.drop_item(slot, 1).await?;
                    add(&stats.dropped, 1);
                    self.not_before = now + COOLDOWN;
                }
            }
            Action::Equip => {
                if let Some((from, to)) = pick(rng, &wearable) {
                    let rid = self.own_rid;
                    c.swap_items(rid, rid, from, to, 0).await?;
                    add(&stats.equipped, 1);
                    self.not_before = now + COOLDOWN;
                }
            }
            Action::Unequip => {
                if let (Some(from), Some(to)) = (pick(rng, &worn), free) {
                    let rid = self.own_rid;
                    c.swap_items(rid, rid, from, to, 0).await?;
                    add(&stats.unequipped, 1);
                    self.not_before = now + COOLDOWN;
                }
            }
            Action::Eat => {
                if let Some(slot) = pick(rng, &edible) {
                    c.eat(slot, 1).await?;
                    add(&stats.eaten, 1);
                    self.not_before = now + COOLDOWN;
                }
            }
            Action::Trade => {
                if let Some(name) = pick(rng, &partners) {
                    let name = name.to_owned();
                    c.trade_invite(&name).await?;
                    self.activity = Activity::Trade(TradeRun {
                        inviter: true,
                        opened: false,
                        confirm_at: None,
                        confirmed: false,
                        failed: false,
                        until: now + TRADE_TIMEOUT,
                    });
                }
            }
            Action::Shop => {
                if let Some((npc, _)) = shop {
                    self.activity = Activity::Shop {
                        npc,
                        step: ShopStep::Walk,
                        until: now + Duration::from_secs(20),
                    };
                }
            }
        }
        Ok(None)
    }

    /// A system chat line: the trade messages.
    pub async fn chat(
        &mut self,
        c: &mut Connection,
        colour: ChatColour,
        text: &[u8],
        stats: &ItemStats,
    ) -> Result<(), ClientError> {
        if colour != ChatColour::System {
            return Ok(());
        }
        let Some(line) = trade_line(text) else {
            return Ok(());
        };
        let now = Instant::now();
        // A shop window opening or settling: an invitation waits (the bot is at 3 then,
        // and its shop times out).
        let shop_busy = matches!(
            self.activity,
            Activity::Shop {
                step: ShopStep::Opening | ShopStep::Deal,
                ..
            }
        );
        match (line, &mut self.activity) {
            // Accept unless already in a trade (whose own `/trade` may have accepted it).
            (TradeLine::Invited, Activity::Trade(_)) => {}
            (TradeLine::Invited, _) if shop_busy => {}
            (TradeLine::Invited, _) => {
                c.trade_accept_invite().await?;
                self.activity = Activity::Trade(TradeRun {
                    inviter: false,
                    opened: false,
                    confirm_at: None,
                    confirmed: false,
                    failed: false,
                    until: now + TRADE_TIMEOUT,
                });
            }
            (TradeLine::OfferChanged, Activity::Trade(t)) => {
                t.confirmed = false;
                t.confirm_at = Some(now + Duration::from_millis(500));
            }
            (TradeLine::Failed, Activity::Trade(t)) => t.failed = true,
            (TradeLine::Refused, Activity::Trade(t)) if !t.opened => {
                if t.inviter {
                    add(&stats.trade_invites_refused, 1);
                }
                self.idle();
            }
            _ => {}
        }
        Ok(())
    }

    /// An item, gold or trade event (already applied to the SDK's view).
    pub async fn event(
        &mut self,
        c: &mut Connection,
        e: Event,
        rng: &mut SmallRng,
        stats: &ItemStats,
    ) -> Result<(), ClientError> {
        let shop_deal_on = matches!(
            self.activity,
            Activity::Shop {
                step: ShopStep::Deal,
                ..
            }
        );
        match e {
            Event::ItemOffered {
                item_handle,
                amount,
                slot,
                ..
            } => {
                add(&stats.offers_received, 1);
                if shop_deal_on {
                    add(&stats.bought, u64::from(amount));
                }
                // Realm Crafter's client answers with where it put the item; a view that
                // could not place it leaves the item where the server put it.
                if let Some(slot) = slot {
                    c.answer_offer(item_handle, Some(slot)).await?;
                }
            }
            Event::ItemTaken { amount, .. } if shop_deal_on => {
                add(&stats.sold, u64::from(amount));
            }
            Event::PickedUp { dropped, .. } => {
                add(&stats.picked_up, 1);
                if matches!(self.activity, Activity::Fetch { dropped: d, .. } if d == dropped) {
                    self.idle();
                }
            }
            Event::TradeOpened(TradeWindow::Player) => match &mut self.activity {
                Activity::Trade(t) if !t.opened => {
                    t.opened = true;
                    t.confirm_at = Some(Instant::now() + CONFIRM_AFTER);
                    let stacks: Vec<(u8, u16, u16)> = backpack(c.items()).collect();
                    if let Some((slot, _, amount)) = pick(rng, &stacks) {
                        c.update_trading(slot.saturating_sub(FIRST_BACKPACK), amount)
                            .await?;
                    }
                }
                _ => {
                    // Not asked for (a script's invitation accepted by an old `/trade`):
                    // close it.
                    c.cancel_trade().await?;
                }
            },
            Event::TradeOpened(TradeWindow::Shop { wares }) => match self.activity {
                Activity::Shop {
                    npc,
                    step: ShopStep::Opening,
                    ..
                } => {
                    add(&stats.shop_windows, 1);
                    match shop_deal(&self.world, c.items(), &wares, rng) {
                        Some((buy, sell)) => {
                            c.shop_accept(buy, sell).await?;
                            self.activity = Activity::Shop {
                                npc,
                                step: ShopStep::Deal,
                                until: Instant::now() + Duration::from_secs(3),
                            };
                        }
                        None => {
                            c.cancel_trade().await?;
                            self.idle();
                        }
                    }
                }
                _ => c.cancel_trade().await?,
            },
            Event::TradeClosed => {
                if let Activity::Trade(t) = &self.activity {
                    if t.inviter {
                        if t.confirmed && !t.failed {
                            add(&stats.trades_completed, 1);
                        } else {
                            add(&stats.trades_cancelled, 1);
                        }
                    }
                    self.idle();
                }
            }
            Event::GroundItemGone { dropped } => {
                if matches!(self.activity, Activity::Fetch { dropped: d, .. } if d == dropped) {
                    self.idle();
                }
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use rand::SeedableRng as _;
    use shared::proto::{InventorySlot, ItemString};

    use super::*;

    fn info(item_type: u8, slot_type: u16, value: u32) -> ItemInfo {
        ItemInfo {
            item_type,
            slot_type,
            value,
        }
    }

    #[test]
    fn worn_items_go_to_their_slot() {
        assert_eq!(equip_slot(info(WEAPON, 1, 0)), Some(0));
        assert_eq!(equip_slot(info(ARMOUR, 2, 0)), Some(1), "shield");
        assert_eq!(equip_slot(info(ARMOUR, 3, 0)), Some(2), "hat");
        assert_eq!(equip_slot(info(ARMOUR, 4, 0)), Some(3), "chest");
        assert_eq!(equip_slot(info(ARMOUR, 8, 0)), Some(7), "feet");
        assert_eq!(equip_slot(info(ARMOUR, 11, 0)), None);
        assert_eq!(equip_slot(info(RING, 9, 0)), Some(8));
        assert_eq!(equip_slot(info(RING, 10, 0)), Some(12));
        assert_eq!(equip_slot(info(POTION, 11, 0)), None);
    }

    #[test]
    fn the_zones_trade_lines_are_told_apart() {
        let t = |s: &str| trade_line(s.as_bytes());
        assert_eq!(
            t("You have been invited to trade with swab3. Send /trade to accept."),
            Some(TradeLine::Invited)
        );
        assert_eq!(
            t("swab3 changed the offer: press OK again to accept"),
            Some(TradeLine::OfferChanged)
        );
        assert_eq!(
            t("The trade was refused: no room. Nothing changed hands."),
            Some(TradeLine::Failed)
        );
        assert_eq!(t("swab3 cancelled the trade"), Some(TradeLine::Failed));
        assert_eq!(t("swab3 cannot trade now"), Some(TradeLine::Refused));
        assert_eq!(t("swab3 is not in this area"), Some(TradeLine::Refused));
        assert_eq!(t("You are already trading"), Some(TradeLine::Refused));
        assert_eq!(t("hello from swab3"), None);
    }

    fn world() -> ItemWorld {
        ItemWorld {
            items: [(0, info(WEAPON, 1, 20)), (20, info(POTION, 11, 10))]
                .into_iter()
                .collect(),
            shops: HashSet::new(),
        }
    }

    fn potion() -> ItemString {
        ItemString {
            item_id: 20,
            attributes: vec![0; 40],
            health: 100,
        }
    }

    #[test]
    fn a_shop_deal_buys_only_what_the_bot_can_afford() {
        let w = world();
        let mut items = Items::new();
        let sword = ShopWare {
            item: ItemString {
                item_id: 0,
                attributes: vec![0; 40],
                health: 100,
            },
            amount: 2,
            item_handle: 7,
        };
        let mut rng = SmallRng::seed_from_u64(1);
        // No gold and nothing to sell: nothing to do.
        for _ in 0..20 {
            assert_eq!(
                shop_deal(&w, &items, std::slice::from_ref(&sword), &mut rng),
                None
            );
        }
        // 10 gold and a potion worth 10: the sword (20) only with the sale.
        items.load_inventory(&[Some(InventorySlot {
            slot: 14,
            item: potion(),
            amount: 3,
        })]);
        let mut saw_buy = false;
        for _ in 0..50 {
            if let Some((buy, sell)) = shop_deal(&w, &items, std::slice::from_ref(&sword), &mut rng)
                && !buy.is_empty()
            {
                saw_buy = true;
                assert_eq!(
                    sell,
                    [ShopSell {
                        slot: 14,
                        amount: 1
                    }]
                );
                assert_eq!(
                    buy,
                    [ShopBuy {
                        item_handle: 7,
                        amount: 1
                    }]
                );
            }
        }
        // Gold 0 plus a 10-gold sale never affords the 20-gold sword.
        assert!(!saw_buy);
    }

    #[test]
    fn the_expectations_are_the_partners_offers() {
        let partner = [(3u8, (2u16, Some(potion()))), (5, (1, None))]
            .into_iter()
            .collect();
        let e = expectations(&TradeState::Player { partner });
        assert_eq!(
            e,
            [
                TradeExpect { slot: 3, amount: 2 },
                TradeExpect { slot: 5, amount: 1 }
            ]
        );
        assert!(expectations(&TradeState::Closed).is_empty());
    }
}
