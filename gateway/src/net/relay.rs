//! The leader's side of the edge link (`rc-edge/1`, `shared::internal::edge`): an edge
//! gateway proves the cluster secret, then relays its clients; each becomes a session
//! task of this gateway (`client::relayed`), with the same doors, login flow, budgets and
//! logout as a connection of its own. The link's reader hands each session its stream
//! bytes (bounded per session) and datagrams; one writer sends every session's frames and
//! closes back. When the link ends, its sessions end (their players are logged out).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use shared::internal::edge::{self, Decoder, EdgeMsg, RelayId};
use shared::internal::{EXPORTER_LABEL, EXPORTER_LEN, FanoutEdge};
use tokio::sync::mpsc;
use tracing::Instrument as _;

use super::client::{
    ConnSlot, Doors, KeptSession, Relayed, RelayedIn, admit_relayed, kept_slot, relayed,
};
use crate::hub::{Metrics, RELAY_QUEUE, RelayLink, Shared};
use crate::session::close;

/// Stream bytes a relayed session may have waiting for its task (the hub's back-pressure
/// holds its task; past this the client is closed as a flood, as an RCEnet peer is).
pub const RELAY_INBOUND_BYTES: usize = 256 * 1024;

/// How long a leader waits for its store to confirm the lease when an edge link ends.
const LEASE_CONFIRM: Duration = Duration::from_secs(10);

/// How long the players of an edge whose link ended stay in the world when the lease is
/// not confirmed: the gateway steps down well before (then they are the new leader's).
const DEPOSED_KEEP: Duration = Duration::from_secs(30);

/// Datagrams a relayed session may have waiting (more are dropped, counted).
const RELAY_DATAGRAMS: usize = 64;

/// What the reader keeps per relayed session.
struct Session {
    stream: mpsc::UnboundedSender<Relayed>,
    stream_bytes: Arc<AtomicUsize>,
    datagrams: mpsc::Sender<Bytes>,
}

async fn write_one(send: &mut quinn::SendStream, msg: &EdgeMsg) -> bool {
    let mut v = Vec::new();
    edge::encode(msg, &mut v).is_ok() && send.write_all(&v).await.is_ok()
}

/// An authenticated edge's link until it ends. `conn` negotiated [`edge::ALPN`].
pub(super) async fn serve(
    conn: quinn::Connection,
    shared: Arc<Shared>,
    doors: Arc<Doors>,
    preauth: impl Send,
) {
    let hs = Duration::from_secs(10);
    let Ok(Ok((mut send, mut recv))) = tokio::time::timeout(hs, conn.accept_bi()).await else {
        conn.close(2u32.into(), b"no stream");
        return;
    };
    let mut dec = Decoder::default();
    let mut buf = vec![0u8; 16 * 1024];
    let hello = tokio::time::timeout(hs, async {
        loop {
            match dec.next_msg() {
                Ok(Some(m)) => return Some(m),
                Ok(None) => {}
                Err(_) => return None,
            }
            match recv.read(&mut buf).await {
                Ok(Some(n)) => dec.push(buf.get(..n).unwrap_or(&[])),
                _ => return None,
            }
        }
    })
    .await;
    let Ok(Some(EdgeMsg::Hello {
        version,
        edge: name,
        proof,
    })) = hello
    else {
        Metrics::inc(&shared.metrics.internal_refused);
        conn.close(2u32.into(), b"no edge hello");
        return;
    };
    let mut exporter = [0u8; EXPORTER_LEN];
    if conn
        .export_keying_material(&mut exporter, EXPORTER_LABEL, b"")
        .is_err()
    {
        return;
    }
    let secret = shared.cfg.cluster_secret.as_bytes();
    let link_version = edge::link_version(version);
    let refusal = if !edge::verify_edge(secret, &exporter, &proof) {
        Some("authentication failed")
    } else if link_version.is_none() {
        Some("edge link version mismatch")
    } else if shared.shutting_down.load(Ordering::Relaxed) {
        Some("the leader is shutting down")
    } else {
        None
    };
    if let Some(reason) = refusal {
        Metrics::inc(&shared.metrics.internal_refused);
        tracing::warn!(edge = %edge::short_reason(&name), reason, "edge refused");
        let _ = write_one(
            &mut send,
            &EdgeMsg::Refused {
                reason: reason.into(),
            },
        )
        .await;
        let _ = send.finish();
        let _ = tokio::time::timeout(Duration::from_millis(300), send.stopped()).await;
        conn.close(2u32.into(), reason.as_bytes());
        return;
    }
    let version = link_version.unwrap_or(edge::MIN_VERSION);
    let welcome = EdgeMsg::Welcome {
        version,
        leader: shared.cfg.gateway_id.clone(),
        epoch: shared.control_epoch.load(Ordering::Relaxed),
        admin: shared.cfg.admin_listen.to_string(),
        proof: edge::leader_proof(secret, &exporter),
    };
    if !write_one(&mut send, &welcome).await {
        return;
    }
    drop(preauth);
    let name = edge::short_reason(&name);
    tracing::info!(edge = %name, peer = %conn.remote_address(), version, "edge link up");
    let key = (name.clone(), conn.remote_address());
    shared.edges.insert(key.clone(), 0);
    shared.edges_changed();
    let (tx, rx) = mpsc::channel::<EdgeMsg>(RELAY_QUEUE);
    let writer = tokio::spawn(crate::edge::writer(send, rx).in_current_span());
    let me = crate::hub::edge_key(&key.0, key.1);
    let members =
        (version >= 4).then(|| tokio::spawn(tell_members(shared.clone(), tx.clone(), me.clone())));
    let mut sessions: HashMap<RelayId, Session> = HashMap::new();
    shared.edge_links.insert(me.clone(), conn.clone());
    let mut link = EdgeLink {
        name: name.clone(),
        key: me,
        conn: conn.clone(),
        version,
        fanout: None,
    };
    let why = loop {
        tokio::select! {
            r = recv.read(&mut buf) => match r {
                Ok(Some(n)) => {
                    dec.push(buf.get(..n).unwrap_or(&[]));
                    let mut bad = None;
                    loop {
                        match dec.next_msg() {
                            Ok(Some(m)) => {
                                if let Err(e) = message(&shared, &doors, &mut link, &tx, &mut sessions, m) {
                                    bad = Some(e);
                                    break;
                                }
                            }
                            Ok(None) => break,
                            Err(e) => {
                                bad = Some(format!("undecodable edge message: {e}"));
                                break;
                            }
                        }
                    }
                    if let Some(e) = bad {
                        Metrics::inc(&shared.metrics.internal_refused);
                        conn.close(2u32.into(), b"protocol violation");
                        break e;
                    }
                }
                _ => break "the edge link closed".to_owned(),
            },
            d = conn.read_datagram() => match d {
                Ok(d) => match shared::internal::datagram::decode(&d) {
                    Ok((id, frames)) => {
                        if let Some(s) = sessions.get(&id)
                            && s.datagrams.try_send(frames).is_err()
                        {
                            Metrics::inc(&shared.metrics.bad_datagrams);
                        }
                    }
                    Err(_) => Metrics::inc(&shared.metrics.bad_datagrams),
                },
                Err(_) => break "the edge link closed".to_owned(),
            },
        }
        if let Some(mut n) = shared.edges.get_mut(&key) {
            *n = sessions.len();
        }
    };
    shared.edges.remove(&key);
    shared.edges_changed();
    shared.edge_links.remove(&link.key);
    if shared.fanouts.remove(&link.key).is_some() {
        shared.to_hub(crate::hub::HubEvent::Edges);
    }
    writer.abort();
    if let Some(m) = members {
        m.abort();
    }
    // An edge taking the database over ends its link first (so may a partition): ask the
    // store before logging its players out. A deposed leader steps down with them still
    // in the world, where the gateway that took over adopts them (the edge kept their
    // connections); logging them out would pull them from the world under it.
    let held = tokio::time::timeout(LEASE_CONFIRM, shared.writer.confirm_lease()).await;
    // (A store too slow to answer in time is not a lost lease: the players go as before.)
    if matches!(held, Ok(Ok(false) | Err(_))) && !sessions.is_empty() {
        tracing::warn!(edge = %name, reason = %why, sessions = sessions.len(),
            "edge link down and the store's lease is not confirmed: its players stay in the world while this gateway steps down");
        tokio::time::sleep(DEPOSED_KEEP).await;
    }
    tracing::info!(edge = %name, reason = %why, sessions = sessions.len(), "edge link down: its clients are logged out");
    // Dropping the senders ends every session task (as a closed connection).
    sessions.clear();
    drop(tx);
}

/// Tells the edge (`me`, as `hub::edge_key` names it) the cluster's members now and
/// whenever they change: the nodes and the *other* edges (`EdgeMsg::Members`, each list
/// cut at [`edge::MAX_MEMBERS`]), until the link ends.
async fn tell_members(shared: Arc<Shared>, tx: mpsc::Sender<EdgeMsg>, me: String) {
    let mut rx = shared.members.subscribe();
    rx.mark_changed();
    while rx.changed().await.is_ok() {
        let msg = {
            let m = rx.borrow_and_update();
            EdgeMsg::Members {
                nodes: m.nodes.iter().take(edge::MAX_MEMBERS).cloned().collect(),
                edges: m
                    .edges
                    .iter()
                    .filter(|e| **e != me)
                    .take(edge::MAX_MEMBERS)
                    .cloned()
                    .collect(),
            }
        };
        if tx.send(msg).await.is_err() {
            return;
        }
    }
}

/// Starts relayed session `session` (a kept one starts in the world).
fn start(
    shared: &Arc<Shared>,
    sessions: &mut HashMap<RelayId, Session>,
    link: RelayLink,
    session: u64,
    slot: ConnSlot,
    compact: bool,
    kept: Option<KeptSession>,
) {
    let (stream_tx, stream_rx) = mpsc::unbounded_channel();
    let (dg_tx, dg_rx) = mpsc::channel(RELAY_DATAGRAMS);
    let stream_bytes = Arc::new(AtomicUsize::new(0));
    let (id, addr) = (link.id, link.addr);
    sessions.insert(
        id,
        Session {
            stream: stream_tx,
            stream_bytes: stream_bytes.clone(),
            datagrams: dg_tx,
        },
    );
    let span = match kept {
        Some(_) => tracing::info_span!("session", session, peer = %addr, relay = id, kept = true),
        None => tracing::info_span!("session", session, peer = %addr, relay = id),
    };
    tokio::spawn(
        relayed(
            shared.clone(),
            session,
            link,
            compact,
            RelayedIn {
                stream: stream_rx,
                stream_bytes,
                datagrams: dg_rx,
            },
            slot,
            kept,
        )
        .instrument(span),
    );
}

/// What the leader knows of one edge link.
/// An edge now at fan-out address `addr` (link `key`) ends any older link that gave the
/// same address: two live edges cannot both be reached there, so the old one's process is
/// gone (killed and started again at once) though its link has not timed out yet. Its
/// players are logged out now rather than after the timeout, and their logins again
/// through another gateway are not refused "already logged in" meanwhile.
fn supersede(shared: &Shared, key: &str, addr: &str) {
    let old: Vec<String> = shared
        .fanouts
        .iter()
        .filter(|f| f.key() != key && f.value().addr == addr)
        .map(|f| f.key().clone())
        .collect();
    for k in old {
        if let Some(c) = shared.edge_links.get(&k) {
            tracing::info!(edge = %k, fanout = %addr, "edge: a new link from the same address ends the old one");
            c.close(
                2u32.into(),
                b"superseded by a new link from the same edge address",
            );
        }
    }
}

pub(super) struct EdgeLink {
    /// The edge's name.
    name: String,
    /// Its `name@address` (`hub::edge_key`), as the edges' `Members` name it.
    key: String,
    /// The link.
    conn: quinn::Connection,
    /// Its version (`edge::link_version`).
    version: u16,
    /// Where the zone nodes reach the edge for the direct fan-out, once it said.
    fanout: Option<Arc<FanoutEdge>>,
}

impl EdgeLink {
    /// Relayed session `id` of this link.
    fn relay_link(
        &self,
        id: RelayId,
        addr: std::net::SocketAddr,
        max_datagram: u16,
        tx: &mpsc::Sender<EdgeMsg>,
    ) -> RelayLink {
        RelayLink {
            id,
            addr,
            tx: tx.clone(),
            conn: self.conn.clone(),
            max_datagram: usize::from(max_datagram),
            version: self.version,
            fanout: self.fanout.clone(),
        }
    }
}

/// One message from the edge; an error ends the link.
fn message(
    shared: &Arc<Shared>,
    doors: &Arc<Doors>,
    edge: &mut EdgeLink,
    tx: &mpsc::Sender<EdgeMsg>,
    sessions: &mut HashMap<RelayId, Session>,
    m: EdgeMsg,
) -> Result<(), String> {
    match m {
        EdgeMsg::Open {
            id,
            addr,
            compact,
            max_datagram,
        } => {
            if sessions.contains_key(&id) {
                return Err(format!("session {id} opened twice"));
            }
            let link = edge.relay_link(id, addr, max_datagram, tx);
            let (session, slot) = match admit_relayed(shared, doors, addr) {
                Ok(s) => s,
                Err(why) => {
                    // Still open on the edge until it hears back; it answers `Gone`.
                    link.close(close::RATE_LIMITED, why);
                    return Ok(());
                }
            };
            start(shared, sessions, link, session, slot, compact, None);
        }
        EdgeMsg::Resume {
            id,
            addr,
            compact,
            max_datagram,
            who,
        } if edge.version >= 2 => {
            if sessions.contains_key(&id) {
                return Err(format!("session {id} opened twice"));
            }
            let link = edge.relay_link(id, addr, max_datagram, tx);
            // Counted until it reaches the hub: a gateway taking over waits for the
            // edge's claims (`Claimed`).
            shared.claim(&edge.key, who.session);
            // A client of an edge whose leader went, its player still in the world: its
            // session goes on here under the previous leader's id.
            let Some(slot) = kept_slot(shared, doors, addr, who.session) else {
                link.close(
                    close::SHUTDOWN,
                    "your session could not be kept: log in again",
                );
                return Ok(());
            };
            start(
                shared,
                sessions,
                link,
                who.session,
                slot,
                compact,
                Some(who),
            );
        }
        EdgeMsg::Stream { id, bytes } => {
            let Some(s) = sessions.get(&id) else {
                // A session that ended here and has not been told gone yet.
                return Ok(());
            };
            let len = bytes.len();
            let before = s.stream_bytes.fetch_add(len, Ordering::Relaxed);
            if before.saturating_add(len) > RELAY_INBOUND_BYTES {
                Metrics::inc(&shared.metrics.protocol_violations);
                tracing::info!(relay = id, "relayed client flooding its stream: closed");
                sessions.remove(&id);
                edge.relay_link(id, edge.conn.remote_address(), 0, tx)
                    .close(
                        close::PROTOCOL,
                        "too much data before the server could read it",
                    );
            } else if s.stream.send(Relayed::Stream(bytes)).is_err() {
                s.stream_bytes.fetch_sub(len, Ordering::Relaxed);
                sessions.remove(&id);
            }
        }
        EdgeMsg::Gone { id } => {
            sessions.remove(&id);
        }
        EdgeMsg::Claimed if edge.version >= 5 => {
            tracing::info!(edge = %edge.name, "edge: every client it kept is claimed");
            shared.claims_done(&edge.key);
        }
        EdgeMsg::Fanout { addr } if edge.version >= 3 => {
            if addr.len() > edge::MAX_REASON || !addr.contains(':') {
                return Err(format!(
                    "fan-out address {:?} is not host:port",
                    edge::short_reason(&addr)
                ));
            }
            tracing::info!(edge = %edge.name, fanout = %addr, "edge: zone nodes send its clients' broadcasts straight to it");
            supersede(shared, &edge.key, &addr);
            let fanout = FanoutEdge {
                name: edge.name.clone(),
                addr,
            };
            shared.fanouts.insert(edge.key.clone(), fanout.clone());
            shared.to_hub(crate::hub::HubEvent::Edges);
            edge.fanout = Some(Arc::new(fanout));
        }
        other => {
            return Err(format!(
                "unexpected edge message {} (link version {})",
                other.name(),
                edge.version
            ));
        }
    }
    Ok(())
}
