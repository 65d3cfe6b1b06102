//! The chat commands that reach beyond one zone (reference §4.7), sans-IO: [`route`] reads
//! the raw text of a client `P_ChatMessage` and either hands it back for the player's zone
//! node ([`Route::Zone`], the frame is forwarded unchanged) or handles it here and returns
//! the [`Effect`]s for the shell to carry out.
//!
//! The gateway sees every in-game session, so it owns the words whose audience is not one
//! AreaInstance:
//!
//! | word | who | effect |
//! |---|---|---|
//! | `YELL text` | everyone | `253 "<Name> text"` to every online player who does not ignore the sender |
//! | `PM name,text` | everyone | `252 "Sender: text"` to `name`, and `252 "To name: text"` back to the sender |
//! | `G text` | everyone | `251 "<G> <Name> text"` to the players of the sender's team who do not ignore the sender |
//! | `GM text` | DM | `254 "<GM> <Name> text"` to every DM |
//! | `ALLPLAYERS`, `PLAYERS` | everyone | `254` count of the *other* online players, to the sender |
//! | `KICK name` | DM | [`Effect::Kick`] and a `254` confirmation |
//! | `WARPOTHER name,area[,inst]` | DM | [`Effect::WarpPlayer`] and a `254` confirmation |
//! | `IGNORE name`, `UNIGNORE name` | everyone | [`Effect::SetIgnore`] and a `254` confirmation |
//!
//! Every other text (zone chat, `/me`, `/p`, `/warp`, `/xp`, unknown words) is the zone's.
//! A player who is not a DM and uses a DM word gets a red refusal; the command is not
//! forwarded. Decisions (documented in `docs/chat.md`):
//!
//! * text is Latin-1 bytes on the wire and is relayed byte for byte; relayed text is
//!   clipped to [`MAX_TEXT`] bytes (at a UTF-8 char boundary when the text is valid UTF-8);
//! * ignore lists apply to `YELL`, `PM` and `G`, not to `GM` (the DMs' staff channel must
//!   reach every DM);
//! * a PM to a player who ignores the sender is dropped silently, and the sender still gets
//!   the normal echo, so an ignore is not disclosed;
//! * the `"To name: text"` echo of a PM is our addition (Realm Crafter shows nothing);
//! * `KICK`, `IGNORE` and `UNIGNORE` take the whole parameter string as the name (character
//!   names may contain commas); `PM` splits at its first comma only.
//!
//! Nothing here reads a clock, a socket or a file: the [`Roster`] of online players and the
//! list of area names are inputs.

use std::collections::{BTreeMap, HashMap};

use shared::proto::{ChatColour, ChatMessageS2C, ServerPacket};
use shared::wire::RcString;

pub use crate::session::AccountId;
use crate::session::MAX_CHARACTER_NAME_LEN;
pub use shared::internal::SessionId;

/// Longest player text relayed (bytes); longer text is clipped.
pub const MAX_TEXT: usize = 255;

/// Most names one ignore list holds.
pub const MAX_IGNORE: usize = 100;

/// The command words the gateway handles (upper-case); every other word is the zone's.
pub const WORDS: &[&str] = &[
    "YELL",
    "PM",
    "G",
    "GM",
    "ALLPLAYERS",
    "PLAYERS",
    "KICK",
    "WARPOTHER",
    "IGNORE",
    "UNIGNORE",
];

/// One in-game session as chat sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OnlinePlayer {
    /// The session.
    pub session: SessionId,
    /// The account the character belongs to.
    pub account: AccountId,
    /// The character's name (Latin-1 mapped: one char per byte, as the account book keeps it).
    pub name: String,
    /// The character's `TeamID` (`/g` goes to the same team).
    pub team: i32,
    /// Whether the account is a dungeon master.
    pub is_dm: bool,
    /// The names this account ignores (compared case-insensitively).
    pub ignore: Vec<String>,
}

impl OnlinePlayer {
    /// Whether this player ignores `name` (ASCII case-insensitive).
    pub fn ignores(&self, name: &str) -> bool {
        self.ignore.iter().any(|n| n.eq_ignore_ascii_case(name))
    }
}

/// The online players, as the shell keeps them.
pub trait Roster {
    /// The player of a session.
    fn get(&self, session: SessionId) -> Option<&OnlinePlayer>;
    /// The online player with this character name (ASCII case-insensitive).
    fn by_name(&self, name: &str) -> Option<&OnlinePlayer>;
    /// Calls `f` for every online player, in a stable order.
    fn for_each(&self, f: &mut dyn FnMut(&OnlinePlayer));
    /// How many players are online.
    fn len(&self) -> usize;
    /// Whether nobody is online.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A [`Roster`] in memory: players by session (iterated in session order, so the effects of
/// [`route`] come out in a deterministic order) with a case-folded name index.
#[derive(Debug, Clone, Default)]
pub struct MapRoster {
    players: BTreeMap<SessionId, OnlinePlayer>,
    by_name: HashMap<String, SessionId>,
}

fn name_key(name: &str) -> String {
    name.to_ascii_lowercase()
}

impl MapRoster {
    /// An empty roster.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) the player of `player.session`; returns the one it replaced.
    pub fn insert(&mut self, player: OnlinePlayer) -> Option<OnlinePlayer> {
        let old = self.remove(player.session);
        self.by_name.insert(name_key(&player.name), player.session);
        self.players.insert(player.session, player);
        old
    }

    /// Removes the player of a session.
    pub fn remove(&mut self, session: SessionId) -> Option<OnlinePlayer> {
        let old = self.players.remove(&session)?;
        let key = name_key(&old.name);
        if self.by_name.get(&key) == Some(&session) {
            self.by_name.remove(&key);
        }
        Some(old)
    }

    /// Replaces the ignore list of every online session of `account` (the roster side of
    /// [`Effect::SetIgnore`]; the account book keeps the persistent copy).
    pub fn set_ignore(&mut self, account: AccountId, list: &[String]) {
        for p in self.players.values_mut().filter(|p| p.account == account) {
            p.ignore = list.to_vec();
        }
    }
}

impl Roster for MapRoster {
    fn get(&self, session: SessionId) -> Option<&OnlinePlayer> {
        self.players.get(&session)
    }

    fn by_name(&self, name: &str) -> Option<&OnlinePlayer> {
        let session = self.by_name.get(&name_key(name))?;
        self.players.get(session)
    }

    fn for_each(&self, f: &mut dyn FnMut(&OnlinePlayer)) {
        self.players.values().for_each(f);
    }

    fn len(&self) -> usize {
        self.players.len()
    }
}

/// Something the shell must do for a handled command.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Send a packet to a session.
    Send {
        /// The recipient.
        to: SessionId,
        /// The packet (a `P_ChatMessage`).
        packet: ServerPacket,
    },
    /// Kick a session: send `P_KickedPlayer` and close with code 1
    /// ([`crate::session::close::KICKED`]).
    #[doc(alias = "P_KickedPlayer")]
    Kick {
        /// The kicked session.
        session: SessionId,
        /// The DM's name, for the log.
        by: String,
    },
    /// Warp a player to an AreaInstance (to the area's first named portal, as `WARP` does).
    #[doc(alias = "SetArea")]
    WarpPlayer {
        /// The warped session.
        session: SessionId,
        /// The area, spelt as in the world.
        area: String,
        /// The instance.
        instance: u16,
    },
    /// Replace an account's ignore list (persist it and update the roster, see
    /// [`MapRoster::set_ignore`]).
    SetIgnore {
        /// The account.
        account: AccountId,
        /// The whole new list.
        list: Vec<String>,
    },
}

/// Where a chat text goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Route {
    /// Not the gateway's: forward the raw frame unchanged to the player's zone node.
    Zone,
    /// Handled here; carry out these effects in order (possibly none).
    Handled(Vec<Effect>),
}

/// The command words of this module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Word {
    Yell,
    Pm,
    Guild,
    Gm,
    Players,
    Kick,
    WarpOther,
    Ignore,
    Unignore,
}

impl Word {
    fn parse(word: &str) -> Option<Self> {
        Some(match word {
            "YELL" => Self::Yell,
            "PM" => Self::Pm,
            "G" => Self::Guild,
            "GM" => Self::Gm,
            "ALLPLAYERS" | "PLAYERS" => Self::Players,
            "KICK" => Self::Kick,
            "WARPOTHER" => Self::WarpOther,
            "IGNORE" => Self::Ignore,
            "UNIGNORE" => Self::Unignore,
            _ => return None,
        })
    }

    fn dm_only(self) -> bool {
        matches!(self, Self::Gm | Self::Kick | Self::WarpOther)
    }
}

/// Trims ASCII whitespace only: in the Latin-1 mapping, bytes 0x85 and 0xA0 are chars that
/// `str::trim` would strip, but they are text.
fn trim(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_ascii_whitespace())
}

/// Splits a command into its upper-cased word and its trimmed parameters; `None` for text
/// that is not a command.
pub(crate) fn split_command(text: &str) -> Option<(String, &str)> {
    let cmd = text.strip_prefix(['/', '\\'])?;
    let (word, params) = cmd.split_once(' ').unwrap_or((cmd, ""));
    Some((word.to_ascii_uppercase(), trim(params)))
}

/// Clips player text to [`MAX_TEXT`] bytes: at a char boundary when the text is valid UTF-8
/// (a modern client), else at the byte (Latin-1: every byte is a char).
pub fn clip(text: &[u8]) -> &[u8] {
    if text.len() <= MAX_TEXT {
        return text;
    }
    let mut end = MAX_TEXT;
    if let Ok(s) = std::str::from_utf8(text) {
        while end > 0 && !s.is_char_boundary(end) {
            end -= 1;
        }
    }
    text.get(..end).unwrap_or_default()
}

/// The wire bytes of a Latin-1 mapped string.
fn bytes(s: &str) -> Vec<u8> {
    RcString::from(s).0
}

/// A `P_ChatMessage` to `to` made of the concatenated parts.
fn say(to: SessionId, colour: ChatColour, parts: &[&[u8]]) -> Effect {
    Effect::Send {
        to,
        packet: ServerPacket::ChatMessage(ChatMessageS2C {
            colour,
            text: RcString(parts.concat()),
        }),
    }
}

/// A yellow system line.
fn system(to: SessionId, text: &str) -> Effect {
    say(to, ChatColour::System, &[&bytes(text)])
}

/// A red error line.
fn error(to: SessionId, text: &str) -> Effect {
    say(to, ChatColour::Red, &[&bytes(text)])
}

/// A name typed by a player, clipped for echoing back.
fn echo(name: &str) -> String {
    let b = bytes(name);
    RcString::from(clip(&b)).to_latin1()
}

/// Decides where one client `P_ChatMessage` goes.
///
/// `text` is the raw payload (Latin-1 bytes), `sender` the session it came on, `roster` the
/// online players and `areas` the world's area names (for `WARPOTHER`). Never panics.
#[doc(alias = "P_ChatMessage")]
pub fn route(sender: SessionId, text: &[u8], roster: &dyn Roster, areas: &[String]) -> Route {
    let text = RcString::from(text).to_latin1();
    let Some((word, params)) = split_command(&text) else {
        return Route::Zone;
    };
    let Some(w) = Word::parse(&word) else {
        return Route::Zone;
    };
    // A session that is not in the world has nobody to talk to; drop the command.
    let Some(me) = roster.get(sender) else {
        return Route::Handled(Vec::new());
    };
    if w.dm_only() && !me.is_dm {
        let msg = format!("You do not have permission to use /{}", echo(&word));
        return Route::Handled(vec![error(sender, &msg)]);
    }
    let effects = match w {
        Word::Yell => yell(me, params, roster),
        Word::Pm => pm(me, params, roster),
        Word::Guild => guild(me, params, roster),
        Word::Gm => gm(me, params, roster),
        Word::Players => players(me, roster),
        Word::Kick => kick(me, params, roster),
        Word::WarpOther => warp_other(me, params, roster, areas),
        Word::Ignore => ignore(me, params, roster),
        Word::Unignore => unignore(me, params),
    };
    Route::Handled(effects)
}

/// `"<Name> "` as bytes.
fn tag(name: &str) -> Vec<u8> {
    let mut t = Vec::with_capacity(name.len() + 3);
    t.push(b'<');
    t.extend_from_slice(&bytes(name));
    t.extend_from_slice(b"> ");
    t
}

fn yell(me: &OnlinePlayer, text: &str, roster: &dyn Roster) -> Vec<Effect> {
    if text.is_empty() {
        return vec![error(me.session, "Usage: /yell text")];
    }
    let head = tag(&me.name);
    let text = bytes(text);
    let text = clip(&text);
    let mut out = Vec::new();
    roster.for_each(&mut |p| {
        if !p.ignores(&me.name) {
            out.push(say(p.session, ChatColour::Red, &[&head, text]));
        }
    });
    out
}

fn pm(me: &OnlinePlayer, params: &str, roster: &dyn Roster) -> Vec<Effect> {
    let Some((name, text)) = params.split_once(',') else {
        return vec![error(me.session, "Usage: /pm name,text")];
    };
    let (name, text) = (trim(name), trim(text));
    if name.is_empty() || text.is_empty() {
        return vec![error(me.session, "Usage: /pm name,text")];
    }
    let Some(target) = roster.by_name(name) else {
        return vec![error(me.session, &format!("{} is not online", echo(name)))];
    };
    let text = bytes(text);
    let text = clip(&text);
    let mut out = Vec::with_capacity(2);
    if !target.ignores(&me.name) {
        let from = bytes(&format!("{}: ", me.name));
        out.push(say(target.session, ChatColour::Magenta, &[&from, text]));
    }
    // Our addition: the sender sees what was sent, ignored or not (an ignore stays private).
    let to = bytes(&format!("To {}: ", target.name));
    out.push(say(me.session, ChatColour::Magenta, &[&to, text]));
    out
}

fn guild(me: &OnlinePlayer, text: &str, roster: &dyn Roster) -> Vec<Effect> {
    if text.is_empty() {
        return vec![error(me.session, "Usage: /g text")];
    }
    let mut head = b"<G> ".to_vec();
    head.extend_from_slice(&tag(&me.name));
    let text = bytes(text);
    let text = clip(&text);
    let mut out = Vec::new();
    roster.for_each(&mut |p| {
        if p.team == me.team && !p.ignores(&me.name) {
            out.push(say(p.session, ChatColour::Green, &[&head, text]));
        }
    });
    out
}

fn gm(me: &OnlinePlayer, text: &str, roster: &dyn Roster) -> Vec<Effect> {
    if text.is_empty() {
        return vec![error(me.session, "Usage: /gm text")];
    }
    let mut head = b"<GM> ".to_vec();
    head.extend_from_slice(&tag(&me.name));
    let text = bytes(text);
    let text = clip(&text);
    let mut out = Vec::new();
    // Ignore lists do not apply: the staff channel reaches every DM.
    roster.for_each(&mut |p| {
        if p.is_dm {
            out.push(say(p.session, ChatColour::System, &[&head, text]));
        }
    });
    out
}

fn players(me: &OnlinePlayer, roster: &dyn Roster) -> Vec<Effect> {
    let mut others = 0usize;
    roster.for_each(&mut |p| {
        if p.session != me.session {
            others += 1;
        }
    });
    let msg = match others {
        0 => "There are no other players online".to_owned(),
        1 => "There is 1 other player online".to_owned(),
        n => format!("There are {n} other players online"),
    };
    vec![system(me.session, &msg)]
}

fn kick(me: &OnlinePlayer, name: &str, roster: &dyn Roster) -> Vec<Effect> {
    if name.is_empty() {
        return vec![error(me.session, "Usage: /kick name")];
    }
    let Some(target) = roster.by_name(name) else {
        return vec![error(me.session, &format!("{} is not online", echo(name)))];
    };
    // The confirmation first, so a DM who kicks themself still sees it before the close.
    vec![
        system(me.session, &format!("{} has been kicked", target.name)),
        Effect::Kick {
            session: target.session,
            by: me.name.clone(),
        },
    ]
}

fn warp_other(
    me: &OnlinePlayer,
    params: &str,
    roster: &dyn Roster,
    areas: &[String],
) -> Vec<Effect> {
    const USAGE: &str = "Usage: /warpother name,area[,instance]";
    let p: Vec<&str> = params.split(',').map(trim).collect();
    let (name, area, instance) = match p.as_slice() {
        [name, area] => (*name, *area, None),
        [name, area, instance] => (*name, *area, Some(*instance)),
        _ => return vec![error(me.session, USAGE)],
    };
    if name.is_empty() || area.is_empty() {
        return vec![error(me.session, USAGE)];
    }
    let instance = match instance.map(str::parse::<u16>) {
        None => 0,
        Some(Ok(i)) => i,
        Some(Err(_)) => {
            let bad = echo(instance.unwrap_or_default());
            return vec![error(
                me.session,
                &format!("{bad} is not a valid instance number (0 to 65535)"),
            )];
        }
    };
    let Some(area) = areas.iter().find(|a| a.eq_ignore_ascii_case(area)) else {
        return vec![error(
            me.session,
            &format!("There is no area called {}", echo(area)),
        )];
    };
    let Some(target) = roster.by_name(name) else {
        return vec![error(me.session, &format!("{} is not online", echo(name)))];
    };
    vec![
        system(
            me.session,
            &format!("Warping {} to {area} (instance {instance})", target.name),
        ),
        Effect::WarpPlayer {
            session: target.session,
            area: area.clone(),
            instance,
        },
    ]
}

/// Whether a typed name could be a character name (1..=32 bytes, no control bytes).
fn plausible_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= MAX_CHARACTER_NAME_LEN
        && name.chars().all(|c| c >= ' ' && c != '\u{7f}')
}

fn ignore(me: &OnlinePlayer, name: &str, roster: &dyn Roster) -> Vec<Effect> {
    if name.is_empty() {
        return vec![error(me.session, "Usage: /ignore name")];
    }
    if !plausible_name(name) {
        return vec![error(
            me.session,
            &format!("{} is not a character name", echo(name)),
        )];
    }
    if name.eq_ignore_ascii_case(&me.name) {
        return vec![error(me.session, "You cannot ignore yourself")];
    }
    if me.ignores(name) {
        return vec![system(
            me.session,
            &format!("You are already ignoring {name}"),
        )];
    }
    if me.ignore.len() >= MAX_IGNORE {
        return vec![error(
            me.session,
            &format!("Your ignore list is full ({MAX_IGNORE} names)"),
        )];
    }
    // The canonical spelling when the player is online, else the name as typed.
    let name = roster
        .by_name(name)
        .map_or_else(|| name.to_owned(), |p| p.name.clone());
    let mut list = me.ignore.clone();
    list.push(name.clone());
    vec![
        Effect::SetIgnore {
            account: me.account,
            list,
        },
        system(me.session, &format!("You are now ignoring {name}")),
    ]
}

fn unignore(me: &OnlinePlayer, name: &str) -> Vec<Effect> {
    if name.is_empty() {
        return vec![error(me.session, "Usage: /unignore name")];
    }
    if !me.ignores(name) {
        return vec![error(
            me.session,
            &format!("You are not ignoring {}", echo(name)),
        )];
    }
    let list: Vec<String> = me
        .ignore
        .iter()
        .filter(|n| !n.eq_ignore_ascii_case(name))
        .cloned()
        .collect();
    vec![
        Effect::SetIgnore {
            account: me.account,
            list,
        },
        system(me.session, &format!("You are no longer ignoring {name}")),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ALICE: SessionId = 1;
    const BOB: SessionId = 2;
    const CAROL: SessionId = 3;
    const DM: SessionId = 4;
    const NOBODY: SessionId = 99;

    fn player(session: SessionId, name: &str, team: i32, is_dm: bool) -> OnlinePlayer {
        OnlinePlayer {
            session,
            account: session * 10,
            name: name.to_owned(),
            team,
            is_dm,
            ignore: Vec::new(),
        }
    }

    fn roster() -> MapRoster {
        let mut r = MapRoster::new();
        r.insert(player(ALICE, "Alice", 1, false));
        r.insert(player(BOB, "Bob", 1, false));
        r.insert(player(CAROL, "Carol", 2, false));
        r.insert(player(DM, "Gandalf", 2, true));
        r
    }

    fn areas() -> Vec<String> {
        vec!["Plains".into(), "Dark Wood".into()]
    }

    fn run(sender: SessionId, text: &str, r: &MapRoster) -> Vec<Effect> {
        match route(sender, text.as_bytes(), r, &areas()) {
            Route::Handled(e) => e,
            Route::Zone => panic!("{text:?} went to the zone"),
        }
    }

    fn msg(to: SessionId, colour: ChatColour, text: &[u8]) -> Effect {
        say(to, colour, &[text])
    }

    fn one_error(effects: &[Effect], to: SessionId) -> String {
        match effects {
            [
                Effect::Send {
                    to: t,
                    packet: ServerPacket::ChatMessage(m),
                },
            ] if *t == to && m.colour == ChatColour::Red => m.text.to_latin1(),
            other => panic!("expected one red line to {to}, got {other:?}"),
        }
    }

    #[test]
    fn zone_words_and_plain_chat_go_to_the_zone() {
        let r = roster();
        for text in [
            "hello",
            "",
            "/",
            "/me waves",
            "/p hi",
            "/warp Plains",
            "/xp 10",
            "/yelling hi",
            "/gold 5",
            " /yell not a command",
        ] {
            assert_eq!(
                route(ALICE, text.as_bytes(), &r, &areas()),
                Route::Zone,
                "{text:?}"
            );
        }
    }

    #[test]
    fn yell_reaches_everyone_but_those_who_ignore_the_sender() {
        let mut r = roster();
        r.set_ignore(30, &["ALICE".into()]);
        let e = run(ALICE, "/yell  Hello all ", &r);
        assert_eq!(
            e,
            vec![
                msg(ALICE, ChatColour::Red, b"<Alice> Hello all"),
                msg(BOB, ChatColour::Red, b"<Alice> Hello all"),
                msg(DM, ChatColour::Red, b"<Alice> Hello all"),
            ]
        );
        // The word is case-insensitive and `\` works as well as `/`.
        assert_eq!(run(ALICE, "\\YeLL Hello all", &r), e);
    }

    #[test]
    fn pm_goes_to_the_target_with_an_echo() {
        let r = roster();
        assert_eq!(
            run(ALICE, "/pm bob, hi, how are you?", &r),
            vec![
                msg(BOB, ChatColour::Magenta, b"Alice: hi, how are you?"),
                msg(ALICE, ChatColour::Magenta, b"To Bob: hi, how are you?"),
            ]
        );
    }

    #[test]
    fn pm_to_someone_offline_is_an_error() {
        let r = roster();
        let e = run(ALICE, "/pm Zed,hello", &r);
        assert_eq!(one_error(&e, ALICE), "Zed is not online");
    }

    #[test]
    fn pm_to_someone_who_ignores_the_sender_is_dropped_silently() {
        let mut r = roster();
        r.set_ignore(20, &["alice".into()]);
        assert_eq!(
            run(ALICE, "/pm Bob,hello", &r),
            vec![msg(ALICE, ChatColour::Magenta, b"To Bob: hello")]
        );
    }

    #[test]
    fn pm_bad_parameters() {
        let r = roster();
        for text in [
            "/pm",
            "/pm Bob",
            "/pm Bob hello",
            "/pm ,hello",
            "/pm Bob,",
            "/pm Bob,  ",
        ] {
            let e = run(ALICE, text, &r);
            assert_eq!(one_error(&e, ALICE), "Usage: /pm name,text", "{text:?}");
        }
    }

    #[test]
    fn guild_chat_reaches_the_team() {
        let mut r = roster();
        assert_eq!(
            run(ALICE, "/g rally", &r),
            vec![
                msg(ALICE, ChatColour::Green, b"<G> <Alice> rally"),
                msg(BOB, ChatColour::Green, b"<G> <Alice> rally"),
            ]
        );
        r.set_ignore(20, &["Alice".into()]);
        assert_eq!(
            run(ALICE, "/G rally", &r),
            vec![msg(ALICE, ChatColour::Green, b"<G> <Alice> rally")]
        );
    }

    #[test]
    fn gm_reaches_every_dm_and_ignores_ignore_lists() {
        let mut r = roster();
        let mut dm2 = player(5, "Merlin", 0, true);
        dm2.ignore = vec!["gandalf".into()];
        r.insert(dm2);
        assert_eq!(
            run(DM, "/gm server restart at noon", &r),
            vec![
                msg(
                    DM,
                    ChatColour::System,
                    b"<GM> <Gandalf> server restart at noon"
                ),
                msg(
                    5,
                    ChatColour::System,
                    b"<GM> <Gandalf> server restart at noon"
                ),
            ]
        );
    }

    #[test]
    fn dm_words_are_refused_to_players_and_not_forwarded() {
        let r = roster();
        for (text, word) in [
            ("/gm hi", "GM"),
            ("/kick Bob", "KICK"),
            ("/WarpOther Bob,Plains", "WARPOTHER"),
        ] {
            let e = run(ALICE, text, &r);
            assert_eq!(
                one_error(&e, ALICE),
                format!("You do not have permission to use /{word}")
            );
        }
    }

    #[test]
    fn players_counts_the_others() {
        let mut r = roster();
        let expected = vec![msg(
            ALICE,
            ChatColour::System,
            b"There are 3 other players online",
        )];
        assert_eq!(run(ALICE, "/allplayers", &r), expected);
        assert_eq!(run(ALICE, "/PLAYERS", &r), expected);
        r.remove(BOB);
        r.remove(CAROL);
        assert_eq!(
            run(ALICE, "/players", &r),
            vec![msg(
                ALICE,
                ChatColour::System,
                b"There is 1 other player online"
            )]
        );
        r.remove(DM);
        assert_eq!(
            run(ALICE, "/players", &r),
            vec![msg(
                ALICE,
                ChatColour::System,
                b"There are no other players online"
            )]
        );
    }

    #[test]
    fn kick() {
        let r = roster();
        assert_eq!(
            run(DM, "/kick  bob ", &r),
            vec![
                msg(DM, ChatColour::System, b"Bob has been kicked"),
                Effect::Kick {
                    session: BOB,
                    by: "Gandalf".into()
                },
            ]
        );
        assert_eq!(one_error(&run(DM, "/kick", &r), DM), "Usage: /kick name");
        assert_eq!(
            one_error(&run(DM, "/kick Zed", &r), DM),
            "Zed is not online"
        );
    }

    #[test]
    fn warp_other() {
        let r = roster();
        assert_eq!(
            run(DM, "/warpother carol, dark wood", &r),
            vec![
                msg(
                    DM,
                    ChatColour::System,
                    b"Warping Carol to Dark Wood (instance 0)"
                ),
                Effect::WarpPlayer {
                    session: CAROL,
                    area: "Dark Wood".into(),
                    instance: 0
                },
            ]
        );
        assert_eq!(
            run(DM, "/warpother Carol,PLAINS, 7", &r),
            vec![
                msg(
                    DM,
                    ChatColour::System,
                    b"Warping Carol to Plains (instance 7)"
                ),
                Effect::WarpPlayer {
                    session: CAROL,
                    area: "Plains".into(),
                    instance: 7
                },
            ]
        );
    }

    #[test]
    fn warp_other_bad_parameters() {
        let r = roster();
        let usage = "Usage: /warpother name,area[,instance]";
        for text in [
            "/warpother",
            "/warpother Carol",
            "/warpother Carol,",
            "/warpother ,Plains",
            "/warpother Carol,Plains,1,2",
        ] {
            assert_eq!(one_error(&run(DM, text, &r), DM), usage, "{text:?}");
        }
        assert_eq!(
            one_error(&run(DM, "/warpother Carol,Mordor", &r), DM),
            "There is no area called Mordor"
        );
        assert_eq!(
            one_error(&run(DM, "/warpother Carol,Plains,x", &r), DM),
            "x is not a valid instance number (0 to 65535)"
        );
        assert_eq!(
            one_error(&run(DM, "/warpother Carol,Plains,70000", &r), DM),
            "70000 is not a valid instance number (0 to 65535)"
        );
        assert_eq!(
            one_error(&run(DM, "/warpother Carol,Plains,-1", &r), DM),
            "-1 is not a valid instance number (0 to 65535)"
        );
        assert_eq!(
            one_error(&run(DM, "/warpother Zed,Plains", &r), DM),
            "Zed is not online"
        );
    }

    #[test]
    fn ignore_and_unignore() {
        let mut r = roster();
        assert_eq!(
            run(ALICE, "/ignore bob", &r),
            vec![
                Effect::SetIgnore {
                    account: 10,
                    list: vec!["Bob".into()]
                },
                msg(ALICE, ChatColour::System, b"You are now ignoring Bob"),
            ]
        );
        // An offline name is kept as typed.
        assert_eq!(
            run(ALICE, "/ignore zed", &r),
            vec![
                Effect::SetIgnore {
                    account: 10,
                    list: vec!["zed".into()]
                },
                msg(ALICE, ChatColour::System, b"You are now ignoring zed"),
            ]
        );
        r.set_ignore(10, &["Bob".into(), "zed".into()]);
        assert_eq!(
            run(ALICE, "/ignore BOB", &r),
            vec![msg(
                ALICE,
                ChatColour::System,
                b"You are already ignoring BOB"
            )]
        );
        assert_eq!(
            run(ALICE, "/unignore bob", &r),
            vec![
                Effect::SetIgnore {
                    account: 10,
                    list: vec!["zed".into()]
                },
                msg(ALICE, ChatColour::System, b"You are no longer ignoring bob"),
            ]
        );
        assert_eq!(
            one_error(&run(ALICE, "/unignore Carol", &r), ALICE),
            "You are not ignoring Carol"
        );
        assert_eq!(
            one_error(&run(ALICE, "/ignore", &r), ALICE),
            "Usage: /ignore name"
        );
        assert_eq!(
            one_error(&run(ALICE, "/unignore", &r), ALICE),
            "Usage: /unignore name"
        );
        assert_eq!(
            one_error(&run(ALICE, "/ignore alice", &r), ALICE),
            "You cannot ignore yourself"
        );
        let long = "x".repeat(MAX_CHARACTER_NAME_LEN + 1);
        assert_eq!(
            one_error(&run(ALICE, &format!("/ignore {long}"), &r), ALICE),
            format!("{long} is not a character name")
        );
    }

    #[test]
    fn ignore_list_is_bounded() {
        let mut r = roster();
        let full: Vec<String> = (0..MAX_IGNORE).map(|i| format!("n{i}")).collect();
        r.set_ignore(10, &full);
        assert_eq!(
            one_error(&run(ALICE, "/ignore Bob", &r), ALICE),
            "Your ignore list is full (100 names)"
        );
        // Removing still works on a full list.
        let e = run(ALICE, "/unignore N5", &r);
        let Some(Effect::SetIgnore { list, .. }) = e.first() else {
            panic!("{e:?}")
        };
        assert_eq!(list.len(), MAX_IGNORE - 1);
        assert!(!list.contains(&"n5".to_owned()));
    }

    #[test]
    fn empty_text_is_a_usage_error() {
        let r = roster();
        for (sender, text, usage) in [
            (ALICE, "/yell", "Usage: /yell text"),
            (ALICE, "/yell    ", "Usage: /yell text"),
            (ALICE, "/g", "Usage: /g text"),
            (DM, "/gm ", "Usage: /gm text"),
        ] {
            assert_eq!(one_error(&run(sender, text, &r), sender), usage);
        }
    }

    #[test]
    fn latin1_bytes_are_relayed_unchanged() {
        let mut r = roster();
        r.insert(player(6, "J\u{f6}rg", 1, false)); // "Jörg", Latin-1 0xF6 on the wire
        // "/pm JöRG,Grüße \xA0" in Latin-1; the trailing NBSP (0xA0) is text, not space.
        let text = b"/pm J\xf6RG,Gr\xfc\xdfe \xa0";
        let Route::Handled(e) = route(ALICE, text, &r, &areas()) else {
            panic!()
        };
        assert_eq!(
            e,
            vec![
                msg(6, ChatColour::Magenta, b"Alice: Gr\xfc\xdfe \xa0"),
                msg(ALICE, ChatColour::Magenta, b"To J\xf6rg: Gr\xfc\xdfe \xa0"),
            ]
        );
        // And a Latin-1 sender name goes out as one byte per char.
        let Route::Handled(e) = route(6, b"/yell \xe9t\xe9", &r, &areas()) else {
            panic!()
        };
        assert_eq!(
            e.first(),
            Some(&msg(ALICE, ChatColour::Red, b"<J\xf6rg> \xe9t\xe9"))
        );
    }

    #[test]
    fn long_text_is_clipped() {
        let r = roster();
        let long = "a".repeat(400);
        let e = run(ALICE, &format!("/yell {long}"), &r);
        let mut want = b"<Alice> ".to_vec();
        want.extend_from_slice(&[b'a'; MAX_TEXT]);
        assert_eq!(e.first(), Some(&msg(ALICE, ChatColour::Red, &want)));
    }

    #[test]
    fn clip_keeps_utf8_whole_and_latin1_bytewise() {
        // 254 ASCII bytes then "é" (2 bytes in UTF-8): the char does not fit.
        let mut utf8 = vec![b'a'; MAX_TEXT - 1];
        utf8.extend_from_slice("é and more".as_bytes());
        assert_eq!(clip(&utf8).len(), MAX_TEXT - 1);
        assert!(std::str::from_utf8(clip(&utf8)).is_ok());
        // The same position in Latin-1 text: every byte is a char.
        let mut l1 = vec![b'a'; MAX_TEXT - 1];
        l1.extend_from_slice(b"\xe9\xe9\xe9");
        assert_eq!(clip(&l1).len(), MAX_TEXT);
        assert_eq!(clip(b"short"), b"short");
    }

    #[test]
    fn unknown_sender_is_dropped() {
        let r = roster();
        assert_eq!(
            route(NOBODY, b"/yell hi", &r, &areas()),
            Route::Handled(Vec::new())
        );
        assert_eq!(route(NOBODY, b"hi", &r, &areas()), Route::Zone);
    }

    #[test]
    fn roster_index_follows_inserts_and_removes() {
        let mut r = roster();
        assert_eq!(r.by_name("BOB").map(|p| p.session), Some(BOB));
        // Same session, new name: the old name no longer resolves.
        r.insert(player(BOB, "Robert", 1, false));
        assert!(r.by_name("bob").is_none());
        assert_eq!(r.by_name("robert").map(|p| p.session), Some(BOB));
        assert_eq!(r.len(), 4);
        assert!(r.remove(BOB).is_some());
        assert!(r.by_name("robert").is_none());
        assert!(r.remove(BOB).is_none());
        assert!(!r.is_empty());
    }

    proptest! {
        #[test]
        fn route_never_panics_on_arbitrary_bytes(
            sender in 0u64..6,
            text in proptest::collection::vec(any::<u8>(), 0..600),
        ) {
            let _ = route(sender, &text, &roster(), &areas());
        }

        #[test]
        fn route_never_panics_on_arbitrary_commands(
            sender in 0u64..6,
            prefix in prop::sample::select(vec!["/", "\\"]),
            word in prop::sample::select(WORDS.to_vec()),
            params in proptest::collection::vec(
                prop_oneof![Just(b','), Just(b' '), Just(b'1'), Just(b'b'), any::<u8>()],
                0..400,
            ),
        ) {
            let mut text = format!("{prefix}{word} ").into_bytes();
            text.extend_from_slice(&params);
            let mut r = roster();
            r.insert(player(5, "Merlin", 1, true));
            if let Route::Handled(effects) = route(sender, &text, &r, &areas()) {
                for e in effects {
                    if let Effect::Send { packet: ServerPacket::ChatMessage(m), .. } = e {
                        // Names are at most 32 bytes; the text at most MAX_TEXT.
                        prop_assert!(m.text.len() <= MAX_TEXT + 64);
                    }
                }
            }
        }
    }
}
