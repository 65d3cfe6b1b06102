//! Failed-login throttle: at most [`MAX_FAILURES`] failures per [`WINDOW_MS`] per client
//! address; shared by every session (the shell owns one).

use std::collections::{HashMap, VecDeque};

/// Failures allowed per window.
pub const MAX_FAILURES: usize = 5;
/// The sliding window, in milliseconds.
pub const WINDOW_MS: u64 = 60_000;

/// A client address as an opaque key (the shell maps an IP address to 16 bytes, IPv4 mapped).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PeerKey(pub [u8; 16]);

/// Sliding-window failure counts per peer.
#[derive(Debug, Default)]
pub struct LoginThrottle {
    failures: HashMap<PeerKey, VecDeque<u64>>,
}

impl LoginThrottle {
    /// An empty throttle.
    pub fn new() -> Self {
        Self::default()
    }

    fn prune_one(q: &mut VecDeque<u64>, now_ms: u64) {
        while q
            .front()
            .is_some_and(|&t| now_ms.saturating_sub(t) >= WINDOW_MS)
        {
            q.pop_front();
        }
    }

    /// Whether `peer` has used up its failures in the current window.
    pub fn is_blocked(&mut self, peer: PeerKey, now_ms: u64) -> bool {
        match self.failures.get_mut(&peer) {
            Some(q) => {
                Self::prune_one(q, now_ms);
                q.len() >= MAX_FAILURES
            }
            None => false,
        }
    }

    /// Records one failure.
    pub fn record_failure(&mut self, peer: PeerKey, now_ms: u64) {
        let q = self.failures.entry(peer).or_default();
        Self::prune_one(q, now_ms);
        q.push_back(now_ms);
    }

    /// Drops expired entries (call periodically to bound memory).
    pub fn prune(&mut self, now_ms: u64) {
        self.failures.retain(|_, q| {
            Self::prune_one(q, now_ms);
            !q.is_empty()
        });
    }

    /// Number of peers tracked.
    pub fn tracked(&self) -> usize {
        self.failures.len()
    }
}
