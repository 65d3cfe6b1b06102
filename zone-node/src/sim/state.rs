//! Actor storage for one AreaInstance: a generational slab of [`Actor`]s, the intrusive
//! chains Realm Crafter keeps (`FirstInZone`, the online players, slaves per leader) with
//! O(1) insert and removal, RuntimeID allocation, and [`ZoneState`], the struct every phase
//! function works on.
//!
//! # Chains
//! A [`Chain`] is a head (`first`, `len`); each actor has one [`Link`] per chain kind
//! ([`ChainKind`]), kept in a dense array beside the slab ([`ZoneState::link`]) rather than
//! in the actor, so a chain walk does not pull whole actors through the cache. Insert links
//! at the head, removal unlinks in O(1) through `prev`/`next` and is idempotent, so
//! [`ZoneState::free_actor`] removes an actor from every chain unconditionally (as
//! `FreeActorInstance` does). The area's water volumes never change at
//! run time, so the `FirstWater` chain is the plain list `content.area.water`.
//!
//! # RuntimeIDs
//! `rid_map[rid]` maps a RuntimeID to a slab index. Player RIDs come from the gateway (a
//! cluster-wide range, see [`RidRanges`]) and are kept across SetArea; NPC RIDs are allocated
//! here from their own range with a rotating cursor. 0 is never used.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use super::area::{Environment, TemplateProps, ZoneContent};
use super::engine::EngineEvent;
use super::events::{
    ATTRIBUTE_COUNT, ActorState, Arrival, Counters, FACTION_COUNT, INVENTORY_SLOTS, InvSlot,
    KnownSpell, MEMORISED_EMPTY, MEMORISED_SLOTS, PlayerKey, RESISTANCE_COUNT, Rejection,
    RuntimeId, TransferId, TransferMinter, ZoneOutput,
};
use super::grid::Grid;
use super::instances::{Handle, Scripts};
use super::rng::SimRng;

pub use super::grid::NIL;

pub use super::events::ActorId;

/// `AIMode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[doc(alias = "AIMode")]
pub enum AiMode {
    /// AI_Wait 0.
    #[default]
    Wait = 0,
    /// AI_Patrol 1.
    Patrol = 1,
    /// AI_Run 2.
    Run = 2,
    /// AI_Chase 3.
    Chase = 3,
    /// AI_PatrolPause 4.
    PatrolPause = 4,
    /// AI_Pet 5.
    Pet = 5,
    /// AI_PetChase 6.
    PetChase = 6,
    /// AI_PetWait 7.
    PetWait = 7,
}

impl AiMode {
    /// From the stored byte.
    pub fn from_u8(v: u8) -> Self {
        match v {
            1 => Self::Patrol,
            2 => Self::Run,
            3 => Self::Chase,
            4 => Self::PatrolPause,
            5 => Self::Pet,
            6 => Self::PetChase,
            7 => Self::PetWait,
            _ => Self::Wait,
        }
    }
}

/// One link of an intrusive chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link {
    /// Previous slab index or [`NIL`].
    pub prev: u32,
    /// Next slab index or [`NIL`].
    pub next: u32,
    /// Whether the actor is on this chain.
    pub linked: bool,
}

impl Default for Link {
    fn default() -> Self {
        Self {
            prev: NIL,
            next: NIL,
            linked: false,
        }
    }
}

/// The head of an intrusive chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chain {
    /// First slab index or [`NIL`].
    pub first: u32,
    /// Number of members.
    pub len: u32,
}

impl Default for Chain {
    fn default() -> Self {
        Self { first: NIL, len: 0 }
    }
}

/// Which chain a [`Link`] belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChainKind {
    /// `FirstInZone` / `NextInZone`: every actor of the instance.
    #[doc(alias = "FirstInZone")]
    Zone,
    /// `FirstOnlinePlayer` / `NextOnlinePlayer`, restricted to this instance.
    #[doc(alias = "FirstOnlinePlayer")]
    Online,
    /// `FirstSlave` / `NextSlave`: the pets of one leader.
    #[doc(alias = "FirstSlave")]
    Slaves,
}

/// Player-only data that the simulation carries but does not interpret.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlayerData {
    /// Quest log.
    pub quests: Vec<(String, String)>,
    /// Action bar.
    pub action_bar: Vec<String>,
    /// Reliable frames queued for this player, in order.
    pub outbox: Vec<u8>,
    /// Whether `outbox` holds a frame sent to this player alone ([`ZoneState::send_packet`]):
    /// it goes out at the end of this tick. Frames sent to the whole zone
    /// ([`ZoneState::send_packet_zone`]) alone wait for the player's next broadcast.
    pub outbox_urgent: bool,
    /// The account's user name (`PlayerAccountName`).
    pub account: String,
    /// The account's e-mail (`PlayerAccountEmail`).
    pub email: String,
    /// Banned by a script this session (`BanPlayer`; the gateway keeps the flag).
    pub banned: bool,
    /// Item offers (`P_InventoryUpdate "G"`) sent to this player and not answered yet,
    /// oldest first, at most [`OutstandingOffer::KEEP`] (`sim::items::bag`).
    pub offers: Vec<OutstandingOffer>,
    /// The client's numbering of its known spells (`sim::spells`): spell ids by the
    /// index the client uses in `P_SpellUpdate "M"/"U"`, `SPELL_VIEW_HOLE` for a hole.
    pub spell_view: Vec<u16>,
    /// Memorisations in progress: `(spell id, zone time it completes)`.
    #[doc(alias = "MemorisingSpell")]
    pub memorising: Vec<(u16, u64)>,
    /// Zone time of the last accepted cast (casts must be 100 ms apart, as V1).
    pub last_cast_ms: Option<u64>,
    /// The character copy's fencing token (`ActorStateDto::fence`), carried unchanged.
    pub fence: u64,
    /// Scripts' actions from other zones already taken (`ActorStateDto::applied_actions`,
    /// `runtime::remote`): the latest of each run, oldest first.
    pub applied: Vec<shared::internal::ActionId>,
}

impl PlayerData {
    /// The saved form of the player's ability session state at `now_ms` (what is being
    /// memorised, the client's spell view) into `s`.
    pub(crate) fn save_spells(&self, now_ms: u64, s: &mut shared::internal::ActorStateDto) {
        s.spell_view.clone_from(&self.spell_view);
        s.memorising = self
            .memorising
            .iter()
            .map(|&(spell, due)| shared::internal::MemorisingDto {
                spell,
                remaining_ms: due.saturating_sub(now_ms).max(1),
            })
            .collect();
    }
}

/// An item offer sent to a player and not answered yet. The server placed the item in
/// `slot` when it sent the offer; the client's `"GY"`/`"GN"` is only checked against it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutstandingOffer {
    /// The offer's handle (shares [`ZoneState::ground_handle`]'s counter).
    pub handle: u32,
    /// The slot the server placed it in.
    pub slot: u8,
    /// Item id.
    pub item: u16,
    /// How many went into that slot.
    pub amount: u16,
    /// Whether this offer is already the server's one correction of a wrong answer.
    pub resent: bool,
}

impl OutstandingOffer {
    /// How many unanswered offers a player keeps; an older one's answer is refused.
    pub const KEEP: usize = 64;
}

/// One actor instance (player or NPC) in the zone.
///
/// # Layout
/// The actor loop, the broadcast and the visit touch every actor every tick, so `Actor` is
/// split: the fields read per tick (position, destination, flags, AI state, grid cell,
/// timers, the attribute arrays) stay inline and are laid out `repr(C)` with the
/// per-tick scalars first, so one or two cache lines serve most phases; everything else
/// (names, appearance, inventory, factions, scripts, ...) lives in a boxed [`ActorCold`].
/// `Actor` derefs to `ActorCold`, so `a.inventory` reads the same either way. The chain
/// links are not in the actor at all but in a dense array of [`ZoneState`] (see
/// [`ZoneState::link`]), so walking a chain never touches the actors.
#[derive(Clone, Debug)]
#[doc(alias = "ActorInstance")]
#[repr(C)]
pub struct Actor {
    /// Its handle.
    pub id: ActorId,
    /// RuntimeID.
    pub rid: RuntimeId,
    /// Template id.
    pub template: u16,
    /// Environment (from the template).
    pub environment: Environment,
    /// Aggressiveness (template).
    pub aggressiveness: u8,
    /// AI mode.
    pub ai_mode: AiMode,
    /// Running.
    pub is_running: bool,
    /// Walking backward.
    pub walking_backward: bool,
    /// `IgnoreUpdate`: no client update is applied while set.
    #[doc(alias = "IgnoreUpdate")]
    pub ignore_update: bool,
    /// After a handoff into this instance: `IgnoreUpdate` stays set until the client
    /// acknowledges the new area (`P_ChangeArea` C→S), sends an update at its arrival
    /// point, or this time (ms) passes. Stale updates sent before the client loaded the
    /// new area are ignored meanwhile.
    pub area_ack_deadline_ms: Option<u64>,
    /// Set while a death script is waiting (the player is dead but not removed).
    pub dead: bool,
    /// Current waypoint.
    pub current_waypoint: u16,
    /// Index of the water volume the actor is in.
    pub water: Option<u16>,
    /// Home faction.
    pub home_faction: u8,
    /// Last portal used and when.
    pub last_portal: Option<u16>,
    /// Last trigger the actor was inside (edge detection).
    pub last_trigger: Option<u16>,
    /// Position.
    pub x: f32,
    /// Position.
    pub y: f32,
    /// Position.
    pub z: f32,
    /// Facing.
    pub yaw: f32,
    /// Destination.
    pub dest_x: f32,
    /// Destination.
    pub dest_z: f32,
    /// Previous position (`OldX`).
    pub old_x: f32,
    /// Previous position (`OldZ`).
    pub old_z: f32,
    /// Radius (template radius × 0.05).
    pub radius: f32,
    /// `AggressiveRange` (template).
    pub aggressive_range: f32,
    /// Grid cell (or [`NIL`]) and position inside it.
    pub cell: u32,
    /// Position inside the cell's list.
    pub cell_pos: u32,
    /// This actor's pets.
    pub slaves: Chain,
    /// The actor this one rides.
    pub mount: Option<ActorId>,
    /// The actor riding this one.
    pub rider: Option<ActorId>,
    /// The leader of a pet (slave).
    pub leader: Option<ActorId>,
    /// AI target.
    pub ai_target: Option<ActorId>,
    /// The transfer this actor is leaving by, if any (frozen until ack/nack/timeout).
    pub transfer: Option<TransferId>,
    /// The player's session; `None` for NPCs (RNID -1).
    pub player: Option<PlayerKey>,
    /// `Underwater`: `None` out of water, else the time of the next water second.
    pub underwater_ms: Option<u64>,
    /// When PatrolPause ends.
    pub pause_until_ms: u64,
    /// `LastAttack`.
    pub last_attack_ms: Option<u64>,
    /// `LastPosUpdateMs`; `None` until the first update (accepted outright).
    pub last_pos_update_ms: Option<u64>,
    /// Time of the last portal use.
    pub last_portal_ms: u64,
    /// Player-only data.
    pub player_data: Option<Box<PlayerData>>,
    /// Known spells with recharge.
    pub spells: Vec<KnownSpell>,
    /// Attribute values.
    pub attr: [i32; ATTRIBUTE_COUNT],
    /// Attribute maxima.
    pub attr_max: [i32; ATTRIBUTE_COUNT],
    /// The rarely touched part.
    pub cold: Box<ActorCold>,
}

/// The cold part of an [`Actor`]: what no per-tick phase reads.
#[derive(Clone, Debug)]
pub struct ActorCold {
    /// DM account.
    pub is_dm: bool,
    /// Rideable (template).
    pub rideable: bool,
    /// XP multiplier (template).
    pub xp_multiplier: i32,
    /// Default damage type (template).
    pub default_damage_type: u8,
    /// Name.
    pub name: String,
    /// Tag.
    pub tag: String,
    /// Appearance: gender, face, hair, beard, body.
    pub gender: u8,
    /// Appearance.
    pub face: u16,
    /// Appearance.
    pub hair: u16,
    /// Appearance.
    pub beard: u16,
    /// Appearance.
    pub body: u16,
    /// Level.
    pub level: u16,
    /// XP.
    pub xp: u32,
    /// XP bar level.
    pub xp_bar: u8,
    /// Gold.
    pub gold: i32,
    /// Reputation.
    pub reputation: i32,
    /// Guild.
    pub team: i32,
    /// Ratings (100).
    pub ratings: Box<[u8; FACTION_COUNT]>,
    /// Resistances.
    pub resist: [i32; RESISTANCE_COUNT],
    /// Memorised spells (5000 = empty).
    pub memorised: [u16; MEMORISED_SLOTS],
    /// Inventory (46 slots).
    pub inventory: Vec<Option<InvSlot>>,
    /// Script globals (10).
    pub script_globals: Vec<String>,
    /// Right-click script.
    pub script: String,
    /// Death script.
    pub death_script: String,
    /// Spawn point it came from.
    pub source_spawn: Option<u16>,
    /// Party index in [`ZoneState::parties`].
    pub party: Option<u32>,
    /// The script handle (`Actor()` values name actors by it); 0 until inserted.
    pub handle: Handle,
    /// Trade state (`IsTrading`, `TradingActor`, the offers); never persisted: a trade
    /// does not survive a logout, a warp or a crash.
    #[doc(alias = "IsTrading")]
    pub trading: Trading,
    /// Active actor effects (buffs and debuffs), managed by `sim::effects`.
    #[doc(alias = "ActorEffect")]
    pub effects: Vec<ActiveEffect>,
    /// When it was last the target of an attack (melee, ranged or a projectile, hit or
    /// miss); with `LastAttack`, what makes it "in combat" for `sim::regen`. Not saved.
    pub last_attacked_ms: Option<u64>,
}

/// The end times of the zone's timed actor effects: `(end time, owner)`, earliest first.
/// An entry goes stale when its effect is refreshed or deleted or its owner leaves; stale
/// entries are skipped when they come up, and the heap is rebuilt from the actors when
/// refreshes have piled up more than `floor` (its size after the last rebuild) again.
#[derive(Clone, Debug, Default)]
pub struct EffectEnds {
    /// `(end time, owner)`, earliest on top.
    pub heap: std::collections::BinaryHeap<std::cmp::Reverse<(u64, ActorId)>>,
    /// Entries after the last rebuild.
    pub floor: usize,
}

/// One active actor effect (Realm Crafter's `ActorEffect`, reference §6): its deltas are
/// already included in the owner's attributes.
#[doc(alias = "ActorEffect")]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActiveEffect {
    /// Handle, unique per owner (what `P_ActorEffect` names it by).
    pub handle: u32,
    /// Name (unique per owner, compared case-insensitively).
    pub name: String,
    /// Delta per attribute.
    pub deltas: [i32; ATTRIBUTE_COUNT],
    /// Zone-clock time it ends at; 0 = permanent.
    pub expires_ms: u64,
    /// Icon texture id.
    pub icon: u16,
}

impl ActiveEffect {
    /// The saved form, with the time remaining at `now_ms` (at least 1 ms for a timed
    /// effect, so it never turns permanent).
    pub fn to_dto(&self, now_ms: u64) -> shared::internal::ActorEffectDto {
        shared::internal::ActorEffectDto {
            handle: self.handle,
            name: self.name.clone(),
            deltas: self.deltas.to_vec(),
            remaining_ms: if self.expires_ms == 0 {
                0
            } else {
                self.expires_ms.saturating_sub(now_ms).max(1)
            },
            icon: self.icon,
        }
    }

    /// From the saved form; the remaining time restarts at `now_ms`.
    pub fn from_dto(d: &shared::internal::ActorEffectDto, now_ms: u64) -> Self {
        let mut deltas = [0; ATTRIBUTE_COUNT];
        for (t, v) in deltas.iter_mut().zip(&d.deltas) {
            *t = *v;
        }
        Self {
            handle: d.handle,
            name: d.name.clone(),
            deltas,
            expires_ms: if d.remaining_ms == 0 {
                0
            } else {
                now_ms.saturating_add(d.remaining_ms)
            },
            icon: d.icon,
        }
    }
}

/// Backpack stacks one side may offer in a trade (trade slot `i` is backpack slot
/// `14 + i`).
pub const TRADE_SLOTS: usize = 32;

/// Realm Crafter's `IsTrading` with `TradingActor`, the confirmation (`TradeResult$`) and
/// V1's server-side `TradeOfferedAmount[32]`, as one state per actor
/// (`sim::items::trade`, `sim::items::shop`).
#[doc(alias = "IsTrading")]
#[doc(alias = "TradingActor")]
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Trading {
    /// 0: not trading.
    #[default]
    Idle,
    /// 1: an NPC's shop window is open.
    Shop(Box<ShopWindow>),
    /// 3: invited to trade with `partner` (waiting for `/trade`).
    Invited {
        /// The other player.
        partner: ActorId,
    },
    /// 4 (`confirmed` is `None`): the trade window is open (or this side invited and waits
    /// for the partner's `/trade`); 5 (`Some`): this side pressed OK.
    Open(Box<TradeSide>),
}

impl Trading {
    /// Realm Crafter's `IsTrading` number: 0, 1, 3, 4 or 5.
    pub fn number(&self) -> u8 {
        match self {
            Self::Idle => 0,
            Self::Shop(_) => 1,
            Self::Invited { .. } => 3,
            Self::Open(s) if s.confirmed.is_some() => 5,
            Self::Open(_) => 4,
        }
    }

    /// The trade partner (states 3, 4 and 5).
    pub fn partner(&self) -> Option<ActorId> {
        match self {
            Self::Invited { partner } => Some(*partner),
            Self::Open(s) => Some(s.partner),
            Self::Idle | Self::Shop(_) => None,
        }
    }
}

/// One side of a player trade (states 4 and 5).
#[derive(Clone, Debug, PartialEq)]
pub struct TradeSide {
    /// The other player (`TradingActor`).
    pub partner: ActorId,
    /// What this side offers, per trade slot (`TradeOfferedAmount`): the stack as it was
    /// when offered, with `amount` the offered part.
    pub offers: [Option<InvSlot>; TRADE_SLOTS],
    /// This side's OK (`TradeResult$`), once pressed.
    pub confirmed: Option<TradeConfirmation>,
}

impl TradeSide {
    /// A fresh side with no offers.
    pub fn new(partner: ActorId) -> Self {
        Self {
            partner,
            offers: std::array::from_fn(|_| None),
            confirmed: None,
        }
    }
}

/// What a player's OK said: what it pays and what it expects of the partner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TradeConfirmation {
    /// Gold this side pays (negative: receives).
    pub cost: i32,
    /// How many it expects from each of the partner's trade slots.
    pub expect: [u32; TRADE_SLOTS],
}

/// An open shop window (state 1): the wares offered to this player, by offer handle.
#[derive(Clone, Debug, PartialEq)]
pub struct ShopWindow {
    /// The vendor.
    pub vendor: ActorId,
    /// The wares as shown.
    pub wares: Vec<ShopOffer>,
}

/// One ware of an open shop window.
#[derive(Clone, Debug, PartialEq)]
pub struct ShopOffer {
    /// The offer handle the client names when buying.
    pub handle: u32,
    /// The vendor's inventory slot.
    pub slot: u8,
    /// The stack as shown (a purchase needs the slot to still hold it).
    pub item: InvSlot,
}

impl std::ops::Deref for Actor {
    type Target = ActorCold;
    fn deref(&self) -> &ActorCold {
        &self.cold
    }
}

impl std::ops::DerefMut for Actor {
    fn deref_mut(&mut self) -> &mut ActorCold {
        &mut self.cold
    }
}

impl Actor {
    /// A fresh actor from a template, at the origin, with no RID yet.
    pub fn from_template(t: &TemplateProps) -> Self {
        let mut attr = [0; ATTRIBUTE_COUNT];
        let mut attr_max = [100; ATTRIBUTE_COUNT];
        for (i, (v, m)) in t.attributes.iter().enumerate().take(ATTRIBUTE_COUNT) {
            if let (Some(a), Some(b)) = (attr.get_mut(i), attr_max.get_mut(i)) {
                *a = *v;
                *b = *m;
            }
        }
        let mut resist = [100; RESISTANCE_COUNT];
        for (i, r) in t.resistances.iter().enumerate().take(RESISTANCE_COUNT) {
            if let Some(s) = resist.get_mut(i) {
                *s = *r;
            }
        }
        Self {
            id: ActorId {
                idx: NIL,
                generation: 0,
            },
            rid: 0,
            template: t.id,
            environment: t.environment,
            aggressiveness: t.aggressiveness,
            ai_mode: AiMode::Wait,
            is_running: false,
            walking_backward: false,
            ignore_update: false,
            area_ack_deadline_ms: None,
            dead: false,
            current_waypoint: 0,
            water: None,
            home_faction: t.faction,
            last_portal: None,
            last_trigger: None,
            x: 0.0,
            y: 0.0,
            z: 0.0,
            yaw: 0.0,
            dest_x: 0.0,
            dest_z: 0.0,
            old_x: 0.0,
            old_z: 0.0,
            radius: t.radius,
            aggressive_range: t.aggressive_range,
            cell: NIL,
            cell_pos: 0,
            slaves: Chain::default(),
            mount: None,
            rider: None,
            leader: None,
            ai_target: None,
            transfer: None,
            player: None,
            underwater_ms: None,
            pause_until_ms: 0,
            last_attack_ms: None,
            last_pos_update_ms: None,
            last_portal_ms: 0,
            player_data: None,
            spells: Vec::new(),
            attr,
            attr_max,
            cold: Box::new(ActorCold {
                is_dm: false,
                rideable: t.rideable,
                xp_multiplier: t.xp_multiplier,
                default_damage_type: t.default_damage_type,
                name: t.race.clone(),
                tag: String::new(),
                gender: 0,
                face: 0,
                hair: 0,
                beard: 0,
                body: 0,
                level: 1,
                xp: 0,
                xp_bar: 0,
                gold: 0,
                reputation: 0,
                team: 0,
                ratings: Box::new([100; FACTION_COUNT]),
                resist,
                memorised: [MEMORISED_EMPTY; MEMORISED_SLOTS],
                inventory: vec![None; INVENTORY_SLOTS],
                script_globals: vec![String::new(); 10],
                script: String::new(),
                death_script: String::new(),
                source_spawn: None,
                party: None,
                handle: 0,
                trading: Trading::Idle,
                effects: Vec::new(),
                last_attacked_ms: None,
            }),
        }
    }

    /// Fill the persistent fields from a saved state (template props come from `t`).
    pub fn from_state(t: &TemplateProps, s: &ActorState) -> Self {
        let mut a = Self::from_template(t);
        a.name.clone_from(&s.name);
        a.tag.clone_from(&s.tag);
        a.gender = s.gender;
        a.face = s.face;
        a.hair = s.hair;
        a.beard = s.beard;
        a.body = s.body;
        a.level = s.level;
        a.xp = s.xp;
        a.xp_bar = s.xp_bar;
        a.gold = s.gold;
        a.reputation = s.reputation;
        a.team = s.team;
        a.home_faction = s.home_faction.min(99);
        for (d, v) in a.ratings.iter_mut().zip(&s.ratings) {
            *d = *v;
        }
        for (d, v) in a.attr.iter_mut().zip(&s.attributes) {
            *d = *v;
        }
        for (d, v) in a.attr_max.iter_mut().zip(&s.attribute_max) {
            *d = *v;
        }
        for (d, v) in a.resist.iter_mut().zip(&s.resistances) {
            *d = *v;
        }
        let pos = |v: f32| shared_clamp(v);
        a.x = pos(s.x);
        a.y = pos(s.y);
        a.z = pos(s.z);
        a.yaw = if s.yaw.is_finite() { s.yaw } else { 0.0 };
        a.dest_x = a.x;
        a.dest_z = a.z;
        a.old_x = a.x;
        a.old_z = a.z;
        for (d, v) in a.inventory.iter_mut().zip(&s.inventory) {
            d.clone_from(v);
        }
        a.spells.clone_from(&s.known_spells);
        for (d, v) in a.memorised.iter_mut().zip(&s.memorised) {
            *d = *v;
        }
        for (d, v) in a.script_globals.iter_mut().zip(&s.script_globals) {
            d.clone_from(v);
        }
        a.script.clone_from(&s.script);
        a.death_script.clone_from(&s.death_script);
        a.ai_mode = AiMode::from_u8(s.ai_mode);
        a.handle = Handle::try_from(s.handle).unwrap_or(0);
        a
    }

    /// The persistent state (without pets and mount; see [`ZoneState::actor_state`]).
    pub fn to_state(&self, area: &str, instance: u16) -> ActorState {
        ActorState {
            template: self.template,
            name: self.name.clone(),
            tag: self.tag.clone(),
            area: area.to_owned(),
            instance,
            x: self.x,
            y: self.y,
            z: self.z,
            yaw: self.yaw,
            gender: self.gender,
            face: self.face,
            hair: self.hair,
            beard: self.beard,
            body: self.body,
            level: self.level,
            xp: self.xp,
            xp_bar: self.xp_bar,
            gold: self.gold,
            reputation: self.reputation,
            team: self.team,
            home_faction: self.home_faction,
            ratings: self.ratings.to_vec(),
            attributes: self.attr.to_vec(),
            attribute_max: self.attr_max.to_vec(),
            resistances: self.resist.to_vec(),
            inventory: self.inventory.clone(),
            known_spells: self.spells.clone(),
            memorised: self.memorised.to_vec(),
            script_globals: self.script_globals.clone(),
            quests: self
                .player_data
                .as_ref()
                .map(|p| p.quests.clone())
                .unwrap_or_default(),
            action_bar: self
                .player_data
                .as_ref()
                .map(|p| p.action_bar.clone())
                .unwrap_or_default(),
            script: self.script.clone(),
            death_script: self.death_script.clone(),
            rid: self.rid,
            ai_mode: self.ai_mode as u8,
            pets: Vec::new(),
            mount: None,
            effects: Vec::new(),
            spell_view: Vec::new(),
            memorising: Vec::new(),
            handle: if self.is_player() {
                u32::try_from(self.handle).unwrap_or(0)
            } else {
                0
            },
            account: self
                .player_data
                .as_ref()
                .map(|p| p.account.clone())
                .unwrap_or_default(),
            email: self
                .player_data
                .as_ref()
                .map(|p| p.email.clone())
                .unwrap_or_default(),
            fence: self.player_data.as_ref().map_or(0, |p| p.fence),
            applied_actions: self
                .player_data
                .as_ref()
                .map(|p| p.applied.clone())
                .unwrap_or_default(),
            scripts: Vec::new(),
        }
    }

    /// Whether the actor is a player (RNID > 0).
    pub fn is_player(&self) -> bool {
        self.player.is_some()
    }

    /// Value of an attribute slot, if the index is valid.
    pub fn attr_value(&self, i: Option<u8>) -> Option<i32> {
        i.and_then(|i| self.attr.get(usize::from(i)).copied())
    }

    /// Maximum of an attribute slot, if the index is valid.
    pub fn attr_maximum(&self, i: Option<u8>) -> Option<i32> {
        i.and_then(|i| self.attr_max.get(usize::from(i)).copied())
    }

    /// Whether the actor is frozen (mid-transfer) or otherwise ignoring updates.
    pub fn frozen(&self) -> bool {
        self.transfer.is_some()
    }
}

fn shared_clamp(v: f32) -> f32 {
    shared::wire::clamp_world_coord(v)
}

/// RuntimeID ranges (inclusive). Player RIDs are assigned cluster-wide by the gateway and
/// travel with the player; NPC RIDs are per instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RidRanges {
    /// First player RID (>= 1).
    pub player_lo: u16,
    /// Last player RID.
    pub player_hi: u16,
    /// First NPC RID.
    pub npc_lo: u16,
    /// Last NPC RID (<= 65534).
    pub npc_hi: u16,
}

impl Default for RidRanges {
    fn default() -> Self {
        Self {
            player_lo: 1,
            player_hi: 15999,
            npc_lo: 16000,
            npc_hi: 65534,
        }
    }
}

/// A scheduled action run by the housekeeping phase when due.
#[derive(Clone, Debug, PartialEq)]
pub enum Scheduled {
    /// The default death script's 5 s wait is over: restore and warp the player.
    DeathRespawn {
        /// Who.
        actor: ActorId,
    },
    /// A rules-defined timer (announced as `EngineEvent::TimerDue`).
    Script {
        /// Context actor.
        actor: ActorId,
        /// Free-form tag.
        tag: String,
    },
}

/// A party (members may be in other zones; this zone tracks the local ones by name).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Party {
    /// Member names, leader first; at most 8.
    pub members: Vec<String>,
}

/// An outgoing transfer waiting for ack/nack.
#[derive(Clone, Debug)]
pub struct PendingTransfer {
    /// The frozen actor (with its mount and pets frozen too).
    pub actor: ActorId,
    /// Frozen companions (mount, pets).
    pub companions: Vec<ActorId>,
    /// When it times out.
    pub deadline_ms: u64,
}

/// An incoming transfer held between its ack and the source's commit (phase one of the
/// handoff): validated, invisible, costing nothing but memory.
#[derive(Clone, Debug)]
pub struct PreparedArrival {
    /// The player's session, `None` for an NPC.
    pub player: Option<PlayerKey>,
    /// Whether the account is a DM.
    pub is_dm: bool,
    /// The actor with its mount and pets.
    pub state: ActorState,
    /// Where to place it.
    pub arrival: Arrival,
    /// When it is dropped if neither commit nor abort came.
    pub deadline_ms: u64,
}

/// Zone-wide configuration (validated by the shell; the sim only clamps).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ZoneConfig {
    /// Instance number.
    pub instance: u16,
    /// Instance handle sent in P_ChangeArea / P_NewActor (the client's CurrentAreaID).
    pub instance_handle: u32,
    /// RNG seed.
    pub seed: u64,
    /// Broadcast period (ms), 200.
    pub broadcast_ms: u64,
    /// Mid band period (ms), 1000: each player gets the mid band on one broadcast tick in
    /// every `mid_band_ms / broadcast_ms` (staggered by player).
    pub mid_band_ms: u64,
    /// Broadcast groups, 1..=32 (1: Realm Crafter's one burst per interval). The players are
    /// split by slab slot into this many groups, and the ticks of a broadcast interval take
    /// turns: the interval's first tick broadcasts to group 0, the next tick to group 1, and
    /// so on. Each player still gets one broadcast per interval, but the gateway and the
    /// network get a crowd's datagrams spread over the interval instead of in one burst.
    /// The node sets it to `broadcast_ms / tick_ms` (6 at Realm Crafter's rates).
    pub broadcast_groups: u32,
    /// Spell recharge step (ms), 100.
    pub recharge_ms: u64,
    /// Close band radius, 500.
    pub update_distance: f32,
    /// Far band radius, 1000.
    pub far_distance: f32,
    /// Spatial grid cell size.
    pub grid_cell: f32,
    /// Datagram byte budget.
    pub datagram_budget: usize,
    /// RuntimeID ranges.
    pub rids: RidRanges,
    /// Transfer timeout (ms), 2000: an outgoing transfer with no ack by then rolls back.
    pub transfer_timeout_ms: u64,
    /// How long a prepared arrival waits for the source's commit or abort (ms), 10000.
    pub prepare_timeout_ms: u64,
    /// Period of the character snapshots of every online player (ms); 0 disables.
    pub persist_every_ms: u64,
    /// Instruction budget of one script instance per scripts phase (loop back edges and
    /// calls); past it the instance is paused until the next tick.
    pub script_budget: u64,
    /// Budget of the whole scripts phase, all instances together.
    pub script_tick_budget: u64,
    /// Scripts phases in a row an instance may end at its budget before it is ended as a
    /// runaway.
    pub script_max_overruns: u32,
    /// How long a script waits for a client's answer to a dialog, an input prompt or a
    /// progress bar (ms), 600000: then the window closes and the script carries on as if
    /// the answer were 0 (or `""`). Realm Crafter waited forever.
    pub script_reply_timeout_ms: u64,
    /// Unix time (ms) at zone time 0, for `RealDate`/`RealTime` (the shell sets it; the
    /// sim never reads the clock).
    pub epoch_ms: u64,
    /// Unix time (ms) at which the game clock read the world's stored `Environment.dat`
    /// time: the cluster's clock epoch, the same on every node (see `shared::clock`).
    /// 0 = this zone's own [`Self::epoch_ms`] (tests, a zone without a gateway).
    pub clock_epoch_ms: u64,
    /// First script handle of this zone's NPCs (`Actor()` numbers). Players' handles come
    /// from the gateway (below 2^30); each AreaInstance numbers its NPCs from its own base
    /// so a handle a script carries to another zone never names someone else there.
    pub npc_handle_base: u32,
    /// How many NPC handles the zone may number before wrapping.
    pub npc_handle_span: u32,
    /// The id block this zone's transfers are minted in (the node's registration's, from
    /// the gateway; 0 before the node has one). See [`TransferId`].
    pub transfer_block: u64,
    /// This zone's minter number in [`Self::transfer_block`] (the node gives every sim it
    /// creates, a rebuild included, its own).
    pub transfer_minter: u32,
    /// Items on the ground: lifetime, cap and pickup reach (`sim::items::ground`).
    pub ground: GroundConfig,
    /// Most script instances, live and queued, whose `Actor()` is one actor; a start past
    /// it is refused (logged and counted). Default 64.
    pub scripts_per_actor: u32,
    /// Most script instances, live and queued, in the zone. Default 4096.
    pub scripts_per_zone: u32,
}

/// Items on the ground (`docs/items.md`, "Items on the ground"): Realm Crafter kept a
/// dropped item until someone picked it up, with no limit; these bound it.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct GroundConfig {
    /// How long an item stays on the ground (ms) before it is destroyed; 0 = forever
    /// (Realm Crafter). Default 10 minutes.
    pub lifetime_ms: u64,
    /// Most items on the ground of one AreaInstance (>= 1); at the cap, the oldest goes
    /// to make room. Default 500.
    pub cap: u32,
    /// Pickup reach: the picker's XZ distance to the item must be below this. Default 20
    /// (Realm Crafter's `InteractDist` 400 is this squared).
    pub pickup_radius: f32,
}

impl GroundConfig {
    /// Default [`Self::lifetime_ms`]: 10 minutes.
    pub const LIFETIME_MS: u64 = 600_000;
    /// Default [`Self::cap`].
    pub const CAP: u32 = 500;
    /// Default [`Self::pickup_radius`].
    pub const PICKUP_RADIUS: f32 = 20.0;
}

impl Default for GroundConfig {
    fn default() -> Self {
        Self {
            lifetime_ms: Self::LIFETIME_MS,
            cap: Self::CAP,
            pickup_radius: Self::PICKUP_RADIUS,
        }
    }
}

/// Bytes of zone-wide frames a player's outbox holds before they are sent with the current
/// tick rather than with the player's broadcast.
pub const OUTBOX_FLUSH_BYTES: usize = 64 * 1024;

pub use shared::content::NPC_HANDLE_BASE;
/// Handles of players whose character has no gateway handle yet: this plus the RuntimeID.
pub const PLAYER_FALLBACK_HANDLE: u32 = 0x3000_0000;

impl ZoneConfig {
    /// The most broadcast groups (one bit each in a tick's group mask).
    pub const MAX_BROADCAST_GROUPS: u32 = 32;

    /// [`Self::broadcast_groups`], within 1..=[`Self::MAX_BROADCAST_GROUPS`].
    pub fn groups(&self) -> u32 {
        self.broadcast_groups.clamp(1, Self::MAX_BROADCAST_GROUPS)
    }
}

/// Whether the player in slab slot `idx` is in one of the broadcast groups of `mask`
/// (bit g: group g of `groups`).
pub fn in_broadcast_groups(mask: u32, idx: u32, groups: u32) -> bool {
    mask & (1 << (idx % groups.max(1)).min(31)) != 0
}

impl Default for ZoneConfig {
    fn default() -> Self {
        Self {
            instance: 0,
            instance_handle: 0,
            seed: 0x5eed,
            broadcast_ms: 200,
            mid_band_ms: 1000,
            broadcast_groups: 1,
            recharge_ms: 100,
            update_distance: 500.0,
            far_distance: 1000.0,
            grid_cell: 125.0,
            datagram_budget: 1200,
            rids: RidRanges::default(),
            transfer_timeout_ms: 2000,
            prepare_timeout_ms: 10_000,
            persist_every_ms: 300_000,
            script_budget: 20_000,
            script_tick_budget: 400_000,
            script_max_overruns: 150,
            script_reply_timeout_ms: 600_000,
            epoch_ms: 0,
            clock_epoch_ms: 0,
            npc_handle_base: NPC_HANDLE_BASE,
            npc_handle_span: 1 << 20,
            transfer_block: 0,
            transfer_minter: 1,
            ground: GroundConfig::default(),
            scripts_per_actor: 64,
            scripts_per_zone: 4_096,
        }
    }
}

/// One slab slot.
#[derive(Clone, Debug)]
struct Slot {
    generation: u32,
    actor: Option<Actor>,
}

/// What reacts to the engine events the rules announce (the script dispatcher,
/// `scripts::Dispatcher`, installed by `ZoneSim`). Named here, at the data layer, so that
/// a rule announces without naming what listens.
pub trait Observer: Send + Sync {
    /// React to one event (may change the state and announce more).
    fn react(&self, st: &mut ZoneState, event: EngineEvent);
}

/// The observer of a state made without one: every event is dropped.
#[derive(Clone, Copy, Debug, Default)]
pub struct Unobserved;

impl Observer for Unobserved {
    fn react(&self, _st: &mut ZoneState, _event: EngineEvent) {}
}

/// Events handled by one [`ZoneState::react`] at most; any left wait for the next (a
/// reaction that keeps announcing cannot stall the zone).
pub const EVENTS_PER_DRAIN: usize = 65_536;

/// The whole mutable state of one AreaInstance. Phase functions take `&mut ZoneState`.
pub struct ZoneState {
    /// Configuration.
    pub cfg: ZoneConfig,
    /// Content.
    pub content: Arc<ZoneContent>,
    /// What reacts to engine events (`scripts::Dispatcher` in a `ZoneSim`).
    pub observer: Arc<dyn Observer>,
    /// Engine events announced and not yet reacted to, oldest first ([`Self::announce`]).
    pub engine_events: VecDeque<EngineEvent>,
    /// The RNG.
    pub rng: SimRng,
    /// `now` of the current tick (ms).
    pub now_ms: u64,
    /// The game clock (the world's calendar and the cluster's clock epoch; read it through
    /// `sim::clock`).
    pub clock: shared::clock::GameClock,
    slots: Vec<Slot>,
    /// Chain links per slab slot, by [`ChainKind`] (parallel to `slots`, kept dense so a
    /// chain walk is a pointer chase over 36-byte records instead of whole actors).
    links: Vec<[Link; 3]>,
    free: Vec<u32>,
    /// `FirstInZone`.
    pub zone: Chain,
    /// Online players in this instance.
    pub online: Chain,
    rid_map: Vec<u32>,
    npc_cursor: u16,
    by_player: HashMap<PlayerKey, ActorId>,
    /// The spatial index.
    pub grid: Grid,
    /// Kills queued during the actor loop: `(victim, killer)`.
    #[doc(alias = "DeferKillActor")]
    pub pending_kills: Vec<(ActorId, Option<ActorId>)>,
    /// Scheduled actions `(due_ms, action)`, in insertion order.
    pub scheduled: Vec<(u64, Scheduled)>,
    /// Outgoing transfers.
    pub transfers: BTreeMap<TransferId, PendingTransfer>,
    /// Incoming transfers acknowledged and waiting for the source's commit.
    pub prepared: BTreeMap<TransferId, PreparedArrival>,
    /// Arrived players whose `IgnoreUpdate` waits for the client's acknowledgement.
    pub awaiting_area_ack: Vec<ActorId>,
    /// Recently seen incoming transfer ids (duplicates refused).
    pub seen_transfers: BTreeMap<TransferId, u64>,
    /// Mints this zone's outgoing transfer ids.
    pub transfer_ids: TransferMinter,
    /// Current weather (0 sun .. 5 wind).
    pub weather: u8,
    /// When the current weather ends, as an absolute deadline in units of
    /// [`weather::MS_PER_VISIT`](super::weather::MS_PER_VISIT) (100 ms) of `now_ms`, rounded
    /// up; 0 = roll at the next visit. Not a count of visits left.
    pub weather_time: i32,
    /// `WeatherLink`: the current weather of other areas' instance 0 that this zone knows
    /// (area name in lower case → weather), supplied by the shell or an embedding game; a
    /// linked area missing here makes the zone roll its own weather.
    pub linked_weather: BTreeMap<String, u8>,
    /// `Spawned[]` per spawn point.
    pub spawned: Vec<u16>,
    /// `SpawnLast[]` per spawn point.
    pub spawn_last: Vec<u64>,
    /// Parties.
    pub parties: Vec<Party>,
    /// Next broadcast time.
    pub next_broadcast_ms: u64,
    /// Broadcast intervals so far (staggers the mid band).
    pub broadcasts: u64,
    /// The next broadcast group of the current interval (`broadcast_groups` when all are
    /// done).
    pub broadcast_group: u32,
    /// Next recharge step.
    pub next_recharge_ms: u64,
    /// When actor effects end, earliest first (managed by `sim::effects`): the
    /// housekeeping phase looks only at the actors whose time has come.
    pub effect_ends: EffectEnds,
    /// Earliest completion of a memorisation in progress (`u64::MAX`: none).
    pub next_memorise_ms: u64,
    /// Next regeneration step ([`super::regen`]); 0 = not started.
    pub next_regen_ms: u64,
    /// Next periodic snapshot time.
    pub next_persist_ms: u64,
    /// Whether this tick recharges spells.
    pub recharge_now: bool,
    /// How many recharge steps came due at this tick (usually 1 when `recharge_now`).
    pub recharge_steps: u32,
    /// Counters of the current tick.
    pub counters: Counters,
    /// Non-datagram outputs of the current tick.
    pub outputs: Vec<ZoneOutput>,
    /// Scratch list reused by phases.
    pub scratch: Vec<u32>,
    /// Whether arrivals are announced (`P_ChangeArea`, `P_NewActor`). Only the bench's
    /// set-up turns this off, to pre-load a zone without O(actors × players) packets.
    pub announce: bool,
    /// Running scripts.
    pub scripts: Scripts,
    /// Script handles of the actors here.
    handles: HashMap<Handle, ActorId>,
    /// Next NPC handle offset.
    npc_handle_next: u32,
    /// Items lying in the area, by their dropped-item handle (`sim::items::ground`).
    pub ground: BTreeMap<u32, GroundItem>,
    /// The last dropped-item handle issued (handles are never reused while the instance
    /// lives, so a client never echoes a handle that now names another item).
    pub ground_handle: u32,
    /// Players whose items or money changed through another party (a trade, a shop, a drop
    /// or a pickup) since a checkpoint last saved them; see [`ZoneState::entangle`].
    pub entangled: BTreeSet<ActorId>,
    /// Whether the area's ground items changed since the last checkpoint that saved them.
    pub ground_dirty: bool,
    /// When the housekeeping phase next looks for expired ground items.
    pub ground_sweep_ms: u64,
}

/// One item lying in the area (Realm Crafter's `DroppedItem`).
#[derive(Clone, Debug, PartialEq)]
pub struct GroundItem {
    /// The item and its stack size.
    pub item: InvSlot,
    /// Position.
    pub x: f32,
    /// Position.
    pub y: f32,
    /// Position.
    pub z: f32,
    /// When it expires (zone clock, ms).
    pub expires_ms: u64,
}

impl ZoneState {
    /// A rule announces an engine event: it joins the queue that `ZoneSim` drains after
    /// every input and every phase ([`Self::react`]).
    pub fn announce(&mut self, event: EngineEvent) {
        self.engine_events.push_back(event);
    }

    /// An engine event whose reaction must happen before the rule goes on (`Logout.Main`
    /// before the final save, an area's Exit script before the travelling state is taken):
    /// the observer reacts now, after anything announced before it.
    pub fn trigger(&mut self, event: EngineEvent) {
        self.react();
        let observer = self.observer.clone();
        observer.react(self, event);
    }

    /// The observer reacts to the queued engine events, oldest first, including those the
    /// reactions announce (at most [`EVENTS_PER_DRAIN`]; the rest wait for the next call).
    pub fn react(&mut self) {
        if self.engine_events.is_empty() {
            return;
        }
        let observer = self.observer.clone();
        for _ in 0..EVENTS_PER_DRAIN {
            let Some(event) = self.engine_events.pop_front() else {
                return;
            };
            observer.react(self, event);
        }
    }

    /// The scheduled actions that are due become engine events, in insertion order
    /// (housekeeping, phase 2).
    pub fn run_scheduled(&mut self) {
        if self.scheduled.is_empty() {
            return;
        }
        let now = self.now_ms;
        let all = std::mem::take(&mut self.scheduled);
        let (due, keep): (Vec<_>, Vec<_>) = all.into_iter().partition(|(t, _)| *t <= now);
        self.scheduled = keep;
        for (_, what) in due {
            self.announce(match what {
                Scheduled::DeathRespawn { actor } => EngineEvent::DeathTimerDone { victim: actor },
                Scheduled::Script { actor, tag } => EngineEvent::TimerDue { actor, tag },
            });
        }
    }

    /// Whether an actor is alive for combat and AI purposes: exists, not dead, not frozen
    /// in a transfer, and Health > 0 when the game has a Health stat.
    pub fn alive(&self, id: ActorId) -> bool {
        let Some(a) = self.get(id) else { return false };
        if a.dead || a.frozen() {
            return false;
        }
        match self.content.fixed.health {
            Some(h) => a.attr_value(Some(h)).unwrap_or(1) > 0,
            None => true,
        }
    }

    /// The speed ratio `Speed.Value / Speed.Max` (1.0 when there is no Speed stat or Max
    /// is 0).
    pub fn speed_ratio(&self, id: ActorId) -> f32 {
        let Some(a) = self.get(id) else { return 1.0 };
        let stat = self.content.fixed.speed;
        match (a.attr_value(stat), a.attr_maximum(stat)) {
            (Some(v), Some(m)) if m != 0 => v as f32 / m as f32,
            _ => 1.0,
        }
    }

    /// Record that items or money moved between these players (and, with `ground`, the
    /// area's ground items): until a checkpoint saves them, a snapshot of any one of them
    /// must save all of them and the ground in the same atomic group, so a node loss can
    /// never restore one side of an exchange without the other (`docs/items.md`).
    pub fn entangle(&mut self, ids: &[ActorId], ground: bool) {
        for &id in ids {
            if self.get(id).is_some_and(Actor::is_player) {
                self.entangled.insert(id);
            }
        }
        self.ground_dirty |= ground;
    }

    /// An empty instance.
    pub fn new(cfg: ZoneConfig, content: Arc<ZoneContent>, observer: Arc<dyn Observer>) -> Self {
        let grid = Grid::for_area(&content.area, cfg.grid_cell);
        let n_spawns = content.area.spawns.len();
        let rng = SimRng::new(cfg.seed);
        let npc_cursor = cfg.rids.npc_lo;
        let transfer_ids = TransferMinter::new(cfg.transfer_block, cfg.transfer_minter);
        let clock_epoch = if cfg.clock_epoch_ms != 0 {
            cfg.clock_epoch_ms
        } else {
            cfg.epoch_ms
        };
        let clock = shared::clock::GameClock::new(&content.world.environment, clock_epoch);
        Self {
            cfg,
            content,
            observer,
            engine_events: VecDeque::new(),
            rng,
            now_ms: 0,
            clock,
            slots: Vec::new(),
            links: Vec::new(),
            free: Vec::new(),
            zone: Chain::default(),
            online: Chain::default(),
            rid_map: vec![NIL; 65536],
            npc_cursor,
            by_player: HashMap::new(),
            grid,
            pending_kills: Vec::new(),
            scheduled: Vec::new(),
            transfers: BTreeMap::new(),
            prepared: BTreeMap::new(),
            awaiting_area_ack: Vec::new(),
            seen_transfers: BTreeMap::new(),
            transfer_ids,
            weather: 0,
            weather_time: 0,
            linked_weather: BTreeMap::new(),
            spawned: vec![0; n_spawns],
            spawn_last: vec![0; n_spawns],
            parties: Vec::new(),
            next_broadcast_ms: 0,
            broadcast_group: u32::MAX,
            broadcasts: 0,
            next_recharge_ms: 0,
            effect_ends: EffectEnds::default(),
            next_memorise_ms: u64::MAX,
            next_regen_ms: 0,
            recharge_now: false,
            recharge_steps: 0,
            next_persist_ms: 0,
            counters: Counters::default(),
            outputs: Vec::new(),
            scratch: Vec::new(),
            announce: true,
            scripts: Scripts::new(),
            ground: BTreeMap::new(),
            ground_handle: 0,
            entangled: BTreeSet::new(),
            ground_dirty: false,
            ground_sweep_ms: 0,
            handles: HashMap::new(),
            npc_handle_next: 0,
        }
    }

    // ----- script handles -------------------------------------------------------------

    /// The script handle of an actor (0 if it is gone).
    pub fn handle_of(&self, id: ActorId) -> Handle {
        self.get(id).map_or(0, |a| a.handle)
    }

    /// The actor a script handle names, if it is in this zone.
    pub fn actor_by_handle(&self, h: Handle) -> Option<ActorId> {
        if h <= 0 {
            return None;
        }
        let id = *self.handles.get(&h)?;
        self.get(id).map(|_| id)
    }

    /// A handle for an actor being inserted: a player keeps the gateway's handle (or gets
    /// one made from its cluster-wide RuntimeID); an NPC gets the zone's next NPC handle.
    fn assign_handle(&mut self, wanted: Handle, player: bool, rid: RuntimeId) -> Handle {
        if player {
            let ok =
                |h: Handle| h > 0 && (h as u32) < NPC_HANDLE_BASE && !self.handles.contains_key(&h);
            if ok(wanted) {
                return wanted;
            }
            let fallback = (PLAYER_FALLBACK_HANDLE | u32::from(rid)) as Handle;
            if ok(fallback) {
                return fallback;
            }
        }
        let span = self.cfg.npc_handle_span.max(1);
        for _ in 0..span.min(1 << 16) {
            let off = self.npc_handle_next % span;
            self.npc_handle_next = self.npc_handle_next.wrapping_add(1);
            let h = Handle::try_from(self.cfg.npc_handle_base.saturating_add(off)).unwrap_or(0);
            if h > 0 && !self.handles.contains_key(&h) {
                return h;
            }
        }
        0
    }

    // ----- lookup -------------------------------------------------------------------

    /// The actor behind a handle, if it still exists.
    pub fn get(&self, id: ActorId) -> Option<&Actor> {
        let s = self.slots.get(id.idx as usize)?;
        if s.generation != id.generation {
            return None;
        }
        s.actor.as_ref()
    }

    /// Mutable access through a handle.
    pub fn get_mut(&mut self, id: ActorId) -> Option<&mut Actor> {
        let s = self.slots.get_mut(id.idx as usize)?;
        if s.generation != id.generation {
            return None;
        }
        s.actor.as_mut()
    }

    /// The actor in a slab slot (no generation check; for chain and grid walks).
    pub fn at(&self, idx: u32) -> Option<&Actor> {
        self.slots.get(idx as usize).and_then(|s| s.actor.as_ref())
    }

    /// Mutable access to a slab slot.
    pub fn at_mut(&mut self, idx: u32) -> Option<&mut Actor> {
        self.slots
            .get_mut(idx as usize)
            .and_then(|s| s.actor.as_mut())
    }

    /// Two distinct actors mutably at once.
    pub fn pair_mut(&mut self, a: ActorId, b: ActorId) -> Option<(&mut Actor, &mut Actor)> {
        if a.idx == b.idx {
            return None;
        }
        let (lo, hi, swap) = if a.idx < b.idx {
            (a, b, false)
        } else {
            (b, a, true)
        };
        let (left, right) = self.slots.split_at_mut(hi.idx as usize);
        let l = left.get_mut(lo.idx as usize)?;
        let r = right.first_mut()?;
        if l.generation != lo.generation || r.generation != hi.generation {
            return None;
        }
        let (la, ra) = (l.actor.as_mut()?, r.actor.as_mut()?);
        Some(if swap { (ra, la) } else { (la, ra) })
    }

    /// The actor with this RuntimeID in this instance.
    pub fn by_rid(&self, rid: RuntimeId) -> Option<ActorId> {
        let idx = *self.rid_map.get(usize::from(rid))?;
        self.at(idx).map(|a| a.id)
    }

    /// The actor of a player session.
    pub fn by_player(&self, p: PlayerKey) -> Option<ActorId> {
        self.by_player
            .get(&p)
            .copied()
            .filter(|id| self.get(*id).is_some())
    }

    /// The link of slab slot `idx` in a chain ([`Link::default`] for a free or unknown
    /// slot).
    #[inline]
    pub fn link(&self, idx: u32, kind: ChainKind) -> Link {
        self.links
            .get(idx as usize)
            .and_then(|l| l.get(kind as usize))
            .copied()
            .unwrap_or_default()
    }

    #[inline]
    fn link_mut(&mut self, idx: u32, k: usize) -> Option<&mut Link> {
        self.links.get_mut(idx as usize).and_then(|l| l.get_mut(k))
    }

    /// Slab capacity (upper bound of slot indices).
    pub fn slab_len(&self) -> u32 {
        u32::try_from(self.slots.len()).unwrap_or(u32::MAX)
    }

    /// Number of live actors.
    pub fn actor_count(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// Slab indices of a chain, collected (for walks that mutate chains).
    pub fn chain_members(&self, chain: Chain, kind: ChainKind) -> Vec<u32> {
        let mut v = Vec::with_capacity(chain.len as usize);
        self.chain_collect(chain, kind, &mut v);
        v
    }

    /// Collect a chain's slab indices into `out` (cleared first).
    pub fn chain_collect(&self, chain: Chain, kind: ChainKind, out: &mut Vec<u32>) {
        out.clear();
        let mut cur = chain.first;
        let mut guard = 0u32;
        while cur != NIL && guard <= chain.len {
            out.push(cur);
            cur = self.link(cur, kind).next;
            guard += 1;
        }
    }

    /// The handles of a leader's pets.
    pub fn slaves_of(&self, leader: ActorId) -> Vec<ActorId> {
        let Some(l) = self.get(leader) else {
            return Vec::new();
        };
        self.chain_members(l.slaves, ChainKind::Slaves)
            .into_iter()
            .filter_map(|i| self.at(i).map(|a| a.id))
            .collect()
    }

    // ----- chains -------------------------------------------------------------------

    fn chain_head(&mut self, kind: ChainKind, owner: Option<u32>) -> Option<&mut Chain> {
        match kind {
            ChainKind::Zone => Some(&mut self.zone),
            ChainKind::Online => Some(&mut self.online),
            ChainKind::Slaves => owner.and_then(|o| self.at_mut(o)).map(|a| &mut a.slaves),
        }
    }

    /// Link `idx` at the head of a chain (no-op if already linked).
    pub fn chain_insert(&mut self, kind: ChainKind, owner: Option<u32>, idx: u32) {
        let k = kind as usize;
        if self.at(idx).is_none() || self.link(idx, kind).linked {
            return;
        }
        let Some(head) = self.chain_head(kind, owner) else {
            return;
        };
        let old_first = head.first;
        head.first = idx;
        head.len += 1;
        if let Some(l) = self.link_mut(idx, k) {
            *l = Link {
                prev: NIL,
                next: old_first,
                linked: true,
            };
        }
        if old_first != NIL
            && self.at(old_first).is_some()
            && let Some(f) = self.link_mut(old_first, k)
        {
            f.prev = idx;
        }
    }

    /// Unlink `idx` from a chain in O(1) (no-op if not linked).
    pub fn chain_remove(&mut self, kind: ChainKind, owner: Option<u32>, idx: u32) {
        let k = kind as usize;
        let link = self.link(idx, kind);
        if self.at(idx).is_none() || !link.linked {
            return;
        }
        if link.prev != NIL {
            if self.at(link.prev).is_some()
                && let Some(p) = self.link_mut(link.prev, k)
            {
                p.next = link.next;
            }
        } else if let Some(head) = self.chain_head(kind, owner) {
            head.first = link.next;
        }
        if link.next != NIL
            && self.at(link.next).is_some()
            && let Some(n) = self.link_mut(link.next, k)
        {
            n.prev = link.prev;
        }
        if let Some(head) = self.chain_head(kind, owner) {
            head.len = head.len.saturating_sub(1);
        }
        if let Some(l) = self.link_mut(idx, k) {
            *l = Link::default();
        }
    }

    /// `SlaveLink`: make `pet` a slave of `leader`.
    pub fn slave_link(&mut self, leader: ActorId, pet: ActorId) {
        if self.get(leader).is_none() || self.get(pet).is_none() || leader == pet {
            return;
        }
        self.slave_unlink(pet);
        self.chain_insert(ChainKind::Slaves, Some(leader.idx), pet.idx);
        if let Some(p) = self.get_mut(pet) {
            p.leader = Some(leader);
        }
    }

    /// `SlaveUnlink`: detach `pet` from its leader.
    pub fn slave_unlink(&mut self, pet: ActorId) {
        let Some(leader) = self.get(pet).and_then(|p| p.leader) else {
            return;
        };
        let owner = self.get(leader).map(|l| l.id.idx);
        if owner.is_some() {
            self.chain_remove(ChainKind::Slaves, owner, pet.idx);
        } else if self.get(pet).is_some()
            && let Some(l) = self.link_mut(pet.idx, ChainKind::Slaves as usize)
        {
            // The leader is gone; just clear the link.
            *l = Link::default();
        }
        if let Some(p) = self.get_mut(pet) {
            p.leader = None;
        }
    }

    // ----- lifetime -----------------------------------------------------------------

    /// Allocate a free NPC RuntimeID (rotating cursor over the NPC range).
    pub fn alloc_npc_rid(&mut self) -> Option<RuntimeId> {
        let r = self.cfg.rids;
        let lo = r.npc_lo.max(1);
        let hi = r.npc_hi.clamp(lo, 65534);
        let span = u32::from(hi - lo) + 1;
        let mut c = self.npc_cursor.clamp(lo, hi);
        for _ in 0..span {
            let cand = c;
            c = if c >= hi { lo } else { c + 1 };
            if self.rid_map.get(usize::from(cand)) == Some(&NIL) {
                self.npc_cursor = c;
                return Some(cand);
            }
        }
        None
    }

    /// Whether a RID is a free player RID of this cluster's player range.
    pub fn player_rid_ok(&self, rid: RuntimeId) -> bool {
        let r = self.cfg.rids;
        rid >= r.player_lo.max(1)
            && rid <= r.player_hi
            && self.rid_map.get(usize::from(rid)) == Some(&NIL)
    }

    /// Put an actor into the slab with the given RID, link it into `FirstInZone` (and the
    /// online chain for players) and the grid. The RID must be free (checked by callers).
    pub fn insert_actor(&mut self, mut actor: Actor, rid: RuntimeId) -> Option<ActorId> {
        if rid == 0 || self.rid_map.get(usize::from(rid)) != Some(&NIL) {
            return None;
        }
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                let i = u32::try_from(self.slots.len()).ok().filter(|&i| i != NIL)?;
                self.slots.push(Slot {
                    generation: 0,
                    actor: None,
                });
                self.links.push([Link::default(); 3]);
                i
            }
        };
        let handle = self.assign_handle(actor.handle, actor.player.is_some(), rid);
        let slot = self.slots.get_mut(idx as usize)?;
        slot.generation = slot.generation.wrapping_add(1);
        let id = ActorId {
            idx,
            generation: slot.generation,
        };
        actor.id = id;
        actor.rid = rid;
        actor.handle = handle;
        if handle != 0 {
            self.handles.insert(handle, id);
        }
        if let Some(l) = self.links.get_mut(idx as usize) {
            *l = [Link::default(); 3];
        }
        actor.slaves = Chain::default();
        actor.cell = NIL;
        let player = actor.player;
        slot.actor = Some(actor);
        if let Some(m) = self.rid_map.get_mut(usize::from(rid)) {
            *m = idx;
        }
        if let Some(p) = player {
            self.by_player.insert(p, id);
        }
        self.link_into_zone(id);
        Some(id)
    }

    /// Link an actor into `FirstInZone`, the online chain (players) and the grid.
    pub fn link_into_zone(&mut self, id: ActorId) {
        let Some(a) = self.get(id) else { return };
        let is_player = a.is_player();
        self.chain_insert(ChainKind::Zone, None, id.idx);
        if is_player {
            self.chain_insert(ChainKind::Online, None, id.idx);
        }
        self.grid_place(id.idx);
    }

    /// Unlink an actor from `FirstInZone`, the online chain and the grid (it stays in the
    /// slab; used while frozen in a transfer).
    pub fn unlink_from_zone(&mut self, id: ActorId) {
        if self.get(id).is_none() {
            return;
        }
        self.chain_remove(ChainKind::Zone, None, id.idx);
        self.chain_remove(ChainKind::Online, None, id.idx);
        self.grid_remove(id.idx);
    }

    /// `FreeActorInstance`: remove from every chain, the grid and the RID map, detach the
    /// mount, rider, leader and pets, drop pending references, and free the slot.
    pub fn free_actor(&mut self, id: ActorId) -> Option<Actor> {
        let (rid, player, mount, rider, handle) = {
            let a = self.get(id)?;
            (a.rid, a.player, a.mount, a.rider, a.handle)
        };
        if self.handles.get(&handle) == Some(&id) {
            self.handles.remove(&handle);
        }
        self.unlink_from_zone(id);
        self.slave_unlink(id);
        for pet in self.slaves_of(id) {
            self.slave_unlink(pet);
        }
        if let Some(m) = mount.and_then(|m| self.get_mut(m)) {
            m.rider = None;
        }
        if let Some(r) = rider.and_then(|r| self.get_mut(r)) {
            r.mount = None;
        }
        if self.rid_map.get(usize::from(rid)) == Some(&id.idx)
            && let Some(m) = self.rid_map.get_mut(usize::from(rid))
        {
            *m = NIL;
        }
        if let Some(p) = player
            && self.by_player.get(&p) == Some(&id)
        {
            self.by_player.remove(&p);
        }
        if let Some(l) = self.links.get_mut(id.idx as usize) {
            *l = [Link::default(); 3];
        }
        let slot = self.slots.get_mut(id.idx as usize)?;
        let actor = slot.actor.take();
        self.free.push(id.idx);
        actor
    }

    // ----- grid -------------------------------------------------------------------

    /// Put an actor into its grid cell (no-op if already placed).
    pub fn grid_place(&mut self, idx: u32) {
        let Some(a) = self.at(idx) else { return };
        if a.cell != NIL {
            return;
        }
        let (x, z) = (a.x, a.z);
        let cell = self.grid.cell_of(x, z);
        let pos = self.grid.push(cell, idx, x, z);
        if let Some(a) = self.at_mut(idx) {
            a.cell = cell;
            a.cell_pos = pos;
        }
    }

    /// Take an actor out of the grid.
    pub fn grid_remove(&mut self, idx: u32) {
        let Some(a) = self.at(idx) else { return };
        let (cell, pos) = (a.cell, a.cell_pos);
        if cell == NIL {
            return;
        }
        if let Some(moved) = self.grid.swap_remove(cell, pos)
            && let Some(m) = self.at_mut(moved)
        {
            m.cell_pos = pos;
        }
        if let Some(a) = self.at_mut(idx) {
            a.cell = NIL;
        }
    }

    /// After an actor's X/Z changed: move it to its new cell if needed (O(1)) and store the
    /// new position in its grid entry. Every write of `x`/`z` must be followed by this.
    pub fn grid_update(&mut self, idx: u32) {
        let Some(a) = self.at(idx) else { return };
        if a.cell == NIL {
            return;
        }
        let (x, z, old, pos) = (a.x, a.z, a.cell, a.cell_pos);
        let cell = self.grid.cell_of(x, z);
        if cell == old {
            self.grid.set_pos(cell, pos, x, z);
        } else {
            self.grid_remove(idx);
            self.grid_place(idx);
        }
    }

    /// Re-file every actor in the grid from its current position (O(actors)); for test
    /// harnesses that write positions directly.
    pub fn grid_resync(&mut self) {
        for idx in 0..self.slab_len() {
            self.grid_update(idx);
        }
    }

    // ----- output -------------------------------------------------------------------

    /// Count a rejection and report it.
    pub fn reject(&mut self, player: Option<PlayerKey>, reason: Rejection) {
        if let Some(c) = self.counters.rejections.get_mut(reason as usize) {
            *c += 1;
        }
        self.outputs.push(ZoneOutput::Rejected { player, reason });
    }

    /// Queue a typed packet (`shared::proto`, the one encoder of each packet) for one
    /// actor's player (no-op for NPCs); it goes out at the end of this tick, with
    /// whatever is queued before it.
    pub fn send_packet<P: shared::proto::Packet>(&mut self, to: ActorId, packet: &P) {
        if let Some(pd) = self.get_mut(to).and_then(|a| a.player_data.as_mut()) {
            // A payload over 65534 bytes is dropped (never produced by the sim).
            let _ = shared::frame::write_packet_frame(&mut pd.outbox, |o| {
                o.push(P::ID);
                packet.encode_payload(o);
            });
            pd.outbox_urgent = true;
        }
    }

    /// Queue a typed packet for every online player of the instance, except `except`.
    ///
    /// It goes out with the player's next broadcast (or sooner, with a packet sent to the
    /// player alone), so that a crowd's zone chat and announcements reach each player as
    /// one batch per broadcast interval instead of one QUIC packet each
    /// (docs/simulation.md, "Reliable output").
    pub fn send_packet_zone<P: shared::proto::Packet>(
        &mut self,
        packet: &P,
        except: Option<ActorId>,
    ) {
        // Encoded once, copied to each recipient.
        let mut frame = Vec::new();
        if shared::frame::write_packet_frame(&mut frame, |o| {
            o.push(P::ID);
            packet.encode_payload(o);
        })
        .is_err()
        {
            return;
        }
        let mut cur = self.online.first;
        let mut guard = 0u32;
        while cur != NIL && guard <= self.online.len {
            guard += 1;
            let next = self.link(cur, ChainKind::Online).next;
            let Some(a) = self.at_mut(cur) else { break };
            if Some(a.id) != except
                && let Some(pd) = a.player_data.as_mut()
            {
                pd.outbox.extend_from_slice(&frame);
                // Past its bound the player's zone-wide frames leave with this tick instead
                // of waiting for its broadcast: the gateway's byte-bounded send queue then
                // holds them, and disconnects a player who cannot keep up.
                if pd.outbox.len() >= OUTBOX_FLUSH_BYTES {
                    pd.outbox_urgent = true;
                }
            }
            cur = next;
        }
    }

    /// Move a player's queued reliable bytes into the outputs now (before it leaves).
    pub fn flush_player(&mut self, id: ActorId) {
        let Some(a) = self.get_mut(id) else { return };
        let Some(player) = a.player else { return };
        let Some(pd) = a.player_data.as_mut() else {
            return;
        };
        pd.outbox_urgent = false;
        if pd.outbox.is_empty() {
            return;
        }
        let bytes = std::mem::take(&mut pd.outbox);
        self.counters.reliable_bytes += bytes.len() as u64;
        self.outputs.push(ZoneOutput::Reliable { player, bytes });
    }

    /// Schedule an action.
    pub fn schedule(&mut self, due_ms: u64, what: Scheduled) {
        self.scheduled.push((due_ms, what));
    }

    /// The full state of an actor with its mount and pets (recursively), for transfers and
    /// snapshots.
    pub fn actor_state(&self, id: ActorId) -> Option<ActorState> {
        self.actor_state_depth(id, 0)
    }

    fn actor_state_depth(&self, id: ActorId, depth: u8) -> Option<ActorState> {
        let a = self.get(id)?;
        let mut s = a.to_state(&self.content.area.name, self.cfg.instance);
        // Effects keep their remaining time; one already due is expired here (its deltas
        // taken out of the saved attributes) rather than frozen at <= 0 (reference §6
        // fix 3).
        for e in &a.effects {
            if e.expires_ms != 0 && e.expires_ms <= self.now_ms {
                for (v, d) in s.attributes.iter_mut().zip(&e.deltas) {
                    *v = v.saturating_sub(*d).max(0);
                }
            } else {
                s.effects.push(e.to_dto(self.now_ms));
            }
        }
        if let Some(p) = a.player_data.as_deref() {
            p.save_spells(self.now_ms, &mut s);
        }
        if depth < 4 {
            if let Some(m) = a.mount {
                s.mount = self.actor_state_depth(m, depth + 1).map(Box::new);
            }
            s.pets = self
                .slaves_of(id)
                .into_iter()
                .filter_map(|p| self.actor_state_depth(p, depth + 1))
                .collect();
        }
        Some(s)
    }

    /// Resolve an [`Arrival`] to a position and yaw (and the portal/waypoint used).
    pub fn resolve_arrival(&self, arrival: &Arrival, saved: (f32, f32, f32, f32)) -> Placement {
        let area = &self.content.area;
        match arrival {
            Arrival::Saved => Placement::at(saved.0, saved.1, saved.2, saved.3),
            Arrival::Position { x, y, z } => Placement::at(*x, *y, *z, 0.0),
            Arrival::Waypoint(w) => match area.waypoint(*w) {
                Some(wp) => Placement {
                    waypoint: Some(*w),
                    ..Placement::at(wp.x, wp.y, wp.z, 0.0)
                },
                None => Placement::at(saved.0, saved.1, saved.2, saved.3),
            },
            Arrival::Portal(p) => self.portal_placement(*p, saved),
            Arrival::PortalNamed(n) => {
                let p = area.portal_named(n).unwrap_or(0);
                self.portal_placement(p, saved)
            }
        }
    }

    fn portal_placement(&self, p: u16, saved: (f32, f32, f32, f32)) -> Placement {
        match self.content.area.portals.get(usize::from(p)) {
            Some(pt) => Placement {
                portal: Some(p),
                ..Placement::at(pt.x, pt.y, pt.z, pt.yaw)
            },
            None => Placement::at(saved.0, saved.1, saved.2, saved.3),
        }
    }
}

/// A resolved arrival position.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Placement {
    /// Position.
    pub x: f32,
    /// Position.
    pub y: f32,
    /// Position.
    pub z: f32,
    /// Yaw.
    pub yaw: f32,
    /// Waypoint used.
    pub waypoint: Option<u16>,
    /// Portal used.
    pub portal: Option<u16>,
}

impl Placement {
    fn at(x: f32, y: f32, z: f32, yaw: f32) -> Self {
        let c = shared::wire::clamp_world_coord;
        Self {
            x: c(x),
            y: c(y),
            z: c(z),
            yaw: if yaw.is_finite() { yaw } else { 0.0 },
            waypoint: None,
            portal: None,
        }
    }
}
