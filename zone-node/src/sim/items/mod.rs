//! Items: the inventory rules, and (one module each) what players do with items.
//!
//! [`inventory`] is pure: Realm Crafter's slot rules over a 46-slot inventory, with no
//! zone, packet or script in it. The modules beside it apply those rules to the zone and
//! tell the clients (`docs/items.md`).

pub mod inventory;
