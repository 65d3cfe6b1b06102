//! `rcclient`: a command-line client for manual checks against the gateway. `login` logs
//! in and lists the characters; `play` enters the world, walks in a small circle sending
//! `P_StandardUpdate` datagrams and prints one line per packet received.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use client::{
    ClientError, CloseCode, ConnectOptions, Connection, GameStart, Incoming, NewCharacter, Verify,
};
use shared::proto::StandardUpdateC2S;
use tokio::time::Instant;

/// Longest JSON shown per packet line.
const LINE_JSON_MAX: usize = 160;
/// How often positions go up (Realm Crafter's client sends at most every 200 ms).
const UPDATE_EVERY: Duration = Duration::from_millis(200);
/// Radius of the walk, in world units.
const CIRCLE_RADIUS: f32 = 5.0;
/// Seconds per lap.
const CIRCLE_PERIOD: f32 = 12.0;

#[derive(Debug, Parser)]
#[command(
    name = "rcclient",
    about = "Talks to the gateway over QUIC (rc/1) like a Realm Crafter client."
)]
struct Cli {
    /// The gateway's address.
    #[arg(long, global = true, default_value = "127.0.0.1:25000")]
    addr: SocketAddr,
    /// TLS server name (checked only against a CA-issued certificate).
    #[arg(long, global = true, default_value = "localhost")]
    server_name: String,
    /// Accept any server certificate (development only).
    #[arg(long, global = true, conflicts_with = "pin")]
    insecure: bool,
    /// SHA-256 fingerprint of the gateway's certificate, as the gateway logs it (hex,
    /// ':' separators allowed).
    #[arg(long, global = true, value_name = "HEX")]
    pin: Option<String>,
    /// Create the account first (P_CreateAccount); a refusal (e.g. it exists) is reported
    /// and the login goes on.
    #[arg(long, global = true)]
    create_account: bool,
    /// E-mail address for --create-account.
    #[arg(long, global = true, default_value = "bot@example.invalid")]
    email: String,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Log in and list the account's characters.
    Login {
        /// Account name.
        user: String,
        /// Password as typed (its MD5 goes on the wire).
        password: String,
    },
    /// Log in, create a character if the account has none, enter the world and walk.
    Play {
        /// Account name.
        user: String,
        /// Password as typed (its MD5 goes on the wire).
        password: String,
        /// Name of the character to create when the account has none (default: the
        /// account name).
        #[arg(long, value_name = "NAME")]
        create_character: Option<String>,
        /// Which character to play.
        #[arg(long, default_value_t = 0)]
        character: u8,
        /// How long to walk.
        #[arg(long, default_value_t = 10)]
        seconds: u64,
    },
}

#[tokio::main]
async fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let verify = match (&cli.pin, cli.insecure) {
        (Some(pin), _) => Verify::pin_from_hex(pin)?,
        (None, true) => Verify::Insecure,
        (None, false) => bail!("say how to check the gateway: --pin HEX or --insecure"),
    };
    let mut conn =
        Connection::connect_with(cli.addr, &cli.server_name, ConnectOptions::new(verify))
            .await
            .with_context(|| format!("connecting to {}", cli.addr))?;
    println!("connected to {}", conn.remote_address());

    let (user, password) = match &cli.cmd {
        Cmd::Login { user, password } | Cmd::Play { user, password, .. } => (user, password),
    };
    if cli.create_account {
        let reply = conn.create_account(user, password, &cli.email).await?;
        println!("P_CreateAccount: {reply:?}");
    }
    let characters = conn.login(user, password).await.context("logging in")?;
    println!("logged in as {user}: {} character(s)", characters.len());
    for (i, c) in characters.iter().enumerate() {
        println!("  [{i}] {} (template {})", c.name, c.actor_id);
    }

    let outcome = match cli.cmd {
        Cmd::Login { .. } => Ok(()),
        Cmd::Play {
            ref user,
            ref password,
            ref create_character,
            character,
            seconds,
        } => {
            let catalogue = conn
                .fetch_catalogue()
                .await
                .context("fetching the catalogue")?;
            if characters.is_empty() {
                let template = catalogue
                    .playable()
                    .next()
                    .context("the catalogue has no playable template")?;
                let name = create_character.clone().unwrap_or_else(|| user.clone());
                let mut new = NewCharacter::new(&name, template.id);
                // Genders: 0 both, 1 male only, 2 female only, 3 none.
                new.gender = u8::from(template.genders == 2);
                conn.create_character(&new)
                    .await
                    .with_context(|| format!("creating the character {name}"))?;
                println!(
                    "created {name}: {} {} (template {})",
                    template.race, template.class, template.id
                );
                conn.login(user, password)
                    .await
                    .context("logging in again")?;
            }
            let start = conn
                .start_game(character)
                .await
                .context("entering the world")?;
            play(&mut conn, &start, Duration::from_secs(seconds)).await
        }
    };
    conn.close(CloseCode::Normal).await;
    outcome
}

/// Prints the start sequence, then walks in a circle around a point next to the spawn
/// for `length`, printing every packet that arrives.
async fn play(conn: &mut Connection, start: &GameStart, length: Duration) -> Result<()> {
    let a = &start.area;
    println!(
        "in the world as RuntimeID {} in {} at ({:.1}, {:.1}, {:.1})",
        start.runtime_id, a.area, a.x, a.y, a.z
    );
    let t0 = Instant::now();
    for p in &start.packets {
        print_packet(t0, p);
    }
    // The circle passes through the spawn point at angle 0.
    let (cx, cz) = (a.x - CIRCLE_RADIUS, a.z);
    let at = |secs: f32| {
        let angle = secs / CIRCLE_PERIOD * std::f32::consts::TAU;
        (
            cx + CIRCLE_RADIUS * angle.cos(),
            cz + CIRCLE_RADIUS * angle.sin(),
        )
    };
    let end = t0 + length;
    let mut tick = tokio::time::interval(UPDATE_EVERY);
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(end) => break,
            _ = tokio::signal::ctrl_c() => {
                println!("interrupted");
                break;
            }
            _ = tick.tick() => {
                let secs = t0.elapsed().as_secs_f32();
                let (x, z) = at(secs);
                let (dest_x, dest_z) = at(secs + 2.0 * UPDATE_EVERY.as_secs_f32());
                conn.send_update(&StandardUpdateC2S {
                    dest_x,
                    dest_z,
                    y: a.y,
                    x,
                    z,
                    is_running: 0,
                    walking_backward: 0,
                })?;
            }
            r = conn.recv() => match r {
                Ok(p) => print_packet(t0, &p),
                Err(e @ ClientError::Decode { .. }) => println!("{:>8.3}  {e}", t0.elapsed().as_secs_f64()),
                Err(e) => return Err(e).context("receiving"),
            },
        }
    }
    let s = conn.stats();
    println!(
        "done: {} stream frames, {} datagrams ({} dropped)",
        s.frames_received, s.datagrams_received, s.datagrams_dropped
    );
    Ok(())
}

/// One line: time, channel, name, and the packet as JSON (shortened).
fn print_packet(t0: Instant, p: &Incoming) {
    let mut json = p.packet.to_json().to_string();
    if json.len() > LINE_JSON_MAX {
        let mut cut = LINE_JSON_MAX;
        while !json.is_char_boundary(cut) {
            cut -= 1;
        }
        json.truncate(cut);
        json.push('…');
    }
    let channel = match p.channel {
        client::Channel::Reliable => "stream  ",
        client::Channel::Datagram => "datagram",
    };
    println!(
        "{:>8.3}  {channel}  {:<18} {json}",
        t0.elapsed().as_secs_f64(),
        p.name()
    );
}
