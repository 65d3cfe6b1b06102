//! The loader's per-line preprocessing (`rsl-language.md` §2.3), kept exactly because it
//! changes tokens: CR dropped, each line `FullTrim`med (blanks trimmed, every byte below
//! 0x20 deleted, TABs inside strings included), `!` directive lines replaced by a blank,
//! a leading UTF-8 BOM removed.
