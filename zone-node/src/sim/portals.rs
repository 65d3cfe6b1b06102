//! Portals and triggers for the online players of the instance (reference §7.7).
//!
//! * **Portals**: inside when the 3-D dist² < Size². The 35 s lock skips the portal the
//!   player last used or arrived at (`LastPortal`) for 35 s; `LastPortal` is reset by every
//!   arrival in an area, so the lock is keyed by portal index **and** area (V1). The
//!   destination is the linked area's portal named `LinkName` (case-insensitive), else
//!   that area's portal 0, always instance 0. A destination in this AreaInstance is a local
//!   `SetArea`; anything else is a `SetArea` to another AreaInstance, i.e. a
//!   [`ZoneOutput::TransferOut`](super::events::ZoneOutput::TransferOut). A portal without
//!   a link, or linking to an unknown area, is only an arrival point. One portal per
//!   player per visit.
//! * **Triggers**: inside when the 3-D dist² < Size²; the hook runs once on entry
//!   (edge-detected through `LastTrigger`, cleared when the player is in no trigger).
//!   The lowest-index trigger wins when several overlap.

use super::engine::EngineEvent;
use super::events::Arrival;
use super::state::{ActorId, ChainKind, ZoneState};

/// How long the last-used portal stays locked.
pub const PORTAL_LOCK_MS: u64 = 35_000;

/// The portal/trigger part of the round-robin visit.
pub(crate) fn visit(st: &mut ZoneState) {
    if st.online.len == 0 {
        return;
    }
    let players = st.chain_members(st.online, ChainKind::Online);
    for idx in players {
        let Some(a) = st.at(idx) else { continue };
        if a.dead || a.frozen() {
            continue;
        }
        let id = a.id;
        portals(st, id);
        triggers(st, id);
    }
}

fn inside(ax: f32, ay: f32, az: f32, x: f32, y: f32, z: f32, size: f32) -> bool {
    let (dx, dy, dz) = (ax - x, ay - y, az - z);
    dx * dx + dy * dy + dz * dz < size * size
}

fn portals(st: &mut ZoneState, id: ActorId) {
    let Some(a) = st.get(id) else { return };
    let (x, y, z, last, last_ms) = (a.x, a.y, a.z, a.last_portal, a.last_portal_ms);
    let now = st.now_ms;
    let hit = st.content.area.portals.iter().enumerate().find(|(i, p)| {
        !p.name.is_empty()
            && p.size > 0.0
            && inside(x, y, z, p.x, p.y, p.z, p.size)
            && !(u16::try_from(*i).ok() == last && now.saturating_sub(last_ms) <= PORTAL_LOCK_MS)
    });
    let Some((i, p)) = hit else { return };
    let Ok(index) = u16::try_from(i) else { return };
    if p.link_area.is_empty() {
        return;
    }
    let (link_area, link_name) = (p.link_area.clone(), p.link_name.clone());
    let world = st.content.world.clone();
    let here = link_area.eq_ignore_ascii_case(&st.content.area.name);
    let (area_name, arrival) = if here {
        let dest = st.content.area.portal_named(&link_name).unwrap_or(0);
        (st.content.area.name.clone(), Arrival::Portal(dest))
    } else {
        let Some(dest_area) = world.area_by_name(&link_area) else {
            return;
        };
        let dest = dest_area.portal_by_name(&link_name).map_or(0, |p| p.index);
        (dest_area.name.clone(), Arrival::Portal(dest))
    };
    if let Some(a) = st.get_mut(id) {
        a.last_portal = Some(index);
        a.last_portal_ms = now;
    }
    super::setarea::set_area(st, id, &area_name, 0, &arrival);
}

fn triggers(st: &mut ZoneState, id: ActorId) {
    let Some(a) = st.get(id) else { return };
    let (x, y, z, last) = (a.x, a.y, a.z, a.last_trigger);
    let now_in = st
        .content
        .area
        .triggers
        .iter()
        .position(|t| t.size > 0.0 && inside(x, y, z, t.x, t.y, t.z, t.size))
        .and_then(|i| u16::try_from(i).ok());
    if now_in == last {
        return;
    }
    if let Some(a) = st.get_mut(id) {
        a.last_trigger = now_in;
    }
    if let Some(t) = now_in {
        st.announce(EngineEvent::TriggerEntered {
            actor: id,
            trigger: t,
        });
    }
}
