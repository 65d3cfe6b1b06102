//! Criterion benchmark of what the operator's live map costs a zone: one view
//! (`sim::inspect::map_view`) of an instance with 2,000 actors, and the same encoded as
//! the node sends it (`Msg::MapAnswer`, MessagePack). Figures: `docs/benchmarks.md`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use shared::internal::Msg;
use zone_node::sim::testing::{SimHarness, templates};

fn live_map(c: &mut Criterion) {
    let mut h = SimHarness::new();
    for i in 0..1_000 {
        let f = i as f32;
        h.spawn_player(&format!("Player{i}"), (f * 7.0) % 500.0, (f * 13.0) % 500.0);
    }
    let mut i = 0;
    while h.sim.state().actor_count() < 2_000 && i < 5_000 {
        let f = i as f32;
        h.spawn_npc(templates::WOLF, (f * 11.0) % 500.0, (f * 3.0) % 500.0);
        i += 1;
    }
    h.tick();
    h.clear();
    let n = h.sim.state().actor_count();
    assert!(n >= 1_900, "{n} actors");
    eprintln!("live map bench: {n} actors");
    let mut g = c.benchmark_group("live map");
    g.bench_function("view of 2,000 actors", |b| {
        b.iter(|| black_box(zone_node::sim::inspect::map_view(h.sim.state())));
    });
    g.bench_function("view of 2,000 actors, encoded", |b| {
        b.iter(|| {
            let view = zone_node::sim::inspect::map_view(h.sim.state());
            let msg = Msg::MapAnswer {
                qid: 1,
                view: Some(view),
            };
            black_box(rmp_serde::to_vec(&msg).map(|v| v.len()).unwrap_or(0))
        });
    });
    g.finish();
}

criterion_group!(benches, live_map);
criterion_main!(benches);
