//! A live script reload on a running cluster (issue 39, `RefreshScripts`): a `WaitKill`
//! quest started on the old code keeps waiting through a refused reload and an applied
//! one, crosses to another zone node while suspended, and finishes on the code it
//! started with; the next run, on that other node, is the new code. An environment
//! variable a script `SetEnv`s on one node is what `GetEnv` reads on the other, and a
//! player on the other node is found by name (`FindActor`), told a line (`Output`) and
//! asked about (`Name`, `ActorZone`, `ActorLevel`, answered by its zone there); a `Spawn`
//! into an instance nobody runs starts it and puts the NPC there.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use client::CloseCode;
use cluster_tests::adventurer::Adventurer;
use cluster_tests::{Cluster, WAIT, login_again, new_player, temp_dir, walk_through};

/// Stag (passive) in the demo world.
const STAG: u16 = 2;
const TOKEN: &str = "reload-admin-token-0123456789abcdef";

fn quest(tag: &str) -> String {
    format!(
        "Function Quest()\r\n\tPersistent(1)\r\n\tOutput(Actor(), \"{tag}: kill a stag\")\r\n\
         \tWaitKill(Actor(), 2, 1)\r\n\tOutput(Actor(), \"{tag}: done on \" + ActorZone(Actor()))\r\n\
         End Function\r\n\
         Function Env()\r\n\tSetEnv(\"Mood\", \"merry\")\r\nEnd Function\r\n\
         Function Where()\r\n\tOutput(Actor(), \"env: \" + GetEnv(\"Mood\"))\r\nEnd Function\r\n\
         Function Call()\r\n\tP = FindActor(\"bob\", 1)\r\n\tOutput(Actor(), \"found \" + (P > 0))\r\n\
         \tOutput(P, \"psst from \" + ActorZone(Actor()))\r\n\
         \tOutput(Actor(), \"asked: \" + Name(P) + \" in \" + ActorZone(P) + \" level \" + ActorLevel(P))\r\n\
         End Function\r\n\
         Function Summon()\r\n\tH = Spawn(2, \"Lakeshore\", 10, 0, 10, \"\", \"\", 3)\r\n\
         \tOutput(Actor(), \"spawned \" + (H > 0))\r\nEnd Function\r\n{LOOT}{WALK}"
    )
}

/// A walk of another instance (Lakeshore #3, the summoned stag alone there, on another
/// node): its actors listed by its zone, the stag renamed there and asked its name; and
/// a stack of 2 potions put on that instance's ground.
const WALK: &str = "Function Census()\r\n\tA = FirstActorInZone(\"Lakeshore\", 3)\r\n\
    \tSpawnItem(\"Healing Potion\", 2, \"Lakeshore\", 12, 0, 12, 3)\r\n\
    \tSetName(A, \"Hart\")\r\n\
    \tOutput(Actor(), \"walk \" + (A > 0) + (NextActorInZone(A) = A) + \" \" + Name(A))\r\n\
    End Function\r\n";

/// A chest's loot split among the party, wherever its members are: 3 potions and 40 gold
/// to each other member, 2 potions to the opener; then the first member is warped here and
/// given one more potion while that handoff is under way (the gateway delivers it again
/// until the zone that has him takes it). Everyone starts with 3 potions (`Login.rsl`):
/// the member ends with 3 + 3 + 1, the opener with 3 + 2.
const LOOT: &str = "Function Loot()\r\n\tN = CountPartyMembers(Actor())\r\n\
    \tP = PartyMember(Actor(), 1)\r\n\tG = Gold(P)\r\n\
    \tFor I = 1 To N\r\n\t\tM = PartyMember(Actor(), I)\r\n\
    \t\tGiveItem(M, \"Healing Potion\", 3)\r\n\t\tChangeGold(M, 40)\r\n\tNext\r\n\
    \tGiveItem(Actor(), \"Healing Potion\", 2)\r\n\
    \tOutput(Actor(), \"split \" + N + \" in \" + ActorZone(P) + \": gold +\" + (Gold(P) - G) + \" potions \" + HasItem(P, \"Healing Potion\", 6) + HasItem(P, \"Healing Potion\", 7))\r\n\
    \tWarp(P, ActorZone(Actor()), \"\", 0)\r\n\tGiveItem(P, \"Healing Potion\", 1)\r\n\
    \tOutput(Actor(), \"warped to \" + ActorZone(P) + \": potions \" + HasItem(P, \"Healing Potion\", 7) + HasItem(P, \"Healing Potion\", 8) + \" mine \" + HasItem(Actor(), \"Healing Potion\", 5) + HasItem(Actor(), \"Healing Potion\", 6))\r\n\
    End Function\r\n";

/// `POST /admin` with the token and a JSON command; the status and the answer.
fn admin(addr: SocketAddr, json: &str) -> (u16, String) {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "POST /admin HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{json}",
        json.len()
    )
    .unwrap();
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, body.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_lets_a_travelling_quest_finish_on_its_code_and_new_runs_use_the_new() {
    let dir = temp_dir("reload-world");
    let world = shared::content::demo_world();
    shared::content::fs::write_native(&world, &dir).expect("the world is written");
    let commands = dir.join("scripts").join("In-game Commands.rsl");
    std::fs::write(&commands, quest("old")).unwrap();
    let c = Cluster::start_with_world_and("reload", &[("n1", 1), ("n2", 64)], &dir, |cfg| {
        cfg.admin_token = TOKEN.into();
    })
    .await;
    let admin_addr = c.gw.admin_addr;
    let (meadow_node, portal) = c.portal_to_another_node(&world, "Meadow");

    let (conn, _) = new_player(c.gw.client_addr, "ann").await;
    conn.close(CloseCode::Normal).await;
    c.make_dm("ann");
    let (mut ann, ga) = login_again(c.gw.client_addr, "ann").await;
    let mut h = Adventurer::new(&ga);
    // Bob stays in Meadow, on its node.
    let (mut bob, _) = new_player(c.gw.client_addr, "bob").await;
    ann.command("setattributemax Strength,1000").await.unwrap();
    ann.command("setattribute Strength,1000").await.unwrap();

    eprintln!("step: the old quest starts on {meadow_node}");
    ann.command("quest").await.unwrap();
    h.chat_line(&mut ann, "old: kill a stag", WAIT).await;

    // The cluster's environment: set on this node, read on the other one below.
    ann.command("env").await.unwrap();

    eprintln!("step: a reload of scripts that do not compile is refused, nothing changes");
    std::fs::write(
        &commands,
        "Function Quest()\r\n\tOutput(Actor(), \"broken\"\r\nEnd Function\r\n",
    )
    .unwrap();
    let (status, answer) =
        tokio::task::spawn_blocking(move || admin(admin_addr, r#"{"command":"reload_scripts"}"#))
            .await
            .unwrap();
    assert_ne!(status, 200, "{answer}");
    assert!(
        answer.contains("refused") && answer.contains("In-game Commands.rsl:2"),
        "{answer}"
    );

    eprintln!("step: the new quest is reloaded on every node");
    std::fs::write(&commands, quest("new")).unwrap();
    let (status, answer) =
        tokio::task::spawn_blocking(move || admin(admin_addr, r#"{"command":"reload_scripts"}"#))
            .await
            .unwrap();
    assert_eq!(status, 200, "{answer}");
    assert!(
        answer.contains("reloaded") && answer.contains("2 node"),
        "{answer}"
    );

    eprintln!(
        "step: over to {} with the old quest waiting",
        portal.link_area
    );
    let from = h.at;
    let to = (portal.x, portal.y, portal.z);
    h.at = walk_through(&mut ann, from, to, &portal.link_area, |e| h.observe(e)).await;
    assert!(
        c.owner(&portal.link_area, 0)
            .is_some_and(|(n, _)| n != meadow_node)
    );

    ann.command("where").await.unwrap();
    h.chat_line(&mut ann, "env: merry", WAIT).await;
    // A player on the other node, found by name, told a line.
    ann.command("call").await.unwrap();
    h.chat_line(&mut ann, "found 1", WAIT).await;
    // Queries on him, answered by his zone on the other node.
    let asked = h.chat_line(&mut ann, "asked: ", WAIT).await;
    assert_eq!(asked, "asked: bob in Meadow level 1");
    // A stag in an instance nobody runs yet: it is started, and the stag is there.
    ann.command("summon").await.unwrap();
    h.chat_line(&mut ann, "spawned 1", WAIT).await;
    c.wait_for("Lakeshore #3 with the stag", |v| {
        v.nodes
            .iter()
            .flat_map(|n| &n.instances)
            .any(|i| i.area == "Lakeshore" && i.instance == 3 && i.npcs >= 1)
    })
    .await;
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        assert!(std::time::Instant::now() < deadline, "Bob was not told");
        if let Ok(Ok(client::Event::Chat { text, .. })) =
            tokio::time::timeout(Duration::from_millis(500), bob.next_event()).await
            && text.contains("psst from ")
        {
            assert_eq!(text, format!("psst from {}", portal.link_area));
            break;
        }
    }

    eprintln!("step: a walk of that other instance");
    ann.command("census").await.unwrap();
    let walk = h.chat_line(&mut ann, "walk ", WAIT).await;
    assert_eq!(walk, "walk 11 Hart");
    let key = shared::internal::InstanceKey {
        area: "Lakeshore".into(),
        instance: 3,
    };
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let there =
            c.gw.shared()
                .ground()
                .get(&key)
                .is_some_and(|g| g.iter().any(|i| i.item.amount == 2));
        if there {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the potions are not on Lakeshore #3's ground"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    eprintln!("step: loot split among a party spread over two nodes");
    ann.command("invite bob").await.unwrap();
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        assert!(std::time::Instant::now() < deadline, "Bob was not invited");
        if let Ok(Ok(client::Event::Chat { text, .. })) =
            tokio::time::timeout(Duration::from_millis(500), bob.next_event()).await
            && text.contains("invited you")
        {
            break;
        }
    }
    bob.command("accept").await.unwrap();
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        assert!(std::time::Instant::now() < deadline, "no party");
        if let Ok(Ok(client::Event::Other(shared::proto::ServerPacket::PartyUpdate(u)))) =
            tokio::time::timeout(Duration::from_millis(500), bob.next_event()).await
            && !u.members.is_empty()
        {
            break;
        }
    }
    h.pump(&mut ann, Duration::from_millis(500)).await;
    ann.command("loot").await.unwrap();
    let split = h.chat_line(&mut ann, "split ", WAIT).await;
    assert_eq!(split, "split 1 in Meadow: gold +40 potions 10", "{split}");
    let warped = h.chat_line(&mut ann, "warped to ", WAIT).await;
    assert_eq!(
        warped,
        format!("warped to {}: potions 10 mine 10", portal.link_area),
        "every item once, none lost or doubled across the handoff"
    );

    eprintln!("step: a stag: the old quest ends on its own code");
    // (The hunt may lead back through a portal: where it ends does not matter, only that
    // the quest crossed to another node after the reload, suspended, and kept its code.)
    h.kill_one(&mut ann, STAG, Duration::from_secs(60)).await;
    let done = h.chat_line(&mut ann, "old: done", WAIT).await;
    assert!(done.starts_with("old: done on "), "{done}");

    eprintln!("step: a new run there is the new quest");
    ann.command("quest").await.unwrap();
    h.chat_line(&mut ann, "new: kill a stag", WAIT).await;
    ann.close(CloseCode::Normal).await;
    bob.close(CloseCode::Normal).await;
}
