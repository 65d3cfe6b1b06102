//! Script hooks: the Rust stand-in for Realm Crafter's `.rsl` entry points (Death, LevelUp,
//! Login, Logout, Party, Mount, Attack, Default, In-game Commands, area Entry/Exit, spawn and
//! trigger scripts).
//!
//! [`ScriptHooks`] has a default body for every hook, matching the default project:
//! death waits 5 s, then Health 50 and a warp to the portal "Begin"; a level up when
//! `XP > Level × 1000`. A game overrides what it needs.
//!
//! Hooks are called synchronously from the rule that triggers them and get `&mut
//! ZoneState`, so a hook may use every rule function; they must stay deterministic (only
//! `st.rng` and `st.now_ms`). Delays go through [`ZoneState::schedule`] and come back in
//! [`ScriptHooks::on_scheduled`].

use super::state::{ActorId, Scheduled, ZoneState};

/// Script entry points. Every method has the default project's behaviour.
pub trait ScriptHooks: Send + Sync {
    /// `Death.Main(victim, killer)` for a player victim. Default: wait 5 s, then
    /// [`ScriptHooks::on_death_timer`].
    fn on_player_death(&self, st: &mut ZoneState, victim: ActorId, killer: Option<ActorId>) {
        let _ = killer;
        let due = st.now_ms + 5000;
        st.schedule(due, Scheduled::DeathRespawn { actor: victim });
    }

    /// The end of the default death script's wait: Health to 50, warp to portal "Begin".
    fn on_death_timer(&self, st: &mut ZoneState, victim: ActorId) {
        default_respawn(st, victim);
    }

    /// `LevelUp.Main`, run by `GiveXP` for players. Default: [`default_level_up`].
    #[doc(alias = "LevelUp")]
    fn on_xp(&self, st: &mut ZoneState, actor: ActorId) {
        default_level_up(st, actor);
    }

    /// `Attack.Main(A1, A2)`: combat formula 4 (the script does all damage and packets).
    fn on_attack(&self, st: &mut ZoneState, attacker: ActorId, victim: ActorId) {
        let _ = (st, attacker, victim);
    }

    /// A spawn point's `SpawnScript.Main` for the NPC it just spawned.
    fn on_spawn(&self, st: &mut ZoneState, npc: ActorId, spawn_point: u16) {
        let _ = (st, npc, spawn_point);
    }

    /// An NPC's `DeathScript` (context = killer). Runs before the NPC is freed.
    #[doc(alias = "DeathScript")]
    fn on_npc_death(&self, st: &mut ZoneState, victim: ActorId, killer: Option<ActorId>) {
        let _ = (st, victim, killer);
    }

    /// `Login.Main`, after a player joins the game here.
    fn on_login(&self, st: &mut ZoneState, actor: ActorId) {
        let _ = (st, actor);
    }

    /// `Logout.Main`, when a player leaves the game (before its snapshot is taken).
    fn on_logout(&self, st: &mut ZoneState, actor: ActorId) {
        let _ = (st, actor);
    }

    /// The area's Entry script, when a player arrives by login or transfer.
    fn on_area_entry(&self, st: &mut ZoneState, actor: ActorId) {
        let _ = (st, actor);
    }

    /// The old area's Exit script, when a player leaves by transfer (SetArea elsewhere).
    fn on_area_exit(&self, st: &mut ZoneState, actor: ActorId) {
        let _ = (st, actor);
    }

    /// `Party.Join`: `actor` joined party `party` (an index into `ZoneState::parties`).
    fn on_party_join(&self, st: &mut ZoneState, actor: ActorId, party: u32) {
        let _ = (st, actor, party);
    }

    /// `Party.Leave`: `actor` left party `party`.
    fn on_party_leave(&self, st: &mut ZoneState, actor: ActorId, party: u32) {
        let _ = (st, actor, party);
    }

    /// A [`Scheduled::Script`] timer came due.
    fn on_scheduled(&self, st: &mut ZoneState, actor: ActorId, tag: &str) {
        let _ = (st, actor, tag);
    }

    /// `WeatherLink`: the weather of the linked area's instance 0 when this zone knows it
    /// (the zone hosts one AreaInstance, so the shell or a game supplies it). `None` (the
    /// default) rolls this zone's own weather.
    fn linked_weather(&self, st: &ZoneState, area: &str) -> Option<u8> {
        let _ = (st, area);
        None
    }

    /// A chat command the engine does not handle (`In-game Commands`). Returns whether a
    /// script handled it.
    fn on_command(&self, st: &mut ZoneState, actor: ActorId, word: &str, params: &str) -> bool {
        let _ = (st, actor, word, params);
        false
    }

    /// A right-click on an actor with a script. Returns whether a script handled it.
    fn on_right_click(&self, st: &mut ZoneState, clicker: ActorId, target: ActorId) -> bool {
        let _ = (st, clicker, target);
        false
    }

    /// A trigger fired (`ThreadScript(script, method, actor, 0, "<idx>")`).
    fn on_trigger(&self, st: &mut ZoneState, actor: ActorId, trigger: u16) {
        let _ = (st, actor, trigger);
    }
}

/// The default project's hooks.
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultHooks;

impl ScriptHooks for DefaultHooks {}

/// The default `LevelUp.Main`: when `XP > Level × 1000`, Level + 1 and `P_XPUpdate "U"`
/// with the new level to the player.
pub fn default_level_up(st: &mut ZoneState, actor: ActorId) {
    let Some(a) = st.get_mut(actor) else { return };
    if u64::from(a.xp) <= u64::from(a.level) * 1000 || a.level == u16::MAX {
        return;
    }
    a.level += 1;
    let l = a.level.to_le_bytes();
    st.send_to(actor, super::packets::P_XP_UPDATE, &[b'U', l[0], l[1]]);
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
    super::stats::update_attribute(st, victim, health, 50);
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

/// Run the scheduled actions that are due, in insertion order.
pub(crate) fn run_scheduled(st: &mut ZoneState) {
    if st.scheduled.is_empty() {
        return;
    }
    let now = st.now_ms;
    let all = std::mem::take(&mut st.scheduled);
    let (due, keep): (Vec<_>, Vec<_>) = all.into_iter().partition(|(t, _)| *t <= now);
    st.scheduled = keep;
    let hooks = st.hooks.clone();
    for (_, what) in due {
        match what {
            Scheduled::DeathRespawn { actor } => hooks.on_death_timer(st, actor),
            Scheduled::Script { actor, tag } => hooks.on_scheduled(st, actor, &tag),
        }
    }
}
