//! Tokens of RSL.
