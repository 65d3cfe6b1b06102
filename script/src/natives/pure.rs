//! The natives this crate runs itself: string and math functions of their arguments alone
//! ([`call`]), and the memory banks kept in the instance's VM state ([`Banks`]); plus the
//! two string helpers the host needs for `Parameter` and `DialogInput` ([`safe_split`],
//! [`dialog_options`]).
//!
//! Semantics are the BlitzPlus runtime's (`compiler/BlitzPlus/src/string`, `math`, `bank`)
//! and Realm Crafter's host functions (`Split$`, `SafeSplit$`, `FullTrim$` in
//! `Scripting.bb`), quirks included: positions are 1-based, strings are bytes, Int
//! arithmetic wraps the way the x86 code does. What the originals would do with absurd
//! sizes (allocate gigabytes, or run off the end of a buffer) is replaced by a
//! [`RuntimeError::Memory`] past [`MAX_STRING_BYTES`] or [`MAX_BANK_BYTES`], or by a safe
//! default for out-of-range bank accesses.

use serde::{Deserialize, Serialize};

use super::Native;
use crate::error::RuntimeError;
use crate::value::{RStr, Value, atof};

/// The largest string a pure native may build (16 MiB). A longer result (`String$`,
/// `LSet$`, `RSet$`, `Replace$`) ends the script with [`RuntimeError::Memory`].
pub const MAX_STRING_BYTES: usize = 16 * 1024 * 1024;

/// The most bank memory one instance may hold (16 MiB), for one bank and for all its banks
/// together. `CreateBank` or `ResizeBank` past it is a [`RuntimeError::Memory`].
pub const MAX_BANK_BYTES: usize = 16 * 1024 * 1024;

/// The most banks one instance may have alive at once.
pub const MAX_BANKS: usize = 65_536;

/// Degrees to radians, as BlitzPlus's `dtor` (an f32 constant).
const DEG_TO_RAD: f32 = (std::f64::consts::PI / 180.0) as f32;

/// Radians to degrees, as BlitzPlus's `rtod` (an f32 constant).
const RAD_TO_DEG: f32 = (180.0 / std::f64::consts::PI) as f32;

/// What a native with no return value gives back (the caller drops it).
const NO_VALUE: Value = Value::Int(0);

/// Argument access that never fails: a missing argument reads as 0, 0.0 or `""`, and a
/// value of another type is converted (§5), so a caller bug cannot panic a native.
struct Args<'a>(&'a [Value]);

impl Args<'_> {
    fn int(&self, i: usize) -> i32 {
        self.0.get(i).map_or(0, Value::to_int)
    }

    fn float(&self, i: usize) -> f32 {
        self.0.get(i).map_or(0.0, Value::to_float)
    }

    fn s(&self, i: usize) -> RStr {
        self.0.get(i).map(Value::to_rstr).unwrap_or_default()
    }
}

fn name_of(n: Native) -> &'static str {
    super::sig(n).map_or("?", |s| s.name)
}

/// A length as a script Int (lengths are capped far below `i32::MAX`; saturate anyway).
fn len_i32(len: usize) -> i32 {
    i32::try_from(len).unwrap_or(i32::MAX)
}

/// A position (already known to fit a script string) as an Int.
fn pos_i32(pos: i64) -> i32 {
    i32::try_from(pos).unwrap_or(0)
}

fn too_big(n: Native, len: u64) -> RuntimeError {
    RuntimeError::Memory(format!(
        "{}: a {len}-byte string is over the {} MiB limit",
        name_of(n),
        MAX_STRING_BYTES >> 20
    ))
}

/// `len` bytes, or the error for a result over [`MAX_STRING_BYTES`].
fn check_len(n: Native, len: u64) -> Result<usize, RuntimeError> {
    match usize::try_from(len) {
        Ok(l) if l <= MAX_STRING_BYTES => Ok(l),
        _ => Err(too_big(n, len)),
    }
}

/// Run a [`Kind::Pure`](super::Kind::Pure) native. `args` are already converted to the
/// parameter types, defaults filled in (a missing or mistyped argument is tolerated: it is
/// read as its zero or converted). A native with no return value gives `Value::Int(0)`,
/// which the caller drops.
///
/// # Errors
/// [`RuntimeError::Memory`] for a string result over [`MAX_STRING_BYTES`];
/// [`RuntimeError::Internal`] if `n` is not a pure native.
pub fn call(n: Native, args: &[Value]) -> Result<Value, RuntimeError> {
    let a = Args(args);
    let text = |b: &[u8]| Value::Str(RStr::new(b));
    Ok(match n {
        // ----- strings
        Native::Len => Value::Int(len_i32(a.s(0).len())),
        Native::Left => text(left(a.s(0).as_bytes(), a.int(1))),
        Native::Right => text(right(a.s(0).as_bytes(), a.int(1))),
        Native::Mid => text(mid(a.s(0).as_bytes(), a.int(1), a.int(2))),
        Native::Instr => Value::Int(instr(a.s(0).as_bytes(), a.s(1).as_bytes(), a.int(2))),
        Native::Replace => Value::Str(replace(n, a.s(0), a.s(1).as_bytes(), a.s(2).as_bytes())?),
        Native::Upper => Value::Str(RStr::from_vec(a.s(0).as_bytes().to_ascii_uppercase())),
        Native::Lower => Value::Str(RStr::from_vec(a.s(0).as_bytes().to_ascii_lowercase())),
        Native::Trim => text(trim(a.s(0).as_bytes())),
        Native::FullTrim => Value::Str(full_trim(a.s(0).as_bytes())),
        Native::LSet => Value::Str(lset(n, a.s(0).as_bytes(), a.int(1))?),
        Native::RSet => Value::Str(rset(n, a.s(0).as_bytes(), a.int(1))?),
        Native::Chr => Value::Str(chr(a.int(0))),
        Native::Asc => Value::Int(asc(a.s(0).as_bytes())),
        Native::Hex => Value::str(&format!("{:08X}", a.int(0).cast_unsigned())),
        Native::Bin => Value::str(&format!("{:032b}", a.int(0).cast_unsigned())),
        Native::String => Value::Str(repeat(n, a.s(0).as_bytes(), a.int(1))?),
        Native::Split => text(split(a.s(0).as_bytes(), a.int(1), a.s(2).as_bytes())),
        Native::Dequote => Value::Str(dequote(a.s(0).as_bytes())),
        Native::Float => Value::Float(atof(a.s(0).as_bytes())),

        // ----- math
        Native::Int => Value::Int(a.int(0)),
        Native::Abs => Value::Int(a.int(0).wrapping_abs()),
        Native::Sgn | Native::Sign => Value::Int(a.int(0).signum()),
        Native::Sqr | Native::Sqrt => Value::Float(via_f64(a.float(0), f64::sqrt)),
        Native::Exp => Value::Float(via_f64(a.float(0), f64::exp)),
        Native::Log => Value::Float(via_f64(a.float(0), f64::ln)),
        Native::Log10 => Value::Float(via_f64(a.float(0), f64::log10)),
        Native::Floor => Value::Float(via_f64(a.float(0), f64::floor)),
        Native::Ceil => Value::Float(via_f64(a.float(0), f64::ceil)),
        Native::Sin => Value::Float(via_f64(a.float(0) * DEG_TO_RAD, f64::sin)),
        Native::Cos => Value::Float(via_f64(a.float(0) * DEG_TO_RAD, f64::cos)),
        Native::Tan => Value::Float(via_f64(a.float(0) * DEG_TO_RAD, f64::tan)),
        Native::ASin => Value::Float(via_f64(a.float(0), f64::asin) * RAD_TO_DEG),
        Native::ACos => Value::Float(via_f64(a.float(0), f64::acos) * RAD_TO_DEG),
        Native::ATan => Value::Float(via_f64(a.float(0), f64::atan) * RAD_TO_DEG),
        Native::ATan2 | Native::ATanII => Value::Float(atan2_deg(a.float(0), a.float(1))),
        // BVM_MOD: Blitz's Float `Mod`, which is C `fmod` (the sign of x; NaN for y = 0).
        Native::Mod => Value::Float(a.float(0) % a.float(1)),

        // ----- network
        Native::DottedIp => Value::str(&dotted_ip(a.int(0))),

        // ----- MySQL is off in V0: the wrappers answer "" or 0 and do nothing.
        Native::MySqlQuery | Native::MySqlFetchRow | Native::MySqlGetVar => Value::Str(RStr::EMPTY),
        Native::MySqlNumRows | Native::SqlAccountId | Native::SqlActorId => Value::Int(0),
        Native::MySqlFreeQuery | Native::MySqlFreeRow => NO_VALUE,

        _ => {
            return Err(RuntimeError::Internal(format!(
                "{} is not a pure native",
                name_of(n)
            )));
        }
    })
}

/// A BlitzPlus float function: the f32 argument widened, the C double function, the
/// result narrowed.
fn via_f64(x: f32, f: fn(f64) -> f64) -> f32 {
    f(f64::from(x)) as f32
}

/// `ATan2(y, x)` in degrees, −180..180.
fn atan2_deg(y: f32, x: f32) -> f32 {
    (f64::from(y).atan2(f64::from(x)) as f32) * RAD_TO_DEG
}

fn dotted_ip(ip: i32) -> String {
    let [a, b, c, d] = ip.to_be_bytes();
    format!("{a}.{b}.{c}.{d}")
}

// ----- the BlitzPlus string primitives ----------------------------------------------------

/// `BBString::find(t, pos)`: the 0-based index of the first `q` at or after `pos`, or −1.
/// `pos` past the end (so any search in `""`) is −1; a negative `pos` is 0; an empty `q`
/// is found at `pos`.
fn find(s: &[u8], q: &[u8], pos: i64) -> i64 {
    let size = i64::try_from(s.len()).unwrap_or(i64::MAX);
    if pos >= size {
        return -1;
    }
    let pos = pos.max(0);
    if q.is_empty() {
        return pos;
    }
    let start = usize::try_from(pos).unwrap_or(usize::MAX);
    s.get(start..)
        .and_then(|rest| rest.windows(q.len()).position(|w| w == q))
        .and_then(|k| i64::try_from(start + k).ok())
        .unwrap_or(-1)
}

/// `BBString::substr(pos, n)`: a negative `pos` shortens `n` by as much; empty past the
/// end or for `n ≤ 0`; cut at the end.
fn substr(s: &[u8], pos: i64, n: i64) -> &[u8] {
    let size = i64::try_from(s.len()).unwrap_or(i64::MAX);
    let (mut pos, mut n) = (pos, n);
    if pos < 0 {
        n += pos;
        pos = 0;
    }
    if pos >= size || n <= 0 {
        return &[];
    }
    let end = pos.saturating_add(n).min(size);
    let (Ok(from), Ok(to)) = (usize::try_from(pos), usize::try_from(end)) else {
        return &[];
    };
    s.get(from..to).unwrap_or(&[])
}

/// `Instr(s, q, from)` over i64 positions: 1-based, 0 when not found.
fn instr_at(s: &[u8], q: &[u8], from: i64) -> i64 {
    find(s, q, from - 1) + 1
}

/// `Mid(s, start, count)` over i64 positions: a negative count is the whole length, then
/// a start below 1 shortens it.
fn mid_at(s: &[u8], start: i64, count: i64) -> &[u8] {
    let n = if count < 0 {
        i64::try_from(s.len()).unwrap_or(i64::MAX)
    } else {
        count
    };
    substr(s, start - 1, n)
}

/// `Left$`: `n ≤ 0` → `""`, `n` past the length → all of `s`.
fn left(s: &[u8], n: i32) -> &[u8] {
    let n = usize::try_from(n).unwrap_or(0).min(s.len());
    s.get(..n).unwrap_or(&[])
}

/// `Right$`: the last `n` bytes; `n ≤ 0` → `""`, `n` past the length → all of `s`.
fn right(s: &[u8], n: i32) -> &[u8] {
    let n = usize::try_from(n).unwrap_or(0).min(s.len());
    s.get(s.len() - n..).unwrap_or(&[])
}

/// `Mid$(s, start, count)` as BlitzPlus's `bbMid`: a negative count becomes the length;
/// a start below 1 shortens the count by `1 − start`; past the end → `""`. The `start − 1`
/// wraps like the x86 code (so `start = i32::MIN` is far past the end).
fn mid(s: &[u8], start: i32, count: i32) -> &[u8] {
    let n = if count < 0 {
        i64::try_from(s.len()).unwrap_or(i64::MAX)
    } else {
        i64::from(count)
    };
    substr(s, i64::from(start.wrapping_sub(1)), n)
}

/// `Instr(s, find, from)`: 1-based position of the first `find` at or after `from`, or 0.
/// An empty `s` gives 0; an empty `find` gives `from` (1 when `from < 1`) if `from ≤`
/// the length, else 0. `from − 1` wraps like the x86 code.
fn instr(s: &[u8], q: &[u8], from: i32) -> i32 {
    pos_i32(find(s, q, i64::from(from.wrapping_sub(1))) + 1)
}

/// `Replace$`: every non-overlapping `from`, left to right, the replacement never
/// rescanned. An empty `from` (an endless loop in Blitz) leaves `s` as it is.
fn replace(n: Native, s: RStr, from: &[u8], to: &[u8]) -> Result<RStr, RuntimeError> {
    let b = s.as_bytes();
    if from.is_empty() || b.len() < from.len() {
        return Ok(s);
    }
    let mut out: Vec<u8> = Vec::new();
    let mut i = 0usize;
    let mut found = false;
    while let Some(rest) = b.get(i..) {
        let Some(k) = rest.windows(from.len()).position(|w| w == from) else {
            break;
        };
        found = true;
        let grown = out.len() as u64 + k as u64 + to.len() as u64;
        check_len(n, grown)?;
        out.extend_from_slice(rest.get(..k).unwrap_or(&[]));
        out.extend_from_slice(to);
        i += k + from.len();
    }
    if !found {
        return Ok(s);
    }
    let tail = b.get(i..).unwrap_or(&[]);
    check_len(n, out.len() as u64 + tail.len() as u64)?;
    out.extend_from_slice(tail);
    Ok(RStr::from_vec(out))
}

/// `Trim$`: strips bytes ≤ 32 at both ends.
fn trim(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|&c| c > b' ').unwrap_or(s.len());
    let end = s.iter().rposition(|&c| c > b' ').map_or(start, |e| e + 1);
    s.get(start..end).unwrap_or(&[])
}

/// Realm Crafter's `FullTrim$`: `Trim$`, then every byte below 32 deleted.
fn full_trim(s: &[u8]) -> RStr {
    RStr::from_vec(trim(s).iter().copied().filter(|&c| c >= b' ').collect())
}

/// `LSet$(s, n)`: `s` padded on the right with spaces, or its first `n` bytes; `n ≤ 0` →
/// `""`.
fn lset(n: Native, s: &[u8], size: i32) -> Result<RStr, RuntimeError> {
    let Ok(size) = usize::try_from(size) else {
        return Ok(RStr::EMPTY);
    };
    let size = check_len(n, size as u64)?;
    let mut out: Vec<u8> = s.get(..size.min(s.len())).unwrap_or(&[]).to_vec();
    out.resize(size, b' ');
    Ok(RStr::from_vec(out))
}

/// `RSet$(s, n)`: `s` padded on the left with spaces, or its **last** `n` bytes; `n ≤ 0` →
/// `""`.
fn rset(n: Native, s: &[u8], size: i32) -> Result<RStr, RuntimeError> {
    let Ok(size) = usize::try_from(size) else {
        return Ok(RStr::EMPTY);
    };
    let size = check_len(n, size as u64)?;
    let keep = size.min(s.len());
    let mut out = vec![b' '; size - keep];
    out.extend_from_slice(s.get(s.len() - keep..).unwrap_or(&[]));
    Ok(RStr::from_vec(out))
}

/// `Chr$(n)`: one byte, `n & 255`.
fn chr(n: i32) -> RStr {
    let [low, ..] = n.to_le_bytes();
    RStr::new(&[low])
}

/// `Asc(s)`: the first byte, 0..255; −1 for `""`.
fn asc(s: &[u8]) -> i32 {
    s.first().map_or(-1, |&c| i32::from(c))
}

/// `String$(s, n)`: `s` repeated `n` times; `""` for an empty `s` or `n ≤ 0`.
fn repeat(n: Native, s: &[u8], count: i32) -> Result<RStr, RuntimeError> {
    let Ok(count) = usize::try_from(count) else {
        return Ok(RStr::EMPTY);
    };
    if s.is_empty() || count == 0 {
        return Ok(RStr::EMPTY);
    }
    check_len(n, (s.len() as u64).saturating_mul(count as u64))?;
    Ok(RStr::from_vec(s.repeat(count)))
}

/// `Dequote$`: every `"` removed.
fn dequote(s: &[u8]) -> RStr {
    if !s.contains(&b'"') {
        return RStr::new(s);
    }
    RStr::from_vec(s.iter().copied().filter(|&c| c != b'"').collect())
}

/// Realm Crafter's host `Split$(s, n, delim)`, step for step: the field between the
/// (n−1)-th and the n-th `delim` found by `Instr`, each search starting one byte after the
/// previous hit. Hence its quirks: it is not quote-aware; with no delimiter at all, n = 2
/// gives the whole `s` (the second search starts over from 1) while n ≥ 3 gives `""`; past
/// the last field → `""`; n ≤ 1 → the first field; a multi-byte delimiter leaves its bytes
/// after the first at the start of the next field (`Split("a::b", 2, "::")` = `":b"`).
fn split<'a>(s: &'a [u8], n: i32, delim: &[u8]) -> &'a [u8] {
    let len = i64::try_from(s.len()).unwrap_or(i64::MAX);
    let n = i64::from(n);
    let mut prev = 0i64;
    let mut pos = instr_at(s, delim, 1);
    // Each pass either moves `pos` forward or ends: at most len + 1 passes.
    let mut i = 2i64;
    while i <= n {
        prev = pos;
        pos = instr_at(s, delim, pos + 1);
        if pos == 0 {
            if i == n {
                pos = len + 1;
            } else {
                return &[];
            }
        }
        i += 1;
    }
    mid_at(s, prev + 1, pos - prev - 1)
}

/// Realm Crafter's `SafeSplit$(s, n, delim)`: the n-th field (from 1), where a field ends
/// at a byte equal to `delim` (so only a one-byte `delim` ever matches) outside `"…"`;
/// every `"` is removed from the result; fields are not trimmed. n ≤ 0 or past the end →
/// `""`.
fn safe_split_on(s: &[u8], n: i32, delim: &[u8]) -> RStr {
    let n = i64::from(n);
    let mut old = 0usize;
    let mut num = 0i64;
    let mut in_quote = false;
    for (i, &c) in s.iter().enumerate() {
        if c == b'"' {
            in_quote = !in_quote;
        } else if !in_quote && delim == [c] {
            num += 1;
            if num == n {
                return dequote(s.get(old..i).unwrap_or(&[]));
            }
            old = i + 1;
        }
    }
    if num == n - 1 {
        dequote(s.get(old..).unwrap_or(&[]))
    } else {
        RStr::EMPTY
    }
}

/// The n-th comma field of an instance's `Param` string, as `Parameter(n)` returns it
/// (Realm Crafter's `SafeSplit$(Param, n, ",")`): n counts from 1; commas inside `"…"` do
/// not split; every `"` is removed; the field is not trimmed; n ≤ 0 or past the last
/// field → `""`. `safe_split(b"Bob, 3", 2)` is `" 3"`.
pub fn safe_split(param: &[u8], n: i32) -> RStr {
    safe_split_on(param, n, b",")
}

/// The options `DialogInput(player, dialog, options$, delim$)` shows, as
/// `RCE_SendDialogInput` builds them: fields 1 to 9 of `options` split with `SafeSplit$`'s
/// rules on the one-byte `delim` (quote-aware, quotes removed, untrimmed), stopping at the
/// first empty field. A `delim` of any other length never matches, giving the whole
/// `options` (quotes removed) as the only option. The wire format stores each length in
/// one byte; cutting longer options is the sender's job.
pub fn dialog_options(options: &[u8], delim: &[u8]) -> Vec<RStr> {
    let mut out = Vec::new();
    for n in 1..=9 {
        let field = safe_split_on(options, n, delim);
        if field.is_empty() {
            break;
        }
        out.push(field);
    }
    out
}

// ----- memory banks -------------------------------------------------------------------------

/// Blitz memory banks of one instance, addressed by handle (1-based; 0 is none).
///
/// Unlike V0 (no bounds checks in a release build), every access is checked: reading out
/// of range gives 0 (or 0.0), writing out of range does nothing, and a bad handle is
/// treated like an empty bank (`FreeBank` of one is a no-op). Shorts and bytes read
/// unsigned; everything is little-endian. A freed handle may be given out again by a later
/// `CreateBank`, as a freed Blitz pointer may.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Banks {
    banks: Vec<Option<serde_bytes::ByteBuf>>,
}

fn slot_of(handle: i32) -> Option<usize> {
    usize::try_from(handle).ok()?.checked_sub(1)
}

/// The byte range `offset .. offset + len`, if `offset` is not negative.
fn range_of(offset: i32, len: usize) -> Option<std::ops::Range<usize>> {
    let start = usize::try_from(offset).ok()?;
    Some(start..start.checked_add(len)?)
}

fn bank_limit(what: &str, bytes: u64) -> RuntimeError {
    RuntimeError::Memory(format!(
        "{what}: {bytes} bytes of banks is over the {} MiB limit",
        MAX_BANK_BYTES >> 20
    ))
}

impl Banks {
    /// Run a [`Kind::Vm`](super::Kind::Vm) native. A native with no return value gives
    /// `Value::Int(0)`.
    ///
    /// # Errors
    /// [`RuntimeError::Memory`] when `CreateBank` or `ResizeBank` would pass
    /// [`MAX_BANK_BYTES`] or [`MAX_BANKS`]; [`RuntimeError::Internal`] if `n` is not a
    /// bank native.
    pub fn call(&mut self, n: Native, args: &[Value]) -> Result<Value, RuntimeError> {
        let a = Args(args);
        let (h, off) = (a.int(0), a.int(1));
        Ok(match n {
            Native::CreateBank => Value::Int(self.create(a.int(0))?),
            Native::FreeBank => {
                self.free(h);
                NO_VALUE
            }
            Native::BankSize => Value::Int(len_i32(self.bank(h).map_or(0, <[u8]>::len))),
            Native::ResizeBank => {
                self.resize(h, a.int(1))?;
                NO_VALUE
            }
            Native::CopyBank => {
                self.copy(h, off, a.int(2), a.int(3), a.int(4));
                NO_VALUE
            }
            Native::PeekByte => Value::Int(self.peek(h, off).map_or(0, |[b]| i32::from(b))),
            Native::PeekShort => Value::Int(
                self.peek(h, off)
                    .map_or(0, |b| i32::from(u16::from_le_bytes(b))),
            ),
            Native::PeekInt => Value::Int(self.peek(h, off).map_or(0, i32::from_le_bytes)),
            Native::PeekFloat => Value::Float(self.peek(h, off).map_or(0.0, f32::from_le_bytes)),
            Native::PokeByte => {
                let [b0, ..] = a.int(2).to_le_bytes();
                self.poke(h, off, [b0]);
                NO_VALUE
            }
            Native::PokeShort => {
                let [b0, b1, ..] = a.int(2).to_le_bytes();
                self.poke(h, off, [b0, b1]);
                NO_VALUE
            }
            Native::PokeInt => {
                self.poke(h, off, a.int(2).to_le_bytes());
                NO_VALUE
            }
            Native::PokeFloat => {
                self.poke(h, off, a.float(2).to_le_bytes());
                NO_VALUE
            }
            _ => {
                return Err(RuntimeError::Internal(format!(
                    "{} is not a bank native",
                    name_of(n)
                )));
            }
        })
    }

    /// Total bytes held (counted against the instance's memory cap).
    pub fn bytes(&self) -> usize {
        self.banks.iter().flatten().map(|b| b.len()).sum()
    }

    /// The bytes of bank `handle`, or `None` for a bad handle (for the host's
    /// `ReadBytes`/`WriteBytes`).
    pub fn bank(&self, handle: i32) -> Option<&[u8]> {
        self.banks
            .get(slot_of(handle)?)?
            .as_ref()
            .map(|b| b.as_slice())
    }

    /// The bytes of bank `handle`, writable, or `None` for a bad handle.
    pub fn bank_mut(&mut self, handle: i32) -> Option<&mut [u8]> {
        self.banks
            .get_mut(slot_of(handle)?)?
            .as_mut()
            .map(|b| b.as_mut_slice())
    }

    /// `CreateBank(size)`: a zeroed bank (a negative size is 0); its handle.
    fn create(&mut self, size: i32) -> Result<i32, RuntimeError> {
        let size = usize::try_from(size).unwrap_or(0);
        let total = self.bytes() as u64 + size as u64;
        if total > MAX_BANK_BYTES as u64 {
            return Err(bank_limit("CreateBank", total));
        }
        let buf = Some(serde_bytes::ByteBuf::from(vec![0u8; size]));
        let slot = match self.banks.iter().position(Option::is_none) {
            Some(free) => {
                if let Some(s) = self.banks.get_mut(free) {
                    *s = buf;
                }
                free
            }
            None if self.banks.len() < MAX_BANKS => {
                self.banks.push(buf);
                self.banks.len() - 1
            }
            None => {
                return Err(RuntimeError::Memory(format!(
                    "CreateBank: more than {MAX_BANKS} banks"
                )));
            }
        };
        i32::try_from(slot + 1)
            .map_err(|_| RuntimeError::Memory("CreateBank: too many banks".into()))
    }

    /// `FreeBank(h)`; a bad handle is a no-op.
    fn free(&mut self, handle: i32) {
        if let Some(s) = slot_of(handle).and_then(|i| self.banks.get_mut(i)) {
            *s = None;
        }
        while self.banks.last().is_some_and(Option::is_none) {
            self.banks.pop();
        }
    }

    /// `ResizeBank(h, size)`: keeps the content, new bytes are 0, a negative size is 0.
    fn resize(&mut self, handle: i32, size: i32) -> Result<(), RuntimeError> {
        let size = usize::try_from(size).unwrap_or(0);
        let Some(old) = self.bank(handle).map(<[u8]>::len) else {
            return Ok(());
        };
        let total = (self.bytes() - old) as u64 + size as u64;
        if total > MAX_BANK_BYTES as u64 {
            return Err(bank_limit("ResizeBank", total));
        }
        if let Some(Some(b)) = slot_of(handle).and_then(|i| self.banks.get_mut(i)) {
            b.resize(size, 0);
        }
        Ok(())
    }

    /// `CopyBank(src, srcOff, dst, dstOff, count)`: `memmove`; nothing unless `count > 0`
    /// and both ranges lie inside their banks.
    fn copy(&mut self, src: i32, src_off: i32, dst: i32, dst_off: i32, count: i32) {
        let Ok(count) = usize::try_from(count) else {
            return;
        };
        if count == 0 {
            return;
        }
        let (Some(from), Some(to)) = (range_of(src_off, count), range_of(dst_off, count)) else {
            return;
        };
        if self.bank_mut(dst).and_then(|d| d.get(to.clone())).is_none() {
            return;
        }
        let Some(bytes) = self.bank(src).and_then(|s| s.get(from)).map(<[u8]>::to_vec) else {
            return;
        };
        if let Some(d) = self.bank_mut(dst).and_then(|d| d.get_mut(to)) {
            d.copy_from_slice(&bytes);
        }
    }

    /// `N` bytes at `offset`, or `None` if any is outside the bank.
    fn peek<const N: usize>(&self, handle: i32, offset: i32) -> Option<[u8; N]> {
        self.bank(handle)?
            .get(range_of(offset, N)?)?
            .try_into()
            .ok()
    }

    /// Writes `N` bytes at `offset`, or nothing if any is outside the bank.
    fn poke<const N: usize>(&mut self, handle: i32, offset: i32, bytes: [u8; N]) {
        if let Some(d) = range_of(offset, N).and_then(|r| self.bank_mut(handle)?.get_mut(r)) {
            d.copy_from_slice(&bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Value {
        Value::str(v)
    }

    fn i(v: i32) -> Value {
        Value::Int(v)
    }

    fn f(v: f32) -> Value {
        Value::Float(v)
    }

    #[track_caller]
    fn str_of(n: Native, args: &[Value]) -> String {
        match call(n, args) {
            Ok(Value::Str(r)) => r.to_latin1(),
            other => panic!("{n:?}{args:?} gave {other:?}"),
        }
    }

    #[track_caller]
    fn int_of(n: Native, args: &[Value]) -> i32 {
        match call(n, args) {
            Ok(Value::Int(v)) => v,
            other => panic!("{n:?}{args:?} gave {other:?}"),
        }
    }

    #[track_caller]
    fn float_of(n: Native, args: &[Value]) -> f32 {
        match call(n, args) {
            Ok(Value::Float(v)) => v,
            other => panic!("{n:?}{args:?} gave {other:?}"),
        }
    }

    #[test]
    fn left_right_and_len() {
        let cases: &[(Native, &str, i32, &str)] = &[
            (Native::Left, "hello", 2, "he"),
            (Native::Left, "hello", 0, ""),
            (Native::Left, "hello", -3, ""),
            (Native::Left, "hello", 99, "hello"),
            (Native::Right, "hello", 2, "lo"),
            (Native::Right, "hello", 0, ""),
            (Native::Right, "hello", i32::MIN, ""),
            (Native::Right, "hello", i32::MAX, "hello"),
        ];
        for &(n, st, k, want) in cases {
            assert_eq!(str_of(n, &[s(st), i(k)]), want, "{n:?}({st:?}, {k})");
        }
        assert_eq!(
            int_of(Native::Len, &[s("h\u{e9}llo")]),
            5,
            "bytes, not chars"
        );
        assert_eq!(int_of(Native::Len, &[s("")]), 0);
    }

    #[test]
    fn mid_follows_bb_mid() {
        let cases: &[(&str, i32, i32, &str)] = &[
            ("abcdef", 2, 3, "bcd"),
            ("abcdef", 2, 65535, "bcdef"),
            ("abcdef", 6, 1, "f"),
            ("abcdef", 7, 1, ""),
            ("abcdef", 3, 0, ""),
            // Start below 1 shortens the count by (1 - start).
            ("abcdef", 0, 3, "ab"),
            ("abcdef", -1, 3, "a"),
            ("abcdef", -2, 3, ""),
            // A negative count is the length, then shortened like any count.
            ("abcdef", 3, -1, "cdef"),
            ("abcdef", 1, -5, "abcdef"),
            ("abcdef", 0, -1, "abcde"),
            ("abcdef", i32::MIN, 5, ""),
            ("abcdef", i32::MIN, i32::MAX, ""),
            ("abcdef", i32::MAX, i32::MAX, ""),
            ("", 1, 1, ""),
        ];
        for &(st, start, count, want) in cases {
            assert_eq!(
                str_of(Native::Mid, &[s(st), i(start), i(count)]),
                want,
                "Mid({st:?}, {start}, {count})"
            );
        }
        // The command-set default count (65535) caps Mid(s, start) on longer strings.
        let long = RStr::from_vec(vec![b'x'; 70_000]);
        let got = call(Native::Mid, &[Value::Str(long), i(1), i(65535)]);
        assert_eq!(got.map(|v| v.to_rstr().len()), Ok(65535));
    }

    #[test]
    fn instr_follows_bb_instr() {
        let cases: &[(&str, &str, i32, i32)] = &[
            ("hello", "l", 1, 3),
            ("hello", "l", 4, 4),
            ("hello", "l", 5, 0),
            ("hello", "lo", 1, 4),
            ("hello", "x", 1, 0),
            ("hello", "hello!", 1, 0),
            ("hello", "h", 0, 1),
            ("hello", "h", -7, 1),
            ("hello", "h", i32::MIN, 0),
            ("hello", "o", i32::MAX, 0),
            // Empty find: `from` if from <= length (1 below 1), else 0.
            ("hello", "", 3, 3),
            ("hello", "", 5, 5),
            ("hello", "", 6, 0),
            ("hello", "", -4, 1),
            // Empty s: 0 whatever the rest.
            ("", "", 1, 0),
            ("", "a", 1, 0),
        ];
        for &(st, q, from, want) in cases {
            assert_eq!(
                int_of(Native::Instr, &[s(st), s(q), i(from)]),
                want,
                "Instr({st:?}, {q:?}, {from})"
            );
        }
    }

    #[test]
    fn replace_is_left_to_right_and_never_rescans() {
        let cases: &[(&str, &str, &str, &str)] = &[
            ("a.b.c", ".", "::", "a::b::c"),
            ("aaa", "aa", "b", "ba"),
            ("aaa", "a", "aa", "aaaaaa"),
            ("abc", "", "x", "abc"),
            ("abc", "abcd", "x", "abc"),
            ("abc", "abc", "", ""),
            ("", "a", "b", ""),
            ("xyx", "x", "", "y"),
        ];
        for &(st, from, to, want) in cases {
            assert_eq!(
                str_of(Native::Replace, &[s(st), s(from), s(to)]),
                want,
                "Replace({st:?}, {from:?}, {to:?})"
            );
        }
        let big = Value::Str(RStr::from_vec(vec![b'a'; 1 << 20]));
        let twenty = s(&"x".repeat(20));
        assert!(matches!(
            call(Native::Replace, &[big, s("a"), twenty]),
            Err(RuntimeError::Memory(_))
        ));
    }

    #[test]
    fn case_and_trims() {
        let cases: &[(Native, &str, &str)] = &[
            (Native::Upper, "abZ9\u{e9}", "ABZ9\u{e9}"),
            (Native::Lower, "ABz9\u{c9}", "abz9\u{c9}"),
            (Native::Trim, " \t a b \r\n", "a b"),
            (Native::Trim, " \x01\x20 ", ""),
            (Native::Trim, "\u{a0}x\u{a0}", "\u{a0}x\u{a0}"),
            (
                Native::FullTrim,
                "\t a\tb\x01c \x7f\u{80} ",
                "abc \x7f\u{80}",
            ),
            (Native::FullTrim, "\x01\x02", ""),
            (Native::Dequote, "say \"hi\"\"", "say hi"),
        ];
        for &(n, st, want) in cases {
            assert_eq!(str_of(n, &[s(st)]), want, "{n:?}({st:?})");
        }
    }

    #[test]
    fn lset_rset_pad_or_cut() {
        let cases: &[(Native, &str, i32, &str)] = &[
            (Native::LSet, "ab", 4, "ab  "),
            (Native::LSet, "abcdef", 3, "abc"),
            (Native::LSet, "ab", 0, ""),
            (Native::LSet, "ab", -1, ""),
            (Native::RSet, "ab", 4, "  ab"),
            (Native::RSet, "abcdef", 3, "def"),
            (Native::RSet, "ab", 2, "ab"),
            (Native::RSet, "ab", i32::MIN, ""),
            (Native::LSet, "", 2, "  "),
        ];
        for &(n, st, k, want) in cases {
            assert_eq!(str_of(n, &[s(st), i(k)]), want, "{n:?}({st:?}, {k})");
        }
        for n in [Native::LSet, Native::RSet] {
            assert!(matches!(
                call(n, &[s("x"), i(i32::MAX)]),
                Err(RuntimeError::Memory(_))
            ));
        }
    }

    #[test]
    fn chr_asc_hex_bin() {
        assert_eq!(str_of(Native::Chr, &[i(65)]), "A");
        assert_eq!(str_of(Native::Chr, &[i(256 + 66)]), "B");
        assert_eq!(str_of(Native::Chr, &[i(-1)]), "\u{ff}");
        assert_eq!(int_of(Native::Asc, &[s("")]), -1);
        assert_eq!(int_of(Native::Asc, &[s("Az")]), 65);
        assert_eq!(int_of(Native::Asc, &[s("\u{ff}")]), 255);
        let hex: &[(i32, &str)] = &[(255, "000000FF"), (-1, "FFFFFFFF"), (0, "00000000")];
        for &(v, want) in hex {
            assert_eq!(str_of(Native::Hex, &[i(v)]), want);
        }
        assert_eq!(str_of(Native::Hex, &[i(i32::MIN)]), "80000000");
        assert_eq!(
            str_of(Native::Bin, &[i(5)]),
            format!("{}101", "0".repeat(29))
        );
        assert_eq!(str_of(Native::Bin, &[i(-1)]), "1".repeat(32));
    }

    #[test]
    fn string_repeats_within_the_cap() {
        assert_eq!(str_of(Native::String, &[s("ab"), i(3)]), "ababab");
        assert_eq!(str_of(Native::String, &[s("ab"), i(0)]), "");
        assert_eq!(str_of(Native::String, &[s("ab"), i(-2)]), "");
        assert_eq!(str_of(Native::String, &[s(""), i(2_000_000_000)]), "");
        assert!(matches!(
            call(Native::String, &[s("x"), i(2_000_000_000)]),
            Err(RuntimeError::Memory(_))
        ));
    }

    #[test]
    fn split_keeps_the_host_quirks() {
        let cases: &[(&str, i32, &str, &str)] = &[
            ("a,b,c", 1, ",", "a"),
            ("a,b,c", 2, ",", "b"),
            ("a,b,c", 3, ",", "c"),
            ("a,b,c", 4, ",", ""),
            ("a,b,c", 0, ",", "a"),
            ("a,b,c", i32::MIN, ",", "a"),
            ("a,b,c", i32::MAX, ",", ""),
            ("a,,c", 2, ",", ""),
            (" a , b ", 2, ",", " b "),
            // No delimiter at all: n = 2 is the whole string, n >= 3 is "".
            ("abc", 1, ",", "abc"),
            ("abc", 2, ",", "abc"),
            ("abc", 3, ",", ""),
            // Not quote-aware.
            ("\"a,b\",c", 1, ",", "\"a"),
            // A multi-byte delimiter leaves its extra bytes in the next field.
            ("a::b::c", 1, "::", "a"),
            ("a::b::c", 2, "::", ":b"),
            ("a::b::c", 3, "::", ":c"),
            ("a::b", 3, "::", ""),
            ("a|b", 2, "|", "b"),
            ("", 1, ",", ""),
            ("", 2, ",", ""),
            // An empty delimiter is found at every position.
            ("abc", 1, "", ""),
            ("abc", 5, "", ""),
        ];
        for &(st, n, d, want) in cases {
            assert_eq!(
                str_of(Native::Split, &[s(st), i(n), s(d)]),
                want,
                "Split({st:?}, {n}, {d:?})"
            );
        }
    }

    #[test]
    fn safe_split_is_quote_aware() {
        let cases: &[(&str, i32, &str)] = &[
            ("Bob, 3", 1, "Bob"),
            ("Bob, 3", 2, " 3"),
            ("Bob, 3", 3, ""),
            ("Bob, 3", 0, ""),
            ("Bob, 3", -1, ""),
            ("Bob, 3", i32::MIN, ""),
            ("\"Smith, John\",5", 1, "Smith, John"),
            ("\"Smith, John\",5", 2, "5"),
            ("a\"b\"c", 1, "abc"),
            ("a,,c", 2, ""),
            ("a,,c", 3, "c"),
            ("", 1, ""),
            ("x", 1, "x"),
            ("\"unclosed, x", 1, "unclosed, x"),
        ];
        for &(p, n, want) in cases {
            assert_eq!(safe_split(p.as_bytes(), n).to_latin1(), want, "{p:?} {n}");
        }
    }

    #[test]
    fn dialog_options_follow_rce_send_dialog_input() {
        let opts = |o: &str, d: &str| -> Vec<String> {
            dialog_options(o.as_bytes(), d.as_bytes())
                .iter()
                .map(RStr::to_latin1)
                .collect()
        };
        assert_eq!(opts("Yes, No", ","), ["Yes", " No"]);
        assert_eq!(opts("Yes|No|Maybe", "|"), ["Yes", "No", "Maybe"]);
        assert_eq!(opts("\"a|b\"|c", "|"), ["a|b", "c"]);
        assert_eq!(opts("A", "B"), ["A"]);
        assert_eq!(opts("a||b", "|"), ["a"]);
        assert_eq!(opts("a::b", "::"), ["a::b"]);
        assert_eq!(opts("a,b", ""), ["a,b"]);
        assert!(opts("", ",").is_empty());
        assert!(opts(",a", ",").is_empty());
        assert_eq!(opts("1,2,3,4,5,6,7,8,9,10,11", ",").len(), 9);
    }

    #[test]
    fn numbers_and_conversions() {
        assert_eq!(int_of(Native::Abs, &[i(-5)]), 5);
        assert_eq!(int_of(Native::Abs, &[i(i32::MIN)]), i32::MIN);
        // An Int parameter truncates a Float argument first.
        assert_eq!(int_of(Native::Abs, &[f(-0.5)]), 0);
        assert_eq!(int_of(Native::Abs, &[f(-2.5)]), 2);
        for (n, v, want) in [
            (Native::Sgn, -7, -1),
            (Native::Sign, 0, 0),
            (Native::Sgn, 9, 1),
        ] {
            assert_eq!(int_of(n, &[i(v)]), want);
        }
        assert_eq!(int_of(Native::Int, &[f(-2.7)]), -2);
        assert_eq!(int_of(Native::Int, &[s("12abc")]), 12);
        assert_eq!(float_of(Native::Float, &[s(" 1.5x")]), 1.5);
        assert_eq!(float_of(Native::Float, &[i(5)]), 5.0);
        assert_eq!(str_of(Native::DottedIp, &[i(0x7f00_0001)]), "127.0.0.1");
        assert_eq!(str_of(Native::DottedIp, &[i(-1)]), "255.255.255.255");
    }

    #[test]
    fn math_is_f32_in_degrees() {
        assert_eq!(DEG_TO_RAD.to_bits(), 0x3c8e_fa35, "BlitzPlus dtor");
        assert_eq!(RAD_TO_DEG.to_bits(), 0x4265_2ee1, "BlitzPlus rtod");
        let near: &[(Native, &[f32], f32)] = &[
            (Native::Sin, &[90.0], 1.0),
            (Native::Sin, &[30.0], 0.5),
            (Native::Cos, &[180.0], -1.0),
            (Native::Tan, &[45.0], 1.0),
            (Native::ASin, &[1.0], 90.0),
            (Native::ACos, &[0.0], 90.0),
            (Native::ATan, &[1.0], 45.0),
            (Native::ATan2, &[1.0, 0.0], 90.0),
            (Native::ATan2, &[0.0, -1.0], 180.0),
            (Native::ATan2, &[-1.0, -1.0], -135.0),
            (Native::ATanII, &[-1.0, 0.0], -90.0),
            (Native::Sqr, &[9.0], 3.0),
            (Native::Sqrt, &[2.0], std::f32::consts::SQRT_2),
            (Native::Exp, &[0.0], 1.0),
            (Native::Log, &[std::f32::consts::E], 1.0),
            (Native::Log10, &[1000.0], 3.0),
            (Native::Floor, &[-1.5], -2.0),
            (Native::Ceil, &[-1.5], -1.0),
            (Native::Floor, &[2.5], 2.0),
            (Native::Mod, &[7.5, 2.0], 1.5),
            (Native::Mod, &[-7.5, 2.0], -1.5),
            (Native::Mod, &[7.5, -2.0], 1.5),
        ];
        for &(n, args, want) in near {
            let args: Vec<Value> = args.iter().copied().map(Value::Float).collect();
            let got = float_of(n, &args);
            assert!(
                (got - want).abs() < 1e-4,
                "{n:?}{args:?} = {got}, want {want}"
            );
        }
        assert!(float_of(Native::Sqr, &[f(-1.0)]).is_nan());
        assert!(float_of(Native::Mod, &[f(1.0), f(0.0)]).is_nan());
        assert_eq!(float_of(Native::Log, &[f(0.0)]), f32::NEG_INFINITY);
        let a = float_of(Native::ATan2, &[f(0.0), f(-1.0)]);
        assert!((-180.001..=180.001).contains(&a));
    }

    #[test]
    fn stubs_answer_nothing() {
        assert_eq!(str_of(Native::MySqlQuery, &[s("SELECT 1")]), "");
        assert_eq!(int_of(Native::MySqlNumRows, &[i(1)]), 0);
        assert_eq!(str_of(Native::MySqlFetchRow, &[i(1)]), "");
        assert_eq!(str_of(Native::MySqlGetVar, &[i(1), s("x")]), "");
        assert_eq!(int_of(Native::SqlAccountId, &[i(1)]), 0);
        assert_eq!(int_of(Native::SqlActorId, &[i(1)]), 0);
        assert!(call(Native::MySqlFreeQuery, &[i(1)]).is_ok());
        assert!(call(Native::MySqlFreeRow, &[i(1)]).is_ok());
    }

    #[test]
    fn wrong_natives_and_missing_args_do_not_panic() {
        assert!(matches!(
            call(Native::Actor, &[]),
            Err(RuntimeError::Internal(_))
        ));
        assert!(matches!(
            Banks::default().call(Native::Len, &[]),
            Err(RuntimeError::Internal(_))
        ));
        assert_eq!(str_of(Native::Mid, &[]), "");
        assert_eq!(int_of(Native::Asc, &[]), -1);
    }

    fn bank_call(b: &mut Banks, n: Native, args: &[i32]) -> Value {
        let args: Vec<Value> = args.iter().copied().map(Value::Int).collect();
        match b.call(n, &args) {
            Ok(v) => v,
            Err(e) => panic!("{n:?}{args:?}: {e}"),
        }
    }

    #[test]
    fn banks_are_little_endian_and_bounds_checked() {
        let mut b = Banks::default();
        let h = bank_call(&mut b, Native::CreateBank, &[8]).to_int();
        assert_eq!(h, 1);
        assert_eq!(bank_call(&mut b, Native::BankSize, &[h]), Value::Int(8));
        bank_call(&mut b, Native::PokeInt, &[h, 0, -2]);
        assert_eq!(b.bank(h), Some(&[0xfe, 0xff, 0xff, 0xff, 0, 0, 0, 0][..]));
        assert_eq!(bank_call(&mut b, Native::PeekInt, &[h, 0]), Value::Int(-2));
        assert_eq!(
            bank_call(&mut b, Native::PeekShort, &[h, 0]),
            Value::Int(0xfffe)
        );
        assert_eq!(
            bank_call(&mut b, Native::PeekByte, &[h, 1]),
            Value::Int(255)
        );
        bank_call(&mut b, Native::PokeShort, &[h, 4, 0x12345]);
        bank_call(&mut b, Native::PokeByte, &[h, 6, 0x1ff]);
        assert_eq!(
            b.bank(h),
            Some(&[0xfe, 0xff, 0xff, 0xff, 0x45, 0x23, 0xff, 0][..])
        );
        b.call(Native::PokeFloat, &[i(h), i(4), f(1.5)])
            .map(drop)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            bank_call(&mut b, Native::PeekFloat, &[h, 4]),
            Value::Float(1.5)
        );
        // Out of range: reads 0, writes nothing.
        let before = b.clone();
        for (n, off) in [
            (Native::PeekInt, 5),
            (Native::PeekShort, 7),
            (Native::PeekByte, 8),
            (Native::PeekByte, -1),
            (Native::PeekInt, i32::MAX),
        ] {
            assert_eq!(
                bank_call(&mut b, n, &[h, off]),
                Value::Int(0),
                "{n:?} {off}"
            );
        }
        assert_eq!(
            bank_call(&mut b, Native::PeekFloat, &[h, 6]),
            Value::Float(0.0)
        );
        for (n, off) in [
            (Native::PokeInt, 5),
            (Native::PokeShort, 7),
            (Native::PokeByte, -1),
        ] {
            bank_call(&mut b, n, &[h, off, 7]);
        }
        assert_eq!(b, before);
        // Bad handles.
        for bad in [0, -1, 2, i32::MIN] {
            assert_eq!(bank_call(&mut b, Native::BankSize, &[bad]), Value::Int(0));
            assert_eq!(
                bank_call(&mut b, Native::PeekByte, &[bad, 0]),
                Value::Int(0)
            );
            bank_call(&mut b, Native::FreeBank, &[bad]);
            bank_call(&mut b, Native::ResizeBank, &[bad, 10]);
        }
        assert_eq!(b, before);
    }

    #[test]
    fn banks_resize_copy_and_free() {
        let mut b = Banks::default();
        let h = bank_call(&mut b, Native::CreateBank, &[4]).to_int();
        let g = bank_call(&mut b, Native::CreateBank, &[-3]).to_int();
        assert_eq!((h, g), (1, 2));
        assert_eq!(b.bank(g), Some(&[][..]));
        bank_call(&mut b, Native::PokeInt, &[h, 0, 0x0403_0201]);
        bank_call(&mut b, Native::ResizeBank, &[h, 6]);
        assert_eq!(b.bank(h), Some(&[1, 2, 3, 4, 0, 0][..]));
        bank_call(&mut b, Native::ResizeBank, &[h, 3]);
        assert_eq!(b.bank(h), Some(&[1, 2, 3][..]));
        bank_call(&mut b, Native::ResizeBank, &[g, 4]);
        bank_call(&mut b, Native::CopyBank, &[h, 0, g, 1, 3]);
        assert_eq!(b.bank(g), Some(&[0, 1, 2, 3][..]));
        // Overlapping copy within one bank is a memmove.
        bank_call(&mut b, Native::CopyBank, &[g, 1, g, 0, 3]);
        assert_eq!(b.bank(g), Some(&[1, 2, 3, 3][..]));
        // Any range outside: nothing.
        let before = b.clone();
        for args in [
            [h, 0, g, 2, 3],
            [h, 1, g, 0, 3],
            [h, -1, g, 0, 1],
            [h, 0, g, 0, 0],
            [h, 0, g, 0, -1],
            [h, 0, 9, 0, 1],
            [9, 0, g, 0, 1],
            [h, 0, g, i32::MAX, i32::MAX],
        ] {
            bank_call(&mut b, Native::CopyBank, &args);
        }
        assert_eq!(b, before);
        // Freed handles are reused, lowest first.
        bank_call(&mut b, Native::FreeBank, &[h]);
        assert_eq!(b.bank(h), None);
        assert_eq!(bank_call(&mut b, Native::CreateBank, &[1]), Value::Int(1));
        bank_call(&mut b, Native::FreeBank, &[g]);
        bank_call(&mut b, Native::FreeBank, &[1]);
        assert_eq!(b, Banks::default());
    }

    #[test]
    fn banks_have_a_memory_cap() {
        let mut b = Banks::default();
        let too_big = i32::try_from(MAX_BANK_BYTES + 1).unwrap_or(i32::MAX);
        assert!(matches!(
            b.call(Native::CreateBank, &[i(too_big)]),
            Err(RuntimeError::Memory(_))
        ));
        assert!(matches!(
            b.call(Native::CreateBank, &[i(i32::MAX)]),
            Err(RuntimeError::Memory(_))
        ));
        let half = i32::try_from(MAX_BANK_BYTES / 2).unwrap_or(0);
        let h = bank_call(&mut b, Native::CreateBank, &[half]).to_int();
        bank_call(&mut b, Native::CreateBank, &[half]);
        assert!(matches!(
            b.call(Native::CreateBank, &[i(1)]),
            Err(RuntimeError::Memory(_))
        ));
        assert!(matches!(
            b.call(Native::ResizeBank, &[i(h), i(half + 1)]),
            Err(RuntimeError::Memory(_))
        ));
        assert_eq!(b.bytes(), MAX_BANK_BYTES);
        bank_call(&mut b, Native::ResizeBank, &[h, 0]);
        assert_eq!(bank_call(&mut b, Native::CreateBank, &[1]), Value::Int(3));
    }
}
