//! An edge's RCEnet side (Realm Crafter's own clients, ENet 1.1): one host task owning
//! the socket and a sans-IO `rcenet::Host`, and per peer a task piping its packets to the
//! leader over the edge link, as a QUIC client's are. Up, each reliable packet
//! `[type][payload]` becomes an rc/1 frame `[len u16][type][payload]` of the session's
//! stream and each `P_StandardUpdate` on channel 2 a datagram; down, the leader's rc/1
//! frames become reliable packets on channel 1 and its datagrams unreliable
//! `P_StandardUpdate`s on channel 2. A close other than a normal one or a kick sends
//! `P_KickedPlayer` first, the only thing the original client reacts to.
//!
//! A peer whose player is in the world is kept when the leader goes, as a QUIC client is:
//! the host task goes on serving ENet for it (pings, acknowledgements) and, when this
//! gateway takes over, hands its socket and host, the peer's ENet state in it, to the full
//! gateway's RCEnet host task of the same shard (`net::enet::Adopted`), whose session
//! task starts in the world. A peer not in the world, or not taken over within
//! [`super::KEEP_FOR`], is kicked and logs in again.
//!
//! A peer that connects while no leader is linked (the previous one just went) waits,
//! its packets kept, up to [`super::UNLINKED_GRACE`]: opened at the leader this edge
//! links to next, or handed over with the host when this gateway takes over
//! (`net::enet::FreshPeer`), as a QUIC client waits in the endpoint's queue.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use rcenet::{Event, Host, PeerId};
use shared::frame::FrameDecoder;
use shared::internal::datagram;
use shared::internal::edge::EdgeMsg;
use shared::proto::{KickedPlayer, ServerPacket, ids};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::{Client, Down, KEEP_FOR, Leader, Sink, State, UNLINKED_GRACE};
use crate::net::client::KeptSession;
use crate::net::enet::{
    Adopted, CHANNEL_RELIABLE, CHANNEL_UPDATES, FreshPeer, KeptPeer, host_config,
};
use crate::net::udp::{self, Outbox};
use crate::session::close;

/// What a peer's task (and the link's reader) asks of the host task.
#[derive(Debug)]
pub(super) enum EnetOut {
    /// One RC packet `[type][payload]`, reliable on channel 1.
    Reliable {
        /// The peer.
        peer: PeerId,
        /// The packet.
        packet: Vec<u8>,
    },
    /// rc/1 datagram frames: each `P_StandardUpdate` unreliable on channel 2.
    Datagram {
        /// The peer.
        peer: PeerId,
        /// The frames.
        frames: Bytes,
    },
    /// The peer's player entered the world (the leader said so): it is kept if the
    /// leader goes.
    Entered {
        /// The peer.
        peer: PeerId,
        /// Who its player is, where.
        who: KeptSession,
    },
    /// The peer's party changed (every member, leader first; empty: none).
    Party {
        /// The peer.
        peer: PeerId,
        /// The members.
        members: Vec<String>,
    },
    /// The link to the leader ended: the peer is kept if its player is in the world,
    /// kicked otherwise.
    Lost {
        /// The peer.
        peer: PeerId,
    },
    /// End the connection, `P_KickedPlayer` first when `kick`.
    Close {
        /// The peer.
        peer: PeerId,
        /// Send `P_KickedPlayer` first.
        kick: bool,
        /// The close code (the ENet DISCONNECT's data).
        code: u32,
    },
}

/// Commands queued for the host task at most (and taken in one window at most).
const COMMANDS: usize = 1 << 16;
/// Most datagrams read in one window.
const READ_PER_TICK: usize = 8_192;

/// One connected peer as the host task keeps it.
struct Peer {
    id: u64,
    leader: Arc<Leader>,
    /// Its reliable packets to its task (as rc/1 frames); `None` once closing.
    up: Option<mpsc::UnboundedSender<Vec<u8>>>,
    /// Bytes in `up` not yet relayed.
    up_bytes: Arc<AtomicUsize>,
    /// Whether it counts in the edge's connection limits.
    counted: bool,
    addr: SocketAddr,
    /// Its player in the world, as the leader last said.
    entered: Option<KeptSession>,
    /// Its party, as the leader last said.
    party: Vec<String>,
    /// Being closed (a kick, a flood, the leader's close): never kept.
    closing: bool,
    /// Kept since the leader went: kicked at this time unless handed over first.
    kept_until: Option<u64>,
    /// Its position budget, for the datagrams sent straight to its zone node.
    positions: crate::session::budget::InputBudget,
}

/// A peer connected while no leader was linked: it waits for one (or for this gateway to
/// take over) until `until`, its reliable packets kept (at most [`UP_BYTES`]).
struct Waiting {
    addr: SocketAddr,
    until: u64,
    packets: Vec<(u8, Bytes)>,
    bytes: usize,
}

/// Serves RCEnet on `socket` (one of `shards` on the address) until `stop`; then hands
/// the socket, the host and the peers kept in it back (for the full gateway taking over).
pub(super) async fn serve(
    state: Arc<State>,
    socket: std::net::UdpSocket,
    shards: usize,
    mut stop: watch::Receiver<bool>,
) -> Option<Adopted> {
    let mut host = Host::new(host_config(&state.cfg, shards));
    let (tx, mut cmds) = mpsc::channel::<EnetOut>(COMMANDS);
    let mut peers: HashMap<PeerId, Peer> = HashMap::new();
    // The peers kept since their leader went (see `Peer::kept_until`).
    let mut kept: HashSet<PeerId> = HashSet::new();
    // A new leader this task has still to tell it has resumed its kept peers there
    // (`Tally`: the link's `Claimed` waits for every host task).
    let mut leaders = state.leader.subscribe();
    let mut to_tell: Option<Arc<Leader>> = None;
    // Peers connected while no leader was linked.
    let mut waiting: HashMap<PeerId, Waiting> = HashMap::new();
    let grace = u64::try_from(UNLINKED_GRACE.as_millis()).unwrap_or(u64::MAX);
    let epoch = Instant::now();
    let now = || u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
    let keep_for = u64::try_from(KEEP_FOR.as_millis()).unwrap_or(u64::MAX);
    // Read and written on the host's clock, as the full gateway's host tasks (net::udp).
    let mut buf = vec![0u8; 65_536];
    let mut outbox = Outbox::default();
    let mut pool = BytesMut::new();
    let mut tick = tokio::time::interval(Duration::from_millis(5));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.wait_for(|s| *s) => break,
        }
        udp::read(&socket, &mut buf, READ_PER_TICK, |from, data| {
            host.handle_datagram(now(), from, data);
        });
        for _ in 0..COMMANDS {
            match cmds.try_recv() {
                Ok(cmd) => command(&mut host, &mut peers, &mut kept, cmd, (now(), keep_for)),
                Err(_) => break,
            }
        }
        host.handle_timeout(now());
        if leaders.has_changed().unwrap_or(false) {
            to_tell = leaders.borrow_and_update().clone();
        }
        let mut resumed_all = true;
        // Only while some peer is kept (no scan of every peer per window otherwise).
        if !kept.is_empty() {
            let linked = state.leader.borrow().clone();
            if let Some(leader) = linked {
                resumed_all = resume_kept(&state, &mut peers, &mut kept, &tx, &leader);
            }
            // Kept peers no gateway took over in time: log in again.
            let t = now();
            kept.retain(|peer| {
                let Some(p) = peers.get_mut(peer) else {
                    return false;
                };
                if p.kept_until.is_some_and(|at| t >= at) {
                    p.kept_until = None;
                    p.entered = None;
                    p.closing = true;
                    kick(&mut host, *peer);
                    host.disconnect(t, *peer, close::SHUTDOWN);
                    return false;
                }
                p.kept_until.is_some()
            });
        }
        if resumed_all && let Some(leader) = to_tell.take() {
            leader.claims.one_in();
        }
        if !waiting.is_empty() {
            let t = now();
            open_waiting(
                &state,
                &mut host,
                (&mut peers, &mut waiting),
                &tx,
                (t, &mut pool),
            );
            // No leader in time: refused, to try another address.
            waiting.retain(|peer, w| {
                if t < w.until {
                    return true;
                }
                unadmit(&state, w.addr);
                host.disconnect_now(t, *peer, close::UNAVAILABLE);
                false
            });
        }
        while let Some(e) = host.poll_event() {
            match e {
                Event::Connect { peer, addr } => {
                    let t = now();
                    if connected(&state, &mut host, &mut peers, &tx, peer, addr, t) == Some(false) {
                        waiting.insert(
                            peer,
                            Waiting {
                                addr,
                                until: t.saturating_add(grace),
                                packets: Vec::new(),
                                bytes: 0,
                            },
                        );
                    }
                }
                Event::Receive {
                    peer,
                    channel,
                    data,
                    reliable,
                } if waiting.contains_key(&peer) => {
                    if !wait_with(&mut waiting, peer, (channel, data, reliable)) {
                        tracing::info!(
                            ?peer,
                            "RCEnet peer flooding while waiting for a leader: disconnecting"
                        );
                        if let Some(w) = waiting.remove(&peer) {
                            unadmit(&state, w.addr);
                        }
                        host.disconnect(now(), peer, close::RATE_LIMITED);
                    }
                }
                Event::Receive {
                    peer,
                    channel,
                    data,
                    reliable,
                } => {
                    if !received(
                        &state,
                        &mut peers,
                        peer,
                        (channel, &data, reliable),
                        (now(), &mut pool),
                    ) {
                        flooded(&mut host, &mut peers, peer, now());
                    }
                }
                Event::Disconnect { peer, .. } => {
                    if let Some(p) = peers.remove(&peer) {
                        forget(&state, &p);
                    }
                    if let Some(w) = waiting.remove(&peer) {
                        unadmit(&state, w.addr);
                    }
                }
            }
        }
        outbox.send_from(&mut host, &socket, now());
    }
    // Stopping: this gateway takes over. What the link's reader and the peer tasks said
    // last is taken; the peers in the world are handed over with the host, the others
    // are kicked (the disconnects go out now).
    while let Ok(cmd) = cmds.try_recv() {
        command(&mut host, &mut peers, &mut kept, cmd, (now(), keep_for));
    }
    let t = now();
    let mut kept = Vec::new();
    for (peer, p) in peers.drain() {
        forget(&state, &p);
        match p.entered {
            Some(mut who) if !p.closing => {
                who.party = p.party;
                kept.push(KeptPeer {
                    peer,
                    addr: p.addr,
                    who,
                });
            }
            _ => {
                if !p.closing {
                    kick(&mut host, peer);
                    host.disconnect(t, peer, close::SHUTDOWN);
                }
            }
        }
    }
    // Peers still waiting for a leader: the full gateway opens them as its own.
    let fresh = waiting
        .into_iter()
        .map(|(peer, w)| {
            unadmit(&state, w.addr);
            FreshPeer {
                peer,
                addr: w.addr,
                packets: w.packets,
            }
        })
        .collect();
    outbox.send_from(&mut host, &socket, t);
    Some(Adopted {
        socket,
        host,
        epoch,
        kept,
        fresh,
    })
}

/// It sends faster than the leader link takes: a flood, disconnected.
fn flooded(host: &mut Host, peers: &mut HashMap<PeerId, Peer>, peer: PeerId, now: u64) {
    tracing::info!(?peer, "RCEnet peer flooding its session: disconnecting");
    if let Some(p) = peers.get_mut(&peer) {
        p.up = None;
        p.closing = true;
    }
    host.disconnect(now, peer, close::RATE_LIMITED);
}

/// What one kept packet of a waiting peer costs beside its bytes (its `Bytes` handle and
/// channel in the list), counted against [`UP_BYTES`].
const WAITING_PACKET_COST: usize = 48;

/// Keeps a waiting peer's packet for when it is opened (a position is dropped: its
/// player is not in the world yet); false past [`UP_BYTES`] kept (a flood).
fn wait_with(
    waiting: &mut HashMap<PeerId, Waiting>,
    peer: PeerId,
    (channel, data, reliable): (u8, Bytes, bool),
) -> bool {
    let Some(w) = waiting.get_mut(&peer) else {
        return true;
    };
    if !reliable {
        return true;
    }
    // Each kept packet costs its entry too: many tiny ones count as much as they take.
    w.bytes = w.bytes.saturating_add(data.len() + WAITING_PACKET_COST);
    if w.bytes > UP_BYTES {
        return false;
    }
    w.packets.push((channel, data));
    true
}

/// Opens the waiting peers at the leader once one is linked, and relays what they sent
/// meanwhile (a full link queue leaves the rest for the next window).
fn open_waiting(
    state: &Arc<State>,
    host: &mut Host,
    (peers, waiting): (&mut HashMap<PeerId, Peer>, &mut HashMap<PeerId, Waiting>),
    tx: &mpsc::Sender<EnetOut>,
    (now, pool): (u64, &mut BytesMut),
) {
    let Some(leader) = state.leader.borrow().clone() else {
        return;
    };
    let ids: Vec<PeerId> = waiting.keys().copied().collect();
    for peer in ids {
        let Some(w) = waiting.remove(&peer) else {
            continue;
        };
        if !relay(state, peers, tx, (peer, w.addr), &leader, None) {
            waiting.insert(peer, w);
            return;
        }
        for (channel, data) in w.packets {
            if !received(
                state,
                peers,
                peer,
                (channel, &data, true),
                (now, &mut *pool),
            ) {
                flooded(host, peers, peer, now);
                break;
            }
        }
    }
}

fn kick(host: &mut Host, peer: PeerId) {
    let packet = ServerPacket::KickedPlayer(KickedPlayer {}).to_bytes();
    let _ = host.send(peer, CHANNEL_RELIABLE, &packet, true);
}

/// A peer leaves the edge's connection limits.
fn forget(state: &State, p: &Peer) {
    if p.counted {
        unadmit(state, p.addr);
    }
}

/// Gives back what [`super::admit`] counted for a client from `addr`.
fn unadmit(state: &State, addr: SocketAddr) {
    state.open.fetch_sub(1, Ordering::Relaxed);
    let key = crate::net::client::peer_key(addr);
    state.per_ip.remove_if_mut(&key, |_, n| {
        *n = n.saturating_sub(1);
        *n == 0
    });
}

/// A peer finished ENet's handshake: within the edge's limits and with a leader linked,
/// it is opened at the leader and given its task (`Some(true)`); within the limits with
/// none linked, it is to wait for one (`Some(false)`, counted in the limits); refused
/// otherwise (`None`).
fn connected(
    state: &Arc<State>,
    host: &mut Host,
    peers: &mut HashMap<PeerId, Peer>,
    tx: &mpsc::Sender<EnetOut>,
    peer: PeerId,
    addr: SocketAddr,
    now: u64,
) -> Option<bool> {
    if !super::admit(state, addr) {
        host.disconnect_now(now, peer, close::RATE_LIMITED);
        return None;
    }
    let Some(leader) = state.leader.borrow().clone() else {
        return Some(false);
    };
    if !relay(state, peers, tx, (peer, addr), &leader, None) {
        unadmit(state, addr);
        host.disconnect_now(now, peer, close::UNAVAILABLE);
        return None;
    }
    Some(true)
}

/// Opens `peer` at `leader` (`Open`), or resumes it there in the world when `kept`
/// (`Resume`: its previous leader went), and starts its task; false when the link's
/// queue is full.
fn relay(
    state: &Arc<State>,
    peers: &mut HashMap<PeerId, Peer>,
    tx: &mpsc::Sender<EnetOut>,
    (peer, addr): (PeerId, SocketAddr),
    leader: &Arc<Leader>,
    kept: Option<KeptSession>,
) -> bool {
    let id = state.next_id.fetch_add(1, Ordering::Relaxed);
    let (down_tx, down_rx) = mpsc::unbounded_channel();
    let queued = Arc::new(AtomicUsize::new(0));
    leader.join(
        id,
        Client {
            down: down_tx,
            session: std::sync::atomic::AtomicU64::new(0),
            queued: queued.clone(),
            sink: Sink::Enet(peer, tx.clone()),
        },
    );
    let max_datagram = u16::try_from(crate::hub::ENET_DATAGRAM).unwrap_or(u16::MAX);
    let first = match &kept {
        None => EdgeMsg::Open {
            id,
            addr,
            compact: false,
            max_datagram,
        },
        Some(who) => EdgeMsg::Resume {
            id,
            addr,
            compact: false,
            max_datagram,
            who: who.clone(),
        },
    };
    if leader.tx.try_send(first).is_err() {
        leader.forget(id);
        return false;
    }
    let (up_tx, up_rx) = mpsc::unbounded_channel();
    let up_bytes = Arc::new(AtomicUsize::new(0));
    let party = kept.as_ref().map(|k| k.party.clone()).unwrap_or_default();
    let fresh = Peer {
        id,
        leader: leader.clone(),
        up: Some(up_tx),
        up_bytes: up_bytes.clone(),
        counted: true,
        addr,
        entered: kept,
        party,
        closing: false,
        kept_until: None,
        positions: crate::session::budget::InputBudget::new(state.budgets.clone(), 0),
    };
    match peers.get_mut(&peer) {
        // A kept peer: still counted in the limits as when it connected.
        Some(p) => {
            *p = Peer {
                counted: p.counted,
                ..fresh
            }
        }
        None => {
            peers.insert(peer, fresh);
        }
    }
    tokio::spawn(peer_task(
        leader.clone(),
        id,
        peer,
        tx.clone(),
        up_rx,
        up_bytes,
        down_rx,
        queued,
    ));
    true
}

/// The peers kept when their leader went, resumed at `leader` (another gateway took
/// over and this edge linked to it); false when the link's queue had no room for some
/// (tried again next window).
fn resume_kept(
    state: &Arc<State>,
    peers: &mut HashMap<PeerId, Peer>,
    kept: &mut HashSet<PeerId>,
    tx: &mpsc::Sender<EnetOut>,
    leader: &Arc<Leader>,
) -> bool {
    let ready: Vec<(PeerId, SocketAddr, KeptSession)> = kept
        .iter()
        .filter_map(|peer| Some((*peer, peers.get(peer)?)))
        .filter(|(_, p)| p.kept_until.is_some() && !Arc::ptr_eq(&p.leader, leader))
        .filter_map(|(peer, p)| {
            let mut who = p.entered.clone()?;
            who.party.clone_from(&p.party);
            Some((peer, p.addr, who))
        })
        .collect();
    let mut all = true;
    for (peer, addr, who) in ready {
        // The link's queue full: tried again next window.
        if relay(state, peers, tx, (peer, addr), leader, Some(who)) {
            kept.remove(&peer);
        } else {
            all = false;
        }
    }
    all
}

/// Stream bytes an RCEnet peer may have waiting for the leader link (past it the peer
/// is closed as a flood, as the full gateway's host task does).
const UP_BYTES: usize = 256 * 1024;

/// One packet from a peer, relayed (a position straight to its zone node when it can,
/// [`super::fanout::input`]); false when the peer floods (past [`UP_BYTES`] waiting, or
/// past its position budget too often): it is to be disconnected, a reliable packet
/// cannot be dropped.
fn received(
    state: &State,
    peers: &mut HashMap<PeerId, Peer>,
    peer: PeerId,
    (channel, data, reliable): (u8, &[u8], bool),
    (now_ms, pool): (u64, &mut BytesMut),
) -> bool {
    let Some(p) = peers.get_mut(&peer) else {
        return true;
    };
    let Some(&ty) = data.first() else {
        return true;
    };
    // The server's own messages (200..=202) are never taken from the network.
    if (200..=202).contains(&ty) {
        return true;
    }
    let Ok(len) = u16::try_from(data.len()) else {
        return true;
    };
    if !reliable {
        if ty == ids::P_STANDARD_UPDATE && channel == CHANNEL_UPDATES {
            // Straight to its zone node when it has a fan-out link here.
            let mut frame = Vec::with_capacity(2 + data.len());
            frame.extend_from_slice(&len.to_le_bytes());
            frame.extend_from_slice(data);
            let up = super::fanout::input(
                state,
                &p.leader,
                (p.id, p.entered.as_ref().map(|w| w.session)),
                &mut p.positions,
                now_ms,
                &frame,
                pool,
            );
            match up {
                super::fanout::Up::Sent | super::fanout::Up::Dropped => return true,
                // A flood of positions: disconnected as one of reliable packets is.
                super::fanout::Up::Kick(_) => return false,
                super::fanout::Up::Relay => {}
            }
            let mut b = BytesMut::with_capacity(datagram::HEADER_LEN + frame.len());
            datagram::put_header(&mut b, p.id);
            b.extend_from_slice(&frame);
            let _ = p.leader.conn.send_datagram(b.freeze());
        }
        return true;
    }
    let Some(up) = &p.up else {
        return true;
    };
    let mut frame = Vec::with_capacity(2 + data.len());
    frame.extend_from_slice(&len.to_le_bytes());
    frame.extend_from_slice(data);
    let before = p.up_bytes.fetch_add(frame.len(), Ordering::Relaxed);
    if before.saturating_add(frame.len()) > UP_BYTES {
        p.up_bytes.fetch_sub(frame.len(), Ordering::Relaxed);
        return false;
    }
    let _ = up.send(frame);
    true
}

fn command(
    host: &mut Host,
    peers: &mut HashMap<PeerId, Peer>,
    kept: &mut HashSet<PeerId>,
    cmd: EnetOut,
    (now, keep_for): (u64, u64),
) {
    match cmd {
        EnetOut::Entered { peer, who } => {
            if let Some(p) = peers.get_mut(&peer) {
                p.entered = Some(who);
            }
        }
        EnetOut::Party { peer, members } => {
            if let Some(p) = peers.get_mut(&peer) {
                p.party = members;
            }
        }
        EnetOut::Lost { peer } => {
            let Some(p) = peers.get_mut(&peer) else {
                return;
            };
            p.up = None;
            if p.entered.is_some() && !p.closing {
                p.kept_until = Some(now.saturating_add(keep_for));
                kept.insert(peer);
            } else if !p.closing {
                p.closing = true;
                kick(host, peer);
                host.disconnect(now, peer, close::SHUTDOWN);
            }
        }
        EnetOut::Reliable { peer, packet } => {
            if peers.contains_key(&peer)
                && host.send(peer, CHANNEL_RELIABLE, &packet, true).is_err()
            {
                // More unacknowledged than the host allows: it cannot keep up.
                host.disconnect_now(now, peer, close::TOO_SLOW);
            }
        }
        EnetOut::Datagram { peer, frames } => {
            if !peers.contains_key(&peer) {
                return;
            }
            let mut at = 0usize;
            while let Some(&[lo, hi]) = frames.get(at..at + 2) {
                let len = usize::from(u16::from_le_bytes([lo, hi]));
                let Some(packet) = frames.get(at + 2..at + 2 + len) else {
                    break;
                };
                at += 2 + len;
                if packet.first() == Some(&ids::P_STANDARD_UPDATE) {
                    let _ = host.send(peer, CHANNEL_UPDATES, packet, false);
                }
            }
        }
        EnetOut::Close {
            peer,
            kick: k,
            code,
        } => {
            if let Some(p) = peers.get_mut(&peer) {
                p.up = None;
                p.closing = true;
                if k {
                    kick(host, peer);
                }
                host.disconnect(now, peer, code);
            }
        }
    }
}

/// One RCEnet peer's relay: its reliable packets up the link, the leader's frames and
/// closes down to the host task.
#[allow(clippy::too_many_arguments)]
async fn peer_task(
    leader: Arc<Leader>,
    id: u64,
    peer: PeerId,
    host: mpsc::Sender<EnetOut>,
    mut up: mpsc::UnboundedReceiver<Vec<u8>>,
    up_bytes: Arc<AtomicUsize>,
    mut down: mpsc::UnboundedReceiver<Down>,
    queued: Arc<AtomicUsize>,
) {
    // The leader's frames: at most 16 bit long each, the rc/1 framing's own limit.
    let mut dec = FrameDecoder::with_max_frame_len(usize::from(u16::MAX));
    let (kick, code) = loop {
        tokio::select! {
            f = up.recv() => match f {
                Some(frame) => {
                    up_bytes.fetch_sub(frame.len(), Ordering::Relaxed);
                    if leader.tx.send(EdgeMsg::Stream { id, bytes: frame }).await.is_err() {
                        break (true, close::SHUTDOWN);
                    }
                }
                // The peer disconnected (or is closing).
                None => break (false, close::NORMAL),
            },
            m = down.recv() => match m {
                Some(Down::Stream(b)) => {
                    queued.fetch_sub(b.len(), Ordering::Relaxed);
                    dec.push(&b);
                    loop {
                        match dec.next_frame() {
                            Ok(Some(f)) => {
                                // The original client's menu reads type 0 as "connection lost".
                                if f.ty == 0 {
                                    continue;
                                }
                                let mut packet = Vec::with_capacity(1 + f.payload.len());
                                packet.push(f.ty);
                                packet.extend_from_slice(f.payload);
                                if host.send(EnetOut::Reliable { peer, packet }).await.is_err() {
                                    return;
                                }
                            }
                            Ok(None) => break,
                            Err(_) => {
                                let _ = host.send(EnetOut::Close { peer, kick: true, code: close::PROTOCOL }).await;
                                return;
                            }
                        }
                    }
                }
                Some(Down::Close(code, _)) => {
                    break (code != close::NORMAL && code != close::KICKED, code);
                }
                // The link's reader tells the host task itself.
                Some(Down::Entered(_) | Down::Party(_)) => {}
                Some(Down::LeaderLost) | None => {
                    leader.forget(id);
                    let _ = host.send(EnetOut::Lost { peer }).await;
                    return;
                }
            },
        }
    };
    leader.forget(id);
    let _ = leader.tx.try_send(EdgeMsg::Gone { id });
    let _ = host.send(EnetOut::Close { peer, kick, code }).await;
}
