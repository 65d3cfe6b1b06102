//! Workspace tidy rules, checked by `cargo test` rather than by review.
//!
//! - every Rust source file opens with a `//!` line saying what it is for;
//! - every crate inherits the workspace lints;
//! - `shared` and `script` depend on no runtime, actor framework or QUIC stack;
//! - the pure cores (codecs, the simulation, the session logic, the script language) never
//!   read the wall clock or a global RNG, and never touch files or sockets;
//! - the simulation is layered (ARCHITECTURE.md, "The zone simulation's floors"): data,
//!   the script table, the rules, the top; each module imports only its own floor and the
//!   ones below it, no rule names the script phase or the dispatcher, and the import graph
//!   has no circle (`SIM_GRAPH=1 cargo test -p cluster-tests --test tidy sim_graph --
//!   --nocapture` prints it, `SIM_GRAPH=dot` for Graphviz);
//! - the simulation never hand-writes packet bytes: each packet's one encoder is its type in
//!   `shared::proto`, queued with `send_packet` / `send_packet_zone`;
//! - the state the atomic checkpoint groups protect has one owner each: the ground items
//!   change only in `sim/items/ground.rs` (which marks them dirty) and `sim/checkpoint.rs`,
//!   the handle counter advances only in `sim/items/exchange.rs` and `sim/checkpoint.rs`,
//!   and the entangled set is emptied only where it is saved (`sim/checkpoint.rs`,
//!   `sim/setarea.rs` after persisting).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

const CRATES: &[&str] = &[
    "shared",
    "script",
    "ops",
    "gateway",
    "zone-node",
    "client",
    "tests",
    "rcenet",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "target") {
                continue;
            }
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_module_opens_with_a_doc_line() {
    let root = workspace_root();
    let mut files = Vec::new();
    for krate in CRATES.iter().chain(["fuzz"].iter()) {
        rust_files(&root.join(krate), &mut files);
    }
    assert!(!files.is_empty());
    let missing: Vec<String> = files
        .iter()
        .filter(|p| {
            let text = fs::read_to_string(p).unwrap_or_default();
            !text.trim_start().starts_with("//!")
        })
        .map(|p| p.strip_prefix(&root).unwrap_or(p).display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "these files do not open with a `//!` line saying what they are for:\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_crate_inherits_workspace_lints() {
    let root = workspace_root();
    for krate in CRATES {
        let manifest = fs::read_to_string(root.join(krate).join("Cargo.toml")).unwrap();
        assert!(
            manifest.contains("[lints]\nworkspace = true"),
            "{krate}/Cargo.toml must have `[lints] workspace = true`"
        );
    }
}

#[test]
fn shared_and_script_have_no_runtime_dependencies() {
    for krate in ["shared", "script"] {
        let manifest = fs::read_to_string(workspace_root().join(krate).join("Cargo.toml")).unwrap();
        for banned in [
            "tokio", "actix", "quinn", "dashmap", "rustls", "rand", "rusqlite",
        ] {
            let found = manifest.lines().any(|l| l.trim_start().starts_with(banned));
            assert!(!found, "{krate}/Cargo.toml must not depend on {banned}");
        }
    }
}

/// `rcenet` is sans-IO and stands alone: addresses are data, but no socket, clock, thread,
/// runtime or randomness, and no dependency besides `thiserror` and `bytes`
/// (docs/rcenet.md).
#[test]
fn rcenet_is_sans_io_and_standalone() {
    let root = workspace_root();
    let mut files = Vec::new();
    rust_files(&root.join("rcenet/src"), &mut files);
    assert!(!files.is_empty());
    let banned = [
        "UdpSocket",
        "Instant",
        "SystemTime",
        "std::thread",
        "std::fs",
        "tokio",
        "rand::",
        "Mutex",
    ];
    let mut offences = Vec::new();
    for f in &files {
        let text = fs::read_to_string(f).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for b in &banned {
                if code.contains(b) {
                    offences.push(format!("{}:{}: {b}", f.display(), n + 1));
                }
            }
        }
    }
    assert!(
        offences.is_empty(),
        "rcenet must stay sans-IO:\n{}",
        offences.join("\n")
    );
    let manifest = fs::read_to_string(root.join("rcenet/Cargo.toml")).unwrap();
    let deps = manifest
        .split("[dependencies]")
        .nth(1)
        .and_then(|rest| rest.split("\n[").next())
        .unwrap_or_default();
    let names: Vec<&str> = deps
        .lines()
        .filter_map(|l| l.split(['.', '=', ' ']).next())
        .filter(|n| !n.is_empty() && !n.starts_with('#'))
        .collect();
    assert_eq!(names, ["thiserror", "bytes"], "rcenet's dependencies");
}

/// One encoder per packet: the simulation queues typed `shared::proto` packets
/// (`ZoneState::send_packet` / `send_packet_zone`) and never frames bytes of its own.
#[test]
fn sim_sends_only_typed_packets() {
    let root = workspace_root();
    let mut files = Vec::new();
    rust_files(&root.join("zone-node/src/sim"), &mut files);
    let banned = [
        ".send_to(",
        ".send_zone(",
        "push_frame(",
        "write_update_frame(",
        "write_frame(&mut pd.outbox",
    ];
    let mut offences = Vec::new();
    for f in &files {
        let text = fs::read_to_string(f).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for b in &banned {
                if code.contains(b) {
                    let at = f.strip_prefix(&root).unwrap_or(f).display().to_string();
                    offences.push(format!("{at}:{}: {b}", n + 1));
                }
            }
        }
    }
    assert!(
        offences.is_empty(),
        "the simulation sends typed packets only (`st.send_packet(id, &pkt)` / \
         `st.send_packet_zone(&pkt, except)` with a `shared::proto` type):\n{}",
        offences.join("\n")
    );
}

/// The compact position profile ends at the gateway (ARCHITECTURE.md): the zones speak
/// rc/1 only, so neither zone-node nor the zone's sim ever names `shared::compact`.
#[test]
fn the_compact_profile_ends_at_the_gateway() {
    let root = workspace_root();
    let mut files = Vec::new();
    rust_files(&root.join("zone-node/src"), &mut files);
    let offences: Vec<String> = files
        .iter()
        .filter(|f| {
            fs::read_to_string(f)
                .unwrap_or_default()
                .lines()
                .any(|l| l.split("//").next().unwrap_or("").contains("compact::"))
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        offences.is_empty(),
        "zone-node must not use the compact profile (the gateway transcodes): {offences:?}"
    );
}

/// The atomic groups (`docs/items.md`, "Nothing duplicated, nothing lost") rely on one
/// owner per piece of state: the ground items are changed only where the change marks them
/// dirty (or where they are saved and restored), the handle counter only in its one
/// function (and the restore), and the entangled set is emptied only where it is saved.
#[test]
fn item_persistence_state_has_one_owner() {
    let root = workspace_root();
    let sim = root.join("zone-node/src/sim");
    let rules: [(&[&str], &[&str]); 3] = [
        (
            &[
                ".ground.insert(",
                ".ground.remove(",
                ".ground.retain(",
                ".ground.clear(",
                ".ground.entry(",
                ".ground.get_mut(",
                ".ground.values_mut(",
                ".ground.iter_mut(",
                ".ground.append(",
                ".ground.extend(",
            ],
            &["items/ground.rs", "checkpoint.rs"],
        ),
        (
            &["ground_handle =", "ground_handle +=", "ground_handle -="],
            &["items/exchange.rs", "checkpoint.rs"],
        ),
        (
            &[
                "entangled.clear(",
                "entangled.remove(",
                "entangled.retain(",
                "&mut st.entangled",
                "&mut self.entangled",
                "entangled = ",
            ],
            &["checkpoint.rs", "setarea.rs"],
        ),
    ];
    let mut files = Vec::new();
    rust_files(&sim, &mut files);
    let mut offences = Vec::new();
    for f in &files {
        let rel = f
            .strip_prefix(&sim)
            .unwrap_or(f)
            .display()
            .to_string()
            .replace('\\', "/");
        let text = fs::read_to_string(f).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for (banned, owners) in &rules {
                if owners.contains(&rel.as_str()) {
                    continue;
                }
                for b in *banned {
                    if code.contains(b) {
                        offences.push(format!("zone-node/src/sim/{rel}:{}: {b}", n + 1));
                    }
                }
            }
        }
    }
    assert!(
        offences.is_empty(),
        "item state changed outside its owner (see docs/items.md, \"Nothing duplicated, \
         nothing lost\"):\n{}",
        offences.join("\n")
    );
}

/// One way out of a zone (`docs/simulation.md`): only `sim/despawn.rs` frees an actor's
/// slot, so every cause runs the same clean-ups.
#[test]
fn only_despawn_removes_an_actor() {
    let sim = workspace_root().join("zone-node/src/sim");
    let mut files = Vec::new();
    rust_files(&sim, &mut files);
    let mut offences = Vec::new();
    for f in &files {
        let rel = f
            .strip_prefix(&sim)
            .unwrap_or(f)
            .display()
            .to_string()
            .replace('\\', "/");
        if rel == "despawn.rs" {
            continue;
        }
        let text = fs::read_to_string(f).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code.contains(".free_actor(") {
                offences.push(format!("zone-node/src/sim/{rel}:{}", n + 1));
            }
        }
    }
    assert!(
        offences.is_empty(),
        "an actor freed outside sim::despawn::despawn:\n{}",
        offences.join("\n")
    );
}

/// One transfer id end to end (`docs/handoff.md`, "One id, end to end"): ids are made only
/// by `TransferMinter::mint`, and no hop renames a transfer (no `transfer_id = ...`
/// rewrite, no map from someone else's id to its own).
#[test]
fn transfer_ids_are_minted_in_one_place_and_never_renamed() {
    let root = workspace_root();
    let mut files = Vec::new();
    for dir in ["shared/src", "gateway/src", "zone-node/src", "tests/src"] {
        rust_files(&root.join(dir), &mut files);
    }
    let banned = [
        "TransferId {",
        "TransferId(",
        ".transfer_id = ",
        "remote_in",
        "their_id",
    ];
    let mut offences = Vec::new();
    for f in &files {
        let rel = f
            .strip_prefix(&root)
            .unwrap_or(f)
            .display()
            .to_string()
            .replace('\\', "/");
        if rel.ends_with("internal/transfer_id.rs") || rel.ends_with("/tests.rs") {
            continue;
        }
        let text = fs::read_to_string(f).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("#[cfg(test)]") {
                // Unit tests (at the end of a file) may write ids by hand.
                break;
            }
            let code = line.split("//").next().unwrap_or("");
            for b in banned {
                if code.contains(b) {
                    offences.push(format!("{rel}:{}: {b}", n + 1));
                }
            }
        }
    }
    assert!(
        offences.is_empty(),
        "a transfer id made or renamed outside `TransferMinter::mint`:\n{}",
        offences.join("\n")
    );
}

/// The control-plane simulator drives the node's real decisions: its node is the
/// `NodeCore`, the `Retention` and the `NodeHandshake` of `zone-node`, never a copy of
/// them (a table, a session map or an outbox of its own).
#[test]
fn the_simulator_drives_the_real_node_core() {
    let root = workspace_root();
    let mut files = Vec::new();
    rust_files(&root.join("tests/src/simulate"), &mut files);
    let text: String = files
        .iter()
        .map(|f| fs::read_to_string(f).unwrap_or_default())
        .collect();
    for needed in [
        "NodeCore",
        "Retention",
        "NodeHandshake",
        "stop_step",
        "save_reason",
    ] {
        assert!(
            text.contains(needed),
            "tests/src/simulate no longer uses zone-node's {needed}"
        );
    }
    for copy in [
        "TransferTable",
        "BTreeMap<SessionId, InstanceKey>",
        "outbox",
        "STOP_TICKS",
    ] {
        assert!(
            !text.contains(copy),
            "tests/src/simulate has its own {copy}: drive zone_node::actor::node_core instead"
        );
    }
}

/// Pure cores: no wall clock, no global RNG, no sockets, no actors.
#[test]
fn pure_cores_do_not_touch_the_clock_or_io() {
    let root = workspace_root();
    let pure_dirs = [
        root.join("shared/src/wire.rs"),
        root.join("shared/src/wire"),
        root.join("shared/src/frame.rs"),
        root.join("shared/src/proto"),
        root.join("shared/src/proto.rs"),
        root.join("shared/src/npos.rs"),
        root.join("shared/src/compact"),
        root.join("zone-node/src/sim"),
        root.join("gateway/src/session"),
        root.join("gateway/src/store/health.rs"),
        root.join("gateway/src/directory.rs"),
        root.join("gateway/src/chat.rs"),
        root.join("shared/src/internal"),
        root.join("script/src"),
        root.join("zone-node/src/script_store.rs"),
        root.join("zone-node/src/actor/transfers.rs"),
        root.join("zone-node/src/actor/node_core.rs"),
        root.join("zone-node/src/actor/node_core"),
        root.join("zone-node/src/actor/retention.rs"),
        root.join("zone-node/src/actor/inbox.rs"),
        root.join("gateway/src/control"),
        root.join("gateway/src/party.rs"),
        root.join("gateway/src/script_store.rs"),
        root.join("zone-node/src/actor/watchdog.rs"),
    ];
    let banned = [
        "DashMap",
        "Mutex",
        "mpsc",
        "oneshot",
        "tracing::Span",
        "info_span!",
        "Instant::now",
        "SystemTime::now",
        "thread_rng",
        "rand::random",
        "std::net",
        "tokio::",
        "actix::",
        "quinn::",
        "std::fs",
    ];
    let mut files = Vec::new();
    for d in &pure_dirs {
        if d.is_file() {
            files.push(d.clone());
        } else {
            rust_files(d, &mut files);
        }
    }
    let mut offences = Vec::new();
    for f in &files {
        let text = fs::read_to_string(f).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for b in &banned {
                if code.contains(b) {
                    offences.push(format!("{}:{}: {b}", f.display(), n + 1));
                }
            }
        }
    }
    assert!(
        offences.is_empty(),
        "pure modules must take time, randomness and I/O as inputs:\n{}",
        offences.join("\n")
    );
}

/// The metric names of every query of the shipped Grafana dashboard
/// (`deploy/grafana/dashboards/realm-crafter.json`): each is one a binary exports (its name
/// is a literal in the gateway's, the zone node's or `ops`' source), and the dashboard has the
/// panels operations asks of it. The compose smoke test runs the same queries against a
/// live Prometheus.
#[test]
fn the_dashboard_queries_only_metrics_that_exist() {
    let root = workspace_root();
    let path = root.join("deploy/grafana/dashboards/realm-crafter.json");
    let text = fs::read_to_string(&path).unwrap();
    let dash: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut exprs = Vec::new();
    let mut titles = Vec::new();
    fn walk(v: &serde_json::Value, exprs: &mut Vec<String>, titles: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                if let Some(e) = m.get("expr").and_then(|e| e.as_str()) {
                    exprs.push(e.to_owned());
                }
                if m.contains_key("gridPos")
                    && let Some(t) = m.get("title").and_then(|t| t.as_str())
                {
                    titles.push(t.to_owned());
                }
                m.values().for_each(|v| walk(v, exprs, titles));
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| walk(v, exprs, titles)),
            _ => {}
        }
    }
    walk(&dash, &mut exprs, &mut titles);
    assert!(exprs.len() >= 20, "{exprs:?}");

    let mut source = String::new();
    for dir in ["gateway/src", "zone-node/src", "ops/src"] {
        let mut files = Vec::new();
        rust_files(&root.join(dir), &mut files);
        for f in files {
            source.push_str(&fs::read_to_string(f).unwrap());
        }
    }
    let mut missing = Vec::new();
    for e in &exprs {
        for word in e.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if !(word.starts_with("rc_") || word.starts_with("process_")) {
                continue;
            }
            let base = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| word.strip_suffix(s))
                .unwrap_or(word);
            if !source.contains(&format!("\"{base}\"")) {
                missing.push(format!("{word} (in {e})"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "metrics no binary exports: {missing:#?}"
    );
    // The labels the dashboards group by are the exported ones, never Prometheus' own
    // `instance` for an AreaInstance.
    assert!(
        exprs.iter().all(|e| !e.contains("area, instance")),
        "{exprs:#?}"
    );
    for want in [
        "Tick p99 per AreaInstance",
        "Players per zone node",
        "Players per AreaInstance",
        "Handoffs per second",
        "Bytes per player",
        "Logins refused by reason",
        "Limiter hits",
    ] {
        assert!(
            titles.iter().any(|t| t == want),
            "no panel {want:?} in {titles:?}"
        );
    }
    // Every panel queries the dashboard's data source variable, so an import picks one.
    assert!(
        !text.contains("\"uid\": \"prometheus\""),
        "a hard-coded data source"
    );
}

/// The gateway uses the `zone-node` crate only to embed a node (`--standalone`,
/// `gateway/src/standalone.rs`); the plumbing both binaries share (telemetry, logging, the
/// health probe, process metrics, OS randomness, the shutdown signal) is the `ops` crate's.
#[test]
fn the_gateway_uses_zone_node_only_to_embed_one() {
    let root = workspace_root();
    let mut files = Vec::new();
    rust_files(&root.join("gateway/src"), &mut files);
    let mut offences = Vec::new();
    for f in &files {
        if f.ends_with("standalone.rs") {
            continue;
        }
        let text = fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code.contains("zone_node::") {
                offences.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        offences.is_empty(),
        "the gateway uses zone-node outside standalone.rs:\n{}",
        offences.join("\n")
    );
    for moved in ["telemetry.rs", "logging.rs"] {
        assert!(
            !root.join("zone-node/src").join(moved).exists(),
            "{moved} belongs to the ops crate"
        );
    }
}

/// Every queue a client feeds is bounded in bytes (issue 36): the client connection task
/// makes no unbounded channel, every batch of client frames it hands the hub carries its
/// `InFlight` bytes, and the zone queues a player's inputs only through the inbox's bounded
/// `push_player`.
#[test]
fn client_fed_queues_are_bounded() {
    let root = workspace_root();
    let client = fs::read_to_string(root.join("gateway/src/net/client.rs")).unwrap();
    assert!(
        !client.contains("unbounded_channel"),
        "gateway/src/net/client.rs: a client's queues are bounded (client_queue_bytes)"
    );
    let frames = client.matches("HubEvent::Frames {").count();
    let carried = client.matches("inflight,").count();
    assert!(
        frames >= 1 && carried >= frames,
        "every HubEvent::Frames from a client carries its InFlight bytes"
    );
    let registry = fs::read_to_string(root.join("zone-node/src/actor/mod.rs")).unwrap();
    assert!(
        !registry.contains("ZoneInput::Player {"),
        "zone-node/src/actor/mod.rs: player inputs enter an inbox only through InboxQueue::push_player"
    );
}

// ----- the zone simulation's floors ------------------------------------------------------

/// The data floor, bottom up, with what each may import (the vocabulary first).
const SIM_DATA: &[(&str, &[&str])] = &[
    ("events", &[]),
    ("rng", &[]),
    ("engine", &["events"]),
    ("area", &["events"]),
    ("instances", &["events"]),
    ("grid", &["area"]),
    (
        "state",
        &["area", "engine", "events", "grid", "instances", "rng"],
    ),
    ("packets", &["events", "state"]),
];
/// The script table: above the data, below the rules.
const SIM_TABLE: &[&str] = &["script_table"];
/// The top: the input dispatcher, the script dispatcher and the script phase (with its
/// natives). It may import anything; nothing below may import it.
const SIM_TOP: &[&str] = &["ingest", "scripts", "runtime"];
/// Circles the rules may keep because Realm Crafter's rules are mutual there (named and
/// justified in ARCHITECTURE.md): the AI attacks through combat (`actor_attack`), and an
/// NPC that is hit calls its allies through the AI (`call_for_help`), as in Realm Crafter.
const SIM_CIRCLES_KEPT: &[&[&str]] = &[&["ai", "combat"]];

/// The floor of a sim module: 0 data, 1 script table, 2 rules, 3 top.
fn sim_floor(m: &str) -> u8 {
    if SIM_DATA.iter().any(|(d, _)| *d == m) {
        0
    } else if SIM_TABLE.contains(&m) {
        1
    } else if SIM_TOP.contains(&m) {
        3
    } else {
        2
    }
}

/// The sim's import graph, drawn from the code: for each module (a file or folder of
/// `zone-node/src/sim`; `items/bag.rs` counts as `items`), the sibling modules it names
/// (`super::…` resolved from the file's own depth, `crate::sim::…`, grouped imports
/// `super::{a, b}` included). Comments, unit-test modules (`#[cfg(test)] mod …` to the end
/// of the file, `tests.rs`) and the test harness `testing.rs` are left out: only what the
/// running zone is built from counts.
fn sim_graph() -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    use std::collections::{BTreeMap, BTreeSet};
    let sim = workspace_root().join("zone-node/src/sim");
    let mut files = Vec::new();
    rust_files(&sim, &mut files);
    let mut modules: BTreeSet<String> = BTreeSet::new();
    for entry in fs::read_dir(&sim).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.path().is_dir() {
            modules.insert(name);
        } else if let Some(stem) = name.strip_suffix(".rs")
            && !["mod", "testing", "tests"].contains(&stem)
        {
            modules.insert(stem.to_owned());
        }
    }
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut graph: BTreeMap<String, BTreeSet<String>> = modules
        .iter()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    for f in &files {
        let rel: Vec<String> = f
            .strip_prefix(&sim)
            .unwrap()
            .iter()
            .map(|c| c.to_string_lossy().into_owned())
            .collect();
        let Some(first) = rel.first() else { continue };
        let top = first.trim_end_matches(".rs").to_owned();
        let file = rel.last().cloned().unwrap_or_default();
        if !modules.contains(&top) || file == "tests.rs" {
            continue;
        }
        // The module path of this file below `sim`: `super` n times from it reaches `sim`
        // when n equals its length.
        let mut path: Vec<&str> = rel.iter().map(String::as_str).collect();
        let stem = file.trim_end_matches(".rs").to_owned();
        path.pop();
        if stem != "mod" {
            path.push(&stem);
        }
        let depth = path.len();
        let text = fs::read_to_string(f).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let mut code = String::new();
        for (i, line) in lines.iter().enumerate() {
            if line.trim() == "#[cfg(test)]"
                && lines
                    .get(i + 1)
                    .is_some_and(|l| l.trim_start().starts_with("mod "))
            {
                break;
            }
            code.push_str(line.split("//").next().unwrap_or(""));
            code.push('\n');
        }
        let mut named: Vec<String> = Vec::new();
        let mut at = 0;
        while at < code.len() {
            let rest = &code[at..];
            let (skip, at_sim) = if let Some(r) = rest.strip_prefix("crate::sim::") {
                (rest.len() - r.len(), true)
            } else if rest.starts_with("super::")
                && !code[..at].ends_with("super::")
                && !code[..at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            {
                let mut n = 0;
                let mut r = rest;
                while let Some(t) = r.strip_prefix("super::") {
                    n += 1;
                    r = t;
                }
                (rest.len() - r.len(), n == depth)
            } else {
                at += rest.chars().next().map_or(1, char::len_utf8);
                continue;
            };
            at += skip;
            if !at_sim {
                continue;
            }
            let after = &code[at..];
            if let Some(group) = after.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                for item in group[..end].split(',') {
                    named.push(ident(item));
                }
            } else {
                named.push(ident(after));
            }
        }
        for n in named {
            if n != top && modules.contains(&n) {
                graph.get_mut(&top).unwrap().insert(n);
            }
        }
    }
    graph
}

/// The circles of a graph (strongly connected components of more than one module).
fn circles(
    graph: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
) -> Vec<Vec<String>> {
    let reach = |from: &str| {
        let mut seen = std::collections::BTreeSet::new();
        let mut todo = vec![from.to_owned()];
        while let Some(v) = todo.pop() {
            for w in graph.get(&v).into_iter().flatten() {
                if seen.insert(w.clone()) {
                    todo.push(w.clone());
                }
            }
        }
        seen
    };
    let mut out: Vec<Vec<String>> = Vec::new();
    for m in graph.keys() {
        if out.iter().any(|c| c.contains(m)) {
            continue;
        }
        let forward = reach(m);
        if !forward.contains(m) {
            continue;
        }
        let comp: Vec<String> = graph
            .keys()
            .filter(|o| *o == m || (forward.contains(*o) && reach(o).contains(m)))
            .cloned()
            .collect();
        if comp.len() > 1 {
            out.push(comp);
        }
    }
    out
}

/// The zone simulation's floors (issue 38, ARCHITECTURE.md): each module imports only its
/// own floor and those below it (the data floor in its own order), and nothing below the
/// top names the script phase (`runtime`), the dispatcher (`scripts`) or the input
/// dispatcher (`ingest`): rules announce engine events, the top reacts.
#[test]
fn the_sim_is_layered() {
    let graph = sim_graph();
    let mut offences = Vec::new();
    for (m, deps) in &graph {
        let floor = sim_floor(m);
        for d in deps {
            let ok = match floor {
                0 => SIM_DATA
                    .iter()
                    .find(|(n, _)| n == m)
                    .is_some_and(|(_, may)| may.contains(&d.as_str())),
                1 => sim_floor(d) == 0,
                2 => sim_floor(d) <= 2,
                _ => true,
            };
            if !ok {
                offences.push(format!(
                    "sim/{m} (floor {floor}) imports sim/{d} (floor {})",
                    sim_floor(d)
                ));
            }
        }
    }
    assert!(
        offences.is_empty(),
        "the sim's floors are crossed upward:\n{}",
        offences.join("\n")
    );
    // The graph is really drawn: the rules do import the floors below them.
    assert!(graph["kill"].contains("engine") && graph["kill"].contains("despawn"));
    assert!(
        graph["ingest"].contains("commands"),
        "grouped imports are read"
    );
}

/// The sim's import graph has no circle except the ones kept on purpose
/// ([`SIM_CIRCLES_KEPT`]): every rule can be read, tested and changed from the floors
/// below it up.
#[test]
fn the_sim_has_no_import_circle() {
    let found = circles(&sim_graph());
    let unexpected: Vec<&Vec<String>> = found
        .iter()
        .filter(|c| {
            !SIM_CIRCLES_KEPT
                .iter()
                .any(|k| k.len() == c.len() && c.iter().all(|m| k.contains(&m.as_str())))
        })
        .collect();
    assert!(
        unexpected.is_empty(),
        "import circles in the sim: {unexpected:?} (SIM_GRAPH=1 cargo test -p cluster-tests \
         --test tidy sim_graph -- --nocapture prints the graph)"
    );
}

/// Prints the sim's import graph with each module's floor (`SIM_GRAPH=1`), or as
/// Graphviz (`SIM_GRAPH=dot`); silent otherwise.
#[test]
fn sim_graph_prints_on_request() {
    let graph = sim_graph();
    match std::env::var("SIM_GRAPH").as_deref() {
        Ok("dot") => {
            println!("digraph sim {{\n  rankdir=BT;");
            for (m, deps) in &graph {
                println!("  \"{m}\" [label=\"{m} ({})\"];", sim_floor(m));
                for d in deps {
                    println!("  \"{m}\" -> \"{d}\";");
                }
            }
            println!("}}");
        }
        Ok(_) => {
            for floor in (0..=3).rev() {
                println!("floor {floor}:");
                for (m, deps) in graph.iter().filter(|(m, _)| sim_floor(m) == floor) {
                    let deps: Vec<&str> = deps.iter().map(String::as_str).collect();
                    println!(
                        "  {m}: {}",
                        if deps.is_empty() {
                            "-".to_owned()
                        } else {
                            deps.join(" ")
                        }
                    );
                }
            }
            for c in circles(&graph) {
                println!("circle of {}: {}", c.len(), c.join(" "));
            }
        }
        Err(_) => {}
    }
}
