//! `P_FetchActors` (7) S→C: the catalogue blocks the client loads before character
//! selection (attributes, damage types, environment, items, factions, actor templates;
//! reference §5 step 3).

use serde::{Deserialize, Serialize};

use super::{DecodeCtx, Packet, bad_sub, ids};
use crate::wire::{DecodeError, RcString, Reader, WireWrite, json_f32};

/// One attribute of the `"A"` block: `isSkill u8, hidden u8, u8 len, name`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttributeDef {
    /// Whether the attribute is a skill.
    pub is_skill: u8,
    /// Whether it is hidden from the player.
    pub hidden: u8,
    /// Its name.
    pub name: RcString,
}

/// One season of the `"E"` block: `u8 len name, startDay u16, duskH u8, dawnH u8`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeasonDef {
    /// Name.
    pub name: RcString,
    /// First day of the season.
    pub start_day: u16,
    /// Hour of dusk.
    pub dusk_hour: u8,
    /// Hour of dawn.
    pub dawn_hour: u8,
}

/// One month of the `"E"` block: `u8 len name, startDay u16`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MonthDef {
    /// Name.
    pub name: RcString,
    /// First day of the month.
    pub start_day: u16,
}

/// The type-specific tail of an [`ItemDef`], chosen by `item_type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ItemTail {
    /// No tail (ring, other, unknown types).
    None,
    /// Weapon (type 1): `dmg, dmgType, weaponType u16, range f32`.
    Weapon {
        /// Damage.
        damage: u16,
        /// Damage type index.
        damage_type: u16,
        /// 1 one-hand, 2 two-hand, 3 ranged.
        weapon_type: u16,
        /// Range.
        #[serde(with = "json_f32")]
        range: f32,
    },
    /// Armour (type 2): `level u16`.
    Armour {
        /// Armour level.
        level: u16,
    },
    /// Potion or ingredient (types 4, 5): `secs u16`.
    Consumable {
        /// Effect length in seconds.
        seconds: u16,
    },
    /// Image (type 6): `imageID u16`.
    Image {
        /// The image id.
        image_id: u16,
    },
}

/// One item of an `"IN"` block (V1 layout: every item ends with `u8 len misc`).
///
/// `id u16, type u8, takesDmg u8, value u32, mass u16, thumb u16, 6 × gubbin u8,
/// mMesh u16, fMesh u16, slotType u16, stackable u8, 40 × (attr+5000) u16, u8-len name,
/// exclRace, exclClass`, the type tail ([`ItemTail`]), then `u8 len misc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemDef {
    /// Item id.
    pub id: u16,
    /// 1 weapon, 2 armour, 3 ring, 4 potion, 5 ingredient, 6 image, 7 other.
    pub item_type: u8,
    /// Whether the item takes damage.
    pub takes_damage: u8,
    /// Value in gold.
    pub value: u32,
    /// Mass.
    pub mass: u16,
    /// Thumbnail texture id.
    pub thumb: u16,
    /// Gubbin flags.
    pub gubbins: [u8; 6],
    /// Male mesh id.
    pub male_mesh: u16,
    /// Female mesh id.
    pub female_mesh: u16,
    /// Slot type.
    pub slot_type: u16,
    /// Whether it stacks.
    pub stackable: u8,
    /// 40 attribute modifiers as sent (`attr + 5000`).
    pub attributes: Vec<u16>,
    /// Name.
    pub name: RcString,
    /// Race restriction.
    pub exclusive_race: RcString,
    /// Class restriction.
    pub exclusive_class: RcString,
    /// Type-specific tail. The decoder picks it from `item_type`; the encoder writes it as
    /// given.
    pub tail: ItemTail,
    /// Free text (`misc`).
    pub misc: RcString,
}

impl ItemDef {
    /// Reads one item.
    pub fn read(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let id = r.u16()?;
        let item_type = r.u8()?;
        let takes_damage = r.u8()?;
        let value = r.u32()?;
        let mass = r.u16()?;
        let thumb = r.u16()?;
        let gubbins = r.array::<6>()?;
        let male_mesh = r.u16()?;
        let female_mesh = r.u16()?;
        let slot_type = r.u16()?;
        let stackable = r.u8()?;
        let attributes = r.many(40, Reader::u16)?;
        let name = r.string8()?;
        let exclusive_race = r.string8()?;
        let exclusive_class = r.string8()?;
        let tail = match item_type {
            1 => ItemTail::Weapon {
                damage: r.u16()?,
                damage_type: r.u16()?,
                weapon_type: r.u16()?,
                range: r.f32()?,
            },
            2 => ItemTail::Armour { level: r.u16()? },
            4 | 5 => ItemTail::Consumable { seconds: r.u16()? },
            6 => ItemTail::Image { image_id: r.u16()? },
            _ => ItemTail::None,
        };
        let misc = r.string8()?;
        Ok(Self {
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
        })
    }

    /// Writes one item.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.put_u16(self.id);
        out.put_u8(self.item_type);
        out.put_u8(self.takes_damage);
        out.put_u32(self.value);
        out.put_u16(self.mass);
        out.put_u16(self.thumb);
        out.put_bytes(&self.gubbins);
        out.put_u16(self.male_mesh);
        out.put_u16(self.female_mesh);
        out.put_u16(self.slot_type);
        out.put_u8(self.stackable);
        for a in &self.attributes {
            out.put_u16(*a);
        }
        out.put_str8(&self.name.0);
        out.put_str8(&self.exclusive_race.0);
        out.put_str8(&self.exclusive_class.0);
        match &self.tail {
            ItemTail::None => {}
            ItemTail::Weapon {
                damage,
                damage_type,
                weapon_type,
                range,
            } => {
                out.put_u16(*damage);
                out.put_u16(*damage_type);
                out.put_u16(*weapon_type);
                out.put_f32(*range);
            }
            ItemTail::Armour { level } => out.put_u16(*level),
            ItemTail::Consumable { seconds } => out.put_u16(*seconds),
            ItemTail::Image { image_id } => out.put_u16(*image_id),
        }
        out.put_str8(&self.misc.0);
    }
}

/// One faction of the `"F"` block: `u8 len, index u8, name`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FactionDef {
    /// Faction index 0..99.
    pub index: u8,
    /// Name.
    pub name: RcString,
}

/// A current/maximum attribute pair: `value u16, max u16`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttributePair {
    /// Current value.
    pub value: u16,
    /// Maximum.
    pub max: u16,
}

impl AttributePair {
    /// Reads a pair.
    pub fn read(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            value: r.u16()?,
            max: r.u16()?,
        })
    }
    /// Writes a pair.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.put_u16(self.value);
        out.put_u16(self.max);
    }
}

/// One actor template of an `"N"` block.
///
/// `id u16, playable u8, polyColl u8`; u16 arrays: 8 meshes, 5 each of beard, male hair,
/// female hair, male face, female face, male body, female body, 16 male speech, 16 female
/// speech; `rideable u8, trade u8, blood u16, aggr u8, genders u8, env u8, invSlots u16,
/// mAnim u16, fAnim u16, scale f32, faction u8`; 40 × `(value u16, max u16)`;
/// `u8 len race`, `u8 len class`, `u16 len description`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActorTemplateDef {
    /// Template id.
    pub id: u16,
    /// Whether players may pick it.
    pub playable: u8,
    /// Polygon collision flag.
    pub poly_collision: u8,
    /// 8 mesh ids.
    pub meshes: [u16; 8],
    /// 5 beard ids.
    pub beards: [u16; 5],
    /// 5 male hair ids.
    pub male_hair: [u16; 5],
    /// 5 female hair ids.
    pub female_hair: [u16; 5],
    /// 5 male face ids.
    pub male_faces: [u16; 5],
    /// 5 female face ids.
    pub female_faces: [u16; 5],
    /// 5 male body ids.
    pub male_bodies: [u16; 5],
    /// 5 female body ids.
    pub female_bodies: [u16; 5],
    /// 16 male speech sounds.
    pub male_speech: [u16; 16],
    /// 16 female speech sounds.
    pub female_speech: [u16; 16],
    /// Whether it can be ridden.
    pub rideable: u8,
    /// 0 no trade, 1 free, 2 shop.
    pub trade: u8,
    /// Blood texture id.
    pub blood: u16,
    /// Aggressiveness (0 passive .. 3 non-combatant).
    pub aggressiveness: u8,
    /// `Genders`: 0 both, 1 male, 2 female, 3 none.
    pub genders: u8,
    /// `Environment`: 0 amphibious, 1 swim, 2 fly, 3 walk.
    pub environment: u8,
    /// Inventory slot flags.
    pub inventory_slots: u16,
    /// Male animation set.
    pub male_anim: u16,
    /// Female animation set.
    pub female_anim: u16,
    /// Scale.
    #[serde(with = "json_f32")]
    pub scale: f32,
    /// Default faction.
    pub faction: u8,
    /// 40 attribute value/maximum pairs.
    pub attributes: Vec<AttributePair>,
    /// Race.
    pub race: RcString,
    /// Class.
    pub class: RcString,
    /// Description (`u16` length).
    pub description: RcString,
}

fn read_u16s<const N: usize>(r: &mut Reader<'_>) -> Result<[u16; N], DecodeError> {
    let mut a = [0u16; N];
    for v in &mut a {
        *v = r.u16()?;
    }
    Ok(a)
}

fn write_u16s(out: &mut Vec<u8>, a: &[u16]) {
    for v in a {
        out.put_u16(*v);
    }
}

impl ActorTemplateDef {
    /// Reads one template.
    pub fn read(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            id: r.u16()?,
            playable: r.u8()?,
            poly_collision: r.u8()?,
            meshes: read_u16s(r)?,
            beards: read_u16s(r)?,
            male_hair: read_u16s(r)?,
            female_hair: read_u16s(r)?,
            male_faces: read_u16s(r)?,
            female_faces: read_u16s(r)?,
            male_bodies: read_u16s(r)?,
            female_bodies: read_u16s(r)?,
            male_speech: read_u16s(r)?,
            female_speech: read_u16s(r)?,
            rideable: r.u8()?,
            trade: r.u8()?,
            blood: r.u16()?,
            aggressiveness: r.u8()?,
            genders: r.u8()?,
            environment: r.u8()?,
            inventory_slots: r.u16()?,
            male_anim: r.u16()?,
            female_anim: r.u16()?,
            scale: r.f32()?,
            faction: r.u8()?,
            attributes: r.many(40, AttributePair::read)?,
            race: r.string8()?,
            class: r.string8()?,
            description: r.string16()?,
        })
    }

    /// Writes one template.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.put_u16(self.id);
        out.put_u8(self.playable);
        out.put_u8(self.poly_collision);
        write_u16s(out, &self.meshes);
        write_u16s(out, &self.beards);
        write_u16s(out, &self.male_hair);
        write_u16s(out, &self.female_hair);
        write_u16s(out, &self.male_faces);
        write_u16s(out, &self.female_faces);
        write_u16s(out, &self.male_bodies);
        write_u16s(out, &self.female_bodies);
        write_u16s(out, &self.male_speech);
        write_u16s(out, &self.female_speech);
        out.put_u8(self.rideable);
        out.put_u8(self.trade);
        out.put_u16(self.blood);
        out.put_u8(self.aggressiveness);
        out.put_u8(self.genders);
        out.put_u8(self.environment);
        out.put_u16(self.inventory_slots);
        out.put_u16(self.male_anim);
        out.put_u16(self.female_anim);
        out.put_f32(self.scale);
        out.put_u8(self.faction);
        for a in &self.attributes {
            a.write(out);
        }
        out.put_str8(&self.race.0);
        out.put_str8(&self.class.0);
        out.put_str16(&self.description.0);
    }
}

/// `P_FetchActors` (7) S→C: one catalogue block, told apart by its sub-code.
///
/// | sub | layout |
/// |---|---|
/// |`"A"`|`assignment u8`, 40 × [`AttributeDef`]|
/// |`"D"`|20 × `u8 len, name` (damage types)|
/// |`"E"`|`Year u32, Day u16, H u8, M u8, TimeFactor u8`, 12 × [`SeasonDef`], 20 × [`MonthDef`]|
/// |`"IN"`|[`ItemDef`]s to the end (blocks of 6)|
/// |`"IY"`|`total u16`: the last item block|
/// |`"F"`|[`FactionDef`]s to the end|
/// |`"N"`|[`ActorTemplateDef`]s to the end (blocks of 2)|
/// |`"Y"`|`total u16`: the last actor block|
///
/// The `"A"`, `"D"` and `"E"` counts are taken from the vectors as given when encoding
/// and are fixed (40, 20, 12/20) when decoding.
#[doc(alias = "P_FetchActors")]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "sub")]
pub enum FetchActorsReply {
    /// `"A"`: attribute names and flags.
    #[serde(rename = "A")]
    Attributes {
        /// Creation points (`Assignment`).
        assignment: u8,
        /// 40 attributes.
        attributes: Vec<AttributeDef>,
    },
    /// `"D"`: 20 damage type names.
    #[serde(rename = "D")]
    DamageTypes {
        /// Names.
        names: Vec<RcString>,
    },
    /// `"E"`: the environment (calendar and clock).
    #[serde(rename = "E")]
    Environment {
        /// Year.
        year: u32,
        /// Day of the year.
        day: u16,
        /// Hour.
        hour: u8,
        /// Minute.
        minute: u8,
        /// Game minutes per real minute.
        time_factor: u8,
        /// 12 seasons.
        seasons: Vec<SeasonDef>,
        /// 20 months.
        months: Vec<MonthDef>,
    },
    /// `"IN"`: a block of items.
    #[serde(rename = "IN")]
    Items {
        /// The items.
        items: Vec<ItemDef>,
    },
    /// `"IY"`: items done.
    #[serde(rename = "IY")]
    ItemsDone {
        /// Number of items sent.
        total: u16,
    },
    /// `"F"`: faction names.
    #[serde(rename = "F")]
    Factions {
        /// The factions.
        factions: Vec<FactionDef>,
    },
    /// `"N"`: a block of actor templates.
    #[serde(rename = "N")]
    Actors {
        /// The templates.
        actors: Vec<ActorTemplateDef>,
    },
    /// `"Y"`: actors done.
    #[serde(rename = "Y")]
    ActorsDone {
        /// Number of templates sent.
        total: u16,
    },
}

impl Packet for FetchActorsReply {
    const ID: u8 = ids::P_FETCH_ACTORS;
    const NAME: &'static str = "P_FetchActors";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let v = match r.u8()? {
            b'A' => Self::Attributes {
                assignment: r.u8()?,
                attributes: r.many(40, |r| {
                    Ok(AttributeDef {
                        is_skill: r.u8()?,
                        hidden: r.u8()?,
                        name: r.string8()?,
                    })
                })?,
            },
            b'D' => Self::DamageTypes {
                names: r.many(20, Reader::string8)?,
            },
            b'E' => Self::Environment {
                year: r.u32()?,
                day: r.u16()?,
                hour: r.u8()?,
                minute: r.u8()?,
                time_factor: r.u8()?,
                seasons: r.many(12, |r| {
                    Ok(SeasonDef {
                        name: r.string8()?,
                        start_day: r.u16()?,
                        dusk_hour: r.u8()?,
                        dawn_hour: r.u8()?,
                    })
                })?,
                months: r.many(20, |r| {
                    Ok(MonthDef {
                        name: r.string8()?,
                        start_day: r.u16()?,
                    })
                })?,
            },
            b'I' => {
                let at = r.offset();
                match r.u8()? {
                    b'N' => Self::Items {
                        items: r.until_end(ItemDef::read)?,
                    },
                    b'Y' => Self::ItemsDone { total: r.u16()? },
                    c => return Err(bad_sub(at, c)),
                }
            }
            b'F' => Self::Factions {
                factions: r.until_end(|r| {
                    let n = r.u8()?;
                    let index = r.u8()?;
                    let name = RcString::from(r.bytes(usize::from(n))?);
                    Ok(FactionDef { index, name })
                })?,
            },
            b'N' => Self::Actors {
                actors: r.until_end(ActorTemplateDef::read)?,
            },
            b'Y' => Self::ActorsDone { total: r.u16()? },
            c => return Err(bad_sub(0, c)),
        };
        r.finish()?;
        Ok(v)
    }

    fn encode_payload(&self, out: &mut Vec<u8>) {
        match self {
            Self::Attributes {
                assignment,
                attributes,
            } => {
                out.push(b'A');
                out.push(*assignment);
                for a in attributes {
                    out.push(a.is_skill);
                    out.push(a.hidden);
                    out.put_str8(&a.name.0);
                }
            }
            Self::DamageTypes { names } => {
                out.push(b'D');
                for n in names {
                    out.put_str8(&n.0);
                }
            }
            Self::Environment {
                year,
                day,
                hour,
                minute,
                time_factor,
                seasons,
                months,
            } => {
                out.push(b'E');
                out.put_u32(*year);
                out.put_u16(*day);
                out.put_bytes(&[*hour, *minute, *time_factor]);
                for s in seasons {
                    out.put_str8(&s.name.0);
                    out.put_u16(s.start_day);
                    out.put_bytes(&[s.dusk_hour, s.dawn_hour]);
                }
                for m in months {
                    out.put_str8(&m.name.0);
                    out.put_u16(m.start_day);
                }
            }
            Self::Items { items } => {
                out.extend_from_slice(b"IN");
                for i in items {
                    i.write(out);
                }
            }
            Self::ItemsDone { total } => {
                out.extend_from_slice(b"IY");
                out.put_u16(*total);
            }
            Self::Factions { factions } => {
                out.push(b'F');
                for f in factions {
                    let name = f.name.0.get(..f.name.len().min(255)).unwrap_or(&[]);
                    out.push(name.len() as u8);
                    out.push(f.index);
                    out.put_bytes(name);
                }
            }
            Self::Actors { actors } => {
                out.push(b'N');
                for a in actors {
                    a.write(out);
                }
            }
            Self::ActorsDone { total } => {
                out.push(b'Y');
                out.put_u16(*total);
            }
        }
    }
}
