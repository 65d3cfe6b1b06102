//! Sans-IO codec of the control stream: `[len u32 LE][rmp-serde Envelope]` frames.
//!
//! [`encode_frame`] appends one frame; [`FrameDecoder`] takes bytes as they arrive and
//! yields envelopes. The version is read before the message, so a peer speaking another
//! version gets [`CodecError::VersionMismatch`] rather than a confusing decode error.

use serde::de::IgnoredAny;

use super::{Envelope, MAX_FRAME_LEN, PROTOCOL_VERSION};

/// Why a frame or envelope was refused.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CodecError {
    /// The length prefix exceeds the limit.
    #[error("internal frame of {len} bytes exceeds the limit of {max}")]
    TooLong {
        /// Announced length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A zero-length frame.
    #[error("empty internal frame")]
    Empty,
    /// The envelope has another protocol version.
    #[error("internal protocol version mismatch: ours {ours}, peer's {theirs}")]
    VersionMismatch {
        /// Ours.
        ours: u16,
        /// Theirs.
        theirs: u16,
    },
    /// The bytes are not a valid envelope.
    #[error("malformed internal envelope: {0}")]
    Malformed(String),
    /// The stream ended inside a frame.
    #[error("internal stream ended inside a frame ({0} bytes buffered)")]
    Truncated(usize),
    /// Encoding failed (should not happen for well-formed values).
    #[error("could not encode internal envelope: {0}")]
    Encode(String),
}

/// Append `env` as one frame to `out`.
pub fn encode_frame(env: &Envelope, out: &mut Vec<u8>) -> Result<(), CodecError> {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    if let Err(e) = rmp_serde::encode::write(out, env) {
        out.truncate(start);
        return Err(CodecError::Encode(e.to_string()));
    }
    let len = out.len() - start - 4;
    if len > MAX_FRAME_LEN {
        out.truncate(start);
        return Err(CodecError::TooLong {
            len,
            max: MAX_FRAME_LEN,
        });
    }
    let Ok(len32) = u32::try_from(len) else {
        out.truncate(start);
        return Err(CodecError::TooLong {
            len,
            max: MAX_FRAME_LEN,
        });
    };
    if let Some(prefix) = out.get_mut(start..start + 4) {
        prefix.copy_from_slice(&len32.to_le_bytes());
    }
    Ok(())
}

/// One frame as a fresh vector.
pub fn to_frame(env: &Envelope) -> Result<Vec<u8>, CodecError> {
    let mut v = Vec::new();
    encode_frame(env, &mut v)?;
    Ok(v)
}

/// Decode one frame body (without the length prefix), checking the version first.
pub fn decode_envelope(body: &[u8]) -> Result<Envelope, CodecError> {
    let head: (u16, IgnoredAny, IgnoredAny) =
        rmp_serde::from_slice(body).map_err(|e| CodecError::Malformed(e.to_string()))?;
    if head.0 != PROTOCOL_VERSION {
        return Err(CodecError::VersionMismatch {
            ours: PROTOCOL_VERSION,
            theirs: head.0,
        });
    }
    rmp_serde::from_slice(body).map_err(|e| CodecError::Malformed(e.to_string()))
}

/// Incremental decoder: push bytes, pull envelopes.
///
/// After an error the stream is out of sync (a length prefix can no longer be trusted),
/// except for [`CodecError::Malformed`] and [`CodecError::VersionMismatch`], where the
/// frame boundary was sound and decoding may continue with the next frame.
#[derive(Debug)]
pub struct FrameDecoder {
    buf: Vec<u8>,
    pos: usize,
    max: usize,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl FrameDecoder {
    /// A decoder with the [`MAX_FRAME_LEN`] limit.
    pub fn new() -> Self {
        Self::with_max(MAX_FRAME_LEN)
    }

    /// A decoder with a custom limit.
    pub fn with_max(max: usize) -> Self {
        Self {
            buf: Vec::new(),
            pos: 0,
            max,
        }
    }

    /// Bytes buffered but not yet decoded.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Add received bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.pos > 0 && self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        } else if self.pos > 64 * 1024 && self.pos * 2 > self.buf.len() {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete frame's body, if any, without decoding it.
    pub fn next_body(&mut self) -> Result<Option<&[u8]>, CodecError> {
        let rest = self.buf.get(self.pos..).unwrap_or(&[]);
        let Some(prefix) = rest.get(..4) else {
            return Ok(None);
        };
        let mut len4 = [0u8; 4];
        len4.copy_from_slice(prefix);
        let len = u32::from_le_bytes(len4) as usize;
        if len == 0 {
            return Err(CodecError::Empty);
        }
        if len > self.max {
            return Err(CodecError::TooLong { len, max: self.max });
        }
        if rest.len() < 4 + len {
            return Ok(None);
        }
        let start = self.pos + 4;
        self.pos = start + len;
        Ok(self.buf.get(start..start + len))
    }

    /// The next complete envelope, if any.
    pub fn next_envelope(&mut self) -> Result<Option<Envelope>, CodecError> {
        match self.next_body()? {
            None => Ok(None),
            Some(body) => decode_envelope(body).map(Some),
        }
    }

    /// At end of stream: an error if a partial frame is buffered.
    pub fn finish(&self) -> Result<(), CodecError> {
        match self.buffered() {
            0 => Ok(()),
            n => Err(CodecError::Truncated(n)),
        }
    }

    /// Change the limit (a gateway raises it once a node has authenticated).
    pub fn set_max(&mut self, max: usize) {
        self.max = max;
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ActorStateDto, InstanceKey, Msg, RefuseReason};
    use super::*;
    use bytes::Bytes;
    use proptest::prelude::*;

    fn samples() -> Vec<Msg> {
        vec![
            Msg::Hello {
                node_id: "n1".into(),
                client_nonce: [7; 32],
            },
            Msg::Refused {
                reason: RefuseReason::VersionMismatch { ours: 1, theirs: 2 },
            },
            Msg::AssignInstance {
                key: InstanceKey {
                    area: "Plains".into(),
                    instance: 3,
                },
                generation: 9,
                ground: vec![super::super::GroundItemDto {
                    item: super::super::InvSlotDto {
                        item: 4,
                        attributes: vec![1, 0, -3],
                        health: 100,
                        amount: 2,
                    },
                    x: 1.0,
                    y: 2.0,
                    z: -3.5,
                    remaining_ms: 60_000,
                }],
                clock_epoch_ms: 1_700_000_000_000,
            },
            Msg::SnapshotGroup(Box::new(super::super::SnapshotGroup {
                snapshot_id: 77,
                key: InstanceKey {
                    area: "Plains".into(),
                    instance: 1,
                },
                generation: 12,
                entries: vec![
                    super::super::SnapshotEntry {
                        session: 5,
                        reason: super::super::SnapshotReasonDto::Logout,
                        state: ActorStateDto {
                            name: "Bob".into(),
                            gold: 10,
                            ..ActorStateDto::default()
                        },
                    },
                    super::super::SnapshotEntry {
                        session: 6,
                        reason: super::super::SnapshotReasonDto::Periodic,
                        state: ActorStateDto::default(),
                    },
                ],
                ground: Some(Vec::new()),
            })),
            Msg::SnapshotGroup(Box::new(super::super::SnapshotGroup {
                snapshot_id: 78,
                key: InstanceKey {
                    area: "Plains".into(),
                    instance: 0,
                },
                generation: 1,
                entries: Vec::new(),
                ground: None,
            })),
            Msg::AttachPlayer {
                session: 42,
                key: InstanceKey {
                    area: "Plains".into(),
                    instance: 0,
                },
                generation: 1,
                rid: 17,
                is_dm: false,
                state: Box::new(ActorStateDto {
                    name: "Alice".into(),
                    attributes: vec![1, -2, 3],
                    ..ActorStateDto::default()
                }),
                arrival: super::super::ArrivalDto::PortalNamed("Begin".into()),
            },
            Msg::ClientFrames {
                session: 1,
                frames: Bytes::from_static(&[2, 0, 46, 0]),
            },
            Msg::Drain,
            Msg::ScriptStore {
                req: 7,
                op: super::super::ScriptStoreOp::WriteFile {
                    name: "logs/a.txt".into(),
                    data: vec![1, 2, 3],
                },
            },
            Msg::ScriptStoreReply {
                req: 7,
                result: super::super::ScriptStoreResult::File(Some(vec![9; 5])),
            },
            Msg::SuperGlobals {
                values: vec![(0, b"a".to_vec()), (99, vec![0xff; 3])],
            },
            Msg::SuperGlobal {
                slot: 5,
                value: b"v".to_vec(),
            },
            Msg::RunScript {
                key: InstanceKey {
                    area: "Plains".into(),
                    instance: 0,
                },
                script: "Startup".into(),
                func: "Main".into(),
            },
            Msg::AccountAction {
                session: 3,
                action: super::super::AccountActionDto::Kick,
            },
            Msg::Heartbeat {
                instances: 1,
                players: 2,
                overruns: 0,
                loads: vec![super::super::InstanceLoad {
                    key: InstanceKey {
                        area: "Plains".into(),
                        instance: 0,
                    },
                    players: 2,
                    npcs: 30,
                    tick_p99_us: 1_300,
                    tick_age_ms: 12_000,
                    stuck: true,
                    tick_p50_us: 400,
                    handoffs: 7,
                    handoffs_failed: 1,
                    errors: 2,
                }],
            },
            Msg::InstanceGivenUp {
                key: InstanceKey {
                    area: "Plains".into(),
                    instance: 2,
                },
                generation: 7,
                sessions: vec![4, 5],
            },
        ]
    }

    #[test]
    fn the_largest_script_file_fits_one_frame_both_ways() {
        let data = vec![0xC3; super::super::MAX_SCRIPT_FILE];
        let up = Envelope::new(Msg::ScriptStore {
            req: u64::MAX,
            op: super::super::ScriptStoreOp::WriteFile {
                name: "x".repeat(255),
                data: data.clone(),
            },
        });
        let v = to_frame(&up).unwrap();
        assert!(
            v.len() < super::super::MAX_SCRIPT_FILE + 1024,
            "{}",
            v.len()
        );
        let down = Envelope::new(Msg::ScriptStoreReply {
            req: u64::MAX,
            result: super::super::ScriptStoreResult::File(Some(data)),
        });
        let v = to_frame(&down).unwrap();
        let mut dec = FrameDecoder::new();
        dec.push(&v);
        assert_eq!(dec.next_envelope().unwrap(), Some(down));
        // The whole super global set fits too, even at its largest.
        let all = Envelope::new(Msg::SuperGlobals {
            values: (0..super::super::SUPER_GLOBALS)
                .map(|s| (s, vec![0xff; super::super::MAX_SUPER_GLOBAL]))
                .collect(),
        });
        assert!(to_frame(&all).is_ok());
    }

    #[test]
    fn round_trip_samples_through_the_decoder() {
        let mut wire = Vec::new();
        for m in samples() {
            encode_frame(&Envelope::new(m), &mut wire).unwrap();
        }
        let mut dec = FrameDecoder::new();
        let mut got = Vec::new();
        // Byte by byte, to exercise partial frames.
        for b in &wire {
            dec.push(std::slice::from_ref(b));
            while let Some(e) = dec.next_envelope().unwrap() {
                got.push(e.msg);
            }
        }
        assert_eq!(got, samples());
        dec.finish().unwrap();
    }

    #[test]
    fn raw_frames_are_msgpack_bin_not_an_int_array() {
        let frames = Bytes::from(vec![0xAB; 1000]);
        let v = to_frame(&Envelope::new(Msg::ToClient { session: 1, frames })).unwrap();
        assert!(v.len() < 1100, "{}", v.len());
    }

    #[test]
    fn other_version_is_reported_as_such() {
        let mut env = Envelope::new(Msg::Drain);
        env.version = PROTOCOL_VERSION + 1;
        let v = to_frame(&env).unwrap();
        let mut dec = FrameDecoder::new();
        dec.push(&v);
        assert_eq!(
            dec.next_envelope(),
            Err(CodecError::VersionMismatch {
                ours: PROTOCOL_VERSION,
                theirs: PROTOCOL_VERSION + 1
            })
        );
    }

    #[test]
    fn oversized_and_empty_frames_are_refused() {
        let mut dec = FrameDecoder::with_max(10);
        dec.push(&11u32.to_le_bytes());
        assert!(matches!(
            dec.next_envelope(),
            Err(CodecError::TooLong { len: 11, .. })
        ));
        let mut dec = FrameDecoder::new();
        dec.push(&0u32.to_le_bytes());
        assert_eq!(dec.next_envelope(), Err(CodecError::Empty));
    }

    #[test]
    fn trace_context_survives() {
        let mut env = Envelope::new(Msg::Drain);
        env.trace.insert(
            "traceparent".into(),
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into(),
        );
        let v = to_frame(&env).unwrap();
        let got = decode_envelope(v.get(4..).unwrap()).unwrap();
        assert_eq!(got, env);
    }

    proptest! {
        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let mut dec = FrameDecoder::with_max(1024);
            dec.push(&bytes);
            for _ in 0..8 {
                match dec.next_envelope() {
                    Ok(Some(_)) | Err(CodecError::Malformed(_) | CodecError::VersionMismatch { .. }) => {}
                    Ok(None) | Err(_) => break,
                }
            }
            let _ = decode_envelope(&bytes);
        }

        #[test]
        fn frames_round_trip(session in any::<u64>(), frames in proptest::collection::vec(any::<u8>(), 0..300),
                             id in any::<u64>(), gen_ in any::<u64>(), reason in ".{0,40}",
                             minter in any::<u32>(), serial in any::<u32>()) {
            let tid = crate::internal::TransferId { block: id, minter, serial };
            let msgs = vec![
                Msg::ToClient { session, frames: Bytes::from(frames.clone()) },
                Msg::TransferNack { transfer_id: tid, reason },
                Msg::TransferAck { transfer_id: tid, generation: gen_ },
                Msg::TransferIds { block: id },
                Msg::SnapshotAck { snapshot_id: id },
            ];
            for m in msgs {
                let v = to_frame(&Envelope::new(m.clone())).unwrap();
                let mut dec = FrameDecoder::new();
                dec.push(&v);
                let got = dec.next_envelope().unwrap().unwrap();
                prop_assert_eq!(got.msg, m);
                prop_assert_eq!(dec.buffered(), 0);
            }
        }
    }
}
