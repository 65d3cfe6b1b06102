//! Password hashing behind a small trait, so tests use cheap parameters and the shell can run
//! the expensive argon2 work off the packet loop.
//!
//! What is hashed is the lowercase 32-hex MD5 the client sends (reference §5): the MD5 hex *is*
//! the password as far as the server is concerned. Stored form: an argon2id PHC string
//! (`$argon2id$v=19$m=…,t=…,p=…$salt$hash`), with a 16-byte random salt taken from an injected
//! RNG so the session core stays deterministic under test.
//!
//! Cost: [`Argon2Hasher::production`] takes tens of milliseconds per call. The session calls
//! the hasher synchronously (it stays pure); a shell that cannot afford that on its packet task
//! should run [`crate::session::Session::handle_packet`] for login packets on a blocking pool,
//! or wrap the hasher so it is backed by one. Sessions cache a successful verification (the
//! account id and the exact MD5 bytes), so the per-packet credential checks of the menu
//! packets hash at most once per connection.

use argon2::password_hash::{PasswordHash, PasswordHasher as _, PasswordVerifier as _, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};

/// Hashing failed (bad parameters or salt encoding); never caused by client input.
#[derive(Debug, thiserror::Error)]
#[error("password hashing failed: {0}")]
pub struct HashError(String);

/// Hashes and verifies the client's password MD5 hex.
pub trait PasswordHasher {
    /// Hashes `md5_hex` with `salt`, returning a PHC string to store.
    fn hash(&self, md5_hex: &[u8], salt: &[u8; 16]) -> Result<String, HashError>;
    /// Whether `md5_hex` matches the stored PHC string (false for malformed strings).
    fn verify(&self, md5_hex: &[u8], stored: &str) -> bool;
    /// Whether a stored hash should be replaced by a fresh one after a successful
    /// verification (legacy formats). Default: anything that is not argon2id.
    fn needs_rehash(&self, stored: &str) -> bool {
        !stored.starts_with("$argon2id$")
    }
    /// Spends about the cost of one verification (used for unknown user names, so their
    /// failures take as long as wrong passwords).
    fn burn(&self, md5_hex: &[u8]) {
        let _ = self.hash(md5_hex, &[0; 16]);
    }
}

/// Verifies a Realm Crafter V1 record `$1$<salt>$<sha256hex(salt + md5)>` (reference §5),
/// accepted so imported V1 accounts can log in; the session re-hashes them with argon2 on the
/// first successful login.
pub fn verify_rc_v1(md5_hex: &[u8], stored: &str) -> bool {
    use sha2::{Digest, Sha256};
    let Some(rest) = stored.strip_prefix("$1$") else {
        return false;
    };
    let Some((salt, want)) = rest.split_once('$') else {
        return false;
    };
    let mut h = Sha256::new();
    h.update(salt.as_bytes());
    h.update(md5_hex);
    let got = hex::encode(h.finalize());
    // Not secret-dependent timing that matters: the stored digest is not the password.
    got.eq_ignore_ascii_case(want)
}

/// argon2id with configurable cost.
#[derive(Debug, Clone)]
pub struct Argon2Hasher {
    params: Params,
}

impl Argon2Hasher {
    /// The argon2 crate's defaults (OWASP: m = 19 MiB, t = 2, p = 1).
    pub fn production() -> Self {
        Self {
            params: Params::default(),
        }
    }

    /// Deliberately weak parameters (m = 8 KiB, t = 1) for tests only.
    pub fn fast_for_tests() -> Self {
        Self {
            params: Params::new(8, 1, 1, None).unwrap_or_default(),
        }
    }

    fn argon(&self) -> Argon2<'static> {
        Argon2::new(Algorithm::Argon2id, Version::V0x13, self.params.clone())
    }
}

impl PasswordHasher for Argon2Hasher {
    fn hash(&self, md5_hex: &[u8], salt: &[u8; 16]) -> Result<String, HashError> {
        let salt = SaltString::encode_b64(salt).map_err(|e| HashError(e.to_string()))?;
        self.argon()
            .hash_password(md5_hex, &salt)
            .map(|h| h.to_string())
            .map_err(|e| HashError(e.to_string()))
    }

    fn verify(&self, md5_hex: &[u8], stored: &str) -> bool {
        if stored.starts_with("$1$") {
            return verify_rc_v1(md5_hex, stored);
        }
        match PasswordHash::new(stored) {
            // The parameters come from the stored string.
            Ok(parsed) => self.argon().verify_password(md5_hex, &parsed).is_ok(),
            Err(_) => false,
        }
    }
}

/// A hasher whose expensive answers were computed ahead of time, off the packet task (the
/// gateway shell runs argon2 on a blocking thread, then replays the packet through the
/// session with this hasher while it holds the account lock for microseconds only).
///
/// Each method answers from the precomputed values when its inputs match them and falls back
/// to `inner` otherwise, so the session's behaviour is exactly that of `inner`. A
/// precomputed fresh hash carries its own random salt: the `salt` argument of
/// [`PasswordHasher::hash`] is then not used.
pub struct Precomputed<'a> {
    /// The real hasher.
    pub inner: &'a dyn PasswordHasher,
    /// `(md5_hex, stored, result)` of one verification.
    pub verified: Option<(Vec<u8>, String, bool)>,
    /// An MD5 for which the cost of a verification was already spent (unknown user).
    pub burned: Option<Vec<u8>>,
    /// `(md5_hex, hash)`: fresh hashes (new accounts, password changes, rehashes).
    pub fresh: Vec<(Vec<u8>, String)>,
}

impl std::fmt::Debug for Precomputed<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Precomputed")
            .field("verified", &self.verified.as_ref().map(|v| v.2))
            .field("fresh", &self.fresh.len())
            .finish_non_exhaustive()
    }
}

impl PasswordHasher for Precomputed<'_> {
    fn hash(&self, md5_hex: &[u8], salt: &[u8; 16]) -> Result<String, HashError> {
        match self.fresh.iter().find(|(m, _)| m == md5_hex) {
            Some((_, h)) => Ok(h.clone()),
            None => self.inner.hash(md5_hex, salt),
        }
    }

    fn verify(&self, md5_hex: &[u8], stored: &str) -> bool {
        match &self.verified {
            Some((m, s, r)) if m == md5_hex && s == stored => *r,
            _ => self.inner.verify(md5_hex, stored),
        }
    }

    fn needs_rehash(&self, stored: &str) -> bool {
        self.inner.needs_rehash(stored)
    }

    fn burn(&self, md5_hex: &[u8]) {
        if self.burned.as_deref() != Some(md5_hex) {
            self.inner.burn(md5_hex);
        }
    }
}
