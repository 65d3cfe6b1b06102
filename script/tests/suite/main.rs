//! The script language's tests: parser and VM properties, the sample scripts, the pure natives and the command table (one binary: one link).

mod natives_pure;
mod natives_table;
mod parser_props;
mod parser_samples;
mod vm_lang;
mod vm_props;
