//! Room for connections not yet in the world: [`Lobby`], the admission decision at the
//! client endpoint's door.
//!
//! **Why.** Per-network caps (`max_connections_per_ip`) do not stop many networks: 157
//! networks of 32 idle connections filled the whole `max_connections`, and no one could log
//! in. So connections not yet in the world (handshaking, logging in, in the character menu)
//! may hold at most a share of `max_connections` (`pregame_share_percent`): the rest is
//! room only players in the world use. A player entering the world never needs a new slot
//! (the connection keeps its own), so players in the world are never refused by this.
//!
//! **Honest logins get in.** When the lobby (or the whole gateway) is full, a new
//! connection *displaces* the oldest one that has not logged in yet, if that one has had
//! [`Lobby::grace_ms`] to do so: an idler is closed (code 4) and the newcomer takes its
//! place. An honest client logs in within a second or so of connecting, well within the
//! grace; a flood of idle connections only pushes out its own oldest. Connections that have
//! verified an account are not displaced (they are bounded by `menu_deadline_ms` and the
//! per-network and per-account login limits instead). When nothing can be displaced the
//! newcomer is refused (`rc_gateway_connections_refused_total{reason="full"}`).
//!
//! Sans-IO: the shell passes its clock and the gateway-wide counts, and closes the
//! displaced connection itself.

use std::collections::{BTreeMap, HashSet};

/// What to do with a new connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Let it in.
    Yes,
    /// Let it in after closing this older connection that has not logged in.
    Displace(u64),
    /// Refuse it: full, and no one to displace.
    Full,
}

/// The connections not yet in the world, by session id (ids grow with time: the smallest
/// is the oldest).
#[derive(Debug, Clone)]
pub struct Lobby {
    cap: usize,
    grace_ms: u64,
    /// Not logged in yet: session → when it was admitted (ms).
    waiting: BTreeMap<u64, u64>,
    /// Logged in, in the character menu.
    menu: HashSet<u64>,
}

impl Lobby {
    /// At most `cap` connections not yet in the world (at least 1); one not logged in
    /// after `grace_ms` may be displaced.
    pub fn new(cap: usize, grace_ms: u64) -> Self {
        Self {
            cap: cap.max(1),
            grace_ms,
            waiting: BTreeMap::new(),
            menu: HashSet::new(),
        }
    }

    /// The lobby's size for `max_connections` and `share_percent` (1..=100).
    pub fn cap_for(max_connections: u32, share_percent: u32) -> usize {
        let cap = u64::from(max_connections) * u64::from(share_percent.min(100)) / 100;
        usize::try_from(cap).unwrap_or(usize::MAX).max(1)
    }

    /// The time a connection has to log in before it may be displaced (ms).
    pub fn grace_ms(&self) -> u64 {
        self.grace_ms
    }

    /// Connections not yet in the world.
    pub fn len(&self) -> usize {
        self.waiting.len() + self.menu.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A new connection `session` at `now_ms`, while `open` connections of at most
    /// `max_open` are open gateway-wide (in the world included). On [`Admit::Yes`] and
    /// [`Admit::Displace`] it is counted here; the displaced one is no longer.
    pub fn admit(&mut self, session: u64, now_ms: u64, open: usize, max_open: usize) -> Admit {
        if self.len() < self.cap && open < max_open {
            self.waiting.insert(session, now_ms);
            return Admit::Yes;
        }
        let oldest = self.waiting.iter().next().map(|(&s, &at)| (s, at));
        match oldest {
            Some((victim, at)) if now_ms.saturating_sub(at) >= self.grace_ms => {
                self.waiting.remove(&victim);
                self.waiting.insert(session, now_ms);
                Admit::Displace(victim)
            }
            _ => Admit::Full,
        }
    }

    /// `session` verified an account: it is no longer displaced.
    pub fn logged_in(&mut self, session: u64) {
        if self.waiting.remove(&session).is_some() {
            self.menu.insert(session);
        }
    }

    /// `session` entered the world or closed.
    pub fn left(&mut self, session: u64) {
        self.waiting.remove(&session);
        self.menu.remove(&session);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_is_of_max_connections() {
        assert_eq!(Lobby::cap_for(5_000, 50), 2_500);
        assert_eq!(Lobby::cap_for(10, 1), 1, "never zero");
        assert_eq!(Lobby::cap_for(10, 250), 10, "at most the whole");
    }

    #[test]
    fn a_full_lobby_displaces_its_oldest_idler_after_the_grace() {
        let mut l = Lobby::new(3, 2_000);
        for s in 1..=3 {
            assert_eq!(l.admit(s, 0, 0, 100), Admit::Yes);
        }
        // Nobody has had the grace yet: refused.
        assert_eq!(l.admit(4, 1_999, 3, 100), Admit::Full);
        assert_eq!(l.len(), 3);
        // Session 1 logged in: never displaced; 2 is the oldest idler.
        l.logged_in(1);
        assert_eq!(l.admit(5, 2_000, 3, 100), Admit::Displace(2));
        assert_eq!(l.admit(6, 2_000, 3, 100), Admit::Displace(3));
        // Now 5 and 6 are the idlers, too young; 1 stays.
        assert_eq!(l.admit(7, 3_000, 3, 100), Admit::Full);
        assert_eq!(l.len(), 3);
        assert_eq!(l.admit(7, 4_000, 3, 100), Admit::Displace(5));
        // Leaving makes room.
        l.left(1);
        assert_eq!(l.admit(8, 4_000, 2, 100), Admit::Yes);
        assert_eq!(l.len(), 3);
    }

    #[test]
    fn logged_in_connections_are_never_displaced() {
        let mut l = Lobby::new(2, 0);
        assert_eq!(l.admit(1, 0, 0, 100), Admit::Yes);
        assert_eq!(l.admit(2, 0, 1, 100), Admit::Yes);
        l.logged_in(1);
        l.logged_in(2);
        assert_eq!(l.admit(3, 1_000_000, 2, 100), Admit::Full);
        l.left(2);
        assert_eq!(l.admit(3, 1_000_000, 1, 100), Admit::Yes);
    }

    #[test]
    fn a_gateway_full_of_players_in_the_world_still_lets_a_login_displace_an_idler() {
        let mut l = Lobby::new(50, 1_000);
        assert_eq!(l.admit(1, 0, 10, 11), Admit::Yes);
        // 11 open of 11: the lobby has room but the gateway has none.
        assert_eq!(l.admit(2, 500, 11, 11), Admit::Full);
        assert_eq!(l.admit(2, 1_000, 11, 11), Admit::Displace(1));
        // Players in the world only: nobody to displace.
        l.left(2);
        assert_eq!(l.admit(3, 9_000, 11, 11), Admit::Full);
    }
}
