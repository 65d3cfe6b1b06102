//! Combat (reference §7.3): `ActorAttack` with formulas 1-4, crits, armour and wear;
//! `FireProjectile`; the H/Y/O packets of `P_AttackActor`; the `P_AttackActor` input gates.
//!
//! # Order of random draws (fixed, so a seed gives the same fight)
//! Melee, formulas 1-3: hit roll `Rand(1..100)`, then (on a hit) the formula's damage roll,
//! the crit roll `Rand(1..10)`; then the weapon wear roll, then one armour wear roll per
//! worn armour slot 1..7 of the victim. Projectile: hit roll, then damage roll.
//!
//! # Quirk decisions
//! * V1: a victim whose Health is already ≤ 0 (or who is dead, waiting for the death
//!   script) cannot be attacked.
//! * Melee HP changes go through [`stats::update_attribute`], so every player of the zone
//!   gets the `P_StatUpdate` (Realm Crafter wrote HP directly and observers' bars drifted).
//! * `ArmourDamage` wears the **victim's** armour (Realm Crafter wore the attacker's).
//! * Wear only touches items whose template `takes_damage` and whose health is > 0.
//! * The faction gate reads the attacker's rating of the victim's home faction
//!   (`A1.ratings[A2.home] > 150` refuses), as §7.2 words it ("may not melee or shoot that
//!   faction").

use super::events::{Rejection, RuntimeId};
use shared::proto::{AttackActorS2C, ChatColour, ChatMessageS2C, ItemHealth};

use super::engine::EngineEvent;
use super::packets::{self, CHAT_RED};
use super::state::{ActorId, AiMode, ZoneState};
use super::{ai, stats};

/// Melee reach before radii (`7.0 + r1 + r2`).
pub const MELEE_RANGE: f32 = 7.0;
/// Ratings above this refuse an attack on that faction.
pub const RATING_NO_ATTACK: u8 = 150;
/// Inventory slot of the weapon.
pub const SLOT_WEAPON: usize = 0;
/// Armour slots (shield, hat, chest, hand, belt, legs, feet).
pub const ARMOUR_SLOTS: std::ops::RangeInclusive<usize> = 1..=7;

/// Current Health (`None` without a Health stat).
fn health(st: &ZoneState, id: ActorId) -> Option<i32> {
    let h = st.content.fixed.health?;
    st.get(id).and_then(|a| a.attr_value(Some(h)))
}

/// `dist² = dx² + dz² + ((y1 - y2) / 5)²`.
fn combat_dist2(st: &ZoneState, a: ActorId, b: ActorId) -> Option<f32> {
    let (x, y) = (st.get(a)?, st.get(b)?);
    let (dx, dz, dy) = (x.x - y.x, x.z - y.z, (x.y - y.y) / 5.0);
    Some(dx * dx + dz * dz + dy * dy)
}

/// The weapon in slot 0: `(slot item health, template)`.
fn weapon(st: &ZoneState, id: ActorId) -> Option<(u8, shared::content::Item)> {
    let a = st.get(id)?;
    let slot = a.inventory.get(SLOT_WEAPON)?.as_ref()?;
    let item = st.content.world.item(slot.item)?;
    item.weapon_damage()?;
    Some((slot.health, item.clone()))
}

/// Armour = the sum of `ArmourLevel` over slots 1..7 holding armour with health > 0.
pub fn armour(st: &ZoneState, id: ActorId) -> i32 {
    let Some(a) = st.get(id) else { return 0 };
    let world = &st.content.world;
    a.inventory
        .iter()
        .enumerate()
        .filter(|(i, _)| ARMOUR_SLOTS.contains(i))
        .filter_map(|(_, s)| s.as_ref())
        .filter(|s| s.health > 0)
        .filter_map(|s| world.item(s.item).and_then(|it| it.armour_level()))
        .map(i32::from)
        .sum()
}

/// The damage as the wire can carry it: the wire holds damage + 1 in a u16 (a miss, -1,
/// is 0), so it is kept in `-1..=65534`.
fn wire_damage(dmg: i32) -> i32 {
    dmg.saturating_add(1).clamp(0, 65535) - 1
}

/// Send `"H"` to the attacker, `"Y"` to the victim and (when `observers`) `"O"` to the
/// other players of the zone.
fn send_hit(st: &mut ZoneState, a1: ActorId, a2: ActorId, dmg: i32, dtype: u8, observers: bool) {
    let (Some(r1), Some(r2)) = (st.get(a1).map(|a| a.rid), st.get(a2).map(|a| a.rid)) else {
        return;
    };
    let damage = wire_damage(dmg);
    let hit = AttackActorS2C::Hit {
        victim: r2,
        damage,
        damage_type: dtype,
    };
    st.send_packet(a1, &hit);
    let hit_you = AttackActorS2C::HitYou {
        attacker: r1,
        damage,
        damage_type: dtype,
    };
    st.send_packet(a2, &hit_you);
    if observers {
        send_observed(st, a1, a2);
    }
}

/// `"O" + attacker + victim` to every player of the zone but those two.
fn send_observed(st: &mut ZoneState, a1: ActorId, a2: ActorId) {
    let (Some(r1), Some(r2)) = (st.get(a1).map(|a| a.rid), st.get(a2).map(|a| a.rid)) else {
        return;
    };
    let p = AttackActorS2C::Observed {
        attacker: r1,
        victim: r2,
    };
    let members = st.chain_members(st.online, super::state::ChainKind::Online);
    for idx in members {
        let Some(id) = st.at(idx).map(|a| a.id) else {
            continue;
        };
        if id != a1 && id != a2 {
            st.send_packet(id, &p);
        }
    }
}

/// `P_ItemHealth`: `slot u8, health u16` to the owner.
fn send_item_health(st: &mut ZoneState, id: ActorId, slot: usize, health: u8) {
    let p = ItemHealth {
        slot: u8::try_from(slot).unwrap_or(u8::MAX),
        health: u16::from(health),
    };
    st.send_packet(id, &p);
}

/// Lower the health of the item in `slot` by one when it wears (template `takes_damage`,
/// health > 0) and tell the owner.
fn wear_slot(st: &mut ZoneState, id: ActorId, slot: usize) {
    let world = st.content.world.clone();
    let Some(a) = st.get_mut(id) else { return };
    let Some(Some(s)) = a.inventory.get_mut(slot) else {
        return;
    };
    if s.health == 0 || !world.item(s.item).is_some_and(|i| i.takes_damage) {
        return;
    }
    s.health -= 1;
    let h = s.health;
    send_item_health(st, id, slot, h);
}

/// Whether `a` may hit `b` at all: neither non-combatant, `a` does not like `b`'s faction
/// (rating ≤ 150), not itself.
fn may_attack(st: &ZoneState, a1: ActorId, a2: ActorId) -> bool {
    let (Some(a), Some(b)) = (st.get(a1), st.get(a2)) else {
        return false;
    };
    a1 != a2
        && a.aggressiveness != 3
        && b.aggressiveness != 3
        && a.ratings
            .get(usize::from(b.home_faction))
            .is_none_or(|r| *r <= RATING_NO_ATTACK)
}

/// An NPC victim that is defensive, or aggressive without a target, turns on `attacker`
/// (Chase, running) and calls for help.
fn provoke(st: &mut ZoneState, victim: ActorId, attacker: ActorId) {
    let Some(v) = st.get_mut(victim) else { return };
    if v.is_player() || v.leader.is_some() {
        // Pets follow their leader's orders (PetChase), not the provocation rule.
        if v.leader.is_some() && v.ai_target.is_none() && v.aggressiveness < 3 {
            v.ai_mode = AiMode::PetChase;
            v.ai_target = Some(attacker);
        }
        return;
    }
    let target_alive = v.ai_target.is_some_and(|t| t != victim);
    let angry = v.aggressiveness == 1 || (v.aggressiveness == 2 && !target_alive);
    if angry {
        v.ai_mode = AiMode::Chase;
        v.ai_target = Some(attacker);
        v.is_running = true;
    }
}

/// `P_AttackActor` from a player: gates (in game, combat delay, not mounted, target exists,
/// same instance, NPC or PvP) then `ActorAttack`, and `AITarget = target`.
pub(crate) fn player_attack(st: &mut ZoneState, attacker: ActorId, target: RuntimeId) {
    let Some(a) = st.get(attacker) else { return };
    let player = a.player;
    let delay = st.content.rules.combat_delay_ms;
    let cooling = a
        .last_attack_ms
        .is_some_and(|l| st.now_ms.saturating_sub(l) < delay && st.now_ms >= l);
    if a.dead || a.mount.is_some() || cooling {
        st.reject(player, Rejection::Invalid);
        return;
    }
    let Some(t) = st.by_rid(target) else {
        st.reject(player, Rejection::UnknownTarget);
        return;
    };
    if st.get(t).is_none_or(|v| v.frozen()) {
        st.reject(player, Rejection::UnknownTarget);
        return;
    }
    if t == attacker {
        st.reject(player, Rejection::Invalid);
        return;
    }
    let target_is_player = st.get(t).is_some_and(|v| v.is_player());
    if target_is_player && !st.content.area.pvp {
        st.reject(player, Rejection::NotPermitted);
        return;
    }
    actor_attack(st, attacker, t);
    if let Some(a) = st.get_mut(attacker) {
        a.ai_target = Some(t);
    }
}

/// The formula 1-3 damage before armour, and the damage type.
fn base_damage(st: &mut ZoneState, a1: ActorId, formula: u8) -> (i32, u8) {
    let default_type = st.get(a1).map_or(0, |a| a.default_damage_type);
    let strength = st
        .get(a1)
        .and_then(|a| a.attr_value(st.content.fixed.strength))
        .unwrap_or(0);
    let usable = weapon(st, a1).filter(|(h, _)| *h > 0);
    let (w, dtype) = match &usable {
        Some((_, it)) => match it.kind {
            shared::content::ItemKind::Weapon {
                damage,
                damage_type,
                ..
            } => (
                Some(i32::from(damage)),
                u8::try_from(damage_type).unwrap_or(0),
            ),
            _ => (None, default_type),
        },
        None => (None, default_type),
    };
    let rng = &mut st.rng;
    let dmg = match (formula, w) {
        (1, Some(w)) if strength < w => w - rng.rand_range(5, 8),
        (1, Some(w)) if strength > w => w.saturating_add(rng.rand_range(5, 8)),
        (1, Some(w)) => w.saturating_add(rng.rand_range(-5, 5)),
        (2, Some(w)) => w,
        (3, Some(w)) => w.saturating_mul(strength),
        (3, None) => strength.saturating_add(rng.rand_range(-10, 10)),
        (_, _) => (strength / 8).saturating_add(rng.rand_range(-5, 5)),
    };
    (dmg, dtype)
}

/// The armour step `AP` of formulas 1-3 against `victim` for a damage type.
fn armour_points(st: &ZoneState, victim: ActorId, dtype: u8, formula: u8) -> i32 {
    let Some(v) = st.get(victim) else { return 0 };
    let resist = v.resist.get(usize::from(dtype)).copied().unwrap_or(100);
    let base = armour(st, victim)
        .saturating_add(resist)
        .saturating_sub(100);
    let tough = st.content.fixed.toughness;
    let t = v.attr_value(tough);
    if formula == 3 {
        match (tough, t) {
            (Some(_), Some(t)) => base.saturating_mul(t),
            _ => base.saturating_mul(base),
        }
    } else {
        base.saturating_add(t.unwrap_or(0) / 8)
    }
}

/// Note that `victim` was attacked at `now` (hit or not): it is in combat for
/// [`super::regen::COMBAT_MS`] even if it never hits back and nobody hunts it.
pub fn note_attacked(st: &mut ZoneState, victim: ActorId, now: u64) {
    if let Some(v) = st.get_mut(victim) {
        v.last_attacked_ms = Some(now);
    }
}

/// `ActorAttack(A1, A2)`: one attack. Returns whether an attack happened (a miss counts).
#[doc(alias = "ActorAttack")]
pub fn actor_attack(st: &mut ZoneState, a1: ActorId, a2: ActorId) -> bool {
    // 1. V1: no attacking the dead.
    if !st.alive(a2) || !st.alive(a1) || a1 == a2 {
        return false;
    }
    let Some(d2) = combat_dist2(st, a1, a2) else {
        return false;
    };
    let (r1, r2) = match (st.get(a1), st.get(a2)) {
        (Some(a), Some(b)) => (a.radius, b.radius),
        _ => return false,
    };
    let formula = st.content.rules.combat_formula;
    let now = st.now_ms;
    // 3. Ranged weapon.
    if let Some((wh, item)) = weapon(st, a1)
        && let shared::content::ItemKind::Weapon {
            weapon_type: shared::content::WeaponType::Ranged,
            projectile,
            range,
            ..
        } = item.kind
    {
        if wh == 0 {
            packets::send_chat(st, a1, CHAT_RED, "Your weapon is too badly damaged to use!");
            return false;
        }
        if formula == 4 {
            if let Some(a) = st.get_mut(a1) {
                a.last_attack_ms = Some(now);
            }
            note_attacked(st, a2, now);
            st.announce(EngineEvent::Attacked {
                attacker: a1,
                victim: a2,
            });
            return true;
        }
        let reach = range.max(0.0) + r1 + r2;
        if d2 > reach * reach {
            return false;
        }
        send_observed(st, a1, a2);
        if let Some(a) = st.get_mut(a1) {
            a.last_attack_ms = Some(now);
        }
        note_attacked(st, a2, now);
        fire_projectile(st, projectile, a1, a2);
        return true;
    }
    // 5. Melee gates.
    if !may_attack(st, a1, a2) {
        return false;
    }
    let reach = MELEE_RANGE + r1 + r2;
    if d2 > reach * reach {
        return false;
    }
    if let Some(a) = st.get_mut(a1) {
        a.last_attack_ms = Some(now);
    }
    note_attacked(st, a2, now);
    provoke(st, a2, a1);
    if formula == 4 || formula == 0 || formula > 4 {
        // Formula 4: the Attack script decides everything (no engine damage or packets).
        st.announce(EngineEvent::Attacked {
            attacker: a1,
            victim: a2,
        });
        return true;
    }
    // 6. Damage.
    let hit = st.rng.rand_range(1, 100) > 10;
    let (mut dmg, dtype) = base_damage(st, a1, formula);
    if hit {
        if st.rng.one_in(10) {
            dmg = dmg.saturating_mul(2);
            let line = ChatMessageS2C {
                colour: ChatColour::Rgb(255, 225, 100),
                text: packets::text("Critical damage!"),
            };
            st.send_packet(a1, &line);
        }
        let ap = armour_points(st, a2, dtype, formula);
        dmg = dmg.saturating_sub(ap).max(1);
    } else {
        dmg = -1;
    }
    // 7. Wear.
    let rules = st.content.rules.clone();
    if rules.weapon_damage && weapon(st, a1).is_some() && st.rng.one_in(5) {
        wear_slot(st, a1, SLOT_WEAPON);
    }
    if rules.armour_damage {
        let worn: Vec<usize> = st.get(a2).map_or_else(Vec::new, |v| {
            ARMOUR_SLOTS
                .filter(|s| v.inventory.get(*s).is_some_and(Option::is_some))
                .collect()
        });
        for s in worn {
            if st.rng.one_in(5) {
                wear_slot(st, a2, s);
            }
        }
    }
    // 8. HP and packets.
    if dmg > 0
        && let (Some(h), Some(hp)) = (st.content.fixed.health, health(st, a2))
    {
        stats::update_attribute(st, a2, h, hp.saturating_sub(dmg));
    }
    send_hit(st, a1, a2, dmg, dtype, true);
    ai::call_for_help(st, a2);
    // 9. A player's pets join in.
    if st.get(a1).is_some_and(|a| a.is_player()) {
        for pet in st.slaves_of(a1) {
            if let Some(p) = st.get_mut(pet)
                && p.aggressiveness < 3
                && p.ai_target.is_none()
            {
                p.ai_mode = AiMode::PetChase;
                p.ai_target = Some(a2);
            }
        }
    }
    // 10. Kill (deferred: never free mid-iteration).
    if health(st, a2).is_some_and(|hp| hp <= 0) {
        stats::defer_kill(st, a2, Some(a1));
    }
    true
}

/// `P_Projectile`: `src u16, tgt u16, mesh u16, tex1 u16, tex2 u16, homing u8, speed u8,
/// u8 len emitter1, emitter2 (rest)`.
fn projectile_packet(
    src: RuntimeId,
    tgt: RuntimeId,
    p: &shared::content::Projectile,
) -> shared::proto::Projectile {
    shared::proto::Projectile {
        source: src,
        target: tgt,
        mesh: p.mesh,
        texture1: p.texture1,
        texture2: p.texture2,
        homing: u8::from(p.homing),
        speed: p.speed,
        emitter1: packets::text(&p.emitter1),
        emitter2: packets::text(&p.emitter2),
    }
}

/// `FireProjectile(P, A1, A2)`: broadcast the projectile, roll the hit, apply the damage
/// (no toughness term), provoke an NPC victim and kill at Health ≤ 0. A missing projectile
/// id does nothing.
#[doc(alias = "FireProjectile")]
pub fn fire_projectile(st: &mut ZoneState, projectile: u16, a1: ActorId, a2: ActorId) {
    if !may_attack(st, a1, a2) || !st.alive(a2) {
        return;
    }
    let Some(p) = st.content.world.projectile(projectile).cloned() else {
        return;
    };
    let (Some(r1), Some(r2)) = (st.get(a1).map(|a| a.rid), st.get(a2).map(|a| a.rid)) else {
        return;
    };
    st.send_packet_zone(&projectile_packet(r1, r2, &p), None);
    let now = st.now_ms;
    note_attacked(st, a2, now);
    if st.rng.rand_range(1, 100) > i32::from(p.hit_chance) {
        // Projectile misses send nothing.
        return;
    }
    let roll = st.rng.rand_range(-5, 5);
    let dtype = u8::try_from(p.damage_type).unwrap_or(0);
    let resist = st
        .get(a2)
        .and_then(|v| v.resist.get(usize::from(dtype)).copied())
        .unwrap_or(100);
    let ap = armour(st, a2).saturating_add(resist).saturating_sub(100);
    let dmg = (i32::from(p.damage) + roll).saturating_sub(ap).max(1);
    if let (Some(h), Some(hp)) = (st.content.fixed.health, health(st, a2)) {
        stats::update_attribute(st, a2, h, hp.saturating_sub(dmg));
    }
    send_hit(st, a1, a2, dmg, dtype, false);
    if st.get(a2).is_some_and(|v| !v.is_player()) {
        provoke(st, a2, a1);
        ai::call_for_help(st, a2);
    }
    if health(st, a2).is_some_and(|hp| hp <= 0) {
        stats::defer_kill(st, a2, Some(a1));
    }
}
