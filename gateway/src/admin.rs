//! The gateway's admin HTTP endpoint: `GET /healthz` (readiness, also `/readyz`; `/livez`
//! is liveness), `GET /metrics` (Prometheus text
//! exposition format 0.0.4) and `GET /cluster` (a JSON [`ClusterView`]; with an admin
//! token configured it needs the token), served on a loopback address by default
//! ([`DEFAULT_ADDR`]; [`exposure_warning`] names a public bind without a token); and, with
//! an admin token configured,
//! `POST /admin`: one [`AdminCommand`] as JSON with `Authorization: Bearer TOKEN`, for an
//! operator who must not stop the server (accounts, DM and ban flags, kick, warp,
//! broadcast, who is online, the maintenance lock; `gateway admin …` is its command line),
//! and `POST /lock` (an optional `{"reason": "..."}`) and `POST /unlock`, the same lock
//! under the same token.
//!
//! The data comes from the rest of the gateway through [`AdminSource`]; this module only
//! speaks HTTP. Other paths answer 404, other methods 405 (`HEAD` is answered like `GET`,
//! without a body). [`MetricsText`] builds the exposition text.

use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::Arc;

pub use shared::metrics_text::MetricsText;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::{Deserialize, Serialize};
use shared::internal::Generation;

/// The default admin address: loopback only (the endpoint has no authentication).
pub const DEFAULT_ADDR: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 9180));

/// What is open to anyone on a non-loopback admin bind without an admin token (`None`:
/// nothing worth a warning). `/healthz` and `/metrics` stay open by design (orchestrators
/// and Prometheus read them without credentials; they carry counts, no names).
pub fn exposure_warning(addr: SocketAddr, token_set: bool) -> Option<&'static str> {
    (!addr.ip().is_loopback() && !token_set).then_some(
        "admin_listen is not a loopback address and no admin_token is set: /cluster (node addresses and load) and /metrics answer anyone who reaches it; set GATEWAY_ADMIN_TOKEN_FILE or bind to 127.0.0.1",
    )
}

/// Content type of `/metrics` (Prometheus text exposition format 0.0.4).
pub const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4";

/// Content type of `/healthz` and the error bodies.
pub const TEXT_CONTENT_TYPE: &str = "text/plain; charset=utf-8";

/// Content type of `/cluster`.
pub const JSON_CONTENT_TYPE: &str = "application/json";

/// Longest unhealthy reason sent (bytes); longer ones are cut at a char boundary.
pub const MAX_REASON: usize = 256;

/// One operator command on a running gateway (`POST /admin`, JSON with a `command` tag,
/// e.g. `{"command":"kick","name":"Bob"}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case", deny_unknown_fields)]
pub enum AdminCommand {
    /// Create an account (its password as typed; stored as the login flow checks it).
    CreateAccount {
        /// Account name.
        user: String,
        /// Password as typed.
        password: String,
        /// A game master.
        #[serde(default)]
        dm: bool,
    },
    /// Set or clear an account's DM flag (an online player gets it at the next login).
    SetDm {
        /// Account name.
        user: String,
        /// Set (true) or clear.
        on: bool,
    },
    /// Ban or unban an account; a banned player online is kicked.
    SetBanned {
        /// Account name.
        user: String,
        /// Ban (true) or lift the ban.
        on: bool,
    },
    /// Kick an online character (`P_KickedPlayer`, close code 1).
    Kick {
        /// Character name.
        name: String,
    },
    /// Warp an online character to an AreaInstance (its first named portal, as `/warp`).
    Warp {
        /// Character name.
        name: String,
        /// Area name.
        area: String,
        /// Instance number.
        #[serde(default)]
        instance: u16,
    },
    /// A yellow system line to every player online.
    Broadcast {
        /// The text.
        text: String,
    },
    /// The characters online, one per line: name, area, instance.
    Online,
    /// Lock the server for maintenance (Realm Crafter's "lock updates server"): no login,
    /// account creation, game start, update list or download until `unlock`; every player
    /// online is told, kicked (`P_KickedPlayer`) and disconnected with code 5.
    #[doc(alias = "ServerLocked")]
    Lock {
        /// Why, shown to the players and to whoever is refused.
        #[serde(default)]
        reason: String,
    },
    /// Unlock: the update list is read again from its `Files.dat` (a list that does not
    /// load leaves the server locked), then logins and downloads are open.
    Unlock,
    /// Reload the world's scripts from its folder on every node (Realm Crafter's
    /// `RefreshScripts`): compiled and checked once; a set with errors is refused with its
    /// diagnostics and nothing changes. Running scripts finish on their old code.
    #[doc(alias = "RefreshScripts")]
    ReloadScripts,
    /// Import a Realm Crafter server's `Superglobals.dat` and `Script Files` (read by
    /// `gateway admin import-script-data DIR`) into the running cluster's script store;
    /// every zone node gets the super globals at once.
    ImportScriptData {
        /// What was read.
        data: crate::script_import::ScriptData,
    },
    /// Hand the lead over (a gateway upgrade without a full disconnect): this gateway
    /// leaves as if it had died, saving nothing and telling the zone nodes nothing (they
    /// keep their players), and exits; an edge takes the database over and keeps the
    /// players it relays in their sessions. This gateway's own players log in again.
    HandOver,
}

/// A boxed future of an admin command's outcome: `Ok(text)` answers 200 with the text,
/// `Err(text)` 400.
pub type AdminFuture = std::pin::Pin<Box<dyn Future<Output = Result<String, String>> + Send>>;

/// What the admin endpoint shows, provided by the rest of the gateway. Called on the
/// runtime's worker threads for every request, so each call should take a snapshot and
/// return quickly (no blocking I/O).
pub trait AdminSource: Send + Sync + 'static {
    /// `Ok` when the gateway is healthy, else a short reason (answered with 503).
    fn health(&self) -> Result<(), String>;
    /// The metrics in Prometheus text format (build them with [`MetricsText`]).
    fn metrics(&self) -> String;
    /// The cluster as the gateway sees it.
    fn cluster(&self) -> ClusterView;
    /// Whether `token` may read the cluster (`GET /cluster`): any operator's token;
    /// `None` when no operator is configured (it is open). By default, as
    /// [`AdminSource::admin_token_ok`].
    fn reader_token_ok(&self, token: &str) -> Option<bool> {
        self.admin_token_ok(token)
    }
    /// Whether `token` is the admin token; `None` when no token is configured (the admin
    /// API is off).
    fn admin_token_ok(&self, _token: &str) -> Option<bool> {
        None
    }
    /// Runs one admin command.
    fn admin(&self, _cmd: AdminCommand) -> AdminFuture {
        Box::pin(async { Err("the admin API is not available here".to_owned()) })
    }
    /// Records a command that ran for the operator of `token`, and its outcome, in the
    /// audit log.
    fn audited(&self, _token: &str, _cmd: &AdminCommand, _outcome: &Result<String, String>) {}
}

impl AdminCommand {
    /// Its name (the JSON `command` tag).
    pub fn name(&self) -> &'static str {
        match self {
            Self::CreateAccount { .. } => "create_account",
            Self::SetDm { .. } => "set_dm",
            Self::SetBanned { .. } => "set_banned",
            Self::Kick { .. } => "kick",
            Self::Warp { .. } => "warp",
            Self::Broadcast { .. } => "broadcast",
            Self::Online => "online",
            Self::Lock { .. } => "lock",
            Self::Unlock => "unlock",
            Self::ReloadScripts => "reload_scripts",
            Self::ImportScriptData { .. } => "import_script_data",
            Self::HandOver => "hand_over",
        }
    }

    /// What it acts on (an account or a character; empty: the cluster).
    pub fn target(&self) -> &str {
        match self {
            Self::CreateAccount { user, .. }
            | Self::SetDm { user, .. }
            | Self::SetBanned { user, .. } => user,
            Self::Kick { name } | Self::Warp { name, .. } => name,
            _ => "",
        }
    }

    /// Its parameters for the audit log: JSON without the password or imported data.
    pub fn audit_detail(&self) -> String {
        let mut v = serde_json::to_value(self).unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            o.remove("password");
            o.remove("data");
        }
        v.to_string()
    }

    /// Whether it changes anything (`online` only reads).
    pub fn changes_state(&self) -> bool {
        !matches!(self, Self::Online)
    }
}

/// The cluster as the gateway sees it (`GET /cluster`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterView {
    /// This gateway's id.
    pub gateway_id: String,
    /// Client sessions by phase.
    pub sessions: SessionCounts,
    /// The registered zone nodes.
    pub nodes: Vec<NodeView>,
    /// AreaInstances wanted but placed on no node.
    pub unplaced: Vec<UnplacedInstance>,
    /// Whether the server is locked for maintenance.
    #[serde(default)]
    pub locked: bool,
    /// The lock's reason (empty: none given), while locked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_reason: Option<String>,
    /// Files in the update list (`Files.dat`).
    #[serde(default)]
    pub update_files: u64,
    /// When a shutdown an operator scheduled is due (Unix ms), while one is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shutdown_at_ms: Option<u64>,
    /// The control plane's epoch this gateway holds (raised by each gateway that takes the
    /// store over; the zone nodes refuse an older one).
    #[serde(default)]
    pub control_epoch: u64,
    /// Edge gateways relaying their clients to this one (`--peers`), each with the
    /// clients it relays (counted in `sessions` too).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub edges: Vec<EdgeView>,
}

/// One edge gateway linked to the leader.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EdgeView {
    /// Its `gateway_id`.
    pub name: String,
    /// The address its link comes from (two edges may share a name).
    #[serde(default)]
    pub address: String,
    /// The clients it relays.
    pub clients: u64,
}

/// Client sessions by phase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionCounts {
    /// Open connections (menu and game).
    pub connected: u64,
    /// Sessions in the login menu.
    pub in_menu: u64,
    /// Sessions in the world.
    pub in_game: u64,
}

/// One zone node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeView {
    /// The node's id.
    pub id: String,
    /// The address it registered from.
    pub address: String,
    /// How many AreaInstances it accepts.
    pub capacity: u32,
    /// Instances over capacity (see [`NodeView::load_of`]).
    pub load: f64,
    /// Players on the node.
    pub players: u64,
    /// Whether it is draining (takes no new instances or players).
    pub draining: bool,
    /// Milliseconds since its last heartbeat.
    pub last_heartbeat_ms_ago: u64,
    /// Its AreaInstances.
    pub instances: Vec<InstanceView>,
}

impl NodeView {
    /// The load of a node running `instances` of `capacity`: `instances / capacity`. A
    /// capacity of 0 counts as 1, so the value stays finite.
    pub fn load_of(instances: usize, capacity: u32) -> f64 {
        // Exact below 2^53 instances.
        instances as f64 / f64::from(capacity.max(1))
    }
}

/// One AreaInstance on a node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InstanceView {
    /// Area name.
    pub area: String,
    /// Instance number.
    pub instance: u16,
    /// Placement generation.
    pub generation: Generation,
    /// Players in it.
    pub players: u64,
    /// NPCs in it.
    pub npcs: u64,
    /// 99th percentile tick time, in milliseconds.
    pub tick_p99_ms: f64,
    /// Median tick time, in milliseconds.
    #[serde(default)]
    pub tick_p50_ms: f64,
    /// Handoffs out of it begun since its copy started (SetArea warps, portals).
    #[serde(default)]
    pub handoffs: u64,
    /// Of those, the ones that failed (refused or timed out).
    #[serde(default)]
    pub handoffs_failed: u64,
    /// Script errors and caught panics since its copy started.
    #[serde(default)]
    pub errors: u64,
    /// Time since it last completed a tick, in milliseconds: its node's last report plus
    /// the time since that report (the tick watchdog's measure; a frozen instance's grows).
    #[serde(default)]
    pub tick_age_ms: u64,
    /// Its node's watchdog holds it stuck: no new player goes to it.
    #[serde(default)]
    pub stuck: bool,
}

/// An AreaInstance with no node.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnplacedInstance {
    /// Area name.
    pub area: String,
    /// Instance number.
    pub instance: u16,
}

type Source = Arc<dyn AdminSource>;

/// The admin routes, for embedding in another server or testing without a socket.
pub fn router(source: Arc<dyn AdminSource>) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/livez", get(livez))
        .route("/readyz", get(healthz))
        .route("/metrics", get(metrics))
        .route("/cluster", get(cluster))
        // An `import-script-data` body carries script files (JSON numbers, about four
        // bytes a byte): up to 64 MB; a larger import uses the offline command.
        .route(
            "/admin",
            axum::routing::post(admin).layer(axum::extract::DefaultBodyLimit::max(64 << 20)),
        )
        .route("/lock", axum::routing::post(lock))
        .route("/unlock", axum::routing::post(unlock))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(source)
}

/// Serves the admin endpoint (and the routes of `more`, e.g. the console's) on `listener`
/// until `shutdown` completes, then stops accepting and waits for the requests in flight.
pub async fn serve(
    listener: tokio::net::TcpListener,
    source: Arc<dyn AdminSource>,
    more: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(source).merge(more))
        .with_graceful_shutdown(shutdown)
        .await
}

fn text(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, TEXT_CONTENT_TYPE)], body).into_response()
}

/// One line of at most [`MAX_REASON`] bytes (control characters become spaces).
fn short_reason(reason: &str) -> String {
    let mut out = String::new();
    for c in reason.trim().chars() {
        if out.len() + c.len_utf8() > MAX_REASON {
            break;
        }
        out.push(if c.is_control() { ' ' } else { c });
    }
    if out.is_empty() {
        out.push_str("unhealthy");
    }
    out
}

async fn healthz(State(source): State<Source>) -> Response {
    match source.health() {
        Ok(()) => text(StatusCode::OK, "ok".to_owned()),
        Err(reason) => text(StatusCode::SERVICE_UNAVAILABLE, short_reason(&reason)),
    }
}

/// Liveness: 200 while the process serves HTTP (an orchestrator restarts it otherwise);
/// readiness is `/readyz` (the same as `/healthz`).
async fn livez() -> Response {
    text(StatusCode::OK, "ok".to_owned())
}

async fn metrics(State(source): State<Source>) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, METRICS_CONTENT_TYPE)],
        source.metrics(),
    )
        .into_response()
}

/// The bearer token of a request (empty when none).
fn bearer(headers: &axum::http::HeaderMap) -> &str {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default()
        .trim()
}

/// 401 with `WWW-Authenticate: Bearer`.
fn unauthorized() -> Response {
    let mut r = text(
        StatusCode::UNAUTHORIZED,
        "bad or missing admin token".to_owned(),
    );
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        axum::http::HeaderValue::from_static("Bearer"),
    );
    r
}

/// `/cluster` names every node, its address and its load: with an admin token set it
/// needs the token; without one it is served to whoever reaches the admin endpoint
/// (loopback by default; the gateway warns at start when that is not loopback).
async fn cluster(State(source): State<Source>, headers: axum::http::HeaderMap) -> Response {
    if source.reader_token_ok(bearer(&headers)) == Some(false) {
        return unauthorized();
    }
    match serde_json::to_vec(&source.cluster()) {
        Ok(body) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, JSON_CONTENT_TYPE)],
            body,
        )
            .into_response(),
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// Largest admin request body (bytes).
const MAX_ADMIN_BODY: usize = 16 * 1024;

/// The body of `POST /lock` (optional): `{"reason": "..."}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LockBody {
    #[serde(default)]
    reason: String,
}

/// `POST /lock`: [`AdminCommand::Lock`], the reason from an optional JSON body.
async fn lock(
    State(source): State<Source>,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let cmd = if body.iter().all(u8::is_ascii_whitespace) {
        Ok(AdminCommand::Lock {
            reason: String::new(),
        })
    } else {
        serde_json::from_slice::<LockBody>(&body).map(|b| AdminCommand::Lock { reason: b.reason })
    };
    run(source, &headers, body.len(), cmd).await
}

/// `POST /unlock`: [`AdminCommand::Unlock`].
async fn unlock(
    State(source): State<Source>,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    run(source, &headers, body.len(), Ok(AdminCommand::Unlock)).await
}

async fn admin(
    State(source): State<Source>,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let cmd = serde_json::from_slice::<AdminCommand>(&body);
    run(source, &headers, body.len(), cmd).await
}

/// One admin command, behind the token: 404 when the API is off, 401 without the token,
/// 413 for a large body, 400 for a bad one.
async fn run(
    source: Source,
    headers: &axum::http::HeaderMap,
    body_len: usize,
    cmd: Result<AdminCommand, serde_json::Error>,
) -> Response {
    match source.admin_token_ok(bearer(headers)) {
        None => {
            return text(
                StatusCode::NOT_FOUND,
                "the admin API is off: set admin_token (GATEWAY_ADMIN_TOKEN_FILE)".to_owned(),
            );
        }
        Some(false) => return unauthorized(),
        Some(true) => {}
    }
    if body_len > MAX_ADMIN_BODY {
        return text(
            StatusCode::PAYLOAD_TOO_LARGE,
            "request too large".to_owned(),
        );
    }
    let cmd: AdminCommand = match cmd {
        Ok(c) => c,
        Err(e) => return text(StatusCode::BAD_REQUEST, format!("bad command: {e}")),
    };
    let audit = cmd.changes_state().then(|| cmd.clone());
    let outcome = source.admin(cmd).await;
    if let Some(cmd) = audit {
        source.audited(bearer(headers), &cmd, &outcome);
    }
    match outcome {
        Ok(msg) => text(StatusCode::OK, msg),
        Err(msg) => text(StatusCode::BAD_REQUEST, msg),
    }
}

async fn not_found() -> Response {
    text(StatusCode::NOT_FOUND, "not found".to_owned())
}

async fn method_not_allowed() -> Response {
    let mut r = text(
        StatusCode::METHOD_NOT_ALLOWED,
        "method not allowed".to_owned(),
    );
    r.headers_mut()
        .insert(header::ALLOW, header::HeaderValue::from_static("GET, HEAD"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_public_admin_bind_without_a_token_is_named() {
        let public: SocketAddr = "0.0.0.0:9180".parse().unwrap();
        assert!(exposure_warning(public, false).is_some_and(|w| w.contains("/cluster")));
        assert_eq!(exposure_warning(public, true), None);
        assert_eq!(exposure_warning(DEFAULT_ADDR, false), None);
        assert_eq!(exposure_warning("[::1]:9180".parse().unwrap(), false), None);
    }

    #[test]
    fn counters_and_gauges() {
        let mut m = MetricsText::new();
        m.counter("gw_frames_total", "Frames routed.", 42)
            .gauge("gw_load", "Average load.", 0.25)
            .gauge("gw_nan", "", f64::NAN)
            .gauge("gw_inf", "Up.", f64::INFINITY)
            .gauge("gw_neg_inf", "Down.", f64::NEG_INFINITY)
            .gauge("gw_whole", "Whole.", 3.0)
            .gauge("gw_negative", "Negative.", -1.5);
        assert_eq!(
            m.render(),
            "# HELP gw_frames_total Frames routed.\n\
             # TYPE gw_frames_total counter\n\
             gw_frames_total 42\n\
             # HELP gw_load Average load.\n\
             # TYPE gw_load gauge\n\
             gw_load 0.25\n\
             # TYPE gw_nan gauge\n\
             gw_nan NaN\n\
             # HELP gw_inf Up.\n\
             # TYPE gw_inf gauge\n\
             gw_inf +Inf\n\
             # HELP gw_neg_inf Down.\n\
             # TYPE gw_neg_inf gauge\n\
             gw_neg_inf -Inf\n\
             # HELP gw_whole Whole.\n\
             # TYPE gw_whole gauge\n\
             gw_whole 3\n\
             # HELP gw_negative Negative.\n\
             # TYPE gw_negative gauge\n\
             gw_negative -1.5\n"
        );
    }

    #[test]
    fn one_help_and_type_per_family_even_when_interleaved() {
        let mut m = MetricsText::new();
        m.gauge_with(
            "zone_players",
            "Players per instance.",
            &[("area", "Plains"), ("area_instance", "0")],
            3.0,
        );
        m.counter_with("gw_kicks_total", "Kicks.", &[("by", "Gandalf")], 1);
        m.gauge_with(
            "zone_players",
            "ignored: the first help stays",
            &[("area", "Dark Wood"), ("area_instance", "1")],
            0.0,
        );
        m.counter_with("gw_kicks_total", "Kicks.", &[("by", "Merlin")], 2);
        assert_eq!(
            m.render(),
            "# HELP zone_players Players per instance.\n\
             # TYPE zone_players gauge\n\
             zone_players{area=\"Plains\",area_instance=\"0\"} 3\n\
             zone_players{area=\"Dark Wood\",area_instance=\"1\"} 0\n\
             # HELP gw_kicks_total Kicks.\n\
             # TYPE gw_kicks_total counter\n\
             gw_kicks_total{by=\"Gandalf\"} 1\n\
             gw_kicks_total{by=\"Merlin\"} 2\n"
        );
    }

    #[test]
    fn label_values_and_help_are_escaped() {
        let mut m = MetricsText::new();
        m.gauge_with(
            "x",
            "Back\\slash and\nnewline \"quotes\" stay.",
            &[("path", "C:\\dir\n\"q\"")],
            1.0,
        );
        assert_eq!(
            m.render(),
            "# HELP x Back\\\\slash and\\nnewline \"quotes\" stay.\n\
             # TYPE x gauge\n\
             x{path=\"C:\\\\dir\\n\\\"q\\\"\"} 1\n"
        );
    }

    #[test]
    fn names_are_made_valid() {
        let mut m = MetricsText::new();
        m.counter_with("9 bad-name:ok", "", &[("la:bel", "v"), ("1x", "w")], 0);
        assert_eq!(
            m.render(),
            "# TYPE _9_bad_name:ok counter\n_9_bad_name:ok{la_bel=\"v\",_1x=\"w\"} 0\n"
        );
        assert_eq!(MetricsText::new().render(), "");
        let mut empty = MetricsText::new();
        empty.counter("", "", 1);
        assert_eq!(empty.render(), "# TYPE _ counter\n_ 1\n");
    }

    #[test]
    fn reasons_are_one_short_line() {
        assert_eq!(
            short_reason(" no zone node\nregistered "),
            "no zone node registered"
        );
        assert_eq!(short_reason(""), "unhealthy");
        let long = "é".repeat(MAX_REASON);
        let r = short_reason(&long);
        assert!(r.len() <= MAX_REASON);
        assert_eq!(r.len(), MAX_REASON);
    }

    #[test]
    fn load_of() {
        assert!((NodeView::load_of(3, 4) - 0.75).abs() < 1e-12);
        assert!((NodeView::load_of(2, 0) - 2.0).abs() < 1e-12);
        assert!(NodeView::load_of(0, 0).abs() < 1e-12);
    }

    #[test]
    fn cluster_view_json_shape() {
        let v = ClusterView {
            gateway_id: "gw-1".into(),
            sessions: SessionCounts {
                connected: 3,
                in_menu: 1,
                in_game: 2,
            },
            nodes: vec![NodeView {
                id: "node-a".into(),
                address: "10.0.0.2:4433".into(),
                capacity: 4,
                load: 0.25,
                players: 2,
                draining: false,
                last_heartbeat_ms_ago: 120,
                instances: vec![InstanceView {
                    area: "Plains".into(),
                    instance: 0,
                    generation: 7,
                    players: 2,
                    npcs: 30,
                    tick_p99_ms: 1.5,
                    tick_age_ms: 20,
                    stuck: false,
                    tick_p50_ms: 0.5,
                    handoffs: 4,
                    handoffs_failed: 1,
                    errors: 2,
                }],
            }],
            unplaced: vec![UnplacedInstance {
                area: "Dark Wood".into(),
                instance: 1,
            }],
            control_epoch: 1_795_000_000_000,
            ..ClusterView::default()
        };
        let json = serde_json::to_string(&v).unwrap();
        assert_eq!(
            json,
            r#"{"gateway_id":"gw-1","sessions":{"connected":3,"in_menu":1,"in_game":2},"nodes":[{"id":"node-a","address":"10.0.0.2:4433","capacity":4,"load":0.25,"players":2,"draining":false,"last_heartbeat_ms_ago":120,"instances":[{"area":"Plains","instance":0,"generation":7,"players":2,"npcs":30,"tick_p99_ms":1.5,"tick_p50_ms":0.5,"handoffs":4,"handoffs_failed":1,"errors":2,"tick_age_ms":20,"stuck":false}]}],"unplaced":[{"area":"Dark Wood","instance":1}],"locked":false,"update_files":0,"control_epoch":1795000000000}"#
        );
        let back: ClusterView = serde_json::from_str(&json).unwrap();
        assert_eq!(back, v);
    }
}
