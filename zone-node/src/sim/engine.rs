//! Engine events: what a game rule announces (a death, a level's worth of XP, a trigger
//! entered, an item used, …) for the layer above it to react to, instead of calling the
//! scripts itself. Rules announce, the top reacts.
//!
//! A rule calls [`ZoneState::announce`](super::state::ZoneState::announce): the event
//! joins the zone's queue, and [`ZoneSim`](super::ZoneSim) drains the queue after every
//! input it applies and after every phase of the tick, in order, through the zone's
//! [`Observer`](super::state::Observer) (the script dispatcher, `scripts::Dispatcher`, which
//! runs Realm Crafter's entry points). Two events are needed at once, inside the rule that
//! raises them, and are [triggered](super::state::ZoneState::trigger) instead:
//! [`EngineEvent::LoggingOut`] (`Logout.Main` must run before the final save) and
//! [`EngineEvent::LeavingArea`] (the area's Exit script must exist before the travelling
//! state is taken). Observable order: docs/simulation.md, "Engine events".
//!
//! This module names no other part of the simulation except the identifiers of
//! [`super::events`]: any rule may announce, and only the top reacts.

use super::events::ActorId;

/// Something that happened in the zone which the game's scripts may react to (Realm
/// Crafter's engine entry points: reference §7, `rsl-language.md` §9).
#[derive(Clone, Debug, PartialEq)]
pub enum EngineEvent {
    /// A player died (`Death.Main`).
    PlayerDied {
        /// The dead player.
        victim: ActorId,
        /// Its killer, if any.
        killer: Option<ActorId>,
    },
    /// The default death script's 5 s wait is over (`Scheduled::DeathRespawn`): Health 50
    /// and a warp to the portal "Begin".
    DeathTimerDone {
        /// The dead player.
        victim: ActorId,
    },
    /// A rules-defined timer came due (`Scheduled::Script`).
    TimerDue {
        /// Its actor.
        actor: ActorId,
        /// Its tag.
        tag: String,
    },
    /// An NPC died (its `DeathScript.Main`); it is already freed when this is handled.
    #[doc(alias = "DeathScript")]
    NpcDied(NpcDeath),
    /// A player gained XP (`LevelUp.Main`).
    #[doc(alias = "LevelUp")]
    XpGained {
        /// The player.
        actor: ActorId,
    },
    /// An attack under combat formula 4 (`Attack.Main`: the script does everything).
    Attacked {
        /// The attacker.
        attacker: ActorId,
        /// The one attacked.
        victim: ActorId,
    },
    /// A spawn point spawned an NPC (`<SpawnScript>.Main`).
    Spawned {
        /// The NPC.
        npc: ActorId,
        /// The spawn point's index in the area.
        spawn_point: u16,
    },
    /// A player joined the game here (`Login.Main`).
    LoggedIn {
        /// The player.
        actor: ActorId,
    },
    /// A player is leaving the game (`Logout.Main`, run at once: triggered, not queued).
    LoggingOut {
        /// The player, still here.
        actor: ActorId,
    },
    /// A player arrived in this area by login or transfer (the area's Entry script).
    EnteredArea {
        /// The player.
        actor: ActorId,
    },
    /// A player is leaving this area by transfer (the area's Exit script, created at once
    /// so that it travels with the player: triggered, not queued).
    LeavingArea {
        /// The player, not yet frozen.
        actor: ActorId,
    },
    /// An actor joined a party (`Party.Join`).
    PartyJoined {
        /// The member.
        actor: ActorId,
        /// The party (an index into `ZoneState::parties`).
        party: u32,
    },
    /// An actor left its party (`Party.Leave`).
    PartyLeft {
        /// The former member.
        actor: ActorId,
        /// The party it left.
        party: u32,
    },
    /// A rider got on a mount (`Mount.Mount`).
    Mounted {
        /// The rider.
        rider: ActorId,
        /// The mount.
        mount: ActorId,
    },
    /// A rider got off (`Mount.Dismount`).
    Dismounted {
        /// The rider.
        rider: ActorId,
        /// The mount it left, if it is still here.
        mount: Option<ActorId>,
    },
    /// An actor's equipment changed (`Equip Change.Main`).
    EquipmentChanged {
        /// The actor.
        actor: ActorId,
    },
    /// A chat command the engine does not handle (`In-game Commands.<WORD>`); when no
    /// script takes it the player is told "Unknown command".
    Command {
        /// The player.
        actor: ActorId,
        /// The command word, as typed.
        word: String,
        /// Everything after it.
        params: String,
    },
    /// A right-click on an actor in reach, after the `WaitSpeak`s it satisfies woke: the
    /// target's script, or else the clicker tries to mount it.
    RightClicked {
        /// The player.
        clicker: ActorId,
        /// The actor clicked.
        target: ActorId,
    },
    /// An actor entered a trigger (`<TriggerScript>.<Method>`).
    TriggerEntered {
        /// The actor.
        actor: ActorId,
        /// The trigger's index in the area.
        trigger: u16,
    },
    /// An item with a script was used or eaten (`<Script>.<Method>`).
    ItemUsed {
        /// The item's script.
        script: String,
        /// Its method (empty: `Main`).
        method: String,
        /// Who used it.
        user: ActorId,
        /// Its target, if any.
        target: Option<ActorId>,
    },
    /// A spell was cast (`<Script>.<Method>` with the ability level as `Param`).
    SpellCast {
        /// The spell's script.
        script: String,
        /// Its method (empty: `Main`).
        method: String,
        /// The caster.
        caster: ActorId,
        /// Its target, if any.
        target: Option<ActorId>,
        /// The caster's level of the ability.
        level: u16,
    },
    /// `P_Trade` with an actor in reach: `Default.Trade`, or else the default project's
    /// answer (a shop for an NPC with wares, a trade invitation for a player).
    #[doc(alias = "P_Trade")]
    TradeRequested {
        /// The player.
        player: ActorId,
        /// The actor it wants to trade with.
        target: ActorId,
    },
}

/// A dead NPC's `DeathScript` call, taken before the NPC is freed (Realm Crafter's
/// `Param`: `Race,Class, X,Y,Z,g0,…,g9`).
#[derive(Clone, Debug, PartialEq)]
pub struct NpcDeath {
    /// The NPC (freed by the time its death is handled).
    pub victim: ActorId,
    /// Its killer, `Actor()` of the death script.
    pub killer: Option<ActorId>,
    /// The NPC's death script (may be empty).
    pub script: String,
    /// The script's `Param`.
    pub param: String,
}
