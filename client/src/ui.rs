//! Script windows and the quest log as the player sees them: NPC dialogs (`OpenDialog`,
//! `DialogOutput`, `DialogInput`), text input prompts (`Input`), progress bars and the quest
//! log (`NewQuest` ... `DeleteQuest`), fed by [`Connection::next_event`] and answered the
//! way Realm Crafter's client answers.
//!
//! [`Ui::apply`] is the sans-IO part: a server packet in, the [`Event`] it stands for and
//! the packets the client sends back at once out. Like the original client it opens every
//! dialog (its own handle, counted from 1), acknowledges every line of text and creates
//! every progress bar; choosing an option ([`Connection::choose`]) and typing an answer
//! ([`Connection::answer_input`]) are the player's.

use std::collections::BTreeMap;

use shared::proto::{
    ClientPacket, DialogC2S, DialogS2C, ProgressBarC2S, ProgressBarS2C, QUEST_COMPLETED, QuestLog,
    ScriptInputC2S, ScriptInputS2C, ServerPacket,
};
use shared::wire::RcString;

use crate::conn::Connection;
use crate::error::ClientError;
use crate::event::Event;

fn text(b: &[u8]) -> String {
    b.iter().map(|&c| char::from(c)).collect()
}

/// An open dialog window.
#[doc(alias = "OpenDialog")]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dialog {
    /// This client's handle for it.
    pub handle: u32,
    /// The server's script instance behind it (`hSI`).
    pub script: u32,
    /// The actor the player talks to, if any.
    pub context: Option<u16>,
    /// Its title.
    pub title: String,
    /// The lines written into it, in order.
    pub lines: Vec<String>,
    /// The options offered now (empty when none is asked for).
    pub options: Vec<String>,
}

/// One entry of the quest log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Quest {
    /// The quest's name.
    pub name: String,
    /// Its stored status: three colour bytes, then the text.
    pub status: Vec<u8>,
}

impl Quest {
    /// Whether it is completed (the status is Realm Crafter's "Completed" marker).
    pub fn is_complete(&self) -> bool {
        self.status == QUEST_COMPLETED
    }

    /// The status text without its colour (`"Completed!"` for a completed quest).
    pub fn status_text(&self) -> String {
        if self.is_complete() {
            return "Completed!".to_owned();
        }
        text(self.status.get(3..).unwrap_or(&[]))
    }
}

/// A text input prompt the server waits on (`Input`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InputPrompt {
    /// The script instance that asks.
    pub script: u32,
    /// What may be typed: 0 any text, 1 no digits, 2 an integer, 3 a decimal.
    pub kind: u8,
    /// The window title.
    pub title: String,
    /// The question.
    pub prompt: String,
}

/// A progress bar a script shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bar {
    /// Its label.
    pub label: String,
    /// The maximum.
    pub max: u16,
    /// The value now.
    pub value: u16,
}

/// The player's script windows and quest log.
#[derive(Debug, Clone, Default)]
pub struct Ui {
    dialogs: BTreeMap<u32, Dialog>,
    quests: Vec<Quest>,
    input: Option<InputPrompt>,
    bars: BTreeMap<u32, Bar>,
    last_handle: u32,
}

impl Ui {
    /// The open dialogs, by this client's handle.
    pub fn dialogs(&self) -> impl Iterator<Item = &Dialog> {
        self.dialogs.values()
    }

    /// One open dialog.
    pub fn dialog(&self, handle: u32) -> Option<&Dialog> {
        self.dialogs.get(&handle)
    }

    /// The quest log, in the order the quests were added.
    pub fn quests(&self) -> &[Quest] {
        &self.quests
    }

    /// A quest by name (case-insensitive, as the client matches).
    pub fn quest(&self, name: &str) -> Option<&Quest> {
        self.quests
            .iter()
            .find(|q| q.name.eq_ignore_ascii_case(name))
    }

    /// The input prompt waiting for an answer, if any.
    pub fn input(&self) -> Option<&InputPrompt> {
        self.input.as_ref()
    }

    /// The progress bars shown, by this client's handle.
    pub fn bars(&self) -> &BTreeMap<u32, Bar> {
        &self.bars
    }

    /// The quest log as the login's `"Q"` blocks gave it.
    pub fn load_quests(&mut self, quests: &[shared::proto::QuestEntry]) {
        self.quests = quests
            .iter()
            .filter(|q| !q.name.as_bytes().is_empty())
            .map(|q| Quest {
                name: text(q.name.as_bytes()),
                status: q.status.as_bytes().to_vec(),
            })
            .collect();
    }

    fn handle(&mut self) -> u32 {
        self.last_handle = self.last_handle.wrapping_add(1).max(1);
        self.last_handle
    }

    /// One server packet: the event it is for this client, and what the client answers at
    /// once; `None` for packets that are not script UI.
    pub fn apply(&mut self, p: &ServerPacket) -> Option<(Event, Vec<ClientPacket>)> {
        Some(match p {
            ServerPacket::Dialog(d) => self.dialog_packet(d),
            ServerPacket::ProgressBar(b) => self.bar_packet(b),
            ServerPacket::ScriptInput(i) => self.input_packet(i),
            ServerPacket::QuestLog(q) => (self.quest_packet(q), Vec::new()),
            _ => return None,
        })
    }

    fn dialog_packet(&mut self, d: &DialogS2C) -> (Event, Vec<ClientPacket>) {
        match d {
            DialogS2C::Open {
                script,
                context,
                title,
                ..
            } => {
                let handle = self.handle();
                let context = (*context != u16::MAX).then_some(*context);
                let title = text(title.as_bytes());
                self.dialogs.insert(
                    handle,
                    Dialog {
                        handle,
                        script: *script,
                        context,
                        title: title.clone(),
                        ..Dialog::default()
                    },
                );
                let reply = ClientPacket::Dialog(DialogC2S::Opened {
                    script: *script,
                    dialog: handle,
                });
                (
                    Event::DialogOpened {
                        dialog: handle,
                        title,
                        context,
                    },
                    vec![reply],
                )
            }
            DialogS2C::Text {
                dialog,
                text: t,
                r,
                g,
                b,
            } => {
                let line = text(t.as_bytes());
                let mut replies = Vec::new();
                if let Some(w) = self.dialogs.get_mut(dialog) {
                    w.lines.push(line.clone());
                    replies.push(ClientPacket::Dialog(DialogC2S::TextShown {
                        script: w.script,
                    }));
                }
                (
                    Event::DialogText {
                        dialog: *dialog,
                        text: line,
                        colour: (*r, *g, *b),
                    },
                    replies,
                )
            }
            DialogS2C::Options { dialog, options } => {
                let options: Vec<String> = options.iter().map(|o| text(o.as_bytes())).collect();
                if let Some(w) = self.dialogs.get_mut(dialog) {
                    w.options.clone_from(&options);
                }
                (
                    Event::DialogOptions {
                        dialog: *dialog,
                        options,
                    },
                    Vec::new(),
                )
            }
            DialogS2C::Close { dialog } => {
                self.dialogs.remove(dialog);
                (Event::DialogClosed { dialog: *dialog }, Vec::new())
            }
        }
    }

    fn bar_packet(&mut self, b: &ProgressBarS2C) -> (Event, Vec<ClientPacket>) {
        match b {
            ProgressBarS2C::Create {
                script,
                max,
                value,
                label,
                ..
            } => {
                let bar = self.handle();
                let label = text(label.as_bytes());
                self.bars.insert(
                    bar,
                    Bar {
                        label: label.clone(),
                        max: *max,
                        value: *value,
                    },
                );
                (
                    Event::ProgressBar {
                        bar,
                        label,
                        max: *max,
                        value: Some(*value),
                    },
                    vec![ClientPacket::ProgressBar(ProgressBarC2S::Created {
                        script: *script,
                        bar,
                    })],
                )
            }
            ProgressBarS2C::Update { bar, value } => {
                let (label, max) = match self.bars.get_mut(bar) {
                    Some(b) => {
                        b.value = *value;
                        (b.label.clone(), b.max)
                    }
                    None => (String::new(), 0),
                };
                (
                    Event::ProgressBar {
                        bar: *bar,
                        label,
                        max,
                        value: Some(*value),
                    },
                    Vec::new(),
                )
            }
            ProgressBarS2C::Delete { bar } => {
                let b = self.bars.remove(bar).unwrap_or_default();
                (
                    Event::ProgressBar {
                        bar: *bar,
                        label: b.label,
                        max: b.max,
                        value: None,
                    },
                    Vec::new(),
                )
            }
        }
    }

    fn input_packet(&mut self, i: &ScriptInputS2C) -> (Event, Vec<ClientPacket>) {
        let prompt = InputPrompt {
            script: i.script,
            kind: i.kind,
            title: text(i.title.as_bytes()),
            prompt: text(i.prompt.as_bytes()),
        };
        let e = Event::InputRequested {
            title: prompt.title.clone(),
            prompt: prompt.prompt.clone(),
            kind: prompt.kind,
        };
        self.input = Some(prompt);
        (e, Vec::new())
    }

    fn quest_packet(&mut self, q: &QuestLog) -> Event {
        match q {
            QuestLog::New { name, status } => {
                let name = text(name.as_bytes());
                if self.quest(&name).is_none() {
                    self.quests.push(Quest {
                        name: name.clone(),
                        status: status.as_bytes().to_vec(),
                    });
                }
                self.quest_event(&name)
            }
            QuestLog::Update { name, status } => {
                let name = text(name.as_bytes());
                if let Some(e) = self
                    .quests
                    .iter_mut()
                    .find(|e| e.name.eq_ignore_ascii_case(&name))
                {
                    e.status = status.as_bytes().to_vec();
                }
                self.quest_event(&name)
            }
            QuestLog::Delete { name } => {
                let name = text(name.as_bytes());
                let at = self
                    .quests
                    .iter()
                    .position(|e| e.name.eq_ignore_ascii_case(&name));
                let removed = at.map(|i| self.quests.remove(i));
                Event::QuestRemoved {
                    name: removed.map_or(name, |q| q.name),
                }
            }
        }
    }

    fn quest_event(&self, name: &str) -> Event {
        match self.quest(name) {
            Some(q) => Event::QuestUpdated {
                name: q.name.clone(),
                status: q.status_text(),
                complete: q.is_complete(),
            },
            None => Event::QuestUpdated {
                name: name.to_owned(),
                status: String::new(),
                complete: false,
            },
        }
    }

    /// The answer choosing `option` (1-based) in dialog `dialog`, if it offers it.
    pub fn choose(&mut self, dialog: u32, option: u8) -> Option<ClientPacket> {
        let w = self.dialogs.get_mut(&dialog)?;
        if option == 0 || usize::from(option) > w.options.len() {
            return None;
        }
        w.options.clear();
        Some(ClientPacket::Dialog(DialogC2S::Chosen {
            script: w.script,
            option,
        }))
    }

    /// The answer to the input prompt, if one is open.
    pub fn answer_input(&mut self, answer: &str) -> Option<ClientPacket> {
        let i = self.input.take()?;
        let bytes: Vec<u8> = answer
            .chars()
            .map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?'))
            .take(150)
            .collect();
        Some(ClientPacket::ScriptInput(ScriptInputC2S {
            script: i.script,
            text: RcString(bytes),
        }))
    }
}

impl Connection {
    /// The player's script windows and quest log.
    pub fn ui(&self) -> &Ui {
        &self.ui
    }

    /// The quest log.
    pub fn quests(&self) -> &[Quest] {
        self.ui.quests()
    }

    /// Feeds a packet received with [`recv`](Self::recv) (rather than
    /// [`next_event`](Self::next_event)) to the script windows and the quest log: returns
    /// its [`Event`] and queues the answers Realm Crafter's client sends at once (a dialog
    /// opened, a line shown, a bar created), which go out with the next send or while the
    /// connection waits for packets. `None` for a packet that is not script UI (nothing
    /// queued). Without this, a caller of `recv` leaves every script window unanswered and
    /// [`choose`](Self::choose) knows no dialog.
    pub fn ui_event(&mut self, p: &ServerPacket) -> Result<Option<Event>, ClientError> {
        let Some((e, replies)) = self.ui.apply(p) else {
            return Ok(None);
        };
        for r in &replies {
            self.queue(r)?;
        }
        Ok(Some(e))
    }

    /// Choose option `option` (1-based) of dialog `dialog` (`P_Dialog "O"`): the answer to
    /// the script's `DialogInput`. An option the dialog does not offer sends nothing and is
    /// an error.
    #[doc(alias = "DialogInput")]
    pub async fn choose(&mut self, dialog: u32, option: u8) -> Result<(), ClientError> {
        let p = self
            .ui
            .choose(dialog, option)
            .ok_or(ClientError::NoSuchChoice { dialog, option })?;
        self.send(&p).await
    }

    /// Answer the open input prompt (`P_ScriptInput`): the script's `Input$` returns it.
    #[doc(alias = "P_ScriptInput")]
    pub async fn answer_input(&mut self, answer: &str) -> Result<(), ClientError> {
        let p = self
            .ui
            .answer_input(answer)
            .ok_or(ClientError::NoSuchChoice {
                dialog: 0,
                option: 0,
            })?;
        self.send(&p).await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn s(b: &[u8]) -> RcString {
        RcString(b.to_vec())
    }

    #[test]
    fn a_dialog_is_opened_acknowledged_and_answered_like_the_original_client() {
        let mut ui = Ui::default();
        let (e, r) = ui
            .apply(&ServerPacket::Dialog(DialogS2C::Open {
                script: 16,
                context: 7,
                background: u16::MAX,
                title: s(b"Trainer"),
            }))
            .unwrap();
        assert_eq!(
            e,
            Event::DialogOpened {
                dialog: 1,
                title: "Trainer".into(),
                context: Some(7)
            }
        );
        assert_eq!(
            r,
            vec![ClientPacket::Dialog(DialogC2S::Opened {
                script: 16,
                dialog: 1
            })]
        );
        let (_, r) = ui
            .apply(&ServerPacket::Dialog(DialogS2C::Text {
                r: 255,
                g: 255,
                b: 255,
                dialog: 1,
                text: s(b"Hello"),
            }))
            .unwrap();
        assert_eq!(
            r,
            vec![ClientPacket::Dialog(DialogC2S::TextShown { script: 16 })]
        );
        // Text for a window this client does not have is shown nowhere and not acknowledged.
        let (_, r) = ui
            .apply(&ServerPacket::Dialog(DialogS2C::Text {
                r: 0,
                g: 0,
                b: 0,
                dialog: 9,
                text: s(b"?"),
            }))
            .unwrap();
        assert!(r.is_empty());
        ui.apply(&ServerPacket::Dialog(DialogS2C::Options {
            dialog: 1,
            options: vec![s(b"Yes"), s(b"No")],
        }))
        .unwrap();
        assert_eq!(ui.dialog(1).unwrap().lines, vec!["Hello".to_owned()]);
        assert!(ui.choose(1, 3).is_none());
        assert_eq!(
            ui.choose(1, 2),
            Some(ClientPacket::Dialog(DialogC2S::Chosen {
                script: 16,
                option: 2
            }))
        );
        // Chosen once: the options are gone until the script offers more.
        assert!(ui.choose(1, 1).is_none());
        ui.apply(&ServerPacket::Dialog(DialogS2C::Close { dialog: 1 }))
            .unwrap();
        assert!(ui.dialog(1).is_none());
    }

    #[test]
    fn the_quest_log_follows_new_update_complete_and_delete() {
        let mut ui = Ui::default();
        let (e, r) = ui
            .apply(&ServerPacket::QuestLog(QuestLog::New {
                name: s(b"Rats"),
                status: s(b"\xff\xff\xffKill 5"),
            }))
            .unwrap();
        assert!(r.is_empty());
        assert_eq!(
            e,
            Event::QuestUpdated {
                name: "Rats".into(),
                status: "Kill 5".into(),
                complete: false
            }
        );
        ui.apply(&ServerPacket::QuestLog(QuestLog::Update {
            name: s(b"RATS"),
            status: s(&QUEST_COMPLETED),
        }))
        .unwrap();
        let q = ui.quest("rats").unwrap();
        assert!(q.is_complete());
        assert_eq!(q.name, "Rats");
        let (e, _) = ui
            .apply(&ServerPacket::QuestLog(QuestLog::Delete {
                name: s(b"RATS"),
            }))
            .unwrap();
        assert_eq!(
            e,
            Event::QuestRemoved {
                name: "Rats".into()
            }
        );
        assert!(ui.quests().is_empty());
    }

    #[test]
    fn bars_are_created_at_once_and_input_waits_for_the_player() {
        let mut ui = Ui::default();
        let (_, r) = ui
            .apply(&ServerPacket::ProgressBar(ProgressBarS2C::Create {
                r: 1,
                g: 2,
                b: 3,
                x: 0.1,
                y: 0.1,
                w: 0.5,
                h: 0.1,
                script: 4,
                max: 10,
                value: 2,
                label: s(b"Work"),
            }))
            .unwrap();
        assert_eq!(
            r,
            vec![ClientPacket::ProgressBar(ProgressBarC2S::Created {
                script: 4,
                bar: 1
            })]
        );
        ui.apply(&ServerPacket::ProgressBar(ProgressBarS2C::Update {
            bar: 1,
            value: 9,
        }))
        .unwrap();
        assert_eq!(ui.bars()[&1].value, 9);
        assert!(ui.answer_input("x").is_none());
        ui.apply(&ServerPacket::ScriptInput(ScriptInputS2C {
            script: 5,
            kind: 0,
            title: s(b"Name"),
            prompt: s(b"Who?"),
        }))
        .unwrap();
        assert_eq!(
            ui.answer_input("Bob"),
            Some(ClientPacket::ScriptInput(ScriptInputC2S {
                script: 5,
                text: s(b"Bob")
            }))
        );
        assert!(ui.input().is_none());
    }
}
