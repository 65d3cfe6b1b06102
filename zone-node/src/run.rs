//! `zone-node run` (binary only): load and validate the configuration, start the node in
//! an actix `System`, drain on SIGTERM/SIGINT and exit 0.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use zone_node::config::{NodeConfig, Settings as _};
use zone_node::link::LinkExit;
use zone_node::node;

/// Flags of `zone-node run`; every one overrides the file and the `ZONE_NODE_*` variables.
#[derive(Args, Debug, Default)]
pub struct RunArgs {
    /// TOML configuration file.
    #[arg(long, env = "ZONE_NODE_CONFIG")]
    pub config: Option<PathBuf>,
    /// The gateway's internal address (host:port).
    #[arg(long)]
    pub gateway_addr: Option<String>,
    /// This node's id.
    #[arg(long)]
    pub node_id: Option<String>,
    /// The address other nodes reach this node at.
    #[arg(long)]
    pub advertised_addr: Option<String>,
    /// Local UDP bind address.
    #[arg(long)]
    pub bind_addr: Option<String>,
    /// Number of arbiters (threads) hosting zone actors.
    #[arg(long)]
    pub arbiters: Option<String>,
    /// Simulation step (ms).
    #[arg(long)]
    pub tick_ms: Option<String>,
    /// Position broadcast period (ms).
    #[arg(long)]
    pub broadcast_ms: Option<String>,
    /// World directory (default: the embedded demo world).
    #[arg(long)]
    pub world: Option<String>,
    /// Drain deadline (ms).
    #[arg(long)]
    pub drain_timeout_ms: Option<String>,
    /// Instances this node offers to host.
    #[arg(long)]
    pub capacity: Option<String>,
    /// How long an item stays on the ground (ms; 0: until picked up).
    #[arg(long)]
    pub ground_item_lifetime_ms: Option<String>,
    /// Most items on the ground of one AreaInstance.
    #[arg(long)]
    pub ground_item_cap: Option<String>,
    /// Pickup reach (XZ distance).
    #[arg(long)]
    pub pickup_radius: Option<String>,
}

impl RunArgs {
    fn overrides(&self) -> Vec<(&'static str, &str)> {
        [
            ("gateway_addr", &self.gateway_addr),
            ("node_id", &self.node_id),
            ("advertised_addr", &self.advertised_addr),
            ("bind_addr", &self.bind_addr),
            ("arbiters", &self.arbiters),
            ("tick_ms", &self.tick_ms),
            ("broadcast_ms", &self.broadcast_ms),
            ("world", &self.world),
            ("drain_timeout_ms", &self.drain_timeout_ms),
            ("capacity", &self.capacity),
            ("ground_item_lifetime_ms", &self.ground_item_lifetime_ms),
            ("ground_item_cap", &self.ground_item_cap),
            ("pickup_radius", &self.pickup_radius),
        ]
        .into_iter()
        .filter_map(|(k, x)| x.as_deref().map(|x| (k, x)))
        .collect()
    }
}

/// Run a node until drained.
pub fn run(args: RunArgs) -> Result<()> {
    let mut cfg = match &args.config {
        Some(p) => NodeConfig::from_file(p)?,
        None => NodeConfig::default(),
    };
    cfg.apply_env(std::env::vars())?;
    cfg.apply_overrides(args.overrides())?;
    cfg.validate()?;
    // Logging starts once the node id is known: it is the traces' `service.instance.id`.
    let traces = zone_node::logging::init_traced("zone-node", Some(&cfg.node_id))?;
    let world = node::load_world(&cfg).context("loading the world")?;
    let drain_timeout = cfg.drain_timeout();
    let system = actix::System::new();
    let exit = system.block_on(async move {
        let handle = node::start(cfg, world);
        let trigger = handle.drain_trigger();
        actix::spawn(async move {
            ops::shutdown_signal().await;
            let _ = trigger.send(true);
            // A second signal, or the deadline plus a margin, ends the process regardless.
            tokio::select! {
                () = ops::shutdown_signal() => {}
                () = tokio::time::sleep(drain_timeout + std::time::Duration::from_secs(2)) => {}
            }
            tracing::error!("forced exit: drain did not finish");
            std::process::exit(1);
        });
        handle.join().await
    })?;
    match exit {
        LinkExit::Drained => tracing::info!("drained; exiting"),
        LinkExit::DrainTimedOut => {
            tracing::warn!("drain deadline passed; exiting with unacknowledged snapshots");
        }
    }
    if let Some(t) = traces {
        t.shutdown();
    }
    Ok(())
}
