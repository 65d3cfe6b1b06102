//! Every frame the simulation emits decodes exactly with `shared::proto` (the wire
//! helper's independent codec), and the fields say what the sim meant.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::float_cmp)]

use shared::proto::{DecodeCtx, ServerPacket};
use zone_node::sim::events::{Arrival, PlayerAction, ZoneInput, ZoneOutput};
use zone_node::sim::setarea::set_area;
use zone_node::sim::testing::{SimHarness, frames, templates};

fn decode_all(h: &SimHarness) -> Vec<ServerPacket> {
    let content = h.sim.state().content.clone();
    let has_gender = move |t: u16| content.template(t).is_none_or(|t| t.genders == 0);
    let ctx = DecodeCtx {
        template_has_gender: Some(&has_gender),
        ..DecodeCtx::default()
    };
    let mut out = Vec::new();
    for o in &h.outputs {
        if let ZoneOutput::Reliable { bytes, .. } = o {
            for (t, p) in frames(bytes) {
                let pkt = ServerPacket::decode_with(t, &p, &ctx)
                    .unwrap_or_else(|e| panic!("type {t} payload {p:02x?}: {e}"));
                assert!(
                    !matches!(pkt, ServerPacket::Raw { .. }),
                    "type {t} is not a known packet"
                );
                out.push(pkt);
            }
        }
    }
    for (_, d) in &h.datagrams {
        for (t, p) in frames(d) {
            out.push(
                ServerPacket::decode_with(t, &p, &ctx)
                    .unwrap_or_else(|e| panic!("update {p:02x?}: {e}")),
            );
        }
    }
    out
}

#[test]
fn every_emitted_frame_decodes_with_shared_proto() {
    let mut h = SimHarness::new();
    let (a, aid) = h.spawn_dm("Alice", 0.0, 0.0);
    let (b, _) = h.spawn_player("Bob", 5.0, 5.0);
    h.spawn_npc(templates::BIRD, 10.0, 0.0);
    h.spawn_npc(templates::WOLF, 20.0, 0.0);
    h.update(a, 1.0, 0.0, 30.0, 0.0, true, false);
    h.act(
        a,
        PlayerAction::SetAttribute {
            name: "Health".into(),
            value: 60,
        },
    );
    h.act(
        a,
        PlayerAction::SetAttribute {
            name: "Dexterity".into(),
            value: 9,
        },
    );
    h.act(b, PlayerAction::Jump);
    h.act(
        b,
        PlayerAction::Chat {
            text: "hello".into(),
        },
    );
    h.run_ticks(8);
    let st = h.sim.state_mut();
    set_area(st, aid, "Testland", 0, &Arrival::Waypoint(2));
    h.run_ticks(2);
    h.push(ZoneInput::PlayerLeft { player: b });
    h.run_ticks(2);
    let pkts = decode_all(&h);
    let has = |f: &dyn Fn(&ServerPacket) -> bool| pkts.iter().any(f);
    assert!(has(
        &|p| matches!(p, ServerPacket::ChangeArea(c) if c.area.as_bytes() == b"Testland" && c.gravity == 300)
    ));
    assert!(has(
        &|p| matches!(p, ServerPacket::NewActor(n) if n.runtime_id == 2)
    ));
    assert!(has(&|p| matches!(p, ServerPacket::StatUpdate(_))));
    assert!(has(&|p| matches!(p, ServerPacket::Jump(_))));
    assert!(has(&|p| matches!(p, ServerPacket::ChatMessage(_))));
    assert!(has(&|p| matches!(p, ServerPacket::RepositionActor(_))));
    assert!(has(
        &|p| matches!(p, ServerPacket::ActorGone(g) if g.runtime_id == 2 && !g.four_bytes)
    ));
    assert!(has(
        &|p| matches!(p, ServerPacket::StandardUpdate(u) if u.runtime_id == 1 && u.is_running == 1)
    ));
}
