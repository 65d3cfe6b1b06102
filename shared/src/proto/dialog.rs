//! Script dialogs: `P_Dialog` (21) in both directions (reference §9.21). The server opens
//! a dialog for a waiting script instance (`OpenDialog`), writes lines into it
//! (`DialogOutput`), offers options (`DialogInput`) and closes it (`CloseDialog`); the
//! client answers each wait with the instance's handle (`hSI`).

use serde::{Deserialize, Serialize};

use super::{DecodeCtx, Packet, bad_sub, ids};
use crate::wire::{DecodeError, RcString, Reader, WireWrite};

/// Most options one `"O"` carries (Realm Crafter's `DialogInput` sends up to 9).
pub const DIALOG_OPTIONS_MAX: usize = 9;

/// `P_Dialog` (21) S→C.
///
/// | sub | layout |
/// |---|---|
/// |`"N"`|`hSI u32, contextRID u16 (65535 = none), background tex u16 (65535 = none), title (rest)`: open a window|
/// |`"T"`|`r u8, g u8, b u8, dialog u32, text (rest)`: a line of text|
/// |`"O"`|`dialog u32`, then up to 9 `str8` options|
/// |`"C"`|`dialog u32`: close|
///
/// Vector: `15 4e 10 00 00 00 07 00 ff ff Trainer` opens "Trainer" for instance 16 with
/// RuntimeID 7.
#[doc(alias = "P_Dialog")]
#[doc(alias = "OpenDialog")]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "sub")]
pub enum DialogS2C {
    /// `"N"`: open a dialog window for script instance `script`.
    #[serde(rename = "N")]
    Open {
        /// The waiting script instance (`hSI`), echoed in the client's answer.
        script: u32,
        /// The NPC the player talks to (65535 = none).
        context: u16,
        /// Background texture (65535 = none).
        background: u16,
        /// Window title (rest of the packet).
        title: RcString,
    },
    /// `"T"`: a line of text in a dialog.
    #[serde(rename = "T")]
    Text {
        /// Red.
        r: u8,
        /// Green.
        g: u8,
        /// Blue.
        b: u8,
        /// The client's dialog handle.
        dialog: u32,
        /// The text (rest of the packet).
        text: RcString,
    },
    /// `"O"`: options to choose from.
    #[serde(rename = "O")]
    Options {
        /// The client's dialog handle.
        dialog: u32,
        /// The options (`str8` each; at most 9 are sent).
        options: Vec<RcString>,
    },
    /// `"C"`: close a dialog.
    #[serde(rename = "C")]
    Close {
        /// The client's dialog handle.
        dialog: u32,
    },
}

impl Packet for DialogS2C {
    const ID: u8 = ids::P_DIALOG;
    const NAME: &'static str = "P_Dialog";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let v = match r.u8()? {
            b'N' => Self::Open {
                script: r.u32()?,
                context: r.u16()?,
                background: r.u16()?,
                title: RcString::from(r.rest()),
            },
            b'T' => Self::Text {
                r: r.u8()?,
                g: r.u8()?,
                b: r.u8()?,
                dialog: r.u32()?,
                text: RcString::from(r.rest()),
            },
            b'O' => Self::Options {
                dialog: r.u32()?,
                options: r.until_end(Reader::string8)?,
            },
            b'C' => Self::Close { dialog: r.u32()? },
            c => return Err(bad_sub(0, c)),
        };
        r.finish()?;
        Ok(v)
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        match self {
            Self::Open {
                script,
                context,
                background,
                title,
            } => {
                out.push(b'N');
                out.put_u32(*script);
                out.put_u16(*context);
                out.put_u16(*background);
                out.put_bytes(title.as_bytes());
            }
            Self::Text {
                r,
                g,
                b,
                dialog,
                text,
            } => {
                out.push(b'T');
                out.put_u8(*r);
                out.put_u8(*g);
                out.put_u8(*b);
                out.put_u32(*dialog);
                out.put_bytes(text.as_bytes());
            }
            Self::Options { dialog, options } => {
                out.push(b'O');
                out.put_u32(*dialog);
                for o in options {
                    out.put_str8(o.as_bytes());
                }
            }
            Self::Close { dialog } => {
                out.push(b'C');
                out.put_u32(*dialog);
            }
        }
    }
}

/// `P_Dialog` (21) C→S: the client's answers, each naming the waiting script instance.
///
/// | sub | layout |
/// |---|---|
/// |`"N"`|`hSI u32, dialog u32`: the window is open, with this client handle|
/// |`"T"`|`hSI u32`: the text was shown|
/// |`"O"`|`hSI u32, option u8` (1-based, in the order sent)|
///
/// Vector: `15 4f 10 00 00 00 02` chooses option 2 for instance 16.
#[doc(alias = "P_Dialog")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "sub")]
pub enum DialogC2S {
    /// `"N"`: the dialog opened.
    #[serde(rename = "N")]
    Opened {
        /// The script instance (`hSI`) from the server's `"N"`.
        script: u32,
        /// The client's handle for the window.
        dialog: u32,
    },
    /// `"T"`: a line of text was shown.
    #[serde(rename = "T")]
    TextShown {
        /// The script instance.
        script: u32,
    },
    /// `"O"`: an option was chosen.
    #[serde(rename = "O")]
    Chosen {
        /// The script instance.
        script: u32,
        /// The option, 1-based.
        option: u8,
    },
}

impl Packet for DialogC2S {
    const ID: u8 = ids::P_DIALOG;
    const NAME: &'static str = "P_Dialog";
    fn decode_payload(payload: &[u8], _ctx: &DecodeCtx<'_>) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let v = match r.u8()? {
            b'N' => Self::Opened {
                script: r.u32()?,
                dialog: r.u32()?,
            },
            b'T' => Self::TextShown { script: r.u32()? },
            b'O' => Self::Chosen {
                script: r.u32()?,
                option: r.u8()?,
            },
            c => return Err(bad_sub(0, c)),
        };
        r.finish()?;
        Ok(v)
    }
    fn encode_payload(&self, out: &mut Vec<u8>) {
        match self {
            Self::Opened { script, dialog } => {
                out.push(b'N');
                out.put_u32(*script);
                out.put_u32(*dialog);
            }
            Self::TextShown { script } => {
                out.push(b'T');
                out.put_u32(*script);
            }
            Self::Chosen { script, option } => {
                out.push(b'O');
                out.put_u32(*script);
                out.put_u8(*option);
            }
        }
    }
}
