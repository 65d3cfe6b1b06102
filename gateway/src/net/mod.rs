//! The QUIC shells around the sans-IO cores: [`client`] for players (ALPN `rc/1`), [`node`]
//! for zone nodes (ALPN `rc-internal/1`).

pub mod client;
pub mod node;
