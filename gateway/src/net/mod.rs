//! The network shells around the sans-IO cores: [`client`] for players on QUIC (ALPN
//! `rc/1`), [`enet`] for Realm Crafter's own clients on RCEnet (ENet 1.1), [`node`] for zone
//! nodes (ALPN `rc-internal/1`), [`relay`] for the clients of edge gateways on the same
//! endpoint (ALPN `rc-edge/1`); [`udp`] batches the RCEnet hosts' datagrams.

pub mod client;
#[doc(alias = "RCEnet")]
pub mod enet;
pub mod node;
pub mod relay;
pub mod udp;

/// The next connection attempt, or `None` once the endpoint closed or `shutdown` turned
/// true (the accept loop of both endpoints).
async fn next_incoming(
    endpoint: &quinn::Endpoint,
    shutdown: &mut tokio::sync::watch::Receiver<bool>,
) -> Option<quinn::Incoming> {
    loop {
        tokio::select! {
            i = endpoint.accept() => return i,
            r = shutdown.changed() => {
                if r.is_err() || *shutdown.borrow() {
                    return None;
                }
            }
        }
    }
}
