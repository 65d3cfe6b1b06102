//! The zone node's admin HTTP endpoint, off unless `admin_listen` is set: `/healthz`
//! (200 while the node runs) and `/metrics` (Prometheus text: per instance players,
//! actors, ticks, overruns, tick p99 and histograms of tick and phase durations; node-wide
//! handoffs, rejections by reason, refused messages and dropped output).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use shared::metrics_text::MetricsText;

use crate::actor::{Metrics, Registry};
use crate::sim::events::{PHASE_NAMES, Rejection};

/// The exposition text of a node.
pub fn render(reg: &Registry) -> String {
    let mut t = MetricsText::new();
    ops::process::process_and_build(&mut t, "rc_zone_build_info", env!("CARGO_PKG_VERSION"));
    let m = &reg.metrics;
    let counters: [(&str, &str, &AtomicU64); 19] = [
        ("rc_zone_ticks_total", "Zone ticks run.", &m.ticks),
        (
            "rc_zone_late_ticks_total",
            "Ticks run late (catch-up).",
            &m.late_ticks,
        ),
        (
            "rc_zone_overruns_total",
            "Stalls past the catch-up budget.",
            &m.overruns,
        ),
        (
            "rc_zone_panics_total",
            "Panics caught inside a tick.",
            &m.panics,
        ),
        (
            "rc_zone_restarts_total",
            "Instances rebuilt after a panic.",
            &m.restarts,
        ),
        (
            "rc_zone_refused_messages_total",
            "Internal messages refused.",
            &m.refused_msgs,
        ),
        (
            "rc_zone_bad_client_input_total",
            "Client frames or datagrams the zone could not use.",
            &m.bad_client_input,
        ),
        (
            "rc_zone_local_handoffs_total",
            "Handoffs between two instances of this node.",
            &m.local_transfers,
        ),
        (
            "rc_zone_remote_handoffs_total",
            "Handoffs from other nodes committed here.",
            &m.remote_transfers,
        ),
        (
            "rc_zone_stale_generation_total",
            "Messages refused for naming an older placement generation.",
            &m.stale,
        ),
        (
            "rc_zone_outbound_dropped_total",
            "Messages not sent to the gateway: its link was down, a position broadcast was stale (a newer one of its instance was queued), or a message did not encode.",
            &m.outbound_dropped,
        ),
        (
            "rc_zone_snapshots_superseded_total",
            "Unacknowledged periodic snapshots forgotten while the gateway was away, because a newer one saves the same characters.",
            &m.snapshots_superseded,
        ),
        (
            "rc_zone_script_errors_total",
            "Scripts ended by a runtime error (division by zero, a command not supported yet, End, ...).",
            &m.script_errors,
        ),
        (
            "rc_zone_script_runaways_total",
            "Scripts ended for running past their instruction budget phase after phase.",
            &m.script_runaways,
        ),
        (
            "rc_zone_script_restore_failures_total",
            "Saved scripts (a handoff, a login) that could not resume here: the script changed or is missing.",
            &m.script_restore_failures,
        ),
        (
            "rc_zone_snapshot_groups_total",
            "Atomic checkpoint groups sent (SnapshotGroup: players saved together, the ground items).",
            &m.snapshot_groups,
        ),
        (
            "rc_zone_snapshot_group_entries_total",
            "Character snapshots sent inside checkpoint groups.",
            &m.snapshot_group_entries,
        ),
        (
            "rc_zone_script_store_requests_total",
            "Requests of the zones' scripts to the cluster's script store (files, super globals, zone instances).",
            &m.script_store_requests,
        ),
        (
            "rc_zone_script_store_errors_total",
            "Script store requests answered with an error by the node (link down, no answer in time).",
            &m.script_store_errors,
        ),
    ];
    for (name, help, c) in counters {
        t.counter(name, help, Metrics::get(c));
    }
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
    t.render()
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

/// Bind `addr` and serve until the process ends; returns the bound address.
pub async fn serve(addr: SocketAddr, reg: Arc<Registry>) -> std::io::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let app = Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .with_state(reg);
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::warn!(error = %e, "admin endpoint stopped");
        }
    });
    Ok(bound)
}
