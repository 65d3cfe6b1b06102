//! The bytecode VM.
