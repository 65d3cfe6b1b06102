//! `shared`'s tests: golden vectors, property tests of the codecs and parsers, the content files and the command-line tools (one binary: one link).

mod content_cli;
mod content_demo;
mod content_malformed;
mod content_roundtrip;
mod content_sample;
mod golden;
mod npos;
mod rcwire_cli;
mod roundtrip;
