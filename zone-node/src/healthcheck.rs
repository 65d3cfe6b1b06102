//! `healthcheck`: `zone-node healthcheck`, a plain HTTP/1.0 `GET /healthz` of this node's
//! own admin endpoint for container health checks that need no tool in the image (the
//! probe itself is [`ops::probe`], shared with `gateway healthcheck`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use ops::probe::{ProbeError, probe, probe_addr};

use crate::config::{NodeConfig, Settings as _};

/// Why the node was not found healthy.
#[derive(Debug, thiserror::Error)]
pub enum HealthError {
    /// The probe failed.
    #[error(transparent)]
    Probe(#[from] ProbeError),
    /// No admin address is configured.
    #[error("{0}")]
    NoAddress(String),
    /// The configuration could not be read.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
}

/// `zone-node healthcheck`: probe this node's admin endpoint (`admin_listen`, from the
/// same file and `ZONE_NODE_*` variables as `zone-node run`), exit 0 when healthy.
#[derive(clap::Args, Debug, Default)]
pub struct HealthcheckArgs {
    /// TOML configuration file (as for `run`).
    #[arg(long, env = "ZONE_NODE_CONFIG")]
    pub config: Option<PathBuf>,
    /// Probe this address instead of the configured `admin_listen`.
    #[arg(long)]
    pub addr: Option<SocketAddr>,
    /// Bound on the connect and on each read and write (ms).
    #[arg(long, default_value_t = 2000)]
    pub timeout_ms: u64,
}

/// Run `zone-node healthcheck`: `Ok` with the probed address when healthy.
pub fn run(args: &HealthcheckArgs) -> Result<SocketAddr, HealthError> {
    let listen = match args.addr {
        Some(a) => a,
        None => {
            let mut cfg = match &args.config {
                Some(p) => NodeConfig::from_file(p)?,
                None => NodeConfig::default(),
            };
            cfg.apply_env(std::env::vars())?;
            cfg.admin_listen.ok_or_else(|| {
                HealthError::NoAddress(
                    "admin_listen is not set (ZONE_NODE_ADMIN_LISTEN), nothing to probe".into(),
                )
            })?
        }
    };
    probe(
        listen,
        Duration::from_millis(args.timeout_ms.clamp(1, 60_000)),
    )?;
    Ok(probe_addr(listen))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_admin_listen_there_is_nothing_to_probe() {
        let args = HealthcheckArgs {
            config: Some(PathBuf::from("/nonexistent/zone-node.toml")),
            ..HealthcheckArgs::default()
        };
        assert!(matches!(run(&args), Err(HealthError::Config(_))));
    }
}
