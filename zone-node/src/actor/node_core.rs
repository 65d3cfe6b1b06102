//! The zone node's decisions as a pure state machine: which AreaInstances it hosts at
//! which placement generation (assign, adopt a newer one, stop, start again once stopped,
//! give up), where each session lives, the handoffs it takes part in (the
//! [`TransferTable`]), the zone sims' transfer-id minters and the node-unique ids of its
//! saves. Each event returns the [`NodeEffect`]s its shell carries out, in order.
//!
//! Two shells run it: the [`Registry`](super::Registry) (actix actors, the link to the
//! gateway, spans as the transfer context `C`) and the control-plane simulator
//! (`tests/src/simulate`, real `ZoneSim`s on a manual clock, where a million fault
//! schedules search it). `H` is what the shell keeps for each hosted copy (the registry's
//! actor handle, the simulator's sim); the core only stores it. Nothing here touches a
//! clock, a socket, a lock or an actor.

use std::collections::BTreeMap;

use shared::internal::{
    ErrorCode, Generation, GroundItemDto, InstanceKey, Msg, RunningInstance, SessionId,
    SnapshotReasonDto, TransferDto,
};

use super::transfers::{Count, Effect, InRefusal, TransferTable};
use crate::sim::events::{ActorState, Arrival, PlayerKey, Rejection, ZoneInput, ZoneOutput};
use crate::sim::{TransferId, TransferOut};

/// How many ticks a stopping instance waits for its players to be saved and removed
/// before it stops anyway.
pub const STOP_TICKS: u32 = 100;

/// Why a request of the gateway (or a test) was refused.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum RegistryError {
    /// The node is draining.
    #[error("the node is draining")]
    Draining,
    /// No such instance here.
    #[error("instance {0} is not hosted here")]
    UnknownInstance(InstanceKey),
    /// The request names an older generation.
    #[error("instance {key} has generation {have}, request names {got}")]
    StaleGeneration {
        /// Which.
        key: InstanceKey,
        /// Ours.
        have: Generation,
        /// The request's.
        got: Generation,
    },
    /// No such area in the world.
    #[error("area {0:?} does not exist in the loaded world")]
    UnknownArea(String),
    /// Capacity reached.
    #[error("capacity of {0} instances reached")]
    Full(u32),
    /// The session is not hosted here.
    #[error("session {0} is not hosted here")]
    UnknownSession(SessionId),
    /// The session is already hosted here.
    #[error("session {0} is already hosted here")]
    DuplicateSession(SessionId),
    /// A transfer id already in progress here.
    #[error("transfer {0} is already in progress here")]
    DuplicateTransfer(TransferId),
}

impl RegistryError {
    /// The wire error code.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Draining => ErrorCode::Draining,
            Self::UnknownInstance(_) | Self::UnknownArea(_) | Self::Full(_) => {
                ErrorCode::UnknownInstance
            }
            Self::StaleGeneration { .. } => ErrorCode::StaleGeneration,
            Self::UnknownSession(_) | Self::DuplicateSession(_) => ErrorCode::UnknownSession,
            Self::DuplicateTransfer(_) => ErrorCode::Unexpected,
        }
    }
}

/// A new copy of an instance for the shell to build (its zone sim's settings that the
/// core decides).
#[derive(Debug, Clone, PartialEq)]
pub struct Creation {
    /// Which instance.
    pub key: InstanceKey,
    /// Its placement generation.
    pub generation: Generation,
    /// This copy's number on this node: what it names when it has stopped.
    pub copy: u64,
    /// The id block of its transfer ids and its minter in it.
    pub minter: (u64, u32),
    /// The ground items it starts with (its last checkpoint's).
    pub ground: Vec<GroundItemDto>,
}

/// A hosted copy of an instance.
#[derive(Debug, Clone)]
pub struct Hosted<H> {
    /// The generation it runs at (a newer assignment of a running copy adopts the number).
    pub generation: Generation,
    /// Asked to stop: it saves its players and goes.
    pub stopping: bool,
    /// A newer generation assigned while it was stopping: a fresh copy, started once this
    /// one has stopped (with the ground items of that assignment).
    pub then: Option<(Generation, Vec<GroundItemDto>)>,
    /// Its number ([`Creation::copy`]).
    pub copy: u64,
    /// The shell's part.
    pub shell: H,
}

/// A player entering the game (`AttachPlayer`).
#[derive(Debug, Clone)]
pub struct Attach {
    /// Its session.
    pub session: SessionId,
    /// The instance the gateway placed it in.
    pub key: InstanceKey,
    /// That instance's generation, as the gateway placed it.
    pub generation: Generation,
    /// Its RuntimeID.
    pub rid: u16,
    /// A DM (game master).
    pub is_dm: bool,
    /// Its character as last saved.
    pub state: ActorState,
    /// Where it appears.
    pub arrival: Arrival,
}

impl Attach {
    /// From the wire message's fields.
    pub fn from_wire(msg: Msg) -> Option<Self> {
        let Msg::AttachPlayer {
            session,
            key,
            generation,
            rid,
            is_dm,
            state,
            arrival,
        } = msg
        else {
            return None;
        };
        Some(Self {
            session,
            key,
            generation,
            rid,
            is_dm,
            state: *state,
            arrival,
        })
    }
}

/// A copy the directory no longer lists (stopped or given up).
#[derive(Debug)]
pub struct Removed<H> {
    /// Which instance.
    pub key: InstanceKey,
    /// The generation it ran at.
    pub generation: Generation,
    /// The sessions it still hosted, ascending (their routes are gone).
    pub sessions: Vec<SessionId>,
    /// The shell's part.
    pub shell: H,
}

/// What the shell does for an event, in order.
#[derive(Debug)]
pub enum NodeEffect<C> {
    /// Give a hosted copy an input.
    Push(InstanceKey, ZoneInput),
    /// Send a message to the gateway, in a handoff's trace when `ctx` is given.
    Send {
        /// The message.
        msg: Msg,
        /// The trace it belongs to.
        ctx: Option<C>,
    },
    /// Tell the copy to save its players and stop (it reports [`NodeCore::stopped`]).
    Stop(InstanceKey),
    /// A newer generation assigned while the old copy stopped: assign it now (through the
    /// shell's own assign, which builds the copy).
    Assign {
        /// Which instance.
        key: InstanceKey,
        /// The new generation.
        generation: Generation,
        /// Its ground items.
        ground: Vec<GroundItemDto>,
    },
    /// Add one to a handoff counter.
    Count(Count),
    /// A handoff's outcome, for its trace.
    Outcome(C, &'static str),
}

/// What a stopping copy does after a tick (see [`stop_step`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopStep {
    /// It has stopped: report [`NodeCore::stopped`].
    Stopped,
    /// Players still here (some joined after the stop request): save and remove them too,
    /// and wait another tick.
    SaveAgain,
}

/// The stop rule of a copy asked to stop: it stops once every player was saved and
/// removed, or after [`STOP_TICKS`] ticks of waiting (`ticks` counts them, this one
/// included).
pub fn stop_step(ticks: u32, players: usize) -> StopStep {
    if players == 0 || ticks > STOP_TICKS {
        StopStep::Stopped
    } else {
        StopStep::SaveAgain
    }
}

/// What a save made by a stopping copy is for: a player it saves on its way out is not
/// logging out but being moved by a shutdown (`Logout` becomes `Shutdown`).
pub fn save_reason(stopping: bool, reason: SnapshotReasonDto) -> SnapshotReasonDto {
    if stopping && reason == SnapshotReasonDto::Logout {
        SnapshotReasonDto::Shutdown
    } else {
        reason
    }
}

/// The node's decisions (see the module docs).
#[derive(Debug)]
pub struct NodeCore<C, H> {
    capacity: u32,
    draining: bool,
    instances: BTreeMap<InstanceKey, Hosted<H>>,
    sessions: BTreeMap<SessionId, InstanceKey>,
    /// The fencing token of each hosted session's copy (reported at registration, so a
    /// gateway taking over adopts only the copy the store knows).
    fences: BTreeMap<SessionId, u64>,
    transfers: TransferTable<C>,
    /// The id block of the current registration and the next minter number in it: every
    /// zone sim created (a rebuild included) mints its transfer ids as its own minter.
    minters: (u64, u32),
    next_id: u64,
    next_copy: u64,
}

impl<C: Clone, H> NodeCore<C, H> {
    /// A node hosting at most `capacity` instances, whose node-unique ids start at
    /// `first_id` (random in the real node: ids stay unique across its restarts).
    pub fn new(capacity: u32, first_id: u64) -> Self {
        Self {
            capacity,
            draining: false,
            instances: BTreeMap::new(),
            sessions: BTreeMap::new(),
            fences: BTreeMap::new(),
            transfers: TransferTable::new(),
            minters: (0, 1),
            next_id: first_id.max(1),
            next_copy: 1,
        }
    }

    // ----- reading ------------------------------------------------------------------------

    /// Whether the node is draining (it takes no players and no instances).
    pub fn is_draining(&self) -> bool {
        self.draining
    }

    /// Instances hosted.
    pub fn instance_count(&self) -> usize {
        self.instances.len()
    }

    /// Sessions routed to a hosted instance.
    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }

    /// A hosted copy.
    pub fn hosted(&self, key: &InstanceKey) -> Option<&Hosted<H>> {
        self.instances.get(key)
    }

    /// A hosted copy, to change the shell's part.
    pub fn hosted_mut(&mut self, key: &InstanceKey) -> Option<&mut Hosted<H>> {
        self.instances.get_mut(key)
    }

    /// Every hosted copy, key order.
    pub fn instances(&self) -> impl Iterator<Item = (&InstanceKey, &Hosted<H>)> {
        self.instances.iter()
    }

    /// The generation this node runs an instance at (0 when it does not).
    pub fn generation_of(&self, key: &InstanceKey) -> Generation {
        self.instances.get(key).map_or(0, |h| h.generation)
    }

    /// The instance a session lives in.
    pub fn session_instance(&self, session: SessionId) -> Option<&InstanceKey> {
        self.sessions.get(&session)
    }

    /// Where a session's traffic goes: its instance and that copy's shell part.
    pub fn route(&self, session: SessionId) -> Option<(&InstanceKey, &H)> {
        let key = self.sessions.get(&session)?;
        Some((key, &self.instances.get(key)?.shell))
    }

    /// The sessions routed to `key`, ascending (a frozen one, with a transfer out in
    /// flight, included).
    pub fn sessions_of(&self, key: &InstanceKey) -> Vec<SessionId> {
        self.sessions
            .iter()
            .filter(|(_, k)| *k == key)
            .map(|(s, _)| *s)
            .collect()
    }

    /// What this node runs, for (re-)registration, key order.
    pub fn running(&self) -> Vec<RunningInstance> {
        let mut by_key: BTreeMap<&InstanceKey, Vec<SessionId>> = BTreeMap::new();
        for (s, k) in &self.sessions {
            by_key.entry(k).or_default().push(*s);
        }
        self.instances
            .iter()
            .map(|(key, h)| {
                let sessions = by_key.remove(key).unwrap_or_default();
                let fences = sessions
                    .iter()
                    .map(|s| self.fences.get(s).copied().unwrap_or(0))
                    .collect();
                RunningInstance {
                    key: key.clone(),
                    generation: h.generation,
                    sessions,
                    fences,
                }
            })
            .collect()
    }

    /// Transfers out of `key` still waiting for an answer: `(id, player)`.
    pub fn pending_from(&self, key: &InstanceKey) -> Vec<(TransferId, Option<PlayerKey>)> {
        self.transfers.pending_from(key)
    }

    /// The transfer table (every handoff pending here).
    pub fn transfers(&self) -> &TransferTable<C> {
        &self.transfers
    }

    // ----- ids ----------------------------------------------------------------------------

    /// A node-unique id (saves, script store requests).
    pub fn next_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id = self.next_id.checked_add(1).unwrap_or(1);
        id
    }

    /// A minter of its own for a new zone sim (or one rebuilt after a panic):
    /// `(block, minter)`.
    pub fn next_minter(&mut self) -> (u64, u32) {
        let got = self.minters;
        self.minters.1 = self.minters.1.checked_add(1).unwrap_or(1);
        got
    }

    /// The gateway's id block for this registration (`TransferIds`): sims created from now
    /// on mint their transfer ids in it. Running sims keep theirs (a block is never handed
    /// out twice, so their ids stay unique).
    pub fn set_transfer_block(&mut self, block: u64) {
        if self.minters.0 != block {
            self.minters = (block, 1);
        }
    }

    // ----- the directory ------------------------------------------------------------------

    /// `AssignInstance`: create the instance (idempotent for the same generation; a newer
    /// generation of a running copy just adopts the number; one that is stopping starts
    /// afresh once it has stopped). `make` builds a new copy's shell part (refusing, e.g.,
    /// an area the world does not have); the copy is then listed and reported ready.
    pub fn assign(
        &mut self,
        key: InstanceKey,
        generation: Generation,
        ground: Vec<GroundItemDto>,
        make: impl FnOnce(&Creation) -> Result<H, RegistryError>,
    ) -> Result<Vec<NodeEffect<C>>, RegistryError> {
        if self.draining {
            return Err(RegistryError::Draining);
        }
        if let Some(h) = self.instances.get_mut(&key) {
            if h.stopping {
                // The copy being stopped keeps its number (its `InstanceStopped` names
                // it, and its players' saves are its own): the new generation is a new
                // copy, once it is gone.
                if generation > h.generation {
                    h.then = Some((generation, ground));
                }
                return Ok(Vec::new());
            }
            if generation < h.generation {
                return Err(RegistryError::StaleGeneration {
                    key,
                    have: h.generation,
                    got: generation,
                });
            }
            h.generation = generation;
            return Ok(Vec::new());
        }
        if self.instances.len() >= self.capacity as usize {
            return Err(RegistryError::Full(self.capacity));
        }
        let creation = Creation {
            key: key.clone(),
            generation,
            copy: self.next_copy,
            minter: self.minters,
            ground,
        };
        let shell = make(&creation)?;
        self.next_copy += 1;
        self.next_minter();
        self.instances.insert(
            key.clone(),
            Hosted {
                generation,
                stopping: false,
                then: None,
                copy: creation.copy,
                shell,
            },
        );
        Ok(vec![send(Msg::InstanceReady { key, generation })])
    }

    /// `StopInstance` (fenced by generation): the copy saves its players and stops.
    pub fn stop(
        &mut self,
        key: &InstanceKey,
        generation: Generation,
    ) -> Result<Vec<NodeEffect<C>>, RegistryError> {
        let h = self
            .instances
            .get_mut(key)
            .ok_or_else(|| RegistryError::UnknownInstance(key.clone()))?;
        if generation < h.generation {
            return Err(RegistryError::StaleGeneration {
                key: key.clone(),
                have: h.generation,
                got: generation,
            });
        }
        if h.stopping {
            return Ok(Vec::new());
        }
        h.stopping = true;
        Ok(vec![NodeEffect::Stop(key.clone())])
    }

    /// Drain: take no more players or instances, and stop every copy (each saves its
    /// players first).
    pub fn drain(&mut self) -> Vec<NodeEffect<C>> {
        self.draining = true;
        let mut out = Vec::new();
        for (key, h) in &mut self.instances {
            if !h.stopping {
                h.stopping = true;
                out.push(NodeEffect::Stop(key.clone()));
            }
        }
        out
    }

    /// Copy `copy` of `key` has saved its players and stopped: it is unlisted with the
    /// routes of whoever is still in it, the gateway hears `InstanceStopped`, handoffs into
    /// or out of it end with it, and a newer generation assigned meanwhile starts.
    /// Nothing when that copy is no longer listed.
    pub fn stopped(
        &mut self,
        key: &InstanceKey,
        copy: u64,
    ) -> Option<(Removed<H>, Vec<NodeEffect<C>>)> {
        if self.instances.get(key).is_none_or(|h| h.copy != copy) {
            return None;
        }
        let (removed, then) = self.unlist(key)?;
        let mut out = vec![send(Msg::InstanceStopped {
            key: key.clone(),
            generation: removed.generation,
        })];
        out.extend(self.instance_gone(key, then));
        Some((removed, out))
    }

    /// The watchdog gave copy `key` at `generation` up: it is unlisted with its sessions
    /// (no input reaches it any more; the shell fences it), handoffs into or out of it end
    /// as for a stopped copy, the gateway hears `InstanceGivenUp` (it re-places the
    /// instance and puts its players back from their last saves), and a newer generation
    /// assigned while it was stopping starts now. Nothing when not hosted at that
    /// generation.
    pub fn give_up(
        &mut self,
        key: &InstanceKey,
        generation: Generation,
    ) -> Option<(Removed<H>, Vec<NodeEffect<C>>)> {
        if self
            .instances
            .get(key)
            .is_none_or(|h| h.generation != generation)
        {
            return None;
        }
        let (removed, then) = self.unlist(key)?;
        let fx = self.transfers.instance_stopped(key);
        let mut out = self.transfer_effects(fx);
        out.push(send(Msg::InstanceGivenUp {
            key: key.clone(),
            generation,
            sessions: removed.sessions.clone(),
        }));
        if let Some((generation, ground)) = then {
            out.push(NodeEffect::Assign {
                key: key.clone(),
                generation,
                ground,
            });
        }
        Some((removed, out))
    }

    /// Removes `key` and its sessions' routes.
    #[allow(clippy::type_complexity)]
    fn unlist(
        &mut self,
        key: &InstanceKey,
    ) -> Option<(Removed<H>, Option<(Generation, Vec<GroundItemDto>)>)> {
        let h = self.instances.remove(key)?;
        let sessions = self.sessions_of(key);
        self.sessions.retain(|_, k| k != key);
        let sessions_left = &self.sessions;
        self.fences.retain(|s, _| sessions_left.contains_key(s));
        Some((
            Removed {
                key: key.clone(),
                generation: h.generation,
                sessions,
                shell: h.shell,
            },
            h.then,
        ))
    }

    fn instance_gone(
        &mut self,
        key: &InstanceKey,
        then: Option<(Generation, Vec<GroundItemDto>)>,
    ) -> Vec<NodeEffect<C>> {
        let fx = self.transfers.instance_stopped(key);
        let mut out = self.transfer_effects(fx);
        if let Some((generation, ground)) = then {
            out.push(NodeEffect::Assign {
                key: key.clone(),
                generation,
                ground,
            });
        }
        out
    }

    // ----- players ------------------------------------------------------------------------

    /// `AttachPlayer`: a player enters the game in a hosted instance (at the generation
    /// the gateway placed it).
    pub fn attach(&mut self, a: Attach) -> Result<Vec<NodeEffect<C>>, RegistryError> {
        if self.draining {
            return Err(RegistryError::Draining);
        }
        let h = self
            .instances
            .get(&a.key)
            .ok_or_else(|| RegistryError::UnknownInstance(a.key.clone()))?;
        if a.generation != h.generation {
            return Err(RegistryError::StaleGeneration {
                key: a.key,
                have: h.generation,
                got: a.generation,
            });
        }
        if self.sessions.contains_key(&a.session) {
            return Err(RegistryError::DuplicateSession(a.session));
        }
        self.sessions.insert(a.session, a.key.clone());
        self.fences.insert(a.session, a.state.fence);
        Ok(vec![NodeEffect::Push(
            a.key,
            ZoneInput::PlayerJoined {
                player: PlayerKey(a.session),
                rid: a.rid,
                is_dm: a.is_dm,
                state: Box::new(a.state),
                arrival: a.arrival,
            },
        )])
    }

    /// An input for a session's instance (`DetachPlayer`, `WarpPlayer`, `PartyMembers`).
    pub fn to_session(
        &self,
        session: SessionId,
        input: impl FnOnce(PlayerKey) -> ZoneInput,
    ) -> Result<Vec<NodeEffect<C>>, RegistryError> {
        let key = self
            .sessions
            .get(&session)
            .ok_or(RegistryError::UnknownSession(session))?;
        Ok(vec![NodeEffect::Push(
            key.clone(),
            input(PlayerKey(session)),
        )])
    }

    /// The sim of `key` removed a player (saved, left, refused): forget the session and
    /// tell the gateway, unless it has moved to another instance meanwhile.
    pub fn player_removed(&mut self, key: &InstanceKey, session: SessionId) -> Vec<NodeEffect<C>> {
        if self.sessions.get(&session) != Some(key) {
            return Vec::new();
        }
        self.sessions.remove(&session);
        self.fences.remove(&session);
        vec![send(Msg::PlayerDetached {
            session,
            key: Some(key.clone()),
        })]
    }

    // ----- handoffs -----------------------------------------------------------------------

    /// A tick's output of copy `key` that the node acts on (handoffs, removed and refused
    /// players); nothing for the rest. `ctx` makes the trace context of a handoff out
    /// (its argument: whether the destination is hosted here).
    pub fn zone_output(
        &mut self,
        key: &InstanceKey,
        o: &ZoneOutput,
        ctx: impl FnOnce(bool) -> C,
    ) -> Vec<NodeEffect<C>> {
        match o {
            ZoneOutput::TransferOut(t) => self.transfer_out(key, t, ctx),
            ZoneOutput::PlayerRemoved { player } => self.player_removed(key, player.0),
            // A join the zone refused (its RuntimeID or session taken): the node does not
            // host the player after all, and the gateway is told so.
            ZoneOutput::Rejected {
                player: Some(player),
                reason: Rejection::BadJoin,
            } => self.player_removed(key, player.0),
            ZoneOutput::AckTransfer { transfer_id } => self.prepared(*transfer_id),
            ZoneOutput::NackTransfer {
                transfer_id,
                reason,
            } => self.refused(*transfer_id, reason.clone()),
            ZoneOutput::PreparedExpired { transfer_id } => {
                self.refused(*transfer_id, "no commit came in time".into())
            }
            ZoneOutput::CommitTransfer { transfer_id } => self.decided(key, *transfer_id, true),
            ZoneOutput::AbortTransfer { transfer_id } => self.decided(key, *transfer_id, false),
            _ => Vec::new(),
        }
    }

    /// A hosted copy's `TransferOut` (SetArea phase one): to the destination when it is
    /// hosted here, else to the gateway, which routes it to the destination's node. Should
    /// that message not go out, tell [`Self::remote_answer`] so.
    pub fn transfer_out(
        &mut self,
        source: &InstanceKey,
        t: &TransferOut,
        ctx: impl FnOnce(bool) -> C,
    ) -> Vec<NodeEffect<C>> {
        let dest = InstanceKey {
            area: t.area.clone(),
            instance: t.instance,
        };
        let local = self.instances.contains_key(&dest);
        let fx = self.transfers.start(source.clone(), t, local, ctx(local));
        self.transfer_effects(fx)
    }

    /// A transfer from another node (via the gateway): phase one at a hosted instance,
    /// which must be at the generation the gateway placed. `ctx` makes its trace context
    /// once it is admitted.
    pub fn transfer_in(
        &mut self,
        t: TransferDto,
        ctx: impl FnOnce() -> C,
    ) -> Result<Vec<NodeEffect<C>>, RegistryError> {
        let dest = InstanceKey {
            area: t.area.clone(),
            instance: t.instance,
        };
        let hosted = self.instances.get(&dest).map(|h| h.generation);
        let (id, generation) = (t.transfer_id, t.generation);
        let refused = |r: InRefusal| match r {
            InRefusal::Draining => RegistryError::Draining,
            InRefusal::UnknownInstance => RegistryError::UnknownInstance(dest.clone()),
            InRefusal::StaleGeneration { have } => RegistryError::StaleGeneration {
                key: dest.clone(),
                have,
                got: generation,
            },
            InRefusal::Duplicate => RegistryError::DuplicateTransfer(id),
        };
        // Checked before the context exists, so a refused transfer leaves no empty span.
        self.transfers
            .admit(&t, hosted, self.draining)
            .map_err(refused)?;
        // A session this node already hosts is never taken in a second time, unless it
        // is this very transfer going out of the instance that hosts it (a handoff the
        // gateway routes back here: an instance it placed on demand). Otherwise one of
        // the two copies is stale (a gateway recovered the player while a deposed one
        // still moved him here), and the gateway sorts it out, as it does for a
        // duplicate `AttachPlayer` (simulator seed 203333).
        if let Some(s) = t.session
            && let Some(here) = self.sessions.get(&s)
            && self.transfers.outgoing_source(id) != Some(here)
        {
            return Err(RegistryError::DuplicateSession(s));
        }
        let fx = self
            .transfers
            .arrive(t, hosted, self.draining, ctx())
            .map_err(refused)?;
        Ok(self.transfer_effects(fx))
    }

    /// A hosted destination holds the actor prepared: acknowledge to the source (once; a
    /// destination rebuilt after a panic prepares again).
    pub fn prepared(&mut self, id: TransferId) -> Vec<NodeEffect<C>> {
        let instances = &self.instances;
        let fx = self
            .transfers
            .prepared(id, |key| instances.get(key).map_or(0, |h| h.generation));
        self.transfer_effects(fx)
    }

    /// A hosted destination refused the actor (or dropped a prepared one that was never
    /// decided): a source still waiting is told, so it restores the actor.
    pub fn refused(&mut self, id: TransferId, reason: String) -> Vec<NodeEffect<C>> {
        let fx = self.transfers.refused(id, reason);
        self.transfer_effects(fx)
    }

    /// The source copy decided (phase two): commit after it let go of the actor, or abort
    /// when the ack came after its rollback. The route moves before the destination hears,
    /// so whatever it sends finds the session where it now lives.
    pub fn decided(
        &mut self,
        source: &InstanceKey,
        id: TransferId,
        commit: bool,
    ) -> Vec<NodeEffect<C>> {
        let fx = self.transfers.decided(source, id, commit);
        self.transfer_effects(fx)
    }

    /// The gateway's answer to a transfer sent to another node: an ack goes to the source
    /// copy, which decides; a refusal restores the actor there.
    pub fn remote_answer(
        &mut self,
        id: TransferId,
        result: Result<(), String>,
    ) -> Vec<NodeEffect<C>> {
        let fx = self.transfers.remote_answer(id, result);
        self.transfer_effects(fx)
    }

    /// The link to the gateway ended: the transfers it carried out that no destination
    /// acknowledged yet are refused, and their actors restored at their sources
    /// ([`TransferTable::gateway_lost`]).
    pub fn gateway_lost(&mut self) -> Vec<NodeEffect<C>> {
        let fx = self.transfers.gateway_lost();
        self.transfer_effects(fx)
    }

    /// The gateway passes on the source's decision for a transfer into this node.
    pub fn remote_decided(&mut self, id: TransferId, commit: bool) -> Vec<NodeEffect<C>> {
        let fx = self.transfers.remote_decided(id, commit);
        self.transfer_effects(fx)
    }

    /// The transfer table's effects: routes are the core's own; the rest go to the shell.
    fn transfer_effects(&mut self, fx: Vec<Effect<C>>) -> Vec<NodeEffect<C>> {
        let mut out = Vec::with_capacity(fx.len());
        for e in fx {
            match e {
                Effect::Route { session, to, fence } => {
                    self.sessions.insert(session, to);
                    self.fences.insert(session, fence);
                }
                Effect::Unroute { session, from } => {
                    if self.sessions.get(&session) == Some(&from) {
                        self.sessions.remove(&session);
                        self.fences.remove(&session);
                    }
                }
                Effect::Push(key, input) => out.push(NodeEffect::Push(key, input)),
                Effect::Send { msg, ctx } => out.push(NodeEffect::Send { msg, ctx }),
                Effect::Count(c) => out.push(NodeEffect::Count(c)),
                Effect::Outcome(ctx, o) => out.push(NodeEffect::Outcome(ctx, o)),
            }
        }
        out
    }
}

fn send<C>(msg: Msg) -> NodeEffect<C> {
    NodeEffect::Send { msg, ctx: None }
}

#[cfg(test)]
mod tests;
