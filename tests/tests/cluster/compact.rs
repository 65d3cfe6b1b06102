//! The compact position profile (`rc-compact/1`) on a cluster of a gateway and two
//! `zone-node` processes: an rc/1 client and a compact client in the same zone see each
//! other move, the compact client's positions are within 1/16 unit of what the rc/1
//! client sees, and its position traffic carries on across a portal into an area on the
//! other node.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use client::{CloseCode, Connection, Profile};
use cluster_tests::{Cluster, WAIT, echo, new_player_with, walk_through};
use gateway::hub::Metrics;
use shared::proto::{ServerPacket, StandardUpdateS2C};
use tokio::time::Instant;

/// The newest update of `rid`: the first one is waited for up to `within`, then the
/// updates of one more second are read and the last is kept. (Reading until `within`
/// ended instead cost 20 s a call: a standing actor's updates keep coming.)
async fn latest_of(c: &mut Connection, rid: u16, within: Duration) -> StandardUpdateS2C {
    let is_update = |i: &client::Incoming| matches!(&i.packet, ServerPacket::StandardUpdate(u) if u.runtime_id == rid);
    let first = c.recv_until(is_update, within).await;
    let Ok(client::Incoming {
        packet: ServerPacket::StandardUpdate(mut last),
        ..
    }) = first
    else {
        panic!("no update of actor {rid} within {within:?}");
    };
    let settle = Instant::now() + Duration::from_secs(1);
    while let Some(left) = settle.checked_duration_since(Instant::now()) {
        match c.recv_until(is_update, left).await {
            Ok(client::Incoming {
                packet: ServerPacket::StandardUpdate(u),
                ..
            }) => last = u,
            _ => break,
        }
    }
    last
}

/// Whether `v` is a whole number of 1/8 units (what the compact profile carries).
fn on_grid(v: f32) -> bool {
    (v * 8.0).fract() == 0.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rc_and_compact_clients_share_a_zone_and_see_each_other() {
    let c = Cluster::start_with_capacity("compact", &[("n1", 2), ("n2", 64)]).await;
    let addr = c.gw.client_addr;
    let world = shared::content::demo_world();
    let (mut rc, gr) = new_player_with(addr, "rcann", Profile::Rc).await;
    let (mut cp, gc) = new_player_with(addr, "cpbob", Profile::Compact).await;
    assert_eq!(cp.profile(), Profile::Compact);
    assert_eq!(rc.profile(), Profile::Rc);
    let area = String::from_utf8_lossy(gc.area.area.as_bytes()).into_owned();
    assert_eq!(gr.area.area, gc.area.area, "both start in the same area");
    let (x0, y0, z0) = (gc.area.x, gc.area.y, gc.area.z);

    // 1. The compact client's own moves are applied (its input is transcoded to rc/1 at
    //    the gateway) and echoed back to it in compact snapshots.
    let here = (x0 + 1.3, y0, z0 - 0.7);
    assert!(
        echo(&mut cp, gc.runtime_id, here, WAIT).await,
        "compact: own position"
    );

    // 2. The rc/1 player stands somewhere off the 1/8 grid: both clients see it, the
    //    compact one within 1/16 unit, on the grid.
    let spot = (x0 - 2.33, y0, z0 + 3.71);
    assert!(
        echo(&mut rc, gr.runtime_id, spot, WAIT).await,
        "rc: own position"
    );
    let truth = latest_of(&mut rc, gr.runtime_id, Duration::from_secs(1)).await;
    let seen = latest_of(&mut cp, gr.runtime_id, WAIT).await;
    assert!(
        (seen.x - truth.x).abs() <= 1.0 / 16.0 && (seen.z - truth.z).abs() <= 1.0 / 16.0,
        "compact sees {seen:?}, rc/1 sees {truth:?}"
    );
    assert!(on_grid(seen.x) && on_grid(seen.z) && on_grid(seen.dest_x));
    assert_eq!(seen.mount, truth.mount);

    // 3. The compact player moves: the rc/1 client sees it where the compact client sees
    //    itself.
    let there = (x0 + 4.0, y0, z0 + 1.5);
    assert!(echo(&mut cp, gc.runtime_id, there, WAIT).await);
    let own = latest_of(&mut cp, gc.runtime_id, Duration::from_secs(1)).await;
    let by_rc = latest_of(&mut rc, gc.runtime_id, WAIT).await;
    assert!(
        (own.x - by_rc.x).abs() <= 1.0 / 16.0 && (own.z - by_rc.z).abs() <= 1.0 / 16.0,
        "rc/1 sees {by_rc:?}, the compact client itself {own:?}"
    );
    assert!((by_rc.x - there.0).abs() < 0.5 && (by_rc.z - there.2).abs() < 0.5);

    // 4. Across a portal into an area on the other node: its positions keep flowing
    //    (the deltas go on against ticks from the old zone; nothing is reset).
    let (_, portal) = c.portal_to_another_node(&world, &area);
    let arrived = walk_through(
        &mut cp,
        there,
        (portal.x, portal.y, portal.z),
        &portal.link_area,
        |_| {},
    )
    .await;
    let step = (arrived.0 + 1.0, arrived.1, arrived.2 + 1.0);
    assert!(
        echo(&mut cp, gc.runtime_id, step, WAIT).await,
        "compact: own position on the other node"
    );

    // Nothing refused on either side; the gateway coded most ticks as deltas.
    let s = cp.stats();
    assert_eq!(s.datagrams_dropped, 0, "{s:?}");
    let m = &c.gw.shared().metrics;
    assert_eq!(Metrics::get(&m.compact_sessions), 1);
    assert_eq!(Metrics::get(&m.compact_bad_input), 0);
    let (delta, full) = (
        Metrics::get(&m.compact_ticks_delta),
        Metrics::get(&m.compact_ticks_full),
    );
    assert!(delta > full, "{delta} delta ticks, {full} full");
    rc.close(CloseCode::Normal).await;
    cp.close(CloseCode::Normal).await;
}
