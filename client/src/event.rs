//! Typed game events and actions on a [`Connection`] in the world: what a bot or a tool
//! reacts to (an actor appeared, moved, is gone or died; a stat changed; chat; the area
//! changed; kicked; items, gold and trade) instead of raw packets, and what it does (move,
//! attack, chat and commands, right-click, dismount, jump; the item actions are in
//! [`crate::items`]).

use shared::proto::{
    AttackActorC2S, AttackActorS2C, ChatColour, ChatMessageC2S, ClientPacket, Dismount, GoldChange,
    InventoryUpdateS2C, ItemString, JumpC2S, OpenTradingS2C, RightClick, ServerPacket,
    StandardUpdateC2S, StatUpdate, TradeWindow, XpUpdate,
};

use crate::conn::{Connection, Incoming};
use crate::error::ClientError;

/// Something that happened in the world, from one server packet.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// An actor came into view (`P_NewActor`).
    #[doc(alias = "P_NewActor")]
    ActorAppeared {
        /// Its RuntimeID.
        runtime_id: u16,
        /// Its actor template.
        template_id: u16,
        /// Its name.
        name: String,
        /// Where it stands.
        position: (f32, f32, f32),
        /// Whether it is a player (Realm Crafter's `human` flag).
        human: bool,
    },
    /// An actor's authoritative position (`P_StandardUpdate`; the player's own actor too).
    #[doc(alias = "P_StandardUpdate")]
    ActorMoved {
        /// Its RuntimeID.
        runtime_id: u16,
        /// X.
        x: f32,
        /// Z.
        z: f32,
        /// Where it is heading, X.
        dest_x: f32,
        /// Where it is heading, Z.
        dest_z: f32,
    },
    /// An actor left view (`P_ActorGone`).
    #[doc(alias = "P_ActorGone")]
    ActorGone {
        /// Its RuntimeID.
        runtime_id: u16,
    },
    /// An actor died (`P_ActorDead`).
    #[doc(alias = "P_ActorDead")]
    ActorDied {
        /// Its RuntimeID.
        runtime_id: u16,
        /// Who killed it, when told.
        killer: Option<u16>,
    },
    /// An attack landed or missed (`P_AttackActor`).
    Attack(AttackActorS2C),
    /// An attribute, Health, Speed, Energy or reputation changed (`P_StatUpdate`).
    StatChanged(StatUpdate),
    /// Experience (`P_XPUpdate`).
    Xp(XpUpdate),
    /// An actor effect (buff or debuff) of the player was added, changed an attribute or
    /// ended (`P_ActorEffect`).
    #[doc(alias = "P_ActorEffect")]
    Effect(shared::proto::ActorEffect),
    /// The player learned, forgot or levelled an ability (`P_KnownSpellUpdate`).
    #[doc(alias = "P_KnownSpellUpdate")]
    Spell(shared::proto::KnownSpellUpdate),
    /// Gold (`P_GoldChange`).
    #[doc(alias = "P_GoldChange")]
    Gold(GoldChange),
    /// An item was given to the player (`P_InventoryUpdate "G"`): the server has already
    /// placed it by the first-fit rule; answer with
    /// [`Connection::answer_offer`](crate::Connection::answer_offer).
    #[doc(alias = "P_InventoryUpdate")]
    ItemOffered {
        /// The offer's handle.
        item_handle: u32,
        /// The item.
        item_id: u16,
        /// How many.
        amount: u16,
        /// The slot the SDK's view placed it in (its first slot when it took several), or
        /// `None` when the SDK does not know the item's template or it did not fit
        /// (see [`crate::items`]). From a bare `Event::from` it is always `None`.
        slot: Option<u8>,
    },
    /// Items were taken from a slot (`"T"`: a trade, a sale, a script).
    ItemTaken {
        /// Slot.
        slot: u8,
        /// How many.
        amount: u16,
    },
    /// The player's pickup went into a slot (`"R"`).
    PickedUp {
        /// The dropped item's handle.
        dropped: u32,
        /// Slot.
        slot: u8,
    },
    /// An item lies on the ground (`"D"`: dropped, spawned, or there on arrival).
    GroundItemAppeared {
        /// Its handle (for [`Connection::pick_up`](crate::Connection::pick_up)).
        dropped: u32,
        /// Stack size.
        amount: u16,
        /// Where.
        position: (f32, f32, f32),
        /// The item.
        item: ItemString,
    },
    /// Someone else picked up a dropped item (`"P"`).
    GroundItemGone {
        /// Its handle.
        dropped: u32,
    },
    /// An actor's visible equipment (`"O"`; item ids, 65535 = none).
    EquipmentChanged {
        /// Whose.
        runtime_id: u16,
        /// Weapon.
        weapon: u16,
        /// Shield.
        shield: u16,
        /// Chest.
        chest: u16,
        /// Hat.
        hat: u16,
        /// Gubbin flags.
        gubbins: [u8; 6],
    },
    /// An item's health changed (`"H"`, or `P_ItemHealth` from combat wear; 0 = broken).
    #[doc(alias = "P_ItemHealth")]
    ItemHealth {
        /// Slot.
        slot: u8,
        /// Health 0..100.
        health: u16,
    },
    /// A chunk of a trade window that does not complete it (`P_OpenTrading`), or chunks
    /// that joined into no valid window.
    #[doc(alias = "P_OpenTrading")]
    TradeWindowPart {
        /// This chunk's number.
        part: u8,
        /// How many.
        parts: u8,
    },
    /// A trade window opened: a player trade, or a shop with its wares.
    TradeOpened(TradeWindow),
    /// The trade window closed (`P_CloseTrading`: settled, refused or cancelled).
    #[doc(alias = "P_CloseTrading")]
    TradeClosed,
    /// The trade partner offered (or withdrew, amount 0) items from a trade slot
    /// (`P_UpdateTrading`).
    #[doc(alias = "P_UpdateTrading")]
    PartnerOffer {
        /// The partner's trade slot (0..31).
        slot: u8,
        /// How many (0 = withdrawn).
        amount: u16,
        /// The item, when offered.
        item: Option<ItemString>,
    },
    /// A chat line (`P_ChatMessage`).
    #[doc(alias = "P_ChatMessage")]
    Chat {
        /// The colour (system yellow, red, magenta, green, RGB or plain).
        colour: ChatColour,
        /// The text (Latin-1, shown as UTF-8).
        text: String,
    },
    /// The player is now in an area (`P_ChangeArea`): after a portal, a warp, a respawn, or
    /// being put back after its zone node was lost. The SDK acknowledges it.
    #[doc(alias = "P_ChangeArea")]
    AreaChanged {
        /// The area's name.
        area: String,
        /// Where the player stands.
        position: (f32, f32, f32),
        /// Facing, degrees.
        yaw: f32,
        /// The client's `CurrentAreaID` for the instance.
        instance_handle: u32,
    },
    /// The player was kicked (`P_KickedPlayer`); the connection closes with code 1.
    #[doc(alias = "P_KickedPlayer")]
    Kicked,
    /// A script opened a dialog window (`P_Dialog "N"`); the SDK has answered with its own
    /// handle, `dialog`.
    #[doc(alias = "OpenDialog")]
    DialogOpened {
        /// This client's handle for the window.
        dialog: u32,
        /// Its title.
        title: String,
        /// The actor the player talks to, if any.
        context: Option<u16>,
    },
    /// A line of text in a dialog (`"T"`, acknowledged by the SDK).
    #[doc(alias = "DialogOutput")]
    DialogText {
        /// The window.
        dialog: u32,
        /// The line.
        text: String,
        /// Its colour.
        colour: (u8, u8, u8),
    },
    /// The script waits for a choice (`"O"`): answer with
    /// [`Connection::choose`](crate::Connection::choose).
    #[doc(alias = "DialogInput")]
    DialogOptions {
        /// The window.
        dialog: u32,
        /// The options, in order (choose 1-based).
        options: Vec<String>,
    },
    /// A dialog window closed (`"C"`).
    #[doc(alias = "CloseDialog")]
    DialogClosed {
        /// The window.
        dialog: u32,
    },
    /// A quest was added or its status changed (`P_QuestLog "N"`/`"U"`).
    #[doc(alias = "P_QuestLog")]
    QuestUpdated {
        /// The quest's name.
        name: String,
        /// Its status text (`"Completed!"` when complete).
        status: String,
        /// Whether it is completed.
        complete: bool,
    },
    /// A quest left the log (`"D"`).
    QuestRemoved {
        /// The quest's name.
        name: String,
    },
    /// A script asks for text (`P_ScriptInput`): answer with
    /// [`Connection::answer_input`](crate::Connection::answer_input).
    #[doc(alias = "Input")]
    InputRequested {
        /// Window title.
        title: String,
        /// The question.
        prompt: String,
        /// 0 any text, 1 no digits, 2 an integer, 3 a decimal.
        kind: u8,
    },
    /// A progress bar was created or updated (`value` set), or removed (`None`)
    /// (`P_ProgressBar`).
    #[doc(alias = "P_ProgressBar")]
    ProgressBar {
        /// This client's handle.
        bar: u32,
        /// Its label.
        label: String,
        /// Its maximum.
        max: u16,
        /// Its value, `None` once removed.
        value: Option<u16>,
    },
    /// A speech bubble over an actor (`P_BubbleMessage`).
    #[doc(alias = "BubbleOutput")]
    Bubble {
        /// The actor.
        runtime_id: u16,
        /// The text.
        text: String,
    },
    /// A sound, music, a speech sample or a screen flash (`P_Sound`, `P_Music`,
    /// `P_Speech`, `P_ScreenFlash`).
    Cosmetic(ServerPacket),
    /// Any other packet.
    Other(ServerPacket),
}

fn text(b: &[u8]) -> String {
    b.iter().map(|&c| char::from(c)).collect()
}

impl From<ServerPacket> for Event {
    fn from(p: ServerPacket) -> Self {
        match p {
            ServerPacket::NewActor(a) => Self::ActorAppeared {
                runtime_id: a.runtime_id,
                template_id: a.template_id,
                name: text(a.actor_name.as_bytes()),
                position: (a.x, a.y, a.z),
                human: a.human != 0,
            },
            ServerPacket::StandardUpdate(u) => Self::ActorMoved {
                runtime_id: u.runtime_id,
                x: u.x,
                z: u.z,
                dest_x: u.dest_x,
                dest_z: u.dest_z,
            },
            ServerPacket::ActorGone(g) => Self::ActorGone {
                runtime_id: u16::try_from(g.runtime_id).unwrap_or(u16::MAX),
            },
            ServerPacket::ActorDead(d) => Self::ActorDied {
                runtime_id: d.runtime_id,
                killer: d.killer,
            },
            ServerPacket::AttackActor(a) => Self::Attack(a),
            ServerPacket::StatUpdate(s) => Self::StatChanged(s),
            ServerPacket::XpUpdate(x) => Self::Xp(x),
            ServerPacket::ActorEffect(e) => Self::Effect(e),
            ServerPacket::KnownSpellUpdate(u) => Self::Spell(u),
            ServerPacket::GoldChange(g) => Self::Gold(g),
            ServerPacket::ChatMessage(m) => Self::Chat {
                colour: m.colour,
                text: text(m.text.as_bytes()),
            },
            ServerPacket::ChangeArea(a) => Self::AreaChanged {
                area: text(a.area.as_bytes()),
                position: (a.x, a.y, a.z),
                yaw: a.yaw,
                instance_handle: a.instance_handle,
            },
            ServerPacket::KickedPlayer(_) => Self::Kicked,
            ServerPacket::BubbleMessage(b) => Self::Bubble {
                runtime_id: b.actor,
                text: text(b.text.as_bytes()),
            },
            p @ (ServerPacket::Sound(_)
            | ServerPacket::Music(_)
            | ServerPacket::Speech(_)
            | ServerPacket::ScreenFlash(_)) => Self::Cosmetic(p),
            ServerPacket::Dialog(_)
            | ServerPacket::ProgressBar(_)
            | ServerPacket::ScriptInput(_)
            | ServerPacket::QuestLog(_) => {
                // Script windows need the connection's state: see `crate::ui::Ui::apply`.
                let mut ui = crate::ui::Ui::default();
                match ui.apply(&p) {
                    Some((e, _)) => e,
                    None => Self::Other(p),
                }
            }
            ServerPacket::InventoryUpdate(u) => inventory_event(u),
            ServerPacket::ItemHealth(h) => Self::ItemHealth {
                slot: h.slot,
                health: h.health,
            },
            ServerPacket::OpenTrading(c) => window_event(c),
            ServerPacket::CloseTrading(_) => Self::TradeClosed,
            ServerPacket::UpdateTrading(u) => Self::PartnerOffer {
                slot: u.slot,
                amount: u.amount,
                item: u.item,
            },
            other => Self::Other(other),
        }
    }
}

fn inventory_event(u: InventoryUpdateS2C) -> Event {
    use InventoryUpdateS2C as I;
    match u {
        I::Taken { slot, amount } => Event::ItemTaken { slot, amount },
        I::Received { dropped, slot } => Event::PickedUp { dropped, slot },
        I::Gone { dropped } => Event::GroundItemGone { dropped },
        I::Dropped {
            amount,
            x,
            y,
            z,
            dropped,
            item,
        } => Event::GroundItemAppeared {
            dropped,
            amount,
            position: (x, y, z),
            item,
        },
        I::Equipment {
            runtime_id,
            weapon,
            shield,
            chest,
            hat,
            gubbins,
        } => Event::EquipmentChanged {
            runtime_id,
            weapon,
            shield,
            chest,
            hat,
            gubbins,
        },
        I::Offer {
            item_handle,
            item_id,
            amount,
        } => Event::ItemOffered {
            item_handle,
            item_id,
            amount,
            slot: None,
        },
        I::Health { slot, health } => Event::ItemHealth {
            slot,
            health: u16::from(health),
        },
    }
}

/// A lone chunk: a whole window when it is the only part.
fn window_event(c: OpenTradingS2C) -> Event {
    if c.parts == 1
        && let Some(Ok(w)) = OpenTradingS2C::assemble(std::slice::from_ref(&c))
            .map(|p| TradeWindow::from_payload(&p))
    {
        return Event::TradeOpened(w);
    }
    Event::TradeWindowPart {
        part: c.part,
        parts: c.parts,
    }
}

impl From<Incoming> for Event {
    fn from(i: Incoming) -> Self {
        i.packet.into()
    }
}

impl Connection {
    /// The next event (cancel-safe, like [`recv`](Self::recv)).
    ///
    /// Item, gold and trade packets also update the SDK's view ([`Connection::items`]),
    /// `P_KnownSpellUpdate` the ability book ([`Connection::spells`]), and a `/time` reply
    /// resyncs its game clock ([`Connection::game_time`]).
    pub async fn next_event(&mut self) -> Result<Event, ClientError> {
        let i = self.recv().await?;
        if let ServerPacket::KnownSpellUpdate(u) = &i.packet {
            self.spells.apply(u);
        }
        if let Some(e) = self.ui_event(&i.packet)? {
            return Ok(e);
        }
        let e = self.items.event(i.packet);
        self.clock_sees(&e);
        Ok(e)
    }

    /// Stand at a point (a `P_StandardUpdate` datagram with the destination at the same
    /// point). Send at most five a second, as Realm Crafter's client does; the server
    /// refuses steps longer than its speed check allows.
    #[doc(alias = "P_StandardUpdate")]
    pub fn move_to(&self, x: f32, y: f32, z: f32, running: bool) -> Result<(), ClientError> {
        self.send_update(&StandardUpdateC2S {
            dest_x: x,
            dest_z: z,
            y,
            x,
            z,
            is_running: u8::from(running),
            walking_backward: 0,
        })
    }

    /// Attack an actor by RuntimeID (`P_AttackActor`).
    #[doc(alias = "P_AttackActor")]
    pub async fn attack(&mut self, target: u16) -> Result<(), ClientError> {
        self.send(&ClientPacket::AttackActor(AttackActorC2S { target }))
            .await
    }

    /// Say something in the zone (`P_ChatMessage`); a leading `/` makes it a command.
    #[doc(alias = "P_ChatMessage")]
    pub async fn chat(&mut self, line: &str) -> Result<(), ClientError> {
        self.send(&ClientPacket::ChatMessage(ChatMessageC2S {
            text: line.into(),
        }))
        .await
    }

    /// Run a chat command: `command("yell hello")` sends `/yell hello`.
    pub async fn command(&mut self, command: &str) -> Result<(), ClientError> {
        self.chat(&format!("/{command}")).await
    }

    /// Right-click an actor (its script, or mount it) (`P_RightClick`).
    #[doc(alias = "P_RightClick")]
    pub async fn right_click(&mut self, target: u16) -> Result<(), ClientError> {
        self.send(&ClientPacket::RightClick(RightClick { target }))
            .await
    }

    /// Get off the mount (`P_Dismount`).
    #[doc(alias = "P_Dismount")]
    pub async fn dismount(&mut self) -> Result<(), ClientError> {
        self.send(&ClientPacket::Dismount(Dismount {})).await
    }

    /// Jump (`P_Jump`).
    #[doc(alias = "P_Jump")]
    pub async fn jump(&mut self) -> Result<(), ClientError> {
        self.send(&ClientPacket::Jump(JumpC2S {})).await
    }
}
