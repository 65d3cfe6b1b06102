//! A zone node against an in-test gateway speaking `shared::internal` over real QUIC on
//! loopback: register, assign, attach, move, broadcast, node-local SetArea, detach, drain,
//! supervision, and refusal of unauthenticated or malformed internal messages.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use shared::internal::codec::{FrameDecoder, encode_frame};
use shared::internal::handshake::{GatewayHandshake, Step};
use shared::internal::{
    ALPN, ActorStateDto, ArrivalDto, EXPORTER_LABEL, EXPORTER_LEN, Envelope, ErrorCode,
    InstanceKey, Msg, PROTOCOL_VERSION, RefuseReason, SnapshotReasonDto, TransferId, auth,
    datagram,
};
use shared::proto::StandardUpdateC2S;
use zone_node::actor::Metrics;
use zone_node::config::NodeConfig;
use zone_node::link::LinkExit;
use zone_node::node::{self, NodeHandle};

const SECRET: &str = "test-cluster-secret-0123456789abcdef";
const WAIT: Duration = Duration::from_secs(10);

struct Gateway {
    endpoint: quinn::Endpoint,
    secret: Vec<u8>,
}

struct GwConn {
    conn: quinn::Connection,
    send: quinn::SendStream,
    recv: quinn::RecvStream,
    dec: FrameDecoder,
    register: Msg,
}

fn server_config() -> quinn::ServerConfig {
    let ck = rcgen::generate_simple_self_signed(vec!["gateway".into()]).unwrap();
    let cert = rustls::pki_types::CertificateDer::from(ck.cert.der().to_vec());
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(rustls::pki_types::PrivatePkcs8KeyDer::from(
        ck.signing_key.serialize_der(),
    ));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    let quic = quinn::crypto::rustls::QuicServerConfig::try_from(tls).unwrap();
    quinn::ServerConfig::with_crypto(Arc::new(quic))
}

impl Gateway {
    fn new(secret: &str) -> Self {
        let endpoint =
            quinn::Endpoint::server(server_config(), SocketAddr::from(([127, 0, 0, 1], 0)))
                .unwrap();
        Self {
            endpoint,
            secret: secret.as_bytes().to_vec(),
        }
    }

    fn addr(&self) -> SocketAddr {
        self.endpoint.local_addr().unwrap()
    }

    /// Accept one node: the server side of the handshake, then `RegisterAck`.
    async fn accept(&self) -> GwConn {
        tokio::time::timeout(WAIT, self.accept_inner())
            .await
            .expect("a node connects and registers")
    }

    async fn accept_inner(&self) -> GwConn {
        let conn = self.endpoint.accept().await.unwrap().await.unwrap();
        let mut exporter = [0u8; EXPORTER_LEN];
        conn.export_keying_material(&mut exporter, EXPORTER_LABEL, b"")
            .unwrap();
        let (send, recv) = conn.accept_bi().await.unwrap();
        let mut c = GwConn {
            conn,
            send,
            recv,
            dec: FrameDecoder::new(),
            register: Msg::Drain,
        };
        // The gateway side of the handshake, from `shared::internal::handshake`.
        let mut hs = GatewayHandshake::new(
            &self.secret,
            [9u8; 32],
            [8u8; 32],
            &exporter,
            "test-gw",
            100,
        );
        loop {
            let msg = c.next().await;
            match hs.on_envelope(Ok(Envelope::new(msg))) {
                Step::Continue => {}
                Step::Send(m) => c.send(m).await,
                Step::Refuse(m) => panic!("refused the node: {m:?}"),
                Step::Registered {
                    node_id,
                    advertised_addr,
                    capacity,
                    running,
                    reply,
                } => {
                    c.register = Msg::Register {
                        node_id,
                        advertised_addr,
                        capacity,
                        protocol_version: PROTOCOL_VERSION,
                        running,
                    };
                    c.send(reply).await;
                    break;
                }
            }
        }
        c
    }
}

impl GwConn {
    async fn send(&mut self, msg: Msg) {
        let mut v = Vec::new();
        encode_frame(&Envelope::new(msg), &mut v).unwrap();
        self.send.write_all(&v).await.unwrap();
    }

    /// The next message, heartbeats included.
    async fn next(&mut self) -> Msg {
        let mut buf = vec![0u8; 65536];
        loop {
            if let Some(e) = self.dec.next_envelope().unwrap() {
                return e.msg;
            }
            let n = tokio::time::timeout(WAIT, self.recv.read(&mut buf))
                .await
                .expect("a message in time")
                .unwrap()
                .expect("stream open");
            self.dec.push(&buf[..n]);
        }
    }

    /// Skip messages until `f` picks one; returns it with everything skipped.
    async fn until<T>(&mut self, mut f: impl FnMut(&Msg) -> Option<T>) -> (T, Vec<Msg>) {
        let mut skipped = Vec::new();
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out; saw {:?}",
                skipped.iter().map(Msg::name).collect::<Vec<_>>()
            );
            let m = self.next().await;
            if let Some(t) = f(&m) {
                return (t, skipped);
            }
            skipped.push(m);
        }
    }

    /// The next broadcast datagram for `session`, gathered from a `Broadcast` as the
    /// gateway does.
    async fn datagram_for(&mut self, session: u64) -> Bytes {
        let mut buf = bytes::BytesMut::new();
        let (d, _) = self
            .until(|m| match m {
                Msg::Broadcast(b) => b
                    .datagrams
                    .iter()
                    .find(|d| d.session == session)
                    .map(|d| b.gather(d, 1200, &mut buf).unwrap()),
                _ => None,
            })
            .await;
        d
    }
}

fn node_config(gw: SocketAddr) -> NodeConfig {
    NodeConfig {
        gateway_addr: gw.to_string(),
        node_id: "node-test".into(),
        bind_addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        arbiters: 2,
        tick_ms: 10,
        broadcast_ms: 40,
        cluster_secret: SECRET.into(),
        drain_timeout_ms: 5_000,
        heartbeat_ms: 100,
        reconnect_min_ms: 20,
        reconnect_max_ms: 200,
        ..NodeConfig::default()
    }
}

fn start_node(gw: SocketAddr) -> NodeHandle {
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_env_filter(tracing_subscriber::EnvFilter::new("info"))
        .try_init();
    let cfg = node_config(gw);
    cfg.validate().unwrap();
    let world = node::load_world(&cfg).unwrap();
    node::start(cfg, world)
}

/// Wait (up to 10 s) until `f` holds.
async fn eventually(mut f: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !f() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition not met in time"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The id a `Snapshot` or a `SnapshotGroup` is acknowledged by.
fn saved_id(m: &Msg) -> Option<u64> {
    match m {
        Msg::Snapshot { snapshot_id, .. } => Some(*snapshot_id),
        Msg::SnapshotGroup(g) => Some(g.snapshot_id),
        _ => None,
    }
}

fn key(area: &str) -> InstanceKey {
    InstanceKey {
        area: area.into(),
        instance: 0,
    }
}

fn character(name: &str) -> Box<ActorStateDto> {
    Box::new(ActorStateDto {
        template: 0,
        name: name.into(),
        area: "Meadow".into(),
        ..ActorStateDto::default()
    })
}

fn update(x: f32, z: f32) -> Bytes {
    let u = StandardUpdateC2S {
        dest_x: x,
        dest_z: z,
        y: 1.0,
        x,
        z,
        is_running: 0,
        walking_backward: 0,
    };
    let mut frames = Vec::new();
    u.write_frame(&mut frames);
    frames.into()
}

async fn assign(gw: &mut GwConn, area: &str, generation: u64) {
    assign_only(gw, area, generation).await;
    gw.until(|m| match m {
        Msg::InstanceReady { key: k, .. } if *k == key(area) => Some(()),
        Msg::Error { reason, .. } => panic!("assign failed: {reason}"),
        _ => None,
    })
    .await;
}

/// `AssignInstance` without waiting for the answer.
async fn assign_only(gw: &mut GwConn, area: &str, generation: u64) {
    gw.send(Msg::AssignInstance {
        key: key(area),
        generation,
        ground: Vec::new(),
        clock_epoch_ms: 0,
    })
    .await;
}

/// `AttachPlayer` into Meadow at `generation`, then wait until the node hosts one player.
async fn attach_at(gw: &mut GwConn, session: u64, name: &str, generation: u64) {
    gw.send(Msg::AttachPlayer {
        session,
        key: key("Meadow"),
        generation,
        rid: u16::try_from(session).unwrap(),
        is_dm: false,
        state: character(name),
        arrival: ArrivalDto::PortalNamed("Begin".into()),
    })
    .await;
    gw.until(|m| match m {
        Msg::Heartbeat { players: 1, .. } => Some(()),
        Msg::Error { reason, .. } => panic!("{reason}"),
        _ => None,
    })
    .await;
}

async fn attach(gw: &mut GwConn, session: u64, name: &str) {
    gw.send(Msg::AttachPlayer {
        session,
        key: key("Meadow"),
        generation: 1,
        rid: u16::try_from(session).unwrap(),
        is_dm: false,
        state: character(name),
        arrival: ArrivalDto::PortalNamed("Begin".into()),
    })
    .await;
}

#[actix_rt::test]
async fn node_registers_hosts_moves_transfers_and_drains() {
    let gateway = Gateway::new(SECRET);
    let node = start_node(gateway.addr());
    let mut gw = gateway.accept().await;
    let Msg::Register {
        node_id, running, ..
    } = &gw.register
    else {
        unreachable!()
    };
    assert_eq!(node_id, "node-test");
    assert!(running.is_empty());

    // Heartbeats flow.
    gw.until(|m| matches!(m, Msg::Heartbeat { .. }).then_some(()))
        .await;

    // Two instances, on the node's two arbiters.
    assign(&mut gw, "Meadow", 1).await;
    assign(&mut gw, "Darkwood", 1).await;
    assert_eq!(node.registry.instance_count(), 2);

    // Attach a player: the zone greets it with reliable frames.
    attach(&mut gw, 7, "Alice").await;
    let (frames, _) = gw
        .until(|m| match m {
            Msg::ToClient { session: 7, frames } => Some(frames.clone()),
            Msg::Error { reason, .. } => panic!("attach failed: {reason}"),
            _ => None,
        })
        .await;
    assert!(frames.len() >= 3, "framed packets");

    // Move with a P_StandardUpdate datagram; the broadcast comes back as a datagram.
    gw.conn
        .send_datagram(datagram::encode(7, &update(2.0, 1.0)))
        .unwrap();
    let back = gw.datagram_for(7).await;
    let parsed: Vec<_> = shared::frame::split_datagram(&back, Some(14))
        .unwrap()
        .collect();
    assert!(!parsed.is_empty(), "at least the player's own update");

    // Node-local SetArea: Bob's first update lands on the "To Darkwood" portal.
    attach(&mut gw, 8, "Bob").await;
    gw.until(|m| matches!(m, Msg::ToClient { session: 8, .. }).then_some(()))
        .await;
    gw.conn
        .send_datagram(datagram::encode(8, &update(120.0, 0.0)))
        .unwrap();
    let (moved, _) = gw
        .until(|m| match m {
            Msg::PlayerMoved { session: 8, key } => Some(key.clone()),
            _ => None,
        })
        .await;
    assert_eq!(moved, key("Darkwood"));
    assert_eq!(node.registry.session_instance(8), Some(key("Darkwood")));
    assert_eq!(Metrics::get(&node.registry.metrics.local_transfers), 1);
    // The destination persists Bob with his new area once the handoff committed.
    let (snap, _) = gw
        .until(|m| match m {
            Msg::Snapshot {
                snapshot_id,
                session: 8,
                reason: SnapshotReasonDto::Transfer,
                state,
            } => Some((*snapshot_id, state.area.clone())),
            _ => None,
        })
        .await;
    assert_eq!(snap.1, "Darkwood");
    gw.send(Msg::SnapshotAck {
        snapshot_id: snap.0,
    })
    .await;
    // Bob is hosted exactly once: in Darkwood, not in Meadow.
    eventually(|| {
        let players = |a| node.registry.instance_stats(&key(a)).map(|s| s.players);
        (players("Meadow"), players("Darkwood")) == (Some(1), Some(1))
    })
    .await;

    // Supervision: a panic in Meadow is contained, Alice is restored, Darkwood keeps going.
    let before = node
        .registry
        .instance_stats(&key("Darkwood"))
        .unwrap()
        .ticks;
    assert!(node.registry.inject_panic(&key("Meadow")));
    // (The panic hook may take a while to print a backtrace.)
    eventually(|| {
        Metrics::get(&node.registry.metrics.panics) == 1
            && node
                .registry
                .instance_stats(&key("Meadow"))
                .is_some_and(|s| s.panics == 1 && s.players == 1)
    })
    .await;
    let meadow = node.registry.instance_stats(&key("Meadow")).unwrap();
    assert_eq!(meadow.panics, 1);
    assert_eq!(meadow.players, 1, "Alice rebuilt from her snapshot");
    eventually(|| {
        node.registry
            .instance_stats(&key("Darkwood"))
            .is_some_and(|s| s.ticks > before && s.panics == 0)
    })
    .await;

    // Detach Alice: a Logout snapshot, then PlayerDetached.
    gw.send(Msg::DetachPlayer { session: 7 }).await;
    let (snap, _) = gw
        .until(|m| match m {
            Msg::Snapshot {
                snapshot_id,
                session: 7,
                reason,
                state,
            } => Some((*snapshot_id, *reason, state.name.clone())),
            _ => None,
        })
        .await;
    assert_eq!(snap.1, SnapshotReasonDto::Logout);
    assert_eq!(snap.2, "Alice");
    gw.send(Msg::SnapshotAck {
        snapshot_id: snap.0,
    })
    .await;
    gw.until(|m| matches!(m, Msg::PlayerDetached { session: 7, .. }).then_some(()))
        .await;

    // Drain: Bob is saved (acknowledged) with each instance's ground in one group per
    // instance, instances stop, the node deregisters.
    node.drain();
    let mut saved = Vec::new();
    let mut groups = Vec::new();
    let mut stopped = 0;
    loop {
        match gw.next().await {
            Msg::Snapshot {
                snapshot_id,
                session,
                reason,
                ..
            } => {
                saved.push((session, reason));
                gw.send(Msg::SnapshotAck { snapshot_id }).await;
            }
            Msg::SnapshotGroup(g) => {
                saved.extend(g.entries.iter().map(|e| (e.session, e.reason)));
                groups.push((g.key.clone(), g.ground.clone()));
                gw.send(Msg::SnapshotAck {
                    snapshot_id: g.snapshot_id,
                })
                .await;
            }
            Msg::InstanceStopped { .. } => stopped += 1,
            Msg::Deregister => {
                gw.conn.close(0u32.into(), b"bye");
                break;
            }
            _ => {}
        }
    }
    assert_eq!(saved, vec![(8, SnapshotReasonDto::Shutdown)]);
    // Bob's instance: one group, with its (empty) ground; the other instance had neither
    // a player nor a ground item, so nothing.
    assert_eq!(groups.len(), 1, "{groups:?}");
    assert_eq!(groups[0].1, Some(Vec::new()));
    assert_eq!(stopped, 2);
    assert_eq!(node.join().await.unwrap(), LinkExit::Drained);
}

#[actix_rt::test]
async fn an_instance_is_assigned_with_its_saved_ground_and_saves_it_again_when_stopped() {
    use shared::internal::{GroundItemDto, InvSlotDto};
    let gateway = Gateway::new(SECRET);
    let node = start_node(gateway.addr());
    let mut gw = gateway.accept().await;
    let item = |id: u16, remaining_ms: u64| GroundItemDto {
        item: InvSlotDto {
            item: id,
            attributes: vec![0; 40],
            health: 100,
            amount: 2,
        },
        x: 3.0,
        y: 0.0,
        z: 4.0,
        remaining_ms,
    };
    // What the gateway stored: a Short Sword, and an item this world does not know.
    gw.send(Msg::AssignInstance {
        key: key("Meadow"),
        generation: 5,
        ground: vec![item(0, 120_000), item(9_999, 120_000)],
        clock_epoch_ms: 1_700_000_000_000,
    })
    .await;
    gw.until(|m| matches!(m, Msg::InstanceReady { .. }).then_some(()))
        .await;
    gw.send(Msg::StopInstance {
        key: key("Meadow"),
        generation: 5,
    })
    .await;
    let (g, _) = gw
        .until(|m| match m {
            Msg::SnapshotGroup(g) => Some(g.clone()),
            _ => None,
        })
        .await;
    assert_eq!((g.key.clone(), g.generation), (key("Meadow"), 5));
    assert!(g.entries.is_empty());
    let ground = g.ground.expect("a stop saves the ground");
    assert_eq!(ground.len(), 1, "{ground:?}");
    assert_eq!(ground[0].item, item(0, 0).item);
    assert!(ground[0].remaining_ms <= 120_000 && ground[0].remaining_ms > 100_000);
    gw.send(Msg::SnapshotAck {
        snapshot_id: g.snapshot_id,
    })
    .await;
    gw.until(|m| matches!(m, Msg::InstanceStopped { .. }).then_some(()))
        .await;
    node.drain();
    gw.until(|m| matches!(m, Msg::Deregister).then_some(()))
        .await;
    gw.conn.close(0u32.into(), b"bye");
    assert_eq!(node.join().await.unwrap(), LinkExit::Drained);
}

/// Simulator seed 89,504: a newer generation assigned while the old copy of the
/// instance was being stopped was adopted by that copy, which then stopped under the new
/// number (and its stale players' leaving was read as the new instance's). Now the stop
/// finishes under its own number and the new generation starts after it.
#[actix_rt::test]
async fn a_generation_assigned_while_the_instance_stops_starts_after_the_stop() {
    let gateway = Gateway::new(SECRET);
    let node = start_node(gateway.addr());
    let mut gw = gateway.accept().await;
    assign(&mut gw, "Meadow", 5).await;
    attach_at(&mut gw, 7, "Stale", 5).await;
    gw.send(Msg::StopInstance {
        key: key("Meadow"),
        generation: 5,
    })
    .await;
    assign_only(&mut gw, "Meadow", 9).await;
    let (group, mut seen) = gw
        .until(|m| match m {
            Msg::SnapshotGroup(g) => Some(g.snapshot_id),
            _ => None,
        })
        .await;
    gw.send(Msg::SnapshotAck { snapshot_id: group }).await;
    let (stopped, more) = gw
        .until(|m| match m {
            Msg::InstanceStopped { generation, .. } => Some(*generation),
            _ => None,
        })
        .await;
    seen.extend(more);
    assert_eq!(stopped, 5, "the old copy stops under its own number");
    assert!(
        !seen
            .iter()
            .any(|m| matches!(m, Msg::InstanceReady { generation: 9, .. })),
        "{seen:?}"
    );
    assert!(
        seen.iter().any(|m| matches!(
            m,
            Msg::PlayerDetached { session: 7, key: Some(k) } if *k == key("Meadow")
        )),
        "{seen:?}"
    );
    gw.until(|m| matches!(m, Msg::InstanceReady { generation: 9, .. }).then_some(()))
        .await;
    // The new instance takes players at its own number.
    attach_at(&mut gw, 8, "Fresh", 9).await;
    node.drain();
    // The drain saves Fresh: acknowledged, so it ends clean.
    loop {
        match gw.next().await {
            Msg::Snapshot { snapshot_id, .. } => gw.send(Msg::SnapshotAck { snapshot_id }).await,
            Msg::SnapshotGroup(g) => {
                gw.send(Msg::SnapshotAck {
                    snapshot_id: g.snapshot_id,
                })
                .await;
            }
            Msg::Deregister => break,
            _ => {}
        }
    }
    gw.conn.close(0u32.into(), b"bye");
    assert_eq!(node.join().await.unwrap(), LinkExit::Drained);
}

#[actix_rt::test]
async fn malformed_and_unexpected_messages_are_refused_and_counted() {
    let gateway = Gateway::new(SECRET);
    let node = start_node(gateway.addr());
    let mut gw = gateway.accept().await;
    assign(&mut gw, "Meadow", 1).await;

    // Garbage inside a well-formed frame: refused with an error, counted, link stays up.
    let mut frame = 5u32.to_le_bytes().to_vec();
    frame.extend_from_slice(&[0xc1, 0xff, 0x00, 0x13, 0x37]);
    gw.send.write_all(&frame).await.unwrap();
    gw.until(|m| matches!(m, Msg::Error { .. }).then_some(()))
        .await;
    // A gateway-only message: refused too.
    gw.send(Msg::Heartbeat {
        loads: Vec::new(),
        instances: 0,
        players: 0,
        overruns: 0,
    })
    .await;
    gw.until(|m| matches!(m, Msg::Error { .. }).then_some(()))
        .await;
    assert_eq!(Metrics::get(&node.registry.metrics.refused_msgs), 2);
    // Garbage datagrams are dropped and counted.
    gw.conn
        .send_datagram(Bytes::from_static(&[1, 2, 3]))
        .unwrap();
    gw.conn
        .send_datagram(datagram::encode(99, &[9, 9, 9]))
        .unwrap();
    // Still serving.
    attach(&mut gw, 5, "Carol").await;
    gw.until(|m| matches!(m, Msg::ToClient { session: 5, .. }).then_some(()))
        .await;
    assert!(Metrics::get(&node.registry.metrics.bad_client_input) >= 1);
    // Fencing: a stale StopInstance and an attach naming another generation are refused.
    gw.send(Msg::StopInstance {
        key: key("Meadow"),
        generation: 0,
    })
    .await;
    let (code, _) = gw
        .until(|m| match m {
            Msg::Error { code, .. } => Some(*code),
            _ => None,
        })
        .await;
    assert_eq!(code, ErrorCode::StaleGeneration);
    gw.send(Msg::AttachPlayer {
        session: 6,
        key: key("Meadow"),
        generation: 2,
        rid: 6,
        is_dm: false,
        state: character("Dave"),
        arrival: ArrivalDto::Saved,
    })
    .await;
    let (code, _) = gw
        .until(|m| match m {
            Msg::Error { code, .. } => Some(*code),
            _ => None,
        })
        .await;
    assert_eq!(code, ErrorCode::StaleGeneration);
    assert_eq!(node.registry.instance_count(), 1);
    // StopInstance with the right generation saves Carol and stops the instance.
    gw.send(Msg::StopInstance {
        key: key("Meadow"),
        generation: 1,
    })
    .await;
    let (snap, _) = gw
        .until(|m| match m {
            Msg::SnapshotGroup(g) => g
                .entries
                .iter()
                .find(|e| e.session == 5)
                .map(|e| (g.snapshot_id, e.reason)),
            _ => None,
        })
        .await;
    assert_eq!(snap.1, SnapshotReasonDto::Shutdown);
    gw.send(Msg::SnapshotAck {
        snapshot_id: snap.0,
    })
    .await;
    gw.until(|m| matches!(m, Msg::InstanceStopped { .. }).then_some(()))
        .await;
    eventually(|| node.registry.instance_count() == 0).await;
    node.drain();
    loop {
        match gw.next().await {
            Msg::Deregister => {
                gw.conn.close(0u32.into(), b"bye");
                break;
            }
            m => {
                if let Some(snapshot_id) = saved_id(&m) {
                    gw.send(Msg::SnapshotAck { snapshot_id }).await;
                }
            }
        }
    }
    assert_eq!(node.join().await.unwrap(), LinkExit::Drained);
}

#[actix_rt::test]
async fn a_gateway_without_the_secret_is_refused_and_the_node_reconnects() {
    // An impostor gateway: its proof does not verify, the node refuses it.
    let impostor = Gateway::new("not-the-cluster-secret!!");
    let node = start_node(impostor.addr());
    let conn = impostor.endpoint.accept().await.unwrap().await.unwrap();
    let (mut send, mut recv) = conn.accept_bi().await.unwrap();
    let mut dec = FrameDecoder::new();
    let mut buf = vec![0u8; 4096];
    let mut next = async |dec: &mut FrameDecoder, recv: &mut quinn::RecvStream| loop {
        if let Some(e) = dec.next_envelope().unwrap() {
            break e.msg;
        }
        let n = recv.read(&mut buf).await.unwrap().unwrap();
        dec.push(&buf[..n]);
    };
    let put = async |send: &mut quinn::SendStream, msg: Msg| {
        let mut v = Vec::new();
        encode_frame(&Envelope::new(msg), &mut v).unwrap();
        send.write_all(&v).await.unwrap();
    };
    let Msg::Hello { client_nonce, .. } = next(&mut dec, &mut recv).await else {
        panic!()
    };
    let mut exporter = [0u8; EXPORTER_LEN];
    conn.export_keying_material(&mut exporter, EXPORTER_LABEL, b"")
        .unwrap();
    let proof = auth::gateway_proof(
        b"not-the-cluster-secret!!",
        &client_nonce,
        &[1; 32],
        &exporter,
    );
    let commitment = auth::commitment(&proof, &[3; 32]);
    put(
        &mut send,
        Msg::Challenge {
            server_nonce: [1; 32],
            commitment,
        },
    )
    .await;
    // The node proves itself to the committed gateway, which then opens a commitment to
    // a proof made with the wrong secret.
    let auth_msg = next(&mut dec, &mut recv).await;
    assert!(matches!(auth_msg, Msg::Auth { .. }), "{auth_msg:?}");
    put(
        &mut send,
        Msg::Proven {
            proof,
            blind: [3; 32],
        },
    )
    .await;
    let refused = next(&mut dec, &mut recv).await;
    assert_eq!(
        refused,
        Msg::Refused {
            reason: RefuseReason::BadAuth
        }
    );
    assert_eq!(Metrics::get(&node.registry.metrics.refused_msgs), 1);
    // The node retries with backoff and registers with the real gateway... here the same
    // endpoint, now answering correctly.
    let honest = Gateway {
        endpoint: impostor.endpoint.clone(),
        secret: SECRET.as_bytes().to_vec(),
    };
    let mut gw = honest.accept().await;
    assign(&mut gw, "Meadow", 3).await;
    // Drop the connection: the node reconnects and reports what it still runs.
    gw.conn.close(0u32.into(), b"gateway restart");
    let gw2 = honest.accept().await;
    let Msg::Register { running, .. } = &gw2.register else {
        unreachable!()
    };
    assert_eq!(running.len(), 1);
    assert_eq!(running[0].key, key("Meadow"));
    assert_eq!(running[0].generation, 3);
    let mut gw2 = gw2;
    node.drain();
    gw2.until(|m| matches!(m, Msg::Deregister).then_some(()))
        .await;
    gw2.conn.close(0u32.into(), b"bye");
    assert_eq!(node.join().await.unwrap(), LinkExit::Drained);
}

#[actix_rt::test]
async fn a_gateway_of_another_protocol_version_is_refused_with_a_clear_reason() {
    let gateway = Gateway::new(SECRET);
    let node = start_node(gateway.addr());
    let conn = gateway.endpoint.accept().await.unwrap().await.unwrap();
    let (mut send, mut recv) = conn.accept_bi().await.unwrap();
    let mut dec = FrameDecoder::new();
    let mut buf = vec![0u8; 4096];
    let mut next = async |dec: &mut FrameDecoder, recv: &mut quinn::RecvStream| loop {
        if let Some(e) = dec.next_envelope().unwrap() {
            break e.msg;
        }
        let n = recv.read(&mut buf).await.unwrap().unwrap();
        dec.push(&buf[..n]);
    };
    assert!(matches!(next(&mut dec, &mut recv).await, Msg::Hello { .. }));
    let mut env = Envelope::new(Msg::Challenge {
        server_nonce: [0; 32],
        commitment: [0; 32],
    });
    env.version = PROTOCOL_VERSION + 1;
    let mut v = Vec::new();
    encode_frame(&env, &mut v).unwrap();
    send.write_all(&v).await.unwrap();
    assert_eq!(
        next(&mut dec, &mut recv).await,
        Msg::Refused {
            reason: RefuseReason::VersionMismatch {
                ours: PROTOCOL_VERSION,
                theirs: PROTOCOL_VERSION + 1
            }
        }
    );
    // The node keeps trying (a gateway may be upgraded) and drains cleanly meanwhile.
    node.drain();
    assert!(matches!(
        tokio::time::timeout(WAIT, node.join()).await.unwrap(),
        Ok(LinkExit::Drained)
    ));
}

/// An id another node's zone minted.
fn from_another_node(serial: u32) -> TransferId {
    TransferId {
        block: 42,
        minter: 3,
        serial,
    }
}

#[actix_rt::test]
async fn transfers_to_and_from_other_nodes_go_through_the_gateway() {
    let gateway = Gateway::new(SECRET);
    let node = start_node(gateway.addr());
    let mut gw = gateway.accept().await;
    // This registration's id block: the zones created from now on mint in it.
    gw.send(Msg::TransferIds { block: 5_000 }).await;
    assign(&mut gw, "Meadow", 1).await;

    // In: another node sends Erin into Meadow; the node acknowledges under the same id.
    gw.send(Msg::Transfer(Box::new(shared::internal::TransferDto {
        transfer_id: from_another_node(777),
        generation: 1,
        session: Some(11),
        is_dm: false,
        area: "Meadow".into(),
        instance: 0,
        arrival: ArrivalDto::PortalNamed("Begin".into()),
        state: ActorStateDto {
            rid: 11,
            ..*character("Erin")
        },
    })))
    .await;
    gw.until(|m| match m {
        Msg::TransferAck {
            transfer_id: TransferId { serial: 777, .. },
            ..
        } => Some(()),
        Msg::TransferNack { reason, .. } => panic!("refused: {reason}"),
        _ => None,
    })
    .await;
    // Prepared, not live: the node hosts Erin only once the source's commit arrives.
    assert_eq!(node.registry.session_instance(11), None);
    gw.send(Msg::TransferCommit {
        transfer_id: from_another_node(777),
    })
    .await;
    eventually(|| node.registry.session_instance(11) == Some(key("Meadow"))).await;
    let (snap, _) = gw
        .until(|m| match m {
            Msg::Snapshot {
                snapshot_id,
                session: 11,
                reason: SnapshotReasonDto::Transfer,
                ..
            } => Some(*snapshot_id),
            _ => None,
        })
        .await;
    gw.send(Msg::SnapshotAck { snapshot_id: snap }).await;

    // A transfer with a stale generation is refused (fencing).
    gw.send(Msg::Transfer(Box::new(shared::internal::TransferDto {
        transfer_id: from_another_node(779),
        generation: 0xdead,
        session: Some(13),
        is_dm: false,
        area: "Meadow".into(),
        instance: 0,
        arrival: ArrivalDto::Saved,
        state: *character("Gus"),
    })))
    .await;
    gw.until(|m| {
        matches!(
            m,
            Msg::TransferNack {
                transfer_id: TransferId { serial: 779, .. },
                ..
            }
        )
        .then_some(())
    })
    .await;

    // A prepared transfer that is aborted never shows up.
    gw.send(Msg::Transfer(Box::new(shared::internal::TransferDto {
        transfer_id: from_another_node(780),
        generation: 1,
        session: Some(14),
        is_dm: false,
        area: "Meadow".into(),
        instance: 0,
        arrival: ArrivalDto::Saved,
        state: ActorStateDto {
            rid: 14,
            ..*character("Hal")
        },
    })))
    .await;
    gw.until(|m| {
        matches!(
            m,
            Msg::TransferAck {
                transfer_id: TransferId { serial: 780, .. },
                ..
            }
        )
        .then_some(())
    })
    .await;
    gw.send(Msg::TransferAbort {
        transfer_id: from_another_node(780),
    })
    .await;

    // Into an instance this node does not host: refused at once, never lost.
    gw.send(Msg::Transfer(Box::new(shared::internal::TransferDto {
        transfer_id: from_another_node(778),
        generation: 1,
        session: Some(12),
        is_dm: false,
        area: "Nowhere".into(),
        instance: 0,
        arrival: ArrivalDto::Saved,
        state: *character("Finn"),
    })))
    .await;
    gw.until(|m| {
        matches!(
            m,
            Msg::TransferNack {
                transfer_id: TransferId { serial: 778, .. },
                ..
            }
        )
        .then_some(())
    })
    .await;

    // Her client acknowledges the new area (P_ChangeArea, C→S): IgnoreUpdate clears.
    gw.send(Msg::ClientFrames {
        session: 11,
        frames: Bytes::from_static(&[1, 0, 9]),
    })
    .await;
    // (The ack rides the control stream, the update a datagram: let the ack land first.)
    tokio::time::sleep(Duration::from_millis(200)).await;

    // Out: Erin walks into the Darkwood portal, which this node does not host; the gateway
    // refuses, and Erin stays in Meadow (hosted once).
    gw.conn
        .send_datagram(datagram::encode(11, &update(120.0, 0.0)))
        .unwrap();
    let (t, _) = gw
        .until(|m| match m {
            Msg::Transfer(t) => Some(t.clone()),
            _ => None,
        })
        .await;
    assert_eq!((t.area.as_str(), t.session), ("Darkwood", Some(11)));
    assert_eq!(t.transfer_id.block, 5_000, "minted in the gateway's block");
    assert_ne!(t.transfer_id.minter, 0, "the gateway's own minter is 0");
    gw.send(Msg::TransferNack {
        transfer_id: t.transfer_id,
        reason: "no such node".into(),
    })
    .await;
    eventually(|| {
        node.registry
            .instance_stats(&key("Meadow"))
            .is_some_and(|s| s.players == 1)
    })
    .await;
    assert_eq!(node.registry.session_instance(11), Some(key("Meadow")));
    assert_eq!(
        node.registry
            .instance_stats(&key("Meadow"))
            .unwrap()
            .players,
        1
    );

    // A late ack (after the rollback) is answered with an abort: Erin stays in Meadow only.
    gw.send(Msg::TransferAck {
        transfer_id: t.transfer_id,
        generation: 1,
    })
    .await;
    gw.until(|m| match m {
        Msg::TransferAbort { transfer_id } if *transfer_id == t.transfer_id => Some(()),
        Msg::TransferCommit { .. } => panic!("a late ack must not commit"),
        _ => None,
    })
    .await;
    assert_eq!(node.registry.session_instance(11), Some(key("Meadow")));

    // Out again (a /warpother), acknowledged this time: the node lets go of Erin and
    // commits.
    gw.send(Msg::WarpPlayer {
        session: 11,
        area: "Darkwood".into(),
        instance: 0,
    })
    .await;
    let (t2, _) = gw
        .until(|m| match m {
            Msg::Transfer(t) => Some(t.clone()),
            _ => None,
        })
        .await;
    assert_ne!(t2.transfer_id, t.transfer_id);
    assert_eq!(t2.transfer_id.block, 5_000);
    gw.send(Msg::TransferAck {
        transfer_id: t2.transfer_id,
        generation: 1,
    })
    .await;
    gw.until(|m| match m {
        Msg::TransferCommit { transfer_id } if *transfer_id == t2.transfer_id => Some(()),
        _ => None,
    })
    .await;
    eventually(|| node.registry.session_instance(11).is_none()).await;
    eventually(|| {
        node.registry
            .instance_stats(&key("Meadow"))
            .is_some_and(|s| s.players == 0)
    })
    .await;

    node.drain();
    loop {
        match gw.next().await {
            Msg::Deregister => {
                gw.conn.close(0u32.into(), b"bye");
                break;
            }
            m => {
                if let Some(snapshot_id) = saved_id(&m) {
                    gw.send(Msg::SnapshotAck { snapshot_id }).await;
                }
            }
        }
    }
    assert_eq!(node.join().await.unwrap(), LinkExit::Drained);
}

/// GET a path from an HTTP/1 endpoint; the whole response as text.
async fn http_get(addr: SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut out = String::new();
    tokio::time::timeout(WAIT, s.read_to_string(&mut out))
        .await
        .unwrap()
        .unwrap();
    out
}

#[actix_rt::test]
async fn the_admin_endpoint_serves_health_and_metrics() {
    let gateway = Gateway::new(SECRET);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut cfg = node_config(gateway.addr());
    cfg.admin_listen = Some(port);
    cfg.validate().unwrap();
    let world = node::load_world(&cfg).unwrap();
    let node = node::start(cfg, world);
    let mut gw = gateway.accept().await;
    assign(&mut gw, "Meadow", 1).await;
    attach(&mut gw, 21, "Mia").await;
    eventually(|| {
        node.registry
            .instance_stats(&key("Meadow"))
            .is_some_and(|s| s.players == 1)
    })
    .await;
    let mut health = String::new();
    for _ in 0..100 {
        if let Ok(Ok(_)) =
            tokio::time::timeout(Duration::from_secs(1), tokio::net::TcpStream::connect(port)).await
        {
            health = http_get(port, "/healthz").await;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    let m = http_get(port, "/metrics").await;
    assert!(m.contains("# TYPE rc_zone_ticks_total counter"), "{m}");
    // Prometheus' process metrics and the build's version.
    assert!(m.contains("rc_zone_build_info{version=\""), "{m}");
    // Every family follows Prometheus' naming conventions.
    let body = m.split_once("\r\n\r\n").map_or(m.as_str(), |(_, b)| b);
    assert_eq!(
        shared::metrics_text::lint(body),
        Vec::<String>::new(),
        "{m}"
    );
    for series in [
        "process_cpu_seconds_total ",
        "process_resident_memory_bytes ",
        "process_open_fds ",
        "process_start_time_seconds ",
    ] {
        assert!(m.contains(series), "{series} in {m}");
    }
    assert!(
        m.contains("rc_zone_instance_players{area=\"Meadow\",area_instance=\"0\"} 1"),
        "{m}"
    );
    // Refusals are counted per reason, one series each (zeros included).
    assert!(
        m.contains("rc_zone_rejections_total{reason=\"bad_item_request\"} 0"),
        "{m}"
    );
    assert!(
        m.contains("rc_zone_rejections_total{reason=\"trade_refused\"}"),
        "{m}"
    );
    // Every tick and every phase of the instance is in a histogram.
    let count = |series: &str| -> u64 {
        m.lines()
            .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {series} in:\n{m}"))
    };
    let ticks = count("rc_zone_tick_seconds_count{area=\"Meadow\",area_instance=\"0\"}");
    assert!(ticks > 0, "{m}");
    for phase in ["ingest", "actors", "broadcast", "flush"] {
        let n = count(&format!(
            "rc_zone_tick_phase_seconds_count{{area=\"Meadow\",area_instance=\"0\",phase=\"{phase}\"}}"
        ));
        // The whole tick is rendered first and recorded last: a phase is never behind it.
        assert!(n >= ticks, "{phase}: {n} < {ticks}");
    }
    node.drain();
    loop {
        match gw.next().await {
            Msg::Deregister => {
                gw.conn.close(0u32.into(), b"bye");
                break;
            }
            m => {
                if let Some(snapshot_id) = saved_id(&m) {
                    gw.send(Msg::SnapshotAck { snapshot_id }).await;
                }
            }
        }
    }
    assert_eq!(node.join().await.unwrap(), LinkExit::Drained);
}

/// The tick watchdog (issue 36): a stalled instance is reported stuck in the heartbeat,
/// given up alone (the other instance, on the other arbiter, keeps ticking), and what its
/// tick produces once the stall ends — broadcasts, frames, checkpoints of its player — is
/// never sent: the player was put back elsewhere from its last save.
#[actix_rt::test]
async fn a_stalled_instance_is_given_up_alone_and_its_late_output_is_never_sent() {
    let gateway = Gateway::new(SECRET);
    let mut cfg = node_config(gateway.addr());
    cfg.stuck_tick_ms = 100;
    cfg.give_up_tick_ms = 400;
    cfg.persist_every_ms = 100;
    cfg.validate().unwrap();
    let world = node::load_world(&cfg).unwrap();
    let node = node::start(cfg, world);
    let mut gw = gateway.accept().await;
    // Placed one after the other: the node's two arbiters.
    assign(&mut gw, "Meadow", 1).await;
    assign(&mut gw, "Darkwood", 1).await;
    attach_at(&mut gw, 21, "Mia", 1).await;
    let darkwood = |n: &NodeHandle| {
        n.registry
            .instance_stats(&key("Darkwood"))
            .map_or(0, |s| s.ticks)
    };
    let stall = Duration::from_millis(1_500);
    assert!(node.registry.inject_stall(&key("Meadow"), stall));
    let t0 = tokio::time::Instant::now();
    // Reported stuck in a heartbeat, then given up.
    gw.until(|m| match m {
        Msg::Heartbeat { loads, .. } => loads
            .iter()
            .any(|l| l.key == key("Meadow") && l.stuck && l.tick_age_ms > 100)
            .then_some(()),
        _ => None,
    })
    .await;
    let before = darkwood(&node);
    let (sessions, _) = gw
        .until(|m| match m {
            Msg::InstanceGivenUp {
                key: k,
                generation: 1,
                sessions,
            } if *k == key("Meadow") => Some(sessions.clone()),
            _ => None,
        })
        .await;
    assert_eq!(sessions, vec![21]);
    assert!(node.registry.instance(&key("Meadow")).is_none());
    assert_eq!(node.registry.session_instance(21), None);
    assert!(node.registry.is_ready());
    // Until well after the stall ended: nothing of Meadow's old copy reaches the gateway,
    // while Darkwood ticked on throughout.
    let end = t0 + stall + Duration::from_millis(800);
    let (_, seen) = gw
        .until(|_| (tokio::time::Instant::now() > end).then_some(()))
        .await;
    let leaked: Vec<&str> = seen
        .iter()
        .filter(|m| match m {
            Msg::Snapshot { session, .. } | Msg::ToClient { session, .. } => *session == 21,
            Msg::PlayerDetached { session, .. } => *session == 21,
            Msg::SnapshotGroup(g) => g.key == key("Meadow"),
            Msg::Broadcast(b) => b.datagrams.iter().any(|d| d.session == 21),
            Msg::InstanceStopped { key: k, .. } => *k == key("Meadow"),
            _ => false,
        })
        .map(Msg::name)
        .collect();
    assert_eq!(leaked, Vec::<&str>::new());
    assert!(
        darkwood(&node) > before + 20,
        "Darkwood kept ticking: {before} → {}",
        darkwood(&node)
    );
    assert_eq!(Metrics::get(&node.registry.metrics.given_up), 1);
    // Placed anew (a new generation): a fresh copy on a healthy arbiter, ticking.
    assign(&mut gw, "Meadow", 2).await;
    eventually(|| {
        node.registry
            .instance_stats(&key("Meadow"))
            .is_some_and(|s| s.ticks > 5)
    })
    .await;
    assert!(node.registry.is_ready());
}
