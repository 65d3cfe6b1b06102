//! Stateless handshake cookies ("SYN cookies for ENet 1.1"): a keyed MAC (SipHash-2-4,
//! written here to keep the crate free of dependencies) over the client's address, session
//! and the slot offered, carried in the VERIFY_CONNECT's 16-bit header sentTime and echoed
//! by the client in its ACK of it; and the token bucket bounding cookie replies.

use std::net::{IpAddr, SocketAddr};

/// A cookie is issued in epoch `now / EPOCH_MS` and accepted in that epoch and the next.
pub(crate) const EPOCH_MS: u64 = 5000;
/// Slots tried from the keyed hint to find a free one; a cookie's slot must lie this close
/// to its hint.
pub(crate) const PROBE: usize = 64;

/// SipHash-2-4 of `msg` under the 128-bit `key` (Aumasson & Bernstein, 2012).
pub(crate) fn siphash24(key: &[u8; 16], msg: &[u8]) -> u64 {
    let (k0, k1) = match (key.first_chunk::<8>(), key.last_chunk::<8>()) {
        (Some(a), Some(b)) => (u64::from_le_bytes(*a), u64::from_le_bytes(*b)),
        _ => (0, 0),
    };
    let mut v = [
        k0 ^ 0x736f_6d65_7073_6575,
        k1 ^ 0x646f_7261_6e64_6f6d,
        k0 ^ 0x6c79_6765_6e65_7261,
        k1 ^ 0x7465_6462_7974_6573,
    ];
    fn round(v: &mut [u64; 4]) {
        let [v0, v1, v2, v3] = v;
        *v0 = v0.wrapping_add(*v1);
        *v1 = v1.rotate_left(13) ^ *v0;
        *v0 = v0.rotate_left(32);
        *v2 = v2.wrapping_add(*v3);
        *v3 = v3.rotate_left(16) ^ *v2;
        *v0 = v0.wrapping_add(*v3);
        *v3 = v3.rotate_left(21) ^ *v0;
        *v2 = v2.wrapping_add(*v1);
        *v1 = v1.rotate_left(17) ^ *v2;
        *v2 = v2.rotate_left(32);
    }
    let compress = |v: &mut [u64; 4], m: u64| {
        v[3] ^= m;
        round(v);
        round(v);
        v[0] ^= m;
    };
    let chunks = msg.chunks_exact(8);
    let tail = chunks.remainder();
    for c in chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        compress(&mut v, u64::from_le_bytes(w));
    }
    let mut last = (msg.len() as u64 & 0xFF) << 56;
    for (i, b) in tail.iter().enumerate() {
        last |= u64::from(*b) << (8 * i);
    }
    compress(&mut v, last);
    v[2] ^= 0xFF;
    for _ in 0..4 {
        round(&mut v);
    }
    v[0] ^ v[1] ^ v[2] ^ v[3]
}

/// The MAC input for a client: a tag, its IP (IPv4 as v4-mapped IPv6), port and session,
/// then `extra`.
fn mac(secret: &[u8; 16], tag: u8, from: SocketAddr, session: u32, extra: &[u8]) -> u64 {
    let ip = match from.ip() {
        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        IpAddr::V6(v6) => v6.octets(),
    };
    let mut m = [0u8; 40];
    let bytes = std::iter::once(tag)
        .chain(ip)
        .chain(from.port().to_le_bytes())
        .chain(session.to_le_bytes())
        .chain(extra.iter().copied());
    let mut len = 0;
    for (d, s) in m.iter_mut().zip(bytes) {
        *d = s;
        len += 1;
    }
    siphash24(secret, m.get(..len).unwrap_or_default())
}

/// Where the search for a free slot for this client starts, among `n` slots: a keyed hash
/// (a spoofer cannot aim at slots) into the upper half, as far as possible from the lowest
/// free slots that ordinary CONNECTs take, so an offered slot is rarely taken by someone
/// else before the client's ACK comes back.
pub(crate) fn first_slot(n: usize, secret: &[u8; 16], from: SocketAddr, session: u32) -> usize {
    let low = n / 2;
    let span = n.saturating_sub(low).max(1) as u64;
    low + (mac(secret, 0, from, session, &[]) % span) as usize
}

/// The 16-bit cookie for this client, epoch and offered slot.
pub(crate) fn cookie(
    secret: &[u8; 16],
    epoch: u64,
    from: SocketAddr,
    session: u32,
    slot: u16,
) -> u16 {
    let mut extra = [0u8; 10];
    for (d, s) in extra
        .iter_mut()
        .zip(epoch.to_le_bytes().into_iter().chain(slot.to_le_bytes()))
    {
        *d = s;
    }
    (mac(secret, 1, from, session, &extra) & 0xFFFF) as u16
}

/// A token bucket of cookie replies: `rate` per second, bursts up to `rate`.
#[derive(Debug)]
pub(crate) struct ReplyBudget {
    /// Tokens in thousandths.
    milli: u64,
    last: u64,
}

impl ReplyBudget {
    pub(crate) fn new(rate: u32) -> Self {
        Self {
            milli: u64::from(rate) * 1000,
            last: 0,
        }
    }

    /// Takes one token if there is one.
    pub(crate) fn take(&mut self, now: u64, rate: u32) -> bool {
        let cap = u64::from(rate) * 1000;
        let elapsed = now.saturating_sub(self.last);
        self.last = self.last.max(now);
        self.milli = self
            .milli
            .saturating_add(elapsed.saturating_mul(u64::from(rate)))
            .min(cap);
        if self.milli >= 1000 {
            self.milli -= 1000;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn siphash24_matches_the_paper() {
        // Appendix A of the SipHash paper: key 00..0f, message 00..0e.
        let key: [u8; 16] = std::array::from_fn(|i| i as u8);
        let msg: Vec<u8> = (0..15).collect();
        assert_eq!(siphash24(&key, &msg), 0xa129_ca61_49be_45e5);
    }

    #[test]
    #[allow(deprecated)]
    fn siphash24_matches_std_sip_hasher_for_all_tail_lengths() {
        use std::hash::Hasher as _;
        let key: [u8; 16] = std::array::from_fn(|i| (i * 7 + 3) as u8);
        let (k0, k1) = (
            u64::from_le_bytes(key[..8].try_into().unwrap()),
            u64::from_le_bytes(key[8..].try_into().unwrap()),
        );
        for len in 0..64 {
            let msg: Vec<u8> = (0..len).map(|i| (i * 31 + 5) as u8).collect();
            let mut h = std::hash::SipHasher::new_with_keys(k0, k1);
            h.write(&msg);
            assert_eq!(siphash24(&key, &msg), h.finish(), "len {len}");
        }
    }

    #[test]
    fn cookie_depends_on_every_input() {
        let s = [9u8; 16];
        let a: SocketAddr = "10.0.0.2:50000".parse().unwrap();
        let c = cookie(&s, 7, a, 41, 12);
        assert_eq!(c, cookie(&s, 7, a, 41, 12));
        let others = [
            cookie(&[8; 16], 7, a, 41, 12),
            cookie(&s, 8, a, 41, 12),
            cookie(&s, 7, "10.0.0.3:50000".parse().unwrap(), 41, 12),
            cookie(&s, 7, "10.0.0.2:50001".parse().unwrap(), 41, 12),
            cookie(&s, 7, a, 42, 12),
            cookie(&s, 7, a, 41, 13),
        ];
        // 16 bits: a collision is possible in principle, not for these inputs.
        assert!(others.iter().all(|&o| o != c), "{c} {others:?}");
    }

    #[test]
    fn budget_refills_with_time() {
        let mut b = ReplyBudget::new(3);
        assert!((0..3).all(|_| b.take(0, 3)));
        assert!(!b.take(0, 3));
        assert!(!b.take(300, 3), "0.9 tokens");
        assert!(b.take(334, 3));
        assert!((0..3).all(|_| b.take(10_000, 3)), "refilled, capped at 3");
        assert!(!b.take(10_000, 3));
    }
}
