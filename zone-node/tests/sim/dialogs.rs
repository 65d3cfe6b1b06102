//! Script windows and the quest log through `ZoneSim`: a right-click opens a dialog, the
//! client's answers resume the script (only the right answer from the right player; the
//! rest is counted as `script_reply`), text input and progress bars, timeouts, a warp that
//! closes the windows while the script carries on at the destination, the quest log with
//! its packets, and the demo world's quest giver and trainer played through.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use shared::proto::{
    ChatMessageS2C, DialogS2C, Packet, ProgressBarS2C, QUEST_COMPLETED, QuestLog, ScriptInputS2C,
};
use zone_node::sim::ZoneConfig;
use zone_node::sim::events::{PlayerAction, PlayerKey, Rejection, ScriptReply, ZoneOutput};
use zone_node::sim::kill;
use zone_node::sim::state::ActorId;
use zone_node::sim::testing::{
    SimHarness, content_with_scripts, demo_content, templates, test_content,
};

const TALK: &[u8] = b"Function Main()\n\
    P = Actor()\n\
    D = OpenDialog(P, ContextActor(), \"Trainer\")\n\
    DialogOutput(P, D, \"Hello\")\n\
    R = DialogInput(P, D, \"Yes,No\")\n\
    Output(P, \"chose \" + R)\n\
    CloseDialog(P, D)\n\
End Function\n";

const ASK: &[u8] = b"Function Main()\n\
    P = Actor()\n\
    N$ = Input(P, \"Name\", \"Your name?\", 1)\n\
    Output(P, \"got [\" + N$ + \"]\")\n\
    B = CreateProgressBar(P, 255, 0, 0, 0.1, 0.1, 0.5, 0.05, 10, 2, \"Work\")\n\
    UpdateProgressBar(P, B, 7)\n\
    DeleteProgressBar(P, B)\n\
    Output(P, \"bar \" + B)\n\
End Function\n";

const QUESTS: &[u8] = b"Function Main()\n\
    P = Actor()\n\
    NewQuest(P, \"Rats\", \"Kill 5\")\n\
    NewQuest(P, \"rats\", \"again\")\n\
    UpdateQuest(P, \"RATS\", \"Kill 4\", 10, 20, 30)\n\
    Output(P, \"status [\" + QuestStatus(P, \"Rats\") + \"] \" + QuestComplete(P, \"Rats\"))\n\
    NewQuest(P, \"Bears\", \"Kill 1\")\n\
    CompleteQuest(P, \"Bears\")\n\
    Output(P, \"bears \" + QuestComplete(P, \"Bears\"))\n\
    DeleteQuest(P, \"Rats\")\n\
    Output(P, \"gone [\" + QuestStatus(P, \"Rats\") + \"]\")\n\
End Function\n";

fn harness(cfg: ZoneConfig) -> SimHarness {
    SimHarness::with(
        cfg,
        content_with_scripts(
            test_content(),
            &[("Talk", TALK), ("Ask", ASK), ("Quests", QUESTS)],
        ),
    )
}

/// An NPC with a right-click script, next to the origin.
fn npc_with(h: &mut SimHarness, script: &str) -> ActorId {
    let n = h.spawn_npc(templates::HUMAN, 3.0, 0.0);
    h.actor_mut(n).script = script.into();
    n
}

/// Every packet of one kind sent to `p`, decoded.
fn sent<P: Packet>(h: &SimHarness, p: PlayerKey) -> Vec<P> {
    h.reliable_of(p, P::ID)
        .iter()
        .map(|b| P::decode_payload(b, &Default::default()).unwrap())
        .collect()
}

fn dialogs(h: &SimHarness, p: PlayerKey) -> Vec<DialogS2C> {
    sent(h, p)
}

/// `p` right-clicks `npc` (output cleared first), and its script runs.
fn click(h: &mut SimHarness, p: PlayerKey, npc: ActorId) {
    h.clear();
    let rid = h.actor(npc).rid;
    h.act(p, PlayerAction::RightClick { target: rid });
    h.run_ticks(2);
}

fn reply(h: &mut SimHarness, p: PlayerKey, r: ScriptReply) {
    h.act(p, PlayerAction::ScriptReply(r));
    h.tick();
}

fn rejected(h: &SimHarness) -> usize {
    h.rejections()
        .iter()
        .filter(|r| **r == Rejection::ScriptReply)
        .count()
}

/// Right-click `npc` and return the `hSI` of the dialog it opens.
fn open(h: &mut SimHarness, p: PlayerKey, npc: ActorId) -> u32 {
    h.clear();
    let rid = h.actor(npc).rid;
    h.act(p, PlayerAction::RightClick { target: rid });
    h.run_ticks(2);
    match dialogs(h, p).as_slice() {
        [DialogS2C::Open { script, title, .. }, ..] => {
            assert!(!title.as_bytes().is_empty());
            *script
        }
        other => panic!("no dialog opened: {other:?}"),
    }
}

/// Right-click a `Talk` NPC and answer up to its options (the client's window is 4).
fn to_options(h: &mut SimHarness, p: PlayerKey, npc: ActorId) -> u32 {
    let script = open(h, p, npc);
    reply(h, p, ScriptReply::DialogOpened { script, dialog: 4 });
    reply(h, p, ScriptReply::TextShown { script });
    script
}

#[test]
fn a_dialog_plays_through_and_only_the_right_answer_resumes_it() {
    let mut h = harness(ZoneConfig::default());
    let (ann, _) = h.spawn_player("Ann", 0.0, 0.0);
    let (bob, _) = h.spawn_player("Bob", 1.0, 0.0);
    let npc = npc_with(&mut h, "Talk");
    let npc_rid = h.actor(npc).rid;
    h.clear();
    h.act(ann, PlayerAction::RightClick { target: npc_rid });
    h.run_ticks(2);
    let d = dialogs(&h, ann);
    let script = match d.as_slice() {
        [
            DialogS2C::Open {
                script,
                context,
                background,
                title,
            },
        ] => {
            assert_eq!((*context, *background), (npc_rid, u16::MAX));
            assert_eq!(title.as_bytes(), b"Trainer");
            *script
        }
        other => panic!("{other:?}"),
    };
    // Bob cannot answer Ann's dialog; a wrong kind of answer changes nothing either.
    h.clear();
    reply(&mut h, bob, ScriptReply::DialogOpened { script, dialog: 9 });
    reply(&mut h, ann, ScriptReply::TextShown { script });
    assert_eq!(rejected(&h), 2);
    // Bob's window for a script that is not his is closed.
    assert_eq!(dialogs(&h, bob), vec![DialogS2C::Close { dialog: 9 }]);
    assert!(dialogs(&h, ann).is_empty());
    // Ann's client opened window 77: the text comes.
    h.clear();
    reply(
        &mut h,
        ann,
        ScriptReply::DialogOpened { script, dialog: 77 },
    );
    h.tick();
    assert!(matches!(
        dialogs(&h, ann).as_slice(),
        [DialogS2C::Text { dialog: 77, text, r: 255, g: 255, b: 255 }] if text.as_bytes() == b"Hello"
    ));
    h.clear();
    reply(&mut h, ann, ScriptReply::TextShown { script });
    h.tick();
    match dialogs(&h, ann).as_slice() {
        [
            DialogS2C::Options {
                dialog: 77,
                options,
            },
        ] => {
            let o: Vec<&[u8]> = options.iter().map(|o| o.as_bytes()).collect();
            assert_eq!(o, vec![&b"Yes"[..], b"No"]);
        }
        other => panic!("{other:?}"),
    }
    // Option 3 does not exist; 0 neither; a second open is not what it waits for.
    h.clear();
    reply(&mut h, ann, ScriptReply::Chosen { script, option: 3 });
    reply(&mut h, ann, ScriptReply::Chosen { script, option: 0 });
    reply(
        &mut h,
        ann,
        ScriptReply::DialogOpened { script, dialog: 78 },
    );
    assert_eq!(rejected(&h), 3);
    assert!(h.chat(ann).is_empty());
    reply(&mut h, ann, ScriptReply::Chosen { script, option: 2 });
    h.tick();
    assert!(
        h.chat(ann).iter().any(|l| l == "chose 2"),
        "{:?}",
        h.chat(ann)
    );
    assert!(dialogs(&h, ann).contains(&DialogS2C::Close { dialog: 77 }));
    // The script ended: a late answer is refused.
    h.clear();
    reply(&mut h, ann, ScriptReply::Chosen { script, option: 1 });
    assert_eq!(rejected(&h), 1);
    assert!(h.script_errors().is_empty(), "{:?}", h.script_errors());
}

#[test]
fn text_input_and_progress_bars() {
    let mut h = harness(ZoneConfig::default());
    let (ann, _) = h.spawn_player("Ann", 0.0, 0.0);
    let npc = npc_with(&mut h, "Ask");
    click(&mut h, ann, npc);
    let input: Vec<ScriptInputS2C> = sent(&h, ann);
    let script = match input.as_slice() {
        [i] => {
            assert_eq!((i.kind, i.title.as_bytes()), (1, &b"Name"[..]));
            assert_eq!(i.prompt.as_bytes(), b"Your name?");
            i.script
        }
        other => panic!("{other:?}"),
    };
    h.clear();
    // An empty answer is an answer (Realm Crafter kept waiting forever).
    reply(
        &mut h,
        ann,
        ScriptReply::Input {
            script,
            text: Vec::new(),
        },
    );
    h.tick();
    assert!(
        h.chat(ann).iter().any(|l| l == "got []"),
        "{:?}",
        h.chat(ann)
    );
    let bars: Vec<ProgressBarS2C> = sent(&h, ann);
    let script = match bars.as_slice() {
        [
            ProgressBarS2C::Create {
                script,
                max: 10,
                value: 2,
                label,
                ..
            },
        ] if label.as_bytes() == b"Work" => *script,
        other => panic!("{other:?}"),
    };
    h.clear();
    reply(&mut h, ann, ScriptReply::BarCreated { script, bar: 5 });
    h.tick();
    let bars: Vec<ProgressBarS2C> = sent(&h, ann);
    assert_eq!(
        bars,
        vec![
            ProgressBarS2C::Update { bar: 5, value: 7 },
            ProgressBarS2C::Delete { bar: 5 }
        ]
    );
    assert!(h.chat(ann).iter().any(|l| l == "bar 5"));
}

#[test]
fn an_unanswered_question_times_out_and_closes_its_window() {
    let cfg = ZoneConfig {
        script_reply_timeout_ms: 1000,
        ..ZoneConfig::default()
    };
    let mut h = harness(cfg);
    let (ann, _) = h.spawn_player("Ann", 0.0, 0.0);
    let npc = npc_with(&mut h, "Talk");
    to_options(&mut h, ann, npc);
    h.clear();
    // Nobody chooses: after the timeout the window closes and the script carries on.
    h.run_ticks(40);
    assert!(dialogs(&h, ann).contains(&DialogS2C::Close { dialog: 4 }));
    assert!(
        h.chat(ann).iter().any(|l| l == "chose 0"),
        "{:?}",
        h.chat(ann)
    );
    assert_eq!(h.sim.state().scripts.stats.reply_timeouts, 1);
}

#[test]
fn a_warp_closes_the_window_and_the_script_carries_on_at_the_destination() {
    let mut h = harness(ZoneConfig::default());
    let (ann, ann_id) = h.spawn_player("Ann", 0.0, 0.0);
    let npc = npc_with(&mut h, "Talk");
    to_options(&mut h, ann, npc);
    // Ann is offered the options and warps away instead.
    let state = h.set_area_out(ann_id, "Elsewhere");
    assert!(dialogs(&h, ann).contains(&DialogS2C::Close { dialog: 4 }));
    assert!(!state.scripts.is_empty(), "the script travels with her");
    // The destination resumes it: the lost answer reads as 0, and the dialog it names is
    // gone, so CloseDialog sends nothing there.
    let mut there = harness(ZoneConfig::default());
    let (ann2, _) = there.join(state, false);
    there.run_ticks(2);
    assert!(
        there.chat(ann2).iter().any(|l| l == "chose 0"),
        "{:?}",
        there.chat(ann2)
    );
    assert!(dialogs(&there, ann2).is_empty());
    assert!(there.script_errors().is_empty());
}

#[test]
fn the_quest_log_is_kept_sent_and_carried() {
    let mut h = harness(ZoneConfig::default());
    let (ann, ann_id) = h.spawn_player("Ann", 0.0, 0.0);
    let npc = npc_with(&mut h, "Quests");
    click(&mut h, ann, npc);
    let log: Vec<QuestLog> = sent(&h, ann);
    let s = |b: &[u8]| shared::wire::RcString(b.to_vec());
    assert_eq!(
        log,
        vec![
            QuestLog::New {
                name: s(b"Rats"),
                status: s(b"\xff\xff\xffKill 5")
            },
            QuestLog::Update {
                name: s(b"RATS"),
                status: s(b"\x0a\x14\x1eKill 4")
            },
            QuestLog::New {
                name: s(b"Bears"),
                status: s(b"\xff\xff\xffKill 1")
            },
            QuestLog::Update {
                name: s(b"BEARS"),
                status: s(&QUEST_COMPLETED)
            },
            QuestLog::Delete { name: s(b"RATS") },
        ]
    );
    let chat = h.chat(ann);
    assert!(chat.iter().any(|l| l == "status [Kill 4] 0"), "{chat:?}");
    assert!(chat.iter().any(|l| l == "bears 1"), "{chat:?}");
    assert!(chat.iter().any(|l| l == "gone []"), "{chat:?}");
    // Saved with the character and carried in the handoff.
    let state = h.set_area_out(ann_id, "Elsewhere");
    assert_eq!(state.quests.len(), 1);
    assert_eq!(state.quests[0].0, "Bears");
}

#[test]
fn examine_answers_with_the_default_line_and_refuses_far_targets() {
    let mut h = harness(ZoneConfig::default());
    let (ann, _) = h.spawn_player("Ann", 0.0, 0.0);
    let near = h.spawn_npc(templates::HUMAN, 3.0, 0.0);
    let far = h.spawn_npc(templates::HUMAN, 60.0, 0.0);
    h.clear();
    let (near_rid, far_rid) = (h.actor(near).rid, h.actor(far).rid);
    h.act(ann, PlayerAction::Examine { target: near_rid });
    h.act(ann, PlayerAction::Examine { target: far_rid });
    h.act(ann, PlayerAction::Examine { target: 60_000 });
    h.tick();
    let lines: Vec<ChatMessageS2C> = sent(&h, ann);
    assert_eq!(lines.len(), 1);
    assert!(lines[0].text.as_bytes().starts_with(b"This is a "));
    assert_eq!(
        h.rejections()
            .iter()
            .filter(|r| matches!(r, Rejection::Invalid | Rejection::UnknownTarget))
            .count(),
        2
    );
}

/// Answer every window the demo's NPC scripts open, choosing `choice` whenever options come;
/// returns the chat lines seen.
fn talk(h: &mut SimHarness, p: PlayerKey, npc: ActorId, choice: u8) -> Vec<String> {
    let mut chat = Vec::new();
    h.clear();
    let rid = h.actor(npc).rid;
    h.act(p, PlayerAction::RightClick { target: rid });
    let mut next_dialog = 100;
    for _ in 0..40 {
        h.tick();
        let ds = dialogs(h, p);
        chat.extend(h.chat(p));
        h.clear();
        for d in ds {
            match d {
                DialogS2C::Open { script, .. } => {
                    next_dialog += 1;
                    h.act(
                        p,
                        PlayerAction::ScriptReply(ScriptReply::DialogOpened {
                            script,
                            dialog: next_dialog,
                        }),
                    );
                }
                DialogS2C::Text { text, .. } => {
                    chat.push(String::from_utf8_lossy(text.as_bytes()).into_owned());
                    let script = script_of(h);
                    h.act(
                        p,
                        PlayerAction::ScriptReply(ScriptReply::TextShown { script }),
                    );
                }
                DialogS2C::Options { .. } => {
                    let script = script_of(h);
                    h.act(
                        p,
                        PlayerAction::ScriptReply(ScriptReply::Chosen {
                            script,
                            option: choice,
                        }),
                    );
                }
                DialogS2C::Close { .. } => {}
            }
        }
    }
    chat
}

/// The one instance waiting for a client answer (the demo talks one at a time).
fn script_of(h: &SimHarness) -> u32 {
    let st = h.sim.state();
    let ids: Vec<u64> = st
        .scripts
        .instances
        .iter()
        .filter(|(_, i)| i.cx.reply.is_some())
        .map(|(id, _)| *id)
        .collect();
    u32::try_from(ids[0]).unwrap()
}

fn template_npc(h: &SimHarness, race: &str, class: &str) -> ActorId {
    let st = h.sim.state();
    let t = st
        .content
        .world
        .actors
        .iter()
        .find(|t| t.race == race && t.class == class)
        .unwrap()
        .id;
    (0..st.slab_len())
        .filter_map(|i| st.at(i))
        .find(|a| a.template == t && !a.is_player())
        .map(|a| a.id)
        .expect("the demo spawns it")
}

#[test]
fn the_demo_quest_giver_and_trainer_play_through() {
    let mut h = SimHarness::with(ZoneConfig::default(), demo_content("Meadow"));
    // The spawn points fill (every 5 s).
    h.run_ticks(400);
    let mut state = h.new_character("Ann");
    state.x = -3.0;
    state.z = 3.0;
    state.gold = 30;
    let (ann, ann_id) = h.join(state, false);
    h.run_ticks(5);
    let elder = template_npc(&h, "Human", "Elder");
    let trainer = template_npc(&h, "Human", "Trainer");
    // The trainer teaches Swiftness for 20 gold.
    let chat = talk(&mut h, ann, trainer, 1);
    assert!(chat.iter().any(|l| l.contains("Swiftness")), "{chat:?}");
    assert!(
        zone_node::sim::spells::spell_id(h.sim.state(), "Swiftness")
            .ok()
            .and_then(|s| zone_node::sim::spells::known(h.sim.state(), ann_id, s))
            .is_some(),
        "{chat:?}"
    );
    assert_eq!(h.actor(ann_id).gold, 10);
    // The elder's quest: accept, kill two goblins, return, get the reward.
    let chat = talk(&mut h, ann, elder, 1);
    assert!(chat.iter().any(|l| l.contains("Goblin")), "{chat:?}");
    let quests = |h: &SimHarness| h.actor(ann_id).player_data.as_ref().unwrap().quests.clone();
    assert_eq!(quests(&h)[0].0, "Goblin Trouble");
    for _ in 0..2 {
        let g = h.spawn_npc(3, 40.0, 40.0);
        kill::kill_actor(h.sim.state_mut(), g, Some(ann_id));
        h.run_ticks(3);
    }
    assert!(
        quests(&h)[0].1.ends_with("Return to Elder Maren"),
        "{:?}",
        quests(&h)
    );
    let xp = h.actor(ann_id).xp;
    let chat = talk(&mut h, ann, elder, 1);
    assert!(
        chat.iter().any(|l| l.contains("Quest complete")),
        "{chat:?}"
    );
    assert_eq!(quests(&h)[0].1.chars().count(), 4, "the Completed marker");
    assert!(h.actor(ann_id).xp > xp || h.actor(ann_id).level > 1);
    assert_eq!(h.actor(ann_id).gold, 60);
    assert!(h.script_errors().is_empty(), "{:?}", h.script_errors());
}

#[test]
fn after_a_node_loss_the_checkpointed_window_is_closed_and_the_script_carries_on() {
    let cfg = ZoneConfig {
        persist_every_ms: 100,
        ..ZoneConfig::default()
    };
    let mut h = harness(cfg);
    let (ann, _) = h.spawn_player("Ann", 0.0, 0.0);
    let npc = npc_with(&mut h, "Talk");
    to_options(&mut h, ann, npc);
    // A periodic checkpoint while the options wait for Ann.
    h.clear();
    h.run_ticks(6);
    let state = h
        .outputs
        .iter()
        .find_map(|o| match o {
            ZoneOutput::Persist(s) if s.player == ann => Some(s.state.clone()),
            ZoneOutput::Checkpoint(c) => c
                .players
                .iter()
                .find(|s| s.player == ann)
                .map(|s| s.state.clone()),
            _ => None,
        })
        .expect("a checkpoint");
    // The node dies; Ann is put back from the checkpoint on another one.
    let mut there = harness(ZoneConfig::default());
    let (ann2, _) = there.join(state, false);
    there.run_ticks(2);
    assert!(dialogs(&there, ann2).contains(&DialogS2C::Close { dialog: 4 }));
    assert!(
        there.chat(ann2).iter().any(|l| l == "chose 0"),
        "{:?}",
        there.chat(ann2)
    );
}
