//! Fuzzes Realm Crafter's update list parser (`shared::content::updates::parse_files_dat`).
//!
//! Invariants: parsing never panics; what parses writes back to the same bytes, and every
//! name it accepts is a safe relative path (`check_name`) with a download name of no `\\`
//! or space.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shared::content::updates::{check_name, download_name, parse_files_dat, write_files_dat};

fuzz_target!(|data: &[u8]| {
    if let Ok(files) = parse_files_dat(data) {
        assert_eq!(write_files_dat(&files), data, "write changed the bytes");
        for f in &files {
            assert!(check_name(f.name.as_bytes()).is_ok());
            let d = download_name(f.name.as_bytes());
            assert!(!d.contains(&b'\\') && !d.contains(&b' '));
        }
    }
});
