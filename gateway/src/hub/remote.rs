//! Scripts acting across the cluster at the hub: a zone's query on, or action taken on,
//! a player another zone hosts (`ActorX`, `GiveItem`, `Warp`, … of a remote handle),
//! `Output` to such a player, `FindActor` by name, `Spawn` into another instance
//! (`docs/scripting.md`, "Across nodes").
//!
//! A query is asked once and answered `Error` when no answer comes in time. An action
//! ([`ActionId`]) is delivered until the zone hosting the player takes it: a zone that
//! does not have the player (it left in a handoff, its node was lost) answers "not here"
//! and the action goes again, after a short wait, to wherever the player is then; the
//! character remembers the actions it took (`ActorStateDto::applied_actions`), so a
//! second delivery is not a second action. A taken action is kept here until a save of
//! the character that includes it arrives (the host's next checkpoint or snapshot): if
//! the node is lost before that, the character comes back from an older save, and the
//! action is delivered again to the zone that takes it over.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use shared::internal::{ActionId, InstanceKey, Msg, ScriptStoreResult, SessionId, ValueDto};
use shared::proto::ServerPacket;

use super::{Book, Hub, Metrics};

/// How long a remote actor query waits for the hosting zone's answer.
pub(super) const ACTOR_QUERY_TIMEOUT: Duration = Duration::from_secs(2);
/// How long an action is delivered again before its script is answered `Error` (a
/// player mid-handoff or on a lost node is back within this in every documented case).
pub(super) const ACTION_TIMEOUT: Duration = Duration::from_secs(10);
/// The wait before an action a zone did not take goes again.
const ACTION_RETRY: Duration = Duration::from_millis(100);
/// Remote actor queries and actions in flight at most (more are answered `Error` at once).
const MAX_ACTOR_QUERIES: usize = 4096;
/// Taken actions kept per character until a save includes them (the oldest go first).
const MAX_SETTLING: usize = 256;

/// A zone's request forwarded to another zone, waiting for its answer.
#[derive(Debug)]
pub(super) struct Forwarded {
    /// The asking node.
    node: String,
    /// Its request id (0: no one waits).
    req: u64,
    /// When the asker is answered `Error`.
    deadline: Instant,
    /// When it was (last) sent to the answering zone.
    sent: Instant,
    /// For an action: what to deliver again.
    action: Option<Box<PendingAction>>,
}

/// An action on a player, as delivered.
#[derive(Clone, Debug)]
pub(super) struct PendingAction {
    /// The player's script handle.
    handle: u32,
    /// The command.
    native: String,
    /// Its arguments.
    args: Vec<ValueDto>,
    /// Its id.
    id: ActionId,
    /// When to deliver it again (set when a zone did not take it).
    retry_at: Option<Instant>,
}

/// The hub's remote queries and actions.
#[derive(Debug, Default)]
pub(super) struct Remote {
    /// In flight: the gateway's id → the request.
    inflight: HashMap<u64, Forwarded>,
    /// The last id given.
    next: u64,
    /// Actions taken by a zone and not yet in a save of their character, by session.
    settling: HashMap<SessionId, Vec<PendingAction>>,
    /// The sessions in the world by their character's script handle (and back), so a
    /// command on a handle does not scan every player.
    handles: HashMap<u32, SessionId>,
    /// The handle indexed for each session.
    session_handle: HashMap<SessionId, u32>,
}

impl Remote {
    fn index(&mut self, handle: u32, session: SessionId) {
        if let Some(old) = self.session_handle.insert(session, handle) {
            self.handles.remove(&old);
        }
        self.handles.insert(handle, session);
    }
}

impl Hub {
    /// The script handle of the character called `name` if it is in the game (on any
    /// node), from the account book.
    pub(super) fn player_handle(&self, name: &str) -> Option<u32> {
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

    /// Answer a zone's request `Error(why)` (the script reads 0 or "").
    pub(super) fn refuse(&self, node: &str, req: u64, why: &str) {
        if req != 0 {
            let result = ScriptStoreResult::Error(why.into());
            self.send_node(node, Msg::ScriptStoreReply { req, result });
        }
    }

    /// A script's `Spawn` into another AreaInstance: the instance is placed if it is not
    /// running, then its node's zone spawns and answers the handle (as a query).
    pub(super) fn spawn_elsewhere(
        &mut self,
        node: &str,
        req: u64,
        area: &str,
        instance: u16,
        msg: impl FnOnce(u64, InstanceKey) -> Msg,
    ) {
        let now = self.now();
        let shared = self.shared.clone();
        let (owner, actions) = self
            .control
            .with_directory(now, &Book(&shared), |dir, areas| {
                let mut placements = Vec::new();
                let owner = crate::script_store::area_named(areas, area).and_then(|a| {
                    let key = InstanceKey { area: a, instance };
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
        self.forward(node, req, &host, 3 * ACTOR_QUERY_TIMEOUT, None, |qid| {
            msg(qid, key)
        });
    }

    /// The session and node of the player whose script handle is `handle`, if it is in
    /// the game.
    fn session_of_handle(&mut self, handle: u32) -> Option<(SessionId, String)> {
        let session = self.session_with_handle(handle)?;
        let node = self.control.node_of(session)?.to_owned();
        Some((session, node))
    }

    /// The session in the world whose character has script handle `handle`: from the
    /// index (`Remote::handles`, kept as sessions enter and leave the world), else found
    /// by a scan of the players and then indexed.
    fn session_with_handle(&mut self, handle: u32) -> Option<SessionId> {
        if handle == 0 {
            return None;
        }
        if let Some(&s) = self.remote.handles.get(&handle) {
            if self.control.knows(s) {
                return Some(s);
            }
            self.remote.handles.remove(&handle);
        }
        let players: Vec<(SessionId, String)> = self
            .control
            .players()
            .map(|(s, p, ..)| (s, p.name.clone()))
            .collect();
        let found = {
            let acc = self.shared.accounts();
            players.into_iter().find_map(|(s, name)| {
                let (id, slot) = acc.book.find_character(&name)?;
                let c = acc.book.get(id)?.characters.get(usize::from(slot))?;
                (c.handle == handle).then_some(s)
            })
        };
        if let Some(s) = found {
            self.remote.index(handle, s);
        }
        found
    }

    /// A session entered the world: index its character's handle.
    pub(super) fn handle_attached(&mut self, session: SessionId) {
        let Some(name) = self
            .control
            .players()
            .find(|(s, ..)| *s == session)
            .map(|(_, p, ..)| p.name.clone())
        else {
            return;
        };
        let handle = {
            let acc = self.shared.accounts();
            acc.book.find_character(&name).and_then(|(id, slot)| {
                acc.book
                    .get(id)?
                    .characters
                    .get(usize::from(slot))
                    .map(|c| c.handle)
            })
        };
        if let Some(h) = handle.filter(|&h| h != 0) {
            self.remote.index(h, session);
        }
    }

    /// A relayed session's player is in the world (or moved to another node): its edge
    /// keeps who it is and where, so that a gateway taking over can adopt the player
    /// instead of logging it out.
    ///
    /// The node hosting the player hears where to send the client's broadcast datagrams
    /// ([`Msg::Fanout`]): straight to the edge when it takes them (an rc/1 or RCEnet
    /// client; a compact one's are coded here, against what it acknowledged).
    pub(super) fn tell_edge_entered(&self, session: SessionId) {
        let Some(c) = self.client(session) else {
            return;
        };
        let crate::hub::ClientLink::Relay(r) = &c.link else {
            return;
        };
        if let Some(ids) = self.control.session_ids(session)
            && let Some(node) = ids.node
        {
            if let Some(edge) = r.fanout.as_deref().filter(|_| c.compact.is_none()) {
                self.send_node(
                    &node,
                    Msg::Fanout {
                        session,
                        edge: Some(edge.clone()),
                    },
                );
            }
            r.send(shared::internal::edge::EdgeMsg::Entered {
                id: r.id,
                session,
                account: ids.account,
                slot: ids.slot,
                rid: ids.rid,
                node,
                fence: ids.fence,
            });
        }
    }

    /// A relayed session's party changed: its edge keeps it with the session (link version
    /// 2 and later), so that a gateway taking over puts the kept members back in one party.
    pub(super) fn tell_edge_party(&self, session: SessionId, members: &[String]) {
        use shared::internal::edge::{EdgeMsg, MAX_PARTY};
        let Some(crate::hub::ClientLink::Relay(r)) = self.client(session).map(|c| c.link.clone())
        else {
            return;
        };
        if r.version < 2 {
            return;
        }
        let members = members.iter().take(MAX_PARTY).cloned().collect();
        r.send(EdgeMsg::Party { id: r.id, members });
    }

    /// A zone's `Output` to a player handle it does not host: the line goes to that
    /// player's session, wherever it plays (nothing if it is not in the game).
    pub(super) fn tell(&mut self, handle: u32, text: Vec<u8>, rgb: (u8, u8, u8)) {
        if handle == 0 || text.len() > usize::from(u16::MAX) {
            return;
        }
        if let Some(s) = self.session_with_handle(handle) {
            let packet = ServerPacket::ChatMessage(shared::proto::ChatMessageS2C {
                colour: shared::proto::ChatColour::Rgb(rgb.0, rgb.1, rgb.2),
                text: shared::wire::RcString(text),
            });
            self.send_packet(s, &packet);
        }
    }

    /// A zone's query on (or, with `action`, action on) a player it does not host
    /// (`runtime::remote`): sent to the node hosting that player; a query is answered
    /// `Error` at once when the player is not in the game, or by
    /// [`Hub::expire_actor_queries`] when no answer comes in time.
    pub(super) fn actor_query(
        &mut self,
        node: &str,
        req: u64,
        handle: u32,
        native: String,
        args: Vec<ValueDto>,
        action: Option<ActionId>,
    ) {
        if handle >= shared::content::NPC_HANDLE_BASE {
            return self.npc_query(node, req, handle, native, args, action.is_some());
        }
        let Some((session, host)) = self.session_of_handle(handle) else {
            self.refuse(node, req, "the player is not in the game");
            return;
        };
        let Some(id) = action else {
            let msg = |qid| Msg::ActorQuery {
                qid,
                session,
                native,
                args,
                action: None,
            };
            self.forward(node, req, &host, ACTOR_QUERY_TIMEOUT, None, msg);
            return;
        };
        let pending = PendingAction {
            handle,
            native,
            args,
            id,
            retry_at: None,
        };
        let msg = action_msg(session, &pending);
        self.forward(node, req, &host, ACTION_TIMEOUT, Some(pending), msg);
    }

    /// A query on (or action on) an NPC elsewhere: its handle names its AreaInstance
    /// (`World::npc_handle_instance`), whose node evaluates it. Delivered once (an NPC
    /// does not travel): no answer in time reads as 0 and the action may or may not have
    /// been taken, never twice.
    fn npc_query(
        &mut self,
        node: &str,
        req: u64,
        handle: u32,
        native: String,
        args: Vec<ValueDto>,
        action: bool,
    ) {
        let Some((key, host)) = self.instance_host(handle) else {
            self.refuse(node, req, "no such NPC in a running instance");
            return;
        };
        let msg = |qid| Msg::NpcQuery {
            qid,
            key,
            native,
            args,
            action,
        };
        self.forward(node, req, &host, ACTOR_QUERY_TIMEOUT, None, msg);
    }

    /// The instance an NPC handle belongs to and the node running it (ready), if any.
    fn instance_host(&self, handle: u32) -> Option<(InstanceKey, String)> {
        let (area, instance) = self.shared.world.npc_handle_instance(handle)?;
        let key = InstanceKey {
            area: area.to_owned(),
            instance,
        };
        let host = self
            .control
            .directory()
            .placement(&key)
            .filter(|p| p.ready)?
            .node
            .clone();
        Some((key, host))
    }

    /// `FirstActorInZone` of another AreaInstance: its node lists the actors (none when
    /// nobody runs it; an instance is not started for a walk).
    pub(super) fn zone_actors(&mut self, node: &str, req: u64, area: &str, instance: u16) {
        let host = self.shared.world.area_by_name(area).and_then(|a| {
            let key = InstanceKey {
                area: a.name.clone(),
                instance,
            };
            let p = self
                .control
                .directory()
                .placement(&key)
                .filter(|p| p.ready)?;
            Some((key, p.node.clone()))
        });
        let Some((key, host)) = host else {
            if req != 0 {
                let result = ScriptStoreResult::Handles(Vec::new());
                self.send_node(node, Msg::ScriptStoreReply { req, result });
            }
            return;
        };
        self.forward(node, req, &host, ACTOR_QUERY_TIMEOUT, None, |qid| {
            Msg::ZoneActors { qid, key }
        });
    }

    /// A zone listed its actors: back to the zone that asked.
    pub(super) fn zone_actors_answer(&mut self, qid: u64, mut handles: Vec<i32>) {
        let Some(f) = self.remote.inflight.remove(&qid) else {
            return;
        };
        self.shared
            .metrics
            .remote_query_latency
            .observe(f.sent.elapsed());
        handles.truncate(shared::internal::MAX_ZONE_ACTORS);
        if f.req != 0 {
            let result = ScriptStoreResult::Handles(handles);
            self.send_node(&f.node, Msg::ScriptStoreReply { req: f.req, result });
        }
    }

    /// Send `msg(qid)` to `host` for a zone's request `req` of `node`, which its answer
    /// ([`Hub::actor_answer`]) or the timeout ([`Hub::expire_actor_queries`]) answers.
    pub(super) fn forward(
        &mut self,
        node: &str,
        req: u64,
        host: &str,
        timeout: Duration,
        action: Option<PendingAction>,
        msg: impl FnOnce(u64) -> Msg,
    ) {
        if self.remote.inflight.len() >= MAX_ACTOR_QUERIES {
            self.refuse(node, req, "too many queries in flight");
            return;
        }
        self.remote.next += 1;
        let qid = self.remote.next;
        self.remote.inflight.insert(
            qid,
            Forwarded {
                node: node.to_owned(),
                req,
                deadline: Instant::now() + timeout,
                sent: Instant::now(),
                action: action.map(Box::new),
            },
        );
        self.send_node(host, msg(qid));
    }

    /// The hosting zone answered: back to the zone that asked. An action the zone did
    /// not take (`None`: the player is not there, or is leaving in a handoff) goes again
    /// shortly; one it took waits in `settling` for a save that includes it.
    pub(super) fn actor_answer(&mut self, qid: u64, value: Option<ValueDto>) {
        let Some(mut f) = self.remote.inflight.remove(&qid) else {
            return;
        };
        self.shared
            .metrics
            .remote_query_latency
            .observe(f.sent.elapsed());
        if let Some(a) = f.action.as_mut() {
            match &value {
                None => {
                    a.retry_at = Some(Instant::now() + ACTION_RETRY);
                    self.remote.inflight.insert(qid, f);
                    return;
                }
                Some(_) => {
                    Metrics::inc(&self.shared.metrics.remote_actions);
                    if let Some((session, _)) = self.session_of_handle(a.handle) {
                        let list = self.remote.settling.entry(session).or_default();
                        if list.len() >= MAX_SETTLING {
                            list.remove(0);
                        }
                        a.retry_at = None;
                        list.push((**a).clone());
                    }
                }
            }
        }
        if f.req != 0 {
            let result = value.map_or_else(
                || ScriptStoreResult::Error("the player is not there".into()),
                ScriptStoreResult::Value,
            );
            self.send_node(&f.node, Msg::ScriptStoreReply { req: f.req, result });
        }
    }

    /// Queries whose answer did not come in time are answered `Error` (the script reads
    /// 0 or ""); actions due again go to wherever their player is now, and those of a
    /// player no longer in the game, or past their time, are answered `Error` (not taken:
    /// the player was not found in time).
    pub(super) fn expire_actor_queries(&mut self) {
        let now = Instant::now();
        let due: Vec<u64> = self
            .remote
            .inflight
            .iter()
            .filter(|(_, f)| {
                f.deadline <= now
                    || f.action
                        .as_ref()
                        .and_then(|a| a.retry_at)
                        .is_some_and(|t| t <= now)
            })
            .map(|(q, _)| *q)
            .collect();
        for q in due {
            let Some(mut f) = self.remote.inflight.remove(&q) else {
                continue;
            };
            if f.deadline > now
                && let Some(a) = f.action.as_mut()
                && let Some((session, host)) = self.session_of_handle(a.handle)
            {
                a.retry_at = None;
                let msg = action_msg(session, a);
                f.sent = now;
                self.remote.inflight.insert(q, f);
                Metrics::inc(&self.shared.metrics.remote_action_retries);
                self.send_node(&host, msg(q));
                continue;
            }
            if f.action.is_some() {
                Metrics::inc(&self.shared.metrics.remote_actions_failed);
            }
            if f.req != 0 {
                let result = ScriptStoreResult::Error("no answer in time".into());
                self.send_node(&f.node, Msg::ScriptStoreReply { req: f.req, result });
            }
        }
    }

    /// A save of `sessions` arrived from `node`: the actions their zone took before it
    /// are in it (a node's messages arrive in the order it sent them).
    pub(super) fn actions_saved(&mut self, node: &str, sessions: &[SessionId]) {
        if self.remote.settling.is_empty() {
            return;
        }
        for &s in sessions {
            if self.control.hosted_by(node, s).is_some() {
                self.remote.settling.remove(&s);
            }
        }
    }

    /// The character of `session` is live on `node` now (attached, or arrived by a
    /// handoff, or put back from its last save after a node loss): the actions taken
    /// since its last save go again (the character recognises those its copy includes,
    /// so only those a lost copy took are taken again).
    pub(super) fn actions_redeliver(&mut self, session: SessionId, node: &str) {
        let Some(list) = self.remote.settling.remove(&session) else {
            return;
        };
        tracing::debug!(
            session,
            node,
            actions = list.len(),
            "delivering again the script actions taken since the character's last save"
        );
        for a in list {
            let msg = action_msg(session, &a);
            self.forward("", 0, node, ACTION_TIMEOUT, Some(a), msg);
        }
    }

    /// A character left the game: nothing of it settles any more (its logout save holds
    /// every action its zone took), and its handle names no session.
    pub(super) fn actions_forget(&mut self, session: SessionId) {
        self.remote.settling.remove(&session);
        if let Some(h) = self.remote.session_handle.remove(&session)
            && self.remote.handles.get(&h) == Some(&session)
        {
            self.remote.handles.remove(&h);
        }
    }
}

/// The message that delivers an action (the gateway's id filled in by the caller).
fn action_msg(session: SessionId, a: &PendingAction) -> impl FnOnce(u64) -> Msg + use<> {
    let (native, args, id) = (a.native.clone(), a.args.clone(), a.id);
    move |qid| Msg::ActorQuery {
        qid,
        session,
        native,
        args,
        action: Some(id),
    }
}
