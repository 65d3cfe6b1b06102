//! `rcscript`: check and try a game's `.rsl` scripts without starting a server.
//!
//! * [`check`] compiles a Scripts folder, or one script with the scripts beside it (so its
//!   `Using "X.rcm"` resolves), and prints every diagnostic as one `file:line:col: message`
//!   line on stdout.
//! * [`run`] runs one function of a script in a headless zone of a world, with a fresh test
//!   player ("Tester") as `Actor()`, on game time (33 ms ticks, no real sleeping), and
//!   prints the chat lines the player receives on stdout, one per line; errors and script
//!   logs go to stderr.
//!
//! Both return a [`Status`], the process's exit code: 0 fine, 1 the scripts failed (a
//! compile error, a runtime error, the time limit), 2 the tool could not do its work (an
//! unreadable path, a script that does not compile for `run`, a missing function).
//!
//! Nothing here panics on input: unreadable, binary or huge files become messages.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Read as _, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use script::RStr;
use script::bytecode::ScriptSet;
use script::compile::{self, SourceFile};
use script::{Diagnostic, Severity};
use shared::content::World;
use shared::proto::{ChatMessageS2C, Packet as _};

use crate::script_store::MemoryStore;
use crate::sim::events::{Arrival, PlayerKey, ScriptErrorKind, TransferId, ZoneInput, ZoneOutput};
use crate::sim::instances::{Handle, InstanceId, StartRequest, Wait};
use crate::sim::scripts::ScriptHooks;
use crate::sim::state::{ActorId, ZoneState};
use crate::sim::{ZoneConfig, ZoneContent, ZoneSim, script_table};

/// Game time of one tick (ms), as on a zone node.
pub const TICK_MS: u64 = 33;

/// The default time limit of `run` (seconds of game time).
pub const DEFAULT_MAX_SECONDS: f64 = 60.0;

/// The largest time limit `run` accepts (seconds of game time: one day).
pub const MAX_MAX_SECONDS: f64 = 86_400.0;

/// The largest script file read (bytes); larger files are refused, not loaded.
pub const MAX_SCRIPT_BYTES: u64 = 16 * 1024 * 1024;

/// The name of `run`'s test player.
pub const TEST_PLAYER: &str = "Tester";

/// Game time at the first tick of a run (ms).
const START_MS: u64 = 1000;

/// How a command ended: the process's exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// 0: no error (warnings allowed); the script ended normally.
    Ok,
    /// 1: a compile error (`check`), a runtime error or the time limit (`run`).
    Failed,
    /// 2: the tool could not do its work: an unreadable path or world, a script that does
    /// not compile or a function that does not exist (`run`), a bad argument.
    Unusable,
}

impl Status {
    /// The exit code.
    pub fn code(self) -> u8 {
        match self {
            Self::Ok => 0,
            Self::Failed => 1,
            Self::Unusable => 2,
        }
    }
}

/// `--max-seconds`: a positive, finite number of seconds, at most [`MAX_MAX_SECONDS`].
pub fn parse_max_seconds(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    valid_max_seconds(v)
}

/// A time limit in seconds, checked: positive, finite, at most [`MAX_MAX_SECONDS`].
fn valid_max_seconds(v: f64) -> Result<f64, String> {
    if !v.is_finite() || v <= 0.0 {
        return Err(format!("{v} is not a positive number of seconds"));
    }
    if v > MAX_MAX_SECONDS {
        return Err(format!(
            "{v} is more than {MAX_MAX_SECONDS} seconds (one day of game time)"
        ));
    }
    Ok(v)
}

// ----- reading scripts -------------------------------------------------------------------

/// Why a script file could not be read.
#[derive(Debug)]
enum ReadError {
    Io(io::Error),
    Directory,
    TooLarge,
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Io(e) => write!(f, "{e}"),
            Self::Directory => f.write_str("is a directory"),
            Self::TooLarge => write!(
                f,
                "too large for a script (more than {} MiB)",
                MAX_SCRIPT_BYTES >> 20
            ),
        }
    }
}

/// A file's bytes, at most [`MAX_SCRIPT_BYTES`] of them.
fn read_capped(path: &Path) -> Result<Vec<u8>, ReadError> {
    let f = std::fs::File::open(path).map_err(ReadError::Io)?;
    let meta = f.metadata().map_err(ReadError::Io)?;
    if meta.is_dir() {
        return Err(ReadError::Directory);
    }
    if meta.len() > MAX_SCRIPT_BYTES {
        return Err(ReadError::TooLarge);
    }
    let mut bytes = Vec::new();
    f.take(MAX_SCRIPT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > MAX_SCRIPT_BYTES {
        return Err(ReadError::TooLarge);
    }
    Ok(bytes)
}

/// A script's name: its file name without the extension (`Death` for `Death.rsl`).
fn script_name(path: &Path) -> Option<String> {
    let stem = path.file_stem()?.to_string_lossy().into_owned();
    (!stem.is_empty()).then_some(stem)
}

/// Whether a path names a `.rsl` file (case-insensitive).
fn is_rsl(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.to_string_lossy().eq_ignore_ascii_case("rsl"))
}

/// The `.rsl` files of a folder, sorted by name, with a diagnostic for each that cannot be
/// read. `Err` when the folder itself cannot be listed.
fn read_folder(dir: &Path) -> io::Result<(Vec<SourceFile>, Vec<Diagnostic>)> {
    let mut paths = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let p = entry?.path();
        if is_rsl(&p) && !p.is_dir() {
            paths.push(p);
        }
    }
    paths.sort();
    let mut files = Vec::new();
    let mut problems = Vec::new();
    for p in paths {
        let Some(name) = script_name(&p) else {
            continue;
        };
        match read_capped(&p) {
            Ok(bytes) => files.push(SourceFile::new(name, bytes)),
            Err(e) => problems.push(Diagnostic::error(
                &format!("{name}.rsl"),
                script::ast::Span::new(1, 1),
                format!("cannot read {}: {e}", p.display()),
            )),
        }
    }
    Ok((files, problems))
}

/// The folder a file is in (`.` for a bare file name).
fn folder_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Scripts by lower-case name: a later insert replaces an earlier one of the same name.
#[derive(Default)]
struct ScriptMap(BTreeMap<String, SourceFile>);

impl ScriptMap {
    fn insert(&mut self, f: SourceFile) {
        self.0.insert(f.name.to_ascii_lowercase(), f);
    }

    fn files(self) -> Vec<SourceFile> {
        self.0.into_values().collect()
    }
}

/// The `.rsl` files beside `file` (not `file` itself), and a note for each that could not
/// be read.
fn beside(file: &Path, name: &str) -> (Vec<SourceFile>, Vec<String>) {
    let dir = folder_of(file);
    match read_folder(&dir) {
        Ok((files, problems)) => {
            let files = files
                .into_iter()
                .filter(|f| !f.name.eq_ignore_ascii_case(name))
                .collect();
            let notes = problems
                .into_iter()
                .filter(|d| !d.file.eq_ignore_ascii_case(&format!("{name}.rsl")))
                .map(|d| format!("note: skipped a script beside it: {}", d.message))
                .collect();
            (files, notes)
        }
        Err(e) => (
            Vec::new(),
            vec![format!(
                "note: cannot list {} for the scripts beside it: {e}",
                dir.display()
            )],
        ),
    }
}

/// The files whose diagnostics concern script `name`: its own, those of the modules it
/// uses (directly or not), and the world's `RC_Core.rsl`, which every script uses.
fn concerned_files(set: &ScriptSet, name: &str) -> BTreeSet<String> {
    let mut files = BTreeSet::new();
    files.insert(format!("{name}.rsl"));
    if let Some((_, m)) = set.module(name) {
        files.insert(m.file.clone());
        for &id in &m.closure {
            if let Some(u) = set.modules.get(usize::from(id)) {
                files.insert(u.file.clone());
            }
        }
    }
    if let Some((_, core)) = set.module(compile::RC_CORE) {
        files.insert(core.file.clone());
    }
    files
}

/// A diagnostic or message as exactly one line.
fn one_line(s: &str) -> String {
    s.replace('\r', "\\r").replace('\n', "\\n")
}

// ----- check -------------------------------------------------------------------------------

/// `rcscript check PATH`: compile a Scripts folder, or one script together with the `.rsl`
/// files beside it, and print the diagnostics (of the folder; of the script and the modules
/// it uses) on `out`, one line each. [`Status::Failed`] if any is an error;
/// [`Status::Unusable`] (with one line on `err`) if `path` cannot be read.
pub fn check(path: &Path, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<Status> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => {
            writeln!(err, "rcscript: cannot read {}: {e}", path.display())?;
            return Ok(Status::Unusable);
        }
    };
    let diags = if meta.is_dir() {
        let (files, mut diags) = match read_folder(path) {
            Ok(x) => x,
            Err(e) => {
                writeln!(err, "rcscript: cannot read {}: {e}", path.display())?;
                return Ok(Status::Unusable);
            }
        };
        if files.is_empty() && diags.is_empty() {
            writeln!(err, "rcscript: note: no .rsl scripts in {}", path.display())?;
        }
        diags.extend(compile::compile(&files).diagnostics);
        diags
    } else {
        let Some(name) = script_name(path) else {
            writeln!(
                err,
                "rcscript: cannot read {}: not a script file name",
                path.display()
            )?;
            return Ok(Status::Unusable);
        };
        let bytes = match read_capped(path) {
            Ok(b) => b,
            Err(e) => {
                writeln!(err, "rcscript: cannot read {}: {e}", path.display())?;
                return Ok(Status::Unusable);
            }
        };
        let (others, notes) = beside(path, &name);
        for n in notes {
            writeln!(err, "rcscript: {}", one_line(&n))?;
        }
        let mut scripts = ScriptMap::default();
        for f in others {
            scripts.insert(f);
        }
        scripts.insert(SourceFile::new(name.clone(), bytes));
        let c = compile::compile(&scripts.files());
        let concerned = concerned_files(&c.set, &name);
        c.diagnostics
            .into_iter()
            .filter(|d| concerned.contains(&d.file))
            .collect()
    };
    let mut diags = diags;
    diags.sort();
    diags.dedup();
    for d in &diags {
        writeln!(out, "{}", one_line(&d.to_string()))?;
    }
    let failed = diags.iter().any(|d| d.severity == Severity::Error);
    Ok(if failed { Status::Failed } else { Status::Ok })
}

// ----- run ---------------------------------------------------------------------------------

/// What `rcscript run` runs.
#[derive(Clone, Debug, PartialEq)]
pub struct RunOptions {
    /// The script file.
    pub file: PathBuf,
    /// The function to run (`Main`).
    pub function: String,
    /// The world (a `Server Data` folder or a native world); `None`: the demo world.
    pub world: Option<PathBuf>,
    /// The time limit, in seconds of game time (see [`parse_max_seconds`]).
    pub max_seconds: f64,
    /// The script's `Param` (`Parameter(n)` reads its comma-separated parts).
    pub param: String,
}

impl RunOptions {
    /// Run `Main` of `file` in the demo world, with the default time limit.
    pub fn new(file: impl Into<PathBuf>) -> Self {
        Self {
            file: file.into(),
            function: "Main".into(),
            world: None,
            max_seconds: DEFAULT_MAX_SECONDS,
            param: String::new(),
        }
    }
}

/// The engine's entry points as on a server ([`ScriptHooks`]' defaults, the world's
/// scripts), except those a login runs (`Login.Main` and the area's Entry script):
/// `rcscript run`'s test player logs in, but the output must be the script's own.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunHooks;

impl ScriptHooks for RunHooks {
    /// Not run: the test player's login is not the script's business.
    fn on_login(&self, _st: &mut ZoneState, _actor: ActorId) {}

    /// Not run: the test player's arrival is not the script's business.
    fn on_area_entry(&self, _st: &mut ZoneState, _actor: ActorId) {}
}

/// `rcscript run`: run `opts.function` of `opts.file` with a test player as `Actor()` in a
/// headless zone of the world, on game time, until it (and every script it started for the
/// player) ends or the time limit passes. The player's chat lines go to `out`, one per line,
/// as bytes; errors and script logs to `err`, one line each.
pub fn run(opts: &RunOptions, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<Status> {
    let max_ms = match valid_max_seconds(opts.max_seconds) {
        Ok(s) => (s * 1000.0).ceil() as u64,
        Err(e) => {
            writeln!(err, "rcscript: --max-seconds: {e}")?;
            return Ok(Status::Unusable);
        }
    };
    let function = opts.function.trim();
    if function.is_empty() {
        writeln!(err, "rcscript: --function: the function name is empty")?;
        return Ok(Status::Unusable);
    }
    // The script.
    let path = &opts.file;
    let Some(name) = script_name(path) else {
        writeln!(
            err,
            "rcscript: cannot read {}: not a script file name",
            path.display()
        )?;
        return Ok(Status::Unusable);
    };
    let bytes = match read_capped(path) {
        Ok(b) => b,
        Err(e) => {
            writeln!(err, "rcscript: cannot read {}: {e}", path.display())?;
            return Ok(Status::Unusable);
        }
    };
    // The world.
    let world = match shared::content::fs::load_or_demo(opts.world.as_deref()) {
        Ok((w, _warnings)) => w,
        Err(e) => {
            let at = opts
                .world
                .as_ref()
                .map_or_else(|| "the demo world".to_owned(), |p| p.display().to_string());
            writeln!(
                err,
                "rcscript: cannot load the world at {at}: {}",
                one_line(&e.to_string())
            )?;
            return Ok(Status::Unusable);
        }
    };
    // The scripts: the world's, those beside the file, the file.
    let mut scripts = ScriptMap::default();
    for s in &world.scripts {
        scripts.insert(SourceFile::new(s.name.clone(), s.bytes.clone()));
    }
    let (others, notes) = beside(path, &name);
    for n in notes {
        writeln!(err, "rcscript: {}", one_line(&n))?;
    }
    for f in others {
        scripts.insert(f);
    }
    scripts.insert(SourceFile::new(name.clone(), bytes));
    let compiled = compile::compile(&scripts.files());
    let concerned = concerned_files(&compiled.set, &name);
    for d in compiled
        .diagnostics
        .iter()
        .filter(|d| concerned.contains(&d.file))
    {
        writeln!(err, "{}", one_line(&d.to_string()))?;
    }
    let set = compiled.set;
    let runnable = set.module(&name).is_some_and(|(_, m)| m.ok);
    if !runnable {
        writeln!(err, "rcscript: {name}.rsl does not compile")?;
        return Ok(Status::Unusable);
    }
    if set.entry(&name, function).is_none() {
        writeln!(
            err,
            "rcscript: {name}.rsl has no function {function} ({})",
            functions_of(&set, &name)
        )?;
        return Ok(Status::Unusable);
    }
    let mut zone = match Zone::new(world, set) {
        Ok(z) => z,
        Err(e) => {
            writeln!(err, "rcscript: {e}")?;
            return Ok(Status::Unusable);
        }
    };
    zone.run(&name, function, &opts.param, max_ms, out, err)
}

/// The functions of a script, for a message: `its functions: A, B` or `it has no functions`.
fn functions_of(set: &ScriptSet, name: &str) -> String {
    let mut names: Vec<&str> = set
        .module(name)
        .into_iter()
        .flat_map(|(_, m)| m.funcs.values())
        .filter_map(|&f| set.func(f))
        .map(|f| f.name.as_str())
        .collect();
    names.sort_unstable_by_key(|n| n.to_ascii_lowercase());
    if names.is_empty() {
        "it has no functions".to_owned()
    } else {
        format!("its functions: {}", names.join(", "))
    }
}

/// The time limit's `--max-seconds` as written back (`2`, `0.5`).
fn seconds(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format!("{}", ms / 1000)
    } else {
        format!("{}", ms as f64 / 1000.0)
    }
}

/// A headless zone with the test player in it.
struct Zone {
    sim: ZoneSim,
    store: MemoryStore,
    pending: Vec<ZoneInput>,
    now: u64,
    player: PlayerKey,
    /// The player's actor, once joined.
    actor: Option<ActorId>,
    /// The player's script handle, once joined.
    handle: Handle,
    /// Whether chat lines are printed yet (not those of the login).
    printing: bool,
    /// Whether a script of the player failed.
    failed: bool,
}

impl Zone {
    /// The zone of the test player's start area, the player not yet in it.
    fn new(world: World, set: ScriptSet) -> Result<Self, String> {
        let template = world
            .first_playable()
            .or_else(|| world.actors.first())
            .cloned()
            .ok_or("the world has no actor template for the test player")?;
        let area = world
            .area_by_name(&template.start_area)
            .or_else(|| world.areas.first())
            .map(|a| a.name.clone())
            .ok_or("the world has no area")?;
        let (npc_handle_base, npc_handle_span) =
            crate::world_scripts::npc_handles(&world, &area, 0);
        let world = Arc::new(world);
        let mut content = ZoneContent::from_world(world.clone(), &area)
            .ok_or_else(|| format!("the world has no area {area:?}"))?;
        content.scripts = Arc::new(set);
        let epoch_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(0));
        let cfg = ZoneConfig {
            npc_handle_base,
            npc_handle_span,
            epoch_ms,
            ..ZoneConfig::default()
        };
        let first_rid = cfg.rids.player_lo.max(1);
        let sim = ZoneSim::with_hooks(cfg, Arc::new(content), Arc::new(RunHooks));
        // A fresh character of the template at its start portal.
        let props = sim
            .state()
            .content
            .template(template.id)
            .cloned()
            .unwrap_or_default();
        let mut state = crate::sim::state::Actor::from_template(&props).to_state(&area, 0);
        state.name = TEST_PLAYER.into();
        state.gold = world.misc.start_gold;
        state.reputation = world.misc.start_reputation;
        state.home_faction = template.home_faction;
        state.ratings = (0..=99u8)
            .map(|o| world.factions.default_rating(template.home_faction, o))
            .collect();
        let player = PlayerKey(1);
        let portal = if area.eq_ignore_ascii_case(&template.start_area) {
            template.start_portal.clone()
        } else {
            String::new()
        };
        Ok(Self {
            sim,
            store: MemoryStore::new(),
            pending: vec![ZoneInput::PlayerJoined {
                player,
                rid: first_rid,
                is_dm: false,
                state: Box::new(state),
                arrival: Arrival::PortalNamed(portal),
            }],
            now: START_MS,
            player,
            actor: None,
            handle: 0,
            printing: false,
            failed: false,
        })
    }

    /// Join the player, run the function and tick until it ends or `max_ms` pass.
    fn run(
        &mut self,
        script: &str,
        func: &str,
        param: &str,
        max_ms: u64,
        out: &mut dyn Write,
        err: &mut dyn Write,
    ) -> io::Result<Status> {
        // The join tick.
        self.tick(out, err)?;
        let st = self.sim.state();
        let Some(actor) = st.by_player(self.player) else {
            writeln!(err, "rcscript: the test player could not join the zone")?;
            return Ok(Status::Unusable);
        };
        self.actor = Some(actor);
        self.handle = st.handle_of(actor);
        self.printing = true;
        let main = script_table::create(
            self.sim.state_mut(),
            StartRequest {
                script: script.to_owned(),
                func: func.to_owned(),
                actor: self.handle,
                context: 0,
                param: RStr::from_vec(param.as_bytes().to_vec()),
            },
        );
        let start = self.now;
        let mut timed_out = false;
        loop {
            self.tick(out, err)?;
            if !self.busy(main) {
                break;
            }
            if self.now.saturating_sub(start) > max_ms {
                timed_out = true;
                break;
            }
        }
        if timed_out {
            let waits = self.waits(main);
            writeln!(
                err,
                "rcscript: time limit: {} s of game time passed and {waits}",
                seconds(max_ms)
            )?;
            return Ok(Status::Failed);
        }
        // Zone-wide lines to the player go out with its next broadcast.
        let most = self.sim.state().cfg.broadcast_ms / TICK_MS + 3;
        for _ in 0..most {
            if !self.outbox_pending() {
                break;
            }
            self.tick(out, err)?;
        }
        Ok(if self.failed {
            Status::Failed
        } else {
            Status::Ok
        })
    }

    /// Whether the run's instance, or any script instance or start naming the player, is
    /// still there.
    fn busy(&self, main: Option<InstanceId>) -> bool {
        let s = &self.sim.state().scripts;
        let h = self.handle;
        main.is_some_and(|id| s.instances.contains_key(&id))
            || (h != 0 && s.by_handle.get(&h).is_some_and(|ids| !ids.is_empty()))
            || (h != 0 && s.queue.iter().any(|q| q.actor == h || q.context == h))
    }

    /// What the scripts still running for the player wait for, in one phrase.
    fn waits(&self, main: Option<InstanceId>) -> String {
        let st = self.sim.state();
        let set = script_table::set(st);
        let s = &st.scripts;
        let h = self.handle;
        let mut ids: Vec<InstanceId> = main
            .into_iter()
            .filter(|id| s.instances.contains_key(id))
            .collect();
        for id in s.by_handle.get(&h).into_iter().flatten() {
            if !ids.contains(id) {
                ids.push(*id);
            }
        }
        let parts: Vec<String> = ids
            .iter()
            .filter_map(|id| s.instances.get(id))
            .map(|i| {
                let who = format!("{}.{}", i.cx.script, i.cx.func);
                // Where it waits when that is a function it called (the world's own
                // `RC_Core.rsl`'s `DOEVENTS`, say).
                let inner =
                    i.vm.function(&set)
                        .filter(|f| !f.eq_ignore_ascii_case(&i.cx.func))
                        .map(|f| {
                            let (file, line) = i.vm.location(&set);
                            format!(" in {f} ({file}:{line})")
                        })
                        .unwrap_or_default();
                match &i.wait {
                    Wait::Ready => format!("{who} is still running{inner}"),
                    w => format!("{who} still waits for {}{inner}", w.name()),
                }
            })
            .collect();
        if parts.is_empty() {
            "the script has not ended".to_owned()
        } else {
            one_line(&parts.join("; "))
        }
    }

    /// Whether frames wait in the player's outbox.
    fn outbox_pending(&self) -> bool {
        let st = self.sim.state();
        self.actor
            .and_then(|id| st.get(id))
            .and_then(|a| a.player_data.as_ref())
            .is_some_and(|pd| !pd.outbox.is_empty())
    }

    /// One tick at the current time, its outputs handled; then time moves on.
    fn tick(&mut self, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<()> {
        let inputs = std::mem::take(&mut self.pending);
        let outputs = self.sim.tick(self.now, inputs).outputs.clone();
        self.now += TICK_MS;
        let nacks = self.handle_outputs(&outputs, out, err)?;
        if !nacks.is_empty() {
            // Only this area runs here: a transfer elsewhere is refused at once, and the
            // actor (and a script waiting for its warp) carries on here.
            let (o, _) = self.sim.handoff(nacks);
            let outputs = o.outputs.clone();
            self.handle_outputs(&outputs, out, err)?;
        }
        Ok(())
    }

    /// Print chat lines and script messages, answer the script store (at the next tick) and
    /// collect the refusals of transfers to other areas.
    fn handle_outputs(
        &mut self,
        outputs: &[ZoneOutput],
        out: &mut dyn Write,
        err: &mut dyn Write,
    ) -> io::Result<Vec<ZoneInput>> {
        let mut nacks = Vec::new();
        for o in outputs {
            match o {
                ZoneOutput::Reliable { player, bytes }
                    if *player == self.player && self.printing =>
                {
                    for line in chat_lines(bytes) {
                        out.write_all(&line)?;
                        out.write_all(b"\n")?;
                    }
                }
                ZoneOutput::ScriptError {
                    script,
                    func,
                    actor,
                    file,
                    line,
                    message,
                    kind,
                } => {
                    let mine = self.handle != 0 && *actor == self.handle;
                    let at = if file.is_empty() {
                        format!("{script}.{func}")
                    } else if *line == 0 {
                        file.clone()
                    } else {
                        format!("{file}:{line}")
                    };
                    let what = match kind {
                        ScriptErrorKind::Restore => "[restore] ",
                        ScriptErrorKind::Runtime | ScriptErrorKind::Runaway => "",
                    };
                    let text = if mine {
                        self.failed = true;
                        format!("{at}: {what}{message}")
                    } else {
                        format!("[other script] {at}: {what}{message}")
                    };
                    writeln!(err, "{}", one_line(&text))?;
                }
                ZoneOutput::ScriptLog { script, message } => {
                    writeln!(err, "[log] {}", one_line(&format!("{script}: {message}")))?;
                }
                ZoneOutput::ScriptStore { req, op } => {
                    let (result, change) = self.store.answer(op);
                    if *req != 0 {
                        self.pending
                            .push(ZoneInput::ScriptStoreReply { req: *req, result });
                    }
                    if let Some(c) = change {
                        self.pending.push(ZoneInput::SuperGlobal {
                            slot: c.slot,
                            value: c.value,
                        });
                    }
                }
                ZoneOutput::TransferOut(t) => {
                    let here = self.sim.state().content.area.name.clone();
                    let reason = format!(
                        "rcscript runs area {here} only; {} (instance {}) is not loaded",
                        t.area, t.instance
                    );
                    writeln!(
                        err,
                        "[log] {}",
                        one_line(&format!("transfer refused: {reason}"))
                    )?;
                    nacks.push(transfer_nack(t.transfer_id, reason));
                }
                ZoneOutput::Account { player, action } if *player == self.player => {
                    writeln!(
                        err,
                        "[log] the test player's account: {action:?} (ignored here)"
                    )?;
                }
                _ => {}
            }
        }
        Ok(nacks)
    }
}

fn transfer_nack(transfer_id: TransferId, reason: String) -> ZoneInput {
    ZoneInput::TransferNack {
        transfer_id,
        reason,
    }
}

/// The texts of the `P_ChatMessage` frames in a player's reliable bytes (colour stripped),
/// in order. Malformed framing ends the scan (it never panics).
fn chat_lines(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut lines = Vec::new();
    let mut rest = bytes;
    while let Some((len, tail)) = rest.split_first_chunk::<2>() {
        let len = usize::from(u16::from_le_bytes(*len));
        let Some(frame) = tail.get(..len) else { break };
        let Some((&ptype, payload)) = frame.split_first() else {
            break;
        };
        if ptype == ChatMessageS2C::ID
            && let Ok(m) = ChatMessageS2C::decode_payload(payload, &Default::default())
        {
            lines.push(m.text.0);
        }
        rest = tail.get(len..).unwrap_or_default();
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(t: u8, payload: &[u8]) -> Vec<u8> {
        let mut v = u16::try_from(payload.len() + 1)
            .unwrap()
            .to_le_bytes()
            .to_vec();
        v.push(t);
        v.extend_from_slice(payload);
        v
    }

    #[test]
    fn chat_lines_are_decoded_in_order_and_bad_framing_stops_the_scan() {
        let mut b = frame(ChatMessageS2C::ID, b"\xfeHello");
        b.extend(frame(30, b"anim"));
        b.extend(frame(ChatMessageS2C::ID, b"\xfa\x01\x02\x03Bye \xe9"));
        assert_eq!(chat_lines(&b), [b"Hello".to_vec(), b"Bye \xe9".to_vec()]);
        b.extend([200, 0, 1]);
        assert_eq!(chat_lines(&b).len(), 2);
        assert!(chat_lines(&[0]).is_empty());
        assert!(chat_lines(&[0, 0, 0]).is_empty());
    }

    #[test]
    fn max_seconds_must_be_a_positive_number() {
        assert_eq!(parse_max_seconds("2"), Ok(2.0));
        assert_eq!(parse_max_seconds("0.5"), Ok(0.5));
        for bad in ["0", "-1", "abc", "", "NaN", "inf", "1e9"] {
            assert!(parse_max_seconds(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_demo_world_runs_its_level_up_script() {
        let dir = std::env::temp_dir().join(format!("rcscript-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("Hello.rsl");
        std::fs::write(&f, "Function Main()\r\n  Output(Actor(), \"Hi \" + Name(Actor()))\r\n  GiveXP(Actor(), 1500)\r\nEnd Function\r\n").unwrap();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let status = run(&RunOptions::new(&f), &mut out, &mut err).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let err = String::from_utf8_lossy(&err);
        assert_eq!(status, Status::Ok, "{err}");
        assert_eq!(
            String::from_utf8_lossy(&out),
            "Hi Tester\nYou advanced to level 2!\n",
            "{err}"
        );
    }
}
