//! `simulate`: run N schedules of the deterministic control-plane simulator and print one
//! JSON line (`{"schedules", "violations", "steps", "seconds", ...}`); with a violation,
//! the first failing seed, its schedule shrunk to the fewest faults that still fail, and
//! that schedule's trace, and exit 1 (docs/testing.md).
//!
//! `cargo run --release -p cluster-tests --bin simulate -- --seeds N [--first-seed S]
//! [--trace] [--each] [--no-shrink]` (`--each`: one line per failing seed on stderr);
//! `--replay FILE` runs one schedule (the `schedule` object of a failure's line).

use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context as _, bail};
use cluster_tests::simulate::{self, Options, Schedule};

struct Args {
    seeds: u64,
    first: u64,
    trace: bool,
    each: bool,
    shrink: bool,
    replay: Option<String>,
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
            "--replay" => a.replay = Some(it.next().context("--replay needs a file")?),
            "-h" | "--help" => {
                println!(
                    "usage: simulate [--seeds N] [--first-seed S] [--nodes N] [--accounts N] \
                     [--chaos-ms MS] [--heal-ms MS] [--trace] [--each] [--no-shrink] \
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

fn main() -> anyhow::Result<ExitCode> {
    let args = parse()?;
    if let Some(path) = &args.replay {
        return replay(path, &args.opts);
    }
    let started = Instant::now();
    let (mut steps, mut handoffs, mut recoveries, mut violations) = (0u64, 0u64, 0u64, 0u64);
    let mut first_failure = None;
    for seed in args.first..args.first.saturating_add(args.seeds) {
        let r = simulate::run(seed, &args.opts);
        steps += r.steps;
        handoffs += r.handoffs;
        recoveries += r.recoveries;
        if args.trace {
            for line in &r.trace {
                eprintln!("{line}");
            }
        }
        if let Some(v) = &r.violation {
            violations += 1;
            if args.each {
                eprintln!("seed {}: at {} ms: {}", r.seed, v.at_ms, v.what);
            }
            if first_failure.is_none() {
                first_failure = Some(r);
            }
        }
    }
    let mut line = serde_json::json!({
        "schedules": args.seeds,
        "first_seed": args.first,
        "violations": violations,
        "steps": steps,
        "handoffs": handoffs,
        "recoveries": recoveries,
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
