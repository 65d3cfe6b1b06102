//! The game clock as the SDK keeps it (reference §8, `UpdateEnvironment`).
//!
//! Realm Crafter sends the clock once, in `P_FetchActors` block `"E"` (year, day, hour,
//! minute, `TimeFactor`, the calendar), and its client counts minutes on from there; it is
//! never resynced (there is no clock packet). The SDK does the same from the same block
//! ([`Connection::fetch_catalogue`]), but computes the time from the real time since the
//! block instead of counting one minute per frame, and with the server's calendar
//! ([`shared::clock::GameClock`]: a year of exactly its length). The gateway rounds the
//! block to the nearest minute, so the SDK is never more than one minute off the zones.
//!
//! The one thing that can tell it more is a `/time` reply (`254 "Time: HH:MM"`): when
//! [`Connection::next_event`] sees one whose minute differs from the SDK's, the SDK takes
//! the server's minute of the day (the nearest such time: the day is kept, or moved by one
//! across midnight) and starts that minute at the reply.

use std::time::Instant;

use shared::clock::{GameClock, GameTime};
use shared::content::model::{Environment as Calendar, Month, Season};
use shared::proto::ChatColour;

use crate::Connection;
use crate::event::Event;
use crate::login::Environment;

/// The SDK's game clock: the server's [`GameClock`] started at the moment a block (or a
/// `/time` reply) was read.
#[derive(Debug, Clone)]
pub struct SdkClock {
    /// The calendar and the time read at `synced`.
    calendar: Calendar,
    /// The clock reading `calendar` at real time 0 = `synced`.
    clock: GameClock,
    /// When the reading was taken.
    synced: Instant,
}

fn ms_since(from: Instant, now: Instant) -> u64 {
    u64::try_from(now.saturating_duration_since(from).as_millis()).unwrap_or(u64::MAX)
}

impl SdkClock {
    /// The clock of a login block read at `now`.
    pub fn from_block(e: &Environment, now: Instant) -> Self {
        let calendar = Calendar {
            year: i32::try_from(e.year).unwrap_or(i32::MAX),
            day: i32::from(e.day),
            hour: i32::from(e.hour),
            minute: i32::from(e.minute),
            time_factor: i32::from(e.time_factor),
            seasons: e
                .seasons
                .iter()
                .map(|s| Season {
                    name: s.name.to_latin1(),
                    start_day: i32::from(s.start_day),
                    dusk_hour: i32::from(s.dusk_hour),
                    dawn_hour: i32::from(s.dawn_hour),
                })
                .collect(),
            months: e
                .months
                .iter()
                .map(|m| Month {
                    name: m.name.to_latin1(),
                    start_day: i32::from(m.start_day),
                })
                .collect(),
        };
        Self::start(calendar, now)
    }

    fn start(calendar: Calendar, now: Instant) -> Self {
        let clock = GameClock::new(&calendar, 0);
        Self {
            calendar,
            clock,
            synced: now,
        }
    }

    /// The game time at `now`.
    pub fn time_at(&self, now: Instant) -> GameTime {
        self.clock.at(ms_since(self.synced, now))
    }

    /// The calendar (month and season names, dusk and dawn) with the defaults filled in.
    pub fn calendar(&self) -> &GameClock {
        &self.clock
    }

    /// Take the server's `hour:minute` (a `/time` reply) read at `now`. Nothing changes
    /// when the SDK shows that minute already; otherwise the nearest time with that minute
    /// of the day becomes the time at `now`. Returns whether the clock moved.
    pub fn resync(&mut self, hour: u8, minute: u8, now: Instant) -> bool {
        if hour > 23 || minute > 59 {
            return false;
        }
        let total = self.clock.total_minutes(ms_since(self.synced, now));
        let day = shared::clock::MINUTES_PER_DAY;
        let target = i64::from(hour) * 60 + i64::from(minute);
        // The difference in minutes of the day, in -720..720.
        let delta = (target - total.rem_euclid(day) + day / 2).rem_euclid(day) - day / 2;
        if delta == 0 {
            return false;
        }
        let t = self.clock.time_of(total + delta);
        let calendar = Calendar {
            year: i32::try_from(t.year).unwrap_or(i32::MAX),
            day: t.day,
            hour: t.hour,
            minute: t.minute,
            ..self.calendar.clone()
        };
        *self = Self::start(calendar, now);
        true
    }

    /// Resync from a chat line if it is a `/time` reply (`254 "Time: HH:MM"`).
    pub fn resync_from_chat(&mut self, colour: ChatColour, text: &str, now: Instant) -> bool {
        match (colour, parse_time_reply(text)) {
            (ChatColour::System, Some((h, m))) => self.resync(h, m, now),
            _ => false,
        }
    }
}

/// `"Time: HH:MM"` (the `/time` reply) as `(hour, minute)`.
pub fn parse_time_reply(text: &str) -> Option<(u8, u8)> {
    let hm = text.strip_prefix("Time: ")?;
    let (h, m) = hm.split_once(':')?;
    if h.len() != 2 || m.len() != 2 {
        return None;
    }
    let (h, m) = (h.parse::<u8>().ok()?, m.parse::<u8>().ok()?);
    (h < 24 && m < 60).then_some((h, m))
}

impl Connection {
    /// The game time now, from the login block ([`fetch_catalogue`](Self::fetch_catalogue))
    /// and the last `/time` reply seen by [`next_event`](Self::next_event); `None` before
    /// the catalogue was fetched.
    #[doc(alias = "UpdateEnvironment")]
    pub fn game_time(&self) -> Option<GameTime> {
        self.clock.as_ref().map(|c| c.time_at(Instant::now()))
    }

    /// The SDK's game clock (for the calendar: month and season names, night).
    pub fn game_clock(&self) -> Option<&SdkClock> {
        self.clock.as_ref()
    }

    pub(crate) fn set_clock_from_block(&mut self, e: &Environment) {
        self.clock = Some(SdkClock::from_block(e, Instant::now()));
    }

    /// What [`next_event`](Self::next_event) does with an event for the clock.
    pub(crate) fn clock_sees(&mut self, event: &Event) {
        if let (Event::Chat { colour, text }, Some(c)) = (event, self.clock.as_mut()) {
            c.resync_from_chat(*colour, text, Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use super::*;

    fn block() -> Environment {
        Environment {
            year: 3,
            day: 10,
            hour: 23,
            minute: 59,
            time_factor: 10,
            seasons: Vec::new(),
            months: Vec::new(),
        }
    }

    fn hm(t: &GameTime) -> (i64, i32, i32, i32) {
        (t.year, t.day, t.hour, t.minute)
    }

    #[test]
    fn counts_on_from_the_block() {
        let t0 = Instant::now();
        let c = SdkClock::from_block(&block(), t0);
        assert_eq!(hm(&c.time_at(t0)), (3, 10, 23, 59));
        assert_eq!(
            hm(&c.time_at(t0 + Duration::from_millis(5_999))),
            (3, 10, 23, 59)
        );
        assert_eq!(
            hm(&c.time_at(t0 + Duration::from_millis(6_000))),
            (3, 11, 0, 0)
        );
        // The calendar's defaults: 336 days, "Month 1".
        assert_eq!(c.calendar().year_len(), 336);
    }

    #[test]
    fn a_time_reply_resyncs_to_the_nearest_such_minute() {
        let t0 = Instant::now();
        let mut c = SdkClock::from_block(&block(), t0);
        // Same minute: nothing moves (the phase within the minute is kept).
        assert!(!c.resync_from_chat(ChatColour::System, "Time: 23:59", t0));
        // Across midnight forwards: the next day.
        let t1 = t0 + Duration::from_millis(1_000);
        assert!(c.resync_from_chat(ChatColour::System, "Time: 00:01", t1));
        assert_eq!(hm(&c.time_at(t1)), (3, 11, 0, 1));
        assert_eq!(
            hm(&c.time_at(t1 + Duration::from_millis(6_000))),
            (3, 11, 0, 2)
        );
        // And back.
        assert!(c.resync(23, 58, t1));
        assert_eq!(hm(&c.time_at(t1)), (3, 10, 23, 58));
        // Not a reply: another colour, another text, nonsense.
        for (colour, text) in [
            (ChatColour::Plain, "Time: 12:00"),
            (ChatColour::System, "Time: 24:00"),
            (ChatColour::System, "Time: 1:00"),
            (ChatColour::System, "Season: Summer"),
        ] {
            assert!(!c.resync_from_chat(colour, text, t1), "{text}");
        }
        assert_eq!(hm(&c.time_at(t1)), (3, 10, 23, 58));
    }
}
