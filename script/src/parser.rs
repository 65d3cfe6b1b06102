//! The RSL parser: bytes of one `.rsl` file to an [`ast::Module`](crate::ast::Module).
//!
//! Recursive descent over the tokens of [`crate::lexer`], following `rsl-language.md`
//! §7–8 and, where the spec is silent, the BlitzPlus compiler (`parser.cpp`) that BriskVM
//! copies:
//!
//! * statements end at `:` or end of line; a block-closing keyword (`Wend`, `EndIf`,
//!   `Next`, ...) may also follow a statement on its line, as in Blitz;
//! * `If` is a block If when the token after its condition (and optional `Then`) ends the
//!   statement (`:` or end of line), otherwise the rest of the line is its body;
//! * a call statement `name (...)` uses the parentheses as its argument list only when the
//!   matching `)` ends the statement (§8.2);
//! * Blitz Types and BriskVM class syntax are parsed into `Unsupported` nodes for the
//!   compiler to reject with a clear message.
//!
//! Errors never stop the parse early (except past [`MAX_ERRORS`] errors or when nesting
//! exceeds [`MAX_DEPTH`]): each is recorded and the parser skips to the next line, so one
//! file reports several. Nothing here panics, whatever the input, and the work is linear
//! in the input's size.

use crate::ast::{
    ArrayDecl, BinOp, Case, Expr, ExprKind, Function, Ident, Item, LValue, Module, Param, Span,
    Stmt, StmtKind, UnOp, VarDecl,
};
use crate::error::ParseError;
use crate::lexer::{self, Kw, Tok, Token};
use crate::source;

/// How deeply blocks and expressions may nest before the parse stops with "nested too
/// deeply" (instead of overflowing the stack).
pub const MAX_DEPTH: u32 = 256;

/// How many errors one file may report before the parser gives up on it.
pub const MAX_ERRORS: usize = 100;

/// Parse one file (raw bytes as read from disk): the loader's preprocessing, then the
/// lexer, then the parser. Returns the module (complete only when there are no errors)
/// and every error found, in source order.
pub fn parse(bytes: &[u8]) -> (Module, Vec<ParseError>) {
    let prepared = source::prepare(bytes);
    let (toks, mut errors) = lexer::lex(&prepared);
    let mut p = Parser {
        toks: &toks,
        pos: 0,
        errors: Vec::new(),
        depth: 0,
        open: Vec::new(),
        aborted: false,
    };
    let items = p.module();
    errors.append(&mut p.errors);
    errors.sort_by_key(|e| e.span);
    if errors.len() > MAX_ERRORS {
        errors.truncate(MAX_ERRORS);
        let span = errors.last().map(|e| e.span).unwrap_or_default();
        errors.push(ParseError::new(
            span,
            format!(
                "too many errors (more than {MAX_ERRORS}); the rest of the file was not checked"
            ),
        ));
    }
    let module = Module {
        directives: prepared.directives,
        items,
    };
    (module, errors)
}

/// Why a parse function returned without a result (the error is already recorded).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fail {
    /// The caller skips the rest of the line.
    Skip,
    /// The callee has already recovered (consumed a whole construct): nothing to skip.
    Recovered,
}

type PResult<T> = Result<T, Fail>;

/// A construct whose block is being parsed: it decides which closing keywords end the
/// inner blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Open {
    /// A block `If`: `Else`, `ElseIf`, `EndIf`.
    If,
    /// A single-line `If`: `Else`, `ElseIf` (and the end of the line).
    LineIf,
    /// `Wend`.
    While,
    /// `Until`, `Forever`.
    Repeat,
    /// `Next`.
    For,
    /// `Case`, `Default`, `End Select`.
    Select,
    /// `End Function`.
    Function,
}

impl Open {
    fn accepts(self, kw: Kw) -> bool {
        match self {
            Open::If => matches!(kw, Kw::Else | Kw::ElseIf | Kw::EndIf),
            Open::LineIf => matches!(kw, Kw::Else | Kw::ElseIf),
            Open::While => kw == Kw::Wend,
            Open::Repeat => matches!(kw, Kw::Until | Kw::Forever),
            Open::For => kw == Kw::Next,
            Open::Select => matches!(kw, Kw::Case | Kw::Default | Kw::EndSelect),
            Open::Function => kw == Kw::EndFunction,
        }
    }
}

/// Keywords that close (or continue) a block and so end the statement before them.
fn is_closer(kw: Kw) -> bool {
    matches!(
        kw,
        Kw::Else
            | Kw::ElseIf
            | Kw::EndIf
            | Kw::Wend
            | Kw::Until
            | Kw::Forever
            | Kw::Next
            | Kw::Case
            | Kw::Default
            | Kw::EndSelect
            | Kw::EndFunction
            | Kw::EndType
            | Kw::EndMethod
    )
}

/// What a stray closing keyword should have followed.
fn opener_of(kw: Kw) -> &'static str {
    match kw {
        Kw::Else | Kw::ElseIf | Kw::EndIf => "If",
        Kw::Wend => "While",
        Kw::Until | Kw::Forever => "Repeat",
        Kw::Next => "For",
        Kw::Case | Kw::Default | Kw::EndSelect => "Select",
        Kw::EndFunction => "Function",
        Kw::EndType => "Type",
        Kw::EndMethod => "Method",
        _ => "its block",
    }
}

/// A token that ends a statement: `:`, end of line or file, or a closing keyword.
fn ends_stmt(tok: &Tok) -> bool {
    match tok {
        Tok::Colon | Tok::Newline | Tok::Eof => true,
        Tok::Kw(kw) => is_closer(*kw),
        _ => false,
    }
}

/// A token that ends a line-level statement list: `:`, end of line or file.
fn is_term(tok: &Tok) -> bool {
    matches!(tok, Tok::Colon | Tok::Newline | Tok::Eof)
}

/// A token that can start an expression.
fn starts_expr(tok: &Tok) -> bool {
    match tok {
        Tok::Int(_)
        | Tok::Float(_)
        | Tok::Str(_)
        | Tok::Ident { .. }
        | Tok::LParen
        | Tok::Minus
        | Tok::Plus => true,
        Tok::Kw(kw) => matches!(
            kw,
            Kw::Not
                | Kw::True
                | Kw::False
                | Kw::Null
                | Kw::New
                | Kw::First
                | Kw::Last
                | Kw::Before
                | Kw::After
                | Kw::Self_
                | Kw::Super
        ),
        _ => false,
    }
}

/// A token that can start a statement.
fn starts_stmt(tok: &Tok) -> bool {
    match tok {
        Tok::Ident { .. } | Tok::Dot | Tok::Other(b'@') => true,
        Tok::Kw(kw) => !is_closer(*kw) && !is_expr_only(*kw),
        _ => false,
    }
}

/// Keywords that only appear inside expressions or other statements.
fn is_expr_only(kw: Kw) -> bool {
    matches!(
        kw,
        Kw::Then
            | Kw::To
            | Kw::Step
            | Kw::Each
            | Kw::EachIn
            | Kw::New
            | Kw::First
            | Kw::Last
            | Kw::Before
            | Kw::After
            | Kw::Null
            | Kw::True
            | Kw::False
            | Kw::And
            | Kw::Or
            | Kw::Xor
            | Kw::Not
            | Kw::Mod
            | Kw::Shl
            | Kw::Shr
            | Kw::Self_
            | Kw::Super
            | Kw::Ref
    )
}

/// The binary operator a token stands for, with its precedence level (§7: 2 is
/// `And Or Xor`, 7 is `^`).
fn binop(tok: &Tok) -> Option<(BinOp, u8)> {
    Some(match tok {
        Tok::Kw(Kw::And) => (BinOp::And, 2),
        Tok::Kw(Kw::Or) => (BinOp::Or, 2),
        Tok::Kw(Kw::Xor) => (BinOp::Xor, 2),
        Tok::Eq => (BinOp::Eq, 3),
        Tok::Ne => (BinOp::Ne, 3),
        Tok::Lt => (BinOp::Lt, 3),
        Tok::Gt => (BinOp::Gt, 3),
        Tok::Le => (BinOp::Le, 3),
        Tok::Ge => (BinOp::Ge, 3),
        Tok::Plus => (BinOp::Add, 4),
        Tok::Minus => (BinOp::Sub, 4),
        Tok::Kw(Kw::Shl) => (BinOp::Shl, 5),
        Tok::Kw(Kw::Shr) => (BinOp::Shr, 5),
        Tok::Star => (BinOp::Mul, 6),
        Tok::Slash => (BinOp::Div, 6),
        Tok::Kw(Kw::Mod) => (BinOp::Mod, 6),
        Tok::Caret => (BinOp::Pow, 7),
        _ => return None,
    })
}

/// How a statement list ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Across lines, up to a closing keyword.
    Block,
    /// The rest of the line (a single-line `If`).
    Line,
}

/// The end token every token list has; used when a position runs past the list.
static EOF: Tok = Tok::Eof;

/// The parser's state over one file's tokens.
struct Parser<'t> {
    toks: &'t [Token],
    pos: usize,
    errors: Vec<ParseError>,
    depth: u32,
    open: Vec<Open>,
    /// Too many errors or too deep: stop as fast as possible.
    aborted: bool,
}

impl<'t> Parser<'t> {
    // ----------------------------------------------------------------------------------
    // Token access.

    fn peek(&self) -> &'t Tok {
        self.toks.get(self.pos).map_or(&EOF, |t| &t.tok)
    }

    fn peek_at(&self, n: usize) -> &'t Tok {
        self.toks.get(self.pos + n).map_or(&EOF, |t| &t.tok)
    }

    fn kw(&self) -> Option<Kw> {
        match self.peek() {
            Tok::Kw(kw) => Some(*kw),
            _ => None,
        }
    }

    fn span(&self) -> Span {
        self.toks
            .get(self.pos)
            .or_else(|| self.toks.last())
            .map(|t| t.span)
            .unwrap_or_default()
    }

    /// Move to the next token (never past the end).
    fn bump(&mut self) {
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
    }

    fn eat(&mut self, kw: Kw) -> bool {
        if self.kw() == Some(kw) {
            self.bump();
            true
        } else {
            false
        }
    }

    /// Skip to the end of the line (the newline token stays).
    fn skip_line(&mut self) {
        while !matches!(self.peek(), Tok::Newline | Tok::Eof) {
            self.bump();
        }
    }

    /// Skip to the end of the statement (`:` or end of line; the terminator stays).
    fn skip_stmt(&mut self) {
        while !is_term(self.peek()) {
            self.bump();
        }
    }

    // ----------------------------------------------------------------------------------
    // Errors and nesting.

    /// Record an error at a position.
    fn error_at(&mut self, span: Span, message: impl Into<String>) -> Fail {
        self.errors.push(ParseError::new(span, message));
        if self.errors.len() >= MAX_ERRORS {
            self.aborted = true;
        }
        Fail::Skip
    }

    /// Record an error at the current token.
    fn error(&mut self, message: impl Into<String>) -> Fail {
        let span = self.span();
        self.error_at(span, message)
    }

    /// Record "expected X, found Y" at the current token.
    fn expected(&mut self, what: &str) -> Fail {
        let found = self.peek().describe();
        self.error(format!("expected {what}, found {found}"))
    }

    /// Run `f` one nesting level deeper; past [`MAX_DEPTH`] the whole parse stops.
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> PResult<T>) -> PResult<T> {
        if self.aborted {
            return Err(Fail::Recovered);
        }
        if self.depth >= MAX_DEPTH {
            self.error(format!(
                "nested too deeply (more than {MAX_DEPTH} levels of blocks and parentheses)"
            ));
            self.aborted = true;
            return Err(Fail::Recovered);
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }

    /// Run `f` with a construct open (for the closing keywords of the blocks inside).
    fn with_open<T>(&mut self, open: Open, f: impl FnOnce(&mut Self) -> T) -> T {
        self.open.push(open);
        let r = f(self);
        self.open.pop();
        r
    }

    /// Whether an open construct accepts this closing keyword.
    fn accepted(&self, kw: Kw) -> bool {
        self.open.iter().any(|o| o.accepts(kw))
    }

    /// After a statement: it must end here (`:`, end of line, a closing keyword).
    fn end_of_stmt(&mut self) {
        if !ends_stmt(self.peek()) {
            self.expected("end of line or `:` after the statement");
            self.skip_line();
        }
    }

    /// An identifier with its tag.
    fn ident(&mut self, what: &str) -> PResult<Ident> {
        match self.peek() {
            Tok::Ident { name, tag } => {
                let id = Ident {
                    name: name.clone(),
                    tag: tag.clone(),
                    span: self.span(),
                };
                self.bump();
                Ok(id)
            }
            _ => Err(self.expected(what)),
        }
    }

    /// Expect a token (by equality).
    fn expect(&mut self, tok: &Tok, what: &str) -> PResult<()> {
        if self.peek() == tok {
            self.bump();
            Ok(())
        } else {
            Err(self.expected(what))
        }
    }

    // ----------------------------------------------------------------------------------
    // Top level.

    fn module(&mut self) -> Vec<Item> {
        let mut items = Vec::new();
        while !self.aborted {
            match self.peek() {
                Tok::Colon | Tok::Newline => {
                    self.bump();
                    continue;
                }
                Tok::Eof => break,
                Tok::Kw(Kw::Function) => {
                    if let Some(f) = self.function() {
                        items.push(Item::Function(f));
                    }
                    continue;
                }
                Tok::Kw(kw) if is_closer(*kw) => {
                    self.stray(*kw);
                    continue;
                }
                _ => {}
            }
            match self.top_item() {
                Ok(item) => {
                    items.push(item);
                    self.end_of_stmt();
                }
                Err(Fail::Skip) => self.skip_line(),
                Err(Fail::Recovered) => {}
            }
        }
        items
    }

    /// A closing keyword nobody is waiting for.
    fn stray(&mut self, kw: Kw) {
        self.error(format!("`{}` without `{}`", kw.text(), opener_of(kw)));
        self.skip_line();
    }

    fn top_item(&mut self) -> PResult<Item> {
        let span = self.span();
        match self.kw() {
            Some(Kw::Using) => {
                self.bump();
                let path = self.string("a quoted module name after `Using`")?;
                Ok(Item::Using { path, span })
            }
            Some(Kw::Include) => {
                self.bump();
                let path = self.string("a quoted file name after `Include`")?;
                Ok(Item::Include { path, span })
            }
            Some(Kw::Type) => {
                let name = self.type_block();
                name.map(|name| Item::Type { name, span })
            }
            _ => {
                let stmt = self.stmt()?;
                Ok(match stmt.kind {
                    StmtKind::Global(v) => Item::Global(v),
                    StmtKind::Const(v) => Item::Const(v),
                    StmtKind::Dim(v) => Item::Dim(v),
                    kind => Item::Stmt(Stmt { kind, span }),
                })
            }
        }
    }

    fn string(&mut self, what: &str) -> PResult<Vec<u8>> {
        match self.peek() {
            Tok::Str(s) => {
                self.bump();
                Ok(s.clone())
            }
            _ => Err(self.expected(what)),
        }
    }

    /// `Type Name ... End Type`: the block is skipped (Blitz Types are not supported).
    /// Returns the name, or `Err(Recovered)` after an error.
    fn type_block(&mut self) -> PResult<Ident> {
        let open_span = self.span();
        self.bump();
        let name = self.ident("a type name after `Type`");
        if name.is_err() {
            self.skip_line();
        }
        while !matches!(self.peek(), Tok::Kw(Kw::EndType) | Tok::Eof) {
            self.bump();
        }
        if self.eat(Kw::EndType) {
            self.end_of_stmt();
        } else {
            let what = name.as_ref().map(|n| n.name.as_str()).unwrap_or("");
            self.error(format!(
                "`End Type` missing for Type {what} opened at {open_span}"
            ));
        }
        name.map_err(|_| Fail::Recovered)
    }

    /// `Function Name[tag](params) ... End Function`. Errors are recorded; `None` when
    /// the function is unusable.
    fn function(&mut self) -> Option<Function> {
        let span = self.span();
        self.bump();
        let header = self.function_header();
        if header.is_err() {
            self.skip_line();
        }
        let body = self.nested(|p| Ok(p.with_open(Open::Function, |p| p.block(Mode::Block))));
        let Ok(mut body) = body else {
            return None;
        };
        let name_text = header
            .as_ref()
            .map(|(n, _, _)| n.name.clone())
            .unwrap_or_default();
        if self.eat(Kw::EndFunction) {
            self.end_of_stmt();
        } else {
            self.error(format!(
                "`End Function` missing for Function {name_text} opened at {span}"
            ));
            return None;
        }
        let (name, params, by_ref) = header.ok()?;
        if let Some(ref_span) = by_ref {
            body.insert(
                0,
                Stmt {
                    kind: StmtKind::Unsupported {
                        what: "BriskVM by-reference parameters (Ref)".to_owned(),
                    },
                    span: ref_span,
                },
            );
        }
        Some(Function {
            name,
            params,
            body,
            span,
        })
    }

    /// The name and parameters of a function, and where a `Ref` parameter was written.
    fn function_header(&mut self) -> PResult<(Ident, Vec<Param>, Option<Span>)> {
        let name = self.ident("a function name after `Function`")?;
        self.expect(&Tok::LParen, "`(` after the function name")?;
        let mut params = Vec::new();
        let mut by_ref = None;
        if *self.peek() != Tok::RParen {
            loop {
                if self.kw() == Some(Kw::Ref) {
                    by_ref.get_or_insert_with(|| self.span());
                    self.bump();
                }
                let name = self.ident("a parameter name")?;
                let default = if *self.peek() == Tok::Eq {
                    self.bump();
                    Some(self.expr()?)
                } else {
                    None
                };
                params.push(Param { name, default });
                if *self.peek() == Tok::Comma {
                    self.bump();
                } else {
                    break;
                }
            }
        }
        self.expect(&Tok::RParen, "`,` or `)` in the parameter list")?;
        Ok((name, params, by_ref))
    }

    // ----------------------------------------------------------------------------------
    // Blocks and statements.

    /// A statement list up to a closing keyword (block mode) or the end of the line (line
    /// mode). Errors inside are recorded and skipped.
    fn block(&mut self, mode: Mode) -> Vec<Stmt> {
        let mut out = Vec::new();
        while !self.aborted {
            match self.peek() {
                Tok::Colon => {
                    self.bump();
                    continue;
                }
                Tok::Newline if mode == Mode::Block => {
                    self.bump();
                    continue;
                }
                Tok::Newline | Tok::Eof | Tok::Kw(Kw::Function) => break,
                Tok::Kw(kw) if is_closer(*kw) => {
                    if self.accepted(*kw) {
                        break;
                    }
                    self.stray(*kw);
                    continue;
                }
                _ => {}
            }
            match self.stmt() {
                Ok(s) => {
                    out.push(s);
                    self.end_of_stmt();
                }
                Err(Fail::Skip) => self.skip_line(),
                Err(Fail::Recovered) => {}
            }
        }
        out
    }

    fn stmt(&mut self) -> PResult<Stmt> {
        let span = self.span();
        let kind = match self.peek() {
            Tok::Ident { .. } => self.ident_stmt()?,
            Tok::Kw(kw) => self.keyword_stmt(*kw)?,
            Tok::Dot => {
                return Err(self.error("labels (`.name`) are not supported"));
            }
            Tok::Other(b'@') => self.unsupported_line("BriskVM annotations (@)"),
            _ => return Err(self.expected("a statement")),
        };
        Ok(Stmt { kind, span })
    }

    /// Skip the rest of a statement that the port does not support.
    fn unsupported_line(&mut self, what: &str) -> StmtKind {
        self.skip_stmt();
        StmtKind::Unsupported {
            what: what.to_owned(),
        }
    }

    fn keyword_stmt(&mut self, kw: Kw) -> PResult<StmtKind> {
        Ok(match kw {
            Kw::If => return self.if_stmt(),
            Kw::While => return self.while_stmt(),
            Kw::Repeat => return self.repeat_stmt(),
            Kw::For => return self.for_stmt(),
            Kw::Select => return self.select_stmt(),
            Kw::Exit => {
                self.bump();
                StmtKind::Exit
            }
            Kw::End => {
                self.bump();
                StmtKind::End
            }
            Kw::Return => {
                self.bump();
                if *self.peek() == Tok::LParen && *self.peek_at(1) == Tok::RParen {
                    self.bump();
                    self.bump();
                    StmtKind::Return(None)
                } else if starts_expr(self.peek()) {
                    StmtKind::Return(Some(self.expr()?))
                } else {
                    StmtKind::Return(None)
                }
            }
            Kw::Local | Kw::Global | Kw::Const => {
                self.bump();
                let (decls, vector) = self.var_decls(kw)?;
                if vector {
                    StmtKind::Unsupported {
                        what: "Blitz arrays (name[size])".to_owned(),
                    }
                } else if kw == Kw::Local {
                    StmtKind::Local(decls)
                } else if kw == Kw::Global {
                    StmtKind::Global(decls)
                } else {
                    StmtKind::Const(decls)
                }
            }
            Kw::Dim => {
                self.bump();
                StmtKind::Dim(self.array_decls()?)
            }
            Kw::Delete => {
                self.bump();
                if self.eat(Kw::Each) {
                    self.ident("a type name after `Delete Each`")?;
                } else {
                    self.expr()?;
                }
                StmtKind::Unsupported {
                    what: "Blitz Types (Delete)".to_owned(),
                }
            }
            Kw::Insert => {
                self.bump();
                self.expr()?;
                if !(self.eat(Kw::Before) || self.eat(Kw::After)) {
                    return Err(self.expected("`Before` or `After` in `Insert`"));
                }
                self.expr()?;
                StmtKind::Unsupported {
                    what: "Blitz Types (Insert)".to_owned(),
                }
            }
            Kw::Include => {
                self.bump();
                self.string("a quoted file name after `Include`")?;
                StmtKind::Unsupported {
                    what: "Include inside a block".to_owned(),
                }
            }
            Kw::Using => {
                return Err(self.error("`Using` can only appear at the top level of a file"));
            }
            Kw::Type => {
                let span = self.span();
                self.error_at(span, "`Type` can only appear at the top level of a file");
                let _ = self.type_block();
                return Err(Fail::Recovered);
            }
            Kw::Function => {
                return Err(self.error("`Function` can only appear at the top level of a file"));
            }
            Kw::Method => {
                let open_span = self.span();
                while !matches!(self.peek(), Tok::Kw(Kw::EndMethod) | Tok::Eof) {
                    self.bump();
                }
                if !self.eat(Kw::EndMethod) {
                    self.error(format!(
                        "`End Method` missing for Method opened at {open_span}"
                    ));
                    return Err(Fail::Recovered);
                }
                StmtKind::Unsupported {
                    what: "BriskVM classes (Method)".to_owned(),
                }
            }
            Kw::Try | Kw::Catch | Kw::Finally | Kw::EndTry | Kw::Throw => {
                let what = format!("BriskVM exceptions ({})", kw.text());
                self.unsupported_line(&what)
            }
            Kw::Assert => self.unsupported_line("BriskVM assertions (Assert)"),
            Kw::Property | Kw::EndProperty => {
                let what = format!("BriskVM properties ({})", kw.text());
                self.unsupported_line(&what)
            }
            Kw::Public | Kw::Private | Kw::Protected | Kw::Friendly => {
                let what = format!("BriskVM access modifiers ({})", kw.text());
                self.unsupported_line(&what)
            }
            Kw::Inner | Kw::EndInner => {
                let what = format!("BriskVM inner blocks ({})", kw.text());
                self.unsupported_line(&what)
            }
            Kw::Field => return Err(self.error("`Field` outside a `Type` block")),
            _ => return Err(self.expected("a statement")),
        })
    }

    /// `Local`, `Global` or `Const` declarations; also says whether a Blitz array
    /// (`name[size]`) was declared.
    fn var_decls(&mut self, kw: Kw) -> PResult<(Vec<VarDecl>, bool)> {
        let mut decls = Vec::new();
        let mut vector = false;
        loop {
            let name = self.ident(&format!("a variable name after `{}`", kw.text()))?;
            if *self.peek() == Tok::LBracket {
                self.bump();
                self.expr()?;
                self.expect(&Tok::RBracket, "`]`")?;
                vector = true;
            }
            let init = if *self.peek() == Tok::Eq {
                self.bump();
                Some(self.expr()?)
            } else {
                None
            };
            if kw == Kw::Const && init.is_none() && !vector {
                return Err(self.error_at(
                    name.span,
                    format!("the constant `{}` needs a value (`= ...`)", name.name),
                ));
            }
            decls.push(VarDecl { name, init });
            if *self.peek() == Tok::Comma {
                self.bump();
            } else {
                return Ok((decls, vector));
            }
        }
    }

    /// `Dim a(d1, ...), ...`.
    fn array_decls(&mut self) -> PResult<Vec<ArrayDecl>> {
        let mut decls = Vec::new();
        loop {
            let name = self.ident("an array name after `Dim`")?;
            self.expect(&Tok::LParen, "`(` after the array name")?;
            let dims = self.args()?;
            if dims.is_empty() {
                return Err(self.error_at(
                    name.span,
                    format!("the array `{}` needs at least one dimension", name.name),
                ));
            }
            decls.push(ArrayDecl { name, dims });
            if *self.peek() == Tok::Comma {
                self.bump();
            } else {
                return Ok(decls);
            }
        }
    }

    /// A statement starting with a name: an assignment or a call (§8.1, §8.2).
    fn ident_stmt(&mut self) -> PResult<StmtKind> {
        let name = self.ident("a name")?;
        match self.peek() {
            Tok::Eq => {
                self.bump();
                let value = self.expr()?;
                Ok(StmtKind::Assign {
                    target: LValue::Var(name),
                    value,
                })
            }
            Tok::Backslash | Tok::LBracket => {
                let base = Expr {
                    span: name.span,
                    kind: ExprKind::Var(name),
                };
                self.postfix_assign(base)
            }
            Tok::LParen => {
                let Some(close) = self.matching_paren() else {
                    return Err(self.error("mismatched brackets: this `(` is not closed before the end of the statement"));
                };
                let after = self.peek_at(close + 1);
                match after {
                    Tok::Eq => {
                        self.bump();
                        let indices = self.args()?;
                        self.bump(); // `=`
                        let value = self.expr()?;
                        Ok(StmtKind::Assign {
                            target: LValue::Index { name, indices },
                            value,
                        })
                    }
                    Tok::Backslash | Tok::LBracket => {
                        self.bump();
                        let args = self.args()?;
                        let base = Expr {
                            span: name.span,
                            kind: ExprKind::Call { name, args },
                        };
                        self.postfix_assign(base)
                    }
                    t if ends_stmt(t) => {
                        self.bump();
                        let args = self.args()?;
                        Ok(StmtKind::Call { name, args })
                    }
                    _ => {
                        let args = self.expr_list()?;
                        Ok(StmtKind::Call { name, args })
                    }
                }
            }
            t if starts_expr(t) => {
                let args = self.expr_list()?;
                Ok(StmtKind::Call { name, args })
            }
            _ => Ok(StmtKind::Call {
                name,
                args: Vec::new(),
            }),
        }
    }

    /// Where the `)` matching the `(` at the current token is, relative to it (the scan
    /// stops at the end of the statement).
    fn matching_paren(&self) -> Option<usize> {
        let mut nest = 0usize;
        let mut k = 0usize;
        loop {
            match self.peek_at(k) {
                Tok::LParen => nest += 1,
                Tok::RParen => {
                    nest = nest.saturating_sub(1);
                    if nest == 0 {
                        return Some(k);
                    }
                }
                t if is_term(t) => return None,
                _ => {}
            }
            k += 1;
        }
    }

    /// An assignment to `base\field...` (or a Blitz array element `base[i]`).
    fn postfix_assign(&mut self, base: Expr) -> PResult<StmtKind> {
        let target = self.postfix(base)?;
        self.expect(&Tok::Eq, "`=` in the assignment")?;
        let value = self.expr()?;
        match target.kind {
            ExprKind::Field { base, field } => Ok(StmtKind::Assign {
                target: LValue::Field { base, field },
                value,
            }),
            _ => Ok(StmtKind::Unsupported {
                what: "Blitz arrays (name[index])".to_owned(),
            }),
        }
    }

    /// `If`, single-line or block (§8.3).
    fn if_stmt(&mut self) -> PResult<StmtKind> {
        let open_span = self.span();
        self.bump();
        let header_start = self.pos;
        self.nested(|p| {
            let cond = match p.expr() {
                Ok(c) => c,
                Err(_) if p.aborted => return Err(Fail::Recovered),
                Err(_) => {
                    // Recover: a block If goes on to its EndIf; a single-line one ends here.
                    let single = p.line_has_then_and_body(header_start);
                    p.skip_line();
                    if !single {
                        let dummy = Expr {
                            kind: ExprKind::Int(0),
                            span: open_span,
                        };
                        let _ = p.block_if(open_span, dummy);
                    }
                    return Err(Fail::Recovered);
                }
            };
            let then_kw = p.eat(Kw::Then);
            if is_term(p.peek()) {
                p.block_if(open_span, cond)
            } else {
                if !then_kw && !starts_stmt(p.peek()) {
                    return Err(p.expected("`Then` or end of line after the If condition"));
                }
                p.line_if(cond)
            }
        })
    }

    /// Whether the line from token `from` has a `Then` followed by more on the line.
    fn line_has_then_and_body(&self, from: usize) -> bool {
        let mut k = from;
        loop {
            match self.toks.get(k).map(|t| &t.tok) {
                Some(Tok::Kw(Kw::Then)) => {
                    return !self.toks.get(k + 1).is_none_or(|t| is_term(&t.tok));
                }
                Some(Tok::Newline | Tok::Eof) | None => return false,
                Some(_) => k += 1,
            }
        }
    }

    fn block_if(&mut self, open_span: Span, cond: Expr) -> PResult<StmtKind> {
        let mut failed = false;
        let (then, elifs, els) = self.with_open(Open::If, |p| {
            let then = p.block(Mode::Block);
            let mut elifs = Vec::new();
            let mut els: Option<Vec<Stmt>> = None;
            while !p.aborted {
                match p.kw() {
                    Some(Kw::ElseIf) if els.is_none() => {
                        p.bump();
                        let c = p.expr();
                        p.eat(Kw::Then);
                        let body = match c {
                            Ok(_) => p.block(Mode::Block),
                            Err(_) => {
                                failed = true;
                                p.skip_line();
                                p.block(Mode::Block)
                            }
                        };
                        if let Ok(c) = c {
                            elifs.push((c, body));
                        }
                    }
                    Some(Kw::Else) if els.is_none() => {
                        p.bump();
                        els = Some(p.block(Mode::Block));
                    }
                    Some(kw @ (Kw::Else | Kw::ElseIf)) => {
                        p.error(format!(
                            "`{}` after the `Else` of the If opened at {open_span}",
                            kw.text()
                        ));
                        failed = true;
                        p.skip_line();
                        let more = p.block(Mode::Block);
                        els.get_or_insert_with(Vec::new).extend(more);
                    }
                    _ => break,
                }
            }
            (then, elifs, els)
        });
        if !self.eat(Kw::EndIf) {
            self.error(format!("`EndIf` missing for If opened at {open_span}"));
            return Err(Fail::Recovered);
        }
        if failed {
            return Err(Fail::Recovered);
        }
        Ok(StmtKind::If {
            cond,
            then,
            elifs,
            els,
        })
    }

    fn line_if(&mut self, cond: Expr) -> PResult<StmtKind> {
        let (then, elifs, els) = self.with_open(Open::LineIf, |p| {
            let then = p.block(Mode::Line);
            let mut elifs = Vec::new();
            let mut els = None;
            while !p.aborted {
                match p.kw() {
                    Some(Kw::ElseIf) if els.is_none() => {
                        p.bump();
                        let c = p.expr()?;
                        let then_kw = p.eat(Kw::Then);
                        if is_term(p.peek()) {
                            return Err(
                                p.error("a single-line If cannot continue with a block `ElseIf`")
                            );
                        }
                        if !then_kw && !starts_stmt(p.peek()) {
                            return Err(
                                p.expected("`Then` or end of line after the ElseIf condition")
                            );
                        }
                        let body = p.block(Mode::Line);
                        elifs.push((c, body));
                    }
                    Some(Kw::Else) if els.is_none() => {
                        p.bump();
                        els = Some(p.block(Mode::Line));
                    }
                    _ => break,
                }
            }
            Ok((then, elifs, els))
        })?;
        if !matches!(self.peek(), Tok::Newline | Tok::Eof) {
            return Err(self.expected("end of line after the single-line If"));
        }
        Ok(StmtKind::If {
            cond,
            then,
            elifs,
            els,
        })
    }

    /// The body of a loop or Select clause, and whether its closing keyword was found
    /// (it is consumed). A missing closer is reported here.
    fn body_until(
        &mut self,
        open: Open,
        closers: &[Kw],
        what: &str,
        span: Span,
    ) -> Option<(Vec<Stmt>, Kw)> {
        let body = self.with_open(open, |p| p.block(Mode::Block));
        match self.kw() {
            Some(kw) if closers.contains(&kw) => {
                self.bump();
                Some((body, kw))
            }
            _ => {
                if !self.aborted {
                    self.error(format!(
                        "{what} missing for {} opened at {span}",
                        open_name(open)
                    ));
                }
                None
            }
        }
    }

    fn while_stmt(&mut self) -> PResult<StmtKind> {
        let span = self.span();
        self.bump();
        self.nested(|p| {
            let cond = p.expr();
            if cond.is_err() {
                p.skip_line();
            }
            let body = p.body_until(Open::While, &[Kw::Wend], "`Wend`", span);
            match (cond, body) {
                (Ok(cond), Some((body, _))) => Ok(StmtKind::While { cond, body }),
                _ => Err(Fail::Recovered),
            }
        })
    }

    fn repeat_stmt(&mut self) -> PResult<StmtKind> {
        let span = self.span();
        self.bump();
        self.nested(|p| {
            let Some((body, kw)) = p.body_until(
                Open::Repeat,
                &[Kw::Until, Kw::Forever],
                "`Until` or `Forever`",
                span,
            ) else {
                return Err(Fail::Recovered);
            };
            let until = if kw == Kw::Until {
                Some(p.expr()?)
            } else {
                None
            };
            Ok(StmtKind::Repeat { body, until })
        })
    }

    fn for_stmt(&mut self) -> PResult<StmtKind> {
        let span = self.span();
        self.bump();
        self.nested(|p| {
            let header = p.for_header();
            if header.is_err() {
                p.skip_line();
            }
            let body = p.body_until(Open::For, &[Kw::Next], "`Next`", span);
            let Some((body, _)) = body else {
                return Err(Fail::Recovered);
            };
            // `Next i`: the variable name is accepted and ignored.
            if matches!(p.peek(), Tok::Ident { .. }) {
                p.bump();
            }
            let Ok(header) = header else {
                return Err(Fail::Recovered);
            };
            Ok(match header {
                ForHeader::Range {
                    var: Some(var),
                    from,
                    to,
                    step,
                } => StmtKind::For {
                    var,
                    from,
                    to,
                    step,
                    body,
                },
                ForHeader::Each {
                    var: Some(var),
                    type_name,
                } => StmtKind::ForEach {
                    var,
                    type_name,
                    body,
                },
                ForHeader::Range { var: None, .. } | ForHeader::Each { var: None, .. } => {
                    StmtKind::Unsupported {
                        what: "a For loop over an array element or a field".to_owned(),
                    }
                }
                ForHeader::EachIn => StmtKind::Unsupported {
                    what: "BriskVM enumerators (EachIn)".to_owned(),
                },
            })
        })
    }

    fn for_header(&mut self) -> PResult<ForHeader> {
        let name = self.ident("a variable after `For`")?;
        let var = if matches!(self.peek(), Tok::LParen | Tok::Backslash | Tok::LBracket) {
            let base = if *self.peek() == Tok::LParen {
                self.bump();
                let args = self.args()?;
                Expr {
                    span: name.span,
                    kind: ExprKind::Call { name, args },
                }
            } else {
                Expr {
                    span: name.span,
                    kind: ExprKind::Var(name),
                }
            };
            self.postfix(base)?;
            None
        } else {
            Some(name)
        };
        self.expect(&Tok::Eq, "`=` after the For variable")?;
        if self.eat(Kw::Each) {
            let type_name = self.ident("a type name after `Each`")?;
            return Ok(ForHeader::Each { var, type_name });
        }
        if self.eat(Kw::EachIn) {
            self.expr()?;
            return Ok(ForHeader::EachIn);
        }
        let from = self.expr()?;
        if !self.eat(Kw::To) {
            return Err(self.expected("`To` in the For statement"));
        }
        let to = self.expr()?;
        let step = if self.eat(Kw::Step) {
            Some(self.expr()?)
        } else {
            None
        };
        Ok(ForHeader::Range {
            var,
            from,
            to,
            step,
        })
    }

    fn select_stmt(&mut self) -> PResult<StmtKind> {
        let span = self.span();
        self.bump();
        self.nested(|p| {
            let subject = p.expr();
            let mut failed = subject.is_err();
            if failed {
                p.skip_line();
            }
            let mut cases = Vec::new();
            let mut default: Option<Vec<Stmt>> = None;
            let closed = p.with_open(Open::Select, |p| {
                while !p.aborted {
                    match p.peek() {
                        Tok::Colon | Tok::Newline => p.bump(),
                        Tok::Kw(Kw::Case) => {
                            let case_span = p.span();
                            p.bump();
                            let values = p.expr_list();
                            let values = match values {
                                Ok(v) if v.is_empty() => {
                                    failed = true;
                                    p.expected("a value after `Case`");
                                    p.skip_line();
                                    v
                                }
                                Ok(v) => v,
                                Err(_) => {
                                    failed = true;
                                    p.skip_line();
                                    Vec::new()
                                }
                            };
                            if default.is_some() {
                                failed = true;
                                p.error_at(
                                    case_span,
                                    format!(
                                        "`Case` after `Default` in the Select opened at {span}"
                                    ),
                                );
                            }
                            let body = p.block(Mode::Block);
                            cases.push(Case {
                                values,
                                body,
                                span: case_span,
                            });
                        }
                        Tok::Kw(Kw::Default) => {
                            if default.is_some() {
                                failed = true;
                                p.error(format!(
                                    "a second `Default` in the Select opened at {span}"
                                ));
                            }
                            p.bump();
                            let body = p.block(Mode::Block);
                            default.get_or_insert_with(Vec::new).extend(body);
                        }
                        Tok::Kw(Kw::EndSelect) => {
                            p.bump();
                            return true;
                        }
                        Tok::Eof | Tok::Kw(Kw::Function) => return false,
                        Tok::Kw(kw) if is_closer(*kw) && p.accepted(*kw) => return false,
                        _ => {
                            failed = true;
                            p.expected("`Case`, `Default` or `End Select`");
                            p.skip_line();
                        }
                    }
                }
                false
            });
            if !closed {
                if !p.aborted {
                    p.error(format!("`End Select` missing for Select opened at {span}"));
                }
                return Err(Fail::Recovered);
            }
            match subject {
                Ok(subject) if !failed => Ok(StmtKind::Select {
                    subject,
                    cases,
                    default,
                }),
                _ => Err(Fail::Recovered),
            }
        })
    }

    // ----------------------------------------------------------------------------------
    // Expressions (§7).

    /// A full expression: `Not` at its start covers the whole rest.
    fn expr(&mut self) -> PResult<Expr> {
        self.nested(|p| {
            if p.kw() == Some(Kw::Not) {
                let span = p.span();
                p.bump();
                let operand = p.expr()?;
                return Ok(Expr {
                    kind: ExprKind::Unary {
                        op: UnOp::Not,
                        expr: Box::new(operand),
                    },
                    span,
                });
            }
            p.binary(2)
        })
    }

    /// Binary operators of precedence `min` and above, left-associative.
    fn binary(&mut self, min: u8) -> PResult<Expr> {
        let mut lhs = self.unary()?;
        while let Some((op, prec)) = binop(self.peek()) {
            if prec < min {
                break;
            }
            self.bump();
            let rhs = self.binary(prec + 1)?;
            lhs = Expr {
                span: lhs.span,
                kind: ExprKind::Binary {
                    op,
                    lhs: Box::new(lhs),
                    rhs: Box::new(rhs),
                },
            };
        }
        Ok(lhs)
    }

    /// Prefix `-` and `+` (tighter than `^`), and `Not` in operand position (which, as at
    /// the start of an expression, covers the whole rest).
    fn unary(&mut self) -> PResult<Expr> {
        let span = self.span();
        let op = match self.peek() {
            Tok::Minus => UnOp::Neg,
            Tok::Plus => UnOp::Pos,
            Tok::Kw(Kw::Not) => return self.expr(),
            _ => return self.primary(),
        };
        self.bump();
        let operand = self.nested(Self::unary)?;
        Ok(Expr {
            kind: ExprKind::Unary {
                op,
                expr: Box::new(operand),
            },
            span,
        })
    }

    fn primary(&mut self) -> PResult<Expr> {
        let span = self.span();
        let unsupported = |what: &str| Expr {
            kind: ExprKind::Unsupported {
                what: what.to_owned(),
            },
            span,
        };
        let kind = match self.peek() {
            Tok::Int(n) => ExprKind::Int(*n),
            Tok::Float(f) => ExprKind::Float(*f),
            Tok::Str(s) => ExprKind::Str(s.clone()),
            Tok::Kw(Kw::True) => ExprKind::Int(1),
            Tok::Kw(Kw::False) => ExprKind::Int(0),
            Tok::Kw(Kw::Null) => ExprKind::Null,
            Tok::LParen => {
                self.bump();
                let e = self.expr()?;
                self.expect(&Tok::RParen, "`)`")?;
                return Ok(e);
            }
            Tok::Ident { .. } => {
                let name = self.ident("a name")?;
                let base = if *self.peek() == Tok::LParen {
                    self.bump();
                    let args = self.args()?;
                    ExprKind::Call { name, args }
                } else {
                    ExprKind::Var(name)
                };
                return self.postfix(Expr { kind: base, span });
            }
            Tok::Kw(kw @ (Kw::New | Kw::First | Kw::Last)) => {
                let kw = *kw;
                self.bump();
                self.ident(&format!("a type name after `{}`", kw.text()))?;
                if kw == Kw::New && *self.peek() == Tok::LParen {
                    self.bump();
                    self.args()?;
                }
                return Ok(unsupported(&format!("Blitz Types ({})", kw.text())));
            }
            Tok::Kw(kw @ (Kw::Before | Kw::After)) => {
                let kw = *kw;
                self.bump();
                self.nested(Self::unary)?;
                return Ok(unsupported(&format!("Blitz Types ({})", kw.text())));
            }
            Tok::Kw(kw @ (Kw::Self_ | Kw::Super)) => {
                let what = format!("BriskVM classes ({})", kw.text());
                self.bump();
                return self.postfix(unsupported(&what));
            }
            _ => return Err(self.expected("an expression")),
        };
        self.bump();
        Ok(Expr { kind, span })
    }

    /// `\field` accesses and Blitz array subscripts `[i]` after a name or call.
    fn postfix(&mut self, mut base: Expr) -> PResult<Expr> {
        loop {
            match self.peek() {
                Tok::Backslash => {
                    self.bump();
                    let field = self.ident("a field name after `\\`")?;
                    base = Expr {
                        span: base.span,
                        kind: ExprKind::Field {
                            base: Box::new(base),
                            field,
                        },
                    };
                }
                Tok::LBracket => {
                    self.bump();
                    self.expr()?;
                    self.expect(&Tok::RBracket, "`]`")?;
                    base = Expr {
                        span: base.span,
                        kind: ExprKind::Unsupported {
                            what: "Blitz arrays (name[index])".to_owned(),
                        },
                    };
                }
                _ => return Ok(base),
            }
        }
    }

    /// An argument list after its `(`, through the `)`.
    fn args(&mut self) -> PResult<Vec<Expr>> {
        let mut args = Vec::new();
        if *self.peek() == Tok::RParen {
            self.bump();
            return Ok(args);
        }
        loop {
            args.push(self.expr()?);
            match self.peek() {
                Tok::Comma => self.bump(),
                Tok::RParen => {
                    self.bump();
                    return Ok(args);
                }
                _ => return Err(self.expected("`,` or `)` in the argument list")),
            }
        }
    }

    /// A comma-separated list of expressions (possibly empty when no expression starts
    /// here).
    fn expr_list(&mut self) -> PResult<Vec<Expr>> {
        let mut list = Vec::new();
        if !starts_expr(self.peek()) {
            return Ok(list);
        }
        loop {
            list.push(self.expr()?);
            if *self.peek() == Tok::Comma {
                self.bump();
            } else {
                return Ok(list);
            }
        }
    }
}

/// The parsed header of a `For` statement (`var` is `None` for an array element or a
/// field, which the AST cannot hold). Short-lived, so its size does not matter.
#[allow(clippy::large_enum_variant)]
enum ForHeader {
    Range {
        var: Option<Ident>,
        from: Expr,
        to: Expr,
        step: Option<Expr>,
    },
    Each {
        var: Option<Ident>,
        type_name: Ident,
    },
    EachIn,
}

/// The keyword that opens a construct, for messages.
fn open_name(open: Open) -> &'static str {
    match open {
        Open::If | Open::LineIf => "If",
        Open::While => "While",
        Open::Repeat => "Repeat",
        Open::For => "For",
        Open::Select => "Select",
        Open::Function => "Function",
    }
}
