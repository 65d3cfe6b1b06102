//! A printer from the syntax tree back to RSL source, for round-trip tests and fuzzing:
//! the output of [`module`] parses back to the same tree (spans aside).
//!
//! The output is canonical rather than faithful: every `If` is printed in block form,
//! every call with parentheses, operators with as few parentheses as precedence allows,
//! and blocks indented with TABs (which the loader deletes). An `Unsupported` node keeps
//! only a description, so it is printed as some construct the parser describes the same
//! way (`New T`, `Delete x`, ...); a description the parser never gives comes out as a
//! comment (statements) or `0` (expressions).

use crate::ast::{
    ArrayDecl, BinOp, Expr, ExprKind, Function, Ident, Item, LValue, Module, Stmt, StmtKind, Tag,
    UnOp, VarDecl,
};

/// Print a module as source text (bytes: string literals are Windows-1252).
pub fn module(m: &Module) -> Vec<u8> {
    let mut p = Printer::default();
    if m.directives.compile {
        p.line(b"!COMPILE");
    }
    if m.directives.alt_syntax {
        p.line(b"!ALTSYNTAX");
    }
    for item in &m.items {
        p.item(item);
    }
    p.out
}

/// Print one expression as source text.
pub fn expr(e: &Expr) -> Vec<u8> {
    let mut out = Vec::new();
    write_expr(&mut out, e, 0);
    out
}

/// Output being built, with the current indentation.
#[derive(Default)]
struct Printer {
    out: Vec<u8>,
    indent: usize,
}

impl Printer {
    fn line(&mut self, text: &[u8]) {
        self.out.extend(std::iter::repeat_n(b'\t', self.indent));
        self.out.extend_from_slice(text);
        self.out.push(b'\n');
    }

    fn item(&mut self, item: &Item) {
        match item {
            Item::Using { path, .. } => self.line(&keyword_string(b"Using ", path)),
            Item::Include { path, .. } => self.line(&keyword_string(b"Include ", path)),
            Item::Function(f) => self.function(f),
            Item::Global(v) => self.line(&decls(b"Global ", v)),
            Item::Const(v) => self.line(&decls(b"Const ", v)),
            Item::Dim(v) => self.line(&dims(v)),
            Item::Type { name, .. } => {
                let mut head = b"Type ".to_vec();
                write_ident(&mut head, name);
                self.line(&head);
                self.line(b"End Type");
            }
            Item::Stmt(s) => self.stmt(s),
        }
    }

    fn function(&mut self, f: &Function) {
        let mut head = b"Function ".to_vec();
        write_ident(&mut head, &f.name);
        head.push(b'(');
        // The parser records a `Ref` parameter as an Unsupported first statement.
        let by_ref = !f.params.is_empty()
            && f.body.first().is_some_and(
                |s| matches!(&s.kind, StmtKind::Unsupported { what } if what == REF_PARAMS),
            );
        let body = if by_ref {
            f.body.get(1..).unwrap_or(&[])
        } else {
            &f.body[..]
        };
        for (i, param) in f.params.iter().enumerate() {
            if i > 0 {
                head.extend_from_slice(b", ");
            } else if by_ref {
                head.extend_from_slice(b"Ref ");
            }
            write_ident(&mut head, &param.name);
            if let Some(d) = &param.default {
                head.extend_from_slice(b" = ");
                write_expr(&mut head, d, 0);
            }
        }
        head.push(b')');
        self.line(&head);
        self.block(body);
        self.line(b"End Function");
    }

    fn block(&mut self, stmts: &[Stmt]) {
        self.indent += 1;
        for s in stmts {
            self.stmt(s);
        }
        self.indent -= 1;
    }

    fn stmt(&mut self, s: &Stmt) {
        match &s.kind {
            StmtKind::Assign { target, value } => {
                let mut l = Vec::new();
                match target {
                    LValue::Var(id) => write_ident(&mut l, id),
                    LValue::Index { name, indices } => {
                        write_ident(&mut l, name);
                        write_args(&mut l, indices);
                    }
                    LValue::Field { base, field } => {
                        write_expr(&mut l, base, PRIMARY);
                        l.push(b'\\');
                        write_ident(&mut l, field);
                    }
                }
                l.extend_from_slice(b" = ");
                write_expr(&mut l, value, 0);
                self.line(&l);
            }
            StmtKind::Call { name, args } => {
                let mut l = Vec::new();
                write_ident(&mut l, name);
                write_args(&mut l, args);
                self.line(&l);
            }
            StmtKind::If {
                cond,
                then,
                elifs,
                els,
            } => {
                self.line(&keyword_expr(b"If ", cond));
                self.block(then);
                for (c, body) in elifs {
                    self.line(&keyword_expr(b"ElseIf ", c));
                    self.block(body);
                }
                if let Some(els) = els {
                    self.line(b"Else");
                    self.block(els);
                }
                self.line(b"EndIf");
            }
            StmtKind::Select {
                subject,
                cases,
                default,
            } => {
                self.line(&keyword_expr(b"Select ", subject));
                for case in cases {
                    let mut l = b"Case ".to_vec();
                    write_list(&mut l, &case.values);
                    self.line(&l);
                    self.block(&case.body);
                }
                if let Some(d) = default {
                    self.line(b"Default");
                    self.block(d);
                }
                self.line(b"End Select");
            }
            StmtKind::While { cond, body } => {
                self.line(&keyword_expr(b"While ", cond));
                self.block(body);
                self.line(b"Wend");
            }
            StmtKind::Repeat { body, until } => {
                self.line(b"Repeat");
                self.block(body);
                match until {
                    Some(c) => self.line(&keyword_expr(b"Until ", c)),
                    None => self.line(b"Forever"),
                }
            }
            StmtKind::For {
                var,
                from,
                to,
                step,
                body,
            } => {
                let mut l = b"For ".to_vec();
                write_ident(&mut l, var);
                l.extend_from_slice(b" = ");
                write_expr(&mut l, from, 0);
                l.extend_from_slice(b" To ");
                write_expr(&mut l, to, 0);
                if let Some(step) = step {
                    l.extend_from_slice(b" Step ");
                    write_expr(&mut l, step, 0);
                }
                self.line(&l);
                self.block(body);
                self.line(b"Next");
            }
            StmtKind::ForEach {
                var,
                type_name,
                body,
            } => {
                let mut l = b"For ".to_vec();
                write_ident(&mut l, var);
                l.extend_from_slice(b" = Each ");
                write_ident(&mut l, type_name);
                self.line(&l);
                self.block(body);
                self.line(b"Next");
            }
            StmtKind::Exit => self.line(b"Exit"),
            StmtKind::Return(None) => self.line(b"Return"),
            StmtKind::Return(Some(e)) => self.line(&keyword_expr(b"Return ", e)),
            StmtKind::End => self.line(b"End"),
            StmtKind::Local(v) => self.line(&decls(b"Local ", v)),
            StmtKind::Global(v) => self.line(&decls(b"Global ", v)),
            StmtKind::Const(v) => self.line(&decls(b"Const ", v)),
            StmtKind::Dim(v) => self.line(&dims(v)),
            StmtKind::Unsupported { what } => match unsupported_stmt(what) {
                Some(lines) => lines.iter().for_each(|l| self.line(l.as_bytes())),
                None => {
                    let mut l = b"; unsupported: ".to_vec();
                    l.extend_from_slice(what.as_bytes());
                    self.line(&l);
                }
            },
        }
    }
}

/// What the parser says about a `Ref` parameter (see [`Printer::function`]).
const REF_PARAMS: &str = "BriskVM by-reference parameters (Ref)";

/// Source lines that parse back to an Unsupported statement with this description (the
/// node keeps only the description, so any instance of the construct will do).
fn unsupported_stmt(what: &str) -> Option<&'static [&'static str]> {
    Some(match what {
        "Blitz Types (Delete)" => &["Delete x"],
        "Blitz Types (Insert)" => &["Insert a Before b"],
        "BriskVM classes (Method)" => &["Method M()", "End Method"],
        "BriskVM exceptions (Try)" => &["Try"],
        "BriskVM exceptions (Catch)" => &["Catch"],
        "BriskVM exceptions (Finally)" => &["Finally"],
        "BriskVM exceptions (End Try)" => &["End Try"],
        "BriskVM exceptions (Throw)" => &["Throw 0"],
        "BriskVM assertions (Assert)" => &["Assert 0"],
        "BriskVM properties (Property)" => &["Property"],
        "BriskVM properties (End Property)" => &["End Property"],
        "BriskVM access modifiers (Public)" => &["Public"],
        "BriskVM access modifiers (Private)" => &["Private"],
        "BriskVM access modifiers (Protected)" => &["Protected"],
        "BriskVM access modifiers (Friendly)" => &["Friendly"],
        "BriskVM inner blocks (Inner)" => &["Inner"],
        "BriskVM inner blocks (EndInner)" => &["EndInner"],
        "BriskVM annotations (@)" => &["@a"],
        "Blitz arrays (name[size])" => &["Local a[1]"],
        "Blitz arrays (name[index])" => &["a[0] = 0"],
        "BriskVM enumerators (EachIn)" => &["For a = EachIn b", "Next"],
        "a For loop over an array element or a field" => &["For a(0) = 1 To 2", "Next"],
        "Include inside a block" => &["Include \"\""],
        _ => return None,
    })
}

/// Source text that parses back to an Unsupported expression with this description.
fn unsupported_expr(what: &str) -> Option<&'static str> {
    Some(match what {
        "Blitz Types (New)" => "New T",
        "Blitz Types (First)" => "First T",
        "Blitz Types (Last)" => "Last T",
        "Blitz Types (Before)" => "Before x",
        "Blitz Types (After)" => "After x",
        "BriskVM classes (Self)" => "Self",
        "BriskVM classes (Super)" => "Super",
        "Blitz arrays (name[index])" => "a[0]",
        _ => return None,
    })
}

/// `Using "path"` and the like.
fn keyword_string(kw: &[u8], s: &[u8]) -> Vec<u8> {
    let mut l = kw.to_vec();
    write_str(&mut l, s);
    l
}

/// `While cond` and the like.
fn keyword_expr(kw: &[u8], e: &Expr) -> Vec<u8> {
    let mut l = kw.to_vec();
    write_expr(&mut l, e, 0);
    l
}

fn decls(kw: &[u8], v: &[VarDecl]) -> Vec<u8> {
    let mut l = kw.to_vec();
    for (i, d) in v.iter().enumerate() {
        if i > 0 {
            l.extend_from_slice(b", ");
        }
        write_ident(&mut l, &d.name);
        if let Some(init) = &d.init {
            l.extend_from_slice(b" = ");
            write_expr(&mut l, init, 0);
        }
    }
    l
}

fn dims(v: &[ArrayDecl]) -> Vec<u8> {
    let mut l = b"Dim ".to_vec();
    for (i, d) in v.iter().enumerate() {
        if i > 0 {
            l.extend_from_slice(b", ");
        }
        write_ident(&mut l, &d.name);
        write_args(&mut l, &d.dims);
    }
    l
}

fn write_ident(out: &mut Vec<u8>, id: &Ident) {
    out.extend_from_slice(id.name.as_bytes());
    match &id.tag {
        None => {}
        Some(Tag::Int) => out.push(b'%'),
        Some(Tag::Float) => out.push(b'#'),
        Some(Tag::Str) => out.push(b'$'),
        Some(Tag::Object(t)) => {
            out.push(b'.');
            out.extend_from_slice(t.as_bytes());
        }
    }
}

fn write_str(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    out.extend_from_slice(s);
    out.push(b'"');
}

/// `(a, b)`.
fn write_args(out: &mut Vec<u8>, args: &[Expr]) {
    out.push(b'(');
    write_list(out, args);
    out.push(b')');
}

fn write_list(out: &mut Vec<u8>, list: &[Expr]) {
    for (i, e) in list.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        write_expr(out, e, 0);
    }
}

/// Precedence of a primary expression (§7's level 9).
const PRIMARY: u8 = 9;

/// The §7 precedence level of a binary operator.
fn level(op: BinOp) -> u8 {
    match op {
        BinOp::And | BinOp::Or | BinOp::Xor => 2,
        BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Gt | BinOp::Le | BinOp::Ge => 3,
        BinOp::Add | BinOp::Sub => 4,
        BinOp::Shl | BinOp::Shr => 5,
        BinOp::Mul | BinOp::Div | BinOp::Mod => 6,
        BinOp::Pow => 7,
    }
}

fn op_text(op: BinOp) -> &'static [u8] {
    match op {
        BinOp::And => b"And",
        BinOp::Or => b"Or",
        BinOp::Xor => b"Xor",
        BinOp::Eq => b"=",
        BinOp::Ne => b"<>",
        BinOp::Lt => b"<",
        BinOp::Gt => b">",
        BinOp::Le => b"<=",
        BinOp::Ge => b">=",
        BinOp::Add => b"+",
        BinOp::Sub => b"-",
        BinOp::Shl => b"Shl",
        BinOp::Shr => b"Shr",
        BinOp::Mul => b"*",
        BinOp::Div => b"/",
        BinOp::Mod => b"Mod",
        BinOp::Pow => b"^",
    }
}

/// The precedence level an expression is parsed at: `Not` 1, binary operators 2–7, unary
/// `-`/`+` 8, everything else primary.
fn expr_level(e: &Expr) -> u8 {
    match &e.kind {
        ExprKind::Unary { op: UnOp::Not, .. } => 1,
        ExprKind::Unary { .. } => 8,
        ExprKind::Binary { op, .. } => level(*op),
        // A negative literal can only be written in hex, which is primary.
        _ => PRIMARY,
    }
}

/// Write `e` so that it parses back as one operand at level `min` or tighter.
fn write_expr(out: &mut Vec<u8>, e: &Expr, min: u8) {
    if expr_level(e) < min {
        out.push(b'(');
        write_expr(out, e, 0);
        out.push(b')');
        return;
    }
    match &e.kind {
        ExprKind::Int(n) => write_int(out, *n),
        ExprKind::Float(f) => write_float(out, *f),
        ExprKind::Str(s) => write_str(out, s),
        ExprKind::Null => out.extend_from_slice(b"Null"),
        ExprKind::Var(id) => write_ident(out, id),
        ExprKind::Call { name, args } => {
            write_ident(out, name);
            write_args(out, args);
        }
        ExprKind::Unary { op, expr } => match op {
            UnOp::Not => {
                out.extend_from_slice(b"Not ");
                write_expr(out, expr, 1);
            }
            UnOp::Neg | UnOp::Pos => {
                out.push(if *op == UnOp::Neg { b'-' } else { b'+' });
                write_expr(out, expr, 8);
            }
        },
        ExprKind::Binary { op, lhs, rhs } => {
            let l = level(*op);
            write_expr(out, lhs, l);
            out.push(b' ');
            out.extend_from_slice(op_text(*op));
            out.push(b' ');
            write_expr(out, rhs, l + 1);
        }
        ExprKind::Field { base, field } => {
            write_expr(out, base, PRIMARY);
            out.push(b'\\');
            write_ident(out, field);
        }
        ExprKind::Unsupported { what } => {
            out.extend_from_slice(unsupported_expr(what).unwrap_or("0").as_bytes());
        }
    }
}

/// Integers: decimal when non-negative; a negative value (from a 32-bit hex literal such
/// as `$FFFFFFFF`) as hex.
fn write_int(out: &mut Vec<u8>, n: i64) {
    if n >= 0 {
        out.extend_from_slice(n.to_string().as_bytes());
    } else if let Ok(n32) = i32::try_from(n) {
        out.extend_from_slice(format!("${:X}", n32.cast_unsigned()).as_bytes());
    } else {
        // Not produced by the parser; printed as an expression of the same value.
        out.extend_from_slice(format!("(0 - {})", n.unsigned_abs()).as_bytes());
    }
}

/// Floats: the shortest decimal that reads back as the same value, always with a `.`
/// and never with an exponent (the language has no exponent literals).
fn write_float(out: &mut Vec<u8>, f: f64) {
    if f.is_finite() && f.is_sign_positive() {
        let mut text = format!("{f}");
        if !text.contains('.') {
            text.push_str(".0");
        }
        out.extend_from_slice(text.as_bytes());
    } else {
        // Not produced by the parser (literals are finite and non-negative).
        out.extend_from_slice(b"0.0");
    }
}
