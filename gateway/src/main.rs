//! The `gateway` binary. For now only `import-accounts`; the QUIC endpoint and
//! `--standalone` come with the rest of issue 5.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use gateway::session::{AccountBook, Argon2Hasher};
use gateway::store::{Store, Writer};
use rand::SeedableRng;

#[derive(Parser)]
#[command(name = "gateway", about = "Realm Crafter cluster gateway")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Run the gateway and an embedded zone node in one process with the demo world
    /// (arrives with the rest of issue 5).
    #[arg(long)]
    standalone: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Imports a Realm Crafter `Accounts.dat` into the gateway database.
    ImportAccounts {
        /// The `Accounts.dat` file.
        file: PathBuf,
        /// Data directory holding the SQLite database.
        #[arg(long, default_value = "data")]
        data: PathBuf,
    },
}

/// An RNG seeded from the operating system (`/dev/urandom`).
fn os_seeded_rng() -> anyhow::Result<rand_chacha::ChaCha20Rng> {
    use std::io::Read as _;
    let mut seed = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut seed))
        .context("reading /dev/urandom for password salts")?;
    Ok(rand_chacha::ChaCha20Rng::from_seed(seed))
}

fn import_accounts(file: &Path, data: &Path) -> anyhow::Result<()> {
    let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    let legacy = gateway::accounts_dat::parse(&bytes)?;
    let store = Store::open_dir(data)?;
    let mut book = AccountBook::from_records(store.load_all()?);
    let writer = Writer::spawn(store)?;
    let hasher = Argon2Hasher::production();
    let mut rng = os_seeded_rng()?;
    let report = gateway::accounts_dat::import_into(legacy, &mut book, &hasher, &mut rng);
    writer.submit(book.take_persist())?;
    writer.flush()?;
    if let Some(e) = writer.last_error() {
        anyhow::bail!("writing the database failed: {e}");
    }
    writer.shutdown();
    for (user, why) in &report.skipped {
        eprintln!("skipped {user:?}: {why}");
    }
    println!(
        "imported {} accounts, skipped {}",
        report.imported,
        report.skipped.len()
    );
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::ImportAccounts { file, data }) => import_accounts(&file, &data),
        None => anyhow::bail!(
            "gateway: the QUIC endpoint{} is not built yet (the rest of issue 5); \
             today the gateway offers `import-accounts`",
            if cli.standalone {
                " and --standalone"
            } else {
                ""
            }
        ),
    }
}
