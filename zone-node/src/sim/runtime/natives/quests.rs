//! The quest log natives (`NewQuest`, `UpdateQuest`, `CompleteQuest`, `DeleteQuest`,
//! `QuestStatus$`, `QuestComplete`) over [`crate::sim::quests`]. They act on players only;
//! for anyone else they do nothing and the readers answer `""` / 0.

use script::RStr;
use script::natives::Native;

use super::{Args, NResult, int, none, string};
use crate::sim::quests;
use crate::sim::runtime::host::ZoneHost;

/// Whether `n` is one of this module's natives.
pub fn handles(n: Native) -> bool {
    matches!(
        n,
        Native::NewQuest
            | Native::UpdateQuest
            | Native::CompleteQuest
            | Native::DeleteQuest
            | Native::QuestStatus
            | Native::QuestComplete
    )
}

/// Run one of the quest natives.
pub fn call(h: &mut ZoneHost<'_>, n: Native, a: Args<'_>) -> NResult {
    let player = h
        .actor(a.int(0))
        .filter(|id| h.st.get(*id).is_some_and(|x| x.is_player()));
    let Some(p) = player else {
        return match n {
            Native::QuestStatus => string(RStr::EMPTY),
            _ => none(),
        };
    };
    let name = a.rstr(1);
    let rgb = (a.int(3), a.int(4), a.int(5));
    match n {
        Native::NewQuest => {
            quests::new_quest(h.st, p, name.as_bytes(), a.rstr(2).as_bytes(), rgb);
            none()
        }
        Native::UpdateQuest => {
            quests::update_quest(h.st, p, name.as_bytes(), a.rstr(2).as_bytes(), rgb);
            none()
        }
        Native::CompleteQuest => {
            quests::complete_quest(h.st, p, name.as_bytes());
            none()
        }
        Native::DeleteQuest => {
            quests::delete_quest(h.st, p, name.as_bytes());
            none()
        }
        Native::QuestStatus => string(RStr::from_vec(quests::status_text(
            h.st,
            p,
            name.as_bytes(),
        ))),
        Native::QuestComplete => int(i32::from(quests::is_complete(h.st, p, name.as_bytes()))),
        _ => none(),
    }
}
