//! `swarm`: N bots against a gateway, for sizing a cluster and finding bugs under load.
//! Each bot creates its account and character, enters the world, wanders at Realm
//! Crafter's input rate, chases and attacks NPCs, walks through portals (or `/warp`s, for
//! DM accounts), chats, and measures what it sees. At the end one JSON summary: bots connected and failed, errors
//! by kind (the server's protocol faults apart from the bots' own trouble), moves sent,
//! updates received, handoffs, bytes per second per bot, the latency from a move to the
//! bot's own authoritative position coming back, from a portal entry or `/warp` to
//! `P_ChangeArea`, the longest time a bot's own position did not come back within one
//! area (`own_update_gap`, and `never_own_update`: a lost broadcast shows here, not in the
//! latency, which only counts the updates that came), and, when a zone node is lost, how
//! long a bot's position stopped coming back before it was put back into the world (a
//! `P_ChangeArea` it did not ask for).
//!
//! With `--item-chance` a bot also plays with items when idle ([`items`]): picks up,
//! drops, equips, eats, trades with another bot and buys and sells at a shop NPC; the
//! summary's `items` object counts what happened and the bots' items and gold at the start
//! and the end.
//!
//! With `--cast-chance` a bot also casts its abilities (the demo world teaches Fireball
//! and Mend at the first login): at the nearest NPC in sight, or at no one; the summary's
//! `spells` object counts the casts, the recharge refusals and the actor effects it was
//! given.
//!
//! With `--quest-chance` a bot is a quest bot ([`quests`]): it walks to the quest giver
//! (the demo's Elder Maren, template 9), right-clicks it, chooses option 1 on every list of
//! options of that dialog, hunts the goblins (template 3) while the quest is in progress
//! and goes back to the giver to complete it; the summary's `quests` object counts the
//! dialogs, the quests accepted and completed. Every bot opens and acknowledges script
//! dialogs through the SDK, as Realm Crafter's client does.
//!
//! Density: by default every bot wanders within `--wander-radius` (25) of where it
//! arrived, so everyone in an area sees everyone (the densest case). `--spread R` sends
//! each bot first to its own random place within R of its arrival point, as players spread
//! over a large world; `--settle S` leaves the first S seconds after the ramp out of every
//! figure, while they get there. `updates_per_s_per_bot` over the broadcast rate is how
//! many actors a bot has in view.

use std::collections::BTreeMap;
use std::io::IsTerminal as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod items;
mod quests;

use anyhow::{Context as _, Result, bail};
use clap::Parser;
use client::{
    ClientError, CloseCode, ConnectOptions, Connection, LoginError, NewCharacter, Verify, Wearer,
};
use rand::rngs::SmallRng;
use rand::{Rng as _, SeedableRng as _};
use shared::content::World;
use shared::frame::NO_STREAM_IN_TIME;
use shared::proto::{ServerPacket, StandardUpdateC2S};
use tokio::time::Instant;

/// Largest step per update that the server's speed check always accepts (units).
const STEP: f32 = 1.8;
/// Step per update while running out to a `--spread` home (22.5 units/s at 5 Hz): within
/// the speed check for the demo character (Speed 60 of 100: 33 units per 200 ms), so only
/// an update that reaches the server in the same tick as the one before it is refused.
const TRAVEL_STEP: f32 = 4.5;
/// Realm Crafter's portal re-entry lock after arriving through it.
const PORTAL_LOCK: Duration = Duration::from_secs(36);
/// Moves remembered while waiting for their echo.
const PENDING_MOVES: usize = 64;

#[derive(Debug, Parser)]
#[command(
    name = "swarm",
    version,
    about = "Runs N Realm Crafter bots against a gateway and prints what they measured."
)]
struct Args {
    /// The gateway's client address; several, comma-separated (an active gateway and its
    /// standbys): a bot whose gateway is lost logs in again through the next one.
    #[arg(long, default_value = "127.0.0.1:25000", value_delimiter = ',')]
    gateway: Vec<SocketAddr>,
    /// The bots' transport: `quic` (the gateway's `--gateway` address), `enet` (RCEnet,
    /// ENet 1.1 as Realm Crafter's own client: the gateway's `--enet` address), or `mixed`
    /// (every other bot on each).
    #[arg(long, default_value = "quic")]
    transport: TransportChoice,
    /// With several gateways: a bot that hears nothing from its gateway for this many
    /// seconds counts it lost and logs in through the next (QUIC's idle timeout).
    #[arg(long, default_value_t = 5.0)]
    gateway_lost_after: f64,
    /// With several gateways: a bot that came back through another gateway than its
    /// first logs out after this many seconds and in again through its first, as players
    /// leave and new ones arrive through a load balancer that spreads them (0: never; a
    /// long fault run otherwise ends with every bot on one gateway).
    #[arg(long, default_value_t = 0.0)]
    return_home: f64,
    /// The gateway's RCEnet address (default: `--gateway`'s host, port 25002); several,
    /// comma-separated, in `--gateway`'s order.
    #[arg(long, value_delimiter = ',')]
    enet: Vec<SocketAddr>,
    /// Bots per UDP socket: a QUIC endpoint, or an RCEnet endpoint (one ENet host and one
    /// task for all its bots). Each socket has a [`client::SOCKET_BUFFER`] receive buffer:
    /// a broadcast tick's burst for all its bots must fit. 1: a socket per bot, as players'
    /// machines have.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=4096))]
    bots_per_socket: u32,
    /// Number of bots.
    #[arg(long, default_value_t = 10)]
    bots: u32,
    /// How long the bots play once all have started (seconds).
    #[arg(long, default_value_t = 30.0)]
    duration: f64,
    /// Spread the bots' starts over this many seconds.
    #[arg(long, default_value_t = 0.0)]
    ramp: f64,
    /// Print the summary as one JSON object on stdout.
    #[arg(long)]
    json: bool,
    /// SHA-256 fingerprint of the gateway's certificate (hex); without it the certificate
    /// is not checked (development mode).
    #[arg(long, value_name = "HEX")]
    pin: Option<String>,
    /// The world the gateway serves (native or Realm Crafter `Server Data`), to find the
    /// portals; default the built-in demo world.
    #[arg(long)]
    world: Option<PathBuf>,
    /// Position updates per second per bot (Realm Crafter's client: 5).
    #[arg(long, default_value_t = 5.0)]
    input_hz: f64,
    /// Pace each bot's updates to the broadcasts it receives, so that each arrives just
    /// before a broadcast leaves (`Connection::next_input_at`; docs/protocol.md, "Pacing
    /// input"), or send them on the bot's own clock as Realm Crafter's client does. `auto`:
    /// paced on the compact profile (what its specification recommends and the SDK does),
    /// not on rc/1 (Realm Crafter's client).
    #[arg(long, value_enum, default_value_t = Pacing::Auto)]
    input_pacing: Pacing,
    /// Account and character name prefix (default: random per run).
    #[arg(long)]
    prefix: Option<String>,
    /// Log in to existing accounts `PREFIX0..PREFIXn` (password `swarm`) with one character
    /// each, instead of creating them.
    #[arg(long)]
    existing: bool,
    /// How far from its arrival point a bot wanders (units). The default keeps every bot
    /// in view of every other (Realm Crafter's update distance is 500), the densest case;
    /// a larger radius spreads them, as players spread over a real world.
    #[arg(long, default_value_t = 25.0)]
    wander_radius: f32,
    /// On arriving in an area, a bot first runs to a random point within this many units
    /// of its arrival point (uniform over the disc) and wanders around that point from
    /// then on: players spread over a large world. 0: no spreading.
    #[arg(long, default_value_t = 0.0)]
    spread: f32,
    /// Seconds after the ramp that are not measured (latencies, own-update gaps, bytes
    /// per bot): time for `--spread` bots to reach their places.
    #[arg(long, default_value_t = 0.0)]
    settle: f64,
    /// Chance that a bot's next destination is a portal rather than a wander point.
    #[arg(long, default_value_t = 0.3)]
    portal_chance: f64,
    /// Chance that a bot's next destination is an NPC in sight, which it chases and
    /// attacks for a few seconds.
    #[arg(long, default_value_t = 0.3)]
    fight_chance: f64,
    /// Chance per idle second that a bot does something with items: picks up an item it
    /// sees on the ground (walking to it), drops one, equips a backpack weapon or armour,
    /// eats a potion, trades a stack with another bot nearby, or buys and sells at a shop
    /// NPC nearby (the demo world's Meadow merchant). 0: none (no catalogue or character
    /// fetch either).
    #[arg(long, default_value_t = 0.0)]
    item_chance: f64,
    /// With `--item-chance`: only the item actions that move items between players and the
    /// ground (pick up, drop, equip, trade), never the world's sources and sinks (eating,
    /// shops), so the items and gold over the bots and the ground stay constant
    /// (`gateway economy` reads them from the store).
    #[arg(long)]
    closed_economy: bool,
    /// Chance per second that a bot casts one of its abilities that it predicts has
    /// recharged (`P_SpellUpdate "F"`): half the time at the nearest NPC within 60 units,
    /// else at no one (the demo's Mend then heals the caster). 0: none.
    #[arg(long, default_value_t = 0.0)]
    cast_chance: f64,
    /// Chance that a bot is a quest bot: it walks to the nearest quest giver in view
    /// (actor template 9, the demo's Elder Maren), right-clicks it and chooses option 1 on
    /// every list of options of its dialog; while the quest is in progress it hunts the
    /// goblins in view (template 3), and when the quest log says "Return to ..." it talks
    /// to the giver again to complete it. 0: none.
    #[arg(long, default_value_t = 0.0)]
    quest_chance: f64,
    /// Seconds between a bot's chat lines (0: none).
    #[arg(long, default_value_t = 20.0)]
    chat_every: f64,
    /// A flood beside the play (issue 23): this many of the bots (the first ones) also
    /// send a `/yell` line with every move. 0: none. The summary's `attack` object counts
    /// what was sent and answered.
    #[arg(long, default_value_t = 0)]
    attack_yellers: u32,
    /// A flood beside the play: this many tasks guess the first bot's password in a loop,
    /// each on a connection of its own, connecting again whenever the gateway closes it
    /// (from 127.0.0.2 when the gateway is on loopback: another network than the bots').
    #[arg(long, default_value_t = 0)]
    attack_guessers: u32,
    /// A flood beside the play (issue 36): this many players of their own flood the zone
    /// with `--flood-kind` frames as fast as their stream carries them, logging in again
    /// whenever the gateway disconnects them.
    #[arg(long, default_value_t = 0)]
    attack_flooders: u32,
    /// What the flooders send: `equip` (the starter sword in and out of the weapon slot)
    /// or `jump`.
    #[arg(long, default_value = "equip")]
    flood_kind: String,
    /// `/warp` back and forth between these two `AREA[#INSTANCE]`s every `--warp-every`
    /// seconds instead of walking through portals (the accounts must be DMs).
    #[arg(long, value_name = "A,B")]
    warp: Option<String>,
    /// Seconds between warps.
    #[arg(long, default_value_t = 1.0)]
    warp_every: f64,
    /// RNG seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Position profile: `rc` (ALPN rc/1, Realm Crafter's `P_StandardUpdate` byte for byte)
    /// or `compact` (ALPN rc-compact/1, quantised delta-coded positions).
    #[arg(long, default_value = "rc")]
    profile: client::Profile,
}

/// `--transport`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TransportChoice {
    Quic,
    Enet,
    Mixed,
}

impl std::str::FromStr for TransportChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "quic" => Ok(Self::Quic),
            "enet" | "rcenet" => Ok(Self::Enet),
            "mixed" => Ok(Self::Mixed),
            _ => Err(format!("unknown transport {s:?} (quic, enet or mixed)")),
        }
    }
}

impl Args {
    /// The first gateway's client address.
    fn gateway(&self) -> SocketAddr {
        self.gateway
            .first()
            .copied()
            .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 25000)))
    }

    /// Bot `index`'s transport and the address it connects to on its `turn`th login (the
    /// gateways in turn).
    fn transport_of(&self, index: u32, turn: usize) -> (client::Transport, SocketAddr) {
        let enet = match self.transport {
            TransportChoice::Quic => false,
            TransportChoice::Enet => true,
            TransportChoice::Mixed => index % 2 == 1,
        };
        let n = self.gateway.len().max(1);
        let gateway = self
            .gateway
            .get(turn % n)
            .copied()
            .unwrap_or_else(|| self.gateway());
        if enet {
            let addr = self
                .enet
                .get(turn % self.enet.len().max(1))
                .copied()
                .unwrap_or_else(|| SocketAddr::new(gateway.ip(), gateway_enet_port()));
            (client::Transport::Enet, addr)
        } else {
            (client::Transport::Quic, gateway)
        }
    }
}

/// The gateway's default RCEnet port.
const fn gateway_enet_port() -> u16 {
    25_002
}

/// What every bot adds to.
#[derive(Default)]
struct Stats {
    started: AtomicU64,
    connected: AtomicU64,
    in_game: AtomicU64,
    failed: AtomicU64,
    moves: AtomicU64,
    updates: AtomicU64,
    /// `P_StandardUpdate`s received while measuring.
    measured_updates: AtomicU64,
    handoffs: AtomicU64,
    chats: AtomicU64,
    /// `/yell` lines the yellers sent (`--attack-yellers`).
    attack_yells: AtomicU64,
    /// Guesses answered (`"P"`) and refused (closed, code 4), and connections the
    /// guessers made (`--attack-guessers`).
    guesses_answered: AtomicU64,
    guesses_refused: AtomicU64,
    guess_connections: AtomicU64,
    /// Frames the flooders wrote (`--attack-flooders`).
    flood_frames: AtomicU64,
    /// Flooder connections the gateway closed.
    flood_disconnects: AtomicU64,
    attacks: AtomicU64,
    kills: AtomicU64,
    xp_gains: AtomicU64,
    server_moves: AtomicU64,
    bytes_up: AtomicU64,
    bytes_down: AtomicU64,
    /// Datagrams the bots' connections dropped (malformed, or refused by the compact
    /// decoder).
    datagrams_dropped: AtomicU64,
    /// Compact datagrams refused as stale.
    compact_stale: AtomicU64,
    /// Compact datagrams refused: coded against a tick the bot does not have.
    compact_unknown_base: AtomicU64,
    /// Compact datagrams refused as malformed.
    compact_malformed: AtomicU64,
    packets_up: AtomicU64,
    packets_down: AtomicU64,
    /// QUIC ACK frames the bots sent (on their own packets or riding a move).
    acks_up: AtomicU64,
    /// QUIC frames received: ACK, DATAGRAM and STREAM.
    acks_down: AtomicU64,
    datagram_frames_down: AtomicU64,
    stream_frames_down: AtomicU64,
    /// Errors that are the server's fault (malformed packets, protocol closes).
    protocol_errors: Mutex<BTreeMap<String, u64>>,
    /// Everything else (timeouts, refusals, the bot's own load).
    other_errors: Mutex<BTreeMap<String, u64>>,
    move_latency_ms: Mutex<Vec<f64>>,
    handoff_latency_ms: Mutex<Vec<f64>>,
    /// A `P_ChangeArea` the bot did not ask for (its zone node was lost and it was put
    /// back): the gap since its own position last came back.
    recovery_gap_ms: Mutex<Vec<f64>>,
    /// Bots that lost their gateway and logged in again through another (`--gateway A,B`).
    relogins: AtomicU64,
    /// From losing the gateway to being in game again through another, ms.
    relogin_ms: Mutex<Vec<f64>>,
    /// Each loss of a gateway in game: when it was noticed (Unix ms) and the gateway's
    /// address, so a fault run can tell the victims' losses from a survivor's.
    losses: Mutex<Vec<(u64, String)>>,
    /// Each loss a bot came back from: when it was noticed (Unix ms), the gateway lost,
    /// the ms until in game again and the logins it took (a fault run splits them by the
    /// fault that caused them).
    comebacks: Mutex<Vec<(u64, String, f64, u32)>>,
    /// Why a login again failed and was tried once more, by kind (a fault run tells a
    /// comeback that took several logins from one that waited in a single login).
    relogin_errors: Mutex<BTreeMap<String, u64>>,
    /// Bots that logged out of another gateway and in again through their first
    /// (`--return-home`).
    returned_home: AtomicU64,
    /// Per bot that played to the end: the longest time its own position did not come
    /// back within one area (from arriving to the first update, between two, and from the
    /// last to the end). About the broadcast interval when nothing is lost.
    own_update_gap_ms: Mutex<Vec<f64>>,
    /// Each own-update gap over a second: when it ended (Unix ms), how long (ms), the
    /// gateway the bot was on (a fault run tells which fault it followed) and the bot.
    long_gaps: Mutex<Vec<(u64, f64, String, String)>>,
    /// Bots that played to the end without ever seeing their own position.
    never_own_update: AtomicU64,
    /// What `--item-chance` bots did with items.
    items: items::ItemStats,
    /// `--cast-chance`: casts sent.
    casts: AtomicU64,
    /// Casts refused as still recharging ("Ability not yet recharged!").
    casts_refused: AtomicU64,
    /// Actor effects the bots were given (`P_ActorEffect "A"`).
    effects_added: AtomicU64,
    /// Abilities the bots learned in game (`P_KnownSpellUpdate "A"`).
    spells_learned: AtomicU64,
    /// What `--quest-chance` bots did.
    quests: quests::QuestStats,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

impl Stats {
    fn error(&self, e: &BotError) {
        let (map, kind) = match e {
            BotError::Protocol(k) => (&self.protocol_errors, k.clone()),
            BotError::Other(k) => (&self.other_errors, k.clone()),
        };
        *lock(map).entry(kind).or_insert(0) += 1;
    }
}

/// Why a bot stopped.
#[derive(Debug)]
enum BotError {
    /// The server broke the contract.
    Protocol(String),
    /// Anything else.
    Other(String),
}

impl From<ClientError> for BotError {
    fn from(e: ClientError) -> Self {
        match &e {
            ClientError::Decode { ty, .. } => Self::Protocol(format!("undecodable packet {ty}")),
            ClientError::Frame(_) => Self::Protocol("malformed frame".into()),
            _ => match e.server_close_code() {
                // The bot opened its stream and sent its first frame at once; the server
                // not seeing it within its handshake timeout is load (this machine, the
                // swarm's own runtime), not a broken contract.
                Some(CloseCode::ProtocolViolation)
                    if e.server_close_reason() == Some(NO_STREAM_IN_TIME) =>
                {
                    Self::Other(
                        "first frame not received within the server's handshake timeout".into(),
                    )
                }
                Some(CloseCode::ProtocolViolation) => {
                    Self::Protocol("closed by the server: protocol violation".into())
                }
                Some(c) => Self::Other(format!("closed by the server: {c:?}")),
                None if matches!(e, ClientError::Timeout(_)) => Self::Other("timeout".into()),
                None => Self::Other(kind_of(&e.to_string())),
            },
        }
    }
}

impl From<LoginError> for BotError {
    fn from(e: LoginError) -> Self {
        match e {
            LoginError::Client(c) => c.into(),
            other => Self::Other(format!("login: {}", kind_of(&other.to_string()))),
        }
    }
}

/// The first words of an error, as a stable kind.
fn kind_of(s: &str) -> String {
    s.split([':', '(']).next().unwrap_or(s).trim().to_owned()
}

/// A portal a bot can walk into.
#[derive(Clone, Debug)]
struct Portal {
    x: f32,
    y: f32,
    z: f32,
    size: f32,
}

/// Per area (lowercase name): its portals that lead somewhere.
type PortalMap = BTreeMap<String, Vec<Portal>>;

fn portals_of(world: &World) -> PortalMap {
    world
        .areas
        .iter()
        .map(|a| {
            let ps = a
                .portals
                .iter()
                .filter(|p| !p.link_area.is_empty() && p.size > 0.0)
                .map(|p| Portal {
                    x: p.x,
                    y: p.y,
                    z: p.z,
                    size: p.size,
                })
                .collect();
            (a.name.to_lowercase(), ps)
        })
        .collect()
}

/// `--input-pacing`: when a bot sends its position updates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Pacing {
    /// Paced on the compact profile, on its own clock on rc/1.
    Auto,
    /// Always paced to the broadcasts.
    On,
    /// Always on the bot's own clock.
    Off,
}

impl Pacing {
    fn paced(self, profile: client::Profile) -> bool {
        match self {
            Self::Auto => profile == client::Profile::Compact,
            Self::On => true,
            Self::Off => false,
        }
    }
}

/// What one bot needs to play.
struct BotCtx {
    args: Arc<Args>,
    stats: Arc<Stats>,
    portals: Arc<PortalMap>,
    endpoint: quinn::Endpoint,
    /// The RCEnet endpoint of the bot's socket group (when any bot speaks RCEnet).
    enet_endpoint: Option<client::EnetEndpoint>,
    user: String,
    /// The bot's number in the run.
    index: u32,
    /// The run's name prefix (every bot's name starts with it).
    prefix: String,
    /// When measuring starts (after the ramp and `--settle`).
    measure_from: Instant,
    end: Instant,
    seed: u64,
}

fn update(pos: (f32, f32, f32), dest: (f32, f32)) -> StandardUpdateC2S {
    StandardUpdateC2S {
        dest_x: dest.0,
        dest_z: dest.1,
        y: pos.1,
        x: pos.0,
        z: pos.2,
        is_running: 1,
        walking_backward: 0,
    }
}

fn area_name(a: &shared::proto::ChangeArea) -> String {
    String::from_utf8_lossy(a.area.as_bytes()).into_owned()
}

/// `--attack-guessers`: from the end of the ramp to the end of the run, guess `user`'s
/// password over and over on a connection of its own, connecting again when the gateway
/// closes it (the login limit), and count what the gateway answered.
async fn guesser(args: Arc<Args>, stats: Arc<Stats>, user: String, from: Instant, end: Instant) {
    tokio::time::sleep_until(from).await;
    // From another loopback address than the bots' (127.0.0.2 for a gateway on 127.0.0.1):
    // the gateway counts it as a network of its own, as it would an outside attacker.
    let endpoint = match args.gateway() {
        SocketAddr::V4(a) if a.ip().is_loopback() => {
            client::client_endpoint(SocketAddr::from(([127, 0, 0, 2], 0))).ok()
        }
        _ => None,
    };
    let mut n = 0u64;
    while Instant::now() < end {
        let mut opts = ConnectOptions::new(Verify::Insecure);
        opts.reply_timeout = Duration::from_secs(10);
        opts.endpoint = endpoint.clone();
        let Ok(mut c) = Connection::connect_with(args.gateway(), "localhost", opts).await else {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        stats.guess_connections.fetch_add(1, Ordering::Relaxed);
        while Instant::now() < end {
            n += 1;
            match c.login(&user, &format!("guess-{n}")).await {
                Err(LoginError::BadPassword) => {
                    stats.guesses_answered.fetch_add(1, Ordering::Relaxed);
                }
                Err(_) | Ok(_) => {
                    stats.guesses_refused.fetch_add(1, Ordering::Relaxed);
                    break;
                }
            }
        }
        c.close(CloseCode::Normal).await;
    }
}

/// `--attack-flooders`: from the end of the ramp to the end of the run, a player of its own
/// (`user`) writes batches of 1,000 equipment swaps or jumps as fast as its stream takes
/// them, and logs in again whenever the gateway disconnects it (its input budget).
async fn flooder(args: Arc<Args>, stats: Arc<Stats>, user: String, from: Instant, end: Instant) {
    use shared::proto::{ClientPacket, InventoryUpdateC2S, JumpC2S};
    tokio::time::sleep_until(from).await;
    let mut created = false;
    while Instant::now() < end {
        let mut opts = ConnectOptions::new(Verify::Insecure);
        opts.reply_timeout = Duration::from_secs(10);
        let Ok(mut c) = Connection::connect_with(args.gateway(), "localhost", opts).await else {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        if !created {
            let _ = c
                .create_account(&user, "swarm", "flood@example.invalid")
                .await;
        }
        let g = match c.login(&user, "swarm").await {
            Ok(chars) if chars.is_empty() => {
                let t = match c.fetch_catalogue().await {
                    Ok(cat) => cat.playable().next().map(|t| t.id),
                    Err(_) => None,
                };
                let Some(t) = t else { return };
                let ok = c
                    .create_character(&NewCharacter::new(&user, t))
                    .await
                    .is_ok()
                    && c.login(&user, "swarm").await.is_ok();
                if ok { c.start_game(0).await.ok() } else { None }
            }
            Ok(_) => c.start_game(0).await.ok(),
            Err(_) => None,
        };
        let Some(g) = g else {
            c.close(CloseCode::Normal).await;
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        };
        created = true;
        let mut batch = Vec::new();
        for i in 0..1_000u32 {
            let p = if args.flood_kind == "jump" {
                ClientPacket::Jump(JumpC2S {})
            } else {
                let (from, to) = if i % 2 == 0 { (0, 30) } else { (30, 0) };
                ClientPacket::InventoryUpdate(InventoryUpdateC2S::Swap {
                    runtime_id: g.runtime_id,
                    from,
                    to,
                    amount: 0,
                })
            };
            let _ = p.encode_frame(&mut batch);
        }
        while Instant::now() < end && c.close_reason().is_none() {
            if c.send_raw(&batch).await.is_err() {
                break;
            }
            stats.flood_frames.fetch_add(1_000, Ordering::Relaxed);
            // Drain what the server sent, without waiting.
            while let Ok(Ok(_)) = tokio::time::timeout(Duration::ZERO, c.recv()).await {}
        }
        if c.close_reason().is_some() {
            stats.flood_disconnects.fetch_add(1, Ordering::Relaxed);
        }
        c.close(CloseCode::Normal).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Logs in (creating the account first unless `--existing` or `first` is false; a
/// character when the account has none) and enters the game. With `--item-chance`, also fetches the catalogue and the character sheet, so the SDK's
/// view of the items is whole, and returns what the bot needs of the catalogue.
async fn enter(
    ctx: &BotCtx,
    turn: usize,
    first: bool,
) -> Result<(Connection, client::GameStart, Option<items::ItemWorld>), BotError> {
    let verify = match &ctx.args.pin {
        Some(p) => Verify::pin_from_hex(p).map_err(|e| BotError::Other(e.to_string()))?,
        None => Verify::Insecure,
    };
    let mut opts = ConnectOptions::new(verify);
    opts.endpoint = Some(ctx.endpoint.clone());
    opts.enet_endpoint = ctx.enet_endpoint.clone();
    opts.reply_timeout = Duration::from_secs(30);
    if ctx.args.gateway.len() > 1 {
        // A gateway that went silent is noticed in seconds, not at the 30 s default.
        opts.idle_timeout = Duration::from_secs_f64(ctx.args.gateway_lost_after.clamp(1.0, 60.0));
        opts.keep_alive = (opts.idle_timeout / 4).max(Duration::from_millis(250));
    }
    opts.profile = ctx.args.profile;
    // With several gateways, one that does not answer (a standby, a dead one) is passed
    // over for the next, as a client with a list of servers does.
    let tries = ctx.args.gateway.len().max(1);
    let mut k = 0;
    let began = Instant::now();
    let mut c = loop {
        let (transport, addr) = ctx.args.transport_of(ctx.index, turn + k);
        opts.transport = transport;
        match Connection::connect_with(addr, "localhost", opts.clone()).await {
            Ok(c) => break c,
            Err(e) if k + 1 < tries && e.server_close_code().is_none() => k += 1,
            Err(e) => return Err(e.into()),
        }
    };
    ctx.stats.connected.fetch_add(1, Ordering::Relaxed);
    let connected = began.elapsed();
    let password = "swarm";
    // A first login tried again through another gateway asks again: an account the lost
    // gateway created is refused as taken, and the bot logs in to it.
    if !ctx.args.existing && first {
        c.create_account(&ctx.user, password, "bot@example.invalid")
            .await?;
    }
    let mut chars = c.login(&ctx.user, password).await?;
    let mut catalogue = None;
    if chars.is_empty() {
        let cat = c.fetch_catalogue().await?;
        let Some(t) = cat.playable().next().map(|t| t.id) else {
            return Err(BotError::Other("no playable actor template".into()));
        };
        c.create_character(&NewCharacter::new(&ctx.user, t)).await?;
        chars = c.login(&ctx.user, password).await?;
        catalogue = Some(cat);
    }
    let mut world = None;
    if ctx.args.item_chance > 0.0 {
        let cat = match catalogue {
            Some(cat) => cat,
            None => c.fetch_catalogue().await?,
        };
        if let Some(t) = chars.first().and_then(|ch| cat.template(ch.actor_id)) {
            c.items_mut().set_wearer(Wearer::of(t));
        }
        c.fetch_character(0).await?;
        world = Some(items::ItemWorld::of(&cat));
    } else if ctx.args.cast_chance > 0.0 || ctx.args.quest_chance > 0.0 {
        // The ability book and the quest log (the login "S" and "Q" blocks).
        c.fetch_character(0).await?;
    }
    let before_game = began.elapsed();
    let g = c.start_game(0).await?;
    // Where a login again spent its time (a fault run's slow comebacks: RUST_LOG=info).
    if !first {
        tracing::info!(bot = %ctx.user, gateway = %c.remote_address(),
            connect_ms = connected.as_millis(), login_ms = (before_game - connected).as_millis(),
            start_game_ms = (began.elapsed() - before_game).as_millis(), "in game again");
    }
    Ok((c, g, world))
}

/// One bot, from connecting to its final close. With several gateways (`--gateway A,B`),
/// a bot whose connection is lost (not closed for cause) logs in again through the next
/// one, trying them in turn until the run ends.
async fn bot(ctx: BotCtx) {
    ctx.stats.started.fetch_add(1, Ordering::Relaxed);
    let mut turn = 0usize;
    let (mut c, mut g, mut world) = loop {
        match enter(&ctx, turn, true).await {
            Ok(x) => break x,
            // A gateway lost during the first login (killed while the bot was ramping in)
            // is passed over for the next, as a relogin is.
            Err(BotError::Other(e)) if ctx.args.gateway.len() > 1 && Instant::now() < ctx.end => {
                tracing::info!(bot = %ctx.user, error = %e, "gateway lost while logging in: trying the next");
                turn += 1;
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Err(e) => {
                ctx.stats.failed.fetch_add(1, Ordering::Relaxed);
                ctx.stats.error(&e);
                return;
            }
        }
    };
    ctx.stats.in_game.fetch_add(1, Ordering::Relaxed);
    let n = ctx.args.gateway.len().max(1);
    // When to leave a gateway that is not the bot's first (`--return-home`).
    let mut leave_at = None;
    loop {
        // UDP bytes (up, down) when measuring started.
        let mut base = None;
        let played = play(&ctx, &mut c, &g, world.take(), &mut base, leave_at).await;
        count_traffic(&ctx, &c, base);
        if matches!(played, Ok(Played::Left)) {
            // A player leaving: a clean logout, and in again through the first gateway
            // (the next one if that does not answer).
            c.close(CloseCode::Normal).await;
            tokio::time::sleep(Duration::from_secs(1)).await;
            turn = turn.div_ceil(n) * n;
            let again = loop {
                match enter(&ctx, turn, false).await {
                    Ok(x) => break Some(x),
                    Err(e) if Instant::now() < ctx.end => {
                        tracing::info!(bot = %ctx.user, error = ?e, "logging in again through the first gateway failed: once more");
                        tokio::time::sleep(Duration::from_millis(250)).await;
                        turn += 1;
                    }
                    Err(e) => {
                        ctx.stats.error(&e);
                        break None;
                    }
                }
            };
            let Some((c2, g2, w2)) = again else { return };
            ctx.stats.returned_home.fetch_add(1, Ordering::Relaxed);
            (c, g, world) = (c2, g2, w2);
            leave_at = None;
            continue;
        }
        let lost = match played {
            Ok(_) => None,
            Err(BotError::Other(e)) if ctx.args.gateway.len() > 1 && Instant::now() < ctx.end => {
                Some(e)
            }
            Err(e) => {
                ctx.stats.error(&e);
                None
            }
        };
        let Some(why) = lost else { break };
        // The gateway is gone (or unreachable): the next one, until one lets the bot in.
        let lost_at = Instant::now();
        let unix_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        lock(&ctx.stats.losses).push((unix_ms, c.remote_address().to_string()));
        tracing::info!(bot = %ctx.user, error = %why, "gateway lost: logging in again through the next");
        let lost_addr = c.remote_address().to_string();
        let mut tries = 0u32;
        let again = loop {
            turn += 1;
            tries += 1;
            match enter(&ctx, turn, false).await {
                Ok(x) => break Some(x),
                Err(e) if Instant::now() < ctx.end => {
                    let kind = match e {
                        BotError::Protocol(k) | BotError::Other(k) => k,
                    };
                    *lock(&ctx.stats.relogin_errors).entry(kind).or_insert(0) += 1;
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                Err(e) => {
                    ctx.stats.error(&e);
                    break None;
                }
            }
        };
        let Some((c2, g2, w2)) = again else {
            return;
        };
        ctx.stats.relogins.fetch_add(1, Ordering::Relaxed);
        let back_ms = lost_at.elapsed().as_secs_f64() * 1000.0;
        lock(&ctx.stats.relogin_ms).push(back_ms);
        lock(&ctx.stats.comebacks).push((unix_ms, lost_addr, back_ms, tries));
        (c, g, world) = (c2, g2, w2);
        leave_at = (ctx.args.return_home > 0.0 && !turn.is_multiple_of(n))
            .then(|| Instant::now() + Duration::from_secs_f64(ctx.args.return_home.min(86_400.0)));
    }
    c.close(CloseCode::Normal).await;
}

/// An own-update gap over a second, with when it ended (Unix ms), the gateway and the bot
/// (a fault run ties it to the fault before it).
fn long_gap(ctx: &BotCtx, c: &Connection, gap: Duration, who: String) {
    let unix_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    lock(&ctx.stats.long_gaps).push((
        unix_ms,
        gap.as_secs_f64() * 1000.0,
        c.remote_address().to_string(),
        who,
    ));
}

/// How a bot's play on one connection ended, when not by an error.
enum Played {
    /// The run's end.
    ToTheEnd,
    /// Time to log out and in again through the first gateway (`--return-home`).
    Left,
}

/// Adds a connection's traffic since `base` and its drop counts to the run's.
fn count_traffic(ctx: &BotCtx, c: &Connection, base: Option<UdpCounts>) {
    if let Some(base) = base {
        let now = UdpCounts::of(c);
        let add = |total: &AtomicU64, now: u64, then: u64| {
            total.fetch_add(now.saturating_sub(then), Ordering::Relaxed);
        };
        add(&ctx.stats.bytes_up, now.bytes_up, base.bytes_up);
        add(&ctx.stats.bytes_down, now.bytes_down, base.bytes_down);
        add(&ctx.stats.packets_up, now.packets_up, base.packets_up);
        add(&ctx.stats.packets_down, now.packets_down, base.packets_down);
        add(&ctx.stats.acks_up, now.acks_up, base.acks_up);
        add(&ctx.stats.acks_down, now.acks_down, base.acks_down);
        add(
            &ctx.stats.datagram_frames_down,
            now.datagram_frames_down,
            base.datagram_frames_down,
        );
        add(
            &ctx.stats.stream_frames_down,
            now.stream_frames_down,
            base.stream_frames_down,
        );
    }
    let s = c.stats();
    let st = &ctx.stats;
    st.datagrams_dropped
        .fetch_add(s.datagrams_dropped, Ordering::Relaxed);
    st.compact_stale
        .fetch_add(s.compact_refused.stale, Ordering::Relaxed);
    st.compact_unknown_base
        .fetch_add(s.compact_refused.unknown_base, Ordering::Relaxed);
    st.compact_malformed
        .fetch_add(s.compact_refused.malformed, Ordering::Relaxed);
}

/// Where the bot is and where it goes.
struct Walk {
    area: String,
    pos: (f32, f32, f32),
    home: (f32, f32, f32),
    target: (f32, f32, f32),
    arrived: Instant,
    arrival_point: (f32, f32, f32),
    /// When the bot's move first put it inside a portal (handoff latency start).
    triggered: Option<Instant>,
    pending: std::collections::VecDeque<(f32, f32, Instant)>,
    /// How far from `home` it wanders.
    wander: f32,
    /// Running out to a `--spread` home, not wandering yet.
    travelling: bool,
}

impl Walk {
    /// Whether a portal takes the bot now: not the one it arrived through while its
    /// re-entry lock lasts.
    fn usable(&self, p: &Portal) -> bool {
        let locked = self.arrived.elapsed() < PORTAL_LOCK;
        let (dx, dz) = (p.x - self.arrival_point.0, p.z - self.arrival_point.2);
        !(locked && dx * dx + dz * dz < (p.size + 2.0).powi(2))
    }

    fn pick_target(&mut self, rng: &mut SmallRng, portals: &PortalMap, portal_chance: f64) {
        let candidates: Vec<&Portal> = portals
            .get(&self.area.to_lowercase())
            .map(|v| v.iter().filter(|p| self.usable(p)).collect())
            .unwrap_or_default();
        if !candidates.is_empty() && rng.gen_bool(portal_chance.clamp(0.0, 1.0)) {
            let p = candidates[rng.gen_range(0..candidates.len())];
            self.target = (p.x, p.y, p.z);
            return;
        }
        let a = rng.gen_range(0.0..std::f32::consts::TAU);
        let r = rng.gen_range(3.0..self.wander.max(3.5));
        self.target = (
            self.home.0 + r * a.cos(),
            self.home.1,
            self.home.2 + r * a.sin(),
        );
    }

    /// Arrive at `pos` (entering the game or through `P_ChangeArea`): with `spread`, pick
    /// a home within it (uniform over the disc) and run there; else wander around `pos`.
    fn arrive(
        &mut self,
        pos: (f32, f32, f32),
        rng: &mut SmallRng,
        portals: &PortalMap,
        args: &Args,
    ) {
        self.pos = pos;
        self.home = pos;
        self.arrival_point = pos;
        self.arrived = Instant::now();
        self.pending.clear();
        self.travelling = args.spread > 0.0;
        if self.travelling {
            let a = rng.gen_range(0.0..std::f32::consts::TAU);
            let r = args.spread * rng.gen_range(0.0f32..1.0).sqrt();
            self.home = (pos.0 + r * a.cos(), pos.1, pos.2 + r * a.sin());
            self.target = self.home;
        } else {
            self.pick_target(rng, portals, args.portal_chance);
        }
    }

    /// Whether the bot stands in a portal that takes it (one it is locked out of does
    /// not start a handoff: an item walk may cross it).
    fn in_portal(&self, portals: &PortalMap) -> bool {
        portals.get(&self.area.to_lowercase()).is_some_and(|v| {
            v.iter().filter(|p| self.usable(p)).any(|p| {
                let (dx, dy, dz) = (p.x - self.pos.0, p.y - self.pos.1, p.z - self.pos.2);
                dx * dx + dy * dy + dz * dz < p.size * p.size
            })
        })
    }
}

/// A connection's UDP traffic so far (quinn's counters).
#[derive(Debug, Clone, Copy, Default)]
struct UdpCounts {
    bytes_up: u64,
    bytes_down: u64,
    packets_up: u64,
    packets_down: u64,
    acks_up: u64,
    acks_down: u64,
    datagram_frames_down: u64,
    stream_frames_down: u64,
}

impl UdpCounts {
    fn of(c: &Connection) -> Self {
        // RCEnet connections count datagrams and bytes only.
        let Some(q) = c.quic() else {
            let e = c.enet_counts().unwrap_or_default();
            return Self {
                bytes_up: e.bytes_up,
                bytes_down: e.bytes_down,
                packets_up: e.datagrams_up,
                packets_down: e.datagrams_down,
                ..Self::default()
            };
        };
        let s = q.stats();
        Self {
            bytes_up: s.udp_tx.bytes,
            bytes_down: s.udp_rx.bytes,
            packets_up: s.udp_tx.datagrams,
            packets_down: s.udp_rx.datagrams,
            acks_up: s.frame_tx.acks,
            acks_down: s.frame_rx.acks,
            datagram_frames_down: s.frame_rx.datagram,
            stream_frames_down: s.frame_rx.stream,
        }
    }
}

/// Play until the end. `base` gets the connection's UDP counts when measuring starts.
async fn play(
    ctx: &BotCtx,
    c: &mut Connection,
    g: &client::GameStart,
    world: Option<items::ItemWorld>,
    base: &mut Option<UdpCounts>,
    leave_at: Option<Instant>,
) -> Result<Played, BotError> {
    let mut rng = SmallRng::seed_from_u64(ctx.seed);
    let rid = g.runtime_id;
    let start = (g.area.x, g.area.y, g.area.z);
    let mut w = Walk {
        area: area_name(&g.area),
        pos: start,
        home: start,
        target: start,
        arrived: Instant::now(),
        arrival_point: start,
        triggered: None,
        pending: std::collections::VecDeque::new(),
        wander: ctx.args.wander_radius,
        travelling: false,
    };
    w.arrive(start, &mut rng, &ctx.portals, &ctx.args);
    let period = Duration::from_secs_f64(1.0 / ctx.args.input_hz.clamp(0.1, 60.0));
    // The next update: a plain period after the last (Realm Crafter's client), or paced to
    // the broadcasts (`--input-pacing`). Made once and reset, like the timers below.
    let paced = ctx.args.input_pacing.paced(ctx.args.profile);
    // How far an echo of a move may be from the move: the compact profile shows positions
    // to the nearest 1/8 unit (docs/protocol.md: within 1/16), rc/1 exactly.
    let echo_tolerance = match ctx.args.profile {
        client::Profile::Compact => 0.07,
        client::Profile::Rc => 0.01,
    };
    let input = tokio::time::sleep_until(Instant::now());
    tokio::pin!(input);
    let chat_every =
        (ctx.args.chat_every > 0.0).then(|| Duration::from_secs_f64(ctx.args.chat_every));
    let mut next_chat = Instant::now()
        + chat_every
            .unwrap_or_default()
            .mul_f64(rng.gen_range(0.1..1.0));
    let warp = ctx.args.warp.as_deref().map(|s| {
        let mut it = s.split(',').map(str::trim);
        (
            it.next().unwrap_or_default().to_owned(),
            it.next().unwrap_or_default().to_owned(),
        )
    });
    let warp_every = Duration::from_secs_f64(ctx.args.warp_every.max(0.05));
    let mut next_warp = Instant::now() + warp_every.mul_f64(rng.gen_range(0.0..1.0));
    let mut warp_to_b = true;
    let mut warp_sent: Option<Instant> = None;
    let mut last_echo = Instant::now();
    // The longest own-update gap within one area, and when the current one started.
    let mut gap_from = Instant::now();
    let mut max_gap = Duration::ZERO;
    let mut seen_own = false;
    // NPCs in sight (RuntimeID → x, z) and the one being hunted, until when.
    let mut npcs: std::collections::HashMap<u16, (f32, f32)> = g
        .packets
        .iter()
        .filter_map(|i| match &i.packet {
            ServerPacket::NewActor(a) if a.human == 0 => Some((a.runtime_id, (a.x, a.z))),
            _ => None,
        })
        .collect();
    let mut hunt: Option<(u16, Instant)> = None;
    let mut last_attack = Instant::now();
    // Item play (`--item-chance`), with the actors it already sees.
    let mut items = world.map(|w| {
        let mut b = items::ItemBot::new(
            Arc::new(w),
            ctx.args.item_chance,
            ctx.args.closed_economy,
            &ctx.prefix,
            rid,
        );
        for i in &g.packets {
            if let ServerPacket::NewActor(a) = &i.packet {
                b.actor_appeared(a);
            }
        }
        b
    });
    // Quest play (`--quest-chance`), with the actors it already sees.
    let mut quest = (ctx.args.quest_chance > 0.0
        && rng.gen_bool(ctx.args.quest_chance.clamp(0.0, 1.0)))
    .then(|| {
        let mut q = quests::QuestBot::new(rid, c.quests(), &ctx.stats.quests);
        for i in &g.packets {
            if let ServerPacket::NewActor(a) = &i.packet {
                q.actor_appeared(a);
            }
        }
        q
    });
    // Made once: a bot loops once per packet received, hundreds of times a second, and a
    // timer made and dropped per loop cost the swarm a sixth of its CPU.
    let measure_from = tokio::time::sleep_until(ctx.measure_from);
    let end = tokio::time::sleep_until(ctx.end);
    let leave = tokio::time::sleep_until(leave_at.unwrap_or(ctx.end));
    tokio::pin!(measure_from, end, leave);
    loop {
        let measuring = base.is_some();
        tokio::select! {
            _ = &mut measure_from, if !measuring => {
                *base = Some(UdpCounts::of(c));
                // Gaps before do not count; one still open is measured in full from here.
                max_gap = Duration::ZERO;
            }
            _ = &mut leave, if leave_at.is_some_and(|t| t < ctx.end) => {
                if gap_from.elapsed() > Duration::from_secs(1) {
                    // Still open as the bot leaves: a long gap all the same.
                    long_gap(ctx, c, gap_from.elapsed(), format!("{} (open as it left)", ctx.user));
                }
                // The gaps that ended; the open one may be a connection a fault has just
                // killed without the bot knowing yet (it is listed above, with the fault).
                lock(&ctx.stats.own_update_gap_ms).push(max_gap.as_secs_f64() * 1000.0);
                return Ok(Played::Left);
            }
            _ = &mut end => {
                tracing::debug!(user = %ctx.user, area = %w.area, pos = ?w.pos, target = ?w.target, "bot done");
                max_gap = max_gap.max(gap_from.elapsed());
                lock(&ctx.stats.own_update_gap_ms).push(max_gap.as_secs_f64() * 1000.0);
                if !seen_own {
                    ctx.stats.never_own_update.fetch_add(1, Ordering::Relaxed);
                }
                if let Some(b) = &items {
                    b.finish(c, &ctx.stats.items);
                }
                return Ok(Played::ToTheEnd);
            }
            _ = &mut input => {
                let now = Instant::now();
                let next = if paced {
                    c.next_input_at(now, period)
                } else {
                    (input.deadline() + period).max(now)
                };
                input.as_mut().reset(next);
                if let Some((prey, until)) = hunt {
                    match npcs.get(&prey) {
                        Some(&(x, z)) if Instant::now() < until => {
                            w.target = (x + 1.0, w.pos.1, z);
                            let (dx, dz) = (x - w.pos.0, z - w.pos.2);
                            if dx * dx + dz * dz < 16.0 && last_attack.elapsed() >= Duration::from_secs(1) {
                                last_attack = Instant::now();
                                c.attack(prey).await?;
                                ctx.stats.attacks.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        _ => {
                            hunt = None;
                            w.pick_target(&mut rng, &ctx.portals, ctx.args.portal_chance);
                        }
                    }
                } else if warp.is_none()
                    && !w.travelling
                    && !npcs.is_empty()
                    && items.as_ref().is_none_or(items::ItemBot::is_idle)
                    && quest.as_ref().is_none_or(|q| !q.is_busy())
                    && rng.gen_bool(ctx.args.fight_chance.clamp(0.0, 1.0) / 25.0)
                {
                    // About once every 5 s at the fight chance: pick the nearest NPC.
                    let (px, pz) = (w.pos.0, w.pos.2);
                    let near = npcs
                        .iter()
                        .map(|(r, (x, z))| (*r, (x - px) * (x - px) + (z - pz) * (z - pz)))
                        .filter(|(_, d)| *d < 60.0 * 60.0)
                        .min_by(|a, b| a.1.total_cmp(&b.1));
                    if let Some((prey, _)) = near {
                        hunt = Some((prey, Instant::now() + Duration::from_secs(8)));
                    }
                }
                if ctx.args.cast_chance > 0.0
                    && warp.is_none()
                    && rng.gen_bool((ctx.args.cast_chance / ctx.args.input_hz.max(1.0)).clamp(0.0, 1.0))
                {
                    let ready: Vec<u16> = c
                        .spells()
                        .known()
                        .map(|(_, s)| s.id)
                        .filter(|id| c.spells().is_ready(*id))
                        .collect();
                    if !ready.is_empty() {
                        let id = ready[rng.gen_range(0..ready.len())];
                        let (px, pz) = (w.pos.0, w.pos.2);
                        let target = npcs
                            .iter()
                            .map(|(r, (x, z))| (*r, (x - px) * (x - px) + (z - pz) * (z - pz)))
                            .filter(|(_, d)| *d < 60.0 * 60.0)
                            .min_by(|a, b| a.1.total_cmp(&b.1))
                            .map(|(r, _)| r)
                            .filter(|_| rng.gen_bool(0.5));
                        c.cast(id, target).await?;
                        ctx.stats.casts.fetch_add(1, Ordering::Relaxed);
                    }
                }
                if let Some(q) = &mut quest
                    && hunt.is_none()
                    && warp.is_none()
                    && !w.travelling
                    && let Some(to) = q.tick(c, w.pos, &ctx.stats.quests, &ctx.stats.attacks).await?
                {
                    w.target = to;
                }
                if let Some(b) = &mut items
                    && hunt.is_none()
                    && warp.is_none()
                    && !w.travelling
                    && quest.as_ref().is_none_or(|q| !q.is_busy())
                    && let Some(to) = b.tick(c, w.pos, ctx.args.input_hz, &mut rng, &ctx.stats.items).await?
                {
                    w.target = to;
                }
                let (dx, dy, dz) = (w.target.0 - w.pos.0, w.target.1 - w.pos.1, w.target.2 - w.pos.2);
                let d = (dx * dx + dz * dz).sqrt();
                if d < 0.5 {
                    w.travelling = false;
                    if hunt.is_none() {
                        w.pick_target(&mut rng, &ctx.portals, ctx.args.portal_chance);
                    }
                } else {
                    let step = if w.travelling { TRAVEL_STEP } else { STEP };
                    let k = (step / d).min(1.0);
                    w.pos = (w.pos.0 + dx * k, w.pos.1 + dy * k, w.pos.2 + dz * k);
                }
                c.send_update(&update(w.pos, (w.pos.0, w.pos.2)))?;
                ctx.stats.moves.fetch_add(1, Ordering::Relaxed);
                if w.pending.len() >= PENDING_MOVES {
                    w.pending.pop_front();
                }
                w.pending.push_back((w.pos.0, w.pos.2, Instant::now()));
                if w.triggered.is_none() && warp.is_none() && w.in_portal(&ctx.portals) {
                    w.triggered = Some(Instant::now());
                }
                if ctx.index < ctx.args.attack_yellers {
                    let line = format!("/yell flood from {}", ctx.user);
                    c.send_frame(16, line.as_bytes()).await?;
                    ctx.stats.attack_yells.fetch_add(1, Ordering::Relaxed);
                }
                if let Some(every) = chat_every
                    && Instant::now() >= next_chat
                {
                    next_chat = Instant::now() + every;
                    c.send_frame(16, format!("hello from {}", ctx.user).as_bytes()).await?;
                    ctx.stats.chats.fetch_add(1, Ordering::Relaxed);
                }
                if let Some((a, b)) = &warp
                    && warp_sent.is_none()
                    && Instant::now() >= next_warp
                {
                    let dest = if warp_to_b { b } else { a };
                    let (area, inst) = dest.split_once('#').unwrap_or((dest, "0"));
                    c.send_frame(16, format!("/warp {area},{inst}").as_bytes()).await?;
                    warp_sent = Some(Instant::now());
                    w.triggered = warp_sent;
                }
            }
            r = c.recv() => {
                let inc = r?;
                // Script windows are opened and acknowledged as the original client does.
                if let Some(e) = c.ui_event(&inc.packet)?
                    && let Some(q) = &mut quest
                {
                    q.event(c, &e, &ctx.stats.quests).await?;
                }
                match inc.packet {
                    ServerPacket::NewActor(a) => {
                        if a.human == 0 {
                            npcs.insert(a.runtime_id, (a.x, a.z));
                        }
                        if let Some(q) = &mut quest {
                            q.actor_appeared(&a);
                        }
                        if let Some(b) = &mut items {
                            b.actor_appeared(&a);
                        }
                    }
                    ServerPacket::ActorGone(a) => {
                        if let Ok(r) = u16::try_from(a.runtime_id) {
                            npcs.remove(&r);
                            if let Some(q) = &mut quest {
                                q.actor_gone(r);
                            }
                            if let Some(b) = &mut items {
                                b.actor_gone(r);
                            }
                        }
                    }
                    ServerPacket::ActorDead(d) => {
                        npcs.remove(&d.runtime_id);
                        if let Some(q) = &mut quest {
                            q.actor_died(d.runtime_id, d.killer, &ctx.stats.quests);
                        }
                        if let Some(b) = &mut items {
                            b.actor_gone(d.runtime_id);
                        }
                        if hunt.is_some_and(|(prey, _)| prey == d.runtime_id) {
                            ctx.stats.kills.fetch_add(1, Ordering::Relaxed);
                            hunt = None;
                        }
                    }
                    ServerPacket::XpUpdate(shared::proto::XpUpdate::Gained { .. }) => {
                        ctx.stats.xp_gains.fetch_add(1, Ordering::Relaxed);
                    }
                    ServerPacket::StandardUpdate(u) => {
                        ctx.stats.updates.fetch_add(1, Ordering::Relaxed);
                        if measuring {
                            ctx.stats.measured_updates.fetch_add(1, Ordering::Relaxed);
                        }
                        if let Some(p) = npcs.get_mut(&u.runtime_id) {
                            *p = (u.x, u.z);
                        }
                        if let Some(b) = &mut items {
                            b.actor_moved(u.runtime_id, u.x, u.z);
                        }
                        if let Some(q) = &mut quest {
                            q.actor_moved(u.runtime_id, u.x, u.z);
                        }
                        if u.runtime_id == rid {
                            last_echo = Instant::now();
                            if gap_from.elapsed() > Duration::from_millis(500) {
                                tracing::debug!(user = %ctx.user, gap_ms = gap_from.elapsed().as_millis(), hunting = hunt.is_some(), "own position came back late");
                            }
                            if gap_from.elapsed() > Duration::from_secs(1) {
                                long_gap(ctx, c, gap_from.elapsed(), ctx.user.clone());
                            }
                            max_gap = max_gap.max(gap_from.elapsed());
                            gap_from = last_echo;
                            seen_own = true;
                        }
                        if u.runtime_id == rid
                            && let Some(i) = w.pending.iter().rposition(|(x, z, _)| {
                                (x - u.x).abs() < echo_tolerance && (z - u.z).abs() < echo_tolerance
                            })
                            && let Some((_, _, t)) = w.pending.get(i).copied()
                        {
                            if t >= ctx.measure_from {
                                lock(&ctx.stats.move_latency_ms).push(t.elapsed().as_secs_f64() * 1000.0);
                            }
                            w.pending.drain(..=i);
                        }
                    }
                    ServerPacket::ChangeArea(a) => {
                        if let Some(t) = w.triggered.take() {
                            ctx.stats.handoffs.fetch_add(1, Ordering::Relaxed);
                            if t >= ctx.measure_from {
                                lock(&ctx.stats.handoff_latency_ms).push(t.elapsed().as_secs_f64() * 1000.0);
                            }
                        } else if last_echo.elapsed() > Duration::from_secs(1) {
                            // Its position had stopped coming back: its node was lost.
                            lock(&ctx.stats.recovery_gap_ms)
                                .push(last_echo.elapsed().as_secs_f64() * 1000.0);
                        } else {
                            // A respawn after death, or a warp by the server.
                            ctx.stats.server_moves.fetch_add(1, Ordering::Relaxed);
                        }
                        if warp_sent.take().is_some() {
                            warp_to_b = !warp_to_b;
                            next_warp = Instant::now() + warp_every;
                        }
                        npcs.clear();
                        hunt = None;
                        if let Some(q) = &mut quest {
                            q.area_changed();
                        }
                        if let Some(b) = &mut items {
                            // The SDK forgets the old area's ground items.
                            let _ = c.items_mut().event(ServerPacket::ChangeArea(a.clone()));
                            b.area_changed(&ctx.stats.items);
                        }
                        gap_from = Instant::now();
                        w.area = area_name(&a);
                        w.arrive((a.x, a.y, a.z), &mut rng, &ctx.portals, &ctx.args);
                    }
                    ServerPacket::KickedPlayer(_) => {
                        return Err(BotError::Other("kicked".into()));
                    }
                    ServerPacket::KnownSpellUpdate(u) => {
                        if matches!(u, shared::proto::KnownSpellUpdate::Added { .. }) {
                            ctx.stats.spells_learned.fetch_add(1, Ordering::Relaxed);
                        }
                        c.spells_mut().apply(&u);
                    }
                    ServerPacket::ActorEffect(shared::proto::ActorEffect::Added { .. }) => {
                        ctx.stats.effects_added.fetch_add(1, Ordering::Relaxed);
                    }
                    ServerPacket::ChatMessage(m) => {
                        if m.text.as_bytes() == b"Ability not yet recharged!" {
                            ctx.stats.casts_refused.fetch_add(1, Ordering::Relaxed);
                        }
                        if let Some(b) = &mut items {
                            b.chat(c, m.colour, m.text.as_bytes(), &ctx.stats.items).await?;
                        }
                    }
                    p @ (ServerPacket::InventoryUpdate(_)
                    | ServerPacket::GoldChange(_)
                    | ServerPacket::OpenTrading(_)
                    | ServerPacket::CloseTrading(_)
                    | ServerPacket::UpdateTrading(_)
                    | ServerPacket::ItemHealth(_)) => {
                        if let Some(b) = &mut items {
                            let e = c.items_mut().event(p);
                            b.event(c, e, &mut rng, &ctx.stats.items).await?;
                        }
                    }
                    _ => {}
                }
                if let Some(t) = warp_sent
                    && t.elapsed() > Duration::from_secs(5)
                {
                    // No P_ChangeArea: the warp was refused or rolled back.
                    warp_sent = None;
                    w.triggered = None;
                    next_warp = Instant::now() + warp_every;
                    *lock(&ctx.stats.other_errors).entry("warp without P_ChangeArea".into()).or_insert(0) += 1;
                }
            }
        }
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted.get(i).copied().unwrap_or(0.0)
}

fn latency_json(v: &Mutex<Vec<f64>>) -> serde_json::Value {
    let mut v = lock(v).clone();
    v.sort_by(f64::total_cmp);
    serde_json::json!({
        "samples": v.len(),
        "p50_ms": (percentile(&v, 0.5) * 100.0).round() / 100.0,
        "p99_ms": (percentile(&v, 0.99) * 100.0).round() / 100.0,
        "max_ms": (v.last().copied().unwrap_or(0.0) * 100.0).round() / 100.0,
    })
}

fn progress(stats: &Stats, args: &Args) -> String {
    let mut items = if args.item_chance > 0.0 {
        format!(" | {}", stats.items.progress())
    } else {
        String::new()
    };
    if args.quest_chance > 0.0 {
        items.push_str(" | ");
        items.push_str(&stats.quests.progress());
    }
    format!(
        "bots {}/{} in game, {} failed | moves {} | updates {} | handoffs {}{items}",
        stats.in_game.load(Ordering::Relaxed),
        args.bots,
        stats.failed.load(Ordering::Relaxed),
        stats.moves.load(Ordering::Relaxed),
        stats.updates.load(Ordering::Relaxed),
        stats.handoffs.load(Ordering::Relaxed),
    )
}

async fn run(args: Args) -> Result<serde_json::Value> {
    if args.bots == 0 {
        bail!("--bots must be at least 1");
    }
    if !(args.duration.is_finite() && args.duration > 0.0) {
        bail!("--duration must be a positive number of seconds");
    }
    if !(args.ramp.is_finite() && args.ramp >= 0.0) {
        bail!("--ramp must be zero or more seconds");
    }
    if !(args.wander_radius.is_finite() && (3.5..=100_000.0).contains(&args.wander_radius)) {
        bail!("--wander-radius must be between 3.5 and 100000 units");
    }
    if !(args.spread.is_finite() && (0.0..=100_000.0).contains(&args.spread)) {
        bail!("--spread must be between 0 and 100000 units");
    }
    if !(args.item_chance.is_finite() && (0.0..=1.0).contains(&args.item_chance)) {
        bail!("--item-chance must be between 0 and 1");
    }
    if !(args.cast_chance.is_finite() && (0.0..=1.0).contains(&args.cast_chance)) {
        bail!("--cast-chance must be between 0 and 1");
    }
    if !(args.quest_chance.is_finite() && (0.0..=1.0).contains(&args.quest_chance)) {
        bail!("--quest-chance must be between 0 and 1");
    }
    if !(args.settle.is_finite() && args.settle >= 0.0 && args.settle < args.duration) {
        bail!("--settle must be zero or more seconds, and less than --duration");
    }
    let world = match &args.world {
        Some(p) => {
            shared::content::fs::load_world(p)
                .with_context(|| format!("loading {}", p.display()))?
                .0
        }
        None => shared::content::demo_world(),
    };
    let portals = Arc::new(portals_of(&world));
    let prefix = match &args.prefix {
        Some(p) => p.clone(),
        None => format!("sw{:04x}", rand::random::<u16>()),
    };
    let args = Arc::new(args);
    let stats = Arc::new(Stats::default());
    let per_socket = args.bots_per_socket.max(1);
    let n_endpoints = args.bots.div_ceil(per_socket);
    let unspecified = |ipv4: bool| {
        if ipv4 {
            SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0))
        } else {
            SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, 0))
        }
    };
    let mut endpoints = Vec::new();
    let mut enet_endpoints = Vec::new();
    let enet_ipv4 = args.transport_of(1, 0).1.is_ipv4();
    for _ in 0..n_endpoints {
        let bind = unspecified(args.gateway().is_ipv4());
        endpoints.push(client::client_endpoint(bind).context("binding a UDP socket")?);
        if args.transport != TransportChoice::Quic {
            enet_endpoints.push(
                client::EnetEndpoint::bind(unspecified(enet_ipv4), per_socket as usize)
                    .context("binding an RCEnet socket")?,
            );
        }
    }
    let t0 = Instant::now();
    let ramp = Duration::from_secs_f64(args.ramp);
    let measure_from = t0 + ramp + Duration::from_secs_f64(args.settle);
    let end = t0 + ramp + Duration::from_secs_f64(args.duration);
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..args.bots {
        let at = t0 + ramp.mul_f64(f64::from(i) / f64::from(args.bots));
        let ctx = BotCtx {
            args: args.clone(),
            stats: stats.clone(),
            portals: portals.clone(),
            endpoint: endpoints
                .get((i / per_socket) as usize)
                .cloned()
                .context("endpoint")?,
            enet_endpoint: enet_endpoints.get((i / per_socket) as usize).cloned(),
            user: format!("{prefix}{i}"),
            index: i,
            prefix: prefix.clone(),
            measure_from,
            end,
            seed: args.seed.wrapping_mul(1_000_003).wrapping_add(u64::from(i)),
        };
        tasks.spawn(async move {
            tokio::time::sleep_until(at).await;
            bot(ctx).await;
        });
    }
    for i in 0..args.attack_flooders {
        tasks.spawn(flooder(
            args.clone(),
            stats.clone(),
            format!("{prefix}flood{i}"),
            t0 + ramp,
            end,
        ));
    }
    for _ in 0..args.attack_guessers {
        tasks.spawn(guesser(
            args.clone(),
            stats.clone(),
            format!("{prefix}0"),
            t0 + ramp,
            end,
        ));
    }
    let tty = std::io::stderr().is_terminal();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            r = tasks.join_next() => if r.is_none() { break },
            _ = tick.tick() => if tty {
                eprint!("\r{}   ", progress(&stats, &args));
            },
        }
    }
    if tty {
        eprintln!();
    }
    let played = (args.duration - args.settle).max(0.001);
    let in_game = stats.in_game.load(Ordering::Relaxed).max(1) as f64;
    let per_bot =
        |b: &AtomicU64| (b.load(Ordering::Relaxed) as f64 / played / in_game * 10.0).round() / 10.0;
    let down_ip = {
        let b = stats.bytes_down.load(Ordering::Relaxed)
            + 28 * stats.packets_down.load(Ordering::Relaxed);
        (b as f64 / played / in_game * 10.0).round() / 10.0
    };
    let protocol = lock(&stats.protocol_errors).clone();
    let other = lock(&stats.other_errors).clone();
    let gateways: Vec<String> = args.gateway.iter().map(ToString::to_string).collect();
    let gateways = gateways.join(",");
    let lost = serde_json::to_value(&*lock(&stats.losses)).unwrap_or_default();
    let comebacks = serde_json::to_value(&*lock(&stats.comebacks)).unwrap_or_default();
    let mut out = serde_json::json!({
        "gateway": gateways,
        "bots": args.bots,
        "duration_s": args.duration,
        "ramp_s": args.ramp,
        "settle_s": args.settle,
        "spread": args.spread,
        "wander_radius": args.wander_radius,
        "input_hz": args.input_hz,
        "input_pacing": args.input_pacing.paced(args.profile),
        "connected": stats.connected.load(Ordering::Relaxed),
        "in_game": stats.in_game.load(Ordering::Relaxed),
        "failed": stats.failed.load(Ordering::Relaxed),
        "protocol_errors": protocol.values().sum::<u64>(),
        "errors": { "protocol": protocol, "other": other },
        "moves_sent": stats.moves.load(Ordering::Relaxed),
        "updates_received": stats.updates.load(Ordering::Relaxed),
        "updates_per_s_per_bot": per_bot(&stats.measured_updates),
        "chat_lines_sent": stats.chats.load(Ordering::Relaxed),
        "attack": {
            "yellers": args.attack_yellers,
            "yells_sent": stats.attack_yells.load(Ordering::Relaxed),
            "guessers": args.attack_guessers,
            "guess_connections": stats.guess_connections.load(Ordering::Relaxed),
            "guesses_answered": stats.guesses_answered.load(Ordering::Relaxed),
            "guesses_refused": stats.guesses_refused.load(Ordering::Relaxed),
            "flooders": args.attack_flooders,
            "flood_kind": args.flood_kind,
            "flood_frames": stats.flood_frames.load(Ordering::Relaxed),
            "flood_disconnects": stats.flood_disconnects.load(Ordering::Relaxed),
        },
        "attacks_sent": stats.attacks.load(Ordering::Relaxed),
        "spells": {
            "cast_chance": args.cast_chance,
            "learned": stats.spells_learned.load(Ordering::Relaxed),
            "casts": stats.casts.load(Ordering::Relaxed),
            "refused_recharging": stats.casts_refused.load(Ordering::Relaxed),
            "effects_added": stats.effects_added.load(Ordering::Relaxed),
        },
        "quests": stats.quests.json(args.quest_chance),
        "npcs_killed": stats.kills.load(Ordering::Relaxed),
        "xp_gains": stats.xp_gains.load(Ordering::Relaxed),
        "respawns_and_server_warps": stats.server_moves.load(Ordering::Relaxed),
        "handoffs": stats.handoffs.load(Ordering::Relaxed),
        "profile": format!("{:?}", args.profile).to_lowercase(),
        "transport": format!("{:?}", args.transport).to_lowercase(),
        "bytes_per_s_per_bot": {
            "up": per_bot(&stats.bytes_up),
            "down": per_bot(&stats.bytes_down),
            // The same plus 28 bytes of IPv4 and UDP header per UDP datagram.
            "down_with_ip_udp_headers": down_ip,
        },
        "datagrams_dropped": stats.datagrams_dropped.load(Ordering::Relaxed),
        "compact_refused": {
            "stale": stats.compact_stale.load(Ordering::Relaxed),
            "unknown_base": stats.compact_unknown_base.load(Ordering::Relaxed),
            "malformed": stats.compact_malformed.load(Ordering::Relaxed),
        },
        "packets_per_s_per_bot": { "up": per_bot(&stats.packets_up), "down": per_bot(&stats.packets_down), "acks_up": per_bot(&stats.acks_up) },
        "frames_down_per_s_per_bot": {
            "ack": per_bot(&stats.acks_down),
            "datagram": per_bot(&stats.datagram_frames_down),
            "stream": per_bot(&stats.stream_frames_down),
        },
        "move_to_own_update": latency_json(&stats.move_latency_ms),
        "own_update_gap": latency_json(&stats.own_update_gap_ms),
        "never_own_update": stats.never_own_update.load(Ordering::Relaxed),
        "handoff_to_change_area": latency_json(&stats.handoff_latency_ms),
        "recovered_after_node_loss": latency_json(&stats.recovery_gap_ms),
        "gateway_loss": {
            "relogins": stats.relogins.load(Ordering::Relaxed),
            "back_in_game": latency_json(&stats.relogin_ms),
        },
        "item_chance": args.item_chance,
        "items": stats.items.json(),
    });
    if let Some(g) = out.get_mut("gateway_loss").and_then(|g| g.as_object_mut()) {
        g.insert("lost".into(), lost);
        g.insert("comebacks".into(), comebacks);
        g.insert(
            "returned_home".into(),
            stats.returned_home.load(Ordering::Relaxed).into(),
        );
        let failed = lock(&stats.relogin_errors).clone();
        g.insert(
            "failed_relogins".into(),
            serde_json::to_value(failed).unwrap_or_default(),
        );
    }
    if let Some(o) = out.as_object_mut() {
        let gaps = serde_json::to_value(&*lock(&stats.long_gaps)).unwrap_or_default();
        o.insert("long_gaps".into(), gaps);
    }
    Ok(out)
}

fn main() -> Result<()> {
    let args = Args::parse();
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("error")),
        )
        .try_init();
    let json = args.json;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let summary = rt.block_on(run(args))?;
    if json {
        println!("{summary}");
    } else {
        println!(
            "{}",
            serde_json::to_string_pretty(&summary).context("formatting the summary")?
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use client::CloseReason;

    use super::*;

    fn closed(code: CloseCode, reason: &str) -> BotError {
        ClientError::Closed(CloseReason::Server {
            code,
            reason: reason.into(),
        })
        .into()
    }

    #[test]
    fn a_late_first_frame_is_load_and_a_real_violation_is_the_servers_fault() {
        assert!(matches!(
            closed(CloseCode::ProtocolViolation, NO_STREAM_IN_TIME),
            BotError::Other(_)
        ));
        assert!(matches!(
            closed(CloseCode::ProtocolViolation, "oversized frame"),
            BotError::Protocol(_)
        ));
        assert!(matches!(closed(CloseCode::Kicked, ""), BotError::Other(_)));
    }
}
