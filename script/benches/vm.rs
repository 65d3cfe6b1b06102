//! Criterion benchmarks of the script VM: simple statements per second on one core, the
//! cost of a native call (a pure one and a host one), and a function call. Figures and
//! commands are in `docs/benchmarks.md`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use script::bytecode::{HostGlobal, ScriptSet};
use script::compile::{SourceFile, compile};
use script::natives::Native;
use script::vm::{Exit, Flow, Host, NativeCx, Vm};
use script::{RuntimeError, Value};

/// A host whose natives answer at once.
struct NullHost;

impl Host for NullHost {
    fn call(&mut self, _: Native, _: &[Value], _: &mut NativeCx<'_>) -> Result<Flow, RuntimeError> {
        Ok(Flow::Return(Value::Int(1)))
    }
    fn host_global(&mut self, _: HostGlobal) -> i32 {
        1
    }
}

fn set_of(src: &str) -> ScriptSet {
    let c = compile(&[SourceFile::new("B", src.as_bytes().to_vec())]);
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
    c.set
}

fn run(set: &ScriptSet) {
    let entry = set.entry("B", "Main").unwrap_or(0);
    let Ok(mut vm) = Vm::new(set, entry) else {
        return;
    };
    let mut budget = u64::MAX;
    let exit = vm.run(set, &mut NullHost, &mut budget);
    assert!(matches!(exit, Exit::Finished(_)), "{exit:?}");
    black_box(exit);
}

/// Iterations of each loop.
const N: u64 = 100_000;

fn statements(c: &mut Criterion) {
    // Ten simple statements (assignments of Int arithmetic) per pass.
    let src = format!(
        "Function Main()\n  For i = 1 To {N}\n    a = a + 1\n    b = b + a\n    c = b - a\n    d = c * 3\n    e = d / 2\n    f = e + i\n    g = f - 7\n    h = g + a\n    a = a And 1023\n    b = b Mod 100000\nNext\nEnd Function\n"
    );
    let set = set_of(&src);
    let mut g = c.benchmark_group("vm");
    g.throughput(Throughput::Elements(N * 10));
    g.bench_function("simple statements", |b| b.iter(|| run(&set)));
    g.finish();
}

fn natives(c: &mut Criterion) {
    let pure = set_of(&format!(
        "Function Main()\n  For i = 1 To {N}\n    a = Abs(i)\n  Next\nEnd Function\n"
    ));
    let host = set_of(&format!(
        "Function Main()\n  For i = 1 To {N}\n    a = MilliSecs()\n  Next\nEnd Function\n"
    ));
    let string = set_of(&format!(
        "Function Main()\n  For i = 1 To {N}\n    a = Len(\"hello\")\n  Next\nEnd Function\n"
    ));
    let call = set_of(&format!(
        "Function F(x)\n  Return x + 1\nEnd Function\nFunction Main()\n  For i = 1 To {N}\n    a = F(i)\n  Next\nEnd Function\n"
    ));
    let mut g = c.benchmark_group("vm call");
    g.throughput(Throughput::Elements(N));
    g.bench_function("pure native Abs", |b| b.iter(|| run(&pure)));
    g.bench_function("pure native Len on a string", |b| b.iter(|| run(&string)));
    g.bench_function("host native MilliSecs", |b| b.iter(|| run(&host)));
    g.bench_function("script function", |b| b.iter(|| run(&call)));
    g.finish();
}

criterion_group!(benches, statements, natives);
criterion_main!(benches);
