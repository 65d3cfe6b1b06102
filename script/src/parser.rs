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
    let (mut toks, mut errors) = lexer::lex(&prepared);
    type_words_as_names(&mut toks);
    let mut p = Parser {
        toks: &toks,
        pos: 0,
        errors: Vec::new(),
        depth: 0,
        open: Vec::new(),
        aborted: false,
        gave_up: false,
    };
    let items = p.module();
    errors.append(&mut p.errors);
    errors.sort_by_key(|e| e.span);
    if p.gave_up || errors.len() > MAX_ERRORS {
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

/// `First`, `Last`, `Before`, `After` and `Insert` are Blitz Type words only when a type
/// name or an object follows (`First T`, `Insert o Before p`); elsewhere they are plain
/// names, as BriskVM reads them (`Last = 5`, `A = First`, `Insert = Insert + 1`).
fn type_words_as_names(toks: &mut [Token]) {
    for i in 0..toks.len() {
        let Some(Tok::Kw(kw)) = toks.get(i).map(|t| &t.tok) else {
            continue;
        };
        let kw = *kw;
        if !matches!(
            kw,
            Kw::First | Kw::Last | Kw::Before | Kw::After | Kw::Insert
        ) {
            continue;
        }
        let next_is_name = matches!(
            toks.get(i + 1).map(|t| &t.tok),
            Some(Tok::Ident { .. } | Tok::Kw(Kw::Self_ | Kw::Super | Kw::First | Kw::Last))
        );
        if !next_is_name && let Some(t) = toks.get_mut(i) {
            t.tok = Tok::Ident {
                name: kw.text().to_owned(),
                tag: None,
            };
        }
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
    /// Stopped because of too many errors.
    gave_up: bool,
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
            self.gave_up = true;
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

    /// Go one nesting level deeper; past [`MAX_DEPTH`] the whole parse stops. Every
    /// successful `enter` is paired with a [`Self::leave`].
    fn enter(&mut self) -> PResult<()> {
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
        Ok(())
    }

    /// Come back one nesting level.
    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Parse a block with a construct open (for the closing keywords inside).
    fn block_in(&mut self, open: Open, mode: Mode) -> Vec<Stmt> {
        self.open.push(open);
        let body = self.block(mode);
        self.open.pop();
        body
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
                let mut one = Vec::with_capacity(1);
                self.stmt(&mut one)?;
                let Some(stmt) = one.pop() else {
                    return Err(Fail::Recovered);
                };
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
        self.enter().ok()?;
        let mut body = self.block_in(Open::Function, Mode::Block);
        self.leave();
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
            match self.stmt(&mut out) {
                Ok(()) => self.end_of_stmt(),
                Err(Fail::Skip) => self.skip_line(),
                Err(Fail::Recovered) => {}
            }
        }
        out
    }

    /// One statement, pushed onto `out`. (Statements are pushed rather than returned:
    /// unoptimised builds give every temporary its own stack slot, and this path repeats
    /// once per nesting level, so big values stay off it.)
    fn stmt(&mut self, out: &mut Vec<Stmt>) -> PResult<()> {
        let span = self.span();
        match self.peek() {
            Tok::Kw(kw @ (Kw::If | Kw::While | Kw::Repeat | Kw::For | Kw::Select)) => {
                let kind = self.block_stmt(*kw)?;
                push_boxed(out, kind, span);
                Ok(())
            }
            _ => {
                let kind = self.simple_stmt()?;
                out.push(Stmt { kind, span });
                Ok(())
            }
        }
    }

    /// A statement that does not open a block.
    fn simple_stmt(&mut self) -> PResult<StmtKind> {
        match self.peek() {
            Tok::Ident { .. } => self.ident_stmt(),
            Tok::Kw(kw) => self.keyword_stmt(*kw),
            Tok::Dot => Err(self.error("labels (`.name`) are not supported")),
            Tok::Other(b'@') => Ok(self.unsupported_line("BriskVM annotations (@)")),
            _ => Err(self.expected("a statement")),
        }
    }

    /// Skip the rest of a statement that the port does not support.
    fn unsupported_line(&mut self, what: &str) -> StmtKind {
        self.skip_stmt();
        StmtKind::Unsupported {
            what: what.to_owned(),
        }
    }

    /// A statement that opens a block (`If`, `While`, `Repeat`, `For`, `Select`), one
    /// nesting level deeper.
    fn block_stmt(&mut self, kw: Kw) -> PResult<Box<StmtKind>> {
        let span = self.span();
        self.bump();
        self.enter()?;
        let r = match kw {
            Kw::If => self.if_stmt(span),
            Kw::While => self.while_stmt(span),
            Kw::Repeat => self.repeat_stmt(span),
            Kw::For => self.for_stmt(span),
            _ => self.select_stmt(span),
        };
        self.leave();
        r
    }

    /// A statement starting with a keyword that does not open a block.
    fn keyword_stmt(&mut self, kw: Kw) -> PResult<StmtKind> {
        Ok(match kw {
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

    /// `If`, single-line or block (§8.3), after its keyword.
    fn if_stmt(&mut self, open_span: Span) -> PResult<Box<StmtKind>> {
        let header_start = self.pos;
        let cond = match self.expr() {
            Ok(c) => c,
            Err(_) if self.aborted => return Err(Fail::Recovered),
            Err(_) => {
                // Recover: a block If goes on to its EndIf; a single-line one ends here.
                let single = self.line_has_then_and_body(header_start);
                self.skip_line();
                if !single {
                    let dummy = Expr {
                        kind: ExprKind::Int(0),
                        span: open_span,
                    };
                    let _ = self.block_if(open_span, dummy);
                }
                return Err(Fail::Recovered);
            }
        };
        let then_kw = self.eat(Kw::Then);
        if is_term(self.peek()) {
            self.block_if(open_span, cond)
        } else {
            let else_next = matches!(self.kw(), Some(Kw::Else | Kw::ElseIf));
            if !then_kw && !else_next && !starts_stmt(self.peek()) {
                return Err(self.expected("`Then` or end of line after the If condition"));
            }
            self.line_if(cond)
        }
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

    fn block_if(&mut self, open_span: Span, cond: Expr) -> PResult<Box<StmtKind>> {
        let mut failed = false;
        self.open.push(Open::If);
        let then = self.block(Mode::Block);
        let mut elifs = Vec::new();
        let mut els: Option<Vec<Stmt>> = None;
        while !self.aborted {
            match self.kw() {
                Some(Kw::ElseIf) if els.is_none() => {
                    self.bump();
                    let c = self.expr().ok();
                    if c.is_none() {
                        failed = true;
                        self.skip_line();
                    } else {
                        self.eat(Kw::Then);
                    }
                    let body = self.block(Mode::Block);
                    if let Some(c) = c {
                        elifs.push((c, body));
                    }
                }
                Some(Kw::Else) if els.is_none() => {
                    self.bump();
                    els = Some(self.block(Mode::Block));
                }
                Some(kw @ (Kw::Else | Kw::ElseIf)) => {
                    self.error(format!(
                        "`{}` after the `Else` of the If opened at {open_span}",
                        kw.text()
                    ));
                    failed = true;
                    self.skip_line();
                    let more = self.block(Mode::Block);
                    els.get_or_insert_with(Vec::new).extend(more);
                }
                _ => break,
            }
        }
        self.open.pop();
        if !self.eat(Kw::EndIf) {
            if !self.aborted {
                self.error(format!("`EndIf` missing for If opened at {open_span}"));
            }
            return Err(Fail::Recovered);
        }
        if failed {
            return Err(Fail::Recovered);
        }
        Ok(make_if(cond, then, elifs, els))
    }

    fn line_if(&mut self, cond: Expr) -> PResult<Box<StmtKind>> {
        self.open.push(Open::LineIf);
        let parts = self.line_if_parts();
        self.open.pop();
        let (then, elifs, els) = parts?;
        if !matches!(self.peek(), Tok::Newline | Tok::Eof) {
            return Err(self.expected("end of line after the single-line If"));
        }
        Ok(make_if(cond, then, elifs, els))
    }

    /// The Then, ElseIf and Else parts of a single-line If.
    #[allow(clippy::type_complexity)]
    fn line_if_parts(&mut self) -> PResult<(Vec<Stmt>, Vec<(Expr, Vec<Stmt>)>, Option<Vec<Stmt>>)> {
        let then = self.block(Mode::Line);
        let mut elifs = Vec::new();
        let mut els = None;
        while !self.aborted {
            match self.kw() {
                Some(Kw::ElseIf) if els.is_none() => {
                    self.bump();
                    let c = self.expr()?;
                    let then_kw = self.eat(Kw::Then);
                    if is_term(self.peek()) {
                        return Err(
                            self.error("a single-line If cannot continue with a block `ElseIf`")
                        );
                    }
                    if !then_kw && !starts_stmt(self.peek()) {
                        return Err(
                            self.expected("`Then` or end of line after the ElseIf condition")
                        );
                    }
                    let body = self.block(Mode::Line);
                    elifs.push((c, body));
                }
                Some(Kw::Else) if els.is_none() => {
                    self.bump();
                    els = Some(self.block(Mode::Line));
                }
                _ => break,
            }
        }
        Ok((then, elifs, els))
    }

    /// The body of a loop and its closing keyword (consumed), or `None` when the closer
    /// is missing (reported here).
    fn body_until(
        &mut self,
        open: Open,
        closers: &[Kw],
        what: &str,
        span: Span,
    ) -> Option<(Vec<Stmt>, Kw)> {
        let body = self.block_in(open, Mode::Block);
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

    fn while_stmt(&mut self, span: Span) -> PResult<Box<StmtKind>> {
        let cond = self.expr();
        if cond.is_err() {
            self.skip_line();
        }
        let body = self.body_until(Open::While, &[Kw::Wend], "`Wend`", span);
        match (cond, body) {
            (Ok(cond), Some((body, _))) => Ok(Box::new(StmtKind::While { cond, body })),
            _ => Err(Fail::Recovered),
        }
    }

    fn repeat_stmt(&mut self, span: Span) -> PResult<Box<StmtKind>> {
        let closers = [Kw::Until, Kw::Forever];
        let Some((body, kw)) =
            self.body_until(Open::Repeat, &closers, "`Until` or `Forever`", span)
        else {
            return Err(Fail::Recovered);
        };
        let until = if kw == Kw::Until {
            Some(self.expr()?)
        } else {
            None
        };
        Ok(Box::new(StmtKind::Repeat { body, until }))
    }

    fn for_stmt(&mut self, span: Span) -> PResult<Box<StmtKind>> {
        let header = self.for_header();
        if header.is_err() {
            self.skip_line();
        }
        let Some((body, _)) = self.body_until(Open::For, &[Kw::Next], "`Next`", span) else {
            return Err(Fail::Recovered);
        };
        // `Next i`: the variable name is accepted and ignored.
        if matches!(self.peek(), Tok::Ident { .. }) {
            self.bump();
        }
        let Ok(header) = header else {
            return Err(Fail::Recovered);
        };
        Ok(make_for(header, body))
    }

    fn for_header(&mut self) -> PResult<Box<ForHeader>> {
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
            return Ok(Box::new(ForHeader::Each { var, type_name }));
        }
        if self.eat(Kw::EachIn) {
            self.expr()?;
            return Ok(Box::new(ForHeader::EachIn));
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
        Ok(Box::new(ForHeader::Range {
            var,
            from,
            to,
            step,
        }))
    }

    fn select_stmt(&mut self, span: Span) -> PResult<Box<StmtKind>> {
        let subject = self.expr();
        let mut failed = subject.is_err();
        if failed {
            self.skip_line();
        }
        let mut cases = Vec::new();
        let mut default: Option<Vec<Stmt>> = None;
        self.open.push(Open::Select);
        let closed = self.select_clauses(span, &mut cases, &mut default, &mut failed);
        self.open.pop();
        if !closed {
            if !self.aborted {
                self.error(format!("`End Select` missing for Select opened at {span}"));
            }
            return Err(Fail::Recovered);
        }
        match subject {
            Ok(subject) if !failed => Ok(Box::new(StmtKind::Select {
                subject,
                cases,
                default,
            })),
            _ => Err(Fail::Recovered),
        }
    }

    /// The clauses of a Select, through `End Select` (`true`) or up to where the Select
    /// was left unclosed (`false`).
    fn select_clauses(
        &mut self,
        span: Span,
        cases: &mut Vec<Case>,
        default: &mut Option<Vec<Stmt>>,
        failed: &mut bool,
    ) -> bool {
        while !self.aborted {
            match self.peek() {
                Tok::Colon | Tok::Newline => self.bump(),
                Tok::Kw(Kw::Case) => {
                    let case_span = self.span();
                    self.bump();
                    let values = self.expr_list();
                    let values = match values {
                        Ok(v) if v.is_empty() => {
                            *failed = true;
                            self.expected("a value after `Case`");
                            self.skip_line();
                            v
                        }
                        Ok(v) => v,
                        Err(_) => {
                            *failed = true;
                            self.skip_line();
                            Vec::new()
                        }
                    };
                    if default.is_some() {
                        *failed = true;
                        self.error_at(
                            case_span,
                            format!("`Case` after `Default` in the Select opened at {span}"),
                        );
                    }
                    let body = self.block(Mode::Block);
                    cases.push(Case {
                        values,
                        body,
                        span: case_span,
                    });
                }
                Tok::Kw(Kw::Default) => {
                    if default.is_some() {
                        *failed = true;
                        self.error(format!("a second `Default` in the Select opened at {span}"));
                    }
                    self.bump();
                    let body = self.block(Mode::Block);
                    default.get_or_insert_with(Vec::new).extend(body);
                }
                Tok::Kw(Kw::EndSelect) => {
                    self.bump();
                    return true;
                }
                Tok::Eof | Tok::Kw(Kw::Function) => return false,
                Tok::Kw(kw) if is_closer(*kw) && self.accepted(*kw) => return false,
                _ => {
                    *failed = true;
                    self.expected("`Case`, `Default` or `End Select`");
                    self.skip_line();
                }
            }
        }
        false
    }

    // ----------------------------------------------------------------------------------
    // Expressions (§7).

    /// A full expression: `Not` at its start covers the whole rest.
    fn expr(&mut self) -> PResult<Expr> {
        self.enter()?;
        let r = if self.kw() == Some(Kw::Not) {
            self.not_expr()
        } else {
            self.binary(2)
        };
        self.leave();
        r
    }

    /// `Not expr`.
    fn not_expr(&mut self) -> PResult<Expr> {
        let span = self.span();
        self.bump();
        let operand = self.expr()?;
        Ok(Expr {
            kind: ExprKind::Unary {
                op: UnOp::Not,
                expr: Box::new(operand),
            },
            span,
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
        self.enter()?;
        let operand = self.unary();
        self.leave();
        let operand = operand?;
        Ok(Expr {
            kind: ExprKind::Unary {
                op,
                expr: Box::new(operand),
            },
            span,
        })
    }

    /// A primary expression, dispatched from a small frame (see [`Self::keyword_stmt`]).
    fn primary(&mut self) -> PResult<Expr> {
        match self.peek() {
            Tok::LParen => self.paren(),
            Tok::Ident { .. } => self.name_expr(),
            Tok::Kw(
                kw @ (Kw::New
                | Kw::First
                | Kw::Last
                | Kw::Before
                | Kw::After
                | Kw::Self_
                | Kw::Super),
            ) => self.object_expr(*kw),
            _ => self.literal(),
        }
    }

    /// `(expr)`.
    fn paren(&mut self) -> PResult<Expr> {
        self.bump();
        let e = self.expr()?;
        self.expect(&Tok::RParen, "`)`")?;
        Ok(e)
    }

    /// A variable, a call or an array element, with its field accesses.
    fn name_expr(&mut self) -> PResult<Expr> {
        let name = self.ident("a name")?;
        let span = name.span;
        let kind = if *self.peek() == Tok::LParen {
            self.bump();
            let args = self.args()?;
            ExprKind::Call { name, args }
        } else {
            ExprKind::Var(name)
        };
        self.postfix(Expr { kind, span })
    }

    /// Blitz Types and BriskVM class expressions (`New T`, `First T`, `Self`, ...).
    fn object_expr(&mut self, kw: Kw) -> PResult<Expr> {
        let span = self.span();
        self.bump();
        let what = match kw {
            Kw::New | Kw::First | Kw::Last => {
                self.ident(&format!("a type name after `{}`", kw.text()))?;
                if kw == Kw::New && *self.peek() == Tok::LParen {
                    self.bump();
                    self.args()?;
                }
                format!("Blitz Types ({})", kw.text())
            }
            Kw::Before | Kw::After => {
                self.enter()?;
                let operand = self.unary();
                self.leave();
                operand?;
                format!("Blitz Types ({})", kw.text())
            }
            _ => {
                let e = Expr {
                    kind: ExprKind::Unsupported {
                        what: format!("BriskVM classes ({})", kw.text()),
                    },
                    span,
                };
                return self.postfix(e);
            }
        };
        Ok(Expr {
            kind: ExprKind::Unsupported { what },
            span,
        })
    }

    /// A literal (number, string, `True`, `False`, `Null`).
    fn literal(&mut self) -> PResult<Expr> {
        let span = self.span();
        let kind = match self.peek() {
            Tok::Int(n) => ExprKind::Int(*n),
            Tok::Float(f) => ExprKind::Float(*f),
            Tok::Str(s) => ExprKind::Str(s.clone()),
            Tok::Kw(Kw::True) => ExprKind::Int(1),
            Tok::Kw(Kw::False) => ExprKind::Int(0),
            Tok::Kw(Kw::Null) => ExprKind::Null,
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

/// Push a boxed statement (a separate function, to keep the temporary off the nesting
/// path's frames).
fn push_boxed(out: &mut Vec<Stmt>, kind: Box<StmtKind>, span: Span) {
    out.push(Stmt { kind: *kind, span });
}

/// Build an `If` statement (see [`push_boxed`]).
fn make_if(
    cond: Expr,
    then: Vec<Stmt>,
    elifs: Vec<(Expr, Vec<Stmt>)>,
    els: Option<Vec<Stmt>>,
) -> Box<StmtKind> {
    Box::new(StmtKind::If {
        cond,
        then,
        elifs,
        els,
    })
}

/// Build a `For` statement from its header and body (see [`push_boxed`]).
fn make_for(header: Box<ForHeader>, body: Vec<Stmt>) -> Box<StmtKind> {
    Box::new(match *header {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::Tag;

    /// An S-expression of an expression, for precedence tests.
    fn sx(e: &Expr) -> String {
        match &e.kind {
            ExprKind::Int(n) => n.to_string(),
            ExprKind::Float(f) => format!("{f:?}"),
            ExprKind::Str(s) => format!("{:?}", String::from_utf8_lossy(s)),
            ExprKind::Null => "null".to_owned(),
            ExprKind::Var(id) => id_text(id),
            ExprKind::Call { name, args } => {
                let a: Vec<String> = args.iter().map(sx).collect();
                format!("{}({})", id_text(name), a.join(", "))
            }
            ExprKind::Unary { op, expr } => format!("({op:?} {})", sx(expr)),
            ExprKind::Binary { op, lhs, rhs } => format!("({op:?} {} {})", sx(lhs), sx(rhs)),
            ExprKind::Field { base, field } => format!("{}\\{}", sx(base), field.name),
            ExprKind::Unsupported { what } => format!("<{what}>"),
        }
    }

    fn id_text(id: &Ident) -> String {
        let tag = match &id.tag {
            None => String::new(),
            Some(Tag::Int) => "%".into(),
            Some(Tag::Float) => "#".into(),
            Some(Tag::Str) => "$".into(),
            Some(Tag::Object(t)) => format!(".{t}"),
        };
        format!("{}{tag}", id.name)
    }

    /// Parse with no errors allowed.
    fn ok(src: &str) -> Module {
        let (m, errors) = parse(src.as_bytes());
        assert!(errors.is_empty(), "{src:?}: {errors:?}");
        m
    }

    /// The statements of a file (top-level statements only).
    fn stmts(src: &str) -> Vec<Stmt> {
        ok(src)
            .items
            .into_iter()
            .map(|i| match i {
                Item::Stmt(s) => s,
                other => panic!("not a statement: {other:?}"),
            })
            .collect()
    }

    /// The value of `x = <src>`, as an S-expression.
    fn value(src: &str) -> String {
        let s = stmts(&format!("x = {src}"));
        match &s[0].kind {
            StmtKind::Assign { value, .. } => sx(value),
            other => panic!("{other:?}"),
        }
    }

    /// The arguments of a call statement, as S-expressions.
    fn call_args(src: &str) -> Vec<String> {
        let s = stmts(src);
        assert_eq!(s.len(), 1, "{src}");
        match &s[0].kind {
            StmtKind::Call { args, .. } => args.iter().map(sx).collect(),
            other => panic!("{other:?}"),
        }
    }

    fn errors(src: &str) -> Vec<ParseError> {
        parse(src.as_bytes()).1
    }

    #[test]
    fn precedence_follows_the_table() {
        assert_eq!(value("1 + 2 * 3"), "(Add 1 (Mul 2 3))");
        assert_eq!(value("2 ^ 3 ^ 2"), "(Pow (Pow 2 3) 2)");
        assert_eq!(value("-2 ^ 2"), "(Pow (Neg 2) 2)");
        assert_eq!(value("-(2 ^ 2)"), "(Neg (Pow 2 2))");
        assert_eq!(value("a - b - c"), "(Sub (Sub a b) c)");
        assert_eq!(value("b + c Shl 1"), "(Add b (Shl c 1))");
        assert_eq!(value("a Shl 1 * 2"), "(Shl a (Mul 1 2))");
        assert_eq!(value("a Mod b * c"), "(Mul (Mod a b) c)");
        assert_eq!(value("1 < 2 = 1"), "(Eq (Lt 1 2) 1)");
        assert_eq!(value("a Or b And c"), "(And (Or a b) c)");
        assert_eq!(value("a = 1 And b <> 2"), "(And (Eq a 1) (Ne b 2))");
        assert_eq!(value("a >< b Xor c =< d"), "(Xor (Ne a b) (Le c d))");
        assert_eq!(value("a => b"), "(Ge a b)");
        assert_eq!(value("+ a$ + \"x\""), "(Add (Pos a$) \"x\")");
        assert_eq!(value("- - 1"), "(Neg (Neg 1))");
    }

    #[test]
    fn not_covers_the_rest() {
        assert_eq!(value("Not a And b"), "(Not (And a b))");
        assert_eq!(value("Not a = b"), "(Not (Eq a b))");
        assert_eq!(value("a And Not b"), "(And a (Not b))");
        assert_eq!(value("a And Not b Or c"), "(And a (Not (Or b c)))");
        assert_eq!(value("Not Not 5"), "(Not (Not 5))");
        assert_eq!(value("1 + Not 0"), "(Add 1 (Not 0))");
    }

    #[test]
    fn literals() {
        assert_eq!(value("True + False"), "(Add 1 0)");
        assert_eq!(value("Null"), "null");
        assert_eq!(value("$FF + %101"), "(Add 255 5)");
        assert_eq!(value("$ffffffff"), "-1");
        assert_eq!(value("1.5 + .5"), "(Add 1.5 0.5)");
        assert_eq!(value("\"a;b\" ; comment"), "\"a;b\"");
        assert_eq!(value("Pi + Str(1)"), "(Add Pi Str(1))");
    }

    #[test]
    fn calls_and_tags() {
        assert_eq!(value("CheckDate%(a$, 182)"), "CheckDate%(a$, 182)");
        assert_eq!(value("GetWaitResult$()"), "GetWaitResult$()");
        assert_eq!(value("f (1)"), "f(1)");
        assert_eq!(value("o\\a\\b"), "o\\a\\b");
        assert_eq!(value("f(1)\\a"), "f(1)\\a");
        assert_eq!(value("o.T"), "o.T");
    }

    #[test]
    fn call_statement_parentheses_rule() {
        assert_eq!(call_args("Output (a), \"x\""), vec!["a", "\"x\""]);
        assert_eq!(call_args("Print (a+b)*2"), vec!["(Mul (Add a b) 2)"]);
        assert_eq!(call_args("Print (a+b)"), vec!["(Add a b)"]);
        assert_eq!(call_args("Foo (a) - 1"), vec!["(Sub a 1)"]);
        assert_eq!(call_args("Foo(a, b)"), vec!["a", "b"]);
        assert_eq!(call_args("Foo a, b"), vec!["a", "b"]);
        assert_eq!(call_args("Foo -1"), vec!["(Neg 1)"]);
        assert!(call_args("Foo").is_empty());
        assert!(call_args("Foo()").is_empty());
        assert_eq!(call_args("Foo((1), (2))"), vec!["1", "2"]);
        // `Goto` is a command, not a keyword.
        assert_eq!(call_args("Goto there"), vec!["there"]);
        let e = errors("Foo (a");
        assert_eq!(e.len(), 1);
        assert!(e[0].message.contains("mismatched"), "{e:?}");
    }

    #[test]
    fn assignments() {
        let s = stmts("x% = 1\nScore$(i, 0) = \"a\"\no\\f = 2\na(1)\\g# = 3\nString$ = \"s\"");
        assert!(
            matches!(&s[0].kind, StmtKind::Assign { target: LValue::Var(v), .. }
            if v.tag == Some(Tag::Int))
        );
        assert!(
            matches!(&s[1].kind, StmtKind::Assign { target: LValue::Index { name, indices }, .. }
            if name.name == "Score" && indices.len() == 2)
        );
        assert!(
            matches!(&s[2].kind, StmtKind::Assign { target: LValue::Field { field, .. }, .. }
            if field.name == "f")
        );
        assert!(
            matches!(&s[3].kind, StmtKind::Assign { target: LValue::Field { base, field }, .. }
            if field.tag == Some(Tag::Float) && matches!(base.kind, ExprKind::Call { .. }))
        );
        assert!(
            matches!(&s[4].kind, StmtKind::Assign { target: LValue::Var(v), .. }
            if v.name == "String")
        );
        // `x = y = 1` assigns a comparison.
        assert_eq!(value("y = 1"), "(Eq y 1)");
    }

    #[test]
    fn single_line_and_block_if() {
        let s = stmts("If a Then b : c");
        assert!(matches!(&s[0].kind, StmtKind::If { then, els: None, .. } if then.len() == 2));
        let s = stmts("If a Then b Else c : d");
        assert!(matches!(&s[0].kind, StmtKind::If { then, els: Some(e), .. }
            if then.len() == 1 && e.len() == 2));
        // No `Then`: still single-line.
        let s = stmts("If a b()");
        assert!(matches!(&s[0].kind, StmtKind::If { then, .. } if then.len() == 1));
        // A trailing comment does not make it single-line.
        let s = stmts("If a ; note\n b\n c\nEndIf");
        assert!(matches!(&s[0].kind, StmtKind::If { then, .. } if then.len() == 2));
        // `:` after the condition ends the statement: block form.
        let s = stmts("If a Then : b : End If");
        assert!(matches!(&s[0].kind, StmtKind::If { then, .. } if then.len() == 1));
        let s = stmts(
            "If(x = 0)\nx = 1\nElseIf (x = 1) Then\nx = 2\nElse If x\nx = 3\nElse\nx = 4\nEnd If",
        );
        match &s[0].kind {
            StmtKind::If {
                cond, elifs, els, ..
            } => {
                assert_eq!(sx(cond), "(Eq x 0)");
                assert_eq!(elifs.len(), 2);
                assert_eq!(els.as_ref().map(Vec::len), Some(1));
            }
            other => panic!("{other:?}"),
        }
        // Nested single-line Ifs: the inner one takes the Else.
        let s = stmts("If a Then If b Then c Else d");
        match &s[0].kind {
            StmtKind::If {
                then, els: None, ..
            } => {
                assert!(matches!(&then[0].kind, StmtKind::If { els: Some(_), .. }));
            }
            other => panic!("{other:?}"),
        }
        // A block statement inside a single-line If may span lines.
        let s = stmts("If a Then For i = 1 To 2\nx = i\nNext");
        assert!(matches!(&s[0].kind, StmtKind::If { then, .. }
            if matches!(&then[0].kind, StmtKind::For { body, .. } if body.len() == 1)));
        // Single-line ElseIf.
        let s = stmts("If a Then b ElseIf c Then d Else e");
        assert!(matches!(&s[0].kind, StmtKind::If { elifs, els: Some(_), .. } if elifs.len() == 1));
        let s = stmts("If x Then Return Else y()");
        assert!(matches!(&s[0].kind, StmtKind::If { then, .. }
            if matches!(then[0].kind, StmtKind::Return(None))));
        let s = stmts("If a Then b() Else c()");
        assert!(matches!(&s[0].kind, StmtKind::If { els: Some(_), .. }));
        // An empty Then branch, with or without `Then`.
        let s = stmts("If a Else c()\nIf a Then Else c()");
        assert!(s.iter().all(|s| matches!(&s.kind,
            StmtKind::If { then, els: Some(e), .. } if then.is_empty() && e.len() == 1)));
    }

    #[test]
    fn keywords_are_case_insensitive() {
        let s =
            stmts("iF a tHEN b = 1\nwHiLe x\nWEND\nrepeat\nUNTIL(x)\nfor i = 1 TO 3 step 1\nnext");
        assert_eq!(s.len(), 4);
        assert!(matches!(s[1].kind, StmtKind::While { .. }));
        assert!(matches!(s[2].kind, StmtKind::Repeat { until: Some(_), .. }));
        assert!(matches!(s[3].kind, StmtKind::For { step: Some(_), .. }));
    }

    #[test]
    fn loops() {
        let s = stmts(
            "While(x)\nx = x - 1\nWend\nRepeat\nForever\nFor i# = 10 To 1 Step -1 : Next i\nFor o.T = Each T\nNext\nExit\nEnd",
        );
        match &s[0].kind {
            StmtKind::While { cond, body } => {
                assert_eq!(sx(cond), "x");
                assert_eq!(body.len(), 1);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(s[1].kind, StmtKind::Repeat { until: None, .. }));
        match &s[2].kind {
            StmtKind::For {
                var,
                from,
                to,
                step,
                body,
            } => {
                assert_eq!(id_text(var), "i#");
                assert_eq!(sx(from), "10");
                assert_eq!(sx(to), "1");
                assert_eq!(step.as_ref().map(sx).as_deref(), Some("(Neg 1)"));
                assert!(body.is_empty());
            }
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(&s[3].kind, StmtKind::ForEach { var, type_name, .. }
            if id_text(var) == "o.T" && type_name.name == "T")
        );
        assert!(matches!(s[4].kind, StmtKind::Exit));
        assert!(matches!(s[5].kind, StmtKind::End));
    }

    #[test]
    fn select() {
        let s = stmts(
            "Select Part2$\nCase \"JAN\", \"FEB\"\nm = 1\nCase 3 : m = 3\nDefault\nm = 0\nEnd  Select",
        );
        match &s[0].kind {
            StmtKind::Select {
                subject,
                cases,
                default,
            } => {
                assert_eq!(sx(subject), "Part2$");
                assert_eq!(cases.len(), 2);
                assert_eq!(cases[0].values.len(), 2);
                assert_eq!(cases[1].body.len(), 1);
                assert_eq!(default.as_ref().map(Vec::len), Some(1));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn returns() {
        let m = ok("Function F()\nReturn\nReturn(1)\nReturn()\nReturn 1 + 2\nEnd Function");
        let Item::Function(f) = &m.items[0] else {
            panic!()
        };
        let r: Vec<Option<String>> = f
            .body
            .iter()
            .map(|s| match &s.kind {
                StmtKind::Return(e) => e.as_ref().map(sx),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            r,
            vec![None, Some("1".into()), None, Some("(Add 1 2)".into())]
        );
    }

    #[test]
    fn declarations_and_functions() {
        let m = ok(
            "Using \"RC_Core.rcm\"\nInclude \"x.bb\"\nGlobal g# = 1.0, h\nConst K = 5\nDim A$(10, 2), B(3)\nType T\nField a, b$\nEnd Type\nLocal l\n\
                    Function OPENDIALOG%(P1%, P3$=\"\", P4%=-1, P5#=0.0)\nLocal a% = 1, b$\nGlobal c\nConst d = 1\nDim A$(5, 2)\nEnd    Function",
        );
        assert!(matches!(&m.items[0], Item::Using { path, .. } if path == b"RC_Core.rcm"));
        assert!(matches!(&m.items[1], Item::Include { .. }));
        assert!(matches!(&m.items[2], Item::Global(v) if v.len() == 2 && v[0].init.is_some()));
        assert!(matches!(&m.items[3], Item::Const(v) if v.len() == 1));
        assert!(matches!(&m.items[4], Item::Dim(v) if v.len() == 2 && v[0].dims.len() == 2));
        assert!(matches!(&m.items[5], Item::Type { name, .. } if name.name == "T"));
        assert!(matches!(
            &m.items[6],
            Item::Stmt(Stmt {
                kind: StmtKind::Local(_),
                ..
            })
        ));
        let Item::Function(f) = &m.items[7] else {
            panic!("{:?}", m.items[7])
        };
        assert_eq!(id_text(&f.name), "OPENDIALOG%");
        let defaults: Vec<Option<String>> = f
            .params
            .iter()
            .map(|p| p.default.as_ref().map(sx))
            .collect();
        assert_eq!(
            defaults,
            vec![
                None,
                Some("\"\"".into()),
                Some("(Neg 1)".into()),
                Some("0.0".into())
            ]
        );
        assert!(matches!(f.body[0].kind, StmtKind::Local(ref v) if v.len() == 2));
        assert!(matches!(f.body[1].kind, StmtKind::Global(_)));
        assert!(matches!(f.body[2].kind, StmtKind::Const(_)));
        assert!(matches!(f.body[3].kind, StmtKind::Dim(_)));
    }

    #[test]
    fn unsupported_constructs_are_not_errors() {
        let m = ok(
            "Function F()\nDelete o\nDelete Each T\nInsert a Before b\nx = New T\ny = First T\nz = After x\nMethod M()\nx = 1\nEnd Method\nTry\nThrow \"x\"\nCatch e\nEnd Try\n@note = \"a\"\nLocal v[5]\nv[1] = 2\nFor o = EachIn list\nNext\nq = Self\\a\nEnd Function\nFunction G(Ref a)\nEnd Function",
        );
        let Item::Function(f) = &m.items[0] else {
            panic!()
        };
        let mut whats = Vec::new();
        for s in &f.body {
            match &s.kind {
                StmtKind::Unsupported { what } => whats.push(what.clone()),
                StmtKind::Assign { value, .. } => whats.push(sx(value)),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(
            whats,
            vec![
                "Blitz Types (Delete)",
                "Blitz Types (Delete)",
                "Blitz Types (Insert)",
                "<Blitz Types (New)>",
                "<Blitz Types (First)>",
                "<Blitz Types (After)>",
                "BriskVM classes (Method)",
                "BriskVM exceptions (Try)",
                "BriskVM exceptions (Throw)",
                "BriskVM exceptions (Catch)",
                "BriskVM exceptions (End Try)",
                "BriskVM annotations (@)",
                "Blitz arrays (name[size])",
                "Blitz arrays (name[index])",
                "BriskVM enumerators (EachIn)",
                "<BriskVM classes (Self)>\\a",
            ]
        );
        let Item::Function(g) = &m.items[1] else {
            panic!()
        };
        assert!(matches!(&g.body[0].kind, StmtKind::Unsupported { what } if what.contains("Ref")));
        // The printer writes constructs that parse back to the same descriptions.
        let printed = crate::print::module(&m);
        let (again, e) = parse(&printed);
        assert!(e.is_empty(), "{e:?}");
        assert_eq!(crate::print::module(&again), printed);
    }

    #[test]
    fn spans_are_original_columns_and_lines() {
        let m = ok("!COMPILE\n\n\tFunction  Main()\r\n\t\tx\t=\t1 + y\r\nEnd Function");
        assert!(m.directives.compile);
        let Item::Function(f) = &m.items[0] else {
            panic!()
        };
        assert_eq!(f.span, Span::new(3, 2));
        assert_eq!(f.name.span, Span::new(3, 12));
        assert_eq!(f.body[0].span, Span::new(4, 3));
        match &f.body[0].kind {
            StmtKind::Assign { value, .. } => {
                // `1` is at column 7 of `\t\tx\t=\t1 + y`.
                assert_eq!(value.span, Span::new(4, 7));
                let ExprKind::Binary { rhs, .. } = &value.kind else {
                    panic!()
                };
                assert_eq!(rhs.span, Span::new(4, 11));
            }
            other => panic!("{other:?}"),
        }
        // A BOM does not shift columns.
        let m = ok("\u{feff}x = 1");
        assert_eq!(m.items.len(), 1);
        let (_, e) = parse(b"\xEF\xBB\xBF  x = )");
        assert_eq!(e[0].span, Span::new(1, 7));
    }

    #[test]
    fn line_continuation_and_rem() {
        let s = stmts("x = 1 + ..\n  2\nRem\nanything ( at all\nEndRem\ny = 3");
        assert_eq!(s.len(), 2);
        match &s[0].kind {
            StmtKind::Assign { value, .. } => assert_eq!(sx(value), "(Add 1 2)"),
            other => panic!("{other:?}"),
        }
        assert_eq!(s[1].span.line, 6);
    }

    #[test]
    fn errors_are_reported_and_recovered_per_line() {
        let src = "Function Main()\n\tx = )\n\ty = 1\n\tIf a )\n\t.label\n\tz = (1\nEnd Function";
        let e = errors(src);
        let lines: Vec<u32> = e.iter().map(|e| e.span.line).collect();
        assert_eq!(lines, vec![2, 4, 5, 6], "{e:?}");
        assert!(
            e[1].message
                .contains("expected `Then` or end of line after the If condition")
        );
        assert!(e[2].message.contains("label"));
        let e = errors("Function Main()\nx = 1\nFunction Other()\nEnd Function");
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!(
            e[0].message,
            "`End Function` missing for Function Main opened at 1:1"
        );
        let e = errors("Wend\nx = 1\nNext\nEndIf");
        assert_eq!(e.len(), 3, "{e:?}");
        assert_eq!(e[0].message, "`Wend` without `While`");
        let e = errors("If a\nWhile b\nEndIf");
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!(e[0].message, "`Wend` missing for While opened at 2:1");
        let e = errors("x = \"abc\ny = 1 2");
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(e[0].message.contains("unterminated string"));
        assert_eq!(e[1].span, Span::new(2, 7));
        let e = errors(
            "Select x\ny = 1\nCase 1\nEnd Select\nConst K\nDim A()\nFunction F(\nEnd Function",
        );
        assert_eq!(e.len(), 4, "{e:?}");
        let e = errors("If a Then b EndIf");
        assert_eq!(e.len(), 1, "{e:?}");
        let e = errors("For i = 1 2\nx = 1\nNext\nRepeat\nx = 1");
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(e[1].message.starts_with("`Until` or `Forever` missing"));
        // Errors come with spans inside the file, in order.
        let e = errors("x = @\ny = #\nz = !");
        assert_eq!(e.len(), 3);
        assert!(e.windows(2).all(|w| w[0].span <= w[1].span));
    }

    #[test]
    fn too_many_errors_stop_the_parse() {
        let src = "x = )\n".repeat(10_000);
        let e = errors(&src);
        assert_eq!(e.len(), MAX_ERRORS + 1);
        assert!(e[MAX_ERRORS].message.contains("too many errors"));
    }

    /// Parse in a thread with the default 2 MiB stack of spawned threads (and tokio's
    /// workers): the depth limit must keep the worst case inside it, even unoptimised
    /// (about 5 KiB per nested `If` in a debug build, far less optimised).
    fn parse_small_stack(src: String) -> Vec<ParseError> {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || parse(src.as_bytes()).1)
            .expect("spawn")
            .join()
            .expect("no stack overflow")
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let e = parse_small_stack(format!("x = {}1", "(".repeat(100_000)));
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].message.contains("nested too deeply"));
        let e = parse_small_stack(format!("x = {}1", "-".repeat(100_000)));
        assert!(e[0].message.contains("nested too deeply"));
        let e = parse_small_stack(format!("x = {}1", "Not ".repeat(100_000)));
        assert!(e[0].message.contains("nested too deeply"));
        let e = parse_small_stack("If a\n".repeat(100_000) + &"EndIf\n".repeat(100_000));
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].message.contains("nested too deeply"));
        let e = parse_small_stack("If a Then ".repeat(100_000));
        assert!(e[0].message.contains("nested too deeply"));
        let e = parse_small_stack(format!("x = f({}", "g(".repeat(100_000)));
        assert!(e[0].message.contains("nested too deeply"));
        // As a statement, the unclosed `(` is found first.
        let e = parse_small_stack(format!("f({}", "g(".repeat(100_000)));
        assert!(e[0].message.contains("mismatched brackets"));
        // Just inside the limit is fine.
        let depth = (MAX_DEPTH - 2) as usize;
        let e = parse_small_stack(format!(
            "Function F()\n{}{}End Function",
            "While a\n".repeat(depth),
            "Wend\n".repeat(depth)
        ));
        assert!(e.is_empty(), "{e:?}");
        let e = parse_small_stack(format!("x = {}1{}", "(".repeat(depth), ")".repeat(depth)));
        assert!(e.is_empty(), "{e:?}");
    }
}
