//! How the client checks the gateway's certificate: development mode (any certificate), a
//! pinned SHA-256 fingerprint, or a root store (a CA-issued certificate), and the TLS 1.3
//! configuration built from that choice.

use std::sync::{Arc, Mutex};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};

use crate::error::ClientError;

/// The ALPN protocol id of the client contract (transport.md).
pub const ALPN: &[u8] = b"rc/1";

/// How the client checks the gateway's certificate.
///
/// The gateway logs the SHA-256 fingerprint of its certificate on start; production clients
/// pin it ([`Verify::PinSha256`]) or trust a CA ([`Verify::Roots`]). [`Verify::Insecure`] is
/// for development only.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Verify {
    /// Accept any certificate (development only).
    ///
    /// The TLS 1.3 handshake signature is still checked, so the server does hold the key of
    /// the certificate it shows, but nothing ties that certificate to the gateway.
    Insecure,
    /// Accept only an end-entity certificate whose SHA-256 over its DER encoding equals this
    /// value. The server name, the chain and the validity dates are not checked: the pin is
    /// the whole trust decision. The TLS 1.3 handshake signature is checked.
    PinSha256([u8; 32]),
    /// Verify the chain against these roots and the server name given to
    /// [`Connection::connect`](crate::Connection::connect) (webpki, as browsers do).
    Roots(Arc<rustls::RootCertStore>),
}

impl Verify {
    /// A pin from 64 hex digits, upper or lower case, optionally separated by `:` as
    /// certificate tools print fingerprints (`AB:CD:...`).
    pub fn pin_from_hex(text: &str) -> Result<Self, PinParseError> {
        parse_pin(text).map(Self::PinSha256)
    }
}

/// A pin that is not 32 bytes of hex.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a certificate pin is 64 hex digits (optionally separated by ':'), got {0:?}")]
pub struct PinParseError(pub String);

/// Parses a SHA-256 fingerprint written as hex, with optional `:` separators.
pub fn parse_pin(text: &str) -> Result<[u8; 32], PinParseError> {
    let clean: String = text.trim().chars().filter(|c| *c != ':').collect();
    hex::decode(&clean)
        .ok()
        .and_then(|v| <[u8; 32]>::try_from(v).ok())
        .ok_or_else(|| PinParseError(text.to_owned()))
}

/// The SHA-256 of a certificate's DER encoding: the value [`Verify::PinSha256`] compares.
pub fn sha256_fingerprint(der: &[u8]) -> [u8; 32] {
    let d = ring::digest::digest(&ring::digest::SHA256, der);
    let mut out = [0u8; 32];
    for (o, b) in out.iter_mut().zip(d.as_ref()) {
        *o = *b;
    }
    out
}

/// Accepts any certificate (`pin: None`) or only the pinned one, and verifies the handshake
/// signature with the ring provider either way. Remembers the fingerprint of a rejected
/// certificate so the connect error can say what the server showed.
#[derive(Debug)]
pub(crate) struct FingerprintVerifier {
    pin: Option<[u8; 32]>,
    provider: Arc<CryptoProvider>,
    rejected: Mutex<Option<[u8; 32]>>,
}

impl FingerprintVerifier {
    /// The fingerprint of the certificate that failed the pin, if one did.
    pub(crate) fn rejected(&self) -> Option<[u8; 32]> {
        self.rejected.lock().ok().and_then(|g| *g)
    }

    pub(crate) fn pin(&self) -> Option<[u8; 32]> {
        self.pin
    }
}

impl ServerCertVerifier for FingerprintVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(pin) = self.pin else {
            return Ok(ServerCertVerified::assertion());
        };
        let got = sha256_fingerprint(end_entity.as_ref());
        if got == pin {
            return Ok(ServerCertVerified::assertion());
        }
        tracing::debug!(
            got = %hex::encode(got),
            pinned = %hex::encode(pin),
            "server certificate does not match the pin"
        );
        if let Ok(mut g) = self.rejected.lock() {
            *g = Some(got);
        }
        Err(rustls::Error::InvalidCertificate(
            CertificateError::ApplicationVerificationFailure,
        ))
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        // Unreachable in practice: the configuration offers TLS 1.3 only.
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// The rustls configuration for `verify`: ring provider, TLS 1.3 only, ALPN `rc/1`. Also
/// returns the fingerprint verifier when one is in use, to explain a rejected pin.
pub(crate) fn tls_config(
    verify: &Verify,
) -> Result<(rustls::ClientConfig, Option<Arc<FingerprintVerifier>>), ClientError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| ClientError::Config(format!("TLS 1.3 with the ring provider: {e}")))?;
    let (mut tls, fp) = match verify {
        Verify::Roots(roots) => (
            builder
                .with_root_certificates(roots.clone())
                .with_no_client_auth(),
            None,
        ),
        Verify::Insecure | Verify::PinSha256(_) => {
            let pin = match verify {
                Verify::PinSha256(p) => Some(*p),
                _ => None,
            };
            let v = Arc::new(FingerprintVerifier {
                pin,
                provider,
                rejected: Mutex::new(None),
            });
            let tls = builder
                .dangerous()
                .with_custom_certificate_verifier(v.clone())
                .with_no_client_auth();
            (tls, Some(v))
        }
    };
    tls.alpn_protocols = vec![ALPN.to_vec()];
    Ok((tls, fp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_parse_with_and_without_colons() {
        let hex64 = "00112233445566778899aabbccddeeff00112233445566778899AABBCCDDEEFF";
        let a = parse_pin(hex64).unwrap();
        assert_eq!(a[1], 0x11);
        assert_eq!(a[31], 0xff);
        let colons = hex64
            .as_bytes()
            .chunks(2)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect::<Vec<_>>()
            .join(":");
        assert_eq!(parse_pin(&colons).unwrap(), a);
        assert!(parse_pin("abcd").is_err());
        assert!(parse_pin(&format!("{hex64}00")).is_err());
        assert!(parse_pin(&hex64.replace('0', "g")).is_err());
    }

    #[test]
    fn fingerprint_is_sha256() {
        // SHA-256("abc"), FIPS 180-2 appendix B.1.
        assert_eq!(
            hex::encode(sha256_fingerprint(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
