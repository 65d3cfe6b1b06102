//! Snapshot retention: the saves (`Snapshot`, `SnapshotGroup`) the node sent or queued
//! and the gateway has not acknowledged yet, as a pure table on an injected clock (ms).
//!
//! The gateway acknowledges a save only once it is stored, so the node keeps each one
//! until then: re-sent after a reconnect, and on a timer while connected (a save the
//! gateway could not store, a full disk, is offered again without waiting for a
//! reconnect). Three rules keep the table small and the store right:
//! * **Superseded periodic saves go** ([`Retention::keep`]): a periodic save all of whose
//!   characters (and ground) a newer save saves too is useless, so while the gateway is
//!   away the table holds at most one periodic checkpoint per character (and group) plus
//!   the logouts, transfers and shutdown saves, not one per checkpoint interval.
//! * **A covered save is not re-sent** ([`Retention::due_for_resend`]): one a newer kept
//!   save covers would overwrite the newer state if it arrived after it.
//! * **An acknowledgement forgets the older saves it covers** ([`Retention::acked`]).
//!
//! `P` is what the shell re-sends: the link's encoded frame, the simulator's message.

use std::collections::BTreeMap;
use std::ops::Bound;

use shared::internal::{InstanceKey, Msg, SessionId, SnapshotReasonDto};

/// What a save stores: a character, or an instance's ground items.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Saves {
    Character(SessionId),
    Ground(InstanceKey),
}

/// One unacknowledged save.
#[derive(Debug, Clone)]
struct Kept<P> {
    payload: P,
    /// What it stores, sorted.
    saves: Vec<Saves>,
    /// Only periodic: a newer save of the same characters makes it useless.
    periodic: bool,
    /// When it was last sent (ms); `None`: never (the link was down).
    sent: Option<u64>,
}

/// The id a `Snapshot` or a `SnapshotGroup` is acknowledged by (`SnapshotAck`); `None`
/// for every other message.
pub fn snapshot_id(msg: &Msg) -> Option<u64> {
    match msg {
        Msg::Snapshot { snapshot_id, .. } => Some(*snapshot_id),
        Msg::SnapshotGroup(g) => Some(g.snapshot_id),
        _ => None,
    }
}

fn saves_of(msg: &Msg) -> (Vec<Saves>, bool) {
    use SnapshotReasonDto::Periodic;
    let (mut saves, periodic) = match msg {
        Msg::Snapshot {
            session, reason, ..
        } => (vec![Saves::Character(*session)], *reason == Periodic),
        Msg::SnapshotGroup(g) => {
            let mut v: Vec<Saves> = g
                .entries
                .iter()
                .map(|e| Saves::Character(e.session))
                .collect();
            if g.ground.is_some() {
                v.push(Saves::Ground(g.key.clone()));
            }
            (v, g.entries.iter().all(|e| e.reason == Periodic))
        }
        _ => (Vec::new(), false),
    };
    saves.sort();
    saves.dedup();
    (saves, periodic)
}

fn covers(newer: &[Saves], older: &[Saves]) -> bool {
    older.iter().all(|s| newer.binary_search(s).is_ok())
}

/// The unacknowledged saves, by id (see the module docs).
#[derive(Debug, Clone)]
pub struct Retention<P> {
    kept: BTreeMap<u64, Kept<P>>,
}

impl<P> Default for Retention<P> {
    fn default() -> Self {
        Self {
            kept: BTreeMap::new(),
        }
    }
}

impl<P> Retention<P> {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps save `msg` (its payload `payload`, sent at `sent` or not yet) until it is
    /// acknowledged, forgetting the older periodic saves it supersedes; returns how many
    /// it superseded. A message that is not a save is not kept.
    pub fn keep(&mut self, msg: &Msg, payload: P, sent: Option<u64>) -> usize {
        let Some(id) = snapshot_id(msg) else {
            return 0;
        };
        let (saves, periodic) = saves_of(msg);
        let before = self.kept.len();
        self.kept
            .retain(|&old, e| !(old < id && e.periodic && covers(&saves, &e.saves)));
        let superseded = before.saturating_sub(self.kept.len());
        self.kept.insert(
            id,
            Kept {
                payload,
                saves,
                periodic,
                sent,
            },
        );
        superseded
    }

    /// The saves sent at least `every_ms` before `now` (or never) and still
    /// unacknowledged, marked sent at `now`, oldest first; one a newer kept save covers is
    /// skipped.
    pub fn due_for_resend(&mut self, now: u64, every_ms: u64) -> Vec<u64> {
        let covered: Vec<u64> = self
            .kept
            .iter()
            .filter(|&(&id, k)| {
                self.kept
                    .range((Bound::Excluded(id), Bound::Unbounded))
                    .any(|(_, newer)| covers(&newer.saves, &k.saves))
            })
            .map(|(&id, _)| id)
            .collect();
        let mut due = Vec::new();
        for (&id, k) in &mut self.kept {
            if covered.binary_search(&id).is_ok() {
                continue;
            }
            if k.sent.is_none_or(|t| now.saturating_sub(t) >= every_ms) {
                k.sent = Some(now);
                due.push(id);
            }
        }
        due
    }

    /// Save `id` is stored: it is forgotten, and so is every older one it covers (their
    /// state is older than what is stored now; sent again, they would overwrite it).
    pub fn acked(&mut self, id: u64) {
        if let Some(k) = self.kept.remove(&id) {
            self.kept
                .retain(|&old, e| !(old < id && covers(&k.saves, &e.saves)));
        }
    }

    /// Every kept save, oldest first, marked sent at `now` (all re-sent after a
    /// reconnect).
    pub fn resend_all(&mut self, now: u64) -> impl Iterator<Item = &P> {
        self.kept.values_mut().map(move |k| {
            k.sent = Some(now);
            &k.payload
        })
    }

    /// The payload of save `id`.
    pub fn get(&self, id: u64) -> Option<&P> {
        self.kept.get(&id).map(|k| &k.payload)
    }

    /// The ids kept, oldest first.
    pub fn ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.kept.keys().copied()
    }

    /// Saves kept.
    pub fn len(&self) -> usize {
        self.kept.len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }

    /// Forget everything (the node's process ended).
    pub fn clear(&mut self) {
        self.kept.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::internal::SnapshotReasonDto::{Logout, Periodic};

    fn snap(id: u64, session: u64, reason: SnapshotReasonDto) -> Msg {
        Msg::Snapshot {
            snapshot_id: id,
            session,
            reason,
            state: Box::default(),
        }
    }

    #[test]
    fn an_unacknowledged_snapshot_is_sent_again_on_the_timer_until_acknowledged() {
        let mut r = Retention::new();
        let (t0, every) = (1_000, 3_000);
        r.keep(&snap(1, 7, Logout), (), Some(t0));
        // Kept while the link was down: never sent, due at once.
        r.keep(&snap(2, 8, Logout), (), None);
        assert_eq!(r.due_for_resend(t0, every), [2]);
        assert!(r.due_for_resend(t0 + 1_000, every).is_empty());
        assert_eq!(r.due_for_resend(t0 + every, every), [1, 2]);
        assert!(r.due_for_resend(t0 + every, every).is_empty());
        // Acknowledged: never again.
        r.acked(1);
        assert_eq!(r.due_for_resend(t0 + every * 2, every), [2]);
        // A newer save of the same character: the older one is not sent again while the
        // newer one is on its way (it would overwrite the newer state), and is forgotten
        // once the newer one is stored.
        r.keep(&snap(3, 8, Logout), (), Some(t0 + every * 2));
        assert_eq!(r.due_for_resend(t0 + every * 5, every), [3]);
        r.acked(3);
        assert!(r.is_empty());
        // What is not a save is not kept.
        assert_eq!(r.keep(&Msg::Drain, (), None), 0);
        assert!(r.is_empty());
    }

    #[test]
    fn while_the_gateway_is_away_one_periodic_snapshot_per_character_is_kept() {
        let mut r = Retention::new();
        let mut superseded = 0;
        for id in 1..=50 {
            superseded += r.keep(&snap(id, 7, Periodic), (), None);
            superseded += r.keep(&snap(1000 + id, 8, Periodic), (), None);
        }
        assert_eq!(r.ids().collect::<Vec<_>>(), [50, 1050]);
        // A logout supersedes the periodic save before it, and is never superseded itself.
        superseded += r.keep(&snap(2000, 7, Logout), (), None);
        superseded += r.keep(&snap(2001, 7, Periodic), (), None);
        assert_eq!(r.ids().collect::<Vec<_>>(), [1050, 2000, 2001]);
        assert_eq!(superseded, 49 + 49 + 1);
        // A group saving 8 with another character supersedes 8's single save; a single
        // save does not supersede the group (it would lose the other character).
        let group = |id: u64, sessions: &[u64]| {
            Msg::SnapshotGroup(Box::new(shared::internal::SnapshotGroup {
                snapshot_id: id,
                key: InstanceKey {
                    area: "Meadow".into(),
                    instance: 0,
                },
                generation: 1,
                entries: sessions
                    .iter()
                    .map(|&session| shared::internal::SnapshotEntry {
                        session,
                        reason: Periodic,
                        state: Default::default(),
                    })
                    .collect(),
                ground: None,
            }))
        };
        r.keep(&group(3000, &[8, 9]), (), None);
        r.keep(&snap(3001, 8, Periodic), (), None);
        assert_eq!(r.ids().collect::<Vec<_>>(), [2000, 2001, 3000, 3001]);
        // After a reconnect every kept save goes again, oldest first.
        let n = r.resend_all(5).count();
        assert_eq!(n, 4);
        assert!(r.due_for_resend(6, 3_000).is_empty());
    }
}
