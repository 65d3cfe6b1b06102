//! The inventory rules (Realm Crafter's `Inventories.bb`): slot layout, which item fits
//! which slot for which wearer, stacking, and placing and taking items all-or-nothing.
//!
//! Everything here works on a plain slice of 46 slots and the world's item templates, so
//! the zone, a trade settlement and a test use the same rules. Each function either does
//! all of what it is asked or changes nothing.

use shared::content::{Item, ItemKind, World};

use crate::sim::events::InvSlot;

/// Slots per actor (`Items[0..45]`).
pub const SLOTS: usize = 46;
/// The weapon slot.
pub const WEAPON: usize = 0;
/// The shield slot.
pub const SHIELD: usize = 1;
/// The hat slot.
pub const HAT: usize = 2;
/// The chest slot.
pub const CHEST: usize = 3;
/// The first ring slot (rings are 8..=11).
pub const RING: usize = 8;
/// The first amulet slot (amulets are 12..=13).
pub const AMULET: usize = 12;
/// The first backpack slot (the backpack is 14..=45).
pub const BACKPACK: usize = 14;
/// Backpack slots.
pub const BACKPACK_SLOTS: usize = SLOTS - BACKPACK;
/// The largest stack one slot holds (Realm Crafter V1's `ClampStackAmount`; the wire
/// carries amounts as u16 and V1 reads them signed).
pub const STACK_MAX: u16 = 32767;
/// Item health of a new instance.
pub const FULL_HEALTH: u8 = 100;
/// Attributes per item instance.
const ATTRIBUTES: usize = 40;

/// Whether a slot index is an equipment slot (0..=13): it holds at most one item.
pub fn is_equipment(slot: usize) -> bool {
    slot < BACKPACK
}

/// The slot type of a slot index (`Slot_*`, 1..=11), the bit `type - 1` of a template's
/// `InventorySlots` mask.
pub fn slot_type(slot: usize) -> Option<u16> {
    Some(match slot {
        0..=7 => u16::try_from(slot).ok()? + 1,
        8..=11 => 9,
        12..=13 => 10,
        14..SLOTS => 11,
        _ => return None,
    })
}

/// Who would wear an item: what the slot rules need to know of an actor.
#[derive(Clone, Copy, Debug)]
pub struct Wearer<'a> {
    /// Race (template).
    pub race: &'a str,
    /// Class (template).
    pub class: &'a str,
    /// The template's `InventorySlots` mask (bit `type - 1` enables a slot type).
    pub slots_mask: u32,
}

impl Wearer<'_> {
    /// A wearer with every slot and no race or class (tests, NPCs without a template).
    pub const ANY: Wearer<'static> = Wearer {
        race: "",
        class: "",
        slots_mask: u32::MAX,
    };
}

/// Whether the wearer's race and class may use the item (`ExclusiveRace`,
/// `ExclusiveClass`, case-insensitive; empty means anyone).
///
/// Realm Crafter let a matching race override the class and a disabled slot, and its
/// index-versus-type comparison skipped the test for ring 4 and the amulets; here both
/// exclusions always apply (`docs/items.md`).
pub fn may_use(w: &Wearer<'_>, item: &Item) -> bool {
    let ok = |need: &str, have: &str| need.is_empty() || need.eq_ignore_ascii_case(have);
    ok(&item.exclusive_race, w.race) && ok(&item.exclusive_class, w.class)
}

/// `ActorHasSlot`: the wearer has the slot, and for an equipment slot may use the item.
pub fn has_slot(w: &Wearer<'_>, slot: usize, item: &Item) -> bool {
    let Some(t) = slot_type(slot) else {
        return false;
    };
    let enabled = w.slots_mask & (1u32 << (t - 1)) != 0;
    enabled && (!is_equipment(slot) || may_use(w, item))
}

/// `SlotsMatch`: the item's type fits the slot (weapons in 0, armour by its `SlotType`,
/// rings with `SlotType` 9 in 8..=11, other rings and amulets in 12..=13, anything in the
/// backpack).
pub fn slots_match(item: &Item, slot: usize) -> bool {
    match slot {
        WEAPON => matches!(item.kind, ItemKind::Weapon { .. }),
        1..=7 => {
            matches!(item.kind, ItemKind::Armour { .. }) && usize::from(item.slot_type) == slot + 1
        }
        8..=11 => matches!(item.kind, ItemKind::Ring) && item.slot_type == 9,
        12..=13 => matches!(item.kind, ItemKind::Ring) && item.slot_type != 9,
        14..SLOTS => true,
        _ => false,
    }
}

/// Whether `item` may go into `slot` for this wearer (both rules).
pub fn fits(w: &Wearer<'_>, slot: usize, item: &Item) -> bool {
    slots_match(item, slot) && has_slot(w, slot, item)
}

/// A new instance of a template (`CreateItemInstance`): its attributes, full health.
pub fn instance(item: &Item, amount: u16) -> InvSlot {
    let mut attributes = item.attributes.clone();
    attributes.resize(ATTRIBUTES, 0);
    InvSlot {
        item: item.id,
        attributes,
        health: FULL_HEALTH,
        amount,
    }
}

/// Whether two instances are "identical" (`ItemInstancesIdentical`): the same template,
/// health and 40 attributes (a missing attribute counts as 0). This is the stacking test.
pub fn identical(a: &InvSlot, b: &InvSlot) -> bool {
    let attr = |s: &InvSlot, i: usize| s.attributes.get(i).copied().unwrap_or(0);
    a.item == b.item && a.health == b.health && (0..ATTRIBUTES).all(|i| attr(a, i) == attr(b, i))
}

/// Why items could not be placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum InventoryError {
    /// The item id names no template.
    #[error("no such item")]
    UnknownItem,
    /// Not enough room for all of it.
    #[error("inventory full")]
    Full,
    /// A slot index out of range, an empty slot, or an amount that slot does not hold.
    #[error("no such slot or amount")]
    BadSlot,
    /// An amount of zero, or more than a stack holds.
    #[error("bad amount")]
    BadAmount,
}

/// Where part of a stack went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// Slot index.
    pub slot: usize,
    /// How many went there.
    pub amount: u16,
}

/// The first slot that takes (part of) `item` by the client's first-fit rule
/// (`ClientNet.bb` "G"): slots in order from 0, a slot that is empty or, in the backpack,
/// holds an identical stackable stack with room, and that fits the item for the wearer.
/// Equipment slots come first, so a free weapon slot takes a sword.
pub fn first_fit(
    inv: &[Option<InvSlot>],
    w: &Wearer<'_>,
    template: &Item,
    item: &InvSlot,
) -> Option<usize> {
    (0..SLOTS.min(inv.len())).find(|&slot| {
        let room = match inv.get(slot) {
            Some(None) => true,
            Some(Some(s)) => {
                !is_equipment(slot)
                    && template.stackable
                    && identical(s, item)
                    && s.amount < STACK_MAX
            }
            None => false,
        };
        room && fits(w, slot, template)
    })
}

/// Place a whole stack by repeated first fit: one item into a free equipment slot, the
/// rest onto identical stacks (up to [`STACK_MAX`]) or into free backpack slots. All or
/// nothing: on error the inventory is unchanged. Each placement is what one
/// `P_InventoryUpdate "G"` offer tells a Realm Crafter client, which puts it in the same
/// slot by the same rule.
pub fn give(
    inv: &mut [Option<InvSlot>],
    world: &World,
    w: &Wearer<'_>,
    item: InvSlot,
) -> Result<Vec<Placement>, InventoryError> {
    let template = world.item(item.item).ok_or(InventoryError::UnknownItem)?;
    if item.amount == 0 {
        return Err(InventoryError::BadAmount);
    }
    let mut work = inv.to_vec();
    let mut left = item.amount;
    let mut placed = Vec::new();
    while left > 0 {
        let slot = first_fit(&work, w, template, &item).ok_or(InventoryError::Full)?;
        let cell = work.get_mut(slot).ok_or(InventoryError::BadSlot)?;
        let n = match cell {
            Some(s) => {
                let n = left.min(STACK_MAX - s.amount);
                s.amount += n;
                n
            }
            None => {
                let n = if is_equipment(slot) {
                    1
                } else {
                    left.min(STACK_MAX)
                };
                *cell = Some(InvSlot {
                    amount: n,
                    ..item.clone()
                });
                n
            }
        };
        left -= n;
        placed.push(Placement { slot, amount: n });
    }
    inv.clone_from_slice(&work);
    Ok(placed)
}

/// Place several stacks, all or nothing (a trade or a purchase: either everything fits or
/// nothing moves).
pub fn give_all(
    inv: &mut [Option<InvSlot>],
    world: &World,
    w: &Wearer<'_>,
    items: &[InvSlot],
) -> Result<Vec<Placement>, InventoryError> {
    let mut work = inv.to_vec();
    let mut placed = Vec::new();
    for it in items {
        placed.extend(give(&mut work, world, w, it.clone())?);
    }
    inv.clone_from_slice(&work);
    Ok(placed)
}

/// Take `amount` from `slot` (`InventoryDrop`, with Realm Crafter's shared-object bug
/// fixed): returns the taken part as its own instance and frees the slot when nothing is
/// left. `1 <= amount <= stack`, else nothing changes.
pub fn take(
    inv: &mut [Option<InvSlot>],
    slot: usize,
    amount: u16,
) -> Result<InvSlot, InventoryError> {
    let cell = inv.get_mut(slot).ok_or(InventoryError::BadSlot)?;
    let s = cell.as_mut().ok_or(InventoryError::BadSlot)?;
    if amount == 0 || amount > s.amount {
        return Err(InventoryError::BadAmount);
    }
    let taken = InvSlot {
        amount,
        ..s.clone()
    };
    s.amount -= amount;
    if s.amount == 0 {
        *cell = None;
    }
    Ok(taken)
}

/// How many of a template the inventory holds over all slots (`HasItem`, `WaitItem`).
pub fn count(inv: &[Option<InvSlot>], item: u16) -> u32 {
    inv.iter()
        .flatten()
        .filter(|s| s.item == item)
        .map(|s| u32::from(s.amount))
        .sum()
}

/// Take up to `amount` of a template from any slots, in slot order (a negative
/// `GiveItem`); returns what was taken from which slot.
pub fn take_item(inv: &mut [Option<InvSlot>], item: u16, amount: u32) -> Vec<Placement> {
    let mut left = amount;
    let mut taken = Vec::new();
    for (slot, cell) in inv.iter_mut().enumerate() {
        if left == 0 {
            break;
        }
        let Some(s) = cell.as_mut().filter(|s| s.item == item) else {
            continue;
        };
        let n = u16::try_from(left.min(u32::from(s.amount))).unwrap_or(s.amount);
        s.amount -= n;
        left -= u32::from(n);
        if s.amount == 0 {
            *cell = None;
        }
        taken.push(Placement { slot, amount: n });
    }
    taken
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::content::WeaponType;

    fn world() -> World {
        let mut w = World::default();
        let sword = Item {
            id: 0,
            name: "Sword".into(),
            kind: ItemKind::Weapon {
                damage: 10,
                damage_type: 0,
                weapon_type: WeaponType::default(),
                projectile: 0,
                range: 0.0,
                anim: String::new(),
            },
            ..Item::default()
        };
        let helmet = Item {
            id: 1,
            name: "Helmet".into(),
            slot_type: 3,
            exclusive_race: "Human".into(),
            kind: ItemKind::Armour { level: 2 },
            ..Item::default()
        };
        let potion = Item {
            id: 2,
            name: "Potion".into(),
            stackable: true,
            kind: ItemKind::Potion { secs: 10 },
            ..Item::default()
        };
        w.items = vec![sword, helmet, potion];
        w
    }

    fn empty() -> Vec<Option<InvSlot>> {
        vec![None; SLOTS]
    }

    fn human() -> Wearer<'static> {
        Wearer {
            race: "human",
            class: "Fighter",
            slots_mask: u32::MAX,
        }
    }

    #[test]
    fn slot_types_follow_the_layout() {
        assert_eq!(slot_type(0), Some(1));
        assert_eq!(slot_type(7), Some(8));
        assert_eq!(slot_type(11), Some(9));
        assert_eq!(slot_type(13), Some(10));
        assert_eq!(slot_type(45), Some(11));
        assert_eq!(slot_type(46), None);
    }

    #[test]
    fn a_sword_is_equipped_first_then_goes_to_the_backpack() {
        let w = world();
        let mut inv = empty();
        let sword = instance(&w.items[0], 3);
        let placed = give(&mut inv, &w, &human(), sword).unwrap();
        // One in the weapon slot; the rest is one non-stackable stack in the backpack,
        // as Realm Crafter's client places it.
        assert_eq!(
            placed,
            vec![
                Placement { slot: 0, amount: 1 },
                Placement {
                    slot: 14,
                    amount: 2
                }
            ]
        );
    }

    #[test]
    fn race_exclusion_keeps_a_helmet_out_of_the_hat_slot() {
        let w = world();
        let elf = Wearer {
            race: "Elf",
            ..human()
        };
        let mut inv = empty();
        let placed = give(&mut inv, &w, &elf, instance(&w.items[1], 1)).unwrap();
        assert_eq!(
            placed,
            vec![Placement {
                slot: 14,
                amount: 1
            }]
        );
        let mut inv = empty();
        let placed = give(&mut inv, &w, &human(), instance(&w.items[1], 1)).unwrap();
        assert_eq!(
            placed,
            vec![Placement {
                slot: HAT,
                amount: 1
            }]
        );
    }

    #[test]
    fn stackables_merge_up_to_the_cap_and_full_changes_nothing() {
        let w = world();
        let mut inv = empty();
        give(&mut inv, &w, &human(), instance(&w.items[2], STACK_MAX - 1)).unwrap();
        let placed = give(&mut inv, &w, &human(), instance(&w.items[2], 3)).unwrap();
        assert_eq!(
            placed,
            vec![
                Placement {
                    slot: 14,
                    amount: 1
                },
                Placement {
                    slot: 15,
                    amount: 2
                }
            ]
        );
        // Fill every backpack slot with swords, then nothing more fits.
        let mut inv = empty();
        for s in inv.iter_mut().skip(BACKPACK) {
            *s = Some(instance(&w.items[0], 1));
        }
        inv[0] = Some(instance(&w.items[0], 1));
        let before = inv.clone();
        assert_eq!(
            give(&mut inv, &w, &human(), instance(&w.items[2], 1)),
            Err(InventoryError::Full)
        );
        assert_eq!(inv, before);
    }

    #[test]
    fn take_copies_the_taken_part_and_frees_an_empty_slot() {
        let w = world();
        let mut inv = empty();
        inv[20] = Some(instance(&w.items[2], 5));
        assert_eq!(take(&mut inv, 20, 0), Err(InventoryError::BadAmount));
        assert_eq!(take(&mut inv, 20, 6), Err(InventoryError::BadAmount));
        assert_eq!(take(&mut inv, 99, 1), Err(InventoryError::BadSlot));
        assert_eq!(take(&mut inv, 20, 2).unwrap().amount, 2);
        assert_eq!(inv[20].as_ref().map(|s| s.amount), Some(3));
        take(&mut inv, 20, 3).unwrap();
        assert_eq!(inv[20], None);
    }

    #[test]
    fn take_item_and_count() {
        let w = world();
        let mut inv = empty();
        inv[14] = Some(instance(&w.items[2], 2));
        inv[30] = Some(instance(&w.items[2], 4));
        assert_eq!(count(&inv, 2), 6);
        let t = take_item(&mut inv, 2, 3);
        assert_eq!(
            t,
            vec![
                Placement {
                    slot: 14,
                    amount: 2
                },
                Placement {
                    slot: 30,
                    amount: 1
                }
            ]
        );
        assert_eq!(count(&inv, 2), 3);
    }

    #[test]
    fn identical_pads_missing_attributes_with_zero() {
        let w = world();
        let a = instance(&w.items[2], 1);
        let mut b = a.clone();
        b.attributes.truncate(3);
        assert!(identical(&a, &b));
        b.health = 50;
        assert!(!identical(&a, &b));
    }
}
