//! The native table: one line per command a script can call, in the command-set notation
//! (`Name%(param%, other$="x")`), with its category, implementer and flags (`core`: an
//! `RC_Core` function; `blocking`: may suspend the script).
//!
//! Signatures follow Realm Crafter's command set (`rc_standard`), so argument counts,
//! defaults and conversions match what existing scripts were compiled against; the
//! semantics are in `rsl-natives.md` and `docs/scripting.md`.

use super::{Cat, Kind, RawSig};

macro_rules! natives {
    ($( $v:ident : $sig:literal, $cat:ident, $kind:ident $(, $flag:ident)* ; )*) => {
        /// Every native, one variant each (the host matches on these).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[allow(missing_docs)]
        pub enum Native { $( $v, )* }

        /// The raw table, parsed by [`super::sig`].
        pub(crate) static RAW: &[RawSig] = &[
            $( RawSig {
                native: Native::$v,
                sig: $sig,
                cat: Cat::$cat,
                kind: Kind::$kind,
                rc_core: false $( || flag_is(stringify!($flag), "core") )*,
                blocking: false $( || flag_is(stringify!($flag), "blocking") )*,
            }, )*
        ];
    };
}

const fn flag_is(flag: &str, want: &str) -> bool {
    let (a, b) = (flag.as_bytes(), want.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

natives! {
    // ----- script control (scr) ---------------------------------------------------------
    Actor: "Actor%()", Scr, Host;
    ContextActor: "ContextActor%()", Scr, Host;
    Parameter: "Parameter$(n%)", Scr, Host;
    Persistent: "Persistent(flag%)", Scr, Host;
    ThreadExecute: "ThreadExecute(name$, func$, actor%=0, contextActor%=0, param$=\"\")", Scr, Host;
    ScriptLog: "ScriptLog(msg$=\"\")", Scr, Host;

    // ----- RC_Core --------------------------------------------------------------------
    DoEvents: "DoEvents%(ms%)", Scr, Host, core, blocking;
    WaitKill: "WaitKill%(actor%, templateID%, count%)", Qst, Host, core, blocking;

    // ----- actors (act) ---------------------------------------------------------------
    FindActor: "FindActor%(name$, actorType%=3)", Act, Host;
    ActorX: "ActorX#(actor%)", Act, Host;

    // ----- chat ---------------------------------------------------------------------------
    Output: "Output(actor%, msg$, r%=255, g%=255, b%=255)", Chat, Host;

    // ----- strings and math (pure) ----------------------------------------------------------
    Len: "Len%(string$)", Str, Pure;
    Mid: "Mid$(string$, start%, count%=65535)", Str, Pure;
    Abs: "Abs%(value%)", Math, Pure;

    // ----- banks (vm) -------------------------------------------------------------------
    CreateBank: "CreateBank%(size%=0)", Misc, Vm;

    // ----- refused ------------------------------------------------------------------------
    CallDll: "CallDLL%(dll$, func$, inBank%, outBank%)", Misc, Refused;
}
