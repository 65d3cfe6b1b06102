//! The placement directory: which zone node owns each AreaInstance, with fencing
//! generations. Pure and deterministic (time is passed in); the hub applies its
//! [`Action`]s.
//!
//! Rules (distributed-anchors.md §1, issue 5):
//! * every (re)assignment gets a new, strictly larger [`Generation`]; a node acting on an older
//!   one is refused by the node itself (`AttachPlayer`, `StopInstance` carry it) and by the
//!   gateway (`InstanceReady`, `InstanceStopped`);
//! * instance 0 of every area is wanted at all times and placed as soon as a node can take it;
//!   other instances are placed on demand ([`Directory::ensure`]);
//! * a placement goes to the least loaded live node (instances / capacity, then players, then
//!   id), so a node that joins later receives new instances first;
//! * a node that disconnects keeps its instances for `node_timeout` (it may be reconnecting and
//!   will report what it still runs); one that stays silent longer is removed and its instances
//!   are re-placed with new generations;
//! * after a gateway restart the directory is rebuilt from what the nodes report on
//!   (re-)registration; a reported instance that conflicts with a newer placement is stopped.

use std::collections::{BTreeMap, BTreeSet};

use shared::internal::{Generation, InstanceKey, RunningInstance, SessionId};

/// A node's id (from its registration).
pub type NodeId = String;

/// Something the hub must do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send `AssignInstance` to `node`.
    Assign {
        /// Target node.
        node: NodeId,
        /// Instance.
        key: InstanceKey,
        /// New generation.
        generation: Generation,
    },
    /// Send `StopInstance` to `node` (a stale copy).
    Stop {
        /// Target node.
        node: NodeId,
        /// Instance.
        key: InstanceKey,
        /// The stale generation.
        generation: Generation,
    },
    /// The instance's previous owner is gone; its players must be restored elsewhere.
    Lost {
        /// Instance.
        key: InstanceKey,
        /// The node that had it.
        node: NodeId,
    },
    /// A node reported a session nobody owns here (after a gateway restart): detach it so
    /// the node saves and drops it.
    DetachOrphan {
        /// Node.
        node: NodeId,
        /// The instance it is in there.
        key: InstanceKey,
        /// Session.
        session: SessionId,
    },
}

/// A registered node.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Id.
    pub id: NodeId,
    /// Address other nodes reach it at.
    pub addr: String,
    /// Instances it accepts.
    pub capacity: u32,
    /// The connection serial of its current registration.
    pub conn: u64,
    /// Whether that connection is up.
    pub connected: bool,
    /// Draining: takes nothing new.
    pub draining: bool,
    /// Last registration or heartbeat (ms).
    pub last_seen_ms: u64,
    /// Players, from the last heartbeat.
    pub players: u32,
    /// Tick overruns reported so far.
    pub overruns: u64,
}

/// Where an instance lives.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Placement {
    /// Owner.
    pub node: NodeId,
    /// Generation of this assignment.
    pub generation: Generation,
    /// The node reported `InstanceReady` (or listed it on registration).
    pub ready: bool,
    /// Players, from the node's last report.
    pub players: u32,
    /// NPCs (non-player actors), from the node's last report.
    pub npcs: u32,
    /// Tick duration p99 (µs), from the node's last report.
    pub tick_p99_us: u32,
    /// Tick duration p50 (µs), from the node's last report.
    pub tick_p50_us: u32,
    /// Handoffs out begun, failed, and errors (script errors, panics), since the copy
    /// started: from the node's last report.
    pub handoffs: u64,
    /// See [`Placement::handoffs`].
    pub handoffs_failed: u64,
    /// See [`Placement::handoffs`].
    pub errors: u64,
    /// Time since the instance last completed a tick (ms), from the node's last report.
    pub tick_age_ms: u64,
    /// The node's watchdog holds it stuck (last report): no new player is sent to it, and
    /// nothing new is placed on its node.
    pub stuck: bool,
}

/// The directory.
#[derive(Debug, Clone, Default)]
pub struct Directory {
    nodes: BTreeMap<NodeId, Node>,
    placements: BTreeMap<InstanceKey, Placement>,
    wanted: BTreeSet<InstanceKey>,
    next_generation: Generation,
    /// The first generation this directory issued: a running instance at this generation
    /// or later that has no placement was withdrawn by this gateway (its node was given
    /// up, or it was stopped), so it is stale, not something to adopt.
    first_generation: Generation,
    /// While set nothing new is placed: after a gateway restart the nodes get a heartbeat
    /// timeout to report what they still run, so the directory is rebuilt as it was instead
    /// of racing the first node to register (see [`Directory::hold`]).
    holding: bool,
}

impl Directory {
    /// A directory that wants instance 0 of each of `areas`. `generation_base` should grow
    /// across gateway restarts (the wall clock in ms does), so a restarted gateway never
    /// reuses a generation.
    pub fn new(areas: impl IntoIterator<Item = String>, generation_base: Generation) -> Self {
        Self {
            wanted: areas
                .into_iter()
                .map(|area| InstanceKey { area, instance: 0 })
                .collect(),
            next_generation: generation_base.max(1),
            first_generation: generation_base.max(1),
            ..Self::default()
        }
    }

    /// The nodes, by id.
    pub fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.nodes.values()
    }

    /// One node.
    pub fn node(&self, id: &str) -> Option<&Node> {
        self.nodes.get(id)
    }

    /// Every placement.
    pub fn placements(&self) -> impl Iterator<Item = (&InstanceKey, &Placement)> {
        self.placements.iter()
    }

    /// The placement of `key`.
    pub fn placement(&self, key: &InstanceKey) -> Option<&Placement> {
        self.placements.get(key)
    }

    /// Wanted instances that have no placement (no node can take them).
    pub fn unplaced(&self) -> Vec<InstanceKey> {
        self.wanted
            .iter()
            .filter(|k| !self.placements.contains_key(*k))
            .cloned()
            .collect()
    }

    /// Instances placed on `node`.
    pub fn instances_of(&self, node: &str) -> Vec<InstanceKey> {
        self.placements
            .iter()
            .filter(|(_, p)| p.node == node)
            .map(|(k, _)| k.clone())
            .collect()
    }

    fn bump(&mut self) -> Generation {
        let g = self.next_generation;
        self.next_generation = self.next_generation.saturating_add(1);
        g
    }

    fn load(&self, node: &Node) -> (u64, u32, NodeId) {
        let n = u64::try_from(self.instances_of(&node.id).len()).unwrap_or(u64::MAX);
        // instances / capacity as a fixed-point ratio, then players, then id (deterministic).
        let ratio = n.saturating_mul(1_000_000) / u64::from(node.capacity.max(1));
        (ratio, node.players, node.id.clone())
    }

    /// Whether `id` hosts an instance its watchdog holds stuck (it is not ready: nothing
    /// new is placed on it while another node can take it).
    pub fn has_stuck(&self, id: &str) -> bool {
        self.placements.values().any(|p| p.node == id && p.stuck)
    }

    /// The least loaded node that can take one more instance, a node with a stuck
    /// instance only when no other can (it places the instance on a thread of its own
    /// that is not stuck; a single node, `--standalone`, must be able to take back what
    /// its watchdog gave up).
    fn pick(&self) -> Option<NodeId> {
        self.nodes
            .values()
            .filter(|n| n.connected && !n.draining)
            .filter(|n| {
                u32::try_from(self.instances_of(&n.id).len()).unwrap_or(u32::MAX) < n.capacity
            })
            .min_by_key(|n| (self.has_stuck(&n.id), self.load(n)))
            .map(|n| n.id.clone())
    }

    fn assign(&mut self, key: InstanceKey) -> Option<Action> {
        let node = self.pick()?;
        let generation = self.bump();
        self.placements.insert(
            key.clone(),
            Placement {
                node: node.clone(),
                generation,
                ready: false,
                ..Placement::default()
            },
        );
        Some(Action::Assign {
            node,
            key,
            generation,
        })
    }

    /// Place nothing new until [`Self::release`]: instances the nodes report on
    /// registration are taken as they are, nothing else is assigned. The gateway holds for
    /// `node_timeout` after it starts (a restarted gateway must not move instances that a
    /// node which has not re-registered yet still runs).
    pub fn hold(&mut self) {
        self.holding = true;
    }

    /// Whether placement is held.
    pub fn is_holding(&self) -> bool {
        self.holding
    }

    /// End the hold: place every wanted instance nobody reported.
    pub fn release(&mut self) -> Vec<Action> {
        self.holding = false;
        self.place_wanted()
    }

    /// Place every wanted instance that has no placement.
    pub fn place_wanted(&mut self) -> Vec<Action> {
        if self.holding {
            return Vec::new();
        }
        let mut out = Vec::new();
        for key in self.unplaced() {
            match self.assign(key) {
                Some(a) => out.push(a),
                None => break,
            }
        }
        out
    }

    /// Make sure `key` is placed (on-demand instances, `/warp area,inst`); returns the
    /// assignment to send when it was not. `None` with no placement means no node can take it.
    pub fn ensure(&mut self, key: &InstanceKey) -> Option<Action> {
        if self.placements.contains_key(key) || self.holding {
            return None;
        }
        self.assign(key.clone())
    }

    /// Whether [`Directory::register`] keeps the copy `r` node `id` reports (the others
    /// are stale: stopped, their players orphans). A gateway that took over adopts a kept
    /// player only in a copy that stays (found by the simulator: one adopted in a copy
    /// placed elsewhere since was stopped under him).
    pub fn would_keep(&self, id: &str, r: &RunningInstance) -> bool {
        match self.placements.get(&r.key) {
            // Ours: kept when the generation matches.
            Some(p) if p.node == id => p.generation == r.generation,
            // Placed elsewhere since: stale, unless the placement there was adopted from
            // another node after a restart and this copy is newer (the newest wins).
            Some(p) => r.generation > p.generation && p.generation < self.first_generation,
            // Withdrawn by this gateway (its node was given up, or it was stopped): stale.
            // Older than this gateway (it restarted): adopted.
            None => r.generation < self.first_generation,
        }
    }

    /// A node (re-)registered on connection `conn` with what it still runs. `known` says
    /// whether a session is alive at this gateway.
    #[allow(clippy::too_many_arguments)]
    pub fn register(
        &mut self,
        now_ms: u64,
        id: &str,
        addr: &str,
        capacity: u32,
        conn: u64,
        running: &[RunningInstance],
        known: &dyn Fn(SessionId) -> bool,
    ) -> Vec<Action> {
        let mut out = Vec::new();
        self.nodes.insert(
            id.to_owned(),
            Node {
                id: id.to_owned(),
                addr: addr.to_owned(),
                capacity: capacity.max(1),
                conn,
                connected: true,
                draining: false,
                last_seen_ms: now_ms,
                players: 0,
                overruns: 0,
            },
        );
        let reported: BTreeSet<&InstanceKey> = running.iter().map(|r| &r.key).collect();
        // Instances we placed there that it no longer runs were lost (it restarted).
        for key in self.instances_of(id) {
            if !reported.contains(&key) {
                self.placements.remove(&key);
                out.push(Action::Lost {
                    key,
                    node: id.to_owned(),
                });
            }
        }
        for r in running {
            self.next_generation = self.next_generation.max(r.generation.saturating_add(1));
            let keep = self.would_keep(id, r);
            if keep {
                match self.placements.get(&r.key).cloned() {
                    // Ours, at its generation.
                    Some(p) if p.node == id => {}
                    // Adopted from another node after a restart, but this copy is newer:
                    // the newest generation wins, the other copy goes.
                    Some(p) => {
                        out.push(Action::Lost {
                            key: r.key.clone(),
                            node: p.node.clone(),
                        });
                        out.push(Action::Stop {
                            node: p.node,
                            key: r.key.clone(),
                            generation: p.generation,
                        });
                        self.adopt(id, r);
                    }
                    // Unknown (the gateway restarted): adopt it.
                    None => self.adopt(id, r),
                }
                if let Some(p) = self.placements.get_mut(&r.key) {
                    p.ready = true;
                }
                for s in &r.sessions {
                    if !known(*s) {
                        out.push(Action::DetachOrphan {
                            node: id.to_owned(),
                            key: r.key.clone(),
                            session: *s,
                        });
                    }
                }
            } else {
                if self.placements.get(&r.key).is_some_and(|p| p.node == id) {
                    // Ours with another generation: ours is newer; the node's copy goes.
                    self.placements.remove(&r.key);
                    out.push(Action::Lost {
                        key: r.key.clone(),
                        node: id.to_owned(),
                    });
                }
                out.push(Action::Stop {
                    node: id.to_owned(),
                    key: r.key.clone(),
                    generation: r.generation,
                });
            }
        }
        out.extend(self.replace_lost(&out));
        out.extend(self.place_wanted());
        out
    }

    /// Take a running instance a node reported as placed there.
    fn adopt(&mut self, id: &str, r: &RunningInstance) {
        self.placements.insert(
            r.key.clone(),
            Placement {
                node: id.to_owned(),
                generation: r.generation,
                ready: true,
                ..Placement::default()
            },
        );
    }

    /// Re-place wanted instances among the `Lost` ones (others come back on demand).
    fn replace_lost(&mut self, actions: &[Action]) -> Vec<Action> {
        let lost: Vec<InstanceKey> = actions
            .iter()
            .filter_map(|a| match a {
                Action::Lost { key, .. } => Some(key.clone()),
                _ => None,
            })
            .collect();
        let wanted: Vec<InstanceKey> = lost
            .into_iter()
            .filter(|k| self.wanted.contains(k))
            .collect();
        wanted.iter().filter_map(|k| self.ensure(k)).collect()
    }

    /// A heartbeat from `id` on connection `conn`.
    pub fn heartbeat(&mut self, now_ms: u64, id: &str, conn: u64, players: u32, overruns: u32) {
        if let Some(n) = self.nodes.get_mut(id)
            && n.conn == conn
        {
            n.last_seen_ms = now_ms;
            n.players = players;
            n.overruns = n.overruns.saturating_add(u64::from(overruns));
        }
    }

    /// Per-instance figures from `id`'s report.
    pub fn instance_load(&mut self, id: &str, load: &shared::internal::InstanceLoad) {
        if let Some(p) = self.placements.get_mut(&load.key)
            && p.node == id
        {
            p.players = load.players;
            p.npcs = load.npcs;
            p.tick_p99_us = load.tick_p99_us;
            p.tick_p50_us = load.tick_p50_us;
            p.handoffs = load.handoffs;
            p.handoffs_failed = load.handoffs_failed;
            p.errors = load.errors;
        }
    }

    /// The tick watchdog's figures for one instance from `id`'s report: its tick age and
    /// whether it is stuck. Returns whether it was stuck before (so a caller can wake
    /// what waits for it once it is not).
    pub fn instance_watch(
        &mut self,
        id: &str,
        key: &InstanceKey,
        tick_age_ms: u64,
        stuck: bool,
    ) -> bool {
        match self.placements.get_mut(key) {
            Some(p) if p.node == id => {
                let was = p.stuck;
                p.tick_age_ms = tick_age_ms;
                p.stuck = stuck;
                was
            }
            _ => false,
        }
    }

    /// `id`'s watchdog gave `key` up at `generation` (it dropped it; `InstanceGivenUp`):
    /// the placement goes, the instance is lost (its players are put back from their last
    /// saves) and, when wanted, placed again with a new generation on the least loaded
    /// ready node (possibly `id` again: it runs the new copy on a fresh arbiter). Stale
    /// (another generation or node): nothing.
    pub fn given_up(&mut self, id: &str, key: &InstanceKey, generation: Generation) -> Vec<Action> {
        if !self.owns(id, key, generation) {
            return Vec::new();
        }
        self.placements.remove(key);
        let mut out = vec![Action::Lost {
            key: key.clone(),
            node: id.to_owned(),
        }];
        out.extend(self.replace_lost(&out));
        out
    }

    /// Whether `id` owns `key` at exactly `generation`: what a zone's checkpoint group must
    /// show to be stored (a node that lost the instance, or a stale copy, is refused).
    pub fn owns(&self, id: &str, key: &InstanceKey, generation: Generation) -> bool {
        self.placements
            .get(key)
            .is_some_and(|p| p.node == id && p.generation == generation)
    }

    /// `InstanceReady`; false when it is stale (another node or generation owns the key).
    pub fn ready(&mut self, id: &str, key: &InstanceKey, generation: Generation) -> bool {
        match self.placements.get_mut(key) {
            Some(p) if p.node == id && p.generation == generation => {
                p.ready = true;
                true
            }
            _ => false,
        }
    }

    /// `InstanceStopped` (or an assignment the node refused): forget the placement when it
    /// matches. Returns whether it did.
    pub fn stopped(&mut self, id: &str, key: &InstanceKey, generation: Generation) -> bool {
        let matches = self
            .placements
            .get(key)
            .is_some_and(|p| p.node == id && p.generation == generation);
        if matches {
            self.placements.remove(key);
        }
        matches
    }

    /// The node is draining: it takes nothing new.
    pub fn draining(&mut self, id: &str, conn: u64) {
        if let Some(n) = self.nodes.get_mut(id)
            && n.conn == conn
        {
            n.draining = true;
        }
    }

    /// The node's connection `conn` closed. A `Deregister`ed node is removed at once (it
    /// saved everything and stopped its instances); otherwise it has `node_timeout` to come
    /// back (see [`Directory::expire`]).
    pub fn disconnected(
        &mut self,
        now_ms: u64,
        id: &str,
        conn: u64,
        deregistered: bool,
    ) -> Vec<Action> {
        let Some(n) = self.nodes.get_mut(id) else {
            return Vec::new();
        };
        if n.conn != conn {
            return Vec::new();
        }
        n.connected = false;
        n.last_seen_ms = now_ms;
        if deregistered {
            return self.remove(id);
        }
        Vec::new()
    }

    /// Remove nodes silent for longer than `timeout_ms`; their instances are lost and the
    /// wanted ones re-placed.
    pub fn expire(&mut self, now_ms: u64, timeout_ms: u64) -> Vec<Action> {
        let dead: Vec<NodeId> = self
            .nodes
            .values()
            .filter(|n| now_ms.saturating_sub(n.last_seen_ms) > timeout_ms)
            .map(|n| n.id.clone())
            .collect();
        let mut out = Vec::new();
        for id in dead {
            out.extend(self.remove(&id));
        }
        out
    }

    fn remove(&mut self, id: &str) -> Vec<Action> {
        self.nodes.remove(id);
        let mut out: Vec<Action> = self
            .instances_of(id)
            .into_iter()
            .map(|key| {
                self.placements.remove(&key);
                Action::Lost {
                    key,
                    node: id.to_owned(),
                }
            })
            .collect();
        out.extend(self.replace_lost(&out));
        out.extend(self.place_wanted());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(a: &str, i: u16) -> InstanceKey {
        InstanceKey {
            area: a.into(),
            instance: i,
        }
    }

    fn dir() -> Directory {
        Directory::new(["A".to_owned(), "B".to_owned(), "C".to_owned()], 100)
    }

    fn assigns(actions: &[Action]) -> Vec<(String, InstanceKey, Generation)> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Assign {
                    node,
                    key,
                    generation,
                } => Some((node.clone(), key.clone(), *generation)),
                _ => None,
            })
            .collect()
    }

    const NONE: &dyn Fn(SessionId) -> bool = &|_| false;

    #[test]
    fn the_first_node_gets_every_instance_zero_and_a_later_node_gets_new_ones() {
        let mut d = dir();
        assert_eq!(d.unplaced().len(), 3);
        let a = d.register(0, "n1", "h:1", 10, 1, &[], NONE);
        let got = assigns(&a);
        assert_eq!(got.len(), 3);
        assert!(got.iter().all(|(n, _, _)| n == "n1"));
        let gens: BTreeSet<_> = got.iter().map(|g| g.2).collect();
        assert_eq!(gens.len(), 3, "distinct generations");
        assert!(d.register(0, "n2", "h:2", 10, 2, &[], NONE).is_empty());
        let a = d.ensure(&key("A", 7)).unwrap();
        assert!(matches!(a, Action::Assign { ref node, .. } if node == "n2"));
        assert!(d.ensure(&key("A", 7)).is_none(), "already placed");
    }

    #[test]
    fn capacity_and_draining_are_respected() {
        let mut d = dir();
        let a = d.register(0, "n1", "h:1", 2, 1, &[], NONE);
        assert_eq!(assigns(&a).len(), 2);
        assert_eq!(d.unplaced().len(), 1);
        d.draining("n1", 1);
        let a = d.register(0, "n2", "h:2", 5, 2, &[], NONE);
        assert_eq!(assigns(&a).len(), 1, "the new node takes the unplaced one");
        d.draining("n2", 2);
        assert!(d.ensure(&key("B", 3)).is_none());
        assert!(d.placement(&key("B", 3)).is_none());
    }

    #[test]
    fn stale_ready_and_stop_are_fenced() {
        let mut d = dir();
        let a = d.register(0, "n1", "h:1", 10, 1, &[], NONE);
        let (_, k, g) = assigns(&a)[0].clone();
        assert!(!d.ready("n1", &k, g - 1));
        assert!(!d.ready("n2", &k, g));
        assert!(d.ready("n1", &k, g));
        assert!(!d.stopped("n1", &k, g + 1));
        assert!(d.stopped("n1", &k, g));
        assert!(d.placement(&k).is_none());
    }

    #[test]
    fn a_silent_node_is_removed_and_its_instances_replaced_with_new_generations() {
        let mut d = dir();
        let a = d.register(0, "n1", "h:1", 10, 1, &[], NONE);
        let before = assigns(&a);
        d.register(0, "n2", "h:2", 10, 2, &[], NONE);
        d.heartbeat(4_000, "n2", 2, 0, 0);
        assert!(
            d.disconnected(1_000, "n1", 1, false).is_empty(),
            "grace period"
        );
        assert!(d.expire(3_000, 5_000).is_empty());
        let a = d.expire(7_000, 5_000);
        let lost = a
            .iter()
            .filter(|a| matches!(a, Action::Lost { .. }))
            .count();
        assert_eq!(lost, 3);
        let after = assigns(&a);
        assert_eq!(after.len(), 3);
        for (n, k, g) in &after {
            assert_eq!(n, "n2");
            let old = before.iter().find(|b| &b.1 == k).unwrap().2;
            assert!(*g > old, "a re-placement has a newer generation");
        }
        assert!(d.node("n1").is_none());
        // The lost node's checkpoints no longer count; the new owner's do.
        for (n, k, g) in &after {
            let old = before.iter().find(|b| &b.1 == k).unwrap().2;
            assert!(!d.owns("n1", k, old));
            assert!(!d.owns(n, k, old));
            assert!(d.owns(n, k, *g));
        }
    }

    #[test]
    fn a_node_that_comes_back_in_time_keeps_its_instances() {
        let mut d = dir();
        let a = d.register(0, "n1", "h:1", 10, 1, &[], NONE);
        d.disconnected(100, "n1", 1, false);
        let running: Vec<RunningInstance> = assigns(&a)
            .into_iter()
            .map(|(_, key, generation)| RunningInstance {
                key,
                generation,
                sessions: vec![5],
                fences: Vec::new(),
            })
            .collect();
        let known = |s: SessionId| s == 5;
        let a = d.register(200, "n1", "h:1", 10, 2, &running, &known);
        assert!(a.is_empty(), "{a:?}");
        // An old connection closing later does not touch the new registration.
        assert!(d.disconnected(300, "n1", 1, false).is_empty());
        assert!(d.node("n1").unwrap().connected);
    }

    #[test]
    fn a_restarted_gateway_adopts_running_instances_and_detaches_orphans() {
        // The new gateway's generations start above the old one's (the wall clock).
        let mut d = Directory::new(["A".to_owned()], 1_000);
        let running = vec![
            RunningInstance {
                key: key("A", 0),
                generation: 500,
                sessions: vec![1, 2],
                fences: Vec::new(),
            },
            RunningInstance {
                key: key("A", 4),
                generation: 501,
                sessions: vec![],
                fences: Vec::new(),
            },
        ];
        let known = |s: SessionId| s == 1;
        let a = d.register(0, "n1", "h:1", 10, 1, &running, &known);
        assert_eq!(
            a,
            vec![Action::DetachOrphan {
                node: "n1".into(),
                key: key("A", 0),
                session: 2
            }]
        );
        assert_eq!(d.placement(&key("A", 4)).unwrap().generation, 501);
        let a = d.ensure(&key("A", 9)).unwrap();
        assert!(matches!(a, Action::Assign { generation, .. } if generation > 501));
    }

    #[test]
    fn an_instance_this_gateway_withdrew_is_not_adopted_back() {
        let mut d = dir();
        let a = d.register(0, "n1", "h:1", 10, 1, &[], NONE);
        let (_, k, g) = assigns(&a).into_iter().next().unwrap();
        let extra = d.ensure(&key("A", 7)).unwrap();
        let Action::Assign { generation: g7, .. } = extra else {
            panic!("{extra:?}");
        };
        d.ready("n1", &key("A", 7), g7);
        // n1 is given up; A#7 (not wanted) is not re-placed anywhere.
        d.disconnected(0, "n1", 1, false);
        d.expire(9_000, 5_000);
        assert!(d.placement(&key("A", 7)).is_none());
        // It comes back (it was only paused) still running both: neither is adopted.
        let running = vec![
            RunningInstance {
                key: k.clone(),
                generation: g,
                sessions: vec![],
                fences: Vec::new(),
            },
            RunningInstance {
                key: key("A", 7),
                generation: g7,
                sessions: vec![4],
                fences: Vec::new(),
            },
        ];
        let a = d.register(9_500, "n1", "h:1", 10, 2, &running, NONE);
        assert!(a.contains(&Action::Stop {
            node: "n1".into(),
            key: key("A", 7),
            generation: g7
        }));
        assert!(d.placement(&key("A", 7)).is_none());
    }

    #[test]
    fn after_a_restart_the_newest_reported_generation_wins() {
        let mut d = Directory::new(["A".to_owned()], 1_000);
        let old = |g| {
            vec![RunningInstance {
                key: key("A", 0),
                generation: g,
                sessions: vec![],
                fences: Vec::new(),
            }]
        };
        // n1 still runs a copy given up before the restart (500); n2 the newer one (600).
        assert!(
            d.register(0, "n1", "h:1", 10, 1, &old(500), NONE)
                .is_empty()
        );
        let a = d.register(10, "n2", "h:2", 10, 2, &old(600), NONE);
        assert!(a.contains(&Action::Stop {
            node: "n1".into(),
            key: key("A", 0),
            generation: 500
        }));
        let p = d.placement(&key("A", 0)).unwrap();
        assert_eq!((p.node.as_str(), p.generation), ("n2", 600));
        // The other order: the newer one stays, the older is stopped.
        let mut d = Directory::new(["A".to_owned()], 1_000);
        assert!(
            d.register(0, "n2", "h:2", 10, 2, &old(600), NONE)
                .is_empty()
        );
        let a = d.register(10, "n1", "h:1", 10, 1, &old(500), NONE);
        assert!(a.contains(&Action::Stop {
            node: "n1".into(),
            key: key("A", 0),
            generation: 500
        }));
        assert_eq!(d.placement(&key("A", 0)).unwrap().node, "n2");
    }

    #[test]
    fn a_stale_copy_reported_by_a_returning_node_is_stopped() {
        let mut d = dir();
        let a = d.register(0, "n1", "h:1", 10, 1, &[], NONE);
        let old = assigns(&a);
        d.register(0, "n2", "h:2", 10, 2, &[], NONE);
        d.heartbeat(9_000, "n2", 2, 0, 0);
        d.disconnected(0, "n1", 1, false);
        d.expire(9_000, 5_000);
        // n1 comes back reporting its old copies: each is stopped, nothing re-placed there.
        let running: Vec<RunningInstance> = old
            .iter()
            .map(|(_, key, generation)| RunningInstance {
                key: key.clone(),
                generation: *generation,
                sessions: vec![],
                fences: Vec::new(),
            })
            .collect();
        let a = d.register(9_100, "n1", "h:1", 10, 3, &running, NONE);
        let stops = a
            .iter()
            .filter(|a| matches!(a, Action::Stop { .. }))
            .count();
        assert_eq!(stops, 3, "{a:?}");
        assert!(d.instances_of("n2").len() == 3);
    }

    #[test]
    fn a_deregistered_node_is_removed_at_once() {
        let mut d = dir();
        d.register(0, "n1", "h:1", 10, 1, &[], NONE);
        let a = d.disconnected(10, "n1", 1, true);
        assert_eq!(
            a.iter()
                .filter(|a| matches!(a, Action::Lost { .. }))
                .count(),
            3
        );
        assert_eq!(d.unplaced().len(), 3);
    }
}
