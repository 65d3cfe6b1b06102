//! The direct fan-out: the broadcast datagrams of a player whose client an edge gateway
//! holds go straight to that edge over a fan-out link (`rc-fanout/1`,
//! `shared::internal::FANOUT_ALPN`) instead of through the leader, which relays them
//! otherwise. The leader says which edge holds whom ([`Msg::Fanout`]); each broadcast is
//! split by edge ([`Broadcast::split_off_by`]) and what no linked edge takes goes to the
//! leader as before, so a fan-out link that is down (connecting, refused, its edge gone)
//! only means the slower path, never a lost player.
//!
//! [`Routes`] is the pure part (who goes where, which edges are up, what to forget; times
//! are inputs); [`Fanout`] adds the links, one task each.
//!
//! [`Msg::Fanout`]: shared::internal::Msg::Fanout

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use shared::internal::codec::encode_frame;
use shared::internal::fanout::Broadcast;
use shared::internal::{Envelope, FanoutEdge, Msg, SessionId};
use tokio::sync::{Notify, mpsc, watch};

use crate::actor::{Metrics, Registry};
use crate::config::NodeConfig;

/// A session not seen in a broadcast for this long is forgotten (its player left).
const SESSION_IDLE_MS: u64 = 120_000;
/// An edge whose link has been down this long is forgotten with its sessions (it is
/// gone; the leader names it again should it come back).
const EDGE_DOWN_MS: u64 = 30_000;
/// How often [`Routes::prune`] runs.
const PRUNE_EVERY_MS: u64 = 5_000;
/// Broadcasts queued per fan-out link; more are dropped (counted).
const LINK_QUEUE: usize = 32;
/// Connecting and proving the secret to an edge, at most.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest wait between two attempts to link an edge.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// One edge as the routes know it (by its address: names need not be unique).
#[derive(Debug)]
struct EdgeState {
    up: bool,
    /// Since when it has been down (link time, ms).
    down_since: u64,
}

/// Which edge each session's broadcast datagrams go to. Pure.
#[derive(Debug, Default)]
pub(crate) struct Routes {
    /// Session → its edge's address and when it was last routed.
    via: HashMap<SessionId, (Arc<str>, u64)>,
    /// By address.
    edges: HashMap<Arc<str>, EdgeState>,
    /// The edges the leader last named ([`Msg::Edges`]): linked whether or not a session
    /// goes to them, never forgotten while named.
    ///
    /// [`Msg::Edges`]: shared::internal::Msg::Edges
    pinned: HashSet<Arc<str>>,
    last_prune: u64,
}

/// What the shell does after [`Routes::set`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Link {
    /// Nothing.
    Keep,
    /// Start a link to the edge at this address (named so, for the logs).
    Start(Arc<str>, String),
    /// Try the link to this edge again now, not at its backoff's end: the leader has just
    /// named it, so it is up (an edge restarted at the address it had, or one that led
    /// and is an edge again).
    Retry(Arc<str>),
}

impl Routes {
    /// The leader says where `session`'s datagrams go (`None`: through it).
    pub(crate) fn set(&mut self, session: SessionId, edge: Option<FanoutEdge>, now: u64) -> Link {
        let Some(FanoutEdge { name, addr }) = edge else {
            self.via.remove(&session);
            return Link::Keep;
        };
        let (key, link) = self.edge(name, addr, now);
        self.via.insert(session, (key, now));
        link
    }

    /// The leader names the edges linked to it: each is linked from now on, sessions or
    /// not, until a later list leaves it out (then it goes as an unpinned one does). A
    /// named edge whose link is down is tried again at once.
    pub(crate) fn pin(&mut self, edges: Vec<FanoutEdge>, now: u64) -> Vec<Link> {
        self.pinned.clear();
        let mut links = Vec::new();
        for FanoutEdge { name, addr } in edges {
            let (key, link) = self.edge(name, addr, now);
            let link = match link {
                Link::Keep if self.edges.get(&key).is_some_and(|e| !e.up) => {
                    Link::Retry(key.clone())
                }
                other => other,
            };
            self.pinned.insert(key);
            if link != Link::Keep {
                links.push(link);
            }
        }
        links
    }

    /// The edge at `addr`, known from now on (`Link::Start` when it was not).
    fn edge(&mut self, name: String, addr: String, now: u64) -> (Arc<str>, Link) {
        match self.edges.get_key_value(addr.as_str()) {
            Some((k, _)) => (k.clone(), Link::Keep),
            None => {
                let k: Arc<str> = addr.into();
                self.edges.insert(
                    k.clone(),
                    EdgeState {
                        up: false,
                        down_since: now,
                    },
                );
                (k.clone(), Link::Start(k, name))
            }
        }
    }

    /// Whether the link to the edge at `addr` is up now.
    pub(crate) fn link_state(&mut self, addr: &str, up: bool, now: u64) {
        if let Some(e) = self.edges.get_mut(addr)
            && e.up != up
        {
            e.up = up;
            e.down_since = now;
        }
    }

    /// The edge (address) `session`'s datagrams go to now: its edge when the link is up.
    pub(crate) fn route(&mut self, session: SessionId, now: u64) -> Option<Arc<str>> {
        let (name, seen) = self.via.get_mut(&session)?;
        *seen = now;
        self.edges
            .get(name.as_ref())
            .is_some_and(|e| e.up)
            .then(|| name.clone())
    }

    /// Forgets idle sessions and edges down too long (at most every few seconds); returns
    /// the edges forgotten (their links end).
    pub(crate) fn prune(&mut self, now: u64) -> Vec<Arc<str>> {
        if now.saturating_sub(self.last_prune) < PRUNE_EVERY_MS {
            return Vec::new();
        }
        self.last_prune = now;
        self.forget(now)
    }

    /// Forgets idle sessions and edges down too long now; returns the edges forgotten.
    fn forget(&mut self, now: u64) -> Vec<Arc<str>> {
        let gone: Vec<Arc<str>> = self
            .edges
            .iter()
            .filter(|(k, e)| {
                !e.up
                    && now.saturating_sub(e.down_since) >= EDGE_DOWN_MS
                    && !self.pinned.contains(*k)
            })
            .map(|(k, _)| k.clone())
            .collect();
        for k in &gone {
            self.edges.remove(k);
        }
        self.via.retain(|_, (name, seen)| {
            now.saturating_sub(*seen) < SESSION_IDLE_MS && self.edges.contains_key(name)
        });
        // An edge no session goes to any more.
        let idle: Vec<Arc<str>> = self
            .edges
            .keys()
            .filter(|k| !self.pinned.contains(*k) && !self.via.values().any(|(n, _)| n == *k))
            .cloned()
            .collect();
        for k in &idle {
            self.edges.remove(k);
        }
        gone.into_iter().chain(idle).collect()
    }

    /// Sessions routed to an edge.
    #[cfg(test)]
    fn sessions(&self) -> usize {
        self.via.len()
    }
}

/// What a fan-out link task needs to connect.
#[derive(Clone)]
pub(crate) struct Connector {
    pub endpoint: quinn::Endpoint,
    pub client: quinn::ClientConfig,
    pub cfg: Arc<NodeConfig>,
    pub reg: Arc<Registry>,
    /// The newest control epoch an edge announced taking the lead with
    /// ([`shared::internal::FANOUT_CLOSE_LEADS`]): the leader link registers again.
    pub leads: Arc<watch::Sender<u64>>,
}

/// One edge's link task, as the link sees it.
struct LinkHandle {
    tx: mpsc::Sender<Vec<u8>>,
    up: Arc<AtomicBool>,
    /// Ends the task's wait between two attempts ([`Link::Retry`]).
    retry: Arc<Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for LinkHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The routes and the links to the edges.
#[derive(Default)]
pub(crate) struct Fanout {
    routes: Routes,
    /// By the edge's address.
    links: HashMap<Arc<str>, LinkHandle>,
    /// `None` in tests without sockets: no link ever comes up.
    connector: Option<Connector>,
}

impl Fanout {
    /// With links made through `connector`.
    pub(crate) fn new(connector: Connector) -> Self {
        Self {
            connector: Some(connector),
            ..Self::default()
        }
    }

    /// The leader says where `session`'s datagrams go.
    pub(crate) fn set(&mut self, session: SessionId, edge: Option<FanoutEdge>, now: u64) {
        let link = self.routes.set(session, edge, now);
        self.start(link);
    }

    /// The leader names the edges linked to it ([`Msg::Edges`]): a link to each, so that
    /// the one that takes the lead can say so here at once.
    ///
    /// [`Msg::Edges`]: shared::internal::Msg::Edges
    pub(crate) fn pin(&mut self, edges: Vec<FanoutEdge>, now: u64) {
        self.link_states(now);
        for link in self.routes.pin(edges, now) {
            self.start(link);
        }
        // Edges the list left out, with no session either, go now (not at the next
        // broadcast's prune: a node with no players may not broadcast for a long time).
        for addr in self.routes.forget(now) {
            self.links.remove(&addr);
        }
    }

    fn start(&mut self, link: Link) {
        match link {
            Link::Start(addr, name) => {
                let Some(c) = &self.connector else { return };
                let (tx, rx) = mpsc::channel(LINK_QUEUE);
                let up = Arc::new(AtomicBool::new(false));
                let retry = Arc::new(Notify::new());
                let task = tokio::spawn(run(
                    c.clone(),
                    name,
                    addr.clone(),
                    up.clone(),
                    retry.clone(),
                    rx,
                ));
                self.links.insert(
                    addr,
                    LinkHandle {
                        tx,
                        up,
                        retry,
                        task,
                    },
                );
            }
            Link::Retry(addr) => {
                if let Some(h) = self.links.get(&addr) {
                    h.retry.notify_one();
                }
            }
            Link::Keep => {}
        }
    }

    /// The routes learn which links are up now.
    fn link_states(&mut self, now: u64) {
        for (addr, h) in &self.links {
            self.routes
                .link_state(addr, h.up.load(Ordering::Relaxed), now);
        }
    }

    /// Sends the datagrams of `b` whose edge is linked straight to it; the rest stay in
    /// `b` for the leader.
    pub(crate) fn send_direct(&mut self, b: &mut Broadcast, metrics: &Metrics, now: u64) {
        for addr in self.routes.prune(now) {
            self.links.remove(&addr);
        }
        if self.links.is_empty() {
            return;
        }
        self.link_states(now);
        let routes = &mut self.routes;
        for (addr, part) in b.split_off_by(|s| routes.route(s, now)) {
            let Some(h) = self.links.get(&addr) else {
                continue;
            };
            let n = part.datagrams.len() as u64;
            let mut v = Vec::new();
            let sent = encode_frame(&Envelope::new(Msg::Broadcast(part)), &mut v).is_ok()
                && h.tx.try_send(v).is_ok();
            if sent {
                Metrics::add(&metrics.fanout_direct, n);
            } else {
                Metrics::inc(&metrics.fanout_dropped);
            }
        }
    }
}

/// One edge's fan-out link: connects, proves the secret, writes the queued broadcasts;
/// reconnects with backoff (broadcasts queued meanwhile are dropped: the routes send
/// them to the leader while the link is down), at once when `retry` is notified; ends
/// when its queue closes.
async fn run(
    c: Connector,
    name: String,
    addr: Arc<str>,
    up: Arc<AtomicBool>,
    retry: Arc<Notify>,
    mut rx: mpsc::Receiver<Vec<u8>>,
) {
    let mut backoff = Duration::from_millis(250);
    let mut warned = false;
    loop {
        match tokio::time::timeout(CONNECT_TIMEOUT, connect(&c, &addr)).await {
            Ok(Ok((conn, mut send, _recv))) => {
                up.store(true, Ordering::Relaxed);
                Metrics::inc(&c.reg.metrics.fanout_links);
                backoff = Duration::from_millis(250);
                warned = false;
                tracing::info!(edge = %name, %addr, "fan-out link up: this edge's clients' broadcasts go straight to it");
                let mut out = Vec::new();
                let why = loop {
                    tokio::select! {
                        f = rx.recv() => {
                            let Some(f) = f else {
                                conn.close(0u32.into(), b"no client of this edge here any more");
                                return;
                            };
                            out.clear();
                            out.extend_from_slice(&f);
                            while out.len() < 256 * 1024 {
                                match rx.try_recv() {
                                    Ok(f) => out.extend_from_slice(&f),
                                    Err(_) => break,
                                }
                            }
                            if let Err(e) = send.write_all(&out).await {
                                break e.to_string();
                            }
                        }
                        // Its clients' positions come straight from it, as from the leader.
                        d = conn.read_datagram() => match d {
                            Ok(d) => {
                                Metrics::inc(&c.reg.metrics.fanout_inputs);
                                c.reg.client_datagram(&d);
                            }
                            Err(e) => break ended(&c, &name, &addr, &e),
                        },
                        e = conn.closed() => break ended(&c, &name, &addr, &e),
                    }
                };
                up.store(false, Ordering::Relaxed);
                tracing::warn!(edge = %name, %addr, reason = %why, "fan-out link down: its clients' broadcasts go through the leader");
            }
            Ok(Err(e)) if !warned => {
                warned = true;
                tracing::warn!(edge = %name, %addr, error = %e, "cannot link the edge for the fan-out: its clients' broadcasts go through the leader");
            }
            Err(_) if !warned => {
                warned = true;
                tracing::warn!(edge = %name, %addr, "linking the edge for the fan-out timed out");
            }
            _ => {}
        }
        let wake = tokio::time::sleep(backoff);
        tokio::pin!(wake);
        backoff = (backoff * 2).min(MAX_BACKOFF);
        loop {
            tokio::select! {
                () = &mut wake => break,
                () = retry.notified() => {
                    // The leader named the edge just now: it is up.
                    backoff = Duration::from_millis(250);
                    break;
                }
                f = rx.recv() => if f.is_none() { return },
            }
        }
    }
}

/// Why a fan-out link ended; an edge that closed it because it now leads is told to the
/// leader link ([`Connector::leads`]).
fn ended(c: &Connector, name: &str, addr: &str, e: &quinn::ConnectionError) -> String {
    if let Some(epoch) = took_lead(e) {
        tracing::info!(edge = %name, %addr, epoch, "the edge took the lead: registering with it now");
        Metrics::inc(&c.reg.metrics.lead_announced);
        c.leads.send_if_modified(|l| {
            let newer = epoch > *l;
            *l = (*l).max(epoch);
            newer
        });
    }
    e.to_string()
}

/// The control epoch of an edge that closed its fan-out link because it now leads.
fn took_lead(e: &quinn::ConnectionError) -> Option<u64> {
    match e {
        quinn::ConnectionError::ApplicationClosed(c)
            if c.error_code == quinn::VarInt::from_u32(shared::internal::FANOUT_CLOSE_LEADS) =>
        {
            std::str::from_utf8(&c.reason).ok()?.parse().ok()
        }
        _ => None,
    }
}

/// Connects to the edge at `addr` and proves the cluster secret (registering nothing).
async fn connect(
    c: &Connector,
    addr: &str,
) -> Result<(quinn::Connection, quinn::SendStream, quinn::RecvStream), String> {
    let at = tokio::net::lookup_host(addr)
        .await
        .map_err(|e| format!("{addr} does not resolve: {e}"))?
        .next()
        .ok_or_else(|| format!("{addr} does not resolve"))?;
    let conn = c
        .endpoint
        .connect_with(c.client.clone(), at, &c.cfg.gateway_server_name)
        .map_err(|e| e.to_string())?
        .await
        .map_err(|e| e.to_string())?;
    let (mut send, mut recv) = conn.open_bi().await.map_err(|e| e.to_string())?;
    super::authenticate(&c.cfg, &c.reg, &conn, &mut send, &mut recv, 0, true)
        .await
        .map_err(|e| e.to_string())?;
    Ok((conn, send, recv))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge(name: &str, addr: &str) -> Option<FanoutEdge> {
        Some(FanoutEdge {
            name: name.into(),
            addr: addr.into(),
        })
    }

    #[test]
    fn only_the_lead_close_code_with_an_epoch_announces_a_leader() {
        let closed = |code: u32, reason: &'static [u8]| {
            quinn::ConnectionError::ApplicationClosed(quinn::ApplicationClose {
                error_code: quinn::VarInt::from_u32(code),
                reason: bytes::Bytes::from_static(reason),
            })
        };
        let leads = shared::internal::FANOUT_CLOSE_LEADS;
        assert_eq!(
            took_lead(&closed(leads, b"1764500000123")),
            Some(1_764_500_000_123)
        );
        assert_eq!(
            took_lead(&closed(0, b"1764500000123")),
            None,
            "an edge that stops"
        );
        assert_eq!(took_lead(&closed(leads, b"soon")), None, "no epoch");
        assert_eq!(took_lead(&closed(leads, b"")), None);
        assert_eq!(took_lead(&quinn::ConnectionError::TimedOut), None);
    }

    #[test]
    fn a_session_goes_to_its_edge_only_while_the_link_is_up() {
        let mut r = Routes::default();
        assert_eq!(
            r.set(1, edge("gw-b", "10.0.0.2:25000"), 0),
            Link::Start("10.0.0.2:25000".into(), "gw-b".into())
        );
        // A second session of the same edge needs no second link.
        assert_eq!(r.set(2, edge("gw-b", "10.0.0.2:25000"), 0), Link::Keep);
        assert_eq!(r.route(1, 10), None, "not linked yet: through the leader");
        let b = Some(Arc::<str>::from("10.0.0.2:25000"));
        r.link_state("10.0.0.2:25000", true, 20);
        assert_eq!(r.route(1, 30), b);
        assert_eq!(
            r.route(3, 30),
            None,
            "an unknown session: through the leader"
        );
        r.link_state("10.0.0.2:25000", false, 40);
        assert_eq!(r.route(2, 50), None);
        // The leader takes the session back.
        r.link_state("10.0.0.2:25000", true, 60);
        assert_eq!(r.set(1, None, 70), Link::Keep);
        assert_eq!(r.route(1, 80), None);
        assert_eq!(r.route(2, 80), b);
        // Another edge of the same name (names need not be unique): its own link.
        assert_eq!(
            r.set(4, edge("gw-b", "10.0.0.9:25000"), 90),
            Link::Start("10.0.0.9:25000".into(), "gw-b".into())
        );
        assert_eq!(r.route(4, 95), None);
        assert_eq!(
            r.route(2, 95),
            b,
            "the first edge's sessions stay on its link"
        );
    }

    #[test]
    fn idle_sessions_and_edges_down_too_long_are_forgotten() {
        let mut r = Routes::default();
        r.set(1, edge("gw-b", "b:1"), 0);
        r.set(2, edge("gw-c", "c:1"), 0);
        r.link_state("b:1", true, 0);
        r.link_state("c:1", true, 0);
        assert!(r.prune(1_000).is_empty(), "not due yet");
        // gw-c goes down; session 1 keeps being routed.
        r.link_state("c:1", false, 5_000);
        let mut gone = Vec::new();
        for t in (10_000..=40_000).step_by(10_000) {
            r.route(1, t);
            r.route(2, t);
            gone.extend(r.prune(t));
        }
        assert_eq!(gone, vec![Arc::<str>::from("c:1")]);
        assert_eq!(r.sessions(), 1);
        assert_eq!(r.route(1, 45_000).as_deref(), Some("b:1"));
        // Session 1's player left: forgotten after the idle time, and its edge with it.
        assert_eq!(
            r.prune(45_000 + SESSION_IDLE_MS),
            vec![Arc::<str>::from("b:1")]
        );
        assert_eq!(r.sessions(), 0);
    }

    #[test]
    fn the_edges_the_leader_names_are_linked_without_sessions_until_left_out() {
        let named = |v: &[(&str, &str)]| -> Vec<FanoutEdge> {
            v.iter().filter_map(|(n, a)| edge(n, a)).collect()
        };
        let mut r = Routes::default();
        // A session's edge is known already: no second link for it.
        assert_eq!(
            r.set(1, edge("gw-b", "b:1"), 0),
            Link::Start("b:1".into(), "gw-b".into())
        );
        assert_eq!(
            r.pin(named(&[("gw-b", "b:1"), ("gw-c", "c:1")]), 0),
            vec![
                Link::Retry("b:1".into()),
                Link::Start("c:1".into(), "gw-c".into())
            ],
            "a link to the edge no player of this node plays through (and the other, not \
             up yet, tried again now)"
        );
        r.link_state("b:1", true, 1);
        r.link_state("c:1", true, 1);
        assert_eq!(r.pin(named(&[("gw-b", "b:1"), ("gw-c", "c:1")]), 1), vec![]);
        // Named, it stays however long it is down and whether or not a session goes to it.
        r.link_state("c:1", true, 10);
        r.link_state("c:1", false, 20);
        assert_eq!(r.set(1, None, 30), Link::Keep);
        assert!(r.prune(20 + EDGE_DOWN_MS + SESSION_IDLE_MS).is_empty());
        assert_eq!(r.route(1, 40), None);
        // A list without gw-c: it goes (no session of its own); gw-b stays named.
        r.pin(named(&[("gw-b", "b:1")]), 50);
        assert_eq!(r.forget(60), vec![Arc::<str>::from("c:1")]);
        assert!(r.forget(70).is_empty(), "gw-b is still named");
        // An empty list (the leader has no edges): every edge without a session goes.
        r.pin(Vec::new(), 80);
        assert_eq!(r.forget(90), vec![Arc::<str>::from("b:1")]);
    }

    /// An edge restarted at the address it had (or one that led and is an edge again)
    /// is named by the leader while its old link still waits out a backoff of up to
    /// 10 s: it is tried again at once, or the node would not hear it take the lead
    /// should the leader die before the backoff ends (session 47's 2.4 s placement).
    #[test]
    fn a_named_edge_whose_link_is_down_is_tried_again_at_once() {
        let mut r = Routes::default();
        let b = vec![FanoutEdge {
            name: "gw-b".into(),
            addr: "b:1".into(),
        }];
        assert_eq!(
            r.pin(b.clone(), 0),
            vec![Link::Start("b:1".into(), "gw-b".into())]
        );
        r.link_state("b:1", true, 10);
        assert_eq!(r.pin(b.clone(), 20), vec![], "up: nothing to do");
        // It goes (killed, or it took the lead and closed the link).
        r.link_state("b:1", false, 30);
        assert_eq!(r.pin(b.clone(), 40), vec![Link::Retry("b:1".into())]);
        assert_eq!(r.pin(Vec::new(), 50), vec![], "not named: no retry");
    }

    #[test]
    fn a_broadcast_without_links_stays_whole_for_the_leader() {
        let mut f = Fanout::default();
        f.set(1, edge("gw-b", "b:1"), 0);
        let metrics = Metrics::default();
        let mut b = Broadcast {
            frames: bytes::Bytes::from_static(b"xxxx"),
            segments: vec![(0, 4)],
            datagrams: vec![shared::internal::fanout::FanoutDatagram {
                session: 1,
                first: 0,
                end: 1,
            }],
        };
        f.send_direct(&mut b, &metrics, 10);
        assert_eq!(b.datagrams.len(), 1);
        assert_eq!(Metrics::get(&metrics.fanout_direct), 0);
    }
}
