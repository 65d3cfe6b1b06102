//! Round trips: Realm Crafter data → World → native TOML (single file and directory) → World.
//!
//! The sample-data part is skipped (with a printed reason) when `../shared/rc-sample-data`
//! is absent; the demo-world part always runs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use shared::content::fs::{load_world, write_native};
use shared::content::native;
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

/// The world without its scripts: the TOML holds everything else (the scripts are files
/// of their own beside it).
fn without_scripts(w: &World) -> World {
    World {
        scripts: Vec::new(),
        ..w.clone()
    }
}

fn assert_round_trips(w: &World) {
    let w = &without_scripts(w);
    let single = native::to_single_toml(w).unwrap();
    let (back, _) = native::load_single("world.toml", &single).unwrap();
    assert_eq!(&back, w, "single-file round trip");

    let files = native::to_dir(w).unwrap();
    let (back, _) = native::load_dir(&files).unwrap();
    assert_eq!(&back, w, "directory round trip");
}

#[test]
fn sample_data_round_trips_through_toml() {
    let Some(dir) = sample_dir() else { return };
    let (w, _) = load_world(&dir).unwrap();
    assert_round_trips(&w);
}

#[test]
fn sample_data_converts_on_disk() {
    let Some(dir) = sample_dir() else { return };
    let (w, _) = load_world(&dir).unwrap();
    let out = std::env::temp_dir().join(format!("rccontent-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    write_native(&w, &out).unwrap();
    assert!(out.join("areas/Plains.toml").is_file());
    // A directory keeps the scripts (`scripts/`), byte for byte.
    assert!(out.join("scripts/Death.rsl").is_file());
    assert_eq!(w.scripts.len(), 27, "the sample project's .rsl scripts");
    let (back, _) = load_world(&out).unwrap();
    assert_eq!(back, w);
    // A single file holds no scripts.
    let file = out.join("single.toml");
    write_native(&w, &file).unwrap();
    let (back, _) = load_world(&file).unwrap();
    assert_eq!(back, without_scripts(&w));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn demo_world_round_trips() {
    let (w, _) = try_demo_world().unwrap();
    assert_round_trips(&w);
}

#[test]
fn minimal_world_is_valid_and_round_trips() {
    let w = minimal_world();
    w.validate().unwrap();
    assert_round_trips(&w);
}

#[test]
fn toml_floats_are_short() {
    let Some(dir) = sample_dir() else { return };
    let (w, _) = load_world(&dir).unwrap();
    let text = native::to_single_toml(&w).unwrap();
    // Actor 0's radius prints as 24.629879, not 24.62987899780273; it must print as such.
    assert!(
        text.contains("radius = 24.629879\n"),
        "floats should use their shortest f32 form"
    );
}
