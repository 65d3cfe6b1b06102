//! The Realm Crafter wire protocol, its QUIC framing and the game content model.
//!
//! Everything here is plain, synchronous, deterministic Rust: bytes and values in,
//! bytes and values out. There is no runtime, no clock and no socket in this crate;
//! the only file access lives in [`content::fs`] (and reading a config file in [`settings`]), a thin shell over the pure parsers.
//!
//! # Layout
//! - [`wire`]: encoding primitives (little-endian integers, f32, length-prefixed strings),
//!   `ClampWorldCoord` / `ClampSaneFloat`, and the decode error type.
//! - [`frame`]: `[len u16][type u8][payload]` framing for the reliable stream and datagrams.
//! - [`proto`]: typed packets, client→server and server→client.
//! - [`internal`]: the gateway ↔ zone-node protocol (envelope, codec, handshake proofs,
//!   datagram header), pure types and a sans-IO codec.
//! - [`content`]: the typed `World` (areas, templates, items, factions ...), its loaders
//!   for Realm Crafter's binary `Server Data` and for the native TOML format.
//! - [`compact`]: the compact position profile (`rc-compact/1`): quantised, delta-coded
//!   `P_StandardUpdate` datagrams, sans-IO encoder and decoder.
//! - [`npos`]: Sauerbraten's `N_POS` position message, bit-exact (encoder and decoder).
//! - [`settings`]: layered configuration plumbing (file, environment, flags) for the
//!   binaries.
#![warn(missing_docs)]

pub mod clock;
#[doc(alias = "rc-compact/1")]
pub mod compact;
pub mod content;
pub mod frame;
pub mod internal;
pub mod metrics_text;
#[doc(alias = "N_POS")]
pub mod npos;
pub mod proto;
pub mod settings;
pub mod wire;
