//! The compiler: a set of `.rsl` files (a world's `Scripts` folder) to one [`ScriptSet`].
//!
//! # Phases
//! 1. Parse every file ([`crate::parser`]).
//! 2. Declare: each module's `Using`s, `Const`s (evaluated), `Global`s (constant
//!    initialisers), `Dim` arrays (constant bounds) and function signatures (typed
//!    parameters with constant defaults, the return type from the name's tag).
//! 3. Link: `Using "X.rcm"` names the script `X.rsl` of the same set; `Using "RC_Core.rcm"`
//!    is the built-in `RC_Core` (its 13 functions are natives of the host) and is implied for
//!    every module but `RC_Core.rsl` itself, as Realm Crafter's loader prepends it. Cycles
//!    are errors. A module's closure is itself plus every module it uses, directly or not.
//! 4. Generate code for every function ([`func`]): BriskVM's type inference, implicit
//!    locals, every conversion explicit, argument counts and tags checked.
//!
//! A module with an error (or using one) is not runnable ([`ModuleInfo::ok`]), as in Realm
//! Crafter, where a script that fails to compile has no module; the others run.

mod consts;
mod func;

use std::collections::{HashMap, HashSet};

use crate::ast::{self, Item, Span, Tag};
use crate::bytecode::{
    ArrayInfo, Func, FuncId, GlobalInfo, ModuleId, ModuleInfo, ParamInfo, ScriptSet,
};
use crate::error::{Diagnostic, Severity};
use crate::natives::{self, NativeSig};
use crate::value::{RStr, Ty, Value};

pub use consts::const_eval;

/// Bump when the bytecode or the saved-instance format changes: saved instances only resume
/// against modules of the same fingerprint.
pub const COMPILER_VERSION: u32 = 1;

/// The key of the built-in module every script uses.
pub const RC_CORE: &str = "rc_core";

/// The name of a module's main program (its top-level code) among its functions: not a
/// name a script can write.
pub const MAIN_PROGRAM: &str = "(main program)";

/// One source file of a set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceFile {
    /// Script name: the file name without `.rsl`, case kept (`Death`).
    pub name: String,
    /// The raw bytes as read from disk.
    pub bytes: Vec<u8>,
}

impl SourceFile {
    /// A source file.
    pub fn new(name: impl Into<String>, bytes: impl Into<Vec<u8>>) -> Self {
        Self {
            name: name.into(),
            bytes: bytes.into(),
        }
    }
}

/// A compiled set with its diagnostics.
#[derive(Clone, Debug, Default)]
pub struct Compiled {
    /// The set (modules with errors are present but not runnable).
    pub set: ScriptSet,
    /// Every error and warning, sorted by file and position.
    pub diagnostics: Vec<Diagnostic>,
}

impl Compiled {
    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
    }

    /// The errors only.
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
    }
}

/// The type a tag names; `.Type` tags are reported.
pub(crate) fn tag_ty(tag: &Option<Tag>) -> Result<Option<Ty>, String> {
    match tag {
        None => Ok(None),
        Some(Tag::Int) => Ok(Some(Ty::Int)),
        Some(Tag::Float) => Ok(Some(Ty::Float)),
        Some(Tag::Str) => Ok(Some(Ty::Str)),
        Some(Tag::Object(t)) => Err(format!(
            "object types (.{t}) are not supported: Blitz Types are not part of this port"
        )),
    }
}

/// A declared function (signature only), set-wide.
#[derive(Clone, Debug)]
pub(crate) struct FuncDecl {
    pub id: FuncId,
    pub module: ModuleId,
    pub name: String,
    pub params: Vec<ParamInfo>,
    pub ret: Ty,
    pub span: Span,
}

/// What a module declares at top level.
#[derive(Clone, Debug, Default)]
pub(crate) struct ModuleDecls {
    pub consts: HashMap<String, Value>,
    pub globals: HashMap<String, (u16, Ty)>,
    pub global_list: Vec<GlobalInfo>,
    pub arrays: HashMap<String, (u16, Ty, usize)>,
    pub array_list: Vec<ArrayInfo>,
    pub funcs: HashMap<String, FuncId>,
    /// Directly used modules (keys), with the `Using` span.
    pub uses: Vec<(String, Span)>,
    /// The module names as written in each `Using` (same order as `uses`).
    pub uses_written: Vec<String>,
    pub uses_core: bool,
}

/// Everything function code generation needs to resolve names.
pub(crate) struct SetCx {
    pub modules: Vec<ModuleDecls>,
    pub funcs: Vec<FuncDecl>,
    pub keys: Vec<String>,
    pub by_key: HashMap<String, ModuleId>,
}

/// What a called name resolves to.
pub(crate) enum Callee<'a> {
    Func(&'a FuncDecl),
    Native(&'static NativeSig),
}

impl SetCx {
    fn decls(&self, m: ModuleId) -> Option<&ModuleDecls> {
        self.modules.get(usize::from(m))
    }

    /// Resolve a function name as seen from module `m`: its own functions, those of the
    /// modules it uses directly (the world's own `RC_Core.rsl` among them, when it has
    /// one), then the natives (RC_Core's built-in functions only if it uses RC_Core).
    pub fn resolve_call(&self, m: ModuleId, key: &str) -> Result<Option<Callee<'_>>, String> {
        let Some(d) = self.decls(m) else {
            return Ok(None);
        };
        if let Some(&f) = d.funcs.get(key) {
            return Ok(self.funcs.get(f as usize).map(Callee::Func));
        }
        let mut found: Option<&FuncDecl> = None;
        for (u, _) in &d.uses {
            let Some(&um) = self.by_key.get(u) else {
                continue;
            };
            if let Some(&f) = self.decls(um).and_then(|x| x.funcs.get(key))
                && let Some(fd) = self.funcs.get(f as usize)
            {
                if let Some(prev) = found
                    && prev.id != fd.id
                {
                    return Err(format!(
                        "`{}` is defined by both {}.rsl and {}.rsl",
                        fd.name,
                        self.key_name(prev.module),
                        self.key_name(fd.module)
                    ));
                }
                found = Some(fd);
            }
        }
        if let Some(fd) = found {
            return Ok(Some(Callee::Func(fd)));
        }
        if let Some(n) = natives::lookup(key)
            && (!n.rc_core || d.uses_core)
        {
            return Ok(Some(Callee::Native(n)));
        }
        Ok(None)
    }

    fn key_name(&self, m: ModuleId) -> &str {
        self.keys.get(usize::from(m)).map_or("?", String::as_str)
    }
}

/// FNV-1a, 64 bits: a stable fingerprint across processes and machines.
pub(crate) fn fnv1a(seed: u64, bytes: &[u8]) -> u64 {
    let mut h = seed ^ 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The module key of a `Using` path: `"ProcessGlobals.rcm"` → `processglobals`.
fn using_key(path: &[u8]) -> String {
    let s: String = path.iter().map(|&b| char::from(b)).collect();
    let s = s.trim();
    let lower = s.to_ascii_lowercase();
    let stem = lower
        .strip_suffix(".rcm")
        .or_else(|| lower.strip_suffix(".rsl"))
        .unwrap_or(&lower);
    stem.to_owned()
}

/// Compile a set of scripts.
pub fn compile(files: &[SourceFile]) -> Compiled {
    let mut diags = Vec::new();
    // 1. Parse, one module per distinct key (sorted by key for stable ids).
    let mut sorted: Vec<&SourceFile> = files.iter().collect();
    sorted.sort_by_key(|f| (f.name.to_ascii_lowercase(), f.name.clone()));
    let mut parsed: Vec<(&SourceFile, String, ast::Module, bool)> = Vec::new();
    let mut seen = HashSet::new();
    for f in sorted {
        let key = f.name.to_ascii_lowercase();
        let file = format!("{}.rsl", f.name);
        if !seen.insert(key.clone()) {
            diags.push(Diagnostic::error(
                &file,
                Span::new(1, 1),
                format!(
                    "another script is already named `{}` (names are case-insensitive)",
                    f.name
                ),
            ));
            continue;
        }
        let (module, errors) = crate::parser::parse(&f.bytes);
        let ok = errors.is_empty();
        for e in errors {
            diags.push(Diagnostic::error(&file, e.span, e.message));
        }
        parsed.push((f, key, module, ok));
    }
    let mut set = ScriptSet::default();
    let keys: Vec<String> = parsed.iter().map(|p| p.1.clone()).collect();
    let by_key: HashMap<String, ModuleId> = keys
        .iter()
        .enumerate()
        .filter_map(|(i, k)| Some((k.clone(), ModuleId::try_from(i).ok()?)))
        .collect();
    if keys.len() > usize::from(ModuleId::MAX) {
        diags.push(Diagnostic::error(
            "(scripts)",
            Span::new(1, 1),
            "too many scripts",
        ));
        return Compiled {
            set,
            diagnostics: diags,
        };
    }

    // 2. Declare.
    let mut cx = SetCx {
        modules: Vec::new(),
        funcs: Vec::new(),
        keys: keys.clone(),
        by_key: by_key.clone(),
    };
    let mut module_ok: Vec<bool> = parsed.iter().map(|p| p.3).collect();
    for (mi, (f, key, module, _)) in parsed.iter().enumerate() {
        let file = format!("{}.rsl", f.name);
        let mid = ModuleId::try_from(mi).unwrap_or(ModuleId::MAX);
        let before = diags.len();
        let decls = declare(&file, mid, key, module, &mut cx.funcs, &mut diags);
        if has_error(&diags[before..])
            && let Some(o) = module_ok.get_mut(mi)
        {
            *o = false;
        }
        cx.modules.push(decls);
    }

    // The world's own `RC_Core.rsl`, when it has one, is what `Using "RC_Core.rcm"` means,
    // as Realm Crafter loads it: every script that uses RC_Core (all but RC_Core itself)
    // sees its functions, which take the place of the built-in ones of the same name;
    // built-in RC_Core functions it does not define stay available.
    if by_key.contains_key(RC_CORE) {
        for (d, key) in cx.modules.iter_mut().zip(&keys) {
            if key != RC_CORE && d.uses_core && !d.uses.iter().any(|(k, _)| k == RC_CORE) {
                d.uses.push((RC_CORE.to_owned(), Span::new(1, 1)));
                d.uses_written.push("RC_Core.rcm".to_owned());
            }
        }
    }

    // 3. Link: every Using resolves, no cycles; closures.
    let mut closures: Vec<Vec<ModuleId>> = Vec::with_capacity(parsed.len());
    for (mi, (f, _, _, _)) in parsed.iter().enumerate() {
        let file = format!("{}.rsl", f.name);
        let mid = ModuleId::try_from(mi).unwrap_or(ModuleId::MAX);
        let uses = cx.decls(mid).map(|d| d.uses.clone()).unwrap_or_default();
        let written = cx
            .decls(mid)
            .map(|d| d.uses_written.clone())
            .unwrap_or_default();
        for (i, (u, span)) in uses.iter().enumerate() {
            if !by_key.contains_key(u) {
                let w = written
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| format!("{u}.rcm"));
                let stem = w.rsplit_once('.').map_or(w.as_str(), |(s, _)| s).to_owned();
                diags.push(Diagnostic::error(
                    &file,
                    *span,
                    format!(
                        "module {w:?} not found: there is no {stem}.rsl in this Scripts folder"
                    ),
                ));
                if let Some(o) = module_ok.get_mut(mi) {
                    *o = false;
                }
            }
        }
        match closure_of(&cx, mid) {
            Ok(c) => closures.push(c),
            Err(cycle) => {
                let span = uses.first().map_or_else(|| Span::new(1, 1), |u| u.1);
                diags.push(Diagnostic::error(
                    &file,
                    span,
                    format!("Using cycle: {cycle}"),
                ));
                if let Some(o) = module_ok.get_mut(mi) {
                    *o = false;
                }
                closures.push(vec![mid]);
            }
        }
    }

    // Function names must not shadow what the module can already call.
    for (mi, (f, _, _, _)) in parsed.iter().enumerate() {
        let file = format!("{}.rsl", f.name);
        let mid = ModuleId::try_from(mi).unwrap_or(ModuleId::MAX);
        let Some(d) = cx.decls(mid) else { continue };
        let mut clashes = Vec::new();
        for (k, &fid) in &d.funcs {
            let Some(fd) = cx.funcs.get(fid as usize) else {
                continue;
            };
            if let Some(n) = natives::lookup(k)
                && (!n.rc_core || d.uses_core)
            {
                clashes.push((
                    fd.span,
                    format!(
                        "Function {} has the name of the command {}",
                        fd.name, n.name
                    ),
                ));
            }
            // A script's own function may share a name with one of the world's
            // `RC_Core.rsl` (which every script uses without asking): its own is called.
            for (u, _) in d.uses.iter().filter(|(u, _)| u != RC_CORE) {
                if let Some(&um) = by_key.get(u)
                    && cx.decls(um).is_some_and(|x| x.funcs.contains_key(k))
                {
                    clashes.push((
                        fd.span,
                        format!(
                            "Function {} is also defined by {}.rsl, which this script uses",
                            fd.name,
                            cx.key_name(um)
                        ),
                    ));
                }
            }
        }
        clashes.sort();
        for (span, msg) in clashes {
            diags.push(Diagnostic::error(&file, span, msg));
            if let Some(o) = module_ok.get_mut(mi) {
                *o = false;
            }
        }
    }

    // 4. Code generation.
    let mut funcs: Vec<Option<Func>> = vec![None; cx.funcs.len()];
    let mut main_programs: Vec<(ModuleId, Func)> = Vec::new();
    let mut strings = func::StringPool::default();
    for (mi, (f, _, module, _)) in parsed.iter().enumerate() {
        let file = format!("{}.rsl", f.name);
        let mid = ModuleId::try_from(mi).unwrap_or(ModuleId::MAX);
        let before = diags.len();
        let mut top_level = Vec::new();
        for item in &module.items {
            match item {
                Item::Function(fun) => {
                    let Some(&fid) = cx.decls(mid).and_then(|d| d.funcs.get(&fun.name.key()))
                    else {
                        continue;
                    };
                    let Some(decl) = cx.funcs.get(fid as usize) else {
                        continue;
                    };
                    if decl.span != fun.span {
                        continue; // a duplicate definition, already reported
                    }
                    let out = func::compile_function(
                        &cx,
                        mid,
                        &file,
                        decl,
                        &fun.body,
                        &mut strings,
                        &mut diags,
                    );
                    if let Some(slot) = funcs.get_mut(fid as usize) {
                        *slot = Some(out);
                    }
                }
                Item::Stmt(s) => top_level.push(s.clone()),
                Item::Global(vars) => {
                    let consts = cx.decls(mid).map(|d| &d.consts);
                    for v in vars {
                        if let (Some(e), Some(consts)) = (&v.init, consts)
                            && const_eval(e, consts).is_none()
                        {
                            top_level.push(ast::Stmt {
                                kind: ast::StmtKind::Assign {
                                    target: ast::LValue::Var(v.name.clone()),
                                    value: e.clone(),
                                },
                                span: e.span,
                            });
                        }
                    }
                }
                _ => {}
            }
        }
        // The module's main program (its top-level statements, and the Globals whose
        // initial values are not constants): BriskVM runs it when an instance maps the
        // module (Realm Crafter's `BVM_MapModule`), before the function started.
        if let Some(first) = top_level.first() {
            let main = FuncDecl {
                id: FuncId::MAX,
                module: mid,
                name: MAIN_PROGRAM.into(),
                params: Vec::new(),
                ret: Ty::Int,
                span: first.span,
            };
            let f = func::compile_function(
                &cx,
                mid,
                &file,
                &main,
                &top_level,
                &mut strings,
                &mut diags,
            );
            main_programs.push((mid, f));
        }
        if has_error(&diags[before..])
            && let Some(o) = module_ok.get_mut(mi)
        {
            *o = false;
        }
    }

    // A module is runnable only if everything in its closure is.
    let ok_final: Vec<bool> = closures
        .iter()
        .map(|c| {
            c.iter()
                .all(|&m| module_ok.get(usize::from(m)).copied().unwrap_or(false))
        })
        .collect();

    for (mi, ((f, key, _, _), decls)) in parsed.iter().zip(cx.modules.iter()).enumerate() {
        let hash = fnv1a(u64::from(COMPILER_VERSION), &f.bytes);
        set.modules.push(ModuleInfo {
            name: f.name.clone(),
            key: key.clone(),
            file: format!("{}.rsl", f.name),
            hash,
            ok: ok_final.get(mi).copied().unwrap_or(false),
            globals: decls.global_list.clone(),
            arrays: decls.array_list.clone(),
            funcs: decls.funcs.clone(),
            closure: closures.get(mi).cloned().unwrap_or_default(),
            main: None,
        });
    }
    set.funcs = funcs
        .into_iter()
        .zip(cx.funcs.iter())
        .map(|(f, d)| {
            f.unwrap_or_else(|| Func {
                module: d.module,
                name: d.name.clone(),
                key: d.name.to_ascii_lowercase(),
                params: d.params.clone(),
                ret: d.ret,
                locals: d.params.iter().map(|p| p.ty).collect(),
                nregs: u16::try_from(d.params.len()).unwrap_or(u16::MAX),
                code: vec![crate::bytecode::Op::End],
                lines: vec![d.span.line],
            })
        })
        .collect();
    for (mid, f) in main_programs {
        let Ok(id) = FuncId::try_from(set.funcs.len()) else {
            continue;
        };
        set.funcs.push(f);
        if let Some(m) = set.modules.get_mut(usize::from(mid)) {
            m.funcs.insert(MAIN_PROGRAM.to_owned(), id);
            m.main = Some(id);
        }
    }
    set.strings = strings.into_vec();
    set.by_key = by_key;
    diags.sort();
    diags.dedup();
    Compiled {
        set,
        diagnostics: diags,
    }
}

fn has_error(d: &[Diagnostic]) -> bool {
    d.iter().any(|d| d.severity == Severity::Error)
}

/// Itself plus every module reachable by `Using`, or the cycle found.
fn closure_of(cx: &SetCx, start: ModuleId) -> Result<Vec<ModuleId>, String> {
    let mut out = Vec::new();
    let mut path = Vec::new();
    let mut done = HashSet::new();
    visit(cx, start, &mut path, &mut done, &mut out)?;
    out.sort_unstable();
    Ok(out)
}

fn visit(
    cx: &SetCx,
    m: ModuleId,
    path: &mut Vec<ModuleId>,
    done: &mut HashSet<ModuleId>,
    out: &mut Vec<ModuleId>,
) -> Result<(), String> {
    if path.contains(&m) {
        let mut names: Vec<&str> = path
            .iter()
            .skip_while(|&&p| p != m)
            .map(|&p| cx.key_name(p))
            .collect();
        names.push(cx.key_name(m));
        return Err(names.join(" → "));
    }
    if !done.insert(m) {
        return Ok(());
    }
    out.push(m);
    path.push(m);
    let uses: Vec<ModuleId> = cx
        .decls(m)
        .map(|d| {
            d.uses
                .iter()
                .filter_map(|(u, _)| cx.by_key.get(u).copied())
                .collect()
        })
        .unwrap_or_default();
    for u in uses {
        visit(cx, u, path, done, out)?;
    }
    path.pop();
    Ok(())
}

/// A new top-level name: its key and its tag's type; a duplicate or an object tag is
/// reported instead.
fn new_name(
    names: &mut HashSet<String>,
    id: &ast::Ident,
    err: &mut impl FnMut(Span, String),
) -> Option<(String, Option<Ty>)> {
    let k = id.key();
    if !names.insert(k.clone()) {
        err(id.span, format!("`{}` is already declared", id.name));
        return None;
    }
    match tag_ty(&id.tag) {
        Ok(t) => Some((k, t)),
        Err(m) => {
            err(id.span, m);
            None
        }
    }
}

/// Phase 2 for one module.
fn declare(
    file: &str,
    mid: ModuleId,
    key: &str,
    module: &ast::Module,
    funcs: &mut Vec<FuncDecl>,
    diags: &mut Vec<Diagnostic>,
) -> ModuleDecls {
    let mut d = ModuleDecls {
        uses_core: key != RC_CORE,
        ..ModuleDecls::default()
    };
    if module.directives.alt_syntax {
        diags.push(Diagnostic::error(
            file,
            Span::new(1, 1),
            "!ALTSYNTAX scripts are not supported (use the classic Blitz syntax)",
        ));
    }
    let mut err = |span: Span, msg: String| diags.push(Diagnostic::error(file, span, msg));
    let mut names: HashSet<String> = HashSet::new();
    for item in &module.items {
        match item {
            Item::Using { path, span } => {
                let u = using_key(path);
                if u.is_empty() {
                    err(*span, "empty module name in Using".into());
                } else if u == RC_CORE {
                    if key == RC_CORE {
                        err(*span, "RC_Core cannot use itself".into());
                    }
                    d.uses_core = true;
                } else if u == key {
                    err(*span, "a script cannot use itself".into());
                } else if !d.uses.iter().any(|(k, _)| *k == u) {
                    let written: String = path.iter().map(|&b| char::from(b)).collect();
                    d.uses_written.push(written.trim().to_owned());
                    d.uses.push((u, *span));
                }
            }
            Item::Include { span, .. } => err(
                *span,
                "Include is not supported: put shared functions in a module and use it with Using"
                    .into(),
            ),
            Item::Type { span, .. } => err(
                *span,
                "Blitz Types (Type … End Type) are not supported".into(),
            ),
            Item::Const(vars) => {
                for v in vars {
                    let Some((k, tag)) = new_name(&mut names, &v.name, &mut err) else {
                        continue;
                    };
                    let Some(init) = &v.init else {
                        err(v.name.span, format!("Const {} needs a value", v.name.name));
                        continue;
                    };
                    match const_eval(init, &d.consts) {
                        Some(Ok(val)) => {
                            let val = match tag {
                                Some(t) => val.convert(t),
                                None => val,
                            };
                            d.consts.insert(k, val);
                        }
                        Some(Err(m)) => err(init.span, m),
                        None => err(
                            init.span,
                            format!(
                                "the value of Const {} must be a constant expression",
                                v.name.name
                            ),
                        ),
                    }
                }
            }
            Item::Global(vars) => {
                for v in vars {
                    let Some((k, tag)) = new_name(&mut names, &v.name, &mut err) else {
                        continue;
                    };
                    let init = match &v.init {
                        None => None,
                        Some(e) => match const_eval(e, &d.consts) {
                            Some(Ok(val)) => Some(val),
                            Some(Err(m)) => {
                                err(e.span, m);
                                continue;
                            }
                            // Not a constant (`Global Start = MilliSecs()`): the Global
                            // starts at zero and the module's main program assigns it when
                            // an instance is created, in its place among the top-level
                            // statements (as BriskVM runs it).
                            None => None,
                        },
                    };
                    // BriskVM's inference: an untagged Global takes its initialiser's type.
                    let ty = tag
                        .or_else(|| init.as_ref().map(Value::ty))
                        .unwrap_or(Ty::Int);
                    let init = init.map_or_else(|| ty.zero(), |v| v.convert(ty));
                    let Ok(slot) = u16::try_from(d.global_list.len()) else {
                        err(v.name.span, "too many Globals".into());
                        continue;
                    };
                    d.globals.insert(k, (slot, ty));
                    d.global_list.push(GlobalInfo {
                        name: v.name.name.clone(),
                        init,
                    });
                }
            }
            Item::Dim(arrays) => {
                for a in arrays {
                    let Some((k, tag)) = new_name(&mut names, &a.name, &mut err) else {
                        continue;
                    };
                    let ty = tag.unwrap_or(Ty::Int);
                    let mut dims = Vec::new();
                    let mut bad = false;
                    for e in &a.dims {
                        match const_eval(e, &d.consts) {
                            Some(Ok(v)) => match u32::try_from(v.to_int()) {
                                Ok(n) => dims.push(n),
                                Err(_) => {
                                    err(e.span, "an array bound cannot be negative".into());
                                    bad = true;
                                }
                            },
                            Some(Err(m)) => {
                                err(e.span, m);
                                bad = true;
                            }
                            None => {
                                err(e.span, "a top-level Dim needs constant bounds".into());
                                bad = true;
                            }
                        }
                    }
                    if bad {
                        continue;
                    }
                    if dims.is_empty() {
                        err(a.name.span, "Dim needs at least one bound".into());
                        continue;
                    }
                    if let Err(m) = crate::vm::array_len(&dims) {
                        err(a.name.span, m);
                        continue;
                    }
                    let Ok(slot) = u16::try_from(d.array_list.len()) else {
                        err(a.name.span, "too many arrays".into());
                        continue;
                    };
                    d.arrays.insert(k, (slot, ty, dims.len()));
                    d.array_list.push(ArrayInfo {
                        name: a.name.name.clone(),
                        ty,
                        dims,
                    });
                }
            }
            Item::Function(f) => {
                let k = f.name.key();
                let ret = match tag_ty(&f.name.tag) {
                    Ok(t) => t.unwrap_or(Ty::Int),
                    Err(m) => {
                        err(f.name.span, m);
                        continue;
                    }
                };
                if d.funcs.contains_key(&k) {
                    err(f.span, format!("Function {} is defined twice", f.name.name));
                    continue;
                }
                let mut params = Vec::new();
                let mut seen_p = HashSet::new();
                let mut bad = false;
                let mut had_default = false;
                for p in &f.params {
                    let ty = match tag_ty(&p.name.tag) {
                        Ok(t) => t.unwrap_or(Ty::Int),
                        Err(m) => {
                            err(p.name.span, m);
                            bad = true;
                            continue;
                        }
                    };
                    if !seen_p.insert(p.name.key()) {
                        err(
                            p.name.span,
                            format!("parameter {} appears twice", p.name.name),
                        );
                        bad = true;
                    }
                    let default = match &p.default {
                        None => {
                            if had_default {
                                err(
                                    p.name.span,
                                    format!(
                                        "parameter {} needs a default: an earlier one has one",
                                        p.name.name
                                    ),
                                );
                                bad = true;
                            }
                            None
                        }
                        Some(e) => {
                            had_default = true;
                            match const_eval(e, &d.consts) {
                                Some(Ok(v)) => Some(v.convert(ty)),
                                Some(Err(m)) => {
                                    err(e.span, m);
                                    bad = true;
                                    None
                                }
                                None => {
                                    err(e.span, "a parameter default must be a constant".into());
                                    bad = true;
                                    None
                                }
                            }
                        }
                    };
                    params.push(ParamInfo {
                        name: p.name.name.clone(),
                        ty,
                        default,
                    });
                }
                if bad {
                    continue;
                }
                let Ok(id) = FuncId::try_from(funcs.len()) else {
                    err(f.span, "too many functions".into());
                    continue;
                };
                funcs.push(FuncDecl {
                    id,
                    module: mid,
                    name: f.name.name.clone(),
                    params,
                    ret,
                    span: f.span,
                });
                d.funcs.insert(k, id);
            }
            Item::Stmt(_) => {}
        }
    }
    d
}

/// The strings of a compiled set, for tests and tools.
pub fn string_constant(set: &ScriptSet, k: u32) -> RStr {
    set.strings.get(k as usize).cloned().unwrap_or_default()
}
