//! The zone node's admin HTTP endpoint, off unless `admin_listen` is set: `/healthz`
//! (liveness: 200 while the process serves), `/readyz` (readiness: 503 while an instance
//! is stuck or the node drains) and `/metrics` (Prometheus text: per instance players,
//! actors, ticks, overruns, tick p99, tick age and histograms of tick and phase durations;
//! node-wide handoffs, rejections by reason, refused messages, dropped output, the
//! watchdog's counters). With `test_hooks`, `POST /test/stall` blocks one instance's tick.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use shared::metrics_text::MetricsText;

use crate::actor::Registry;
use crate::sim::events::{PHASE_NAMES, Rejection};

/// The exposition text of a node.
pub fn render(reg: &Registry) -> String {
    let mut t = MetricsText::new();
    ops::process::process_and_build(&mut t, "rc_zone_build_info", env!("CARGO_PKG_VERSION"));
    render_zone(&mut t, reg);
    t.render()
}

/// The node's own families (every `rc_zone_*` but the build info) into `t`: the node's
/// `/metrics`, and the gateway's under `--standalone`, where the process is the gateway's.
pub fn render_zone(t: &mut MetricsText, reg: &Registry) {
    let m = &reg.metrics;
    shared::metrics_text::render_series(t, crate::actor::FAMILIES, &m.series());
    // One series per reason (every reason, zeros included, so a rate never starts from a
    // missing series); the total is their sum.
    for r in Rejection::ALL {
        t.counter_with(
            "rc_zone_rejections_total",
            "Player or internal inputs the simulation refused and changed nothing for, by reason.",
            &[("reason", r.name())],
            m.rejections_of(r),
        );
    }
    t.gauge(
        "rc_zone_instances",
        "AreaInstances hosted.",
        reg.instance_count() as f64,
    );
    t.gauge(
        "rc_zone_ready",
        "1 while the node takes new players (no instance stuck, not draining), else 0.",
        if reg.is_ready() { 1.0 } else { 0.0 },
    );
    t.gauge(
        "rc_zone_instances_stuck",
        "Instances the tick watchdog holds stuck now (not yet given up).",
        reg.stuck_instances().len() as f64,
    );
    // Computed now, from each instance's last completed tick: a frozen instance's grows
    // even though it publishes nothing else.
    for (key, age_ms) in reg.tick_ages() {
        let inst = key.instance.to_string();
        t.gauge_with(
            "rc_zone_instance_tick_age_seconds",
            "Time since the instance last completed a tick (the tick watchdog's measure).",
            &[
                ("area", key.area.as_str()),
                ("area_instance", inst.as_str()),
            ],
            age_ms as f64 / 1e3,
        );
    }
    for (key, s) in reg.all_stats() {
        let inst = key.instance.to_string();
        let labels = [
            ("area", key.area.as_str()),
            ("area_instance", inst.as_str()),
        ];
        t.gauge_with(
            "rc_zone_instance_players",
            "Players in the instance.",
            &labels,
            f64::from(s.players),
        );
        t.gauge_with(
            "rc_zone_instance_actors",
            "Actors in the instance.",
            &labels,
            f64::from(s.actors),
        );
        t.gauge_with(
            "rc_zone_instance_scripts",
            "Scripts running or waiting in the instance.",
            &labels,
            f64::from(s.scripts),
        );
        t.counter_with(
            "rc_zone_instance_script_budget_pauses_total",
            "Scripts phases in which a script of the instance was paused at its instruction budget.",
            &labels,
            s.script_stats.budget_pauses,
        );
        t.counter_with(
            "rc_zone_instance_script_reply_timeouts_total",
            "Script questions to a client (dialogs, input, progress bars) given up unanswered.",
            &labels,
            s.script_stats.reply_timeouts,
        );
        t.counter_with(
            "rc_zone_instance_script_starts_coalesced_total",
            "Script starts of a client's action merged into an identical start already queued for the tick (Equip Change, item scripts, triggers, right-clicks, commands).",
            &labels,
            s.script_stats.coalesced,
        );
        for (outcome, n) in [
            ("taken", s.script_stats.remote_actions),
            ("duplicate", s.script_stats.duplicate_actions),
        ] {
            t.counter_with(
                "rc_zone_instance_remote_actions_total",
                "Actions of scripts in other zones on this instance's players (GiveItem, SetAttribute, Warp, ... of a remote handle): taken, or recognised as delivered again and not taken twice.",
                &[labels[0], labels[1], ("outcome", outcome)],
                n,
            );
        }
        for (limit, n) in [
            ("actor", s.script_stats.refused_actor),
            ("zone", s.script_stats.refused_zone),
        ] {
            t.counter_with(
                "rc_zone_instance_script_starts_refused_total",
                "Script starts refused because their actor had scripts_per_actor, or the zone scripts_per_zone, scripts running or queued.",
                &[labels[0], labels[1], ("limit", limit)],
                n,
            );
        }
        t.gauge_with(
            "rc_zone_instance_tick_p99_seconds",
            "p99 of the last 256 tick durations.",
            &labels,
            f64::from(s.tick_p99_us) / 1e6,
        );
        t.counter_with(
            "rc_zone_instance_ticks_total",
            "Ticks of the instance.",
            &labels,
            s.ticks,
        );
        t.counter_with(
            "rc_zone_instance_overruns_total",
            "Overruns of the instance.",
            &labels,
            s.overruns,
        );
        t.histogram_of(
            "rc_zone_tick_seconds",
            "Duration of each tick of the instance (UpdateActorInstances and the broadcast).",
            &labels,
            &s.timings.tick,
        );
        for (phase, h) in PHASE_NAMES.iter().zip(&s.timings.phases) {
            t.histogram_of(
                "rc_zone_tick_phase_seconds",
                "Duration of each phase of each tick, in ZoneSim::tick's order.",
                &[
                    ("area", key.area.as_str()),
                    ("area_instance", inst.as_str()),
                    ("phase", phase),
                ],
                h,
            );
        }
    }
}

async fn metrics(State(reg): State<Arc<Registry>>) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        render(&reg),
    )
        .into_response()
}

async fn healthz() -> Response {
    (StatusCode::OK, "ok").into_response()
}

/// Readiness: 200 while the node takes new players; 503 naming the stuck instances (or
/// the drain) otherwise.
async fn readyz(State(reg): State<Arc<Registry>>) -> Response {
    if reg.is_ready() {
        return (StatusCode::OK, "ready").into_response();
    }
    let stuck = reg.stuck_instances();
    let body = if stuck.is_empty() {
        "not ready: draining".to_owned()
    } else {
        let names: Vec<String> = stuck.iter().map(ToString::to_string).collect();
        format!("not ready: stuck instances: {}", names.join(", "))
    };
    (StatusCode::SERVICE_UNAVAILABLE, body).into_response()
}

/// `area`, `instance` and `ms` of a `/test/stall` query (`+` or `%20` for a space).
fn stall_query(q: &str) -> Option<(shared::internal::InstanceKey, u64)> {
    let (mut area, mut instance, mut ms) = (None, None, None);
    for pair in q.split('&') {
        let (k, v) = pair.split_once('=')?;
        match k {
            "area" => area = Some(v.replace("%20", " ").replace('+', " ")),
            "instance" => instance = v.parse::<u16>().ok(),
            "ms" => ms = v.parse::<u64>().ok(),
            _ => {}
        }
    }
    Some((
        shared::internal::InstanceKey {
            area: area?,
            instance: instance?,
        },
        ms?.min(600_000),
    ))
}

/// Test hook: the instance's next tick blocks its arbiter for `ms`.
async fn stall(State(reg): State<Arc<Registry>>, uri: axum::http::Uri) -> Response {
    let Some((key, ms)) = uri.query().and_then(stall_query) else {
        return (StatusCode::BAD_REQUEST, "expected ?area=&instance=&ms=").into_response();
    };
    if reg.inject_stall(&key, std::time::Duration::from_millis(ms)) {
        tracing::warn!(instance = %key, ms, "test hook: stalling the instance's next tick");
        (StatusCode::OK, "stalling").into_response()
    } else {
        (StatusCode::NOT_FOUND, "no such instance here").into_response()
    }
}

/// Bind `addr` and serve until the process ends; returns the bound address. `test_hooks`
/// adds `POST /test/stall`.
pub async fn serve(
    addr: SocketAddr,
    reg: Arc<Registry>,
    test_hooks: bool,
) -> std::io::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let mut app = Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz));
    if test_hooks {
        app = app.route("/test/stall", axum::routing::post(stall));
    }
    let app = app.with_state(reg);
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::warn!(error = %e, "admin endpoint stopped");
        }
    });
    Ok(bound)
}
