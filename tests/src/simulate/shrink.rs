//! Replayable schedules and their shrinking: a failing seed's faults, cut down by delta
//! debugging (Zeller's ddmin) to a few that still break the same invariant.
//!
//! A seed's run draws its faults and its network from one RNG, so removing a fault
//! changes everything after it. A [`Schedule`] separates them: its faults are listed with
//! their times and targets, and its network is drawn from its own `net_seed`. The
//! shrinker first finds a `net_seed` under which the seed's full list of faults still
//! fails, then removes faults for as long as the failure stays of the same kind.

use serde::{Deserialize, Serialize};

use super::{Options, Report, Violation, replay};

/// One injected fault or client action, its target resolved (an account, a node).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "do", rename_all = "snake_case")]
pub enum Fault {
    /// The account's client logs in (a no-op if it is in the world).
    Login { account: u64 },
    /// The account's client disconnects.
    Logout { account: u64 },
    /// The account's player is warped (`/warpother`) to an area and instance.
    Warp {
        account: u64,
        area: String,
        instance: u16,
    },
    /// A node's link to the gateway drops (the node reconnects).
    DropLink { node: usize },
    /// A node's process dies and starts again, empty, `back_ms` later.
    Kill { node: usize, back_ms: u64 },
    /// A node stops (no tick, read or send) for `ms`.
    Pause { node: usize, ms: u64 },
    /// The gateway's process restarts: sessions and links end, the store stays.
    RestartGateway,
    /// A node's tick watchdog gives one of its instances up (its tick froze): the node
    /// drops it and says `InstanceGivenUp`; its other instances run on.
    GiveUp {
        node: usize,
        area: String,
        instance: u16,
    },
}

/// A fault at its time (simulated ms).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timed {
    /// When.
    pub at: u64,
    /// What.
    #[serde(flatten)]
    pub fault: Fault,
}

/// An explicit schedule: its faults, and the seed of its network's delays.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schedule {
    /// Seeds the network (delays, spikes, reconnects).
    pub net_seed: u64,
    /// The faults, in time order.
    pub faults: Vec<Timed>,
}

/// How many network seeds are tried for a failing seed's full fault list.
const NET_SEEDS: u64 = 64;
/// The most schedules one shrink runs.
const BUDGET: usize = 4_000;

/// Shrinks the failure of `failed` (a seed's report with a violation): a schedule with as
/// few faults as ddmin finds that still breaks the same kind of invariant, and its
/// report. `None` when no explicit schedule reproduces it.
pub fn shrink(failed: &Report, opts: &Options) -> Option<(Schedule, Report)> {
    let kind = kind(failed.violation.as_ref()?);
    let mut runs = 0;
    let fails = |s: &Schedule, runs: &mut usize| -> Option<Report> {
        *runs += 1;
        let r = replay(s, opts);
        (r.violation.as_ref().map(self::kind) == Some(kind.clone())).then_some(r)
    };
    // A network under which the full list fails.
    let (start, mut report) = (0..NET_SEEDS).find_map(|i| {
        let s = Schedule {
            net_seed: failed.seed.wrapping_add(i),
            faults: failed.faults.clone(),
        };
        fails(&s, &mut runs).map(|r| (s, r))
    })?;
    // ddmin over the faults.
    let net_seed = start.net_seed;
    let faults = ddmin(start.faults, |faults| {
        if runs >= BUDGET {
            return false;
        }
        let candidate = Schedule {
            net_seed,
            faults: faults.to_vec(),
        };
        match fails(&candidate, &mut runs) {
            Some(r) => {
                report = r;
                true
            }
            None => false,
        }
    });
    Some((Schedule { net_seed, faults }, report))
}

/// Zeller's ddmin: a 1-minimal sublist of `items` for which `fails` holds (`fails`
/// holds for `items`). Removing any one more item makes it pass.
fn ddmin<T: Clone>(mut items: Vec<T>, mut fails: impl FnMut(&[T]) -> bool) -> Vec<T> {
    let mut n = 2usize;
    while items.len() >= 2 {
        let len = items.len();
        let chunk = len.div_ceil(n);
        let mut reduced = false;
        for start in (0..len).step_by(chunk) {
            let end = (start + chunk).min(len);
            let complement: Vec<T> = items[..start]
                .iter()
                .chain(&items[end..])
                .cloned()
                .collect();
            if fails(&complement) {
                items = complement;
                n = n.saturating_sub(1).max(2);
                reduced = true;
                break;
            }
        }
        if !reduced {
            if n >= len {
                break;
            }
            n = (n * 2).min(len);
        }
    }
    items
}

/// A violation's kind: its words before the first number or name, so that a shrunk
/// schedule breaks the same invariant (not just any).
fn kind(v: &Violation) -> String {
    v.what
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| c.is_ascii_digit() || c == '#'))
        .take_while(|w| !w.is_empty() && !w.contains(|c: char| c.is_ascii_digit()))
        .take(4)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulate::run;

    #[test]
    fn ddmin_finds_the_faults_that_matter() {
        let items: Vec<u32> = (0..40).collect();
        let mut runs = 0;
        let min = ddmin(items, |xs| {
            runs += 1;
            xs.contains(&3) && xs.contains(&17) && xs.contains(&31)
        });
        assert_eq!(min, vec![3, 17, 31]);
        assert!(runs < 200, "{runs}");
        // One item that fails alone.
        assert_eq!(ddmin((0..9).collect(), |xs| xs.contains(&8)), vec![8]);
    }

    #[test]
    fn kinds_ignore_numbers() {
        let v = |w: &str| Violation {
            at_ms: 0,
            what: w.into(),
        };
        assert_eq!(
            kind(&v("duplicate: account 3's character is live at a and at b")),
            kind(&v("duplicate: account 5's character is live at c and at d"))
        );
        assert_ne!(
            kind(&v("healed, but session 4 is still Leaving")),
            kind(&v("lost: session 4 is in game at x"))
        );
    }

    #[test]
    fn a_schedule_round_trips_as_json() {
        let s = Schedule {
            net_seed: 9,
            faults: vec![
                Timed {
                    at: 200,
                    fault: Fault::Login { account: 1 },
                },
                Timed {
                    at: 900,
                    fault: Fault::Kill {
                        node: 2,
                        back_ms: 1_500,
                    },
                },
            ],
        };
        let j = serde_json::to_string(&s).unwrap_or_default();
        assert!(j.contains(r#""do":"kill""#), "{j}");
        let back: Schedule = serde_json::from_str(&j).unwrap_or_else(|e| panic!("{e}: {j}"));
        assert_eq!(back, s);
    }

    #[test]
    fn a_seed_replays_as_a_schedule_of_its_faults() {
        let opts = Options::default();
        let r = run(11, &opts);
        assert!(!r.faults.is_empty());
        let s = Schedule {
            net_seed: 11,
            faults: r.faults.clone(),
        };
        let a = replay(&s, &opts);
        let b = replay(&s, &opts);
        assert_eq!(a.trace, b.trace);
        // Every fault of the list is injected again (its targets exist again).
        assert!(
            a.faults.len() * 10 >= r.faults.len() * 7,
            "{} of {}",
            a.faults.len(),
            r.faults.len()
        );
    }
}
