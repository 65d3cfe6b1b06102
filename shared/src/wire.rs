//! Realm Crafter wire primitives: little-endian integers and floats, length-prefixed 8-bit
//! strings, the zero-copy [`Reader`], the [`DecodeError`] type, `ClampWorldCoord` /
//! `ClampSaneFloat`, MD5 hex and the `P_CreateAccount` e-mail obfuscation.
//!
//! Everything follows `RCEnet.bb` (reference §2): integers are the low 1, 2 or 4 bytes of a
//! value, little-endian; floats are IEEE-754 `f32`, little-endian; strings are raw bytes
//! with a `u8` length, a `u16` length, or no prefix when they run to the end of the packet.
//!
//! Writing never allocates on its own: the [`WireWrite`] methods append to the caller's
//! `Vec<u8>`.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Where a decode failed and why.
///
/// `offset` is the byte offset within the payload (after the type byte) at which the
/// problem was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at byte {offset}: {kind}")]
pub struct DecodeError {
    /// Byte offset within the payload (0-based, after the type byte).
    pub offset: usize,
    /// What went wrong.
    pub kind: DecodeErrorKind,
}

impl DecodeError {
    /// Builds an error at `offset`.
    pub fn new(offset: usize, kind: DecodeErrorKind) -> Self {
        Self { offset, kind }
    }
}

/// The kinds of [`DecodeError`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeErrorKind {
    /// The payload ended while `needed` more bytes were expected.
    #[error("unexpected end of payload, {needed} more byte(s) needed")]
    UnexpectedEnd {
        /// How many more bytes the field needed.
        needed: usize,
    },
    /// A fixed-length packet had bytes left over.
    #[error("{extra} trailing byte(s) after the last field")]
    TrailingBytes {
        /// How many bytes were left.
        extra: usize,
    },
    /// The sub-code byte is not one this packet knows.
    #[error("unknown sub-code {0:#04x}")]
    BadSubCode(u8),
    /// The payload length fits none of the packet's forms.
    #[error("payload length {actual} fits none of the packet's forms (expected {expected})")]
    LengthMismatch {
        /// A description of the accepted lengths.
        expected: &'static str,
        /// The payload length.
        actual: usize,
    },
    /// A string is longer than its length prefix can express.
    #[error("string of {len} bytes is longer than its prefix allows ({max})")]
    StringTooLong {
        /// The string length.
        len: usize,
        /// The largest length the prefix can hold.
        max: usize,
    },
    /// A field holds a value the packet does not allow.
    #[error("invalid value for {field}")]
    BadValue {
        /// The field's name.
        field: &'static str,
    },
}

/// A zero-copy reader over one packet payload that tracks its offset.
///
/// Every method either returns the value and advances, or returns a [`DecodeError`]
/// naming the offset where the field starts; it never panics.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    #[inline]
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// The current offset from the start of the payload.
    #[inline]
    pub fn offset(&self) -> usize {
        self.pos
    }

    /// How many bytes are left.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    /// Whether every byte has been read.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// An error of `kind` at the current offset.
    #[inline]
    pub fn error(&self, kind: DecodeErrorKind) -> DecodeError {
        DecodeError::new(self.pos, kind)
    }

    /// The next `n` bytes, borrowed from the payload.
    #[inline]
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self.pos.checked_add(n);
        match end.and_then(|end| self.buf.get(self.pos..end)) {
            Some(s) => {
                self.pos += n;
                Ok(s)
            }
            None => Err(self.error(DecodeErrorKind::UnexpectedEnd {
                needed: n - self.remaining().min(n),
            })),
        }
    }

    /// The next `N` bytes as an array.
    #[inline]
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let s = self.bytes(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    /// The next byte without consuming it.
    #[inline]
    pub fn peek_u8(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }

    /// One byte.
    #[inline]
    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        match self.buf.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => Err(self.error(DecodeErrorKind::UnexpectedEnd { needed: 1 })),
        }
    }

    /// A little-endian `u16` (`RCE_IntFromStr` on 2 bytes: zero-extended).
    #[inline]
    pub fn u16(&mut self) -> Result<u16, DecodeError> {
        self.array::<2>().map(u16::from_le_bytes)
    }

    /// A little-endian `i16` (`RCE_SignedShortFromStr`).
    #[inline]
    pub fn i16(&mut self) -> Result<i16, DecodeError> {
        self.array::<2>().map(i16::from_le_bytes)
    }

    /// A little-endian `u32`.
    #[inline]
    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        self.array::<4>().map(u32::from_le_bytes)
    }

    /// A little-endian `i32`.
    #[inline]
    pub fn i32(&mut self) -> Result<i32, DecodeError> {
        self.array::<4>().map(i32::from_le_bytes)
    }

    /// A little-endian IEEE-754 `f32` (`RCE_FloatFromStr`), bit for bit (NaN included).
    #[inline]
    pub fn f32(&mut self) -> Result<f32, DecodeError> {
        self.array::<4>().map(f32::from_le_bytes)
    }

    /// A string with a `u8` length prefix.
    #[inline]
    pub fn str8(&mut self) -> Result<&'a [u8], DecodeError> {
        let n = self.u8()?;
        self.bytes(usize::from(n))
    }

    /// A string with a `u16` length prefix.
    #[inline]
    pub fn str16(&mut self) -> Result<&'a [u8], DecodeError> {
        let n = self.u16()?;
        self.bytes(usize::from(n))
    }

    /// A `u8`-length string as an owned [`RcString`].
    pub fn string8(&mut self) -> Result<RcString, DecodeError> {
        self.str8().map(RcString::from)
    }

    /// A `u16`-length string as an owned [`RcString`].
    pub fn string16(&mut self) -> Result<RcString, DecodeError> {
        self.str16().map(RcString::from)
    }

    /// Everything left in the payload (a string with no prefix).
    #[inline]
    pub fn rest(&mut self) -> &'a [u8] {
        let s = self.buf.get(self.pos..).unwrap_or(&[]);
        self.pos = self.buf.len();
        s
    }

    /// Succeeds only when every byte has been read (for fixed-length packets).
    #[inline]
    pub fn finish(&self) -> Result<(), DecodeError> {
        match self.remaining() {
            0 => Ok(()),
            extra => Err(self.error(DecodeErrorKind::TrailingBytes { extra })),
        }
    }

    /// Reads `n` items with `f`.
    pub fn many<T>(
        &mut self,
        n: usize,
        mut f: impl FnMut(&mut Self) -> Result<T, DecodeError>,
    ) -> Result<Vec<T>, DecodeError> {
        let mut v = Vec::with_capacity(n.min(self.remaining()));
        for _ in 0..n {
            v.push(f(self)?);
        }
        Ok(v)
    }

    /// Reads items with `f` until the payload is used up.
    pub fn until_end<T>(
        &mut self,
        mut f: impl FnMut(&mut Self) -> Result<T, DecodeError>,
    ) -> Result<Vec<T>, DecodeError> {
        let mut v = Vec::new();
        while !self.is_empty() {
            v.push(f(self)?);
        }
        Ok(v)
    }
}

/// Little-endian writers that append to the caller's buffer (`RCE_StrFromInt$`,
/// `RCE_StrFromFloat$`).
///
/// Writing never fails. A string longer than its prefix can express is **truncated** to
/// 255 (`put_str8`) or 65535 (`put_str16`) bytes, so the output always decodes.
pub trait WireWrite {
    /// One byte.
    fn put_u8(&mut self, v: u8);
    /// Raw bytes, no prefix.
    fn put_bytes(&mut self, v: &[u8]);
    /// A little-endian `u16`.
    fn put_u16(&mut self, v: u16) {
        self.put_bytes(&v.to_le_bytes());
    }
    /// A little-endian `i16`.
    fn put_i16(&mut self, v: i16) {
        self.put_bytes(&v.to_le_bytes());
    }
    /// A little-endian `u32`.
    fn put_u32(&mut self, v: u32) {
        self.put_bytes(&v.to_le_bytes());
    }
    /// A little-endian `i32`.
    fn put_i32(&mut self, v: i32) {
        self.put_bytes(&v.to_le_bytes());
    }
    /// A little-endian `f32`, bit for bit.
    fn put_f32(&mut self, v: f32) {
        self.put_bytes(&v.to_le_bytes());
    }
    /// A string with a `u8` length prefix (truncated to 255 bytes).
    fn put_str8(&mut self, s: &[u8]) {
        let s = s.get(..s.len().min(255)).unwrap_or(s);
        self.put_u8(s.len() as u8);
        self.put_bytes(s);
    }
    /// A string with a `u16` length prefix (truncated to 65535 bytes).
    fn put_str16(&mut self, s: &[u8]) {
        let s = s.get(..s.len().min(65535)).unwrap_or(s);
        self.put_u16(s.len() as u16);
        self.put_bytes(s);
    }
}

impl WireWrite for Vec<u8> {
    #[inline]
    fn put_u8(&mut self, v: u8) {
        self.push(v);
    }
    #[inline]
    fn put_bytes(&mut self, v: &[u8]) {
        self.extend_from_slice(v);
    }
}

/// `WorldCoordMax`: the bound of [`clamp_world_coord`].
#[doc(alias = "WorldCoordMax")]
pub const WORLD_COORD_MAX: f32 = 100_000.0;

/// The bound of [`clamp_sane_float`].
pub const SANE_FLOAT_MAX: f32 = 1e9;

/// `ClampWorldCoord#`: `v` if `-100000 < v < 100000`, otherwise 0.0.
///
/// NaN, ±Inf, out-of-range values and the bounds themselves all become 0; values are
/// *not* pulled to the bound (reference §2).
#[doc(alias = "ClampWorldCoord")]
#[inline]
pub fn clamp_world_coord(v: f32) -> f32 {
    if v > -WORLD_COORD_MAX && v < WORLD_COORD_MAX {
        v
    } else {
        0.0
    }
}

/// `ClampSaneFloat#`: `v` if `-1e9 < v < 1e9`, otherwise 0.0 (NaN and ±Inf become 0).
///
/// Used for yaw, animation speed and UI sizes.
#[doc(alias = "ClampSaneFloat")]
#[inline]
pub fn clamp_sane_float(v: f32) -> f32 {
    if v > -SANE_FLOAT_MAX && v < SANE_FLOAT_MAX {
        v
    } else {
        0.0
    }
}

/// Lowercase 32-character hex MD5 of `data`, as the client sends passwords.
#[doc(alias = "MD5")]
pub fn md5_hex(data: &[u8]) -> String {
    use md5::{Digest, Md5};
    hex::encode(Md5::digest(data))
}

/// The `P_CreateAccount` e-mail obfuscation: each byte minus 26 (wrapping), then reversed.
pub fn obfuscate_email(email: &[u8]) -> Vec<u8> {
    email.iter().rev().map(|b| b.wrapping_sub(26)).collect()
}

/// The inverse of [`obfuscate_email`]: reversed, then each byte plus 26 (wrapping).
pub fn deobfuscate_email(wire: &[u8]) -> Vec<u8> {
    wire.iter().rev().map(|b| b.wrapping_add(26)).collect()
}

/// A Realm Crafter string: raw 8-bit bytes, no terminator, no encoding.
///
/// Any byte sequence round-trips. For display and JSON each byte is mapped to the Unicode
/// code point of the same value (Latin-1), so ASCII reads as itself and JSON stays
/// readable; deserialising rejects characters above U+00FF.
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RcString(pub Vec<u8>);

impl RcString {
    /// The raw bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the string is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Converts a Latin-1 `&str`; `None` if a character is above U+00FF.
    pub fn from_latin1(s: &str) -> Option<Self> {
        s.chars()
            .map(|c| u8::try_from(u32::from(c)).ok())
            .collect::<Option<Vec<u8>>>()
            .map(Self)
    }

    /// The Latin-1 reading of the bytes (never fails).
    pub fn to_latin1(&self) -> String {
        self.0.iter().map(|&b| char::from(b)).collect()
    }
}

impl fmt::Display for RcString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use fmt::Write;
        for &b in &self.0 {
            f.write_char(char::from(b))?;
        }
        Ok(())
    }
}

impl fmt::Debug for RcString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_latin1(), f)
    }
}

impl From<&[u8]> for RcString {
    fn from(b: &[u8]) -> Self {
        Self(b.to_vec())
    }
}

impl From<Vec<u8>> for RcString {
    fn from(b: Vec<u8>) -> Self {
        Self(b)
    }
}

/// Latin-1 conversion; characters above U+00FF become `?`.
impl From<&str> for RcString {
    fn from(s: &str) -> Self {
        Self(
            s.chars()
                .map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?'))
                .collect(),
        )
    }
}

impl AsRef<[u8]> for RcString {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Serialize for RcString {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_latin1())
    }
}

impl<'de> Deserialize<'de> for RcString {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = RcString;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a Latin-1 string (every character at most U+00FF)")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RcString, E> {
                RcString::from_latin1(v)
                    .ok_or_else(|| E::custom("character above U+00FF in a Realm Crafter string"))
            }
        }
        d.deserialize_str(V)
    }
}

/// Opaque bytes, shown as a lowercase hex string in JSON (`Raw` packets, unparsed tails).
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct HexBytes(pub Vec<u8>);

impl fmt::Debug for HexBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HexBytes({})", hex::encode(&self.0))
    }
}

impl From<&[u8]> for HexBytes {
    fn from(b: &[u8]) -> Self {
        Self(b.to_vec())
    }
}

impl Serialize for HexBytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for HexBytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = HexBytes;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a hex string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<HexBytes, E> {
                let clean: String = v.chars().filter(|c| !c.is_whitespace()).collect();
                hex::decode(clean).map(HexBytes).map_err(E::custom)
            }
        }
        d.deserialize_str(V)
    }
}

/// Serde helper for `f32` fields so that every value survives JSON bit for bit.
///
/// Finite values are JSON numbers (printed as the shortest `f32` decimal, e.g. `-52.7`).
/// JSON has no NaN or infinity, so those are strings: `"inf"`, `"-inf"`, `"NaN"` for the
/// canonical quiet NaN (`0x7fc00000`) and `"NaN:0xXXXXXXXX"` for any other NaN bit pattern.
/// Deserialising also accepts any of those strings and plain numbers.
pub mod json_f32 {
    use std::fmt;

    use serde::{Deserializer, Serializer};

    const CANONICAL_NAN: u32 = 0x7fc0_0000;

    /// Serialises `v` (see the module doc).
    pub fn serialize<S: Serializer>(v: &f32, s: S) -> Result<S::Ok, S::Error> {
        let v = *v;
        if v.is_finite() {
            s.serialize_f32(v)
        } else if v.is_nan() {
            if v.to_bits() == CANONICAL_NAN {
                s.serialize_str("NaN")
            } else {
                s.serialize_str(&format!("NaN:{:#010x}", v.to_bits()))
            }
        } else if v > 0.0 {
            s.serialize_str("inf")
        } else {
            s.serialize_str("-inf")
        }
    }

    /// Parses the string forms (see the module doc).
    pub fn parse_str(v: &str) -> Option<f32> {
        match v {
            "NaN" | "nan" => Some(f32::from_bits(CANONICAL_NAN)),
            "inf" | "+inf" | "Infinity" => Some(f32::INFINITY),
            "-inf" | "-Infinity" => Some(f32::NEG_INFINITY),
            _ => {
                if let Some(h) = v.strip_prefix("NaN:0x") {
                    u32::from_str_radix(h, 16).ok().map(f32::from_bits)
                } else {
                    v.parse::<f32>().ok()
                }
            }
        }
    }

    struct V;

    impl serde::de::Visitor<'_> for V {
        type Value = f32;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a number or one of \"NaN\", \"inf\", \"-inf\", \"NaN:0x...\"")
        }
        fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<f32, E> {
            Ok(v as f32)
        }
        fn visit_f32<E: serde::de::Error>(self, v: f32) -> Result<f32, E> {
            Ok(v)
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<f32, E> {
            Ok(v as f32)
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<f32, E> {
            Ok(v as f32)
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<f32, E> {
            parse_str(v).ok_or_else(|| E::custom(format!("not a float: {v:?}")))
        }
    }

    /// Deserialises a number or one of the string forms.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f32, D::Error> {
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reader_reports_offsets() {
        let mut r = Reader::new(&[1, 2, 3]);
        assert_eq!(r.u16().unwrap(), 0x0201);
        let e = r.u32().unwrap_err();
        assert_eq!(e.offset, 2);
        assert_eq!(e.kind, DecodeErrorKind::UnexpectedEnd { needed: 3 });
        assert!(e.to_string().contains("at byte 2"));
    }

    #[test]
    fn latin1_round_trips_every_byte() {
        let all: Vec<u8> = (0..=255).collect();
        let s = RcString(all.clone());
        let json = serde_json::to_string(&s).unwrap();
        let back: RcString = serde_json::from_str(&json).unwrap();
        assert_eq!(back.0, all);
    }
}
