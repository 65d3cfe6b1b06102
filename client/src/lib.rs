//! Client SDK: speaks Realm Crafter's packets to the gateway over QUIC, following the
//! client contract of `docs/protocol.md` (transport.md).
//!
//! Used by the gateway's integration tests, by the `rcclient` tool for manual checks and,
//! later, by the bot swarm. It is a thin async shell over `shared`: the packet codecs
//! ([`shared::proto`]), the framing ([`shared::frame`]) and the password hash
//! ([`shared::wire::md5_hex`]) all live there.
//!
//! # Layout
//! - [`conn`]: [`Connection`]: connect (quinn, TLS 1.3, ALPN `rc/1`, datagrams, keep-alive),
//!   send packets as frames on the one reliable stream and `P_StandardUpdate` as datagrams,
//!   receive [`Incoming`] packets from both, close with a [`CloseCode`].
//! - [`login`]: the menu flow as typed calls on [`Connection`]: [`Connection::create_account`],
//!   [`Connection::login`], [`Connection::fetch_catalogue`], [`Connection::create_character`],
//!   [`Connection::fetch_character`], [`Connection::delete_character`],
//!   [`Connection::start_game`].
//! - [`event`]: typed [`Event`]s ([`Connection::next_event`]: actor appeared, moved, gone,
//!   died; stats, XP, gold; chat; area changed; kicked) and typed actions
//!   ([`Connection::move_to`], [`Connection::attack`], [`Connection::chat`],
//!   [`Connection::command`], [`Connection::right_click`], [`Connection::dismount`],
//!   [`Connection::jump`]).
//! - [`verify`]: the certificate check ([`Verify`]): development mode, a pinned SHA-256
//!   fingerprint, or a root store.
//! - [`error`]: [`ClientError`], [`CloseCode`], [`CloseReason`].
//!
//! # Example
//!
//! ```no_run
//! use std::time::Duration;
//! use client::{Channel, CloseCode, Connection, Verify};
//! use shared::proto::{ServerPacket, StandardUpdateC2S};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let pin = Verify::pin_from_hex("3f2a...the fingerprint the gateway logs...")?;
//! let mut conn = Connection::connect("127.0.0.1:25000".parse()?, "localhost", pin).await?;
//!
//! let characters = conn.login("bob", "secret").await?;
//! let catalogue = conn.fetch_catalogue().await?;
//! println!("{} characters, {} templates", characters.len(), catalogue.actors.len());
//!
//! let start = conn.start_game(0).await?;
//! println!("I am RuntimeID {} in {}", start.runtime_id, start.area.area);
//!
//! conn.send_update(&StandardUpdateC2S {
//!     x: start.area.x,
//!     z: start.area.z,
//!     y: start.area.y,
//!     dest_x: start.area.x + 5.0,
//!     dest_z: start.area.z,
//!     ..Default::default()
//! })?;
//! let update = conn
//!     .recv_until(|p| p.channel == Channel::Datagram, Duration::from_secs(2))
//!     .await?;
//! if let ServerPacket::StandardUpdate(u) = update.packet {
//!     println!("actor {} is at {}, {}", u.runtime_id, u.x, u.z);
//! }
//! conn.close(CloseCode::Normal).await;
//! # Ok(())
//! # }
//! ```
//!
//! # Non-goals
//! No game state is kept (no actor table, no inventory): callers see packets and decide.
//! Reconnection is the caller's business: a [`Connection`] is one QUIC connection.
#![warn(missing_docs)]

pub mod conn;
pub mod error;
pub mod event;
pub mod login;
pub mod verify;

pub use conn::{Channel, ConnectOptions, Connection, ConnectionStats, DEFAULT_PORT, Incoming};
pub use error::{ClientError, CloseCode, CloseReason};
pub use event::Event;
pub use login::{Catalogue, CharacterSheet, Environment, GameStart, LoginError, NewCharacter};
pub use verify::{ALPN, PinParseError, Verify, parse_pin, sha256_fingerprint};
