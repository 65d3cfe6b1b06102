//! Property tests of the parser: no input panics it and every error points inside the
//! file; a random syntax tree printed by `print::module` parses back to the same tree
//! (spans aside); and parse → print → parse is stable on the sample scripts.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use script::ast::{
    ArrayDecl, BinOp, Case, Expr, ExprKind, Function, Ident, Item, LValue, Module, Param, Span,
    Stmt, StmtKind, Tag, UnOp, VarDecl,
};
use script::lexer::keyword;
use script::parser::parse;
use script::print;

// ---------------------------------------------------------------------------------------
// Span erasure: compare trees without their positions.

fn erase_module(m: &mut Module) {
    for item in &mut m.items {
        match item {
            Item::Using { span, .. } | Item::Include { span, .. } => *span = Span::default(),
            Item::Function(f) => {
                f.span = Span::default();
                erase_ident(&mut f.name);
                for p in &mut f.params {
                    erase_ident(&mut p.name);
                    if let Some(d) = &mut p.default {
                        erase_expr(d);
                    }
                }
                erase_stmts(&mut f.body);
            }
            Item::Global(v) | Item::Const(v) => erase_decls(v),
            Item::Dim(v) => erase_dims(v),
            Item::Type { name, span } => {
                *span = Span::default();
                erase_ident(name);
            }
            Item::Stmt(s) => erase_stmt(s),
        }
    }
}

fn erase_ident(id: &mut Ident) {
    id.span = Span::default();
}

fn erase_decls(v: &mut [VarDecl]) {
    for d in v {
        erase_ident(&mut d.name);
        if let Some(e) = &mut d.init {
            erase_expr(e);
        }
    }
}

fn erase_dims(v: &mut [ArrayDecl]) {
    for d in v {
        erase_ident(&mut d.name);
        d.dims.iter_mut().for_each(erase_expr);
    }
}

fn erase_stmts(v: &mut [Stmt]) {
    v.iter_mut().for_each(erase_stmt);
}

fn erase_stmt(s: &mut Stmt) {
    s.span = Span::default();
    match &mut s.kind {
        StmtKind::Assign { target, value } => {
            match target {
                LValue::Var(id) => erase_ident(id),
                LValue::Index { name, indices } => {
                    erase_ident(name);
                    indices.iter_mut().for_each(erase_expr);
                }
                LValue::Field { base, field } => {
                    erase_expr(base);
                    erase_ident(field);
                }
            }
            erase_expr(value);
        }
        StmtKind::Call { name, args } => {
            erase_ident(name);
            args.iter_mut().for_each(erase_expr);
        }
        StmtKind::If {
            cond,
            then,
            elifs,
            els,
        } => {
            erase_expr(cond);
            erase_stmts(then);
            for (c, b) in elifs {
                erase_expr(c);
                erase_stmts(b);
            }
            if let Some(e) = els {
                erase_stmts(e);
            }
        }
        StmtKind::Select {
            subject,
            cases,
            default,
        } => {
            erase_expr(subject);
            for c in cases {
                c.span = Span::default();
                c.values.iter_mut().for_each(erase_expr);
                erase_stmts(&mut c.body);
            }
            if let Some(d) = default {
                erase_stmts(d);
            }
        }
        StmtKind::While { cond, body } => {
            erase_expr(cond);
            erase_stmts(body);
        }
        StmtKind::Repeat { body, until } => {
            erase_stmts(body);
            if let Some(u) = until {
                erase_expr(u);
            }
        }
        StmtKind::For {
            var,
            from,
            to,
            step,
            body,
        } => {
            erase_ident(var);
            erase_expr(from);
            erase_expr(to);
            if let Some(s) = step {
                erase_expr(s);
            }
            erase_stmts(body);
        }
        StmtKind::ForEach {
            var,
            type_name,
            body,
        } => {
            erase_ident(var);
            erase_ident(type_name);
            erase_stmts(body);
        }
        StmtKind::Return(Some(e)) => erase_expr(e),
        StmtKind::Local(v) | StmtKind::Global(v) | StmtKind::Const(v) => erase_decls(v),
        StmtKind::Dim(v) => erase_dims(v),
        StmtKind::Exit | StmtKind::Return(None) | StmtKind::End | StmtKind::Unsupported { .. } => {}
    }
}

fn erase_expr(e: &mut Expr) {
    e.span = Span::default();
    match &mut e.kind {
        ExprKind::Var(id) => erase_ident(id),
        ExprKind::Call { name, args } => {
            erase_ident(name);
            args.iter_mut().for_each(erase_expr);
        }
        ExprKind::Unary { expr, .. } => erase_expr(expr),
        ExprKind::Binary { lhs, rhs, .. } => {
            erase_expr(lhs);
            erase_expr(rhs);
        }
        ExprKind::Field { base, field } => {
            erase_expr(base);
            erase_ident(field);
        }
        ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::Str(_)
        | ExprKind::Null
        | ExprKind::Unsupported { .. } => {}
    }
}

fn erased(mut m: Module) -> Module {
    erase_module(&mut m);
    m
}

// ---------------------------------------------------------------------------------------
// Strategies for random syntax trees.

fn name() -> impl Strategy<Value = String> {
    "[a-zA-Z][a-zA-Z0-9_]{0,5}".prop_filter("not a keyword", |n| keyword(n.as_bytes()).is_none())
}

fn tag() -> impl Strategy<Value = Option<Tag>> {
    prop_oneof![
        3 => Just(None),
        1 => Just(Some(Tag::Int)),
        1 => Just(Some(Tag::Float)),
        1 => Just(Some(Tag::Str)),
        1 => name().prop_map(|t| Some(Tag::Object(t))),
    ]
}

fn ident() -> impl Strategy<Value = Ident> {
    (name(), tag()).prop_map(|(name, tag)| Ident {
        name,
        tag,
        span: Span::default(),
    })
}

fn plain_ident() -> impl Strategy<Value = Ident> {
    name().prop_map(|name| Ident {
        name,
        tag: None,
        span: Span::default(),
    })
}

fn ex(kind: ExprKind) -> Expr {
    Expr {
        kind,
        span: Span::default(),
    }
}

fn literal() -> impl Strategy<Value = Expr> {
    prop_oneof![
        (0i64..=i64::from(i32::MAX)).prop_map(|n| ex(ExprKind::Int(n))),
        (i64::from(i32::MIN)..0).prop_map(|n| ex(ExprKind::Int(n))),
        (0i64..=i64::MAX).prop_map(|n| ex(ExprKind::Int(n))),
        // Every finite, non-negative f64 (the bit patterns below +infinity).
        (0u64..0x7FF0_0000_0000_0000).prop_map(|b| ex(ExprKind::Float(f64::from_bits(b)))),
        (0u32..100_000).prop_map(|n| ex(ExprKind::Float(f64::from(n) / 100.0))),
        proptest::collection::vec(prop_oneof![0x20u8..=0x21, 0x23u8..=0xFF], 0..8)
            .prop_map(|s| ex(ExprKind::Str(s))),
        Just(ex(ExprKind::Null)),
        ident().prop_map(|i| ex(ExprKind::Var(i))),
    ]
}

fn binop() -> impl Strategy<Value = BinOp> {
    prop_oneof![
        Just(BinOp::And),
        Just(BinOp::Or),
        Just(BinOp::Xor),
        Just(BinOp::Eq),
        Just(BinOp::Ne),
        Just(BinOp::Lt),
        Just(BinOp::Gt),
        Just(BinOp::Le),
        Just(BinOp::Ge),
        Just(BinOp::Add),
        Just(BinOp::Sub),
        Just(BinOp::Shl),
        Just(BinOp::Shr),
        Just(BinOp::Mul),
        Just(BinOp::Div),
        Just(BinOp::Mod),
        Just(BinOp::Pow),
    ]
}

fn unop() -> impl Strategy<Value = UnOp> {
    prop_oneof![Just(UnOp::Neg), Just(UnOp::Pos), Just(UnOp::Not)]
}

/// A field access base: a variable or a call, then zero or more field accesses.
fn field_base() -> impl Strategy<Value = Expr> {
    (
        ident(),
        proptest::option::of(proptest::collection::vec(literal(), 0..3)),
        proptest::collection::vec(ident(), 0..3),
    )
        .prop_map(|(name, args, fields)| {
            let first = match args {
                Some(args) => ex(ExprKind::Call { name, args }),
                None => ex(ExprKind::Var(name)),
            };
            fields.into_iter().fold(first, |base, field| {
                ex(ExprKind::Field {
                    base: Box::new(base),
                    field,
                })
            })
        })
}

fn expr() -> impl Strategy<Value = Expr> {
    literal().prop_recursive(5, 48, 4, |inner| {
        prop_oneof![
            (ident(), proptest::collection::vec(inner.clone(), 0..4))
                .prop_map(|(name, args)| ex(ExprKind::Call { name, args })),
            (unop(), inner.clone()).prop_map(|(op, e)| ex(ExprKind::Unary {
                op,
                expr: Box::new(e)
            })),
            (binop(), inner.clone(), inner.clone()).prop_map(|(op, l, r)| ex(ExprKind::Binary {
                op,
                lhs: Box::new(l),
                rhs: Box::new(r)
            })),
            (field_base(), ident()).prop_map(|(b, f)| ex(ExprKind::Field {
                base: Box::new(b),
                field: f
            })),
        ]
    })
}

fn st(kind: StmtKind) -> Stmt {
    Stmt {
        kind,
        span: Span::default(),
    }
}

fn decls(with_init: bool) -> impl Strategy<Value = Vec<VarDecl>> {
    proptest::collection::vec(
        (ident(), proptest::option::of(expr())).prop_map(move |(name, init)| VarDecl {
            name,
            init: if with_init {
                Some(init.unwrap_or_else(|| ex(ExprKind::Int(1))))
            } else {
                init
            },
        }),
        1..3,
    )
}

fn dims() -> impl Strategy<Value = Vec<ArrayDecl>> {
    proptest::collection::vec(
        (ident(), proptest::collection::vec(expr(), 1..3))
            .prop_map(|(name, dims)| ArrayDecl { name, dims }),
        1..3,
    )
}

fn lvalue() -> impl Strategy<Value = LValue> {
    prop_oneof![
        ident().prop_map(LValue::Var),
        (ident(), proptest::collection::vec(expr(), 0..3))
            .prop_map(|(name, indices)| LValue::Index { name, indices }),
        (field_base(), ident()).prop_map(|(b, field)| {
            LValue::Field {
                base: Box::new(b),
                field,
            }
        }),
    ]
}

fn simple_stmt() -> impl Strategy<Value = Stmt> {
    prop_oneof![
        4 => (lvalue(), expr()).prop_map(|(target, value)| st(StmtKind::Assign { target, value })),
        4 => (ident(), proptest::collection::vec(expr(), 0..4))
            .prop_map(|(name, args)| st(StmtKind::Call { name, args })),
        1 => Just(st(StmtKind::Exit)),
        1 => Just(st(StmtKind::End)),
        1 => proptest::option::of(expr()).prop_map(|e| st(StmtKind::Return(e))),
        1 => decls(false).prop_map(|v| st(StmtKind::Local(v))),
        1 => decls(false).prop_map(|v| st(StmtKind::Global(v))),
        1 => decls(true).prop_map(|v| st(StmtKind::Const(v))),
        1 => dims().prop_map(|v| st(StmtKind::Dim(v))),
    ]
}

fn stmt() -> impl Strategy<Value = Stmt> {
    simple_stmt().prop_recursive(4, 40, 4, |inner| {
        let body = proptest::collection::vec(inner, 0..4);
        prop_oneof![
            (
                expr(),
                body.clone(),
                proptest::collection::vec((expr(), body.clone()), 0..3),
                proptest::option::of(body.clone())
            )
                .prop_map(|(cond, then, elifs, els)| st(StmtKind::If {
                    cond,
                    then,
                    elifs,
                    els
                })),
            (
                expr(),
                proptest::collection::vec(
                    (proptest::collection::vec(expr(), 1..3), body.clone()).prop_map(
                        |(values, body)| Case {
                            values,
                            body,
                            span: Span::default()
                        }
                    ),
                    0..3
                ),
                proptest::option::of(body.clone())
            )
                .prop_map(|(subject, cases, default)| st(StmtKind::Select {
                    subject,
                    cases,
                    default
                })),
            (expr(), body.clone()).prop_map(|(cond, body)| st(StmtKind::While { cond, body })),
            (body.clone(), proptest::option::of(expr()))
                .prop_map(|(body, until)| st(StmtKind::Repeat { body, until })),
            (
                ident(),
                expr(),
                expr(),
                proptest::option::of(expr()),
                body.clone()
            )
                .prop_map(|(var, from, to, step, body)| st(StmtKind::For {
                    var,
                    from,
                    to,
                    step,
                    body
                })),
            (ident(), plain_ident(), body).prop_map(|(var, type_name, body)| st(
                StmtKind::ForEach {
                    var,
                    type_name,
                    body
                }
            )),
        ]
    })
}

/// A statement allowed as a top-level item (declarations there are items of their own).
fn top_stmt() -> impl Strategy<Value = Stmt> {
    stmt().prop_filter("not a declaration", |s| {
        !matches!(
            s.kind,
            StmtKind::Global(_) | StmtKind::Const(_) | StmtKind::Dim(_)
        )
    })
}

fn quoted() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(prop_oneof![0x20u8..=0x21, 0x23u8..=0xFF], 0..10)
}

fn item() -> impl Strategy<Value = Item> {
    prop_oneof![
        1 => quoted().prop_map(|path| Item::Using {
            path,
            span: Span::default()
        }),
        1 => quoted().prop_map(|path| Item::Include {
            path,
            span: Span::default()
        }),
        3 => (
            ident(),
            proptest::collection::vec(
                (ident(), proptest::option::of(expr()))
                    .prop_map(|(name, default)| Param { name, default }),
                0..4
            ),
            proptest::collection::vec(stmt(), 0..5)
        )
            .prop_map(|(name, params, body)| Item::Function(Function {
                name,
                params,
                body,
                span: Span::default()
            })),
        1 => decls(false).prop_map(Item::Global),
        1 => decls(true).prop_map(Item::Const),
        1 => dims().prop_map(Item::Dim),
        1 => ident().prop_map(|name| Item::Type {
            name,
            span: Span::default()
        }),
        3 => top_stmt().prop_map(Item::Stmt),
    ]
}

fn module() -> impl Strategy<Value = Module> {
    (
        any::<bool>(),
        any::<bool>(),
        proptest::collection::vec(item(), 0..6),
    )
        .prop_map(|(compile, alt_syntax, items)| Module {
            directives: script::ast::Directives {
                compile,
                alt_syntax,
            },
            items,
        })
}

// ---------------------------------------------------------------------------------------
// Token soup: random sequences of RSL-looking pieces, to reach deep into the parser.

const PIECES: &[&str] = &[
    "If",
    "Then",
    "Else",
    "ElseIf",
    "Else If",
    "EndIf",
    "End If",
    "While",
    "Wend",
    "Repeat",
    "Until",
    "Forever",
    "For",
    "To",
    "Step",
    "Next",
    "Each",
    "EachIn",
    "Select",
    "Case",
    "Default",
    "End Select",
    "Function",
    "End Function",
    "Return",
    "Exit",
    "End",
    "Local",
    "Global",
    "Const",
    "Dim",
    "Type",
    "Field",
    "End Type",
    "New",
    "Delete",
    "First",
    "Last",
    "Before",
    "After",
    "Insert",
    "Null",
    "True",
    "False",
    "And",
    "Or",
    "Xor",
    "Not",
    "Mod",
    "Shl",
    "Shr",
    "Using",
    "Include",
    "Method",
    "End Method",
    "Self",
    "Try",
    "Catch",
    "Throw",
    "Ref",
    "Rem",
    "EndRem",
    "x",
    "y%",
    "s$",
    "f#",
    "o.T",
    "Foo",
    "1",
    "2.5",
    ".5",
    "$FF",
    "%101",
    "\"str\"",
    "\"open",
    "+",
    "-",
    "*",
    "/",
    "^",
    "=",
    "<>",
    "<",
    ">",
    "<=",
    ">=",
    "(",
    ")",
    ",",
    ":",
    ".",
    "\\",
    "[",
    "]",
    ";c",
    "..",
    "@",
    "!COMPILE",
    "\n",
    "\n",
    "\n",
    "\t",
    " ",
    "\r\n",
];

fn soup() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(0..PIECES.len(), 0..200).prop_map(|ix| {
        let mut out = Vec::new();
        for i in ix {
            out.extend_from_slice(PIECES.get(i).copied().unwrap_or("").as_bytes());
            out.push(b' ');
        }
        out
    })
}

/// Every error's span is inside the file: a real line, a column within it (or just past
/// its end); errors come in source order; and a file without errors prints to text that
/// parses cleanly and prints the same again (the fuzz target's invariants).
fn check_input(bytes: &[u8]) {
    let (module, errors) = parse(bytes);
    if errors.is_empty() {
        let printed = print::module(&module);
        let (again, errors) = parse(&printed);
        assert!(
            errors.is_empty(),
            "{errors:?}\n{}",
            String::from_utf8_lossy(&printed)
        );
        assert_eq!(print::module(&again), printed);
    }
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let lines: Vec<&[u8]> = body.split(|&b| b == b'\n').collect();
    for e in &errors {
        let line = lines
            .get((e.span.line as usize).wrapping_sub(1))
            .unwrap_or_else(|| panic!("error on line {} of {}: {e:?}", e.span.line, lines.len()));
        assert!(
            e.span.col >= 1 && e.span.col as usize <= line.len() + 1,
            "column {} outside a line of {} bytes: {e:?}",
            e.span.col,
            line.len()
        );
        assert!(!e.message.is_empty());
    }
    assert!(errors.windows(2).all(|w| w[0].span <= w[1].span));
}

proptest! {
    // 512 cases unless `PROPTEST_CASES` asks for another number.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(512),
        ..ProptestConfig::default()
    })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        check_input(&bytes);
    }

    #[test]
    fn token_soup_never_panics(bytes in soup()) {
        check_input(&bytes);
    }
}

/// Printed trees parse back to themselves. Run on a thread with a large stack: proptest's
/// recursive strategies (statements holding expressions, four and five levels deep) build
/// their value trees recursively, and an unoptimised build overflowed the test thread's
/// 2 MiB generating them now and then (the parser's own depth limit is tested on 2 MiB,
/// `parser::tests::deep_nesting_is_an_error_not_a_crash`).
#[test]
fn printed_trees_parse_back() {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(512);
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || {
            let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
                cases,
                ..ProptestConfig::default()
            });
            let result = runner.run(&module(), |m| {
                let text = print::module(&m);
                let (parsed, errors) = parse(&text);
                prop_assert!(
                    errors.is_empty(),
                    "{errors:?}\n{}",
                    String::from_utf8_lossy(&text)
                );
                prop_assert_eq!(
                    erased(parsed),
                    erased(m),
                    "{}",
                    String::from_utf8_lossy(&text)
                );
                Ok(())
            });
            if let Err(e) = result {
                panic!("{e}");
            }
        })
        .expect("spawn")
        .join()
        .expect("printed trees parse back");
}

#[test]
fn parse_print_parse_is_stable_on_the_samples() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/rc-sample-data/Scripts"
    );
    let Ok(entries) = std::fs::read_dir(dir) else {
        println!("skipped: the sample scripts folder {dir} is absent");
        return;
    };
    let mut count = 0;
    for path in entries.flatten().map(|e| e.path()) {
        if !path
            .extension()
            .is_some_and(|x| x.eq_ignore_ascii_case("rsl"))
        {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let (first, errors) = parse(&bytes);
        assert!(errors.is_empty(), "{}: {errors:?}", path.display());
        let printed = print::module(&first);
        let (second, errors) = parse(&printed);
        assert!(
            errors.is_empty(),
            "{}: {errors:?}\n{}",
            path.display(),
            String::from_utf8_lossy(&printed)
        );
        assert_eq!(
            print::module(&second),
            printed,
            "{}: printing is not a fixed point",
            path.display()
        );
        assert_eq!(erased(second), erased(first), "{}", path.display());
        count += 1;
    }
    assert!(count >= 27, "only {count} samples");
}

#[test]
fn a_large_file_parses_in_linear_time() {
    // 50,000 lines of mixed statements: a quadratic parser would take minutes.
    let unit = "Function F(a, b$ = \"x\")\n\tIf a > 1 Then b = b + \"y\" : a = a - 1 Else a = 0\n\tWhile a < 10\n\t\ta = a + (1 * 2)\n\tWend\nEnd Function\n";
    let src = unit.repeat(8_000);
    let started = std::time::Instant::now();
    let (m, errors) = parse(src.as_bytes());
    assert!(errors.is_empty());
    assert_eq!(m.items.len(), 8_000);
    assert!(
        started.elapsed().as_secs() < 20,
        "took {:?}",
        started.elapsed()
    );
}
