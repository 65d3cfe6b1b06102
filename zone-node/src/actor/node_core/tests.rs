//! Scenario tests of the node's decisions, without actors or sockets.

#![allow(clippy::unwrap_used, clippy::panic)]

use shared::internal::{ActorStateDto, ArrivalDto};

use super::*;

/// The core with `&str` trace contexts and the copy's generation as its shell part.
type Core = NodeCore<&'static str, Generation>;

fn key(area: &str) -> InstanceKey {
    InstanceKey {
        area: area.into(),
        instance: 0,
    }
}

fn make(c: &Creation) -> Result<Generation, RegistryError> {
    if c.key.area == "Nowhere" {
        return Err(RegistryError::UnknownArea(c.key.area.clone()));
    }
    Ok(c.generation)
}

fn sent(fx: &[NodeEffect<&'static str>]) -> Vec<String> {
    fx.iter()
        .filter_map(|e| match e {
            NodeEffect::Send { msg, .. } => Some(msg.name().to_owned()),
            _ => None,
        })
        .collect()
}

fn attach(core: &mut Core, session: u64, k: &InstanceKey, generation: Generation) -> bool {
    core.attach(Attach {
        session,
        key: k.clone(),
        generation,
        rid: 1,
        is_dm: false,
        state: ActorStateDto::default(),
        arrival: ArrivalDto::Saved,
    })
    .is_ok()
}

#[test]
fn an_assignment_creates_once_adopts_a_newer_generation_and_refuses_an_older_one() {
    let mut core = Core::new(2, 10);
    let fx = core.assign(key("A"), 3, Vec::new(), make).unwrap();
    assert_eq!(sent(&fx), ["InstanceReady"]);
    assert_eq!(core.hosted(&key("A")).unwrap().shell, 3);
    // The same generation again: nothing new (no second copy, no second InstanceReady).
    assert!(
        core.assign(key("A"), 3, Vec::new(), make)
            .unwrap()
            .is_empty()
    );
    // A newer one: the running copy adopts the number.
    assert!(
        core.assign(key("A"), 5, Vec::new(), make)
            .unwrap()
            .is_empty()
    );
    assert_eq!(core.generation_of(&key("A")), 5);
    assert_eq!(
        core.assign(key("A"), 4, Vec::new(), make).err(),
        Some(RegistryError::StaleGeneration {
            key: key("A"),
            have: 5,
            got: 4
        })
    );
    // An area the shell cannot build, and the capacity.
    assert_eq!(
        core.assign(key("Nowhere"), 1, Vec::new(), make).err(),
        Some(RegistryError::UnknownArea("Nowhere".into()))
    );
    core.assign(key("B"), 1, Vec::new(), make).unwrap();
    assert_eq!(
        core.assign(key("C"), 1, Vec::new(), make).err(),
        Some(RegistryError::Full(2))
    );
}

#[test]
fn every_copy_gets_its_own_minter_in_the_block_of_the_registration() {
    let mut core = Core::new(8, 1);
    let mut minters = Vec::new();
    let mut take = |c: &Creation| {
        minters.push(c.minter);
        Ok(c.generation)
    };
    core.assign(key("A"), 1, Vec::new(), &mut take).unwrap();
    core.set_transfer_block(9);
    core.assign(key("B"), 1, Vec::new(), &mut take).unwrap();
    // A rebuilt sim takes the next one.
    assert_eq!(core.next_minter(), (9, 2));
    // The same block again (a repeated TransferIds) changes nothing.
    core.set_transfer_block(9);
    core.assign(key("C"), 1, Vec::new(), &mut take).unwrap();
    assert_eq!(minters, [(0, 1), (9, 1), (9, 3)]);
}

#[test]
fn a_newer_generation_assigned_while_stopping_starts_once_the_old_copy_stopped() {
    let mut core = Core::new(4, 1);
    core.assign(key("A"), 1, Vec::new(), make).unwrap();
    assert!(attach(&mut core, 7, &key("A"), 1));
    assert!(matches!(
        core.stop(&key("A"), 0),
        Err(RegistryError::StaleGeneration { .. })
    ));
    let fx = core.stop(&key("A"), 1).unwrap();
    assert!(matches!(&fx[..], [NodeEffect::Stop(k)] if *k == key("A")));
    // Asked twice: told once.
    assert!(core.stop(&key("A"), 1).unwrap().is_empty());
    // The stopping copy keeps its number; the new generation waits for it.
    assert!(
        core.assign(key("A"), 2, Vec::new(), make)
            .unwrap()
            .is_empty()
    );
    assert_eq!(core.generation_of(&key("A")), 1);
    // A stop report of another copy (an older one of the same key) changes nothing.
    assert!(core.stopped(&key("A"), 99).is_none());
    let copy = core.hosted(&key("A")).unwrap().copy;
    let (removed, fx) = core.stopped(&key("A"), copy).unwrap();
    assert_eq!(removed.generation, 1);
    // Whoever was still in it loses the route with it.
    assert_eq!(removed.sessions, [7]);
    assert_eq!(core.session_instance(7), None);
    assert_eq!(sent(&fx), ["InstanceStopped"]);
    assert!(matches!(
        fx.last(),
        Some(NodeEffect::Assign { generation: 2, .. })
    ));
    assert_eq!(core.instance_count(), 0);
}

#[test]
fn a_copy_given_up_takes_its_sessions_and_handoffs_with_it() {
    let mut core = Core::new(4, 1);
    core.assign(key("A"), 1, Vec::new(), make).unwrap();
    core.assign(key("B"), 1, Vec::new(), make).unwrap();
    assert!(attach(&mut core, 7, &key("A"), 1));
    assert!(attach(&mut core, 8, &key("A"), 1));
    // A handoff from A to B in flight.
    let t = TransferOut {
        transfer_id: TransferId {
            block: 1,
            minter: 1,
            serial: 1,
        },
        player: Some(PlayerKey(7)),
        is_dm: false,
        area: "B".into(),
        instance: 0,
        arrival: ArrivalDto::Saved,
        state: ActorStateDto::default(),
    };
    let fx = core.zone_output(&key("A"), &ZoneOutput::TransferOut(Box::new(t)), |local| {
        assert!(local, "B is hosted here");
        "handoff"
    });
    assert!(
        matches!(&fx[..], [NodeEffect::Push(k, ZoneInput::TransferIn { .. })] if *k == key("B"))
    );
    assert_eq!(core.transfers().len(), 1);
    // Not at that generation: nothing.
    assert!(core.give_up(&key("A"), 2).is_none());
    let (removed, fx) = core.give_up(&key("A"), 1).unwrap();
    assert_eq!(removed.sessions, [7, 8]);
    assert_eq!(core.session_count(), 0);
    assert_eq!(core.transfers().len(), 0);
    assert_eq!(sent(&fx), ["InstanceGivenUp"]);
    // The destination drops the prepared copy of the abandoned handoff.
    assert!(fx.iter().any(
        |e| matches!(e, NodeEffect::Push(k, ZoneInput::TransferAbort { .. }) if *k == key("B"))
    ));
}

#[test]
fn a_player_is_attached_once_at_the_placed_generation_and_detached_where_it_lives() {
    let mut core = Core::new(4, 1);
    core.assign(key("A"), 2, Vec::new(), make).unwrap();
    assert!(!attach(&mut core, 7, &key("A"), 1), "stale generation");
    assert!(!attach(&mut core, 7, &key("B"), 1), "not hosted");
    assert!(attach(&mut core, 7, &key("A"), 2));
    assert!(!attach(&mut core, 7, &key("A"), 2), "already hosted");
    assert_eq!(core.route(7), Some((&key("A"), &2)));
    // Removed by another instance than the one it lives in: nothing.
    assert!(core.player_removed(&key("B"), 7).is_empty());
    assert_eq!(sent(&core.player_removed(&key("A"), 7)), ["PlayerDetached"]);
    assert!(core.player_removed(&key("A"), 7).is_empty());
    assert_eq!(
        core.to_session(7, |player| ZoneInput::PlayerLeft { player })
            .err(),
        Some(RegistryError::UnknownSession(7))
    );
    // Draining: no player, no instance; every copy is asked to stop.
    let fx = core.drain();
    assert!(matches!(&fx[..], [NodeEffect::Stop(_)]));
    assert!(!attach(&mut core, 8, &key("A"), 2));
    assert_eq!(
        core.assign(key("C"), 1, Vec::new(), make).err(),
        Some(RegistryError::Draining)
    );
}

#[test]
fn a_stopping_copy_waits_for_its_players_a_bounded_number_of_ticks() {
    assert_eq!(stop_step(1, 0), StopStep::Stopped);
    assert_eq!(stop_step(1, 3), StopStep::SaveAgain);
    assert_eq!(stop_step(STOP_TICKS, 3), StopStep::SaveAgain);
    assert_eq!(stop_step(STOP_TICKS + 1, 3), StopStep::Stopped);
}

#[test]
fn running_lists_every_copy_with_its_sessions() {
    let mut core = Core::new(4, 1);
    core.assign(key("B"), 1, Vec::new(), make).unwrap();
    core.assign(key("A"), 4, Vec::new(), make).unwrap();
    assert!(attach(&mut core, 9, &key("A"), 4));
    assert!(attach(&mut core, 3, &key("A"), 4));
    let r = core.running();
    assert_eq!(r.len(), 2);
    assert_eq!((r[0].key.clone(), r[0].generation), (key("A"), 4));
    assert_eq!(r[0].sessions, [3, 9]);
    assert!(r[1].sessions.is_empty());
    assert_eq!(core.next_id(), 1);
    assert_eq!(core.next_id(), 2);
}

#[test]
fn running_reports_each_copy_with_its_fencing_token() {
    // A gateway taking over adopts a kept player only in the copy carrying the token the
    // store holds (issue 41): the node says which token each copy carries, attached or
    // arrived by a handoff.
    let mut core = Core::new(4, 1);
    core.assign(key("A"), 4, Vec::new(), make).unwrap();
    let fenced = |fence| ActorStateDto {
        fence,
        ..ActorStateDto::default()
    };
    core.attach(Attach {
        session: 9,
        key: key("A"),
        generation: 4,
        rid: 1,
        is_dm: false,
        state: fenced(77),
        arrival: ArrivalDto::Saved,
    })
    .unwrap();
    let id = TransferId {
        block: 1,
        minter: 2,
        serial: 5,
    };
    let t = TransferDto {
        transfer_id: id,
        generation: 4,
        session: Some(3),
        is_dm: false,
        area: "A".into(),
        instance: 0,
        arrival: ArrivalDto::Saved,
        state: fenced(88),
    };
    core.transfer_in(t, || "t").unwrap();
    core.prepared(id);
    core.remote_decided(id, true);
    let r = core.running();
    assert_eq!(r[0].sessions, [3, 9]);
    assert_eq!(r[0].fences, [88, 77]);
    assert_eq!((r[0].fence_of(9), r[0].fence_of(3)), (Some(77), Some(88)));
    // Gone with the player.
    core.player_removed(&key("A"), 9);
    assert_eq!(core.running()[0].fences, [88]);
}

#[test]
fn a_transfer_of_a_session_already_hosted_in_another_instance_is_refused() {
    // A deposed leader's recovery put the player in A; the new leader's, not knowing,
    // sends him to B on the same node: two live copies, and a detach would take only one
    // (simulator seed 203333). The node refuses the second, as it refuses a second attach.
    let mut core = Core::new(4, 1);
    core.assign(key("A"), 4, Vec::new(), make).unwrap();
    core.assign(key("B"), 5, Vec::new(), make).unwrap();
    assert!(attach(&mut core, 3, &key("A"), 4));
    let t = |serial, area: &str, generation| TransferDto {
        transfer_id: TransferId {
            block: 2,
            minter: 1,
            serial,
        },
        generation,
        session: Some(3),
        is_dm: false,
        area: area.into(),
        instance: 0,
        arrival: ArrivalDto::Saved,
        state: ActorStateDto::default(),
    };
    assert!(matches!(
        core.transfer_in(t(1, "B", 5), || "t"),
        Err(RegistryError::DuplicateSession(3))
    ));
    assert_eq!(
        core.session_instance(3),
        Some(&key("A")),
        "the live copy keeps its route"
    );
    // Once he has left A, he may come in.
    core.player_removed(&key("A"), 3);
    assert!(core.transfer_in(t(2, "B", 5), || "t").is_ok());
}
