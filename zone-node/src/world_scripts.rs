//! A world's scripts compiled once per process (every zone of the node shares the
//! result), with their diagnostics logged, and the per-zone numbering of NPC script
//! handles.

use std::sync::Arc;

use script::bytecode::ScriptSet;
use script::compile::{self, SourceFile};
use script::{Diagnostic, Severity};
use shared::content::World;

/// Compile the world's scripts (`World::scripts`).
pub fn compile_world(world: &World) -> (ScriptSet, Vec<Diagnostic>) {
    let files: Vec<SourceFile> = world
        .scripts
        .iter()
        .map(|s| SourceFile::new(s.name.clone(), s.bytes.clone()))
        .collect();
    let c = compile::compile(&files);
    (c.set, c.diagnostics)
}

/// Compile and log: each error or warning one line; a script with errors does not run
/// (Realm Crafter's behaviour), the others do.
pub fn compile_and_log(world: &World) -> Arc<ScriptSet> {
    let (set, diags) = compile_world(world);
    for d in &diags {
        match d.severity {
            Severity::Error => tracing::error!("script: {d}"),
            Severity::Warning => tracing::warn!("script: {d}"),
        }
    }
    let ok = set.modules.iter().filter(|m| m.ok).count();
    tracing::info!(
        scripts = set.modules.len(),
        runnable = ok,
        "world scripts compiled"
    );
    Arc::new(set)
}

/// The NPC handle range of one AreaInstance: `(base, span)` ([`World::npc_handles`]).
pub fn npc_handles(world: &World, area: &str, instance: u16) -> (u32, u32) {
    world.npc_handles(area, instance)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npc_handle_ranges_do_not_overlap() {
        let w = shared::content::demo_world();
        let mut ranges = Vec::new();
        for a in &w.areas {
            for i in [0u16, 1, 99] {
                ranges.push(npc_handles(&w, &a.name, i));
            }
        }
        ranges.sort_unstable();
        for pair in ranges.windows(2) {
            assert!(pair[0].0 + pair[0].1 <= pair[1].0);
        }
        let (b, s) = *ranges.last().unwrap_or(&(0, 0));
        assert!(u64::from(b) + u64::from(s) <= 1 << 31);
        // And every handle of a range names its instance.
        for a in &w.areas {
            for i in [0u16, 7, 99] {
                let (base, span) = npc_handles(&w, &a.name, i);
                for h in [base, base + span / 2, base + span - 1] {
                    assert_eq!(w.npc_handle_instance(h), Some((a.name.as_str(), i)));
                }
            }
        }
        assert_eq!(w.npc_handle_instance(5), None, "a player's handle");
    }

    #[test]
    fn the_demo_world_scripts_compile() {
        let (set, diags) = compile_world(&shared::content::demo_world());
        assert!(diags.is_empty(), "{diags:?}");
        assert!(set.entry("Death", "Main").is_some());
        assert!(set.entry("LevelUp", "Main").is_some());
    }
}
