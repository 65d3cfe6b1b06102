//! The loader's per-line preprocessing (`rsl-language.md` §2.3), kept exactly because it
//! changes tokens: CR dropped, each line `FullTrim`med (blanks trimmed, every byte below
//! 0x20 deleted, TABs inside strings included), `!` directive lines replaced by a blank,
//! a leading UTF-8 BOM removed.
//!
//! The prepared text keeps one line per original line, so line numbers never move. A
//! column map remembers where every kept byte stood in the original line, so that the
//! lexer's positions can be reported in the coordinates of the file as written.

use crate::ast::{Directives, Span};

/// The UTF-8 byte order mark some editors write at the start of a file.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// A file after the loader's per-line preprocessing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Prepared {
    /// The prepared text: the trimmed lines joined with LF (no LF after the last line).
    pub text: Vec<u8>,
    /// The `!COMPILE` / `!ALTSYNTAX` flags found.
    pub directives: Directives,
    /// Where each line starts in `text` (one entry per line, the first is 0).
    line_starts: Vec<usize>,
    /// For every byte of `text` that belongs to a line (LFs excluded), the 1-based column
    /// of that byte in its original line. Indexed like `text` minus the LFs, through
    /// `line_starts` shifted by the line index.
    cols: Vec<u32>,
    /// For every line, the column just after its last original byte (used for positions
    /// at the end of a prepared line).
    end_cols: Vec<u32>,
}

impl Prepared {
    /// How many lines the file has (at least one, even when empty).
    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    /// The prepared bytes of a line (1-based line number); empty past the end.
    pub fn line(&self, line: u32) -> &[u8] {
        let Some(idx) = (line as usize).checked_sub(1) else {
            return &[];
        };
        let Some(&start) = self.line_starts.get(idx) else {
            return &[];
        };
        let end = self
            .line_starts
            .get(idx + 1)
            .map_or(self.text.len(), |next| next.saturating_sub(1));
        self.text.get(start..end).unwrap_or(&[])
    }

    /// The original 1-based column of the byte at `offset` in the prepared line `line`
    /// (1-based). An offset at or past the end of the prepared line maps to the column just
    /// after the line's last original byte that survived trimming.
    pub fn column(&self, line: u32, offset: usize) -> u32 {
        let Some(idx) = (line as usize).checked_sub(1) else {
            return 1;
        };
        let Some(&start) = self.line_starts.get(idx) else {
            return 1;
        };
        let len = self.line(line).len();
        if offset < len {
            // Byte `start + offset` of `text` is in line `idx`, which has `idx` LFs before
            // it; `cols` has no entries for LFs.
            let at = (start + offset).saturating_sub(idx);
            if let Some(&col) = self.cols.get(at) {
                return col;
            }
        }
        self.end_cols.get(idx).copied().unwrap_or(1)
    }

    /// The original position of the byte at `offset` in the prepared line `line`.
    pub fn span(&self, line: u32, offset: usize) -> Span {
        Span::new(line, self.column(line, offset))
    }
}

/// Apply the loader's preprocessing to the raw bytes of a file (§2.3, §2.8).
///
/// * A leading UTF-8 BOM is dropped (columns on line 1 count from after it).
/// * The file is split on LF; each line is `FullTrim`med: bytes `<= 0x20` are trimmed at
///   both ends, then every byte `< 0x20` left inside is deleted (CR and TAB included).
/// * A line whose first byte is then `!` is a directive: `!COMPILE` and `!ALTSYNTAX`
///   (compared case-insensitively, the whole rest of the line) set a flag, and every `!`
///   line becomes a single space.
pub fn prepare(bytes: &[u8]) -> Prepared {
    let body = bytes.strip_prefix(BOM).unwrap_or(bytes);
    let mut out = Prepared {
        text: Vec::with_capacity(body.len()),
        cols: Vec::with_capacity(body.len()),
        ..Prepared::default()
    };
    for (idx, raw) in body.split(|&b| b == b'\n').enumerate() {
        if idx > 0 {
            out.text.push(b'\n');
        }
        out.line_starts.push(out.text.len());
        prepare_line(raw, &mut out);
    }
    out
}

/// `FullTrim` one original line (without its LF) into `out`, with its column map.
fn prepare_line(raw: &[u8], out: &mut Prepared) {
    let first = raw.iter().position(|&b| b > 0x20);
    let last = raw.iter().rposition(|&b| b > 0x20);
    let (Some(first), Some(last)) = (first, last) else {
        // A blank line: nothing survives.
        out.end_cols.push(1);
        return;
    };
    let kept = raw.get(first..=last).unwrap_or(&[]);
    let line_start = out.text.len();
    let cols_start = out.cols.len();
    for (i, &b) in kept.iter().enumerate() {
        if b >= 0x20 {
            out.text.push(b);
            out.cols.push(col_of(first + i));
        }
    }
    out.end_cols.push(col_of(last + 1));
    if out.text.get(line_start) == Some(&b'!') {
        let directive = out.text.get(line_start + 1..).unwrap_or(&[]);
        if directive.eq_ignore_ascii_case(b"COMPILE") {
            out.directives.compile = true;
        } else if directive.eq_ignore_ascii_case(b"ALTSYNTAX") {
            out.directives.alt_syntax = true;
        }
        let bang_col = out.cols.get(cols_start).copied().unwrap_or(1);
        out.text.truncate(line_start);
        out.cols.truncate(cols_start);
        out.text.push(b' ');
        out.cols.push(bang_col);
    }
}

/// The 1-based column of a 0-based byte index, saturating.
fn col_of(index: usize) -> u32 {
    u32::try_from(index.saturating_add(1)).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_and_deletes_control_bytes() {
        let p = prepare(b"\t  x\t;c  \r\n\"a\tb\"\r\n");
        assert_eq!(p.text, b"x;c\n\"ab\"\n");
        assert_eq!(p.line_count(), 3);
        assert_eq!(p.line(1), b"x;c");
        assert_eq!(p.line(2), b"\"ab\"");
        assert_eq!(p.line(3), b"");
    }

    #[test]
    fn columns_point_into_the_original_line() {
        let p = prepare(b"\t  x\t;c\nabc");
        // `x` was at column 4, `;` at column 6 (after the deleted TAB), `c` at 7.
        assert_eq!(p.column(1, 0), 4);
        assert_eq!(p.column(1, 1), 6);
        assert_eq!(p.column(1, 2), 7);
        // The end of the line is just after its last original byte.
        assert_eq!(p.column(1, 3), 8);
        assert_eq!(p.span(2, 2), Span::new(2, 3));
        // Out of range lines do not panic.
        assert_eq!(p.column(0, 0), 1);
        assert_eq!(p.column(9, 9), 1);
    }

    #[test]
    fn directives_become_a_space_and_keep_line_numbers() {
        let p = prepare(b"!Compile\n  !altsyntax \n!other\nx");
        assert!(p.directives.compile);
        assert!(p.directives.alt_syntax);
        assert_eq!(p.text, b" \n \n \nx");
        assert_eq!(p.column(2, 0), 3);
        let p = prepare(b"!COMPILE now\n");
        assert!(!p.directives.compile);
    }

    #[test]
    fn a_leading_bom_is_dropped() {
        let p = prepare(b"\xEF\xBB\xBFab");
        assert_eq!(p.text, b"ab");
        assert_eq!(p.column(1, 0), 1);
        let p = prepare(b"");
        assert_eq!(p.line_count(), 1);
        assert_eq!(p.text, b"");
    }

    #[test]
    fn cr_is_dropped_anywhere() {
        let p = prepare(b"a\rb\r\r\n");
        assert_eq!(p.text, b"ab\n");
        assert_eq!(p.column(1, 1), 3);
    }
}
