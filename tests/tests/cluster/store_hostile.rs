//! The store fills while honest bots play (issue 36): a flood of new accounts fills the
//! gateway's database (its page limit lowered to its size, `PRAGMA max_page_count`: a real
//! `SQLITE_FULL`). Every account answered "created" is stored and no refused one is; once
//! the store fails, logins and new accounts are refused with code 5 and `/healthz` turns
//! 503 naming `SQLITE_FULL`; a player who plays and logs out meanwhile loses nothing; the
//! bots are never disconnected; and once space is back the store heals by itself,
//! `/healthz` recovers and the database holds what the gateway holds in memory (what a
//! restarted gateway loads).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use client::{CloseCode, CloseReason, Connection};
use cluster_tests::{Cluster, WAIT, connect, new_player};
use gateway::store::{FailCause, Store};
use shared::proto::CreateAccountReply;
use tokio::time::Instant;

async fn expect_closed(c: &Connection, want: CloseCode) {
    let r = tokio::time::timeout(WAIT, c.closed())
        .await
        .expect("closed in time");
    let got = match r {
        CloseReason::Server { code, .. } => Some(code),
        _ => None,
    };
    assert_eq!(got, Some(want), "closed with {r:?}");
}

/// `GET path` on the gateway's admin endpoint.
async fn admin_get(c: &Cluster, path: &'static str) -> (u16, String) {
    let addr = c.gw.admin_addr;
    tokio::task::spawn_blocking(move || cluster_tests::multiprocess::http_get(addr, path))
        .await
        .unwrap()
        .expect("the admin endpoint answers")
}

async fn wait_until(what: &str, f: impl Fn() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the store heals and `/healthz` answers 200.
async fn wait_healed(c: &Cluster) {
    let shared = c.gw.shared().clone();
    wait_until("the store to heal", || !shared.writer.is_failing()).await;
    let deadline = Instant::now() + WAIT;
    loop {
        let (status, body) = admin_get(c, "/healthz").await;
        if status == 200 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "/healthz stayed {status}: {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// While the store is out of service: `/healthz` 503 naming `SQLITE_FULL`,
/// `rc_gateway_store_up 0`, and a login and a new account closed with code 5.
async fn out_of_service(c: &Cluster) {
    let addr = c.gw.client_addr;
    let (status, body) = admin_get(c, "/healthz").await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("SQLITE_FULL"), "{body}");
    let (_, metrics) = admin_get(c, "/metrics").await;
    assert!(
        metrics.contains("rc_gateway_store_up 0"),
        "rc_gateway_store_up:\n{metrics}"
    );
    let mut late = connect(addr).await;
    assert_eq!(
        late.create_account("late", "secret", "a@b.c")
            .await
            .unwrap(),
        CreateAccountReply::Refused
    );
    expect_closed(&late, CloseCode::Unavailable).await;
    let mut q = connect(addr).await;
    assert!(q.login("quinn", "secret").await.is_err());
    expect_closed(&q, CloseCode::Unavailable).await;
    assert!(c.gw.shared().accounts().book.find_user("late").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_store_refuses_loses_nothing_acknowledged_and_heals() {
    let c = Cluster::start("store-hostile", &["n1"]).await;
    let addr = c.gw.client_addr;
    let shared = c.gw.shared().clone();
    let stop = Arc::new(AtomicBool::new(false));
    let mut bots = tokio::task::JoinSet::new();
    for i in 0..3 {
        let (conn, g) = new_player(addr, &format!("bot{i}")).await;
        let start = (g.area.x + i as f32, g.area.y, g.area.z);
        bots.spawn(cluster_tests::walking_bot(
            conn,
            g.runtime_id,
            start,
            stop.clone(),
        ));
    }
    // Quinn has an account and stays out; Pat plays through the outage.
    let (q, _) = new_player(addr, "quinn").await;
    q.close(CloseCode::Normal).await;
    let (mut pat, gp) = c.strong_dm("pat").await;
    let before = c.saved("pat");
    // Nina has a character that never entered the world (no starter kit yet).
    let mut n = connect(addr).await;
    n.create_account("nina", "secret", "a@b.c").await.unwrap();
    n.login("nina", "secret").await.unwrap();
    let t = n
        .fetch_catalogue()
        .await
        .unwrap()
        .playable()
        .next()
        .unwrap()
        .id;
    n.create_character(&client::NewCharacter::new("Nina", t))
        .await
        .unwrap();
    n.close(CloseCode::Normal).await;
    assert_eq!(admin_get(&c, "/healthz").await.0, 200);

    eprintln!("step: the disk is full; Nina enters the world and gets her starter kit");
    shared.writer.set_max_pages(Some(1)).unwrap();
    let (nina, _) = cluster_tests::login_again(addr, "nina").await;
    // Her saves grow with the kit (Login.rsl), and Pat (a DM) gives himself a pile of
    // items: they need pages the store no longer has, and are not acknowledged. Nina's
    // kit alone may still fit in the free space of the page her row is on (where rows
    // land depends on timing); Pat's save grows by more than a page, so it cannot.
    for _ in 0..30 {
        pat.command("give Battle Axe").await.unwrap();
    }
    wait_until("a snapshot write to fail", || shared.writer.has_dirty()).await;
    assert!(shared.writer.is_failing());
    assert!(shared.writer.stats().failed_writes(FailCause::DiskFull) >= 1);
    out_of_service(&c).await;

    eprintln!("step: Pat and Nina play on and log out while the store is full");
    pat.command("setattribute Strength,777").await.unwrap();
    let to = (gp.area.x + 6.0, gp.area.y, gp.area.z + 6.0);
    for _ in 0..15 {
        pat.move_to(to.0, to.1, to.2, false).unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    pat.close(CloseCode::Normal).await;
    nina.close(CloseCode::Normal).await;
    wait_until("Pat's logout", || !c.online("pat")).await;
    wait_until("Nina's logout", || !c.online("nina")).await;
    let mem = c.saved("pat");
    assert!(
        (mem.x, mem.z) != (before.x, before.z),
        "Pat moved: {:?} → {:?}",
        (before.x, before.z),
        (mem.x, mem.z)
    );
    assert!(mem.attributes.contains(&777), "{:?}", mem.attributes);
    let nina_mem = c.saved("nina");
    assert!(
        nina_mem.inventory.iter().flatten().count() >= 3,
        "Nina got her kit: {:?}",
        nina_mem.inventory
    );
    // The logouts' snapshots go on failing while the disk is full: unacknowledged, the
    // node sends them again on its timer (`snapshot_resend_ms`, 3 s), not only after a
    // reconnect.
    let deadline = Instant::now() + WAIT;
    while !c.log("n1").contains("sent again") {
        assert!(Instant::now() < deadline, "no snapshot sent again");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(shared.writer.is_failing());

    eprintln!("step: space is back");
    shared.writer.set_max_pages(None).unwrap();
    wait_healed(&c).await;
    // What the failures left unsaved is written again from memory.
    wait_until("the rewrite of what failed", || !shared.writer.has_dirty()).await;

    eprintln!("step: full again; a flood of new accounts fills it");
    // A few pages past the file's size (a limit never goes below it): at the size itself,
    // a checkpoint landing first could take the last free room and no account fit.
    let size = shared.writer.set_max_pages(Some(1)).unwrap();
    shared.writer.set_max_pages(Some(size + 4)).unwrap();
    let mut flood = connect(addr).await;
    let mut created = Vec::new();
    let mut refused = None;
    for i in 0..5_000 {
        let user = format!("flood{i}");
        match flood.create_account(&user, "secret", "a@b.c").await {
            Ok(CreateAccountReply::Created) => created.push(user),
            Ok(CreateAccountReply::Refused) => {
                refused = Some(user);
                break;
            }
            Err(e) => panic!("account creation {i}: {e}"),
        }
    }
    let refused = refused.expect("the store filled and an account creation was refused");
    eprintln!("{} accounts created before the store filled", created.len());
    assert!(!created.is_empty());
    expect_closed(&flood, CloseCode::Unavailable).await;
    assert!(shared.writer.is_failing(), "the store is out of service");
    assert!(
        shared.accounts().book.find_user(&refused).is_none(),
        "a refused account is not kept in memory either"
    );
    // "Created" means on disk: a crash now would lose none of them.
    let on_disk = Store::open_dir(&c.dir.join("data"))
        .unwrap()
        .load_book()
        .unwrap();
    for user in &created {
        assert!(
            on_disk.find_user(user).is_some(),
            "{user} was answered created before it was stored"
        );
    }
    out_of_service(&c).await;

    eprintln!("step: space is back again");
    shared.writer.set_max_pages(None).unwrap();
    wait_healed(&c).await;
    let mut late = connect(addr).await;
    assert_eq!(
        late.create_account("late", "secret", "a@b.c")
            .await
            .unwrap(),
        CreateAccountReply::Created
    );
    assert!(late.login("late", "secret").await.is_ok());
    late.close(CloseCode::Normal).await;
    wait_until("the rewrite of what failed", || !shared.writer.has_dirty()).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let s = shared.clone();
    tokio::task::spawn_blocking(move || s.writer.flush())
        .await
        .unwrap()
        .unwrap();

    eprintln!("step: the bots played through it");
    stop.store(true, Ordering::Relaxed);
    while let Some(r) = bots.join_next().await {
        assert!(r.unwrap() > 0, "a bot got its own updates");
    }

    eprintln!("step: the database holds what a restarted gateway would load");
    let book = Store::open_dir(&c.dir.join("data"))
        .unwrap()
        .load_book()
        .unwrap();
    for user in created.iter().chain(["late".to_owned()].iter()) {
        assert!(book.find_user(user).is_some(), "{user} answered created");
    }
    assert!(book.find_user(&refused).is_none(), "{refused} was refused");
    let first = |user: &str| {
        let id = book.find_user(user).expect("the account");
        book.get(id)
            .and_then(|a| a.characters.first().cloned())
            .expect("a character")
    };
    let disk = first("pat");
    assert_eq!((disk.x, disk.z), (mem.x, mem.z), "Pat's position");
    assert_eq!(disk.attributes, mem.attributes, "Pat's attributes");
    assert_eq!(disk.inventory, mem.inventory, "Pat's items");
    assert_eq!(disk.gold, mem.gold);
    let disk = first("nina");
    assert_eq!(disk.inventory, nina_mem.inventory, "Nina's starter kit");
    assert_eq!(
        (disk.x, disk.z),
        (nina_mem.x, nina_mem.z),
        "Nina's position"
    );
    assert_eq!(disk.script_globals, nina_mem.script_globals);
}
