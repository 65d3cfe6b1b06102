//! World, zones and time (`wld`, `time`): `Warp` (through SetArea, so across nodes it is
//! the two-phase handoff), the zone queries, zone instances (asked of the cluster's script
//! store, which the gateway answers from its placement directory) and the real-time clock.
//!
//! A zone knows its own actors only: `FirstActorInZone`/`NextActorInZone` walk this
//! AreaInstance; `ActorsInZone`/`PlayersInZone` of another instance come from the nodes'
//! latest heartbeats (at most a second old).

use script::natives::Native;
use shared::internal::ScriptStoreOp;

use super::{Args, NResult, int, none, text};
use crate::sim::events::Arrival;
use crate::sim::instances::{DeferredWarp, PendingIo, Wait};
use crate::sim::runtime::host::ZoneHost;
use crate::sim::script_table as table;
use crate::sim::state::{ActorId, ChainKind, ZoneState};

/// Apply a `Warp`: SetArea to the named portal (portal 0 when none matches).
pub fn do_warp(st: &mut ZoneState, actor: ActorId, area: &str, instance: u16, portal: &str) {
    crate::sim::setarea::set_area(
        st,
        actor,
        area,
        instance,
        &Arrival::PortalNamed(portal.to_owned()),
    );
}

/// The canonical name of an area of the world (case-insensitive lookup).
fn area_name(st: &ZoneState, name: &str) -> Option<String> {
    let name = name.trim();
    if name.eq_ignore_ascii_case(&st.content.area.name) {
        return Some(st.content.area.name.clone());
    }
    st.content.world.area_by_name(name).map(|a| a.name.clone())
}

fn here(st: &ZoneState, area: &str, instance: i32) -> bool {
    area.trim().eq_ignore_ascii_case(&st.content.area.name)
        && instance == i32::from(st.cfg.instance)
}

/// The zone's wall clock (Unix ms): the configured epoch plus the zone's time.
pub fn unix_ms(st: &ZoneState) -> u64 {
    crate::sim::clock::unix_ms(st)
}

/// `(year, month 1..=12, day 1..=31)` of a day count since 1970-01-01 (proleptic
/// Gregorian, Howard Hinnant's `civil_from_days`).
pub fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    (if m <= 2 { y + 1 } else { y }, m, d)
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// `RealDate()`: `"%d %b %Y"` in UTC, e.g. `"05 Mar 2014"`.
pub fn real_date(unix_ms: u64) -> String {
    let days = i64::try_from(unix_ms / 86_400_000).unwrap_or(0);
    let (y, m, d) = civil(days);
    let mon = MONTHS
        .get(m.saturating_sub(1) as usize)
        .copied()
        .unwrap_or("Jan");
    format!("{d:02} {mon} {y}")
}

/// `RealTime()`: `"%H:%M:%S"` in UTC.
pub fn real_time(unix_ms: u64) -> String {
    let s = (unix_ms / 1000) % 86_400;
    format!("{:02}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
}

/// Run a world or time native.
pub fn call(h: &mut ZoneHost<'_>, n: Native, a: Args<'_>) -> NResult {
    match n {
        Native::Warp => {
            let Some(actor) = h.actor(a.int(0)) else {
                return none();
            };
            let Some(area) = area_name(h.st, &a.text(1)) else {
                return none();
            };
            let instance = u16::try_from(a.int(3))
                .ok()
                .filter(|&i| i < 100)
                .unwrap_or(0);
            let portal = a.text(2);
            let same =
                area.eq_ignore_ascii_case(&h.st.content.area.name) && instance == h.st.cfg.instance;
            let own = h.cx.actor == a.int(0) && h.st.get(actor).is_some_and(|x| x.is_player());
            if own && !same {
                // The script goes with its player: it waits until the handoff settles and
                // continues wherever the player is then.
                table::defer_warp(
                    h.st,
                    DeferredWarp {
                        instance: h.id,
                        actor,
                        area,
                        zone_instance: instance,
                        portal,
                    },
                );
                return h.suspend(Wait::Transfer);
            }
            do_warp(h.st, actor, &area, instance, &portal);
            none()
        }
        Native::ActorZone => {
            let v = h
                .actor(a.int(0))
                .map(|_| h.st.content.area.name.clone())
                .unwrap_or_default();
            text(&v)
        }
        Native::ActorZoneInstance => int(h
            .actor(a.int(0))
            .map_or(0, |_| i32::from(h.st.cfg.instance))),
        Native::ActorOutdoors => int(h
            .actor(a.int(0))
            .map_or(0, |_| i32::from(h.st.content.area.outdoors))),
        Native::ZoneOutdoors => {
            // Fix: Realm Crafter compared the name with the upper-cased argument
            // case-sensitively, so only all-caps zone names matched.
            let v = area_name(h.st, &a.text(0)).and_then(|name| {
                if name == h.st.content.area.name {
                    Some(h.st.content.area.outdoors)
                } else {
                    h.st.content.world.area_by_name(&name).map(|x| x.outdoors)
                }
            });
            int(i32::from(v.unwrap_or(false)))
        }
        Native::ActorInTrigger => {
            let v = h
                .actor(a.int(0))
                .and_then(|id| h.st.get(id))
                .is_some_and(|x| {
                    usize::try_from(a.int(1))
                        .ok()
                        .and_then(|t| h.st.content.area.triggers.get(t))
                        .is_some_and(|t| {
                            let (dx, dy, dz) = (x.x - t.x, x.y - t.y, x.z - t.z);
                            dx * dx + dy * dy + dz * dz < t.size * t.size
                        })
                });
            int(i32::from(v))
        }
        Native::FirstActorInZone => {
            if !here(h.st, &a.text(0), a.int(1)) {
                // Another instance: its node lists its actors, walked from here.
                let (Some(area), Ok(instance)) =
                    (area_name(h.st, &a.text(0)), u16::try_from(a.int(1)))
                else {
                    return int(0);
                };
                let req = h.st.scripts.next_request;
                h.st.scripts.next_request += 1;
                h.st.scripts.requests.insert(req, h.id);
                h.st.outputs
                    .push(crate::sim::events::ZoneOutput::ScriptStore {
                        req,
                        op: ScriptStoreOp::ZoneActors { area, instance },
                    });
                h.cx.pending_io = Some(PendingIo::Walk);
                return h.suspend(Wait::Store { req });
            }
            let first = h.st.zone.first;
            let v = h.st.at(first).map_or(0, |x| x.handle);
            int(v)
        }
        Native::NextActorInZone => {
            let Some(id) = h.actor(a.int(0)) else {
                // An actor of the instance this script's last `FirstActorInZone` listed
                // elsewhere: the next one of that list (wrapping, as here).
                let w = &h.cx.walk;
                let next = w
                    .iter()
                    .position(|&x| x == a.int(0))
                    .and_then(|i| w.get(i + 1).or_else(|| w.first()))
                    .copied()
                    .unwrap_or(0);
                return int(next);
            };
            let next = h.st.link(id.idx, ChainKind::Zone).next;
            let next = if h.st.at(next).is_some() {
                next
            } else {
                h.st.zone.first
            };
            int(h.st.at(next).map_or_else(|| a.int(0), |x| x.handle))
        }
        Native::ActorsInZone | Native::PlayersInZone => {
            let players_only = n == Native::PlayersInZone;
            let (zone, inst) = (a.text(0), a.int(1));
            if here(h.st, &zone, inst) {
                let v = if players_only {
                    h.st.online.len
                } else {
                    h.st.zone.len
                };
                return int(i32::try_from(v).unwrap_or(i32::MAX));
            }
            let Some(area) = area_name(h.st, &zone) else {
                return int(0);
            };
            h.ask_int(ScriptStoreOp::CountActors {
                area,
                instance: inst,
                players_only,
            })
        }
        Native::ZoneInstanceExists => {
            let (zone, inst) = (a.text(0), a.int(1));
            if here(h.st, &zone, inst) {
                return int(1);
            }
            let (Some(area), Ok(instance)) = (area_name(h.st, &zone), u16::try_from(inst)) else {
                return int(0);
            };
            h.ask_int(ScriptStoreOp::InstanceExists { area, instance })
        }
        Native::CreateZoneInstance => {
            let Some(area) = area_name(h.st, &a.text(0)) else {
                let script = h.cx.script.clone();
                table::log(
                    h.st,
                    &script,
                    format!("CreateZoneInstance: no zone named {:?}", a.text(0)),
                );
                return int(0);
            };
            let instance = u16::try_from(a.int(1).max(0)).unwrap_or(0);
            if instance > 99 {
                return int(0);
            }
            h.ask_int(ScriptStoreOp::CreateInstance { area, instance })
        }
        Native::RemoveZoneInstance => {
            let inst = a.int(1);
            if let (Some(area), Ok(instance)) = (area_name(h.st, &a.text(0)), u16::try_from(inst))
                && instance > 0
            {
                h.st.outputs
                    .push(crate::sim::events::ZoneOutput::ScriptStore {
                        req: 0,
                        op: ScriptStoreOp::RemoveInstance { area, instance },
                    });
            }
            none()
        }
        Native::SetOwner => none(),
        Native::SceneryOwner => int(0),
        Native::RealDate | Native::CurrentDate => text(&real_date(unix_ms(h.st))),
        Native::RealTime | Native::CurrentTime => text(&real_time(unix_ms(h.st))),
        _ => super::not_supported(n),
    }
}

impl ZoneHost<'_> {
    /// Ask the store a question with an Int answer, suspending until it comes.
    pub(crate) fn ask_int(&mut self, op: ScriptStoreOp) -> NResult {
        let req = self.st.scripts.next_request;
        self.st.scripts.next_request += 1;
        self.st.scripts.requests.insert(req, self.id);
        self.st
            .outputs
            .push(crate::sim::events::ZoneOutput::ScriptStore { req, op });
        self.cx.pending_io = Some(PendingIo::Int);
        self.suspend(Wait::Store { req })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_rc_formatted() {
        assert_eq!(real_date(0), "01 Jan 1970");
        // 2014-03-05 12:34:56 UTC
        assert_eq!(real_date(1_394_022_896_000), "05 Mar 2014");
        assert_eq!(real_time(1_394_022_896_000), "12:34:56");
        assert_eq!(civil(11_016), (2000, 2, 29));
    }
}
