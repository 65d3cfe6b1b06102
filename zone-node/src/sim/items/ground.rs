//! Items on the ground (Realm Crafter's `DroppedItem`): dropping, picking up,
//! `SpawnItem`, what an arriving player is shown, and expiry and the per-instance cap.
//!
//! Every item lies in one AreaInstance's [`ZoneState::ground`], under a handle that is
//! never reused while the instance lives (the counter it shares with the `"G"` offers).
//! The whole zone sees it (`"D"` when it appears, `"P"` when it goes; no distance culling,
//! as Realm Crafter), and a player arriving in the instance is shown every item there.
//!
//! Differences from Realm Crafter, all written down in `docs/items.md`:
//! * a pickup needs the same instance (by construction) and an XZ distance below
//!   [`GroundConfig::pickup_radius`] (20: V0 checked no range, V1 compared a plain
//!   distance with the squared `InteractDist` + 50, i.e. a radius of 450);
//! * items expire ([`GroundConfig::lifetime_ms`], 10 minutes by default; 0 keeps them
//!   forever, as Realm Crafter) and an instance holds at most [`GroundConfig::cap`] of them
//!   (the oldest goes first): Realm Crafter kept every drop forever, so a player dropping
//!   stacks in a loop could grow the server's memory, and every arrival's `"D"` burst,
//!   without bound. An expired or evicted item is destroyed: it counts as removed from the
//!   economy, like an item sold to a shop;
//! * a pickup whose slot cannot take the whole stack goes to the first slot that can (the
//!   `"R"` names the slot used, and Realm Crafter's client puts it where `"R"` says);
//! * a drop takes a copy of the dropped part (V0 shared one instance between the slot and
//!   the floor) and refuses an amount of 0.
//!
//! [`GroundConfig::pickup_radius`]: crate::sim::state::GroundConfig::pickup_radius
//! [`GroundConfig::lifetime_ms`]: crate::sim::state::GroundConfig::lifetime_ms
//! [`GroundConfig::cap`]: crate::sim::state::GroundConfig::cap

use shared::content::Item;
use shared::proto::InventoryUpdateS2C;

use super::bag;
use super::exchange::item_string;
use super::inventory::{self, STACK_MAX, Wearer};
use crate::sim::events::{InvSlot, PlayerKey, Rejection};
use crate::sim::state::{ActorId, GroundItem, ZoneState};

/// How often the housekeeping phase looks for expired items (ms): an item lives its
/// lifetime plus at most this.
pub const SWEEP_MS: u64 = 1000;

/// The `"D"` packet that shows a ground item.
fn dropped_packet(handle: u32, g: &GroundItem) -> InventoryUpdateS2C {
    InventoryUpdateS2C::Dropped {
        amount: g.item.amount,
        x: g.x,
        y: g.y,
        z: g.z,
        dropped: handle,
        item: item_string(&g.item),
    }
}

/// Remove an item for good (expired, evicted) and tell the zone (`"P"`).
fn destroy(st: &mut ZoneState, handle: u32) {
    if st.ground.remove(&handle).is_some() {
        st.ground_dirty = true;
        st.send_packet_zone(&InventoryUpdateS2C::Gone { dropped: handle }, None);
    }
}

/// The item the cap removes first: the one closest to expiring, which with one lifetime
/// for all is the oldest (lowest handle among equals, i.e. the earliest made).
fn oldest(st: &ZoneState) -> Option<u32> {
    st.ground
        .iter()
        .min_by_key(|(h, g)| (g.expires_ms, **h))
        .map(|(h, _)| *h)
}

/// Put an item on the ground of this instance at a position (clamped by
/// `ClampWorldCoord`), making room under the cap first, and show it to the whole zone
/// (`"D"`, the dropper included). Returns its handle. The caller entangles whoever the
/// item came from.
pub fn place(st: &mut ZoneState, item: InvSlot, x: f32, y: f32, z: f32) -> u32 {
    let cap = usize::try_from(st.cfg.ground.cap.max(1)).unwrap_or(usize::MAX);
    while st.ground.len() >= cap {
        let Some(h) = oldest(st) else { break };
        destroy(st, h);
    }
    let handle = super::exchange::next_handle(st);
    let lifetime = st.cfg.ground.lifetime_ms;
    let expires_ms = if lifetime == 0 {
        u64::MAX
    } else {
        st.now_ms.saturating_add(lifetime)
    };
    let c = shared::wire::clamp_world_coord;
    let g = GroundItem {
        item,
        x: c(x),
        y: c(y),
        z: c(z),
        expires_ms,
    };
    st.send_packet_zone(&dropped_packet(handle, &g), None);
    st.ground.insert(handle, g);
    st.ground_dirty = true;
    handle
}

/// Show an arriving player every item on the ground of the instance (one `"D"` each),
/// right after its `P_ChangeArea`, as Realm Crafter's `SetArea` does. Nothing for an NPC.
pub fn show_all(st: &mut ZoneState, id: ActorId) {
    if !st.get(id).is_some_and(|a| a.is_player()) {
        return;
    }
    let packets: Vec<InventoryUpdateS2C> = st
        .ground
        .iter()
        .map(|(h, g)| dropped_packet(*h, g))
        .collect();
    for p in &packets {
        st.send_packet(id, p);
    }
}

/// Housekeeping: every [`SWEEP_MS`], destroy the items whose lifetime is over (`"P"` to
/// the zone).
pub(crate) fn expire(st: &mut ZoneState) {
    if st.now_ms < st.ground_sweep_ms {
        return;
    }
    st.ground_sweep_ms = st.now_ms.saturating_add(SWEEP_MS);
    let now = st.now_ms;
    let due: Vec<u32> = st
        .ground
        .iter()
        .filter(|(_, g)| g.expires_ms <= now)
        .map(|(h, _)| *h)
        .collect();
    for h in due {
        destroy(st, h);
    }
}

/// Whether an actor may touch items on the ground now (not dead, not mid-transfer).
fn may_act(st: &ZoneState, id: ActorId) -> bool {
    st.get(id).is_some_and(|a| !a.dead && !a.frozen())
}

/// `"D"`: drop part of a stack at the player's feet. `1 <= amount <= stack` of an occupied
/// slot, else refused and counted with nothing changed.
pub(crate) fn drop(st: &mut ZoneState, player: PlayerKey, id: ActorId, slot: u8, amount: u16) {
    if !may_act(st, id) {
        st.reject(Some(player), Rejection::BadItemRequest);
        return;
    }
    let Ok(taken) = bag::take_slot(st, id, usize::from(slot), amount, false) else {
        st.reject(Some(player), Rejection::BadItemRequest);
        return;
    };
    let Some((x, y, z)) = st.get(id).map(|a| (a.x, a.y, a.z)) else {
        return;
    };
    place(st, taken, x, y, z);
    st.entangle(&[id], true);
}

/// Whether `slot` takes the whole ground stack `item` at once: the slot fits the item for
/// the wearer, and is empty (an equipment slot only for a single item) or is a backpack
/// slot holding an identical stackable stack with room for all of it.
fn takes_whole(
    inv: &[Option<InvSlot>],
    w: &Wearer<'_>,
    template: &Item,
    item: &InvSlot,
    slot: usize,
) -> bool {
    if !inventory::fits(w, slot, template) {
        return false;
    }
    match inv.get(slot) {
        Some(None) => !inventory::is_equipment(slot) || item.amount == 1,
        Some(Some(s)) => {
            !inventory::is_equipment(slot)
                && template.stackable
                && inventory::identical(s, item)
                && s.amount
                    .checked_add(item.amount)
                    .is_some_and(|n| n <= STACK_MAX)
        }
        None => false,
    }
}

/// Where a pickup goes: the slot the client chose if it takes the whole stack, else the
/// first slot that does (`None`: no room).
fn pickup_slot(st: &ZoneState, id: ActorId, g: &GroundItem, wanted: usize) -> Option<usize> {
    let a = st.get(id)?;
    let template = st.content.world.item(g.item.item)?;
    let w = bag::wearer_of(st, id);
    let inv = &a.inventory;
    if takes_whole(inv, &w, template, &g.item, wanted) {
        return Some(wanted);
    }
    (0..inventory::SLOTS.min(inv.len())).find(|&s| takes_whole(inv, &w, template, &g.item, s))
}

/// `"P"`: pick up a dropped item into the slot the client chose (or the first slot that
/// takes it). Refused and counted, with nothing changed, for a handle not on the ground
/// here (never dropped, or already taken: of two players racing for one item the second
/// is refused), a slot index out of range, out of reach, or no room.
pub(crate) fn pick_up(st: &mut ZoneState, player: PlayerKey, id: ActorId, dropped: u32, slot: u8) {
    let wanted = usize::from(slot);
    let in_reach = |st: &ZoneState, g: &GroundItem| {
        let r = st.cfg.ground.pickup_radius;
        st.get(id).is_some_and(|a| {
            let (dx, dz) = (g.x - a.x, g.z - a.z);
            dx * dx + dz * dz < r * r
        })
    };
    let chosen = match st.ground.get(&dropped) {
        Some(g) if may_act(st, id) && wanted < inventory::SLOTS && in_reach(st, g) => {
            pickup_slot(st, id, g, wanted)
        }
        _ => None,
    };
    let Some(slot) = chosen else {
        st.reject(Some(player), Rejection::BadItemRequest);
        return;
    };
    let Some(g) = st.ground.remove(&dropped) else {
        return;
    };
    let Some(cell) = st.get_mut(id).and_then(|a| a.inventory.get_mut(slot)) else {
        // Not reachable (checked above); keep the item rather than lose it.
        st.ground.insert(dropped, g);
        return;
    };
    match cell {
        Some(s) => s.amount = s.amount.saturating_add(g.item.amount),
        None => *cell = Some(g.item),
    }
    st.ground_dirty = true;
    st.send_packet(
        id,
        &InventoryUpdateS2C::Received {
            dropped,
            slot: u8::try_from(slot).unwrap_or(u8::MAX),
        },
    );
    st.send_packet_zone(&InventoryUpdateS2C::Gone { dropped }, Some(id));
    st.entangle(&[id], true);
    if inventory::is_equipment(slot) {
        bag::equipment_changed(st, id);
    }
}

/// Why [`spawn_item`] spawned nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpawnError {
    /// No item template has this name.
    #[error("no item named \"{0}\"")]
    UnknownItem(String),
    /// The amount is not 1..=32767.
    #[error("amount {0} is not between 1 and {STACK_MAX}")]
    BadAmount(i32),
    /// No area has this name.
    #[error("no area named \"{0}\"")]
    UnknownArea(String),
    /// Another AreaInstance: not this zone's ground (the native has the cluster ask
    /// that instance's zone).
    #[error("{area} instance {instance} is not this zone ({here} instance {here_instance})")]
    OtherInstance {
        /// The area asked for.
        area: String,
        /// The instance asked for.
        instance: i32,
        /// This zone's area.
        here: String,
        /// This zone's instance.
        here_instance: u16,
    },
}

/// `SpawnItem(item$, amount%, zone$, x#, y#, z#, instance%=0)`: a new instance of the named
/// item (full health, template attributes) on the ground of this AreaInstance. Another
/// AreaInstance is [`SpawnError::OtherInstance`]: the native then has the cluster ask that
/// instance's zone, which calls this (`docs/items.md`). Returns the item's handle.
#[doc(alias = "SpawnItem")]
#[allow(clippy::too_many_arguments)]
pub fn spawn_item(
    st: &mut ZoneState,
    name: &str,
    amount: i32,
    area: &str,
    x: f32,
    y: f32,
    z: f32,
    instance: i32,
) -> Result<u32, SpawnError> {
    let world = st.content.world.clone();
    let template = world
        .item_by_name(name)
        .ok_or_else(|| SpawnError::UnknownItem(name.into()))?;
    let n = u16::try_from(amount)
        .ok()
        .filter(|n| (1..=STACK_MAX).contains(n))
        .ok_or(SpawnError::BadAmount(amount))?;
    let here = &st.content.area.name;
    if !area.trim().eq_ignore_ascii_case(here) {
        if world.area_by_name(area).is_none() {
            return Err(SpawnError::UnknownArea(area.into()));
        }
    } else if instance == i32::from(st.cfg.instance) {
        let item = inventory::instance(template, n);
        return Ok(place(st, item, x, y, z));
    }
    Err(SpawnError::OtherInstance {
        area: area.trim().to_owned(),
        instance,
        here: here.clone(),
        here_instance: st.cfg.instance,
    })
}
