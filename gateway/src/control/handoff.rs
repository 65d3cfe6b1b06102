//! SetArea handoffs between zone nodes (`docs/handoff.md`): the two-phase transfer
//! (forward → prepared ack → the source's commit or abort), the routing switch at commit,
//! and the recovery of players whose node was lost.
//!
//! The source node holds the frozen actor until it decides; the destination holds a
//! prepared, invisible copy until it hears the decision. Only the source decides, except
//! when no node holds the actor any more (its node was lost, or the gateway itself is
//! putting a player back from its last save): then the gateway commits as soon as the
//! destination is prepared. Either way the actor is live in exactly one place.

use std::time::Duration;

use shared::internal::{Generation, InstanceKey, Msg, SessionId, TransferDto, TransferId};

use super::{
    ATTACH_TIMEOUT, AccountId, Action, Characters, Control, Count, Phase, Trace, Waiter, close,
};
use crate::directory::NodeId;

/// How long a forwarded transfer waits for the destination to prepare before the gateway
/// refuses it (the source's own timeout, 2 s, usually fires first).
pub const FORWARD_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a prepared transfer waits for the source's decision before the gateway aborts
/// it.
pub const DECISION_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a player whose node was lost may take to be put back before it is
/// disconnected (code 3) to log in again.
pub const RECOVER_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest a transfer waits for a destination, however often it is sent again.
pub const MAX_HANDOFF: Duration = Duration::from_secs(30);

/// A transfer the gateway coordinates.
#[derive(Debug, Clone)]
pub(super) struct Transfer {
    /// The node holding the frozen actor; `None` once no node holds it (a recovery, or its
    /// source node was lost): commit when prepared.
    pub(super) source: Option<NodeId>,
    /// The transfer as sent to the destination.
    pub(super) dto: Box<TransferDto>,
    /// Where it was sent.
    pub(super) forwarded_to: Option<NodeId>,
    /// Where it was sent before its link closed: that node may still hold a prepared copy
    /// under this id, dropped (`TransferAbort`) before the transfer goes there again.
    pub(super) old_dest: Option<NodeId>,
    /// The destination acknowledged: it holds the actor prepared.
    pub(super) prepared: bool,
    /// When the current phase gives up.
    pub(super) deadline: Duration,
    /// When the gateway first heard of it (handoff latency).
    pub(super) started: Duration,
    /// The gateway is putting a player back after a node loss (not a SetArea).
    pub(super) recovery: bool,
}

impl Transfer {
    pub(super) fn key(&self) -> InstanceKey {
        InstanceKey {
            area: self.dto.area.clone(),
            instance: self.dto.instance,
        }
    }
}

impl Control {
    /// A node sends an actor to an instance it does not host.
    pub(super) fn transfer_from(
        &mut self,
        node: &str,
        t: Box<TransferDto>,
        chars: &dyn Characters,
    ) {
        let id = t.transfer_id;
        let Some(area) = self
            .areas
            .iter()
            .find(|a| a.eq_ignore_ascii_case(&t.area))
            .cloned()
        else {
            self.count(Count::TransferRefused);
            self.send(
                node,
                Msg::TransferNack {
                    transfer_id: id,
                    reason: format!("there is no area called {}", t.area),
                },
                Trace::Current,
            );
            return;
        };
        if self.transfers.contains_key(&id) {
            // The same transfer twice: the first one stands (ids are unique cluster-wide,
            // so only its source can send it again).
            self.count(Count::InternalRefused);
            return;
        }
        if let Some(s) = t.session {
            let hosted = self.players.get(&s).is_some_and(|p| {
                p.node.as_deref() == Some(node) && matches!(p.phase, Phase::InGame)
            });
            if !hosted || self.in_transfer(s) {
                // Only the node that hosts a player may move it (a fenced node may not),
                // and one move at a time.
                self.count(Count::TransferRefused);
                self.send(
                    node,
                    Msg::TransferNack {
                        transfer_id: id,
                        reason: "this node does not host that player".into(),
                    },
                    Trace::Current,
                );
                return;
            }
        }
        let mut t = t;
        t.area = area;
        tracing::debug!(node, transfer = %id, session = ?t.session, area = %t.area, instance = t.instance, "handoff begins");
        self.count(Count::HandoffStarted);
        self.start_transfer(Some(node.to_owned()), t, false, Trace::Current, chars);
    }

    fn start_transfer(
        &mut self,
        source: Option<NodeId>,
        dto: Box<TransferDto>,
        recovery: bool,
        parent: Trace,
        chars: &dyn Characters,
    ) {
        let id = dto.transfer_id;
        let now = self.now;
        // Under the source's `handoff.source`, or under `node.lost`, or a root of its own
        // (a drained node's player moving).
        self.out.push(Action::TransferBegan {
            id,
            session: dto.session,
            key: InstanceKey {
                area: dto.area.clone(),
                instance: dto.instance,
            },
            source: source.clone(),
            recovery,
            parent,
        });
        self.transfers.insert(
            id,
            Transfer {
                source,
                dto,
                forwarded_to: None,
                old_dest: None,
                prepared: false,
                deadline: now + ATTACH_TIMEOUT,
                started: now,
                recovery,
            },
        );
        self.forward_transfer(id, chars);
    }

    /// Send a transfer to the node that owns its destination, once that is ready and the
    /// store has the token its copy carries.
    pub(super) fn forward_transfer(&mut self, id: TransferId, chars: &dyn Characters) {
        let Some(key) = self.transfers.get(&id).map(Transfer::key) else {
            return;
        };
        let trace = Trace::Transfer(id);
        // A stuck instance (its node's watchdog says so) takes no one until it ticks again
        // or is placed anew.
        let ready = self
            .dir
            .placement(&key)
            .filter(|p| p.ready && !p.stuck)
            .map(|p| (p.node.clone(), p.generation));
        // A draining node takes no one: wait until its instance is placed elsewhere.
        let usable =
            |n: &str| self.nodes.contains_key(n) && !self.dir.node(n).is_some_and(|d| d.draining);
        let now = self.now;
        match ready {
            Some(_) if self.carries_unstored(id) => {
                // Handed out anew (a recovery, a source given up): no copy leaves before
                // the store has its token, as for a login ([`super::Event::HandedOut`]).
                if let Some(t) = self.transfers.get_mut(&id) {
                    let wait = (now + ATTACH_TIMEOUT).min(t.started + MAX_HANDOFF);
                    t.deadline = t.deadline.max(wait);
                }
                tracing::debug!(transfer = %id, "handoff waits for its hand-out to be stored");
            }
            Some((dest, generation)) if usable(&dest) => {
                let Some(t) = self.transfers.get_mut(&id) else {
                    return;
                };
                let mut dto = t.dto.clone();
                dto.generation = generation;
                let stale_copy = t.old_dest.take().is_some_and(|n| n == dest);
                t.forwarded_to = Some(dest.clone());
                t.deadline = (now + FORWARD_TIMEOUT).min(t.started + MAX_HANDOFF);
                if stale_copy {
                    // The same node again (it only lost its link): it drops the copy it
                    // may still hold under this id first (the link keeps the order).
                    self.send(&dest, Msg::TransferAbort { transfer_id: id }, trace);
                }
                self.out.push(Action::TransferForwarded {
                    id,
                    dest: dest.clone(),
                });
                self.count(Count::TransferRouted);
                self.send(&dest, Msg::Transfer(dto), trace);
            }
            _ => {
                self.wait(key.clone(), Waiter::Transfer(id));
                if let Some(a) = self.dir.ensure(&key) {
                    self.apply(vec![a], trace, chars);
                } else if self.dir.placement(&key).is_none() {
                    self.refuse_transfer(id, "no zone node can host that area now", chars);
                }
            }
        }
    }

    /// The destination holds the actor prepared: ask the source to decide, or commit at
    /// once when no node holds the actor.
    pub(super) fn transfer_prepared(
        &mut self,
        from: &str,
        id: TransferId,
        generation: Generation,
        chars: &dyn Characters,
    ) {
        let now = self.now;
        let Some(t) = self.transfers.get_mut(&id) else {
            self.count(Count::InternalRefused);
            self.send(from, Msg::TransferAbort { transfer_id: id }, Trace::Current);
            return;
        };
        if t.forwarded_to.as_deref() != Some(from) || t.prepared {
            self.count(Count::InternalRefused);
            return;
        }
        t.prepared = true;
        t.deadline = now + DECISION_TIMEOUT;
        tracing::debug!(
            transfer = %id,
            node = from,
            "handoff prepared at the destination"
        );
        match t.source.clone() {
            Some(node) => {
                // A source whose link is down decides once it re-registers or is given
                // up (`transfers_source_back`, `transfers_source_gone`).
                self.send(
                    &node,
                    Msg::TransferAck {
                        transfer_id: id,
                        generation,
                    },
                    Trace::Transfer(id),
                );
            }
            None => self.commit(id, chars),
        }
    }

    /// The destination refused: the source restores the actor; a player no node holds
    /// is put back from its last save, or disconnected.
    pub(super) fn transfer_refused(
        &mut self,
        from: &str,
        id: TransferId,
        reason: &str,
        chars: &dyn Characters,
    ) {
        let ok = self
            .transfers
            .get(&id)
            .is_some_and(|t| t.forwarded_to.as_deref() == Some(from) && !t.prepared);
        if !ok {
            self.count(Count::InternalRefused);
            return;
        }
        self.refuse_transfer(id, reason, chars);
    }

    fn refuse_transfer(&mut self, id: TransferId, reason: &str, chars: &dyn Characters) {
        let Some(t) = self.transfers.remove(&id) else {
            return;
        };
        let trace = Trace::Transfer(id);
        tracing::info!(transfer = %id, reason, "handoff refused");
        self.unwait(id);
        self.count(Count::TransferRefused);
        self.count(Count::HandoffRolledBack);
        if let Some(dest) = &t.forwarded_to {
            // It may still prepare (a late answer): make sure it drops the copy.
            self.send(dest, Msg::TransferAbort { transfer_id: id }, trace);
        }
        match t.source {
            Some(node) if self.nodes.contains_key(&node) => {
                self.send(
                    &node,
                    Msg::TransferNack {
                        transfer_id: id,
                        reason: reason.to_owned(),
                    },
                    trace,
                );
            }
            _ => {
                // No node holds the actor: a failed recovery disconnects; a handoff whose
                // source died is recovered from the last save.
                if let Some(s) = t.dto.session {
                    if t.recovery {
                        self.recovery_failed(s, reason);
                    } else {
                        self.recover(s, chars);
                    }
                }
            }
        }
        self.out.push(Action::TransferEnded {
            id,
            outcome: "refused",
        });
    }

    /// The source decided (phase two). A decision may come while the transfer is being
    /// sent again (its destination's link closed after the source heard it was prepared):
    /// a commit means the source let go, so the transfer commits as soon as a destination
    /// is prepared; an abort ends it. Only the node holding the actor decides.
    pub(super) fn transfer_decided(
        &mut self,
        from: &str,
        id: TransferId,
        commit: bool,
        chars: &dyn Characters,
    ) {
        let Some(prepared) = self
            .transfers
            .get(&id)
            .filter(|t| t.source.as_deref() == Some(from))
            .map(|t| t.prepared)
        else {
            tracing::debug!(
                node = from,
                transfer = %id,
                commit,
                "decision for an unknown handoff"
            );
            self.count(Count::InternalRefused);
            return;
        };
        tracing::debug!(transfer = %id, node = from, commit, "the source decided");
        if commit && prepared {
            self.commit(id, chars);
        } else if commit {
            self.source_let_go(id);
        } else {
            let Some(t) = self.transfers.remove(&id) else {
                return;
            };
            self.unwait(id);
            self.count(Count::HandoffRolledBack);
            if let Some(dest) = &t.forwarded_to {
                self.send(
                    dest,
                    Msg::TransferAbort { transfer_id: id },
                    Trace::Transfer(id),
                );
            }
            self.out.push(Action::TransferEnded {
                id,
                outcome: "aborted",
            });
        }
    }

    /// Phase two: switch the session's route to the destination, then let the destination
    /// make the actor live. A player whose client left meanwhile is aborted instead.
    fn commit(&mut self, id: TransferId, chars: &dyn Characters) {
        let Some(t) = self.transfers.remove(&id) else {
            return;
        };
        let trace = Trace::Transfer(id);
        let Some(dest) = t.forwarded_to.clone() else {
            self.out.push(Action::TransferEnded {
                id,
                outcome: "never forwarded",
            });
            return;
        };
        let key = t.key();
        if !self.nodes.contains_key(&dest) {
            // The destination died holding the only copy: back from the last save.
            if let Some(s) = t.dto.session {
                self.recover(s, chars);
            }
            self.out.push(Action::TransferEnded {
                id,
                outcome: "destination lost",
            });
            return;
        }
        if let Some(session) = t.dto.session {
            let wanted = self
                .players
                .get(&session)
                .is_some_and(|p| matches!(p.phase, Phase::InGame | Phase::Recovering { .. }));
            if !wanted {
                // The client left during the handoff: its source saved it on detach.
                self.count(Count::HandoffRolledBack);
                self.send(&dest, Msg::TransferAbort { transfer_id: id }, trace);
                self.out.push(Action::TransferEnded {
                    id,
                    outcome: "aborted: the client left",
                });
                return;
            }
            if let Some(p) = self.players.get_mut(&session) {
                p.key = key;
                p.node = Some(dest.clone());
                p.phase = Phase::InGame;
                self.out.push(Action::Route {
                    session,
                    node: dest.clone(),
                });
            }
        }
        self.send(&dest, Msg::TransferCommit { transfer_id: id }, trace);
        if let Some(session) = t.dto.session {
            // The party spans zones: the new zone learns it for its XP split.
            self.out.push(Action::ZoneChanged { session });
        }
        self.count(Count::HandoffCompleted);
        self.out
            .push(Action::HandoffLatency(self.now.saturating_sub(t.started)));
        self.out.push(Action::TransferEnded {
            id,
            outcome: "committed",
        });
    }

    /// A node's link closed: transfers towards it go out again once their instance is
    /// ready (on that node when it re-registers, or wherever it is placed next). The
    /// transfer itself carries the actor, so a destination that restarted loses nothing;
    /// one that only lost its link drops its prepared copy first ([`Transfer::old_dest`]).
    /// Transfers *from* it wait: the node may only have lost its link, and its frozen actor
    /// is alive until it re-registers ([`Control::transfers_source_back`]) or is given up
    /// ([`Control::transfers_source_gone`]).
    pub(super) fn transfers_link_lost(&mut self, node: &str) {
        let now = self.now;
        let mut waits = Vec::new();
        for (id, t) in &mut self.transfers {
            if t.forwarded_to.as_deref() != Some(node) {
                continue;
            }
            t.forwarded_to = None;
            t.old_dest = Some(node.to_owned());
            t.prepared = false;
            t.deadline = (now + ATTACH_TIMEOUT).min(t.started + MAX_HANDOFF);
            waits.push((t.key(), *id));
        }
        for (key, id) in waits {
            self.wait(key, Waiter::Transfer(id));
        }
    }

    /// `node`'s watchdog gave its copy of `key` up: a transfer sent there, prepared or
    /// not, waits for `key`'s next placement and goes out again once that is ready, as on
    /// a link loss (the transfer carries the actor, so nothing is lost when the given-up
    /// copy drops its prepared arrival, even after the source committed). Not refused at
    /// once when no node can take it yet (placement held after a gateway restart): found
    /// by the simulator, seed 106,832 (the player was lost).
    pub(super) fn transfers_dest_given_up(&mut self, node: &str, key: &InstanceKey) {
        let now = self.now;
        let mut waits = Vec::new();
        for (id, t) in &mut self.transfers {
            if t.forwarded_to.as_deref() != Some(node) || t.key() != *key {
                continue;
            }
            t.forwarded_to = None;
            t.old_dest = Some(node.to_owned());
            t.prepared = false;
            t.deadline = (now + ATTACH_TIMEOUT).min(t.started + MAX_HANDOFF);
            waits.push(*id);
        }
        for id in waits {
            self.wait(key.clone(), Waiter::Transfer(id));
        }
    }

    /// The copy of `key` on `node` is being stopped (a newer generation of it won): a
    /// transfer sent there, prepared or not, goes out again to where `key` is placed now.
    /// The transfer carries the actor, so nothing is lost when the stopped copy drops its
    /// prepared arrival, even after the source committed (found by the simulator, seed
    /// 195,377: the player was lost).
    pub(super) fn transfers_dest_withdrawn(
        &mut self,
        node: &str,
        key: &InstanceKey,
        chars: &dyn Characters,
    ) {
        let now = self.now;
        let mut again = Vec::new();
        for (id, t) in &mut self.transfers {
            if t.forwarded_to.as_deref() != Some(node) || t.key() != *key {
                continue;
            }
            t.forwarded_to = None;
            t.old_dest = Some(node.to_owned());
            t.prepared = false;
            t.deadline = (now + ATTACH_TIMEOUT).min(t.started + MAX_HANDOFF);
            again.push(*id);
        }
        for id in again {
            self.forward_transfer(id, chars);
        }
    }

    /// A node was given up (it missed its heartbeats; it is fenced from now on): its
    /// copies are dead, so transfers from it are committed as soon as prepared (the
    /// transfer carries the actor), and transfers towards it are settled as on a link loss.
    ///
    /// A node given up may only have been paused: when it resumes, its zone gives up
    /// waiting and restores the frozen actor. So the copy the transfer carries is handed
    /// out again with a new fencing token (the old copy's saves are refused from then
    /// on), and a destination already holding it under the old token drops it and is sent
    /// the new one.
    pub(super) fn transfers_source_gone(&mut self, node: &str, chars: &dyn Characters) {
        let ids: Vec<TransferId> = self.transfers.keys().copied().collect();
        for id in ids {
            let Some(t) = self.transfers.get(&id) else {
                continue;
            };
            if t.source.as_deref() != Some(node) {
                continue;
            }
            let owner = self.owner(t);
            self.source_let_go(id);
            let Some((account, slot)) = owner else {
                continue;
            };
            let Some(t) = self.transfers.get_mut(&id) else {
                continue;
            };
            let mut state = std::mem::take(&mut t.dto.state);
            // A transfer aimed at the lost node itself is `transfers_link_lost`'s (below).
            let dest = t.forwarded_to.clone().filter(|d| d != node);
            if dest.is_some() {
                t.forwarded_to = None;
                t.prepared = false;
            }
            self.hand_out_for(account, slot, &mut state, Some(id));
            let Some(t) = self.transfers.get_mut(&id) else {
                continue;
            };
            t.dto.state = state;
            if let Some(dest) = dest {
                // Its copy there carries the old token: dropped first (the link keeps the
                // order), then the transfer goes out again.
                t.old_dest = Some(dest);
                self.forward_transfer(id, chars);
            }
        }
        self.transfers_link_lost(node);
    }

    /// A node re-registered, running `hosted` sessions. A transfer from it whose player
    /// it still hosts has not been committed there (the source lets go only at its
    /// commit), and its answers were lost with the old link: it is refused, so the source
    /// restores the actor and nothing can commit it later. One whose player it no longer
    /// hosts was committed there (or the node restarted and the copy died with it): the
    /// transfer goes on without a source.
    pub(super) fn transfers_source_back(
        &mut self,
        node: &str,
        hosted: &std::collections::BTreeSet<SessionId>,
        chars: &dyn Characters,
    ) {
        let ids: Vec<TransferId> = self.transfers.keys().copied().collect();
        for id in ids {
            let Some(t) = self.transfers.get_mut(&id) else {
                continue;
            };
            if t.source.as_deref() != Some(node) {
                continue;
            }
            match t.dto.session {
                Some(s) if hosted.contains(&s) => {
                    self.refuse_transfer(id, "the source node reconnected", chars);
                }
                _ => {
                    let prepared = t.prepared;
                    self.source_let_go(id);
                    if prepared {
                        self.commit(id, chars);
                    }
                }
            }
        }
    }

    /// No node holds the transfer's actor any more (its source committed, or died, or was
    /// given up): the transfer is the player's only copy and commits once a destination
    /// is prepared. Until then the player is attached nowhere (`Recovering`, for as long
    /// as the transfer may take): its old node's copy, if that node comes back, is an
    /// orphan there (detached, its saves fenced), and a second recovery cannot start.
    fn source_let_go(&mut self, id: TransferId) {
        let now = self.now;
        let Some(t) = self.transfers.get_mut(&id) else {
            return;
        };
        t.source = None;
        let Some(session) = t.dto.session else {
            return;
        };
        if let Some(p) = self.players.get_mut(&session)
            && matches!(p.phase, Phase::InGame)
        {
            p.node = None;
            p.phase = Phase::Recovering {
                deadline: now + MAX_HANDOFF + DECISION_TIMEOUT,
            };
            self.out.push(Action::Unroute { session });
        }
    }

    /// The character a transfer carries, by its player's session: (account, slot).
    pub(super) fn owner(&self, t: &Transfer) -> Option<(AccountId, u8)> {
        let p = self.players.get(&t.dto.session?)?;
        Some((p.account, p.slot))
    }

    /// Whether the transfer's copy carries a token the store has not answered yet.
    fn carries_unstored(&self, id: TransferId) -> bool {
        let Some(t) = self.transfers.get(&id) else {
            return false;
        };
        self.owner(t)
            .is_some_and(|o| self.unstored.get(&o) == Some(&t.dto.state.fence))
    }

    /// The store answered the hand-out of the copy transfer `id` carries: it goes out now,
    /// or, refused (a deposed leader's write, a failing store), its player is disconnected
    /// to log in again (no node holds it, and its token could not be stored).
    pub(super) fn transfer_handed_out(
        &mut self,
        id: TransferId,
        stored: bool,
        chars: &dyn Characters,
    ) {
        if stored {
            if self
                .transfers
                .get(&id)
                .is_some_and(|t| t.forwarded_to.is_none())
            {
                self.forward_transfer(id, chars);
            }
            return;
        }
        let Some(t) = self.transfers.remove(&id) else {
            return;
        };
        self.unwait(id);
        self.count(Count::HandoffRolledBack);
        // Where it was, or was last sent (it may still hold a prepared copy there).
        for dest in t.forwarded_to.iter().chain(&t.old_dest) {
            self.send(
                dest,
                Msg::TransferAbort { transfer_id: id },
                Trace::Transfer(id),
            );
        }
        if let Some(s) = t.dto.session {
            self.recovery_failed(s, "the store did not take its hand-out");
        }
        self.out.push(Action::TransferEnded {
            id,
            outcome: "hand-out refused",
        });
    }

    /// Sessions with a transfer in flight (their node loss is handled by the transfer).
    pub(super) fn in_transfer(&self, session: SessionId) -> bool {
        self.transfers
            .values()
            .any(|t| t.dto.session == Some(session))
    }

    /// Transfers that waited too long in their phase.
    pub(super) fn transfer_timeouts(&mut self, chars: &dyn Characters) {
        let now = self.now;
        let late: Vec<(TransferId, bool)> = self
            .transfers
            .iter()
            .filter(|(_, t)| now >= t.deadline)
            .map(|(id, t)| (*id, t.prepared))
            .collect();
        for (id, prepared) in late {
            if prepared {
                tracing::warn!(transfer = %id, "no commit or abort from the source in time");
                if let Some(t) = self.transfers.remove(&id) {
                    if let Some(dest) = &t.forwarded_to {
                        self.send(
                            dest,
                            Msg::TransferAbort { transfer_id: id },
                            Trace::Transfer(id),
                        );
                    }
                    if let (None, Some(s)) = (&t.source, t.dto.session) {
                        self.recovery_failed(s, "the handoff did not complete");
                    }
                    self.out.push(Action::TransferEnded {
                        id,
                        outcome: "timed out",
                    });
                }
            } else {
                self.refuse_transfer(id, "the destination did not answer in time", chars);
            }
        }
    }

    fn unwait(&mut self, id: TransferId) {
        for list in self.waiting.values_mut() {
            list.retain(|w| *w != Waiter::Transfer(id));
        }
    }

    /// Put a player whose zone node was lost back into the world from its last save,
    /// without reconnecting: a handoff from the gateway itself into the (re-placed)
    /// instance, so the client gets `P_ChangeArea` into the same area.
    pub(super) fn recover(&mut self, session: SessionId, chars: &dyn Characters) {
        // One move at a time: a transfer in flight already carries the player.
        if self.in_transfer(session) {
            return;
        }
        let Some(p) = self.players.get(&session) else {
            return;
        };
        if matches!(p.phase, Phase::Leaving { .. }) {
            // It logged out: its last save is what there is, and it is not put back.
            self.release(session);
            return;
        }
        let Some(mut state) = chars.saved(p.account, p.slot) else {
            self.recovery_failed(session, "no saved character");
            return;
        };
        state.rid = p.rid;
        let (account, slot) = (p.account, p.slot);
        self.hand_out(account, slot, &mut state);
        let Some(p) = self.players.get(&session) else {
            return;
        };
        let (mut key, arrival) = self.login_place(&state);
        if key.area.eq_ignore_ascii_case(&p.key.area) {
            key.instance = p.key.instance;
        }
        let is_dm = p.online.is_dm;
        self.out.push(Action::Unroute { session });
        let deadline = self.now + RECOVER_TIMEOUT;
        if let Some(p) = self.players.get_mut(&session) {
            p.node = None;
            p.queued.clear();
            p.phase = Phase::Recovering { deadline };
        }
        self.count(Count::Recovery);
        tracing::info!(session, instance = %key, "putting a player back from its last save");
        let dto = TransferDto {
            transfer_id: self.minter.mint(),
            generation: 0,
            session: Some(session),
            is_dm,
            area: key.area,
            instance: key.instance,
            arrival,
            state,
        };
        self.start_transfer(None, Box::new(dto), true, Trace::Current, chars);
    }

    /// A player could not be put back: disconnect it (code 3); it can log in at once.
    pub(super) fn recovery_failed(&mut self, session: SessionId, reason: &str) {
        if !self.players.contains_key(&session) {
            return;
        }
        tracing::warn!(
            session,
            reason,
            "could not put the player back; disconnecting"
        );
        self.close_client(
            session,
            close::SHUTDOWN,
            "your zone node was lost; log in again to continue from your last save",
        );
        self.release(session);
    }
}
