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
//!   receive [`Incoming`] packets from both, close with a [`CloseCode`];
//!   [`Connection::next_input_at`] tells when to send the next update so that it is in the
//!   next broadcast ([`pacer`]: the broadcast clock learnt from the datagrams).
//! - [`login`]: the menu flow as typed calls on [`Connection`]: [`Connection::create_account`],
//!   [`Connection::login`], [`Connection::fetch_catalogue`], [`Connection::create_character`],
//!   [`Connection::fetch_character`], [`Connection::delete_character`],
//!   [`Connection::start_game`].
//! - [`event`]: typed [`Event`]s ([`Connection::next_event`]: actor appeared, moved, gone,
//!   died; stats, XP, gold; chat; area changed; kicked; items, trade windows) and typed actions
//!   ([`Connection::move_to`], [`Connection::attack`], [`Connection::chat`],
//!   [`Connection::command`], [`Connection::right_click`], [`Connection::dismount`],
//!   [`Connection::jump`]).
//! - [`items`]: the view of the player's own items, gold, the ground and the trade window
//!   ([`Items`], [`Connection::items`]; fed by the login blocks and [`Connection::next_event`]),
//!   and the item actions: [`Connection::pick_up`], [`Connection::drop_item`],
//!   [`Connection::answer_offer`], [`Connection::swap_items`], [`Connection::merge_items`],
//!   [`Connection::use_item`], [`Connection::eat`], [`Connection::set_action_bar`], the
//!   trade ([`Connection::trade_invite`], [`Connection::trade_accept_invite`],
//!   [`Connection::update_trading`], [`Connection::accept_trade`],
//!   [`Connection::cancel_trade`]), shops ([`Connection::trade_with`],
//!   [`Connection::shop_accept`]) and [`Connection::examine`].
//! - [`spells`]: the ability book ([`Spellbook`], [`Connection::spells`]; fed by the login
//!   blocks and [`Connection::next_event`]) and the ability actions: [`Connection::cast`],
//!   [`Connection::memorise`], [`Connection::unmemorise`].
//! - [`ui`]: script windows and the quest log ([`Ui`], [`Connection::ui`],
//!   [`Connection::quests`]): dialogs are opened and their text acknowledged as Realm
//!   Crafter's client does; the player answers with [`Connection::choose`] and
//!   [`Connection::answer_input`].
//! - [`clock`]: the game clock from the login block `"E"`, resynced by `/time` replies
//!   ([`Connection::game_time`], [`SdkClock`]).
//! - [`verify`]: the certificate check ([`Verify`]): development mode, a pinned SHA-256
//!   fingerprint, or a root store.
//! - [`error`]: [`ClientError`], [`CloseCode`], [`CloseReason`].
//!
//! # Example
//!
//! ```no_run
//! use client::{CloseCode, Connection, Event, Verify};
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
//! // Step forward, greet the zone, and watch the world until an NPC comes into view.
//! conn.move_to(start.area.x + 1.5, start.area.y, start.area.z, false)?;
//! conn.chat("hello").await?;
//! loop {
//!     match conn.next_event().await? {
//!         Event::ActorMoved { runtime_id, x, z, .. } if runtime_id == start.runtime_id => {
//!             println!("the server has me at {x}, {z}");
//!         }
//!         Event::ActorAppeared { runtime_id, name, human: false, .. } => {
//!             println!("{name} ({runtime_id}) is here; attacking");
//!             conn.attack(runtime_id).await?;
//!             break;
//!         }
//!         Event::Chat { text, .. } => println!("chat: {text}"),
//!         Event::AreaChanged { area, .. } => println!("now in {area}"),
//!         _ => {}
//!     }
//! }
//! conn.close(CloseCode::Normal).await;
//! # Ok(())
//! # }
//! ```
//!
//! # Non-goals
//! No world state is kept (no actor table): callers see packets and decide. The
//! exceptions are the player's own items, gold and trade window ([`Items`]), which bots need
//! to act on items at all, and the game clock ([`Connection::game_time`]).
//! Reconnection is the caller's business: a [`Connection`] is one QUIC connection.
#![warn(missing_docs)]

pub mod clock;
pub mod conn;
mod enet;
pub use enet::{EnetCounts, EnetEndpoint};
pub mod error;
pub mod event;
pub mod items;
pub mod login;
pub mod pacer;
pub mod spells;
pub mod ui;
pub mod verify;

pub use clock::SdkClock;
pub use conn::{
    Channel, CompactRefused, ConnectOptions, Connection, ConnectionStats, DEFAULT_PORT, Incoming,
    Profile, SOCKET_BUFFER, Transport, client_endpoint,
};
pub use error::{ClientError, CloseCode, CloseReason};
pub use event::Event;
pub use items::{GroundItem, Held, Items, TradeState, Wearer};
pub use login::{Catalogue, CharacterSheet, Environment, GameStart, LoginError, NewCharacter};
pub use spells::{BookSpell, Spellbook};
pub use ui::{Bar, Dialog, InputPrompt, Quest, Ui};
pub use verify::{ALPN, PinParseError, Verify, parse_pin, sha256_fingerprint};
