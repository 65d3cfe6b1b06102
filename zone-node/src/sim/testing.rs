//! `SimHarness`: build a zone on a small hand-made area (or any content), spawn players
//! and NPCs, push inputs, run N ticks of 33 ms, and inspect state and outputs.
//!
//! Available to unit tests and, with the `testing` feature, to integration tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::Arc;

use super::ZoneSim;
use super::area::{
    AreaData, Environment, FixedAttributes, GameRules, Portal, TemplateProps, Water, Waypoint,
    ZoneContent,
};
use super::events::{
    ActorState, Arrival, PlayerAction, PlayerKey, StandardUpdateIn, TickStats, ZoneInput,
    ZoneOutput,
};
use super::state::{Actor, ActorId, ZoneConfig};

/// Template ids of the harness content.
pub mod templates {
    /// A walking player race.
    pub const HUMAN: u16 = 1;
    /// An aggressive walking NPC.
    pub const WOLF: u16 = 2;
    /// A flying NPC.
    pub const BIRD: u16 = 3;
    /// A swimming NPC.
    pub const FISH: u16 = 4;
    /// A rideable NPC.
    pub const HORSE: u16 = 5;
}

/// Attribute indices of the harness content.
pub mod attrs {
    /// Health.
    pub const HEALTH: u8 = 0;
    /// Energy.
    pub const ENERGY: u8 = 1;
    /// Strength.
    pub const STRENGTH: u8 = 2;
    /// Breath.
    pub const BREATH: u8 = 3;
    /// Speed.
    pub const SPEED: u8 = 4;
    /// Dexterity (not engine-bound).
    pub const DEXTERITY: u8 = 5;
    /// Toughness.
    pub const TOUGHNESS: u8 = 6;
}

/// One `P_StandardUpdate` a player received.
#[derive(Clone, Debug, PartialEq)]
pub struct SeenUpdate {
    /// Actor.
    pub rid: u16,
    /// X.
    pub x: f32,
    /// Z.
    pub z: f32,
    /// Running.
    pub running: bool,
    /// Backward.
    pub backward: bool,
    /// Mount RID.
    pub mount: u16,
    /// Tail bytes (Energy or flying Y).
    pub tail: Vec<u8>,
}

/// Split framed bytes into `(type, payload)`; panics on malformed framing (test helper).
pub fn frames(bytes: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let len = u16::from_le_bytes([bytes[i], bytes[i + 1]]) as usize;
        assert!(len >= 1, "zero-length frame");
        let t = bytes[i + 2];
        out.push((t, bytes[i + 3..i + 2 + len].to_vec()));
        i += 2 + len;
    }
    assert_eq!(i, bytes.len(), "frames do not parse to the end");
    out
}

/// The harness's area: 2 km square, a loop of waypoints, portals "Begin" and "Gate" (to
/// area "Elsewhere"), one water volume at (100..140, 100..140) with surface Y 10 and damage 5.
pub fn test_content() -> ZoneContent {
    let mut waypoints = Vec::new();
    for i in 0..8u16 {
        let ang = f32::from(i) * std::f32::consts::TAU / 8.0;
        waypoints.push(Waypoint {
            x: 300.0 + 50.0 * ang.cos(),
            y: 0.0,
            z: 300.0 + 50.0 * ang.sin(),
            next_a: Some((i + 1) % 8),
            next_b: None,
            prev: Some((i + 7) % 8),
            pause_s: 0,
        });
    }
    let area = AreaData {
        name: "Testland".into(),
        pvp: false,
        gravity: 300,
        outdoors: true,
        waypoints,
        portals: vec![
            Portal {
                name: "Begin".into(),
                x: 10.0,
                y: 0.0,
                z: 10.0,
                size: 3.0,
                yaw: 90.0,
                ..Portal::default()
            },
            Portal {
                name: "Gate".into(),
                link_area: "Elsewhere".into(),
                link_name: "Arrival".into(),
                x: 500.0,
                y: 0.0,
                z: 500.0,
                size: 3.0,
                ..Portal::default()
            },
        ],
        water: vec![Water {
            x: 100.0,
            y: 10.0,
            z: 100.0,
            width: 40.0,
            depth: 40.0,
            damage: 5,
            damage_type: 3,
        }],
        ..AreaData::default()
    };
    let mut attributes = vec![(0, 100); 40];
    attributes[usize::from(attrs::HEALTH)] = (100, 100);
    attributes[usize::from(attrs::ENERGY)] = (100, 100);
    attributes[usize::from(attrs::BREATH)] = (20, 20);
    attributes[usize::from(attrs::SPEED)] = (100, 100);
    attributes[usize::from(attrs::STRENGTH)] = (40, 100);
    let t = |id: u16, race: &str, env: Environment, aggr: u8, rideable: bool| TemplateProps {
        id,
        race: race.into(),
        class: String::new(),
        environment: env,
        radius: 0.5,
        aggressiveness: aggr,
        aggressive_range: 50.0,
        rideable,
        faction: 0,
        xp_multiplier: 10,
        default_damage_type: 0,
        genders: 0,
        attributes: attributes.clone(),
        resistances: vec![100; 20],
        slots_disabled: 0,
    };
    let mut templates = HashMap::new();
    for tp in [
        t(templates::HUMAN, "Human", Environment::Amphibious, 0, false),
        t(templates::WOLF, "Wolf", Environment::Walk, 2, false),
        t(templates::BIRD, "Bird", Environment::Fly, 0, false),
        t(templates::FISH, "Fish", Environment::Swim, 0, false),
        t(templates::HORSE, "Horse", Environment::Walk, 0, true),
    ] {
        templates.insert(tp.id, tp);
    }
    let mut names: Vec<String> = (0..40).map(|i| format!("Attr{i}")).collect();
    for (i, n) in [
        (attrs::HEALTH, "Health"),
        (attrs::ENERGY, "Energy"),
        (attrs::STRENGTH, "Strength"),
        (attrs::BREATH, "Breath"),
        (attrs::SPEED, "Speed"),
        (attrs::DEXTERITY, "Dexterity"),
        (attrs::TOUGHNESS, "Toughness"),
    ] {
        names[usize::from(i)] = n.into();
    }
    ZoneContent {
        area,
        templates,
        fixed: FixedAttributes {
            health: Some(attrs::HEALTH),
            energy: Some(attrs::ENERGY),
            breath: Some(attrs::BREATH),
            toughness: Some(attrs::TOUGHNESS),
            strength: Some(attrs::STRENGTH),
            speed: Some(attrs::SPEED),
        },
        rules: GameRules::default(),
        attribute_names: names,
        faction_defaults: Vec::new(),
        world: Arc::new(test_world()),
        scripts: Arc::default(),
    }
}

/// `content` with these scripts compiled in (panics on a compile error).
pub fn content_with_scripts(mut content: ZoneContent, files: &[(&str, &[u8])]) -> ZoneContent {
    let files: Vec<script::compile::SourceFile> = files
        .iter()
        .map(|(n, b)| script::compile::SourceFile::new(*n, b.to_vec()))
        .collect();
    let c = script::compile::compile(&files);
    assert!(
        !c.has_errors(),
        "scripts do not compile: {:#?}",
        c.diagnostics
    );
    content.scripts = Arc::new(c.set);
    content
}

/// The world behind [`test_content`]: "Testland" plus a second area "Elsewhere" (portals
/// "Arrival" and "Begin") as a transfer destination.
pub fn test_world() -> shared::content::World {
    use shared::content as rc;
    let portal = |index: u16, name: &str, x: f32| rc::Portal {
        index,
        name: name.into(),
        x,
        z: x,
        size: 3.0,
        ..rc::Portal::default()
    };
    let testland = rc::Area {
        name: "Testland".into(),
        portals: vec![portal(0, "Begin", 10.0), portal(1, "Gate", 500.0)],
        ..rc::Area::default()
    };
    let elsewhere = rc::Area {
        name: "Elsewhere".into(),
        portals: vec![portal(0, "Arrival", 20.0), portal(1, "Begin", 10.0)],
        ..rc::Area::default()
    };
    rc::World {
        areas: vec![testland, elsewhere],
        ..rc::World::default()
    }
}

/// The embedded demo world's `area`, with the world's scripts compiled in (panics if the
/// area is missing or a script does not compile).
pub fn demo_content(area: &str) -> ZoneContent {
    let world = Arc::new(shared::content::demo_world());
    let mut content = ZoneContent::from_world(world.clone(), area).expect("a demo area");
    let (set, diags) = crate::world_scripts::compile_world(&world);
    assert!(diags.is_empty(), "{diags:?}");
    content.scripts = Arc::new(set);
    content
}

/// A scenario driver around one [`ZoneSim`].
pub struct SimHarness {
    /// The zone.
    pub sim: ZoneSim,
    /// The current time (ms).
    pub now: u64,
    /// Tick length (ms).
    pub step: u64,
    pending: Vec<ZoneInput>,
    next_player: u64,
    next_rid: u16,
    /// Every non-datagram output since the last [`SimHarness::clear`].
    pub outputs: Vec<ZoneOutput>,
    /// Every datagram since the last clear.
    pub datagrams: Vec<(PlayerKey, Vec<u8>)>,
    /// Stats of the last tick.
    pub last_stats: TickStats,
    /// Answers the zone's script-store requests at the next tick.
    pub store: crate::script_store::MemoryStore,
}

impl Default for SimHarness {
    fn default() -> Self {
        Self::new()
    }
}

impl SimHarness {
    /// The harness area with the default config.
    pub fn new() -> Self {
        Self::with(ZoneConfig::default(), test_content())
    }

    /// Any config and content.
    pub fn with(cfg: ZoneConfig, content: ZoneContent) -> Self {
        Self {
            sim: ZoneSim::new(cfg, Arc::new(content)),
            now: 1000,
            step: 33,
            pending: Vec::new(),
            next_player: 1,
            next_rid: 1,
            outputs: Vec::new(),
            datagrams: Vec::new(),
            last_stats: TickStats::default(),
            store: crate::script_store::MemoryStore::new(),
        }
    }

    /// The harness area running these scripts (`(name, source)`); panics if any does not
    /// compile.
    pub fn with_scripts(files: &[(&str, &[u8])]) -> Self {
        Self::with(
            ZoneConfig::default(),
            content_with_scripts(test_content(), files),
        )
    }

    /// A new character of the world's first playable template, in this zone's area.
    pub fn new_character(&self, name: &str) -> ActorState {
        let st = self.sim.state();
        let t = st
            .content
            .world
            .first_playable()
            .and_then(|p| st.content.template(p.id))
            .cloned()
            .unwrap_or_default();
        let mut s = Actor::from_template(&t).to_state(&st.content.area.name, st.cfg.instance);
        s.name = name.into();
        s
    }

    /// Send `id` through SetArea to portal "Begin" of `area` (instance 0) and tick; the
    /// state its `TransferOut` carries (panics if none was started).
    pub fn set_area_out(&mut self, id: ActorId, area: &str) -> ActorState {
        self.clear();
        super::setarea::set_area(
            self.sim.state_mut(),
            id,
            area,
            0,
            &Arrival::PortalNamed("Begin".into()),
        );
        self.tick();
        self.outputs
            .iter()
            .find_map(|o| match o {
                ZoneOutput::TransferOut(t) => Some(t.state.clone()),
                _ => None,
            })
            .expect("a transfer out")
    }

    /// A fresh player character of the harness race at a position.
    pub fn player_state(&self, name: &str, x: f32, z: f32) -> ActorState {
        let st = self.sim.state();
        let t = st
            .content
            .template(templates::HUMAN)
            .cloned()
            .unwrap_or_default();
        let a = Actor::from_template(&t);
        let mut s = a.to_state(&st.content.area.name, st.cfg.instance);
        s.name = name.into();
        s.x = x;
        s.z = z;
        s
    }

    /// Queue a join and run one tick; returns the player's key and actor.
    pub fn spawn_player(&mut self, name: &str, x: f32, z: f32) -> (PlayerKey, ActorId) {
        let state = self.player_state(name, x, z);
        self.join(state, false)
    }

    /// Join a DM.
    pub fn spawn_dm(&mut self, name: &str, x: f32, z: f32) -> (PlayerKey, ActorId) {
        let state = self.player_state(name, x, z);
        self.join(state, true)
    }

    /// Join any state with the next free key and RID; runs one tick.
    pub fn join(&mut self, state: ActorState, is_dm: bool) -> (PlayerKey, ActorId) {
        let key = PlayerKey(self.next_player);
        self.next_player += 1;
        let rid = self.next_rid;
        self.next_rid += 1;
        self.push(ZoneInput::PlayerJoined {
            player: key,
            rid,
            is_dm,
            state: Box::new(state),
            arrival: Arrival::Saved,
        });
        self.tick();
        let id = self.sim.state().by_player(key).expect("player joined");
        (key, id)
    }

    /// Spawn an NPC directly.
    pub fn spawn_npc(&mut self, template: u16, x: f32, z: f32) -> ActorId {
        self.sim
            .spawn_npc(template, x, 0.0, z)
            .expect("npc spawned")
    }

    /// Queue an input for the next tick.
    pub fn push(&mut self, input: ZoneInput) {
        self.pending.push(input);
    }

    /// Queue a player action.
    pub fn act(&mut self, player: PlayerKey, action: PlayerAction) {
        self.push(ZoneInput::Player { player, action });
    }

    /// Queue a `P_StandardUpdate`.
    #[allow(clippy::too_many_arguments)]
    pub fn update(
        &mut self,
        player: PlayerKey,
        x: f32,
        z: f32,
        dest_x: f32,
        dest_z: f32,
        run: bool,
        back: bool,
    ) {
        let y = self.actor_of(player).map_or(0.0, |a| a.y);
        self.act(
            player,
            PlayerAction::StandardUpdate(StandardUpdateIn {
                dest_x,
                dest_z,
                y,
                x,
                z,
                is_running: run,
                walking_backward: back,
            }),
        );
    }

    /// Run one tick (advancing time by `step` after it).
    pub fn tick(&mut self) -> &TickStats {
        let inputs = std::mem::take(&mut self.pending);
        // Tests poke positions through `actor_mut`; keep the grid's copy in step.
        self.sim.state_mut().grid_resync();
        let out = self.sim.tick(self.now, inputs);
        // The script store answers at the next tick, as the gateway would.
        for o in &out.outputs {
            if let ZoneOutput::ScriptStore { req, op } = o {
                let (result, change) = self.store.answer(op);
                if *req != 0 {
                    self.pending
                        .push(ZoneInput::ScriptStoreReply { req: *req, result });
                }
                if let Some(c) = change {
                    self.pending.push(ZoneInput::SuperGlobal {
                        slot: c.slot,
                        value: c.value,
                    });
                }
            }
        }
        self.outputs.extend(out.outputs.iter().cloned());
        self.datagrams.extend(out.datagrams.iter());
        self.last_stats = out.stats.clone();
        self.now += self.step;
        &self.last_stats
    }

    /// Run `n` ticks.
    pub fn run_ticks(&mut self, n: usize) {
        for _ in 0..n {
            self.tick();
        }
    }

    /// Run ticks until a broadcast interval has sent all its groups (none if the last tick
    /// completed one), so that the zone-wide reliable packets queued so far are out (they
    /// wait for the player's broadcast).
    pub fn deliver(&mut self) {
        let most = 2 * (self.sim.state().cfg.broadcast_ms / self.step.max(1) + 2);
        for _ in 0..most {
            let st = self.sim.state();
            if self.last_stats.counters.broadcast && st.broadcast_group >= st.cfg.groups() {
                return;
            }
            self.tick();
        }
    }

    /// Forget collected outputs.
    pub fn clear(&mut self) {
        self.outputs.clear();
        self.datagrams.clear();
    }

    /// An actor.
    pub fn actor(&self, id: ActorId) -> &Actor {
        self.sim.state().get(id).expect("actor exists")
    }

    /// A player's actor.
    pub fn actor_of(&self, p: PlayerKey) -> Option<&Actor> {
        let st = self.sim.state();
        st.by_player(p).and_then(|id| st.get(id))
    }

    /// Mutable access to an actor (scenario set-up).
    pub fn actor_mut(&mut self, id: ActorId) -> &mut Actor {
        self.sim.state_mut().get_mut(id).expect("actor exists")
    }

    /// Reliable frames received by a player since the last clear.
    pub fn reliable(&self, p: PlayerKey) -> Vec<(u8, Vec<u8>)> {
        self.outputs
            .iter()
            .filter_map(|o| match o {
                ZoneOutput::Reliable { player, bytes } if *player == p => Some(frames(bytes)),
                _ => None,
            })
            .flatten()
            .collect()
    }

    /// Reliable frames of one type received by a player.
    pub fn reliable_of(&self, p: PlayerKey, ptype: u8) -> Vec<Vec<u8>> {
        self.reliable(p)
            .into_iter()
            .filter(|(t, _)| *t == ptype)
            .map(|(_, b)| b)
            .collect()
    }

    /// Position updates received by a player since the last clear.
    pub fn updates(&self, p: PlayerKey) -> Vec<SeenUpdate> {
        let mut v = Vec::new();
        for (who, d) in &self.datagrams {
            if *who != p {
                continue;
            }
            for (t, b) in frames(d) {
                assert_eq!(t, 14, "only P_StandardUpdate in datagrams");
                let f = |o: usize| f32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
                v.push(SeenUpdate {
                    rid: u16::from_le_bytes([b[0], b[1]]),
                    x: f(2),
                    z: f(6),
                    running: b[10] != 0,
                    backward: b[11] != 0,
                    mount: u16::from_le_bytes([b[20], b[21]]),
                    tail: b[22..].to_vec(),
                });
            }
        }
        v
    }

    /// The chat lines a player received since the last clear (`P_ChatMessage`, colour
    /// stripped), as Latin-1 text.
    pub fn chat(&self, p: PlayerKey) -> Vec<String> {
        self.reliable_of(p, super::packets::P_CHAT_MESSAGE)
            .into_iter()
            .filter_map(|b| {
                use shared::proto::Packet as _;
                shared::proto::ChatMessageS2C::decode_payload(&b, &Default::default()).ok()
            })
            .map(|m| m.text.0.iter().map(|&c| char::from(c)).collect())
            .collect()
    }

    /// The script errors reported since the last clear: `(message, file, line)`.
    pub fn script_errors(&self) -> Vec<(String, String, u32)> {
        self.outputs
            .iter()
            .filter_map(|o| match o {
                ZoneOutput::ScriptError {
                    message,
                    file,
                    line,
                    ..
                } => Some((message.clone(), file.clone(), *line)),
                _ => None,
            })
            .collect()
    }

    /// The rejections counted so far.
    pub fn rejections(&self) -> Vec<super::events::Rejection> {
        self.outputs
            .iter()
            .filter_map(|o| match o {
                ZoneOutput::Rejected { reason, .. } => Some(*reason),
                _ => None,
            })
            .collect()
    }
}
