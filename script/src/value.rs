//! The three value types of RSL (Int, Float, String) and every implicit conversion between
//! them, exactly as `rsl-language.md` §4–5 states them.
//!
//! * Int is `i32` with wrapping arithmetic; Float is `f32` (BriskVM's stacks hold 4-byte
//!   floats); String is a byte string ([`RStr`]), never UTF-8.
//! * Float → Int truncates toward zero (BriskVM's `_ftol2`), NaN and out-of-range give
//!   `-2147483648`.
//! * Float → String is C's `%.6g` with MSVC's 3-digit exponent (`1.23457e+006`).
//! * String → Int / Float are C's `atoi` / `atof` (leading blanks, sign, digits, stop at
//!   the first other byte; junk is 0).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// A value type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Ty {
    /// `%`: i32.
    Int,
    /// `#`: f32.
    Float,
    /// `$`: byte string.
    Str,
}

impl Ty {
    /// The tag character.
    pub fn tag(self) -> char {
        match self {
            Self::Int => '%',
            Self::Float => '#',
            Self::Str => '$',
        }
    }

    /// The zero value of the type (`0`, `0.0`, `""`).
    pub fn zero(self) -> Value {
        match self {
            Self::Int => Value::Int(0),
            Self::Float => Value::Float(0.0),
            Self::Str => Value::Str(RStr::EMPTY),
        }
    }

    /// A readable name for messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::Int => "Int",
            Self::Float => "Float",
            Self::Str => "String",
        }
    }
}

/// An immutable, cheaply cloned byte string. The empty string does not allocate.
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RStr(Option<Arc<[u8]>>);

impl RStr {
    /// `""`.
    pub const EMPTY: Self = Self(None);

    /// A string from bytes.
    pub fn new(bytes: &[u8]) -> Self {
        if bytes.is_empty() {
            Self(None)
        } else {
            Self(Some(Arc::from(bytes)))
        }
    }

    /// A string from an owned buffer.
    pub fn from_vec(bytes: Vec<u8>) -> Self {
        if bytes.is_empty() {
            Self(None)
        } else {
            Self(Some(Arc::from(bytes.into_boxed_slice())))
        }
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_deref().unwrap_or(&[])
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.as_bytes().len()
    }

    /// Whether it is `""`.
    pub fn is_empty(&self) -> bool {
        self.as_bytes().is_empty()
    }

    /// The bytes as text, one char per byte (Latin-1), for logs and the host.
    pub fn to_latin1(&self) -> String {
        self.as_bytes().iter().map(|&b| char::from(b)).collect()
    }

    /// A string from text: each char below 256 becomes one byte, others become `?`.
    pub fn from_latin1(s: &str) -> Self {
        Self::from_vec(
            s.chars()
                .map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?'))
                .collect(),
        )
    }
}

impl std::fmt::Debug for RStr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.to_latin1())
    }
}

impl From<&str> for RStr {
    fn from(s: &str) -> Self {
        Self::new(s.as_bytes())
    }
}

impl From<&[u8]> for RStr {
    fn from(s: &[u8]) -> Self {
        Self::new(s)
    }
}

impl Serialize for RStr {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serde_bytes::Bytes::new(self.as_bytes()).serialize(s)
    }
}

impl<'de> Deserialize<'de> for RStr {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let b: serde_bytes::ByteBuf = Deserialize::deserialize(d)?;
        Ok(Self::from_vec(b.into_vec()))
    }
}

/// A value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Value {
    /// An Int.
    Int(i32),
    /// A Float.
    Float(f32),
    /// A String.
    Str(RStr),
}

impl Default for Value {
    fn default() -> Self {
        Self::Int(0)
    }
}

impl Value {
    /// Its type.
    pub fn ty(&self) -> Ty {
        match self {
            Self::Int(_) => Ty::Int,
            Self::Float(_) => Ty::Float,
            Self::Str(_) => Ty::Str,
        }
    }

    /// Converted to Int (§5).
    pub fn to_int(&self) -> i32 {
        match self {
            Self::Int(i) => *i,
            Self::Float(f) => float_to_int(*f),
            Self::Str(s) => atoi(s.as_bytes()),
        }
    }

    /// Converted to Float (§5).
    pub fn to_float(&self) -> f32 {
        match self {
            Self::Int(i) => *i as f32,
            Self::Float(f) => *f,
            Self::Str(s) => atof(s.as_bytes()),
        }
    }

    /// Converted to String (§5).
    pub fn to_rstr(&self) -> RStr {
        match self {
            Self::Int(i) => RStr::from_vec(i.to_string().into_bytes()),
            Self::Float(f) => RStr::from_vec(float_to_string(*f).into_bytes()),
            Self::Str(s) => s.clone(),
        }
    }

    /// Converted to a type.
    pub fn convert(&self, ty: Ty) -> Value {
        match ty {
            Ty::Int => Value::Int(self.to_int()),
            Ty::Float => Value::Float(self.to_float()),
            Ty::Str => Value::Str(self.to_rstr()),
        }
    }

    /// A string value from text (Latin-1).
    pub fn str(s: &str) -> Self {
        Self::Str(RStr::from_latin1(s))
    }
}

/// Float → Int: truncate toward zero; NaN and anything outside the i32 range give
/// `-2147483648` (`cvttsd2si`).
pub fn float_to_int(f: f32) -> i32 {
    let d = f64::from(f);
    if d.is_nan() || d >= 2_147_483_648.0 || d <= -2_147_483_649.0 {
        i32::MIN
    } else {
        d.trunc() as i32
    }
}

/// Float → String: C `%.6g` with MSVC's 3-digit exponent; `Infinity`, `-Infinity`, and
/// MSVC's `-1.#IND` / `1.#QNAN` for NaN.
pub fn float_to_string(f: f32) -> String {
    if f.is_nan() {
        return if f.is_sign_negative() {
            "-1.#IND".to_owned()
        } else {
            "1.#QNAN".to_owned()
        };
    }
    if f.is_infinite() {
        return if f < 0.0 { "-Infinity" } else { "Infinity" }.to_owned();
    }
    let d = f64::from(f);
    if d == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    // Round to 6 significant digits first: the exponent after rounding decides the form.
    let e_form = format!("{d:.5e}");
    let (mant, exp) = e_form.split_once('e').unwrap_or((e_form.as_str(), "0"));
    let x: i32 = exp.parse().unwrap_or(0);
    if (-4..6).contains(&x) {
        let decimals = usize::try_from(5 - x).unwrap_or(0);
        let s = format!("{d:.decimals$}");
        strip_zeros(&s).to_owned()
    } else {
        let m = strip_zeros(mant);
        let sign = if x < 0 { '-' } else { '+' };
        format!("{m}e{sign}{:03}", x.unsigned_abs())
    }
}

/// Realm Crafter's host-side float text (Blitz `Str`), used where the engine builds a
/// string for a script (an NPC death script's `Param`): like `%.6g` but a whole number
/// keeps `.0` (`"2.0"`, `"1.23457e+006"`).
pub fn blitz_float_string(f: f32) -> String {
    let s = float_to_string(f);
    if s.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
        format!("{s}.0")
    } else {
        s
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// C `atoi`: leading blanks, an optional sign, decimal digits; stops at the first other
/// byte. Overflow saturates.
pub fn atoi(s: &[u8]) -> i32 {
    let mut i = 0;
    while s.get(i).copied().is_some_and(is_c_space) {
        i += 1;
    }
    let mut neg = false;
    if let Some(&c) = s.get(i)
        && (c == b'+' || c == b'-')
    {
        neg = c == b'-';
        i += 1;
    }
    let mut v: i64 = 0;
    while let Some(&c) = s.get(i) {
        if !c.is_ascii_digit() {
            break;
        }
        v = (v * 10 + i64::from(c - b'0')).min(i64::from(i32::MAX) + 1);
        i += 1;
    }
    let v = if neg { -v } else { v };
    i32::try_from(v.clamp(i64::from(i32::MIN), i64::from(i32::MAX))).unwrap_or(0)
}

/// C `atof`: leading blanks, sign, digits with an optional `.` and fraction, an optional
/// exponent; the longest such prefix, else 0.0.
pub fn atof(s: &[u8]) -> f32 {
    let mut i = 0;
    while s.get(i).copied().is_some_and(is_c_space) {
        i += 1;
    }
    let start = i;
    if matches!(s.get(i), Some(b'+' | b'-')) {
        i += 1;
    }
    let mut digits = 0;
    while s.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
        digits += 1;
    }
    if s.get(i) == Some(&b'.') {
        i += 1;
        while s.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return 0.0;
    }
    let mut end = i;
    if matches!(s.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(s.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let exp_start = j;
        while s.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
        }
        if j > exp_start {
            end = j;
        }
    }
    let text: String = s
        .get(start..end)
        .unwrap_or(&[])
        .iter()
        .map(|&b| char::from(b))
        .collect();
    let text = text.strip_suffix('.').map_or(text.as_str(), |t| t);
    text.parse::<f64>().map_or(0.0, |v| v as f32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_text_matches_msvc_percent_6g() {
        let cases: &[(f32, &str)] = &[
            (2.0, "2"),
            (0.1, "0.1"),
            (1_234_567.0, "1.23457e+006"),
            (1e-5, "1e-005"),
            (3.5, "3.5"),
            (-2.25, "-2.25"),
            (100_000.0, "100000"),
            (999_999.0, "999999"),
            (9_999_999.0, "1e+007"),
            (0.0001, "0.0001"),
            (0.000_123_456_7, "0.000123457"),
            (f32::INFINITY, "Infinity"),
            (f32::NEG_INFINITY, "-Infinity"),
        ];
        for &(f, want) in cases {
            assert_eq!(float_to_string(f), want, "{f}");
        }
        assert_eq!(blitz_float_string(2.0), "2.0");
        assert_eq!(blitz_float_string(1_234_567.0), "1.23457e+006");
        assert_eq!(blitz_float_string(-3.0), "-3.0");
    }

    #[test]
    fn float_to_int_truncates() {
        assert_eq!(float_to_int(1.5), 1);
        assert_eq!(float_to_int(-2.7), -2);
        assert_eq!(float_to_int(f32::NAN), i32::MIN);
        assert_eq!(float_to_int(3e9), i32::MIN);
        assert_eq!(float_to_int(-3e9), i32::MIN);
        assert_eq!(float_to_int(2_147_483_520.0), 2_147_483_520);
    }

    #[test]
    fn atoi_and_atof_follow_c() {
        assert_eq!(atoi(b""), 0);
        assert_eq!(atoi(b"abc"), 0);
        assert_eq!(atoi(b" 17"), 17);
        assert_eq!(atoi(b"12abc"), 12);
        assert_eq!(atoi(b"-5"), -5);
        assert_eq!(atoi(b"99999999999"), i32::MAX);
        assert_eq!(atoi(b"-99999999999"), i32::MIN);
        assert!((atof(b" 1.5x") - 1.5).abs() < 1e-6);
        assert!((atof(b"2e3") - 2000.0).abs() < 1e-3);
        assert!((atof(b"2e") - 2.0).abs() < 1e-6);
        assert!((atof(b"-.5") + 0.5).abs() < 1e-6);
        assert_eq!(atof(b"."), 0.0);
        assert_eq!(atof(b"junk"), 0.0);
        assert!((atof(b"7.") - 7.0).abs() < 1e-6);
    }

    #[test]
    fn strings_round_trip_every_byte() {
        let all: Vec<u8> = (0..=255).collect();
        let s = RStr::new(&all);
        assert_eq!(s.as_bytes(), &all[..]);
        assert_eq!(RStr::from_latin1(&s.to_latin1()), s);
    }
}
