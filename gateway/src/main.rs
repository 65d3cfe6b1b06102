//! The `gateway` binary: the server (`gateway [--standalone] [--world PATH] ...`),
//! `gateway import-accounts Accounts.dat`, `gateway account create|set-dm|ban` and
//! `gateway healthcheck` (the container health check).

mod admin_cli;
mod healthcheck;

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use gateway::config::{GatewayConfig, Settings as _};
use gateway::session::Argon2Hasher;
use gateway::store::{Store, Writer};
use rand::SeedableRng;

#[derive(Parser)]
#[command(name = "gateway", version, about = "Realm Crafter cluster gateway")]
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
    /// Stand by: wait until the gateway holding the Postgres database (`--database-url`)
    /// is gone, then take over.
    #[arg(long)]
    standby: bool,
    /// With --standby: the other gateways' internal addresses (host:port, comma-separated);
    /// while another leads, this one serves clients and relays them to it (an edge).
    #[arg(long, value_name = "ADDRS")]
    peers: Option<String>,
    /// As an edge: where the zone nodes reach this gateway's client endpoint (host:port)
    /// to send its clients' broadcasts straight to it (default: --listen when it names an
    /// address; `off`: through the leader).
    #[arg(long, value_name = "ADDR")]
    fanout_addr: Option<String>,
    /// World directory: a native world or a Realm Crafter `Server Data` directory
    /// (default: the embedded demo world).
    #[arg(long)]
    world: Option<String>,
    /// Data directory (SQLite database, certificate).
    #[arg(long)]
    data_dir: Option<String>,
    /// The store on a Postgres server instead of SQLite in the data directory:
    /// `postgres://user:password@host:port/database`.
    #[arg(long, value_name = "URL")]
    database_url: Option<String>,
    /// Client endpoint, UDP (default 0.0.0.0:25000).
    #[arg(long)]
    listen: Option<String>,
    /// Internal endpoint for zone nodes, UDP (default 127.0.0.1:25001: set it to an
    /// address the nodes reach when they run on other hosts).
    #[arg(long)]
    internal_listen: Option<String>,
    /// RCEnet endpoint for Realm Crafter's own clients (ENet 1.1), UDP (default
    /// 0.0.0.0:25002; `off` to disable).
    #[arg(long)]
    enet_listen: Option<String>,
    /// Admin HTTP endpoint, TCP (default 127.0.0.1:9180).
    #[arg(long)]
    admin_listen: Option<String>,
    /// Character checkpoint period of the embedded zone node (ms).
    #[arg(long)]
    checkpoint_ms: Option<String>,
    /// The update host for Realm Crafter's client, HTTP, TCP (default off), e.g.
    /// 0.0.0.0:80; needs --update-dir.
    #[arg(long, value_name = "ADDR")]
    update_listen: Option<String>,
    /// The update host's files (`rccontent build-updates` output: Files.dat and the
    /// `<NAME>.DAT` files).
    #[arg(long, value_name = "PATH")]
    update_dir: Option<String>,
}

impl RunArgs {
    fn overrides(&self) -> Vec<(&'static str, &str)> {
        let mut v: Vec<(&'static str, &str)> = [
            ("world", &self.world),
            ("data_dir", &self.data_dir),
            ("database_url", &self.database_url),
            ("peers", &self.peers),
            ("fanout_addr", &self.fanout_addr),
            ("listen", &self.listen),
            ("internal_listen", &self.internal_listen),
            ("enet_listen", &self.enet_listen),
            ("admin_listen", &self.admin_listen),
            ("checkpoint_ms", &self.checkpoint_ms),
            ("update_listen", &self.update_listen),
            ("update_dir", &self.update_dir),
        ]
        .into_iter()
        .filter_map(|(k, x)| x.as_deref().map(|x| (k, x)))
        .collect();
        if self.standalone {
            v.push(("standalone", "true"));
        }
        if self.standby {
            v.push(("standby", "true"));
        }
        v
    }
}

#[derive(Subcommand)]
enum Command {
    /// Probe this gateway's admin `/healthz` (exit 0 on 200, else 1 with the reason).
    Healthcheck(healthcheck::HealthcheckArgs),
    /// Create accounts and set their DM and banned flags, in the database of a stopped
    /// gateway (a running gateway keeps the accounts in memory and would not see it).
    #[command(subcommand)]
    Account(AccountCmd),
    /// Operator commands on a running gateway, through its admin API (needs its
    /// `admin_token`): create-account, set-dm, ban, kick, warp, broadcast, online, lock,
    /// unlock, reload-scripts, import-script-data.
    Admin(admin_cli::AdminArgs),
    /// A consistent copy of the database to PATH (a new file), also while the gateway runs
    /// and players play (SQLite's online backup). Restore: stop the gateway, copy it back
    /// as `gateway.sqlite3` in the data directory.
    Backup {
        /// Where to write the copy.
        to: PathBuf,
        /// Data directory holding the SQLite database.
        #[arg(long = "data-dir", visible_alias = "data", default_value = "data")]
        data: PathBuf,
    },
    /// Copies a stopped gateway's SQLite store into an empty Postgres database (moving a
    /// game to a cluster), in one transaction, then reads it back and checks that every
    /// account, character, ground item, script file, super global and audit entry arrived.
    CopyStore {
        /// The Postgres database: `postgres://user:password@host:port/database` (or
        /// `GATEWAY_DATABASE_URL`).
        #[arg(long, env = "GATEWAY_DATABASE_URL")]
        to: String,
        /// Data directory holding the SQLite database.
        #[arg(long = "data-dir", visible_alias = "data", default_value = "data")]
        data: PathBuf,
    },
    /// Prints the economy's totals in the store as JSON: every item (by template id) and
    /// the gold over the characters, and the items on the ground. Trades, drops and
    /// pickups do not change them; compare two readings to audit a crash or a failover.
    /// Reads only: also while gateways run (it reads what they last committed).
    Economy {
        /// Only characters whose names start with this (the ground is counted whole).
        #[arg(long)]
        prefix: Option<String>,
        /// The store: `postgres://…`, or empty for the SQLite database in `--data-dir`
        /// (or `GATEWAY_DATABASE_URL`).
        #[arg(long, env = "GATEWAY_DATABASE_URL", default_value = "")]
        database_url: String,
        /// Data directory holding the SQLite database.
        #[arg(long = "data-dir", visible_alias = "data", default_value = "data")]
        data: PathBuf,
    },
    /// Imports a Realm Crafter server's script data (`Superglobals.dat` and the `Script
    /// Files` folder of its `Data/Server Data` directory) into the database of a stopped
    /// gateway; prints what was imported and skipped. (`admin import-script-data` does it
    /// on a running one.)
    ImportScriptData {
        /// Realm Crafter's `Data/Server Data` directory.
        dir: PathBuf,
        /// Data directory holding the SQLite database.
        #[arg(long = "data-dir", visible_alias = "data", default_value = "data")]
        data: PathBuf,
    },
    /// Imports a Realm Crafter `Accounts.dat` into the gateway database.
    ImportAccounts {
        /// The `Accounts.dat` file.
        file: PathBuf,
        /// Data directory holding the SQLite database (`--data` is the old spelling).
        #[arg(long = "data-dir", visible_alias = "data", default_value = "data")]
        data: PathBuf,
    },
}

#[derive(Subcommand)]
enum AccountCmd {
    /// Create an account (its password stored as the login flow stores it).
    Create {
        /// Account name.
        user: String,
        /// Read the password from this file (its first line). Passwords are never
        /// arguments: they would show in `ps` and the shell's history.
        #[arg(long, value_name = "PATH", conflicts_with = "password_stdin")]
        password_file: Option<PathBuf>,
        /// Read the password from the first line of standard input. Without either
        /// option the command asks for it on the terminal.
        #[arg(long)]
        password_stdin: bool,
        /// Make it a DM (game master) account.
        #[arg(long)]
        dm: bool,
        /// E-mail address.
        #[arg(long, default_value = "")]
        email: String,
        /// Data directory holding the SQLite database (`--data` is the old spelling).
        #[arg(long = "data-dir", visible_alias = "data", default_value = "data")]
        data: PathBuf,
    },
    /// Make an account a DM (or, with --off, not).
    SetDm {
        /// Account name.
        user: String,
        /// Clear the flag instead.
        #[arg(long)]
        off: bool,
        /// Data directory holding the SQLite database (`--data` is the old spelling).
        #[arg(long = "data-dir", visible_alias = "data", default_value = "data")]
        data: PathBuf,
    },
    /// Ban an account (or, with --off, lift the ban).
    Ban {
        /// Account name.
        user: String,
        /// Lift the ban instead.
        #[arg(long)]
        off: bool,
        /// Data directory holding the SQLite database (`--data` is the old spelling).
        #[arg(long = "data-dir", visible_alias = "data", default_value = "data")]
        data: PathBuf,
    },
}

/// Run one account command against the database in `data`.
fn account(cmd: AccountCmd) -> anyhow::Result<()> {
    use gateway::session::PasswordHasher as _;
    let data = match &cmd {
        AccountCmd::Create { data, .. }
        | AccountCmd::SetDm { data, .. }
        | AccountCmd::Ban { data, .. } => data.clone(),
    };
    let hasher = hasher_from_env()?;
    let password = match &cmd {
        AccountCmd::Create {
            password_file,
            password_stdin,
            ..
        } => Some(read_password(password_file.as_deref(), *password_stdin)?),
        _ => None,
    };
    if let AccountCmd::Create { user, email, .. } = &cmd {
        let password = password.as_deref().unwrap_or_default();
        // The rules of an account created in the game (`P_CreateAccount`).
        let latin1: Option<Vec<u8>> = user.chars().map(|c| u8::try_from(c).ok()).collect();
        if !latin1.is_some_and(|u| gateway::session::valid_user_name(&u)) {
            anyhow::bail!(
                "invalid user name {user:?}: 1 to {} letters, digits or `_`",
                gateway::session::MAX_USER_LEN
            );
        }
        if password.is_empty() {
            anyhow::bail!("the password must not be empty");
        }
        if email.len() > 255 {
            anyhow::bail!("the e-mail address is longer than 255 bytes");
        }
    } else if !data.join(gateway::store::DB_FILE).exists() {
        // Only `create` may start a new database: a mistyped --data is an error.
        anyhow::bail!(
            "there is no database in {} (expected {})",
            data.display(),
            gateway::store::DB_FILE
        );
    }
    let _lock = gateway::store::lock_dir(&data)?;
    let store = Store::open_dir(&data)
        .with_context(|| format!("opening the database in {}", data.display()))?;
    let mut book = store.load_book()?;
    let writer = Writer::spawn(store)?;
    let what = match cmd {
        AccountCmd::Create {
            user, dm, email, ..
        } => {
            let password = password.unwrap_or_default();
            let mut salt = [0u8; 16];
            rand::RngCore::fill_bytes(&mut os_seeded_rng()?, &mut salt);
            // What the client sends: the lowercase MD5 hex of the password as typed.
            let md5 = shared::wire::md5_hex(password.as_bytes());
            let hash = hasher
                .hash(md5.as_bytes(), &salt)
                .map_err(|e| anyhow::anyhow!("hashing the password: {e}"))?;
            let Some(id) = book.create_account(user.clone(), hash, email) else {
                anyhow::bail!("an account called {user:?} already exists");
            };
            if dm {
                book.set_dm(id, true);
            }
            format!("created account {user:?}{}", if dm { " (DM)" } else { "" })
        }
        AccountCmd::SetDm { user, off, .. } => {
            let Some(id) = book.find_user(&user) else {
                anyhow::bail!("there is no account called {user:?}");
            };
            book.set_dm(id, !off);
            format!("{user:?} is {}a DM", if off { "not " } else { "" })
        }
        AccountCmd::Ban { user, off, .. } => {
            let Some(id) = book.find_user(&user) else {
                anyhow::bail!("there is no account called {user:?}");
            };
            book.set_banned(id, !off);
            format!(
                "{user:?} is {}",
                if off { "no longer banned" } else { "banned" }
            )
        }
    };
    writer.submit(book.take_persist())?;
    writer.flush()?;
    if let Some(e) = writer.last_error() {
        anyhow::bail!("writing the database failed: {e}");
    }
    writer.shutdown();
    println!("{what}");
    Ok(())
}

/// The password of `account create`: from a file, from standard input, or asked on the
/// terminal (twice, without echo). Never from the command line.
fn read_password(file: Option<&Path>, stdin: bool) -> anyhow::Result<String> {
    use std::io::{BufRead as _, IsTerminal as _};
    let first_line = |text: &str| text.lines().next().unwrap_or_default().to_owned();
    if let Some(f) = file {
        let text = std::fs::read_to_string(f)
            .with_context(|| format!("reading the password from {}", f.display()))?;
        return Ok(first_line(&text));
    }
    if stdin {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .context("reading the password from standard input")?;
        return Ok(first_line(&line));
    }
    if !std::io::stdin().is_terminal() {
        anyhow::bail!(
            "no password: give --password-file PATH or --password-stdin (or run on a terminal to be asked)"
        );
    }
    let first = rpassword::prompt_password("Password: ").context("reading the password")?;
    let again = rpassword::prompt_password("Again: ").context("reading the password")?;
    if first != again {
        anyhow::bail!("the two passwords differ");
    }
    Ok(first)
}

/// The argon2 cost the server would use: `GATEWAY_PASSWORD_HASH=fast` (tests only) or the
/// production default. Either verifies the other's hashes (the PHC string carries its cost).
fn hasher_from_env() -> anyhow::Result<Argon2Hasher> {
    match std::env::var("GATEWAY_PASSWORD_HASH") {
        Err(std::env::VarError::NotPresent) => Ok(Argon2Hasher::production()),
        Ok(v) if v.trim().eq_ignore_ascii_case("production") => Ok(Argon2Hasher::production()),
        Ok(v) if v.trim().eq_ignore_ascii_case("fast") => Ok(Argon2Hasher::fast_for_tests()),
        _ => anyhow::bail!("GATEWAY_PASSWORD_HASH: expected `production` or `fast`"),
    }
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
    let _lock = gateway::store::lock_dir(data)?;
    let store = Store::open_dir(data)?;
    let mut book = store.load_book()?;
    let writer = Writer::spawn(store)?;
    let hasher = hasher_from_env()?;
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

fn import_script_data(dir: &Path, data: &Path) -> anyhow::Result<()> {
    let read = gateway::script_import::read_server_data(dir)?;
    let _lock = gateway::store::lock_dir(data)?;
    let store = Store::open_dir(data)?;
    let (mut scripts, warnings) = store.load_scripts()?;
    for w in warnings {
        eprintln!("warning: {w}");
    }
    let writer = Writer::spawn(store)?;
    let (ops, report) = gateway::script_import::apply(&mut scripts, read);
    writer.submit(ops)?;
    writer.flush()?;
    if let Some(e) = writer.last_error() {
        anyhow::bail!("writing the database failed: {e}");
    }
    writer.shutdown();
    for why in &report.skipped {
        eprintln!("skipped {why}");
    }
    println!("{report}");
    Ok(())
}

fn serve(args: &RunArgs) -> anyhow::Result<()> {
    // Traces when OTEL_EXPORTER_OTLP_ENDPOINT is set (docs/operations.md#traces).
    let traces = ops::logging::init_traced("gateway", None)?;
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
    let served = runtime.block_on(async move {
        let gw = gateway::server::start(cfg, world).await?;
        println!(
            "gateway ready: clients on udp {} (ALPN rc/1 and rc-compact/1, certificate sha256 {}), zone nodes on udp {} (certificate sha256 {}), admin on http://{}{}",
            gw.client_addr,
            gw.fingerprint,
            gw.internal_addr,
            gw.internal_fingerprint,
            gw.admin_addr,
            gw.update_addr
                .map(|a| format!(", updates on http://{a}"))
                .unwrap_or_default()
        );
        tokio::select! {
            () = ops::shutdown_signal() => {}
            () = gw.scheduled_stop() => {}
            why = gw.deposed() => {
                gw.step_down(&why).await;
                // A supervisor restarts it; with `--standby` it waits for the database.
                anyhow::bail!("stepped down: {why} (restart it with --standby to stand by)");
            }
            () = gw.hand_over_requested() => {
                gw.step_down("an operator handed the lead over").await;
                tracing::warn!("handed the lead over: exiting (restart it with --standby --peers to serve as an edge)");
                return anyhow::Ok(());
            }
        }
        tracing::info!("shutting down (a second signal forces the exit)");
        tokio::select! {
            () = gw.shutdown() => {}
            () = ops::shutdown_signal() => {
                tracing::error!("forced exit");
                std::process::exit(1);
            }
        }
        anyhow::Ok(())
    });
    // Flush the spans of the shutdown (saves, the last batches) before exiting.
    if let Some(t) = traces {
        t.shutdown();
    }
    served
}

/// `gateway copy-store`: SQLite (a stopped gateway's) into an empty Postgres database.
fn copy_store(data: &Path, to: &str) -> anyhow::Result<()> {
    let _lock = gateway::store::lock_dir(data)?;
    let from = Store::open_dir(data)
        .with_context(|| format!("opening the store in {}", data.display()))?;
    let mut dest = Store::open_postgres(to).context("connecting to Postgres")?;
    dest.claim_exclusive(gateway::server::wall_ms())?;
    let r = gateway::store::copy::copy(&from, &mut dest).context("copying")?;
    println!(
        "copied and verified: {} accounts, {} characters, {} script files, {} super globals, \
         {} ground items in {} instances, {} audit entries, handle floor {}, clock epoch {}",
        r.accounts,
        r.characters,
        r.script_files,
        r.super_globals,
        r.ground_items,
        r.ground_instances,
        r.audit_entries,
        r.handle_floor,
        r.clock_epoch_ms
    );
    for q in &r.unreadable {
        println!(
            "not copied (unreadable in the source): account {} {:?}: {}",
            q.account, q.name, q.reason
        );
    }
    Ok(())
}

/// `gateway economy`: the store's item and gold totals, as JSON.
fn economy(database_url: &str, data: &Path, prefix: Option<&str>) -> anyhow::Result<()> {
    // An audit reads: it never creates an empty database where none was.
    let file = data.join(gateway::store::DB_FILE);
    if database_url.is_empty() && !file.exists() {
        anyhow::bail!(
            "no database at {} (--data-dir, or --database-url)",
            file.display()
        );
    }
    let store = Store::open_configured(database_url, data).context("opening the store")?;
    let (records, unreadable) = store.load_all_quarantining().context("reading accounts")?;
    let (ground, _) = store.load_ground().context("reading the ground items")?;
    let e = gateway::store::economy::totals(&records, &ground, prefix);
    println!("{}", serde_json::to_string(&e)?);
    for q in &unreadable {
        eprintln!(
            "not counted (unreadable): account {} {:?}: {}",
            q.account, q.name, q.reason
        );
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let done = match cli.command {
        Some(Command::ImportAccounts { file, data }) => import_accounts(&file, &data),
        Some(Command::ImportScriptData { dir, data }) => import_script_data(&dir, &data),
        Some(Command::Account(cmd)) => account(cmd),
        Some(Command::Admin(args)) => admin_cli::run(args),
        Some(Command::Backup { to, data }) => gateway::store::backup(&data, &to)
            .with_context(|| format!("backing up {} to {}", data.display(), to.display()))
            .map(|()| println!("backed up {} to {}", data.display(), to.display())),
        Some(Command::CopyStore { to, data }) => copy_store(&data, &to),
        Some(Command::Economy {
            prefix,
            database_url,
            data,
        }) => economy(&database_url, &data, prefix.as_deref()),
        Some(Command::Healthcheck(args)) => healthcheck::run(&args),
        None => serve(&cli.run),
    };
    match done {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // One line: the error and its causes.
            eprintln!("gateway: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
