//! A throwaway Postgres server for tests (issue 41: "tests run against a real Postgres
//! server that the tests start themselves"): Debian's `postgresql` package's `initdb` and
//! `pg_ctl` on a temporary directory, listening on loopback on a free port, stopped and
//! removed when dropped. As root (CI containers) the server runs as the `postgres` user
//! (`runuser`), since Postgres refuses to run as root.
//!
//! Where Postgres is not installed, [`PgServer::start`] says so; tests skip then, unless
//! `RC_REQUIRE_POSTGRES=1` (set by `.ci/run`, which installs it), where they fail.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A running throwaway server.
#[derive(Debug)]
pub struct PgServer {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    as_postgres: bool,
}

/// Where Postgres' programs are: `RC_PG_BIN`, Debian's `/usr/lib/postgresql/<newest>/bin`,
/// or the `PATH`.
fn bin_dir() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("RC_PG_BIN") {
        return Some(PathBuf::from(p));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((v, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, b)| b).or_else(|| {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .find(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file())
        })
    })
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

/// Whether tests must have Postgres (`RC_REQUIRE_POSTGRES=1`).
pub fn required() -> bool {
    std::env::var("RC_REQUIRE_POSTGRES").is_ok_and(|v| v == "1")
}

/// A server for a test, or `None` (the test skips, saying why) where Postgres is not
/// installed; with `RC_REQUIRE_POSTGRES=1` a missing or failing server panics instead.
#[allow(clippy::panic)]
pub fn start_or_skip() -> Option<PgServer> {
    match PgServer::start() {
        Ok(s) => Some(s),
        Err(e) if !required() => {
            eprintln!("SKIP (Postgres): {e}");
            None
        }
        Err(e) => panic!("Postgres is required (RC_REQUIRE_POSTGRES=1): {e}"),
    }
}

impl PgServer {
    /// Starts a server on a fresh directory; `Err` says why not (not installed, failed).
    pub fn start() -> Result<Self, String> {
        let bin = bin_dir().ok_or(
            "Postgres is not installed (Debian: apt-get install postgresql; or set RC_PG_BIN)",
        )?;
        let dir = std::env::temp_dir().join(format!(
            "rc-pg-{}-{}",
            std::process::id(),
            crate::console::unix_ms()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let as_postgres = is_root();
        if as_postgres {
            let ok = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&dir)
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                return Err("cannot give the directory to the postgres user".into());
            }
        }
        let mut s = Self {
            bin,
            dir,
            port: 0,
            as_postgres,
        };
        let data = s.dir.join("data");
        s.run(
            "initdb",
            &[
                "-D",
                &data.to_string_lossy(),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
        )?;
        // The port is picked as late as it can be, and picked again should another
        // process have bound it meanwhile (a released port 0 is anyone's next one).
        let mut tries = 0;
        loop {
            tries += 1;
            s.port = free_port()?;
            let opts = format!(
                "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off",
                s.port,
                s.dir.display()
            );
            let started = s.run(
                "pg_ctl",
                &[
                    "-D",
                    &data.to_string_lossy(),
                    "-l",
                    &s.dir.join("log").to_string_lossy(),
                    "-w",
                    "-t",
                    "60",
                    "-o",
                    &opts,
                    "start",
                ],
            );
            match started {
                Ok(()) => return Ok(s),
                Err(e) if tries < 3 && s.port_was_taken() => {
                    eprintln!("Postgres test server: port {} taken, another: {e}", s.port);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Whether the server's log says its port was in use.
    fn port_was_taken(&self) -> bool {
        std::fs::read_to_string(self.dir.join("log"))
            .is_ok_and(|l| l.contains("Address already in use") || l.contains("could not bind"))
    }

    fn run(&self, program: &str, args: &[&str]) -> Result<(), String> {
        let exe = self.bin.join(program);
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        let out = cmd
            .args(args)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("{}: {e}", exe.display()))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{program} failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }

    /// The server's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A new, empty database `name` (letters, digits and `_`); its URL.
    pub fn database(&self, name: &str) -> Result<String, String> {
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(format!("bad database name {name:?}"));
        }
        let admin = format!("postgres://postgres@127.0.0.1:{}/postgres", self.port);
        let drop = format!("DROP DATABASE IF EXISTS {name}");
        let create = format!("CREATE DATABASE {name}");
        // On a thread of its own: the blocking client must not run inside an async test.
        std::thread::spawn(move || -> Result<(), String> {
            let mut c = postgres::Client::connect(&admin, postgres::NoTls)
                .map_err(|e| super::pg::detail(&e))?;
            // One statement each: CREATE DATABASE runs outside a transaction.
            c.batch_execute(&drop)
                .and_then(|()| c.batch_execute(&create))
                .map_err(|e| super::pg::detail(&e))
        })
        .join()
        .map_err(|_| "the client thread panicked".to_owned())??;
        Ok(format!(
            "postgres://postgres@127.0.0.1:{}/{name}",
            self.port
        ))
    }

    /// The server's directory (its log is `log` in it).
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let data = self.dir.join("data");
        let _ = self.run(
            "pg_ctl",
            &[
                "-D",
                &data.to_string_lossy(),
                "-m",
                "immediate",
                "-w",
                "stop",
            ],
        );
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
