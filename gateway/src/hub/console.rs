//! The hub's side of the operator's console (`crate::console`): live map questions to the
//! zones, the players online, every chat line kept for moderation, and mutes applied.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use shared::internal::{InstanceKey, MapViewDto, Msg, SessionId};
use shared::proto::{ChatColour, ChatMessageS2C, ServerPacket};
use tokio::sync::oneshot;

use super::Hub;
use crate::console::ChatLine;
use crate::session::AccountId;

/// How long a live map question waits for its zone before it is forgotten.
const MAP_QUERY_TTL: Duration = Duration::from_secs(5);
/// Most live map questions in flight.
const MAX_MAP_QUERIES: usize = 256;
/// How often timed bans are checked for their end.
const BAN_SWEEP: Duration = Duration::from_secs(5);

/// A question of the console to the hub.
#[derive(Debug)]
pub enum ConsoleQuery {
    /// What an AreaInstance holds now (`None`: nobody runs it).
    Map {
        /// Which.
        key: InstanceKey,
        /// The answer.
        reply: oneshot::Sender<Option<MapViewDto>>,
    },
    /// The players in the world.
    Online {
        /// The answer.
        reply: oneshot::Sender<Vec<OnlineRow>>,
    },
}

/// One player in the world.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OnlineRow {
    /// Character.
    pub name: String,
    /// Its account.
    pub account: AccountId,
    /// Where.
    pub key: InstanceKey,
    /// Its zone node.
    pub node: Option<String>,
}

/// Live map questions in flight.
#[derive(Debug, Default)]
pub(super) struct Maps {
    pending: HashMap<u64, (Instant, oneshot::Sender<Option<MapViewDto>>)>,
    next: u64,
    /// When timed bans were last checked.
    last_ban_sweep: Option<Instant>,
}

impl Hub {
    pub(super) fn console_query(&mut self, q: ConsoleQuery) {
        match q {
            ConsoleQuery::Map { key, reply } => self.map_query(key, reply),
            ConsoleQuery::Online { reply } => {
                let rows = self
                    .control
                    .players()
                    .map(|(_, p, key, node, _)| OnlineRow {
                        name: p.name.clone(),
                        account: p.account,
                        key: key.clone(),
                        node: node.map(str::to_owned),
                    })
                    .collect();
                let _ = reply.send(rows);
            }
        }
    }

    fn map_query(&mut self, key: InstanceKey, reply: oneshot::Sender<Option<MapViewDto>>) {
        let now = Instant::now();
        self.maps
            .pending
            .retain(|_, (at, r)| now.duration_since(*at) < MAP_QUERY_TTL && !r.is_closed());
        let node = self
            .control
            .directory()
            .placement(&key)
            .filter(|p| p.ready)
            .map(|p| p.node.clone());
        let Some(node) = node else {
            let _ = reply.send(None);
            return;
        };
        if self.maps.pending.len() >= MAX_MAP_QUERIES {
            // The console's caller times out; the zones are not asked more.
            return;
        }
        self.maps.next = self.maps.next.wrapping_add(1);
        let qid = self.maps.next;
        if self.send_node(&node, Msg::MapQuery { qid, key }) {
            self.maps.pending.insert(qid, (now, reply));
        } else {
            let _ = reply.send(None);
        }
    }

    /// Timed bans that ended are lifted (checked every 5 s).
    pub(super) fn lift_expired_bans(&mut self) {
        let now = Instant::now();
        if self
            .maps
            .last_ban_sweep
            .is_some_and(|t| now.duration_since(t) < BAN_SWEEP)
        {
            return;
        }
        self.maps.last_ban_sweep = Some(now);
        let unix = crate::console::unix_ms();
        let ops = {
            let mut acc = self.shared.accounts();
            let ended = acc.book.expired_bans(unix);
            for &id in &ended {
                acc.book.set_ban(id, false, 0, "");
                tracing::info!(account = id, "timed ban ended");
            }
            acc.book.take_persist()
        };
        if !ops.is_empty()
            && let Err(e) = self.shared.writer.submit(ops)
        {
            tracing::error!(error = %e, "store writer unavailable");
        }
    }

    /// A character of `account` entered the world: its last login.
    pub(super) fn entered_at(&mut self, account: AccountId) {
        let ops = {
            let mut acc = self.shared.accounts();
            acc.book.set_last_login(account, crate::console::unix_ms());
            acc.book.take_persist()
        };
        if let Err(e) = self.shared.writer.submit(ops) {
            tracing::error!(error = %e, "store writer unavailable");
        }
    }

    /// A zone answered a live map question.
    pub(super) fn map_answer(&mut self, qid: u64, view: Option<MapViewDto>) {
        if let Some((_, reply)) = self.maps.pending.remove(&qid) {
            let _ = reply.send(view);
        }
    }

    /// Every chat line of an in-game player is kept for the console; a muted player's
    /// talk goes nowhere (he is told, in red, until when). Returns whether the line goes
    /// on. Commands other than talk (`/warp`, `/ignore`, …) still work while muted.
    pub(super) fn chat_seen(&mut self, session: SessionId, text: &[u8]) -> bool {
        let Some((name, account, key)) = self
            .control
            .players()
            .find(|(s, ..)| *s == session)
            .map(|(_, p, key, ..)| (p.name.clone(), p.account, key.clone()))
        else {
            return true;
        };
        let now = crate::console::unix_ms();
        let mute = {
            let acc = self.shared.accounts();
            acc.book
                .get(account)
                .filter(|a| a.row.status.muted_at(now))
                .map(|a| (a.row.status.mute_until_ms, a.row.status.mute_reason.clone()))
        };
        let line: String = text.iter().map(|&b| char::from(b)).collect();
        let muted = mute.is_some() && is_talk(&line);
        self.shared.console.chat().push(ChatLine {
            at_ms: now,
            character: name,
            area: key.area,
            instance: key.instance,
            text: line,
            muted,
        });
        if let Some((until, reason)) = mute.filter(|_| muted) {
            let minutes = until.saturating_sub(now).div_ceil(60_000);
            let why = if reason.is_empty() {
                String::new()
            } else {
                format!(" ({reason})")
            };
            let packet = ServerPacket::ChatMessage(ChatMessageS2C {
                colour: ChatColour::Red,
                text: shared::wire::RcString::from(
                    format!("You are muted for {minutes} more minutes{why}.").as_str(),
                ),
            });
            self.send_packet(session, &packet);
            return false;
        }
        true
    }
}

/// Whether a chat text talks to others (zone chat, `/yell`, `/pm`, `/g`, `/p`, `/me`…)
/// rather than running a command.
fn is_talk(text: &str) -> bool {
    let Some(cmd) = text.strip_prefix(['/', '\\']) else {
        return true;
    };
    let word = cmd
        .split(' ')
        .next()
        .unwrap_or_default()
        .to_ascii_uppercase();
    matches!(
        word.as_str(),
        "YELL" | "PM" | "G" | "GM" | "P" | "ME" | "EMOTE" | "SAY" | "TELL"
    )
}

#[cfg(test)]
mod tests {
    use super::is_talk;

    #[test]
    fn talk_is_chat_and_the_talking_commands() {
        for t in [
            "hello",
            "/yell hi",
            "/pm Bob,hi",
            "\\g hi",
            "/p hi",
            "/me waves",
        ] {
            assert!(is_talk(t), "{t}");
        }
        for t in ["/warp Start", "/ignore Bob", "/allplayers", "/invite Bob"] {
            assert!(!is_talk(t), "{t}");
        }
    }
}
