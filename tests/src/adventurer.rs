//! A player that plays content through the client SDK, for the quest tests: it remembers
//! the NPCs it has seen (by template), walks to one, talks to it (answering the dialog with
//! given choices) and hunts NPCs of a template until one dies by its hand.

use std::collections::HashMap;
use std::time::Duration;

use client::{Connection, Event, GameStart};
use tokio::time::Instant;

/// What the player has seen.
#[derive(Debug, Default)]
pub struct Adventurer {
    /// NPCs in view: RuntimeID → (template, position).
    pub npcs: HashMap<u16, (u16, (f32, f32, f32))>,
    /// Where the player stands (as far as it knows).
    pub at: (f32, f32, f32),
    /// The area it is in.
    pub area: String,
    /// `P_ChangeArea`s seen (arrivals, and being put back after a node loss).
    pub arrivals: u32,
    /// Chat lines seen.
    pub chat: Vec<String>,
    /// Dialog lines seen.
    pub lines: Vec<String>,
    /// Quest log events seen: (name, status, complete).
    pub quest_events: Vec<(String, String, bool)>,
    /// Item ids given to the player.
    pub items_given: Vec<u16>,
    /// Gold gained.
    pub gold_gained: i64,
}

impl Adventurer {
    /// Starting from a game start (its catalogue of packets).
    pub fn new(g: &GameStart) -> Self {
        let mut a = Self {
            at: (g.area.x, g.area.y, g.area.z),
            area: String::from_utf8_lossy(g.area.area.as_bytes()).into_owned(),
            ..Self::default()
        };
        for i in &g.packets {
            a.observe(&Event::from(i.packet.clone()));
        }
        a
    }

    /// Learn from an event.
    pub fn observe(&mut self, e: &Event) {
        match e {
            Event::ActorAppeared {
                runtime_id,
                template_id,
                position,
                human: false,
                ..
            } => {
                self.npcs.insert(*runtime_id, (*template_id, *position));
            }
            Event::ActorMoved {
                runtime_id, x, z, ..
            } => {
                if let Some((_, p)) = self.npcs.get_mut(runtime_id) {
                    (p.0, p.2) = (*x, *z);
                }
            }
            Event::ActorGone { runtime_id } | Event::ActorDied { runtime_id, .. } => {
                self.npcs.remove(runtime_id);
            }
            Event::AreaChanged { area, position, .. } => {
                // A new area (or the same one rebuilt elsewhere): its actors come anew.
                self.npcs.clear();
                self.area.clone_from(area);
                self.at = *position;
                self.arrivals += 1;
            }
            Event::Chat { text, .. } => self.chat.push(text.clone()),
            Event::DialogText { text, .. } => self.lines.push(text.clone()),
            Event::QuestUpdated {
                name,
                status,
                complete,
            } => self
                .quest_events
                .push((name.clone(), status.clone(), *complete)),
            Event::ItemOffered { item_id, .. } => self.items_given.push(*item_id),
            Event::Gold(g) => {
                self.gold_gained += match g {
                    shared::proto::GoldChange::Up { amount } => i64::from(*amount),
                    shared::proto::GoldChange::Down { amount } => -i64::from(*amount),
                };
            }
            _ => {}
        }
    }

    /// The nearest NPC of a template it has seen.
    pub fn nearest(&self, template: u16) -> Option<(u16, (f32, f32, f32))> {
        self.nearest_to(template, self.at)
    }

    /// The NPC of a template nearest to a point.
    pub fn nearest_to(&self, template: u16, to: (f32, f32, f32)) -> Option<(u16, (f32, f32, f32))> {
        let d = |p: &(f32, f32, f32)| (p.0 - to.0).powi(2) + (p.2 - to.2).powi(2);
        self.npcs
            .iter()
            .filter(|(_, (t, _))| *t == template)
            .map(|(rid, (_, p))| (*rid, *p))
            .min_by(|a, b| d(&a.1).total_cmp(&d(&b.1)))
    }

    /// Walk to `to` in steps the speed check accepts (a few per second), watching events.
    pub async fn walk_to(&mut self, c: &mut Connection, to: (f32, f32, f32)) {
        let from = self.at;
        let dist = ((to.0 - from.0).powi(2) + (to.2 - from.2).powi(2)).sqrt();
        let steps = ((dist / 4.0).ceil() as usize).max(1);
        for i in 1..=steps {
            let k = i as f32 / steps as f32;
            let p = (
                from.0 + (to.0 - from.0) * k,
                from.1 + (to.1 - from.1) * k,
                from.2 + (to.2 - from.2) * k,
            );
            c.move_to(p.0, p.1, p.2, true).unwrap();
            self.at = p;
            self.pump(c, Duration::from_millis(100)).await;
        }
    }

    /// Take events for a while.
    pub async fn pump(&mut self, c: &mut Connection, for_: Duration) {
        let end = Instant::now() + for_;
        while let Ok(Ok(e)) = tokio::time::timeout_at(end, c.next_event()).await {
            self.observe(&e);
        }
    }

    /// Walk to an NPC of `template` (waiting up to `within` to see one), right-click it and
    /// play the dialog it opens: each time options come, the next of `choices` is chosen.
    /// Returns when the dialog closes.
    pub async fn talk(
        &mut self,
        c: &mut Connection,
        template: u16,
        choices: &[u8],
        within: Duration,
    ) {
        self.talk_near(c, template, None, choices, within).await;
    }

    /// As [`talk`](Self::talk), to the NPC of `template` nearest to `near` (when several
    /// share a template).
    pub async fn talk_near(
        &mut self,
        c: &mut Connection,
        template: u16,
        near: Option<(f32, f32, f32)>,
        choices: &[u8],
        within: Duration,
    ) {
        let deadline = Instant::now() + within;
        let (rid, pos) = loop {
            let close = |p: &(f32, f32, f32)| {
                near.is_none_or(|q| (p.0 - q.0).powi(2) + (p.2 - q.2).powi(2) < 15.0 * 15.0)
            };
            if let Some(n) = self
                .nearest_to(template, near.unwrap_or(self.at))
                .filter(|(_, p)| close(p))
            {
                break n;
            }
            assert!(
                Instant::now() < deadline,
                "no NPC of template {template} seen in {}: {:?}",
                self.area,
                self.npcs
            );
            self.pump(c, Duration::from_millis(200)).await;
        };
        self.walk_to(c, (pos.0 + 2.0, pos.1, pos.2)).await;
        let mut dialog = None;
        let mut choices = choices.iter();
        let mut click = tokio::time::interval(Duration::from_millis(500));
        loop {
            assert!(
                Instant::now() < deadline,
                "the talk with {rid} at {pos:?} did not end (I am at {:?}); lines {:?}, NPCs {:?}",
                self.at,
                self.lines,
                self.npcs
            );
            tokio::select! {
                _ = click.tick(), if dialog.is_none() => {
                    c.right_click(rid).await.unwrap();
                }
                e = tokio::time::timeout(Duration::from_millis(200), c.next_event()) => {
                    let Ok(e) = e else { continue };
                    let e = e.unwrap();
                    self.observe(&e);
                    match e {
                        Event::DialogOpened { dialog: d, .. } if dialog.is_none() => dialog = Some(d),
                        Event::DialogOptions { dialog: d, options } if Some(d) == dialog => {
                            let pick = *choices.next().unwrap_or_else(|| {
                                panic!("no choice left for {options:?}; lines {:?}", self.lines)
                            });
                            c.choose(d, pick).await.unwrap();
                        }
                        Event::DialogClosed { dialog: d } if Some(d) == dialog => return,
                        _ => {}
                    }
                }
            }
        }
    }

    /// Walk to the nearest NPC of `template` and right-click it until its dialog offers
    /// options; returns the dialog, left waiting for the choice.
    pub async fn until_options(
        &mut self,
        c: &mut Connection,
        template: u16,
        within: Duration,
    ) -> u32 {
        let deadline = Instant::now() + within;
        let (rid, pos) = loop {
            if let Some(n) = self.nearest(template) {
                break n;
            }
            assert!(
                Instant::now() < deadline,
                "no NPC of template {template} seen"
            );
            self.pump(c, Duration::from_millis(200)).await;
        };
        self.walk_to(c, (pos.0 + 2.0, pos.1, pos.2)).await;
        let mut open = None;
        loop {
            assert!(
                Instant::now() < deadline,
                "no options offered; lines {:?}",
                self.lines
            );
            if open.is_none() {
                c.right_click(rid).await.unwrap();
            }
            let Ok(e) = tokio::time::timeout(Duration::from_millis(500), c.next_event()).await
            else {
                continue;
            };
            let e = e.unwrap();
            self.observe(&e);
            match e {
                Event::DialogOpened { dialog, .. } => open = Some(dialog),
                Event::DialogOptions { dialog, .. } if Some(dialog) == open => return dialog,
                _ => {}
            }
        }
    }

    /// Attack NPCs of `template` until one dies by this player's hand (bounded).
    pub async fn kill_one(&mut self, c: &mut Connection, template: u16, within: Duration) {
        let deadline = Instant::now() + within;
        let mut attack = tokio::time::interval(Duration::from_millis(300));
        let mut target: Option<u16> = None;
        loop {
            assert!(
                Instant::now() < deadline,
                "no NPC of template {template} killed in {}; seen {:?}",
                self.area,
                self.npcs
            );
            tokio::select! {
                _ = attack.tick() => {
                    let t = target
                        .and_then(|t| self.npcs.get(&t).map(|(_, p)| (t, *p)))
                        .or_else(|| self.nearest(template));
                    if let Some((rid, (x, y, z))) = t {
                        target = Some(rid);
                        // Close in at most 8 units per step (the speed check).
                        let (dx, dz) = (x + 1.0 - self.at.0, z - self.at.2);
                        let d = (dx * dx + dz * dz).sqrt();
                        let k = if d > 8.0 { 8.0 / d } else { 1.0 };
                        let p = (self.at.0 + dx * k, y, self.at.2 + dz * k);
                        c.move_to(p.0, p.1, p.2, true).unwrap();
                        self.at = p;
                        if d < 15.0 {
                            c.attack(rid).await.unwrap();
                        }
                    }
                }
                e = c.next_event() => {
                    let e = e.unwrap();
                    let died = matches!(&e, Event::ActorDied { runtime_id, .. } if Some(*runtime_id) == target);
                    self.observe(&e);
                    if died {
                        return;
                    }
                }
            }
        }
    }

    /// Take events until a chat line containing `needle` (bounded); returns it, and forgets
    /// every line containing it.
    pub async fn chat_line(
        &mut self,
        c: &mut Connection,
        needle: &str,
        within: Duration,
    ) -> String {
        let deadline = Instant::now() + within;
        loop {
            if let Some(l) = self.chat.iter().find(|l| l.contains(needle)) {
                let l = l.clone();
                self.chat.retain(|x| !x.contains(needle));
                return l;
            }
            assert!(
                Instant::now() < deadline,
                "no chat line with {needle:?}; saw {:?}",
                self.chat
            );
            self.pump(c, Duration::from_millis(200)).await;
        }
    }

    /// Wait (bounded) for a quest event matching `f`.
    pub async fn quest_event(
        &mut self,
        c: &mut Connection,
        within: Duration,
        f: impl Fn(&(String, String, bool)) -> bool,
    ) -> (String, String, bool) {
        let deadline = Instant::now() + within;
        loop {
            if let Some(q) = self.quest_events.iter().find(|q| f(q)) {
                return q.clone();
            }
            assert!(
                Instant::now() < deadline,
                "no such quest event; saw {:?}",
                self.quest_events
            );
            self.pump(c, Duration::from_millis(200)).await;
        }
    }
}
