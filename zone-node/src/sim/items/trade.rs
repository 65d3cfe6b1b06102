//! Player-to-player trade (Realm Crafter's `IsTrading` handshake, V1's structure): invite,
//! accept, offers, confirmation and an atomic settlement (`docs/items.md`, "Player trade").
//!
//! The state of each side is [`Trading`] in the actor (0 idle, 3 invited, 4 window open,
//! 5 confirmed). Nothing moves before the settlement, and the settlement is one step inside
//! one tick: both inventories are computed on copies with the pure rules of
//! [`super::inventory`] and committed together, or not at all. A trade never outlives a
//! logout, a warp, a death or a crash ([`cancel_for`]).
//!
//! Fixes to Realm Crafter: the partner must be in the same AreaInstance and may not be the
//! trader; a cancel closes both windows; the settlement takes the amounts from the
//! server's own offer table, checks each side's confirmation against the other's offers,
//! checks that every offered stack is still there and the payer has the gold, and tells
//! both sides when it refuses; gold moves with the right sign.

use shared::proto::{CloseTrading, OpenTradingC2S, TradeExpect, TradeWindow, UpdateTradingS2C};

use super::exchange;
use super::inventory::{self, BACKPACK, Placement};
use super::money;
use crate::sim::events::{InvSlot, PlayerKey, Rejection};
use crate::sim::packets::{self, CHAT_SYSTEM};
use crate::sim::state::{
    ActorId, ChainKind, TRADE_SLOTS, TradeConfirmation, TradeSide, Trading, ZoneState,
};

/// `LS_TradeInvite` + `LS_TradeInviteInstruction`: the invitation line.
fn invite_line(from: &str) -> String {
    format!("You have been invited to trade with {from}. Send /trade to accept.")
}

fn say(st: &mut ZoneState, to: ActorId, text: &str) {
    packets::send_chat(st, to, CHAT_SYSTEM, text);
}

fn name_of(st: &ZoneState, id: ActorId) -> String {
    st.get(id).map(|a| a.name.clone()).unwrap_or_default()
}

fn player_key(st: &ZoneState, id: ActorId) -> Option<PlayerKey> {
    st.get(id).and_then(|a| a.player)
}

fn state_of(st: &ZoneState, id: ActorId) -> Option<&Trading> {
    st.get(id).map(|a| &a.trading)
}

fn set_state(st: &mut ZoneState, id: ActorId, t: Trading) {
    if let Some(a) = st.get_mut(id) {
        a.trading = t;
    }
}

/// The partner of `id` if the link is mutual: the partner exists, is another actor, and
/// names `id` back.
fn mutual_partner(st: &ZoneState, id: ActorId) -> Option<ActorId> {
    let p = state_of(st, id)?.partner()?;
    (p != id && state_of(st, p)?.partner() == Some(id)).then_some(p)
}

/// A player of this instance by name (case-insensitive), not mid-transfer.
fn online_by_name(st: &ZoneState, name: &str) -> Option<ActorId> {
    let name = name.trim();
    st.chain_members(st.online, ChainKind::Online)
        .into_iter()
        .filter_map(|i| st.at(i))
        .find(|a| a.name.eq_ignore_ascii_case(name) && !a.frozen())
        .map(|a| a.id)
}

fn trading_player(st: &ZoneState, id: ActorId) -> bool {
    st.get(id).is_some_and(|a| a.is_player() && !a.dead)
}

/// Close `id`'s side: back to 0 and `P_CloseTrading` (its client hides the window).
fn close(st: &mut ZoneState, id: ActorId) {
    set_state(st, id, Trading::Idle);
    st.send_packet(id, &CloseTrading {});
}

// ----- invite and accept -----------------------------------------------------------

/// Chat `/trade name` (invite) and `/trade` (accept an invitation).
///
/// The target must be a player in this AreaInstance (the zone cannot tell "offline" from
/// "elsewhere": both get `"<name> is not in this area"`), not the sender, and not trading.
/// The inviter goes to 4, the target to 3 with Realm Crafter's invitation line. `/trade` at
/// 3 goes to 4; when both are at 4 both windows open (`P_OpenTrading "P"`).
#[doc(alias = "LS_STrade")]
pub(crate) fn command(st: &mut ZoneState, id: ActorId, params: &str) {
    let player = player_key(st, id);
    let params = params.trim();
    match state_of(st, id) {
        Some(Trading::Invited { .. }) => accept_invite(st, id, params),
        Some(Trading::Idle) if params.is_empty() => {
            st.reject(player, Rejection::TradeRefused);
            say(st, id, "Usage: /trade <name>");
        }
        Some(Trading::Idle) => invite_by_name(st, id, params),
        Some(_) => {
            st.reject(player, Rejection::TradeRefused);
            say(st, id, "You are already trading");
        }
        None => {}
    }
}

fn invite_by_name(st: &mut ZoneState, id: ActorId, name: &str) {
    let player = player_key(st, id);
    let Some(target) = online_by_name(st, name) else {
        st.reject(player, Rejection::UnknownTarget);
        say(st, id, &format!("{name} is not in this area"));
        return;
    };
    if target == id {
        st.reject(player, Rejection::TradeRefused);
        say(st, id, "You cannot trade with yourself");
        return;
    }
    let busy = !matches!(state_of(st, target), Some(Trading::Idle));
    if busy || !trading_player(st, id) || !trading_player(st, target) {
        st.reject(player, Rejection::TradeRefused);
        let who = name_of(st, target);
        say(st, id, &format!("{who} cannot trade now"));
        return;
    }
    set_state(st, id, Trading::Open(Box::new(TradeSide::new(target))));
    set_state(st, target, Trading::Invited { partner: id });
    let me = name_of(st, id);
    say(st, target, &invite_line(&me));
}

fn accept_invite(st: &mut ZoneState, id: ActorId, params: &str) {
    let Some(partner) = mutual_partner(st, id) else {
        // The inviter left or moved on: back to 0; a name makes it a fresh invitation
        // (as Realm Crafter's `Goto OfferTrade`).
        set_state(st, id, Trading::Idle);
        if params.is_empty() {
            let player = player_key(st, id);
            st.reject(player, Rejection::TradeRefused);
            say(st, id, "The trade is no longer on offer");
        } else {
            invite_by_name(st, id, params);
        }
        return;
    };
    set_state(st, id, Trading::Open(Box::new(TradeSide::new(partner))));
    if matches!(state_of(st, partner), Some(Trading::Open(_))) {
        for who in [id, partner] {
            for p in TradeWindow::Player.to_packets() {
                st.send_packet(who, &p);
            }
        }
    }
}

/// Script `OpenTrading(p, other)` with another player: both go to 3 and both get the
/// invitation line; each accepts with `/trade`. Refused (nothing happens) unless both are
/// distinct players of this instance and neither is trading. Returns whether it invited.
pub fn invite_both(st: &mut ZoneState, a: ActorId, b: ActorId) -> bool {
    let idle = |st: &ZoneState, x| matches!(state_of(st, x), Some(Trading::Idle));
    if a == b || !trading_player(st, a) || !trading_player(st, b) || !idle(st, a) || !idle(st, b) {
        return false;
    }
    set_state(st, a, Trading::Invited { partner: b });
    set_state(st, b, Trading::Invited { partner: a });
    let (na, nb) = (name_of(st, a), name_of(st, b));
    say(st, a, &invite_line(&nb));
    say(st, b, &invite_line(&na));
    true
}

// ----- offers ------------------------------------------------------------------------

/// `P_UpdateTrading`: offer (or, with 0, withdraw) part of backpack stack `14 + slot`.
///
/// Only with the window open on both sides (state 4, a mutual partner), a slot 0..31 and a
/// stack there; the amount is clamped to the stack and recorded in the server's offer table
/// with the stack as it is now (the settlement needs it unchanged). The partner gets the
/// offer with the item string; a changed offer is relayed as a withdrawal first, so the
/// partner's client (which appends offers) lists it once. A partner who had pressed OK must
/// press it again.
#[doc(alias = "P_UpdateTrading")]
pub(crate) fn update_trading(
    st: &mut ZoneState,
    player: PlayerKey,
    id: ActorId,
    slot: u8,
    amount: u16,
) {
    let ok_state = matches!(state_of(st, id), Some(Trading::Open(s)) if s.confirmed.is_none());
    let partner = mutual_partner(st, id)
        .filter(|p| ok_state && matches!(state_of(st, *p), Some(Trading::Open(_))));
    let Some(partner) = partner else {
        st.reject(Some(player), Rejection::TradeRefused);
        return;
    };
    let i = usize::from(slot);
    if i >= TRADE_SLOTS {
        st.reject(Some(player), Rejection::BadItemRequest);
        return;
    }
    let stack = st
        .get(id)
        .and_then(|a| a.inventory.get(BACKPACK + i))
        .cloned()
        .flatten();
    let offer = match (amount, stack) {
        (0, _) => None,
        (n, Some(s)) => Some(InvSlot {
            amount: n.min(s.amount),
            ..s
        }),
        (_, None) => {
            st.reject(Some(player), Rejection::BadItemRequest);
            return;
        }
    };
    let Some(Trading::Open(side)) = st.get_mut(id).map(|a| &mut a.trading) else {
        return;
    };
    let Some(cell) = side.offers.get_mut(i) else {
        return;
    };
    let previous = std::mem::replace(cell, offer.clone());
    if previous.is_none() && offer.is_none() {
        return;
    }
    if previous.is_some() {
        let withdraw = UpdateTradingS2C {
            slot,
            amount: 0,
            item: None,
        };
        st.send_packet(partner, &withdraw);
    }
    if let Some(o) = &offer {
        let relay = UpdateTradingS2C {
            slot,
            amount: o.amount,
            item: Some(exchange::item_string(o)),
        };
        st.send_packet(partner, &relay);
    }
    if let Some(Trading::Open(ps)) = st.get_mut(partner).map(|a| &mut a.trading)
        && ps.confirmed.take().is_some()
    {
        let me = name_of(st, id);
        say(
            st,
            partner,
            &format!("{me} changed the offer: press OK again to accept"),
        );
    }
}

// ----- confirm, cancel ------------------------------------------------------------

/// `P_OpenTrading` from a client: cancel (empty), confirm a trade (164 bytes) or a
/// purchase (288 bytes, [`super::shop::accept`]).
#[doc(alias = "P_OpenTrading")]
pub(crate) fn open_trading(
    st: &mut ZoneState,
    player: PlayerKey,
    id: ActorId,
    msg: OpenTradingC2S,
) {
    match msg {
        OpenTradingC2S::Cancel => cancel(st, id, true),
        OpenTradingC2S::PlayerAccept { cost, expect, .. } => {
            confirm(st, player, id, cost, &expect);
        }
        OpenTradingC2S::ShopAccept { buy, sell } => {
            super::shop::accept(st, player, id, &buy, &sell);
        }
    }
}

/// What a confirmation expects per partner trade slot; `None` when an entry names a slot
/// out of range.
fn expectations(expect: &[TradeExpect]) -> Option<[u32; TRADE_SLOTS]> {
    let mut out = [0u32; TRADE_SLOTS];
    for e in expect.iter().filter(|e| e.amount > 0) {
        let cell = out.get_mut(usize::from(e.slot))?;
        *cell += u32::from(e.amount);
    }
    Some(out)
}

/// OK pressed (state 4 → 5); when the partner is at 5 too, settle.
fn confirm(st: &mut ZoneState, player: PlayerKey, id: ActorId, cost: i32, expect: &[TradeExpect]) {
    let at_four = matches!(state_of(st, id), Some(Trading::Open(s)) if s.confirmed.is_none());
    if !at_four {
        // A replayed or double-clicked OK, or no trade at all.
        st.reject(Some(player), Rejection::TradeRefused);
        return;
    }
    let Some(partner) = mutual_partner(st, id) else {
        st.reject(Some(player), Rejection::TradeRefused);
        close(st, id);
        return;
    };
    let Some(partner_side) = (match state_of(st, partner) {
        Some(Trading::Open(s)) => Some(s.confirmed.is_some()),
        _ => None,
    }) else {
        // The partner has not opened the window yet.
        st.reject(Some(player), Rejection::TradeRefused);
        return;
    };
    let Some(expect) = expectations(expect) else {
        st.reject(Some(player), Rejection::BadItemRequest);
        return;
    };
    if let Some(Trading::Open(side)) = st.get_mut(id).map(|a| &mut a.trading) {
        side.confirmed = Some(TradeConfirmation { cost, expect });
    }
    if partner_side {
        settle(st, player, id, partner);
    }
}

/// The client closed its window (empty `P_OpenTrading`), or the player left: back to 0,
/// and the partner too, each told with `P_CloseTrading` (Realm Crafter left the partner
/// stranded). A shop window is simply closed (its offers are forgotten).
fn cancel(st: &mut ZoneState, id: ActorId, by_client: bool) {
    match state_of(st, id) {
        None | Some(Trading::Idle) => {}
        Some(Trading::Shop(_)) => {
            set_state(st, id, Trading::Idle);
            if !by_client {
                st.send_packet(id, &CloseTrading {});
            }
        }
        Some(Trading::Invited { .. } | Trading::Open(_)) => {
            if let Some(p) = mutual_partner(st, id) {
                close(st, p);
                let me = name_of(st, id);
                say(st, p, &format!("{me} cancelled the trade"));
            }
            close(st, id);
        }
    }
}

/// A player leaves the trade involuntarily (logout, disconnect, warp out of the instance,
/// death): its trade or shop window is cancelled and its partner's window closes. Nothing
/// has moved yet, so nothing is lost.
pub fn cancel_for(st: &mut ZoneState, id: ActorId) {
    cancel(st, id, false);
}

// ----- settlement --------------------------------------------------------------------

/// Why a settlement was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SettleError {
    /// The two confirmations disagree on the gold.
    #[error("the amounts of gold do not match")]
    CostMismatch,
    /// The payer has less gold than it pays (or the payee could not hold it).
    #[error("not enough gold")]
    Gold,
    /// A confirmation expects other items than the partner offers.
    #[error("the offers changed")]
    Expectation,
    /// An offered stack was moved, used, dropped or reduced since it was offered.
    #[error("an offered item is no longer there")]
    OfferGone,
    /// The items do not fit.
    #[error("not enough room")]
    NoRoom,
}

/// One side of a trade as the pure settlement sees it.
pub struct SideView<'a> {
    /// The inventory (46 slots).
    pub inv: &'a [Option<InvSlot>],
    /// The wearer (slot rules).
    pub wearer: inventory::Wearer<'a>,
    /// The offers per trade slot (server table).
    pub offers: &'a [Option<InvSlot>; TRADE_SLOTS],
    /// What its OK expects of the other side.
    pub expect: &'a [u32; TRADE_SLOTS],
}

/// The result of a settlement for one side.
#[derive(Debug, Clone, PartialEq)]
pub struct Settled {
    /// The new inventory.
    pub inv: Vec<Option<InvSlot>>,
    /// `(slot, amount)` taken from it.
    pub taken: Vec<(usize, u16)>,
    /// `(item id, placements)` it received.
    pub received: Vec<(u16, Vec<Placement>)>,
}

/// The pure item settlement: both sides' inventories after the exchange, all or nothing.
/// Each expectation must equal the other side's offers, every offered stack must still be
/// in its slot (the same instance, at least the offered amount), and everything each side
/// receives must fit.
pub fn settle_items(
    world: &shared::content::World,
    a: &SideView<'_>,
    b: &SideView<'_>,
) -> Result<(Settled, Settled), SettleError> {
    let offered = |p: &SideView<'_>| -> [u32; TRADE_SLOTS] {
        std::array::from_fn(|i| {
            p.offers
                .get(i)
                .and_then(Option::as_ref)
                .map_or(0, |o| u32::from(o.amount))
        })
    };
    if *a.expect != offered(b) || *b.expect != offered(a) {
        return Err(SettleError::Expectation);
    }
    let take_offers =
        |p: &SideView<'_>| -> Result<(Vec<Option<InvSlot>>, Vec<InvSlot>), SettleError> {
            let mut inv = p.inv.to_vec();
            let mut taken = Vec::new();
            for (i, o) in p.offers.iter().enumerate() {
                let Some(o) = o else { continue };
                let slot = BACKPACK + i;
                let same = inv
                    .get(slot)
                    .and_then(Option::as_ref)
                    .is_some_and(|s| inventory::identical(s, o) && s.amount >= o.amount);
                if !same || o.amount == 0 {
                    return Err(SettleError::OfferGone);
                }
                taken.push(
                    inventory::take(&mut inv, slot, o.amount)
                        .map_err(|_| SettleError::OfferGone)?,
                );
            }
            Ok((inv, taken))
        };
    let (mut inv_a, from_a) = take_offers(a)?;
    let (mut inv_b, from_b) = take_offers(b)?;
    let give = |inv: &mut Vec<Option<InvSlot>>, w, items: &[InvSlot]| {
        let mut received = Vec::new();
        for it in items {
            let placed =
                inventory::give(inv, world, w, it.clone()).map_err(|_| SettleError::NoRoom)?;
            received.push((it.item, placed));
        }
        Ok::<_, SettleError>(received)
    };
    let received_a = give(&mut inv_a, &a.wearer, &from_b)?;
    let received_b = give(&mut inv_b, &b.wearer, &from_a)?;
    let taken = |p: &SideView<'_>| {
        p.offers
            .iter()
            .enumerate()
            .filter_map(|(i, o)| o.as_ref().map(|o| (BACKPACK + i, o.amount)))
            .collect()
    };
    Ok((
        Settled {
            inv: inv_a,
            taken: taken(a),
            received: received_a,
        },
        Settled {
            inv: inv_b,
            taken: taken(b),
            received: received_b,
        },
    ))
}

/// The gold check: `cost_a == -cost_b`, the payer has it and the payee can hold it.
/// Returns `(payer, amount)` (`None` when no gold moves).
fn gold_flow(
    st: &ZoneState,
    a: (ActorId, i32),
    b: (ActorId, i32),
) -> Result<Option<(ActorId, ActorId, i64)>, SettleError> {
    let (ca, cb) = (i64::from(a.1), i64::from(b.1));
    if ca != -cb {
        return Err(SettleError::CostMismatch);
    }
    let (payer, payee, amount) = match ca {
        0 => return Ok(None),
        c if c > 0 => (a.0, b.0, c),
        c => (b.0, a.0, -c),
    };
    let gold = |id| st.get(id).map_or(0, |x| i64::from(x.gold));
    if gold(payer) < amount || gold(payee) + amount > i64::from(i32::MAX) {
        return Err(SettleError::Gold);
    }
    Ok(Some((payer, payee, amount)))
}

/// Both sides pressed OK: validate and exchange atomically, or refuse with nothing moved.
/// Either way both go to 0 and get `P_CloseTrading`.
fn settle(st: &mut ZoneState, player: PlayerKey, a: ActorId, b: ActorId) {
    let outcome = exchange(st, a, b);
    if let Err(e) = outcome {
        st.reject(Some(player), Rejection::TradeRefused);
        for who in [a, b] {
            say(
                st,
                who,
                &format!("The trade was refused: {e}. Nothing changed hands."),
            );
        }
    }
    close(st, a);
    close(st, b);
}

fn exchange(st: &mut ZoneState, a: ActorId, b: ActorId) -> Result<(), SettleError> {
    let side = |st: &ZoneState, id| match state_of(st, id) {
        Some(Trading::Open(s)) => s.confirmed.as_ref().map(|c| (s.offers.clone(), c.clone())),
        _ => None,
    };
    let (Some((offers_a, conf_a)), Some((offers_b, conf_b))) = (side(st, a), side(st, b)) else {
        return Err(SettleError::Expectation);
    };
    let gold = gold_flow(st, (a, conf_a.cost), (b, conf_b.cost))?;
    let world = st.content.world.clone();
    let (sa, sb) = {
        let (Some(xa), Some(xb)) = (st.get(a), st.get(b)) else {
            return Err(SettleError::OfferGone);
        };
        let pa = SideView {
            inv: &xa.inventory,
            wearer: super::bag::wearer_of(st, a),
            offers: &offers_a,
            expect: &conf_a.expect,
        };
        let pb = SideView {
            inv: &xb.inventory,
            wearer: super::bag::wearer_of(st, b),
            offers: &offers_b,
            expect: &conf_b.expect,
        };
        settle_items(&world, &pa, &pb)?
    };
    // Commit: both inventories, then the gold; only then the packets.
    for (id, s) in [(a, &sa), (b, &sb)] {
        if let Some(x) = st.get_mut(id) {
            x.inventory.clone_from(&s.inv);
        }
    }
    if let Some((payer, payee, amount)) = gold {
        money::change_gold(st, payer, -amount);
        money::change_gold(st, payee, amount);
    }
    for (id, s) in [(a, &sa), (b, &sb)] {
        for &(slot, amount) in &s.taken {
            exchange::send_taken(st, id, slot, amount);
        }
    }
    for (id, s) in [(a, &sa), (b, &sb)] {
        for (item, placed) in &s.received {
            exchange::send_received(st, id, *item, placed);
        }
        if s.received
            .iter()
            .any(|(_, p)| exchange::touches_equipment(p))
        {
            super::bag::equipment_changed(st, id);
        }
    }
    st.entangle(&[a, b], false);
    exchange_settled(st);
    Ok(())
}

/// Called right after a trade or a purchase settled: saves the entangled players (and the
/// ground, if it changed) at once, as one atomic snapshot group, before the packets that
/// tell the clients leave (`docs/handoff.md`, "Items and the ground").
pub(crate) fn exchange_settled(st: &mut ZoneState) {
    crate::sim::checkpoint::checkpoint_entangled(st);
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::content::{Item, ItemKind, World};

    fn world() -> World {
        let potion = Item {
            id: 2,
            name: "Potion".into(),
            stackable: true,
            value: 5,
            kind: ItemKind::Potion { secs: 10 },
            ..Item::default()
        };
        let gem = Item {
            id: 3,
            name: "Gem".into(),
            value: 50,
            kind: ItemKind::Other {
                misc: String::new(),
            },
            ..Item::default()
        };
        World {
            items: vec![potion, gem],
            ..World::default()
        }
    }

    fn stack(item: u16, amount: u16) -> InvSlot {
        inventory::instance(&world().item(item).cloned().unwrap_or_default(), amount)
    }

    fn offers(list: &[(usize, InvSlot)]) -> [Option<InvSlot>; TRADE_SLOTS] {
        let mut o: [Option<InvSlot>; TRADE_SLOTS] = std::array::from_fn(|_| None);
        for (i, s) in list {
            o[*i] = Some(s.clone());
        }
        o
    }

    fn expect(list: &[(usize, u32)]) -> [u32; TRADE_SLOTS] {
        let mut e = [0; TRADE_SLOTS];
        for (i, n) in list {
            e[*i] = *n;
        }
        e
    }

    fn total(inv: &[Option<InvSlot>], item: u16) -> u32 {
        inventory::count(inv, item)
    }

    #[test]
    fn a_settlement_swaps_the_offers_and_conserves_items() {
        let w = world();
        let mut inv_a = vec![None; inventory::SLOTS];
        let mut inv_b = vec![None; inventory::SLOTS];
        inv_a[BACKPACK] = Some(stack(2, 10));
        inv_b[BACKPACK + 3] = Some(stack(3, 1));
        let (oa, ob) = (offers(&[(0, stack(2, 4))]), offers(&[(3, stack(3, 1))]));
        let (ea, eb) = (expect(&[(3, 1)]), expect(&[(0, 4)]));
        let pa = SideView {
            inv: &inv_a,
            wearer: inventory::Wearer::ANY,
            offers: &oa,
            expect: &ea,
        };
        let pb = SideView {
            inv: &inv_b,
            wearer: inventory::Wearer::ANY,
            offers: &ob,
            expect: &eb,
        };
        let (sa, sb) = settle_items(&w, &pa, &pb).unwrap();
        assert_eq!((total(&sa.inv, 2), total(&sa.inv, 3)), (6, 1));
        assert_eq!((total(&sb.inv, 2), total(&sb.inv, 3)), (4, 0));
        assert_eq!(sa.taken, vec![(BACKPACK, 4)]);
        assert_eq!(sb.taken, vec![(BACKPACK + 3, 1)]);
        assert_eq!(sb.received.len(), 1);
        let mut moved = inv_a.clone();
        moved[BACKPACK] = None;
        let pa = SideView { inv: &moved, ..pa };
        assert_eq!(settle_items(&w, &pa, &pb), Err(SettleError::OfferGone));
    }

    #[test]
    fn expectations_must_match_the_offers() {
        let w = world();
        let mut inv_a = vec![None; inventory::SLOTS];
        inv_a[BACKPACK] = Some(stack(2, 10));
        let inv_b = vec![None; inventory::SLOTS];
        let oa = offers(&[(0, stack(2, 4))]);
        let ob = offers(&[]);
        let (ea, eb) = (expect(&[]), expect(&[(0, 5)]));
        let pa = SideView {
            inv: &inv_a,
            wearer: inventory::Wearer::ANY,
            offers: &oa,
            expect: &ea,
        };
        let pb = SideView {
            inv: &inv_b,
            wearer: inventory::Wearer::ANY,
            offers: &ob,
            expect: &eb,
        };
        assert_eq!(settle_items(&w, &pa, &pb), Err(SettleError::Expectation));
    }

    #[test]
    fn a_full_receiver_refuses_the_whole_settlement() {
        let w = world();
        let mut inv_a = vec![None; inventory::SLOTS];
        inv_a[BACKPACK] = Some(stack(3, 1));
        let mut inv_b = vec![None; inventory::SLOTS];
        for s in inv_b.iter_mut().skip(BACKPACK) {
            *s = Some(stack(3, 1));
        }
        let oa = offers(&[(0, stack(3, 1))]);
        let ob = offers(&[]);
        let (ea, eb) = (expect(&[]), expect(&[(0, 1)]));
        let pa = SideView {
            inv: &inv_a,
            wearer: inventory::Wearer::ANY,
            offers: &oa,
            expect: &ea,
        };
        let pb = SideView {
            inv: &inv_b,
            wearer: inventory::Wearer::ANY,
            offers: &ob,
            expect: &eb,
        };
        assert_eq!(settle_items(&w, &pa, &pb), Err(SettleError::NoRoom));
    }

    #[test]
    fn expectation_entries_out_of_range_are_refused() {
        let e = [TradeExpect {
            slot: 32,
            amount: 1,
        }];
        assert!(expectations(&e).is_none());
        let e = [
            TradeExpect { slot: 0, amount: 0 },
            TradeExpect {
                slot: 40,
                amount: 0,
            },
            TradeExpect { slot: 2, amount: 3 },
        ];
        assert_eq!(expectations(&e).map(|x| x[2]), Some(3));
    }
}
