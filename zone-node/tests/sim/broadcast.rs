//! Scenarios for the position broadcast: bands, cadence, tails, datagram batching, and
//! the chains and RuntimeIDs behind it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::float_cmp)]

use zone_node::sim::state::{ChainKind, ZoneConfig};
use zone_node::sim::testing::{SimHarness, attrs, templates, test_content};

#[test]
fn bands_close_always_mid_once_a_second_far_never() {
    let mut h = SimHarness::new();
    let (p, _) = h.spawn_player("Watcher", 0.0, 0.0);
    let close = h.spawn_npc(templates::HORSE, 400.0, 0.0);
    let mid = h.spawn_npc(templates::HORSE, 700.0, 0.0);
    let far = h.spawn_npc(templates::HORSE, 0.0, 1200.0);
    let (close, mid, far) = (h.actor(close).rid, h.actor(mid).rid, h.actor(far).rid);
    h.clear();
    let mut broadcasts = 0;
    let mut mids = 0;
    for _ in 0..303 {
        let s = h.tick();
        broadcasts += u32::from(s.counters.broadcast);
        mids += s.counters.mid_band;
    }
    // 10 s: 50 broadcasts (5 Hz); the one player gets the mid band on 10 of them (1 Hz).
    assert!((49..=50).contains(&broadcasts), "{broadcasts}");
    assert!((9..=10).contains(&mids), "{mids}");
    let seen = h.updates(p);
    let count = |rid| seen.iter().filter(|u| u.rid == rid).count() as u32;
    assert_eq!(count(close), broadcasts);
    assert_eq!(count(mid), mids);
    assert_eq!(count(far), 0);
}

#[test]
fn own_frame_has_the_energy_tail_and_flyers_have_y() {
    let mut h = SimHarness::new();
    let (p, id) = h.spawn_player("Watcher", 0.0, 0.0);
    let (q, _) = h.spawn_player("Other", 3.0, 0.0);
    let bird = h.spawn_npc(templates::BIRD, 10.0, 0.0);
    h.actor_mut(bird).y = 42.0;
    h.actor_mut(id).attr[usize::from(attrs::ENERGY)] = 77;
    h.clear();
    h.run_ticks(7);
    let seen = h.updates(p);
    let me = seen.iter().find(|u| u.rid == h.actor(id).rid).unwrap();
    assert_eq!(me.tail, 77u16.to_le_bytes().to_vec());
    let b = seen.iter().find(|u| u.rid == h.actor(bird).rid).unwrap();
    assert_eq!(b.tail, 42.0f32.to_le_bytes().to_vec());
    // The other player sees my frame without my energy.
    let other_view = h.updates(q);
    let mine = other_view
        .iter()
        .find(|u| u.rid == h.actor(id).rid)
        .unwrap();
    assert!(mine.tail.is_empty());
}

#[test]
fn datagrams_respect_the_budget_and_carry_every_close_actor_once() {
    let mut h = SimHarness::new();
    let (p, _) = h.spawn_player("Watcher", 0.0, 0.0);
    for i in 0..300 {
        let f = i as f32;
        h.spawn_npc(
            templates::HORSE,
            (f * 7.0) % 600.0 - 300.0,
            (f * 13.0) % 600.0 - 300.0,
        );
    }
    h.clear();
    while !h.tick().counters.broadcast {
        h.clear();
    }
    let mine: Vec<_> = h.datagrams.iter().filter(|(w, _)| *w == p).collect();
    assert!(mine.len() >= 7);
    for (_, d) in &mine {
        assert!(d.len() <= 1200, "{}", d.len());
    }
    let seen = h.updates(p);
    let mut rids: Vec<u16> = seen.iter().map(|u| u.rid).collect();
    let n = rids.len();
    rids.sort_unstable();
    rids.dedup();
    assert_eq!(rids.len(), n, "an actor was sent twice");
    assert_eq!(n, 301); // Everyone is within 500.
}

#[test]
fn bands_match_a_brute_force_reference() {
    let cfg = ZoneConfig {
        grid_cell: 100.0,
        ..ZoneConfig::default()
    };
    let mut h = SimHarness::with(cfg, test_content());
    let mut players = Vec::new();
    for i in 0..5 {
        players.push(h.spawn_player(
            &format!("P{i}"),
            i as f32 * 300.0 - 600.0,
            i as f32 * 170.0 - 400.0,
        ));
    }
    // Near and beyond the grid's border (overflow cells).
    players.push(h.spawn_player("Edge", 1950.0, -1480.0));
    players.push(h.spawn_player("Out", -1700.0, 1700.0));
    for i in 0..400u32 {
        let x = ((i * 7919) % 3000) as f32 - 1500.0;
        let z = ((i * 104_729) % 3000) as f32 - 1500.0;
        h.spawn_npc(templates::HORSE, x, z);
    }
    // Five consecutive broadcasts: each player gets exactly the close band on four and the
    // close plus mid band on one.
    let mut mids = vec![0; players.len()];
    for _ in 0..5 {
        h.clear();
        while !h.tick().counters.broadcast {
            h.clear();
        }
        let st = h.sim.state();
        for (n, (p, pid)) in players.iter().enumerate() {
            let me = st.get(*pid).unwrap();
            let band = |mid: bool| {
                let mut v: Vec<u16> = st
                    .chain_members(st.zone, ChainKind::Zone)
                    .into_iter()
                    .filter_map(|i| st.at(i))
                    .filter(|a| {
                        let d2 = (a.x - me.x).powi(2) + (a.z - me.z).powi(2);
                        d2 < 250_000.0 || (mid && d2 <= 1_000_000.0)
                    })
                    .map(|a| a.rid)
                    .collect();
                v.sort_unstable();
                v
            };
            let mut got: Vec<u16> = h.updates(*p).iter().map(|u| u.rid).collect();
            got.sort_unstable();
            if got == band(true) && got != band(false) {
                mids[n] += 1;
            } else {
                assert_eq!(got, band(false));
            }
        }
    }
    assert_eq!(mids, vec![1; players.len()]);
}

#[test]
fn outside_the_grid_bounds_still_works() {
    let mut h = SimHarness::new();
    let (p, _) = h.spawn_player("Far", 90_000.0, -90_000.0);
    let n = h.spawn_npc(templates::HORSE, 90_100.0, -90_000.0);
    let m = h.spawn_npc(templates::HORSE, -90_000.0, -90_000.0);
    h.clear();
    h.run_ticks(7);
    let seen = h.updates(p);
    assert!(seen.iter().any(|u| u.rid == h.actor(n).rid));
    assert!(!seen.iter().any(|u| u.rid == h.actor(m).rid));
}

#[test]
fn chains_and_rids_stay_consistent_through_churn() {
    let mut cfg = ZoneConfig::default();
    cfg.rids.npc_lo = 100;
    cfg.rids.npc_hi = 140;
    let mut h = SimHarness::with(cfg, test_content());
    let (_, p) = h.spawn_player("P", 0.0, 0.0);
    let mut npcs = Vec::new();
    for i in 0..41 {
        npcs.push(h.spawn_npc(templates::HORSE, i as f32, 0.0));
    }
    // The NPC range is full.
    assert!(h.sim.spawn_npc(templates::HORSE, 0.0, 0.0, 0.0).is_none());
    let st = h.sim.state_mut();
    for (i, id) in npcs.iter().enumerate() {
        if i % 2 == 0 {
            st.free_actor(*id);
        }
    }
    // Stale handles resolve to nothing.
    assert!(st.get(npcs[0]).is_none());
    assert_eq!(st.zone.len, 1 + 20);
    let again: Vec<_> = (0..21)
        .map(|_| h.sim.spawn_npc(templates::HORSE, 5.0, 0.0, 5.0).unwrap())
        .collect();
    let st = h.sim.state();
    assert_eq!(st.zone.len, 42);
    assert_eq!(st.online.len, 1);
    let mut rids: Vec<u16> = st
        .chain_members(st.zone, ChainKind::Zone)
        .iter()
        .map(|&i| st.at(i).unwrap().rid)
        .collect();
    rids.sort_unstable();
    let n = rids.len();
    rids.dedup();
    assert_eq!(rids.len(), n);
    assert!(rids.iter().all(|&r| r != 0));
    for id in again {
        let r = st.get(id).unwrap().rid;
        assert!((100..=140).contains(&r));
        assert_eq!(st.by_rid(r), Some(id));
    }
    assert_eq!(st.get(p).unwrap().rid, 1);
}

#[test]
fn slave_chains_link_and_unlink_on_free() {
    let mut h = SimHarness::new();
    let (_, leader) = h.spawn_player("Leader", 0.0, 0.0);
    let pets: Vec<_> = (0..3)
        .map(|i| h.spawn_npc(templates::WOLF, i as f32, 0.0))
        .collect();
    let st = h.sim.state_mut();
    for p in &pets {
        st.slave_link(leader, *p);
    }
    assert_eq!(st.slaves_of(leader).len(), 3);
    st.free_actor(pets[1]);
    let left = st.slaves_of(leader);
    assert_eq!(left, vec![pets[2], pets[0]]);
    st.free_actor(leader);
    assert!(st.get(pets[0]).unwrap().leader.is_none());
}

/// Each player's own-update count: how many broadcasts it got.
fn own_updates(h: &SimHarness, p: zone_node::sim::events::PlayerKey) -> usize {
    let rid = h.actor_of(p).map(|a| a.rid).unwrap();
    h.updates(p).iter().filter(|u| u.rid == rid).count()
}

/// Twelve players in view of each other, in six broadcast groups, after a full interval.
fn grouped_crowd() -> (SimHarness, Vec<zone_node::sim::events::PlayerKey>) {
    let cfg = ZoneConfig {
        broadcast_groups: 6,
        ..ZoneConfig::default()
    };
    let mut h = SimHarness::with(cfg, test_content());
    let players: Vec<_> = (0..12)
        .map(|i| h.spawn_player(&format!("P{i}"), i as f32 * 10.0, 0.0).0)
        .collect();
    h.deliver();
    h.clear();
    (h, players)
}

#[test]
fn broadcast_groups_take_turns_and_every_player_still_gets_five_a_second() {
    let (mut h, players) = grouped_crowd();
    let mut busiest = 0;
    let mut ticks_with_datagrams = 0;
    for _ in 0..303 {
        let before = h.datagrams.len();
        h.tick();
        let n = h.datagrams.len() - before;
        busiest = busiest.max(n);
        ticks_with_datagrams += usize::from(n > 0);
    }
    // 10 s: every player still gets 5 broadcasts a second...
    for &p in &players {
        let n = own_updates(&h, p);
        assert!((49..=51).contains(&n), "{n}");
    }
    // ...but two players a tick (12 players, 6 groups), on every tick.
    assert_eq!(busiest, 2);
    assert!(ticks_with_datagrams >= 295, "{ticks_with_datagrams}");
    // A zone-wide packet reaches each player with its group's broadcast.
    h.clear();
    h.act(players[0], zone_node::sim::events::PlayerAction::Jump);
    h.tick();
    let got = |h: &SimHarness| {
        players[1..]
            .iter()
            .filter(|&&p| !h.reliable_of(p, zone_node::sim::packets::P_JUMP).is_empty())
            .count()
    };
    assert!(got(&h) < 11, "not all in one tick");
    h.deliver();
    assert_eq!(got(&h), 11);
}

#[test]
fn late_ticks_send_the_groups_an_interval_still_owes() {
    let (mut h, players) = grouped_crowd();
    // Ticks 150 ms apart: an interval has two ticks for six groups.
    h.step = 150;
    for _ in 0..40 {
        h.tick();
    }
    let counts: Vec<usize> = players.iter().map(|&p| own_updates(&h, p)).collect();
    let (lo, hi) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
    assert!(hi - lo <= 1 && *lo >= 19, "{counts:?}");
}
