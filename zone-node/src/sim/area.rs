//! The slice of the content model one AreaInstance needs, copied into flat, index-checked
//! tables when the zone is built: the area (waypoints, portals, triggers, spawn points,
//! water), actor templates, the engine-bound attribute indices and the `Misc.dat` rules.
//!
//! [`ZoneContent::from_world`] builds it from `shared::content::World` (the world itself is
//! kept too, for items, spells and projectiles); tests and the bench may also build it by
//! hand.

use std::collections::HashMap;
use std::sync::Arc;

use shared::content::{self as rc, World};

/// Waypoint link value meaning "none" (files store 2005 or 2000; anything outside
/// `0..2000` is treated as none).
pub const WAYPOINT_COUNT: usize = 2000;

/// Environment of an actor template.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Environment {
    /// Land and water.
    #[default]
    Amphibious,
    /// Water only: always `Underwater`, skips the water tick.
    Swim,
    /// Flies: its Y travels in the `P_StandardUpdate` tail.
    Fly,
    /// Land only.
    Walk,
}

impl Environment {
    /// From the `Actors.dat` byte (0 amphibious, 1 swim, 2 fly, 3 walk).
    pub fn from_u8(v: u8) -> Self {
        match v {
            1 => Self::Swim,
            2 => Self::Fly,
            3 => Self::Walk,
            _ => Self::Amphibious,
        }
    }
}

/// The engine-relevant part of an actor template.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TemplateProps {
    /// Template id.
    pub id: u16,
    /// Race.
    pub race: String,
    /// Class.
    pub class: String,
    /// Environment.
    pub environment: Environment,
    /// Collision radius, already multiplied by 0.05 as at load in Realm Crafter.
    pub radius: f32,
    /// 0 passive, 1 defensive, 2 aggressive, 3 non-combatant.
    pub aggressiveness: u8,
    /// `AggressiveRange` (template default 50).
    pub aggressive_range: f32,
    /// Can be ridden.
    pub rideable: bool,
    /// Home faction.
    pub faction: u8,
    /// XP multiplier.
    pub xp_multiplier: i32,
    /// Default damage type (no usable weapon).
    pub default_damage_type: u8,
    /// Genders byte (0 both, 1 male, 2 female, 3 none); decides the gender byte in P_NewActor.
    pub genders: u8,
    /// Attribute values and maxima (40).
    pub attributes: Vec<(i32, i32)>,
    /// Resistances (20).
    pub resistances: Vec<i32>,
    /// The inventory slot types this template lacks: the complement of Realm Crafter's
    /// `InventorySlots` mask (bit `type - 1`), so the default has every slot.
    pub slots_disabled: u32,
}

/// One waypoint.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Waypoint {
    /// Position.
    pub x: f32,
    /// Position.
    pub y: f32,
    /// Position.
    pub z: f32,
    /// NextWaypointA (`None` when outside `0..2000`).
    pub next_a: Option<u16>,
    /// NextWaypointB.
    pub next_b: Option<u16>,
    /// PrevWaypoint.
    pub prev: Option<u16>,
    /// Pause in seconds.
    pub pause_s: i32,
}

/// One portal slot.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Portal {
    /// Name (empty = unused slot).
    pub name: String,
    /// Linked area (empty = none).
    pub link_area: String,
    /// Linked portal name.
    pub link_name: String,
    /// Position.
    pub x: f32,
    /// Position.
    pub y: f32,
    /// Position.
    pub z: f32,
    /// Radius.
    pub size: f32,
    /// Facing on arrival.
    pub yaw: f32,
}

/// One trigger slot.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trigger {
    /// Position.
    pub x: f32,
    /// Position.
    pub y: f32,
    /// Position.
    pub z: f32,
    /// Radius (0 = unused).
    pub size: f32,
    /// Script.
    pub script: String,
    /// Method.
    pub method: String,
}

/// One spawn point slot.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SpawnPoint {
    /// Template to spawn.
    pub template: u16,
    /// Waypoint it starts at.
    pub waypoint: u16,
    /// Scatter size.
    pub size: f32,
    /// `SpawnScript`.
    pub spawn_script: String,
    /// Right-click script of the spawned actor.
    pub actor_script: String,
    /// Death script of the spawned actor.
    pub death_script: String,
    /// `SpawnMax` (0 = unused slot).
    pub max: u16,
    /// `SpawnFrequency` in seconds.
    pub frequency_s: u16,
    /// Wander range (>= 5 = wander around the waypoint).
    pub range: f32,
}

/// One water volume (the area's `FirstWater` chain, kept as a list).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Water {
    /// Corner.
    pub x: f32,
    /// Surface height.
    pub y: f32,
    /// Corner.
    pub z: f32,
    /// Extent along X.
    pub width: f32,
    /// Extent along Z.
    pub depth: f32,
    /// Damage per second (0 = none).
    pub damage: u16,
    /// Damage type (resistance index).
    pub damage_type: u16,
}

/// One area.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AreaData {
    /// Name.
    pub name: String,
    /// PvP allowed.
    pub pvp: bool,
    /// Gravity (0..1000, default 300).
    pub gravity: u16,
    /// Outdoors.
    pub outdoors: bool,
    /// Chances of weathers 1..5 (rain, snow, fog, storm, wind).
    pub weather_chance: [u8; 5],
    /// Area whose instance-0 weather is copied (empty = none).
    pub weather_link: String,
    /// Entry script.
    pub entry_script: String,
    /// Exit script.
    pub exit_script: String,
    /// Waypoints (index = waypoint number, up to 2000).
    pub waypoints: Vec<Waypoint>,
    /// Portal slots (index = portal number).
    pub portals: Vec<Portal>,
    /// Trigger slots.
    pub triggers: Vec<Trigger>,
    /// Spawn point slots.
    pub spawns: Vec<SpawnPoint>,
    /// Water volumes.
    pub water: Vec<Water>,
}

impl AreaData {
    /// The portal with this name, case-insensitive.
    pub fn portal_named(&self, name: &str) -> Option<u16> {
        self.portals
            .iter()
            .position(|p| !p.name.is_empty() && p.name.eq_ignore_ascii_case(name))
            .and_then(|i| u16::try_from(i).ok())
    }

    /// The waypoint, if the index is valid.
    pub fn waypoint(&self, i: u16) -> Option<&Waypoint> {
        self.waypoints.get(usize::from(i))
    }

    /// XZ bounds `(min_x, min_z, max_x, max_z)` of everything placed in the area.
    pub fn bounds(&self) -> Option<(f32, f32, f32, f32)> {
        let mut b: Option<(f32, f32, f32, f32)> = None;
        let mut add = |x: f32, z: f32| {
            if !x.is_finite() || !z.is_finite() {
                return;
            }
            b = Some(match b {
                None => (x, z, x, z),
                Some((a, c, d, e)) => (a.min(x), c.min(z), d.max(x), e.max(z)),
            });
        };
        for w in &self.waypoints {
            add(w.x, w.z);
        }
        for p in self.portals.iter().filter(|p| !p.name.is_empty()) {
            add(p.x, p.z);
        }
        for t in self.triggers.iter().filter(|t| t.size > 0.0) {
            add(t.x, t.z);
        }
        for w in &self.water {
            add(w.x, w.z);
            add(w.x + w.width, w.z + w.depth);
        }
        b
    }
}

/// Engine-bound attribute indices (`Fixed Attributes.dat`); `None` = not used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FixedAttributes {
    /// HealthStat.
    pub health: Option<u8>,
    /// EnergyStat.
    pub energy: Option<u8>,
    /// BreathStat.
    pub breath: Option<u8>,
    /// ToughnessStat.
    pub toughness: Option<u8>,
    /// StrengthStat.
    pub strength: Option<u8>,
    /// SpeedStat.
    pub speed: Option<u8>,
}

impl FixedAttributes {
    /// The sample project's: Health 0, Energy -1, Breath -1, Toughness 6, Strength 2, Speed 4.
    pub fn sample() -> Self {
        Self {
            health: Some(0),
            energy: None,
            breath: None,
            toughness: Some(6),
            strength: Some(2),
            speed: Some(4),
        }
    }

    /// Whether `attr` is broadcast to the zone (Health, Speed, Energy).
    pub fn is_important(&self, attr: u8) -> bool {
        Some(attr) == self.health || Some(attr) == self.speed || Some(attr) == self.energy
    }
}

/// `Misc.dat` settings the simulation uses.
#[derive(Clone, Debug, PartialEq)]
pub struct GameRules {
    /// Minimum ms between attacks.
    pub combat_delay_ms: u64,
    /// 1..=4.
    pub combat_formula: u8,
    /// Weapons wear.
    pub weapon_damage: bool,
    /// Armour wears (the attacker's, quirk; see docs/simulation.md).
    pub armour_damage: bool,
    /// Rating lost per kill.
    pub combat_rating_adjust: u8,
    /// Spells must be memorised.
    pub require_memorise: bool,
    /// Farthest XZ distance of a cast's target; `None` = no limit (Realm Crafter).
    pub cast_range: Option<f32>,
    /// Opt-in regeneration ([`super::regen`]); `None` = off (Realm Crafter).
    pub regen: Option<RegenRule>,
    /// `LoginMessage$`: the system line sent at `P_StartGame` (empty: none).
    pub login_message: String,
}

/// Regeneration resolved against the world's attributes (`[misc.regen]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegenRule {
    /// Milliseconds between two steps (at least 1).
    pub interval_ms: u64,
    /// Percent of Max gained per step (at least 1 point).
    pub percent: u32,
    /// Attribute indices that regenerate.
    pub attributes: Vec<u8>,
}

impl RegenRule {
    /// Resolve a world's regeneration settings: names match `names` (any case), numbers
    /// are indices; unknown names and indices out of range are left out. `None` when the
    /// rule is off or names no attribute.
    pub fn resolve(r: &shared::content::Regen, names: &[String]) -> Option<Self> {
        if !r.enabled {
            return None;
        }
        let mut attributes = Vec::new();
        for n in &r.attributes {
            let n = n.trim();
            let idx = match n.parse::<u8>() {
                Ok(i) => Some(i),
                Err(_) => names
                    .iter()
                    .position(|x| !x.is_empty() && x.eq_ignore_ascii_case(n))
                    .and_then(|i| u8::try_from(i).ok()),
            };
            if let Some(i) = idx.filter(|&i| {
                usize::from(i) < super::events::ATTRIBUTE_COUNT && !attributes.contains(&i)
            }) {
                attributes.push(i);
            }
        }
        (!attributes.is_empty()).then(|| Self {
            interval_ms: u64::from(r.interval_ms).max(1),
            percent: u32::from(r.percent),
            attributes,
        })
    }
}

impl Default for GameRules {
    fn default() -> Self {
        Self {
            combat_delay_ms: 1000,
            combat_formula: 1,
            weapon_damage: false,
            armour_damage: true,
            combat_rating_adjust: 0,
            require_memorise: true,
            cast_range: None,
            regen: None,
            login_message: String::new(),
        }
    }
}

/// Everything the zone reads from content.
#[derive(Clone, Debug, Default)]
pub struct ZoneContent {
    /// The area.
    pub area: AreaData,
    /// Actor templates by id.
    pub templates: HashMap<u16, TemplateProps>,
    /// Fixed attribute indices.
    pub fixed: FixedAttributes,
    /// Combat and misc rules.
    pub rules: GameRules,
    /// Attribute names (40), for `FindAttribute`.
    pub attribute_names: Vec<String>,
    /// Faction default ratings `[home][other]`, 100 × 100 (may be empty: all 100).
    pub faction_defaults: Vec<Vec<u8>>,
    /// The whole world (items, spells, projectiles, other areas).
    pub world: Arc<World>,
    /// The world's compiled scripts (shared by every zone of a node).
    pub scripts: Arc<script::bytecode::ScriptSet>,
}

impl ZoneContent {
    /// `FindAttribute`: case-insensitive; `None` for unknown names.
    pub fn find_attribute(&self, name: &str) -> Option<u8> {
        let name = name.trim();
        if name.is_empty() {
            return None;
        }
        self.attribute_names
            .iter()
            .position(|n| n.eq_ignore_ascii_case(name))
            .and_then(|i| u8::try_from(i).ok())
            .filter(|&i| usize::from(i) < super::events::ATTRIBUTE_COUNT)
    }

    /// A template by id.
    pub fn template(&self, id: u16) -> Option<&TemplateProps> {
        self.templates.get(&id)
    }

    /// The default rating of faction `home` towards `other` (100 when unknown).
    pub fn default_rating(&self, home: u8, other: usize) -> u8 {
        self.faction_defaults
            .get(usize::from(home))
            .and_then(|r| r.get(other))
            .copied()
            .unwrap_or(100)
    }
}

impl TemplateProps {
    /// From a content template.
    pub fn from_template(t: &rc::ActorTemplate) -> Self {
        Self {
            id: t.id,
            race: t.race.clone(),
            class: t.class.clone(),
            environment: match t.environment {
                rc::ActorEnvironment::Amphibious => Environment::Amphibious,
                rc::ActorEnvironment::Swim => Environment::Swim,
                rc::ActorEnvironment::Fly => Environment::Fly,
                rc::ActorEnvironment::Walk => Environment::Walk,
            },
            radius: t.effective_radius(),
            aggressiveness: t.aggressiveness.as_u8(),
            aggressive_range: t.aggressive_range as f32,
            rideable: t.rideable,
            faction: t.home_faction,
            xp_multiplier: t.xp_multiplier,
            default_damage_type: t.default_damage_type,
            genders: match t.genders {
                rc::Genders::Both => 0,
                rc::Genders::Male => 1,
                rc::Genders::Female => 2,
                rc::Genders::None => 3,
            },
            attributes: t
                .attributes
                .iter()
                .map(|p| (i32::from(p.value), i32::from(p.max)))
                .collect(),
            resistances: t.resistances.iter().map(|&r| i32::from(r)).collect(),
            slots_disabled: !t.inventory_slots,
        }
    }
}

fn dense<T: Clone + Default, S>(
    items: &[S],
    index: impl Fn(&S) -> u16,
    f: impl Fn(&S) -> T,
) -> Vec<T> {
    let n = items
        .iter()
        .map(|s| usize::from(index(s)) + 1)
        .max()
        .unwrap_or(0);
    let mut v = vec![T::default(); n];
    for s in items {
        if let Some(d) = v.get_mut(usize::from(index(s))) {
            *d = f(s);
        }
    }
    v
}

impl AreaData {
    /// From a content area: slot tables become dense vectors indexed by slot.
    pub fn from_area(a: &rc::Area) -> Self {
        Self {
            name: a.name.clone(),
            pvp: a.pvp,
            gravity: a.gravity,
            outdoors: a.outdoors,
            weather_chance: a.weather_chances,
            weather_link: a.weather_link.clone(),
            entry_script: a.entry_script.clone(),
            exit_script: a.exit_script.clone(),
            waypoints: dense(
                &a.waypoints,
                |w| w.index,
                |w| Waypoint {
                    x: w.x,
                    y: w.y,
                    z: w.z,
                    next_a: w.next_a,
                    next_b: w.next_b,
                    prev: w.prev,
                    pause_s: w.pause_secs,
                },
            ),
            portals: dense(
                &a.portals,
                |p| p.index,
                |p| Portal {
                    name: p.name.clone(),
                    link_area: p.link_area.clone(),
                    link_name: p.link_name.clone(),
                    x: p.x,
                    y: p.y,
                    z: p.z,
                    size: p.size,
                    yaw: p.yaw,
                },
            ),
            triggers: dense(
                &a.triggers,
                |t| t.index,
                |t| Trigger {
                    x: t.x,
                    y: t.y,
                    z: t.z,
                    size: t.size,
                    script: t.script.clone(),
                    method: t.method.clone(),
                },
            ),
            spawns: dense(
                &a.spawns,
                |s| s.index,
                |s| SpawnPoint {
                    template: s.template,
                    waypoint: s.waypoint,
                    size: s.size,
                    spawn_script: s.spawn_script.clone(),
                    actor_script: s.actor_script.clone(),
                    death_script: s.death_script.clone(),
                    max: s.max,
                    frequency_s: s.frequency_secs,
                    range: s.range,
                },
            ),
            water: a
                .water
                .iter()
                .map(|w| Water {
                    x: w.x,
                    y: w.y,
                    z: w.z,
                    width: w.width,
                    depth: w.depth,
                    damage: w.damage,
                    damage_type: w.damage_type,
                })
                .collect(),
        }
    }
}

impl ZoneContent {
    /// The content of one area of a world; `None` if the area does not exist.
    pub fn from_world(world: Arc<World>, area: &str) -> Option<Self> {
        let a = world.area_by_name(area)?;
        let f = world.fixed_attributes;
        let m = &world.misc;
        Some(Self {
            area: AreaData::from_area(a),
            templates: world
                .actors
                .iter()
                .map(|t| (t.id, TemplateProps::from_template(t)))
                .collect(),
            fixed: FixedAttributes {
                health: f.health,
                energy: f.energy,
                breath: f.breath,
                toughness: f.toughness,
                strength: f.strength,
                speed: f.speed,
            },
            rules: GameRules {
                combat_delay_ms: u64::from(m.combat_delay_ms),
                combat_formula: m.combat_formula,
                weapon_damage: m.weapon_damage,
                armour_damage: m.armour_damage,
                combat_rating_adjust: m.combat_rating_adjust,
                require_memorise: m.require_memorise,
                cast_range: (m.cast_range > 0)
                    .then(|| u16::try_from(m.cast_range).map_or(f32::MAX, f32::from)),
                regen: RegenRule::resolve(
                    &m.regen,
                    &world
                        .attributes
                        .defs
                        .iter()
                        .map(|d| d.name.clone())
                        .collect::<Vec<_>>(),
                ),
                login_message: m.login_message.clone(),
            },
            attribute_names: world
                .attributes
                .defs
                .iter()
                .map(|d| d.name.clone())
                .collect(),
            faction_defaults: world.factions.default_ratings.clone(),
            world: world.clone(),
            scripts: Arc::default(),
        })
    }
}
