//! Input pacing: when to send the next position update so that it reaches the gateway just
//! before the next broadcast leaves (docs/protocol.md, "Pacing input").
//!
//! A zone broadcasts `P_StandardUpdate` every `broadcast_ms` (10 Hz by default) and takes
//! the inputs that arrived before that tick into it. A client that sends its move on its
//! own clock lands at a random phase: on average half a broadcast period passes before the
//! move is in a broadcast, and the QUIC acknowledgement of its datagram leaves in a packet of
//! its own whenever no broadcast follows within the acknowledgement delay (at least 25 ms,
//! at most the round trip). Sent `lead` before the broadcast is due at the gateway (the
//! round trip plus a margin before it reaches this client), the move is in the very next
//! broadcast and the acknowledgement rides it.
//!
//! [`InputPacer`] is pure: it learns the broadcast period and phase from the instants
//! datagrams arrive (several datagrams of one broadcast, within [`BURST`], count once) and
//! answers when to send, given the input period; the caller supplies the clock.

use std::time::{Duration, Instant};

/// Datagrams arriving within this much of a broadcast's first belong to that broadcast.
pub const BURST: Duration = Duration::from_millis(8);

/// How long before the broadcast is due at the gateway the input should arrive there: a
/// zone tick must not have started the broadcast yet, and the gateway must still be holding
/// its acknowledgement (which it sends after at most 25 ms).
pub const MARGIN: Duration = Duration::from_millis(8);

/// Broadcast periods outside this range are not learned (a lost broadcast makes a gap of
/// two periods; those are folded back, see [`InputPacer::on_datagram`]).
const MIN_PERIOD: Duration = Duration::from_millis(20);
const MAX_PERIOD: Duration = Duration::from_millis(2000);

/// Learns the broadcast clock from arrivals and paces input to it.
#[derive(Debug, Clone, Default)]
pub struct InputPacer {
    /// The first arrival of the newest broadcast.
    last: Option<Instant>,
    /// The estimated broadcast period, in microseconds (an exponential average).
    period_us: Option<f64>,
    /// Broadcasts seen.
    seen: u64,
}

impl InputPacer {
    /// A pacer that has seen nothing (it paces like a plain timer until it has).
    pub fn new() -> Self {
        Self::default()
    }

    /// A datagram of a broadcast arrived at `now`.
    pub fn on_datagram(&mut self, now: Instant) {
        let Some(last) = self.last else {
            self.last = Some(now);
            self.seen = 1;
            return;
        };
        let gap = now.saturating_duration_since(last);
        if gap < BURST {
            return;
        }
        self.last = Some(now);
        self.seen += 1;
        let gap_us = gap.as_secs_f64() * 1e6;
        let sample = match self.period_us {
            // One or more broadcasts lost: the gap is a whole number of periods.
            Some(p) if gap_us > 1.5 * p => gap_us / (gap_us / p).round(),
            _ => gap_us,
        };
        let lo = MIN_PERIOD.as_secs_f64() * 1e6;
        let hi = MAX_PERIOD.as_secs_f64() * 1e6;
        if !(lo..=hi).contains(&sample) {
            return;
        }
        self.period_us = Some(match self.period_us {
            Some(p) => p + (sample - p) / 8.0,
            None => sample,
        });
    }

    /// The learnt broadcast period, once two broadcasts have been seen.
    pub fn period(&self) -> Option<Duration> {
        self.period_us
            .filter(|_| self.seen >= 3)
            .map(|us| Duration::from_secs_f64(us / 1e6))
    }

    /// When to send the next input, at `now`, for inputs every `input_period`, with `rtt` the
    /// connection's round trip: the first instant after `now` (and at least half an input
    /// period after `previous`, the last send, so that inputs are not bunched while the
    /// phase moves) that is `rtt + MARGIN` before a broadcast's expected arrival, shifted by
    /// whole input periods. Until the broadcast clock is known: `previous + input_period`.
    pub fn next_send(
        &self,
        now: Instant,
        previous: Instant,
        input_period: Duration,
        rtt: Duration,
    ) -> Instant {
        let plain = previous + input_period;
        let (Some(last), Some(period)) = (self.last, self.period()) else {
            return plain;
        };
        let input_us = input_period.as_secs_f64() * 1e6;
        if input_us <= 0.0 {
            return plain;
        }
        let period_us = period.as_secs_f64() * 1e6;
        // A grid of send instants, one per input period, through the instant `lead` before
        // the next expected arrival (the lead folded into one broadcast period).
        let lead_us = (rtt + MARGIN).as_secs_f64() * 1e6 % period_us;
        let anchor_us = period_us - lead_us; // after `last`
        let earliest = now.max(previous + input_period / 2);
        let from_us = earliest.saturating_duration_since(last).as_secs_f64() * 1e6;
        let steps = ((from_us - anchor_us) / input_us).ceil();
        let at_us = anchor_us + steps * input_us;
        if !at_us.is_finite() || at_us < 0.0 {
            return plain.max(now);
        }
        last + Duration::from_secs_f64(at_us / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A pacer fed broadcasts every `period` ms (two datagrams each), the first at t0 + 3 ms.
    fn fed(t0: Instant, period: u64, n: u64) -> InputPacer {
        let mut p = InputPacer::new();
        for k in 0..n {
            let at = t0 + ms(3 + k * period);
            p.on_datagram(at);
            p.on_datagram(at + Duration::from_micros(200));
        }
        p
    }

    #[test]
    fn learns_the_broadcast_period_from_bursts() {
        let t0 = Instant::now();
        let p = fed(t0, 100, 10);
        let got = p.period().unwrap();
        assert!(got >= ms(99) && got <= ms(101), "{got:?}");
        assert!(InputPacer::new().period().is_none());
        assert!(fed(t0, 100, 2).period().is_none(), "needs three broadcasts");
    }

    #[test]
    fn a_lost_broadcast_does_not_double_the_period() {
        let t0 = Instant::now();
        let mut p = fed(t0, 100, 10);
        // Broadcast 10 is lost; 11 arrives.
        p.on_datagram(t0 + ms(3 + 11 * 100));
        let got = p.period().unwrap();
        assert!(got >= ms(99) && got <= ms(101), "{got:?}");
    }

    #[test]
    fn sends_just_ahead_of_the_next_broadcast() {
        let t0 = Instant::now();
        let p = fed(t0, 100, 10); // last arrival at t0 + 903 ms
        let now = t0 + ms(910);
        let rtt = ms(2);
        let at = p.next_send(now, now - ms(100), ms(100), rtt);
        // Next arrival expected at 1003 ms; lead = 2 + 8 ms.
        let want = t0 + ms(1003) - rtt - MARGIN;
        let err = at.max(want) - at.min(want);
        assert!(err < ms(1), "{:?}", at - t0);
        // A long round trip folds into one period: 130 ms ahead of an arrival is 30 ms
        // ahead of the one before it... plus one period.
        let at = p.next_send(now, now - ms(100), ms(100), ms(122));
        let want = t0 + ms(1003 + 100) - ms(130);
        let err = at.max(want) - at.min(want);
        assert!(err < ms(1), "{:?}", at - t0);
    }

    #[test]
    fn faster_input_keeps_one_send_ahead_of_each_broadcast() {
        let t0 = Instant::now();
        let p = fed(t0, 100, 10);
        let mut prev = t0 + ms(905);
        let mut sends = Vec::new();
        for _ in 0..6 {
            let at = p.next_send(prev, prev, ms(50), ms(2));
            sends.push((at - t0).as_millis());
            prev = at;
        }
        // 20 Hz input against 10 Hz broadcasts: every other send is 10 ms before one.
        assert_eq!(sends, vec![943, 993, 1043, 1093, 1143, 1193]);
    }

    #[test]
    fn without_a_clock_it_is_a_plain_timer() {
        let p = InputPacer::new();
        let now = Instant::now();
        assert_eq!(p.next_send(now, now, ms(100), ms(1)), now + ms(100));
    }

    #[test]
    fn never_bunches_inputs_when_the_phase_moves() {
        let t0 = Instant::now();
        let p = fed(t0, 100, 10);
        // Just sent at 990 ms (the phase said 993): the next is a period later, not at 993.
        let prev = t0 + ms(990);
        let at = p.next_send(prev, prev, ms(100), ms(2));
        assert_eq!((at - t0).as_millis(), 1093);
    }
}
