//! The suspendable bytecode VM. One [`Vm`] is one running script instance: its frames,
//! registers, module globals, arrays and memory banks, all plain data (serde), so an
//! instance can stop at any native call or budget boundary, be saved, moved to another
//! node and resumed there ([`saved`]).
//!
//! # Running
//! [`Vm::run`] executes until the script finishes, a host native suspends it
//! ([`Flow::Suspend`], e.g. `WaitKill`), the instruction budget runs out (counted on loop
//! back edges and calls, so a loop that never yields is paused at a well-defined point), or
//! a runtime error ends it. The host resumes a suspended instance with [`Vm::resume`],
//! passing the native's result.
//!
//! # Limits
//! Call depth ([`MAX_DEPTH`]), string length ([`crate::ops::MAX_STRING`]) and array sizes
//! ([`MAX_ARRAY`], [`MAX_ARRAYS_TOTAL`]) are capped; past them the script ends with a
//! [`RuntimeError`], never the host.

pub mod saved;

use serde::{Deserialize, Serialize};

use crate::bytecode::{Cmp, Func, FuncId, HostGlobal, Op, ScriptSet};
use crate::error::RuntimeError;
use crate::natives::pure::{self, Banks};
use crate::natives::{self, Kind, Native};
use crate::ops;
use crate::value::{RStr, Ty, Value, atof, atoi, float_to_int, float_to_string};

/// Deepest call nesting.
pub const MAX_DEPTH: usize = 1024;
/// Most elements in one array.
pub const MAX_ARRAY: usize = 1 << 20;
/// Most array elements in one instance.
pub const MAX_ARRAYS_TOTAL: usize = 4 << 20;
/// Most registers in one instance (all frames).
pub const MAX_REGS: usize = 1 << 20;

/// The number of elements of an array with these (inclusive) bounds, if allowed.
pub fn array_len(dims: &[u32]) -> Result<usize, String> {
    let mut n: usize = 1;
    for &d in dims {
        n = n
            .checked_mul(d as usize + 1)
            .filter(|&n| n <= MAX_ARRAY)
            .ok_or_else(|| format!("an array may hold at most {MAX_ARRAY} elements"))?;
    }
    Ok(n)
}

/// What a host native did.
#[derive(Clone, Debug, PartialEq)]
pub enum Flow {
    /// It returned this value (of its declared type; converted if not).
    Return(Value),
    /// It returned this value, and the script asked to wait (`SetWaiting`): it parks at
    /// its next loop back edge, where [`Vm::run`] returns [`Exit::Parked`].
    ReturnThenPark(Value),
    /// The script waits: [`Vm::run`] returns [`Exit::Suspended`], and the host later calls
    /// [`Vm::resume`] with the native's result.
    Suspend,
}

/// What a native may see of the VM while it runs.
pub struct NativeCx<'a> {
    /// The instance's memory banks (`ReadBytes`, `WriteBytes`).
    pub banks: &'a mut Banks,
    /// The file (`Name.rsl`) and line of the call, for logs.
    pub file: &'a str,
    /// The line of the call.
    pub line: u32,
}

/// The game side of the VM: every native of kind [`Kind::Host`] (and the later-issue kinds),
/// and the command set's host globals.
pub trait Host {
    /// Run a native. `args` are converted to the parameter types, with defaults filled in.
    fn call(
        &mut self,
        native: Native,
        args: &[Value],
        cx: &mut NativeCx<'_>,
    ) -> Result<Flow, RuntimeError>;

    /// The value of a host global (`hSI`, `Host`, `ServerPort`).
    fn host_global(&mut self, which: HostGlobal) -> i32;
}

/// Why [`Vm::run`] returned.
#[derive(Clone, Debug, PartialEq)]
pub enum Exit {
    /// The entry function returned (the value is ignored by Realm Crafter).
    Finished(Value),
    /// A native suspended the script; [`Vm::resume`] continues it.
    Suspended,
    /// The script asked to wait with the low-level `SetWaiting`; [`Vm::resume_parked`]
    /// continues it.
    Parked,
    /// The budget ran out; run again later to continue.
    Budget,
    /// A runtime error ended the script.
    Error {
        /// What.
        error: RuntimeError,
        /// `Name.rsl`.
        file: String,
        /// Line.
        line: u32,
    },
}

/// One call frame.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Frame {
    pub func: FuncId,
    pub pc: u32,
    pub base: u32,
    /// Absolute register of the caller that receives the result.
    pub ret: u32,
}

/// One array's storage.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Array {
    pub ty: Ty,
    pub dims: Vec<u32>,
    pub data: Vec<Value>,
}

impl Array {
    fn new(ty: Ty, dims: &[u32]) -> Result<Self, RuntimeError> {
        let n = array_len(dims).map_err(RuntimeError::Memory)?;
        Ok(Self {
            ty,
            dims: dims.to_vec(),
            data: vec![ty.zero(); n],
        })
    }

    fn index(&self, idx: &[Value]) -> Result<usize, RuntimeError> {
        let mut at: usize = 0;
        for (k, (&d, v)) in self.dims.iter().zip(idx).enumerate() {
            let i = v.to_int();
            let iu = u32::try_from(i).ok().filter(|&i| i <= d).ok_or(
                RuntimeError::IndexOutOfBounds {
                    dim: k + 1,
                    index: i,
                    bound: d,
                },
            )?;
            at = at * (d as usize + 1) + iu as usize;
        }
        Ok(at)
    }
}

/// A pending native result: where it goes and its type.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Pending {
    pub reg: u32,
    pub ty: Option<Ty>,
}

/// One script instance's machine state.
#[derive(Clone, Debug, PartialEq)]
pub struct Vm {
    pub(crate) frames: Vec<Frame>,
    pub(crate) regs: Vec<Value>,
    /// Per module id of the set: its globals (empty outside the instance's closure).
    pub(crate) globals: Vec<Vec<Value>>,
    /// Per module id: its arrays.
    pub(crate) arrays: Vec<Vec<Array>>,
    pub(crate) pending: Option<Pending>,
    pub(crate) park: bool,
    pub(crate) banks: Banks,
    /// The module whose function was entered (its closure has globals).
    pub(crate) entry_module: u16,
    /// Whether the last stop was at a loop's back edge (the frame's pc is then the loop's
    /// head, not the instruction after the one that stopped).
    pub(crate) at_back_edge: bool,
}

macro_rules! bad {
    () => {
        RuntimeError::Internal("bytecode and registers disagree".into())
    };
}

#[inline(always)]
fn geti(regs: &[Value], i: usize) -> Option<i32> {
    match regs.get(i) {
        Some(Value::Int(v)) => Some(*v),
        _ => None,
    }
}

#[inline(always)]
fn getf(regs: &[Value], i: usize) -> Option<f32> {
    match regs.get(i) {
        Some(Value::Float(v)) => Some(*v),
        _ => None,
    }
}

#[inline(always)]
fn gets(regs: &[Value], i: usize) -> Option<&RStr> {
    match regs.get(i) {
        Some(Value::Str(v)) => Some(v),
        _ => None,
    }
}

#[inline(always)]
fn put(regs: &mut [Value], i: usize, v: Value) -> Option<()> {
    *regs.get_mut(i)? = v;
    Some(())
}

/// Write an Int into a register that usually holds one already (no drop to run then).
#[inline(always)]
fn put_int(regs: &mut [Value], i: usize, v: i32) -> Option<()> {
    match regs.get_mut(i)? {
        Value::Int(x) => *x = v,
        slot => *slot = Value::Int(v),
    }
    Some(())
}

impl Vm {
    /// A new instance that will run `entry` (with its parameters' defaults, or zeros: entry
    /// functions get no arguments), with fresh globals and arrays for every module of the
    /// entry module's closure.
    pub fn new(set: &ScriptSet, entry: FuncId) -> Result<Self, RuntimeError> {
        let func = set
            .func(entry)
            .ok_or_else(|| RuntimeError::Internal("no such function".into()))?;
        let mut vm = Self {
            frames: Vec::new(),
            regs: Vec::new(),
            globals: vec![Vec::new(); set.modules.len()],
            arrays: vec![Vec::new(); set.modules.len()],
            pending: None,
            park: false,
            banks: Banks::default(),
            entry_module: func.module,
            at_back_edge: false,
        };
        let closure_ids = set
            .modules
            .get(usize::from(func.module))
            .map(|m| m.closure.clone())
            .unwrap_or_default();
        let mut total = 0usize;
        for &m in &closure_ids {
            let Some(info) = set.modules.get(usize::from(m)) else {
                continue;
            };
            if let Some(g) = vm.globals.get_mut(usize::from(m)) {
                *g = info.globals.iter().map(|g| g.init.clone()).collect();
            }
            let mut arrs = Vec::with_capacity(info.arrays.len());
            for a in &info.arrays {
                let arr = Array::new(a.ty, &a.dims)?;
                total += arr.data.len();
                arrs.push(arr);
            }
            if total > MAX_ARRAYS_TOTAL {
                return Err(RuntimeError::Memory(format!(
                    "the script's arrays hold more than {MAX_ARRAYS_TOTAL} elements"
                )));
            }
            if let Some(a) = vm.arrays.get_mut(usize::from(m)) {
                *a = arrs;
            }
        }
        let entry_regs = usize::from(func.nregs).max(1);
        vm.regs = vec![Value::Int(0); entry_regs];
        for (i, ty) in func.locals.iter().enumerate() {
            let v = func
                .params
                .get(i)
                .and_then(|p| p.default.clone())
                .unwrap_or_else(|| ty.zero());
            if let Some(r) = vm.regs.get_mut(i) {
                *r = v;
            }
        }
        vm.frames.push(Frame {
            func: entry,
            pc: 0,
            base: 0,
            ret: u32::MAX,
        });
        // The main programs of the modules, as BriskVM maps them before the function
        // starts: the modules it uses first, its own last. Each runs in a window above the
        // entry's registers and returns into a scratch register; pushed last-first, so
        // the first to run is on top.
        let mut mains: Vec<FuncId> = Vec::new();
        let entry_main = set
            .modules
            .get(usize::from(func.module))
            .and_then(|m| m.main);
        for &m in &closure_ids {
            if m != func.module
                && let Some(f) = set.modules.get(usize::from(m)).and_then(|m| m.main)
            {
                mains.push(f);
            }
        }
        mains.extend(entry_main);
        if !mains.is_empty() {
            let scratch = vm.regs.len();
            vm.regs.push(Value::Int(0));
            for &f in mains.iter().rev() {
                let Some(main) = set.func(f) else { continue };
                let base = vm.regs.len();
                vm.regs.extend(
                    main.locals
                        .iter()
                        .map(|t| t.zero())
                        .chain(std::iter::repeat_n(
                            Value::Int(0),
                            usize::from(main.nregs)
                                .max(1)
                                .saturating_sub(main.locals.len()),
                        )),
                );
                vm.frames.push(Frame {
                    func: f,
                    pc: 0,
                    base: u32::try_from(base).unwrap_or(u32::MAX),
                    ret: u32::try_from(scratch).unwrap_or(u32::MAX),
                });
            }
        }
        Ok(vm)
    }

    /// Whether the instance waits for [`Vm::resume`].
    pub fn is_suspended(&self) -> bool {
        self.pending.is_some()
    }

    /// Whether the script has finished (no frame left).
    pub fn is_finished(&self) -> bool {
        self.frames.is_empty()
    }

    /// The function the instance stands in (the innermost call), for logs.
    pub fn function<'s>(&self, set: &'s ScriptSet) -> Option<&'s str> {
        let f = self.frames.last()?;
        set.func(f.func).map(|func| func.name.as_str())
    }

    /// The file and line where the instance stands (for logs).
    pub fn location(&self, set: &ScriptSet) -> (String, u32) {
        let Some(f) = self.frames.last() else {
            return (String::new(), 0);
        };
        let Some(func) = set.func(f.func) else {
            return (String::new(), 0);
        };
        let file = set
            .modules
            .get(usize::from(func.module))
            .map(|m| m.file.clone())
            .unwrap_or_default();
        let pc = if self.at_back_edge {
            f.pc as usize
        } else {
            (f.pc as usize).saturating_sub(1)
        };
        (file, func.lines.get(pc).copied().unwrap_or(0))
    }

    /// Give a suspended native its result; the next [`Vm::run`] continues after the call.
    pub fn resume(&mut self, value: Value) {
        if let Some(p) = self.pending.take() {
            let v = match p.ty {
                Some(t) => value.convert(t),
                None => value,
            };
            if let Some(slot) = self.regs.get_mut(p.reg as usize) {
                *slot = v;
            }
        }
    }

    /// Continue a script that parked with `SetWaiting`.
    pub fn resume_parked(&mut self) {
        self.park = false;
    }

    /// Bytes of memory the instance holds, roughly (registers, arrays, banks).
    pub fn memory_estimate(&self) -> usize {
        let val = |v: &Value| size_of::<Value>() + if let Value::Str(s) = v { s.len() } else { 0 };
        let regs: usize = self.regs.iter().map(val).sum();
        let globals: usize = self.globals.iter().flatten().map(val).sum();
        let arrays: usize = self
            .arrays
            .iter()
            .flatten()
            .map(|a| a.data.iter().map(val).sum::<usize>())
            .sum();
        regs + globals + arrays + self.banks.bytes()
    }

    /// Run until the script finishes, suspends, parks, runs out of `budget` (units: loop
    /// back edges and calls) or fails. `budget` is decreased by what was used.
    pub fn run(&mut self, set: &ScriptSet, host: &mut dyn Host, budget: &mut u64) -> Exit {
        if self.pending.is_some() {
            return Exit::Suspended;
        }
        match self.exec(set, host, budget) {
            Ok(exit) => exit,
            Err(error) => {
                let (file, line) = self.location(set);
                self.frames.clear();
                Exit::Error { error, file, line }
            }
        }
    }

    #[allow(clippy::too_many_lines)]
    fn exec(
        &mut self,
        set: &ScriptSet,
        host: &mut dyn Host,
        budget: &mut u64,
    ) -> Result<Exit, RuntimeError> {
        let mut left = *budget;
        self.at_back_edge = false;
        let r = self.exec_inner(set, host, &mut left);
        *budget = left;
        r
    }

    #[allow(clippy::too_many_lines)]
    fn exec_inner(
        &mut self,
        set: &ScriptSet,
        host: &mut dyn Host,
        budget: &mut u64,
    ) -> Result<Exit, RuntimeError> {
        'frames: loop {
            let Some(frame) = self.frames.last() else {
                return Ok(Exit::Finished(Value::Int(0)));
            };
            let func: &Func = set.func(frame.func).ok_or_else(|| bad!())?;
            let code = func.code.as_slice();
            let base = frame.base as usize;
            let mut pc = frame.pc as usize;
            let regs: &mut [Value] = self.regs.as_mut_slice();
            // Save pc into the frame on every way out of the inner loop.
            macro_rules! save {
                () => {
                    if let Some(f) = self.frames.last_mut() {
                        f.pc = u32::try_from(pc).unwrap_or(u32::MAX);
                    }
                };
            }
            // An Option from a register access: None means the bytecode is inconsistent.
            macro_rules! o {
                ($e:expr) => {
                    match $e {
                        Some(v) => v,
                        None => {
                            save!();
                            return Err(bad!());
                        }
                    }
                };
            }
            macro_rules! t {
                ($e:expr) => {
                    match $e {
                        Ok(v) => v,
                        Err(e) => {
                            save!();
                            return Err(e);
                        }
                    }
                };
            }
            macro_rules! r {
                ($x:expr) => {
                    base + usize::from($x)
                };
            }
            macro_rules! ii {
                ($x:expr) => {
                    o!(geti(regs, r!($x)))
                };
            }
            macro_rules! ff {
                ($x:expr) => {
                    o!(getf(regs, r!($x)))
                };
            }
            macro_rules! seti {
                ($d:expr, $v:expr) => {{
                    let v = $v;
                    o!(put_int(regs, r!($d), v))
                }};
            }
            macro_rules! setv {
                ($d:expr, $v:expr) => {{
                    let v = $v;
                    o!(put(regs, r!($d), v))
                }};
            }
            macro_rules! back_edge {
                ($t:expr) => {{
                    pc = $t as usize;
                    if self.park {
                        save!();
                        self.at_back_edge = true;
                        return Ok(Exit::Parked);
                    }
                    if *budget == 0 {
                        save!();
                        self.at_back_edge = true;
                        return Ok(Exit::Budget);
                    }
                    *budget -= 1;
                }};
            }
            loop {
                let Some(&op) = code.get(pc) else {
                    save!();
                    return Err(bad!());
                };
                pc += 1;
                match op {
                    Op::Mov { d, s } => {
                        let v = o!(regs.get(r!(s)).cloned());
                        setv!(d, v);
                    }
                    Op::KInt { d, v } => seti!(d, v),
                    Op::KFloat { d, v } => setv!(d, Value::Float(v)),
                    Op::KStr { d, k } => {
                        let s = o!(set.strings.get(k as usize).cloned());
                        setv!(d, Value::Str(s));
                    }
                    Op::GetG { d, m, g } => {
                        let v = o!(self
                            .globals
                            .get(usize::from(m))
                            .and_then(|gs| gs.get(usize::from(g)))
                            .cloned());
                        setv!(d, v);
                    }
                    Op::SetG { m, g, s } => {
                        let v = o!(regs.get(r!(s)).cloned());
                        let slot = o!(self
                            .globals
                            .get_mut(usize::from(m))
                            .and_then(|gs| gs.get_mut(usize::from(g))));
                        *slot = v;
                    }
                    Op::HostG { d, which } => {
                        let v = host.host_global(which);
                        seti!(d, v);
                    }
                    Op::ALoad { d, m, a, i } => {
                        let arr = o!(self
                            .arrays
                            .get(usize::from(m))
                            .and_then(|x| x.get(usize::from(a))));
                        let idx = o!(regs.get(r!(i)..r!(i) + arr.dims.len()));
                        let at = t!(arr.index(idx));
                        let v = o!(arr.data.get(at).cloned());
                        setv!(d, v);
                    }
                    Op::AStore { m, a, i, s } => {
                        let v = o!(regs.get(r!(s)).cloned());
                        let arr = o!(self
                            .arrays
                            .get_mut(usize::from(m))
                            .and_then(|x| x.get_mut(usize::from(a))));
                        let idx = o!(regs.get(r!(i)..r!(i) + arr.dims.len()));
                        let at = t!(arr.index(idx));
                        let slot = o!(arr.data.get_mut(at));
                        *slot = v;
                    }
                    Op::Redim { m, a, i } => {
                        let (ty, n) = {
                            let arr = o!(self
                                .arrays
                                .get(usize::from(m))
                                .and_then(|x| x.get(usize::from(a))));
                            (arr.ty, arr.dims.len())
                        };
                        let mut dims = Vec::with_capacity(n);
                        for k in 0..n {
                            let v = o!(geti(regs, r!(i) + k));
                            let d = t!(u32::try_from(v).map_err(|_| RuntimeError::Memory(
                                "an array bound cannot be negative".into()
                            )));
                            dims.push(d);
                        }
                        let new = t!(Array::new(ty, &dims));
                        let others: usize = self
                            .arrays
                            .iter()
                            .flatten()
                            .map(|x| x.data.len())
                            .sum::<usize>();
                        if others + new.data.len() > MAX_ARRAYS_TOTAL {
                            save!();
                            return Err(RuntimeError::Memory(format!(
                                "the script's arrays would hold more than {MAX_ARRAYS_TOTAL} elements"
                            )));
                        }
                        if let Some(slot) = self
                            .arrays
                            .get_mut(usize::from(m))
                            .and_then(|x| x.get_mut(usize::from(a)))
                        {
                            *slot = new;
                        }
                    }
                    Op::AddI { d, a, b } => seti!(d, ii!(a).wrapping_add(ii!(b))),
                    Op::AddIK { d, a, k } => seti!(d, ii!(a).wrapping_add(k)),
                    Op::SubI { d, a, b } => seti!(d, ii!(a).wrapping_sub(ii!(b))),
                    Op::MulI { d, a, b } => seti!(d, ii!(a).wrapping_mul(ii!(b))),
                    Op::MulIK { d, a, k } => seti!(d, ii!(a).wrapping_mul(k)),
                    Op::DivI { d, a, b } => seti!(d, t!(ops::div_i(ii!(a), ii!(b)))),
                    Op::DivIK { d, a, k } => seti!(d, t!(ops::div_i(ii!(a), k))),
                    Op::ModI { d, a, b } => seti!(d, t!(ops::mod_i(ii!(a), ii!(b)))),
                    Op::ModIK { d, a, k } => seti!(d, t!(ops::mod_i(ii!(a), k))),
                    Op::AndI { d, a, b } => seti!(d, ii!(a) & ii!(b)),
                    Op::AndIK { d, a, k } => seti!(d, ii!(a) & k),
                    Op::OrI { d, a, b } => seti!(d, ii!(a) | ii!(b)),
                    Op::OrIK { d, a, k } => seti!(d, ii!(a) | k),
                    Op::XorI { d, a, b } => seti!(d, ii!(a) ^ ii!(b)),
                    Op::ShlI { d, a, b } => seti!(d, ops::shl_i(ii!(a), ii!(b))),
                    Op::ShrI { d, a, b } => seti!(d, ops::shr_i(ii!(a), ii!(b))),
                    Op::NegI { d, s } => seti!(d, ii!(s).wrapping_neg()),
                    Op::NotI { d, s } => seti!(d, i32::from(ii!(s) == 0)),
                    Op::AddF { d, a, b } => setv!(d, Value::Float(ff!(a) + ff!(b))),
                    Op::SubF { d, a, b } => setv!(d, Value::Float(ff!(a) - ff!(b))),
                    Op::MulF { d, a, b } => setv!(d, Value::Float(ff!(a) * ff!(b))),
                    Op::DivF { d, a, b } => setv!(d, Value::Float(ff!(a) / ff!(b))),
                    Op::ModF { d, a, b } => setv!(d, Value::Float(ops::mod_f(ff!(a), ff!(b)))),
                    Op::PowF { d, a, b } => setv!(d, Value::Float(ops::pow_f(ff!(a), ff!(b)))),
                    Op::NegF { d, s } => setv!(d, Value::Float(-ff!(s))),
                    Op::Cat { d, a, b } => {
                        let v = t!(ops::concat(o!(gets(regs, r!(a))), o!(gets(regs, r!(b)))));
                        setv!(d, Value::Str(v));
                    }
                    Op::CmpI { d, a, b, c } => {
                        let (x, y) = (ii!(a), ii!(b));
                        seti!(d, i32::from(c.holds(x.cmp(&y))));
                    }
                    Op::CmpIK { d, a, k, c } => seti!(d, i32::from(c.holds(ii!(a).cmp(&k)))),
                    Op::CmpF { d, a, b, c } => seti!(d, i32::from(ops::cmp_f(ff!(a), ff!(b), c))),
                    Op::CmpS { d, a, b, c } => {
                        let h = c.holds(
                            o!(gets(regs, r!(a)))
                                .as_bytes()
                                .cmp(o!(gets(regs, r!(b))).as_bytes()),
                        );
                        seti!(d, i32::from(h));
                    }
                    Op::I2F { d, s } => setv!(d, Value::Float(ii!(s) as f32)),
                    Op::F2I { d, s } => seti!(d, float_to_int(ff!(s))),
                    Op::I2S { d, s } => {
                        let v = ii!(s);
                        setv!(d, Value::Str(RStr::from_vec(v.to_string().into_bytes())));
                    }
                    Op::F2S { d, s } => {
                        let v = ff!(s);
                        setv!(
                            d,
                            Value::Str(RStr::from_vec(float_to_string(v).into_bytes()))
                        );
                    }
                    Op::S2I { d, s } => seti!(d, atoi(o!(gets(regs, r!(s))).as_bytes())),
                    Op::S2F { d, s } => {
                        setv!(d, Value::Float(atof(o!(gets(regs, r!(s))).as_bytes())))
                    }
                    Op::Jmp { t } => pc = t as usize,
                    Op::Loop { t } => back_edge!(t),
                    Op::Jz { c, t } => {
                        if ii!(c) == 0 {
                            pc = t as usize;
                        }
                    }
                    Op::Jnz { c, t } => {
                        if ii!(c) != 0 {
                            pc = t as usize;
                        }
                    }
                    Op::JnCmpIK { a, k, c, t } => {
                        if !c.holds(ii!(a).cmp(&k)) {
                            pc = t as usize;
                        }
                    }
                    Op::JnCmpI { a, b, c, t } => {
                        let (x, y) = (ii!(a), ii!(b));
                        if !c.holds(x.cmp(&y)) {
                            pc = t as usize;
                        }
                    }
                    Op::ForIK { v, step, k, c, t } => {
                        let x = ii!(v).wrapping_add(step);
                        seti!(v, x);
                        if c.holds(x.cmp(&k)) {
                            back_edge!(t);
                        }
                    }
                    Op::Call { f, a, d } => {
                        if *budget == 0 {
                            pc -= 1;
                            save!();
                            return Ok(Exit::Budget);
                        }
                        *budget -= 1;
                        if self.frames.len() >= MAX_DEPTH {
                            save!();
                            return Err(RuntimeError::StackOverflow(MAX_DEPTH));
                        }
                        let callee = o!(set.func(f));
                        let new_base = r!(a);
                        let need = new_base + usize::from(callee.nregs).max(1);
                        if need > MAX_REGS {
                            save!();
                            return Err(RuntimeError::StackOverflow(self.frames.len()));
                        }
                        save!();
                        let ret = u32::try_from(r!(d)).unwrap_or(u32::MAX);
                        if self.regs.len() < need {
                            self.regs.resize(need, Value::Int(0));
                        }
                        // Parameters arrived in the window; the other locals start at zero.
                        for (i, ty) in callee.locals.iter().enumerate().skip(callee.params.len()) {
                            if let Some(slot) = self.regs.get_mut(new_base + i) {
                                *slot = ty.zero();
                            }
                        }
                        self.frames.push(Frame {
                            func: f,
                            pc: 0,
                            base: u32::try_from(new_base).unwrap_or(u32::MAX),
                            ret,
                        });
                        continue 'frames;
                    }
                    Op::Native { n, a, d } => {
                        let sig = o!(natives::sig(n));
                        let argc = sig.params.len();
                        let args_at = r!(a);
                        let dst = r!(d);
                        let args = o!(regs.get(args_at..args_at + argc));
                        let result = match sig.kind {
                            Kind::Pure => Flow::Return(t!(pure::call(n, args))),
                            Kind::Vm => Flow::Return(t!(self.banks.call(n, args))),
                            Kind::Refused => {
                                save!();
                                return Err(RuntimeError::Refused {
                                    native: sig.name,
                                    why: "scripts may not reach outside their sandbox (native code, raw networking)",
                                });
                            }
                            Kind::Host | Kind::Items | Kind::Spells | Kind::Dialogs => {
                                save!();
                                let line = func.lines.get(pc - 1).copied().unwrap_or(0);
                                let file = set
                                    .modules
                                    .get(usize::from(func.module))
                                    .map_or("", |m| m.file.as_str());
                                let mut cx = NativeCx {
                                    banks: &mut self.banks,
                                    file,
                                    line,
                                };
                                t!(host.call(n, args, &mut cx))
                            }
                        };
                        match result {
                            Flow::Return(v) => {
                                let v = match sig.ret {
                                    Some(t) if v.ty() != t => v.convert(t),
                                    Some(_) => v,
                                    None => Value::Int(0),
                                };
                                setv!(d, v);
                            }
                            Flow::ReturnThenPark(v) => {
                                let v = match sig.ret {
                                    Some(t) => v.convert(t),
                                    None => Value::Int(0),
                                };
                                setv!(d, v);
                                self.park = true;
                            }
                            Flow::Suspend => {
                                save!();
                                self.pending = Some(Pending {
                                    reg: u32::try_from(dst).unwrap_or(u32::MAX),
                                    ty: Some(sig.ret.unwrap_or(Ty::Int)),
                                });
                                return Ok(Exit::Suspended);
                            }
                        }
                    }
                    Op::Ret { s } => {
                        let v = o!(regs.get(r!(s)).cloned());
                        let Some(done) = self.frames.pop() else {
                            return Err(bad!());
                        };
                        if self.frames.is_empty() {
                            self.regs.clear();
                            return Ok(Exit::Finished(v));
                        }
                        o!(put(regs, done.ret as usize, v));
                        continue 'frames;
                    }
                    Op::End => {
                        save!();
                        return Err(RuntimeError::End);
                    }
                }
            }
        }
    }
}

/// Compare for `Select`/tests from outside the crate.
pub fn compare(c: Cmp, a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Str(_), _) | (_, Value::Str(_)) => {
            c.holds(a.to_rstr().as_bytes().cmp(b.to_rstr().as_bytes()))
        }
        (Value::Float(_), _) | (_, Value::Float(_)) => ops::cmp_f(a.to_float(), b.to_float(), c),
        _ => c.holds(a.to_int().cmp(&b.to_int())),
    }
}
