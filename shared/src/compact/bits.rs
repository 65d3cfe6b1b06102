//! Bit packing for the compact profile: an LSB-first bit writer and reader and the
//! order-`k` exponential-Golomb code (`EG_k`) every variable-width field uses.
//!
//! `EG_k(u)`: let `w = u + 2^k` and `n` its bit length; write `n - k - 1` zero bits, then
//! the `n` bits of `w` from the most significant down. Small values are short: `EG_0`
//! writes 0 as `1` (one bit), 1-2 in three bits, 3-6 in five; `EG_k` writes every value
//! below `2^k` in `k + 1` bits. Bits fill each byte from bit 0 up.

use super::CompactError;

/// The longest run of leading zeros the reader accepts (values below 2^40 before `k`).
const MAX_ZEROS: u32 = 40;

/// Zigzag: 0, -1, 1, -2 ... → 0, 1, 2, 3 ...
#[inline]
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// The inverse of [`zigzag`].
#[inline]
pub fn unzigzag(u: u64) -> i64 {
    ((u >> 1) as i64) ^ -((u & 1) as i64)
}

/// Bits `EG_k(u)` takes.
#[inline]
pub fn eg_len(u: u64, k: u32) -> u32 {
    let w = u.saturating_add(1u64 << k);
    let n = 64 - w.leading_zeros();
    2 * n - k - 1
}

/// An LSB-first bit writer appending to a byte vector. Bits collect in a 64-bit
/// accumulator that is flushed 32 bits at a time (fewer than 32 are pending between calls).
#[derive(Debug, Default)]
pub struct BitWriter {
    out: Vec<u8>,
    acc: u64,
    n: u32,
}

impl BitWriter {
    /// A writer that appends after `prefix` (the datagram header).
    pub fn with_prefix(prefix: Vec<u8>) -> Self {
        Self {
            out: prefix,
            acc: 0,
            n: 0,
        }
    }

    #[inline]
    fn flush32(&mut self) {
        if self.n >= 32 {
            self.out.extend_from_slice(&(self.acc as u32).to_le_bytes());
            self.acc >>= 32;
            self.n -= 32;
        }
    }

    /// Appends the low `bits` bits of `v` (bits ≤ 32).
    #[inline]
    pub fn put(&mut self, v: u64, bits: u32) {
        debug_assert!(bits <= 32);
        if bits == 0 {
            return;
        }
        let mask = (1u64 << bits.min(32)) - 1;
        self.acc |= (v & mask) << self.n;
        self.n += bits.min(32);
        self.flush32();
    }

    /// Appends one bit.
    #[inline]
    pub fn bit(&mut self, b: bool) {
        self.put(u64::from(b), 1);
    }

    /// Appends `EG_k(u)` (`u < 2^40`, `k ≤ 15`).
    #[inline]
    pub fn eg(&mut self, u: u64, k: u32) {
        let w = u + (1u64 << k);
        let n = 64 - w.leading_zeros();
        let zeros = n - k - 1;
        if zeros + n <= 32 {
            // One write: the zeros, then w's n bits most significant first (reversed,
            // since bits go out least significant first). w < 2^32 here, n ≥ 1.
            let rev = u64::from((w as u32).reverse_bits() >> (32 - n));
            self.acc |= (rev << zeros) << self.n;
            self.n += zeros + n;
            self.flush32();
            return;
        }
        let mut z = zeros;
        while z > 0 {
            let c = z.min(32);
            self.put(0, c);
            z -= c;
        }
        // The n bits of w, most significant first.
        let mut left = n;
        while left > 0 {
            let c = left.min(32);
            let chunk = (w >> (left - c)) & ((1u64 << c) - 1);
            // Reverse the chunk so its most significant bit goes out first.
            let rev = chunk.reverse_bits() >> (64 - c);
            self.put(rev, c);
            left -= c;
        }
    }

    /// Bytes written so far, counting a partial last byte.
    pub fn len_bytes(&self) -> usize {
        self.out.len() + self.n.div_ceil(8) as usize
    }

    /// Bits written so far.
    pub fn len_bits(&self) -> usize {
        self.out.len() * 8 + self.n as usize
    }

    /// The bytes, the last one padded with zero bits.
    pub fn finish(mut self) -> Vec<u8> {
        let tail = self.acc.to_le_bytes();
        self.out
            .extend_from_slice(tail.get(..self.n.div_ceil(8) as usize).unwrap_or(&[]));
        self.out
    }
}

/// An LSB-first bit reader over a byte slice; reading past the end is an error.
#[derive(Debug)]
pub struct BitReader<'a> {
    data: &'a [u8],
    /// Position in bits.
    pos: usize,
}

impl<'a> BitReader<'a> {
    /// A reader at the first bit of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Self { data, pos: 0 }
    }

    /// One bit.
    #[inline]
    pub fn bit(&mut self) -> Result<bool, CompactError> {
        let byte = self.data.get(self.pos / 8).ok_or(CompactError::Truncated)?;
        let b = (byte >> (self.pos % 8)) & 1 == 1;
        self.pos += 1;
        Ok(b)
    }

    /// `bits` bits (≤ 32), the first read being the least significant.
    pub fn bits(&mut self, bits: u32) -> Result<u64, CompactError> {
        let mut v = 0u64;
        for i in 0..bits {
            if self.bit()? {
                v |= 1 << i;
            }
        }
        Ok(v)
    }

    /// One `EG_k` value.
    pub fn eg(&mut self, k: u32) -> Result<u64, CompactError> {
        let mut zeros = 0u32;
        while !self.bit()? {
            zeros += 1;
            if zeros > MAX_ZEROS {
                return Err(CompactError::BadCode);
            }
        }
        // The leading 1 was just read: n - 1 = zeros + k more bits, most significant first.
        let mut w = 1u64;
        for _ in 0..zeros + k {
            w = (w << 1) | u64::from(self.bit()?);
        }
        Ok(w - (1u64 << k))
    }

    /// Checks that only zero padding (less than one byte) is left.
    pub fn finish(self) -> Result<(), CompactError> {
        let total = self.data.len() * 8;
        if total.saturating_sub(self.pos) >= 8 {
            return Err(CompactError::Trailing);
        }
        let mut r = self;
        while r.pos < total {
            if r.bit()? {
                return Err(CompactError::Trailing);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn eg0_matches_the_textbook_codes() {
        // 0 → 1, 1 → 010, 2 → 011, 3 → 00100 (written MSB first, packed LSB first).
        let mut w = BitWriter::default();
        for u in [0, 1, 2, 3] {
            w.eg(u, 0);
        }
        let bits: String = w
            .finish()
            .iter()
            .flat_map(|b| (0..8).map(move |i| if b >> i & 1 == 1 { '1' } else { '0' }))
            .collect();
        assert!(bits.starts_with("1010011"), "{bits}");
        assert!(bits[7..].starts_with("00100"), "{bits}");
        assert_eq!(eg_len(0, 0), 1);
        assert_eq!(eg_len(3, 0), 5);
        assert_eq!(eg_len(127, 7), 8);
        assert_eq!(eg_len(128, 7), 10);
    }

    proptest! {
        #[test]
        fn eg_round_trips(vals in prop::collection::vec((0u64..(1u64 << 40), 0u32..16), 0..50)) {
            let mut w = BitWriter::default();
            let mut bits = 0usize;
            for &(u, k) in &vals {
                w.eg(u, k);
                bits += eg_len(u, k) as usize;
            }
            prop_assert_eq!(w.len_bits(), bits);
            let bytes = w.finish();
            let mut r = BitReader::new(&bytes);
            for &(u, k) in &vals {
                prop_assert_eq!(r.eg(k).unwrap(), u);
            }
            prop_assert!(r.finish().is_ok());
        }

        /// The accumulator writes exactly the bits a one-bit-at-a-time writer would.
        #[test]
        fn the_writer_matches_a_bit_at_a_time_reference(
            ops in prop::collection::vec((any::<bool>(), 0u64..(1u64 << 40), 0u32..33), 0..60),
        ) {
            let mut w = BitWriter::default();
            let mut want: Vec<bool> = Vec::new();
            for &(is_eg, u, k) in &ops {
                if is_eg {
                    let k = k.min(15);
                    w.eg(u, k);
                    let v = u + (1u64 << k);
                    let n = 64 - v.leading_zeros();
                    want.extend(std::iter::repeat_n(false, (n - k - 1) as usize));
                    want.extend((0..n).rev().map(|i| v >> i & 1 == 1));
                } else {
                    w.put(u, k);
                    want.extend((0..k).map(|i| u >> i & 1 == 1));
                }
            }
            prop_assert_eq!(w.len_bits(), want.len());
            prop_assert_eq!(w.len_bytes(), want.len().div_ceil(8));
            let bytes = w.finish();
            let mut packed = vec![0u8; want.len().div_ceil(8)];
            for (i, b) in want.iter().enumerate() {
                packed[i / 8] |= u8::from(*b) << (i % 8);
            }
            prop_assert_eq!(bytes, packed);
        }

        #[test]
        fn zigzag_round_trips(v in any::<i32>()) {
            prop_assert_eq!(unzigzag(zigzag(i64::from(v))), i64::from(v));
        }

        #[test]
        fn garbage_never_panics(data in prop::collection::vec(any::<u8>(), 0..40), k in 0u32..16) {
            let mut r = BitReader::new(&data);
            while r.eg(k).is_ok() {}
        }
    }
}
