//! The gateway's tests: sessions, the store, the admin endpoint and API, the CLI, scripts' storage and a gateway with in-process zone nodes (one binary: one link).

mod account_cli;
mod admin;
mod admin_api;
mod cluster;
mod healthcheck;
mod scripts;
mod session;
mod store;
