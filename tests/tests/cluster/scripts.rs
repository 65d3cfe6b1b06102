//! A game's script on the cluster (issue 18): a `Persistent(1)` `WaitKill` quest started by
//! an In-game Command keeps counting after its player crosses to another zone node and
//! back, and after the node that hosts the player is killed: the player comes back from
//! its last checkpoint with the quest, which finishes on the surviving node. Also the demo
//! world's own `Death.rsl` (a `DoEvents` wait, then Health and a warp) runs on a node.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use client::{CloseCode, Event};
use cluster_tests::adventurer::Adventurer;
use cluster_tests::{Cluster, WAIT, login_again, new_player, temp_dir, walk_through};
use tokio::time::Instant;

/// Stag (passive) in the demo world.
const STAG: u16 = 2;

const QUEST: &str = "; A quest for the cluster test: three stags, counted wherever the player is.\r
Function Quest()\r
\tPersistent(1)\r
\tOutput(Actor(), \"quest: kill three stags\")\r
\tWaitKill(Actor(), 2, 1)\r
\tOutput(Actor(), \"quest: one down\")\r
\tWaitKill(Actor(), 2, 1)\r
\tOutput(Actor(), \"quest: two down\")\r
\tWaitKill(Actor(), 2, 1)\r
\tOutput(Actor(), \"quest: done on \" + ActorZone(Actor()))\r
End Function\r
";

/// The demo world with the quest in its `In-game Commands`, written to a folder.
fn quest_world(name: &str) -> std::path::PathBuf {
    let dir = temp_dir(&format!("{name}-world"));
    let world = shared::content::demo_world();
    shared::content::fs::write_native(&world, &dir).expect("the world is written");
    std::fs::write(dir.join("scripts").join("In-game Commands.rsl"), QUEST).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_kill_quest_survives_handoffs_and_a_node_loss() {
    let world_dir = quest_world("quest");
    let mut c = Cluster::start_with_world("quest", &[("n1", 1), ("n2", 64)], &world_dir).await;
    let world = shared::content::demo_world();
    let (meadow_node, portal) = c.portal_to_another_node(&world, "Meadow");
    let far = world.area_by_name(&portal.link_area).unwrap();
    let back = far
        .portals
        .iter()
        .find(|p| p.link_area == "Meadow" && !p.name.eq_ignore_ascii_case(&portal.link_name))
        .expect("a road back to Meadow")
        .clone();

    let (conn, _) = new_player(c.gw.client_addr, "ann").await;
    conn.close(CloseCode::Normal).await;
    c.make_dm("ann");
    let (mut ann, ga) = login_again(c.gw.client_addr, "ann").await;
    let mut h = Adventurer::new(&ga);
    ann.command("setattributemax Strength,1000").await.unwrap();
    ann.command("setattribute Strength,1000").await.unwrap();

    eprintln!("step: start the quest");
    ann.command("quest").await.unwrap();
    h.chat_line(&mut ann, "quest: kill three stags", WAIT).await;

    eprintln!("step: the first stag, on {meadow_node}");
    h.kill_one(&mut ann, STAG, Duration::from_secs(60)).await;
    h.chat_line(&mut ann, "quest: one down", WAIT).await;

    eprintln!(
        "step: over to {} and back (two cross-node handoffs)",
        far.name
    );
    let from = h.at;
    let to = (portal.x, portal.y, portal.z);
    h.at = walk_through(&mut ann, from, to, &far.name, |e| h.observe(e)).await;
    let arrived = h.at;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let to = (back.x, back.y, back.z);
    h.at = walk_through(&mut ann, arrived, to, "Meadow", |e| h.observe(e)).await;

    eprintln!("step: the second stag, after the handoffs");
    h.kill_one(&mut ann, STAG, Duration::from_secs(60)).await;
    h.chat_line(&mut ann, "quest: two down", WAIT).await;

    eprintln!("step: a checkpoint, then {meadow_node} dies");
    // A node with room to take Meadow over.
    c.spawn_node("n3");
    c.wait_for("n3 to register", |v| v.nodes.iter().any(|n| n.id == "n3"))
        .await;
    // Nodes checkpoint every 500 ms in these tests: wait for one with the second kill.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let saved = c.saved("ann");
    assert!(!saved.scripts.is_empty(), "the quest is in the checkpoint");
    let before = h.arrivals;
    c.kill(&meadow_node);
    // The gateway puts Ann back in Meadow, rebuilt on a survivor, from her checkpoint.
    let deadline = Instant::now() + Duration::from_secs(30);
    while h.arrivals == before || h.area != "Meadow" {
        assert!(Instant::now() < deadline, "Ann was not put back in Meadow");
        if let Ok(Ok(e)) = tokio::time::timeout(Duration::from_millis(200), ann.next_event()).await
        {
            h.observe(&e);
        }
    }
    assert!(c.owner("Meadow", 0).is_some_and(|(n, _)| n != meadow_node));

    eprintln!("step: the third stag, on the survivor");
    h.kill_one(&mut ann, STAG, Duration::from_secs(60)).await;
    let done = h.chat_line(&mut ann, "quest: done", WAIT).await;
    assert_eq!(done, "quest: done on Meadow");
    ann.close(CloseCode::Normal).await;
}

/// Realm Crafter's sample project, tried as a new user would: its `Login.rsl` runs at
/// login (files through the cluster's script store), `/wave` from its `In-game
/// Commands.rsl` animates the player, `/itempack` gives the sample's four items, and a
/// right-click on the trainer in Plains plays `Click_Trainer.rsl`'s dialog, whose option
/// "Fireball" teaches the sample's Fireball (kept after a re-login), and Fireball,
/// memorised and cast at the trainer, runs `Spell_Fireball.rsl`: the projectile, the
/// emitter two seconds later, then the recharge.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sample_projects_scripts_run_on_a_cluster() {
    let dir =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/rc-sample-data");
    if !dir.join("Scripts").is_dir() {
        eprintln!("skipped: {} is not there", dir.display());
        return;
    }
    let c = Cluster::start_with_world("sample", &[("n1", 64)], &dir).await;
    let (mut ann, ga) = new_player(c.gw.client_addr, "ann").await;
    assert_eq!(ga.area.area.as_bytes(), b"Plains");
    let me = ga.runtime_id;

    eprintln!("step: /wave");
    ann.command("wave").await.unwrap();
    let deadline = Instant::now() + WAIT;
    loop {
        assert!(Instant::now() < deadline, "no P_AnimateActor for /wave");
        let e = tokio::time::timeout(WAIT, ann.next_event())
            .await
            .unwrap()
            .unwrap();
        if let Event::Other(shared::proto::ServerPacket::AnimateActor(a)) = e
            && a.runtime_id == me
        {
            assert_eq!(a.animation.as_bytes(), b"Wave");
            break;
        }
    }

    eprintln!("step: /itempack");
    // `GiveItem` ×4: the sample's four items (Imperial Armor 0, Imperial Helmet 1, Scarred
    // Shield 2, Sword 3), each offered to the player ("G").
    ann.command("itempack").await.unwrap();
    let deadline = Instant::now() + WAIT;
    let mut given = std::collections::BTreeSet::new();
    while given.len() < 4 {
        assert!(Instant::now() < deadline, "items given: {given:?}");
        let e = tokio::time::timeout(WAIT, ann.next_event())
            .await
            .unwrap()
            .unwrap();
        if let Event::ItemOffered { item_id, .. } = e {
            given.insert(item_id);
        }
    }
    assert_eq!(given.into_iter().collect::<Vec<_>>(), vec![0, 1, 2, 3]);

    eprintln!("step: the trainer's dialog teaches Fireball");
    let world = shared::content::fs::load_world(&dir).unwrap().0;
    let plains = world.area_by_name("Plains").unwrap();
    let spawn = plains
        .spawns
        .iter()
        .find(|s| s.actor_script == "Click_Trainer")
        .expect("the sample's trainer spawn");
    let trainer_template = spawn.template;
    let post = plains
        .waypoints
        .iter()
        .find(|w| w.index == spawn.waypoint)
        .map(|w| (w.x, w.y, w.z));
    let mut a = Adventurer::new(&ga);
    a.talk_near(
        &mut ann,
        trainer_template,
        post,
        &[1],
        Duration::from_secs(40),
    )
    .await;
    assert!(
        a.lines
            .iter()
            .any(|l| l.contains("learn the fireball skill")),
        "{:?}\n{}",
        a.lines,
        c.log("n1")
    );
    // `AddAbility(Actor(), "FireBall", 1)`: P_KnownSpellUpdate "A" for the sample's spell 0.
    let deadline = Instant::now() + WAIT;
    while ann.spells().by_id(0).is_none() {
        assert!(Instant::now() < deadline, "Fireball was not learned");
        a.pump(&mut ann, Duration::from_millis(200)).await;
    }
    assert!(
        a.chat
            .iter()
            .any(|l| l.contains("You have learned this skill")),
        "{:?}",
        a.chat
    );
    // Login.rsl ran without an error (its league files went through the script store).
    assert!(!c.log("n1").contains("script=Login"), "{}", c.log("n1"));

    eprintln!("step: Fireball: memorised, cast at the trainer");
    // The sample's Spell_Fireball.rsl: Mana, the casting animation, the projectile, two
    // seconds, an emitter on the target and 30-60 damage.
    ann.close(CloseCode::Normal).await;
    c.make_dm("ann");
    let (mut ann, g) = cluster_tests::login_like_client(c.gw.client_addr, "ann").await;
    let me = g.runtime_id;
    for cmd in ["setattributemax Mana,50", "setattribute Mana,50"] {
        ann.command(cmd).await.unwrap();
    }
    // Learned from the trainer, saved with the character.
    assert!(
        ann.spells().by_id(0).is_some(),
        "Fireball is known after a re-login"
    );
    // The sample requires memorising: by the client's index, six seconds.
    assert!(ann.memorise(0).await.unwrap());
    let mut trainer: Option<(u16, (f32, f32, f32))> =
        g.packets
            .iter()
            .find_map(|i| match Event::from(i.packet.clone()) {
                Event::ActorAppeared {
                    runtime_id,
                    template_id,
                    position,
                    human: false,
                    ..
                } if template_id == trainer_template => Some((runtime_id, position)),
                _ => None,
            });
    let ready = Instant::now() + Duration::from_millis(6_500);
    while Instant::now() < ready {
        if let Ok(Ok(Event::ActorAppeared {
            runtime_id,
            template_id,
            position,
            human: false,
            ..
        })) = tokio::time::timeout_at(ready, ann.next_event()).await
            && template_id == trainer_template
        {
            trainer = Some((runtime_id, position));
        }
    }
    let (rid, (x, y, z)) = trainer.expect("the trainer is in view");
    ann.move_to(x + 1.0, y, z, false).unwrap();
    ann.cast(0, Some(rid)).await.unwrap();
    let deadline = Instant::now() + WAIT;
    let (mut projectile, mut emitter) = (false, false);
    while !(projectile && emitter) {
        assert!(
            Instant::now() < deadline,
            "projectile {projectile}, emitter {emitter}\n{}",
            c.log("n1")
        );
        let e = tokio::time::timeout(WAIT, ann.next_event())
            .await
            .unwrap()
            .unwrap();
        match e {
            Event::Other(shared::proto::ServerPacket::Projectile(p)) if p.source == me => {
                assert_eq!(p.target, rid);
                projectile = true;
            }
            Event::Other(shared::proto::ServerPacket::CreateEmitter(em))
                if em.runtime_id == rid =>
            {
                assert_eq!(em.emitter.as_bytes(), b"Waterfall");
                emitter = true;
            }
            _ => {}
        }
    }
    // It recharges for 8 s.
    ann.cast(0, Some(rid)).await.unwrap();
    let deadline = Instant::now() + WAIT;
    loop {
        assert!(Instant::now() < deadline, "no recharge refusal");
        let e = tokio::time::timeout(WAIT, ann.next_event())
            .await
            .unwrap()
            .unwrap();
        if let Event::Chat { text, .. } = e
            && text == "Ability not yet recharged!"
        {
            break;
        }
    }
    assert!(
        !c.log("n1").contains("Spell_Fireball.rsl:"),
        "{}",
        c.log("n1")
    );
    ann.close(CloseCode::Normal).await;
}
