//! `NodeConfig`: the zone node's typed, validated configuration.
//!
//! Layers, later wins: built-in defaults, a TOML file, `ZONE_NODE_*` environment
//! variables, command-line flags (parsed by `main.rs`, applied with
//! [`NodeConfig::apply_overrides`]). [`NodeConfig::validate`] runs last and explains what
//! is wrong in terms of the setting's name.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
pub use shared::settings::{ConfigError, Settings};
use shared::settings::{boolean, num, opt_path};

use crate::sim::state::GroundConfig;

/// Environment variable prefix.
pub const ENV_PREFIX: &str = "ZONE_NODE_";

/// Everything a zone node needs to run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NodeConfig {
    /// The gateway's internal QUIC address (`host:port`); several, comma-separated, for
    /// an active gateway and its standbys or edges: each connection attempt tries every
    /// one at once (only the leading gateway answers).
    pub gateway_addr: String,
    /// The TLS server name to expect from the gateway's certificate.
    pub gateway_server_name: String,
    /// This node's id (default: `<hostname>-<pid>`, else random); unique per running node.
    pub node_id: String,
    /// The address other nodes can reach this node at (`host:port`).
    pub advertised_addr: String,
    /// Local UDP address to bind the QUIC client to.
    pub bind_addr: SocketAddr,
    /// Number of actix arbiters (threads) hosting zone actors (default: one per core).
    pub arbiters: usize,
    /// Instances this node offers to host.
    pub capacity: u32,
    /// Simulation step, ms (Realm Crafter: 33).
    pub tick_ms: u64,
    /// Position broadcast period, ms (Realm Crafter: 200).
    pub broadcast_ms: u64,
    /// Most catch-up ticks after a stall before re-baselining.
    pub max_catch_up: u32,
    /// Largest position datagram the zones build (bytes, without the 8-byte internal
    /// header). QUIC guarantees only about 1160 bytes per datagram before path MTU
    /// discovery, on the internal link and on the client's, so the default is 1100.
    pub datagram_budget: usize,
    /// Content: a world directory (native TOML) or empty for the embedded demo world.
    pub world: Option<PathBuf>,
    /// Shared cluster secret (at least 16 bytes); required.
    pub cluster_secret: String,
    /// Drain deadline on SIGTERM/SIGINT, ms.
    pub drain_timeout_ms: u64,
    /// Heartbeat period, ms.
    pub heartbeat_ms: u64,
    /// Reconnect backoff: first delay, ms.
    pub reconnect_min_ms: u64,
    /// Reconnect backoff: largest delay, ms.
    pub reconnect_max_ms: u64,
    /// Periodic character snapshots, ms (0 disables).
    pub persist_every_ms: u64,
    /// Trust any gateway certificate (the HMAC handshake still authenticates it). Set
    /// `gateway_cert_sha256` instead in production.
    pub insecure_skip_verify: bool,
    /// Pin the gateway certificate by its SHA-256 fingerprint (hex).
    pub gateway_cert_sha256: Option<String>,
    /// Admin HTTP (`/healthz`, `/metrics`), TCP; off when unset.
    pub admin_listen: Option<SocketAddr>,
    /// One tick in this many, per instance, gets a `zone.tick` trace span (0: none);
    /// 300 is every 10 s at 33 ms. Only exported when traces are on (`OTEL_*`).
    pub trace_tick_every: u32,
    /// How long a dropped or spawned item stays on the ground, ms (0: until picked up, as
    /// Realm Crafter); at most [`MAX_GROUND_LIFETIME_MS`].
    pub ground_item_lifetime_ms: u64,
    /// Most items on the ground of one AreaInstance (1..=[`MAX_GROUND_CAP`]); the oldest
    /// goes when a new one would pass it.
    pub ground_item_cap: u32,
    /// Pickup reach: XZ distance from the player to the item (Realm Crafter's squared
    /// `InteractDist` 400 is a radius of 20); `0 < r <= 1000`.
    pub pickup_radius: f32,
    /// Inputs of one player an AreaInstance queues between two ticks; more are dropped and
    /// counted (`rc_zone_inbox_refused_total{limit="player"}`).
    pub inbox_per_player: u32,
    /// Inputs of all players together an AreaInstance queues between two ticks.
    pub inbox_total: u32,
    /// Script instances, live and queued, one actor may have in a zone (`Actor()`); a
    /// start past it is refused, logged and counted.
    pub scripts_per_actor: u32,
    /// Script instances, live and queued, in one AreaInstance.
    pub scripts_per_zone: u32,
    /// A snapshot the gateway has not acknowledged this long is sent again, ms (the
    /// gateway acknowledges only what it stored: a failing store gets it again once it
    /// heals, not only after a reconnect); 100..=600000.
    pub snapshot_resend_ms: u64,
    /// Tick watchdog: an instance that has not completed a tick for this long (ms) is
    /// stuck: logged, counted, reported in the heartbeat, and the node is not ready
    /// (`/readyz` answers 503) until it ticks again or is given up.
    pub stuck_tick_ms: u64,
    /// Tick watchdog: an instance stuck this long (ms, since its last tick) is given up:
    /// dropped by the node (its later output fenced off) and re-placed by the gateway,
    /// its players put back from their last saves. 0: never give up.
    pub give_up_tick_ms: u64,
    /// Test hooks on the admin endpoint (`POST /test/stall`): never in production.
    pub test_hooks: bool,
}

/// The longest ground item lifetime accepted: 7 days.
pub const MAX_GROUND_LIFETIME_MS: u64 = 7 * 24 * 3_600_000;
/// The largest ground item cap accepted per AreaInstance.
pub const MAX_GROUND_CAP: u32 = 100_000;

/// `<hostname>-<pid>`: unique per process, so several nodes on one machine need no flags
/// (a node that restarts is a new member; its old id's instances were re-placed).
fn default_node_id() -> String {
    let pid = std::process::id();
    if let Ok(h) = std::env::var("HOSTNAME") {
        let h = h.trim();
        if !h.is_empty() {
            return format!("{h}-{pid}");
        }
    }
    if let Ok(h) = std::fs::read_to_string("/etc/hostname") {
        let h = h.trim();
        if !h.is_empty() {
            return format!("{h}-{pid}");
        }
    }
    format!("node-{:016x}", ops::random::u64())
}

impl Default for NodeConfig {
    fn default() -> Self {
        Self {
            gateway_addr: "127.0.0.1:25001".into(),
            gateway_server_name: "gateway".into(),
            node_id: default_node_id(),
            advertised_addr: "127.0.0.1:25100".into(),
            bind_addr: SocketAddr::from(([0, 0, 0, 0], 0)),
            arbiters: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            capacity: 64,
            tick_ms: shared::internal::DEFAULT_TICK_MS,
            broadcast_ms: 200,
            max_catch_up: 5,
            datagram_budget: 1100,
            world: None,
            cluster_secret: String::new(),
            drain_timeout_ms: 10_000,
            heartbeat_ms: 1_000,
            reconnect_min_ms: 100,
            reconnect_max_ms: 5_000,
            persist_every_ms: 30_000,
            insecure_skip_verify: true,
            gateway_cert_sha256: None,
            admin_listen: None,
            trace_tick_every: crate::telemetry::DEFAULT_TICK_EVERY,
            ground_item_lifetime_ms: GroundConfig::LIFETIME_MS,
            ground_item_cap: GroundConfig::CAP,
            pickup_radius: GroundConfig::PICKUP_RADIUS,
            inbox_per_player: crate::actor::inbox::InboxLimits::default().per_player,
            inbox_total: crate::actor::inbox::InboxLimits::default().total,
            scripts_per_actor: 64,
            scripts_per_zone: 4_096,
            snapshot_resend_ms: 3_000,
            stuck_tick_ms: 2_000,
            give_up_tick_ms: 10_000,
            test_hooks: false,
        }
    }
}

impl Settings for NodeConfig {
    const ENV_PREFIX: &'static str = ENV_PREFIX;

    /// Set one setting by its (snake_case) name from text.
    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "gateway_addr" => self.gateway_addr = value.to_owned(),
            "gateway_server_name" => self.gateway_server_name = value.to_owned(),
            "node_id" => self.node_id = value.to_owned(),
            "advertised_addr" => self.advertised_addr = value.to_owned(),
            "bind_addr" => self.bind_addr = num(value)?,
            "arbiters" => self.arbiters = num(value)?,
            "capacity" => self.capacity = num(value)?,
            "tick_ms" => self.tick_ms = num(value)?,
            "broadcast_ms" => self.broadcast_ms = num(value)?,
            "max_catch_up" => self.max_catch_up = num(value)?,
            "datagram_budget" => self.datagram_budget = num(value)?,
            "world" => self.world = opt_path(value),
            "cluster_secret" => self.cluster_secret = value.to_owned(),
            "drain_timeout_ms" => self.drain_timeout_ms = num(value)?,
            "heartbeat_ms" => self.heartbeat_ms = num(value)?,
            "reconnect_min_ms" => self.reconnect_min_ms = num(value)?,
            "reconnect_max_ms" => self.reconnect_max_ms = num(value)?,
            "persist_every_ms" => self.persist_every_ms = num(value)?,
            "insecure_skip_verify" => self.insecure_skip_verify = boolean(value)?,
            "gateway_cert_sha256" => {
                self.gateway_cert_sha256 = Some(value.to_owned()).filter(|v| !v.is_empty())
            }
            "admin_listen" => {
                self.admin_listen = if value.trim().is_empty() {
                    None
                } else {
                    Some(num(value)?)
                }
            }
            "trace_tick_every" => self.trace_tick_every = num(value)?,
            "ground_item_lifetime_ms" => self.ground_item_lifetime_ms = num(value)?,
            "ground_item_cap" => self.ground_item_cap = num(value)?,
            "pickup_radius" => self.pickup_radius = num(value)?,
            "inbox_per_player" => self.inbox_per_player = num(value)?,
            "inbox_total" => self.inbox_total = num(value)?,
            "scripts_per_actor" => self.scripts_per_actor = num(value)?,
            "scripts_per_zone" => self.scripts_per_zone = num(value)?,
            "snapshot_resend_ms" => self.snapshot_resend_ms = num(value)?,
            "stuck_tick_ms" => self.stuck_tick_ms = num(value)?,
            "give_up_tick_ms" => self.give_up_tick_ms = num(value)?,
            "test_hooks" => self.test_hooks = boolean(value)?,
            "config" => {}
            _ => return Err(format!("unknown setting `{key}`")),
        }
        Ok(())
    }
}

impl NodeConfig {
    /// The gateway addresses, in the order they are tried (`gateway_addr`, split at commas).
    pub fn gateway_addrs(&self) -> Vec<&str> {
        self.gateway_addr
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .collect()
    }

    /// Check every setting; the first problem wins.
    pub fn validate(&self) -> Result<(), ConfigError> {
        fn bad(field: &'static str, message: impl Into<String>) -> Result<(), ConfigError> {
            Err(ConfigError::Invalid {
                field,
                message: message.into(),
            })
        }
        let addrs = self.gateway_addrs();
        if addrs.is_empty() || addrs.iter().any(|a| !a.contains(':')) {
            return bad(
                "gateway_addr",
                "expected host:port (or several, comma-separated)",
            );
        }
        if self.node_id.trim().is_empty() || self.node_id.len() > 128 {
            return bad("node_id", "must be 1..=128 characters");
        }
        if !self.advertised_addr.contains(':') {
            return bad("advertised_addr", "expected host:port");
        }
        if self.arbiters == 0 || self.arbiters > 256 {
            return bad("arbiters", "must be 1..=256");
        }
        if self.capacity == 0 {
            return bad("capacity", "must be at least 1");
        }
        if !(1..=1000).contains(&self.tick_ms) {
            return bad("tick_ms", "must be 1..=1000");
        }
        if self.broadcast_ms < self.tick_ms || self.broadcast_ms > 10_000 {
            return bad("broadcast_ms", "must be between tick_ms and 10000");
        }
        if self.max_catch_up == 0 || self.max_catch_up > 100 {
            return bad("max_catch_up", "must be 1..=100");
        }
        if !(200..=1400).contains(&self.datagram_budget) {
            return bad("datagram_budget", "must be 200..=1400");
        }
        if let Some(why) = shared::internal::auth::weak_secret(self.cluster_secret.as_bytes()) {
            return bad(
                "cluster_secret",
                format!(
                    "required: {why} (set ZONE_NODE_CLUSTER_SECRET or ZONE_NODE_CLUSTER_SECRET_FILE)"
                ),
            );
        }
        if !(100..=600_000).contains(&self.drain_timeout_ms) {
            return bad("drain_timeout_ms", "must be 100..=600000");
        }
        if !(10..=60_000).contains(&self.heartbeat_ms) {
            return bad("heartbeat_ms", "must be 10..=60000");
        }
        if self.reconnect_min_ms == 0 || self.reconnect_max_ms < self.reconnect_min_ms {
            return bad(
                "reconnect_min_ms",
                "must be > 0 and not above reconnect_max_ms",
            );
        }
        if self.ground_item_lifetime_ms > MAX_GROUND_LIFETIME_MS {
            return bad(
                "ground_item_lifetime_ms",
                format!("must be 0 (forever) or at most {MAX_GROUND_LIFETIME_MS} (7 days)"),
            );
        }
        if !(1..=MAX_GROUND_CAP).contains(&self.ground_item_cap) {
            return bad("ground_item_cap", format!("must be 1..={MAX_GROUND_CAP}"));
        }
        if !(self.pickup_radius > 0.0 && self.pickup_radius <= 1000.0) {
            return bad("pickup_radius", "must be a number above 0 and at most 1000");
        }
        for (field, v, max) in [
            ("inbox_per_player", self.inbox_per_player, 100_000),
            ("inbox_total", self.inbox_total, 10_000_000),
            ("scripts_per_actor", self.scripts_per_actor, 100_000),
            ("scripts_per_zone", self.scripts_per_zone, 10_000_000),
        ] {
            if !(1..=max).contains(&v) {
                return bad(field, format!("must be 1..={max}"));
            }
        }
        if !(100..=600_000).contains(&self.snapshot_resend_ms) {
            return bad("snapshot_resend_ms", "must be 100..=600000");
        }
        if !(100..=600_000).contains(&self.stuck_tick_ms) {
            return bad("stuck_tick_ms", "must be 100..=600000");
        }
        if self.give_up_tick_ms != 0
            && !(self.stuck_tick_ms..=3_600_000).contains(&self.give_up_tick_ms)
        {
            return bad(
                "give_up_tick_ms",
                "must be 0 (never) or between stuck_tick_ms and 3600000",
            );
        }
        if let Some(fp) = &self.gateway_cert_sha256 {
            let clean: String = fp.chars().filter(|c| *c != ':').collect();
            if clean.len() != 64 || !clean.chars().all(|c| c.is_ascii_hexdigit()) {
                return bad("gateway_cert_sha256", "expected 64 hex digits");
            }
        }
        Ok(())
    }

    /// Tick period.
    pub fn tick(&self) -> Duration {
        Duration::from_millis(self.tick_ms)
    }

    /// Drain deadline.
    pub fn drain_timeout(&self) -> Duration {
        Duration::from_millis(self.drain_timeout_ms)
    }

    /// The ground item settings every zone gets.
    pub fn ground(&self) -> GroundConfig {
        GroundConfig {
            lifetime_ms: self.ground_item_lifetime_ms,
            cap: self.ground_item_cap,
            pickup_radius: self.pickup_radius,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok() -> NodeConfig {
        NodeConfig {
            cluster_secret: "0123456789abcdef0123456789abcdef".into(),
            ..NodeConfig::default()
        }
    }

    #[test]
    fn defaults_need_only_a_secret() {
        assert!(matches!(
            NodeConfig::default().validate(),
            Err(ConfigError::Invalid {
                field: "cluster_secret",
                ..
            })
        ));
        ok().validate().unwrap();
        assert_eq!(ok().tick_ms, 33);
        assert_eq!(ok().broadcast_ms, 200);
        assert_eq!(ok().drain_timeout_ms, 10_000);
        assert!(ok().arbiters >= 1);
    }

    #[test]
    fn several_gateway_addresses_are_tried_in_turn() {
        let mut c = ok();
        c.gateway_addr = "gw-a:25001, gw-b:25001,".into();
        assert_eq!(c.gateway_addrs(), vec!["gw-a:25001", "gw-b:25001"]);
        c.validate().unwrap();
        c.gateway_addr = "gw-a:25001,gw-b".into();
        assert!(c.validate().is_err());
        c.gateway_addr = " , ".into();
        assert!(c.validate().is_err());
    }

    #[test]
    fn the_deploy_example_parses_and_validates_with_a_secret() {
        let text = include_str!("../../deploy/config/zone-node.toml");
        let mut c = NodeConfig::from_toml(text).unwrap();
        c.cluster_secret = "0123456789abcdef0123456789abcdef".into();
        c.validate().unwrap();
        assert_eq!(c.tick_ms, 33);
    }

    #[test]
    fn toml_env_and_flags_layer() {
        let mut c = NodeConfig::from_toml(
            "gateway_addr = \"10.0.0.1:9000\"\ntick_ms = 20\ncluster_secret = \"a1b2c3d4e5f6a7b8c9d0a1b2c3d4e5f6\"\n",
        )
        .unwrap();
        assert_eq!(c.tick_ms, 20);
        c.apply_env([
            ("ZONE_NODE_TICK_MS".to_owned(), "25".to_owned()),
            ("PATH".to_owned(), "/bin".to_owned()),
        ])
        .unwrap();
        assert_eq!(c.tick_ms, 25);
        c.apply_overrides([("arbiters", "3")]).unwrap();
        assert_eq!(c.arbiters, 3);
        c.validate().unwrap();
    }

    #[test]
    fn errors_name_the_setting() {
        let e = NodeConfig::from_toml("tick_ms = \"fast\"").unwrap_err();
        assert!(e.contains("tick_ms"), "{e}");
        let e = NodeConfig::from_toml("tikc_ms = 3").unwrap_err();
        assert!(e.contains("tikc_ms"), "{e}");
        let mut c = ok();
        let e = c
            .apply_env([("ZONE_NODE_TICK_MS".to_owned(), "x".to_owned())])
            .unwrap_err();
        assert!(e.to_string().contains("ZONE_NODE_TICK_MS"), "{e}");
        let e = c
            .apply_env([("ZONE_NODE_CLUSTER_SECRT".to_owned(), "x".to_owned())])
            .unwrap_err();
        assert!(e.to_string().contains("unknown setting"), "{e}");
        c.tick_ms = 0;
        assert!(c.validate().unwrap_err().to_string().contains("tick_ms"));
        for (key, value) in [
            ("ground_item_cap", "0"),
            ("ground_item_lifetime_ms", "604800001"),
            ("pickup_radius", "0"),
            ("pickup_radius", "NaN"),
            ("stuck_tick_ms", "10"),
            ("give_up_tick_ms", "500"),
        ] {
            let mut c = ok();
            c.apply_overrides([(key, value)]).unwrap();
            let e = c.validate().unwrap_err().to_string();
            assert!(e.contains(key), "{key}={value}: {e}");
        }
        let mut c = ok();
        c.apply_env([
            (
                "ZONE_NODE_GROUND_ITEM_LIFETIME_MS".to_owned(),
                "0".to_owned(),
            ),
            ("ZONE_NODE_PICKUP_RADIUS".to_owned(), "12.5".to_owned()),
        ])
        .unwrap();
        c.validate().unwrap();
        assert_eq!(c.ground().lifetime_ms, 0);
        assert_eq!(c.ground().pickup_radius, 12.5);
        assert_eq!(c.ground().cap, 500);
        let mut c = ok();
        c.broadcast_ms = 10;
        assert!(
            c.validate()
                .unwrap_err()
                .to_string()
                .contains("broadcast_ms")
        );
    }
}
