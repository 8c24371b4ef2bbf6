//! Property tests of the dice engine: determinism, bounds, no panics on any
//! input, and that every word read is accounted for by a drawn die.

use dice::{Expression, RollKey, RollStream, ServerSeed, WordSource, evaluate};
use std::cell::Cell;

use proptest::prelude::*;
use proptest::test_runner::TestRunner;

/// One generated dice term with the bounds its value must lie in, worked
/// out from docs/protocol.md §3 independently of the evaluator.
#[derive(Debug, Clone)]
struct Term {
    text: String,
    min: i64,
    max: i64,
}

fn term() -> impl Strategy<Value = Term> {
    let sides = prop_oneof![Just(2u32), Just(4), Just(6), Just(10), Just(20), Just(100), 2u32..1_000_000];
    (1u32..30, sides, 0u8..6, 1u32..5, 1u32..4).prop_map(|(count, sides, modifier, keep, threshold)| {
        let (n, s) = (i64::from(count), i64::from(sides));
        match modifier {
            0 => Term { text: format!("{count}d{sides}"), min: n, max: n * s },
            1 => {
                let kept = i64::from(keep.min(count));
                Term { text: format!("{count}d{sides}kh{keep}"), min: kept, max: kept * s }
            }
            2 => {
                let kept = n - i64::from(keep.min(count));
                Term { text: format!("{count}d{sides}dl{keep}"), min: kept, max: kept * s }
            }
            // Explosions add at most 100 dice to the term.
            3 => Term { text: format!("{count}d{sides}!"), min: n, max: (n + 100) * s },
            4 => Term { text: format!("{count}d{sides}r{threshold}"), min: n, max: n * s },
            _ => Term { text: format!("{count}d{sides}>={threshold}"), min: 0, max: n },
        }
    })
}

/// A sum/difference of terms and constants with its interval.
fn expression() -> impl Strategy<Value = (String, i64, i64)> {
    let fudge = (1u32..20).prop_map(|n| Term { text: format!("{n}dF"), min: -i64::from(n), max: i64::from(n) });
    let constant = (0i64..1000).prop_map(|c| Term { text: c.to_string(), min: c, max: c });
    let part = prop_oneof![4 => term(), 1 => fudge, 1 => constant];
    (part.clone(), prop::collection::vec((any::<bool>(), part), 0..4)).prop_map(|(first, rest)| {
        let (mut text, mut min, mut max) = (first.text, first.min, first.max);
        for (minus, t) in rest {
            if minus {
                text += &format!("-{}", t.text);
                (min, max) = (min - t.max, max - t.min);
            } else {
                text += &format!("+{}", t.text);
                (min, max) = (min + t.min, max + t.max);
            }
        }
        (text, min, max)
    })
}

fn seed() -> impl Strategy<Value = ServerSeed> {
    any::<[u8; 32]>().prop_map(ServerSeed::from_bytes)
}

/// Records every word read, so the draws can be checked against them.
struct Recording {
    inner: RollStream,
    words: Vec<u32>,
}

impl WordSource for Recording {
    fn next_word(&mut self) -> u32 {
        let word = self.inner.next_word();
        self.words.push(word);
        word
    }
}

/// Words from a fixed list, cycled: lets the test force rejected words.
struct Cycle(Vec<u32>, usize);

impl WordSource for Cycle {
    fn next_word(&mut self) -> u32 {
        let word = self.0[self.1 % self.0.len()];
        self.1 += 1;
        word
    }
}

/// Replays the rejection rule over recorded words: each die must consume
/// the rejected words before it and then exactly the word that shows its
/// face, and no word may be left over.
fn assert_words_account_for_dice(words: &[u32], dice: &[dice::Die], fudge_offsets: &[i64]) {
    let mut next = 0;
    for (die, offset) in dice.iter().zip(fudge_offsets) {
        let sides = u64::from(die.sides);
        let limit = (1u64 << 32) - (1u64 << 32) % sides;
        loop {
            let word = u64::from(*words.get(next).expect("a die without a word"));
            next += 1;
            if word < limit {
                assert_eq!(die.value + offset, 1 + (word % sides) as i64, "die does not match its word");
                break;
            }
        }
    }
    assert_eq!(next, words.len(), "words were read that no die used");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn evaluation_is_deterministic((text, _, _) in expression(), seed in seed(), client in ".{0,40}", nonce in any::<u64>()) {
        let first = dice::roll(&text, &seed, &client, nonce).expect("valid expression");
        let second = dice::roll(&text, &seed, &client, nonce).expect("valid expression");
        prop_assert_eq!(first, second);
    }

    #[test]
    fn totals_lie_within_the_bounds_of_the_expression((text, min, max) in expression(), seed in seed(), nonce in any::<u64>()) {
        let (_, roll) = dice::roll(&text, &seed, "bounds", nonce).expect("valid expression");
        prop_assert!(min <= roll.total && roll.total <= max, "{} gave {} outside {}..={}", text, roll.total, min, max);
    }

    #[test]
    fn words_read_match_the_dice_drawn((text, _, _) in expression(), seed in seed(), nonce in any::<u64>()) {
        let parsed = Expression::parse(&text).expect("valid expression");
        let mut source = Recording { inner: RollStream::new(&RollKey::derive(&seed, "words"), nonce), words: Vec::new() };
        let roll = evaluate(&parsed, &mut source).expect("evaluates");
        prop_assert_eq!(source.inner.words_read(), source.words.len() as u64);
        // A fudge die (d3) shows face - 2: walk the terms to know which dice are fudge.
        let mut offsets = Vec::new();
        let mut i = 0;
        for term in parsed.dice_terms() {
            let offset = if term.sides == dice::expr::Sides::Fudge { 2 } else { 0 };
            for _ in 0..term.count {
                let first = i;
                i += if roll.dice[i].rerolled { 2 } else { 1 };
                while i < roll.dice.len() && roll.dice[i].exploded { i += 1; }
                offsets.extend(std::iter::repeat_n(offset, i - first));
            }
        }
        prop_assert_eq!(offsets.len(), roll.dice.len());
        assert_words_account_for_dice(&source.words, &roll.dice, &offsets);
    }

    #[test]
    fn rejected_words_are_skipped_not_used(words in prop::collection::vec(prop_oneof![any::<u32>(), (u32::MAX - 64)..=u32::MAX], 1..8), sides in 1u32..=1_000_000, count in 1u32..20) {
        // Guarantee progress: a word of 0 is always accepted.
        let mut cycle = words.clone();
        cycle.push(0);
        let parsed = Expression::parse(&format!("{count}d{sides}")).expect("valid");
        let mut source = Cycle(cycle.clone(), 0);
        let roll = evaluate(&parsed, &mut source).expect("evaluates");
        let read: Vec<u32> = (0..source.1).map(|i| cycle[i % cycle.len()]).collect();
        assert_words_account_for_dice(&read, &roll.dice, &vec![0; roll.dice.len()]);
    }

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>(), seed in seed()) {
        if let Ok(parsed) = Expression::parse(&text) {
            let _ = evaluate(&parsed, &mut RollStream::new(&RollKey::derive(&seed, ""), 0));
        }
    }
}

/// One edit to a valid expression (see [`near_dice_text`]).
#[derive(Debug, Clone)]
enum Edit {
    None,
    Insert(prop::sample::Index, char),
    Remove(prop::sample::Index),
    Append(&'static str),
    Parens,
}

/// Text near the grammar: a valid expression as [`expression`] makes it,
/// then maybe one edit — a character of the dice alphabet inserted, one
/// removed, a modifier, comparison, operator or comment appended, the whole
/// in parentheses — so that both sides of the parser's decisions are
/// reached, and evaluation gets to run.
fn near_dice_text() -> impl Strategy<Value = String> {
    let alphabet: Vec<char> = "0123456789dDдДF%!rkhl<>=+-*/() #".chars().collect();
    let tails = vec!["kh2", "dl1", "!", "!>5", "r<2", ">=4", "<=2", "=1", "*3", "/2", "/0", "-", " # attack", "kh1kl1"];
    let edit = prop_oneof![
        3 => Just(Edit::None),
        2 => (any::<prop::sample::Index>(), prop::sample::select(alphabet)).prop_map(|(at, c)| Edit::Insert(at, c)),
        2 => any::<prop::sample::Index>().prop_map(Edit::Remove),
        2 => prop::sample::select(tails).prop_map(Edit::Append),
        1 => Just(Edit::Parens),
    ];
    (expression(), edit).prop_map(|((text, _, _), edit)| {
        // `expression` writes ASCII only, so byte positions are characters.
        let mut text = text;
        match edit {
            Edit::None => {}
            Edit::Insert(at, c) => text.insert(at.index(text.len() + 1), c),
            Edit::Remove(at) => {
                text.remove(at.index(text.len()));
            }
            Edit::Append(tail) => text.push_str(tail),
            Edit::Parens => text = format!("({text})"),
        }
        text
    })
}

/// No text near the dice language makes the parser or the evaluator panic:
/// garbage from the dice alphabet, digits too long for any limit, deep
/// parentheses, and valid expressions with one edit. Errors are expected,
/// but a run where nearly everything was refused would never have
/// evaluated anything, so enough must parse and evaluate — and enough must
/// be refused.
#[test]
fn dice_like_text_never_panics() {
    let garbage = proptest::string::string_regex(
        r"[0-9dDдДF%!rkhl<>=+\-*/() #\u{0}-\u{1f}ёжЖ]{0,60}|[0-9]{15,40}d[0-9]{1,30}|\({0,40}1d6\){0,40}",
    )
    .expect("a valid regex");
    let strategy = (prop_oneof![1 => garbage, 2 => near_dice_text()], seed());
    // (cases, parsed, evaluated, refused)
    let counts = Cell::new((0u32, 0u32, 0u32, 0u32));
    let config = ProptestConfig { cases: 512, source_file: Some(file!()), ..ProptestConfig::default() };
    let result = TestRunner::new(config).run(&strategy, |(text, seed)| {
        let (mut cases, mut parsed, mut evaluated, mut refused) = counts.get();
        cases += 1;
        match Expression::parse(&text) {
            Ok(expression) => {
                parsed += 1;
                let outcome = evaluate(&expression, &mut RollStream::new(&RollKey::derive(&seed, ""), 1));
                if let Ok(roll) = outcome {
                    evaluated += 1;
                    prop_assert!(roll.dice.len() as u64 <= expression.max_dice());
                }
            }
            Err(error) => {
                refused += 1;
                // A place named (`… at N`, 1-based, in characters) lies in
                // the text or just after its end.
                let message = error.to_string();
                prop_assert!(!message.is_empty());
                if let Some(at) = last_position(&message) {
                    prop_assert!((1..=text.chars().count() + 1).contains(&at), "{message:?} for {text:?}");
                }
            }
        }
        counts.set((cases, parsed, evaluated, refused));
        Ok(())
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
    let (cases, parsed, evaluated, refused) = counts.get();
    assert!(parsed * 4 >= cases, "only {parsed} of {cases} texts parsed");
    assert!(evaluated * 5 >= cases, "only {evaluated} of {cases} texts evaluated");
    assert!(refused * 5 >= cases, "only {refused} of {cases} texts were refused");
}

/// The position an error message names last (`… at N`).
fn last_position(message: &str) -> Option<usize> {
    message
        .match_indices(" at ")
        .filter_map(|(i, _)| message[i + 4..].chars().take_while(char::is_ascii_digit).collect::<String>().parse().ok())
        .last()
}
