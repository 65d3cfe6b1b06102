//! The zone node's internal link to the gateway: a quinn client that authenticates with
//! the cluster secret, registers, heartbeats, dispatches the gateway's messages to the
//! [`Registry`], carries the actors' outputs, reconnects with exponential backoff
//! (re-registering the instances it still runs), and drains on shutdown.
//!
//! The protocol itself (envelopes, codec, proofs, datagram header) is `shared::internal`;
//! this module only moves bytes and keeps the connection's state.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use shared::internal::codec::{CodecError, FrameDecoder, encode_frame};
use shared::internal::handshake::{NodeHandshake, NodeHandshakeError, NodeStep};
use shared::internal::{
    ALPN, EXPORTER_LABEL, EXPORTER_LEN, Envelope, ErrorCode, Msg, PROTOCOL_VERSION, RefuseReason,
};
use tokio::sync::{mpsc, watch};
use tokio::time::{Instant, timeout};
use tracing::Instrument as _;

use crate::actor::node_core::Attach;
use crate::actor::retention::{Retention, snapshot_id};
use crate::actor::{Metrics, Outbound, Registry};
use crate::config::NodeConfig;

mod fanout;

/// Why the link gave up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LinkError {
    /// The QUIC endpoint or TLS setup failed.
    #[error("cannot set up the QUIC client: {0}")]
    Setup(String),
    /// The gateway address does not resolve.
    #[error("gateway address {addr:?} does not resolve: {message}")]
    Resolve {
        /// Address.
        addr: String,
        /// Why.
        message: String,
    },
}

/// Why one connection ended (the link then reconnects, unless draining finished).
#[derive(Debug, thiserror::Error)]
enum SessionEnd {
    #[error("connect failed: {0}")]
    Connect(String),
    #[error("connection lost: {0}")]
    Lost(String),
    #[error("protocol error: {0}")]
    Protocol(String),
    #[error("refused by the gateway: {0}")]
    Refused(RefuseReason),
    #[error("handshake timed out")]
    Timeout,
    #[error("the gateway speaks internal protocol version {theirs}, this node {ours}")]
    PeerVersion { ours: u16, theirs: u16 },
    #[error("a gateway announced it leads with control epoch {0}: registering with it")]
    LeadAnnounced(u64),
}

/// How the link finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkExit {
    /// Drained and deregistered within the deadline.
    Drained,
    /// The drain deadline passed first (some snapshots may be unacknowledged).
    DrainTimedOut,
}

/// Accepts the gateway's certificate if it matches the pin, or any certificate when no
/// pin is set: the HMAC handshake, bound to the TLS exporter, authenticates the gateway
/// either way (a man in the middle cannot produce the proof for our TLS session).
#[derive(Debug)]
struct GatewayVerifier {
    pin: Option<[u8; 32]>,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl rustls::client::danger::ServerCertVerifier for GatewayVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        if let Some(pin) = self.pin {
            let d = ring::digest::digest(&ring::digest::SHA256, end_entity.as_ref());
            if d.as_ref() != pin {
                return Err(rustls::Error::General(
                    "gateway certificate does not match gateway_cert_sha256".into(),
                ));
            }
        }
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
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
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

fn parse_pin(hex_str: &str) -> Option<[u8; 32]> {
    let clean: String = hex_str.chars().filter(|c| *c != ':').collect();
    let v = hex_decode(&clean)?;
    v.try_into().ok()
}

fn hex_decode(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The QUIC client configuration for the internal link.
pub fn client_config(cfg: &NodeConfig) -> Result<quinn::ClientConfig, LinkError> {
    client_config_for(cfg, ALPN)
}

/// The QUIC client configuration offering `alpn` (the internal link's, or the fan-out
/// link's to an edge gateway).
fn client_config_for(cfg: &NodeConfig, alpn: &[u8]) -> Result<quinn::ClientConfig, LinkError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let pin = cfg.gateway_cert_sha256.as_deref().and_then(parse_pin);
    let verifier = Arc::new(GatewayVerifier {
        pin,
        provider: provider.clone(),
    });
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| LinkError::Setup(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    tls.alpn_protocols = vec![alpn.to_vec()];
    let quic = quinn::crypto::rustls::QuicClientConfig::try_from(tls)
        .map_err(|e| LinkError::Setup(e.to_string()))?;
    let mut client = quinn::ClientConfig::new(Arc::new(quic));
    let mut transport = quinn::TransportConfig::default();
    transport.keep_alive_interval(Some(Duration::from_millis(cfg.heartbeat_ms.max(10))));
    transport.initial_rtt(shared::internal::LINK_INITIAL_RTT);
    if let Ok(idle) = quinn::IdleTimeout::try_from(Duration::from_millis(
        (cfg.heartbeat_ms * 5).clamp(1_000, 60_000),
    )) {
        transport.max_idle_timeout(Some(idle));
    }
    transport.datagram_receive_buffer_size(Some(4 << 20));
    // The gateway acknowledges our P_StandardUpdate datagrams once per 32 or 20 ms instead
    // of every other one (QUIC ACK frequency extension; the gateway asks the same of us).
    let mut acks = quinn::AckFrequencyConfig::default();
    acks.ack_eliciting_threshold(quinn::VarInt::from_u32(32))
        .max_ack_delay(Some(Duration::from_millis(20)));
    transport.ack_frequency_config(Some(acks));
    client.transport_config(Arc::new(transport));
    Ok(client)
}

/// Drive the link until drained. `shutdown` turning `true` starts the drain.
pub async fn run(
    cfg: NodeConfig,
    reg: Arc<Registry>,
    mut out_rx: mpsc::UnboundedReceiver<Outbound>,
    mut shutdown: watch::Receiver<bool>,
) -> Result<LinkExit, LinkError> {
    let bind: SocketAddr = cfg.bind_addr;
    let mut endpoint =
        quinn::Endpoint::client(bind).map_err(|e| LinkError::Setup(e.to_string()))?;
    endpoint.set_default_client_config(client_config(&cfg)?);
    let mut state = LinkState::new();
    let (leads, leads_rx) = watch::channel(0);
    state.leads = leads_rx;
    state.fanout = fanout::Fanout::new(fanout::Connector {
        endpoint: endpoint.clone(),
        client: client_config_for(&cfg, shared::internal::FANOUT_ALPN)?,
        cfg: Arc::new(cfg.clone()),
        reg: reg.clone(),
        leads: Arc::new(leads),
    });
    let mut backoff = Duration::from_millis(cfg.reconnect_min_ms);
    let max_backoff = Duration::from_millis(cfg.reconnect_max_ms);
    let span = tracing::info_span!("link", node = %cfg.node_id, gateway = %cfg.gateway_addr);
    loop {
        if *shutdown.borrow() && state.drain_deadline.is_none() {
            start_drain(&reg, &cfg, &mut state);
        }
        let started = Instant::now();
        let end = {
            let _g = span.enter();
            tracing::info!("connecting to the gateway");
            drop(_g);
            session(
                &cfg,
                &endpoint,
                &reg,
                &mut out_rx,
                &mut shutdown,
                &mut state,
            )
            .await
        };
        match end {
            Ok(exit) => {
                endpoint.wait_idle().await;
                return Ok(exit);
            }
            Err(e) => {
                let _g = span.enter();
                // Nothing sent on that connection will be answered now: the scripts
                // waiting for the script store are told at once.
                let failed = reg.fail_script_store();
                if failed > 0 {
                    tracing::warn!(
                        requests = failed,
                        "script store requests failed with the link"
                    );
                }
                // Nor will the handoffs it carried out: their players are put back now.
                reg.gateway_lost();
                match &e {
                    SessionEnd::Refused(r) => {
                        tracing::error!(reason = %r, "gateway refused this node")
                    }
                    SessionEnd::LeadAnnounced(_) => {
                        tracing::info!(error = %e, "another gateway leads now");
                        // Straight to it: it is up (it announced once its endpoint was).
                        backoff = Duration::from_millis(cfg.reconnect_min_ms);
                        continue;
                    }
                    _ => tracing::warn!(error = %e, "gateway link down"),
                }
            }
        }
        if started.elapsed() > Duration::from_secs(10) {
            backoff = Duration::from_millis(cfg.reconnect_min_ms);
        }
        // While disconnected: keep snapshots for later, refuse transfers (so they are never
        // lost), drop the rest; stop when the drain deadline passes.
        let wake = Instant::now() + backoff;
        let mut leads = state.leads.clone();
        let seen = state.gateway_epoch;
        loop {
            if let Some(d) = state.drain_deadline {
                if reg.instance_count() == 0 && state.unacked.is_empty() {
                    // Nothing left to save: no need to wait for a gateway.
                    return Ok(LinkExit::Drained);
                }
                if Instant::now() >= d {
                    return Ok(LinkExit::DrainTimedOut);
                }
            }
            reg.expire_script_store(std::time::Instant::now());
            tokio::select! {
                () = tokio::time::sleep_until(wake) => break,
                _ = newer_lead(&mut leads, seen) => break,
                o = out_rx.recv() => match o {
                    Some(o) => offline(&reg, &mut state, o),
                    None => return Ok(LinkExit::Drained),
                },
                r = shutdown.changed() => {
                    if r.is_ok() && *shutdown.borrow() && state.drain_deadline.is_none() {
                        start_drain(&reg, &cfg, &mut state);
                    }
                }
                () = tokio::time::sleep(Duration::from_millis(20)), if state.drain_deadline.is_some() => {}
            }
        }
        backoff = (backoff * 2).min(max_backoff);
    }
}

struct LinkState {
    /// Snapshots sent (or queued) but not acknowledged, as encoded frames
    /// ([`Retention`], pure; its clock is [`LinkState::now_ms`]).
    unacked: Retention<Vec<u8>>,
    /// Set once draining started.
    drain_deadline: Option<Instant>,
    /// The time base of `unacked`.
    epoch: Instant,
    /// The newest control-plane epoch registered with: a gateway older than this (a
    /// deposed leader that has not noticed yet) is refused and the next address tried.
    gateway_epoch: u64,
    /// The direct fan-out to edge gateways.
    fanout: fanout::Fanout,
    /// The newest control epoch an edge announced taking the lead with (over its fan-out
    /// link): a session with an older leader ends at once to register with it.
    leads: watch::Receiver<u64>,
}

impl LinkState {
    fn new() -> Self {
        Self {
            unacked: Retention::new(),
            drain_deadline: None,
            epoch: Instant::now(),
            gateway_epoch: 0,
            fanout: fanout::Fanout::default(),
            leads: watch::channel(0).1,
        }
    }

    /// Milliseconds since the link started: the retention table's clock.
    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Keeps save `msg` (encoded as `frame`) until it is acknowledged, counting the older
    /// periodic saves it supersedes.
    fn keep(&mut self, msg: &Msg, frame: Vec<u8>, sent: bool, metrics: &Metrics) {
        let at = sent.then(|| self.now_ms());
        let superseded = self.unacked.keep(msg, frame, at);
        Metrics::add(&metrics.snapshots_superseded, superseded as u64);
    }
}

fn start_drain(reg: &Arc<Registry>, cfg: &NodeConfig, state: &mut LinkState) {
    tracing::info!(node = %cfg.node_id, instances = reg.instance_count(), "draining");
    state.drain_deadline = Some(Instant::now() + cfg.drain_timeout());
    reg.drain_all();
}

fn offline(reg: &Arc<Registry>, state: &mut LinkState, o: Outbound) {
    match o {
        Outbound::Msg(msg @ (Msg::Snapshot { .. } | Msg::SnapshotGroup(_))) => {
            let mut v = Vec::new();
            let env = Envelope::new(msg);
            if encode_frame(&env, &mut v).is_ok() {
                state.keep(&env.msg, v, false, &reg.metrics);
            }
        }
        Outbound::Msg(Msg::Transfer(t))
        | Outbound::Envelope(Envelope {
            msg: Msg::Transfer(t),
            ..
        }) => {
            reg.remote_transfer_answer(t.transfer_id, Err("the destination is unreachable".into()));
        }
        Outbound::Msg(Msg::ScriptStore { req, .. }) => {
            // Answered now rather than after a reconnect (never sent, so never answered).
            Metrics::inc(&reg.metrics.outbound_dropped);
            reg.script_store_failed(req);
        }
        _ => Metrics::inc(&reg.metrics.outbound_dropped),
    }
}

/// Resolves with the newest epoch a gateway announced the lead with, once it is newer than
/// `than` ([`fanout`]'s links hear it); never when no announcement can come any more.
async fn newer_lead(leads: &mut watch::Receiver<u64>, than: u64) -> u64 {
    match leads.wait_for(|e| *e > than).await {
        Ok(e) => *e,
        Err(_) => std::future::pending().await,
    }
}

async fn read_envelope(
    recv: &mut quinn::RecvStream,
    dec: &mut FrameDecoder,
) -> Result<Envelope, SessionEnd> {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match dec.next_envelope() {
            Ok(Some(e)) => return Ok(e),
            Ok(None) => {}
            Err(CodecError::VersionMismatch { ours, theirs }) => {
                return Err(SessionEnd::PeerVersion { ours, theirs });
            }
            Err(e) => return Err(SessionEnd::Protocol(e.to_string())),
        }
        match recv.read(&mut buf).await {
            Ok(Some(n)) => dec.push(buf.get(..n).unwrap_or(&[])),
            Ok(None) => return Err(SessionEnd::Lost("control stream closed".into())),
            Err(e) => return Err(SessionEnd::Lost(e.to_string())),
        }
    }
}

async fn write_msg(send: &mut quinn::SendStream, msg: Msg) -> Result<(), SessionEnd> {
    write_env(send, Envelope::new(msg)).await
}

async fn write_env(send: &mut quinn::SendStream, env: Envelope) -> Result<(), SessionEnd> {
    let mut v = Vec::new();
    encode_frame(&env, &mut v).map_err(|e| SessionEnd::Protocol(e.to_string()))?;
    send.write_all(&v)
        .await
        .map_err(|e| SessionEnd::Lost(e.to_string()))
}

/// Connect, authenticate, register; returns the connection and control stream.
async fn handshake(
    cfg: &NodeConfig,
    gateways: &[&str],
    endpoint: &quinn::Endpoint,
    reg: &Registry,
    seen_epoch: u64,
) -> Result<
    (
        quinn::Connection,
        quinn::SendStream,
        quinn::RecvStream,
        FrameDecoder,
        Registered,
    ),
    SessionEnd,
> {
    // Every address of every gateway name (a name may stand for several: every gateway
    // pod behind one headless service), tried at once: only the leading gateway answers
    // (a standby binds no internal endpoint), and a dead one (the leader that just went)
    // costs its timeout beside the others, not before them.
    let mut addrs: Vec<(SocketAddr, &str)> = Vec::new();
    let mut unresolved = Vec::new();
    for &g in gateways {
        match tokio::net::lookup_host(g).await {
            Ok(a) => addrs.extend(a.map(|x| (x, g))),
            Err(e) => unresolved.push(format!("{g}: {e}")),
        }
    }
    if addrs.is_empty() {
        return Err(SessionEnd::Connect(if unresolved.is_empty() {
            "no gateway address".to_owned()
        } else {
            unresolved.join("; ")
        }));
    }
    let tries = addrs.into_iter().map(|(addr, g)| {
        Box::pin(async move {
            let connecting = endpoint
                .connect(addr, &cfg.gateway_server_name)
                .map_err(|e| SessionEnd::Connect(format!("{g} ({addr}): {e}")))?;
            let conn = connecting
                .await
                .map_err(|e| SessionEnd::Connect(format!("{g} ({addr}): {e}")))?;
            Ok::<_, SessionEnd>((conn, g))
        })
    });
    let ((conn, gateway), _others) = futures_util::future::select_ok(tries).await?;
    let (mut send, mut recv) = conn
        .open_bi()
        .await
        .map_err(|e| SessionEnd::Lost(e.to_string()))?;
    // Registration is one trace: this span, the gateway's `node.register` and the
    // placements it makes (their `AssignInstance` carry the context back).
    let span = tracing::info_span!(parent: None, "node.register", node = %cfg.node_id,
        gateway = %gateway, running = reg.instance_count());
    let authenticated = authenticate(cfg, reg, &conn, &mut send, &mut recv, seen_epoch, false)
        .instrument(span)
        .await;
    let (dec, registered) = authenticated?;
    Ok((conn, send, recv, dec, registered))
}

/// What the gateway said when it registered this node.
#[derive(Clone, Copy, Debug)]
struct Registered {
    heartbeat_ms: u64,
    /// The gateway's control-plane epoch.
    epoch: u64,
}

/// Hello / Challenge / Auth / Proven / Register / RegisterAck on the control stream: the
/// node's half of the handshake is [`NodeHandshake`] (sans-IO); this only moves its
/// messages.
async fn authenticate(
    cfg: &NodeConfig,
    reg: &Registry,
    conn: &quinn::Connection,
    send: &mut quinn::SendStream,
    recv: &mut quinn::RecvStream,
    seen_epoch: u64,
    fanout: bool,
) -> Result<(FrameDecoder, Registered), SessionEnd> {
    let mut exporter = [0u8; EXPORTER_LEN];
    conn.export_keying_material(&mut exporter, EXPORTER_LABEL, b"")
        .map_err(|_| SessionEnd::Protocol("TLS exporter unavailable".into()))?;
    let mut dec = FrameDecoder::new();
    let mut client_nonce = [0u8; 32];
    ops::random::fill(&mut client_nonce);
    let (hs, hello) = NodeHandshake::start(
        cfg.cluster_secret.as_bytes(),
        client_nonce,
        &exporter,
        &cfg.node_id,
    );
    let mut hs = hs.not_before(seen_epoch);
    write_msg(send, hello).await?;
    loop {
        let env = match read_envelope(recv, &mut dec).await {
            Ok(env) => Ok(env),
            Err(SessionEnd::PeerVersion { ours, theirs }) => {
                Err(CodecError::VersionMismatch { ours, theirs })
            }
            Err(e) => return Err(e),
        };
        match hs.on_envelope(env) {
            NodeStep::Send(msg) => write_msg(send, msg).await?,
            NodeStep::SendRegister => {
                write_env(
                    send,
                    crate::telemetry::envelope_current(Msg::Register {
                        node_id: cfg.node_id.clone(),
                        advertised_addr: cfg.advertised_addr.clone(),
                        // A fan-out link hosts nothing: it only carries broadcasts.
                        capacity: if fanout { 0 } else { cfg.capacity },
                        protocol_version: PROTOCOL_VERSION,
                        running: if fanout { Vec::new() } else { reg.running() },
                    }),
                )
                .await?;
            }
            NodeStep::Registered {
                gateway_id,
                heartbeat_ms,
                epoch,
            } => {
                if !fanout {
                    tracing::info!(node = %cfg.node_id, gateway = %gateway_id,
                        instances = reg.instance_count(), heartbeat_ms, epoch, "registered");
                }
                return Ok((
                    dec,
                    Registered {
                        heartbeat_ms,
                        epoch,
                    },
                ));
            }
            NodeStep::Refuse { msg, error } => {
                Metrics::inc(&reg.metrics.refused_msgs);
                // Tell the gateway why, let the refusal reach it, then close.
                let _ = write_msg(send, msg).await;
                let _ = send.finish();
                let _ = timeout(Duration::from_millis(300), send.stopped()).await;
                conn.close(2u32.into(), error.to_string().as_bytes());
                return Err(match error {
                    NodeHandshakeError::PeerVersion { ours, theirs } => {
                        SessionEnd::PeerVersion { ours, theirs }
                    }
                    e @ NodeHandshakeError::StaleEpoch { .. } => {
                        tracing::warn!(error = %e, "refused a deposed gateway; trying the next address");
                        SessionEnd::Connect(e.to_string())
                    }
                    e => SessionEnd::Protocol(e.to_string()),
                });
            }
            NodeStep::Fail(NodeHandshakeError::Refused(reason)) => {
                return Err(SessionEnd::Refused(reason));
            }
            NodeStep::Fail(e) => return Err(SessionEnd::Protocol(e.to_string())),
        }
    }
}

enum Incoming {
    Env(Envelope),
    Bad(CodecError),
    Closed(String),
}

/// One connected session; `Ok` once drained, `Err` when the connection is lost.
async fn session(
    cfg: &NodeConfig,
    endpoint: &quinn::Endpoint,
    reg: &Arc<Registry>,
    out_rx: &mut mpsc::UnboundedReceiver<Outbound>,
    shutdown: &mut watch::Receiver<bool>,
    state: &mut LinkState,
) -> Result<LinkExit, SessionEnd> {
    // Connecting is bounded by 10 s and by the drain deadline (an unreachable gateway must
    // not delay the exit past it).
    let limit = |state: &LinkState| {
        state.drain_deadline.map_or(Duration::from_secs(10), |d| {
            d.saturating_duration_since(Instant::now())
                .min(Duration::from_secs(10))
        })
    };
    // Several gateway addresses (standbys and edges, docs/operations.md): all tried at
    // once, so a node finds whichever gateway serves now.
    let gateways = cfg.gateway_addrs();
    // No gateway older than the newest that announced the lead.
    let mut leads = state.leads.clone();
    state.gateway_epoch = state.gateway_epoch.max(*leads.borrow_and_update());
    let seen = state.gateway_epoch;
    let hs = handshake(cfg, &gateways, endpoint, reg, seen);
    tokio::pin!(hs);
    let first_limit = limit(state);
    let hs_result = tokio::select! {
        r = timeout(first_limit, &mut hs) => r,
        // Connecting to gateways that are not up yet (the new leader binds its endpoint
        // after taking over): start again at once when it says it is.
        e = newer_lead(&mut leads, seen), if state.drain_deadline.is_none() => {
            return Err(SessionEnd::LeadAnnounced(e));
        }
        r = shutdown.changed(), if state.drain_deadline.is_none() => {
            if r.is_ok() && *shutdown.borrow() {
                start_drain(reg, cfg, state);
            }
            // Finish the handshake so the gateway hears Deregister; with nothing to save,
            // give an unreachable gateway one second at most.
            let mut left = limit(state);
            if reg.instance_count() == 0 && state.unacked.is_empty() {
                left = left.min(Duration::from_secs(1));
            }
            timeout(left, &mut hs).await
        }
    };
    let (conn, mut send, mut recv, mut dec, registered) = match hs_result {
        Ok(r) => r?,
        Err(_) => return Err(SessionEnd::Timeout),
    };
    state.gateway_epoch = state.gateway_epoch.max(registered.epoch);
    let heartbeat_ms = registered.heartbeat_ms;
    // Re-send what the previous gateway never acknowledged.
    let now = state.now_ms();
    let frames: Vec<u8> = state.unacked.resend_all(now).flatten().copied().collect();
    send.write_all(&frames)
        .await
        .map_err(|e| SessionEnd::Lost(e.to_string()))?;
    // Draining (its SIGTERM, or an operator's drain before the link dropped): the new
    // gateway connection hears it first, so nothing is placed here again.
    if state.drain_deadline.is_some() || reg.is_draining() {
        write_msg(&mut send, Msg::Drain).await?;
    }
    // Reader task: control stream → envelopes.
    let (in_tx, mut in_rx) = mpsc::unbounded_channel::<Incoming>();
    let reader = tokio::spawn(async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            loop {
                match dec.next_envelope() {
                    Ok(Some(e)) => {
                        if in_tx.send(Incoming::Env(e)).is_err() {
                            return;
                        }
                    }
                    Ok(None) => break,
                    Err(e @ (CodecError::Malformed(_) | CodecError::VersionMismatch { .. })) => {
                        if in_tx.send(Incoming::Bad(e)).is_err() {
                            return;
                        }
                    }
                    Err(e) => {
                        let _ = in_tx.send(Incoming::Closed(e.to_string()));
                        return;
                    }
                }
            }
            match recv.read(&mut buf).await {
                Ok(Some(n)) => dec.push(buf.get(..n).unwrap_or(&[])),
                Ok(None) => {
                    let _ = in_tx.send(Incoming::Closed("control stream finished".into()));
                    return;
                }
                Err(e) => {
                    let _ = in_tx.send(Incoming::Closed(e.to_string()));
                    return;
                }
            }
        }
    });
    // Datagram task: gateway datagrams straight into the instances' inboxes.
    let dconn = conn.clone();
    let dreg = reg.clone();
    let dgrams = tokio::spawn(async move {
        while let Ok(d) = dconn.read_datagram().await {
            dreg.client_datagram(&d);
        }
    });
    let result = session_loop(
        cfg,
        (heartbeat_ms, registered.epoch),
        &conn,
        &mut send,
        reg,
        out_rx,
        shutdown,
        state,
        &mut in_rx,
    )
    .await;
    reader.abort();
    dgrams.abort();
    match &result {
        Ok(_) => {
            let _ = send.finish();
            // Give the gateway a moment to read Deregister before closing.
            // The gateway closes the connection once it has read Deregister; closing first
            // could discard data it has not read yet.
            let _ = timeout(Duration::from_secs(1), conn.closed()).await;
            conn.close(0u32.into(), b"deregistered");
        }
        Err(e) => conn.close(2u32.into(), e.to_string().as_bytes()),
    }
    result
}

#[allow(clippy::too_many_arguments)]
async fn session_loop(
    cfg: &NodeConfig,
    (heartbeat_ms, epoch): (u64, u64),
    conn: &quinn::Connection,
    send: &mut quinn::SendStream,
    reg: &Arc<Registry>,
    out_rx: &mut mpsc::UnboundedReceiver<Outbound>,
    shutdown: &mut watch::Receiver<bool>,
    state: &mut LinkState,
    in_rx: &mut mpsc::UnboundedReceiver<Incoming>,
) -> Result<LinkExit, SessionEnd> {
    let mut heartbeat = tokio::time::interval(Duration::from_millis(heartbeat_ms));
    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut check = tokio::time::interval(Duration::from_millis(20));
    let resend_every = Duration::from_millis(cfg.snapshot_resend_ms);
    let mut resend = tokio::time::interval((resend_every / 4).max(Duration::from_millis(25)));
    resend.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut last_overruns = Metrics::get(&reg.metrics.overruns);
    let mut wbuf = Vec::with_capacity(64 * 1024);
    let mut leads = state.leads.clone();
    loop {
        tokio::select! {
            // An edge linked for the fan-out took the lead with a newer epoch: this leader
            // is deposed or dead (silent until the link times out); register with the new.
            e = newer_lead(&mut leads, epoch) => return Err(SessionEnd::LeadAnnounced(e)),
            i = in_rx.recv() => match i {
                Some(Incoming::Env(Envelope { msg: Msg::Refused { reason }, .. })) => {
                    return Err(SessionEnd::Refused(reason));
                }
                Some(Incoming::Env(env)) => {
                    // A message with the gateway's trace context (W3C traceparent) is
                    // handled in an `internal.recv` span under the sender's; the rest in
                    // a log-only span.
                    let span = crate::telemetry::recv_span(&env, &cfg.node_id).unwrap_or_else(|| {
                        tracing::debug_span!("gateway_msg", node = %cfg.node_id, msg = env.msg.name())
                    });
                    let reply = span.in_scope(|| dispatch(reg, state, env.msg));
                    if let Some(reply) = reply {
                        write_env(send, crate::telemetry::envelope(reply, &span)).await?;
                    }
                }
                Some(Incoming::Bad(e)) => {
                    Metrics::inc(&reg.metrics.refused_msgs);
                    tracing::warn!(error = %e, "refused a malformed internal message");
                    write_msg(send, Msg::Error { code: ErrorCode::Malformed, reason: e.to_string() }).await?;
                }
                Some(Incoming::Closed(why)) => return Err(SessionEnd::Lost(why)),
                None => return Err(SessionEnd::Lost("reader stopped".into())),
            },
            o = out_rx.recv() => {
                let Some(o) = o else { return Ok(LinkExit::Drained) };
                wbuf.clear();
                outbound(reg, state, o, &mut wbuf);
                // Batch whatever else is already queued into the same write.
                while wbuf.len() < 256 * 1024 {
                    match out_rx.try_recv() {
                        Ok(o) => outbound(reg, state, o, &mut wbuf),
                        Err(_) => break,
                    }
                }
                if !wbuf.is_empty() {
                    send.write_all(&wbuf).await.map_err(|e| SessionEnd::Lost(e.to_string()))?;
                }
            }
            _ = heartbeat.tick() => {
                let o = Metrics::get(&reg.metrics.overruns);
                let msg = Msg::Heartbeat {
                    instances: u32::try_from(reg.instance_count()).unwrap_or(u32::MAX),
                    players: u32::try_from(reg.session_count()).unwrap_or(u32::MAX),
                    overruns: u32::try_from(o.saturating_sub(last_overruns)).unwrap_or(u32::MAX),
                    loads: reg.loads(),
                };
                last_overruns = o;
                write_msg(send, msg).await?;
            }
            r = shutdown.changed() => {
                if r.is_ok() && *shutdown.borrow() && state.drain_deadline.is_none() {
                    start_drain(reg, cfg, state);
                    write_msg(send, Msg::Drain).await?;
                }
            }
            _ = check.tick() => {
                reg.expire_script_store(std::time::Instant::now());
            }
            _ = resend.tick() => {
                let now = state.now_ms();
                let every = u64::try_from(resend_every.as_millis()).unwrap_or(u64::MAX);
                let due = state.unacked.due_for_resend(now, every);
                if !due.is_empty() {
                    wbuf.clear();
                    for id in &due {
                        if let Some(frame) = state.unacked.get(*id) {
                            wbuf.extend_from_slice(frame);
                        }
                    }
                    Metrics::add(&reg.metrics.snapshots_resent, due.len() as u64);
                    tracing::warn!(node = %cfg.node_id, snapshots = due.len(),
                        "snapshots unacknowledged past snapshot_resend_ms sent again");
                    send.write_all(&wbuf).await.map_err(|e| SessionEnd::Lost(e.to_string()))?;
                }
            }
            r = conn.closed() => return Err(SessionEnd::Lost(r.to_string())),
        }
        if let Some(deadline) = state.drain_deadline {
            if reg.instance_count() == 0 {
                // Flush what the last instances queued before they stopped (their final
                // snapshots and InstanceStopped), then wait for the acknowledgements.
                wbuf.clear();
                while let Ok(o) = out_rx.try_recv() {
                    outbound(reg, state, o, &mut wbuf);
                }
                if !wbuf.is_empty() {
                    send.write_all(&wbuf)
                        .await
                        .map_err(|e| SessionEnd::Lost(e.to_string()))?;
                }
            }
            let done = reg.instance_count() == 0 && state.unacked.is_empty();
            if done {
                write_msg(send, Msg::Deregister).await?;
                tracing::info!(node = %cfg.node_id, "drained and deregistered");
                return Ok(LinkExit::Drained);
            }
            if Instant::now() >= deadline {
                tracing::warn!(node = %cfg.node_id, unacked = state.unacked.len(),
                    instances = reg.instance_count(), "drain deadline passed");
                let _ = write_msg(send, Msg::Deregister).await;
                return Ok(LinkExit::DrainTimedOut);
            }
        }
    }
}

/// Encode one outbound item into `wbuf`. A position broadcast with a newer one from its
/// instance already queued behind it is shed, counted in `rc_zone_outbound_dropped_total`:
/// the gateway is a broadcast interval or more behind, and a stale position would only add
/// to the delay. Never by queue length: one tick of area chat to 1,400 players is 1,400
/// reliable messages, and that is no backlog.
fn outbound(reg: &Registry, state: &mut LinkState, o: Outbound, wbuf: &mut Vec<u8>) {
    if o.is_stale() {
        Metrics::inc(&reg.metrics.outbound_dropped);
        return;
    }
    match o {
        Outbound::Broadcast { mut broadcast, .. } => {
            // An edge's clients' datagrams straight to it; the rest through the leader.
            let now = state.now_ms();
            let had = !broadcast.datagrams.is_empty();
            state.fanout.send_direct(&mut broadcast, &reg.metrics, now);
            if had && broadcast.datagrams.is_empty() {
                return;
            }
            if encode_frame(&Envelope::new(Msg::Broadcast(broadcast)), wbuf).is_err() {
                Metrics::inc(&reg.metrics.outbound_dropped);
            }
        }
        Outbound::Envelope(env) => {
            if encode_frame(&env, wbuf).is_err() {
                Metrics::inc(&reg.metrics.outbound_dropped);
            }
        }
        Outbound::Msg(msg) => {
            let start = wbuf.len();
            let env = Envelope::new(msg);
            if encode_frame(&env, wbuf).is_err() {
                Metrics::inc(&reg.metrics.outbound_dropped);
                return;
            }
            if snapshot_id(&env.msg).is_some()
                && let Some(frame) = wbuf.get(start..)
            {
                state.keep(&env.msg, frame.to_vec(), true, &reg.metrics);
            }
        }
    }
}

/// Apply one gateway message; returns an immediate reply, if any.
fn dispatch(reg: &Arc<Registry>, state: &mut LinkState, msg: Msg) -> Option<Msg> {
    let err = |e: crate::actor::RegistryError| Msg::Error {
        code: e.code(),
        reason: e.to_string(),
    };
    match msg {
        Msg::AssignInstance {
            key,
            generation,
            ground,
            clock_epoch_ms,
        } => {
            reg.set_clock_epoch(clock_epoch_ms);
            reg.assign_with_ground(key, generation, ground)
                .err()
                .map(err)
        }
        Msg::StopInstance { key, generation } => reg.stop(&key, generation).err().map(err),
        msg @ Msg::AttachPlayer { .. } => Attach::from_wire(msg)
            .map(|a| reg.attach(a))
            .and_then(Result::err)
            .map(err),
        Msg::DetachPlayer { session } => reg.detach(session).err().map(err),
        Msg::WarpPlayer {
            session,
            area,
            instance,
        } => reg.warp(session, area, instance).err().map(err),
        Msg::ClientFrames { session, frames } => reg.client_frames(session, &frames).err().map(err),
        Msg::SnapshotAck { snapshot_id } => {
            state.unacked.acked(snapshot_id);
            None
        }
        Msg::Fanout { session, edge } => {
            let now = state.now_ms();
            state.fanout.set(session, edge, now);
            None
        }
        Msg::Edges { mut edges } => {
            edges.truncate(shared::internal::MAX_EDGES);
            let now = state.now_ms();
            state.fanout.pin(edges, now);
            None
        }
        Msg::Transfer(t) => {
            let id = t.transfer_id;
            reg.transfer_in(*t).err().map(|e| Msg::TransferNack {
                transfer_id: id,
                reason: e.to_string(),
            })
        }
        Msg::TransferAck { transfer_id, .. } => {
            reg.remote_transfer_answer(transfer_id, Ok(()));
            None
        }
        Msg::TransferNack {
            transfer_id,
            reason,
        } => {
            reg.remote_transfer_answer(transfer_id, Err(reason));
            None
        }
        Msg::PartyMembers { session, members } => {
            // A session that just left this node is not an error worth an answer.
            let _ = reg.party_members(session, members);
            None
        }
        Msg::TransferCommit { transfer_id } => {
            reg.remote_transfer_decided(transfer_id, true);
            None
        }
        Msg::TransferAbort { transfer_id } => {
            reg.remote_transfer_decided(transfer_id, false);
            None
        }
        Msg::ScriptStoreReply { req, result } => {
            reg.script_store_reply(req, result);
            None
        }
        Msg::SuperGlobals { values } => {
            reg.set_superglobals(values);
            None
        }
        Msg::TransferIds { block } => {
            reg.set_transfer_block(block);
            None
        }
        Msg::SuperGlobal { slot, value } => {
            reg.set_superglobal(slot, value);
            None
        }
        Msg::SharedVars {
            whole,
            env,
            weather,
        } => {
            reg.shared_vars(whole, env, weather);
            None
        }
        Msg::ActorQuery {
            qid,
            session,
            native,
            args,
            action,
        } => {
            reg.actor_query(qid, session, native, args, action);
            None
        }
        Msg::NpcQuery {
            qid,
            key,
            native,
            args,
            action,
        } => {
            reg.npc_query(
                qid,
                &key,
                crate::sim::events::ZoneInput::NpcQuery {
                    qid,
                    native,
                    args,
                    action,
                },
            );
            None
        }
        Msg::SpawnItem {
            qid,
            key,
            item,
            amount,
            pos,
        } => {
            let input = crate::sim::events::ZoneInput::SpawnItem {
                qid,
                item,
                amount,
                pos: shared::internal::pos_from_bits(pos),
            };
            reg.npc_query(qid, &key, input);
            None
        }
        Msg::ZoneActors { qid, key } => {
            reg.zone_actors(qid, &key);
            None
        }
        Msg::MapQuery { qid, key } => {
            reg.map_query(qid, &key);
            None
        }
        Msg::SpawnNpc {
            qid,
            key,
            template,
            pos,
            script,
            death_script,
        } => {
            reg.spawn_npc(qid, &key, template, pos, script, death_script);
            None
        }
        Msg::ScriptsUpdate { version, files } => {
            reg.scripts_update(version, files);
            None
        }
        Msg::RunScript { key, script, func } => {
            tracing::info!(instance = %key, %script, %func, "running a script for the gateway");
            reg.run_script(&key, script, func).err().map(err)
        }
        Msg::Error { code, reason } => {
            tracing::warn!(?code, %reason, "gateway reported an error");
            None
        }
        Msg::Drain => {
            // An operator drains this node (the console): it takes nothing new and saves
            // and stops every instance; the gateway moves the players. The process runs
            // on, empty and draining, until it is stopped (its SIGTERM is then quick).
            tracing::info!(instances = reg.instance_count(), "drained by the gateway");
            reg.drain_all();
            None
        }
        other => {
            Metrics::inc(&reg.metrics.refused_msgs);
            tracing::warn!(msg = other.name(), "refused an unexpected internal message");
            Some(Msg::Error {
                code: ErrorCode::Unexpected,
                reason: format!("{} is not accepted by a zone node", other.name()),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actor::ShellConfig;
    use shared::internal::fanout::Broadcast;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn a_store_request_while_the_link_is_down_is_answered_at_once() {
        actix::System::new().block_on(async {
            let (tx, mut rx) = mpsc::unbounded_channel();
            let world = shared::content::demo_world();
            let key = shared::internal::InstanceKey {
                area: world.areas.first().map(|a| a.name.clone()).unwrap(),
                instance: 0,
            };
            let reg = Registry::new(
                ShellConfig {
                    node_id: "t".into(),
                    tick_ms: 33,
                    broadcast_ms: 200,
                    max_catch_up: 3,
                    persist_every_ms: 60_000,
                    capacity: 10,
                    datagram_budget: 1100,
                    trace_tick_every: 0,
                    ground: crate::sim::state::GroundConfig::default(),
                    inbox: crate::actor::inbox::InboxLimits::default(),
                    scripts: (64, 4_096),
                },
                Arc::new(world),
                tx,
                Vec::new(),
            );
            reg.assign(key.clone(), 1).unwrap();
            reg.script_store(
                &key,
                8,
                shared::internal::ScriptStoreOp::FileInfo { name: "a".into() },
            );
            let mut state = LinkState::new();
            // The link is down: what was queued for it meets `offline`.
            while let Ok(o) = rx.try_recv() {
                offline(&reg, &mut state, o);
            }
            assert_eq!(reg.script_store_waiting(), 0);
            let inbox = reg.instance(&key).unwrap().inbox;
            let got = std::mem::take(&mut *inbox.lock().unwrap());
            assert!(
                got.iter().any(|i| matches!(i,
                    crate::sim::events::ZoneInput::ScriptStoreReply { req: 8, result }
                        if *result == shared::internal::ScriptStoreResult::Error(
                            crate::actor::STORE_UNAVAILABLE.into()))),
                "{got:?}"
            );
        });
    }

    #[test]
    fn a_grouped_broadcast_is_stale_once_every_group_has_a_newer_one() {
        let latest = Arc::new(AtomicU64::new(1));
        let first = Outbound::Broadcast {
            latest: latest.clone(),
            seq: 1,
            groups: 3,
            broadcast: Broadcast::default(),
        };
        // Groups 1 and 2 follow: group 0's players have nothing newer yet.
        latest.store(3, Ordering::Relaxed);
        assert!(!first.is_stale());
        latest.store(4, Ordering::Relaxed);
        assert!(first.is_stale());
    }

    #[test]
    fn a_stale_broadcast_is_shed_and_reliable_messages_never_are() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let cfg = ShellConfig {
            node_id: "t".into(),
            tick_ms: 33,
            broadcast_ms: 200,
            max_catch_up: 3,
            persist_every_ms: 60_000,
            capacity: 10,
            datagram_budget: 1100,
            trace_tick_every: 0,
            ground: crate::sim::state::GroundConfig::default(),
            inbox: crate::actor::inbox::InboxLimits::default(),
            scripts: (64, 4_096),
        };
        let reg = Registry::new(cfg, Arc::new(shared::content::demo_world()), tx, Vec::new());
        let mut state = LinkState::new();
        let mut wbuf = Vec::new();
        let (a, b) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        // Two instances; the reliable messages queued between them are no backlog.
        reg.send_broadcast(&a, 1, Broadcast::default());
        for _ in 0..5000 {
            reg.send(Msg::Drain);
        }
        reg.send_broadcast(&b, 1, Broadcast::default());
        reg.send_broadcast(&a, 1, Broadcast::default());
        let mut sizes = Vec::new();
        while let Ok(o) = rx.try_recv() {
            let before = wbuf.len();
            outbound(&reg, &mut state, o, &mut wbuf);
            sizes.push(wbuf.len() - before);
        }
        let drain = sizes.get(1).copied().unwrap_or(0);
        assert!(drain > 0, "reliable messages are never shed");
        assert_eq!(
            sizes.first(),
            Some(&0),
            "a's first broadcast: a newer one is queued"
        );
        assert!(sizes.iter().skip(1).all(|n| *n > 0), "{sizes:?}");
        assert_eq!(Metrics::get(&reg.metrics.outbound_dropped), 1);
    }
}
