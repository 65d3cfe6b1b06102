//! A script's action on a player another node hosts survives that node's loss (issue 39):
//! the hosting zone took a `GiveItem`, and its node is killed before any checkpoint saved
//! it. The player comes back from his last save on the surviving node, and the gateway
//! delivers the action again to the zone that takes him over: he ends with the items
//! exactly once, not lost with the node and not given twice.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use client::CloseCode;
use cluster_tests::adventurer::Adventurer;
use cluster_tests::{Cluster, WAIT, new_player, next_change_area, temp_dir, walk_through};

/// Five potions to Bob, wherever he is; and how many he has (everyone starts with 3,
/// `Login.rsl`: 8 after one gift, 13 after two).
const COMMANDS: &str = "Function Gift()\r\n\tP = FindActor(\"bob\", 1)\r\n\
    \tGiveItem(P, \"Healing Potion\", 5)\r\n\tOutput(Actor(), \"given \" + (P > 0))\r\nEnd Function\r\n\
    Function Tally()\r\n\tP = FindActor(\"bob\", 1)\r\n\
    \tOutput(Actor(), \"bob \" + HasItem(P, \"Healing Potion\", 1) + HasItem(P, \"Healing Potion\", 8) + HasItem(P, \"Healing Potion\", 9))\r\n\
    End Function\r\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_action_taken_on_a_lost_node_is_delivered_again_and_taken_once() {
    let dir = temp_dir("actions-world");
    let world = shared::content::demo_world();
    shared::content::fs::write_native(&world, &dir).expect("the world is written");
    std::fs::write(dir.join("scripts").join("In-game Commands.rsl"), COMMANDS).unwrap();
    // Checkpoints far apart: the node is killed between the action and the next one.
    let mut c = Cluster::start_with_world_env(
        "actions",
        &[("n1", 1), ("n2", 64)],
        &dir,
        &[("ZONE_NODE_PERSIST_EVERY_MS", "4000")],
    )
    .await;
    let (meadow_node, portal) = c.portal_to_another_node(&world, "Meadow");
    let (mut bob, _) = new_player(c.gw.client_addr, "bob").await;
    let (mut ann, ga) = new_player(c.gw.client_addr, "ann").await;
    let mut h = Adventurer::new(&ga);
    let from = h.at;
    h.at = walk_through(
        &mut ann,
        from,
        (portal.x, portal.y, portal.z),
        &portal.link_area,
        |e| h.observe(e),
    )
    .await;
    // Bob's first save (with Login.rsl's potions) is in.
    let deadline = std::time::Instant::now() + WAIT;
    let potion = world
        .items
        .iter()
        .find(|i| i.name == "Healing Potion")
        .map(|i| i.id)
        .unwrap();
    let count = |s: &shared::internal::ActorStateDto| {
        s.inventory
            .iter()
            .flatten()
            .filter(|i| i.item == potion)
            .map(|i| u32::from(i.amount))
            .sum::<u32>()
    };
    while count(&c.saved("bob")) != 3 {
        assert!(std::time::Instant::now() < deadline, "Bob was not saved");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // A node to take Bob's area over.
    c.spawn_node("n3");
    c.wait_for("n3 to register", |v| v.nodes.iter().any(|n| n.id == "n3"))
        .await;

    eprintln!("step: Ann, on another node, gives Bob five potions; his node dies at once");
    ann.command("gift").await.unwrap();
    h.chat_line(&mut ann, "given 1", WAIT).await;
    c.kill(&meadow_node);
    assert!(
        next_change_area(&mut bob, Duration::from_secs(15))
            .await
            .is_some(),
        "Bob was put back"
    );
    // Asked again until the gift is there: a query while his new zone is still taking
    // him in finds no one ("bob 000"), one before the gift is delivered again sees his
    // saved potions only ("bob 100"); twice the gift would read "bob 111".
    let deadline = std::time::Instant::now() + WAIT;
    let line = loop {
        ann.command("tally").await.unwrap();
        let line = h.chat_line(&mut ann, "bob ", WAIT).await;
        if !["bob 000", "bob 100"].contains(&line.as_str()) || std::time::Instant::now() > deadline
        {
            break line;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(line, "bob 110", "eight potions: the gift once");

    eprintln!("step: his save after logging out holds them once");
    bob.close(CloseCode::Normal).await;
    let deadline = std::time::Instant::now() + WAIT;
    while c.online("bob") {
        assert!(std::time::Instant::now() < deadline, "Bob did not log out");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(count(&c.saved("bob")), 8, "saved once");
    ann.close(CloseCode::Normal).await;
}
