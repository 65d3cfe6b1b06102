//! The gateway's certificate and the quinn server configurations of its two endpoints.
//!
//! With no configured certificate the gateway creates a self-signed one on first start,
//! keeps it in the data directory (`gateway-cert.pem`, `gateway-key.pem`, key mode 0600) so
//! restarts keep the same identity, and logs its SHA-256 fingerprint: development clients may
//! skip verification, others pin that fingerprint (transport.md, "Connection").

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use sha2::{Digest, Sha256};

/// File name of the generated certificate inside the data directory.
pub const CERT_FILE: &str = "gateway-cert.pem";
/// File name of the generated key inside the data directory.
pub const KEY_FILE: &str = "gateway-key.pem";
/// File name of the internal endpoint's certificate inside the data directory (zone nodes
/// pin its SHA-256, `ZONE_NODE_GATEWAY_CERT_SHA256`, so it is kept across restarts).
pub const INTERNAL_CERT_FILE: &str = "internal-cert.pem";
/// File name of the internal endpoint's key inside the data directory.
pub const INTERNAL_KEY_FILE: &str = "internal-key.pem";

/// A certificate problem.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// Reading or writing a file.
    #[error("{path}: {source}")]
    Io {
        /// Which file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A PEM file without the expected item.
    #[error("{path}: {what}")]
    Pem {
        /// Which file.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
    /// Generating a certificate.
    #[error("generating a self-signed certificate: {0}")]
    Generate(String),
    /// rustls or quinn refused the configuration.
    #[error("TLS configuration: {0}")]
    Config(String),
}

/// The certificate chain and key the client endpoint presents.
#[derive(Debug)]
pub struct Identity {
    /// Chain, leaf first.
    pub chain: Vec<CertificateDer<'static>>,
    /// Private key.
    pub key: PrivateKeyDer<'static>,
}

impl Clone for Identity {
    fn clone(&self) -> Self {
        Self {
            chain: self.chain.clone(),
            key: self.key.clone_key(),
        }
    }
}

impl Identity {
    /// SHA-256 of the leaf certificate's DER, lowercase hex.
    pub fn fingerprint(&self) -> String {
        self.chain
            .first()
            .map(|c| hex::encode(Sha256::digest(c.as_ref())))
            .unwrap_or_default()
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> TlsError + '_ {
    move |source| TlsError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Load a PEM chain and key.
pub fn load_pem(cert: &Path, key: &Path) -> Result<Identity, TlsError> {
    use rustls::pki_types::pem::PemObject as _;
    let cert_pem = std::fs::read(cert).map_err(io(cert))?;
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| TlsError::Pem {
            path: cert.to_owned(),
            what: e.to_string(),
        })?;
    if chain.is_empty() {
        return Err(TlsError::Pem {
            path: cert.to_owned(),
            what: "no CERTIFICATE block".into(),
        });
    }
    let key_pem = std::fs::read(key).map_err(io(key))?;
    let key_der = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| TlsError::Pem {
        path: key.to_owned(),
        what: e.to_string(),
    })?;
    Ok(Identity {
        chain,
        key: key_der,
    })
}

/// The data directory's client certificate, created on first use.
pub fn load_or_create(data_dir: &Path) -> Result<(Identity, bool), TlsError> {
    load_or_create_named(data_dir, CERT_FILE, KEY_FILE)
}

/// The data directory's internal-endpoint certificate, created on first use and kept, so
/// the fingerprint nodes pin survives restarts.
pub fn load_or_create_internal(data_dir: &Path) -> Result<(Identity, bool), TlsError> {
    load_or_create_named(data_dir, INTERNAL_CERT_FILE, INTERNAL_KEY_FILE)
}

fn load_or_create_named(
    data_dir: &Path,
    cert_file: &str,
    key_file: &str,
) -> Result<(Identity, bool), TlsError> {
    let cert = data_dir.join(cert_file);
    let key = data_dir.join(key_file);
    if cert.exists() && key.exists() {
        return load_pem(&cert, &key).map(|i| (i, false));
    }
    std::fs::create_dir_all(data_dir).map_err(io(data_dir))?;
    let names = vec!["gateway".to_owned(), "localhost".to_owned()];
    let ck =
        rcgen::generate_simple_self_signed(names).map_err(|e| TlsError::Generate(e.to_string()))?;
    write_private(&key, ck.signing_key.serialize_pem().as_bytes())?;
    std::fs::write(&cert, ck.cert.pem()).map_err(io(&cert))?;
    load_pem(&cert, &key).map(|i| (i, true))
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<(), TlsError> {
    use std::io::Write as _;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        opts.mode(0o600);
    }
    let mut f = opts.open(path).map_err(io(path))?;
    f.write_all(bytes).map_err(io(path))
}

/// A fresh in-memory self-signed identity (the internal endpoint of a standalone gateway,
/// tests).
pub fn ephemeral() -> Result<Identity, TlsError> {
    let ck = rcgen::generate_simple_self_signed(vec!["gateway".to_owned()])
        .map_err(|e| TlsError::Generate(e.to_string()))?;
    Ok(Identity {
        chain: vec![CertificateDer::from(ck.cert.der().to_vec())],
        key: PrivateKeyDer::Pkcs8(rustls::pki_types::PrivatePkcs8KeyDer::from(
            ck.signing_key.serialize_der(),
        )),
    })
}

/// Transport limits of one endpoint.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Idle timeout.
    pub idle: Duration,
    /// Bidirectional streams a peer may open (clients use one).
    pub bidi_streams: u32,
    /// Datagram receive buffer (bytes).
    pub datagram_buffer: usize,
    /// How often the peer is asked to acknowledge (`None`: QUIC's default, every other
    /// packet or after 25 ms).
    pub peer_acks: Option<PeerAcks>,
}

/// The acknowledgement rate asked of the peer with QUIC's ACK frequency extension
/// (draft-ietf-quic-ack-frequency; quinn peers honour it, others ignore it).
///
/// Every forwarded `P_StandardUpdate` datagram is ack-eliciting, and by default a peer
/// acknowledges every other packet: at 1,000 players the gateway received about as many
/// ACK-only packets as datagrams. Datagrams are never retransmitted, so a slower ACK only
/// delays loss detection of the reliable stream by at most `max_delay`.
#[derive(Debug, Clone, Copy)]
pub struct PeerAcks {
    /// Ack-eliciting packets the peer may receive before it must acknowledge.
    pub threshold: u32,
    /// The longest the peer may hold back an acknowledgement.
    pub max_delay: Duration,
}

impl PeerAcks {
    /// Clients: a few packets or 50 ms; the acknowledgements mostly ride the client's own
    /// 5 Hz `P_StandardUpdate` datagrams.
    pub const CLIENTS: Self = Self {
        threshold: 10,
        max_delay: Duration::from_millis(50),
    };
    /// Zone nodes: one ACK per 32 datagrams or 20 ms on the loopback/LAN link.
    pub const NODES: Self = Self {
        threshold: 32,
        max_delay: Duration::from_millis(20),
    };

    /// The quinn configuration.
    pub fn config(self) -> quinn::AckFrequencyConfig {
        let mut c = quinn::AckFrequencyConfig::default();
        c.ack_eliciting_threshold(quinn::VarInt::from_u32(self.threshold))
            .max_ack_delay(Some(self.max_delay));
        c
    }
}

/// A quinn server configuration offering `alpns` (in order of preference) with `identity`.
pub fn server_config(
    identity: &Identity,
    alpns: &[&[u8]],
    limits: Limits,
) -> Result<quinn::ServerConfig, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| TlsError::Config(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(identity.chain.clone(), identity.key.clone_key())
        .map_err(|e| TlsError::Config(e.to_string()))?;
    tls.alpn_protocols = alpns.iter().map(|a| a.to_vec()).collect();
    tls.max_early_data_size = 0;
    let quic = quinn::crypto::rustls::QuicServerConfig::try_from(tls)
        .map_err(|e| TlsError::Config(e.to_string()))?;
    let mut cfg = quinn::ServerConfig::with_crypto(Arc::new(quic));
    let mut t = quinn::TransportConfig::default();
    let idle = quinn::IdleTimeout::try_from(limits.idle)
        .map_err(|e| TlsError::Config(format!("idle timeout: {e}")))?;
    t.max_idle_timeout(Some(idle));
    t.max_concurrent_bidi_streams(limits.bidi_streams.into());
    t.max_concurrent_uni_streams(0u32.into());
    t.datagram_receive_buffer_size(Some(limits.datagram_buffer));
    t.datagram_send_buffer_size(limits.datagram_buffer);
    t.ack_frequency_config(limits.peer_acks.map(PeerAcks::config));
    cfg.transport_config(Arc::new(t));
    Ok(cfg)
}

/// The players' endpoint's configuration: the configured certificate (`cert_path`,
/// `key_path`) or the one kept in the data directory, ALPN `rc/1` and `rc-compact/1`, and
/// with `fanout` the zone nodes' `rc-fanout/1` too (an edge's endpoint).
/// Returns it with the identity and whether the certificate was just made.
pub fn client_endpoint_config(
    cfg: &crate::config::GatewayConfig,
    fanout: bool,
) -> Result<(quinn::ServerConfig, Identity, bool), TlsError> {
    let (identity, created) = match (&cfg.cert_path, &cfg.key_path) {
        (Some(c), Some(k)) => (load_pem(c, k)?, false),
        _ => load_or_create(&cfg.data_dir)?,
    };
    let alpns: &[&[u8]] = if fanout {
        &[
            b"rc/1",
            shared::compact::ALPN,
            shared::internal::FANOUT_ALPN,
        ]
    } else {
        &[b"rc/1", shared::compact::ALPN]
    };
    let server = server_config(
        &identity,
        alpns,
        Limits {
            idle: cfg.idle_timeout(),
            bidi_streams: 1,
            datagram_buffer: 256 * 1024,
            peer_acks: Some(PeerAcks::CLIENTS),
        },
    )?;
    Ok((server, identity, created))
}

/// Accepts any certificate from the leader: an edge authenticates the leader by its
/// HMAC proof over the cluster secret, bound to this TLS connection's exporter
/// (`shared::internal::edge`), which a man in the middle cannot produce; TLS still
/// encrypts and checks the handshake's signature.
#[derive(Debug)]
struct LeaderVerifier(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for LeaderVerifier {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The QUIC client configuration of an edge's link to the leader (`rc-edge/1`):
/// keep-alives every `heartbeat`, given up after `idle` of silence.
pub fn edge_client_config(
    heartbeat: Duration,
    idle: Duration,
) -> Result<quinn::ClientConfig, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| TlsError::Config(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(LeaderVerifier(provider)))
        .with_no_client_auth();
    tls.alpn_protocols = vec![shared::internal::edge::ALPN.to_vec()];
    let quic = quinn::crypto::rustls::QuicClientConfig::try_from(tls)
        .map_err(|e| TlsError::Config(e.to_string()))?;
    let mut client = quinn::ClientConfig::new(Arc::new(quic));
    let mut t = quinn::TransportConfig::default();
    t.keep_alive_interval(Some(heartbeat));
    t.initial_rtt(shared::internal::LINK_INITIAL_RTT);
    let idle = quinn::IdleTimeout::try_from(idle)
        .map_err(|e| TlsError::Config(format!("idle timeout: {e}")))?;
    t.max_idle_timeout(Some(idle));
    t.datagram_receive_buffer_size(Some(8 << 20));
    t.datagram_send_buffer_size(8 << 20);
    t.ack_frequency_config(Some(PeerAcks::NODES.config()));
    client.transport_config(Arc::new(t));
    Ok(client)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generated_certificate_is_kept_across_restarts() {
        let dir = std::env::temp_dir().join(format!("gw-tls-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (a, created) = load_or_create(&dir).unwrap();
        assert!(created);
        let (b, created) = load_or_create(&dir).unwrap();
        assert!(!created);
        assert_eq!(a.fingerprint(), b.fingerprint());
        // The internal endpoint's own certificate, kept the same way, is another one.
        let (i, created) = load_or_create_internal(&dir).unwrap();
        assert!(created);
        let (j, _) = load_or_create_internal(&dir).unwrap();
        assert_eq!(i.fingerprint(), j.fingerprint());
        assert_ne!(i.fingerprint(), a.fingerprint());
        assert_eq!(a.fingerprint().len(), 64);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(dir.join(KEY_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "the key is private");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn bad_pem_files_are_named() {
        let dir = std::env::temp_dir().join(format!("gw-tls-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cert = dir.join("c.pem");
        let key = dir.join("k.pem");
        std::fs::write(&cert, b"not a pem").unwrap();
        std::fs::write(&key, b"").unwrap();
        let e = load_pem(&cert, &key).unwrap_err().to_string();
        assert!(e.contains("c.pem"), "{e}");
        let e = load_pem(&dir.join("missing.pem"), &key)
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing.pem"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
