//! The zones' scripts at the hub: their script store requests (answered by
//! [`crate::script_store::answer`], carried out here), the super globals every node keeps
//! a copy of, and the account natives (`BanPlayer`, `KickPlayer`). `RemoveZoneInstance`
//! and the cluster's `Startup.Main` are the control plane's ([`crate::control`]).
//!
//! A change to the store is in memory at once (so the next request sees it) and queued
//! for the store writer; its answer goes only once the writer has committed it, as a
//! snapshot's acknowledgement does, so what a script was told is stored survives a crash.

use std::sync::Arc;

use shared::internal::{AccountActionDto, Msg, ScriptStoreOp, ScriptStoreResult, SessionId};
use shared::proto::{KickedPlayer, ServerPacket};

use super::{Book, Hub, Metrics};
use crate::session::close;

impl Hub {
    /// A zone's script store request, from `node`.
    pub(super) fn script_store(&mut self, node: &str, req: u64, op: ScriptStoreOp) {
        Metrics::inc(&self.shared.metrics.script_store_requests);
        let what = op_name(&op);
        let now = self.now();
        let shared = self.shared.clone();
        let ((result, fx), actions) =
            self.control
                .with_directory(now, &Book(&shared), |dir, areas| {
                    let mut scripts = shared.scripts();
                    let (result, mut fx) =
                        crate::script_store::answer(&mut scripts, dir, areas, op);
                    let placements = std::mem::take(&mut fx.placements);
                    ((result, fx), placements)
                });
        if let ScriptStoreResult::Error(e) = &result {
            Metrics::inc(&self.shared.metrics.script_store_refused);
            tracing::info!(node, op = what, error = %e, "script store request refused");
        }
        self.apply(actions);
        if let Some((slot, value)) = fx.restore {
            self.send_node(node, Msg::SuperGlobal { slot, value });
        }
        if let Some((slot, value)) = fx.superglobal {
            for link in self.links.values() {
                link.send(Msg::SuperGlobal {
                    slot,
                    value: value.clone(),
                });
            }
        }
        if let Some(key) = fx.remove {
            let actions = self.control.remove_instance(now, key);
            self.apply(actions);
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
        let Some(link) = self.links.get(node).cloned() else {
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
            link.send_untraced(Msg::ScriptStoreReply { req, result });
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
        if !self.control.knows(session) {
            return;
        }
        let Some((account, name)) = self
            .control
            .hosted_by(node, session)
            .map(|(a, n)| (a, n.to_owned()))
        else {
            Metrics::inc(&self.shared.metrics.fenced);
            return;
        };
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
}

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
