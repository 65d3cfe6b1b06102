//! A cluster made only of separate processes, for whole-cluster tests that see it as an
//! operator does: a `gateway` process (not `--standalone`) and `zone-node run` processes on
//! loopback, observed through the gateway's ready line and `GET /cluster`, played through the
//! client SDK, and hurt with signals (SIGKILL, SIGSTOP, SIGCONT).
//!
//! [`ProcessCluster`] owns every child process: dropping it, also while a test panics,
//! SIGKILLs them all. Each child's stderr goes to `<dir>/<name>.log` (`RUST_LOG` of the children:
//! `CLUSTER_LOG`, default `info`); when a test panics the tail of every log is printed and the
//! directory is kept, otherwise it is removed (kept with `CLUSTER_KEEP=1`).
//!
//! The binaries are `target/<profile>/gateway` and `zone-node`, next to the test's own
//! executable. `cargo test --workspace` builds them (the gateway's and the zone node's own
//! integration tests need them); when one is missing or older than the sources of `shared`,
//! `zone-node` or `gateway` (a lone `cargo test -p cluster-tests` after an edit), [`bin`]
//! runs `cargo build -p gateway -p zone-node --bins` once first.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::io::{BufRead as _, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, mpsc};
use std::time::{Duration, SystemTime};

use gateway::admin::ClusterView;
use tokio::time::Instant;

use crate::{SECRET, WAIT};

/// Heartbeat period the gateway asks of its nodes (ms).
pub const HEARTBEAT_MS: u64 = 200;
/// A node silent this long is removed and its instances re-placed (ms).
pub const NODE_TIMEOUT_MS: u64 = 1_000;

/// The restarted gateway's `placement_hold_ms`: several of the nodes' reconnect backoffs
/// (`ZONE_NODE_RECONNECT_MAX_MS` 500), so that a node retrying on a loaded machine is still
/// in time to report what it runs.
pub const RESTART_HOLD_MS: u64 = 4_000;
/// The zone nodes' character checkpoint period (ms).
pub const PERSIST_EVERY_MS: u64 = 500;
/// Capacity of a node started without one (AreaInstances).
pub const DEFAULT_CAPACITY: u32 = 64;

/// Whether `cargo build` already ran in this test process.
static BUILT: Mutex<bool> = Mutex::new(false);

/// The workspace root (this crate's parent directory).
fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// The newest modification time of the files the binaries are built from.
fn newest_source() -> SystemTime {
    fn walk(p: &Path, newest: &mut SystemTime) {
        let Ok(meta) = std::fs::metadata(p) else {
            return;
        };
        if meta.is_dir() {
            for e in std::fs::read_dir(p).into_iter().flatten().flatten() {
                walk(&e.path(), newest);
            }
        } else if let Ok(t) = meta.modified() {
            *newest = (*newest).max(t);
        }
    }
    let root = workspace_root();
    let mut newest = SystemTime::UNIX_EPOCH;
    for p in [
        "Cargo.toml",
        "Cargo.lock",
        "shared/Cargo.toml",
        "shared/src",
        "shared/worlds",
        "zone-node/Cargo.toml",
        "zone-node/src",
        "gateway/Cargo.toml",
        "gateway/src",
    ] {
        walk(&root.join(p), &mut newest);
    }
    newest
}

/// The path of a workspace binary (`gateway`, `zone-node`) of this test's profile, built
/// first (once per test process) when it is missing or older than its sources.
pub fn bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/<test>");
    let path = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    let mut built = BUILT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let fresh = || {
        std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .is_ok_and(|t| t >= newest_source())
    };
    if !*built && !fresh() {
        eprintln!("{} is missing or stale: building it", path.display());
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.current_dir(workspace_root()).args([
            "build",
            "--locked",
            "-p",
            "gateway",
            "-p",
            "zone-node",
            "--bins",
        ]);
        if dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        let ok = cmd.status().is_ok_and(|s| s.success());
        assert!(
            ok,
            "could not build the binaries; run `cargo build -p gateway -p zone-node` first"
        );
        *built = true;
    }
    assert!(path.exists(), "{} does not exist", path.display());
    path
}

/// A fresh temporary directory for one test (removed first if a previous run left it).
fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rc-procs-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("a temp dir");
    d
}

/// A child's command with the test's own settings removed from its environment (a
/// `GATEWAY_*` or `ZONE_NODE_*` variable of the shell would change or break the cluster).
pub fn command(bin: &Path) -> Command {
    let mut cmd = Command::new(bin);
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if k.starts_with("GATEWAY_") || k.starts_with("ZONE_NODE_") || k == "LOG_FORMAT" {
            cmd.env_remove(k.as_ref());
        }
    }
    cmd.env(
        "RUST_LOG",
        std::env::var("CLUSTER_LOG").unwrap_or_else(|_| "info".into()),
    )
    // The logs are files: no colour codes (tracing-subscriber honours NO_COLOR).
    .env("NO_COLOR", "1")
    .stdin(Stdio::null());
    cmd
}

/// `GET path` over HTTP/1.0 (bounded by 2 s timeouts): the status and the body.
pub fn http_get(addr: SocketAddr, path: &str) -> Result<(u16, String), String> {
    http_request(addr, "GET", path, None, "")
}

/// `POST path` with a JSON body and a bearer token over HTTP/1.0: the status and the body.
pub fn http_post(
    addr: SocketAddr,
    path: &str,
    token: &str,
    json: &str,
) -> Result<(u16, String), String> {
    http_request(addr, "POST", path, Some(token), json)
}

/// One HTTP/1.0 request (bounded by 2 s timeouts), with a bearer `token` if given: the status and
/// the body.
pub fn http_request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &str,
) -> Result<(u16, String), String> {
    let timeout = Duration::from_secs(2);
    let mut s = TcpStream::connect_timeout(&addr, timeout).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    let auth = token.map_or_else(String::new, |t| format!("Authorization: Bearer {t}\r\n"));
    let length = if method == "GET" {
        String::new()
    } else {
        format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        )
    };
    write!(
        s,
        "{method} {path} HTTP/1.0\r\nHost: {addr}\r\n{auth}{length}\r\n{body}"
    )
    .map_err(|e| e.to_string())?;
    let mut text = String::new();
    s.read_to_string(&mut text).map_err(|e| e.to_string())?;
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("no HTTP header in {text:?}"))?;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("no HTTP status in {head:?}"))?;
    Ok((status, body.to_owned()))
}

/// The address after `marker` in the gateway's ready line.
fn addr_after(line: &str, marker: &str) -> Option<SocketAddr> {
    line.split(marker)
        .nth(1)?
        .split([' ', ','])
        .next()?
        .trim()
        .parse()
        .ok()
}

/// The last `n` lines of a file.
fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// A gateway process and zone-node processes on loopback.
pub struct ProcessCluster {
    /// The test's directory: `data/` (the gateway's database) and the children's logs.
    pub dir: PathBuf,
    /// The gateway's client endpoint (QUIC, ALPN `rc/1`).
    pub client_addr: SocketAddr,
    /// The gateway's internal endpoint, where the zone nodes connect.
    pub internal_addr: SocketAddr,
    /// The gateway's admin HTTP endpoint.
    pub admin_addr: SocketAddr,
    /// SHA-256 of the gateway's internal certificate (from its ready line); every node
    /// pins it.
    pub internal_fingerprint: String,
    gateway: Option<Child>,
    nodes: BTreeMap<String, Child>,
    spawned: usize,
}

impl ProcessCluster {
    /// A gateway and `nodes` zone nodes (`n1`, `n2`, ...) of [`DEFAULT_CAPACITY`]; see
    /// [`start_with`](Self::start_with).
    pub async fn start(name: &str, nodes: usize) -> Self {
        Self::start_with(name, &vec![DEFAULT_CAPACITY; nodes]).await
    }

    /// A gateway, then one zone node per capacity (`n1`, `n2`, ...), each started after the
    /// previous one registered, so placement is deterministic: the first node takes instance
    /// 0s up to its capacity, the next the rest. Waits until every area's instance 0 is placed.
    pub async fn start_with(name: &str, capacities: &[u32]) -> Self {
        let dir = temp_dir(name);
        let mut c = Self {
            dir,
            client_addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            internal_addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            admin_addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            internal_fingerprint: String::new(),
            gateway: None,
            nodes: BTreeMap::new(),
            spawned: 0,
        };
        c.spawn_gateway();
        for &capacity in capacities {
            let id = c.next_id();
            c.spawn_node_with(&id, capacity);
            c.wait_for(&format!("{id} to register"), WAIT, |v| {
                v.nodes.iter().any(|n| n.id == id)
            })
            .await;
        }
        c.wait_for("every area's instance 0 placed", WAIT, |v| {
            !v.nodes.is_empty() && v.unplaced.is_empty()
        })
        .await;
        c
    }

    fn next_id(&mut self) -> String {
        self.spawned += 1;
        format!("n{}", self.spawned)
    }

    /// Stop the gateway with SIGTERM (it saves every character and closes its clients),
    /// wait for it to exit, and start it again on the same data directory and addresses:
    /// the zone nodes reconnect to it and register what they run.
    pub fn restart_gateway(&mut self) {
        if let Some(mut g) = self.gateway.take() {
            let _ = Command::new("kill")
                .args(["-TERM", &g.id().to_string()])
                .status();
            let deadline = std::time::Instant::now() + WAIT;
            loop {
                if let Ok(Some(_)) = g.try_wait() {
                    break;
                }
                if std::time::Instant::now() > deadline {
                    let _ = g.kill();
                    let _ = g.wait();
                    self.fail("the gateway did not exit after SIGTERM");
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let (client, internal) = (self.client_addr, self.internal_addr);
        // The nodes run their instances already: the gateway waits for them to say so,
        // longer than their longest reconnect backoff (500 ms here) plus a loaded
        // machine's handshake.
        self.spawn_gateway_at(client, internal, RESTART_HOLD_MS);
    }

    /// SIGKILL the gateway (nothing saved, nobody told) and start it again on the same
    /// data directory and addresses, as an orchestrator restarts a crashed process.
    pub fn kill_and_restart_gateway(&mut self) {
        if let Some(mut g) = self.gateway.take() {
            let _ = g.kill();
            let _ = g.wait();
        }
        let (client, internal) = (self.client_addr, self.internal_addr);
        self.spawn_gateway_at(client, internal, RESTART_HOLD_MS);
    }

    /// Start the gateway and read its addresses from its ready line (bounded by [`WAIT`]).
    /// Nodes are started one at a time and each is placed as it registers (no hold).
    fn spawn_gateway(&mut self) {
        let any = SocketAddr::from(([127, 0, 0, 1], 0));
        self.spawn_gateway_at(any, any, 0);
    }

    /// [`spawn_gateway`](Self::spawn_gateway) on the given client and internal addresses,
    /// with `placement_hold_ms`.
    fn spawn_gateway_at(&mut self, client: SocketAddr, internal: SocketAddr, hold_ms: u64) {
        let log_name = if self.dir.join("gateway.log").exists() {
            "gateway.restarted.log"
        } else {
            "gateway.log"
        };
        let log = std::fs::File::create(self.dir.join(log_name)).expect("a log file");
        let mut child = command(&bin("gateway"))
            .args(["--listen", &client.to_string()])
            .args(["--internal-listen", &internal.to_string()])
            .args(["--admin-listen", "127.0.0.1:0", "--data-dir"])
            .arg(self.dir.join("data"))
            .env("GATEWAY_CLUSTER_SECRET", SECRET)
            .env("GATEWAY_PLACEMENT_HOLD_MS", hold_ms.to_string())
            .env("GATEWAY_ENET_LISTEN", "127.0.0.1:0")
            .env("GATEWAY_PASSWORD_HASH", "fast")
            .env("GATEWAY_HEARTBEAT_MS", HEARTBEAT_MS.to_string())
            .env("GATEWAY_NODE_TIMEOUT_MS", NODE_TIMEOUT_MS.to_string())
            .env("GATEWAY_SHUTDOWN_TIMEOUT_MS", "5000")
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("the gateway starts");
        // A thread copies stdout to `gateway.out` and hands over the lines, so reading the
        // ready line is bounded and the pipe never fills.
        let stdout = child.stdout.take().expect("a piped stdout");
        let mut out = std::fs::File::create(self.dir.join("gateway.out")).expect("a file");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let _ = writeln!(out, "{line}");
                let _ = tx.send(line);
            }
        });
        self.gateway = Some(child);
        let deadline = std::time::Instant::now() + WAIT;
        let line = loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(l) if l.contains("gateway ready") => break l,
                Ok(_) => {}
                Err(e) => self.fail(&format!("no ready line from the gateway ({e})")),
            }
        };
        let addr = |marker: &str| {
            addr_after(&line, marker).unwrap_or_else(|| {
                self.fail(&format!(
                    "no address after {marker:?} in the ready line {line:?}"
                ))
            })
        };
        let (client, internal, admin) = (
            addr("clients on udp "),
            addr("zone nodes on udp "),
            addr("admin on http://"),
        );
        self.client_addr = client;
        self.internal_addr = internal;
        self.admin_addr = admin;
        self.internal_fingerprint = line
            .split("zone nodes on udp ")
            .nth(1)
            .and_then(|s| s.split("certificate sha256 ").nth(1))
            .map(|s| s.chars().take_while(char::is_ascii_hexdigit).collect())
            .unwrap_or_default();
        if self.internal_fingerprint.len() != 64 {
            self.fail(&format!("no internal certificate fingerprint in {line:?}"));
        }
    }

    /// Start another zone node of [`DEFAULT_CAPACITY`]; returns its id (`n3`, ...). It is
    /// not waited for: see [`wait_for`](Self::wait_for).
    pub fn spawn_node(&mut self) -> String {
        let id = self.next_id();
        self.spawn_node_with(&id, DEFAULT_CAPACITY);
        id
    }

    /// Start a `zone-node run` process with this id and capacity (its stderr goes to
    /// `<dir>/<id>.log`). A running node of the same id is SIGKILLed first.
    pub fn spawn_node_with(&mut self, id: &str, capacity: u32) {
        let log = std::fs::File::create(self.dir.join(format!("{id}.log"))).expect("a log file");
        let child = command(&bin("zone-node"))
            .args(["run", "--node-id", id, "--bind-addr", "127.0.0.1:0"])
            .arg("--gateway-addr")
            .arg(self.internal_addr.to_string())
            .arg("--capacity")
            .arg(capacity.to_string())
            .env("ZONE_NODE_CLUSTER_SECRET", SECRET)
            // Pinned, as in production: the internal certificate is kept across restarts.
            .env("ZONE_NODE_GATEWAY_CERT_SHA256", &self.internal_fingerprint)
            .env("ZONE_NODE_INSECURE_SKIP_VERIFY", "false")
            .env("ZONE_NODE_PERSIST_EVERY_MS", PERSIST_EVERY_MS.to_string())
            .env("ZONE_NODE_RECONNECT_MAX_MS", "500")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("zone-node starts");
        if let Some(mut old) = self.nodes.insert(id.to_owned(), child) {
            let _ = old.kill();
            let _ = old.wait();
        }
    }

    /// The ids of the node processes this harness runs (killed ones excluded).
    pub fn node_ids(&self) -> Vec<String> {
        self.nodes.keys().cloned().collect()
    }

    /// The process id of a running node.
    pub fn pid(&self, id: &str) -> u32 {
        self.nodes
            .get(id)
            .map(Child::id)
            .unwrap_or_else(|| self.fail(&format!("no running node {id}")))
    }

    /// SIGKILL a node and reap it.
    pub fn kill(&mut self, id: &str) {
        let Some(mut c) = self.nodes.remove(id) else {
            self.fail(&format!("no running node {id}"))
        };
        let _ = c.kill();
        let _ = c.wait();
    }

    /// SIGSTOP a node: it freezes, silent, with its connection open.
    pub fn pause(&self, id: &str) {
        self.signal(id, "STOP");
    }

    /// SIGCONT a paused node.
    pub fn resume(&self, id: &str) {
        self.signal(id, "CONT");
    }

    fn signal(&self, id: &str, sig: &str) {
        let pid = self.pid(id).to_string();
        let ok = Command::new("kill")
            .args([format!("-{sig}").as_str(), pid.as_str()])
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            self.fail(&format!("kill -{sig} {id} failed"));
        }
    }

    /// `GET /cluster`, parsed.
    pub fn try_cluster(&self) -> Result<ClusterView, String> {
        let (status, body) = http_get(self.admin_addr, "/cluster")?;
        if status != 200 {
            return Err(format!("/cluster answered {status}: {body}"));
        }
        serde_json::from_str(&body).map_err(|e| format!("/cluster is not a ClusterView: {e}"))
    }

    /// `GET /cluster`, parsed (a failure fails the test, with the logs).
    pub fn cluster(&self) -> ClusterView {
        self.try_cluster().unwrap_or_else(|e| self.fail(&e))
    }

    /// The node owning an AreaInstance and its placement generation, per `/cluster`.
    pub fn placement(&self, area: &str, instance: u16) -> Option<(String, u64)> {
        placement_in(&self.cluster(), area, instance)
    }

    /// The node owning an AreaInstance, per `/cluster`.
    pub fn owner_of(&self, area: &str, instance: u16) -> Option<String> {
        self.placement(area, instance).map(|(n, _)| n)
    }

    /// Poll `/cluster` every 50 ms until `f` holds (returns that view), at most `within`;
    /// past it the test fails with the last view and the logs.
    pub async fn wait_for(
        &self,
        what: &str,
        within: Duration,
        f: impl Fn(&ClusterView) -> bool,
    ) -> ClusterView {
        let deadline = Instant::now() + within;
        loop {
            let v = self.try_cluster();
            if let Ok(v) = &v
                && f(v)
            {
                return v.clone();
            }
            if Instant::now() >= deadline {
                self.fail(&format!("timed out waiting for {what}; last view: {v:?}"));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// A child's log so far (`gateway` or a node id).
    pub fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(format!("{name}.log"))).unwrap_or_default()
    }

    /// Fail the test with a message (the logs are printed on the way out, by `Drop`).
    pub fn fail(&self, msg: &str) -> ! {
        panic!("{msg} (logs in {})", self.dir.display())
    }

    /// The last lines of every child's log.
    fn print_logs(&self) {
        let mut names = vec!["gateway".to_owned(), "gateway.out".to_owned()];
        if let Ok(rd) = std::fs::read_dir(&self.dir) {
            let mut nodes: Vec<String> = rd
                .flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_owned))
                .filter_map(|n| n.strip_suffix(".log").map(str::to_owned))
                .filter(|n| n != "gateway")
                .collect();
            nodes.sort();
            names.extend(nodes);
        }
        for name in names {
            let file = if name.ends_with(".out") {
                self.dir.join(&name)
            } else {
                self.dir.join(format!("{name}.log"))
            };
            eprintln!("----- {} (last 40 lines) -----", file.display());
            eprintln!("{}", tail(&file, 40));
        }
    }
}

impl Drop for ProcessCluster {
    fn drop(&mut self) {
        let children = std::mem::take(&mut self.nodes)
            .into_values()
            .chain(self.gateway.take());
        for mut c in children {
            // A stopped process is continued first, so SIGKILL takes it down at once.
            let _ = Command::new("kill")
                .args(["-CONT", &c.id().to_string()])
                .stderr(Stdio::null())
                .status();
            let _ = c.kill();
            let _ = c.wait();
        }
        if std::thread::panicking() {
            self.print_logs();
        } else if std::env::var_os("CLUSTER_KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// The node owning an AreaInstance in a view, and its generation.
pub fn placement_in(v: &ClusterView, area: &str, instance: u16) -> Option<(String, u64)> {
    v.nodes.iter().find_map(|n| {
        n.instances
            .iter()
            .find(|i| i.area == area && i.instance == instance)
            .map(|i| (n.id.clone(), i.generation))
    })
}
