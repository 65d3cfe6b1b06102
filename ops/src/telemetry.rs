//! OpenTelemetry traces for both binaries: the standard `OTEL_*` configuration, the OTLP
//! exporter (gRPC or HTTP/protobuf) and its provider, the W3C trace-context propagation
//! through the internal link's [`Envelope`], and the sampled `zone.tick` span.
//!
//! With no endpoint configured ([`TraceConfig::from_lookup`] returns `None`) nothing here
//! is installed: `logging` builds its subscriber without the OpenTelemetry layer, every
//! [`inject`] finds no valid span context and leaves the envelope's map empty, and the
//! only cost left is the one `zone.tick` span every N ticks (`trace_tick_every`).
//!
//! Which spans exist and how to read a handoff in Jaeger: `docs/operations.md#traces`.

use std::collections::BTreeMap;
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator as _};
use opentelemetry::trace::{TraceContextExt as _, TracerProvider as _};
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Sampler, SdkTracer, SdkTracerProvider};
use shared::internal::{Envelope, Msg};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The OTLP wire protocol (`OTEL_EXPORTER_OTLP_PROTOCOL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// `grpc` (the default; Jaeger and `otlp-embedded` on 4317).
    Grpc,
    /// `http/protobuf` (POST to `…/v1/traces`, Jaeger on 4318).
    HttpProtobuf,
}

/// `OTEL_TRACES_SAMPLER` (with `OTEL_TRACES_SAMPLER_ARG` for the ratio samplers).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SamplerChoice {
    /// `always_on`.
    AlwaysOn,
    /// `always_off`.
    AlwaysOff,
    /// `traceidratio`: that fraction of new traces.
    Ratio(f64),
    /// `parentbased_always_on` (the default).
    ParentBasedAlwaysOn,
    /// `parentbased_always_off`.
    ParentBasedAlwaysOff,
    /// `parentbased_traceidratio`.
    ParentBasedRatio(f64),
}

impl SamplerChoice {
    fn sampler(self) -> Sampler {
        match self {
            Self::AlwaysOn => Sampler::AlwaysOn,
            Self::AlwaysOff => Sampler::AlwaysOff,
            Self::Ratio(r) => Sampler::TraceIdRatioBased(r),
            Self::ParentBasedAlwaysOn => Sampler::ParentBased(Box::new(Sampler::AlwaysOn)),
            Self::ParentBasedAlwaysOff => Sampler::ParentBased(Box::new(Sampler::AlwaysOff)),
            Self::ParentBasedRatio(r) => {
                Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(r)))
            }
        }
    }
}

/// A trace setting that cannot be used; the binaries print it on one line and exit.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    /// An `OTEL_*` variable has a value we refuse.
    #[error("{var}={value:?}: {why}")]
    BadVar {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
        /// What is expected.
        why: String,
    },
    /// The exporter could not be built.
    #[error("cannot build the OTLP trace exporter: {0}")]
    Exporter(String),
    /// The exporter's runtime could not start.
    #[error("cannot start the OTLP exporter's runtime: {0}")]
    Runtime(#[from] std::io::Error),
}

/// Where and how traces go, from the standard `OTEL_*` variables.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceConfig {
    /// The full URL the exporter sends to (for HTTP, with `/v1/traces`).
    pub endpoint: String,
    /// Wire protocol.
    pub protocol: Protocol,
    /// `service.name` (`OTEL_SERVICE_NAME`, else the binary's default).
    pub service_name: String,
    /// `service.instance.id` (the zone node's id), if any.
    pub instance_id: Option<String>,
    /// Head sampler.
    pub sampler: SamplerChoice,
}

const ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
const TRACES_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
const PROTOCOL: &str = "OTEL_EXPORTER_OTLP_PROTOCOL";
const TRACES_PROTOCOL: &str = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL";
const SERVICE_NAME: &str = "OTEL_SERVICE_NAME";
const SAMPLER: &str = "OTEL_TRACES_SAMPLER";
const SAMPLER_ARG: &str = "OTEL_TRACES_SAMPLER_ARG";
const TRACES_EXPORTER: &str = "OTEL_TRACES_EXPORTER";
const SDK_DISABLED: &str = "OTEL_SDK_DISABLED";

/// `http://host[:port][/path]`: the exporter is built without TLS, so `https` (or a
/// bare `host:port`, which OTLP reads as `https`) would fail at the first export.
fn check_endpoint(var: &'static str, value: &str) -> Result<(), TelemetryError> {
    let bad = |why: &str| TelemetryError::BadVar {
        var,
        value: value.to_owned(),
        why: why.to_owned(),
    };
    let Some(rest) = value.strip_prefix("http://") else {
        return Err(bad(
            "expected http://host:port (this build has no TLS for the exporter)",
        ));
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let (host, port) = match authority.rsplit_once(':') {
        // An IPv6 literal without a port: `[::1]`.
        Some((h, p)) if !p.contains(']') => (h, Some(p)),
        _ => (authority, None),
    };
    if host.is_empty() || host.contains(char::is_whitespace) || host.contains('@') {
        return Err(bad(
            "expected http://host:port: the host is missing or invalid",
        ));
    }
    if let Some(p) = port
        && p.parse::<u16>().is_err()
    {
        return Err(bad(
            "expected http://host:port: the port is not a number 0-65535",
        ));
    }
    Ok(())
}

fn ratio(value: Option<&str>) -> Result<f64, TelemetryError> {
    let Some(v) = value else {
        return Ok(1.0);
    };
    match v.trim().parse::<f64>() {
        Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
        _ => Err(TelemetryError::BadVar {
            var: SAMPLER_ARG,
            value: v.to_owned(),
            why: "expected a probability between 0 and 1".into(),
        }),
    }
}

impl TraceConfig {
    /// The configuration from `get` (the environment, or a test's map); `None` when no
    /// endpoint is set (or `OTEL_SDK_DISABLED=true`, `OTEL_TRACES_EXPORTER=none`): traces
    /// off. Every value is checked here, so a typo is an error at start, not a silent
    /// fallback (`opentelemetry_sdk` reads the sampler variables itself, but falls back to
    /// `parentbased_always_on` on a bad value).
    pub fn from_lookup(
        get: impl Fn(&str) -> Option<String>,
        default_service: &str,
        instance_id: Option<&str>,
    ) -> Result<Option<Self>, TelemetryError> {
        let get = |k: &str| {
            get(k)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        if get(SDK_DISABLED).is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        match get(TRACES_EXPORTER).as_deref() {
            None | Some("otlp") => {}
            Some("none") => return Ok(None),
            Some(other) => {
                return Err(TelemetryError::BadVar {
                    var: TRACES_EXPORTER,
                    value: other.to_owned(),
                    why: "expected \"otlp\" or \"none\"".into(),
                });
            }
        }
        let protocol = match get(TRACES_PROTOCOL)
            .map(|v| (TRACES_PROTOCOL, v))
            .or_else(|| get(PROTOCOL).map(|v| (PROTOCOL, v)))
        {
            None => Protocol::Grpc,
            Some((_, v)) if v == "grpc" => Protocol::Grpc,
            Some((_, v)) if v == "http/protobuf" => Protocol::HttpProtobuf,
            Some((var, v)) => {
                return Err(TelemetryError::BadVar {
                    var,
                    value: v,
                    why: "expected \"grpc\" or \"http/protobuf\"".into(),
                });
            }
        };
        let endpoint = if let Some(e) = get(TRACES_ENDPOINT) {
            check_endpoint(TRACES_ENDPOINT, &e)?;
            e
        } else if let Some(e) = get(ENDPOINT) {
            check_endpoint(ENDPOINT, &e)?;
            match protocol {
                Protocol::Grpc => e,
                // The generic endpoint is a base URL; the signal's path is appended.
                Protocol::HttpProtobuf => format!("{}/v1/traces", e.trim_end_matches('/')),
            }
        } else {
            return Ok(None);
        };
        let arg = get(SAMPLER_ARG);
        let sampler = match get(SAMPLER).as_deref() {
            None | Some("parentbased_always_on") => SamplerChoice::ParentBasedAlwaysOn,
            Some("always_on") => SamplerChoice::AlwaysOn,
            Some("always_off") => SamplerChoice::AlwaysOff,
            Some("parentbased_always_off") => SamplerChoice::ParentBasedAlwaysOff,
            Some("traceidratio") => SamplerChoice::Ratio(ratio(arg.as_deref())?),
            Some("parentbased_traceidratio") => {
                SamplerChoice::ParentBasedRatio(ratio(arg.as_deref())?)
            }
            Some(other) => {
                return Err(TelemetryError::BadVar {
                    var: SAMPLER,
                    value: other.to_owned(),
                    why: "expected always_on, always_off, traceidratio, parentbased_always_on, \
                          parentbased_always_off or parentbased_traceidratio"
                        .into(),
                });
            }
        };
        Ok(Some(Self {
            endpoint,
            protocol,
            service_name: get(SERVICE_NAME).unwrap_or_else(|| default_service.to_owned()),
            instance_id: instance_id.map(str::to_owned),
            sampler,
        }))
    }

    /// [`Self::from_lookup`] over the process environment.
    pub fn from_env(
        default_service: &str,
        instance_id: Option<&str>,
    ) -> Result<Option<Self>, TelemetryError> {
        Self::from_lookup(|k| std::env::var(k).ok(), default_service, instance_id)
    }
}

/// A running trace pipeline: the provider (batching exporter) and, for gRPC, the tokio
/// runtime tonic needs alive (the batch processor exports from its own thread with
/// `block_on`, so an actix current-thread `System` is not enough). Shut it down (flush) on
/// exit: [`Self::shutdown`], or drop it.
pub struct Tracing {
    provider: SdkTracerProvider,
    runtime: Option<tokio::runtime::Runtime>,
    done: bool,
}

impl std::fmt::Debug for Tracing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracing").finish_non_exhaustive()
    }
}

impl Tracing {
    /// Build the exporter and the provider for `cfg`.
    pub fn start(cfg: &TraceConfig) -> Result<Self, TelemetryError> {
        let mut resource =
            opentelemetry_sdk::Resource::builder().with_service_name(cfg.service_name.clone());
        if let Some(id) = &cfg.instance_id {
            resource = resource.with_attribute(KeyValue::new("service.instance.id", id.clone()));
        }
        let (exporter, runtime) = match cfg.protocol {
            Protocol::Grpc => {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .thread_name("otlp-export")
                    .enable_all()
                    .build()?;
                let exporter = {
                    // tonic's channel spawns its worker on the current runtime.
                    let _g = rt.enter();
                    opentelemetry_otlp::SpanExporter::builder()
                        .with_tonic()
                        .with_endpoint(cfg.endpoint.clone())
                        .build()
                        .map_err(|e| TelemetryError::Exporter(e.to_string()))?
                };
                (exporter, Some(rt))
            }
            Protocol::HttpProtobuf => {
                let exporter = opentelemetry_otlp::SpanExporter::builder()
                    .with_http()
                    .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                    .with_endpoint(cfg.endpoint.clone())
                    .build()
                    .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
                (exporter, None)
            }
        };
        let provider = SdkTracerProvider::builder()
            .with_resource(resource.build())
            .with_sampler(cfg.sampler.sampler())
            .with_batch_exporter(exporter)
            .build();
        Ok(Self {
            provider,
            runtime,
            done: false,
        })
    }

    /// The tracer the `tracing` layer records into.
    pub fn tracer(&self) -> SdkTracer {
        self.provider.tracer("realm-crafter-cluster")
    }

    /// The provider (tests flush it).
    pub fn provider(&self) -> &SdkTracerProvider {
        &self.provider
    }

    /// Flush what is buffered and stop the exporter (at most 5 s). Call it outside any
    /// tokio runtime's `block_on` (after the binary's main future returned).
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        if let Err(e) = self.provider.shutdown_with_timeout(Duration::from_secs(5)) {
            eprintln!("traces: flushing the exporter failed: {e}");
        }
        if let Some(rt) = self.runtime.take() {
            // The exporter is flushed and shut down: nothing left to wait for, and this
            // does not panic if the value is dropped inside another runtime.
            rt.shutdown_background();
        }
    }
}

impl Drop for Tracing {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Whether the OpenTelemetry layer exports a callsite: our spans (named `area.what`, at
/// INFO or above) and INFO+ events (recorded on the enclosing exported span). The
/// long-lived log-context spans (`session`, `zone`, `node_link`, ...) are not exported:
/// a trace is one login, one handoff, one tick, not a whole connection.
pub fn exported(meta: &tracing::Metadata<'_>) -> bool {
    let level_ok = *meta.level() <= tracing::Level::INFO;
    if meta.is_span() {
        level_ok && meta.name().contains('.')
    } else {
        level_ok
    }
}

/// The `tracing` layer that turns our spans into OpenTelemetry spans, with its filter.
pub fn layer<S>(tracer: SdkTracer) -> impl tracing_subscriber::Layer<S> + Send + Sync
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a> + Send + Sync,
{
    use tracing_subscriber::Layer as _;
    tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_threads(false)
        .with_location(false)
        .with_filter(tracing_subscriber::filter::filter_fn(exported))
}

// ----- propagation ------------------------------------------------------------------------

struct MapInjector<'a>(&'a mut BTreeMap<String, String>);

impl Injector for MapInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_owned(), value);
    }
}

struct MapExtractor<'a>(&'a BTreeMap<String, String>);

impl Extractor for MapExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

/// Write `span`'s W3C trace context (`traceparent`, `tracestate`) into `trace`; nothing
/// when the span is not exported (no endpoint configured, or not sampled).
pub fn inject(span: &tracing::Span, trace: &mut BTreeMap<String, String>) {
    if span.is_disabled() {
        return;
    }
    let cx = span.context();
    if !cx.span().span_context().is_valid() {
        return;
    }
    TraceContextPropagator::new().inject_context(&cx, &mut MapInjector(trace));
    // An empty `tracestate` carries nothing: keep the envelope small.
    if trace.get("tracestate").is_some_and(String::is_empty) {
        trace.remove("tracestate");
    }
}

/// An envelope for `msg` carrying `span`'s trace context (if it is exported).
pub fn envelope(msg: Msg, span: &tracing::Span) -> Envelope {
    let mut env = Envelope::new(msg);
    inject(span, &mut env.trace);
    env
}

/// An envelope for `msg` carrying the current span's trace context.
pub fn envelope_current(msg: Msg) -> Envelope {
    envelope(msg, &tracing::Span::current())
}

/// The remote context in a received envelope's trace map (empty if none or invalid).
pub fn extract(trace: &BTreeMap<String, String>) -> opentelemetry::Context {
    TraceContextPropagator::new().extract(&MapExtractor(trace))
}

/// Make the sender's span (from a received trace map) the parent of `span`. Call before
/// entering `span`; does nothing when the map is empty or `span` is not exported.
pub fn set_parent(span: &tracing::Span, trace: &BTreeMap<String, String>) {
    if trace.is_empty() || span.is_disabled() {
        return;
    }
    let cx = extract(trace);
    if cx.span().span_context().is_valid() {
        let _ = span.set_parent(cx);
    }
}

/// The span a received control message is handled in: `internal.recv`, a child of the
/// sender's span when the envelope carries a trace context, and `None` (no span at all)
/// otherwise, so untraced traffic (heartbeats, frames, snapshots) costs nothing.
pub fn recv_span(env: &Envelope, node: &str) -> Option<tracing::Span> {
    recv_span_parts(&env.trace, env.msg.name(), node)
}

/// [`recv_span`] for an envelope already taken apart (its trace map and message name).
pub fn recv_span_parts(
    trace: &BTreeMap<String, String>,
    msg: &str,
    node: &str,
) -> Option<tracing::Span> {
    if trace.is_empty() {
        return None;
    }
    let span = tracing::info_span!(parent: None, "internal.recv", msg, node);
    set_parent(&span, trace);
    Some(span)
}

// ----- sampled ticks ----------------------------------------------------------------------

/// One tick in `every` of an instance gets a `zone.tick` span; the others create none.
/// The zone actor and `zone-node bench` both use it, so the bench measures this path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TickSampler {
    every: u64,
}

/// Default of `trace_tick_every`: one tick in 300, every 10 s at 33 ms.
pub const DEFAULT_TICK_EVERY: u32 = 300;

impl TickSampler {
    /// Every `every`th tick (0: never).
    pub fn new(every: u32) -> Self {
        Self {
            every: u64::from(every),
        }
    }

    /// Whether tick `n` is sampled.
    pub fn samples(self, n: u64) -> bool {
        self.every != 0 && n.is_multiple_of(self.every)
    }

    /// A `zone.tick` root span for tick `n` of `zone#instance` if it is sampled. Enter it
    /// around the tick, then [`TickSpan::finish`] it with the tick's figures.
    #[doc(alias = "UpdateActorInstances")]
    pub fn start(self, n: u64, node: &str, zone: &str, instance: u16) -> Option<TickSpan> {
        if !self.samples(n) {
            return None;
        }
        let span = tracing::info_span!(
            parent: None,
            "zone.tick",
            node,
            zone,
            instance,
            tick = n,
            actors = tracing::field::Empty,
            players = tracing::field::Empty,
            ingest_us = tracing::field::Empty,
            housekeeping_us = tracing::field::Empty,
            actors_us = tracing::field::Empty,
            kills_us = tracing::field::Empty,
            visit_us = tracing::field::Empty,
            scripts_us = tracing::field::Empty,
            broadcast_us = tracing::field::Empty,
            flush_us = tracing::field::Empty,
        );
        Some(TickSpan(span))
    }
}

/// A sampled tick's span.
#[derive(Debug)]
pub struct TickSpan(tracing::Span);

impl TickSpan {
    /// The span (enter it around the tick).
    pub fn span(&self) -> &tracing::Span {
        &self.0
    }

    /// Record the tick's actors, players and phase durations (ns, in
    /// `sim::events::PHASE_NAMES` order), then close the span.
    pub fn finish(self, actors: u32, players: u32, phase_ns: &[u64]) {
        const FIELDS: [&str; 8] = [
            "ingest_us",
            "housekeeping_us",
            "actors_us",
            "kills_us",
            "visit_us",
            "scripts_us",
            "broadcast_us",
            "flush_us",
        ];
        self.0.record("actors", actors);
        self.0.record("players", players);
        for (f, ns) in FIELDS.iter().zip(phase_ns) {
            self.0.record(*f, ns / 1_000);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
    use tracing_subscriber::layer::SubscriberExt as _;

    use super::*;

    fn cfg(vars: &[(&str, &str)]) -> Result<Option<TraceConfig>, TelemetryError> {
        let m: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        TraceConfig::from_lookup(|k| m.get(k).cloned(), "zone-node", Some("node-a"))
    }

    fn bad_var(r: Result<Option<TraceConfig>, TelemetryError>) -> String {
        match r {
            Err(e @ TelemetryError::BadVar { .. }) => e.to_string(),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn no_endpoint_means_no_traces() {
        assert_eq!(cfg(&[]).unwrap(), None);
        assert_eq!(
            cfg(&[(SERVICE_NAME, "x"), (SAMPLER, "always_on")]).unwrap(),
            None
        );
        assert_eq!(cfg(&[(ENDPOINT, "  ")]).unwrap(), None);
        let off = [(ENDPOINT, "http://127.0.0.1:4317"), (SDK_DISABLED, "true")];
        assert_eq!(cfg(&off).unwrap(), None);
        let none = [
            (ENDPOINT, "http://127.0.0.1:4317"),
            (TRACES_EXPORTER, "none"),
        ];
        assert_eq!(cfg(&none).unwrap(), None);
    }

    #[test]
    fn defaults_and_overrides() {
        let c = cfg(&[(ENDPOINT, "http://jaeger:4317")]).unwrap().unwrap();
        assert_eq!(c.endpoint, "http://jaeger:4317");
        assert_eq!(c.protocol, Protocol::Grpc);
        assert_eq!(c.service_name, "zone-node");
        assert_eq!(c.instance_id.as_deref(), Some("node-a"));
        assert_eq!(c.sampler, SamplerChoice::ParentBasedAlwaysOn);

        let c = cfg(&[
            (ENDPOINT, "http://jaeger:4318/"),
            (PROTOCOL, "http/protobuf"),
            (SERVICE_NAME, "zone-eu"),
            (SAMPLER, "parentbased_traceidratio"),
            (SAMPLER_ARG, "0.25"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(c.endpoint, "http://jaeger:4318/v1/traces");
        assert_eq!(c.protocol, Protocol::HttpProtobuf);
        assert_eq!(c.service_name, "zone-eu");
        assert_eq!(c.sampler, SamplerChoice::ParentBasedRatio(0.25));

        // The signal's own variables win, and its endpoint is used as is.
        let c = cfg(&[
            (ENDPOINT, "http://a:4317"),
            (TRACES_ENDPOINT, "http://b:4318/custom"),
            (PROTOCOL, "grpc"),
            (TRACES_PROTOCOL, "http/protobuf"),
            (SAMPLER, "traceidratio"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(c.endpoint, "http://b:4318/custom");
        assert_eq!(c.protocol, Protocol::HttpProtobuf);
        assert_eq!(c.sampler, SamplerChoice::Ratio(1.0));
        for (v, want) in [
            ("always_on", SamplerChoice::AlwaysOn),
            ("always_off", SamplerChoice::AlwaysOff),
            (
                "parentbased_always_off",
                SamplerChoice::ParentBasedAlwaysOff,
            ),
        ] {
            let c = cfg(&[(ENDPOINT, "http://[::1]:4317"), (SAMPLER, v)]).unwrap();
            assert_eq!(c.map(|c| c.sampler), Some(want));
        }
    }

    #[test]
    fn bad_values_are_refused_with_the_variable_named() {
        let ep = (ENDPOINT, "http://127.0.0.1:4317");
        let e = bad_var(cfg(&[ep, (PROTOCOL, "http/json")]));
        assert!(
            e.contains("OTEL_EXPORTER_OTLP_PROTOCOL") && e.contains("grpc"),
            "{e}"
        );
        let e = bad_var(cfg(&[ep, (SAMPLER, "sometimes")]));
        assert!(e.contains("OTEL_TRACES_SAMPLER"), "{e}");
        for arg in ["1.5", "-0.1", "half", "NaN"] {
            let e = bad_var(cfg(&[ep, (SAMPLER, "traceidratio"), (SAMPLER_ARG, arg)]));
            assert!(e.contains("OTEL_TRACES_SAMPLER_ARG"), "{e}");
        }
        for endpoint in [
            "localhost:4317",
            "https://collector:4317",
            "http://",
            "http://:4317",
            "http://host:port",
            "http://host:99999",
            "ftp://host:21",
        ] {
            let e = bad_var(cfg(&[(ENDPOINT, endpoint)]));
            assert!(e.contains("OTEL_EXPORTER_OTLP_ENDPOINT"), "{endpoint}: {e}");
        }
        let e = bad_var(cfg(&[(TRACES_ENDPOINT, "collector")]));
        assert!(e.contains("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), "{e}");
        let e = bad_var(cfg(&[ep, (TRACES_EXPORTER, "zipkin")]));
        assert!(e.contains("OTEL_TRACES_EXPORTER"), "{e}");
    }

    /// A subscriber exporting into memory, with the same filter as the binaries.
    fn recording() -> (
        SdkTracerProvider,
        InMemorySpanExporter,
        impl tracing::Subscriber,
    ) {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let sub = tracing_subscriber::registry().with(layer(provider.tracer("test")));
        (provider, exporter, sub)
    }

    fn finished(provider: &SdkTracerProvider, exporter: &InMemorySpanExporter) -> Vec<SpanData> {
        provider.force_flush().unwrap();
        exporter.get_finished_spans().unwrap()
    }

    fn attr(span: &SpanData, key: &str) -> Option<String> {
        span.attributes
            .iter()
            .find(|kv| kv.key.as_str() == key)
            .map(|kv| kv.value.to_string())
    }

    #[test]
    fn envelope_round_trip_keeps_the_trace() {
        let (provider, exporter, sub) = recording();
        let bytes = tracing::subscriber::with_default(sub, || {
            let sender = tracing::info_span!("handoff.source", node = "a");
            let _g = sender.enter();
            let env = envelope_current(Msg::TransferCommit {
                transfer_id: shared::internal::TransferId::default(),
            });
            assert!(env.trace.contains_key("traceparent"), "{:?}", env.trace);
            let mut bytes = Vec::new();
            shared::internal::codec::encode_frame(&env, &mut bytes).unwrap();
            bytes
        });
        // The other process: decode, extract, handle in a child span.
        let (provider2, exporter2, sub2) = recording();
        tracing::subscriber::with_default(sub2, || {
            let mut dec = shared::internal::codec::FrameDecoder::new();
            dec.push(&bytes);
            let env = dec.next_envelope().unwrap().unwrap();
            let span = recv_span(&env, "b").expect("a traced message gets a span");
            span.in_scope(|| {
                let _inner = tracing::info_span!("handoff.destination").entered();
            });
        });
        let sent = finished(&provider, &exporter);
        let got = finished(&provider2, &exporter2);
        assert_eq!(sent.len(), 1);
        let src = &sent[0];
        let recv = got.iter().find(|s| s.name == "internal.recv").unwrap();
        let dest = got
            .iter()
            .find(|s| s.name == "handoff.destination")
            .unwrap();
        assert_eq!(recv.span_context.trace_id(), src.span_context.trace_id());
        assert_eq!(recv.parent_span_id, src.span_context.span_id());
        assert_eq!(dest.span_context.trace_id(), src.span_context.trace_id());
        assert_eq!(dest.parent_span_id, recv.span_context.span_id());
        assert_eq!(attr(recv, "msg").as_deref(), Some("TransferCommit"));
    }

    #[test]
    fn untraced_messages_carry_nothing_and_get_no_span() {
        // No OpenTelemetry layer at all (no endpoint): nothing injected.
        let span = tracing::info_span!("handoff.source");
        let env = envelope(Msg::Drain, &span);
        assert!(env.trace.is_empty());
        assert!(recv_span(&env, "n").is_none());
        // With the layer, a span outside the exported set injects nothing either.
        let (provider, exporter, sub) = recording();
        tracing::subscriber::with_default(sub, || {
            let _g = tracing::info_span!("session", session = 1).entered();
            assert!(envelope_current(Msg::Drain).trace.is_empty());
        });
        assert!(finished(&provider, &exporter).is_empty());
    }

    #[test]
    fn exactly_every_nth_tick_has_a_span() {
        let (provider, exporter, sub) = recording();
        let sampler = TickSampler::new(5);
        tracing::subscriber::with_default(sub, || {
            for n in 1..=23u64 {
                if let Some(t) = sampler.start(n, "node-a", "Plains", 2) {
                    let _g = t.span().clone().entered();
                    drop(_g);
                    t.finish(40, 3, &[1_000, 2_000, 3_000, 4_000, 5_000, 6_000, 7_000]);
                }
            }
        });
        let spans = finished(&provider, &exporter);
        let mut ticks: Vec<String> = spans.iter().filter_map(|s| attr(s, "tick")).collect();
        ticks.sort_by_key(|t| t.parse::<u64>().unwrap_or(0));
        assert_eq!(ticks, ["5", "10", "15", "20"]);
        let s = &spans[0];
        assert_eq!(s.name, "zone.tick");
        assert_eq!(s.parent_span_id, opentelemetry::trace::SpanId::INVALID);
        assert_eq!(attr(s, "zone").as_deref(), Some("Plains"));
        assert_eq!(attr(s, "instance").as_deref(), Some("2"));
        assert_eq!(attr(s, "actors").as_deref(), Some("40"));
        assert_eq!(attr(s, "players").as_deref(), Some("3"));
        assert_eq!(attr(s, "visit_us").as_deref(), Some("5"));
        assert!(!TickSampler::new(0).samples(0) && !TickSampler::new(0).samples(300));
        assert!(TickSampler::new(1).samples(7));
    }

    #[test]
    fn json_log_lines_carry_the_trace_id() {
        use std::sync::{Arc, Mutex};
        #[derive(Clone, Default)]
        struct Buf(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Buf {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let buf = Buf::default();
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let w = buf.clone();
        let sub = tracing_subscriber::registry()
            .with(crate::logging::json_layer(move || w.clone()))
            .with(layer(provider.tracer("test")));
        tracing::subscriber::with_default(sub, || {
            tracing::info!("outside");
            let _g = tracing::info_span!("store.write_batch", ops = 3).entered();
            tracing::info!("inside");
        });
        let spans = finished(&provider, &exporter);
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].get("trace_id").is_none(), "{text}");
        let trace = spans[0].span_context.trace_id().to_string();
        assert_eq!(lines[1]["trace_id"], trace.as_str(), "{text}");
        assert_eq!(
            lines[1]["span_id"],
            spans[0].span_context.span_id().to_string().as_str()
        );
        assert_eq!(lines[1]["span"]["ops"], 3, "{text}");
    }
}
