//! The script dispatcher: how the top of the zone reacts to the engine events the rules
//! announce ([`super::engine`]), by starting a game's scripts as Realm Crafter's engine
//! does (`rsl-language.md` §9, reference §7), with the right actor, context actor and
//! parameters, or the Rust stand-ins that run when the world has no such script.
//!
//! [`Dispatcher`] is the zone's observer; [`ScriptHooks`] has one method per entry point.
//! [`DefaultHooks`] starts the world's script (`script_table::queue`, Realm Crafter's
//! `ThreadScript`) where it exists and otherwise
//! does what the default project's script does: death waits 5 s, then Health 50 and a warp
//! to the portal "Begin"; a level up when `XP > Level × 1000`. A test or an embedding game
//! may override any hook.
//!
//! | event | script . function | `Actor()` | `ContextActor()` | `Param` |
//! |---|---|---|---|---|
//! | player death | `Death.Main` | dead player | killer or 0 | |
//! | XP gain (`GiveXP`) | `LevelUp.Main` | player | 0 | |
//! | melee attack, formula 4 | `Attack.Main` | attacker | target | |
//! | NPC spawned at a spawn point | `<SpawnScript>.Main` | NPC | 0 | |
//! | NPC death | `<DeathScript>.Main` | killer or 0 | 0 | `Race,Class, X,Y,Z,g0,…,g9` |
//! | login | `Login.Main` | player | 0 | |
//! | logout | `Logout.Main` (runs at once, before the final save) | player | 0 | |
//! | enter / leave an area | `<EntryScript>.Main` / `<ExitScript>.Main` | player | 0 | |
//! | party join / leave | `Party.Join` / `Party.Leave` | member | 0 | |
//! | mount / dismount | `Mount.Mount` / `Mount.Dismount` | rider | mount | |
//! | equipment change | `Equip Change.Main` | actor | 0 | |
//! | unknown `/command args` | `In-game Commands.<COMMAND>` | player | 0 | `args` |
//! | right-click on an actor with a script | `<Script>.Main` | player | target | |
//! | trigger entered | `<TriggerScript>.<Method>` | actor | 0 | trigger index |
//! | item used / spell cast | `<Script>.<Method>` ([`ScriptHooks::on_item_used`], [`ScriptHooks::on_spell_cast`]) | user | target | (spell level) |
//! | P_Examine / P_Trade | `Default.Examine` / `Default.Trade` ([`examine`], [`ScriptHooks::on_trade`]) | player | target | |
//!
//! Starts a client's action causes (an equipment change, a command, a right-click, a
//! trigger, an item used, a spell, examine, trade) are coalesced: an identical start
//! already queued for this tick is that start (`script_table::Start::OncePerTick`). Every start
//! is held to the zone's `scripts_per_actor` and `scripts_per_zone` (`script_table::queue`).

use std::sync::Arc;

use super::engine::{EngineEvent, NpcDeath};
use super::script_table::{self as table, Start};
use super::state::{ActorId, Observer, Scheduled, ZoneState};
use super::stats;

/// The script dispatcher: the zone's [`Observer`], reacting to every engine event a rule
/// announces by calling the matching [`ScriptHooks`] method, and doing the engine's own
/// follow-up where Realm Crafter's does (an unknown command answered, a right-click with no
/// script tried as a mount, a trade with no `Default.Trade` script opened the default way).
pub struct Dispatcher {
    hooks: Arc<dyn ScriptHooks>,
}

impl Dispatcher {
    /// The dispatcher of these hooks.
    pub fn new(hooks: Arc<dyn ScriptHooks>) -> Self {
        Self { hooks }
    }
}

impl Observer for Dispatcher {
    fn react(&self, st: &mut ZoneState, event: EngineEvent) {
        let h = &*self.hooks;
        match event {
            EngineEvent::PlayerDied { victim, killer } => h.on_player_death(st, victim, killer),
            EngineEvent::DeathTimerDone { victim } => h.on_death_timer(st, victim),
            EngineEvent::TimerDue { actor, tag } => h.on_scheduled(st, actor, &tag),
            EngineEvent::NpcDied(death) => h.on_npc_death(st, &death),
            EngineEvent::XpGained { actor } => h.on_xp(st, actor),
            EngineEvent::Attacked { attacker, victim } => h.on_attack(st, attacker, victim),
            EngineEvent::Spawned { npc, spawn_point } => h.on_spawn(st, npc, spawn_point),
            EngineEvent::LoggedIn { actor } => h.on_login(st, actor),
            EngineEvent::LoggingOut { actor } => h.on_logout(st, actor),
            EngineEvent::EnteredArea { actor } => h.on_area_entry(st, actor),
            EngineEvent::LeavingArea { actor } => h.on_area_exit(st, actor),
            EngineEvent::PartyJoined { actor, party } => h.on_party_join(st, actor, party),
            EngineEvent::PartyLeft { actor, party } => h.on_party_leave(st, actor, party),
            EngineEvent::Mounted { rider, mount } => h.on_mount(st, rider, mount),
            EngineEvent::Dismounted { rider, mount } => h.on_dismount(st, rider, mount),
            EngineEvent::EquipmentChanged { actor } => h.on_equip_change(st, actor),
            EngineEvent::Command {
                actor,
                word,
                params,
            } => {
                if !h.on_command(st, actor, &word, &params) {
                    let red = super::packets::CHAT_RED;
                    super::packets::send_chat(st, actor, red, "Unknown command");
                }
            }
            EngineEvent::RightClicked { clicker, target } => {
                if !h.on_right_click(st, clicker, target) {
                    super::mount::mount(st, clicker, target);
                }
            }
            EngineEvent::TriggerEntered { actor, trigger } => h.on_trigger(st, actor, trigger),
            EngineEvent::ItemUsed {
                script,
                method,
                user,
                target,
            } => {
                h.on_item_used(st, &script, &method, user, target);
            }
            EngineEvent::SpellCast {
                script,
                method,
                caster,
                target,
                level,
            } => {
                h.on_spell_cast(st, &script, &method, caster, target, level);
            }
            EngineEvent::TradeRequested { player, target } => {
                if !h.on_trade(st, player, target) {
                    super::items::shop::trade_default(st, player, target);
                }
            }
        }
    }
}

/// Script entry points. Every method has the default project's behaviour.
pub trait ScriptHooks: Send + Sync {
    /// `Death.Main(victim, killer)` for a player victim. Default: the world's Death script,
    /// else wait 5 s, then [`ScriptHooks::on_death_timer`].
    fn on_player_death(&self, st: &mut ZoneState, victim: ActorId, killer: Option<ActorId>) {
        if table::has_entry(st, "Death", "Main") {
            table::queue_for(st, Start::Each, "Death", "Main", Some(victim), killer, "");
            return;
        }
        let due = st.now_ms + 5000;
        st.schedule(due, Scheduled::DeathRespawn { actor: victim });
    }

    /// The end of the default death script's wait: Health to 50, warp to portal "Begin".
    fn on_death_timer(&self, st: &mut ZoneState, victim: ActorId) {
        default_respawn(st, victim);
    }

    /// `LevelUp.Main`, run by `GiveXP` for players. Default: the world's script, else
    /// [`default_level_up`].
    #[doc(alias = "LevelUp")]
    fn on_xp(&self, st: &mut ZoneState, actor: ActorId) {
        if !start(st, Start::Each, "LevelUp", "Main", Some(actor), None, "") {
            default_level_up(st, actor);
        }
    }

    /// `Attack.Main(A1, A2)`: combat formula 4 (the script does all damage and packets).
    fn on_attack(&self, st: &mut ZoneState, attacker: ActorId, victim: ActorId) {
        start(
            st,
            Start::Each,
            "Attack",
            "Main",
            Some(attacker),
            Some(victim),
            "",
        );
    }

    /// A spawn point's `SpawnScript.Main` for the NPC it just spawned.
    fn on_spawn(&self, st: &mut ZoneState, npc: ActorId, spawn_point: u16) {
        let script = st
            .content
            .area
            .spawns
            .get(usize::from(spawn_point))
            .map(|s| s.spawn_script.clone())
            .unwrap_or_default();
        start(st, Start::Each, &script, "Main", Some(npc), None, "");
    }

    /// An NPC's `DeathScript.Main` with `Actor()` = the killer and Realm Crafter's
    /// `Param` (`Race,Class, X,Y,Z,g0,…,g9`, taken before the NPC was freed).
    #[doc(alias = "DeathScript")]
    fn on_npc_death(&self, st: &mut ZoneState, death: &NpcDeath) {
        if !table::has_entry(st, &death.script, "Main") {
            return;
        }
        let (script, param) = (&death.script, &death.param);
        table::queue_for(st, Start::Each, script, "Main", death.killer, None, param);
    }

    /// `Login.Main`, after a player joins the game here.
    fn on_login(&self, st: &mut ZoneState, actor: ActorId) {
        start(st, Start::Each, "Login", "Main", Some(actor), None, "");
    }

    /// `Logout.Main`, when a player leaves the game: run at once, while its player is still
    /// here, so what it changes is saved (a wait inside it ends it).
    fn on_logout(&self, st: &mut ZoneState, actor: ActorId) {
        run_now(st, "Logout", "Main", actor);
    }

    /// The area's Entry script, when a player arrives by login or transfer.
    fn on_area_entry(&self, st: &mut ZoneState, actor: ActorId) {
        let script = st.content.area.entry_script.clone();
        start(st, Start::Each, &script, "Main", Some(actor), None, "");
    }

    /// The old area's Exit script, when a player leaves by transfer (SetArea elsewhere).
    /// It is created at once, so it travels with the player and runs at the destination,
    /// after the warp, as Realm Crafter's queued script did.
    fn on_area_exit(&self, st: &mut ZoneState, actor: ActorId) {
        let script = st.content.area.exit_script.clone();
        if table::has_entry(st, &script, "Main") {
            table::create_for(st, &script, "Main", actor);
        }
    }

    /// `Party.Join`: `actor` joined party `party` (an index into `ZoneState::parties`).
    fn on_party_join(&self, st: &mut ZoneState, actor: ActorId, party: u32) {
        let _ = party;
        start(st, Start::Each, "Party", "Join", Some(actor), None, "");
    }

    /// `Party.Leave`: `actor` left party `party`.
    fn on_party_leave(&self, st: &mut ZoneState, actor: ActorId, party: u32) {
        let _ = party;
        start(st, Start::Each, "Party", "Leave", Some(actor), None, "");
    }

    /// `Mount.Mount`: `rider` mounted `mount`.
    fn on_mount(&self, st: &mut ZoneState, rider: ActorId, mount: ActorId) {
        start(
            st,
            Start::Each,
            "Mount",
            "Mount",
            Some(rider),
            Some(mount),
            "",
        );
    }

    /// `Mount.Dismount`: `rider` got off `mount`.
    fn on_dismount(&self, st: &mut ZoneState, rider: ActorId, mount: Option<ActorId>) {
        start(st, Start::Each, "Mount", "Dismount", Some(rider), mount, "");
    }

    /// `Equip Change.Main`: an actor's equipment changed (call site for the items code).
    fn on_equip_change(&self, st: &mut ZoneState, actor: ActorId) {
        start(
            st,
            Start::OncePerTick,
            "Equip Change",
            "Main",
            Some(actor),
            None,
            "",
        );
    }

    /// A [`Scheduled::Script`] timer came due.
    fn on_scheduled(&self, st: &mut ZoneState, actor: ActorId, tag: &str) {
        let _ = (st, actor, tag);
    }

    /// A chat command the engine does not handle: `In-game Commands.<WORD>` with
    /// `Parameter(n)` from `params`. Returns whether a script handled it (otherwise the
    /// player is told "Unknown command"; a script without that function answers "Command X
    /// is not known" itself).
    fn on_command(&self, st: &mut ZoneState, actor: ActorId, word: &str, params: &str) -> bool {
        const SCRIPT: &str = "In-game Commands";
        if !st.content.scripts.has_script(SCRIPT) {
            return false;
        }
        if !table::has_entry(st, SCRIPT, word) {
            let text = format!("Command {word} is not known");
            let p = shared::proto::ChatMessageS2C {
                colour: shared::proto::ChatColour::Rgb(255, 255, 255),
                text: super::packets::text(&text),
            };
            st.send_packet(actor, &p);
            return true;
        }
        table::queue_for(
            st,
            Start::OncePerTick,
            SCRIPT,
            word,
            Some(actor),
            None,
            params,
        );
        true
    }

    /// A right-click on an actor with a script: `<Script>.Main` with the clicker and the
    /// target, unless the same script already runs for the two. Returns whether a script
    /// handled it (otherwise the engine tries to mount).
    fn on_right_click(&self, st: &mut ZoneState, clicker: ActorId, target: ActorId) -> bool {
        let script = st.get(target).map(|t| t.script.clone()).unwrap_or_default();
        if script.is_empty() {
            return false;
        }
        if table::running(st, &script, clicker, target) {
            return true;
        }
        let (c, t) = (Some(clicker), Some(target));
        table::queue_for(st, Start::OncePerTick, &script, "Main", c, t, "");
        true
    }

    /// A trigger fired: `ThreadScript(script, method, actor, 0, "<idx>")`.
    fn on_trigger(&self, st: &mut ZoneState, actor: ActorId, trigger: u16) {
        let Some(t) = st.content.area.triggers.get(usize::from(trigger)) else {
            return;
        };
        let (script, method) = (t.script.clone(), t.method.clone());
        let method = if method.is_empty() {
            "Main".to_owned()
        } else {
            method
        };
        start(
            st,
            Start::OncePerTick,
            &script,
            &method,
            Some(actor),
            None,
            &trigger.to_string(),
        );
    }

    /// An item used (`P_ItemScript`) or eaten: `<Script>.<Method or Main>` with the user
    /// and the target. Returns whether it was queued.
    fn on_item_used(
        &self,
        st: &mut ZoneState,
        script: &str,
        method: &str,
        user: ActorId,
        target: Option<ActorId>,
    ) -> bool {
        let method = if method.is_empty() { "Main" } else { method };
        let how = Start::OncePerTick;
        start(st, how, script, method, Some(user), target, "")
    }

    /// A spell cast: `<Script>.<Method>` with the caster, the target and the ability level
    /// as `Param`. Returns whether it was queued.
    fn on_spell_cast(
        &self,
        st: &mut ZoneState,
        script: &str,
        method: &str,
        caster: ActorId,
        target: Option<ActorId>,
        level: u16,
    ) -> bool {
        let method = if method.is_empty() { "Main" } else { method };
        let how = Start::OncePerTick;
        start(
            st,
            how,
            script,
            method,
            Some(caster),
            target,
            &level.to_string(),
        )
    }

    /// `P_Trade`: `Default.Trade` with the player and the target. Returns whether a script
    /// took it (otherwise the engine opens the NPC's shop or invites the player).
    fn on_trade(&self, st: &mut ZoneState, player: ActorId, target: ActorId) -> bool {
        let (how, p, t) = (Start::OncePerTick, Some(player), Some(target));
        start(st, how, "Default", "Trade", p, t, "")
    }
}

/// Start `script.func` if the world has it (logged and skipped if a named script or
/// function is missing). Returns whether it was queued.
fn start(
    st: &mut ZoneState,
    how: Start,
    script: &str,
    func: &str,
    actor: Option<ActorId>,
    context: Option<ActorId>,
    param: &str,
) -> bool {
    if script.is_empty() || !st.content.scripts.has_script(script) {
        return false;
    }
    table::queue_for(st, how, script, func, actor, context, param)
}

/// Create `script.func` for `actor` and run it at once to its end (or its first wait).
fn run_now(st: &mut ZoneState, script: &str, func: &str, actor: ActorId) {
    if !table::has_entry(st, script, func) {
        return;
    }
    if let Some(id) = table::create_for(st, script, func, actor) {
        super::runtime::run_to_wait(st, id);
    }
}

/// `P_Examine`: the target's own `Examine` method if it has a script, else
/// `Default.Examine`, else (a world without a `Default` script) the default project's
/// answer, `"This is a <name>"` in cyan.
pub fn examine(st: &mut ZoneState, player: ActorId, target: ActorId) -> bool {
    let script = st.get(target).map(|t| t.script.clone()).unwrap_or_default();
    if table::has_entry(st, &script, "Examine") {
        if !table::running(st, &script, player, target) {
            start(
                st,
                Start::OncePerTick,
                &script,
                "Examine",
                Some(player),
                Some(target),
                "",
            );
        }
        return true;
    }
    if table::has_entry(st, "Default", "Examine") {
        return start(
            st,
            Start::OncePerTick,
            "Default",
            "Examine",
            Some(player),
            Some(target),
            "",
        );
    }
    let name = st.get(target).map(|t| t.name.clone()).unwrap_or_default();
    let p = shared::proto::ChatMessageS2C {
        colour: shared::proto::ChatColour::Rgb(0, 255, 255),
        text: shared::wire::RcString::from_latin1(&format!("This is a {name}")).unwrap_or_default(),
    };
    st.send_packet(player, &p);
    true
}

/// `P_Examine` from a player: the target must be in this AreaInstance (not the player,
/// not mid-warp) within the interaction distance; otherwise it is refused and counted.
#[doc(alias = "P_Examine")]
pub(crate) fn examine_request(st: &mut ZoneState, id: ActorId, target: super::events::RuntimeId) {
    if let Some(t) = super::mount::interact_target(st, id, target, super::mount::INTERACT_D2) {
        examine(st, id, t);
    }
}

/// The default project's hooks.
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultHooks;

impl ScriptHooks for DefaultHooks {}

/// The default `LevelUp.Main`: when `XP > Level × 1000`, Level + 1 through
/// [`stats::set_level`] (`P_XPUpdate "U"` to the player, "L" to the rest of the zone).
pub fn default_level_up(st: &mut ZoneState, actor: ActorId) {
    let Some(a) = st.get(actor) else { return };
    if u64::from(a.xp) <= u64::from(a.level) * 1000 || a.level == u16::MAX {
        return;
    }
    let level = a.level + 1;
    stats::set_level(st, actor, level);
}

/// Health to 50, clear the dead flag, warp to the portal "Begin" of this area (portal 0
/// when it has none).
pub fn default_respawn(st: &mut ZoneState, victim: ActorId) {
    let Some(health) = st.content.fixed.health else {
        return;
    };
    if st.get(victim).is_none() {
        return;
    }
    stats::update_attribute(st, victim, health, 50);
    if let Some(a) = st.get_mut(victim) {
        a.dead = false;
    }
    let area = st.content.area.name.clone();
    let inst = st.cfg.instance;
    super::setarea::set_area(
        st,
        victim,
        &area,
        inst,
        &super::events::Arrival::PortalNamed("Begin".into()),
    );
}
