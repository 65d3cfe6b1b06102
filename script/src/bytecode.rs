//! The compiled form of a script set: typed register bytecode ([`Op`]), functions, modules
//! and the [`ScriptSet`] the VM runs.
//!
//! Every value's type is known at compile time (RSL is statically typed: tags and BriskVM's
//! inference), so each instruction names the type it works on (`AddI`, `AddF`, `Cat`) and
//! every implicit conversion is an explicit instruction. Registers are `u16` slots of the
//! current frame's window: parameters first, then locals, then temporaries.

use std::collections::HashMap;

use crate::natives::Native;
use crate::value::{RStr, Ty, Value};

/// A register of the current frame.
pub type Reg = u16;

/// A function id in its [`ScriptSet`].
pub type FuncId = u32;

/// A module id in its [`ScriptSet`].
pub type ModuleId = u16;

/// A comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    /// `=`.
    Eq,
    /// `<>`.
    Ne,
    /// `<`.
    Lt,
    /// `>`.
    Gt,
    /// `<=`.
    Le,
    /// `>=`.
    Ge,
}

impl Cmp {
    /// Apply to an ordering.
    pub fn holds(self, o: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::{Equal, Greater, Less};
        match self {
            Self::Eq => o == Equal,
            Self::Ne => o != Equal,
            Self::Lt => o == Less,
            Self::Gt => o == Greater,
            Self::Le => o != Greater,
            Self::Ge => o != Less,
        }
    }
}

/// The host globals of the command set (`rsl-language.md` §6): read-only here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostGlobal {
    /// `hSI`: the current script instance's id.
    Hsi,
    /// `Host`: an opaque non-zero value.
    Host,
    /// `ServerPort`: the server's port.
    ServerPort,
}

/// One instruction. Register operands are relative to the frame's window.
#[derive(Clone, Copy, Debug, PartialEq)]
#[allow(missing_docs)]
pub enum Op {
    /// `d = s` (same type).
    Mov {
        d: Reg,
        s: Reg,
    },
    /// `d = v`.
    KInt {
        d: Reg,
        v: i32,
    },
    /// `d = v`.
    KFloat {
        d: Reg,
        v: f32,
    },
    /// `d = strings[k]`.
    KStr {
        d: Reg,
        k: u32,
    },
    /// `d = globals[m][g]`.
    GetG {
        d: Reg,
        m: ModuleId,
        g: u16,
    },
    /// `globals[m][g] = s`.
    SetG {
        m: ModuleId,
        g: u16,
        s: Reg,
    },
    /// `d = host global`.
    HostG {
        d: Reg,
        which: HostGlobal,
    },
    /// `d = arrays[m][a](indices in i..)`.
    ALoad {
        d: Reg,
        m: ModuleId,
        a: u16,
        i: Reg,
    },
    /// `arrays[m][a](indices in i..) = s`.
    AStore {
        m: ModuleId,
        a: u16,
        i: Reg,
        s: Reg,
    },
    /// Re-dimension (and clear) `arrays[m][a]` to the bounds in `i..`.
    Redim {
        m: ModuleId,
        a: u16,
        i: Reg,
    },
    // Int arithmetic (wrapping).
    AddI {
        d: Reg,
        a: Reg,
        b: Reg,
    },
    AddIK {
        d: Reg,
        a: Reg,
        k: i32,
    },
    SubI {
        d: Reg,
        a: Reg,
        b: Reg,
    },
    MulIK {
        d: Reg,
        a: Reg,
        k: i32,
    },
    /// `a / k` with a constant, non-zero `k`.
    DivIK {
        d: Reg,
        a: Reg,
        k: i32,
    },
    /// `a Mod k` with a constant, non-zero `k`.
    ModIK {
        d: Reg,
        a: Reg,
        k: i32,
    },
    AndIK {
        d: Reg,
        a: Reg,
        k: i32,
    },
    OrIK {
        d: Reg,
        a: Reg,
        k: i32,
    },
    MulI {
        d: Reg,
        a: Reg,
        b: Reg,
    },
    DivI {
        d: Reg,
        a: Reg,
        b: Reg,
    },
    ModI {
        d: Reg,
        a: Reg,
        b: Reg,
    },
    AndI {
        d: Reg,
        a: Reg,
        b: Reg,
    },
    OrI {
        d: Reg,
        a: Reg,
        b: Reg,
    },
    XorI {
        d: Reg,
        a: Reg,
        b: Reg,
    },
    ShlI {
        d: Reg,
        a: Reg,
        b: Reg,
    },
    ShrI {
        d: Reg,
        a: Reg,
        b: Reg,
    },
    NegI {
        d: Reg,
        s: Reg,
    },
    /// Logical not of an Int: 1 if `s = 0`, else 0.
    NotI {
        d: Reg,
        s: Reg,
    },
    // Float arithmetic (f32).
    AddF {
        d: Reg,
        a: Reg,
        b: Reg,
    },
    SubF {
        d: Reg,
        a: Reg,
        b: Reg,
    },
    MulF {
        d: Reg,
        a: Reg,
        b: Reg,
    },
    DivF {
        d: Reg,
        a: Reg,
        b: Reg,
    },
    ModF {
        d: Reg,
        a: Reg,
        b: Reg,
    },
    PowF {
        d: Reg,
        a: Reg,
        b: Reg,
    },
    NegF {
        d: Reg,
        s: Reg,
    },
    /// String concatenation.
    Cat {
        d: Reg,
        a: Reg,
        b: Reg,
    },
    /// `d = (a c b)` on Ints, 1 or 0.
    CmpI {
        d: Reg,
        a: Reg,
        b: Reg,
        c: Cmp,
    },
    /// `d = (a c k)` on an Int and a constant.
    CmpIK {
        d: Reg,
        a: Reg,
        k: i32,
        c: Cmp,
    },
    /// On Floats.
    CmpF {
        d: Reg,
        a: Reg,
        b: Reg,
        c: Cmp,
    },
    /// On Strings (bytes, memcmp order).
    CmpS {
        d: Reg,
        a: Reg,
        b: Reg,
        c: Cmp,
    },
    // Conversions.
    I2F {
        d: Reg,
        s: Reg,
    },
    F2I {
        d: Reg,
        s: Reg,
    },
    I2S {
        d: Reg,
        s: Reg,
    },
    F2S {
        d: Reg,
        s: Reg,
    },
    S2I {
        d: Reg,
        s: Reg,
    },
    S2F {
        d: Reg,
        s: Reg,
    },
    /// Jump forward (or anywhere, no budget).
    Jmp {
        t: u32,
    },
    /// A loop's back edge: costs one unit of budget.
    Loop {
        t: u32,
    },
    /// Jump if the Int in `c` is 0.
    Jz {
        c: Reg,
        t: u32,
    },
    /// Jump if the Int in `c` is not 0.
    Jnz {
        c: Reg,
        t: u32,
    },
    /// Jump unless `a c k` (fused Int loop test).
    JnCmpIK {
        a: Reg,
        k: i32,
        c: Cmp,
        t: u32,
    },
    /// Jump unless `a c b` (fused Int test).
    JnCmpI {
        a: Reg,
        b: Reg,
        c: Cmp,
        t: u32,
    },
    /// The end of an Int `For` pass with a constant bound: `v += step`, then, if `v c k`
    /// still holds, a budgeted back edge to `t` (the body); otherwise fall through.
    ForIK {
        v: Reg,
        step: i32,
        k: i32,
        c: Cmp,
        t: u32,
    },
    /// Call a script function: arguments in `a..`, which becomes the callee's window;
    /// the result goes to `d`.
    Call {
        f: FuncId,
        a: Reg,
        d: Reg,
    },
    /// Call a native: arguments in `a..` (converted, defaults filled); result to `d`.
    Native {
        n: Native,
        a: Reg,
        d: Reg,
    },
    /// Return the value in `s` (already of the function's type).
    Ret {
        s: Reg,
    },
    /// `End`: abort the script.
    End,
}

/// A parameter of a script function.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamInfo {
    /// Name as written.
    pub name: String,
    /// Type.
    pub ty: Ty,
    /// Default value (already of `ty`).
    pub default: Option<Value>,
}

/// A compiled script function.
#[derive(Clone, Debug, PartialEq)]
pub struct Func {
    /// Its module.
    pub module: ModuleId,
    /// Name as written.
    pub name: String,
    /// Lower-case key.
    pub key: String,
    /// Parameters.
    pub params: Vec<ParamInfo>,
    /// Return type (untagged: Int).
    pub ret: Ty,
    /// Types of the parameters and locals (zeroed on entry), in register order.
    pub locals: Vec<Ty>,
    /// Registers the window needs (locals and temporaries).
    pub nregs: u16,
    /// The code.
    pub code: Vec<Op>,
    /// Source line of each instruction.
    pub lines: Vec<u32>,
}

/// A module-level `Global`.
#[derive(Clone, Debug, PartialEq)]
pub struct GlobalInfo {
    /// Name as written.
    pub name: String,
    /// Initial value (of its type).
    pub init: Value,
}

/// A module-level `Dim` array.
#[derive(Clone, Debug, PartialEq)]
pub struct ArrayInfo {
    /// Name as written.
    pub name: String,
    /// Element type.
    pub ty: Ty,
    /// Upper bounds (inclusive) at instance creation.
    pub dims: Vec<u32>,
}

/// A compiled module (one `.rsl` file).
#[derive(Clone, Debug, PartialEq)]
pub struct ModuleInfo {
    /// Script name (the file name without `.rsl`, case kept).
    pub name: String,
    /// Lower-case key.
    pub key: String,
    /// File name for messages (`Death.rsl`).
    pub file: String,
    /// Fingerprint of the source and the compiler: a saved instance resumes only against
    /// the same fingerprints.
    pub hash: u64,
    /// Whether it compiled (with everything it uses) without errors.
    pub ok: bool,
    /// Globals.
    pub globals: Vec<GlobalInfo>,
    /// Arrays.
    pub arrays: Vec<ArrayInfo>,
    /// Its own functions by key.
    pub funcs: HashMap<String, FuncId>,
    /// Itself and every module it uses, directly or not (their globals exist in an instance).
    pub closure: Vec<ModuleId>,
    /// Its main program (top-level statements, runtime `Global` initial values), run when
    /// an instance is created, if it has one.
    pub main: Option<FuncId>,
}

/// A compiled set of scripts (a world's `Scripts` folder): what the VM runs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScriptSet {
    /// Modules, sorted by key.
    pub modules: Vec<ModuleInfo>,
    /// Functions of every module.
    pub funcs: Vec<Func>,
    /// String constants.
    pub strings: Vec<RStr>,
    /// Module ids by key.
    pub by_key: HashMap<String, ModuleId>,
}

impl ScriptSet {
    /// A module by script name (case-insensitive).
    pub fn module(&self, name: &str) -> Option<(ModuleId, &ModuleInfo)> {
        let id = *self.by_key.get(&name.to_ascii_lowercase())?;
        self.modules.get(usize::from(id)).map(|m| (id, m))
    }

    /// Whether a script of that name exists (compiled or not).
    pub fn has_script(&self, name: &str) -> bool {
        self.module(name).is_some()
    }

    /// The entry function `name.func` (case-insensitive): a function of the script's own
    /// module. `None` if the script, or the function, does not exist, or the script did
    /// not compile.
    pub fn entry(&self, script: &str, func: &str) -> Option<FuncId> {
        let (_, m) = self.module(script)?;
        if !m.ok {
            return None;
        }
        m.funcs.get(&func.to_ascii_lowercase()).copied()
    }

    /// A function.
    pub fn func(&self, f: FuncId) -> Option<&Func> {
        self.funcs.get(f as usize)
    }
}
