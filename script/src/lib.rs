//! Realm Crafter's server script language, `.rsl` (the BriskVM dialect of BlitzBasic), for
//! running a game's scripts unchanged.
//!
//! # Layout
//! * [`source`]: the loader's per-line preprocessing (`FullTrim`, `!` directives, BOM);
//! * [`lexer`] and [`parser`]: bytes to an [`ast::Module`] with source spans;
//! * [`bytecode`]: the compiled form the VM runs;
//! * [`ops`]: the operator rules, shared by the compiler and the VM;
//! * [`compile`]: a set of modules (a world's `Scripts` folder) to type-checked bytecode,
//!   with `Using` resolution, BriskVM's type inference and every implicit conversion made
//!   explicit;
//! * [`vm`]: the suspendable bytecode machine. A running script is plain data (serde): it
//!   can stop at any native call or budget boundary, be saved, sent to another node and
//!   resumed there;
//! * [`natives`]: the command set's signatures, and the natives this crate runs itself.
//!
//! # Non-goals
//! This crate has no clock, no randomness, no files and no sockets: everything a script
//! does to the world goes through the [`vm::Host`] trait the game implements. It knows
//! nothing of actors or zones.

pub mod ast;
pub mod bytecode;
pub mod compile;
pub mod error;
pub mod lexer;
pub mod natives;
pub mod ops;
pub mod parser;
pub mod print;
pub mod source;
pub mod value;
pub mod vm;

pub use error::{Diagnostic, ParseError, RuntimeError, Severity};
pub use value::{RStr, Ty, Value};
