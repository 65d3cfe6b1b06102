//! Serde helpers for the native TOML form: trimmed fixed-size tables and compact reprs.
//!
//! In memory the Realm Crafter tables have their full length; in TOML trailing default
//! entries are omitted and padded back on load (more than the table size is an error).

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::model::{
    ATTRIBUTE_COUNT, AttributeDef, Attributes, FACTION_COUNT, Factions, MONTH_COUNT, SEASON_COUNT,
};

/// Serializes a slice without its trailing `Default` entries.
pub(crate) fn ser_trimmed<T, S>(v: &[T], s: S) -> Result<S::Ok, S::Error>
where
    T: Serialize + Default + PartialEq,
    S: Serializer,
{
    let default = T::default();
    let len = v.iter().rposition(|x| *x != default).map_or(0, |i| i + 1);
    v.get(..len).unwrap_or(&[]).serialize(s)
}

fn de_padded<'de, D, T>(d: D, n: usize) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default + Clone,
{
    let mut v = Vec::<T>::deserialize(d)?;
    if v.len() > n {
        return Err(D::Error::custom(format!(
            "at most {n} entries allowed, found {}",
            v.len()
        )));
    }
    v.resize(n, T::default());
    Ok(v)
}

/// Deserializes a list padded to 12 entries (seasons).
pub(crate) fn de_padded_12<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default + Clone,
{
    de_padded(d, SEASON_COUNT)
}

/// Deserializes a list padded to 20 entries (damage types, months).
pub(crate) fn de_padded_20<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default + Clone,
{
    de_padded(d, MONTH_COUNT)
}

/// Deserializes a list padded to 40 entries (attributes).
pub(crate) fn de_padded_40<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default + Clone,
{
    de_padded(d, ATTRIBUTE_COUNT)
}

/// One `[[faction]]` table of the TOML form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FactionEntry {
    /// Faction id, 0..100.
    pub id: u8,
    /// Name.
    #[serde(default)]
    pub name: String,
    /// Ratings of factions 0.. (trailing zeros omitted; missing = 0).
    #[serde(default)]
    pub ratings: Vec<u8>,
}

impl From<Factions> for Vec<FactionEntry> {
    fn from(f: Factions) -> Self {
        let mut out = Vec::new();
        for (i, name) in f.names.iter().enumerate() {
            let row = f.default_ratings.get(i).cloned().unwrap_or_default();
            let len = row.iter().rposition(|r| *r != 0).map_or(0, |p| p + 1);
            if name.is_empty() && len == 0 {
                continue;
            }
            let Ok(id) = u8::try_from(i) else { continue };
            out.push(FactionEntry {
                id,
                name: name.clone(),
                ratings: row.get(..len).unwrap_or(&[]).to_vec(),
            });
        }
        out
    }
}

impl TryFrom<Vec<FactionEntry>> for Factions {
    type Error = String;
    fn try_from(entries: Vec<FactionEntry>) -> Result<Self, String> {
        let mut f = Factions::default();
        let mut seen = [false; FACTION_COUNT];
        for e in entries {
            let id = usize::from(e.id);
            if id >= FACTION_COUNT {
                return Err(format!("faction id {id} out of range 0..{FACTION_COUNT}"));
            }
            if e.ratings.len() > FACTION_COUNT {
                return Err(format!(
                    "faction {id}: at most {FACTION_COUNT} ratings, found {}",
                    e.ratings.len()
                ));
            }
            if let Some(s) = seen.get_mut(id) {
                if *s {
                    return Err(format!("faction id {id} listed twice"));
                }
                *s = true;
            }
            if let Some(n) = f.names.get_mut(id) {
                *n = e.name;
            }
            if let Some(row) = f.default_ratings.get_mut(id) {
                for (dst, src) in row.iter_mut().zip(e.ratings) {
                    *dst = src;
                }
            }
        }
        Ok(f)
    }
}

/// The TOML form of [`Attributes`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct AttributesRepr {
    /// Creation points.
    pub assignment_points: u8,
    /// Names by index (trailing empty names omitted).
    pub names: Vec<String>,
    /// Indices shown as skills.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<u8>,
    /// Indices hidden from the player.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hidden: Vec<u8>,
}

impl From<Attributes> for AttributesRepr {
    fn from(a: Attributes) -> Self {
        let len = a
            .defs
            .iter()
            .rposition(|d| !d.name.is_empty())
            .map_or(0, |i| i + 1);
        let idx = |pred: fn(&AttributeDef) -> bool| {
            a.defs
                .iter()
                .enumerate()
                .filter(|(_, d)| pred(d))
                .filter_map(|(i, _)| u8::try_from(i).ok())
                .collect::<Vec<u8>>()
        };
        Self {
            assignment_points: a.assignment_points,
            names: a.defs.iter().take(len).map(|d| d.name.clone()).collect(),
            skills: idx(|d| d.is_skill),
            hidden: idx(|d| d.hidden),
        }
    }
}

impl TryFrom<AttributesRepr> for Attributes {
    type Error = String;
    fn try_from(r: AttributesRepr) -> Result<Self, String> {
        if r.names.len() > ATTRIBUTE_COUNT {
            return Err(format!(
                "at most {ATTRIBUTE_COUNT} attribute names, found {}",
                r.names.len()
            ));
        }
        let mut a = Attributes {
            assignment_points: r.assignment_points,
            ..Attributes::default()
        };
        for (d, n) in a.defs.iter_mut().zip(r.names) {
            d.name = n;
        }
        for (list, what) in [(&r.skills, "skills"), (&r.hidden, "hidden")] {
            for &i in list {
                let Some(d) = a.defs.get_mut(usize::from(i)) else {
                    return Err(format!("attributes.{what}: index {i} out of range 0..40"));
                };
                if what == "skills" {
                    d.is_skill = true;
                } else {
                    d.hidden = true;
                }
            }
        }
        Ok(a)
    }
}

/// Serializes an `f32` through its shortest decimal form (`24.63`, not
/// `24.6299991607666`); reading it back as `f32` gives the same value.
pub(crate) fn ser_f32<S: Serializer>(v: &f32, s: S) -> Result<S::Ok, S::Error> {
    let short = v
        .to_string()
        .parse::<f64>()
        .unwrap_or_else(|_| f64::from(*v));
    s.serialize_f64(short)
}

/// `skip_serializing_if` helper for integers that default to zero.
pub(crate) fn is_zero(v: &i32) -> bool {
    *v == 0
}

/// `skip_serializing_if` helper: every entry equals its default.
pub(crate) fn all_default<T: Default + PartialEq>(v: &[T]) -> bool {
    let d = T::default();
    v.iter().all(|x| *x == d)
}
