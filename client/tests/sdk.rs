//! The client SDK against an in-test QUIC server (quinn, a self-signed rcgen certificate,
//! ALPN `rc/1`) that scripts the gateway's side of each exchange and checks the bytes the
//! client sends: frames, credentials, datagrams, certificate pins and close codes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use client::{
    Channel, ClientError, CloseCode, CloseReason, ConnectOptions, Connection, Event, LoginError,
    NewCharacter, Verify,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use shared::frame::{FrameDecoder, FrameError, OwnedFrame};
use shared::proto::{
    ActionSlot, ActorTemplateDef, AttributeDef, AttributePair, ChangeArea, CharacterSummary,
    ChatMessageS2C, ClientPacket, CreateAccountReply, CreateCharacterReply, DecodeCtx,
    DeleteCharacterReply, DialogC2S, DialogS2C, FactionDef, FetchActorsReply, FetchCharacterReply,
    InventorySlot, ItemString, KnownSpell, NewActor, QuestEntry, QuestLog, RightClick,
    ServerPacket, StandardUpdateC2S, StandardUpdateS2C, StartGameReply, UpdateTail,
    VerifyAccountReply,
};
use shared::wire::{RcString, md5_hex, obfuscate_email};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::timeout;

const WAIT: Duration = Duration::from_secs(5);

/// The MD5 hex of "secret" (golden-vectors.md).
const SECRET_MD5: &str = "5ebe2294ecd0e0f08eab7690d2a6ee69";

// ---------------------------------------------------------------------------------------
// The scripted server.

struct TestServer {
    endpoint: quinn::Endpoint,
    conns: mpsc::UnboundedReceiver<quinn::Connection>,
    cert: CertificateDer<'static>,
    fingerprint: [u8; 32],
}

impl TestServer {
    fn start() -> Self {
        let ck = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let cert = CertificateDer::from(ck.cert.der().to_vec());
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.signing_key.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut tls = rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.clone()], key)
            .unwrap();
        tls.alpn_protocols = vec![b"rc/1".to_vec()];
        let quic = quinn::crypto::rustls::QuicServerConfig::try_from(tls).unwrap();
        let config = quinn::ServerConfig::with_crypto(Arc::new(quic));
        let endpoint =
            quinn::Endpoint::server(config, SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
        // Handshakes only progress once accepted, so accept everything in the background
        // (failed handshakes, e.g. a rejected pin, just end there).
        let (tx, conns) = mpsc::unbounded_channel();
        let ep = endpoint.clone();
        tokio::spawn(async move {
            while let Some(incoming) = ep.accept().await {
                let tx = tx.clone();
                tokio::spawn(async move {
                    if let Ok(c) = incoming.await {
                        let _ = tx.send(c);
                    }
                });
            }
        });
        let fingerprint = client::sha256_fingerprint(&cert);
        Self {
            endpoint,
            conns,
            cert,
            fingerprint,
        }
    }

    fn addr(&self) -> SocketAddr {
        self.endpoint.local_addr().unwrap()
    }

    /// The next connection and its stream; checks that the client's first frame is the
    /// empty `NewClient`.
    async fn accept(&mut self) -> Peer {
        let conn = timeout(WAIT, self.conns.recv()).await.unwrap().unwrap();
        let (send, recv) = timeout(WAIT, conn.accept_bi()).await.unwrap().unwrap();
        let mut peer = Peer {
            conn,
            send,
            recv,
            dec: FrameDecoder::new(),
            area_acks: 0,
        };
        let f = peer.frame().await;
        assert_eq!((f.ty, f.payload.len()), (0, 0), "NewClient first");
        peer
    }
}

/// The server's side of one connection.
struct Peer {
    conn: quinn::Connection,
    send: quinn::SendStream,
    recv: quinn::RecvStream,
    dec: FrameDecoder,
    /// `P_ChangeArea` acknowledgements the client sent (skipped by `packet`).
    area_acks: u32,
}

impl Peer {
    /// The next frame the client sent on the stream; the decoder fails on any framing
    /// violation.
    async fn frame(&mut self) -> OwnedFrame {
        let mut buf = vec![0u8; 65536];
        loop {
            if let Some(f) = self.dec.next_frame().expect("a well-formed frame") {
                return f.to_owned_frame();
            }
            let n = timeout(WAIT, self.recv.read(&mut buf))
                .await
                .expect("a frame in time")
                .unwrap()
                .expect("the stream is open");
            self.dec.push(&buf[..n]);
        }
    }

    /// The next frame, decoded as a client packet; the client's automatic `P_ChangeArea`
    /// acknowledgements are counted in `area_acks` and skipped.
    async fn packet(&mut self) -> ClientPacket {
        loop {
            let f = self.frame().await;
            match ClientPacket::decode(f.ty, &f.payload).unwrap() {
                ClientPacket::ChangeArea(_) => self.area_acks += 1,
                p => return p,
            }
        }
    }

    async fn send(&mut self, p: impl Into<ServerPacket>) {
        let mut v = Vec::new();
        p.into().encode_frame(&mut v).unwrap();
        self.send.write_all(&v).await.unwrap();
    }

    /// A datagram holding these packets' frames back to back.
    fn datagram(&self, packets: &[ServerPacket]) {
        let mut v = Vec::new();
        for p in packets {
            p.encode_frame(&mut v).unwrap();
        }
        self.conn.send_datagram(Bytes::from(v)).unwrap();
    }

    async fn next_datagram(&self) -> Bytes {
        timeout(WAIT, self.conn.read_datagram())
            .await
            .unwrap()
            .unwrap()
    }

    /// Reads the stream to its end: every byte must have been whole frames.
    async fn expect_stream_end(&mut self) {
        let mut buf = vec![0u8; 65536];
        loop {
            if let Some(f) = self.dec.next_frame().unwrap() {
                // (The automatic P_ChangeArea acknowledgement may come last.)
                assert_eq!(f.ty, 9, "unexpected frame {} at the end", f.ty);
                continue;
            }
            match timeout(WAIT, self.recv.read(&mut buf)).await.unwrap() {
                Ok(Some(n)) => self.dec.push(&buf[..n]),
                Ok(None) => break,
                Err(e) => panic!("stream error before its end: {e}"),
            }
        }
        self.dec
            .finish()
            .expect("the stream ends on a frame boundary");
    }

    /// Keeps the connection until the client closes it (dropping the last handle would close
    /// it at once, possibly before the last reply went out).
    async fn hold_until_closed(&self) {
        timeout(WAIT, self.conn.closed()).await.unwrap();
    }

    /// The application code the client closed with.
    async fn client_close_code(&self) -> Option<u64> {
        match timeout(WAIT, self.conn.closed()).await.unwrap() {
            quinn::ConnectionError::ApplicationClosed(c) => Some(c.error_code.into_inner()),
            _ => None,
        }
    }
}

async fn connect(addr: SocketAddr) -> Connection {
    let mut opts = ConnectOptions::new(Verify::Insecure);
    opts.reply_timeout = WAIT;
    Connection::connect_with(addr, "localhost", opts)
        .await
        .unwrap()
}

/// Runs the server script and the client side together; panics in either fail the test.
async fn run<F>(server: JoinHandle<()>, client: F)
where
    F: Future<Output = ()>,
{
    client.await;
    timeout(WAIT, server).await.unwrap().unwrap();
}

fn summary(name: &str, actor_id: u16) -> CharacterSummary {
    CharacterSummary {
        name: name.into(),
        actor_id,
        gender: 1,
        face: 2,
        hair: 3,
        beard: 0,
        body: 4,
    }
}

fn template(id: u16, playable: u8, genders: u8, race: &str, class: &str) -> ActorTemplateDef {
    ActorTemplateDef {
        id,
        playable,
        poly_collision: 0,
        meshes: [0; 8],
        beards: [0; 5],
        male_hair: [0; 5],
        female_hair: [0; 5],
        male_faces: [0; 5],
        female_faces: [0; 5],
        male_bodies: [0; 5],
        female_bodies: [0; 5],
        male_speech: [0; 16],
        female_speech: [0; 16],
        rideable: 0,
        trade: 0,
        blood: 0,
        aggressiveness: 0,
        genders,
        environment: 3,
        inventory_slots: 0,
        male_anim: 0,
        female_anim: 0,
        scale: 1.0,
        faction: 0,
        attributes: vec![AttributePair { value: 10, max: 20 }; 40],
        race: race.into(),
        class: class.into(),
        description: "".into(),
    }
}

fn new_actor(runtime_id: u16, template_id: u16, gender: Option<u8>) -> NewActor {
    NewActor {
        instance_handle: 0x1234,
        runtime_id,
        level: 1,
        xp: 0,
        template_id,
        x: 1.0,
        y: 2.0,
        z: 3.0,
        yaw: 0.0,
        human: 0,
        actor_name: "Goblin".into(),
        tag: "".into(),
        gender,
        reputation: 0,
        face: 0,
        hair: 0,
        body: 0,
        beard: 0,
        speed: 10,
        speed_max: 10,
        health: 50,
        health_max: 50,
        weapon: 65535,
        shield: 65535,
        hat: 65535,
        chest: 65535,
        home_faction: 0,
        ratings: vec![100; 100],
    }
}

fn update(runtime_id: u16) -> ServerPacket {
    ServerPacket::StandardUpdate(StandardUpdateS2C {
        runtime_id,
        x: f32::from(runtime_id),
        z: -5.0,
        is_running: 1,
        dest_x: 10.0,
        dest_z: -5.5,
        tail: UpdateTail::Energy(100),
        ..StandardUpdateS2C::default()
    })
}

// ---------------------------------------------------------------------------------------
// Tests.

#[tokio::test]
async fn login_sends_md5_creds_in_frames_and_maps_reply_codes() {
    let mut server = TestServer::start();
    let mut conn = connect(server.addr()).await;
    let script = tokio::spawn(async move {
        let mut p = server.accept().await;
        // golden-vectors.md: P_VerifyAccount, user "bob", password "secret".
        let f = p.frame().await;
        let mut want = vec![3, b'b', b'o', b'b', 32];
        want.extend_from_slice(SECRET_MD5.as_bytes());
        assert_eq!((f.ty, &f.payload), (2, &want));
        p.send(VerifyAccountReply::Ok {
            characters: vec![summary("Alice", 3), summary("Bert", 4)],
        })
        .await;
        for reply in [
            VerifyAccountReply::BadPassword,
            VerifyAccountReply::NoAccount,
            VerifyAccountReply::Banned,
            VerifyAccountReply::LoggedOn,
        ] {
            match p.packet().await {
                ClientPacket::VerifyAccount(v) => {
                    assert_eq!(v.creds.user.as_bytes(), b"bob");
                    assert_eq!(
                        v.creds.password_md5.as_bytes(),
                        md5_hex(b"wrong").as_bytes()
                    );
                }
                other => panic!("expected P_VerifyAccount, got {other:?}"),
            }
            p.send(reply).await;
        }
        p.expect_stream_end().await;
        assert_eq!(p.client_close_code().await, Some(0));
    });
    run(script, async {
        let chars = conn.login("bob", "secret").await.unwrap();
        assert_eq!(chars, vec![summary("Alice", 3), summary("Bert", 4)]);
        assert_eq!(
            conn.credentials().unwrap().password_md5.as_bytes(),
            SECRET_MD5.as_bytes()
        );
        let errs = [
            conn.login("bob", "wrong").await.unwrap_err(),
            conn.login("bob", "wrong").await.unwrap_err(),
            conn.login("bob", "wrong").await.unwrap_err(),
            conn.login("bob", "wrong").await.unwrap_err(),
        ];
        assert!(matches!(errs[0], LoginError::BadPassword), "{:?}", errs[0]);
        assert!(matches!(errs[1], LoginError::NoAccount), "{:?}", errs[1]);
        assert!(matches!(errs[2], LoginError::Banned), "{:?}", errs[2]);
        assert!(
            matches!(errs[3], LoginError::AlreadyLoggedIn),
            "{:?}",
            errs[3]
        );
        // A failed login keeps the credentials of the last successful one.
        assert_eq!(
            conn.credentials().unwrap().password_md5.as_bytes(),
            SECRET_MD5.as_bytes()
        );
        conn.close(CloseCode::Normal).await;
    })
    .await;
}

#[tokio::test]
async fn create_account_obfuscates_the_email() {
    let mut server = TestServer::start();
    let mut conn = connect(server.addr()).await;
    let script = tokio::spawn(async move {
        let mut p = server.accept().await;
        let f = p.frame().await;
        assert_eq!(f.ty, 1);
        let mut want = vec![5];
        want.extend_from_slice(b"alice");
        want.push(32);
        want.extend_from_slice(md5_hex(b"pw").as_bytes());
        let wire_email = obfuscate_email(b"alice@example.com");
        want.push(wire_email.len() as u8);
        want.extend_from_slice(&wire_email);
        assert_eq!(f.payload, want);
        p.send(CreateAccountReply::Created).await;
        assert!(matches!(p.packet().await, ClientPacket::CreateAccount(_)));
        p.send(CreateAccountReply::Refused).await;
        p.hold_until_closed().await;
    });
    run(script, async {
        let r = conn
            .create_account("alice", "pw", "alice@example.com")
            .await
            .unwrap();
        assert_eq!(r, CreateAccountReply::Created);
        let r = conn
            .create_account("alice", "pw", "alice@example.com")
            .await
            .unwrap();
        assert_eq!(r, CreateAccountReply::Refused);
        conn.close(CloseCode::Normal).await;
    })
    .await;
}

#[tokio::test]
async fn catalogue_blocks_are_collected_and_drive_character_creation() {
    let mut server = TestServer::start();
    let mut conn = connect(server.addr()).await;
    let script = tokio::spawn(async move {
        let mut p = server.accept().await;
        assert!(matches!(p.packet().await, ClientPacket::FetchActors(_)));
        let attributes = (0..40)
            .map(|i| AttributeDef {
                is_skill: 0,
                hidden: 0,
                name: format!("A{i}").as_str().into(),
            })
            .collect();
        p.send(FetchActorsReply::Attributes {
            assignment: 10,
            attributes,
        })
        .await;
        p.send(FetchActorsReply::DamageTypes {
            names: vec!["Slash".into(); 20],
        })
        .await;
        p.send(FetchActorsReply::ItemsDone { total: 0 }).await;
        p.send(FetchActorsReply::Factions {
            factions: vec![FactionDef {
                index: 0,
                name: "Good".into(),
            }],
        })
        .await;
        p.send(FetchActorsReply::Actors {
            actors: vec![
                template(1, 0, 3, "Goblin", "Monster"),
                template(2, 1, 0, "Human", "Warrior"),
            ],
        })
        .await;
        p.send(FetchActorsReply::Actors {
            actors: vec![template(3, 1, 1, "Dwarf", "Miner")],
        })
        .await;
        p.send(FetchActorsReply::ActorsDone { total: 3 }).await;

        // Assignment > 0: the 40 point bytes are there, padded.
        for reply in [
            CreateCharacterReply::InvalidName,
            CreateCharacterReply::Created,
        ] {
            match p.packet().await {
                ClientPacket::CreateCharacter(c) => {
                    assert_eq!(c.creds.password_md5.as_bytes(), SECRET_MD5.as_bytes());
                    assert_eq!((c.actor_id, c.gender, c.face), (2, 1, 3));
                    assert_eq!(c.points.len(), 40);
                    assert_eq!(&c.points[..3], &[4, 6, 0]);
                    assert_eq!(c.character_name.as_bytes(), b"Zed");
                }
                other => panic!("expected P_CreateCharacter, got {other:?}"),
            }
            p.send(reply).await;
        }

        // Template 3 is male only (Genders 1): a gender byte breaks the layout.
        p.send(new_actor(9, 3, Some(0))).await;
        p.send(new_actor(10, 3, None)).await;
        p.send(new_actor(11, 2, Some(1))).await;
        p.hold_until_closed().await;
    });
    run(script, async {
        let cat = conn.fetch_catalogue().await.unwrap();
        assert_eq!(cat.assignment, 10);
        assert_eq!(cat.attributes.len(), 40);
        assert_eq!(cat.damage_types.len(), 20);
        assert_eq!(cat.factions.len(), 1);
        assert_eq!(cat.actors.len(), 3);
        let playable: Vec<_> = cat
            .playable()
            .map(|t| (t.id, t.race.to_string(), t.class.to_string()))
            .collect();
        assert_eq!(
            playable,
            vec![
                (2, "Human".to_owned(), "Warrior".to_owned()),
                (3, "Dwarf".to_owned(), "Miner".to_owned())
            ]
        );

        let mut zed = NewCharacter::new("Zed", 2);
        (zed.gender, zed.face, zed.points) = (1, 3, vec![4, 6]);
        assert!(matches!(
            conn.create_character(&zed).await,
            Err(LoginError::NotLoggedIn)
        ));
        conn.set_credentials("bob", "secret");
        assert!(matches!(
            conn.create_character(&zed).await,
            Err(LoginError::InvalidName)
        ));
        conn.create_character(&zed).await.unwrap();

        // The catalogue's Genders decide P_NewActor's layout.
        match conn.recv().await {
            Err(ClientError::Decode { ty: 11, .. }) => {}
            other => panic!("expected an undecodable P_NewActor, got {other:?}"),
        }
        for rid in [10, 11] {
            match conn.recv().await.unwrap().packet {
                ServerPacket::NewActor(a) => assert_eq!(a.runtime_id, rid),
                other => panic!("expected P_NewActor, got {other:?}"),
            }
        }
        assert_eq!(conn.stats().undecodable_packets, 1);
        conn.close(CloseCode::Normal).await;
    })
    .await;
}

#[tokio::test]
async fn character_blocks_are_collected_and_other_packets_held() {
    let mut server = TestServer::start();
    let mut conn = connect(server.addr()).await;
    let item = InventorySlot {
        slot: 1,
        item: ItemString {
            item_id: 42,
            attributes: vec![5000; 40],
            health: 100,
        },
        amount: 3,
    };
    let spell = KnownSpell {
        level: 1,
        id: 7,
        name: "Fireball".into(),
        ..KnownSpell::default()
    };
    let quests = vec![
        QuestEntry {
            name: "Rats".into(),
            status: "Kill 10 rats".into(),
        },
        QuestEntry {
            name: "Wolves".into(),
            status: "".into(),
        },
    ];
    let (item2, spell2, quests2) = (item.clone(), spell.clone(), quests.clone());
    let script = tokio::spawn(async move {
        let mut p = server.accept().await;
        match p.packet().await {
            ClientPacket::FetchCharacter(f) => {
                assert_eq!(f.index, 1);
                assert_eq!(f.creds.user.as_bytes(), b"bob");
                assert_eq!(f.creds.password_md5.as_bytes(), SECRET_MD5.as_bytes());
            }
            other => panic!("expected P_FetchCharacter, got {other:?}"),
        }
        p.send(FetchCharacterReply::Stats {
            gold: 250,
            reputation: -5,
            level: 3,
            xp: 1000,
            home_faction: 2,
            attributes: vec![AttributePair { value: 1, max: 2 }; 40],
        })
        .await;
        p.send(FetchCharacterReply::Inventory {
            slots: vec![None, Some(item2)],
        })
        .await;
        // Not part of the reply: held for a later recv.
        p.send(ChatMessageS2C::system("hello")).await;
        p.send(FetchCharacterReply::Inventory { slots: vec![None] })
            .await;
        p.send(FetchCharacterReply::Spells {
            spells: vec![spell2],
        })
        .await;
        p.send(FetchCharacterReply::Quests { quests: quests2 })
            .await;
        p.send(FetchCharacterReply::Finished {
            quests: 2,
            spells: 1,
        })
        .await;

        assert!(matches!(p.packet().await, ClientPacket::DeleteCharacter(d) if d.index == 0));
        p.send(DeleteCharacterReply::List {
            characters: vec![summary("Bert", 4)],
        })
        .await;
        assert!(matches!(p.packet().await, ClientPacket::DeleteCharacter(d) if d.index == 5));
        p.send(DeleteCharacterReply::Refused).await;
        p.hold_until_closed().await;
    });
    run(script, async {
        assert!(matches!(
            conn.fetch_character(1).await,
            Err(LoginError::NotLoggedIn)
        ));
        conn.set_credentials("bob", "secret");
        let sheet = conn.fetch_character(1).await.unwrap();
        assert_eq!(
            (sheet.gold, sheet.reputation, sheet.level, sheet.xp),
            (250, -5, 3, 1000)
        );
        assert_eq!(sheet.attributes.len(), 40);
        assert_eq!(sheet.inventory, vec![None, Some(item), None]);
        assert_eq!(sheet.spells, vec![spell]);
        assert_eq!(sheet.quests, quests);

        let left = conn.delete_character(0).await.unwrap();
        assert_eq!(left, vec![summary("Bert", 4)]);
        assert!(matches!(
            conn.delete_character(5).await,
            Err(LoginError::Refused("P_DeleteCharacter"))
        ));

        let held = conn.recv_timeout(WAIT).await.unwrap();
        assert_eq!(
            held.packet,
            ServerPacket::ChatMessage(ChatMessageS2C::system("hello"))
        );
        conn.close(CloseCode::Normal).await;
    })
    .await;
}

#[tokio::test]
async fn start_game_waits_for_thirteen_parts_and_returns_the_runtime_id() {
    let mut server = TestServer::start();
    let mut conn = connect(server.addr()).await;
    let area = ChangeArea {
        x: -52.7,
        y: 3.3,
        z: 88.4,
        yaw: -22.0,
        pvp: 1,
        gravity: 300,
        instance_handle: 0x1234,
        weather: 0,
        area: "Plains".into(),
    };
    let area2 = area.clone();
    let bar = |first: u8| StartGameReply::ActionBar {
        first_slot: first,
        slots: vec![
            ActionSlot::Spell("Heal".into()),
            ActionSlot::Item(u16::from(first)),
            ActionSlot::Empty,
        ],
    };
    let script = tokio::spawn(async move {
        let mut p = server.accept().await;
        match p.packet().await {
            ClientPacket::StartGame(s) => {
                assert_eq!(s.index, 2);
                assert_eq!(s.creds.password_md5.as_bytes(), SECRET_MD5.as_bytes());
            }
            other => panic!("expected P_StartGame, got {other:?}"),
        }
        p.send(area2).await;
        p.send(new_actor(7, 2, Some(0))).await;
        p.send(new_actor(20, 1, None)).await;
        for i in 0..4 {
            p.send(bar(i * 3)).await;
        }
        // The RuntimeID is sent immediately and may overtake the queued action-bar parts.
        p.send(StartGameReply::RuntimeId { runtime_id: 7 }).await;
        p.datagram(&[update(20)]);
        for i in 4..12 {
            p.send(bar(i * 3)).await;
        }
        p.send(ChatMessageS2C::system("Welcome")).await;

        assert!(matches!(p.packet().await, ClientPacket::StartGame(_)));
        assert_eq!(p.area_acks, 1, "the client acknowledged P_ChangeArea");
        p.send(StartGameReply::Failed).await;
        p.hold_until_closed().await;
    });
    run(script, async {
        conn.set_credentials("bob", "secret");
        let start = conn.start_game(2).await.unwrap();
        assert_eq!(start.runtime_id, 7);
        assert_eq!(start.area, area);
        assert_eq!(start.area.area.as_bytes(), b"Plains");
        assert_eq!(start.action_bar.len(), 36);
        assert_eq!(start.action_bar[33], ActionSlot::Spell("Heal".into()));
        assert_eq!(start.action_bar[34], ActionSlot::Item(33));
        let names: Vec<_> = start.packets.iter().map(|p| p.name()).collect();
        assert_eq!(names.iter().filter(|n| **n == "P_StartGame").count(), 13);
        assert_eq!(names.iter().filter(|n| **n == "P_NewActor").count(), 2);
        assert_eq!(names.first(), Some(&"P_ChangeArea"));
        assert_eq!(names.last(), Some(&"P_StartGame"));
        // The welcome line came after the 13th part: it is left for recv. The update
        // travels in a datagram, unordered with the stream: it is in the start packets or
        // comes before the welcome line.
        let welcome = ServerPacket::ChatMessage(ChatMessageS2C::system("Welcome"));
        assert!(start.packets.iter().all(|p| p.packet != welcome));
        let (_, before) = conn
            .collect_until(|p| p.packet == welcome, WAIT)
            .await
            .unwrap();
        let is_update = |p: &&client::Incoming| {
            p.channel == Channel::Datagram && p.name() == "P_StandardUpdate"
        };
        let mut updates = start.packets.iter().filter(is_update).count()
            + before.iter().filter(is_update).count();
        if updates == 0 {
            let late = conn.recv_timeout(WAIT).await.unwrap();
            assert!(is_update(&&late), "{late:?}");
            updates += 1;
        }
        assert_eq!(updates, 1);
        assert!(matches!(
            conn.start_game(0).await,
            Err(LoginError::Refused("P_StartGame"))
        ));
        conn.close(CloseCode::Normal).await;
    })
    .await;
}

#[tokio::test]
async fn updates_travel_as_single_frame_datagrams() {
    let mut server = TestServer::start();
    let mut conn = connect(server.addr()).await;
    let (tx, mut rx) = mpsc::unbounded_channel::<()>();
    let script = tokio::spawn(async move {
        let p = server.accept().await;
        // golden-vectors.md: P_StandardUpdate C→S, framed.
        let golden = [
            0x0e, 0x00, 0x00, 0x20, 0x41, 0x00, 0x00, 0xb0, 0xc0, 0x00, 0x00, 0x00, 0x40, 0x00,
            0x00, 0x10, 0x41, 0x00, 0x00, 0xa0, 0xc0, 0x01, 0x00,
        ];
        for _ in 0..2 {
            let d = p.next_datagram().await;
            assert_eq!(&d[..2], &[23, 0]);
            assert_eq!(&d[2..], &golden);
        }
        // One datagram, three frames (the server's batching).
        p.datagram(&[update(1), update(2), update(3)]);
        rx.recv().await.unwrap();
        // A cut-off frame and a frame of another type: dropped whole, connection stays.
        let mut cut = Vec::new();
        update(4).encode_frame(&mut cut).unwrap();
        cut.pop();
        p.conn.send_datagram(Bytes::from(cut)).unwrap();
        p.datagram(&[update(5), ChatMessageS2C::system("no").into()]);
        p.datagram(&[update(6)]);
        rx.recv().await.unwrap();
    });
    run(script, async {
        let u = StandardUpdateC2S {
            dest_x: 10.0,
            dest_z: -5.5,
            y: 2.0,
            x: 9.0,
            z: -5.0,
            is_running: 1,
            walking_backward: 0,
        };
        conn.send_update(&u).unwrap();
        // `send` routes P_StandardUpdate to a datagram too.
        conn.send(&ClientPacket::StandardUpdate(u)).await.unwrap();
        for rid in 1..=3 {
            let p = conn.recv_timeout(WAIT).await.unwrap();
            assert_eq!(p.channel, Channel::Datagram);
            assert!(matches!(p.packet, ServerPacket::StandardUpdate(s) if s.runtime_id == rid));
        }
        tx.send(()).unwrap();
        let p = conn.recv_timeout(WAIT).await.unwrap();
        assert!(matches!(p.packet, ServerPacket::StandardUpdate(s) if s.runtime_id == 6));
        let s = conn.stats();
        assert_eq!((s.datagrams_received, s.datagrams_dropped), (4, 2));
        tx.send(()).unwrap();
    })
    .await;
}

#[tokio::test]
async fn pin_accepts_the_right_certificate_and_rejects_others() {
    let mut server = TestServer::start();
    let addr = server.addr();

    let right = Connection::connect(addr, "localhost", Verify::PinSha256(server.fingerprint))
        .await
        .unwrap();
    server.accept().await;
    right.close(CloseCode::Normal).await;

    let hex = hex::encode(server.fingerprint);
    let colons = Verify::pin_from_hex(&hex.to_uppercase()).unwrap();
    let c = Connection::connect(addr, "any.name", colons).await.unwrap();
    server.accept().await;
    drop(c);

    let mut wrong = server.fingerprint;
    wrong[0] ^= 1;
    match Connection::connect(addr, "localhost", Verify::PinSha256(wrong)).await {
        Err(ClientError::PinMismatch { expected, got }) => {
            assert_eq!(expected, wrong);
            assert_eq!(got, server.fingerprint);
        }
        other => panic!("expected a pin mismatch, got {other:?}"),
    }

    // A root store with the self-signed certificate: the name must match too.
    let mut roots = rustls::RootCertStore::empty();
    roots.add(server.cert.clone()).unwrap();
    let roots = Arc::new(roots);
    let c = Connection::connect(addr, "localhost", Verify::Roots(roots.clone()))
        .await
        .unwrap();
    server.accept().await;
    drop(c);
    match Connection::connect(addr, "example.com", Verify::Roots(roots)).await {
        Err(ClientError::Handshake(CloseReason::Transport(_))) => {}
        other => panic!("expected a failed handshake, got {other:?}"),
    }
}

#[tokio::test]
async fn server_close_codes_surface() {
    let mut server = TestServer::start();
    let addr = server.addr();
    let mut conn = connect(addr).await;
    let (accepted_tx, mut accepted_rx) = mpsc::unbounded_channel::<()>();
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<()>();
    let script = tokio::spawn(async move {
        // Unknown types are framed like any other; a zero-length frame is a violation.
        let mut p = server.accept().await;
        accepted_tx.send(()).unwrap();
        let f = p.frame().await;
        assert_eq!((f.ty, f.payload.as_slice()), (200, &b"junk"[..]));
        let mut buf = [0u8; 16];
        let err = loop {
            match p.dec.next_frame() {
                Err(e) => break e,
                Ok(Some(f)) => panic!("unexpected frame {}", f.ty),
                Ok(None) => {
                    let n = timeout(WAIT, p.recv.read(&mut buf))
                        .await
                        .unwrap()
                        .unwrap()
                        .unwrap();
                    p.dec.push(&buf[..n]);
                }
            }
        };
        assert_eq!(err, FrameError::ZeroLength { offset: 10 });
        p.conn.close(2u32.into(), b"zero-length frame");

        // Too many failed logins: the reply is a close with code 4.
        let mut p2 = server.accept().await;
        assert!(matches!(p2.packet().await, ClientPacket::VerifyAccount(_)));
        p2.conn.close(4u32.into(), b"");
        // Keep the endpoint until the clients saw the closes.
        done_rx.recv().await.unwrap();
    });
    run(script, async {
        accepted_rx.recv().await.unwrap();
        let mut conn2 = connect(addr).await;
        conn.send_frame(200, b"junk").await.unwrap();
        conn.send_raw(&[0, 0]).await.unwrap();
        let err = conn.recv_timeout(WAIT).await.unwrap_err();
        assert_eq!(
            err.server_close_code(),
            Some(CloseCode::ProtocolViolation),
            "{err}"
        );
        assert!(err.is_closed());
        assert_eq!(
            conn.close_reason(),
            Some(CloseReason::Server {
                code: CloseCode::ProtocolViolation,
                reason: "zero-length frame".into()
            })
        );
        // Everything after fails the same way.
        let err = conn.login("bob", "secret").await.unwrap_err();
        assert_eq!(err.server_close_code(), Some(CloseCode::ProtocolViolation));

        let err = conn2.login("bob", "bad").await.unwrap_err();
        assert_eq!(
            err.server_close_code(),
            Some(CloseCode::RateLimited),
            "{err}"
        );
        assert_eq!(
            conn2.closed().await.server_code(),
            Some(CloseCode::RateLimited)
        );
        done_tx.send(()).unwrap();
    })
    .await;
}

#[tokio::test]
async fn a_malformed_server_frame_closes_with_code_2() {
    let mut server = TestServer::start();
    let mut conn = connect(server.addr()).await;
    let script = tokio::spawn(async move {
        let mut p = server.accept().await;
        p.send(ChatMessageS2C::system("ok")).await;
        p.send.write_all(&[0, 0, 16]).await.unwrap();
        assert_eq!(p.client_close_code().await, Some(2));
    });
    run(script, async {
        assert_eq!(
            conn.recv_timeout(WAIT).await.unwrap().name(),
            "P_ChatMessage"
        );
        match conn.recv_timeout(WAIT).await {
            Err(ClientError::Frame(FrameError::ZeroLength { .. })) => {}
            other => panic!("expected a framing error, got {other:?}"),
        }
        assert_eq!(conn.close_reason(), Some(CloseReason::Local));
    })
    .await;
}

#[tokio::test]
async fn recv_is_cancel_safe_and_times_out() {
    let mut server = TestServer::start();
    let mut conn = connect(server.addr()).await;
    let script = tokio::spawn(async move {
        let mut p = server.accept().await;
        let mut v = Vec::new();
        ServerPacket::from(ChatMessageS2C::system("one"))
            .encode_frame(&mut v)
            .unwrap();
        ServerPacket::from(ChatMessageS2C::system("two"))
            .encode_frame(&mut v)
            .unwrap();
        // Dribble the bytes out so that recv is cancelled mid-frame many times.
        for piece in v.chunks(3) {
            p.send.write_all(piece).await.unwrap();
            tokio::time::sleep(Duration::from_millis(15)).await;
        }
        // recv_until skips to the match.
        p.datagram(&[update(1)]);
        p.send(ChatMessageS2C::system("three")).await;
        p.send(ChatMessageS2C::system("four")).await;
        p.hold_until_closed().await;
    });
    run(script, async {
        assert!(matches!(
            conn.recv_timeout(Duration::from_millis(1)).await,
            Err(ClientError::Timeout(_))
        ));
        let mut got = Vec::new();
        let mut cancelled = 0;
        while got.len() < 2 {
            tokio::select! {
                r = conn.recv() => got.push(r.unwrap().packet),
                _ = tokio::time::sleep(Duration::from_millis(4)) => cancelled += 1,
            }
        }
        assert!(cancelled > 3, "recv was cancelled {cancelled} times");
        assert_eq!(
            got,
            vec![
                ServerPacket::from(ChatMessageS2C::system("one")),
                ServerPacket::from(ChatMessageS2C::system("two"))
            ]
        );
        let four = conn
            .recv_until(
                |p| p.packet == ServerPacket::from(ChatMessageS2C::system("four")),
                WAIT,
            )
            .await
            .unwrap();
        assert!(four.is_reliable());
        conn.close(CloseCode::Normal).await;
    })
    .await;
}

/// A caller of `recv` (the swarm) feeds script windows to `ui_event`: the dialog is
/// opened and its line acknowledged as Realm Crafter's client does, the quest log follows,
/// and `choose` answers the script. Other packets are not script UI and queue nothing.
#[tokio::test]
async fn ui_event_answers_script_windows_for_recv_callers() {
    let mut server = TestServer::start();
    let mut conn = connect(server.addr()).await;
    let script = tokio::spawn(async move {
        let mut p = server.accept().await;
        p.send(ChatMessageS2C::system("before")).await;
        quest_offer(&mut p, 77, 12, "Elder", "Will you help?").await;
        p.hold_until_closed().await;
    });
    run(script, async {
        let mut events = Vec::new();
        while events.len() < 3 {
            let i = conn.recv_timeout(WAIT).await.unwrap();
            match conn.ui_event(&i.packet).unwrap() {
                Some(e) => events.push(e),
                None => assert!(matches!(i.packet, ServerPacket::ChatMessage(_))),
            }
        }
        assert_eq!(
            events.last(),
            Some(&Event::DialogOptions {
                dialog: 1,
                options: vec!["Accept".into(), "Refuse".into()]
            })
        );
        assert!(conn.choose(1, 3).await.is_err());
        conn.choose(1, 1).await.unwrap();
        loop {
            let i = conn.recv_timeout(WAIT).await.unwrap();
            if conn.ui_event(&i.packet).unwrap() == Some(Event::DialogClosed { dialog: 1 }) {
                break;
            }
        }
        let q = conn.ui().quest("goblin trouble").unwrap();
        assert_eq!(q.status_text(), "Kill 2 Goblin Raiders");
        assert!(conn.ui().dialog(1).is_none());
        conn.close(CloseCode::Normal).await;
    })
    .await;
}

/// The scripted server's quest offer: a dialog for `script` with one line and the options
/// "Accept,Refuse"; checks that the client opens it (handle 1), acknowledges the line and
/// chooses 1, then adds "Goblin Trouble" to its quest log and closes the dialog.
async fn quest_offer(p: &mut Peer, script: u32, context: u16, title: &str, line: &str) {
    p.send(ServerPacket::Dialog(DialogS2C::Open {
        script,
        context,
        background: u16::MAX,
        title: title.into(),
    }))
    .await;
    p.send(ServerPacket::Dialog(DialogS2C::Text {
        r: 255,
        g: 255,
        b: 255,
        dialog: 1,
        text: line.into(),
    }))
    .await;
    p.send(ServerPacket::Dialog(DialogS2C::Options {
        dialog: 1,
        options: vec!["Accept".into(), "Refuse".into()],
    }))
    .await;
    assert_eq!(
        p.packet().await,
        ClientPacket::Dialog(DialogC2S::Opened { script, dialog: 1 })
    );
    assert_eq!(
        p.packet().await,
        ClientPacket::Dialog(DialogC2S::TextShown { script })
    );
    assert_eq!(
        p.packet().await,
        ClientPacket::Dialog(DialogC2S::Chosen { script, option: 1 })
    );
    p.send(ServerPacket::QuestLog(QuestLog::New {
        name: "Goblin Trouble".into(),
        status: RcString(b"\xff\xff\xffKill 2 Goblin Raiders".to_vec()),
    }))
    .await;
    p.send(ServerPacket::Dialog(DialogS2C::Close { dialog: 1 }))
        .await;
}

/// Answers the client's `P_FetchCharacter` with a sheet holding these quests.
async fn send_sheet(p: &mut Peer, quests: Vec<QuestEntry>) {
    assert!(matches!(p.packet().await, ClientPacket::FetchCharacter(f) if f.index == 0));
    p.send(FetchCharacterReply::Stats {
        gold: 10,
        reputation: 0,
        level: 1,
        xp: 0,
        home_faction: 0,
        attributes: vec![AttributePair { value: 1, max: 2 }; 40],
    })
    .await;
    let n = u16::try_from(quests.len()).unwrap();
    if !quests.is_empty() {
        p.send(FetchCharacterReply::Quests { quests }).await;
    }
    p.send(FetchCharacterReply::Finished {
        quests: n,
        spells: 0,
    })
    .await;
}

/// Answers the catalogue request: one playable template (2) and the elder's (9).
async fn send_catalogue(p: &mut Peer) {
    assert!(matches!(p.packet().await, ClientPacket::FetchActors(_)));
    p.send(FetchActorsReply::Attributes {
        assignment: 0,
        attributes: vec![AttributeDef::default(); 40],
    })
    .await;
    p.send(FetchActorsReply::ItemsDone { total: 0 }).await;
    p.send(FetchActorsReply::Actors {
        actors: vec![
            template(2, 1, 2, "Elf", "Ranger"),
            template(9, 0, 3, "Human", "Elder"),
        ],
    })
    .await;
    p.send(FetchActorsReply::ActorsDone { total: 2 }).await;
}

/// The 13 `P_StartGame` parts after a `P_ChangeArea` at (x, 1, z).
async fn send_start(p: &mut Peer, runtime_id: u16, x: f32, z: f32) {
    assert!(matches!(p.packet().await, ClientPacket::StartGame(s) if s.index == 0));
    p.send(ChangeArea {
        x,
        y: 1.0,
        z,
        area: "Meadow".into(),
        ..ChangeArea::default()
    })
    .await;
    for i in 0..12 {
        p.send(StartGameReply::ActionBar {
            first_slot: i * 3,
            slots: vec![ActionSlot::Empty; 3],
        })
        .await;
    }
    p.send(StartGameReply::RuntimeId { runtime_id }).await;
}

/// `rcclient talk --template 9 --choose 1` against the scripted server: it walks to the
/// elder 20 units away in steps the speed check accepts, right-clicks it once in reach,
/// prints the dialog, answers the options with 1, and prints the quest log when the
/// dialog closes.
#[tokio::test]
async fn rcclient_talks_to_an_npc_against_a_scripted_gateway() {
    let mut server = TestServer::start();
    let pin = hex::encode(server.fingerprint);
    let addr = server.addr().to_string();
    let bin = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_rcclient"))
            .args(["--addr", &addr, "--pin", &pin, "talk", "robo", "pw"])
            .args(["--template", "9", "--choose", "1", "--timeout", "20"])
            .env("RUST_LOG", "off")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    });
    let mut p = server.accept().await;
    assert!(matches!(p.packet().await, ClientPacket::VerifyAccount(_)));
    p.send(VerifyAccountReply::Ok {
        characters: vec![summary("Robo", 2)],
    })
    .await;
    send_catalogue(&mut p).await;
    send_sheet(
        &mut p,
        vec![QuestEntry {
            name: "Old Errand".into(),
            status: RcString(b"\xff\xff\xffDone soon".to_vec()),
        }],
    )
    .await;
    send_start(&mut p, 7, 0.0, 0.0).await;
    let mut elder = new_actor(30, 9, None);
    (elder.x, elder.z, elder.human) = (20.0, 0.0, 0);
    elder.actor_name = "Maren".into();
    p.send(elder).await;
    // Steps of at most 1.8 towards the elder until within 6 of it.
    let mut last = 0.0f32;
    loop {
        let d = p.next_datagram().await;
        let u = StandardUpdateC2S::decode_fast(&d[3..]).unwrap();
        assert!(u.x - last <= 1.8 + 1e-3 && u.z.abs() < 1e-3, "{u:?}");
        last = u.x;
        if 20.0 - u.x <= 6.0 {
            break;
        }
    }
    assert_eq!(
        p.packet().await,
        ClientPacket::RightClick(RightClick { target: 30 })
    );
    quest_offer(&mut p, 5, 30, "Elder Maren", "Will you drive them off?").await;
    assert_eq!(p.client_close_code().await, Some(0));

    let out = timeout(WAIT, bin).await.unwrap().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for needle in [
        "right-clicking Maren (RuntimeID 30, template 9)",
        "[Elder Maren] opened (dialog 1 with RuntimeID 30)",
        "[Elder Maren] Will you drive them off?",
        "[Elder Maren]   1. Accept",
        "[Elder Maren] > 1 (--choose)",
        "quest: Goblin Trouble: Kill 2 Goblin Raiders",
        "[Elder Maren] closed",
        "quest log: 2 quests\n  Old Errand: Done soon\n  Goblin Trouble: Kill 2 Goblin Raiders",
    ] {
        assert!(stdout.contains(needle), "{needle:?} not in:\n{stdout}");
    }
}

/// `rcclient play` against the scripted server: no character yet, so it creates one from
/// the first playable template, logs in again, enters the world, walks in a circle with
/// datagram updates and prints each packet by name.
#[tokio::test]
async fn rcclient_plays_against_a_scripted_gateway() {
    let mut server = TestServer::start();
    let pin = hex::encode(server.fingerprint);
    let addr = server.addr().to_string();
    let bin = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_rcclient"))
            .args(["--addr", &addr, "--pin", &pin, "play", "robo", "pw"])
            .args(["--create-character", "Robo", "--seconds", "1"])
            .env("RUST_LOG", "off")
            .output()
            .unwrap()
    });
    let mut p = server.accept().await;
    assert!(matches!(p.packet().await, ClientPacket::VerifyAccount(_)));
    p.send(VerifyAccountReply::Ok { characters: vec![] }).await;
    assert!(matches!(p.packet().await, ClientPacket::FetchActors(_)));
    p.send(FetchActorsReply::Attributes {
        assignment: 0,
        attributes: vec![AttributeDef::default(); 40],
    })
    .await;
    p.send(FetchActorsReply::ItemsDone { total: 0 }).await;
    p.send(FetchActorsReply::Actors {
        actors: vec![
            template(1, 0, 3, "Goblin", "Monster"),
            template(2, 1, 2, "Elf", "Ranger"),
        ],
    })
    .await;
    p.send(FetchActorsReply::ActorsDone { total: 2 }).await;
    // Assignment 0: the gateway decodes P_CreateCharacter without the point bytes.
    let f = p.frame().await;
    let no_points = DecodeCtx {
        create_character_points: false,
        ..DecodeCtx::default()
    };
    match ClientPacket::decode_with(f.ty, &f.payload, &no_points).unwrap() {
        // A female-only template: gender 1.
        ClientPacket::CreateCharacter(c) => {
            assert_eq!((c.actor_id, c.gender), (2, 1));
            assert!(c.points.is_empty());
            assert_eq!(c.character_name.as_bytes(), b"Robo");
        }
        other => panic!("expected P_CreateCharacter, got {other:?}"),
    }
    p.send(CreateCharacterReply::Created).await;
    assert!(matches!(p.packet().await, ClientPacket::VerifyAccount(_)));
    p.send(VerifyAccountReply::Ok {
        characters: vec![summary("Robo", 2)],
    })
    .await;
    send_sheet(&mut p, vec![]).await;
    assert!(matches!(p.packet().await, ClientPacket::StartGame(s) if s.index == 0));
    p.send(ChangeArea {
        x: 100.0,
        y: 1.0,
        z: 50.0,
        area: "Plains".into(),
        ..ChangeArea::default()
    })
    .await;
    for i in 0..12 {
        p.send(StartGameReply::ActionBar {
            first_slot: i * 3,
            slots: vec![ActionSlot::Empty; 3],
        })
        .await;
    }
    p.send(StartGameReply::RuntimeId { runtime_id: 7 }).await;
    p.send(ChatMessageS2C::system("Welcome")).await;
    // Updates walk a circle of radius 5 through the spawn point.
    for _ in 0..3 {
        let d = p.next_datagram().await;
        assert_eq!(&d[..3], &[23, 0, 14]);
        let u = StandardUpdateC2S::decode_fast(&d[3..]).unwrap();
        let r = ((u.x - 95.0).powi(2) + (u.z - 50.0).powi(2)).sqrt();
        assert!((r - 5.0).abs() < 0.01, "{u:?}");
        assert_eq!(u.y, 1.0);
    }
    p.datagram(&[update(7)]);
    p.expect_stream_end().await;
    assert_eq!(p.client_close_code().await, Some(0));

    let out = timeout(WAIT, bin).await.unwrap().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for needle in [
        "created Robo: Elf Ranger (template 2)",
        "RuntimeID 7 in Plains",
        "P_ChangeArea",
        "P_ChatMessage",
        "datagram  P_StandardUpdate",
        "quest log: empty",
    ] {
        assert!(stdout.contains(needle), "{needle:?} not in:\n{stdout}");
    }
}
