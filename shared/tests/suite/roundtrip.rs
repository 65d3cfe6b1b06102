//! Property tests: for every packet type `decode(encode(x)) == x` (and the JSON form
//! re-encodes to the same bytes); every decoder survives arbitrary bytes without
//! panicking, and whatever it accepts re-encodes to exactly the bytes it read.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::collection::vec;
use proptest::prelude::*;
use shared::frame::{self, Batcher, FrameDecoder, split_datagram};
use shared::proto::*;
use shared::wire::*;

/// Cases per property (override with `PROPTEST_CASES`).
const CASES: u32 = 256;

fn cfg() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(CASES),
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------- leaf strategies

fn f32_any() -> impl Strategy<Value = f32> {
    prop_oneof![
        4 => any::<u32>().prop_map(f32::from_bits),
        4 => -100_000.0f32..100_000.0,
        1 => Just(f32::NAN),
        1 => Just(f32::INFINITY),
        1 => Just(-0.0f32),
    ]
}

fn s8() -> impl Strategy<Value = RcString> {
    vec(any::<u8>(), 0..=24).prop_map(RcString)
}

fn s8_long() -> impl Strategy<Value = RcString> {
    vec(any::<u8>(), 0..=255).prop_map(RcString)
}

fn s16() -> impl Strategy<Value = RcString> {
    vec(any::<u8>(), 0..=300).prop_map(RcString)
}

fn rest() -> impl Strategy<Value = RcString> {
    vec(any::<u8>(), 0..=64).prop_map(RcString)
}

fn hex_bytes() -> impl Strategy<Value = HexBytes> {
    vec(any::<u8>(), 0..=64).prop_map(HexBytes)
}

fn creds() -> impl Strategy<Value = Creds> {
    (s8(), s8()).prop_map(|(user, password_md5)| Creds { user, password_md5 })
}

fn character_summary() -> impl Strategy<Value = CharacterSummary> {
    (s8(), any::<u16>(), any::<[u8; 5]>()).prop_map(|(name, actor_id, [g, f, h, b, bo])| {
        CharacterSummary {
            name,
            actor_id,
            gender: g,
            face: f,
            hair: h,
            beard: b,
            body: bo,
        }
    })
}

fn attr_pair() -> impl Strategy<Value = AttributePair> {
    (any::<u16>(), any::<u16>()).prop_map(|(value, max)| AttributePair { value, max })
}

fn item_string() -> impl Strategy<Value = ItemString> {
    (any::<u16>(), vec(any::<u16>(), 40), any::<u8>()).prop_map(|(item_id, attributes, health)| {
        ItemString {
            item_id,
            attributes,
            health,
        }
    })
}

fn item_def() -> impl Strategy<Value = ItemDef> {
    (
        (
            any::<u16>(),
            any::<u8>(),
            any::<u8>(),
            any::<u32>(),
            any::<u16>(),
        ),
        (
            any::<u16>(),
            any::<[u8; 6]>(),
            any::<[u16; 3]>(),
            any::<u8>(),
        ),
        vec(any::<u16>(), 40),
        (s8(), s8(), s8(), s8()),
        (any::<[u16; 3]>(), f32_any()),
    )
        .prop_map(
            |(
                (id, item_type, takes_damage, value, mass),
                (thumb, gubbins, [male_mesh, female_mesh, slot_type], stackable),
                attributes,
                (name, exclusive_race, exclusive_class, misc),
                ([a, b, c], range),
            )| {
                let tail = match item_type {
                    1 => ItemTail::Weapon {
                        damage: a,
                        damage_type: b,
                        weapon_type: c,
                        range,
                    },
                    2 => ItemTail::Armour { level: a },
                    4 | 5 => ItemTail::Consumable { seconds: a },
                    6 => ItemTail::Image { image_id: a },
                    _ => ItemTail::None,
                };
                ItemDef {
                    id,
                    item_type,
                    takes_damage,
                    value,
                    mass,
                    thumb,
                    gubbins,
                    male_mesh,
                    female_mesh,
                    slot_type,
                    stackable,
                    attributes,
                    name,
                    exclusive_race,
                    exclusive_class,
                    tail,
                    misc,
                }
            },
        )
}

fn u16s<const N: usize>() -> impl Strategy<Value = [u16; N]> {
    vec(any::<u16>(), N).prop_map(|v| {
        let mut a = [0u16; N];
        a.copy_from_slice(&v);
        a
    })
}

fn actor_template() -> impl Strategy<Value = ActorTemplateDef> {
    (
        (any::<u16>(), any::<u8>(), any::<u8>(), u16s::<8>()),
        (u16s::<5>(), u16s::<5>(), u16s::<5>(), u16s::<5>()),
        (u16s::<5>(), u16s::<5>(), u16s::<5>()),
        (u16s::<16>(), u16s::<16>()),
        (any::<[u8; 6]>(), any::<[u16; 4]>(), f32_any(), any::<u8>()),
        vec(attr_pair(), 40),
        (s8(), s8(), s16()),
    )
        .prop_map(
            |(
                (id, playable, poly_collision, meshes),
                (beards, male_hair, female_hair, male_faces),
                (female_faces, male_bodies, female_bodies),
                (male_speech, female_speech),
                (
                    [
                        rideable,
                        trade,
                        aggressiveness,
                        genders,
                        environment,
                        faction,
                    ],
                    [blood, inventory_slots, male_anim, female_anim],
                    scale,
                    _,
                ),
                attributes,
                (race, class, description),
            )| ActorTemplateDef {
                id,
                playable,
                poly_collision,
                meshes,
                beards,
                male_hair,
                female_hair,
                male_faces,
                female_faces,
                male_bodies,
                female_bodies,
                male_speech,
                female_speech,
                rideable,
                trade,
                blood,
                aggressiveness,
                genders,
                environment,
                inventory_slots,
                male_anim,
                female_anim,
                scale,
                faction,
                attributes,
                race,
                class,
                description,
            },
        )
}

// ---------------------------------------------------------------- packet strategies

fn standard_update_c2s() -> impl Strategy<Value = StandardUpdateC2S> {
    (
        (f32_any(), f32_any(), f32_any(), f32_any(), f32_any()),
        any::<u8>(),
        any::<u8>(),
    )
        .prop_map(
            |((dest_x, dest_z, y, x, z), is_running, walking_backward)| StandardUpdateC2S {
                dest_x,
                dest_z,
                y,
                x,
                z,
                is_running,
                walking_backward,
            },
        )
}

fn update_tail() -> impl Strategy<Value = UpdateTail> {
    prop_oneof![
        Just(UpdateTail::None),
        any::<u16>().prop_map(UpdateTail::Energy),
        f32_any().prop_map(UpdateTail::FlyY),
    ]
}

fn standard_update_s2c() -> impl Strategy<Value = StandardUpdateS2C> {
    (
        any::<u16>(),
        (f32_any(), f32_any(), f32_any(), f32_any()),
        any::<[u8; 2]>(),
        any::<u16>(),
        update_tail(),
    )
        .prop_map(
            |(runtime_id, (x, z, dest_x, dest_z), [is_running, walking_backward], mount, tail)| {
                StandardUpdateS2C {
                    runtime_id,
                    x,
                    z,
                    is_running,
                    walking_backward,
                    dest_x,
                    dest_z,
                    mount,
                    tail,
                }
            },
        )
}

fn new_actor() -> impl Strategy<Value = NewActor> {
    (
        (
            any::<u32>(),
            any::<u16>(),
            any::<u16>(),
            any::<u32>(),
            any::<u16>(),
        ),
        (f32_any(), f32_any(), f32_any(), f32_any()),
        (
            any::<u8>(),
            s8_long(),
            s8(),
            any::<Option<u8>>(),
            any::<i16>(),
        ),
        u16s::<12>(),
        any::<u8>(),
        vec(any::<u8>(), 100),
    )
        .prop_map(
            |(
                (instance_handle, runtime_id, level, xp, template_id),
                (x, y, z, yaw),
                (human, actor_name, tag, gender, reputation),
                [
                    face,
                    hair,
                    body,
                    beard,
                    speed,
                    speed_max,
                    health,
                    health_max,
                    weapon,
                    shield,
                    hat,
                    chest,
                ],
                home_faction,
                ratings,
            )| NewActor {
                instance_handle,
                runtime_id,
                level,
                xp,
                template_id,
                x,
                y,
                z,
                yaw,
                human,
                actor_name,
                tag,
                gender,
                reputation,
                face,
                hair,
                body,
                beard,
                speed,
                speed_max,
                health,
                health_max,
                weapon,
                shield,
                hat,
                chest,
                home_faction,
                ratings,
            },
        )
}

fn action_slot() -> impl Strategy<Value = ActionSlot> {
    prop_oneof![
        Just(ActionSlot::Empty),
        rest().prop_map(ActionSlot::Spell),
        any::<u16>().prop_map(ActionSlot::Item),
        vec(any::<u8>(), 1..20)
            .prop_filter("not a spell or item form", |b| {
                b.first() != Some(&b'S') && !(b.len() == 3 && b.first() == Some(&b'I'))
            })
            .prop_map(|b| ActionSlot::Other(HexBytes(b))),
    ]
}

fn fetch_character_reply() -> impl Strategy<Value = FetchCharacterReply> {
    let slot = prop_oneof![
        1 => Just(None),
        3 => (any::<u8>().prop_filter("not 99", |s| *s != 99), item_string(), any::<u16>())
            .prop_map(|(slot, item, amount)| Some(InventorySlot { slot, item, amount })),
    ];
    let spell = known_spell();
    prop_oneof![
        (
            any::<u32>(),
            any::<i16>(),
            any::<u16>(),
            any::<u32>(),
            any::<u8>(),
            vec(attr_pair(), 40)
        )
            .prop_map(|(gold, reputation, level, xp, home_faction, attributes)| {
                FetchCharacterReply::Stats {
                    gold,
                    reputation,
                    level,
                    xp,
                    home_faction,
                    attributes,
                }
            }),
        vec(slot, 0..12).prop_map(|slots| FetchCharacterReply::Inventory { slots }),
        vec(spell, 0..4).prop_map(|spells| FetchCharacterReply::Spells { spells }),
        vec(
            (s8(), s16()).prop_map(|(name, status)| QuestEntry { name, status }),
            0..6
        )
        .prop_map(|quests| FetchCharacterReply::Quests { quests }),
        (any::<u16>(), any::<u16>())
            .prop_map(|(quests, spells)| FetchCharacterReply::Finished { quests, spells }),
        Just(FetchCharacterReply::Failed),
    ]
}

fn fetch_actors_reply() -> impl Strategy<Value = FetchActorsReply> {
    let attr = (any::<u8>(), any::<u8>(), s8()).prop_map(|(is_skill, hidden, name)| AttributeDef {
        is_skill,
        hidden,
        name,
    });
    let season = (s8(), any::<u16>(), any::<u8>(), any::<u8>()).prop_map(
        |(name, start_day, dusk_hour, dawn_hour)| SeasonDef {
            name,
            start_day,
            dusk_hour,
            dawn_hour,
        },
    );
    let month = (s8(), any::<u16>()).prop_map(|(name, start_day)| MonthDef { name, start_day });
    prop_oneof![
        (any::<u8>(), vec(attr, 40)).prop_map(|(assignment, attributes)| {
            FetchActorsReply::Attributes {
                assignment,
                attributes,
            }
        }),
        vec(s8(), 20).prop_map(|names| FetchActorsReply::DamageTypes { names }),
        (
            (any::<u32>(), any::<u16>(), any::<[u8; 3]>()),
            vec(season, 12),
            vec(month, 20)
        )
            .prop_map(
                |((year, day, [hour, minute, time_factor]), seasons, months)| {
                    FetchActorsReply::Environment {
                        year,
                        day,
                        hour,
                        minute,
                        time_factor,
                        seasons,
                        months,
                    }
                }
            ),
        vec(item_def(), 0..7).prop_map(|items| FetchActorsReply::Items { items }),
        any::<u16>().prop_map(|total| FetchActorsReply::ItemsDone { total }),
        vec(
            (any::<u8>(), s8_long()).prop_map(|(index, name)| FactionDef { index, name }),
            0..8
        )
        .prop_map(|factions| FetchActorsReply::Factions { factions }),
        vec(actor_template(), 0..3).prop_map(|actors| FetchActorsReply::Actors { actors }),
        any::<u16>().prop_map(|total| FetchActorsReply::ActorsDone { total }),
    ]
}

fn chat_s2c() -> impl Strategy<Value = ChatMessageS2C> {
    let colour = prop_oneof![
        Just(ChatColour::System),
        Just(ChatColour::Red),
        Just(ChatColour::Magenta),
        Just(ChatColour::Green),
        any::<[u8; 3]>().prop_map(|[r, g, b]| ChatColour::Rgb(r, g, b)),
        Just(ChatColour::Plain),
    ];
    (colour, rest())
        .prop_filter("plain text must not start with a colour byte", |(c, t)| {
            *c != ChatColour::Plain || !matches!(t.0.first(), Some(250..=254))
        })
        .prop_map(|(colour, text)| ChatMessageS2C { colour, text })
}

fn reposition() -> impl Strategy<Value = RepositionActor> {
    prop_oneof![
        (
            any::<u16>(),
            f32_any(),
            f32_any(),
            f32_any(),
            any::<[u8; 2]>()
        )
            .prop_map(
                |(runtime_id, x, y, z, [flag1, flag2])| RepositionActor::Move {
                    runtime_id,
                    x,
                    y,
                    z,
                    flag1,
                    flag2
                }
            ),
        (any::<u16>(), f32_any())
            .prop_map(|(runtime_id, yaw)| RepositionActor::Rotate { runtime_id, yaw }),
        (any::<u16>(), f32_any(), f32_any(), f32_any(), any::<u8>()).prop_map(
            |(runtime_id, x, y, z, flag)| RepositionActor::SetArea {
                runtime_id,
                x,
                y,
                z,
                flag
            }
        ),
    ]
}

fn appearance_update() -> impl Strategy<Value = AppearanceUpdate> {
    use AppearanceUpdate as A;
    prop_oneof![
        (any::<u16>(), any::<u16>()).prop_map(|(runtime_id, template_id)| A::ChangeActor {
            runtime_id,
            template_id
        }),
        (any::<u16>(), any::<u8>())
            .prop_map(|(runtime_id, gender)| A::Gender { runtime_id, gender }),
        (any::<u16>(), any::<u8>()).prop_map(|(runtime_id, beard)| A::Beard { runtime_id, beard }),
        (any::<u16>(), any::<u8>()).prop_map(|(runtime_id, hair)| A::Hair { runtime_id, hair }),
        (any::<u16>(), any::<u8>()).prop_map(|(runtime_id, face)| A::Face { runtime_id, face }),
        (any::<u16>(), any::<u8>()).prop_map(|(runtime_id, body)| A::Body { runtime_id, body }),
    ]
}

const SERVER_IDS: &[u8] = &[
    1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 21, 22, 23, 24, 25, 26, 28, 29,
    30, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 45, 46, 48, 49, 50, 51, 52, 53, 60,
];
const CLIENT_IDS: &[u8] = &[
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 15, 16, 18, 20, 21, 27, 31, 35, 41, 42, 43, 44, 46,
    47, 49, 51, 53, 61, 62,
];

fn known_spell() -> impl Strategy<Value = KnownSpell> {
    (any::<[u16; 4]>(), s16(), s16(), any::<u8>()).prop_map(
        |([level, id, thumb, recharge], name, description, memorised)| KnownSpell {
            level,
            id,
            thumb,
            recharge,
            name,
            description,
            memorised,
        },
    )
}

/// Abilities: `P_KnownSpellUpdate` and `P_CreateEmitter` (S→C).
fn spell_server_packet() -> impl Strategy<Value = ServerPacket> {
    use ServerPacket as S;
    prop_oneof![
        known_spell().prop_map(|spell| S::KnownSpellUpdate(KnownSpellUpdate::Added { spell })),
        rest().prop_map(|spell_name| S::KnownSpellUpdate(KnownSpellUpdate::Deleted { spell_name })),
        (any::<u32>(), rest()).prop_map(|(level, spell_name)| {
            S::KnownSpellUpdate(KnownSpellUpdate::Level { level, spell_name })
        }),
        (
            any::<u16>(),
            any::<u32>(),
            any::<u16>(),
            [f32_any(), f32_any(), f32_any()],
            rest()
        )
            .prop_map(
                |(texture, lifetime_ms, runtime_id, [offset_x, offset_y, offset_z], emitter)| {
                    S::CreateEmitter(CreateEmitter {
                        texture,
                        lifetime_ms,
                        runtime_id,
                        offset_x,
                        offset_y,
                        offset_z,
                        emitter,
                    })
                }
            ),
    ]
}

/// Script dialogs: `P_Dialog` (S→C).
fn dialog_server_packet() -> impl Strategy<Value = ServerPacket> {
    prop_oneof![
        (any::<u32>(), any::<u16>(), any::<u16>(), rest()).prop_map(
            |(script, context, background, title)| DialogS2C::Open {
                script,
                context,
                background,
                title,
            }
        ),
        (any::<[u8; 3]>(), any::<u32>(), rest()).prop_map(|([r, g, b], dialog, text)| {
            DialogS2C::Text {
                r,
                g,
                b,
                dialog,
                text,
            }
        }),
        (any::<u32>(), vec(s8(), 0..=9))
            .prop_map(|(dialog, options)| DialogS2C::Options { dialog, options }),
        any::<u32>().prop_map(|dialog| DialogS2C::Close { dialog }),
    ]
    .prop_map(ServerPacket::Dialog)
}

/// The quest log: `P_QuestLog` (S→C).
fn quest_server_packet() -> impl Strategy<Value = ServerPacket> {
    prop_oneof![
        (s8_long(), s16()).prop_map(|(name, status)| QuestLog::New { name, status }),
        (s8_long(), s16()).prop_map(|(name, status)| QuestLog::Update { name, status }),
        rest().prop_map(|name| QuestLog::Delete { name }),
    ]
    .prop_map(ServerPacket::QuestLog)
}

fn update_file_entry() -> impl Strategy<Value = UpdateFileEntry> {
    (any::<u32>(), s8_long()).prop_map(|(crc, name)| UpdateFileEntry { crc, name })
}

/// Script UI and cosmetic packets, and the update file list (S→C).
fn ui_server_packet() -> impl Strategy<Value = ServerPacket> {
    use ServerPacket as S;
    prop_oneof![
        (vec(update_file_entry(), 0..12), any::<Option<u16>>())
            .prop_map(|(entries, total)| S::FetchUpdateFiles(UpdateFiles { entries, total })),
        any::<[u16; 2]>().prop_map(|[sound, actor]| S::Sound(Sound { sound, actor })),
        (any::<[u8; 4]>(), any::<u32>(), any::<u16>()).prop_map(
            |([r, g, b, alpha], ms, texture)| S::ScreenFlash(ScreenFlash {
                r,
                g,
                b,
                alpha,
                ms,
                texture
            })
        ),
        any::<u16>().prop_map(|music| S::Music(Music { music })),
        any::<[u16; 2]>().prop_map(|[index, actor]| S::Speech(Speech { index, actor })),
        (any::<u16>(), any::<[u8; 3]>(), rest()).prop_map(|(actor, [r, g, b], text)| {
            S::BubbleMessage(BubbleMessage {
                actor,
                r,
                g,
                b,
                text,
            })
        }),
        prop_oneof![
            (
                any::<[u8; 3]>(),
                [f32_any(), f32_any(), f32_any(), f32_any()],
                any::<u32>(),
                any::<[u16; 2]>(),
                rest()
            )
                .prop_map(|([r, g, b], [x, y, w, h], script, [max, value], label)| {
                    ProgressBarS2C::Create {
                        r,
                        g,
                        b,
                        x,
                        y,
                        w,
                        h,
                        script,
                        max,
                        value,
                        label,
                    }
                }),
            (any::<u32>(), any::<u16>())
                .prop_map(|(bar, value)| ProgressBarS2C::Update { bar, value }),
            any::<u32>().prop_map(|bar| ProgressBarS2C::Delete { bar }),
        ]
        .prop_map(S::ProgressBar),
        (any::<u32>(), any::<u8>(), s16(), rest()).prop_map(|(script, kind, title, prompt)| {
            S::ScriptInput(ScriptInputS2C {
                script,
                kind,
                title,
                prompt,
            })
        }),
    ]
}

/// Script UI answers, the update request and the unused ids (C→S).
fn ui_client_packet() -> impl Strategy<Value = ClientPacket> {
    use ClientPacket as C;
    prop_oneof![
        Just(C::FetchItems(FetchItems {})),
        Just(C::FetchUpdateFiles(FetchUpdateFiles {})),
        (any::<u16>(), any::<u32>())
            .prop_map(|(scenery, handle)| C::SelectScenery(SelectScenery { scenery, handle })),
        (any::<u32>(), any::<u32>())
            .prop_map(|(script, bar)| C::ProgressBar(ProgressBarC2S::Created { script, bar })),
        (any::<u32>(), rest())
            .prop_map(|(script, text)| C::ScriptInput(ScriptInputC2S { script, text })),
    ]
}

/// Script dialogs: `P_Dialog` (C→S).
fn dialog_client_packet() -> impl Strategy<Value = ClientPacket> {
    prop_oneof![
        (any::<u32>(), any::<u32>())
            .prop_map(|(script, dialog)| DialogC2S::Opened { script, dialog }),
        any::<u32>().prop_map(|script| DialogC2S::TextShown { script }),
        (any::<u32>(), any::<u8>())
            .prop_map(|(script, option)| DialogC2S::Chosen { script, option }),
    ]
    .prop_map(ClientPacket::Dialog)
}

/// Abilities: `P_SpellUpdate` (C→S).
fn spell_client_packet() -> impl Strategy<Value = ClientPacket> {
    prop_oneof![
        any::<u16>().prop_map(|index| SpellUpdate::Memorise { index }),
        any::<u16>().prop_map(|index| SpellUpdate::Unmemorise { index }),
        (any::<u16>(), any::<Option<u16>>())
            .prop_map(|(spell_id, target)| SpellUpdate::Fire { spell_id, target }),
    ]
    .prop_map(ClientPacket::SpellUpdate)
}

fn inventory_update_s2c() -> impl Strategy<Value = InventoryUpdateS2C> {
    use InventoryUpdateS2C as I;
    prop_oneof![
        (any::<u8>(), any::<u16>()).prop_map(|(slot, amount)| I::Taken { slot, amount }),
        (any::<u32>(), any::<u8>()).prop_map(|(dropped, slot)| I::Received { dropped, slot }),
        any::<u32>().prop_map(|dropped| I::Gone { dropped }),
        (
            any::<u16>(),
            (f32_any(), f32_any(), f32_any()),
            any::<u32>(),
            item_string()
        )
            .prop_map(|(amount, (x, y, z), dropped, item)| I::Dropped {
                amount,
                x,
                y,
                z,
                dropped,
                item,
            }),
        (any::<[u16; 5]>(), any::<[u8; 6]>()).prop_map(
            |([runtime_id, weapon, shield, chest, hat], gubbins)| I::Equipment {
                runtime_id,
                weapon,
                shield,
                chest,
                hat,
                gubbins,
            }
        ),
        (any::<u32>(), any::<u16>(), any::<u16>()).prop_map(|(item_handle, item_id, amount)| {
            I::Offer {
                item_handle,
                item_id,
                amount,
            }
        }),
        (any::<u8>(), any::<u8>()).prop_map(|(slot, health)| I::Health { slot, health }),
    ]
}

fn shop_ware() -> impl Strategy<Value = ShopWare> {
    (item_string(), any::<u16>(), any::<u32>()).prop_map(|(item, amount, item_handle)| ShopWare {
        item,
        amount,
        item_handle,
    })
}

fn trade_window() -> impl Strategy<Value = TradeWindow> {
    prop_oneof![
        Just(TradeWindow::Player),
        vec(shop_ware(), 0..=TRADE_ENTRIES).prop_map(|wares| TradeWindow::Shop { wares }),
    ]
}

/// Items, gold and trade (S→C).
fn items_server_packet() -> impl Strategy<Value = ServerPacket> {
    use ServerPacket as S;
    prop_oneof![
        inventory_update_s2c().prop_map(S::InventoryUpdate),
        (0u8..=9, 0u8..=9, hex_bytes())
            .prop_map(|(part, parts, chunk)| S::OpenTrading(OpenTradingS2C { part, parts, chunk })),
        Just(S::CloseTrading(CloseTrading {})),
        (
            any::<u8>(),
            any::<u16>(),
            proptest::option::of(item_string())
        )
            .prop_map(|(slot, amount, item)| S::UpdateTrading(UpdateTradingS2C {
                slot,
                amount,
                item
            })),
        (any::<u8>(), any::<u16>())
            .prop_map(|(slot, health)| S::ItemHealth(ItemHealth { slot, health })),
    ]
}

fn inventory_update_c2s() -> impl Strategy<Value = InventoryUpdateC2S> {
    use InventoryUpdateC2S as I;
    prop_oneof![
        (any::<u32>(), any::<u8>()).prop_map(|(dropped, slot)| I::Pickup { dropped, slot }),
        (any::<u8>(), any::<u16>()).prop_map(|(slot, amount)| I::Drop { slot, amount }),
        (any::<u32>(), any::<u8>())
            .prop_map(|(item_handle, slot)| I::OfferAccepted { item_handle, slot }),
        any::<u32>().prop_map(|item_handle| I::OfferRefused { item_handle }),
        (any::<u16>(), any::<u8>(), any::<u8>(), any::<u16>()).prop_map(
            |(runtime_id, from, to, amount)| I::Swap {
                runtime_id,
                from,
                to,
                amount,
            }
        ),
        (any::<u16>(), any::<u8>(), any::<u8>(), any::<u16>()).prop_map(
            |(runtime_id, from, to, amount)| I::Merge {
                runtime_id,
                from,
                to,
                amount,
            }
        ),
    ]
}

/// The three forms of `P_OpenTrading` C→S, with full 32-entry lists (what decoding yields).
fn open_trading_c2s() -> impl Strategy<Value = OpenTradingC2S> {
    let expect =
        (any::<u8>(), any::<u16>()).prop_map(|(slot, amount)| TradeExpect { slot, amount });
    let buy = (any::<u32>(), any::<u16>()).prop_map(|(item_handle, amount)| ShopBuy {
        item_handle,
        amount,
    });
    let sell = (any::<u8>(), any::<u16>()).prop_map(|(slot, amount)| ShopSell { slot, amount });
    prop_oneof![
        Just(OpenTradingC2S::Cancel),
        (
            any::<i32>(),
            vec(expect, TRADE_ENTRIES),
            vec(any::<u16>(), TRADE_ENTRIES)
        )
            .prop_map(|(cost, expect, give)| OpenTradingC2S::PlayerAccept {
                cost,
                expect,
                give
            }),
        (vec(buy, TRADE_ENTRIES), vec(sell, TRADE_ENTRIES))
            .prop_map(|(buy, sell)| OpenTradingC2S::ShopAccept { buy, sell }),
    ]
}

/// Items, gold and trade (C→S).
fn items_client_packet() -> impl Strategy<Value = ClientPacket> {
    use ClientPacket as C;
    prop_oneof![
        inventory_update_c2s().prop_map(C::InventoryUpdate),
        prop_oneof![
            (any::<u8>(), rest()).prop_map(|(slot, spell)| ActionBarUpdate::Spell { slot, spell }),
            (any::<u8>(), any::<u16>())
                .prop_map(|(slot, item_id)| ActionBarUpdate::Item { slot, item_id }),
            any::<u8>().prop_map(|slot| ActionBarUpdate::Clear { slot }),
        ]
        .prop_map(C::ActionBarUpdate),
        open_trading_c2s().prop_map(C::OpenTrading),
        (any::<u8>(), any::<u16>())
            .prop_map(|(slot, amount)| C::UpdateTrading(UpdateTradingC2S { slot, amount })),
        (any::<u8>(), any::<Option<u16>>())
            .prop_map(|(slot, target)| C::ItemScript(ItemScript { slot, target })),
        (any::<u8>(), any::<u16>()).prop_map(|(slot, amount)| C::EatItem(EatItem { slot, amount })),
        any::<u16>().prop_map(|target| C::Examine(Examine { target })),
        any::<u16>().prop_map(|target| C::Trade(Trade { target })),
    ]
}

fn server_packet() -> impl Strategy<Value = ServerPacket> {
    use ServerPacket as S;
    let damage = -1i32..=65534;
    prop_oneof![
        prop_oneof![
            Just(S::CreateAccount(CreateAccountReply::Created)),
            Just(S::CreateAccount(CreateAccountReply::Refused)),
            vec(character_summary(), 0..4)
                .prop_map(|characters| S::VerifyAccount(VerifyAccountReply::Ok { characters })),
            Just(S::VerifyAccount(VerifyAccountReply::BadPassword)),
            Just(S::VerifyAccount(VerifyAccountReply::LoggedOn)),
            fetch_character_reply().prop_map(S::FetchCharacter),
            Just(S::CreateCharacter(CreateCharacterReply::InvalidName)),
            vec(character_summary(), 0..4).prop_map(|characters| S::DeleteCharacter(
                DeleteCharacterReply::List { characters }
            )),
            Just(S::DeleteCharacter(DeleteCharacterReply::Refused)),
            Just(S::ChangePassword(ChangePasswordReply::BadPassword)),
        ],
        fetch_actors_reply().prop_map(S::FetchActors),
        (
            (f32_any(), f32_any(), f32_any(), f32_any()),
            (any::<u8>(), any::<u16>(), any::<u32>(), any::<u8>()),
            s8_long()
        )
            .prop_map(
                |((x, y, z, yaw), (pvp, gravity, instance_handle, weather), area)| {
                    S::ChangeArea(ChangeArea {
                        x,
                        y,
                        z,
                        yaw,
                        pvp,
                        gravity,
                        instance_handle,
                        weather,
                        area,
                    })
                }
            ),
        new_actor().prop_map(S::NewActor),
        prop_oneof![
            (any::<u8>(), vec(action_slot(), 3)).prop_map(|(first_slot, slots)| {
                StartGameReply::ActionBar { first_slot, slots }
            }),
            any::<u16>().prop_map(|runtime_id| StartGameReply::RuntimeId { runtime_id }),
            Just(StartGameReply::Failed),
        ]
        .prop_map(S::StartGame),
        prop_oneof![
            any::<u16>().prop_map(|r| ActorGone {
                runtime_id: u32::from(r),
                four_bytes: false
            }),
            any::<u32>().prop_map(|runtime_id| ActorGone {
                runtime_id,
                four_bytes: true
            }),
        ]
        .prop_map(S::ActorGone),
        standard_update_s2c().prop_map(S::StandardUpdate),
        chat_s2c().prop_map(S::ChatMessage),
        (any::<u32>(), any::<u8>()).prop_map(|(instance_handle, weather)| S::WeatherChange(
            WeatherChange {
                instance_handle,
                weather
            }
        )),
        prop_oneof![
            (any::<u16>(), damage.clone(), any::<u8>()).prop_map(
                |(victim, damage, damage_type)| {
                    AttackActorS2C::Hit {
                        victim,
                        damage,
                        damage_type,
                    }
                }
            ),
            (any::<u16>(), damage, any::<u8>()).prop_map(|(attacker, damage, damage_type)| {
                AttackActorS2C::HitYou {
                    attacker,
                    damage,
                    damage_type,
                }
            }),
            (any::<u16>(), any::<u16>())
                .prop_map(|(attacker, victim)| AttackActorS2C::Observed { attacker, victim }),
        ]
        .prop_map(S::AttackActor),
        (any::<u16>(), any::<Option<u16>>())
            .prop_map(|(runtime_id, killer)| S::ActorDead(ActorDead { runtime_id, killer })),
        prop_oneof![
            (any::<u16>(), any::<u8>(), any::<i16>()).prop_map(|(runtime_id, attribute, value)| {
                StatUpdate::Value {
                    runtime_id,
                    attribute,
                    value,
                }
            }),
            (any::<u16>(), any::<u8>(), any::<i16>()).prop_map(|(runtime_id, attribute, value)| {
                StatUpdate::Max {
                    runtime_id,
                    attribute,
                    value,
                }
            }),
            (any::<u16>(), any::<i16>())
                .prop_map(|(runtime_id, value)| StatUpdate::Reputation { runtime_id, value }),
        ]
        .prop_map(S::StatUpdate),
        prop_oneof![
            any::<u32>().prop_map(|amount| GoldChange::Up { amount }),
            any::<u32>().prop_map(|amount| GoldChange::Down { amount }),
        ]
        .prop_map(S::GoldChange),
        (any::<u16>(), s8_long(), rest()).prop_map(|(runtime_id, actor_name, tag)| {
            S::NameChange(NameChange {
                runtime_id,
                actor_name,
                tag,
            })
        }),
        (any::<u16>(), any::<u8>(), f32_any(), rest()).prop_map(
            |(runtime_id, fixed_speed, speed, animation)| {
                S::AnimateActor(AnimateActor {
                    runtime_id,
                    fixed_speed,
                    speed,
                    animation,
                })
            }
        ),
        prop_oneof![
            any::<u32>().prop_map(|amount| XpUpdate::Gained { amount }),
            any::<u8>().prop_map(|bar_level| XpUpdate::BarLevel { bar_level }),
            any::<u16>().prop_map(|level| XpUpdate::Level { level }),
            (any::<u16>(), any::<u16>())
                .prop_map(|(runtime_id, level)| XpUpdate::LevelUp { runtime_id, level }),
        ]
        .prop_map(S::XpUpdate),
        prop_oneof![
            (any::<u32>(), any::<u16>(), rest()).prop_map(|(handle, icon, effect_name)| {
                ActorEffect::Added {
                    handle,
                    icon,
                    effect_name,
                }
            }),
            (any::<u8>(), any::<i32>())
                .prop_map(|(attr, delta)| ActorEffect::Delta { attr, delta }),
            (any::<u32>(), vec(any::<i32>(), 40))
                .prop_map(|(handle, deltas)| ActorEffect::Removed { handle, deltas }),
        ]
        .prop_map(S::ActorEffect),
        (any::<[u16; 5]>(), any::<[u8; 2]>(), s8(), rest()).prop_map(
            |([source, target, mesh, texture1, texture2], [homing, speed], emitter1, emitter2)| {
                S::Projectile(Projectile {
                    source,
                    target,
                    mesh,
                    texture1,
                    texture2,
                    homing,
                    speed,
                    emitter1,
                    emitter2,
                })
            }
        ),
        vec(s8(), 0..8).prop_map(|members| S::PartyUpdate(PartyUpdate { members })),
        appearance_update().prop_map(S::AppearanceUpdate),
        any::<u16>().prop_map(|runtime_id| S::Jump(JumpS2C { runtime_id })),
        (any::<u16>(), any::<i32>(), any::<[u8; 3]>()).prop_map(
            |(runtime_id, amount, [r, g, b])| {
                S::FloatingNumber(FloatingNumber {
                    runtime_id,
                    amount,
                    r,
                    g,
                    b,
                })
            }
        ),
        reposition().prop_map(S::RepositionActor),
        Just(S::KickedPlayer(KickedPlayer {})),
        items_server_packet(),
        spell_server_packet(),
        dialog_server_packet(),
        quest_server_packet(),
        ui_server_packet(),
        (
            any::<u8>().prop_filter("unknown id", |id| !SERVER_IDS.contains(id)),
            hex_bytes()
        )
            .prop_map(|(id, bytes)| S::Raw { id, bytes }),
    ]
}

fn client_packet() -> impl Strategy<Value = ClientPacket> {
    use ClientPacket as C;
    prop_oneof![
        Just(C::NewClient(NewClient {})),
        (creds(), s8_long())
            .prop_map(|(creds, email)| C::CreateAccount(CreateAccount { creds, email })),
        creds().prop_map(|creds| C::VerifyAccount(VerifyAccount { creds })),
        (creds(), any::<u8>())
            .prop_map(|(creds, index)| C::FetchCharacter(FetchCharacter { creds, index })),
        (
            creds(),
            any::<u16>(),
            any::<[u8; 5]>(),
            vec(any::<u8>(), 40),
            rest()
        )
            .prop_map(
                |(creds, actor_id, [gender, face, hair, beard, body], points, character_name)| {
                    C::CreateCharacter(CreateCharacter {
                        creds,
                        actor_id,
                        gender,
                        face,
                        hair,
                        beard,
                        body,
                        points,
                        character_name,
                    })
                }
            ),
        (creds(), any::<u8>())
            .prop_map(|(creds, index)| C::DeleteCharacter(DeleteCharacter { creds, index })),
        (creds(), s8()).prop_map(
            |(creds, new_password_md5)| C::ChangePassword(ChangePassword {
                creds,
                new_password_md5
            })
        ),
        Just(C::FetchActors(FetchActors {})),
        hex_bytes().prop_map(|bytes| C::ChangeArea(ChangeAreaAck { bytes })),
        (creds(), any::<u8>()).prop_map(|(creds, index)| C::StartGame(StartGame { creds, index })),
        standard_update_c2s().prop_map(C::StandardUpdate),
        rest().prop_map(|text| C::ChatMessage(ChatMessageC2S { text })),
        any::<u16>().prop_map(|target| C::AttackActor(AttackActorC2S { target })),
        any::<u16>().prop_map(|target| C::RightClick(RightClick { target })),
        Just(C::Jump(JumpC2S {})),
        Just(C::Dismount(Dismount {})),
        hex_bytes().prop_map(|bytes| C::RepositionActor(RepositionAck { bytes })),
        items_client_packet(),
        spell_client_packet(),
        dialog_client_packet(),
        ui_client_packet(),
        (
            any::<u8>().prop_filter("unknown id", |id| !CLIENT_IDS.contains(id)),
            hex_bytes()
        )
            .prop_map(|(id, bytes)| C::Raw { id, bytes }),
    ]
}

// ---------------------------------------------------------------- properties

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn server_packets_round_trip(p in prop_oneof![server_packet().boxed(), items_server_packet().boxed()]) {
        let bytes = p.to_bytes();
        let back = ServerPacket::decode_packet(&bytes).unwrap();
        prop_assert_eq!(back.to_bytes(), bytes.clone());
        // `p == p` is false when a float is NaN; the byte comparison covers that case.
        #[allow(clippy::eq_op)]
        if p == p {
            prop_assert_eq!(&back, &p);
        }
        let json = p.to_json();
        let from_json = ServerPacket::from_json(&json).unwrap();
        prop_assert_eq!(from_json.to_bytes(), bytes);
    }

    #[test]
    fn client_packets_round_trip(p in prop_oneof![client_packet().boxed(), items_client_packet().boxed()]) {
        let bytes = p.to_bytes();
        let back = ClientPacket::decode_packet(&bytes).unwrap();
        prop_assert_eq!(back.to_bytes(), bytes.clone());
        #[allow(clippy::eq_op)]
        if p == p {
            prop_assert_eq!(&back, &p);
        }
        let json = p.to_json();
        let from_json = ClientPacket::from_json(&json).unwrap();
        prop_assert_eq!(from_json.to_bytes(), bytes);
    }

    #[test]
    fn trade_windows_round_trip_through_their_chunks(w in trade_window()) {
        let payload = w.to_payload();
        prop_assert_eq!(TradeWindow::from_payload(&payload).unwrap(), w.clone());
        let mut chunks = Vec::new();
        for c in w.to_packets() {
            // Each chunk goes over the wire and back.
            let bytes = ServerPacket::OpenTrading(c).to_bytes();
            match ServerPacket::decode_packet(&bytes).unwrap() {
                ServerPacket::OpenTrading(c) => chunks.push(c),
                other => prop_assert!(false, "{:?}", other),
            }
        }
        chunks.reverse();
        prop_assert_eq!(OpenTradingS2C::assemble(&chunks), Some(payload));
    }

    #[test]
    fn split_and_assemble_any_payload(payload in vec(any::<u8>(), 0..3200), rot in 0usize..3) {
        let mut chunks = OpenTradingS2C::split(&payload);
        let n = chunks.len();
        let want = if payload.len() < 1000 { 1 } else if payload.len() < 2000 { 2 } else { 3 };
        prop_assert_eq!(n, want);
        for (i, c) in chunks.iter().enumerate() {
            prop_assert_eq!((usize::from(c.part), usize::from(c.parts)), (i + 1, n));
            prop_assert!(c.chunk.0.len() <= 999 + i.min(1) || i == 2);
        }
        chunks.rotate_left(rot % n);
        prop_assert_eq!(OpenTradingS2C::assemble(&chunks), Some(payload));
        chunks.pop();
        if n > 1 {
            prop_assert_eq!(OpenTradingS2C::assemble(&chunks), None);
        }
    }

    #[test]
    fn trade_window_decoder_accepts_only_canonical_payloads(
        head in proptest::sample::select(b"PNSx".to_vec()),
        body in vec(any::<u8>(), 0..400),
        records in 0usize..40,
        ware in shop_ware(),
    ) {
        let mut payload = vec![head];
        payload.extend_from_slice(&body);
        let mut shop = vec![b'N'];
        for _ in 0..records {
            shop.extend_from_slice(&TradeWindow::Shop { wares: vec![ware.clone()] }.to_payload()[1..]);
        }
        for p in [payload, shop] {
            if let Ok(w) = TradeWindow::from_payload(&p) {
                prop_assert_eq!(w.to_payload(), p);
            }
        }
    }

    #[test]
    fn open_trading_c2s_short_lists_pad_to_the_fixed_layout(
        cost in any::<i32>(),
        n in 0usize..40,
        amount in any::<u16>(),
    ) {
        // Fewer entries are padded as unused, more are dropped: the length still tells the
        // form apart and decoding yields the full lists.
        let p = OpenTradingC2S::PlayerAccept {
            cost,
            expect: vec![TradeExpect { slot: 1, amount }; n],
            give: vec![amount; n],
        };
        let bytes = ClientPacket::OpenTrading(p).to_bytes();
        prop_assert_eq!(bytes.len(), 165);
        match ClientPacket::decode_packet(&bytes).unwrap() {
            ClientPacket::OpenTrading(OpenTradingC2S::PlayerAccept { cost: c, expect, give }) => {
                prop_assert_eq!(c, cost);
                prop_assert_eq!(expect.len(), TRADE_ENTRIES);
                prop_assert_eq!(give.iter().filter(|&&g| g == amount).count() >= n.min(32), true);
            }
            other => prop_assert!(false, "{:?}", other),
        }
        let s = OpenTradingC2S::ShopAccept {
            buy: vec![ShopBuy { item_handle: 1, amount }; n],
            sell: vec![ShopSell { slot: 14, amount }; n],
        };
        let bytes = ClientPacket::OpenTrading(s).to_bytes();
        prop_assert_eq!(bytes.len(), 289);
        match ClientPacket::decode_packet(&bytes).unwrap() {
            ClientPacket::OpenTrading(OpenTradingC2S::ShopAccept { buy, sell }) => {
                prop_assert_eq!(buy.iter().filter(|b| b.item_handle == u32::MAX).count(), 32 - n.min(32));
                prop_assert_eq!(sell.iter().filter(|s| s.slot == 14).count(), n.min(32));
            }
            other => prop_assert!(false, "{:?}", other),
        }
    }

    #[test]
    fn fast_paths_agree(u in standard_update_c2s(), s in standard_update_s2c()) {
        let payload = u.to_payload();
        let d = StandardUpdateC2S::decode_fast(&payload).unwrap();
        prop_assert_eq!(d.to_payload(), payload);
        let mut framed = Vec::new();
        s.write_frame(&mut framed);
        let mut generic = Vec::new();
        frame::write_packet_frame(&mut generic, |o| ServerPacket::StandardUpdate(s).encode(o)).unwrap();
        prop_assert_eq!(framed, generic);
    }

    #[test]
    fn decoders_never_panic_and_accept_only_canonical_bytes(
        id in any::<u8>(),
        payload in vec(any::<u8>(), 0..300),
        points in any::<bool>(),
    ) {
        let gendered = |t: u16| t.is_multiple_of(2);
        let ctx = DecodeCtx { template_has_gender: Some(&gendered), create_character_points: points };
        for ctx in [DecodeCtx::default(), ctx] {
            if let Ok(p) = ServerPacket::decode_with(id, &payload, &ctx) {
                let mut out = Vec::new();
                p.encode_payload(&mut out);
                prop_assert_eq!(&out, &payload, "{:?}", p);
                let _ = p.to_json();
            }
            if let Ok(p) = ClientPacket::decode_with(id, &payload, &ctx) {
                let mut out = Vec::new();
                p.encode_payload(&mut out);
                prop_assert_eq!(&out, &payload, "{:?}", p);
            }
        }
    }

    #[test]
    fn animate_and_appearance_survive_garbage(
        sub in prop_oneof![
            6 => proptest::sample::select(b"CGDHFB".to_vec()),
            1 => any::<u8>(),
        ],
        tail in vec(any::<u8>(), 0..12),
    ) {
        // Biased towards real sub-codes and short lengths, where the forms differ.
        let mut payload = vec![sub];
        payload.extend_from_slice(&tail);
        for id in [ids::P_ANIMATE_ACTOR, ids::P_APPEARANCE_UPDATE] {
            for len in 0..=payload.len() {
                let bytes = &payload[..len];
                if let Ok(p) = ServerPacket::decode(id, bytes) {
                    let mut out = Vec::new();
                    p.encode_payload(&mut out);
                    prop_assert_eq!(&out, bytes, "{:?}", p);
                    let back = ServerPacket::from_json(&p.to_json()).unwrap();
                    prop_assert_eq!(back.to_bytes(), p.to_bytes());
                }
            }
        }
    }

    #[test]
    fn script_ui_and_update_files_survive_garbage(
        sub in prop_oneof![
            6 => proptest::sample::select(b"NUDC".to_vec()),
            1 => any::<u8>(),
        ],
        tail in vec(any::<u8>(), 0..40),
        entries in vec(update_file_entry(), 0..4),
    ) {
        // Biased towards real sub-codes and, for the update list, real entries, with every
        // prefix tried: the decoders must refuse or re-encode exactly.
        let mut payload = vec![sub];
        payload.extend_from_slice(&tail);
        let mut files = Vec::new();
        ServerPacket::FetchUpdateFiles(UpdateFiles { entries, total: None }).encode_payload(&mut files);
        files.extend_from_slice(&tail[..tail.len().min(3)]);
        for (id, bytes) in [
            (ids::P_QUEST_LOG, &payload),
            (ids::P_PROGRESS_BAR, &payload),
            (ids::P_SCRIPT_INPUT, &payload),
            (ids::P_BUBBLE_MESSAGE, &payload),
            (ids::P_SOUND, &payload),
            (ids::P_SCREEN_FLASH, &payload),
            (ids::P_MUSIC, &payload),
            (ids::P_SPEECH, &payload),
            (ids::P_SELECT_SCENERY, &payload),
            (ids::P_FETCH_ITEMS, &payload),
            (ids::P_FETCH_UPDATE_FILES, &files),
        ] {
            for len in 0..=bytes.len() {
                let bytes = &bytes[..len];
                if let Ok(p) = ServerPacket::decode(id, bytes) {
                    let mut out = Vec::new();
                    p.encode_payload(&mut out);
                    prop_assert_eq!(&out, bytes, "{:?}", p);
                    let back = ServerPacket::from_json(&p.to_json()).unwrap();
                    prop_assert_eq!(back.to_bytes(), p.to_bytes());
                }
                if let Ok(p) = ClientPacket::decode(id, bytes) {
                    let mut out = Vec::new();
                    p.encode_payload(&mut out);
                    prop_assert_eq!(&out, bytes, "{:?}", p);
                    let back = ClientPacket::from_json(&p.to_json()).unwrap();
                    prop_assert_eq!(back.to_bytes(), p.to_bytes());
                }
            }
        }
    }

    #[test]
    fn update_file_chunks_split_like_the_server(files in vec(update_file_entry(), 0..60)) {
        let chunks = update_file_chunks(&files);
        prop_assert!(!chunks.is_empty());
        let size = |e: &UpdateFileEntry| 5 + e.name.len();
        let mut joined = Vec::new();
        for (i, c) in chunks.iter().enumerate() {
            let last = i + 1 == chunks.len();
            prop_assert_eq!(c.total, last.then_some(files.len() as u16));
            let body: usize = c.entries.iter().map(size).sum();
            prop_assert!(body < 950);
            if let Some(next) = chunks.get(i + 1).and_then(|n| n.entries.first()) {
                // A chunk is sent only when the next entry would bring it to 950 or more.
                prop_assert!(body + size(next) >= 950);
            }
            // Every chunk crosses the wire and back.
            let bytes = ServerPacket::FetchUpdateFiles(c.clone()).to_bytes();
            prop_assert_eq!(
                ServerPacket::decode_packet(&bytes).unwrap(),
                ServerPacket::FetchUpdateFiles(c.clone())
            );
            joined.extend(c.entries.iter().cloned());
        }
        prop_assert_eq!(joined, files);
    }

    #[test]
    fn every_id_survives_garbage(payload in vec(any::<u8>(), 0..64)) {
        for id in 0..=255u8 {
            let _ = ServerPacket::decode(id, &payload);
            let _ = ClientPacket::decode(id, &payload);
        }
    }

    #[test]
    fn frame_decoder_never_panics(
        bytes in vec(any::<u8>(), 0..600),
        cuts in vec(0usize..600, 0..8),
        max in 1usize..70_000,
    ) {
        let mut d = FrameDecoder::with_max_frame_len(max);
        let mut cuts = cuts;
        cuts.push(bytes.len());
        cuts.sort_unstable();
        let mut at = 0;
        let mut total = 0usize;
        'outer: for c in cuts {
            let c = c.min(bytes.len());
            if c < at { continue; }
            d.push(&bytes[at..c]);
            at = c;
            loop {
                match d.next_frame() {
                    Ok(Some(f)) => total += 2 + f.len_field(),
                    Ok(None) => break,
                    Err(_) => break 'outer,
                }
            }
        }
        let _ = d.finish();
        prop_assert!(total <= bytes.len());
    }

    #[test]
    fn frame_stream_round_trips(frames in vec((any::<u8>(), vec(any::<u8>(), 0..100)), 0..20), chunk in 1usize..50) {
        let mut stream = Vec::new();
        for (ty, p) in &frames {
            frame::write_frame(&mut stream, *ty, p).unwrap();
        }
        let mut d = FrameDecoder::new();
        let mut got = Vec::new();
        for c in stream.chunks(chunk) {
            d.push(c);
            while let Some(f) = d.next_frame().unwrap() {
                got.push((f.ty, f.payload.to_vec()));
            }
        }
        d.finish().unwrap();
        prop_assert_eq!(got, frames);
    }

    #[test]
    fn split_datagram_never_panics(bytes in vec(any::<u8>(), 0..300)) {
        if let Ok(it) = split_datagram(&bytes, None) {
            let n: usize = it.map(|f| 2 + f.len_field()).sum();
            prop_assert_eq!(n, bytes.len());
        }
        let _ = split_datagram(&bytes, Some(14)).map(|it| it.count());
    }

    #[test]
    fn batcher_packs_and_splits(updates in vec((standard_update_s2c(), update_tail()), 0..120), budget in 30usize..1500) {
        let mut b = Batcher::new(budget);
        for (u, tail) in &updates {
            b.push_update(&u.body(), *tail).unwrap();
        }
        let mut seen = 0;
        for d in b.datagrams() {
            prop_assert!(d.len() <= budget);
            for f in split_datagram(d, Some(14)).unwrap() {
                let (u, tail) = &updates[seen];
                let want = StandardUpdateS2C { tail: *tail, ..*u };
                let got = StandardUpdateS2C::decode_fast(f.payload).unwrap();
                let mut a = Vec::new();
                want.write_frame(&mut a);
                let mut g = Vec::new();
                got.write_frame(&mut g);
                prop_assert_eq!(a, g);
                seen += 1;
            }
        }
        prop_assert_eq!(seen, updates.len());
        b.clear();
        prop_assert!(b.is_empty());
    }
}
