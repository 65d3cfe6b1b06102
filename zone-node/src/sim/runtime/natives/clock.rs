//! The clock's natives: `Year() Day() Hour() Minute() Month$() Season$()` and
//! `WaitTime(h, m)` (reference §8), reading the zone's game clock ([`crate::sim::clock`]).

use script::natives::Native;
use script::{RuntimeError, Value};

use crate::sim::clock::game_time;
use crate::sim::instances::Wait;
use crate::sim::runtime::host::ZoneHost;

/// Whether a native is one of the clock's.
pub(crate) fn handles(n: Native) -> bool {
    matches!(
        n,
        Native::Year
            | Native::Day
            | Native::Hour
            | Native::Minute
            | Native::Month
            | Native::Season
            | Native::WaitTime
    )
}

/// Run a clock native.
pub(crate) fn call(h: &mut ZoneHost<'_>, n: Native, args: &[Value]) -> super::NResult {
    let t = game_time(h.st);
    let int = |v: i64| super::int(i32::try_from(v).unwrap_or(i32::MAX));
    match n {
        Native::Year => int(t.year),
        Native::Day => int(i64::from(t.day)),
        Native::Hour => int(i64::from(t.hour)),
        Native::Minute => int(i64::from(t.minute)),
        Native::Month => super::text(h.st.clock.month_name(t.month)),
        Native::Season => super::text(h.st.clock.season_name(t.season)),
        Native::WaitTime => {
            let a = super::Args(args);
            let (hour, minute) = (a.int(0), a.int(1));
            if !(0..24).contains(&hour) || !(0..60).contains(&minute) {
                // Realm Crafter's busy loop would never end for hour >= 24.
                return Err(RuntimeError::Ended(format!(
                    "WaitTime({hour}, {minute}): the time must be 0..23, 0..59, so the wait could never end"
                )));
            }
            if t.minute_of_day() >= hour * 60 + minute {
                return super::int(0);
            }
            h.suspend(Wait::GameTime { hour, minute })
        }
        _ => super::not_supported(n),
    }
}
