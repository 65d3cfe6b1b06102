//! The inventory rules (Realm Crafter's `Inventories.bb`): slot layout, which item fits
//! which slot for which wearer, stacking, and placing and taking items all-or-nothing.
//!
//! Everything here works on a plain slice of 46 slots and the world's item templates, so
//! the zone, a trade settlement and a test use the same rules. Each function either does
//! all of what it is asked or changes nothing.

use shared::content::{Item, ItemKind, WeaponType, World};

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
    /// A two-handed weapon and a shield would be worn together.
    #[error("a two-handed weapon cannot be worn with a shield")]
    TwoHanded,
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

/// [`first_fit`] with this server's one extra rule: a two-handed weapon does not go into
/// the weapon slot while a shield is worn, nor a shield into the shield slot while a
/// two-handed weapon is (the next slot that fits takes it). Realm Crafter's client knows no
/// such rule and may answer the `"G"` offer with the worn slot; the offer check counts
/// that and tells the client (`docs/items.md`).
pub fn server_fit(
    inv: &[Option<InvSlot>],
    world: &World,
    w: &Wearer<'_>,
    template: &Item,
    item: &InvSlot,
) -> Option<usize> {
    let worn = |slot: usize| {
        inv.get(slot)
            .and_then(Option::as_ref)
            .and_then(|s| world.item(s.item))
    };
    let blocked = match first_fit(inv, w, template, item)? {
        WEAPON if is_two_handed(template) && worn(SHIELD).is_some() => WEAPON,
        SHIELD if worn(WEAPON).is_some_and(is_two_handed) => SHIELD,
        slot => return Some(slot),
    };
    let mut masked = inv.to_vec();
    // Occupy the blocked slot with a placeholder no item is identical to, so the same
    // first-fit scan goes on past it.
    if let Some(cell) = masked.get_mut(blocked) {
        *cell = Some(InvSlot {
            item: u16::MAX,
            attributes: Vec::new(),
            health: 0,
            amount: STACK_MAX,
        });
    }
    first_fit(&masked, w, template, item)
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
        let slot = server_fit(&work, world, w, template, &item).ok_or(InventoryError::Full)?;
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

/// Whether the weapon is two-handed (`W_TwoHand`).
pub fn is_two_handed(item: &Item) -> bool {
    matches!(
        item.kind,
        ItemKind::Weapon {
            weapon_type: WeaponType::TwoHanded,
            ..
        }
    )
}

/// Whether the weapon and shield slots of `inv` would hold a two-handed weapon and a
/// shield together. Realm Crafter has no such rule (its client and server let both be
/// worn); here a move that would wear both is refused (`docs/items.md`).
pub fn two_handed_with_shield(inv: &[Option<InvSlot>], world: &World) -> bool {
    let worn = |slot: usize| {
        inv.get(slot)
            .and_then(Option::as_ref)
            .and_then(|s| world.item(s.item))
    };
    worn(WEAPON).is_some_and(is_two_handed) && worn(SHIELD).is_some()
}

/// `InventorySwap` with Realm Crafter V1's checks: move, swap or split the stack in
/// `from` onto `to`.
///
/// * Both slots in range and distinct, `from` occupied, `amount <= stack` (0 = the whole
///   stack).
/// * The item in `from` fits `to` for the wearer, and the item in `to` (if any) fits
///   `from`: both directions of the swap.
/// * `to` empty and `0 < amount < stack`: a split, `to` gets a copy with `amount`.
///   Otherwise a full swap of the two slots (Realm Crafter ignores the amount when `to`
///   is occupied).
/// * A stack of more than one never lands in an equipment slot, and a two-handed weapon is
///   never worn with a shield.
///
/// All or nothing: on error the inventory is unchanged.
#[doc(alias = "InventorySwap")]
pub fn swap(
    inv: &mut [Option<InvSlot>],
    world: &World,
    w: &Wearer<'_>,
    from: usize,
    to: usize,
    amount: u16,
) -> Result<(), InventoryError> {
    if from == to || from >= SLOTS.min(inv.len()) || to >= SLOTS.min(inv.len()) {
        return Err(InventoryError::BadSlot);
    }
    let a = inv
        .get(from)
        .and_then(Option::as_ref)
        .ok_or(InventoryError::BadSlot)?;
    let b = inv.get(to).and_then(Option::as_ref);
    if amount > a.amount {
        return Err(InventoryError::BadAmount);
    }
    let ta = world.item(a.item).ok_or(InventoryError::UnknownItem)?;
    if !fits(w, to, ta) {
        return Err(InventoryError::BadSlot);
    }
    if let Some(b) = b {
        let tb = world.item(b.item).ok_or(InventoryError::UnknownItem)?;
        if !fits(w, from, tb) {
            return Err(InventoryError::BadSlot);
        }
    }
    let mut work = inv.to_vec();
    let split = b.is_none() && amount != 0 && amount < a.amount;
    if split {
        let part = InvSlot {
            amount,
            ..a.clone()
        };
        if let Some(Some(src)) = work.get_mut(from) {
            src.amount -= amount;
        }
        if let Some(dst) = work.get_mut(to) {
            *dst = Some(part);
        }
    } else {
        work.swap(from, to);
    }
    let stacked_equipment = [from, to].iter().any(|&s| {
        is_equipment(s)
            && work
                .get(s)
                .and_then(Option::as_ref)
                .is_some_and(|x| x.amount > 1)
    });
    if stacked_equipment {
        return Err(InventoryError::BadAmount);
    }
    if two_handed_with_shield(&work, world) && !two_handed_with_shield(inv, world) {
        return Err(InventoryError::TwoHanded);
    }
    inv.clone_from_slice(&work);
    Ok(())
}

/// `InventoryAdd` with Realm Crafter V1's checks and its missing Stackable check added:
/// move `amount` of the stack in `from` onto the identical stack in backpack slot `to`.
///
/// `to` is a backpack slot other than `from`, both are occupied by identical instances of
/// a **stackable** template, `1 <= amount <= stack`, the source fits where it is moved to,
/// and the result stays within [`STACK_MAX`] (a merge past it is refused, where V1 clamped
/// the stack and lost the excess). All or nothing.
#[doc(alias = "InventoryAdd")]
pub fn merge(
    inv: &mut [Option<InvSlot>],
    world: &World,
    w: &Wearer<'_>,
    from: usize,
    to: usize,
    amount: u16,
) -> Result<(), InventoryError> {
    if from == to || is_equipment(to) || to >= SLOTS.min(inv.len()) {
        return Err(InventoryError::BadSlot);
    }
    let a = inv
        .get(from)
        .and_then(Option::as_ref)
        .ok_or(InventoryError::BadSlot)?;
    let b = inv
        .get(to)
        .and_then(Option::as_ref)
        .ok_or(InventoryError::BadSlot)?;
    if amount == 0 || amount > a.amount {
        return Err(InventoryError::BadAmount);
    }
    let t = world.item(a.item).ok_or(InventoryError::UnknownItem)?;
    if !t.stackable || !identical(a, b) || !fits(w, to, t) {
        return Err(InventoryError::BadSlot);
    }
    let total = b
        .amount
        .checked_add(amount)
        .filter(|&n| n <= STACK_MAX)
        .ok_or(InventoryError::Full)?;
    if let Some(Some(dst)) = inv.get_mut(to) {
        dst.amount = total;
    }
    if let Some(cell) = inv.get_mut(from)
        && let Some(src) = cell.as_mut()
    {
        src.amount -= amount;
        if src.amount == 0 {
            *cell = None;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// The test world plus a two-handed axe (3) and a shield (4).
    fn world_with_axe() -> World {
        let mut w = world();
        w.items.push(Item {
            id: 3,
            name: "Axe".into(),
            kind: ItemKind::Weapon {
                damage: 20,
                damage_type: 0,
                weapon_type: WeaponType::TwoHanded,
                projectile: 0,
                range: 0.0,
                anim: String::new(),
            },
            ..Item::default()
        });
        w.items.push(Item {
            id: 4,
            name: "Shield".into(),
            slot_type: 2,
            kind: ItemKind::Armour { level: 3 },
            ..Item::default()
        });
        w
    }

    #[test]
    fn swap_moves_splits_and_swaps() {
        let w = world();
        let mut inv = empty();
        inv[14] = Some(instance(&w.items[2], 5));
        // Split 2 off into an empty slot: a copy with 2, 3 left.
        swap(&mut inv, &w, &human(), 14, 20, 2).unwrap();
        assert_eq!(inv[14].as_ref().map(|s| s.amount), Some(3));
        assert_eq!(inv[20].as_ref().map(|s| s.amount), Some(2));
        // Amount 0 moves the whole stack.
        swap(&mut inv, &w, &human(), 14, 30, 0).unwrap();
        assert_eq!(inv[14], None);
        assert_eq!(inv[30].as_ref().map(|s| s.amount), Some(3));
        // Onto an occupied slot: a full swap.
        inv[15] = Some(instance(&w.items[0], 1));
        swap(&mut inv, &w, &human(), 15, 30, 1).unwrap();
        assert_eq!(inv[15].as_ref().map(|s| (s.item, s.amount)), Some((2, 3)));
        assert_eq!(inv[30].as_ref().map(|s| s.item), Some(0));
        // Equip the sword.
        swap(&mut inv, &w, &human(), 30, WEAPON, 0).unwrap();
        assert_eq!(inv[WEAPON].as_ref().map(|s| s.item), Some(0));
    }

    #[test]
    fn swap_refusals_change_nothing() {
        let w = world_with_axe();
        let mut inv = empty();
        inv[14] = Some(instance(&w.items[2], 5));
        inv[15] = Some(instance(&w.items[0], 1));
        inv[16] = Some(instance(&w.items[1], 1));
        inv[WEAPON] = Some(instance(&w.items[3], 1));
        inv[17] = Some(instance(&w.items[4], 1));
        let before = inv.clone();
        let h = human();
        let cases: &[(usize, usize, u16, InventoryError)] = &[
            (14, 14, 1, InventoryError::BadSlot),
            (14, 46, 1, InventoryError::BadSlot),
            (46, 14, 1, InventoryError::BadSlot),
            (20, 21, 0, InventoryError::BadSlot),
            (14, 20, 6, InventoryError::BadAmount),
            // A potion is no weapon; a stack never goes into an equipment slot.
            (14, WEAPON, 1, InventoryError::BadSlot),
            // A sword does not fit the hat slot.
            (15, HAT, 0, InventoryError::BadSlot),
            // A two-handed axe is worn: no shield.
            (17, SHIELD, 0, InventoryError::TwoHanded),
        ];
        for &(from, to, amount, err) in cases {
            assert_eq!(
                swap(&mut inv, &w, &h, from, to, amount),
                Err(err),
                "{from}->{to}"
            );
            assert_eq!(inv, before);
        }
        // The other way round: a shield worn, the axe refused.
        let mut inv = empty();
        inv[SHIELD] = Some(instance(&w.items[4], 1));
        inv[14] = Some(instance(&w.items[3], 1));
        assert_eq!(
            swap(&mut inv, &w, &h, 14, WEAPON, 0),
            Err(InventoryError::TwoHanded)
        );
        // An elf may not wear the human helmet.
        let elf = Wearer { race: "Elf", ..h };
        let mut inv = empty();
        inv[14] = Some(instance(&w.items[1], 1));
        assert_eq!(
            swap(&mut inv, &w, &elf, 14, HAT, 0),
            Err(InventoryError::BadSlot)
        );
        assert!(swap(&mut inv, &w, &h, 14, HAT, 0).is_ok());
    }

    #[test]
    fn a_stack_of_two_never_lands_in_an_equipment_slot() {
        let mut w = world();
        w.items[0].stackable = true;
        let mut inv = empty();
        inv[14] = Some(instance(&w.items[0], 2));
        assert_eq!(
            swap(&mut inv, &w, &human(), 14, WEAPON, 0),
            Err(InventoryError::BadAmount)
        );
        swap(&mut inv, &w, &human(), 14, WEAPON, 1).unwrap();
        assert_eq!(inv[WEAPON].as_ref().map(|s| s.amount), Some(1));
        // Swapping a stack of two in for the worn one is refused too.
        inv[15] = Some(instance(&w.items[0], 2));
        assert_eq!(
            swap(&mut inv, &w, &human(), WEAPON, 15, 0),
            Err(InventoryError::BadAmount)
        );
    }

    #[test]
    fn merge_needs_identical_stackable_backpack_stacks() {
        let w = world();
        let mut inv = empty();
        inv[14] = Some(instance(&w.items[2], 5));
        inv[15] = Some(instance(&w.items[2], 1));
        merge(&mut inv, &w, &human(), 14, 15, 3).unwrap();
        assert_eq!(inv[14].as_ref().map(|s| s.amount), Some(2));
        assert_eq!(inv[15].as_ref().map(|s| s.amount), Some(4));
        merge(&mut inv, &w, &human(), 14, 15, 2).unwrap();
        assert_eq!(inv[14], None);
        assert_eq!(inv[15].as_ref().map(|s| s.amount), Some(6));
        // Swords are not stackable (Realm Crafter merged them anyway).
        inv[16] = Some(instance(&w.items[0], 1));
        inv[17] = Some(instance(&w.items[0], 1));
        let before = inv.clone();
        assert_eq!(
            merge(&mut inv, &w, &human(), 16, 17, 1),
            Err(InventoryError::BadSlot)
        );
        // Different health: not identical.
        inv[18] = Some(InvSlot {
            health: 50,
            ..instance(&w.items[2], 1)
        });
        let before2 = inv.clone();
        assert_eq!(
            merge(&mut inv, &w, &human(), 18, 15, 1),
            Err(InventoryError::BadSlot)
        );
        assert_eq!(inv, before2);
        inv = before;
        // Onto an equipment slot, an empty slot, zero or too many.
        for (from, to, n) in [(15, WEAPON, 1), (15, 20, 1), (15, 16, 1), (15, 15, 1)] {
            assert!(merge(&mut inv, &w, &human(), from, to, n).is_err());
        }
        inv[20] = Some(instance(&w.items[2], 1));
        assert_eq!(
            merge(&mut inv, &w, &human(), 15, 20, 0),
            Err(InventoryError::BadAmount)
        );
        assert_eq!(
            merge(&mut inv, &w, &human(), 15, 20, 7),
            Err(InventoryError::BadAmount)
        );
        // Past the cap: refused, nothing lost.
        inv[21] = Some(instance(&w.items[2], STACK_MAX));
        assert_eq!(
            merge(&mut inv, &w, &human(), 15, 21, 1),
            Err(InventoryError::Full)
        );
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        #[derive(Debug, Clone)]
        enum Op {
            Swap(usize, usize, u16),
            Merge(usize, usize, u16),
            Take(usize, u16),
            Give(u16, u16),
        }

        fn op() -> impl Strategy<Value = Op> {
            let slot = 0usize..48;
            prop_oneof![
                (slot.clone(), slot.clone(), 0u16..8).prop_map(|(a, b, n)| Op::Swap(a, b, n)),
                (slot.clone(), slot.clone(), 0u16..8).prop_map(|(a, b, n)| Op::Merge(a, b, n)),
                (slot, 0u16..8).prop_map(|(a, n)| Op::Take(a, n)),
                (0u16..6, 1u16..6).prop_map(|(i, n)| Op::Give(i, n)),
            ]
        }

        fn totals(inv: &[Option<InvSlot>]) -> [u32; 5] {
            let mut t = [0u32; 5];
            for s in inv.iter().flatten() {
                if let Some(c) = t.get_mut(usize::from(s.item)) {
                    *c += u32::from(s.amount);
                }
            }
            t
        }

        fn rules_hold(inv: &[Option<InvSlot>], w: &World, h: &Wearer<'_>) -> bool {
            inv.len() == SLOTS
                && !two_handed_with_shield(inv, w)
                && inv.iter().enumerate().all(|(slot, s)| match s {
                    None => true,
                    Some(s) => {
                        let t = w.item(s.item);
                        s.amount >= 1
                            && s.amount <= STACK_MAX
                            && (!is_equipment(slot) || s.amount == 1)
                            && t.is_some_and(|t| fits(h, slot, t))
                    }
                })
        }

        proptest! {
            /// Any sequence of swaps, merges, takes and gives conserves each item's
            /// count (a take removes exactly what it returns, a give adds exactly what it
            /// placed) and never breaks the slot rules.
            #[test]
            fn moves_conserve_items_and_keep_the_rules(ops in proptest::collection::vec(op(), 1..60)) {
                let w = world_with_axe();
                let h = human();
                let mut inv = empty();
                for op in ops {
                    let before = inv.clone();
                    let mut expect = totals(&inv);
                    let res = match op {
                        Op::Swap(a, b, n) => swap(&mut inv, &w, &h, a, b, n),
                        Op::Merge(a, b, n) => merge(&mut inv, &w, &h, a, b, n),
                        Op::Take(a, n) => take(&mut inv, a, n).map(|t| {
                            if let Some(c) = expect.get_mut(usize::from(t.item)) {
                                *c -= u32::from(t.amount);
                            }
                        }),
                        Op::Give(i, n) => {
                            let t = w.item(i).cloned();
                            match t {
                                Some(t) => {
                                    give(&mut inv, &w, &h, instance(&t, n)).map(|p| {
                                        let placed: u32 = p.iter().map(|p| u32::from(p.amount)).sum();
                                        if let Some(c) = expect.get_mut(usize::from(i)) {
                                            *c += placed;
                                        }
                                    })
                                }
                                None => Err(InventoryError::UnknownItem),
                            }
                        }
                    };
                    if res.is_err() {
                        prop_assert_eq!(&inv, &before);
                    }
                    prop_assert_eq!(totals(&inv), expect);
                    prop_assert!(rules_hold(&inv, &w, &h), "{:?}", inv);
                }
            }
        }
    }
}
