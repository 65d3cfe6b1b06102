//! Chat-derived actions that reach the zone (reference §4.7). `/setattribute`,
//! `/setattributemax` (stats.rs), `/pet` (pets.rs), `/invite`, `/accept`, `/leave`
//! (party.rs) and `/warp` (setarea.rs) arrive as their own `PlayerAction`s; this module
//! handles plain zone chat and the `Command` words the zone owns:
//!
//! * `ME text` → `252 "* Name text"` to the instance;
//! * `TRADE [name]` → invite a player of the instance to trade, or accept
//!   (`items::trade::command`);
//! * `P text` → `251 "<PARTY> <Name> text"` to the party members **in this instance**;
//! * DM only: `XP n` (`GiveXP`), `GOLD n` (through `items::money::change_gold`: floored
//!   at 0 and capped, the client told the change applied), `GIVE itemName` (one of the
//!   item, placed by `items::bag::give`; a red line when no item has that name or there is
//!   no room), `WEATHER name` (lasts `Rand(2500, 10000)` visits, see weather.rs),
//!   `SCRIPT name,func` (runs a script with the DM as `Actor()`), `ABILITY name[,level]`
//!   (learns the ability, or sets its level when already known; Realm Crafter learned
//!   it a second time);
//! * `TIME`, `DATE`, `SEASON` → the game clock's replies (clock.rs);
//! * anything else → the `In-game Commands` hook, else a red "Unknown command".
//!
//! Cross-zone chat (`YELL`, `PM`, `G`, `GM`, `ALLPLAYERS`, and the cross-zone half of `P`)
//! is the gateway's: it should intercept those words before they reach a zone. If one
//! does reach the zone it falls through to the hook like any unknown word.

use shared::proto::{ChatColour, ChatMessageS2C};

use super::engine::EngineEvent;
use super::events::Rejection;
use super::packets::{self, CHAT_GREEN, CHAT_RED};
use super::state::{ActorId, ZoneState};

/// Longest chat text relayed (bytes).
pub const MAX_CHAT: usize = 255;

fn clip(text: &str) -> &str {
    if text.len() <= MAX_CHAT {
        return text;
    }
    let mut end = MAX_CHAT;
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    text.get(..end).unwrap_or("")
}

/// Zone chat `"<Name> text"` to the players of the instance.
pub(crate) fn chat(st: &mut ZoneState, actor: ActorId, text: &str) {
    let Some(name) = st.get(actor).map(|a| a.name.clone()) else {
        return;
    };
    let text = clip(text);
    let line = ChatMessageS2C {
        colour: ChatColour::Plain,
        text: packets::text(&format!("<{name}> {text}")),
    };
    st.send_packet_zone(&line, None);
}

/// Any other command: the zone's words, else the `In-game Commands` hook.
pub(crate) fn command(st: &mut ZoneState, actor: ActorId, word: &str, params: &str) {
    let Some(a) = st.get(actor) else { return };
    let (player, is_dm, name) = (a.player, a.is_dm, a.name.clone());
    let params = clip(params.trim());
    let dm_only = matches!(
        word,
        "XP" | "GOLD" | "GIVE" | "WEATHER" | "SCRIPT" | "ABILITY"
    );
    if dm_only && !is_dm {
        st.reject(player, Rejection::NotPermitted);
        return;
    }
    match word {
        "TRADE" => super::items::trade::command(st, actor, params),
        "ME" => {
            let line = ChatMessageS2C {
                colour: ChatColour::Magenta,
                text: packets::text(&format!("* {name} {params}")),
            };
            st.send_packet_zone(&line, None);
        }
        "P" => {
            let Some(pid) = st.get(actor).and_then(|a| a.party) else {
                packets::send_chat(st, actor, CHAT_RED, "You are not in a party");
                return;
            };
            let text = format!("<PARTY> <{name}> {params}");
            for m in super::party::local_members(st, pid) {
                packets::send_chat(st, m, CHAT_GREEN, &text);
            }
        }
        "XP" => match params.parse::<u32>() {
            Ok(n) => super::kill::give_xp(st, actor, n, false),
            Err(_) => st.reject(player, Rejection::Invalid),
        },
        "GOLD" => match params.parse::<i64>() {
            Ok(n) => {
                super::items::money::change_gold(st, actor, n);
            }
            Err(_) => st.reject(player, Rejection::Invalid),
        },
        "GIVE" => give(st, actor, params),
        "ABILITY" => ability(st, actor, params),
        "SCRIPT" => {
            // `/script name,func`: a DM runs a script with itself as `Actor()`.
            let mut parts = params.splitn(2, ',');
            let name = parts.next().unwrap_or("").trim();
            let func = parts.next().unwrap_or("Main").trim();
            let func = if func.is_empty() { "Main" } else { func };
            let each = super::script_table::Start::Each;
            if !super::script_table::queue_for(st, each, name, func, Some(actor), None, "") {
                packets::send_chat(st, actor, CHAT_RED, "No such script or function");
            }
        }
        "WEATHER" => {
            let w = super::weather::NAMES
                .iter()
                .position(|n| n.eq_ignore_ascii_case(params))
                .and_then(|i| u8::try_from(i).ok());
            match w {
                Some(w) => {
                    let d = super::weather::roll_duration(st);
                    super::weather::set_weather(st, w, d);
                }
                None => st.reject(player, Rejection::Invalid),
            }
        }
        "TIME" | "DATE" | "SEASON" => {
            super::clock::command(st, actor, word);
        }
        _ => {
            st.announce(EngineEvent::Command {
                actor,
                word: word.to_owned(),
                params: params.to_owned(),
            });
        }
    }
}

/// `GIVE itemName` (DM): one of the named item (case-insensitive), placed by the first-fit
/// rule with its `"G"` offer. Realm Crafter said nothing when no item had the name, and
/// lost the item when the client found no room; here both get a red line and are counted.
fn give(st: &mut ZoneState, actor: ActorId, params: &str) {
    let player = st.get(actor).and_then(|a| a.player);
    let world = st.content.world.clone();
    let Some(template) = world.item_by_name(params) else {
        st.reject(player, Rejection::BadItemRequest);
        packets::send_chat(st, actor, CHAT_RED, &format!("No item named {params}"));
        return;
    };
    let item = super::items::inventory::instance(template, 1);
    if super::items::bag::give(st, actor, item).is_err() {
        st.reject(player, Rejection::BadItemRequest);
        let text = format!("No room for {}", template.name);
        packets::send_chat(st, actor, CHAT_RED, &text);
    }
}

/// `ABILITY name[,level]` (DM): learn an ability (level 1 by default), or set its level
/// when it is already known. A red line for an unknown name or a bad level.
fn ability(st: &mut ZoneState, actor: ActorId, params: &str) {
    let player = st.get(actor).and_then(|a| a.player);
    let (name, level) = match params.rsplit_once(',') {
        Some((n, l)) => (n.trim(), l.trim().parse::<i64>().ok()),
        None => (params.trim(), Some(1)),
    };
    let result = super::spells::spell_id(st, name).and_then(|spell| {
        let level = level.ok_or(super::spells::SpellError::BadLevel(0))?;
        if super::spells::known(st, actor, spell).is_some() {
            super::spells::set_level(st, actor, spell, level)
        } else {
            super::spells::learn(st, actor, spell, level)
        }
    });
    if let Err(e) = result {
        st.reject(player, Rejection::Invalid);
        packets::send_chat(st, actor, CHAT_RED, &e.to_string());
    }
}
