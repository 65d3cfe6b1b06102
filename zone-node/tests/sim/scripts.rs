//! Script scenarios through `ZoneSim`: the sample project's own `.rsl` scripts (read from
//! `../shared/rc-sample-data/Scripts` when it is there) and small scripts of our own, run by
//! the zone's scripts phase — entry points, waits, natives, budgets and errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::float_cmp)]

use std::path::PathBuf;

use zone_node::sim::ZoneConfig;
use zone_node::sim::area::{SpawnPoint, Trigger};
use zone_node::sim::events::{PlayerAction, ScriptErrorKind, ZoneInput, ZoneOutput};
use zone_node::sim::kill::kill_actor;
use zone_node::sim::packets::*;
use zone_node::sim::testing::{SimHarness, attrs, content_with_scripts, templates, test_content};

fn sample(name: &str) -> Option<Vec<u8>> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/rc-sample-data/Scripts")
        .join(name);
    match std::fs::read(&p) {
        Ok(b) => Some(b),
        Err(_) => {
            eprintln!("skipped: {} is not there", p.display());
            None
        }
    }
}

fn cmd(word: &str, params: &str) -> PlayerAction {
    PlayerAction::Command {
        word: word.into(),
        params: params.into(),
    }
}

/// Realm Crafter's default Death.rsl: the message, a death animation to the zone, a 5 s
/// wait, Health 50 and a warp to the area's "Begin" portal.
#[test]
fn death_rsl_animates_waits_heals_and_warps_to_begin() {
    let Some(death) = sample("Death.rsl") else {
        return;
    };
    let mut h = SimHarness::with_scripts(&[("Death", &death)]);
    let (p, pid) = h.spawn_player("Ann", 200.0, 200.0);
    let (w, _) = h.spawn_player("Watcher", 210.0, 200.0);
    h.clear();
    kill_actor(h.sim.state_mut(), pid, None);
    let died = h.now;
    h.tick();
    h.deliver();
    assert!(h.actor(pid).dead);
    assert_eq!(h.chat(p), ["You have died..."]);
    let anim = h.reliable_of(w, 30);
    assert_eq!(anim.len(), 1, "the death animation reaches the zone");
    let rid = h.actor(pid).rid;
    assert_eq!(u16::from_le_bytes([anim[0][0], anim[0][1]]), rid);
    assert!(String::from_utf8_lossy(&anim[0][7..]).starts_with("Death "));
    // Still lying there after 4.9 s.
    while h.now < died + 4900 {
        h.tick();
    }
    assert!(h.actor(pid).dead);
    assert_eq!(h.actor(pid).x, 200.0);
    h.run_ticks(10);
    let a = h.actor(pid);
    assert!(!a.dead);
    assert_eq!(a.attr[usize::from(attrs::HEALTH)], 50);
    assert_eq!((a.x, a.z), (10.0, 10.0), "at the Begin portal");
    assert!(h.script_errors().is_empty(), "{:?}", h.script_errors());
    assert!(h.sim.state().scripts.is_empty(), "the script ended");
}

/// Realm Crafter's default LevelUp.rsl: a level when XP > Level × 1000, XP back to 0, the
/// new level to the player and the message.
#[test]
fn levelup_rsl_levels_up_on_enough_xp() {
    let Some(lvl) = sample("LevelUp.rsl") else {
        return;
    };
    let mut h = SimHarness::with_scripts(&[("LevelUp", &lvl)]);
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    h.clear();
    zone_node::sim::kill::give_xp(h.sim.state_mut(), pid, 500, true);
    h.tick();
    assert_eq!(h.actor(pid).level, 1);
    zone_node::sim::kill::give_xp(h.sim.state_mut(), pid, 600, true);
    h.tick();
    let a = h.actor(pid);
    assert_eq!((a.level, a.xp), (2, 0));
    assert_eq!(h.chat(p), ["You advanced to level 2!"]);
    let xp = h.reliable_of(p, P_XP_UPDATE);
    assert!(xp.iter().any(|b| b == &[b'U', 2, 0]), "{xp:?}");
}

/// An unknown `/command` runs `In-game Commands.<COMMAND>` with `Parameter(n)`.
#[test]
fn an_in_game_command_runs_with_its_parameters() {
    let src: &[u8] = b"Function Greet()\r\n\tWho$ = Parameter(1)\r\n\tN% = Parameter(2)\r\n\tFor i = 1 To N : Output(Actor(), \"Hi \" + Who$ + i) : Next\r\n\tOutput(Actor(), \"[\" + Parameter(3) + \"]\")\r\nEnd Function\r\n";
    let mut h = SimHarness::with_scripts(&[("In-game Commands", src)]);
    let (p, _) = h.spawn_player("Ann", 0.0, 0.0);
    h.clear();
    h.act(p, cmd("GREET", "Bob, 3"));
    h.tick();
    assert_eq!(h.chat(p), ["Hi Bob1", "Hi Bob2", "Hi Bob3", "[]"]);
    h.clear();
    h.act(p, cmd("NOSUCH", ""));
    h.tick();
    assert_eq!(h.chat(p), ["Command NOSUCH is not known"]);
}

/// The sample In-game Commands.rsl: `/wave` animates, `/heal` only works for a GM, and
/// `/itempack` runs (`sim/items_bag.rs` runs it with the sample items).
#[test]
fn the_sample_in_game_commands_run() {
    let (Some(cmds), Some(pg)) = (sample("In-game Commands.rsl"), sample("ProcessGlobals.rsl"))
    else {
        return;
    };
    let mut h = SimHarness::with_scripts(&[("In-game Commands", &cmds), ("ProcessGlobals", &pg)]);
    let (p, pid) = h.spawn_dm("Gm", 0.0, 0.0);
    let (w, _) = h.spawn_player("Watcher", 5.0, 0.0);
    h.actor_mut(pid).attr[usize::from(attrs::HEALTH)] = 10;
    h.clear();
    h.act(p, cmd("WAVE", ""));
    h.act(p, cmd("HEAL", ""));
    h.act(p, cmd("ITEMPACK", ""));
    h.tick();
    h.deliver();
    assert_eq!(h.reliable_of(w, 30).len(), 1, "/wave animates");
    assert_eq!(
        h.actor(pid).attr[usize::from(attrs::HEALTH)],
        h.actor(pid).attr_max[usize::from(attrs::HEALTH)]
    );
    // The harness world has no items: `GiveItem` logs the unknown names, no error.
    let errs = h.script_errors();
    assert!(errs.is_empty(), "{errs:?}");
}

/// A trigger runs `<script>.<method>` once on entry, with the trigger index as `Param`.
#[test]
fn a_trigger_runs_its_script_once_on_entry() {
    let src: &[u8] =
        b"Function Enter()\n  Output(Actor(), \"trigger \" + Parameter(1))\nEnd Function\n";
    let mut content = content_with_scripts(test_content(), &[("Traps", src)]);
    content.area.triggers = vec![
        Trigger::default(),
        Trigger {
            x: 50.0,
            y: 0.0,
            z: 50.0,
            size: 5.0,
            script: "Traps".into(),
            method: "Enter".into(),
        },
    ];
    let mut h = SimHarness::with(ZoneConfig::default(), content);
    let (p, _) = h.spawn_player("Ann", 0.0, 0.0);
    h.clear();
    h.update(p, 50.0, 50.0, 50.0, 50.0, false, false);
    h.run_ticks(10);
    assert_eq!(h.chat(p), ["trigger 1"]);
}

/// A spawn point's spawn script runs for the spawned NPC (the sample Spawn_Test.rsl names
/// and tags it), and the NPC gets the spawn point's right-click and death scripts.
#[test]
fn a_spawn_script_runs_for_the_spawned_npc() {
    let Some(spawn) = sample("Spawn_Test.rsl") else {
        return;
    };
    let mut content = content_with_scripts(test_content(), &[("Spawn_Test", &spawn)]);
    content.area.spawns = vec![SpawnPoint {
        template: templates::WOLF,
        waypoint: 0,
        size: 0.0,
        spawn_script: "Spawn_Test".into(),
        actor_script: "Click".into(),
        death_script: "Gone".into(),
        max: 1,
        frequency_s: 1,
        range: 0.0,
    }];
    let mut h = SimHarness::with(ZoneConfig::default(), content);
    let (p, _) = h.spawn_player("Ann", 300.0, 300.0);
    h.clear();
    h.run_ticks(60);
    h.deliver();
    let st = h.sim.state();
    let npc = st
        .chain_members(st.zone, zone_node::sim::state::ChainKind::Zone)
        .into_iter()
        .filter_map(|i| st.at(i))
        .find(|a| !a.is_player())
        .expect("spawned");
    assert_eq!(
        (npc.name.as_str(), npc.tag.as_str()),
        ("Test Human", "Tag Test")
    );
    assert_eq!(
        (npc.script.as_str(), npc.death_script.as_str()),
        ("Click", "Gone")
    );
    let names = h.reliable_of(p, P_NAME_CHANGE);
    assert_eq!(names.len(), 2, "SetName and SetTag reach the zone");
}

/// A right-click on an NPC with a script runs it with the clicker and the NPC, once at a
/// time; `WaitSpeak` resumes on the next click.
#[test]
fn a_right_click_runs_the_targets_script_and_wait_speak_resumes() {
    let src: &[u8] = b"Function Main()\n  Output(Actor(), \"hello \" + Name(ContextActor()))\n  WaitSpeak(Actor(), ContextActor())\n  Output(Actor(), \"again\")\nEnd Function\n";
    let mut h = SimHarness::with_scripts(&[("Talk", src)]);
    let (p, _) = h.spawn_player("Ann", 0.0, 0.0);
    let npc = h.spawn_npc(templates::HORSE, 3.0, 0.0);
    h.actor_mut(npc).script = "Talk".into();
    h.actor_mut(npc).name = "Bess".into();
    let rid = h.actor(npc).rid;
    h.clear();
    h.act(p, PlayerAction::RightClick { target: rid });
    h.run_ticks(3);
    assert_eq!(h.chat(p), ["hello Bess"]);
    assert_eq!(h.sim.state().scripts.len(), 1, "waiting in WaitSpeak");
    h.clear();
    h.act(p, PlayerAction::RightClick { target: rid });
    h.run_ticks(3);
    assert_eq!(
        h.chat(p),
        ["again"],
        "the click resumed the wait, no second instance"
    );
    assert!(h.sim.state().scripts.is_empty());
    assert!(
        h.actor(npc).rider.is_none(),
        "a scripted NPC is not mounted"
    );
}

/// A loop that never yields is paused at its budget every tick, the zone plays on, and it
/// is ended after its overruns; another script keeps running meanwhile.
#[test]
fn a_runaway_loop_is_paused_then_ended_and_the_zone_plays_on() {
    let spin: &[u8] = b"Function Main()\n  Repeat\n    i = i + 1\n  Forever\nEnd Function\n";
    let tick: &[u8] = b"Function Main()\n  For n = 1 To 3\n    DoEvents(100)\n    Output(Actor(), \"tick \" + n)\n  Next\nEnd Function\n";
    let cfg = ZoneConfig {
        script_max_overruns: 20,
        ..ZoneConfig::default()
    };
    let mut h = SimHarness::with(
        cfg,
        content_with_scripts(test_content(), &[("Spin", spin), ("Tick", tick)]),
    );
    let (p, _) = h.spawn_dm("Ann", 0.0, 0.0);
    h.clear();
    h.act(p, cmd("SCRIPT", "Spin,Main"));
    h.act(p, cmd("SCRIPT", "Tick,Main"));
    h.run_ticks(15);
    assert_eq!(h.chat(p), ["tick 1", "tick 2", "tick 3"]);
    assert_eq!(
        h.sim.state().scripts.len(),
        1,
        "the spinner is still paused, not ended"
    );
    h.run_ticks(10);
    let errs: Vec<_> = h
        .outputs
        .iter()
        .filter_map(|o| match o {
            ZoneOutput::ScriptError {
                kind, script, line, ..
            } => Some((*kind, script.clone(), *line)),
            _ => None,
        })
        .collect();
    assert_eq!(
        errs,
        [(ScriptErrorKind::Runaway, "Spin".to_owned(), 3)],
        "the line of the loop body"
    );
    assert!(h.sim.state().scripts.is_empty());
    assert_eq!(h.sim.state().scripts.stats.runaway, 1);
}

/// A runtime error ends that script with its file and line; the zone and other scripts go on.
#[test]
fn a_runtime_error_ends_the_script_not_the_zone() {
    let bad: &[u8] = b"Function Main()\n  Output(Actor(), \"before\")\n  x = 1 / Int(Parameter(1))\n  Output(Actor(), \"never\")\nEnd Function\n";
    let mut h = SimHarness::with_scripts(&[("Bad", bad)]);
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    h.clear();
    let handle = h.sim.state().handle_of(pid);
    let st = h.sim.state_mut();
    zone_node::sim::script_table::queue(st, "Bad", "Main", handle, 0, script::RStr::from("0"));
    h.tick();
    assert_eq!(h.chat(p), ["before"]);
    assert_eq!(
        h.script_errors(),
        [("Division by zero".to_owned(), "Bad.rsl".to_owned(), 3)]
    );
    h.run_ticks(3);
    assert!(h.sim.state().scripts.is_empty());
    assert_eq!(h.sim.state().scripts.stats.errors, 1);
}

/// `WaitKill` counts kills of the template by exactly that player; a `Persistent(1)` script
/// survives logout in the player's snapshot and resumes at the next login.
#[test]
fn wait_kill_counts_and_a_persistent_quest_survives_a_relogin() {
    let quest: &[u8] = b"Function Main()\n  Persistent(1)\n  Output(Actor(), \"go\")\n  WaitKill(Actor(), 2, 2)\n  Output(Actor(), \"done\")\nEnd Function\n";
    let mut h = SimHarness::with_scripts(&[("Quest", quest)]);
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    let (q, qid) = h.spawn_player("Bob", 5.0, 0.0);
    let handle = h.sim.state().handle_of(pid);
    zone_node::sim::script_table::queue(
        h.sim.state_mut(),
        "Quest",
        "Main",
        handle,
        0,
        script::RStr::EMPTY,
    );
    h.tick();
    let wolf = h.spawn_npc(templates::WOLF, 50.0, 50.0);
    kill_actor(h.sim.state_mut(), wolf, Some(pid));
    // Somebody else's kill does not count.
    let wolf = h.spawn_npc(templates::WOLF, 50.0, 50.0);
    kill_actor(h.sim.state_mut(), wolf, Some(qid));
    h.tick();
    assert_eq!(h.chat(p), ["go"]);
    let _ = q;
    // Log out: the persistent quest goes into the snapshot.
    h.clear();
    h.push(ZoneInput::PlayerLeft { player: p });
    h.tick();
    let saved = h
        .outputs
        .iter()
        .find_map(|o| match o {
            ZoneOutput::Persist(s) if s.player == p => Some(s.state.clone()),
            _ => None,
        })
        .expect("logout snapshot");
    assert!(
        !saved.scripts.is_empty(),
        "the quest is saved with the character"
    );
    assert!(h.sim.state().scripts.is_empty());
    // Log back in (a new session): the quest waits for its second kill.
    let (p2, pid2) = h.join(saved, false);
    h.clear();
    assert_eq!(
        h.sim.state().handle_of(pid2),
        handle,
        "the same character, the same handle"
    );
    let wolf = h.spawn_npc(templates::WOLF, 50.0, 50.0);
    kill_actor(h.sim.state_mut(), wolf, Some(pid2));
    h.tick();
    assert_eq!(h.chat(p2), ["done"]);
    assert!(h.sim.state().scripts.is_empty());
}

/// Scripts write and read script files and super globals through the store; a semaphore
/// file works as in the sample Login.rsl.
#[test]
fn files_and_super_globals_go_through_the_script_store() {
    let src: &[u8] = b"Function Main()\n  FH = WriteFile(\"Scores\\\\League1.DATA\")\n  WriteLine(FH, \"10,Ann\")\n  WriteLine(FH, \"7,Bob\")\n  CloseFile(FH)\n  Output(Actor(), FileType(\"scores\\\\league1.data\") + \" \" + FileSize(\"Scores/League1.data\") + \" \" + FileType(\"Scores\"))\n  FH = ReadFile(\"Scores/League1.DATA\")\n  While Not Eof(FH)\n    Output(Actor(), ReadLine(FH))\n  Wend\n  CloseFile(FH)\n  SetSuperGlobal(3, \"seen\")\n  Output(Actor(), SuperGlobal(3) + SuperGlobal(200))\n  Output(Actor(), ReadFile(\"..\\\\..\\\\secret.txt\"))\nEnd Function\n";
    let mut h = SimHarness::with_scripts(&[("Files", src)]);
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    h.clear();
    let handle = h.sim.state().handle_of(pid);
    zone_node::sim::script_table::queue(
        h.sim.state_mut(),
        "Files",
        "Main",
        handle,
        0,
        script::RStr::EMPTY,
    );
    h.run_ticks(20);
    assert_eq!(h.chat(p), ["1 15 2", "10,Ann", "7,Bob", "seen", "0"]);
    assert_eq!(
        h.store.file("scores/league1.data"),
        Some(&b"10,Ann\r\n7,Bob\r\n"[..])
    );
    assert!(h.script_errors().is_empty(), "{:?}", h.script_errors());
}

/// Two zones fed the same inputs with scripts that use `Rand` and `MilliSecs` produce the
/// same outputs, byte for byte.
#[test]
fn scripts_are_deterministic() {
    let src: &[u8] = b"Function Main()\n  For i = 1 To 5\n    Output(Actor(), Rand(1, 1000) + \" \" + MilliSecs() + \" \" + Rnd(0, 1))\n    DoEvents(Rand(10, 200))\n  Next\nEnd Function\n";
    let run = || {
        let mut h = SimHarness::with_scripts(&[("R", src)]);
        let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
        let handle = h.sim.state().handle_of(pid);
        zone_node::sim::script_table::queue(
            h.sim.state_mut(),
            "R",
            "Main",
            handle,
            0,
            script::RStr::EMPTY,
        );
        h.run_ticks(60);
        h.chat(p)
    };
    let a = run();
    assert_eq!(a.len(), 5);
    assert_eq!(a, run());
}

/// Queue `script.func` for `actor` (its `Actor()`) and run a tick.
fn start(h: &mut SimHarness, script: &str, func: &str, actor: zone_node::sim::ActorId) {
    queue_start(h, script, func, actor);
    h.tick();
}

/// Queue a start of `script`'s `func` with `actor` as `Actor()` (it runs at the next tick).
fn queue_start(h: &mut SimHarness, script: &str, func: &str, actor: zone_node::sim::ActorId) {
    let handle = h.sim.state().handle_of(actor);
    zone_node::sim::script_table::queue(
        h.sim.state_mut(),
        script,
        func,
        handle,
        0,
        script::RStr::EMPTY,
    );
}

/// The script store requests the zone has sent so far.
fn store_ops(h: &SimHarness) -> Vec<shared::internal::ScriptStoreOp> {
    h.outputs
        .iter()
        .filter_map(|o| match o {
            ZoneOutput::ScriptStore { op, .. } => Some(op.clone()),
            _ => None,
        })
        .collect()
}

fn compiled(name: &str, src: &[u8]) -> std::sync::Arc<script::bytecode::ScriptSet> {
    let c = script::compile::compile(&[script::compile::SourceFile::new(name, src.to_vec())]);
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
    std::sync::Arc::new(c.set)
}

/// `RefreshScripts`: after a reload new runs use the new code, while a script suspended
/// in a `WaitKill` finishes on the code it started with, also one that was saved with its
/// player (a logout, as a handoff carries it) before the reload and comes back after it.
#[test]
fn a_reload_runs_new_scripts_on_new_code_and_lets_running_ones_finish_on_theirs() {
    let v1: &[u8] = b"Function Main()\n  Persistent(1)\n  Output(Actor(), \"v1 go\")\n  WaitKill(Actor(), 2, 1)\n  Output(Actor(), \"v1 done\")\nEnd Function\n";
    let v2: &[u8] = b"Function Main()\n  Persistent(1)\n  Output(Actor(), \"v2 go\")\n  WaitKill(Actor(), 2, 1)\n  Output(Actor(), \"v2 done \" + Upper(\"new\"))\nEnd Function\n";
    let mut h = SimHarness::with_scripts(&[("Quest", v1)]);
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    let (b, bid) = h.spawn_player("Bob", 5.0, 0.0);
    start(&mut h, "Quest", "Main", pid);
    start(&mut h, "Quest", "Main", bid);
    assert_eq!(
        (h.chat(p), h.chat(b)),
        (vec!["v1 go".into()], vec!["v1 go".into()])
    );
    // Bob logs out with his v1 quest waiting.
    h.push(ZoneInput::PlayerLeft { player: b });
    h.tick();
    let saved = h
        .outputs
        .iter()
        .find_map(|o| match o {
            ZoneOutput::Persist(s) if s.player == b => Some(s.state.clone()),
            _ => None,
        })
        .expect("logout snapshot");
    h.clear();
    // The reload.
    h.push(ZoneInput::Scripts {
        current: compiled("Quest", v2),
        retained: Vec::new(),
    });
    h.tick();
    // Ann's running v1 quest ends on v1.
    let wolf = h.spawn_npc(templates::WOLF, 50.0, 50.0);
    kill_actor(h.sim.state_mut(), wolf, Some(pid));
    h.tick();
    assert_eq!(h.chat(p), ["v1 done"]);
    // A new run is v2.
    h.clear();
    start(&mut h, "Quest", "Main", pid);
    let wolf = h.spawn_npc(templates::WOLF, 50.0, 50.0);
    kill_actor(h.sim.state_mut(), wolf, Some(pid));
    h.tick();
    assert_eq!(h.chat(p), ["v2 go", "v2 done NEW"]);
    // Bob comes back after the reload: his saved v1 quest resumes on v1.
    let (b2, bid2) = h.join(saved, false);
    h.clear();
    let wolf = h.spawn_npc(templates::WOLF, 50.0, 50.0);
    kill_actor(h.sim.state_mut(), wolf, Some(bid2));
    h.tick();
    assert_eq!(h.chat(b2), ["v1 done"]);
    assert!(h.script_errors().is_empty(), "{:?}", h.script_errors());
    assert!(h.sim.state().scripts.is_empty());
}

/// `SetEnv`/`GetEnv`: the cluster's environment. A zone's `SetEnv` is seen at once and
/// announced (the gateway tells every node); one heard from elsewhere is seen too; the
/// servers' own environment never is. `RefreshScripts` asks for a reload and its caller
/// carries on.
#[test]
fn the_environment_is_the_cluster_s_and_refresh_scripts_asks_for_a_reload() {
    let src: &[u8] = b"Function Main()\n  Output(Actor(), \"[\" + GetEnv(\"PATH\") + \"]\")\n  SetEnv(\"Mood\", \"merry\")\n  Output(Actor(), GetEnv(\"Mood\"))\n  RefreshScripts()\n  Output(Actor(), \"still here\")\nEnd Function\nFunction Read()\n  Output(Actor(), GetEnv(\"Season\") + \"/\" + GetEnv(\"Mood\"))\nEnd Function\n";
    let mut h = SimHarness::with_scripts(&[("Env", src)]);
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    start(&mut h, "Env", "Main", pid);
    assert_eq!(h.chat(p), ["[]", "merry", "still here"]);
    let ops = store_ops(&h);
    assert!(ops.contains(&shared::internal::ScriptStoreOp::SetEnv {
        name: "Mood".into(),
        value: b"merry".to_vec(),
    }));
    assert!(ops.contains(&shared::internal::ScriptStoreOp::RefreshScripts));
    // Set on another node: heard here.
    h.clear();
    h.push(ZoneInput::Env {
        name: b"Season".to_vec(),
        value: b"winter".to_vec(),
    });
    start(&mut h, "Env", "Read", pid);
    assert_eq!(h.chat(p), ["winter/merry"]);
    // Removed elsewhere (an empty value).
    h.clear();
    h.push(ZoneInput::Env {
        name: b"Mood".to_vec(),
        value: Vec::new(),
    });
    start(&mut h, "Env", "Read", pid);
    assert_eq!(h.chat(p), ["winter/"]);
}

/// `WeatherLink` across nodes: an instance 0 announces its weather changes, and a zone
/// whose area links to another follows the weather it hears for it.
#[test]
fn weather_links_follow_the_linked_area_s_announced_weather() {
    use zone_node::sim::weather;
    let mut h = SimHarness::new();
    h.tick();
    h.clear();
    weather::set_weather(h.sim.state_mut(), 3, 60_000);
    h.tick();
    let announced: Vec<_> = h
        .outputs
        .iter()
        .filter_map(|o| match o {
            ZoneOutput::ScriptStore {
                op: shared::internal::ScriptStoreOp::Weather { area, weather },
                ..
            } => Some((area.clone(), *weather)),
            _ => None,
        })
        .collect();
    assert_eq!(announced, [("testland".to_owned(), 3)]);
    // A zone linked to "Elsewhere" follows what it hears of it.
    let mut content = test_content();
    content.area.weather_link = "Elsewhere".into();
    let mut h = SimHarness::with(ZoneConfig::default(), content);
    h.push(ZoneInput::LinkedWeather {
        area: "ELSEWHERE".into(),
        weather: 4,
    });
    h.tick();
    weather::set_weather(h.sim.state_mut(), 0, 0);
    h.run_ticks(10);
    assert_eq!(h.sim.state().weather, 4);
}

/// `FindActor` of a player who is not in the zone asks the gateway (who is in the game on
/// every node) and waits for the answer; one here is found at once. `Output` to a player
/// handle that is not here goes to the gateway for that player.
#[test]
fn find_actor_asks_the_cluster_for_a_player_not_here_and_output_reaches_one() {
    let src: &[u8] = b"Function Main()\n  Output(Actor(), \"here \" + (FindActor(\"ann\", 1) = Actor()))\n  P = FindActor(\"Zed\")\n  Output(Actor(), \"away \" + P)\n  Output(123, \"psst\")\nEnd Function\n";
    let mut h = SimHarness::with_scripts(&[("Find", src)]);
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    start(&mut h, "Find", "Main", pid);
    h.run_ticks(2);
    assert_eq!(h.chat(p), ["here 1", "away 0"]);
    let ops = store_ops(&h);
    assert!(ops.contains(&shared::internal::ScriptStoreOp::FindPlayer { name: "Zed".into() }));
    assert!(ops.iter().any(|o| matches!(
        o,
        shared::internal::ScriptStoreOp::Tell { handle: 123, text, .. } if text == b"psst"
    )));
}

/// A query on a player who is not in the zone (`Name`, `ActorLevel`, …) asks the cluster
/// and waits (no answer reads as "" or 0); the zone hosting the player answers such a
/// query from the gateway by evaluating the command on its own copy.
#[test]
fn a_query_on_a_player_elsewhere_asks_the_cluster_and_the_host_zone_answers() {
    use shared::internal::{ScriptStoreOp, ValueDto};
    let src: &[u8] =
        b"Function Main()\n  Output(Actor(), \"[\" + Name(123) + \"] \" + ActorLevel(123))\nEnd Function\n";
    let mut h = SimHarness::with_scripts(&[("Q", src)]);
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    start(&mut h, "Q", "Main", pid);
    h.run_ticks(3);
    assert_eq!(h.chat(p), ["[] 0"]);
    let asked = store_ops(&h)
        .into_iter()
        .filter(|o| matches!(o, ScriptStoreOp::ActorQuery { handle: 123, .. }))
        .count();
    assert_eq!(asked, 2, "Name and ActorLevel were asked");
    // The gateway asks this zone about Ann.
    h.clear();
    let handle = h.sim.state().handle_of(pid);
    let ask = |native: &str, args: Vec<ValueDto>| ZoneInput::ActorQuery {
        qid: 7,
        player: p,
        native: native.into(),
        args,
        action: None,
    };
    h.push(ask("Name", vec![ValueDto::Int(handle)]));
    h.push(ask(
        "Attribute",
        vec![ValueDto::Int(handle), ValueDto::Str(b"Health".to_vec())],
    ));
    h.push(ask("Name", vec![ValueDto::Int(handle + 1)]));
    h.push(ask("KillActor", vec![ValueDto::Int(handle)]));
    h.tick();
    let answers: Vec<_> = store_ops(&h)
        .into_iter()
        .filter_map(|o| match o {
            ScriptStoreOp::ActorAnswer { value, .. } => Some(value),
            _ => None,
        })
        .collect();
    assert_eq!(answers.len(), 4);
    assert_eq!(answers[0], Some(ValueDto::Str(b"Ann".to_vec())));
    assert!(
        matches!(answers[1], Some(ValueDto::Int(v)) if v > 0),
        "{answers:?}"
    );
    assert_eq!(answers[2], None, "another handle is not this player");
    assert_eq!(answers[3], None, "only queries, never actions");
    assert!(!h.actor(pid).dead);
}

/// `Spawn` into another AreaInstance asks the cluster (its zone spawns and answers the
/// handle); a zone asked by the gateway spawns the NPC with its scripts.
#[test]
fn spawn_into_another_instance_asks_the_cluster_and_the_zone_there_spawns() {
    use shared::internal::{ScriptStoreOp, ValueDto};
    let src: &[u8] = b"Function Main()\n  Output(Actor(), \"got \" + Spawn(2, \"Elsewhere\", 1, 0, 1, \"Click\", \"Die\", 4))\nEnd Function\n";
    let mut h = SimHarness::with_scripts(&[("S", src)]);
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    start(&mut h, "S", "Main", pid);
    h.run_ticks(2);
    assert_eq!(h.chat(p), ["got 0"], "no cluster here: none");
    assert!(store_ops(&h).iter().any(|o| matches!(
        o,
        ScriptStoreOp::Spawn { area, instance: 4, template: 2, .. } if area == "Elsewhere"
    )));
    h.clear();
    let spawn = |template| ZoneInput::SpawnNpc {
        qid: 9,
        template,
        pos: (20.0, 0.0, 20.0),
        script: "Click".into(),
        death_script: "Die".into(),
    };
    h.push(spawn(templates::WOLF));
    h.push(spawn(60_000));
    h.tick();
    let answers: Vec<_> = store_ops(&h)
        .into_iter()
        .filter_map(|o| match o {
            ScriptStoreOp::ActorAnswer { value, .. } => Some(value),
            _ => None,
        })
        .collect();
    let Some(Some(ValueDto::Int(handle))) = answers.first().cloned() else {
        panic!("{answers:?}")
    };
    let id = h
        .sim
        .state()
        .actor_by_handle(handle)
        .expect("the NPC is here");
    assert_eq!(h.actor(id).script, "Click");
    assert_eq!(h.actor(id).death_script, "Die");
    assert_eq!(
        answers.get(1),
        Some(&None),
        "an unknown template spawns nothing"
    );
}

/// An action on a player who is not in the zone (`GiveItem`, `SetGold`, `Warp`, … of a
/// handle the zone does not host) goes to the cluster with an id: the run's own, minted
/// once, and its count in the run, so the zone hosting the player takes it once; the run
/// waits for each answer (the next action is sent after it), and another run has another
/// id.
#[test]
fn an_action_on_a_player_elsewhere_goes_to_the_cluster_with_the_runs_id() {
    use shared::internal::ScriptStoreOp;
    let src: &[u8] = b"Function Main()\n  GiveItem(123, \"Potion\", 2)\n  SetGold(123, 5)\n  GiveItem(Actor(), \"Nothing\", 1)\n  Output(Actor(), \"done\")\nEnd Function\n";
    let mut h = SimHarness::with_scripts(&[("A", src)]);
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    start(&mut h, "A", "Main", pid);
    h.run_ticks(4);
    start(&mut h, "A", "Main", pid);
    h.run_ticks(4);
    assert_eq!(h.chat(p), ["done", "done"]);
    let actions: Vec<(String, shared::internal::ActionId)> = store_ops(&h)
        .into_iter()
        .filter_map(|o| match o {
            ScriptStoreOp::ActorQuery {
                handle: 123,
                native,
                action: Some(id),
                ..
            } => Some((native, id)),
            _ => None,
        })
        .collect();
    let names: Vec<&str> = actions.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["GiveItem", "SetGold", "GiveItem", "SetGold"],
        "the local one stays here"
    );
    let ids: Vec<_> = actions.iter().map(|(_, id)| *id).collect();
    assert_eq!(ids[0].run, ids[1].run);
    assert_eq!((ids[0].seq, ids[1].seq), (1, 2));
    assert_ne!(ids[2].run, ids[0].run, "another run, another id");
    assert_eq!(ids[2].seq, 1);
}

/// `FirstActorInZone` of another instance asks the cluster for its actors; the script
/// walks them with `NextActorInZone` (wrapping, as in its own zone), and commands on those
/// handles (`Name`, an NPC's) go to the cluster too. A zone asked by the gateway lists its
/// actors, and answers a query on one of its NPCs.
#[test]
fn a_script_walks_another_instance_and_asks_about_its_npcs() {
    use shared::internal::{ScriptStoreOp, ValueDto};
    let src: &[u8] = b"Function Main()\n  A = FirstActorInZone(\"Elsewhere\", 2)\n  B = NextActorInZone(A)\n  C = NextActorInZone(B)\n  Output(Actor(), A + \" \" + B + \" \" + C + \" \" + NextActorInZone(C) + \" \" + NextActorInZone(77))\n  Output(Actor(), \"[\" + Name(B) + \"]\")\nEnd Function\n";
    let mut h = SimHarness::with_scripts(&[("W", src)]);
    let npc = 1_500_000_000;
    h.store.other_zone = vec![5, npc, npc + 1];
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    start(&mut h, "W", "Main", pid);
    h.run_ticks(4);
    assert_eq!(
        h.chat(p),
        [format!("5 {npc} {} 5 0", npc + 1), "[]".to_owned()]
    );
    let ops = store_ops(&h);
    assert!(ops.iter().any(|o| matches!(
        o,
        ScriptStoreOp::ZoneActors { area, instance: 2 } if area == "Elsewhere"
    )));
    assert!(
        ops.iter().any(|o| matches!(
            o,
            ScriptStoreOp::ActorQuery { handle, .. } if *handle == npc as u32
        )),
        "a query on an NPC elsewhere goes to the cluster: {ops:?}"
    );
    // The gateway asks this zone: its actors, and about one of its NPCs.
    let wolf = h.spawn_npc(templates::WOLF, 3.0, 3.0);
    let wolf_handle = h.sim.state().handle_of(wolf);
    h.clear();
    h.push(ZoneInput::ZoneActors { qid: 3 });
    h.push(ZoneInput::NpcQuery {
        qid: 4,
        native: "Name".into(),
        args: vec![ValueDto::Int(wolf_handle)],
        action: false,
    });
    h.push(ZoneInput::NpcQuery {
        qid: 5,
        native: "Name".into(),
        args: vec![ValueDto::Int(h.sim.state().handle_of(pid))],
        action: false,
    });
    h.tick();
    let ops = store_ops(&h);
    let listed = ops
        .iter()
        .find_map(|o| match o {
            ScriptStoreOp::ZoneActorsAnswer { qid: 3, handles } => Some(handles.clone()),
            _ => None,
        })
        .expect("listed");
    assert!(listed.contains(&wolf_handle) && listed.contains(&h.sim.state().handle_of(pid)));
    let answers: Vec<_> = ops
        .iter()
        .filter_map(|o| match o {
            ScriptStoreOp::ActorAnswer { qid, value } => Some((*qid, value.clone())),
            _ => None,
        })
        .collect();
    assert!(
        matches!(&answers[0], (4, Some(ValueDto::Str(n))) if !n.is_empty()),
        "{answers:?}"
    );
    assert_eq!(answers[1], (5, None), "a player is not asked as an NPC");
}

/// The cluster's answer to a script, arriving between ticks, lets the script run on at
/// once (`ZoneSim::handoff`): a script asking about actors elsewhere waits a round trip
/// per question, not a tick; what it says goes out with that answer.
#[test]
fn a_script_answered_between_ticks_runs_on_at_once() {
    use shared::internal::{ScriptStoreOp, ScriptStoreResult, ValueDto};
    let src: &[u8] = b"Function Main()\n  For I = 1 To 3\n    Output(Actor(), \"level \" + ActorLevel(123))\n  Next\nEnd Function\n";
    let mut h = SimHarness::with_scripts(&[("B", src)]);
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    // Ticked by hand: the harness's store would answer at the next tick.
    queue_start(&mut h, "B", "Main", pid);
    let now = h.sim.state().now_ms + 33;
    let out = h.sim.tick(now, Vec::new());
    let mut reqs: Vec<u64> = out
        .outputs
        .iter()
        .filter_map(|o| match o {
            ZoneOutput::ScriptStore {
                req,
                op: ScriptStoreOp::ActorQuery { .. },
            } => Some(*req),
            _ => None,
        })
        .collect();
    assert_eq!(reqs.len(), 1);
    let mut lines = 0;
    for level in 1..=3 {
        let req = reqs.pop().expect("a question");
        let result = ScriptStoreResult::Value(ValueDto::Int(level));
        let (out, rest) = h
            .sim
            .handoff(vec![ZoneInput::ScriptStoreReply { req, result }]);
        assert!(rest.is_empty());
        reqs.extend(out.outputs.iter().filter_map(|o| match o {
            ZoneOutput::ScriptStore {
                req,
                op: ScriptStoreOp::ActorQuery { .. },
            } => Some(*req),
            _ => None,
        }));
        lines += out
            .outputs
            .iter()
            .filter(|o| matches!(o, ZoneOutput::Reliable { player, .. } if *player == p))
            .count();
    }
    assert!(reqs.is_empty(), "the script finished between ticks");
    assert!(lines >= 1, "its lines went out with the answers");
}
