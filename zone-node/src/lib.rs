//! Zone node: hosts AreaInstances, each a deterministic `ZoneSim` driven by a thin actor shell.
//!
//! # Layout
//! - [`sim`]: the pure simulation of one AreaInstance (no clock, no I/O, seeded RNG).
//! - [`bench`]: `zone-node bench`, one headless `ZoneSim` on a generated world.
//! - [`healthcheck`]: `zone-node healthcheck`, a `GET /healthz` for container health checks.
//! - [`config`]: `NodeConfig`, typed and validated (file, `ZONE_NODE_*`, flags).
//! - [`actor`]: the actix shell: one `ZoneActor` per AreaInstance, the `Registry`.
//! - [`link`]: the QUIC link to the gateway (auth, register, heartbeat, reconnect, drain).
//! - [`node`]: start-up and shutdown of the whole node.
//! - [`telemetry`]: OpenTelemetry traces (`OTEL_*`), envelope propagation, sampled ticks.
//! - [`world_scripts`]: the world's `.rsl` scripts, compiled once per process.
//! - [`script_store`]: an in-memory script store for headless runs (`rcscript`, tests).
//! - [`rcscript`]: the `rcscript` tool: check a game's `.rsl` scripts and run one headless.

pub mod actor;
pub mod admin;
pub mod bench;
pub mod config;
pub mod healthcheck;
pub mod link;
pub mod node;
pub mod rcscript;
pub mod script_store;
pub mod sim;
pub mod world_scripts;

/// The tracing and logging plumbing, from the `ops` crate (shared with the gateway).
pub use ops::{logging, telemetry};
