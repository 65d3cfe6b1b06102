//! Cross-reference checks over a whole [`World`]: hard errors and tolerated warnings.
//!
//! | check | outcome |
//! |---|---|
//! | table sizes (40 attributes, 20 resistances/damage types, 100×100 factions, 12 seasons, 20 months) | error |
//! | duplicate or empty area names (case-insensitive), duplicate template/item/spell/projectile ids | error |
//! | slot index out of range or duplicated (trigger < 150, waypoint < 2000, portal < 100, spawn < 1000) | error |
//! | waypoint link to a slot that holds no waypoint | error |
//! | spawn naming a missing template, or a waypoint slot holding no waypoint | error |
//! | damage type index ≥ 20 (water, weapon, projectile, template default) | error |
//! | home faction ≥ 100 | error |
//! | fixed attribute index ≥ 40; Strength or Speed unset | error |
//! | combat formula outside 1..4 | error |
//! | portal linking to a missing area | warning (Realm Crafter: the portal does nothing) |
//! | portal `link_name` (non-empty) not found in the linked area | warning (falls back to its first portal) |
//! | weather link to a missing area | warning (the area rolls its own weather) |
//! | playable template whose start area / start portal is missing | warning |
//! | ranged weapon whose projectile does not exist | warning (it cannot fire) |
//! | no playable template, no area | warning |

use std::collections::HashSet;

use super::error::{ContentError, ContentWarning};
use super::model::*;

/// Which source the world came from; only changes the file names used in messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// A Realm Crafter `Server Data` directory (`Areas/<name>.dat`, `Actors.dat` ...).
    RealmCrafter,
    /// A native world directory (`areas/<name>.toml`, `actors.toml` ...).
    NativeDir,
    /// One TOML file, or a world built in memory; messages say `world`.
    Single,
}

impl Layout {
    fn area(self, name: &str) -> String {
        match self {
            Self::RealmCrafter => super::rc::area_file_label(name),
            Self::NativeDir => format!("areas/{name}.toml"),
            Self::Single => format!("world: area {name}"),
        }
    }

    fn global(self, rc: &str, native: &str) -> String {
        match self {
            Self::RealmCrafter => rc.to_string(),
            Self::NativeDir => native.to_string(),
            Self::Single => "world".to_string(),
        }
    }

    fn actors(self) -> String {
        self.global(super::rc::ACTORS_FILE, "actors.toml")
    }

    fn items(self) -> String {
        self.global(super::rc::ITEMS_FILE, "items.toml")
    }
}

struct Check {
    layout: Layout,
    warnings: Vec<ContentWarning>,
}

impl Check {
    fn warn(&mut self, file: String, record: String, problem: String) {
        self.warnings
            .push(ContentWarning::new(file, record, problem));
    }
}

fn err<T>(
    file: String,
    record: impl Into<String>,
    problem: impl Into<String>,
) -> Result<T, ContentError> {
    Err(ContentError::new(file, record, problem))
}

fn check_len(file: String, what: &str, len: usize, want: usize) -> Result<(), ContentError> {
    if len != want {
        return err(file, what, format!("has {len} entries, expected {want}"));
    }
    Ok(())
}

fn check_damage_type(file: &str, record: &str, dt: u16) -> Result<(), ContentError> {
    if usize::from(dt) >= DAMAGE_TYPE_COUNT {
        return err(
            file.to_string(),
            record,
            format!("damage type {dt} is out of range 0..{DAMAGE_TYPE_COUNT}"),
        );
    }
    Ok(())
}

fn check_ids<T>(
    file: String,
    what: &str,
    v: &[T],
    id: impl Fn(&T) -> u16,
) -> Result<(), ContentError> {
    let mut seen = HashSet::new();
    for t in v {
        if !seen.insert(id(t)) {
            return err(file, format!("{what} {}", id(t)), "id used more than once");
        }
    }
    Ok(())
}

fn check_slots<T>(
    file: &str,
    what: &str,
    v: &[T],
    limit: usize,
    index: impl Fn(&T) -> u16,
) -> Result<(), ContentError> {
    let mut prev: Option<u16> = None;
    for t in v {
        let i = index(t);
        if usize::from(i) >= limit {
            return err(
                file.to_string(),
                format!("{what} {i}"),
                format!("slot index out of range 0..{limit}"),
            );
        }
        if let Some(p) = prev {
            if p == i {
                return err(
                    file.to_string(),
                    format!("{what} {i}"),
                    "slot index used more than once",
                );
            }
            if p > i {
                return err(
                    file.to_string(),
                    format!("{what} {i}"),
                    format!("slots must be sorted by index ({what} {i} comes after {what} {p})"),
                );
            }
        }
        prev = Some(i);
    }
    Ok(())
}

impl World {
    /// Checks table sizes, ids and every cross-reference; returns the tolerated problems
    /// as warnings. Messages name the world as `world` (see [`World::validate_as`]).
    pub fn validate(&self) -> Result<Vec<ContentWarning>, ContentError> {
        self.validate_as(Layout::Single)
    }

    /// [`World::validate`] with file names in messages matching the source `layout`.
    pub fn validate_as(&self, layout: Layout) -> Result<Vec<ContentWarning>, ContentError> {
        let mut c = Check {
            layout,
            warnings: Vec::new(),
        };
        self.check_tables(&mut c)?;
        self.check_templates(&mut c)?;
        self.check_items(&mut c)?;
        self.check_areas(&mut c)?;
        Ok(c.warnings)
    }

    fn check_tables(&self, c: &mut Check) -> Result<(), ContentError> {
        let l = c.layout;
        check_len(
            l.global(super::rc::DAMAGE_FILE, "world.toml"),
            "damage_types",
            self.damage_types.len(),
            DAMAGE_TYPE_COUNT,
        )?;
        let ffile = l.global(super::rc::FACTIONS_FILE, "world.toml");
        check_len(
            ffile.clone(),
            "faction names",
            self.factions.names.len(),
            FACTION_COUNT,
        )?;
        check_len(
            ffile.clone(),
            "faction ratings",
            self.factions.default_ratings.len(),
            FACTION_COUNT,
        )?;
        for (i, row) in self.factions.default_ratings.iter().enumerate() {
            check_len(
                ffile.clone(),
                &format!("faction {i} ratings"),
                row.len(),
                FACTION_COUNT,
            )?;
        }
        let afile = l.global(super::rc::ATTRIBUTES_FILE, "world.toml");
        check_len(
            afile,
            "attributes",
            self.attributes.defs.len(),
            ATTRIBUTE_COUNT,
        )?;
        let efile = l.global(super::rc::ENVIRONMENT_FILE, "world.toml");
        check_len(
            efile.clone(),
            "seasons",
            self.environment.seasons.len(),
            SEASON_COUNT,
        )?;
        check_len(efile, "months", self.environment.months.len(), MONTH_COUNT)?;
        let fx = l.global(super::rc::FIXED_ATTRIBUTES_FILE, "world.toml");
        for (name, v) in self.fixed_attributes.all() {
            if let Some(i) = v
                && usize::from(i) >= ATTRIBUTE_COUNT
            {
                return err(
                    fx,
                    name,
                    format!("attribute index {i} is out of range 0..40"),
                );
            }
        }
        if self.fixed_attributes.strength.is_none() {
            return err(fx, "strength", "the Strength attribute index is mandatory");
        }
        if self.fixed_attributes.speed.is_none() {
            return err(fx, "speed", "the Speed attribute index is mandatory");
        }
        let misc = l.global(super::rc::MISC_FILE, "world.toml");
        if !(1..=4).contains(&self.misc.combat_formula) {
            return err(
                misc,
                "CombatFormula",
                format!(
                    "combat formula {} is not one of 1..4",
                    self.misc.combat_formula
                ),
            );
        }
        let pfile = l.global(super::rc::PROJECTILES_FILE, "world.toml");
        check_ids(pfile.clone(), "projectile", &self.projectiles, |p| p.id)?;
        for p in &self.projectiles {
            check_damage_type(&pfile, &format!("projectile {}", p.id), p.damage_type)?;
        }
        check_ids(
            l.global(super::rc::SPELLS_FILE, "world.toml"),
            "spell",
            &self.spells,
            |s| s.id,
        )?;
        Ok(())
    }

    fn check_templates(&self, c: &mut Check) -> Result<(), ContentError> {
        let file = c.layout.actors();
        check_ids(file.clone(), "actor", &self.actors, |t| t.id)?;
        for t in &self.actors {
            let rec = format!("actor {} ({})", t.id, t.display_name());
            check_len(
                file.clone(),
                &format!("{rec} attributes"),
                t.attributes.len(),
                ATTRIBUTE_COUNT,
            )?;
            if usize::from(t.home_faction) >= FACTION_COUNT {
                return err(
                    file,
                    rec,
                    format!("home faction {} is out of range 0..100", t.home_faction),
                );
            }
            check_damage_type(&file, &rec, u16::from(t.default_damage_type))?;
            if t.playable {
                match self.area_by_name(&t.start_area) {
                    None => c.warn(
                        file.clone(),
                        rec.clone(),
                        format!("start area {:?} does not exist", t.start_area),
                    ),
                    Some(a) => {
                        if a.portal_by_name(&t.start_portal).is_none() {
                            c.warn(
                                file.clone(),
                                rec.clone(),
                                format!(
                                    "start portal {:?} does not exist in area {:?}",
                                    t.start_portal, a.name
                                ),
                            );
                        }
                    }
                }
            }
        }
        if !self.actors.iter().any(|t| t.playable) {
            c.warn(
                file,
                String::new(),
                "no playable template: players cannot create characters".into(),
            );
        }
        Ok(())
    }

    fn check_items(&self, c: &mut Check) -> Result<(), ContentError> {
        let file = c.layout.items();
        check_ids(file.clone(), "item", &self.items, |t| t.id)?;
        for it in &self.items {
            let rec = format!("item {} ({})", it.id, it.name);
            check_len(
                file.clone(),
                &format!("{rec} attributes"),
                it.attributes.len(),
                ATTRIBUTE_COUNT,
            )?;
            if let ItemKind::Weapon {
                damage_type,
                weapon_type,
                projectile,
                ..
            } = &it.kind
            {
                check_damage_type(&file, &rec, *damage_type)?;
                if *weapon_type == WeaponType::Ranged && self.projectile(*projectile).is_none() {
                    c.warn(
                        file.clone(),
                        rec,
                        format!(
                            "ranged weapon fires projectile {projectile}, which does not exist"
                        ),
                    );
                }
            }
        }
        Ok(())
    }

    fn check_areas(&self, c: &mut Check) -> Result<(), ContentError> {
        if self.areas.is_empty() {
            c.warn(
                c.layout.global(super::rc::AREAS_DIR, "areas"),
                String::new(),
                "the world has no areas".into(),
            );
        }
        let mut names = HashSet::new();
        for a in &self.areas {
            let file = c.layout.area(&a.name);
            if a.name.is_empty() {
                return err(file, "", "area name is empty");
            }
            if !names.insert(a.name.to_lowercase()) {
                return err(
                    file,
                    "",
                    format!(
                        "area name {:?} is used more than once (names are case-insensitive)",
                        a.name
                    ),
                );
            }
            check_slots(&file, "trigger", &a.triggers, TRIGGER_SLOTS, |t| t.index)?;
            check_slots(&file, "waypoint", &a.waypoints, WAYPOINT_SLOTS, |t| t.index)?;
            check_slots(&file, "portal", &a.portals, PORTAL_SLOTS, |t| t.index)?;
            check_slots(&file, "spawn", &a.spawns, SPAWN_SLOTS, |t| t.index)?;
            for w in &a.waypoints {
                for (what, link) in [("next_a", w.next_a), ("next_b", w.next_b), ("prev", w.prev)] {
                    if let Some(l) = link
                        && a.waypoint(l).is_none()
                    {
                        return err(
                            file,
                            format!("waypoint {}", w.index),
                            format!("{what} links to waypoint {l}, which does not exist"),
                        );
                    }
                }
            }
            for s in &a.spawns {
                let rec = format!("spawn {}", s.index);
                if self.template(s.template).is_none() {
                    return err(
                        file,
                        rec,
                        format!("actor template {} does not exist", s.template),
                    );
                }
                if a.waypoint(s.waypoint).is_none() {
                    return err(file, rec, format!("waypoint {} does not exist", s.waypoint));
                }
            }
            for (i, w) in a.water.iter().enumerate() {
                check_damage_type(&file, &format!("water {i}"), w.damage_type)?;
            }
            for p in &a.portals {
                if p.link_area.is_empty() {
                    continue;
                }
                let rec = format!("portal {} ({})", p.index, p.name);
                match self.area_by_name(&p.link_area) {
                    None => c.warn(
                        file.clone(),
                        rec,
                        format!("links to area {:?}, which does not exist", p.link_area),
                    ),
                    Some(dest) => {
                        if dest.portals.is_empty() {
                            c.warn(
                                file.clone(),
                                rec,
                                format!("links to area {:?}, which has no portals", dest.name),
                            );
                        } else if !p.link_name.is_empty()
                            && dest.portal_by_name(&p.link_name).is_none()
                        {
                            c.warn(
                                file.clone(),
                                rec,
                                format!(
                                    "links to portal {:?} in area {:?}, which does not exist (the first portal is used)",
                                    p.link_name, dest.name
                                ),
                            );
                        }
                    }
                }
            }
            if !a.weather_link.is_empty() && self.area_by_name(&a.weather_link).is_none() {
                c.warn(
                    file,
                    "header".into(),
                    format!("weather link {:?} is not an area", a.weather_link),
                );
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::minimal_world;

    #[test]
    fn minimal_is_valid() {
        assert_eq!(minimal_world().validate().unwrap(), Vec::new());
    }

    #[test]
    fn errors_name_the_record() {
        let mut w = minimal_world();
        w.areas[0].spawns.push(SpawnPoint {
            index: 3,
            template: 9,
            ..SpawnPoint::default()
        });
        assert_eq!(
            w.validate().unwrap_err().to_string(),
            "world: area Start: spawn 3: actor template 9 does not exist"
        );
        w.areas[0].spawns[0].template = 0;
        assert_eq!(
            w.validate_as(Layout::NativeDir).unwrap_err().to_string(),
            "areas/Start.toml: spawn 3: waypoint 0 does not exist"
        );
        w.areas[0].waypoints.push(Waypoint::default());
        w.validate().unwrap();

        w.areas[0].water.push(Water {
            damage_type: 20,
            ..Water::default()
        });
        assert!(w.validate().unwrap_err().problem.contains("damage type 20"));
        w.areas[0].water.clear();

        w.areas[0].portals.push(Portal {
            index: 0,
            name: "Dup".into(),
            ..Portal::default()
        });
        assert!(w.validate().unwrap_err().problem.contains("more than once"));
        w.areas[0].portals.pop();

        w.areas[0].portals.push(Portal {
            index: 100,
            ..Portal::default()
        });
        assert!(w.validate().unwrap_err().problem.contains("out of range"));
        w.areas[0].portals.pop();

        let mut dup = w.areas[0].clone();
        dup.name = "START".into();
        w.areas.push(dup);
        assert!(
            w.validate()
                .unwrap_err()
                .problem
                .contains("case-insensitive")
        );
        w.areas.pop();

        w.fixed_attributes.speed = None;
        assert_eq!(w.validate().unwrap_err().record, "speed");
        w.fixed_attributes.speed = Some(40);
        assert!(w.validate().unwrap_err().problem.contains("out of range"));
        w.fixed_attributes.speed = Some(2);

        w.actors[0].home_faction = 100;
        assert!(w.validate().unwrap_err().problem.contains("home faction"));
        w.actors[0].home_faction = 0;

        w.misc.combat_formula = 0;
        assert_eq!(w.validate().unwrap_err().record, "CombatFormula");
        w.misc.combat_formula = 4;

        w.actors[0].attributes.pop();
        assert!(w.validate().unwrap_err().problem.contains("expected 40"));
    }

    #[test]
    fn warnings_are_collected() {
        let mut w = minimal_world();
        w.areas[0].portals.push(Portal {
            index: 1,
            name: "Out".into(),
            link_area: "Nowhere".into(),
            ..Portal::default()
        });
        w.areas[0].weather_link = "Elsewhere".into();
        w.actors[0].start_portal = "Gone".into();
        w.items.push(Item {
            id: 1,
            kind: ItemKind::Weapon {
                damage: 1,
                damage_type: 0,
                weapon_type: WeaponType::Ranged,
                projectile: 4,
                range: 10.0,
                anim: String::new(),
            },
            ..Item::default()
        });
        let warnings = w.validate().unwrap();
        assert_eq!(warnings.len(), 4, "{warnings:?}");
    }
}
