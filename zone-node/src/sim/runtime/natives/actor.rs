//! Actors (`act`), AI, pets and mounts (`ai`), attributes (`attr`), parties (`pty`),
//! factions (`fac`) and chat (`chat`): Realm Crafter's semantics over the zone's actors,
//! through the engine's own rules (`stats::update_attribute` for attributes, so each
//! audience stays right; `kill_actor`; `give_xp`; `spawn_npc`).
//!
//! Realm Crafter bugs fixed here (each also in `docs/scripting.md`): `ActorDestinationX/Z`
//! return the destination (V0 returned the position); `DefaultFactionRating(f1, f2)` rates
//! `f1` toward `f2` on the -100..100 scale (V0 returned f1's raw rating toward faction 0).

use script::RStr;
use script::natives::Native;
use shared::proto::{ChatColour, ChatMessageS2C, NameChange, Packet, RepositionActor, XpUpdate};
use shared::wire::RcString;

use super::{Args, NResult, float, int, none, string};
use crate::sim::area::TemplateProps;
use crate::sim::runtime::host::ZoneHost;
use crate::sim::state::{ActorId, AiMode, ZoneState};
use crate::sim::{kill, stats};

/// Queue a typed packet for one actor's player.
pub fn send<P: Packet>(st: &mut ZoneState, to: ActorId, p: &P) {
    st.send_packet(to, p);
}

/// Queue a typed packet for every player of the instance (but `except`).
pub fn send_zone<P: Packet>(st: &mut ZoneState, p: &P, except: Option<ActorId>) {
    st.send_packet_zone(p, except);
}

fn name_str(s: &str) -> RStr {
    RStr::from_latin1(s)
}

fn template(st: &ZoneState, id: ActorId) -> Option<&TemplateProps> {
    st.get(id).and_then(|a| st.content.template(a.template))
}

fn attr_index(h: &ZoneHost<'_>, name: &RStr) -> Option<u8> {
    h.st.content.find_attribute(&name.to_latin1())
}

fn faction_index(st: &ZoneState, name: &str) -> Option<usize> {
    let name = name.trim();
    st.content
        .world
        .factions
        .names
        .iter()
        .position(|f| !f.is_empty() && f.eq_ignore_ascii_case(name))
}

impl ZoneHost<'_> {
    /// End the running instance too if it names an actor that was just freed.
    fn check_freed(&mut self, handle: i32, gone: bool) {
        if gone && (self.cx.actor == handle || self.cx.context == handle) {
            self.end_self = true;
        }
    }
}

/// `KillActor(victim, killer)` from a script.
fn kill(h: &mut ZoneHost<'_>, victim: ActorId, killer: Option<ActorId>) {
    let handle = h.st.handle_of(victim);
    let npc = h.st.get(victim).is_some_and(|a| !a.is_player());
    if let Some(hp) = h.st.content.fixed.health
        && let Some(a) = h.st.get_mut(victim)
        && let Some(v) = a.attr.get_mut(usize::from(hp))
    {
        *v = 0;
    }
    kill::kill_actor(h.st, victim, killer);
    let gone = npc && h.st.get(victim).is_none();
    h.check_freed(handle, gone);
}

/// `SetAttribute` semantics: Health, Speed and Energy to the zone (no lower clamp),
/// others to the owner; afterwards, Health <= 0 kills.
fn set_attribute(h: &mut ZoneHost<'_>, id: ActorId, attr: u8, value: i32) {
    stats::update_attribute(h.st, id, attr, value);
    let health = h.st.content.fixed.health;
    let hp = h.st.get(id).and_then(|a| a.attr_value(health));
    if Some(attr) == health && hp.is_some_and(|v| v > 0) {
        // A player lying dead is alive again once its Health is restored.
        if let Some(a) = h.st.get_mut(id) {
            a.dead = false;
        }
    }
    if hp.is_some_and(|v| v <= 0) && h.st.get(id).is_some_and(|a| !a.dead) {
        kill(h, id, None);
    }
}

/// Run an actor, AI, attribute, party, faction or chat native.
#[allow(clippy::too_many_lines)]
pub fn call(h: &mut ZoneHost<'_>, n: Native, a: Args<'_>) -> NResult {
    let me = h.actor(a.int(0));
    fn actor_of<'s>(
        h: &'s ZoneHost<'_>,
        me: Option<ActorId>,
    ) -> Option<&'s crate::sim::state::Actor> {
        me.and_then(|id| h.st.get(id))
    }
    let get = |h| actor_of(h, me);
    match n {
        // ----- identity and position -----
        Native::ActorX => float(get(h).map_or(0.0, |x| x.x)),
        Native::ActorY => float(get(h).map_or(0.0, |x| x.y)),
        Native::ActorZ => float(get(h).map_or(0.0, |x| x.z)),
        Native::ActorDistance => {
            let other = h.actor(a.int(1)).and_then(|id| h.st.get(id));
            let d = match (get(h), other) {
                (Some(p), Some(q)) => {
                    let (dx, dy, dz) = (p.x - q.x, p.y - q.y, p.z - q.z);
                    (dx * dx + dy * dy + dz * dz).sqrt()
                }
                _ => 0.0,
            };
            float(d)
        }
        Native::ActorUnderWater => {
            int(i32::from(get(h).is_some_and(|x| x.underwater_ms.is_some())))
        }
        Native::ActorIsHuman => int(i32::from(get(h).is_some_and(|x| x.is_player()))),
        Native::PlayerInGame => int(i32::from(get(h).is_some_and(|x| x.is_player()))),
        Native::ActorId => {
            let (race, class) = (a.text(0), a.text(1));
            let mut ids: Vec<&TemplateProps> =
                h.st.content
                    .templates
                    .values()
                    .filter(|t| {
                        t.race.eq_ignore_ascii_case(race.trim())
                            && t.class.eq_ignore_ascii_case(class.trim())
                    })
                    .collect();
            ids.sort_by_key(|t| t.id);
            int(ids.first().map_or(-1, |t| i32::from(t.id)))
        }
        Native::ActorIdFromInstance => int(get(h).map_or(-1, |x| i32::from(x.template))),
        Native::ActorXpMultiplier => {
            let t = u16::try_from(a.int(0))
                .ok()
                .and_then(|t| h.st.content.template(t));
            int(t.map_or(0, |t| t.xp_multiplier))
        }
        Native::Race => string(
            me.and_then(|id| template(h.st, id))
                .map_or(RStr::EMPTY, |t| name_str(&t.race)),
        ),
        Native::Class => string(
            me.and_then(|id| template(h.st, id))
                .map_or(RStr::EMPTY, |t| name_str(&t.class)),
        ),
        Native::Name => string(get(h).map_or(RStr::EMPTY, |x| name_str(&x.name))),
        Native::Tag => string(get(h).map_or(RStr::EMPTY, |x| name_str(&x.tag))),
        Native::SetName | Native::SetTag => {
            let Some(id) = me else { return none() };
            let v: String = a.text(1).chars().filter(|&c| c != '"').collect();
            let Some(x) = h.st.get_mut(id) else {
                return none();
            };
            if n == Native::SetName {
                x.name = v;
            } else {
                x.tag = v;
            }
            let p = NameChange {
                runtime_id: x.rid,
                actor_name: RcString(
                    x.name
                        .chars()
                        .map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?'))
                        .collect(),
                ),
                tag: RcString(
                    x.tag
                        .chars()
                        .map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?'))
                        .collect(),
                ),
            };
            send_zone(h.st, &p, None);
            none()
        }
        Native::FindActor => {
            let name = a.text(0);
            let kind = a.int(1);
            let found =
                h.st.chain_members(h.st.zone, crate::sim::state::ChainKind::Zone)
                    .into_iter()
                    .rev()
                    .filter_map(|i| h.st.at(i))
                    .find(|x| {
                        x.name.eq_ignore_ascii_case(name.trim())
                            && match kind {
                                1 => x.is_player(),
                                2 => !x.is_player(),
                                _ => true,
                            }
                    })
                    .map_or(0, |x| x.handle);
            if found == 0 && kind != 2 && !name.trim().is_empty() {
                // Not here: a player anywhere in the cluster (the gateway knows who is in
                // the game); the script waits for the answer.
                return h.ask_int(shared::internal::ScriptStoreOp::FindPlayer {
                    name: name.trim().to_owned(),
                });
            }
            int(found)
        }
        Native::NextActor => {
            // Walks this zone's actors (the zone knows its own), skipping none: offline
            // players are not in a zone.
            let order: Vec<i32> =
                h.st.chain_members(h.st.zone, crate::sim::state::ChainKind::Zone)
                    .into_iter()
                    .rev()
                    .filter_map(|i| h.st.at(i).map(|x| x.handle))
                    .collect();
            let v = match me {
                None => order.first().copied().unwrap_or(0),
                Some(_) => order
                    .iter()
                    .position(|&x| x == a.int(0))
                    .and_then(|p| order.get(p + 1).copied())
                    .unwrap_or(0),
            };
            int(v)
        }
        Native::Spawn => spawn(h, a),
        Native::KillActor => {
            if let Some(id) = me {
                let killer = h.actor(a.int(1));
                kill(h, id, killer);
            }
            none()
        }
        Native::MoveActor => {
            let Some(id) = me else { return none() };
            let c = shared::wire::clamp_world_coord;
            let (x, y, z) = (c(a.float(1)), c(a.float(2)), c(a.float(3)));
            let Some(act) = h.st.get_mut(id) else {
                return none();
            };
            act.x = x;
            act.y = y;
            act.z = z;
            act.dest_x = x;
            act.dest_z = z;
            act.old_x = x;
            act.old_z = z;
            act.last_pos_update_ms = None;
            let rid = act.rid;
            h.st.grid_update(id.idx);
            let p = RepositionActor::Move {
                runtime_id: rid,
                x,
                y,
                z,
                flag1: u8::from(a.int(4) != 0),
                flag2: u8::from(a.int(5) != 0),
            };
            send_zone(h.st, &p, None);
            none()
        }
        Native::RotateActor => {
            let Some(id) = me else { return none() };
            let yaw = a.float(1);
            let yaw = if yaw.is_finite() { yaw } else { 0.0 };
            let Some(act) = h.st.get_mut(id) else {
                return none();
            };
            act.yaw = yaw;
            let p = RepositionActor::Rotate {
                runtime_id: act.rid,
                yaw,
            };
            send_zone(h.st, &p, None);
            none()
        }
        Native::ActorLevel => int(get(h).map_or(0, |x| i32::from(x.level))),
        Native::ActorXp => int(get(h).map_or(0, |x| i32::try_from(x.xp).unwrap_or(i32::MAX))),
        Native::SetActorLevel => {
            let Some(id) = me else { return none() };
            let lvl = u16::try_from(a.int(1).clamp(0, 65535)).unwrap_or(0);
            let Some(x) = h.st.get_mut(id) else {
                return none();
            };
            x.xp = 0;
            stats::set_level(h.st, id, lvl);
            none()
        }
        Native::GiveXp => {
            if let Some(id) = me {
                let xp = u32::try_from(a.int(1).max(0)).unwrap_or(0);
                kill::give_xp(h.st, id, xp, a.int(2) != 0);
            }
            none()
        }
        Native::GiveKillXp => {
            let victim = h
                .actor(a.int(1))
                .and_then(|id| h.st.get(id))
                .map(|v| (v.level, v.xp_multiplier));
            if let (Some(id), Some((vl, mult))) = (me, victim) {
                let al = h.st.get(id).map_or(1, |x| x.level);
                let diff = (i32::from(vl) - i32::from(al)).max(1);
                let xp = diff
                    .saturating_mul(mult)
                    .saturating_add(h.st.rng.rand_range(0, 20))
                    .max(0);
                kill::give_xp(h.st, id, u32::try_from(xp).unwrap_or(0), false);
            }
            none()
        }
        Native::UpdateXpBar => {
            if let Some(id) = me {
                let v = u8::try_from(a.int(1).clamp(0, 255)).unwrap_or(0);
                if let Some(x) = h.st.get_mut(id) {
                    x.xp_bar = v;
                }
                // Realm Crafter sent 4 bytes here and 1 at login; the client reads 1.
                send(h.st, id, &XpUpdate::BarLevel { bar_level: v });
            }
            none()
        }

        // ----- AI, pets, mounts -----
        Native::ActorAggressiveness => int(get(h).map_or(0, |x| i32::from(x.aggressiveness))),
        Native::ActorAiState => int(get(h).map_or(0, |x| x.ai_mode as i32)),
        Native::SetActorAiState => {
            if let Some(x) = me.and_then(|id| h.st.get_mut(id)) {
                x.ai_mode = AiMode::from_u8(u8::try_from(a.int(1)).unwrap_or(0));
            }
            none()
        }
        Native::ActorTarget => {
            let t = get(h)
                .and_then(|x| x.ai_target)
                .and_then(|t| h.st.get(t))
                .map_or(0, |t| t.handle);
            int(t)
        }
        Native::SetActorTarget => {
            let Some(id) = me else { return none() };
            let target = h.actor(a.int(1));
            let allowed = target.is_some_and(|t| {
                let (Some(x), Some(y)) = (h.st.get(id), h.st.get(t)) else {
                    return false;
                };
                x.aggressiveness != 3
                    && y.aggressiveness != 3
                    && y.ratings
                        .get(usize::from(x.home_faction))
                        .is_some_and(|r| *r < 150)
            });
            if let Some(x) = h.st.get_mut(id) {
                x.ai_target = if allowed { target } else { None };
            }
            none()
        }
        Native::SetActorDestination => {
            let c = shared::wire::clamp_world_coord;
            if let Some(x) = me.and_then(|id| h.st.get_mut(id)) {
                x.dest_x = c(a.float(1));
                x.dest_z = c(a.float(2));
            }
            none()
        }
        Native::ActorDestinationX => float(get(h).map_or(0.0, |x| x.dest_x)),
        Native::ActorDestinationZ => float(get(h).map_or(0.0, |x| x.dest_z)),
        Native::ActorCallForHelp => {
            if let Some(id) = me {
                crate::sim::ai::call_for_help(h.st, id);
            }
            none()
        }
        Native::SetLeader => {
            set_leader(h, me, h.actor(a.int(1)));
            none()
        }
        Native::ActorLeader => int(get(h)
            .and_then(|x| x.leader)
            .map_or(0, |l| h.st.handle_of(l))),
        Native::ActorPets => int(get(h).map_or(0, |x| i32::try_from(x.slaves.len).unwrap_or(0))),
        Native::ActorMount => int(get(h)
            .and_then(|x| x.mount)
            .map_or(0, |m| h.st.handle_of(m))),
        Native::ActorRider => int(get(h)
            .and_then(|x| x.rider)
            .map_or(0, |r| h.st.handle_of(r))),
        Native::FireProjectile => {
            let target = h.actor(a.int(1));
            let name = a.text(2);
            let proj =
                h.st.content
                    .world
                    .projectiles
                    .iter()
                    .find(|p| p.name.eq_ignore_ascii_case(name.trim()))
                    .map(|p| p.id);
            if let (Some(src), Some(dst), Some(p)) = (me, target, proj) {
                crate::sim::combat::fire_projectile(h.st, p, src, dst);
            }
            none()
        }

        // ----- attributes -----
        Native::Attribute | Native::MaxAttribute => {
            let i = attr_index(h, &a.rstr(1));
            let v = get(h).and_then(|x| {
                if n == Native::Attribute {
                    x.attr_value(i)
                } else {
                    x.attr_maximum(i)
                }
            });
            int(v.unwrap_or(0))
        }
        Native::SetAttribute
        | Native::ChangeAttribute
        | Native::SetMaxAttribute
        | Native::ChangeMaxAttribute => {
            let (Some(id), Some(i)) = (me, attr_index(h, &a.rstr(1))) else {
                return none();
            };
            let max = matches!(n, Native::SetMaxAttribute | Native::ChangeMaxAttribute);
            // `Change…` adds to the current value (or maximum); `Set…` replaces it.
            let v = if matches!(n, Native::SetAttribute | Native::SetMaxAttribute) {
                a.int(2)
            } else {
                let cur = h.st.get(id).and_then(|x| {
                    if max {
                        x.attr_maximum(Some(i))
                    } else {
                        x.attr_value(Some(i))
                    }
                });
                cur.unwrap_or(0).saturating_add(a.int(2))
            };
            if !max {
                set_attribute(h, id, i, v);
                return none();
            }
            // The current value is not clamped to the new maximum (Realm Crafter).
            stats::write_attribute_max(h.st, id, i, v);
            none()
        }
        Native::Resistance => {
            let i = damage_type(h, &a.rstr(1));
            int(i
                .and_then(|i| get(h).and_then(|x| x.resist.get(i).copied()))
                .unwrap_or(0))
        }
        Native::SetResistance => {
            let i = damage_type(h, &a.rstr(1));
            if let (Some(i), Some(x)) = (i, me.and_then(|id| h.st.get_mut(id)))
                && let Some(r) = x.resist.get_mut(i)
            {
                *r = a.int(2);
            }
            none()
        }
        Native::Reputation => int(get(h).map_or(0, |x| x.reputation)),
        Native::SetReputation => {
            if let Some(id) = me {
                if h.st.get(id).is_some_and(|x| x.is_player()) {
                    stats::update_reputation(h.st, id, a.int(1));
                } else if let Some(x) = h.st.get_mut(id) {
                    x.reputation = a.int(1);
                }
            }
            none()
        }

        // ----- parties and groups -----
        Native::CountPartyMembers => {
            let v = get(h)
                .and_then(|x| x.party)
                .and_then(|p| h.st.parties.get(p as usize))
                .map_or(0, |p| p.members.len().saturating_sub(1));
            int(i32::try_from(v).unwrap_or(0))
        }
        Native::PartyMember => {
            let Some(x) = get(h) else { return int(0) };
            let own = x.name.clone();
            let idx = usize::try_from(a.int(1)).ok().filter(|&i| i >= 1);
            let name = x
                .party
                .and_then(|p| h.st.parties.get(p as usize))
                .and_then(|p| {
                    let others: Vec<&String> = p
                        .members
                        .iter()
                        .filter(|m| !m.eq_ignore_ascii_case(&own))
                        .collect();
                    idx.and_then(|i| others.get(i - 1).map(|s| (*s).clone()))
                });
            let Some(nm) = name else { return int(0) };
            let here =
                h.st.chain_members(h.st.online, crate::sim::state::ChainKind::Online)
                    .into_iter()
                    .filter_map(|i| h.st.at(i))
                    .find(|o| o.name.eq_ignore_ascii_case(&nm))
                    .map(|o| o.handle);
            match here {
                Some(v) => int(v),
                // A member in another zone, on whatever node: its handle from the gateway.
                None => h.ask_int(shared::internal::ScriptStoreOp::FindPlayer { name: nm }),
            }
        }
        Native::ActorGroup | Native::ActorGuild => int(get(h).map_or(0, |x| x.team)),
        Native::SetActorGroup | Native::SetActorGuild => {
            if let Some(x) = me.and_then(|id| h.st.get_mut(id)) {
                x.team = a.int(1);
            }
            none()
        }

        // ----- factions -----
        Native::FactionRating => {
            let f = faction_index(h.st, &a.text(1));
            let v = f.and_then(|f| get(h).and_then(|x| x.ratings.get(f).copied()));
            int(v.map_or(0, |r| i32::from(r) - 100))
        }
        Native::SetFactionRating | Native::ChangeFactionRating => {
            let f = faction_index(h.st, &a.text(1));
            if let (Some(f), Some(x)) = (f, me.and_then(|id| h.st.get_mut(id)))
                && let Some(r) = x.ratings.get_mut(f)
            {
                let v = if n == Native::SetFactionRating {
                    a.int(2).saturating_add(100)
                } else {
                    i32::from(*r).saturating_add(a.int(2))
                };
                *r = u8::try_from(v.clamp(0, 200)).unwrap_or(100);
            }
            none()
        }
        Native::HomeFaction => {
            let v = get(h)
                .and_then(|x| {
                    h.st.content
                        .world
                        .factions
                        .names
                        .get(usize::from(x.home_faction))
                })
                .map_or(RStr::EMPTY, |s| name_str(s));
            string(v)
        }
        Native::SetHomeFaction => {
            let f = faction_index(h.st, &a.text(1)).and_then(|f| u8::try_from(f).ok());
            if let (Some(f), Some(x)) = (f, me.and_then(|id| h.st.get_mut(id))) {
                x.home_faction = f.min(99);
            }
            none()
        }
        Native::GetFaction => {
            let v = usize::try_from(a.int(0))
                .ok()
                .and_then(|i| h.st.content.world.factions.names.get(i))
                .map_or(RStr::EMPTY, |s| name_str(s));
            string(v)
        }
        Native::DefaultFactionRating => {
            let (f1, f2) = (
                faction_index(h.st, &a.text(0)),
                faction_index(h.st, &a.text(1)),
            );
            let v = match (f1, f2) {
                (Some(f1), Some(f2)) => {
                    i32::from(
                        h.st.content
                            .default_rating(u8::try_from(f1).unwrap_or(0), f2),
                    ) - 100
                }
                _ => 0,
            };
            int(v)
        }

        // ----- chat -----
        Native::Output => {
            let rgb = |i: usize| u8::try_from(a.int(i).clamp(0, 255)).unwrap_or(255);
            if let Some(id) = me.filter(|id| h.st.get(*id).is_some_and(|x| x.is_player())) {
                let p = ChatMessageS2C {
                    colour: ChatColour::Rgb(rgb(2), rgb(3), rgb(4)),
                    text: RcString(a.rstr(1).as_bytes().to_vec()),
                };
                send(h.st, id, &p);
            } else if me.is_none()
                && let Ok(handle) = u32::try_from(a.int(0))
                && handle > 0
                && handle < crate::sim::state::NPC_HANDLE_BASE
            {
                // A player handle not in this zone: the line goes to it wherever it is.
                h.st.outputs
                    .push(crate::sim::events::ZoneOutput::ScriptStore {
                        req: 0,
                        op: shared::internal::ScriptStoreOp::Tell {
                            handle,
                            text: a.rstr(1).as_bytes().to_vec(),
                            rgb: (rgb(2), rgb(3), rgb(4)),
                        },
                    });
            }
            none()
        }

        // ----- appearance -----
        _ => super::look::call(h, n, a),
    }
}

/// `Spawn(template, zone, x, y, z, script, deathScript, instance)`: an NPC here, in AI Wait,
/// with its right-click and death scripts; no spawn script runs. Spawning into another
/// AreaInstance is not possible from here (0, logged).
fn spawn(h: &mut ZoneHost<'_>, a: Args<'_>) -> NResult {
    let Some(t) = u16::try_from(a.int(0))
        .ok()
        .filter(|t| h.st.content.template(*t).is_some())
    else {
        return int(0);
    };
    let zone = a.text(1);
    let inst = a.int(7);
    let here = zone.trim().eq_ignore_ascii_case(&h.st.content.area.name)
        && (inst == i32::from(h.st.cfg.instance) || inst == 0);
    if !here {
        // Another AreaInstance, on whatever node (started if it is not running): the
        // gateway has its zone spawn it; the script waits for the handle.
        let Ok(instance) = u16::try_from(inst) else {
            return int(0);
        };
        return h.ask_int(shared::internal::ScriptStoreOp::Spawn {
            area: zone.trim().to_owned(),
            instance,
            template: t,
            x: a.float(2).to_bits(),
            y: a.float(3).to_bits(),
            z: a.float(4).to_bits(),
            script: a.text(5),
            death_script: a.text(6),
        });
    }
    let Some(id) = crate::sim::appear::spawn_npc(h.st, t, a.float(2), a.float(3), a.float(4))
    else {
        return int(0);
    };
    let (script, death) = (a.text(5), a.text(6));
    if let Some(x) = h.st.get_mut(id) {
        x.ai_mode = AiMode::Wait;
        x.script = script;
        x.death_script = death;
    }
    int(h.st.handle_of(id))
}

/// `SetLeader(npc, leader)`.
fn set_leader(h: &mut ZoneHost<'_>, npc: Option<ActorId>, leader: Option<ActorId>) {
    let Some(id) = npc.filter(|id| h.st.get(*id).is_some_and(|x| !x.is_player())) else {
        return;
    };
    if let Some(old) = h.st.get(id).and_then(|x| x.leader) {
        h.st.slave_unlink(id);
        let _ = old;
        if let Some(x) = h.st.get_mut(id) {
            x.ai_mode = AiMode::Wait;
        }
    }
    match leader.filter(|l| *l != id) {
        Some(l) => {
            crate::sim::spawns::release(h.st, id);
            h.st.slave_link(l, id);
            if let Some(x) = h.st.get_mut(id) {
                x.ai_mode = AiMode::Pet;
            }
        }
        None => {
            let wp =
                h.st.content
                    .area
                    .waypoints
                    .iter()
                    .position(|w| w.x.is_finite());
            match wp.and_then(|i| u16::try_from(i).ok()) {
                Some(w) => {
                    let (x0, z0) =
                        h.st.content
                            .area
                            .waypoint(w)
                            .map_or((0.0, 0.0), |p| (p.x, p.z));
                    let dx = h.st.rng.rnd(-5.0, 5.0);
                    let dz = h.st.rng.rnd(-5.0, 5.0);
                    if let Some(x) = h.st.get_mut(id) {
                        x.ai_mode = AiMode::Patrol;
                        x.current_waypoint = w;
                        x.dest_x = x0 + dx;
                        x.dest_z = z0 + dz;
                    }
                }
                None => kill(h, id, None),
            }
        }
    }
}

/// The index of a damage type by its exact name (`Resistance`, `SetResistance`).
fn damage_type(h: &ZoneHost<'_>, name: &RStr) -> Option<usize> {
    h.st.content
        .world
        .damage_types
        .iter()
        .position(|d| !d.is_empty() && d.as_bytes() == name.as_bytes())
}
