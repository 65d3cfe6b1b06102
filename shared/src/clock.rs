//! The game clock (`UpdateEnvironment`, `GetSeason`, `GetMonth`; reference §8) as a pure
//! function of real time: every node that knows the world's [`Environment`] and the
//! cluster's clock epoch computes the same game time without messages.
//!
//! Realm Crafter ticked its clock one game minute at a time on the server's main loop and
//! saved the first 16 bytes of `Environment.dat` at shutdown. Here the clock is
//! `start + (now - epoch) / step` game minutes, where `start` is the stored year, day and
//! time, `epoch` the real time (Unix ms) at which the clock read that value, and
//! `step = 60000 / TimeFactor` ms (integer division, as Realm Crafter). Differences from
//! Realm Crafter (all in `docs/simulation.md`, "The game clock"):
//!
//! * a year has exactly the year length (`MonthStartDay(0)`) days: Realm Crafter wrapped
//!   only when `Day > length`, so its year had one day more, in "Month 13";
//! * the season is computed after the year wraps (Realm Crafter computed it before);
//! * an empty or short `Environment.dat`, a TimeFactor of 0 or below, or an unusable
//!   calendar gets Realm Crafter's `CreateEnvironment` defaults instead of a division by
//!   zero.

use crate::content::model::{Environment, Month, Season};

/// Minutes in a game day.
pub const MINUTES_PER_DAY: i64 = 24 * 60;
/// Default game minutes per real minute (`CreateEnvironment`).
pub const DEFAULT_TIME_FACTOR: i64 = 10;
/// Default months (`CreateEnvironment`).
pub const DEFAULT_MONTHS: i32 = 12;
/// Default month length in days.
pub const DEFAULT_MONTH_LENGTH: i32 = 28;
/// Default seasons.
pub const DEFAULT_SEASONS: i32 = 4;
/// Default dusk hour.
pub const DEFAULT_DUSK: i32 = 18;
/// Default dawn hour.
pub const DEFAULT_DAWN: i32 = 6;

/// Month slots in the calendar (`MonthName$(0..19)`).
const MONTH_SLOTS: usize = 20;
/// Season slots (`SeasonName$(0..11)`).
const SEASON_SLOTS: usize = 12;

/// A point of game time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GameTime {
    /// Year (`Year()`).
    pub year: i64,
    /// Day of the year, 0-based, below the year length (`Day()`).
    pub day: i32,
    /// Hour 0..=23 (`Hour()`).
    pub hour: i32,
    /// Minute 0..=59 (`Minute()`).
    pub minute: i32,
    /// Month index 0..=19 (`GetMonth`).
    pub month: usize,
    /// Season index 0..=11 (`GetSeason`).
    pub season: usize,
}

impl GameTime {
    /// Minutes since midnight (what `WaitTime` compares).
    pub fn minute_of_day(&self) -> i32 {
        self.hour * 60 + self.minute
    }
}

/// The game clock: the world's calendar plus the cluster's epoch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GameClock {
    /// Real ms per game minute (>= 1).
    step_ms: u64,
    /// Days in a year (>= 1).
    year_len: i64,
    /// Game minutes since year 0 day 0 00:00 at the epoch.
    start: i64,
    /// Real time (Unix ms) at which the clock read `start`.
    epoch_ms: u64,
    /// 20 months (names and start days; slot 0's start is the year length).
    months: Vec<Month>,
    /// 12 seasons.
    seasons: Vec<Season>,
}

/// Whether a calendar table is unusable (no slot has a name or a start day).
fn blank_months(m: &[Month]) -> bool {
    m.iter().all(|x| x.name.is_empty() && x.start_day == 0)
}

fn blank_seasons(s: &[Season]) -> bool {
    s.iter().all(|x| x.name.is_empty() && x.start_day == 0)
}

/// Realm Crafter's default months (`CreateEnvironment`): "Month 1".."Month 20", 28 days
/// each, slot 0 holding the year length 336.
pub fn default_months() -> Vec<Month> {
    let year = DEFAULT_MONTHS * DEFAULT_MONTH_LENGTH;
    (0..MONTH_SLOTS as i32)
        .map(|i| Month {
            name: format!("Month {}", i + 1),
            start_day: if i == 0 {
                year
            } else {
                DEFAULT_MONTH_LENGTH * i
            },
        })
        .collect()
}

/// Realm Crafter's default seasons: "Season 1".."Season 12", 84 days each, dusk 18,
/// dawn 6, slot 0 holding the year length.
pub fn default_seasons() -> Vec<Season> {
    let year = DEFAULT_MONTHS * DEFAULT_MONTH_LENGTH;
    let len = year / DEFAULT_SEASONS;
    (0..SEASON_SLOTS as i32)
        .map(|i| Season {
            name: format!("Season {}", i + 1),
            start_day: if i == 0 { year } else { len * i },
            dusk_hour: DEFAULT_DUSK,
            dawn_hour: DEFAULT_DAWN,
        })
        .collect()
}

impl GameClock {
    /// The clock of `env` that read its stored time at real time `epoch_ms` (Unix ms).
    #[doc(alias = "LoadEnvironment")]
    pub fn new(env: &Environment, epoch_ms: u64) -> Self {
        let mut months = env.months.clone();
        if blank_months(&months) || months.first().is_none_or(|m| m.start_day <= 0) {
            months = default_months();
        }
        months.resize(MONTH_SLOTS, Month::default());
        let mut seasons = env.seasons.clone();
        if blank_seasons(&seasons) {
            seasons = default_seasons();
        }
        seasons.resize(SEASON_SLOTS, Season::default());
        let year_len = i64::from(months.first().map_or(1, |m| m.start_day.max(1)));
        let factor = if env.time_factor > 0 {
            i64::from(env.time_factor)
        } else {
            DEFAULT_TIME_FACTOR
        };
        let step_ms = u64::try_from((60_000 / factor).max(1)).unwrap_or(1);
        let day = i64::from(env.day).clamp(0, year_len - 1);
        let hour = i64::from(env.hour).clamp(0, 23);
        let minute = i64::from(env.minute).clamp(0, 59);
        let start = (i64::from(env.year) * year_len + day) * MINUTES_PER_DAY + hour * 60 + minute;
        Self {
            step_ms,
            year_len,
            start,
            epoch_ms,
            months,
            seasons,
        }
    }

    /// Real ms per game minute.
    pub fn step_ms(&self) -> u64 {
        self.step_ms
    }

    /// Days in a year.
    pub fn year_len(&self) -> i64 {
        self.year_len
    }

    /// The clock's epoch (Unix ms).
    pub fn epoch_ms(&self) -> u64 {
        self.epoch_ms
    }

    /// Game minutes since year 0 at real time `unix_ms` (before the epoch: the start).
    pub fn total_minutes(&self, unix_ms: u64) -> i64 {
        let elapsed = unix_ms.saturating_sub(self.epoch_ms) / self.step_ms;
        self.start
            .saturating_add(i64::try_from(elapsed).unwrap_or(i64::MAX))
    }

    /// The game time at real time `unix_ms`.
    #[doc(alias = "UpdateEnvironment")]
    pub fn at(&self, unix_ms: u64) -> GameTime {
        let total = self.total_minutes(unix_ms);
        let days = total.div_euclid(MINUTES_PER_DAY);
        let in_day = total.rem_euclid(MINUTES_PER_DAY);
        let year = days.div_euclid(self.year_len);
        let day = i32::try_from(days.rem_euclid(self.year_len)).unwrap_or(0);
        let hour = i32::try_from(in_day / 60).unwrap_or(0);
        let minute = i32::try_from(in_day % 60).unwrap_or(0);
        GameTime {
            year,
            day,
            hour,
            minute,
            month: self.month_of(day),
            season: self.season_of(day),
        }
    }

    /// The month of a day of the year: the first `i` in 0..=18 with `day < start(i+1)`,
    /// else 19.
    #[doc(alias = "GetMonth")]
    pub fn month_of(&self, day: i32) -> usize {
        (0..MONTH_SLOTS - 1)
            .find(|&i| self.months.get(i + 1).is_some_and(|m| day < m.start_day))
            .unwrap_or(MONTH_SLOTS - 1)
    }

    /// The season of a day: the first `i` in 0..=10 with `day < start(i+1)`, else 11.
    #[doc(alias = "GetSeason")]
    pub fn season_of(&self, day: i32) -> usize {
        (0..SEASON_SLOTS - 1)
            .find(|&i| self.seasons.get(i + 1).is_some_and(|s| day < s.start_day))
            .unwrap_or(SEASON_SLOTS - 1)
    }

    /// A month's name (`MonthName$`).
    pub fn month_name(&self, month: usize) -> &str {
        self.months.get(month).map_or("", |m| m.name.as_str())
    }

    /// A season's name (`SeasonName$`).
    pub fn season_name(&self, season: usize) -> &str {
        self.seasons.get(season).map_or("", |s| s.name.as_str())
    }

    /// The first day of the year of a month (month 0 starts at day 0).
    pub fn month_start(&self, month: usize) -> i32 {
        if month == 0 {
            return 0;
        }
        self.months.get(month).map_or(0, |m| m.start_day)
    }

    /// `(dusk hour, dawn hour)` of a season.
    pub fn dusk_dawn(&self, season: usize) -> (i32, i32) {
        self.seasons
            .get(season)
            .map_or((DEFAULT_DUSK, DEFAULT_DAWN), |s| (s.dusk_hour, s.dawn_hour))
    }

    /// Whether it is night (from the season's dusk hour until its dawn hour).
    pub fn is_night(&self, t: &GameTime) -> bool {
        let (dusk, dawn) = self.dusk_dawn(t.season);
        t.hour >= dusk || t.hour < dawn
    }

    /// The day of the month, 1-based, as `/date` shows it.
    pub fn day_of_month(&self, t: &GameTime) -> i32 {
        t.day - self.month_start(t.month) + 1
    }

    /// `/time`'s text: `"Time: HH:MM"`.
    pub fn time_text(t: &GameTime) -> String {
        format!("Time: {:02}:{:02}", t.hour, t.minute)
    }

    /// `/date`'s text: `"<Month> <d><st|nd|rd|th>, <Year>"`.
    pub fn date_text(&self, t: &GameTime) -> String {
        let d = self.day_of_month(t);
        format!(
            "{} {d}{}, {}",
            self.month_name(t.month),
            ordinal_suffix(d),
            t.year
        )
    }

    /// `/season`'s text: `"Season: <name>"`.
    pub fn season_text(&self, t: &GameTime) -> String {
        format!("Season: {}", self.season_name(t.season))
    }

    /// Realm Crafter's `Environment` fields as they read at real time `unix_ms` (for the
    /// login block "E"): year, day, hour and minute from the clock, the effective
    /// TimeFactor, months and seasons (with the defaults filled in).
    pub fn environment_at(&self, unix_ms: u64) -> Environment {
        let t = self.at(unix_ms);
        Environment {
            year: i32::try_from(t.year).unwrap_or(i32::MAX),
            day: t.day,
            hour: t.hour,
            minute: t.minute,
            time_factor: i32::try_from(60_000 / self.step_ms.max(1)).unwrap_or(10),
            months: self.months.clone(),
            seasons: self.seasons.clone(),
        }
    }
}

/// Realm Crafter's ordinal suffix: st/nd/rd by the last digit unless the number is
/// exactly 11, 12 or 13, else th.
pub fn ordinal_suffix(n: i32) -> &'static str {
    if matches!(n, 11..=13) {
        return "th";
    }
    match n.rem_euclid(10) {
        1 => "st",
        2 => "nd",
        3 => "rd",
        _ => "th",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn env() -> Environment {
        Environment::default()
    }

    #[test]
    fn empty_environment_gets_rc_defaults() {
        let c = GameClock::new(&env(), 1000);
        assert_eq!(c.year_len(), 336);
        assert_eq!(c.step_ms(), 6000);
        let t = c.at(1000);
        assert_eq!((t.year, t.day, t.hour, t.minute), (1, 1, 12, 0));
        assert_eq!(c.month_name(t.month), "Month 1");
        assert_eq!(c.season_name(t.season), "Season 1");
        assert_eq!(GameClock::time_text(&t), "Time: 12:00");
        assert_eq!(c.date_text(&t), "Month 1 2nd, 1");
        assert_eq!(c.season_text(&t), "Season: Season 1");
        assert!(!c.is_night(&t));
    }

    #[test]
    fn time_factor_zero_is_the_default() {
        let e = Environment {
            time_factor: 0,
            ..env()
        };
        assert_eq!(GameClock::new(&e, 0).step_ms(), 6000);
        let e = Environment {
            time_factor: -3,
            ..env()
        };
        assert_eq!(GameClock::new(&e, 0).step_ms(), 6000);
        let e = Environment {
            time_factor: 1_000_000,
            ..env()
        };
        assert_eq!(GameClock::new(&e, 0).step_ms(), 1);
    }

    #[test]
    fn minutes_advance_by_step() {
        let c = GameClock::new(&env(), 0);
        assert_eq!(c.at(5999).minute, 0);
        assert_eq!(c.at(6000).minute, 1);
        // 12 hours later: midnight, day 2.
        let t = c.at(6000 * 60 * 12);
        assert_eq!((t.day, t.hour, t.minute), (2, 0, 0));
        // Before the epoch: the stored value.
        let c = GameClock::new(&env(), 10_000);
        assert_eq!(c.at(0).minute, 0);
    }

    #[test]
    fn year_has_exactly_its_length_and_season_follows_the_wrap() {
        let e = Environment {
            day: 335,
            hour: 23,
            minute: 59,
            ..env()
        };
        let c = GameClock::new(&e, 0);
        let t = c.at(0);
        assert_eq!((t.year, t.day), (1, 335));
        assert_eq!(c.month_name(t.month), "Month 12");
        assert_eq!(c.season_name(t.season), "Season 4");
        let t = c.at(6000);
        assert_eq!((t.year, t.day, t.hour, t.minute), (2, 0, 0, 0));
        assert_eq!(c.month_name(t.month), "Month 1");
        assert_eq!(c.season_name(t.season), "Season 1");
    }

    #[test]
    fn dates_and_suffixes() {
        for (n, s) in [
            (1, "st"),
            (2, "nd"),
            (3, "rd"),
            (4, "th"),
            (11, "th"),
            (12, "th"),
            (13, "th"),
            (21, "st"),
            (22, "nd"),
            (23, "rd"),
            (111, "st"),
        ] {
            assert_eq!(ordinal_suffix(n), s, "{n}");
        }
        let e = Environment { day: 30, ..env() };
        let c = GameClock::new(&e, 0);
        // Day 30 is the third day of Month 2.
        assert_eq!(c.date_text(&c.at(0)), "Month 2 3rd, 1");
    }

    #[test]
    fn night_follows_the_season() {
        let e = Environment { hour: 18, ..env() };
        let c = GameClock::new(&e, 0);
        assert!(c.is_night(&c.at(0)));
        let e = Environment { hour: 5, ..env() };
        let c = GameClock::new(&e, 0);
        assert!(c.is_night(&c.at(0)));
        let e = Environment { hour: 6, ..env() };
        let c = GameClock::new(&e, 0);
        assert!(!c.is_night(&c.at(0)));
    }

    #[test]
    fn environment_at_carries_the_reading() {
        let c = GameClock::new(&env(), 0);
        let e = c.environment_at(6000 * 90);
        assert_eq!((e.year, e.day, e.hour, e.minute), (1, 1, 13, 30));
        assert_eq!(e.time_factor, 10);
        assert_eq!(e.months.first().map(|m| m.start_day), Some(336));
    }

    proptest! {
        #[test]
        fn monotone_and_no_minute_skipped(start in 0u64..10_000_000_000, factor in 0i32..2000, day in -5i32..400) {
            let e = Environment { time_factor: factor, day, ..env() };
            let c = GameClock::new(&e, start);
            let mut prev = c.total_minutes(start);
            let mut prev_t = c.at(start);
            let mut now = start;
            for _ in 0..200 {
                now += c.step_ms();
                let total = c.total_minutes(now);
                prop_assert_eq!(total, prev + 1);
                let t = c.at(now);
                prop_assert!(t.day >= 0 && i64::from(t.day) < c.year_len());
                // Next minute of the previous reading.
                let mut m = prev_t.minute_of_day() + 1;
                let (mut d, mut y) = (prev_t.day, prev_t.year);
                if m == 1440 { m = 0; d += 1; if i64::from(d) == c.year_len() { d = 0; y += 1; } }
                prop_assert_eq!((t.year, t.day, t.minute_of_day()), (y, d, m));
                prev = total;
                prev_t = t;
            }
        }

        #[test]
        fn year_length_is_exact(factor in 1i32..600) {
            let e = Environment { time_factor: factor, day: 0, hour: 0, minute: 0, ..env() };
            let c = GameClock::new(&e, 0);
            let year_ms = c.step_ms() * 1440 * 336;
            prop_assert_eq!(c.at(year_ms - c.step_ms()).year, 1);
            prop_assert_eq!(c.at(year_ms - c.step_ms()).day, 335);
            let t = c.at(year_ms);
            prop_assert_eq!((t.year, t.day, t.hour, t.minute), (2, 0, 0, 0));
        }

        #[test]
        fn two_nodes_agree(epoch in 0u64..4_000_000_000_000, now in 0u64..4_000_000_000_000) {
            let a = GameClock::new(&env(), epoch);
            let b = GameClock::new(&Environment::default(), epoch);
            prop_assert_eq!(a.at(now), b.at(now));
        }
    }
}
