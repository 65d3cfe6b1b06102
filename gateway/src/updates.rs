//! The update host and the maintenance lock: the shell around [`Gate`].
//!
//! [`UpdateService`] keeps the current [`Gate`] (the game's update list, `Files.dat`, and
//! whether an operator locked the server) for the client sessions, the hub and the HTTP
//! endpoint to read. With `update_listen` set, [`serve`] answers Realm Crafter's updater on
//! its own listener: `GET /<NAME>.DAT` (the list name mangled as the client does,
//! `shared::content::updates::download_name`) with the prebuilt bzip2 file of that name in
//! `update_dir` (`rccontent build-updates` makes them). Only names in the list are served,
//! never a path taken from the request; anything else is 404, and every download is 503
//! while the server is locked or when `update_max_downloads` are already being sent.
//!
//! Realm Crafter's lock (`Server.bb`, the Updates window's "Lock Updates Server") stops
//! the server's network, boots every player with `P_KickedPlayer`, saves, and reloads
//! `Files.dat` when unlocked, so that an operator can upload an update without players
//! downloading half of it. Here the lock is in memory (a restarted gateway is open), the
//! players are told and removed by the hub, and unlocking re-reads the list from where it
//! was loaded (docs/operations.md, "The maintenance lock").

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use shared::content::ContentError;
use shared::proto::UpdateFileEntry;

use crate::session::Gate;

/// Where the update list comes from, and the files of the update host.
#[derive(Debug)]
pub struct UpdateService {
    gate: RwLock<Arc<Gate>>,
    /// The world's own `Files.dat` ([`world_list_path`]).
    world_list: Option<PathBuf>,
    /// The prebuilt `<NAME>.DAT` files (`update_dir`).
    dir: Option<PathBuf>,
    max_file_bytes: u64,
    slots: tokio::sync::Semaphore,
    /// Logins, account creations, `P_StartGame`s, list requests and downloads refused
    /// because the server is locked.
    pub lock_refusals: AtomicU64,
    /// Downloads served.
    pub served: AtomicU64,
    /// Requests for something not in the list (or not built).
    pub not_found: AtomicU64,
    /// Downloads refused because `update_max_downloads` were in progress.
    pub busy: AtomicU64,
    /// Downloads that failed reading their file.
    pub failed: AtomicU64,
}

/// Where the world's own `Files.dat` is (`shared::content::fs::update_list_path`, where
/// the world's loader read it); `None` for the embedded demo world.
pub fn world_list_path(
    world_path: Option<&std::path::Path>,
) -> Result<Option<PathBuf>, ContentError> {
    world_path
        .map(|w| {
            shared::content::fs::detect(w).map(|k| shared::content::fs::update_list_path(w, k))
        })
        .transpose()
}

impl UpdateService {
    /// The service for a gateway, open (unlocked), with the list of [`Self::source`]
    /// when it reads, else `loaded` (what the world was loaded with).
    pub fn new(
        world_list: Option<PathBuf>,
        loaded: Vec<UpdateFileEntry>,
        dir: Option<PathBuf>,
        max_file_bytes: u64,
        max_downloads: u32,
    ) -> Result<Self, ContentError> {
        let mut svc = Self {
            gate: RwLock::new(Arc::new(Gate::default())),
            world_list,
            dir,
            max_file_bytes,
            slots: tokio::sync::Semaphore::new(usize::try_from(max_downloads).unwrap_or(1)),
            lock_refusals: AtomicU64::new(0),
            served: AtomicU64::new(0),
            not_found: AtomicU64::new(0),
            busy: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        };
        let files = match svc.source() {
            Some(p) => shared::content::fs::read_update_list(&p)?.unwrap_or(loaded),
            None => loaded,
        };
        svc.gate = RwLock::new(Arc::new(Gate::new(files)));
        Ok(svc)
    }

    /// The `Files.dat` the gateway serves, read at start and again on unlock:
    /// `update_dir/Files.dat` when there is one (what `rccontent build-updates` wrote
    /// beside the files), else the world's own; `None` for the embedded demo world.
    pub fn source(&self) -> Option<PathBuf> {
        self.dir
            .as_ref()
            .map(|d| d.join(shared::content::updates::FILES_DAT))
            .filter(|p| p.is_file())
            .or_else(|| self.world_list.clone())
    }

    /// The current list and lock (cheap: one `Arc`).
    pub fn gate(&self) -> Arc<Gate> {
        match self.gate.read() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    fn set(&self, g: Gate) {
        match self.gate.write() {
            Ok(mut w) => *w = Arc::new(g),
            Err(p) => *p.into_inner() = Arc::new(g),
        }
    }

    /// Locks the server with `reason` (empty: none; made one short line,
    /// [`crate::session::clean_reason`]); a second lock changes the reason. Returns the
    /// lock's message.
    pub fn lock(&self, reason: &str) -> String {
        let reason = crate::session::clean_reason(reason);
        let g = self.gate().with_lock(Some(reason.clone()));
        let message = g.lock_message().unwrap_or_default();
        self.set(g);
        tracing::warn!(%reason, "server locked for maintenance");
        message
    }

    /// Re-reads the update list from where it was loaded (blocking file I/O: call it off
    /// the runtime's workers) and unlocks with it. A list that no longer reads leaves the
    /// server locked, and the error says why. Returns the number of files listed.
    pub fn unlock(&self) -> Result<usize, String> {
        let current = self.gate();
        let files = match self.source() {
            Some(p) => shared::content::fs::read_update_list(&p)
                .map_err(|e| format!("still locked: the update list does not load: {e}"))?
                .unwrap_or_else(|| current.files().to_vec()),
            None => current.files().to_vec(),
        };
        let n = files.len();
        self.set(Gate::new(files));
        tracing::warn!(files = n, "server unlocked");
        Ok(n)
    }

    /// Counts one refusal because of the lock.
    pub fn refused(&self) {
        self.lock_refusals.fetch_add(1, Ordering::Relaxed);
    }
}

/// The update host's routes (every path goes to the download handler).
pub fn router(svc: Arc<UpdateService>) -> Router {
    Router::new().fallback(download).with_state(svc)
}

/// Serves the update host on `listener` until `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    svc: Arc<UpdateService>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(svc))
        .with_graceful_shutdown(shutdown)
        .await
}

fn text(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, crate::admin::TEXT_CONTENT_TYPE)],
        body,
    )
        .into_response()
}

/// Why a file could not be read.
enum ReadError {
    Missing,
    TooLarge(u64),
    Io(std::io::Error),
}

fn read_bounded(path: &std::path::Path, max: u64) -> Result<Vec<u8>, ReadError> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ReadError::Missing,
        _ => ReadError::Io(e),
    })?;
    if !meta.is_file() {
        return Err(ReadError::Missing);
    }
    if meta.len() > max {
        return Err(ReadError::TooLarge(meta.len()));
    }
    std::fs::read(path).map_err(ReadError::Io)
}

/// `GET /<NAME>.DAT`: the prebuilt file of a listed name.
async fn download(State(svc): State<Arc<UpdateService>>, method: Method, uri: Uri) -> Response {
    if method != Method::GET && method != Method::HEAD {
        let mut r = text(
            StatusCode::METHOD_NOT_ALLOWED,
            "method not allowed".to_owned(),
        );
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let gate = svc.gate();
    if let Some(message) = gate.lock_message() {
        svc.refused();
        let mut r = text(StatusCode::SERVICE_UNAVAILABLE, message);
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("60"));
        return r;
    }
    let not_found = || {
        svc.not_found.fetch_add(1, Ordering::Relaxed);
        text(StatusCode::NOT_FOUND, "not found".to_owned())
    };
    let (Some((_, name)), Some(dir)) = (gate.download(uri.path()), svc.dir.as_ref()) else {
        return not_found();
    };
    let Ok(_slot) = svc.slots.try_acquire() else {
        svc.busy.fetch_add(1, Ordering::Relaxed);
        let mut r = text(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many downloads at once; try again".to_owned(),
        );
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        return r;
    };
    // The name is the list's, mangled: no separator, no `..` (`check_name`).
    let path = dir.join(&name);
    let max = svc.max_file_bytes;
    let read = tokio::task::spawn_blocking(move || read_bounded(&path, max)).await;
    match read {
        Ok(Ok(bytes)) => {
            svc.served.fetch_add(1, Ordering::Relaxed);
            (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/octet-stream")],
                bytes,
            )
                .into_response()
        }
        Ok(Err(ReadError::Missing)) => {
            tracing::warn!(file = %name, "listed in Files.dat but not in update_dir (run rccontent build-updates)");
            not_found()
        }
        Ok(Err(ReadError::TooLarge(len))) => {
            svc.failed.fetch_add(1, Ordering::Relaxed);
            tracing::error!(file = %name, len, max, "update file larger than update_max_file_bytes");
            text(
                StatusCode::INTERNAL_SERVER_ERROR,
                "file too large".to_owned(),
            )
        }
        Ok(Err(ReadError::Io(e))) => {
            svc.failed.fetch_add(1, Ordering::Relaxed);
            tracing::error!(file = %name, error = %e, "update file unreadable");
            text(StatusCode::INTERNAL_SERVER_ERROR, "unreadable".to_owned())
        }
        Err(e) => {
            svc.failed.fetch_add(1, Ordering::Relaxed);
            text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::content::updates::{FILES_DAT, write_files_dat};
    use shared::wire::RcString;

    fn entry(name: &str, crc: u32) -> UpdateFileEntry {
        UpdateFileEntry {
            crc,
            name: RcString::from(name),
        }
    }

    #[test]
    fn update_dir_list_first_and_a_bad_list_keeps_the_lock() {
        let dir = std::env::temp_dir().join(format!("gw-updates-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let world = vec![entry("Data\\a.txt", 1)];
        let svc = UpdateService::new(None, world.clone(), Some(dir.clone()), 1 << 20, 4).unwrap();
        assert_eq!(svc.gate().files(), world.as_slice());
        // A Files.dat appears in update_dir: the next unlock serves it.
        let new = vec![entry("Data\\b.txt", 2), entry("Data\\c d.txt", 3)];
        std::fs::write(dir.join(FILES_DAT), write_files_dat(&new)).unwrap();
        assert!(svc.lock("  patch\n2 ").contains("(patch 2)"));
        assert_eq!(svc.gate().lock.as_deref(), Some("patch 2"));
        assert_eq!(svc.unlock(), Ok(2));
        assert!(!svc.gate().is_locked());
        assert_eq!(svc.gate().files(), new.as_slice());
        // A list that no longer reads: still locked, and the error says why.
        svc.lock("");
        std::fs::write(dir.join(FILES_DAT), [1, 2, 3]).unwrap();
        let e = svc.unlock().unwrap_err();
        assert!(e.contains("still locked") && e.contains(FILES_DAT), "{e}");
        assert!(svc.gate().is_locked());
        // At start, a bad list is an error.
        assert!(UpdateService::new(None, world, Some(dir.clone()), 1, 1).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
