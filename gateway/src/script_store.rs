//! The cluster's script store: Realm Crafter's `Script Files` folder and its 100 super
//! globals, kept by the gateway so every zone node sees the same files and values, and a
//! restart keeps them. Pure: the whole store lives in memory (loaded from SQLite at
//! start); every change returns the [`PersistOp`] the hub hands to the store writer, so
//! a read right after a write sees it and the database follows.
//!
//! [`answer`] is the decision core of a zone's `ScriptStore` request: the file and super
//! global operations against the [`ScriptStore`], the instance operations against the
//! placement [`Directory`]; the hub carries out the [`Effects`] (persist, place, tell the
//! nodes) and sends the answer.
//!
//! Names come from the zones already confined (lower case, `/`-separated, see the zone's
//! `sandbox`); they are checked again here ([`check_name`]), since nothing that arrives
//! over the network is trusted.

use std::collections::BTreeMap;

use shared::internal::{
    InstanceKey, MAX_SCRIPT_FILE, MAX_SUPER_GLOBAL, SUPER_GLOBALS, ScriptStoreOp, ScriptStoreResult,
};

use crate::directory::{Action, Directory};
use crate::session::PersistOp;

/// Largest file (bytes).
pub const MAX_FILE: usize = MAX_SCRIPT_FILE;
/// Most bytes all files together may hold.
pub const MAX_TOTAL: u64 = 256 * 1024 * 1024;
/// Most entries (files and directories).
pub const MAX_ENTRIES: usize = 4_096;
/// Longest name (bytes), as the zone allows.
pub const MAX_NAME: usize = 255;
/// `FileType`: no such name.
pub const KIND_NONE: u8 = 0;
/// `FileType`: a file.
pub const KIND_FILE: u8 = 1;
/// `FileType`: a directory.
pub const KIND_DIR: u8 = 2;
/// Highest instance `CreateZoneInstance(area, 0)` picks (Realm Crafter's instances are
/// 0 to 99).
pub const MAX_PICKED_INSTANCE: u16 = 99;

/// Why a script store operation was refused (the script logs it and gets 0 or "").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScriptStoreError {
    /// The name is not a confined, relative file name.
    #[error("bad script file name {name:?}: {why}")]
    BadName {
        /// The name as received.
        name: String,
        /// What is wrong.
        why: &'static str,
    },
    /// One file over [`MAX_FILE`].
    #[error("{name}: {size} bytes; a script file may hold at most {MAX_FILE} bytes")]
    FileTooLarge {
        /// The file.
        name: String,
        /// Its size.
        size: usize,
    },
    /// All files together over [`MAX_TOTAL`].
    #[error("{name}: the script files would hold {total} bytes; at most {MAX_TOTAL} are kept")]
    StoreFull {
        /// The file.
        name: String,
        /// The total it would make.
        total: u64,
    },
    /// More than [`MAX_ENTRIES`] files and directories.
    #[error("{name}: at most {MAX_ENTRIES} script files and directories are kept")]
    TooManyFiles {
        /// The name.
        name: String,
    },
    /// A file operation on a directory.
    #[error("{0} is a directory")]
    IsDirectory(String),
    /// A directory operation on a file, or a file under a file.
    #[error("{0} is a file")]
    IsFile(String),
    /// Deleting a directory that holds something.
    #[error("{0} is a directory that is not empty")]
    NotEmpty(String),
    /// A super global slot outside 0..=99.
    #[error("there is no super global {0} (0 to 99)")]
    BadSlot(u8),
    /// A super global value over [`MAX_SUPER_GLOBAL`].
    #[error("super global {slot}: {len} bytes; a super global may hold at most {MAX_SUPER_GLOBAL}")]
    GlobalTooLong {
        /// The slot.
        slot: u8,
        /// The value's length.
        len: usize,
    },
}

/// Check a script file name: relative, `/`-separated, no empty, `.` or `..` part, no
/// control character or `\<>:"|?*`, at most [`MAX_NAME`] bytes.
pub fn check_name(name: &str) -> Result<(), ScriptStoreError> {
    let bad = |why| {
        Err(ScriptStoreError::BadName {
            name: name.chars().take(80).collect(),
            why,
        })
    };
    if name.is_empty() {
        return bad("empty");
    }
    if name.len() > MAX_NAME {
        return bad("longer than 255 bytes");
    }
    if name.starts_with('/') || name.get(1..2) == Some(":") {
        return bad("absolute");
    }
    if name
        .chars()
        .any(|c| c.is_control() || "\\<>:\"|?*".contains(c))
    {
        return bad("a character a file name cannot have");
    }
    for part in name.split('/') {
        match part {
            "" => return bad("an empty part"),
            "." | ".." => return bad("a `.` or `..` part"),
            _ => {}
        }
    }
    Ok(())
}

/// One stored entry.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    File(Vec<u8>),
    Dir,
}

/// A stored script file or directory, as SQLite holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEntry {
    /// Its name.
    pub name: String,
    /// [`KIND_FILE`] or [`KIND_DIR`].
    pub kind: u8,
    /// A file's bytes (empty for a directory).
    pub data: Vec<u8>,
}

/// The script files and the super globals, in memory.
#[derive(Debug, Clone, Default)]
pub struct ScriptStore {
    entries: BTreeMap<String, Entry>,
    total: u64,
    globals: BTreeMap<u8, Vec<u8>>,
}

fn len64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

impl ScriptStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The store from what SQLite holds. Rows that could not have been written (a bad
    /// name, kind or slot) are skipped and returned as warnings.
    pub fn load(entries: Vec<StoredEntry>, globals: Vec<(u8, Vec<u8>)>) -> (Self, Vec<String>) {
        let mut s = Self::new();
        let mut warnings = Vec::new();
        for e in entries {
            if let Err(err) = check_name(&e.name) {
                warnings.push(format!("script file skipped: {err}"));
                continue;
            }
            let entry = match e.kind {
                KIND_FILE => Entry::File(e.data),
                KIND_DIR => Entry::Dir,
                k => {
                    warnings.push(format!("script file {:?} skipped: kind {k}", e.name));
                    continue;
                }
            };
            if let Entry::File(d) = &entry {
                s.total = s.total.saturating_add(len64(d.len()));
            }
            s.entries.insert(e.name, entry);
        }
        for (slot, value) in globals {
            if slot >= SUPER_GLOBALS {
                warnings.push(format!("super global {slot} skipped: slots are 0 to 99"));
            } else if !value.is_empty() {
                s.globals.insert(slot, value);
            }
        }
        (s, warnings)
    }

    /// Files and directories kept.
    pub fn entries(&self) -> usize {
        self.entries.len()
    }

    /// Bytes all files hold.
    pub fn total_bytes(&self) -> u64 {
        self.total
    }

    /// Whether some entry lives under `name/`.
    fn has_children(&self, name: &str) -> bool {
        let prefix = format!("{name}/");
        self.entries
            .range(prefix.clone()..)
            .next()
            .is_some_and(|(k, _)| k.starts_with(&prefix))
    }

    /// Whether `name` is a directory: made by `CreateDir`, or a file lives under it.
    fn is_dir(&self, name: &str) -> bool {
        matches!(self.entries.get(name), Some(Entry::Dir)) || self.has_children(name)
    }

    /// The first proper ancestor of `name` that is a file (a file cannot hold anything).
    fn file_ancestor(&self, name: &str) -> Option<String> {
        let mut at = 0;
        while let Some(i) = name.get(at..).and_then(|r| r.find('/')) {
            let parent = name.get(..at + i).unwrap_or_default();
            if matches!(self.entries.get(parent), Some(Entry::File(_))) {
                return Some(parent.to_owned());
            }
            at += i + 1;
        }
        None
    }

    /// `ReadFile`: a file's bytes, `None` when there is no such file.
    pub fn read(&self, name: &str) -> Result<Option<&[u8]>, ScriptStoreError> {
        check_name(name)?;
        match self.entries.get(name) {
            Some(Entry::File(d)) => Ok(Some(d)),
            _ if self.is_dir(name) => Err(ScriptStoreError::IsDirectory(name.to_owned())),
            _ => Ok(None),
        }
    }

    /// `FileType` and `FileSize`: `(kind, size)`.
    pub fn info(&self, name: &str) -> Result<(u8, u64), ScriptStoreError> {
        check_name(name)?;
        Ok(match self.entries.get(name) {
            Some(Entry::File(d)) => (KIND_FILE, len64(d.len())),
            _ if self.is_dir(name) => (KIND_DIR, 0),
            _ => (KIND_NONE, 0),
        })
    }

    /// Replace (or create) a file.
    pub fn write(&mut self, name: &str, data: Vec<u8>) -> Result<PersistOp, ScriptStoreError> {
        check_name(name)?;
        if data.len() > MAX_FILE {
            return Err(ScriptStoreError::FileTooLarge {
                name: name.to_owned(),
                size: data.len(),
            });
        }
        if self.is_dir(name) {
            return Err(ScriptStoreError::IsDirectory(name.to_owned()));
        }
        if let Some(parent) = self.file_ancestor(name) {
            return Err(ScriptStoreError::IsFile(parent));
        }
        let old = match self.entries.get(name) {
            Some(Entry::File(d)) => len64(d.len()),
            _ => {
                if self.entries.len() >= MAX_ENTRIES {
                    return Err(ScriptStoreError::TooManyFiles {
                        name: name.to_owned(),
                    });
                }
                0
            }
        };
        let total = self
            .total
            .saturating_sub(old)
            .saturating_add(len64(data.len()));
        if total > MAX_TOTAL {
            return Err(ScriptStoreError::StoreFull {
                name: name.to_owned(),
                total,
            });
        }
        self.total = total;
        self.entries
            .insert(name.to_owned(), Entry::File(data.clone()));
        Ok(PersistOp::PutScriptFile {
            name: name.to_owned(),
            kind: KIND_FILE,
            data,
        })
    }

    /// `DeleteFile`: a file, or an empty directory. Nothing to delete is no error.
    pub fn delete(&mut self, name: &str) -> Result<Option<PersistOp>, ScriptStoreError> {
        check_name(name)?;
        if self.has_children(name) {
            return Err(ScriptStoreError::NotEmpty(name.to_owned()));
        }
        match self.entries.remove(name) {
            Some(Entry::File(d)) => {
                self.total = self.total.saturating_sub(len64(d.len()));
            }
            Some(Entry::Dir) => {}
            None => return Ok(None),
        }
        Ok(Some(PersistOp::DeleteScriptFile {
            name: name.to_owned(),
        }))
    }

    /// `CreateDir`: a directory (its parents are implied). An existing one is no error.
    pub fn create_dir(&mut self, name: &str) -> Result<Option<PersistOp>, ScriptStoreError> {
        check_name(name)?;
        match self.entries.get(name) {
            Some(Entry::File(_)) => return Err(ScriptStoreError::IsFile(name.to_owned())),
            Some(Entry::Dir) => return Ok(None),
            None => {}
        }
        if let Some(parent) = self.file_ancestor(name) {
            return Err(ScriptStoreError::IsFile(parent));
        }
        if self.entries.len() >= MAX_ENTRIES {
            return Err(ScriptStoreError::TooManyFiles {
                name: name.to_owned(),
            });
        }
        self.entries.insert(name.to_owned(), Entry::Dir);
        Ok(Some(PersistOp::PutScriptFile {
            name: name.to_owned(),
            kind: KIND_DIR,
            data: Vec::new(),
        }))
    }

    /// A super global's value (empty when never set).
    pub fn global(&self, slot: u8) -> &[u8] {
        self.globals.get(&slot).map_or(&[], Vec::as_slice)
    }

    /// Every super global that is not empty, in slot order.
    pub fn globals(&self) -> Vec<(u8, Vec<u8>)> {
        self.globals.iter().map(|(s, v)| (*s, v.clone())).collect()
    }

    /// `SetSuperGlobal`: `None` when the value is unchanged.
    pub fn set_global(
        &mut self,
        slot: u8,
        value: Vec<u8>,
    ) -> Result<Option<PersistOp>, ScriptStoreError> {
        if slot >= SUPER_GLOBALS {
            return Err(ScriptStoreError::BadSlot(slot));
        }
        if value.len() > MAX_SUPER_GLOBAL {
            return Err(ScriptStoreError::GlobalTooLong {
                slot,
                len: value.len(),
            });
        }
        if self.global(slot) == value.as_slice() {
            return Ok(None);
        }
        if value.is_empty() {
            self.globals.remove(&slot);
        } else {
            self.globals.insert(slot, value.clone());
        }
        Ok(Some(PersistOp::SetSuperGlobal { slot, value }))
    }
}

/// What the hub must do after [`answer`], besides sending the answer.
#[derive(Debug, Default, PartialEq)]
pub struct Effects {
    /// For the store writer; the answer goes once they are committed.
    pub persist: Vec<PersistOp>,
    /// Placements to carry out (`CreateZoneInstance`).
    pub placements: Vec<Action>,
    /// A super global changed: every node is told.
    pub superglobal: Option<(u8, Vec<u8>)>,
    /// A `SetSuperGlobal` was refused: the asking node is told the value that stands, so
    /// its zones agree with the rest of the cluster again.
    pub restore: Option<(u8, Vec<u8>)>,
    /// `RemoveZoneInstance`: move its players to instance 0, then stop it.
    pub remove: Option<InstanceKey>,
}

/// The area called `name` (case-insensitive), as the world spells it.
pub(crate) fn area_named(areas: &[String], name: &str) -> Option<String> {
    areas.iter().find(|a| a.eq_ignore_ascii_case(name)).cloned()
}

/// Answer one `ScriptStore` operation. Files and super globals change the `store` (the
/// ops to persist are in the effects); `CreateInstance` may place an instance in `dir`
/// (the assignment to send is in the effects); the other instance questions read `dir`
/// and the nodes' last heartbeats.
pub fn answer(
    store: &mut ScriptStore,
    dir: &mut Directory,
    areas: &[String],
    op: ScriptStoreOp,
) -> (ScriptStoreResult, Effects) {
    let mut fx = Effects::default();
    let refused = |e: ScriptStoreError| ScriptStoreResult::Error(e.to_string());
    let result = match op {
        // The hub reloads scripts itself (`Hub::reload_scripts`); it never comes here.
        ScriptStoreOp::RefreshScripts
        | ScriptStoreOp::SetEnv { .. }
        | ScriptStoreOp::Weather { .. }
        | ScriptStoreOp::FindPlayer { .. }
        | ScriptStoreOp::Tell { .. }
        | ScriptStoreOp::ActorQuery { .. }
        | ScriptStoreOp::Spawn { .. }
        | ScriptStoreOp::ZoneActors { .. }
        | ScriptStoreOp::ZoneActorsAnswer { .. }
        | ScriptStoreOp::SpawnItem { .. }
        | ScriptStoreOp::ActorAnswer { .. } => {
            ScriptStoreResult::Error("the hub answers this itself".into())
        }
        ScriptStoreOp::ReadFile { name } => match store.read(&name) {
            Ok(d) => ScriptStoreResult::File(d.map(<[u8]>::to_vec)),
            Err(e) => refused(e),
        },
        ScriptStoreOp::WriteFile { name, data } => match store.write(&name, data) {
            Ok(op) => {
                fx.persist.push(op);
                ScriptStoreResult::Done
            }
            Err(e) => refused(e),
        },
        ScriptStoreOp::DeleteFile { name } => match store.delete(&name) {
            Ok(op) => {
                fx.persist.extend(op);
                ScriptStoreResult::Done
            }
            Err(e) => refused(e),
        },
        ScriptStoreOp::FileInfo { name } => match store.info(&name) {
            Ok((kind, size)) => ScriptStoreResult::Info { kind, size },
            Err(e) => refused(e),
        },
        ScriptStoreOp::CreateDir { name } => match store.create_dir(&name) {
            Ok(op) => {
                fx.persist.extend(op);
                ScriptStoreResult::Done
            }
            Err(e) => refused(e),
        },
        ScriptStoreOp::SetSuperGlobal { slot, value } => {
            match store.set_global(slot, value.clone()) {
                Ok(Some(op)) => {
                    fx.persist.push(op);
                    fx.superglobal = Some((slot, value));
                    ScriptStoreResult::Done
                }
                Ok(None) => ScriptStoreResult::Done,
                Err(e) => {
                    if slot < SUPER_GLOBALS {
                        fx.restore = Some((slot, store.global(slot).to_vec()));
                    }
                    refused(e)
                }
            }
        }
        ScriptStoreOp::InstanceExists { area, instance } => {
            let exists = area_named(areas, &area)
                .is_some_and(|area| dir.placement(&InstanceKey { area, instance }).is_some());
            ScriptStoreResult::Int(i32::from(exists))
        }
        ScriptStoreOp::CreateInstance { area, instance } => {
            ScriptStoreResult::Int(create_instance(dir, areas, &area, instance, &mut fx))
        }
        ScriptStoreOp::RemoveInstance { area, instance } => {
            if instance > 0
                && let Some(area) = area_named(areas, &area)
            {
                let key = InstanceKey { area, instance };
                if dir.placement(&key).is_some() {
                    fx.remove = Some(key);
                }
            }
            ScriptStoreResult::Done
        }
        ScriptStoreOp::CountActors {
            area,
            instance,
            players_only,
        } => {
            let n = area_named(areas, &area).map_or(0u64, |area| {
                dir.placements()
                    .filter(|(k, _)| {
                        k.area == area && (instance == -1 || i32::from(k.instance) == instance)
                    })
                    .map(|(_, p)| {
                        let npcs = if players_only { 0 } else { p.npcs };
                        u64::from(p.players) + u64::from(npcs)
                    })
                    .sum()
            });
            ScriptStoreResult::Int(i32::try_from(n).unwrap_or(i32::MAX))
        }
    };
    (result, fx)
}

/// `CreateZoneInstance(area, n)`: place the instance as the gateway places instances on
/// demand (least loaded node); `n` 0 takes the first free number in 1..=99. The answer
/// is the instance (an existing one counts), or 0 when there is no such area, no free
/// number, or no node can host it now. The instance is placed, not yet running: a
/// SetArea into it waits until it is ready, as for any on-demand instance.
fn create_instance(
    dir: &mut Directory,
    areas: &[String],
    area: &str,
    instance: u16,
    fx: &mut Effects,
) -> i32 {
    let Some(area) = area_named(areas, area) else {
        return 0;
    };
    let n = if instance == 0 {
        let free = (1..=MAX_PICKED_INSTANCE).find(|n| {
            dir.placement(&InstanceKey {
                area: area.clone(),
                instance: *n,
            })
            .is_none()
        });
        let Some(n) = free else { return 0 };
        n
    } else {
        instance
    };
    let key = InstanceKey { area, instance: n };
    match dir.ensure(&key) {
        Some(a) => fx.placements.push(a),
        None if dir.placement(&key).is_none() => return 0,
        None => {}
    }
    i32::from(n)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn names_are_checked_again() {
        for ok in ["a", "logs/boot.txt", "a b/c-d_e.dat", "caf\u{e9}.txt"] {
            assert_eq!(check_name(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "/etc/passwd",
            "c:/x",
            "../x",
            "a/../b",
            "a//b",
            "a/",
            "./a",
            "a\u{1}b",
            "a\u{7f}",
            "a\\b",
            "a?",
        ] {
            assert!(
                matches!(check_name(bad), Err(ScriptStoreError::BadName { .. })),
                "{bad:?}"
            );
        }
        assert!(check_name(&"x".repeat(256)).is_err());
        assert!(check_name(&"x".repeat(255)).is_ok());
    }

    #[test]
    fn files_directories_and_their_kinds() {
        let mut s = ScriptStore::new();
        assert_eq!(s.read("a.txt"), Ok(None));
        assert_eq!(s.info("a.txt"), Ok((KIND_NONE, 0)));
        s.write("logs/day1.txt", b"hello".to_vec()).unwrap();
        assert_eq!(s.read("logs/day1.txt"), Ok(Some(&b"hello"[..])));
        assert_eq!(s.info("logs/day1.txt"), Ok((KIND_FILE, 5)));
        // A name with a file under it is a directory, made or not.
        assert_eq!(s.info("logs"), Ok((KIND_DIR, 0)));
        assert_eq!(s.info("log"), Ok((KIND_NONE, 0)));
        assert!(matches!(
            s.write("logs", Vec::new()),
            Err(ScriptStoreError::IsDirectory(_))
        ));
        assert!(matches!(
            s.read("logs"),
            Err(ScriptStoreError::IsDirectory(_))
        ));
        // Nothing lives under a file.
        assert!(matches!(
            s.write("logs/day1.txt/x", Vec::new()),
            Err(ScriptStoreError::IsFile(n)) if n == "logs/day1.txt"
        ));
        assert!(s.create_dir("saves").unwrap().is_some());
        assert!(s.create_dir("saves").unwrap().is_none());
        assert_eq!(s.info("saves"), Ok((KIND_DIR, 0)));
        assert!(matches!(
            s.create_dir("logs/day1.txt"),
            Err(ScriptStoreError::IsFile(_))
        ));
        assert!(matches!(
            s.delete("logs"),
            Err(ScriptStoreError::NotEmpty(_))
        ));
        assert!(s.delete("logs/day1.txt").unwrap().is_some());
        assert_eq!(s.info("logs"), Ok((KIND_NONE, 0)));
        assert!(s.delete("saves").unwrap().is_some());
        assert!(s.delete("nothing").unwrap().is_none());
        assert_eq!((s.entries(), s.total_bytes()), (0, 0));
    }

    #[test]
    fn limits_give_clear_errors() {
        let mut s = ScriptStore::new();
        let e = s.write("big", vec![0; MAX_FILE + 1]).unwrap_err();
        assert!(e.to_string().contains("at most 16777216 bytes"), "{e}");
        s.write("big", vec![0; MAX_FILE]).unwrap();
        // Replacing a file counts its new size only.
        s.write("big", vec![1; MAX_FILE]).unwrap();
        assert_eq!(s.total_bytes(), len64(MAX_FILE));
        for i in 1..16 {
            s.write(&format!("f{i}"), vec![0; MAX_FILE]).unwrap();
        }
        let e = s.write("one-more", vec![0; 1]).unwrap_err();
        assert!(matches!(e, ScriptStoreError::StoreFull { .. }), "{e}");
        assert!(e.to_string().contains("at most 268435456"), "{e}");
        let mut s = ScriptStore::new();
        for i in 0..MAX_ENTRIES {
            s.write(&format!("f{i}"), Vec::new()).unwrap();
        }
        assert!(matches!(
            s.write("x", Vec::new()),
            Err(ScriptStoreError::TooManyFiles { .. })
        ));
        assert!(matches!(
            s.create_dir("d"),
            Err(ScriptStoreError::TooManyFiles { .. })
        ));
        // An existing file can still be rewritten.
        s.write("f0", b"x".to_vec()).unwrap();
    }

    #[test]
    fn super_globals() {
        let mut s = ScriptStore::new();
        assert_eq!(s.global(3), b"");
        assert!(s.set_global(3, b"x".to_vec()).unwrap().is_some());
        assert!(s.set_global(3, b"x".to_vec()).unwrap().is_none());
        assert!(s.set_global(5, b"y".to_vec()).unwrap().is_some());
        assert_eq!(s.globals(), vec![(3, b"x".to_vec()), (5, b"y".to_vec())]);
        assert!(s.set_global(3, Vec::new()).unwrap().is_some());
        assert_eq!(s.globals(), vec![(5, b"y".to_vec())]);
        assert_eq!(
            s.set_global(100, Vec::new()),
            Err(ScriptStoreError::BadSlot(100))
        );
        assert!(matches!(
            s.set_global(1, vec![0; MAX_SUPER_GLOBAL + 1]),
            Err(ScriptStoreError::GlobalTooLong { .. })
        ));
    }

    #[test]
    fn load_skips_rows_that_could_not_have_been_written() {
        let (s, warnings) = ScriptStore::load(
            vec![
                StoredEntry {
                    name: "ok.txt".into(),
                    kind: KIND_FILE,
                    data: b"abc".to_vec(),
                },
                StoredEntry {
                    name: "../evil".into(),
                    kind: KIND_FILE,
                    data: Vec::new(),
                },
                StoredEntry {
                    name: "odd".into(),
                    kind: 7,
                    data: Vec::new(),
                },
                StoredEntry {
                    name: "dir".into(),
                    kind: KIND_DIR,
                    data: Vec::new(),
                },
            ],
            vec![(1, b"v".to_vec()), (200, b"w".to_vec())],
        );
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert_eq!((s.entries(), s.total_bytes()), (2, 3));
        assert_eq!(s.globals(), vec![(1, b"v".to_vec())]);
    }

    fn cluster() -> (Directory, Vec<String>) {
        let areas = vec!["Plains".to_owned(), "Cave".to_owned()];
        let mut d = Directory::new(areas.clone(), 100);
        let _ = d.register(0, "n1", "a", 64, 1, &[], &|_| false);
        (d, areas)
    }

    #[test]
    fn the_hub_answers_file_and_global_requests() {
        let (mut d, areas) = cluster();
        let mut s = ScriptStore::new();
        let (r, fx) = answer(
            &mut s,
            &mut d,
            &areas,
            ScriptStoreOp::WriteFile {
                name: "a/b.txt".into(),
                data: b"hi".to_vec(),
            },
        );
        assert_eq!(r, ScriptStoreResult::Done);
        assert_eq!(fx.persist.len(), 1);
        let read = |s: &mut ScriptStore, d: &mut Directory, name: &str| {
            answer(s, d, &areas, ScriptStoreOp::ReadFile { name: name.into() }).0
        };
        assert_eq!(
            read(&mut s, &mut d, "a/b.txt"),
            ScriptStoreResult::File(Some(b"hi".to_vec()))
        );
        assert_eq!(
            read(&mut s, &mut d, "a/c.txt"),
            ScriptStoreResult::File(None)
        );
        assert!(matches!(
            read(&mut s, &mut d, "../x"),
            ScriptStoreResult::Error(e) if e.contains("bad script file name")
        ));
        let (r, _) = answer(
            &mut s,
            &mut d,
            &areas,
            ScriptStoreOp::FileInfo { name: "a".into() },
        );
        assert_eq!(r, ScriptStoreResult::Info { kind: 2, size: 0 });
        let (r, fx) = answer(
            &mut s,
            &mut d,
            &areas,
            ScriptStoreOp::SetSuperGlobal {
                slot: 7,
                value: b"v".to_vec(),
            },
        );
        assert_eq!(r, ScriptStoreResult::Done);
        assert_eq!(fx.superglobal, Some((7, b"v".to_vec())));
        let (r, fx) = answer(
            &mut s,
            &mut d,
            &areas,
            ScriptStoreOp::SetSuperGlobal {
                slot: 7,
                value: vec![1; MAX_SUPER_GLOBAL + 1],
            },
        );
        assert!(matches!(r, ScriptStoreResult::Error(_)));
        assert_eq!(fx.superglobal, None);
        assert_eq!(fx.restore, Some((7, b"v".to_vec())));
    }

    #[test]
    fn the_hub_answers_instance_requests_from_the_directory() {
        let (mut d, areas) = cluster();
        let mut s = ScriptStore::new();
        let mut ask = |d: &mut Directory, op| answer(&mut s, d, &areas, op);
        let exists = |area: &str, instance| ScriptStoreOp::InstanceExists {
            area: area.into(),
            instance,
        };
        assert_eq!(
            ask(&mut d, exists("plains", 0)).0,
            ScriptStoreResult::Int(1)
        );
        assert_eq!(
            ask(&mut d, exists("Plains", 4)).0,
            ScriptStoreResult::Int(0)
        );
        assert_eq!(
            ask(&mut d, exists("Nowhere", 0)).0,
            ScriptStoreResult::Int(0)
        );
        let create = |area: &str, instance| ScriptStoreOp::CreateInstance {
            area: area.into(),
            instance,
        };
        let (r, fx) = ask(&mut d, create("Plains", 0));
        assert_eq!(r, ScriptStoreResult::Int(1));
        assert!(matches!(&fx.placements[..], [Action::Assign { key, .. }] if key.instance == 1));
        assert_eq!(
            ask(&mut d, create("Plains", 0)).0,
            ScriptStoreResult::Int(2)
        );
        // An existing instance is no failure; nothing new is placed.
        let (r, fx) = ask(&mut d, create("Plains", 2));
        assert_eq!((r, fx.placements.len()), (ScriptStoreResult::Int(2), 0));
        assert_eq!(
            ask(&mut d, create("Plains", 40)).0,
            ScriptStoreResult::Int(40)
        );
        assert_eq!(
            ask(&mut d, create("Nowhere", 0)).0,
            ScriptStoreResult::Int(0)
        );
        assert_eq!(
            ask(&mut d, exists("Plains", 1)).0,
            ScriptStoreResult::Int(1)
        );
        // Counts come from the nodes' heartbeats.
        let key = |instance| InstanceKey {
            area: "Plains".into(),
            instance,
        };
        let load = |instance, players, npcs| shared::internal::InstanceLoad {
            key: key(instance),
            players,
            npcs,
            ..Default::default()
        };
        d.instance_load("n1", &load(0, 3, 10));
        d.instance_load("n1", &load(1, 2, 5));
        let count = |instance, players_only| ScriptStoreOp::CountActors {
            area: "plains".into(),
            instance,
            players_only,
        };
        assert_eq!(ask(&mut d, count(0, false)).0, ScriptStoreResult::Int(13));
        assert_eq!(ask(&mut d, count(0, true)).0, ScriptStoreResult::Int(3));
        assert_eq!(ask(&mut d, count(-1, false)).0, ScriptStoreResult::Int(20));
        assert_eq!(ask(&mut d, count(-1, true)).0, ScriptStoreResult::Int(5));
        assert_eq!(ask(&mut d, count(9, false)).0, ScriptStoreResult::Int(0));
        // Removal is the hub's to carry out; instance 0 and unknown ones are not removed.
        let remove = |instance| ScriptStoreOp::RemoveInstance {
            area: "PLAINS".into(),
            instance,
        };
        assert_eq!(ask(&mut d, remove(1)).1.remove, Some(key(1)));
        assert_eq!(ask(&mut d, remove(0)).1.remove, None);
        assert_eq!(ask(&mut d, remove(77)).1.remove, None);
    }

    #[test]
    fn create_instance_fails_when_no_node_can_host_it() {
        let areas = vec!["Plains".to_owned()];
        let mut d = Directory::new(areas.clone(), 1);
        let mut s = ScriptStore::new();
        let (r, fx) = answer(
            &mut s,
            &mut d,
            &areas,
            ScriptStoreOp::CreateInstance {
                area: "Plains".into(),
                instance: 0,
            },
        );
        assert_eq!((r, fx.placements.len()), (ScriptStoreResult::Int(0), 0));
    }
}
