//! Rules scenarios: parties (the gateway's member lists, XP split), pets (follow,
//! attack, commands, XP to the leader), mounts (right-click, rider moves mount, dismount)
//! and chat commands.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::float_cmp)]

use zone_node::sim::events::{PetCommand, PlayerAction, Rejection, ZoneInput};
use zone_node::sim::packets::*;
use zone_node::sim::state::AiMode;
use zone_node::sim::testing::{SimHarness, attrs, templates};
use zone_node::sim::{ActorId, PlayerKey};

fn xp_cmd(n: u32) -> PlayerAction {
    PlayerAction::Command {
        word: "XP".into(),
        params: n.to_string(),
    }
}

/// The gateway's word on `key`'s party (leader first; empty: none).
fn members(h: &mut SimHarness, key: PlayerKey, names: &[&str]) {
    h.push(ZoneInput::PartyMembers {
        player: key,
        members: names.iter().map(|n| (*n).to_owned()).collect(),
    });
}

/// Parties are the gateway's (it handles `/invite`, `/accept`, `/leave` and sends
/// `P_PartyUpdate`); a zone takes its member lists and splits XP among the members it
/// hosts.
#[test]
fn the_gateways_parties_split_xp_among_the_members_here() {
    let mut h = SimHarness::new();
    let (a, aid) = h.spawn_dm("Ann", 0.0, 0.0);
    let (b, bid) = h.spawn_player("Bob", 5.0, 0.0);
    let (c, cid) = h.spawn_player("Cat", 10.0, 0.0);
    h.clear();
    for k in [a, b, c] {
        members(&mut h, k, &["Ann", "Bob", "Cat"]);
    }
    h.tick();
    assert!(h.actor(aid).party.is_some());
    assert_eq!(h.actor(aid).party, h.actor(cid).party);
    assert_eq!(h.actor(aid).party, h.actor(bid).party);
    // XP split among the 3 members here: 100 → 33 each, the giver keeps 33 + 1.
    h.act(a, xp_cmd(100));
    h.tick();
    assert_eq!(
        (h.actor(aid).xp, h.actor(bid).xp, h.actor(cid).xp),
        (34, 33, 33)
    );
    assert_eq!(h.reliable_of(b, P_XP_UPDATE), vec![vec![b'M', 33, 0, 0, 0]]);
    // The zone sends no party packet of its own: that is the gateway's.
    assert!(h.reliable_of(a, P_PARTY_UPDATE).is_empty());
    // Bob leaves (at the gateway): two members here.
    h.clear();
    members(&mut h, b, &[]);
    members(&mut h, a, &["Ann", "Cat"]);
    members(&mut h, c, &["Ann", "Cat"]);
    h.tick();
    assert_eq!(h.actor(bid).party, None);
    h.act(a, xp_cmd(10));
    h.tick();
    assert_eq!((h.actor(aid).xp, h.actor(cid).xp), (39, 38));
    // A member in another instance takes no share here.
    members(&mut h, c, &[]);
    members(&mut h, a, &["Ann", "Dan"]);
    h.tick();
    h.act(a, xp_cmd(10));
    h.tick();
    assert_eq!(h.actor(aid).xp, 49);
    // Solo again.
    members(&mut h, a, &[]);
    h.tick();
    assert_eq!(h.actor(aid).party, None);
    // A list for a player the zone does not host is refused and changes nothing.
    h.clear();
    members(&mut h, PlayerKey(9_999), &["Zed"]);
    h.tick();
    assert_eq!(h.rejections(), vec![Rejection::UnknownPlayer]);
}

fn pet_of(h: &mut SimHarness, leader: ActorId, x: f32, z: f32) -> ActorId {
    let pet = h.spawn_npc(templates::HUMAN, x, z);
    h.sim.state_mut().slave_link(leader, pet);
    h.actor_mut(pet).ai_mode = AiMode::Pet;
    h.actor_mut(pet).name = "Rex".into();
    pet
}

#[test]
fn a_pet_follows_joins_the_attack_and_gives_xp_to_its_leader() {
    let mut h = SimHarness::new();
    let (p, pid) = h.spawn_player("Alice", 0.0, 0.0);
    let pet = pet_of(&mut h, pid, 40.0, 0.0);
    h.run_ticks(60);
    let a = h.actor(pet);
    let d2 = a.x * a.x + a.z * a.z;
    assert!(d2 <= 36.0 + 1.0, "stops within (5 + radii)²: {d2}");
    assert!(d2 >= 16.0, "{d2}");
    // Alice attacks: the pet takes her target.
    let victim = h.spawn_npc(templates::HUMAN, 6.0, 0.0);
    {
        let v = h.actor_mut(victim);
        v.attr[usize::from(attrs::HEALTH)] = 3000;
        v.attr_max[usize::from(attrs::HEALTH)] = 3000;
        v.level = 3;
    }
    let vrid = h.actor(victim).rid;
    h.act(p, PlayerAction::Attack { target: vrid });
    h.tick();
    assert_eq!(h.actor(pet).ai_mode, AiMode::PetChase);
    assert_eq!(h.actor(pet).ai_target, Some(victim));
    h.run_ticks(60);
    assert!(h.actor(pet).last_attack_ms.is_some(), "the pet attacked");
    // The pet's kill gives XP to Alice.
    h.actor_mut(victim).attr[usize::from(attrs::HEALTH)] = 1;
    for _ in 0..10 {
        if h.sim.state().get(victim).is_none() {
            break;
        }
        h.actor_mut(pid).ai_target = Some(victim);
        zone_node::sim::combat::actor_attack(h.sim.state_mut(), pet, victim);
        h.tick();
    }
    assert!(h.sim.state().get(victim).is_none());
    assert!(h.actor(pid).xp >= 20);
    assert_eq!(h.actor(pet).xp, 0);
    assert_eq!(h.actor(pet).ai_mode, AiMode::Pet);
}

#[test]
fn pet_commands_wait_follow_attack_and_name() {
    let mut h = SimHarness::new();
    let (p, pid) = h.spawn_player("Alice", 0.0, 0.0);
    let (o, _) = h.spawn_player("Obs", 0.0, 20.0);
    let pet = pet_of(&mut h, pid, 3.0, 0.0);
    let cmd = |pet: Option<&str>, command| PlayerAction::Pet {
        pet: pet.map(str::to_owned),
        command,
    };
    h.clear();
    h.act(p, cmd(Some("rex"), PetCommand::Wait));
    h.tick();
    assert_eq!(h.actor(pet).ai_mode, AiMode::PetWait);
    h.act(p, cmd(Some("all"), PetCommand::Follow));
    h.tick();
    assert_eq!(h.actor(pet).ai_mode, AiMode::Pet);
    // Attack without a target: refused with a message.
    h.act(p, cmd(None, PetCommand::Attack));
    h.act(p, cmd(Some("Fido"), PetCommand::Follow));
    h.tick();
    assert_eq!(h.rejections(), vec![Rejection::Invalid, Rejection::Invalid]);
    let victim = h.spawn_npc(templates::HUMAN, 6.0, 0.0);
    h.actor_mut(pid).ai_target = Some(victim);
    h.act(p, cmd(None, PetCommand::Attack));
    h.tick();
    assert_eq!(h.actor(pet).ai_mode, AiMode::PetChase);
    assert_eq!(h.actor(pet).ai_target, Some(victim));
    // Name: P_NameChange to the zone.
    h.clear();
    h.act(p, cmd(Some("Rex"), PetCommand::Name("Spot".into())));
    h.tick();
    h.deliver();
    assert_eq!(h.actor(pet).name, "Spot");
    let r = h.actor(pet).rid.to_le_bytes();
    assert_eq!(
        h.reliable_of(o, P_NAME_CHANGE),
        vec![vec![r[0], r[1], 4, b'S', b'p', b'o', b't']]
    );
    // A pet whose leader is gone waits.
    h.push(ZoneInput::PlayerLeft { player: p });
    h.tick();
    assert!(
        h.sim.state().get(pet).is_none(),
        "pets leave with their leader"
    );
}

#[test]
fn a_pet_without_a_leader_waits() {
    let mut h = SimHarness::new();
    let npc = h.spawn_npc(templates::HUMAN, 0.0, 0.0);
    h.actor_mut(npc).ai_mode = AiMode::Pet;
    h.tick();
    assert_eq!(h.actor(npc).ai_mode, AiMode::Wait);
}

#[test]
fn mount_by_right_click_ride_and_dismount() {
    let mut h = SimHarness::new();
    let (p, pid) = h.spawn_player("Alice", 0.0, 0.0);
    let (q, _) = h.spawn_player("Bob", 0.0, 5.0);
    let horse = h.spawn_npc(templates::HORSE, 5.0, 0.0);
    let far_horse = h.spawn_npc(templates::HORSE, 30.0, 0.0);
    let cow = h.spawn_npc(templates::HUMAN, 3.0, 3.0);
    let (hr, fr, cr) = (h.actor(horse).rid, h.actor(far_horse).rid, h.actor(cow).rid);
    h.clear();
    h.act(p, PlayerAction::RightClick { target: fr });
    h.act(p, PlayerAction::RightClick { target: cr });
    h.act(p, PlayerAction::RightClick { target: 4321 });
    h.act(p, PlayerAction::RightClick { target: hr });
    h.act(q, PlayerAction::RightClick { target: hr });
    h.tick();
    assert_eq!(
        h.rejections(),
        vec![
            Rejection::Invalid,
            Rejection::Invalid,
            Rejection::UnknownTarget,
            Rejection::Invalid
        ]
    );
    assert_eq!(h.actor(pid).mount, Some(horse));
    assert_eq!(h.actor(horse).rider, Some(pid));
    // The rider's updates move the mount; jumping is refused while mounted.
    h.run_ticks(10);
    h.update(p, 2.0, 0.0, 2.0, 0.0, false, false);
    h.act(p, PlayerAction::Jump);
    h.tick();
    assert_eq!((h.actor(horse).x, h.actor(horse).z), (2.0, 0.0));
    assert!(h.rejections().contains(&Rejection::Invalid));
    // Dismount: the NPC mount goes back to Patrol.
    h.act(p, PlayerAction::Dismount);
    h.tick();
    assert_eq!(h.actor(pid).mount, None);
    assert_eq!(h.actor(horse).rider, None);
    assert_eq!(h.actor(horse).ai_mode, AiMode::Patrol);
    h.clear();
    h.act(p, PlayerAction::Dismount);
    h.tick();
    assert_eq!(h.rejections(), vec![Rejection::Invalid]);
}

#[test]
fn chat_me_gold_and_unknown_commands() {
    let mut h = SimHarness::new();
    let (dm, dmid) = h.spawn_dm("Gm", 0.0, 0.0);
    let (p, _) = h.spawn_player("Alice", 5.0, 0.0);
    h.actor_mut(dmid).gold = 10;
    h.clear();
    h.act(
        p,
        PlayerAction::Chat {
            text: "hello".into(),
        },
    );
    h.act(
        p,
        PlayerAction::Command {
            word: "ME".into(),
            params: "waves".into(),
        },
    );
    h.act(
        p,
        PlayerAction::Command {
            word: "DANCE".into(),
            params: String::new(),
        },
    );
    h.act(
        p,
        PlayerAction::Command {
            word: "GOLD".into(),
            params: "5".into(),
        },
    );
    h.act(
        dm,
        PlayerAction::Command {
            word: "GOLD".into(),
            params: "-7".into(),
        },
    );
    h.tick();
    let seen = h.reliable_of(dm, P_CHAT_MESSAGE);
    assert_eq!(seen[0], b"<Alice> hello".to_vec());
    let mut me = vec![CHAT_MAGENTA];
    me.extend_from_slice(b"* Alice waves");
    assert_eq!(seen[1], me);
    let alice = h.reliable_of(p, P_CHAT_MESSAGE);
    assert_eq!(alice.last().unwrap()[0], CHAT_RED);
    assert_eq!(h.rejections(), vec![Rejection::NotPermitted]);
    // Through `change_gold` (docs/items.md): 10 - 7, never below 0.
    assert_eq!(h.actor(dmid).gold, 3);
    assert_eq!(
        h.reliable_of(dm, P_GOLD_CHANGE),
        vec![vec![b'D', 7, 0, 0, 0]]
    );
}

#[test]
fn set_attribute_by_name_goes_through_the_stats_audiences() {
    let mut h = SimHarness::new();
    let (dm, dmid) = h.spawn_dm("Gm", 0.0, 0.0);
    let (p, _) = h.spawn_player("Alice", 5.0, 0.0);
    h.clear();
    h.act(
        dm,
        PlayerAction::SetAttribute {
            name: "dexterity".into(),
            value: 7,
        },
    );
    h.act(
        dm,
        PlayerAction::SetAttribute {
            name: "nope".into(),
            value: 7,
        },
    );
    h.act(
        dm,
        PlayerAction::SetAttribute {
            name: "health".into(),
            value: 0,
        },
    );
    h.tick();
    assert_eq!(h.actor(dmid).attr[usize::from(attrs::DEXTERITY)], 7);
    assert_eq!(h.rejections(), vec![Rejection::UnknownAttribute]);
    // Health 0 kills (deferred): the DM is dead, waiting for the death script.
    assert!(h.actor(dmid).dead);
    // Alice saw the Health change but not Dexterity.
    h.deliver();
    let stats = h.reliable_of(p, P_STAT_UPDATE);
    assert_eq!(stats.len(), 1);
}

#[test]
fn a_chasing_pet_gives_up_beyond_the_leash() {
    let mut h = SimHarness::new();
    let (_p, pid) = h.spawn_player("Alice", 0.0, 0.0);
    let pet = pet_of(&mut h, pid, 2.0, 0.0);
    let target = h.spawn_npc(templates::HUMAN, 150.0, 0.0);
    h.actor_mut(pid).ai_target = Some(target);
    h.actor_mut(pet).ai_mode = AiMode::PetChase;
    h.actor_mut(pet).ai_target = Some(target);
    let mut max_d2 = 0.0f32;
    for _ in 0..100 {
        h.tick();
        let a = h.actor(pet);
        max_d2 = max_d2.max(a.x * a.x + a.z * a.z);
        if a.ai_mode == AiMode::Pet {
            break;
        }
    }
    assert_eq!(h.actor(pet).ai_mode, AiMode::Pet);
    // It runs 3 units a tick, so it stops within one step past the leash.
    assert!(max_d2 > 3500.0 && max_d2 < 62.3 * 62.3, "{max_d2}");
    // The target is too far from the leader (> 1000) to re-engage.
    h.run_ticks(5);
    assert_eq!(h.actor(pet).ai_mode, AiMode::Pet);
}

#[test]
fn the_gateway_s_party_list_splits_xp_among_the_members_here_only() {
    use zone_node::sim::ZoneInput;
    let mut h = SimHarness::new();
    let (a, aid) = h.spawn_dm("Ann", 0.0, 0.0);
    let (b, bid) = h.spawn_player("Bob", 5.0, 0.0);
    let (_, cid) = h.spawn_player("Cat", 10.0, 0.0);
    // Ann, Bob and Dan (in another zone) are a party at the gateway; Cat is not in it.
    let members: Vec<String> = ["Ann", "Bob", "Dan"].map(String::from).to_vec();
    for p in [a, b] {
        h.push(ZoneInput::PartyMembers {
            player: p,
            members: members.clone(),
        });
    }
    h.tick();
    h.clear();
    assert_eq!(h.actor(aid).party, h.actor(bid).party);
    // No P_PartyUpdate from the zone: the gateway sends those.
    assert!(h.reliable_of(a, P_PARTY_UPDATE).is_empty());
    // XP splits between the two members here (Dan is elsewhere; Cat is not a member).
    h.act(a, xp_cmd(100));
    h.tick();
    assert_eq!(
        (h.actor(aid).xp, h.actor(bid).xp, h.actor(cid).xp),
        (50, 50, 0)
    );
    // Bob's party ends at the gateway: no more split.
    h.push(ZoneInput::PartyMembers {
        player: b,
        members: Vec::new(),
    });
    h.tick();
    assert!(h.actor(bid).party.is_none());
    h.act(a, xp_cmd(10));
    h.tick();
    assert_eq!((h.actor(aid).xp, h.actor(bid).xp), (60, 50));
}
