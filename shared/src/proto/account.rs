//! Account packets: `P_CreateAccount` (1), `P_VerifyAccount` (2), `P_CreateCharacter` (4),
//! `P_DeleteCharacter` (5), `P_ChangePassword` (6), their replies, and the `creds` block
//! they share (reference §3, §5).

use serde::{Deserialize, Serialize};

use super::{DecodeCtx, Packet, bad_sub, ids};
use crate::wire::{DecodeError, RcString, Reader, WireWrite, deobfuscate_email, obfuscate_email};

/// `creds`: `u8 len, user, u8 len, password` where the password is the lowercase 32-hex
/// MD5 of what the player typed (see [`crate::wire::md5_hex`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Creds {
    /// The account name.
    pub user: RcString,
    /// The lowercase hex MD5 of the password, as sent.
    pub password_md5: RcString,
}

impl Creds {
    /// Builds credentials from a user name and the plain password (hashed here).
    pub fn from_password(user: &str, password: &str) -> Self {
        Self {
            user: RcString::from(user),
            password_md5: RcString::from(crate::wire::md5_hex(password.as_bytes()).as_str()),
        }
    }

    /// Reads `creds`.
    pub fn read(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            user: r.string8()?,
            password_md5: r.string8()?,
        })
    }

    /// Writes `creds`.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.put_str8(&self.user.0);
        out.put_str8(&self.password_md5.0);
    }
}

/// Defines a C→S packet that is `creds, index u8`: `P_FetchCharacter`, `P_DeleteCharacter`
/// and `P_StartGame` share this layout.
macro_rules! creds_index_packet {
    ($(#[$meta:meta])* $ty:ident, $id:expr, $name:literal) => {
        $(#[$meta])*
        #[doc(alias = $name)]
        #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
        pub struct $ty {
            /// Credentials.
            pub creds: Creds,
            /// Index of the character in the account's list.
            pub index: u8,
        }

        impl Packet for $ty {
            const ID: u8 = $id;
            const NAME: &'static str = $name;
            fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
                let mut r = Reader::new(payload);
                let creds = Creds::read(&mut r)?;
                let index = r.u8()?;
                r.finish()?;
                Ok(Self { creds, index })
            }
            fn encode_payload(&self, out: &mut Vec<u8>) {
                self.creds.write(out);
                out.push(self.index);
            }
        }
    };
}

/// Declares a reply packet that is a single sub-code byte.
macro_rules! code_reply {
    (
        $(#[$meta:meta])* $ty:ident, $id:expr, $name:literal,
        { $( $(#[$vmeta:meta])* $variant:ident = $code:literal ),* $(,)? }
    ) => {
        $(#[$meta])*
        #[doc(alias = $name)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(tag = "sub")]
        pub enum $ty {
            $(
                $(#[$vmeta])*
                #[serde(rename = $code)]
                $variant,
            )*
        }

        impl Packet for $ty {
            const ID: u8 = $id;
            const NAME: &'static str = $name;
            fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
                let mut r = Reader::new(payload);
                let c = r.u8()?;
                let v = match c {
                    $( x if x == $code.as_bytes()[0] => Self::$variant, )*
                    other => return Err(bad_sub(0, other)),
                };
                r.finish()?;
                Ok(v)
            }
            fn encode_payload(&self, out: &mut Vec<u8>) {
                match self {
                    $( Self::$variant => out.extend_from_slice($code.as_bytes()), )*
                }
            }
        }
    };
}

/// `P_CreateAccount` (1) C→S: `creds, u8 len, email`.
///
/// The e-mail is obfuscated on the wire (each byte −26, then reversed); this type holds
/// the plain e-mail, and the codec applies [`obfuscate_email`] / [`deobfuscate_email`],
/// which are exact inverses, so any bytes round-trip.
///
/// | off | type | field |
/// |---|---|---|
/// |1|creds|user, password MD5|
/// |…|u8 len + bytes|obfuscated e-mail|
#[doc(alias = "P_CreateAccount")]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateAccount {
    /// Credentials of the new account.
    pub creds: Creds,
    /// The e-mail address in clear.
    pub email: RcString,
}

impl Packet for CreateAccount {
    const ID: u8 = ids::P_CREATE_ACCOUNT;
    const NAME: &'static str = "P_CreateAccount";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let creds = Creds::read(&mut r)?;
        let email = RcString(deobfuscate_email(r.str8()?));
        r.finish()?;
        Ok(Self { creds, email })
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        self.creds.write(out);
        let n = self.email.len().min(255);
        let email = self.email.0.get(..n).unwrap_or(&[]);
        out.put_str8(&obfuscate_email(email));
    }
}

code_reply!(
    /// `P_CreateAccount` (1) S→C: `"Y"` created, `"N"` refused.
    CreateAccountReply, ids::P_CREATE_ACCOUNT, "P_CreateAccount",
    {
        /// `"Y"`: the account was created.
        Created = "Y",
        /// `"N"`: refused (name taken or invalid, creation disabled).
        Refused = "N",
    }
);

/// `P_VerifyAccount` (2) C→S: `creds` (login).
#[doc(alias = "P_VerifyAccount")]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifyAccount {
    /// The login credentials.
    pub creds: Creds,
}

impl Packet for VerifyAccount {
    const ID: u8 = ids::P_VERIFY_ACCOUNT;
    const NAME: &'static str = "P_VerifyAccount";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let creds = Creds::read(&mut r)?;
        r.finish()?;
        Ok(Self { creds })
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        self.creds.write(out);
    }
}

/// One entry of a character list: `u8 len, name, actorID u16, gender, face, hair, beard,
/// body u8`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CharacterSummary {
    /// Character name.
    pub name: RcString,
    /// Actor template id.
    pub actor_id: u16,
    /// Gender (0 male, 1 female).
    pub gender: u8,
    /// Face index.
    pub face: u8,
    /// Hair index.
    pub hair: u8,
    /// Beard index.
    pub beard: u8,
    /// Body index.
    pub body: u8,
}

impl CharacterSummary {
    /// Reads one entry.
    pub fn read(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            name: r.string8()?,
            actor_id: r.u16()?,
            gender: r.u8()?,
            face: r.u8()?,
            hair: r.u8()?,
            beard: r.u8()?,
            body: r.u8()?,
        })
    }

    /// Writes one entry.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.put_str8(&self.name.0);
        out.put_u16(self.actor_id);
        out.put_bytes(&[self.gender, self.face, self.hair, self.beard, self.body]);
    }
}

/// `P_VerifyAccount` (2) S→C: `"Y"` + character list, or a failure code.
///
/// V1 answers every pre-auth failure with `"P"`; `"B"` and `"L"` come only after the
/// password verified.
#[doc(alias = "P_VerifyAccount")]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "sub")]
pub enum VerifyAccountReply {
    /// `"Y"` + for each character [`CharacterSummary`].
    #[serde(rename = "Y")]
    Ok {
        /// The account's characters.
        characters: Vec<CharacterSummary>,
    },
    /// `"N"`: no such account (V0).
    #[serde(rename = "N")]
    NoAccount,
    /// `"P"`: wrong password (V1: any pre-auth failure).
    #[serde(rename = "P")]
    BadPassword,
    /// `"B"`: banned.
    #[serde(rename = "B")]
    Banned,
    /// `"L"`: already logged on.
    #[serde(rename = "L")]
    LoggedOn,
}

impl Packet for VerifyAccountReply {
    const ID: u8 = ids::P_VERIFY_ACCOUNT;
    const NAME: &'static str = "P_VerifyAccount";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let v = match r.u8()? {
            b'Y' => Self::Ok {
                characters: r.until_end(CharacterSummary::read)?,
            },
            b'N' => Self::NoAccount,
            b'P' => Self::BadPassword,
            b'B' => Self::Banned,
            b'L' => Self::LoggedOn,
            c => return Err(bad_sub(0, c)),
        };
        r.finish()?;
        Ok(v)
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        match self {
            Self::Ok { characters } => {
                out.push(b'Y');
                for c in characters {
                    c.write(out);
                }
            }
            Self::NoAccount => out.push(b'N'),
            Self::BadPassword => out.push(b'P'),
            Self::Banned => out.push(b'B'),
            Self::LoggedOn => out.push(b'L'),
        }
    }
}

/// `P_CreateCharacter` (4) C→S.
///
/// | field | type |
/// |---|---|
/// |creds|u8 len user, u8 len password MD5|
/// |actor_id|u16|
/// |gender, face, hair, beard, body|u8 each|
/// |points|40 × u8, only when the project's attribute `Assignment > 0`|
/// |name|rest of packet|
///
/// Whether the points are present is not visible in the bytes; the decoder follows
/// [`DecodeCtx::create_character_points`]. The encoder writes `points` as given (empty or
/// 40 entries).
#[doc(alias = "P_CreateCharacter")]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateCharacter {
    /// Credentials.
    pub creds: Creds,
    /// Actor template id.
    pub actor_id: u16,
    /// Gender.
    pub gender: u8,
    /// Face index.
    pub face: u8,
    /// Hair index.
    pub hair: u8,
    /// Beard index.
    pub beard: u8,
    /// Body index.
    pub body: u8,
    /// Creation points per attribute (40 entries, or empty when the project has none).
    pub points: Vec<u8>,
    /// The character name (rest of the packet).
    pub character_name: RcString,
}

impl Packet for CreateCharacter {
    const ID: u8 = ids::P_CREATE_CHARACTER;
    const NAME: &'static str = "P_CreateCharacter";
    fn decode_payload(payload: &[u8], ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let creds = Creds::read(&mut r)?;
        let actor_id = r.u16()?;
        let [gender, face, hair, beard, body] = r.array::<5>()?;
        let points = if ctx.create_character_points {
            r.bytes(40)?.to_vec()
        } else {
            Vec::new()
        };
        let character_name = RcString::from(r.rest());
        Ok(Self {
            creds,
            actor_id,
            gender,
            face,
            hair,
            beard,
            body,
            points,
            character_name,
        })
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        self.creds.write(out);
        out.put_u16(self.actor_id);
        out.put_bytes(&[self.gender, self.face, self.hair, self.beard, self.body]);
        out.put_bytes(&self.points);
        out.put_bytes(&self.character_name.0);
    }
}

code_reply!(
    /// `P_CreateCharacter` (4) S→C: `"Y"`, `"N"` or `"I"` (invalid name).
    CreateCharacterReply, ids::P_CREATE_CHARACTER, "P_CreateCharacter",
    {
        /// `"Y"`: created.
        Created = "Y",
        /// `"N"`: refused (limit reached, bad template, bad points).
        Refused = "N",
        /// `"I"`: invalid or taken name.
        InvalidName = "I",
    }
);

creds_index_packet!(
    /// `P_DeleteCharacter` (5) C→S: `creds, index u8`.
    DeleteCharacter, ids::P_DELETE_CHARACTER, "P_DeleteCharacter"
);

/// `P_DeleteCharacter` (5) S→C: the new character list **without** a `"Y"` prefix, or
/// `"N"`.
///
/// The single byte `"N"` cannot be a list (an entry is at least 8 bytes), so the two forms
/// never collide; an empty payload is an empty list.
#[doc(alias = "P_DeleteCharacter")]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "sub")]
pub enum DeleteCharacterReply {
    /// The remaining characters.
    #[serde(rename = "list")]
    List {
        /// The account's characters after the deletion.
        characters: Vec<CharacterSummary>,
    },
    /// `"N"`: refused.
    #[serde(rename = "N")]
    Refused,
}

impl Packet for DeleteCharacterReply {
    const ID: u8 = ids::P_DELETE_CHARACTER;
    const NAME: &'static str = "P_DeleteCharacter";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        if payload == b"N" {
            return Ok(Self::Refused);
        }
        let mut r = Reader::new(payload);
        Ok(Self::List {
            characters: r.until_end(CharacterSummary::read)?,
        })
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        match self {
            Self::List { characters } => {
                for c in characters {
                    c.write(out);
                }
            }
            Self::Refused => out.push(b'N'),
        }
    }
}

/// `P_ChangePassword` (6) C→S: `creds, u8 len, new password MD5`.
#[doc(alias = "P_ChangePassword")]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangePassword {
    /// Current credentials.
    pub creds: Creds,
    /// The new password's hex MD5.
    pub new_password_md5: RcString,
}

impl Packet for ChangePassword {
    const ID: u8 = ids::P_CHANGE_PASSWORD;
    const NAME: &'static str = "P_ChangePassword";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let creds = Creds::read(&mut r)?;
        let new_password_md5 = r.string8()?;
        r.finish()?;
        Ok(Self {
            creds,
            new_password_md5,
        })
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        self.creds.write(out);
        out.put_str8(&self.new_password_md5.0);
    }
}

code_reply!(
    /// `P_ChangePassword` (6) S→C: `"Y"`, `"P"` (wrong password) or `"N"`.
    ChangePasswordReply, ids::P_CHANGE_PASSWORD, "P_ChangePassword",
    {
        /// `"Y"`: changed.
        Changed = "Y",
        /// `"P"`: the current password is wrong.
        BadPassword = "P",
        /// `"N"`: no such account.
        Refused = "N",
    }
);
