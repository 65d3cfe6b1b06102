//! The invariants, checked after every step ([`Sim::check`]), at a node kill
//! ([`Sim::check_progress_on_kill`]) and once the cluster has healed
//! ([`Sim::final_check`]).

use std::collections::BTreeMap;

use gateway::control::Where;

use shared::internal::Msg;

use super::{Delivery, Dir, PERSIST_MS, Sim, TRANSFER_BOUND, Violation};

/// Slack on the progress bound: a tick, the network's delays, the commit.
const PROGRESS_SLACK_MS: u64 = 1_500;
/// A character frozen in a handoff is in no checkpoint, but makes no progress either: the
/// bound on the time since its last save grows by each freeze: the zones' transfer
/// timeout (`ZoneConfig::transfer_timeout_ms`), or until its copy was last prepared in a
/// destination before the next freeze, when longer (a transfer whose source node died
/// goes on from the gateway: found by seed 689,247).
const FROZEN_MS: u64 = 2_000;

impl Sim {
    /// The current lineage of the character a session plays, if the session is known.
    fn current(&self, session: u64) -> Option<(u64, u64)> {
        let c = self.clients.get(&session)?;
        Some((
            c.account,
            self.lineage.get(&c.account).copied().unwrap_or(0),
        ))
    }

    /// Live copies of current lineages on node `i`: (account, session, instance).
    fn current_copies(&self, i: usize) -> Vec<(u64, u64, shared::internal::InstanceKey)> {
        let n = &self.nodes[i];
        if !n.up {
            return Vec::new();
        }
        n.copies
            .iter()
            .filter(|((key, s), l)| {
                self.current(*s).is_some_and(|(_, cur)| cur == **l) && self.live_in(i, key, *s)
            })
            .filter_map(|((key, s), _)| self.current(*s).map(|(a, _)| (a, *s, key.clone())))
            .collect()
    }

    /// After every step.
    pub(super) fn check(&mut self) -> Result<(), Violation> {
        if let Some(v) = self.pending_violation.take() {
            return Err(v);
        }
        // One session per account.
        let mut sessions: BTreeMap<u64, u64> = BTreeMap::new();
        for (s, p, ..) in self.control.players() {
            if let Some(other) = sessions.insert(p.account, s) {
                return Err(self.violation(format!(
                    "duplicate login: account {} has sessions {other} and {s}",
                    p.account
                )));
            }
        }
        // Which lineages have been live (for the fencing check).
        for i in 0..self.nodes.len() {
            let live: Vec<(u64, u64)> = self.nodes[i]
                .copies
                .iter()
                .filter(|((key, s), _)| self.live_in(i, key, *s))
                .filter_map(|((_, s), l)| self.clients.get(s).map(|c| (c.account, *l)))
                .collect();
            for (account, l) in live {
                if l & super::DEPOSED_LINEAGE != 0 {
                    continue;
                }
                let m = self.materialized.entry(account).or_insert(0);
                *m = (*m).max(l);
            }
        }
        // At most one live copy of a character's current lineage where the gateway can
        // reach it: on a node whose link is live, in the instance generation placed there.
        let mut seen: BTreeMap<u64, String> = BTreeMap::new();
        for i in 0..self.nodes.len() {
            let n = &self.nodes[i];
            if n.paused || self.gateway_link(i).is_none() {
                continue;
            }
            for (account, session, key) in self.current_copies(i) {
                let placed = self.control.directory().placement(&key).is_some_and(|p| {
                    p.node == n.id
                        && n.core
                            .hosted(&key)
                            .is_some_and(|h| h.generation == p.generation)
                });
                if !placed {
                    continue;
                }
                let here = format!("{} {key} (session {session})", n.id);
                if let Some(there) = seen.insert(account, here.clone()) {
                    return Err(self.violation(format!(
                        "duplicate: account {account}'s character is live at {there} and at {here}"
                    )));
                }
            }
        }
        // Every gateway transfer ends within its bound.
        let now = self.gw_now();
        for (id, ..) in self.control.transfers() {
            if let Some(deadline) = self.control.transfer_deadline(id)
                && now > deadline + super::POLL_SLACK
            {
                return Err(self.violation(format!(
                    "handoff #{id} outlived its deadline ({} ms late)",
                    (now - deadline).as_millis()
                )));
            }
            if let Some(started) = self.gw_started.get(&id)
                && now.saturating_sub(*started) > TRANSFER_BOUND
            {
                return Err(self.violation(format!("handoff #{id} did not end in time")));
            }
        }
        Ok(())
    }

    /// How long `account`'s character may have been frozen in handoffs begun since
    /// `since`: each freeze until its copy was last prepared before the next freeze, or
    /// [`FROZEN_MS`] when longer (a rollback), and at least `FROZEN_MS` in all.
    fn frozen_since(&self, account: u64, since: u64) -> u64 {
        let none = Vec::new();
        let freezes: Vec<u64> = self
            .store
            .frozen_at
            .get(&account)
            .unwrap_or(&none)
            .iter()
            .copied()
            .filter(|at| *at >= since)
            .collect();
        let prepared = self.store.prepared_at.get(&account).unwrap_or(&none);
        let mut total = 0;
        for (k, f) in freezes.iter().enumerate() {
            let next = freezes.get(k + 1).copied().unwrap_or(u64::MAX);
            let until = prepared
                .iter()
                .copied()
                .filter(|p| *p >= *f && *p < next)
                .max()
                .map_or(0, |p| p - f);
            total += until.max(FROZEN_MS);
        }
        total.max(FROZEN_MS)
    }

    /// At a kill of node `i`: the characters live there lose at most one checkpoint
    /// interval of progress (when the node was steadily connected and running).
    pub(super) fn check_progress_on_kill(&mut self, i: usize) {
        let n = &self.nodes[i];
        let steady = !n.paused
            && self.gateway_link(i).is_some()
            && self.now.saturating_sub(n.stable_since) > PERSIST_MS + PROGRESS_SLACK_MS;
        if !steady {
            return;
        }
        for (account, session, key) in self.current_copies(i) {
            let since = self.store.saved_at.get(&account).copied().unwrap_or(0);
            let lost = self.now.saturating_sub(since);
            let frozen = self.frozen_since(account, since);
            if lost > PERSIST_MS + frozen + PROGRESS_SLACK_MS {
                let v = self.violation(format!(
                    "progress: account {account}'s character (session {session}, {key} on {}) \
                     was last saved {lost} ms before its node was killed",
                    self.nodes[i].id
                ));
                self.pending_violation.get_or_insert(v);
                return;
            }
        }
    }

    /// A handoff is under way somewhere (the gateway, a node's table, a zone).
    pub(super) fn handoff_in_flight(&self) -> bool {
        self.control.transfers().next().is_some()
            || (0..self.nodes.len())
                .any(|i| !self.nodes[i].core.transfers().is_empty() || self.in_handoff(i) > 0)
            // A handoff inside a node, committed, its `PlayerMoved` on the way.
            || self.queue.values().any(|d| {
                matches!(d, Delivery::Msg { msg, dir: Dir::ToGateway, .. }
                    if matches!(**msg, Msg::PlayerMoved { .. }))
            })
    }

    /// Once healed: nothing pending, every player live exactly where the gateway says.
    pub(super) fn final_check(&mut self) -> Result<(), Violation> {
        self.check()?;
        if let Some((id, s, key, ..)) = self.control.transfers().next() {
            return Err(self.violation(format!(
                "healed, but handoff #{id} of session {s:?} to {key} is still pending at the gateway"
            )));
        }
        for i in 0..self.nodes.len() {
            let n = &self.nodes[i];
            if !n.core.transfers().is_empty() {
                return Err(self.violation(format!(
                    "healed, but {} still has {} transfers pending: {:?}",
                    n.id,
                    n.core.transfers().len(),
                    n.core.transfers()
                )));
            }
            let frozen = self.in_handoff(i);
            if frozen > 0 {
                return Err(self.violation(format!(
                    "healed, but {} holds {frozen} frozen or prepared actors",
                    n.id
                )));
            }
        }
        let players: Vec<(u64, Option<String>, Where, shared::internal::InstanceKey)> = self
            .control
            .players()
            .map(|(s, _, key, node, w)| (s, node.map(str::to_owned), w, key.clone()))
            .collect();
        for (s, node, w, key) in players {
            if w != Where::InGame {
                return Err(self.violation(format!("healed, but session {s} is still {w:?}")));
            }
            let Some(i) = node.as_deref().and_then(|n| self.node_index(n)) else {
                return Err(self.violation(format!("healed, but session {s} has no node")));
            };
            let lineage_ok = self
                .current(s)
                .is_some_and(|(_, cur)| self.nodes[i].copies.get(&(key.clone(), s)) == Some(&cur));
            let routed = self.nodes[i].core.session_instance(s) == Some(&key);
            let live = self.live_in(i, &key, s);
            if !routed || !live || !lineage_ok {
                return Err(self.violation(format!(
                    "lost: session {s} is in game at {key} on {} but not live there \
                     (routed {routed}, live {live}, current lineage {lineage_ok})",
                    self.nodes[i].id
                )));
            }
        }
        // Healed, not even a stale copy is left anywhere: one live copy per character.
        let mut live: BTreeMap<u64, Vec<String>> = BTreeMap::new();
        for i in 0..self.nodes.len() {
            if !self.nodes[i].up {
                continue;
            }
            for (key, s) in self.nodes[i].copies.keys() {
                if self.live_in(i, key, *s)
                    && let Some(c) = self.clients.get(s)
                {
                    live.entry(c.account)
                        .or_default()
                        .push(format!("{} {key} (session {s})", self.nodes[i].id));
                }
            }
        }
        if let Some((account, at)) = live.iter().find(|(_, v)| v.len() > 1) {
            return Err(self.violation(format!(
                "healed, but account {account}'s character is live {} times: {}",
                at.len(),
                at.join(", ")
            )));
        }
        for (s, c) in &self.clients {
            if c.open && !self.control.knows(*s) {
                let v = self.violation(format!(
                    "lost: client session {s} is connected but the gateway does not know it"
                ));
                return Err(v);
            }
        }
        Ok(())
    }
}
