//! Abilities (Realm Crafter's spells, reference §5): the spells an actor knows and their
//! levels (this module: `AddAbility`, `DeleteAbility`, `SetAbilityLevel` and the queries),
//! memorising ([`memorise`]) and casting ([`cast`]); the recharge step is
//! [`super::recharge`].
//!
//! The known list is kept in learning order, without holes: a forgotten spell is removed.
//! The client numbers the spells it is told of in arrival order and leaves a hole where it
//! forgets one, and `P_SpellUpdate "M"/"U"` name a spell by *that* index, so each player
//! also carries the client's numbering (`PlayerData::spell_view`): built from the known
//! list at login (the order of the login `"S"` block), appended to on every `"A"`, holed on
//! every `"D"`, carried across SetArea. That removes Realm Crafter's index desync (a
//! delete then an add, or a hole in the save, made `"M"` memorise the wrong spell).
//! Memorised slots and recharge are keyed by spell id.

pub mod cast;
pub mod memorise;

use shared::internal::SPELL_VIEW_HOLE;
use shared::proto::{KnownSpell as KnownSpellWire, KnownSpellUpdate};

use super::events::{KnownSpell, MEMORISED_EMPTY};
use super::packets;
use super::state::{ActorId, ZoneState};

/// Most spells one actor may know (Realm Crafter's `KnownSpells[1000]`).
pub const MAX_KNOWN: usize = 1000;

/// Why a script's ability request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpellError {
    /// No spell of the world has that name.
    #[error("no ability is named {0:?}")]
    UnknownSpell(String),
    /// A level outside `1..=65535`.
    #[error("ability level {0} is outside 1..=65535")]
    BadLevel(i64),
    /// The actor already knows [`MAX_KNOWN`] spells (or its client's list, holes
    /// included, is full).
    #[error("the actor already knows {MAX_KNOWN} abilities")]
    TooMany,
}

/// The world's spell id for a name (`FindSpell`).
pub fn spell_id(st: &ZoneState, name: &str) -> Result<u16, SpellError> {
    st.content
        .world
        .spell_by_name(name)
        .map(|s| s.id)
        .ok_or_else(|| SpellError::UnknownSpell(name.trim().to_owned()))
}

/// A spell's name ("" for an id the world does not have).
fn spell_name(st: &ZoneState, spell: u16) -> String {
    st.content
        .world
        .spell(spell)
        .map(|s| s.name.clone())
        .unwrap_or_default()
}

/// The actor's known entry for a spell id.
pub fn known(st: &ZoneState, id: ActorId, spell: u16) -> Option<KnownSpell> {
    st.get(id)?.spells.iter().find(|k| k.id == spell).cloned()
}

/// `AbilityMemorised`: whether the spell sits in one of the 10 memorised slots.
#[doc(alias = "AbilityMemorised")]
pub fn is_memorised(st: &ZoneState, id: ActorId, spell: u16) -> bool {
    st.get(id)
        .is_some_and(|a| spell != MEMORISED_EMPTY && a.memorised.contains(&spell))
}

/// The `"A"` record of a known spell, as the login `"S"` block has it.
fn wire_record(st: &ZoneState, id: ActorId, k: &KnownSpell) -> KnownSpellWire {
    let def = st.content.world.spell(k.id);
    KnownSpellWire {
        level: k.level,
        id: k.id,
        thumb: def.map_or(0, |d| d.thumbnail),
        // The client's field is 16 bits (Realm Crafter cut it the same way).
        recharge: def.map_or(0, |d| {
            u16::try_from(d.recharge_ms.clamp(0, i32::from(u16::MAX))).unwrap_or(u16::MAX)
        }),
        name: packets::text(def.map_or("", |d| d.name.as_str())),
        description: packets::text(def.map_or("", |d| d.description.as_str())),
        memorised: u8::from(is_memorised(st, id, k.id)),
    }
}

/// `AddAbility` / `AddSpell`: learn a spell at `level` (0 and below become 1). Learning a
/// spell already known does nothing (the script's rule; Realm Crafter's GM `/ability`
/// learned duplicates). A player is sent `"A"`. Returns whether it was learned.
#[doc(alias = "AddAbility")]
#[doc(alias = "AddSpell")]
pub fn learn(st: &mut ZoneState, id: ActorId, spell: u16, level: i64) -> Result<bool, SpellError> {
    let level = if level <= 0 { 1 } else { level };
    let level = u16::try_from(level).map_err(|_| SpellError::BadLevel(level))?;
    let Some(a) = st.get(id) else {
        return Ok(false);
    };
    if a.spells.iter().any(|k| k.id == spell) {
        return Ok(false);
    }
    // The client's list holds 1000 entries, holes included.
    let view_full = a
        .player_data
        .as_ref()
        .is_some_and(|p| p.spell_view.len() >= MAX_KNOWN);
    if a.spells.len() >= MAX_KNOWN || view_full {
        return Err(SpellError::TooMany);
    }
    let k = KnownSpell {
        id: spell,
        level,
        charge_ms: 0,
    };
    if let Some(a) = st.get_mut(id) {
        a.spells.push(k.clone());
        if let Some(p) = a.player_data.as_mut() {
            p.spell_view.push(spell);
        }
    }
    if st.get(id).is_some_and(|a| a.is_player()) {
        let spell = wire_record(st, id, &k);
        st.send_packet(id, &KnownSpellUpdate::Added { spell });
    }
    Ok(true)
}

/// `DeleteAbility` / `DeleteSpell`: forget a spell; it leaves the memorised slots, any
/// memorisation in progress and the saved action bar. A player is sent `"D"` + name (its
/// client clears the spell from its bar, slots and list). Returns whether it was known.
#[doc(alias = "DeleteAbility")]
#[doc(alias = "DeleteSpell")]
pub fn forget(st: &mut ZoneState, id: ActorId, spell: u16) -> bool {
    let name = spell_name(st, spell);
    let Some(a) = st.get_mut(id) else {
        return false;
    };
    let before = a.spells.len();
    a.spells.retain(|k| k.id != spell);
    if a.spells.len() == before {
        return false;
    }
    for m in a.memorised.iter_mut().filter(|m| **m == spell) {
        *m = MEMORISED_EMPTY;
    }
    let is_player = a.is_player();
    if let Some(p) = a.player_data.as_mut() {
        for v in p.spell_view.iter_mut().filter(|v| **v == spell) {
            *v = SPELL_VIEW_HOLE;
        }
        p.memorising.retain(|&(s, _)| s != spell);
        let entry = format!("S{name}");
        for slot in p.action_bar.iter_mut() {
            if slot.eq_ignore_ascii_case(&entry) {
                slot.clear();
            }
        }
    }
    if is_player {
        st.send_packet(
            id,
            &KnownSpellUpdate::Deleted {
                spell_name: packets::text(&name),
            },
        );
    }
    true
}

/// `SetAbilityLevel`: set a known spell's level (`1..=65535`). A player is sent `"L"`.
/// Returns whether the spell was known.
#[doc(alias = "SetAbilityLevel")]
pub fn set_level(
    st: &mut ZoneState,
    id: ActorId,
    spell: u16,
    level: i64,
) -> Result<bool, SpellError> {
    let lv = u16::try_from(level)
        .ok()
        .filter(|l| *l >= 1)
        .ok_or(SpellError::BadLevel(level))?;
    let Some(a) = st.get_mut(id) else {
        return Ok(false);
    };
    let Some(k) = a.spells.iter_mut().find(|k| k.id == spell) else {
        return Ok(false);
    };
    k.level = lv;
    if a.is_player() {
        let name = spell_name(st, spell);
        st.send_packet(
            id,
            &KnownSpellUpdate::Level {
                level: u32::from(lv),
                spell_name: packets::text(&name),
            },
        );
    }
    Ok(true)
}

/// At login: the client numbers its known spells in the order of the login `"S"` block,
/// which is the known list's order; memorisations in progress are dropped (the client
/// does not resume them).
pub(crate) fn on_login(st: &mut ZoneState, id: ActorId) {
    let Some(a) = st.get_mut(id) else { return };
    let view: Vec<u16> = a.spells.iter().map(|k| k.id).collect();
    if let Some(p) = a.player_data.as_mut() {
        p.spell_view = view;
        p.memorising.clear();
    }
}

/// An arriving player's ability session state from its saved form: the client's
/// numbering (rebuilt from the known list when missing) and its memorisations in
/// progress, their remaining time restarting now.
pub(crate) fn restore(st: &mut ZoneState, id: ActorId, s: &shared::internal::ActorStateDto) {
    let now = st.now_ms;
    let Some(a) = st.get_mut(id) else { return };
    let known: Vec<u16> = a.spells.iter().map(|k| k.id).collect();
    let Some(p) = a.player_data.as_mut() else {
        return;
    };
    p.spell_view = if s.spell_view.is_empty() {
        known
    } else {
        s.spell_view.iter().take(MAX_KNOWN).copied().collect()
    };
    p.memorising = s
        .memorising
        .iter()
        .take(memorise::MAX_PENDING)
        .map(|m| {
            (
                m.spell,
                now.saturating_add(m.remaining_ms.min(memorise::MEMORISE_MS)),
            )
        })
        .collect();
    let next = p.memorising.iter().map(|&(_, t)| t).min();
    if let Some(t) = next {
        st.next_memorise_ms = st.next_memorise_ms.min(t);
    }
}
