//! Fuzzes the Realm Crafter `Server Data` parsers: the first byte picks the file kind,
//! the rest is its content. Invariant: no input panics; bad content is an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shared::content::rc;

fuzz_target!(|data: &[u8]| {
    let Some((&kind, body)) = data.split_first() else {
        return;
    };
    match kind % 11 {
        0 => drop(rc::parse_area("Fuzz", body)),
        1 => drop(rc::parse_actors(body)),
        2 => drop(rc::parse_items(body)),
        3 => drop(rc::parse_spells(body)),
        4 => drop(rc::parse_projectiles(body)),
        5 => drop(rc::parse_factions(body)),
        6 => drop(rc::parse_attributes(body)),
        7 => drop(rc::parse_fixed_attributes(body)),
        8 => drop(rc::parse_damage_types(body)),
        9 => drop(rc::parse_misc(body)),
        _ => drop(rc::parse_environment(body)),
    }
});
