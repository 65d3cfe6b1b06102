//! Helpers shared by the whole-workspace tests in `tests/tests/`: a cluster on loopback
//! made of a gateway (in this process, so tests can read its state) and `zone-node`
//! processes that tests can kill (SIGKILL), pause (SIGSTOP) and resume (SIGCONT), plus
//! the client calls the tests repeat. [`multiprocess`] is the harness of a cluster made only
//! of processes (the gateway too), seen from outside; [`simulate`] is the deterministic
//! simulator of the control plane (no sockets, no threads, a manual clock).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod adventurer;
pub mod multiprocess;
pub mod simulate;
pub mod webdriver;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use client::{Connection, GameStart, Incoming, NewCharacter, Verify};
use gateway::admin::ClusterView;
use gateway::config::GatewayConfig;
use gateway::server::{self, Gateway};
use shared::proto::{ServerPacket, StandardUpdateC2S};
use tokio::time::Instant;

/// Cluster secret of the test clusters.
pub const SECRET: &str = "cluster-tests-secret-0123456789abcdef";
/// Default bound on every wait.
pub const WAIT: Duration = Duration::from_secs(20);
/// Heartbeat period the test gateway asks of its nodes (ms).
pub const HEARTBEAT_MS: u64 = 250;
/// A node silent this long is removed (ms).
pub const NODE_TIMEOUT_MS: u64 = 2_000;

/// The `zone-node` binary next to this test's executable (`target/<profile>/`), built
/// on demand when it is missing or older than its sources ([`multiprocess::bin`]).
pub fn zone_node_bin() -> PathBuf {
    multiprocess::bin("zone-node")
}

/// A loopback address whose port no other process of the machine will be given meanwhile,
/// for a server a test starts later (a standby gateway binds its internal address only
/// when it takes over, seconds after the test picked it). A port the kernel handed out
/// for `127.0.0.1:0` and was released is not such a port: the next socket bound to port 0
/// anywhere on the machine may get it (a failover test's standby once found its internal
/// port taken, "Address already in use"). These ports lie below Linux's ephemeral range
/// (32768 up), which the kernel never hands out for port 0, each is claimed across the
/// machine's test processes by an exclusive lock on a file (held until this process
/// exits; the kernel frees it with the process), and it is checked free for UDP and TCP
/// when it is claimed.
pub fn free_port() -> SocketAddr {
    use std::sync::Mutex;
    static HELD: Mutex<Vec<std::fs::File>> = Mutex::new(Vec::new());
    const FIRST: u16 = 20_000;
    const COUNT: u16 = 12_000;
    let dir = std::env::temp_dir().join("rc-cluster-test-ports");
    std::fs::create_dir_all(&dir).expect("the ports' lock directory");
    // Processes of one run start at different places, so they seldom meet.
    let start = u16::try_from(std::process::id() % u32::from(COUNT)).unwrap_or(0);
    for i in 0..COUNT {
        let port = FIRST + (start + i) % COUNT;
        let Ok(f) = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(format!("{port}.lock")))
        else {
            continue;
        };
        if f.try_lock().is_err() {
            continue;
        }
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        if std::net::UdpSocket::bind(addr).is_ok() && std::net::TcpListener::bind(addr).is_ok() {
            HELD.lock().unwrap_or_else(|e| e.into_inner()).push(f);
            return addr;
        }
    }
    panic!("no free loopback port in {FIRST}..{}", FIRST + COUNT)
}

/// A fresh temporary directory for one test.
pub fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rc-cluster-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("a temp dir");
    d
}

/// A gateway in this process and zone-node processes around it.
pub struct Cluster {
    /// The gateway.
    pub gw: Gateway,
    /// Its data directory (and the nodes' logs).
    pub dir: PathBuf,
    nodes: BTreeMap<String, Child>,
    /// Extra environment of every node process (e.g. `OTEL_*`).
    node_env: Vec<(String, String)>,
}

impl Cluster {
    /// A gateway (checkpoints every `checkpoint_ms` on every node) and one node per id,
    /// each started after the previous one registered; waits until every area's
    /// instance 0 is placed and ready.
    pub async fn start(name: &str, node_ids: &[&str]) -> Self {
        let nodes: Vec<(&str, u32)> = node_ids.iter().map(|id| (*id, 64)).collect();
        Self::start_with_capacity(name, &nodes).await
    }

    /// As [`start`](Self::start), with each node's capacity (AreaInstances it accepts):
    /// a small first node leaves some of the instance 0s to the next.
    pub async fn start_with_capacity(name: &str, nodes: &[(&str, u32)]) -> Self {
        Self::start_with_env(name, nodes, &[]).await
    }

    /// As [`start_with_capacity`](Self::start_with_capacity), with extra environment
    /// variables for every node process (the traces test points them at its collector).
    pub async fn start_with_env(name: &str, nodes: &[(&str, u32)], env: &[(&str, &str)]) -> Self {
        Self::start_full(name, nodes, env, None, |_| {}).await
    }

    /// As [`start_with_capacity`](Self::start_with_capacity), with the gateway's
    /// configuration changed by `tweak` (the limits, for the flood tests: by default the
    /// tests' clients, all on loopback, are exempt and chat is not limited).
    pub async fn start_with_config(
        name: &str,
        nodes: &[(&str, u32)],
        tweak: impl FnOnce(&mut GatewayConfig),
    ) -> Self {
        Self::start_full(name, nodes, &[], None, tweak).await
    }

    /// As [`start_with_capacity`](Self::start_with_capacity), serving the world in `world`
    /// (a native world directory, with its `scripts/`) instead of the demo world.
    pub async fn start_with_world(
        name: &str,
        nodes: &[(&str, u32)],
        world: &std::path::Path,
    ) -> Self {
        Self::start_full(name, nodes, &[], Some(world), |_| {}).await
    }

    /// As [`start_with_world`](Self::start_with_world), with the gateway's configuration
    /// changed by `tweak`.
    pub async fn start_with_world_and(
        name: &str,
        nodes: &[(&str, u32)],
        world: &std::path::Path,
        tweak: impl FnOnce(&mut GatewayConfig),
    ) -> Self {
        Self::start_full(name, nodes, &[], Some(world), tweak).await
    }

    /// As [`start_with_world`](Self::start_with_world), with extra environment variables
    /// for every node process (a longer `ZONE_NODE_PERSIST_EVERY_MS`, say).
    pub async fn start_with_world_env(
        name: &str,
        nodes: &[(&str, u32)],
        world: &std::path::Path,
        env: &[(&str, &str)],
    ) -> Self {
        Self::start_full(name, nodes, env, Some(world), |_| {}).await
    }

    async fn start_full(
        name: &str,
        nodes: &[(&str, u32)],
        env: &[(&str, &str)],
        world: Option<&std::path::Path>,
        tweak: impl FnOnce(&mut GatewayConfig),
    ) -> Self {
        let _ = tracing_subscriber::fmt()
            .with_test_writer()
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_from_default_env()
                    .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
            )
            .try_init();
        let dir = temp_dir(name);
        let cfg = GatewayConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            internal_listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            enet_listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
            admin_listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            data_dir: dir.join("data"),
            standalone: false,
            cluster_secret: SECRET.into(),
            password_hash: "fast".into(),
            heartbeat_ms: HEARTBEAT_MS,
            node_timeout_ms: NODE_TIMEOUT_MS,
            shutdown_timeout_ms: 5_000,
            world: world.map(std::path::Path::to_path_buf),
            // Nodes start one at a time, each placed as it registers (deterministic
            // placement: the first takes instance 0s up to its capacity).
            placement_hold_ms: 0,
            // Scenario tests send commands faster than a player types, and actions faster
            // than a player plays (hostile item requests, 250 dialog answers in a row):
            // the input budgets are for the flood tests to set (`tests/cluster/flood.rs`).
            chat_per_second: 1_000,
            chat_burst: 1_000,
            input_budgets: generous_budgets(),
            ..GatewayConfig::default()
        };
        let mut cfg = cfg;
        tweak(&mut cfg);
        let mut node_env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        if let Some(w) = world {
            node_env.push(("ZONE_NODE_WORLD".into(), w.display().to_string()));
        }
        let world = server::load_world(&cfg).expect("the world");
        let gw = server::start(cfg, world).await.expect("the gateway starts");
        let mut c = Self {
            gw,
            dir,
            nodes: BTreeMap::new(),
            node_env,
        };
        for (id, capacity) in nodes {
            c.spawn_node_with(id, *capacity);
            c.wait_for(&format!("{id} to register"), |v| {
                v.nodes.iter().any(|n| n.id == *id)
            })
            .await;
        }
        c.wait_for("every area placed", |v| v.unplaced.is_empty())
            .await;
        c
    }

    /// One node with its admin endpoint (`/metrics`) on a free loopback port; returns the
    /// cluster and that address.
    pub async fn start_with_admin(name: &str) -> (Self, SocketAddr) {
        Self::start_with_admin_and(name, |_| {}).await
    }

    /// As [`start_with_admin`](Self::start_with_admin), with the gateway's configuration
    /// changed by `tweak`.
    pub async fn start_with_admin_and(
        name: &str,
        tweak: impl FnOnce(&mut GatewayConfig),
    ) -> (Self, SocketAddr) {
        Self::start_with_admin_env(name, &[], tweak).await
    }

    /// As [`start_with_admin_and`](Self::start_with_admin_and), with more of the node's
    /// environment (`ZONE_NODE_*` settings).
    pub async fn start_with_admin_env(
        name: &str,
        env: &[(&str, &str)],
        tweak: impl FnOnce(&mut GatewayConfig),
    ) -> (Self, SocketAddr) {
        let admin = free_port();
        let admin_s = admin.to_string();
        let mut all = vec![("ZONE_NODE_ADMIN_LISTEN", admin_s.as_str())];
        all.extend_from_slice(env);
        let c = Self::start_full(name, &[("n1", 64)], &all, None, tweak).await;
        (c, admin)
    }

    /// A new character `user`, made a DM and logged in again with Strength 1000 (it kills
    /// NPCs in a blow or two).
    pub async fn strong_dm(&self, user: &str) -> (Connection, GameStart) {
        let (conn, _) = new_player(self.gw.client_addr, user).await;
        conn.close(client::CloseCode::Normal).await;
        self.make_dm(user);
        let (mut c, g) = login_again(self.gw.client_addr, user).await;
        c.command("setattributemax Strength,1000").await.unwrap();
        c.command("setattribute Strength,1000").await.unwrap();
        (c, g)
    }

    /// Start a `zone-node run` process with this id (its stderr goes to `<dir>/<id>.log`).
    pub fn spawn_node(&mut self, id: &str) {
        self.spawn_node_with(id, 64);
    }

    /// Start a `zone-node run` process accepting `capacity` AreaInstances.
    pub fn spawn_node_with(&mut self, id: &str, capacity: u32) {
        let log = std::fs::File::create(self.dir.join(format!("{id}.log"))).expect("a log file");
        let child = Command::new(zone_node_bin())
            .args(["run", "--node-id", id, "--bind-addr", "127.0.0.1:0"])
            .arg("--gateway-addr")
            .arg(self.gw.internal_addr.to_string())
            .env("ZONE_NODE_CLUSTER_SECRET", SECRET)
            .env("ZONE_NODE_PERSIST_EVERY_MS", "500")
            .env("ZONE_NODE_RECONNECT_MAX_MS", "500")
            // Scenario tests send a player's inputs faster than one plays (250 dialog
            // answers in a row): the zone's inbox bound is for the flood tests to set.
            .env("ZONE_NODE_INBOX_PER_PLAYER", "100000")
            .env("ZONE_NODE_CAPACITY", capacity.to_string())
            .envs(self.node_env.iter().map(|(k, v)| (k, v)))
            .env(
                "RUST_LOG",
                std::env::var("NODE_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("zone-node starts");
        if let Some(mut old) = self.nodes.insert(id.to_owned(), child) {
            let _ = old.kill();
            let _ = old.wait();
        }
    }

    /// SIGKILL a node.
    pub fn kill(&mut self, id: &str) {
        if let Some(mut c) = self.nodes.remove(id) {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Send a signal (`STOP`, `CONT`, ...) to a node.
    pub fn signal(&self, id: &str, sig: &str) {
        let c = self.nodes.get(id).expect("a running node");
        let ok = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(c.id().to_string())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(ok, "kill -{sig} {id}");
    }

    /// A node's log so far.
    pub fn log(&self, id: &str) -> String {
        std::fs::read_to_string(self.dir.join(format!("{id}.log"))).unwrap_or_default()
    }

    /// The gateway's latest cluster view.
    pub fn view(&self) -> ClusterView {
        self.gw.shared().view.lock().unwrap().clone()
    }

    /// The node owning an AreaInstance and its generation.
    pub fn owner(&self, area: &str, instance: u16) -> Option<(String, u64)> {
        self.view().nodes.into_iter().find_map(|n| {
            n.instances
                .iter()
                .find(|i| i.area == area && i.instance == instance)
                .map(|i| (n.id.clone(), i.generation))
        })
    }

    /// Wait (bounded by [`WAIT`]) until `f` holds for the cluster view.
    pub async fn wait_for(&self, what: &str, f: impl Fn(&ClusterView) -> bool) {
        let deadline = Instant::now() + WAIT;
        loop {
            if f(&self.view()) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; view: {:?}",
                self.view()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Make an account a DM (in the gateway's book; the next login carries the flag).
    pub fn make_dm(&self, user: &str) {
        let mut acc = self.gw.shared().accounts();
        let id = acc.book.find_user(user).expect("the account exists");
        acc.book.set_dm(id, true);
    }

    /// The saved character of an account's first slot.
    pub fn saved(&self, user: &str) -> shared::internal::ActorStateDto {
        let acc = self.gw.shared().accounts();
        let id = acc.book.find_user(user).expect("the account exists");
        acc.book
            .get(id)
            .and_then(|a| a.characters.first().cloned())
            .expect("a character")
    }

    /// Whether the gateway holds `user` as online.
    pub fn online(&self, user: &str) -> bool {
        let acc = self.gw.shared().accounts();
        acc.book
            .find_user(user)
            .and_then(|id| acc.book.get(id))
            .is_some_and(|a| a.logged_on)
    }

    /// Players per AreaInstance, summed over every node.
    pub fn players_total(&self) -> u64 {
        players_in(&self.view())
    }

    /// Wait until an AreaInstance shows in the cluster view.
    pub async fn wait_placed(&self, area: &str, instance: u16) {
        self.wait_for(&format!("{area} #{instance} in the view"), |v| {
            v.nodes.iter().any(|n| {
                n.instances
                    .iter()
                    .any(|i| i.area == area && i.instance == instance)
            })
        })
        .await;
    }

    /// A portal out of `area` (instance 0) into an area that another node hosts, and the
    /// node hosting `area`.
    pub fn portal_to_another_node(
        &self,
        world: &shared::content::World,
        area: &str,
    ) -> (String, shared::content::Portal) {
        let node = self.owner(area, 0).expect("the area is placed").0;
        let portal = world
            .area_by_name(area)
            .expect("the area exists")
            .portals
            .iter()
            .find(|p| {
                !p.link_area.is_empty()
                    && self.owner(&p.link_area, 0).is_some_and(|(n, _)| n != node)
            })
            .expect("a portal into an area on another node")
            .clone();
        (node, portal)
    }

    /// Wait until the heartbeats report `n` players in the whole cluster.
    pub async fn wait_players(&self, n: u64) {
        self.wait_for(&format!("{n} players hosted once"), |v| players_in(v) == n)
            .await;
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for (_, mut c) in std::mem::take(&mut self.nodes) {
            // A stopped process must be continued to die on SIGKILL promptly everywhere.
            let _ = Command::new("kill")
                .args(["-CONT", &c.id().to_string()])
                .status();
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Players of every AreaInstance of a view, summed.
pub fn players_in(v: &ClusterView) -> u64 {
    v.nodes
        .iter()
        .flat_map(|n| n.instances.iter())
        .map(|i| i.players)
        .sum()
}

/// Connect to the gateway (development mode: no certificate check).
pub async fn connect(addr: SocketAddr) -> Connection {
    connect_with_profile(addr, client::Profile::Rc).await
}

/// Connect speaking `profile` (`rc/1` or `rc-compact/1`).
pub async fn connect_with_profile(addr: SocketAddr, profile: client::Profile) -> Connection {
    let mut opts = client::ConnectOptions::new(Verify::Insecure);
    opts.profile = profile;
    Connection::connect_with(addr, "gateway", opts)
        .await
        .expect("connected")
}

/// Connect over RCEnet (ENet 1.1, Realm Crafter's own transport) to the gateway's
/// `enet_listen`.
pub async fn connect_enet(addr: SocketAddr) -> Connection {
    let mut opts = client::ConnectOptions::new(Verify::Insecure);
    opts.transport = client::Transport::Enet;
    Connection::connect_with(addr, "gateway", opts)
        .await
        .expect("connected over RCEnet")
}

/// A new player over RCEnet, as Realm Crafter's own client goes about it: the update list
/// on a first connection, the account and the character on a second, and `P_StartGame`
/// alone (no login on it) on a third, the game connection. Returns the update list's
/// packets too.
pub async fn new_enet_player(
    addr: SocketAddr,
    user: &str,
) -> (Connection, GameStart, Vec<ServerPacket>) {
    let updates = enet_update_list(addr).await;
    let mut m = connect_enet(addr).await;
    m.create_account(user, "secret", "a@b.c").await.unwrap();
    assert!(m.login(user, "secret").await.unwrap().is_empty());
    let cat = m.fetch_catalogue().await.unwrap();
    let t = cat.playable().next().expect("a playable template").id;
    m.create_character(&NewCharacter::new(user, t))
        .await
        .unwrap();
    m.close(client::CloseCode::Normal).await;
    let (g, start) = enet_game(addr, user).await;
    (g, start, updates)
}

/// `P_FetchUpdateFiles` on a connection of its own, as the original client's first step;
/// every chunk of the answer, up to the one carrying the total.
pub async fn enet_update_list(addr: SocketAddr) -> Vec<ServerPacket> {
    let mut u = connect_enet(addr).await;
    u.send_frame(shared::proto::ids::P_FETCH_UPDATE_FILES, &[])
        .await
        .unwrap();
    let mut chunks = Vec::new();
    loop {
        let p = u
            .recv_until(|i| i.id() == shared::proto::ids::P_FETCH_UPDATE_FILES, WAIT)
            .await
            .expect("the update list");
        let last = matches!(&p.packet, ServerPacket::FetchUpdateFiles(f) if f.total.is_some());
        chunks.push(p.packet);
        if last {
            break;
        }
    }
    u.close(client::CloseCode::Normal).await;
    chunks
}

/// The original client's game connection: `P_StartGame` with the account's credentials
/// and nothing before it (retried while a previous session's logout is in flight).
pub async fn enet_game(addr: SocketAddr, user: &str) -> (Connection, GameStart) {
    let deadline = Instant::now() + WAIT;
    loop {
        let mut g = connect_enet(addr).await;
        g.set_credentials(user, "secret");
        match g.start_game(0).await {
            Ok(start) => return (g, start),
            Err(e) => {
                assert!(
                    Instant::now() < deadline,
                    "{user} could not start the game: {e}"
                );
                g.close(client::CloseCode::Normal).await;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

/// Create an account and a character (the first playable template), enter the world.
pub async fn new_player(addr: SocketAddr, user: &str) -> (Connection, GameStart) {
    new_player_with(addr, user, client::Profile::Rc).await
}

/// [`new_player`] on a connection speaking `profile`.
pub async fn new_player_with(
    addr: SocketAddr,
    user: &str,
    profile: client::Profile,
) -> (Connection, GameStart) {
    let mut c = connect_with_profile(addr, profile).await;
    c.create_account(user, "secret", "a@b.c").await.unwrap();
    assert!(c.login(user, "secret").await.unwrap().is_empty());
    let cat = c.fetch_catalogue().await.unwrap();
    let t = cat.playable().next().expect("a playable template").id;
    c.create_character(&NewCharacter::new(user, t))
        .await
        .unwrap();
    c.login(user, "secret").await.unwrap();
    let g = c.start_game(0).await.unwrap();
    (c, g)
}

/// Log in again (waiting out a previous session's logout) and enter the world.
pub async fn login_again(addr: SocketAddr, user: &str) -> (Connection, GameStart) {
    login_again_with(addr, user, false).await
}

/// Log in again as Realm Crafter's client does: the catalogue, the character screen
/// (`P_FetchCharacter`: the SDK's items, spells and quest log come from its blocks), then
/// the game.
pub async fn login_like_client(addr: SocketAddr, user: &str) -> (Connection, GameStart) {
    relogin(addr, user, true, true).await
}

/// As [`login_again`], fetching the catalogue first when `catalogue` (as Realm Crafter's
/// client does; the SDK's game clock starts from its block `"E"`).
pub async fn login_again_with(
    addr: SocketAddr,
    user: &str,
    catalogue: bool,
) -> (Connection, GameStart) {
    relogin(addr, user, catalogue, false).await
}

/// Log in until the session is free (a logout may still be in flight), then optionally the
/// catalogue and the character screen, then the game.
async fn relogin(
    addr: SocketAddr,
    user: &str,
    catalogue: bool,
    character: bool,
) -> (Connection, GameStart) {
    let deadline = Instant::now() + WAIT;
    loop {
        let mut c = connect(addr).await;
        match c.login(user, "secret").await {
            Ok(_) => {
                if catalogue {
                    c.fetch_catalogue().await.unwrap();
                }
                if character {
                    c.fetch_character(0).await.unwrap();
                }
                if let Ok(g) = c.start_game(0).await {
                    return (c, g);
                }
            }
            Err(client::LoginError::AlreadyLoggedIn) => {}
            Err(e) => panic!("login of {user}: {e}"),
        }
        assert!(Instant::now() < deadline, "could not log {user} in again");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A `P_StandardUpdate` standing at a point.
pub fn update(x: f32, y: f32, z: f32) -> StandardUpdateC2S {
    StandardUpdateC2S {
        dest_x: x,
        dest_z: z,
        y,
        x,
        z,
        is_running: 0,
        walking_backward: 0,
    }
}

/// The area a `P_ChangeArea` names.
pub fn area_of(p: &ServerPacket) -> Option<String> {
    match p {
        ServerPacket::ChangeArea(a) => {
            Some(String::from_utf8_lossy(a.area.as_bytes()).into_owned())
        }
        _ => None,
    }
}

/// Walk from `from` to `to` in steps the speed check accepts, until a `P_ChangeArea`
/// names `want`; every event on the way is shown to `observe`. Returns where the player
/// arrived.
pub async fn walk_through(
    c: &mut Connection,
    from: (f32, f32, f32),
    to: (f32, f32, f32),
    want: &str,
    mut observe: impl FnMut(&client::Event),
) -> (f32, f32, f32) {
    let steps = 30;
    // Then up to 10 s standing in the portal: a handoff through a lossy link on a busy
    // machine can take seconds (it once took more than the 1 s this used to allow).
    for i in 0..=steps + 100 {
        let k = (i.min(steps) as f32) / steps as f32;
        let p = (
            from.0 + (to.0 - from.0) * k,
            from.1 + (to.1 - from.1) * k,
            from.2 + (to.2 - from.2) * k,
        );
        c.move_to(p.0, p.1, p.2, true).unwrap();
        let end = Instant::now() + Duration::from_millis(100);
        while let Ok(Ok(e)) = tokio::time::timeout_at(end, c.next_event()).await {
            observe(&e);
            if let client::Event::AreaChanged { area, position, .. } = e
                && area == want
            {
                return position;
            }
        }
    }
    panic!("no P_ChangeArea into {want} walking {from:?} -> {to:?}");
}

/// Wait (bounded) for the next `P_ChangeArea`; returns it with the time it took.
pub async fn next_change_area(
    c: &mut Connection,
    within: Duration,
) -> Option<(Incoming, Duration)> {
    let t = Instant::now();
    c.recv_until(|i| matches!(i.packet, ServerPacket::ChangeArea(_)), within)
        .await
        .ok()
        .map(|i| (i, t.elapsed()))
}

/// An `input_budgets` setting no scenario test reaches: 100,000 a second of every action.
pub fn generous_budgets() -> String {
    let mut spec: Vec<String> = gateway::session::budget::Action::ALL
        .iter()
        .filter(|a| **a != gateway::session::budget::Action::Chat)
        .map(|a| format!("{}=100000/100000", a.name()))
        .collect();
    spec.push("bytes=1000000/10000000".into());
    spec.join(",")
}

/// A zone node's `rc_zone_rejections_total{reason=...}` from its admin `/metrics` (blocking:
/// call it from `spawn_blocking`); panics if the node does not answer or has no such line.
pub fn zone_rejections(admin: SocketAddr, reason: &str) -> u64 {
    let (status, m) =
        multiprocess::http_get(admin, "/metrics").expect("the node's /metrics answers");
    assert_eq!(status, 200, "{m}");
    let prefix = format!("rc_zone_rejections_total{{reason=\"{reason}\"}}");
    m.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str())?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {reason} in /metrics:\n{m}"))
}

/// Wait (bounded) for a red or other chat line containing `needle`.
pub async fn chat_containing(c: &mut Connection, needle: &str, within: Duration) -> Option<String> {
    let i = c
        .recv_until(
            |i| match &i.packet {
                ServerPacket::ChatMessage(m) => {
                    String::from_utf8_lossy(m.text.as_bytes()).contains(needle)
                }
                _ => false,
            },
            within,
        )
        .await
        .ok()?;
    match i.packet {
        ServerPacket::ChatMessage(m) => {
            Some(String::from_utf8_lossy(m.text.as_bytes()).into_owned())
        }
        _ => None,
    }
}

/// Send a move and wait (bounded) for the server's update of this player's own actor.
/// The move is re-sent every 300 ms, as a client does: datagrams may be lost.
pub async fn echo(c: &mut Connection, rid: u16, at: (f32, f32, f32), within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        c.send_update(&update(at.0, at.1, at.2)).unwrap();
        let got = c
            .recv_until(
                |i| {
                    matches!(&i.packet, ServerPacket::StandardUpdate(u)
                    if u.runtime_id == rid && (u.x - at.0).abs() < 0.5 && (u.z - at.2).abs() < 0.5)
                },
                Duration::from_millis(300),
            )
            .await;
        if got.is_ok() {
            return true;
        }
    }
    false
}

/// A bot walking in a small square, counting its own authoritative updates, until `stop`;
/// any error on its connection fails it, and so does a connection the server closed.
pub async fn walking_bot(
    mut c: Connection,
    rid: u16,
    start: (f32, f32, f32),
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> u64 {
    let mut own = 0u64;
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    let mut i = 0u32;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        tokio::select! {
            _ = tick.tick() => {
                i += 1;
                let (dx, dz) = match (i / 5) % 4 { 0 => (1.0, 0.0), 1 => (1.0, 1.0), 2 => (0.0, 1.0), _ => (0.0, 0.0) };
                c.move_to(start.0 + dx, start.1, start.2 + dz, false).unwrap();
            }
            e = c.next_event() => match e {
                Ok(client::Event::ActorMoved { runtime_id, .. }) if runtime_id == rid => own += 1,
                Ok(_) => {}
                Err(e) => panic!("a bot saw an error: {e}"),
            },
        }
    }
    assert!(c.close_reason().is_none(), "the bot's connection stayed up");
    c.close(client::CloseCode::Normal).await;
    own
}
