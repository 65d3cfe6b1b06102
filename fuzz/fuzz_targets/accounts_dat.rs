//! Fuzzes the Realm Crafter `Accounts.dat` parser (`gateway::accounts_dat`).
//!
//! Invariants: parsing never panics; what parses writes back to bytes that parse to the
//! same accounts.
#![no_main]

use gateway::accounts_dat::{parse, write};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(accounts) = parse(data) {
        let again = parse(&write(&accounts));
        assert_eq!(again.as_ref(), Ok(&accounts), "write/parse changed the accounts");
    }
});
