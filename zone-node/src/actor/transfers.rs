//! The node's transfer table: every SetArea handoff this node takes part in (as source,
//! destination or both) from its start to the source's decision, as a pure state machine.
//! Each event returns the [`Effect`]s the registry shell carries out (inputs for local
//! instances, messages for the gateway, session routes, counters, trace outcomes); nothing
//! here touches a clock, a socket, a lock or an actor.
//!
//! Ids: every transfer has one id in this table, the node-unique id the shell draws
//! ([`Registry::next_id`](super::Registry::next_id)); it is the `TransferId` the
//! destination instance sees and the `transfer_id` of the `Transfer` the gateway routes. A
//! transfer arriving from another node keeps the gateway's id beside it (`remote_in`) for
//! the answers.
//!
//! `C` is the transfer's trace context (the shell's `tracing::Span`), handed back with the
//! effects that belong to the transfer's trace.

use std::collections::HashMap;

use shared::internal::{Generation, InstanceKey, Msg, TransferDto};

use crate::sim::{PlayerKey, TransferId, TransferOut, ZoneInput};

/// Where a transfer comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransferSource {
    /// A local instance, with the sim's own id for it.
    Local {
        /// The source instance.
        key: InstanceKey,
        /// The source sim's id for the transfer.
        local: TransferId,
    },
    /// Another node (via the gateway), with the gateway's id for it.
    Remote {
        /// The gateway's id.
        their_id: u64,
    },
}

/// A transfer until the source's decision has been passed on.
#[derive(Debug, Clone)]
struct Pending<C> {
    source: TransferSource,
    dest: InstanceKey,
    player: Option<PlayerKey>,
    /// The destination acknowledged (holds the actor prepared).
    prepared: bool,
    /// Sent out through the gateway (even if the destination later turns out to be
    /// placed on this very node, the gateway carries the decision).
    via_gateway: bool,
    ctx: C,
}

/// A counter the shell adds one to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    /// A transfer between two local instances committed.
    Local,
    /// A transfer from another node committed here.
    Remote,
    /// A prepared arrival dropped without a decision.
    Expired,
    /// A message naming a transfer this node does not know.
    Refused,
}

/// What the shell does for an event, in order.
#[derive(Debug)]
pub enum Effect<C> {
    /// Give a local instance an input.
    Push(InstanceKey, ZoneInput),
    /// Send a message to the gateway, in the transfer's trace when `ctx` is given.
    Send {
        /// The message.
        msg: Msg,
        /// The trace it belongs to.
        ctx: Option<C>,
    },
    /// The session now lives at this instance (route its traffic there).
    Route {
        /// The session.
        session: u64,
        /// Its instance.
        to: InstanceKey,
    },
    /// Forget the session's route if it still points at `from`.
    Unroute {
        /// The session.
        session: u64,
        /// Where it was.
        from: InstanceKey,
    },
    /// Add one to a counter.
    Count(Count),
    /// The transfer's outcome, for its trace.
    Outcome(C, &'static str),
}

/// Why a transfer from another node was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InRefusal {
    /// The node is draining.
    Draining,
    /// The destination is not hosted here.
    UnknownInstance,
    /// It names another placement generation than the one hosted.
    StaleGeneration {
        /// Hosted.
        have: Generation,
    },
    /// The gateway's id is already pending here.
    Duplicate,
}

/// The transfer table (see the module docs).
#[derive(Debug, Clone)]
pub struct TransferTable<C> {
    pending: HashMap<u64, Pending<C>>,
    /// Transfers from other nodes: the gateway's id → ours.
    remote_in: HashMap<u64, u64>,
}

impl<C> Default for TransferTable<C> {
    fn default() -> Self {
        Self {
            pending: HashMap::new(),
            remote_in: HashMap::new(),
        }
    }
}

impl<C: Clone> TransferTable<C> {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Transfers pending.
    pub fn len(&self) -> usize {
        self.pending.len()
    }

    /// Whether none is pending.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// A local instance's `TransferOut` (phase one), under this node's `id`: to the
    /// destination instance when it is hosted here (`dest_local`), else to the gateway as
    /// a `Transfer`. Should that message not go out, tell [`Self::remote_answer`] so.
    pub fn start(
        &mut self,
        id: u64,
        source: InstanceKey,
        t: &TransferOut,
        dest_local: bool,
        ctx: C,
    ) -> Vec<Effect<C>> {
        let dest = InstanceKey {
            area: t.area.clone(),
            instance: t.instance,
        };
        self.pending.insert(
            id,
            Pending {
                source: TransferSource::Local {
                    key: source,
                    local: t.transfer_id,
                },
                dest: dest.clone(),
                player: t.player,
                prepared: false,
                via_gateway: !dest_local,
                ctx: ctx.clone(),
            },
        );
        if dest_local {
            return vec![Effect::Push(
                dest,
                ZoneInput::TransferIn {
                    transfer_id: TransferId(id),
                    player: t.player,
                    is_dm: t.is_dm,
                    state: Box::new(t.state.clone()),
                    arrival: t.arrival.clone(),
                },
            )];
        }
        let dto = TransferDto {
            transfer_id: id,
            generation: 0,
            session: t.player.map(|p| p.0),
            is_dm: t.is_dm,
            area: t.area.clone(),
            instance: t.instance,
            arrival: t.arrival.clone(),
            state: t.state.clone(),
        };
        vec![Effect::Send {
            msg: Msg::Transfer(Box::new(dto)),
            ctx: Some(ctx),
        }]
    }

    /// Whether a transfer from another node would be taken ([`Self::arrive`] checks the
    /// same).
    pub fn admit(
        &self,
        t: &TransferDto,
        hosted: Option<Generation>,
        draining: bool,
    ) -> Result<(), InRefusal> {
        if draining {
            return Err(InRefusal::Draining);
        }
        let Some(have) = hosted else {
            return Err(InRefusal::UnknownInstance);
        };
        if t.generation != 0 && t.generation != have {
            return Err(InRefusal::StaleGeneration { have });
        }
        if self.remote_in.contains_key(&t.transfer_id) {
            return Err(InRefusal::Duplicate);
        }
        Ok(())
    }

    /// A transfer from another node (via the gateway), phase one at a local instance
    /// hosted with generation `hosted` (`None`: not here), under this node's `id`.
    pub fn arrive(
        &mut self,
        id: u64,
        t: TransferDto,
        hosted: Option<Generation>,
        draining: bool,
        ctx: C,
    ) -> Result<Vec<Effect<C>>, InRefusal> {
        self.admit(&t, hosted, draining)?;
        let dest = InstanceKey {
            area: t.area.clone(),
            instance: t.instance,
        };
        let player = t.session.map(PlayerKey);
        self.pending.insert(
            id,
            Pending {
                source: TransferSource::Remote {
                    their_id: t.transfer_id,
                },
                dest: dest.clone(),
                player,
                prepared: false,
                via_gateway: true,
                ctx,
            },
        );
        self.remote_in.insert(t.transfer_id, id);
        Ok(vec![Effect::Push(
            dest,
            ZoneInput::TransferIn {
                transfer_id: TransferId(id),
                player,
                is_dm: t.is_dm,
                state: Box::new(t.state),
                arrival: t.arrival,
            },
        )])
    }

    /// A local destination holds the actor prepared: acknowledge to the source, once (a
    /// destination rebuilt after a panic prepares again). `generation` is the hosted
    /// generation of an instance.
    pub fn prepared(
        &mut self,
        id: u64,
        generation: impl Fn(&InstanceKey) -> Generation,
    ) -> Vec<Effect<C>> {
        let Some(p) = self.pending.get_mut(&id) else {
            return Vec::new();
        };
        if p.prepared {
            return Vec::new();
        }
        p.prepared = true;
        match &p.source {
            TransferSource::Local { key, local } => vec![Effect::Push(
                key.clone(),
                ZoneInput::TransferAck {
                    transfer_id: *local,
                },
            )],
            TransferSource::Remote { their_id } => vec![Effect::Send {
                msg: Msg::TransferAck {
                    transfer_id: *their_id,
                    generation: generation(&p.dest),
                },
                ctx: Some(p.ctx.clone()),
            }],
        }
    }

    /// A local destination refused the actor, or dropped a prepared one that was never
    /// decided: a source still waiting is told, so it restores the actor.
    pub fn refused(&mut self, id: u64, reason: String) -> Vec<Effect<C>> {
        let Some(p) = self.pending.remove(&id) else {
            return Vec::new();
        };
        if let TransferSource::Remote { their_id } = &p.source {
            self.remote_in.remove(their_id);
        }
        if p.prepared {
            return vec![
                Effect::Outcome(p.ctx, "expired"),
                Effect::Count(Count::Expired),
            ];
        }
        let tell = match p.source {
            TransferSource::Local { key, local } => Effect::Push(
                key,
                ZoneInput::TransferNack {
                    transfer_id: local,
                    reason,
                },
            ),
            TransferSource::Remote { their_id } => Effect::Send {
                msg: Msg::TransferNack {
                    transfer_id: their_id,
                    reason,
                },
                ctx: Some(p.ctx.clone()),
            },
        };
        vec![Effect::Outcome(p.ctx, "refused"), tell]
    }

    /// The source instance decided (phase two): commit after it let go of the actor, or
    /// abort when the ack came after its rollback. The route moves before the destination
    /// hears, so whatever it sends finds the session where it now lives.
    pub fn decided(
        &mut self,
        source: &InstanceKey,
        local: TransferId,
        commit: bool,
    ) -> Vec<Effect<C>> {
        let found = self.pending.iter().find_map(|(id, t)| match &t.source {
            TransferSource::Local { key, local: l } if key == source && *l == local => Some(*id),
            _ => None,
        });
        let Some((id, p)) = found.and_then(|id| self.pending.remove(&id).map(|p| (id, p))) else {
            return vec![Effect::Count(Count::Refused)];
        };
        let mut out = vec![Effect::Outcome(
            p.ctx.clone(),
            if commit { "committed" } else { "aborted" },
        )];
        match (!p.via_gateway, commit) {
            (true, true) => {
                out.push(Effect::Count(Count::Local));
                if let Some(player) = p.player {
                    out.push(Effect::Route {
                        session: player.0,
                        to: p.dest.clone(),
                    });
                    out.push(Effect::Send {
                        msg: Msg::PlayerMoved {
                            session: player.0,
                            key: p.dest.clone(),
                        },
                        ctx: None,
                    });
                }
                out.push(Effect::Push(
                    p.dest,
                    ZoneInput::TransferCommit {
                        transfer_id: TransferId(id),
                    },
                ));
            }
            (true, false) => out.push(Effect::Push(
                p.dest,
                ZoneInput::TransferAbort {
                    transfer_id: TransferId(id),
                },
            )),
            (false, true) => {
                // Gone through the gateway: forget the session here (a source rebuilt
                // after a panic must not restore the player). The commit tells the
                // gateway the session left; no `PlayerDetached`, which would read as a
                // logout when the destination is placed on this same node.
                if let Some(player) = p.player {
                    out.push(Effect::Unroute {
                        session: player.0,
                        from: source.clone(),
                    });
                }
                out.push(Effect::Send {
                    msg: Msg::TransferCommit { transfer_id: id },
                    ctx: Some(p.ctx),
                });
            }
            (false, false) => out.push(Effect::Send {
                msg: Msg::TransferAbort { transfer_id: id },
                ctx: Some(p.ctx),
            }),
        }
        out
    }

    /// Transfers out of `key` still waiting for an answer: `(sim id, player)`.
    pub fn pending_from(&self, key: &InstanceKey) -> Vec<(TransferId, Option<PlayerKey>)> {
        self.pending
            .values()
            .filter_map(|t| match &t.source {
                TransferSource::Local { key: k, local } if k == key => Some((*local, t.player)),
                _ => None,
            })
            .collect()
    }

    /// The instance `key` stopped: transfers into it can no longer arrive (a prepared copy
    /// went with it; one not prepared yet is refused, so its source restores the actor),
    /// and transfers out of it that its sim did not decide are aborted (its players were
    /// saved and removed with it).
    pub fn instance_stopped(&mut self, key: &InstanceKey) -> Vec<Effect<C>> {
        let mut ids: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, t)| t.dest == *key)
            .map(|(id, _)| *id)
            .collect();
        ids.sort_unstable();
        let mut out = Vec::new();
        for id in ids {
            out.extend(self.refused(id, "the destination instance stopped".into()));
        }
        for (local, _) in self.pending_from(key) {
            out.extend(self.decided(key, local, false));
        }
        out
    }

    /// The gateway's answer to a transfer this node sent to another node: an ack (the
    /// remote destination is prepared) goes to the source instance, which decides; a
    /// refusal restores the actor there. An ack for a transfer no longer known is aborted.
    pub fn remote_answer(&mut self, id: u64, result: Result<(), String>) -> Vec<Effect<C>> {
        let source = self.pending.get(&id).map(|p| p.source.clone());
        match (source, result) {
            (Some(TransferSource::Local { key, local }), Ok(())) => {
                if let Some(p) = self.pending.get_mut(&id) {
                    p.prepared = true;
                }
                vec![Effect::Push(
                    key,
                    ZoneInput::TransferAck { transfer_id: local },
                )]
            }
            (Some(TransferSource::Local { key, local }), Err(reason)) => {
                let mut out = Vec::new();
                if let Some(p) = self.pending.remove(&id) {
                    out.push(Effect::Outcome(p.ctx, "refused"));
                }
                out.push(Effect::Push(
                    key,
                    ZoneInput::TransferNack {
                        transfer_id: local,
                        reason,
                    },
                ));
                out
            }
            (_, Ok(())) => vec![
                Effect::Count(Count::Refused),
                Effect::Send {
                    msg: Msg::TransferAbort { transfer_id: id },
                    ctx: None,
                },
            ],
            (_, Err(_)) => vec![Effect::Count(Count::Refused)],
        }
    }

    /// The gateway passes on the source's decision for a transfer into this node.
    pub fn remote_decided(&mut self, gateway_id: u64, commit: bool) -> Vec<Effect<C>> {
        let Some(id) = self.remote_in.remove(&gateway_id) else {
            return vec![Effect::Count(Count::Refused)];
        };
        let Some(p) = self.pending.remove(&id) else {
            return vec![Effect::Count(Count::Refused)];
        };
        let mut out = vec![Effect::Outcome(
            p.ctx,
            if commit { "committed" } else { "aborted" },
        )];
        if commit {
            out.push(Effect::Count(Count::Remote));
            if let Some(player) = p.player {
                out.push(Effect::Route {
                    session: player.0,
                    to: p.dest.clone(),
                });
            }
            out.push(Effect::Push(
                p.dest,
                ZoneInput::TransferCommit {
                    transfer_id: TransferId(id),
                },
            ));
        } else {
            out.push(Effect::Push(
                p.dest,
                ZoneInput::TransferAbort {
                    transfer_id: TransferId(id),
                },
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use shared::internal::{ActorStateDto, ArrivalDto};

    use super::*;

    type Table = TransferTable<&'static str>;

    fn key(area: &str, instance: u16) -> InstanceKey {
        InstanceKey {
            area: area.into(),
            instance,
        }
    }

    fn out(to: &InstanceKey, local: u64, player: u64) -> TransferOut {
        TransferOut {
            transfer_id: TransferId(local),
            player: Some(PlayerKey(player)),
            is_dm: false,
            area: to.area.clone(),
            instance: to.instance,
            arrival: ArrivalDto::Saved,
            state: ActorStateDto::default(),
        }
    }

    fn dto(their_id: u64, to: &InstanceKey, generation: Generation) -> TransferDto {
        TransferDto {
            transfer_id: their_id,
            generation,
            session: Some(7),
            is_dm: false,
            area: to.area.clone(),
            instance: to.instance,
            arrival: ArrivalDto::Saved,
            state: ActorStateDto::default(),
        }
    }

    /// A compact picture of effects, for assertions.
    fn show(effects: &[Effect<&'static str>]) -> Vec<String> {
        effects
            .iter()
            .map(|e| match e {
                Effect::Push(k, i) => format!("push {}#{} {}", k.area, k.instance, input(i)),
                Effect::Send { msg, ctx } => format!("send {} {}", msg.name(), ctx.unwrap_or("-")),
                Effect::Route { session, to } => {
                    format!("route {session} {}#{}", to.area, to.instance)
                }
                Effect::Unroute { session, from } => {
                    format!("unroute {session} {}#{}", from.area, from.instance)
                }
                Effect::Count(c) => format!("count {c:?}"),
                Effect::Outcome(ctx, o) => format!("outcome {ctx} {o}"),
            })
            .collect()
    }

    fn input(i: &ZoneInput) -> String {
        match i {
            ZoneInput::TransferIn { transfer_id, .. } => format!("in {}", transfer_id.0),
            ZoneInput::TransferAck { transfer_id } => format!("ack {}", transfer_id.0),
            ZoneInput::TransferNack { transfer_id, .. } => format!("nack {}", transfer_id.0),
            ZoneInput::TransferCommit { transfer_id } => format!("commit {}", transfer_id.0),
            ZoneInput::TransferAbort { transfer_id } => format!("abort {}", transfer_id.0),
            _ => "other".into(),
        }
    }

    #[test]
    fn a_local_handoff_prepares_acks_commits_and_moves_the_route() {
        let (a, b) = (key("A", 0), key("B", 0));
        let mut t = Table::new();
        let e = t.start(10, a.clone(), &out(&b, 3, 7), true, "src");
        assert_eq!(show(&e), ["push B#0 in 10"]);
        assert_eq!(
            t.pending_from(&a),
            vec![(TransferId(3), Some(PlayerKey(7)))]
        );
        assert_eq!(show(&t.prepared(10, |_| 1)), ["push A#0 ack 3"]);
        assert!(t.prepared(10, |_| 1).is_empty(), "acknowledged once");
        assert_eq!(
            show(&t.decided(&a, TransferId(3), true)),
            [
                "outcome src committed",
                "count Local",
                "route 7 B#0",
                "send PlayerMoved -",
                "push B#0 commit 10"
            ]
        );
        assert!(t.is_empty());
        assert_eq!(show(&t.decided(&a, TransferId(3), true)), ["count Refused"]);
    }

    #[test]
    fn a_local_handoff_aborted_or_refused_goes_back_to_its_source() {
        let (a, b) = (key("A", 0), key("B", 0));
        let mut t = Table::new();
        t.start(10, a.clone(), &out(&b, 3, 7), true, "src");
        t.prepared(10, |_| 1);
        assert_eq!(
            show(&t.decided(&a, TransferId(3), false)),
            ["outcome src aborted", "push B#0 abort 10"]
        );
        t.start(11, a.clone(), &out(&b, 4, 7), true, "src");
        assert_eq!(
            show(&t.refused(11, "full".into())),
            ["outcome src refused", "push A#0 nack 4"]
        );
        // A prepared arrival dropped without a decision expires; nobody is told.
        t.start(12, a.clone(), &out(&b, 5, 7), true, "src");
        t.prepared(12, |_| 1);
        assert_eq!(
            show(&t.refused(12, "gone".into())),
            ["outcome src expired", "count Expired"]
        );
        assert!(t.is_empty());
    }

    #[test]
    fn a_handoff_to_another_node_goes_through_the_gateway() {
        let (a, b) = (key("A", 0), key("B", 1));
        let mut t = Table::new();
        let e = t.start(20, a.clone(), &out(&b, 3, 7), false, "src");
        assert_eq!(show(&e), ["send Transfer src"]);
        assert_eq!(show(&t.remote_answer(20, Ok(()))), ["push A#0 ack 3"]);
        assert_eq!(
            show(&t.decided(&a, TransferId(3), true)),
            [
                "outcome src committed",
                "unroute 7 A#0",
                "send TransferCommit src"
            ]
        );
        // Refused by the destination: the source restores the actor.
        t.start(21, a.clone(), &out(&b, 4, 7), false, "src");
        assert_eq!(
            show(&t.remote_answer(21, Err("no".into()))),
            ["outcome src refused", "push A#0 nack 4"]
        );
        // An ack for a transfer no longer known is aborted at once.
        assert_eq!(
            show(&t.remote_answer(99, Ok(()))),
            ["count Refused", "send TransferAbort -"]
        );
        assert_eq!(
            show(&t.remote_answer(98, Err("x".into()))),
            ["count Refused"]
        );
    }

    #[test]
    fn a_handoff_from_another_node_is_admitted_prepared_and_decided_by_the_gateway() {
        let b = key("B", 1);
        let mut t = Table::new();
        assert_eq!(
            t.admit(&dto(5, &b, 4), Some(4), true),
            Err(InRefusal::Draining)
        );
        assert_eq!(
            t.admit(&dto(5, &b, 4), None, false),
            Err(InRefusal::UnknownInstance)
        );
        assert_eq!(
            t.admit(&dto(5, &b, 3), Some(4), false),
            Err(InRefusal::StaleGeneration { have: 4 })
        );
        let e = t.arrive(30, dto(5, &b, 4), Some(4), false, "dst").unwrap();
        assert_eq!(show(&e), ["push B#1 in 30"]);
        assert!(matches!(
            t.arrive(31, dto(5, &b, 0), Some(4), false, "dst"),
            Err(InRefusal::Duplicate)
        ));
        let e = t.prepared(30, |k| if *k == b { 4 } else { 0 });
        assert_eq!(show(&e), ["send TransferAck dst"]);
        assert!(matches!(
            &e[0],
            Effect::Send {
                msg: Msg::TransferAck {
                    transfer_id: 5,
                    generation: 4
                },
                ..
            }
        ));
        assert_eq!(
            show(&t.remote_decided(5, true)),
            [
                "outcome dst committed",
                "count Remote",
                "route 7 B#1",
                "push B#1 commit 30"
            ]
        );
        assert_eq!(show(&t.remote_decided(5, true)), ["count Refused"]);
        // Aborted, and refused before it was prepared.
        t.arrive(32, dto(6, &b, 0), Some(4), false, "dst").unwrap();
        assert_eq!(
            show(&t.remote_decided(6, false)),
            ["outcome dst aborted", "push B#1 abort 32"]
        );
        t.arrive(33, dto(8, &b, 0), Some(4), false, "dst").unwrap();
        assert_eq!(
            show(&t.refused(33, "full".into())),
            ["outcome dst refused", "send TransferNack dst"]
        );
        assert!(t.is_empty());
        // The gateway's id is free again once the transfer ended.
        assert!(t.admit(&dto(8, &b, 0), Some(4), false).is_ok());
    }
}
