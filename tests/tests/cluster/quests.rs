//! A Realm Crafter quest played end to end through the client SDK on two zone-node
//! processes (issue 21): right-click the quest giver, read the dialog, accept, see the quest
//! log entry, kill the NPCs (one after a warp to the other node), return, complete it, get
//! the XP, gold and item, and find the quest completed after a re-login. Once with the demo
//! world's Elder Maren (and first a warp to the other node in mid-dialog, which closes the
//! window while the script carries on), once with the sample project's own
//! `Ratcatcher1.rsl`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use client::CloseCode;
use cluster_tests::adventurer::Adventurer;
use cluster_tests::{Cluster, WAIT, new_player, temp_dir, walk_through};

/// Demo templates: Elder Maren, Goblin Raider.
const ELDER: u16 = 9;
const GOBLIN: u16 = 3;
/// The demo's Ring of Strength.
const RING: u16 = 21;
const QUEST: &str = "Goblin Trouble";
const LONG: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_quest_plays_through_on_two_nodes() {
    let c = Cluster::start_with_capacity("quests", &[("n1", 1), ("n2", 64)]).await;
    let world = shared::content::demo_world();
    let meadow = world.area_by_name("Meadow").unwrap();
    let to_darkwood = meadow
        .portals
        .iter()
        .find(|p| p.link_area == "Darkwood")
        .unwrap()
        .clone();
    let (meadow_node, _) = c.owner("Meadow", 0).unwrap();
    let (darkwood_node, _) = c.owner("Darkwood", 0).unwrap();
    assert_ne!(meadow_node, darkwood_node, "the quest crosses nodes");
    let back = world
        .area_by_name("Darkwood")
        .unwrap()
        .portals
        .iter()
        .find(|p| p.link_area == "Meadow" && p.link_name == "Begin")
        .unwrap()
        .clone();

    let (mut ann, g) = c.strong_dm("ann").await;
    let mut a = Adventurer::new(&g);

    eprintln!("step: a warp to {darkwood_node} in mid-dialog closes the window");
    let offered = a.until_options(&mut ann, ELDER, LONG).await;
    let deadline = tokio::time::Instant::now() + LONG;
    ann.command("warp Darkwood").await.unwrap();
    let mut closed = false;
    while !(closed && a.area == "Darkwood") {
        assert!(
            tokio::time::Instant::now() < deadline,
            "closed {closed}, in {}",
            a.area
        );
        let e = ann.next_event().await.unwrap();
        a.observe(&e);
        if e == (client::Event::DialogClosed { dialog: offered }) {
            // Closed before the player leaves.
            assert_eq!(a.area, "Meadow");
            closed = true;
        }
    }
    assert!(ann.choose(offered, 1).await.is_err(), "the window is gone");
    ann.command("warp Meadow").await.unwrap();
    while a.area != "Meadow" {
        assert!(
            tokio::time::Instant::now() < deadline,
            "not back in the Meadow"
        );
        a.pump(&mut ann, Duration::from_millis(200)).await;
    }
    // The script carried on with no answer (a refusal) and ended: no quest.
    a.pump(&mut ann, Duration::from_secs(1)).await;
    assert!(ann.ui().quest(QUEST).is_none());

    eprintln!("step: talk to the elder and accept, on {meadow_node}");
    a.talk(&mut ann, ELDER, &[1], LONG).await;
    assert!(
        a.lines.iter().any(|l| l.contains("Goblin raiders")),
        "{:?}",
        a.lines
    );
    a.quest_event(&mut ann, LONG, |q| {
        q.0 == QUEST && q.1 == "Kill 2 Goblin Raiders"
    })
    .await;
    assert!(ann.ui().quest(QUEST).is_some_and(|q| !q.is_complete()));

    eprintln!("step: the goblin scout in the Meadow");
    a.walk_to(&mut ann, (70.0, 1.0, -70.0)).await;
    a.kill_one(&mut ann, GOBLIN, LONG).await;
    a.quest_event(&mut ann, LONG, |q| q.1 == "Kill 1 Goblin Raider")
        .await;

    eprintln!("step: over to the Darkwood on {darkwood_node}, a second goblin");
    let from = a.at;
    let to = (to_darkwood.x, to_darkwood.y, to_darkwood.z);
    a.at = walk_through(&mut ann, from, to, "Darkwood", |e| a.observe(e)).await;
    a.area = "Darkwood".into();
    a.kill_one(&mut ann, GOBLIN, LONG).await;
    a.quest_event(&mut ann, LONG, |q| q.1 == "Return to Elder Maren")
        .await;

    eprintln!("step: back to the elder, the reward");
    let from = a.at;
    let to = (back.x, back.y, back.z);
    a.at = walk_through(&mut ann, from, to, "Meadow", |e| a.observe(e)).await;
    a.area = "Meadow".into();
    let gold = a.gold_gained;
    a.talk(&mut ann, ELDER, &[1], LONG).await;
    a.quest_event(&mut ann, LONG, |q| q.0 == QUEST && q.2).await;
    a.pump(&mut ann, Duration::from_secs(1)).await;
    assert!(a.items_given.contains(&RING), "{:?}", a.items_given);
    assert_eq!(a.gold_gained - gold, 50);
    assert!(
        a.chat.iter().any(|l| l.contains("Quest complete")),
        "{:?}",
        a.chat
    );
    ann.close(CloseCode::Normal).await;

    eprintln!("step: re-login: the quest is completed");
    let (ann, _) = cluster_tests::login_like_client(c.gw.client_addr, "ann").await;
    let q = ann.ui().quest(QUEST).cloned();
    assert!(q.as_ref().is_some_and(|q| q.is_complete()), "{q:?}");
    ann.close(CloseCode::Normal).await;
}

/// Realm Crafter's sample project converted to a native world in a temp folder, with the
/// two things its `Ratcatcher1.rsl` needs and its data lacks: a "Rat" of class "Critter"
/// (spawning in Test Zone, where the rat catcher stands, and in Plains) and the "Rat
/// Catcher Medalion" it gives.
fn sample_world_with_rats(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    let src =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/rc-sample-data");
    if !src.join("Scripts").is_dir() {
        return None;
    }
    let (mut world, _) = shared::content::fs::load_world(&src).unwrap();
    let stag = world
        .actors
        .iter()
        .find(|a| a.race == "Stag")
        .cloned()
        .unwrap();
    let rat_id = world.actors.iter().map(|a| a.id).max().unwrap() + 1;
    let mut rat = stag;
    rat.id = rat_id;
    rat.race = "Rat".into();
    rat.class = "Critter".into();
    world.actors.push(rat);
    let mut medal = world.items[0].clone();
    medal.id = world.items.iter().map(|i| i.id).max().unwrap() + 1;
    medal.name = "Rat Catcher Medalion".into();
    world.items.push(medal);
    for area in ["Test Zone", "Plains"] {
        let a = world.areas.iter_mut().find(|a| a.name == area).unwrap();
        let mut s = a
            .spawns
            .iter()
            .find(|s| !s.actor_script.is_empty())
            .cloned()
            .unwrap();
        s.index = a.spawns.iter().map(|s| s.index).max().unwrap_or(0) + 1;
        s.template = rat_id;
        s.actor_script.clear();
        s.spawn_script.clear();
        s.max = 2;
        s.frequency_secs = 3;
        a.spawns.push(s);
    }
    let out = dir.join("sample-world");
    shared::content::fs::write_native(&world, &out).unwrap();
    Some(out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sample_ratcatcher_quest_plays_through_on_two_nodes() {
    let dir = temp_dir("ratcatcher-world");
    let Some(world_dir) = sample_world_with_rats(&dir) else {
        eprintln!("skipped: the sample data is not there");
        return;
    };
    let world = shared::content::fs::load_world(&world_dir).unwrap().0;
    let rat = world.actors.iter().find(|a| a.race == "Rat").unwrap().id;
    let test_zone = world.area_by_name("Test Zone").unwrap();
    let spawn = test_zone
        .spawns
        .iter()
        .find(|s| s.actor_script == "Ratcatcher1")
        .unwrap();
    let catcher = spawn.template;
    // Another NPC of the same template stands elsewhere (the sample's marriage script).
    let wp = test_zone
        .waypoints
        .iter()
        .find(|w| w.index == spawn.waypoint)
        .unwrap();
    let post = Some((wp.x, wp.y, wp.z));
    let c = Cluster::start_with_world("ratcatcher", &[("n1", 2), ("n2", 64)], &world_dir).await;
    let (plains_node, _) = c.owner("Plains", 0).unwrap();
    let (test_node, _) = c.owner("Test Zone", 0).unwrap();
    assert_ne!(plains_node, test_node);

    let (mut ann, g) = c.strong_dm("ann").await;
    let mut a = Adventurer::new(&g);

    eprintln!("step: to Test Zone on {test_node}, talk to the rat catcher, accept");
    ann.command("warp Test Zone").await.unwrap();
    a.pump(&mut ann, Duration::from_secs(2)).await;
    assert_eq!(a.area, "Test Zone");
    a.talk_near(&mut ann, catcher, post, &[1], LONG).await;
    assert!(
        a.lines.iter().any(|l| l.contains("RAT problem")),
        "{:?}",
        a.lines
    );
    a.quest_event(&mut ann, LONG, |q| q.0 == "Rat Catcher")
        .await;

    eprintln!("step: a rat here, a rat in Plains on {plains_node}");
    a.kill_one(&mut ann, rat, LONG).await;
    a.quest_event(&mut ann, LONG, |q| q.1.contains(" 1 Rat"))
        .await;
    ann.command("warp Plains").await.unwrap();
    a.pump(&mut ann, Duration::from_secs(2)).await;
    assert_eq!(a.area, "Plains");
    a.kill_one(&mut ann, rat, LONG).await;
    a.quest_event(&mut ann, LONG, |q| q.1.starts_with("Return to"))
        .await;

    eprintln!("step: back to the rat catcher, the reward");
    ann.command("warp Test Zone").await.unwrap();
    a.pump(&mut ann, Duration::from_secs(2)).await;
    let gold = a.gold_gained;
    a.talk_near(&mut ann, catcher, post, &[1], LONG).await;
    a.quest_event(&mut ann, LONG, |q| q.0 == "Rat Catcher" && q.2)
        .await;
    a.pump(&mut ann, Duration::from_secs(1)).await;
    assert_eq!(a.gold_gained - gold, 100);
    let medal = world
        .items
        .iter()
        .find(|i| i.name == "Rat Catcher Medalion")
        .unwrap()
        .id;
    assert!(a.items_given.contains(&medal), "{:?}", a.items_given);
    ann.close(CloseCode::Normal).await;

    let (ann, _) = cluster_tests::login_like_client(c.gw.client_addr, "ann").await;
    assert!(
        ann.ui()
            .quest("Rat Catcher")
            .is_some_and(client::Quest::is_complete)
    );
    ann.close(CloseCode::Normal).await;
}

fn script_reply_refusals(admin: std::net::SocketAddr) -> u64 {
    cluster_tests::zone_rejections(admin, "script_reply")
}

/// While the elder's script waits for Ann's choice, a flood of wrong answers (an option it
/// does not offer, another script's handle, the wrong kind of answer, a progress bar and
/// input nobody asked for) is refused and counted on the node's `/metrics`; the waiting
/// script is unaffected and takes the real answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_answers_to_a_dialog_are_refused_counted_and_harmless() {
    use shared::proto::{ClientPacket, DialogC2S, ProgressBarC2S, ScriptInputC2S};
    let (c, admin) = Cluster::start_with_admin("quests-hostile").await;
    let (mut ann, g) = new_player(c.gw.client_addr, "ann").await;
    let mut a = Adventurer::new(&g);
    let dialog = a.until_options(&mut ann, ELDER, LONG).await;
    let script = ann.ui().dialog(dialog).unwrap().script;
    let base = tokio::task::spawn_blocking(move || script_reply_refusals(admin))
        .await
        .unwrap();
    let mut flood = Vec::new();
    for i in 0..50u32 {
        flood.push(ClientPacket::Dialog(DialogC2S::Chosen {
            script,
            option: 9,
        }));
        flood.push(ClientPacket::Dialog(DialogC2S::Chosen {
            script: script + 1000 + i,
            option: 1,
        }));
        flood.push(ClientPacket::Dialog(DialogC2S::TextShown { script }));
        flood.push(ClientPacket::ScriptInput(ScriptInputC2S {
            script,
            text: "hello".into(),
        }));
        flood.push(ClientPacket::ProgressBar(ProgressBarC2S::Created {
            script: i,
            bar: 0,
        }));
    }
    let want = flood.len() as u64;
    for p in &flood {
        ann.send(p).await.unwrap();
    }
    ann.flush().await.unwrap();
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut got = 0;
    while tokio::time::Instant::now() < deadline {
        got = tokio::task::spawn_blocking(move || script_reply_refusals(admin))
            .await
            .unwrap()
            - base;
        if got >= want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(got, want);
    // The script still waits for the real answer, and takes it.
    ann.choose(dialog, 1).await.unwrap();
    a.quest_event(&mut ann, LONG, |q| q.0 == QUEST).await;
    ann.close(CloseCode::Normal).await;
}
