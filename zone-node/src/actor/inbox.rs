//! An AreaInstance's inbox: the inputs queued for its next tick, filled from any thread,
//! drained whole by its actor. What players send is bounded per player and in total
//! ([`InboxLimits`]): a player past its share, or a zone past its total, has its inputs
//! dropped and counted until the next tick drains the queue, so one client (or a gateway
//! that lets one through) can never grow a zone's memory or its next tick without bound.
//! Everything else (handoffs, joins, the store's answers) is the cluster's own traffic
//! and always queued.

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};

use shared::internal::SessionId;

use crate::sim::events::{PlayerAction, PlayerKey, ZoneInput};

/// How many player inputs an inbox holds between two ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InboxLimits {
    /// From one player.
    pub per_player: u32,
    /// From all players together.
    pub total: u32,
}

impl Default for InboxLimits {
    /// A player at 20 Hz with a handful of actions has one or two inputs a tick; a
    /// crowded zone a few thousand.
    fn default() -> Self {
        Self {
            per_player: 64,
            total: 16_384,
        }
    }
}

/// Why a player's input was not queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// The player has `per_player` inputs queued.
    Player,
    /// The instance has `total` player inputs queued.
    Total,
}

/// The queue (a `Vec` of inputs in arrival order, as before) with its player counts.
#[derive(Debug, Default)]
pub struct InboxQueue {
    items: Vec<ZoneInput>,
    per_player: HashMap<SessionId, u32>,
    players_total: u32,
}

impl InboxQueue {
    /// A queue holding `first`.
    pub fn with(first: Vec<ZoneInput>) -> Self {
        Self {
            items: first,
            ..Self::default()
        }
    }

    /// Queue a player's input, unless the player or the instance is at its limit.
    pub fn push_player(
        &mut self,
        limits: InboxLimits,
        session: SessionId,
        action: PlayerAction,
    ) -> Result<(), Refused> {
        if self.players_total >= limits.total {
            return Err(Refused::Total);
        }
        let n = self.per_player.entry(session).or_insert(0);
        if *n >= limits.per_player {
            return Err(Refused::Player);
        }
        *n += 1;
        self.players_total += 1;
        self.items.push(ZoneInput::Player {
            player: PlayerKey(session),
            action,
        });
        Ok(())
    }

    /// Everything queued, into `batch` (which must be empty); the counts start again.
    pub fn drain_into(&mut self, batch: &mut Vec<ZoneInput>) {
        std::mem::swap(&mut self.items, batch);
        self.per_player.clear();
        self.players_total = 0;
    }
}

impl Deref for InboxQueue {
    type Target = Vec<ZoneInput>;

    fn deref(&self) -> &Vec<ZoneInput> {
        &self.items
    }
}

impl DerefMut for InboxQueue {
    /// The inputs themselves (the cluster's own pushes and the actor's re-queues; player
    /// inputs go through [`InboxQueue::push_player`]).
    fn deref_mut(&mut self) -> &mut Vec<ZoneInput> {
        &mut self.items
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_player_past_its_share_is_refused_and_others_are_not() {
        let limits = InboxLimits {
            per_player: 3,
            total: 5,
        };
        let mut q = InboxQueue::default();
        for _ in 0..3 {
            q.push_player(limits, 1, PlayerAction::Jump).unwrap();
        }
        assert_eq!(
            q.push_player(limits, 1, PlayerAction::Jump),
            Err(Refused::Player)
        );
        q.push_player(limits, 2, PlayerAction::Jump).unwrap();
        q.push(ZoneInput::Shutdown);
        q.push_player(limits, 3, PlayerAction::Jump).unwrap();
        assert_eq!(
            q.push_player(limits, 4, PlayerAction::Jump),
            Err(Refused::Total)
        );
        assert_eq!(q.len(), 6);
        let mut batch = Vec::new();
        q.drain_into(&mut batch);
        assert_eq!(batch.len(), 6);
        assert!(q.is_empty());
        // A new tick, a new share.
        for _ in 0..3 {
            q.push_player(limits, 1, PlayerAction::Jump).unwrap();
        }
    }
}
