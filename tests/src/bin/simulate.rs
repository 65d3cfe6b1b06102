//! `simulate`: run N schedules of the deterministic control-plane simulator and print one
//! JSON line (`{"schedules", "violations", "steps", "seconds", ...}`); with a violation,
//! the first failing seed, its schedule shrunk to the fewest faults that still fail, and
//! that schedule's trace, and exit 1 (docs/testing.md).
//!
//! `cargo run --release -p cluster-tests --bin simulate -- --seeds N [--first-seed S]
//! [--trace] [--each] [--no-shrink] [--jobs N]` (`--each`: one line per failing seed on
//! stderr; `--jobs`: threads, one schedule each at a time, default one per core);
//! `--replay FILE` runs one schedule (the `schedule` object of a failure's line).

use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::{Context as _, bail};
use cluster_tests::simulate::{self, Options, Report, Schedule};

struct Args {
    seeds: u64,
    first: u64,
    trace: bool,
    each: bool,
    shrink: bool,
    replay: Option<String>,
    jobs: usize,
    opts: Options,
}

fn parse() -> anyhow::Result<Args> {
    let mut a = Args {
        seeds: 100,
        first: 0,
        trace: false,
        each: false,
        shrink: true,
        replay: None,
        jobs: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        opts: Options::default(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = |name: &str| -> anyhow::Result<u64> {
            let v = it.next().with_context(|| format!("{name} needs a value"))?;
            v.parse()
                .with_context(|| format!("{name}: {v:?} is not a number"))
        };
        match flag.as_str() {
            "--seeds" => a.seeds = value("--seeds")?,
            "--first-seed" => a.first = value("--first-seed")?,
            "--nodes" => a.opts.nodes = usize::try_from(value("--nodes")?.max(1))?,
            "--accounts" => a.opts.accounts = usize::try_from(value("--accounts")?.max(1))?,
            "--chaos-ms" => a.opts.chaos_ms = value("--chaos-ms")?,
            "--heal-ms" => a.opts.heal_ms = value("--heal-ms")?,
            "--trace" => a.trace = true,
            "--each" => a.each = true,
            "--no-shrink" => a.shrink = false,
            "--jobs" => a.jobs = usize::try_from(value("--jobs")?.max(1))?,
            "--replay" => a.replay = Some(it.next().context("--replay needs a file")?),
            "-h" | "--help" => {
                println!(
                    "usage: simulate [--seeds N] [--first-seed S] [--nodes N] [--accounts N] \
                     [--chaos-ms MS] [--heal-ms MS] [--trace] [--each] [--no-shrink] [--jobs N] \
                     [--replay SCHEDULE.json]"
                );
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?} (try --help)"),
        }
    }
    Ok(a)
}

/// The lines of a trace worth reading (heartbeats and acknowledgements left out).
fn readable(trace: &[String]) -> Vec<&String> {
    trace
        .iter()
        .filter(|l| !l.contains(": Heartbeat (") && !l.contains(": SnapshotAck "))
        .collect()
}

/// `--replay`: one explicit schedule, its whole trace on stderr.
fn replay(path: &str, opts: &Options) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
    let schedule: Schedule =
        serde_json::from_str(&text).with_context(|| format!("{path} is not a schedule"))?;
    let r = simulate::replay(&schedule, opts);
    for line in &r.trace {
        eprintln!("{line}");
    }
    let mut line = serde_json::json!({
        "schedules": 1,
        "violations": u8::from(r.violation.is_some()),
        "steps": r.steps,
        "handoffs": r.handoffs,
        "recoveries": r.recoveries,
        "kept": r.kept,
        "adopted": r.adopted,
        "lost_hand_outs": r.lost_hand_outs,
        "informed_takeovers": r.informed_takeovers,
    });
    if let Some(v) = &r.violation {
        line["violation"] = serde_json::json!(format!("at {} ms: {}", v.at_ms, v.what));
    }
    println!("{line}");
    Ok(if r.violation.is_some() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// What the schedules added up to; the failure of the smallest failing seed.
#[derive(Default)]
struct Totals {
    steps: u64,
    handoffs: u64,
    recoveries: u64,
    kept: u64,
    adopted: u64,
    lost_hand_outs: u64,
    informed_takeovers: u64,
    violations: u64,
    first_failure: Option<Report>,
}

impl Totals {
    fn add(&mut self, r: Report) {
        self.steps += r.steps;
        self.handoffs += r.handoffs;
        self.recoveries += r.recoveries;
        self.kept += r.kept;
        self.adopted += r.adopted;
        self.lost_hand_outs += r.lost_hand_outs;
        self.informed_takeovers += r.informed_takeovers;
        if r.violation.is_some() {
            self.violations += 1;
            if self.first_failure.as_ref().is_none_or(|f| r.seed < f.seed) {
                self.first_failure = Some(r);
            }
        }
    }

    fn merge(&mut self, other: Self) {
        self.steps += other.steps;
        self.handoffs += other.handoffs;
        self.recoveries += other.recoveries;
        self.kept += other.kept;
        self.adopted += other.adopted;
        self.lost_hand_outs += other.lost_hand_outs;
        self.informed_takeovers += other.informed_takeovers;
        self.violations += other.violations;
        if let Some(f) = other.first_failure
            && self
                .first_failure
                .as_ref()
                .is_none_or(|mine| f.seed < mine.seed)
        {
            self.first_failure = Some(f);
        }
    }
}

fn main() -> anyhow::Result<ExitCode> {
    let args = parse()?;
    if let Some(path) = &args.replay {
        return replay(path, &args.opts);
    }
    let started = Instant::now();
    // Seeds are handed out one at a time to `jobs` threads; each schedule is still one
    // deterministic run on one thread, so the outcome does not depend on `jobs`.
    let end = args.first.saturating_add(args.seeds);
    let next = AtomicU64::new(args.first);
    let totals = Mutex::new(Totals::default());
    let jobs = if args.trace { 1 } else { args.jobs.max(1) };
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| {
                let mut mine = Totals::default();
                loop {
                    let seed = next.fetch_add(1, Ordering::Relaxed);
                    if seed >= end {
                        break;
                    }
                    let r = simulate::run(seed, &args.opts);
                    if args.trace {
                        for line in &r.trace {
                            eprintln!("{line}");
                        }
                    }
                    if let Some(v) = &r.violation
                        && args.each
                    {
                        eprintln!("seed {}: at {} ms: {}", r.seed, v.at_ms, v.what);
                    }
                    mine.add(r);
                }
                let mut t = totals
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                t.merge(mine);
            });
        }
    });
    let Totals {
        steps,
        handoffs,
        recoveries,
        kept,
        adopted,
        lost_hand_outs,
        informed_takeovers,
        violations,
        first_failure,
    } = totals
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut line = serde_json::json!({
        "schedules": args.seeds,
        "first_seed": args.first,
        "violations": violations,
        "steps": steps,
        "handoffs": handoffs,
        "recoveries": recoveries,
        "kept": kept,
        "adopted": adopted,
        "lost_hand_outs": lost_hand_outs,
        "informed_takeovers": informed_takeovers,
        "seconds": (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
    });
    if let Some(r) = &first_failure
        && let Some(v) = &r.violation
    {
        line["failing_seed"] = serde_json::json!(r.seed);
        line["violation"] = serde_json::json!(format!("at {} ms: {}", v.at_ms, v.what));
        match args
            .shrink
            .then(|| simulate::shrink(r, &args.opts))
            .flatten()
        {
            Some((schedule, shrunk)) => {
                // The fewest faults that still fail, and their whole (readable) trace:
                // save `schedule` to a file and run it with `--replay FILE`.
                line["schedule"] = serde_json::to_value(&schedule)?;
                if let Some(v) = &shrunk.violation {
                    line["shrunk_violation"] =
                        serde_json::json!(format!("at {} ms: {}", v.at_ms, v.what));
                }
                line["trace"] = serde_json::json!(readable(&shrunk.trace));
            }
            None => {
                // The seed's trace tail (the whole trace with --trace).
                let tail: Vec<&String> = r.trace.iter().rev().take(60).rev().collect();
                line["trace"] = serde_json::json!(tail);
            }
        }
    }
    println!("{line}");
    Ok(if violations > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
