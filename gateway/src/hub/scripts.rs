//! The zones' scripts at the hub: their script store requests (answered by
//! [`crate::script_store::answer`], carried out here), the super globals every node keeps
//! a copy of, and the account natives (`BanPlayer`, `KickPlayer`). `RemoveZoneInstance`
//! and the cluster's `Startup.Main` are the control plane's ([`crate::control`]).
//!
//! A change to the store is in memory at once (so the next request sees it) and queued
//! for the store writer; its answer goes only once the writer has committed it, as a
//! snapshot's acknowledgement does, so what a script was told is stored survives a crash.

use std::sync::Arc;

use script::compile::SourceFile;
use shared::internal::{
    AccountActionDto, MAX_ENV_NAME, MAX_ENV_VALUE, MAX_ENV_VARS, Msg, ScriptFileDto, ScriptStoreOp,
    ScriptStoreResult, SessionId,
};
use shared::proto::{KickedPlayer, ServerPacket};

use super::{Book, Hub, Metrics};
use crate::session::close;

impl Hub {
    /// A zone's script store request, from `node`.
    pub(super) fn script_store(&mut self, node: &str, req: u64, op: ScriptStoreOp) {
        Metrics::inc(&self.shared.metrics.script_store_requests);
        match op {
            ScriptStoreOp::SetEnv { name, value } => return self.set_env(node, name, value),
            ScriptStoreOp::Weather { area, weather } => {
                return self.area_weather(area, weather);
            }
            ScriptStoreOp::FindPlayer { name } => {
                let handle = self.player_handle(&name).unwrap_or(0);
                if req != 0 {
                    let result = ScriptStoreResult::Int(i32::try_from(handle).unwrap_or(0));
                    self.send_node(node, Msg::ScriptStoreReply { req, result });
                }
                return;
            }
            ScriptStoreOp::Tell { handle, text, rgb } => return self.tell(handle, text, rgb),
            ScriptStoreOp::ActorQuery {
                handle,
                native,
                args,
                action,
            } => return self.actor_query(node, req, handle, native, args, action),
            ScriptStoreOp::ActorAnswer { qid, value } => return self.actor_answer(qid, value),
            ScriptStoreOp::SpawnItem {
                item,
                amount,
                area,
                instance,
                x,
                y,
                z,
            } => {
                let msg = |qid, key| Msg::SpawnItem {
                    qid,
                    key,
                    item,
                    amount,
                    pos: (x, y, z),
                };
                return self.spawn_elsewhere(node, req, &area, instance, msg);
            }
            ScriptStoreOp::ZoneActors { area, instance } => {
                return self.zone_actors(node, req, &area, instance);
            }
            ScriptStoreOp::ZoneActorsAnswer { qid, handles } => {
                return self.zone_actors_answer(qid, handles);
            }
            ScriptStoreOp::Spawn {
                area,
                instance,
                template,
                x,
                y,
                z,
                script,
                death_script,
            } => {
                let msg = |qid, key| Msg::SpawnNpc {
                    qid,
                    key,
                    template,
                    pos: (x, y, z),
                    script,
                    death_script,
                };
                return self.spawn_elsewhere(node, req, &area, instance, msg);
            }
            _ => {}
        }
        if op == ScriptStoreOp::RefreshScripts {
            let result = match self.reload_scripts(node) {
                Ok(_) => ScriptStoreResult::Done,
                Err(e) => ScriptStoreResult::Error(e),
            };
            if req != 0 {
                self.send_node(node, Msg::ScriptStoreReply { req, result });
            }
            return;
        }
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

    /// Reload the world's scripts (`RefreshScripts` from a zone, the admin `reload-scripts`):
    /// read them from the world's folder, compile and check them here, once. A set with
    /// errors is refused with its diagnostics and nothing changes; otherwise every node
    /// gets the files (and a node that registers later gets them too), compiles them, and
    /// new runs use them while running scripts finish on the code they started with.
    #[doc(alias = "RefreshScripts")]
    pub(super) fn reload_scripts(&mut self, by: &str) -> Result<String, String> {
        // Reading and compiling the whole folder costs the hub milliseconds: a zone's
        // RefreshScripts is taken at most once a second (the operator's command always).
        let now = std::time::Instant::now();
        if by != "admin"
            && self
                .last_reload
                .is_some_and(|t| now.duration_since(t) < std::time::Duration::from_secs(1))
        {
            return Err("RefreshScripts: a reload ran less than a second ago".into());
        }
        self.last_reload = Some(now);
        let sources = shared::content::fs::read_world_scripts(self.shared.cfg.world.as_deref())
            .map_err(|e| {
                Metrics::inc(&self.shared.metrics.script_reloads_refused);
                tracing::warn!(by, error = %e, "script reload refused: the scripts cannot be read");
                format!("refused, nothing changed: {e}")
            })?;
        let files: Vec<SourceFile> = sources
            .iter()
            .map(|s| SourceFile::new(s.name.clone(), s.bytes.clone()))
            .collect();
        let compiled = script::compile::compile(&files);
        let errors: Vec<String> = compiled.errors().map(ToString::to_string).collect();
        if !errors.is_empty() {
            Metrics::inc(&self.shared.metrics.script_reloads_refused);
            tracing::warn!(by, errors = errors.len(), first = %errors.join(" | "),
                "script reload refused: the scripts do not compile; nothing changed");
            return Err(format!(
                "refused, nothing changed: {} error(s)\n{}",
                errors.len(),
                errors.join("\n")
            ));
        }
        let files: Vec<ScriptFileDto> = sources
            .into_iter()
            .map(|s| ScriptFileDto {
                name: s.name,
                bytes: s.bytes,
            })
            .collect();
        let version = scripts_version(&files);
        let n = files.len();
        // The same files as the last reload (a script calling RefreshScripts in a loop):
        // nothing to send.
        if let Some(Msg::ScriptsUpdate { version: last, .. }) = &self.scripts_update
            && *last == version
        {
            tracing::info!(
                by,
                version = format!("{version:016x}"),
                "script reload: unchanged"
            );
            return Ok(format!(
                "the {n} scripts are unchanged (version {version:016x})"
            ));
        }
        let msg = Msg::ScriptsUpdate { version, files };
        for link in self.links.values() {
            link.send(msg.clone());
        }
        self.scripts_update = Some(msg);
        Metrics::inc(&self.shared.metrics.script_reloads);
        tracing::info!(
            by,
            version = format!("{version:016x}"),
            scripts = n,
            nodes = self.links.len(),
            "scripts reloaded"
        );
        Ok(format!(
            "reloaded {n} scripts (version {version:016x}) on {} node(s)",
            self.links.len()
        ))
    }

    /// A zone's `SetEnv`: the cluster's environment changes and every node hears it (the
    /// setter's own zone has it already). Bounded like the zones' copies; not saved.
    fn set_env(&mut self, node: &str, name: String, value: Vec<u8>) {
        let new = !self.env.contains_key(&name);
        if name.is_empty()
            || name.len() > MAX_ENV_NAME
            || value.len() > MAX_ENV_VALUE
            || (new && !value.is_empty() && self.env.len() >= MAX_ENV_VARS)
        {
            Metrics::inc(&self.shared.metrics.script_store_refused);
            tracing::info!(node, "SetEnv refused: over the environment's limits");
            return;
        }
        if value.is_empty() {
            self.env.remove(&name);
        } else {
            self.env.insert(name.clone(), value.clone());
        }
        let msg = Msg::SharedVars {
            whole: false,
            env: vec![(name, value)],
            weather: Vec::new(),
        };
        for link in self.links.values() {
            link.send(msg.clone());
        }
    }

    /// An area's instance-0 weather changed: every node hears it, for the areas whose
    /// `WeatherLink` names it.
    fn area_weather(&mut self, area: String, weather: u8) {
        let area = area.to_ascii_lowercase();
        if !self
            .shared
            .world
            .areas
            .iter()
            .any(|a| a.name.eq_ignore_ascii_case(&area))
        {
            Metrics::inc(&self.shared.metrics.script_store_refused);
            return;
        }
        self.weather.insert(area.clone(), weather.min(5));
        let msg = Msg::SharedVars {
            whole: false,
            env: Vec::new(),
            weather: vec![(area, weather.min(5))],
        };
        for link in self.links.values() {
            link.send(msg.clone());
        }
    }

    /// The cluster's environment and the areas' weathers, for a node that just registered.
    pub(super) fn shared_vars_msg(&self) -> Msg {
        Msg::SharedVars {
            whole: true,
            env: self
                .env
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            weather: self.weather.iter().map(|(k, v)| (k.clone(), *v)).collect(),
        }
    }

    /// The last reload, for a node that just registered (none before the first).
    pub(super) fn scripts_update_msg(&self) -> Option<Msg> {
        self.scripts_update.clone()
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
        ScriptStoreOp::RefreshScripts => "RefreshScripts",
        ScriptStoreOp::SetEnv { .. } => "SetEnv",
        ScriptStoreOp::Weather { .. } => "Weather",
        ScriptStoreOp::FindPlayer { .. } => "FindPlayer",
        ScriptStoreOp::Tell { .. } => "Tell",
        ScriptStoreOp::ActorQuery { .. } => "ActorQuery",
        ScriptStoreOp::ActorAnswer { .. } => "ActorAnswer",
        ScriptStoreOp::ZoneActors { .. } => "ZoneActors",
        ScriptStoreOp::SpawnItem { .. } => "SpawnItem",
        ScriptStoreOp::ZoneActorsAnswer { .. } => "ZoneActorsAnswer",
        ScriptStoreOp::Spawn { .. } => "Spawn",
        ScriptStoreOp::InstanceExists { .. } => "InstanceExists",
        ScriptStoreOp::CreateInstance { .. } => "CreateInstance",
        ScriptStoreOp::RemoveInstance { .. } => "RemoveInstance",
        ScriptStoreOp::CountActors { .. } => "CountActors",
    }
}

/// A reload's version: FNV-1a over the files' names and bytes (stable across processes).
fn scripts_version(files: &[ScriptFileDto]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for f in files {
        eat(f.name.as_bytes());
        eat(&[0]);
        eat(&u64::try_from(f.bytes.len())
            .unwrap_or(u64::MAX)
            .to_le_bytes());
        eat(&f.bytes);
    }
    h
}
