//! `rcclient`: a command-line client for manual checks against the gateway. `login` logs
//! in and lists the characters; `play` enters the world, walks in a small circle sending
//! `P_StandardUpdate` datagrams, prints one line per packet received and the quest log;
//! `talk` enters the world, walks to an NPC, right-clicks it, prints its dialog and
//! answers its options (from `--choose` or stdin), then prints the quest log.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::{IsTerminal as _, Write as _};
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use clap::{Parser, Subcommand};
use client::{
    ClientError, CloseCode, ConnectOptions, Connection, Event, GameStart, Incoming, NewCharacter,
    Quest, Verify,
};
use shared::proto::{CharacterSummary, StandardUpdateC2S};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Longest JSON shown per packet line.
const LINE_JSON_MAX: usize = 160;
/// How often positions go up (Realm Crafter's client sends at most every 200 ms).
const UPDATE_EVERY: Duration = Duration::from_millis(200);
/// Radius of the walk, in world units.
const CIRCLE_RADIUS: f32 = 5.0;
/// Seconds per lap.
const CIRCLE_PERIOD: f32 = 12.0;
/// `talk`: step per position update while walking to the NPC. The server's speed check
/// always accepts a step of 2 units, however close together two updates arrive.
const WALK_STEP: f32 = 1.8;
/// `talk`: how close to the NPC it walks before right-clicking (the server's reach is an
/// XZ distance of 20; its copy of our position may lag a step behind).
const TALK_REACH: f32 = 6.0;
/// `talk`: how long to wait for a dialog after a right-click before clicking again.
const CLICK_RETRY: Duration = Duration::from_secs(3);

#[derive(Debug, Parser)]
#[command(
    name = "rcclient",
    version,
    about = "Talks to the gateway over QUIC (rc/1) or RCEnet (ENet 1.1) like a Realm Crafter client."
)]
struct Cli {
    /// The gateway's address (its QUIC `listen`, or with `--transport enet` its
    /// `enet_listen`, 127.0.0.1:25002 by default); several, comma-separated (a gateway and
    /// its standbys): the first that answers.
    #[arg(long, global = true, value_delimiter = ',')]
    addr: Vec<SocketAddr>,
    /// `quic` or `enet` (RCEnet: no certificate, no encryption, as the original client).
    #[arg(long, global = true, default_value = "quic")]
    transport: client::Transport,
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
    /// Log in, create a character if the account has none, enter the world and walk,
    /// printing every packet, and the quest log at the start and the end.
    Play {
        #[command(flatten)]
        player: Player,
        /// How long to walk.
        #[arg(long, default_value_t = 10)]
        seconds: u64,
    },
    /// Enter the world, talk to an NPC and answer its dialog, then print the quest log.
    ///
    /// Logs in and enters the world as `play` does, walks to the NPC (`--template` or
    /// `--rid`), right-clicks it, prints each dialog line as it comes and answers each list
    /// of options (`--choose`, then stdin). Stops when the dialogs it opened have closed,
    /// or at `--timeout`, and prints the quest log.
    ///
    /// Example, against `gateway --standalone` (the demo world), accepting Elder Maren's
    /// quest: `rcclient --insecure --create-account talk alice secret --template 9
    /// --choose 1`
    #[command(group(clap::ArgGroup::new("npc").required(true).args(["template", "rid"])))]
    Talk {
        #[command(flatten)]
        player: Player,
        /// Talk to the nearest NPC of this actor template in view (the template ids of
        /// `P_NewActor`).
        #[arg(long, value_name = "ID")]
        template: Option<u16>,
        /// Talk to the actor with this RuntimeID.
        #[arg(long, value_name = "RID")]
        rid: Option<u16>,
        /// The answer (1-based) to the next list of options; repeat it for each list in
        /// order (`--choose 1 --choose 2`). When they run out, answers are read from stdin.
        #[arg(long = "choose", value_name = "N", value_parser = clap::value_parser!(u8).range(1..=9))]
        choices: Vec<u8>,
        /// Give up after this many seconds (exit status 1).
        #[arg(long, default_value_t = 60)]
        timeout: u64,
    },
}

/// The account and character `play` and `talk` enter the world with.
#[derive(Debug, clap::Args)]
struct Player {
    /// Account name.
    user: String,
    /// Password as typed (its MD5 goes on the wire).
    password: String,
    /// Name of the character to create when the account has none (default: the account
    /// name).
    #[arg(long, value_name = "NAME")]
    create_character: Option<String>,
    /// Which character to play.
    #[arg(long, default_value_t = 0)]
    character: u8,
}

/// Whom `talk` talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Npc {
    /// The nearest actor of this template.
    Template(u16),
    /// This RuntimeID.
    Rid(u16),
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
    let enet = cli.transport == client::Transport::Enet;
    let verify = match (&cli.pin, cli.insecure) {
        (Some(pin), _) => Verify::pin_from_hex(pin)?,
        (None, true) => Verify::Insecure,
        // RCEnet has no certificate to check.
        (None, false) if enet => Verify::Insecure,
        (None, false) => bail!("say how to check the gateway: --pin HEX or --insecure"),
    };
    let addrs = if cli.addr.is_empty() {
        vec![SocketAddr::from((
            [127, 0, 0, 1],
            if enet { 25_002 } else { 25_000 },
        ))]
    } else {
        cli.addr.clone()
    };
    let mut opts = ConnectOptions::new(verify);
    opts.transport = cli.transport;
    let mut conn = Connection::connect_any(&addrs, &cli.server_name, opts)
        .await
        .with_context(|| {
            let list: Vec<String> = addrs.iter().map(ToString::to_string).collect();
            format!("connecting to {}", list.join(", "))
        })?;
    println!("connected to {}", conn.remote_address());

    let (user, password) = match &cli.cmd {
        Cmd::Login { user, password }
        | Cmd::Play {
            player: Player { user, password, .. },
            ..
        }
        | Cmd::Talk {
            player: Player { user, password, .. },
            ..
        } => (user, password),
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
            ref player,
            seconds,
        } => match enter(&mut conn, player, &characters).await {
            Ok(start) => play(&mut conn, &start, Duration::from_secs(seconds)).await,
            Err(e) => Err(e),
        },
        Cmd::Talk {
            ref player,
            template,
            rid,
            ref choices,
            timeout,
        } => {
            let npc = match (template, rid) {
                (_, Some(r)) => Npc::Rid(r),
                (Some(t), None) => Npc::Template(t),
                (None, None) => bail!("say whom to talk to: --template ID or --rid RID"),
            };
            match enter(&mut conn, player, &characters).await {
                Ok(start) => {
                    let choices = choices.iter().copied().collect();
                    talk(
                        &mut conn,
                        &start,
                        npc,
                        choices,
                        Duration::from_secs(timeout),
                    )
                    .await
                }
                Err(e) => Err(e),
            }
        }
    };
    conn.close(CloseCode::Normal).await;
    outcome
}

/// Enters the world: fetches the catalogue, creates a character (named by
/// `--create-character`, else the account name) from the
/// first playable template when the account has none (and logs in again), fetches the
/// character sheet (the quest log, the items) and starts the game with `character`.
async fn enter(
    conn: &mut Connection,
    player: &Player,
    characters: &[CharacterSummary],
) -> Result<GameStart> {
    let Player {
        user,
        password,
        character,
        ..
    } = player;
    let character = *character;
    let name = player.create_character.as_deref().unwrap_or(user);
    let catalogue = conn
        .fetch_catalogue()
        .await
        .context("fetching the catalogue")?;
    if characters.is_empty() {
        let template = catalogue
            .playable()
            .next()
            .context("the catalogue has no playable template")?;
        let mut new = NewCharacter::new(name, template.id);
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
    conn.fetch_character(character)
        .await
        .context("fetching the character")?;
    conn.start_game(character)
        .await
        .context("entering the world")
}

/// The quest log as printed: a count, then one line per quest.
fn quest_log_lines(quests: &[Quest]) -> Vec<String> {
    let mut lines = vec![match quests.len() {
        0 => "quest log: empty".to_owned(),
        1 => "quest log: 1 quest".to_owned(),
        n => format!("quest log: {n} quests"),
    }];
    lines.extend(
        quests
            .iter()
            .map(|q| format!("  {}: {}", q.name, q.status_text())),
    );
    lines
}

fn print_quest_log(conn: &Connection) {
    for l in quest_log_lines(conn.quests()) {
        println!("{l}");
    }
}

/// Prints the start sequence, then walks in a circle around a point next to the spawn
/// for `length`, printing every packet that arrives.
async fn play(conn: &mut Connection, start: &GameStart, length: Duration) -> Result<()> {
    let a = &start.area;
    println!(
        "in the world as RuntimeID {} in {} at ({:.1}, {:.1}, {:.1})",
        start.runtime_id, a.area, a.x, a.y, a.z
    );
    print_quest_log(conn);
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
                Ok(p) => {
                    print_packet(t0, &p);
                    // Script windows are opened and acknowledged as the original client
                    // does; quest log changes update the log printed at the end.
                    conn.ui_event(&p.packet)?;
                }
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
    print_quest_log(conn);
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

/// An actor `talk` has in view.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    template: u16,
    name: String,
    x: f32,
    z: f32,
}

/// The nearest actor of `template` to `from` (XZ), ties broken by the lower RuntimeID.
fn nearest(actors: &HashMap<u16, Seen>, template: u16, from: (f32, f32)) -> Option<u16> {
    actors
        .iter()
        .filter(|(_, a)| a.template == template)
        .map(|(&rid, a)| (rid, dist(from, (a.x, a.z))))
        .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
        .map(|(rid, _)| rid)
}

fn dist(a: (f32, f32), b: (f32, f32)) -> f32 {
    ((a.0 - b.0).powi(2) + (a.1 - b.1).powi(2)).sqrt()
}

/// The next point on the way from `from` to within `reach` of `to`, at most `step` away;
/// `None` once within reach.
fn step_towards(from: (f32, f32), to: (f32, f32), reach: f32, step: f32) -> Option<(f32, f32)> {
    let d = dist(from, to);
    if !d.is_finite() || d <= reach {
        return None;
    }
    let k = (step / d).min(1.0);
    Some((from.0 + (to.0 - from.0) * k, from.1 + (to.1 - from.1) * k))
}

/// An option number typed for a list of `options`.
fn parse_choice(line: &str, options: usize) -> Result<u8, String> {
    match line.trim().parse::<u8>() {
        Ok(n) if n >= 1 && usize::from(n) <= options => Ok(n),
        _ => Err(format!("type a number from 1 to {options}")),
    }
}

/// Lines typed on stdin, read by a thread started the first time an answer is needed.
/// `None` once stdin is closed.
async fn next_line(lines: &mut Option<mpsc::UnboundedReceiver<String>>) -> Option<String> {
    let rx = lines.get_or_insert_with(|| {
        let (tx, rx) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in std::io::stdin().lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        rx
    });
    rx.recv().await
}

/// A dialog's lines are printed with its title.
fn say(titles: &HashMap<u32, String>, dialog: u32, text: &str) {
    let title = titles.get(&dialog).map_or("?", String::as_str);
    println!("[{title}] {text}");
}

/// Walks to the NPC, right-clicks it and follows the dialogs that open: prints their
/// lines, answers their options with `choices` in order and then from stdin, and ends when
/// every dialog opened has closed (or at the timeout). Prints the quest log either way.
async fn talk(
    conn: &mut Connection,
    start: &GameStart,
    npc: Npc,
    mut choices: VecDeque<u8>,
    timeout: Duration,
) -> Result<()> {
    let a = &start.area;
    let own = start.runtime_id;
    println!(
        "in the world as RuntimeID {own} in {} at ({:.1}, {:.1}, {:.1})",
        a.area, a.x, a.y, a.z
    );
    let mut me = (a.x, a.z);
    let mut y = a.y;
    let mut actors: HashMap<u16, Seen> = HashMap::new();
    let see = |actors: &mut HashMap<u16, Seen>, e: &Event| match e {
        Event::ActorAppeared {
            runtime_id,
            template_id,
            name,
            position,
            ..
        } if *runtime_id != own => {
            actors.insert(
                *runtime_id,
                Seen {
                    template: *template_id,
                    name: name.clone(),
                    x: position.0,
                    z: position.2,
                },
            );
        }
        Event::ActorMoved {
            runtime_id, x, z, ..
        } => {
            if let Some(s) = actors.get_mut(runtime_id) {
                (s.x, s.z) = (*x, *z);
            }
        }
        Event::ActorGone { runtime_id } | Event::ActorDied { runtime_id, .. } => {
            actors.remove(runtime_id);
        }
        _ => {}
    };
    for p in &start.packets {
        see(&mut actors, &Event::from(p.packet.clone()));
    }
    let mut target: Option<u16> = None;
    let mut clicked: Option<Instant> = None;
    let mut waiting_shown = false;
    // The dialogs opened since the right-click, their titles, and the one waiting for an
    // answer typed on stdin (with its number of options).
    let mut open: HashSet<u32> = HashSet::new();
    let mut titles: HashMap<u32, String> = HashMap::new();
    let mut talked = false;
    let mut asked: Option<(u32, usize)> = None;
    let mut stdin = None;
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let mut tick = tokio::time::interval(UPDATE_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let outcome = loop {
        tokio::select! {
            () = &mut deadline => {
                break Err(anyhow!(if talked {
                    "timed out with the dialog still open"
                } else {
                    "timed out before any dialog opened (the NPC has no script, is out of \
                     reach, or its script is still running for this player, e.g. a quest \
                     waiting for kills)"
                }));
            }
            _ = tokio::signal::ctrl_c() => break Err(anyhow!("interrupted")),
            line = next_line(&mut stdin), if asked.is_some() => {
                let Some(line) = line else {
                    break Err(anyhow!("stdin closed before an option was chosen"));
                };
                if !std::io::stdin().is_terminal() {
                    // Piped answers: show them, as a terminal would.
                    println!("{}", line.trim());
                }
                let Some((dialog, n)) = asked else { continue };
                match parse_choice(&line, n) {
                    Ok(option) => {
                        asked = None;
                        conn.choose(dialog, option).await.context("choosing")?;
                    }
                    Err(e) => {
                        print!("{e}: ");
                        let _ = std::io::stdout().flush();
                    }
                }
            }
            _ = tick.tick() => {
                if talked {
                    continue;
                }
                if target.is_none() {
                    target = match npc {
                        Npc::Rid(r) => actors.contains_key(&r).then_some(r),
                        Npc::Template(t) => nearest(&actors, t, me),
                    };
                    if target.is_none() && !waiting_shown {
                        waiting_shown = true;
                        println!("waiting for {npc:?} to come into view");
                    }
                }
                let Some(rid) = target else { continue };
                let Some(s) = actors.get(&rid) else {
                    target = None;
                    continue;
                };
                if let Some(next) = step_towards(me, (s.x, s.z), TALK_REACH, WALK_STEP) {
                    me = next;
                    conn.move_to(me.0, y, me.1, false)?;
                } else if clicked.is_none_or(|t| t.elapsed() >= CLICK_RETRY) {
                    println!(
                        "right-clicking {} (RuntimeID {rid}, template {}) at distance {:.1}",
                        s.name,
                        s.template,
                        dist(me, (s.x, s.z))
                    );
                    clicked = Some(Instant::now());
                    conn.right_click(rid).await?;
                }
            }
            r = conn.next_event() => {
                let e = match r {
                    Ok(e) => e,
                    Err(e @ ClientError::Decode { .. }) => {
                        println!("{e}");
                        continue;
                    }
                    Err(e) => break Err(anyhow::Error::new(e).context("receiving")),
                };
                see(&mut actors, &e);
                match e {
                    Event::AreaChanged { area, position, .. } => {
                        println!("now in {area} at ({:.1}, {:.1}, {:.1})", position.0, position.1, position.2);
                        (me, y) = ((position.0, position.2), position.1);
                        actors.clear();
                        target = None;
                    }
                    Event::ActorGone { runtime_id } | Event::ActorDied { runtime_id, .. }
                        if target == Some(runtime_id) && !talked =>
                    {
                        target = None;
                        clicked = None;
                    }
                    Event::DialogOpened { dialog, title, context } => {
                        if clicked.is_some() {
                            talked = true;
                            open.insert(dialog);
                        }
                        let with = context.map(|c| format!(" with RuntimeID {c}")).unwrap_or_default();
                        println!("[{title}] opened (dialog {dialog}{with})");
                        titles.insert(dialog, title);
                    }
                    Event::DialogText { dialog, text, .. } => say(&titles, dialog, &text),
                    Event::DialogOptions { dialog, options } => {
                        for (i, o) in options.iter().enumerate() {
                            say(&titles, dialog, &format!("  {}. {o}", i + 1));
                        }
                        if let Some(option) = choices.pop_front() {
                            say(&titles, dialog, &format!("> {option} (--choose)"));
                            if usize::from(option) > options.len() {
                                break Err(anyhow!(
                                    "--choose {option}: the dialog offers {} option(s)",
                                    options.len()
                                ));
                            }
                            conn.choose(dialog, option).await.context("choosing")?;
                        } else {
                            asked = Some((dialog, options.len()));
                            print!("choose 1-{}: ", options.len());
                            let _ = std::io::stdout().flush();
                            // The automatic answers (the lines shown) go out before the
                            // wait for a typed answer.
                            conn.flush().await?;
                        }
                    }
                    Event::DialogClosed { dialog } => {
                        say(&titles, dialog, "closed");
                        if asked.is_some_and(|(d, _)| d == dialog) {
                            asked = None;
                            println!();
                        }
                        if open.remove(&dialog) && open.is_empty() {
                            break Ok(());
                        }
                    }
                    Event::QuestUpdated { name, status, .. } => println!("quest: {name}: {status}"),
                    Event::QuestRemoved { name } => println!("quest removed: {name}"),
                    Event::InputRequested { title, prompt, .. } => {
                        println!("[{title}] {prompt} (a text prompt: rcclient talk does not answer it)");
                    }
                    Event::Chat { text, .. } => println!("chat: {text}"),
                    Event::Kicked => break Err(anyhow!("kicked")),
                    _ => {}
                }
            }
        }
    };
    // The last answers (a line shown, an option) reach the server before the close.
    let _ = conn.flush().await;
    print_quest_log(conn);
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(template: u16, x: f32, z: f32) -> Seen {
        Seen {
            template,
            name: "npc".into(),
            x,
            z,
        }
    }

    #[test]
    fn the_nearest_actor_of_the_template_is_chosen() {
        let actors = HashMap::from([
            (5, seen(9, 10.0, 0.0)),
            (6, seen(9, -3.0, 4.0)),
            (7, seen(3, 1.0, 0.0)),
            (8, seen(9, 3.0, 4.0)),
        ]);
        // 6 and 8 are both 5 away: the lower RuntimeID.
        assert_eq!(nearest(&actors, 9, (0.0, 0.0)), Some(6));
        assert_eq!(nearest(&actors, 3, (0.0, 0.0)), Some(7));
        assert_eq!(nearest(&actors, 4, (0.0, 0.0)), None);
    }

    #[test]
    fn steps_stay_under_the_speed_check_and_stop_within_reach() {
        let mut at = (0.0f32, 0.0f32);
        let to = (30.0, 40.0);
        let mut steps = 0;
        while let Some(next) = step_towards(at, to, TALK_REACH, WALK_STEP) {
            assert!(dist(at, next) <= WALK_STEP + 1e-4);
            at = next;
            steps += 1;
            assert!(steps < 100);
        }
        assert!(dist(at, to) <= TALK_REACH);
        assert!(dist(at, to) > TALK_REACH - WALK_STEP);
        assert_eq!(
            step_towards((0.0, 0.0), (1.0, 1.0), TALK_REACH, WALK_STEP),
            None
        );
        assert_eq!(
            step_towards((0.0, 0.0), (f32::NAN, 1.0), TALK_REACH, WALK_STEP),
            None
        );
    }

    #[test]
    fn typed_choices_must_be_offered() {
        assert_eq!(parse_choice(" 2\n", 2), Ok(2));
        assert!(parse_choice("3", 2).is_err());
        assert!(parse_choice("0", 2).is_err());
        assert!(parse_choice("yes", 2).is_err());
    }

    #[test]
    fn the_quest_log_prints_a_count_and_each_status() {
        assert_eq!(quest_log_lines(&[]), vec!["quest log: empty"]);
        let q = Quest {
            name: "Goblin Trouble".into(),
            status: b"\xff\xff\xffKill 2 Goblin Raiders".to_vec(),
        };
        assert_eq!(
            quest_log_lines(&[q]),
            vec![
                "quest log: 1 quest",
                "  Goblin Trouble: Kill 2 Goblin Raiders"
            ]
        );
    }
}
