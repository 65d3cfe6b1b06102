//! The tick watchdog's decisions, pure: given each instance's tick age (time since it last
//! completed a tick, measured by the shell), which instances are stuck, which came back,
//! and which are given up. The registry carries the verdicts out (logs, counters, the
//! readiness of the node, dropping an instance and telling the gateway).
//!
//! An instance whose tick age passes `stuck_ms` is *stuck*: the node is not ready while
//! one is. One whose age passes `give_up_ms` (0: never) is *given up*, once. A stuck
//! instance that ticks again (its age falls back under `stuck_ms`) has *recovered*.
//! An instance no longer listed (stopped, given up) is forgotten.

use std::collections::BTreeMap;

use shared::internal::{Generation, InstanceKey};

/// The watchdog's thresholds (the node's `stuck_tick_ms` and `give_up_tick_ms`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Thresholds {
    /// A tick age past this is stuck, ms.
    pub stuck_ms: u64,
    /// A tick age past this is given up, ms (0: never).
    pub give_up_ms: u64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            stuck_ms: 2_000,
            give_up_ms: 10_000,
        }
    }
}

/// One instance as the shell sees it at a check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    /// Which.
    pub key: InstanceKey,
    /// Its generation (a new copy of the same key is a new instance).
    pub generation: Generation,
    /// Time since it last completed a tick, ms.
    pub age_ms: u64,
}

/// What the shell must do about one instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Newly stuck: log, count; the node is not ready.
    Stuck {
        /// Which.
        key: InstanceKey,
        /// Its tick age, ms.
        age_ms: u64,
    },
    /// It ticked again: log.
    Recovered {
        /// Which.
        key: InstanceKey,
        /// How long it was stuck at most, ms (its age at the last check).
        age_ms: u64,
    },
    /// Stuck too long: drop it and tell the gateway (once per instance).
    GiveUp {
        /// Which.
        key: InstanceKey,
        /// Its generation.
        generation: Generation,
        /// Its tick age, ms.
        age_ms: u64,
    },
}

/// What the watchdog remembers of a stuck instance.
#[derive(Clone, Debug, PartialEq, Eq)]
struct StuckEntry {
    generation: Generation,
    age_ms: u64,
    given_up: bool,
}

/// The watchdog's state: the instances it holds stuck.
#[derive(Clone, Debug, Default)]
pub struct Watchdog {
    thresholds: Thresholds,
    stuck: BTreeMap<InstanceKey, StuckEntry>,
}

impl Watchdog {
    /// A watchdog with these thresholds.
    pub fn new(thresholds: Thresholds) -> Self {
        Self {
            thresholds,
            stuck: BTreeMap::new(),
        }
    }

    /// Its thresholds.
    pub fn thresholds(&self) -> Thresholds {
        self.thresholds
    }

    /// Look at every instance (all of them, each time): the verdicts, in key order.
    pub fn check(&mut self, seen: &[Observed]) -> Vec<Verdict> {
        let t = self.thresholds;
        let mut out = Vec::new();
        let listed: BTreeMap<&InstanceKey, &Observed> = seen.iter().map(|o| (&o.key, o)).collect();
        // Forgotten: no longer hosted, or another copy (generation) of the key.
        self.stuck
            .retain(|k, e| listed.get(k).is_some_and(|o| o.generation == e.generation));
        for o in seen {
            let stuck_now = o.age_ms > t.stuck_ms;
            match self.stuck.get_mut(&o.key) {
                None if stuck_now => {
                    self.stuck.insert(
                        o.key.clone(),
                        StuckEntry {
                            generation: o.generation,
                            age_ms: o.age_ms,
                            given_up: false,
                        },
                    );
                    out.push(Verdict::Stuck {
                        key: o.key.clone(),
                        age_ms: o.age_ms,
                    });
                }
                None => continue,
                Some(e) if !stuck_now => {
                    let age_ms = e.age_ms;
                    self.stuck.remove(&o.key);
                    out.push(Verdict::Recovered {
                        key: o.key.clone(),
                        age_ms,
                    });
                    continue;
                }
                Some(e) => e.age_ms = o.age_ms,
            }
            if t.give_up_ms != 0
                && o.age_ms > t.give_up_ms
                && let Some(e) = self.stuck.get_mut(&o.key)
                && !e.given_up
            {
                e.given_up = true;
                out.push(Verdict::GiveUp {
                    key: o.key.clone(),
                    generation: o.generation,
                    age_ms: o.age_ms,
                });
            }
        }
        out
    }

    /// Whether `key` is held stuck (given up or not).
    pub fn is_stuck(&self, key: &InstanceKey) -> bool {
        self.stuck.contains_key(key)
    }

    /// Whether the node is ready: no instance is stuck, or every stuck one was given up
    /// (a given-up instance is no longer the node's; it is forgotten at the next check).
    pub fn ready(&self) -> bool {
        self.stuck.values().all(|e| e.given_up)
    }

    /// The instances held stuck and not given up, in key order.
    pub fn stuck(&self) -> Vec<InstanceKey> {
        self.stuck
            .iter()
            .filter(|(_, e)| !e.given_up)
            .map(|(k, _)| k.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u16) -> InstanceKey {
        InstanceKey {
            area: "Meadow".into(),
            instance: i,
        }
    }

    fn seen(v: &[(u16, u64)]) -> Vec<Observed> {
        v.iter()
            .map(|(i, age_ms)| Observed {
                key: key(*i),
                generation: 1,
                age_ms: *age_ms,
            })
            .collect()
    }

    #[test]
    fn an_instance_is_stuck_past_the_first_threshold_and_given_up_once_past_the_second() {
        let mut w = Watchdog::new(Thresholds {
            stuck_ms: 2_000,
            give_up_ms: 10_000,
        });
        assert!(w.check(&seen(&[(0, 40), (1, 2_000)])).is_empty());
        assert!(w.ready());
        assert_eq!(
            w.check(&seen(&[(0, 2_001), (1, 30)])),
            vec![Verdict::Stuck {
                key: key(0),
                age_ms: 2_001
            }]
        );
        assert!(!w.ready());
        assert_eq!(w.stuck(), vec![key(0)]);
        // Still stuck: said once.
        assert!(w.check(&seen(&[(0, 9_000), (1, 30)])).is_empty());
        assert_eq!(
            w.check(&seen(&[(0, 10_001), (1, 30)])),
            vec![Verdict::GiveUp {
                key: key(0),
                generation: 1,
                age_ms: 10_001
            }]
        );
        // Given up: the node is ready again, and it is not given up twice.
        assert!(w.ready());
        assert!(w.check(&seen(&[(0, 12_000), (1, 30)])).is_empty());
        // Gone from the node: forgotten.
        assert!(w.check(&seen(&[(1, 30)])).is_empty());
        assert!(!w.is_stuck(&key(0)));
    }

    #[test]
    fn a_stuck_instance_that_ticks_again_recovers_and_a_new_copy_starts_afresh() {
        let mut w = Watchdog::new(Thresholds {
            stuck_ms: 1_000,
            give_up_ms: 0,
        });
        w.check(&seen(&[(0, 1_500)]));
        assert!(!w.ready());
        // Never given up with give_up_ms 0.
        assert!(w.check(&seen(&[(0, 100_000)])).is_empty());
        assert_eq!(
            w.check(&seen(&[(0, 20)])),
            vec![Verdict::Recovered {
                key: key(0),
                age_ms: 100_000
            }]
        );
        assert!(w.ready());
        // A new generation of the key is another instance: the old entry goes.
        w.check(&seen(&[(0, 1_500)]));
        let newer = vec![Observed {
            key: key(0),
            generation: 2,
            age_ms: 10,
        }];
        assert!(w.check(&newer).is_empty());
        assert!(w.ready());
    }
}
