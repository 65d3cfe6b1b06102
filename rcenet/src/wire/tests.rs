//! Golden datagrams from the spec and round trips.
