//! Fuzzes the login session state machine (`gateway::session::Session`) with an arbitrary
//! sequence of client frames against a world and an account book with one account.
//!
//! Input: records `[ty][len][payload; len]` until the bytes run out (a record cut short
//! keeps what there is); the clock advances 100 ms per record. An odd first byte runs the
//! whole sequence with the server locked for maintenance.
//!
//! Invariants: nothing panics, whatever the order (packets before login, in-game
//! packets, garbage); once the session is closed it stays closed and sends nothing more.
#![no_main]

use std::sync::OnceLock;

use gateway::session::{
    AccountBook, Argon2Hasher, Ctx, Gate, LoginThrottle, PeerKey, Session, ThrottleLimits,
};
use libfuzzer_sys::fuzz_target;
use rand::SeedableRng as _;

fn world() -> &'static shared::content::World {
    static W: OnceLock<shared::content::World> = OnceLock::new();
    W.get_or_init(|| {
        let mut w = shared::content::demo_world();
        w.misc.allow_account_creation = true;
        w
    })
}

fuzz_target!(|data: &[u8]| {
    let hasher = Argon2Hasher::fast_for_tests();
    let mut book = AccountBook::new();
    let _ = book.create_account("alice".into(), String::new(), String::new());
    let mut throttle = LoginThrottle::with_limits(ThrottleLimits::default());
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let mut s = Session::new(PeerKey([3; 16]));
    let files = vec![shared::proto::UpdateFileEntry {
        crc: 7,
        name: shared::wire::RcString::from("Data\\Game Data\\Hosts.dat"),
    }];
    let gate = if data.first().is_some_and(|b| b & 1 == 1) {
        Gate::new(files).with_lock(Some("fuzz".into()))
    } else {
        Gate::new(files)
    };
    let mut rest = data;
    let mut now = 0u64;
    while let [ty, len, tail @ ..] = rest {
        let n = usize::from(*len).min(tail.len());
        let (payload, next) = tail.split_at(n);
        rest = next;
        now += 100;
        let was_closed = s.is_closed();
        let mut ctx = Ctx {
            world: world(),
            book: &mut book,
            throttle: &mut throttle,
            hasher: &hasher,
            rng: &mut rng,
            clock: None,
            gate: &gate,
        };
        s.handle_frame(now, &mut ctx, *ty, payload);
        let mut sent = 0;
        while s.poll_transmit().is_some() {
            sent += 1;
        }
        while s.poll_event().is_some() {}
        if was_closed {
            assert_eq!(sent, 0, "a closed session sent packets");
            assert!(s.is_closed());
        }
    }
});
