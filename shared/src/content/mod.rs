//! Game content: the typed [`World`] model, its Realm Crafter binary loader ([`rc`]), the
//! native TOML format ([`native`]), cross-reference validation and the embedded demo world.
//!
//! Everything except [`fs`] is pure: parsers take byte slices or strings and return values.
//! [`fs`] is the only place in `shared` that touches the file system.
//!
//! ```
//! let world = shared::content::demo_world();
//! let start = world.area_by_name("meadow").unwrap();
//! assert!(start.portal_by_name("begin").is_some());
//! ```
//!
//! See `docs/content.md` for the formats, and [`model`] for the slot and index rules.

mod error;
pub mod fs;
pub mod model;
pub mod native;
pub mod rc;
mod serde_util;
pub mod updates;
pub mod validate;

pub use error::{ContentError, ContentWarning};
pub use model::*;
pub use serde_util::{AttributesRepr, FactionEntry};
pub use validate::Layout;

/// The demo world's files, embedded at compile time from `shared/worlds/demo/`.
pub fn demo_files() -> native::NativeFiles {
    native::NativeFiles {
        world: include_str!("../../worlds/demo/world.toml").to_string(),
        actors: Some(include_str!("../../worlds/demo/actors.toml").to_string()),
        items: Some(include_str!("../../worlds/demo/items.toml").to_string()),
        areas: vec![
            (
                "Meadow".to_string(),
                include_str!("../../worlds/demo/areas/Meadow.toml").to_string(),
            ),
            (
                "Darkwood".to_string(),
                include_str!("../../worlds/demo/areas/Darkwood.toml").to_string(),
            ),
            (
                "Lakeshore".to_string(),
                include_str!("../../worlds/demo/areas/Lakeshore.toml").to_string(),
            ),
        ],
    }
}

/// The embedded demo world (three areas linked by portals, patrols, two hostile factions,
/// weapons and armour), so binaries run with no setup.
///
/// If the embedded files ever failed to load (a broken build), this logs nothing and
/// returns a minimal valid world instead of panicking; the unit tests guarantee the
/// embedded world loads.
pub fn demo_world() -> World {
    try_demo_world().map_or_else(|_| minimal_world(), |(w, _)| w)
}

/// Loads the embedded demo world, returning the error or the validation warnings.
pub fn try_demo_world() -> Result<(World, Vec<ContentWarning>), ContentError> {
    let (mut w, warnings) = native::load_dir(&demo_files())?;
    w.scripts = demo_scripts();
    Ok((w, warnings))
}

/// The demo world's scripts, embedded from `shared/worlds/demo/scripts/`.
pub fn demo_scripts() -> Vec<ScriptSource> {
    let s = |name: &str, bytes: &[u8]| ScriptSource {
        name: name.to_owned(),
        bytes: bytes.to_vec(),
    };
    vec![
        s(
            "Death",
            include_bytes!("../../worlds/demo/scripts/Death.rsl"),
        ),
        s(
            "LevelUp",
            include_bytes!("../../worlds/demo/scripts/LevelUp.rsl"),
        ),
        s(
            "Equip Change",
            include_bytes!("../../worlds/demo/scripts/Equip Change.rsl"),
        ),
        s(
            "Login",
            include_bytes!("../../worlds/demo/scripts/Login.rsl"),
        ),
        s(
            "Merchant",
            include_bytes!("../../worlds/demo/scripts/Merchant.rsl"),
        ),
        s(
            "MerchantStock",
            include_bytes!("../../worlds/demo/scripts/MerchantStock.rsl"),
        ),
        s(
            "Quest_GoblinTrouble",
            include_bytes!("../../worlds/demo/scripts/Quest_GoblinTrouble.rsl"),
        ),
        s(
            "Trainer",
            include_bytes!("../../worlds/demo/scripts/Trainer.rsl"),
        ),
        s(
            "Spell_Swiftness",
            include_bytes!("../../worlds/demo/scripts/Spell_Swiftness.rsl"),
        ),
        s(
            "Spell_Fireball",
            include_bytes!("../../worlds/demo/scripts/Spell_Fireball.rsl"),
        ),
        s(
            "Spell_Mend",
            include_bytes!("../../worlds/demo/scripts/Spell_Mend.rsl"),
        ),
    ]
}

/// A tiny valid world: one area with a "Begin" portal and one playable template.
pub fn minimal_world() -> World {
    let mut attributes = Attributes::default();
    for (d, n) in attributes
        .defs
        .iter_mut()
        .zip(["Health", "Strength", "Speed"])
    {
        d.name = n.to_string();
    }
    let mut human = ActorTemplate {
        race: "Human".into(),
        class: "Adventurer".into(),
        start_area: "Start".into(),
        start_portal: "Begin".into(),
        playable: true,
        ..ActorTemplate::default()
    };
    for p in human.attributes.iter_mut().take(3) {
        *p = StatPair {
            value: 100,
            max: 100,
        };
    }
    World {
        attributes,
        fixed_attributes: FixedAttributes {
            health: Some(0),
            strength: Some(1),
            speed: Some(2),
            ..FixedAttributes::default()
        },
        damage_types: std::iter::once("Normal".to_string())
            .chain(std::iter::repeat_n(String::new(), DAMAGE_TYPE_COUNT - 1))
            .collect(),
        actors: vec![human],
        areas: vec![Area {
            name: "Start".into(),
            portals: vec![Portal {
                name: "Begin".into(),
                size: 5.0,
                ..Portal::default()
            }],
            ..Area::default()
        }],
        ..World::default()
    }
}

#[cfg(test)]
mod demo_tests {
    /// Every script file of the demo world is embedded (a new one must be added to
    /// [`super::demo_scripts`], or `--standalone` would run without it).
    #[test]
    fn every_demo_script_is_embedded() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("worlds/demo/scripts");
        let embedded: Vec<String> = super::demo_scripts().into_iter().map(|s| s.name).collect();
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(stem) = name.strip_suffix(".rsl") {
                assert!(embedded.iter().any(|n| n == stem), "{name} is not embedded");
            }
        }
    }
}
