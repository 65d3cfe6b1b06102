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
//! A sim used on its own (tests, the bench) still has Realm Crafter's single-server
//! rules below: `/invite name` (an online player of the instance, not in a party, not
//! self; the inviter's party not full), `/accept` (creates the inviter's party if needed
//! and joins it), `/leave` (a party left with one member dissolves), each change sending
//! `P_PartyUpdate` (the *other* members' names) to the members in the instance. The
//! gateway intercepts these words, so in the cluster they never reach a zone.

use shared::proto::PartyUpdate;

use super::events::Rejection;
use super::packets::{self, CHAT_GREEN, CHAT_RED};
use super::state::{ActorId, ChainKind, Party, ZoneState};

/// Maximum members.
pub const MAX_MEMBERS: usize = 8;

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

/// `P_PartyUpdate` to every local member of `pid`.
fn send_updates(st: &mut ZoneState, pid: u32) {
    let Some(names) = st.parties.get(pid as usize).map(|p| p.members.clone()) else {
        return;
    };
    for m in local_members(st, pid) {
        let me = st.get(m).map(|a| a.name.clone()).unwrap_or_default();
        let members = names
            .iter()
            .filter(|n| !n.eq_ignore_ascii_case(&me))
            .map(|n| packets::text(n))
            .collect();
        st.send_packet(m, &PartyUpdate { members });
    }
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

/// `/invite name`.
pub(crate) fn invite(st: &mut ZoneState, inviter: ActorId, name: &str) {
    let Some(a) = st.get(inviter) else { return };
    let (player, me, pid) = (a.player, a.name.clone(), a.party);
    let full = pid
        .and_then(|p| st.parties.get(p as usize))
        .is_some_and(|p| p.members.len() >= MAX_MEMBERS);
    let Some(t) = online_by_name(st, name).filter(|t| *t != inviter) else {
        st.reject(player, Rejection::UnknownTarget);
        packets::send_chat(st, inviter, CHAT_RED, "Player not found");
        return;
    };
    if full || st.get(t).is_some_and(|a| a.party.is_some()) {
        st.reject(player, Rejection::Invalid);
        packets::send_chat(st, inviter, CHAT_RED, "Cannot invite that player");
        return;
    }
    st.invites.retain(|(who, _)| *who != t);
    st.invites.push((t, me.clone()));
    let text = format!("{me} has invited you to join a party (type /accept)");
    packets::send_chat(st, t, CHAT_GREEN, &text);
}

/// `/accept`.
pub(crate) fn accept(st: &mut ZoneState, actor: ActorId) {
    let player = st.get(actor).and_then(|a| a.player);
    let Some(pos) = st.invites.iter().position(|(who, _)| *who == actor) else {
        st.reject(player, Rejection::Invalid);
        return;
    };
    let (_, inviter_name) = st.invites.swap_remove(pos);
    let Some(inviter) = online_by_name(st, &inviter_name) else {
        st.reject(player, Rejection::UnknownTarget);
        return;
    };
    if st.get(actor).is_some_and(|a| a.party.is_some()) {
        st.reject(player, Rejection::Invalid);
        return;
    }
    let pid = match st.get(inviter).and_then(|a| a.party) {
        Some(p) => p,
        None => {
            let pid = alloc(
                st,
                Party {
                    members: vec![inviter_name.clone()],
                },
            );
            if let Some(a) = st.get_mut(inviter) {
                a.party = Some(pid);
            }
            pid
        }
    };
    let name = st.get(actor).map(|a| a.name.clone()).unwrap_or_default();
    let Some(p) = st.parties.get_mut(pid as usize) else {
        return;
    };
    if p.members.len() >= MAX_MEMBERS {
        st.reject(player, Rejection::Invalid);
        packets::send_chat(st, actor, CHAT_RED, "That party is full");
        return;
    }
    p.members.push(name);
    if let Some(a) = st.get_mut(actor) {
        a.party = Some(pid);
    }
    send_updates(st, pid);
    let hooks = st.hooks.clone();
    hooks.on_party_join(st, actor, pid);
}

/// The gateway's member list for `actor`'s party (empty: none): the local party with
/// the same leader takes the list; no packets (the gateway sent `P_PartyUpdate`).
pub(crate) fn set_members(st: &mut ZoneState, actor: ActorId, members: Vec<String>) {
    let before = st.get(actor).and_then(|a| a.party);
    forget(st, actor);
    let Some(leader) = members.first().cloned() else {
        if let Some(pid) = before {
            let hooks = st.hooks.clone();
            hooks.on_party_leave(st, actor, pid);
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
        let hooks = st.hooks.clone();
        hooks.on_party_join(st, actor, pid);
    }
}

/// Forget `actor`'s local party entry without telling anyone (it leaves the instance; the
/// party goes on at the gateway). A local party with no member left here is freed.
pub(crate) fn forget(st: &mut ZoneState, actor: ActorId) {
    st.invites.retain(|(who, _)| *who != actor);
    let Some(pid) = st.get_mut(actor).and_then(|a| a.party.take()) else {
        return;
    };
    if local_members(st, pid).is_empty()
        && let Some(p) = st.parties.get_mut(pid as usize)
    {
        p.members.clear();
    }
}

/// `/leave` and `LeaveParty` on disconnect or transfer.
#[doc(alias = "LeaveParty")]
pub(crate) fn leave(st: &mut ZoneState, actor: ActorId) {
    st.invites.retain(|(who, _)| *who != actor);
    let Some(a) = st.get_mut(actor) else { return };
    let Some(pid) = a.party.take() else { return };
    let name = a.name.clone();
    st.send_packet(actor, &PartyUpdate::default());
    let hooks = st.hooks.clone();
    hooks.on_party_leave(st, actor, pid);
    let Some(p) = st.parties.get_mut(pid as usize) else {
        return;
    };
    p.members.retain(|n| !n.eq_ignore_ascii_case(&name));
    if p.members.len() <= 1 {
        // Dissolve: the last member is alone.
        let rest = std::mem::take(&mut p.members);
        for n in rest {
            if let Some(id) = online_by_name(st, &n)
                && let Some(a) = st.get_mut(id)
                && a.party == Some(pid)
            {
                a.party = None;
                st.send_packet(id, &PartyUpdate::default());
            }
        }
        return;
    }
    send_updates(st, pid);
}
