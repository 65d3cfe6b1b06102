//! 16-bit sequence numbers compared the ENet 1.1 way: 0xF000..0xFFFF followed by 0..0x0FFF
//! is a wrap; anything else is plain order.

/// Where a received sequence number stands against the last one accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Order {
    /// Before the current one (or across the wrap the wrong way).
    Old,
    /// Equal to the current one.
    Duplicate,
    /// After it.
    New,
}

/// Classifies `seq` against `current` as ENet 1.1's `queue_incoming_command` does.
pub(crate) fn classify(current: u16, seq: u16) -> Order {
    let cur = u32::from(current);
    let mut s = u32::from(seq);
    if cur >= 0xF000 && s < 0x1000 {
        s += 0x10000;
    }
    if s < cur || (cur < 0x1000 && s >= 0xF000) {
        Order::Old
    } else if s == cur {
        Order::Duplicate
    } else {
        Order::New
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_rules() {
        assert_eq!(classify(0, 1), Order::New);
        assert_eq!(classify(5, 5), Order::Duplicate);
        assert_eq!(classify(5, 4), Order::Old);
        assert_eq!(classify(0xFFFF, 0), Order::New);
        assert_eq!(classify(0xF000, 0x0FFF), Order::New);
        assert_eq!(classify(0xFFFE, 0xFFFF), Order::New);
        assert_eq!(classify(3, 0xFFFF), Order::Old);
        assert_eq!(classify(0x0FFF, 0xF000), Order::Old);
        assert_eq!(classify(0x1000, 0xF000), Order::New);
        assert_eq!(classify(0xEFFF, 0x0001), Order::Old);
    }
}
