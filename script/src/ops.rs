//! The operator rules of RSL (`rsl-language.md` §7), shared by the compiler (typing and
//! constant folding) and the VM (execution), so both agree exactly.
//!
//! * `+` on a String concatenates (the other side converted); the other arithmetic
//!   operators (and unary `-`) take the number a String holds (`atoi`, or `atof` beside a
//!   Float and for `^`): `Parameter(5) * 5` is numeric.
//! * Otherwise Float if either side is Float, or the operator is `^`; else Int.
//! * Int arithmetic wraps; Int `/` truncates toward zero and `Mod` takes the dividend's
//!   sign (C); by zero is a runtime error. Float `Mod` is `fmod`; Float `/ 0` is IEEE.
//! * `And`, `Or`, `Xor`, `Shl`, `Shr` work on Ints (bitwise, no short-circuit); `Shr` is
//!   logical.
//! * Comparisons: as Strings (bytes) if either side is a String, else as Floats if either
//!   is a Float, else as Ints; the result is the Int 1 or 0.

use crate::ast::BinOp;
use crate::bytecode::Cmp;
use crate::error::RuntimeError;
use crate::value::{RStr, Ty};

/// The longest string a script may build (bytes).
pub const MAX_STRING: usize = 16 * 1024 * 1024;

/// The type an operator computes in, given its operands' types.
pub fn operand_ty(op: BinOp, l: Ty, r: Ty) -> Result<Ty, String> {
    use BinOp::{Add, And, Div, Eq, Ge, Gt, Le, Lt, Mod, Mul, Ne, Or, Pow, Shl, Shr, Sub, Xor};
    let either = |t: Ty| l == t || r == t;
    match op {
        Add if either(Ty::Str) => Ok(Ty::Str),
        // `L = Parameter(5)` then `L * 5`: a String operand of the other arithmetic
        // operators is the number it holds (C `atoi`, or `atof` beside a Float and for
        // `^`), so such scripts compile and compute as they do in Realm Crafter
        // (docs/scripting.md, "String operands of arithmetic").
        Pow => Ok(Ty::Float),
        Add | Sub | Mul | Div | Mod => Ok(if either(Ty::Float) {
            Ty::Float
        } else {
            Ty::Int
        }),
        And | Or | Xor | Shl | Shr => Ok(Ty::Int),
        Eq | Ne | Lt | Gt | Le | Ge => Ok(if either(Ty::Str) {
            Ty::Str
        } else if either(Ty::Float) {
            Ty::Float
        } else {
            Ty::Int
        }),
    }
}

/// The type of the result of `l op r`.
pub fn result_ty(op: BinOp, l: Ty, r: Ty) -> Result<Ty, String> {
    let t = operand_ty(op, l, r)?;
    Ok(if comparison(op).is_some() { Ty::Int } else { t })
}

/// The comparison an operator is, if it is one.
pub fn comparison(op: BinOp) -> Option<Cmp> {
    Some(match op {
        BinOp::Eq => Cmp::Eq,
        BinOp::Ne => Cmp::Ne,
        BinOp::Lt => Cmp::Lt,
        BinOp::Gt => Cmp::Gt,
        BinOp::Le => Cmp::Le,
        BinOp::Ge => Cmp::Ge,
        _ => return None,
    })
}

/// The operator as written.
pub fn op_name(op: BinOp) -> &'static str {
    match op {
        BinOp::And => "And",
        BinOp::Or => "Or",
        BinOp::Xor => "Xor",
        BinOp::Eq => "=",
        BinOp::Ne => "<>",
        BinOp::Lt => "<",
        BinOp::Gt => ">",
        BinOp::Le => "<=",
        BinOp::Ge => ">=",
        BinOp::Add => "+",
        BinOp::Sub => "-",
        BinOp::Shl => "Shl",
        BinOp::Shr => "Shr",
        BinOp::Mul => "*",
        BinOp::Div => "/",
        BinOp::Mod => "Mod",
        BinOp::Pow => "^",
    }
}

/// `a / b` on Ints.
#[inline]
pub fn div_i(a: i32, b: i32) -> Result<i32, RuntimeError> {
    if b == 0 {
        Err(RuntimeError::DivisionByZero)
    } else {
        Ok(a.wrapping_div(b))
    }
}

/// `a Mod b` on Ints.
#[inline]
pub fn mod_i(a: i32, b: i32) -> Result<i32, RuntimeError> {
    if b == 0 {
        Err(RuntimeError::DivisionByZero)
    } else {
        Ok(a.wrapping_rem(b))
    }
}

/// `a Shl b`.
#[inline]
pub fn shl_i(a: i32, b: i32) -> i32 {
    a.wrapping_shl(b as u32)
}

/// `a Shr b` (logical).
#[inline]
pub fn shr_i(a: i32, b: i32) -> i32 {
    ((a as u32).wrapping_shr(b as u32)) as i32
}

/// `a ^ b`.
#[inline]
pub fn pow_f(a: f32, b: f32) -> f32 {
    f64::from(a).powf(f64::from(b)) as f32
}

/// `a Mod b` on Floats (`fmod`).
#[inline]
pub fn mod_f(a: f32, b: f32) -> f32 {
    a % b
}

/// `a + b` on Strings.
pub fn concat(a: &RStr, b: &RStr) -> Result<RStr, RuntimeError> {
    if a.is_empty() {
        return Ok(b.clone());
    }
    if b.is_empty() {
        return Ok(a.clone());
    }
    let n = a.len() + b.len();
    if n > MAX_STRING {
        return Err(RuntimeError::Memory(format!(
            "a string of {n} bytes is longer than the {MAX_STRING}-byte limit"
        )));
    }
    let mut v = Vec::with_capacity(n);
    v.extend_from_slice(a.as_bytes());
    v.extend_from_slice(b.as_bytes());
    Ok(RStr::from_vec(v))
}

/// Compare Floats (NaN compares unordered: only `<>` holds).
#[inline]
pub fn cmp_f(a: f32, b: f32, c: Cmp) -> bool {
    match a.partial_cmp(&b) {
        Some(o) => c.holds(o),
        None => c == Cmp::Ne,
    }
}
