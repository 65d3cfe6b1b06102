//! One SetArea transfer's id, the same at every hop: minted once by the source zone (or
//! by the gateway for a player it puts back), then named unchanged by the source node, the
//! gateway, the destination node and the destination zone (`docs/handoff.md`, "Ids").
//!
//! Uniqueness without coordination per transfer: the gateway hands each node registration
//! an id **block** ([`Msg::TransferIds`](super::Msg::TransferIds)) and keeps one for
//! itself; blocks grow from the gateway's generation base (its start in wall-clock ms), so
//! no two registrations of any gateway run share one. A node hands each zone sim it
//! creates (a rebuild after a panic included) its own **minter** number in that block,
//! and the sim counts its transfers (**serial**). So an id is never minted twice while the
//! cluster runs, and ids from before a node or gateway restart cannot meet new ones.

use serde::{Deserialize, Serialize};

/// One SetArea transfer, cluster-wide (see the module docs).
#[doc(alias = "SetArea")]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct TransferId {
    /// The gateway's id block of the node registration (or of the gateway itself).
    pub block: u64,
    /// The minter in that block: a zone sim (from 1), or the gateway (0).
    pub minter: u32,
    /// The minter's count.
    pub serial: u32,
}

impl std::fmt::Display for TransferId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.block, self.minter, self.serial)
    }
}

/// Mints the [`TransferId`]s of one minter, in order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransferMinter {
    block: u64,
    minter: u32,
    next: u32,
}

impl TransferMinter {
    /// The minter `minter` of `block`, from serial 1.
    pub const fn new(block: u64, minter: u32) -> Self {
        Self {
            block,
            minter,
            next: 1,
        }
    }

    /// The next id. After 2³² − 1 ids the serial starts over at 1: a transfer lives
    /// seconds, so the id it shares is billions of transfers old.
    pub fn mint(&mut self) -> TransferId {
        let id = TransferId {
            block: self.block,
            minter: self.minter,
            serial: self.next,
        };
        self.next = self.next.checked_add(1).unwrap_or(1);
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minter_counts_in_its_own_block_and_number() {
        let mut m = TransferMinter::new(7, 3);
        let a = m.mint();
        let b = m.mint();
        assert_eq!(
            a,
            TransferId {
                block: 7,
                minter: 3,
                serial: 1
            }
        );
        assert_eq!(b.serial, 2);
        assert_eq!(a.to_string(), "7.3.1");
        let mut other = TransferMinter::new(7, 4);
        assert_ne!(other.mint(), a);
    }

    #[test]
    fn the_serial_starts_over_after_the_last() {
        let mut m = TransferMinter {
            block: 1,
            minter: 1,
            next: u32::MAX,
        };
        assert_eq!(m.mint().serial, u32::MAX);
        assert_eq!(m.mint().serial, 1);
    }
}
