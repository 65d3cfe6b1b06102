//! The typed game content: [`World`] and everything it holds, with lookup helpers.
//!
//! This is plain data (no `Rc`, no `RefCell`, no I/O). It is built by the Realm Crafter
//! binary loader ([`super::rc`]) or by the native TOML loader ([`super::native`]), and
//! checked by [`World::validate`].
//!
//! # Indices and slots
//! Realm Crafter stores fixed slot tables per area (150 triggers, 2000 waypoints,
//! 100 portals, 1000 spawn points). Only the non-empty slots are kept here, each with its
//! original slot `index`, sorted by that index (spawn points refer to waypoints by index,
//! portals are remembered by index). Look them up with [`Area::waypoint`],
//! [`Area::portal`], [`Area::spawn`] (binary search, no allocation).
//!
//! Waypoint links (`next_a`, `next_b`, `prev`) are `Option<u16>`: Realm Crafter files
//! store 2000 or 2005 for "none"; every value outside `0..2000` becomes `None`.
//!
//! # Fixed-size tables
//! Per-template attributes (40), resistances (20), item attribute modifiers (40), faction
//! names (100) and ratings (100×100), attribute definitions (40), damage type names (20),
//! seasons (12) and months (20) are always stored at their full Realm Crafter length in
//! memory, so the simulation can index them directly after [`World::validate`] passed.
//! The TOML form trims trailing default entries; the loaders pad them back.

use serde::{Deserialize, Serialize};

/// The first NPC script handle: player characters' handles are below it, NPCs' from it
/// (in slices per AreaInstance, [`World::npc_handles`]).
pub const NPC_HANDLE_BASE: u32 = 1 << 30;

use super::serde_util;

/// Attribute slots per actor (`Value[40]`, `Max[40]`).
pub const ATTRIBUTE_COUNT: usize = 40;
/// Damage types, and so resistances per actor.
pub const DAMAGE_TYPE_COUNT: usize = 20;
/// Factions (names and the rating matrix side).
pub const FACTION_COUNT: usize = 100;
/// Trigger slots per area.
pub const TRIGGER_SLOTS: usize = 150;
/// Waypoint slots per area; indices `0..2000` are valid.
pub const WAYPOINT_SLOTS: usize = 2000;
/// Portal slots per area.
pub const PORTAL_SLOTS: usize = 100;
/// Spawn point slots per area.
pub const SPAWN_SLOTS: usize = 1000;
/// Seasons in `Environment.dat`.
pub const SEASON_COUNT: usize = 12;
/// Months in `Environment.dat`.
pub const MONTH_COUNT: usize = 20;
/// Inventory slots per actor (weapon 0, armour 1..7, ...).
pub const INVENTORY_SLOTS: usize = 46;
/// Faction rating meaning "neutral" (ratings are 0..200, 100 = 0 %).
pub const NEUTRAL_RATING: u8 = 100;
/// Ratings below this are hostile: aggressive NPCs target that faction.
pub const HOSTILE_BELOW: u8 = 150;
/// Multiplier Realm Crafter applies to `Actor.Radius` at load (see [`ActorTemplate::effective_radius`]).
pub const RADIUS_SCALE: f32 = 0.05;
/// The default server port used when `Misc.dat` stores 0.
pub const DEFAULT_SERVER_PORT: u16 = 25000;

/// The whole game content: areas, actor templates, items and the global tables.
#[doc(alias = "Server Data")]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
#[serde(deny_unknown_fields)]
pub struct World {
    /// Server settings from `Misc.dat`.
    pub misc: Misc,
    /// Game clock, seasons and months from `Environment.dat`.
    pub environment: Environment,
    /// Attribute definitions from `Attributes.dat`.
    pub attributes: Attributes,
    /// Engine-bound attribute indices from `Fixed Attributes.dat`.
    pub fixed_attributes: FixedAttributes,
    /// The 20 damage type names from `Damage.dat` (index = damage type id).
    #[serde(
        serialize_with = "serde_util::ser_trimmed",
        deserialize_with = "serde_util::de_padded_20"
    )]
    pub damage_types: Vec<String>,
    /// Faction names and default ratings from `Factions.dat`.
    #[serde(rename = "faction")]
    pub factions: Factions,
    /// Banned substrings for character names (`Names Filter.txt`, comments dropped).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub names_filter: Vec<String>,
    /// Client string constants (`Language.txt`, comments and blank lines dropped).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub language: Vec<String>,
    /// Projectiles from `Projectiles.dat`, sorted by id.
    #[serde(rename = "projectile", skip_serializing_if = "Vec::is_empty")]
    pub projectiles: Vec<Projectile>,
    /// Spells from `Spells.dat`, sorted by id.
    #[serde(rename = "spell", skip_serializing_if = "Vec::is_empty")]
    pub spells: Vec<Spell>,
    /// Items from `Items.dat`, sorted by id.
    #[serde(rename = "item", skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<Item>,
    /// Actor templates from `Actors.dat`, sorted by id.
    #[serde(rename = "actor", skip_serializing_if = "Vec::is_empty")]
    pub actors: Vec<ActorTemplate>,
    /// Areas (zones), sorted by name.
    #[serde(rename = "area", skip_serializing_if = "Vec::is_empty")]
    pub areas: Vec<Area>,
    /// The game's scripts (`Scripts/*.rsl`), sorted by name. Not part of the TOML: they
    /// are files of their own beside it.
    #[serde(skip)]
    pub scripts: Vec<ScriptSource>,
    /// The update list the updater of Realm Crafter's client checks its files against
    /// (`Files.dat`, [`super::updates`]), empty when the world has none. Not part of the
    /// TOML: a `Files.dat` beside it.
    #[serde(skip)]
    #[doc(alias = "UpdateFile")]
    pub update_files: Vec<crate::proto::UpdateFileEntry>,
}

/// One script file of a world (`Scripts/Name.rsl`): its name without the extension, and
/// its bytes as read (scripts are Windows-1252 text, not UTF-8).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ScriptSource {
    /// The script name (`Death` for `Death.rsl`).
    pub name: String,
    /// The file's bytes.
    pub bytes: Vec<u8>,
}

impl Default for World {
    /// An empty world whose fixed-size tables have their full length.
    fn default() -> Self {
        Self {
            misc: Misc::default(),
            environment: Environment::default(),
            attributes: Attributes::default(),
            fixed_attributes: FixedAttributes::default(),
            damage_types: vec![String::new(); DAMAGE_TYPE_COUNT],
            factions: Factions::default(),
            names_filter: Vec::new(),
            language: Vec::new(),
            projectiles: Vec::new(),
            spells: Vec::new(),
            items: Vec::new(),
            actors: Vec::new(),
            areas: Vec::new(),
            scripts: Vec::new(),
            update_files: Vec::new(),
        }
    }
}

/// Binary search by key in a slice that is normally sorted; falls back to a linear scan
/// so that a hand-built, unsorted `World` still answers correctly.
fn find_by<T, K: Ord + Copy>(items: &[T], key: K, f: impl Fn(&T) -> K) -> Option<&T> {
    match items.binary_search_by_key(&key, &f) {
        Ok(i) => items.get(i),
        Err(_) => items.iter().find(|t| f(t) == key),
    }
}

impl World {
    /// The area with this name, compared case-insensitively (Realm Crafter's `FindArea`).
    #[doc(alias = "FindArea")]
    pub fn area_by_name(&self, name: &str) -> Option<&Area> {
        self.areas.iter().find(|a| eq_ci(&a.name, name))
    }

    /// The NPC script-handle range of one AreaInstance: `(base, span)`. Each instance
    /// (0..=99) of each area gets its own slice of `[NPC_HANDLE_BASE, 2^31)`, the same on
    /// every node, so a handle a script carries elsewhere never names another actor there,
    /// and [`World::npc_handle_instance`] tells whose it is.
    pub fn npc_handles(&self, area: &str, instance: u16) -> (u32, u32) {
        let span = self.npc_handle_span();
        let idx = self
            .areas
            .iter()
            .position(|a| eq_ci(&a.name, area))
            .and_then(|i| u32::try_from(i).ok())
            .unwrap_or(0);
        let code = idx
            .saturating_mul(100)
            .saturating_add(u32::from(instance.min(99)));
        let base = NPC_HANDLE_BASE.saturating_add(code.saturating_mul(span));
        (base, span)
    }

    /// The area (its name) and instance whose NPC handle range holds `handle`, if any.
    pub fn npc_handle_instance(&self, handle: u32) -> Option<(&str, u16)> {
        let code = handle.checked_sub(NPC_HANDLE_BASE)? / self.npc_handle_span();
        let area = self.areas.get(usize::try_from(code / 100).ok()?)?;
        Some((area.name.as_str(), u16::try_from(code % 100).ok()?))
    }

    fn npc_handle_span(&self) -> u32 {
        let n_areas = u32::try_from(self.areas.len()).unwrap_or(u32::MAX).max(1);
        let slots = n_areas.saturating_mul(100).max(1);
        (NPC_HANDLE_BASE / slots).max(1)
    }

    /// The item template with this name, compared case-insensitively with surrounding
    /// blanks ignored (Realm Crafter's `FindItem`, used by `GiveItem`, `HasItem`,
    /// `SpawnItem` and `/give`).
    #[doc(alias = "FindItem")]
    pub fn item_by_name(&self, name: &str) -> Option<&Item> {
        let name = name.trim();
        self.items
            .iter()
            .find(|i| !i.name.is_empty() && eq_ci(&i.name, name))
    }

    /// The spell (ability) with this name, case-insensitive, surrounding blanks ignored
    /// (Realm Crafter's `FindSpell`, used by `AddAbility` and the other ability natives).
    #[doc(alias = "FindSpell")]
    pub fn spell_by_name(&self, name: &str) -> Option<&Spell> {
        let name = name.trim();
        self.spells
            .iter()
            .find(|s| !s.name.is_empty() && eq_ci(&s.name, name))
    }

    /// The position of the area with this name in [`World::areas`] (case-insensitive).
    pub fn area_index(&self, name: &str) -> Option<usize> {
        self.areas.iter().position(|a| eq_ci(&a.name, name))
    }

    /// The actor template with this id.
    #[doc(alias = "ActorList")]
    pub fn template(&self, id: u16) -> Option<&ActorTemplate> {
        find_by(&self.actors, id, |t| t.id)
    }

    /// The item with this id.
    #[doc(alias = "ItemList")]
    pub fn item(&self, id: u16) -> Option<&Item> {
        find_by(&self.items, id, |t| t.id)
    }

    /// The spell with this id.
    #[doc(alias = "SpellsList")]
    pub fn spell(&self, id: u16) -> Option<&Spell> {
        find_by(&self.spells, id, |t| t.id)
    }

    /// The projectile with this id.
    #[doc(alias = "ProjectileList")]
    pub fn projectile(&self, id: u16) -> Option<&Projectile> {
        find_by(&self.projectiles, id, |t| t.id)
    }

    /// The first playable template (what a new character uses when none is chosen).
    pub fn first_playable(&self) -> Option<&ActorTemplate> {
        self.actors.iter().find(|t| t.playable)
    }

    /// The destination of `portal` in area `from`: the linked area and the portal named
    /// `link_name` there (case-insensitive), falling back to that area's lowest portal
    /// (Realm Crafter uses portal 0). `None` when the portal links nowhere or the linked
    /// area does not exist.
    pub fn portal_destination(&self, portal: &Portal) -> Option<(&Area, &Portal)> {
        if portal.link_area.is_empty() {
            return None;
        }
        let area = self.area_by_name(&portal.link_area)?;
        let dest = area
            .portal_by_name(&portal.link_name)
            .or_else(|| area.portals.first())?;
        Some((area, dest))
    }

    /// Damage type name by id, or `None` when out of range or unnamed.
    pub fn damage_type_name(&self, id: u16) -> Option<&str> {
        self.damage_types
            .get(usize::from(id))
            .map(String::as_str)
            .filter(|s| !s.is_empty())
    }

    /// The index of the named attribute (case-insensitive), Realm Crafter's `FindAttribute`.
    #[doc(alias = "FindAttribute")]
    pub fn find_attribute(&self, name: &str) -> Option<u8> {
        self.attributes.find(name)
    }

    /// Whether `name` contains a banned substring from the names filter (case-insensitive).
    pub fn name_is_filtered(&self, name: &str) -> bool {
        let lower = name.to_lowercase();
        self.names_filter
            .iter()
            .any(|bad| !bad.is_empty() && lower.contains(&bad.to_lowercase()))
    }

    /// Language string by index (the order of the non-comment lines of `Language.txt`).
    pub fn language_string(&self, index: usize) -> Option<&str> {
        self.language.get(index).map(String::as_str)
    }
}

/// Case-insensitive comparison used for every Realm Crafter name lookup.
pub fn eq_ci(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.chars()
            .zip(b.chars())
            .all(|(x, y)| x.to_lowercase().eq(y.to_lowercase()))
}

// ---------------------------------------------------------------------------------------
// Areas
// ---------------------------------------------------------------------------------------

/// One zone (`Areas/<Name>.dat`). The client loads its geometry by the same name.
#[doc(alias = "ServerArea")]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
#[serde(deny_unknown_fields)]
pub struct Area {
    /// Area name (the `.dat` file name without extension).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Chances (percent, cumulative) of weathers 1..5 (rain, snow, fog, storm, wind).
    #[doc(alias = "WeatherChance")]
    pub weather_chances: [u8; 5],
    /// Script run when a player enters (`EntryScript`), empty for none.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub entry_script: String,
    /// Script run when a player leaves (`ExitScript`), empty for none.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub exit_script: String,
    /// Player-versus-player combat allowed.
    #[doc(alias = "PvP")]
    pub pvp: bool,
    /// Gravity sent to the client (sample: 300).
    pub gravity: u16,
    /// Outdoors (the client draws sky and weather).
    pub outdoors: bool,
    /// Name of an area whose weather this one copies; empty for none.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub weather_link: String,
    /// Non-empty trigger slots, sorted by index.
    #[serde(rename = "trigger", skip_serializing_if = "Vec::is_empty")]
    pub triggers: Vec<Trigger>,
    /// Non-empty waypoint slots, sorted by index.
    #[serde(rename = "waypoint", skip_serializing_if = "Vec::is_empty")]
    pub waypoints: Vec<Waypoint>,
    /// Non-empty portal slots, sorted by index.
    #[serde(rename = "portal", skip_serializing_if = "Vec::is_empty")]
    pub portals: Vec<Portal>,
    /// Active spawn point slots (`max > 0`), sorted by index.
    #[serde(rename = "spawn", skip_serializing_if = "Vec::is_empty")]
    pub spawns: Vec<SpawnPoint>,
    /// Water volumes, in file order.
    #[serde(rename = "water", skip_serializing_if = "Vec::is_empty")]
    pub water: Vec<Water>,
}

impl Default for Area {
    fn default() -> Self {
        Self {
            name: String::new(),
            weather_chances: [0; 5],
            entry_script: String::new(),
            exit_script: String::new(),
            pvp: false,
            gravity: 300,
            outdoors: true,
            weather_link: String::new(),
            triggers: Vec::new(),
            waypoints: Vec::new(),
            portals: Vec::new(),
            spawns: Vec::new(),
            water: Vec::new(),
        }
    }
}

impl Area {
    /// The waypoint in slot `index`, if that slot is used.
    pub fn waypoint(&self, index: u16) -> Option<&Waypoint> {
        find_by(&self.waypoints, index, |w| w.index)
    }

    /// The portal in slot `index`, if that slot is used.
    pub fn portal(&self, index: u16) -> Option<&Portal> {
        find_by(&self.portals, index, |p| p.index)
    }

    /// The portal with this name (case-insensitive); the lowest slot wins on duplicates.
    pub fn portal_by_name(&self, name: &str) -> Option<&Portal> {
        self.portals.iter().find(|p| eq_ci(&p.name, name))
    }

    /// The spawn point in slot `index`, if that slot is active.
    pub fn spawn(&self, index: u16) -> Option<&SpawnPoint> {
        find_by(&self.spawns, index, |s| s.index)
    }

    /// The trigger in slot `index`, if that slot is used.
    pub fn trigger(&self, index: u16) -> Option<&Trigger> {
        find_by(&self.triggers, index, |t| t.index)
    }

    /// The spawn point whose waypoint is `waypoint` (used by the patrol "wander" rule,
    /// Realm Crafter's scan for `SpawnWaypoint = Current`); the lowest slot wins.
    pub fn spawn_at_waypoint(&self, waypoint: u16) -> Option<&SpawnPoint> {
        self.spawns.iter().find(|s| s.waypoint == waypoint)
    }

    /// The water volume containing the point, using Realm Crafter's test
    /// (`Y < W.Y + 0.5` and strictly inside the X/Z rectangle).
    pub fn water_at(&self, x: f32, y: f32, z: f32) -> Option<&Water> {
        self.water.iter().find(|w| w.contains(x, y, z))
    }
}

/// A trigger sphere: entering it runs `script`'s `method`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
#[serde(deny_unknown_fields)]
pub struct Trigger {
    /// Slot index, 0..150.
    pub index: u16,
    /// Centre X.
    #[serde(serialize_with = "serde_util::ser_f32")]
    pub x: f32,
    /// Centre Y.
    #[serde(serialize_with = "serde_util::ser_f32")]
    pub y: f32,
    /// Centre Z.
    #[serde(serialize_with = "serde_util::ser_f32")]
    pub z: f32,
    /// Radius (inside when 3-D distance² < size²).
    #[serde(serialize_with = "serde_util::ser_f32")]
    pub size: f32,
    /// Script to run.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub script: String,
    /// Method (function) in the script.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub method: String,
}

/// A patrol waypoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
#[serde(deny_unknown_fields)]
pub struct Waypoint {
    /// Slot index, 0..2000.
    pub index: u16,
    /// X.
    #[serde(serialize_with = "serde_util::ser_f32")]
    pub x: f32,
    /// Y.
    #[serde(serialize_with = "serde_util::ser_f32")]
    pub y: f32,
    /// Z.
    #[serde(serialize_with = "serde_util::ser_f32")]
    pub z: f32,
    /// First next waypoint (`NextWaypointA`); files store 2000/2005 for none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_a: Option<u16>,
    /// Second next waypoint (`NextWaypointB`), chosen 50/50 with `next_a`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_b: Option<u16>,
    /// Previous waypoint (`PrevWaypoint`), used when neither next exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prev: Option<u16>,
    /// Seconds to pause on arrival (`WaypointPause`); 0 = no pause.
    #[serde(skip_serializing_if = "serde_util::is_zero")]
    pub pause_secs: i32,
}

impl Waypoint {
    /// Converts a raw file link (u16) to an index: anything outside `0..2000` is none.
    pub fn link_from_raw(raw: u16) -> Option<u16> {
        (usize::from(raw) < WAYPOINT_SLOTS).then_some(raw)
    }

    /// Whether the waypoint has any outgoing link (`next_a`, `next_b` or `prev`).
    pub fn has_links(&self) -> bool {
        self.next_a.is_some() || self.next_b.is_some() || self.prev.is_some()
    }
}

/// A portal: entering it warps to `link_name` in `link_area`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
#[serde(deny_unknown_fields)]
pub struct Portal {
    /// Slot index, 0..100.
    pub index: u16,
    /// Portal name (the destination others link to; "Begin" is the respawn point).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Destination area name; empty = arrival-only portal.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub link_area: String,
    /// Destination portal name in `link_area` (case-insensitive; falls back to the first portal).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub link_name: String,
    /// X.
    #[serde(serialize_with = "serde_util::ser_f32")]
    pub x: f32,
    /// Y.
    #[serde(serialize_with = "serde_util::ser_f32")]
    pub y: f32,
    /// Z.
    #[serde(serialize_with = "serde_util::ser_f32")]
    pub z: f32,
    /// Radius (inside when 3-D distance² < size²).
    #[serde(serialize_with = "serde_util::ser_f32")]
    pub size: f32,
    /// Facing on arrival, degrees.
    #[serde(serialize_with = "serde_util::ser_f32")]
    pub yaw: f32,
}

/// A spawn point: keeps up to `max` NPCs of one template alive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
#[serde(deny_unknown_fields)]
pub struct SpawnPoint {
    /// Slot index, 0..1000.
    pub index: u16,
    /// Actor template id (`SpawnActor`).
    #[doc(alias = "SpawnActor")]
    pub template: u16,
    /// Waypoint slot the NPC appears at and starts patrolling from (`SpawnWaypoint`).
    pub waypoint: u16,
    /// X/Z scatter: the NPC is placed at waypoint ± size/2.
    #[serde(serialize_with = "serde_util::ser_f32")]
    pub size: f32,
    /// Script run when an NPC spawns (`SpawnScript`), empty for none.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub spawn_script: String,
    /// Right-click script given to the NPC (`SpawnActorScript`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub actor_script: String,
    /// Script run when the NPC dies (`SpawnDeathScript`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub death_script: String,
    /// Maximum alive at once (`SpawnMax`); slots with 0 are not kept.
    pub max: u16,
    /// Seconds between spawns (`SpawnFrequency`).
    pub frequency_secs: u16,
    /// Wander range around the waypoint; ≥ 5 makes the NPC wander instead of patrolling.
    #[serde(serialize_with = "serde_util::ser_f32")]
    pub range: f32,
}

/// A water volume (axis-aligned box from `(x, z)` to `(x+width, z+depth)` below `y`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
#[serde(deny_unknown_fields)]
pub struct Water {
    /// Corner X.
    #[serde(serialize_with = "serde_util::ser_f32")]
    pub x: f32,
    /// Surface height.
    #[serde(serialize_with = "serde_util::ser_f32")]
    pub y: f32,
    /// Corner Z.
    #[serde(serialize_with = "serde_util::ser_f32")]
    pub z: f32,
    /// Extent along X.
    #[serde(serialize_with = "serde_util::ser_f32")]
    pub width: f32,
    /// Extent along Z.
    #[serde(serialize_with = "serde_util::ser_f32")]
    pub depth: f32,
    /// Damage per second while inside (0 = harmless).
    pub damage: u16,
    /// Damage type index (0..20) of that damage.
    pub damage_type: u16,
}

impl Water {
    /// Realm Crafter's inside test: `Y < W.Y + 0.5` and strictly within the X/Z box.
    pub fn contains(&self, x: f32, y: f32, z: f32) -> bool {
        y < self.y + 0.5
            && x > self.x
            && x < self.x + self.width
            && z > self.z
            && z < self.z + self.depth
    }
}

// ---------------------------------------------------------------------------------------
// Actor templates
// ---------------------------------------------------------------------------------------

/// One attribute's value and maximum (file: two u16).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(from = "(u16, u16)", into = "(u16, u16)")]
pub struct StatPair {
    /// Current value.
    pub value: u16,
    /// Maximum.
    pub max: u16,
}

impl From<(u16, u16)> for StatPair {
    fn from((value, max): (u16, u16)) -> Self {
        Self { value, max }
    }
}

impl From<StatPair> for (u16, u16) {
    fn from(p: StatPair) -> Self {
        (p.value, p.max)
    }
}

/// Which genders a template allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Genders {
    /// Male and female (file 0).
    #[default]
    Both,
    /// Male only (file 1).
    Male,
    /// Female only (file 2).
    Female,
    /// Genderless (file 3).
    None,
}

/// How an NPC reacts to others (`Aggressiveness`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Aggressiveness {
    /// Never fights (file 0).
    #[default]
    Passive,
    /// Fights back when attacked and answers calls for help (file 1).
    Defensive,
    /// Attacks hostile actors on sight (file 2).
    Aggressive,
    /// Can neither attack nor be attacked (file 3).
    NonCombatant,
}

impl Aggressiveness {
    /// The Realm Crafter number (0..3).
    pub fn as_u8(self) -> u8 {
        self as u8
    }
}

/// Trading behaviour of a template.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TradeMode {
    /// Does not trade (file 0).
    #[default]
    No,
    /// Trades freely (file 1).
    Free,
    /// Runs a shop (file 2).
    Shop,
}

/// Where an actor can move (`Environment`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ActorEnvironment {
    /// Land and water (file 0).
    Amphibious,
    /// Water only; never drowns (file 1).
    Swim,
    /// Flies (file 2).
    Fly,
    /// Land (file 3).
    #[default]
    Walk,
}

/// An actor template (race + class): what players pick and what spawn points create.
#[doc(alias = "Actor")]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
#[serde(deny_unknown_fields)]
pub struct ActorTemplate {
    /// Template id (`Actor\ID`).
    pub id: u16,
    /// Race name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub race: String,
    /// Class name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub class: String,
    /// Description.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Area a new character of this template starts in.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub start_area: String,
    /// Portal in `start_area` where it starts.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub start_portal: String,
    /// Male animation set.
    pub male_anim: u16,
    /// Female animation set.
    pub female_anim: u16,
    /// Model scale.
    #[serde(serialize_with = "serde_util::ser_f32")]
    pub scale: f32,
    /// Radius as stored in the file; the engine uses [`ActorTemplate::effective_radius`].
    #[serde(serialize_with = "serde_util::ser_f32")]
    pub radius: f32,
    /// Mesh ids (65535 = none).
    pub meshes: [u16; 8],
    /// Beard mesh ids.
    pub beards: [u16; 5],
    /// Male hair mesh ids.
    pub male_hairs: [u16; 5],
    /// Female hair mesh ids.
    pub female_hairs: [u16; 5],
    /// Male face texture ids.
    pub male_faces: [u16; 5],
    /// Female face texture ids.
    pub female_faces: [u16; 5],
    /// Male body texture ids.
    pub male_bodies: [u16; 5],
    /// Female body texture ids.
    pub female_bodies: [u16; 5],
    /// Male speech sound ids.
    pub male_speech: [u16; 16],
    /// Female speech sound ids.
    pub female_speech: [u16; 16],
    /// Blood texture id.
    pub blood: u16,
    /// The 40 attribute (value, max) pairs; always [`ATTRIBUTE_COUNT`] long in memory.
    #[serde(
        serialize_with = "serde_util::ser_trimmed",
        deserialize_with = "serde_util::de_padded_40"
    )]
    pub attributes: Vec<StatPair>,
    /// Resistances per damage type; 100 = neutral (the sample data stores 0, which adds
    /// 100 to every hit). Default in TOML: all 100.
    pub resistances: [u16; 20],
    /// Allowed genders.
    pub genders: Genders,
    /// Players can pick this template.
    pub playable: bool,
    /// Can be ridden as a mount.
    pub rideable: bool,
    /// AI temper.
    pub aggressiveness: Aggressiveness,
    /// Aggro range (3-D distance) for aggressive NPCs and calls for help.
    pub aggressive_range: i32,
    /// Trading behaviour.
    pub trade_mode: TradeMode,
    /// Movement environment.
    pub environment: ActorEnvironment,
    /// Inventory slot bit flags (`InventorySlots`; the file's i32 reinterpreted). Default: all set.
    pub inventory_slots: u32,
    /// Damage type used with no usable weapon.
    pub default_damage_type: u8,
    /// Home faction, 0..100; ratings start from its default row.
    pub home_faction: u8,
    /// XP multiplier when killed.
    pub xp_multiplier: i32,
    /// Use per-polygon collision in the client.
    pub poly_collision: bool,
}

impl Default for ActorTemplate {
    fn default() -> Self {
        Self {
            id: 0,
            race: String::new(),
            class: String::new(),
            description: String::new(),
            start_area: String::new(),
            start_portal: String::new(),
            male_anim: 0,
            female_anim: 0,
            scale: 1.0,
            radius: 0.0,
            meshes: [u16::MAX; 8],
            beards: [u16::MAX; 5],
            male_hairs: [u16::MAX; 5],
            female_hairs: [u16::MAX; 5],
            male_faces: [u16::MAX; 5],
            female_faces: [u16::MAX; 5],
            male_bodies: [u16::MAX; 5],
            female_bodies: [u16::MAX; 5],
            male_speech: [u16::MAX; 16],
            female_speech: [u16::MAX; 16],
            blood: 0,
            attributes: vec![StatPair::default(); ATTRIBUTE_COUNT],
            resistances: [100; 20],
            genders: Genders::Both,
            playable: false,
            rideable: false,
            aggressiveness: Aggressiveness::Passive,
            aggressive_range: 50,
            trade_mode: TradeMode::No,
            environment: ActorEnvironment::Walk,
            inventory_slots: u32::MAX,
            default_damage_type: 0,
            home_faction: 0,
            xp_multiplier: 1,
            poly_collision: false,
        }
    }
}

impl ActorTemplate {
    /// The collision radius the engine uses: the file value × [`RADIUS_SCALE`] (0.05).
    pub fn effective_radius(&self) -> f32 {
        self.radius * RADIUS_SCALE
    }

    /// The attribute pair at `index`, if in range.
    pub fn attribute(&self, index: u8) -> Option<StatPair> {
        self.attributes.get(usize::from(index)).copied()
    }

    /// Resistance to damage type `damage_type` (100 = neutral), if in range.
    pub fn resistance(&self, damage_type: u16) -> Option<u16> {
        self.resistances.get(usize::from(damage_type)).copied()
    }

    /// "Race Class" as shown by Realm Crafter tools.
    pub fn display_name(&self) -> String {
        if self.class.is_empty() {
            self.race.clone()
        } else {
            format!("{} {}", self.race, self.class)
        }
    }
}

// ---------------------------------------------------------------------------------------
// Items
// ---------------------------------------------------------------------------------------

/// Weapon kind (`WeaponType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum WeaponType {
    /// One-handed melee (file 1).
    #[default]
    OneHanded,
    /// Two-handed melee (file 2).
    TwoHanded,
    /// Ranged: fires `projectile` (file 3).
    Ranged,
}

/// The type-specific part of an item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ItemKind {
    /// Type 1.
    Weapon {
        /// Base damage (`WeaponDamage`).
        #[serde(default)]
        damage: u16,
        /// Damage type index.
        #[serde(default)]
        damage_type: u16,
        /// One-handed, two-handed or ranged.
        #[serde(default)]
        weapon_type: WeaponType,
        /// Projectile id fired by a ranged weapon (`RangedProjectile`).
        #[serde(default)]
        projectile: u16,
        /// Range of a ranged weapon.
        #[serde(default)]
        #[serde(serialize_with = "serde_util::ser_f32")]
        range: f32,
        /// Attack animation name.
        #[serde(default)]
        anim: String,
    },
    /// Type 2.
    Armour {
        /// Armour points (`ArmourLevel`).
        #[serde(default)]
        level: u16,
    },
    /// Type 3.
    Ring,
    /// Type 4.
    Potion {
        /// Effect duration in seconds (`EatEffectsLength`).
        #[serde(default)]
        secs: u16,
    },
    /// Type 5.
    Ingredient {
        /// Effect duration in seconds.
        #[serde(default)]
        secs: u16,
    },
    /// Type 6.
    Image {
        /// Image (texture) id (TOML key `image_id`: `id` is the item's own id).
        #[serde(default, rename = "image_id")]
        id: u16,
    },
    /// Type 7.
    Other {
        /// Free text (`MiscData`).
        #[serde(default)]
        misc: String,
    },
}

impl ItemKind {
    /// The Realm Crafter item type number (1..7).
    pub fn type_number(&self) -> u8 {
        match self {
            Self::Weapon { .. } => 1,
            Self::Armour { .. } => 2,
            Self::Ring => 3,
            Self::Potion { .. } => 4,
            Self::Ingredient { .. } => 5,
            Self::Image { .. } => 6,
            Self::Other { .. } => 7,
        }
    }
}

impl Default for ItemKind {
    fn default() -> Self {
        Self::Other {
            misc: String::new(),
        }
    }
}

/// An item template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Item {
    /// Item id.
    pub id: u16,
    /// Name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Only this race may use it (empty = any).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub exclusive_race: String,
    /// Only this class may use it (empty = any).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub exclusive_class: String,
    /// Script run on use.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub script: String,
    /// Method in that script.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub method: String,
    /// Gold value.
    pub value: i32,
    /// Mass.
    pub mass: u16,
    /// Wears down (item health 0..100).
    pub takes_damage: bool,
    /// Thumbnail texture id.
    pub thumbnail: u16,
    /// Gubbins (attached model parts) ids.
    pub gubbins: [u16; 6],
    /// Male mesh id (65535 = none).
    pub male_mesh: u16,
    /// Female mesh id (65535 = none).
    pub female_mesh: u16,
    /// Inventory slot type it equips into.
    pub slot_type: u16,
    /// Stacks in one inventory slot.
    pub stackable: bool,
    /// Attribute modifiers while equipped (file stores value + 5000); always 40 long in memory.
    #[serde(
        serialize_with = "serde_util::ser_trimmed",
        deserialize_with = "serde_util::de_padded_40",
        skip_serializing_if = "serde_util::all_default"
    )]
    pub attributes: Vec<i32>,
    /// The type and its type-specific fields.
    #[serde(flatten)]
    pub kind: ItemKind,
}

impl Default for Item {
    fn default() -> Self {
        Self {
            id: 0,
            name: String::new(),
            exclusive_race: String::new(),
            exclusive_class: String::new(),
            script: String::new(),
            method: String::new(),
            value: 0,
            mass: 0,
            takes_damage: false,
            thumbnail: 0,
            gubbins: [0; 6],
            male_mesh: u16::MAX,
            female_mesh: u16::MAX,
            slot_type: 0,
            stackable: false,
            attributes: vec![0; ATTRIBUTE_COUNT],
            kind: ItemKind::default(),
        }
    }
}

impl Item {
    /// Weapon damage, if this is a weapon.
    pub fn weapon_damage(&self) -> Option<u16> {
        match self.kind {
            ItemKind::Weapon { damage, .. } => Some(damage),
            _ => None,
        }
    }

    /// Armour level, if this is armour.
    pub fn armour_level(&self) -> Option<u16> {
        match self.kind {
            ItemKind::Armour { level } => Some(level),
            _ => None,
        }
    }

    /// Whether this is a ranged weapon.
    pub fn is_ranged(&self) -> bool {
        matches!(
            self.kind,
            ItemKind::Weapon {
                weapon_type: WeaponType::Ranged,
                ..
            }
        )
    }
}

// ---------------------------------------------------------------------------------------
// Spells and projectiles
// ---------------------------------------------------------------------------------------

/// A spell (ability).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
#[serde(deny_unknown_fields)]
pub struct Spell {
    /// Spell id.
    pub id: u16,
    /// Name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Description.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Thumbnail texture id.
    pub thumbnail: u16,
    /// Only this race may learn it (empty = any).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub exclusive_race: String,
    /// Only this class may learn it (empty = any).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub exclusive_class: String,
    /// Recharge time in milliseconds.
    pub recharge_ms: i32,
    /// Script run on cast.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub script: String,
    /// Method in that script.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub method: String,
}

/// A projectile fired by ranged weapons or scripts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
#[serde(deny_unknown_fields)]
pub struct Projectile {
    /// Projectile id.
    pub id: u16,
    /// Name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Mesh id (65535 = none).
    pub mesh: u16,
    /// First particle emitter name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub emitter1: String,
    /// Second particle emitter name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub emitter2: String,
    /// First emitter texture id.
    pub texture1: u16,
    /// Second emitter texture id.
    pub texture2: u16,
    /// Homes in on the target.
    pub homing: bool,
    /// Chance to hit, percent.
    pub hit_chance: u8,
    /// Base damage.
    pub damage: u16,
    /// Damage type index.
    pub damage_type: u16,
    /// Flight speed.
    pub speed: u8,
}

// ---------------------------------------------------------------------------------------
// Factions and attributes
// ---------------------------------------------------------------------------------------

/// Faction names and the default rating matrix (`FactionDefaultRatings[home][other]`).
///
/// In memory both tables are full size (100 names, 100 rows of 100). In TOML they are a
/// list of `[[faction]]` tables with `id`, `name` and `ratings` (trailing zeros omitted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    into = "Vec<serde_util::FactionEntry>",
    try_from = "Vec<serde_util::FactionEntry>"
)]
pub struct Factions {
    /// 100 names (index = faction id); empty = unused.
    pub names: Vec<String>,
    /// 100 rows of 100 ratings: `default_ratings[home][other]`, 0..200, 100 = neutral.
    pub default_ratings: Vec<Vec<u8>>,
}

impl Default for Factions {
    fn default() -> Self {
        Self {
            names: vec![String::new(); FACTION_COUNT],
            default_ratings: vec![vec![0; FACTION_COUNT]; FACTION_COUNT],
        }
    }
}

impl Factions {
    /// How faction `home` initially rates faction `other` (0 when out of range).
    pub fn default_rating(&self, home: u8, other: u8) -> u8 {
        self.default_ratings
            .get(usize::from(home))
            .and_then(|row| row.get(usize::from(other)))
            .copied()
            .unwrap_or(0)
    }

    /// The full default rating row of faction `home` (what a new actor's ratings start as).
    pub fn default_row(&self, home: u8) -> Option<&[u8]> {
        self.default_ratings
            .get(usize::from(home))
            .map(Vec::as_slice)
    }

    /// The id of the faction with this name (case-insensitive).
    pub fn find(&self, name: &str) -> Option<u8> {
        self.names
            .iter()
            .position(|n| !n.is_empty() && eq_ci(n, name))
            .and_then(|i| u8::try_from(i).ok())
    }

    /// Faction name by id (`None` when out of range or unnamed).
    pub fn name(&self, id: u8) -> Option<&str> {
        self.names
            .get(usize::from(id))
            .map(String::as_str)
            .filter(|s| !s.is_empty())
    }
}

/// Whether a rating makes aggressive NPCs attack (rating < 150).
pub fn is_hostile_rating(rating: u8) -> bool {
    rating < HOSTILE_BELOW
}

/// One attribute definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct AttributeDef {
    /// Name; empty = unused slot.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Shown as a skill.
    pub is_skill: bool,
    /// Hidden from the player.
    pub hidden: bool,
}

/// Attribute definitions (`Attributes.dat`).
///
/// TOML form: `assignment_points`, `names` (list, trailing empty names omitted),
/// `skills` and `hidden` (lists of indices).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    into = "serde_util::AttributesRepr",
    try_from = "serde_util::AttributesRepr"
)]
pub struct Attributes {
    /// Points a player distributes at character creation (`AttributeAssignment`).
    pub assignment_points: u8,
    /// The 40 definitions (index = attribute id).
    pub defs: Vec<AttributeDef>,
}

impl Default for Attributes {
    fn default() -> Self {
        Self {
            assignment_points: 0,
            defs: vec![AttributeDef::default(); ATTRIBUTE_COUNT],
        }
    }
}

impl Attributes {
    /// Case-insensitive lookup of an attribute name (`FindAttribute`; `None` for -1).
    #[doc(alias = "FindAttribute")]
    pub fn find(&self, name: &str) -> Option<u8> {
        if name.is_empty() {
            return None;
        }
        self.defs
            .iter()
            .position(|d| eq_ci(&d.name, name))
            .and_then(|i| u8::try_from(i).ok())
    }

    /// Attribute name by index.
    pub fn name(&self, index: u8) -> Option<&str> {
        self.defs
            .get(usize::from(index))
            .map(|d| d.name.as_str())
            .filter(|s| !s.is_empty())
    }
}

/// Engine-bound attribute indices (`Fixed Attributes.dat`); `None` = the file's 65535 (-1).
#[doc(alias = "Fixed Attributes")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
#[serde(deny_unknown_fields)]
pub struct FixedAttributes {
    /// `HealthStat`: death at ≤ 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health: Option<u8>,
    /// `EnergyStat`: spent by running.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub energy: Option<u8>,
    /// `BreathStat`: spent under water.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub breath: Option<u8>,
    /// `ToughnessStat`: armour step of the damage formulas.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub toughness: Option<u8>,
    /// `StrengthStat` (mandatory).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strength: Option<u8>,
    /// `SpeedStat` (mandatory).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speed: Option<u8>,
}

impl FixedAttributes {
    /// All six in file order (Health, Energy, Breath, Toughness, Strength, Speed) with names.
    pub fn all(&self) -> [(&'static str, Option<u8>); 6] {
        [
            ("health", self.health),
            ("energy", self.energy),
            ("breath", self.breath),
            ("toughness", self.toughness),
            ("strength", self.strength),
            ("speed", self.speed),
        ]
    }
}

// ---------------------------------------------------------------------------------------
// Environment and Misc
// ---------------------------------------------------------------------------------------

/// A season.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
#[serde(deny_unknown_fields)]
pub struct Season {
    /// Name; empty = unused.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Day of the year it starts.
    pub start_day: i32,
    /// Hour dusk begins.
    pub dusk_hour: i32,
    /// Hour dawn begins.
    pub dawn_hour: i32,
}

/// A month.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
#[serde(deny_unknown_fields)]
pub struct Month {
    /// Name; empty = unused.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Day of the year it starts (month 0's start day is the year length).
    pub start_day: i32,
}

/// Game clock and calendar (`Environment.dat`; defaults when the file is empty).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
#[serde(deny_unknown_fields)]
pub struct Environment {
    /// Current year.
    pub year: i32,
    /// Current day of the year.
    pub day: i32,
    /// Current hour.
    pub hour: i32,
    /// Current minute.
    pub minute: i32,
    /// Game minutes per real minute (one game minute every 60000/time_factor ms).
    pub time_factor: i32,
    /// 12 seasons (always 12 in memory; TOML omits trailing unused ones).
    #[serde(
        serialize_with = "serde_util::ser_trimmed",
        deserialize_with = "serde_util::de_padded_12",
        skip_serializing_if = "serde_util::all_default"
    )]
    pub seasons: Vec<Season>,
    /// 20 months (always 20 in memory; TOML omits trailing unused ones).
    #[serde(
        serialize_with = "serde_util::ser_trimmed",
        deserialize_with = "serde_util::de_padded_20",
        skip_serializing_if = "serde_util::all_default"
    )]
    pub months: Vec<Month>,
}

impl Default for Environment {
    fn default() -> Self {
        Self {
            year: 1,
            day: 1,
            hour: 12,
            minute: 0,
            time_factor: 10,
            seasons: vec![Season::default(); SEASON_COUNT],
            months: vec![Month::default(); MONTH_COUNT],
        }
    }
}

/// Server settings (`Misc.dat`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
#[serde(deny_unknown_fields)]
pub struct Misc {
    /// Gold a new character starts with.
    pub start_gold: i32,
    /// Reputation a new character starts with.
    pub start_reputation: i32,
    /// Portals force a reload of the area on the client.
    pub force_portals: bool,
    /// Milliseconds between melee attacks.
    pub combat_delay_ms: u16,
    /// Damage formula 1..4 (4 = the Attack script).
    pub combat_formula: u8,
    /// Weapons wear down.
    pub weapon_damage: bool,
    /// Armour wears down.
    pub armour_damage: bool,
    /// Rating lost by a killer towards the victim's faction.
    pub combat_rating_adjust: u8,
    /// New accounts can be created from the client.
    pub allow_account_creation: bool,
    /// Characters per account.
    pub max_account_chars: u8,
    /// Server UDP port (a file value of 0 becomes 25000).
    pub server_port: u16,
    /// Spells must be memorised before use.
    pub require_memorise: bool,
    /// How far (XZ distance, world units) a spell may be cast at a target; 0 = no limit,
    /// as in Realm Crafter. Not in `Misc.dat` (`[misc] cast_range` in `world.toml`);
    /// default [`DEFAULT_CAST_RANGE`].
    #[serde(skip_serializing_if = "is_default_cast_range")]
    pub cast_range: u32,
    /// Opt-in Health/Energy regeneration (not in Realm Crafter; off by default and never
    /// set by `Misc.dat`).
    #[serde(skip_serializing_if = "Regen::is_default")]
    pub regen: Regen,
    /// The system line every player gets on entering the game (Realm Crafter's
    /// `LoginMessage$`, typed into its server window and never saved; `[misc]
    /// login_message` here). Empty: no line.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub login_message: String,
}

/// The default [`Misc::cast_range`]: about the distance at which the client still draws
/// an actor's name.
pub const DEFAULT_CAST_RANGE: u32 = 300;

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_default_cast_range(v: &u32) -> bool {
    *v == DEFAULT_CAST_RANGE
}

/// Opt-in regeneration of attributes out of combat. Realm Crafter regenerates only
/// Breath (its `RegenTime` 16000 is declared but never used); this is the engine's own
/// rule, off unless a world turns it on (`[misc.regen]` in `world.toml`).
#[doc(alias = "RegenTime")]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
#[serde(deny_unknown_fields)]
pub struct Regen {
    /// Regeneration runs at all.
    pub enabled: bool,
    /// Milliseconds between two regeneration steps (Realm Crafter's `RegenTime`).
    pub interval_ms: u32,
    /// Percent of the attribute's maximum gained per step (at least 1 point).
    pub percent: u8,
    /// The attributes that regenerate, by name (as in `[attributes] names`, any case) or
    /// by index written as a number.
    pub attributes: Vec<String>,
}

impl Default for Regen {
    fn default() -> Self {
        Self {
            enabled: false,
            interval_ms: 16000,
            percent: 5,
            attributes: vec!["Health".into(), "Energy".into()],
        }
    }
}

impl Regen {
    /// Whether this is the default (off) configuration.
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

impl Default for Misc {
    fn default() -> Self {
        Self {
            start_gold: 50,
            start_reputation: 50,
            force_portals: true,
            combat_delay_ms: 1000,
            combat_formula: 1,
            weapon_damage: false,
            armour_damage: true,
            combat_rating_adjust: 0,
            allow_account_creation: true,
            max_account_chars: 4,
            server_port: DEFAULT_SERVER_PORT,
            require_memorise: true,
            cast_range: DEFAULT_CAST_RANGE,
            regen: Regen::default(),
            login_message: String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn world() -> World {
        World {
            actors: vec![
                ActorTemplate {
                    id: 2,
                    race: "B".into(),
                    ..ActorTemplate::default()
                },
                ActorTemplate {
                    id: 7,
                    race: "C".into(),
                    ..ActorTemplate::default()
                },
            ],
            items: vec![Item {
                id: 5,
                ..Item::default()
            }],
            areas: vec![
                Area {
                    name: "Plains".into(),
                    portals: vec![
                        Portal {
                            index: 0,
                            name: "Begin".into(),
                            ..Portal::default()
                        },
                        Portal {
                            index: 4,
                            name: "Gate".into(),
                            link_area: "test zone".into(),
                            link_name: "missing".into(),
                            ..Portal::default()
                        },
                    ],
                    waypoints: vec![
                        Waypoint {
                            index: 3,
                            next_a: Some(10),
                            ..Waypoint::default()
                        },
                        Waypoint {
                            index: 10,
                            prev: Some(3),
                            ..Waypoint::default()
                        },
                    ],
                    ..Area::default()
                },
                Area {
                    name: "Test Zone".into(),
                    portals: vec![Portal {
                        index: 2,
                        name: "Start".into(),
                        ..Portal::default()
                    }],
                    ..Area::default()
                },
            ],
            ..World::default()
        }
    }

    #[test]
    fn lookups() {
        let w = world();
        assert_eq!(w.template(7).map(|t| t.race.as_str()), Some("C"));
        assert!(w.template(3).is_none());
        assert!(w.item(5).is_some());
        assert_eq!(w.area_index("TEST ZONE"), Some(1));
        let plains = w.area_by_name("plains").unwrap();
        assert_eq!(plains.portal_by_name("GATE").map(|p| p.index), Some(4));
        assert_eq!(plains.portal(4).map(|p| p.name.as_str()), Some("Gate"));
        assert!(plains.portal(1).is_none());
        assert_eq!(plains.waypoint(10).and_then(|w| w.prev), Some(3));
        assert!(plains.waypoint(4).is_none());
        // Unknown link name: falls back to the destination's first portal.
        let gate = plains.portal(4).unwrap();
        let (area, dest) = w.portal_destination(gate).unwrap();
        assert_eq!(
            (area.name.as_str(), dest.name.as_str()),
            ("Test Zone", "Start")
        );
        assert!(w.portal_destination(plains.portal(0).unwrap()).is_none());
    }

    #[test]
    fn unsorted_lookups_still_work() {
        let mut w = world();
        w.actors.reverse();
        assert!(w.template(2).is_some());
        assert!(w.template(7).is_some());
    }

    #[test]
    fn waypoint_sentinels() {
        assert_eq!(Waypoint::link_from_raw(2000), None);
        assert_eq!(Waypoint::link_from_raw(2005), None);
        assert_eq!(Waypoint::link_from_raw(65535), None);
        assert_eq!(Waypoint::link_from_raw(1999), Some(1999));
        assert_eq!(Waypoint::link_from_raw(0), Some(0));
    }

    #[test]
    fn water_and_radius() {
        let w = Water {
            x: 0.0,
            y: 5.0,
            z: 0.0,
            width: 10.0,
            depth: 10.0,
            ..Water::default()
        };
        assert!(w.contains(5.0, 5.4, 5.0));
        assert!(!w.contains(5.0, 5.5, 5.0));
        assert!(!w.contains(0.0, 0.0, 5.0), "edges are outside");
        let t = ActorTemplate {
            radius: 20.0,
            ..ActorTemplate::default()
        };
        assert!((t.effective_radius() - 1.0).abs() < 1e-6);
    }

    #[test]
    fn factions_and_attributes() {
        let mut f = Factions::default();
        f.names[3] = "Orcs".into();
        f.default_ratings[3][0] = 20;
        assert_eq!(f.find("orcs"), Some(3));
        assert_eq!(f.find(""), None);
        assert_eq!(f.default_rating(3, 0), 20);
        assert_eq!(f.default_rating(200, 0), 0);
        assert!(is_hostile_rating(149));
        assert!(!is_hostile_rating(150));
        let mut a = Attributes::default();
        a.defs[4].name = "Speed".into();
        assert_eq!(a.find("SPEED"), Some(4));
        assert_eq!(a.find(""), None);
        assert_eq!(a.name(4), Some("Speed"));
        assert_eq!(a.name(5), None);
    }

    #[test]
    fn case_insensitive_names() {
        assert!(eq_ci("Northern Shrine", "northern SHRINE"));
        assert!(eq_ci("Éa", "éA"));
        assert!(!eq_ci("Plains", "Plain"));
    }
}
