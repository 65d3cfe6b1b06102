//! The one conversion left between the simulation and the internal link: the snapshot
//! reason (the link has a `Shutdown` reason the simulation never produces). The actor
//! state and arrival shapes are shared types (`shared::internal::dto`), used as they are.

use shared::internal::SnapshotReasonDto;

use crate::sim::events::SnapshotReason;

/// Sim → wire.
pub fn reason_to_dto(r: SnapshotReason) -> SnapshotReasonDto {
    match r {
        SnapshotReason::Logout => SnapshotReasonDto::Logout,
        SnapshotReason::Transfer => SnapshotReasonDto::Transfer,
        SnapshotReason::Periodic => SnapshotReasonDto::Periodic,
    }
}
