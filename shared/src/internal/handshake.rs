//! The gateway's side of the internal handshake as a sans-IO state machine.
//!
//! Feed it every decoded envelope (or decode error) from a node's control stream until it
//! says [`Step::Registered`] or [`Step::Refuse`]; send what it returns. It takes the
//! cluster secret, a fresh server nonce and the connection's TLS exporter value as
//! inputs (no RNG, no clock here).

use super::codec::CodecError;
use super::{Envelope, Msg, PROTOCOL_VERSION, RefuseReason, RunningInstance, auth};

/// What the gateway does next.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Nothing to send; keep reading.
    Continue,
    /// Send this message and keep reading.
    Send(Msg),
    /// Send this `Refused` message, then close the connection (application code 2).
    Refuse(Msg),
    /// The node is authenticated and registered: send `reply` (a `RegisterAck`), then
    /// route its traffic.
    Registered {
        /// Node id.
        node_id: String,
        /// Where other nodes reach it.
        advertised_addr: String,
        /// Instances it offers to host.
        capacity: u32,
        /// Instances it already runs (after a gateway restart).
        running: Vec<RunningInstance>,
        /// The `RegisterAck` to send.
        reply: Msg,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    AwaitHello,
    AwaitAuth { client_nonce: [u8; 32] },
    AwaitRegister,
    Done,
}

/// One node connection's handshake, gateway side.
#[derive(Debug)]
pub struct GatewayHandshake {
    secret: Vec<u8>,
    server_nonce: [u8; 32],
    /// The commitment's blind (fresh random bytes from the caller).
    blind: [u8; 32],
    exporter: Vec<u8>,
    gateway_id: String,
    heartbeat_ms: u64,
    state: State,
}

impl GatewayHandshake {
    /// A handshake for one connection.
    pub fn new(
        secret: &[u8],
        server_nonce: [u8; 32],
        blind: [u8; 32],
        exporter: &[u8],
        gateway_id: &str,
        heartbeat_ms: u64,
    ) -> Self {
        Self {
            secret: secret.to_vec(),
            server_nonce,
            blind,
            exporter: exporter.to_vec(),
            gateway_id: gateway_id.to_owned(),
            heartbeat_ms,
            state: State::AwaitHello,
        }
    }

    fn refuse(&mut self, reason: RefuseReason) -> Step {
        self.state = State::Done;
        Step::Refuse(Msg::Refused { reason })
    }

    /// Handle one decoded envelope (or the decoder's error).
    pub fn on_envelope(&mut self, env: Result<Envelope, CodecError>) -> Step {
        let env = match env {
            Ok(e) => e,
            Err(CodecError::VersionMismatch { ours, theirs }) => {
                return self.refuse(RefuseReason::VersionMismatch { ours, theirs });
            }
            Err(e) => return self.refuse(RefuseReason::Other(e.to_string())),
        };
        match (self.state, env.msg) {
            (State::AwaitHello, Msg::Hello { client_nonce, .. }) => {
                let proof = auth::gateway_proof(
                    &self.secret,
                    &client_nonce,
                    &self.server_nonce,
                    &self.exporter,
                );
                self.state = State::AwaitAuth { client_nonce };
                // Only the commitment now: the proof is opened once the node proved itself.
                Step::Send(Msg::Challenge {
                    server_nonce: self.server_nonce,
                    commitment: auth::commitment(&proof, &self.blind),
                })
            }
            (State::AwaitAuth { client_nonce }, Msg::Auth { proof }) => {
                if auth::verify_node(
                    &self.secret,
                    &client_nonce,
                    &self.server_nonce,
                    &self.exporter,
                    &proof,
                ) {
                    self.state = State::AwaitRegister;
                    // Open the commitment; the node checks it, then registers.
                    Step::Send(Msg::Proven {
                        proof: auth::gateway_proof(
                            &self.secret,
                            &client_nonce,
                            &self.server_nonce,
                            &self.exporter,
                        ),
                        blind: self.blind,
                    })
                } else {
                    self.refuse(RefuseReason::BadAuth)
                }
            }
            (
                State::AwaitRegister,
                Msg::Register {
                    node_id,
                    advertised_addr,
                    capacity,
                    protocol_version,
                    running,
                },
            ) => {
                if protocol_version != PROTOCOL_VERSION {
                    return self.refuse(RefuseReason::VersionMismatch {
                        ours: PROTOCOL_VERSION,
                        theirs: protocol_version,
                    });
                }
                self.state = State::Done;
                Step::Registered {
                    node_id,
                    advertised_addr,
                    capacity,
                    running,
                    reply: Msg::RegisterAck {
                        gateway_id: self.gateway_id.clone(),
                        heartbeat_ms: self.heartbeat_ms,
                    },
                }
            }
            _ => self.refuse(RefuseReason::Unexpected),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef-secret";

    fn env(msg: Msg) -> Result<Envelope, CodecError> {
        Ok(Envelope::new(msg))
    }

    #[test]
    fn a_node_with_the_secret_registers() {
        let x = [5u8; 32];
        let mut gw = GatewayHandshake::new(SECRET, [2; 32], [7; 32], &x, "gw", 1000);
        let cn = [1u8; 32];
        let Step::Send(Msg::Challenge {
            server_nonce,
            commitment,
        }) = gw.on_envelope(env(Msg::Hello {
            node_id: "n".into(),
            client_nonce: cn,
        }))
        else {
            panic!()
        };
        // The Challenge carries no proof, only the commitment to one.
        assert_ne!(
            commitment,
            auth::gateway_proof(SECRET, &cn, &server_nonce, &x)
        );
        let p = auth::node_proof(SECRET, &cn, &server_nonce, &x);
        let Step::Send(Msg::Proven { proof, blind }) = gw.on_envelope(env(Msg::Auth { proof: p }))
        else {
            panic!("the gateway opens its commitment once the node proved itself")
        };
        assert!(auth::opens(&commitment, &proof, &blind));
        assert!(auth::verify_gateway(SECRET, &cn, &server_nonce, &x, &proof));
        assert!(!auth::opens(&commitment, &proof, &[0; 32]));
        let step = gw.on_envelope(env(Msg::Register {
            node_id: "n".into(),
            advertised_addr: "a:1".into(),
            capacity: 3,
            protocol_version: PROTOCOL_VERSION,
            running: vec![],
        }));
        assert!(matches!(step, Step::Registered { capacity: 3, .. }));
    }

    #[test]
    fn wrong_secret_order_or_version_is_refused() {
        let x = [5u8; 32];
        let mut gw = GatewayHandshake::new(SECRET, [2; 32], [7; 32], &x, "gw", 1000);
        gw.on_envelope(env(Msg::Hello {
            node_id: "n".into(),
            client_nonce: [1; 32],
        }));
        let p = auth::node_proof(b"wrong secret....", &[1; 32], &[2; 32], &x);
        assert_eq!(
            gw.on_envelope(env(Msg::Auth { proof: p })),
            Step::Refuse(Msg::Refused {
                reason: RefuseReason::BadAuth
            })
        );
        let mut gw = GatewayHandshake::new(SECRET, [2; 32], [7; 32], &x, "gw", 1000);
        assert!(matches!(
            gw.on_envelope(env(Msg::Register {
                node_id: "n".into(),
                advertised_addr: String::new(),
                capacity: 1,
                protocol_version: PROTOCOL_VERSION,
                running: vec![],
            })),
            Step::Refuse(Msg::Refused {
                reason: RefuseReason::Unexpected
            })
        ));
        let mut gw = GatewayHandshake::new(SECRET, [2; 32], [7; 32], &x, "gw", 1000);
        assert_eq!(
            gw.on_envelope(Err(CodecError::VersionMismatch { ours: 1, theirs: 9 })),
            Step::Refuse(Msg::Refused {
                reason: RefuseReason::VersionMismatch { ours: 1, theirs: 9 }
            })
        );
    }
}
