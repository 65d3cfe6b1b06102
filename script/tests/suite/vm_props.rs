//! Property tests of the compiler and the VM on generated programs: random scripts over a
//! small vocabulary (Int, Float and String variables, a global array, the operators,
//! every control structure, calls to script functions and to commands) compile without a
//! panic, run without a panic within a budget, and give the same output whether they run
//! straight through or are stopped every few instructions and carried through their saved
//! form (as a handoff carries them to another node).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use script::bytecode::{HostGlobal, ScriptSet};
use script::compile::{SourceFile, compile};
use script::natives::Native;
use script::vm::saved::SavedVm;
use script::vm::{Exit, Flow, Host, NativeCx, Vm};
use script::{RuntimeError, Value};

/// Collects `Output` lines; `DoEvents` suspends; `MilliSecs` counts calls.
#[derive(Default)]
struct Recorder {
    out: Vec<String>,
    calls: i32,
}

impl Host for Recorder {
    fn call(
        &mut self,
        n: Native,
        args: &[Value],
        _: &mut NativeCx<'_>,
    ) -> Result<Flow, RuntimeError> {
        self.calls += 1;
        Ok(match n {
            Native::Output => {
                self.out.push(
                    args.get(1)
                        .map(|v| v.to_rstr().to_latin1())
                        .unwrap_or_default(),
                );
                Flow::Return(Value::Int(0))
            }
            Native::DoEvents => Flow::Suspend,
            Native::MilliSecs => Flow::Return(Value::Int(self.calls)),
            _ => return Err(RuntimeError::Internal(format!("no {n:?} here"))),
        })
    }
    fn host_global(&mut self, _: HostGlobal) -> i32 {
        9
    }
}

fn int_expr() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        (-50i32..50).prop_map(|v| v.to_string()),
        Just("a".to_owned()),
        Just("i".to_owned()),
        Just("Len(s$)".to_owned()),
        Just("A(Abs(a) Mod 5)".to_owned()),
        Just("MilliSecs()".to_owned()),
        Just("F(a)".to_owned()),
    ];
    leaf.prop_recursive(3, 16, 2, |inner| {
        prop_oneof![
            (
                inner.clone(),
                prop::sample::select(vec![
                    "+", "-", "*", "/", "Mod", "And", "Or", "Xor", "Shl", "Shr", "=", "<>", "<",
                    ">="
                ]),
                inner.clone()
            )
                .prop_map(|(l, op, r)| format!("({l} {op} {r})")),
            inner.clone().prop_map(|e| format!("-{e}")),
            inner.clone().prop_map(|e| format!("Not {e}")),
            inner.prop_map(|e| format!("Int(f# + {e})")),
        ]
    })
}

fn stmt() -> impl Strategy<Value = String> {
    let simple = prop_oneof![
        int_expr().prop_map(|e| format!("a = {e}")),
        int_expr().prop_map(|e| format!("f# = f# / 2 + {e}")),
        int_expr().prop_map(|e| format!("s$ = Left(s$ + {e}, 12)")),
        int_expr().prop_map(|e| format!("A(Abs(i) Mod 5) = {e}")),
        int_expr().prop_map(|e| format!("Output(0, s$ + \"|\" + {e} + \"|\" + f#)")),
        Just("DoEvents(1)".to_owned()),
    ];
    simple.prop_recursive(3, 24, 4, |inner| {
        let block = prop::collection::vec(inner, 1..4).prop_map(|v| v.join("\n"));
        prop_oneof![
            (int_expr(), block.clone(), block.clone())
                .prop_map(|(c, t, e)| format!("If {c}\n{t}\nElse\n{e}\nEndIf")),
            (0i32..6, block.clone()).prop_map(|(n, b)| format!("For i = 0 To {n}\n{b}\nNext")),
            (int_expr(), block.clone())
                .prop_map(|(c, b)| format!("k = 0\nWhile k < 4 And {c}\nk = k + 1\n{b}\nWend")),
            block
                .clone()
                .prop_map(|b| format!("j = 0\nRepeat\nj = j + 1\n{b}\nUntil j >= 3")),
            (int_expr(), block.clone(), block).prop_map(|(e, x, y)| format!(
                "Select {e}\nCase 0, 1\n{x}\nDefault\n{y}\nEnd Select"
            )),
        ]
    })
}

fn program() -> impl Strategy<Value = String> {
    prop::collection::vec(stmt(), 1..8).prop_map(|body| {
        format!(
            "Dim A(4)\nGlobal g = 3\nFunction F%(x%)\n  g = g + 1\n  If x > 1000 Or x < -1000 Then Return 1\n  Return x * 2 + g\nEnd Function\nFunction Main()\n  s$ = \"go\"\n{}\n  Output(0, \"end \" + a + \" \" + g)\nEnd Function\n",
            body.join("\n")
        )
    })
}

/// The compiled program, or `Err` with its errors; a program that does not compile only
/// because of a division by zero in a constant expression is `Ok(None)` (a division of
/// an expression by a constant zero compiles, with a warning, and fails when it runs).
fn set_of(src: &str) -> Result<Option<ScriptSet>, String> {
    let c = compile(&[SourceFile::new("P", src.as_bytes().to_vec())]);
    if !c.has_errors() {
        return Ok(Some(c.set));
    }
    let errors: Vec<String> = c.errors().map(ToString::to_string).collect();
    if errors
        .iter()
        .all(|e| e.contains("division by zero in a constant expression"))
    {
        Ok(None)
    } else {
        Err(errors.join("\n"))
    }
}

/// Run to the end (or an error, or `max` budget units): the output, and how it ended.
fn run(set: &ScriptSet, slice: u64, carry: bool) -> (Vec<String>, String) {
    let entry = set.entry("P", "Main").unwrap();
    let mut vm = Vm::new(set, entry).unwrap();
    let mut host = Recorder::default();
    let mut spent = 0u64;
    loop {
        let mut budget = slice;
        let exit = vm.run(set, &mut host, &mut budget);
        spent += slice - budget;
        match exit {
            Exit::Finished(_) => return (host.out, "finished".into()),
            Exit::Error { error, line, .. } => {
                return (host.out, format!("error {error} at {line}"));
            }
            Exit::Suspended => vm.resume(Value::Int(0)),
            Exit::Budget | Exit::Parked => {}
        }
        if spent > 20_000 {
            return (host.out, "budget".into());
        }
        if carry {
            let bytes = rmp_serde::to_vec_named(&vm.save(set)).unwrap();
            let saved: SavedVm = rmp_serde::from_slice(&bytes).unwrap();
            vm = Vm::restore(&saved, set).unwrap();
        }
    }
}

/// Cases of the heavier property (`PROPTEST_CASES` overrides, as for the others).
fn heavy_cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(48)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: heavy_cases(), ..ProptestConfig::default() })]

    #[test]
    fn generated_programs_compile_and_run_the_same_when_carried(src in program()) {
        let set = set_of(&src);
        prop_assert!(set.is_ok(), "does not compile:\n{src}\n{:?}", set.err());
        let Ok(Some(set)) = set else { return Ok(()) };
        let straight = run(&set, 1_000_000, false);
        let carried = run(&set, 13, true);
        if straight.1 != "budget" && carried.1 != "budget" {
            prop_assert_eq!(straight, carried, "{}", src);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_compiler(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let c = compile(&[SourceFile::new("X", bytes)]);
        if let Some(entry) = c.set.entry("X", "Main") {
            let mut vm = Vm::new(&c.set, entry).unwrap();
            let mut budget = 10_000;
            let _ = vm.run(&c.set, &mut Recorder::default(), &mut budget);
        }
    }
}
