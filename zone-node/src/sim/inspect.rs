//! What the operator's console sees of a zone (`/api/v1/instances/{area}/{instance}/actors`,
//! the live map): a read-only view of its actors and ground items, taken between ticks.

use shared::internal::{MAX_MAP_ENTRIES, MapActorDto, MapItemDto, MapViewDto};

use super::state::{ChainKind, ZoneState};

/// The zone's actors (players and NPCs, in the zone's order) and ground items now, at
/// most [`MAX_MAP_ENTRIES`] of each.
pub fn map_view(st: &ZoneState) -> MapViewDto {
    let health = st.content.fixed.health;
    let mut actors = Vec::with_capacity(st.zone.len as usize);
    for i in st.chain_members(st.zone, ChainKind::Zone) {
        let Some(a) = st.at(i) else { continue };
        if actors.len() >= MAX_MAP_ENTRIES {
            break;
        }
        actors.push(MapActorDto {
            runtime_id: a.rid,
            handle: a.handle,
            name: a.cold.name.clone(),
            player: a.player_data.is_some(),
            x: a.x,
            y: a.y,
            z: a.z,
            yaw: a.yaw,
            level: a.cold.level,
            health: a.attr_value(health).unwrap_or(0),
            health_max: a.attr_maximum(health).unwrap_or(0),
        });
    }
    let items = st
        .ground
        .values()
        .take(MAX_MAP_ENTRIES)
        .map(|g| MapItemDto {
            name: st
                .content
                .world
                .item(g.item.item)
                .map_or_else(|| format!("item {}", g.item.item), |t| t.name.clone()),
            amount: g.item.amount,
            x: g.x,
            y: g.y,
            z: g.z,
        })
        .collect();
    MapViewDto { actors, items }
}
