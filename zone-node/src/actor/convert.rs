//! Conversions between the simulation's cross-node shapes and their wire DTOs in
//! `shared::internal` (field for field; a round trip is the identity).

use shared::internal::{ActorStateDto, ArrivalDto, InvSlotDto, KnownSpellDto, SnapshotReasonDto};

use crate::sim::events::{ActorState, Arrival, InvSlot, KnownSpell, SnapshotReason};

/// Sim → wire.
pub fn state_to_dto(s: &ActorState) -> ActorStateDto {
    ActorStateDto {
        template: s.template,
        name: s.name.clone(),
        tag: s.tag.clone(),
        area: s.area.clone(),
        instance: s.instance,
        x: s.x,
        y: s.y,
        z: s.z,
        yaw: s.yaw,
        gender: s.gender,
        face: s.face,
        hair: s.hair,
        beard: s.beard,
        body: s.body,
        level: s.level,
        xp: s.xp,
        xp_bar: s.xp_bar,
        gold: s.gold,
        reputation: s.reputation,
        team: s.team,
        home_faction: s.home_faction,
        ratings: s.ratings.clone(),
        attributes: s.attributes.clone(),
        attribute_max: s.attribute_max.clone(),
        resistances: s.resistances.clone(),
        inventory: s
            .inventory
            .iter()
            .map(|slot| {
                slot.as_ref().map(|i| InvSlotDto {
                    item: i.item,
                    attributes: i.attributes.clone(),
                    health: i.health,
                    amount: i.amount,
                })
            })
            .collect(),
        known_spells: s
            .known_spells
            .iter()
            .map(|k| KnownSpellDto {
                id: k.id,
                level: k.level,
                charge_ms: k.charge_ms,
            })
            .collect(),
        memorised: s.memorised.clone(),
        script_globals: s.script_globals.clone(),
        quests: s.quests.clone(),
        action_bar: s.action_bar.clone(),
        script: s.script.clone(),
        death_script: s.death_script.clone(),
        rid: s.rid,
        ai_mode: s.ai_mode,
        pets: s.pets.iter().map(state_to_dto).collect(),
        mount: s.mount.as_ref().map(|m| Box::new(state_to_dto(m))),
    }
}

/// Wire → sim.
pub fn state_from_dto(s: ActorStateDto) -> ActorState {
    ActorState {
        template: s.template,
        name: s.name,
        tag: s.tag,
        area: s.area,
        instance: s.instance,
        x: s.x,
        y: s.y,
        z: s.z,
        yaw: s.yaw,
        gender: s.gender,
        face: s.face,
        hair: s.hair,
        beard: s.beard,
        body: s.body,
        level: s.level,
        xp: s.xp,
        xp_bar: s.xp_bar,
        gold: s.gold,
        reputation: s.reputation,
        team: s.team,
        home_faction: s.home_faction,
        ratings: s.ratings,
        attributes: s.attributes,
        attribute_max: s.attribute_max,
        resistances: s.resistances,
        inventory: s
            .inventory
            .into_iter()
            .map(|slot| {
                slot.map(|i| InvSlot {
                    item: i.item,
                    attributes: i.attributes,
                    health: i.health,
                    amount: i.amount,
                })
            })
            .collect(),
        known_spells: s
            .known_spells
            .into_iter()
            .map(|k| KnownSpell {
                id: k.id,
                level: k.level,
                charge_ms: k.charge_ms,
            })
            .collect(),
        memorised: s.memorised,
        script_globals: s.script_globals,
        quests: s.quests,
        action_bar: s.action_bar,
        script: s.script,
        death_script: s.death_script,
        rid: s.rid,
        ai_mode: s.ai_mode,
        pets: s.pets.into_iter().map(state_from_dto).collect(),
        mount: s.mount.map(|m| Box::new(state_from_dto(*m))),
    }
}

/// Sim → wire.
pub fn arrival_to_dto(a: &Arrival) -> ArrivalDto {
    match a {
        Arrival::Saved => ArrivalDto::Saved,
        Arrival::Position { x, y, z } => ArrivalDto::Position {
            x: *x,
            y: *y,
            z: *z,
        },
        Arrival::Waypoint(i) => ArrivalDto::Waypoint(*i),
        Arrival::Portal(i) => ArrivalDto::Portal(*i),
        Arrival::PortalNamed(n) => ArrivalDto::PortalNamed(n.clone()),
    }
}

/// Wire → sim.
pub fn arrival_from_dto(a: ArrivalDto) -> Arrival {
    match a {
        ArrivalDto::Saved => Arrival::Saved,
        ArrivalDto::Position { x, y, z } => Arrival::Position { x, y, z },
        ArrivalDto::Waypoint(i) => Arrival::Waypoint(i),
        ArrivalDto::Portal(i) => Arrival::Portal(i),
        ArrivalDto::PortalNamed(n) => Arrival::PortalNamed(n),
    }
}

/// Sim → wire.
pub fn reason_to_dto(r: SnapshotReason) -> SnapshotReasonDto {
    match r {
        SnapshotReason::Logout => SnapshotReasonDto::Logout,
        SnapshotReason::Transfer => SnapshotReasonDto::Transfer,
        SnapshotReason::Periodic => SnapshotReasonDto::Periodic,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips_through_the_dto_and_rmp() {
        let s = ActorState {
            name: "Alice".into(),
            x: 1.5,
            attributes: vec![1, 2, 3],
            inventory: vec![
                None,
                Some(InvSlot {
                    item: 3,
                    attributes: vec![4],
                    health: 90,
                    amount: 2,
                }),
            ],
            known_spells: vec![KnownSpell {
                id: 1,
                level: 2,
                charge_ms: -5,
            }],
            quests: vec![("q".into(), "done".into())],
            pets: vec![ActorState {
                name: "Rex".into(),
                ..ActorState::default()
            }],
            mount: Some(Box::new(ActorState {
                name: "Horse".into(),
                ..ActorState::default()
            })),
            ..ActorState::default()
        };
        let dto = state_to_dto(&s);
        let bytes = rmp_serde::to_vec(&dto).unwrap();
        let back: ActorStateDto = rmp_serde::from_slice(&bytes).unwrap();
        assert_eq!(state_from_dto(back), s);
        for a in [
            Arrival::Saved,
            Arrival::Position {
                x: 1.0,
                y: 2.0,
                z: 3.0,
            },
            Arrival::Waypoint(2),
            Arrival::Portal(1),
            Arrival::PortalNamed("Gate".into()),
        ] {
            assert_eq!(arrival_from_dto(arrival_to_dto(&a)), a);
        }
    }
}
