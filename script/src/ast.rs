//! The syntax tree of one `.rsl` file, as the parser produces it and the compiler reads it.
//!
//! Names keep their spelling as written (the language is case-insensitive: compare with
//! [`Ident::key`]). String literals and the source are bytes (Windows-1252 in practice),
//! never `String`. Every node carries the [`Span`] of its first token, in the coordinates
//! of the original file (1-based line and column, before the loader's per-line trimming).

/// A position in the original source file: 1-based line and column (in bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span {
    /// Line, from 1.
    pub line: u32,
    /// Column, from 1, in bytes of the original line.
    pub col: u32,
}

impl Span {
    /// A span at a line and column.
    pub fn new(line: u32, col: u32) -> Self {
        Self { line, col }
    }
}

impl std::fmt::Display for Span {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

/// A type tag written after a name: `%`, `#`, `$` or `.TypeName`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tag {
    /// `%`.
    Int,
    /// `#`.
    Float,
    /// `$`.
    Str,
    /// `.TypeName` (Blitz Types; rejected by the compiler).
    Object(String),
}

/// A name with its optional type tag.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ident {
    /// As written (without the tag).
    pub name: String,
    /// The tag written right after it, if any.
    pub tag: Option<Tag>,
    /// Where it starts.
    pub span: Span,
}

impl Ident {
    /// The case-insensitive lookup key (ASCII lower case).
    pub fn key(&self) -> String {
        self.name.to_ascii_lowercase()
    }
}

/// Loader directives (`!COMPILE`, `!ALTSYNTAX` lines).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Directives {
    /// `!COMPILE`: the module is also offered to `Using "Name.rcm"` (we do that for every
    /// script anyway).
    pub compile: bool,
    /// `!ALTSYNTAX`: BlitzMax-like syntax (rejected by the compiler).
    pub alt_syntax: bool,
}

/// One parsed file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Module {
    /// The directives found.
    pub directives: Directives,
    /// Top-level items in source order.
    pub items: Vec<Item>,
}

/// A top-level item.
#[derive(Clone, Debug, PartialEq)]
#[allow(clippy::large_enum_variant)] // A module has a few dozen items: boxing buys nothing.
pub enum Item {
    /// `Using "Module.rcm"`.
    Using {
        /// The quoted path, as bytes.
        path: Vec<u8>,
        /// Where.
        span: Span,
    },
    /// `Include "file"` (rejected by the compiler).
    Include {
        /// The quoted path.
        path: Vec<u8>,
        /// Where.
        span: Span,
    },
    /// `Function Name[tag](params) ... End Function`.
    Function(Function),
    /// `Global a[tag] [= expr], ...`.
    Global(Vec<VarDecl>),
    /// `Const a[tag] = expr, ...`.
    Const(Vec<VarDecl>),
    /// `Dim a[tag](d1[, d2 ...]), ...` at top level: declares global arrays.
    Dim(Vec<ArrayDecl>),
    /// `Type Name ... End Type` (Blitz Types; rejected by the compiler).
    Type {
        /// The type name.
        name: Ident,
        /// Where.
        span: Span,
    },
    /// Executable code at top level (Realm Crafter never runs it).
    Stmt(Stmt),
}

/// A function definition.
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    /// Name and return-type tag.
    pub name: Ident,
    /// Parameters.
    pub params: Vec<Param>,
    /// Body.
    pub body: Vec<Stmt>,
    /// The `Function` keyword.
    pub span: Span,
}

/// A function parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// Name and tag (no tag: Int).
    pub name: Ident,
    /// Default value (a literal, possibly negated).
    pub default: Option<Expr>,
}

/// One variable in `Global`, `Const` or `Local`.
#[derive(Clone, Debug, PartialEq)]
pub struct VarDecl {
    /// Name and tag.
    pub name: Ident,
    /// Initialiser.
    pub init: Option<Expr>,
}

/// One array in `Dim`.
#[derive(Clone, Debug, PartialEq)]
pub struct ArrayDecl {
    /// Name and element tag.
    pub name: Ident,
    /// Upper bounds (inclusive) of each dimension.
    pub dims: Vec<Expr>,
}

/// A statement.
#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    /// What it is.
    pub kind: StmtKind,
    /// Its first token.
    pub span: Span,
}

/// The statement forms.
#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// `target = value`.
    Assign {
        /// Where to store.
        target: LValue,
        /// What.
        value: Expr,
    },
    /// `name(args)`, `name args` or `name`: a call whose result is discarded.
    Call {
        /// Callee (the tag, if written, must match its return type).
        name: Ident,
        /// Arguments.
        args: Vec<Expr>,
    },
    /// `If` in single-line or block form (`ElseIf` / `Else If` chains become `elifs`).
    If {
        /// Condition.
        cond: Expr,
        /// Then branch.
        then: Vec<Stmt>,
        /// `ElseIf cond` branches, in order.
        elifs: Vec<(Expr, Vec<Stmt>)>,
        /// `Else` branch.
        els: Option<Vec<Stmt>>,
    },
    /// `Select subject ... Case ... Default ... End Select`.
    Select {
        /// The selector, evaluated once.
        subject: Expr,
        /// `Case` clauses in source order.
        cases: Vec<Case>,
        /// `Default` clause.
        default: Option<Vec<Stmt>>,
    },
    /// `While cond ... Wend`.
    While {
        /// Condition.
        cond: Expr,
        /// Body.
        body: Vec<Stmt>,
    },
    /// `Repeat ... Until cond` (`until: None` is `Repeat ... Forever`).
    Repeat {
        /// Body.
        body: Vec<Stmt>,
        /// The `Until` condition; `None` for `Forever`.
        until: Option<Expr>,
    },
    /// `For var = from To to [Step step] ... Next`.
    For {
        /// The loop variable.
        var: Ident,
        /// Start.
        from: Expr,
        /// Bound, re-evaluated before every pass.
        to: Expr,
        /// Step (a constant expression), default 1.
        step: Option<Expr>,
        /// Body.
        body: Vec<Stmt>,
    },
    /// `For o.T = Each T ... Next` (Blitz Types; rejected by the compiler).
    ForEach {
        /// Loop variable.
        var: Ident,
        /// The type iterated.
        type_name: Ident,
        /// Body.
        body: Vec<Stmt>,
    },
    /// `Exit`: leave the innermost loop.
    Exit,
    /// `Return [expr]` (also `Return(expr)` and `Return()`).
    Return(Option<Expr>),
    /// `End`: abort the script.
    End,
    /// `Local a[tag] [= expr], ...`.
    Local(Vec<VarDecl>),
    /// `Global` inside a function (an error the compiler reports).
    Global(Vec<VarDecl>),
    /// `Const` inside a function (an error the compiler reports).
    Const(Vec<VarDecl>),
    /// `Dim` inside a function: re-dimension (and clear) an existing global array.
    Dim(Vec<ArrayDecl>),
    /// A construct the parser recognised but the language port does not support
    /// (`Delete`, `Insert`, `Goto` labels, `Data`, BriskVM class syntax, ...). The
    /// compiler reports it with `what`.
    Unsupported {
        /// What it is, for the message (e.g. "Blitz Types (Delete)").
        what: String,
    },
}

/// One `Case` clause.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// The values compared with the selector.
    pub values: Vec<Expr>,
    /// Body.
    pub body: Vec<Stmt>,
    /// The `Case` keyword.
    pub span: Span,
}

/// The target of an assignment.
#[derive(Clone, Debug, PartialEq)]
pub enum LValue {
    /// A variable.
    Var(Ident),
    /// An array element `name(i, j)`.
    Index {
        /// The array.
        name: Ident,
        /// Indices.
        indices: Vec<Expr>,
    },
    /// `obj\field` (Blitz Types; rejected by the compiler).
    Field {
        /// The object expression as written.
        base: Box<Expr>,
        /// The field.
        field: Ident,
    },
}

/// An expression.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// What it is.
    pub kind: ExprKind,
    /// Its first token.
    pub span: Span,
}

/// Expression forms.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// An integer literal (decimal, `$hex` or `%binary`); range-checked by the compiler.
    Int(i64),
    /// A float literal.
    Float(f64),
    /// A string literal (bytes, no escapes).
    Str(Vec<u8>),
    /// `True` (1) / `False` (0) are parsed as `Int`; `Null` is its own form.
    Null,
    /// A variable (or a host global such as `hSI`).
    Var(Ident),
    /// `name(args)`: a call, or an array element when `name` is a `Dim` array.
    Call {
        /// Callee or array.
        name: Ident,
        /// Arguments or indices.
        args: Vec<Expr>,
    },
    /// A prefix operator.
    Unary {
        /// Which.
        op: UnOp,
        /// Operand.
        expr: Box<Expr>,
    },
    /// A binary operator.
    Binary {
        /// Which.
        op: BinOp,
        /// Left operand.
        lhs: Box<Expr>,
        /// Right operand.
        rhs: Box<Expr>,
    },
    /// `obj\field` (Blitz Types; rejected by the compiler).
    Field {
        /// The object.
        base: Box<Expr>,
        /// The field.
        field: Ident,
    },
    /// A construct the port does not support (`New T`, `First T`, `Last T`, `Before`,
    /// `After`, ...), named for the message.
    Unsupported {
        /// What it is.
        what: String,
    },
}

/// Prefix operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    /// `-x`.
    Neg,
    /// `+x` (a no-op, accepted on strings too).
    Pos,
    /// `Not x`: 1 if x = 0, else 0.
    Not,
}

/// Binary operators (all left-associative).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    /// `And` (bitwise, no short-circuit).
    And,
    /// `Or`.
    Or,
    /// `Xor`.
    Xor,
    /// `=`.
    Eq,
    /// `<>` or `><`.
    Ne,
    /// `<`.
    Lt,
    /// `>`.
    Gt,
    /// `<=` or `=<`.
    Le,
    /// `>=` or `=>`.
    Ge,
    /// `+`.
    Add,
    /// `-`.
    Sub,
    /// `Shl`.
    Shl,
    /// `Shr` (logical).
    Shr,
    /// `*`.
    Mul,
    /// `/`.
    Div,
    /// `Mod`.
    Mod,
    /// `^` (always Float).
    Pow,
}
