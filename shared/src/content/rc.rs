//! Realm Crafter `Server Data` binary parsers: pure functions over byte slices, no I/O.
//!
//! Layouts follow the spec §10 (little-endian Blitz binary; strings are `i32 len + bytes`,
//! decoded as Latin-1). Every parser consumes its input exactly: trailing bytes are an
//! error. Errors name the file, the record and the problem; nothing here panics on any
//! input (see the property tests).

use super::error::{ContentError, ContentWarning};
use super::model::*;

/// File name of the Misc settings (its presence marks a `Server Data` directory).
pub const MISC_FILE: &str = "Misc.dat";
/// File name of the actor templates.
pub const ACTORS_FILE: &str = "Actors.dat";
/// File name of the items.
pub const ITEMS_FILE: &str = "Items.dat";
/// File name of the spells.
pub const SPELLS_FILE: &str = "Spells.dat";
/// File name of the projectiles.
pub const PROJECTILES_FILE: &str = "Projectiles.dat";
/// File name of the factions.
pub const FACTIONS_FILE: &str = "Factions.dat";
/// File name of the attribute definitions.
pub const ATTRIBUTES_FILE: &str = "Attributes.dat";
/// File name of the engine-bound attribute indices.
pub const FIXED_ATTRIBUTES_FILE: &str = "Fixed Attributes.dat";
/// File name of the damage type names.
pub const DAMAGE_FILE: &str = "Damage.dat";
/// File name of the game clock and calendar.
pub const ENVIRONMENT_FILE: &str = "Environment.dat";
/// File name of the banned name substrings.
pub const NAMES_FILTER_FILE: &str = "Names Filter.txt";
/// File name of the client string table.
pub const LANGUAGE_FILE: &str = "Language.txt";
/// Directory holding one `<Name>.dat` per area.
pub const AREAS_DIR: &str = "Areas";

/// A cursor over one file's bytes. Reads return a problem text (with the byte offset)
/// that the record wrapper turns into a [`ContentError`].
struct Reader<'a> {
    file: &'a str,
    data: &'a [u8],
    pos: usize,
}

type Step<T> = Result<T, String>;

impl<'a> Reader<'a> {
    fn new(file: &'a str, data: &'a [u8]) -> Self {
        Self { file, data, pos: 0 }
    }

    fn at_end(&self) -> bool {
        self.pos >= self.data.len()
    }

    fn take(&mut self, n: usize, what: &str) -> Step<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.data.len())
            .ok_or_else(|| {
                format!(
                    "file truncated reading {what} ({n} bytes at byte {}, file is {} bytes)",
                    self.pos,
                    self.data.len()
                )
            })?;
        let s = self.data.get(self.pos..end).ok_or("internal range error")?;
        self.pos = end;
        Ok(s)
    }

    fn arr<const N: usize>(&mut self, what: &str) -> Step<[u8; N]> {
        let s = self.take(N, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    fn u8(&mut self, what: &str) -> Step<u8> {
        let [b] = self.arr::<1>(what)?;
        Ok(b)
    }

    fn bool(&mut self, what: &str) -> Step<bool> {
        Ok(self.u8(what)? != 0)
    }

    fn u16(&mut self, what: &str) -> Step<u16> {
        Ok(u16::from_le_bytes(self.arr(what)?))
    }

    fn i32(&mut self, what: &str) -> Step<i32> {
        Ok(i32::from_le_bytes(self.arr(what)?))
    }

    fn f32(&mut self, what: &str) -> Step<f32> {
        Ok(f32::from_le_bytes(self.arr(what)?))
    }

    fn u16s<const N: usize>(&mut self, what: &str) -> Step<[u16; N]> {
        let mut out = [0u16; N];
        for v in &mut out {
            *v = self.u16(what)?;
        }
        Ok(out)
    }

    /// A Blitz file string: `i32` length then that many Latin-1 bytes.
    fn string(&mut self, what: &str) -> Step<String> {
        let at = self.pos;
        let len = self.i32(what)?;
        let len = usize::try_from(len)
            .map_err(|_| format!("{what}: string length {len} at byte {at} is negative"))?;
        if len > self.data.len().saturating_sub(self.pos) {
            return Err(format!(
                "{what}: string length {len} at byte {at} runs past the end of the file ({} bytes)",
                self.data.len()
            ));
        }
        let bytes = self.take(len, what)?;
        Ok(latin1(bytes))
    }

    /// Runs `f` for one record, naming it in any error.
    fn record<T>(
        &mut self,
        record: impl FnOnce() -> String,
        f: impl FnOnce(&mut Self) -> Step<T>,
    ) -> Result<T, ContentError> {
        f(self).map_err(|problem| ContentError::new(self.file, record(), problem))
    }

    fn finish(&self) -> Result<(), ContentError> {
        if self.at_end() {
            Ok(())
        } else {
            Err(ContentError::new(
                self.file,
                "",
                format!(
                    "{} unexpected trailing bytes at byte {}",
                    self.data.len().saturating_sub(self.pos),
                    self.pos
                ),
            ))
        }
    }
}

/// Decodes Latin-1 bytes (every byte is the code point of the same value).
pub fn latin1(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| char::from(b)).collect()
}

fn enum_value<T: Copy>(raw: u8, table: &[T], what: &str) -> Step<T> {
    table
        .get(usize::from(raw))
        .copied()
        .ok_or_else(|| format!("{what} {raw} is not one of 0..{}", table.len()))
}

// ---------------------------------------------------------------------------------------
// Areas
// ---------------------------------------------------------------------------------------

/// The label used in errors for an area file: `Areas/<name>.dat`.
pub fn area_file_label(name: &str) -> String {
    format!("{AREAS_DIR}/{name}.dat")
}

/// Parses one `Areas/<name>.dat`. `name` is the area name (the file stem).
///
/// Slots kept: triggers and portals that differ from an empty slot; waypoints that differ
/// from an empty slot (`0,0,0`, no links, no pause) or are referenced by a kept spawn or
/// waypoint link; spawn points with `max > 0`. Every water volume is kept.
#[doc(alias = "LoadArea")]
pub fn parse_area(name: &str, data: &[u8]) -> Result<Area, ContentError> {
    let file = area_file_label(name);
    let mut r = Reader::new(&file, data);
    let mut area = r.record(
        || "header".into(),
        |r| {
            let mut weather_chances = [0u8; 5];
            for w in &mut weather_chances {
                *w = r.u8("weather chance")?;
            }
            Ok(Area {
                name: name.to_string(),
                weather_chances,
                entry_script: r.string("entry script")?,
                exit_script: r.string("exit script")?,
                pvp: r.bool("pvp")?,
                gravity: r.u16("gravity")?,
                outdoors: r.bool("outdoors")?,
                weather_link: r.string("weather link")?,
                ..Area::default()
            })
        },
    )?;
    for i in 0..TRIGGER_SLOTS as u16 {
        let t = r.record(
            || format!("trigger {i}"),
            |r| {
                Ok(Trigger {
                    index: i,
                    x: r.f32("x")?,
                    y: r.f32("y")?,
                    z: r.f32("z")?,
                    size: r.f32("size")?,
                    script: r.string("script")?,
                    method: r.string("method")?,
                })
            },
        )?;
        if t != (Trigger {
            index: i,
            ..Trigger::default()
        }) {
            area.triggers.push(t);
        }
    }
    let mut all_waypoints = Vec::with_capacity(WAYPOINT_SLOTS);
    for i in 0..WAYPOINT_SLOTS as u16 {
        let w = r.record(
            || format!("waypoint {i}"),
            |r| {
                Ok(Waypoint {
                    index: i,
                    x: r.f32("x")?,
                    y: r.f32("y")?,
                    z: r.f32("z")?,
                    next_a: Waypoint::link_from_raw(r.u16("next waypoint A")?),
                    next_b: Waypoint::link_from_raw(r.u16("next waypoint B")?),
                    prev: Waypoint::link_from_raw(r.u16("previous waypoint")?),
                    pause_secs: r.i32("pause")?,
                })
            },
        )?;
        all_waypoints.push(w);
    }
    for i in 0..PORTAL_SLOTS as u16 {
        let p = r.record(
            || format!("portal {i}"),
            |r| {
                Ok(Portal {
                    index: i,
                    name: r.string("name")?,
                    link_area: r.string("link area")?,
                    link_name: r.string("link name")?,
                    x: r.f32("x")?,
                    y: r.f32("y")?,
                    z: r.f32("z")?,
                    size: r.f32("size")?,
                    yaw: r.f32("yaw")?,
                })
            },
        )?;
        if p != (Portal {
            index: i,
            ..Portal::default()
        }) {
            area.portals.push(p);
        }
    }
    for i in 0..SPAWN_SLOTS as u16 {
        let s = r.record(
            || format!("spawn {i}"),
            |r| {
                Ok(SpawnPoint {
                    index: i,
                    template: r.u16("actor id")?,
                    waypoint: r.u16("waypoint")?,
                    size: r.f32("size")?,
                    spawn_script: r.string("spawn script")?,
                    actor_script: r.string("actor script")?,
                    death_script: r.string("death script")?,
                    max: r.u16("max")?,
                    frequency_secs: r.u16("frequency")?,
                    range: r.f32("range")?,
                })
            },
        )?;
        if s.max > 0 {
            area.spawns.push(s);
        }
    }
    let n_water = r.record(|| "water count".into(), |r| r.u16("water count"))?;
    for i in 0..n_water {
        let w = r.record(
            || format!("water {i}"),
            |r| {
                Ok(Water {
                    x: r.f32("x")?,
                    y: r.f32("y")?,
                    z: r.f32("z")?,
                    width: r.f32("width")?,
                    depth: r.f32("depth")?,
                    damage: r.u16("damage")?,
                    damage_type: r.u16("damage type")?,
                })
            },
        )?;
        area.water.push(w);
    }
    r.finish()?;

    // Keep the used waypoints plus every waypoint something kept refers to.
    let mut keep = vec![false; WAYPOINT_SLOTS];
    for w in &all_waypoints {
        let empty = Waypoint {
            index: w.index,
            ..Waypoint::default()
        };
        if *w != empty {
            mark(&mut keep, w.index);
            for l in [w.next_a, w.next_b, w.prev].into_iter().flatten() {
                mark(&mut keep, l);
            }
        }
    }
    for s in &area.spawns {
        mark(&mut keep, s.waypoint);
    }
    area.waypoints = all_waypoints
        .into_iter()
        .zip(keep)
        .filter_map(|(w, k)| k.then_some(w))
        .collect();
    Ok(area)
}

fn mark(keep: &mut [bool], index: u16) {
    if let Some(k) = keep.get_mut(usize::from(index)) {
        *k = true;
    }
}

// ---------------------------------------------------------------------------------------
// Actors, items, spells, projectiles
// ---------------------------------------------------------------------------------------

/// Parses `Actors.dat` (records until end of file), sorted by id.
#[doc(alias = "LoadActors")]
pub fn parse_actors(data: &[u8]) -> Result<Vec<ActorTemplate>, ContentError> {
    let mut r = Reader::new(ACTORS_FILE, data);
    let mut out = Vec::new();
    let mut n = 0usize;
    while !r.at_end() {
        let start = r.pos;
        let t = r.record(
            || format!("actor record {n} (at byte {start})"),
            |r| {
                let mut t = ActorTemplate {
                    id: r.u16("id")?,
                    race: r.string("race")?,
                    class: r.string("class")?,
                    description: r.string("description")?,
                    start_area: r.string("start area")?,
                    start_portal: r.string("start portal")?,
                    male_anim: r.u16("male anim set")?,
                    female_anim: r.u16("female anim set")?,
                    scale: r.f32("scale")?,
                    radius: r.f32("radius")?,
                    meshes: r.u16s("meshes")?,
                    beards: r.u16s("beards")?,
                    male_hairs: r.u16s("male hairs")?,
                    female_hairs: r.u16s("female hairs")?,
                    male_faces: r.u16s("male faces")?,
                    female_faces: r.u16s("female faces")?,
                    male_bodies: r.u16s("male bodies")?,
                    female_bodies: r.u16s("female bodies")?,
                    male_speech: r.u16s("male speech")?,
                    female_speech: r.u16s("female speech")?,
                    blood: r.u16("blood")?,
                    ..ActorTemplate::default()
                };
                t.attributes.clear();
                for _ in 0..ATTRIBUTE_COUNT {
                    t.attributes.push(StatPair {
                        value: r.u16("attribute value")?,
                        max: r.u16("attribute max")?,
                    });
                }
                t.resistances = r.u16s("resistances")?;
                t.genders = enum_value(
                    r.u8("genders")?,
                    &[Genders::Both, Genders::Male, Genders::Female, Genders::None],
                    "genders",
                )?;
                t.playable = r.bool("playable")?;
                t.rideable = r.bool("rideable")?;
                t.aggressiveness = enum_value(
                    r.u8("aggressiveness")?,
                    &[
                        Aggressiveness::Passive,
                        Aggressiveness::Defensive,
                        Aggressiveness::Aggressive,
                        Aggressiveness::NonCombatant,
                    ],
                    "aggressiveness",
                )?;
                t.aggressive_range = r.i32("aggressive range")?;
                t.trade_mode = enum_value(
                    r.u8("trade mode")?,
                    &[TradeMode::No, TradeMode::Free, TradeMode::Shop],
                    "trade mode",
                )?;
                t.environment = enum_value(
                    r.u8("environment")?,
                    &[
                        ActorEnvironment::Amphibious,
                        ActorEnvironment::Swim,
                        ActorEnvironment::Fly,
                        ActorEnvironment::Walk,
                    ],
                    "environment",
                )?;
                t.inventory_slots = u32::from_le_bytes(r.i32("inventory slots")?.to_le_bytes());
                t.default_damage_type = r.u8("default damage type")?;
                t.home_faction = r.u8("home faction")?;
                t.xp_multiplier = r.i32("xp multiplier")?;
                t.poly_collision = r.bool("poly collision")?;
                Ok(t)
            },
        )?;
        out.push(t);
        n += 1;
    }
    sort_unique(ACTORS_FILE, "actor", &mut out, |t| t.id)?;
    Ok(out)
}

fn sort_unique<T>(
    file: &str,
    what: &str,
    v: &mut [T],
    key: impl Fn(&T) -> u16,
) -> Result<(), ContentError> {
    v.sort_by_key(&key);
    for pair in v.windows(2) {
        if let [a, b] = pair
            && key(a) == key(b)
        {
            return Err(ContentError::new(
                file,
                format!("{what} {}", key(a)),
                "id used by more than one record",
            ));
        }
    }
    Ok(())
}

/// Parses `Items.dat` (records until end of file), sorted by id.
#[doc(alias = "LoadItems")]
pub fn parse_items(data: &[u8]) -> Result<Vec<Item>, ContentError> {
    let mut r = Reader::new(ITEMS_FILE, data);
    let mut out = Vec::new();
    let mut n = 0usize;
    while !r.at_end() {
        let start = r.pos;
        let item = r.record(
            || format!("item record {n} (at byte {start})"),
            |r| {
                let mut it = Item {
                    id: r.u16("id")?,
                    name: r.string("name")?,
                    exclusive_race: r.string("exclusive race")?,
                    exclusive_class: r.string("exclusive class")?,
                    script: r.string("script")?,
                    method: r.string("method")?,
                    ..Item::default()
                };
                let kind = r.u8("item type")?;
                it.value = r.i32("value")?;
                it.mass = r.u16("mass")?;
                it.takes_damage = r.bool("takes damage")?;
                it.thumbnail = r.u16("thumbnail")?;
                it.gubbins = r.u16s("gubbins")?;
                it.male_mesh = r.u16("male mesh")?;
                it.female_mesh = r.u16("female mesh")?;
                it.slot_type = r.u16("slot type")?;
                it.stackable = r.bool("stackable")?;
                it.attributes.clear();
                for _ in 0..ATTRIBUTE_COUNT {
                    it.attributes
                        .push(i32::from(r.u16("attribute modifier")?) - 5000);
                }
                it.kind = match kind {
                    1 => ItemKind::Weapon {
                        damage: r.u16("weapon damage")?,
                        damage_type: r.u16("weapon damage type")?,
                        weapon_type: match r.u16("weapon type")? {
                            1 => WeaponType::OneHanded,
                            2 => WeaponType::TwoHanded,
                            3 => WeaponType::Ranged,
                            other => {
                                return Err(format!("weapon type {other} is not 1, 2 or 3"));
                            }
                        },
                        projectile: r.u16("ranged projectile")?,
                        range: r.f32("range")?,
                        anim: r.string("ranged animation")?,
                    },
                    2 => ItemKind::Armour {
                        level: r.u16("armour level")?,
                    },
                    3 => ItemKind::Ring,
                    4 => ItemKind::Potion {
                        secs: r.u16("effect seconds")?,
                    },
                    5 => ItemKind::Ingredient {
                        secs: r.u16("effect seconds")?,
                    },
                    6 => ItemKind::Image {
                        id: r.u16("image id")?,
                    },
                    7 => ItemKind::Other {
                        misc: r.string("misc data")?,
                    },
                    other => return Err(format!("item type {other} is not one of 1..7")),
                };
                Ok(it)
            },
        )?;
        out.push(item);
        n += 1;
    }
    sort_unique(ITEMS_FILE, "item", &mut out, |t| t.id)?;
    Ok(out)
}

/// Parses `Spells.dat` (records until end of file), sorted by id.
#[doc(alias = "LoadSpells")]
pub fn parse_spells(data: &[u8]) -> Result<Vec<Spell>, ContentError> {
    let mut r = Reader::new(SPELLS_FILE, data);
    let mut out = Vec::new();
    let mut n = 0usize;
    while !r.at_end() {
        let start = r.pos;
        let s = r.record(
            || format!("spell record {n} (at byte {start})"),
            |r| {
                Ok(Spell {
                    id: r.u16("id")?,
                    name: r.string("name")?,
                    description: r.string("description")?,
                    thumbnail: r.u16("thumbnail")?,
                    exclusive_race: r.string("exclusive race")?,
                    exclusive_class: r.string("exclusive class")?,
                    recharge_ms: r.i32("recharge time")?,
                    script: r.string("script")?,
                    method: r.string("method")?,
                })
            },
        )?;
        out.push(s);
        n += 1;
    }
    sort_unique(SPELLS_FILE, "spell", &mut out, |t| t.id)?;
    Ok(out)
}

/// Parses `Projectiles.dat` (records until end of file), sorted by id.
#[doc(alias = "LoadProjectiles")]
pub fn parse_projectiles(data: &[u8]) -> Result<Vec<Projectile>, ContentError> {
    let mut r = Reader::new(PROJECTILES_FILE, data);
    let mut out = Vec::new();
    let mut n = 0usize;
    while !r.at_end() {
        let start = r.pos;
        let p = r.record(
            || format!("projectile record {n} (at byte {start})"),
            |r| {
                Ok(Projectile {
                    id: r.u16("id")?,
                    name: r.string("name")?,
                    mesh: r.u16("mesh")?,
                    emitter1: r.string("emitter 1")?,
                    emitter2: r.string("emitter 2")?,
                    texture1: r.u16("texture 1")?,
                    texture2: r.u16("texture 2")?,
                    homing: r.bool("homing")?,
                    hit_chance: r.u8("hit chance")?,
                    damage: r.u16("damage")?,
                    damage_type: r.u16("damage type")?,
                    speed: r.u8("speed")?,
                })
            },
        )?;
        out.push(p);
        n += 1;
    }
    sort_unique(PROJECTILES_FILE, "projectile", &mut out, |t| t.id)?;
    Ok(out)
}

// ---------------------------------------------------------------------------------------
// Global tables
// ---------------------------------------------------------------------------------------

/// Parses `Factions.dat`: 100 names, then 100×100 default ratings (`[home][other]`).
#[doc(alias = "LoadFactions")]
pub fn parse_factions(data: &[u8]) -> Result<Factions, ContentError> {
    let mut r = Reader::new(FACTIONS_FILE, data);
    let mut f = Factions::default();
    for (i, name) in f.names.iter_mut().enumerate() {
        *name = r.record(|| format!("faction {i} name"), |r| r.string("name"))?;
    }
    for (i, row) in f.default_ratings.iter_mut().enumerate() {
        let bytes = r.record(
            || format!("faction {i} ratings"),
            |r| r.take(FACTION_COUNT, "ratings"),
        )?;
        row.copy_from_slice(bytes);
    }
    r.finish()?;
    Ok(f)
}

/// Parses `Attributes.dat`: assignment points, then 40 × (name, is_skill, hidden).
#[doc(alias = "LoadAttributes")]
pub fn parse_attributes(data: &[u8]) -> Result<Attributes, ContentError> {
    let mut r = Reader::new(ATTRIBUTES_FILE, data);
    let mut a = Attributes {
        assignment_points: r.record(|| "header".into(), |r| r.u8("assignment points"))?,
        ..Attributes::default()
    };
    for (i, d) in a.defs.iter_mut().enumerate() {
        *d = r.record(
            || format!("attribute {i}"),
            |r| {
                Ok(AttributeDef {
                    name: r.string("name")?,
                    is_skill: r.bool("is skill")?,
                    hidden: r.bool("hidden")?,
                })
            },
        )?;
    }
    r.finish()?;
    Ok(a)
}

/// Parses `Fixed Attributes.dat`: 6 × u16 (Health, Energy, Breath, Toughness, Strength,
/// Speed); 65535 means none. Any other value ≥ 40 is an error.
#[doc(alias = "LoadFixedAttributes")]
pub fn parse_fixed_attributes(data: &[u8]) -> Result<FixedAttributes, ContentError> {
    let mut r = Reader::new(FIXED_ATTRIBUTES_FILE, data);
    let mut vals = [None; 6];
    let names = [
        "Health",
        "Energy",
        "Breath",
        "Toughness",
        "Strength",
        "Speed",
    ];
    for (v, name) in vals.iter_mut().zip(names) {
        *v = r.record(
            || name.into(),
            |r| {
                let raw = r.u16(name)?;
                if raw == u16::MAX {
                    return Ok(None);
                }
                u8::try_from(raw)
                    .ok()
                    .filter(|&i| usize::from(i) < ATTRIBUTE_COUNT)
                    .map(Some)
                    .ok_or_else(|| {
                        format!("attribute index {raw} is out of range 0..40 (65535 = none)")
                    })
            },
        )?;
    }
    r.finish()?;
    let [health, energy, breath, toughness, strength, speed] = vals;
    Ok(FixedAttributes {
        health,
        energy,
        breath,
        toughness,
        strength,
        speed,
    })
}

/// Parses `Damage.dat`: 20 damage type names.
#[doc(alias = "LoadDamageTypes")]
pub fn parse_damage_types(data: &[u8]) -> Result<Vec<String>, ContentError> {
    let mut r = Reader::new(DAMAGE_FILE, data);
    let mut out = Vec::with_capacity(DAMAGE_TYPE_COUNT);
    for i in 0..DAMAGE_TYPE_COUNT {
        out.push(r.record(|| format!("damage type {i}"), |r| r.string("name"))?);
    }
    r.finish()?;
    Ok(out)
}

/// Parses `Misc.dat`. A stored `ServerPort` of 0 becomes 25000; a port outside
/// 0..=65535 is an error.
#[doc(alias = "LoadMisc")]
pub fn parse_misc(data: &[u8]) -> Result<Misc, ContentError> {
    let mut r = Reader::new(MISC_FILE, data);
    let m = r.record(
        || "settings".into(),
        |r| {
            Ok(Misc {
                start_gold: r.i32("StartGold")?,
                start_reputation: r.i32("StartRep")?,
                force_portals: r.bool("ForcePortals")?,
                combat_delay_ms: r.u16("CombatDelay")?,
                combat_formula: r.u8("CombatFormula")?,
                weapon_damage: r.bool("WeaponDamage")?,
                armour_damage: r.bool("ArmourDamage")?,
                combat_rating_adjust: r.u8("CombatRatingAdjust")?,
                allow_account_creation: r.bool("AllowAccountCreation")?,
                max_account_chars: r.u8("MaxAccountChars")?,
                server_port: {
                    let p = r.i32("ServerPort")?;
                    match u16::try_from(p) {
                        Ok(0) => DEFAULT_SERVER_PORT,
                        Ok(p) => p,
                        Err(_) => return Err(format!("ServerPort {p} is not a valid port")),
                    }
                },
                require_memorise: r.bool("RequireMemorise")?,
                cast_range: DEFAULT_CAST_RANGE,
                regen: Default::default(),
                login_message: String::new(),
            })
        },
    )?;
    r.finish()?;
    Ok(m)
}

/// Parses `Environment.dat`; an empty file (as in the sample data) or one shorter than the
/// clock record (Year, Day, Hour, Minute, TimeFactor: 20 bytes) gives
/// [`Environment::default`] (reference §8 **Fix**: a short file is a missing one).
#[doc(alias = "LoadEnvironment")]
pub fn parse_environment(data: &[u8]) -> Result<Environment, ContentError> {
    if data.len() < 20 {
        return Ok(Environment::default());
    }
    let mut r = Reader::new(ENVIRONMENT_FILE, data);
    let mut e = r.record(
        || "clock".into(),
        |r| {
            Ok(Environment {
                year: r.i32("Year")?,
                day: r.i32("Day")?,
                hour: r.i32("Hour")?,
                minute: r.i32("Minute")?,
                time_factor: r.i32("TimeFactor")?,
                ..Environment::default()
            })
        },
    )?;
    for (i, s) in e.seasons.iter_mut().enumerate() {
        *s = r.record(
            || format!("season {i}"),
            |r| {
                Ok(Season {
                    name: r.string("name")?,
                    start_day: r.i32("start day")?,
                    dusk_hour: r.i32("dusk hour")?,
                    dawn_hour: r.i32("dawn hour")?,
                })
            },
        )?;
    }
    for (i, m) in e.months.iter_mut().enumerate() {
        *m = r.record(
            || format!("month {i}"),
            |r| {
                Ok(Month {
                    name: r.string("name")?,
                    start_day: r.i32("start day")?,
                })
            },
        )?;
    }
    r.finish()?;
    Ok(e)
}

/// Splits a Latin-1 text file into lines, dropping `;` comment lines and blank lines
/// (trailing `\r` and surrounding spaces are trimmed).
pub fn parse_text_lines(data: &[u8]) -> Vec<String> {
    latin1(data)
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty() && !l.starts_with(';'))
        .collect()
}

/// Parses `Names Filter.txt`: one banned substring per non-comment line.
pub fn parse_names_filter(data: &[u8]) -> Vec<String> {
    parse_text_lines(data)
}

/// Parses `Language.txt`: one client string per non-comment, non-blank line.
pub fn parse_language(data: &[u8]) -> Vec<String> {
    parse_text_lines(data)
}

// ---------------------------------------------------------------------------------------
// Whole directory (pure)
// ---------------------------------------------------------------------------------------

/// The raw bytes of a Realm Crafter `Server Data` directory, gathered by [`super::fs`] or
/// by a test. `None` means the file is absent.
#[derive(Debug, Clone, Default)]
pub struct RcFiles {
    /// `Misc.dat` (required).
    pub misc: Option<Vec<u8>>,
    /// `Actors.dat` (required).
    pub actors: Option<Vec<u8>>,
    /// `Items.dat` (absent = no items).
    pub items: Option<Vec<u8>>,
    /// `Spells.dat` (absent = no spells).
    pub spells: Option<Vec<u8>>,
    /// `Projectiles.dat` (absent = no projectiles).
    pub projectiles: Option<Vec<u8>>,
    /// `Factions.dat` (absent = defaults: no names, all ratings 0).
    pub factions: Option<Vec<u8>>,
    /// `Attributes.dat` (required).
    pub attributes: Option<Vec<u8>>,
    /// `Fixed Attributes.dat` (required).
    pub fixed_attributes: Option<Vec<u8>>,
    /// `Damage.dat` (absent = 20 unnamed types).
    pub damage: Option<Vec<u8>>,
    /// `Environment.dat` (absent or empty = defaults).
    pub environment: Option<Vec<u8>>,
    /// `Names Filter.txt` (absent = nothing banned).
    pub names_filter: Option<Vec<u8>>,
    /// `Language.txt` (absent = no strings).
    pub language: Option<Vec<u8>>,
    /// `Areas/*.dat`: (area name = file stem, bytes).
    pub areas: Vec<(String, Vec<u8>)>,
}

fn required<'a>(v: &'a Option<Vec<u8>>, file: &str) -> Result<&'a [u8], ContentError> {
    v.as_deref()
        .ok_or_else(|| ContentError::new(file, "", "required file is missing"))
}

/// Builds and validates a [`World`] from the raw files of a `Server Data` directory.
/// Areas are sorted by name. Returns the world and the validation warnings.
pub fn load_server_data(files: &RcFiles) -> Result<(World, Vec<ContentWarning>), ContentError> {
    let mut world = World {
        misc: parse_misc(required(&files.misc, MISC_FILE)?)?,
        actors: parse_actors(required(&files.actors, ACTORS_FILE)?)?,
        attributes: parse_attributes(required(&files.attributes, ATTRIBUTES_FILE)?)?,
        fixed_attributes: parse_fixed_attributes(required(
            &files.fixed_attributes,
            FIXED_ATTRIBUTES_FILE,
        )?)?,
        ..World::default()
    };
    if let Some(d) = &files.items {
        world.items = parse_items(d)?;
    }
    if let Some(d) = &files.spells {
        world.spells = parse_spells(d)?;
    }
    if let Some(d) = &files.projectiles {
        world.projectiles = parse_projectiles(d)?;
    }
    if let Some(d) = &files.factions {
        world.factions = parse_factions(d)?;
    }
    world.damage_types = match &files.damage {
        Some(d) => parse_damage_types(d)?,
        None => vec![String::new(); DAMAGE_TYPE_COUNT],
    };
    if let Some(d) = &files.environment {
        world.environment = parse_environment(d)?;
    }
    if let Some(d) = &files.names_filter {
        world.names_filter = parse_names_filter(d);
    }
    if let Some(d) = &files.language {
        world.language = parse_language(d);
    }
    for (name, data) in &files.areas {
        world.areas.push(parse_area(name, data)?);
    }
    world.areas.sort_by(|a, b| a.name.cmp(&b.name));
    let warnings = world.validate_as(super::validate::Layout::RealmCrafter)?;
    Ok((world, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Vec<u8> {
        let mut out = (v.len() as i32).to_le_bytes().to_vec();
        out.extend_from_slice(v.as_bytes());
        out
    }

    #[test]
    fn misc_sample_bytes() {
        let data = [
            0x32, 0, 0, 0, 0x32, 0, 0, 0, 1, 0xe8, 3, 1, 0, 1, 0, 1, 4, 0xa8, 0x61, 0, 0, 1,
        ];
        let m = parse_misc(&data).unwrap();
        assert_eq!(m.start_gold, 50);
        assert_eq!(m.combat_delay_ms, 1000);
        assert_eq!(m.server_port, 25000);
        assert!(m.require_memorise);
        let mut zero_port = data;
        zero_port[17..21].copy_from_slice(&0i32.to_le_bytes());
        assert_eq!(parse_misc(&zero_port).unwrap().server_port, 25000);
    }

    #[test]
    fn trailing_bytes_are_an_error() {
        let mut data = vec![0u8; 12];
        data[8..10].copy_from_slice(&2u16.to_le_bytes());
        data[10..12].copy_from_slice(&4u16.to_le_bytes());
        assert!(parse_fixed_attributes(&data).is_ok());
        data.push(0);
        let e = parse_fixed_attributes(&data).unwrap_err();
        assert_eq!(e.file, FIXED_ATTRIBUTES_FILE);
        assert!(e.problem.contains("trailing"), "{e}");
    }

    #[test]
    fn negative_and_huge_string_lengths() {
        let mut data = (-5i32).to_le_bytes().to_vec();
        data.extend(s("x"));
        let e = parse_damage_types(&data).unwrap_err();
        assert!(
            e.to_string().starts_with("Damage.dat: damage type 0:"),
            "{e}"
        );
        assert!(e.problem.contains("negative"), "{e}");
        let data = i32::MAX.to_le_bytes().to_vec();
        let e = parse_damage_types(&data).unwrap_err();
        assert!(e.problem.contains("past the end"), "{e}");
    }

    #[test]
    fn bad_fixed_attribute_index() {
        let mut data = vec![0u8; 12];
        data[2..4].copy_from_slice(&41u16.to_le_bytes());
        let e = parse_fixed_attributes(&data).unwrap_err();
        assert_eq!(e.record, "Energy");
    }

    #[test]
    fn latin1_strings() {
        assert_eq!(latin1(&[0x41, 0xa3, 0xe9]), "A£é");
        assert_eq!(
            parse_text_lines(b"; c\r\n\r\nKing\r\n  Lord \n;x"),
            vec!["King", "Lord"]
        );
    }
}
