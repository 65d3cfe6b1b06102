//! Fuzzes the `.rsl` script parser (loader preprocessing, lexer and parser) on raw file
//! bytes.
//!
//! Invariants: it never panics (deep nesting is an error, not a stack overflow); every
//! error points inside the file; and when the file parses cleanly, printing the tree and
//! parsing the text again gives the same text back (the printer's output is a fixed
//! point).
#![no_main]

use libfuzzer_sys::fuzz_target;
use script::parser::parse;
use script::print;

fuzz_target!(|data: &[u8]| {
    let (module, errors) = parse(data);
    let body = data.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(data);
    let lines: Vec<&[u8]> = body.split(|&b| b == b'\n').collect();
    for e in &errors {
        let line = lines.get((e.span.line as usize).wrapping_sub(1));
        assert!(line.is_some(), "error on a line outside the file: {e:?}");
        let len = line.map_or(0, |l| l.len());
        assert!(e.span.col >= 1 && e.span.col as usize <= len + 1, "{e:?}");
    }
    if errors.is_empty() {
        let printed = print::module(&module);
        let (again, errors) = parse(&printed);
        assert!(errors.is_empty(), "printed text does not parse: {errors:?}");
        assert_eq!(
            print::module(&again),
            printed,
            "printing is not a fixed point"
        );
    }
});
