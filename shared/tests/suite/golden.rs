//! Golden byte vectors: every vector of golden-vectors.md and reference §11, plus our own
//! for every packet type. Each decodes to the given fields, encodes back to the same
//! bytes, and survives the JSON form used by `rcwire`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use shared::frame::{self, FrameDecoder};
use shared::proto::*;
use shared::wire::*;

fn unhex(s: &str) -> Vec<u8> {
    let clean: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    hex::decode(clean).unwrap()
}

/// Decodes `bytes` (type byte first) as a server packet, checks it equals `want`, encodes
/// back to the same bytes, and round-trips through JSON.
#[track_caller]
fn check_server(bytes: &[u8], want: ServerPacket) {
    let got = ServerPacket::decode_packet(bytes).unwrap();
    assert_eq!(got, want, "decode");
    assert_eq!(got.to_bytes(), bytes, "encode");
    let json = got.to_json();
    assert_eq!(json["id"], u64::from(bytes[0]), "json id");
    let back = ServerPacket::from_json(&json).unwrap();
    assert_eq!(back.to_bytes(), bytes, "json round trip: {json}");
}

#[track_caller]
fn check_client(bytes: &[u8], want: ClientPacket) {
    let got = ClientPacket::decode_packet(bytes).unwrap();
    assert_eq!(got, want, "decode");
    assert_eq!(got.to_bytes(), bytes, "encode");
    let json = got.to_json();
    let back = ClientPacket::from_json(&json).unwrap();
    assert_eq!(back.to_bytes(), bytes, "json round trip: {json}");
}

#[track_caller]
fn check_server_value(p: ServerPacket) {
    let bytes = p.to_bytes();
    check_server(&bytes, p);
}

fn creds(user: &str, pw: &str) -> Creds {
    Creds::from_password(user, pw)
}

// ---------------------------------------------------------------- golden-vectors.md

#[test]
fn standard_update_c2s_golden() {
    let bytes = unhex("0e 00 00 20 41 00 00 b0 c0 00 00 00 40 00 00 10 41 00 00 a0 c0 01 00");
    let want = StandardUpdateC2S {
        dest_x: 10.0,
        dest_z: -5.5,
        y: 2.0,
        x: 9.0,
        z: -5.0,
        is_running: 1,
        walking_backward: 0,
    };
    check_client(&bytes, ClientPacket::StandardUpdate(want));
    assert_eq!(StandardUpdateC2S::decode_fast(&bytes[1..]).unwrap(), want);
    assert_eq!(want.to_payload(), bytes[1..]);
}

#[test]
fn standard_update_s2c_energy_golden() {
    let bytes = unhex("0e 07 00 00 00 10 41 00 00 a0 c0 01 00 00 00 20 41 00 00 b0 c0 00 00 64 00");
    let want = StandardUpdateS2C {
        runtime_id: 7,
        x: 9.0,
        z: -5.0,
        is_running: 1,
        walking_backward: 0,
        dest_x: 10.0,
        dest_z: -5.5,
        mount: 0,
        tail: UpdateTail::Energy(100),
    };
    check_server(&bytes, ServerPacket::StandardUpdate(want));
    // The body is the first 22 payload bytes; the frame adds the length prefix.
    assert_eq!(want.body(), bytes[1..23]);
    let mut f = Vec::new();
    want.write_frame(&mut f);
    assert_eq!(f[..2], [25, 0]);
    assert_eq!(f[2..], bytes[..]);
}

#[test]
fn standard_update_s2c_tails_by_length() {
    let base = StandardUpdateS2C {
        runtime_id: 9,
        x: 1.5,
        z: 2.5,
        is_running: 0,
        walking_backward: 1,
        dest_x: 3.0,
        dest_z: 4.0,
        mount: 12,
        tail: UpdateTail::None,
    };
    let none = ServerPacket::StandardUpdate(base).to_bytes();
    assert_eq!(none.len(), 23);
    let fly = ServerPacket::StandardUpdate(StandardUpdateS2C {
        tail: UpdateTail::FlyY(2.0),
        ..base
    })
    .to_bytes();
    assert_eq!(fly.len(), 27);
    assert_eq!(fly[23..], [0, 0, 0, 0x40]);
    check_server_value(ServerPacket::StandardUpdate(base));
    check_server_value(ServerPacket::StandardUpdate(StandardUpdateS2C {
        tail: UpdateTail::FlyY(2.0),
        ..base
    }));
    for bad in [0usize, 21, 23, 25, 27, 30] {
        let e = ServerPacket::decode(14, &vec![0; bad]).unwrap_err();
        assert!(
            matches!(e.kind, DecodeErrorKind::LengthMismatch { .. }),
            "{bad}"
        );
    }
}

#[test]
fn stat_update_a_golden() {
    check_server(
        &unhex("16 41 07 00 00 55 00"),
        ServerPacket::StatUpdate(StatUpdate::Value {
            runtime_id: 7,
            attribute: 0,
            value: 85,
        }),
    );
}

#[test]
fn attack_golden() {
    check_client(
        &unhex("12 07 00"),
        ClientPacket::AttackActor(AttackActorC2S { target: 7 }),
    );
    check_server(
        &unhex("12 48 07 00 0d 00 01"),
        ServerPacket::AttackActor(AttackActorS2C::Hit {
            victim: 7,
            damage: 12,
            damage_type: 1,
        }),
    );
    check_server(
        &unhex("12 59 03 00 00 00 00"),
        ServerPacket::AttackActor(AttackActorS2C::HitYou {
            attacker: 3,
            damage: -1,
            damage_type: 0,
        }),
    );
    check_server(
        &unhex("12 4f 03 00 07 00"),
        ServerPacket::AttackActor(AttackActorS2C::Observed {
            attacker: 3,
            victim: 7,
        }),
    );
}

#[test]
fn actor_dead_and_gone_golden() {
    check_server(
        &unhex("13 07 00 03 00"),
        ServerPacket::ActorDead(ActorDead {
            runtime_id: 7,
            killer: Some(3),
        }),
    );
    check_server(
        &unhex("13 07 00"),
        ServerPacket::ActorDead(ActorDead {
            runtime_id: 7,
            killer: None,
        }),
    );
    check_server(
        &unhex("0d 07 00"),
        ServerPacket::ActorGone(ActorGone {
            runtime_id: 7,
            four_bytes: false,
        }),
    );
    check_server(
        &unhex("0d 07 00 00 00"),
        ServerPacket::ActorGone(ActorGone {
            runtime_id: 7,
            four_bytes: true,
        }),
    );
    assert!(ServerPacket::decode(13, &[7, 0, 0]).is_err());
}

#[test]
fn verify_account_and_start_game_golden() {
    let mut bytes = unhex("02 03 62 6f 62 20");
    bytes.extend_from_slice(b"5ebe2294ecd0e0f08eab7690d2a6ee69");
    check_client(
        &bytes,
        ClientPacket::VerifyAccount(VerifyAccount {
            creds: creds("bob", "secret"),
        }),
    );
    let mut start = bytes.clone();
    start[0] = 0x0c;
    start.push(0);
    check_client(
        &start,
        ClientPacket::StartGame(StartGame {
            creds: creds("bob", "secret"),
            index: 0,
        }),
    );
}

#[test]
fn change_area_golden() {
    let bytes = unhex(
        "09 cd cc 52 c2 33 33 53 40 cd cc b0 42 00 00 b0 c1 01 2c 01 34 12 00 00 00 06 50 6c 61 69 6e 73",
    );
    check_server(
        &bytes,
        ServerPacket::ChangeArea(ChangeArea {
            x: -52.7,
            y: 3.3,
            z: 88.4,
            yaw: -22.0,
            pvp: 1,
            gravity: 300,
            instance_handle: 0x1234,
            weather: 0,
            area: "Plains".into(),
        }),
    );
    // The JSON shows the short decimal form.
    let json = ServerPacket::decode_packet(&bytes).unwrap().to_json();
    assert_eq!(json["x"], serde_json::json!(-52.7));
    assert_eq!(json["name"], "P_ChangeArea");
}

#[test]
fn clamp_world_coord_golden() {
    for (v, want) in [
        (0.0, 0.0),
        (1234.5, 1234.5),
        (99999.0, 99999.0),
        (-99999.0, -99999.0),
        (100000.0, 0.0),
        (-100000.0, 0.0),
        (1e6, 0.0),
        (-1e6, 0.0),
        (200000.0, 0.0),
        (f32::NAN, 0.0),
        (f32::INFINITY, 0.0),
        (f32::NEG_INFINITY, 0.0),
    ] {
        assert_eq!(clamp_world_coord(v).to_bits(), f32::to_bits(want), "{v}");
    }
}

#[test]
fn clamp_sane_float_golden() {
    for (v, want) in [
        (1234567.0, 1234567.0),
        (1e10, 0.0),
        (-1e10, 0.0),
        (200000.0, 200000.0),
        (f32::NAN, 0.0),
        (f32::INFINITY, 0.0),
        (1e9, 0.0),
        (-1e9, 0.0),
    ] {
        assert_eq!(clamp_sane_float(v).to_bits(), f32::to_bits(want), "{v}");
    }
}

// ---------------------------------------------------------------- reference §11

#[test]
fn enet_framing_vectors() {
    // frame(14, [DE AD]) = 0E DE AD: type byte then payload.
    let raw = ServerPacket::Raw {
        id: 14,
        bytes: HexBytes(vec![0xde, 0xad]),
    };
    assert_eq!(raw.to_bytes(), [0x0e, 0xde, 0xad]);
    // NewClient = 00.
    assert_eq!(ClientPacket::NewClient(NewClient {}).to_bytes(), [0]);
    check_client(&[0], ClientPacket::NewClient(NewClient {}));
    // On QUIC the same frame gets a length prefix.
    let mut q = Vec::new();
    frame::write_frame(&mut q, 14, &[0xde, 0xad]).unwrap();
    assert_eq!(q, [3, 0, 0x0e, 0xde, 0xad]);
}

#[test]
fn primitive_vector_11_bytes() {
    let mut v = Vec::new();
    v.put_str8(b"alice");
    v.put_u16(0x1234);
    v.put_u8(7);
    v.put_str8(b"z");
    assert_eq!(v, unhex("05 61 6c 69 63 65 34 12 07 01 7a"));
    let mut r = Reader::new(&v);
    assert_eq!(r.str8().unwrap(), b"alice");
    assert_eq!(r.u16().unwrap(), 0x1234);
    assert_eq!(r.u8().unwrap(), 7);
    assert_eq!(r.str8().unwrap(), b"z");
    r.finish().unwrap();
}

#[test]
fn md5_vectors() {
    assert_eq!(md5_hex(b"abc"), "900150983cd24fb0d6963f7d28e17f72");
    assert_eq!(md5_hex(b""), "d41d8cd98f00b204e9800998ecf8427e");
    assert_eq!(md5_hex(b"secret"), "5ebe2294ecd0e0f08eab7690d2a6ee69");
}

#[test]
fn email_obfuscation_round_trips() {
    let e = b"rust@bot.com";
    let o = obfuscate_email(e);
    assert_eq!(o.len(), e.len());
    assert_eq!(o[0], b'm'.wrapping_sub(26));
    assert_eq!(deobfuscate_email(&o), e);
    let all: Vec<u8> = (0..=255).collect();
    assert_eq!(deobfuscate_email(&obfuscate_email(&all)), all);
}

#[test]
fn rid_7_is_little_endian() {
    let mut v = Vec::new();
    v.put_u16(7);
    assert_eq!(v, [0x07, 0x00]);
    assert_eq!(Reader::new(&[0x07, 0x00]).u16().unwrap(), 7);
}

// ---------------------------------------------------------------- our own vectors

#[test]
fn create_account_vector() {
    let mut bytes = vec![1, 3, b'b', b'o', b'b', 32];
    bytes.extend_from_slice(b"5ebe2294ecd0e0f08eab7690d2a6ee69");
    let email = obfuscate_email(b"rust@bot.com");
    bytes.push(email.len() as u8);
    bytes.extend_from_slice(&email);
    check_client(
        &bytes,
        ClientPacket::CreateAccount(CreateAccount {
            creds: creds("bob", "secret"),
            email: "rust@bot.com".into(),
        }),
    );
    check_server(
        b"\x01Y",
        ServerPacket::CreateAccount(CreateAccountReply::Created),
    );
    check_server(
        b"\x01N",
        ServerPacket::CreateAccount(CreateAccountReply::Refused),
    );
    let e = ServerPacket::decode(1, b"Q").unwrap_err();
    assert_eq!(e.kind, DecodeErrorKind::BadSubCode(b'Q'));
    assert_eq!(e.offset, 0);
    assert!(ServerPacket::decode(1, b"YY").is_err());
}

#[test]
fn verify_account_reply_vectors() {
    let bytes = unhex("02 59 05 41 6c 69 63 65 02 00 01 02 03 04 05");
    check_server(
        &bytes,
        ServerPacket::VerifyAccount(VerifyAccountReply::Ok {
            characters: vec![CharacterSummary {
                name: "Alice".into(),
                actor_id: 2,
                gender: 1,
                face: 2,
                hair: 3,
                beard: 4,
                body: 5,
            }],
        }),
    );
    check_server(
        b"\x02Y",
        ServerPacket::VerifyAccount(VerifyAccountReply::Ok { characters: vec![] }),
    );
    for (c, v) in [
        (b'N', VerifyAccountReply::NoAccount),
        (b'P', VerifyAccountReply::BadPassword),
        (b'B', VerifyAccountReply::Banned),
        (b'L', VerifyAccountReply::LoggedOn),
    ] {
        check_server(&[2, c], ServerPacket::VerifyAccount(v));
    }
    // A truncated entry names the offset.
    let e = ServerPacket::decode(2, &unhex("59 05 41 6c")).unwrap_err();
    assert_eq!(e.offset, 2);
}

#[test]
fn create_character_vectors() {
    let mut bytes = vec![4];
    creds("bob", "secret").write(&mut bytes);
    bytes.extend_from_slice(&[2, 0, 1, 2, 3, 4, 5]);
    bytes.extend_from_slice(&[1u8; 40]);
    bytes.extend_from_slice(b"Hero");
    let want = CreateCharacter {
        creds: creds("bob", "secret"),
        actor_id: 2,
        gender: 1,
        face: 2,
        hair: 3,
        beard: 4,
        body: 5,
        points: vec![1; 40],
        character_name: "Hero".into(),
    };
    check_client(&bytes, ClientPacket::CreateCharacter(want.clone()));
    // Without creation points the name follows the appearance bytes directly.
    let ctx = DecodeCtx {
        create_character_points: false,
        ..DecodeCtx::default()
    };
    let mut short = vec![];
    creds("bob", "secret").write(&mut short);
    short.extend_from_slice(&[2, 0, 1, 2, 3, 4, 5]);
    short.extend_from_slice(b"Hero");
    let got = ClientPacket::decode_with(4, &short, &ctx).unwrap();
    assert_eq!(
        got,
        ClientPacket::CreateCharacter(CreateCharacter {
            points: vec![],
            ..want
        })
    );
    assert_eq!(got.encode_payload_vec(), short);
    for (c, v) in [
        (b'Y', CreateCharacterReply::Created),
        (b'N', CreateCharacterReply::Refused),
        (b'I', CreateCharacterReply::InvalidName),
    ] {
        check_server(&[4, c], ServerPacket::CreateCharacter(v));
    }
}

trait PayloadVec {
    fn encode_payload_vec(&self) -> Vec<u8>;
}
impl PayloadVec for ClientPacket {
    fn encode_payload_vec(&self) -> Vec<u8> {
        let mut v = Vec::new();
        self.encode_payload(&mut v);
        v
    }
}

#[test]
fn delete_character_and_change_password_vectors() {
    let mut bytes = vec![5];
    creds("bob", "x").write(&mut bytes);
    bytes.push(2);
    check_client(
        &bytes,
        ClientPacket::DeleteCharacter(DeleteCharacter {
            creds: creds("bob", "x"),
            index: 2,
        }),
    );
    check_server(
        b"\x05N",
        ServerPacket::DeleteCharacter(DeleteCharacterReply::Refused),
    );
    check_server(
        &[5],
        ServerPacket::DeleteCharacter(DeleteCharacterReply::List { characters: vec![] }),
    );
    check_server(
        &unhex("05 01 41 02 00 00 00 00 00 00"),
        ServerPacket::DeleteCharacter(DeleteCharacterReply::List {
            characters: vec![CharacterSummary {
                name: "A".into(),
                actor_id: 2,
                ..CharacterSummary::default()
            }],
        }),
    );
    let mut bytes = vec![6];
    creds("bob", "x").write(&mut bytes);
    bytes.push(3);
    bytes.extend_from_slice(b"abc");
    check_client(
        &bytes,
        ClientPacket::ChangePassword(ChangePassword {
            creds: creds("bob", "x"),
            new_password_md5: "abc".into(),
        }),
    );
    for (c, v) in [
        (b'Y', ChangePasswordReply::Changed),
        (b'P', ChangePasswordReply::BadPassword),
        (b'N', ChangePasswordReply::Refused),
    ] {
        check_server(&[6, c], ServerPacket::ChangePassword(v));
    }
}

#[test]
fn fetch_character_vectors() {
    let mut bytes = vec![3];
    creds("bob", "secret").write(&mut bytes);
    bytes.push(1);
    check_client(
        &bytes,
        ClientPacket::FetchCharacter(FetchCharacter {
            creds: creds("bob", "secret"),
            index: 1,
        }),
    );
    let c1 = FetchCharacterReply::Stats {
        gold: 50,
        reputation: -3,
        level: 2,
        xp: 1234,
        home_faction: 1,
        attributes: (0..40)
            .map(|i| AttributePair { value: i, max: 100 })
            .collect(),
    };
    let b = ServerPacket::FetchCharacter(c1.clone()).to_bytes();
    assert_eq!(b.len(), 1 + 2 + 4 + 2 + 2 + 4 + 1 + 160);
    assert_eq!(b[1..3], *b"C1");
    assert_eq!(b[3..7], [50, 0, 0, 0]);
    assert_eq!(b[7..9], [0xfd, 0xff]);
    check_server_value(ServerPacket::FetchCharacter(c1));

    let item = ItemString {
        item_id: 7,
        attributes: vec![5000; 40],
        health: 100,
    };
    let c3 = FetchCharacterReply::Inventory {
        slots: vec![
            Some(InventorySlot {
                slot: 0,
                item: item.clone(),
                amount: 1,
            }),
            None,
            Some(InventorySlot {
                slot: 2,
                item,
                amount: 5,
            }),
        ],
    };
    let b = ServerPacket::FetchCharacter(c3.clone()).to_bytes();
    assert_eq!(b.len(), 3 + (1 + 83 + 2) * 2 + 1);
    assert_eq!(b[3 + 86], 99);
    check_server_value(ServerPacket::FetchCharacter(c3));
    check_server_value(ServerPacket::FetchCharacter(FetchCharacterReply::Spells {
        spells: vec![KnownSpell {
            level: 1,
            id: 3,
            thumb: 4,
            recharge: 1000,
            name: "Fireball".into(),
            description: "Burns.".into(),
            memorised: 1,
        }],
    }));
    check_server_value(ServerPacket::FetchCharacter(FetchCharacterReply::Quests {
        quests: vec![QuestEntry {
            name: "Rats".into(),
            status: "Kill 10 rats".into(),
        }],
    }));
    check_server(
        &unhex("03 46 02 00 01 00"),
        ServerPacket::FetchCharacter(FetchCharacterReply::Finished {
            quests: 2,
            spells: 1,
        }),
    );
    check_server(
        b"\x03N",
        ServerPacket::FetchCharacter(FetchCharacterReply::Failed),
    );
    let e = ServerPacket::decode(3, b"C2").unwrap_err();
    assert_eq!((e.offset, e.kind), (1, DecodeErrorKind::BadSubCode(b'2')));
}

fn sample_item(id: u16, item_type: u8) -> ItemDef {
    ItemDef {
        id,
        item_type,
        takes_damage: 1,
        value: 10,
        mass: 2,
        thumb: 3,
        gubbins: [0, 1, 0, 0, 0, 0],
        male_mesh: 4,
        female_mesh: 5,
        slot_type: 1,
        stackable: 0,
        attributes: vec![5000; 40],
        name: "Sword".into(),
        exclusive_race: "".into(),
        exclusive_class: "".into(),
        tail: match item_type {
            1 => ItemTail::Weapon {
                damage: 12,
                damage_type: 1,
                weapon_type: 1,
                range: 7.5,
            },
            2 => ItemTail::Armour { level: 3 },
            4 | 5 => ItemTail::Consumable { seconds: 30 },
            6 => ItemTail::Image { image_id: 9 },
            _ => ItemTail::None,
        },
        misc: "m".into(),
    }
}

fn sample_template(id: u16) -> ActorTemplateDef {
    ActorTemplateDef {
        id,
        playable: 1,
        poly_collision: 0,
        meshes: [1; 8],
        beards: [2; 5],
        male_hair: [3; 5],
        female_hair: [4; 5],
        male_faces: [5; 5],
        female_faces: [6; 5],
        male_bodies: [7; 5],
        female_bodies: [8; 5],
        male_speech: [9; 16],
        female_speech: [10; 16],
        rideable: 0,
        trade: 2,
        blood: 11,
        aggressiveness: 2,
        genders: 0,
        environment: 3,
        inventory_slots: 0xffff,
        male_anim: 1,
        female_anim: 2,
        scale: 1.25,
        faction: 3,
        attributes: vec![
            AttributePair {
                value: 50,
                max: 100
            };
            40
        ],
        race: "Human".into(),
        class: "Warrior".into(),
        description: "A brave warrior.".into(),
    }
}

#[test]
fn fetch_actors_vectors() {
    check_client(&[7], ClientPacket::FetchActors(FetchActors {}));
    assert!(ClientPacket::decode(7, &[1]).is_err());

    let a = FetchActorsReply::Attributes {
        assignment: 10,
        attributes: (0..40)
            .map(|i| AttributeDef {
                is_skill: u8::from(i == 11),
                hidden: 0,
                name: format!("Attr{i}").as_str().into(),
            })
            .collect(),
    };
    let b = ServerPacket::FetchActors(a.clone()).to_bytes();
    assert_eq!(b[..3], [7, b'A', 10]);
    check_server_value(ServerPacket::FetchActors(a));
    check_server_value(ServerPacket::FetchActors(FetchActorsReply::DamageTypes {
        names: (0..20).map(|i| format!("D{i}").as_str().into()).collect(),
    }));
    check_server_value(ServerPacket::FetchActors(FetchActorsReply::Environment {
        year: 1,
        day: 2,
        hour: 3,
        minute: 4,
        time_factor: 10,
        seasons: (0..12)
            .map(|i| SeasonDef {
                name: "Spring".into(),
                start_day: i,
                dusk_hour: 20,
                dawn_hour: 6,
            })
            .collect(),
        months: (0..20)
            .map(|i| MonthDef {
                name: "M".into(),
                start_day: i,
            })
            .collect(),
    }));
    let items = FetchActorsReply::Items {
        items: (1..=7).map(|t| sample_item(u16::from(t), t)).collect(),
    };
    let b = ServerPacket::FetchActors(items.clone()).to_bytes();
    assert_eq!(b[..3], [7, b'I', b'N']);
    check_server_value(ServerPacket::FetchActors(items));
    check_server(
        &unhex("07 49 59 06 00"),
        ServerPacket::FetchActors(FetchActorsReply::ItemsDone { total: 6 }),
    );
    check_server(
        &unhex("07 46 05 00 48 65 6c 6c 6f 02 01 41 42"),
        ServerPacket::FetchActors(FetchActorsReply::Factions {
            factions: vec![
                FactionDef {
                    index: 0,
                    name: "Hello".into(),
                },
                FactionDef {
                    index: 1,
                    name: "AB".into(),
                },
            ],
        }),
    );
    check_server_value(ServerPacket::FetchActors(FetchActorsReply::Actors {
        actors: vec![sample_template(1), sample_template(2)],
    }));
    check_server(
        &unhex("07 59 02 00"),
        ServerPacket::FetchActors(FetchActorsReply::ActorsDone { total: 2 }),
    );
    let e = ServerPacket::decode(7, b"IX").unwrap_err();
    assert_eq!((e.offset, e.kind), (1, DecodeErrorKind::BadSubCode(b'X')));
}

fn sample_new_actor(gender: Option<u8>) -> NewActor {
    NewActor {
        instance_handle: 0x1234,
        runtime_id: 7,
        level: 3,
        xp: 250,
        template_id: 2,
        x: 1.0,
        y: 2.0,
        z: 3.0,
        yaw: 90.0,
        human: 1,
        actor_name: "Alice".into(),
        tag: "".into(),
        gender,
        reputation: -5,
        face: 1,
        hair: 2,
        body: 3,
        beard: 4,
        speed: 10,
        speed_max: 10,
        health: 80,
        health_max: 100,
        weapon: 65535,
        shield: 65535,
        hat: 65535,
        chest: 12,
        home_faction: 0,
        ratings: vec![100; 100],
    }
}

#[test]
fn new_actor_gender_by_length_and_context() {
    let with = sample_new_actor(Some(1));
    let without = sample_new_actor(None);
    let bw = ServerPacket::NewActor(with.clone()).to_bytes();
    let bo = ServerPacket::NewActor(without.clone()).to_bytes();
    assert_eq!(bw.len(), bo.len() + 1);
    assert_eq!(bo.len(), 1 + 30 + 1 + 6 + 1 + 127);
    check_server(&bw, ServerPacket::NewActor(with.clone()));
    check_server(&bo, ServerPacket::NewActor(without));
    // With a context the template decides; a contradicting length is an error.
    let gendered = |t: u16| t == 2;
    let ctx = DecodeCtx {
        template_has_gender: Some(&gendered),
        ..DecodeCtx::default()
    };
    assert_eq!(
        ServerPacket::decode_with(11, &bw[1..], &ctx).unwrap(),
        ServerPacket::NewActor(with)
    );
    assert!(ServerPacket::decode_with(11, &bo[1..], &ctx).is_err());
    // One byte short of either form.
    let e = ServerPacket::decode(11, &bo[1..bo.len() - 1]).unwrap_err();
    assert!(matches!(e.kind, DecodeErrorKind::LengthMismatch { .. }));
}

#[test]
fn start_game_reply_vectors() {
    check_server(
        &unhex("0c 07 00"),
        ServerPacket::StartGame(StartGameReply::RuntimeId { runtime_id: 7 }),
    );
    check_server(b"\x0cN", ServerPacket::StartGame(StartGameReply::Failed));
    check_server(
        &unhex("0c 03  06 00 53 48 65 61 6c 21  03 00 49 05 00  00 00"),
        ServerPacket::StartGame(StartGameReply::ActionBar {
            first_slot: 3,
            slots: vec![
                ActionSlot::Spell("Heal!".into()),
                ActionSlot::Item(5),
                ActionSlot::Empty,
            ],
        }),
    );
    check_server(
        &unhex("0c 00  02 00 49 01  00 00  00 00"),
        ServerPacket::StartGame(StartGameReply::ActionBar {
            first_slot: 0,
            slots: vec![
                ActionSlot::Other(HexBytes(vec![0x49, 0x01])),
                ActionSlot::Empty,
                ActionSlot::Empty,
            ],
        }),
    );
    assert!(ServerPacket::decode(12, &[1, 2, 3]).is_err());
    assert!(ServerPacket::decode(12, b"X").is_err());
}

#[test]
fn chat_vectors() {
    check_client(
        b"\x10/yell hi",
        ClientPacket::ChatMessage(ChatMessageC2S {
            text: "/yell hi".into(),
        }),
    );
    check_server(
        b"\x10\xfeWelcome",
        ServerPacket::ChatMessage(ChatMessageS2C::system("Welcome")),
    );
    for (b, c) in [
        (253u8, ChatColour::Red),
        (252, ChatColour::Magenta),
        (251, ChatColour::Green),
    ] {
        check_server(
            &[16, b, b'x'],
            ServerPacket::ChatMessage(ChatMessageS2C {
                colour: c,
                text: "x".into(),
            }),
        );
    }
    check_server(
        &unhex("10 fa ff e1 64 43 72 69 74"),
        ServerPacket::ChatMessage(ChatMessageS2C {
            colour: ChatColour::Rgb(255, 225, 100),
            text: "Crit".into(),
        }),
    );
    check_server(
        b"\x10<Bob> hi",
        ServerPacket::ChatMessage(ChatMessageS2C {
            colour: ChatColour::Plain,
            text: "<Bob> hi".into(),
        }),
    );
    check_server(
        &[16],
        ServerPacket::ChatMessage(ChatMessageS2C {
            colour: ChatColour::Plain,
            text: "".into(),
        }),
    );
    // Latin-1 bytes survive JSON.
    check_server(
        &[16, 254, 0xe9, 0x00, 0x80],
        ServerPacket::ChatMessage(ChatMessageS2C {
            colour: ChatColour::System,
            text: RcString(vec![0xe9, 0x00, 0x80]),
        }),
    );
    assert!(ServerPacket::decode(16, &[250, 1]).is_err());
}

/// Script dialogs (reference §9.21), with the spec's vectors.
#[test]
fn dialog_vectors() {
    check_server(
        &unhex("15 4e 10 00 00 00 07 00 ff ff 54 72 61 69 6e 65 72"),
        ServerPacket::Dialog(DialogS2C::Open {
            script: 16,
            context: 7,
            background: 65535,
            title: "Trainer".into(),
        }),
    );
    check_client(
        &unhex("15 4f 10 00 00 00 02"),
        ClientPacket::Dialog(DialogC2S::Chosen {
            script: 16,
            option: 2,
        }),
    );
    check_client(
        &unhex("15 4e 10 00 00 00 03 00 00 00"),
        ClientPacket::Dialog(DialogC2S::Opened {
            script: 16,
            dialog: 3,
        }),
    );
    check_client(
        &unhex("15 54 10 00 00 00"),
        ClientPacket::Dialog(DialogC2S::TextShown { script: 16 }),
    );
    check_server(
        &unhex("15 54 ff 80 00 03 00 00 00 48 69"),
        ServerPacket::Dialog(DialogS2C::Text {
            r: 255,
            g: 128,
            b: 0,
            dialog: 3,
            text: "Hi".into(),
        }),
    );
    check_server(
        &unhex("15 4f 03 00 00 00 03 59 65 73 02 4e 6f"),
        ServerPacket::Dialog(DialogS2C::Options {
            dialog: 3,
            options: vec!["Yes".into(), "No".into()],
        }),
    );
    check_server(
        &unhex("15 43 03 00 00 00"),
        ServerPacket::Dialog(DialogS2C::Close { dialog: 3 }),
    );
    // An option cut short, and an unknown sub-code, are refused.
    assert!(ServerPacket::decode(21, &unhex("4f 03 00 00 00 05 59")).is_err());
    assert!(ClientPacket::decode(21, &unhex("58 10 00 00 00")).is_err());
}

/// Abilities (reference §9.26-9.28), with the spec's vectors.
#[test]
fn spell_vectors() {
    check_server(
        &unhex("1a 4c 02 00 00 00 46 69 72 65 62 61 6c 6c"),
        ServerPacket::KnownSpellUpdate(KnownSpellUpdate::Level {
            level: 2,
            spell_name: "Fireball".into(),
        }),
    );
    check_server(
        &unhex("1a 44 46 69 72 65 62 61 6c 6c"),
        ServerPacket::KnownSpellUpdate(KnownSpellUpdate::Deleted {
            spell_name: "Fireball".into(),
        }),
    );
    check_server(
        &unhex("1a 41 01 00 00 00 0f 00 40 1f 02 00 46 62 01 00 44 00"),
        ServerPacket::KnownSpellUpdate(KnownSpellUpdate::Added {
            spell: KnownSpell {
                level: 1,
                id: 0,
                thumb: 15,
                recharge: 8000,
                name: "Fb".into(),
                description: "D".into(),
                memorised: 0,
            },
        }),
    );
    check_client(
        &unhex("1b 46 00 00 07 00"),
        ClientPacket::SpellUpdate(SpellUpdate::Fire {
            spell_id: 0,
            target: Some(7),
        }),
    );
    check_client(
        &unhex("1b 46 03 00"),
        ClientPacket::SpellUpdate(SpellUpdate::Fire {
            spell_id: 3,
            target: None,
        }),
    );
    check_client(
        &unhex("1b 4d 02 00"),
        ClientPacket::SpellUpdate(SpellUpdate::Memorise { index: 2 }),
    );
    check_client(
        &unhex("1b 55 02 00"),
        ClientPacket::SpellUpdate(SpellUpdate::Unmemorise { index: 2 }),
    );
    // A cast with half a target, and an unknown sub-code, are refused.
    assert!(ClientPacket::decode(27, &unhex("46 00 00 07")).is_err());
    assert!(ClientPacket::decode(27, &unhex("58 00 00")).is_err());
    assert!(ClientPacket::decode(27, &unhex("4d 02")).is_err());
    check_server(
        &unhex("1c 0a 00 d0 07 00 00 07 00 00 00 00 00 00 00 80 3f 00 00 00 00 46 69 72 65"),
        ServerPacket::CreateEmitter(CreateEmitter {
            texture: 10,
            lifetime_ms: 2000,
            runtime_id: 7,
            offset_x: 0.0,
            offset_y: 1.0,
            offset_z: 0.0,
            emitter: "Fire".into(),
        }),
    );
}

#[test]
fn small_server_packets_vectors() {
    check_server(
        &unhex("11 34 12 00 00 02"),
        ServerPacket::WeatherChange(WeatherChange {
            instance_handle: 0x1234,
            weather: 2,
        }),
    );
    check_server(
        &unhex("18 55 e8 03 00 00"),
        ServerPacket::GoldChange(GoldChange::Up { amount: 1000 }),
    );
    check_server(
        &unhex("18 44 05 00 00 00"),
        ServerPacket::GoldChange(GoldChange::Down { amount: 5 }),
    );
    check_server(
        &unhex("19 07 00 03 42 6f 62 5b 47 4d 5d"),
        ServerPacket::NameChange(NameChange {
            runtime_id: 7,
            actor_name: "Bob".into(),
            tag: "[GM]".into(),
        }),
    );
    check_server(
        &unhex("24 45 02 e2 ff ff ff"),
        ServerPacket::ActorEffect(ActorEffect::Delta {
            attr: 2,
            delta: -30,
        }),
    );
    check_server(
        &unhex("24 41 05 00 00 00 0c 00 50 6f 74"),
        ServerPacket::ActorEffect(ActorEffect::Added {
            handle: 5,
            icon: 12,
            effect_name: "Pot".into(),
        }),
    );
    {
        let mut deltas = vec![0i32; 40];
        deltas[0] = 20;
        let mut bytes = unhex("24 52 05 00 00 00 14 00 00 00");
        bytes.extend(std::iter::repeat_n(0u8, 39 * 4));
        check_server(
            &bytes,
            ServerPacket::ActorEffect(ActorEffect::Removed { handle: 5, deltas }),
        );
    }
    check_server(
        &unhex("20 4d 64 00 00 00"),
        ServerPacket::XpUpdate(XpUpdate::Gained { amount: 100 }),
    );
    check_server(
        &unhex("20 42 03"),
        ServerPacket::XpUpdate(XpUpdate::BarLevel { bar_level: 3 }),
    );
    check_server(
        &unhex("20 55 05 00"),
        ServerPacket::XpUpdate(XpUpdate::Level { level: 5 }),
    );
    check_server(
        &unhex("20 4c 07 00 05 00"),
        ServerPacket::XpUpdate(XpUpdate::LevelUp {
            runtime_id: 7,
            level: 5,
        }),
    );
    check_server(
        &unhex("25 01 00 02 00 03 00 04 00 05 00 01 0a 02 45 31 45 32"),
        ServerPacket::Projectile(Projectile {
            source: 1,
            target: 2,
            mesh: 3,
            texture1: 4,
            texture2: 5,
            homing: 1,
            speed: 10,
            emitter1: "E1".into(),
            emitter2: "E2".into(),
        }),
    );
    check_server(
        &unhex("26 03 42 6f 62 03 41 6e 6e"),
        ServerPacket::PartyUpdate(PartyUpdate {
            members: vec!["Bob".into(), "Ann".into()],
        }),
    );
    check_server(
        &unhex("2e 07 00"),
        ServerPacket::Jump(JumpS2C { runtime_id: 7 }),
    );
    check_server(
        &unhex("30 07 00 f6 ff ff ff ff 00 00"),
        ServerPacket::FloatingNumber(FloatingNumber {
            runtime_id: 7,
            amount: -10,
            r: 255,
            g: 0,
            b: 0,
        }),
    );
    check_server(&[60], ServerPacket::KickedPlayer(KickedPlayer {}));
    assert!(ServerPacket::decode(60, &[0]).is_err());
    check_server(
        &unhex("16 4d 07 00 00 64 00"),
        ServerPacket::StatUpdate(StatUpdate::Max {
            runtime_id: 7,
            attribute: 0,
            value: 100,
        }),
    );
    check_server(
        &unhex("16 52 07 00 fb ff"),
        ServerPacket::StatUpdate(StatUpdate::Reputation {
            runtime_id: 7,
            value: -5,
        }),
    );
}

#[test]
fn reposition_actor_vectors() {
    check_server(
        &unhex("31 4d 07 00 00 00 80 3f 00 00 00 40 00 00 40 40 00 01"),
        ServerPacket::RepositionActor(RepositionActor::Move {
            runtime_id: 7,
            x: 1.0,
            y: 2.0,
            z: 3.0,
            flag1: 0,
            flag2: 1,
        }),
    );
    check_server(
        &unhex("31 52 07 00 00 00 b4 42"),
        ServerPacket::RepositionActor(RepositionActor::Rotate {
            runtime_id: 7,
            yaw: 90.0,
        }),
    );
    check_server(
        &unhex("31 07 00 00 00 80 3f 00 00 00 40 00 00 40 40 00"),
        ServerPacket::RepositionActor(RepositionActor::SetArea {
            runtime_id: 7,
            x: 1.0,
            y: 2.0,
            z: 3.0,
            flag: 0,
        }),
    );
    check_client(
        &[49],
        ClientPacket::RepositionActor(RepositionAck {
            bytes: HexBytes(vec![]),
        }),
    );
}

#[test]
fn animate_actor_vectors() {
    // AnimateActor(a, "Wave", 1.5, 1) for RuntimeID 7.
    check_server(
        &unhex("1e 07 00 01 00 00 c0 3f 57 61 76 65"),
        ServerPacket::AnimateActor(AnimateActor {
            runtime_id: 7,
            fixed_speed: 1,
            speed: 1.5,
            animation: "Wave".into(),
        }),
    );
    // The name may be empty; the seven fixed bytes may not be short.
    check_server(
        &unhex("1e 07 00 00 00 00 80 bf"),
        ServerPacket::AnimateActor(AnimateActor {
            runtime_id: 7,
            fixed_speed: 0,
            speed: -1.0,
            animation: RcString(vec![]),
        }),
    );
    assert_eq!(
        ServerPacket::decode(30, &unhex("07 00 00 00 00 80"))
            .unwrap_err()
            .kind,
        DecodeErrorKind::UnexpectedEnd { needed: 1 }
    );
    assert!(ServerPacket::decode(30, &[]).is_err());
}

#[test]
fn appearance_update_vectors() {
    check_server(
        &unhex("27 43 07 00 0c 00"),
        ServerPacket::AppearanceUpdate(AppearanceUpdate::ChangeActor {
            runtime_id: 7,
            template_id: 12,
        }),
    );
    check_server(
        &unhex("27 47 07 00 01"),
        ServerPacket::AppearanceUpdate(AppearanceUpdate::Gender {
            runtime_id: 7,
            gender: 1,
        }),
    );
    check_server(
        &unhex("27 44 07 00 02"),
        ServerPacket::AppearanceUpdate(AppearanceUpdate::Beard {
            runtime_id: 7,
            beard: 2,
        }),
    );
    check_server(
        &unhex("27 48 07 00 03"),
        ServerPacket::AppearanceUpdate(AppearanceUpdate::Hair {
            runtime_id: 7,
            hair: 3,
        }),
    );
    check_server(
        &unhex("27 46 07 00 04"),
        ServerPacket::AppearanceUpdate(AppearanceUpdate::Face {
            runtime_id: 7,
            face: 4,
        }),
    );
    check_server(
        &unhex("27 42 07 00 05"),
        ServerPacket::AppearanceUpdate(AppearanceUpdate::Body {
            runtime_id: 7,
            body: 5,
        }),
    );
    let p = ServerPacket::AppearanceUpdate(AppearanceUpdate::Hair {
        runtime_id: 7,
        hair: 3,
    });
    assert_eq!(
        p.to_json(),
        serde_json::json!({"name":"P_AppearanceUpdate","id":39,"sub":"H","runtime_id":7,"hair":3})
    );
    // Unknown sub-code, wrong lengths.
    assert_eq!(
        ServerPacket::decode(39, &unhex("58 07 00 01"))
            .unwrap_err()
            .kind,
        DecodeErrorKind::BadSubCode(b'X')
    );
    assert_eq!(
        ServerPacket::decode(39, &unhex("43 07 00 0c"))
            .unwrap_err()
            .kind,
        DecodeErrorKind::UnexpectedEnd { needed: 1 }
    );
    assert_eq!(
        ServerPacket::decode(39, &unhex("47 07 00 01 00"))
            .unwrap_err()
            .kind,
        DecodeErrorKind::TrailingBytes { extra: 1 }
    );
    assert!(ServerPacket::decode(39, &[]).is_err());
}

#[test]
fn small_client_packets_vectors() {
    check_client(
        &unhex("14 07 00"),
        ClientPacket::RightClick(RightClick { target: 7 }),
    );
    assert!(ClientPacket::decode(20, &[7, 0, 0]).is_err());
    check_client(&[46], ClientPacket::Jump(JumpC2S {}));
    check_client(&[47], ClientPacket::Dismount(Dismount {}));
    check_client(
        &[9, 1],
        ClientPacket::ChangeArea(ChangeAreaAck {
            bytes: HexBytes(vec![1]),
        }),
    );
}

#[test]
fn raw_for_unknown_ids() {
    // 54 is no Realm Crafter id.
    check_server(
        &[54, 1, 2, 3],
        ServerPacket::Raw {
            id: 54,
            bytes: HexBytes(vec![1, 2, 3]),
        },
    );
    check_client(
        &[200, 1, 0, 0, 0],
        ClientPacket::Raw {
            id: 200,
            bytes: HexBytes(vec![1, 0, 0, 0]),
        },
    );
    // 200 (`PlayerTimedOut`, a local ENet event) has a Realm Crafter name but no codec.
    let p = ServerPacket::decode(200, &[]).unwrap();
    assert_eq!(p.name(), "PlayerTimedOut");
    assert_eq!(ServerPacket::decode(99, &[]).unwrap().name(), "Raw");
}

#[test]
fn names_and_ids() {
    let p = ServerPacket::StandardUpdate(StandardUpdateS2C::default());
    assert_eq!((p.id(), p.name()), (14, "P_StandardUpdate"));
    assert_eq!(packet_name(22), Some("P_StatUpdate"));
    assert_eq!(<StatUpdate as Packet>::NAME, "P_StatUpdate");
}

#[test]
fn json_shape() {
    let p = ServerPacket::StatUpdate(StatUpdate::Value {
        runtime_id: 7,
        attribute: 0,
        value: 85,
    });
    assert_eq!(
        p.to_json(),
        serde_json::json!({"name":"P_StatUpdate","id":22,"sub":"A","runtime_id":7,"attribute":0,"value":85})
    );
    // Wrong id is refused; missing id is fine.
    let bad = serde_json::json!({"name":"P_StatUpdate","id":23,"sub":"A","runtime_id":7,"attribute":0,"value":85});
    assert!(ServerPacket::from_json(&bad).is_err());
    let no_id = serde_json::json!({"name":"P_KickedPlayer"});
    assert_eq!(
        ServerPacket::from_json(&no_id).unwrap(),
        ServerPacket::KickedPlayer(KickedPlayer {})
    );
    let with_id = serde_json::json!({"name":"P_KickedPlayer","id":60});
    assert!(ServerPacket::from_json(&with_id).is_ok());
    let raw = serde_json::json!({"name":"Raw","id":15,"bytes":"0102"});
    assert_eq!(
        ServerPacket::from_json(&raw).unwrap().to_bytes(),
        [15, 1, 2]
    );
}

#[test]
fn non_finite_floats_survive_json() {
    for bits in [
        0x7fc0_0000u32,
        0x7f80_0001,
        0xffc0_1234,
        0x7f80_0000,
        0xff80_0000,
        0x8000_0000,
    ] {
        let p = ServerPacket::StandardUpdate(StandardUpdateS2C {
            x: f32::from_bits(bits),
            tail: UpdateTail::FlyY(f32::from_bits(bits)),
            ..StandardUpdateS2C::default()
        });
        let bytes = p.to_bytes();
        let json = p.to_json();
        let back = ServerPacket::from_json(&json).unwrap();
        assert_eq!(back.to_bytes(), bytes, "{bits:#x}: {json}");
    }
}

#[test]
fn frame_decoder_stream_vector() {
    let mut stream = Vec::new();
    frame::write_frame(&mut stream, 2, b"abc").unwrap();
    frame::write_frame(&mut stream, 60, b"").unwrap();
    let mut d = FrameDecoder::new();
    let mut got = Vec::new();
    for b in &stream {
        d.push(std::slice::from_ref(b));
        while let Some(f) = d.next_frame().unwrap() {
            got.push(f.to_owned_frame());
        }
    }
    d.finish().unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!((got[0].ty, &got[0].payload[..]), (2, &b"abc"[..]));
    assert_eq!((got[1].ty, got[1].payload.len()), (60, 0));
}

#[test]
fn encode_frame_and_from() {
    let p: ServerPacket = StatUpdate::Value {
        runtime_id: 7,
        attribute: 0,
        value: 85,
    }
    .into();
    let mut out = Vec::new();
    p.encode_frame(&mut out).unwrap();
    assert_eq!(out, unhex("07 00 16 41 07 00 00 55 00"));
    let mut d = FrameDecoder::new();
    d.push(&out);
    let f = d.next_frame().unwrap().unwrap();
    assert_eq!(ServerPacket::decode(f.ty, f.payload).unwrap(), p);
    let c: ClientPacket = AttackActorC2S { target: 7 }.into();
    let mut out = Vec::new();
    c.encode_frame(&mut out).unwrap();
    assert_eq!(out, unhex("03 00 12 07 00"));
}

// ---------------------------------------------------------------- items, gold and trade
// rc-content-reference §9.15, §9.24, §9.31, §9.35, §9.40-45, §9.61-62: the spec's vectors
// first in each test, then our own for every sub-code and direction.

fn item_string(item_id: u16, health: u8) -> ItemString {
    ItemString {
        item_id,
        attributes: (0..40).map(|i| 5000 + i).collect(),
        health,
    }
}

/// The 83 bytes of [`item_string`].
fn item_bytes(item_id: u16, health: u8) -> Vec<u8> {
    let mut b = item_id.to_le_bytes().to_vec();
    for i in 0..40u16 {
        b.extend_from_slice(&(5000 + i).to_le_bytes());
    }
    b.push(health);
    assert_eq!(b.len(), 83);
    b
}

#[test]
fn inventory_update_c2s_vectors() {
    use InventoryUpdateC2S as I;
    // The spec's: accept an offer into slot 14; drop 1 from slot 14.
    check_client(
        &unhex("0f 47 59 34 12 00 00 0e"),
        ClientPacket::InventoryUpdate(I::OfferAccepted {
            item_handle: 0x1234,
            slot: 14,
        }),
    );
    check_client(
        &unhex("0f 44 0e 01 00"),
        ClientPacket::InventoryUpdate(I::Drop {
            slot: 14,
            amount: 1,
        }),
    );
    check_client(
        &unhex("0f 50 78 56 34 12 0f"),
        ClientPacket::InventoryUpdate(I::Pickup {
            dropped: 0x1234_5678,
            slot: 15,
        }),
    );
    check_client(
        &unhex("0f 47 4e 34 12 00 00"),
        ClientPacket::InventoryUpdate(I::OfferRefused {
            item_handle: 0x1234,
        }),
    );
    check_client(
        &unhex("0f 53 07 00 0e 00 00 00"),
        ClientPacket::InventoryUpdate(I::Swap {
            runtime_id: 7,
            from: 14,
            to: 0,
            amount: 0,
        }),
    );
    check_client(
        &unhex("0f 41 07 00 0f 0e 03 00"),
        ClientPacket::InventoryUpdate(I::Merge {
            runtime_id: 7,
            from: 15,
            to: 14,
            amount: 3,
        }),
    );
    let json = ClientPacket::decode_packet(&unhex("0f 47 59 34 12 00 00 0e"))
        .unwrap()
        .to_json();
    assert_eq!(
        json,
        serde_json::json!({"name":"P_InventoryUpdate","id":15,"sub":"GY","item_handle":0x1234,"slot":14})
    );
    // Unknown sub-codes, a "G" that is neither Y nor N, short and long payloads.
    for (bytes, offset, kind) in [
        ("0f 58", 1, DecodeErrorKind::BadSubCode(b'X')),
        ("0f 47 51 34 12 00 00", 2, DecodeErrorKind::BadSubCode(b'Q')),
    ] {
        let e = ClientPacket::decode_packet(&unhex(bytes)).unwrap_err();
        assert_eq!((e.offset, e.kind), (offset, kind), "{bytes}");
    }
    for bad in [
        "0f",
        "0f 44 0e 01",
        "0f 44 0e 01 00 00",
        "0f 47 59 34 12 00 00",
        "0f 47 4e 34 12 00 00 0e",
        "0f 50 34 12 00 00",
        "0f 53 07 00 0e 0f 01",
        "0f 41 07 00 0e 0f 01 00 00",
    ] {
        assert!(ClientPacket::decode_packet(&unhex(bad)).is_err(), "{bad}");
    }
}

#[test]
fn inventory_update_s2c_vectors() {
    use InventoryUpdateS2C as I;
    // The spec's offer: handle 0x1234, item 3, amount 1.
    check_server(
        &unhex("0f 47 34 12 00 00 03 00 01 00"),
        ServerPacket::InventoryUpdate(I::Offer {
            item_handle: 0x1234,
            item_id: 3,
            amount: 1,
        }),
    );
    check_server(
        &unhex("0f 54 0e 02 00"),
        ServerPacket::InventoryUpdate(I::Taken {
            slot: 14,
            amount: 2,
        }),
    );
    check_server(
        &unhex("0f 52 34 12 00 00 0e"),
        ServerPacket::InventoryUpdate(I::Received {
            dropped: 0x1234,
            slot: 14,
        }),
    );
    check_server(
        &unhex("0f 50 34 12 00 00"),
        ServerPacket::InventoryUpdate(I::Gone { dropped: 0x1234 }),
    );
    // "D": 102 bytes after the type byte.
    let mut d = unhex("0f 44 05 00 00 00 20 41 00 00 80 3f 00 00 b0 c0 34 12 00 00");
    d.extend_from_slice(&item_bytes(9, 100));
    assert_eq!(d.len(), 1 + 102);
    check_server(
        &d,
        ServerPacket::InventoryUpdate(I::Dropped {
            amount: 5,
            x: 10.0,
            y: 1.0,
            z: -5.5,
            dropped: 0x1234,
            item: item_string(9, 100),
        }),
    );
    // "O": weapon, shield, CHEST, HAT (not P_NewActor's hat, chest), then 6 gubbins.
    check_server(
        &unhex("0f 4f 07 00 01 00 02 00 ff ff 04 00 01 00 00 00 01 00"),
        ServerPacket::InventoryUpdate(I::Equipment {
            runtime_id: 7,
            weapon: 1,
            shield: 2,
            chest: 65535,
            hat: 4,
            gubbins: [1, 0, 0, 0, 1, 0],
        }),
    );
    check_server(
        &unhex("0f 48 0e 32"),
        ServerPacket::InventoryUpdate(I::Health {
            slot: 14,
            health: 50,
        }),
    );
    let e = ServerPacket::decode_packet(&unhex("0f 59 00")).unwrap_err();
    assert_eq!((e.offset, e.kind), (1, DecodeErrorKind::BadSubCode(b'Y')));
    for bad in [
        "0f",
        "0f 54 0e 02",
        "0f 47 34 12 00 00 03 00 01",
        "0f 4f 07 00 01 00 02 00 ff ff 04 00 01 00 00 00 01",
        "0f 48 0e 32 00",
    ] {
        assert!(ServerPacket::decode_packet(&unhex(bad)).is_err(), "{bad}");
    }
    // A "D" one byte short of its item string.
    assert!(ServerPacket::decode_packet(&d[..d.len() - 1]).is_err());
}

#[test]
fn gold_change_vectors() {
    // The spec's: U 250.
    check_server(
        &unhex("18 55 fa 00 00 00"),
        ServerPacket::GoldChange(GoldChange::Up { amount: 250 }),
    );
    check_server(
        &unhex("18 44 ff ff ff 7f"),
        ServerPacket::GoldChange(GoldChange::Down {
            amount: i32::MAX as u32,
        }),
    );
    assert!(ServerPacket::decode_packet(&unhex("18 55 fa 00 00")).is_err());
    assert!(ServerPacket::decode_packet(&unhex("18 58 fa 00 00 00")).is_err());
}

#[test]
fn action_bar_item_script_eat_and_health_vectors() {
    check_client(
        &unhex("1f 53 03 46 69 72 65 62 61 6c 6c"),
        ClientPacket::ActionBarUpdate(ActionBarUpdate::Spell {
            slot: 3,
            spell: "Fireball".into(),
        }),
    );
    check_client(
        &unhex("1f 53 23"),
        ClientPacket::ActionBarUpdate(ActionBarUpdate::Spell {
            slot: 35,
            spell: "".into(),
        }),
    );
    check_client(
        &unhex("1f 49 04 07 00"),
        ClientPacket::ActionBarUpdate(ActionBarUpdate::Item {
            slot: 4,
            item_id: 7,
        }),
    );
    check_client(
        &unhex("1f 4e 05"),
        ClientPacket::ActionBarUpdate(ActionBarUpdate::Clear { slot: 5 }),
    );
    for bad in ["1f", "1f 49 04 07", "1f 4e 05 00", "1f 58 00"] {
        assert!(ClientPacket::decode_packet(&unhex(bad)).is_err(), "{bad}");
    }
    // P_ItemScript: 1 or 3 bytes.
    check_client(
        &unhex("2b 0e"),
        ClientPacket::ItemScript(ItemScript {
            slot: 14,
            target: None,
        }),
    );
    check_client(
        &unhex("2b 0e 07 00"),
        ClientPacket::ItemScript(ItemScript {
            slot: 14,
            target: Some(7),
        }),
    );
    for bad in ["2b", "2b 0e 07", "2b 0e 07 00 00"] {
        assert!(ClientPacket::decode_packet(&unhex(bad)).is_err(), "{bad}");
    }
    // The spec's P_EatItem: 1 from slot 14.
    check_client(
        &unhex("2c 0e 01 00"),
        ClientPacket::EatItem(EatItem {
            slot: 14,
            amount: 1,
        }),
    );
    assert!(ClientPacket::decode_packet(&unhex("2c 0e 01")).is_err());
    // P_ItemHealth carries a u16 health, P_InventoryUpdate "H" a u8.
    check_server(
        &unhex("2d 00 19 00"),
        ServerPacket::ItemHealth(ItemHealth {
            slot: 0,
            health: 25,
        }),
    );
    assert!(ServerPacket::decode_packet(&unhex("2d 00 19")).is_err());
}

#[test]
fn examine_trade_and_update_trading_vectors() {
    // The spec's: examine RID 7; offer 3 from trade slot 0.
    check_client(
        &unhex("3d 07 00"),
        ClientPacket::Examine(Examine { target: 7 }),
    );
    check_client(&unhex("3e 07 00"), ClientPacket::Trade(Trade { target: 7 }));
    for bad in ["3d 07", "3e 07 00 00"] {
        assert!(ClientPacket::decode_packet(&unhex(bad)).is_err(), "{bad}");
    }
    check_client(
        &unhex("29 00 03 00"),
        ClientPacket::UpdateTrading(UpdateTradingC2S { slot: 0, amount: 3 }),
    );
    assert!(ClientPacket::decode_packet(&unhex("29 00 03 00 00")).is_err());
    // S→C: the same 3 bytes, plus the item when offered.
    let mut offered = unhex("29 1f 03 00");
    offered.extend_from_slice(&item_bytes(12, 80));
    check_server(
        &offered,
        ServerPacket::UpdateTrading(UpdateTradingS2C {
            slot: 31,
            amount: 3,
            item: Some(item_string(12, 80)),
        }),
    );
    check_server(
        &unhex("29 1f 00 00"),
        ServerPacket::UpdateTrading(UpdateTradingS2C {
            slot: 31,
            amount: 0,
            item: None,
        }),
    );
    assert!(ServerPacket::decode_packet(&offered[..offered.len() - 1]).is_err());
    check_server(&[40], ServerPacket::CloseTrading(CloseTrading {}));
    assert!(ServerPacket::decode_packet(&[40, 0]).is_err());
}

#[test]
fn open_trading_s2c_player_window() {
    check_server(
        b"\x2311P",
        ServerPacket::OpenTrading(OpenTradingS2C {
            part: 1,
            parts: 1,
            chunk: HexBytes(b"P".to_vec()),
        }),
    );
    assert_eq!(
        TradeWindow::Player.to_packets(),
        vec![OpenTradingS2C {
            part: 1,
            parts: 1,
            chunk: HexBytes(b"P".to_vec()),
        }]
    );
    assert_eq!(
        TradeWindow::from_payload(b"P").unwrap(),
        TradeWindow::Player
    );
    for bad in [&b""[..], b"PX", b"S", b"N\x01"] {
        assert!(TradeWindow::from_payload(bad).is_err(), "{bad:?}");
    }
    // Part and count are ASCII digits.
    let e = ServerPacket::decode_packet(b"\x23\x01\x01P").unwrap_err();
    assert_eq!((e.offset, e.kind), (1, DecodeErrorKind::BadSubCode(1)));
    assert!(ServerPacket::decode_packet(b"\x231").is_err());
}

fn wares(n: u16) -> Vec<ShopWare> {
    (0..n)
        .map(|i| ShopWare {
            item: item_string(100 + i, 100),
            amount: i + 1,
            item_handle: 0x1000 + u32::from(i),
        })
        .collect()
}

#[test]
fn open_trading_s2c_shop_windows_in_one_two_and_three_chunks() {
    // 11 wares: 1 + 11 × 89 = 980 bytes, one chunk.
    let w = TradeWindow::Shop { wares: wares(11) };
    let p = w.to_payload();
    assert_eq!(p.len(), 980);
    assert_eq!(p[0], b'N');
    // The first record: item (83), amount u16, handle u32.
    assert_eq!(p[1..84], item_bytes(100, 100)[..]);
    assert_eq!(p[84..90], [1, 0, 0x00, 0x10, 0, 0]);
    let one = w.to_packets();
    assert_eq!(one.len(), 1);
    let bytes = ServerPacket::OpenTrading(one[0].clone()).to_bytes();
    assert_eq!(bytes[..3], *b"\x2311");
    assert_eq!(bytes[3..], p[..]);
    check_server_value(ServerPacket::OpenTrading(one[0].clone()));

    // 12 wares: 1069 bytes, "12" with 999 bytes then "22" with the rest.
    let w = TradeWindow::Shop { wares: wares(12) };
    let two = w.to_packets();
    assert_eq!(
        two.iter()
            .map(|c| (c.part, c.parts, c.chunk.0.len()))
            .collect::<Vec<_>>(),
        [(1, 2, 999), (2, 2, 70)]
    );

    // The full 32 wares: 2849 bytes, "13" 999, "23" 1000, "33" 850.
    let w = TradeWindow::Shop { wares: wares(32) };
    let p = w.to_payload();
    assert_eq!(p.len(), 1 + 32 * 89);
    let three = w.to_packets();
    let framed: Vec<Vec<u8>> = three
        .iter()
        .map(|c| ServerPacket::OpenTrading(c.clone()).to_bytes())
        .collect();
    assert_eq!(
        framed
            .iter()
            .map(|b| (&b[..3], b.len() - 3))
            .collect::<Vec<_>>(),
        [
            (&b"\x2313"[..], 999),
            (&b"\x2323"[..], 1000),
            (&b"\x2333"[..], 850)
        ]
    );
    assert_eq!(framed[0][3..], p[..999]);
    assert_eq!(framed[1][3..], p[999..1999]);
    assert_eq!(framed[2][3..], p[1999..]);
    let mut decoded = Vec::new();
    for b in &framed {
        check_server(b, ServerPacket::decode_packet(b).unwrap());
        match ServerPacket::decode_packet(b).unwrap() {
            ServerPacket::OpenTrading(c) => decoded.push(c),
            other => panic!("{other:?}"),
        }
    }
    // Chunks join in any order; a missing, doubled or foreign chunk joins to nothing.
    decoded.reverse();
    let joined = OpenTradingS2C::assemble(&decoded).unwrap();
    assert_eq!(joined, p);
    assert_eq!(TradeWindow::from_payload(&joined).unwrap(), w);
    assert_eq!(OpenTradingS2C::assemble(&decoded[..2]), None);
    let mut doubled = decoded.clone();
    doubled[0] = doubled[1].clone();
    assert_eq!(OpenTradingS2C::assemble(&doubled), None);
    let mut foreign = decoded.clone();
    foreign[0].parts = 2;
    assert_eq!(OpenTradingS2C::assemble(&foreign), None);
    assert_eq!(OpenTradingS2C::assemble(&[]), None);

    // An empty shop is a lone "N"; a record cut short is an error.
    let empty = TradeWindow::Shop { wares: vec![] };
    assert_eq!(empty.to_payload(), b"N");
    assert_eq!(TradeWindow::from_payload(b"N").unwrap(), empty);
    assert!(TradeWindow::from_payload(&p[..p.len() - 1]).is_err());
}

#[test]
fn shop_window_holds_at_most_32_wares() {
    // The encoder sends the first 32; the decoder refuses a 33rd, so whatever it accepts
    // re-encodes to the same bytes.
    let w = TradeWindow::Shop { wares: wares(33) };
    let p = w.to_payload();
    assert_eq!(p.len(), 1 + 32 * 89);
    let mut long = p.clone();
    long.extend_from_slice(&p[1..90]);
    let e = TradeWindow::from_payload(&long).unwrap_err();
    assert_eq!(e.offset, p.len());
}

#[test]
fn open_trading_c2s_vectors() {
    check_client(&[35], ClientPacket::OpenTrading(OpenTradingC2S::Cancel));
    // Player accept, 164 bytes: I pay 25; I expect 2 from the partner's trade slot 1;
    // I give 3 from backpack slot 14 + 2.
    let mut b = vec![35];
    b.extend_from_slice(&25i32.to_le_bytes());
    b.extend_from_slice(&[1, 2, 0]);
    b.extend_from_slice(&[0; 31 * 3]);
    b.extend_from_slice(&[0, 0, 0, 0, 3, 0]);
    b.extend_from_slice(&[0; 29 * 2]);
    assert_eq!(b.len(), 1 + 164);
    let mut expect = vec![TradeExpect::default(); 32];
    expect[0] = TradeExpect { slot: 1, amount: 2 };
    let mut give = vec![0u16; 32];
    give[2] = 3;
    check_client(
        &b,
        ClientPacket::OpenTrading(OpenTradingC2S::PlayerAccept {
            cost: 25,
            expect: expect.clone(),
            give: give.clone(),
        }),
    );
    // A negative cost (I receive) and short lists, padded with unused entries.
    let short = ClientPacket::OpenTrading(OpenTradingC2S::PlayerAccept {
        cost: -7,
        expect: vec![TradeExpect { slot: 1, amount: 2 }],
        give: vec![0, 0, 3],
    });
    let sb = short.to_bytes();
    assert_eq!(sb.len(), 1 + 164);
    assert_eq!(sb[1..5], [0xf9, 0xff, 0xff, 0xff]);
    assert_eq!(sb[5..], b[5..]);

    // Shop accept, 288 bytes: buy 2 of ware 0x1001; sell 1 from slot 15.
    let mut s = vec![35];
    s.extend_from_slice(&[0x01, 0x10, 0, 0, 2, 0]);
    for _ in 1..32 {
        s.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0, 0]);
    }
    s.extend_from_slice(&[15, 1, 0]);
    s.extend_from_slice(&[0; 31 * 3]);
    assert_eq!(s.len(), 1 + 288);
    let mut buy = vec![
        ShopBuy {
            item_handle: u32::MAX,
            amount: 0,
        };
        32
    ];
    buy[0] = ShopBuy {
        item_handle: 0x1001,
        amount: 2,
    };
    let mut sell = vec![ShopSell::default(); 32];
    sell[0] = ShopSell {
        slot: 15,
        amount: 1,
    };
    check_client(
        &s,
        ClientPacket::OpenTrading(OpenTradingC2S::ShopAccept {
            buy: buy.clone(),
            sell: sell.clone(),
        }),
    );
    let padded = ClientPacket::OpenTrading(OpenTradingC2S::ShopAccept {
        buy: buy[..1].to_vec(),
        sell: sell[..1].to_vec(),
    });
    assert_eq!(padded.to_bytes(), s);

    // Any other length is refused.
    for len in [1usize, 163, 165, 287, 289] {
        let e = ClientPacket::decode(35, &vec![0; len]).unwrap_err();
        assert!(
            matches!(e.kind, DecodeErrorKind::LengthMismatch { actual, .. } if actual == len),
            "{len}: {e:?}"
        );
    }
}

/// The quest log (reference §9.23), with the spec's vector and one per sub-code.
#[test]
fn quest_log_vectors() {
    check_server(
        &unhex("17 4e 04 52 61 74 73 09 00 ff ff ff 4b 69 6c 6c 20 35"),
        ServerPacket::QuestLog(QuestLog::New {
            name: "Rats".into(),
            status: RcString(b"\xff\xff\xffKill 5".to_vec()),
        }),
    );
    check_server(
        &unhex("17 55 04 52 41 54 53 04 00 ff e1 64 fe"),
        ServerPacket::QuestLog(QuestLog::Update {
            name: "RATS".into(),
            status: RcString(QUEST_COMPLETED.to_vec()),
        }),
    );
    check_server(
        &unhex("17 44 52 41 54 53"),
        ServerPacket::QuestLog(QuestLog::Delete {
            name: "RATS".into(),
        }),
    );
    // `"name"` is the packet's in JSON, so the quest's is `"quest_name"`.
    let json = ServerPacket::QuestLog(QuestLog::Delete {
        name: "Rats".into(),
    })
    .to_json();
    assert_eq!(
        json,
        serde_json::json!({"name":"P_QuestLog","id":23,"sub":"D","quest_name":"Rats"})
    );
    // A status cut short, trailing bytes after it, and an unknown sub-code are refused.
    assert!(ServerPacket::decode(23, &unhex("4e 01 41 05 00 ff ff")).is_err());
    assert!(ServerPacket::decode(23, &unhex("55 01 41 00 00 00")).is_err());
    assert!(ServerPacket::decode(23, &unhex("58 01 41")).is_err());
}

/// The cosmetic script packets (reference §9.x).
#[test]
fn cosmetic_script_packet_vectors() {
    check_server(
        &unhex("1d 05 00 07 00"),
        ServerPacket::Sound(Sound { sound: 5, actor: 7 }),
    );
    check_server(
        &unhex("21 ff 00 00 80 f4 01 00 00 ff ff"),
        ServerPacket::ScreenFlash(ScreenFlash {
            r: 255,
            g: 0,
            b: 0,
            alpha: 128,
            ms: 500,
            texture: 65535,
        }),
    );
    check_server(&unhex("22 02 00"), ServerPacket::Music(Music { music: 2 }));
    check_server(
        &unhex("32 00 00 07 00"),
        ServerPacket::Speech(Speech { index: 0, actor: 7 }),
    );
    check_server(
        &unhex("34 07 00 ff ff ff 48 69"),
        ServerPacket::BubbleMessage(BubbleMessage {
            actor: 7,
            r: 255,
            g: 255,
            b: 255,
            text: "Hi".into(),
        }),
    );
    // Fixed layouts are exact.
    assert!(ServerPacket::decode(29, &unhex("05 00 07")).is_err());
    assert!(ServerPacket::decode(33, &unhex("ff 00 00 80 f4 01 00 00 ff ff 00")).is_err());
    assert!(ServerPacket::decode(34, &unhex("02")).is_err());
    assert!(ServerPacket::decode(50, &unhex("00 00 07 00 00")).is_err());
    assert!(ServerPacket::decode(52, &unhex("07 00 ff ff")).is_err());
}

/// Script progress bars (reference §9.51), one vector per sub-code.
#[test]
fn progress_bar_vectors() {
    check_server(
        &unhex(
            "33 43 00 ff 00 00 00 00 3f 00 00 00 3f cd cc 4c 3e cd cc cc 3c \
             10 00 00 00 64 00 0a 00 48 50",
        ),
        ServerPacket::ProgressBar(ProgressBarS2C::Create {
            r: 0,
            g: 255,
            b: 0,
            x: 0.5,
            y: 0.5,
            w: 0.2,
            h: 0.025,
            script: 16,
            max: 100,
            value: 10,
            label: "HP".into(),
        }),
    );
    check_server(
        &unhex("33 55 05 00 00 00 0a 00"),
        ServerPacket::ProgressBar(ProgressBarS2C::Update { bar: 5, value: 10 }),
    );
    check_server(
        &unhex("33 44 05 00 00 00"),
        ServerPacket::ProgressBar(ProgressBarS2C::Delete { bar: 5 }),
    );
    check_client(
        &unhex("33 43 10 00 00 00 05 00 00 00"),
        ClientPacket::ProgressBar(ProgressBarC2S::Created { script: 16, bar: 5 }),
    );
    assert!(ServerPacket::decode(51, &unhex("55 05 00 00 00 0a")).is_err());
    assert!(ServerPacket::decode(51, &unhex("44 05 00 00 00 00")).is_err());
    assert!(ClientPacket::decode(51, &unhex("55 10 00 00 00 05 00 00 00")).is_err());
    assert!(ClientPacket::decode(51, &unhex("43 10 00 00 00 05 00 00")).is_err());
}

/// Script text input (reference §9.53), with the spec's vector.
#[test]
fn script_input_vectors() {
    let mut bytes = unhex("35 10 00 00 00 02 05 00 54 6f 74 61 6c");
    bytes.extend_from_slice(b"How many?");
    check_server(
        &bytes,
        ServerPacket::ScriptInput(ScriptInputS2C {
            script: 16,
            kind: 2,
            title: "Total".into(),
            prompt: "How many?".into(),
        }),
    );
    check_client(
        &unhex("35 10 00 00 00 31 32"),
        ClientPacket::ScriptInput(ScriptInputC2S {
            script: 16,
            text: "12".into(),
        }),
    );
    // Enter on an empty field sends no text at all.
    check_client(
        &unhex("35 10 00 00 00"),
        ClientPacket::ScriptInput(ScriptInputC2S {
            script: 16,
            text: "".into(),
        }),
    );
    assert!(ServerPacket::decode(53, &unhex("10 00 00 00 02 05 00 54")).is_err());
    assert!(ClientPacket::decode(53, &unhex("10 00 00")).is_err());
}

fn update_entry(crc: u32, name: &str) -> UpdateFileEntry {
    UpdateFileEntry {
        crc,
        name: name.into(),
    }
}

/// The update file list (reference §9.10): the spec's empty list, a chunk with its total,
/// a chunk without, and the server's split.
#[test]
fn update_files_vectors() {
    check_client(&[10], ClientPacket::FetchUpdateFiles(FetchUpdateFiles {}));
    assert!(ClientPacket::decode(10, &[0]).is_err());
    check_server(
        &unhex("0a 00 00"),
        ServerPacket::FetchUpdateFiles(UpdateFiles {
            entries: vec![],
            total: Some(0),
        }),
    );
    assert_eq!(
        update_file_chunks(&[]),
        vec![UpdateFiles {
            entries: vec![],
            total: Some(0),
        }]
    );
    check_server(
        &unhex("0a 78 56 34 12 05 61 5c 62 2e 62 01 00"),
        ServerPacket::FetchUpdateFiles(UpdateFiles {
            entries: vec![update_entry(0x1234_5678, "a\\b.b")],
            total: Some(1),
        }),
    );
    check_server(
        &unhex("0a 01 00 00 00 01 61 02 00 00 00 01 62"),
        ServerPacket::FetchUpdateFiles(UpdateFiles {
            entries: vec![update_entry(1, "a"), update_entry(2, "b")],
            total: None,
        }),
    );
    // An empty chunk (never sent by the server) has no entries and no total.
    check_server(
        &[10],
        ServerPacket::FetchUpdateFiles(UpdateFiles::default()),
    );
    // One stray byte, a name cut short, or three bytes after an entry are refused.
    assert!(ServerPacket::decode(10, &[0]).is_err());
    assert!(ServerPacket::decode(10, &unhex("01 00 00 00 05 61")).is_err());
    assert!(ServerPacket::decode(10, &unhex("01 00 00 00 01 61 01 00 00")).is_err());

    // The split: 100 entries of 5 + 20 bytes; a chunk holds 37 (925 bytes), since a 38th
    // would make 950.
    let files: Vec<_> = (0..100u32)
        .map(|i| update_entry(i, &format!("Data\\Files{i:06}.b3d")))
        .collect();
    assert!(files.iter().all(|f| f.name.len() == 20));
    let chunks = update_file_chunks(&files);
    assert_eq!(
        chunks.iter().map(|c| c.entries.len()).collect::<Vec<_>>(),
        [37, 37, 26]
    );
    assert_eq!(
        chunks.iter().map(|c| c.total).collect::<Vec<_>>(),
        [None, None, Some(100)]
    );
    let joined: Vec<_> = chunks.iter().flat_map(|c| c.entries.clone()).collect();
    assert_eq!(joined, files);
    for c in &chunks {
        let bytes = ServerPacket::FetchUpdateFiles(c.clone()).to_bytes();
        assert!(bytes.len() - 1 < 950 + 2);
        check_server(&bytes, ServerPacket::FetchUpdateFiles(c.clone()));
    }
}

/// The two ids Realm Crafter never used: typed, so a stock client's bytes decode.
#[test]
fn unused_ids_vectors() {
    check_client(&[8], ClientPacket::FetchItems(FetchItems {}));
    check_client(
        &unhex("2a 03 00 10 00 00 00"),
        ClientPacket::SelectScenery(SelectScenery {
            scenery: 3,
            handle: 16,
        }),
    );
    assert!(ClientPacket::decode(42, &unhex("03 00 10 00 00")).is_err());
}

/// Every Realm Crafter packet id (1..=53, 60, 61, 62) has a typed codec: a valid payload
/// decodes to a typed variant (not `Raw`) in at least one direction, under its own name.
#[test]
fn every_realm_crafter_id_has_a_typed_codec() {
    let creds = "01 61 02 62 63";
    let mut new_actor = Vec::new();
    ServerPacket::NewActor(sample_new_actor(None)).encode_payload(&mut new_actor);
    let table: Vec<(u8, Vec<u8>)> = vec![
        (1, unhex(&format!("{creds} 01 65"))),
        (2, unhex(creds)),
        (3, unhex(&format!("{creds} 00"))),
        (
            4,
            unhex(&format!(
                "{creds} 01 00 00 01 01 00 00 {} 41",
                "00 ".repeat(40)
            )),
        ),
        (5, unhex(&format!("{creds} 00"))),
        (6, unhex(&format!("{creds} 01 64"))),
        (7, vec![]),
        (8, vec![]),
        (9, vec![]),
        (10, vec![]),
        (11, new_actor),
        (12, unhex(&format!("{creds} 00"))),
        (13, unhex("07 00")),
        (14, vec![0; 22]),
        (15, unhex("44 0e 01 00")),
        (16, b"hi".to_vec()),
        (17, unhex("34 12 00 00 02")),
        (18, unhex("07 00")),
        (19, unhex("07 00")),
        (20, unhex("07 00")),
        (21, unhex("4f 10 00 00 00 02")),
        (22, unhex("41 07 00 00 55 00")),
        (23, unhex("44 41")),
        (24, unhex("55 fa 00 00 00")),
        (25, unhex("07 00 01 41")),
        (26, unhex("44 46 62")),
        (27, unhex("46 00 00 07 00")),
        (28, vec![0; 20]),
        (29, unhex("05 00 07 00")),
        (30, unhex("07 00 00 00 00 80 3f 57 61 76 65")),
        (31, unhex("4e 01")),
        (32, unhex("4d 0a 00 00 00")),
        (33, vec![0; 10]),
        (34, unhex("02 00")),
        (35, vec![]),
        (36, unhex("45 02 e2 ff ff ff")),
        (37, unhex("07 00 08 00 01 00 02 00 03 00 01 05 00")),
        (38, vec![]),
        (39, unhex("43 07 00 02 00")),
        (40, vec![]),
        (41, unhex("00 03 00")),
        (42, unhex("03 00 10 00 00 00")),
        (43, unhex("0e")),
        (44, unhex("0e 01 00")),
        (45, unhex("0e 64 00")),
        (46, vec![]),
        (47, vec![]),
        (48, unhex("07 00 05 00 00 00 ff ff ff")),
        (49, unhex("52 07 00 00 00 00 00")),
        (50, unhex("00 00 07 00")),
        (51, unhex("44 05 00 00 00")),
        (52, unhex("07 00 ff ff ff 48 69")),
        (53, unhex("10 00 00 00 31 32")),
        (60, vec![]),
        (61, unhex("07 00")),
        (62, unhex("07 00")),
    ];
    let want: Vec<u8> = (1..=53).chain([60, 61, 62]).collect();
    assert_eq!(table.iter().map(|(id, _)| *id).collect::<Vec<_>>(), want);
    for (id, payload) in &table {
        let name = packet_name(*id).unwrap();
        let c = ClientPacket::decode(*id, payload);
        let s = ServerPacket::decode(*id, payload);
        let typed_c = matches!(&c, Ok(p) if !matches!(p, ClientPacket::Raw { .. }));
        let typed_s = matches!(&s, Ok(p) if !matches!(p, ServerPacket::Raw { .. }));
        assert!(typed_c || typed_s, "id {id} ({name}): {c:?} / {s:?}");
        if let Ok(p) = &c {
            assert_eq!(p.name(), name);
        }
        if let Ok(p) = &s {
            assert_eq!(p.name(), name);
        }
    }
}
