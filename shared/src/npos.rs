//! Sauerbraten's `N_POS` position message, bit for bit: the encoder of Sauerbraten's
//! `sendposition` and the decoder of its `parsepositions` (`src/fpsgame/client.cpp`; the
//! server's `N_POS` case in `server.cpp` reads the same bytes).
//!
//! Three layers:
//! - [`NposPlayer`]: Sauerbraten's player fields as floats (`fpsent`): the eye position `o`,
//!   `eyeheight`, angles in degrees, velocity and fall vectors in cubes per second.
//!   [`NposPlayer::to_wire`] quantises them exactly as `sendposition` does;
//!   [`NposPlayer::encode`] gives the bytes.
//! - [`NposWire`]: the quantised integers on the wire. [`NposWire::encode`] and
//!   [`NposWire::decode`] are exact inverses on every *canonical* message (one
//!   `sendposition` can produce); see "Canonical form" below.
//! - [`Decoded`]: what `parsepositions` reconstructs (feet position, angles, vectors), from
//!   [`decode`] or [`NposWire::to_decoded`].
//!
//! # Layout
//! ```text
//! 4  cn(putuint)  state  flags(putuint)
//! x.1 x.2 [x.3]  y.1 y.2 [y.3]  z.1 z.2 [z.3]
//! dir.1 dir.2  roll
//! vel.1 [vel.2]  veldir.1 veldir.2
//! [fall.1 [fall.2] [falldir.1 falldir.2]]
//! ```
//! - `state` = `physstate | (lifesequence&1)<<3 | (move&3)<<4 | (strafe&3)<<6`.
//! - `flags` bits: 0-2 the third byte of x, y, z is present; 3 `vel.2` present; 4 the fall
//!   block is present; 5 `fall.2` present; 6 `falldir` present; 7 the feet are in game clip.
//! - Coordinates are `int(feet * DMF)` with `DMF = 16`, little-endian, 2 bytes when the value
//!   is in `0..=0xFFFF`, else 3 bytes (two's complement, sign-extended from bit 23 on
//!   decode).
//! - `dir` = `yawpart + clamp(int(pitch + 90), 0, 180) * 360`, little-endian u16;
//!   `yawpart` = `int(yaw) % 360`, plus 360 when `yaw < 0`. Decoded yaw is `dir % 360`,
//!   pitch `clamp(dir / 360, 0, 180) - 90`.
//! - `roll` = `clamp(int(roll + 90), 0, 180)`; decoded `clamp(byte, 0, 180) - 90`.
//! - `vel`/`fall` are `min(int(|v| * DVELF), 0xFFFF)` with `DVELF = 1`; `veldir`/`falldir`
//!   pack the vector's yaw and pitch (`vectoyawpitch`) like `dir`.
//!
//! # Quirks (all reproduced, none "fixed"; 11 depends on the compiler)
//! 1. **`cn` and `flags` are `putuint`, not bytes.** A cn of 128 or more takes 2 bytes (3
//!    from 16384, 4 from 2^21 or when negative). `flags` is written with `putuint` too, so the
//!    game-clip bit (0x80) makes the flags field **two bytes** (`0x80 | low7, 0x01`).
//! 2. **Truncation, not rounding, everywhere.** Coordinates, angles and magnitudes go
//!    through C's `int()` (towards zero): a feet coordinate of 1.99/16 is sent as 1/16, a
//!    speed of 131.99 as 131, a pitch of 9.9 as 9. A negative coordinate truncates towards
//!    zero too (-0.01 → 0, -1.07 → -17/16), so negative positions are biased up.
//! 3. **Negative yaw is not floor-wrapped.** `yaw < 0` sends `360 + int(yaw) % 360`: -10.5
//!    becomes 350 (the decoded yaw is *above* the true 349.5), and any yaw in `(-1, 0)` (or
//!    exactly -360, -720, ...) gives a yaw part of **360**, which carries into the pitch: the
//!    decoder sees yaw 0 and a pitch **one degree higher** (at pitch 90 the message holds
//!    65160 and the pitch clamps back to 90). The same applies to `veldir` and `falldir`,
//!    whose yaw (`-atan2(x, y)`) is negative for every vector pointing to +x.
//! 4. **Pitch and roll are offset by +90** and clamped to `0..=180` before sending; the
//!    decoder clamps `dir / 360` to `0..=180` (so `dir` 65160..=65535 decode as pitch 90) and
//!    the roll byte to `0..=180` (bytes 181..=255 decode as roll 90).
//! 5. **Magnitudes clamp at 0xFFFF** (65535 cubes/s). The direction is sent even when the
//!    velocity's magnitude truncates to 0 (a vector shorter than 1 decodes as zero length
//!    but the direction bytes still carry its yaw and pitch); a zero vector sends
//!    direction 90 * 360 = 32400 (yaw 0, pitch 0).
//! 6. **The fall block is omitted when `int(|falling|)` is 0**, even for a non-zero fall
//!    vector (it decodes as zero). Its direction is omitted when `falling.x == 0 &&
//!    falling.y == 0 && falling.z <= 0` (straight down or zero): the decoder then assumes
//!    (0, 0, -1). A fall vector pointing straight *up* does carry a direction.
//! 7. **24-bit coordinates wrap.** The third byte is `(o >> 16) & 0xFF`, so a quantised
//!    coordinate outside `-2^23..2^23` (|feet| ≥ 524288 cubes) is sent modulo 2^24 and
//!    decodes with the wrong sign or magnitude; values in `0x10000..0x800000` use 3 bytes,
//!    values in `0x800000..0x1000000` decode as negative.
//! 8. **The feet, not the eye, are sent**: `o.z - eyeheight` (float subtraction first, then
//!    `* 16`). The decoder returns the feet; Sauerbraten adds its own copy of the
//!    receiver-side `eyeheight` back.
//! 9. **Bits beyond their field bleed.** `physstate` is OR-ed in unmasked (values above 7
//!    set the life-sequence/move/strafe bits); `move` and `strafe` are masked with `& 3`, and
//!    the decoder maps `0b10` and `0b11` both to -1, so a `move` of 2 decodes as -1 and
//!    -2 as 0 (`-2 & 3 = 2` → -1; only -1, 0 and 1 survive). Only the low bit of
//!    `lifesequence` is sent.
//! 10. **Out-of-range floats.** C++'s float→int of NaN, infinities or values beyond `i32` is
//!     undefined; here it saturates (Rust `as`), NaN giving 0. All arithmetic is single
//!     precision, as Sauerbraten's `float` overloads of `sqrt`, `atan2`, `asin`, `sin`, `cos`
//!     compute it (a value within one f32 ulp of a whole degree can land on either side).
//! 11. **`-ffast-math` builds.** The formulas here are IEEE single precision (cross-checked
//!     byte for byte against Sauerbraten's C++ compiled with `g++ -O2`: 3000 random players
//!     encoded, 2234 random messages decoded, no difference). Sauerbraten's own Makefile
//!     adds `-ffast-math`; built that way (`g++ -O3 -ffast-math`, x86-64) the only encoder
//!     differences found were vectors pointing straight **up** (`x = y = 0, z > 0`): `z / |v|`
//!     lands just below 1 (pitch 89, `dir` 64440 instead of 64800) or just above it
//!     (`asin` → NaN → the direction bytes 0, i.e. straight *down*), and decoded vectors
//!     differed in the last bit. This module follows the IEEE result.
//! 12. **Unused direction precision.** Only whole degrees travel; the decoded vectors are
//!     rebuilt with `sinf`/`cosf` (`vecfromyawpitch`) and are not exactly the sent ones, so
//!     re-encoding a [`Decoded`] can truncate one unit lower (e.g. `|v|` 131.99998 → 131).
//!     Round trips of bytes go through [`NposWire`].
//!
//! # Canonical form
//! [`NposWire::decode`] accepts everything `parsepositions` accepts, including messages no
//! `sendposition` writes; re-encoding those changes the bytes. A message is canonical when:
//! `cn` and `flags` use the shortest `putuint` form (and `flags` < 256); a coordinate has
//! its third byte exactly when it lies outside `0..=0xFFFF`; `vel.2` is present exactly
//! when the velocity exceeds 0xFF; the fall block is present only with a non-zero
//! magnitude and flag bits 5 and 6 are clear without it; `fall.2` is present exactly when the
//! fall exceeds 0xFF; `dir`, `veldir`, `falldir` are at most 65160 and `roll` at most 180.
//!
//! # Differences from Sauerbraten's reader
//! Sauerbraten's buffer returns 0 for bytes read past the end (and flags an overread); this
//! decoder rejects a truncated message with [`NposError::Truncated`] and its byte offset.
//! The type byte must be the single byte 4 (`putint(4)`); [`decode`] rejects bytes after
//! the message ([`NposWire::decode_prefix`] returns the length instead, for a stream of
//! messages).

use serde::{Deserialize, Serialize};

/// The `N_POS` message type, written with `putint` (one byte).
pub const N_POS: u8 = 4;
/// Sauerbraten's `DMF`: world coordinates travel in sixteenths of a cube.
pub const DMF: f32 = 16.0;
/// Sauerbraten's `DVELF`: velocities travel in whole cubes per second.
pub const DVELF: f32 = 1.0;
/// Sauerbraten's `RAD` (`PI / 180.0f`, with `PI` = `3.1415927f`).
const RAD: f32 = std::f32::consts::PI / 180.0;
/// The largest `dir` a sender can write: yaw part 360 (quirk 3) plus pitch part 180 * 360.
pub const MAX_DIR: u16 = 360 + 180 * 360;

/// Why a byte slice is not an `N_POS` message. Every variant names the byte offset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NposError {
    /// The first byte is not 4.
    #[error("byte offset {offset}: not an N_POS message (type byte {found}, expected 4)")]
    NotNpos {
        /// Always 0.
        offset: usize,
        /// The type byte found.
        found: u8,
    },
    /// The message ends inside a field.
    #[error("byte offset {offset}: the message ends inside {field}")]
    Truncated {
        /// Where the missing byte would be.
        offset: usize,
        /// The field being read.
        field: &'static str,
    },
    /// Bytes follow a complete message ([`decode`] and [`NposWire::decode`] only).
    #[error("byte offset {offset}: {count} byte(s) after the end of the N_POS message")]
    Trailing {
        /// Where the extra bytes start.
        offset: usize,
        /// How many there are.
        count: usize,
    },
}

impl NposError {
    /// The byte offset (from the type byte) the error refers to.
    pub fn offset(&self) -> usize {
        match self {
            Self::NotNpos { offset, .. }
            | Self::Truncated { offset, .. }
            | Self::Trailing { offset, .. } => *offset,
        }
    }
}

/// Sauerbraten's player fields that `sendposition` reads (`fpsent`/`physent`).
///
/// JSON (as `rcwire npos encode` reads it): the same names, `move` for `move_`; missing
/// fields are 0/false, `eyeheight` 14.
#[doc(alias = "N_POS")]
#[doc(alias = "sendposition")]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NposPlayer {
    /// Client number (above 127 for bots); `putuint`.
    pub cn: i32,
    /// Physical state, 0..=7 (`PHYS_FLOAT`, `PHYS_FALL`, `PHYS_SLIDE`, ...); not masked.
    pub physstate: u8,
    /// Respawn counter; only its low bit is sent.
    pub lifesequence: i32,
    /// -1 backward, 0, 1 forward.
    #[serde(rename = "move")]
    pub move_: i32,
    /// -1 right, 0, 1 left.
    pub strafe: i32,
    /// The eye position.
    pub o: [f32; 3],
    /// Eye above feet; Sauerbraten's default is 14.
    pub eyeheight: f32,
    /// Degrees, any value (see quirk 3 for negative values).
    pub yaw: f32,
    /// Degrees, -90..=90 (clamped).
    pub pitch: f32,
    /// Degrees, -90..=90 (clamped).
    pub roll: f32,
    /// Velocity, cubes per second.
    pub vel: [f32; 3],
    /// Fall velocity, cubes per second.
    pub falling: [f32; 3],
    /// The feet are in game-clip material (flag bit 7).
    pub gameclip: bool,
}

impl Default for NposPlayer {
    fn default() -> Self {
        Self {
            cn: 0,
            physstate: 0,
            lifesequence: 0,
            move_: 0,
            strafe: 0,
            o: [0.0; 3],
            eyeheight: 14.0,
            yaw: 0.0,
            pitch: 0.0,
            roll: 0.0,
            vel: [0.0; 3],
            falling: [0.0; 3],
            gameclip: false,
        }
    }
}

/// C's `int(f)`: truncation towards zero (saturating where C++ is undefined; NaN → 0).
fn c_int(f: f32) -> i32 {
    f as i32
}

/// The `dir`/`veldir`/`falldir` packing of `sendposition` (quirk 3 included).
pub fn pack_dir(yaw: f32, pitch: f32) -> u16 {
    let y = c_int(yaw) % 360;
    let yawpart = if yaw < 0.0 { 360 + y } else { y };
    let pitchpart = c_int(pitch + 90.0).clamp(0, 180);
    // yawpart is 0..=360, pitchpart * 360 at most 64800: at most MAX_DIR.
    u16::try_from(yawpart + pitchpart * 360).unwrap_or(MAX_DIR)
}

/// Unpacks `dir` as `parsepositions` does: (yaw, pitch) in whole degrees.
pub fn unpack_dir(dir: u16) -> (f32, f32) {
    let d = i32::from(dir);
    ((d % 360) as f32, ((d / 360).clamp(0, 180) - 90) as f32)
}

/// `vec::magnitude()`: `sqrtf(x*x + y*y + z*z)` in single precision.
fn magnitude(v: [f32; 3]) -> f32 {
    let [x, y, z] = v;
    (x * x + y * y + z * z).sqrt()
}

/// `min(int(|v| * DVELF), 0xFFFF)`.
fn quantise_speed(v: [f32; 3]) -> u16 {
    u16::try_from(c_int(magnitude(v) * DVELF).clamp(0, 0xFFFF)).unwrap_or(0)
}

/// Sauerbraten's `vectoyawpitch`: yaw and pitch of a vector in degrees, (0, 0) for zero.
pub fn vectoyawpitch(v: [f32; 3]) -> (f32, f32) {
    let [x, y, z] = v;
    if x == 0.0 && y == 0.0 && z == 0.0 {
        (0.0, 0.0)
    } else {
        (-x.atan2(y) / RAD, (z / magnitude(v)).asin() / RAD)
    }
}

/// Sauerbraten's `vecfromyawpitch(yaw, pitch, 1, 0, m)`, operation for operation.
pub fn vecfromyawpitch(yaw: f32, pitch: f32) -> [f32; 3] {
    let (mv, strafe, vertical) = (1.0_f32, 0.0_f32, 0.0_f32);
    let (sy, cy) = ((RAD * yaw).sin(), (RAD * yaw).cos());
    let (sp, cp) = ((RAD * pitch).sin(), (RAD * pitch).cos());
    [
        mv * -sy * cp + vertical * -sp * -sy + strafe * cy,
        mv * cy * cp + vertical * -sp * cy + strafe * sy,
        mv * sp + vertical * cp,
    ]
}

impl NposPlayer {
    /// Quantises the player exactly as `sendposition` does.
    pub fn to_wire(&self) -> NposWire {
        let state = self.physstate
            | (((self.lifesequence & 1) as u8) << 3)
            | (((self.move_ & 3) as u8) << 4)
            | (((self.strafe & 3) as u8) << 6);
        let feet = [self.o[0], self.o[1], self.o[2] - self.eyeheight];
        let o = feet.map(|c| c_int(c * DMF));
        let (velyaw, velpitch) = vectoyawpitch(self.vel);
        let fall = quantise_speed(self.falling);
        let [fx, fy, fz] = self.falling;
        let falldir = (fall > 0 && (fx != 0.0 || fy != 0.0 || fz > 0.0)).then(|| {
            let (fallyaw, fallpitch) = vectoyawpitch(self.falling);
            pack_dir(fallyaw, fallpitch)
        });
        NposWire {
            cn: self.cn,
            state,
            gameclip: self.gameclip,
            o,
            dir: pack_dir(self.yaw, self.pitch),
            roll: u8::try_from(c_int(self.roll + 90.0).clamp(0, 180)).unwrap_or(90),
            vel: quantise_speed(self.vel),
            veldir: pack_dir(velyaw, velpitch),
            fall,
            falldir,
        }
    }

    /// The message `sendposition` writes for this player, type byte 4 first.
    pub fn encode(&self) -> Vec<u8> {
        self.to_wire().encode()
    }
}

/// The quantised fields of one `N_POS` message, as they travel.
#[doc(alias = "N_POS")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct NposWire {
    /// Client number (`putuint`/`getuint`: 28 bits, sign-extended).
    pub cn: i32,
    /// The state byte: physstate, life-sequence bit, move, strafe.
    pub state: u8,
    /// Flag bit 7.
    pub gameclip: bool,
    /// Feet × 16, truncated. Only the low 24 bits travel (quirk 7).
    pub o: [i32; 3],
    /// Yaw + (pitch + 90) × 360.
    pub dir: u16,
    /// Roll + 90.
    pub roll: u8,
    /// Speed, whole cubes per second.
    pub vel: u16,
    /// Direction of the velocity, packed like `dir`.
    pub veldir: u16,
    /// Fall speed; 0 means no fall block.
    pub fall: u16,
    /// Direction of the fall when not straight down; ignored when `fall` is 0.
    pub falldir: Option<u16>,
}

/// Sauerbraten's `putuint`.
fn putuint(out: &mut Vec<u8>, n: i32) {
    // Byte truncation as C's `uchar` conversion does.
    let b = |v: i32| (v & 0xFF) as u8;
    if !(0..(1 << 21)).contains(&n) {
        out.extend_from_slice(&[
            b(0x80 | (n & 0x7F)),
            b(0x80 | ((n >> 7) & 0x7F)),
            b(0x80 | ((n >> 14) & 0x7F)),
            b(n >> 21),
        ]);
    } else if n < (1 << 7) {
        out.push(b(n));
    } else if n < (1 << 14) {
        out.extend_from_slice(&[b(0x80 | (n & 0x7F)), b(n >> 7)]);
    } else {
        out.extend_from_slice(&[
            b(0x80 | (n & 0x7F)),
            b(0x80 | ((n >> 7) & 0x7F)),
            b(n >> 14),
        ]);
    }
}

impl NposWire {
    /// The flags field `sendposition` computes for these values.
    pub fn flags(&self) -> u8 {
        let mut flags = 0u8;
        for (k, &c) in self.o.iter().enumerate() {
            if !(0..=0xFFFF).contains(&c) {
                flags |= 1 << k;
            }
        }
        if self.vel > 0xFF {
            flags |= 1 << 3;
        }
        if self.fall > 0 {
            flags |= 1 << 4;
            if self.fall > 0xFF {
                flags |= 1 << 5;
            }
            if self.falldir.is_some() {
                flags |= 1 << 6;
            }
        }
        if self.gameclip {
            flags |= 1 << 7;
        }
        flags
    }

    /// Writes the message (type byte 4 first) byte for byte as `sendposition`.
    pub fn encode(&self) -> Vec<u8> {
        let mut q = Vec::with_capacity(24);
        q.push(N_POS);
        putuint(&mut q, self.cn);
        q.push(self.state);
        putuint(&mut q, i32::from(self.flags()));
        for &c in &self.o {
            q.extend_from_slice(&[(c & 0xFF) as u8, ((c >> 8) & 0xFF) as u8]);
            if !(0..=0xFFFF).contains(&c) {
                q.push(((c >> 16) & 0xFF) as u8);
            }
        }
        q.extend_from_slice(&self.dir.to_le_bytes());
        q.push(self.roll);
        let [lo, hi] = self.vel.to_le_bytes();
        q.push(lo);
        if self.vel > 0xFF {
            q.push(hi);
        }
        q.extend_from_slice(&self.veldir.to_le_bytes());
        if self.fall > 0 {
            let [lo, hi] = self.fall.to_le_bytes();
            q.push(lo);
            if self.fall > 0xFF {
                q.push(hi);
            }
            if let Some(falldir) = self.falldir {
                q.extend_from_slice(&falldir.to_le_bytes());
            }
        }
        q
    }

    /// Decodes exactly one message; bytes after it are an error.
    pub fn decode(bytes: &[u8]) -> Result<Self, NposError> {
        let (wire, used) = Self::decode_prefix(bytes)?;
        if used < bytes.len() {
            return Err(NposError::Trailing {
                offset: used,
                count: bytes.len() - used,
            });
        }
        Ok(wire)
    }

    /// Decodes the message at the start of `bytes` as `parsepositions` reads it; returns it
    /// and its length in bytes.
    pub fn decode_prefix(bytes: &[u8]) -> Result<(Self, usize), NposError> {
        let mut r = Cursor { bytes, pos: 0 };
        let ty = r.get("the type byte")?;
        if ty != N_POS {
            return Err(NposError::NotNpos {
                offset: 0,
                found: ty,
            });
        }
        let cn = r.getuint("cn")?;
        let state = r.get("the state byte")?;
        let flags = r.getuint("flags")?;
        let mut o = [0i32; 3];
        for (k, (slot, name)) in o.iter_mut().zip(["x", "y", "z"]).enumerate() {
            let mut n = i32::from(r.get(name)?) | (i32::from(r.get(name)?) << 8);
            if flags & (1 << k) != 0 {
                n |= i32::from(r.get(name)?) << 16;
                if n & 0x80_0000 != 0 {
                    n |= !0 << 24;
                }
            }
            *slot = n;
        }
        let dir = r.get_u16("dir")?;
        let roll = r.get("roll")?;
        let mut vel = u16::from(r.get("vel")?);
        if flags & (1 << 3) != 0 {
            vel |= u16::from(r.get("vel")?) << 8;
        }
        let veldir = r.get_u16("veldir")?;
        let (mut fall, mut falldir) = (0u16, None);
        if flags & (1 << 4) != 0 {
            fall = u16::from(r.get("fall")?);
            if flags & (1 << 5) != 0 {
                fall |= u16::from(r.get("fall")?) << 8;
            }
            if flags & (1 << 6) != 0 {
                falldir = Some(r.get_u16("falldir")?);
            }
        }
        let wire = Self {
            cn,
            state,
            gameclip: flags & 0x80 != 0,
            o,
            dir,
            roll,
            vel,
            veldir,
            fall,
            falldir,
        };
        Ok((wire, r.pos))
    }

    /// What `parsepositions` reconstructs from these values.
    pub fn to_decoded(&self) -> Decoded {
        let (yaw, pitch) = unpack_dir(self.dir);
        let vel = scale(
            {
                let (y, p) = unpack_dir(self.veldir);
                vecfromyawpitch(y, p)
            },
            f32::from(self.vel) / DVELF,
        );
        let falling = if self.fall > 0 || self.falldir.is_some() {
            let dir = match self.falldir {
                Some(d) => {
                    let (y, p) = unpack_dir(d);
                    vecfromyawpitch(y, p)
                }
                None => [0.0, 0.0, -1.0],
            };
            scale(dir, f32::from(self.fall) / DVELF)
        } else {
            [0.0; 3]
        };
        let s = i32::from(self.state);
        let two_bits = |v: i32| if v & 2 != 0 { -1 } else { v & 1 };
        Decoded {
            cn: self.cn,
            physstate: self.state & 7,
            lifesequence: (self.state >> 3) & 1,
            move_: two_bits(s >> 4),
            strafe: two_bits(s >> 6),
            gameclip: self.gameclip,
            feet: self.o.map(|n| n as f32 / DMF),
            yaw,
            pitch,
            roll: (i32::from(self.roll).clamp(0, 180) - 90) as f32,
            vel,
            falling,
        }
    }
}

fn scale(v: [f32; 3], k: f32) -> [f32; 3] {
    v.map(|c| c * k)
}

/// A bounds-checked reader; every miss is an error with its offset.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn get(&mut self, field: &'static str) -> Result<u8, NposError> {
        let b = self
            .bytes
            .get(self.pos)
            .copied()
            .ok_or(NposError::Truncated {
                offset: self.pos,
                field,
            })?;
        self.pos += 1;
        Ok(b)
    }

    fn get_u16(&mut self, field: &'static str) -> Result<u16, NposError> {
        Ok(u16::from_le_bytes([self.get(field)?, self.get(field)?]))
    }

    /// Sauerbraten's `getuint`.
    fn getuint(&mut self, field: &'static str) -> Result<i32, NposError> {
        let mut n = i32::from(self.get(field)?);
        if n & 0x80 != 0 {
            n += (i32::from(self.get(field)?) << 7) - 0x80;
            if n & (1 << 14) != 0 {
                n += (i32::from(self.get(field)?) << 14) - (1 << 14);
            }
            if n & (1 << 21) != 0 {
                n += (i32::from(self.get(field)?) << 21) - (1 << 21);
            }
            if n & (1 << 28) != 0 {
                n |= !0 << 28;
            }
        }
        Ok(n)
    }
}

/// One `N_POS` message as `parsepositions` reconstructs it.
///
/// JSON (as `rcwire npos decode` prints it): the same names, `move` for `move_`.
#[doc(alias = "N_POS")]
#[doc(alias = "parsepositions")]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Decoded {
    /// Client number.
    pub cn: i32,
    /// `state & 7`.
    pub physstate: u8,
    /// The life-sequence bit (`(state >> 3) & 1`).
    pub lifesequence: u8,
    /// -1, 0 or 1.
    #[serde(rename = "move")]
    pub move_: i32,
    /// -1, 0 or 1.
    pub strafe: i32,
    /// Flag bit 7 (the server's `cp->gameclip`).
    pub gameclip: bool,
    /// Feet position (add the receiver's eyeheight for the eye).
    pub feet: [f32; 3],
    /// Whole degrees, 0..=359.
    pub yaw: f32,
    /// Whole degrees, -90..=90.
    pub pitch: f32,
    /// Whole degrees, -90..=90.
    pub roll: f32,
    /// Velocity rebuilt from whole-unit speed and whole-degree direction.
    pub vel: [f32; 3],
    /// Fall velocity; (0, 0, -fall) without a direction, zero without a fall block.
    pub falling: [f32; 3],
}

impl Decoded {
    /// A player with these values and Sauerbraten's default eyeheight 14 (the eye is the
    /// feet + 14). Re-encoding it is not guaranteed to give the same bytes (quirk 12).
    pub fn to_player(&self) -> NposPlayer {
        let eyeheight = 14.0;
        let [x, y, z] = self.feet;
        NposPlayer {
            cn: self.cn,
            physstate: self.physstate,
            lifesequence: i32::from(self.lifesequence),
            move_: self.move_,
            strafe: self.strafe,
            o: [x, y, z + eyeheight],
            eyeheight,
            yaw: self.yaw,
            pitch: self.pitch,
            roll: self.roll,
            vel: self.vel,
            falling: self.falling,
            gameclip: self.gameclip,
        }
    }
}

/// Decodes exactly one `N_POS` message (type byte 4 first) as `parsepositions` does.
#[doc(alias = "N_POS")]
#[doc(alias = "parsepositions")]
pub fn decode(bytes: &[u8]) -> Result<Decoded, NposError> {
    NposWire::decode(bytes).map(|w| w.to_decoded())
}
