//! The native table against Realm Crafter's command set: every line parses, names are
//! unique, the counts per implementer are the agreed ones, the RC_Core lines are exactly
//! the 13 functions, and spot-checked signatures match `RC_Standard.bcs` and `RC_Core.rsl`.

use std::collections::{BTreeMap, HashSet};

use script::Ty;
use script::natives::{self, Cat, Kind, Lit, NativeSig, table};

/// The 13 functions of `RC_Core.rsl`.
const RC_CORE: [&str; 13] = [
    "DoEvents",
    "OpenDialog",
    "CloseDialog",
    "DialogOutput",
    "DialogInput",
    "Input",
    "CreateProgressBar",
    "DeleteProgressBar",
    "UpdateProgressBar",
    "WaitTime",
    "WaitSpeak",
    "WaitItem",
    "WaitKill",
];

/// The RC_Core functions that can suspend the script.
const BLOCKING: [&str; 10] = [
    "DoEvents",
    "OpenDialog",
    "DialogOutput",
    "DialogInput",
    "Input",
    "CreateProgressBar",
    "WaitTime",
    "WaitSpeak",
    "WaitItem",
    "WaitKill",
];

#[track_caller]
fn sig(name: &str) -> &'static NativeSig {
    natives::lookup(name).unwrap_or_else(|| panic!("{name} is not in the table"))
}

/// The signature written back in the command-set notation, for comparisons.
fn render(s: &NativeSig) -> String {
    let params: Vec<String> = s
        .params
        .iter()
        .map(|p| {
            let default = match &p.default {
                None => String::new(),
                Some(Lit::Int(i)) => format!("={i}"),
                Some(Lit::Float(f)) => format!("={f:?}"),
                Some(Lit::Str(b)) => format!("=\"{}\"", String::from_utf8_lossy(b)),
            };
            format!("{}{}{default}", p.name, p.ty.tag())
        })
        .collect();
    let ret = s.ret.map(|t| t.tag().to_string()).unwrap_or_default();
    format!("{}{ret}({})", s.name, params.join(", "))
}

#[test]
fn every_line_parses_and_names_are_unique() {
    assert_eq!(natives::all().len(), table::RAW.len());
    let mut names = HashSet::new();
    let mut variants = HashSet::new();
    for s in natives::all() {
        assert!(names.insert(s.name.to_ascii_lowercase()), "{}", s.name);
        assert!(variants.insert(s.native), "{:?}", s.native);
        assert_eq!(natives::sig(s.native), Some(s));
        assert_eq!(natives::lookup(&s.name.to_ascii_uppercase()), Some(s));
    }
}

#[test]
fn the_command_set_and_rc_core_are_all_there() {
    let all = natives::all();
    let core = all.iter().filter(|s| s.rc_core).count();
    // 317 command-set entries (230 Realm Crafter functions, FlushDebugLog and DebugLog, 85
    // Blitz+ functions and aliases) plus the 13 RC_Core functions.
    assert_eq!(all.len() - core, 317);
    assert_eq!(core, 13);

    let mut by_kind: BTreeMap<String, usize> = BTreeMap::new();
    for s in all {
        *by_kind.entry(format!("{:?}", s.kind)).or_default() += 1;
    }
    let want: BTreeMap<String, usize> = [
        ("Pure", 49),
        ("Vm", 13),
        ("Host", 176),
        ("Items", 35),
        ("Spells", 17),
        ("Dialogs", 28),
        ("Refused", 12),
    ]
    .into_iter()
    .map(|(k, n)| (k.to_owned(), n))
    .collect();
    assert_eq!(by_kind, want);
}

#[test]
fn rc_core_lines_are_the_thirteen_and_only_they_block() {
    for s in natives::all() {
        if s.rc_core {
            assert!(RC_CORE.contains(&s.name), "{} is marked core", s.name);
        }
        assert_eq!(s.blocking, BLOCKING.contains(&s.name), "{}", s.name);
    }
    for name in RC_CORE {
        let s = sig(name);
        assert!(s.rc_core, "{name}");
        // An RC_Core function with no type tag returns Int.
        let want = if name == "Input" { Ty::Str } else { Ty::Int };
        assert_eq!(s.ret, Some(want), "{name}");
    }
}

#[test]
fn signatures_match_the_command_set() {
    let cases = [
        "Spawn%(templateID%, zone$, x#, y#, z#, script$=\"\", deathScript$=\"\", instance%=0)",
        "ThreadExecute(name$, func$, actor%=0, contextActor%=0, param$=\"\")",
        "DialogInput%(player%, dialog%, options$, delim$=\",\")",
        "Output(actor%, msg$, r%=255, g%=255, b%=255)",
        "Mid$(string$, start%, count%=65535)",
        "DoEvents%(ms%)",
        "OpenDialog%(player%, contextActor%, title$=\"\", backgroundTexID%=0, x#=0.0, y#=0.0, w#=0.0, h#=0.0)",
        "CreateProgressBar%(player%, r%, g%, b%, x#, y#, w#, h#, maximum%, value%, label$)",
        "Input$(player%, title$, prompt$, type%=0)",
        "CloseDialog%(player%, dialog%)",
        "WaitTime%(hour%, minute%)",
        "Split$(string$, n%, delim$=\",\")",
        "Instr%(string$, find$, from%=1)",
        "CreateEmitter(actor%, emitter$, texID%, ms%, offsetX#=0.0, offsetY#=0.0, offsetZ#=0.0, showTo%=0)",
        "SpawnItem(item$, amount%, zone$, x#, y#, z#, instance%=0)",
        "CallDLL%(dll$, func$, inBank%, outBank%)",
        "Rand%(from%, to%)",
        "CreateUDPStream%(port%=0)",
        "SendUDPMsg(stream%, ip%, port%)",
        "Mod#(x#, y#)",
        "ATanII#(y#, x#)",
        "RealDate$()",
        "End()",
        "HostDebugLog(msg$)",
        "RCE_SendCreateProgressBar(host%, rnid%, r%, g%, b%, x#, y#, w#, h#, maximum%, value%, label$)",
        "ScriptLog(msg$=\"\")",
        "NextActor%(actor%=0)",
        "CreateBank%(size%=0)",
        "PokeFloat(bank%, offset%, value#)",
    ];
    for want in cases {
        let name = want.split(['%', '#', '$', '(']).next().unwrap_or_default();
        assert_eq!(render(sig(name)), want);
    }
    assert_eq!(sig("Output").min_args(), 2);
    assert_eq!(sig("DoEvents").min_args(), 1);
    assert_eq!(sig("Persistent").ret, None);
    assert_eq!(sig("SceneryOwner").ret, Some(Ty::Int));
}

#[test]
fn aliases_are_separate_lines_with_the_same_signature() {
    let pairs = [
        ("ATan2", "ATanII"),
        ("CurrentDate", "RealDate"),
        ("CurrentTime", "RealTime"),
        ("Sgn", "Sign"),
        ("Sqr", "Sqrt"),
        ("DebugLog", "HostDebugLog"),
        ("ActorGroup", "ActorGuild"),
        ("SetActorGroup", "SetActorGuild"),
        ("Gold", "Money"),
        ("ChangeGold", "ChangeMoney"),
        ("SetGold", "SetMoney"),
    ];
    for (a, b) in pairs {
        let (sa, sb) = (sig(a), sig(b));
        assert_ne!(sa.native, sb.native, "{a} / {b}");
        assert_eq!(sa.ret, sb.ret, "{a} / {b}");
        let tys = |s: &NativeSig| s.params.iter().map(|p| p.ty).collect::<Vec<_>>();
        assert_eq!(tys(sa), tys(sb), "{a} / {b}");
        assert_eq!((sa.kind, sa.cat), (sb.kind, sb.cat), "{a} / {b}");
    }
}

#[test]
fn kinds_and_categories_spot_checks() {
    let cases: &[(&str, Kind, Cat)] = &[
        ("Len", Kind::Pure, Cat::Str),
        ("Int", Kind::Pure, Cat::Math),
        ("Float", Kind::Pure, Cat::Str),
        ("Mod", Kind::Pure, Cat::Math),
        ("DottedIP", Kind::Pure, Cat::Net),
        ("MySQLQuery", Kind::Pure, Cat::Io),
        ("SQLActorID", Kind::Pure, Cat::Acct),
        ("GetEnv", Kind::Host, Cat::Misc),
        ("PeekShort", Kind::Vm, Cat::Misc),
        ("CallDLL", Kind::Refused, Cat::Misc),
        ("HostIP", Kind::Refused, Cat::Net),
        ("UDPTimeouts", Kind::Refused, Cat::Net),
        ("ArmourLevel", Kind::Items, Cat::Inv),
        ("SetMoney", Kind::Items, Cat::Gold),
        ("ActorBackpack", Kind::Items, Cat::Inv),
        ("CreateFloatingNumber", Kind::Spells, Cat::Eff),
        ("Season", Kind::Spells, Cat::Time),
        ("WaitTime", Kind::Spells, Cat::Time),
        ("AbilityMemorised", Kind::Spells, Cat::Spl),
        ("PlaySpeech", Kind::Dialogs, Cat::Eff),
        ("BubbleOutput", Kind::Dialogs, Cat::Chat),
        ("QuestStatus", Kind::Dialogs, Cat::Qst),
        ("RCE_SendInput", Kind::Dialogs, Cat::Dlg),
        ("DoEvents", Kind::Host, Cat::Scr),
        ("WaitKill", Kind::Host, Cat::Qst),
        ("MilliSecs", Kind::Host, Cat::Time),
        ("Rand", Kind::Host, Cat::Math),
        ("AnimateActor", Kind::Host, Cat::App),
        ("SceneryOwner", Kind::Host, Cat::Wld),
        ("ReadBytes", Kind::Host, Cat::Io),
        ("GetRNID", Kind::Host, Cat::Act),
        ("SetWaitKill", Kind::Host, Cat::Scr),
    ];
    for &(name, kind, cat) in cases {
        let s = sig(name);
        assert_eq!((s.kind, s.cat), (kind, cat), "{name}");
    }
}
