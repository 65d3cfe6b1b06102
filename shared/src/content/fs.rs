//! The thin I/O shell over the pure content parsers: the only code in `shared` that
//! touches the file system.
//!
//! [`load_world`] accepts a Realm Crafter `Server Data` directory (detected by `Misc.dat`
//! or an `Areas` directory), a native world directory (`world.toml`) or a single native
//! `.toml` file. A world's update list, `Files.dat`, is read beside it
//! ([`update_list_path`]).

use std::fs;
use std::path::Path;

use super::error::{ContentError, ContentWarning};
use super::model::World;
use super::native::{self, NativeFiles};
use super::rc::{self, RcFiles};
use super::updates::FILES_DAT;

/// The kind of world found at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// A Realm Crafter `Server Data` directory.
    RealmCrafter,
    /// A native world directory (`world.toml` + `actors.toml` + `items.toml` + `areas/`).
    NativeDir,
    /// One native TOML file.
    NativeFile,
}

fn io_err(path: &Path, e: &std::io::Error) -> ContentError {
    ContentError::new(path.display().to_string(), "", e.to_string())
}

/// Decides what kind of world `path` holds.
pub fn detect(path: &Path) -> Result<SourceKind, ContentError> {
    let meta = fs::metadata(path).map_err(|e| io_err(path, &e))?;
    if meta.is_file() {
        return Ok(SourceKind::NativeFile);
    }
    if path.join(rc::MISC_FILE).is_file() || path.join(rc::AREAS_DIR).is_dir() {
        return Ok(SourceKind::RealmCrafter);
    }
    if path.join(native::WORLD_FILE).is_file() {
        return Ok(SourceKind::NativeDir);
    }
    Err(ContentError::new(
        path.display().to_string(),
        "",
        format!(
            "not a world: expected a Realm Crafter Server Data directory ({} or {}/), \
             a native world directory ({}) or a .toml file",
            rc::MISC_FILE,
            rc::AREAS_DIR,
            native::WORLD_FILE
        ),
    ))
}

/// Loads and validates the world at `path` (any supported kind).
pub fn load_world(path: impl AsRef<Path>) -> Result<(World, Vec<ContentWarning>), ContentError> {
    let path = path.as_ref();
    let kind = detect(path)?;
    let (mut world, warnings) = load_kind(path, kind)?;
    world.update_files = read_update_list(&update_list_path(path, kind))?.unwrap_or_default();
    Ok((world, warnings))
}

/// Where the update list of the world at `path` is: `Files.dat` in a Realm Crafter
/// `Server Data` directory (where Realm Crafter's server reads it) or in a native world
/// directory, and beside a single native `.toml` file.
pub fn update_list_path(path: &Path, kind: SourceKind) -> std::path::PathBuf {
    match kind {
        SourceKind::RealmCrafter | SourceKind::NativeDir => path.join(FILES_DAT),
        SourceKind::NativeFile => path
            .parent()
            .unwrap_or_else(|| Path::new("."))
            .join(FILES_DAT),
    }
}

/// Reads and checks an update list (`Files.dat`); `None` when there is no such file. A
/// malformed list is an error naming the file and the entry.
pub fn read_update_list(
    path: &Path,
) -> Result<Option<Vec<crate::proto::UpdateFileEntry>>, ContentError> {
    let Some(bytes) = read_opt(path)? else {
        return Ok(None);
    };
    super::updates::parse_files_dat(&bytes)
        .map(Some)
        .map_err(|e| ContentError::new(path.display().to_string(), "", e.to_string()))
}

fn load_kind(path: &Path, kind: SourceKind) -> Result<(World, Vec<ContentWarning>), ContentError> {
    match kind {
        SourceKind::RealmCrafter => {
            let (mut w, warnings) = rc::load_server_data(&read_rc_dir(path)?)?;
            w.scripts = read_scripts(&path.join(SCRIPTS_DIR))?;
            Ok((w, warnings))
        }
        SourceKind::NativeDir => {
            let (mut w, warnings) = native::load_dir(&read_native_dir(path)?)?;
            let dir = [NATIVE_SCRIPTS_DIR, SCRIPTS_DIR]
                .iter()
                .map(|d| path.join(d))
                .find(|d| d.is_dir());
            if let Some(d) = dir {
                w.scripts = read_scripts(&d)?;
            }
            Ok((w, warnings))
        }
        SourceKind::NativeFile => {
            let text = fs::read_to_string(path).map_err(|e| io_err(path, &e))?;
            let label = path.file_name().map_or_else(
                || path.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            native::load_single(&label, &text)
        }
    }
}

fn read_opt(path: &Path) -> Result<Option<Vec<u8>>, ContentError> {
    match fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err(path, &e)),
    }
}

fn read_opt_text(path: &Path) -> Result<Option<String>, ContentError> {
    match fs::read_to_string(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err(path, &e)),
    }
}

/// Files in `dir` with extension `ext` (case-insensitive), as (stem, path), sorted.
fn files_with_ext(
    dir: &Path,
    ext: &str,
) -> Result<Vec<(String, std::path::PathBuf)>, ContentError> {
    let mut out = Vec::new();
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(io_err(dir, &e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| io_err(dir, &e))?;
        let p = entry.path();
        let matches = p
            .extension()
            .is_some_and(|e| e.to_string_lossy().eq_ignore_ascii_case(ext));
        if matches
            && p.is_file()
            && let Some(stem) = p.file_stem()
        {
            out.push((stem.to_string_lossy().into_owned(), p));
        }
    }
    out.sort();
    Ok(out)
}

/// The scripts folder of a Realm Crafter `Server Data` directory.
pub const SCRIPTS_DIR: &str = "Scripts";
/// The scripts folder of a native world directory.
pub const NATIVE_SCRIPTS_DIR: &str = "scripts";

/// Reads every `*.rsl` file of a scripts folder (none if it does not exist), sorted by
/// name. Realm Crafter's older `.rcscript` files are not loaded (V0 and V1 ignore them).
pub fn read_scripts(dir: &Path) -> Result<Vec<super::ScriptSource>, ContentError> {
    let mut out = Vec::new();
    for (stem, p) in files_with_ext(dir, "rsl")? {
        let bytes = fs::read(&p).map_err(|e| io_err(&p, &e))?;
        out.push(super::ScriptSource { name: stem, bytes });
    }
    Ok(out)
}

/// Reads the raw files of a Realm Crafter `Server Data` directory.
pub fn read_rc_dir(dir: &Path) -> Result<RcFiles, ContentError> {
    let f = |name: &str| read_opt(&dir.join(name));
    let mut files = RcFiles {
        misc: f(rc::MISC_FILE)?,
        actors: f(rc::ACTORS_FILE)?,
        items: f(rc::ITEMS_FILE)?,
        spells: f(rc::SPELLS_FILE)?,
        projectiles: f(rc::PROJECTILES_FILE)?,
        factions: f(rc::FACTIONS_FILE)?,
        attributes: f(rc::ATTRIBUTES_FILE)?,
        fixed_attributes: f(rc::FIXED_ATTRIBUTES_FILE)?,
        damage: f(rc::DAMAGE_FILE)?,
        environment: f(rc::ENVIRONMENT_FILE)?,
        names_filter: f(rc::NAMES_FILTER_FILE)?,
        language: f(rc::LANGUAGE_FILE)?,
        areas: Vec::new(),
    };
    for (stem, p) in files_with_ext(&dir.join(rc::AREAS_DIR), "dat")? {
        let bytes = fs::read(&p).map_err(|e| io_err(&p, &e))?;
        files.areas.push((stem, bytes));
    }
    Ok(files)
}

/// Reads the texts of a native world directory.
pub fn read_native_dir(dir: &Path) -> Result<NativeFiles, ContentError> {
    let world_path = dir.join(native::WORLD_FILE);
    let world = fs::read_to_string(&world_path).map_err(|e| io_err(&world_path, &e))?;
    let mut files = NativeFiles {
        world,
        actors: read_opt_text(&dir.join(native::ACTORS_FILE))?,
        items: read_opt_text(&dir.join(native::ITEMS_FILE))?,
        areas: Vec::new(),
    };
    for (stem, p) in files_with_ext(&dir.join(native::AREAS_DIR), "toml")? {
        let text = fs::read_to_string(&p).map_err(|e| io_err(&p, &e))?;
        files.areas.push((stem, text));
    }
    Ok(files)
}

fn write(path: &Path, text: &str) -> Result<(), ContentError> {
    fs::write(path, text).map_err(|e| io_err(path, &e))
}

/// Writes `world` in the native format: a single file when `out` ends in `.toml`,
/// otherwise a directory (created if needed; existing area files are left in place).
pub fn write_native(world: &World, out: &Path) -> Result<SourceKind, ContentError> {
    let single = out
        .extension()
        .is_some_and(|e| e.to_string_lossy().eq_ignore_ascii_case("toml"));
    if single {
        write(out, &native::to_single_toml(world)?)?;
        return Ok(SourceKind::NativeFile);
    }
    let files = native::to_dir(world)?;
    let areas_dir = out.join(native::AREAS_DIR);
    fs::create_dir_all(&areas_dir).map_err(|e| io_err(&areas_dir, &e))?;
    write(&out.join(native::WORLD_FILE), &files.world)?;
    if let Some(t) = &files.actors {
        write(&out.join(native::ACTORS_FILE), t)?;
    }
    if let Some(t) = &files.items {
        write(&out.join(native::ITEMS_FILE), t)?;
    }
    for (stem, text) in &files.areas {
        if stem.contains(['/', '\\']) || stem.starts_with('.') {
            return Err(ContentError::new(
                areas_dir.display().to_string(),
                format!("area {stem:?}"),
                "area name cannot be used as a file name",
            ));
        }
        write(&areas_dir.join(format!("{stem}.toml")), text)?;
    }
    if !world.scripts.is_empty() {
        let dir = out.join(NATIVE_SCRIPTS_DIR);
        fs::create_dir_all(&dir).map_err(|e| io_err(&dir, &e))?;
        for s in &world.scripts {
            if s.name.contains(['/', '\\']) || s.name.starts_with('.') || s.name.is_empty() {
                return Err(ContentError::new(
                    dir.display().to_string(),
                    format!("script {:?}", s.name),
                    "script name cannot be used as a file name",
                ));
            }
            let p = dir.join(format!("{}.rsl", s.name));
            fs::write(&p, &s.bytes).map_err(|e| io_err(&p, &e))?;
        }
    }
    Ok(SourceKind::NativeDir)
}

/// The world's scripts as they are on disk now (for a live reload, `RefreshScripts`): the
/// `Scripts` folder of a Realm Crafter `Server Data` directory, `scripts` (or `Scripts`) of
/// a native world directory; the embedded demo world's (no path) and a one-file world's are
/// what they were at start.
pub fn read_world_scripts(path: Option<&Path>) -> Result<Vec<super::ScriptSource>, ContentError> {
    let Some(path) = path else {
        return Ok(super::demo_world().scripts);
    };
    match detect(path)? {
        SourceKind::RealmCrafter => read_scripts(&path.join(SCRIPTS_DIR)),
        SourceKind::NativeDir => [NATIVE_SCRIPTS_DIR, SCRIPTS_DIR]
            .iter()
            .map(|d| path.join(d))
            .find(|d| d.is_dir())
            .map_or_else(|| Ok(Vec::new()), |d| read_scripts(&d)),
        SourceKind::NativeFile => Ok(load_world(path)?.0.scripts),
    }
}

/// The world at `path`, or the embedded demo world when `path` is `None`: what the
/// binaries serve by default.
pub fn load_or_demo(path: Option<&Path>) -> Result<(World, Vec<ContentWarning>), ContentError> {
    match path {
        None => Ok((super::demo_world(), Vec::new())),
        Some(p) => load_world(p),
    }
}
