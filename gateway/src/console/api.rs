//! The JSON admin API (`/api/v1/`, docs/api.md) and the console's pages (`/console/`),
//! served on the gateway's admin endpoint.
//!
//! Every call names its operator with `Authorization: Bearer TOKEN` ([`super::Operators`]);
//! reads need the viewer role, player support and moderation the moderator role, the rest
//! the admin role. Every state-changing call, allowed or refused for its role, goes to the
//! audit log. Errors are JSON (`{"error": "..."}`) with 400, 401, 403, 404, 413 or 503.
//!
//! The data and the actions come from the rest of the gateway through [`ConsoleSource`];
//! this module speaks HTTP, checks input and roles, and writes the audit log.

// A refusal is the answer itself (axum's `Response`), built once per refused request.
#![allow(clippy::result_large_err)]

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::{Deserialize, Serialize};
use shared::content::World;
use shared::internal::MapViewDto;

use super::{AuditEntry, ChatLine, ConsoleState, Role};
use crate::admin::ClusterView;

/// Largest request body (bytes).
pub const MAX_BODY: usize = 16 * 1024;
/// Most rows a list answers.
pub const MAX_LIMIT: usize = 1_000;
/// How often the live map stream sends a frame (ms).
pub const STREAM_EVERY_MS: u64 = 500;
/// Most live map streams open at once (each costs its zone one view per frame).
pub const MAX_STREAMS: usize = 32;
/// How long a zone has to answer a live map query.
pub const MAP_TIMEOUT: Duration = Duration::from_secs(2);
/// Longest text in a call (a reason, a message).
pub const MAX_TEXT: usize = 200;
/// Longest mute or ban (minutes: a year); 0 bans for good.
pub const MAX_MINUTES: u64 = 366 * 24 * 60;

/// A boxed future.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// What the API reads and does, provided by the rest of the gateway.
pub trait ConsoleSource: Send + Sync + 'static {
    /// Operators, audit log, chat.
    fn console(&self) -> &ConsoleState;
    /// The world served (areas, portals, triggers, waypoints).
    fn world(&self) -> &World;
    /// The cluster as the gateway sees it.
    fn cluster(&self) -> ClusterView;
    /// What an AreaInstance holds now, from its zone (`None`: nobody runs it).
    fn map(&self, area: String, instance: u16) -> BoxFuture<Option<MapViewDto>>;
    /// Accounts and characters matching `query` (empty: the online ones first).
    fn players(&self, query: String, limit: usize) -> BoxFuture<Vec<PlayerRow>>;
    /// One character (`None`: no such character).
    fn character(&self, name: String) -> BoxFuture<Option<serde_json::Value>>;
    /// The backup files an operator can restore from, newest first.
    fn backups(&self) -> BoxFuture<Result<Vec<crate::store::backups::BackupFile>, String>>;
    /// Carries out a state-changing call; `Ok(text)` or `Err(text)`.
    fn act(&self, action: Action) -> BoxFuture<Result<String, String>>;
    /// Keeps an audit entry in the store.
    fn persist_audit(&self, entry: AuditEntry);
}

/// One account's character in a player search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlayerRow {
    /// Account name.
    pub account: String,
    /// Character name (empty: an account without characters).
    pub character: String,
    /// In the world now.
    pub online: bool,
    /// Area (where it is, or was last saved).
    pub area: String,
    /// Instance.
    pub instance: u16,
    /// Level.
    pub level: u16,
    /// DM account.
    pub dm: bool,
    /// Banned.
    pub banned: bool,
    /// Banned until (Unix ms; 0: for good, while banned).
    pub ban_until_ms: u64,
    /// Muted until (Unix ms; 0: not muted).
    pub mute_until_ms: u64,
    /// Last entry into the world (Unix ms; 0: not seen).
    pub last_login_ms: u64,
}

/// A state-changing call (what the audit log records as `action`, `target`, `detail`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    /// Kick an online character.
    Kick {
        /// Character.
        name: String,
        /// Why (told to the player).
        reason: String,
    },
    /// Warp an online character.
    Warp {
        /// Character.
        name: String,
        /// Area.
        area: String,
        /// Instance.
        instance: u16,
    },
    /// A system line to one online character.
    Message {
        /// Character.
        name: String,
        /// Text.
        text: String,
    },
    /// A system line to everyone.
    Broadcast {
        /// Text.
        text: String,
    },
    /// Mute an account for `minutes`.
    Mute {
        /// Account.
        user: String,
        /// How long.
        minutes: u64,
        /// Why.
        reason: String,
    },
    /// Lift a mute.
    Unmute {
        /// Account.
        user: String,
    },
    /// Ban an account (0 minutes: for good); its players online are kicked.
    Ban {
        /// Account.
        user: String,
        /// How long (0: for good).
        minutes: u64,
        /// Why.
        reason: String,
    },
    /// Lift a ban.
    Unban {
        /// Account.
        user: String,
    },
    /// Create an account.
    CreateAccount {
        /// Account.
        user: String,
        /// Password as typed (never in the audit log).
        #[serde(skip_serializing)]
        password: String,
        /// A DM.
        dm: bool,
    },
    /// Set or clear the DM flag.
    SetDm {
        /// Account.
        user: String,
        /// Set.
        on: bool,
    },
    /// The maintenance lock.
    Lock {
        /// Why.
        reason: String,
    },
    /// Lift the lock.
    Unlock,
    /// Reload the world's scripts (`RefreshScripts`).
    ReloadScripts,
    /// Shut the gateway (and its players' sessions, saved) down in `seconds`, telling
    /// every player as the time nears.
    ScheduleShutdown {
        /// How long from now (10..=86400).
        seconds: u64,
        /// Told to the players with each announcement.
        message: String,
    },
    /// Cancel a scheduled shutdown.
    CancelShutdown,
    /// Make a backup of the database now, as `name` in the backup directory.
    Backup {
        /// File name (see `store::backups::check_name`).
        name: String,
    },
    /// Put one character back as a backup file holds it (its account must be offline).
    RestoreCharacter {
        /// Character.
        name: String,
        /// Backup file name in the backup directory.
        backup: String,
    },
    /// Drain a zone node: it takes nothing new, and its players move to the other nodes.
    DrainNode {
        /// The node's id.
        node: String,
    },
}

impl Action {
    /// The role it needs.
    pub fn role(&self) -> Role {
        match self {
            Self::Kick { .. }
            | Self::Warp { .. }
            | Self::Message { .. }
            | Self::Broadcast { .. }
            | Self::Mute { .. }
            | Self::Unmute { .. }
            | Self::Ban { .. }
            | Self::Unban { .. } => Role::Moderator,
            Self::CreateAccount { .. }
            | Self::SetDm { .. }
            | Self::Lock { .. }
            | Self::Unlock
            | Self::ReloadScripts
            | Self::ScheduleShutdown { .. }
            | Self::CancelShutdown
            | Self::Backup { .. }
            | Self::RestoreCharacter { .. }
            | Self::DrainNode { .. } => Role::Admin,
        }
    }

    /// Its name in the audit log.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Kick { .. } => "kick",
            Self::Warp { .. } => "warp",
            Self::Message { .. } => "message",
            Self::Broadcast { .. } => "broadcast",
            Self::Mute { .. } => "mute",
            Self::Unmute { .. } => "unmute",
            Self::Ban { .. } => "ban",
            Self::Unban { .. } => "unban",
            Self::CreateAccount { .. } => "create_account",
            Self::SetDm { .. } => "set_dm",
            Self::Lock { .. } => "lock",
            Self::Unlock => "unlock",
            Self::ReloadScripts => "reload_scripts",
            Self::ScheduleShutdown { .. } => "schedule_shutdown",
            Self::CancelShutdown => "cancel_shutdown",
            Self::Backup { .. } => "backup",
            Self::RestoreCharacter { .. } => "restore_character",
            Self::DrainNode { .. } => "drain_node",
        }
    }

    /// What it acts on (empty: the cluster).
    pub fn target(&self) -> &str {
        match self {
            Self::Kick { name, .. }
            | Self::Warp { name, .. }
            | Self::Message { name, .. }
            | Self::Backup { name }
            | Self::RestoreCharacter { name, .. } => name,
            Self::DrainNode { node } => node,
            Self::Mute { user, .. }
            | Self::Unmute { user }
            | Self::Ban { user, .. }
            | Self::Unban { user }
            | Self::CreateAccount { user, .. }
            | Self::SetDm { user, .. } => user,
            Self::Broadcast { .. }
            | Self::Lock { .. }
            | Self::Unlock
            | Self::ReloadScripts
            | Self::ScheduleShutdown { .. }
            | Self::CancelShutdown => "",
        }
    }

    /// Checks the call's text fields: names, lengths, control characters.
    fn validate(&self) -> Result<(), String> {
        let text = |what: &str, s: &str, empty_ok: bool| -> Result<(), String> {
            if !empty_ok && s.trim().is_empty() {
                return Err(format!("{what} must not be empty"));
            }
            if s.len() > MAX_TEXT {
                return Err(format!("{what} is longer than {MAX_TEXT} bytes"));
            }
            if s.chars().any(char::is_control) {
                return Err(format!("{what} must not hold control characters"));
            }
            Ok(())
        };
        let minutes = |m: u64, zero_ok: bool| -> Result<(), String> {
            if (m == 0 && !zero_ok) || m > MAX_MINUTES {
                return Err(format!(
                    "minutes must be {}..={MAX_MINUTES}",
                    u8::from(!zero_ok)
                ));
            }
            Ok(())
        };
        match self {
            Self::Kick { name, reason } => {
                text("name", name, false)?;
                text("reason", reason, true)
            }
            Self::Warp { name, area, .. } => {
                text("name", name, false)?;
                text("area", area, false)
            }
            Self::Message { name, text: t } => {
                text("name", name, false)?;
                text("text", t, false)
            }
            Self::Broadcast { text: t } => text("text", t, false),
            Self::Mute {
                user,
                minutes: m,
                reason,
            } => {
                text("user", user, false)?;
                minutes(*m, false)?;
                text("reason", reason, true)
            }
            Self::Ban {
                user,
                minutes: m,
                reason,
            } => {
                text("user", user, false)?;
                minutes(*m, true)?;
                text("reason", reason, true)
            }
            Self::Unmute { user } | Self::Unban { user } | Self::SetDm { user, .. } => {
                text("user", user, false)
            }
            Self::CreateAccount { user, password, .. } => {
                text("user", user, false)?;
                text("password", password, false)
            }
            Self::Lock { reason } => text("reason", reason, true),
            Self::ScheduleShutdown { seconds, message } => {
                if !(10..=86_400).contains(seconds) {
                    return Err("seconds must be 10..=86400".into());
                }
                text("message", message, true)
            }
            Self::Backup { name } => crate::store::backups::check_name(name),
            Self::RestoreCharacter { name, backup } => {
                text("name", name, false)?;
                crate::store::backups::check_name(backup)
            }
            Self::DrainNode { node } => text("node", node, false),
            Self::Unlock | Self::ReloadScripts | Self::CancelShutdown => Ok(()),
        }
    }
}

type Src = Arc<dyn ConsoleSource>;

/// The API's and the console's routes.
pub fn router(source: Arc<dyn ConsoleSource>) -> Router {
    Router::new()
        .route("/console", get(console_redirect))
        .route("/console/", get(console_page))
        .route("/console/console.js", get(console_js))
        .route("/console/console.css", get(console_css))
        .route("/api/v1/whoami", get(whoami))
        .route("/api/v1/cluster", get(cluster))
        .route("/api/v1/instances", get(instances))
        .route("/api/v1/instances/{area}/{instance}/actors", get(actors))
        .route("/api/v1/instances/{area}/{instance}/map", get(map))
        .route("/api/v1/instances/{area}/{instance}/stream", get(stream))
        .route("/api/v1/players", get(players))
        .route("/api/v1/characters/{name}", get(character))
        .route("/api/v1/chat", get(chat))
        .route("/api/v1/audit", get(audit))
        .route("/api/v1/script-errors", get(script_errors))
        .route("/api/v1/players/{name}/{verb}", post(player_action))
        .route("/api/v1/accounts", post(create_account))
        .route("/api/v1/backups", get(backups).post(make_backup))
        .route("/api/v1/characters/{name}/restore", post(restore_character))
        .route("/api/v1/nodes/{node}/drain", post(drain_node))
        .route("/api/v1/accounts/{user}/{verb}", post(account_action))
        .route("/api/v1/{verb}", post(cluster_action))
        .with_state(source)
}

// ----- answers ---------------------------------------------------------------------------

fn json<T: Serialize>(status: StatusCode, v: &T) -> Response {
    match serde_json::to_vec(v) {
        Ok(body) => (
            status,
            [
                (header::CONTENT_TYPE, "application/json"),
                (header::CACHE_CONTROL, "no-store"),
            ],
            body,
        )
            .into_response(),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

fn error(status: StatusCode, message: &str) -> Response {
    let mut r = (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        serde_json::json!({ "error": message }).to_string(),
    )
        .into_response();
    if status == StatusCode::UNAUTHORIZED {
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            axum::http::HeaderValue::from_static("Bearer"),
        );
    }
    r
}

/// The operator of a request, if it has at least `need`.
fn operator(src: &Src, headers: &HeaderMap, need: Role) -> Result<(String, Role), Response> {
    let ops = &src.console().operators;
    if ops.is_empty() {
        return Err(error(
            StatusCode::NOT_FOUND,
            "the admin API is off: configure operators (GATEWAY_OPERATORS_FILE) or admin_token",
        ));
    }
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default()
        .trim();
    let Some(op) = ops.authenticate(token) else {
        return Err(error(
            StatusCode::UNAUTHORIZED,
            "bad or missing operator token",
        ));
    };
    if op.role < need {
        return Err(error(
            StatusCode::FORBIDDEN,
            &format!("{} is a {}: this needs the {need} role", op.name, op.role),
        ));
    }
    Ok((op.name.clone(), op.role))
}

/// The query string's pairs.
fn query(uri: &Uri) -> Vec<(String, String)> {
    form_urlencoded::parse(uri.query().unwrap_or_default().as_bytes())
        .into_owned()
        .collect()
}

fn param<'a>(q: &'a [(String, String)], name: &str) -> &'a str {
    q.iter()
        .find(|(k, _)| k == name)
        .map_or("", |(_, v)| v.as_str())
}

/// `limit` from the query (default `default`, at most [`MAX_LIMIT`]).
fn limit(q: &[(String, String)], default: usize) -> Result<usize, Response> {
    match param(q, "limit") {
        "" => Ok(default),
        s => s
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_LIMIT).contains(n))
            .ok_or_else(|| {
                error(
                    StatusCode::BAD_REQUEST,
                    &format!("limit must be 1..={MAX_LIMIT}"),
                )
            }),
    }
}

/// An instance number from the path.
fn instance_of(s: &str) -> Result<u16, Response> {
    s.parse::<u16>().map_err(|_| {
        error(
            StatusCode::BAD_REQUEST,
            "the instance is a number 0..=65535",
        )
    })
}

// ----- the pages -------------------------------------------------------------------------

async fn console_redirect() -> Response {
    (
        StatusCode::PERMANENT_REDIRECT,
        [(header::LOCATION, "/console/")],
    )
        .into_response()
}

/// Served with a policy that runs only the console's own script and style.
fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, content_type),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
            ),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

async fn console_page() -> Response {
    asset(
        "text/html; charset=utf-8",
        include_str!("assets/index.html"),
    )
}

async fn console_js() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("assets/console.js"),
    )
}

async fn console_css() -> Response {
    asset(
        "text/css; charset=utf-8",
        include_str!("assets/console.css"),
    )
}

// ----- reads -----------------------------------------------------------------------------

async fn whoami(State(src): State<Src>, headers: HeaderMap) -> Response {
    match operator(&src, &headers, Role::Viewer) {
        Ok((name, role)) => json(
            StatusCode::OK,
            &serde_json::json!({ "name": name, "role": role }),
        ),
        Err(r) => r,
    }
}

async fn cluster(State(src): State<Src>, headers: HeaderMap) -> Response {
    if let Err(r) = operator(&src, &headers, Role::Viewer) {
        return r;
    }
    json(StatusCode::OK, &src.cluster())
}

/// One AreaInstance in `GET /api/v1/instances`.
#[derive(Debug, Serialize)]
struct InstanceRow {
    area: String,
    instance: u16,
    node: String,
    players: u64,
    npcs: u64,
    tick_p50_ms: f64,
    tick_p99_ms: f64,
    tick_age_ms: u64,
    stuck: bool,
    handoffs: u64,
    handoffs_failed: u64,
    errors: u64,
}

async fn instances(State(src): State<Src>, headers: HeaderMap) -> Response {
    if let Err(r) = operator(&src, &headers, Role::Viewer) {
        return r;
    }
    let view = src.cluster();
    let mut rows: Vec<InstanceRow> = view
        .nodes
        .iter()
        .flat_map(|n| {
            n.instances.iter().map(|i| InstanceRow {
                area: i.area.clone(),
                instance: i.instance,
                node: n.id.clone(),
                players: i.players,
                npcs: i.npcs,
                tick_p50_ms: i.tick_p50_ms,
                tick_p99_ms: i.tick_p99_ms,
                tick_age_ms: i.tick_age_ms,
                handoffs: i.handoffs,
                handoffs_failed: i.handoffs_failed,
                errors: i.errors,
                stuck: i.stuck,
            })
        })
        .collect();
    rows.sort_by(|a, b| (&a.area, a.instance).cmp(&(&b.area, b.instance)));
    json(StatusCode::OK, &rows)
}

/// One actor in `…/actors` and the live map.
#[derive(Debug, Serialize)]
struct ActorRow {
    runtime_id: u16,
    name: String,
    kind: &'static str,
    x: f32,
    y: f32,
    z: f32,
    yaw: f32,
    level: u16,
    health: i32,
    health_max: i32,
    handle: i32,
}

fn actor_rows(view: &MapViewDto) -> Vec<ActorRow> {
    view.actors
        .iter()
        .map(|a| ActorRow {
            runtime_id: a.runtime_id,
            name: a.name.clone(),
            kind: if a.player { "player" } else { "npc" },
            x: a.x,
            y: a.y,
            z: a.z,
            yaw: a.yaw,
            level: a.level,
            health: a.health,
            health_max: a.health_max,
            handle: a.handle,
        })
        .collect()
}

/// The map of one instance from its zone, or the error answer.
async fn zone_map(src: &Src, area: &str, instance: &str) -> Result<(String, MapViewDto), Response> {
    let instance = instance_of(instance)?;
    let Some(a) = src.world().area_by_name(area) else {
        return Err(error(
            StatusCode::NOT_FOUND,
            &format!("there is no area called {area:?}"),
        ));
    };
    let name = a.name.clone();
    match tokio::time::timeout(MAP_TIMEOUT, src.map(name.clone(), instance)).await {
        Ok(Some(v)) => Ok((name, v)),
        Ok(None) => Err(error(
            StatusCode::NOT_FOUND,
            &format!("no zone node runs {name} #{instance}"),
        )),
        Err(_) => Err(error(
            StatusCode::SERVICE_UNAVAILABLE,
            "the zone did not answer in time",
        )),
    }
}

async fn actors(
    State(src): State<Src>,
    headers: HeaderMap,
    Path((area, instance)): Path<(String, String)>,
) -> Response {
    if let Err(r) = operator(&src, &headers, Role::Viewer) {
        return r;
    }
    match zone_map(&src, &area, &instance).await {
        Ok((_, view)) => json(StatusCode::OK, &actor_rows(&view)),
        Err(r) => r,
    }
}

/// The static part of an area's map: portals, triggers, waypoints.
fn statics(world: &World, area: &str) -> serde_json::Value {
    let Some(a) = world.area_by_name(area) else {
        return serde_json::json!({});
    };
    serde_json::json!({
        "portals": a.portals.iter().map(|p| serde_json::json!({
            "name": p.name, "to_area": p.link_area, "to_portal": p.link_name,
            "x": p.x, "y": p.y, "z": p.z,
        })).collect::<Vec<_>>(),
        "triggers": a.triggers.iter().map(|t| serde_json::json!({
            "index": t.index, "script": t.script, "x": t.x, "y": t.y, "z": t.z, "size": t.size,
        })).collect::<Vec<_>>(),
        "waypoints": a.waypoints.iter().map(|w| serde_json::json!({
            "index": w.index, "x": w.x, "y": w.y, "z": w.z, "next_a": w.next_a, "next_b": w.next_b,
        })).collect::<Vec<_>>(),
    })
}

fn map_frame(
    world: &World,
    area: &str,
    instance: u16,
    view: &MapViewDto,
    with_statics: bool,
) -> serde_json::Value {
    let mut v = serde_json::json!({
        "area": area,
        "instance": instance,
        "at_ms": super::unix_ms(),
        "actors": actor_rows(view),
        "items": view.items,
    });
    if with_statics && let Some(o) = v.as_object_mut() {
        o.insert("statics".into(), statics(world, area));
    }
    v
}

async fn map(
    State(src): State<Src>,
    headers: HeaderMap,
    Path((area, instance)): Path<(String, String)>,
) -> Response {
    if let Err(r) = operator(&src, &headers, Role::Viewer) {
        return r;
    }
    match zone_map(&src, &area, &instance).await {
        Ok((name, view)) => {
            let inst = instance.parse().unwrap_or(0);
            json(
                StatusCode::OK,
                &map_frame(src.world(), &name, inst, &view, true),
            )
        }
        Err(r) => r,
    }
}

/// Live map streams open now.
static STREAMS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Counts one open stream until dropped.
struct StreamSlot;

impl StreamSlot {
    fn take() -> Option<Self> {
        use std::sync::atomic::Ordering;
        let n = STREAMS.fetch_add(1, Ordering::Relaxed);
        if n >= MAX_STREAMS {
            STREAMS.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        Some(Self)
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        STREAMS.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// `GET …/stream`: server-sent events, one `map` event every [`STREAM_EVERY_MS`] from the
/// zone (the first with the area's portals, triggers and waypoints); a `gone` event when
/// nobody runs the instance any more (the stream then ends).
async fn stream(
    State(src): State<Src>,
    headers: HeaderMap,
    Path((area, instance)): Path<(String, String)>,
) -> Response {
    if let Err(r) = operator(&src, &headers, Role::Viewer) {
        return r;
    }
    let instance = match instance_of(&instance) {
        Ok(i) => i,
        Err(r) => return r,
    };
    let Some(name) = src.world().area_by_name(&area).map(|a| a.name.clone()) else {
        return error(
            StatusCode::NOT_FOUND,
            &format!("there is no area called {area:?}"),
        );
    };
    let Some(slot) = StreamSlot::take() else {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!("at most {MAX_STREAMS} live maps at once"),
        );
    };
    struct St {
        src: Src,
        area: String,
        instance: u16,
        first: bool,
        done: bool,
        _slot: StreamSlot,
    }
    let st = St {
        src,
        area: name,
        instance,
        first: true,
        done: false,
        _slot: slot,
    };
    let events = futures_util::stream::unfold(st, |mut st| async move {
        if st.done {
            return None;
        }
        if !st.first {
            tokio::time::sleep(Duration::from_millis(STREAM_EVERY_MS)).await;
        }
        let view = tokio::time::timeout(MAP_TIMEOUT, st.src.map(st.area.clone(), st.instance))
            .await
            .ok();
        let event = match view {
            Some(Some(v)) => {
                let frame = map_frame(st.src.world(), &st.area, st.instance, &v, st.first);
                st.first = false;
                Event::default().event("map").data(frame.to_string())
            }
            Some(None) => {
                st.done = true;
                Event::default()
                    .event("gone")
                    .data(format!("no zone node runs {} #{}", st.area, st.instance))
            }
            None => Event::default()
                .event("slow")
                .data("the zone did not answer in time"),
        };
        Some((Ok::<_, Infallible>(event), st))
    });
    Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}

async fn players(State(src): State<Src>, headers: HeaderMap, uri: Uri) -> Response {
    if let Err(r) = operator(&src, &headers, Role::Viewer) {
        return r;
    }
    let q = query(&uri);
    let limit = match limit(&q, 100) {
        Ok(l) => l,
        Err(r) => return r,
    };
    let text = param(&q, "q");
    if text.len() > MAX_TEXT {
        return error(StatusCode::BAD_REQUEST, "q is too long");
    }
    json(StatusCode::OK, &src.players(text.to_owned(), limit).await)
}

async fn character(
    State(src): State<Src>,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> Response {
    if let Err(r) = operator(&src, &headers, Role::Viewer) {
        return r;
    }
    match src.character(name.clone()).await {
        Some(v) => json(StatusCode::OK, &v),
        None => error(
            StatusCode::NOT_FOUND,
            &format!("there is no character called {name:?}"),
        ),
    }
}

async fn chat(State(src): State<Src>, headers: HeaderMap, uri: Uri) -> Response {
    if let Err(r) = operator(&src, &headers, Role::Viewer) {
        return r;
    }
    let q = query(&uri);
    let limit = match limit(&q, 200) {
        Ok(l) => l,
        Err(r) => return r,
    };
    let lines: Vec<ChatLine> =
        src.console()
            .chat()
            .query(param(&q, "player"), param(&q, "q"), limit);
    json(StatusCode::OK, &lines)
}

async fn script_errors(State(src): State<Src>, headers: HeaderMap, uri: Uri) -> Response {
    if let Err(r) = operator(&src, &headers, Role::Viewer) {
        return r;
    }
    let q = query(&uri);
    let limit = match limit(&q, 200) {
        Ok(l) => l,
        Err(r) => return r,
    };
    json(
        StatusCode::OK,
        &src.console().script_errors(param(&q, "q"), limit),
    )
}

async fn backups(State(src): State<Src>, headers: HeaderMap) -> Response {
    if let Err(r) = operator(&src, &headers, Role::Viewer) {
        return r;
    }
    match src.backups().await {
        Ok(files) => json(StatusCode::OK, &files),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, &e),
    }
}

async fn audit(State(src): State<Src>, headers: HeaderMap, uri: Uri) -> Response {
    if let Err(r) = operator(&src, &headers, Role::Viewer) {
        return r;
    }
    let q = query(&uri);
    let limit = match limit(&q, 200) {
        Ok(l) => l,
        Err(r) => return r,
    };
    let entries = src.console().audit().query(param(&q, "q"), limit);
    json(StatusCode::OK, &entries)
}

// ----- actions ---------------------------------------------------------------------------

/// A call's JSON body (empty: `{}`).
fn body<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Result<T, Response> {
    if bytes.len() > MAX_BODY {
        return Err(error(StatusCode::PAYLOAD_TOO_LARGE, "request too large"));
    }
    let bytes: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
        b"{}"
    } else {
        bytes
    };
    serde_json::from_slice(bytes)
        .map_err(|e| error(StatusCode::BAD_REQUEST, &format!("bad body: {e}")))
}

/// A call that takes no field: an empty body or `{}` (any JSON object, its fields
/// ignored, as before).
fn no_fields(bytes: &[u8]) -> Result<(), Response> {
    body::<serde_json::Map<String, serde_json::Value>>(bytes).map(|_| ())
}

/// Runs one action for the request's operator, auditing it (a refusal for the role too).
async fn run(src: Src, headers: &HeaderMap, action: Result<Action, Response>) -> Response {
    // Who first: a caller without a token learns nothing of the body's form.
    let (name, role) = match operator(&src, headers, Role::Viewer) {
        Ok(w) => w,
        Err(r) => return r,
    };
    let action = match action {
        Ok(a) => a,
        Err(r) => return r,
    };
    let detail = serde_json::to_string(&action).unwrap_or_default();
    let mut entry = AuditEntry {
        id: 0,
        at_ms: super::unix_ms(),
        operator: name.clone(),
        role,
        action: action.name().to_owned(),
        target: action.target().to_owned(),
        detail,
        ok: false,
        result: String::new(),
    };
    let need = action.role();
    let answer = if role < need {
        entry.result = format!("refused: needs the {need} role");
        error(
            StatusCode::FORBIDDEN,
            &format!("{name} is a {role}: this needs the {need} role"),
        )
    } else if let Err(e) = action.validate() {
        entry.result = format!("refused: {e}");
        error(StatusCode::BAD_REQUEST, &e)
    } else {
        match src.act(action).await {
            Ok(text) => {
                entry.ok = true;
                entry.result.clone_from(&text);
                json(
                    StatusCode::OK,
                    &serde_json::json!({ "ok": true, "result": text }),
                )
            }
            Err(text) => {
                entry.result.clone_from(&text);
                error(StatusCode::BAD_REQUEST, &text)
            }
        }
    };
    tracing::info!(operator = %entry.operator, role = %entry.role, action = %entry.action,
        target = %entry.target, ok = entry.ok, result = %entry.result, "admin call");
    let entry = src.console().audit().record(entry);
    src.persist_audit(entry);
    answer
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReasonBody {
    #[serde(default)]
    reason: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WarpBody {
    area: String,
    #[serde(default)]
    instance: u16,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TextBody {
    text: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TimedBody {
    #[serde(default)]
    minutes: u64,
    #[serde(default)]
    reason: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OnBody {
    on: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AccountBody {
    user: String,
    password: String,
    #[serde(default)]
    dm: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ShutdownBody {
    seconds: u64,
    #[serde(default)]
    message: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BackupBody {
    #[serde(default)]
    name: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RestoreBody {
    backup: String,
}

/// A backup's default name: `gw-YYYYMMDD-HHMMSS.sqlite3` (UTC).
pub fn default_backup_name(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let (y, m, d) = civil_from_days(days);
    let t = secs % 86_400;
    format!(
        "gw-{y:04}{m:02}{d:02}-{:02}{:02}{:02}.sqlite3",
        t / 3600,
        t % 3600 / 60,
        t % 60
    )
}

/// The Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// `POST /api/v1/backups`: a backup of the database now.
async fn make_backup(
    State(src): State<Src>,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
) -> Response {
    let action = body::<BackupBody>(&bytes).map(|b| Action::Backup {
        name: if b.name.is_empty() {
            default_backup_name(super::unix_ms())
        } else {
            b.name
        },
    });
    run(src, &headers, action).await
}

/// `POST /api/v1/characters/{name}/restore`: one character back from a backup file.
async fn restore_character(
    State(src): State<Src>,
    headers: HeaderMap,
    Path(name): Path<String>,
    bytes: axum::body::Bytes,
) -> Response {
    let action = body::<RestoreBody>(&bytes).map(|b| Action::RestoreCharacter {
        name,
        backup: b.backup,
    });
    run(src, &headers, action).await
}

/// `POST /api/v1/nodes/{node}/drain`.
async fn drain_node(
    State(src): State<Src>,
    headers: HeaderMap,
    Path(node): Path<String>,
    bytes: axum::body::Bytes,
) -> Response {
    let action = no_fields(&bytes).map(|_| Action::DrainNode { node });
    run(src, &headers, action).await
}

fn unknown(verb: &str) -> Response {
    error(StatusCode::NOT_FOUND, &format!("no such call: {verb:?}"))
}

/// `POST /api/v1/players/{name}/kick|warp|message`.
async fn player_action(
    State(src): State<Src>,
    headers: HeaderMap,
    Path((name, verb)): Path<(String, String)>,
    bytes: axum::body::Bytes,
) -> Response {
    let action = match verb.as_str() {
        "kick" => body::<ReasonBody>(&bytes).map(|b| Action::Kick {
            name,
            reason: b.reason,
        }),
        "warp" => body::<WarpBody>(&bytes).map(|b| Action::Warp {
            name,
            area: b.area,
            instance: b.instance,
        }),
        "message" => body::<TextBody>(&bytes).map(|b| Action::Message { name, text: b.text }),
        _ => Err(unknown(&verb)),
    };
    run(src, &headers, action).await
}

/// `POST /api/v1/accounts/{user}/ban|unban|mute|unmute|dm`.
async fn account_action(
    State(src): State<Src>,
    headers: HeaderMap,
    Path((user, verb)): Path<(String, String)>,
    bytes: axum::body::Bytes,
) -> Response {
    let action = match verb.as_str() {
        "ban" => body::<TimedBody>(&bytes).map(|b| Action::Ban {
            user,
            minutes: b.minutes,
            reason: b.reason,
        }),
        "unban" => no_fields(&bytes).map(|_| Action::Unban { user }),
        "mute" => body::<TimedBody>(&bytes).map(|b| Action::Mute {
            user,
            minutes: b.minutes,
            reason: b.reason,
        }),
        "unmute" => no_fields(&bytes).map(|_| Action::Unmute { user }),
        "dm" => body::<OnBody>(&bytes).map(|b| Action::SetDm { user, on: b.on }),
        _ => Err(unknown(&verb)),
    };
    run(src, &headers, action).await
}

/// `POST /api/v1/accounts`: create one.
async fn create_account(
    State(src): State<Src>,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
) -> Response {
    let action = body::<AccountBody>(&bytes).map(|b| Action::CreateAccount {
        user: b.user,
        password: b.password,
        dm: b.dm,
    });
    run(src, &headers, action).await
}

/// `POST /api/v1/broadcast|lock|unlock|scripts-reload`.
async fn cluster_action(
    State(src): State<Src>,
    headers: HeaderMap,
    Path(verb): Path<String>,
    bytes: axum::body::Bytes,
) -> Response {
    let action = match verb.as_str() {
        "broadcast" => body::<TextBody>(&bytes).map(|b| Action::Broadcast { text: b.text }),
        "lock" => body::<ReasonBody>(&bytes).map(|b| Action::Lock { reason: b.reason }),
        "unlock" => Ok(Action::Unlock),
        "reload-scripts" => Ok(Action::ReloadScripts),
        "shutdown" => body::<ShutdownBody>(&bytes).map(|b| Action::ScheduleShutdown {
            seconds: b.seconds,
            message: b.message,
        }),
        "cancel-shutdown" => Ok(Action::CancelShutdown),
        _ => Err(unknown(&verb)),
    };
    run(src, &headers, action).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_default_backup_name_is_the_utc_time_and_a_valid_file_name() {
        assert_eq!(default_backup_name(0), "gw-19700101-000000.sqlite3");
        // 2000-02-29 23:59:59 UTC.
        assert_eq!(
            default_backup_name(951_868_799_000),
            "gw-20000229-235959.sqlite3"
        );
        assert!(crate::store::backups::check_name(&default_backup_name(u64::MAX)).is_ok());
    }

    #[test]
    fn restore_and_drain_need_the_admin_role_and_plain_names() {
        let restore = Action::RestoreCharacter {
            name: "Rich".into(),
            backup: "../gateway.sqlite3".into(),
        };
        assert_eq!(restore.role(), Role::Admin);
        assert!(restore.validate().is_err());
        let drain = Action::DrainNode { node: "n1".into() };
        assert_eq!((drain.role(), drain.target()), (Role::Admin, "n1"));
        assert!(Action::DrainNode { node: " ".into() }.validate().is_err());
    }
}
