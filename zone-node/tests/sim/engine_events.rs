//! Engine events (issue 38): rules announce, the zone reacts after the input or phase, in
//! order and including what the reactions announce; a trigger reacts at once, after what
//! was queued before it; a reaction that keeps announcing cannot stall a zone.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use zone_node::sim::engine::EngineEvent;
use zone_node::sim::state::{EVENTS_PER_DRAIN, Observer, ZoneState};
use zone_node::sim::testing::test_content;
use zone_node::sim::{ActorId, ZoneConfig};

/// Records what it sees; re-announces a `Spawned` as an `XpGained` (a reaction that
/// announces more), and an `XpGained` forever when `echo` is set.
#[derive(Default)]
struct Log {
    seen: Mutex<Vec<EngineEvent>>,
    echo: bool,
}

impl Observer for Log {
    fn react(&self, st: &mut ZoneState, event: EngineEvent) {
        match &event {
            EngineEvent::Spawned { npc, .. } => {
                st.announce(EngineEvent::XpGained { actor: *npc });
            }
            EngineEvent::XpGained { actor } if self.echo => {
                st.announce(EngineEvent::XpGained { actor: *actor });
            }
            _ => {}
        }
        self.seen.lock().unwrap().push(event);
    }
}

fn state(log: Arc<Log>) -> ZoneState {
    ZoneState::new(ZoneConfig::default(), Arc::new(test_content()), log)
}

fn id(n: u32) -> ActorId {
    ActorId {
        idx: n,
        generation: 0,
    }
}

#[test]
fn announced_events_wait_for_react_and_come_out_in_order_with_what_reactions_add() {
    let log = Arc::new(Log::default());
    let mut st = state(log.clone());
    st.announce(EngineEvent::LoggedIn { actor: id(1) });
    st.announce(EngineEvent::Spawned {
        npc: id(2),
        spawn_point: 0,
    });
    st.announce(EngineEvent::EnteredArea { actor: id(1) });
    assert!(
        log.seen.lock().unwrap().is_empty(),
        "announcing reacts to nothing"
    );
    st.react();
    assert_eq!(
        *log.seen.lock().unwrap(),
        vec![
            EngineEvent::LoggedIn { actor: id(1) },
            EngineEvent::Spawned {
                npc: id(2),
                spawn_point: 0
            },
            EngineEvent::EnteredArea { actor: id(1) },
            EngineEvent::XpGained { actor: id(2) },
        ]
    );
    assert!(st.engine_events.is_empty());
}

#[test]
fn a_trigger_reacts_at_once_after_what_was_announced_before_it() {
    let log = Arc::new(Log::default());
    let mut st = state(log.clone());
    st.announce(EngineEvent::LoggedIn { actor: id(1) });
    st.trigger(EngineEvent::LoggingOut { actor: id(1) });
    assert_eq!(
        *log.seen.lock().unwrap(),
        vec![
            EngineEvent::LoggedIn { actor: id(1) },
            EngineEvent::LoggingOut { actor: id(1) },
        ]
    );
}

#[test]
fn a_reaction_that_keeps_announcing_cannot_stall_the_zone() {
    let log = Arc::new(Log {
        echo: true,
        ..Log::default()
    });
    let mut st = state(log.clone());
    st.announce(EngineEvent::XpGained { actor: id(3) });
    st.react();
    assert_eq!(log.seen.lock().unwrap().len(), EVENTS_PER_DRAIN);
    assert_eq!(
        st.engine_events.len(),
        1,
        "the rest waits for the next drain"
    );
}
