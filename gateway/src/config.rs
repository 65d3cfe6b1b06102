//! `GatewayConfig`: the gateway's typed, validated configuration.
//!
//! Layers, later wins: built-in defaults, a TOML file, `GATEWAY_*` environment variables,
//! command-line flags (`main.rs` turns them into [`GatewayConfig::apply_overrides`] pairs).
//! [`GatewayConfig::validate`] runs last and names the setting that is wrong.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
pub use shared::settings::{ConfigError, Settings};
use shared::settings::{boolean, num, opt_path as path};

/// RCEnet's default port: Realm Crafter's own 25000 is the QUIC endpoint's.
pub const DEFAULT_ENET_PORT: u16 = 25002;

/// Environment variable prefix.
pub const ENV_PREFIX: &str = "GATEWAY_";

/// Everything the gateway needs to run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GatewayConfig {
    /// This gateway's id (logs, `/cluster`).
    pub gateway_id: String,
    /// Client QUIC endpoint (ALPN `rc/1`), UDP. Realm Crafter's default port is 25000.
    pub listen: SocketAddr,
    /// Internal QUIC endpoint the zone nodes connect to (ALPN `rc-internal/1`), UDP.
    pub internal_listen: SocketAddr,
    /// RCEnet endpoint (ENet 1.1, Realm Crafter's own clients), UDP; `off` to run without
    /// it. QUIC holds 25000, so RCEnet's default is 25002: point a client at it in its
    /// `Data\Game Data\Other.dat` or server list (docs/operations.md, "RCEnet").
    #[doc(alias = "RCEnet")]
    pub enet_listen: Option<SocketAddr>,
    /// RCEnet connections not yet past ENet's handshake, all networks together (ENet has
    /// no address validation: spoofed CONNECTs hold at most this many slots).
    pub enet_half_open: u32,
    /// ...and per client network (IPv4 address, IPv6 /64).
    pub enet_half_open_per_ip: u32,
    /// An RCEnet handshake not completed within this time frees its slot (ms).
    pub enet_connect_timeout_ms: u64,
    /// ENet 1.1's unreliable throttle: positions to a client whose round trip is rising are
    /// partly dropped unsent, as Realm Crafter's own server did (`rcenet::HostConfig`).
    /// Off by default (docs/benchmarks.md).
    pub enet_throttle: bool,
    /// RCEnet host tasks, each with its own socket on `enet_listen` (`SO_REUSEPORT`: the
    /// kernel keeps each client on one); 0 = one per CPU, at most 8. Where the system has
    /// no `SO_REUSEPORT`, one.
    pub enet_shards: u32,
    /// Admin HTTP (`/healthz`, `/metrics`, `/cluster`), TCP; loopback by default.
    pub admin_listen: SocketAddr,
    /// Data directory: SQLite database and the generated certificate.
    pub data_dir: PathBuf,
    /// The store: empty for the embedded SQLite database in `data_dir` (the default), or a
    /// Postgres server, `postgres://user:password@host:port/database` (issue 41). Give it as
    /// `GATEWAY_DATABASE_URL_FILE` when it holds a password.
    pub database_url: String,
    /// Where backups made from the console are written and restored from (none:
    /// `data_dir/backups`); the API names a backup by its file name in it.
    pub backup_dir: Option<PathBuf>,
    /// World directory (native or a Realm Crafter `Server Data`); default: the embedded demo.
    pub world: Option<PathBuf>,
    /// Shared secret zone nodes prove on the internal link (at least 16 bytes).
    pub cluster_secret: String,
    /// PEM certificate chain for the client endpoint (with `key_path`); default: a
    /// self-signed certificate created in the data directory on first start.
    pub cert_path: Option<PathBuf>,
    /// PEM private key for `cert_path`.
    pub key_path: Option<PathBuf>,
    /// Most simultaneous client connections; more are refused at the QUIC handshake.
    pub max_connections: u32,
    /// A client connection with no traffic for this long is closed (ms).
    pub idle_timeout_ms: u64,
    /// A client must open its stream within this time after connecting (ms).
    pub handshake_timeout_ms: u64,
    /// Largest client frame `len` accepted on the stream (bytes, ≤ 65535).
    pub max_frame_len: usize,
    /// Heartbeat period asked of the zone nodes (ms).
    pub heartbeat_ms: u64,
    /// A node silent for this long is removed and its instances re-placed (ms).
    pub node_timeout_ms: u64,
    /// Periodic character checkpoint for the embedded zone node (ms); remote nodes use
    /// their own `persist_every_ms`.
    pub checkpoint_ms: u64,
    /// Position broadcast period of the embedded zone node (ms; Realm Crafter: 200);
    /// remote nodes use their own `broadcast_ms`.
    pub broadcast_ms: u64,
    /// Bounded time for a graceful shutdown (ms).
    pub shutdown_timeout_ms: u64,
    /// argon2 cost: `production` (default) or `fast` (tests and local experiments only).
    pub password_hash: String,
    /// Run an embedded zone node in this process (`--standalone`).
    pub standalone: bool,
    /// A standby gateway (`--standby`, needs `database_url`): it waits until the gateway
    /// holding the database is gone (its Postgres lock released: a crash, a stop), then
    /// starts, rebuilding the directory from the zone nodes as a restart does.
    pub standby: bool,
    /// The internal addresses (`host:port`) of the other gateways (`--peers`,
    /// `GATEWAY_PEERS`, comma-separated). A standby with peers is an **edge** while it
    /// waits: it serves clients on its own addresses and relays them to whichever peer
    /// leads (`docs/operations.md`, "Several gateways").
    pub peers: Vec<String>,
    /// Where the zone nodes reach this gateway's client endpoint (`host:port`,
    /// `--fanout-addr`, `GATEWAY_FANOUT_ADDR`) when it serves as an edge: they send its
    /// clients' broadcast datagrams straight here instead of through the leader
    /// (`docs/operations.md`, "Several gateways"). Empty: `listen` when it names an
    /// address (not 0.0.0.0 or ::); `off`: never (the leader relays them).
    pub fanout_addr: String,
    /// Password verifications per client network (IPv4 address, IPv6 /64) per minute, and
    /// at once; a verification beyond it is refused unrun (code 4).
    pub login_attempts_per_minute: u32,
    /// Accounts created per client network per hour, and at once.
    pub account_creations_per_hour: u32,
    /// Most password hashes (argon2, 19 MiB each) computed at once; logins beyond it wait.
    pub max_concurrent_hashes: u32,
    /// A connection must log in (a verified account) within this time (ms).
    pub login_deadline_ms: u64,
    /// Most simultaneous connections from one client network.
    pub max_connections_per_ip: u32,
    /// Above this many connections not yet in the world, new ones must prove their address
    /// first (a QUIC Retry round trip).
    pub retry_above: u32,
    /// Above this many new connections a second (all networks together, and at once), new
    /// ones must prove their address first too.
    pub retry_above_rate: u32,
    /// New connections one client network may open per minute (and at once); beyond it a
    /// connection is refused before its handshake.
    pub connections_per_ip_per_minute: u32,
    /// Chat messages (zone chat and every `/` command) a player may send per second...
    pub chat_per_second: u32,
    /// ...and at once. Beyond it a message is dropped and the player told.
    pub chat_burst: u32,
    /// Whether clients on the gateway's own machine (127.0.0.0/8, `::1`) are held to the
    /// per-network limits (login attempts, account creations, connections per IP). Off by
    /// default: they are the operator's own tools (a local swarm, `rcclient`).
    pub limit_loopback: bool,
    /// After it starts, how long the gateway waits for separate zone nodes to report the
    /// instances they still run before it places any anew (ms; 0: none). A restarted
    /// gateway then rebuilds its directory as it was. Not used with `standalone`.
    pub placement_hold_ms: u64,
    /// Bearer token of the admin API (`POST /admin`, `gateway admin …`); empty: the API is
    /// off. Give it as `GATEWAY_ADMIN_TOKEN_FILE` (a file) or `GATEWAY_ADMIN_TOKEN`.
    /// With a token, `GET /cluster` needs it too.
    pub admin_token: String,
    /// The operators of the admin API and console (`/api/v1/`, `/console/`): one a line
    /// (or `;`-separated), `name:role:token`, the role `viewer`, `moderator` or `admin`,
    /// the token at least 24 bytes or `sha256:HEX`. Give it as `GATEWAY_OPERATORS_FILE`
    /// (a file) or `GATEWAY_OPERATORS`. `admin_token` adds the operator `admin`.
    pub operators: String,
    /// Per-player input budgets beside the defaults (docs/operations.md, "Input budgets"):
    /// `action=RATE/BURST` pairs, e.g. `jump=2/4, inventory=8/24, bytes=32768/65536`.
    /// Chat is `chat_per_second` and `chat_burst`.
    pub input_budgets: String,
    /// Abuse score (inputs dropped past their budget, less 20 a second) past which a player
    /// is disconnected with code 4; 0 never disconnects.
    pub input_kick_drops: u32,
    /// Bytes queued for one client (reliable frames not yet written to its connection)
    /// past which it is disconnected as too slow (code 6).
    pub client_queue_bytes: usize,
    /// Bytes of one client's reliable frames on their way to its zone (in the gateway's
    /// hub and node links, not yet sent) past which the gateway stops reading that client
    /// until they drain.
    pub client_inflight_bytes: usize,
    /// A connection must enter the world (`P_StartGame`) within this time of connecting,
    /// logged in or not (ms); past it, it is closed with code 4.
    pub menu_deadline_ms: u64,
    /// Connections not yet in the world may hold at most this share of `max_connections`
    /// (percent); the rest is room for players in the world. See `session::lobby`.
    pub pregame_share_percent: u32,
    /// When there is no room, a new connection displaces the oldest one that has not
    /// logged in within this time (ms).
    pub lobby_grace_ms: u64,
    /// Wait after the first failed password check of one account name, whatever network
    /// made it (ms; 0: off); each further failure doubles it.
    pub login_account_delay_ms: u64,
    /// Longest wait per account name (ms).
    pub login_account_delay_max_ms: u64,
    /// Most account names whose failed checks are remembered.
    pub login_accounts_tracked: u32,
    /// Most zone-node connections not yet authenticated at once; more are refused.
    pub internal_preauth_max: u32,
    /// Largest internal frame accepted before a node has proven the cluster secret (bytes).
    pub internal_preauth_frame_len: u32,
    /// The update host (HTTP, TCP) Realm Crafter's client downloads changed files from
    /// (`GET /<NAME>.DAT`); off by default. Needs `update_dir`.
    pub update_listen: Option<SocketAddr>,
    /// The update host's files: `<NAME>.DAT` per listed file, and `Files.dat`, the list
    /// (`rccontent build-updates` writes both). Its `Files.dat` is the list answered to
    /// `P_FetchUpdateFiles`; without one, the world's own `Files.dat` is.
    pub update_dir: Option<PathBuf>,
    /// Largest update file served (bytes; each download is read whole).
    pub update_max_file_bytes: u64,
    /// Most downloads sent at once; more are answered 503 (the client retries).
    pub update_max_downloads: u32,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            gateway_id: "gateway".into(),
            listen: SocketAddr::from(([0, 0, 0, 0], 25000)),
            // Private by default: a zone node on another host needs it set explicitly.
            internal_listen: SocketAddr::from(([127, 0, 0, 1], 25001)),
            enet_listen: Some(SocketAddr::from(([0, 0, 0, 0], DEFAULT_ENET_PORT))),
            enet_half_open: 256,
            enet_half_open_per_ip: 8,
            enet_connect_timeout_ms: 5_000,
            enet_throttle: false,
            enet_shards: 0,
            admin_listen: crate::admin::DEFAULT_ADDR,
            data_dir: PathBuf::from("data"),
            backup_dir: None,
            database_url: String::new(),
            fanout_addr: String::new(),
            world: None,
            cluster_secret: String::new(),
            cert_path: None,
            key_path: None,
            max_connections: 5_000,
            idle_timeout_ms: 30_000,
            handshake_timeout_ms: 10_000,
            max_frame_len: 8_192,
            // Three missed heartbeats give a node up: a lost node's players are back in
            // about 1.6 s (docs/benchmarks.md); raise both on a network that stalls.
            heartbeat_ms: 500,
            node_timeout_ms: 1_500,
            checkpoint_ms: 30_000,
            broadcast_ms: 200,
            shutdown_timeout_ms: 10_000,
            password_hash: "production".into(),
            standalone: false,
            standby: false,
            peers: Vec::new(),
            login_attempts_per_minute: 10,
            account_creations_per_hour: 5,
            max_concurrent_hashes: 4,
            login_deadline_ms: 60_000,
            max_connections_per_ip: 32,
            retry_above: 256,
            retry_above_rate: 200,
            connections_per_ip_per_minute: 60,
            chat_per_second: 2,
            chat_burst: 8,
            limit_loopback: false,
            admin_token: String::new(),
            operators: String::new(),
            placement_hold_ms: 6_000,
            input_budgets: String::new(),
            input_kick_drops: 200,
            client_queue_bytes: 1024 * 1024,
            client_inflight_bytes: 256 * 1024,
            menu_deadline_ms: 300_000,
            pregame_share_percent: 50,
            lobby_grace_ms: 3_000,
            login_account_delay_ms: 1_000,
            login_account_delay_max_ms: 30_000,
            login_accounts_tracked: 100_000,
            internal_preauth_max: 16,
            internal_preauth_frame_len: 16 * 1024,
            update_listen: None,
            update_dir: None,
            update_max_file_bytes: 256 * 1024 * 1024,
            update_max_downloads: 32,
        }
    }
}

impl Settings for GatewayConfig {
    const ENV_PREFIX: &'static str = ENV_PREFIX;
    const SECRET_KEYS: &'static [&'static str] =
        &["cluster_secret", "admin_token", "operators", "database_url"];

    /// Set one setting by its snake_case name from text.
    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "gateway_id" => self.gateway_id = value.to_owned(),
            "listen" => self.listen = num(value)?,
            "internal_listen" => self.internal_listen = num(value)?,
            "enet_listen" => {
                self.enet_listen = match value.trim() {
                    "" | "off" | "none" => None,
                    v => Some(num(v)?),
                }
            }
            "enet_half_open" => self.enet_half_open = num(value)?,
            "enet_half_open_per_ip" => self.enet_half_open_per_ip = num(value)?,
            "enet_connect_timeout_ms" => self.enet_connect_timeout_ms = num(value)?,
            "enet_throttle" => self.enet_throttle = boolean(value)?,
            "enet_shards" => self.enet_shards = num(value)?,
            "admin_listen" => self.admin_listen = num(value)?,
            "data_dir" => self.data_dir = PathBuf::from(value),
            "backup_dir" => self.backup_dir = path(value),
            "database_url" => self.database_url = value.trim().to_owned(),
            "world" => self.world = path(value),
            "cluster_secret" => self.cluster_secret = value.to_owned(),
            "cert_path" => self.cert_path = path(value),
            "key_path" => self.key_path = path(value),
            "max_connections" => self.max_connections = num(value)?,
            "idle_timeout_ms" => self.idle_timeout_ms = num(value)?,
            "handshake_timeout_ms" => self.handshake_timeout_ms = num(value)?,
            "max_frame_len" => self.max_frame_len = num(value)?,
            "heartbeat_ms" => self.heartbeat_ms = num(value)?,
            "node_timeout_ms" => self.node_timeout_ms = num(value)?,
            "checkpoint_ms" => self.checkpoint_ms = num(value)?,
            "broadcast_ms" => self.broadcast_ms = num(value)?,
            "shutdown_timeout_ms" => self.shutdown_timeout_ms = num(value)?,
            "password_hash" => self.password_hash = value.trim().to_ascii_lowercase(),
            "standalone" => self.standalone = boolean(value)?,
            "standby" => self.standby = boolean(value)?,
            "fanout_addr" => self.fanout_addr = value.trim().to_owned(),
            "peers" => {
                self.peers = value
                    .split(',')
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .map(str::to_owned)
                    .collect();
            }
            "login_attempts_per_minute" => self.login_attempts_per_minute = num(value)?,
            "account_creations_per_hour" => self.account_creations_per_hour = num(value)?,
            "max_concurrent_hashes" => self.max_concurrent_hashes = num(value)?,
            "login_deadline_ms" => self.login_deadline_ms = num(value)?,
            "max_connections_per_ip" => self.max_connections_per_ip = num(value)?,
            "retry_above" => self.retry_above = num(value)?,
            "retry_above_rate" => self.retry_above_rate = num(value)?,
            "connections_per_ip_per_minute" => self.connections_per_ip_per_minute = num(value)?,
            "chat_per_second" => self.chat_per_second = num(value)?,
            "chat_burst" => self.chat_burst = num(value)?,
            "limit_loopback" => self.limit_loopback = boolean(value)?,
            "admin_token" => self.admin_token = value.trim().to_owned(),
            "operators" => self.operators = value.trim().to_owned(),
            "placement_hold_ms" => self.placement_hold_ms = num(value)?,
            "input_budgets" => self.input_budgets = value.trim().to_owned(),
            "input_kick_drops" => self.input_kick_drops = num(value)?,
            "client_queue_bytes" => self.client_queue_bytes = num(value)?,
            "client_inflight_bytes" => self.client_inflight_bytes = num(value)?,
            "menu_deadline_ms" => self.menu_deadline_ms = num(value)?,
            "pregame_share_percent" => self.pregame_share_percent = num(value)?,
            "lobby_grace_ms" => self.lobby_grace_ms = num(value)?,
            "login_account_delay_ms" => self.login_account_delay_ms = num(value)?,
            "login_account_delay_max_ms" => self.login_account_delay_max_ms = num(value)?,
            "login_accounts_tracked" => self.login_accounts_tracked = num(value)?,
            "internal_preauth_max" => self.internal_preauth_max = num(value)?,
            "internal_preauth_frame_len" => self.internal_preauth_frame_len = num(value)?,
            "update_listen" => {
                self.update_listen = if value.trim().is_empty() {
                    None
                } else {
                    Some(num(value)?)
                };
            }
            "update_dir" => self.update_dir = path(value),
            "update_max_file_bytes" => self.update_max_file_bytes = num(value)?,
            "update_max_downloads" => self.update_max_downloads = num(value)?,
            "config" => {}
            _ => return Err(format!("unknown setting `{key}`")),
        }
        Ok(())
    }
}

impl GatewayConfig {
    /// Where console backups go ([`GatewayConfig::backup_dir`]).
    pub fn backups(&self) -> PathBuf {
        self.backup_dir
            .clone()
            .unwrap_or_else(|| self.data_dir.join("backups"))
    }

    /// Check every setting; the first problem wins.
    pub fn validate(&self) -> Result<(), ConfigError> {
        fn bad(field: &'static str, message: impl Into<String>) -> Result<(), ConfigError> {
            Err(ConfigError::Invalid {
                field,
                message: message.into(),
            })
        }
        if self.gateway_id.trim().is_empty() || self.gateway_id.len() > 128 {
            return bad("gateway_id", "must be 1..=128 characters");
        }
        // The standalone mode generates a secret for its embedded node when none is set.
        if !self.standalone
            && let Some(why) = shared::internal::auth::weak_secret(self.cluster_secret.as_bytes())
        {
            return bad(
                "cluster_secret",
                format!(
                    "required: {why} (set GATEWAY_CLUSTER_SECRET or GATEWAY_CLUSTER_SECRET_FILE, or use --standalone)"
                ),
            );
        }
        if self.cert_path.is_some() != self.key_path.is_some() {
            return bad("cert_path", "cert_path and key_path go together");
        }
        if self.max_connections == 0 {
            return bad("max_connections", "must be at least 1");
        }
        if !(1_000..=3_600_000).contains(&self.idle_timeout_ms) {
            return bad("idle_timeout_ms", "must be 1000..=3600000");
        }
        if !(100..=120_000).contains(&self.handshake_timeout_ms) {
            return bad("handshake_timeout_ms", "must be 100..=120000");
        }
        if !(64..=shared::frame::MAX_FRAME_LEN).contains(&self.max_frame_len) {
            return bad("max_frame_len", "must be 64..=65535");
        }
        if !(10..=60_000).contains(&self.heartbeat_ms) {
            return bad("heartbeat_ms", "must be 10..=60000");
        }
        if self.node_timeout_ms < 2 * self.heartbeat_ms {
            return bad("node_timeout_ms", "must be at least twice heartbeat_ms");
        }
        if !(100..=3_600_000).contains(&self.checkpoint_ms) {
            return bad("checkpoint_ms", "must be 100..=3600000");
        }
        let tick_ms = shared::internal::DEFAULT_TICK_MS;
        if !(tick_ms..=10_000).contains(&self.broadcast_ms) {
            return bad(
                "broadcast_ms",
                format!("must be {tick_ms}..=10000 (one zone tick to ten seconds)"),
            );
        }
        if !(100..=600_000).contains(&self.shutdown_timeout_ms) {
            return bad("shutdown_timeout_ms", "must be 100..=600000");
        }
        if !matches!(self.password_hash.as_str(), "production" | "fast") {
            return bad("password_hash", "expected `production` or `fast`");
        }
        for (field, v, max) in [
            (
                "login_attempts_per_minute",
                self.login_attempts_per_minute,
                100_000,
            ),
            (
                "account_creations_per_hour",
                self.account_creations_per_hour,
                100_000,
            ),
            ("max_concurrent_hashes", self.max_concurrent_hashes, 1_024),
            (
                "max_connections_per_ip",
                self.max_connections_per_ip,
                1_000_000,
            ),
            ("retry_above", self.retry_above, 1_000_000),
            ("retry_above_rate", self.retry_above_rate, 1_000_000),
            (
                "connections_per_ip_per_minute",
                self.connections_per_ip_per_minute,
                1_000_000,
            ),
            ("chat_per_second", self.chat_per_second, 1_000),
            ("chat_burst", self.chat_burst, 10_000),
        ] {
            if !(1..=max).contains(&v) {
                return bad(field, format!("must be 1..={max}"));
            }
        }
        if let Err(e) = crate::console::Operators::parse(&self.operators, "") {
            return bad("operators", e.to_string());
        }
        if !self.database_url.is_empty()
            && !self.database_url.starts_with("postgres://")
            && !self.database_url.starts_with("postgresql://")
        {
            return bad(
                "database_url",
                "must be empty (SQLite in data_dir) or postgres://user:password@host:port/database",
            );
        }
        if self.standby && self.database_url.is_empty() {
            return bad(
                "standby",
                "a standby gateway needs database_url (the Postgres database it takes over)",
            );
        }
        if !self.peers.is_empty() && !self.standby {
            return bad(
                "peers",
                "only a standby gateway (--standby) relays to its peers while another leads",
            );
        }
        let host_port = |p: &str| {
            p.len() <= 255
                && p.rsplit_once(':').is_some_and(|(host, port)| {
                    !host.is_empty() && port.parse::<u16>().is_ok_and(|n| n != 0)
                })
        };
        if let Some(p) = self.peers.iter().find(|p| !host_port(p)) {
            return bad("peers", format!("{p:?} is not host:port"));
        }
        if !matches!(self.fanout_addr.as_str(), "" | "off") && !host_port(&self.fanout_addr) {
            return bad(
                "fanout_addr",
                format!("{:?} is not host:port (or off)", self.fanout_addr),
            );
        }
        if !self.admin_token.is_empty() && self.admin_token.len() < 24 {
            return bad(
                "admin_token",
                "at least 24 bytes when set (e.g. `openssl rand -hex 24`)",
            );
        }
        if self.placement_hold_ms > 600_000 {
            return bad("placement_hold_ms", "must be at most 600000");
        }
        if !(1_000..=3_600_000).contains(&self.login_deadline_ms) {
            return bad("login_deadline_ms", "must be 1000..=3600000");
        }
        self.budgets()?;
        if !(64 * 1024..=1024 * 1024 * 1024).contains(&self.client_queue_bytes) {
            return bad("client_queue_bytes", "must be 65536..=1073741824");
        }
        if !(self.max_frame_len..=1024 * 1024 * 1024).contains(&self.client_inflight_bytes) {
            return bad(
                "client_inflight_bytes",
                "must be max_frame_len..=1073741824",
            );
        }
        if !(1_000..=86_400_000).contains(&self.menu_deadline_ms) {
            return bad("menu_deadline_ms", "must be 1000..=86400000");
        }
        if !(1..=100).contains(&self.pregame_share_percent) {
            return bad("pregame_share_percent", "must be 1..=100");
        }
        if self.lobby_grace_ms > 600_000 {
            return bad("lobby_grace_ms", "must be at most 600000");
        }
        if self.login_account_delay_ms > 3_600_000 {
            return bad("login_account_delay_ms", "must be at most 3600000");
        }
        if !(self.login_account_delay_ms..=3_600_000).contains(&self.login_account_delay_max_ms) {
            return bad(
                "login_account_delay_max_ms",
                "must be login_account_delay_ms..=3600000",
            );
        }
        if !(1..=10_000_000).contains(&self.login_accounts_tracked) {
            return bad("login_accounts_tracked", "must be 1..=10000000");
        }
        if !(1..=1_000_000).contains(&self.enet_half_open) {
            return bad("enet_half_open", "must be 1..=1000000");
        }
        if !(1..=self.enet_half_open).contains(&self.enet_half_open_per_ip) {
            return bad("enet_half_open_per_ip", "must be 1..=enet_half_open");
        }
        if !(500..=60_000).contains(&self.enet_connect_timeout_ms) {
            return bad("enet_connect_timeout_ms", "must be 500..=60000");
        }
        if self.enet_shards > 64 {
            return bad("enet_shards", "must be 0..=64 (0: one per CPU)");
        }
        // Port 0 asks the system for a free port: never the same one twice.
        if let Some(e) = self.enet_listen
            && e.port() != 0
            && (e == self.listen || e == self.internal_listen)
        {
            return bad(
                "enet_listen",
                "must differ from listen and internal_listen (both are UDP too)",
            );
        }
        if !(1..=100_000).contains(&self.internal_preauth_max) {
            return bad("internal_preauth_max", "must be 1..=100000");
        }
        if !(1_024..=1_048_576).contains(&self.internal_preauth_frame_len) {
            return bad("internal_preauth_frame_len", "must be 1024..=1048576");
        }
        if self.update_listen.is_some() && self.update_dir.is_none() {
            return bad(
                "update_listen",
                "needs update_dir, the directory of the files it serves (rccontent build-updates)",
            );
        }
        if !(1..=(4 << 30)).contains(&self.update_max_file_bytes) {
            return bad("update_max_file_bytes", "must be 1..=4294967296");
        }
        if !(1..=10_000).contains(&self.update_max_downloads) {
            return bad("update_max_downloads", "must be 1..=10000");
        }
        Ok(())
    }

    /// Each player's input budgets: the defaults, `chat_per_second`/`chat_burst`, then
    /// `input_budgets` and `input_kick_drops`.
    pub fn budgets(&self) -> Result<crate::session::budget::Budgets, ConfigError> {
        use crate::session::budget::{Action, Budgets, Rate};
        let mut b = Budgets::default();
        b.set(
            Action::Chat,
            Rate::new(self.chat_per_second.max(1), self.chat_burst.max(1)),
        );
        b.apply_spec(&self.input_budgets)
            .map_err(|e| ConfigError::Invalid {
                field: "input_budgets",
                message: e.to_string(),
            })?;
        b.kick_drops = self.input_kick_drops;
        Ok(b)
    }

    /// Where the zone nodes reach this gateway for the direct fan-out (`fanout_addr`),
    /// if anywhere.
    pub fn fanout_advertised(&self) -> Option<String> {
        match self.fanout_addr.as_str() {
            "off" => None,
            "" => (!self.listen.ip().is_unspecified()).then(|| self.listen.to_string()),
            a => Some(a.to_owned()),
        }
    }

    /// The idle timeout.
    pub fn idle_timeout(&self) -> Duration {
        Duration::from_millis(self.idle_timeout_ms)
    }

    /// The shutdown deadline.
    pub fn shutdown_timeout(&self) -> Duration {
        Duration::from_millis(self.shutdown_timeout_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret() -> String {
        "0123456789abcdef0123456789abcdef".into()
    }

    #[test]
    fn a_database_url_is_postgres_and_a_standby_needs_one() {
        let mut c = GatewayConfig {
            standalone: true,
            ..GatewayConfig::default()
        };
        c.validate().unwrap();
        for bad in ["mysql://x/y", "sqlite:data", "localhost:5432"] {
            c.set("database_url", bad).unwrap();
            let e = c.validate().unwrap_err().to_string();
            assert!(e.contains("database_url"), "{bad:?}: {e}");
        }
        c.set("database_url", "").unwrap();
        c.set("standby", "true").unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("standby"), "{e}");
        c.set("database_url", "postgres://rc:pw@db:5432/rc")
            .unwrap();
        c.validate().unwrap();
        assert!(c.set("standby", "maybe").is_err());
    }

    #[test]
    fn peers_are_host_port_and_only_for_a_standby() {
        let mut c = GatewayConfig {
            cluster_secret: secret(),
            database_url: "postgres://rc:pw@db:5432/rc".into(),
            ..GatewayConfig::default()
        };
        c.set("peers", "gw-b:25001").unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("peers") && e.contains("standby"), "{e}");
        c.set("standby", "true").unwrap();
        c.set("peers", " gw-a:25001, 10.0.0.2:25001 ,[::1]:25001,")
            .unwrap();
        assert_eq!(c.peers, ["gw-a:25001", "10.0.0.2:25001", "[::1]:25001"]);
        c.validate().unwrap();
        for bad in [
            "gw-a",
            "gw-a:",
            ":25001",
            "gw-a:port",
            "gw-a:0",
            "gw-a:70000",
        ] {
            c.set("peers", &format!("gw-b:25001,{bad}")).unwrap();
            let e = c.validate().unwrap_err().to_string();
            assert!(e.contains("peers") && e.contains(bad), "{bad:?}: {e}");
        }
        c.set("peers", "").unwrap();
        assert!(c.peers.is_empty());
        c.validate().unwrap();
    }

    #[test]
    fn the_fanout_address_is_listen_unless_set_or_off() {
        let mut c = GatewayConfig::default();
        c.set("listen", "0.0.0.0:25000").unwrap();
        assert_eq!(c.fanout_advertised(), None);
        c.set("listen", "10.0.0.5:25000").unwrap();
        assert_eq!(c.fanout_advertised().as_deref(), Some("10.0.0.5:25000"));
        c.set("fanout_addr", "gateway-b:25000").unwrap();
        assert_eq!(c.fanout_advertised().as_deref(), Some("gateway-b:25000"));
        c.set("fanout_addr", "off").unwrap();
        assert_eq!(c.fanout_advertised(), None);
        c.cluster_secret = secret();
        c.validate().unwrap();
        c.set("fanout_addr", "gateway-b").unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("fanout_addr"), "{e}");
    }

    #[test]
    fn defaults_need_a_secret_unless_standalone() {
        let c = GatewayConfig::default();
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("cluster_secret"), "{e}");
        let c = GatewayConfig {
            standalone: true,
            ..GatewayConfig::default()
        };
        c.validate().unwrap();
        let c = GatewayConfig {
            cluster_secret: secret(),
            ..GatewayConfig::default()
        };
        c.validate().unwrap();
        assert_eq!(c.listen.port(), 25000);
    }

    #[test]
    fn the_embedded_broadcast_period_is_checked() {
        let mut c = GatewayConfig {
            standalone: true,
            ..GatewayConfig::default()
        };
        c.apply_env([("GATEWAY_BROADCAST_MS".to_owned(), "50".to_owned())])
            .unwrap();
        assert_eq!(c.broadcast_ms, 50);
        c.validate().unwrap();
        c.broadcast_ms = 5;
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("broadcast_ms"), "{e}");
    }

    #[test]
    fn orchestrator_variables_are_tolerated_and_secrets_come_from_files() {
        let mut c = GatewayConfig::default();
        // What Kubernetes injects for a Service named `gateway`.
        c.apply_env([
            ("GATEWAY_PORT".to_owned(), "udp://10.0.0.7:25000".to_owned()),
            (
                "GATEWAY_PORT_25000_UDP".to_owned(),
                "udp://10.0.0.7:25000".to_owned(),
            ),
            ("GATEWAY_PORT_25000_UDP_PROTO".to_owned(), "udp".to_owned()),
            ("GATEWAY_SERVICE_HOST".to_owned(), "10.0.0.7".to_owned()),
            ("GATEWAY_SERVICE_PORT".to_owned(), "25000".to_owned()),
        ])
        .unwrap();
        assert_eq!(c, GatewayConfig::default());
        // Anything else unknown is still an error.
        assert!(
            c.apply_env([("GATEWAY_LISTENN".to_owned(), "x".to_owned())])
                .is_err()
        );
        let dir = std::env::temp_dir().join(format!("gw-cfg-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("secret");
        std::fs::write(&f, format!("{}\n", secret())).unwrap();
        c.apply_env([(
            "GATEWAY_CLUSTER_SECRET_FILE".to_owned(),
            f.display().to_string(),
        )])
        .unwrap();
        assert_eq!(c.cluster_secret, secret());
        let e = c
            .apply_env([(
                "GATEWAY_CLUSTER_SECRET_FILE".to_owned(),
                dir.join("missing").display().to_string(),
            )])
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot read"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_update_host_needs_its_directory() {
        let mut c = GatewayConfig {
            standalone: true,
            ..GatewayConfig::default()
        };
        assert_eq!(c.update_listen, None);
        c.apply_env([("GATEWAY_UPDATE_LISTEN".to_owned(), "0.0.0.0:80".to_owned())])
            .unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(
            e.contains("update_listen") && e.contains("update_dir"),
            "{e}"
        );
        c.apply_overrides([("update_dir", "updates")]).unwrap();
        c.validate().unwrap();
        c.apply_overrides([("update_listen", "")]).unwrap();
        assert_eq!(c.update_listen, None);
    }

    #[test]
    fn rcenet_is_on_by_default_on_its_own_port_and_can_be_turned_off() {
        let mut c = GatewayConfig {
            standalone: true,
            ..GatewayConfig::default()
        };
        assert_eq!(c.enet_listen.map(|a| a.port()), Some(DEFAULT_ENET_PORT));
        c.validate().unwrap();
        c.apply_overrides([("enet_listen", "0.0.0.0:25000")])
            .unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("enet_listen"), "{e}");
        // Port 0: a free port each, never a clash.
        c.apply_overrides([("enet_listen", "127.0.0.1:0"), ("listen", "127.0.0.1:0")])
            .unwrap();
        c.validate().unwrap();
        c.apply_env([("GATEWAY_ENET_LISTEN".to_owned(), "off".to_owned())])
            .unwrap();
        assert_eq!(c.enet_listen, None);
        c.apply_overrides([("enet_half_open_per_ip", "300")])
            .unwrap();
        assert!(
            c.validate()
                .unwrap_err()
                .to_string()
                .contains("enet_half_open_per_ip")
        );
    }

    #[test]
    fn layers_apply_in_order_and_name_the_bad_setting() {
        let mut c: GatewayConfig =
            toml::from_str("listen = \"127.0.0.1:4000\"\nmax_connections = 7\n").unwrap();
        assert_eq!(c.max_connections, 7);
        c.apply_env([
            ("GATEWAY_MAX_CONNECTIONS".to_owned(), "9".to_owned()),
            ("OTHER".to_owned(), "x".to_owned()),
        ])
        .unwrap();
        assert_eq!(c.max_connections, 9);
        c.apply_overrides([("max_connections", "11")]).unwrap();
        assert_eq!(c.max_connections, 11);
        let e = c
            .apply_env([("GATEWAY_LISTEN".to_owned(), "nope".to_owned())])
            .unwrap_err()
            .to_string();
        assert!(e.contains("GATEWAY_LISTEN"), "{e}");
        let e = c
            .apply_env([("GATEWAY_CLUSTER_SECRE".to_owned(), "s".to_owned())])
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown setting"), "{e}");
        let e = c
            .apply_env([("GATEWAY_STANDALONE".to_owned(), "maybe".to_owned())])
            .unwrap_err()
            .to_string();
        assert!(e.contains("true or false"), "{e}");
        assert!(toml::from_str::<GatewayConfig>("bogus = 1").is_err());
        c.cluster_secret = secret();
        c.max_frame_len = 10;
        assert!(
            c.validate()
                .unwrap_err()
                .to_string()
                .contains("max_frame_len")
        );
    }
}
