//! What trade and shops share: the item string of an instance, fresh offer handles, and
//! telling a client that stacks left (`"T"`) or arrived (`"G"`) after a settlement was
//! committed with the pure rules of [`super::inventory`].
//!
//! A settlement first computes every inventory it changes on copies, then commits them all
//! and only then sends the packets below, so no packet ever describes a change that did not
//! happen (`docs/items.md`, "Player trade: the atomic settlement").

use shared::proto::{InventoryUpdateS2C, ItemString};

use super::inventory::{self, Placement};
use crate::sim::events::InvSlot;
use crate::sim::state::{ActorId, ZoneState};

/// The 83-byte item string of an instance (`ItemInstanceToString`): the id, the 40
/// attributes as `value + 5000` (clamped to u16) and the health.
#[doc(alias = "ItemInstanceToString")]
pub fn item_string(s: &InvSlot) -> ItemString {
    ItemString {
        item_id: s.item,
        attributes: (0..40)
            .map(|i| {
                let v = i64::from(s.attributes.get(i).copied().unwrap_or(0)) + 5000;
                u16::try_from(v.clamp(0, i64::from(u16::MAX))).unwrap_or(u16::MAX)
            })
            .collect(),
        health: s.health,
    }
}

/// A fresh handle for anything a client can echo back: a `"G"` offer, a shop's ware, a
/// dropped item. The zone's one counter ([`ZoneState::ground_handle`]): nonzero, and never
/// a handle that lies on the ground now, so a handle is not reused while the instance lives
/// and an echoed handle never names another item.
pub fn next_handle(st: &mut ZoneState) -> u32 {
    loop {
        st.ground_handle = st.ground_handle.wrapping_add(1).max(1);
        if !st.ground.contains_key(&st.ground_handle) {
            return st.ground_handle;
        }
    }
}

/// Tell `from` that `amount` left its `slot` (`"T"`).
pub fn send_taken(st: &mut ZoneState, from: ActorId, slot: usize, amount: u16) {
    st.send_packet(
        from,
        &InventoryUpdateS2C::Taken {
            slot: u8::try_from(slot).unwrap_or(u8::MAX),
            amount,
        },
    );
}

/// Tell `to` that items of template `item_id` arrived: one `"G"` offer per placement (its
/// client places each in the same slot by the same first-fit rule), remembered like every
/// offer so the client's answer is checked ([`super::bag::offer_answered`]).
pub fn send_received(st: &mut ZoneState, to: ActorId, item_id: u16, placed: &[Placement]) {
    super::bag::send_offers(st, to, item_id, placed);
}

/// Whether any placement filled an equipment slot (the receiver's Equip Change follows).
pub fn touches_equipment(placed: &[Placement]) -> bool {
    placed.iter().any(|p| inventory::is_equipment(p.slot))
}

/// The price of `amount` items of a template: `Value × amount` (a negative `Value` counts
/// as 0, so no purchase ever pays the buyer); `None` for an unknown template.
pub fn price(st: &ZoneState, item: u16, amount: u16) -> Option<i64> {
    let t = st.content.world.item(item)?;
    Some(i64::from(t.value.max(0)) * i64::from(amount))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_strings_offset_and_clamp_attributes() {
        let s = InvSlot {
            item: 7,
            attributes: vec![1, -1, 100_000, -100_000],
            health: 55,
            amount: 3,
        };
        let i = item_string(&s);
        assert_eq!(i.item_id, 7);
        assert_eq!(i.health, 55);
        assert_eq!(i.attributes.len(), 40);
        assert_eq!(&i.attributes[..5], &[5001, 4999, u16::MAX, 0, 5000]);
        let mut out = Vec::new();
        i.write(&mut out);
        assert_eq!(out.len(), ItemString::LEN);
    }
}
