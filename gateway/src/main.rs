//! The `gateway` binary: the server (`gateway [--standalone] [--world PATH] ...`) and
//! `gateway import-accounts Accounts.dat`.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use gateway::config::{GatewayConfig, Settings as _};
use gateway::session::{AccountBook, Argon2Hasher};
use gateway::store::{Store, Writer};
use rand::SeedableRng;

#[derive(Parser)]
#[command(name = "gateway", about = "Realm Crafter cluster gateway")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: RunArgs,
}

/// Flags of the server; each overrides the file and the `GATEWAY_*` variables.
#[derive(clap::Args, Debug, Default)]
struct RunArgs {
    /// TOML configuration file.
    #[arg(long, env = "GATEWAY_CONFIG")]
    config: Option<PathBuf>,
    /// Run the gateway and an embedded zone node in one process (the local cluster).
    #[arg(long)]
    standalone: bool,
    /// World directory: a native world or a Realm Crafter `Server Data` directory
    /// (default: the embedded demo world).
    #[arg(long)]
    world: Option<String>,
    /// Data directory (SQLite database, certificate).
    #[arg(long)]
    data_dir: Option<String>,
    /// Client endpoint, UDP (default 0.0.0.0:25000).
    #[arg(long)]
    listen: Option<String>,
    /// Internal endpoint for zone nodes, UDP (default 0.0.0.0:25001).
    #[arg(long)]
    internal_listen: Option<String>,
    /// Admin HTTP endpoint, TCP (default 127.0.0.1:9180).
    #[arg(long)]
    admin_listen: Option<String>,
    /// Character checkpoint period of the embedded zone node (ms).
    #[arg(long)]
    checkpoint_ms: Option<String>,
}

impl RunArgs {
    fn overrides(&self) -> Vec<(&'static str, &str)> {
        let mut v: Vec<(&'static str, &str)> = [
            ("world", &self.world),
            ("data_dir", &self.data_dir),
            ("listen", &self.listen),
            ("internal_listen", &self.internal_listen),
            ("admin_listen", &self.admin_listen),
            ("checkpoint_ms", &self.checkpoint_ms),
        ]
        .into_iter()
        .filter_map(|(k, x)| x.as_deref().map(|x| (k, x)))
        .collect();
        if self.standalone {
            v.push(("standalone", "true"));
        }
        v
    }
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

fn serve(args: &RunArgs) -> anyhow::Result<()> {
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .try_init();
    let mut cfg = match &args.config {
        Some(p) => GatewayConfig::from_file(p)?,
        None => GatewayConfig::default(),
    };
    cfg.apply_env(std::env::vars())?;
    cfg.apply_overrides(args.overrides())?;
    cfg.validate()?;
    let world = gateway::server::load_world(&cfg).context("loading the world")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("gateway")
        .build()
        .context("starting the runtime")?;
    runtime.block_on(async move {
        let gw = gateway::server::start(cfg, world).await?;
        println!(
            "gateway ready: clients on udp {} (ALPN rc/1, certificate sha256 {}), admin on http://{}",
            gw.client_addr, gw.fingerprint, gw.admin_addr
        );
        zone_node::link::shutdown_signal().await;
        tracing::info!("shutting down (a second signal forces the exit)");
        tokio::select! {
            () = gw.shutdown() => {}
            () = zone_node::link::shutdown_signal() => {
                tracing::error!("forced exit");
                std::process::exit(1);
            }
        }
        anyhow::Ok(())
    })
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::ImportAccounts { file, data }) => import_accounts(&file, &data),
        None => serve(&cli.run),
    }
}
