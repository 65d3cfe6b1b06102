//! The game clock in a zone: two `ZoneSim`s given the same clock epoch read the same game
//! time at the same real time whatever their own start; the clock natives, `WaitTime`
//! and the `/time`, `/date`, `/season` commands.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use zone_node::sim::ZoneConfig;
use zone_node::sim::events::PlayerAction;
use zone_node::sim::testing::{SimHarness, content_with_scripts, test_content};

fn cmd(word: &str) -> PlayerAction {
    PlayerAction::Command {
        word: word.into(),
        params: String::new(),
    }
}

const CMDS: &[u8] = b"Function Clock()\r\n\tOutput(Actor(), Year() + \"/\" + Day() + \" \" + Hour() + \":\" + Minute() + \" \" + Month$() + \" \" + Season$())\r\nEnd Function\r\nFunction Wt()\r\n\tWaitTime(12, 5)\r\n\tOutput(Actor(), \"released \" + Hour() + \":\" + Minute())\r\nEnd Function\r\nFunction Bad()\r\n\tWaitTime(24, 0)\r\n\tOutput(Actor(), \"never\")\r\nEnd Function\r\n";

fn zone(epoch_ms: u64, clock_epoch_ms: u64) -> SimHarness {
    let cfg = ZoneConfig {
        epoch_ms,
        clock_epoch_ms,
        ..ZoneConfig::default()
    };
    SimHarness::with(
        cfg,
        content_with_scripts(test_content(), &[("In-game Commands", CMDS)]),
    )
}

/// Two zones started at different real times (own epochs), the same cluster clock epoch:
/// at the same real time, at different zone `now`s, they read the same time.
#[test]
fn two_zones_with_the_same_epoch_agree() {
    let cluster = 1_700_000_000_000;
    let mut a = zone(cluster + 5_000, cluster);
    let mut b = zone(cluster + 3_605_000, cluster);
    let (pa, _) = a.spawn_player("Ann", 0.0, 0.0);
    let (pb, _) = b.spawn_player("Bob", 0.0, 0.0);
    // Both at real time cluster + 3 700 000 (a's now 3 695 000, b's 95 000).
    a.now = 3_695_000;
    b.now = 95_000;
    a.clear();
    b.clear();
    a.act(pa, cmd("TIME"));
    b.act(pb, cmd("TIME"));
    a.tick();
    b.tick();
    // 3 700 000 ms / 6000 = 616 game minutes after 12:00 → 22:16.
    assert_eq!(a.chat(pa), ["Time: 22:16"]);
    assert_eq!(b.chat(pb), a.chat(pa));
    let sa = a.sim.state();
    let sb = b.sim.state();
    assert_eq!(
        zone_node::sim::clock::game_time(sa),
        zone_node::sim::clock::game_time(sb)
    );
}

#[test]
fn date_and_season_commands_use_rc_text() {
    let mut h = zone(0, 0);
    let (p, _) = h.spawn_player("Ann", 0.0, 0.0);
    h.clear();
    h.act(p, cmd("TIME"));
    h.act(p, cmd("DATE"));
    h.act(p, cmd("SEASON"));
    h.tick();
    assert_eq!(
        h.chat(p),
        ["Time: 12:00", "Month 1 2nd, 1", "Season: Season 1"]
    );
}

#[test]
fn clock_natives_read_the_game_time() {
    let mut h = zone(0, 0);
    let (p, _) = h.spawn_player("Ann", 0.0, 0.0);
    h.clear();
    // 90 game minutes later.
    h.now = 6000 * 90;
    h.act(p, cmd("CLOCK"));
    h.tick();
    h.tick();
    assert_eq!(h.chat(p), ["1/1 13:30 Month 1 Season 1"]);
}

#[test]
fn wait_time_releases_at_the_minute_of_day() {
    let mut h = zone(0, 0);
    let (p, _) = h.spawn_player("Ann", 0.0, 0.0);
    h.clear();
    h.now = 0;
    h.act(p, cmd("WT"));
    h.step = 1000;
    // 12:04:59 — still waiting.
    while h.now < 6000 * 5 {
        h.tick();
    }
    assert!(h.chat(p).is_empty(), "{:?}", h.chat(p));
    h.run_ticks(3);
    assert_eq!(h.chat(p), ["released 12:5"]);
    // Already past: released at once.
    h.clear();
    h.act(p, cmd("WT"));
    h.run_ticks(2);
    assert_eq!(h.chat(p), ["released 12:5"]);
}

#[test]
fn wait_time_past_midnight_is_a_script_error() {
    let mut h = zone(0, 0);
    let (p, _) = h.spawn_player("Ann", 0.0, 0.0);
    h.clear();
    h.act(p, cmd("BAD"));
    h.run_ticks(3);
    assert!(h.chat(p).is_empty());
    assert_eq!(h.script_errors().len(), 1, "{:?}", h.script_errors());
}
