//! The economy's totals in a store (`gateway economy`): every item (by template) and the
//! gold over the characters, and every item stored on the ground. Items move between
//! players and the ground (trades, drops, pickups) without changing these totals; only
//! the world's sources and sinks (shops, loot, eating, scripts) do. An operator compares two
//! readings to audit a crash or a failover: atomic checkpoint groups keep a stored state
//! consistent, so a fault may take progress back to a checkpoint but never makes or loses
//! an item or a coin.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Record, StoredGround};

/// The totals of a store, or of the characters whose names start with a prefix.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct Economy {
    /// Characters counted.
    pub characters: u64,
    /// Their gold.
    pub gold: i64,
    /// Their items, by template id (worn, backpack, every slot).
    pub items: BTreeMap<u16, u64>,
    /// Items on the ground of every instance, by template id.
    pub ground: BTreeMap<u16, u64>,
    /// Every item, the characters' and the ground's, by template id.
    pub total: BTreeMap<u16, u64>,
}

/// Sums `records`' characters (those named with `prefix`, when given) and all of
/// `ground`.
pub fn totals(records: &[Record], ground: &StoredGround, prefix: Option<&str>) -> Economy {
    let mut e = Economy::default();
    let counted = |name: &str| prefix.is_none_or(|p| name.starts_with(p));
    for (_, characters) in records {
        for c in characters.iter().filter(|c| counted(&c.name)) {
            e.characters += 1;
            e.gold += i64::from(c.gold);
            for slot in c.inventory.iter().flatten() {
                *e.items.entry(slot.item).or_default() += u64::from(slot.amount);
            }
        }
    }
    for items in ground.values() {
        for g in items {
            *e.ground.entry(g.item.item).or_default() += u64::from(g.item.amount);
        }
    }
    e.total = e.items.clone();
    for (&id, &n) in &e.ground {
        *e.total.entry(id).or_default() += n;
    }
    e
}

#[cfg(test)]
mod tests {
    use shared::internal::{ActorStateDto, GroundItemDto, InstanceKey, InvSlotDto};

    use super::*;
    use crate::session::{AccountRow, AccountStatus};

    fn account(id: u64) -> AccountRow {
        AccountRow {
            id,
            user: format!("u{id}"),
            password_hash: String::new(),
            email: String::new(),
            is_dm: false,
            banned: false,
            ignore: Vec::new(),
            status: AccountStatus::default(),
        }
    }

    fn slot(item: u16, amount: u16) -> Option<InvSlotDto> {
        Some(InvSlotDto {
            item,
            attributes: Vec::new(),
            health: 100,
            amount,
        })
    }

    fn character(name: &str, gold: i32, inventory: Vec<Option<InvSlotDto>>) -> ActorStateDto {
        ActorStateDto {
            name: name.into(),
            gold,
            inventory,
            ..ActorStateDto::default()
        }
    }

    #[test]
    fn items_and_gold_are_summed_over_characters_and_the_ground() {
        let records = vec![
            (
                account(1),
                vec![
                    character("bot1", 10, vec![slot(20, 3), None, slot(5, 1)]),
                    character("other", 99, vec![slot(20, 7)]),
                ],
            ),
            (account(2), vec![character("bot2", 5, vec![slot(20, 2)])]),
        ];
        let mut ground = StoredGround::new();
        ground.insert(
            InstanceKey {
                area: "Meadow".into(),
                instance: 0,
            },
            vec![GroundItemDto {
                item: InvSlotDto {
                    item: 20,
                    attributes: Vec::new(),
                    health: 100,
                    amount: 4,
                },
                x: 0.0,
                y: 0.0,
                z: 0.0,
                remaining_ms: 1,
            }],
        );
        let e = totals(&records, &ground, Some("bot"));
        assert_eq!(e.characters, 2);
        assert_eq!(e.gold, 15);
        assert_eq!(e.items, BTreeMap::from([(5, 1), (20, 5)]));
        assert_eq!(e.ground, BTreeMap::from([(20, 4)]));
        assert_eq!(e.total, BTreeMap::from([(5, 1), (20, 9)]));
        let all = totals(&records, &ground, None);
        assert_eq!((all.characters, all.gold), (3, 114));
    }
}
