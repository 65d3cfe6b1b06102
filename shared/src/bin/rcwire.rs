//! `rcwire`, the protocol developer's tool: decode Realm Crafter packets to JSON, encode
//! JSON back to bytes, and split streams or datagrams into frames.
//!
//! ```text
//! rcwire decode --dir c2s 0e 00 00 20 41 ...      one packet (type byte first) → one JSON object
//! rcwire encode [--dir c2s] < packet.json         one JSON object → hex
//! rcwire frames --dir s2c 1700 0e07 ...           [len][type][payload]... → one JSON object per frame
//! rcwire npos encode < player.json                Sauerbraten player → N_POS message as hex
//! rcwire npos decode 04 01 11 10 0b 27 ...         N_POS message → one JSON object
//! ```
//!
//! Hex may be split over several arguments and may contain spaces, `:` or a `0x` prefix.
//! Malformed input exits with code 2 and one line saying what is wrong and at which byte
//! offset; nothing panics.

use std::io::Read as _;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use serde_json::Value;
use shared::frame::{FrameDecoder, split_datagram};
use shared::npos;
use shared::proto::{ClientPacket, DecodeCtx, ServerPacket};

/// Decode, encode and split Realm Crafter packets.
#[derive(Debug, Parser)]
#[command(name = "rcwire", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Decode one packet (type byte first) and print it as one JSON object.
    Decode {
        /// Who sent it: `c2s` (client to server) or `s2c` (server to client).
        #[arg(long, value_enum)]
        dir: Dir,
        /// A world (Realm Crafter `Server Data` or native) whose templates say which
        /// `P_NewActor` packets carry a gender byte. Without it the decoder takes the form
        /// that parses exactly.
        #[arg(long)]
        world: Option<std::path::PathBuf>,
        /// The packet as hex, in one or more pieces.
        #[arg(required = true)]
        hex: Vec<String>,
    },
    /// Read one JSON object (as `decode` prints it) on stdin and print the packet as hex.
    Encode {
        /// Who sends it; defaults to the JSON's `"dir"` field.
        #[arg(long, value_enum)]
        dir: Option<Dir>,
    },
    /// Split a stream or a datagram (`[len u16][type][payload]...`) into frames and decode
    /// each; prints one JSON object per frame.
    Frames {
        /// Who sent it: `c2s` or `s2c`.
        #[arg(long, value_enum)]
        dir: Dir,
        /// Treat the bytes as one datagram: accepted only if it parses exactly to its end
        /// and carries only `P_StandardUpdate` frames.
        #[arg(long)]
        datagram: bool,
        /// The bytes as hex, in one or more pieces.
        #[arg(required = true)]
        hex: Vec<String>,
    },
    /// Sauerbraten's `N_POS` position message (`shared::npos`), bit-exact.
    Npos {
        #[command(subcommand)]
        command: NposCommand,
    },
}

#[derive(Debug, Subcommand)]
enum NposCommand {
    /// Read one JSON object on stdin (`cn`, `physstate`, `lifesequence`, `move`, `strafe`,
    /// `o` = eye position `[x, y, z]`, `eyeheight` (default 14), `yaw`, `pitch`, `roll`, `vel`,
    /// `falling`, `gameclip`; missing fields are 0/false) and print the message as hex, type
    /// byte 4 first.
    Encode,
    /// Decode one message (type byte 4 first) and print what Sauerbraten's
    /// `parsepositions` reconstructs as one JSON object.
    Decode {
        /// The message as hex, in one or more pieces.
        #[arg(required = true)]
        hex: Vec<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Dir {
    /// Client to server.
    C2s,
    /// Server to client.
    S2c,
}

impl Dir {
    fn as_str(self) -> &'static str {
        match self {
            Self::C2s => "c2s",
            Self::S2c => "s2c",
        }
    }
}

/// A failure: one line on stderr, exit code 2.
struct Failure(String);

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(msg)) => {
            eprintln!("rcwire: {msg}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<(), Failure> {
    match cli.command {
        Command::Decode { dir, world, hex } => {
            let bytes = parse_hex(&hex)?;
            let genders = load_gender_table(world.as_deref())?;
            let value = decode_packet(dir, &bytes, genders.as_deref())?;
            println!("{value}");
        }
        Command::Encode { dir } => {
            let mut value = read_json_stdin()?;
            let dir = match (dir, value.get("dir").and_then(Value::as_str)) {
                (Some(d), _) => d,
                (None, Some("c2s")) => Dir::C2s,
                (None, Some("s2c")) => Dir::S2c,
                (None, Some(other)) => {
                    return Err(Failure(format!(
                        "\"dir\" is {other:?}; expected \"c2s\" or \"s2c\""
                    )));
                }
                (None, None) => {
                    return Err(Failure(
                        "say who sends the packet: --dir c2s|s2c or a \"dir\" field".into(),
                    ));
                }
            };
            if let Value::Object(map) = &mut value {
                map.remove("dir");
            }
            let mut out = Vec::new();
            match dir {
                Dir::C2s => ClientPacket::from_json(&value)
                    .map_err(|e| Failure(format!("not a client packet: {e}")))?
                    .encode(&mut out),
                Dir::S2c => ServerPacket::from_json(&value)
                    .map_err(|e| Failure(format!("not a server packet: {e}")))?
                    .encode(&mut out),
            }
            println!("{}", hex::encode(out));
        }
        Command::Frames { dir, datagram, hex } => {
            let bytes = parse_hex(&hex)?;
            for line in split_frames(dir, datagram, &bytes)? {
                println!("{line}");
            }
        }
        Command::Npos { command } => run_npos(command)?,
    }
    Ok(())
}

fn read_json_stdin() -> Result<Value, Failure> {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .map_err(|e| Failure(format!("cannot read stdin: {e}")))?;
    serde_json::from_str(&input).map_err(|e| {
        Failure(format!(
            "stdin is not JSON: {e} (line {}, column {})",
            e.line(),
            e.column()
        ))
    })
}

fn run_npos(command: NposCommand) -> Result<(), Failure> {
    match command {
        NposCommand::Encode => {
            let value = read_json_stdin()?;
            let player: npos::NposPlayer = serde_json::from_value(value)
                .map_err(|e| Failure(format!("not a Sauerbraten player: {e}")))?;
            println!("{}", hex::encode(player.encode()));
        }
        NposCommand::Decode { hex } => {
            let bytes = parse_hex(&hex)?;
            let decoded =
                npos::decode(&bytes).map_err(|e| Failure(format!("cannot decode N_POS: {e}")))?;
            // Straight from the struct: fields in the documented order, floats as the
            // shortest f32 text.
            let line = serde_json::to_string(&decoded)
                .map_err(|e| Failure(format!("cannot print the decoded message: {e}")))?;
            println!("{line}");
        }
    }
    Ok(())
}

/// Parses hex split over arguments, ignoring spaces, `:`, `,` and `0x` prefixes.
/// Errors name the byte offset of the bad digit.
fn parse_hex(parts: &[String]) -> Result<Vec<u8>, Failure> {
    let mut digits = Vec::new();
    for part in parts {
        for token in part.split([' ', ':', ',', '\n', '\t']) {
            let token = token
                .strip_prefix("0x")
                .or_else(|| token.strip_prefix("0X"))
                .unwrap_or(token);
            digits.extend(token.chars());
        }
    }
    let mut out = Vec::with_capacity(digits.len() / 2);
    for (i, pair) in digits.chunks(2).enumerate() {
        let [hi, lo] = pair else {
            return Err(Failure(format!(
                "odd number of hex digits: byte offset {i} has only one digit"
            )));
        };
        let (Some(h), Some(l)) = (hi.to_digit(16), lo.to_digit(16)) else {
            return Err(Failure(format!("not hex at byte offset {i}: \"{hi}{lo}\"")));
        };
        out.push(u8::try_from(h * 16 + l).unwrap_or(0));
    }
    if out.is_empty() {
        return Err(Failure("no bytes given".into()));
    }
    Ok(out)
}

/// Template ids whose actors carry the `P_NewActor` gender byte, from `--world`.
fn load_gender_table(world: Option<&std::path::Path>) -> Result<Option<Vec<u16>>, Failure> {
    let Some(path) = world else {
        return Ok(None);
    };
    let (world, _warnings) = shared::content::fs::load_world(path)
        .map_err(|e| Failure(format!("cannot load world {}: {e}", path.display())))?;
    Ok(Some(
        world
            .actors
            .iter()
            .filter(|t| t.genders == shared::content::Genders::Both)
            .map(|t| t.id)
            .collect(),
    ))
}

fn decode_packet(dir: Dir, bytes: &[u8], genders: Option<&[u16]>) -> Result<Value, Failure> {
    let Some((&id, payload)) = bytes.split_first() else {
        return Err(Failure("no bytes given".into()));
    };
    let has_gender = |t: u16| genders.is_some_and(|g| g.contains(&t));
    let ctx = DecodeCtx {
        template_has_gender: genders.map(|_| &has_gender as &dyn Fn(u16) -> bool),
        ..DecodeCtx::default()
    };
    let shift = |mut e: shared::wire::DecodeError| {
        // Offsets from the decoder count from the payload; report them from the packet's
        // first byte (the type byte), as the user typed it.
        e.offset += 1;
        Failure(format!("cannot decode packet type {id}: {e}"))
    };
    let mut value = match dir {
        Dir::C2s => ClientPacket::decode_with(id, payload, &ctx)
            .map_err(shift)?
            .to_json(),
        Dir::S2c => ServerPacket::decode_with(id, payload, &ctx)
            .map_err(shift)?
            .to_json(),
    };
    if let Value::Object(map) = &mut value {
        map.insert("dir".into(), Value::from(dir.as_str()));
    }
    Ok(value)
}

fn split_frames(dir: Dir, datagram: bool, bytes: &[u8]) -> Result<Vec<Value>, Failure> {
    let mut lines = Vec::new();
    let mut emit = |offset: usize, ty: u8, payload: &[u8]| -> Result<(), Failure> {
        let mut packet = Vec::with_capacity(payload.len() + 1);
        packet.push(ty);
        packet.extend_from_slice(payload);
        let mut value = decode_packet(dir, &packet, None).map_err(|Failure(m)| {
            Failure(format!(
                "frame at byte offset {offset}: {m} (offset within the packet)"
            ))
        })?;
        if let Value::Object(map) = &mut value {
            map.insert("frame_offset".into(), Value::from(offset));
        }
        lines.push(value);
        Ok(())
    };
    if datagram {
        let frames = split_datagram(bytes, Some(14))
            .map_err(|e| Failure(format!("datagram rejected whole: {e}")))?;
        let mut offset = 0usize;
        for frame in frames {
            emit(offset, frame.ty, frame.payload)?;
            offset += 2 + frame.len_field();
        }
    } else {
        let mut dec = FrameDecoder::new();
        dec.push(bytes);
        let mut offset = 0usize;
        loop {
            match dec.next_frame() {
                Ok(Some(frame)) => {
                    let (ty, payload, len) = (frame.ty, frame.payload.to_vec(), frame.len_field());
                    emit(offset, ty, &payload)?;
                    offset += 2 + len;
                }
                Ok(None) => break,
                Err(e) => return Err(Failure(format!("stream rejected: {e}"))),
            }
        }
        dec.finish()
            .map_err(|e| Failure(format!("stream rejected: {e}")))?;
    }
    Ok(lines)
}
