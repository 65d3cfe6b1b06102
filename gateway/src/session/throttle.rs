//! Login and account-creation limits per client network (an IPv4 address, an IPv6 /64),
//! on one clock for the whole gateway: [`LoginThrottle`], shared by every session (the
//! shell owns one, behind the accounts lock).
//!
//! **What is counted.** Every password verification a network asks for — not only the
//! failed ones — takes a cell of a GCRA bucket (`governor`): `attempts_per_minute` cells,
//! refilled one every `60 s / attempts_per_minute`. A verification the bucket refuses is
//! never run, whatever the password, so a network gets at most that many guesses at once
//! and that many a minute after. Counting only failures would leak one guess per refill:
//! a guess made while the last cell is left is answered "bad password" or "welcome", and
//! that answer is the guess. A session that has verified its credentials once re-uses the
//! result (character list, start game) without taking another cell.
//!
//! **One clock.** Sessions pass their `now_ms`; the throttle keeps the newest it has seen
//! and never goes back, so no connection can reset another's count with a clock of its
//! own (each connection's clock once started at zero: a connection kept open for a minute
//! wiped everyone's failures). State for networks that have been quiet a full refill
//! period is forgotten by [`LoginThrottle::prune`], which runs by itself once a minute.
//!
//! **Connections.** Each new connection a network makes (once it has proven its address,
//! when the gateway asks for that) takes a cell of a third bucket, `connections_per_minute`
//! ([`LoginThrottle::try_connect`]): a client reconnecting in a loop (a guesser closed for
//! its guesses, a broken bot) is refused at the door instead of costing a TLS handshake a
//! time. And one gateway-wide bucket of `retry_above_rate` handshakes a second
//! ([`LoginThrottle::try_handshake`]): beyond it every new connection must answer a QUIC
//! Retry first, as it must above `retry_above` connections not yet in the world.
//!
//! **Per account.** Networks are cheap to an attacker with many addresses, so failed
//! password checks are also counted per account *name* (`AccountDelay`), whatever
//! network they come from: after a failed check the name waits `account_delay_ms`, and
//! each further failure doubles the wait up to `account_delay_max_ms`. A check asked for
//! during the wait is not run (the connection closes with code 4 and the time left); a
//! success clears the name. The owner is never locked out: the wait is capped, and the
//! owner's own networks (those that logged in to the name before, the last
//! [`TRUSTED_PER_ACCOUNT`]) are not held to it. At most `accounts_tracked` names are kept,
//! evicting the forgotten and then the least-failed first (a spray of fresh names cannot
//! flush a name under attack).
//!
//! **Creation before hashing.** [`LoginThrottle::reserve_create`] takes the creation cell
//! before the shell hashes the new password; the session's [`LoginThrottle::try_create`]
//! then uses that reservation instead of a second cell. A refused creation costs no hash.
//!
//! Sans-IO: `governor` runs on a [`FakeRelativeClock`] the throttle advances to the
//! injected time, so the tests drive it exactly.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::{Clock as _, FakeRelativeClock};
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};

/// How often the throttle forgets quiet networks.
const PRUNE_EVERY_MS: u64 = 60_000;

/// A client network as an opaque key: an IPv4 address (IPv4-mapped), or the /64 of an
/// IPv6 address (one subscriber's prefix; its low 64 bits are zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PeerKey(pub [u8; 16]);

impl PeerKey {
    /// The network of an address given as IPv6 octets (IPv4 as IPv4-mapped): an IPv4
    /// address whole (and `::1`), an IPv6 address's /64 (its low 64 bits zeroed).
    pub fn network(octets: [u8; 16]) -> Self {
        if is_v4_mapped(&octets) || Self(octets).is_loopback() {
            return Self(octets);
        }
        let mut o = octets;
        if let Some(host) = o.get_mut(8..) {
            host.fill(0);
        }
        Self(o)
    }

    /// Whether this is the gateway's own machine at its usual loopback address
    /// (`127.0.0.1`, `::1`). Other loopback addresses (`127.0.0.2`...) are not: a local
    /// test can play an outside client from one (`swarm --attack-guessers` does).
    pub fn is_loopback(&self) -> bool {
        let o = &self.0;
        let v6_loopback =
            o.get(..15).is_some_and(|z| z.iter().all(|&b| b == 0)) && o.get(15) == Some(&1);
        v6_loopback || (is_v4_mapped(o) && o.get(12..16) == Some(&[127, 0, 0, 1][..]))
    }
}

/// `::ffff:a.b.c.d`.
fn is_v4_mapped(o: &[u8; 16]) -> bool {
    o.get(..10).is_some_and(|z| z.iter().all(|&b| b == 0))
        && o.get(10..12) == Some(&[0xff, 0xff][..])
}

/// The limits, from the gateway's configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThrottleLimits {
    /// Password verifications per network per minute (and at once).
    pub attempts_per_minute: u32,
    /// Accounts created per network per hour (and at once).
    pub creations_per_hour: u32,
    /// New connections per network per minute (and at once).
    pub connections_per_minute: u32,
    /// New connections a second, all networks together, before each must answer a QUIC
    /// Retry (and at once).
    pub handshakes_per_second: u32,
    /// Whether loopback peers are limited too (by default they are the operator's own
    /// tools: a local swarm, the admin's client).
    pub limit_loopback: bool,
    /// Wait after the first failed password check of one account name (ms; 0: no
    /// per-account delay); doubles with each further failure.
    pub account_delay_ms: u64,
    /// Longest per-account wait (ms): the owner never waits longer.
    pub account_delay_max_ms: u64,
    /// Most account names whose failures are remembered at once.
    pub accounts_tracked: usize,
}

impl Default for ThrottleLimits {
    fn default() -> Self {
        Self {
            attempts_per_minute: 10,
            creations_per_hour: 5,
            connections_per_minute: 60,
            handshakes_per_second: 200,
            limit_loopback: true,
            account_delay_ms: 1_000,
            account_delay_max_ms: 30_000,
            accounts_tracked: 100_000,
        }
    }
}

type Keyed = RateLimiter<
    PeerKey,
    DefaultKeyedStateStore<PeerKey>,
    FakeRelativeClock,
    NoOpMiddleware<<FakeRelativeClock as governor::clock::Clock>::Instant>,
>;

type Direct = RateLimiter<
    NotKeyed,
    InMemoryState,
    FakeRelativeClock,
    NoOpMiddleware<<FakeRelativeClock as governor::clock::Clock>::Instant>,
>;

fn quota(n: u32, per: Duration) -> Quota {
    let n = NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN);
    Quota::with_period(per / n.get())
        .unwrap_or_else(|| Quota::per_second(NonZeroU32::MIN))
        .allow_burst(n)
}

/// Verification and creation buckets per network.
pub struct LoginThrottle {
    limits: ThrottleLimits,
    attempts: Keyed,
    creations: Keyed,
    connections: Keyed,
    handshakes: Direct,
    clock: FakeRelativeClock,
    now_ms: u64,
    /// Networks whose last verification was refused, until their next cell (so the shell
    /// can skip the password hash for them).
    blocked: HashMap<PeerKey, u64>,
    last_prune_ms: u64,
    /// Failed checks per account name.
    accounts: AccountDelay,
    /// Creation cells taken before hashing ([`Self::reserve_create`]), per network: how
    /// many and when the last was taken.
    grants: HashMap<PeerKey, (u32, u64)>,
}

impl std::fmt::Debug for LoginThrottle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoginThrottle")
            .field("limits", &self.limits)
            .field("now_ms", &self.now_ms)
            .field("tracked", &self.tracked())
            .finish_non_exhaustive()
    }
}

impl Default for LoginThrottle {
    fn default() -> Self {
        Self::new()
    }
}

impl LoginThrottle {
    /// A throttle with the default limits.
    pub fn new() -> Self {
        Self::with_limits(ThrottleLimits::default())
    }

    /// A throttle with `limits`.
    pub fn with_limits(limits: ThrottleLimits) -> Self {
        let clock = FakeRelativeClock::default();
        let keyed =
            |q: Quota| RateLimiter::new(q, DefaultKeyedStateStore::default(), clock.clone());
        Self {
            limits,
            attempts: keyed(quota(limits.attempts_per_minute, Duration::from_secs(60))),
            creations: keyed(quota(limits.creations_per_hour, Duration::from_secs(3600))),
            connections: keyed(quota(
                limits.connections_per_minute,
                Duration::from_secs(60),
            )),
            handshakes: RateLimiter::direct_with_clock(
                quota(limits.handshakes_per_second, Duration::from_secs(1)),
                clock.clone(),
            ),
            clock,
            now_ms: 0,
            blocked: HashMap::new(),
            last_prune_ms: 0,
            accounts: AccountDelay::new(
                limits.account_delay_ms,
                limits.account_delay_max_ms,
                limits.accounts_tracked,
            ),
            grants: HashMap::new(),
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> ThrottleLimits {
        self.limits
    }

    /// Moves the clock to `now_ms`, never back.
    fn set_clock(&mut self, now_ms: u64) {
        if now_ms > self.now_ms {
            self.clock
                .advance(Duration::from_millis(now_ms - self.now_ms));
            self.now_ms = now_ms;
        }
    }

    fn advance(&mut self, now_ms: u64) {
        self.set_clock(now_ms);
        if self.now_ms.saturating_sub(self.last_prune_ms) >= PRUNE_EVERY_MS {
            self.prune(self.now_ms);
        }
    }

    fn exempt(&self, peer: PeerKey) -> bool {
        !self.limits.limit_loopback && peer.is_loopback()
    }

    /// Whether a verification by `peer` would be refused now (a hint for the shell, which
    /// then skips the password hash; takes no cell).
    pub fn is_blocked(&mut self, peer: PeerKey, now_ms: u64) -> bool {
        self.advance(now_ms);
        self.blocked
            .get(&peer)
            .is_some_and(|&until| until > self.now_ms)
    }

    /// Takes a cell for one password verification by `peer`; `false` when the network has
    /// used its verifications (the verification must not run).
    pub fn try_attempt(&mut self, peer: PeerKey, now_ms: u64) -> bool {
        self.advance(now_ms);
        if self.exempt(peer) {
            return true;
        }
        match self.attempts.check_key(&peer) {
            Ok(()) => {
                self.blocked.remove(&peer);
                true
            }
            Err(not_until) => {
                let wait = not_until.wait_time_from(self.clock.now());
                let wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
                self.blocked
                    .insert(peer, self.now_ms.saturating_add(wait_ms.max(1)));
                false
            }
        }
    }

    /// Takes a cell for one account creation by `peer`; `false` when the network has
    /// created its accounts for now.
    pub fn try_create(&mut self, peer: PeerKey, now_ms: u64) -> bool {
        self.advance(now_ms);
        if self.exempt(peer) {
            return true;
        }
        if let Some((n, _)) = self.grants.get_mut(&peer) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.grants.remove(&peer);
            }
            return true;
        }
        self.creations.check_key(&peer).is_ok()
    }

    /// Takes the cell for one account creation by `peer` *before* its password is hashed
    /// (the shell calls it); `false`: refused, hash nothing. The session's
    /// [`Self::try_create`] then uses this reservation.
    pub fn reserve_create(&mut self, peer: PeerKey, now_ms: u64) -> bool {
        self.advance(now_ms);
        if self.exempt(peer) {
            return true;
        }
        if self.is_blocked(peer, now_ms) || self.creations.check_key(&peer).is_err() {
            return false;
        }
        let g = self.grants.entry(peer).or_insert((0, now_ms));
        *g = (g.0.saturating_add(1), self.now_ms);
        true
    }

    /// How long a password check of account `user` must still wait (ms; 0: it may run
    /// now), for a check asked by `peer`. Takes nothing.
    pub fn account_wait_ms(&mut self, user: &[u8], peer: PeerKey, now_ms: u64) -> u64 {
        self.advance(now_ms);
        if self.exempt(peer) {
            return 0;
        }
        self.accounts.wait_ms(user, peer, self.now_ms)
    }

    /// A password check of account `user` failed (the name waits longer).
    pub fn account_failed(&mut self, user: &[u8], peer: PeerKey, now_ms: u64) {
        self.advance(now_ms);
        if self.exempt(peer) {
            return;
        }
        self.accounts.failed(user, self.now_ms);
    }

    /// A password check of account `user` succeeded from `peer`: the name's failures are
    /// cleared and `peer` becomes one of its owner's networks.
    pub fn account_ok(&mut self, user: &[u8], peer: PeerKey) {
        self.accounts.succeeded(user, peer);
    }

    /// Takes a cell for one new connection from `peer`; `false` when the network has made
    /// its connections for now (refuse it).
    pub fn try_connect(&mut self, peer: PeerKey, now_ms: u64) -> bool {
        self.advance(now_ms);
        if self.exempt(peer) {
            return true;
        }
        self.connections.check_key(&peer).is_ok()
    }

    /// Takes a cell for one handshake, all networks together; `false` when the gateway is
    /// above its handshake rate (ask the connection to prove its address first).
    pub fn try_handshake(&mut self, now_ms: u64) -> bool {
        self.advance(now_ms);
        self.handshakes.check().is_ok()
    }

    /// Forgets networks whose buckets are full again and blocks that have ended.
    pub fn prune(&mut self, now_ms: u64) {
        self.set_clock(now_ms);
        let now = self.now_ms;
        self.blocked.retain(|_, until| *until > now);
        self.grants
            .retain(|_, (_, at)| now.saturating_sub(*at) < PRUNE_EVERY_MS);
        self.accounts.prune(now);
        for k in [&self.attempts, &self.creations, &self.connections] {
            k.retain_recent();
            k.shrink_to_fit();
        }
        self.last_prune_ms = now;
    }

    /// Networks tracked (buckets not yet full again, and blocks).
    pub fn tracked(&self) -> usize {
        self.attempts.len()
            + self.creations.len()
            + self.connections.len()
            + self.blocked.len()
            + self.accounts.len()
    }
}

/// How many of an account's own networks (those it last logged in from) skip its wait.
pub const TRUSTED_PER_ACCOUNT: usize = 4;

/// An account name's failures are forgotten after this many longest waits without one.
const FORGET_AFTER_MAX_WAITS: u64 = 20;

/// One account name's failed checks.
#[derive(Debug, Clone, Default)]
struct NameState {
    failures: u32,
    /// No check before this time (ms).
    not_before_ms: u64,
    last_failure_ms: u64,
    /// Networks the name logged in from (newest last).
    trusted: Vec<PeerKey>,
}

/// Failed password checks per account name, on the throttle's clock: the growing,
/// capped wait of the module doc. Names are kept as a keyed 64-bit hash of their
/// lower-case form (a long name costs no memory), at most `cap` of them.
#[derive(Debug)]
struct AccountDelay {
    base_ms: u64,
    max_ms: u64,
    cap: usize,
    names: HashMap<u64, NameState>,
    keys: std::collections::hash_map::RandomState,
}

impl AccountDelay {
    /// A first wait of `base_ms` (0: off), doubling up to `max_ms`, for at most `cap` names.
    pub fn new(base_ms: u64, max_ms: u64, cap: usize) -> Self {
        Self {
            base_ms,
            max_ms: max_ms.max(base_ms),
            cap: cap.max(1),
            names: HashMap::new(),
            keys: std::collections::hash_map::RandomState::new(),
        }
    }

    fn key(&self, user: &[u8]) -> u64 {
        use std::hash::BuildHasher as _;
        self.keys.hash_one(user.to_ascii_lowercase())
    }

    /// The wait left for a check of `user` by `peer` at `now_ms` (0: go ahead).
    pub fn wait_ms(&self, user: &[u8], peer: PeerKey, now_ms: u64) -> u64 {
        match self.names.get(&self.key(user)) {
            Some(s) if !s.trusted.contains(&peer) => s.not_before_ms.saturating_sub(now_ms),
            _ => 0,
        }
    }

    /// The wait after `failures` failures.
    fn delay(&self, failures: u32) -> u64 {
        let doublings = failures.saturating_sub(1).min(40);
        self.base_ms
            .saturating_mul(1u64 << doublings)
            .min(self.max_ms)
    }

    /// A failed check of `user` at `now_ms`.
    pub fn failed(&mut self, user: &[u8], now_ms: u64) {
        if self.base_ms == 0 {
            return;
        }
        let key = self.key(user);
        if !self.names.contains_key(&key) && self.names.len() >= self.cap {
            self.make_room(now_ms);
        }
        let mut s = self.names.remove(&key).unwrap_or_default();
        s.failures = s.failures.saturating_add(1);
        s.last_failure_ms = now_ms;
        s.not_before_ms = now_ms.saturating_add(self.delay(s.failures));
        self.names.insert(key, s);
    }

    /// A successful check of `user` from `peer`: failures cleared, `peer` trusted.
    pub fn succeeded(&mut self, user: &[u8], peer: PeerKey) {
        let key = self.key(user);
        let Some(s) = self.names.get_mut(&key) else {
            // Nothing to clear, and no attack to skip: nothing is kept for it.
            return;
        };
        s.failures = 0;
        s.not_before_ms = 0;
        s.trusted.retain(|p| *p != peer);
        s.trusted.push(peer);
        if s.trusted.len() > TRUSTED_PER_ACCOUNT {
            s.trusted.remove(0);
        }
    }

    /// Full: forget the quiet names, then (still full) those with the fewest failures.
    fn make_room(&mut self, now_ms: u64) {
        self.prune(now_ms);
        if self.names.len() < self.cap {
            return;
        }
        let least = self.names.values().map(|s| s.failures).min().unwrap_or(0);
        self.names.retain(|_, s| s.failures > least);
    }

    /// Forgets names quiet for [`FORGET_AFTER_MAX_WAITS`] longest waits.
    pub fn prune(&mut self, now_ms: u64) {
        let quiet = self.max_ms.saturating_mul(FORGET_AFTER_MAX_WAITS);
        self.names
            .retain(|_, s| now_ms.saturating_sub(s.last_failure_ms) < quiet);
    }

    /// Names remembered.
    pub fn len(&self) -> usize {
        self.names.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: PeerKey = PeerKey([1; 16]);
    const B: PeerKey = PeerKey([2; 16]);

    fn five() -> LoginThrottle {
        LoginThrottle::with_limits(ThrottleLimits {
            attempts_per_minute: 5,
            creations_per_hour: 2,
            ..ThrottleLimits::default()
        })
    }

    /// `::ffff:a.b.c.d`.
    fn v4(a: u8, b: u8, c: u8, d: u8) -> PeerKey {
        PeerKey::network([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d])
    }

    #[test]
    fn loopback_is_exempt_unless_asked() {
        let lo = v4(127, 0, 0, 1);
        let mut one = [0u8; 16];
        one[15] = 1;
        let lo6 = PeerKey::network(one);
        assert!(lo.is_loopback() && lo6.is_loopback() && !A.is_loopback());
        assert!(!v4(10, 0, 0, 1).is_loopback());
        assert!(
            !v4(127, 0, 0, 2).is_loopback(),
            "only the usual loopback address"
        );
        let mut t = LoginThrottle::with_limits(ThrottleLimits {
            limit_loopback: false,
            ..five().limits()
        });
        for _ in 0..50 {
            assert!(t.try_attempt(lo, 0) && t.try_create(lo6, 0));
        }
        let mut t = five();
        for _ in 0..5 {
            assert!(t.try_attempt(lo, 0));
        }
        assert!(!t.try_attempt(lo, 0));
    }

    #[test]
    fn reconnecting_in_a_loop_is_refused_and_the_handshake_rate_is_gateway_wide() {
        let mut t = LoginThrottle::with_limits(ThrottleLimits {
            connections_per_minute: 3,
            handshakes_per_second: 4,
            ..ThrottleLimits::default()
        });
        for _ in 0..3 {
            assert!(t.try_connect(A, 0));
        }
        assert!(!t.try_connect(A, 0), "a fourth connection at once");
        assert!(t.try_connect(B, 0), "another network has its own");
        assert!(t.try_connect(A, 20_000), "one more every 20 s");
        assert!(!t.try_connect(A, 20_001));
        // Four handshakes at once and one every 250 ms, whoever makes them.
        for _ in 0..4 {
            assert!(t.try_handshake(30_000));
        }
        assert!(!t.try_handshake(30_000));
        assert!(t.try_handshake(30_250));
        assert!(!t.try_handshake(30_250));
        // Loopback is exempt from the per-network bucket unless asked.
        let mut lo = LoginThrottle::with_limits(ThrottleLimits {
            connections_per_minute: 1,
            limit_loopback: false,
            ..ThrottleLimits::default()
        });
        let l = v4(127, 0, 0, 1);
        assert!((0..10).all(|_| lo.try_connect(l, 0)));
        assert!(lo.try_connect(A, 0) && !lo.try_connect(A, 0));
    }

    #[test]
    fn a_burst_then_one_every_twelve_seconds() {
        let mut t = five();
        for _ in 0..5 {
            assert!(t.try_attempt(A, 1_000));
        }
        assert!(!t.try_attempt(A, 1_000));
        assert!(t.is_blocked(A, 1_000));
        assert!(!t.is_blocked(B, 1_000));
        assert!(t.try_attempt(B, 1_000), "another network is not limited");
        assert!(!t.try_attempt(A, 12_900));
        assert!(t.try_attempt(A, 13_000));
        assert!(!t.try_attempt(A, 13_000));
        // A full minute quiet: the whole burst again.
        for _ in 0..5 {
            assert!(t.try_attempt(A, 80_000));
        }
        assert!(!t.try_attempt(A, 80_000));
    }

    #[test]
    fn no_clock_can_reset_the_count() {
        let mut t = five();
        for _ in 0..5 {
            assert!(t.try_attempt(A, 100_000));
        }
        // A connection whose clock reads earlier (or zero) changes nothing.
        assert!(!t.try_attempt(A, 0));
        assert!(!t.try_attempt(A, 5_000));
        assert!(!t.try_attempt(A, 100_000));
    }

    #[test]
    fn quiet_networks_are_forgotten() {
        let mut t = five();
        for i in 0..50u8 {
            assert!(t.try_attempt(PeerKey([i; 16]), 1_000));
        }
        assert!(t.tracked() >= 50);
        t.prune(200_000);
        assert_eq!(t.tracked(), 0);
    }

    #[test]
    fn creations_have_their_own_hourly_bucket() {
        let mut t = five();
        assert!(t.try_create(A, 0));
        assert!(t.try_create(A, 0));
        assert!(!t.try_create(A, 60_000));
        assert!(t.try_attempt(A, 60_000), "logins are not creations");
        assert!(t.try_create(A, 30 * 60_000 + 1));
    }

    fn per_account(base: u64, max: u64, cap: usize) -> LoginThrottle {
        LoginThrottle::with_limits(ThrottleLimits {
            attempts_per_minute: 1_000,
            account_delay_ms: base,
            account_delay_max_ms: max,
            accounts_tracked: cap,
            ..ThrottleLimits::default()
        })
    }

    #[test]
    fn failures_at_one_account_make_it_wait_whatever_network_guesses() {
        let mut t = per_account(1_000, 8_000, 100);
        assert_eq!(t.account_wait_ms(b"Ann", A, 0), 0);
        t.account_failed(b"Ann", A, 0);
        // Another network, the name in other case: the same account waits.
        assert_eq!(t.account_wait_ms(b"aNN", B, 0), 1_000);
        assert_eq!(t.account_wait_ms(b"Ann", v4(10, 0, 0, 9), 999), 1);
        assert_eq!(t.account_wait_ms(b"Ann", B, 1_000), 0);
        assert_eq!(
            t.account_wait_ms(b"Bob", B, 0),
            0,
            "other names are not held"
        );
        // Each failure doubles the wait, up to the cap.
        let mut now = 1_000;
        for want in [2_000, 4_000, 8_000, 8_000, 8_000] {
            t.account_failed(b"ann", B, now);
            assert_eq!(t.account_wait_ms(b"ANN", A, now), want);
            now += want;
        }
        // 30 networks guessing as fast as they can get one answer per wait, not thirty.
        let mut answered = 0;
        for ms in (now..now + 80_000).step_by(50) {
            for n in 0..30u8 {
                let peer = v4(10, 0, 1, n);
                if t.account_wait_ms(b"ann", peer, ms) == 0 {
                    answered += 1;
                    t.account_failed(b"ann", peer, ms);
                }
            }
        }
        assert_eq!(answered, 10, "one guess per 8 s in 80 s");
    }

    #[test]
    fn a_success_clears_the_wait_and_trusts_the_owners_network() {
        let mut t = per_account(1_000, 30_000, 100);
        for i in 0..10 {
            t.account_failed(b"ann", B, i);
        }
        assert_eq!(t.account_wait_ms(b"ann", A, 10), 30_000 - 1);
        // The owner waits out the cap (never longer) and logs in.
        assert_eq!(t.account_wait_ms(b"ann", A, 30_010), 0);
        t.account_ok(b"ann", A);
        assert_eq!(
            t.account_wait_ms(b"ann", B, 30_010),
            0,
            "the success reset it"
        );
        // The guessing goes on: the owner's own network is not held to the wait.
        t.account_failed(b"ann", B, 30_020);
        assert_eq!(t.account_wait_ms(b"ann", B, 30_020), 1_000);
        assert_eq!(t.account_wait_ms(b"ann", A, 30_020), 0);
    }

    #[test]
    fn the_account_map_is_bounded_and_a_spray_of_names_cannot_flush_a_target() {
        let mut t = per_account(1_000, 30_000, 100);
        for i in 0..5 {
            t.account_failed(b"target", A, i);
        }
        for i in 0..10_000u32 {
            t.account_failed(format!("junk{i}").as_bytes(), B, 10);
            assert!(t.accounts.len() <= 100);
        }
        assert!(t.account_wait_ms(b"target", B, 10) > 0, "still waiting");
        // Quiet names are forgotten: 20 longest waits without a failure.
        t.prune(20 * 30_000 + 10);
        assert_eq!(t.accounts.len(), 0);
        assert_eq!(t.account_wait_ms(b"target", B, 20 * 30_000 + 10), 0);
        // A long name costs no more than a short one (a hash is kept).
        t.account_failed(&[b'x'; 4_000], A, 700_000);
        assert_eq!(t.accounts.len(), 1);
    }

    #[test]
    fn no_per_account_wait_when_off_or_for_exempt_loopback() {
        let mut t = per_account(0, 0, 100);
        for _ in 0..50 {
            t.account_failed(b"ann", A, 0);
        }
        assert_eq!(t.account_wait_ms(b"ann", A, 0), 0);
        let mut t = LoginThrottle::with_limits(ThrottleLimits {
            limit_loopback: false,
            ..ThrottleLimits::default()
        });
        let lo = v4(127, 0, 0, 1);
        t.account_failed(b"ann", lo, 0);
        assert_eq!(t.account_wait_ms(b"ann", lo, 0), 0);
        t.account_failed(b"ann", A, 0);
        assert_eq!(t.account_wait_ms(b"ann", A, 0), 1_000);
    }

    #[test]
    fn a_creation_cell_is_taken_before_hashing_and_used_once() {
        let mut t = five();
        assert!(t.reserve_create(A, 0));
        assert!(t.try_create(A, 0), "the session uses the reservation");
        assert!(t.reserve_create(A, 0));
        assert!(t.try_create(A, 0));
        // The bucket is empty: refused before any hash, and the session refuses too.
        assert!(!t.reserve_create(A, 0));
        assert!(!t.try_create(A, 0));
        // A network out of login attempts cannot create either.
        for _ in 0..5 {
            assert!(t.try_attempt(B, 0));
        }
        assert!(!t.try_attempt(B, 0));
        assert!(!t.reserve_create(B, 0));
    }

    #[test]
    fn ipv6_counts_per_64_and_ipv4_per_address() {
        let v6 = |tail: [u8; 8], net: u8| {
            let mut o = [0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, net, 0, 0, 0, 0, 0, 0, 0, 0];
            o[8..].copy_from_slice(&tail);
            PeerKey::network(o)
        };
        assert_eq!(v6([1; 8], 2), v6([9; 8], 2));
        assert_ne!(v6([1; 8], 2), v6([1; 8], 3));
        assert_ne!(v4(10, 0, 0, 1), v4(10, 0, 0, 2));
    }
}
