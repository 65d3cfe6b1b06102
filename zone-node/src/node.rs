//! Start-up and shutdown of a whole zone node: arbiters, the [`Registry`], the link.
//!
//! [`start`] must run inside an actix `System` (the link's QUIC endpoint and its driver
//! live on the calling arbiter, which only does I/O; zone actors tick on their own
//! arbiters). `main.rs` and the integration tests both use it.

use std::sync::Arc;
use std::time::Duration;

use actix::Arbiter;
use shared::content::World;
use tokio::sync::{mpsc, watch};

use crate::actor::{Registry, ShellConfig};
use crate::config::NodeConfig;
use crate::link::{self, LinkError, LinkExit};

/// A running node.
pub struct NodeHandle {
    /// The instance registry (metrics, state; tests inspect it).
    pub registry: Arc<Registry>,
    shutdown: Arc<watch::Sender<bool>>,
    link: tokio::task::JoinHandle<Result<LinkExit, LinkError>>,
    arbiters: Vec<Arbiter>,
}

impl NodeHandle {
    /// Start draining (what SIGTERM does).
    pub fn drain(&self) {
        let _ = self.shutdown.send(true);
    }

    /// A trigger that starts the drain from elsewhere (a signal handler).
    pub fn drain_trigger(&self) -> Arc<watch::Sender<bool>> {
        self.shutdown.clone()
    }

    /// Wait for the link to finish (after [`Self::drain`]), then stop the arbiters.
    pub async fn join(self) -> Result<LinkExit, LinkError> {
        let r = match self.link.await {
            Ok(r) => r,
            Err(e) => Err(LinkError::Setup(format!("link task failed: {e}"))),
        };
        for a in &self.arbiters {
            a.stop();
        }
        // Arbiters started in place of stuck ones too.
        self.registry.stop_arbiters();
        r
    }
}

/// Load the configured world (`None` = the embedded demo world).
pub fn load_world(cfg: &NodeConfig) -> Result<World, shared::content::ContentError> {
    let (world, warnings) = shared::content::fs::load_or_demo(cfg.world.as_deref())?;
    for w in &warnings {
        tracing::warn!(warning = %w, "content warning");
    }
    Ok(world)
}

/// Start a node with a loaded world. Call inside an actix `System`.
pub fn start(cfg: NodeConfig, world: World) -> NodeHandle {
    let arbiters: Vec<Arbiter> = (0..cfg.arbiters.max(1)).map(|_| Arbiter::new()).collect();
    let handles = arbiters.iter().map(Arbiter::handle).collect();
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    let registry = Registry::new(
        ShellConfig {
            node_id: cfg.node_id.clone(),
            tick_ms: cfg.tick_ms,
            broadcast_ms: cfg.broadcast_ms,
            max_catch_up: cfg.max_catch_up,
            persist_every_ms: cfg.persist_every_ms,
            capacity: cfg.capacity,
            datagram_budget: cfg.datagram_budget,
            trace_tick_every: cfg.trace_tick_every,
            ground: cfg.ground(),
            inbox: crate::actor::inbox::InboxLimits {
                per_player: cfg.inbox_per_player,
                total: cfg.inbox_total,
            },
            scripts: (cfg.scripts_per_actor, cfg.scripts_per_zone),
        },
        Arc::new(world),
        out_tx,
        handles,
    );
    registry.set_watchdog(crate::actor::watchdog::Thresholds {
        stuck_ms: cfg.stuck_tick_ms,
        give_up_ms: cfg.give_up_tick_ms,
    });
    // The tick watchdog runs here, on the system's arbiter (the link's), never on a zone
    // arbiter: a stuck zone cannot stop it.
    let reg = registry.clone();
    let every = Duration::from_millis((cfg.stuck_tick_ms / 4).clamp(25, 250));
    actix::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last = std::time::Instant::now();
        loop {
            tick.tick().await;
            let gap = last.elapsed();
            last = std::time::Instant::now();
            if gap > (every * 4).max(Duration::from_secs(1)) {
                // The watchdog itself was held up: the whole process was (SIGSTOP, a VM
                // paused, swapping), not one instance. Every instance gets a look's time
                // to tick before any is judged.
                tracing::warn!(
                    gap_ms = gap.as_millis(),
                    "the tick watchdog was held up (the process paused?): skipping a look"
                );
                continue;
            }
            reg.watchdog_check();
        }
    });
    let (shutdown, shutdown_rx) = watch::channel(false);
    if let Some(addr) = cfg.admin_listen {
        let reg = registry.clone();
        let hooks = cfg.test_hooks;
        actix::spawn(async move {
            match crate::admin::serve(addr, reg, hooks).await {
                Ok(bound) => {
                    tracing::info!(
                        "zone node admin on http://{bound} (/healthz, /readyz, /metrics)"
                    )
                }
                Err(e) => tracing::error!(%addr, error = %e, "admin endpoint could not bind"),
            }
        });
    }
    let link = actix::spawn(link::run(cfg, registry.clone(), out_rx, shutdown_rx));
    NodeHandle {
        registry,
        shutdown: Arc::new(shutdown),
        link,
        arbiters,
    }
}
