//! Rules scenarios: `ActorAttack` (formulas 1-4, crits, armour, wear, ranged weapons and
//! projectiles, the `P_AttackActor` gates), `KillActor` and `GiveXP` (XP, rating adjust).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::float_cmp)]

use std::sync::{Arc, Mutex};

use shared::content::{Item, ItemKind, Projectile, WeaponType};
use zone_node::sim::events::{InvSlot, PlayerAction, Rejection};
use zone_node::sim::packets::*;
use zone_node::sim::rng::SimRng;
use zone_node::sim::scripts::ScriptHooks;
use zone_node::sim::testing::{SimHarness, attrs, templates, test_content, test_world};
use zone_node::sim::{ActorId, ZoneConfig, ZoneSim, ZoneState, combat};

const SWORD: u16 = 10;
const BOW: u16 = 11;
const CHEST: u16 = 12;
const ARROW: u16 = 3;

fn world_with_items() -> shared::content::World {
    let mut w = test_world();
    w.items = vec![
        Item {
            id: SWORD,
            name: "Sword".into(),
            takes_damage: true,
            kind: ItemKind::Weapon {
                damage: 30,
                damage_type: 1,
                weapon_type: WeaponType::OneHanded,
                projectile: 0,
                range: 0.0,
                anim: String::new(),
            },
            ..Item::default()
        },
        Item {
            id: BOW,
            name: "Bow".into(),
            takes_damage: true,
            kind: ItemKind::Weapon {
                damage: 5,
                damage_type: 0,
                weapon_type: WeaponType::Ranged,
                projectile: ARROW,
                range: 50.0,
                anim: String::new(),
            },
            ..Item::default()
        },
        Item {
            id: CHEST,
            name: "Mail".into(),
            takes_damage: true,
            kind: ItemKind::Armour { level: 5 },
            ..Item::default()
        },
    ];
    w.projectiles = vec![Projectile {
        id: ARROW,
        name: "Arrow".into(),
        mesh: 7,
        emitter1: "Sparks".into(),
        emitter2: "Smoke".into(),
        texture1: 1,
        texture2: 2,
        homing: true,
        hit_chance: 100,
        damage: 20,
        damage_type: 0,
        speed: 9,
    }];
    w
}

fn harness(formula: u8, tweak: impl FnOnce(&mut zone_node::sim::ZoneContent)) -> SimHarness {
    let mut c = test_content();
    c.world = Arc::new(world_with_items());
    c.rules.combat_formula = formula;
    tweak(&mut c);
    SimHarness::with(ZoneConfig::default(), c)
}

fn slot(item: u16, health: u8) -> Option<InvSlot> {
    Some(InvSlot {
        item,
        attributes: Vec::new(),
        health,
        amount: 1,
    })
}

fn hp(h: &SimHarness, id: ActorId) -> i32 {
    h.actor(id).attr[usize::from(attrs::HEALTH)]
}

fn set_hp(h: &mut SimHarness, id: ActorId, v: i32, max: i32) {
    let a = h.actor_mut(id);
    a.attr_max[usize::from(attrs::HEALTH)] = max;
    a.attr[usize::from(attrs::HEALTH)] = v;
}

/// The spec's formulas 1-3, written independently from the implementation, consuming a
/// replica RNG in the documented order: hit, damage roll, crit. Returns `(damage, crit)`.
fn expected(
    rng: &mut SimRng,
    formula: u8,
    weapon: Option<i32>,
    strength: i32,
    armour: i32,
    resist: i32,
    toughness: Option<i32>,
) -> (i32, bool) {
    let hit = rng.rand_range(1, 100) > 10;
    let mut dmg = match (formula, weapon) {
        (1, Some(w)) if strength < w => w - rng.rand_range(5, 8),
        (1, Some(w)) if strength > w => w + rng.rand_range(5, 8),
        (1, Some(w)) => w + rng.rand_range(-5, 5),
        (2, Some(w)) => w,
        (3, Some(w)) => w * strength,
        (3, None) => strength + rng.rand_range(-10, 10),
        _ => strength / 8 + rng.rand_range(-5, 5),
    };
    if !hit {
        return (-1, false);
    }
    let crit = rng.rand_range(1, 10) == 1;
    if crit {
        dmg *= 2;
    }
    let base = armour + resist - 100;
    let ap = match formula {
        3 => toughness.map_or(base * base, |t| base * t),
        _ => base + toughness.unwrap_or(0) / 8,
    };
    ((dmg - ap).max(1), crit)
}

#[test]
fn formulas_1_to_3_match_the_spec_with_fixed_seeds() {
    for formula in 1..=3u8 {
        for with_weapon in [false, true] {
            for seed in 0..40u64 {
                let mut h = harness(formula, |_| {});
                let (_p, pid) = h.spawn_player("Alice", 0.0, 0.0);
                let npc = h.spawn_npc(templates::HUMAN, 3.0, 0.0);
                set_hp(&mut h, npc, 30000, 30000);
                h.actor_mut(npc).attr[usize::from(attrs::TOUGHNESS)] = 16;
                h.actor_mut(npc).inventory[3] = slot(CHEST, 50);
                h.actor_mut(npc).resist[1] = 110;
                h.actor_mut(npc).resist[0] = 100;
                if with_weapon {
                    h.actor_mut(pid).inventory[0] = slot(SWORD, 100);
                }
                let strength = h.actor(pid).attr[usize::from(attrs::STRENGTH)];
                let resist = if with_weapon { 110 } else { 100 };
                let st = h.sim.state_mut();
                st.rng = SimRng::new(seed);
                let mut replica = SimRng::new(seed);
                let (dmg, _) = expected(
                    &mut replica,
                    formula,
                    with_weapon.then_some(30),
                    strength,
                    5,
                    resist,
                    Some(16),
                );
                assert!(combat::actor_attack(st, pid, npc));
                let want = if dmg > 0 { 30000 - dmg } else { 30000 };
                assert_eq!(
                    hp(&h, npc),
                    want,
                    "formula {formula} weapon {with_weapon} seed {seed}"
                );
            }
        }
    }
}

#[test]
fn formula_3_without_a_toughness_stat_squares_the_armour() {
    let mut h = harness(3, |c| c.fixed.toughness = None);
    let (_p, pid) = h.spawn_player("Alice", 0.0, 0.0);
    let npc = h.spawn_npc(templates::HUMAN, 3.0, 0.0);
    set_hp(&mut h, npc, 30000, 30000);
    h.actor_mut(npc).inventory[3] = slot(CHEST, 50);
    h.actor_mut(pid).inventory[0] = slot(SWORD, 100);
    let st = h.sim.state_mut();
    st.rng = SimRng::new(7);
    let mut replica = SimRng::new(7);
    let (dmg, _) = expected(&mut replica, 3, Some(30), 40, 5, 110, None);
    st.get_mut(npc).unwrap().resist[1] = 110;
    combat::actor_attack(st, pid, npc);
    // 30 × 40 = 1200 (2400 on a crit) minus (5 + 110 - 100)² = 225.
    assert!(dmg == 975 || dmg == 2175 || dmg == -1);
    assert_eq!(hp(&h, npc), if dmg > 0 { 30000 - dmg } else { 30000 });
}

#[test]
fn hyo_packets_carry_damage_plus_one_and_observers_see_the_hp() {
    let mut h = harness(2, |_| {});
    let (p, pid) = h.spawn_player("Alice", 0.0, 0.0);
    let (o, _) = h.spawn_player("Obs", 20.0, 0.0);
    let npc = h.spawn_npc(templates::HUMAN, 3.0, 0.0);
    h.actor_mut(pid).inventory[0] = slot(SWORD, 100);
    let nrid = h.actor(npc).rid;
    // Find a seed that hits without a crit: formula 2 damage = 30 - (0 + 110 - 100) = 20.
    h.actor_mut(npc).resist[1] = 110;
    let seed = (0..100u64)
        .find(|s| {
            let mut r = SimRng::new(*s);
            expected(&mut r, 2, Some(30), 40, 0, 110, Some(0)) == (20, false)
        })
        .unwrap();
    h.sim.state_mut().rng = SimRng::new(seed);
    h.clear();
    h.act(p, PlayerAction::Attack { target: nrid });
    // Apply the input only (the tick's own draws come after it).
    h.tick();
    assert_eq!(hp(&h, npc), 80);
    let hit = h.reliable_of(p, P_ATTACK_ACTOR);
    let nr = nrid.to_le_bytes();
    assert_eq!(hit, vec![vec![b'H', nr[0], nr[1], 21, 0, 1]]);
    let seen = h.reliable_of(o, P_ATTACK_ACTOR);
    assert_eq!(seen, vec![vec![b'O', 1, 0, nr[0], nr[1]]]);
    // Quirk fix: melee HP changes reach observers as P_StatUpdate.
    let stat = h.reliable_of(o, P_STAT_UPDATE);
    assert!(stat.contains(&stat_value(nrid, attrs::HEALTH, 80).to_vec()));
    assert_eq!(h.actor(pid).ai_target, Some(npc));
}

#[test]
fn a_crit_doubles_before_armour_and_tells_the_attacker() {
    let mut h = harness(2, |_| {});
    let (p, pid) = h.spawn_player("Alice", 0.0, 0.0);
    let npc = h.spawn_npc(templates::HUMAN, 3.0, 0.0);
    h.actor_mut(pid).inventory[0] = slot(SWORD, 100);
    h.actor_mut(npc).resist[1] = 110;
    let seed = (0..500u64)
        .find(|s| {
            let mut r = SimRng::new(*s);
            expected(&mut r, 2, Some(30), 40, 0, 110, Some(0)).1
        })
        .unwrap();
    let st = h.sim.state_mut();
    st.rng = SimRng::new(seed);
    h.clear();
    combat::actor_attack(h.sim.state_mut(), pid, npc);
    h.tick();
    // (30 × 2) - 10 = 50.
    assert_eq!(hp(&h, npc), 50);
    let mut want = vec![CHAT_RGB, 255, 225, 100];
    want.extend_from_slice(b"Critical damage!");
    assert_eq!(h.reliable_of(p, P_CHAT_MESSAGE), vec![want]);
}

#[test]
fn melee_needs_range_and_no_non_combatants_or_friends() {
    let mut h = harness(1, |_| {});
    let (_p, pid) = h.spawn_player("Alice", 0.0, 0.0);
    let far = h.spawn_npc(templates::HUMAN, 8.5, 0.0);
    let near = h.spawn_npc(templates::HUMAN, 7.5, 0.0);
    let st = h.sim.state_mut();
    // Reach is 7 + 0.5 + 0.5 = 8.
    assert!(!combat::actor_attack(st, pid, far));
    assert!(combat::actor_attack(st, pid, near));
    st.get_mut(near).unwrap().aggressiveness = 3;
    assert!(!combat::actor_attack(st, pid, near));
    st.get_mut(near).unwrap().aggressiveness = 0;
    st.get_mut(pid).unwrap().ratings[0] = 151;
    assert!(!combat::actor_attack(st, pid, near));
    // V1: the dead are not attacked.
    st.get_mut(pid).unwrap().ratings[0] = 100;
    st.get_mut(near).unwrap().attr[0] = 0;
    assert!(!combat::actor_attack(st, pid, near));
}

#[test]
fn attack_input_gates_are_counted_rejections() {
    let mut h = harness(1, |_| {});
    let (p, pid) = h.spawn_player("Alice", 0.0, 0.0);
    let (_q, qid) = h.spawn_player("Bob", 2.0, 0.0);
    let npc = h.spawn_npc(templates::HUMAN, 3.0, 0.0);
    let horse = h.spawn_npc(templates::HORSE, 1.0, 0.0);
    let (nrid, qrid, prid) = (h.actor(npc).rid, h.actor(qid).rid, h.actor(pid).rid);
    h.clear();
    h.act(p, PlayerAction::Attack { target: 999 });
    h.act(p, PlayerAction::Attack { target: qrid });
    h.act(p, PlayerAction::Attack { target: prid });
    h.act(p, PlayerAction::Attack { target: nrid });
    h.act(p, PlayerAction::Attack { target: nrid });
    h.tick();
    assert_eq!(
        h.rejections(),
        vec![
            Rejection::UnknownTarget,
            Rejection::NotPermitted,
            Rejection::Invalid,
            Rejection::Invalid, // combat delay
        ]
    );
    assert!(h.actor(pid).last_attack_ms.is_some());
    // Mounted: refused.
    h.run_ticks(40);
    let hrid = h.actor(horse).rid;
    h.act(p, PlayerAction::RightClick { target: hrid });
    h.tick();
    assert_eq!(h.actor(pid).mount, Some(horse));
    h.clear();
    h.act(p, PlayerAction::Attack { target: nrid });
    h.tick();
    assert_eq!(h.rejections(), vec![Rejection::Invalid]);
}

#[test]
fn pvp_area_allows_attacking_players() {
    let mut h = harness(1, |c| c.area.pvp = true);
    let (p, _) = h.spawn_player("Alice", 0.0, 0.0);
    let (q, qid) = h.spawn_player("Bob", 2.0, 0.0);
    let qrid = h.actor(qid).rid;
    h.clear();
    h.act(p, PlayerAction::Attack { target: qrid });
    h.tick();
    assert!(h.rejections().is_empty());
    assert_eq!(h.reliable_of(q, P_ATTACK_ACTOR).len(), 1);
}

#[derive(Default)]
struct Recorder {
    attacks: Mutex<Vec<(ActorId, ActorId)>>,
}

impl ScriptHooks for Recorder {
    fn on_attack(&self, _st: &mut ZoneState, a: ActorId, v: ActorId) {
        self.attacks.lock().unwrap().push((a, v));
    }
}

#[test]
fn formula_4_calls_the_attack_hook_and_nothing_else() {
    let mut c = test_content();
    c.rules.combat_formula = 4;
    let hooks = Arc::new(Recorder::default());
    let mut h = SimHarness::with(ZoneConfig::default(), c.clone());
    h.sim = ZoneSim::with_hooks(ZoneConfig::default(), Arc::new(c), hooks.clone());
    let (p, pid) = h.spawn_player("Alice", 0.0, 0.0);
    let npc = h.spawn_npc(templates::HUMAN, 3.0, 0.0);
    let nrid = h.actor(npc).rid;
    h.clear();
    h.act(p, PlayerAction::Attack { target: nrid });
    h.tick();
    assert_eq!(*hooks.attacks.lock().unwrap(), vec![(pid, npc)]);
    assert_eq!(hp(&h, npc), 100);
    assert!(h.reliable_of(p, P_ATTACK_ACTOR).is_empty());
    assert!(h.actor(pid).last_attack_ms.is_some());
}

#[test]
fn ranged_weapon_fires_the_content_projectile() {
    let mut h = harness(1, |_| {});
    let (p, pid) = h.spawn_player("Alice", 0.0, 0.0);
    let (o, _) = h.spawn_player("Obs", -20.0, 0.0);
    let npc = h.spawn_npc(templates::HUMAN, 30.0, 0.0);
    let far = h.spawn_npc(templates::HUMAN, 60.0, 0.0);
    h.actor_mut(pid).inventory[0] = slot(BOW, 100);
    let (nrid, frid) = (h.actor(npc).rid, h.actor(far).rid);
    h.clear();
    h.act(p, PlayerAction::Attack { target: nrid });
    h.tick();
    let proj = h.reliable_of(o, P_PROJECTILE);
    assert_eq!(proj.len(), 1);
    let nr = nrid.to_le_bytes();
    let mut want = vec![1, 0, nr[0], nr[1], 7, 0, 1, 0, 2, 0, 1, 9, 6];
    want.extend_from_slice(b"Sparks");
    want.extend_from_slice(b"Smoke");
    assert_eq!(proj[0], want);
    // Damage 20 + Rand(-5..5) - (0 + 100 - 100); hit chance 100.
    let lost = 100 - hp(&h, npc);
    assert!((15..=25).contains(&lost), "{lost}");
    let hits = h.reliable_of(p, P_ATTACK_ACTOR);
    let wire = u16::try_from(lost + 1).unwrap().to_le_bytes();
    assert_eq!(hits, vec![vec![b'H', nr[0], nr[1], wire[0], wire[1], 0]]);
    // Observers get "O" and the projectile, no damage.
    assert_eq!(h.reliable_of(o, P_ATTACK_ACTOR).len(), 1);
    // The NPC (passive) is not provoked; a defensive one chases the shooter.
    h.actor_mut(far).aggressiveness = 1;
    h.actor_mut(far).x = 40.0;
    h.actor_mut(far).dest_x = 40.0;
    h.run_ticks(31);
    h.clear();
    h.act(p, PlayerAction::Attack { target: frid });
    h.tick();
    assert_eq!(h.actor(far).ai_target, Some(pid));
    // Out of range (50 + radii): nothing.
    h.actor_mut(far).x = 60.0;
    h.actor_mut(far).dest_x = 60.0;
    h.actor_mut(far).ai_target = None;
    h.actor_mut(far).ai_mode = zone_node::sim::state::AiMode::Wait;
    h.run_ticks(31);
    h.clear();
    h.act(p, PlayerAction::Attack { target: frid });
    h.tick();
    assert!(h.reliable_of(o, P_PROJECTILE).is_empty());
    // A broken bow refuses with a red line.
    h.actor_mut(pid).inventory[0] = slot(BOW, 0);
    h.run_ticks(31);
    h.clear();
    h.act(p, PlayerAction::Attack { target: nrid });
    h.tick();
    let chat = h.reliable_of(p, P_CHAT_MESSAGE);
    assert_eq!(chat.len(), 1);
    assert_eq!(chat[0][0], CHAT_RED);
}

#[test]
fn wear_hits_the_weapon_and_the_victims_armour_not_the_attackers() {
    let mut h = harness(1, |c| {
        c.rules.weapon_damage = true;
        c.rules.armour_damage = true;
    });
    let (p, pid) = h.spawn_player("Alice", 0.0, 0.0);
    let npc = h.spawn_npc(templates::HUMAN, 3.0, 0.0);
    set_hp(&mut h, npc, 30000, 30000);
    h.actor_mut(pid).inventory[0] = slot(SWORD, 100);
    h.actor_mut(pid).inventory[3] = slot(CHEST, 100);
    h.actor_mut(npc).inventory[3] = slot(CHEST, 100);
    h.clear();
    for _ in 0..100 {
        let st = h.sim.state_mut();
        st.get_mut(pid).unwrap().last_attack_ms = None;
        assert!(combat::actor_attack(st, pid, npc));
    }
    h.tick();
    let weapon = h.actor(pid).inventory[0].as_ref().unwrap().health;
    let own_armour = h.actor(pid).inventory[3].as_ref().unwrap().health;
    let victim_armour = h.actor(npc).inventory[3].as_ref().unwrap().health;
    assert!(weapon < 100 && weapon > 60, "{weapon}");
    assert!(victim_armour < 100 && victim_armour > 60, "{victim_armour}");
    assert_eq!(own_armour, 100);
    let ih = h.reliable_of(p, P_ITEM_HEALTH);
    assert_eq!(ih.len(), usize::from(100 - weapon));
    assert_eq!(ih.last().unwrap(), &vec![0, weapon, 0]);
}

#[test]
fn a_kill_gives_xp_adjusts_the_rating_and_frees_the_npc() {
    let mut h = harness(1, |c| c.rules.combat_rating_adjust = 5);
    let (p, pid) = h.spawn_player("Alice", 0.0, 0.0);
    let (o, _) = h.spawn_player("Obs", 20.0, 0.0);
    let npc = h.spawn_npc(templates::HUMAN, 3.0, 0.0);
    h.actor_mut(npc).level = 3;
    set_hp(&mut h, npc, 1, 100);
    let nrid = h.actor(npc).rid;
    h.clear();
    for _ in 0..20 {
        if h.sim.state().get(npc).is_none() {
            break;
        }
        h.act(p, PlayerAction::Attack { target: nrid });
        h.run_ticks(31);
    }
    assert!(h.sim.state().get(npc).is_none(), "freed");
    assert!(h.sim.state().by_rid(nrid).is_none(), "RID returned");
    let nr = nrid.to_le_bytes();
    assert_eq!(
        h.reliable_of(o, P_ACTOR_DEAD),
        vec![vec![nr[0], nr[1], 1, 0]]
    );
    // XP = max(1, 3 - 1) × 10 + Rand(0..20).
    let xp = h.actor(pid).xp;
    assert!((20..=40).contains(&xp), "{xp}");
    let b = xp.to_le_bytes();
    assert_eq!(
        h.reliable_of(p, P_XP_UPDATE),
        vec![vec![b'M', b[0], b[1], b[2], b[3]]]
    );
    assert_eq!(h.actor(pid).ratings[0], 95);
}

#[test]
fn the_rating_adjust_floors_at_zero() {
    let mut h = harness(1, |c| c.rules.combat_rating_adjust = 200);
    let (_p, pid) = h.spawn_player("Alice", 0.0, 0.0);
    let npc = h.spawn_npc(templates::HUMAN, 3.0, 0.0);
    zone_node::sim::kill::kill_actor(h.sim.state_mut(), npc, Some(pid));
    assert_eq!(h.actor(pid).ratings[0], 0);
    assert!(h.sim.state().get(npc).is_none());
}
