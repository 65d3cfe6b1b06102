//! The `zone-node` binary: `run` (the default) joins the cluster; `bench` runs one headless
//! `ZoneSim`.

mod run;

use anyhow::{Context as _, Result};
use clap::{Parser, Subcommand};

/// A zone node of the Realm Crafter cluster.
#[derive(Parser, Debug)]
#[command(name = "zone-node", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Join the cluster and host AreaInstances (the default).
    Run(Box<run::RunArgs>),
    /// Probe this node's admin `/healthz` (exit 0 on 200, else 1 with the reason).
    Healthcheck(zone_node::healthcheck::HealthcheckArgs),
    /// Run one ZoneSim headless on a generated world and print one JSON object.
    Bench {
        /// Total actors (players + NPCs).
        #[arg(long, default_value_t = 10_000)]
        actors: u32,
        /// Players among them.
        #[arg(long, default_value_t = 1_000)]
        players: u32,
        /// Timed ticks (33 ms of game time each).
        #[arg(long, default_value_t = 600)]
        ticks: u32,
        /// Untimed warm-up ticks.
        #[arg(long, default_value_t = 60)]
        warmup: u32,
        /// Actors per km² (625 = 10,000 on 4 km × 4 km).
        #[arg(long, default_value_t = 625.0)]
        density: f32,
        /// RNG seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// One tick in this many gets a `zone.tick` trace span, as on a node (0: none).
        #[arg(long, env = "ZONE_NODE_TRACE_TICK_EVERY", default_value_t = zone_node::telemetry::DEFAULT_TICK_EVERY)]
        trace_tick_every: u32,
        /// Actor effects per actor (NPCs and players), 2..=30 s each, added again when
        /// they end.
        #[arg(long, default_value_t = 0)]
        effects: u32,
    },
}

fn main() -> std::process::ExitCode {
    match run_cli(Cli::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // One line: the error and its causes (a bad setting, a bad OTEL_* value).
            eprintln!("zone-node: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run_cli(cli: Cli) -> Result<()> {
    match cli.command {
        Some(Command::Bench {
            actors,
            players,
            ticks,
            warmup,
            density,
            seed,
            trace_tick_every,
            effects,
        }) => {
            // Traces as on a node (OTEL_EXPORTER_OTLP_ENDPOINT): the bench measures their cost.
            let traces = zone_node::logging::init_traced("zone-node-bench", None)?;
            let args = zone_node::bench::BenchArgs {
                actors,
                players,
                ticks,
                warmup,
                density,
                seed,
                trace_tick_every,
                effects,
            };
            let report = zone_node::bench::run(&args);
            println!("{}", serde_json::to_string(&report)?);
            if let Some(t) = traces {
                t.shutdown();
            }
            Ok(())
        }
        Some(Command::Healthcheck(args)) => {
            let addr = zone_node::healthcheck::run(&args).context("healthcheck")?;
            println!("healthy: http://{addr}/healthz answered 200");
            Ok(())
        }
        Some(Command::Run(args)) => run::run(*args),
        None => run::run(run::RunArgs::default()),
    }
}
