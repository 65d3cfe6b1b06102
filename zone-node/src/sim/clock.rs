//! The game clock in a zone (reference §8): the time the zone's [`shared::clock::GameClock`]
//! reads at the tick's `now`, the chat commands `/time`, `/date` and `/season`, and the release of
//! scripts waiting in `WaitTime(h, m)` (the clock's natives, `Year()` … `WaitTime`, are in
//! `runtime::natives::clock`).
//!
//! The clock is a pure function of real time (`ZoneConfig::epoch_ms + now_ms`) and the
//! cluster's clock epoch (`ZoneConfig::clock_epoch_ms`), so every AreaInstance on every node
//! reads the same game time without messages. `WaitTime(h, m)` releases once the minute of
//! the day is at or past `h*60+m` (Realm Crafter compared hour and minute separately, so a
//! 10:30 wait was also released at 11:30 but not at 11:00–11:29).

use script::Value;
use shared::clock::{GameClock, GameTime};

use super::instances::{InstanceId, Wait};
use super::packets::{self, CHAT_SYSTEM};
use super::script_table;
use super::state::{ActorId, ZoneState};

/// Real time (Unix ms) of the current tick.
pub fn unix_ms(st: &ZoneState) -> u64 {
    st.cfg.epoch_ms.saturating_add(st.now_ms)
}

/// The game time at the current tick.
#[doc(alias = "UpdateEnvironment")]
pub fn game_time(st: &ZoneState) -> GameTime {
    st.clock.at(unix_ms(st))
}

/// The chat commands the clock answers: `TIME`, `DATE`, `SEASON` (LanguageString 217–219).
/// Replies go to the sender in colour 254, with Realm Crafter's exact text. Returns
/// whether `word` was one of them.
pub(crate) fn command(st: &mut ZoneState, actor: ActorId, word: &str) -> bool {
    let t = game_time(st);
    let text = match word {
        "TIME" => GameClock::time_text(&t),
        "DATE" => st.clock.date_text(&t),
        "SEASON" => st.clock.season_text(&t),
        _ => return false,
    };
    packets::send_chat(st, actor, CHAT_SYSTEM, &text);
    true
}

/// Release the `WaitTime` scripts whose time of day has come.
pub(crate) fn check_waiters(st: &mut ZoneState) {
    let now = game_time(st).minute_of_day();
    if st.scripts.time_checked_minute == Some(now) {
        return;
    }
    st.scripts.time_checked_minute = Some(now);
    let ids: Vec<InstanceId> = st.scripts.time_waiters.iter().copied().collect();
    for id in ids {
        match st.scripts.instances.get(&id).map(|i| &i.wait) {
            Some(Wait::GameTime { hour, minute }) => {
                if now >= hour * 60 + minute {
                    script_table::wake(st, id, Value::Int(0));
                }
            }
            _ => {
                st.scripts.time_waiters.remove(&id);
            }
        }
    }
}
