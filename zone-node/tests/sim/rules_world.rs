//! Rules scenarios: spawn points (SpawnMax, frequency, counters), portals (35 s lock, local
//! warp, transfer to another area), triggers (edge detection) and weather.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::float_cmp)]

use std::sync::{Arc, Mutex};

use zone_node::sim::area::{Portal, SpawnPoint, Trigger};
use zone_node::sim::engine::NpcDeath;
use zone_node::sim::events::{Arrival, PlayerAction, Rejection, ZoneOutput};
use zone_node::sim::packets::*;
use zone_node::sim::scripts::ScriptHooks;
use zone_node::sim::state::AiMode;
use zone_node::sim::testing::{SimHarness, templates, test_content};
use zone_node::sim::{ActorId, ZoneConfig, ZoneSim, ZoneState, kill};

#[derive(Default)]
struct Recorder {
    spawns: Mutex<Vec<(ActorId, u16)>>,
    triggers: Mutex<Vec<(ActorId, u16)>>,
    deaths: Mutex<Vec<ActorId>>,
    life: Mutex<Vec<&'static str>>,
}

impl ScriptHooks for Recorder {
    fn on_spawn(&self, _st: &mut ZoneState, npc: ActorId, sp: u16) {
        self.spawns.lock().unwrap().push((npc, sp));
    }
    fn on_trigger(&self, _st: &mut ZoneState, actor: ActorId, t: u16) {
        self.triggers.lock().unwrap().push((actor, t));
    }
    fn on_npc_death(&self, _st: &mut ZoneState, death: &NpcDeath) {
        self.deaths.lock().unwrap().push(death.victim);
    }
    fn on_login(&self, _st: &mut ZoneState, _a: ActorId) {
        self.life.lock().unwrap().push("login");
    }
    fn on_logout(&self, _st: &mut ZoneState, _a: ActorId) {
        self.life.lock().unwrap().push("logout");
    }
    fn on_area_entry(&self, _st: &mut ZoneState, _a: ActorId) {
        self.life.lock().unwrap().push("entry");
    }
    fn on_area_exit(&self, _st: &mut ZoneState, _a: ActorId) {
        self.life.lock().unwrap().push("exit");
    }
}

fn with_hooks(c: zone_node::sim::ZoneContent, hooks: Arc<Recorder>) -> SimHarness {
    let mut h = SimHarness::with(ZoneConfig::default(), c.clone());
    h.sim = ZoneSim::with_hooks(ZoneConfig::default(), Arc::new(c), hooks);
    h
}

fn npcs(h: &SimHarness) -> Vec<ActorId> {
    let st = h.sim.state();
    st.chain_members(st.zone, zone_node::sim::state::ChainKind::Zone)
        .into_iter()
        .filter_map(|i| st.at(i))
        .filter(|a| !a.is_player())
        .map(|a| a.id)
        .collect()
}

#[test]
fn spawn_points_respect_frequency_and_max_and_count_deaths() {
    let mut c = test_content();
    c.area.spawns = vec![
        SpawnPoint {
            template: templates::HUMAN,
            waypoint: 0,
            size: 4.0,
            actor_script: "Talk".into(),
            death_script: "Drop".into(),
            max: 2,
            frequency_s: 2,
            ..SpawnPoint::default()
        },
        SpawnPoint {
            template: 999,
            waypoint: 0,
            max: 5,
            frequency_s: 1,
            ..SpawnPoint::default()
        },
    ];
    let hooks = Arc::new(Recorder::default());
    let mut h = with_hooks(c, hooks.clone());
    let t0 = h.now;
    // Nothing for the first 2 s of the instance.
    while h.now <= t0 + 2000 {
        h.tick();
        assert!(npcs(&h).is_empty());
    }
    h.tick();
    let first = npcs(&h);
    assert_eq!(first.len(), 1);
    let a = h.actor(first[0]);
    let w = h.sim.state().content.area.waypoints[0].clone();
    assert!((a.x - w.x).abs() <= 2.0 && (a.z - w.z).abs() <= 2.0);
    assert_eq!(a.ai_mode, AiMode::Patrol);
    assert_eq!(a.source_spawn, Some(0));
    assert_eq!(
        (a.script.as_str(), a.death_script.as_str()),
        ("Talk", "Drop")
    );
    assert_eq!(*hooks.spawns.lock().unwrap(), vec![(first[0], 0)]);
    assert_eq!(h.sim.state().spawned, vec![1, 0]);
    // One per frequency, never above SpawnMax.
    h.run_ticks(50);
    assert_eq!(npcs(&h).len(), 1);
    h.run_ticks(20);
    assert_eq!(npcs(&h).len(), 2);
    h.run_ticks(300);
    assert_eq!(npcs(&h).len(), 2);
    assert_eq!(h.sim.state().spawned, vec![2, 0]);
    // A death frees the slot; the next spawn comes a whole frequency later.
    let victim = npcs(&h)[0];
    kill::kill_actor(h.sim.state_mut(), victim, None);
    // Announced, not yet reacted to: the zone reacts after the phase.
    assert!(hooks.deaths.lock().unwrap().is_empty());
    h.sim.state_mut().react();
    assert_eq!(*hooks.deaths.lock().unwrap(), vec![victim]);
    assert_eq!(h.sim.state().spawned, vec![1, 0]);
    h.run_ticks(55);
    assert_eq!(npcs(&h).len(), 1);
    h.run_ticks(15);
    assert_eq!(npcs(&h).len(), 2);
}

fn loop_portals() -> zone_node::sim::ZoneContent {
    let mut c = test_content();
    c.area.portals.push(Portal {
        name: "LoopA".into(),
        link_area: "testland".into(),
        link_name: "loopb".into(),
        x: 200.0,
        z: 200.0,
        size: 3.0,
        ..Portal::default()
    });
    c.area.portals.push(Portal {
        name: "LoopB".into(),
        link_area: "Testland".into(),
        link_name: "LoopA".into(),
        x: 250.0,
        z: 200.0,
        size: 3.0,
        ..Portal::default()
    });
    c
}

#[test]
fn a_portal_warps_locally_and_the_arrival_portal_is_locked_35_s() {
    let mut h = SimHarness::with(ZoneConfig::default(), loop_portals());
    let (p, id) = h.spawn_player("Alice", 100.0, 100.0);
    h.actor_mut(id).x = 200.0;
    h.actor_mut(id).z = 200.0;
    h.tick();
    // LoopA took Alice to LoopB, which is locked.
    assert_eq!((h.actor(id).x, h.actor(id).z), (250.0, 200.0));
    assert_eq!(h.actor(id).last_portal, Some(3));
    let t = h.now;
    while h.now < t + 34_900 {
        h.tick();
        assert_eq!(h.actor(id).x, 250.0);
    }
    h.run_ticks(10);
    assert_eq!(h.actor(id).x, 200.0, "lock expired: back through LoopB");
    assert!(!h.reliable_of(p, P_CHANGE_AREA).is_empty());
}

#[test]
fn logging_in_inside_a_portal_does_not_bounce_through_it() {
    let mut h = SimHarness::with(ZoneConfig::default(), loop_portals());
    // Saved standing in LoopA (logged out right after arriving there).
    let (_, id) = h.spawn_player("Alice", 200.0, 200.0);
    h.run_ticks(30);
    assert_eq!((h.actor(id).x, h.actor(id).z), (200.0, 200.0));
    assert_eq!(h.actor(id).last_portal, Some(2), "locked as on arrival");
}

#[test]
fn a_portal_into_another_area_is_a_transfer_to_instance_0() {
    let mut h = SimHarness::new();
    let (p, id) = h.spawn_player("Alice", 0.0, 0.0);
    h.clear();
    h.actor_mut(id).x = 500.5;
    h.actor_mut(id).z = 500.0;
    h.tick();
    let t = h
        .outputs
        .iter()
        .find_map(|o| match o {
            ZoneOutput::TransferOut(t) => Some((**t).clone()),
            _ => None,
        })
        .expect("transfer out");
    assert_eq!(t.area, "Elsewhere");
    assert_eq!(t.instance, 0);
    assert_eq!(t.arrival, Arrival::Portal(0), "the portal named Arrival");
    assert_eq!(t.player, Some(p));
    assert!(h.actor(id).frozen());
}

#[test]
fn triggers_fire_once_per_entry() {
    let mut c = test_content();
    c.area.triggers = vec![
        Trigger::default(),
        Trigger {
            x: 400.0,
            z: 400.0,
            size: 5.0,
            script: "Trap".into(),
            method: "Main".into(),
            ..Trigger::default()
        },
    ];
    let hooks = Arc::new(Recorder::default());
    let mut h = with_hooks(c, hooks.clone());
    let (_p, id) = h.spawn_player("Alice", 380.0, 400.0);
    let put = |h: &mut SimHarness, x: f32| {
        h.actor_mut(id).x = x;
        h.actor_mut(id).dest_x = x;
        h.run_ticks(5);
    };
    put(&mut h, 398.0);
    assert_eq!(*hooks.triggers.lock().unwrap(), vec![(id, 1)]);
    put(&mut h, 401.0);
    assert_eq!(hooks.triggers.lock().unwrap().len(), 1, "still inside");
    put(&mut h, 410.0);
    put(&mut h, 400.0);
    assert_eq!(*hooks.triggers.lock().unwrap(), vec![(id, 1), (id, 1)]);
}

#[test]
fn weather_rolls_from_the_cumulative_chances_and_lasts_in_milliseconds() {
    let mut c = test_content();
    c.area.weather_chance = [0, 0, 0, 0, 100];
    let mut h = SimHarness::with(ZoneConfig::default(), c);
    h.step = 1000;
    let (p, _) = h.spawn_player("Alice", 0.0, 0.0);
    assert_eq!(h.sim.state().weather, 5, "wind");
    assert_eq!(
        h.reliable_of(p, P_WEATHER_CHANGE),
        vec![vec![0, 0, 0, 0, 5]]
    );
    h.clear();
    // At least 250 s, at most 1000 s.
    h.run_ticks(245);
    assert!(h.reliable_of(p, P_WEATHER_CHANGE).is_empty());
    h.run_ticks(760);
    assert_eq!(h.reliable_of(p, P_WEATHER_CHANGE).len(), 1);
}

#[test]
fn dm_weather_command_sets_and_broadcasts() {
    let mut h = SimHarness::new();
    let (dm, _) = h.spawn_dm("Gm", 0.0, 0.0);
    let (p, _) = h.spawn_player("Alice", 5.0, 0.0);
    h.clear();
    let cmd = |w: &str| PlayerAction::Command {
        word: "WEATHER".into(),
        params: w.into(),
    };
    h.act(dm, cmd("Snow"));
    h.act(p, cmd("rain"));
    h.act(dm, cmd("hail"));
    h.tick();
    h.deliver();
    assert_eq!(h.sim.state().weather, 2);
    assert_eq!(
        h.reliable_of(p, P_WEATHER_CHANGE),
        vec![vec![0, 0, 0, 0, 2]]
    );
    assert_eq!(
        h.rejections(),
        vec![Rejection::NotPermitted, Rejection::Invalid]
    );
}

#[test]
fn login_logout_entry_and_exit_hooks_run() {
    let hooks = Arc::new(Recorder::default());
    let mut h = with_hooks(test_content(), hooks.clone());
    let (p, id) = h.spawn_player("Alice", 0.0, 0.0);
    let (q, _) = h.spawn_player("Bob", 5.0, 0.0);
    h.push(zone_node::sim::ZoneInput::PlayerLeft { player: q });
    h.tick();
    h.actor_mut(id).x = 500.0;
    h.actor_mut(id).z = 500.0;
    h.tick();
    assert!(h.actor(id).frozen());
    let _ = p;
    assert_eq!(
        *hooks.life.lock().unwrap(),
        vec!["login", "entry", "login", "entry", "logout", "exit"]
    );
}
