//! Inventory and items (`inv`, `rsl-natives.md` §6): what an actor holds and wears, giving
//! and taking items, and the item-instance handles the `Item*` natives take.
//!
//! # Item-instance handles
//! Realm Crafter's `ActorWeapon` and friends return `Handle(ItemInstance)`, a pointer a
//! script could keep after the item was dropped, sold or destroyed. Here a handle is a
//! fresh nonzero number issued by the running script instance (never reused by it) that
//! names *the item of template T in slot S of actor A* ([`ItemRef`], kept in the
//! instance's data so it travels with the script). Every use checks that A is in this zone
//! and that slot S still holds template T; otherwise the handle is stale and the native
//! answers 0, `""` or 0.0 (and a setter does nothing), like any invalid handle. Asking
//! twice for the same slot gives the same handle while it is valid. An instance keeps at
//! most [`MAX_ITEM_REFS`] handles; past that the oldest goes stale (`docs/scripting.md`).
//!
//! `SpawnItem` (ground items) and `OpenTrading` (trade and shops) are not here.

use script::natives::Native;
use shared::content::{Item, ItemKind, WeaponType};
use shared::proto::InventoryUpdateS2C;

use super::{Args, NResult, float, int, none, text};
use crate::sim::combat;
use crate::sim::events::InvSlot;
use crate::sim::instances::ItemRef;
use crate::sim::items::{bag, inventory};
use crate::sim::runtime::host::ZoneHost;
use crate::sim::script_table as table;
use crate::sim::state::ActorId;

/// The most item-instance handles one script instance keeps at once.
pub const MAX_ITEM_REFS: usize = 256;

/// Whether this module answers `n`.
pub fn handles(n: Native) -> bool {
    matches!(
        n,
        Native::ArmourLevel
            | Native::ActorWeapon
            | Native::ActorShield
            | Native::ActorHat
            | Native::ActorChest
            | Native::ActorHands
            | Native::ActorBelt
            | Native::ActorLegs
            | Native::ActorFeet
            | Native::ActorRing
            | Native::ActorAmulet
            | Native::ActorBackpack
            | Native::BackpackCount
            | Native::GiveItem
            | Native::HasItem
            | Native::ItemName
            | Native::ItemId
            | Native::ItemValue
            | Native::ItemMass
            | Native::ItemRange
            | Native::ItemDamage
            | Native::ItemDamageType
            | Native::ItemWeaponType
            | Native::ItemArmor
            | Native::ItemMiscData
            | Native::ItemHealth
            | Native::SetItemHealth
            | Native::ItemAttribute
    )
}

/// The inventory slot an `Actor<Slot>` native names (`n` is the 1-based ring, amulet or
/// backpack number), if in range.
fn slot_of(n: Native, k: i32) -> Option<usize> {
    let nth = |first: usize, count: i32| {
        (1..=count)
            .contains(&k)
            .then(|| first + usize::try_from(k - 1).unwrap_or(0))
    };
    Some(match n {
        Native::ActorWeapon => inventory::WEAPON,
        Native::ActorShield => inventory::SHIELD,
        Native::ActorHat => inventory::HAT,
        Native::ActorChest => inventory::CHEST,
        Native::ActorHands => 4,
        Native::ActorBelt => 5,
        Native::ActorLegs => 6,
        Native::ActorFeet => 7,
        Native::ActorRing => nth(inventory::RING, 4)?,
        Native::ActorAmulet => nth(inventory::AMULET, 2)?,
        Native::ActorBackpack | Native::BackpackCount => nth(
            inventory::BACKPACK,
            i32::try_from(inventory::BACKPACK_SLOTS).unwrap_or(0),
        )?,
        _ => return None,
    })
}

impl ZoneHost<'_> {
    /// A handle for what `id` holds in `slot` (0 when the slot is empty).
    fn item_handle(&mut self, id: ActorId, slot: usize) -> i32 {
        let Some(item) = self
            .st
            .get(id)
            .and_then(|a| a.inventory.get(slot))
            .and_then(Option::as_ref)
            .map(|s| s.item)
        else {
            return 0;
        };
        let (Ok(slot), actor) = (u8::try_from(slot), self.st.handle_of(id)) else {
            return 0;
        };
        let r = ItemRef { actor, slot, item };
        if let Some((&h, _)) = self.cx.item_refs.iter().find(|(_, v)| **v == r) {
            return h;
        }
        let Some(h) = self.cx.last_item_ref.checked_add(1) else {
            return 0;
        };
        self.cx.last_item_ref = h.max(1);
        while self.cx.item_refs.len() >= MAX_ITEM_REFS {
            self.cx.item_refs.pop_first();
        }
        self.cx.item_refs.insert(self.cx.last_item_ref, r);
        self.cx.last_item_ref
    }

    /// What a handle names, if it is still valid: the holder, the slot, the instance.
    fn item_at(&self, handle: i32) -> Option<(ActorId, usize, &InvSlot)> {
        let r = self.cx.item_refs.get(&handle)?;
        let id = self.st.actor_by_handle(r.actor)?;
        let slot = usize::from(r.slot);
        let s = self.st.get(id)?.inventory.get(slot)?.as_ref()?;
        (s.item == r.item).then_some((id, slot, s))
    }

    /// The template behind a valid handle.
    fn item_template(&self, handle: i32) -> Option<&Item> {
        let (_, _, s) = self.item_at(handle)?;
        self.st.content.world.item(s.item)
    }
}

/// `GiveItem(actor, name, n)`: `n > 0` gives all `n` or nothing (placed by the server at
/// once; a player gets one `"G"` per placement, an NPC none); `n < 0` takes up to `-n`
/// from any slots with a `"T"` each. Returns the number given or taken, 0 when nothing
/// could be done; a give that does not fit is written to the script log (Realm Crafter
/// lost the items that did not fit).
fn give_item(h: &mut ZoneHost<'_>, id: ActorId, name: &str, n: i32) -> i32 {
    let Some(t) = h.st.content.world.item_by_name(name).cloned() else {
        let msg = format!("GiveItem: there is no item called \"{}\"", name.trim());
        table::log(h.st, &h.cx.script, msg);
        return 0;
    };
    if n < 0 {
        let taken = bag::take_item(h.st, id, t.id, n.unsigned_abs());
        return i32::try_from(taken).unwrap_or(i32::MAX);
    }
    if n == 0 {
        return 0;
    }
    // Stacks of at most STACK_MAX, all checked together before any is given.
    let mut left = n.unsigned_abs();
    let mut stacks = Vec::new();
    while left > 0 {
        let k = left.min(u32::from(inventory::STACK_MAX));
        stacks.push(inventory::instance(&t, u16::try_from(k).unwrap_or(0)));
        left -= k;
    }
    let fits = {
        let world = h.st.content.world.clone();
        let w = bag::wearer_of(h.st, id);
        h.st.get(id).is_some_and(|a| {
            let mut inv = a.inventory.clone();
            inventory::give_all(&mut inv, &world, &w, &stacks).is_ok()
        })
    };
    if !fits {
        let who = h.st.get(id).map(|a| a.name.clone()).unwrap_or_default();
        let msg = format!(
            "GiveItem: no room for {n} \"{}\" with {who}; nothing given",
            t.name
        );
        table::log(h.st, &h.cx.script, msg);
        return 0;
    }
    for s in stacks {
        if bag::give(h.st, id, s).is_err() {
            return 0;
        }
    }
    n
}

/// `SetItemHealth(item, v)`: clamped to 0..=100; tells a player holder with `"H"`.
fn set_item_health(h: &mut ZoneHost<'_>, handle: i32, v: i32) {
    let Some((id, slot, _)) = h.item_at(handle) else {
        return;
    };
    let health = u8::try_from(v.clamp(0, 100)).unwrap_or(0);
    if let Some(Some(s)) = h.st.get_mut(id).and_then(|a| a.inventory.get_mut(slot)) {
        s.health = health;
    }
    let Ok(slot) = u8::try_from(slot) else { return };
    h.st.send_packet(id, &InventoryUpdateS2C::Health { slot, health });
}

/// Run an inventory or item native.
pub fn call(h: &mut ZoneHost<'_>, n: Native, a: Args<'_>) -> NResult {
    match n {
        Native::ArmourLevel => match h.actor(a.int(0)) {
            Some(id) => int(combat::armour(h.st, id)),
            None => none(),
        },
        Native::ActorWeapon
        | Native::ActorShield
        | Native::ActorHat
        | Native::ActorChest
        | Native::ActorHands
        | Native::ActorBelt
        | Native::ActorLegs
        | Native::ActorFeet
        | Native::ActorRing
        | Native::ActorAmulet
        | Native::ActorBackpack => {
            let (Some(id), Some(slot)) = (h.actor(a.int(0)), slot_of(n, a.int(1))) else {
                return none();
            };
            int(h.item_handle(id, slot))
        }
        Native::BackpackCount => {
            let amount = h
                .actor(a.int(0))
                .zip(slot_of(n, a.int(1)))
                .and_then(|(id, slot)| h.st.get(id)?.inventory.get(slot)?.as_ref())
                .map_or(0, |s| i32::from(s.amount));
            int(amount)
        }
        Native::GiveItem => match h.actor(a.int(0)) {
            Some(id) => {
                let name = a.text(1);
                int(give_item(h, id, &name, a.int(2)))
            }
            None => none(),
        },
        Native::HasItem => {
            let want = i64::from(a.int(2));
            let name = a.text(1);
            let held = h
                .actor(a.int(0))
                .zip(h.st.content.world.item_by_name(&name))
                .and_then(|(id, t)| Some(inventory::count(&h.st.get(id)?.inventory, t.id)))
                .map_or(0, i64::from);
            int(i32::from(held > 0 && held >= want))
        }
        Native::ItemHealth => int(h
            .item_at(a.int(0))
            .map_or(0, |(_, _, s)| i32::from(s.health))),
        Native::SetItemHealth => {
            set_item_health(h, a.int(0), a.int(1));
            none()
        }
        Native::ItemAttribute => {
            let name = a.text(1);
            let v =
                h.st.content
                    .find_attribute(&name)
                    .zip(h.item_at(a.int(0)))
                    .and_then(|(i, (_, _, s))| s.attributes.get(usize::from(i)).copied())
                    .unwrap_or(0);
            int(v)
        }
        _ => template_field(h, n, a.int(0)),
    }
}

/// The natives that read a field of the item's template.
fn template_field(h: &ZoneHost<'_>, n: Native, handle: i32) -> NResult {
    let t = h.item_template(handle);
    let weapon = t.and_then(|t| match &t.kind {
        ItemKind::Weapon {
            damage,
            damage_type,
            weapon_type,
            range,
            ..
        } => Some((*damage, *damage_type, *weapon_type, *range)),
        _ => None,
    });
    match n {
        Native::ItemName => text(t.map_or("", |t| t.name.as_str())),
        Native::ItemId => int(t.map_or(0, |t| i32::from(t.id))),
        Native::ItemValue => int(t.map_or(0, |t| t.value)),
        Native::ItemMass => int(t.map_or(0, |t| i32::from(t.mass))),
        Native::ItemRange => float(weapon.map_or(0.0, |w| w.3)),
        Native::ItemDamage => int(weapon.map_or(0, |w| i32::from(w.0))),
        Native::ItemDamageType => {
            let name = weapon.and_then(|w| h.st.content.world.damage_type_name(w.1));
            text(name.unwrap_or(""))
        }
        Native::ItemWeaponType => int(weapon.map_or(0, |w| match w.2 {
            WeaponType::OneHanded => 1,
            WeaponType::TwoHanded => 2,
            WeaponType::Ranged => 3,
        })),
        Native::ItemArmor => int(t.and_then(Item::armour_level).map_or(0, i32::from)),
        Native::ItemMiscData => text(match t.map(|t| &t.kind) {
            Some(ItemKind::Other { misc }) => misc.as_str(),
            _ => "",
        }),
        _ => none(),
    }
}
