//! The native, human-editable world format (TOML): one file, or a directory of files.
//!
//! * **Single file**: the whole [`World`] in one TOML document (`[misc]`, `[[faction]]`,
//!   `[[actor]]`, `[[item]]`, `[[area]]` with `[[area.portal]]` ...).
//! * **Directory**: `world.toml` (everything global) + `actors.toml` (`[[actor]]`) +
//!   `items.toml` (`[[item]]`) + `areas/<Name>.toml` (one area each; `name` defaults to
//!   the file stem). Anything may also be written inline in `world.toml`; the parts are
//!   merged, sorted and validated.
//!
//! Pure: these functions take and return strings; [`super::fs`] does the file access.
//! See `docs/content.md` for every field and its default.

use serde::{Deserialize, Serialize};

use super::error::{ContentError, ContentWarning};
use super::model::{ActorTemplate, Area, Item, World, eq_ci};
use super::validate::Layout;

/// Name of the main file of a native world directory.
pub const WORLD_FILE: &str = "world.toml";
/// Name of the actor templates file of a native world directory.
pub const ACTORS_FILE: &str = "actors.toml";
/// Name of the items file of a native world directory.
pub const ITEMS_FILE: &str = "items.toml";
/// Directory of per-area files in a native world directory.
pub const AREAS_DIR: &str = "areas";

/// The texts of a native world directory, gathered by [`super::fs`] or embedded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NativeFiles {
    /// `world.toml`.
    pub world: String,
    /// `actors.toml`, if present.
    pub actors: Option<String>,
    /// `items.toml`, if present.
    pub items: Option<String>,
    /// `areas/<stem>.toml`: (file stem, text).
    pub areas: Vec<(String, String)>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ActorsFile {
    #[serde(default)]
    actor: Vec<ActorTemplate>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ItemsFile {
    #[serde(default)]
    item: Vec<Item>,
}

fn de_err(file: &str, e: &toml::de::Error) -> ContentError {
    // The toml message carries line, column and the offending key.
    ContentError::new(file, "", e.to_string().trim_end().to_string())
}

fn ser_err(file: &str, e: &toml::ser::Error) -> ContentError {
    ContentError::new(file, "", format!("cannot write TOML: {e}"))
}

fn sort_world(w: &mut World) {
    w.actors.sort_by_key(|t| t.id);
    w.items.sort_by_key(|t| t.id);
    w.spells.sort_by_key(|t| t.id);
    w.projectiles.sort_by_key(|t| t.id);
    w.areas.sort_by(|a, b| a.name.cmp(&b.name));
    for a in &mut w.areas {
        a.triggers.sort_by_key(|t| t.index);
        a.waypoints.sort_by_key(|t| t.index);
        a.portals.sort_by_key(|t| t.index);
        a.spawns.sort_by_key(|t| t.index);
    }
}

/// Parses a single-file world (not validated; see [`load_single`]).
pub fn parse_world_toml(file: &str, text: &str) -> Result<World, ContentError> {
    let mut w: World = toml::from_str(text).map_err(|e| de_err(file, &e))?;
    sort_world(&mut w);
    Ok(w)
}

/// Parses and validates a single-file world. `file` names the source in messages.
pub fn load_single(file: &str, text: &str) -> Result<(World, Vec<ContentWarning>), ContentError> {
    let w = parse_world_toml(file, text)?;
    let warnings = w.validate_as(Layout::Single).map_err(|mut e| {
        if e.file == "world" {
            e.file = file.to_string();
        }
        e
    })?;
    Ok((w, warnings))
}

/// Writes the whole world as one TOML document.
pub fn to_single_toml(world: &World) -> Result<String, ContentError> {
    toml::to_string(world).map_err(|e| ser_err("world", &e))
}

/// Parses an area file; an empty or missing `name` takes the file stem, a different one
/// is an error (the client loads the area's geometry by that name).
pub fn parse_area_toml(stem: &str, text: &str) -> Result<Area, ContentError> {
    let file = format!("{AREAS_DIR}/{stem}.toml");
    let mut a: Area = toml::from_str(text).map_err(|e| de_err(&file, &e))?;
    if a.name.is_empty() {
        a.name = stem.to_string();
    } else if !eq_ci(&a.name, stem) {
        return Err(ContentError::new(
            file,
            "name",
            format!("area name {:?} differs from the file name {stem:?}", a.name),
        ));
    }
    Ok(a)
}

/// Builds and validates a world from the texts of a native world directory.
pub fn load_dir(files: &NativeFiles) -> Result<(World, Vec<ContentWarning>), ContentError> {
    let mut w: World = toml::from_str(&files.world).map_err(|e| de_err(WORLD_FILE, &e))?;
    if let Some(text) = &files.actors {
        let a: ActorsFile = toml::from_str(text).map_err(|e| de_err(ACTORS_FILE, &e))?;
        w.actors.extend(a.actor);
    }
    if let Some(text) = &files.items {
        let i: ItemsFile = toml::from_str(text).map_err(|e| de_err(ITEMS_FILE, &e))?;
        w.items.extend(i.item);
    }
    for (stem, text) in &files.areas {
        w.areas.push(parse_area_toml(stem, text)?);
    }
    sort_world(&mut w);
    let warnings = w.validate_as(Layout::NativeDir)?;
    Ok((w, warnings))
}

/// Splits a world into the texts of a native world directory. Area files are named
/// after the area (`areas/<name>.toml`).
pub fn to_dir(world: &World) -> Result<NativeFiles, ContentError> {
    let globals = World {
        actors: Vec::new(),
        items: Vec::new(),
        areas: Vec::new(),
        ..world.clone()
    };
    let actors = ActorsFile {
        actor: world.actors.clone(),
    };
    let items = ItemsFile {
        item: world.items.clone(),
    };
    let mut areas = Vec::new();
    for a in &world.areas {
        let file = format!("{AREAS_DIR}/{}.toml", a.name);
        areas.push((
            a.name.clone(),
            toml::to_string(a).map_err(|e| ser_err(&file, &e))?,
        ));
    }
    Ok(NativeFiles {
        world: toml::to_string(&globals).map_err(|e| ser_err(WORLD_FILE, &e))?,
        actors: Some(toml::to_string(&actors).map_err(|e| ser_err(ACTORS_FILE, &e))?),
        items: Some(toml::to_string(&items).map_err(|e| ser_err(ITEMS_FILE, &e))?),
        areas,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn area_name_comes_from_the_file() {
        let a = parse_area_toml("Meadow", "pvp = true\n").unwrap();
        assert_eq!(a.name, "Meadow");
        assert!(a.pvp);
        assert_eq!(a.gravity, 300, "defaults apply");
        let e = parse_area_toml("Meadow", "name = \"Other\"\n").unwrap_err();
        assert_eq!(e.file, "areas/Meadow.toml");
        assert_eq!(e.record, "name");
    }

    #[test]
    fn short_files_get_defaults() {
        let text = "[fixed_attributes]\nstrength = 0\nspeed = 1\n\n[[area]]\nname = \"Start\"\n";
        let (w, warnings) = load_single("w.toml", text).unwrap();
        assert_eq!(w.damage_types.len(), 20);
        assert_eq!(w.area_by_name("start").map(|a| a.gravity), Some(300));
        assert_eq!(warnings.len(), 1, "no playable template: {warnings:?}");
        let e = load_single("w.toml", "").unwrap_err();
        assert_eq!(
            e.to_string(),
            "w.toml: strength: the Strength attribute index is mandatory"
        );
    }

    #[test]
    fn unknown_keys_are_errors() {
        let e = parse_area_toml("A", "[[spawn]]\nindex = 0\nmax_count = 3\n").unwrap_err();
        assert!(e.problem.contains("max_count"), "{e}");
        let e = parse_world_toml("w.toml", "[misc]\nstart_gld = 5\n").unwrap_err();
        assert!(e.problem.contains("start_gld"), "{e}");
    }

    #[test]
    fn tables_are_padded_and_bounded() {
        let w = parse_world_toml("w.toml", "damage_types = [\"Cut\"]\n").unwrap();
        assert_eq!(w.damage_types.len(), 20);
        assert_eq!(w.damage_type_name(0), Some("Cut"));
        let many = format!("damage_types = [{}]\n", vec!["\"x\""; 21].join(","));
        assert!(parse_world_toml("w.toml", &many).is_err());
        let e = parse_world_toml("w.toml", "[[faction]]\nid = 100\n").unwrap_err();
        assert!(e.problem.contains("out of range"), "{e}");
        let e = parse_world_toml("w.toml", "[attributes]\nskills = [40]\n").unwrap_err();
        assert!(e.problem.contains("out of range"), "{e}");
    }

    #[test]
    fn every_item_kind_round_trips() {
        use crate::content::{Item, ItemKind, WeaponType};
        let kinds = [
            ItemKind::Weapon {
                damage: 3,
                damage_type: 2,
                weapon_type: WeaponType::TwoHanded,
                projectile: 1,
                range: 2.5,
                anim: "Swing".into(),
            },
            ItemKind::Armour { level: 4 },
            ItemKind::Ring,
            ItemKind::Potion { secs: 5 },
            ItemKind::Ingredient { secs: 6 },
            ItemKind::Image { id: 77 },
            ItemKind::Other { misc: "x".into() },
        ];
        let w = World {
            items: kinds
                .into_iter()
                .zip(1u16..)
                .map(|(kind, id)| Item {
                    id,
                    kind,
                    ..Item::default()
                })
                .collect(),
            ..World::default()
        };
        let text = to_single_toml(&w).unwrap();
        assert!(text.contains("image_id = 77"), "{text}");
        let back = parse_world_toml("w.toml", &text).unwrap();
        for (a, b) in back.items.iter().zip(&w.items) {
            assert_eq!(a.kind, b.kind, "{text}");
        }
        assert_eq!(back, w);
        let files = to_dir(&w).unwrap();
        let back: ItemsFile = toml::from_str(files.items.as_deref().unwrap()).unwrap();
        assert_eq!(back.item, w.items);
    }

    #[test]
    fn item_kinds_in_toml() {
        let text = "[[item]]\nid = 1\nname = \"Bow\"\ntype = \"weapon\"\nweapon_type = \"ranged\"\nrange = 30.5\n\
                    [[item]]\nid = 2\ntype = \"ring\"\n";
        let w = parse_world_toml("w.toml", text).unwrap();
        assert!(w.item(1).unwrap().is_ranged());
        assert_eq!(w.item(2).unwrap().kind, crate::content::ItemKind::Ring);
        assert_eq!(w.item(2).unwrap().attributes.len(), 40);
        let e = parse_world_toml("w.toml", "[[item]]\nid = 1\ntype = \"sword\"\n").unwrap_err();
        assert!(e.problem.contains("sword"), "{e}");
    }
}
