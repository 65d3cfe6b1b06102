//! Workspace tidy rules, checked by `cargo test` rather than by review.
//!
//! - every Rust source file opens with a `//!` line saying what it is for;
//! - every crate inherits the workspace lints;
//! - `shared` and `script` depend on no runtime, actor framework or QUIC stack;
//! - the pure cores (codecs, the simulation, the session logic, the script language) never
//!   read the wall clock or a global RNG, and never touch files or sockets;
//! - the simulation's data layers (`state`, `grid`, `instances`, `events`) do not reach up
//!   into the rules built on them;
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

/// The simulation's lower layers hold data; the rules are built on them, never the other
/// way round (ARCHITECTURE.md, `zone-node/`).
#[test]
fn sim_data_layers_do_not_import_the_rules() {
    let root = workspace_root().join("zone-node/src/sim");
    let rules = [
        "ai",
        "broadcast",
        "chat",
        "combat",
        "commands",
        "ingest",
        "despawn",
        "kill",
        "mount",
        "movement",
        "party",
        "pets",
        "portals",
        "recharge",
        "runtime",
        "setarea",
        "spawns",
        "stats",
        "water",
        "weather",
        "checkpoint",
        "dialogs",
        "effects",
        "items",
        "packets",
        "quests",
        "regen",
        "spells",
    ];
    let mut offences = Vec::new();
    for layer in ["state.rs", "grid.rs", "instances.rs", "events.rs"] {
        let text = fs::read_to_string(root.join(layer)).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for r in &rules {
                if code.contains(&format!("super::{r}::")) || code.contains(&format!("super::{r};"))
                {
                    offences.push(format!("zone-node/src/sim/{layer}:{}: uses {r}", n + 1));
                }
            }
        }
    }
    assert!(
        offences.is_empty(),
        "data layers must not depend on the rules above them:\n{}",
        offences.join("\n")
    );
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

/// The sim's one import circle may shrink, never grow (issue 38; the graph is drawn by
/// `tests/tools/sim_imports.py`, recorded in ARCHITECTURE.md). The modules that reach the
/// script runtime and are reached from it, through imports outside unit-test modules, must
/// be among the ones recorded when the circle was first measured.
#[test]
fn the_sim_import_circle_does_not_grow() {
    const RECORDED: &[&str] = &[
        "ai",
        "checkpoint",
        "clock",
        "combat",
        "despawn",
        "dialogs",
        "ingest",
        "items",
        "mount",
        "party",
        "runtime",
        "scripts",
        "setarea",
        "spawns",
        "spells",
    ];
    let sim = workspace_root().join("zone-node/src/sim");
    let mut modules: Vec<(String, Vec<PathBuf>)> = Vec::new();
    for entry in fs::read_dir(&sim).unwrap().flatten() {
        let path = entry.path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            let mut files = Vec::new();
            rust_files(&path, &mut files);
            modules.push((name, files));
        } else if let Some(stem) = name.strip_suffix(".rs")
            && !["mod", "testing", "tests"].contains(&stem)
        {
            modules.push((stem.to_owned(), vec![path]));
        }
    }
    let names: Vec<String> = modules.iter().map(|(n, _)| n.clone()).collect();
    let mut edges: Vec<(String, String)> = Vec::new();
    for (m, files) in &modules {
        for f in files {
            if f.file_name().is_some_and(|n| n == "tests.rs") {
                continue;
            }
            let text = fs::read_to_string(f).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            for (i, line) in lines.iter().enumerate() {
                if line.trim() == "#[cfg(test)]"
                    && lines
                        .get(i + 1)
                        .is_some_and(|l| l.trim_start().starts_with("mod "))
                {
                    break;
                }
                let code = line.split("//").next().unwrap_or("");
                for prefix in ["super::", "crate::sim::", "sim::"] {
                    for (at, _) in code.match_indices(prefix) {
                        let rest = &code[at + prefix.len()..];
                        let ident: String = rest
                            .chars()
                            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                            .collect();
                        if ident != *m && names.contains(&ident) {
                            edges.push((m.clone(), ident));
                        }
                    }
                }
            }
        }
    }
    let reach = |from: &str, forward: bool| {
        let mut seen = vec![from.to_owned()];
        let mut todo = vec![from.to_owned()];
        while let Some(v) = todo.pop() {
            for (a, b) in &edges {
                let (x, y) = if forward { (a, b) } else { (b, a) };
                if *x == v && !seen.contains(y) {
                    seen.push(y.clone());
                    todo.push(y.clone());
                }
            }
        }
        seen
    };
    let forward = reach("runtime", true);
    let circle: Vec<String> = reach("runtime", false)
        .into_iter()
        .filter(|m| forward.contains(m))
        .collect();
    let grown: Vec<&String> = circle
        .iter()
        .filter(|m| !RECORDED.contains(&m.as_str()))
        .collect();
    assert!(
        grown.is_empty(),
        "the sim's import circle grew: {grown:?} now import the script runtime and are \
         imported by it (python3 tests/tools/sim_imports.py shows the graph)"
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

/// The sim's lower layers import only the layers below them: `events` (the vocabulary)
/// nothing, `area` the vocabulary, `grid` the area, `instances` the vocabulary, `state`
/// those and the RNG. The one edge left upward is `state` → `scripts` (the `ScriptHooks`
/// trait object the state carries; issue 24 breaks it).
#[test]
fn the_sims_lower_layers_import_only_what_is_below_them() {
    let root = workspace_root().join("zone-node/src/sim");
    let allowed: &[(&str, &[&str])] = &[
        ("events.rs", &[]),
        ("area.rs", &["events"]),
        ("grid.rs", &["area"]),
        ("instances.rs", &["events"]),
        ("state.rs", &["area", "events", "grid", "instances", "rng"]),
    ];
    let mut offences = Vec::new();
    for (file, may) in allowed {
        let text = fs::read_to_string(root.join(file)).unwrap();
        let code: String = text
            .lines()
            .take_while(|l| !l.starts_with("#[cfg(test)]"))
            .map(|l| l.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        for (i, _) in code.match_indices("super::") {
            let name: String = code[i + 7..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() && !may.contains(&name.as_str()) && name != "ZoneSim" {
                offences.push(format!("sim/{file} uses super::{name}"));
            }
        }
    }
    offences.sort();
    offences.dedup();
    assert!(offences.is_empty(), "{offences:#?}");
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
