//! Abilities through `ZoneSim`: learn → memorise → cast → recharge → script, with
//! `P_KnownSpellUpdate` to the owner, the client's own numbering for `"M"`/`"U"`, the
//! refusals (unknown, unlearned, unmemorised, recharging, out of range, excluded, too
//! soon) counted as `spell_refused`, and the ability state across a handoff and a logout.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::float_cmp)]

use std::sync::Arc;

use shared::content::Spell;
use shared::proto::{KnownSpellUpdate, Packet, SpellUpdate};
use zone_node::sim::ZoneConfig;
use zone_node::sim::area::ZoneContent;
use zone_node::sim::events::{MEMORISED_EMPTY, PlayerAction, PlayerKey, Rejection, ZoneInput};
use zone_node::sim::spells::{self, cast, memorise};
use zone_node::sim::state::ActorId;
use zone_node::sim::testing::{SimHarness, content_with_scripts, demo_content, test_content};

/// A transfer id as a source zone mints it.
fn tx(serial: u32) -> zone_node::sim::TransferId {
    zone_node::sim::TransferId {
        block: 1,
        minter: 1,
        serial,
    }
}

const P_KNOWN_SPELL_UPDATE: u8 = 26;

/// Records each cast as a line to the caster: `cast <target name> <level>`.
const BOLT: &[u8] = b"Function Main()\n\
    T = ContextActor()\n\
    N$ = \"none\"\n\
    If T <> 0 Then N$ = Name(T)\n\
    Output(Actor(), \"cast \" + N$ + \" \" + Parameter(1))\n\
End Function\n";

/// Three spells: Bolt (id 0, 1 s recharge), Heal (id 1, no script), Elfsong (id 2, elves
/// only).
fn spell_content(require_memorise: bool, range: Option<f32>) -> ZoneContent {
    let mut c = content_with_scripts(test_content(), &[("Bolt", BOLT)]);
    let mut w = (*c.world).clone();
    w.spells = vec![
        Spell {
            id: 0,
            name: "Bolt".into(),
            description: "Zap".into(),
            thumbnail: 15,
            recharge_ms: 1000,
            script: "Bolt".into(),
            ..Spell::default()
        },
        Spell {
            id: 1,
            name: "Heal".into(),
            recharge_ms: 70_000,
            ..Spell::default()
        },
        Spell {
            id: 2,
            name: "Elfsong".into(),
            exclusive_race: "Elf".into(),
            script: "Bolt".into(),
            ..Spell::default()
        },
    ];
    c.world = Arc::new(w);
    c.rules.require_memorise = require_memorise;
    c.rules.cast_range = range;
    c
}

fn harness(require_memorise: bool, range: Option<f32>) -> SimHarness {
    SimHarness::with(
        ZoneConfig::default(),
        spell_content(require_memorise, range),
    )
}

fn known_packets(h: &SimHarness, p: PlayerKey) -> Vec<KnownSpellUpdate> {
    h.reliable_of(p, P_KNOWN_SPELL_UPDATE)
        .iter()
        .map(|b| KnownSpellUpdate::decode_payload(b, &Default::default()).unwrap())
        .collect()
}

fn spell(h: &mut SimHarness, p: PlayerKey, s: SpellUpdate) {
    h.act(p, PlayerAction::Spell(s));
    h.tick();
}

fn fire(h: &mut SimHarness, p: PlayerKey, spell_id: u16, target: Option<u16>) {
    spell(h, p, SpellUpdate::Fire { spell_id, target });
}

fn refusals(h: &SimHarness) -> usize {
    h.rejections()
        .iter()
        .filter(|r| **r == Rejection::SpellRefused)
        .count()
}

fn casts(h: &SimHarness, p: PlayerKey) -> Vec<String> {
    h.chat(p)
        .into_iter()
        .filter(|l| l.starts_with("cast "))
        .collect()
}

fn learn(h: &mut SimHarness, id: ActorId, name: &str, level: i64) {
    let st = h.sim.state_mut();
    let s = spells::spell_id(st, name).unwrap();
    assert!(spells::learn(st, id, s, level).unwrap());
}

/// The whole path with RequireMemorise: learn ("A" to the owner), memorise by the
/// client's index (6 s, nothing sent), cast with a target (the script gets caster,
/// target and level), refused while recharging with Realm Crafter's line, cast again
/// once the recharge is over.
#[test]
fn learn_memorise_cast_recharge_script() {
    let mut h = harness(true, Some(300.0));
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    let (_, bob) = h.spawn_player("Bob", 10.0, 0.0);
    let bob_rid = h.actor(bob).rid;
    h.clear();
    learn(&mut h, pid, "bolt", 3);
    h.tick();
    let pk = known_packets(&h, p);
    match &pk[..] {
        [KnownSpellUpdate::Added { spell }] => {
            assert_eq!((spell.level, spell.id, spell.thumb), (3, 0, 15));
            assert_eq!(spell.recharge, 1000);
            assert_eq!(spell.name.as_bytes(), b"Bolt");
            assert_eq!(spell.memorised, 0);
        }
        o => panic!("{o:?}"),
    }
    // Not memorised yet: refused, no script.
    h.clear();
    fire(&mut h, p, 0, Some(bob_rid));
    assert_eq!(refusals(&h), 1);
    assert!(casts(&h, p).is_empty());
    // Memorise the client's index 0: done after 6 s, not before.
    spell(&mut h, p, SpellUpdate::Memorise { index: 0 });
    h.run_ticks(150); // ~5 s
    assert!(!spells::is_memorised(h.sim.state(), pid, 0));
    h.run_ticks(40);
    assert!(spells::is_memorised(h.sim.state(), pid, 0));
    assert_eq!(h.actor(pid).memorised[0], 0);
    // Cast: the script runs with target and level.
    h.clear();
    fire(&mut h, p, 0, Some(bob_rid));
    h.tick();
    assert_eq!(casts(&h, p), vec!["cast Bob 3".to_owned()]);
    assert_eq!(refusals(&h), 0);
    // Recharging: refused with the line, no script.
    h.clear();
    h.run_ticks(5);
    fire(&mut h, p, 0, Some(bob_rid));
    h.tick();
    assert!(casts(&h, p).is_empty());
    assert!(h.chat(p).iter().any(|l| l == cast::NOT_RECHARGED));
    assert_eq!(refusals(&h), 1);
    // 1 s after the cast it is ready again (no tick overshoot: 33 ms ticks).
    h.run_ticks(25);
    h.clear();
    fire(&mut h, p, 0, None);
    h.tick();
    assert_eq!(casts(&h, p), vec!["cast none 3".to_owned()]);
}

/// The recharge lasts the spell's RechargeTime: 1000 ms is over after 1000 ms at any
/// tick length, even with a slow tick in between.
#[test]
fn recharge_is_exact_at_any_tick_length() {
    for step in [10, 33, 50, 150, 400] {
        let mut h = harness(false, None);
        h.step = step;
        let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
        learn(&mut h, pid, "Bolt", 1);
        h.tick();
        fire(&mut h, p, 0, None);
        let cast_at = h.sim.state().now_ms;
        let mut ready_at = None;
        for _ in 0..200 {
            h.tick();
            if spells::known(h.sim.state(), pid, 0).unwrap().charge_ms <= 0 {
                ready_at = Some(h.sim.state().now_ms);
                break;
            }
        }
        let waited = ready_at.unwrap() - cast_at;
        assert!(
            (1000..1000 + step + 100).contains(&waited),
            "step {step}: ready after {waited} ms"
        );
    }
}

/// Every refusal is counted and runs nothing: unknown spell, unlearned, out of range,
/// excluded race (with its line), too soon after a cast, a dead target makes the cast
/// untargeted.
#[test]
fn bad_casts_are_refused_and_counted() {
    let mut h = harness(false, Some(50.0));
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    let (_, far) = h.spawn_player("Far", 200.0, 0.0);
    let far_rid = h.actor(far).rid;
    learn(&mut h, pid, "Bolt", 1);
    learn(&mut h, pid, "Elfsong", 1);
    h.tick();
    h.clear();
    fire(&mut h, p, 99, None); // no such spell
    fire(&mut h, p, 1, None); // not learned
    fire(&mut h, p, 0, Some(far_rid)); // out of range
    fire(&mut h, p, 2, None); // elves only
    h.tick();
    assert_eq!(refusals(&h), 4);
    assert!(casts(&h, p).is_empty());
    let chat = h.chat(p);
    assert!(chat.iter().any(|l| l == cast::OUT_OF_RANGE), "{chat:?}");
    assert!(chat.iter().any(|l| l == "Elf only"), "{chat:?}");
    // Out of range did not start the recharge.
    assert_eq!(spells::known(h.sim.state(), pid, 0).unwrap().charge_ms, 0);
    // A target that is not here: the cast goes untargeted (V1).
    h.clear();
    fire(&mut h, p, 0, Some(4321));
    h.tick();
    assert_eq!(casts(&h, p), vec!["cast none 1".to_owned()]);
    // Two casts in one tick: the second is refused (100 ms apart).
    let heal = spells::spell_id(h.sim.state(), "Heal").unwrap();
    learn(&mut h, pid, "Heal", 1);
    h.run_ticks(40);
    h.clear();
    h.act(
        p,
        PlayerAction::Spell(SpellUpdate::Fire {
            spell_id: 0,
            target: None,
        }),
    );
    h.act(
        p,
        PlayerAction::Spell(SpellUpdate::Fire {
            spell_id: heal,
            target: None,
        }),
    );
    h.tick();
    assert_eq!(refusals(&h), 1);
    // Without a range limit (Realm Crafter) the far target is fine.
    let mut h = harness(false, None);
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    let (_, far) = h.spawn_player("Far", 900.0, 0.0);
    let far_rid = h.actor(far).rid;
    learn(&mut h, pid, "Bolt", 2);
    h.tick();
    h.clear();
    fire(&mut h, p, 0, Some(far_rid));
    h.tick();
    assert_eq!(casts(&h, p), vec!["cast Far 2".to_owned()]);
}

/// Memorising: the client's numbering survives a forget (a hole) and a new spell (its
/// client appends), so "M" always names the spell the player meant; duplicates, holes,
/// unknown indexes and an 11th slot are refused; "U" empties the slot; forgetting a
/// memorised spell empties its slot and its action-bar entry and sends "D".
#[test]
fn memorising_follows_the_clients_numbering() {
    let mut h = harness(true, None);
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    learn(&mut h, pid, "Bolt", 1); // client index 0
    learn(&mut h, pid, "Heal", 1); // client index 1
    h.tick();
    h.actor_mut(pid).player_data.as_mut().unwrap().action_bar = vec!["SBolt".into(); 2];
    h.clear();
    let st = h.sim.state_mut();
    assert!(spells::forget(st, pid, 0));
    h.tick();
    assert!(matches!(
        &known_packets(&h, p)[..],
        [KnownSpellUpdate::Deleted { spell_name }] if spell_name.as_bytes() == b"Bolt"
    ));
    assert!(
        h.actor(pid)
            .player_data
            .as_ref()
            .unwrap()
            .action_bar
            .iter()
            .all(String::is_empty)
    );
    learn(&mut h, pid, "Elfsong", 1); // client index 2 (index 0 is a hole)
    h.clear();
    spell(&mut h, p, SpellUpdate::Memorise { index: 0 }); // the hole
    spell(&mut h, p, SpellUpdate::Memorise { index: 7 }); // never given
    assert_eq!(refusals(&h), 2);
    spell(&mut h, p, SpellUpdate::Memorise { index: 2 });
    spell(&mut h, p, SpellUpdate::Memorise { index: 2 }); // already in progress
    assert_eq!(refusals(&h), 3);
    h.run_ticks(190);
    let elfsong = spells::spell_id(h.sim.state(), "Elfsong").unwrap();
    assert!(spells::is_memorised(h.sim.state(), pid, elfsong));
    assert!(!spells::is_memorised(h.sim.state(), pid, 1));
    spell(&mut h, p, SpellUpdate::Memorise { index: 2 }); // already memorised
    assert_eq!(refusals(&h), 4);
    spell(&mut h, p, SpellUpdate::Unmemorise { index: 2 });
    assert!(!spells::is_memorised(h.sim.state(), pid, elfsong));
    spell(&mut h, p, SpellUpdate::Unmemorise { index: 2 }); // not memorised
    assert_eq!(refusals(&h), 5);
    // Ten slots at most, counting those in progress.
    h.actor_mut(pid).memorised = [900, 901, 902, 903, 904, 905, 906, 907, 908, MEMORISED_EMPTY];
    spell(&mut h, p, SpellUpdate::Memorise { index: 1 });
    spell(&mut h, p, SpellUpdate::Memorise { index: 2 });
    assert_eq!(refusals(&h), 6);
    h.run_ticks(190);
    assert_eq!(h.actor(pid).memorised[9], 1);
}

/// Without RequireMemorise, "M"/"U" are refused and a known spell casts at once.
#[test]
fn without_require_memorise_known_spells_cast_directly() {
    let mut h = harness(false, None);
    let (p, pid) = h.spawn_player("Ann", 0.0, 0.0);
    learn(&mut h, pid, "Bolt", 1);
    h.clear();
    spell(&mut h, p, SpellUpdate::Memorise { index: 0 });
    assert_eq!(refusals(&h), 1);
    fire(&mut h, p, 0, None);
    h.tick();
    assert_eq!(casts(&h, p), vec!["cast none 1".to_owned()]);
    assert_eq!(memorise::MEMORISE_MS, 6000);
}

/// A handoff carries the known spells with their levels and charge, the memorised
/// slots, the client's numbering and a memorisation in progress; a logout saves the
/// first three and a new login renumbers from the known list.
#[test]
fn abilities_travel_in_a_handoff_and_a_logout() {
    let mut src = harness(true, None);
    let (p, id) = src.spawn_player("Ann", 0.0, 0.0);
    learn(&mut src, id, "Bolt", 2);
    learn(&mut src, id, "Heal", 1);
    src.tick();
    let st = src.sim.state_mut();
    spells::forget(st, id, 0);
    learn(&mut src, id, "Bolt", 4); // client index 2
    src.actor_mut(id).memorised[0] = 1;
    src.actor_mut(id).spells[0].charge_ms = 5000;
    spell(&mut src, p, SpellUpdate::Memorise { index: 2 });
    src.run_ticks(30); // 1 s of the 6
    let s = src.set_area_out(id, "Elsewhere");
    assert_eq!(s.known_spells.len(), 2);
    assert_eq!((s.known_spells[0].id, s.known_spells[0].level), (1, 1));
    assert!(s.known_spells[0].charge_ms > 3000);
    assert_eq!((s.known_spells[1].id, s.known_spells[1].level), (0, 4));
    assert_eq!(s.memorised[0], 1);
    assert_eq!(s.spell_view, vec![u16::MAX, 1, 0]);
    assert_eq!(s.memorising.len(), 1);
    assert!((4000..=5100).contains(&s.memorising[0].remaining_ms));

    // Arriving elsewhere (a transfer keeps the client's numbering and the memorisation).
    let mut dst = harness(true, None);
    let (p2, id2) = dst.join(s.clone(), false);
    let _ = p2;
    // `join` is a login: the numbering is rebuilt and the memorisation dropped.
    let pd = dst.actor(id2).player_data.as_ref().unwrap();
    assert_eq!(pd.spell_view, vec![1, 0]);
    assert!(pd.memorising.is_empty());
    // As a transfer: kept.
    let mut dst = harness(true, None);
    dst.push(ZoneInput::TransferIn {
        transfer_id: tx(7),
        player: Some(PlayerKey(50)),
        is_dm: false,
        state: Box::new(s),
        arrival: zone_node::sim::events::Arrival::Saved,
    });
    dst.tick();
    dst.push(ZoneInput::TransferCommit { transfer_id: tx(7) });
    dst.tick();
    let a = dst.actor_of(PlayerKey(50)).expect("arrived");
    let id3 = a.id;
    let pd = a.player_data.as_ref().unwrap();
    assert_eq!(pd.spell_view, vec![u16::MAX, 1, 0]);
    assert_eq!(pd.memorising.len(), 1);
    dst.run_ticks(160);
    assert!(spells::is_memorised(dst.sim.state(), id3, 0));
}

/// The ability natives: learn (twice is once), level, query, forget; bad names and
/// levels end the script with an error.
#[test]
fn ability_natives() {
    let src: &[u8] = b"Function Main()\n\
        A = Actor()\n\
        AddAbility(A, \"bolt\", 0)\n\
        AddAbility(A, \"Bolt\", 5)\n\
        Output(A, \"k\" + AbilityKnown(A, \"BOLT\") + \" l\" + AbilityLevel(A, \"Bolt\") + \" m\" + AbilityMemorised(A, \"Bolt\"))\n\
        SetAbilityLevel(A, \"Bolt\", 7)\n\
        Output(A, \"l\" + AbilityLevel(A, \"Bolt\") + \" u\" + AbilityKnown(A, \"Nope\"))\n\
        DeleteAbility(A, \"Bolt\")\n\
        Output(A, \"k\" + AbilityKnown(A, \"Bolt\"))\n\
        AddAbility(A, \"Nope\")\n\
        Output(A, \"not reached\")\n\
    End Function\n\
    Function Bad()\n\
        SetAbilityLevel(Actor(), \"Heal\", -2)\n\
    End Function\n";
    let mut c = spell_content(false, None);
    c = content_with_scripts(c, &[("Bolt", BOLT), ("T", src)]);
    let mut h = SimHarness::with(ZoneConfig::default(), c);
    let (p, pid) = h.spawn_dm("Ann", 0.0, 0.0);
    h.clear();
    h.act(
        p,
        PlayerAction::Command {
            word: "SCRIPT".into(),
            params: "T,Main".into(),
        },
    );
    h.run_ticks(3);
    let chat = h.chat(p);
    assert!(chat.contains(&"k1 l1 m0".to_owned()), "{chat:?}");
    assert!(chat.contains(&"l7 u0".to_owned()), "{chat:?}");
    assert!(chat.contains(&"k0".to_owned()), "{chat:?}");
    assert!(!chat.contains(&"not reached".to_owned()));
    assert!(h.script_errors().iter().any(|(m, _, _)| m.contains("Nope")));
    let pk = known_packets(&h, p);
    assert!(matches!(pk[0], KnownSpellUpdate::Added { .. }));
    assert!(matches!(pk[1], KnownSpellUpdate::Level { level: 7, .. }));
    assert!(matches!(pk[2], KnownSpellUpdate::Deleted { .. }));
    assert_eq!(pk.len(), 3);
    // The GM command learns, then sets the level.
    h.act(
        p,
        PlayerAction::Command {
            word: "ABILITY".into(),
            params: "Heal,4".into(),
        },
    );
    h.run_ticks(1);
    assert_eq!(spells::known(h.sim.state(), pid, 1).unwrap().level, 4);
    h.act(
        p,
        PlayerAction::Command {
            word: "SCRIPT".into(),
            params: "T,Bad".into(),
        },
    );
    h.run_ticks(2);
    assert!(
        h.script_errors()
            .iter()
            .any(|(m, _, _)| m.contains("outside 1..=65535"))
    );
    assert_eq!(spells::known(h.sim.state(), pid, 1).unwrap().level, 4);
}

/// The demo world: a new character learns Fireball and Mend at login; Mend heals and adds
/// its effect; Fireball needs a target and costs Energy when it has one.
#[test]
fn the_demo_worlds_abilities() {
    let mut h = SimHarness::with(ZoneConfig::default(), demo_content("Meadow"));
    let world = h.sim.state().content.world.clone();
    let (p, pid) = h.join(h.new_character("Newbie"), false);
    let (_, other) = h.join(h.new_character("Other"), false);
    h.run_ticks(3);
    let ids: Vec<u16> = h.actor(pid).spells.iter().map(|k| k.id).collect();
    assert_eq!(ids, vec![0, 1]);
    h.clear();
    fire(&mut h, p, 1, None);
    h.run_ticks(2);
    assert!(h.script_errors().is_empty(), "{:?}", h.script_errors());
    assert_eq!(refusals(&h), 0);

    assert!(zone_node::sim::effects::has_effect(
        h.sim.state(),
        pid,
        "Mend"
    ));
    assert!(h.chat(p).iter().any(|l| l.contains("You feel mended")));
    h.run_ticks(3); // casts are 100 ms apart
    h.clear();
    fire(&mut h, p, 0, None);
    h.run_ticks(2);
    assert!(h.chat(p).iter().any(|l| l.contains("needs a target")));
    let energy = usize::from(world.fixed_attributes.energy.unwrap());
    let before = h.actor(pid).attr[energy];
    let orid = h.actor(other).rid;
    h.run_ticks(300); // the recharge
    fire(&mut h, p, 0, Some(orid));
    h.run_ticks(2);
    assert_eq!(h.actor(pid).attr[energy], before - 10);
    assert!(h.script_errors().is_empty(), "{:?}", h.script_errors());
}
