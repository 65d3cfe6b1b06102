//! `KillActor`, `GiveXP` with the party split (reference §7.4), and `ProcessPendingKills`:
//! kills found during the actor loop (or while applying inputs) are queued in
//! `ZoneState::pending_kills` by [`stats::defer_kill`](super::stats::defer_kill) and run
//! here, after the loop, so nothing is freed mid-iteration.
//!
//! # Decisions
//! * The rating adjust is floored at 0 (bytes).
//! * `XP = max(1, vLevel - kLevel) × XPMultiplier + Rand(0..20)`, never below 0.
//! * The party split counts the members **in this AreaInstance** (the zone only knows
//!   those); the giver keeps `xp/n + xp mod n`; `n = 0` cannot happen (the giver counts)
//!   but is guarded.
//! * A dead player keeps its actor (`dead = true`, no movement, no water, not a target)
//!   until the Death hook restores it; NPCs chasing it drop it at once.

use shared::proto::{ActorDead, XpUpdate};

use super::engine::{EngineEvent, NpcDeath};
use super::state::{ActorId, ZoneState};

/// Upper bound on kill rounds per tick (a hook that kills again queues a new round).
const MAX_ROUNDS: usize = 8;

/// Run the kills deferred during the actor loop.
#[doc(alias = "ProcessPendingKills")]
pub(crate) fn process_pending(st: &mut ZoneState) {
    for _ in 0..MAX_ROUNDS {
        if st.pending_kills.is_empty() {
            return;
        }
        let kills = std::mem::take(&mut st.pending_kills);
        st.counters.kills += u32::try_from(kills.len()).unwrap_or(u32::MAX);
        for (victim, killer) in kills {
            kill_actor(st, victim, killer);
        }
    }
}

/// `KillActor(victim, killer)`. Call it outside the actor loop (use
/// [`stats::defer_kill`](super::stats::defer_kill) inside it).
#[doc(alias = "KillActor")]
pub fn kill_actor(st: &mut ZoneState, victim: ActorId, killer: Option<ActorId>) {
    let Some(v) = st.get(victim) else { return };
    if v.dead {
        return;
    }
    let (is_player, vrid, vlevel, vhome, vmult) = (
        v.is_player(),
        v.rid,
        v.level,
        v.home_faction,
        v.xp_multiplier,
    );
    let killer = killer.filter(|k| *k != victim && st.get(*k).is_some());
    // 1. NPC victim: P_ActorDead to the zone.
    if !is_player {
        let dead = ActorDead {
            runtime_id: vrid,
            killer: killer.and_then(|k| st.get(k)).map(|k| k.rid),
        };
        st.send_packet_zone(&dead, None);
    }
    // 2. Rating and XP for the killer.
    if let Some(k) = killer {
        let adjust = st.content.rules.combat_rating_adjust;
        let klevel = st.get(k).map_or(1, |a| a.level);
        if let Some(r) = st
            .get_mut(k)
            .and_then(|a| a.ratings.get_mut(usize::from(vhome)))
        {
            *r = r.saturating_sub(adjust);
        }
        let diff = (i32::from(vlevel) - i32::from(klevel)).max(1);
        let xp = diff
            .saturating_mul(vmult)
            .saturating_add(st.rng.rand_range(0, 20))
            .max(0);
        give_xp(st, k, u32::try_from(xp).unwrap_or(0), false);
    }
    // 3. WaitKill scripts waiting for this killer and template.
    let vtemplate = st.get(victim).map_or(0, |a| a.template);
    super::script_table::on_kill(st, vtemplate, killer);
    if is_player {
        // 4. Player: dead until the Death hook restores it; NPCs drop it. A trade ends.
        super::items::trade::cancel_for(st, victim);
        if let Some(a) = st.get_mut(victim) {
            a.dead = true;
            a.dest_x = a.x;
            a.dest_z = a.z;
            a.is_running = false;
        }
        super::despawn::drop_as_target(st, victim);
        st.announce(EngineEvent::PlayerDied { victim, killer });
    } else {
        // 5. NPC: its death script's call (taken now), then gone for good (the one way
        // out of a zone).
        if let Some(death) = npc_death(st, victim, killer) {
            st.announce(EngineEvent::NpcDied(death));
        }
        super::despawn::despawn(st, victim, super::despawn::Cause::Killed);
    }
}

/// A dead NPC's `DeathScript` call with Realm Crafter's `Param`
/// (`Race,Class, X,Y,Z,g0,…,g9`), taken while the NPC is still here.
fn npc_death(st: &ZoneState, victim: ActorId, killer: Option<ActorId>) -> Option<NpcDeath> {
    let v = st.get(victim)?;
    let (race, class) = st
        .content
        .template(v.template)
        .map(|t| (t.race.clone(), t.class.clone()))
        .unwrap_or_default();
    let f = script::value::blitz_float_string;
    let mut param = format!("{race},{class}, {},{},{}", f(v.x), f(v.y), f(v.z));
    for g in v.script_globals.iter().take(10) {
        param.push(',');
        param.push_str(g);
    }
    for _ in v.script_globals.len()..10 {
        param.push(',');
    }
    Some(NpcDeath {
        victim,
        killer,
        script: v.death_script.clone(),
        param,
    })
}

/// `GiveXP(A, xp, ignoreParty)`: a pet gives to its leader; a party member shares with the
/// members in this instance; players run the LevelUp hook and get `P_XPUpdate "M"`.
#[doc(alias = "GiveXP")]
pub fn give_xp(st: &mut ZoneState, actor: ActorId, xp: u32, ignore_party: bool) {
    give_xp_depth(st, actor, xp, ignore_party, 0);
}

fn give_xp_depth(st: &mut ZoneState, actor: ActorId, xp: u32, ignore_party: bool, depth: u8) {
    let Some(a) = st.get(actor) else { return };
    // 1. A pet's XP goes to its leader (recursively; bounded).
    if let Some(l) = a.leader.filter(|l| st.get(*l).is_some()) {
        if depth < 8 {
            give_xp_depth(st, l, xp, ignore_party, depth + 1);
        }
        return;
    }
    // 2. Party split among the members in this instance.
    let mut own = xp;
    if !ignore_party && let Some(pid) = a.party {
        let members = super::party::local_members(st, pid);
        let n = u32::try_from(members.len()).unwrap_or(1).max(1);
        if members.contains(&actor) && n > 1 {
            let share = xp / n;
            own = share + xp % n;
            for m in members {
                if m != actor {
                    give_xp_depth(st, m, share, true, depth + 1);
                }
            }
        }
    }
    // 3. XP.
    let Some(a) = st.get_mut(actor) else { return };
    a.xp = a.xp.saturating_add(own);
    // 4. Players: LevelUp hook and "M".
    if a.is_player() {
        st.announce(EngineEvent::XpGained { actor });
        st.send_packet(actor, &XpUpdate::Gained { amount: own });
    }
}
