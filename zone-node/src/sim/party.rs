//! Parties of up to 8 (reference §7.9) as this instance sees them.
//!
//! In the cluster, parties span AreaInstances and nodes, so the gateway owns them
//! (`gateway::party`): it handles `/invite`, `/accept`, `/leave` and `/p`, sends
//! `P_PartyUpdate`, and tells each member's zone the member list
//! ([`ZoneInput::PartyMembers`](super::ZoneInput::PartyMembers) → [`set_members`]). The zone
//! keeps that list as `ZoneState::parties[id]` (names, leader first) with each member's
//! `Actor::party`, and uses it to split XP among the members in this instance
//! ([`local_members`]). Leaving the instance (transfer, logout) only forgets the local
//! entry ([`forget`]): the party itself lives on at the gateway.
//!
//! The rules of forming a party (`/invite`, `/accept`, `/leave`, the limit of 8,
//! `P_PartyUpdate`) are the gateway's alone; the zone has no copy of them.

use super::engine::EngineEvent;
use super::state::{ActorId, ChainKind, Party, ZoneState};

fn online_by_name(st: &ZoneState, name: &str) -> Option<ActorId> {
    let name = name.trim();
    st.chain_members(st.online, ChainKind::Online)
        .into_iter()
        .filter_map(|i| st.at(i))
        .find(|a| a.name.eq_ignore_ascii_case(name) && !a.frozen())
        .map(|a| a.id)
}

/// The members of party `pid` present in this instance, in party order.
pub fn local_members(st: &ZoneState, pid: u32) -> Vec<ActorId> {
    let Some(p) = st.parties.get(pid as usize) else {
        return Vec::new();
    };
    p.members
        .iter()
        .filter_map(|n| online_by_name(st, n))
        .filter(|id| st.get(*id).is_some_and(|a| a.party == Some(pid)))
        .collect()
}

/// A slot for a new local party (a freed one first).
fn alloc(st: &mut ZoneState, party: Party) -> u32 {
    let i = match st.parties.iter().position(|p| p.members.is_empty()) {
        Some(free) => {
            if let Some(slot) = st.parties.get_mut(free) {
                *slot = party;
            }
            free
        }
        None => {
            st.parties.push(party);
            st.parties.len() - 1
        }
    };
    u32::try_from(i).unwrap_or(u32::MAX)
}

/// The gateway's member list for `actor`'s party (empty: none): the local party with
/// the same leader takes the list; no packets (the gateway sent `P_PartyUpdate`).
pub(crate) fn set_members(st: &mut ZoneState, actor: ActorId, members: Vec<String>) {
    let before = st.get(actor).and_then(|a| a.party);
    forget(st, actor);
    let Some(leader) = members.first().cloned() else {
        if let Some(pid) = before {
            st.announce(EngineEvent::PartyLeft { actor, party: pid });
        }
        return;
    };
    let found = st.parties.iter().position(|p| {
        p.members
            .first()
            .is_some_and(|l| l.eq_ignore_ascii_case(&leader))
    });
    let pid = match found {
        Some(i) => {
            if let Some(p) = st.parties.get_mut(i) {
                p.members = members;
            }
            u32::try_from(i).unwrap_or(u32::MAX)
        }
        None => alloc(st, Party { members }),
    };
    if let Some(a) = st.get_mut(actor) {
        a.party = Some(pid);
    }
    if before.is_none() {
        st.announce(EngineEvent::PartyJoined { actor, party: pid });
    }
}

/// Forget `actor`'s local party entry without telling anyone (it leaves the instance; the
/// party goes on at the gateway). A local party with no member left here is freed.
pub(crate) fn forget(st: &mut ZoneState, actor: ActorId) {
    let Some(pid) = st.get_mut(actor).and_then(|a| a.party.take()) else {
        return;
    };
    if local_members(st, pid).is_empty()
        && let Some(p) = st.parties.get_mut(pid as usize)
    {
        p.members.clear();
    }
}
