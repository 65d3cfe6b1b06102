//! Operations plumbing both binaries use: tracing and its OTLP export ([`telemetry`]),
//! logging ([`logging`]), the health probe ([`probe`]), the process metrics ([`process`]),
//! OS randomness ([`random`]) and the shutdown signal ([`shutdown_signal`]).
//!
//! Its own crate so that the gateway depends on `zone-node` only to embed a node
//! (`--standalone`), not for its plumbing (ARCHITECTURE.md, invariants; checked by the
//! tidy test).

pub mod logging;
pub mod probe;
pub mod process;
pub mod random;
pub mod telemetry;

/// Wait for SIGTERM or SIGINT.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
