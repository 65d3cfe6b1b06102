//! Gateway: terminates client QUIC connections and routes each session to its zone actor.
//!
//! * [`session`]: the pure, sans-IO login state machine (reference §5, V1 hardening) and the
//!   in-memory [`session::AccountBook`].
//! * [`store`]: SQLite (WAL) persistence with migrations and a batching writer thread.
//! * [`accounts_dat`]: a parser for Realm Crafter's `Accounts.dat` (reference §10).
//! * [`chat`]: the sans-IO router of the chat commands that reach beyond one zone (reference
//!   §4.7: `/yell`, `/pm`, `/g`, `/gm`, `/allplayers`, `/kick`, `/warpother`, `/ignore`).
//! * [`admin`]: the admin HTTP endpoint (`/healthz`, `/metrics`, `/cluster`).
//! * [`config`]: the typed configuration (file, `GATEWAY_*` variables, flags).
//! * [`tls`]: the certificate (self-signed on first start, kept in the data directory).
//! * [`directory`]: the placement directory with fencing generations (pure).
//! * [`script_store`]: the cluster's script files and super globals, and the answers to the
//!   zones' script store requests (pure).
//! * [`control`]: the control plane (placement, attach, handoffs, node loss, shutdown) as a
//!   pure state machine: `handle(now, event) -> actions`.
//! * [`hub`]: the task that drives the control plane and routes between sessions
//!   and zone nodes.
//! * [`net`]: the QUIC shells: the client endpoint and the internal endpoint.
//! * [`server`]: starting and stopping the whole gateway (and the embedded zone node of
//!   `--standalone`).
//! * [`updates`]: the update list answered to `P_FetchUpdateFiles`, the update host
//!   (`update_listen`) and the maintenance lock (Realm Crafter's "lock updates server").

pub mod accounts_dat;
pub mod admin;
pub mod chat;
pub mod config;
pub mod console;
pub mod control;
pub mod directory;
pub mod edge;
pub mod hub;
pub mod net;
pub mod party;
pub mod script_import;
pub mod script_store;
pub mod server;
pub mod session;
mod standalone;
pub mod store;
pub mod tls;
pub mod updates;

/// A mutex's guard, a poisoned one recovered (every change made under the gateway's locks
/// is one call, so what a panicking holder left is whole).
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
