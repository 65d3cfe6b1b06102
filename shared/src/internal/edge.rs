//! The edge link (`rc-edge/1`): how a gateway that does not lead (an *edge*) relays its
//! clients to the gateway that does (the *leader*, the one holding the store and the
//! control plane).
//!
//! The edge terminates the client's transport and nothing else: each client connection is
//! a relayed session whose login flow, budgets, routing and logout the leader runs exactly
//! as for a connection of its own (`Conn` in the gateway). The edge pipes bytes:
//!
//! - QUIC between the gateways, ALPN [`ALPN`], on the leader's internal endpoint (the one
//!   the zone nodes use); the edge is the client. QUIC datagrams enabled.
//! - **One bidirectional stream** carries every [`EdgeMsg`], both directions, as
//!   `[len u32 LE][rmp-serde bytes]` frames ([`encode`], [`Decoder`]); a frame longer
//!   than [`MAX_MESSAGE`] is a protocol violation.
//! - Handshake: edge → [`EdgeMsg::Hello`] with its proof; the leader checks it and answers
//!   [`EdgeMsg::Welcome`] with its own, or [`EdgeMsg::Refused`]. Both proofs are
//!   HMAC-SHA256 under the cluster secret over a TLS exporter value of this connection
//!   ([`edge_proof`], [`leader_proof`]), so a proof is useless on any other connection;
//!   the leader reveals its proof only to an edge that proved itself.
//! - Then [`EdgeMsg::Open`] starts a relayed session (the client's address counts in the
//!   leader's per-network limits), [`EdgeMsg::Stream`] carries the client's reliable
//!   stream bytes up and the server's frames down (rc/1 framing, `[len u16][type]
//!   [payload]`, never re-encoded), [`EdgeMsg::Gone`] tells the leader the client left,
//!   [`EdgeMsg::Entered`] tells the edge the session's player is in the world (what a
//!   gateway taking over needs to adopt him), and [`EdgeMsg::Close`] tells the edge to
//!   close it. [`EdgeMsg::Members`] tells the edge which zone nodes and edges the leader
//!   has, so that, taking over, it knows when every node is back.
//! - Client datagrams (`P_StandardUpdate`) ride QUIC datagrams of the link, both ways,
//!   with the internal 8-byte header ([`super::datagram`]) naming the relayed session.
//!
//! When the link ends, every session on it ends: the leader logs its players out as for
//! any closed connection, and the edge closes its clients (they log in again).

// A plain value (`core::net`): the client's address travels as data.
use core::net::SocketAddr;

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use super::codec::{CodecError, FrameDecoder};

/// The ALPN of the edge link.
pub const ALPN: &[u8] = b"rc-edge/1";

/// The edge link's version (2: [`EdgeMsg::Party`], [`EdgeMsg::Resume`]; 3:
/// [`EdgeMsg::Fanout`]; 4: [`EdgeMsg::Members`]; 5: [`EdgeMsg::Claimed`]).
pub const VERSION: u16 = 5;

/// The oldest version still spoken: a link runs at the lower of its two ends' versions
/// (the leader's [`EdgeMsg::Welcome`] names it), so gateways are upgraded one at a time;
/// a peer outside `MIN_VERSION..=VERSION` is refused.
pub const MIN_VERSION: u16 = 1;

/// The version a link runs at between an edge of `edge`'s version and a leader of this
/// one's, or `None` when they share none.
pub fn link_version(edge: u16) -> Option<u16> {
    (MIN_VERSION..=VERSION)
        .contains(&edge)
        .then_some(edge.min(VERSION))
}

/// Largest message body: a client's stream bytes are relayed in chunks of at most
/// [`MAX_CHUNK`], and every other message is small.
pub const MAX_MESSAGE: usize = 256 * 1024;

/// Largest run of stream bytes one [`EdgeMsg::Stream`] carries.
pub const MAX_CHUNK: usize = 64 * 1024;

/// The longest edge or leader name.
pub const MAX_NAME: usize = 128;

/// The longest close reason relayed.
pub const MAX_REASON: usize = 256;

/// A relayed session, as the edge numbers it (one link's own numbering).
pub type RelayId = u64;

/// One message of the edge link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum EdgeMsg {
    /// Edge → leader, first: who it is and its proof.
    Hello {
        /// [`VERSION`].
        version: u16,
        /// The edge's name (its `gateway_id`), for logs and `/cluster`.
        edge: String,
        /// [`edge_proof`] of this connection.
        proof: [u8; 32],
    },
    /// Leader → edge: the edge is accepted.
    Welcome {
        /// The link's version: the lower of the edge's and the leader's
        /// ([`link_version`]).
        version: u16,
        /// The leader's name.
        leader: String,
        /// The leader's control epoch (an edge keeps the newest it has seen and refuses
        /// an older leader, as the zone nodes do).
        epoch: u64,
        /// The leader's admin HTTP address (`admin_listen`; an unspecified IP means the
        /// address the edge reached the leader at): the edge passes its console, admin
        /// API and `/cluster` requests there.
        admin: String,
        /// [`leader_proof`] of this connection.
        proof: [u8; 32],
    },
    /// Leader → edge: refused (a bad proof, another version, not the leader); the link
    /// closes.
    Refused {
        /// Why.
        reason: String,
    },
    /// Edge → leader: a client connected.
    Open {
        /// Its number on this link.
        id: RelayId,
        /// Its address (its network's limits apply at the leader).
        addr: SocketAddr,
        /// Whether it negotiated the compact position profile (`rc-compact/1`).
        compact: bool,
        /// The largest datagram the client takes (0: none).
        max_datagram: u16,
    },
    /// Reliable stream bytes: up, the client's as they came; down, the server's frames.
    Stream {
        /// The session.
        id: RelayId,
        /// At most [`MAX_CHUNK`] bytes.
        #[serde(with = "serde_bytes")]
        bytes: Vec<u8>,
    },
    /// Edge → leader: the client's connection ended.
    Gone {
        /// The session.
        id: RelayId,
    },
    /// Leader → edge: the session entered the world (its player is attached in a zone).
    /// The edge keeps it: should the leader die, the gateway that takes over can adopt
    /// the player the zone node still hosts instead of logging it out.
    Entered {
        /// The session on this link.
        id: RelayId,
        /// The leader's session id (the zone nodes' key of the player).
        session: u64,
        /// The account.
        account: u64,
        /// The character slot.
        slot: u8,
        /// The player's RuntimeID.
        rid: u16,
        /// The zone node hosting the player (sent again whenever it changes).
        node: String,
        /// The fencing token of the player's copy (the character's last hand-out).
        fence: u64,
    },
    /// Leader → edge: close the client's connection (after what was queued) with `code`
    /// (transport.md).
    Close {
        /// The session.
        id: RelayId,
        /// Application code.
        code: u32,
        /// Why (at most [`MAX_REASON`] bytes).
        reason: String,
    },
    /// Leader → edge (version 2): the session's party, every member's name, leader first
    /// (empty: none), sent whenever it changes. The edge keeps it with the session, so
    /// that a gateway taking over puts the kept members back in one party.
    Party {
        /// The session on this link.
        id: RelayId,
        /// The members, at most [`MAX_PARTY`].
        members: Vec<String>,
    },
    /// Edge → leader (version 2): a client this edge kept when its previous leader went,
    /// whose player a zone node still hosts: opened as [`EdgeMsg::Open`] opens one, but in
    /// the world already (the leader's control plane adopts the player where the node
    /// reports him, as it adopts its own edge's, and closes the client if it cannot).
    Resume {
        /// Its number on this link.
        id: RelayId,
        /// Its address.
        addr: SocketAddr,
        /// Whether it negotiated the compact position profile.
        compact: bool,
        /// The largest datagram the client takes (0: none).
        max_datagram: u16,
        /// Who its player is and where.
        who: KeptClient,
    },
    /// Edge → leader (version 3), right after the welcome: the zone nodes reach this
    /// edge's client endpoint at `addr` (its `fanout_addr`) for the direct fan-out, so
    /// the leader tells each node hosting one of its rc/1 clients to send that client's
    /// broadcast datagrams there ([`super::Msg::Fanout`]) instead of through the leader.
    Fanout {
        /// `host:port`, at most [`MAX_REASON`] bytes.
        addr: String,
    },
    /// Leader → edge (version 4), after the welcome and whenever it changes: the zone
    /// nodes in the leader's directory and the *other* edges linked to it, at most
    /// [`MAX_MEMBERS`] each. An edge that takes over from this leader ends its placement
    /// hold as soon as each of these nodes has registered with it and each of these edges
    /// has claimed its kept players ([`EdgeMsg::Claimed`]), instead of waiting the hold out.
    Members {
        /// The zone nodes' ids.
        nodes: Vec<String>,
        /// The other edges, each as `name@address` (the address the leader sees).
        edges: Vec<String>,
    },
    /// Edge → leader (version 5), once on each link, after the [`EdgeMsg::Resume`] of every
    /// client it kept when its previous leader went (none on a first link): it has no more
    /// to claim. A gateway taking over waits for this from each edge its old leader had.
    Claimed,
}

impl EdgeMsg {
    /// The message's name, for errors and logs.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Hello { .. } => "Hello",
            Self::Welcome { .. } => "Welcome",
            Self::Refused { .. } => "Refused",
            Self::Open { .. } => "Open",
            Self::Stream { .. } => "Stream",
            Self::Gone { .. } => "Gone",
            Self::Entered { .. } => "Entered",
            Self::Close { .. } => "Close",
            Self::Party { .. } => "Party",
            Self::Resume { .. } => "Resume",
            Self::Fanout { .. } => "Fanout",
            Self::Members { .. } => "Members",
            Self::Claimed => "Claimed",
        }
    }
}

/// The most names one [`EdgeMsg::Members`] list carries: the leader cuts a longer one
/// there, so an edge takes a list this long for one that may have been cut (and waits its
/// placement hold out, as without the message).
pub const MAX_MEMBERS: usize = 512;

/// Who a client kept through a leader change is ([`EdgeMsg::Resume`]): what the previous
/// leader said of it ([`EdgeMsg::Entered`], [`EdgeMsg::Party`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptClient {
    /// The previous leader's session id (the zone nodes' key of the player).
    pub session: u64,
    /// The account.
    pub account: u64,
    /// The character slot.
    pub slot: u8,
    /// The player's RuntimeID.
    pub rid: u16,
    /// The zone node hosting the player, as the previous leader last said.
    pub node: String,
    /// The fencing token of the player's copy there.
    pub fence: u64,
    /// Its party (every member, leader first; empty: none), at most [`MAX_PARTY`].
    pub party: Vec<String>,
}

/// The most party members an [`EdgeMsg::Party`] names (Realm Crafter's parties hold 8).
pub const MAX_PARTY: usize = 8;

/// An edge link message that cannot be decoded, or a frame too long.
pub type EdgeCodecError = CodecError;

/// Appends `msg` as one `[len u32 LE][body]` frame to `out`.
pub fn encode(msg: &EdgeMsg, out: &mut Vec<u8>) -> Result<(), CodecError> {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    if let Err(e) = rmp_serde::encode::write(out, msg) {
        out.truncate(start);
        return Err(CodecError::Encode(e.to_string()));
    }
    let len = out.len() - start - 4;
    let Some(len32) = u32::try_from(len).ok().filter(|_| len <= MAX_MESSAGE) else {
        out.truncate(start);
        return Err(CodecError::TooLong {
            len,
            max: MAX_MESSAGE,
        });
    };
    if let Some(prefix) = out.get_mut(start..start + 4) {
        prefix.copy_from_slice(&len32.to_le_bytes());
    }
    Ok(())
}

/// Incremental decoder of the edge link's stream: push bytes, pull messages.
#[derive(Debug)]
pub struct Decoder(FrameDecoder);

impl Default for Decoder {
    fn default() -> Self {
        Self(FrameDecoder::with_max(MAX_MESSAGE))
    }
}

impl Decoder {
    /// Appends bytes read from the stream.
    pub fn push(&mut self, bytes: &[u8]) {
        self.0.push(bytes);
    }

    /// The next whole message, if one is buffered. After an error other than
    /// [`CodecError::Malformed`] the stream is out of sync: end the link.
    pub fn next_msg(&mut self) -> Result<Option<EdgeMsg>, CodecError> {
        match self.0.next_body()? {
            None => Ok(None),
            Some(body) => rmp_serde::from_slice(body)
                .map(Some)
                .map_err(|e| CodecError::Malformed(e.to_string())),
        }
    }

    /// Bytes buffered but not yet decoded.
    pub fn buffered(&self) -> usize {
        self.0.buffered()
    }
}

type HmacSha256 = Hmac<Sha256>;

const EDGE_LABEL: &[u8] = b"rc-edge/1 edge proof";
const LEADER_LABEL: &[u8] = b"rc-edge/1 leader proof";

fn proof(secret: &[u8], label: &[u8], exporter: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    // HMAC takes keys of any length; `new_from_slice` cannot fail for it.
    if let Ok(mut mac) = HmacSha256::new_from_slice(secret) {
        mac.update(label);
        mac.update(exporter);
        out.copy_from_slice(&mac.finalize().into_bytes());
    }
    out
}

fn verify(secret: &[u8], label: &[u8], exporter: &[u8], claimed: &[u8; 32]) -> bool {
    let Ok(mut mac) = HmacSha256::new_from_slice(secret) else {
        return false;
    };
    mac.update(label);
    mac.update(exporter);
    mac.verify_slice(claimed).is_ok()
}

/// The edge's proof: `HMAC-SHA256(secret, label || exporter)`, where `exporter` is this
/// connection's TLS exporter value for [`super::EXPORTER_LABEL`] (fresh per connection:
/// it already mixes both sides' TLS randoms, so no nonce is needed).
pub fn edge_proof(secret: &[u8], exporter: &[u8]) -> [u8; 32] {
    proof(secret, EDGE_LABEL, exporter)
}

/// The leader's proof, sent only once the edge's verified.
pub fn leader_proof(secret: &[u8], exporter: &[u8]) -> [u8; 32] {
    proof(secret, LEADER_LABEL, exporter)
}

/// Checks an edge's proof (constant time).
pub fn verify_edge(secret: &[u8], exporter: &[u8], claimed: &[u8; 32]) -> bool {
    verify(secret, EDGE_LABEL, exporter, claimed)
}

/// Checks the leader's proof (constant time).
pub fn verify_leader(secret: &[u8], exporter: &[u8], claimed: &[u8; 32]) -> bool {
    verify(secret, LEADER_LABEL, exporter, claimed)
}

/// Cuts a close reason to [`MAX_REASON`] bytes on a character boundary.
pub fn short_reason(reason: &str) -> String {
    let mut end = reason.len().min(MAX_REASON);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    reason.get(..end).unwrap_or_default().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn roundtrip(m: &EdgeMsg) -> EdgeMsg {
        let mut v = Vec::new();
        encode(m, &mut v).unwrap();
        let mut d = Decoder::default();
        // Byte by byte: frames cut anywhere reassemble.
        let mut out = None;
        for b in &v {
            d.push(std::slice::from_ref(b));
            if let Some(m) = d.next_msg().unwrap() {
                out = Some(m);
            }
        }
        assert_eq!(d.buffered(), 0);
        out.unwrap()
    }

    #[test]
    fn every_message_survives_the_codec() {
        let msgs = [
            EdgeMsg::Hello {
                version: VERSION,
                edge: "gw-b".into(),
                proof: [7; 32],
            },
            EdgeMsg::Welcome {
                version: VERSION,
                leader: "gw-a".into(),
                epoch: 1_700_000_000_000,
                admin: "0.0.0.0:9180".into(),
                proof: [9; 32],
            },
            EdgeMsg::Refused {
                reason: "not the leader".into(),
            },
            EdgeMsg::Open {
                id: 3,
                addr: "203.0.113.9:5000".parse().unwrap(),
                compact: true,
                max_datagram: 1_200,
            },
            EdgeMsg::Stream {
                id: 3,
                bytes: vec![1, 0, 2, 0xff],
            },
            EdgeMsg::Gone { id: 3 },
            EdgeMsg::Entered {
                id: 3,
                session: 1_700_000_000_000_001,
                account: 42,
                slot: 1,
                rid: 7,
                node: "n1".into(),
                fence: 1_795_000_000_000_123,
            },
            EdgeMsg::Close {
                id: 3,
                code: 6,
                reason: "too slow".into(),
            },
            EdgeMsg::Party {
                id: 3,
                members: vec!["Carys".into(), "Emrys".into()],
            },
            EdgeMsg::Resume {
                id: 4,
                addr: "203.0.113.9:5001".parse().unwrap(),
                compact: false,
                max_datagram: 1_200,
                who: KeptClient {
                    session: 1_700_000_000_000_002,
                    account: 43,
                    slot: 0,
                    rid: 8,
                    node: "n2".into(),
                    fence: 1_795_000_000_000_124,
                    party: vec!["Carys".into()],
                },
            },
            EdgeMsg::Fanout {
                addr: "gateway-b:25000".into(),
            },
            EdgeMsg::Claimed,
            EdgeMsg::Members {
                nodes: vec!["n1".into(), "n2".into()],
                edges: vec!["gw-c@10.0.0.3:40000".into()],
            },
        ];
        for m in &msgs {
            assert_eq!(&roundtrip(m), m);
        }
    }

    #[test]
    fn a_link_runs_at_the_lower_version_both_ends_speak() {
        assert_eq!(link_version(VERSION), Some(VERSION));
        assert_eq!(link_version(MIN_VERSION), Some(MIN_VERSION));
        // A newer edge meets an older leader: the leader's version.
        assert_eq!(link_version(VERSION + 1), None);
        assert_eq!(link_version(0), None);
    }

    #[test]
    fn a_message_too_long_is_refused_both_ways() {
        let big = EdgeMsg::Stream {
            id: 1,
            bytes: vec![0; MAX_MESSAGE],
        };
        let mut v = Vec::new();
        assert!(matches!(
            encode(&big, &mut v),
            Err(CodecError::TooLong { .. })
        ));
        assert!(v.is_empty());
        let mut d = Decoder::default();
        d.push(&u32::try_from(MAX_MESSAGE + 1).unwrap().to_le_bytes());
        assert!(matches!(d.next_msg(), Err(CodecError::TooLong { .. })));
    }

    #[test]
    fn proofs_are_bound_to_the_secret_the_connection_and_the_side() {
        let (s, x) = (b"0123456789abcdef0123456789abcdef", [5u8; 32]);
        let p = edge_proof(s, &x);
        assert!(verify_edge(s, &x, &p));
        assert!(!verify_edge(s, &[6u8; 32], &p), "another connection");
        assert!(
            !verify_edge(b"another secret of thirty-two bytes!", &x, &p),
            "another secret"
        );
        assert!(
            !verify_leader(s, &x, &p),
            "the edge's proof is not the leader's"
        );
        assert!(verify_leader(s, &x, &leader_proof(s, &x)));
    }

    #[test]
    fn a_reason_is_cut_on_a_character_boundary() {
        let r = "é".repeat(MAX_REASON);
        let s = short_reason(&r);
        assert!(s.len() <= MAX_REASON && s.chars().all(|c| c == 'é'));
        assert_eq!(short_reason("bye"), "bye");
    }

    proptest! {
        #[test]
        fn the_decoder_never_panics(chunks in proptest::collection::vec(
            proptest::collection::vec(any::<u8>(), 0..64), 0..16)) {
            let mut d = Decoder::default();
            for c in &chunks {
                d.push(c);
                while let Ok(Some(_)) = d.next_msg() {}
            }
        }
    }
}
