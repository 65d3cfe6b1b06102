//! Session state machine tests with simulated time: accounts, login, throttle, catalogue,
//! characters, start game, protocol violations and garbage input.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use gateway::session::{
    AccountBook, Argon2Hasher, Ctx, LoginThrottle, PeerKey, PersistOp, Session, SessionEvent,
    ThrottleLimits, close,
};
use proptest::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use shared::content::World;
use shared::proto::*;
use shared::wire::RcString;

struct Env {
    world: World,
    book: AccountBook,
    throttle: LoginThrottle,
    hasher: Argon2Hasher,
    rng: ChaCha8Rng,
    gate: gateway::session::Gate,
}

const PEER: PeerKey = PeerKey([7; 16]);

impl Env {
    fn new() -> Self {
        let mut world = shared::content::demo_world();
        world.misc.allow_account_creation = true;
        world.misc.max_account_chars = 2;
        world.attributes.assignment_points = 10;
        world.names_filter = vec!["badword".into()];
        Self {
            world,
            book: AccountBook::new(),
            // Five verifications a minute per network; creations are limited in their own
            // test.
            throttle: LoginThrottle::with_limits(ThrottleLimits {
                attempts_per_minute: 5,
                creations_per_hour: 1_000,
                // The per-account wait has its own test.
                account_delay_ms: 0,
                ..ThrottleLimits::default()
            }),
            hasher: Argon2Hasher::fast_for_tests(),
            rng: ChaCha8Rng::seed_from_u64(1),
            gate: gateway::session::Gate::default(),
        }
    }

    fn send(
        &mut self,
        s: &mut Session,
        now: u64,
        p: ClientPacket,
    ) -> (Vec<ServerPacket>, Vec<SessionEvent>) {
        let mut ctx = Ctx {
            world: &self.world,
            book: &mut self.book,
            throttle: &mut self.throttle,
            hasher: &self.hasher,
            rng: &mut self.rng,
            clock: None,
            gate: &self.gate,
        };
        s.handle_packet(now, &mut ctx, &p);
        drain(s)
    }

    fn send_raw(
        &mut self,
        s: &mut Session,
        now: u64,
        ty: u8,
        payload: &[u8],
    ) -> (Vec<ServerPacket>, Vec<SessionEvent>) {
        let mut ctx = Ctx {
            world: &self.world,
            book: &mut self.book,
            throttle: &mut self.throttle,
            hasher: &self.hasher,
            rng: &mut self.rng,
            clock: None,
            gate: &self.gate,
        };
        s.handle_frame(now, &mut ctx, ty, payload);
        drain(s)
    }

    fn playable(&self) -> u16 {
        self.world
            .actors
            .iter()
            .find(|a| a.playable)
            .map(|a| a.id)
            .expect("playable template")
    }

    /// Creates the account `user`/`pw` and returns the session.
    fn account(&mut self, user: &str, pw: &str) -> Session {
        let mut s = Session::new(PEER);
        let (out, _) = self.send(&mut s, 0, create_account(user, pw));
        assert_eq!(
            out,
            vec![ServerPacket::CreateAccount(CreateAccountReply::Created)]
        );
        s
    }

    fn create_char(
        &mut self,
        s: &mut Session,
        user: &str,
        pw: &str,
        name: &str,
        points: Vec<u8>,
    ) -> CreateCharacterReply {
        let p = ClientPacket::CreateCharacter(CreateCharacter {
            creds: Creds::from_password(user, pw),
            actor_id: self.playable(),
            gender: 0,
            face: 1,
            hair: 1,
            beard: 0,
            body: 0,
            points,
            character_name: RcString::from(name),
        });
        match self.send(s, 0, p).0.as_slice() {
            [ServerPacket::CreateCharacter(r)] => *r,
            other => panic!("unexpected {other:?}"),
        }
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

fn create_account(user: &str, pw: &str) -> ClientPacket {
    ClientPacket::CreateAccount(CreateAccount {
        creds: Creds::from_password(user, pw),
        email: RcString::from("a@b.example"),
    })
}

fn verify(user: &str, pw: &str) -> ClientPacket {
    ClientPacket::VerifyAccount(VerifyAccount {
        creds: Creds::from_password(user, pw),
    })
}

fn closes_with(ev: &[SessionEvent]) -> Option<u32> {
    ev.iter().find_map(|e| match e {
        SessionEvent::Close { code, .. } => Some(*code),
        _ => None,
    })
}

fn points(total: u8) -> Vec<u8> {
    let mut p = vec![0u8; 40];
    p[0] = total;
    p
}

#[test]
fn create_account_and_login() {
    let mut env = Env::new();
    let mut s = env.account("Alice_1", "secret");
    // Persisted: an account row.
    assert_eq!(env.book.len(), 1);
    let (out, _) = env.send(&mut s, 1, verify("alice_1", "secret"));
    assert_eq!(
        out,
        vec![ServerPacket::VerifyAccount(VerifyAccountReply::Ok {
            characters: vec![]
        })]
    );
    // Duplicate (case-insensitive) and invalid names are refused.
    let (out, _) = env.send(&mut s, 2, create_account("ALICE_1", "x"));
    assert_eq!(
        out,
        vec![ServerPacket::CreateAccount(CreateAccountReply::Refused)]
    );
    for bad in ["", "a b", "semi;colon", &"x".repeat(51)] {
        let (out, _) = env.send(&mut s, 2, create_account(bad, "x"));
        assert_eq!(
            out,
            vec![ServerPacket::CreateAccount(CreateAccountReply::Refused)],
            "{bad:?}"
        );
    }
    // Latin-1 high bytes are allowed.
    let p = ClientPacket::CreateAccount(CreateAccount {
        creds: Creds {
            user: RcString(vec![0xC9, b'l', b'o', b'i', b's', b'e']),
            password_md5: Creds::from_password("x", "pw").password_md5,
        },
        email: RcString::from("e@x"),
    });
    let (out, _) = env.send(&mut s, 3, p);
    assert_eq!(
        out,
        vec![ServerPacket::CreateAccount(CreateAccountReply::Created)]
    );
}

#[test]
fn account_creation_respects_misc_and_deobfuscates_email() {
    let mut env = Env::new();
    let mut s = Session::new(PEER);
    // The email travels obfuscated; the raw frame path de-obfuscates it.
    let bytes = create_account("bob", "pw").to_bytes();
    let (out, ev) = env.send_raw(&mut s, 0, bytes[0], &bytes[1..]);
    assert_eq!(
        out,
        vec![ServerPacket::CreateAccount(CreateAccountReply::Created)]
    );
    let row = ev.iter().find_map(|e| match e {
        SessionEvent::Persist(PersistOp::UpsertAccount(r)) => Some(r.clone()),
        _ => None,
    });
    let row = row.expect("account persisted");
    assert_eq!(row.email, "a@b.example");
    assert!(
        row.password_hash.starts_with("$argon2id$"),
        "{}",
        row.password_hash
    );
    assert!(!row.password_hash.contains(&shared::wire::md5_hex(b"pw")));
    env.world.misc.allow_account_creation = false;
    let (out, _) = env.send(&mut s, 1, create_account("carol", "pw"));
    assert_eq!(
        out,
        vec![ServerPacket::CreateAccount(CreateAccountReply::Refused)]
    );
}

#[test]
fn every_pre_auth_failure_is_p_and_banned_only_after_password() {
    let mut env = Env::new();
    let mut s = env.account("dave", "pw");
    let (out, _) = env.send(&mut s, 1, verify("dave", "wrong"));
    assert_eq!(
        out,
        vec![ServerPacket::VerifyAccount(VerifyAccountReply::BadPassword)]
    );
    let (out, _) = env.send(&mut s, 2, verify("nobody", "pw"));
    assert_eq!(
        out,
        vec![ServerPacket::VerifyAccount(VerifyAccountReply::BadPassword)]
    );
    let id = env.book.find_user("dave").expect("id");
    env.book.set_banned(id, true);
    let mut s2 = Session::new(PeerKey([8; 16]));
    let (out, _) = env.send(&mut s2, 3, verify("dave", "wrong"));
    assert_eq!(
        out,
        vec![ServerPacket::VerifyAccount(VerifyAccountReply::BadPassword)]
    );
    let (out, _) = env.send(&mut s2, 4, verify("dave", "pw"));
    assert_eq!(
        out,
        vec![ServerPacket::VerifyAccount(VerifyAccountReply::Banned)]
    );
}

#[test]
fn throttle_after_five_attempts_one_more_every_twelve_seconds() {
    let mut env = Env::new();
    let _ = env.account("erin", "pw");
    let mut s = Session::new(PEER);
    for t in 0..5 {
        let (out, ev) = env.send(&mut s, 1000 + t, verify("erin", "bad"));
        assert_eq!(
            out,
            vec![ServerPacket::VerifyAccount(VerifyAccountReply::BadPassword)]
        );
        assert_eq!(closes_with(&ev), None);
    }
    // Sixth attempt at once: even the right password closes with code 4, unverified.
    let (out, ev) = env.send(&mut s, 2000, verify("erin", "pw"));
    assert!(out.is_empty());
    assert_eq!(closes_with(&ev), Some(close::RATE_LIMITED));
    assert!(s.is_closed());
    // A new connection from the same network is still throttled, whatever its clock...
    let mut s2 = Session::new(PEER);
    let (_, ev) = env.send(&mut s2, 0, verify("erin", "pw"));
    assert_eq!(closes_with(&ev), Some(close::RATE_LIMITED));
    let mut s2 = Session::new(PEER);
    let (_, ev) = env.send(&mut s2, 12_000, verify("erin", "pw"));
    assert_eq!(closes_with(&ev), Some(close::RATE_LIMITED));
    // ...another network is not...
    let mut s3 = Session::new(PeerKey([9; 16]));
    let (out, _) = env.send(&mut s3, 12_000, verify("erin", "pw"));
    assert!(matches!(
        out.as_slice(),
        [ServerPacket::VerifyAccount(VerifyAccountReply::Ok { .. })]
    ));
    // ...and one attempt comes back every 12 s (5 a minute): here, 12 s after the
    // refused ones.
    let mut s4 = Session::new(PEER);
    let (out, ev) = env.send(&mut s4, 24_100, verify("erin", "pw"));
    assert_eq!(closes_with(&ev), None);
    assert!(matches!(
        out.as_slice(),
        [ServerPacket::VerifyAccount(VerifyAccountReply::Ok { .. })]
    ));
    // The same credentials again on that connection cost nothing.
    let (out, ev) = env.send(&mut s4, 24_100, verify("erin", "pw"));
    assert_eq!(closes_with(&ev), None);
    assert_eq!(out.len(), 1);
}

#[test]
fn failed_checks_make_the_account_wait_whatever_network_asks() {
    let mut env = Env::new();
    env.throttle = LoginThrottle::with_limits(ThrottleLimits {
        attempts_per_minute: 1_000,
        creations_per_hour: 1_000,
        account_delay_ms: 1_000,
        account_delay_max_ms: 4_000,
        ..ThrottleLimits::default()
    });
    let _ = env.account("fay", "pw");
    let _ = env.account("gus", "pw");
    let bad = [ServerPacket::VerifyAccount(VerifyAccountReply::BadPassword)];
    let net = |n: u8| Session::new(PeerKey([n; 16]));
    let (out, ev) = env.send(&mut net(20), 10_000, verify("fay", "bad"));
    assert_eq!((out.as_slice(), closes_with(&ev)), (&bad[..], None));
    // Another network during the wait, even with the right password and the name in
    // another case: closed with code 4, unverified.
    let mut s = net(21);
    let (out, ev) = env.send(&mut s, 10_500, verify("FAY", "pw"));
    assert!(out.is_empty());
    assert_eq!(closes_with(&ev), Some(close::RATE_LIMITED));
    // Other accounts are not held.
    let (out, _) = env.send(&mut net(21), 10_500, verify("gus", "pw"));
    assert!(matches!(
        out.as_slice(),
        [ServerPacket::VerifyAccount(VerifyAccountReply::Ok { .. })]
    ));
    // The wait over, the owner logs in, and that clears it: one failure waits 1 s again.
    let (out, _) = env.send(&mut net(22), 11_000, verify("fay", "pw"));
    assert!(matches!(
        out.as_slice(),
        [ServerPacket::VerifyAccount(VerifyAccountReply::Ok { .. })]
    ));
    let (out, _) = env.send(&mut net(23), 11_100, verify("fay", "bad"));
    assert_eq!(out, bad);
    let (_, ev) = env.send(&mut net(24), 12_099, verify("fay", "bad"));
    assert_eq!(closes_with(&ev), Some(close::RATE_LIMITED));
    let (out, _) = env.send(&mut net(24), 12_100, verify("fay", "bad"));
    assert_eq!(out, bad, "answered once the wait is over");
    // The owner's network is not held to the wait while the guessing goes on.
    let (out, _) = env.send(&mut net(22), 12_101, verify("fay", "pw"));
    assert!(matches!(
        out.as_slice(),
        [ServerPacket::VerifyAccount(VerifyAccountReply::Ok { .. })]
    ));
}

#[test]
fn account_creation_has_its_own_limit_per_network() {
    let mut env = Env::new();
    env.throttle = LoginThrottle::with_limits(ThrottleLimits {
        attempts_per_minute: 5,
        creations_per_hour: 2,
        ..ThrottleLimits::default()
    });
    let mut s = Session::new(PEER);
    for (i, name) in ["one", "two"].into_iter().enumerate() {
        let (out, _) = env.send(&mut s, i as u64, create_account(name, "pw"));
        assert_eq!(
            out,
            vec![ServerPacket::CreateAccount(CreateAccountReply::Created)]
        );
    }
    let (out, ev) = env.send(&mut s, 5, create_account("three", "pw"));
    assert!(out.is_empty());
    assert_eq!(closes_with(&ev), Some(close::RATE_LIMITED));
    // Another network may; the first may again half an hour later.
    let mut s2 = Session::new(PeerKey([9; 16]));
    let (out, _) = env.send(&mut s2, 10, create_account("three", "pw"));
    assert_eq!(
        out,
        vec![ServerPacket::CreateAccount(CreateAccountReply::Created)]
    );
    let mut s3 = Session::new(PEER);
    let (out, _) = env.send(&mut s3, 30 * 60_000 + 10, create_account("four", "pw"));
    assert_eq!(
        out,
        vec![ServerPacket::CreateAccount(CreateAccountReply::Created)]
    );
}

#[test]
fn catalogue_blocks_decode() {
    let mut env = Env::new();
    let mut s = Session::new(PEER);
    let (out, _) = env.send(&mut s, 0, ClientPacket::FetchActors(FetchActors {}));
    assert!(out.len() >= 5);
    let mut actors = 0;
    for p in &out {
        let bytes = p.to_bytes();
        let back = ServerPacket::decode_packet(&bytes).expect("decodes");
        assert_eq!(&back, p);
        if let ServerPacket::FetchActors(FetchActorsReply::Actors { actors: a }) = p {
            assert!(a.len() <= 2);
            actors += a.len();
        }
    }
    assert!(matches!(
        out.first(),
        Some(ServerPacket::FetchActors(FetchActorsReply::Attributes {
            assignment: 10,
            ..
        }))
    ));
    assert_eq!(
        out.last(),
        Some(&ServerPacket::FetchActors(FetchActorsReply::ActorsDone {
            total: u16::try_from(actors).unwrap()
        }))
    );
    assert_eq!(actors, env.world.actors.len());
}

#[test]
fn character_rules() {
    let mut env = Env::new();
    let mut s = env.account("fay", "pw");
    // Points over the assignment, wrong count.
    assert_eq!(
        env.create_char(&mut s, "fay", "pw", "Hero", points(11)),
        CreateCharacterReply::Refused
    );
    assert_eq!(
        env.create_char(&mut s, "fay", "pw", "Hero", vec![1; 3]),
        CreateCharacterReply::Refused
    );
    // Name filter (substring, case-insensitive).
    assert_eq!(
        env.create_char(&mut s, "fay", "pw", "xxBADWORDxx", points(0)),
        CreateCharacterReply::InvalidName
    );
    assert_eq!(
        env.create_char(&mut s, "fay", "pw", "", points(0)),
        CreateCharacterReply::InvalidName
    );
    // Wrong password: refused, nothing created.
    assert_eq!(
        env.create_char(&mut s, "fay", "nope", "Hero", points(0)),
        CreateCharacterReply::Refused
    );
    assert_eq!(
        env.create_char(&mut s, "fay", "pw", "Hero", points(10)),
        CreateCharacterReply::Created
    );
    // Unique across accounts, case-insensitively.
    let mut s2 = env.account("gil", "pw2");
    assert_eq!(
        env.create_char(&mut s2, "gil", "pw2", "hero", points(0)),
        CreateCharacterReply::InvalidName
    );
    // MaxAccountChars = 2.
    assert_eq!(
        env.create_char(&mut s, "fay", "pw", "Second", points(0)),
        CreateCharacterReply::Created
    );
    assert_eq!(
        env.create_char(&mut s, "fay", "pw", "Third", points(0)),
        CreateCharacterReply::Refused
    );
    // Points were added to the template values; start from the template.
    let id = env.book.find_user("fay").unwrap();
    let c = &env.book.get(id).unwrap().characters[0];
    let t = env
        .world
        .actors
        .iter()
        .find(|a| a.id == c.template)
        .unwrap();
    assert_eq!(c.attributes[0], i32::from(t.attributes[0].value) + 10);
    assert_eq!(c.area, t.start_area);
    assert_eq!(c.gold, env.world.misc.start_gold);
    assert_eq!(c.reputation, env.world.misc.start_reputation);
    // Non-playable template refused.
    if let Some(np) = env.world.actors.iter().find(|a| !a.playable).map(|a| a.id) {
        let p = ClientPacket::CreateCharacter(CreateCharacter {
            creds: Creds::from_password("gil", "pw2"),
            actor_id: np,
            points: points(0),
            character_name: RcString::from("Monster"),
            ..CreateCharacter::default()
        });
        let (out, _) = env.send(&mut s2, 0, p);
        assert_eq!(
            out,
            vec![ServerPacket::CreateCharacter(CreateCharacterReply::Refused)]
        );
    }
}

#[test]
fn fetch_delete_change_password_and_start_game() {
    let mut env = Env::new();
    let mut s = env.account("hal", "pw");
    assert_eq!(
        env.create_char(&mut s, "hal", "pw", "Hal", points(0)),
        CreateCharacterReply::Created
    );
    assert_eq!(
        env.create_char(&mut s, "hal", "pw", "Hal2", points(0)),
        CreateCharacterReply::Created
    );
    // Fetch with bad creds: "N"; with good creds: C1, C3…, F.
    let fetch = |pw: &str, index| {
        ClientPacket::FetchCharacter(FetchCharacter {
            creds: Creds::from_password("hal", pw),
            index,
        })
    };
    let (out, _) = env.send(&mut s, 0, fetch("bad", 0));
    assert_eq!(
        out,
        vec![ServerPacket::FetchCharacter(FetchCharacterReply::Failed)]
    );
    let (out, _) = env.send(&mut s, 0, fetch("pw", 0));
    assert!(matches!(
        out.first(),
        Some(ServerPacket::FetchCharacter(FetchCharacterReply::Stats {
            level: 1,
            ..
        }))
    ));
    assert!(matches!(
        out.last(),
        Some(ServerPacket::FetchCharacter(
            FetchCharacterReply::Finished { .. }
        ))
    ));
    for p in &out {
        assert_eq!(&ServerPacket::decode_packet(&p.to_bytes()).unwrap(), p);
    }
    let (out, _) = env.send(&mut s, 0, fetch("pw", 9));
    assert_eq!(
        out,
        vec![ServerPacket::FetchCharacter(FetchCharacterReply::Failed)]
    );
    // Delete: new list; bad index or creds: "N".
    let del = |pw: &str, index| {
        ClientPacket::DeleteCharacter(DeleteCharacter {
            creds: Creds::from_password("hal", pw),
            index,
        })
    };
    let (out, _) = env.send(&mut s, 0, del("bad", 0));
    assert_eq!(
        out,
        vec![ServerPacket::DeleteCharacter(DeleteCharacterReply::Refused)]
    );
    let (out, ev) = env.send(&mut s, 0, del("pw", 0));
    match out.as_slice() {
        [ServerPacket::DeleteCharacter(DeleteCharacterReply::List { characters })] => {
            assert_eq!(characters.len(), 1);
            assert_eq!(characters[0].name, RcString::from("Hal2"));
        }
        other => panic!("{other:?}"),
    }
    assert!(ev.iter().any(|e| matches!(
        e,
        SessionEvent::Persist(PersistOp::ReplaceCharacters { .. })
    )));
    assert!(!env.book.character_name_taken("hal"));
    // Change password.
    let cp = |old: &str, new: &str| {
        ClientPacket::ChangePassword(ChangePassword {
            creds: Creds::from_password("hal", old),
            new_password_md5: Creds::from_password("hal", new).password_md5,
        })
    };
    let (out, _) = env.send(&mut s, 0, cp("bad", "pw3"));
    assert_eq!(
        out,
        vec![ServerPacket::ChangePassword(
            ChangePasswordReply::BadPassword
        )]
    );
    let (out, _) = env.send(&mut s, 0, cp("pw", "pw3"));
    assert_eq!(
        out,
        vec![ServerPacket::ChangePassword(ChangePasswordReply::Changed)]
    );
    let mut other = Session::new(PeerKey([3; 16]));
    let (out, _) = env.send(&mut other, 0, verify("hal", "pw"));
    assert_eq!(
        out,
        vec![ServerPacket::VerifyAccount(VerifyAccountReply::BadPassword)]
    );
    // Start game.
    let sg = |pw: &str, index| {
        ClientPacket::StartGame(StartGame {
            creds: Creds::from_password("hal", pw),
            index,
        })
    };
    let (out, _) = env.send(&mut s, 0, sg("pw", 0));
    assert_eq!(out, vec![ServerPacket::StartGame(StartGameReply::Failed)]);
    let (out, ev) = env.send(&mut s, 0, sg("pw3", 0));
    assert!(out.is_empty());
    match ev.as_slice() {
        [
            SessionEvent::EnterWorld {
                index: 0,
                is_dm: false,
                state,
                ..
            },
        ] => assert_eq!(state.name, "Hal2"),
        other => panic!("{other:?}"),
    }
    assert!(s.in_game().is_some());
    // A second login now sees "L" after the password; a second start fails.
    let (out, _) = env.send(&mut other, 0, verify("hal", "pw3"));
    assert_eq!(
        out,
        vec![ServerPacket::VerifyAccount(VerifyAccountReply::LoggedOn)]
    );
    let (out, _) = env.send(&mut other, 0, sg("pw3", 0));
    assert_eq!(out, vec![ServerPacket::StartGame(StartGameReply::Failed)]);
    // In game, menu packets are violations; in-game packets go to the zone.
    let (_, ev) = env.send(&mut s, 0, ClientPacket::Jump(JumpC2S::default()));
    assert!(matches!(
        ev.as_slice(),
        [SessionEvent::ToZone(ClientPacket::Jump(_))]
    ));
    s.disconnected(&mut env.book);
    let (out, _) = env.send(&mut other, 0, verify("hal", "pw3"));
    assert!(matches!(
        out.as_slice(),
        [ServerPacket::VerifyAccount(VerifyAccountReply::Ok { .. })]
    ));
}

#[test]
fn in_game_packet_before_login_closes_with_code_2() {
    let mut env = Env::new();
    let mut s = Session::new(PEER);
    let (out, ev) = env.send(&mut s, 0, ClientPacket::Jump(JumpC2S::default()));
    assert!(out.is_empty());
    assert_eq!(closes_with(&ev), Some(close::PROTOCOL));
    // After closing, nothing more happens.
    let (out, ev) = env.send(&mut s, 0, verify("x", "y"));
    assert!(out.is_empty() && ev.is_empty());
    // Undecodable frames also close with 2.
    let mut s = Session::new(PEER);
    let (_, ev) = env.send_raw(&mut s, 0, 2, &[200]);
    assert_eq!(closes_with(&ev), Some(close::PROTOCOL));
    let mut s = Session::new(PEER);
    let (_, ev) = env.send_raw(&mut s, 0, 250, &[]);
    assert_eq!(closes_with(&ev), Some(close::PROTOCOL));
}

/// A stock client asks for the update file list first, on a fresh connection: it gets the
/// empty list (`0a 00 00`) and the connection stays up, before login or without one, and
/// whatever the payload.
#[test]
fn fetch_update_files_answers_the_empty_list_and_keeps_the_connection() {
    let mut env = Env::new();
    let empty = ServerPacket::FetchUpdateFiles(UpdateFiles {
        entries: vec![],
        total: Some(0),
    });
    assert_eq!(empty.to_bytes(), [0x0a, 0x00, 0x00]);
    let mut s = Session::new(PEER);
    let (out, ev) = env.send(
        &mut s,
        0,
        ClientPacket::FetchUpdateFiles(FetchUpdateFiles {}),
    );
    assert_eq!((out, ev), (vec![empty.clone()], vec![]));
    // As often as asked, as raw frames too, and with bytes Realm Crafter would not read.
    for payload in [&[][..], &[1, 2, 3][..]] {
        let (out, ev) = env.send_raw(&mut s, 0, ids::P_FETCH_UPDATE_FILES, payload);
        assert_eq!((out, ev), (vec![empty.clone()], vec![]));
    }
    assert!(!s.is_closed());
    // The login still works on the same connection, and the list is still answered after
    // a verified login (before P_StartGame).
    let _ = env.account("una", "pw");
    let (out, ev) = env.send(&mut s, 0, verify("una", "pw"));
    assert!(matches!(
        out.as_slice(),
        [ServerPacket::VerifyAccount(VerifyAccountReply::Ok { .. })]
    ));
    assert!(closes_with(&ev).is_none());
    let (out, _) = env.send(
        &mut s,
        0,
        ClientPacket::FetchUpdateFiles(FetchUpdateFiles {}),
    );
    assert_eq!(out, vec![empty]);
    assert!(!s.is_closed());
}

/// With a `Files.dat`, `P_FetchUpdateFiles` answers its entries in Realm Crafter's chunks
/// (the total last), whatever the payload.
#[test]
fn fetch_update_files_answers_the_games_list() {
    let mut env = Env::new();
    let files: Vec<UpdateFileEntry> = (0..300u32)
        .map(|i| UpdateFileEntry {
            crc: i.wrapping_mul(0x9E37_79B9),
            name: RcString::from(format!("Data\\Textures\\texture number {i}.png").as_str()),
        })
        .collect();
    env.gate = gateway::session::Gate::new(files.clone());
    let want: Vec<ServerPacket> = update_file_chunks(&files)
        .into_iter()
        .map(ServerPacket::FetchUpdateFiles)
        .collect();
    assert!(want.len() > 1);
    let mut s = Session::new(PEER);
    let (out, ev) = env.send(
        &mut s,
        0,
        ClientPacket::FetchUpdateFiles(FetchUpdateFiles {}),
    );
    assert_eq!((out, ev), (want.clone(), vec![]));
    let (out, _) = env.send_raw(&mut s, 0, ids::P_FETCH_UPDATE_FILES, &[9]);
    assert_eq!(out, want);
    // What the client reads back: every entry, the total last.
    let got: Vec<UpdateFileEntry> = want
        .iter()
        .flat_map(|p| match p {
            ServerPacket::FetchUpdateFiles(c) => c.entries.clone(),
            _ => vec![],
        })
        .collect();
    assert_eq!(got, files);
    assert!(!s.is_closed());
}

/// While locked, nobody fetches the list, logs in, creates an account or enters the game:
/// each gets its refusal (if it has one) and code 5 with the lock's message. The catalogue
/// still answers. Unlocked, the same connection's successor logs in.
#[test]
fn the_maintenance_lock_refuses_logins_and_the_update_list() {
    let mut env = Env::new();
    let mut s = env.account("lock", "pw");
    let (out, _) = env.send(&mut s, 0, verify("lock", "pw"));
    assert!(matches!(
        out.as_slice(),
        [ServerPacket::VerifyAccount(VerifyAccountReply::Ok { .. })]
    ));
    env.gate = gateway::session::Gate::default().with_lock(Some("patch 2".into()));
    let closes_locked = |ev: &[SessionEvent]| {
        ev.iter().any(|e| {
            matches!(e, SessionEvent::Close { code, reason }
                if *code == close::UNAVAILABLE && reason.contains("locked for maintenance (patch 2)"))
        })
    };
    let (out, ev) = env.send(&mut s, 0, ClientPacket::FetchActors(FetchActors {}));
    assert!(
        !out.is_empty() && ev.is_empty(),
        "the catalogue still answers"
    );
    let (out, ev) = env.send(
        &mut s,
        0,
        ClientPacket::StartGame(StartGame {
            creds: Creds::from_password("lock", "pw"),
            index: 0,
        }),
    );
    assert_eq!(out, vec![ServerPacket::StartGame(StartGameReply::Failed)]);
    assert!(closes_locked(&ev), "{ev:?}");
    assert!(s.is_closed());
    for p in [
        ClientPacket::FetchUpdateFiles(FetchUpdateFiles {}),
        verify("lock", "pw"),
        create_account("newbie", "pw"),
    ] {
        let mut s = Session::new(PEER);
        let (out, ev) = env.send(&mut s, 0, p.clone());
        assert!(closes_locked(&ev), "{p:?}: {ev:?}");
        assert!(
            out.iter()
                .all(|r| matches!(r, ServerPacket::CreateAccount(CreateAccountReply::Refused))),
            "{out:?}"
        );
    }
    let mut s = Session::new(PEER);
    let (_, ev) = env.send_raw(&mut s, 0, ids::P_FETCH_UPDATE_FILES, &[1]);
    assert!(closes_locked(&ev), "{ev:?}");
    assert!(env.book.find_user("newbie").is_none());
    env.gate = gateway::session::Gate::default();
    let mut s = Session::new(PEER);
    let (out, _) = env.send(&mut s, 0, verify("lock", "pw"));
    assert!(matches!(
        out.as_slice(),
        [ServerPacket::VerifyAccount(VerifyAccountReply::Ok { .. })]
    ));
}

/// `P_FetchItems` (8) and `P_SelectScenery` (42), which Realm Crafter never handled, are
/// ignored and counted (an `Ignored` event), whatever their payload: not a disconnect.
#[test]
fn unused_packets_are_ignored_not_a_disconnect() {
    let mut env = Env::new();
    let mut s = Session::new(PEER);
    let (out, ev) = env.send(&mut s, 0, ClientPacket::FetchItems(FetchItems {}));
    assert!(out.is_empty());
    assert_eq!(ev, vec![SessionEvent::Ignored { id: 8 }]);
    let scenery = ClientPacket::SelectScenery(SelectScenery {
        scenery: 3,
        handle: 16,
    });
    let (out, ev) = env.send(&mut s, 0, scenery);
    assert!(out.is_empty());
    assert_eq!(ev, vec![SessionEvent::Ignored { id: 42 }]);
    for (ty, payload) in [(8u8, &[1u8][..]), (42, &[1, 2][..]), (42, &[][..])] {
        let (out, ev) = env.send_raw(&mut s, 0, ty, payload);
        assert!(out.is_empty());
        assert_eq!(ev, vec![SessionEvent::Ignored { id: ty }]);
    }
    assert!(!s.is_closed());
    // The next packet is served as usual.
    let (out, _) = env.send(
        &mut s,
        0,
        ClientPacket::FetchUpdateFiles(FetchUpdateFiles {}),
    );
    assert_eq!(out.len(), 1);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
    #[test]
    fn garbage_never_panics(frames in prop::collection::vec((0u8..=255, prop::collection::vec(any::<u8>(), 0..120)), 1..12)) {
        let mut env = Env::new();
        let _ = env.account("zed", "pw");
        let mut s = Session::new(PEER);
        for (i, (ty, payload)) in frames.iter().enumerate() {
            let _ = env.send_raw(&mut s, i as u64 * 100, *ty, payload);
        }
    }
}

#[test]
fn menu_packet_in_game_closes_and_nothing_is_forwarded_after() {
    let mut env = Env::new();
    let mut s = env.account("ivy", "pw");
    assert_eq!(
        env.create_char(&mut s, "ivy", "pw", "Ivy", points(0)),
        CreateCharacterReply::Created
    );
    let sg = ClientPacket::StartGame(StartGame {
        creds: Creds::from_password("ivy", "pw"),
        index: 0,
    });
    let (_, ev) = env.send(&mut s, 0, sg);
    assert!(matches!(ev.as_slice(), [SessionEvent::EnterWorld { .. }]));
    let (_, ev) = env.send(&mut s, 0, verify("ivy", "pw"));
    assert_eq!(closes_with(&ev), Some(close::PROTOCOL));
    let (out, ev) = env.send(&mut s, 0, ClientPacket::Jump(JumpC2S::default()));
    assert!(out.is_empty() && ev.is_empty());
    // Still logged on until the shell reports the disconnect.
    let id = env.book.find_user("ivy").unwrap();
    assert!(env.book.get(id).unwrap().logged_on);
    s.disconnected(&mut env.book);
    assert!(!env.book.get(id).unwrap().logged_on);
}

#[test]
fn catalogue_is_not_an_amplifier() {
    let mut env = Env::new();
    let mut s = Session::new(PEER);
    for _ in 0..gateway::session::MAX_CATALOGUE_REQUESTS {
        let (out, ev) = env.send(&mut s, 0, ClientPacket::FetchActors(FetchActors {}));
        assert!(!out.is_empty() && ev.is_empty());
    }
    let (out, ev) = env.send(&mut s, 0, ClientPacket::FetchActors(FetchActors {}));
    assert!(out.is_empty());
    assert_eq!(closes_with(&ev), Some(close::PROTOCOL));
}

fn any_login_packet() -> impl Strategy<Value = ClientPacket> {
    let user = prop::sample::select(vec!["zed", "ZED", "other", ""]);
    let pw = prop::sample::select(vec!["pw", "bad", ""]);
    let creds = (user, pw).prop_map(|(u, p)| Creds::from_password(u, p));
    let name = prop::sample::select(vec!["Zed", "zed", "badword", "", "Q"]);
    prop_oneof![
        creds
            .clone()
            .prop_map(|creds| ClientPacket::VerifyAccount(VerifyAccount { creds })),
        creds
            .clone()
            .prop_map(|creds| ClientPacket::CreateAccount(CreateAccount {
                creds,
                email: RcString::from("e")
            })),
        (creds.clone(), 0u8..4).prop_map(|(creds, index)| ClientPacket::FetchCharacter(
            FetchCharacter { creds, index }
        )),
        (creds.clone(), 0u8..4).prop_map(|(creds, index)| ClientPacket::DeleteCharacter(
            DeleteCharacter { creds, index }
        )),
        (creds.clone(), 0u8..4)
            .prop_map(|(creds, index)| ClientPacket::StartGame(StartGame { creds, index })),
        (creds.clone(), name, 0u8..12).prop_map(|(creds, n, p)| ClientPacket::CreateCharacter(
            CreateCharacter {
                creds,
                actor_id: 0,
                points: points(p),
                character_name: RcString::from(n),
                ..CreateCharacter::default()
            }
        )),
        creds.prop_map(|creds| ClientPacket::ChangePassword(ChangePassword {
            new_password_md5: creds.password_md5.clone(),
            creds,
        })),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]
    /// Random login sequences: nothing panics, a wrong password never discloses anything,
    /// and at most 5 failures pass before the connection closes with code 4.
    #[test]
    fn login_sequences_never_disclose_without_the_password(seq in prop::collection::vec(any_login_packet(), 1..20)) {
        let mut env = Env::new();
        let _ = env.account("zed", "pw");
        // No other account can appear, so "zed"/"pw" is the only good login.
        env.world.misc.allow_account_creation = false;
        let mut s = Session::new(PEER);
        let mut failures = 0;
        for (i, p) in seq.iter().enumerate() {
            let good = match p {
                ClientPacket::VerifyAccount(VerifyAccount { creds })
                | ClientPacket::FetchCharacter(FetchCharacter { creds, .. })
                | ClientPacket::StartGame(StartGame { creds, .. }) => {
                    Some(creds.password_md5 == Creds::from_password("", "pw").password_md5
                        && creds.user.0.eq_ignore_ascii_case(b"zed"))
                }
                _ => None,
            };
            let (out, ev) = env.send(&mut s, i as u64, p.clone());
            if s.is_closed() {
                prop_assert!(closes_with(&ev).is_some() || ev.is_empty());
                break;
            }
            if good == Some(false) {
                for o in &out {
                    let leaked = matches!(o,
                        ServerPacket::VerifyAccount(VerifyAccountReply::Ok { .. } | VerifyAccountReply::Banned | VerifyAccountReply::LoggedOn)
                        | ServerPacket::FetchCharacter(FetchCharacterReply::Stats { .. }));
                    prop_assert!(!leaked, "{o:?} for {p:?}");
                }
                let entered = ev.iter().any(|e| matches!(e, SessionEvent::EnterWorld { .. }));
                prop_assert!(!entered);
                failures += 1;
            }
            prop_assert!(failures <= 5, "throttle never engaged");
        }
    }
}

/// A quarantined account (a stored row could not be read) is told so after its password,
/// with its own close code, and nothing of it changes; another account logs in.
#[test]
fn a_quarantined_account_cannot_log_in_and_is_told_why() {
    let mut env = Env::new();
    let _ = env.account("hurt", "pw");
    let _ = env.account("well", "pw");
    let id = env.book.find_user("hurt").unwrap();
    env.book.quarantine(id);
    let _ = env.book.take_persist();
    let mut s = Session::new(PeerKey([4; 16]));
    // A wrong password learns nothing more than usual.
    let (out, ev) = env.send(&mut s, 10, verify("hurt", "bad"));
    assert_eq!(
        out,
        vec![ServerPacket::VerifyAccount(VerifyAccountReply::BadPassword)]
    );
    assert_eq!(closes_with(&ev), None);
    let (out, ev) = env.send(&mut s, 20, verify("hurt", "pw"));
    assert!(out.is_empty());
    assert_eq!(closes_with(&ev), Some(close::UNAVAILABLE));
    assert!(
        env.book.take_persist().is_empty(),
        "nothing of it is written"
    );
    let mut s2 = Session::new(PeerKey([5; 16]));
    let (out, _) = env.send(&mut s2, 30, verify("well", "pw"));
    assert!(matches!(
        out.as_slice(),
        [ServerPacket::VerifyAccount(VerifyAccountReply::Ok { .. })]
    ));
}
