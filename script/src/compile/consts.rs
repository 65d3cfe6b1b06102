//! Constant expressions: `Const` values, `Global` initialisers, `Dim` bounds, parameter
//! defaults and `Step`s, folded with the same rules as the VM ([`crate::ops`]).

use std::collections::HashMap;

use crate::ast::{BinOp, Expr, ExprKind, UnOp};
use crate::ops;
use crate::value::{RStr, Ty, Value};

/// Evaluate a constant expression: `None` if it is not constant (a variable or a call),
/// `Some(Err)` if it is but fails (division by zero, a literal out of range).
pub fn const_eval(e: &Expr, consts: &HashMap<String, Value>) -> Option<Result<Value, String>> {
    Some(Ok(match &e.kind {
        ExprKind::Int(i) => match i32::try_from(*i) {
            Ok(v) => Value::Int(v),
            Err(_) => return Some(Err(format!("integer literal {i} is out of range"))),
        },
        ExprKind::Float(f) => Value::Float(*f as f32),
        ExprKind::Str(s) => Value::Str(RStr::new(s)),
        ExprKind::Var(id) => {
            let v = consts.get(&id.key())?;
            return Some(Ok(match super::tag_ty(&id.tag) {
                Ok(Some(t)) if t != v.ty() => {
                    return Some(Err(format!(
                        "Const {} is a {}, not a {}",
                        id.name,
                        v.ty().name(),
                        t.name()
                    )));
                }
                _ => v.clone(),
            }));
        }
        ExprKind::Unary { op, expr } => {
            // `-2147483648` is the negation of a literal one past i32::MAX.
            if *op == UnOp::Neg
                && let ExprKind::Int(i) = expr.kind
                && i == 2_147_483_648
            {
                return Some(Ok(Value::Int(i32::MIN)));
            }
            let v = match const_eval(expr, consts)? {
                Ok(v) => v,
                Err(m) => return Some(Err(m)),
            };
            match (op, v) {
                (UnOp::Pos, v) => v,
                (UnOp::Neg, Value::Int(i)) => Value::Int(i.wrapping_neg()),
                (UnOp::Neg, Value::Float(f)) => Value::Float(-f),
                (UnOp::Neg, Value::Str(s)) => Value::Int(Value::Str(s).to_int().wrapping_neg()),
                (UnOp::Not, v) => Value::Int(i32::from(v.to_int() == 0)),
            }
        }
        ExprKind::Binary { op, lhs, rhs } => {
            if let Some(m) = string_literal_misuse(*op, lhs, rhs) {
                return Some(Err(m));
            }
            let l = match const_eval(lhs, consts)? {
                Ok(v) => v,
                Err(m) => return Some(Err(m)),
            };
            let r = match const_eval(rhs, consts)? {
                Ok(v) => v,
                Err(m) => return Some(Err(m)),
            };
            // An Int division by zero is not folded: BriskVM compiles it, and it is a
            // runtime error where it runs (a `Const` of it is "not a constant").
            if matches!(op, BinOp::Div | BinOp::Mod)
                && ops::operand_ty(*op, l.ty(), r.ty()) == Ok(Ty::Int)
                && r.to_int() == 0
            {
                return None;
            }
            match binary(*op, &l, &r) {
                Ok(v) => v,
                Err(m) => return Some(Err(m)),
            }
        }
        _ => return None,
    }))
}

/// `"a" - 1`: BriskVM refuses `-` on a String ("This operator cannot be applied to
/// strings"). A String *variable* or call result is taken as the number it holds (a
/// Realm Crafter script's `L = Parameter(1)` is an Int there), but a string literal beside
/// `-` is a mistake and stays an error.
pub(crate) fn string_literal_misuse(op: BinOp, l: &Expr, r: &Expr) -> Option<String> {
    let literal = |e: &Expr| matches!(e.kind, ExprKind::Str(_));
    (op == BinOp::Sub && (literal(l) || literal(r)))
        .then(|| "operator - cannot be used on strings".to_owned())
}

/// `l op r` on constant values.
pub(crate) fn binary(op: BinOp, l: &Value, r: &Value) -> Result<Value, String> {
    let t = ops::operand_ty(op, l.ty(), r.ty())?;
    if let Some(c) = ops::comparison(op) {
        let holds = match t {
            Ty::Str => c.holds(l.to_rstr().as_bytes().cmp(r.to_rstr().as_bytes())),
            Ty::Float => ops::cmp_f(l.to_float(), r.to_float(), c),
            Ty::Int => c.holds(l.to_int().cmp(&r.to_int())),
        };
        return Ok(Value::Int(i32::from(holds)));
    }
    Ok(match t {
        Ty::Str => Value::Str(ops::concat(&l.to_rstr(), &r.to_rstr()).map_err(|e| e.to_string())?),
        Ty::Float => {
            let (a, b) = (l.to_float(), r.to_float());
            Value::Float(match op {
                BinOp::Add => a + b,
                BinOp::Sub => a - b,
                BinOp::Mul => a * b,
                BinOp::Div => a / b,
                BinOp::Mod => ops::mod_f(a, b),
                _ => ops::pow_f(a, b),
            })
        }
        Ty::Int => {
            let (a, b) = (l.to_int(), r.to_int());
            let div0 = |_| "division by zero in a constant expression".to_owned();
            Value::Int(match op {
                BinOp::Add => a.wrapping_add(b),
                BinOp::Sub => a.wrapping_sub(b),
                BinOp::Mul => a.wrapping_mul(b),
                BinOp::Div => ops::div_i(a, b).map_err(div0)?,
                BinOp::Mod => ops::mod_i(a, b).map_err(div0)?,
                BinOp::And => a & b,
                BinOp::Or => a | b,
                BinOp::Xor => a ^ b,
                BinOp::Shl => ops::shl_i(a, b),
                _ => ops::shr_i(a, b),
            })
        }
    })
}
