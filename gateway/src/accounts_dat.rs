//! A parser for Realm Crafter's `Accounts.dat` (reference §10): pure, over `&[u8]`, with
//! errors that name the account and character being read. Never panics.
//!
//! Layout per account: `user, pass, email str; isDM u8; banned u8; ignore str; nChars u8`,
//! then per character `WriteActorInstance` (below), then — per character, after its slaves —
//! `(questName, status str) × 500` and `actionBar str × 36`. Strings are `i32 len + bytes`.
//!
//! `WriteActorInstance`: `actorID u16; area, name, tag str; team i32; x, y, z f32; gender u8;
//! xp i32; xpBar u8; level u16; face, hair, beard, body u16; 40 × (value, max u16);
//! resistances 20 × u16; 46 × (item: id u16 (65535 = none), 40 × attr u16, health u8;
//! amount u16); script, death str; rep u16; gold i32; nSlaves u8; home u8; ratings 100 × u8;
//! globals 10 × str; (known spell id, level u16) × 1000; memorised 10 × u16`; then the slaves
//! recursively.
//!
//! Interpretation choices: item attributes and reputation are Blitz shorts (read as `i16`);
//! known-spell entries with id 65535, or id 0 and level 0, are empty; memorised entries of
//! 65535 are empty; the ignore string is split on commas.

use shared::internal::{ActorStateDto, InvSlotDto, KnownSpellDto};

use crate::session::{INVENTORY_SLOTS, latin1};

/// Longest string accepted (bytes).
const MAX_STR: usize = 1 << 20;
/// Deepest slave nesting accepted.
const MAX_DEPTH: usize = 4;

/// One legacy account.
#[derive(Debug, Clone, PartialEq)]
pub struct LegacyAccount {
    /// User name (Latin-1 mapped).
    pub user: String,
    /// The stored password: the lowercase MD5 hex (V0) or a `$1$salt$sha256` string (V1).
    pub password: String,
    /// E-mail.
    pub email: String,
    /// Dungeon master.
    pub is_dm: bool,
    /// Banned.
    pub banned: bool,
    /// Ignored names.
    pub ignore: Vec<String>,
    /// Characters.
    pub characters: Vec<ActorStateDto>,
}

/// A parse failure: where and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Accounts.dat: account #{account}{}: {what} at byte {offset}",
    .character.map(|c| format!(", character #{c}")).unwrap_or_default())]
pub struct ParseError {
    /// Index of the account record.
    pub account: usize,
    /// Index of the character within it, if inside one.
    pub character: Option<usize>,
    /// Byte offset in the file.
    pub offset: usize,
    /// What went wrong.
    pub what: String,
}

struct Cur<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cur<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.pos.checked_add(n).ok_or("length overflow")?;
        let s = self
            .buf
            .get(self.pos..end)
            .ok_or_else(|| format!("truncated (wanted {n} bytes)"))?;
        self.pos = end;
        Ok(s)
    }
    fn arr<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let s = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.arr::<1>()?[0])
    }
    fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_le_bytes(self.arr()?))
    }
    fn i32(&mut self) -> Result<i32, String> {
        Ok(i32::from_le_bytes(self.arr()?))
    }
    fn f32(&mut self) -> Result<f32, String> {
        Ok(f32::from_le_bytes(self.arr()?))
    }
    fn str(&mut self) -> Result<String, String> {
        let n = self.i32()?;
        let n = usize::try_from(n).map_err(|_| format!("negative string length {n}"))?;
        if n > MAX_STR {
            return Err(format!("string length {n} too large"));
        }
        Ok(latin1(self.take(n)?))
    }
}

fn short(v: u16) -> i32 {
    i32::from(i16::from_le_bytes(v.to_le_bytes()))
}

fn read_actor(c: &mut Cur<'_>, depth: usize) -> Result<ActorStateDto, String> {
    if depth > MAX_DEPTH {
        return Err("slaves nested too deep".into());
    }
    let mut a = ActorStateDto {
        template: c.u16()?,
        area: c.str()?,
        name: c.str()?,
        tag: c.str()?,
        team: c.i32()?,
        x: c.f32()?,
        y: c.f32()?,
        z: c.f32()?,
        gender: c.u8()?,
        ..ActorStateDto::default()
    };
    a.xp = u32::try_from(c.i32()?.max(0)).unwrap_or(0);
    a.xp_bar = c.u8()?;
    a.level = c.u16()?;
    a.face = c.u16()?;
    a.hair = c.u16()?;
    a.beard = c.u16()?;
    a.body = c.u16()?;
    for _ in 0..40 {
        a.attributes.push(i32::from(c.u16()?));
        a.attribute_max.push(i32::from(c.u16()?));
    }
    for _ in 0..20 {
        a.resistances.push(i32::from(c.u16()?));
    }
    for _ in 0..INVENTORY_SLOTS {
        let item = c.u16()?;
        let mut attributes = Vec::with_capacity(40);
        for _ in 0..40 {
            attributes.push(short(c.u16()?));
        }
        let health = c.u8()?;
        let amount = c.u16()?;
        a.inventory.push((item != 65535).then_some(InvSlotDto {
            item,
            attributes,
            health,
            amount,
        }));
    }
    a.script = c.str()?;
    a.death_script = c.str()?;
    a.reputation = short(c.u16()?);
    a.gold = c.i32()?;
    let n_slaves = c.u8()?;
    a.home_faction = c.u8()?;
    a.ratings = c.take(100)?.to_vec();
    for _ in 0..10 {
        a.script_globals.push(c.str()?);
    }
    for _ in 0..1000 {
        let id = c.u16()?;
        let level = c.u16()?;
        if id != 65535 && !(id == 0 && level == 0) {
            a.known_spells.push(KnownSpellDto {
                id,
                level,
                charge_ms: 0,
            });
        }
    }
    for _ in 0..10 {
        let m = c.u16()?;
        if m != 65535 {
            a.memorised.push(m);
        }
    }
    for _ in 0..n_slaves {
        a.pets.push(read_actor(c, depth + 1)?);
    }
    Ok(a)
}

/// Parses a whole `Accounts.dat`.
pub fn parse(buf: &[u8]) -> Result<Vec<LegacyAccount>, ParseError> {
    let mut c = Cur { buf, pos: 0 };
    let mut out = Vec::new();
    while c.pos < buf.len() {
        let account = out.len();
        let err = |c: &Cur<'_>, character: Option<usize>, what: String| ParseError {
            account,
            character,
            offset: c.pos,
            what,
        };
        let head = (|| -> Result<_, String> {
            Ok((
                c.str()?,
                c.str()?,
                c.str()?,
                c.u8()? != 0,
                c.u8()? != 0,
                c.str()?,
                c.u8()?,
            ))
        })();
        let (user, password, email, is_dm, banned, ignore, n_chars) =
            head.map_err(|w| err(&c, None, w))?;
        let mut characters = Vec::new();
        for i in 0..usize::from(n_chars) {
            let mut ch = read_actor(&mut c, 0).map_err(|w| err(&c, Some(i), w))?;
            let tail = (|| -> Result<(), String> {
                for _ in 0..500 {
                    let name = c.str()?;
                    let status = c.str()?;
                    if !name.is_empty() {
                        ch.quests.push((name, status));
                    }
                }
                for _ in 0..36 {
                    ch.action_bar.push(c.str()?);
                }
                Ok(())
            })();
            tail.map_err(|w| err(&c, Some(i), w))?;
            characters.push(ch);
        }
        out.push(LegacyAccount {
            user,
            password,
            email,
            is_dm,
            banned,
            ignore: ignore
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect(),
            characters,
        });
    }
    Ok(out)
}

/// Writes accounts in the same layout (for tests and round trips).
pub fn write(accounts: &[LegacyAccount]) -> Vec<u8> {
    fn s(out: &mut Vec<u8>, v: &str) {
        let b = crate::session::latin1_bytes(v);
        out.extend_from_slice(&i32::try_from(b.len()).unwrap_or(0).to_le_bytes());
        out.extend_from_slice(&b);
    }
    fn u16c(v: i32) -> [u8; 2] {
        u16::try_from(v & 0xFFFF).unwrap_or(0).to_le_bytes()
    }
    fn actor(out: &mut Vec<u8>, a: &ActorStateDto) {
        out.extend_from_slice(&a.template.to_le_bytes());
        s(out, &a.area);
        s(out, &a.name);
        s(out, &a.tag);
        out.extend_from_slice(&a.team.to_le_bytes());
        for f in [a.x, a.y, a.z] {
            out.extend_from_slice(&f.to_le_bytes());
        }
        out.push(a.gender);
        out.extend_from_slice(&i32::try_from(a.xp).unwrap_or(i32::MAX).to_le_bytes());
        out.push(a.xp_bar);
        for v in [a.level, a.face, a.hair, a.beard, a.body] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for i in 0..40 {
            out.extend_from_slice(&u16c(a.attributes.get(i).copied().unwrap_or(0)));
            out.extend_from_slice(&u16c(a.attribute_max.get(i).copied().unwrap_or(0)));
        }
        for i in 0..20 {
            out.extend_from_slice(&u16c(a.resistances.get(i).copied().unwrap_or(0)));
        }
        for i in 0..INVENTORY_SLOTS {
            match a.inventory.get(i).and_then(Option::as_ref) {
                Some(it) => {
                    out.extend_from_slice(&it.item.to_le_bytes());
                    for k in 0..40 {
                        out.extend_from_slice(&u16c(it.attributes.get(k).copied().unwrap_or(0)));
                    }
                    out.push(it.health);
                    out.extend_from_slice(&it.amount.to_le_bytes());
                }
                None => {
                    out.extend_from_slice(&65535u16.to_le_bytes());
                    out.extend_from_slice(&[0; 80]);
                    out.push(0);
                    out.extend_from_slice(&0u16.to_le_bytes());
                }
            }
        }
        s(out, &a.script);
        s(out, &a.death_script);
        out.extend_from_slice(&u16c(a.reputation));
        out.extend_from_slice(&a.gold.to_le_bytes());
        out.push(u8::try_from(a.pets.len()).unwrap_or(0));
        out.push(a.home_faction);
        for i in 0..100 {
            out.push(a.ratings.get(i).copied().unwrap_or(0));
        }
        for i in 0..10 {
            s(out, a.script_globals.get(i).map_or("", String::as_str));
        }
        for i in 0..1000 {
            let (id, level) = a
                .known_spells
                .get(i)
                .map_or((65535, 0), |k| (k.id, k.level));
            out.extend_from_slice(&id.to_le_bytes());
            out.extend_from_slice(&level.to_le_bytes());
        }
        for i in 0..10 {
            out.extend_from_slice(&a.memorised.get(i).copied().unwrap_or(65535).to_le_bytes());
        }
        for p in &a.pets {
            actor(out, p);
        }
    }
    let mut out = Vec::new();
    for a in accounts {
        s(&mut out, &a.user);
        s(&mut out, &a.password);
        s(&mut out, &a.email);
        out.push(u8::from(a.is_dm));
        out.push(u8::from(a.banned));
        s(&mut out, &a.ignore.join(","));
        out.push(u8::try_from(a.characters.len()).unwrap_or(0));
        for c in &a.characters {
            actor(&mut out, c);
            for i in 0..500 {
                let (n, st) = c
                    .quests
                    .get(i)
                    .map_or(("", ""), |(n, s)| (n.as_str(), s.as_str()));
                s(&mut out, n);
                s(&mut out, st);
            }
            for i in 0..36 {
                s(&mut out, c.action_bar.get(i).map_or("", String::as_str));
            }
        }
    }
    out
}

/// What [`import_into`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportReport {
    /// Accounts added.
    pub imported: usize,
    /// Accounts skipped, with the reason.
    pub skipped: Vec<(String, String)>,
}

/// Adds legacy accounts to `book` (queueing their persistence ops there).
///
/// Passwords: a V0 record holds the lowercase MD5 hex the client sends, so it is hashed with
/// argon2id directly; a V1 `$1$salt$sha256` record is kept as is and upgraded to argon2id on
/// the account's first successful login; anything else is skipped. Accounts whose user name
/// or a character name already exists are skipped.
pub fn import_into(
    legacy: Vec<LegacyAccount>,
    book: &mut crate::session::AccountBook,
    hasher: &dyn crate::session::PasswordHasher,
    rng: &mut dyn rand::RngCore,
) -> ImportReport {
    let mut report = ImportReport::default();
    for a in legacy {
        let md5 = a.password.to_ascii_lowercase();
        let hash = if md5.len() == 32 && md5.bytes().all(|b| b.is_ascii_hexdigit()) {
            let mut salt = [0u8; 16];
            rng.fill_bytes(&mut salt);
            match hasher.hash(md5.as_bytes(), &salt) {
                Ok(h) => h,
                Err(e) => {
                    report.skipped.push((a.user, e.to_string()));
                    continue;
                }
            }
        } else if a.password.starts_with("$1$") {
            a.password.clone()
        } else {
            report
                .skipped
                .push((a.user, "password is neither MD5 hex nor a V1 record".into()));
            continue;
        };
        let row = crate::session::AccountRow {
            id: 0,
            user: a.user.clone(),
            password_hash: hash,
            email: a.email,
            is_dm: a.is_dm,
            banned: a.banned,
            ignore: a.ignore,
            status: Default::default(),
        };
        match book.import_account(row, a.characters) {
            Some(_) => report.imported += 1,
            None => report
                .skipped
                .push((a.user, "user or character name already exists".into())),
        }
    }
    report
}
