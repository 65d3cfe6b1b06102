//! A simulated zone node: the real node core (`zone_node::actor::node_core`: instances,
//! generations, stop rules, sessions, handoffs), the real snapshot retention and the real
//! handshake, with real `ZoneSim`s, glued as the registry, the link and the zone actor
//! glue them. What stays here is only that glue: moving messages, ticking the sims, and
//! the lineage tags the checks follow.

use shared::internal::handshake::{
    GatewayHandshake, NodeHandshake, NodeStep, Step, register_in_memory,
};
use shared::internal::{
    GroundItemDto, InstanceKey, InstanceLoad, Msg, PROTOCOL_VERSION, SessionId, SnapshotEntry,
    SnapshotGroup,
};
use zone_node::actor::convert;
use zone_node::actor::node_core::{Attach, NodeCore, NodeEffect, StopStep, save_reason, stop_step};
use zone_node::sim::ZoneSim;
use zone_node::sim::events::{PlayerKey, ZoneInput, ZoneOutput};
use zone_node::sim::state::ZoneConfig;

use super::{Dir, PERSIST_MS, Sim, Tags};

/// Instances a simulated node offers to host.
pub(super) const CAPACITY: u32 = 16;

/// The cluster secret of the simulated handshakes.
const SECRET: &[u8] = b"simulated cluster secret, long enough";

/// The node core of a simulated node: no trace contexts, and a [`Copy`] per hosted
/// instance.
pub(super) type Core = NodeCore<(), Copy>;

/// A hosted copy: the real sim, its inbox, and how long it has been stopping.
pub(super) struct Copy {
    pub(super) sim: ZoneSim,
    pub(super) inbox: Vec<ZoneInput>,
    stop_ticks: u32,
}

/// A node's core as its process starts: empty, its ids from 1.
pub(super) fn new_core() -> Core {
    NodeCore::new(CAPACITY, 1)
}

impl Sim {
    /// Send from node `i` to the gateway: on the link, or, while it is down, what the
    /// link does with it (`link.rs`'s `offline`): a save is kept for the next link, a
    /// transfer is refused at once (so it is never lost), the rest is dropped.
    fn node_send(&mut self, i: usize, msg: Msg, tags: Tags) {
        let now = self.now;
        let n = &mut self.nodes[i];
        match n.link {
            Some(serial) => {
                n.unacked.keep(&msg, (msg.clone(), tags.clone()), Some(now));
                self.post(i, serial, Dir::ToGateway, msg, tags);
            }
            None => match msg {
                Msg::Snapshot { .. } | Msg::SnapshotGroup(_) => {
                    n.unacked.keep(&msg, (msg.clone(), tags), None);
                }
                Msg::Transfer(t) => {
                    let fx = n
                        .core
                        .remote_answer(t.transfer_id, Err("the destination is unreachable".into()));
                    self.effects(i, fx);
                }
                _ => {}
            },
        }
    }

    /// Node `i` registers on link `serial`: both halves of the real handshake in memory,
    /// then the gateway hears the registration (`Event::NodeUp`) and the saves it never
    /// acknowledged follow.
    pub(super) fn register(&mut self, i: usize, serial: u64) -> Option<super::Registration> {
        let nonce = serial.to_le_bytes().repeat(4);
        let mut server_nonce = [0u8; 32];
        server_nonce.copy_from_slice(&nonce);
        let exporter = [i as u8; 32];
        let mut gw = GatewayHandshake::new(SECRET, server_nonce, [7; 32], &exporter, "gw", 1_000);
        let (mut hs, hello) = NodeHandshake::start(SECRET, [3; 32], &exporter, &self.nodes[i].id);
        let n = &self.nodes[i];
        let register = || Msg::Register {
            node_id: n.id.clone(),
            advertised_addr: format!("10.0.0.{i}:7000"),
            capacity: CAPACITY,
            protocol_version: PROTOCOL_VERSION,
            running: n.core.running(),
        };
        match register_in_memory(&mut gw, &mut hs, hello, register) {
            Ok((
                Step::Registered {
                    node_id,
                    advertised_addr,
                    capacity,
                    running,
                    ..
                },
                NodeStep::Registered { .. },
            )) => Some(super::Registration {
                node_id,
                advertised_addr,
                capacity,
                running,
            }),
            _ => None,
        }
    }

    /// After a registration: the saves the previous link never had acknowledged.
    pub(super) fn resend_unacked(&mut self, i: usize, serial: u64) {
        let now = self.now;
        let again: Vec<(Msg, Tags)> = self.nodes[i].unacked.resend_all(now).cloned().collect();
        for (m, t) in again {
            self.post(i, serial, Dir::ToGateway, m, t);
        }
    }

    fn lineage_of(&self, i: usize, key: &InstanceKey, session: u64) -> Option<u64> {
        self.nodes[i].copies.get(&(key.clone(), session)).copied()
    }

    /// One gateway message at node `i` (`link.rs`'s `dispatch`).
    pub(super) fn node_msg(&mut self, i: usize, msg: Msg, tags: &Tags) {
        let core = &mut self.nodes[i].core;
        let fx = match msg {
            Msg::AssignInstance {
                key,
                generation,
                ground,
                ..
            } => {
                self.assign(i, key, generation, ground);
                return;
            }
            Msg::StopInstance { key, generation } => core.stop(&key, generation),
            msg @ Msg::AttachPlayer { .. } => {
                let Some(a) = Attach::from_wire(msg) else {
                    return;
                };
                let (session, key) = (a.session, a.key.clone());
                let fx = core.attach(a);
                if fx.is_ok()
                    && let Some((_, l)) = tags.iter().find(|(s, _)| *s == session)
                {
                    self.nodes[i].copies.insert((key, session), *l);
                }
                fx
            }
            Msg::DetachPlayer { session } => {
                core.to_session(session, |player| ZoneInput::PlayerLeft { player })
            }
            Msg::WarpPlayer {
                session,
                area,
                instance,
            } => core.to_session(session, |player| ZoneInput::Warp {
                player,
                area,
                instance,
            }),
            Msg::SnapshotAck { snapshot_id } => {
                self.nodes[i].unacked.acked(snapshot_id);
                return;
            }
            Msg::TransferIds { block } => {
                core.set_transfer_block(block);
                return;
            }
            Msg::Transfer(t) => {
                let (id, session) = (t.transfer_id, t.session);
                match core.transfer_in(*t, || ()) {
                    Ok(fx) => {
                        if let Some(s) = session
                            && let Some((_, l)) = tags.iter().find(|(x, _)| *x == s)
                        {
                            self.nodes[i].in_tags.insert(id, *l);
                        }
                        Ok(fx)
                    }
                    Err(e) => {
                        let nack = Msg::TransferNack {
                            transfer_id: id,
                            reason: e.to_string(),
                        };
                        self.node_send(i, nack, Vec::new());
                        return;
                    }
                }
            }
            Msg::TransferAck { transfer_id, .. } => Ok(core.remote_answer(transfer_id, Ok(()))),
            Msg::TransferNack {
                transfer_id,
                reason,
            } => Ok(core.remote_answer(transfer_id, Err(reason))),
            Msg::TransferCommit { transfer_id } => Ok(core.remote_decided(transfer_id, true)),
            Msg::TransferAbort { transfer_id } => Ok(core.remote_decided(transfer_id, false)),
            _ => return,
        };
        // A refusal is answered with an `Error`, which the gateway only logs.
        if let Ok(fx) = fx {
            self.effects(i, fx);
        }
    }

    /// `Registry::assign_with_ground`: the core decides; a new copy is a fresh sim of the
    /// demo world's area.
    fn assign(&mut self, i: usize, key: InstanceKey, generation: u64, ground: Vec<GroundItemDto>) {
        let content = self.contents.get(&key.area).cloned();
        let made = self.nodes[i].core.assign(key, generation, ground, |c| {
            let Some(content) = content else {
                return Err(zone_node::actor::RegistryError::UnknownArea(
                    c.key.area.clone(),
                ));
            };
            let cfg = ZoneConfig {
                instance: c.key.instance,
                transfer_block: c.minter.0,
                transfer_minter: c.minter.1,
                seed: c.generation ^ u64::from(c.key.instance),
                persist_every_ms: PERSIST_MS,
                ..ZoneConfig::default()
            };
            let mut inbox = Vec::new();
            if !c.ground.is_empty() {
                inbox.push(ZoneInput::RestoreGround {
                    items: c.ground.clone(),
                });
            }
            Ok(Copy {
                sim: ZoneSim::new(cfg, content),
                inbox,
                stop_ticks: 0,
            })
        });
        if let Ok(fx) = made {
            self.effects(i, fx);
        }
    }

    /// `Registry::give_up`: the watchdog gave instance `key` up. The core forgets it and
    /// its sessions (a stuck copy never runs again here: the real actor is fenced and
    /// sends nothing), ends its handoffs as for a stopped copy, and tells the gateway.
    pub(super) fn give_up(&mut self, i: usize, key: &InstanceKey) {
        let core = &mut self.nodes[i].core;
        let generation = core.generation_of(key);
        if let Some((_, fx)) = core.give_up(key, generation) {
            self.effects(i, fx);
        }
    }

    /// The core's effects (`Registry::apply`).
    pub(super) fn effects(&mut self, i: usize, fx: Vec<NodeEffect<()>>) {
        for e in fx {
            match e {
                NodeEffect::Push(key, input) => {
                    if let ZoneInput::TransferIn {
                        transfer_id,
                        player: Some(p),
                        ..
                    } = &input
                    {
                        // The copy's lineage is its when the zone takes it
                        // (`AckTransfer`): a zone that holds the player already refuses a
                        // second copy, and the one it holds keeps its lineage (seed 62,565:
                        // a stale copy's warp into the instance its current copy was
                        // arriving in took over the tag).
                        let n = &mut self.nodes[i];
                        let tag = n
                            .in_tags
                            .get(transfer_id)
                            .or_else(|| n.out_tags.get(transfer_id))
                            .copied();
                        if let Some(l) = tag {
                            n.arriving.insert(*transfer_id, (p.0, l));
                        }
                    }
                    self.push(i, &key, input);
                }
                NodeEffect::Send { msg, .. } => {
                    let tags = match &msg {
                        Msg::Transfer(t) => t
                            .session
                            .and_then(|s| {
                                self.nodes[i].out_tags.get(&t.transfer_id).map(|l| (s, *l))
                            })
                            .into_iter()
                            .collect(),
                        _ => Vec::new(),
                    };
                    self.node_send(i, msg, tags);
                }
                // The zone actor's `Stop`: every player saved in one group, then gone.
                NodeEffect::Stop(key) => self.push(i, &key, ZoneInput::Shutdown),
                NodeEffect::Assign {
                    key,
                    generation,
                    ground,
                } => self.assign(i, key, generation, ground),
                NodeEffect::Count(_) | NodeEffect::Outcome(..) => {}
            }
        }
    }

    fn push(&mut self, i: usize, key: &InstanceKey, input: ZoneInput) {
        if let Some(h) = self.nodes[i].core.hosted_mut(key) {
            h.shell.inbox.push(input);
        }
    }

    pub(super) fn heartbeat(&mut self, i: usize) {
        if self.nodes[i].link.is_none() {
            return;
        }
        let core = &self.nodes[i].core;
        let loads: Vec<InstanceLoad> = core
            .instances()
            .map(|(k, _)| InstanceLoad {
                key: k.clone(),
                players: u32::try_from(core.sessions_of(k).len()).unwrap_or(u32::MAX),
                ..InstanceLoad::default()
            })
            .collect();
        let msg = Msg::Heartbeat {
            instances: u32::try_from(core.instance_count()).unwrap_or(u32::MAX),
            players: u32::try_from(core.session_count()).unwrap_or(u32::MAX),
            overruns: 0,
            loads,
        };
        self.node_send(i, msg, Vec::new());
    }

    /// One tick of every instance of node `i` (`ZoneActor::on_interval`), its outputs
    /// routed as the actor and the registry route them.
    pub(super) fn tick_node(&mut self, i: usize) {
        let keys: Vec<InstanceKey> = self.nodes[i]
            .core
            .instances()
            .map(|(k, _)| k.clone())
            .collect();
        let now = self.now;
        for key in keys {
            let core = &mut self.nodes[i].core;
            let occupied = !core.sessions_of(&key).is_empty();
            let Some(h) = core.hosted_mut(&key) else {
                continue;
            };
            let stopping = h.stopping;
            // An instance nobody is in, with nothing to do, is not ticked (its NPCs are
            // not what this simulation is about; the sim takes the time jump).
            let st = h.shell.sim.state();
            let idle = h.shell.inbox.is_empty()
                && !occupied
                && !stopping
                && st.transfers.is_empty()
                && st.prepared.is_empty();
            if idle {
                continue;
            }
            let inputs = std::mem::take(&mut h.shell.inbox);
            let out = h.shell.sim.tick(now, inputs);
            let outputs: Vec<ZoneOutput> = out.outputs.clone();
            for o in outputs {
                self.zone_output(i, &key, stopping, o);
            }
            if !stopping {
                continue;
            }
            // As the actor counts its players: every session it hosts, a frozen one (a
            // transfer out in flight) included.
            let core = &mut self.nodes[i].core;
            let sessions = core.sessions_of(&key);
            let Some(h) = core.hosted_mut(&key) else {
                continue;
            };
            h.shell.stop_ticks += 1;
            match stop_step(h.shell.stop_ticks, sessions.len()) {
                StopStep::Stopped => {
                    let copy = h.copy;
                    if let Some((_, fx)) = core.stopped(&key, copy) {
                        self.effects(i, fx);
                    }
                }
                StopStep::SaveAgain => {
                    for s in sessions {
                        h.shell.inbox.push(ZoneInput::PlayerLeft {
                            player: PlayerKey(s),
                        });
                    }
                }
            }
        }
    }

    fn zone_output(&mut self, i: usize, key: &InstanceKey, stopping: bool, o: ZoneOutput) {
        let id = &self.nodes[i].id;
        let line = match &o {
            ZoneOutput::TransferOut(t) => Some(format!(
                "{id} {key}: out #{} s{:?} -> {}#{}",
                t.transfer_id,
                t.player.map(|p| p.0),
                t.area,
                t.instance
            )),
            ZoneOutput::AckTransfer { transfer_id } => {
                Some(format!("{id} {key}: prepared #{transfer_id}"))
            }
            ZoneOutput::NackTransfer {
                transfer_id,
                reason,
            } => Some(format!("{id} {key}: refused #{transfer_id} ({reason})")),
            ZoneOutput::PreparedExpired { transfer_id } => {
                Some(format!("{id} {key}: expired #{transfer_id}"))
            }
            ZoneOutput::CommitTransfer { transfer_id } => {
                Some(format!("{id} {key}: commit #{transfer_id}"))
            }
            ZoneOutput::AbortTransfer { transfer_id } => {
                Some(format!("{id} {key}: abort #{transfer_id}"))
            }
            ZoneOutput::PlayerRemoved { player } => {
                Some(format!("{id} {key}: removed s{}", player.0))
            }
            ZoneOutput::Rejected { player, reason } => {
                Some(format!("{id} {key}: rejected {player:?} {reason:?}"))
            }
            _ => None,
        };
        if let Some(l) = line {
            self.log(|| l);
        }
        match &o {
            ZoneOutput::AckTransfer { transfer_id } => {
                if let Some((s, l)) = self.nodes[i].arriving.remove(transfer_id) {
                    self.nodes[i].copies.insert((key.clone(), s), l);
                    if let Some(c) = self.clients.get(&s) {
                        super::note_at(&mut self.store.prepared_at, c.account, self.now);
                    }
                }
            }
            ZoneOutput::NackTransfer { transfer_id, .. } => {
                self.nodes[i].arriving.remove(transfer_id);
            }
            ZoneOutput::TransferOut(t) => {
                if let Some(c) = t.player.and_then(|p| self.clients.get(&p.0)) {
                    super::note_at(&mut self.store.frozen_at, c.account, self.now);
                }
                if let Some(p) = t.player
                    && let Some(l) = self.lineage_of(i, key, p.0)
                {
                    self.nodes[i].out_tags.insert(t.transfer_id, l);
                }
            }
            ZoneOutput::Persist(s) => {
                let id = self.nodes[i].core.next_id();
                let tags = self
                    .lineage_of(i, key, s.player.0)
                    .map(|l| (s.player.0, l))
                    .into_iter()
                    .collect();
                let msg = Msg::Snapshot {
                    snapshot_id: id,
                    session: s.player.0,
                    reason: save_reason(stopping, convert::reason_to_dto(s.reason)),
                    state: Box::new(s.state.clone()),
                };
                self.node_send(i, msg, tags);
                return;
            }
            ZoneOutput::Checkpoint(c) => {
                let id = self.nodes[i].core.next_id();
                let generation = self.nodes[i].core.generation_of(key);
                let mut tags = Vec::new();
                let entries = c
                    .players
                    .iter()
                    .map(|s| {
                        if let Some(l) = self.lineage_of(i, key, s.player.0) {
                            tags.push((s.player.0, l));
                        }
                        SnapshotEntry {
                            session: s.player.0,
                            reason: save_reason(stopping, convert::reason_to_dto(s.reason)),
                            state: s.state.clone(),
                        }
                    })
                    .collect();
                let g = SnapshotGroup {
                    snapshot_id: id,
                    key: key.clone(),
                    generation,
                    entries,
                    ground: c.ground.clone(),
                };
                self.node_send(i, Msg::SnapshotGroup(Box::new(g)), tags);
                return;
            }
            ZoneOutput::PlayerRemoved { player } => {
                let n = &mut self.nodes[i];
                // The copy's lineage goes with it, unless another copy of the session is
                // prepared in the same instance (a recovery into the instance its old copy
                // is being detached from): that one keeps its own.
                let prepared_here = n.core.hosted(key).is_some_and(|h| {
                    h.shell
                        .sim
                        .state()
                        .prepared
                        .values()
                        .any(|p| p.player == Some(*player))
                });
                if !prepared_here {
                    n.copies.remove(&(key.clone(), player.0));
                }
            }
            _ => {}
        }
        let fx = self.nodes[i].core.zone_output(key, &o, |_| ());
        self.effects(i, fx);
    }

    /// Whether the sim of node `i`'s instance `key` has `session` live: in the zone and
    /// not frozen by a transfer out (an arrival waiting for its client's area ack is live).
    pub(super) fn live_in(&self, i: usize, key: &InstanceKey, session: SessionId) -> bool {
        self.nodes[i].core.hosted(key).is_some_and(|h| {
            let st = h.shell.sim.state();
            st.by_player(PlayerKey(session))
                .and_then(|id| st.get(id))
                .is_some_and(|a| a.transfer.is_none())
        })
    }

    /// Frozen or prepared actors of node `i` (handoffs not finished in its sims).
    pub(super) fn in_handoff(&self, i: usize) -> usize {
        self.nodes[i]
            .core
            .instances()
            .map(|(_, h)| h.shell.sim.state().transfers.len() + h.shell.sim.state().prepared.len())
            .sum()
    }
}
