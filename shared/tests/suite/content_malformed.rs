//! Property tests: no content parser panics on arbitrary input, and every failure names
//! the file it came from.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use shared::content::{native, rc};

fn check<T>(file: &str, r: Result<T, shared::content::ContentError>) {
    if let Err(e) = r {
        assert!(e.file.starts_with(file), "error {e} does not name {file}");
        assert!(!e.problem.is_empty());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn binary_parsers_never_panic(data in proptest::collection::vec(any::<u8>(), 0..600)) {
        check("Misc.dat", rc::parse_misc(&data));
        check("Actors.dat", rc::parse_actors(&data));
        check("Items.dat", rc::parse_items(&data));
        check("Spells.dat", rc::parse_spells(&data));
        check("Projectiles.dat", rc::parse_projectiles(&data));
        check("Factions.dat", rc::parse_factions(&data));
        check("Attributes.dat", rc::parse_attributes(&data));
        check("Fixed Attributes.dat", rc::parse_fixed_attributes(&data));
        check("Damage.dat", rc::parse_damage_types(&data));
        check("Environment.dat", rc::parse_environment(&data));
        check("Areas/X.dat", rc::parse_area("X", &data));
        let _ = rc::parse_language(&data);
        let _ = rc::parse_names_filter(&data);
    }

    /// Small string lengths so that records get further than the first field.
    #[test]
    fn string_heavy_inputs_never_panic(
        parts in proptest::collection::vec((0i32..12, any::<u8>(), any::<u16>()), 0..80)
    ) {
        let mut data = Vec::new();
        for (len, b, w) in parts {
            data.extend_from_slice(&len.to_le_bytes());
            data.extend(std::iter::repeat_n(b, usize::try_from(len).unwrap_or(0)));
            data.extend_from_slice(&w.to_le_bytes());
        }
        check("Actors.dat", rc::parse_actors(&data));
        check("Items.dat", rc::parse_items(&data));
        check("Spells.dat", rc::parse_spells(&data));
        check("Projectiles.dat", rc::parse_projectiles(&data));
        check("Damage.dat", rc::parse_damage_types(&data));
        check("Environment.dat", rc::parse_environment(&data));
    }

    #[test]
    fn toml_loaders_never_panic(text in "[a-z_\\[\\]=\"0-9 .\n-]{0,200}") {
        check("w.toml", native::parse_world_toml("w.toml", &text));
        check("areas/A.toml", native::parse_area_toml("A", &text));
        let files = native::NativeFiles { world: text.clone(), ..Default::default() };
        let _ = native::load_dir(&files);
    }
}

/// An item type outside 1..7 is reported with its record; a missing type tail is a
/// truncation error naming the field.
#[test]
fn bad_enum_values_are_errors() {
    let mut item = Vec::new();
    item.extend_from_slice(&7u16.to_le_bytes());
    for _ in 0..5 {
        item.extend_from_slice(&0i32.to_le_bytes());
    }
    item.push(9); // item type 9
    item.extend(std::iter::repeat_n(
        0u8,
        4 + 2 + 1 + 2 + 12 + 2 + 2 + 2 + 1 + 80,
    ));
    let e = rc::parse_items(&item).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Items.dat: item record 0 (at byte 0): item type 9 is not one of 1..7"
    );

    item[22] = 2; // armour, but its level is missing
    let e = rc::parse_items(&item).unwrap_err();
    assert!(e.problem.contains("armour level"), "{e}");
    item.extend_from_slice(&3u16.to_le_bytes());
    let items = rc::parse_items(&item).unwrap();
    assert_eq!(items[0].armour_level(), Some(3));
    assert_eq!(items[0].attributes[0], -5000);
}
