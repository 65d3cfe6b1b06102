//! `random`: bytes from the operating system's CSPRNG (secrets, nonces, salts, seeds).

/// Fill `buf` from the operating system's CSPRNG. Should the system RNG fail (it does not
/// on any supported platform), the bytes come from std's per-process random hasher keys,
/// still unpredictable from outside, and the failure is logged.
pub fn fill(buf: &mut [u8]) {
    use ring::rand::SecureRandom as _;
    if ring::rand::SystemRandom::new().fill(buf).is_err() {
        tracing::error!("the system RNG failed; using the process's hasher keys");
        use std::hash::{BuildHasher as _, Hasher as _};
        for chunk in buf.chunks_mut(8) {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_usize(chunk.as_ptr() as usize);
            for (d, s) in chunk.iter_mut().zip(h.finish().to_le_bytes()) {
                *d = s;
            }
        }
    }
}

/// A random `u64` from the OS.
pub fn u64() -> u64 {
    let mut b = [0u8; 8];
    fill(&mut b);
    u64::from_le_bytes(b)
}

#[cfg(test)]
mod tests {
    #[test]
    fn fills_every_byte() {
        let mut a = [0u8; 64];
        let mut b = [0u8; 64];
        super::fill(&mut a);
        super::fill(&mut b);
        assert_ne!(a, b);
        assert_ne!(super::u64(), super::u64());
    }
}
