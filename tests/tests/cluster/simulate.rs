//! The deterministic simulator of the control plane (`cluster_tests::simulate`,
//! docs/testing.md): 2,000 random fault schedules per run (10,000 and a million in the
//! nightly and recorded runs), each checked after every step, a replay check, and the seeds that found bugs,
//! kept as regressions.

use cluster_tests::simulate::{self, Options, Report, Schedule};

/// Schedules per run: 2,000 in CI (two halves of about 27 s each on the 2-core machine,
/// one at a time beside the cluster scenarios), so the whole CI run fits its 10 minutes; `SIMULATE_SEEDS=10000` is the nightly size of this test,
/// and the searches of hundreds of thousands use the `simulate` binary in release
/// (docs/testing.md, "Runs on record").
fn seeds() -> u64 {
    std::env::var("SIMULATE_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000)
}

/// Runs `range` on this thread; fails with the first violation's seed and trace tail.
fn run_range(range: std::ops::Range<u64>) {
    let opts = Options::default();
    for seed in range {
        let r = simulate::run(seed, &opts);
        if let Some(v) = &r.violation {
            fail(&r, &format!("at {} ms: {}", v.at_ms, v.what));
        }
    }
}

fn fail(r: &Report, what: &str) -> ! {
    let tail: Vec<&String> = r.trace.iter().rev().take(80).rev().collect();
    panic!(
        "seed {} broke an invariant {what}\n--- trace tail (replay: cargo run --release -p \
         cluster-tests --bin simulate -- --seeds 1 --first-seed {} --trace)\n{}",
        r.seed,
        r.seed,
        tail.iter()
            .map(|l| l.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

// Two halves, so the test harness runs them on both cores.
#[test]
fn random_schedules_first_half_hold_every_invariant() {
    let n = seeds();
    run_range(0..n / 2);
}

#[test]
fn random_schedules_second_half_hold_every_invariant() {
    let n = seeds();
    run_range(n / 2..n);
}

#[test]
fn a_seed_replays_exactly() {
    let opts = Options::default();
    for seed in [7, 1_234, 99_999] {
        let a = simulate::run(seed, &opts);
        let b = simulate::run(seed, &opts);
        assert_eq!(a.trace, b.trace, "seed {seed} did not replay");
        assert_eq!(a.steps, b.steps);
        assert!(a.steps > 1_000, "seed {seed}: a schedule that does nothing");
    }
}

#[test]
fn schedules_exercise_handoffs_recoveries_and_faults() {
    let opts = Options::default();
    let (mut handoffs, mut recoveries, mut restarts, mut kills, mut pauses) = (0, 0, 0, 0, 0);
    let (mut given_up, mut kept, mut adopted) = (0, 0, 0);
    for seed in 0..100 {
        let r = simulate::run(seed, &opts);
        kept += r.kept;
        adopted += r.adopted;
        handoffs += r.handoffs;
        recoveries += r.recoveries;
        restarts += r
            .trace
            .iter()
            .filter(|l| l.contains("gateway restarts"))
            .count();
        kills += r.trace.iter().filter(|l| l.contains(" killed")).count();
        pauses += r.trace.iter().filter(|l| l.contains(" paused for")).count();
        given_up += r
            .trace
            .iter()
            .filter(|l| l.contains("(its tick froze)"))
            .count();
    }
    assert!(handoffs > 200, "{handoffs} handoffs");
    assert!(recoveries > 50, "{recoveries} recoveries");
    assert!(
        restarts > 20 && kills > 50 && pauses > 50,
        "{restarts} {kills} {pauses}"
    );
    // The tick watchdog giving one instance of a node up (issue 36).
    assert!(given_up > 20, "{given_up} instances given up");
    // Leader changes whose new leader kept the sessions in the world (issue 41).
    assert!(kept > 20 && adopted > 10, "{kept} kept, {adopted} adopted");
}

/// The seeds that found bugs, each named by what it found (docs/testing.md has the
/// story). The simulator's schedule depends on the code it drives, so these are kept as
/// runs that must stay clean; the unit tests beside each fix pin the bug itself.
#[test]
fn regression_seeds() {
    let found = [
        // The registration of a restarted node lost its instances' players (the control
        // plane ignored the directory's `Lost` at registration).
        (6, "lost at registration"),
        // A transfer request lost with a link, and a frozen player logging out, left the
        // node's transfer table pending forever.
        (3, "node transfer never ends"),
        // A link loss was taken for a node loss: the gateway committed a transfer whose
        // source restored the actor, and the player was live twice.
        (34, "decided on a link loss"),
        // A paused node's stale checkpoint was stored after a gateway restart (fencing
        // tokens).
        (170, "stale write after restart"),
        // An arrival prepared in an instance that then stopped stayed pending.
        (441, "prepared arrival into a stopped instance"),
        // A node that came back was given back an instance this gateway had withdrawn.
        (3_778, "adopted a withdrawn instance"),
        // A destination that restarted holding a prepared copy lost the player.
        (12_015, "destination restarted while prepared"),
        // Transfer ids of a restarted gateway collided with a node's old ones.
        (17_894, "transfer ids across restarts"),
        // A stale copy's `PlayerDetached` was read as the placed copy leaving.
        (39_361, "stale copy detached"),
        // An instance being stopped adopted the generation assigned after it.
        (89_504, "stopping instance adopted a new generation"),
        // A player who had logged out was put back when its node was lost.
        (39_994, "leaving player recovered"),
        (51_542, "leaving player recovered"),
        // A transfer's source, given up while only paused, restored its copy under the
        // same fencing token.
        (48_324, "paused source restored its copy"),
        // The final checks ran between a handoff inside a node and its `PlayerMoved`.
        (90_146, "final check raced a local handoff"),
        // A prepared destination given up by its node's watchdog (issue 36) while the
        // placement was held after a gateway restart: the transfer was refused at once
        // although its source had committed, and the player was lost.
        (106_832, "prepared destination given up"),
        // A leader change kept a player whose node had been lost and who had been put
        // back on another: the new leader adopted the stale copy the lost node reported
        // first (issue 41; adoption now asks for the node and the store's fencing token).
        (7_615, "kept session adopted from a stale copy"),
        // Issue 41, session 36 (a deposed leader running on, late claims): a deposed
        // leader's unstored fencing token accepted over the adopted copy's.
        (345, "deposed leader's token accepted"),
        (
            159,
            "adopted a copy the deposed leader put back on the same node",
        ),
        (27_021, "deposed leader's token accepted"),
        // A stale copy held for a claim forgotten when the player was adopted elsewhere.
        (24_224, "held stale copy forgotten"),
        // A late claim adopted a player whose instance had been given up.
        (42_734, "claim after the instance was given up"),
        // Adopted in a copy placed elsewhere since, stopped under him.
        (21_481, "adopted in a stale instance"),
        // A refused duplicate `TransferIn` made the node forget the live copy's route.
        (49_959, "refused transfer unrouted the live copy"),
        // The simulator's own: a refused second copy took over the held one's tag.
        (62_565, "refused copy's tag"),
        // Issue 41, session 38 (the million-schedule run): a deposed leader's recovery
        // committed a player into one instance of a node, the new leader's recovery
        // prepared him into another instance of the same node, and its detach of the
        // orphan took the newer copy (the node now refuses a transfer of a session it
        // already hosts).
        (203_333, "one session in two instances of a node"),
        // Issue 41, session 39, the checker's own: a handoff whose source node died went
        // on from the gateway, its player frozen 4.2 s; the progress check allowed 2 s.
        (
            689_247,
            "a handoff frozen past its zone's timeout after its source died",
        ),
    ];
    let opts = Options::default();
    for (seed, what) in found {
        let r = simulate::run(seed, &opts);
        if let Some(v) = &r.violation {
            fail(
                &r,
                &format!("(regression: {what}) at {} ms: {}", v.at_ms, v.what),
            );
        }
    }
}

/// The shrunk schedules of the failures found past the CI range
/// (`tests/simulate-regressions/*.json`, each the `schedule` a failing run printed, named
/// by its seed and what it found): each replays clean. Unlike a seed, a schedule names its
/// faults, so it keeps reproducing the same story while the code it drives changes.
#[test]
fn regression_schedules_replay_clean() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("simulate-regressions");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "{files:?}");
    let opts = Options::default();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let schedule: Schedule =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let r = simulate::replay(&schedule, &opts);
        if let Some(v) = &r.violation {
            fail(
                &r,
                &format!("(regression {}) at {} ms: {}", f.display(), v.at_ms, v.what),
            );
        }
    }
}
