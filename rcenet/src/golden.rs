//! The byte-level examples of the spec (rcenet.md §9), shared by the unit tests.

/// Decodes hex, ignoring spaces and `|`.
pub(crate) fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(u8::is_ascii_hexdigit).collect();
    digits
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
        .collect()
}

/// CONNECT, client → server, session 41.
pub(crate) const CONNECT: &str = "29 00 00 00 ff ff 70 55 82 ff 00 01 00 00 05 78 00 00 80 00 00 00 00 fe 00 00 00 00 00 00 00 00 00 00 13 88 00 00 00 02 00 00 00 02 29 00 00 00";
/// VERIFY_CONNECT, server → client.
pub(crate) const VERIFY: &str = "29 00 00 00 | 80 00 | a6 71 | 83 ff 00 01 | 00 00 | 05 78 | 00 00 80 00 | 00 00 00 fe | 00 00 00 00 | 00 00 00 00 | 00 00 13 88 | 00 00 00 02 | 00 00 00 02";
/// The client's ACK of VERIFY_CONNECT.
pub(crate) const ACK_VERIFY: &str = "29 00 00 00 | 00 00 | 01 ff 00 01 | 00 01 | a6 71";
/// NewClient and P_VerifyAccount in one datagram.
pub(crate) const RELIABLE_SEND: &str = "29 00 00 00 80 00 39 28 86 01 00 01 00 01 00 86 01 00 02 00 26 02 03 62 6f 62 20 35 65 62 65 32 32 39 34 65 63 64 30 65 30 66 30 38 65 61 62 37 36 39 30 64 32 61 36 65 65 36 39";
/// The server's reply.
pub(crate) const SERVER_REPLY: &str =
    "29 00 00 00 80 00 da 6b | 86 01 00 01 00 0e | 02 59 04 48 65 72 6f 07 00 00 01 02 00 03";
/// The server's ACKs with leftover sequence fields.
pub(crate) const SERVER_ACKS: &str =
    "29 00 00 00 00 00 | 01 01 00 02 00 01 39 28 | 01 01 00 00 00 02 39 28";
/// P_StandardUpdate's header and command, without its 22-byte payload.
pub(crate) const STANDARD_UPDATE_HEAD: &str =
    "29 00 00 00 00 00 | 07 02 00 00 | 00 01 | 00 17 | 0e";
/// First fragment of a 3001-byte reply: the command without its 1368 bytes.
pub(crate) const FRAGMENT_HEAD: &str =
    "88 01 00 02 | 00 02 | 05 58 | 00 00 00 03 | 00 00 00 00 | 00 00 0b b9 | 00 00 00 00";
/// PING.
pub(crate) const PING: &str = "29000000 8000 dc65 | 85 ff 00 03";
/// Its ACK.
pub(crate) const PING_ACK: &str = "29000000 0000 | 01 ff 00 03 00 03 dc 65";
/// Graceful DISCONNECT.
pub(crate) const DISCONNECT: &str = "29000000 8000 3de9 | 84 ff 00 04 | 00 00 00 00";
/// The C ENet 1.1 client's CONNECT (glibc session 0x6B8B4567).
pub(crate) const C_CONNECT: &str = "67458b6b ffff 9b0d 82ff0001 0000 0578 00008000 000000fe 00000000 00000000 00001388 00000002 00000002 67458b6b";
