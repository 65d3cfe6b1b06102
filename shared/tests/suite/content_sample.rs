//! Loads Realm Crafter's sample `Server Data` and checks what the parsers produce.
//!
//! Skipped (with a printed reason) when `../shared/rc-sample-data` is absent.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use shared::content::fs::{SourceKind, detect, load_world, read_rc_dir};
use shared::content::rc;
use shared::content::*;

fn sample_dir() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/rc-sample-data");
    if p.join("Misc.dat").is_file() {
        Some(p)
    } else {
        eprintln!(
            "skipping: Realm Crafter sample data not found at {}",
            p.display()
        );
        None
    }
}

#[test]
fn sample_data_loads() {
    let Some(dir) = sample_dir() else { return };
    assert_eq!(detect(&dir).unwrap(), SourceKind::RealmCrafter);
    let (w, warnings) = load_world(&dir).unwrap();
    for wn in &warnings {
        println!("warning: {wn}");
    }
    let names: Vec<&str> = w.areas.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["Northern Shrine", "Plains", "Test Zone", "Test1"]);

    // Misc.dat: 50, 50, 1, 1000, 1, 0, 1, 0, 1, 4, 25000, 1.
    assert_eq!(w.misc.start_gold, 50);
    assert_eq!(w.misc.start_reputation, 50);
    assert!(w.misc.force_portals);
    assert_eq!(w.misc.combat_delay_ms, 1000);
    assert_eq!(w.misc.combat_formula, 1);
    assert!(!w.misc.weapon_damage);
    assert!(w.misc.armour_damage);
    assert_eq!(w.misc.combat_rating_adjust, 0);
    assert!(w.misc.allow_account_creation);
    assert_eq!(w.misc.max_account_chars, 4);
    assert_eq!(w.misc.server_port, 25000);
    assert!(w.misc.require_memorise);

    // Fixed attributes: Health=0, Energy=-1, Breath=-1, Toughness=6, Strength=2, Speed=4.
    let f = w.fixed_attributes;
    assert_eq!(
        (
            f.health,
            f.energy,
            f.breath,
            f.toughness,
            f.strength,
            f.speed
        ),
        (Some(0), None, None, Some(6), Some(2), Some(4))
    );
    assert_eq!(w.attributes.assignment_points, 10);
    assert_eq!(w.find_attribute("health"), Some(0));
    assert_eq!(w.find_attribute("STRENGTH"), Some(2));
    assert_eq!(w.find_attribute("Toughness"), Some(6));
    assert_eq!(w.find_attribute("swimming"), Some(11));
    assert_eq!(w.find_attribute("nope"), None);
    assert!(w.attributes.defs[11].is_skill);
    assert_eq!(w.damage_type_name(0), Some("Piercing"));
    assert_eq!(w.damage_type_name(10), Some("Magical"));
    assert_eq!(w.damage_type_name(11), None);

    // Factions: Traders and Voyageur.
    assert_eq!(w.factions.find("traders"), Some(0));
    assert_eq!(w.factions.find("Voyageur"), Some(1));
    assert_eq!(w.factions.default_rating(0, 1), 100);

    // Templates.
    let human = w.template(0).unwrap();
    assert_eq!(
        (human.race.as_str(), human.class.as_str()),
        ("Human", "Fighter")
    );
    assert_eq!(human.start_area, "Plains");
    assert_eq!(human.start_portal, "Begin");
    assert!((human.effective_radius() - human.radius * 0.05).abs() < 1e-6);
    assert_eq!(w.template(1).unwrap().race, "Stag");
    assert!(w.template(999).is_none());

    // Items: a weapon and armour at least.
    assert!(
        w.items
            .iter()
            .any(|i| matches!(i.kind, ItemKind::Weapon { .. }))
    );
    assert!(
        w.items
            .iter()
            .any(|i| matches!(i.kind, ItemKind::Armour { .. }))
    );
    let sword = w.items.iter().find(|i| i.name == "Sword").unwrap();
    assert_eq!(sword.weapon_damage(), Some(10));
    assert_eq!(w.spells.len(), 1);
    assert_eq!(w.spell(0).unwrap().recharge_ms, 8000);
    assert_eq!(w.projectiles.len(), 2);
    assert_eq!(w.projectile(0).unwrap().hit_chance, 90);

    // Plains: 5 portals (Begin, Test, to testing, return, to timelase), 9 waypoints.
    let plains = w.area_by_name("plains").unwrap();
    assert!(plains.pvp);
    assert_eq!(plains.gravity, 300);
    assert_eq!(plains.portals.len(), 5);
    assert_eq!(plains.waypoints.len(), 9);
    assert_eq!(plains.water.len(), 1);
    let begin = plains.portal_by_name("BEGIN").unwrap();
    assert_eq!(begin.index, 0);
    let test = plains.portal_by_name("Test").unwrap();
    let (dest_area, dest) = w.portal_destination(test).unwrap();
    assert_eq!(dest_area.name, "Test Zone");
    assert_eq!(
        dest.name, "Start",
        "no portal named Begin there: falls back to portal 0"
    );
    let wp6 = plains.waypoint(6).unwrap();
    assert_eq!((wp6.next_a, wp6.next_b, wp6.prev), (None, None, Some(4)));
    assert_eq!(plains.waypoint(0).unwrap().pause_secs, 7);
    assert!(plains.waypoint(1999).is_none());
    assert!(plains.spawn(0).is_some());
    assert_eq!(plains.spawn(3).unwrap().actor_script, "Click_Trainer");
    assert!(plains.spawn(1).is_none(), "max 0 slots are dropped");

    let tz = w.area_by_name("Test Zone").unwrap();
    assert_eq!(tz.spawns.len(), 4);
    assert_eq!(tz.water.len(), 2);
    let t1 = w.area_by_name("test1").unwrap();
    assert_eq!(t1.weather_chances, [100, 0, 0, 0, 0]);
    assert!(t1.waypoints.is_empty());

    assert!(w.language.len() > 150);
    assert!(w.names_filter.iter().any(|n| n == "King"));
    assert!(w.name_is_filtered("KingBob"));
    assert!(!w.name_is_filtered("Bob"));
    assert_eq!(
        w.environment,
        Environment::default(),
        "Environment.dat is empty"
    );
}

/// Every binary file, truncated at every few bytes, fails with an error naming that file
/// and never panics.
#[test]
fn truncated_sample_files_fail_cleanly() {
    let Some(dir) = sample_dir() else { return };
    let files = read_rc_dir(&dir).unwrap();
    type Parse = fn(&[u8]) -> Result<(), ContentError>;
    let singles: Vec<(&str, Option<Vec<u8>>, Parse)> = vec![
        ("Misc.dat", files.misc.clone(), |d| {
            rc::parse_misc(d).map(drop)
        }),
        ("Actors.dat", files.actors.clone(), |d| {
            rc::parse_actors(d).map(drop)
        }),
        ("Items.dat", files.items.clone(), |d| {
            rc::parse_items(d).map(drop)
        }),
        ("Spells.dat", files.spells.clone(), |d| {
            rc::parse_spells(d).map(drop)
        }),
        ("Projectiles.dat", files.projectiles.clone(), |d| {
            rc::parse_projectiles(d).map(drop)
        }),
        ("Factions.dat", files.factions.clone(), |d| {
            rc::parse_factions(d).map(drop)
        }),
        ("Attributes.dat", files.attributes.clone(), |d| {
            rc::parse_attributes(d).map(drop)
        }),
        (
            "Fixed Attributes.dat",
            files.fixed_attributes.clone(),
            |d| rc::parse_fixed_attributes(d).map(drop),
        ),
        ("Damage.dat", files.damage.clone(), |d| {
            rc::parse_damage_types(d).map(drop)
        }),
    ];
    let mut checked = 0;
    for (name, data, parse) in singles {
        let data = data.unwrap();
        parse(&data).unwrap_or_else(|e| panic!("{name} must load whole: {e}"));
        // Record-list files (Actors, Items ...) accept a cut exactly between records,
        // so only cuts inside a record must fail; the fixed-size files fail on every cut.
        for cut in (0..data.len()).step_by(3) {
            let res = parse(&data[..cut]);
            if let Err(e) = res {
                assert_eq!(e.file, name, "{e}");
                checked += 1;
            } else {
                assert!(
                    matches!(
                        name,
                        "Actors.dat" | "Items.dat" | "Spells.dat" | "Projectiles.dat"
                    ),
                    "{name} cut at {cut} loaded"
                );
            }
        }
        let mut longer = data.clone();
        longer.push(0);
        assert!(
            parse(&longer).is_err(),
            "{name} with a trailing byte must fail"
        );
    }
    for (area, data) in &files.areas {
        rc::parse_area(area, data).unwrap();
        for cut in (0..data.len()).step_by(257) {
            let e = rc::parse_area(area, &data[..cut]).unwrap_err();
            assert_eq!(e.file, format!("Areas/{area}.dat"));
            assert!(!e.record.is_empty(), "{e}");
            checked += 1;
        }
        let mut longer = data.clone();
        longer.extend([0, 0]);
        assert!(
            rc::parse_area(area, &longer)
                .unwrap_err()
                .problem
                .contains("trailing")
        );
    }
    assert!(checked > 2000, "only {checked} truncations checked");
}

/// Corrupting a string length anywhere in an area file yields an error, not a panic.
#[test]
fn corrupted_area_bytes_never_panic() {
    let Some(dir) = sample_dir() else { return };
    let files = read_rc_dir(&dir).unwrap();
    let (name, data) = files.areas.iter().find(|(n, _)| n == "Plains").unwrap();
    for pos in (0..data.len()).step_by(409) {
        for byte in [0xff, 0x7f, 0x80] {
            let mut d = data.clone();
            d[pos] = byte;
            let _ = rc::parse_area(name, &d);
        }
    }
}

#[test]
fn unknown_references_in_sample_world() {
    let Some(dir) = sample_dir() else { return };
    let mut files = read_rc_dir(&dir).unwrap();
    // Remove template 1 (the Stag): Plains spawn 0 now names a missing template.
    let (mut w, _) = rc::load_server_data(&files).unwrap();
    w.actors.retain(|t| t.id != 1);
    let e = w.validate_as(Layout::RealmCrafter).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Areas/Plains.dat: spawn 0: actor template 1 does not exist"
    );

    // Remove the Test Zone area: Plains' portals to it become warnings, not errors.
    files.areas.retain(|(n, _)| n != "Test Zone");
    let (_, warnings) = rc::load_server_data(&files).unwrap();
    let text: Vec<String> = warnings.iter().map(ToString::to_string).collect();
    assert!(
        text.iter().any(
            |t| t.starts_with("Areas/Plains.dat: portal 1 (Test): links to area \"Test Zone\"")
        ),
        "{text:?}"
    );

    // A missing required file is an error naming it.
    files.misc = None;
    assert_eq!(rc::load_server_data(&files).unwrap_err().file, "Misc.dat");
}
