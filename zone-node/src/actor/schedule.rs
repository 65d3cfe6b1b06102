//! `FixedStep`: which ticks are due, given the time since an instance started.
//!
//! Tick `n` is due at `n × tick_ms`. A poll runs every due tick, at most `max_catch_up`
//! in a row; if more are due (a long stall), the rest are skipped and the schedule
//! re-baselined, so a stall never turns into a burst and game time never drifts.

/// What a poll says to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Due {
    /// Index of the first tick to run now.
    pub first: u64,
    /// Ticks to run now (0 when none is due).
    pub run: u32,
    /// Ticks skipped by a re-baseline (an overrun when > 0).
    pub skipped: u64,
}

/// The fixed-step schedule of one instance.
#[derive(Clone, Debug)]
pub struct FixedStep {
    tick_ms: u64,
    max_catch_up: u32,
    next: u64,
}

impl FixedStep {
    /// A schedule of `tick_ms` steps with a catch-up budget.
    pub fn new(tick_ms: u64, max_catch_up: u32) -> Self {
        Self {
            tick_ms: tick_ms.max(1),
            max_catch_up: max_catch_up.max(1),
            next: 0,
        }
    }

    /// The tick period.
    pub fn tick_ms(&self) -> u64 {
        self.tick_ms
    }

    /// The game time of tick `n`.
    pub fn now_ms(&self, n: u64) -> u64 {
        n.saturating_mul(self.tick_ms)
    }

    /// Ticks due at `elapsed_ms` since the start.
    pub fn poll(&mut self, elapsed_ms: u64) -> Due {
        let due = elapsed_ms / self.tick_ms;
        let first = self.next;
        if first > due {
            return Due {
                first,
                run: 0,
                skipped: 0,
            };
        }
        let behind = due + 1 - first;
        let run = u32::try_from(behind.min(u64::from(self.max_catch_up))).unwrap_or(1);
        self.next = first + u64::from(run);
        let skipped = (due + 1).saturating_sub(self.next);
        self.next += skipped;
        Due {
            first,
            run,
            skipped,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_time_polls_run_one_tick_each_without_drift() {
        let mut s = FixedStep::new(33, 5);
        let mut ran = 0;
        for i in 0..1000u64 {
            let d = s.poll(i * 33 + 2);
            assert_eq!((d.first, d.run, d.skipped), (i, 1, 0));
            ran += d.run;
        }
        assert_eq!(ran, 1000);
        // An early poll runs nothing.
        assert_eq!(s.poll(1000 * 33 - 1).run, 0);
    }

    #[test]
    fn a_short_stall_catches_up_and_a_long_one_rebaselines() {
        let mut s = FixedStep::new(10, 5);
        assert_eq!(s.poll(0).run, 1);
        // 30 ms late: ticks 1, 2, 3 are due.
        assert_eq!(
            s.poll(30),
            Due {
                first: 1,
                run: 3,
                skipped: 0
            }
        );
        // A 1 s stall: 5 catch-up ticks, then the rest is skipped.
        let d = s.poll(1030);
        assert_eq!((d.first, d.run), (4, 5));
        assert_eq!(d.skipped, 103 + 1 - 9);
        // Then back on schedule: one tick per step, game time = wall time.
        let d = s.poll(1040);
        assert_eq!((d.first, d.run, d.skipped), (104, 1, 0));
        assert_eq!(s.now_ms(d.first), 1040);
    }
}
