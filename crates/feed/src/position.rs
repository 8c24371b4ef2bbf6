//! Global positions of the JetStream journal's log:
//! `stream sequence << 16 | index in the message`. They increase in commit
//! order (JetStream orders the stream) and leave gaps; a consumer of the log
//! computes an event's position from the message it received, the way the
//! journal's reads report it.

/// Bits of a global position that index an event within its message.
pub const INDEX_BITS: u32 = 16;
/// Most events one message (one append) may hold: what fits in [`INDEX_BITS`].
pub const MAX_EVENTS_PER_MESSAGE: usize = 1 << INDEX_BITS;

/// The global position of the `index`th record of the message at stream `sequence`.
pub fn position(sequence: u64, index: usize) -> u64 {
    (sequence << INDEX_BITS) | index as u64
}

/// The (stream sequence, index in its message) of a global position.
pub fn split(position: u64) -> (u64, usize) {
    let index = position & ((1 << INDEX_BITS) - 1);
    (position >> INDEX_BITS, index as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_order_messages_then_records_and_split_back() {
        assert!(position(1, MAX_EVENTS_PER_MESSAGE - 1) < position(2, 0));
        assert_eq!(position(3, 5), 3 * 65_536 + 5);
        assert_eq!(split(position(3, 5)), (3, 5));
        assert_eq!(split(position(7, MAX_EVENTS_PER_MESSAGE - 1)), (7, 65_535));
        assert_eq!(split(0), (0, 0));
    }
}
