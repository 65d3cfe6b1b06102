//! Building the `P_FetchActors` catalogue blocks from the [`World`] and the
//! `P_FetchCharacter` blocks from a character (reference §5 steps 3 and 5), as
//! `shared::proto` values.

use shared::content::World;
use shared::content::model::{ActorEnvironment, Genders, ItemKind, TradeMode, WeaponType};
use shared::internal::ActorStateDto;
use shared::proto::catalogue::{
    ActorTemplateDef, AttributeDef, AttributePair, FactionDef, FetchActorsReply, ItemDef, ItemTail,
    MonthDef, SeasonDef,
};
use shared::proto::character::{
    FetchCharacterReply, InventorySlot, ItemString, KnownSpell, QuestEntry,
};
use shared::wire::RcString;

use super::accounts::latin1_bytes;

/// Items per `"IN"` block.
const ITEMS_PER_BLOCK: usize = 6;
/// Actor templates per `"N"` block.
const ACTORS_PER_BLOCK: usize = 2;
/// Budget of an `"F"` faction block.
const FACTION_BLOCK_BYTES: usize = 800;
/// Budgets of the character blocks.
const INVENTORY_BLOCK_BYTES: usize = 999;
const SPELL_BLOCK_BYTES: usize = 1000;
const QUEST_BLOCK_BYTES: usize = 700;
/// Inventory slots sent.
pub const INVENTORY_SLOTS: usize = 46;

fn s(text: &str) -> RcString {
    RcString(latin1_bytes(text))
}

fn u8c(v: i32) -> u8 {
    u8::try_from(v.clamp(0, 255)).unwrap_or(0)
}

fn u16c(v: i32) -> u16 {
    u16::try_from(v.clamp(0, 65535)).unwrap_or(0)
}

fn fixed<T: Clone + Default, const N: usize>(v: &[T]) -> Vec<T> {
    (0..N)
        .map(|i| v.get(i).cloned().unwrap_or_default())
        .collect()
}

/// Splits `items` into chunks whose estimated size stays within `budget` (at least one item
/// per chunk).
fn chunk_by_size<T>(items: Vec<T>, budget: usize, size: impl Fn(&T) -> usize) -> Vec<Vec<T>> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    let mut used = 0;
    for it in items {
        let n = size(&it);
        if !cur.is_empty() && used + n > budget {
            out.push(std::mem::take(&mut cur));
            used = 0;
        }
        used += n;
        cur.push(it);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn item_def(item: &shared::content::model::Item) -> ItemDef {
    let (tail, misc) = match &item.kind {
        ItemKind::Weapon {
            damage,
            damage_type,
            weapon_type,
            range,
            ..
        } => (
            ItemTail::Weapon {
                damage: *damage,
                damage_type: *damage_type,
                weapon_type: match weapon_type {
                    WeaponType::OneHanded => 1,
                    WeaponType::TwoHanded => 2,
                    WeaponType::Ranged => 3,
                },
                range: *range,
            },
            String::new(),
        ),
        ItemKind::Armour { level } => (ItemTail::Armour { level: *level }, String::new()),
        ItemKind::Potion { secs } | ItemKind::Ingredient { secs } => {
            (ItemTail::Consumable { seconds: *secs }, String::new())
        }
        ItemKind::Image { id } => (ItemTail::Image { image_id: *id }, String::new()),
        ItemKind::Ring => (ItemTail::None, String::new()),
        ItemKind::Other { misc } => (ItemTail::None, misc.clone()),
    };
    ItemDef {
        id: item.id,
        item_type: item.kind.type_number(),
        takes_damage: u8::from(item.takes_damage),
        value: u32::try_from(item.value.max(0)).unwrap_or(0),
        mass: item.mass,
        thumb: item.thumbnail,
        gubbins: item
            .gubbins
            .map(|g| u8::try_from(g.min(255)).unwrap_or(255)),
        male_mesh: item.male_mesh,
        female_mesh: item.female_mesh,
        slot_type: item.slot_type,
        stackable: u8::from(item.stackable),
        attributes: (0..40)
            .map(|i| {
                u16c(
                    item.attributes
                        .get(i)
                        .copied()
                        .unwrap_or(0)
                        .saturating_add(5000),
                )
            })
            .collect(),
        name: s(&item.name),
        exclusive_race: s(&item.exclusive_race),
        exclusive_class: s(&item.exclusive_class),
        tail,
        misc: s(&misc),
    }
}

fn actor_def(a: &shared::content::model::ActorTemplate) -> ActorTemplateDef {
    ActorTemplateDef {
        id: a.id,
        playable: u8::from(a.playable),
        poly_collision: u8::from(a.poly_collision),
        meshes: a.meshes,
        beards: a.beards,
        male_hair: a.male_hairs,
        female_hair: a.female_hairs,
        male_faces: a.male_faces,
        female_faces: a.female_faces,
        male_bodies: a.male_bodies,
        female_bodies: a.female_bodies,
        male_speech: a.male_speech,
        female_speech: a.female_speech,
        rideable: u8::from(a.rideable),
        trade: match a.trade_mode {
            TradeMode::No => 0,
            TradeMode::Free => 1,
            TradeMode::Shop => 2,
        },
        blood: a.blood,
        aggressiveness: a.aggressiveness.as_u8(),
        genders: match a.genders {
            Genders::Both => 0,
            Genders::Male => 1,
            Genders::Female => 2,
            Genders::None => 3,
        },
        environment: match a.environment {
            ActorEnvironment::Amphibious => 0,
            ActorEnvironment::Swim => 1,
            ActorEnvironment::Fly => 2,
            ActorEnvironment::Walk => 3,
        },
        inventory_slots: u16::try_from(a.inventory_slots & 0xFFFF).unwrap_or(0),
        male_anim: a.male_anim,
        female_anim: a.female_anim,
        scale: a.scale,
        faction: a.home_faction,
        attributes: (0..40)
            .map(|i| {
                let p = a.attributes.get(i).copied().unwrap_or_default();
                AttributePair {
                    value: p.value,
                    max: p.max,
                }
            })
            .collect(),
        race: s(&a.race),
        class: s(&a.class),
        description: s(&a.description),
    }
}

/// The `P_FetchActors` blocks in order: `"A"`, `"D"`, `"E"`, `"IN"`…, `"IY"`, `"F"`…,
/// `"N"`…, `"Y"`.
pub fn catalogue_blocks(world: &World) -> Vec<FetchActorsReply> {
    catalogue_blocks_env(world, &world.environment)
}

/// [`catalogue_blocks`] with the clock block `"E"` carrying the game time at real time
/// `now_ms` of the clock that read `Environment.dat`'s stored time at `epoch_ms` (both Unix
/// ms; `shared::clock`), rounded to the nearest minute, with the TimeFactor the cluster
/// runs at (1..=255) and the calendar's defaults filled in
/// ([`GameClock::login_environment_at`](shared::clock::GameClock::login_environment_at)).
/// Realm Crafter sends the clock only here and never resyncs; neither do we (no stock
/// client parses a clock packet): this block is what keeps the client within a minute.
pub fn catalogue_blocks_at(world: &World, epoch_ms: u64, now_ms: u64) -> Vec<FetchActorsReply> {
    let clock = shared::clock::GameClock::new(&world.environment, epoch_ms);
    catalogue_blocks_env(world, &clock.login_environment_at(now_ms))
}

fn catalogue_blocks_env(
    world: &World,
    env: &shared::content::model::Environment,
) -> Vec<FetchActorsReply> {
    let mut out = Vec::new();
    out.push(FetchActorsReply::Attributes {
        assignment: world.attributes.assignment_points,
        attributes: fixed::<_, 40>(&world.attributes.defs)
            .into_iter()
            .map(|d: shared::content::model::AttributeDef| AttributeDef {
                is_skill: u8::from(d.is_skill),
                hidden: u8::from(d.hidden),
                name: s(&d.name),
            })
            .collect(),
    });
    out.push(FetchActorsReply::DamageTypes {
        names: fixed::<_, 20>(&world.damage_types)
            .iter()
            .map(|n: &String| s(n))
            .collect(),
    });
    out.push(FetchActorsReply::Environment {
        year: u32::try_from(env.year.max(0)).unwrap_or(0),
        day: u16c(env.day),
        hour: u8c(env.hour),
        minute: u8c(env.minute),
        // 1..=255: never a 0 the client divides by, never a low byte of a larger factor.
        time_factor: shared::clock::effective_time_factor(env.time_factor),
        seasons: fixed::<_, 12>(&env.seasons)
            .iter()
            .map(|x: &shared::content::model::Season| SeasonDef {
                name: s(&x.name),
                start_day: u16c(x.start_day),
                dusk_hour: u8c(x.dusk_hour),
                dawn_hour: u8c(x.dawn_hour),
            })
            .collect(),
        months: fixed::<_, 20>(&env.months)
            .iter()
            .map(|x: &shared::content::model::Month| MonthDef {
                name: s(&x.name),
                start_day: u16c(x.start_day),
            })
            .collect(),
    });
    let items: Vec<ItemDef> = world.items.iter().map(item_def).collect();
    let n_items = u16::try_from(items.len()).unwrap_or(u16::MAX);
    for chunk in items.chunks(ITEMS_PER_BLOCK) {
        out.push(FetchActorsReply::Items {
            items: chunk.to_vec(),
        });
    }
    out.push(FetchActorsReply::ItemsDone { total: n_items });
    let factions: Vec<FactionDef> = world
        .factions
        .names
        .iter()
        .enumerate()
        .filter(|(_, n)| !n.is_empty())
        .filter_map(|(i, n)| {
            Some(FactionDef {
                index: u8::try_from(i).ok()?,
                name: s(n),
            })
        })
        .collect();
    for chunk in chunk_by_size(factions, FACTION_BLOCK_BYTES, |f| 2 + f.name.len()) {
        out.push(FetchActorsReply::Factions { factions: chunk });
    }
    let actors: Vec<ActorTemplateDef> = world.actors.iter().map(actor_def).collect();
    let n_actors = u16::try_from(actors.len()).unwrap_or(u16::MAX);
    for chunk in actors.chunks(ACTORS_PER_BLOCK) {
        out.push(FetchActorsReply::Actors {
            actors: chunk.to_vec(),
        });
    }
    out.push(FetchActorsReply::ActorsDone { total: n_actors });
    out
}

/// The `P_FetchCharacter` blocks: `"C1"`, `"C3"`…, `"S"`…, `"Q"`…, `"F"`.
pub fn character_blocks(world: &World, c: &ActorStateDto) -> Vec<FetchCharacterReply> {
    let mut out = Vec::new();
    out.push(FetchCharacterReply::Stats {
        gold: u32::try_from(c.gold.max(0)).unwrap_or(0),
        reputation: i16::try_from(c.reputation.clamp(-32768, 32767)).unwrap_or(0),
        level: c.level,
        xp: c.xp,
        home_faction: c.home_faction,
        attributes: (0..40)
            .map(|i| AttributePair {
                value: u16c(c.attributes.get(i).copied().unwrap_or(0)),
                max: u16c(c.attribute_max.get(i).copied().unwrap_or(0)),
            })
            .collect(),
    });
    let slots: Vec<Option<InventorySlot>> = (0..INVENTORY_SLOTS)
        .map(|i| {
            let slot = c.inventory.get(i)?.as_ref()?;
            Some(InventorySlot {
                slot: u8::try_from(i).ok()?,
                item: ItemString {
                    item_id: slot.item,
                    attributes: (0..40)
                        .map(|k| {
                            u16c(
                                slot.attributes
                                    .get(k)
                                    .copied()
                                    .unwrap_or(0)
                                    .saturating_add(5000),
                            )
                        })
                        .collect(),
                    health: slot.health,
                },
                amount: slot.amount,
            })
        })
        .collect();
    for chunk in chunk_by_size(slots, INVENTORY_BLOCK_BYTES, |s| {
        if s.is_some() {
            1 + ItemString::LEN + 2
        } else {
            1
        }
    }) {
        out.push(FetchCharacterReply::Inventory { slots: chunk });
    }
    let spells: Vec<KnownSpell> = c
        .known_spells
        .iter()
        .map(|k| {
            let def = world.spells.iter().find(|sp| sp.id == k.id);
            KnownSpell {
                level: k.level,
                id: k.id,
                thumb: def.map_or(0, |d| d.thumbnail),
                recharge: def.map_or(0, |d| u16c(d.recharge_ms)),
                name: def.map_or_else(RcString::default, |d| s(&d.name)),
                description: def.map_or_else(RcString::default, |d| s(&d.description)),
                memorised: u8::from(c.memorised.contains(&k.id)),
            }
        })
        .collect();
    let n_spells = u16::try_from(spells.len()).unwrap_or(u16::MAX);
    for chunk in chunk_by_size(spells, SPELL_BLOCK_BYTES, |k| {
        13 + k.name.len() + k.description.len()
    }) {
        out.push(FetchCharacterReply::Spells { spells: chunk });
    }
    let quests: Vec<QuestEntry> = c
        .quests
        .iter()
        .filter(|(name, _)| !name.is_empty())
        .map(|(name, status)| QuestEntry {
            name: s(name),
            status: s(status),
        })
        .collect();
    let n_quests = u16::try_from(quests.len()).unwrap_or(u16::MAX);
    for chunk in chunk_by_size(quests, QUEST_BLOCK_BYTES, |q| {
        3 + q.name.len() + q.status.len()
    }) {
        out.push(FetchCharacterReply::Quests { quests: chunk });
    }
    out.push(FetchCharacterReply::Finished {
        quests: n_quests,
        spells: n_spells,
    });
    out
}

#[cfg(test)]
mod clock_tests {
    use super::*;

    /// The login clock block carries the game time now, not the stored start.
    #[test]
    fn clock_block_carries_the_current_time() {
        let world = World::default();
        // 90 game minutes (6 s each at the default factor 10) after 12:00 of day 1.
        let blocks = catalogue_blocks_at(&world, 1_000, 1_000 + 90 * 6_000);
        assert_eq!(clock_block(&blocks), (1, 1, 13, 30, 10));
        // Half a minute (3 s) into 13:30 it already says 13:31: the nearest minute.
        let blocks = catalogue_blocks_at(&world, 1_000, 1_000 + 90 * 6_000 + 3_000);
        assert_eq!(clock_block(&blocks), (1, 1, 13, 31, 10));
    }

    fn clock_block(blocks: &[FetchActorsReply]) -> (u32, u16, u8, u8, u8) {
        blocks
            .iter()
            .find_map(|b| match b {
                FetchActorsReply::Environment {
                    year,
                    day,
                    hour,
                    minute,
                    time_factor,
                    ..
                } => Some((*year, *day, *hour, *minute, *time_factor)),
                _ => None,
            })
            .expect("a clock block")
    }

    /// A stored TimeFactor above 255 (or below 1) is sent as what the cluster runs at.
    #[test]
    fn clock_block_time_factor_is_what_the_cluster_runs_at() {
        for (stored, sent) in [(1000, 255), (256, 255), (255, 255), (0, 10), (-3, 10)] {
            let mut world = World::default();
            world.environment.time_factor = stored;
            assert_eq!(clock_block(&catalogue_blocks_at(&world, 0, 0)).4, sent);
            assert_eq!(clock_block(&catalogue_blocks(&world)).4, sent);
        }
    }
}
