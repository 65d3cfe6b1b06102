//! Pets (`CommandPet`, `/pet name|ALL,cmd[,args]`) over the leader's slave chain.
//!
//! WAIT/STAY → PetWait (stop), FOLLOW/COME → Pet, ATTACK → PetChase on the leader's
//! target (refused with a message when there is none), NAME x → the names filter, then the
//! new name and `P_NameChange` (`RID u16, u8 len, name, tag`) to the zone. The pet name
//! matches case-insensitively; `None` or `ALL` means every pet. No matching pet → a red
//! chat line.

use shared::proto::NameChange;

use super::events::{PetCommand, Rejection};
use super::packets::{self, CHAT_RED};
use super::state::{ActorId, AiMode, ZoneState};

/// Longest pet name.
pub const MAX_NAME: usize = 32;

/// `/pet name|ALL,cmd[,args]`.
#[doc(alias = "CommandPet")]
pub(crate) fn command(st: &mut ZoneState, leader: ActorId, pet: Option<&str>, cmd: &PetCommand) {
    let player = st.get(leader).and_then(|a| a.player);
    // `ALL` (any case) is every pet, like `None`.
    let pet = pet.filter(|n| !n.trim().eq_ignore_ascii_case("ALL"));
    let pets: Vec<ActorId> = st
        .slaves_of(leader)
        .into_iter()
        .filter(|p| {
            pet.is_none_or(|n| {
                st.get(*p)
                    .is_some_and(|a| a.name.eq_ignore_ascii_case(n.trim()))
            })
        })
        .collect();
    if pets.is_empty() {
        st.reject(player, Rejection::Invalid);
        packets::send_chat(st, leader, CHAT_RED, "You have no such pet");
        return;
    }
    if let PetCommand::Name(n) = cmd {
        let n = n.trim();
        if n.is_empty() || n.len() > MAX_NAME || st.content.world.name_is_filtered(n) {
            st.reject(player, Rejection::Invalid);
            packets::send_chat(st, leader, CHAT_RED, "Invalid name");
            return;
        }
    }
    let target = st.get(leader).and_then(|a| a.ai_target);
    if matches!(cmd, PetCommand::Attack)
        && !target.is_some_and(|t| st.alive(t) && !pets.contains(&t))
    {
        st.reject(player, Rejection::Invalid);
        packets::send_chat(st, leader, CHAT_RED, "You have no target");
        return;
    }
    for p in pets {
        command_pet(st, p, cmd, target);
    }
}

/// One pet obeys.
fn command_pet(st: &mut ZoneState, pet: ActorId, cmd: &PetCommand, target: Option<ActorId>) {
    let Some(a) = st.get_mut(pet) else { return };
    match cmd {
        PetCommand::Wait => {
            a.ai_mode = AiMode::PetWait;
            a.ai_target = None;
            a.dest_x = a.x;
            a.dest_z = a.z;
            a.is_running = false;
        }
        PetCommand::Follow => {
            a.ai_mode = AiMode::Pet;
            a.ai_target = None;
        }
        PetCommand::Attack => {
            if a.aggressiveness < 3 {
                a.ai_mode = AiMode::PetChase;
                a.ai_target = target;
            }
        }
        PetCommand::Name(n) => {
            a.name = n.trim().to_owned();
            let change = NameChange {
                runtime_id: a.rid,
                actor_name: packets::text(&a.name),
                tag: packets::text(&a.tag),
            };
            st.send_packet_zone(&change, None);
        }
    }
}
