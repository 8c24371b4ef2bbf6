//! How many allocations a parse and an evaluation make, counted per thread
//! by `allocation-counter` (whose global allocator this test binary links).
//! The counts follow from what each step must own, worked out by hand:
//! a parsed expression owns its text (unless it is one dice term and
//! nothing else, whose text is the term's), each dice term its own text,
//! the comment, and two boxes per binary operator (one for a negation); an
//! evaluation owns the record of its dice, reserved once. Anything more is
//! a regression of issue 24's profile (BENCHMARKS.md, "Dice expression
//! evaluation").

use allocation_counter::measure;
use dice::{Expression, RollKey, RollStream, ServerSeed, WordSource, evaluate};

fn key() -> RollKey {
    RollKey::derive(&ServerSeed::from_bytes([42; 32]), "allocations")
}

fn parse_allocations(text: &str) -> u64 {
    let mut parsed = None;
    let info = measure(|| parsed = Some(Expression::parse(text)));
    assert!(parsed.is_some_and(|p| p.is_ok()), "{text} parses");
    info.count_total
}

fn evaluate_allocations(text: &str, nonce: u64) -> u64 {
    let expression = Expression::parse(text).expect("parses");
    let key = key();
    let mut rolled = None;
    let info = measure(|| rolled = Some(evaluate(&expression, &mut RollStream::new(&key, nonce))));
    assert!(rolled.is_some_and(|r| r.is_ok()), "{text} evaluates");
    info.count_total
}

#[test]
fn a_parse_allocates_only_what_the_expression_owns() {
    // A text that is one dice term and nothing else is that term's text,
    // kept once.
    for text in ["2d10", "4d6kh3", "100d6!", "8d6r1dl2>=4", "d%", "3дF"] {
        assert_eq!(parse_allocations(text), 1, "{text}");
    }
    // With anything around the term, the text and the term's text.
    for text in [" 4d6kh3", "4d6kh3 ", "4d6kh3 # fire", "(4d6kh3)"] {
        let comment = u64::from(text.contains('#'));
        assert_eq!(parse_allocations(text), 2 + comment, "{text:?}");
    }
    // The text, the term's text and the addition's two boxes.
    assert_eq!(parse_allocations("1d20+5"), 4);
    // The text, two terms' texts, the comment, and four binary operators'
    // boxes: (2d6+3), (…)*2, 1d4/2 and the subtraction.
    assert_eq!(parse_allocations("(2d6+3)*2-1d4/2 # attack"), 12);
    // A negation boxes its operand: the text and one box.
    assert_eq!(parse_allocations("-5"), 2);
}

#[test]
fn an_evaluation_allocates_the_record_once() {
    for nonce in 0..20 {
        // Worst cases of 2, 4, 200 and 16 dice: room for all of them at once.
        for text in ["2d10", "4d6kh3", "100d6!", "8d6r1dl2>=4", "(2d6+3)*2-1d4/2"] {
            assert_eq!(evaluate_allocations(text, nonce), 1, "{text} at nonce {nonce}");
        }
        // Keep/drop over more than 64 dice sorts its picks on the heap.
        assert_eq!(evaluate_allocations("100d6kh3", nonce), 2, "100d6kh3 at nonce {nonce}");
    }
}

#[test]
fn the_word_stream_allocates_nothing() {
    let key = key();
    let info = measure(|| {
        let mut narrow = RollStream::new(&key, 7);
        let mut wide = RollStream::new(&key, 7);
        wide.will_read(100);
        for _ in 0..200 {
            std::hint::black_box((narrow.next_word(), wide.next_word()));
        }
    });
    assert_eq!(info.count_total, 0);
}
