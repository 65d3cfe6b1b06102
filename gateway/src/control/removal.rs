//! `RemoveZoneInstance`: Realm Crafter moves the instance's players to instance 0 of the
//! area and removes the instance. Here each player is warped there (the SetArea of
//! `/warpother`, a normal handoff), and once no player is in the instance or on its way in,
//! it is stopped (`StopInstance`; its NPCs go with it). If players are still there after
//! [`REMOVE_TIMEOUT`] the instance stays: stopping it then would save those players and put
//! them back into a re-created copy of it.

use std::collections::BTreeSet;
use std::time::Duration;

use shared::internal::{InstanceKey, Msg, SessionId};

use super::{Control, Phase, Trace};

/// How long `RemoveZoneInstance` waits for the instance's players to leave before it gives
/// up (the instance then stays).
pub const REMOVE_TIMEOUT: Duration = Duration::from_secs(30);

/// An instance a script asked to remove, until it is stopped.
#[derive(Debug, Clone)]
pub(super) struct Removal {
    /// When the gateway gives up.
    deadline: Duration,
    /// Players already sent to instance 0 (each is warped once).
    warped: BTreeSet<SessionId>,
}

impl Control {
    pub(super) fn begin_removal(&mut self, key: InstanceKey) {
        if key.instance == 0 || self.removals.contains_key(&key) {
            return;
        }
        tracing::info!(instance = %key, "a script removes the instance");
        self.removals.insert(
            key,
            Removal {
                deadline: self.now + REMOVE_TIMEOUT,
                warped: BTreeSet::new(),
            },
        );
        self.progress_removals();
    }

    /// Warp the players out of instances being removed, stop the empty ones.
    pub(super) fn progress_removals(&mut self) {
        if self.removals.is_empty() {
            return;
        }
        let now = self.now;
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
            let arriving = self.transfers.values().any(|t| t.key() == key);
            if inside.is_empty() && !arriving && placement.players == 0 {
                self.removals.remove(&key);
                // For good: its stored ground goes once it has stopped (after its last
                // checkpoint, which its stop sends first).
                self.removed.insert(key.clone());
                tracing::info!(instance = %key, "removed instance stopped");
                self.send(
                    &placement.node,
                    Msg::StopInstance {
                        key,
                        generation: placement.generation,
                    },
                    Trace::Current,
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
                self.send(
                    &node,
                    Msg::WarpPlayer {
                        session,
                        area: key.area.clone(),
                        instance: 0,
                    },
                    Trace::Current,
                );
            }
        }
    }
}
