//! `gateway healthcheck`: `GET /healthz` on this gateway's own admin endpoint (the
//! `admin_listen` of the same file and `GATEWAY_*` variables the server reads), for
//! container health checks that need no tool in the image. Exit 0 on 200, else 1 with the
//! reason on one line. The probe itself is `ops::probe::probe`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use gateway::config::{GatewayConfig, Settings as _};

/// Flags of `gateway healthcheck`.
#[derive(clap::Args, Debug, Default)]
pub struct HealthcheckArgs {
    /// TOML configuration file (as for the server).
    #[arg(long, env = "GATEWAY_CONFIG")]
    pub config: Option<PathBuf>,
    /// Probe this address instead of the configured `admin_listen`.
    #[arg(long)]
    pub addr: Option<SocketAddr>,
    /// The path probed: `/healthz` (serving, with a node for every area), `/readyz` (the
    /// same) or `/livez` (alive: also a standby gateway waiting for its database, which
    /// an orchestrator restarting unhealthy tasks, as Docker Swarm does, must keep).
    #[arg(long, default_value = "/healthz", value_parser = ["/healthz", "/readyz", "/livez"])]
    pub path: String,
    /// Bound on the connect and on each read and write (ms).
    #[arg(long, default_value_t = 2000)]
    pub timeout_ms: u64,
}

/// The admin address the server would bind, from the file and the environment.
fn configured_admin(args: &HealthcheckArgs) -> anyhow::Result<SocketAddr> {
    let mut cfg = match &args.config {
        Some(p) => GatewayConfig::from_file(p)?,
        None => GatewayConfig::default(),
    };
    cfg.apply_env(std::env::vars())?;
    Ok(cfg.admin_listen)
}

/// Run the probe; prints one line when healthy.
pub fn run(args: &HealthcheckArgs) -> anyhow::Result<()> {
    let listen = match args.addr {
        Some(a) => a,
        None => configured_admin(args)?,
    };
    let timeout = Duration::from_millis(args.timeout_ms.clamp(1, 60_000));
    ops::probe::probe_path(listen, &args.path, timeout).context("healthcheck")?;
    println!(
        "healthy: http://{}{} answered 200",
        ops::probe::probe_addr(listen),
        args.path
    );
    Ok(())
}
