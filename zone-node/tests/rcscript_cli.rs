//! The `rcscript` binary end to end: `check` on the sample scripts and on broken ones,
//! `run` of small scripts (chat lines on stdout, game time, runtime errors, runaway loops,
//! the time limit, `--function`), exit codes, and input that must never panic it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_rcscript");
const SAMPLES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../shared/rc-sample-data/Scripts"
);

/// A fresh, empty folder of its own under the system's temp dir (removed on drop).
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("rcscript-cli-{}-{tag}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Self(p)
    }

    /// Write a file (bytes as given) and return its path.
    fn write(&self, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn rcscript(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn rcscript_at(args: &[&Path], extra: &[&str]) -> Output {
    let mut c = Command::new(BIN);
    c.args(args).args(extra);
    c.output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The exit code, after checking the process did not panic or die of a signal.
fn code(o: &Output) -> i32 {
    let err = stderr(o);
    assert!(!err.contains("panicked"), "rcscript panicked:\n{err}");
    o.status
        .code()
        .unwrap_or_else(|| panic!("rcscript killed by a signal:\n{err}"))
}

fn lines(o: &Output) -> Vec<String> {
    stdout(o).lines().map(str::to_owned).collect()
}

fn samples() -> Option<PathBuf> {
    let p = PathBuf::from(SAMPLES);
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!("skipped: the sample scripts are not at {}", p.display());
        None
    }
}

/// Whether a line is one `file:line:col: message` diagnostic.
fn is_diagnostic(line: &str, file: &str) -> bool {
    let Some(rest) = line.strip_prefix(&format!("{file}:")) else {
        return false;
    };
    let mut parts = rest.splitn(3, ':');
    let (Some(l), Some(c), Some(msg)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    l.parse::<u32>().is_ok() && c.parse::<u32>().is_ok() && msg.starts_with(' ') && msg.len() > 1
}

// ----- check -----------------------------------------------------------------------------

#[test]
fn check_passes_on_the_sample_folder() {
    let Some(dir) = samples() else { return };
    let o = rcscript_at(&[Path::new("check"), &dir], &[]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    for l in lines(&o) {
        assert!(l.contains(": warning: "), "only warnings: {l}");
    }
}

#[test]
fn check_passes_on_each_sample_file() {
    let Some(dir) = samples() else { return };
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x.eq_ignore_ascii_case("rsl")) {
            let o = rcscript_at(&[Path::new("check"), &p], &[]);
            assert_eq!(code(&o), 0, "{}: {}{}", p.display(), stdout(&o), stderr(&o));
            n += 1;
        }
    }
    assert!(n > 10, "the sample folder has its scripts ({n})");
}

#[test]
fn check_reports_an_unknown_function_with_file_line_and_column() {
    let t = TempDir::new("unknown");
    let f = t.write(
        "Quest.rsl",
        "Function Main()\r\n  Output(Actor(), \"hi\")\r\n  Frobnicate(1)\r\nEnd Function\r\n",
    );
    let o = rcscript_at(&[Path::new("check"), &f], &[]);
    assert_eq!(code(&o), 1);
    let l = lines(&o);
    assert_eq!(l.len(), 1, "{l:?}");
    assert!(is_diagnostic(&l[0], "Quest.rsl"), "{l:?}");
    assert!(l[0].starts_with("Quest.rsl:3:3: "), "{l:?}");
    assert!(l[0].contains("Frobnicate"), "{l:?}");
}

#[test]
fn check_reports_a_wrong_argument_count() {
    let t = TempDir::new("args");
    let f = t.write(
        "Args.rsl",
        "Function Main()\n  Add(1)\n  Output(Actor())\nEnd Function\nFunction Add(a, b)\n  Return a + b\nEnd Function\n",
    );
    let o = rcscript_at(&[Path::new("check"), &f], &[]);
    assert_eq!(code(&o), 1);
    let l = lines(&o);
    assert!(l.iter().all(|l| is_diagnostic(l, "Args.rsl")), "{l:?}");
    assert!(
        l.iter()
            .any(|l| l.starts_with("Args.rsl:2:3: ") && l.contains("argument")),
        "{l:?}"
    );
    assert!(
        l.iter().any(|l| l.starts_with("Args.rsl:3:")),
        "Output needs its text: {l:?}"
    );
}

#[test]
fn check_reports_a_type_mismatch() {
    let t = TempDir::new("types");
    let f = t.write(
        "Types.rsl",
        "Function Main()\n  Count = 1\n  Count$ = \"one\"\nEnd Function\n",
    );
    let o = rcscript_at(&[Path::new("check"), &f], &[]);
    assert_eq!(code(&o), 1);
    let l = lines(&o);
    assert_eq!(l.len(), 1, "{l:?}");
    assert!(l[0].starts_with("Types.rsl:3:3: "), "{l:?}");
    assert!(l[0].contains("mismatch"), "{l:?}");
}

#[test]
fn check_of_a_folder_reports_every_file_and_warnings_do_not_fail() {
    let t = TempDir::new("folder");
    t.write(
        "Good.rsl",
        "Function Main()\n  Output(Actor(), \"ok\")\nEnd Function\n",
    );
    t.write("Warn.rsl", "Function Main()\n  x = 1 / 0\nEnd Function\n");
    let o = rcscript_at(&[Path::new("check"), &t.0], &[]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    let l = lines(&o);
    assert_eq!(l.len(), 1, "{l:?}");
    assert!(l[0].starts_with("Warn.rsl:2:7: warning: "), "{l:?}");
    t.write("Bad.rsl", "Function Main()\n  Nope()\nEnd Function\n");
    let o = rcscript_at(&[Path::new("check"), &t.0], &[]);
    assert_eq!(code(&o), 1);
    let l = lines(&o);
    assert_eq!(l.len(), 2, "{l:?}");
    assert!(l[0].starts_with("Bad.rsl:2:3: "), "{l:?}");
    assert!(l[1].starts_with("Warn.rsl:2:7: warning: "), "{l:?}");
}

#[test]
fn check_of_one_file_resolves_its_using_beside_it_and_reports_that_modules_errors() {
    let t = TempDir::new("using");
    let main = t.write(
        "Main.rsl",
        "Using \"Helpers.rcm\"\nFunction Main()\n  Greet(Actor())\nEnd Function\n",
    );
    t.write(
        "Helpers.rsl",
        "Function Greet(A)\n  Output(A, \"hello\")\nEnd Function\n",
    );
    // An unrelated broken script beside it is not this file's business.
    t.write("Other.rsl", "Function Main(\n");
    let o = rcscript_at(&[Path::new("check"), &main], &[]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    // A broken module it uses fails it, with the module's own file and line.
    t.write(
        "Helpers.rsl",
        "Function Greet(A)\n  Outptu(A, \"hello\")\nEnd Function\n",
    );
    let o = rcscript_at(&[Path::new("check"), &main], &[]);
    assert_eq!(code(&o), 1);
    let l = lines(&o);
    assert_eq!(l.len(), 1, "{l:?}");
    assert!(l[0].starts_with("Helpers.rsl:2:3: "), "{l:?}");
    // A module that is not there.
    let lone = TempDir::new("using-missing");
    let f = lone.write(
        "Main.rsl",
        "Using \"Helpers.rcm\"\nFunction Main()\nEnd Function\n",
    );
    let o = rcscript_at(&[Path::new("check"), &f], &[]);
    assert_eq!(code(&o), 1);
    assert!(lines(&o)[0].starts_with("Main.rsl:1:"), "{}", stdout(&o));
}

#[test]
fn check_of_a_missing_path_exits_2_with_one_line() {
    let t = TempDir::new("missing");
    let o = rcscript_at(&[Path::new("check"), &t.0.join("Nope.rsl")], &[]);
    assert_eq!(code(&o), 2);
    assert!(stdout(&o).is_empty());
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("Nope.rsl"), "{}", stderr(&o));
}

/// Random bytes, a file too large for a script: messages, never a panic.
#[test]
fn check_and_run_survive_binary_and_huge_files() {
    let t = TempDir::new("binary");
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let junk: Vec<u8> = (0..20_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    let f = t.write("Junk.rsl", &junk);
    let o = rcscript_at(&[Path::new("check"), &f], &[]);
    assert_eq!(code(&o), 1);
    assert!(
        lines(&o).iter().all(|l| is_diagnostic(l, "Junk.rsl")),
        "{}",
        stdout(&o)
    );
    let o = rcscript_at(&[Path::new("run"), &f], &[]);
    assert_eq!(code(&o), 2);
    assert!(stdout(&o).is_empty());
    // Not named .rsl: still read as a script.
    let f = t.write("noise.bin", &junk);
    let o = rcscript_at(&[Path::new("run"), &f], &[]);
    assert_eq!(code(&o), 2);
    // Deep nesting.
    let deep = format!(
        "Function Main()\n  x = {}1{}\nEnd Function\n",
        "(".repeat(5000),
        ")".repeat(5000)
    );
    let f = t.write("Deep.rsl", deep);
    let o = rcscript_at(&[Path::new("check"), &f], &[]);
    assert_eq!(code(&o), 1);
    // Too large.
    let big = t.write("Big.rsl", vec![b' '; 17 * 1024 * 1024]);
    let o = rcscript_at(&[Path::new("check"), &big], &[]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("too large"), "{}", stderr(&o));
    let o = rcscript_at(&[Path::new("run"), &big], &[]);
    assert_eq!(code(&o), 2);
    // A folder where a file is expected.
    let o = rcscript_at(&[Path::new("run"), &t.0], &[]);
    assert_eq!(code(&o), 2);
}

// ----- run -------------------------------------------------------------------------------

#[test]
fn run_prints_the_output_lines_in_order_on_game_time() {
    let t = TempDir::new("loop");
    let f = t.write(
        "Loop.rsl",
        "Function Main()\n  T = MilliSecs()\n  For i = 1 To 3\n    Output(Actor(), \"line \" + i + \" for \" + Name(Actor()))\n    DoEvents(10000)\n  Next\n  Output(Actor(), \"waited \" + ((MilliSecs() - T) >= 30000))\n  ScriptLog(\"not on stdout\")\nEnd Function\n",
    );
    let started = Instant::now();
    let o = rcscript_at(&[Path::new("run"), &f], &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "30 s of game time take no real waiting"
    );
    assert_eq!(
        lines(&o),
        [
            "line 1 for Tester",
            "line 2 for Tester",
            "line 3 for Tester",
            "waited 1"
        ]
    );
    assert!(stderr(&o).contains("not on stdout"), "{}", stderr(&o));
}

#[test]
fn run_exits_1_on_a_runtime_error_with_file_and_line() {
    let t = TempDir::new("div");
    let f = t.write(
        "Bad.rsl",
        "Function Main()\n  Output(Actor(), \"before\")\n  x = 1 / Int(Parameter(1))\n  Output(Actor(), \"never\")\nEnd Function\n",
    );
    let o = rcscript_at(&[Path::new("run"), &f], &["--param", "0"]);
    assert_eq!(code(&o), 1);
    assert_eq!(lines(&o), ["before"]);
    let err = stderr(&o);
    assert!(
        err.lines().any(|l| l == "Bad.rsl:3: Division by zero"),
        "{err}"
    );
    let o = rcscript_at(&[Path::new("run"), &f], &["--param", "2"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(lines(&o), ["before", "never"]);
}

#[test]
fn run_ends_a_runaway_loop_and_exits_1() {
    let t = TempDir::new("spin");
    let f = t.write(
        "Spin.rsl",
        "Function Main()\n  Output(Actor(), \"spinning\")\n  Repeat\n    i = i + 1\n  Forever\nEnd Function\n",
    );
    let o = rcscript_at(&[Path::new("run"), &f], &[]);
    assert_eq!(code(&o), 1);
    assert_eq!(lines(&o), ["spinning"]);
    let err = stderr(&o);
    assert!(err.starts_with("Spin.rsl:"), "{err}");
    assert!(err.contains("budget"), "{err}");
    // With a shorter limit, the time limit comes first: also a failure.
    let o = rcscript_at(&[Path::new("run"), &f], &["--max-seconds", "1"]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("time limit"), "{}", stderr(&o));
}

#[test]
fn run_stops_at_the_time_limit_and_names_the_wait() {
    let t = TempDir::new("waitkill");
    let f = t.write(
        "Quest.rsl",
        "Function Main()\n  Output(Actor(), \"Kill a rat\")\n  WaitKill(Actor(), 2, 1)\n  Output(Actor(), \"Thanks\")\nEnd Function\n",
    );
    let o = rcscript_at(&[Path::new("run"), &f], &["--max-seconds", "2"]);
    assert_eq!(code(&o), 1);
    assert_eq!(lines(&o), ["Kill a rat"]);
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("time limit") && err.contains("WaitKill"),
        "{err}"
    );
}

#[test]
fn run_exits_2_when_the_script_does_not_parse() {
    let t = TempDir::new("parse");
    let f = t.write(
        "Broken.rsl",
        "Function Main(\n  Output(Actor(), \"hi\"\nEnd Function\n",
    );
    let o = rcscript_at(&[Path::new("run"), &f], &[]);
    assert_eq!(code(&o), 2);
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    assert!(
        stderr(&o).lines().any(|l| is_diagnostic(l, "Broken.rsl")),
        "{}",
        stderr(&o)
    );
}

#[test]
fn run_function_selects_another_function_and_a_missing_one_exits_2() {
    let t = TempDir::new("function");
    let f = t.write(
        "Two.rsl",
        "Function Main()\n  Output(Actor(), \"main\")\nEnd Function\nFunction Other()\n  Output(Actor(), \"other \" + Parameter(2))\nEnd Function\n",
    );
    let o = rcscript_at(
        &[Path::new("run"), &f],
        &["--function", "other", "--param", "a,b"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(lines(&o), ["other b"]);
    let o = rcscript_at(&[Path::new("run"), &f], &["--function", "Third"]);
    assert_eq!(code(&o), 2);
    assert!(stdout(&o).is_empty());
    assert!(stderr(&o).contains("Third"), "{}", stderr(&o));
}

#[test]
fn run_rejects_bad_arguments_with_exit_2() {
    let t = TempDir::new("args");
    let f = t.write("Ok.rsl", "Function Main()\nEnd Function\n");
    for bad in ["0", "-3", "abc", "NaN", "inf"] {
        let o = rcscript_at(&[Path::new("run"), &f], &["--max-seconds", bad]);
        assert_eq!(code(&o), 2, "{bad}");
        assert_eq!(stderr(&o).lines().count(), 1, "{bad}: {}", stderr(&o));
    }
    let o = rcscript_at(&[Path::new("run"), &t.0.join("Missing.rsl")], &[]);
    assert_eq!(code(&o), 2);
    let o = rcscript_at(&[Path::new("run"), &f], &["--world", "/no/such/world"]);
    assert_eq!(code(&o), 2);
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    let o = rcscript(&["frobnicate"]);
    assert_eq!(code(&o), 2);
    let o = rcscript(&["--help"]);
    assert_eq!(code(&o), 0);
    assert!(stdout(&o).contains("check") && stdout(&o).contains("run"));
}

/// The scripts of a run: the world's (its Death script runs when the player dies), those
/// beside the file (`Using`), script files through the in-memory store.
#[test]
fn run_uses_the_worlds_scripts_the_modules_beside_it_and_the_store() {
    let t = TempDir::new("world");
    t.write(
        "Helpers.rsl",
        "Function Shout(A, Text$)\n  Output(A, Upper(Text$))\nEnd Function\n",
    );
    let f = t.write(
        "Die.rsl",
        "Using \"Helpers.rcm\"\nFunction Main()\n  Shout(Actor(), \"dying\")\n  FH = WriteFile(\"notes.txt\")\n  WriteLine(FH, \"kept\")\n  CloseFile(FH)\n  FH = ReadFile(\"notes.txt\")\n  Output(Actor(), ReadLine(FH))\n  CloseFile(FH)\n  KillActor(Actor())\nEnd Function\n",
    );
    let o = rcscript_at(&[Path::new("run"), &f], &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let l = lines(&o);
    assert_eq!(l[..2], ["DYING", "kept"], "{l:?}");
    assert_eq!(l.len(), 3, "the demo world's Death script speaks: {l:?}");
    assert!(l[2].contains("died"), "{l:?}");
}

#[test]
fn the_sample_level_up_and_death_run_against_the_demo_world() {
    let Some(dir) = samples() else { return };
    let o = rcscript_at(&[Path::new("run"), &dir.join("LevelUp.rsl")], &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).is_empty(), "no XP, no level: {}", stdout(&o));
    let o = rcscript_at(&[Path::new("run"), &dir.join("Death.rsl")], &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(lines(&o), ["You have died..."]);
    // It waits 5 s of game time before its warp: a shorter limit stops it in DoEvents
    // (the sample world's own RC_Core.rsl `DOEVENTS`, parked in `SetWaiting`).
    let o = rcscript_at(
        &[Path::new("run"), &dir.join("Death.rsl")],
        &["--max-seconds", "4"],
    );
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).to_ascii_lowercase().contains("doevents"),
        "{}",
        stderr(&o)
    );
}
