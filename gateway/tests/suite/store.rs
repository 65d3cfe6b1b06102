//! Store tests: migrations from empty (and from schema 2), a full character round trip
//! through SQLite, the batching writer (a submitted batch lands whole or not at all), the
//! ground items of each instance, and the `Accounts.dat` parser. A full store
//! (`PRAGMA max_page_count`, a real `SQLITE_FULL`) fails loudly, refuses and undoes what a
//! client waits for, and heals.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use gateway::accounts_dat::{self, LegacyAccount};
use gateway::session::{AccountBook, AccountRow, PersistOp};
use gateway::store::{FailCause, STATE_VERSION, Store, StoreError, Writer, resync_ops};
use proptest::prelude::*;
use shared::internal::{ActorStateDto, GroundItemDto, InstanceKey, InvSlotDto, KnownSpellDto};

/// Where a test's store lives: a SQLite data directory, or a database on a throwaway
/// Postgres server (issue 41: the store's suite runs on both backends).
enum At {
    Dir(std::path::PathBuf),
    /// The server (stopped when dropped: held for the test's length) and the URL.
    Pg(
        #[allow(dead_code)] gateway::store::pg_server::PgServer,
        String,
    ),
}

impl At {
    fn sqlite(name: &str) -> Self {
        Self::Dir(tmp(name))
    }

    /// `None` (the test skips) where Postgres is not installed, unless it is required.
    fn postgres() -> Option<Self> {
        let server = gateway::store::pg_server::start_or_skip()?;
        let url = server.database("rc_store").unwrap();
        Some(Self::Pg(server, url))
    }

    fn open(&self) -> Store {
        match self {
            Self::Dir(d) => Store::open_dir(d).unwrap(),
            Self::Pg(_, url) => Store::open_postgres(url).unwrap(),
        }
    }
}

/// Each named case, as a test on SQLite and one on Postgres (`case::sqlite`,
/// `case::postgres`).
macro_rules! on_both_backends {
    ($($case:ident),* $(,)?) => {
        $(
            mod $case {
                #[test]
                fn sqlite() {
                    super::$case(&super::At::sqlite(stringify!($case)));
                }

                #[test]
                fn postgres() {
                    if let Some(at) = super::At::postgres() {
                        super::$case(&at);
                    }
                }
            }
        )*
    };
}

on_both_backends!(
    clock_epoch_is_stored_once,
    full_character_round_trip,
    names_are_unique_case_insensitively,
    writer_batches_and_flushes_into_the_account_book,
    writer_drops_only_the_failing_batch,
    a_submitted_group_is_stored_whole_or_not_at_all,
    ground_items_are_replaced_per_instance_and_survive_a_reopen,
    character_handles_are_unique_never_reused_and_stable_across_reloads,
    script_files_and_super_globals_survive_a_reopen,
    timed_bans_mutes_and_the_audit_log_are_stored,
    migrations_are_at_the_newest_version,
    a_sqlite_store_copies_into_another_and_is_verified,
    the_writer_confirms_its_lease_until_another_gateway_claims_the_store,
);

/// Raises the control epoch as another gateway's claim does, behind the holder's back.
fn another_gateway_claims(admin: &mut postgres::Client) {
    admin
        .execute(
            "UPDATE meta SET value = value + 1 WHERE key = 'leader_epoch'",
            &[],
        )
        .unwrap();
}

/// `Writer::confirm_lease` (asked by a leader before it logs out the players of an edge
/// whose link ended): true while the store is this gateway's (always on SQLite, whose
/// directory lock cannot be taken away); on Postgres false once another gateway raised
/// the control epoch, and the writer says it was deposed.
fn the_writer_confirms_its_lease_until_another_gateway_claims_the_store(at: &At) {
    let store = at.open();
    store.claim_exclusive(7).unwrap();
    let w = Writer::spawn(store).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let confirm = |w: &Writer| rt.block_on(w.confirm_lease()).unwrap_or(false);
    assert!(confirm(&w), "the lease holds after the claim");
    w.submit(vec![PersistOp::UpsertAccount(row(3, "Queued"))])
        .unwrap();
    assert!(confirm(&w), "asked after a write, it still holds");
    assert!(w.deposed().borrow().is_none());
    let At::Pg(_, url) = at else { return };
    let mut admin = postgres::Client::connect(url, postgres::NoTls).unwrap();
    another_gateway_claims(&mut admin);
    assert!(!confirm(&w), "another gateway's claim ends the lease");
    assert!(w.deposed().borrow().is_some(), "and the writer says so");
    assert!(!confirm(&w), "for good");
}

/// Both backends' migrations end at the same version, and opening again changes nothing.
fn migrations_are_at_the_newest_version(at: &At) {
    let s = at.open();
    assert_eq!(s.schema_version().unwrap(), 4);
    assert!(s.load_all().unwrap().is_empty());
    drop(s);
    assert_eq!(at.open().schema_version().unwrap(), 4);
}

/// `gateway copy-store`'s core: everything of a SQLite store (accounts, characters with
/// their fencing tokens, ground items, script files, super globals, the audit log, the
/// handle floor, the clock's epoch) arrives in an empty store of the other backend and
/// is verified; a store that holds accounts is refused.
fn a_sqlite_store_copies_into_another_and_is_verified(at: &At) {
    use gateway::console::{AuditEntry, Role};
    let src_dir = tmp("copy-source");
    let mut src = Store::open_dir(&src_dir).unwrap();
    let mut c = full_character("Aria");
    c.fence = 41;
    src.apply(&[
        PersistOp::UpsertAccount(row(1, "Aria_Player")),
        PersistOp::ReplaceCharacters {
            account: 1,
            characters: vec![c, full_character("Bea")],
        },
        PersistOp::UpsertAccount(row(7, "Solo")),
        PersistOp::HandleFloor(99),
        PersistOp::PutScriptFile {
            name: "notes/a.txt".into(),
            kind: 1,
            data: b"hello".to_vec(),
        },
        PersistOp::PutScriptFile {
            name: "notes".into(),
            kind: 2,
            data: Vec::new(),
        },
        PersistOp::SetSuperGlobal {
            slot: 3,
            value: b"gold rush".to_vec(),
        },
        PersistOp::ReplaceGround {
            key: key("Meadow", 0),
            items: vec![ground_item(4, 1.0, 5_000), ground_item(5, 2.0, 0)],
        },
        PersistOp::Audit(Box::new(AuditEntry {
            id: 1,
            at_ms: 1_800_000_000_000,
            operator: "ada".into(),
            role: Role::Admin,
            action: "ban".into(),
            target: "Solo".into(),
            detail: "{}".into(),
            ok: true,
            result: "done".into(),
        })),
    ])
    .unwrap();
    let epoch = src.clock_epoch(1_234_567).unwrap();
    let mut dst = at.open();
    if matches!(at, At::Dir(_)) {
        // SQLite into SQLite: a fresh directory of its own.
        dst = Store::open_dir(&tmp("copy-dest")).unwrap();
    }
    let r = gateway::store::copy::copy(&src, &mut dst).unwrap();
    assert_eq!((r.accounts, r.characters), (2, 2));
    assert_eq!((r.script_files, r.super_globals), (2, 1));
    assert_eq!((r.ground_instances, r.ground_items), (1, 2));
    assert_eq!(
        (r.audit_entries, r.handle_floor, r.clock_epoch_ms),
        (1, 99, epoch)
    );
    gateway::store::copy::verify(&src, &dst).unwrap();
    assert_eq!(dst.load_all().unwrap(), src.load_all().unwrap());
    assert_eq!(dst.clock_epoch(9).unwrap(), 1_234_567);
    // Again: the destination holds accounts now.
    let err = gateway::store::copy::copy(&src, &mut dst).unwrap_err();
    assert!(err.to_string().contains("accounts already"), "{err}");
    // A difference is found.
    dst.apply(&[PersistOp::HandleFloor(500)]).unwrap();
    assert!(gateway::store::copy::verify(&src, &dst).is_err());
}

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("gw-store-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// A character with every field set to something other than its default.
fn full_character(name: &str) -> ActorStateDto {
    let pet = ActorStateDto {
        template: 9,
        name: "Rex".into(),
        attributes: vec![5; 40],
        ..ActorStateDto::default()
    };
    ActorStateDto {
        template: 3,
        name: name.into(),
        tag: "the Bold".into(),
        area: "Town".into(),
        instance: 2,
        x: 1.5,
        y: -2.25,
        z: 100.125,
        yaw: 90.0,
        gender: 1,
        face: 2,
        hair: 3,
        beard: 4,
        body: 1,
        level: 17,
        xp: 123_456,
        xp_bar: 42,
        gold: 9_999,
        reputation: -12,
        team: 7,
        home_faction: 3,
        ratings: (0..100).collect(),
        attributes: (0..40).map(|i| i * 3).collect(),
        attribute_max: (0..40).map(|i| i * 5 + 1).collect(),
        resistances: (0..20).map(|i| i + 10).collect(),
        inventory: (0..46)
            .map(|i| {
                (i % 3 == 0).then(|| InvSlotDto {
                    item: i,
                    attributes: vec![i32::from(i) - 20; 40],
                    health: 77,
                    amount: 5,
                })
            })
            .collect(),
        known_spells: vec![KnownSpellDto {
            id: 4,
            level: 2,
            charge_ms: 1500,
        }],
        memorised: vec![4],
        script_globals: vec!["g1".into(), "g2".into()],
        quests: vec![("Find the sword".into(), "started".into())],
        action_bar: (0..36).map(|i| format!("S{i}")).collect(),
        script: "Player".into(),
        death_script: "Death".into(),
        rid: 321,
        ai_mode: 2,
        handle: 4242,
        account: "acct".into(),
        email: "a@b.c".into(),
        scripts: vec![0x92, 1, 0x90],
        pets: vec![pet.clone()],
        mount: Some(Box::new(pet)),
        effects: vec![shared::internal::ActorEffectDto {
            handle: 1,
            name: "Potion".into(),
            deltas: vec![20; 40],
            remaining_ms: 4_000,
            icon: 7,
        }],
        spell_view: vec![0, u16::MAX, 3],
        memorising: vec![shared::internal::MemorisingDto {
            spell: 3,
            remaining_ms: 2_500,
        }],
        fence: 0,
        applied_actions: vec![shared::internal::ActionId {
            run: shared::internal::TransferId {
                block: 3,
                minter: 1,
                serial: 9,
            },
            seq: 4,
        }],
    }
}

fn row(id: u64, user: &str) -> AccountRow {
    AccountRow {
        id,
        user: user.into(),
        password_hash: "$argon2id$v=19$m=8,t=1,p=1$c2FsdA$aGFzaA".into(),
        email: "u@example.org".into(),
        is_dm: true,
        banned: false,
        ignore: vec!["troll".into()],
        status: gateway::session::AccountStatus {
            ban_until_ms: 0,
            ban_reason: String::new(),
            mute_until_ms: 1_900_000_000_000,
            mute_reason: "spam".into(),
            last_login_ms: 1_800_000_000_000,
        },
    }
}

/// Undoes schema 4 (moderation columns, the audit log) in a database of version 4.
const UNDO_4: &str = "DROP TABLE audit;
    ALTER TABLE accounts DROP COLUMN ban_until_ms;
    ALTER TABLE accounts DROP COLUMN ban_reason;
    ALTER TABLE accounts DROP COLUMN mute_until_ms;
    ALTER TABLE accounts DROP COLUMN mute_reason;
    ALTER TABLE accounts DROP COLUMN last_login_ms;";

#[test]
fn migrations_from_empty_and_wal() {
    let d = tmp("migrate");
    let s = Store::open_dir(&d).unwrap();
    assert_eq!(s.schema_version().unwrap(), 4);
    assert_eq!(s.journal_mode().unwrap(), "wal");
    assert!(s.load_all().unwrap().is_empty());
    drop(s);
    // Re-opening is a no-op.
    let s = Store::open_dir(&d).unwrap();
    assert_eq!(s.schema_version().unwrap(), 4);
}

/// The game clock's epoch is stored once and survives a restart.
fn clock_epoch_is_stored_once(at: &At) {
    let s = at.open();
    assert_eq!(s.clock_epoch(1_000).unwrap(), 1_000);
    assert_eq!(s.clock_epoch(5_000).unwrap(), 1_000);
    drop(s);
    let s = at.open();
    assert_eq!(s.clock_epoch(9_000).unwrap(), 1_000);
}

fn full_character_round_trip(at: &At) {
    let mut s = at.open();
    let mut c = full_character("Aria");
    // The fencing token survives a reopen.
    c.fence = 77;
    s.apply(&[
        PersistOp::UpsertAccount(row(1, "Aria_Player")),
        PersistOp::ReplaceCharacters {
            account: 1,
            characters: vec![c.clone(), full_character("Bea")],
        },
    ])
    .unwrap();
    // A checkpoint replaces slot 1.
    let mut moved = full_character("Bea");
    moved.x = 55.0;
    moved.gold = 1;
    s.apply(&[PersistOp::SaveCharacter {
        account: 1,
        slot: 1,
        state: Box::new(moved.clone()),
    }])
    .unwrap();
    drop(s);
    let s = at.open();
    let all = s.load_all().unwrap();
    assert_eq!(all, vec![(row(1, "Aria_Player"), vec![c, moved])]);
    assert_eq!(STATE_VERSION, 1);
}

fn names_are_unique_case_insensitively(at: &At) {
    let mut s = at.open();
    s.apply(&[PersistOp::UpsertAccount(row(1, "Same"))])
        .unwrap();
    assert!(
        s.apply(&[PersistOp::UpsertAccount(row(2, "SAME"))])
            .is_err()
    );
    // The failed batch left nothing behind.
    assert_eq!(s.load_all().unwrap().len(), 1);
}

fn writer_batches_and_flushes_into_the_account_book(at: &At) {
    let w = Writer::spawn(at.open()).unwrap();
    let mut book = AccountBook::new();
    for i in 0..50 {
        let id = book
            .create_account(format!("user{i}"), "h".into(), String::new())
            .unwrap();
        book.add_character(id, full_character(&format!("char{i}")))
            .unwrap();
        w.submit(book.take_persist()).unwrap();
    }
    w.flush().unwrap();
    let st = w.stats();
    use std::sync::atomic::Ordering::Relaxed;
    // An account, its character list and the raised handle floor, 50 times.
    assert_eq!(st.ops_written.load(Relaxed), 150);
    assert_eq!(st.queue_depth.load(Relaxed), 0);
    assert!(st.batches.load(Relaxed) >= 1 && st.batches.load(Relaxed) <= 50);
    assert!(w.last_error().is_none());
    w.shutdown();
    let loaded = AccountBook::from_records(at.open().load_all().unwrap());
    assert_eq!(loaded.len(), 50);
    let id = loaded.find_user("USER7").unwrap();
    // Stored as given, with the handle the book gave it (the eighth character).
    let mut want = full_character("char7");
    want.handle = 8;
    assert_eq!(loaded.get(id).unwrap().characters[0], want);
    assert!(loaded.character_name_taken("CHAR49"));
}

fn legacy() -> Vec<LegacyAccount> {
    let mut c = full_character("Old");
    // Fields Accounts.dat does not carry.
    c.yaw = 0.0;
    c.instance = 0;
    c.mount = None;
    c.rid = 0;
    c.ai_mode = 0;
    c.known_spells[0].charge_ms = 0;
    c.reputation = -12;
    // Nor the cluster's own fields (the gateway gives handles and accounts on import).
    c.handle = 0;
    c.account = String::new();
    c.email = String::new();
    c.scripts = Vec::new();
    // Realm Crafter never saved actor effects, nor the session's ability state.
    c.effects = Vec::new();
    c.spell_view = Vec::new();
    c.memorising = Vec::new();
    c.pets = vec![ActorStateDto {
        template: 9,
        name: "Rex".into(),
        attributes: vec![5; 40],
        attribute_max: vec![0; 40],
        resistances: vec![0; 20],
        inventory: vec![None; 46],
        ratings: vec![0; 100],
        script_globals: vec![String::new(); 10],
        ..ActorStateDto::default()
    }];
    c.script_globals.resize(10, String::new());
    vec![
        LegacyAccount {
            user: "Legacy".into(),
            password: shared::wire::md5_hex(b"pw"),
            email: "l@x".into(),
            is_dm: true,
            banned: false,
            ignore: vec!["a".into(), "b".into()],
            characters: vec![c],
        },
        LegacyAccount {
            user: "Empty".into(),
            password: shared::wire::md5_hex(b"x"),
            email: String::new(),
            is_dm: false,
            banned: true,
            ignore: vec![],
            characters: vec![],
        },
    ]
}

#[test]
fn accounts_dat_round_trip() {
    let mut accounts = legacy();
    let bytes = accounts_dat::write(&accounts);
    let parsed = accounts_dat::parse(&bytes).unwrap();
    // The quest list comes back without empty entries and the action bar with 36 entries.
    accounts[0].characters[0]
        .action_bar
        .resize(36, String::new());
    // Realm Crafter's file has no place for the cluster's own bookkeeping.
    accounts[0].characters[0].applied_actions.clear();
    assert_eq!(parsed, accounts);
}

#[test]
fn accounts_dat_errors_name_the_record() {
    let bytes = accounts_dat::write(&legacy());
    let cut = &bytes[..bytes.len() - 500];
    let e = accounts_dat::parse(cut).map(|_| ()).unwrap_err();
    assert!(e.to_string().starts_with("Accounts.dat: account #"), "{e}");
    let e = accounts_dat::parse(&bytes[..200]).unwrap_err();
    assert_eq!((e.account, e.character), (0, Some(0)));
    let mut neg = bytes.clone();
    neg[0..4].copy_from_slice(&(-5i32).to_le_bytes());
    let e = accounts_dat::parse(&neg).unwrap_err();
    assert_eq!((e.account, e.character), (0, None));
    assert!(e.what.contains("negative"), "{e}");
}

proptest! {
    #[test]
    fn accounts_dat_garbage_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..400), cut in 0usize..20_000) {
        let _ = accounts_dat::parse(&bytes);
        let good = accounts_dat::write(&legacy());
        let _ = accounts_dat::parse(&good[..cut.min(good.len())]);
    }
}

#[test]
fn import_then_login_with_legacy_passwords() {
    use gateway::session::{Argon2Hasher, Ctx, LoginThrottle, PeerKey, Session, SessionEvent};
    use rand::SeedableRng;
    use sha2::{Digest, Sha256};
    use shared::proto::{ClientPacket, Creds, ServerPacket, VerifyAccount, VerifyAccountReply};

    let mut accounts = legacy();
    // A V1 record for the second account.
    let salt = "abcdefghijklmnop";
    let md5 = shared::wire::md5_hex(b"x");
    let digest = hex::encode(Sha256::digest(format!("{salt}{md5}").as_bytes()));
    accounts[1].password = format!("$1${salt}${digest}");
    accounts.push(LegacyAccount {
        user: "Broken".into(),
        password: "plain".into(),
        email: String::new(),
        is_dm: false,
        banned: false,
        ignore: vec![],
        characters: vec![],
    });
    let bytes = accounts_dat::write(&accounts);
    let parsed = accounts_dat::parse(&bytes).unwrap();
    let mut book = AccountBook::new();
    let hasher = Argon2Hasher::fast_for_tests();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let report = accounts_dat::import_into(parsed, &mut book, &hasher, &mut rng);
    assert_eq!(report.imported, 2);
    assert_eq!(report.skipped.len(), 1);

    // Persist, reload, and log in.
    let d = tmp("import");
    let w = Writer::spawn(Store::open_dir(&d).unwrap()).unwrap();
    w.submit(book.take_persist()).unwrap();
    w.shutdown();
    let mut book = AccountBook::from_records(Store::open_dir(&d).unwrap().load_all().unwrap());
    let id = book.find_user("legacy").unwrap();
    assert!(book.get(id).unwrap().row.is_dm);
    assert_eq!(book.get(id).unwrap().characters[0].name, "Old");
    assert!(
        book.get(id)
            .unwrap()
            .row
            .password_hash
            .starts_with("$argon2id$")
    );

    let world = shared::content::demo_world();
    let mut throttle = LoginThrottle::new();
    let mut login = |book: &mut AccountBook, user: &str, pw: &str| {
        let mut s = Session::new(PeerKey([1; 16]));
        let mut ctx = Ctx {
            world: &world,
            book,
            throttle: &mut throttle,
            hasher: &hasher,
            rng: &mut rng,
            clock: None,
            gate: &gateway::session::Gate::default(),
        };
        let p = ClientPacket::VerifyAccount(VerifyAccount {
            creds: Creds::from_password(user, pw),
        });
        s.handle_packet(0, &mut ctx, &p);
        let mut ev = Vec::new();
        while let Some(e) = s.poll_event() {
            ev.push(e);
        }
        (s.poll_transmit(), ev)
    };
    let (reply, _) = login(&mut book, "Legacy", "pw");
    assert!(
        matches!(reply, Some(ServerPacket::VerifyAccount(VerifyAccountReply::Ok { ref characters })) if characters.len() == 1)
    );
    // The V1 account logs in (banned: "B" after the password) and is upgraded to argon2id.
    let (reply, ev) = login(&mut book, "empty", "x");
    assert_eq!(
        reply,
        Some(ServerPacket::VerifyAccount(VerifyAccountReply::Banned))
    );
    assert!(ev.iter().any(|e| matches!(e, SessionEvent::Persist(PersistOp::UpsertAccount(r)) if r.password_hash.starts_with("$argon2id$"))));
    let (reply, _) = login(&mut book, "empty", "wrong");
    assert_eq!(
        reply,
        Some(ServerPacket::VerifyAccount(VerifyAccountReply::BadPassword))
    );
}

#[test]
fn import_accounts_command() {
    let d = tmp("cmd");
    std::fs::create_dir_all(&d).unwrap();
    let file = d.join("Accounts.dat");
    std::fs::write(&file, accounts_dat::write(&legacy())).unwrap();
    let data = d.join("data");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gateway"))
        .arg("import-accounts")
        .arg(&file)
        .arg("--data")
        .arg(&data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("imported 2 accounts, skipped 0"));
    let all = Store::open_dir(&data).unwrap().load_all().unwrap();
    assert_eq!(all.len(), 2);
    assert!(all[0].0.password_hash.starts_with("$argon2id$"));
    // Importing again skips the existing accounts.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gateway"))
        .args([
            "import-accounts".as_ref(),
            file.as_os_str(),
            "--data".as_ref(),
            data.as_os_str(),
        ])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("imported 0 accounts, skipped 2"));
    // Garbage is an error naming the record, not a panic.
    std::fs::write(&file, [1, 0, 0, 0, b'x', 9]).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gateway"))
        .args([
            "import-accounts".as_ref(),
            file.as_os_str(),
            "--data".as_ref(),
            data.as_os_str(),
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("account #0"));
}

/// `gateway import-script-data`: a Realm Crafter server's `Superglobals.dat` and `Script
/// Files` into a stopped gateway's database, read back as the gateway loads them.
#[test]
fn import_script_data_command() {
    let d = tmp("scriptdata");
    let server_data = d.join("Server Data");
    std::fs::create_dir_all(server_data.join("Script Files/Guild")).unwrap();
    let mut sg = Vec::new();
    for i in 0..100u32 {
        let v = if i == 7 {
            b"seven".to_vec()
        } else {
            Vec::new()
        };
        sg.extend_from_slice(&u32::try_from(v.len()).unwrap().to_le_bytes());
        sg.extend_from_slice(&v);
    }
    std::fs::write(server_data.join("Superglobals.dat"), &sg).unwrap();
    std::fs::write(
        server_data.join("Script Files/Guild/Members.txt"),
        b"Ann\r\nBob\r\n",
    )
    .unwrap();
    let data = d.join("data");
    let run = |dir: &std::path::Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_gateway"))
            .args([
                "import-script-data".as_ref(),
                dir.as_os_str(),
                "--data-dir".as_ref(),
                data.as_os_str(),
            ])
            .output()
            .unwrap()
    };
    let out = run(&server_data);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "imported 1 super globals (of 100 slots), 1 script files, 1 directories; skipped 0"
        ),
        "{text}"
    );
    let (scripts, warnings) = Store::open_dir(&data).unwrap().load_scripts().unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(scripts.global(7), b"seven");
    assert_eq!(
        scripts.read("guild/members.txt").unwrap(),
        Some(&b"Ann\r\nBob\r\n"[..])
    );
    // A truncated Superglobals.dat is refused whole, naming the slot, and changes nothing.
    std::fs::write(server_data.join("Superglobals.dat"), [5, 0, 0, 0, b'a']).unwrap();
    let out = run(&server_data);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("super global 0"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (scripts, _) = Store::open_dir(&data).unwrap().load_scripts().unwrap();
    assert_eq!(scripts.global(7), b"seven");
    // A folder with neither is an error.
    let out = run(&d);
    assert!(!out.status.success());
}

fn writer_drops_only_the_failing_batch(at: &At) {
    use std::sync::atomic::Ordering::Relaxed;
    let w = Writer::spawn(at.open()).unwrap();
    // Three batches queued together (one transaction); the second fails (a name taken
    // case-insensitively): it alone is dropped.
    w.submit(vec![PersistOp::UpsertAccount(row(1, "One"))])
        .unwrap();
    w.submit(vec![PersistOp::UpsertAccount(row(2, "ONE"))])
        .unwrap();
    w.submit(vec![PersistOp::UpsertAccount(row(3, "Three"))])
        .unwrap();
    w.flush().unwrap();
    assert_eq!(w.stats().failures.load(Relaxed), 1);
    assert_eq!(w.stats().ops_written.load(Relaxed), 2);
    // Counted by cause; a problem of one write's data is no outage of the store.
    assert_eq!(w.stats().failed_writes(FailCause::Constraint), 1);
    assert!(!w.is_failing() && w.last_error().is_none());
    w.shutdown();
    assert_eq!(at.open().load_all().unwrap().len(), 2);
}

fn key(area: &str, instance: u16) -> InstanceKey {
    InstanceKey {
        area: area.into(),
        instance,
    }
}

fn ground_item(item: u16, x: f32, remaining_ms: u64) -> GroundItemDto {
    GroundItemDto {
        item: InvSlotDto {
            item,
            attributes: vec![3; 40],
            health: 90,
            amount: 4,
        },
        x,
        y: 1.0,
        z: -2.0,
        remaining_ms,
    }
}

fn a_submitted_group_is_stored_whole_or_not_at_all(at: &At) {
    use std::sync::atomic::Ordering::Relaxed;
    let mut s = at.open();
    s.apply(&[
        PersistOp::UpsertAccount(row(1, "Alice")),
        PersistOp::ReplaceCharacters {
            account: 1,
            characters: vec![full_character("Aria")],
        },
    ])
    .unwrap();
    let w = Writer::spawn(s).unwrap();
    // A checkpoint group whose last op fails (a character of an account that does not
    // exist: the foreign key): neither the good character nor the ground is stored.
    let mut richer = full_character("Aria");
    richer.gold = 1_000_000;
    w.submit(vec![
        PersistOp::SaveCharacter {
            account: 1,
            slot: 0,
            state: Box::new(richer.clone()),
        },
        PersistOp::ReplaceGround {
            key: key("Town", 2),
            items: vec![ground_item(5, 1.0, 9_000)],
        },
        PersistOp::SaveCharacter {
            account: 99,
            slot: 0,
            state: Box::new(full_character("Ghost")),
        },
    ])
    .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    w.after_commit(move |ok| tx.send(ok).unwrap()).unwrap();
    assert!(!rx.recv().unwrap(), "the failed group is reported");
    assert_eq!(w.stats().failures.load(Relaxed), 3);
    assert_eq!(w.stats().ops_written.load(Relaxed), 0);
    w.shutdown();
    let s = at.open();
    assert_eq!(s.load_all().unwrap()[0].1[0].gold, 9_999);
    assert!(s.load_ground().unwrap().0.is_empty());
}

fn ground_items_are_replaced_per_instance_and_survive_a_reopen(at: &At) {
    let mut s = at.open();
    let town = vec![ground_item(5, 1.0, 9_000), ground_item(6, 2.5, 1)];
    s.apply(&[
        PersistOp::ReplaceGround {
            key: key("Town", 2),
            items: vec![ground_item(1, 0.0, 5)],
        },
        PersistOp::ReplaceGround {
            key: key("Town", 2),
            items: town.clone(),
        },
        PersistOp::ReplaceGround {
            key: key("Town", 0),
            items: vec![ground_item(7, 3.0, 60_000)],
        },
        PersistOp::ReplaceGround {
            key: key("Cave", 0),
            items: vec![ground_item(8, 3.0, 60_000)],
        },
        // An empty ground removes the row.
        PersistOp::ReplaceGround {
            key: key("Cave", 0),
            items: Vec::new(),
        },
    ])
    .unwrap();
    drop(s);
    let s = at.open();
    let (ground, warnings) = s.load_ground().unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(ground.len(), 2);
    assert_eq!(ground[&key("Town", 2)], town);
    assert_eq!(ground[&key("Town", 0)], vec![ground_item(7, 3.0, 60_000)]);
}

#[test]
fn bad_stored_ground_is_skipped_with_a_warning() {
    let d = tmp("badground");
    let mut s = Store::open_dir(&d).unwrap();
    s.apply(&[PersistOp::ReplaceGround {
        key: key("Town", 1),
        items: vec![ground_item(5, 1.0, 9_000)],
    }])
    .unwrap();
    drop(s);
    let conn = rusqlite::Connection::open(d.join(gateway::store::DB_FILE)).unwrap();
    conn.execute_batch(
        "INSERT INTO ground_items VALUES ('Town', 2, 1, X'C1FFFF');
         INSERT INTO ground_items VALUES ('Town', 3, 99, X'90');
         INSERT INTO ground_items VALUES ('Town', 70000, 1, X'90');",
    )
    .unwrap();
    drop(conn);
    let (ground, warnings) = Store::open_dir(&d).unwrap().load_ground().unwrap();
    assert_eq!(ground.len(), 1);
    assert!(ground.contains_key(&key("Town", 1)));
    assert_eq!(warnings.len(), 3, "{warnings:?}");
}

#[test]
fn a_schema_2_database_with_data_migrates_to_3() {
    let d = tmp("migrate2");
    let mut s = Store::open_dir(&d).unwrap();
    s.apply(&[
        PersistOp::UpsertAccount(row(1, "Alice")),
        PersistOp::ReplaceCharacters {
            account: 1,
            characters: vec![full_character("Aria")],
        },
        PersistOp::PutScriptFile {
            name: "a.txt".into(),
            kind: 1,
            data: b"hi".to_vec(),
        },
    ])
    .unwrap();
    drop(s);
    // Back to what version 2 wrote: no ground table.
    let conn = rusqlite::Connection::open(d.join(gateway::store::DB_FILE)).unwrap();
    conn.execute_batch(&format!(
        "{UNDO_4} DROP TABLE ground_items; PRAGMA user_version = 2;"
    ))
    .unwrap();
    drop(conn);
    let mut s = Store::open_dir(&d).unwrap();
    assert_eq!(s.schema_version().unwrap(), 4);
    // The moderation fields are new: empty.
    let mut plain = row(1, "Alice");
    plain.status = Default::default();
    assert_eq!(
        s.load_all().unwrap(),
        vec![(plain, vec![full_character("Aria")])]
    );
    assert_eq!(s.load_scripts().unwrap().0.entries(), 1);
    assert!(s.load_ground().unwrap().0.is_empty());
    s.apply(&[PersistOp::ReplaceGround {
        key: key("Town", 0),
        items: vec![ground_item(5, 1.0, 9_000)],
    }])
    .unwrap();
    assert_eq!(s.load_ground().unwrap().0.len(), 1);
}

#[test]
fn account_commands_create_and_flag_accounts() {
    let d = tmp("account-cmd");
    let data = d.join("data");
    let gw = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_gateway"))
            .arg("account")
            .args(args)
            .arg("--data")
            .arg(&data)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    // `create` reads the password from its standard input (never an argument).
    let create = |user: &str, password: &str, more: &[&str]| {
        use std::io::Write as _;
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_gateway"))
            .args(["account", "create", user, "--password-stdin"])
            .args(more)
            .arg("--data")
            .arg(&data)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(password.as_bytes()).unwrap();
        drop(stdin);
        child.wait_with_output().unwrap()
    };
    let out = create("admin", "s3cret", &["--dm"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = create("joe", "pw", &[]);
    assert!(out.status.success());
    // A duplicate is a one-line error, not a panic.
    let out = create("ADMIN", "x", &[]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("already exists"));
    assert!(gw(&["ban", "joe"]).status.success());
    assert!(gw(&["set-dm", "admin", "--off"]).status.success());
    assert!(gw(&["set-dm", "admin"]).status.success());
    let out = gw(&["ban", "nobody"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no account called"));

    let all = Store::open_dir(&data).unwrap().load_all().unwrap();
    let row = |u: &str| all.iter().find(|(r, _)| r.user == u).unwrap().0.clone();
    assert!(row("admin").is_dm && !row("admin").banned);
    assert!(row("joe").banned && !row("joe").is_dm);
    // The password is stored as the login flow checks it: argon2 over the MD5 hex.
    let md5 = shared::wire::md5_hex(b"s3cret");
    use gateway::session::PasswordHasher as _;
    assert!(
        gateway::session::Argon2Hasher::production()
            .verify(md5.as_bytes(), &row("admin").password_hash)
    );
}

fn character_handles_are_unique_never_reused_and_stable_across_reloads(at: &At) {
    // An older database: characters stored without handles, and a duplicate.
    let mut s = at.open();
    let with_handle = |name: &str, handle| ActorStateDto {
        name: name.into(),
        handle,
        ..ActorStateDto::default()
    };
    s.apply(&[
        PersistOp::UpsertAccount(row(1, "Ann")),
        PersistOp::ReplaceCharacters {
            account: 1,
            characters: vec![with_handle("A1", 0), with_handle("A2", 0)],
        },
        PersistOp::UpsertAccount(row(2, "Bob")),
        PersistOp::ReplaceCharacters {
            account: 2,
            characters: vec![with_handle("B1", 7), with_handle("B2", 7)],
        },
    ])
    .unwrap();
    let handles = |book: &AccountBook| -> Vec<(String, u32)> {
        let mut v = Vec::new();
        for user in ["Ann", "Bob"] {
            let id = book.find_user(user).unwrap();
            for c in &book.get(id).unwrap().characters {
                v.push((c.name.clone(), c.handle));
            }
        }
        v
    };
    let mut book = s.load_book().unwrap();
    let given = handles(&book);
    // The first holder keeps its handle; the others get 1 + the highest in use.
    assert_eq!(
        given,
        vec![
            ("A1".into(), 8),
            ("A2".into(), 9),
            ("B1".into(), 7),
            ("B2".into(), 10)
        ]
    );
    let w = Writer::spawn(s).unwrap();
    w.submit(book.take_persist()).unwrap();
    w.flush().unwrap();
    assert!(w.last_error().is_none());
    w.shutdown();

    // Stable across a reload: nothing to give or save again.
    let s = at.open();
    let mut book = s.load_book().unwrap();
    assert_eq!(handles(&book), given);
    assert!(book.take_persist().is_empty());
    // A new character gets the next one; a zone's snapshot cannot change it.
    let ann = book.find_user("Ann").unwrap();
    let slot = book.add_character(ann, with_handle("A3", 999)).unwrap();
    assert_eq!(book.get(ann).unwrap().characters[2].handle, 11);
    assert!(book.save_character(ann, slot, with_handle("A3", 12345)));
    assert_eq!(book.get(ann).unwrap().characters[2].handle, 11);
    // Deleted, its handle is never given to another character, even after a restart.
    assert!(book.delete_character(ann, slot));
    let w = Writer::spawn(s).unwrap();
    w.submit(book.take_persist()).unwrap();
    w.flush().unwrap();
    assert!(w.last_error().is_none());
    w.shutdown();
    let s = at.open();
    assert_eq!(s.handle_floor().unwrap(), 12);
    let mut book = s.load_book().unwrap();
    let slot = book.add_character(ann, with_handle("A4", 0)).unwrap();
    assert_eq!(
        book.get(ann).unwrap().characters[usize::from(slot)].handle,
        12
    );
    // Imported characters get handles too.
    let id = book
        .import_account(row(0, "Cid"), vec![with_handle("C1", 0)])
        .unwrap();
    assert_eq!(book.get(id).unwrap().characters[0].handle, 13);
}

fn script_files_and_super_globals_survive_a_reopen(at: &At) {
    let store = at.open();
    let (mut scripts, warnings) = store.load_scripts().unwrap();
    assert!(warnings.is_empty());
    assert_eq!(scripts.entries(), 0);
    let w = Writer::spawn(store).unwrap();
    let mut ops = Vec::new();
    ops.push(scripts.write("logs/boot.txt", b"booted".to_vec()).unwrap());
    ops.push(
        scripts
            .write("logs/boot.txt", b"booted twice".to_vec())
            .unwrap(),
    );
    ops.extend(scripts.create_dir("saves").unwrap());
    ops.push(scripts.write("gone.txt", b"x".to_vec()).unwrap());
    ops.extend(scripts.delete("gone.txt").unwrap());
    ops.push(scripts.write("bin.dat", vec![0, 0xff, 0x80, 0]).unwrap());
    ops.extend(scripts.set_global(0, b"zero".to_vec()).unwrap());
    ops.extend(scripts.set_global(99, vec![0xe9, 0]).unwrap());
    ops.extend(scripts.set_global(5, b"temp".to_vec()).unwrap());
    ops.extend(scripts.set_global(5, Vec::new()).unwrap());
    w.submit(ops).unwrap();
    w.flush().unwrap();
    assert!(w.last_error().is_none());
    w.shutdown();

    let (again, warnings) = at.open().load_scripts().unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(again.entries(), 3);
    assert_eq!(again.total_bytes(), 12 + 4);
    assert_eq!(
        again.read("logs/boot.txt").unwrap(),
        Some(&b"booted twice"[..])
    );
    assert_eq!(
        again.read("bin.dat").unwrap(),
        Some(&[0, 0xff, 0x80, 0][..])
    );
    assert_eq!(again.read("gone.txt").unwrap(), None);
    assert_eq!(again.info("saves").unwrap(), (2, 0));
    assert_eq!(again.info("logs").unwrap(), (2, 0));
    assert_eq!(
        again.globals(),
        vec![(0, b"zero".to_vec()), (99, vec![0xe9, 0])]
    );
}

#[test]
fn script_store_limits_and_bad_names_are_errors_and_change_nothing() {
    use gateway::script_store::{MAX_FILE, ScriptStore, ScriptStoreError};
    let mut s = ScriptStore::new();
    for bad in ["", "/abs", "a/../b", "c:/x", "a\u{0}b", ".."] {
        let e = s.write(bad, b"x".to_vec()).unwrap_err();
        assert!(
            matches!(e, ScriptStoreError::BadName { .. }),
            "{bad:?}: {e}"
        );
        assert!(s.read(bad).is_err());
        assert!(s.info(bad).is_err());
        assert!(s.create_dir(bad).is_err());
        assert!(s.delete(bad).is_err());
    }
    let e = s.write("huge", vec![0; MAX_FILE + 1]).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "huge: {} bytes; a script file may hold at most {MAX_FILE} bytes",
            MAX_FILE + 1
        )
    );
    assert!(s.set_global(100, b"x".to_vec()).is_err());
    assert_eq!((s.entries(), s.total_bytes()), (0, 0));
    assert!(s.globals().is_empty());
}

/// An unreadable character row does not stop the load (issue 23): its account is
/// quarantined, can no longer log in (a clear close code), and everyone else loads and
/// logs in as before; the strict loader still names the row.
#[test]
fn an_unreadable_row_quarantines_its_account_and_no_other() {
    let d = tmp("quarantine");
    let mut s = Store::open_dir(&d).unwrap();
    s.apply(&[
        PersistOp::UpsertAccount(row(1, "good")),
        PersistOp::ReplaceCharacters {
            account: 1,
            characters: vec![full_character("Goody")],
        },
        PersistOp::UpsertAccount(row(2, "broken")),
        PersistOp::ReplaceCharacters {
            account: 2,
            characters: vec![full_character("Wrecked"), full_character("Fine")],
        },
    ])
    .unwrap();
    drop(s);
    let conn = rusqlite::Connection::open(d.join(gateway::store::DB_FILE)).unwrap();
    conn.execute(
        "UPDATE characters SET state = x'c1c1c1' WHERE name = 'Wrecked'",
        [],
    )
    .unwrap();
    drop(conn);
    let s = Store::open_dir(&d).unwrap();
    let e = s.load_all().unwrap_err().to_string();
    assert!(e.contains("Wrecked"), "{e}");
    let (book, bad) = s.load_book_quarantining().unwrap();
    assert_eq!(bad.len(), 1);
    assert_eq!((bad[0].account, bad[0].name.as_str()), (2, "Wrecked"));
    assert_eq!(book.len(), 2);
    assert!(book.is_quarantined(2) && !book.is_quarantined(1));
    assert_eq!(book.quarantined_count(), 1);
}

/// A writer over a fresh store holding Alice (account 1) with one character, probing
/// every 50 ms while out of service.
fn alice_writer(name: &str) -> (std::path::PathBuf, Writer, AccountBook) {
    let d = tmp(name);
    let s = Store::open_dir(&d).unwrap();
    let w = Writer::spawn_probing(s, std::time::Duration::from_millis(50)).unwrap();
    let mut book = AccountBook::new();
    let id = book
        .create_account("Alice".into(), "h".into(), String::new())
        .unwrap();
    book.add_character(id, full_character("Aria")).unwrap();
    w.submit(book.take_persist()).unwrap();
    w.flush().unwrap();
    (d, w, book)
}

fn result_of(w: &Writer, ops: Vec<PersistOp>) -> Result<(), gateway::store::Failure> {
    let (tx, rx) = std::sync::mpsc::channel();
    w.submit_then(ops, move |r| tx.send(r).unwrap()).unwrap();
    rx.recv().unwrap()
}

fn wait_until(what: &str, f: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !f() {
        assert!(std::time::Instant::now() < deadline, "timed out: {what}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn a_full_store_names_sqlite_full_keeps_its_root_cause_and_heals() {
    let (d, w, mut book) = alice_writer("full");
    assert!(!w.is_failing());
    // The database may not grow: every write that needs a page fails with SQLITE_FULL.
    w.set_max_pages(Some(1)).unwrap();
    let mut richer = full_character("Aria");
    richer.gold = 1_000_000;
    richer.script_globals = (0..4_000).map(|i| format!("global {i}")).collect();
    assert!(book.save_character(1, 0, richer.clone()));
    let err = result_of(&w, book.take_persist()).unwrap_err();
    assert_eq!(err.cause, FailCause::DiskFull, "{err}");
    assert!(w.is_failing());
    assert_eq!(w.stats().failed_writes(FailCause::DiskFull), 1);
    let e = w.last_error().unwrap();
    assert!(e.contains("SQLITE_FULL"), "{e}");
    // An account the full disk never took: its characters fail on the foreign key. The
    // root cause stays the full disk.
    let fk = result_of(
        &w,
        vec![PersistOp::SaveCharacter {
            account: 42,
            slot: 0,
            state: Box::new(ActorStateDto {
                name: "Ghost".into(),
                ..ActorStateDto::default()
            }),
        }],
    )
    .unwrap_err();
    assert_eq!(fk.cause, FailCause::Constraint, "{fk}");
    let e = w.last_error().unwrap();
    assert!(
        e.starts_with("store writes failing") && e.contains("disk_full (SQLITE_FULL)"),
        "{e}"
    );
    assert_eq!(w.health().root.map(|r| r.cause), Some(FailCause::DiskFull));
    // Space is back: the probe heals the store with nobody writing, and what the failed
    // write left unsaved is written again from memory.
    w.set_max_pages(None).unwrap();
    wait_until("the store heals", || !w.is_failing());
    assert!(w.last_error().is_none());
    let dirty = w.take_dirty();
    assert!(dirty.accounts.contains(&1), "{dirty:?}");
    for ops in resync_ops(&dirty, &book, &Default::default()) {
        assert_eq!(result_of(&w, ops), Ok(()));
    }
    w.shutdown();
    let rows = Store::open_dir(&d).unwrap().load_all().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].1[0].gold, 1_000_000);
}

#[test]
fn each_submission_learns_its_own_result() {
    let (_d, w, _book) = alice_writer("own");
    // Queued together (one transaction); the second fails (a name taken): the first and
    // third are told they are stored, the second that it is not.
    let (tx, rx) = std::sync::mpsc::channel();
    for (i, user) in [(2, "Bob"), (3, "ALICE"), (4, "Carol")] {
        let tx = tx.clone();
        w.submit_or_undo(vec![PersistOp::UpsertAccount(row(i, user))], move |r| {
            tx.send((i, r.map_err(|f| f.cause))).unwrap();
        })
        .unwrap();
    }
    let mut got: Vec<_> = (0..3).map(|_| rx.recv().unwrap()).collect();
    got.sort_by_key(|(i, _)| *i);
    assert_eq!(
        got,
        [(2, Ok(())), (3, Err(FailCause::Constraint)), (4, Ok(()))]
    );
    // A change its submitter undoes is not left for a rewrite.
    assert!(!w.has_dirty());
}

/// The session's side: a reply that waits for the store, undone when it fails.
mod session_replies {
    use super::*;
    use gateway::session::{
        Argon2Hasher, Ctx, LoginThrottle, PeerKey, STORE_UNAVAILABLE, Session, SessionEvent, close,
    };
    use rand::SeedableRng;
    use shared::proto::{
        ClientPacket, CreateAccount, CreateAccountReply, Creds, ServerPacket, VerifyAccount,
    };

    struct Env {
        world: shared::content::World,
        book: AccountBook,
        throttle: LoginThrottle,
        hasher: Argon2Hasher,
        rng: rand_chacha::ChaCha8Rng,
    }

    impl Env {
        fn new() -> Self {
            let mut world = shared::content::demo_world();
            world.misc.allow_account_creation = true;
            Self {
                world,
                book: AccountBook::new(),
                throttle: LoginThrottle::default(),
                hasher: Argon2Hasher::fast_for_tests(),
                rng: rand_chacha::ChaCha8Rng::seed_from_u64(1),
            }
        }

        fn send(&mut self, s: &mut Session, p: &ClientPacket) {
            let mut ctx = Ctx {
                world: &self.world,
                book: &mut self.book,
                throttle: &mut self.throttle,
                hasher: &self.hasher,
                rng: &mut self.rng,
                clock: None,
                gate: &gateway::session::Gate::default(),
            };
            s.handle_packet(0, &mut ctx, p);
        }
    }

    fn drain(s: &mut Session) -> (Vec<ServerPacket>, Vec<SessionEvent>) {
        let mut out = Vec::new();
        while let Some(p) = s.poll_transmit() {
            out.push(p);
        }
        let mut ev = Vec::new();
        while let Some(e) = s.poll_event() {
            ev.push(e);
        }
        (out, ev)
    }

    fn create(user: &str) -> ClientPacket {
        ClientPacket::CreateAccount(CreateAccount {
            creds: Creds::from_password(user, "secret"),
            email: b"a@b.c".to_vec().into(),
        })
    }

    #[test]
    fn a_new_account_whose_write_fails_is_refused_and_forgotten() {
        let mut env = Env::new();
        let mut s = Session::new(PeerKey([1; 16]));
        env.send(&mut s, &create("Dora"));
        assert!(s.awaits_commit(), "the reply waits for the write");
        // The write failed: the book forgets the account, the client hears "refused".
        s.commit_failed(&mut env.book);
        let (out, ev) = drain(&mut s);
        assert_eq!(
            out,
            [ServerPacket::CreateAccount(CreateAccountReply::Refused)]
        );
        assert!(
            ev.iter()
                .any(|e| matches!(e, SessionEvent::Close { code, reason }
            if *code == close::UNAVAILABLE && reason == STORE_UNAVAILABLE))
        );
        assert_eq!(env.book.find_user("Dora"), None);
        assert!(env.book.take_persist().is_empty());
        // Once stored, the same name is created and stays.
        let mut s = Session::new(PeerKey([1; 16]));
        env.send(&mut s, &create("Dora"));
        s.committed();
        let (out, _) = drain(&mut s);
        assert_eq!(
            out,
            [ServerPacket::CreateAccount(CreateAccountReply::Created)]
        );
        assert!(env.book.find_user("Dora").is_some());
    }

    #[test]
    fn logins_and_new_accounts_are_refused_with_code_5_while_the_store_is_down() {
        let mut env = Env::new();
        let mut s = Session::new(PeerKey([2; 16]));
        s.set_store_down(true);
        env.send(&mut s, &create("Eve"));
        let (out, ev) = drain(&mut s);
        assert_eq!(
            out,
            [ServerPacket::CreateAccount(CreateAccountReply::Refused)]
        );
        assert!(
            matches!(ev.as_slice(), [SessionEvent::Close { code, .. }] if *code == close::UNAVAILABLE)
        );
        assert_eq!(env.book.find_user("Eve"), None);
        let mut s = Session::new(PeerKey([2; 16]));
        s.set_store_down(true);
        env.send(
            &mut s,
            &ClientPacket::VerifyAccount(VerifyAccount {
                creds: Creds::from_password("Eve", "secret"),
            }),
        );
        let (out, ev) = drain(&mut s);
        assert!(out.is_empty());
        assert!(
            matches!(ev.as_slice(), [SessionEvent::Close { code, .. }] if *code == close::UNAVAILABLE)
        );
        // Healed: accepted again.
        let mut s = Session::new(PeerKey([2; 16]));
        env.send(&mut s, &create("Eve"));
        let (out, _) = drain(&mut s);
        assert_eq!(
            out,
            [ServerPacket::CreateAccount(CreateAccountReply::Created)]
        );
    }
}

fn timed_bans_mutes_and_the_audit_log_are_stored(at: &At) {
    use gateway::console::{AuditEntry, Role};
    let mut s = at.open();
    let mut banned = row(2, "Mallory");
    banned.banned = true;
    banned.status.ban_until_ms = 1_900_000_000_000;
    banned.status.ban_reason = "griefing".into();
    let entry = |id: u64, action: &str| AuditEntry {
        id,
        at_ms: 1_800_000_000_000 + id,
        operator: "alice".into(),
        role: Role::Moderator,
        action: action.into(),
        target: "Mallory".into(),
        detail: r#"{"minutes":60}"#.into(),
        ok: id != 2,
        result: "done".into(),
    };
    s.apply(&[
        PersistOp::UpsertAccount(row(1, "Alice")),
        PersistOp::UpsertAccount(banned.clone()),
        PersistOp::Audit(Box::new(entry(1, "mute"))),
        PersistOp::Audit(Box::new(entry(2, "ban"))),
        PersistOp::Audit(Box::new(entry(3, "ban"))),
    ])
    .unwrap();
    drop(s);
    let s = at.open();
    let rows: Vec<AccountRow> = s.load_all().unwrap().into_iter().map(|(r, _)| r).collect();
    assert_eq!(rows, vec![row(1, "Alice"), banned]);
    assert_eq!(
        s.load_audit(10).unwrap(),
        vec![entry(1, "mute"), entry(2, "ban"), entry(3, "ban")]
    );
    // The newest, oldest first.
    assert_eq!(
        s.load_audit(2).unwrap(),
        vec![entry(2, "ban"), entry(3, "ban")]
    );
}

#[test]
fn a_schema_3_database_migrates_to_4() {
    let d = tmp("migrate3");
    let mut s = Store::open_dir(&d).unwrap();
    s.apply(&[PersistOp::UpsertAccount(row(1, "Alice"))])
        .unwrap();
    drop(s);
    let conn = rusqlite::Connection::open(d.join(gateway::store::DB_FILE)).unwrap();
    conn.execute_batch(&format!("{UNDO_4} PRAGMA user_version = 3;"))
        .unwrap();
    drop(conn);
    let s = Store::open_dir(&d).unwrap();
    assert_eq!(s.schema_version().unwrap(), 4);
    let mut plain = row(1, "Alice");
    plain.status = Default::default();
    assert_eq!(s.load_all().unwrap(), vec![(plain, vec![])]);
    assert!(s.load_audit(10).unwrap().is_empty());
}

/// The console's restore: one character read back out of a backup file, over the live
/// one (its name, handle and fencing token kept) or after its deletion (its handle
/// kept); refused while its account is in the world, for a name another account took,
/// for a full account, and for a name that is not a plain file name.
#[test]
fn one_character_is_restored_from_a_backup_file() {
    use gateway::store::backups;
    let d = tmp("restore");
    let backup_dir = d.join("backups");
    let w = Writer::spawn(Store::open_dir(&d).unwrap()).unwrap();
    let mut book = AccountBook::new();
    let ann = book
        .create_account("Ann".into(), "h".into(), String::new())
        .unwrap();
    let mut rich = full_character("Rich");
    rich.gold = 5_000;
    book.add_character(ann, rich).unwrap();
    book.add_character(ann, full_character("Gone")).unwrap();
    w.submit(book.take_persist()).unwrap();
    w.flush().unwrap();
    backups::make(&d, &backup_dir, "before.sqlite3").unwrap();
    assert!(
        backups::make(&d, &backup_dir, "before.sqlite3").is_err(),
        "never over a backup"
    );
    assert!(backups::make(&d, &backup_dir, "../escape.sqlite3").is_err());
    let listed = backups::list(&backup_dir).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].name, "before.sqlite3");
    assert!(listed[0].bytes > 0);

    // Since the backup: Rich lost his gold (and was handed out again), Gone was deleted.
    let mut poor = book.get(ann).unwrap().characters[0].clone();
    poor.gold = 3;
    assert!(book.hand_out(ann, 0, 9));
    poor.fence = 9;
    assert!(book.save_character(ann, 0, poor));
    assert!(book.delete_character(ann, 1));
    w.submit(book.take_persist()).unwrap();
    w.flush().unwrap();

    let back = backups::read_character(&backup_dir, "before.sqlite3", "RICH")
        .unwrap()
        .unwrap();
    assert_eq!((back.user.as_str(), back.slot), ("Ann", 0));
    assert_eq!(back.state.gold, 5_000);
    assert!(
        backups::read_character(&backup_dir, "before.sqlite3", "Nobody")
            .unwrap()
            .is_none()
    );
    assert!(backups::read_character(&backup_dir, "missing.sqlite3", "Rich").is_err());

    // In the world: refused, nothing queued.
    book.set_logged_on(ann, true);
    let err = book
        .restore_from_backup(ann, back.state.clone(), 10)
        .unwrap_err();
    assert!(err.contains("in the world"), "{err}");
    assert!(book.take_persist().is_empty());
    book.set_logged_on(ann, false);

    let handle = book.get(ann).unwrap().characters[0].handle;
    assert_eq!(book.restore_from_backup(ann, back.state, 10), Ok(0));
    let now = &book.get(ann).unwrap().characters[0];
    assert_eq!((now.gold, now.handle, now.fence), (5_000, handle, 10));
    // A late save of the copy handed out before is refused, and so is one of a copy
    // whose hand-out never reached the store (a larger token).
    assert!(!book.fence_ok(ann, 0, 9));
    assert!(!book.fence_ok(ann, 0, 11));
    assert!(book.fence_ok(ann, 0, 10));

    // The deleted one comes back as a new last slot, with its own handle.
    let gone = backups::read_character(&backup_dir, "before.sqlite3", "gone")
        .unwrap()
        .unwrap();
    let gone_handle = gone.state.handle;
    assert_eq!(
        book.restore_from_backup(ann, gone.state.clone(), 1).ok(),
        None
    );
    assert_eq!(book.restore_from_backup(ann, gone.state.clone(), 10), Ok(1));
    assert_eq!(book.get(ann).unwrap().characters[1].handle, gone_handle);
    // A name another account holds now is refused.
    let bob = book
        .create_account("Bob".into(), "h".into(), String::new())
        .unwrap();
    let err = book.restore_from_backup(bob, gone.state, 10).unwrap_err();
    assert!(err.contains("another account"), "{err}");

    w.submit(book.take_persist()).unwrap();
    w.flush().unwrap();
    assert!(w.last_error().is_none());
    w.shutdown();
    let loaded = Store::open_dir(&d).unwrap().load_book().unwrap();
    let chars = &loaded.get(ann).unwrap().characters;
    assert_eq!(chars.len(), 2);
    assert_eq!((chars[0].name.as_str(), chars[0].gold), ("Rich", 5_000));
    assert_eq!(chars[1].name, "Gone");
}

/// One gateway writes a Postgres database at a time (until several share one): a second
/// store's claim is refused while the first holds it, and granted once the first is gone,
/// with a newer control-plane epoch.
#[test]
fn a_postgres_database_takes_one_writer_at_a_time() {
    let Some(at) = At::postgres() else { return };
    let first = at.open();
    let e1 = first.claim_exclusive(1_000).unwrap();
    assert!(e1 >= 1_000, "at least the wall clock: {e1}");
    first.check_lease().unwrap();
    let second = at.open();
    let err = second.claim_exclusive(1_000).unwrap_err();
    assert!(err.to_string().contains("one writer at a time"), "{err}");
    drop(first);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let e2 = loop {
        if let Ok(e) = second.claim_exclusive(1_000) {
            break e;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "released with its connection"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(e2 > e1, "each claim raises the epoch: {e1} then {e2}");
}

/// A gateway that lost the database steps down, and its writes never land: once its
/// connection is gone (the server ended it: a partition, a restart) its lease check says
/// so, and once another store has claimed a newer epoch, a transaction of the old one is
/// refused whole, before any of its ops is applied. SQLite's claim raises the epoch too.
#[test]
fn a_deposed_store_is_told_and_its_writes_are_refused() {
    let Some(at) = At::postgres() else { return };
    let At::Pg(_, url) = &at else { return };
    let mut old = at.open();
    let e1 = old.claim_exclusive(5).unwrap();
    let mut admin = postgres::Client::connect(url, postgres::NoTls).unwrap();
    // Another claim while the old holder still believes it holds the database (its lock
    // was lost without it noticing): the epoch row moves on.
    another_gateway_claims(&mut admin);
    let err = old
        .apply(&[PersistOp::UpsertAccount(row(41, "Late"))])
        .unwrap_err();
    assert!(
        matches!(err, StoreError::Deposed(_)),
        "refused as deposed: {err}"
    );
    assert!(err.to_string().contains(&format!("ours {e1}")), "{err}");
    assert!(matches!(old.check_lease(), Err(StoreError::Deposed(_))));
    drop(old);
    let fresh = at.open();
    assert!(
        fresh.load_book().unwrap().find_user("Late").is_none(),
        "nothing of the refused transaction landed"
    );

    // The server ends a holder's connection: its next lease check says it is deposed.
    let holder = at.open();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while holder.claim_exclusive(5).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the old lock is freed"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    holder.check_lease().unwrap();
    admin
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_locks \
             WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid()",
            &[],
        )
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match holder.check_lease() {
            Err(StoreError::Deposed(why)) => {
                assert!(why.contains("connection"), "{why}");
                break;
            }
            other => assert!(
                std::time::Instant::now() < deadline,
                "still holding: {other:?}"
            ),
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }

    // SQLite: the data directory's lock is the claim; each start raises the epoch.
    let sq = At::sqlite("epoch");
    let a = sq.open().claim_exclusive(7).unwrap();
    let b = sq.open().claim_exclusive(7).unwrap();
    assert!(b > a && a >= 7, "{a} then {b}");
    sq.open().check_lease().unwrap();
}
