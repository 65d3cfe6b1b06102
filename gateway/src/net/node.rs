//! The internal endpoint the zone nodes connect to (`rc-internal/1`, see
//! `shared::internal`): the authenticated handshake, then per node a reader (control
//! messages to the hub, `ToClient` frames straight to the client), a writer (the hub's
//! messages, batched into the control stream) and a datagram pump (zone datagrams straight to
//! the clients, as slices of the received buffer: no copy, no allocation).

use std::sync::Arc;
use std::time::Duration;

use shared::internal::codec::{CodecError, FrameDecoder, encode_frame};
use shared::internal::handshake::{GatewayHandshake, Step};
use shared::internal::{
    EXPORTER_LABEL, EXPORTER_LEN, Envelope, ErrorCode, Msg, RefuseReason, datagram,
};
use tokio::sync::mpsc;
use tracing::Instrument as _;

use crate::hub::{HubEvent, Metrics, NodeLink, Shared};
use crate::net::client::fill_random;

/// Time a node has to complete the handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Accept node connections until the endpoint closes or `shutdown` turns true.
pub async fn serve(
    endpoint: quinn::Endpoint,
    shared: Arc<Shared>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    while let Some(incoming) = super::next_incoming(&endpoint, &mut shutdown).await {
        let shared = shared.clone();
        let span = tracing::info_span!("node_link", peer = %incoming.remote_address());
        tokio::spawn(connection(incoming, shared).instrument(span));
    }
}

async fn write(send: &mut quinn::SendStream, msg: Msg) -> bool {
    let mut v = Vec::new();
    if encode_frame(&Envelope::new(msg), &mut v).is_err() {
        return false;
    }
    send.write_all(&v).await.is_ok()
}

async fn refuse(conn: &quinn::Connection, send: &mut quinn::SendStream, m: Msg, why: &str) {
    let _ = write(send, m).await;
    let _ = send.finish();
    let _ = tokio::time::timeout(Duration::from_millis(300), send.stopped()).await;
    conn.close(2u32.into(), why.as_bytes());
}

struct Registered {
    node: String,
    addr: String,
    capacity: u32,
    running: Vec<shared::internal::RunningInstance>,
    /// The trace context of the node's `Register` (its `node.register` span).
    trace: std::collections::BTreeMap<String, String>,
}

async fn handshake(
    shared: &Shared,
    conn: &quinn::Connection,
    send: &mut quinn::SendStream,
    recv: &mut quinn::RecvStream,
    dec: &mut FrameDecoder,
) -> Option<Registered> {
    let mut exporter = [0u8; EXPORTER_LEN];
    conn.export_keying_material(&mut exporter, EXPORTER_LABEL, b"")
        .ok()?;
    let mut nonce = [0u8; 32];
    fill_random(&mut nonce);
    let mut hs = GatewayHandshake::new(
        shared.cfg.cluster_secret.as_bytes(),
        nonce,
        &exporter,
        &shared.cfg.gateway_id,
        shared.cfg.heartbeat_ms,
    );
    let mut buf = vec![0u8; 16 * 1024];
    let mut register_trace = std::collections::BTreeMap::new();
    loop {
        let env = loop {
            match dec.next_envelope() {
                Ok(Some(e)) => break Ok(e),
                Ok(None) => {}
                Err(e) => break Err(e),
            }
            match recv.read(&mut buf).await {
                Ok(Some(n)) => dec.push(buf.get(..n).unwrap_or(&[])),
                _ => return None,
            }
        };
        if let Ok(Envelope {
            msg: Msg::Register { .. },
            trace,
            ..
        }) = &env
        {
            register_trace.clone_from(trace);
        }
        match hs.on_envelope(env) {
            Step::Continue => {}
            Step::Send(m) => {
                if !write(send, m).await {
                    return None;
                }
            }
            Step::Refuse(m) => {
                Metrics::inc(&shared.metrics.internal_refused);
                tracing::warn!(msg = ?m, "refused a node");
                refuse(conn, send, m, "refused").await;
                return None;
            }
            Step::Registered {
                node_id,
                advertised_addr,
                capacity,
                running,
                reply,
            } => {
                if !write(send, reply).await {
                    return None;
                }
                return Some(Registered {
                    node: node_id,
                    addr: advertised_addr,
                    capacity,
                    running,
                    trace: register_trace,
                });
            }
        }
    }
}

async fn connection(incoming: quinn::Incoming, shared: Arc<Shared>) {
    let Ok(Ok(conn)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, incoming).await else {
        return;
    };
    let Ok(Ok((mut send, mut recv))) =
        tokio::time::timeout(HANDSHAKE_TIMEOUT, conn.accept_bi()).await
    else {
        conn.close(2u32.into(), b"no control stream");
        return;
    };
    let mut dec = FrameDecoder::new();
    let hs = handshake(&shared, &conn, &mut send, &mut recv, &mut dec);
    let Ok(Some(reg)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, hs).await else {
        Metrics::inc(&shared.metrics.internal_refused);
        conn.close(2u32.into(), b"handshake not completed");
        return;
    };
    let serial = shared.next_serial();
    let node = reg.node.clone();
    tracing::info!(node = %node, serial, "node link up");
    let (tx, rx) = mpsc::unbounded_channel();
    shared.to_hub(HubEvent::NodeUp {
        node: node.clone(),
        addr: reg.addr,
        capacity: reg.capacity,
        running: reg.running,
        link: NodeLink {
            tx: tx.clone(),
            conn: conn.clone(),
            serial,
        },
        trace: reg.trace,
    });
    let writer = tokio::spawn(writer(send, rx));
    let pump = tokio::spawn(datagrams(conn.clone(), shared.clone()));
    let reason = reader(&shared, &node, serial, conn.stable_id(), &tx, recv, dec).await;
    pump.abort();
    writer.abort();
    shared.to_hub(HubEvent::NodeDown {
        node,
        serial,
        reason,
    });
}

/// The hub's messages to the node, batched into few writes.
async fn writer(mut send: quinn::SendStream, mut rx: mpsc::UnboundedReceiver<Envelope>) {
    let mut buf = Vec::with_capacity(64 * 1024);
    while let Some(env) = rx.recv().await {
        buf.clear();
        let _ = encode_frame(&env, &mut buf);
        while buf.len() < 256 * 1024 {
            match rx.try_recv() {
                Ok(env) => {
                    let _ = encode_frame(&env, &mut buf);
                }
                Err(_) => break,
            }
        }
        if send.write_all(&buf).await.is_err() {
            return;
        }
    }
}

/// Zone datagrams `[session][frames]` → the client's connection, only from the node that
/// hosts the session (fencing: a node that lost its players cannot reach them).
async fn datagrams(conn: quinn::Connection, shared: Arc<Shared>) {
    let me = conn.stable_id();
    while let Ok(d) = conn.read_datagram().await {
        let Ok((session, frames)) = datagram::decode(&d) else {
            Metrics::inc(&shared.metrics.internal_refused);
            continue;
        };
        if !shared.routed_to(session, me) {
            Metrics::inc(&shared.metrics.fenced);
            continue;
        }
        let len = frames.len();
        match shared.clients.get(&session) {
            Some(c) => match c.conn.send_datagram(frames) {
                Ok(()) => {
                    Metrics::inc(&shared.metrics.datagrams_down);
                    Metrics::add(&shared.metrics.bytes_down_datagram, len);
                }
                Err(e) => {
                    Metrics::inc(&shared.metrics.datagrams_down_dropped);
                    tracing::debug!(session, error = %e, "datagram to the client dropped");
                }
            },
            None => Metrics::inc(&shared.metrics.datagrams_unroutable),
        }
    }
}

/// Control messages until the connection ends; returns why it ended.
async fn reader(
    shared: &Shared,
    node: &str,
    serial: u64,
    conn_id: usize,
    tx: &mpsc::UnboundedSender<Envelope>,
    mut recv: quinn::RecvStream,
    mut dec: FrameDecoder,
) -> String {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        loop {
            match dec.next_envelope() {
                Ok(Some(Envelope { msg, trace, .. })) => {
                    tracing::trace!(node, msg = msg.name(), "from node");
                    match msg {
                        Msg::ToClient { session, .. } if !shared.routed_to(session, conn_id) => {
                            Metrics::inc(&shared.metrics.fenced);
                        }
                        Msg::ToClient { session, frames } => match shared.clients.get(&session) {
                            Some(c) => c.frames(frames, &shared.metrics),
                            None => {
                                tracing::debug!(session, "frames for a session that is gone");
                                Metrics::inc(&shared.metrics.datagrams_unroutable);
                            }
                        },
                        msg => shared.to_hub(HubEvent::NodeMsg {
                            node: node.to_owned(),
                            serial,
                            msg,
                            trace,
                        }),
                    }
                }
                Ok(None) => break,
                Err(CodecError::VersionMismatch { ours, theirs }) => {
                    Metrics::inc(&shared.metrics.internal_refused);
                    let _ = tx.send(Envelope::new(Msg::Refused {
                        reason: RefuseReason::VersionMismatch { ours, theirs },
                    }));
                    return format!("protocol version mismatch (node speaks {theirs})");
                }
                Err(CodecError::Malformed(e)) => {
                    Metrics::inc(&shared.metrics.internal_refused);
                    tracing::warn!(node, error = %e, "malformed internal message");
                    let _ = tx.send(Envelope::new(Msg::Error {
                        code: ErrorCode::Malformed,
                        reason: e.to_string(),
                    }));
                }
                Err(e) => return e.to_string(),
            }
        }
        match recv.read(&mut buf).await {
            Ok(Some(n)) => dec.push(buf.get(..n).unwrap_or(&[])),
            Ok(None) => return "control stream finished".into(),
            Err(e) => return e.to_string(),
        }
    }
}
