//! The embedded demo world: it loads, validates, and has everything the simulation and
//! the integration tests rely on.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use shared::content::*;

#[test]
fn demo_world_loads_without_warnings() {
    let (w, warnings) = try_demo_world().unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(w.validate().unwrap(), Vec::new());
    assert_eq!(demo_world(), w);
}

#[test]
fn demo_world_has_linked_areas() {
    let w = demo_world();
    assert!(w.areas.len() >= 3);
    let human = w.first_playable().unwrap();
    let start = w.area_by_name(&human.start_area).unwrap();
    assert!(start.portal_by_name("Begin").is_some());
    // Every portal with a link reaches its named portal; one that itself leads somewhere
    // leads back (a pair), the others are arrival points (the roads back to "Begin").
    let mut links = 0;
    for a in &w.areas {
        for p in a.portals.iter().filter(|p| !p.link_area.is_empty()) {
            let (dest_area, dest) = w.portal_destination(p).unwrap();
            assert!(dest.name.eq_ignore_ascii_case(&p.link_name));
            assert!(
                dest.link_area.is_empty() || eq_ci(&dest.link_area, &a.name),
                "{} -> {} leads on elsewhere",
                a.name,
                dest_area.name
            );
            links += 1;
        }
    }
    assert!(links >= 4);
}

#[test]
fn demo_patrols_are_loops() {
    let w = demo_world();
    let mut looped = 0;
    for a in &w.areas {
        for s in &a.spawns {
            // Follow next_a from the spawn waypoint; a loop comes back within 10 steps.
            let mut cur = s.waypoint;
            for _ in 0..10 {
                match a.waypoint(cur).and_then(|wp| wp.next_a.or(wp.prev)) {
                    Some(n) => cur = n,
                    None => break,
                }
                if cur == s.waypoint {
                    looped += 1;
                    break;
                }
            }
        }
    }
    assert!(looped >= 3, "only {looped} looped patrols");
}

#[test]
fn demo_has_required_content() {
    let w = demo_world();
    assert!(w.misc.allow_account_creation);
    let f = w.fixed_attributes;
    assert_eq!(f.health, Some(0));
    for (name, idx) in f.all() {
        let idx = idx.unwrap_or_else(|| panic!("{name} unset"));
        assert!(
            w.attributes.name(idx).is_some(),
            "{name} has no attribute name"
        );
    }
    assert_eq!(w.find_attribute("strength"), f.strength);

    let spawned: Vec<&ActorTemplate> = w
        .areas
        .iter()
        .flat_map(|a| &a.spawns)
        .map(|s| w.template(s.template).unwrap())
        .collect();
    let has = |a: Aggressiveness| spawned.iter().any(|t| t.aggressiveness == a);
    assert!(has(Aggressiveness::Aggressive));
    assert!(has(Aggressiveness::Defensive));
    assert!(has(Aggressiveness::Passive));
    assert!(
        spawned
            .iter()
            .any(|t| t.environment == ActorEnvironment::Fly)
    );
    assert!(spawned.iter().any(|t| t.rideable));

    // Aggressive NPCs are hostile to players; the guards are not.
    let player_faction = w.first_playable().unwrap().home_faction;
    for t in spawned
        .iter()
        .filter(|t| t.aggressiveness == Aggressiveness::Aggressive)
    {
        assert!(is_hostile_rating(
            w.factions.default_rating(t.home_faction, player_faction)
        ));
    }
    let guard = spawned.iter().find(|t| t.class == "Guard").unwrap();
    assert!(!is_hostile_rating(
        w.factions
            .default_rating(guard.home_faction, player_faction)
    ));
    let factions: std::collections::HashSet<u8> = spawned.iter().map(|t| t.home_faction).collect();
    assert!(factions.len() >= 2);

    assert!(
        w.areas
            .iter()
            .flat_map(|a| &a.water)
            .any(|wt| wt.damage > 0)
    );
    let ranged = w.items.iter().find(|i| i.is_ranged()).unwrap();
    let ItemKind::Weapon { projectile, .. } = ranged.kind else {
        unreachable!()
    };
    assert!(w.projectile(projectile).is_some());
    assert!(w.items.iter().any(|i| matches!(
        i.kind,
        ItemKind::Weapon {
            weapon_type: WeaponType::OneHanded,
            ..
        }
    )));
    assert!(w.items.iter().any(|i| i.armour_level().is_some()));
}

#[test]
fn broken_demo_copies_are_rejected() {
    let mut files = demo_files();
    let (_, text) = files
        .areas
        .iter_mut()
        .find(|(n, _)| n == "Darkwood")
        .unwrap();
    *text = text.replace("template = 3", "template = 99");
    let e = native::load_dir(&files).unwrap_err();
    assert_eq!(
        e.to_string(),
        "areas/Darkwood.toml: spawn 0: actor template 99 does not exist"
    );

    let mut files = demo_files();
    let (_, text) = files.areas.iter_mut().find(|(n, _)| n == "Meadow").unwrap();
    *text = text.replace("next_a = 2", "next_a = 1500");
    let e = native::load_dir(&files).unwrap_err();
    assert_eq!(
        e.to_string(),
        "areas/Meadow.toml: waypoint 1: next_a links to waypoint 1500, which does not exist"
    );

    let mut files = demo_files();
    let (_, text) = files.areas.iter_mut().find(|(n, _)| n == "Meadow").unwrap();
    *text = text.replace("link_area = \"Darkwood\"", "link_area = \"Nowhere\"");
    let (_, warnings) = native::load_dir(&files).unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0]
            .to_string()
            .starts_with("areas/Meadow.toml: portal 1 (To Darkwood): links to area \"Nowhere\"")
    );

    let mut files = demo_files();
    files.world = files
        .world
        .replace("combat_formula = 1", "combat_formula = \"x\"");
    let e = native::load_dir(&files).unwrap_err();
    assert_eq!(e.file, "world.toml");
    assert!(e.problem.contains("combat_formula"), "{e}");
}
