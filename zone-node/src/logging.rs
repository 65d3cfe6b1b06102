//! Process logging for the `gateway` and `zone-node` binaries: `tracing` events, one line
//! each on stderr, filtered by `RUST_LOG` (default `info`), as text or, with
//! `LOG_FORMAT=json`, as one JSON object per line carrying the active spans' fields
//! (session, zone, instance, node ...).

use std::fmt;

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

/// Install the global subscriber (a second call does nothing).
pub fn init() -> Result<(), BadLogFormat> {
    let json = wants_json(std::env::var("LOG_FORMAT").ok().as_deref())?;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter);
    let _ = if json {
        builder
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .try_init()
    } else {
        builder.try_init()
    };
    Ok(())
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
