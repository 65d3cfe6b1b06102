//! Actor effects and the game clock on a whole cluster (issue 20): a gateway in this
//! process and two `zone-node` processes (`cluster_tests::Cluster`).
//!
//! * An effect (`P_ActorEffect`, the demo world's Healing Potion: +25 Health for 10 s,
//!   eaten from the starter kit) crosses a SetArea handoff to the other node with its
//!   remaining time, survives the loss of the node holding its owner (at most one
//!   checkpoint of progress lost), is announced again (`"A"`) when the owner logs in
//!   again, and ends (`"R"`) when its remaining time has run out.
//! * Both nodes answer `/time` alike for two players, one on each, and the SDK's clock
//!   from the login block (`Connection::game_time`) agrees with them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::time::Duration;

use client::{CloseCode, Connection, Event, GameStart};
use cluster_tests::{Cluster, WAIT, area_of, chat_containing, new_player, next_change_area};
use shared::proto::{ActorEffect, ServerPacket};
use tokio::time::Instant;

/// The demo world's Healing Potion, three of which are in every starter kit (`Login.rsl`).
const POTION: u16 = 20;
/// The backpack slot the kit's potions land in.
const POTIONS_SLOT: u8 = 14;
/// Its `EatEffectsLength` (`items.toml`: `secs = 10`).
const POTION_MS: u64 = 10_000;
/// The effect's name: the item's.
const EFFECT: &str = "Healing Potion";
/// How often the test nodes checkpoint (`ZONE_NODE_PERSIST_EVERY_MS` of the harness).
const CHECKPOINT_MS: u64 = 500;

/// Log in (waiting out a previous session's logout), fetch the catalogue (which starts the
/// SDK's game clock from block `"E"`) and enter the world.
async fn enter(addr: SocketAddr, user: &str) -> (Connection, GameStart) {
    cluster_tests::login_again_with(addr, user, true).await
}

async fn wait_offline(c: &Cluster, user: &str) {
    let deadline = Instant::now() + WAIT;
    while c.online(user) {
        assert!(
            Instant::now() < deadline,
            "{user}'s logout was not confirmed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Warp (a DM command) and wait for the `P_ChangeArea` into `area`.
async fn warp(conn: &mut Connection, area: &str, instance: u16) {
    conn.command(&format!("warp {area},{instance}"))
        .await
        .unwrap();
    let (i, _) = next_change_area(conn, WAIT)
        .await
        .unwrap_or_else(|| panic!("no P_ChangeArea after /warp {area},{instance}"));
    assert_eq!(area_of(&i.packet).as_deref(), Some(area));
}

/// The potion effect's saved remaining time, if the saved character has it.
fn saved_effect(c: &Cluster, user: &str) -> Option<(String, u64)> {
    let s = c.saved(user);
    s.effects
        .iter()
        .find(|e| e.name == EFFECT)
        .map(|e| (s.area.clone(), e.remaining_ms))
}

/// Poll the saved character (bounded) until `f` holds for its effect.
async fn until_saved(
    c: &Cluster,
    user: &str,
    what: &str,
    f: impl Fn(&Option<(String, u64)>) -> bool,
) -> Option<(String, u64)> {
    let deadline = Instant::now() + WAIT;
    loop {
        let e = saved_effect(c, user);
        if f(&e) {
            return e;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {e:?}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The `/time` reply's minute of the day.
async fn ask_time(conn: &mut Connection) -> i64 {
    conn.command("time").await.unwrap();
    let text = chat_containing(conn, "Time: ", WAIT)
        .await
        .expect("a /time reply");
    let (h, m) = client::clock::parse_time_reply(&text).expect("Time: HH:MM");
    i64::from(h) * 60 + i64::from(m)
}

/// Minutes between two minutes of the day, across midnight.
fn minutes_apart(a: i64, b: i64) -> i64 {
    let d = (a - b).rem_euclid(1440);
    d.min(1440 - d)
}

fn effect_added(p: &ServerPacket) -> Option<u32> {
    match p {
        ServerPacket::ActorEffect(ActorEffect::Added {
            handle,
            effect_name,
            ..
        }) if effect_name.as_bytes() == EFFECT.as_bytes() => Some(*handle),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn effects_and_the_clock_survive_a_handoff_and_a_node_loss() {
    // Built (on demand) before the clock starts: the test's own time is what is bounded.
    cluster_tests::zone_node_bin();
    let t_test = Instant::now();
    let mut c = Cluster::start("effects", &["n1", "n2"]).await;
    let addr = c.gw.client_addr;

    // Two characters with their starter kits, made DMs (to /warp).
    for u in ["fx_a", "fx_b"] {
        let (p, _) = new_player(addr, u).await;
        // Wait until the kit (given by Login.rsl) is saved.
        let deadline = Instant::now() + WAIT;
        while !c
            .saved(u)
            .inventory
            .get(usize::from(POTIONS_SLOT))
            .is_some_and(|s| {
                s.as_ref()
                    .is_some_and(|s| s.item == POTION && s.amount == 3)
            })
        {
            assert!(Instant::now() < deadline, "{u}'s starter kit was not saved");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        p.close(CloseCode::Normal).await;
        wait_offline(&c, u).await;
        c.make_dm(u);
    }
    let (mut a, _) = enter(addr, "fx_a").await;
    let (mut b, _) = enter(addr, "fx_b").await;

    // B goes to a new instance, which is placed on the other node (n1 holds every
    // instance 0, a new instance goes to the least loaded node).
    warp(&mut b, "Darkwood", 5).await;
    c.wait_placed("Darkwood", 5).await;
    let (meadow_node, _) = c.owner("Meadow", 0).unwrap();
    let (dark_node, _) = c.owner("Darkwood", 5).unwrap();
    assert_ne!(
        meadow_node, dark_node,
        "the two instances are on different nodes"
    );

    // The clock: A asks its node, B the other; the same minute, or the next one if the
    // minute turned in between (6 s a minute at the demo's TimeFactor 10). The SDK's
    // clock from the login block agrees with both within a minute.
    let ta = ask_time(&mut a).await;
    let tb = ask_time(&mut b).await;
    assert!(
        minutes_apart(ta, tb) <= 1,
        "{meadow_node} says {ta}, {dark_node} says {tb} (minutes of the day)"
    );
    for (conn, told) in [(&a, ta), (&b, tb)] {
        let t = conn
            .game_time()
            .expect("the SDK's clock from the login block");
        assert!(
            minutes_apart(i64::from(t.minute_of_day()), told) <= 1,
            "the SDK says {t:?}, the node {told}"
        );
    }
    b.close(CloseCode::Normal).await;

    // A drinks a potion on the Meadow's node: "A" (the effect) comes.
    let t_eat = Instant::now();
    a.eat(POTIONS_SLOT, 1).await.unwrap();
    let handle = a
        .recv_until(|i| effect_added(&i.packet).is_some(), WAIT)
        .await
        .ok()
        .and_then(|i| effect_added(&i.packet))
        .expect("P_ActorEffect \"A\" for the potion");

    // A warps to the instance on the other node; the effect goes along with the time it
    // had left, and its clock runs on there.
    warp(&mut a, "Darkwood", 5).await;
    let (_, first) = until_saved(&c, "fx_a", "the effect saved by the other node", |e| {
        e.as_ref().is_some_and(|(area, _)| area == "Darkwood")
    })
    .await
    .unwrap();
    let elapsed = u64::try_from(t_eat.elapsed().as_millis()).unwrap();
    assert!(
        first <= POTION_MS && first + elapsed >= POTION_MS,
        "{first} ms left {elapsed} ms after eating"
    );
    until_saved(&c, "fx_a", "a checkpoint of the other node", |e| {
        e.as_ref()
            .is_some_and(|(area, left)| area == "Darkwood" && *left < first)
    })
    .await;

    // The node holding A dies. What the gateway restores is its last checkpoint: at most
    // one checkpoint of progress lost.
    let (pre_kill_area, pre_kill) = saved_effect(&c, "fx_a").expect("the effect is saved");
    assert_eq!(pre_kill_area, "Darkwood");
    let since_eat = u64::try_from(t_eat.elapsed().as_millis()).unwrap();
    c.kill(&dark_node);
    let t_kill = Instant::now();
    let ideal = POTION_MS.saturating_sub(since_eat);
    assert!(
        pre_kill <= ideal + CHECKPOINT_MS + 500,
        "{pre_kill} ms left at the last checkpoint, {ideal} ms at the node's loss"
    );
    // A is put back (the surviving node takes Darkwood #5 over), then logs out and in.
    let (i, _) = next_change_area(&mut a, WAIT)
        .await
        .expect("A is put back after the node loss");
    assert_eq!(area_of(&i.packet).as_deref(), Some("Darkwood"));
    assert_eq!(
        c.owner("Darkwood", 5).map(|o| o.0),
        Some(meadow_node.clone())
    );
    a.close(CloseCode::Normal).await;
    wait_offline(&c, "fx_a").await;
    let (_, at_logout) = saved_effect(&c, "fx_a").expect("the effect survived the node loss");
    assert!(
        at_logout > 0 && at_logout <= pre_kill,
        "{at_logout} ms left at logout, {pre_kill} ms at the last checkpoint before the loss"
    );
    println!(
        "effect: {first} ms left after the handoff, {pre_kill} ms at the node loss (ideal \
         {ideal}), {at_logout} ms at logout; back {:.2} s after the kill",
        t_kill.elapsed().as_secs_f64()
    );

    // Logged in again: "A" again with the same handle, and "R" once the time is up.
    let (mut a, g) = enter(addr, "fx_a").await;
    let t_login = Instant::now();
    let mut announced = g
        .packets
        .iter()
        .any(|i| effect_added(&i.packet) == Some(handle));
    let removed_at = loop {
        let left = WAIT.saturating_sub(t_login.elapsed());
        let e = tokio::time::timeout(left, a.next_event())
            .await
            .expect("the effect ends")
            .unwrap();
        match e {
            Event::Effect(ActorEffect::Added { handle: h, .. }) if h == handle => {
                announced = true;
            }
            Event::Effect(ActorEffect::Removed { handle: h, deltas }) if h == handle => {
                assert_eq!(deltas.first(), Some(&25), "+25 Health taken back");
                break t_login.elapsed();
            }
            _ => {}
        }
    };
    assert!(announced, "P_ActorEffect \"A\" at login");
    let took = u64::try_from(removed_at.as_millis()).unwrap();
    assert!(
        took + 1_000 >= at_logout && took <= at_logout + 1_000,
        "ended {took} ms after the login with {at_logout} ms left"
    );
    until_saved(
        &c,
        "fx_a",
        "the ended effect gone from the save",
        Option::is_none,
    )
    .await;
    a.close(CloseCode::Normal).await;
    println!(
        "effect ended {took} ms after the login ({at_logout} ms left); test took {:.1} s",
        t_test.elapsed().as_secs_f64()
    );
    assert!(t_test.elapsed() < Duration::from_secs(60));
}
