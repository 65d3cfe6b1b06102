//! The node's transfer table: every SetArea handoff this node takes part in (as source,
//! destination or both) from its start to the source's decision, as a pure state machine.
//! Each event returns the [`Effect`]s the registry shell carries out (inputs for local
//! instances, messages for the gateway, session routes, counters, trace outcomes); nothing
//! here touches a clock, a socket, a lock or an actor.
//!
//! Ids: a transfer has one [`TransferId`] everywhere, the one its source zone minted (or
//! the gateway, for a player it puts back); this table, the gateway and both zones name it
//! by that id. The table keeps the node's two roles apart: what it sends (`outgoing`, by
//! a local source instance) and what it receives (`incoming`, into a local destination
//! instance). A handoff between two local instances is in both; one the gateway routes
//! back to this same node is too, and its messages (an ack or a decision) say which role
//! they are for.
//!
//! `C` is the transfer's trace context (the shell's `tracing::Span`), handed back with the
//! effects that belong to the transfer's trace.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use shared::internal::{Generation, InstanceKey, Msg, TransferDto};

use crate::sim::{PlayerKey, TransferId, TransferOut, ZoneInput};

/// A transfer out of a local instance, until its source decided.
#[derive(Debug, Clone)]
struct Outgoing<C> {
    /// The source instance.
    source: InstanceKey,
    dest: InstanceKey,
    player: Option<PlayerKey>,
    /// The destination acknowledged (holds the actor prepared).
    prepared: bool,
    /// Sent out through the gateway (even if the destination later turns out to be
    /// placed on this very node, the gateway carries the decision).
    via_gateway: bool,
    ctx: C,
}

/// A transfer into a local instance, until the decision reached it.
#[derive(Debug, Clone)]
struct Incoming<C> {
    dest: InstanceKey,
    player: Option<PlayerKey>,
    /// The arriving copy's fencing token.
    fence: u64,
    /// The destination instance holds the actor prepared (acknowledged once).
    prepared: bool,
    /// From a local instance directly (its `Outgoing` carries the decision); else from
    /// the gateway, which answers and decides.
    local: bool,
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
        /// The fencing token of the copy that arrived (`ActorStateDto::fence`).
        fence: u64,
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
    /// The transfer is already arriving here.
    Duplicate,
}

/// The transfer table (see the module docs).
#[derive(Debug, Clone)]
pub struct TransferTable<C> {
    outgoing: HashMap<TransferId, Outgoing<C>>,
    incoming: HashMap<TransferId, Incoming<C>>,
}

impl<C> Default for TransferTable<C> {
    fn default() -> Self {
        Self {
            outgoing: HashMap::new(),
            incoming: HashMap::new(),
        }
    }
}

impl<C: Clone> TransferTable<C> {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Transfers pending (each counted once, also when it is both out of and into this
    /// node).
    pub fn len(&self) -> usize {
        self.outgoing.len()
            + self
                .incoming
                .keys()
                .filter(|id| !self.outgoing.contains_key(id))
                .count()
    }

    /// Whether none is pending.
    pub fn is_empty(&self) -> bool {
        self.outgoing.is_empty() && self.incoming.is_empty()
    }

    /// A local instance's `TransferOut` (phase one), under the id its sim minted: to the
    /// destination instance when it is hosted here (`dest_local`), else to the gateway as
    /// a `Transfer`. Should that message not go out, tell [`Self::remote_answer`] so. A
    /// second `TransferOut` under an id still pending is dropped (counted).
    pub fn start(
        &mut self,
        source: InstanceKey,
        t: &TransferOut,
        dest_local: bool,
        ctx: C,
    ) -> Vec<Effect<C>> {
        let id = t.transfer_id;
        if self.outgoing.contains_key(&id) || (dest_local && self.incoming.contains_key(&id)) {
            return vec![Effect::Count(Count::Refused)];
        }
        let dest = InstanceKey {
            area: t.area.clone(),
            instance: t.instance,
        };
        self.outgoing.insert(
            id,
            Outgoing {
                source,
                dest: dest.clone(),
                player: t.player,
                prepared: false,
                via_gateway: !dest_local,
                ctx: ctx.clone(),
            },
        );
        if dest_local {
            self.incoming.insert(
                id,
                Incoming {
                    dest: dest.clone(),
                    player: t.player,
                    fence: t.state.fence,
                    prepared: false,
                    local: true,
                    ctx,
                },
            );
            return vec![Effect::Push(
                dest,
                ZoneInput::TransferIn {
                    transfer_id: id,
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
        if self.incoming.contains_key(&t.transfer_id) {
            return Err(InRefusal::Duplicate);
        }
        Ok(())
    }

    /// A transfer from another node (via the gateway), phase one at a local instance
    /// hosted with generation `hosted` (`None`: not here).
    pub fn arrive(
        &mut self,
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
        self.incoming.insert(
            t.transfer_id,
            Incoming {
                dest: dest.clone(),
                player,
                fence: t.state.fence,
                prepared: false,
                local: false,
                ctx,
            },
        );
        Ok(vec![Effect::Push(
            dest,
            ZoneInput::TransferIn {
                transfer_id: t.transfer_id,
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
        id: TransferId,
        generation: impl Fn(&InstanceKey) -> Generation,
    ) -> Vec<Effect<C>> {
        let Some(p) = self.incoming.get_mut(&id) else {
            return Vec::new();
        };
        if p.prepared {
            return Vec::new();
        }
        p.prepared = true;
        if !p.local {
            return vec![Effect::Send {
                msg: Msg::TransferAck {
                    transfer_id: id,
                    generation: generation(&p.dest),
                },
                ctx: Some(p.ctx.clone()),
            }];
        }
        let Some(o) = self.outgoing.get_mut(&id) else {
            return Vec::new();
        };
        o.prepared = true;
        vec![Effect::Push(
            o.source.clone(),
            ZoneInput::TransferAck { transfer_id: id },
        )]
    }

    /// A local destination refused the actor, or dropped a prepared one that was never
    /// decided: a source still waiting is told, so it restores the actor.
    pub fn refused(&mut self, id: TransferId, reason: String) -> Vec<Effect<C>> {
        let Some(p) = self.incoming.remove(&id) else {
            return Vec::new();
        };
        if p.prepared {
            // A local source still decides: its decision finds no arrival then (`decided`).
            return vec![
                Effect::Outcome(p.ctx, "expired"),
                Effect::Count(Count::Expired),
            ];
        }
        let tell = if p.local {
            let Some(o) = self.outgoing.remove(&id) else {
                return vec![Effect::Outcome(p.ctx, "refused")];
            };
            Effect::Push(
                o.source,
                ZoneInput::TransferNack {
                    transfer_id: id,
                    reason,
                },
            )
        } else {
            Effect::Send {
                msg: Msg::TransferNack {
                    transfer_id: id,
                    reason,
                },
                ctx: Some(p.ctx.clone()),
            }
        };
        vec![Effect::Outcome(p.ctx, "refused"), tell]
    }

    /// The source instance decided (phase two): commit after it let go of the actor, or
    /// abort when the ack came after its rollback. The route moves before the destination
    /// hears, so whatever it sends finds the session where it now lives.
    pub fn decided(
        &mut self,
        source: &InstanceKey,
        id: TransferId,
        commit: bool,
    ) -> Vec<Effect<C>> {
        let p = match self.outgoing.entry(id) {
            Entry::Occupied(e) if e.get().source == *source => e.remove(),
            _ => return vec![Effect::Count(Count::Refused)],
        };
        let mut out = vec![Effect::Outcome(
            p.ctx.clone(),
            if commit { "committed" } else { "aborted" },
        )];
        if p.via_gateway {
            if commit {
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
            } else {
                out.push(Effect::Send {
                    msg: Msg::TransferAbort { transfer_id: id },
                    ctx: Some(p.ctx),
                });
            }
            return out;
        }
        // Between two local instances: the decision goes straight to the destination.
        let Some(arrived) = self.incoming.remove(&id) else {
            // The destination dropped its prepared copy (it stopped, or the copy expired)
            // after the source heard it was prepared.
            if let (true, Some(player)) = (commit, p.player) {
                // The source let go too: no copy is left on this node. The gateway puts
                // the player back from its last save, as for any player a node let go.
                out = vec![
                    Effect::Outcome(p.ctx, "lost at the destination"),
                    Effect::Count(Count::Expired),
                    Effect::Unroute {
                        session: player.0,
                        from: source.clone(),
                    },
                    Effect::Send {
                        msg: Msg::PlayerDetached {
                            session: player.0,
                            key: Some(source.clone()),
                        },
                        ctx: None,
                    },
                ];
            }
            return out;
        };
        if commit {
            out.push(Effect::Count(Count::Local));
            if let Some(player) = p.player {
                out.push(Effect::Route {
                    session: player.0,
                    to: p.dest.clone(),
                    fence: arrived.fence,
                });
                out.push(Effect::Send {
                    msg: Msg::PlayerMoved {
                        session: player.0,
                        key: p.dest.clone(),
                    },
                    ctx: None,
                });
            }
        }
        out.push(Effect::Push(
            p.dest,
            if commit {
                ZoneInput::TransferCommit { transfer_id: id }
            } else {
                ZoneInput::TransferAbort { transfer_id: id }
            },
        ));
        out
    }

    /// The source instance of transfer `id`, when it is going out of this node.
    pub fn outgoing_source(&self, id: TransferId) -> Option<&InstanceKey> {
        self.outgoing.get(&id).map(|t| &t.source)
    }

    /// Transfers out of `key` still waiting for an answer: `(id, player)`.
    pub fn pending_from(&self, key: &InstanceKey) -> Vec<(TransferId, Option<PlayerKey>)> {
        let mut v: Vec<_> = self
            .outgoing
            .iter()
            .filter(|(_, t)| t.source == *key)
            .map(|(id, t)| (*id, t.player))
            .collect();
        v.sort_unstable_by_key(|(id, _)| *id);
        v
    }

    /// The instance `key` stopped: transfers into it can no longer arrive (a prepared copy
    /// went with it; one not prepared yet is refused, so its source restores the actor),
    /// and transfers out of it that its sim did not decide are aborted (its players were
    /// saved and removed with it).
    pub fn instance_stopped(&mut self, key: &InstanceKey) -> Vec<Effect<C>> {
        let mut ids: Vec<TransferId> = self
            .incoming
            .iter()
            .filter(|(_, t)| t.dest == *key)
            .map(|(id, _)| *id)
            .collect();
        ids.sort_unstable();
        let mut out = Vec::new();
        for id in ids {
            out.extend(self.refused(id, "the destination instance stopped".into()));
        }
        for (id, _) in self.pending_from(key) {
            out.extend(self.decided(key, id, false));
        }
        out
    }

    /// The link to the gateway ended: every transfer sent out through it that the
    /// destination had not yet acknowledged is refused, so its source restores the actor
    /// now instead of at its timeout. The answer went with the link and can never come:
    /// a gateway that takes over does not know the transfer, and the same gateway, when
    /// this node registers again still hosting the player, refuses it
    /// (`control::handoff`, `transfers_source_back`). An acknowledged one is left to its
    /// source's decision.
    pub fn gateway_lost(&mut self) -> Vec<Effect<C>> {
        let mut ids: Vec<TransferId> = self
            .outgoing
            .iter()
            .filter(|(_, t)| t.via_gateway && !t.prepared)
            .map(|(id, _)| *id)
            .collect();
        ids.sort_unstable();
        let mut out = Vec::new();
        for id in ids {
            out.extend(self.remote_answer(id, Err("the link to the gateway was lost".into())));
        }
        out
    }

    /// The gateway's answer to a transfer this node sent to another node: an ack (the
    /// remote destination is prepared) goes to the source instance, which decides; a
    /// refusal restores the actor there. An ack for a transfer no longer known is aborted.
    pub fn remote_answer(&mut self, id: TransferId, result: Result<(), String>) -> Vec<Effect<C>> {
        let source = self
            .outgoing
            .get(&id)
            .filter(|o| o.via_gateway)
            .map(|o| o.source.clone());
        match (source, result) {
            (Some(key), Ok(())) => {
                if let Some(o) = self.outgoing.get_mut(&id) {
                    o.prepared = true;
                }
                vec![Effect::Push(
                    key,
                    ZoneInput::TransferAck { transfer_id: id },
                )]
            }
            (Some(key), Err(reason)) => {
                let mut out = Vec::new();
                if let Some(o) = self.outgoing.remove(&id) {
                    out.push(Effect::Outcome(o.ctx, "refused"));
                }
                out.push(Effect::Push(
                    key,
                    ZoneInput::TransferNack {
                        transfer_id: id,
                        reason,
                    },
                ));
                out
            }
            (None, Ok(())) => vec![
                Effect::Count(Count::Refused),
                Effect::Send {
                    msg: Msg::TransferAbort { transfer_id: id },
                    ctx: None,
                },
            ],
            (None, Err(_)) => vec![Effect::Count(Count::Refused)],
        }
    }

    /// The gateway passes on the source's decision for a transfer into this node.
    pub fn remote_decided(&mut self, id: TransferId, commit: bool) -> Vec<Effect<C>> {
        let p = match self.incoming.entry(id) {
            Entry::Occupied(e) if !e.get().local => e.remove(),
            _ => return vec![Effect::Count(Count::Refused)],
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
                    fence: p.fence,
                });
            }
            out.push(Effect::Push(
                p.dest,
                ZoneInput::TransferCommit { transfer_id: id },
            ));
        } else {
            out.push(Effect::Push(
                p.dest,
                ZoneInput::TransferAbort { transfer_id: id },
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

    /// A transfer id as a source zone mints it.
    fn tx(serial: u32) -> TransferId {
        TransferId {
            block: 1,
            minter: 1,
            serial,
        }
    }

    fn key(area: &str, instance: u16) -> InstanceKey {
        InstanceKey {
            area: area.into(),
            instance,
        }
    }

    fn out(to: &InstanceKey, id: u32, player: u64) -> TransferOut {
        TransferOut {
            transfer_id: tx(id),
            player: Some(PlayerKey(player)),
            is_dm: false,
            area: to.area.clone(),
            instance: to.instance,
            arrival: ArrivalDto::Saved,
            state: ActorStateDto::default(),
        }
    }

    fn dto(id: u32, to: &InstanceKey, generation: Generation) -> TransferDto {
        TransferDto {
            transfer_id: tx(id),
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
                Effect::Send { msg, ctx } => {
                    let id = match msg {
                        Msg::Transfer(t) => Some(t.transfer_id),
                        Msg::TransferAck { transfer_id, .. }
                        | Msg::TransferNack { transfer_id, .. }
                        | Msg::TransferCommit { transfer_id }
                        | Msg::TransferAbort { transfer_id } => Some(*transfer_id),
                        _ => None,
                    };
                    let id = id.map_or_else(String::new, |i| format!(" {}", i.serial));
                    format!("send {}{id} {}", msg.name(), ctx.unwrap_or("-"))
                }
                Effect::Route { session, to, .. } => {
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
            ZoneInput::TransferIn { transfer_id, .. } => format!("in {}", transfer_id.serial),
            ZoneInput::TransferAck { transfer_id } => format!("ack {}", transfer_id.serial),
            ZoneInput::TransferNack { transfer_id, .. } => {
                format!("nack {}", transfer_id.serial)
            }
            ZoneInput::TransferCommit { transfer_id } => {
                format!("commit {}", transfer_id.serial)
            }
            ZoneInput::TransferAbort { transfer_id } => format!("abort {}", transfer_id.serial),
            _ => "other".into(),
        }
    }

    /// The source `a` commits transfer `id` (serial) sent through the gateway.
    fn committed_through_the_gateway(t: &mut Table, a: &InstanceKey, id: u32) {
        assert_eq!(
            show(&t.decided(a, tx(id), true)),
            [
                "outcome src committed",
                "unroute 7 A#0",
                format!("send TransferCommit {id} src").as_str()
            ]
        );
    }

    #[test]
    fn a_local_handoff_prepares_acks_commits_and_moves_the_route() {
        let (a, b) = (key("A", 0), key("B", 0));
        let mut t = Table::new();
        let e = t.start(a.clone(), &out(&b, 3, 7), true, "src");
        assert_eq!(
            show(&e),
            ["push B#0 in 3"],
            "the destination sees the source's id"
        );
        assert_eq!(t.pending_from(&a), vec![(tx(3), Some(PlayerKey(7)))]);
        assert_eq!(t.len(), 1, "one transfer, in both roles");
        assert_eq!(show(&t.prepared(tx(3), |_| 1)), ["push A#0 ack 3"]);
        assert!(t.prepared(tx(3), |_| 1).is_empty(), "acknowledged once");
        assert_eq!(
            show(&t.decided(&a, tx(3), true)),
            [
                "outcome src committed",
                "count Local",
                "route 7 B#0",
                "send PlayerMoved -",
                "push B#0 commit 3"
            ]
        );
        assert!(t.is_empty());
        assert_eq!(show(&t.decided(&a, tx(3), true)), ["count Refused"]);
    }

    #[test]
    fn a_local_handoff_aborted_or_refused_goes_back_to_its_source() {
        let (a, b) = (key("A", 0), key("B", 0));
        let mut t = Table::new();
        t.start(a.clone(), &out(&b, 3, 7), true, "src");
        t.prepared(tx(3), |_| 1);
        assert_eq!(
            show(&t.decided(&a, tx(3), false)),
            ["outcome src aborted", "push B#0 abort 3"]
        );
        t.start(a.clone(), &out(&b, 4, 7), true, "src");
        assert_eq!(
            show(&t.refused(tx(4), "full".into())),
            ["outcome src refused", "push A#0 nack 4"]
        );
        // A prepared arrival dropped without a decision expires. A source that then
        // aborts restores the actor itself; one that commits let go of the only copy
        // left, so the gateway is told the player left (it puts it back from its save).
        t.start(a.clone(), &out(&b, 5, 7), true, "src");
        t.prepared(tx(5), |_| 1);
        assert_eq!(
            show(&t.refused(tx(5), "gone".into())),
            ["outcome src expired", "count Expired"]
        );
        assert_eq!(show(&t.decided(&a, tx(5), false)), ["outcome src aborted"]);
        t.start(a.clone(), &out(&b, 6, 7), true, "src");
        t.prepared(tx(6), |_| 1);
        t.instance_stopped(&b);
        let e = t.decided(&a, tx(6), true);
        assert_eq!(
            show(&e),
            [
                "outcome src lost at the destination",
                "count Expired",
                "unroute 7 A#0",
                "send PlayerDetached -"
            ]
        );
        assert!(matches!(
            &e[3],
            Effect::Send { msg: Msg::PlayerDetached { session: 7, key: Some(k) }, .. } if *k == a
        ));
        assert!(t.is_empty());
        // Only the source instance decides its transfer.
        t.start(a.clone(), &out(&b, 8, 7), true, "src");
        assert_eq!(show(&t.decided(&b, tx(8), true)), ["count Refused"]);
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn a_handoff_to_another_node_goes_through_the_gateway_under_its_own_id() {
        let (a, b) = (key("A", 0), key("B", 1));
        let mut t = Table::new();
        let e = t.start(a.clone(), &out(&b, 3, 7), false, "src");
        assert_eq!(show(&e), ["send Transfer 3 src"]);
        assert_eq!(show(&t.remote_answer(tx(3), Ok(()))), ["push A#0 ack 3"]);
        committed_through_the_gateway(&mut t, &a, 3);
        // Refused by the destination: the source restores the actor.
        t.start(a.clone(), &out(&b, 4, 7), false, "src");
        assert_eq!(
            show(&t.remote_answer(tx(4), Err("no".into()))),
            ["outcome src refused", "push A#0 nack 4"]
        );
        // An ack for a transfer no longer known is aborted at once.
        assert_eq!(
            show(&t.remote_answer(tx(99), Ok(()))),
            ["count Refused", "send TransferAbort 99 -"]
        );
        assert_eq!(
            show(&t.remote_answer(tx(98), Err("x".into()))),
            ["count Refused"]
        );
    }

    #[test]
    fn a_lost_gateway_link_gives_up_the_handoffs_it_had_not_answered() {
        let (a, b, c) = (key("A", 0), key("B", 1), key("C", 0));
        let mut t = Table::new();
        // Two sent through the gateway, one of them acknowledged; one to a local instance.
        t.start(a.clone(), &out(&b, 3, 8), false, "src");
        t.start(a.clone(), &out(&b, 4, 7), false, "src");
        assert_eq!(show(&t.remote_answer(tx(4), Ok(()))), ["push A#0 ack 4"]);
        t.start(a.clone(), &out(&c, 5, 9), true, "src");
        assert_eq!(
            show(&t.gateway_lost()),
            ["outcome src refused", "push A#0 nack 3"],
            "only the unanswered one through the gateway"
        );
        // Its answer, should it come after all, finds nothing and aborts it.
        assert_eq!(
            show(&t.remote_answer(tx(3), Ok(()))),
            ["count Refused", "send TransferAbort 3 -"]
        );
        // The acknowledged one is still its source's to decide.
        committed_through_the_gateway(&mut t, &a, 4);
        assert!(t.gateway_lost().is_empty());
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
        let e = t.arrive(dto(5, &b, 4), Some(4), false, "dst").unwrap();
        assert_eq!(show(&e), ["push B#1 in 5"]);
        assert!(matches!(
            t.arrive(dto(5, &b, 0), Some(4), false, "dst"),
            Err(InRefusal::Duplicate)
        ));
        let e = t.prepared(tx(5), |k| if *k == b { 4 } else { 0 });
        assert_eq!(show(&e), ["send TransferAck 5 dst"]);
        assert!(matches!(
            &e[0],
            Effect::Send {
                msg: Msg::TransferAck { generation: 4, .. },
                ..
            }
        ));
        assert_eq!(
            show(&t.remote_decided(tx(5), true)),
            [
                "outcome dst committed",
                "count Remote",
                "route 7 B#1",
                "push B#1 commit 5"
            ]
        );
        assert_eq!(show(&t.remote_decided(tx(5), true)), ["count Refused"]);
        // Aborted, and refused before it was prepared.
        t.arrive(dto(6, &b, 0), Some(4), false, "dst").unwrap();
        assert_eq!(
            show(&t.remote_decided(tx(6), false)),
            ["outcome dst aborted", "push B#1 abort 6"]
        );
        t.arrive(dto(8, &b, 0), Some(4), false, "dst").unwrap();
        assert_eq!(
            show(&t.refused(tx(8), "full".into())),
            ["outcome dst refused", "send TransferNack 8 dst"]
        );
        assert!(t.is_empty());
        // The id is free again once the transfer ended: the gateway may send it again.
        assert!(t.admit(&dto(8, &b, 0), Some(4), false).is_ok());
    }

    #[test]
    fn a_handoff_the_gateway_routes_back_to_this_node_keeps_both_roles_apart() {
        // The destination was not here when the source froze the actor; by the time the
        // gateway forwards it, it is placed here.
        let (a, b) = (key("A", 0), key("B", 1));
        let mut t = Table::new();
        assert_eq!(
            show(&t.start(a.clone(), &out(&b, 3, 7), false, "src")),
            ["send Transfer 3 src"]
        );
        let mut d = dto(3, &b, 0);
        d.session = Some(7);
        assert_eq!(
            show(&t.arrive(d, Some(2), false, "dst").unwrap()),
            ["push B#1 in 3"]
        );
        assert_eq!(t.len(), 1);
        // The destination role answers the gateway, the source role hears the gateway.
        assert_eq!(show(&t.prepared(tx(3), |_| 2)), ["send TransferAck 3 dst"]);
        assert_eq!(show(&t.remote_answer(tx(3), Ok(()))), ["push A#0 ack 3"]);
        committed_through_the_gateway(&mut t, &a, 3);
        assert_eq!(t.len(), 1, "the arrival waits for the gateway's commit");
        assert_eq!(
            show(&t.remote_decided(tx(3), true)),
            [
                "outcome dst committed",
                "count Remote",
                "route 7 B#1",
                "push B#1 commit 3"
            ]
        );
        assert!(t.is_empty());
    }

    #[test]
    fn a_stopped_instance_refuses_what_comes_in_and_aborts_what_it_sent() {
        let (a, b, c) = (key("A", 0), key("B", 0), key("C", 2));
        let mut t = Table::new();
        t.start(a.clone(), &out(&b, 3, 7), false, "src");
        t.arrive(dto(4, &a, 0), Some(1), false, "dst").unwrap();
        t.start(c.clone(), &out(&b, 5, 8), false, "other");
        assert_eq!(
            show(&t.instance_stopped(&a)),
            [
                "outcome dst refused",
                "send TransferNack 4 dst",
                "outcome src aborted",
                "send TransferAbort 3 src"
            ]
        );
        assert_eq!(t.pending_from(&c), vec![(tx(5), Some(PlayerKey(8)))]);
    }
}
