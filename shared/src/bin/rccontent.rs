//! `rccontent`: check a world (Realm Crafter `Server Data` or native TOML) and convert
//! Realm Crafter data to the native TOML format.
//!
//! ```text
//! rccontent check <path>              load either format, print a summary and warnings
//! rccontent convert <rc-dir> <out>    RC Server Data → native (directory, or one file if <out> ends in .toml)
//! rccontent build-updates <client-data-dir> <out-dir>
//!                                     Files.dat and one bzip2 <NAME>.DAT per file, for the update host
//! ```
//! Exit status: 0 on success, 2 with one line on stderr on error.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use shared::content::fs::{SourceKind, detect, load_world, write_native};
use shared::content::{ContentError, ContentWarning, World};

#[derive(Debug, Parser)]
#[command(
    name = "rccontent",
    version,
    about = "Check and convert Realm Crafter game content"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Load a world (Realm Crafter Server Data directory, native directory or .toml file)
    /// and print a summary.
    Check {
        /// The world to check.
        path: PathBuf,
    },
    /// Convert a Realm Crafter Server Data directory to the native TOML format.
    Convert {
        /// The Realm Crafter `Server Data` directory.
        source: PathBuf,
        /// Output: a directory (world.toml, actors.toml, items.toml, areas/), or one
        /// file when it ends in `.toml`.
        out: PathBuf,
    },
    /// Build the update files of a game's client `Data` folder, as Realm Crafter's editor
    /// did: `Files.dat` (each file's name, `Data\...`, and checksum) and each file
    /// bzip2-compressed as the client downloads it (`DATA!!...DAT`), into OUT_DIR. Skips
    /// `Thumbs.db`, `Misc.dat` and a `Server Data` folder.
    BuildUpdates {
        /// The client's `Data` folder.
        client_data_dir: PathBuf,
        /// Where to write `Files.dat` and the `.DAT` files (created if needed).
        out_dir: PathBuf,
    },
}

fn kind_name(k: SourceKind) -> &'static str {
    match k {
        SourceKind::RealmCrafter => "Realm Crafter Server Data",
        SourceKind::NativeDir => "native world directory",
        SourceKind::NativeFile => "native world file",
    }
}

fn summary(path: &Path, kind: SourceKind, w: &World, warnings: &[ContentWarning]) {
    println!("{}: {}", kind_name(kind), path.display());
    println!("areas: {}", w.areas.len());
    let width = w
        .areas
        .iter()
        .map(|a| a.name.chars().count())
        .max()
        .unwrap_or(0);
    for a in &w.areas {
        println!(
            "  {:<width$}  portals {:>3}  waypoints {:>4}  spawns {:>4}  water {:>2}  triggers {:>3}",
            a.name,
            a.portals.len(),
            a.waypoints.len(),
            a.spawns.len(),
            a.water.len(),
            a.triggers.len(),
        );
    }
    let playable = w.actors.iter().filter(|t| t.playable).count();
    println!("templates: {} ({playable} playable)", w.actors.len());
    println!(
        "items: {}  spells: {}  projectiles: {}",
        w.items.len(),
        w.spells.len(),
        w.projectiles.len()
    );
    let factions = w.factions.names.iter().filter(|n| !n.is_empty()).count();
    let damage = w.damage_types.iter().filter(|n| !n.is_empty()).count();
    let attrs = w
        .attributes
        .defs
        .iter()
        .filter(|d| !d.name.is_empty())
        .count();
    println!("factions: {factions}  damage types: {damage}  attributes: {attrs}");
    println!("warnings: {}", warnings.len());
    for wn in warnings {
        println!("  warning: {wn}");
    }
}

fn run(cli: Cli) -> Result<(), ContentError> {
    match cli.command {
        Command::Check { path } => {
            let kind = detect(&path)?;
            let (w, warnings) = load_world(&path)?;
            summary(&path, kind, &w, &warnings);
        }
        Command::Convert { source, out } => {
            let kind = detect(&source)?;
            if kind != SourceKind::RealmCrafter {
                return Err(ContentError::new(
                    source.display().to_string(),
                    "",
                    "not a Realm Crafter Server Data directory (no Misc.dat or Areas/)",
                ));
            }
            let (w, warnings) = load_world(&source)?;
            let written = write_native(&w, &out)?;
            summary(&source, kind, &w, &warnings);
            println!("wrote {}: {}", kind_name(written), out.display());
        }
        Command::BuildUpdates {
            client_data_dir,
            out_dir,
        } => {
            let (files, bytes) = build_updates(&client_data_dir, &out_dir)?;
            println!(
                "{} files ({bytes} bytes) from {} → {}",
                files,
                client_data_dir.display(),
                out_dir.display()
            );
        }
    }
    Ok(())
}

fn io_err(path: &Path, e: &impl std::fmt::Display) -> ContentError {
    ContentError::new(path.display().to_string(), "", e.to_string())
}

/// Whether the walk skips this entry of the client's `Data` folder (at `depth` 0 for its
/// own entries): `Thumbs.db` and `Misc.dat` anywhere, as the editor's `DoUpdates` did, and
/// a `Server Data` folder (server files, accounts among them, are never published).
fn skipped(name: &str, is_dir: bool, depth: usize) -> bool {
    if is_dir {
        return depth == 0 && name.eq_ignore_ascii_case("Server Data");
    }
    name.eq_ignore_ascii_case("Thumbs.db") || name.eq_ignore_ascii_case("Misc.dat")
}

/// The files below `dir` as (path parts below the root, path), sorted; symbolic links are
/// not followed.
fn walk(
    dir: &Path,
    parts: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, PathBuf)>,
) -> Result<(), ContentError> {
    let mut entries = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| io_err(dir, &e))? {
        let e = e.map_err(|e| io_err(dir, &e))?;
        entries.push(e.path());
    }
    entries.sort();
    for p in entries {
        let meta = std::fs::symlink_metadata(&p).map_err(|e| io_err(&p, &e))?;
        let name = p
            .file_name()
            .map(|n| n.to_str().map(str::to_owned))
            .ok_or_else(|| io_err(&p, &"no file name"))?
            .ok_or_else(|| io_err(&p, &"the name is not UTF-8"))?;
        if meta.file_type().is_symlink() {
            eprintln!("rccontent: skipping a symbolic link: {}", p.display());
        } else if skipped(&name, meta.is_dir(), parts.len()) {
            eprintln!("rccontent: skipping {}", p.display());
        } else if meta.is_dir() {
            parts.push(name);
            walk(&p, parts, out)?;
            parts.pop();
        } else if meta.is_file() {
            let mut rel = parts.clone();
            rel.push(name);
            out.push((rel, p));
        }
    }
    Ok(())
}

/// `build-updates`: every file of the client's `Data` folder checksummed, compressed and
/// written as `<download name>` into `out_dir`, then `Files.dat`. Returns the number of
/// files and their total size.
fn build_updates(data_dir: &Path, out_dir: &Path) -> Result<(usize, u64), ContentError> {
    use shared::content::updates;
    let mut found = Vec::new();
    walk(data_dir, &mut Vec::new(), &mut found)?;
    if found.len() > updates::MAX_FILES {
        return Err(io_err(data_dir, &updates::UpdateListError::TooMany));
    }
    std::fs::create_dir_all(out_dir).map_err(|e| io_err(out_dir, &e))?;
    let mut list = Vec::with_capacity(found.len());
    let mut seen = std::collections::HashMap::new();
    let mut total = 0u64;
    for (rel, path) in found {
        // The client's names start at its game folder: `Data\...`.
        let name =
            updates::client_name(std::iter::once("Data").chain(rel.iter().map(String::as_str)))
                .map_err(|e| io_err(&path, &e))?;
        let download = shared::wire::RcString(updates::download_name(name.as_bytes())).to_latin1();
        if let Some(other) = seen.insert(download.clone(), name.to_latin1()) {
            return Err(io_err(
                &path,
                &format!("downloads as {download}, as {other} does (names differ only in case)"),
            ));
        }
        let bytes = std::fs::read(&path).map_err(|e| io_err(&path, &e))?;
        total += u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        let packed = updates::compress(&bytes).map_err(|e| io_err(&path, &e))?;
        let dest = out_dir.join(&download);
        std::fs::write(&dest, packed).map_err(|e| io_err(&dest, &e))?;
        list.push(shared::proto::UpdateFileEntry {
            crc: updates::checksum(&bytes),
            name,
        });
    }
    let dest = out_dir.join(updates::FILES_DAT);
    std::fs::write(&dest, updates::write_files_dat(&list)).map_err(|e| io_err(&dest, &e))?;
    Ok((list.len(), total))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rccontent: error: {e}");
            ExitCode::from(2)
        }
    }
}
