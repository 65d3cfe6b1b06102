//! A simulated zone node: the glue of `zone-node`'s link (`dispatch`), registry and zone
//! actor around the real transfer table and the real sims.

use shared::internal::{InstanceKey, InstanceLoad, Msg, SnapshotEntry, SnapshotGroup};
use zone_node::actor::convert;
use zone_node::actor::transfers::Effect;
use zone_node::sim::ZoneSim;
use zone_node::sim::events::{PlayerKey, Rejection, ZoneInput, ZoneOutput};
use zone_node::sim::state::ZoneConfig;

use super::{Dir, Instance, PERSIST_MS, Sim, Tags};

/// Ticks a stopping instance waits for its players to be saved.
const STOP_TICKS: u32 = 100;

impl Sim {
    /// Send from node `i` to the gateway: on the link, or queued until the next one.
    fn node_send(&mut self, i: usize, msg: Msg, tags: Tags) {
        let n = &mut self.nodes[i];
        match n.link {
            Some(serial) => {
                if let Some(id) = snapshot_id(&msg) {
                    n.unacked.insert(id, (msg.clone(), tags.clone()));
                }
                self.post(i, serial, Dir::ToGateway, msg, tags);
            }
            None => n.outbox.push((msg, tags)),
        }
    }

    /// After a registration: what waited for a link.
    pub(super) fn flush_outbox(&mut self, i: usize) {
        let out = std::mem::take(&mut self.nodes[i].outbox);
        for (m, t) in out {
            self.node_send(i, m, t);
        }
    }

    fn next_id(&mut self, i: usize) -> u64 {
        let n = &mut self.nodes[i];
        let id = n.next_id;
        n.next_id += 1;
        id
    }

    fn lineage_of(&self, i: usize, key: &InstanceKey, session: u64) -> Option<u64> {
        self.nodes[i].copies.get(&(key.clone(), session)).copied()
    }

    /// One gateway message at node `i` (`link.rs`'s `dispatch`).
    pub(super) fn node_msg(&mut self, i: usize, msg: Msg, tags: &Tags) {
        match msg {
            Msg::AssignInstance {
                key, generation, ..
            } => self.assign(i, key, generation),
            Msg::StopInstance { key, generation } => {
                if let Some(inst) = self.nodes[i].instances.get_mut(&key)
                    && generation >= inst.generation
                    && !inst.stopping
                {
                    inst.stopping = true;
                    inst.inbox.push(ZoneInput::Shutdown);
                }
            }
            Msg::AttachPlayer {
                session,
                key,
                generation,
                rid,
                is_dm,
                state,
                arrival,
            } => {
                let n = &mut self.nodes[i];
                let Some(inst) = n.instances.get_mut(&key) else {
                    return;
                };
                if generation != inst.generation || n.sessions.contains_key(&session) {
                    return;
                }
                n.sessions.insert(session, key.clone());
                if let Some((_, l)) = tags.iter().find(|(s, _)| *s == session) {
                    n.copies.insert((key, session), *l);
                }
                inst.inbox.push(ZoneInput::PlayerJoined {
                    player: PlayerKey(session),
                    rid,
                    is_dm,
                    state,
                    arrival,
                });
            }
            Msg::DetachPlayer { session } => {
                self.push_to_session(
                    i,
                    session,
                    ZoneInput::PlayerLeft {
                        player: PlayerKey(session),
                    },
                );
            }
            Msg::WarpPlayer {
                session,
                area,
                instance,
            } => {
                self.push_to_session(
                    i,
                    session,
                    ZoneInput::Warp {
                        player: PlayerKey(session),
                        area,
                        instance,
                    },
                );
            }
            Msg::SnapshotAck { snapshot_id } => {
                self.nodes[i].unacked.remove(&snapshot_id);
            }
            Msg::TransferIds { block } => {
                let n = &mut self.nodes[i];
                if n.minters.0 != block {
                    n.minters = (block, 1);
                }
            }
            Msg::Transfer(t) => {
                let id = t.transfer_id;
                let dest = InstanceKey {
                    area: t.area.clone(),
                    instance: t.instance,
                };
                let hosted = self.nodes[i].instances.get(&dest).map(|h| h.generation);
                if let Err(r) = self.nodes[i].table.admit(&t, hosted, false) {
                    self.node_send(
                        i,
                        Msg::TransferNack {
                            transfer_id: id,
                            reason: format!("{r:?}"),
                        },
                        Vec::new(),
                    );
                    return;
                }
                if let Some(s) = t.session
                    && let Some((_, l)) = tags.iter().find(|(x, _)| *x == s)
                {
                    self.nodes[i].in_tags.insert(id, *l);
                }
                match self.nodes[i].table.arrive(*t, hosted, false, ()) {
                    Ok(fx) => self.effects(i, fx),
                    Err(r) => self.node_send(
                        i,
                        Msg::TransferNack {
                            transfer_id: id,
                            reason: format!("{r:?}"),
                        },
                        Vec::new(),
                    ),
                }
            }
            Msg::TransferAck { transfer_id, .. } => {
                let fx = self.nodes[i].table.remote_answer(transfer_id, Ok(()));
                self.effects(i, fx);
            }
            Msg::TransferNack {
                transfer_id,
                reason,
            } => {
                let fx = self.nodes[i].table.remote_answer(transfer_id, Err(reason));
                self.effects(i, fx);
            }
            Msg::TransferCommit { transfer_id } => {
                let fx = self.nodes[i].table.remote_decided(transfer_id, true);
                self.effects(i, fx);
            }
            Msg::TransferAbort { transfer_id } => {
                let fx = self.nodes[i].table.remote_decided(transfer_id, false);
                self.effects(i, fx);
            }
            _ => {}
        }
    }

    fn push_to_session(&mut self, i: usize, session: u64, input: ZoneInput) {
        let n = &mut self.nodes[i];
        if let Some(key) = n.sessions.get(&session)
            && let Some(inst) = n.instances.get_mut(key)
        {
            inst.inbox.push(input);
        }
    }

    /// `Registry::assign`: create the instance (or adopt a newer generation) and report
    /// it ready.
    fn assign(&mut self, i: usize, key: InstanceKey, generation: u64) {
        let n = &mut self.nodes[i];
        if let Some(inst) = n.instances.get_mut(&key) {
            if inst.stopping {
                // A new instance once this one has stopped.
                if generation > inst.generation {
                    inst.then = Some(generation);
                }
            } else if generation >= inst.generation {
                inst.generation = generation;
            }
            return;
        }
        let Some(content) = self.contents.get(&key.area).cloned() else {
            return;
        };
        let (transfer_block, transfer_minter) = n.minters;
        n.minters.1 = n.minters.1.checked_add(1).unwrap_or(1);
        let cfg = ZoneConfig {
            instance: key.instance,
            transfer_block,
            transfer_minter,
            seed: generation ^ u64::from(key.instance),
            persist_every_ms: PERSIST_MS,
            ..ZoneConfig::default()
        };
        let sim = ZoneSim::new(cfg, content);
        n.instances.insert(
            key.clone(),
            Instance {
                generation,
                sim,
                inbox: Vec::new(),
                stopping: false,
                stop_ticks: 0,
                then: None,
            },
        );
        self.node_send(i, Msg::InstanceReady { key, generation }, Vec::new());
    }

    /// `Registry::give_up`: the watchdog gave instance `key` up. The node forgets it and
    /// its sessions (a stuck copy never runs again here: the real actor is fenced and sends
    /// nothing), ends its handoffs as a stopped instance does, and tells the gateway; a
    /// newer generation assigned while it was stopping starts now.
    pub(super) fn give_up(&mut self, i: usize, key: &InstanceKey) {
        let n = &mut self.nodes[i];
        let Some(inst) = n.instances.remove(key) else {
            return;
        };
        let sessions: Vec<u64> = n
            .sessions
            .iter()
            .filter(|(_, k)| *k == key)
            .map(|(s, _)| *s)
            .collect();
        n.sessions.retain(|_, k| k != key);
        let fx = n.table.instance_stopped(key);
        self.effects(i, fx);
        self.node_send(
            i,
            Msg::InstanceGivenUp {
                key: key.clone(),
                generation: inst.generation,
                sessions,
            },
            Vec::new(),
        );
        if let Some(g) = inst.then {
            self.assign(i, key.clone(), g);
        }
    }

    /// The transfer table's effects (`Registry::apply`).
    fn effects(&mut self, i: usize, fx: Vec<Effect<()>>) {
        for e in fx {
            match e {
                Effect::Push(key, input) => {
                    if let ZoneInput::TransferIn {
                        transfer_id,
                        player: Some(p),
                        ..
                    } = &input
                    {
                        let n = &mut self.nodes[i];
                        let tag = n
                            .in_tags
                            .get(transfer_id)
                            .or_else(|| n.out_tags.get(transfer_id))
                            .copied();
                        if let Some(l) = tag {
                            n.copies.insert((key.clone(), p.0), l);
                        }
                    }
                    if let Some(inst) = self.nodes[i].instances.get_mut(&key) {
                        inst.inbox.push(input);
                    }
                }
                Effect::Send { msg, .. } => {
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
                Effect::Route { session, to } => {
                    self.nodes[i].sessions.insert(session, to);
                }
                Effect::Unroute { session, from } => {
                    let n = &mut self.nodes[i];
                    if n.sessions.get(&session) == Some(&from) {
                        n.sessions.remove(&session);
                    }
                }
                Effect::Count(_) | Effect::Outcome(..) => {}
            }
        }
    }

    pub(super) fn heartbeat(&mut self, i: usize) {
        if self.nodes[i].link.is_none() {
            return;
        }
        let n = &self.nodes[i];
        let loads: Vec<InstanceLoad> = n
            .instances
            .keys()
            .map(|k| InstanceLoad {
                key: k.clone(),
                players: u32::try_from(n.sessions.values().filter(|v| *v == k).count())
                    .unwrap_or(u32::MAX),
                npcs: 0,
                tick_p99_us: 0,
                tick_age_ms: 0,
                stuck: false,
            })
            .collect();
        let msg = Msg::Heartbeat {
            instances: u32::try_from(n.instances.len()).unwrap_or(u32::MAX),
            players: u32::try_from(n.sessions.len()).unwrap_or(u32::MAX),
            overruns: 0,
            loads,
        };
        self.node_send(i, msg, Vec::new());
    }

    /// One tick of every instance of node `i` (`ZoneActor::step`), its outputs routed as
    /// the actor and the registry route them.
    pub(super) fn tick_node(&mut self, i: usize) {
        let keys: Vec<InstanceKey> = self.nodes[i].instances.keys().cloned().collect();
        let now = self.now;
        for key in keys {
            let n = &self.nodes[i];
            let occupied = n.sessions.values().any(|k| *k == key);
            let Some(inst) = self.nodes[i].instances.get_mut(&key) else {
                continue;
            };
            // An instance nobody is in, with nothing to do, is not ticked (its NPCs are
            // not what this simulation is about; the sim takes the time jump).
            let st = inst.sim.state();
            let idle = inst.inbox.is_empty()
                && !occupied
                && !inst.stopping
                && st.transfers.is_empty()
                && st.prepared.is_empty();
            if idle {
                continue;
            }
            let inputs = std::mem::take(&mut inst.inbox);
            let out = inst.sim.tick(now, inputs);
            let outputs: Vec<ZoneOutput> = out.outputs.clone();
            for o in outputs {
                self.zone_output(i, &key, o);
            }
            // As the actor counts its players: every session it hosts, a frozen one (a
            // transfer out in flight) included.
            let players = self.nodes[i]
                .sessions
                .values()
                .filter(|k| **k == key)
                .count();
            let Some(inst) = self.nodes[i].instances.get_mut(&key) else {
                continue;
            };
            if inst.stopping {
                inst.stop_ticks += 1;
                if players == 0 || inst.stop_ticks > STOP_TICKS {
                    let generation = inst.generation;
                    let then = inst.then;
                    let n = &mut self.nodes[i];
                    n.instances.remove(&key);
                    n.sessions.retain(|_, k| *k != key);
                    self.node_send(
                        i,
                        Msg::InstanceStopped {
                            key: key.clone(),
                            generation,
                        },
                        Vec::new(),
                    );
                    let fx = self.nodes[i].table.instance_stopped(&key);
                    self.effects(i, fx);
                    if let Some(g) = then {
                        self.assign(i, key.clone(), g);
                    }
                } else {
                    let sessions: Vec<u64> = self.nodes[i]
                        .sessions
                        .iter()
                        .filter(|(_, k)| **k == key)
                        .map(|(s, _)| *s)
                        .collect();
                    if let Some(inst) = self.nodes[i].instances.get_mut(&key) {
                        for s in sessions {
                            inst.inbox.push(ZoneInput::PlayerLeft {
                                player: PlayerKey(s),
                            });
                        }
                    }
                }
            }
        }
    }

    fn zone_output(&mut self, i: usize, key: &InstanceKey, o: ZoneOutput) {
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
        match o {
            ZoneOutput::TransferOut(t) => {
                if let Some(c) = t.player.and_then(|p| self.clients.get(&p.0)) {
                    let account = c.account;
                    self.store
                        .frozen_at
                        .entry(account)
                        .or_default()
                        .push(self.now);
                }
                let dest = InstanceKey {
                    area: t.area.clone(),
                    instance: t.instance,
                };
                let local = self.nodes[i].instances.contains_key(&dest);
                if let Some(p) = t.player
                    && let Some(l) = self.lineage_of(i, key, p.0)
                {
                    self.nodes[i].out_tags.insert(t.transfer_id, l);
                }
                let fx = self.nodes[i].table.start(key.clone(), &t, local, ());
                self.effects(i, fx);
            }
            ZoneOutput::Persist(s) => {
                let id = self.next_id(i);
                let tags = self
                    .lineage_of(i, key, s.player.0)
                    .map(|l| (s.player.0, l))
                    .into_iter()
                    .collect();
                let msg = Msg::Snapshot {
                    snapshot_id: id,
                    session: s.player.0,
                    reason: convert::reason_to_dto(s.reason),
                    state: Box::new(s.state),
                };
                self.node_send(i, msg, tags);
            }
            ZoneOutput::Checkpoint(c) => {
                let id = self.next_id(i);
                let generation = self.nodes[i].instances.get(key).map_or(0, |h| h.generation);
                let mut tags = Vec::new();
                let entries = c
                    .players
                    .into_iter()
                    .map(|s| {
                        if let Some(l) = self.lineage_of(i, key, s.player.0) {
                            tags.push((s.player.0, l));
                        }
                        SnapshotEntry {
                            session: s.player.0,
                            reason: convert::reason_to_dto(s.reason),
                            state: s.state,
                        }
                    })
                    .collect();
                let g = SnapshotGroup {
                    snapshot_id: id,
                    key: key.clone(),
                    generation,
                    entries,
                    ground: c.ground,
                };
                self.node_send(i, Msg::SnapshotGroup(Box::new(g)), tags);
            }
            ZoneOutput::Rejected {
                player: Some(player),
                reason: Rejection::BadJoin,
            } => {
                // As the zone actor: the node does not host it after all.
                self.detach_if_hosted(i, key, player.0);
            }
            ZoneOutput::PlayerRemoved { player } => {
                let n = &mut self.nodes[i];
                // The copy's lineage goes with it, unless another copy of the session is
                // prepared in the same instance (a recovery into the instance its old copy
                // is being detached from): that one keeps its own.
                let prepared_here = n.instances.get(key).is_some_and(|inst| {
                    inst.sim
                        .state()
                        .prepared
                        .values()
                        .any(|p| p.player == Some(player))
                });
                if !prepared_here {
                    n.copies.remove(&(key.clone(), player.0));
                }
                self.detach_if_hosted(i, key, player.0);
            }
            ZoneOutput::AckTransfer { transfer_id } => {
                let gens: Vec<(InstanceKey, u64)> = self.nodes[i]
                    .instances
                    .iter()
                    .map(|(k, h)| (k.clone(), h.generation))
                    .collect();
                let fx = self.nodes[i].table.prepared(transfer_id, |k| {
                    gens.iter().find(|(x, _)| x == k).map_or(0, |(_, g)| *g)
                });
                self.effects(i, fx);
            }
            ZoneOutput::NackTransfer {
                transfer_id,
                reason,
            } => {
                let fx = self.nodes[i].table.refused(transfer_id, reason);
                self.effects(i, fx);
            }
            ZoneOutput::PreparedExpired { transfer_id } => {
                let fx = self.nodes[i]
                    .table
                    .refused(transfer_id, "no commit came in time".into());
                self.effects(i, fx);
            }
            ZoneOutput::CommitTransfer { transfer_id } => {
                let fx = self.nodes[i].table.decided(key, transfer_id, true);
                self.effects(i, fx);
            }
            ZoneOutput::AbortTransfer { transfer_id } => {
                let fx = self.nodes[i].table.decided(key, transfer_id, false);
                self.effects(i, fx);
            }
            _ => {}
        }
    }

    /// `Registry::player_removed`: forget the session and tell the gateway, unless it has
    /// moved to another instance meanwhile.
    fn detach_if_hosted(&mut self, i: usize, key: &InstanceKey, session: u64) {
        let n = &mut self.nodes[i];
        if n.sessions.get(&session) == Some(key) {
            n.sessions.remove(&session);
            let key = Some(key.clone());
            self.node_send(i, Msg::PlayerDetached { session, key }, Vec::new());
        }
    }

    /// Whether the sim of node `i`'s instance `key` has `session` live: in the zone and
    /// not frozen by a transfer out (an arrival waiting for its client's area ack is live).
    pub(super) fn live_in(&self, i: usize, key: &InstanceKey, session: u64) -> bool {
        self.nodes[i].instances.get(key).is_some_and(|inst| {
            let st = inst.sim.state();
            st.by_player(PlayerKey(session))
                .and_then(|id| st.get(id))
                .is_some_and(|a| a.transfer.is_none())
        })
    }

    /// Frozen or prepared actors of node `i` (handoffs not finished in its sims).
    pub(super) fn in_handoff(&self, i: usize) -> usize {
        self.nodes[i]
            .instances
            .values()
            .map(|inst| inst.sim.state().transfers.len() + inst.sim.state().prepared.len())
            .sum()
    }
}

fn snapshot_id(msg: &Msg) -> Option<u64> {
    match msg {
        Msg::Snapshot { snapshot_id, .. } => Some(*snapshot_id),
        Msg::SnapshotGroup(g) => Some(g.snapshot_id),
        _ => None,
    }
}
