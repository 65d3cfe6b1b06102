//! Peer-level unit tests: time reconstruction, RTT.
