//! Criterion benchmarks of the zone's scripts phase: the per-tick cost of 10,000 suspended
//! scripts in one zone (all sleeping in `DoEvents`, or waiting in `WaitKill`), and of
//! 1,000 scripts that all wake and run a little every tick. Figures and commands are in
//! `docs/benchmarks.md`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use zone_node::sim::testing::{SimHarness, templates};

/// A zone with `n` instances of `src`'s `Main`, started and parked.
fn zone_with(n: usize, src: &[u8]) -> SimHarness {
    let mut h = SimHarness::with_scripts(&[("Bench", src)]);
    let (_, pid) = h.spawn_player("Ann", 0.0, 0.0);
    let handle = h.sim.state().handle_of(pid);
    for _ in 0..n {
        zone_node::sim::script_table::queue(
            h.sim.state_mut(),
            "Bench",
            "Main",
            handle,
            0,
            script::RStr::EMPTY,
        );
    }
    h.tick();
    h.clear();
    assert_eq!(h.sim.state().scripts.len(), n);
    h
}

fn suspended(c: &mut Criterion) {
    let mut g = c.benchmark_group("scripts phase");
    let mut sleeping = zone_with(
        10_000,
        b"Function Main()\n  DoEvents(1000000000)\nEnd Function\n",
    );
    g.bench_function("tick with 10,000 scripts in DoEvents", |b| {
        b.iter(|| {
            black_box(sleeping.tick());
            sleeping.clear();
        });
    });
    let mut killing = zone_with(
        10_000,
        b"Function Main()\n  WaitKill(Actor(), 2, 5)\nEnd Function\n",
    );
    g.bench_function("tick with 10,000 scripts in WaitKill", |b| {
        b.iter(|| {
            black_box(killing.tick());
            killing.clear();
        });
    });
    let _ = templates::WOLF;
    let mut busy = zone_with(
        1_000,
        b"Function Main()\n  Repeat\n    a = a + 1\n    DoEvents(1)\n  Forever\nEnd Function\n",
    );
    g.bench_function("tick with 1,000 scripts waking every tick", |b| {
        b.iter(|| {
            black_box(busy.tick());
            busy.clear();
        });
    });
    g.finish();
}

criterion_group!(benches, suspended);
criterion_main!(benches);
