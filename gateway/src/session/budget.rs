//! Input budgets: what one in-game player may send per second, per kind of action, so that
//! no player can cost the zone, the other players or the gateway more than a client playing
//! the game does (issue 36).
//!
//! Every in-game client frame and position datagram passes [`InputBudget::admit`] before it
//! leaves the gateway, whatever transport it came on: each [`Action`] has its own token
//! bucket (a rate per second and a burst), and the frame's bytes take from one more bucket
//! shared by all reliable frames. Broadcast-causing actions (a jump, an equipment change, a
//! right-click, an item used, a dialog answer, chat) have buckets of their own, so a flood of
//! one kind never starves another and never reaches the zone.
//!
//! Past its budget an action is dropped and counted ([`Verdict::Drop`]). Each drop adds one
//! to the player's *abuse score*, which drains by [`KICK_DECAY_PER_SECOND`]; once it passes
//! `kick_drops` the player is disconnected ([`Verdict::Kick`], close code 4). A client that
//! is merely a little too fast loses the excess and plays on; a flood is disconnected within
//! a few hundred frames.
//!
//! Sans-IO: time is the caller's `now_ms`, all arithmetic is integer (milli-tokens).

use std::fmt;

use shared::proto::ids;

/// How fast the abuse score drains (drops forgiven per second).
pub const KICK_DECAY_PER_SECOND: u64 = 20;

/// A kind of client action with a budget of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// `P_StandardUpdate` (datagrams and reliable frames).
    Position,
    /// `P_Jump` (broadcast to the zone).
    Jump,
    /// `P_InventoryUpdate`, `P_ActionBarUpdate`: equipment changes start `Equip Change`.
    Inventory,
    /// `P_ItemScript`, `P_EatItem`: item scripts.
    ItemUse,
    /// `P_AttackActor`.
    Attack,
    /// `P_SpellUpdate`.
    Spell,
    /// `P_RightClick`, `P_Examine`, `P_Trade`: they start scripts.
    Interact,
    /// `P_Dialog`, `P_ProgressBar`, `P_ScriptInput`: answers to script windows.
    Dialog,
    /// `P_OpenTrading`, `P_UpdateTrading`, `P_CloseTrading`.
    Trading,
    /// `P_ChangeArea`, `P_RepositionActor` (acknowledgements), `P_Dismount`.
    Area,
    /// `P_ChatMessage` (zone chat and every `/` command).
    Chat,
    /// Anything else (the zone refuses it, but it still costs a trip).
    Other,
    /// Before the game: the login flow's packets (`P_VerifyAccount`, `P_FetchCharacter`,
    /// `P_CreateCharacter`, `P_DeleteCharacter`, `P_ChangePassword`, `P_StartGame`, ...;
    /// each character created or deleted is a write to the store).
    Menu,
}

impl Action {
    /// Every action, in [`Action::index`] order.
    pub const ALL: [Self; 13] = [
        Self::Position,
        Self::Jump,
        Self::Inventory,
        Self::ItemUse,
        Self::Attack,
        Self::Spell,
        Self::Interact,
        Self::Dialog,
        Self::Trading,
        Self::Area,
        Self::Chat,
        Self::Other,
        Self::Menu,
    ];

    /// The action a client packet type stands for.
    #[doc(alias = "P_StandardUpdate")]
    #[doc(alias = "P_Jump")]
    pub fn of(ty: u8) -> Self {
        match ty {
            ids::P_STANDARD_UPDATE => Self::Position,
            ids::P_JUMP => Self::Jump,
            ids::P_INVENTORY_UPDATE | ids::P_ACTION_BAR_UPDATE => Self::Inventory,
            ids::P_ITEM_SCRIPT | ids::P_EAT_ITEM => Self::ItemUse,
            ids::P_ATTACK_ACTOR => Self::Attack,
            ids::P_SPELL_UPDATE => Self::Spell,
            ids::P_RIGHT_CLICK | ids::P_EXAMINE | ids::P_TRADE => Self::Interact,
            ids::P_DIALOG | ids::P_PROGRESS_BAR | ids::P_SCRIPT_INPUT => Self::Dialog,
            ids::P_OPEN_TRADING | ids::P_UPDATE_TRADING | ids::P_CLOSE_TRADING => Self::Trading,
            ids::P_CHANGE_AREA | ids::P_REPOSITION_ACTOR | ids::P_DISMOUNT => Self::Area,
            ids::P_CHAT_MESSAGE => Self::Chat,
            ids::P_FETCH_ITEMS | ids::P_FETCH_UPDATE_FILES => Self::Menu,
            ty if super::MENU_PACKETS.contains(&ty) => Self::Menu,
            _ => Self::Other,
        }
    }

    /// Its position in [`Action::ALL`] (and in every per-action array).
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The name used in settings, logs and metric labels.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Position => "position",
            Self::Jump => "jump",
            Self::Inventory => "inventory",
            Self::ItemUse => "item_use",
            Self::Attack => "attack",
            Self::Spell => "spell",
            Self::Interact => "interact",
            Self::Dialog => "dialog",
            Self::Trading => "trading",
            Self::Area => "area",
            Self::Chat => "chat",
            Self::Other => "other",
            Self::Menu => "menu",
        }
    }

    /// The action of a settings name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A rate: `per_second` on average, `burst` at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    /// Sustained rate (per second).
    pub per_second: u32,
    /// Most at once.
    pub burst: u32,
}

impl Rate {
    /// `per_second`/s with a burst of `burst`.
    pub const fn new(per_second: u32, burst: u32) -> Self {
        Self { per_second, burst }
    }
}

/// Every budget of a player: one [`Rate`] per [`Action`], the bytes of reliable frames per
/// second, and the abuse score past which the player is disconnected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Budgets {
    /// Per action, in [`Action::ALL`] order.
    pub actions: [Rate; Action::ALL.len()],
    /// Bytes of reliable frames (headers included) per second and at once.
    pub bytes: Rate,
    /// Abuse score (drops, less [`KICK_DECAY_PER_SECOND`] a second) past which the player is
    /// disconnected; 0 never disconnects.
    pub kick_drops: u32,
}

impl Default for Budgets {
    /// Comfortably above what Realm Crafter's client sends while played (positions at up
    /// to 20 Hz, a jump a second, a few inventory moves a second), far below a flood.
    fn default() -> Self {
        let mut actions = [Rate::new(4, 8); Action::ALL.len()];
        for (a, r) in [
            (Action::Position, Rate::new(40, 40)),
            (Action::Jump, Rate::new(2, 4)),
            (Action::Inventory, Rate::new(8, 24)),
            (Action::ItemUse, Rate::new(4, 8)),
            (Action::Attack, Rate::new(10, 20)),
            (Action::Spell, Rate::new(8, 16)),
            (Action::Interact, Rate::new(4, 8)),
            (Action::Dialog, Rate::new(8, 16)),
            (Action::Trading, Rate::new(10, 30)),
            (Action::Area, Rate::new(4, 8)),
            (Action::Chat, Rate::new(2, 8)),
            (Action::Other, Rate::new(4, 8)),
            (Action::Menu, Rate::new(4, 20)),
        ] {
            if let Some(slot) = actions.get_mut(a.index()) {
                *slot = r;
            }
        }
        Self {
            actions,
            bytes: Rate::new(32 * 1024, 64 * 1024),
            kick_drops: 200,
        }
    }
}

/// A `input_budgets` setting that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BudgetSpecError(String);

impl Budgets {
    /// The rate of `action`.
    pub fn rate(&self, action: Action) -> Rate {
        self.actions
            .get(action.index())
            .copied()
            .unwrap_or(Rate::new(1, 1))
    }

    /// Set the rate of `action`.
    pub fn set(&mut self, action: Action, rate: Rate) {
        if let Some(slot) = self.actions.get_mut(action.index()) {
            *slot = rate;
        }
    }

    /// Apply an `input_budgets` setting: `name=RATE/BURST` pairs separated by commas or
    /// spaces (`jump=2/4, inventory=8/24, bytes=32768/65536`); names are the actions'
    /// ([`Action::name`]) and `bytes`. Chat is set by `chat_per_second` and `chat_burst`.
    pub fn apply_spec(&mut self, spec: &str) -> Result<(), BudgetSpecError> {
        let err = |m: String| Err(BudgetSpecError(m));
        for item in spec
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|s| !s.is_empty())
        {
            let Some((name, rate)) = item.split_once('=') else {
                return err(format!("`{item}`: expected name=RATE/BURST"));
            };
            let Some((per, burst)) = rate.split_once('/') else {
                return err(format!("`{item}`: expected name=RATE/BURST"));
            };
            let (Ok(per), Ok(burst)) = (per.trim().parse::<u32>(), burst.trim().parse::<u32>())
            else {
                return err(format!("`{item}`: RATE and BURST are whole numbers"));
            };
            if per == 0 || burst == 0 || per > 1_000_000 || burst > 10_000_000 {
                return err(format!(
                    "`{item}`: RATE must be 1..=1000000 and BURST 1..=10000000"
                ));
            }
            let name = name.trim();
            if name == "bytes" {
                self.bytes = Rate::new(per, burst);
                continue;
            }
            match Action::from_name(name) {
                Some(Action::Chat) => {
                    return err("chat is set by chat_per_second and chat_burst".into());
                }
                Some(a) => self.set(a, Rate::new(per, burst)),
                None => {
                    let names: Vec<&str> = Action::ALL.iter().map(|a| a.name()).collect();
                    return err(format!(
                        "unknown action `{name}` (known: {}, bytes)",
                        names.join(", ")
                    ));
                }
            }
        }
        Ok(())
    }
}

/// A token bucket in milli-tokens on the caller's clock.
#[derive(Clone, Copy, Debug)]
struct Bucket {
    milli: u64,
    at_ms: u64,
}

impl Bucket {
    fn full(rate: Rate, now_ms: u64) -> Self {
        Self {
            milli: u64::from(rate.burst) * 1000,
            at_ms: now_ms,
        }
    }

    /// Take `n` tokens if there are that many.
    fn take(&mut self, rate: Rate, now_ms: u64, n: u64) -> bool {
        let cap = u64::from(rate.burst) * 1000;
        let dt = now_ms.saturating_sub(self.at_ms);
        // `per_second` tokens a second is `per_second` milli-tokens a millisecond.
        self.milli = self
            .milli
            .saturating_add(dt.saturating_mul(u64::from(rate.per_second)))
            .min(cap);
        self.at_ms = self.at_ms.max(now_ms);
        let need = n.saturating_mul(1000);
        if self.milli >= need {
            self.milli -= need;
            true
        } else {
            false
        }
    }
}

/// What to do with a client input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Within budget: forward it.
    Admit,
    /// Over the action's budget (or the bytes budget): drop it and count it.
    Drop(Action),
    /// Dropped, and the player's abuse score passed `kick_drops`: disconnect it.
    Kick(Action),
}

/// One player's budgets and what is left of them.
#[derive(Clone, Debug)]
pub struct InputBudget {
    budgets: Budgets,
    buckets: [Bucket; Action::ALL.len()],
    bytes: Bucket,
    /// Abuse score in milli-drops and when it was last drained.
    score_milli: u64,
    score_at_ms: u64,
    dropped: u64,
}

impl InputBudget {
    /// A player entering the game at `now_ms`, every bucket full.
    pub fn new(budgets: Budgets, now_ms: u64) -> Self {
        let buckets = std::array::from_fn(|i| {
            let rate = budgets.actions.get(i).copied().unwrap_or(Rate::new(1, 1));
            Bucket::full(rate, now_ms)
        });
        let bytes = Bucket::full(budgets.bytes, now_ms);
        Self {
            budgets,
            buckets,
            bytes,
            score_milli: 0,
            score_at_ms: now_ms,
            dropped: 0,
        }
    }

    /// A reliable frame of type `ty` and `len` bytes (header included).
    pub fn admit(&mut self, now_ms: u64, ty: u8, len: usize) -> Verdict {
        let action = Action::of(ty);
        let bytes = u64::try_from(len).unwrap_or(u64::MAX);
        self.admit_n(now_ms, action, 1, Some(bytes))
    }

    /// `frames` position updates in one datagram (datagrams are bounded by the path, so
    /// they take from no bytes budget).
    pub fn admit_positions(&mut self, now_ms: u64, frames: usize) -> Verdict {
        let n = u64::try_from(frames).unwrap_or(u64::MAX).max(1);
        self.admit_n(now_ms, Action::Position, n, None)
    }

    fn admit_n(&mut self, now_ms: u64, action: Action, n: u64, bytes: Option<u64>) -> Verdict {
        let rate = self.budgets.rate(action);
        let ok = self
            .buckets
            .get_mut(action.index())
            .is_some_and(|b| b.take(rate, now_ms, n));
        let ok = ok
            && bytes.is_none_or(|len| {
                // The bytes bucket's token is one byte.
                self.bytes.take(self.budgets.bytes, now_ms, len.max(1))
            });
        if ok {
            return Verdict::Admit;
        }
        self.dropped += 1;
        if self.over_the_line(now_ms) {
            Verdict::Kick(action)
        } else {
            Verdict::Drop(action)
        }
    }

    /// Add a drop to the abuse score; whether it passed `kick_drops`.
    fn over_the_line(&mut self, now_ms: u64) -> bool {
        let dt = now_ms.saturating_sub(self.score_at_ms);
        self.score_milli = self
            .score_milli
            .saturating_sub(dt.saturating_mul(KICK_DECAY_PER_SECOND))
            .saturating_add(1000);
        self.score_at_ms = self.score_at_ms.max(now_ms);
        self.budgets.kick_drops > 0 && self.score_milli > u64::from(self.budgets.kick_drops) * 1000
    }

    /// Inputs dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget() -> InputBudget {
        InputBudget::new(Budgets::default(), 1_000)
    }

    #[test]
    fn a_burst_then_the_rate() {
        let mut b = budget();
        // Jump: 4 at once, then 2 a second.
        for _ in 0..4 {
            assert_eq!(b.admit(1_000, ids::P_JUMP, 3), Verdict::Admit);
        }
        assert_eq!(b.admit(1_000, ids::P_JUMP, 3), Verdict::Drop(Action::Jump));
        assert_eq!(b.admit(1_400, ids::P_JUMP, 3), Verdict::Drop(Action::Jump));
        assert_eq!(b.admit(1_500, ids::P_JUMP, 3), Verdict::Admit);
        assert_eq!(b.dropped(), 2);
    }

    #[test]
    fn actions_have_their_own_buckets() {
        let mut b = budget();
        for _ in 0..4 {
            b.admit(1_000, ids::P_JUMP, 3);
        }
        assert!(matches!(b.admit(1_000, ids::P_JUMP, 3), Verdict::Drop(_)));
        // Jumping out of budget costs nothing of the inventory's or the positions'.
        assert_eq!(b.admit(1_000, ids::P_INVENTORY_UPDATE, 8), Verdict::Admit);
        assert_eq!(b.admit_positions(1_000, 2), Verdict::Admit);
    }

    #[test]
    fn a_player_at_the_rate_is_never_dropped() {
        let mut b = budget();
        // An hour of positions at 20 Hz, a jump a second, an equipment change every 200 ms.
        let mut t = 1_000;
        for i in 0..72_000u64 {
            t += 50;
            assert_eq!(b.admit_positions(t, 1), Verdict::Admit);
            if i % 20 == 0 {
                assert_eq!(b.admit(t, ids::P_JUMP, 3), Verdict::Admit);
            }
            if i % 4 == 0 {
                assert_eq!(b.admit(t, ids::P_INVENTORY_UPDATE, 9), Verdict::Admit);
            }
        }
        assert_eq!(b.dropped(), 0);
    }

    #[test]
    fn a_flood_is_dropped_then_kicked() {
        let mut b = budget();
        let mut kicked_at = None;
        // 275,000 equipment changes a second: one every few microseconds, all at one ms.
        for i in 0..10_000u32 {
            match b.admit(1_000 + u64::from(i / 275), ids::P_INVENTORY_UPDATE, 9) {
                Verdict::Kick(Action::Inventory) => {
                    kicked_at = Some(i);
                    break;
                }
                Verdict::Admit | Verdict::Drop(Action::Inventory) => {}
                other => panic!("{other:?}"),
            }
        }
        let i = kicked_at.expect("kicked");
        // The burst, then `kick_drops` drops.
        assert!((200..260).contains(&i), "kicked after {i}");
    }

    #[test]
    fn a_little_too_fast_is_dropped_but_never_kicked() {
        let mut b = budget();
        // Five jumps a second for ten minutes against a budget of two.
        let mut drops = 0;
        for i in 0..3_000u64 {
            match b.admit(1_000 + i * 200, ids::P_JUMP, 3) {
                Verdict::Admit => {}
                Verdict::Drop(_) => drops += 1,
                Verdict::Kick(_) => panic!("kicked at {i}"),
            }
        }
        assert!(drops > 1_500, "{drops}");
    }

    #[test]
    fn big_frames_take_from_the_bytes_budget() {
        let mut b = budget();
        // 64 KiB at once of chat-sized frames of another action: the bytes run out first.
        let mut admitted = 0;
        for _ in 0..100 {
            if b.admit(1_000, ids::P_DIALOG, 8_000) == Verdict::Admit {
                admitted += 1;
            }
        }
        assert_eq!(admitted, 8);
    }

    #[test]
    fn settings_parse_and_name_what_is_wrong() {
        let mut b = Budgets::default();
        b.apply_spec("jump=1/2, inventory=20/40 bytes=1000/2000")
            .unwrap();
        assert_eq!(b.rate(Action::Jump), Rate::new(1, 2));
        assert_eq!(b.rate(Action::Inventory), Rate::new(20, 40));
        assert_eq!(b.bytes, Rate::new(1000, 2000));
        for (bad, says) in [
            ("jump", "expected"),
            ("jump=1", "expected"),
            ("jump=a/2", "whole numbers"),
            ("jump=0/2", "RATE must be"),
            ("fly=1/2", "unknown action `fly`"),
            ("chat=1/2", "chat_per_second"),
        ] {
            let e = Budgets::default().apply_spec(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
        assert!(Budgets::default().apply_spec("").is_ok());
    }

    #[test]
    fn every_packet_type_has_an_action_and_names_round_trip() {
        for a in Action::ALL {
            assert_eq!(Action::from_name(a.name()), Some(a));
            assert_eq!(Action::ALL.get(a.index()), Some(&a));
        }
        for ty in 0..=255u8 {
            let _ = Action::of(ty);
        }
        assert_eq!(Action::of(ids::P_JUMP), Action::Jump);
        assert_eq!(Action::of(ids::P_CREATE_CHARACTER), Action::Menu);
        assert_eq!(Action::of(ids::P_START_GAME), Action::Menu);
    }
}
