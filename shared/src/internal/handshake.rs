//! Both sides of the internal handshake as sans-IO state machines: the gateway's
//! [`GatewayHandshake`] and the zone node's [`NodeHandshake`].
//!
//! Hello → Challenge (the gateway commits to its proof) → Auth (the node's proof) →
//! Proven (the gateway opens its commitment) → Register → RegisterAck. Feed each side every
//! decoded envelope (or decode error) from the control stream until it says it is done;
//! send what it returns. Each takes the cluster secret, its fresh nonce (and the gateway
//! its blind) and the connection's TLS exporter value as inputs (no RNG, no clock here),
//! so the two can be run against each other in memory (the tests below, the simulator).

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
    epoch: u64,
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
            epoch: 0,
            state: State::AwaitHello,
        }
    }

    /// The control plane's epoch this gateway holds (sent in `RegisterAck`).
    #[must_use]
    pub fn with_epoch(mut self, epoch: u64) -> Self {
        self.epoch = epoch;
        self
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
                        epoch: self.epoch,
                    },
                }
            }
            _ => self.refuse(RefuseReason::Unexpected),
        }
    }
}

/// What the node does next.
#[derive(Clone, Debug, PartialEq)]
pub enum NodeStep {
    /// Send this message and keep reading.
    Send(Msg),
    /// The gateway proved it holds the secret: send the node's `Register` now (the shell
    /// builds it, with what the node runs at this moment and its trace context), and keep
    /// reading.
    SendRegister,
    /// Send this `Refused` message, then close the connection (application code 2) and
    /// give up this attempt with `error`.
    Refuse {
        /// The `Refused` to send.
        msg: Msg,
        /// Why.
        error: NodeHandshakeError,
    },
    /// Give up this attempt (nothing to send).
    Fail(NodeHandshakeError),
    /// Registered: route traffic, heartbeat every `heartbeat_ms` (already clamped to
    /// 10 ms – 60 s).
    Registered {
        /// The gateway's id.
        gateway_id: String,
        /// The heartbeat period the gateway watches.
        heartbeat_ms: u64,
        /// The gateway's control-plane epoch (at least the one the node was started with).
        epoch: u64,
    },
}

/// Why a node's handshake attempt failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NodeHandshakeError {
    /// The gateway refused this node.
    #[error("refused: {0}")]
    Refused(RefuseReason),
    /// The peers speak different protocol versions.
    #[error("protocol version mismatch (ours {ours}, theirs {theirs})")]
    PeerVersion {
        /// Ours.
        ours: u16,
        /// Theirs.
        theirs: u16,
    },
    /// The gateway's proof does not verify.
    #[error("the gateway's proof does not verify (cluster secret mismatch?)")]
    BadGatewayProof,
    /// The gateway's control epoch is older than one this node has registered with.
    #[error("the gateway's control epoch {epoch} is older than {seen}: it has been replaced")]
    StaleEpoch {
        /// The gateway's.
        epoch: u64,
        /// The newest the node has seen.
        seen: u64,
    },
    /// A message out of order, or undecodable.
    #[error("{0}")]
    Protocol(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NodeState {
    AwaitChallenge,
    AwaitProven {
        server_nonce: [u8; 32],
        commitment: [u8; 32],
    },
    AwaitRegisterAck,
    Done,
}

/// One connection's handshake, node side.
#[derive(Debug)]
pub struct NodeHandshake {
    secret: Vec<u8>,
    client_nonce: [u8; 32],
    exporter: Vec<u8>,
    /// The newest control epoch this node has registered with: an older gateway is
    /// refused.
    seen_epoch: u64,
    state: NodeState,
}

impl NodeHandshake {
    /// A handshake for one connection, and the `Hello` to send first.
    pub fn start(
        secret: &[u8],
        client_nonce: [u8; 32],
        exporter: &[u8],
        node_id: &str,
    ) -> (Self, Msg) {
        let hs = Self {
            secret: secret.to_vec(),
            client_nonce,
            exporter: exporter.to_vec(),
            seen_epoch: 0,
            state: NodeState::AwaitChallenge,
        };
        let hello = Msg::Hello {
            node_id: node_id.to_owned(),
            client_nonce,
        };
        (hs, hello)
    }

    /// Refuse a gateway whose control epoch is older than `seen` (the newest this node
    /// has registered with).
    #[must_use]
    pub fn not_before(mut self, seen: u64) -> Self {
        self.seen_epoch = seen;
        self
    }

    fn fail(&mut self, error: NodeHandshakeError) -> NodeStep {
        self.state = NodeState::Done;
        NodeStep::Fail(error)
    }

    fn unexpected(&mut self, expected: &str, got: &Msg) -> NodeStep {
        self.fail(NodeHandshakeError::Protocol(format!(
            "expected {expected}, got {}",
            got.name()
        )))
    }

    /// Handle one decoded envelope (or the decoder's error).
    pub fn on_envelope(&mut self, env: Result<Envelope, CodecError>) -> NodeStep {
        let msg = match env {
            Ok(e) => e.msg,
            Err(CodecError::VersionMismatch { ours, theirs }) => {
                // Tell the gateway why, then close.
                self.state = NodeState::Done;
                return NodeStep::Refuse {
                    msg: Msg::Refused {
                        reason: RefuseReason::VersionMismatch { ours, theirs },
                    },
                    error: NodeHandshakeError::PeerVersion { ours, theirs },
                };
            }
            Err(e) => return self.fail(NodeHandshakeError::Protocol(e.to_string())),
        };
        if let Msg::Refused { reason } = msg {
            return self.fail(NodeHandshakeError::Refused(reason));
        }
        match self.state {
            NodeState::AwaitChallenge => {
                let Msg::Challenge {
                    server_nonce,
                    commitment,
                } = msg
                else {
                    return self.unexpected("Challenge", &msg);
                };
                // The gateway has committed to its proof: ours now, then it opens it.
                self.state = NodeState::AwaitProven {
                    server_nonce,
                    commitment,
                };
                NodeStep::Send(Msg::Auth {
                    proof: auth::node_proof(
                        &self.secret,
                        &self.client_nonce,
                        &server_nonce,
                        &self.exporter,
                    ),
                })
            }
            NodeState::AwaitProven {
                server_nonce,
                commitment,
            } => {
                let Msg::Proven { proof, blind } = msg else {
                    return self.unexpected("Proven", &msg);
                };
                let ok = auth::opens(&commitment, &proof, &blind)
                    && auth::verify_gateway(
                        &self.secret,
                        &self.client_nonce,
                        &server_nonce,
                        &self.exporter,
                        &proof,
                    );
                if !ok {
                    self.state = NodeState::Done;
                    return NodeStep::Refuse {
                        msg: Msg::Refused {
                            reason: RefuseReason::BadAuth,
                        },
                        error: NodeHandshakeError::BadGatewayProof,
                    };
                }
                self.state = NodeState::AwaitRegisterAck;
                NodeStep::SendRegister
            }
            NodeState::AwaitRegisterAck => {
                let Msg::RegisterAck {
                    gateway_id,
                    heartbeat_ms,
                    epoch,
                } = msg
                else {
                    return self.unexpected("RegisterAck", &msg);
                };
                self.state = NodeState::Done;
                if epoch < self.seen_epoch {
                    // A deposed leader that has not noticed yet: never take its orders.
                    let seen = self.seen_epoch;
                    return NodeStep::Refuse {
                        msg: Msg::Refused {
                            reason: RefuseReason::StaleEpoch { epoch, seen },
                        },
                        error: NodeHandshakeError::StaleEpoch { epoch, seen },
                    };
                }
                NodeStep::Registered {
                    gateway_id,
                    // The gateway sets the heartbeat period it watches (within sane bounds).
                    heartbeat_ms: heartbeat_ms.clamp(10, 60_000),
                    epoch,
                }
            }
            NodeState::Done => self.fail(NodeHandshakeError::Protocol(format!(
                "{} after the handshake ended",
                msg.name()
            ))),
        }
    }
}

/// Registers a node with a gateway in memory: both halves of the handshake against each
/// other, as they run over a connection (the simulator's registration). Returns the
/// gateway's `Registered` step, or the step that ended it.
pub fn register_in_memory(
    gateway: &mut GatewayHandshake,
    node: &mut NodeHandshake,
    hello: Msg,
    register: impl FnOnce() -> Msg,
) -> Result<(Step, NodeStep), Box<Step>> {
    let mut register = Some(register);
    let mut to_gateway = Some(hello);
    for _ in 0..4 {
        let Some(msg) = to_gateway.take() else {
            break;
        };
        let step = gateway.on_envelope(Ok(Envelope::new(msg)));
        let reply = match &step {
            Step::Send(m) => m.clone(),
            Step::Registered { reply, .. } => {
                let done = node.on_envelope(Ok(Envelope::new(reply.clone())));
                return Ok((step, done));
            }
            Step::Continue | Step::Refuse(_) => return Err(Box::new(step)),
        };
        match node.on_envelope(Ok(Envelope::new(reply))) {
            NodeStep::Send(m) => to_gateway = Some(m),
            NodeStep::SendRegister => to_gateway = register.take().map(|f| f()),
            NodeStep::Refuse { msg, .. } => return Err(Box::new(Step::Refuse(msg))),
            NodeStep::Fail(e) => {
                return Err(Box::new(Step::Refuse(Msg::Refused {
                    reason: RefuseReason::Other(e.to_string()),
                })));
            }
            NodeStep::Registered { .. } => break,
        }
    }
    Err(Box::new(Step::Continue))
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

    fn register(running: Vec<RunningInstance>) -> Msg {
        Msg::Register {
            node_id: "n".into(),
            advertised_addr: "a:1".into(),
            capacity: 3,
            protocol_version: PROTOCOL_VERSION,
            running,
        }
    }

    #[test]
    fn the_two_halves_register_a_node_with_the_secret() {
        let x = [5u8; 32];
        let mut gw = GatewayHandshake::new(SECRET, [2; 32], [7; 32], &x, "gw", 5);
        let (mut node, hello) = NodeHandshake::start(SECRET, [1; 32], &x, "n");
        let Ok((gstep, nstep)) = register_in_memory(&mut gw, &mut node, hello, || register(vec![]))
        else {
            panic!("registers")
        };
        assert!(matches!(gstep, Step::Registered { capacity: 3, .. }));
        // 5 ms is below the floor the node accepts.
        assert_eq!(
            nstep,
            NodeStep::Registered {
                gateway_id: "gw".into(),
                heartbeat_ms: 10,
                epoch: 0,
            }
        );
    }

    #[test]
    fn a_node_refuses_a_gateway_older_than_one_it_has_seen() {
        let x = [5u8; 32];
        // The same epoch or a newer one registers.
        for epoch in [7, 8] {
            let mut gw =
                GatewayHandshake::new(SECRET, [2; 32], [7; 32], &x, "gw", 500).with_epoch(epoch);
            let (node, hello) = NodeHandshake::start(SECRET, [1; 32], &x, "n");
            let mut node = node.not_before(7);
            let Ok((_, nstep)) = register_in_memory(&mut gw, &mut node, hello, || register(vec![]))
            else {
                panic!("registers")
            };
            assert_eq!(
                nstep,
                NodeStep::Registered {
                    gateway_id: "gw".into(),
                    heartbeat_ms: 500,
                    epoch,
                }
            );
        }
        // An older one (a deposed leader) is refused, and told why.
        let mut gw = GatewayHandshake::new(SECRET, [2; 32], [7; 32], &x, "gw", 500).with_epoch(6);
        let (node, hello) = NodeHandshake::start(SECRET, [1; 32], &x, "n");
        let mut node = node.not_before(7);
        let Ok((_, nstep)) = register_in_memory(&mut gw, &mut node, hello, || register(vec![]))
        else {
            panic!("the gateway side registers")
        };
        assert_eq!(
            nstep,
            NodeStep::Refuse {
                msg: Msg::Refused {
                    reason: RefuseReason::StaleEpoch { epoch: 6, seen: 7 }
                },
                error: NodeHandshakeError::StaleEpoch { epoch: 6, seen: 7 }
            }
        );
    }

    #[test]
    fn a_node_refuses_a_gateway_without_the_secret_and_stops_on_a_refusal() {
        let x = [5u8; 32];
        let mut gw = GatewayHandshake::new(
            b"another secret, not ours",
            [2; 32],
            [7; 32],
            &x,
            "gw",
            1000,
        );
        let (mut node, hello) = NodeHandshake::start(SECRET, [1; 32], &x, "n");
        // The gateway (with another secret) refuses the node's proof first.
        let r = register_in_memory(&mut gw, &mut node, hello, || register(vec![]));
        assert_eq!(
            r.err().map(|e| *e),
            Some(Step::Refuse(Msg::Refused {
                reason: RefuseReason::BadAuth
            }))
        );
        // A gateway that opens a proof made with another secret is refused by the node.
        let (mut node, _) = NodeHandshake::start(SECRET, [1; 32], &x, "n");
        let Step::Send(challenge) = GatewayHandshake::new(SECRET, [2; 32], [7; 32], &x, "gw", 1)
            .on_envelope(env(Msg::Hello {
                node_id: "n".into(),
                client_nonce: [1; 32],
            }))
        else {
            panic!()
        };
        assert!(matches!(
            node.on_envelope(env(challenge)),
            NodeStep::Send(Msg::Auth { .. })
        ));
        let forged = auth::gateway_proof(b"wrong", &[1; 32], &[2; 32], &x);
        assert_eq!(
            node.on_envelope(env(Msg::Proven {
                proof: forged,
                blind: [7; 32]
            })),
            NodeStep::Refuse {
                msg: Msg::Refused {
                    reason: RefuseReason::BadAuth
                },
                error: NodeHandshakeError::BadGatewayProof
            }
        );
        // A refusal, a message out of order or another version ends the attempt.
        let (mut node, _) = NodeHandshake::start(SECRET, [1; 32], &x, "n");
        assert_eq!(
            node.on_envelope(env(Msg::Refused {
                reason: RefuseReason::BadAuth
            })),
            NodeStep::Fail(NodeHandshakeError::Refused(RefuseReason::BadAuth))
        );
        let (mut node, _) = NodeHandshake::start(SECRET, [1; 32], &x, "n");
        assert!(matches!(
            node.on_envelope(env(Msg::RegisterAck {
                gateway_id: "gw".into(),
                heartbeat_ms: 1000,
                epoch: 1,
            })),
            NodeStep::Fail(NodeHandshakeError::Protocol(_))
        ));
        let (mut node, _) = NodeHandshake::start(SECRET, [1; 32], &x, "n");
        assert!(matches!(
            node.on_envelope(Err(CodecError::VersionMismatch { ours: 1, theirs: 9 })),
            NodeStep::Refuse {
                error: NodeHandshakeError::PeerVersion { ours: 1, theirs: 9 },
                ..
            }
        ));
    }
}
