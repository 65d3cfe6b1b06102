//! The native table: one line per command a script can call, in the command-set notation
//! (`Name%(param%, other$="x")`), with its category, implementer and flags (`core`: an
//! `RC_Core` function; `blocking`: may suspend the script).
//!
//! Signatures follow Realm Crafter's command set (`rc_standard`), so argument counts,
//! defaults and conversions match what existing scripts were compiled against; the
//! semantics are in `rsl-natives.md` and `docs/scripting.md`.
//!
//! The table holds 330 lines: the command set's 317 entries (230 Realm Crafter functions,
//! `FlushDebugLog` and `DebugLog`, 85 Blitz+ functions) and the 13 `RC_Core` functions. An
//! alias (`RealDate` for `CurrentDate`, `Sign` for `Sgn`, `ActorGuild` for `ActorGroup`,
//! ...) is a line and a variant of its own with the same signature, so the host matches
//! both. An `RC_Core` function has the types of its script definition: no tag is Int, for
//! the result and for parameters.

use super::{Cat, Kind, RawSig};

macro_rules! natives {
    ($( $v:ident : $sig:literal, $cat:ident, $kind:ident $(, $flag:ident)* ; )*) => {
        /// Every native, one variant each (the host matches on these).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[allow(missing_docs)]
        pub enum Native { $( $v, )* }

        /// The raw table, one line per native, parsed by [`super::sig`] (public so tests can
        /// check that every line parses).
        pub static RAW: &[RawSig] = &[
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
    // ----- script control and context (scr) ---------------------------------------------
    Actor: "Actor%()", Scr, Host;
    ContextActor: "ContextActor%()", Scr, Host;
    Parameter: "Parameter$(n%)", Scr, Host;
    Persistent: "Persistent(flag%)", Scr, Host;
    ThreadExecute: "ThreadExecute(name$, func$, actor%=0, contextActor%=0, param$=\"\")", Scr, Host;
    ScriptLog: "ScriptLog(msg$=\"\")", Scr, Host;
    RuntimeError: "RuntimeError(msg$=\"\")", Scr, Host;
    End: "End()", Scr, Host;
    RefreshScripts: "RefreshScripts()", Scr, Host;
    SaveState: "SaveState()", Scr, Host;
    Goto: "Goto(label$)", Scr, Host;
    GotoIf: "GotoIf(condition$)", Scr, Host;
    Print: "Print(string$)", Scr, Host;
    Write: "Write(string$)", Scr, Host;
    DebugLog: "DebugLog(txt$)", Scr, Host;
    HostDebugLog: "HostDebugLog(msg$)", Scr, Host;
    FlushDebugLog: "FlushDebugLog()", Scr, Host;

    // ----- wait helpers behind RC_Core (scr) ----------------------------------------------
    SetWaiting: "SetWaiting(state%)", Scr, Host;
    SetWaitStart: "SetWaitStart(ms%)", Scr, Host;
    SetWaitTime: "SetWaitTime(ms%)", Scr, Host;
    SetWaitInfo: "SetWaitInfo(hour%, minute%)", Scr, Host;
    SetWaitSpeak: "SetWaitSpeak(actor%, other%)", Scr, Host;
    SetWaitItem: "SetWaitItem(actor%, item$, amount%)", Scr, Host;
    SetWaitKill: "SetWaitKill(actor%, templateID%, count%)", Scr, Host;
    GetWaitResult: "GetWaitResult$()", Scr, Host;

    // ----- RC_Core: the blocking and dialog functions (script functions in V0) -------------
    DoEvents: "DoEvents%(ms%)", Scr, Host, core, blocking;
    WaitTime: "WaitTime%(hour%, minute%)", Time, Spells, core, blocking;
    WaitSpeak: "WaitSpeak%(actor%, other%)", Qst, Host, core, blocking;
    WaitItem: "WaitItem%(actor%, item$, amount%)", Qst, Host, core, blocking;
    WaitKill: "WaitKill%(actor%, templateID%, count%)", Qst, Host, core, blocking;
    OpenDialog: "OpenDialog%(player%, contextActor%, title$=\"\", backgroundTexID%=0, x#=0.0, y#=0.0, w#=0.0, h#=0.0)", Dlg, Dialogs, core, blocking;
    CloseDialog: "CloseDialog%(player%, dialog%)", Dlg, Dialogs, core;
    DialogOutput: "DialogOutput%(player%, dialog%, text$, r%=255, g%=255, b%=255)", Dlg, Dialogs, core, blocking;
    DialogInput: "DialogInput%(player%, dialog%, options$, delim$=\",\")", Dlg, Dialogs, core, blocking;
    Input: "Input$(player%, title$, prompt$, type%=0)", Dlg, Dialogs, core, blocking;
    CreateProgressBar: "CreateProgressBar%(player%, r%, g%, b%, x#, y#, w#, h#, maximum%, value%, label$)", Dlg, Dialogs, core, blocking;
    UpdateProgressBar: "UpdateProgressBar%(player%, bar%, value%)", Dlg, Dialogs, core;
    DeleteProgressBar: "DeleteProgressBar%(player%, bar%)", Dlg, Dialogs, core;

    // ----- actors: identity, position, lookup, XP (act) -----------------------------------
    FindActor: "FindActor%(name$, actorType%=3)", Act, Host;
    ActorX: "ActorX#(actor%)", Act, Host;
    ActorY: "ActorY#(actor%)", Act, Host;
    ActorZ: "ActorZ#(actor%)", Act, Host;
    ActorDistance: "ActorDistance#(actor%, other%)", Act, Host;
    ActorUnderWater: "ActorUnderWater%(actor%)", Act, Host;
    ActorIsHuman: "ActorIsHuman%(actor%)", Act, Host;
    PlayerInGame: "PlayerInGame%(actor%)", Act, Host;
    ActorId: "ActorID%(race$, class$)", Act, Host;
    ActorIdFromInstance: "ActorIDFromInstance%(actor%)", Act, Host;
    ActorXpMultiplier: "ActorXPMultiplier%(templateID%)", Act, Host;
    Race: "Race$(actor%)", Act, Host;
    Class: "Class$(actor%)", Act, Host;
    Name: "Name$(actor%)", Act, Host;
    SetName: "SetName(actor%, name$)", Act, Host;
    Tag: "Tag$(actor%)", Act, Host;
    SetTag: "SetTag(actor%, tag$)", Act, Host;
    NextActor: "NextActor%(actor%=0)", Act, Host;
    Spawn: "Spawn%(templateID%, zone$, x#, y#, z#, script$=\"\", deathScript$=\"\", instance%=0)", Act, Host;
    KillActor: "KillActor(actor%, killer%=0)", Act, Host;
    MoveActor: "MoveActor(actor%, x#, y#, z#, moveCamera%=0, collide%=0)", Act, Host;
    RotateActor: "RotateActor(actor%, yaw#)", Act, Host;
    ActorLevel: "ActorLevel%(actor%)", Act, Host;
    ActorXp: "ActorXP%(actor%)", Act, Host;
    SetActorLevel: "SetActorLevel(actor%, level%)", Act, Host;
    GiveXp: "GiveXP(actor%, xp%, noShare%=0)", Act, Host;
    GiveKillXp: "GiveKillXP(actor%, victim%)", Act, Host;
    UpdateXpBar: "UpdateXPBar(actor%, value%)", Act, Host;
    GetRnid: "GetRNID%(actor%)", Act, Host;
    GetRuntimeId: "GetRuntimeID%(actor%)", Act, Host;

    // ----- appearance (app) ---------------------------------------------------------------
    ChangeActor: "ChangeActor(actor%, templateID%)", App, Host;
    ActorGender: "ActorGender%(actor%)", App, Host;
    SetActorGender: "SetActorGender(actor%, gender%)", App, Host;
    ActorBeard: "ActorBeard%(actor%)", App, Host;
    SetActorBeard: "SetActorBeard(actor%, beard%)", App, Host;
    ActorHair: "ActorHair%(actor%)", App, Host;
    SetActorHair: "SetActorHair(actor%, hair%)", App, Host;
    ActorFace: "ActorFace%(actor%)", App, Host;
    SetActorFace: "SetActorFace(actor%, face%)", App, Host;
    ActorClothes: "ActorClothes%(actor%)", App, Host;
    SetActorClothes: "SetActorClothes(actor%, clothes%)", App, Host;
    AnimateActor: "AnimateActor(actor%, anim$, speed#, fixedSpeed%=0)", App, Host;

    // ----- AI, pets, mounts (ai) ----------------------------------------------------------
    ActorAggressiveness: "ActorAggressiveness%(actor%)", Ai, Host;
    ActorAiState: "ActorAIState%(actor%)", Ai, Host;
    SetActorAiState: "SetActorAIState(actor%, state%)", Ai, Host;
    ActorTarget: "ActorTarget%(actor%)", Ai, Host;
    SetActorTarget: "SetActorTarget(actor%, target%=0)", Ai, Host;
    SetActorDestination: "SetActorDestination(actor%, x#, z#)", Ai, Host;
    ActorDestinationX: "ActorDestinationX#(actor%)", Ai, Host;
    ActorDestinationZ: "ActorDestinationZ#(actor%)", Ai, Host;
    ActorCallForHelp: "ActorCallForHelp(actor%)", Ai, Host;
    SetLeader: "SetLeader(actor%, leader%)", Ai, Host;
    ActorLeader: "ActorLeader%(actor%)", Ai, Host;
    ActorPets: "ActorPets%(actor%)", Ai, Host;
    ActorMount: "ActorMount%(actor%)", Ai, Host;
    ActorRider: "ActorRider%(actor%)", Ai, Host;
    FireProjectile: "FireProjectile(actor%, target%, projectile$)", Ai, Host;

    // ----- attributes, resistances, reputation (attr) -------------------------------------
    Attribute: "Attribute%(actor%, attribute$)", Attr, Host;
    MaxAttribute: "MaxAttribute%(actor%, attribute$)", Attr, Host;
    SetAttribute: "SetAttribute(actor%, attribute$, value%)", Attr, Host;
    ChangeAttribute: "ChangeAttribute(actor%, attribute$, change%)", Attr, Host;
    SetMaxAttribute: "SetMaxAttribute(actor%, attribute$, value%)", Attr, Host;
    ChangeMaxAttribute: "ChangeMaxAttribute(actor%, attribute$, change%)", Attr, Host;
    Resistance: "Resistance%(actor%, damageType$)", Attr, Host;
    SetResistance: "SetResistance(actor%, damageType$, value%)", Attr, Host;
    Reputation: "Reputation%(actor%)", Attr, Host;
    SetReputation: "SetReputation(actor%, reputation%)", Attr, Host;

    // ----- inventory and items (inv) ------------------------------------------------------
    ArmourLevel: "ArmourLevel%(actor%)", Inv, Items;
    ActorWeapon: "ActorWeapon%(actor%)", Inv, Items;
    ActorShield: "ActorShield%(actor%)", Inv, Items;
    ActorHat: "ActorHat%(actor%)", Inv, Items;
    ActorChest: "ActorChest%(actor%)", Inv, Items;
    ActorHands: "ActorHands%(actor%)", Inv, Items;
    ActorBelt: "ActorBelt%(actor%)", Inv, Items;
    ActorLegs: "ActorLegs%(actor%)", Inv, Items;
    ActorFeet: "ActorFeet%(actor%)", Inv, Items;
    ActorRing: "ActorRing%(actor%, n%)", Inv, Items;
    ActorAmulet: "ActorAmulet%(actor%, n%)", Inv, Items;
    ActorBackpack: "ActorBackpack%(actor%, slot%)", Inv, Items;
    BackpackCount: "BackpackCount%(actor%, slot%)", Inv, Items;
    GiveItem: "GiveItem(actor%, item$, amount%=1)", Inv, Items;
    HasItem: "HasItem%(actor%, item$, amount%=1)", Inv, Items;
    ItemName: "ItemName$(item%)", Inv, Items;
    ItemId: "ItemID%(item%)", Inv, Items;
    ItemValue: "ItemValue%(item%)", Inv, Items;
    ItemMass: "ItemMass%(item%)", Inv, Items;
    ItemRange: "ItemRange#(item%)", Inv, Items;
    ItemDamage: "ItemDamage%(item%)", Inv, Items;
    ItemDamageType: "ItemDamageType$(item%)", Inv, Items;
    ItemWeaponType: "ItemWeaponType%(item%)", Inv, Items;
    ItemArmor: "ItemArmor%(item%)", Inv, Items;
    ItemMiscData: "ItemMiscData$(item%)", Inv, Items;
    ItemHealth: "ItemHealth%(item%)", Inv, Items;
    SetItemHealth: "SetItemHealth(item%, health%)", Inv, Items;
    ItemAttribute: "ItemAttribute%(item%, attribute$)", Inv, Items;
    SpawnItem: "SpawnItem(item$, amount%, zone$, x#, y#, z#, instance%=0)", Inv, Items;
    OpenTrading: "OpenTrading(actor%, other%)", Inv, Host;

    // ----- money (gold) -------------------------------------------------------------------
    Gold: "Gold%(actor%)", Gold, Items;
    Money: "Money%(actor%)", Gold, Items;
    ChangeGold: "ChangeGold(actor%, change%)", Gold, Items;
    ChangeMoney: "ChangeMoney(actor%, change%)", Gold, Items;
    SetGold: "SetGold(actor%, amount%)", Gold, Items;
    SetMoney: "SetMoney(actor%, amount%)", Gold, Items;

    // ----- abilities (spl) ----------------------------------------------------------------
    AddAbility: "AddAbility(actor%, ability$, level%=1)", Spl, Spells;
    DeleteAbility: "DeleteAbility(actor%, ability$)", Spl, Spells;
    AbilityKnown: "AbilityKnown%(actor%, ability$)", Spl, Spells;
    AbilityMemorised: "AbilityMemorised%(actor%, ability$)", Spl, Spells;
    AbilityLevel: "AbilityLevel%(actor%, ability$)", Spl, Spells;
    SetAbilityLevel: "SetAbilityLevel(actor%, ability$, level%)", Spl, Spells;

    // ----- effects, FX and sound (eff) ----------------------------------------------------
    AddActorEffect: "AddActorEffect(actor%, effect$, attribute$, value%, seconds%, iconTexID%)", Eff, Spells;
    DeleteActorEffect: "DeleteActorEffect(actor%, effect$)", Eff, Spells;
    ActorHasEffect: "ActorHasEffect%(actor%, effect$)", Eff, Spells;
    CreateFloatingNumber: "CreateFloatingNumber(actor%, amount%, r%=255, g%=255, b%=255)", Eff, Spells;
    CreateEmitter: "CreateEmitter(actor%, emitter$, texID%, ms%, offsetX#=0, offsetY#=0, offsetZ#=0, showTo%=0)", Eff, Dialogs;
    ScreenFlash: "ScreenFlash(actor%, r%, g%, b%, alpha%, ms%, texID%=0)", Eff, Dialogs;
    PlayMusic: "PlayMusic(actor%, musicID%, all%=0)", Eff, Dialogs;
    PlaySound: "PlaySound(actor%, soundID%, all%=0)", Eff, Dialogs;
    PlaySpeech: "PlaySpeech(actor%, speechID%=0)", Eff, Dialogs;

    // ----- quests (qst) -------------------------------------------------------------------
    NewQuest: "NewQuest(actor%, quest$, status$, r%=255, g%=255, b%=255)", Qst, Dialogs;
    UpdateQuest: "UpdateQuest(actor%, quest$, status$, r%=255, g%=255, b%=255)", Qst, Dialogs;
    CompleteQuest: "CompleteQuest(actor%, quest$)", Qst, Dialogs;
    DeleteQuest: "DeleteQuest(actor%, quest$)", Qst, Dialogs;
    QuestStatus: "QuestStatus$(actor%, quest$)", Qst, Dialogs;
    QuestComplete: "QuestComplete%(actor%, quest$)", Qst, Dialogs;

    // ----- dialogs: the raw senders behind RC_Core (dlg) ----------------------------------
    RceSendOpenDialog: "RCE_SendOpenDialog(host%, rnid%, contextRuntimeID%, backgroundTexID%, title$)", Dlg, Dialogs;
    RceSendCloseDialog: "RCE_SendCloseDialog(host%, rnid%, dialog%)", Dlg, Dialogs;
    RceSendDialogOutput: "RCE_SendDialogOutput(host%, rnid%, r%, g%, b%, dialog%, msg$)", Dlg, Dialogs;
    RceSendDialogInput: "RCE_SendDialogInput(host%, rnid%, dialog%, options$, delim$=\",\")", Dlg, Dialogs;
    RceSendInput: "RCE_SendInput(host%, rnid%, type%, title$, prompt$)", Dlg, Dialogs;
    RceSendCreateProgressBar: "RCE_SendCreateProgressBar(host%, rnid%, r%, g%, b%, x#, y#, w#, h#, maximum%, value%, label$)", Dlg, Dialogs;
    RceSendDeleteProgressBar: "RCE_SendDeleteProgressBar(host%, rnid%, bar%)", Dlg, Dialogs;
    RceSendUpdateProgressBar: "RCE_SendUpdateProgressBar(host%, rnid%, bar%, value%)", Dlg, Dialogs;

    // ----- chat and output (chat) ---------------------------------------------------------
    Output: "Output(actor%, msg$, r%=255, g%=255, b%=255)", Chat, Host;
    BubbleOutput: "BubbleOutput(actor%, msg$, r%=255, g%=255, b%=255)", Chat, Dialogs;

    // ----- world, zones, warp (wld) -------------------------------------------------------
    ActorZone: "ActorZone$(actor%)", Wld, Host;
    ActorZoneInstance: "ActorZoneInstance%(actor%)", Wld, Host;
    ActorOutdoors: "ActorOutdoors%(actor%)", Wld, Host;
    ActorInTrigger: "ActorInTrigger%(actor%, trigger%)", Wld, Host;
    FirstActorInZone: "FirstActorInZone%(zone$, instance%=0)", Wld, Host;
    NextActorInZone: "NextActorInZone%(actor%)", Wld, Host;
    ActorsInZone: "ActorsInZone%(zone$, instance%=0)", Wld, Host;
    PlayersInZone: "PlayersInZone%(zone$, instance%=0)", Wld, Host;
    Warp: "Warp(actor%, zone$, portal$, instance%=0)", Wld, Host;
    ZoneInstanceExists: "ZoneInstanceExists%(zone$, instance%)", Wld, Host;
    CreateZoneInstance: "CreateZoneInstance%(zone$, instance%=0)", Wld, Host;
    RemoveZoneInstance: "RemoveZoneInstance(zone$, instance%)", Wld, Host;
    ZoneOutdoors: "ZoneOutdoors%(zone$)", Wld, Host;
    SetOwner: "SetOwner(actor%, zone$, sceneryID%, instance%=0)", Wld, Host;
    SceneryOwner: "SceneryOwner%(zone$, sceneryID%, instance%=0)", Wld, Host;

    // ----- time: the game clock and the server's clock (time) -----------------------------
    Year: "Year%()", Time, Spells;
    Day: "Day%()", Time, Spells;
    Hour: "Hour%()", Time, Spells;
    Minute: "Minute%()", Time, Spells;
    Season: "Season$()", Time, Spells;
    Month: "Month$()", Time, Spells;
    CurrentDate: "CurrentDate$()", Time, Host;
    RealDate: "RealDate$()", Time, Host;
    CurrentTime: "CurrentTime$()", Time, Host;
    RealTime: "RealTime$()", Time, Host;
    MilliSecs: "MilliSecs%()", Time, Host;

    // ----- party and groups (pty) ---------------------------------------------------------
    CountPartyMembers: "CountPartyMembers%(actor%)", Pty, Host;
    PartyMember: "PartyMember%(actor%, n%)", Pty, Host;
    ActorGroup: "ActorGroup%(actor%)", Pty, Host;
    SetActorGroup: "SetActorGroup(actor%, group%)", Pty, Host;
    ActorGuild: "ActorGuild%(actor%)", Pty, Host;
    SetActorGuild: "SetActorGuild(actor%, group%)", Pty, Host;

    // ----- factions (fac) -----------------------------------------------------------------
    FactionRating: "FactionRating%(actor%, faction$)", Fac, Host;
    SetFactionRating: "SetFactionRating(actor%, faction$, rating%)", Fac, Host;
    ChangeFactionRating: "ChangeFactionRating(actor%, faction$, change%)", Fac, Host;
    HomeFaction: "HomeFaction$(actor%)", Fac, Host;
    SetHomeFaction: "SetHomeFaction(actor%, faction$)", Fac, Host;
    GetFaction: "GetFaction$(n%)", Fac, Host;
    DefaultFactionRating: "DefaultFactionRating%(faction1$, faction2$)", Fac, Host;

    // ----- globals (glob) -----------------------------------------------------------------
    ActorGlobal: "ActorGlobal$(actor%, slot%)", Glob, Host;
    SetActorGlobal: "SetActorGlobal(actor%, slot%, value$)", Glob, Host;
    SuperGlobal: "SuperGlobal$(slot%)", Glob, Host;
    SetSuperGlobal: "SetSuperGlobal(slot%, value$)", Glob, Host;

    // ----- accounts (acct) ----------------------------------------------------------------
    PlayerAccountName: "PlayerAccountName$(actor%)", Acct, Host;
    PlayerAccountEmail: "PlayerAccountEmail$(actor%)", Acct, Host;
    PlayerIsGm: "PlayerIsGM%(actor%)", Acct, Host;
    PlayerIsDm: "PlayerIsDM%(actor%)", Acct, Host;
    PlayerIsBanned: "PlayerIsBanned%(actor%)", Acct, Host;
    BanPlayer: "BanPlayer(actor%)", Acct, Host;
    KickPlayer: "KickPlayer(actor%)", Acct, Host;
    SqlAccountId: "SQLAccountID%(actor%)", Acct, Pure;
    SqlActorId: "SQLActorID%(actor%)", Acct, Pure;

    // ----- MySQL: off in V0, so stubs (io) ------------------------------------------------
    MySqlQuery: "MySQLQuery$(query$)", Io, Pure;
    MySqlNumRows: "MySQLNumRows%(result%)", Io, Pure;
    MySqlFetchRow: "MySQLFetchRow$(result%)", Io, Pure;
    MySqlGetVar: "MySQLGetVar$(row%, field$)", Io, Pure;
    MySqlFreeQuery: "MySQLFreeQuery(result%)", Io, Pure;
    MySqlFreeRow: "MySQLFreeRow(row%)", Io, Pure;

    // ----- files and streams (io) ---------------------------------------------------------
    ReadFile: "ReadFile%(name$)", Io, Host;
    WriteFile: "WriteFile%(name$)", Io, Host;
    OpenFile: "OpenFile%(name$)", Io, Host;
    AppendFile: "AppendFile%(name$)", Io, Host;
    DeleteFile: "DeleteFile(name$)", Io, Host;
    CreateDir: "CreateDir%(name$)", Io, Host;
    FileSize: "FileSize%(name$)", Io, Host;
    FileType: "FileType%(name$)", Io, Host;
    CopyFile: "CopyFile(from$, to$)", Io, Host;
    CloseDir: "CloseDir(dir%)", Io, Host;
    CurrentDir: "CurrentDir$()", Io, Host;
    CloseFile: "CloseFile(stream%)", Io, Host;
    Eof: "Eof%(stream%)", Io, Host;
    FilePos: "FilePos%(stream%)", Io, Host;
    SeekFile: "SeekFile%(stream%, pos%)", Io, Host;
    ReadAvail: "ReadAvail%(stream%)", Io, Host;
    ReadByte: "ReadByte%(stream%)", Io, Host;
    ReadShort: "ReadShort%(stream%)", Io, Host;
    ReadInt: "ReadInt%(stream%)", Io, Host;
    ReadFloat: "ReadFloat#(stream%)", Io, Host;
    ReadString: "ReadString$(stream%)", Io, Host;
    ReadLine: "ReadLine$(stream%)", Io, Host;
    ReadBytes: "ReadBytes%(bank%, stream%, offset%, count%)", Io, Host;
    WriteByte: "WriteByte(stream%, value%)", Io, Host;
    WriteShort: "WriteShort(stream%, value%)", Io, Host;
    WriteInt: "WriteInt(stream%, value%)", Io, Host;
    WriteFloat: "WriteFloat(stream%, value#)", Io, Host;
    WriteString: "WriteString(stream%, string$)", Io, Host;
    WriteLine: "WriteLine(stream%, string$)", Io, Host;
    WriteBytes: "WriteBytes%(bank%, stream%, offset%, count%)", Io, Host;

    // ----- strings (str; pure) ------------------------------------------------------------
    Len: "Len%(string$)", Str, Pure;
    Left: "Left$(string$, count%)", Str, Pure;
    Right: "Right$(string$, count%)", Str, Pure;
    Mid: "Mid$(string$, start%, count%=65535)", Str, Pure;
    Instr: "Instr%(string$, find$, from%=1)", Str, Pure;
    Replace: "Replace$(string$, from$, to$)", Str, Pure;
    Upper: "Upper$(string$)", Str, Pure;
    Lower: "Lower$(string$)", Str, Pure;
    Trim: "Trim$(string$)", Str, Pure;
    FullTrim: "FullTrim$(string$)", Str, Pure;
    LSet: "LSet$(string$, size%)", Str, Pure;
    RSet: "RSet$(string$, size%)", Str, Pure;
    Chr: "Chr$(ascii%)", Str, Pure;
    Asc: "Asc%(string$)", Str, Pure;
    Hex: "Hex$(value%)", Str, Pure;
    Bin: "Bin$(value%)", Str, Pure;
    String: "String$(string$, count%)", Str, Pure;
    Split: "Split$(string$, n%, delim$=\",\")", Str, Pure;
    Dequote: "Dequote$(string$)", Str, Pure;
    Float: "Float#(value$)", Str, Pure;

    // ----- math (math; pure but for Rand and Rnd) -----------------------------------------
    Int: "Int%(value%)", Math, Pure;
    Abs: "Abs%(value%)", Math, Pure;
    Sgn: "Sgn%(value%)", Math, Pure;
    Sign: "Sign%(value%)", Math, Pure;
    Sqr: "Sqr#(x#)", Math, Pure;
    Sqrt: "Sqrt#(x#)", Math, Pure;
    Exp: "Exp#(x#)", Math, Pure;
    Log: "Log#(x#)", Math, Pure;
    Log10: "Log10#(x#)", Math, Pure;
    Floor: "Floor#(x#)", Math, Pure;
    Ceil: "Ceil#(x#)", Math, Pure;
    Sin: "Sin#(degrees#)", Math, Pure;
    Cos: "Cos#(degrees#)", Math, Pure;
    Tan: "Tan#(degrees#)", Math, Pure;
    ASin: "ASin#(x#)", Math, Pure;
    ACos: "ACos#(x#)", Math, Pure;
    ATan: "ATan#(x#)", Math, Pure;
    ATan2: "ATan2#(y#, x#)", Math, Pure;
    ATanII: "ATanII#(y#, x#)", Math, Pure;
    Mod: "Mod#(x#, y#)", Math, Pure;
    Rand: "Rand%(from%, to%)", Math, Host;
    Rnd: "Rnd#(from#, to#)", Math, Host;

    // ----- environment (misc; stubs) ------------------------------------------------------
    GetEnv: "GetEnv$(name$)", Misc, Host;
    SetEnv: "SetEnv(name$, value$)", Misc, Host;

    // ----- memory banks (misc; vm) --------------------------------------------------------
    CreateBank: "CreateBank%(size%=0)", Misc, Vm;
    FreeBank: "FreeBank(bank%)", Misc, Vm;
    BankSize: "BankSize%(bank%)", Misc, Vm;
    ResizeBank: "ResizeBank(bank%, size%)", Misc, Vm;
    CopyBank: "CopyBank(srcBank%, srcOffset%, destBank%, destOffset%, count%)", Misc, Vm;
    PeekByte: "PeekByte%(bank%, offset%)", Misc, Vm;
    PeekShort: "PeekShort%(bank%, offset%)", Misc, Vm;
    PeekInt: "PeekInt%(bank%, offset%)", Misc, Vm;
    PeekFloat: "PeekFloat#(bank%, offset%)", Misc, Vm;
    PokeByte: "PokeByte(bank%, offset%, value%)", Misc, Vm;
    PokeShort: "PokeShort(bank%, offset%, value%)", Misc, Vm;
    PokeInt: "PokeInt(bank%, offset%, value%)", Misc, Vm;
    PokeFloat: "PokeFloat(bank%, offset%, value#)", Misc, Vm;

    // ----- network (net) ------------------------------------------------------------------
    DottedIp: "DottedIP$(ip%)", Net, Pure;
    CreateUdpStream: "CreateUDPStream%(port%=0)", Net, Refused;
    CloseUdpStream: "CloseUDPStream(stream%)", Net, Refused;
    SendUdpMsg: "SendUDPMsg(stream%, ip%, port%)", Net, Refused;
    RecvUdpMsg: "RecvUDPMsg$(stream%)", Net, Refused;
    UdpStreamIp: "UDPStreamIP%(stream%)", Net, Refused;
    UdpStreamPort: "UDPStreamPort%(stream%)", Net, Refused;
    UdpMsgIp: "UDPMsgIP%(stream%)", Net, Refused;
    UdpMsgPort: "UDPMsgPort%(stream%)", Net, Refused;
    UdpTimeouts: "UDPTimeouts(ms%)", Net, Refused;
    CountHostIps: "CountHostIPs%(host%)", Net, Refused;
    HostIp: "HostIP%(index%)", Net, Refused;

    // ----- refused: outside the sandbox (misc) --------------------------------------------
    CallDll: "CallDLL%(dll$, func$, inBank%, outBank%)", Misc, Refused;
}
