//! The swarm bots' quests (`--quest-chance`, issue 21, `docs/quests.md`): a quest bot
//! walks to the nearest quest giver it has seen (actor template [`GIVER`], the demo
//! world's Elder Maren, next to the Meadow's start), right-clicks it and chooses option 1
//! on every list of options that talk's dialog offers, so it accepts the quest. While the
//! quest log holds a quest in progress it hunts the prey in view (template [`PREY`], the
//! goblin raiders); when a quest's status says to return ([`RETURN`]) it talks to the
//! giver again, which completes the quest.
//!
//! Every bot's script windows go through the SDK ([`Connection::ui_event`]): dialogs are
//! opened and their lines acknowledged as Realm Crafter's client does; only quest bots
//! choose. Odd server behaviour never stops a bot: a right-click that opens no dialog, a
//! dialog that never closes, an option the SDK refuses each end the talk after a timeout,
//! and a giver that never answers is given up after [`MAX_TALKS`].

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use client::{ClientError, Connection, Event, Quest};
use tokio::time::Instant;

/// The quest giver's actor template (the demo's Elder Maren).
pub const GIVER: u16 = 9;
/// The prey's actor template (the demo's Goblin Raider).
pub const PREY: u16 = 3;
/// A quest status starting with this sends the bot back to the giver (the demo's "Return
/// to Elder Maren").
pub const RETURN: &str = "Return to";
/// Talks per bot before it gives up on the giver.
pub const MAX_TALKS: u32 = 6;
/// How close to the giver the right-click is sent (the server's reach is an XZ distance
/// of 20; its copy of the bot's position may lag a step behind).
const TALK_REACH: f32 = 8.0;
/// From the right-click to the dialog closing.
const TALK_TIMEOUT: Duration = Duration::from_secs(15);
/// A pause before talking again after a talk that opened no dialog (the giver may be busy
/// with this player: its quest script is still waiting for the kills).
const RETRY_AFTER: Duration = Duration::from_secs(5);
/// Prey farther than this is not hunted.
const HUNT_RANGE: f32 = 300.0;
/// How close the bot gets before attacking (as the swarm's own hunts).
const ATTACK_REACH: f32 = 4.0;
/// Between two attacks.
const ATTACK_EVERY: Duration = Duration::from_secs(1);

/// What the quest bots count (summed over all bots).
#[derive(Default)]
pub struct QuestStats {
    bots: AtomicU64,
    right_clicks: AtomicU64,
    dialogs_opened: AtomicU64,
    options_chosen: AtomicU64,
    quests_accepted: AtomicU64,
    quests_completed: AtomicU64,
    attacks: AtomicU64,
    prey_killed: AtomicU64,
}

fn add(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

impl QuestStats {
    /// The summary's `quests` object.
    pub fn json(&self, chance: f64) -> serde_json::Value {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        serde_json::json!({
            "quest_chance": chance,
            "quest_bots": g(&self.bots),
            "right_clicks": g(&self.right_clicks),
            "dialogs_opened": g(&self.dialogs_opened),
            "options_chosen": g(&self.options_chosen),
            "quests_accepted": g(&self.quests_accepted),
            "quests_completed": g(&self.quests_completed),
            "attacks": g(&self.attacks),
            "prey_killed": g(&self.prey_killed),
        })
    }

    /// One part of the progress line.
    pub fn progress(&self) -> String {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        format!(
            "quests accepted {} completed {}",
            g(&self.quests_accepted),
            g(&self.quests_completed)
        )
    }
}

/// What a quest bot is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Walking to the giver, to take a quest or to claim its reward.
    Seek,
    /// Right-clicked `npc`: following the dialog (`dialog`, once opened) until it closes
    /// or `until`.
    Talk {
        npc: u16,
        dialog: Option<u32>,
        until: Instant,
    },
    /// Hunting the prey while a quest is in progress.
    Hunt,
    /// Nothing more to do.
    Done,
}

/// What the quest log says to do after a talk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// A quest's status says to return to the giver.
    Return,
    /// A quest is in progress.
    Hunt,
    /// No quest in progress.
    Nothing,
}

fn next_from_log(log: &[Quest]) -> Next {
    let open = log.iter().filter(|q| !q.is_complete());
    let mut next = Next::Nothing;
    for q in open {
        if q.status_text().starts_with(RETURN) {
            return Next::Return;
        }
        next = Next::Hunt;
    }
    next
}

fn dist2(a: (f32, f32), b: (f32, f32)) -> f32 {
    (a.0 - b.0) * (a.0 - b.0) + (a.1 - b.1) * (a.1 - b.1)
}

/// The nearest actor of `actors` to `from` within `range`, with its position.
fn nearest(
    actors: &HashMap<u16, (f32, f32)>,
    from: (f32, f32),
    range: f32,
) -> Option<(u16, (f32, f32))> {
    actors
        .iter()
        .map(|(&rid, &p)| (rid, p, dist2(from, p)))
        .filter(|(_, _, d)| d.is_finite() && *d <= range * range)
        .min_by(|a, b| a.2.total_cmp(&b.2).then(a.0.cmp(&b.0)))
        .map(|(rid, p, _)| (rid, p))
}

/// One bot's quest play.
pub struct QuestBot {
    own_rid: u16,
    /// Givers and prey in view: RuntimeID → (x, z).
    givers: HashMap<u16, (f32, f32)>,
    prey: HashMap<u16, (f32, f32)>,
    step: Step,
    /// Quests in the log (lowercase names): a `QuestUpdated` for another is a new quest.
    known: HashSet<String>,
    /// Quests seen completed (lowercase names), each counted once.
    completed: HashSet<String>,
    talks: u32,
    not_before: Instant,
    last_attack: Option<Instant>,
}

impl QuestBot {
    /// A quest bot whose quest log is `log` (the login's `"Q"` blocks); counted in
    /// `stats`.
    pub fn new(own_rid: u16, log: &[Quest], stats: &QuestStats) -> Self {
        add(&stats.bots);
        Self {
            own_rid,
            givers: HashMap::new(),
            prey: HashMap::new(),
            step: Step::Seek,
            known: log.iter().map(|q| q.name.to_lowercase()).collect(),
            completed: log
                .iter()
                .filter(|q| q.is_complete())
                .map(|q| q.name.to_lowercase())
                .collect(),
            talks: 0,
            not_before: Instant::now(),
            last_attack: None,
        }
    }

    /// Whether it steers the bot now (the swarm's own hunts and item play wait).
    pub fn is_busy(&self) -> bool {
        match self.step {
            Step::Seek => !self.givers.is_empty() && Instant::now() >= self.not_before,
            Step::Talk { .. } => true,
            Step::Hunt => !self.prey.is_empty(),
            Step::Done => false,
        }
    }

    /// An actor came into view (`P_NewActor`).
    pub fn actor_appeared(&mut self, a: &shared::proto::NewActor) {
        if a.runtime_id == self.own_rid || a.human != 0 {
            return;
        }
        match a.template_id {
            GIVER => {
                self.givers.insert(a.runtime_id, (a.x, a.z));
            }
            PREY => {
                self.prey.insert(a.runtime_id, (a.x, a.z));
            }
            _ => {}
        }
    }

    /// An actor moved.
    pub fn actor_moved(&mut self, runtime_id: u16, x: f32, z: f32) {
        if let Some(p) = self.givers.get_mut(&runtime_id) {
            *p = (x, z);
        } else if let Some(p) = self.prey.get_mut(&runtime_id) {
            *p = (x, z);
        }
    }

    /// An actor left view.
    pub fn actor_gone(&mut self, runtime_id: u16) {
        self.givers.remove(&runtime_id);
        self.prey.remove(&runtime_id);
    }

    /// An actor died; prey this bot killed is counted.
    pub fn actor_died(&mut self, runtime_id: u16, killer: Option<u16>, stats: &QuestStats) {
        if self.prey.remove(&runtime_id).is_some() && killer == Some(self.own_rid) {
            add(&stats.prey_killed);
        }
        self.givers.remove(&runtime_id);
    }

    /// The bot is in another area (or respawned): what it saw is gone, and a talk with it.
    pub fn area_changed(&mut self) {
        self.givers.clear();
        self.prey.clear();
        if matches!(self.step, Step::Talk { .. }) {
            self.step = Step::Seek;
        }
    }

    /// After a talk (its dialog closed, or it timed out): what the quest log says next.
    fn after_talk(&mut self, log: &[Quest], opened: bool) {
        let now = Instant::now();
        self.step = match next_from_log(log) {
            Next::Return if self.talks < MAX_TALKS => {
                // A reward dialog that opened and closed without completing the quest:
                // wait a little before asking again.
                if opened {
                    self.not_before = now + RETRY_AFTER;
                }
                Step::Seek
            }
            Next::Return | Next::Hunt => Step::Hunt,
            Next::Nothing if !opened && self.talks < MAX_TALKS => {
                self.not_before = now + RETRY_AFTER;
                Step::Seek
            }
            Next::Nothing => Step::Done,
        };
    }

    /// One input tick at `pos`: goes on with the step. Returns where to walk (the bot's
    /// own position to stand still while talking), or `None` to leave the bot to its
    /// other play.
    pub async fn tick(
        &mut self,
        c: &mut Connection,
        pos: (f32, f32, f32),
        stats: &QuestStats,
        attacks: &AtomicU64,
    ) -> Result<Option<(f32, f32, f32)>, ClientError> {
        let now = Instant::now();
        let at = (pos.0, pos.2);
        match self.step {
            Step::Talk { until, dialog, .. } => {
                if now >= until {
                    self.after_talk(c.quests(), dialog.is_some());
                    return Ok(None);
                }
                Ok(Some(pos))
            }
            Step::Seek => {
                if now < self.not_before {
                    return Ok(None);
                }
                let Some((npc, (x, z))) = nearest(&self.givers, at, f32::INFINITY) else {
                    return Ok(None);
                };
                if dist2(at, (x, z)) > TALK_REACH * TALK_REACH {
                    return Ok(Some((x, pos.1, z)));
                }
                self.talks += 1;
                c.right_click(npc).await?;
                add(&stats.right_clicks);
                self.step = Step::Talk {
                    npc,
                    dialog: None,
                    until: now + TALK_TIMEOUT,
                };
                Ok(Some(pos))
            }
            Step::Hunt => {
                if next_from_log(c.quests()) == Next::Return && self.talks < MAX_TALKS {
                    self.step = Step::Seek;
                    return Ok(None);
                }
                let Some((prey, (x, z))) = nearest(&self.prey, at, HUNT_RANGE) else {
                    return Ok(None);
                };
                if dist2(at, (x, z)) < ATTACK_REACH * ATTACK_REACH
                    && self.last_attack.is_none_or(|t| t.elapsed() >= ATTACK_EVERY)
                {
                    self.last_attack = Some(now);
                    c.attack(prey).await?;
                    add(&stats.attacks);
                    attacks.fetch_add(1, Ordering::Relaxed);
                }
                Ok(Some((x + 1.0, pos.1, z)))
            }
            Step::Done => Ok(None),
        }
    }

    /// A script-UI event ([`Connection::ui_event`]): counts dialogs and quests, and
    /// chooses option 1 of every list the talk's dialog offers.
    pub async fn event(
        &mut self,
        c: &mut Connection,
        e: &Event,
        stats: &QuestStats,
    ) -> Result<(), ClientError> {
        match e {
            Event::DialogOpened { dialog, .. } => {
                add(&stats.dialogs_opened);
                if let Step::Talk {
                    dialog: d @ None, ..
                } = &mut self.step
                {
                    *d = Some(*dialog);
                }
            }
            Event::DialogOptions { dialog, .. } => {
                if let Step::Talk {
                    dialog: Some(d), ..
                } = self.step
                    && d == *dialog
                {
                    match c.choose(d, 1).await {
                        Ok(()) => add(&stats.options_chosen),
                        // An empty list: nothing to choose; the talk times out.
                        Err(ClientError::NoSuchChoice { .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            Event::DialogClosed { dialog } => {
                if let Step::Talk {
                    dialog: Some(d), ..
                } = self.step
                    && d == *dialog
                {
                    self.after_talk(c.quests(), true);
                }
            }
            Event::QuestUpdated { name, complete, .. } => {
                let key = name.to_lowercase();
                if self.known.insert(key.clone()) {
                    add(&stats.quests_accepted);
                }
                if *complete && self.completed.insert(key) {
                    add(&stats.quests_completed);
                }
                if self.step == Step::Hunt
                    && next_from_log(c.quests()) == Next::Return
                    && self.talks < MAX_TALKS
                {
                    self.step = Step::Seek;
                }
            }
            Event::QuestRemoved { name } => {
                let key = name.to_lowercase();
                self.known.remove(&key);
                self.completed.remove(&key);
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quest(name: &str, status: &[u8]) -> Quest {
        Quest {
            name: name.into(),
            status: status.to_vec(),
        }
    }

    #[test]
    fn the_quest_log_says_what_comes_next() {
        assert_eq!(next_from_log(&[]), Next::Nothing);
        let kill = quest("Goblin Trouble", b"\xff\xff\xffKill 2 Goblin Raiders");
        let back = quest("Goblin Trouble", b"\x64\xff\x64Return to Elder Maren");
        let done = quest("Goblin Trouble", &shared::proto::QUEST_COMPLETED);
        assert_eq!(next_from_log(std::slice::from_ref(&kill)), Next::Hunt);
        assert_eq!(next_from_log(&[kill.clone(), back]), Next::Return);
        assert_eq!(next_from_log(std::slice::from_ref(&done)), Next::Nothing);
        assert_eq!(next_from_log(&[done, kill]), Next::Hunt);
        // A status too short for its colour is no quest to return to, and no panic.
        assert_eq!(next_from_log(&[quest("Odd", b"\xff")]), Next::Hunt);
    }

    #[test]
    fn a_talk_without_a_dialog_is_retried_then_given_up() {
        let stats = QuestStats::default();
        let mut b = QuestBot::new(1, &[], &stats);
        b.talks = 1;
        b.after_talk(&[], false);
        assert_eq!(b.step, Step::Seek);
        assert!(b.not_before > Instant::now());
        b.talks = MAX_TALKS;
        b.after_talk(&[], false);
        assert_eq!(b.step, Step::Done);
        // A dialog that closed with no quest taken (refused, or already completed): done.
        b.talks = 1;
        b.after_talk(&[], true);
        assert_eq!(b.step, Step::Done);
        b.after_talk(&[quest("Q", b"\xff\xff\xffKill")], true);
        assert_eq!(b.step, Step::Hunt);
    }

    #[test]
    fn the_nearest_actor_within_range_and_odd_positions_ignored() {
        let actors = HashMap::from([(4, (10.0, 0.0)), (5, (f32::NAN, 0.0)), (6, (400.0, 0.0))]);
        assert_eq!(
            nearest(&actors, (0.0, 0.0), HUNT_RANGE),
            Some((4, (10.0, 0.0)))
        );
        assert_eq!(nearest(&actors, (0.0, 0.0), 5.0), None);
        assert_eq!(nearest(&HashMap::new(), (0.0, 0.0), f32::INFINITY), None);
    }
}
