//! Mutual challenge-response authentication with the cluster secret, bound to the TLS
//! connection.
//!
//! Both proofs are `HMAC-SHA256(secret, label || client_nonce || server_nonce || exporter)`
//! with a different label per direction (the gateway first sends only a blinded
//! [`commitment`] to its proof, and opens it after the node's proof verified), where `exporter` is the connection's TLS
//! exporter value for [`super::EXPORTER_LABEL`] (RFC 5705 / RFC 8446 §7.5). A proof taken
//! from one connection is useless on another, and neither side learns the secret. Nonces
//! come from the caller (no RNG here); verification is constant-time.

use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

const GATEWAY_LABEL: &[u8] = b"rc-internal/1 gateway proof";
const NODE_LABEL: &[u8] = b"rc-internal/1 node proof";

/// Smallest accepted cluster secret, in bytes (32 random bytes: 256 bits).
pub const MIN_SECRET_LEN: usize = 32;

/// Secrets that were ever published (examples, old compose defaults): refused whatever
/// their length.
const KNOWN_SECRETS: &[&str] = &[
    "dev-only-cluster-secret-change-me",
    "change-me-to-16-bytes-or-more",
    "change-me-to-32-random-bytes-or-more",
];

/// Why a cluster secret is refused, if it is: shorter than [`MIN_SECRET_LEN`], one
/// published in an example, or one byte repeated.
pub fn weak_secret(secret: &[u8]) -> Option<String> {
    if secret.len() < MIN_SECRET_LEN {
        return Some(format!(
            "at least {MIN_SECRET_LEN} bytes (e.g. `openssl rand -hex 32`), got {}",
            secret.len()
        ));
    }
    if KNOWN_SECRETS.iter().any(|k| k.as_bytes() == secret) {
        return Some("a published example; generate your own (`openssl rand -hex 32`)".into());
    }
    if secret.iter().all(|&b| Some(&b) == secret.first()) {
        return Some("one byte repeated; generate a random one (`openssl rand -hex 32`)".into());
    }
    None
}

fn proof(
    secret: &[u8],
    label: &[u8],
    client_nonce: &[u8; 32],
    server_nonce: &[u8; 32],
    exporter: &[u8],
) -> [u8; 32] {
    // HMAC takes keys of any length; `new_from_slice` cannot fail for it.
    let mut out = [0u8; 32];
    if let Ok(mut mac) = HmacSha256::new_from_slice(secret) {
        mac.update(label);
        mac.update(client_nonce);
        mac.update(server_nonce);
        mac.update(exporter);
        out.copy_from_slice(&mac.finalize().into_bytes());
    }
    out
}

fn verify(
    secret: &[u8],
    label: &[u8],
    client_nonce: &[u8; 32],
    server_nonce: &[u8; 32],
    exporter: &[u8],
    claimed: &[u8; 32],
) -> bool {
    let Ok(mut mac) = HmacSha256::new_from_slice(secret) else {
        return false;
    };
    mac.update(label);
    mac.update(client_nonce);
    mac.update(server_nonce);
    mac.update(exporter);
    mac.verify_slice(claimed).is_ok()
}

/// The gateway's proof, sent in `Challenge`.
pub fn gateway_proof(
    secret: &[u8],
    client_nonce: &[u8; 32],
    server_nonce: &[u8; 32],
    exporter: &[u8],
) -> [u8; 32] {
    proof(secret, GATEWAY_LABEL, client_nonce, server_nonce, exporter)
}

/// The node's proof, sent in `Auth`.
pub fn node_proof(
    secret: &[u8],
    client_nonce: &[u8; 32],
    server_nonce: &[u8; 32],
    exporter: &[u8],
) -> [u8; 32] {
    proof(secret, NODE_LABEL, client_nonce, server_nonce, exporter)
}

const COMMIT_LABEL: &[u8] = b"rc-internal/1 gateway commitment";

/// The gateway's commitment to its proof: `SHA-256(label || proof || blind)` with 32 fresh
/// random bytes `blind`, sent in `Challenge` instead of the proof itself. It reveals
/// nothing a guess of the secret could be checked against (the blind is unknown) until
/// the gateway opens it in `Proven`, which it does only after the node proved itself: a
/// stranger who connects as a node never sees a value it could test guesses on offline.
pub fn commitment(proof: &[u8; 32], blind: &[u8; 32]) -> [u8; 32] {
    use sha2::Digest as _;
    let mut h = Sha256::new();
    h.update(COMMIT_LABEL);
    h.update(proof);
    h.update(blind);
    h.finalize().into()
}

/// Whether `proof` and `blind` open `commitment` (constant time).
pub fn opens(commitment_sent: &[u8; 32], proof: &[u8; 32], blind: &[u8; 32]) -> bool {
    let c = commitment(proof, blind);
    c.iter()
        .zip(commitment_sent)
        .fold(0u8, |d, (a, b)| d | (a ^ b))
        == 0
}

/// Check a gateway proof (constant time).
pub fn verify_gateway(
    secret: &[u8],
    client_nonce: &[u8; 32],
    server_nonce: &[u8; 32],
    exporter: &[u8],
    claimed: &[u8; 32],
) -> bool {
    verify(
        secret,
        GATEWAY_LABEL,
        client_nonce,
        server_nonce,
        exporter,
        claimed,
    )
}

/// Check a node proof (constant time).
pub fn verify_node(
    secret: &[u8],
    client_nonce: &[u8; 32],
    server_nonce: &[u8; 32],
    exporter: &[u8],
    claimed: &[u8; 32],
) -> bool {
    verify(
        secret,
        NODE_LABEL,
        client_nonce,
        server_nonce,
        exporter,
        claimed,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proofs_verify_only_with_the_same_secret_nonces_and_exporter() {
        let (c, s, x) = ([1u8; 32], [2u8; 32], [3u8; 32]);
        let secret = b"0123456789abcdef-cluster";
        let g = gateway_proof(secret, &c, &s, &x);
        let n = node_proof(secret, &c, &s, &x);
        assert_ne!(g, n, "directions use different labels");
        assert!(verify_gateway(secret, &c, &s, &x, &g));
        assert!(verify_node(secret, &c, &s, &x, &n));
        assert!(!verify_node(secret, &c, &s, &x, &g), "no reflection");
        assert!(!verify_gateway(b"another secret!!!", &c, &s, &x, &g));
        assert!(
            !verify_gateway(secret, &c, &s, &[4u8; 32], &g),
            "bound to TLS"
        );
        assert!(!verify_gateway(secret, &s, &c, &x, &g));
    }
}
