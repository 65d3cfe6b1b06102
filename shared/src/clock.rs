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
//!   zero;
//! * a TimeFactor above 255 is clamped to 255 ([`effective_time_factor`]): the client gets
//!   it as one byte in `P_FetchActors` block `"E"`, and counts its minutes at exactly the
//!   server's rate only if the server uses the value the client got;
//! * the login block carries the time rounded to the **nearest** minute
//!   ([`GameClock::login_environment_at`]), so the stock client, which starts its own
//!   minute at the moment it reads the block, is never more than one minute off (the
//!   property test `client_loop_stays_within_a_minute` runs Realm Crafter's client loop).

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

/// The largest TimeFactor a client can be told (`P_FetchActors` block `"E"` sends one byte).
pub const MAX_TIME_FACTOR: u8 = 255;

/// The TimeFactor the cluster runs at and tells clients, from the world's stored one:
/// 0 or below is `CreateEnvironment`'s default 10 (Realm Crafter divided by zero), above
/// 255 is 255 (Realm Crafter sent the low byte, so its client counted at another rate
/// than its server).
#[doc(alias = "TimeFactor")]
pub fn effective_time_factor(stored: i32) -> u8 {
    if stored <= 0 {
        // DEFAULT_TIME_FACTOR is 10: fits.
        return u8::try_from(DEFAULT_TIME_FACTOR).unwrap_or(MAX_TIME_FACTOR);
    }
    u8::try_from(stored).unwrap_or(MAX_TIME_FACTOR)
}

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
    /// Game minutes per real minute, 1..=255 ([`effective_time_factor`]).
    time_factor: u8,
    /// Real ms per game minute: `60000 / time_factor` (>= 235).
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
        let time_factor = effective_time_factor(env.time_factor);
        let step_ms = 60_000 / u64::from(time_factor.max(1));
        let day = i64::from(env.day).clamp(0, year_len - 1);
        let hour = i64::from(env.hour).clamp(0, 23);
        let minute = i64::from(env.minute).clamp(0, 59);
        let start = (i64::from(env.year) * year_len + day) * MINUTES_PER_DAY + hour * 60 + minute;
        Self {
            time_factor,
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

    /// Game minutes per real minute (1..=255), as the login block sends it.
    #[doc(alias = "TimeFactor")]
    pub fn time_factor(&self) -> u8 {
        self.time_factor
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
        self.time_of(self.total_minutes(unix_ms))
    }

    /// The game time `total` game minutes after year 0 day 0 00:00.
    pub fn time_of(&self, total: i64) -> GameTime {
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
            time_factor: i32::from(self.time_factor),
            months: self.months.clone(),
            seasons: self.seasons.clone(),
        }
    }

    /// What the login block `"E"` of `P_FetchActors` carries at real time `unix_ms`:
    /// [`environment_at`](Self::environment_at) half a minute later, i.e. the time
    /// rounded to the nearest minute.
    ///
    /// The block has no seconds: a client starts its own minute when it reads the block.
    /// Sending the minute in progress (rounding down) would leave it up to a whole minute
    /// behind from the start, and with its frame time on top, two minutes behind just
    /// before its next minute. Rounded, it starts at most half a minute off either way, so
    /// while its frame time plus the block's delivery stay under half a step (3 s at the
    /// default factor 10, 117 ms at 255) it is never more than one minute off
    /// (`client_loop_stays_within_a_minute`).
    #[doc(alias = "P_FetchActors")]
    pub fn login_environment_at(&self, unix_ms: u64) -> Environment {
        self.environment_at(unix_ms.saturating_add(self.step_ms / 2))
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
    }

    /// A TimeFactor the login block's one byte cannot carry is clamped to 255, so the
    /// server runs at the rate the client is told.
    #[test]
    fn time_factor_is_clamped_to_what_the_client_gets() {
        for (stored, effective) in [
            (1_000_000, 255),
            (256, 255),
            (255, 255),
            (254, 254),
            (1, 1),
            (0, 10),
            (-7, 10),
            (i32::MIN, 10),
            (i32::MAX, 255),
        ] {
            assert_eq!(effective_time_factor(stored), effective, "{stored}");
            let c = GameClock::new(
                &Environment {
                    time_factor: stored,
                    ..env()
                },
                0,
            );
            assert_eq!(c.time_factor(), effective);
            assert_eq!(c.step_ms(), 60_000 / u64::from(effective));
            assert_eq!(c.environment_at(0).time_factor, i32::from(effective));
            assert_eq!(c.login_environment_at(0).time_factor, i32::from(effective));
        }
    }

    /// The login block rounds to the nearest minute.
    #[test]
    fn the_login_block_rounds_to_the_nearest_minute() {
        let c = GameClock::new(&env(), 0);
        assert_eq!(c.login_environment_at(0).minute, 0);
        assert_eq!(c.login_environment_at(2999).minute, 0);
        assert_eq!(c.login_environment_at(3000).minute, 1);
        assert_eq!(c.login_environment_at(5999).minute, 1);
        assert_eq!(c.environment_at(5999).minute, 0);
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

    /// Realm Crafter's client clock: the fields of the login block, and one game minute
    /// per frame at most once `now − TimeUpdate > step` (Client.bb:386, the same
    /// `UpdateEnvironment` as the server's, reference §8).
    struct RcClient {
        year: u32,
        day: i32,
        hour: i32,
        minute: i32,
        /// `MonthStartDay(0)`.
        year_len: i32,
        /// `60000 / TimeFactor`, from the block's one byte.
        step: u64,
        time_update: u64,
        /// Minutes counted since the block.
        counted: i64,
    }

    impl RcClient {
        /// The block as the client reads it (the gateway's field widths), at `now`.
        fn from_block(e: &Environment, now: u64) -> Self {
            let factor = u8::try_from(e.time_factor.clamp(0, 255)).unwrap_or(0);
            Self {
                year: u32::try_from(e.year.max(0)).unwrap_or(0),
                day: e.day,
                hour: e.hour,
                minute: e.minute,
                year_len: e.months.first().map_or(0, |m| m.start_day),
                step: 60_000 / u64::from(factor.max(1)),
                time_update: now,
                counted: 0,
            }
        }

        /// One main-loop pass; whether a minute went by.
        fn frame(&mut self, now: u64) -> bool {
            let elapsed = now - self.time_update;
            if elapsed <= self.step {
                return false;
            }
            self.time_update = now - (elapsed - self.step);
            self.counted += 1;
            self.minute += 1;
            if self.minute == 60 {
                self.minute = 0;
                self.hour += 1;
                if self.hour == 24 {
                    self.hour = 0;
                    self.day += 1;
                }
            }
            if self.day > self.year_len {
                self.day = 0;
                self.year += 1;
            }
            true
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

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

        /// Realm Crafter's client (`UpdateEnvironment` in Client.bb, reference §8), started
        /// from the login block at any moment and run at frame intervals of 16..=100 ms
        /// for a game week, is never more than one game minute away from `GameClock`, at
        /// any TimeFactor the world may store; and its date agrees until it reaches its
        /// own extra day at the year's end (Realm Crafter's year has one day more, see
        /// `docs/simulation.md`).
        #[test]
        fn client_loop_stays_within_a_minute(
            stored_factor in prop_oneof![1i32..=255, Just(255i32), 256i32..1_000_000, -5i32..=0],
            epoch in 0u64..1_000_000_000_000,
            since in 0u64..100_000_000_000,
            start_day in 0i32..336,
            start_minute in 0i32..1440,
            latency in 0u64..=10,
            seed in any::<u64>(),
        ) {
            let e = Environment {
                time_factor: stored_factor,
                day: start_day,
                hour: start_minute / 60,
                minute: start_minute % 60,
                ..env()
            };
            let c = GameClock::new(&e, epoch);
            let login = epoch + since;
            let block = c.login_environment_at(login);
            let mut client = RcClient::from_block(&block, login + latency);
            let start = (i64::from(block.year) * c.year_len() + i64::from(block.day))
                * MINUTES_PER_DAY
                + i64::from(block.hour * 60 + block.minute);
            let end = login + 7 * 1440 * c.step_ms();
            let mut rng = seed | 1;
            let mut now = login + latency;
            let mut past_year_end = false;
            while now < end {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                now += 16 + rng % 85;
                // Until this frame the client shows what it had: the server just before.
                let gap = c.total_minutes(now - 1) - (start + client.counted);
                prop_assert!(gap.abs() <= 1, "before a frame at {}: {} minutes", now - login, gap);
                if client.frame(now) {
                    let gap = c.total_minutes(now) - (start + client.counted);
                    prop_assert!(gap.abs() <= 1, "after a frame at {}: {} minutes", now - login, gap);
                    past_year_end |= i64::from(client.day) >= c.year_len();
                    if !past_year_end {
                        let t = c.time_of(start + client.counted);
                        prop_assert_eq!(
                            (t.year, t.day, t.hour, t.minute),
                            (i64::from(client.year), client.day, client.hour, client.minute)
                        );
                    }
                }
            }
        }

        #[test]
        fn two_nodes_agree(epoch in 0u64..4_000_000_000_000, now in 0u64..4_000_000_000_000) {
            let a = GameClock::new(&env(), epoch);
            let b = GameClock::new(&Environment::default(), epoch);
            prop_assert_eq!(a.at(now), b.at(now));
        }
    }
}
