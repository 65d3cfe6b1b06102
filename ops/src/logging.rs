//! Process logging for the `gateway` and `zone-node` binaries: `tracing` events, one line
//! each on stderr, filtered by `RUST_LOG` (default `info`), as text or, with
//! `LOG_FORMAT=json`, as one JSON object per line carrying the active spans' fields
//! (session, zone, instance, node ...) and, inside an exported span, its `trace_id` and
//! `span_id`. [`init_traced`] adds the OpenTelemetry layer when an OTLP endpoint is
//! configured ([`crate::telemetry`]).

use std::fmt;
use std::io::IsTerminal as _;

use tracing_subscriber::Layer as _;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use crate::telemetry::{TelemetryError, TraceConfig, Tracing};

/// `LOG_FORMAT` was neither `text` nor `json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLogFormat(pub String);

impl fmt::Display for BadLogFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LOG_FORMAT={:?}: expected \"text\" or \"json\"", self.0)
    }
}

impl std::error::Error for BadLogFormat {}

/// Whether `LOG_FORMAT` (its value, if set) asks for JSON.
pub fn wants_json(value: Option<&str>) -> Result<bool, BadLogFormat> {
    match value.map(str::trim) {
        None | Some("" | "text") => Ok(false),
        Some("json") => Ok(true),
        Some(other) => Err(BadLogFormat(other.to_owned())),
    }
}

/// Why logging (and traces) could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InitError {
    /// `LOG_FORMAT` is wrong.
    #[error(transparent)]
    LogFormat(#[from] BadLogFormat),
    /// An `OTEL_*` setting is wrong, or the exporter cannot start.
    #[error("traces: {0}")]
    Traces(TelemetryError),
}

// Not `#[from]`: that would make the error its own source too, and `{:#}` would print it
// twice on the one line the binaries print.
impl From<TelemetryError> for InitError {
    fn from(e: TelemetryError) -> Self {
        Self::Traces(e)
    }
}

/// Install the global subscriber, without traces (a second call does nothing).
pub fn init() -> Result<(), BadLogFormat> {
    let json = wants_json(std::env::var("LOG_FORMAT").ok().as_deref())?;
    install(json, None);
    Ok(())
}

/// Install the global subscriber and, when `OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT` is set,
/// the trace pipeline (`service.name` = `OTEL_SERVICE_NAME`, else `default_service`;
/// `service.instance.id` = `instance_id`). Keep the returned pipeline until exit and
/// [`Tracing::shutdown`] it to flush; `None`: traces off, nothing installed.
pub fn init_traced(
    default_service: &str,
    instance_id: Option<&str>,
) -> Result<Option<Tracing>, InitError> {
    let json = wants_json(std::env::var("LOG_FORMAT").ok().as_deref())?;
    let tracing = match TraceConfig::from_env(default_service, instance_id)? {
        Some(cfg) => Some((Tracing::start(&cfg)?, cfg)),
        None => None,
    };
    install(json, tracing.as_ref().map(|(t, _)| t));
    if let Some((_, cfg)) = &tracing {
        tracing::info!(endpoint = %cfg.endpoint, protocol = ?cfg.protocol,
            service = %cfg.service_name, sampler = ?cfg.sampler, "exporting traces");
    }
    Ok(tracing.map(|(t, _)| t))
}

/// Whether text logs are coloured: on a terminal, unless `NO_COLOR` is set (no-color.org).
fn colours(terminal: bool) -> bool {
    terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

type BoxedLayer = Box<dyn tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync>;

fn install(json: bool, traces: Option<&Tracing>) {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // RUST_LOG filters the log lines only; the trace layer has its own filter.
    let mut layers: Vec<BoxedLayer> = vec![if json {
        json_layer(std::io::stderr).with_filter(filter).boxed()
    } else {
        // Colours only on a terminal: a log file, journald or `docker logs` gets plain text.
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(colours(std::io::stderr().is_terminal()))
            .with_filter(filter)
            .boxed()
    }];
    if let Some(t) = traces {
        layers.push(crate::telemetry::layer(t.tracer()).boxed());
    }
    let _ = tracing_subscriber::registry().with(layers).try_init();
}

/// The `LOG_FORMAT=json` layer: one object per line with the current span, the span list
/// and, inside an exported span, `trace_id` and `span_id`.
pub fn json_layer<S, W>(writer: W) -> impl tracing_subscriber::Layer<S> + Send + Sync
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    tracing_subscriber::fmt::layer()
        .with_writer(writer)
        .fmt_fields(tracing_subscriber::fmt::format::JsonFields::new())
        .event_format(WithTraceIds {
            inner: tracing_subscriber::fmt::format()
                .json()
                .with_current_span(true)
                .with_span_list(true),
        })
}

/// An event formatter that adds the active exported span's trace and span ids as the
/// first keys of a JSON line (`"trace_id":"…","span_id":"…"`). Lines outside an exported
/// span (or with traces off) are unchanged.
struct WithTraceIds<F> {
    inner: F,
}

impl<S, N, F> FormatEvent<S, N> for WithTraceIds<F>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> fmt::Result {
        use opentelemetry::trace::TraceContextExt as _;
        // The OpenTelemetry layer makes an exported span's context current while it is
        // entered.
        let cx = opentelemetry::Context::current();
        let sc = cx.span().span_context().clone();
        if !sc.is_valid() {
            return self.inner.format_event(ctx, writer, event);
        }
        let mut line = String::new();
        self.inner
            .format_event(ctx, Writer::new(&mut line), event)?;
        match line.strip_prefix('{') {
            Some(rest) => {
                let sep = if rest.starts_with('}') { "" } else { "," };
                write!(
                    writer,
                    "{{\"trace_id\":\"{}\",\"span_id\":\"{}\"{sep}{rest}",
                    sc.trace_id(),
                    sc.span_id()
                )
            }
            None => writer.write_str(&line),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_format_values() {
        assert_eq!(wants_json(None), Ok(false));
        assert_eq!(wants_json(Some("text")), Ok(false));
        assert_eq!(wants_json(Some(" json ")), Ok(true));
        let e = wants_json(Some("yaml")).unwrap_err();
        assert!(e.to_string().contains("LOG_FORMAT"));
    }
}
