//! Golden datagrams from the spec (§9) decoded and re-encoded byte for byte, the stop rules,
//! and a property round trip.

use proptest::prelude::*;

use super::*;
use crate::golden::{self, hex};

#[track_caller]
fn roundtrip(bytes: &[u8]) -> Datagram<'_> {
    let d = Datagram::decode(bytes).unwrap();
    assert_eq!(d.encode(), bytes, "re-encoding differs");
    d
}

fn params_254() -> ConnectParams {
    ConnectParams {
        outgoing_peer_id: 0,
        mtu: 1400,
        window_size: 32768,
        channel_count: 254,
        incoming_bandwidth: 0,
        outgoing_bandwidth: 0,
        throttle_interval: 5000,
        throttle_acceleration: 2,
        throttle_deceleration: 2,
    }
}

#[test]
fn connect_golden() {
    let bytes = hex(golden::CONNECT);
    assert_eq!(bytes.len(), 48);
    let d = roundtrip(&bytes);
    assert_eq!(
        d.header,
        Header {
            session: 41,
            peer_id: NO_PEER,
            sent_time: Some(0x7055)
        }
    );
    assert_eq!(d.frames.len(), 1);
    let f = d.frames[0];
    assert_eq!(
        f.header,
        CommandHeader {
            command: 0x82,
            channel: 0xFF,
            reliable_seq: 1
        }
    );
    assert_eq!(
        f.command,
        Command::Connect {
            params: params_254(),
            session: 41
        }
    );
}

#[test]
fn c_client_connect_golden() {
    let bytes = hex(golden::C_CONNECT);
    let d = roundtrip(&bytes);
    assert_eq!(d.header.session, 0x6B8B_4567);
    assert_eq!(d.header.sent_time, Some(0x9b0d));
    assert_eq!(
        d.frames[0].command,
        Command::Connect {
            params: params_254(),
            session: 0x6B8B_4567
        }
    );
}

#[test]
fn verify_connect_golden() {
    let bytes = hex(golden::VERIFY);
    assert_eq!(bytes.len(), 44);
    let d = roundtrip(&bytes);
    assert_eq!(
        d.header,
        Header {
            session: 41,
            peer_id: 0,
            sent_time: Some(0xa671)
        }
    );
    assert_eq!(
        d.frames[0].header,
        CommandHeader {
            command: 0x83,
            channel: 0xFF,
            reliable_seq: 1
        }
    );
    assert_eq!(d.frames[0].command, Command::VerifyConnect(params_254()));
}

#[test]
fn ack_golden_six_byte_header() {
    let bytes = hex(golden::ACK_VERIFY);
    assert_eq!(bytes.len(), 14);
    let d = roundtrip(&bytes);
    assert_eq!(
        d.header,
        Header {
            session: 41,
            peer_id: 0,
            sent_time: None
        }
    );
    assert_eq!(
        d.frames[0].command,
        Command::Acknowledge {
            received_seq: 1,
            received_sent_time: 0xa671
        }
    );
}

#[test]
fn server_acks_keep_their_garbage_sequence_fields() {
    let bytes = hex(golden::SERVER_ACKS);
    assert_eq!(bytes.len(), 22);
    let d = roundtrip(&bytes);
    let got: Vec<_> = d
        .frames
        .iter()
        .map(|f| match f.command {
            Command::Acknowledge {
                received_seq,
                received_sent_time,
            } => (
                f.header.reliable_seq,
                f.header.channel,
                received_seq,
                received_sent_time,
            ),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(got, vec![(2, 1, 1, 0x3928), (0, 1, 2, 0x3928)]);
}

#[test]
fn reliable_send_golden() {
    let bytes = hex(golden::RELIABLE_SEND);
    assert_eq!(bytes.len(), 59);
    let d = roundtrip(&bytes);
    assert_eq!(
        d.header,
        Header {
            session: 41,
            peer_id: 0,
            sent_time: Some(0x3928)
        }
    );
    assert_eq!(d.frames[0].command, Command::SendReliable { data: &[0] });
    assert_eq!(d.frames[1].header.reliable_seq, 2);
    let Command::SendReliable { data } = d.frames[1].command else {
        panic!()
    };
    assert_eq!(data.len(), 38);
    assert_eq!(&data[..5], b"\x02\x03bob");
    assert_eq!(&data[6..], b"5ebe2294ecd0e0f08eab7690d2a6ee69");
}

#[test]
fn server_reply_golden() {
    let bytes = hex(golden::SERVER_REPLY);
    assert_eq!(bytes.len(), 28);
    let d = roundtrip(&bytes);
    assert_eq!(d.header.sent_time, Some(0xda6b));
    let Command::SendReliable { data } = d.frames[0].command else {
        panic!()
    };
    assert_eq!(data, &hex("02 59 04 48 65 72 6f 07 00 00 01 02 00 03")[..]);
}

#[test]
fn standard_update_golden() {
    let mut bytes = hex(golden::STANDARD_UPDATE_HEAD);
    bytes.extend((0..22u8).map(|i| i.wrapping_mul(37)));
    assert_eq!(bytes.len(), 37);
    let d = roundtrip(&bytes);
    assert_eq!(d.header.size(), 6);
    assert_eq!(
        d.frames[0].header,
        CommandHeader {
            command: 0x07,
            channel: 2,
            reliable_seq: 0
        }
    );
    let Command::SendUnreliable {
        unreliable_seq,
        data,
    } = d.frames[0].command
    else {
        panic!()
    };
    assert_eq!((unreliable_seq, data.len(), data[0]), (1, 23, 14));
}

#[test]
fn first_fragment_golden() {
    let mut bytes = hex("29 00 00 00 80 00 12 34");
    bytes.extend(hex(golden::FRAGMENT_HEAD));
    bytes.extend(std::iter::repeat_n(0xAB, 1368));
    let d = roundtrip(&bytes);
    let Command::SendFragment { info, data } = d.frames[0].command else {
        panic!()
    };
    assert_eq!(
        info,
        FragmentInfo {
            start_seq: 2,
            count: 3,
            number: 0,
            total_length: 3001,
            offset: 0
        }
    );
    assert_eq!(d.frames[0].header.reliable_seq, 2);
    assert_eq!(data.len(), 1368);
}

#[test]
fn ping_ack_disconnect_golden() {
    let b = hex(golden::PING);
    let d = roundtrip(&b);
    assert_eq!(d.frames[0].command, Command::Ping);
    assert_eq!(d.frames[0].header.reliable_seq, 3);
    let b = hex(golden::PING_ACK);
    let d = roundtrip(&b);
    assert_eq!(
        d.frames[0].command,
        Command::Acknowledge {
            received_seq: 3,
            received_sent_time: 0xdc65
        }
    );
    let b = hex(golden::DISCONNECT);
    let d = roundtrip(&b);
    assert_eq!(d.frames[0].header.command, 0x84);
    assert_eq!(d.frames[0].command, Command::Disconnect { data: 0 });
}

#[test]
fn stops_at_unknown_kind_zero_size_and_overrun_keeping_earlier_commands() {
    let ping = hex("85 ff 00 03");
    for bad in [
        hex("8c ff 00 04"),
        hex("00 00 00 00"),
        hex("86 01 00 02 00 09 01 02"),
        hex("86 01"),
    ] {
        let mut body = ping.clone();
        body.extend(&bad);
        body.extend(&ping);
        let items: Vec<_> = Commands::new(&body).collect();
        assert_eq!(items.len(), 2, "{bad:02x?}");
        assert!(items[0].is_ok());
        assert!(items[1].is_err());
    }
    assert_eq!(command_size(12), None);
    assert_eq!(command_size(0), None);
    assert_eq!(COMMAND_SIZES, [0, 8, 40, 36, 8, 4, 6, 8, 24, 8, 12, 16]);
}

#[test]
fn header_needs_sent_time_when_flagged() {
    assert_eq!(
        Header::decode(&hex("29000000 8000")),
        Err(WireError::Truncated)
    );
    assert_eq!(Header::decode(&hex("29000000 0005")).unwrap().0.peer_id, 5);
}

/// Builds command kind `k` (1..=11) from arbitrary numbers and data.
fn make(k: u8, a: u16, b: u16, w: [u32; 9], data: &[u8]) -> Command<'_> {
    let params = ConnectParams {
        outgoing_peer_id: a,
        mtu: b,
        window_size: w[0],
        channel_count: w[1],
        incoming_bandwidth: w[2],
        outgoing_bandwidth: w[3],
        throttle_interval: w[4],
        throttle_acceleration: w[5],
        throttle_deceleration: w[6],
    };
    match k {
        1 => Command::Acknowledge {
            received_seq: a,
            received_sent_time: b,
        },
        2 => Command::Connect {
            params,
            session: w[7],
        },
        3 => Command::VerifyConnect(params),
        4 => Command::Disconnect { data: w[0] },
        5 => Command::Ping,
        6 => Command::SendReliable { data },
        7 => Command::SendUnreliable {
            unreliable_seq: a,
            data,
        },
        8 => Command::SendFragment {
            info: FragmentInfo {
                start_seq: a,
                count: w[0],
                number: w[1],
                total_length: w[2],
                offset: w[3],
            },
            data,
        },
        9 => Command::SendUnsequenced { group: a, data },
        10 => Command::BandwidthLimit {
            incoming: w[0],
            outgoing: w[1],
        },
        _ => Command::ThrottleConfigure {
            interval: w[0],
            acceleration: w[1],
            deceleration: w[2],
        },
    }
}

proptest! {
    #[test]
    fn frame_roundtrip(
        data in proptest::collection::vec(any::<u8>(), 0..300),
        flags in any::<u8>(),
        channel in any::<u8>(),
        seq in any::<u16>(),
        k in 1u8..=11,
        a in any::<u16>(),
        b in any::<u16>(),
        w in any::<[u32; 9]>(),
        session in any::<u32>(),
        peer_id in 0u16..0x8000,
        sent in proptest::option::of(any::<u16>()),
    ) {
        let command = make(k, a, b, w, &data);
        let frame = Frame {
            header: CommandHeader { command: (flags & 0xF0) | command.kind(), channel, reliable_seq: seq },
            command,
        };
        let mut out = Vec::new();
        frame.encode(&mut out);
        prop_assert_eq!(out.len(), command.encoded_len());
        let (back, used) = Frame::decode(&out).unwrap();
        prop_assert_eq!(used, out.len());
        prop_assert_eq!(back, frame);

        let dgram = Datagram { header: Header { session, peer_id, sent_time: sent }, frames: vec![frame, frame] };
        let bytes = dgram.encode();
        prop_assert_eq!(Datagram::decode(&bytes).unwrap(), dgram);
    }

    #[test]
    fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        if let Ok((_, used)) = Header::decode(&bytes) {
            for f in Commands::new(&bytes[used..]).flatten() {
                let mut out = Vec::new();
                f.encode(&mut out);
                prop_assert_eq!(Frame::decode(&out).unwrap().0, f);
            }
        }
    }
}
