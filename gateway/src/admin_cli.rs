//! `gateway admin …`: operator commands on a running gateway, through its JSON admin API
//! (`/api/v1/`, docs/api.md, with the operator's bearer token; `import-script-data`
//! through `POST /admin`), so nobody has to stop the server to create an account, make a
//! DM, ban or mute (with a reason and an end), kick, warp, message, broadcast, see who is
//! online and where the actors of an instance are, read the audit log, or lock the server
//! for maintenance and unlock it. `--json` prints the API's answer as it came.

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
    /// A file holding the operator's token (an `operators` token, or the `admin_token`;
    /// else `GATEWAY_ADMIN_TOKEN_FILE` or `GATEWAY_ADMIN_TOKEN`).
    #[arg(long, value_name = "PATH")]
    token_file: Option<PathBuf>,
    /// Print the API's JSON answer instead of its text.
    #[arg(long)]
    json: bool,
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
        /// For this many minutes (0: for good).
        #[arg(long, default_value_t = 0)]
        minutes: u64,
        /// Why.
        #[arg(long, default_value = "")]
        reason: String,
    },
    /// Mute an account: its chat reaches nobody for the minutes given; with --off, lift it.
    Mute {
        /// Account name.
        user: String,
        /// Lift the mute instead.
        #[arg(long)]
        off: bool,
        /// For this many minutes.
        #[arg(long, default_value_t = 60)]
        minutes: u64,
        /// Why (told to the player).
        #[arg(long, default_value = "")]
        reason: String,
    },
    /// Kick an online character.
    Kick {
        /// Character name.
        name: String,
        /// Why (told to the player).
        #[arg(long, default_value = "")]
        reason: String,
    },
    /// A system line to one online character.
    Message {
        /// Character name.
        name: String,
        /// The text.
        text: String,
    },
    /// The AreaInstances: node, players, NPCs, tick p99.
    Instances,
    /// The actors of an AreaInstance now: RuntimeID, name, kind, position.
    Actors {
        /// Area name.
        area: String,
        /// Instance number.
        #[arg(default_value_t = 0)]
        instance: u16,
    },
    /// The audit log, newest first.
    Audit {
        /// Only entries whose operator, action or target contain this.
        #[arg(long, default_value = "")]
        query: String,
        /// How many.
        #[arg(long, default_value_t = 50)]
        limit: usize,
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
    /// Hand the lead over to an edge (upgrading gateways one at a time): this gateway
    /// exits as if it had died, its edge takes over keeping the players it relays, and this
    /// gateway's own players log in again (docs/operations.md, "Several gateways").
    HandOver,
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
    /// Drain a zone node: it takes nothing new, and its players move to the other nodes
    /// (it stays up, empty, until it is stopped).
    Drain {
        /// The node's id (see `instances`).
        node: String,
    },
    /// Back the database up now into the gateway's backup directory (`backup_dir`).
    Backup {
        /// File name (default: `gw-YYYYMMDD-HHMMSS.sqlite3`, UTC).
        #[arg(default_value = "")]
        name: String,
    },
    /// The backup files in the gateway's backup directory, newest first.
    Backups,
    /// Put one character back as a backup file holds it (its account must be offline).
    Restore {
        /// Character name.
        name: String,
        /// Backup file name (see `backups`).
        backup: String,
    },
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

/// One call of the JSON API: method, path, body.
struct Call {
    method: &'static str,
    path: String,
    body: serde_json::Value,
}

fn call(method: &'static str, path: String, body: serde_json::Value) -> Call {
    Call { method, path, body }
}

/// A path segment, percent-encoded.
fn seg(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes())
        .collect::<String>()
        .replace('+', "%20")
}

/// Runs one `gateway admin` command; prints the gateway's answer.
pub fn run(args: AdminArgs) -> anyhow::Result<()> {
    use serde_json::json;
    let token = token(&args)?;
    let v1 = |method, path: String, body| Some(call(method, format!("/api/v1{path}"), body));
    let (api, legacy) = match args.cmd {
        AdminCmd::CreateAccount {
            user,
            dm,
            password_file,
            password_stdin,
        } => {
            let password = super::read_password(password_file.as_deref(), password_stdin)?;
            (
                v1(
                    "POST",
                    "/accounts".into(),
                    json!({"user": user, "password": password, "dm": dm}),
                ),
                None,
            )
        }
        AdminCmd::SetDm { user, off } => (
            v1(
                "POST",
                format!("/accounts/{}/dm", seg(&user)),
                json!({"on": !off}),
            ),
            None,
        ),
        AdminCmd::Ban {
            user, off: true, ..
        } => (
            v1("POST", format!("/accounts/{}/unban", seg(&user)), json!({})),
            None,
        ),
        AdminCmd::Ban {
            user,
            minutes,
            reason,
            ..
        } => (
            v1(
                "POST",
                format!("/accounts/{}/ban", seg(&user)),
                json!({"minutes": minutes, "reason": reason}),
            ),
            None,
        ),
        AdminCmd::Mute {
            user, off: true, ..
        } => (
            v1(
                "POST",
                format!("/accounts/{}/unmute", seg(&user)),
                json!({}),
            ),
            None,
        ),
        AdminCmd::Mute {
            user,
            minutes,
            reason,
            ..
        } => (
            v1(
                "POST",
                format!("/accounts/{}/mute", seg(&user)),
                json!({"minutes": minutes, "reason": reason}),
            ),
            None,
        ),
        AdminCmd::Kick { name, reason } => (
            v1(
                "POST",
                format!("/players/{}/kick", seg(&name)),
                json!({"reason": reason}),
            ),
            None,
        ),
        AdminCmd::Message { name, text } => (
            v1(
                "POST",
                format!("/players/{}/message", seg(&name)),
                json!({"text": text}),
            ),
            None,
        ),
        AdminCmd::Warp {
            name,
            area,
            instance,
        } => (
            v1(
                "POST",
                format!("/players/{}/warp", seg(&name)),
                json!({"area": area, "instance": instance}),
            ),
            None,
        ),
        AdminCmd::Broadcast { text } => {
            (v1("POST", "/broadcast".into(), json!({"text": text})), None)
        }
        AdminCmd::Online => (v1("GET", "/players".into(), json!(null)), None),
        AdminCmd::HandOver => (None, Some(AdminCommand::HandOver)),
        AdminCmd::Instances => (v1("GET", "/instances".into(), json!(null)), None),
        AdminCmd::Actors { area, instance } => (
            v1(
                "GET",
                format!("/instances/{}/{instance}/actors", seg(&area)),
                json!(null),
            ),
            None,
        ),
        AdminCmd::Audit { query, limit } => (
            v1(
                "GET",
                format!("/audit?q={}&limit={limit}", seg(&query)),
                json!(null),
            ),
            None,
        ),
        AdminCmd::Lock { reason } => (v1("POST", "/lock".into(), json!({"reason": reason})), None),
        AdminCmd::Unlock => (v1("POST", "/unlock".into(), json!({})), None),
        AdminCmd::ReloadScripts => (v1("POST", "/reload-scripts".into(), json!({})), None),
        AdminCmd::Drain { node } => (
            v1("POST", format!("/nodes/{}/drain", seg(&node)), json!({})),
            None,
        ),
        AdminCmd::Backup { name } => (v1("POST", "/backups".into(), json!({"name": name})), None),
        AdminCmd::Backups => (v1("GET", "/backups".into(), json!(null)), None),
        AdminCmd::Restore { name, backup } => (
            v1(
                "POST",
                format!("/characters/{}/restore", seg(&name)),
                json!({"backup": backup}),
            ),
            None,
        ),
        AdminCmd::ImportScriptData { dir } => (
            None,
            Some(AdminCommand::ImportScriptData {
                data: gateway::script_import::read_server_data(&dir)?,
            }),
        ),
    };
    let c = match (api, legacy) {
        (Some(c), _) => c,
        (None, Some(cmd)) => call("POST", "/admin".into(), serde_json::to_value(&cmd)?),
        (None, None) => anyhow::bail!("nothing to do"),
    };
    let body = if c.body.is_null() {
        Vec::new()
    } else {
        serde_json::to_vec(&c.body)?
    };
    let (status, answer) = request(args.admin_addr, c.method, &c.path, &token, &body)
        .with_context(|| format!("the admin API at {}", args.admin_addr))?;
    let parsed: Option<serde_json::Value> = serde_json::from_str(&answer).ok();
    if status != 200 {
        let why = parsed
            .as_ref()
            .and_then(|v| v["error"].as_str().map(str::to_owned))
            .unwrap_or(answer);
        anyhow::bail!("{status}: {why}");
    }
    match parsed {
        Some(v) if args.json => println!("{v}"),
        Some(v) => print_text(&v),
        None if !answer.is_empty() => println!("{answer}"),
        None => {}
    }
    Ok(())
}

/// An answer as text: an action's result, or one line per row.
fn print_text(v: &serde_json::Value) {
    if let Some(r) = v["result"].as_str() {
        println!("{r}");
        return;
    }
    let Some(rows) = v.as_array() else {
        println!("{v}");
        return;
    };
    for r in rows {
        let line = if r.get("character").is_some() {
            format!(
                "{}\t{}\t{}",
                r["character"].as_str().unwrap_or(""),
                r["area"].as_str().unwrap_or(""),
                r["instance"]
            )
        } else if r.get("runtime_id").is_some() {
            format!(
                "{}\t{}\t{}\t{:.1}\t{:.1}\t{:.1}",
                r["runtime_id"],
                r["name"].as_str().unwrap_or(""),
                r["kind"].as_str().unwrap_or(""),
                r["x"].as_f64().unwrap_or(0.0),
                r["y"].as_f64().unwrap_or(0.0),
                r["z"].as_f64().unwrap_or(0.0)
            )
        } else if r.get("operator").is_some() {
            format!(
                "{}\t{}\t{}\t{}\t{}\t{}",
                r["id"],
                r["operator"].as_str().unwrap_or(""),
                r["action"].as_str().unwrap_or(""),
                r["target"].as_str().unwrap_or(""),
                if r["ok"] == true { "ok" } else { "failed" },
                r["result"].as_str().unwrap_or("")
            )
        } else if r.get("modified_ms").is_some() {
            format!("{}\t{} bytes", r["name"].as_str().unwrap_or(""), r["bytes"])
        } else if r.get("node").is_some() {
            format!(
                "{}\t{}\t{}\t{} players\t{} NPCs\t{:.2} ms",
                r["area"].as_str().unwrap_or(""),
                r["instance"],
                r["node"].as_str().unwrap_or(""),
                r["players"],
                r["npcs"],
                r["tick_p99_ms"].as_f64().unwrap_or(0.0)
            )
        } else {
            r.to_string()
        };
        println!("{line}");
    }
}

/// One request over HTTP/1.1 (`Connection: close`).
fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: &str,
    body: &[u8],
) -> anyhow::Result<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
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
