//! Wire copies of the simulation's cross-node shapes (`ActorState`, `Arrival`,
//! `TransferOut`, the snapshot reason), so `shared` need not depend on `zone-node`.
//!
//! Field for field the same as `zone_node::sim::events`; `zone-node` converts both ways
//! (a test there checks that a round trip through the DTO is the identity).

use serde::{Deserialize, Serialize};

/// One inventory slot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InvSlotDto {
    /// Item template id.
    pub item: u16,
    /// Per-instance attribute modifiers.
    pub attributes: Vec<i32>,
    /// Item health 0..=100.
    pub health: u8,
    /// Stack size.
    pub amount: u16,
}

/// A known spell.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnownSpellDto {
    /// Spell id.
    pub id: u16,
    /// Ability level.
    pub level: u16,
    /// Remaining recharge (ms).
    pub charge_ms: i32,
}

/// The whole persistent state of one actor (see `zone_node::sim::events::ActorState`).
#[allow(missing_docs)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct ActorStateDto {
    pub template: u16,
    pub name: String,
    pub tag: String,
    pub area: String,
    pub instance: u16,
    pub x: f32,
    pub y: f32,
    pub z: f32,
    pub yaw: f32,
    pub gender: u8,
    pub face: u16,
    pub hair: u16,
    pub beard: u16,
    pub body: u16,
    pub level: u16,
    pub xp: u32,
    pub xp_bar: u8,
    pub gold: i32,
    pub reputation: i32,
    pub team: i32,
    pub home_faction: u8,
    pub ratings: Vec<u8>,
    pub attributes: Vec<i32>,
    pub attribute_max: Vec<i32>,
    pub resistances: Vec<i32>,
    pub inventory: Vec<Option<InvSlotDto>>,
    pub known_spells: Vec<KnownSpellDto>,
    pub memorised: Vec<u16>,
    pub script_globals: Vec<String>,
    pub quests: Vec<(String, String)>,
    pub action_bar: Vec<String>,
    pub script: String,
    pub death_script: String,
    pub rid: u16,
    pub ai_mode: u8,
    pub pets: Vec<ActorStateDto>,
    pub mount: Option<Box<ActorStateDto>>,
}

/// Where an arriving actor is placed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ArrivalDto {
    /// At the saved position.
    Saved,
    /// At an explicit position.
    Position {
        /// X.
        x: f32,
        /// Y.
        y: f32,
        /// Z.
        z: f32,
    },
    /// At a waypoint index.
    Waypoint(u16),
    /// At a portal index.
    Portal(u16),
    /// At a named portal.
    PortalNamed(String),
}

/// Why a snapshot is persisted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SnapshotReasonDto {
    /// The player left the game.
    Logout,
    /// The player left the instance.
    Transfer,
    /// Periodic save.
    Periodic,
    /// The node is draining or the instance is stopping.
    Shutdown,
}

/// A SetArea to another AreaInstance (the same shape node-local transfers use).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TransferDto {
    /// Node-unique transfer id (the source node's id space; the answer names it).
    pub transfer_id: u64,
    /// The generation of the destination the sender believes in (0 = unknown).
    pub generation: u64,
    /// The player's session, `None` for an NPC.
    pub session: Option<u64>,
    /// DM account.
    pub is_dm: bool,
    /// Destination area.
    pub area: String,
    /// Destination instance.
    pub instance: u16,
    /// Placement.
    pub arrival: ArrivalDto,
    /// The actor with its mount and pets.
    pub state: ActorStateDto,
}
