//! Gateway: terminates client QUIC connections and routes each session to its zone actor.
//!
//! * [`session`]: the pure, sans-IO login state machine (reference §5, V1 hardening) and the
//!   in-memory [`session::AccountBook`].
//! * [`store`]: SQLite (WAL) persistence with migrations and a batching writer thread.
//! * [`accounts_dat`]: a parser for Realm Crafter's `Accounts.dat` (reference §10).

pub mod accounts_dat;
pub mod session;
pub mod store;
