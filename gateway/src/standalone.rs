//! `--standalone`: a zone node embedded in the gateway's process, on its own thread and
//! actix system, registered over loopback like any other node. The only place the gateway
//! uses the `zone-node` crate (ARCHITECTURE.md, invariants; the tidy test checks it).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use shared::content::World;
use tokio::sync::{oneshot, watch};

use crate::config::GatewayConfig;
use crate::server::StartError;

/// The embedded zone node of `--standalone`.
pub(crate) struct Embedded {
    drain: Arc<watch::Sender<bool>>,
    done: oneshot::Receiver<()>,
    thread: std::thread::JoinHandle<()>,
}

impl Embedded {
    /// Drains the node (it saves its players) within `limit`, then joins its thread.
    pub(crate) async fn stop(self, limit: Duration) {
        let _ = self.drain.send(true);
        if tokio::time::timeout(limit, self.done).await.is_err() {
            tracing::warn!("the embedded zone node did not drain in time");
        }
        let thread = self.thread;
        let _ = tokio::task::spawn_blocking(move || thread.join()).await;
    }
}

/// The embedded node's configuration: everything from the gateway's.
fn embedded_config(
    cfg: &GatewayConfig,
    internal: SocketAddr,
    pin: &str,
) -> zone_node::config::NodeConfig {
    let gateway_addr = if internal.ip().is_unspecified() {
        SocketAddr::from(([127, 0, 0, 1], internal.port()))
    } else {
        internal
    };
    zone_node::config::NodeConfig {
        gateway_addr: gateway_addr.to_string(),
        gateway_server_name: "gateway".into(),
        node_id: "embedded".into(),
        advertised_addr: gateway_addr.to_string(),
        bind_addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        world: cfg.world.clone(),
        cluster_secret: cfg.cluster_secret.clone(),
        heartbeat_ms: cfg.heartbeat_ms,
        persist_every_ms: cfg.checkpoint_ms,
        broadcast_ms: cfg.broadcast_ms,
        drain_timeout_ms: cfg.shutdown_timeout_ms,
        insecure_skip_verify: false,
        gateway_cert_sha256: Some(pin.to_owned()),
        ..zone_node::config::NodeConfig::default()
    }
}

pub(crate) fn start(
    cfg: &GatewayConfig,
    internal: SocketAddr,
    pin: &str,
    world: World,
    zone_metrics: &std::sync::OnceLock<crate::hub::ExtraMetrics>,
) -> Result<Embedded, StartError> {
    let node_cfg = embedded_config(cfg, internal, pin);
    node_cfg
        .validate()
        .map_err(|e| StartError::Node(e.to_string()))?;
    let (trigger_tx, trigger_rx) = std::sync::mpsc::channel();
    let (done_tx, done) = oneshot::channel();
    let thread = std::thread::Builder::new()
        .name("embedded-zone-node".into())
        .spawn(move || {
            let system = actix::System::new();
            let r = system.block_on(async move {
                let handle = zone_node::node::start(node_cfg, world);
                let _ = trigger_tx.send((handle.drain_trigger(), handle.registry.clone()));
                handle.join().await
            });
            match r {
                Ok(exit) => tracing::info!(?exit, "embedded zone node stopped"),
                Err(e) => tracing::error!(error = %e, "embedded zone node failed"),
            }
            let _ = done_tx.send(());
        })
        .map_err(|e| StartError::Node(e.to_string()))?;
    let (drain, registry) = trigger_rx
        .recv_timeout(Duration::from_secs(10))
        .map_err(|_| StartError::Node("did not start".into()))?;
    // The node's metrics on the gateway's `/metrics` (the node has no endpoint of its own).
    let _ = zone_metrics.set(Arc::new(
        move |t: &mut shared::metrics_text::MetricsText| {
            zone_node::admin::render_zone(t, &registry);
        },
    ));
    Ok(Embedded {
        drain,
        done,
        thread,
    })
}
