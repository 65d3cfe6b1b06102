//! Realm Crafter's script data into the cluster's script store: `Superglobals.dat` (the
//! 100 super globals, Blitz `WriteString`s: a 4-byte little-endian length, then the bytes)
//! and the `Script Files` folder of a `Data/Server Data` directory, as a studio moving a
//! running game brings them. `gateway import-script-data` runs it on a stopped gateway's
//! database; `gateway admin import-script-data` sends the same data to a running one,
//! which tells every zone node.
//!
//! Names are stored as the zones ask for them (lower case, `/`-separated); a file the store
//! refuses (too large, a bad name, the store full) is skipped and reported, never fatal.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::script_store::ScriptStore;
use crate::session::PersistOp;

/// Super global slots in `Superglobals.dat`.
pub const SLOTS: usize = 100;

/// What could not be imported at all.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// `Superglobals.dat` ends inside a string.
    #[error("Superglobals.dat: super global {slot} claims {len} bytes but the file ends first")]
    Truncated {
        /// The slot being read.
        slot: usize,
        /// Its claimed length.
        len: u64,
    },
    /// Neither file is there.
    #[error(
        "{0}: neither Superglobals.dat nor a Script Files folder (give Realm Crafter's Data/Server Data directory)"
    )]
    Nothing(String),
    /// Reading failed.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}

/// Script data read from a `Server Data` directory (its `Debug` shows counts, not bytes:
/// it is logged with the admin command that carries it).
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScriptData {
    /// The super globals, slot by slot (absent: the file was not there).
    pub globals: Option<Vec<Vec<u8>>>,
    /// Directories of `Script Files`, parents first.
    pub dirs: Vec<String>,
    /// Files of `Script Files`: name and bytes.
    pub files: Vec<(String, Vec<u8>)>,
    /// What was left out while reading, and why.
    pub skipped: Vec<String>,
}

impl std::fmt::Debug for ScriptData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptData")
            .field("globals", &self.globals.as_ref().map(Vec::len))
            .field("dirs", &self.dirs.len())
            .field("files", &self.files.len())
            .field("skipped", &self.skipped.len())
            .finish()
    }
}

/// What an import did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportReport {
    /// Super globals set (non-empty values among the 100 slots written).
    pub globals: usize,
    /// Files written.
    pub files: usize,
    /// Directories created.
    pub dirs: usize,
    /// What was skipped, and why.
    pub skipped: Vec<String>,
}

impl std::fmt::Display for ImportReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "imported {} super globals (of {SLOTS} slots), {} script files, {} directories; skipped {}",
            self.globals,
            self.files,
            self.dirs,
            self.skipped.len()
        )
    }
}

/// Parse `Superglobals.dat`: up to 100 strings (a shorter file leaves the rest empty, as
/// Blitz's `ReadString` at the end of a file does).
pub fn parse_superglobals(bytes: &[u8]) -> Result<Vec<Vec<u8>>, ImportError> {
    let mut out = Vec::with_capacity(SLOTS);
    let mut rest = bytes;
    for slot in 0..SLOTS {
        let Some((len, tail)) = rest.split_first_chunk::<4>() else {
            out.push(Vec::new());
            rest = &[];
            continue;
        };
        let len = u32::from_le_bytes(*len);
        let Some(value) = usize::try_from(len).ok().and_then(|n| tail.get(..n)) else {
            return Err(ImportError::Truncated {
                slot,
                len: u64::from(len),
            });
        };
        out.push(value.to_vec());
        rest = tail.get(value.len()..).unwrap_or_default();
    }
    Ok(out)
}

/// Read `Superglobals.dat` and `Script Files/` of a `Server Data` directory.
pub fn read_server_data(dir: &Path) -> Result<ScriptData, ImportError> {
    let io = |p: &Path| {
        let path = p.display().to_string();
        move |source| ImportError::Io { path, source }
    };
    let mut data = ScriptData::default();
    let sg = dir.join("Superglobals.dat");
    if sg.is_file() {
        let bytes = std::fs::read(&sg).map_err(io(&sg))?;
        data.globals = Some(parse_superglobals(&bytes)?);
    }
    let files = dir.join("Script Files");
    let has_files = files.is_dir();
    if has_files {
        walk(&files, "", &mut data, 0)?;
    }
    if data.globals.is_none() && !has_files {
        return Err(ImportError::Nothing(dir.display().to_string()));
    }
    Ok(data)
}

/// How deep `Script Files` may nest.
const MAX_DEPTH: usize = 16;

fn walk(dir: &Path, prefix: &str, data: &mut ScriptData, depth: usize) -> Result<(), ImportError> {
    let io = |p: &Path| {
        let path = p.display().to_string();
        move |source| ImportError::Io { path, source }
    };
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(io(dir))?
        .collect::<Result<_, _>>()
        .map_err(io(dir))?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for e in entries {
        let path = e.path();
        let Some(name) = e.file_name().to_str().map(str::to_ascii_lowercase) else {
            data.skipped
                .push(format!("{}: not a UTF-8 name", path.display()));
            continue;
        };
        let full = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        // Not followed: a link could lead out of the folder.
        let kind = e.file_type().map_err(io(&path))?;
        if kind.is_symlink() {
            data.skipped.push(format!("{full}: a link, not followed"));
        } else if kind.is_dir() {
            if depth >= MAX_DEPTH {
                data.skipped
                    .push(format!("{full}: nested more than {MAX_DEPTH} folders deep"));
                continue;
            }
            data.dirs.push(full.clone());
            walk(&path, &full, data, depth + 1)?;
        } else if kind.is_file() {
            let bytes = std::fs::read(&path).map_err(io(&path))?;
            data.files.push((full, bytes));
        }
    }
    Ok(())
}

/// Apply imported data to the store: every super global slot from the file (an empty one
/// clears it), the directories, then the files (replacing one of the same name). Returns
/// what the store writer must persist, and the report.
pub fn apply(store: &mut ScriptStore, data: ScriptData) -> (Vec<PersistOp>, ImportReport) {
    let mut ops = Vec::new();
    let mut report = ImportReport {
        skipped: data.skipped,
        ..ImportReport::default()
    };
    if let Some(globals) = data.globals {
        for (slot, value) in globals.into_iter().enumerate().take(SLOTS) {
            let Ok(slot) = u8::try_from(slot) else {
                continue;
            };
            let set = !value.is_empty();
            match store.set_global(slot, value) {
                Ok(op) => {
                    ops.extend(op);
                    report.globals += usize::from(set);
                }
                Err(e) => report.skipped.push(e.to_string()),
            }
        }
    }
    for d in data.dirs {
        match store.create_dir(&d) {
            Ok(op) => {
                ops.extend(op);
                report.dirs += 1;
            }
            Err(e) => report.skipped.push(e.to_string()),
        }
    }
    for (name, bytes) in data.files {
        match store.write(&name, bytes) {
            Ok(op) => {
                ops.push(op);
                report.files += 1;
            }
            Err(e) => report.skipped.push(e.to_string()),
        }
    }
    (ops, report)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use super::*;

    fn blitz_strings(values: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for v in values {
            out.extend_from_slice(&u32::try_from(v.len()).unwrap().to_le_bytes());
            out.extend_from_slice(v);
        }
        out
    }

    #[test]
    fn superglobals_read_as_blitz_wrote_them() {
        let mut values: Vec<&[u8]> = vec![b""; SLOTS];
        values[0] = b"Rat King slain";
        values[99] = b"42";
        let g = parse_superglobals(&blitz_strings(&values)).unwrap();
        assert_eq!(g.len(), SLOTS);
        assert_eq!(g[0], b"Rat King slain");
        assert_eq!(g[99], b"42");
        assert!(g[1..99].iter().all(Vec::is_empty));
        // A short file: the rest are empty, as ReadString at the end of a file gives.
        let g = parse_superglobals(&blitz_strings(&[b"a", b"b"])).unwrap();
        assert_eq!(
            (g.len(), g[1].as_slice(), g[2].len()),
            (SLOTS, &b"b"[..], 0)
        );
        assert_eq!(parse_superglobals(&[]).unwrap().len(), SLOTS);
        // A length past the end is an error naming the slot, never a panic.
        let mut bad = blitz_strings(&[b"ok"]);
        bad.extend_from_slice(&1_000u32.to_le_bytes());
        bad.extend_from_slice(b"short");
        let e = parse_superglobals(&bad).unwrap_err().to_string();
        assert!(e.contains("super global 1"), "{e}");
        assert!(
            parse_superglobals(&[1, 2])
                .unwrap()
                .iter()
                .all(Vec::is_empty)
        );
    }

    #[test]
    fn a_server_data_folder_imports_into_the_store() {
        let dir = std::env::temp_dir().join(format!("rc-import-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("Script Files/Mail")).unwrap();
        std::fs::write(
            dir.join("Superglobals.dat"),
            blitz_strings(&[b"first", b"", b"third"]),
        )
        .unwrap();
        std::fs::write(dir.join("Script Files/Mail/Bob.txt"), b"hello").unwrap();
        std::fs::write(dir.join("Script Files/Top.dat"), b"x").unwrap();
        std::fs::write(
            dir.join("Script Files/Huge.bin"),
            vec![0u8; crate::script_store::MAX_FILE + 1],
        )
        .unwrap();
        let data = read_server_data(&dir).unwrap();
        assert_eq!(data.dirs, ["mail"]);
        let mut store = ScriptStore::new();
        store.set_global(5, b"old".to_vec()).unwrap();
        let (ops, report) = apply(&mut store, data);
        assert_eq!((report.globals, report.files, report.dirs), (2, 2, 1));
        assert_eq!(report.skipped.len(), 1, "{:?}", report.skipped);
        assert!(
            report.skipped[0].contains("huge.bin"),
            "{:?}",
            report.skipped
        );
        assert_eq!(store.global(0), b"first");
        assert_eq!(store.global(2), b"third");
        assert_eq!(store.global(5), b"", "every slot comes from the file");
        assert_eq!(store.read("mail/bob.txt").unwrap(), Some(&b"hello"[..]));
        assert!(!ops.is_empty());
        assert!(report.to_string().starts_with("imported 2 super globals"));
        let e = read_server_data(&dir.join("Script Files/Mail"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("neither"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
