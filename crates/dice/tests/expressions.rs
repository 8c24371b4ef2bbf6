//! The expression language against hand-worked cases: words are fed in
//! directly, so the expected faces follow from docs/protocol.md §2 by hand
//! (a word `w` below the rejection limit shows face `1 + w mod s`).

use dice::{Die, EvalError, ExprError, Expression, Roll, WordSource, evaluate, render};

/// Hands out the given words in order; panics if the evaluation wants more
/// than the case planned, which is itself a draw-order bug.
struct Words<I: Iterator<Item = u32>>(I);

impl<I: Iterator<Item = u32>> WordSource for Words<I> {
    fn next_word(&mut self) -> u32 {
        self.0.next().expect("the evaluation drew more words than planned")
    }
}

fn eval_with(expression: &str, words: &[u32]) -> Roll {
    let parsed = Expression::parse(expression).unwrap_or_else(|e| panic!("{expression}: {e}"));
    let mut source = Words(words.iter().copied());
    let roll = evaluate(&parsed, &mut source).unwrap_or_else(|e| panic!("{expression}: {e}"));
    assert!(source.0.next().is_none(), "{expression} left planned words unread");
    roll
}

fn die(sides: u32, value: i64) -> Die {
    Die { sides, value, kept: true, rerolled: false, exploded: false }
}

fn dropped(mut d: Die) -> Die {
    d.kept = false;
    d
}

fn parse_error(expression: &str) -> String {
    Expression::parse(expression).err().unwrap_or_else(|| panic!("{expression:?} must not parse")).to_string()
}

#[test]
fn faces_follow_the_word_and_rejection_rule() {
    // d6: limit = 2^32 - (2^32 mod 6) = 4294967292; words at or above it are discarded.
    let roll = eval_with("2d6", &[4_294_967_292, 4_294_967_295, 5, 4_294_967_291]);
    // 5 -> face 6; 4294967291 mod 6 = 5 -> face 6.
    assert_eq!(roll.dice, vec![die(6, 6), die(6, 6)]);
    assert_eq!(roll.total, 12);
}

#[test]
fn fudge_dice_are_d3_minus_two() {
    let roll = eval_with("3dF", &[0, 1, 2]);
    assert_eq!(roll.dice, vec![die(3, -1), die(3, 0), die(3, 1)]);
    assert_eq!(roll.total, 0);
}

#[test]
fn percent_is_a_hundred_sides_and_cyrillic_letters_roll() {
    assert_eq!(eval_with("d%", &[99]).dice, vec![die(100, 100)]);
    assert_eq!(eval_with("2Д6", &[0, 1]).total, 3);
    assert_eq!(eval_with("1д4+1D4", &[3, 3]).total, 8);
}

#[test]
fn keep_highest_breaks_ties_toward_the_earlier_die() {
    // faces 5, 3, 5, 5: kh2 keeps the first two fives.
    let roll = eval_with("4d6kh2", &[4, 2, 4, 4]);
    assert_eq!(roll.dice, vec![die(6, 5), dropped(die(6, 3)), die(6, 5), dropped(die(6, 5))]);
    assert_eq!(roll.total, 10);
}

#[test]
fn drop_lowest_drops_the_earlier_die_first() {
    // faces 2, 2, 6: dl1 drops the first two.
    let roll = eval_with("3d6dl1", &[1, 1, 5]);
    assert_eq!(roll.dice, vec![dropped(die(6, 2)), die(6, 2), die(6, 6)]);
    // kl1 keeps the earlier of two equal lows; dh1 drops the highest.
    let roll = eval_with("3d6kl1", &[1, 1, 5]);
    assert_eq!(roll.dice, vec![die(6, 2), dropped(die(6, 2)), dropped(die(6, 6))]);
    let roll = eval_with("3d6dh1", &[5, 1, 5]);
    assert_eq!(roll.total, 8);
    assert!(!roll.dice[0].kept && roll.dice[2].kept);
}

#[test]
fn reroll_replaces_right_away_and_only_once() {
    // r1: first die 1 -> rerolled, replacement 1 stays (rerolls happen once).
    let roll = eval_with("2d6r1", &[0, 0, 3]);
    let rerolled = Die { sides: 6, value: 1, kept: false, rerolled: true, exploded: false };
    assert_eq!(roll.dice, vec![rerolled, die(6, 1), die(6, 4)]);
    assert_eq!(roll.total, 5);
    // r<3 rerolls 1 and 2.
    assert_eq!(eval_with("1d6r<3", &[1, 5]).total, 6);
}

#[test]
fn explosions_chain_and_are_never_rerolled() {
    // 1d6!r1: 6 explodes into 1 (an explosion die is never rerolled), which stops it.
    let roll = eval_with("1d6!r1", &[5, 0]);
    let exploded = Die { sides: 6, value: 1, kept: true, rerolled: false, exploded: true };
    assert_eq!(roll.dice, vec![die(6, 6), exploded]);
    assert_eq!(roll.total, 7);
    // A rerolled die's replacement may explode.
    let roll = eval_with("1d6r1!", &[0, 5, 2]);
    assert_eq!(roll.dice.len(), 3);
    assert_eq!(roll.total, 9);
}

#[test]
fn the_explosion_budget_stops_at_a_hundred_dice_per_term() {
    let mut words = vec![5u32; 101]; // the first die and 100 explosions, all sixes
    words.push(0); // the second term's die
    let roll = eval_with("1d6!+1d6", &words);
    assert_eq!(roll.dice.len(), 102);
    assert_eq!(roll.dice.iter().filter(|d| d.exploded).count(), 100);
    assert_eq!(roll.total, 101 * 6 + 1);
}

#[test]
fn success_counting_counts_kept_dice_that_meet_it() {
    // faces 1, 6, 5, 2 with kh3 keeps 6, 5, 2; >=5 counts two.
    assert_eq!(eval_with("4d6kh3>=5", &[0, 5, 4, 1]).total, 2);
    assert_eq!(eval_with("3d10<2", &[0, 1, 0]).total, 2);
}

#[test]
fn arithmetic_is_left_to_right_with_truncating_division() {
    assert_eq!(eval_with("1d6-1d6", &[5, 0]).total, 5);
    assert_eq!(eval_with("-7/2", &[]).total, -3);
    assert_eq!(eval_with("7/-2", &[]).total, -3);
    assert_eq!(eval_with("2+3*4", &[]).total, 14);
    assert_eq!(eval_with("(2+3)*4 # comment", &[]).total, 20);
    assert_eq!(eval_with(" 1d4 + 2 ", &[0]).total, 3);
}

#[test]
fn runtime_errors_name_the_operator() {
    let run = |expression: &str, words: Vec<u32>| {
        let parsed = Expression::parse(expression).expect("parses");
        evaluate(&parsed, &mut Words(words.into_iter())).expect_err("must fail")
    };
    assert_eq!(run("1d6/(1d2-1)", vec![0, 0]), EvalError::DivisionByZero { position: 4 });
    assert_eq!(run("9223372036854775807+1", vec![]), EvalError::Overflow { position: 20 });
    assert_eq!(run("3037000500*3037000500", vec![]), EvalError::Overflow { position: 11 });
    assert_eq!(run("-9223372036854775807-1/1-1", vec![]), EvalError::Overflow { position: 25 });
}

#[test]
fn messages_say_what_is_wrong_and_where() {
    assert_eq!(parse_error("2d"), "expected a number after 'd' at 3");
    assert_eq!(parse_error("2д"), "expected a number after 'д' at 3");
    assert_eq!(parse_error(""), "expected a number, a dice term or '(', found the end at 1");
    assert_eq!(parse_error("1d6+"), "expected a number, a dice term or '(', found the end at 5");
    assert_eq!(parse_error("1d6)"), "unmatched ')' at 4");
    assert_eq!(parse_error("(((1d6)"), "expected ')' to close the '(' at 2, found the end at 8");
    assert_eq!(parse_error("abc"), "expected a number, a dice term or '(', found 'a' at 1");
    assert_eq!(parse_error("2d6**2"), "expected a number, a dice term or '(', found '*' at 5");
    assert_eq!(parse_error("ДД"), "expected a number after 'Д' at 2");
    assert_eq!(parse_error("1d6\u{7}"), "unexpected control character U+0007 at 4");
}

/// A comment is free text, but it is pasted into forum posts and printed on
/// terminals with the roll: no control character may ride along, not even
/// a line break (it would forge a line) or a tab.
#[test]
fn comments_refuse_control_characters_naming_them_and_where() {
    assert_eq!(parse_error("1d20 # \u{1b}[2Jyou crit"), "the comment holds control character U+001B at 8");
    assert_eq!(parse_error("1d20 #ding\u{7}"), "the comment holds control character U+0007 at 11");
    assert_eq!(parse_error("1d20 # a\u{7f}"), "the comment holds control character U+007F at 9");
    assert_eq!(parse_error("1d20 # ok\nJUDGE: void"), "the comment holds control character U+000A at 10");
    assert_eq!(parse_error("1d20 #\ttab"), "the comment holds control character U+0009 at 7");
    assert_eq!(parse_error("1d20 # \u{9b}31m"), "the comment holds control character U+009B at 8");
    for c in (0u32..0x20).chain([0x7f]).filter_map(char::from_u32) {
        assert!(Expression::parse(&format!("1d6 # x{c}")).is_err(), "U+{:04X} in a comment", u32::from(c));
    }
    // Printable text, Cyrillic and emoji included, stays as written.
    let parsed = Expression::parse("1d20+5 # удар мечом ⚔").expect("a plain comment parses");
    assert_eq!(parsed.comment(), Some("удар мечом ⚔"));
}

#[test]
fn every_limit_is_named() {
    assert_eq!(parse_error("0d6"), "dice count 0 at 1 is outside the allowed 1..=1000");
    assert_eq!(parse_error("1001d6"), "dice count 1001 at 1 is outside the allowed 1..=1000");
    assert_eq!(parse_error("1d0"), "die sides 0 at 3 is outside the allowed 1..=1000000");
    assert_eq!(parse_error("1d1000001"), "die sides 1000001 at 3 is outside the allowed 1..=1000000");
    assert_eq!(
        parse_error("99999999999999999999"),
        "number 99999999999999999999 at 1 is outside the allowed 0..=9223372036854775807"
    );
    assert_eq!(parse_error("1d6kh1kl1"), "a dice term takes at most one keep/drop modifier; another one is at 7");
    assert!(matches!(Expression::parse("1d6r1r2"), Err(ExprError::RepeatedModifier { position: 6, .. })));
    assert_eq!(
        parse_error("1d1!"),
        "the explosion condition at 4 is met by every face of a d1, so it would never stop"
    );
    assert!(matches!(Expression::parse("1d6!>=1"), Err(ExprError::EndlessExplosion { .. })));
    assert!(matches!(Expression::parse("1d6!<7"), Err(ExprError::EndlessExplosion { .. })));
    assert!(Expression::parse("1dF!>=0").is_ok());
    assert!(matches!(Expression::parse("1dF!<=1"), Err(ExprError::EndlessExplosion { .. })));
    let long = format!("1{}", "+1".repeat(500));
    assert_eq!(parse_error(&long), "expression is 1001 bytes long; the limit is 1000 bytes");
    let deep = format!("{}1{}", "(".repeat(33), ")".repeat(33));
    assert_eq!(parse_error(&deep), "nesting deeper than 32 levels at 33");
    let fine = format!("{}1{}", "(".repeat(32), ")".repeat(32));
    assert!(Expression::parse(&fine).is_ok());
    // Ten terms of a thousand dice are allowed; one more die is not.
    let ten_thousand = ["1000d6"; 10].join("+");
    assert!(Expression::parse(&ten_thousand).is_ok());
    assert_eq!(
        parse_error(&format!("{ten_thousand}+1d6")),
        "the expression may draw up to 10001 dice (rerolls and explosions included); the limit is 10000 dice per roll"
    );
}

#[test]
fn rendering_strikes_out_dropped_dice_and_marks_explosions() {
    let render_with = |expression: &str, words: &[u32]| {
        render(&Expression::parse(expression).expect("parses"), &eval_with(expression, words))
    };
    assert_eq!(render_with("4d6kh3", &[5, 4, 2, 0]), "4d6kh3: [6, 5, 3, ~~1~~] = 14");
    assert_eq!(render_with("2d6!+1", &[5, 2, 3]), "2d6!+1: [6, 3!, 4] = 14");
    assert_eq!(render_with("1d6r1 # to hit", &[0, 4]), "1d6r1: [~~1~~, 5] = 5 — to hit");
    assert_eq!(render_with("1d4-1d4", &[3, 0]), "1d4-1d4: [4] [1] = 3");
    assert_eq!(render_with("2dF", &[2, 0]), "2dF: [+1, -1] = 0");
    assert_eq!(render_with("2+2", &[]), "2+2 = 4");
}

#[test]
fn pieces_tell_the_players_text_and_the_uncounted_dice_apart() {
    use dice::Piece::{Fixed, Struck, Text};
    let pieces_of = |expression: &str, words: &[u32]| {
        dice::pieces(&Expression::parse(expression).expect("parses"), &eval_with(expression, words))
    };
    let s = |text: &str| text.to_owned();
    assert_eq!(
        pieces_of("1d6r1 # to [b]hit", &[0, 4]),
        [Text(s("1d6r1")), Fixed(s(": [")), Struck(s("1")), Fixed(s(", 5] = 5 — ")), Text(s("to [b]hit"))]
    );
    assert_eq!(
        pieces_of("4d6kh3", &[5, 4, 2, 0]),
        [Text(s("4d6kh3")), Fixed(s(": [6, 5, 3, ")), Struck(s("1")), Fixed(s("] = 14"))]
    );
    assert_eq!(pieces_of("2+2", &[]), [Text(s("2+2")), Fixed(s(" = 4"))]);
}

#[test]
fn a_failed_evaluation_still_hands_back_its_dice() {
    let parsed = Expression::parse("1d6/(1d2-1)+1d6").expect("parses");
    let (drawn, total) = dice::evaluate_keeping_dice(&parsed, &mut Words([3u32, 0].into_iter()));
    assert_eq!(total, Err(EvalError::DivisionByZero { position: 4 }));
    // The d6 showed 4 and the d2 showed 1; the last term was never reached.
    assert_eq!(drawn, vec![die(6, 4), die(2, 1)]);
}

#[test]
fn raw_faces_undo_the_fudge_shift_and_keep_draw_order() {
    let parsed = Expression::parse("2dF+1d6r1").expect("parses");
    let roll = eval_with("2dF+1d6r1", &[0, 2, 0, 4]);
    // dF faces 1 and 3 show -1 and +1; the d6 shows 1 (rerolled) then 5.
    assert_eq!(dice::raw_faces(&parsed, &roll.dice), vec![1, 3, 1, 5]);
}
