//! `gateway admin …`: operator commands on a running gateway, through its admin API
//! (`POST /admin` with the bearer token), so nobody has to stop the server to create an
//! account, make a DM, ban, kick, warp, broadcast, see who is online, or lock the server
//! for maintenance and unlock it.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use gateway::admin::AdminCommand;

/// Where the gateway is and how to prove the operator is the operator.
#[derive(Args)]
pub struct AdminArgs {
    /// The gateway's admin address.
    #[arg(long, default_value = "127.0.0.1:9180")]
    admin_addr: SocketAddr,
    /// A file holding the admin token (else `GATEWAY_ADMIN_TOKEN_FILE` or
    /// `GATEWAY_ADMIN_TOKEN`, as the gateway reads it).
    #[arg(long, value_name = "PATH")]
    token_file: Option<PathBuf>,
    #[command(subcommand)]
    cmd: AdminCmd,
}

#[derive(Subcommand)]
enum AdminCmd {
    /// Create an account (the password is asked for, or read with --password-stdin or
    /// --password-file).
    CreateAccount {
        /// Account name.
        user: String,
        /// Make it a DM account.
        #[arg(long)]
        dm: bool,
        /// Read the password from this file (its first line).
        #[arg(long, value_name = "PATH", conflicts_with = "password_stdin")]
        password_file: Option<PathBuf>,
        /// Read the password from the first line of standard input.
        #[arg(long)]
        password_stdin: bool,
    },
    /// Make an account a DM (with --off, not); it takes effect at its next login.
    SetDm {
        /// Account name.
        user: String,
        /// Clear the flag instead.
        #[arg(long)]
        off: bool,
    },
    /// Ban an account (its player online is kicked); with --off, lift the ban.
    Ban {
        /// Account name.
        user: String,
        /// Lift the ban instead.
        #[arg(long)]
        off: bool,
    },
    /// Kick an online character.
    Kick {
        /// Character name.
        name: String,
    },
    /// Warp an online character to an AreaInstance.
    Warp {
        /// Character name.
        name: String,
        /// Area name.
        area: String,
        /// Instance number.
        #[arg(default_value_t = 0)]
        instance: u16,
    },
    /// A system line to every player online.
    Broadcast {
        /// The text.
        text: String,
    },
    /// The characters online: name, area, instance.
    Online,
    /// Lock the server for maintenance (Realm Crafter's "lock updates server"): nobody
    /// logs in or downloads updates; the players online are told and removed.
    Lock {
        /// Why (shown to the players and to whoever is refused).
        #[arg(long, default_value = "")]
        reason: String,
    },
    /// Unlock: the update list is read again, then logins and downloads are open.
    Unlock,
    /// Reload the world's scripts from its folder on every node (`RefreshScripts`); a set
    /// that does not compile is refused with its errors and nothing changes.
    ReloadScripts,
    /// Import a Realm Crafter server's `Superglobals.dat` and `Script Files` folder (of
    /// its `Data/Server Data` directory, read here) into the running cluster.
    ImportScriptData {
        /// Realm Crafter's `Data/Server Data` directory.
        dir: PathBuf,
    },
}

fn token(args: &AdminArgs) -> anyhow::Result<String> {
    let file = args
        .token_file
        .clone()
        .or_else(|| std::env::var_os("GATEWAY_ADMIN_TOKEN_FILE").map(PathBuf::from));
    if let Some(f) = file {
        let text = std::fs::read_to_string(&f)
            .with_context(|| format!("reading the admin token from {}", f.display()))?;
        return Ok(text.trim().to_owned());
    }
    std::env::var("GATEWAY_ADMIN_TOKEN")
        .map(|t| t.trim().to_owned())
        .map_err(|_| {
            anyhow::anyhow!(
                "no admin token: give --token-file PATH or set GATEWAY_ADMIN_TOKEN_FILE"
            )
        })
}

/// Runs one `gateway admin` command; prints the gateway's answer.
pub fn run(args: AdminArgs) -> anyhow::Result<()> {
    let token = token(&args)?;
    let cmd = match args.cmd {
        AdminCmd::CreateAccount {
            user,
            dm,
            password_file,
            password_stdin,
        } => AdminCommand::CreateAccount {
            user,
            password: super::read_password(password_file.as_deref(), password_stdin)?,
            dm,
        },
        AdminCmd::SetDm { user, off } => AdminCommand::SetDm { user, on: !off },
        AdminCmd::Ban { user, off } => AdminCommand::SetBanned { user, on: !off },
        AdminCmd::Kick { name } => AdminCommand::Kick { name },
        AdminCmd::Warp {
            name,
            area,
            instance,
        } => AdminCommand::Warp {
            name,
            area,
            instance,
        },
        AdminCmd::Broadcast { text } => AdminCommand::Broadcast { text },
        AdminCmd::Online => AdminCommand::Online,
        AdminCmd::Lock { reason } => AdminCommand::Lock { reason },
        AdminCmd::Unlock => AdminCommand::Unlock,
        AdminCmd::ReloadScripts => AdminCommand::ReloadScripts,
        AdminCmd::ImportScriptData { dir } => AdminCommand::ImportScriptData {
            data: gateway::script_import::read_server_data(&dir)?,
        },
    };
    let body = serde_json::to_vec(&cmd)?;
    let (status, answer) = post(args.admin_addr, &token, &body)
        .with_context(|| format!("the admin API at {}", args.admin_addr))?;
    if status == 200 {
        if !answer.is_empty() {
            println!("{answer}");
        }
        Ok(())
    } else {
        anyhow::bail!("{status}: {answer}")
    }
}

/// `POST /admin` over HTTP/1.1 (one request, `Connection: close`).
fn post(addr: SocketAddr, token: &str, body: &[u8]) -> anyhow::Result<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    let head = format!(
        "POST /admin HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    let mut raw = Vec::new();
    s.take(1 << 20).read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow::anyhow!("not an HTTP answer"))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("no HTTP status in {head:?}"))?;
    Ok((status, body.trim_end().to_owned()))
}
