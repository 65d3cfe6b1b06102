//! The update list and the maintenance lock as one immutable value, [`Gate`]: what the
//! login menu answers to `P_FetchUpdateFiles`, what the update host may serve, and
//! whether the server is locked (Realm Crafter's "lock updates server").
//!
//! Pure: the shell (`crate::updates`) keeps the current `Gate` and swaps in a new one when
//! an operator locks, unlocks or the list is reloaded; a session reads the one it was given
//! for its packet.

use std::collections::HashMap;

use shared::content::updates::download_name;
use shared::proto::UpdateFileEntry;

/// The update list and the lock at one moment.
#[doc(alias = "UpdateFile", alias = "ServerLocked")]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Gate {
    /// Why the server is locked, or `None` when it is open. An empty reason is a lock
    /// without one.
    pub lock: Option<String>,
    files: Vec<UpdateFileEntry>,
    /// Download name (upper case, ending `.DAT`) → index in `files`.
    by_download: HashMap<Vec<u8>, usize>,
}

impl Gate {
    /// An open gate with this update list.
    pub fn new(files: Vec<UpdateFileEntry>) -> Self {
        let mut by_download = HashMap::with_capacity(files.len());
        for (i, f) in files.iter().enumerate() {
            // Two names that differ only in case download as one: the first wins.
            by_download
                .entry(download_name(f.name.as_bytes()))
                .or_insert(i);
        }
        Self {
            lock: None,
            files,
            by_download,
        }
    }

    /// The same list, locked with `reason` (`None`: open).
    pub fn with_lock(&self, reason: Option<String>) -> Self {
        Self {
            lock: reason,
            ..self.clone()
        }
    }

    /// The update list.
    pub fn files(&self) -> &[UpdateFileEntry] {
        &self.files
    }

    /// Whether the server is locked.
    pub fn is_locked(&self) -> bool {
        self.lock.is_some()
    }

    /// What a locked server tells whoever it refuses or removes (the close reason and the
    /// chat line): `None` when open.
    pub fn lock_message(&self) -> Option<String> {
        self.lock.as_deref().map(lock_message)
    }

    /// The listed file a request path names (`/NAME.DAT`, as the client builds it from
    /// [`download_name`]; compared in upper case), with its download name; `None` for
    /// anything else (another path, a folder, a name not in the list).
    pub fn download(&self, path: &str) -> Option<(&UpdateFileEntry, String)> {
        let name = path.strip_prefix('/')?;
        if name.is_empty() || name.contains('/') {
            return None;
        }
        let key = name.as_bytes().to_ascii_uppercase();
        let f = self.files.get(*self.by_download.get(&key)?)?;
        // Download names are Latin-1 bytes; the file on disk is named by their reading.
        Some((f, key.iter().map(|&b| char::from(b)).collect()))
    }
}

/// Longest lock reason kept (bytes): it travels in a QUIC close reason and a chat line.
pub const MAX_LOCK_REASON: usize = 160;

/// An operator's lock reason made fit to show: one line (control characters become
/// spaces), trimmed, at most [`MAX_LOCK_REASON`] bytes (cut at a character boundary).
pub fn clean_reason(reason: &str) -> String {
    let mut out = String::new();
    for c in reason.trim().chars() {
        if out.len() + c.len_utf8() > MAX_LOCK_REASON {
            break;
        }
        out.push(if c.is_control() { ' ' } else { c });
    }
    out.trim_end().to_owned()
}

/// The message of a lock with `reason` (empty: none given).
pub fn lock_message(reason: &str) -> String {
    let reason = reason.trim();
    if reason.is_empty() {
        "the server is locked for maintenance; try again later".to_owned()
    } else {
        format!("the server is locked for maintenance ({reason}); try again later")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::wire::RcString;

    fn gate() -> Gate {
        Gate::new(vec![
            UpdateFileEntry {
                crc: 1,
                name: RcString::from("Data\\Game Data\\Hosts.dat"),
            },
            UpdateFileEntry {
                crc: 2,
                name: RcString::from("Game.exe"),
            },
        ])
    }

    #[test]
    fn only_listed_names_are_found() {
        let g = gate();
        let (f, name) = g.download("/DATA!!GAME!!!DATA!!HOSTS.DAT.DAT").unwrap();
        assert_eq!(f.crc, 1);
        assert_eq!(name, "DATA!!GAME!!!DATA!!HOSTS.DAT.DAT");
        assert_eq!(g.download("/game.exe.dat").unwrap().1, "GAME.EXE.DAT");
        for bad in [
            "",
            "/",
            "GAME.EXE.DAT",
            "/GAME.EXE",
            "/x/GAME.EXE.DAT",
            "/../GAME.EXE.DAT",
            "/..%2FGAME.EXE.DAT",
            "/Files.dat",
        ] {
            assert!(g.download(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn reasons_are_one_short_line() {
        assert_eq!(clean_reason("  patch\n1.2 "), "patch 1.2");
        let long = clean_reason(&"é".repeat(200));
        assert!(long.len() <= MAX_LOCK_REASON && long.chars().all(|c| c == 'é'));
    }

    #[test]
    fn the_lock_keeps_the_list() {
        let g = gate();
        assert!(!g.is_locked() && g.lock_message().is_none());
        let l = g.with_lock(Some("patch 1.2".into()));
        assert!(l.is_locked());
        assert_eq!(l.files(), g.files());
        assert!(l.lock_message().unwrap().contains("(patch 1.2)"));
        assert_eq!(
            g.with_lock(Some(" ".into())).lock_message().unwrap(),
            "the server is locked for maintenance; try again later"
        );
    }
}
