//! The optimised engine against the engine as it was (`engine_before/`): the
//! same tree or the same error for any text, and the same dice, total or
//! error for any seed; the same words as `rand_chacha`'s ChaCha20 for any
//! key, nonce and length; the same face for any word and die. The shared
//! vectors pin the protocol on a few dozen rolls; this holds every derived
//! value to the previous implementation across generated inputs.

mod engine_before;

use dice::expr::Limits;
use dice::{Die, Expression, RollKey, RollStream, ServerSeed, WordSource, draw_die, evaluate, evaluate_keeping_dice};
use engine_before::eval::{ReferenceStream, evaluate_keeping_dice as reference_evaluate};
use engine_before::parse::{collect_dice_terms, parse as reference_parse};
use proptest::prelude::*;

/// Words from a fixed list, cycled.
struct Cycle<'a>(&'a [u32], usize);

impl WordSource for Cycle<'_> {
    fn next_word(&mut self) -> u32 {
        let word = self.0[self.1 % self.0.len()];
        self.1 += 1;
        word
    }
}

/// Pieces of the dice language and of what people mistype, joined at
/// random: valid expressions, near misses, non-ASCII letters (Cyrillic dice
/// letters take two bytes, which moves byte offsets away from columns) and
/// control characters (C0 and C1) in and out of comments.
fn dice_text() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        4 => (1u32..30).prop_map(|n| n.to_string()),
        1 => prop_oneof![Just("0"), Just("1000"), Just("1001"), Just("1000000"), Just("1000001"),
                         Just("4294967296"), Just("9223372036854775808"), Just("000012")].prop_map(str::to_owned),
        3 => prop_oneof![Just("d"), Just("D"), Just("д"), Just("Д")].prop_map(str::to_owned),
        1 => prop_oneof![Just("%"), Just("F")].prop_map(str::to_owned),
        3 => prop_oneof![Just("!"), Just("r"), Just("kh"), Just("kl"), Just("dh"), Just("dl"), Just("k"), Just("h")]
            .prop_map(str::to_owned),
        2 => prop_oneof![Just(">="), Just("<="), Just(">"), Just("<"), Just("=")].prop_map(str::to_owned),
        3 => prop_oneof![Just("+"), Just("-"), Just("*"), Just("/"), Just("("), Just(")")].prop_map(str::to_owned),
        1 => prop_oneof![Just(" "), Just("\t"), Just("#"), Just(" # атака ё "), Just("\u{7}"), Just("\u{85}"),
                         Just("ж"), Just("x"), Just("\u{7f}")].prop_map(str::to_owned),
    ];
    prop::collection::vec(token, 0..24).prop_map(|tokens| tokens.concat())
}

/// Well-formed dice terms with every modifier, joined by operators: most
/// of them parse and roll, so the evaluation is compared often.
fn dice_expression() -> impl Strategy<Value = String> {
    let sides = prop_oneof![1u32..7, Just(10), Just(20), Just(100), 2u32..=1_000_000];
    let modifier = prop_oneof![
        Just(String::new()),
        (prop_oneof![Just("kh"), Just("kl"), Just("dh"), Just("dl")], 0u32..90).prop_map(|(k, n)| format!("{k}{n}")),
        (0u32..7).prop_map(|v| format!("r{v}")),
        (prop_oneof![Just("<"), Just("<="), Just(">")], 1u32..4).prop_map(|(c, v)| format!("r{c}{v}")),
        Just("!".to_owned()),
        (1u32..7).prop_map(|v| format!("!>{v}")),
    ];
    let success = prop_oneof![3 => Just(String::new()), 1 => (0u32..8).prop_map(|v| format!(">={v}"))];
    let term = (1u32..120, sides, prop::collection::vec(modifier, 0..3), success)
        .prop_map(|(count, sides, modifiers, success)| format!("{count}d{sides}{}{success}", modifiers.concat()));
    let op = prop_oneof![Just("+"), Just("-"), Just("*"), Just("/")];
    (term.clone(), prop::collection::vec((op, term), 0..3))
        .prop_map(|(first, rest)| rest.into_iter().fold(first, |text, (op, term)| format!("{text}{op}{term}")))
}

fn roll_key() -> impl Strategy<Value = RollKey> {
    (any::<[u8; 32]>(), ".{0,12}").prop_map(|(seed, client)| RollKey::derive(&ServerSeed::from_bytes(seed), &client))
}

/// Parses with both engines and requires the same outcome; on success,
/// evaluates with both over the same words and requires the same dice and
/// total (or error), and the same words read.
fn assert_same(text: &str, key: &RollKey, nonce: u64) -> Result<(), TestCaseError> {
    let ours = Expression::parse(text);
    let theirs = reference_parse(text);
    match (ours, theirs) {
        (Ok(expression), Ok((root, comment))) => {
            prop_assert_eq!(expression.root(), &root, "tree of {:?}", text);
            prop_assert_eq!(expression.comment(), comment.as_deref(), "comment of {:?}", text);
            prop_assert_eq!(expression.source(), text);
            let mut terms = Vec::new();
            collect_dice_terms(&root, &mut terms);
            let worst: u64 = terms.iter().map(|t| t.max_dice()).sum();
            prop_assert_eq!(expression.max_dice(), worst, "max_dice of {:?}", text);
            prop_assert_eq!(expression.dice_terms(), terms, "dice terms of {:?}", text);

            let mut ours = RollStream::new(key, nonce);
            let mut theirs = ReferenceStream::new(key, nonce);
            let (dice, total) = evaluate_keeping_dice(&expression, &mut ours);
            let (reference_dice, reference_total) = reference_evaluate(&root, &mut theirs);
            prop_assert_eq!(&dice, &reference_dice, "dice of {:?}", text);
            prop_assert_eq!(&total, &reference_total, "total of {:?}", text);
            // The stream carries on where the roll stopped: the same next word
            // means both read the same number of words.
            prop_assert_eq!(ours.next_word(), theirs.next_word(), "words read by {:?}", text);
            let rolled = evaluate(&expression, &mut RollStream::new(key, nonce));
            prop_assert_eq!(rolled.map(|roll| (roll.total, roll.dice)), total.map(|t| (t, dice)));
        }
        (Err(ours), Err(theirs)) => prop_assert_eq!(ours, theirs, "error for {:?}", text),
        (ours, theirs) => {
            prop_assert!(
                false,
                "{:?}: the engine gives {:?}, the reference {:?}",
                text,
                ours.map(|_| ()),
                theirs.map(|_| ())
            )
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn texts_parse_and_roll_as_before(text in dice_text(), key in roll_key(), nonce in any::<u64>()) {
        assert_same(&text, &key, nonce)?;
    }

    #[test]
    fn expressions_parse_and_roll_as_before(text in dice_expression(), key in roll_key(), nonce in any::<u64>()) {
        assert_same(&text, &key, nonce)?;
    }

    /// Keep/drop over faces with many ties (few sides), terms short and
    /// long (the indices sit on the stack up to 64 dice, on the heap past
    /// that), rerolls among them, and words forced by the test.
    #[test]
    fn keep_and_drop_pick_the_same_dice(
        count in 1u32..=200,
        sides in 1u32..5,
        kind in prop_oneof![Just("kh"), Just("kl"), Just("dh"), Just("dl")],
        n in 0u32..=210,
        reroll in prop::option::of(1u32..3),
        words in prop::collection::vec(any::<u32>(), 1..64),
    ) {
        let reroll = reroll.map(|v| format!("r{v}")).unwrap_or_default();
        let text = format!("{count}d{sides}{reroll}{kind}{n}");
        let expression = Expression::parse(&text).expect("a valid term");
        let (root, _) = reference_parse(&text).expect("a valid term");
        let mut ours = Cycle(&words, 0);
        let mut theirs = Cycle(&words, 0);
        let (dice, total): (Vec<Die>, _) = evaluate_keeping_dice(&expression, &mut ours);
        prop_assert_eq!((&dice, total), (&reference_evaluate(&root, &mut theirs).0, reference_evaluate(&root, &mut Cycle(&words, 0)).1));
        prop_assert_eq!(ours.1, theirs.1);
    }

    /// The stream is `rand_chacha`'s ChaCha20 word for word, across block
    /// boundaries, for any key and nonce (both halves of the nonce set),
    /// with or without a hint of how many words the roll will read.
    #[test]
    fn the_stream_is_rand_chacha(
        key in roll_key(),
        nonce in prop_oneof![any::<u64>(), Just(0), Just(u64::MAX), Just(1 << 32)],
        len in 0usize..300,
        hint in prop::option::of(0u64..300),
    ) {
        let mut ours = RollStream::new(&key, nonce);
        if let Some(words) = hint {
            ours.will_read(words);
        }
        let mut theirs = ReferenceStream::new(&key, nonce);
        for i in 0..len {
            prop_assert_eq!(ours.next_word(), theirs.next_word(), "word {} at nonce {}", i, nonce);
        }
        prop_assert_eq!(ours.words_read(), len as u64);
        // Block 0 narrow, then refills of four blocks from block 1; or, after
        // a hint of more than one block, refills of four from block 0.
        let len = len as u64;
        let blocks = if hint.is_some_and(|words| words > 16) {
            len.div_ceil(64) * 4
        } else {
            u64::from(len > 0) + len.saturating_sub(16).div_ceil(64) * 4
        };
        prop_assert_eq!(ours.blocks_computed(), blocks);
    }

    /// One die from any words with any number of sides, past the
    /// expressions' limit too: the same face from the same words, rejected
    /// ones included.
    #[test]
    fn a_die_is_drawn_as_before(sides in prop_oneof![1u32..=12, 1u32..=Limits::MAX_SIDES, 1u32..=u32::MAX], words in prop::collection::vec(prop_oneof![any::<u32>(), (u32::MAX - 1_000_000)..=u32::MAX], 1..6)) {
        let mut cycle = words.clone();
        cycle.push(0); // a word that every die accepts, so that both stop
        let mut ours = Cycle(&cycle, 0);
        let mut theirs = Cycle(&cycle, 0);
        let nonzero = std::num::NonZeroU32::new(sides).expect("the strategy starts at one face");
        prop_assert_eq!(draw_die(&mut ours, nonzero), engine_before::eval::draw_die(&mut theirs, sides));
        prop_assert_eq!(ours.1, theirs.1);
    }
}
