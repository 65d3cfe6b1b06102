//! No pure or bank native panics, or allocates without bound, on any argument values:
//! huge counts, negative positions, NaN, wrong types, missing or extra arguments.

use proptest::prelude::*;
use script::natives::pure::{self, Banks, MAX_BANK_BYTES, MAX_STRING_BYTES};
use script::natives::{self, Kind, NativeSig};
use script::{RStr, RuntimeError, Value};

fn natives_of(kind: Kind) -> Vec<&'static NativeSig> {
    natives::all().iter().filter(|s| s.kind == kind).collect()
}

/// Ints that hit the edges: small positions, lengths and offsets, and the extremes.
fn int() -> impl Strategy<Value = i32> {
    prop_oneof![
        -4..70i32,
        any::<i32>(),
        Just(i32::MIN),
        Just(i32::MAX),
        Just(65_535),
        Just(2_000_000_000),
    ]
}

fn float() -> impl Strategy<Value = f32> {
    prop_oneof![
        -400.0..400.0f32,
        any::<f32>(),
        Just(f32::NAN),
        Just(f32::INFINITY),
        Just(f32::NEG_INFINITY),
        Just(0.0),
        Just(-0.0),
    ]
}

fn text() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..24),
        proptest::collection::vec(
            prop_oneof![Just(b','), Just(b'"'), Just(b':'), Just(b' '), Just(b'a')],
            0..24
        ),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        int().prop_map(Value::Int),
        float().prop_map(Value::Float),
        text().prop_map(|b| Value::Str(RStr::from_vec(b))),
    ]
}

fn args() -> impl Strategy<Value = Vec<Value>> {
    proptest::collection::vec(value(), 0..7)
}

/// The arguments converted to the parameter types, as the VM passes them.
fn converted(s: &NativeSig, raw: &[Value]) -> Vec<Value> {
    s.params
        .iter()
        .enumerate()
        .map(|(i, p)| match raw.get(i) {
            Some(v) => v.convert(p.ty),
            None => p.ty.zero(),
        })
        .collect()
}

#[track_caller]
fn check_result(s: &NativeSig, r: &Result<Value, RuntimeError>) {
    match r {
        Ok(v) => {
            if let Some(ty) = s.ret {
                assert_eq!(v.ty(), ty, "{} returned {v:?}", s.name);
            }
            assert!(v.to_rstr().len() <= MAX_STRING_BYTES, "{}", s.name);
        }
        Err(RuntimeError::Memory(_)) => {}
        Err(e) => panic!("{}: unexpected error {e}", s.name),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn pure_natives_never_panic(raw in args()) {
        for s in natives_of(Kind::Pure) {
            let r = pure::call(s.native, &converted(s, &raw));
            check_result(s, &r);
            // Unconverted, missing or extra arguments must not panic either.
            let _ = pure::call(s.native, &raw);
        }
    }

    #[test]
    fn bank_natives_never_panic(
        setup in proptest::collection::vec((0..4usize, 0..64i32), 0..4),
        calls in proptest::collection::vec((0..13usize, args()), 1..12),
    ) {
        let vm = natives_of(Kind::Vm);
        let mut banks = Banks::default();
        for (_, size) in setup {
            let _ = banks.call(natives::Native::CreateBank, &[Value::Int(size)]);
        }
        for (which, raw) in calls {
            let Some(s) = vm.get(which % vm.len()) else { continue };
            let r = banks.call(s.native, &converted(s, &raw));
            check_result(s, &r);
            let _ = banks.call(s.native, &raw);
            prop_assert!(banks.bytes() <= MAX_BANK_BYTES);
        }
    }

    #[test]
    fn helpers_never_panic(s in text(), d in text(), n in int()) {
        let field = pure::safe_split(&s, n);
        prop_assert!(field.len() <= s.len());
        prop_assert!(!field.as_bytes().contains(&b'"'));
        let opts = pure::dialog_options(&s, &d);
        prop_assert!(opts.len() <= 9);
        prop_assert!(opts.iter().all(|o| !o.is_empty()));
    }
}

#[test]
fn huge_counts_are_refused_not_allocated() {
    let x = Value::str("x");
    let cases = [
        (
            natives::Native::String,
            vec![x.clone(), Value::Int(2_000_000_000)],
        ),
        (natives::Native::LSet, vec![x.clone(), Value::Int(i32::MAX)]),
        (natives::Native::RSet, vec![x, Value::Int(17 << 20)]),
    ];
    for (n, args) in cases {
        assert!(
            matches!(pure::call(n, &args), Err(RuntimeError::Memory(_))),
            "{n:?}"
        );
    }
    let mut banks = Banks::default();
    assert!(matches!(
        banks.call(natives::Native::CreateBank, &[Value::Int(i32::MAX)]),
        Err(RuntimeError::Memory(_))
    ));
    assert_eq!(banks.bytes(), 0);
}

#[test]
fn every_pure_and_vm_native_is_implemented() {
    let mut banks = Banks::default();
    for s in natives::all() {
        let args: Vec<Value> = s.params.iter().map(|p| p.ty.zero()).collect();
        let r = match s.kind {
            Kind::Pure => pure::call(s.native, &args),
            Kind::Vm => banks.call(s.native, &args),
            _ => continue,
        };
        assert!(r.is_ok(), "{}: {r:?}", s.name);
    }
}
