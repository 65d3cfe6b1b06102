//! The edge's side of the direct fan-out (`rc-fanout/1`, `shared::internal::FANOUT_ALPN`):
//! a zone node hosting players whose clients this edge holds connects to the edge's
//! client endpoint, proves the cluster secret as it does to the leader (the node's half of
//! `shared::internal::handshake`, registering no instances), and sends the broadcasts of
//! those players only; the edge gathers each client's datagram and sends it itself. The
//! leader no longer relays them: an edge's clients cost the leader their logins, reliable
//! frames and inputs, not their share of every broadcast tick.
//!
//! Fencing: a datagram goes to a client only when the node sending it is the node the
//! leader last said hosts the client's player ([`super::Leader::sessions`], from
//! `EdgeMsg::Entered`), as the leader only fans out what the node it routes to sends.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::BytesMut;
use shared::internal::codec::{CodecError, FrameDecoder, encode_frame};
use shared::internal::fanout::Broadcast;
use shared::internal::handshake::Step;
use shared::internal::{Envelope, MAX_FRAME_LEN, Msg, datagram, edge};
use tokio::sync::watch;

use super::{Sink, State, enet};

/// How long a node has to open its stream and prove the secret.
const HANDSHAKE: Duration = Duration::from_secs(10);

/// One zone node's fan-out link until it ends or the edge stops.
pub(super) async fn serve(
    state: Arc<State>,
    conn: quinn::Connection,
    mut stop: watch::Receiver<bool>,
) {
    let Ok(Ok((mut send, mut recv))) = tokio::time::timeout(HANDSHAKE, conn.accept_bi()).await
    else {
        conn.close(2u32.into(), b"no stream");
        return;
    };
    let small = usize::try_from(state.cfg.internal_preauth_frame_len).unwrap_or(usize::MAX);
    let mut dec = FrameDecoder::with_max(small);
    let mut buf = vec![0u8; 64 * 1024];
    let node = tokio::time::timeout(
        HANDSHAKE,
        handshake(&state, &conn, &mut send, &mut recv, &mut dec, &mut buf),
    )
    .await;
    let Ok(Some(node)) = node else {
        tracing::info!(peer = %conn.remote_address(), "edge: a fan-out link did not prove the cluster secret in time");
        conn.close(2u32.into(), b"handshake not completed");
        return;
    };
    tracing::info!(node = %node, peer = %conn.remote_address(), "edge: zone node fans its broadcasts out here");
    // Its players' clients' positions go back to it on this link.
    state.links.insert(node.clone(), conn.clone());
    let mut out = BytesMut::new();
    let mut park = false;
    let why = 'link: loop {
        loop {
            match dec.next_envelope() {
                Ok(Some(Envelope {
                    msg: Msg::Broadcast(b),
                    ..
                })) => deliver(&state, &node, &b, &mut out),
                // Nothing else travels on this link; a newer node's extra is ignored.
                Ok(Some(_)) | Err(CodecError::Malformed(_)) => {}
                Ok(None) => break,
                Err(e) => {
                    conn.close(2u32.into(), b"protocol violation");
                    break 'link format!("protocol violation: {e}");
                }
            }
        }
        tokio::select! {
            r = recv.read(&mut buf) => match r {
                Ok(Some(n)) => dec.push(buf.get(..n).unwrap_or(&[])),
                Ok(None) => break "the node finished the link".to_owned(),
                Err(e) => break e.to_string(),
            },
            _ = stop.wait_for(|s| *s) => {
                park = true;
                break "this gateway stops serving as an edge".to_owned();
            }
        }
    };
    if park {
        // Kept open, its stream too, for the gateway taking over in this process to tell
        // the node it leads now (`announce_lead`); closed when dropped unused. (Dropping
        // the stream stopped it, and the node, taking the link for lost, reconnected
        // before the announcement came and missed it: found by `deploy/failover.sh`, the
        // first takeover of each run placed its instances only after the nodes' links to
        // the dead leader timed out.)
        crate::lock(&state.parked).push(super::Parked {
            conn: conn.clone(),
            _stream: (send, recv),
        });
    }
    state
        .links
        .remove_if(&node, |_, c| c.stable_id() == conn.stable_id());
    tracing::info!(node = %node, reason = %why,
        sent = state.fanout_sent.load(Ordering::Relaxed),
        dropped = state.fanout_dropped.load(Ordering::Relaxed),
        inputs = state.inputs_direct.load(Ordering::Relaxed),
        "edge: fan-out link ended");
}

/// What became of a client's position datagram ([`input`]).
pub(super) enum Up {
    /// Sent straight to the zone node hosting its player.
    Sent,
    /// Malformed, or past the client's position budget: dropped.
    Dropped,
    /// Past its budget once too often: disconnect the client (close code 4), why.
    Kick(String),
    /// No fan-out link to its node (or not in the world yet): the leader relays it.
    Relay,
}

/// A relayed client's `P_StandardUpdate` datagram (`d`: rc/1 frames) straight to the zone
/// node hosting its player, over that node's fan-out link, as `[session u64][frames]`
/// (`shared::internal::datagram`, what the leader sends), under the client's position
/// budget (`input_budgets`' `position`; its reliable frames keep the leader's). The node
/// is the one the leader last said hosts the session (`Entered`); a node without a link
/// here, or a client not in the world yet, is the leader's to relay.
#[doc(alias = "P_StandardUpdate")]
pub(super) fn input(
    state: &State,
    leader: &super::Leader,
    (id, session): (edge::RelayId, Option<u64>),
    budget: &mut crate::session::budget::InputBudget,
    now_ms: u64,
    d: &[u8],
    pool: &mut BytesMut,
) -> Up {
    use crate::session::budget::Verdict;
    let Some(session) = session else {
        return Up::Relay;
    };
    let Some(node) = leader
        .sessions
        .get(&session)
        .filter(|e| e.0 == id)
        .map(|e| e.1.clone())
    else {
        return Up::Relay;
    };
    let Some(conn) = state.links.get(&node).map(|c| c.clone()) else {
        return Up::Relay;
    };
    let frames = match shared::frame::split_datagram(d, Some(shared::proto::ids::P_STANDARD_UPDATE))
    {
        Ok(f) => f.count(),
        Err(_) => return Up::Dropped,
    };
    match budget.admit_positions(now_ms, frames) {
        Verdict::Admit => {}
        Verdict::Drop(_) => return Up::Dropped,
        Verdict::Kick(a) => return Up::Kick(format!("input flood ({a})")),
    }
    pool.reserve(datagram::HEADER_LEN + d.len());
    datagram::put_header(pool, session);
    pool.extend_from_slice(d);
    if conn.send_datagram(pool.split().freeze()).is_err() {
        return Up::Relay;
    }
    state.inputs_direct.fetch_add(1, Ordering::Relaxed);
    Up::Sent
}

/// The gateway's half of the internal handshake on a fan-out link; the node's id once it
/// proved the cluster secret.
async fn handshake(
    state: &State,
    conn: &quinn::Connection,
    send: &mut quinn::SendStream,
    recv: &mut quinn::RecvStream,
    dec: &mut FrameDecoder,
    buf: &mut [u8],
) -> Option<String> {
    let epoch = state.epoch.load(Ordering::Relaxed);
    let mut hs = crate::net::node::gateway_handshake(&state.cfg, conn, epoch)?;
    loop {
        let env = crate::net::node::next_envelope(dec, recv, buf).await?;
        let (reply, done) = match hs.on_envelope(env) {
            Step::Continue => continue,
            Step::Send(m) => {
                if matches!(m, Msg::Proven { .. }) {
                    // Proven: a tick's broadcast may be large.
                    dec.set_max(MAX_FRAME_LEN);
                }
                (m, None)
            }
            Step::Refuse(m) => {
                tracing::warn!(msg = ?m, peer = %conn.remote_address(), "edge: refused a fan-out link");
                (m, Some(None))
            }
            Step::Registered { node_id, reply, .. } => (reply, Some(Some(node_id))),
        };
        let mut v = Vec::new();
        if encode_frame(&Envelope::new(reply), &mut v).is_err() || send.write_all(&v).await.is_err()
        {
            return None;
        }
        if let Some(done) = done {
            return done;
        }
    }
}

/// One broadcast from `node`: each datagram gathered and sent to its client, when this
/// edge holds the client and the leader said `node` hosts its player.
#[doc(alias = "P_StandardUpdate")]
fn deliver(state: &State, node: &str, b: &Broadcast, out: &mut BytesMut) {
    let Some(leader) = state.leader.borrow().clone() else {
        state
            .fanout_dropped
            .fetch_add(b.datagrams.len() as u64, Ordering::Relaxed);
        return;
    };
    let (mut sent, mut dropped) = (0u64, 0u64);
    for d in &b.datagrams {
        let relay = leader
            .sessions
            .get(&d.session)
            .filter(|e| e.1 == node)
            .map(|e| e.0);
        let Some(relay) = relay else {
            dropped += 1;
            continue;
        };
        let Some(c) = leader.clients.get(&relay) else {
            leader.sessions.remove_if(&d.session, |_, e| e.0 == relay);
            dropped += 1;
            continue;
        };
        let ok = match &c.sink {
            Sink::Quic(conn) => {
                let max = conn.max_datagram_size().unwrap_or(0);
                b.gather(d, max, out).is_ok_and(|bytes| {
                    conn.datagram_send_buffer_space() >= bytes.len()
                        && conn.send_datagram(bytes).is_ok()
                })
            }
            Sink::Enet(peer, tx) => {
                b.gather(d, crate::hub::ENET_DATAGRAM, out)
                    .is_ok_and(|frames| {
                        tx.try_send(enet::EnetOut::Datagram {
                            peer: *peer,
                            frames,
                        })
                        .is_ok()
                    })
            }
        };
        if ok {
            sent += 1;
        } else {
            dropped += 1;
        }
    }
    state.fanout_sent.fetch_add(sent, Ordering::Relaxed);
    state.fanout_dropped.fetch_add(dropped, Ordering::Relaxed);
}
