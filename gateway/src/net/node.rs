//! The internal endpoint the zone nodes connect to (`rc-internal/1`, see
//! `shared::internal`): the authenticated handshake, then per node a reader (control
//! messages to the hub, `ToClient` frames straight to the client, each `Broadcast` fanned
//! out to the clients' datagrams) and a writer (the hub's messages, batched into the
//! control stream). Nodes send no datagrams (see `shared::internal::fanout`); any that
//! arrive are drained and counted as refused.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use shared::compact::{Entry, TickIndex};
use shared::frame::split_datagram;
use shared::internal::codec::{CodecError, FrameDecoder, encode_frame};
use shared::internal::fanout::Broadcast;
use shared::internal::handshake::{GatewayHandshake, Step};
use shared::internal::{EXPORTER_LABEL, EXPORTER_LEN, Envelope, ErrorCode, Msg, RefuseReason};
use shared::proto::{StandardUpdateS2C, ids};
use tokio::sync::mpsc;
use tracing::Instrument as _;

use crate::hub::{ClientHandle, HubEvent, Metrics, NodeLink, Shared};
use shared::internal::SessionId;

/// Time a node has to complete the handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Accept node connections until the endpoint closes or `shutdown` turns true.
pub async fn serve(
    endpoint: quinn::Endpoint,
    shared: Arc<Shared>,
    doors: Arc<super::client::Doors>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    // Connections not yet authenticated (handshaking, or before the proof): capped, so
    // that anyone who can reach the endpoint cannot hold many of them.
    let preauth = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let cap = usize::try_from(shared.cfg.internal_preauth_max).unwrap_or(usize::MAX);
    while let Some(incoming) = super::next_incoming(&endpoint, &mut shutdown).await {
        let Some(slot) = PreAuth::take(&preauth, cap) else {
            Metrics::inc(&shared.metrics.internal_preauth_cap);
            tracing::warn!(peer = %incoming.remote_address(), cap, "internal endpoint: too many connections not yet authenticated; refused");
            incoming.refuse();
            continue;
        };
        let shared = shared.clone();
        let span = tracing::info_span!("node_link", peer = %incoming.remote_address());
        tokio::spawn(connection(incoming, shared, doors.clone(), slot).instrument(span));
    }
}

/// One node connection not yet authenticated, in the `internal_preauth_max` count until
/// dropped (the handshake ended either way).
struct PreAuth(Arc<std::sync::atomic::AtomicUsize>);

impl PreAuth {
    fn take(n: &Arc<std::sync::atomic::AtomicUsize>, cap: usize) -> Option<Self> {
        use std::sync::atomic::Ordering;
        n.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
            (v < cap).then_some(v + 1)
        })
        .ok()?;
        Some(Self(n.clone()))
    }
}

impl Drop for PreAuth {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
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

/// The gateway's half of the internal handshake for `conn` (fresh nonce and blind, this
/// connection's TLS exporter), holding control epoch `epoch`: a node's link here, or its
/// fan-out link to an edge (`edge/fanout.rs`).
pub(crate) fn gateway_handshake(
    cfg: &crate::config::GatewayConfig,
    conn: &quinn::Connection,
    epoch: u64,
) -> Option<GatewayHandshake> {
    let mut exporter = [0u8; EXPORTER_LEN];
    conn.export_keying_material(&mut exporter, EXPORTER_LABEL, b"")
        .ok()?;
    let (mut nonce, mut blind) = ([0u8; 32], [0u8; 32]);
    ops::random::fill(&mut nonce);
    ops::random::fill(&mut blind);
    Some(
        GatewayHandshake::new(
            cfg.cluster_secret.as_bytes(),
            nonce,
            blind,
            &exporter,
            &cfg.gateway_id,
            cfg.heartbeat_ms,
        )
        .with_epoch(epoch),
    )
}

/// The next envelope (or the decoder's error) of a node's stream; `None` once the stream
/// ends.
pub(crate) async fn next_envelope(
    dec: &mut FrameDecoder,
    recv: &mut quinn::RecvStream,
    buf: &mut [u8],
) -> Option<Result<Envelope, CodecError>> {
    loop {
        match dec.next_envelope() {
            Ok(Some(e)) => return Some(Ok(e)),
            Ok(None) => {}
            Err(e) => return Some(Err(e)),
        }
        match recv.read(buf).await {
            Ok(Some(n)) => dec.push(buf.get(..n).unwrap_or(&[])),
            _ => return None,
        }
    }
}

async fn handshake(
    shared: &Shared,
    conn: &quinn::Connection,
    send: &mut quinn::SendStream,
    recv: &mut quinn::RecvStream,
    dec: &mut FrameDecoder,
) -> Option<Registered> {
    let epoch = shared
        .control_epoch
        .load(std::sync::atomic::Ordering::Relaxed);
    let mut hs = gateway_handshake(&shared.cfg, conn, epoch)?;
    let mut buf = vec![0u8; 16 * 1024];
    let mut register_trace = std::collections::BTreeMap::new();
    loop {
        let env = next_envelope(dec, recv, &mut buf).await?;
        if let Err(CodecError::TooLong { len, max }) = &env {
            Metrics::inc(&shared.metrics.internal_preauth_frame);
            tracing::warn!(
                len,
                max,
                "internal endpoint: frame too large before authentication; closing"
            );
        }
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
                if matches!(m, Msg::Proven { .. }) {
                    // The node proved the cluster secret: its frames may be large now
                    // (`Register` lists the sessions it still hosts; then snapshots).
                    dec.set_max(shared::internal::MAX_FRAME_LEN);
                }
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

async fn connection(
    incoming: quinn::Incoming,
    shared: Arc<Shared>,
    doors: Arc<super::client::Doors>,
    preauth: PreAuth,
) {
    let Ok(Ok(conn)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, incoming).await else {
        return;
    };
    // An edge gateway relaying its clients, on the same endpoint.
    if super::client::negotiated(&conn).as_deref() == Some(shared::internal::edge::ALPN) {
        return super::relay::serve(conn, shared, doors, preauth)
            .instrument(tracing::info_span!("edge_link"))
            .await;
    }
    // Datagrams are drained from the start: none is buffered for a stranger either.
    let pump = AbortOnDrop(tokio::spawn(refuse_datagrams(conn.clone(), shared.clone())));
    let Ok(Ok((mut send, mut recv))) =
        tokio::time::timeout(HANDSHAKE_TIMEOUT, conn.accept_bi()).await
    else {
        conn.close(2u32.into(), b"no control stream");
        return;
    };
    // Small frames until the node has proven the secret: a stranger cannot make the
    // gateway buffer a large frame (`handshake` raises the limit after the proof).
    let small = usize::try_from(shared.cfg.internal_preauth_frame_len).unwrap_or(usize::MAX);
    let mut dec = FrameDecoder::with_max(small);
    let hs = handshake(&shared, &conn, &mut send, &mut recv, &mut dec);
    let Ok(Some(reg)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, hs).await else {
        Metrics::inc(&shared.metrics.internal_refused);
        conn.close(2u32.into(), b"handshake not completed");
        return;
    };
    drop(preauth);
    let serial = shared.next_serial();
    let node = reg.node.clone();
    tracing::info!(node = %node, serial, "node link up");
    let (tx, rx) = mpsc::unbounded_channel();
    let queued = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let link = NodeLink {
        tx,
        queued: queued.clone(),
        conn: conn.clone(),
        serial,
    };
    shared.to_hub(HubEvent::NodeUp {
        node: node.clone(),
        addr: reg.addr,
        capacity: reg.capacity,
        running: reg.running,
        link: link.clone(),
        trace: reg.trace,
    });
    let writer = tokio::spawn(writer(send, rx, queued));
    let reason = reader(&shared, &node, serial, conn.stable_id(), &link, recv, dec).await;
    drop(pump);
    writer.abort();
    shared.to_hub(HubEvent::NodeDown {
        node,
        serial,
        reason,
    });
}

/// A task aborted when this is dropped (on every way out of the connection task).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The hub's messages to the node, batched into few writes.
/// Each message's bytes leave `queued` once it is encoded (`NodeLink::send` bounds them).
async fn writer(
    mut send: quinn::SendStream,
    mut rx: mpsc::UnboundedReceiver<Envelope>,
    queued: Arc<std::sync::atomic::AtomicUsize>,
) {
    let mut buf = Vec::with_capacity(64 * 1024);
    let take = |env: &Envelope, buf: &mut Vec<u8>| {
        let _ = encode_frame(env, buf);
        queued.fetch_sub(
            crate::hub::queued_len(&env.msg),
            std::sync::atomic::Ordering::Relaxed,
        );
    };
    while let Some(env) = rx.recv().await {
        buf.clear();
        take(&env, &mut buf);
        while buf.len() < 256 * 1024 {
            match rx.try_recv() {
                Ok(env) => take(&env, &mut buf),
                Err(_) => break,
            }
        }
        if send.write_all(&buf).await.is_err() {
            return;
        }
    }
}

/// Nodes send no datagrams (protocol 3): drain and count any that arrive.
async fn refuse_datagrams(conn: quinn::Connection, shared: Arc<Shared>) {
    while conn.read_datagram().await.is_ok() {
        Metrics::inc(&shared.metrics.internal_refused);
    }
}

/// One instance's broadcast → each client's datagram, gathered from the shared frames,
/// only for sessions the sending node hosts (fencing: a node that lost its players cannot
/// reach them). A datagram that does not fit the client's path, or for which quinn would
/// have to drop an older queued one, is counted as dropped.
///
/// A client on the compact profile gets its tick transcoded instead: its datagrams' updates
/// are gathered and coded by its [`DownEncoder`](shared::compact::DownEncoder) (see
/// [`send_compact`]).
#[doc(alias = "P_StandardUpdate")]
fn fan_out(shared: &Shared, conn_id: usize, b: &Broadcast, fs: &mut FanScratch) {
    let mut tick: Option<(SessionId, ClientHandle)> = None;
    let mut indexed = false;
    fs.entries.clear();
    for d in &b.datagrams {
        if !shared.routed_to(d.session, conn_id) {
            Metrics::inc(&shared.metrics.fenced);
            continue;
        }
        let Some(c) = shared.clients.get(&d.session) else {
            Metrics::inc(&shared.metrics.datagrams_unroutable);
            continue;
        };
        if c.compact.is_some() {
            if tick.as_ref().is_some_and(|(s, _)| *s != d.session)
                && let Some((_, h)) = tick.take()
            {
                send_compact(shared, &h, &fs.entries);
                fs.entries.clear();
            }
            if tick.is_none() {
                tick = Some((d.session, c.clone()));
            }
            // The tick's frames are parsed and quantised once, for all compact recipients.
            if !indexed {
                fs.index.rebuild(&b.frames);
                indexed = true;
            }
            match b.ranges_of(d) {
                Ok(ranges) => {
                    for &(start, end) in ranges {
                        if !fs.index.extend_range(start, end, &mut fs.entries)
                            && let Some(bytes) = b.frames.get(start as usize..end as usize)
                        {
                            collect_updates(bytes, &mut fs.entries);
                        }
                    }
                }
                Err(e) => {
                    Metrics::inc(&shared.metrics.datagrams_down_dropped);
                    tracing::debug!(session = d.session, error = %e, "broadcast datagram not gathered");
                }
            }
            continue;
        }
        let max = c.link.max_datagram_size().unwrap_or(0);
        let bytes = match b.gather(d, max, &mut fs.buf) {
            Ok(bytes) => bytes,
            Err(e) => {
                Metrics::inc(&shared.metrics.datagrams_down_dropped);
                tracing::debug!(session = d.session, error = %e, "broadcast datagram not sent");
                continue;
            }
        };
        let len = bytes.len();
        // quinn makes room by dropping the oldest queued datagram: count that loss.
        if c.link.datagram_send_buffer_space() < len {
            Metrics::inc(&shared.metrics.datagrams_down_dropped);
        }
        match c.link.send_datagram(bytes) {
            Ok(()) => {
                Metrics::inc(&shared.metrics.datagrams_down);
                Metrics::add(&shared.metrics.bytes_down_datagram, len);
            }
            Err(e) => {
                Metrics::inc(&shared.metrics.datagrams_down_dropped);
                tracing::debug!(session = d.session, error = %e, "datagram to the client dropped");
            }
        }
    }
    if let Some((_, h)) = tick {
        send_compact(shared, &h, &fs.entries);
    }
}

/// Buffers one node link's fan-out keeps from tick to tick.
#[derive(Debug, Default)]
struct FanScratch {
    /// The rc/1 datagrams of a tick, gathered.
    buf: BytesMut,
    /// The tick's updates, parsed once for the compact recipients.
    index: TickIndex,
    /// One compact recipient's entries.
    entries: Vec<Entry>,
}

/// The `P_StandardUpdate`s of gathered rc/1 frames that are not on the index's frame
/// boundaries (never from a well-formed node; anything that does not parse is skipped).
fn collect_updates(bytes: &[u8], out: &mut Vec<Entry>) {
    let Ok(frames) = split_datagram(bytes, Some(ids::P_STANDARD_UPDATE)) else {
        return;
    };
    out.extend(
        frames
            .filter_map(|f| StandardUpdateS2C::decode_fast(f.payload).ok())
            .map(|u| Entry::from_update(&u)),
    );
}

/// One broadcast tick to a compact client: coded against its newest acknowledged tick and
/// sent as one or more datagrams.
#[doc(alias = "rc-compact/1")]
fn send_compact(shared: &Shared, c: &ClientHandle, entries: &[Entry]) {
    let Some(enc) = &c.compact else { return };
    let m = &shared.metrics;
    let max = c.link.max_datagram_size().unwrap_or(0);
    let out = match enc.lock() {
        Ok(mut e) => e.encode_entries(entries, max),
        Err(_) => return,
    };
    if out.datagrams.is_empty() {
        return;
    }
    Metrics::inc(if out.base.is_some() {
        &m.compact_ticks_delta
    } else {
        &m.compact_ticks_full
    });
    Metrics::add(&m.compact_entries_dropped, out.dropped);
    for d in out.datagrams {
        let len = d.len();
        if c.link.datagram_send_buffer_space() < len {
            Metrics::inc(&m.datagrams_down_dropped);
        }
        match c.link.send_datagram(Bytes::from(d)) {
            Ok(()) => {
                Metrics::inc(&m.datagrams_down);
                Metrics::add(&m.bytes_down_datagram, len);
            }
            Err(e) => {
                Metrics::inc(&m.datagrams_down_dropped);
                tracing::debug!(error = %e, "compact datagram to the client dropped");
            }
        }
    }
}

/// Control messages until the connection ends; returns why it ended.
async fn reader(
    shared: &Shared,
    node: &str,
    serial: u64,
    conn_id: usize,
    link: &NodeLink,
    mut recv: quinn::RecvStream,
    mut dec: FrameDecoder,
) -> String {
    let mut buf = vec![0u8; 64 * 1024];
    let mut fan = FanScratch::default();
    loop {
        loop {
            match dec.next_envelope() {
                Ok(Some(Envelope { msg, trace, .. })) => {
                    tracing::trace!(node, msg = msg.name(), "from node");
                    match msg {
                        Msg::ToClient { session, .. } if !shared.routed_to(session, conn_id) => {
                            Metrics::inc(&shared.metrics.fenced);
                        }
                        Msg::Broadcast(b) => fan_out(shared, conn_id, &b, &mut fan),
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
                    link.send(Msg::Refused {
                        reason: RefuseReason::VersionMismatch { ours, theirs },
                    });
                    return format!("protocol version mismatch (node speaks {theirs})");
                }
                Err(CodecError::Malformed(e)) => {
                    Metrics::inc(&shared.metrics.internal_refused);
                    tracing::warn!(node, error = %e, "malformed internal message");
                    link.send(Msg::Error {
                        code: ErrorCode::Malformed,
                        reason: e.to_string(),
                    });
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
