//! Copying a whole store into another (`gateway store copy`, issue 41: SQLite into
//! Postgres when a game moves to a cluster), and the check that everything arrived.
//!
//! The copy is one transaction on the destination, which must hold no account; then the
//! destination is read back and compared with the source, row for row: every account,
//! character, ground item, script file, super global, audit entry, the handle floor and
//! the game clock's epoch.

use super::{Quarantined, Store, StoreError};
use crate::session::PersistOp;

/// What a copy moved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopyReport {
    /// Accounts.
    pub accounts: usize,
    /// Characters.
    pub characters: usize,
    /// Rows of the source that could not be read (not copied: repair them in the source
    /// and copy again).
    pub unreadable: Vec<Quarantined>,
    /// Script files and directories.
    pub script_files: usize,
    /// Super globals set.
    pub super_globals: usize,
    /// AreaInstances with ground items.
    pub ground_instances: usize,
    /// Ground items.
    pub ground_items: usize,
    /// Audit log entries.
    pub audit_entries: usize,
    /// The handle floor.
    pub handle_floor: u32,
    /// The game clock's epoch (Unix ms).
    pub clock_epoch_ms: u64,
}

/// The most audit entries copied (all of them, in practice).
const AUDIT_ALL: usize = 10_000_000;

/// Copies everything of `from` into `to` (which must hold no account) in one
/// transaction, then checks it with [`verify`].
pub fn copy(from: &Store, to: &mut Store) -> Result<CopyReport, StoreError> {
    let (existing, _) = to.load_all_quarantining()?;
    if !existing.is_empty() {
        return Err(StoreError::Unsupported(format!(
            "the destination holds {} accounts already: copy into an empty store",
            existing.len()
        )));
    }
    let (records, unreadable) = from.load_all_quarantining()?;
    let (entries, globals) = from.script_rows()?;
    let (ground, _) = from.load_ground()?;
    let audit = from.load_audit(AUDIT_ALL)?;
    let handle_floor = from.handle_floor()?;
    // The epoch is stored once: reading it stores "now" into a store that has none yet,
    // which a copy of a never-started store may do.
    let clock_epoch_ms = from.clock_epoch(crate::console::unix_ms())?;
    let mut ops = Vec::new();
    let mut report = CopyReport {
        unreadable,
        handle_floor,
        clock_epoch_ms,
        ..CopyReport::default()
    };
    for (row, characters) in records {
        report.accounts += 1;
        report.characters += characters.len();
        let account = row.id;
        ops.push(PersistOp::UpsertAccount(row));
        ops.push(PersistOp::ReplaceCharacters {
            account,
            characters,
        });
    }
    ops.push(PersistOp::HandleFloor(handle_floor));
    for e in entries {
        report.script_files += 1;
        ops.push(PersistOp::PutScriptFile {
            name: e.name,
            kind: e.kind,
            data: e.data,
        });
    }
    for (slot, value) in globals {
        report.super_globals += 1;
        ops.push(PersistOp::SetSuperGlobal { slot, value });
    }
    let mut keys: Vec<_> = ground.into_iter().collect();
    keys.sort_by(|a, b| a.0.cmp(&b.0));
    for (key, items) in keys {
        report.ground_instances += 1;
        report.ground_items += items.len();
        ops.push(PersistOp::ReplaceGround { key, items });
    }
    for e in audit {
        report.audit_entries += 1;
        ops.push(PersistOp::Audit(Box::new(e)));
    }
    to.apply(&ops)?;
    to.clock_epoch(clock_epoch_ms)?;
    verify(from, to).map_err(StoreError::Unsupported)?;
    Ok(report)
}

/// Checks that `to` holds everything `from` does (the readable rows), value for value;
/// `Err` names the first difference.
pub fn verify(from: &Store, to: &Store) -> Result<(), String> {
    let e = |x: StoreError| x.to_string();
    let (a, _) = from.load_all_quarantining().map_err(e)?;
    let (b, _) = to.load_all_quarantining().map_err(e)?;
    if a.len() != b.len() {
        return Err(format!("{} accounts, {} arrived", a.len(), b.len()));
    }
    for ((ra, ca), (rb, cb)) in a.iter().zip(&b) {
        if ra != rb {
            return Err(format!("account {:?} differs", ra.user));
        }
        if ca != cb {
            return Err(format!("the characters of {:?} differ", ra.user));
        }
    }
    if from.script_rows().map_err(e)? != to.script_rows().map_err(e)? {
        return Err("the script files or super globals differ".into());
    }
    if from.load_ground().map_err(e)?.0 != to.load_ground().map_err(e)?.0 {
        return Err("the ground items differ".into());
    }
    if from.load_audit(AUDIT_ALL).map_err(e)? != to.load_audit(AUDIT_ALL).map_err(e)? {
        return Err("the audit log differs".into());
    }
    if from.handle_floor().map_err(e)? != to.handle_floor().map_err(e)? {
        return Err("the handle floor differs".into());
    }
    let now = crate::console::unix_ms();
    if from.clock_epoch(now).map_err(e)? != to.clock_epoch(now).map_err(e)? {
        return Err("the game clock's epoch differs".into());
    }
    Ok(())
}
