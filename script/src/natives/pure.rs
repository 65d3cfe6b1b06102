//! The natives this crate runs itself: string and math functions of their arguments alone
//! ([`call`]), and the memory banks kept in the instance's VM state ([`Banks`]).

use serde::{Deserialize, Serialize};

use super::Native;
use crate::error::RuntimeError;
use crate::value::{RStr, Value};

/// Run a [`Kind::Pure`](super::Kind::Pure) native. `args` are already converted to the
/// parameter types, defaults filled in.
pub fn call(n: Native, args: &[Value]) -> Result<Value, RuntimeError> {
    let int = |i: usize| args.get(i).map_or(0, Value::to_int);
    let s = |i: usize| args.get(i).map(Value::to_rstr).unwrap_or_default();
    Ok(match n {
        Native::Len => Value::Int(i32::try_from(s(0).len()).unwrap_or(i32::MAX)),
        Native::Abs => Value::Int(int(0).wrapping_abs()),
        Native::Mid => Value::Str(mid(&s(0), int(1), int(2))),
        _ => {
            return Err(RuntimeError::Internal(format!(
                "{n:?} is not a pure native"
            )));
        }
    })
}

fn mid(s: &RStr, start: i32, count: i32) -> RStr {
    let b = s.as_bytes();
    let (mut start, mut count) = (i64::from(start), i64::from(count));
    if start < 1 {
        count -= 1 - start;
        start = 1;
    }
    let from = usize::try_from(start - 1).unwrap_or(usize::MAX);
    if from >= b.len() {
        return RStr::EMPTY;
    }
    let rest = b.get(from..).unwrap_or(&[]);
    let take = if count < 0 {
        rest.len()
    } else {
        usize::try_from(count).unwrap_or(usize::MAX).min(rest.len())
    };
    RStr::new(rest.get(..take).unwrap_or(&[]))
}

/// Blitz memory banks of one instance, addressed by handle (1-based; 0 is none).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Banks {
    banks: Vec<Option<serde_bytes::ByteBuf>>,
}

impl Banks {
    /// Run a [`Kind::Vm`](super::Kind::Vm) native.
    pub fn call(&mut self, n: Native, args: &[Value]) -> Result<Value, RuntimeError> {
        let _ = args;
        Err(RuntimeError::Internal(format!("{n:?} is not a bank native")))
    }

    /// Total bytes held (counted against the instance's memory cap).
    pub fn bytes(&self) -> usize {
        self.banks.iter().flatten().map(|b| b.len()).sum()
    }
}
