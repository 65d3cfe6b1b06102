//! Weather per instance (reference §7.7): timer, linked area, `WeatherChance`,
//! `P_WeatherChange`.
//!
//! Quirk fix: Realm Crafter counts the weather time in round-robin **visits** of the area
//! (`Rand(2500, 10000)` of them), so weather lasted longer on a server with more areas or
//! a slower loop. Here the time is in milliseconds: one visit is taken as
//! [`MS_PER_VISIT`] = 100 ms (a loop of a few ms visiting a few dozen areas), so a weather
//! lasts 250 s to 1000 s. The roll: `r = Rand(1..100)` against the cumulative
//! `WeatherChance[0..4]` (weathers 1..5 = rain, snow, fog, storm, wind), Sun when none
//! matches; then `P_WeatherChange` (`instHandle u32, weather u8`) to the zone.
//!
//! `WeatherLink`: the zone hosts one AreaInstance, so the linked area's weather comes from
//! [`ZoneState::linked_weather`] (the shell or the game supplies it); when the linked area
//! is not there the zone rolls its own.

use shared::proto::WeatherChange;

use super::state::ZoneState;

/// Milliseconds per Realm Crafter weather "visit".
pub const MS_PER_VISIT: u64 = 100;
/// Shortest weather, in visits.
pub const MIN_VISITS: i32 = 2500;
/// Longest weather, in visits.
pub const MAX_VISITS: i32 = 10_000;
/// Weather names, by number (`/weather`).
pub const NAMES: [&str; 6] = ["sun", "rain", "snow", "fog", "storm", "wind"];

/// A random weather duration (ms).
pub fn roll_duration(st: &mut ZoneState) -> u64 {
    let visits = st.rng.rand_range(MIN_VISITS, MAX_VISITS);
    u64::try_from(visits).unwrap_or(0) * MS_PER_VISIT
}

/// The weather part of the round-robin visit. `st.weather_time` holds the deadline at
/// which the current weather ends, in units of [`MS_PER_VISIT`] (100 ms) of `now_ms`.
pub(crate) fn visit(st: &mut ZoneState) {
    let now = st.now_ms;
    let until = u64::try_from(st.weather_time).unwrap_or(0) * MS_PER_VISIT;
    if until > now {
        return;
    }
    let link = st.content.area.weather_link.clone();
    let linked = if link.is_empty() {
        None
    } else {
        st.linked_weather.get(&link.to_ascii_lowercase()).copied()
    };
    let (weather, dur) = match linked {
        Some(w) => (w.min(5), 10 * MS_PER_VISIT),
        None => {
            let dur = roll_duration(st);
            let r = st.rng.rand_range(1, 100);
            let mut acc = 0i32;
            let mut w = 0u8;
            for (i, c) in st.content.area.weather_chance.iter().enumerate() {
                acc += i32::from(*c);
                if r <= acc {
                    w = u8::try_from(i + 1).unwrap_or(0);
                    break;
                }
            }
            (w, dur)
        }
    };
    set_weather(st, weather, dur);
}

/// The most areas whose weather a zone remembers for `WeatherLink`.
pub const MAX_LINKED: usize = 1024;

/// Another area's weather (its instance 0, on whatever node): remembered for a zone whose
/// `WeatherLink` names it, which follows it at its next visit.
#[doc(alias = "WeatherLink")]
pub(crate) fn linked(st: &mut ZoneState, area: String, weather: u8) {
    let area = area.to_ascii_lowercase();
    if st.linked_weather.contains_key(&area) || st.linked_weather.len() < MAX_LINKED {
        st.linked_weather.insert(area, weather.min(5));
    }
}

/// Set the weather for `duration_ms` and tell the zone (`/weather`, the visit). The
/// weather of an instance 0 is also announced for the areas linked to it (`WeatherLink`).
pub fn set_weather(st: &mut ZoneState, weather: u8, duration_ms: u64) {
    let changed = st.weather != weather.min(5);
    st.weather = weather.min(5);
    if changed && st.cfg.instance == 0 {
        st.outputs.push(super::events::ZoneOutput::ScriptStore {
            req: 0,
            op: shared::internal::ScriptStoreOp::Weather {
                area: st.content.area.name.to_ascii_lowercase(),
                weather: st.weather,
            },
        });
    }
    let until = st.now_ms.saturating_add(duration_ms.max(MS_PER_VISIT)) / MS_PER_VISIT + 1;
    st.weather_time = i32::try_from(until).unwrap_or(i32::MAX);
    let change = WeatherChange {
        instance_handle: st.cfg.instance_handle,
        weather: st.weather,
    };
    st.send_packet_zone(&change, None);
}
