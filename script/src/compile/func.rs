//! Code generation for one function body: names resolved (locals, module globals and
//! constants, host globals, implicit locals with BriskVM's inference), every conversion
//! explicit, calls checked (argument count, tags, defaults filled), loops compiled with a
//! budgeted back edge.
//!
//! Registers: parameters, then locals in order of declaration, then temporaries. Temporaries
//! are numbered from [`TEMP_BASE`] while compiling (locals may still be discovered) and
//! moved right above the locals at the end.

use std::collections::HashMap;

use super::{Callee, FuncDecl, ModuleDecls, SetCx, const_eval, tag_ty};
use crate::ast::{BinOp, Case, Expr, ExprKind, Ident, LValue, Span, Stmt, StmtKind, UnOp};
use crate::bytecode::{Cmp, Func, HostGlobal, ModuleId, Op, Reg};
use crate::error::Diagnostic;
use crate::ops;
use crate::value::{RStr, Ty, Value};

/// Temporaries are numbered from here until the function is finished.
const TEMP_BASE: u16 = 0x8000;

/// Interned string constants of a set.
#[derive(Default)]
pub(crate) struct StringPool {
    map: HashMap<Vec<u8>, u32>,
    list: Vec<RStr>,
}

impl StringPool {
    fn intern(&mut self, b: &[u8]) -> u32 {
        if let Some(&k) = self.map.get(b) {
            return k;
        }
        let k = u32::try_from(self.list.len()).unwrap_or(u32::MAX);
        self.list.push(RStr::new(b));
        self.map.insert(b.to_vec(), k);
        k
    }

    pub(crate) fn into_vec(self) -> Vec<RStr> {
        self.list
    }
}

/// A resolved variable.
#[derive(Clone, Debug)]
enum Var {
    Local(Reg, Ty),
    Global(u16, Ty),
    Const(Value),
    Host(HostGlobal),
}

type R<T> = Result<T, ()>;

struct Cx<'a> {
    set: &'a SetCx,
    m: ModuleId,
    decls: &'a ModuleDecls,
    file: &'a str,
    code: Vec<Op>,
    lines: Vec<u32>,
    line: u32,
    locals: HashMap<String, (Reg, Ty)>,
    /// The type tag each name carries somewhere in the function (the first one met).
    tagged: HashMap<String, Ty>,
    local_types: Vec<Ty>,
    next_temp: u16,
    max_temp: u16,
    loops: Vec<Vec<usize>>,
    ret: Ty,
    strings: &'a mut StringPool,
    diags: &'a mut Vec<Diagnostic>,
}

/// Compile one function (or the top-level code, never run) into a [`Func`].
pub(crate) fn compile_function(
    set: &SetCx,
    m: ModuleId,
    file: &str,
    decl: &FuncDecl,
    body: &[Stmt],
    strings: &mut StringPool,
    diags: &mut Vec<Diagnostic>,
) -> Func {
    let empty = ModuleDecls::default();
    let decls = set.modules.get(usize::from(m)).unwrap_or(&empty);
    let mut cx = Cx {
        set,
        m,
        decls,
        file,
        code: Vec::new(),
        lines: Vec::new(),
        line: decl.span.line,
        locals: HashMap::new(),
        tagged: tagged_names(body),
        local_types: Vec::new(),
        next_temp: 0,
        max_temp: 0,
        loops: Vec::new(),
        ret: decl.ret,
        strings,
        diags,
    };
    for p in &decl.params {
        let _ = cx.new_local(&p.name.to_ascii_lowercase(), p.ty, decl.span);
    }
    cx.block(body);
    // Falling off the end returns the type's zero.
    let t = cx.tmp();
    cx.load_const(t, &decl.ret.zero());
    cx.emit(Op::Ret { s: t });
    let nlocals = u16::try_from(cx.local_types.len()).unwrap_or(u16::MAX);
    let total = u32::from(nlocals) + u32::from(cx.max_temp);
    let nregs = match u16::try_from(total) {
        Ok(n) if n < TEMP_BASE => n,
        _ => {
            let _ = cx.err(
                decl.span,
                "function too large (too many variables or temporaries)",
            );
            0
        }
    };
    let remap = |r: Reg| {
        if r >= TEMP_BASE {
            r - TEMP_BASE + nlocals
        } else {
            r
        }
    };
    let code = cx.code.iter().map(|op| map_regs(*op, remap)).collect();
    Func {
        module: m,
        name: decl.name.clone(),
        key: decl.name.to_ascii_lowercase(),
        params: decl.params.clone(),
        ret: decl.ret,
        locals: cx.local_types,
        nregs,
        code,
        lines: cx.lines,
    }
}

/// Apply `f` to every register operand of an instruction.
fn map_regs(op: Op, f: impl Fn(Reg) -> Reg) -> Op {
    use Op::*;
    match op {
        Mov { d, s } => Mov { d: f(d), s: f(s) },
        KInt { d, v } => KInt { d: f(d), v },
        KFloat { d, v } => KFloat { d: f(d), v },
        KStr { d, k } => KStr { d: f(d), k },
        GetG { d, m, g } => GetG { d: f(d), m, g },
        SetG { m, g, s } => SetG { m, g, s: f(s) },
        HostG { d, which } => HostG { d: f(d), which },
        ALoad { d, m, a, i } => ALoad {
            d: f(d),
            m,
            a,
            i: f(i),
        },
        AStore { m, a, i, s } => AStore {
            m,
            a,
            i: f(i),
            s: f(s),
        },
        Redim { m, a, i } => Redim { m, a, i: f(i) },
        AddI { d, a, b } => AddI {
            d: f(d),
            a: f(a),
            b: f(b),
        },
        AddIK { d, a, k } => AddIK {
            d: f(d),
            a: f(a),
            k,
        },
        SubI { d, a, b } => SubI {
            d: f(d),
            a: f(a),
            b: f(b),
        },
        MulIK { d, a, k } => MulIK {
            d: f(d),
            a: f(a),
            k,
        },
        DivIK { d, a, k } => DivIK {
            d: f(d),
            a: f(a),
            k,
        },
        ModIK { d, a, k } => ModIK {
            d: f(d),
            a: f(a),
            k,
        },
        AndIK { d, a, k } => AndIK {
            d: f(d),
            a: f(a),
            k,
        },
        OrIK { d, a, k } => OrIK {
            d: f(d),
            a: f(a),
            k,
        },
        MulI { d, a, b } => MulI {
            d: f(d),
            a: f(a),
            b: f(b),
        },
        DivI { d, a, b } => DivI {
            d: f(d),
            a: f(a),
            b: f(b),
        },
        ModI { d, a, b } => ModI {
            d: f(d),
            a: f(a),
            b: f(b),
        },
        AndI { d, a, b } => AndI {
            d: f(d),
            a: f(a),
            b: f(b),
        },
        OrI { d, a, b } => OrI {
            d: f(d),
            a: f(a),
            b: f(b),
        },
        XorI { d, a, b } => XorI {
            d: f(d),
            a: f(a),
            b: f(b),
        },
        ShlI { d, a, b } => ShlI {
            d: f(d),
            a: f(a),
            b: f(b),
        },
        ShrI { d, a, b } => ShrI {
            d: f(d),
            a: f(a),
            b: f(b),
        },
        NegI { d, s } => NegI { d: f(d), s: f(s) },
        NotI { d, s } => NotI { d: f(d), s: f(s) },
        AddF { d, a, b } => AddF {
            d: f(d),
            a: f(a),
            b: f(b),
        },
        SubF { d, a, b } => SubF {
            d: f(d),
            a: f(a),
            b: f(b),
        },
        MulF { d, a, b } => MulF {
            d: f(d),
            a: f(a),
            b: f(b),
        },
        DivF { d, a, b } => DivF {
            d: f(d),
            a: f(a),
            b: f(b),
        },
        ModF { d, a, b } => ModF {
            d: f(d),
            a: f(a),
            b: f(b),
        },
        PowF { d, a, b } => PowF {
            d: f(d),
            a: f(a),
            b: f(b),
        },
        NegF { d, s } => NegF { d: f(d), s: f(s) },
        Cat { d, a, b } => Cat {
            d: f(d),
            a: f(a),
            b: f(b),
        },
        CmpI { d, a, b, c } => CmpI {
            d: f(d),
            a: f(a),
            b: f(b),
            c,
        },
        CmpIK { d, a, k, c } => CmpIK {
            d: f(d),
            a: f(a),
            k,
            c,
        },
        CmpF { d, a, b, c } => CmpF {
            d: f(d),
            a: f(a),
            b: f(b),
            c,
        },
        CmpS { d, a, b, c } => CmpS {
            d: f(d),
            a: f(a),
            b: f(b),
            c,
        },
        I2F { d, s } => I2F { d: f(d), s: f(s) },
        F2I { d, s } => F2I { d: f(d), s: f(s) },
        I2S { d, s } => I2S { d: f(d), s: f(s) },
        F2S { d, s } => F2S { d: f(d), s: f(s) },
        S2I { d, s } => S2I { d: f(d), s: f(s) },
        S2F { d, s } => S2F { d: f(d), s: f(s) },
        Jmp { t } => Jmp { t },
        Loop { t } => Loop { t },
        Jz { c, t } => Jz { c: f(c), t },
        Jnz { c, t } => Jnz { c: f(c), t },
        JnCmpIK { a, k, c, t } => JnCmpIK { a: f(a), k, c, t },
        JnCmpI { a, b, c, t } => JnCmpI {
            a: f(a),
            b: f(b),
            c,
            t,
        },
        ForIK { v, step, k, c, t } => ForIK {
            v: f(v),
            step,
            k,
            c,
            t,
        },
        Call { f: func, a, d } => Call {
            f: func,
            a: f(a),
            d: f(d),
        },
        Native { n, a, d } => Native {
            n,
            a: f(a),
            d: f(d),
        },
        Ret { s } => Ret { s: f(s) },
        End => End,
    }
}

fn negate(c: Cmp) -> Cmp {
    match c {
        Cmp::Eq => Cmp::Ne,
        Cmp::Ne => Cmp::Eq,
        Cmp::Lt => Cmp::Ge,
        Cmp::Ge => Cmp::Lt,
        Cmp::Gt => Cmp::Le,
        Cmp::Le => Cmp::Gt,
    }
}

fn host_global(key: &str) -> Option<HostGlobal> {
    match key {
        "hsi" => Some(HostGlobal::Hsi),
        "host" => Some(HostGlobal::Host),
        "serverport" => Some(HostGlobal::ServerPort),
        _ => None,
    }
}

impl Cx<'_> {
    // ----- plumbing -----------------------------------------------------------------

    fn err(&mut self, span: Span, msg: impl Into<String>) -> R<()> {
        self.diags.push(Diagnostic::error(self.file, span, msg));
        Err(())
    }

    fn emit(&mut self, op: Op) -> usize {
        self.code.push(op);
        self.lines.push(self.line);
        self.code.len() - 1
    }

    fn here(&self) -> u32 {
        u32::try_from(self.code.len()).unwrap_or(u32::MAX)
    }

    fn patch(&mut self, at: usize, target: u32) {
        if let Some(
            Op::Jmp { t }
            | Op::Loop { t }
            | Op::Jz { t, .. }
            | Op::Jnz { t, .. }
            | Op::JnCmpIK { t, .. }
            | Op::JnCmpI { t, .. }
            | Op::ForIK { t, .. },
        ) = self.code.get_mut(at)
        {
            *t = target;
        }
    }

    fn tmp(&mut self) -> Reg {
        self.tmp_block(1)
    }

    /// `n` consecutive temporaries (the first one; `n = 0` gives where they would start).
    fn tmp_block(&mut self, n: usize) -> Reg {
        let first = self.next_temp;
        let n = u16::try_from(n).unwrap_or(u16::MAX);
        self.next_temp = self.next_temp.saturating_add(n).min(TEMP_BASE - 1);
        self.max_temp = self.max_temp.max(self.next_temp);
        TEMP_BASE + first
    }

    fn new_local(&mut self, key: &str, ty: Ty, span: Span) -> R<Reg> {
        let Ok(r) = u16::try_from(self.local_types.len()) else {
            return self.err(span, "too many local variables").map(|()| 0);
        };
        if r >= TEMP_BASE - 1 {
            return self.err(span, "too many local variables").map(|()| 0);
        }
        self.local_types.push(ty);
        self.locals.insert(key.to_owned(), (r, ty));
        Ok(r)
    }

    fn load_const(&mut self, d: Reg, v: &Value) {
        match v {
            Value::Int(i) => self.emit(Op::KInt { d, v: *i }),
            Value::Float(f) => self.emit(Op::KFloat { d, v: *f }),
            Value::Str(s) => {
                let k = self.strings.intern(s.as_bytes());
                self.emit(Op::KStr { d, k })
            }
        };
    }

    /// Move or convert `s` (of `from`) into `d` (of `to`).
    fn conv(&mut self, s: Reg, from: Ty, d: Reg, to: Ty) {
        let op = match (from, to) {
            (a, b) if a == b => {
                if s != d {
                    self.emit(Op::Mov { d, s });
                }
                return;
            }
            (Ty::Int, Ty::Float) => Op::I2F { d, s },
            (Ty::Float, Ty::Int) => Op::F2I { d, s },
            (Ty::Int, Ty::Str) => Op::I2S { d, s },
            (Ty::Float, Ty::Str) => Op::F2S { d, s },
            (Ty::Str, Ty::Int) => Op::S2I { d, s },
            (Ty::Str, _) => Op::S2F { d, s },
            (Ty::Int | Ty::Float, _) => Op::Mov { d, s },
        };
        self.emit(op);
    }

    fn consts(&self) -> &HashMap<String, Value> {
        &self.decls.consts
    }

    fn check_tag(&mut self, id: &Ident, ty: Ty, what: &str) -> R<()> {
        match tag_ty(&id.tag) {
            Ok(Some(t)) if t != ty => self.err(
                id.span,
                format!(
                    "Variable type mismatch: {what} {} is {} ({}), not {} ({})",
                    id.name,
                    ty.name(),
                    ty.tag(),
                    t.name(),
                    t.tag()
                ),
            ),
            Ok(_) => Ok(()),
            Err(m) => self.err(id.span, m),
        }
    }

    // ----- names --------------------------------------------------------------------

    fn lookup_var(&self, id: &Ident) -> Option<Var> {
        let k = id.key();
        if let Some(&(r, t)) = self.locals.get(&k) {
            return Some(Var::Local(r, t));
        }
        if let Some(&(g, t)) = self.decls.globals.get(&k) {
            return Some(Var::Global(g, t));
        }
        if let Some(v) = self.decls.consts.get(&k) {
            return Some(Var::Const(v.clone()));
        }
        host_global(&k).map(Var::Host)
    }

    /// The static type of an expression, without emitting code or declaring anything.
    fn type_of(&self, e: &Expr) -> Ty {
        match &e.kind {
            ExprKind::Int(_) | ExprKind::Null => Ty::Int,
            ExprKind::Float(_) => Ty::Float,
            ExprKind::Str(_) => Ty::Str,
            ExprKind::Var(id) => match self.lookup_var(id) {
                Some(Var::Local(_, t) | Var::Global(_, t)) => t,
                Some(Var::Const(v)) => v.ty(),
                Some(Var::Host(_)) => Ty::Int,
                None => tag_ty(&id.tag).ok().flatten().unwrap_or(Ty::Int),
            },
            ExprKind::Call { name, .. } => {
                let k = name.key();
                if let Some(&(_, t, _)) = self.decls.arrays.get(&k) {
                    return t;
                }
                match self.set.resolve_call(self.m, &k) {
                    Ok(Some(Callee::Func(f))) => f.ret,
                    Ok(Some(Callee::Native(n))) => n.ret.unwrap_or(Ty::Int),
                    _ => Ty::Int,
                }
            }
            ExprKind::Unary { op: UnOp::Not, .. } => Ty::Int,
            ExprKind::Unary {
                op: UnOp::Neg,
                expr,
            } => match self.type_of(expr) {
                // `-A$` negates the number the string holds.
                Ty::Str => Ty::Int,
                t => t,
            },
            ExprKind::Unary { expr, .. } => self.type_of(expr),
            ExprKind::Binary { op, lhs, rhs } => {
                ops::result_ty(*op, self.type_of(lhs), self.type_of(rhs)).unwrap_or(Ty::Int)
            }
            ExprKind::Field { .. } | ExprKind::Unsupported { .. } => Ty::Int,
        }
    }

    /// Read a variable: its register (a local's own) and type. An unknown name becomes a
    /// local of its tag's type (Int without one), zero on entry.
    fn var_read(&mut self, id: &Ident) -> R<(Reg, Ty)> {
        match self.lookup_var(id) {
            Some(Var::Local(r, t)) => {
                self.check_tag(id, t, "variable")?;
                Ok((r, t))
            }
            Some(Var::Global(g, t)) => {
                self.check_tag(id, t, "Global")?;
                let d = self.tmp();
                self.emit(Op::GetG { d, m: self.m, g });
                Ok((d, t))
            }
            Some(Var::Const(v)) => {
                self.check_tag(id, v.ty(), "Const")?;
                let d = self.tmp();
                self.load_const(d, &v);
                Ok((d, v.ty()))
            }
            Some(Var::Host(which)) => {
                self.check_tag(id, Ty::Int, "host global")?;
                let d = self.tmp();
                self.emit(Op::HostG { d, which });
                Ok((d, Ty::Int))
            }
            None => {
                let ty = match tag_ty(&id.tag) {
                    Ok(t) => t.unwrap_or(Ty::Int),
                    Err(m) => return self.err(id.span, m).map(|()| (0, Ty::Int)),
                };
                let r = self.new_local(&id.key(), ty, id.span)?;
                Ok((r, ty))
            }
        }
    }

    // ----- expressions ----------------------------------------------------------------

    fn const_of(&mut self, e: &Expr) -> R<Option<Value>> {
        match const_eval(e, self.consts()) {
            None => Ok(None),
            Some(Ok(v)) => Ok(Some(v)),
            Some(Err(m)) => self.err(e.span, m).map(|()| None),
        }
    }

    /// The value of `e` in some register (a local's own when it is one), with its type.
    fn expr(&mut self, e: &Expr) -> R<(Reg, Ty)> {
        if let ExprKind::Var(id) = &e.kind {
            return self.var_read(id);
        }
        let ty = self.type_of(e);
        let d = self.tmp();
        self.expr_to(e, d, ty)?;
        Ok((d, ty))
    }

    /// The value of `e` converted to `ty`, in some register.
    fn operand(&mut self, e: &Expr, ty: Ty) -> R<Reg> {
        if let ExprKind::Var(id) = &e.kind
            && let Some(Var::Local(r, t)) = self.lookup_var(id)
            && t == ty
        {
            self.check_tag(id, t, "variable")?;
            return Ok(r);
        }
        let d = self.tmp();
        self.expr_to(e, d, ty)?;
        Ok(d)
    }

    /// Compile `e` so that its value, converted to `ty`, ends in `d`.
    fn expr_to(&mut self, e: &Expr, d: Reg, ty: Ty) -> R<()> {
        if let Some(v) = self.const_of(e)? {
            self.load_const(d, &v.convert(ty));
            return Ok(());
        }
        match &e.kind {
            ExprKind::Var(id) => {
                let (r, t) = self.var_read(id)?;
                self.conv(r, t, d, ty);
                Ok(())
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let nat = self.type_of(e);
                if nat == ty {
                    self.binary(*op, lhs, rhs, d, e.span)
                } else {
                    let t = self.tmp();
                    self.binary(*op, lhs, rhs, t, e.span)?;
                    self.conv(t, nat, d, ty);
                    Ok(())
                }
            }
            ExprKind::Unary { op, expr } => {
                let nat = self.type_of(e);
                let t = if nat == ty { d } else { self.tmp() };
                match op {
                    UnOp::Pos => {
                        let (r, rt) = self.expr(expr)?;
                        self.conv(r, rt, t, nat);
                    }
                    UnOp::Neg => match nat {
                        Ty::Int => {
                            let s = self.operand(expr, Ty::Int)?;
                            self.emit(Op::NegI { d: t, s });
                        }
                        Ty::Float => {
                            let s = self.operand(expr, Ty::Float)?;
                            self.emit(Op::NegF { d: t, s });
                        }
                        // `type_of` makes `-String` an Int.
                        Ty::Str => return self.err(e.span, "internal: unary - of a string"),
                    },
                    UnOp::Not => {
                        let s = self.operand(expr, Ty::Int)?;
                        self.emit(Op::NotI { d: t, s });
                    }
                }
                if t != d {
                    self.conv(t, nat, d, ty);
                }
                Ok(())
            }
            ExprKind::Call { name, args } => {
                let (r, t) = self.call(name, args, Some(d), true, e.span)?;
                self.conv(r, t, d, ty);
                Ok(())
            }
            ExprKind::Null => self.err(e.span, "Null (Blitz Types) is not supported"),
            ExprKind::Field { .. } => {
                self.err(e.span, "field access (Blitz Types) is not supported")
            }
            ExprKind::Unsupported { what } => {
                let m = format!("{what} is not supported");
                self.err(e.span, m)
            }
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Str(_) => {
                // Constants are handled above; an out-of-range literal was reported.
                Err(())
            }
        }
    }

    fn const_int(&mut self, e: &Expr) -> Option<i32> {
        match const_eval(e, self.consts()) {
            Some(Ok(Value::Int(i))) => Some(i),
            _ => None,
        }
    }

    fn binary(&mut self, op: BinOp, l: &Expr, r: &Expr, d: Reg, span: Span) -> R<()> {
        if let Some(m) = super::consts::string_literal_misuse(op, l, r) {
            return self.err(span, m);
        }
        let (lt, rt) = (self.type_of(l), self.type_of(r));
        let t = match ops::operand_ty(op, lt, rt) {
            Ok(t) => t,
            Err(m) => return self.err(span, m),
        };
        let cmp = ops::comparison(op);
        if t == Ty::Int
            && let Some(k) = self.const_int(r)
        {
            match (op, cmp) {
                (BinOp::Add, _) => {
                    let a = self.operand(l, Ty::Int)?;
                    self.emit(Op::AddIK { d, a, k });
                    return Ok(());
                }
                (BinOp::Sub, _) => {
                    let a = self.operand(l, Ty::Int)?;
                    self.emit(Op::AddIK {
                        d,
                        a,
                        k: k.wrapping_neg(),
                    });
                    return Ok(());
                }
                (_, Some(c)) => {
                    let a = self.operand(l, Ty::Int)?;
                    self.emit(Op::CmpIK { d, a, k, c });
                    return Ok(());
                }
                (BinOp::Mul | BinOp::And | BinOp::Or, _) => {
                    let a = self.operand(l, Ty::Int)?;
                    let op = match op {
                        BinOp::Mul => Op::MulIK { d, a, k },
                        BinOp::And => Op::AndIK { d, a, k },
                        _ => Op::OrIK { d, a, k },
                    };
                    self.emit(op);
                    return Ok(());
                }
                (BinOp::Div | BinOp::Mod, _) if k != 0 => {
                    let a = self.operand(l, Ty::Int)?;
                    let op = if op == BinOp::Div {
                        Op::DivIK { d, a, k }
                    } else {
                        Op::ModIK { d, a, k }
                    };
                    self.emit(op);
                    return Ok(());
                }
                (BinOp::Div | BinOp::Mod, _) => {
                    // BriskVM compiles it; the line ends the script when it runs.
                    self.diags.push(Diagnostic::warning(
                        self.file,
                        span,
                        "division by zero: this line ends the script with a runtime error",
                    ));
                }
                _ => {}
            }
        }
        let a = self.operand(l, t)?;
        let b = self.operand(r, t)?;
        let opc = match (t, cmp) {
            (Ty::Int, Some(c)) => Op::CmpI { d, a, b, c },
            (Ty::Float, Some(c)) => Op::CmpF { d, a, b, c },
            (Ty::Str, Some(c)) => Op::CmpS { d, a, b, c },
            (Ty::Str, None) => Op::Cat { d, a, b },
            (Ty::Int, None) => match op {
                BinOp::Add => Op::AddI { d, a, b },
                BinOp::Sub => Op::SubI { d, a, b },
                BinOp::Mul => Op::MulI { d, a, b },
                BinOp::Div => Op::DivI { d, a, b },
                BinOp::Mod => Op::ModI { d, a, b },
                BinOp::And => Op::AndI { d, a, b },
                BinOp::Or => Op::OrI { d, a, b },
                BinOp::Xor => Op::XorI { d, a, b },
                BinOp::Shl => Op::ShlI { d, a, b },
                _ => Op::ShrI { d, a, b },
            },
            (Ty::Float, None) => match op {
                BinOp::Add => Op::AddF { d, a, b },
                BinOp::Sub => Op::SubF { d, a, b },
                BinOp::Mul => Op::MulF { d, a, b },
                BinOp::Div => Op::DivF { d, a, b },
                BinOp::Mod => Op::ModF { d, a, b },
                _ => Op::PowF { d, a, b },
            },
        };
        self.emit(opc);
        Ok(())
    }

    /// A call (or an array element): the result's register and type. `dst`: where to put
    /// the result if the caller has a place for it; `want_value`: the value is used.
    fn call(
        &mut self,
        name: &Ident,
        args: &[Expr],
        dst: Option<Reg>,
        want_value: bool,
        span: Span,
    ) -> R<(Reg, Ty)> {
        let key = name.key();
        if let Some(&(slot, ty, ndims)) = self.decls.arrays.get(&key) {
            if !want_value {
                return self
                    .err(
                        span,
                        format!("{} is an array: an element is not a statement", name.name),
                    )
                    .map(|()| (0, ty));
            }
            self.check_tag(name, ty, "array")?;
            if args.len() != ndims {
                return self
                    .err(
                        span,
                        format!(
                            "array {} has {ndims} dimension(s), not {}",
                            name.name,
                            args.len()
                        ),
                    )
                    .map(|()| (0, ty));
            }
            let d = dst.unwrap_or_else(|| self.tmp());
            let i = self.tmp_block(args.len());
            for (n, a) in args.iter().enumerate() {
                self.expr_to(a, i + n as u16, Ty::Int)?;
            }
            self.emit(Op::ALoad {
                d,
                m: self.m,
                a: slot,
                i,
            });
            return Ok((d, ty));
        }
        let callee = match self.set.resolve_call(self.m, &key) {
            Ok(Some(c)) => c,
            Ok(None) => {
                let hint =
                    if self.locals.contains_key(&key) || self.decls.globals.contains_key(&key) {
                        format!("{} is a variable, not a function", name.name)
                    } else {
                        format!("unknown function or command `{}`", name.name)
                    };
                return self.err(span, hint).map(|()| (0, Ty::Int));
            }
            Err(m) => return self.err(span, m).map(|()| (0, Ty::Int)),
        };
        type Sig = (Vec<(Ty, Option<Value>)>, Option<Ty>, String);
        let (params, ret, shown): Sig = match &callee {
            Callee::Func(f) => (
                f.params.iter().map(|p| (p.ty, p.default.clone())).collect(),
                Some(f.ret),
                f.name.clone(),
            ),
            Callee::Native(n) => (
                n.params
                    .iter()
                    .map(|p| (p.ty, p.default.as_ref().map(|l| l.value(p.ty))))
                    .collect(),
                n.ret,
                n.name.to_owned(),
            ),
        };
        match (ret, tag_ty(&name.tag)) {
            (_, Err(m)) => return self.err(name.span, m).map(|()| (0, Ty::Int)),
            // A tag on a call (`CheckDate%(…)`, `G$()`) is allowed whatever the function
            // returns, as in BriskVM: the value keeps the function's type and is converted
            // where it is used.
            (None, Ok(Some(_))) => {
                return self
                    .err(name.span, format!("{shown} does not return a value"))
                    .map(|()| (0, Ty::Int));
            }
            _ => {}
        }
        if want_value && ret.is_none() {
            return self
                .err(
                    span,
                    format!("{shown} does not return a value and cannot be used in an expression"),
                )
                .map(|()| (0, Ty::Int));
        }
        let min = params
            .iter()
            .position(|p| p.1.is_some())
            .unwrap_or(params.len());
        if args.len() < min || args.len() > params.len() {
            let want = if min == params.len() {
                format!("{min}")
            } else {
                format!("{min} to {}", params.len())
            };
            return self
                .err(
                    span,
                    format!("{shown} takes {want} argument(s), {} given", args.len()),
                )
                .map(|()| (0, Ty::Int));
        }
        let rty = ret.unwrap_or(Ty::Int);
        let d = dst.unwrap_or_else(|| self.tmp());
        // The result register must be below the argument block (the callee's window).
        let d = if d >= TEMP_BASE && d >= TEMP_BASE + self.next_temp {
            self.tmp()
        } else {
            d
        };
        let a = self.tmp_block(params.len());
        for (n, (ty, default)) in params.iter().enumerate() {
            let r = a + n as u16;
            match args.get(n) {
                Some(arg) => self.expr_to(arg, r, *ty)?,
                None => {
                    let v = default.clone().unwrap_or_else(|| ty.zero());
                    self.load_const(r, &v);
                }
            }
        }
        match callee {
            Callee::Func(f) => self.emit(Op::Call { f: f.id, a, d }),
            Callee::Native(n) => self.emit(Op::Native { n: n.native, a, d }),
        };
        Ok((d, rty))
    }

    /// Emit a jump to be patched, taken when `e` is false (`when = false`) or true.
    fn cond_jump(&mut self, e: &Expr, when: bool) -> R<usize> {
        if let ExprKind::Binary { op, lhs, rhs } = &e.kind
            && let Some(c) = ops::comparison(*op)
            && ops::operand_ty(*op, self.type_of(lhs), self.type_of(rhs)) == Ok(Ty::Int)
        {
            let c = if when { negate(c) } else { c };
            if let Some(k) = self.const_int(rhs) {
                let a = self.operand(lhs, Ty::Int)?;
                return Ok(self.emit(Op::JnCmpIK { a, k, c, t: 0 }));
            }
            let a = self.operand(lhs, Ty::Int)?;
            let b = self.operand(rhs, Ty::Int)?;
            return Ok(self.emit(Op::JnCmpI { a, b, c, t: 0 }));
        }
        let c = self.operand(e, Ty::Int)?;
        Ok(if when {
            self.emit(Op::Jnz { c, t: 0 })
        } else {
            self.emit(Op::Jz { c, t: 0 })
        })
    }

    // ----- statements -----------------------------------------------------------------

    fn block(&mut self, stmts: &[Stmt]) {
        for s in stmts {
            self.line = s.span.line;
            let save = self.next_temp;
            let _ = self.stmt(s);
            self.next_temp = save;
        }
    }

    fn stmt(&mut self, s: &Stmt) -> R<()> {
        match &s.kind {
            StmtKind::Assign { target, value } => self.assign(target, value, s.span),
            StmtKind::Call { name, args } => self.call(name, args, None, false, s.span).map(|_| ()),
            StmtKind::If {
                cond,
                then,
                elifs,
                els,
            } => {
                let jf = self.cond_jump(cond, false)?;
                self.block(then);
                let mut ends = Vec::new();
                if !elifs.is_empty() || els.is_some() {
                    ends.push(self.emit(Op::Jmp { t: 0 }));
                }
                let h = self.here();
                self.patch(jf, h);
                for (c, body) in elifs {
                    self.line = c.span.line;
                    let Ok(jf) = self.cond_jump(c, false) else {
                        continue;
                    };
                    self.block(body);
                    ends.push(self.emit(Op::Jmp { t: 0 }));
                    let h = self.here();
                    self.patch(jf, h);
                }
                if let Some(e) = els {
                    self.block(e);
                }
                let h = self.here();
                for j in ends {
                    self.patch(j, h);
                }
                Ok(())
            }
            StmtKind::Select {
                subject,
                cases,
                default,
            } => self.select(subject, cases, default.as_deref()),
            StmtKind::While { cond, body } => {
                let top = self.here();
                let jf = self.cond_jump(cond, false)?;
                self.loops.push(Vec::new());
                self.block(body);
                self.emit(Op::Loop { t: top });
                self.close_loop(&[jf]);
                Ok(())
            }
            StmtKind::Repeat { body, until } => {
                let top = self.here();
                self.loops.push(Vec::new());
                self.block(body);
                match until {
                    None => {
                        self.emit(Op::Loop { t: top });
                        self.close_loop(&[]);
                    }
                    Some(c) => {
                        self.line = c.span.line;
                        let Ok(jt) = self.cond_jump(c, true) else {
                            self.close_loop(&[]);
                            return Err(());
                        };
                        self.emit(Op::Loop { t: top });
                        self.close_loop(&[jt]);
                    }
                }
                Ok(())
            }
            StmtKind::For {
                var,
                from,
                to,
                step,
                body,
            } => self.for_loop(var, from, to, step.as_ref(), body, s.span),
            StmtKind::ForEach { .. } => {
                self.err(s.span, "For … Each (Blitz Types) is not supported")
            }
            StmtKind::Exit => {
                if self.loops.is_empty() {
                    return self.err(s.span, "Exit outside a loop");
                }
                let j = self.emit(Op::Jmp { t: 0 });
                if let Some(l) = self.loops.last_mut() {
                    l.push(j);
                }
                Ok(())
            }
            StmtKind::Return(e) => {
                let ret = self.ret;
                let s = match e {
                    Some(e) => self.operand(e, ret)?,
                    None => {
                        let t = self.tmp();
                        self.load_const(t, &ret.zero());
                        t
                    }
                };
                self.emit(Op::Ret { s });
                Ok(())
            }
            StmtKind::End => {
                self.emit(Op::End);
                Ok(())
            }
            StmtKind::Local(vars) => {
                for v in vars {
                    let k = v.name.key();
                    if self.locals.contains_key(&k) {
                        let _ = self.err(
                            v.name.span,
                            format!("Local {} is already declared", v.name.name),
                        );
                        continue;
                    }
                    let tag = match tag_ty(&v.name.tag) {
                        Ok(t) => t,
                        Err(m) => {
                            let _ = self.err(v.name.span, m);
                            continue;
                        }
                    };
                    let ty = tag
                        .or_else(|| v.init.as_ref().map(|e| self.type_of(e)))
                        .unwrap_or(Ty::Int);
                    let Ok(r) = self.new_local(&k, ty, v.name.span) else {
                        continue;
                    };
                    match &v.init {
                        Some(e) => {
                            let _ = self.expr_to(e, r, ty);
                        }
                        None => self.load_const(r, &ty.zero()),
                    }
                }
                Ok(())
            }
            StmtKind::Global(_) => self.err(
                s.span,
                "Global may only be declared at the top level of a script",
            ),
            StmtKind::Const(_) => self.err(
                s.span,
                "Const may only be declared at the top level of a script",
            ),
            StmtKind::Dim(arrays) => {
                for a in arrays {
                    let k = a.name.key();
                    let Some(&(slot, ty, ndims)) = self.decls.arrays.get(&k) else {
                        let _ = self.err(
                            a.name.span,
                            format!(
                                "Dim may only appear in a function to resize an existing array ({} is not declared at the top level)",
                                a.name.name
                            ),
                        );
                        continue;
                    };
                    if self.check_tag(&a.name, ty, "array").is_err() {
                        continue;
                    }
                    if a.dims.len() != ndims {
                        let _ = self.err(
                            a.name.span,
                            format!(
                                "array {} has {ndims} dimension(s), not {}",
                                a.name.name,
                                a.dims.len()
                            ),
                        );
                        continue;
                    }
                    let i = self.tmp_block(ndims);
                    let mut ok = true;
                    for (n, e) in a.dims.iter().enumerate() {
                        ok &= self.expr_to(e, i + n as u16, Ty::Int).is_ok();
                    }
                    if ok {
                        self.emit(Op::Redim {
                            m: self.m,
                            a: slot,
                            i,
                        });
                    }
                }
                Ok(())
            }
            StmtKind::Unsupported { what } => {
                let m = format!("{what} is not supported");
                self.err(s.span, m)
            }
        }
    }

    fn close_loop(&mut self, extra: &[usize]) {
        let h = self.here();
        for &j in extra {
            self.patch(j, h);
        }
        if let Some(exits) = self.loops.pop() {
            for j in exits {
                self.patch(j, h);
            }
        }
    }

    fn assign(&mut self, target: &LValue, value: &Expr, span: Span) -> R<()> {
        match target {
            LValue::Var(id) => match self.lookup_var(id) {
                Some(Var::Local(r, ty)) => {
                    self.check_tag(id, ty, "variable")?;
                    self.expr_to(value, r, ty)
                }
                Some(Var::Global(g, ty)) => {
                    self.check_tag(id, ty, "Global")?;
                    let t = self.tmp();
                    self.expr_to(value, t, ty)?;
                    self.emit(Op::SetG { m: self.m, g, s: t });
                    Ok(())
                }
                Some(Var::Const(_)) => {
                    self.err(id.span, format!("cannot assign to Const {}", id.name))
                }
                Some(Var::Host(_)) => {
                    // Host globals are read-only here: the write is dropped.
                    self.expr(value).map(|_| ())
                }
                None => {
                    // BriskVM's type inference: an untagged variable first met in an
                    // assignment takes the type of the assigned expression, unless the
                    // function writes it with a tag elsewhere (`Lvl = Parameter(1)` …
                    // `Lvl% + 1`: it is that tag's type, as in Realm Crafter).
                    let ty = match tag_ty(&id.tag) {
                        Ok(Some(t)) => t,
                        Ok(None) => match self.tagged.get(&id.key()) {
                            Some(&t) => t,
                            None => self.type_of(value),
                        },
                        Err(m) => return self.err(id.span, m),
                    };
                    let r = self.new_local(&id.key(), ty, id.span)?;
                    self.expr_to(value, r, ty)
                }
            },
            LValue::Index { name, indices } => {
                let k = name.key();
                let Some(&(slot, ty, ndims)) = self.decls.arrays.get(&k) else {
                    return self.err(
                        name.span,
                        format!(
                            "{} is not an array (declare it with Dim at the top level)",
                            name.name
                        ),
                    );
                };
                self.check_tag(name, ty, "array")?;
                if indices.len() != ndims {
                    return self.err(
                        span,
                        format!(
                            "array {} has {ndims} dimension(s), not {}",
                            name.name,
                            indices.len()
                        ),
                    );
                }
                let i = self.tmp_block(ndims);
                for (n, e) in indices.iter().enumerate() {
                    self.expr_to(e, i + n as u16, Ty::Int)?;
                }
                let v = self.tmp();
                self.expr_to(value, v, ty)?;
                self.emit(Op::AStore {
                    m: self.m,
                    a: slot,
                    i,
                    s: v,
                });
                Ok(())
            }
            LValue::Field { .. } => self.err(span, "field access (Blitz Types) is not supported"),
        }
    }

    fn select(&mut self, subject: &Expr, cases: &[Case], default: Option<&[Stmt]>) -> R<()> {
        let ty = self.type_of(subject);
        let s = self.tmp();
        self.expr_to(subject, s, ty)?;
        let mut to_body: Vec<Vec<usize>> = Vec::new();
        for c in cases {
            self.line = c.span.line;
            let mut js = Vec::new();
            for v in &c.values {
                let save = self.next_temp;
                let t = self.tmp();
                if self.expr_to(v, t, ty).is_ok() {
                    let d = self.tmp();
                    let op = match ty {
                        Ty::Int => Op::CmpI {
                            d,
                            a: s,
                            b: t,
                            c: Cmp::Eq,
                        },
                        Ty::Float => Op::CmpF {
                            d,
                            a: s,
                            b: t,
                            c: Cmp::Eq,
                        },
                        Ty::Str => Op::CmpS {
                            d,
                            a: s,
                            b: t,
                            c: Cmp::Eq,
                        },
                    };
                    self.emit(op);
                    js.push(self.emit(Op::Jnz { c: d, t: 0 }));
                }
                self.next_temp = save;
            }
            to_body.push(js);
        }
        let to_default = self.emit(Op::Jmp { t: 0 });
        let mut ends = Vec::new();
        for (c, js) in cases.iter().zip(to_body) {
            let h = self.here();
            for j in js {
                self.patch(j, h);
            }
            self.block(&c.body);
            ends.push(self.emit(Op::Jmp { t: 0 }));
        }
        let h = self.here();
        self.patch(to_default, h);
        if let Some(d) = default {
            self.block(d);
        }
        let h = self.here();
        for j in ends {
            self.patch(j, h);
        }
        Ok(())
    }

    fn for_loop(
        &mut self,
        var: &Ident,
        from: &Expr,
        to: &Expr,
        step: Option<&Expr>,
        body: &[Stmt],
        span: Span,
    ) -> R<()> {
        // The loop variable: declared like an assignment's target.
        let target = match self.lookup_var(var) {
            Some(Var::Local(r, t)) => {
                self.check_tag(var, t, "variable")?;
                Var::Local(r, t)
            }
            Some(Var::Global(g, t)) => {
                self.check_tag(var, t, "Global")?;
                Var::Global(g, t)
            }
            Some(_) => {
                return self.err(
                    var.span,
                    format!("{} cannot be a For loop variable", var.name),
                );
            }
            None => {
                let ty = match tag_ty(&var.tag) {
                    Ok(Some(t)) => t,
                    Ok(None) => self.type_of(from),
                    Err(m) => return self.err(var.span, m),
                };
                let r = self.new_local(&var.key(), ty, var.span)?;
                Var::Local(r, ty)
            }
        };
        let ty = match &target {
            Var::Local(_, t) | Var::Global(_, t) => *t,
            _ => Ty::Int,
        };
        if ty == Ty::Str {
            return self.err(var.span, "a For loop variable must be an Int or a Float");
        }
        let step_v = match step {
            None => Value::Int(1),
            Some(e) => match self.const_of(e)? {
                Some(v) => v,
                None => return self.err(e.span, "Step must be a constant"),
            },
        };
        let step_v = step_v.convert(ty);
        let up = match &step_v {
            Value::Float(f) => *f >= 0.0,
            v => v.to_int() >= 0,
        };
        let c = if up { Cmp::Le } else { Cmp::Ge };
        // v = from
        match &target {
            Var::Local(r, _) => self.expr_to(from, *r, ty)?,
            Var::Global(g, _) => {
                let t = self.tmp();
                self.expr_to(from, t, ty)?;
                self.emit(Op::SetG {
                    m: self.m,
                    g: *g,
                    s: t,
                });
            }
            _ => {}
        }
        // An Int local with a constant bound: test once, then one fused step-test-back-edge
        // per pass (the bound cannot change, so re-evaluating it is moot).
        if ty == Ty::Int
            && let Var::Local(v, _) = target
            && let Some(k) = self.const_int(to)
        {
            let step = step_v.to_int();
            let first = self.emit(Op::JnCmpIK { a: v, k, c, t: 0 });
            let body_at = self.here();
            self.loops.push(Vec::new());
            self.block(body);
            self.line = span.line;
            self.emit(Op::ForIK {
                v,
                step,
                k,
                c,
                t: body_at,
            });
            self.close_loop(&[first]);
            return Ok(());
        }
        let top = self.here();
        // Test (the bound is evaluated again before every pass).
        let v = match &target {
            Var::Local(r, _) => *r,
            Var::Global(g, _) => {
                let t = self.tmp();
                self.emit(Op::GetG {
                    d: t,
                    m: self.m,
                    g: *g,
                });
                t
            }
            _ => 0,
        };
        let exit_jump = if ty == Ty::Int {
            match self.const_int(to) {
                Some(k) => self.emit(Op::JnCmpIK { a: v, k, c, t: 0 }),
                None => {
                    let b = self.operand(to, Ty::Int)?;
                    self.emit(Op::JnCmpI { a: v, b, c, t: 0 })
                }
            }
        } else {
            let b = self.operand(to, Ty::Float)?;
            let d = self.tmp();
            self.emit(Op::CmpF { d, a: v, b, c });
            self.emit(Op::Jz { c: d, t: 0 })
        };
        self.loops.push(Vec::new());
        self.block(body);
        self.line = span.line;
        // v = v + step
        let cur = match &target {
            Var::Local(r, _) => *r,
            Var::Global(g, _) => {
                let t = self.tmp();
                self.emit(Op::GetG {
                    d: t,
                    m: self.m,
                    g: *g,
                });
                t
            }
            _ => 0,
        };
        match step_v {
            Value::Float(f) => {
                let k = self.tmp();
                self.emit(Op::KFloat { d: k, v: f });
                self.emit(Op::AddF {
                    d: cur,
                    a: cur,
                    b: k,
                });
            }
            other => {
                self.emit(Op::AddIK {
                    d: cur,
                    a: cur,
                    k: other.to_int(),
                });
            }
        }
        if let Var::Global(g, _) = &target {
            self.emit(Op::SetG {
                m: self.m,
                g: *g,
                s: cur,
            });
        }
        self.emit(Op::Loop { t: top });
        self.close_loop(&[exit_jump]);
        Ok(())
    }
}

/// The names a function body writes with the Int tag `%` somewhere (variables, loop
/// variables and `Local`s).
fn tagged_names(body: &[Stmt]) -> HashMap<String, Ty> {
    let mut out = HashMap::new();
    // Only `%`: in BriskVM an untagged variable is an Int, so `Lvl = Parameter(1)` …
    // `Lvl% + 1` compiles there; a `$` or `#` after an untagged first use is its "Variable
    // type mismatch" there too, and stays one here.
    let mut note = |id: &Ident| {
        if let Ok(Some(Ty::Int)) = tag_ty(&id.tag) {
            out.entry(id.key()).or_insert(Ty::Int);
        }
    };
    for s in body {
        walk_stmt(s, &mut note);
    }
    out
}

fn walk_stmt(s: &Stmt, f: &mut impl FnMut(&Ident)) {
    match &s.kind {
        StmtKind::Assign { target, value } => {
            match target {
                LValue::Var(id) => f(id),
                LValue::Index { indices, .. } => indices.iter().for_each(|e| walk_expr(e, f)),
                LValue::Field { base, .. } => walk_expr(base, f),
            }
            walk_expr(value, f);
        }
        StmtKind::Call { args, .. } => args.iter().for_each(|e| walk_expr(e, f)),
        StmtKind::If {
            cond,
            then,
            elifs,
            els,
        } => {
            walk_expr(cond, f);
            then.iter().for_each(|s| walk_stmt(s, f));
            for (c, b) in elifs {
                walk_expr(c, f);
                b.iter().for_each(|s| walk_stmt(s, f));
            }
            els.iter().flatten().for_each(|s| walk_stmt(s, f));
        }
        StmtKind::Select {
            subject,
            cases,
            default,
        } => {
            walk_expr(subject, f);
            for c in cases {
                c.values.iter().for_each(|e| walk_expr(e, f));
                c.body.iter().for_each(|s| walk_stmt(s, f));
            }
            default.iter().flatten().for_each(|s| walk_stmt(s, f));
        }
        StmtKind::While { cond, body } => {
            walk_expr(cond, f);
            body.iter().for_each(|s| walk_stmt(s, f));
        }
        StmtKind::Repeat { body, until } => {
            body.iter().for_each(|s| walk_stmt(s, f));
            until.iter().for_each(|e| walk_expr(e, f));
        }
        StmtKind::For {
            var,
            from,
            to,
            step,
            body,
        } => {
            f(var);
            walk_expr(from, f);
            walk_expr(to, f);
            step.iter().for_each(|e| walk_expr(e, f));
            body.iter().for_each(|s| walk_stmt(s, f));
        }
        StmtKind::ForEach { body, .. } => body.iter().for_each(|s| walk_stmt(s, f)),
        StmtKind::Return(e) => e.iter().for_each(|e| walk_expr(e, f)),
        StmtKind::Local(vars) => {
            for v in vars {
                f(&v.name);
                v.init.iter().for_each(|e| walk_expr(e, f));
            }
        }
        StmtKind::Exit
        | StmtKind::End
        | StmtKind::Global(_)
        | StmtKind::Const(_)
        | StmtKind::Dim(_)
        | StmtKind::Unsupported { .. } => {}
    }
}

fn walk_expr(e: &Expr, f: &mut impl FnMut(&Ident)) {
    match &e.kind {
        ExprKind::Var(id) => f(id),
        ExprKind::Call { args, .. } => args.iter().for_each(|a| walk_expr(a, f)),
        ExprKind::Unary { expr, .. } => walk_expr(expr, f),
        ExprKind::Binary { lhs, rhs, .. } => {
            walk_expr(lhs, f);
            walk_expr(rhs, f);
        }
        ExprKind::Field { base, .. } => walk_expr(base, f),
        ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::Str(_)
        | ExprKind::Null
        | ExprKind::Unsupported { .. } => {}
    }
}
