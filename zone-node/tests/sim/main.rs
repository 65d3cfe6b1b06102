//! The zone simulation's scenario tests: every rule through `ZoneSim`'s public input/output API, one module per area (one binary: one link, one process per run).

mod broadcast;
mod clock;
mod dialogs;
mod effects;
mod engine_events;
mod ingest;
mod items_bag;
mod items_ground;
mod items_trade;
mod level;
mod regen;
mod rules_ai;
mod rules_combat;
mod rules_social;
mod rules_world;
mod scripts;
mod setarea;
mod soak;
mod spells;
mod wire;
