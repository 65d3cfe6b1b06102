//! Memorising abilities (`P_SpellUpdate "M"/"U"`, reference §5), when the world's
//! `RequireMemorise` is on: a spell must sit in one of the 10 memorised slots to be cast.
//!
//! `"M"` starts a memorisation that completes [`MEMORISE_MS`] later (the client runs its
//! own 6-second bar; the server sends nothing, as in Realm Crafter), in the housekeeping
//! phase ([`complete_due`]). `"U"` empties the slot at once. Differences from Realm
//! Crafter: the index is the client's own numbering (`spells` module docs), so it names
//! the spell the player meant; memorising a spell already memorised or being memorised,
//! or with every slot taken or promised, is refused and counted (Realm Crafter filled two
//! slots with one spell, or dropped the request silently when the 6 s were up); a
//! memorisation survives SetArea with its remaining time; completing one keeps the
//! spell's recharge (Realm Crafter zeroed a charge, and V1 the wrong one), so memorising
//! again cannot skip a cooldown.

use super::super::events::{MEMORISED_EMPTY, MEMORISED_SLOTS, PlayerKey, Rejection};
use super::super::state::{ActorId, ZoneState};
use shared::internal::SPELL_VIEW_HOLE;

/// How long a memorisation takes (Realm Crafter: more than 6000 ms).
pub const MEMORISE_MS: u64 = 6000;

/// Most memorisations one player may have in progress (one per slot).
pub const MAX_PENDING: usize = MEMORISED_SLOTS;

/// The spell the client numbers `index`, if it still knows one there.
fn view_spell(st: &ZoneState, id: ActorId, index: u16) -> Option<u16> {
    let a = st.get(id)?;
    let spell = *a.player_data.as_ref()?.spell_view.get(usize::from(index))?;
    (spell != SPELL_VIEW_HOLE && a.spells.iter().any(|k| k.id == spell)).then_some(spell)
}

/// `"M"` + index: start memorising the spell the client numbers `index`.
pub(crate) fn request(st: &mut ZoneState, player: PlayerKey, id: ActorId, index: u16) {
    if !st.content.rules.require_memorise {
        st.reject(Some(player), Rejection::SpellRefused);
        return;
    }
    let Some(spell) = view_spell(st, id, index) else {
        st.reject(Some(player), Rejection::SpellRefused);
        return;
    };
    let now = st.now_ms;
    let Some(a) = st.get_mut(id) else { return };
    let taken = a
        .memorised
        .iter()
        .filter(|m| **m != MEMORISED_EMPTY)
        .count();
    let already = a.memorised.contains(&spell);
    let Some(p) = a.player_data.as_mut() else {
        return;
    };
    if already
        || p.memorising.iter().any(|&(s, _)| s == spell)
        || taken + p.memorising.len() >= MEMORISED_SLOTS
    {
        st.reject(Some(player), Rejection::SpellRefused);
        return;
    }
    let due = now.saturating_add(MEMORISE_MS);
    p.memorising.push((spell, due));
    st.next_memorise_ms = st.next_memorise_ms.min(due);
}

/// `"U"` + index: empty the memorised slot holding the spell the client numbers `index`.
pub(crate) fn forget_slot(st: &mut ZoneState, player: PlayerKey, id: ActorId, index: u16) {
    let spell = view_spell(st, id, index);
    let slot = spell.and_then(|s| {
        st.get(id)
            .and_then(|a| a.memorised.iter().position(|m| *m == s))
    });
    let (Some(slot), true) = (slot, st.content.rules.require_memorise) else {
        st.reject(Some(player), Rejection::SpellRefused);
        return;
    };
    if let Some(m) = st.get_mut(id).and_then(|a| a.memorised.get_mut(slot)) {
        *m = MEMORISED_EMPTY;
    }
}

/// The housekeeping phase: every memorisation whose time has come puts its spell in the
/// first empty slot (if it is still known), then the zone's earliest due time is
/// recomputed. Looked at only once that time has passed.
pub(crate) fn complete_due(st: &mut ZoneState) {
    let now = st.now_ms;
    if now < st.next_memorise_ms {
        return;
    }
    let mut order = Vec::new();
    st.chain_collect(st.zone, super::super::state::ChainKind::Zone, &mut order);
    let mut next = u64::MAX;
    for idx in order {
        let Some(a) = st.at_mut(idx) else { continue };
        let Some(p) = a.player_data.as_mut() else {
            continue;
        };
        if p.memorising.is_empty() {
            continue;
        }
        let (done, pending): (Vec<_>, Vec<_>) =
            p.memorising.iter().partition(|&&(_, due)| due <= now);
        p.memorising = pending;
        if let Some(t) = p.memorising.iter().map(|&(_, t)| t).min() {
            next = next.min(t);
        }
        for (spell, _) in done {
            let known = a.spells.iter().any(|k| k.id == spell);
            if !known || a.memorised.contains(&spell) {
                continue;
            }
            if let Some(slot) = a.memorised.iter_mut().find(|m| **m == MEMORISED_EMPTY) {
                *slot = spell;
            }
        }
    }
    st.next_memorise_ms = next;
}
