//! `trace-viewer`: an in-memory OpenTelemetry trace backend with the Jaeger UI, for the
//! compose `observe` profile on machines that cannot pull the upstream Jaeger image.
//!
//! OTLP/gRPC on `TRACE_VIEWER_OTLP_LISTEN` (default `0.0.0.0:4317`); the Jaeger UI and the
//! parts of its HTTP API the UI uses (`/api/services`, `/api/traces?service=..&limit=..`,
//! `/api/traces/{id}`) on `TRACE_VIEWER_UI_LISTEN` (default `0.0.0.0:16686`). The newest
//! traces are kept, up to `TRACE_VIEWER_MAX_TRACES` (10000) and about
//! `TRACE_VIEWER_MAX_MEMORY_MB` (256) MiB; nothing is written to disk.
//!
//! One addition to otlp-embedded: its Jaeger view keys a trace's processes by the
//! `service.instance.id` resource attribute, so processes that do not set one would all
//! merge into one. Where it is missing, the viewer sets it to `<service.name>@<peer IP>`
//! (each container has its own address), so two zone nodes stay two processes in the UI.

use std::net::SocketAddr;

use anyhow::Context as _;
use otlp_embedded::proto::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use otlp_embedded::proto::common::v1::{AnyValue, KeyValue, any_value};
use otlp_embedded::{Config, State, TraceService, TraceServiceImpl, TraceServiceServer, ui_app};
use tonic::{Request, Response, Status};

const INSTANCE_ID: &str = "service.instance.id";

/// Reads `name` from the environment, or `default` when it is unset.
fn setting<T: std::str::FromStr>(name: &str, default: T) -> anyhow::Result<T>
where
    T::Err: std::error::Error + Send + Sync + 'static,
{
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => v.trim().parse().with_context(|| format!("{name}={v:?}")),
        _ => Ok(default),
    }
}

/// The string value of resource attribute `key`, if any.
fn attribute<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a str> {
    attrs
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| match &v.value {
            Some(any_value::Value::StringValue(s)) => Some(s.as_str()),
            _ => None,
        })
}

/// otlp-embedded's collector, with `service.instance.id` filled in where it is missing.
struct Collector {
    inner: TraceServiceImpl,
}

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: Request<ExportTraceServiceRequest>,
    ) -> Result<Response<ExportTraceServiceResponse>, Status> {
        let peer = request
            .remote_addr()
            .map_or_else(|| "unknown".to_owned(), |a| a.ip().to_string());
        let mut body = request.into_inner();
        for rs in &mut body.resource_spans {
            let resource = rs.resource.get_or_insert_with(Default::default);
            if attribute(&resource.attributes, INSTANCE_ID).is_some_and(|s| !s.is_empty()) {
                continue;
            }
            let service = attribute(&resource.attributes, "service.name").unwrap_or("unknown");
            let id = format!("{service}@{peer}");
            resource.attributes.retain(|kv| kv.key != INSTANCE_ID);
            resource.attributes.push(KeyValue {
                key: INSTANCE_ID.to_owned(),
                value: Some(AnyValue {
                    value: Some(any_value::Value::StringValue(id)),
                }),
                ..Default::default()
            });
        }
        self.inner.export(Request::new(body)).await
    }
}

/// Resolves on SIGTERM or SIGINT (the process is PID 1 in its container).
async fn shutdown() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = term => {}
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let otlp: SocketAddr = setting(
        "TRACE_VIEWER_OTLP_LISTEN",
        SocketAddr::from(([0, 0, 0, 0], 4317)),
    )?;
    let ui: SocketAddr = setting(
        "TRACE_VIEWER_UI_LISTEN",
        SocketAddr::from(([0, 0, 0, 0], 16686)),
    )?;
    let max_traces: u32 = setting("TRACE_VIEWER_MAX_TRACES", 10_000)?;
    let max_mb: usize = setting("TRACE_VIEWER_MAX_MEMORY_MB", 256)?;
    let state = State::new(Config {
        max_length: max_traces.max(1),
        max_memory_usage: max_mb.max(1).saturating_mul(1 << 20),
    });

    let listener = tokio::net::TcpListener::bind(ui)
        .await
        .with_context(|| format!("binding the UI on {ui}"))?;
    let ui_server = axum::serve(listener, ui_app(state.clone(), "/"));
    let grpc =
        tonic::transport::Server::builder().add_service(TraceServiceServer::new(Collector {
            inner: TraceServiceImpl::new(state),
        }));
    println!("trace-viewer ready: OTLP/gRPC on {otlp}, Jaeger UI and /api on http://{ui}");

    tokio::select! {
        r = ui_server.into_future() => r.context("UI server")?,
        r = grpc.serve(otlp) => r.context("OTLP/gRPC server")?,
        () = shutdown() => {}
    }
    Ok(())
}
