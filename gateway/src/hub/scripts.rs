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
            } => return self.actor_query(node, req, handle, native, args),
            ScriptStoreOp::ActorAnswer { qid, value } => return self.actor_answer(qid, value),
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

    /// The script handle of the character called `name` if it is in the game (on any
    /// node), from the account book.
    fn player_handle(&self, name: &str) -> Option<u32> {
        let online = self
            .control
            .players()
            .find(|(_, p, ..)| p.name.eq_ignore_ascii_case(name))
            .map(|(_, p, ..)| p.name.clone())?;
        let acc = self.shared.accounts();
        let (id, slot) = acc.book.find_character(&online)?;
        acc.book
            .get(id)?
            .characters
            .get(usize::from(slot))
            .map(|c| c.handle)
            .filter(|&h| h != 0)
    }

    /// A zone's query on a player it does not host (`runtime::remote`): asked of the node
    /// hosting that player; answered `Error` at once when it is not in the game, or by
    /// [`Hub::expire_actor_queries`] when no answer comes in time.
    fn actor_query(
        &mut self,
        node: &str,
        req: u64,
        handle: u32,
        native: String,
        args: Vec<shared::internal::ValueDto>,
    ) {
        let Some((session, host)) = self.session_of_handle(handle) else {
            self.refuse(node, req, "the player is not in the game");
            return;
        };
        let msg = |qid| Msg::ActorQuery {
            qid,
            session,
            native,
            args,
        };
        self.forward(node, req, &host, ACTOR_QUERY_TIMEOUT, msg);
    }

    /// Answer a zone's request `Error(why)` (the script reads 0 or "").
    fn refuse(&self, node: &str, req: u64, why: &str) {
        if req != 0 {
            let result = ScriptStoreResult::Error(why.into());
            self.send_node(node, Msg::ScriptStoreReply { req, result });
        }
    }

    /// Send `msg(qid)` to `host` for a zone's request `req` of `node`, which its answer
    /// ([`Hub::actor_answer`]) or the timeout ([`Hub::expire_actor_queries`]) answers.
    fn forward(
        &mut self,
        node: &str,
        req: u64,
        host: &str,
        timeout: std::time::Duration,
        msg: impl FnOnce(u64) -> Msg,
    ) {
        if self.actor_queries.len() >= MAX_ACTOR_QUERIES {
            self.refuse(node, req, "too many queries in flight");
            return;
        }
        self.next_actor_query += 1;
        let qid = self.next_actor_query;
        let deadline = std::time::Instant::now() + timeout;
        self.actor_queries
            .insert(qid, (node.to_owned(), req, deadline));
        self.send_node(host, msg(qid));
    }

    /// A script's `Spawn` into another AreaInstance: the instance is placed if it is not
    /// running, then its node's zone spawns and answers the handle (as a query).
    fn spawn_elsewhere(
        &mut self,
        node: &str,
        req: u64,
        area: &str,
        instance: u16,
        msg: impl FnOnce(u64, shared::internal::InstanceKey) -> Msg,
    ) {
        let now = self.now();
        let shared = self.shared.clone();
        let (owner, actions) = self
            .control
            .with_directory(now, &Book(&shared), |dir, areas| {
                let mut placements = Vec::new();
                let owner = crate::script_store::area_named(areas, area).and_then(|a| {
                    let key = shared::internal::InstanceKey { area: a, instance };
                    if let Some(p) = dir.ensure(&key) {
                        placements.push(p);
                    }
                    dir.placement(&key).map(|p| (key.clone(), p.node.clone()))
                });
                (owner, placements)
            });
        self.apply(actions);
        let Some((key, host)) = owner else {
            self.refuse(node, req, "no such area, or no node for it");
            return;
        };
        // Starting an instance takes longer than a query.
        self.forward(node, req, &host, 3 * ACTOR_QUERY_TIMEOUT, |qid| {
            msg(qid, key)
        });
    }

    /// The hosting zone answered a query: back to the zone that asked.
    fn actor_answer(&mut self, qid: u64, value: Option<shared::internal::ValueDto>) {
        let Some((node, req, _)) = self.actor_queries.remove(&qid) else {
            return;
        };
        if req != 0 {
            let result = value.map_or_else(
                || ScriptStoreResult::Error("the player is not there".into()),
                ScriptStoreResult::Value,
            );
            self.send_node(&node, Msg::ScriptStoreReply { req, result });
        }
    }

    /// Queries whose answer did not come in time are answered `Error` (the script reads
    /// 0 or "").
    pub(super) fn expire_actor_queries(&mut self) {
        let now = std::time::Instant::now();
        let late: Vec<u64> = self
            .actor_queries
            .iter()
            .filter(|(_, (_, _, d))| *d <= now)
            .map(|(q, _)| *q)
            .collect();
        for q in late {
            if let Some((node, req, _)) = self.actor_queries.remove(&q)
                && req != 0
            {
                let result = ScriptStoreResult::Error("no answer in time".into());
                self.send_node(&node, Msg::ScriptStoreReply { req, result });
            }
        }
    }

    /// The session and node of the player whose script handle is `handle`, if it is in
    /// the game.
    fn session_of_handle(&self, handle: u32) -> Option<(SessionId, String)> {
        if handle == 0 {
            return None;
        }
        let players: Vec<(SessionId, String, Option<String>)> = self
            .control
            .players()
            .map(|(s, p, _, node, _)| (s, p.name.clone(), node.map(str::to_owned)))
            .collect();
        let acc = self.shared.accounts();
        players.into_iter().find_map(|(s, name, node)| {
            let (id, slot) = acc.book.find_character(&name)?;
            let c = acc.book.get(id)?.characters.get(usize::from(slot))?;
            (c.handle == handle).then_some((s, node?))
        })
    }

    /// A zone's `Output` to a player handle it does not host: the line goes to that
    /// player's session, wherever it plays (nothing if it is not in the game).
    fn tell(&mut self, handle: u32, text: Vec<u8>, rgb: (u8, u8, u8)) {
        if handle == 0 || text.len() > usize::from(u16::MAX) {
            return;
        }
        let names: Vec<(SessionId, String)> = self
            .control
            .players()
            .map(|(s, p, ..)| (s, p.name.clone()))
            .collect();
        let session = {
            let acc = self.shared.accounts();
            names.into_iter().find_map(|(s, name)| {
                let (id, slot) = acc.book.find_character(&name)?;
                let c = acc.book.get(id)?.characters.get(usize::from(slot))?;
                (c.handle == handle).then_some(s)
            })
        };
        if let Some(s) = session {
            let packet = ServerPacket::ChatMessage(shared::proto::ChatMessageS2C {
                colour: shared::proto::ChatColour::Rgb(rgb.0, rgb.1, rgb.2),
                text: shared::wire::RcString(text),
            });
            self.send_packet(s, &packet);
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
        ScriptStoreOp::Spawn { .. } => "Spawn",
        ScriptStoreOp::InstanceExists { .. } => "InstanceExists",
        ScriptStoreOp::CreateInstance { .. } => "CreateInstance",
        ScriptStoreOp::RemoveInstance { .. } => "RemoveInstance",
        ScriptStoreOp::CountActors { .. } => "CountActors",
    }
}

/// How long a remote actor query waits for the hosting zone's answer.
const ACTOR_QUERY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);
/// Remote actor queries in flight at most (more are answered `Error` at once).
const MAX_ACTOR_QUERIES: usize = 4096;

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
