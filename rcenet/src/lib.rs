//! ENet **1.1** — the protocol of Realm Crafter's `RCEnet.dll` — in pure safe Rust, sans-IO,
//! client and server roles.
//!
//! A [`Host`] owns peer slots and is driven entirely by its caller: datagrams in through
//! [`Host::handle_datagram`], time in through `now` (milliseconds, any origin, never going
//! back), datagrams out through [`Host::poll_transmit`], events out through
//! [`Host::poll_event`], timers through [`Host::poll_timeout`] / [`Host::handle_timeout`].
//! After every `handle_*`, `send`, `connect` or `disconnect*` call, drain `poll_transmit`
//! and then `poll_event`. There are no sockets, clocks or threads here.
//!
//! The wire format (spec §3) lives in [`wire`] and is public for tests and fuzzing. ENet 1.3
//! (rusty_enet, Debian's libenet) does not interoperate with this protocol.
//!
//! # Deliberate differences from stock ENet 1.1 (server side)
//! 1. **A resent VERIFY_CONNECT is acknowledged implicitly.** A 1.1 client treats a
//!    duplicate VERIFY_CONNECT as an error and never ACKs it, so a lost ACK of the first one
//!    would leave a stock server waiting. Here, in ACKNOWLEDGING_CONNECT, the client's first
//!    valid datagram addressed to the slot with its session value counts as that ACK: the
//!    peer becomes Connected (a `Connect` event), then the datagram's commands are
//!    processed. A retransmitted VERIFY_CONNECT never has other commands after it.
//! 2. **A resent CONNECT is answered at once.** The 1.1 client (`RCE_Connect`) gives up
//!    5 s after CONNECT; a stock server ignores the resent CONNECT and relies on its own
//!    backed-off retransmission (0.5, 1.5, 3.5 s ...). Here a CONNECT from the same address
//!    and session while the slot is still half-open puts the VERIFY_CONNECT out again now.
//!
//! Also: half-open slots are capped in total and per network and expire after
//! `connect_timeout_ms` (no event); held early packets and fragment buffers are bounded per
//! peer; every peer the application knows gets its own `Disconnect` event. A CONNECT the
//! half-open caps would refuse is answered statelessly with a cookie in the VERIFY_CONNECT's
//! sentTime (`HostConfig::cookies`, keyed by `HostConfig::cookie_secret`, which the caller
//! must set), so a flood cannot lock real clients out. See
//! `docs/rcenet.md` for the full list.
//!
//! # Layout
//! - [`wire`]: header, command header, the eleven commands; decode and encode.
//! - `host`: slots, intake checks, handshake, timers, transmit scheduling.
//! - `peer`: one connection's queues, sequencing, reassembly, ACKs, RTT, retransmission.
//! - `seq`: 16-bit sequence comparison with ENet's wrap rule.
//! - `cookie`: SipHash-2-4 and the stateless handshake cookies.
//! - [`HostConfig`], [`Event`], [`Stats`], errors.
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]
#![warn(missing_docs)]

mod config;
mod cookie;
mod error;
mod event;
#[cfg(test)]
mod golden;
mod host;
mod peer;
mod seq;
mod stats;
pub mod wire;

pub use config::HostConfig;
pub use error::{ConnectError, SendError};
pub use event::{DisconnectReason, Event, PeerId, PeerState, Transmit};
pub use host::Host;
pub use stats::{PeerTraffic, Stats};
