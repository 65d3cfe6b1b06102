//! The zones' scripts at the hub: their script store requests (answered by
//! [`crate::script_store::answer`], carried out here), the super globals every node keeps
//! a copy of, the account natives (`BanPlayer`, `KickPlayer`), `RemoveZoneInstance`, and
//! the cluster's `Startup.Main`.
//!
//! A change to the store is in memory at once (so the next request sees it) and queued
//! for the store writer; its answer goes only once the writer has committed it, as a
//! snapshot's acknowledgement does, so what a script was told is stored survives a crash.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use shared::internal::{
    AccountActionDto, Envelope, InstanceKey, Msg, ScriptStoreOp, ScriptStoreResult, SessionId,
};
use shared::proto::{KickedPlayer, ServerPacket};

use super::{Hub, Metrics, Phase};
use crate::session::close;

/// How long `RemoveZoneInstance` waits for the instance's players to leave before it gives
/// up (the instance then stays).
pub const REMOVE_TIMEOUT: Duration = Duration::from_secs(30);

/// An instance a script asked to remove (`RemoveZoneInstance`), until it is stopped.
#[derive(Debug)]
pub(super) struct Removal {
    /// When the hub gives up.
    deadline: Instant,
    /// Players already sent to instance 0 (each is warped once).
    warped: HashSet<SessionId>,
}

impl Hub {
    /// A zone's script store request, from `node`.
    pub(super) fn script_store(&mut self, node: &str, req: u64, op: ScriptStoreOp) {
        Metrics::inc(&self.shared.metrics.script_store_requests);
        let what = op_name(&op);
        let (result, fx) = {
            let mut scripts = self.shared.scripts();
            crate::script_store::answer(&mut scripts, &mut self.dir, &self.areas, op)
        };
        if let ScriptStoreResult::Error(e) = &result {
            Metrics::inc(&self.shared.metrics.script_store_refused);
            tracing::info!(node, op = what, error = %e, "script store request refused");
        }
        if !fx.placements.is_empty() {
            self.apply(fx.placements);
        }
        if let Some((slot, value)) = fx.restore {
            self.send_node(node, Msg::SuperGlobal { slot, value });
        }
        if let Some((slot, value)) = fx.superglobal {
            for link in self.nodes.values() {
                link.send(Msg::SuperGlobal {
                    slot,
                    value: value.clone(),
                });
            }
        }
        if let Some(key) = fx.remove {
            self.begin_removal(key);
        }
        if fx.persist.is_empty() {
            if req != 0 {
                self.send_node(node, Msg::ScriptStoreReply { req, result });
            }
            return;
        }
        if let Err(e) = self.shared.writer.submit(fx.persist) {
            tracing::error!(error = %e, "store writer unavailable; script store change not saved");
            if req != 0 {
                self.send_node(
                    node,
                    Msg::ScriptStoreReply {
                        req,
                        result: ScriptStoreResult::Error("the script store cannot save".into()),
                    },
                );
            }
            return;
        }
        if req == 0 {
            return;
        }
        // Answered once it is on disk.
        let Some(link) = self.nodes.get(node).cloned() else {
            return;
        };
        let shared = Arc::downgrade(&self.shared);
        let r = self.shared.writer.after_commit(move |ok| {
            let result = if ok {
                result
            } else {
                if let Some(s) = shared.upgrade() {
                    Metrics::inc(&s.metrics.script_store_refused);
                }
                tracing::error!(op = what, "script store write failed");
                ScriptStoreResult::Error("the script store could not save the change".into())
            };
            let _ = link
                .tx
                .send(Envelope::new(Msg::ScriptStoreReply { req, result }));
        });
        if let Err(e) = r {
            tracing::error!(error = %e, "store writer unavailable");
        }
    }

    /// The whole set of super globals, for a node that just registered.
    pub(super) fn superglobals_msg(&self) -> Msg {
        Msg::SuperGlobals {
            values: self.shared.scripts().globals(),
        }
    }

    /// A zone's script acts on its player's account. Only the node hosting the player may.
    pub(super) fn account_action(
        &mut self,
        node: &str,
        session: SessionId,
        action: AccountActionDto,
    ) {
        let Some(p) = self.players.get(&session) else {
            return;
        };
        if p.node.as_deref() != Some(node) {
            Metrics::inc(&self.shared.metrics.fenced);
            return;
        }
        let (account, name) = (p.account, p.online.name.clone());
        match action {
            AccountActionDto::Ban => {
                let ops = {
                    let mut acc = self.shared.accounts();
                    acc.book.set_banned(account, true);
                    acc.book.take_persist()
                };
                tracing::info!(session, account, character = %name, "banned by a script");
                if let Err(e) = self.shared.writer.submit(ops) {
                    tracing::error!(error = %e, "store writer unavailable; the ban is not saved");
                }
            }
            AccountActionDto::Kick => {
                tracing::info!(session, character = %name, "kicked by a script");
                self.send_packet(session, &ServerPacket::KickedPlayer(KickedPlayer {}));
                self.close_client(session, close::KICKED, "kicked");
            }
        }
    }

    /// `RemoveZoneInstance`: Realm Crafter moves the instance's players to instance 0 of
    /// the area and removes the instance. Here each player is warped there (the SetArea
    /// of `/warpother`, a normal handoff), and once no player is in the instance or on
    /// its way in, it is stopped (`StopInstance`; its NPCs go with it). If players are
    /// still there after [`REMOVE_TIMEOUT`] the instance stays: stopping it then would
    /// save those players and put them back into a re-created copy of it.
    fn begin_removal(&mut self, key: InstanceKey) {
        if key.instance == 0 || self.removals.contains_key(&key) {
            return;
        }
        tracing::info!(instance = %key, "a script removes the instance");
        self.removals.insert(
            key,
            Removal {
                deadline: Instant::now() + REMOVE_TIMEOUT,
                warped: HashSet::new(),
            },
        );
        self.progress_removals();
    }

    /// Periodic: warp the players out of instances being removed, stop the empty ones.
    pub(super) fn progress_removals(&mut self) {
        if self.removals.is_empty() {
            return;
        }
        let now = Instant::now();
        let keys: Vec<InstanceKey> = self.removals.keys().cloned().collect();
        for key in keys {
            let Some(placement) = self.dir.placement(&key).cloned() else {
                // Gone already (stopped, or lost with its node).
                self.removals.remove(&key);
                continue;
            };
            let inside: Vec<(SessionId, Option<String>, bool)> = self
                .players
                .iter()
                .filter(|(_, p)| p.key == key)
                .map(|(s, p)| (*s, p.node.clone(), matches!(p.phase, Phase::InGame)))
                .collect();
            let arriving = self
                .transfers
                .values()
                .any(|t| t.dto.area == key.area && t.dto.instance == key.instance);
            if inside.is_empty() && !arriving && placement.players == 0 {
                self.removals.remove(&key);
                // For good: its stored ground goes once it has stopped (after its last
                // checkpoint, which its stop sends first).
                self.removed.insert(key.clone());
                tracing::info!(instance = %key, "removed instance stopped");
                self.send_node(
                    &placement.node,
                    Msg::StopInstance {
                        key,
                        generation: placement.generation,
                    },
                );
                continue;
            }
            let Some(r) = self.removals.get_mut(&key) else {
                continue;
            };
            if now >= r.deadline {
                tracing::warn!(instance = %key, players = inside.len(),
                    "RemoveZoneInstance: players did not leave in time; the instance stays");
                self.removals.remove(&key);
                continue;
            }
            let mut to_warp = Vec::new();
            for (session, node, in_game) in inside {
                if in_game
                    && let Some(node) = node
                    && r.warped.insert(session)
                {
                    to_warp.push((session, node));
                }
            }
            for (session, node) in to_warp {
                self.send_node(
                    &node,
                    Msg::WarpPlayer {
                        session,
                        area: key.area.clone(),
                        instance: 0,
                    },
                );
            }
        }
    }

    /// Run the world's `Startup.Main` once per gateway start, in the first instance that
    /// is ready (Realm Crafter ran it once when the server started; a cluster has no one
    /// server, so it runs once per cluster start, in one zone).
    pub(super) fn maybe_startup(&mut self, node: &str, key: &InstanceKey) {
        if self.startup_done {
            return;
        }
        let has_startup = self
            .shared
            .world
            .scripts
            .iter()
            .any(|s| s.name.eq_ignore_ascii_case(STARTUP_SCRIPT));
        if !has_startup {
            self.startup_done = true;
            return;
        }
        let sent = self.send_node(
            node,
            Msg::RunScript {
                key: key.clone(),
                script: STARTUP_SCRIPT.into(),
                func: STARTUP_FUNC.into(),
            },
        );
        if sent {
            tracing::info!(node, instance = %key, "running Startup.Main");
            self.startup_done = true;
        }
    }
}

/// The script run once when the cluster starts.
pub const STARTUP_SCRIPT: &str = "Startup";
/// Its function.
pub const STARTUP_FUNC: &str = "Main";

fn op_name(op: &ScriptStoreOp) -> &'static str {
    match op {
        ScriptStoreOp::ReadFile { .. } => "ReadFile",
        ScriptStoreOp::WriteFile { .. } => "WriteFile",
        ScriptStoreOp::DeleteFile { .. } => "DeleteFile",
        ScriptStoreOp::FileInfo { .. } => "FileInfo",
        ScriptStoreOp::CreateDir { .. } => "CreateDir",
        ScriptStoreOp::SetSuperGlobal { .. } => "SetSuperGlobal",
        ScriptStoreOp::InstanceExists { .. } => "InstanceExists",
        ScriptStoreOp::CreateInstance { .. } => "CreateInstance",
        ScriptStoreOp::RemoveInstance { .. } => "RemoveInstance",
        ScriptStoreOp::CountActors { .. } => "CountActors",
    }
}
