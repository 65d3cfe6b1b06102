//! The SDK's view of the player's abilities (rc-content-reference §5): the known spells
//! in the client's own numbering, their levels, the memorised ones and the cooldowns the
//! client predicts, fed by the login `"S"` blocks and `P_KnownSpellUpdate`; and the
//! ability actions ([`Connection::cast`], [`Connection::memorise`],
//! [`Connection::unmemorise`]) in `P_SpellUpdate`.
//!
//! Realm Crafter's client numbers its known spells in the order it is told of them and
//! leaves a hole where one is forgotten; `"M"`/`"U"` carry that number, `"F"` the spell
//! id. [`Spellbook`] keeps the same numbering, so the SDK sends what the real client
//! would. Memorising takes six seconds on the server and nothing is sent back: the book
//! marks a spell memorised once [`MEMORISE_MS`] have passed since the request.

use std::time::{Duration, Instant};

use shared::proto::{ClientPacket, KnownSpell, KnownSpellUpdate, SpellUpdate};

use crate::conn::Connection;
use crate::error::ClientError;

/// How long the server takes to memorise a spell.
pub const MEMORISE_MS: u64 = 6000;

/// One spell in the book.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BookSpell {
    /// The spell id (what `"F"` sends).
    pub id: u16,
    /// Its name.
    pub name: String,
    /// Its level.
    pub level: u32,
    /// Its recharge time as the server told it (ms, 16 bits).
    pub recharge_ms: u16,
    /// Memorised (as far as the client knows).
    pub memorised: bool,
}

/// The player's abilities, in the client's numbering (`None` = a forgotten spell's hole).
#[derive(Debug, Clone, Default)]
pub struct Spellbook {
    entries: Vec<Option<BookSpell>>,
    /// Memorisations requested: client index and when.
    memorising: Vec<(usize, Instant)>,
    /// When each spell id may be cast again (the client's own prediction).
    ready_at: Vec<(u16, Instant)>,
}

fn text(b: &[u8]) -> String {
    b.iter().map(|&c| char::from(c)).collect()
}

impl Spellbook {
    /// From the login `"S"` blocks, in order.
    pub fn load(&mut self, spells: &[KnownSpell]) {
        self.entries = spells.iter().map(|s| Some(book_spell(s))).collect();
        self.memorising.clear();
        self.ready_at.clear();
    }

    /// Apply a `P_KnownSpellUpdate`.
    pub fn apply(&mut self, u: &KnownSpellUpdate) {
        match u {
            KnownSpellUpdate::Added { spell } => self.entries.push(Some(book_spell(spell))),
            KnownSpellUpdate::Deleted { spell_name } => {
                let name = text(spell_name.as_bytes());
                for e in &mut self.entries {
                    if e.as_ref()
                        .is_some_and(|s| s.name.eq_ignore_ascii_case(&name))
                    {
                        *e = None;
                    }
                }
            }
            KnownSpellUpdate::Level { level, spell_name } => {
                let name = text(spell_name.as_bytes());
                for s in self.entries.iter_mut().flatten() {
                    if s.name.eq_ignore_ascii_case(&name) {
                        s.level = *level;
                    }
                }
            }
        }
    }

    /// Finish the memorisations whose six seconds are up.
    fn settle(&mut self, now: Instant) {
        let due = Duration::from_millis(MEMORISE_MS);
        let entries = &mut self.entries;
        self.memorising.retain(|&(i, t)| {
            if now.duration_since(t) < due {
                return true;
            }
            if let Some(Some(s)) = entries.get_mut(i) {
                s.memorised = true;
            }
            false
        });
    }

    /// The known spells (holes skipped), with their client index.
    pub fn known(&self) -> impl Iterator<Item = (usize, &BookSpell)> {
        self.entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.as_ref().map(|s| (i, s)))
    }

    /// The client index and entry of a spell by name (case-insensitive).
    pub fn find(&self, name: &str) -> Option<(usize, &BookSpell)> {
        self.known()
            .find(|(_, s)| s.name.eq_ignore_ascii_case(name))
    }

    /// The entry of a spell id.
    pub fn by_id(&self, id: u16) -> Option<(usize, &BookSpell)> {
        self.known().find(|(_, s)| s.id == id)
    }

    /// Whether the spell is memorised, as far as the client knows (after the 6 s).
    pub fn is_memorised(&mut self, id: u16) -> bool {
        self.settle(Instant::now());
        self.by_id(id).is_some_and(|(_, s)| s.memorised)
    }

    /// Whether the client predicts the spell has recharged.
    pub fn is_ready(&self, id: u16) -> bool {
        let now = Instant::now();
        self.ready_at.iter().all(|&(s, t)| s != id || now >= t)
    }

    fn casting(&mut self, id: u16) {
        let recharge = self.by_id(id).map_or(0, |(_, s)| s.recharge_ms);
        self.ready_at.retain(|&(s, _)| s != id);
        self.ready_at.push((
            id,
            Instant::now() + Duration::from_millis(u64::from(recharge)),
        ));
    }
}

fn book_spell(s: &KnownSpell) -> BookSpell {
    BookSpell {
        id: s.id,
        name: text(s.name.as_bytes()),
        level: u32::from(s.level),
        recharge_ms: s.recharge,
        memorised: s.memorised != 0,
    }
}

impl Connection {
    /// The view of the player's abilities.
    pub fn spells(&self) -> &Spellbook {
        &self.spells
    }

    /// Mutable view (for a caller that feeds it from its own packets).
    pub fn spells_mut(&mut self) -> &mut Spellbook {
        &mut self.spells
    }

    /// Cast a spell by id, optionally at an actor (`P_SpellUpdate "F"`). The server checks
    /// everything (known, memorised, recharge, race and class, range); a refusal comes back
    /// as a red chat line, or not at all.
    #[doc(alias = "P_SpellUpdate")]
    pub async fn cast(&mut self, spell_id: u16, target: Option<u16>) -> Result<(), ClientError> {
        self.spells.casting(spell_id);
        self.send(&ClientPacket::SpellUpdate(SpellUpdate::Fire {
            spell_id,
            target,
        }))
        .await
    }

    /// Memorise a known spell (`P_SpellUpdate "M"` with the client's index): the server
    /// memorises it six seconds later and says nothing. Returns `false` (and sends
    /// nothing) when the book does not know the spell.
    #[doc(alias = "P_SpellUpdate")]
    pub async fn memorise(&mut self, spell_id: u16) -> Result<bool, ClientError> {
        let Some((i, _)) = self.spells.by_id(spell_id) else {
            return Ok(false);
        };
        let Ok(index) = u16::try_from(i) else {
            return Ok(false);
        };
        self.spells.memorising.push((i, Instant::now()));
        self.send(&ClientPacket::SpellUpdate(SpellUpdate::Memorise { index }))
            .await?;
        Ok(true)
    }

    /// Un-memorise a spell (`P_SpellUpdate "U"`). Returns `false` when the book does not
    /// know it.
    #[doc(alias = "P_SpellUpdate")]
    pub async fn unmemorise(&mut self, spell_id: u16) -> Result<bool, ClientError> {
        let Some((i, _)) = self.spells.by_id(spell_id) else {
            return Ok(false);
        };
        let Ok(index) = u16::try_from(i) else {
            return Ok(false);
        };
        if let Some(Some(s)) = self.spells.entries.get_mut(i) {
            s.memorised = false;
        }
        self.spells.memorising.retain(|&(j, _)| j != i);
        self.send(&ClientPacket::SpellUpdate(SpellUpdate::Unmemorise {
            index,
        }))
        .await?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spell(id: u16, name: &str) -> KnownSpell {
        KnownSpell {
            level: 1,
            id,
            thumb: 0,
            recharge: 500,
            name: name.into(),
            description: "".into(),
            memorised: 0,
        }
    }

    /// The book numbers spells as Realm Crafter's client does: appended, holed on delete.
    #[test]
    fn numbering_follows_the_client() {
        let mut b = Spellbook::default();
        b.load(&[spell(4, "Bolt"), spell(9, "Heal")]);
        b.apply(&KnownSpellUpdate::Deleted {
            spell_name: "BOLT".into(),
        });
        b.apply(&KnownSpellUpdate::Added {
            spell: spell(4, "Bolt"),
        });
        b.apply(&KnownSpellUpdate::Level {
            level: 3,
            spell_name: "heal".into(),
        });
        let known: Vec<(usize, u16, u32)> = b.known().map(|(i, s)| (i, s.id, s.level)).collect();
        assert_eq!(known, vec![(1, 9, 3), (2, 4, 1)]);
        assert_eq!(b.find("bolt").map(|(i, _)| i), Some(2));
        assert!(b.is_ready(4));
        b.casting(4);
        assert!(!b.is_ready(4));
    }
}
