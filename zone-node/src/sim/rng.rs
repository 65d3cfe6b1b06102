//! The zone's only source of randomness: a ChaCha8 stream seeded from the zone config,
//! with Blitz-style helpers (`Rand(lo, hi)` is inclusive at both ends).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Seeded, reproducible RNG. Same seed and same calls give the same numbers on every
/// platform.
#[derive(Clone, Debug)]
pub struct SimRng(ChaCha8Rng);

impl SimRng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Self(ChaCha8Rng::seed_from_u64(seed))
    }

    /// Blitz `Rand(lo, hi)`: a uniform integer in `lo..=hi` (the bounds may come in either
    /// order, as in Blitz).
    pub fn rand_range(&mut self, lo: i32, hi: i32) -> i32 {
        let (a, b) = if lo <= hi { (lo, hi) } else { (hi, lo) };
        self.0.gen_range(a..=b)
    }

    /// Blitz `Rnd(lo, hi)`: a uniform float in `lo..hi` (`lo` when the range is empty).
    pub fn rnd(&mut self, lo: f32, hi: f32) -> f32 {
        let (a, b) = if lo <= hi { (lo, hi) } else { (hi, lo) };
        if b - a <= f32::EPSILON || !(b - a).is_finite() {
            return a;
        }
        self.0.gen_range(a..b)
    }

    /// `Rand(1, n) = 1`: true with probability `1/n` (`n >= 1`).
    pub fn one_in(&mut self, n: i32) -> bool {
        self.rand_range(1, n.max(1)) == 1
    }

    /// A raw 64-bit value (ids, shuffles).
    pub fn next_u64(&mut self) -> u64 {
        self.0.r#gen()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rand_range_is_inclusive_and_ordered_either_way() {
        let mut r = SimRng::new(1);
        let mut seen = [false; 3];
        for _ in 0..200 {
            let v = r.rand_range(3, 1);
            assert!((1..=3).contains(&v));
            if let Some(s) = seen.get_mut((v - 1) as usize) {
                *s = true;
            }
        }
        assert_eq!(seen, [true; 3]);
    }

    #[test]
    fn same_seed_same_stream() {
        let mut a = SimRng::new(42);
        let mut b = SimRng::new(42);
        for _ in 0..10 {
            assert_eq!(a.rand_range(-5, 5), b.rand_range(-5, 5));
        }
    }
}
