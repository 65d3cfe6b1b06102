//! Gateway: terminates client QUIC connections and routes each session to its zone actor.
