//! An in-memory script store: the cluster's script files, super globals and zone-instance
//! questions answered inside one process, for headless runs (`rcscript run`, the sim's
//! tests). The gateway's store is the real one; this one follows the same contract
//! (`ScriptStoreOp` → `ScriptStoreResult`).

use std::collections::BTreeMap;

use shared::internal::{ScriptStoreOp, ScriptStoreResult};

/// What a store answer changes beyond the reply: a super global to tell every zone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SuperGlobalChange {
    /// Slot.
    pub slot: u8,
    /// Value.
    pub value: Vec<u8>,
}

/// Files (name → bytes; directories as names with no bytes) and super globals.
#[derive(Clone, Debug, Default)]
pub struct MemoryStore {
    files: BTreeMap<String, Vec<u8>>,
    dirs: BTreeMap<String, ()>,
    superglobals: BTreeMap<u8, Vec<u8>>,
    /// What a `FirstActorInZone` of another instance lists (tests; a process alone has
    /// no other instance, so none by default).
    pub other_zone: Vec<i32>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// A file's bytes (tests).
    pub fn file(&self, name: &str) -> Option<&[u8]> {
        self.files.get(name).map(Vec::as_slice)
    }

    /// Put a file (tests).
    pub fn put(&mut self, name: &str, data: &[u8]) {
        self.files.insert(name.to_owned(), data.to_vec());
    }

    /// Answer one request; also returns the super global it changed, if any.
    pub fn answer(&mut self, op: &ScriptStoreOp) -> (ScriptStoreResult, Option<SuperGlobalChange>) {
        let r = match op {
            ScriptStoreOp::ReadFile { name } => {
                ScriptStoreResult::File(self.files.get(name).cloned())
            }
            ScriptStoreOp::WriteFile { name, data } => {
                self.files.insert(name.clone(), data.clone());
                ScriptStoreResult::Done
            }
            ScriptStoreOp::DeleteFile { name } => {
                self.files.remove(name);
                ScriptStoreResult::Done
            }
            ScriptStoreOp::FileInfo { name } => {
                let prefix = format!("{name}/");
                match self.files.get(name) {
                    Some(d) => ScriptStoreResult::Info {
                        kind: 1,
                        size: d.len() as u64,
                    },
                    None if self.dirs.contains_key(name)
                        || self.files.keys().any(|k| k.starts_with(&prefix)) =>
                    {
                        ScriptStoreResult::Info { kind: 2, size: 0 }
                    }
                    None => ScriptStoreResult::Info { kind: 0, size: 0 },
                }
            }
            ScriptStoreOp::CreateDir { name } => {
                self.dirs.insert(name.clone(), ());
                ScriptStoreResult::Done
            }
            ScriptStoreOp::SetSuperGlobal { slot, value } => {
                self.superglobals.insert(*slot, value.clone());
                return (
                    ScriptStoreResult::Done,
                    Some(SuperGlobalChange {
                        slot: *slot,
                        value: value.clone(),
                    }),
                );
            }
            ScriptStoreOp::InstanceExists { instance, .. } => {
                ScriptStoreResult::Int(i32::from(*instance == 0))
            }
            ScriptStoreOp::CreateInstance { .. } | ScriptStoreOp::CountActors { .. } => {
                ScriptStoreResult::Int(0)
            }
            ScriptStoreOp::RemoveInstance { .. } => ScriptStoreResult::Done,
            // One process, no cluster: the scripts stay the ones it started with.
            ScriptStoreOp::RefreshScripts => ScriptStoreResult::Done,
            // The zone already has its own change; there is no other node to tell.
            ScriptStoreOp::SetEnv { .. }
            | ScriptStoreOp::Weather { .. }
            | ScriptStoreOp::Tell { .. } => ScriptStoreResult::Done,
            // Nobody is in the game anywhere else.
            ScriptStoreOp::FindPlayer { .. } => ScriptStoreResult::Int(0),
            ScriptStoreOp::ActorQuery { .. } => ScriptStoreResult::Error("not in the game".into()),
            ScriptStoreOp::Spawn { .. } | ScriptStoreOp::SpawnItem { .. } => {
                ScriptStoreResult::Error("no other instance here".into())
            }
            ScriptStoreOp::ZoneActors { .. } => ScriptStoreResult::Handles(self.other_zone.clone()),
            ScriptStoreOp::ActorAnswer { .. } | ScriptStoreOp::ZoneActorsAnswer { .. } => {
                ScriptStoreResult::Done
            }
        };
        (r, None)
    }
}
