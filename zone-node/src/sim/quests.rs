//! The quest log (`NewQuest`, `UpdateQuest`, `CompleteQuest`, `DeleteQuest`, `QuestStatus`,
//! `QuestComplete`): at most [`QUEST_LOG_MAX`] entries per character, each a name and a
//! status (three colour bytes, then the text), kept in [`PlayerData::quests`] so it is
//! saved with the character, carried in every handoff and sent at login (the `"Q"` blocks
//! of `P_FetchCharacter`). Every change goes to the owner as `P_QuestLog` (23).
//!
//! Names match case-insensitively, as the client matches them. Quests exist only for
//! players; for anyone else every call does nothing and the readers answer `""` / 0.
//!
//! [`PlayerData::quests`]: super::state::PlayerData::quests

use shared::proto::{QUEST_COMPLETED, QuestLog};
use shared::wire::RcString;

use super::state::{ActorId, ZoneState};

/// Entries one quest log holds (Realm Crafter's 500).
pub const QUEST_LOG_MAX: usize = 500;

/// The longest quest name (its `str8` on the wire).
pub const NAME_MAX: usize = 255;

/// Bytes as the latin-1 `String` the character keeps.
fn latin1(b: &[u8]) -> String {
    b.iter().map(|&c| char::from(c)).collect()
}

/// A stored latin-1 `String` as wire bytes (characters above 255 become `?`).
fn bytes(s: &str) -> Vec<u8> {
    s.chars()
        .map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?'))
        .collect()
}

fn name_bytes(name: &[u8]) -> &[u8] {
    name.get(..NAME_MAX).unwrap_or(name)
}

/// The stored status: colour bytes, then the text.
fn status_of(text: &[u8], rgb: (i32, i32, i32)) -> Vec<u8> {
    let low = |v: i32| v.to_le_bytes()[0];
    let mut s = vec![low(rgb.0), low(rgb.1), low(rgb.2)];
    s.extend_from_slice(text);
    s
}

fn position(st: &ZoneState, actor: ActorId, name: &[u8]) -> Option<usize> {
    let pd = st.get(actor)?.player_data.as_ref()?;
    pd.quests
        .iter()
        .position(|(n, _)| !n.is_empty() && bytes(n).eq_ignore_ascii_case(name))
}

/// `NewQuest(actor, name, status, r, g, b)`: add the quest unless the log has it or is
/// full; `P_QuestLog "N"`.
#[doc(alias = "NewQuest")]
pub fn new_quest(
    st: &mut ZoneState,
    actor: ActorId,
    name: &[u8],
    text: &[u8],
    rgb: (i32, i32, i32),
) {
    let name = name_bytes(name);
    if name.is_empty() || position(st, actor, name).is_some() {
        return;
    }
    let status = status_of(text, rgb);
    let Some(pd) = st.get_mut(actor).and_then(|a| a.player_data.as_mut()) else {
        return;
    };
    let entry = (latin1(name), latin1(&status));
    if let Some(free) = pd.quests.iter_mut().find(|(n, _)| n.is_empty()) {
        *free = entry;
    } else if pd.quests.len() < QUEST_LOG_MAX {
        pd.quests.push(entry);
    } else {
        return;
    }
    st.send_packet(
        actor,
        &QuestLog::New {
            name: RcString::from(name),
            status: RcString(status),
        },
    );
}

/// Set a quest's status and send `"U"` (the name upper-cased, as Realm Crafter sends it).
fn set_status(st: &mut ZoneState, actor: ActorId, name: &[u8], status: Vec<u8>) {
    let Some(i) = position(st, actor, name_bytes(name)) else {
        return;
    };
    let Some(pd) = st.get_mut(actor).and_then(|a| a.player_data.as_mut()) else {
        return;
    };
    let Some(entry) = pd.quests.get_mut(i) else {
        return;
    };
    entry.1 = latin1(&status);
    let upper = bytes(&entry.0).to_ascii_uppercase();
    st.send_packet(
        actor,
        &QuestLog::Update {
            name: RcString(upper),
            status: RcString(status),
        },
    );
}

/// `UpdateQuest(actor, name, status, r, g, b)`.
#[doc(alias = "UpdateQuest")]
pub fn update_quest(
    st: &mut ZoneState,
    actor: ActorId,
    name: &[u8],
    text: &[u8],
    rgb: (i32, i32, i32),
) {
    set_status(st, actor, name, status_of(text, rgb));
}

/// `CompleteQuest(actor, name)`: the status becomes the "Completed" marker.
#[doc(alias = "CompleteQuest")]
pub fn complete_quest(st: &mut ZoneState, actor: ActorId, name: &[u8]) {
    set_status(st, actor, name, QUEST_COMPLETED.to_vec());
}

/// `DeleteQuest(actor, name)`: `P_QuestLog "D"`.
#[doc(alias = "DeleteQuest")]
pub fn delete_quest(st: &mut ZoneState, actor: ActorId, name: &[u8]) {
    let Some(i) = position(st, actor, name_bytes(name)) else {
        return;
    };
    let Some(pd) = st.get_mut(actor).and_then(|a| a.player_data.as_mut()) else {
        return;
    };
    if i >= pd.quests.len() {
        return;
    }
    let (n, _) = pd.quests.remove(i);
    st.send_packet(
        actor,
        &QuestLog::Delete {
            name: RcString(bytes(&n).to_ascii_uppercase()),
        },
    );
}

/// The stored status of a quest (colour bytes included), if the actor has it.
pub fn status(st: &ZoneState, actor: ActorId, name: &[u8]) -> Option<Vec<u8>> {
    let i = position(st, actor, name_bytes(name))?;
    let pd = st.get(actor)?.player_data.as_ref()?;
    pd.quests.get(i).map(|(_, s)| bytes(s))
}

/// `QuestStatus$(actor, name)`: the text without its colour bytes; `""` if unknown (a
/// completed quest gives `Chr(254)`).
#[doc(alias = "QuestStatus")]
pub fn status_text(st: &ZoneState, actor: ActorId, name: &[u8]) -> Vec<u8> {
    status(st, actor, name)
        .and_then(|s| s.get(3..).map(<[u8]>::to_vec))
        .unwrap_or_default()
}

/// `QuestComplete(actor, name)`.
#[doc(alias = "QuestComplete")]
pub fn is_complete(st: &ZoneState, actor: ActorId, name: &[u8]) -> bool {
    status(st, actor, name).is_some_and(|s| s == QUEST_COMPLETED)
}
