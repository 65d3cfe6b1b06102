//! The Realm Crafter sample scripts parse with zero errors, and a few of their shapes are
//! as the spec describes (top-level `Dim`, single-line `If ... Then a : b`, ...).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use script::ast::{BinOp, ExprKind, Item, LValue, Module, Stmt, StmtKind, Tag};
use script::parser::parse;

fn samples_dir() -> PathBuf {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/rc-sample-data/Scripts"
    ))
    .to_path_buf()
}

/// Every `.rsl` sample, or `None` (with a printed reason) when the folder is absent.
fn samples() -> Option<Vec<(String, Vec<u8>)>> {
    let dir = samples_dir();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        println!(
            "skipped: the sample scripts folder {} is absent",
            dir.display()
        );
        return None;
    };
    let mut out: Vec<(String, Vec<u8>)> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x.eq_ignore_ascii_case("rsl")))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    out.sort();
    Some(out)
}

fn sample(name: &str) -> Option<Module> {
    let bytes = std::fs::read(samples_dir().join(name)).ok()?;
    let (m, errors) = parse(&bytes);
    assert!(errors.is_empty(), "{name}: {errors:?}");
    Some(m)
}

fn function<'m>(m: &'m Module, name: &str) -> &'m script::ast::Function {
    m.items
        .iter()
        .find_map(|i| match i {
            Item::Function(f) if f.name.name.eq_ignore_ascii_case(name) => Some(f),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no function {name}"))
}

/// Every statement of a body, depth first.
fn walk<'a>(stmts: &'a [Stmt], out: &mut Vec<&'a Stmt>) {
    for s in stmts {
        out.push(s);
        match &s.kind {
            StmtKind::If {
                then, elifs, els, ..
            } => {
                walk(then, out);
                for (_, b) in elifs {
                    walk(b, out);
                }
                if let Some(e) = els {
                    walk(e, out);
                }
            }
            StmtKind::Select { cases, default, .. } => {
                for c in cases {
                    walk(&c.body, out);
                }
                if let Some(d) = default {
                    walk(d, out);
                }
            }
            StmtKind::While { body, .. }
            | StmtKind::Repeat { body, .. }
            | StmtKind::For { body, .. }
            | StmtKind::ForEach { body, .. } => walk(body, out),
            _ => {}
        }
    }
}

#[test]
fn every_sample_parses_without_errors() {
    let Some(files) = samples() else {
        return;
    };
    assert!(
        files.len() >= 27,
        "expected the 27 samples, found {}",
        files.len()
    );
    let mut failures = Vec::new();
    for (name, bytes) in &files {
        let (m, errors) = parse(bytes);
        for e in &errors {
            failures.push(format!("{name}:{}: {}", e.span, e.message));
        }
        assert!(!m.items.is_empty(), "{name} parsed to nothing");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn login_has_a_top_level_dim_and_tagged_calls() {
    let Some(m) = sample("Login.rsl") else {
        return;
    };
    let dim = m
        .items
        .iter()
        .find_map(|i| match i {
            Item::Dim(v) => Some(v),
            _ => None,
        })
        .expect("a top-level Dim");
    assert_eq!(dim[0].name.name, "Score");
    assert_eq!(dim[0].name.tag, Some(Tag::Str));
    assert_eq!(dim[0].dims.len(), 2);
    let using: Vec<_> = m
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Using { path, .. } => Some(path.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        using,
        vec![b"RC_Core.rcm".to_vec(), b"ProcessGlobals.rcm".to_vec()]
    );
    let check = function(&m, "CheckDate");
    assert_eq!(check.name.tag, Some(Tag::Int));
    // `Score$(i, 0) = Score$(j, 0)` in SortScores is an element assignment.
    let sort = function(&m, "SortScores");
    let mut all = Vec::new();
    walk(&sort.body, &mut all);
    assert!(all.iter().any(|s| matches!(
        &s.kind,
        StmtKind::Assign { target: LValue::Index { name, indices }, .. }
            if name.name == "Score" && indices.len() == 2
    )));
    // `String$ = ReadLine(FH)`: a variable named after a command.
    let load = function(&m, "LoadLeagueScores");
    let mut all = Vec::new();
    walk(&load.body, &mut all);
    assert!(all.iter().any(|s| matches!(
        &s.kind,
        StmtKind::Assign { target: LValue::Var(v), .. } if v.name == "String"
    )));
    // `While Not EoF(FH)`.
    assert!(all.iter().any(|s| matches!(
        &s.kind,
        StmtKind::While { cond, .. }
            if matches!(cond.kind, ExprKind::Unary { op: script::ast::UnOp::Not, .. })
    )));
}

#[test]
fn ratcatcher_main_exists() {
    let Some(m) = sample("Ratcatcher1.rsl") else {
        return;
    };
    let main = function(&m, "Main");
    assert!(main.params.is_empty());
    assert!(main.body.len() > 20);
    // The long ElseIf chain of the quest states.
    let chain = main.body.iter().find_map(|s| match &s.kind {
        StmtKind::If { elifs, els, .. } if elifs.len() == 4 => Some(els.is_some()),
        _ => None,
    });
    assert_eq!(chain, Some(true));
}

#[test]
fn rc_core_single_line_if_puts_both_statements_in_then() {
    let Some(m) = sample("RC_Core.rsl") else {
        return;
    };
    assert!(m.directives.compile);
    let wait = function(&m, "WaitTime");
    let (then, els) = wait
        .body
        .iter()
        .find_map(|s| match &s.kind {
            StmtKind::If { then, els, .. } => Some((then, els)),
            _ => None,
        })
        .expect("the If in WaitTime");
    assert_eq!(then.len(), 2);
    assert!(els.is_none());
    assert!(
        then.iter()
            .all(|s| matches!(s.kind, StmtKind::Assign { .. }))
    );
    // `If BackgroundTex% = 0 Then BackgroundTexID = 65535 Else BackgroundTexID = ...`.
    let open = function(&m, "OPENDIALOG");
    assert_eq!(open.params.len(), 8);
    let defaults = open.params.iter().filter(|p| p.default.is_some()).count();
    assert_eq!(defaults, 6);
    let mut all = Vec::new();
    walk(&open.body, &mut all);
    assert!(all.iter().any(|s| matches!(
        &s.kind,
        StmtKind::If { cond, then, els: Some(els), .. }
            if then.len() == 1 && els.len() == 1
                && matches!(cond.kind, ExprKind::Binary { op: BinOp::Eq, .. })
    )));
}

#[test]
fn process_globals_line_numbers_survive_the_compile_directive() {
    let Some(m) = sample("ProcessGlobals.rsl") else {
        return;
    };
    assert!(m.directives.compile);
    let push = function(&m, "PushGlobal");
    assert_eq!(push.span.line, 3);
    assert_eq!(push.span.col, 1);
    // The first statement of the body is the `If` on line 5, indented by four spaces.
    assert_eq!(push.body[0].span.line, 5);
    assert_eq!(push.body[0].span.col, 5);
}

#[test]
fn blacksmithing_until_with_parentheses_and_nested_elseifs() {
    let Some(m) = sample("BlackSmithing Skill Template.rsl") else {
        return;
    };
    let main = function(&m, "Main");
    let mut all = Vec::new();
    walk(&main.body, &mut all);
    let repeats = all
        .iter()
        .filter(|s| matches!(s.kind, StmtKind::Repeat { until: Some(_), .. }))
        .count();
    assert_eq!(repeats, 3);
    // `GiveItem(Player, "Iron Bar", - Itemcost)`: unary minus on an argument.
    assert!(all.iter().any(|s| matches!(
        &s.kind,
        StmtKind::Call { name, args } if name.name == "GiveItem"
            && matches!(args[2].kind, ExprKind::Unary { op: script::ast::UnOp::Neg, .. })
    )));
}

#[test]
fn send_mail_unary_plus_on_strings() {
    let Some(m) = sample("SendMail.rsl") else {
        return;
    };
    let main = function(&m, "Main");
    let mut all = Vec::new();
    walk(&main.body, &mut all);
    assert!(all.iter().any(|s| matches!(
        &s.kind,
        StmtKind::Assign { value, .. } if matches!(&value.kind,
            ExprKind::Call { name, args } if name.name == "OpenFile"
                && matches!(&args[0].kind, ExprKind::Binary { op: BinOp::Add, lhs, .. }
                    if matches!(lhs.kind, ExprKind::Unary { op: script::ast::UnOp::Pos, .. })))
    )));
}

#[test]
fn quest_has_no_using_and_one_function() {
    let Some(m) = sample("quest.rsl") else {
        return;
    };
    assert_eq!(m.items.len(), 1);
    assert!(matches!(&m.items[0], Item::Function(f) if f.name.name == "Main"));
}
