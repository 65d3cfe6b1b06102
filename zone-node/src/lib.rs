//! Zone node: hosts AreaInstances, each a deterministic `ZoneSim` driven by a thin actor shell.
//!
//! # Layout
//! - [`sim`]: the pure simulation of one AreaInstance (no clock, no I/O, seeded RNG).
//! - [`bench`]: `zone-node bench`, one headless `ZoneSim` on a generated world.

pub mod bench;
pub mod sim;
