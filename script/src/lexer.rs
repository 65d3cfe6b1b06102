//! Tokens of RSL: the prepared text of a file (see [`crate::source`]) to a list of
//! tokens, each with its position in the original file.
//!
//! The source is bytes (Windows-1252 in practice), never UTF-8: string literals stay
//! `Vec<u8>`. Identifiers are ASCII letters, digits and `_`, starting with a letter, and
//! carry the type tag (`%`, `#`, `$` or `.TypeName`) written immediately after them.
//! Keywords are case-insensitive; the two-word keywords (`End If`, `Else If`,
//! `End Function`, ...) accept one or more blanks between their words. `;` starts a
//! comment to the end of the line, a trailing `..` continues the line, and a line that
//! starts with the word `Rem` opens a comment block closed by a line starting with
//! `EndRem` (or `End Rem`).

use crate::ast::{Span, Tag};
use crate::error::ParseError;
use crate::source::Prepared;

/// The reserved words (classic core, the merged two-word forms and the BriskVM
/// extension words of §17). `Int`, `Float`, `String`, `Goto`, `Data`, `Read`, `Pi`,
/// `Str`, `Abs`, ... are NOT keywords: they are identifiers.
///
/// Each variant is the word it is named after, in any case (`Self_` is `Self`); the
/// `End...` variants are also the two-word forms (`EndIf` is `End If` too, `EndFunction`
/// is `End Function`), and `ElseIf` is also `Else If`. See [`Kw::text`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kw {
    If,
    Then,
    Else,
    ElseIf,
    EndIf,
    While,
    Wend,
    Repeat,
    Until,
    Forever,
    For,
    To,
    Step,
    Next,
    Each,
    Select,
    Case,
    Default,
    Function,
    EndFunction,
    Return,
    Exit,
    End,
    Local,
    Global,
    Const,
    Dim,
    Type,
    EndType,
    Field,
    New,
    Delete,
    First,
    Last,
    Before,
    After,
    Insert,
    Null,
    True,
    False,
    And,
    Or,
    Xor,
    Not,
    Mod,
    Shl,
    Shr,
    Using,
    Include,
    EndSelect,
    // BriskVM extensions.
    Method,
    EndMethod,
    Self_,
    Super,
    Extends,
    Try,
    EndTry,
    Catch,
    Throw,
    Finally,
    Assert,
    Property,
    EndProperty,
    Public,
    Private,
    Protected,
    Friendly,
    Inner,
    EndInner,
    EachIn,
    Ref,
}

/// Single-word keywords, lower case.
const KEYWORDS: &[(&str, Kw)] = &[
    ("if", Kw::If),
    ("then", Kw::Then),
    ("else", Kw::Else),
    ("elseif", Kw::ElseIf),
    ("endif", Kw::EndIf),
    ("while", Kw::While),
    ("wend", Kw::Wend),
    ("repeat", Kw::Repeat),
    ("until", Kw::Until),
    ("forever", Kw::Forever),
    ("for", Kw::For),
    ("to", Kw::To),
    ("step", Kw::Step),
    ("next", Kw::Next),
    ("each", Kw::Each),
    ("select", Kw::Select),
    ("case", Kw::Case),
    ("default", Kw::Default),
    ("function", Kw::Function),
    ("return", Kw::Return),
    ("exit", Kw::Exit),
    ("end", Kw::End),
    ("local", Kw::Local),
    ("global", Kw::Global),
    ("const", Kw::Const),
    ("dim", Kw::Dim),
    ("type", Kw::Type),
    ("field", Kw::Field),
    ("new", Kw::New),
    ("delete", Kw::Delete),
    ("first", Kw::First),
    ("last", Kw::Last),
    ("before", Kw::Before),
    ("after", Kw::After),
    ("insert", Kw::Insert),
    ("null", Kw::Null),
    ("true", Kw::True),
    ("false", Kw::False),
    ("and", Kw::And),
    ("or", Kw::Or),
    ("xor", Kw::Xor),
    ("not", Kw::Not),
    ("mod", Kw::Mod),
    ("shl", Kw::Shl),
    ("shr", Kw::Shr),
    ("using", Kw::Using),
    ("include", Kw::Include),
    ("method", Kw::Method),
    ("self", Kw::Self_),
    ("super", Kw::Super),
    ("extends", Kw::Extends),
    ("try", Kw::Try),
    ("catch", Kw::Catch),
    ("throw", Kw::Throw),
    ("finally", Kw::Finally),
    ("assert", Kw::Assert),
    ("property", Kw::Property),
    ("public", Kw::Public),
    ("private", Kw::Private),
    ("protected", Kw::Protected),
    ("friendly", Kw::Friendly),
    ("inner", Kw::Inner),
    ("endinner", Kw::EndInner),
    ("eachin", Kw::EachIn),
    ("ref", Kw::Ref),
];

/// Look a word up in the keyword table (case-insensitively).
pub fn keyword(word: &[u8]) -> Option<Kw> {
    KEYWORDS
        .iter()
        .find(|(k, _)| k.as_bytes().eq_ignore_ascii_case(word))
        .map(|&(_, kw)| kw)
}

impl Kw {
    /// The keyword as it is usually written.
    pub fn text(self) -> &'static str {
        match self {
            Kw::If => "If",
            Kw::Then => "Then",
            Kw::Else => "Else",
            Kw::ElseIf => "ElseIf",
            Kw::EndIf => "EndIf",
            Kw::While => "While",
            Kw::Wend => "Wend",
            Kw::Repeat => "Repeat",
            Kw::Until => "Until",
            Kw::Forever => "Forever",
            Kw::For => "For",
            Kw::To => "To",
            Kw::Step => "Step",
            Kw::Next => "Next",
            Kw::Each => "Each",
            Kw::Select => "Select",
            Kw::Case => "Case",
            Kw::Default => "Default",
            Kw::Function => "Function",
            Kw::EndFunction => "End Function",
            Kw::Return => "Return",
            Kw::Exit => "Exit",
            Kw::End => "End",
            Kw::Local => "Local",
            Kw::Global => "Global",
            Kw::Const => "Const",
            Kw::Dim => "Dim",
            Kw::Type => "Type",
            Kw::EndType => "End Type",
            Kw::Field => "Field",
            Kw::New => "New",
            Kw::Delete => "Delete",
            Kw::First => "First",
            Kw::Last => "Last",
            Kw::Before => "Before",
            Kw::After => "After",
            Kw::Insert => "Insert",
            Kw::Null => "Null",
            Kw::True => "True",
            Kw::False => "False",
            Kw::And => "And",
            Kw::Or => "Or",
            Kw::Xor => "Xor",
            Kw::Not => "Not",
            Kw::Mod => "Mod",
            Kw::Shl => "Shl",
            Kw::Shr => "Shr",
            Kw::Using => "Using",
            Kw::Include => "Include",
            Kw::EndSelect => "End Select",
            Kw::Method => "Method",
            Kw::EndMethod => "End Method",
            Kw::Self_ => "Self",
            Kw::Super => "Super",
            Kw::Extends => "Extends",
            Kw::Try => "Try",
            Kw::EndTry => "End Try",
            Kw::Catch => "Catch",
            Kw::Throw => "Throw",
            Kw::Finally => "Finally",
            Kw::Assert => "Assert",
            Kw::Property => "Property",
            Kw::EndProperty => "End Property",
            Kw::Public => "Public",
            Kw::Private => "Private",
            Kw::Protected => "Protected",
            Kw::Friendly => "Friendly",
            Kw::Inner => "Inner",
            Kw::EndInner => "EndInner",
            Kw::EachIn => "EachIn",
            Kw::Ref => "Ref",
        }
    }
}

/// What a token is.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// A name with the type tag written immediately after it.
    Ident {
        /// As written.
        name: String,
        /// `%`, `#`, `$` or `.TypeName`.
        tag: Option<Tag>,
    },
    /// A reserved word.
    Kw(Kw),
    /// An integer literal: decimal, `$hex` or `%binary`.
    Int(i64),
    /// A float literal: `1.5`, `.5`, `1.`.
    Float(f64),
    /// A string literal, without its quotes.
    Str(Vec<u8>),
    /// `+`.
    Plus,
    /// `-`.
    Minus,
    /// `*`.
    Star,
    /// `/`.
    Slash,
    /// `^`.
    Caret,
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
    /// `(`.
    LParen,
    /// `)`.
    RParen,
    /// `,`.
    Comma,
    /// `:`.
    Colon,
    /// `.` (not followed by a digit, not a tag).
    Dot,
    /// `\`.
    Backslash,
    /// `[`.
    LBracket,
    /// `]`.
    RBracket,
    /// Any other byte (an error for the parser to report where it matters).
    Other(u8),
    /// The end of a line.
    Newline,
    /// The end of the file.
    Eof,
}

impl Tok {
    /// A short description for error messages, e.g. "`Wend`" or "end of line".
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident { name, .. } => format!("`{name}`"),
            Tok::Kw(kw) => format!("`{}`", kw.text()),
            Tok::Int(_) | Tok::Float(_) => "a number".to_owned(),
            Tok::Str(_) => "a string".to_owned(),
            Tok::Plus => "`+`".to_owned(),
            Tok::Minus => "`-`".to_owned(),
            Tok::Star => "`*`".to_owned(),
            Tok::Slash => "`/`".to_owned(),
            Tok::Caret => "`^`".to_owned(),
            Tok::Eq => "`=`".to_owned(),
            Tok::Ne => "`<>`".to_owned(),
            Tok::Lt => "`<`".to_owned(),
            Tok::Gt => "`>`".to_owned(),
            Tok::Le => "`<=`".to_owned(),
            Tok::Ge => "`>=`".to_owned(),
            Tok::LParen => "`(`".to_owned(),
            Tok::RParen => "`)`".to_owned(),
            Tok::Comma => "`,`".to_owned(),
            Tok::Colon => "`:`".to_owned(),
            Tok::Dot => "`.`".to_owned(),
            Tok::Backslash => "`\\`".to_owned(),
            Tok::LBracket => "`[`".to_owned(),
            Tok::RBracket => "`]`".to_owned(),
            Tok::Other(b) if b.is_ascii_graphic() => format!("`{}`", char::from(*b)),
            Tok::Other(b) => format!("byte 0x{b:02X}"),
            Tok::Newline => "end of line".to_owned(),
            Tok::Eof => "end of file".to_owned(),
        }
    }
}

/// A token and where it starts in the original file.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    /// What it is.
    pub tok: Tok,
    /// Its first byte, in the original file's coordinates.
    pub span: Span,
}

/// The largest integer literal value (the compiler range-checks further).
const MAX_INT: u64 = i64::MAX.unsigned_abs();

/// Split a prepared file into tokens. The list always ends with [`Tok::Eof`]; every line
/// but the last ends with [`Tok::Newline`] (except where a trailing `..` continues it).
/// Lexical errors (an unterminated string, a number too large, a misplaced `..`, an
/// unclosed `Rem` block) are returned beside the tokens, which stay usable.
pub fn lex(src: &Prepared) -> (Vec<Token>, Vec<ParseError>) {
    let mut lx = Lexer {
        src,
        toks: Vec::new(),
        errors: Vec::new(),
        continues: false,
    };
    let count = u32::try_from(src.line_count()).unwrap_or(u32::MAX).max(1);
    let mut rem_open: Option<Span> = None;
    for line in 1..=count {
        let bytes = src.line(line);
        if rem_open.is_some() {
            if is_end_rem(bytes) {
                rem_open = None;
            }
        } else if is_rem(bytes) {
            rem_open = Some(src.span(line, 0));
        } else {
            lx.line(line, bytes);
        }
        if line < count && !lx.continues {
            lx.push(Tok::Newline, line, bytes.len());
        }
        lx.continues = false;
    }
    if let Some(opened) = rem_open {
        lx.errors.push(ParseError::new(
            opened,
            format!("`EndRem` missing for the Rem block opened at {opened}"),
        ));
    }
    lx.push(Tok::Eof, count, src.line(count).len());
    (lx.toks, lx.errors)
}

/// Whether a prepared line opens a `Rem` block: its first word is `Rem`, alone or
/// followed by a blank and text that does not make it an assignment (`Rem = 1`).
fn is_rem(line: &[u8]) -> bool {
    let Some(rest) = strip_word(line, b"rem") else {
        return false;
    };
    match rest.first() {
        None => true,
        Some(b' ') => rest.iter().find(|&&b| b != b' ') != Some(&b'='),
        Some(_) => false,
    }
}

/// Whether a prepared line closes a `Rem` block: it starts with the word `EndRem`, or
/// `End` and `Rem` separated by blanks.
fn is_end_rem(line: &[u8]) -> bool {
    if let Some(rest) = strip_word(line, b"endrem") {
        return !rest.first().is_some_and(|&b| is_ident_byte(b));
    }
    if let Some(rest) = strip_word(line, b"end") {
        let rest = trim_blanks(rest);
        if let Some(after) = strip_word(rest, b"rem") {
            return !after.first().is_some_and(|&b| is_ident_byte(b));
        }
    }
    false
}

/// `line` without a leading word `word` (case-insensitive, whole word), if it starts
/// with it.
fn strip_word<'a>(line: &'a [u8], word: &[u8]) -> Option<&'a [u8]> {
    let head = line.get(..word.len())?;
    if !head.eq_ignore_ascii_case(word) {
        return None;
    }
    let rest = line.get(word.len()..).unwrap_or(&[]);
    if rest.first().is_some_and(|&b| is_ident_byte(b)) {
        return None;
    }
    Some(rest)
}

/// `bytes` without its leading blanks.
fn trim_blanks(bytes: &[u8]) -> &[u8] {
    let n = bytes.iter().take_while(|&&b| b == b' ').count();
    bytes.get(n..).unwrap_or(&[])
}

/// A byte that may continue an identifier.
fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The words that may follow `End` (after one or more blanks) to make one keyword.
fn end_pair(word: &[u8]) -> Option<Kw> {
    match keyword(word)? {
        Kw::If => Some(Kw::EndIf),
        Kw::Function => Some(Kw::EndFunction),
        Kw::Select => Some(Kw::EndSelect),
        Kw::Type => Some(Kw::EndType),
        Kw::Method => Some(Kw::EndMethod),
        Kw::Try => Some(Kw::EndTry),
        Kw::Property => Some(Kw::EndProperty),
        _ => None,
    }
}

/// The tokenizer's state over one file.
struct Lexer<'a> {
    src: &'a Prepared,
    toks: Vec<Token>,
    errors: Vec<ParseError>,
    /// The current line ended with `..`: no newline token after it.
    continues: bool,
}

impl Lexer<'_> {
    fn push(&mut self, tok: Tok, line: u32, offset: usize) {
        let span = self.src.span(line, offset);
        self.toks.push(Token { tok, span });
    }

    fn error(&mut self, line: u32, offset: usize, message: impl Into<String>) {
        let span = self.src.span(line, offset);
        self.errors.push(ParseError::new(span, message));
    }

    /// Tokenize one prepared line (no newline token).
    fn line(&mut self, line: u32, b: &[u8]) {
        let at = |i: usize| b.get(i).copied();
        let mut i = 0;
        while let Some(c) = at(i) {
            let start = i;
            let tok = match c {
                b' ' => {
                    i += 1;
                    continue;
                }
                b';' => break,
                b'"' => {
                    let body = b.get(i + 1..).unwrap_or(&[]);
                    if let Some(len) = body.iter().position(|&q| q == b'"') {
                        i += len + 2;
                        Tok::Str(body.get(..len).unwrap_or(&[]).to_vec())
                    } else {
                        self.error(
                            line,
                            start,
                            "unterminated string: a string must close on its own line",
                        );
                        i = b.len();
                        Tok::Str(body.to_vec())
                    }
                }
                b'0'..=b'9' => {
                    let (tok, end) = self.number(line, b, i);
                    i = end;
                    tok
                }
                b'.' if at(i + 1).is_some_and(|d| d.is_ascii_digit()) => {
                    let (tok, end) = self.number(line, b, i);
                    i = end;
                    tok
                }
                b'.' if at(i + 1) == Some(b'.') => {
                    let rest = trim_blanks(b.get(i + 2..).unwrap_or(&[]));
                    if rest.first().is_none_or(|&r| r == b';') {
                        self.continues = true;
                        break;
                    }
                    self.error(
                        line,
                        start,
                        "a line continuation `..` must appear at the end of a line",
                    );
                    i += 2;
                    continue;
                }
                b'$' if at(i + 1).is_some_and(|d| d.is_ascii_hexdigit()) => {
                    let (tok, end) = self.radix(line, b, i, 16);
                    i = end;
                    tok
                }
                b'%' if matches!(at(i + 1), Some(b'0' | b'1')) => {
                    let (tok, end) = self.radix(line, b, i, 2);
                    i = end;
                    tok
                }
                b'a'..=b'z' | b'A'..=b'Z' => {
                    let (tok, end) = word(b, i);
                    i = end;
                    tok
                }
                _ => {
                    let next = at(i + 1);
                    let (tok, len) = match (c, next) {
                        (b'<', Some(b'>')) | (b'>', Some(b'<')) => (Tok::Ne, 2),
                        (b'<', Some(b'=')) | (b'=', Some(b'<')) => (Tok::Le, 2),
                        (b'>', Some(b'=')) | (b'=', Some(b'>')) => (Tok::Ge, 2),
                        (b'+', _) => (Tok::Plus, 1),
                        (b'-', _) => (Tok::Minus, 1),
                        (b'*', _) => (Tok::Star, 1),
                        (b'/', _) => (Tok::Slash, 1),
                        (b'^', _) => (Tok::Caret, 1),
                        (b'=', _) => (Tok::Eq, 1),
                        (b'<', _) => (Tok::Lt, 1),
                        (b'>', _) => (Tok::Gt, 1),
                        (b'(', _) => (Tok::LParen, 1),
                        (b')', _) => (Tok::RParen, 1),
                        (b',', _) => (Tok::Comma, 1),
                        (b':', _) => (Tok::Colon, 1),
                        (b'.', _) => (Tok::Dot, 1),
                        (b'\\', _) => (Tok::Backslash, 1),
                        (b'[', _) => (Tok::LBracket, 1),
                        (b']', _) => (Tok::RBracket, 1),
                        _ => (Tok::Other(c), 1),
                    };
                    i += len;
                    tok
                }
            };
            self.push(tok, line, start);
        }
    }

    /// A decimal number starting at `i` (a digit, or `.` then a digit).
    fn number(&mut self, line: u32, b: &[u8], i: usize) -> (Tok, usize) {
        let digits = |from: usize| {
            b.get(from..)
                .unwrap_or(&[])
                .iter()
                .take_while(|d| d.is_ascii_digit())
                .count()
        };
        let mut end = i + digits(i);
        if b.get(end) == Some(&b'.') {
            end += 1;
            end += digits(end);
            let text = b.get(i..end).unwrap_or(&[]);
            let value = std::str::from_utf8(text)
                .ok()
                .and_then(|t| t.parse::<f64>().ok())
                .unwrap_or(0.0);
            if !value.is_finite() {
                self.error(line, i, "float literal too large");
                return (Tok::Float(0.0), end);
            }
            return (Tok::Float(value), end);
        }
        let mut value: u64 = 0;
        let mut overflow = false;
        for &d in b.get(i..end).unwrap_or(&[]) {
            match value
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(d - b'0')))
            {
                Some(v) if v <= MAX_INT => value = v,
                _ => overflow = true,
            }
        }
        if overflow {
            self.error(line, i, "integer literal too large");
        }
        (Tok::Int(i64::try_from(value).unwrap_or(i64::MAX)), end)
    }

    /// A `$hex` or `%binary` literal starting at `i` (the `$` or `%`). Like Blitz, a value
    /// that fits in 32 bits is read as a 32-bit pattern (`$FFFFFFFF` is -1); a longer one
    /// keeps its value for the compiler's range check.
    fn radix(&mut self, line: u32, b: &[u8], i: usize, radix: u32) -> (Tok, usize) {
        let mut value: u64 = 0;
        let mut overflow = false;
        let mut end = i + 1;
        while let Some(d) = b.get(end).and_then(|&c| char::from(c).to_digit(radix)) {
            match value
                .checked_mul(u64::from(radix))
                .and_then(|v| v.checked_add(u64::from(d)))
            {
                Some(v) if v <= MAX_INT => value = v,
                _ => overflow = true,
            }
            end += 1;
        }
        if overflow {
            self.error(line, i, "integer literal too large");
        }
        let n = match u32::try_from(value) {
            Ok(v32) => i64::from(v32.cast_signed()),
            Err(_) => i64::try_from(value).unwrap_or(i64::MAX),
        };
        (Tok::Int(n), end)
    }
}

/// An identifier (with its tag) or a keyword starting at `i` (a letter). Returns the
/// token and where the next one starts.
fn word(b: &[u8], i: usize) -> (Tok, usize) {
    let ident_len = |from: usize| {
        b.get(from..)
            .unwrap_or(&[])
            .iter()
            .take_while(|&&c| is_ident_byte(c))
            .count()
    };
    let end = i + ident_len(i);
    let text = b.get(i..end).unwrap_or(&[]);
    if let Some(kw) = keyword(text) {
        // Two-word keywords: `End If`, `Else If`, `End Function`, ... with blanks between.
        if matches!(kw, Kw::End | Kw::Else) {
            let blanks = b
                .get(end..)
                .unwrap_or(&[])
                .iter()
                .take_while(|&&c| c == b' ')
                .count();
            let second = end + blanks;
            if blanks > 0 && b.get(second).is_some_and(u8::is_ascii_alphabetic) {
                let second_end = second + ident_len(second);
                let word2 = b.get(second..second_end).unwrap_or(&[]);
                let merged = if kw == Kw::End {
                    end_pair(word2)
                } else {
                    (keyword(word2) == Some(Kw::If)).then_some(Kw::ElseIf)
                };
                if let Some(merged) = merged {
                    return (Tok::Kw(merged), second_end);
                }
            }
        }
        return (Tok::Kw(kw), end);
    }
    let name = String::from_utf8_lossy(text).into_owned();
    let (tag, next) = match b.get(end) {
        Some(b'%') => (Some(Tag::Int), end + 1),
        Some(b'#') => (Some(Tag::Float), end + 1),
        Some(b'$') => (Some(Tag::Str), end + 1),
        Some(b'.') if b.get(end + 1).is_some_and(u8::is_ascii_alphabetic) => {
            let tend = end + 1 + ident_len(end + 1);
            let tname = b.get(end + 1..tend).unwrap_or(&[]);
            (
                Some(Tag::Object(String::from_utf8_lossy(tname).into_owned())),
                tend,
            )
        }
        _ => (None, end),
    };
    (Tok::Ident { name, tag }, next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::prepare;

    fn toks(src: &str) -> Vec<Tok> {
        let (t, e) = lex(&prepare(src.as_bytes()));
        assert!(e.is_empty(), "{e:?}");
        t.into_iter().map(|t| t.tok).collect()
    }

    fn id(name: &str, tag: Option<Tag>) -> Tok {
        Tok::Ident {
            name: name.to_owned(),
            tag,
        }
    }

    #[test]
    fn keywords_are_case_insensitive_and_builtins_are_not_keywords() {
        assert_eq!(
            toks("iF ENDIF wEnD Int String Goto Pi Str Data Abs"),
            vec![
                Tok::Kw(Kw::If),
                Tok::Kw(Kw::EndIf),
                Tok::Kw(Kw::Wend),
                id("Int", None),
                id("String", None),
                id("Goto", None),
                id("Pi", None),
                id("Str", None),
                id("Data", None),
                id("Abs", None),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn two_word_keywords_take_several_blanks() {
        assert_eq!(
            toks("End   If\nelse  if\nEnd Function\nEND SELECT\nEnd Type\nEndIf\nElseIf\nEnd Iffy"),
            vec![
                Tok::Kw(Kw::EndIf),
                Tok::Newline,
                Tok::Kw(Kw::ElseIf),
                Tok::Newline,
                Tok::Kw(Kw::EndFunction),
                Tok::Newline,
                Tok::Kw(Kw::EndSelect),
                Tok::Newline,
                Tok::Kw(Kw::EndType),
                Tok::Newline,
                Tok::Kw(Kw::EndIf),
                Tok::Newline,
                Tok::Kw(Kw::ElseIf),
                Tok::Newline,
                Tok::Kw(Kw::End),
                id("Iffy", None),
                Tok::Eof
            ]
        );
        // A TAB between the words is deleted by the loader: `End<TAB>If` is `EndIf`.
        assert_eq!(toks("End\tIf"), vec![Tok::Kw(Kw::EndIf), Tok::Eof]);
    }

    #[test]
    fn tags_bind_only_right_after_an_identifier() {
        assert_eq!(
            toks("a% b# c$ o.T x %101 $FF $ffffffff"),
            vec![
                id("a", Some(Tag::Int)),
                id("b", Some(Tag::Float)),
                id("c", Some(Tag::Str)),
                id("o", Some(Tag::Object("T".to_owned()))),
                id("x", None),
                Tok::Int(5),
                Tok::Int(255),
                Tok::Int(-1),
                Tok::Eof
            ]
        );
        assert_eq!(
            toks("P%=0 S$(1) Q#=.5"),
            vec![
                id("P", Some(Tag::Int)),
                Tok::Eq,
                Tok::Int(0),
                id("S", Some(Tag::Str)),
                Tok::LParen,
                Tok::Int(1),
                Tok::RParen,
                id("Q", Some(Tag::Float)),
                Tok::Eq,
                Tok::Float(0.5),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn numbers() {
        assert_eq!(
            toks("123 1.5 .5 1. 0.0 9223372036854775807"),
            vec![
                Tok::Int(123),
                Tok::Float(1.5),
                Tok::Float(0.5),
                Tok::Float(1.0),
                Tok::Float(0.0),
                Tok::Int(i64::MAX),
                Tok::Eof
            ]
        );
        let (_, e) = lex(&prepare(b"99999999999999999999"));
        assert_eq!(e.len(), 1);
        let (_, e) = lex(&prepare(format!("{}.0", "9".repeat(400)).as_bytes()));
        assert_eq!(e.len(), 1);
        assert_eq!(toks("$100000000"), vec![Tok::Int(1 << 32), Tok::Eof]);
    }

    #[test]
    fn operators() {
        assert_eq!(
            toks("<> >< <= =< >= => < > = + - * / ^ ( ) , : . \\ [ ] @"),
            vec![
                Tok::Ne,
                Tok::Ne,
                Tok::Le,
                Tok::Le,
                Tok::Ge,
                Tok::Ge,
                Tok::Lt,
                Tok::Gt,
                Tok::Eq,
                Tok::Plus,
                Tok::Minus,
                Tok::Star,
                Tok::Slash,
                Tok::Caret,
                Tok::LParen,
                Tok::RParen,
                Tok::Comma,
                Tok::Colon,
                Tok::Dot,
                Tok::Backslash,
                Tok::LBracket,
                Tok::RBracket,
                Tok::Other(b'@'),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn strings_are_bytes_without_escapes() {
        let (t, e) = lex(&prepare(b"\"a\\b~c;\xE9\" ; comment"));
        assert!(e.is_empty());
        assert_eq!(t[0].tok, Tok::Str(b"a\\b~c;\xE9".to_vec()));
        assert_eq!(t[1].tok, Tok::Eof);
        let (t, e) = lex(&prepare(b"x = \"abc\nnext"));
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].span, Span::new(1, 5));
        assert_eq!(t[2].tok, Tok::Str(b"abc".to_vec()));
        assert_eq!(t[3].tok, Tok::Newline);
    }

    #[test]
    fn comments_continuations_and_rem_blocks() {
        assert_eq!(
            toks("a ; b\nc ..\nd ..  ; note\ne"),
            vec![
                id("a", None),
                Tok::Newline,
                id("c", None),
                id("d", None),
                id("e", None),
                Tok::Eof
            ]
        );
        assert_eq!(
            toks("Rem\nx y\nEnd Rem\nRem this too\nz\nENDREM\nRem = 1"),
            vec![
                Tok::Newline,
                Tok::Newline,
                Tok::Newline,
                Tok::Newline,
                Tok::Newline,
                Tok::Newline,
                id("Rem", None),
                Tok::Eq,
                Tok::Int(1),
                Tok::Eof
            ]
        );
        let (_, e) = lex(&prepare(b"a .. b"));
        assert_eq!(e.len(), 1);
        let (_, e) = lex(&prepare(b"Rem\nnever closed"));
        assert_eq!(e.len(), 1);
    }

    #[test]
    fn spans_are_original_positions() {
        let (t, _) = lex(&prepare(b"!COMPILE\n\tIf\tx = 1"));
        assert_eq!(t[0].tok, Tok::Newline);
        assert_eq!(t[1].span, Span::new(2, 2));
        // The TAB between `If` and `x` is deleted: `Ifx` is one identifier.
        assert_eq!(t[1].tok, id("Ifx", None));
        assert_eq!(t[2].span, Span::new(2, 7));
    }
}
