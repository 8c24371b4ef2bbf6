//! The word stream of one roll and the unbiased die (PROTOCOL.md §2).

use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};

use crate::seed::RollKey;

/// Where dice take their 32-bit words from. The protocol's source is
/// [`RollStream`]; tests substitute recorded words to check the sampling.
pub trait WordSource {
    fn next_word(&mut self) -> u32;
}

/// ChaCha20 (20 rounds, 64-bit block counter from 0, 64-bit nonce) keyed by
/// the roll key, with the roll's nonce as the stream id, read as consecutive
/// little-endian `u32` words. Counts the words it hands out so callers can
/// prove that no word was skipped or read twice.
#[derive(Debug)]
pub struct RollStream {
    rng: ChaCha20Rng,
    words_read: u64,
}

impl RollStream {
    pub fn new(key: &RollKey, nonce: u64) -> Self {
        let mut rng = ChaCha20Rng::from_seed(*key.as_bytes());
        rng.set_stream(nonce);
        Self { rng, words_read: 0 }
    }

    /// How many words have been read so far, rejected ones included.
    pub fn words_read(&self) -> u64 {
        self.words_read
    }

    /// How many 64-byte ChaCha20 blocks were computed to hand out those
    /// words: rand_chacha refills its buffer four blocks at a time.
    pub fn blocks_computed(&self) -> u64 {
        self.words_read.div_ceil(64) * 4
    }
}

impl WordSource for RollStream {
    fn next_word(&mut self) -> u32 {
        self.words_read += 1;
        self.rng.next_u32()
    }
}

/// The largest face count one die may have.
pub const MAX_SIDES: u32 = 1_000_000;

/// Draws one die with `sides` faces (1..=[`MAX_SIDES`]) by rejection
/// sampling: words at or above the largest multiple of `sides` below 2^32
/// are discarded, so every face is exactly equally likely.
pub fn draw_die(words: &mut impl WordSource, sides: u32) -> u32 {
    debug_assert!((1..=MAX_SIDES).contains(&sides), "sides checked by the parser");
    let sides = u64::from(sides);
    let span = 1u64 << 32;
    let limit = span - span % sides;
    loop {
        let word = u64::from(words.next_word());
        if word < limit {
            // `word % sides` < sides <= MAX_SIDES, so it fits in u32.
            return (1 + word % sides) as u32;
        }
    }
}
