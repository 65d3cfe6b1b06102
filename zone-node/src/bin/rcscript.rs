//! The `rcscript` binary: check a game's `.rsl` scripts, or run one in a headless zone,
//! without starting a server (the logic is `zone_node::rcscript`).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result, anyhow};
use clap::{Parser, Subcommand};
use zone_node::rcscript::{self, RunOptions, Status};

const AFTER_HELP: &str = "\
Exit codes:
  0  no error (warnings allowed); the script ended normally
  1  a compile error (check); a runtime error, a runaway loop or the time limit (run)
  2  the path or world cannot be read; for run, the script does not compile or has no
     such function; a bad argument

Examples:
  rcscript check \"Server Data/Scripts\"
  rcscript check Quests/Ratcatcher1.rsl
  rcscript run Hello.rsl
  rcscript run Death.rsl --world \"Server Data\" --max-seconds 10
  rcscript run \"In-game Commands.rsl\" --function WAVE --param \"Bob, 3\"";

/// Check and try Realm Crafter `.rsl` scripts without starting a server.
#[derive(Parser, Debug)]
#[command(
    name = "rcscript",
    version,
    about = "Check and try Realm Crafter .rsl scripts without starting a server.",
    after_help = AFTER_HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Parse and resolve scripts; print each diagnostic as `file:line:col: message` on stdout.
    ///
    /// PATH is a Scripts folder (every `.rsl` in it is checked) or one `.rsl` file, compiled
    /// together with the `.rsl` files beside it so that its `Using "X.rcm"` resolves (its
    /// diagnostics and those of the modules it uses are printed). Warnings are printed too
    /// (`warning:`) but do not fail the check.
    Check {
        /// A `.rsl` file or a Scripts folder.
        path: PathBuf,
    },
    /// Run a function of a script with a test player ("Tester") as `Actor()`.
    ///
    /// The script runs in a headless zone of the world (the test player's start area), on
    /// game time (33 ms ticks, no real waiting), with the world's scripts and those beside
    /// FILE (FILE replaces a world script of the same name), until it and the scripts it
    /// started for the player end, or the time limit passes. The test player's login
    /// scripts (Login, the area's Entry script) do not run. Stdout gets the chat lines the
    /// player receives, one per line; errors (`file:line: message`) and script logs
    /// (`[log] …`) go to stderr.
    Run {
        /// The `.rsl` script to run.
        file: PathBuf,
        /// The function to run.
        #[arg(long, short = 'f', value_name = "NAME", default_value = "Main")]
        function: String,
        /// The world: a Realm Crafter `Server Data` folder or a native world (default: the
        /// embedded demo world).
        #[arg(long, short = 'w', value_name = "PATH")]
        world: Option<PathBuf>,
        /// Stop after this many seconds of game time (a positive number).
        #[arg(long, value_name = "SECONDS", default_value_t = rcscript::DEFAULT_MAX_SECONDS, value_parser = rcscript::parse_max_seconds)]
        max_seconds: f64,
        /// The script's `Param` (`Parameter(1)`, `Parameter(2)`, … read its comma-separated
        /// parts).
        #[arg(long, value_name = "TEXT", default_value = "")]
        param: String,
    },
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => return usage_error(&e),
    };
    // Deeply nested scripts recurse in the parser and the compiler: give them room.
    let worker = std::thread::Builder::new()
        .name("rcscript".into())
        .stack_size(64 << 20)
        .spawn(move || run_cli(cli));
    let result = match worker {
        Ok(h) => h
            .join()
            .unwrap_or_else(|_| Err(anyhow!("internal error (please report it)"))),
        Err(e) => Err(e).context("starting the worker thread"),
    };
    match result {
        Ok(status) => ExitCode::from(status.code()),
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "rcscript: {e:#}");
            ExitCode::from(Status::Unusable.code())
        }
    }
}

fn run_cli(cli: Cli) -> Result<Status> {
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let (mut out, mut err) = (stdout.lock(), stderr.lock());
    let status = match cli.command {
        Command::Check { path } => rcscript::check(&path, &mut out, &mut err),
        Command::Run {
            file,
            function,
            world,
            max_seconds,
            param,
        } => {
            let opts = RunOptions {
                file,
                function,
                world,
                max_seconds,
                param,
            };
            rcscript::run(&opts, &mut out, &mut err)
        }
    }
    .context("writing the output")?;
    out.flush().context("writing the output")?;
    Ok(status)
}

/// A command-line error in one line on stderr (exit 2); `--help` and `--version` as usual.
fn usage_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        let _ = e.print();
        return ExitCode::from(Status::Unusable.code());
    }
    let text = e.to_string();
    let line: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty())
        .collect();
    let _ = writeln!(std::io::stderr(), "rcscript: {}", line.join(" "));
    ExitCode::from(Status::Unusable.code())
}
