//! `rccontent`: check a world (Realm Crafter `Server Data` or native TOML) and convert
//! Realm Crafter data to the native TOML format.
//!
//! ```text
//! rccontent check <path>              load either format, print a summary and warnings
//! rccontent convert <rc-dir> <out>    RC Server Data → native (directory, or one file if <out> ends in .toml)
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
    }
    Ok(())
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
