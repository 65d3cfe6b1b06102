//! The internal gateway ↔ zone-node protocol: pure serde types and a sans-IO codec.
//!
//! Nothing here opens a socket, reads a clock or draws a random number: nonces, exporter
//! values and bytes are inputs. The QUIC shells (`zone-node::link`, the gateway) move the
//! bytes.
//!
//! # Transport contract (both sides must follow it)
//! - QUIC with ALPN [`ALPN`] (`rc-internal/1`); the zone node is the client, the gateway
//!   the server. QUIC datagrams enabled on both sides.
//! - The node opens **one bidirectional control stream** right after the handshake. Every
//!   [`Envelope`] travels on it, both directions, as a `[len u32 LE][rmp-serde bytes]`
//!   frame ([`codec::encode_frame`], [`codec::FrameDecoder`]); frames longer than
//!   [`MAX_FRAME_LEN`] are a protocol violation.
//! - Handshake ([`auth`]): node → `Hello { client_nonce }`; gateway → `Challenge
//!   { server_nonce, commitment }` (a blinded commitment to its proof); node → `Auth
//!   { proof }`; gateway, once that verified → `Proven { proof, blind }`; node checks that
//!   they open the commitment and that the proof verifies, then → `Register`; gateway →
//!   `RegisterAck` or `Refused`. Neither side reveals a proof before the other has
//!   committed, and a stranger connecting as a node never gets a value to test guesses of
//!   the secret on. Both proofs are HMAC-SHA256 under the cluster secret over both nonces
//!   and a TLS exporter value ([`EXPORTER_LABEL`], 32 bytes), so they are bound to this
//!   connection. Nothing else is accepted before that.
//!   [`handshake::GatewayHandshake`] is the gateway's side as a state machine.
//! - Every envelope carries [`PROTOCOL_VERSION`]; a peer with another version is refused
//!   with [`RefuseReason::VersionMismatch`] (the decoder reports the version it saw
//!   before trying to decode the message, see [`codec::decode_envelope`]).
//! - Client `P_StandardUpdate` frames ride QUIC datagrams to the node with the 8-byte
//!   header of [`datagram`]: `[session u64 LE][frames ...]`.
//! - The node's `P_StandardUpdate` broadcast goes the other way as one [`Msg::Broadcast`]
//!   per instance and broadcast tick on the control stream: every frame once, each client
//!   datagram as byte ranges of them ([`fanout`]); the gateway gathers and sends each
//!   client's datagram.
//! - Client frames are forwarded as received (`ClientFrames`), server frames as the zone
//!   produced them (`ToClient`): never re-encoded.

pub mod auth;
pub mod codec;
pub mod datagram;
pub mod dto;
pub mod edge;
pub mod fanout;
pub mod handshake;
pub mod transfer_id;

use std::collections::BTreeMap;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

pub use dto::{
    ActionId, ActorEffectDto, ActorStateDto, ArrivalDto, GroundItemDto, InvSlotDto, KnownSpellDto,
    MAX_APPLIED_ACTIONS, MapActorDto, MapItemDto, MapViewDto, MemorisingDto, SPELL_VIEW_HOLE,
    ScriptFileDto, ScriptStoreOp, ScriptStoreResult, SnapshotReasonDto, TransferDto, ValueDto,
};
pub use transfer_id::{TransferId, TransferMinter};

/// A position carried as f32 bits (`Msg::SpawnNpc`, `Msg::SpawnItem`), as floats.
pub fn pos_from_bits(pos: (u32, u32, u32)) -> (f32, f32, f32) {
    (
        f32::from_bits(pos.0),
        f32::from_bits(pos.1),
        f32::from_bits(pos.2),
    )
}

/// The most actors a walk of another AreaInstance lists (`FirstActorInZone` elsewhere).
pub const MAX_ZONE_ACTORS: usize = 10_000;

/// The internal protocol version; bump on any incompatible change to [`Msg`].
/// 4: the script store (`ScriptStore`, `ScriptStoreReply`, `SuperGlobals`, `SuperGlobal`,
/// `RunScript`, `AccountAction`) and 20 MiB frames (a 16 MiB script file fits one).
/// 5: atomic zone checkpoints (`SnapshotGroup`) and ground items carried by
/// `AssignInstance`.
/// 6: the game clock's epoch in `AssignInstance`.
/// 8: one transfer id end to end ([`TransferId`], [`Msg::TransferIds`]).
/// 9: the tick watchdog: each [`InstanceLoad`] carries its tick age and whether it is
/// stuck, and [`Msg::InstanceGivenUp`].
/// 10: scripts across the cluster (`ActorQuery`, `NpcQuery`, `ZoneActors`, `SpawnItem`)
/// and the operator's console ([`Msg::MapQuery`], [`Msg::MapAnswer`], [`Msg::ScriptError`]).
/// 11: each [`InstanceLoad`] carries its tick p50, handoffs and errors (the console's
/// Cluster page), and the gateway may send [`Msg::Drain`] (an operator drains a node).
/// 12: `RegisterAck` carries the control plane's epoch; a node refuses an older one
/// ([`RefuseReason::StaleEpoch`]).
/// 13: direct fan-out to edge gateways ([`Msg::Fanout`], [`FANOUT_ALPN`]).
/// 14: the leader names every edge linked to it ([`Msg::Edges`]): each node keeps a
/// fan-out link to each, the path on which an edge taking the lead announces it.
pub const PROTOCOL_VERSION: u16 = 14;

/// The most edges a [`Msg::Edges`] names (more are left out; a cluster has a handful).
pub const MAX_EDGES: usize = 64;

/// Script errors a zone reports to the gateway per instance and second, at most.
pub const SCRIPT_ERRORS_PER_SECOND: u32 = 10;

/// The most actors and the most ground items a live map view carries each.
pub const MAX_MAP_ENTRIES: usize = 20_000;

/// A zone node's tick by default (ms): Realm Crafter's server loop at about 30 Hz. The
/// gateway checks `broadcast_ms` against it (a broadcast is at least one tick).
pub const DEFAULT_TICK_MS: u64 = 33;

/// The ALPN of the internal link.
pub const ALPN: &[u8] = b"rc-internal/1";

/// The round-trip time a cluster-internal QUIC connection (a zone node's link to the
/// gateways, its fan-out links, an edge's link to the leader) assumes before it has
/// measured one: the cluster runs on one network, and QUIC's default (333 ms) puts the
/// first handshake retransmission a second after the first try. A node trying a gateway
/// that takes over a moment later (it binds its endpoint only then) waited that second
/// for its link (found by `deploy/failover.sh`); from 100 ms it is about 300 ms.
pub const LINK_INITIAL_RTT: std::time::Duration = std::time::Duration::from_millis(100);

/// ALPN of a zone node's fan-out link to an edge gateway (node → the edge's client
/// endpoint): the handshake of [`handshake`] (the node registers with no instances),
/// then only [`Msg::Broadcast`]s for the clients the edge holds, which it gathers and
/// sends itself instead of the leader relaying each datagram (`docs/internal-protocol.md`,
/// "Direct fan-out").
pub const FANOUT_ALPN: &[u8] = b"rc-fanout/1";

/// The application close code of a fan-out link whose edge has just taken the lead: the
/// reason is the new control epoch in decimal. A node hearing it stops waiting for its
/// current leader link to time out (the previous leader may have died without a word) and
/// registers with the gateways again at once, refusing any leader older than that epoch.
pub const FANOUT_CLOSE_LEADS: u32 = 4;

/// Where a zone node reaches an edge gateway for the direct fan-out ([`Msg::Fanout`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FanoutEdge {
    /// The edge's name (its `gateway_id`).
    pub name: String,
    /// Its client endpoint as the nodes reach it (`host:port`, its `fanout_addr`).
    pub addr: String,
}

/// The TLS exporter label both sides feed into the handshake proofs.
pub const EXPORTER_LABEL: &[u8] = b"EXPORTER-rc-internal-auth";

/// Length of the TLS exporter value.
pub const EXPORTER_LEN: usize = 32;

/// The longest name of a cluster environment variable (`SetEnv`), in bytes.
pub const MAX_ENV_NAME: usize = 255;
/// The longest value of a cluster environment variable, in bytes.
pub const MAX_ENV_VALUE: usize = 4096;
/// At most this many cluster environment variables exist; `SetEnv` of a new one past it
/// is refused (logged).
pub const MAX_ENV_VARS: usize = 1024;

/// Largest control frame body (a character state is a few KiB; raw frame batches are
/// bounded by the client's own 64 KiB frame limit). A script file (at most
/// [`MAX_SCRIPT_FILE`]) travels whole in one `ScriptStore` or `ScriptStoreReply`, so the
/// limit is that plus room for the envelope.
pub const MAX_FRAME_LEN: usize = MAX_SCRIPT_FILE + 4 * 1024 * 1024;

/// Largest script file the script store keeps (Realm Crafter's scripts read and write
/// whole files; the zone refuses to grow one past this too).
pub const MAX_SCRIPT_FILE: usize = 16 * 1024 * 1024;

/// Number of super global slots (`SuperGlobal(0..=99)`).
pub const SUPER_GLOBALS: u8 = 100;

/// Longest super global value the script store keeps (so the whole set, sent in one
/// `SuperGlobals` message, always fits a frame).
pub const MAX_SUPER_GLOBAL: usize = 64 * 1024;

/// A gateway session (one client connection), the zone's `PlayerKey`.
pub type SessionId = u64;

/// An AreaInstance placement generation, increased by the directory on every
/// (re)assignment; messages carrying an older generation are fenced off.
pub type Generation = u64;

/// The name of one AreaInstance.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct InstanceKey {
    /// Area name.
    pub area: String,
    /// Instance number.
    pub instance: u16,
}

impl std::fmt::Display for InstanceKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}#{}", self.area, self.instance)
    }
}

/// One message on the control stream, with its version and trace context.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// [`PROTOCOL_VERSION`] of the sender.
    pub version: u16,
    /// W3C trace context (`traceparent`, `tracestate`); empty when not traced.
    pub trace: BTreeMap<String, String>,
    /// The message.
    pub msg: Msg,
}

impl Envelope {
    /// An envelope of this version with no trace context.
    pub fn new(msg: Msg) -> Self {
        Self {
            version: PROTOCOL_VERSION,
            trace: BTreeMap::new(),
            msg,
        }
    }
}

/// An instance a node still runs, reported on (re-)registration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunningInstance {
    /// Which.
    pub key: InstanceKey,
    /// Its generation.
    pub generation: Generation,
    /// Sessions currently hosted in it.
    pub sessions: Vec<SessionId>,
    /// The fencing token of each session's copy, in the order of `sessions`
    /// (`ActorStateDto::fence`): a gateway taking over adopts a kept player only in the
    /// copy that carries the token the store holds. Empty from a node before issue 41.
    #[serde(default)]
    pub fences: Vec<u64>,
}

impl RunningInstance {
    /// The fencing token of `session`'s copy here, if the node said.
    pub fn fence_of(&self, session: SessionId) -> Option<u64> {
        let i = self.sessions.iter().position(|s| *s == session)?;
        self.fences.get(i).copied()
    }
}

/// One instance's figures in a [`Msg::Heartbeat`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceLoad {
    /// Which.
    pub key: InstanceKey,
    /// Players in it.
    pub players: u32,
    /// Non-player actors in it.
    pub npcs: u32,
    /// 99th percentile tick duration over the recent ticks, µs.
    pub tick_p99_us: u32,
    /// Time since the instance last completed a tick, ms, when the heartbeat was sent
    /// (protocol version 9): a frozen instance's grows while its `tick_p99_us` stands still.
    pub tick_age_ms: u64,
    /// The node's watchdog holds the instance stuck (its tick age passed the node's
    /// `stuck_tick_ms`): the gateway sends it no new player until it ticks again.
    pub stuck: bool,
    /// Median tick duration over the recent ticks, µs (protocol version 11).
    pub tick_p50_us: u32,
    /// Handoffs out of the instance begun since it started.
    pub handoffs: u64,
    /// Handoffs out of it that failed (refused or timed out) since it started.
    pub handoffs_failed: u64,
    /// Script errors and caught panics since it started.
    pub errors: u64,
}

/// Why a peer was refused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RefuseReason {
    /// Protocol versions differ.
    VersionMismatch {
        /// The refusing side's version.
        ours: u16,
        /// The peer's version.
        theirs: u16,
    },
    /// A proof did not verify (wrong cluster secret, or a replayed handshake).
    BadAuth,
    /// A message arrived out of order (e.g. before authentication).
    Unexpected,
    /// A node with this id is already registered on another connection.
    DuplicateNode,
    /// The node is draining and takes no more players or instances.
    Draining,
    /// The gateway's control-plane epoch is older than one the node has registered with:
    /// another gateway has taken the store over since.
    StaleEpoch {
        /// The gateway's epoch.
        epoch: u64,
        /// The newest the node has seen.
        seen: u64,
    },
    /// Anything else.
    Other(String),
}

impl std::fmt::Display for RefuseReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::VersionMismatch { ours, theirs } => write!(
                f,
                "internal protocol version mismatch: this side speaks {ours}, the peer {theirs}"
            ),
            Self::BadAuth => f.write_str("authentication failed (cluster secret mismatch?)"),
            Self::Unexpected => f.write_str("unexpected message for the connection state"),
            Self::DuplicateNode => f.write_str("a node with this id is already registered"),
            Self::Draining => f.write_str("the node is draining"),
            Self::StaleEpoch { epoch, seen } => write!(
                f,
                "the gateway's control epoch {epoch} is older than {seen}: another gateway has taken over"
            ),
            Self::Other(s) => f.write_str(s),
        }
    }
}

/// Error codes of [`Msg::Error`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ErrorCode {
    /// A frame or envelope did not decode.
    Malformed,
    /// A message that is not allowed in the current state.
    Unexpected,
    /// A fenced message (older generation).
    StaleGeneration,
    /// The instance is not hosted here.
    UnknownInstance,
    /// The session is not hosted here.
    UnknownSession,
    /// The node is draining.
    Draining,
    /// Internal failure.
    Internal,
}

/// What a zone's script asks the gateway to do to a player's account.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AccountActionDto {
    /// `BanPlayer`: set the account's banned flag (persisted; the player is not kicked).
    Ban,
    /// `KickPlayer`: disconnect the player with `P_KickedPlayer`, as `/kick` does.
    Kick,
}

/// One character of a [`SnapshotGroup`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SnapshotEntry {
    /// Session.
    pub session: SessionId,
    /// Why.
    pub reason: SnapshotReasonDto,
    /// The character.
    pub state: ActorStateDto,
}

/// An atomic checkpoint of one AreaInstance ([`Msg::SnapshotGroup`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SnapshotGroup {
    /// Node-unique id, shared with [`Msg::Snapshot`]'s ids (acknowledged by
    /// `SnapshotAck`, re-sent after a reconnect until then).
    pub snapshot_id: u64,
    /// The instance.
    pub key: InstanceKey,
    /// Its generation at the sender.
    pub generation: Generation,
    /// The characters (may be empty when only the ground is saved).
    pub entries: Vec<SnapshotEntry>,
    /// `Some`: the instance's ground items now, replacing the stored ones (empty: none
    /// left); `None`: the stored ground stays as it is.
    pub ground: Option<Vec<GroundItemDto>>,
}

/// Every message of the internal protocol.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Msg {
    /// Node → gateway, first message: the node's version and nonce.
    Hello {
        /// Node id (for logs before registration).
        node_id: String,
        /// Fresh random nonce of the node.
        client_nonce: [u8; 32],
    },
    /// Gateway → node: its nonce and its commitment to its proof of the secret.
    Challenge {
        /// Fresh random nonce of the gateway.
        server_nonce: [u8; 32],
        /// [`auth::commitment`] of [`auth::gateway_proof`] (the proof comes in
        /// [`Msg::Proven`], once the node has proved itself).
        commitment: [u8; 32],
    },
    /// Node → gateway: its proof of the secret.
    Auth {
        /// [`auth::node_proof`].
        proof: [u8; 32],
    },
    /// Gateway → node, after the node's proof verified: the gateway's proof and the blind
    /// that open its commitment. The node checks both before it registers.
    Proven {
        /// [`auth::gateway_proof`].
        proof: [u8; 32],
        /// The commitment's random blind.
        blind: [u8; 32],
    },
    /// Node → gateway: join the cluster (also after a reconnect).
    Register {
        /// Node id, stable across reconnects.
        node_id: String,
        /// Where the node can be reached by other nodes (`host:port`).
        advertised_addr: String,
        /// How many instances the node is willing to host.
        capacity: u32,
        /// The node's [`PROTOCOL_VERSION`].
        protocol_version: u16,
        /// Instances it still runs (empty on a fresh start).
        running: Vec<RunningInstance>,
    },
    /// Gateway → node: registered.
    RegisterAck {
        /// The gateway's id (for logs).
        gateway_id: String,
        /// Heartbeat period the gateway expects, in ms.
        heartbeat_ms: u64,
        /// The control plane's epoch: raised each time a gateway takes the store over.
        /// A node refuses a gateway older than the newest it has registered with (a
        /// deposed leader that has not noticed yet).
        epoch: u64,
    },
    /// Either way: the peer is refused; the connection is closed after this.
    Refused {
        /// Why.
        reason: RefuseReason,
    },
    /// Node → gateway, every second.
    Heartbeat {
        /// Instances hosted.
        instances: u32,
        /// Players hosted.
        players: u32,
        /// Tick overruns since the last heartbeat.
        overruns: u32,
        /// Per-instance figures (for the gateway's `/cluster` and placement).
        loads: Vec<InstanceLoad>,
    },
    /// Gateway → node: host this instance.
    AssignInstance {
        /// Which.
        key: InstanceKey,
        /// Its generation.
        generation: Generation,
        /// The ground items its last checkpoint saved (empty: none); a node that already
        /// runs the instance ignores them.
        ground: Vec<GroundItemDto>,
        /// The cluster's game clock epoch (Unix ms; `crate::clock`); 0 = unknown (the
        /// zone's own start).
        #[serde(default)]
        clock_epoch_ms: u64,
    },
    /// Node → gateway: the instance runs.
    InstanceReady {
        /// Which.
        key: InstanceKey,
        /// Its generation.
        generation: Generation,
    },
    /// Gateway → node: save the instance's players and stop it.
    StopInstance {
        /// Which.
        key: InstanceKey,
        /// Its generation (older ones are ignored).
        generation: Generation,
    },
    /// Node → gateway: the instance stopped (its players' snapshots were sent first).
    InstanceStopped {
        /// Which.
        key: InstanceKey,
        /// Its generation.
        generation: Generation,
    },
    /// Gateway → node: a player enters the game in an instance.
    AttachPlayer {
        /// Session.
        session: SessionId,
        /// Instance.
        key: InstanceKey,
        /// The instance generation the gateway believes in.
        generation: Generation,
        /// Cluster-wide RuntimeID of the player.
        rid: u16,
        /// DM account.
        is_dm: bool,
        /// The character.
        state: Box<ActorStateDto>,
        /// Placement.
        arrival: ArrivalDto,
    },
    /// Gateway → node: the player left (disconnect); the node answers with a `Snapshot`
    /// (reason `Logout`) and `PlayerDetached`.
    DetachPlayer {
        /// Session.
        session: SessionId,
    },
    /// Gateway → node: move a hosted player to another AreaInstance (`/warpother`, an
    /// operator's warp): the zone runs SetArea as for a DM's `/warp`, without the DM check.
    WarpPlayer {
        /// Session.
        session: SessionId,
        /// Destination area.
        area: String,
        /// Destination instance.
        instance: u16,
    },
    /// Node → gateway: the player is no longer hosted on this node.
    PlayerDetached {
        /// Session.
        session: SessionId,
        /// The instance whose copy left. The gateway ignores it when it places the session
        /// in another instance: a node may hold a stale copy (restored after a handoff the
        /// gateway settled without it) beside the one the gateway placed there. `None` from
        /// nodes older than this field.
        #[serde(default)]
        key: Option<InstanceKey>,
    },
    /// Node → gateway: the player now lives in another local instance (node-local SetArea).
    PlayerMoved {
        /// Session.
        session: SessionId,
        /// Its new instance.
        key: InstanceKey,
    },
    /// Gateway → node: reliable client frames, as received (`[len u16][type u8][payload]`*).
    ClientFrames {
        /// Session.
        session: SessionId,
        /// The frames, byte for byte.
        frames: Bytes,
    },
    /// Node → gateway: reliable frames for one client, as the zone produced them.
    ToClient {
        /// Session.
        session: SessionId,
        /// The frames, byte for byte.
        frames: Bytes,
    },
    /// Node → gateway: one instance's position broadcast (`P_StandardUpdate`), every
    /// frame once; the gateway fans it out to the clients' datagrams.
    Broadcast(fanout::Broadcast),
    /// Gateway → node: where the session's broadcast datagrams go from now on. `Some`: to
    /// that edge gateway over a fan-out link ([`FANOUT_ALPN`]), which holds the client (the
    /// leader relays them while the link is not up); `None`: to the leader, as every
    /// session's go by default. Sent whenever the session's player enters the node.
    Fanout {
        /// Session.
        session: SessionId,
        /// The edge holding the client, if any.
        edge: Option<FanoutEdge>,
    },
    /// Gateway → node: every edge gateway linked to this leader (at most [`MAX_EDGES`]),
    /// sent when the node registers and whenever the edges change. The node keeps a
    /// fan-out link to each, whether or not it hosts any of its clients: an edge taking
    /// the lead closes those links saying so ([`FANOUT_CLOSE_LEADS`]), so every node
    /// registers with it at once instead of waiting for its leader link to time out.
    Edges {
        /// The edges, as [`Msg::Fanout`] names them.
        edges: Vec<FanoutEdge>,
    },
    /// Node → gateway: persist a character; answered by `SnapshotAck`.
    Snapshot {
        /// Node-unique id of this snapshot.
        snapshot_id: u64,
        /// Session.
        session: SessionId,
        /// Why.
        reason: SnapshotReasonDto,
        /// The character.
        state: Box<ActorStateDto>,
    },
    /// Node → gateway: persist several characters of one instance, and with `ground` its
    /// ground items, in **one** transaction (players whose items moved between them are
    /// saved together, `docs/handoff.md`, "Items"); answered by `SnapshotAck` once
    /// committed. Refused as a whole (acknowledged and dropped, counted as fenced) when
    /// the sender no longer owns `key` at `generation` or does not host every session.
    SnapshotGroup(Box<SnapshotGroup>),
    /// Gateway → node: the snapshot (or snapshot group) is stored.
    SnapshotAck {
        /// Which.
        snapshot_id: u64,
    },
    /// Either way: a SetArea to an instance the sender does not host.
    Transfer(Box<TransferDto>),
    /// Either way: the destination holds the actor, prepared but not yet live (phase one
    /// of the handoff; see `docs/handoff.md`). The source answers with `TransferCommit`
    /// or, if it already rolled back, `TransferAbort`.
    TransferAck {
        /// Which transfer.
        transfer_id: TransferId,
        /// Destination generation.
        generation: Generation,
    },
    /// Either way: the destination refused the actor; the source restores it.
    TransferNack {
        /// Which transfer.
        transfer_id: TransferId,
        /// Why (shown to the player).
        reason: String,
    },
    /// Node → gateway: the node is draining (takes no new players or instances).
    Drain,
    /// Node → gateway: last message before closing; everything is saved.
    Deregister,
    /// Either way: a message was refused.
    Error {
        /// What kind of failure.
        code: ErrorCode,
        /// Human-readable reason.
        reason: String,
    },
    /// Either way: the source let go of the actor after `TransferAck`; the destination
    /// makes the prepared actor live (phase two of the handoff).
    TransferCommit {
        /// Which transfer.
        transfer_id: TransferId,
    },
    /// Either way: the source had already rolled back (a late `TransferAck`) or is gone;
    /// the destination drops the prepared actor, so it exists in exactly one place.
    TransferAbort {
        /// Which transfer.
        transfer_id: TransferId,
    },
    /// Gateway → node, first after `RegisterAck`: the id block of this registration. The
    /// node's zones mint their [`TransferId`]s in it from then on.
    TransferIds {
        /// The block.
        block: u64,
    },
    /// Gateway → node: the members of a player's party across the cluster, leader first
    /// (empty: none). The zone splits XP among those in its instance; the gateway sends
    /// `P_PartyUpdate` itself.
    PartyMembers {
        /// The player.
        session: SessionId,
        /// Character names.
        members: Vec<String>,
    },
    /// Node → gateway: a zone's request to the cluster-wide script store (files, super
    /// globals, zone instances). `req` 0: no answer wanted; otherwise the gateway answers
    /// `ScriptStoreReply` with the same `req` (a node-unique id, not the zone's).
    ScriptStore {
        /// The node's request id (0: fire and forget).
        req: u64,
        /// What.
        op: ScriptStoreOp,
    },
    /// Gateway → node: the answer to a `ScriptStore` request.
    ScriptStoreReply {
        /// The node's request id.
        req: u64,
        /// The answer.
        result: ScriptStoreResult,
    },
    /// Gateway → node, right after `RegisterAck`: every super global that is not empty,
    /// as `(slot, value)`; the node replaces its whole copy with it (a slot not listed is
    /// empty).
    SuperGlobals {
        /// `(slot 0..=99, value)`.
        values: Vec<(u8, Vec<u8>)>,
    },
    /// Gateway → node: evaluate a query on the player of `session` (a zone elsewhere asked
    /// it, `ScriptStoreOp::ActorQuery`); the zone answers with `ScriptStoreOp::ActorAnswer`.
    ActorQuery {
        /// The gateway's query id.
        qid: u64,
        /// The player.
        session: SessionId,
        /// The native.
        native: String,
        /// Its arguments.
        args: Vec<ValueDto>,
        /// `Some`: an action, applied at most once per id (`ActorStateDto::applied_actions`).
        #[serde(default)]
        action: Option<ActionId>,
    },
    /// Gateway → node: evaluate a query on (or, with `action`, take an action on) an NPC of
    /// one of its instances, whose handle (the first argument) is in that instance's range
    /// (`World::npc_handles`), for a script elsewhere; answered with
    /// `ScriptStoreOp::ActorAnswer`. Delivered once.
    NpcQuery {
        /// The gateway's query id.
        qid: u64,
        /// The instance.
        key: InstanceKey,
        /// The native.
        native: String,
        /// Its arguments.
        args: Vec<ValueDto>,
        /// An action (not only a query).
        action: bool,
    },
    /// Gateway → node: put an item on the ground of one of its instances for a script
    /// elsewhere (`SpawnItem`); answered with `ScriptStoreOp::ActorAnswer` (the item's
    /// handle). Delivered once.
    SpawnItem {
        /// The gateway's query id.
        qid: u64,
        /// The instance.
        key: InstanceKey,
        /// The item's name.
        item: String,
        /// How many.
        amount: u16,
        /// Where (f32 bits).
        pos: (u32, u32, u32),
    },
    /// Gateway → node: list the actors of one of its instances for a script elsewhere
    /// (`FirstActorInZone`); answered with `ScriptStoreOp::ZoneActorsAnswer`.
    ZoneActors {
        /// The gateway's query id.
        qid: u64,
        /// The instance.
        key: InstanceKey,
    },
    /// Gateway → node: spawn an NPC in one of its instances for a script elsewhere
    /// (`ScriptStoreOp::Spawn`); the zone answers its handle with
    /// `ScriptStoreOp::ActorAnswer`.
    SpawnNpc {
        /// The gateway's query id.
        qid: u64,
        /// The instance.
        key: InstanceKey,
        /// The actor template.
        template: u16,
        /// Where (f32 bits).
        pos: (u32, u32, u32),
        /// Its right-click script.
        script: String,
        /// Its death script.
        death_script: String,
    },
    /// Gateway → node: the cluster's environment (`SetEnv`/`GetEnv`) and the areas'
    /// weathers (`WeatherLink`): all of them right after `RegisterAck` (`whole`: the node
    /// replaces its copy), then every change as it happens (an empty env value removes it).
    SharedVars {
        /// The whole set (true) or changes (false).
        whole: bool,
        /// Environment variables: name, value.
        env: Vec<(String, Vec<u8>)>,
        /// Area (lower case), weather.
        weather: Vec<(String, u8)>,
    },
    /// Gateway → every node: a super global changed (a zone's `SetSuperGlobal`).
    SuperGlobal {
        /// Slot 0..=99.
        slot: u8,
        /// The new value.
        #[serde(with = "serde_bytes")]
        value: Vec<u8>,
    },
    /// Gateway → node: the world's scripts as they are now (a `RefreshScripts` or the admin
    /// `reload-scripts` the gateway compiled and checked, or, right after `RegisterAck`,
    /// the last such reload): the node compiles them and new runs use them; running
    /// scripts finish on the code they started with.
    #[doc(alias = "RefreshScripts")]
    ScriptsUpdate {
        /// The reload's version (a fingerprint of the files).
        version: u64,
        /// Every `.rsl` file: its name without the extension, and its bytes.
        files: Vec<ScriptFileDto>,
    },
    /// Gateway → node: run `script.func` with no actor in one instance (the cluster's
    /// `Startup.Main`).
    RunScript {
        /// The instance.
        key: InstanceKey,
        /// Script name.
        script: String,
        /// Function.
        func: String,
    },
    /// Node → gateway: a zone's script acts on a player's account (`BanPlayer`,
    /// `KickPlayer`).
    AccountAction {
        /// The player.
        session: SessionId,
        /// What.
        action: AccountActionDto,
    },
    /// Gateway → node: what the operator's live map shows of one instance (its actors and
    /// ground items now); answered with [`Msg::MapAnswer`] (an empty view when the
    /// instance is not there).
    MapQuery {
        /// The gateway's query id.
        qid: u64,
        /// The instance.
        key: InstanceKey,
    },
    /// Node → gateway: a script of one of its instances ended in an error (at most
    /// [`SCRIPT_ERRORS_PER_SECOND`] a second per instance are reported; the node counts
    /// and logs them all), for the operator's console.
    ScriptError {
        /// The instance.
        key: InstanceKey,
        /// Script and function.
        script: String,
        /// Entry function.
        func: String,
        /// The file and line of the failing code (empty, 0: none).
        file: String,
        /// Line.
        line: u32,
        /// What happened (a runtime error, a runaway loop, a script that could not
        /// resume).
        message: String,
        /// `runtime`, `runaway` or `restore`.
        kind: String,
    },
    /// Node → gateway: the answer to a [`Msg::MapQuery`].
    MapAnswer {
        /// The query id.
        qid: u64,
        /// What the instance holds (`None`: not on this node).
        view: Option<MapViewDto>,
    },
    /// Node → gateway: the node's watchdog gave the instance up (no tick completed for
    /// its `give_up_tick_ms`, protocol version 9). The node has dropped it (no input
    /// reaches it; whatever it would still send is not sent); the gateway re-places it
    /// with a new generation and puts its players back from their last saves with new
    /// fencing tokens, as for a lost node (`docs/handoff.md`).
    InstanceGivenUp {
        /// Which.
        key: InstanceKey,
        /// The generation the node ran it at.
        generation: Generation,
        /// The sessions it hosted.
        sessions: Vec<SessionId>,
    },
}

impl Msg {
    /// A short name for logs and counters.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Hello { .. } => "Hello",
            Self::Challenge { .. } => "Challenge",
            Self::Auth { .. } => "Auth",
            Self::Proven { .. } => "Proven",
            Self::Register { .. } => "Register",
            Self::RegisterAck { .. } => "RegisterAck",
            Self::Refused { .. } => "Refused",
            Self::Heartbeat { .. } => "Heartbeat",
            Self::AssignInstance { .. } => "AssignInstance",
            Self::InstanceReady { .. } => "InstanceReady",
            Self::StopInstance { .. } => "StopInstance",
            Self::InstanceStopped { .. } => "InstanceStopped",
            Self::AttachPlayer { .. } => "AttachPlayer",
            Self::DetachPlayer { .. } => "DetachPlayer",
            Self::WarpPlayer { .. } => "WarpPlayer",
            Self::PlayerDetached { .. } => "PlayerDetached",
            Self::PlayerMoved { .. } => "PlayerMoved",
            Self::ClientFrames { .. } => "ClientFrames",
            Self::ToClient { .. } => "ToClient",
            Self::Broadcast(_) => "Broadcast",
            Self::Fanout { .. } => "Fanout",
            Self::Edges { .. } => "Edges",
            Self::Snapshot { .. } => "Snapshot",
            Self::SnapshotGroup(_) => "SnapshotGroup",
            Self::SnapshotAck { .. } => "SnapshotAck",
            Self::Transfer(_) => "Transfer",
            Self::TransferAck { .. } => "TransferAck",
            Self::TransferNack { .. } => "TransferNack",
            Self::TransferCommit { .. } => "TransferCommit",
            Self::TransferAbort { .. } => "TransferAbort",
            Self::TransferIds { .. } => "TransferIds",
            Self::PartyMembers { .. } => "PartyMembers",
            Self::ScriptStore { .. } => "ScriptStore",
            Self::ScriptStoreReply { .. } => "ScriptStoreReply",
            Self::SuperGlobals { .. } => "SuperGlobals",
            Self::SharedVars { .. } => "SharedVars",
            Self::ActorQuery { .. } => "ActorQuery",
            Self::SpawnNpc { .. } => "SpawnNpc",
            Self::NpcQuery { .. } => "NpcQuery",
            Self::ZoneActors { .. } => "ZoneActors",
            Self::SpawnItem { .. } => "SpawnItem",
            Self::SuperGlobal { .. } => "SuperGlobal",
            Self::ScriptsUpdate { .. } => "ScriptsUpdate",
            Self::RunScript { .. } => "RunScript",
            Self::AccountAction { .. } => "AccountAction",
            Self::InstanceGivenUp { .. } => "InstanceGivenUp",
            Self::MapQuery { .. } => "MapQuery",
            Self::ScriptError { .. } => "ScriptError",
            Self::MapAnswer { .. } => "MapAnswer",
            Self::Drain => "Drain",
            Self::Deregister => "Deregister",
            Self::Error { .. } => "Error",
        }
    }
}
