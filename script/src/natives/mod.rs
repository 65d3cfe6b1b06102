//! Every command a script can call: the `rc_standard` command set (Realm Crafter's natives
//! and the Blitz runtime functions it exposes) and the 13 `RC_Core` functions, each with its
//! signature, category and who implements it.
//!
//! The table is written once, in [`table`], as `Variant: "Name%(param%, other$=\"x\")"`
//! lines in the command-set notation: a return tag after the name (none: the call has no
//! value), then typed parameters with constant defaults. [`sig`] parses it on first use.
//!
//! Who implements a native ([`Kind`]):
//! * [`Kind::Pure`]: this crate ([`pure`]), a function of its arguments (strings, math);
//! * [`Kind::Vm`]: this crate, over the instance's own VM state (memory banks);
//! * [`Kind::Host`]: the game host (the zone): actors, world, time, randomness, files,
//!   globals, waits;
//! * [`Kind::Items`], [`Kind::Spells`], [`Kind::Dialogs`]: the host too, but they belong to
//!   later parts of the port; a host that does not have them yet answers
//!   [`RuntimeError::NotSupported`](crate::RuntimeError::NotSupported);
//! * [`Kind::Refused`]: never run (they would reach outside the sandbox: DLLs, raw UDP).

pub mod pure;
pub mod table;

use std::collections::HashMap;
use std::sync::OnceLock;

pub use table::Native;

use crate::value::{RStr, Ty, Value};

/// The category of a native (the `cat` column of `rsl-natives.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cat {
    /// Script control and context.
    Scr,
    /// Actors.
    Act,
    /// Appearance.
    App,
    /// AI, pets, mounts.
    Ai,
    /// Attributes.
    Attr,
    /// Inventory and items.
    Inv,
    /// Abilities.
    Spl,
    /// Effects, FX and sound.
    Eff,
    /// Money.
    Gold,
    /// Quests.
    Qst,
    /// Dialogs and script UI.
    Dlg,
    /// Chat and output.
    Chat,
    /// World, zones, warp.
    Wld,
    /// Time and environment.
    Time,
    /// Party and groups.
    Pty,
    /// Factions.
    Fac,
    /// Globals.
    Glob,
    /// Accounts.
    Acct,
    /// Files and I/O.
    Io,
    /// Network.
    Net,
    /// Math.
    Math,
    /// Strings.
    Str,
    /// Anything else.
    Misc,
}

/// Who implements a native.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// This crate, from the arguments alone.
    Pure,
    /// This crate, over the instance's VM state (banks).
    Vm,
    /// The host.
    Host,
    /// The host, once items, inventory, trade and money exist.
    Items,
    /// The host, once abilities, effects and the game clock exist.
    Spells,
    /// The host, once dialogs, quests and the script UI exist.
    Dialogs,
    /// Never: it would reach outside the script's sandbox.
    Refused,
}

impl Kind {
    /// For [`Kind::Items`], [`Kind::Spells`] and [`Kind::Dialogs`]: the area named in the
    /// "not supported yet" error.
    pub fn later_area(self) -> Option<&'static str> {
        match self {
            Self::Items => Some("items, inventory, trade and money"),
            Self::Spells => Some("abilities, effects and the game clock"),
            Self::Dialogs => Some("dialogs, quests and the script UI"),
            _ => None,
        }
    }
}

/// A constant default value of a parameter.
#[derive(Clone, Debug, PartialEq)]
pub enum Lit {
    /// An Int.
    Int(i32),
    /// A Float.
    Float(f32),
    /// A String.
    Str(Vec<u8>),
}

impl Lit {
    /// The value, converted to `ty`.
    pub fn value(&self, ty: Ty) -> Value {
        let v = match self {
            Self::Int(i) => Value::Int(*i),
            Self::Float(f) => Value::Float(*f),
            Self::Str(s) => Value::Str(RStr::new(s)),
        };
        v.convert(ty)
    }
}

/// One parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamSig {
    /// Its name in the command set.
    pub name: String,
    /// Its type.
    pub ty: Ty,
    /// Its default, if optional.
    pub default: Option<Lit>,
}

/// A native's signature and metadata.
#[derive(Clone, Debug, PartialEq)]
pub struct NativeSig {
    /// Which native.
    pub native: Native,
    /// Its name as documented (case-insensitive when called).
    pub name: &'static str,
    /// Return type; `None`: the call has no value.
    pub ret: Option<Ty>,
    /// Parameters.
    pub params: Vec<ParamSig>,
    /// Category.
    pub cat: Cat,
    /// Implementer.
    pub kind: Kind,
    /// Whether it is one of `RC_Core`'s functions (visible only to scripts that use the
    /// module, which is every script but `RC_Core.rsl` itself).
    pub rc_core: bool,
    /// Whether it may suspend the script (`DoEvents`, the `Wait*` functions, ...).
    pub blocking: bool,
}

impl NativeSig {
    /// Fewest arguments a call may pass.
    pub fn min_args(&self) -> usize {
        self.params
            .iter()
            .position(|p| p.default.is_some())
            .unwrap_or(self.params.len())
    }
}

struct Registry {
    sigs: Vec<NativeSig>,
    by_name: HashMap<String, usize>,
    /// Index into `sigs` by the native's discriminant.
    by_native: Vec<Option<usize>>,
}

fn registry() -> &'static Registry {
    static REG: OnceLock<Registry> = OnceLock::new();
    REG.get_or_init(|| {
        let mut sigs = Vec::with_capacity(table::RAW.len());
        for raw in table::RAW {
            // A malformed table line is a bug caught by `every_signature_parses`; it is
            // skipped here rather than panicking a server.
            if let Some(s) = parse_sig(raw) {
                sigs.push(s);
            }
        }
        let by_name = sigs
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name.to_ascii_lowercase(), i))
            .collect();
        let mut by_native = vec![None; table::RAW.len()];
        for (i, s) in sigs.iter().enumerate() {
            if let Some(slot) = by_native.get_mut(s.native as usize) {
                *slot = Some(i);
            }
        }
        Registry {
            sigs,
            by_name,
            by_native,
        }
    })
}

/// The signature of a native.
#[inline]
pub fn sig(n: Native) -> Option<&'static NativeSig> {
    let r = registry();
    r.by_native
        .get(n as usize)
        .copied()
        .flatten()
        .and_then(|i| r.sigs.get(i))
}

/// Look a native up by name (case-insensitive).
pub fn lookup(name: &str) -> Option<&'static NativeSig> {
    let r = registry();
    r.by_name
        .get(&name.to_ascii_lowercase())
        .and_then(|&i| r.sigs.get(i))
}

/// Every native, in table order.
pub fn all() -> &'static [NativeSig] {
    &registry().sigs
}

/// One line of the table.
#[derive(Clone, Copy, Debug)]
pub struct RawSig {
    /// The variant.
    pub native: Native,
    /// The signature text.
    pub sig: &'static str,
    /// Category.
    pub cat: Cat,
    /// Implementer.
    pub kind: Kind,
    /// RC_Core function.
    pub rc_core: bool,
    /// May suspend.
    pub blocking: bool,
}

fn tag_ty(c: u8) -> Option<Ty> {
    match c {
        b'%' => Some(Ty::Int),
        b'#' => Some(Ty::Float),
        b'$' => Some(Ty::Str),
        _ => None,
    }
}

/// Parse `"Name%(a%, b$=\"x\", c#=-1.5)"`.
pub(crate) fn parse_sig(raw: &RawSig) -> Option<NativeSig> {
    let text = raw.sig.trim();
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let head = text.get(..open)?.trim();
    let (name, ret) = match head.as_bytes().last().copied().and_then(tag_ty) {
        Some(t) => (head.get(..head.len() - 1)?, Some(t)),
        None => (head, None),
    };
    let inner = text.get(open + 1..close)?.trim();
    let mut params = Vec::new();
    if !inner.is_empty() {
        for p in split_params(inner) {
            let p = p.trim();
            let (decl, default) = match p.split_once('=') {
                Some((d, v)) => (d.trim(), Some(v.trim())),
                None => (p, None),
            };
            let ty = decl.as_bytes().last().copied().and_then(tag_ty)?;
            let pname = decl.get(..decl.len() - 1)?.to_owned();
            let default = match default {
                None => None,
                Some(v) => Some(parse_lit(v, ty)?),
            };
            params.push(ParamSig {
                name: pname,
                ty,
                default,
            });
        }
    }
    // Once a parameter has a default, every later one must have one.
    let first_default = params.iter().position(|p| p.default.is_some());
    if let Some(i) = first_default
        && params.iter().skip(i).any(|p| p.default.is_none())
    {
        return None;
    }
    Some(NativeSig {
        native: raw.native,
        name: leak_name(raw.sig, name),
        ret,
        params,
        cat: raw.cat,
        kind: raw.kind,
        rc_core: raw.rc_core,
        blocking: raw.blocking,
    })
}

/// The name as a `&'static str` slice of the static signature text.
fn leak_name(sig: &'static str, name: &str) -> &'static str {
    let trimmed = sig.trim_start();
    trimmed.get(..name.len()).unwrap_or("?")
}

fn split_params(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth_quote = false;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '"' => depth_quote = !depth_quote,
            ',' if !depth_quote => {
                out.push(s.get(start..i).unwrap_or(""));
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(s.get(start..).unwrap_or(""));
    out
}

fn parse_lit(v: &str, ty: Ty) -> Option<Lit> {
    if let Some(q) = v.strip_prefix('"') {
        return Some(Lit::Str(q.strip_suffix('"')?.as_bytes().to_vec()));
    }
    match ty {
        Ty::Float => v.parse::<f32>().ok().map(Lit::Float),
        Ty::Int | Ty::Str => v
            .parse::<i32>()
            .ok()
            .map(Lit::Int)
            .or_else(|| v.parse::<f32>().ok().map(Lit::Float)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_signature_parses() {
        for raw in table::RAW {
            assert!(parse_sig(raw).is_some(), "bad table line: {:?}", raw.sig);
        }
        assert_eq!(all().len(), table::RAW.len());
    }

    #[test]
    fn names_are_unique_and_variants_are_unique() {
        let mut names = std::collections::HashSet::new();
        let mut variants = std::collections::HashSet::new();
        for s in all() {
            assert!(
                names.insert(s.name.to_ascii_lowercase()),
                "duplicate {}",
                s.name
            );
            assert!(
                variants.insert(s.native),
                "duplicate variant {:?}",
                s.native
            );
        }
    }

    #[test]
    fn defaults_parse_with_their_types() {
        let out = lookup("output").expect("Output");
        assert_eq!(out.ret, None);
        assert_eq!(out.min_args(), 2);
        assert_eq!(out.params.len(), 5);
        assert_eq!(out.params[2].default, Some(Lit::Int(255)));
        let fa = lookup("FindActor").expect("FindActor");
        assert_eq!(fa.ret, Some(Ty::Int));
        assert_eq!(fa.params[1].default, Some(Lit::Int(3)));
    }
}
