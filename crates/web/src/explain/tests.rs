//! Each view rendered for a real battle in both languages: the closed
//! `pokemon-d6@2` demo export the verifier's tests use (its seed revealed),
//! an open one (unrevealed), and a `pbta-2d6@1` move folded in memory.
//! Expected texts are docs/rules.md's numbers for those dice, written here by
//! hand.

use super::*;
use rules::{Action, Battle};
use serde_json::json;

const CLOSED: &str = include_str!("../../../../web/verifier/test/fixtures/demo-pokemon-closed.jsonl");
const OPEN: &str = include_str!("../../../../web/verifier/test/fixtures/open-pokemon.jsonl");

fn lines(text: &str) -> Vec<ExportLine> {
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).expect("an export line")).collect()
}

/// Markup as text with tags removed (block elements separated by a space)
/// and whitespace collapsed.
fn visible(markup: &Markup) -> String {
    let html = markup.clone().into_string();
    let mut out = String::new();
    let mut rest = html.as_str();
    while let Some(start) = rest.find('<') {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('>').map_or(rest.len(), |end| start + end + 1);
        let name: String =
            rest[start + 1..end].trim_start_matches('/').chars().take_while(char::is_ascii_alphanumeric).collect();
        if ["dt", "dd", "h3", "h4", "li", "tr", "td", "th", "p", "dl", "table", "section", "div"]
            .contains(&name.as_str())
        {
            out.push(' ');
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out.replace("&gt;", ">").replace("&lt;", "<").replace("&amp;", "&").split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn a_pbta_move_shows_its_dice_trait_help_and_row_in_both_languages() {
    let opening = json!({"ruleset": "pbta-2d6@1", "participants": [{"id": "ash", "traits": {"wits": 2}}]});
    let battle = Battle::open(&serde_json::from_value(opening).expect("an opening")).expect("opens");
    let action: Action =
        serde_json::from_value(json!({"type": "move", "actor": "ash", "trait": "wits", "helpers": ["brock"]}))
            .expect("an action");
    let outcome = battle.resolve(0, &action, &[4, 5]).expect("resolves").outcome;
    let explanation = why::explain(&battle, 0, &action, &[4, 5], &outcome);

    let en = visible(&action_markup(Lang::En, &explanation));
    assert!(en.contains("dice: 4 (ash: die d6), 5 (ash: die d6)"), "{en}");
    assert!(en.contains("total (ash) = 4 + 5 + trait (wits) 2 + help (brock) 1 = 12"), "{en}");
    assert!(en.contains("rule: total 10 or more → full success (docs/rules.md §4.1)"), "{en}");

    let ru = visible(&action_markup(Lang::Ru, &explanation));
    assert!(ru.contains("кости: 4 (ash: кубик d6), 5 (ash: кубик d6)"), "{ru}");
    assert!(ru.contains("итог (ash) = 4 + 5 + черта (смекалка) 2 + помощь (brock) 1 = 12"), "{ru}");
    assert!(ru.contains("правило: итог 10 и больше → полный успех"), "{ru}");
}

fn action_markup(lang: Lang, explanation: &Explanation) -> Markup {
    action(lang, explanation)
}

#[test]
fn the_demo_battle_explains_its_hit_and_its_uncounted_dodge() {
    let lines = lines(CLOSED);
    let folded = fold(&lines, None).expect("the demo folds");
    // v2: power die 3 → hit ×2/3 of 90 = 60.
    let hit = folded.explanations.get(&2).expect("v2 is an action");
    let en = visible(&action(Lang::En, hit));
    assert!(en.contains("dice: 3 (pikachu: power d6)"), "{en}");
    assert!(en.contains("rule: power 3 → hit ×2/3 (docs/rules.md §1.1)"), "{en}");
    assert!(en.contains("damage = power 90 × multiplier 2/3 = 60"), "{en}");
    let ru = visible(&action(Lang::Ru, hit));
    assert!(ru.contains("правило: сила 3 → попадание ×2/3"), "{ru}");
    assert!(ru.contains("урон = сила 90 × множитель 2/3 = 60"), "{ru}");

    // v4: a dodge die of 6 is a clean dodge that is not counted.
    let dodge = folded.explanations.get(&4).expect("v4 is an action");
    let en = visible(&action(Lang::En, dodge));
    // A lone die is its value, written once (not "= 6 = 6").
    assert!(en.contains("effective die (meowth) = 6 "), "{en}");
    assert!(!en.contains("= 6 = 6"), "{en}");
    assert!(en.contains("effective die 6 → clean dodge, not counted"), "{en}");
    assert!(en.contains("damage after the dodge = incoming damage 60 × damage kept 0% = 0"), "{en}");
    assert!(!en.contains("dodges used"), "nothing changed, nothing listed: {en}");
    let ru = visible(&action(Lang::Ru, dodge));
    assert!(ru.contains("итог 6 → чистое уклонение, не засчитано"), "{ru}");

    // v6: Fake Out makes pikachu flinch; the change is listed.
    let fake_out = folded.explanations.get(&6).expect("v6 is an action");
    let en = visible(&action(Lang::En, fake_out));
    assert!(en.contains("pikachu: flinched no → yes"), "{en}");
    assert!(en.contains("an interrupting move: the target flinches"), "{en}");
    let ru = visible(&action(Lang::Ru, fake_out));
    assert!(ru.contains("pikachu: вздрогнул нет → да"), "{ru}");
}

#[test]
fn the_state_panel_shows_the_state_at_any_version() {
    let lines = lines(CLOSED);
    let after_fake_out = state_at(&lines, 6).expect("folds to v6");
    let en = visible(&state_panel(Lang::En, &after_fake_out));
    assert!(
        en.contains("pikachu dodges used 0 dodges left 5 statuses (turns left) — preparing — flinched yes"),
        "{en}"
    );
    let ru = visible(&state_panel(Lang::Ru, &after_fake_out));
    assert!(ru.contains("pikachu уклонений использовано 0 уклонений осталось 5"), "{ru}");
    assert!(ru.contains("вздрогнул да"), "{ru}");
    // v7 (the flinched Thunder Wave) clears the flag again.
    let after = visible(&state_panel(Lang::En, &state_at(&lines, 7).expect("folds to v7")));
    assert!(
        after.contains("pikachu dodges used 0 dodges left 5 statuses (turns left) — preparing — flinched no"),
        "{after}"
    );
    // Before v6 pikachu had not flinched.
    let before = visible(&state_panel(Lang::En, &state_at(&lines, 5).expect("folds to v5")));
    assert!(before.contains("flinched no"), "{before}");
    // Unknown keys are shown as they are.
    let odd = json!({"battle": {}, "participants": [{"id": "x", "fields": {"mana": 3}}]});
    assert!(visible(&state_panel(Lang::Ru, &odd)).contains("mana 3"));
}

#[test]
fn fields_are_translated_and_forum_text_is_kept() {
    let lines = lines(CLOSED);
    let event = &lines.iter().find(|l| l.version == 2).expect("v2").event;
    let en = fields_table(Lang::En, &event["action"]).into_string();
    assert!(en.contains("<th scope=\"row\">move</th><td><span class=\"forum-text\">Thunderbolt</span>"), "{en}");
    assert!(en.contains("<th scope=\"row\">action</th><td><span title=\"attack\">attack</span>"), "{en}");
    let ru = fields_table(Lang::Ru, &event["action"]).into_string();
    assert!(ru.contains("<th scope=\"row\">приём</th><td><span class=\"forum-text\">Thunderbolt</span>"), "{ru}");
    assert!(ru.contains("<th scope=\"row\">действие</th><td><span title=\"attack\">атака</span>"), "{ru}");
    assert!(ru.contains("<th scope=\"row\">сила</th><td>90</td>"), "{ru}");
    let outcome = fields_table(Lang::Ru, &event["outcome"]).into_string();
    assert!(outcome.contains("<th scope=\"row\">результат</th><td><span title=\"hit\">попадание</span>"), "{outcome}");
    assert!(outcome.contains("<th scope=\"row\">множитель</th><td>2/3</td>"), "{outcome}");
    assert!(!outcome.contains(">multiplier<"), "{outcome}");
}

#[test]
fn the_calculation_shows_the_words_that_became_the_faces() {
    let lines = lines(CLOSED);
    let markup = calculation(Lang::En, &lines, 1).into_string();
    // The roll key of docs/protocol.md §2 for the revealed seed and client seed.
    let seed = dice::ServerSeed::from_hex("2449c288d37dc86b3ed1812a08d72dfbb9f04716b5d608d177debf4f534500ce")
        .expect("the fixture's seed");
    let key = dice::RollKey::derive(&seed, "forum:demo/demo-18ed0bf2a33327c6/pokemon-d6@2");
    assert!(markup.contains(&key.to_hex()), "{markup}");
    let text = visible(&calculation(Lang::En, &lines, 1));
    // One d6 recorded as 3: the accepted word w gives 1 + w mod 6 = 3.
    assert!(text.contains("mod 6 = 3"), "{text}");
    assert!(!markup.contains("mismatch"), "{markup}");
    let ru = visible(&calculation(Lang::Ru, &lines, 1));
    assert!(ru.contains("Показать расчёт") && ru.contains("ключ броска"), "{ru}");

    // A recorded face that the words do not give is marked.
    let mut forged = lines.clone();
    if let Some(line) = forged.iter_mut().find(|l| l.version == 1) {
        line.event["dice"][0]["value"] = json!(5);
    }
    assert!(calculation(Lang::En, &forged, 1).into_string().contains("word-face mismatch"));

    // Unrevealed: no calculation, a note instead.
    let open = self::lines(OPEN);
    let text = visible(&calculation(Lang::En, &open, 1));
    assert!(text.contains("not revealed yet"), "{text}");
    assert!(!text.contains("ChaCha20 word"), "{text}");
    // Not a roll: nothing.
    assert_eq!(calculation(Lang::En, &lines, 2).into_string(), "");
}

#[test]
fn a_fudge_roll_maps_words_to_minus_blank_plus() {
    let seed = "2449c288d37dc86b3ed1812a08d72dfbb9f04716b5d608d177debf4f534500ce";
    let (_, uses, derived) = derivation(seed, "client", "10dF", 0).expect("derives");
    let (_, expected) =
        dice::roll("10dF", &dice::ServerSeed::from_hex(seed).expect("seed"), "client", 0).expect("rolls");
    assert_eq!(derived, expected.dice);
    let faces: Vec<i64> = uses.iter().filter_map(|u| u.face).map(|f| i64::from(f) - 2).collect();
    let values: Vec<i64> = expected.dice.iter().map(|d| d.value).collect();
    assert_eq!(faces, values);
}

#[test]
fn a_record_that_does_not_fold_stops_the_fold_there() {
    let mut lines = lines(CLOSED);
    if let Some(line) = lines.iter_mut().find(|l| l.version == 6) {
        line.record = "AAAA".to_owned();
    }
    let folded = fold(&lines, None).expect("the battle opened");
    assert_eq!(folded.stopped.as_ref().map(|problem| problem.version), Some(6));
    assert_eq!(folded.explanations.keys().copied().collect::<Vec<_>>(), vec![2, 4]);
    assert!(state_at(&lines, 5).is_ok());
    assert_eq!(state_at(&lines, 6).map_err(|problem| problem.version), Err(6));
}

/// The explanations sit inside an event's element: nothing in them may be
/// what the verifier's DOM contract counts or compares.
#[test]
fn no_view_carries_the_dom_contracts_marks() {
    let lines = lines(CLOSED);
    let folded = fold(&lines, None).expect("folds");
    let mut html = String::new();
    for lang in [Lang::En, Lang::Ru] {
        for explanation in folded.explanations.values() {
            html.push_str(&action(lang, explanation).into_string());
        }
        html.push_str(&state_panel(lang, &state_view(&folded.battle)).into_string());
        for line in &lines {
            html.push_str(&calculation(lang, &lines, line.version).into_string());
            html.push_str(&fields_table(lang, &line.event).into_string());
        }
    }
    assert!(html.contains("explanation") && html.contains("calculation"), "rendered something");
    for mark in [
        "data-face",
        "data-summary",
        "data-total",
        "data-nonce",
        "data-version",
        "data-check",
        "class=\"value",
        "class=\"face",
        "class=\"pip",
        "class=\"total",
        "class=\"roll",
        "class=\"event",
        " id=",
    ] {
        assert!(!html.contains(mark), "{mark} in the explanations");
    }
}

#[test]
fn every_die_of_a_many_term_roll_comes_from_its_own_word() {
    let seed = "2449c288d37dc86b3ed1812a08d72dfbb9f04716b5d608d177debf4f534500ce";
    for expression in ["4d6!kh3 + 2d8r1 - 1", "3d1000000", "d% + 5d2>=2"] {
        let (_, uses, derived) = derivation(seed, "client", expression, 7).expect("derives");
        let (_, expected) =
            dice::roll(expression, &dice::ServerSeed::from_hex(seed).expect("seed"), "client", 7).expect("rolls");
        assert_eq!(derived, expected.dice, "{expression}");
        let faces: Vec<i64> = uses.iter().filter_map(|u| u.face).map(i64::from).collect();
        let values: Vec<i64> = expected.dice.iter().map(|d| d.value).collect();
        assert_eq!(faces, values, "{expression}");
    }
}

const BERSERK: &str = include_str!("../../../../web/verifier/test/fixtures/rules-demo-berserk-v1.jsonl");

/// berserk@1 (docs/rules.md §3.1) in the demo: the gnome (attack experience 1)
/// rolls 6, the troll 2: A = 6 + (1 − 0) = 7, D = 2, diff = A − D = 5. The
/// troll's die is the troll's (issue 39, finding 7: it read "gnome на
/// «defender»" and "разница = A 6 + D −5"), and the difference subtracts D.
#[test]
fn a_berserk_strike_credits_each_die_to_its_side_and_subtracts_d() {
    let lines = lines(BERSERK);
    let folded = fold(&lines, None).expect("the demo folds");
    let strike = folded.explanations.get(&3).expect("v3 is the strike");
    let en = visible(&action(Lang::En, strike));
    assert!(en.contains("dice: 6 (gnome: attacker d6), 2 (troll: defender d6)"), "{en}");
    assert!(en.contains("attacker's A (gnome) = 6 + experience (1 − 0) 1 = 7"), "{en}");
    assert!(en.contains("defender's D (troll) = 2 "), "{en}");
    assert!(en.contains("difference = attacker's A 7 − defender's D 2 = 5"), "{en}");
    let ru = visible(&action(Lang::Ru, strike));
    assert!(ru.contains("кости: 6 (gnome: атакующий d6), 2 (troll: защитник d6)"), "{ru}");
    assert!(ru.contains("разница = A атакующего 7 − D защитника 2 = 5"), "{ru}");
    for text in [&en, &ru] {
        assert!(!text.contains("+ −") && !text.contains("+ D"), "no doubled sign: {text}");
    }

    // The roll element of the defender's die, drawn inside its strike.
    let roll = &lines[2].event;
    let action = lines[3].event.get("action");
    let en = visible(&crate::dice::roll_for(roll, Lang::En, action));
    assert!(en.starts_with("troll for “the defender's die”"), "{en}");
    let ru = visible(&crate::dice::roll_for(roll, Lang::Ru, action));
    assert!(ru.starts_with("troll на «кубик защитника»"), "{ru}");
    // A free roll's purpose stays the forum's own words.
    let free = json!({"type": "roll", "actor": "gnome", "expression": "1d6", "purpose": "defender"});
    let ru = visible(&crate::dice::roll_for(roll, Lang::Ru, Some(&free)));
    assert!(ru.starts_with("gnome на «defender»"), "{ru}");
}

/// pokemon-d6@1 §1.2: a status move's turns are p − 2, written once ("ходов
/// = 5 + p − 2 −2 = 3" wrote the 2 twice); a free roll does not say the rules
/// "do not allow" it.
#[test]
fn turns_are_written_once_and_a_free_roll_is_not_refused() {
    let opening = json!({"ruleset": "pokemon-d6@1", "participants": [{"id": "meowth"}, {"id": "pikachu"}]});
    let battle = Battle::open(&serde_json::from_value(opening).expect("an opening")).expect("opens");
    let wave: Action = serde_json::from_value(json!({"type": "status_move", "actor": "meowth", "target": "pikachu",
        "move": "Thunder Wave", "status": "paralysis"}))
    .expect("an action");
    let outcome = battle.resolve(0, &wave, &[5]).expect("resolves").outcome;
    let explanation = why::explain(&battle, 0, &wave, &[5], &outcome);
    let ru = visible(&action(Lang::Ru, &explanation));
    assert!(ru.contains("ходов (meowth) = 5 − 2 = 3"), "{ru}");
    let en = visible(&action(Lang::En, &explanation));
    assert!(en.contains("turns (meowth) = 5 − 2 = 3"), "{en}");

    let free: Action = serde_json::from_value(json!({"type": "roll", "actor": "meowth", "expression": "1d20",
        "purpose": "luck"}))
    .expect("an action");
    let outcome = battle.resolve(0, &free, &[7]).expect("resolves").outcome;
    let explanation = why::explain(&battle, 0, &free, &[7], &outcome);
    let ru = visible(&action(Lang::Ru, &explanation));
    assert!(!ru.contains("не разрешают"), "{ru}");
    assert!(ru.contains("свободный бросок"), "{ru}");
}
