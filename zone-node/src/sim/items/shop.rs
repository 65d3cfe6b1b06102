//! NPC shops (vendors): `OpenTrading(player, npc)` shows the NPC's backpack as wares;
//! buying and selling for money (Realm Crafter V1's structure with its fixes,
//! `docs/items.md`, "Shops").
//!
//! * A vendor's stock is its backpack (slots 14..45) and its purse is its gold: a purchase
//!   takes the items out of its backpack and pays it, a sale puts them in and it pays.
//!   Realm Crafter's stock was infinite and sold items vanished.
//! * Each ware gets a fresh offer handle recorded in the player's open window (its
//!   [`Trading::Shop`]); a purchase must name one of them, and the vendor's slot must still
//!   hold that stack. The handles are forgotten when the window closes.
//! * Every line is all or nothing: the buyer must afford it and have room, the vendor must
//!   afford a sale and have room in its backpack; a refused line moves nothing and is said.
//! * Prices are the item's `Value` both ways (as Realm Crafter).
//! * NPCs are not persisted: a vendor's stock and purse are what its spawn script gives it,
//!   and come back to that when it respawns (after a death or a node loss).

use shared::proto::{ShopBuy, ShopSell, ShopWare, TradeWindow};

use super::exchange;
use super::inventory::{self, BACKPACK, SLOTS, Wearer};
use super::money;
use crate::sim::events::{InvSlot, PlayerKey, Rejection, RuntimeId};
use crate::sim::packets::{self, CHAT_SYSTEM};
use crate::sim::state::{ActorId, ShopOffer, ShopWindow, Trading, ZoneState};

/// `P_Trade` reaches actors within this XZ distance (squared), as V1.
pub const TRADE_REACH_SQ: f32 = 400.0;

/// The slot rules for what a vendor takes in: its backpack only (a sold sword must not
/// end up in the vendor's weapon slot, out of its stock).
const VENDOR_BACKPACK: Wearer<'static> = Wearer {
    race: "",
    class: "",
    slots_mask: 1 << 10,
};

fn say(st: &mut ZoneState, to: ActorId, text: &str) {
    packets::send_chat(st, to, CHAT_SYSTEM, text);
}

fn item_name(st: &ZoneState, item: u16) -> String {
    st.content
        .world
        .item(item)
        .map_or_else(|| format!("item {item}"), |t| t.name.clone())
}

/// `OpenTrading(player, npc)`: open the NPC's shop for a player at state 0 (→ 1). The
/// wares are the vendor's backpack stacks, each with a fresh offer handle recorded for
/// this player. Returns whether the window opened.
#[doc(alias = "OpenTrading")]
pub fn open_shop(st: &mut ZoneState, player: ActorId, vendor: ActorId) -> bool {
    let ok = st
        .get(player)
        .is_some_and(|a| a.is_player() && !a.dead && matches!(a.trading, Trading::Idle));
    let stock: Vec<(u8, InvSlot)> = match st.get(vendor) {
        Some(v) if !v.is_player() && vendor != player => v
            .inventory
            .iter()
            .enumerate()
            .skip(BACKPACK)
            .take(SLOTS - BACKPACK)
            .filter_map(|(i, s)| {
                let s = s.as_ref().filter(|s| s.amount > 0)?;
                Some((u8::try_from(i).ok()?, s.clone()))
            })
            .collect(),
        _ => return false,
    };
    if !ok {
        return false;
    }
    let mut window = ShopWindow {
        vendor,
        wares: Vec::with_capacity(stock.len()),
    };
    let mut wares = Vec::with_capacity(stock.len());
    for (slot, item) in stock {
        let handle = exchange::next_handle(st);
        wares.push(ShopWare {
            item: exchange::item_string(&item),
            amount: item.amount,
            item_handle: handle,
        });
        window.wares.push(ShopOffer { handle, slot, item });
    }
    if let Some(a) = st.get_mut(player) {
        a.trading = Trading::Shop(Box::new(window));
    }
    for p in (TradeWindow::Shop { wares }).to_packets() {
        st.send_packet(player, &p);
    }
    true
}

/// Whether an NPC has anything to sell.
pub fn has_wares(st: &ZoneState, npc: ActorId) -> bool {
    st.get(npc).is_some_and(|v| {
        !v.is_player()
            && v.inventory
                .iter()
                .skip(BACKPACK)
                .flatten()
                .any(|s| s.amount > 0)
    })
}

/// The shop's OK (`P_OpenTrading`, 288 bytes) at state 1: sales first, then purchases,
/// each line on its own and all or nothing; the player's gold changes once at the end
/// (one `P_GoldChange`). The window closes (state 0) either way.
pub(crate) fn accept(
    st: &mut ZoneState,
    player: PlayerKey,
    id: ActorId,
    buy: &[ShopBuy],
    sell: &[ShopSell],
) {
    let window = match st.get_mut(id).map(|a| &mut a.trading) {
        Some(t @ Trading::Shop(_)) => match std::mem::take(t) {
            Trading::Shop(w) => w,
            _ => return,
        },
        _ => {
            st.reject(Some(player), Rejection::TradeRefused);
            return;
        }
    };
    let vendor = window.vendor;
    if st.get(vendor).is_none_or(|v| v.is_player()) {
        st.reject(Some(player), Rejection::TradeRefused);
        say(st, id, "The shop has closed");
        st.send_packet(id, &shared::proto::CloseTrading {});
        return;
    }
    let mut change: i64 = 0;
    let mut moved = false;
    for line in sell.iter().filter(|l| l.slot != 0 && l.amount > 0) {
        match sell_line(st, id, vendor, line, change) {
            Ok(paid) => {
                change += paid;
                moved = true;
            }
            Err(r) => st.reject(Some(player), r),
        }
    }
    for line in buy
        .iter()
        .filter(|l| l.item_handle != u32::MAX && l.amount > 0)
    {
        match buy_line(st, id, &window, line, change) {
            Ok(cost) => {
                change -= cost;
                moved = true;
            }
            Err(r) => st.reject(Some(player), r),
        }
    }
    if change != 0 {
        money::change_gold(st, id, change);
    }
    if moved {
        st.entangle(&[id], false);
        super::trade::exchange_settled(st);
    }
}

fn gold(st: &ZoneState, id: ActorId) -> i64 {
    st.get(id).map_or(0, |a| i64::from(a.gold))
}

/// One sale: the player's backpack stack (part of it) into the vendor's backpack, the
/// vendor pays `Value × amount`. Returns what the player earns.
fn sell_line(
    st: &mut ZoneState,
    id: ActorId,
    vendor: ActorId,
    line: &ShopSell,
    change: i64,
) -> Result<i64, Rejection> {
    let slot = usize::from(line.slot);
    if !(BACKPACK..SLOTS).contains(&slot) {
        return Err(Rejection::BadItemRequest);
    }
    let stack = st
        .get(id)
        .and_then(|a| a.inventory.get(slot).cloned().flatten())
        .ok_or(Rejection::BadItemRequest)?;
    let amount = line.amount.min(stack.amount);
    let name = item_name(st, stack.item);
    let pay = exchange::price(st, stack.item, amount).ok_or(Rejection::BadItemRequest)?;
    if gold(st, vendor) < pay {
        say(st, id, &format!("The merchant cannot afford your {name}"));
        return Err(Rejection::TradeRefused);
    }
    if gold(st, id) + change + pay > i64::from(i32::MAX) {
        say(st, id, "You cannot carry more gold");
        return Err(Rejection::TradeRefused);
    }
    let world = st.content.world.clone();
    let mut stock = st
        .get(vendor)
        .map(|v| v.inventory.clone())
        .ok_or(Rejection::TradeRefused)?;
    let sold = InvSlot {
        amount,
        ..stack.clone()
    };
    if inventory::give(&mut stock, &world, &VENDOR_BACKPACK, sold).is_err() {
        say(st, id, &format!("The merchant has no room for your {name}"));
        return Err(Rejection::TradeRefused);
    }
    // Commit: the player's stack, the vendor's backpack and purse.
    super::bag::take_slot(st, id, slot, amount, true).map_err(|_| Rejection::BadItemRequest)?;
    if let Some(v) = st.get_mut(vendor) {
        v.inventory = stock;
    }
    money::change_gold(st, vendor, -pay);
    Ok(pay)
}

/// One purchase: up to the requested amount of a ware shown in this window (never more
/// than the vendor still has), into the player's inventory all or nothing; the player pays
/// `Value × amount` to the vendor. Returns what the player pays.
fn buy_line(
    st: &mut ZoneState,
    id: ActorId,
    window: &ShopWindow,
    line: &ShopBuy,
    change: i64,
) -> Result<i64, Rejection> {
    let offer = window
        .wares
        .iter()
        .find(|w| w.handle == line.item_handle)
        .ok_or(Rejection::TradeRefused)?;
    let vendor = window.vendor;
    let slot = usize::from(offer.slot);
    let name = item_name(st, offer.item.item);
    let stock = st
        .get(vendor)
        .and_then(|v| v.inventory.get(slot).cloned().flatten())
        .filter(|s| inventory::identical(s, &offer.item) && s.amount > 0);
    let Some(stock) = stock else {
        say(st, id, &format!("The {name} is no longer for sale"));
        return Err(Rejection::TradeRefused);
    };
    let amount = line.amount.min(stock.amount);
    let cost = exchange::price(st, stock.item, amount).ok_or(Rejection::BadItemRequest)?;
    if gold(st, id) + change < cost {
        say(st, id, &format!("You cannot afford {amount} {name}"));
        return Err(Rejection::TradeRefused);
    }
    if gold(st, vendor) + cost > i64::from(i32::MAX) {
        say(st, id, "The merchant cannot take more gold");
        return Err(Rejection::TradeRefused);
    }
    let bought = InvSlot {
        amount,
        ..stock.clone()
    };
    if super::bag::give(st, id, bought).is_err() {
        say(st, id, &format!("You have no room for {amount} {name}"));
        return Err(Rejection::TradeRefused);
    }
    if let Some(v) = st.get_mut(vendor) {
        // Checked above: the slot holds at least `amount`.
        let _ = inventory::take(&mut v.inventory, slot, amount);
    }
    money::change_gold(st, vendor, cost);
    Ok(cost)
}

/// `P_Trade` (Realm Crafter V1): trade with an actor of this AreaInstance within reach
/// (XZ distance² < 400): run `Default.Trade(player, target)` when the world has it, else
/// do what the default project's script does: open an NPC's shop if it has wares, or
/// invite a player ([`super::trade::invite_both`]). Out of reach or unknown: refused
/// (counted), nothing said, as V1.
#[doc(alias = "P_Trade")]
pub(crate) fn trade_with(st: &mut ZoneState, id: ActorId, target: RuntimeId) {
    let Some(t) = crate::sim::mount::interact_target(st, id, target, TRADE_REACH_SQ) else {
        return;
    };
    // `Default.Trade`, or else the default answer below (the dispatcher decides).
    st.announce(crate::sim::engine::EngineEvent::TradeRequested {
        player: id,
        target: t,
    });
}

/// The default project's answer to `P_Trade` when the world has no `Default.Trade`: an
/// NPC with wares opens its shop, a player is invited; anything else is refused (counted).
pub fn trade_default(st: &mut ZoneState, id: ActorId, t: ActorId) {
    let Some(player) = st.get(id).and_then(|a| a.player) else {
        return;
    };
    let target_is_player = st.get(t).is_some_and(|b| b.is_player());
    let opened = if target_is_player {
        super::trade::invite_both(st, id, t)
    } else {
        has_wares(st, t) && open_shop(st, id, t)
    };
    if !opened {
        st.reject(Some(player), Rejection::TradeRefused);
    }
}
