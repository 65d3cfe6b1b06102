//! Host-level unit tests: the handshake in both roles and the intake checks.
