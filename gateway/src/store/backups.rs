//! Backup files an operator keeps beside the data (`backup_dir`): listing them, making one
//! while the gateway runs, and reading one character out of one (the console's "restore
//! one character from a backup file").
//!
//! A backup is named by its file name alone (`[A-Za-z0-9._-]`, at most 100 bytes, no
//! leading dot), always inside the backup directory: an API caller cannot make the
//! gateway open any other file.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};
use serde::Serialize;
use shared::internal::ActorStateDto;

use super::{MIGRATIONS, STATE_VERSION, StoreError};

/// Longest backup file name.
pub const MAX_NAME: usize = 100;

/// One backup file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BackupFile {
    /// File name inside the backup directory.
    pub name: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Last modified (Unix ms).
    pub modified_ms: u64,
}

/// A character as a backup holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct BackedUpCharacter {
    /// Its account's name.
    pub user: String,
    /// Its slot then.
    pub slot: u8,
    /// Its whole state then.
    pub state: ActorStateDto,
}

/// Checks a backup file name: the file is `dir/name`, never elsewhere.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_NAME {
        return Err(format!("a backup name is 1..={MAX_NAME} bytes"));
    }
    if name.starts_with('.')
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return Err(
            "a backup name is a file name of letters, digits, '.', '_' and '-' (not starting with '.')"
                .into(),
        );
    }
    Ok(())
}

/// The backup files in `dir`, newest first (none when the directory does not exist).
pub fn list(dir: &Path) -> Result<Vec<BackupFile>, StoreError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(StoreError::Dir {
                path: dir.to_path_buf(),
                source,
            });
        }
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        let Ok(meta) = entry.metadata() else { continue };
        if !meta.is_file() || check_name(&name).is_err() {
            continue;
        }
        let modified_ms = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        out.push(BackupFile {
            name,
            bytes: meta.len(),
            modified_ms,
        });
    }
    out.sort_by(|a, b| {
        b.modified_ms
            .cmp(&a.modified_ms)
            .then_with(|| b.name.cmp(&a.name))
    });
    Ok(out)
}

/// Makes a backup of the database in `data_dir` as `dir/name` (see [`super::backup`]).
pub fn make(data_dir: &Path, dir: &Path, name: &str) -> Result<PathBuf, StoreError> {
    check_name(name).map_err(|e| bad_name(dir, e))?;
    std::fs::create_dir_all(dir).map_err(|source| StoreError::Dir {
        path: dir.to_path_buf(),
        source,
    })?;
    let to = dir.join(name);
    super::backup(data_dir, &to)?;
    Ok(to)
}

fn bad_name(dir: &Path, e: String) -> StoreError {
    StoreError::Dir {
        path: dir.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, e),
    }
}

/// Reads the character called `name` (case-insensitive) from the backup `dir/file`
/// (opened read-only); `Ok(None)` when the backup has no such character.
pub fn read_character(
    dir: &Path,
    file: &str,
    name: &str,
) -> Result<Option<BackedUpCharacter>, StoreError> {
    check_name(file).map_err(|e| bad_name(dir, e))?;
    let path = dir.join(file);
    if !path.is_file() {
        return Err(StoreError::Dir {
            path,
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such backup"),
        });
    }
    let conn = Connection::open_with_flags(
        &path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let known = i64::try_from(MIGRATIONS.len()).unwrap_or(i64::MAX);
    if version > known {
        return Err(StoreError::TooNew(version, known));
    }
    if version < 1 {
        return Err(StoreError::BadRow {
            account: 0,
            name: name.to_owned(),
            reason: format!("{file} is not a gateway database"),
        });
    }
    let mut st = conn.prepare(
        "SELECT a.id, a.user, c.slot, c.state_version, c.state
         FROM characters c JOIN accounts a ON a.id = c.account_id
         WHERE c.name = ?1",
    )?;
    let mut rows = st.query([name])?;
    let Some(row) = rows.next()? else {
        return Ok(None);
    };
    let account = u64::try_from(row.get::<_, i64>(0)?).unwrap_or(0);
    let user: String = row.get(1)?;
    let slot = u8::try_from(row.get::<_, i64>(2)?).unwrap_or(u8::MAX);
    let version: i64 = row.get(3)?;
    let blob: Vec<u8> = row.get(4)?;
    let bad = |reason: String| StoreError::BadRow {
        account,
        name: name.to_owned(),
        reason,
    };
    if version != STATE_VERSION {
        return Err(bad(format!("unknown state version {version}")));
    }
    let state = rmp_serde::from_slice::<ActorStateDto>(&blob).map_err(|e| bad(e.to_string()))?;
    Ok(Some(BackedUpCharacter { user, slot, state }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backup_name_is_a_plain_file_name() {
        for ok in ["gw-2026-11-29.sqlite3", "a", "x_y-z.db"] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "../gateway.sqlite3",
            "/etc/passwd",
            "a/b",
            ".hidden",
            "a b",
            "ü.db",
            &"x".repeat(MAX_NAME + 1),
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_file_that_is_no_database_is_a_clear_error() {
        let dir = std::env::temp_dir().join(format!("rc-backups-junk-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(
            dir.join("junk.sqlite3"),
            b"not a database at all, just bytes",
        );
        let _ = std::fs::write(dir.join("empty.sqlite3"), b"");
        assert!(read_character(&dir, "junk.sqlite3", "x").is_err());
        // An empty file opens as an empty database: not a gateway's.
        let e = read_character(&dir, "empty.sqlite3", "x")
            .map(|_| ())
            .unwrap_err();
        assert!(e.to_string().contains("not a gateway database"), "{e}");
        assert_eq!(list(&dir).map(|v| v.len()).ok(), Some(2));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_missing_backup_directory_lists_nothing_and_a_missing_file_is_an_error() {
        let dir = std::env::temp_dir().join(format!("rc-backups-none-{}", std::process::id()));
        assert_eq!(list(&dir).map(|v| v.len()).ok(), Some(0));
        assert!(read_character(&dir, "nope.sqlite3", "x").is_err());
        assert!(read_character(&dir, "../nope", "x").is_err());
    }
}
