//! Scenario tests of the language through the compiler and the VM: each script prints with
//! `Output(0, text)` into a test host, and the test compares what it printed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use script::bytecode::{HostGlobal, ScriptSet};
use script::compile::{SourceFile, compile};
use script::natives::Native;
use script::vm::{Exit, Flow, Host, NativeCx, Vm};
use script::{RuntimeError, Value};

#[derive(Default)]
struct TestHost {
    out: Vec<String>,
    millis: i32,
}

impl Host for TestHost {
    fn call(
        &mut self,
        n: Native,
        args: &[Value],
        _cx: &mut NativeCx<'_>,
    ) -> Result<Flow, RuntimeError> {
        match n {
            Native::Output => {
                self.out.push(args[1].to_rstr().to_latin1());
                Ok(Flow::Return(Value::Int(0)))
            }
            Native::DoEvents => Ok(Flow::Suspend),
            Native::MilliSecs => Ok(Flow::Return(Value::Int(self.millis))),
            Native::Actor => Ok(Flow::Return(Value::Int(7))),
            Native::Parameter => Ok(Flow::Return(Value::Str(script::value::RStr::new(b"3")))),
            _ => Err(RuntimeError::Internal(format!("test host has no {n:?}"))),
        }
    }
    fn host_global(&mut self, _: HostGlobal) -> i32 {
        42
    }
}

fn set_of(files: &[(&str, &str)]) -> ScriptSet {
    let files: Vec<SourceFile> = files
        .iter()
        .map(|(n, t)| SourceFile::new(*n, t.as_bytes().to_vec()))
        .collect();
    let c = compile(&files);
    assert!(!c.has_errors(), "{:#?}", c.diagnostics);
    c.set
}

/// Run `Main` of a one-file script to its end; the lines it output.
fn run(src: &str) -> Vec<String> {
    let set = set_of(&[("T", src)]);
    let entry = set.entry("T", "Main").expect("Main");
    let mut vm = Vm::new(&set, entry).unwrap();
    let mut host = TestHost::default();
    loop {
        let mut budget = 1_000_000;
        match vm.run(&set, &mut host, &mut budget) {
            Exit::Finished(_) => return host.out,
            Exit::Suspended => vm.resume(Value::Int(0)),
            Exit::Budget => {}
            other => panic!("{other:?} after {:?}", host.out),
        }
    }
}

fn errors(src: &str) -> Vec<String> {
    let c = compile(&[SourceFile::new("T", src.as_bytes().to_vec())]);
    c.errors().map(ToString::to_string).collect()
}

#[test]
fn arithmetic_and_conversions_follow_the_spec() {
    let out = run(r#"
Function Main()
    a = 7 / 2
    b# = 7 / 2
    c# = 7 / 2.0
    d% = 3.99
    e$ = "x" + 2.0
    f% = "12abc" + 0
    g = Not 5
    h = 2 And 1
    Output(0, a) : Output(0, b) : Output(0, c) : Output(0, d) : Output(0, e) : Output(0, f)
    Output(0, g) : Output(0, h)
    Output(0, -2^2) : Output(0, 2^3^2) : Output(0, -7 / 2) : Output(0, -7 Mod 2)
    Output(0, Int(-2.7)) : Output(0, "Level " + 5 + 1)
    If "9" > "10" Then Output(0, "string compare")
    Output(0, 1234567.0) : Output(0, 0.00001)
    Output(0, 1 Shl 4) : Output(0, -1 Shr 28)
End Function
"#);
    assert_eq!(
        out,
        [
            "3",
            "3",
            "3.5",
            "3",
            "x2",
            "12",
            "0",
            "0",
            "4",
            "64",
            "-3",
            "-1",
            "-2",
            "Level 51",
            "string compare",
            "1.23457e+006",
            "1e-005",
            "16",
            "15"
        ]
    );
}

#[test]
fn type_inference_takes_the_first_assignment() {
    let out = run(r#"
Function Main()
    Result = Mid("Hello", 2, 2)
    Output(0, Result)
    t = 1.5
    t = t + 1
    Output(0, t)
    QuestName$ = "Rat"
    QuestTemp = QuestName + ": " + 3
    Output(0, QuestTemp)
    Output(0, Undeclared$ + "|" + Counter)
End Function
"#);
    assert_eq!(out, ["el", "2.5", "Rat: 3", "|0"]);
}

#[test]
fn a_string_holding_a_number_computes_as_in_realm_crafter() {
    // A maintained RCCE2 game's loot and spell scripts: `L = Parameter(5)` then
    // `45 + (L * 5)`. In BriskVM `L` is an Int; here it is a String (inference) whose
    // number the arithmetic takes, or the tag the function gives it elsewhere.
    let out = run(r#"
Function Main()
    L = Parameter(5)
    Output(0, 45 + (L * 5))
    Lvl = Parameter(1)
    Output(0, Lvl% + 1)
    M = Parameter(1)
    Output(0, M - 1)
    Output(0, -M)
    Output(0, M / 2)
    Output(0, M Mod 2)
    Output(0, M ^ 2)
    Output(0, M * 1.5)
    Output(0, M + 1)
End Function
"#);
    assert_eq!(out, ["60", "4", "2", "-3", "1", "1", "9", "4.5", "31"]);
}

#[test]
fn loops_select_and_functions() {
    let out = run(r#"
Dim Score$(3, 1)
Global Calls = 0
Const Ten = 10

Function Fact%(n%)
    Calls = Calls + 1
    If n <= 1 Then Return 1
    Return(n * Fact(n - 1))
End Function

Function Main()
    For i = 1 To 3 : s = s + i : Next
    Output(0, s + " " + i)
    For j = 3 To 1 Step -1 : Output(0, "j" + j) : Next
    For f# = 0.5 To 1.5 Step 0.5 : Output(0, f) : Next
    n = 0
    While n < Ten
        n = n + 3
        If n = 6 Then Exit
    Wend
    Output(0, n)
    Repeat : n = n - 1 : Until(n < 4)
    Output(0, n)
    Select "FEB"
        Case "JAN" : Output(0, "jan")
        Case "MAR", "FEB" : Output(0, "feb or mar")
        Default : Output(0, "other")
    End Select
    Select 2.0
        Case 1 : Output(0, "one")
        Default
            Output(0, "default")
    End Select
    Output(0, Fact(5) + " in " + Calls)
    Score$(2, 1) = "bob"
    Output(0, "[" + Score$(2, 1) + Score$(0, 0) + "]")
    Dim Score$(5, 1)
    Score$(5, 1) = "x"
    Output(0, "[" + Score$(2, 1) + Score$(5, 1) + "]")
    If n > 100 Then Output(0, "no") Else Output(0, "single-line else") : Output(0, "both")
    If 0
        Output(0, "no")
    ElseIf 1 And 3
        Output(0, "elseif")
    Else
        Output(0, "no")
    EndIf
    Output(0, hSI)
End Function
"#);
    assert_eq!(
        out,
        [
            "6 4",
            "j3",
            "j2",
            "j1",
            "0.5",
            "1",
            "1.5",
            "6",
            "3",
            "feb or mar",
            "default",
            "120 in 5",
            "[bob]",
            "[x]",
            "single-line else",
            "both",
            "elseif",
            "42"
        ]
    );
}

#[test]
fn modules_resolve_with_using_and_defaults() {
    let set = set_of(&[
        (
            "Lib",
            "!Compile\nFunction Greet$(who$, punct$ = \"!\")\n  Return \"Hi \" + who + punct\nEnd Function\n",
        ),
        (
            "Main",
            "Using \"Lib.rcm\"\nFunction Main()\n Output(0, Greet(\"Bob\"))\n Output(0, Greet$(\"Al\", \"?\"))\nEnd Function\n",
        ),
    ]);
    let mut vm = Vm::new(&set, set.entry("main", "MAIN").unwrap()).unwrap();
    let mut host = TestHost::default();
    let mut budget = 1000;
    assert!(matches!(
        vm.run(&set, &mut host, &mut budget),
        Exit::Finished(_)
    ));
    assert_eq!(host.out, ["Hi Bob!", "Hi Al?"]);
}

/// Run `Main` of script `name` in `set` to its end (suspensions resume with 0).
fn run_in(set: &ScriptSet, name: &str) -> Vec<String> {
    let mut vm = Vm::new(set, set.entry(name, "Main").unwrap()).unwrap();
    let mut host = TestHost::default();
    loop {
        let mut budget = 1_000_000;
        match vm.run(set, &mut host, &mut budget) {
            Exit::Finished(_) => return host.out,
            Exit::Suspended => vm.resume(Value::Int(0)),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn a_world_s_own_rc_core_is_what_using_rc_core_means() {
    // RC Standard 1.26 ships its own RC_Core.rsl with its own WaitTime, and studios add
    // helpers there. Its functions take the place of the built-in ones; the built-in
    // ones it does not define (DoEvents here) stay.
    let core = r#"!COMPILE
Function WAITTIME(h, m)
  Output(0, "own WaitTime " + h + ":" + m)
End Function
Function Shout$(t$)
  Return Upper(t) + "!"
End Function
"#;
    let quest = r#"Using "RC_Core.rcm"
Function Main()
  WaitTime(6, 30)
  Output(0, Shout("rats"))
  DoEvents(10)
  Output(0, "done")
End Function
"#;
    let implicit = "Function Main()\n  Output(0, Shout$(\"hi\"))\nEnd Function\n";
    let own = r#"Function Shout$(t$)
  Return "mine " + t
End Function
Function Main()
  Output(0, Shout("x"))
End Function
"#;
    let set = set_of(&[
        ("RC_Core", core),
        ("Quest", quest),
        ("Implicit", implicit),
        ("Own", own),
    ]);
    assert_eq!(
        run_in(&set, "Quest"),
        ["own WaitTime 6:30", "RATS!", "done"]
    );
    assert_eq!(run_in(&set, "Implicit"), ["HI!"]);
    assert_eq!(run_in(&set, "Own"), ["mine x"]);
    // Without an RC_Core.rsl, a helper of another world's RC_Core is unknown.
    let c = compile(&[SourceFile::new("Implicit", implicit.as_bytes().to_vec())]);
    assert!(
        c.errors().any(|e| e.to_string().contains("Shout")),
        "{:?}",
        c.diagnostics
    );
    // A world's RC_Core that does not compile is reported in its own file.
    let c = compile(&[
        SourceFile::new("RC_Core", b"Function Broken(\nEnd Function\n".to_vec()),
        SourceFile::new("Quest", quest.as_bytes().to_vec()),
    ]);
    assert!(
        c.errors()
            .any(|e| e.to_string().starts_with("RC_Core.rsl:")),
        "{:?}",
        c.diagnostics
    );
}

#[test]
fn a_module_s_main_program_runs_when_an_instance_starts() {
    // What briskvm.dll prints for this script (tools/bvm-oracle): the top-level code and
    // a Global's non-constant initial value run before Main, the used module's first.
    let set = set_of(&[
        (
            "Lib",
            "Global L$ = Upper(\"lib\")\nOutput(0, \"lib main \" + L)\nFunction Hi$()\n  Return L\nEnd Function\n",
        ),
        (
            "Top",
            r#"Using "Lib.rcm"
Global G = Len("abcd")
Output(0, "top " + G)
G = G + 1
Function Main()
    Output(0, "main " + G + " " + Hi())
End Function
Output(0, "end of top")
"#,
        ),
    ]);
    assert_eq!(
        run_in(&set, "Top"),
        ["lib main LIB", "top 4", "end of top", "main 5 LIB"]
    );
    // Each instance runs it afresh.
    assert_eq!(run_in(&set, "Top").len(), 4);
}

#[test]
fn runtime_errors_name_file_and_line() {
    let set = set_of(&[(
        "Bad",
        "Function Main()\n  a = 0\n  b = 5 / a\nEnd Function\n",
    )]);
    let mut vm = Vm::new(&set, set.entry("Bad", "Main").unwrap()).unwrap();
    let mut budget = 1000;
    match vm.run(&set, &mut TestHost::default(), &mut budget) {
        Exit::Error { error, file, line } => {
            assert_eq!(error, RuntimeError::DivisionByZero);
            assert_eq!((file.as_str(), line), ("Bad.rsl", 3));
        }
        other => panic!("{other:?}"),
    }
    let set = set_of(&[(
        "Ix",
        "Dim A(2)\nFunction Main()\n  A(3) = 1\nEnd Function\n",
    )]);
    let mut vm = Vm::new(&set, set.entry("Ix", "Main").unwrap()).unwrap();
    let mut budget = 1000;
    let exit = vm.run(&set, &mut TestHost::default(), &mut budget);
    assert!(
        matches!(
            exit,
            Exit::Error {
                error: RuntimeError::IndexOutOfBounds { .. },
                line: 3,
                ..
            }
        ),
        "{exit:?}"
    );
}

#[test]
fn deep_recursion_is_a_stack_overflow_not_a_crash() {
    let set = set_of(&[(
        "R",
        "Function F(n)\n  Return F(n + 1)\nEnd Function\nFunction Main()\n  F(0)\nEnd Function\n",
    )]);
    let mut vm = Vm::new(&set, set.entry("R", "Main").unwrap()).unwrap();
    let mut budget = u64::MAX;
    let exit = vm.run(&set, &mut TestHost::default(), &mut budget);
    assert!(
        matches!(
            exit,
            Exit::Error {
                error: RuntimeError::StackOverflow(_),
                ..
            }
        ),
        "{exit:?}"
    );
}

#[test]
fn a_loop_that_never_yields_stops_at_its_budget_and_resumes_exactly() {
    let set = set_of(&[(
        "L",
        "Function Main()\n  While i < 100000 : i = i + 1 : Wend\n  Output(0, i)\nEnd Function\n",
    )]);
    let mut vm = Vm::new(&set, set.entry("L", "Main").unwrap()).unwrap();
    let mut host = TestHost::default();
    let mut slices = 0;
    loop {
        let mut budget = 1000;
        match vm.run(&set, &mut host, &mut budget) {
            Exit::Budget => slices += 1,
            Exit::Finished(_) => break,
            other => panic!("{other:?}"),
        }
        // Round-trip the running state through its portable form at every pause.
        let saved = vm.save(&set);
        let bytes = rmp_serde::to_vec_named(&saved).unwrap();
        let back: script::vm::saved::SavedVm = rmp_serde::from_slice(&bytes).unwrap();
        vm = Vm::restore(&back, &set).unwrap();
    }
    assert_eq!(host.out, ["100000"]);
    assert!(slices >= 99, "{slices}");
}

#[test]
fn a_suspended_script_resumes_with_the_native_result_after_a_save() {
    let src =
        "Function Main()\n  x = 5\n  DoEvents(100)\n  Output(0, \"after \" + x)\nEnd Function\n";
    let set = set_of(&[("S", src)]);
    let mut vm = Vm::new(&set, set.entry("S", "Main").unwrap()).unwrap();
    let mut budget = 100;
    assert_eq!(
        vm.run(&set, &mut TestHost::default(), &mut budget),
        Exit::Suspended
    );
    let saved = rmp_serde::to_vec_named(&vm.save(&set)).unwrap();
    // A node with a changed script refuses it; the same scripts resume it.
    let other = set_of(&[("S", &src.replace("after", "later"))]);
    let back: script::vm::saved::SavedVm = rmp_serde::from_slice(&saved).unwrap();
    assert!(Vm::restore(&back, &other).is_err());
    let mut vm = Vm::restore(&back, &set).unwrap();
    vm.resume(Value::Int(0));
    let mut host = TestHost::default();
    let mut budget = 100;
    assert!(matches!(
        vm.run(&set, &mut host, &mut budget),
        Exit::Finished(_)
    ));
    assert_eq!(host.out, ["after 5"]);
}

#[test]
fn compile_errors_are_one_line_each_with_position() {
    let e = errors(
        "Function Main()\n  x$ = 1\n  y = x% + 1\n  Foo(1)\n  DoEvents()\n  Output(0)\n  Exit\n  z = \"a\" - 1\nEnd Function\n",
    );
    let joined = e.join("\n");
    assert!(joined.contains("T.rsl:3:"), "{joined}");
    assert!(
        joined.contains("T.rsl:4:") && joined.contains("unknown function or command `Foo`"),
        "{joined}"
    );
    assert!(
        joined.contains("T.rsl:5:") && joined.contains("DoEvents takes 1 argument"),
        "{joined}"
    );
    assert!(joined.contains("T.rsl:6:"), "{joined}");
    assert!(
        joined.contains("T.rsl:7:") && joined.contains("Exit outside a loop"),
        "{joined}"
    );
    assert!(
        joined.contains("T.rsl:8:") && joined.contains("cannot be used on strings"),
        "{joined}"
    );
    let e = errors("Function Output(a)\nEnd Function\n");
    assert!(e.join("").contains("has the name of the command"), "{e:?}");
    let e = errors("Using \"Nope.rcm\"\nFunction Main()\nEnd Function\n");
    assert!(e.join("").contains("Nope"), "{e:?}");
}
