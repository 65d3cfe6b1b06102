//! Client frames (as the gateway forwarded them) → [`PlayerAction`]s for the sim.
//!
//! `P_StandardUpdate` takes the allocation-free fixed-offset path. Anything that does not
//! decode is counted by the caller and dropped; it never reaches the simulation.

use shared::frame::{DatagramError, FrameDecoder, split_datagram};
use shared::proto::{ClientPacket, DialogC2S, ProgressBarC2S, StandardUpdateC2S, ids};

use crate::sim::events::{PlayerAction, ScriptReply, StandardUpdateIn};

/// A `P_StandardUpdate` payload as a sim action.
pub fn standard_update(payload: &[u8]) -> Option<PlayerAction> {
    let u = StandardUpdateC2S::decode_fast(payload).ok()?;
    Some(PlayerAction::StandardUpdate(StandardUpdateIn {
        dest_x: u.dest_x,
        dest_z: u.dest_z,
        y: u.y,
        x: u.x,
        z: u.z,
        is_running: u.is_running != 0,
        walking_backward: u.walking_backward != 0,
    }))
}

/// The frames of an internal datagram (only `P_StandardUpdate`), each as an action;
/// `Err` drops the whole datagram (transport contract).
pub fn datagram_actions(
    frames: &[u8],
    mut each: impl FnMut(PlayerAction),
) -> Result<(), DatagramError> {
    for f in split_datagram(frames, Some(ids::P_STANDARD_UPDATE))? {
        if let Some(a) = standard_update(f.payload) {
            each(a);
        }
    }
    Ok(())
}

/// One reliable packet as an action; `None` for packets the zone does not handle
/// (counted by the caller).
pub fn reliable_action(ty: u8, payload: &[u8]) -> Option<PlayerAction> {
    if ty == ids::P_STANDARD_UPDATE {
        return standard_update(payload);
    }
    match ClientPacket::decode(ty, payload).ok()? {
        ClientPacket::AttackActor(a) => Some(PlayerAction::Attack { target: a.target }),
        ClientPacket::RightClick(r) => Some(PlayerAction::RightClick { target: r.target }),
        ClientPacket::Jump(_) => Some(PlayerAction::Jump),
        ClientPacket::InventoryUpdate(i) => Some(PlayerAction::Inventory(i)),
        ClientPacket::ActionBarUpdate(a) => Some(PlayerAction::ActionBar(a)),
        ClientPacket::SpellUpdate(s) => Some(PlayerAction::Spell(s)),
        ClientPacket::ItemScript(i) => Some(PlayerAction::UseItem {
            slot: i.slot,
            target: i.target,
        }),
        ClientPacket::EatItem(e) => Some(PlayerAction::EatItem {
            slot: e.slot,
            amount: e.amount,
        }),
        ClientPacket::OpenTrading(o) => Some(PlayerAction::OpenTrading(o)),
        ClientPacket::UpdateTrading(u) => Some(PlayerAction::UpdateTrading {
            slot: u.slot,
            amount: u.amount,
        }),
        ClientPacket::Trade(t) => Some(PlayerAction::TradeWith { target: t.target }),
        ClientPacket::Examine(e) => Some(PlayerAction::Examine { target: e.target }),
        ClientPacket::Dialog(d) => Some(PlayerAction::ScriptReply(match d {
            DialogC2S::Opened { script, dialog } => ScriptReply::DialogOpened { script, dialog },
            DialogC2S::TextShown { script } => ScriptReply::TextShown { script },
            DialogC2S::Chosen { script, option } => ScriptReply::Chosen { script, option },
        })),
        ClientPacket::ProgressBar(ProgressBarC2S::Created { script, bar }) => {
            Some(PlayerAction::ScriptReply(ScriptReply::BarCreated {
                script,
                bar,
            }))
        }
        ClientPacket::ScriptInput(i) => Some(PlayerAction::ScriptReply(ScriptReply::Input {
            script: i.script,
            text: i.text.0,
        })),
        ClientPacket::Dismount(_) => Some(PlayerAction::Dismount),
        ClientPacket::ChangeArea(_) | ClientPacket::RepositionActor(_) => {
            Some(PlayerAction::AreaAck)
        }
        ClientPacket::ChatMessage(c) => {
            // One byte per character (Latin-1), as the client sends it.
            let text = shared::content::rc::latin1(c.text.as_bytes());
            Some(crate::sim::chat::parse_chat(&text))
        }
        _ => None,
    }
}

/// Every frame of a reliable batch; returns `(accepted, refused)` counts. A framing error
/// stops at that point (the rest of the batch is refused).
pub fn reliable_actions(frames: &[u8], mut each: impl FnMut(PlayerAction)) -> (u32, u32) {
    let mut dec = FrameDecoder::new();
    dec.push(frames);
    let (mut ok, mut bad) = (0, 0);
    loop {
        match dec.next_frame() {
            Ok(Some(f)) => match reliable_action(f.ty, f.payload) {
                Some(a) => {
                    ok += 1;
                    each(a);
                }
                None => bad += 1,
            },
            Ok(None) => break,
            Err(_) => {
                bad += 1;
                break;
            }
        }
    }
    if dec.buffered() > 0 {
        bad += 1;
    }
    (ok, bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_and_chat_decode_and_garbage_is_refused() {
        let u = StandardUpdateC2S {
            x: 3.0,
            z: 4.0,
            is_running: 1,
            ..StandardUpdateC2S::default()
        };
        let mut frames = Vec::new();
        u.write_frame(&mut frames);
        let mut got = Vec::new();
        datagram_actions(&frames, |a| got.push(a)).unwrap();
        assert!(
            matches!(got.as_slice(), [PlayerAction::StandardUpdate(s)] if s.x == 3.0 && s.is_running)
        );
        assert!(datagram_actions(&[1, 2, 3], |_| ()).is_err());
        let (ok, bad) = reliable_actions(&[5, 0, 99, 1, 2], |_| ());
        assert_eq!((ok, bad), (0, 1));
    }
}
