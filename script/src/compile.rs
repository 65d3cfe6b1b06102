//! The compiler: modules to type-checked bytecode.
