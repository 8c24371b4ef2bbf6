//! The word stream of one roll and the unbiased die (docs/protocol.md §2).
//!
//! docs/protocol.md §2 names `rand_chacha::ChaCha20Rng::from_seed(roll_key)` +
//! `set_stream(nonce)` + `next_u32()` as the stream. That generator refills
//! a buffer of four 64-byte blocks at a time, wide (SIMD), while most rolls
//! read a few words: `4d6kh3` reads 4 of the 64 words it computed, and the
//! refill was 40 % of the roll (BENCHMARKS.md, "Dice expression
//! evaluation"). So the stream computes the first block itself, narrow
//! (RFC 7539 §2.3's block function in the original layout: 64-bit counter
//! in words 12–13, 64-bit nonce in 14–15), and only a roll that reads past
//! its 16 words starts `rand_chacha` at block 1, where the wide refill pays.
//! The words are the same either way: the shared vectors' `first_words`
//! pin them, the block function has RFC 7539's own test, and
//! `tests/matches_before.rs` holds the stream to `rand_chacha` across block
//! boundaries for random keys and nonces.

use std::num::NonZeroU32;

use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};

use crate::seed::RollKey;

/// Where dice take their 32-bit words from. The protocol's source is
/// [`RollStream`]; tests substitute recorded words to check the sampling.
pub trait WordSource {
    fn next_word(&mut self) -> u32;

    /// A hint before a roll: it will read at least `words` words. A source
    /// may compute ahead accordingly; the words it hands out are the same.
    fn will_read(&mut self, words: u64) {
        let _ = words;
    }
}

/// ChaCha20 (20 rounds, 64-bit block counter from 0, 64-bit nonce) keyed by
/// the roll key, with the roll's nonce as the stream id, read as consecutive
/// little-endian `u32` words. Counts the words it hands out so callers can
/// prove that no word was skipped or read twice.
#[derive(Clone)]
pub struct RollStream {
    /// Block 0's 16 words, computed when the first word is read.
    first: [u32; 16],
    /// The words read so far, rejected ones included.
    words_read: u64,
    /// `rand_chacha`'s stream, started when a roll reads past block 0 (at
    /// word 16), or at word 0 when the roll said it will read more than a
    /// block ([`WordSource::will_read`]).
    rest: Option<ChaCha20Rng>,
    /// Whether every word comes from `rest`, block 0 included.
    wide: bool,
    key: [u8; 32],
    nonce: u64,
}

// The state holds the roll key: never print it by accident in a log.
impl std::fmt::Debug for RollStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RollStream")
            .field("words_read", &self.words_read)
            .field("blocks_computed", &self.blocks_computed())
            .finish_non_exhaustive()
    }
}

/// "expand 32-byte k", the ChaCha constants for a 256-bit key.
const SIGMA: [u32; 4] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574];

/// The words of one block.
const BLOCK_WORDS: u64 = 16;

impl RollStream {
    pub fn new(key: &RollKey, nonce: u64) -> Self {
        Self { first: [0; 16], words_read: 0, rest: None, wide: false, key: *key.as_bytes(), nonce }
    }

    /// How many words have been read so far, rejected ones included.
    pub fn words_read(&self) -> u64 {
        self.words_read
    }

    /// How many 64-byte ChaCha20 blocks were computed to hand out those
    /// words: block 0 once a word is read, then `rand_chacha`'s refills of
    /// four blocks each (from block 0 when the roll said it reads more).
    pub fn blocks_computed(&self) -> u64 {
        if self.wide {
            return self.words_read.div_ceil(4 * BLOCK_WORDS) * 4;
        }
        let first = u64::from(self.words_read > 0);
        let rest = self.words_read.saturating_sub(BLOCK_WORDS).div_ceil(4 * BLOCK_WORDS) * 4;
        first + rest
    }

    #[cold]
    fn first_block(&mut self) {
        let mut input = [0u32; 16];
        input[..4].copy_from_slice(&SIGMA);
        for (word, bytes) in input[4..12].iter_mut().zip(self.key.chunks_exact(4)) {
            *word = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        }
        // Words 12–13: the block counter, 0; words 14–15: the nonce.
        input[14] = self.nonce as u32;
        input[15] = (self.nonce >> 32) as u32;
        self.first = chacha20_block(&input);
    }
}

/// `rand_chacha`'s stream at word `at`.
#[cold]
fn start_rest(key: [u8; 32], nonce: u64, at: u64) -> ChaCha20Rng {
    let mut rng = ChaCha20Rng::from_seed(key);
    rng.set_stream(nonce);
    rng.set_word_pos(u128::from(at));
    rng
}

impl WordSource for RollStream {
    #[inline]
    fn next_word(&mut self) -> u32 {
        let at = self.words_read;
        self.words_read += 1;
        if at < BLOCK_WORDS && !self.wide {
            if at == 0 {
                self.first_block();
            }
            return self.first[at as usize];
        }
        let (key, nonce, from) = (self.key, self.nonce, if self.wide { 0 } else { BLOCK_WORDS });
        self.rest.get_or_insert_with(|| start_rest(key, nonce, from)).next_u32()
    }

    /// A roll that will read more than block 0 (`100d6!` reads at least
    /// 100 words) takes all its words from `rand_chacha`'s wide refills: the
    /// narrow block 0 would be computed on top of them.
    fn will_read(&mut self, words: u64) {
        if self.words_read == 0 && words > BLOCK_WORDS {
            self.wide = true;
        }
    }
}

/// One ChaCha20 block (RFC 7539 §2.3): 10 double rounds over the input,
/// then the input added back, word by word.
fn chacha20_block(input: &[u32; 16]) -> [u32; 16] {
    #[inline(always)]
    fn quarter_round(x: &mut [u32; 16], a: usize, b: usize, c: usize, d: usize) {
        x[a] = x[a].wrapping_add(x[b]);
        x[d] = (x[d] ^ x[a]).rotate_left(16);
        x[c] = x[c].wrapping_add(x[d]);
        x[b] = (x[b] ^ x[c]).rotate_left(12);
        x[a] = x[a].wrapping_add(x[b]);
        x[d] = (x[d] ^ x[a]).rotate_left(8);
        x[c] = x[c].wrapping_add(x[d]);
        x[b] = (x[b] ^ x[c]).rotate_left(7);
    }
    let mut x = *input;
    for _ in 0..10 {
        // Columns, then diagonals.
        quarter_round(&mut x, 0, 4, 8, 12);
        quarter_round(&mut x, 1, 5, 9, 13);
        quarter_round(&mut x, 2, 6, 10, 14);
        quarter_round(&mut x, 3, 7, 11, 15);
        quarter_round(&mut x, 0, 5, 10, 15);
        quarter_round(&mut x, 1, 6, 11, 12);
        quarter_round(&mut x, 2, 7, 8, 13);
        quarter_round(&mut x, 3, 4, 9, 14);
    }
    for (out, word) in x.iter_mut().zip(input) {
        *out = out.wrapping_add(*word);
    }
    x
}

/// The largest face count one die may have.
pub const MAX_SIDES: u32 = 1_000_000;

/// Draws one die with `sides` faces by rejection sampling: words at or
/// above the largest multiple of `sides` below 2^32 are discarded, so every
/// face is exactly equally likely. Exact for every face count, not only the
/// expressions' 1..=[`MAX_SIDES`]: a verifier may call it with any die.
pub fn draw_die(words: &mut impl WordSource, sides: NonZeroU32) -> u32 {
    let sides = sides.get();
    if sides <= MAX_SIDES {
        return Faces::new(sides).draw(words);
    }
    // Above the expressions' limit the fast path's shortcut (every word
    // below 2^32 − 2^20 is kept) no longer holds: the limit is worked out
    // per word, as docs/protocol.md §2 states it.
    let faces = Faces::new_unchecked(sides);
    loop {
        let word = words.next_word();
        if faces.accepts_high(word) {
            return faces.face(word);
        }
    }
}

/// One die's sampling worked out once per dice term rather than per die:
/// the constant that turns `word mod sides` into two multiplications.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Faces {
    sides: u32,
    /// `⌈2^64 / sides⌉` modulo 2^64, for [`Faces::face`].
    magic: u64,
}

/// Every word below this is accepted whatever the die: the rejection limit
/// `2^32 − (2^32 mod sides)` is above `2^32 − sides`, and sides are at most
/// a million, under 2^20. Only words in the top 2^20 (one in 4 096) need
/// the limit itself, which costs a division.
const ALWAYS_ACCEPTED: u32 = u32::MAX - (1 << 20) + 1;

impl Faces {
    pub(crate) fn new(sides: u32) -> Self {
        debug_assert!((1..=MAX_SIDES).contains(&sides), "sides checked by the parser");
        Self::new_unchecked(sides)
    }

    /// The constants for any face count, for [`draw_die`]'s slow path: only
    /// [`Faces::draw`] relies on the expressions' limit.
    fn new_unchecked(sides: u32) -> Self {
        // A zero cannot come from the parser or from `draw_die`; one face is
        // what the parser's lower bound would have given it, and no
        // division below may panic.
        let sides = sides.max(1);
        // ⌈2^64 / s⌉ = ⌊(2^64 − 1) / s⌋ + 1 for every s > 1; for s = 1 it
        // is 2^64, which wraps to 0, and 0 gives the right remainder (0).
        let magic = (u64::MAX / u64::from(sides)).wrapping_add(1);
        Self { sides, magic }
    }

    /// `1 + word mod sides` without a division: Lemire, Kaser and Kurz,
    /// "Faster remainder by direct computation" (2019), exact for every
    /// 32-bit word and divisor when the constant has 64 bits.
    #[inline]
    fn face(self, word: u32) -> u32 {
        let fraction = self.magic.wrapping_mul(u64::from(word));
        let remainder = ((u128::from(fraction) * u128::from(self.sides)) >> 64) as u32;
        1 + remainder
    }

    /// Whether docs/protocol.md §2 keeps `word`: below `2^32 − (2^32 mod sides)`.
    #[inline]
    fn accepts(self, word: u32) -> bool {
        word < ALWAYS_ACCEPTED || self.accepts_high(word)
    }

    #[cold]
    fn accepts_high(self, word: u32) -> bool {
        let span = 1u64 << 32;
        u64::from(word) < span - span % u64::from(self.sides)
    }

    // Inlined into the evaluation's loop over a term's dice: the call would
    // cost more than the draw of a word from the current block.
    #[inline(always)]
    pub(crate) fn draw(self, words: &mut impl WordSource) -> u32 {
        loop {
            let word = words.next_word();
            if self.accepts(word) {
                return self.face(word);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7539 §2.3.2's test vector, in the original layout: its 32-bit
    /// counter 1 and 96-bit nonce 00:00:00:09:00:00:00:4a:00:00:00:00 are
    /// the words 12–15 below, which the original layout reads as a 64-bit
    /// counter and a 64-bit nonce.
    #[test]
    fn the_block_function_matches_rfc_7539() {
        let mut input = [0u32; 16];
        input[..4].copy_from_slice(&SIGMA);
        for (i, word) in input[4..12].iter_mut().enumerate() {
            let b = 4 * i as u8;
            *word = u32::from_le_bytes([b, b + 1, b + 2, b + 3]);
        }
        input[12..].copy_from_slice(&[0x0000_0001, 0x0900_0000, 0x4a00_0000, 0x0000_0000]);
        let expected = [
            0xe4e7_f110,
            0x1559_3bd1,
            0x1fdd_0f50,
            0xc471_20a3,
            0xc7f4_d1c7,
            0x0368_c033,
            0x9aaa_2204,
            0x4e6c_d4c3,
            0x4664_82d2,
            0x09aa_9f07,
            0x05d7_c214,
            0xa202_8bd9,
            0xd19c_12b5,
            0xb94e_16de,
            0xe883_d0cb,
            0x4e3c_50a2,
        ];
        assert_eq!(chacha20_block(&input), expected);
    }

    /// The quick acceptance against the limit worked out in full, around
    /// the words where it switches to the division.
    #[test]
    fn a_word_is_accepted_below_the_limit() {
        for sides in [1, 2, 3, 6, 7, 100, 65_536, 99_991, 999_983, MAX_SIDES] {
            let faces = Faces::new(sides);
            let limit = (1u64 << 32) - (1u64 << 32) % u64::from(sides);
            let around = [0, ALWAYS_ACCEPTED - 1, ALWAYS_ACCEPTED, ALWAYS_ACCEPTED + 1, u32::MAX - 1, u32::MAX];
            let near_limit = [limit.saturating_sub(1), limit, limit + 1].map(|w| u32::try_from(w).unwrap_or(u32::MAX));
            for word in around.into_iter().chain(near_limit) {
                assert_eq!(faces.accepts(word), u64::from(word) < limit, "word {word} with {sides} sides");
            }
        }
    }

    /// The remainder by multiplication against `%`, at the edges of the
    /// word range and for divisors of every kind: 1, powers of two, primes,
    /// the largest allowed.
    #[test]
    fn the_face_is_one_plus_the_remainder() {
        let words = [0, 1, 2, 5, 6, 7, 99, 100, 65_535, 65_536, 999_999, 1_000_000, 1 << 31, u32::MAX - 1, u32::MAX];
        for sides in [1, 2, 3, 4, 6, 7, 10, 12, 20, 64, 100, 1000, 65_536, 99_991, 524_288, 999_983, MAX_SIDES] {
            let faces = Faces::new(sides);
            for word in words.into_iter().chain((0..2000).map(|i| i * 2_147_483 + 17)) {
                assert_eq!(faces.face(word), 1 + word % sides, "word {word} with {sides} sides");
            }
        }
    }

    /// Words handed out in order, for drawing from chosen words.
    struct Words<'a>(&'a [u32]);

    impl WordSource for Words<'_> {
        fn next_word(&mut self) -> u32 {
            let (first, rest) = self.0.split_first().expect("the test gave enough words");
            self.0 = rest;
            *first
        }
    }

    /// Past the expressions' limit a die is still drawn as docs/protocol.md §2
    /// says: a word at or above `2^32 − (2^32 mod sides)` is discarded, even
    /// one far below the fast path's `2^32 − 2^20`, and the face is
    /// `1 + word mod sides` of the first word kept.
    #[test]
    fn a_die_past_the_expressions_limit_is_drawn_exactly() {
        let cases: [(u32, &[u32], u32, usize); 5] = [
            // The limit is 3 000 000 000: 3 500 000 000 is discarded.
            (3_000_000_000, &[3_500_000_000, 7], 8, 0),
            (3_000_000_000, &[2_999_999_999], 3_000_000_000, 0),
            (3_000_000_000, &[3_000_000_000, u32::MAX, 0], 1, 0),
            // One face short of 2^32: only the top word is discarded.
            (u32::MAX, &[u32::MAX, u32::MAX - 1], u32::MAX, 0),
            // 2^32 mod 1 000 001 is 963 002: the limit is 4 294 004 294.
            (MAX_SIDES + 1, &[4_294_004_294, 999_999, 5], 1_000_000, 1),
        ];
        for (sides, words, face, left) in cases {
            let mut source = Words(words);
            let sides_nonzero = NonZeroU32::new(sides).expect("a face count above zero");
            assert_eq!(draw_die(&mut source, sides_nonzero), face, "words {words:?} with {sides} sides");
            assert_eq!(source.0.len(), left, "words left after drawing from {words:?} with {sides} sides");
        }
    }
}
