//! The conversions left between the simulation and the internal link: the snapshot
//! reason (the link has a `Shutdown` reason the simulation never produces) and a script's
//! account action. The actor state, arrival and script store shapes are shared types
//! (`shared::internal::dto`), used as they are.

use shared::internal::{AccountActionDto, SnapshotReasonDto};

use crate::sim::events::{AccountAction, SnapshotReason};

/// Sim → wire.
pub fn account_action_to_dto(a: AccountAction) -> AccountActionDto {
    match a {
        AccountAction::Ban => AccountActionDto::Ban,
        AccountAction::Kick => AccountActionDto::Kick,
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
