//! Why a result is what it is: for one resolved action, the dice it used
//! and what each die meant, every modifier by name and value, the docs/rules.md
//! table row the result came from, and what changed in each participant's
//! state; and the state itself as a judge reads it. Pure, like the rest of
//! the crate: the web page and `battlelog replay` both render from here.
//!
//! An explanation reads the recorded (or effective) outcome and the battle
//! as it stood before the action; it never resolves anything again. Its
//! numbers are built to add up ([`Sum::value`] is the dice plus the terms),
//! and the vectors test (`tests/explain_vectors.rs`) holds them, and each
//! row's result, to the outcomes of the independent vectors.
//!
//! Keys are stable snake_case words (`trait`, `help`, `experience`,
//! `pokemon.power.p6`, …); [`label`] gives each one's English and Russian
//! text, and an unknown key is its own label.

use std::collections::BTreeMap;

use serde_json::{Value, json};

mod labels;
pub mod parts;

pub use labels::{is_known, label};
pub use parts::{Change, DieUse, Explanation, Lang, Part, Product, Row, Sum, Term};

use crate::action::Action;
use crate::model::sheet::Version;
use crate::model::state::{Battle, RulesState};
use crate::outcome::Outcome;
use crate::ruleset::Family;
use parts::{Case, row};

/// Explains `outcome` of `action`, resolved with `faces` (raw faces in draw
/// order, as the roller gave them) at `version` of `before` (the battle as
/// it stood just before). The outcome is taken as given: explaining a
/// forged outcome explains the forgery, which the audit flags elsewhere.
pub fn explain(before: &Battle, version: Version, action: &Action, faces: &[u32], outcome: &Outcome) -> Explanation {
    let mut explanation = Explanation {
        ruleset: before.ruleset().to_string(),
        action: action.kind().name(),
        dice: Vec::new(),
        sums: Vec::new(),
        products: Vec::new(),
        rows: Vec::new(),
        changes: Vec::new(),
    };
    let case = Case { before, action, faces, outcome };
    match action.kind().family() {
        None => explanation.rows.push(common_row(action)),
        // An outcome of another action's kind: nothing to explain but that.
        Some(_) if outcome.kind() != action.kind() => explanation.rows.push(row("outcome_mismatch", "", None)),
        Some(Family::PokemonD6) => crate::pokemon::explain::explain(&mut explanation, &case),
        Some(Family::Arcana2d10) => crate::arcana::explain::explain(&mut explanation, &case),
        Some(Family::Berserk) => crate::berserk::explain::explain(&mut explanation, &case),
        Some(Family::Pbta2d6) => crate::pbta::explain::explain(&mut explanation, &case),
    }
    if let Ok(after) = before.apply(version, action, outcome) {
        explanation.changes = changes(&state_view(before), &state_view(&after));
    }
    explanation
}

/// The row of one of §5's common actions, whatever its outcome.
fn common_row(action: &Action) -> Row {
    match action {
        Action::Ruling(ruling) => {
            let key = if ruling.replacement.is_some() { "common.ruling.override" } else { "common.ruling" };
            row(key, "5.1", None)
        }
        Action::Dispute(_) => row("common.dispute", "5.1", None),
        _ => row("common.roll", "5.2", None),
    }
}

/// The state a judge reads, after every version folded so far: the
/// battle's own fields (`battle`) and each participant's (`participants`,
/// in sheet order), built from the same [`Battle`] state that
/// `battlelog replay --at` prints, with what a reader needs spelled out
/// (dodges left, uses left this episode).
///
/// `{"ruleset": "pokemon-d6@1", "battle": {…}, "participants": [{"id":
/// "pikachu", "fields": {"dodges_used": 1, "dodges_left": 4, …}}]}`
pub fn state_view(battle: &Battle) -> Value {
    let mut battle_fields = serde_json::Map::new();
    let participants: Vec<Value> = battle
        .participants()
        .iter()
        .map(|participant| {
            let id = &participant.id;
            let mut fields = serde_json::Map::new();
            match battle.state() {
                RulesState::Pokemon(state) => {
                    let mon = state.pokemon.get(id).cloned().unwrap_or_default();
                    fields.insert("dodges_used".into(), json!(mon.dodges_used));
                    fields.insert(
                        "dodges_left".into(),
                        json!(crate::pokemon::v1::DODGE_LIMIT.saturating_sub(mon.dodges_used)),
                    );
                    fields.insert("statuses".into(), json!(mon.statuses));
                    fields.insert("charging".into(), json!(mon.charging));
                    fields.insert("flinched".into(), json!(mon.flinched));
                }
                RulesState::Arcana(state) => {
                    let uses: BTreeMap<&str, u32> = participant
                        .abilities
                        .keys()
                        .map(|ability| (ability.as_str(), state.uses(id, ability)))
                        .chain(state.uses.get(id).into_iter().flatten().map(|(ability, &n)| (ability.as_str(), n)))
                        .collect();
                    let left: BTreeMap<&str, u32> = participant
                        .abilities
                        .iter()
                        .filter_map(|(ability, sheet)| {
                            sheet
                                .per_episode
                                .map(|limit| (ability.as_str(), limit.saturating_sub(state.uses(id, ability))))
                        })
                        .collect();
                    fields.insert("uses".into(), json!(uses));
                    fields.insert("uses_left".into(), json!(left));
                    let broken: Vec<&String> = state.broken_posts.get(id).into_iter().flatten().collect();
                    fields.insert("concentration_broken_in".into(), json!(broken));
                }
                RulesState::Pbta => {
                    fields.insert("traits".into(), json!(participant.traits));
                }
                RulesState::Berserk => {}
            }
            json!({"id": id, "fields": fields})
        })
        .collect();
    match battle.state() {
        RulesState::Arcana(state) => {
            battle_fields.insert("episode".into(), json!(state.episode));
        }
        RulesState::Berserk if battle.ruleset().family() == Family::Berserk => {
            let awaiting: Vec<Version> = battle
                .entries()
                .filter(
                    |entry| matches!(&entry.effective, Outcome::Strike(s) if matches!(s.pending_choice, Some(Some(_)))),
                )
                .filter(|entry| {
                    !battle.entries().any(
                        |other| matches!(&other.action, Action::ExchangeChoice(c) if c.against == Some(entry.version)),
                    )
                })
                .map(|entry| entry.version)
                .collect();
            battle_fields.insert("awaiting_choice".into(), json!(awaiting));
        }
        _ => {}
    }
    json!({"ruleset": battle.ruleset().to_string(), "battle": battle_fields, "participants": participants})
}

/// The fields that differ between two [`state_view`]s, participant by
/// participant, battle fields first; unchanged fields are never listed.
pub fn changes(before: &Value, after: &Value) -> Vec<Change> {
    let mut found = Vec::new();
    let empty = serde_json::Map::new();
    let object = |value: Option<&Value>| value.and_then(Value::as_object).cloned().unwrap_or_else(|| empty.clone());
    let mut diff = |who: Option<String>, a: &serde_json::Map<String, Value>, b: &serde_json::Map<String, Value>| {
        let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
        for key in keys {
            let (x, y) = (a.get(key).cloned().unwrap_or(Value::Null), b.get(key).cloned().unwrap_or(Value::Null));
            if x != y {
                found.push(Change { who: who.clone(), field: key.clone(), before: x, after: y });
            }
        }
    };
    diff(None, &object(before.get("battle")), &object(after.get("battle")));
    let people = |state: &Value| -> Vec<(String, serde_json::Map<String, Value>)> {
        state
            .get("participants")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|p| (p.get("id").and_then(Value::as_str).unwrap_or_default().to_owned(), object(p.get("fields"))))
            .collect()
    };
    let (a, b) = (people(before), people(after));
    for (id, after_fields) in &b {
        let before_fields = a.iter().find(|(other, _)| other == id).map(|(_, f)| f.clone()).unwrap_or_default();
        diff(Some(id.clone()), &before_fields, after_fields);
    }
    found
}

impl Explanation {
    /// The explanation as plain text, one line per fact, for `battlelog
    /// replay` and other terminals.
    pub fn lines(&self, lang: Lang) -> Vec<String> {
        let mut lines = Vec::new();
        if !self.dice.is_empty() {
            let dice: Vec<String> = self
                .dice
                .iter()
                .map(|d| {
                    // `6 (gnome: attacker d6)`: whose die first.
                    let who = d.who.as_deref().map(|w| format!("{w}: ")).unwrap_or_default();
                    let mut text = format!("{} ({who}{} d{})", d.face, label(d.role, lang), d.sides);
                    if let Some(meaning) = d.meaning {
                        text.push_str(&format!(": {}", label(meaning, lang)));
                    }
                    if let Some(picked) = &d.picked {
                        text.push_str(&format!(" «{picked}»"));
                    }
                    text
                })
                .collect();
            lines.push(format!("{}: {}", label("dice", lang), dice.join(", ")));
        }
        for sum in &self.sums {
            lines.push(sum_line(sum, lang));
        }
        for product in &self.products {
            let factors: Vec<String> = product
                .factors
                .iter()
                .map(|(key, value)| format!("{} {}", label(key, lang), label(value, lang)))
                .collect();
            lines.push(format!("{} = {} = {}", label(product.key, lang), factors.join(" × "), product.value));
        }
        for row in &self.rows {
            lines.push(format!("{}: {} (docs/rules.md §{})", label("rule", lang), label(row.key, lang), row.section));
        }
        for change in &self.changes {
            let who = change.who.as_deref().map(|w| format!("{w}: ")).unwrap_or_default();
            lines.push(format!(
                "{who}{} {} → {}",
                label(&change.field, lang),
                value_text(&change.before, lang),
                value_text(&change.after, lang)
            ));
        }
        lines
    }
}

/// A [`state_view`] as plain text for a terminal: the battle's fields,
/// then one line per participant (`pikachu: dodges used 1, dodges left 4,
/// …`), keys in `lang`.
pub fn state_lines(state: &Value, lang: Lang) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(fields) = state.get("battle").and_then(Value::as_object).filter(|fields| !fields.is_empty()) {
        let text: Vec<String> =
            fields.iter().map(|(key, value)| format!("{} {}", label(key, lang), value_text(value, lang))).collect();
        lines.push(format!("{}: {}", label("battle", lang), text.join(", ")));
    }
    for person in state.get("participants").and_then(Value::as_array).into_iter().flatten() {
        let id = person.get("id").and_then(Value::as_str).unwrap_or_default();
        let fields = person.get("fields").and_then(Value::as_object);
        let text: Vec<String> = fields
            .map(ordered_fields)
            .unwrap_or_default()
            .into_iter()
            .map(|(key, value)| format!("{} {}", label(key, lang), value_text(value, lang)))
            .collect();
        if !text.is_empty() {
            lines.push(format!("{id}: {}", text.join(", ")));
        }
    }
    lines
}

/// A participant's fields in reading order: the rules' own fields first,
/// as docs/rules.md lists them, then any other key.
pub fn ordered_fields(fields: &serde_json::Map<String, Value>) -> Vec<(&String, &Value)> {
    const ORDER: [&str; 9] = [
        "dodges_used",
        "dodges_left",
        "statuses",
        "charging",
        "flinched",
        "uses",
        "uses_left",
        "concentration_broken_in",
        "traits",
    ];
    let mut list: Vec<(&String, &Value)> = fields.iter().collect();
    list.sort_by_key(|(key, _)| ORDER.iter().position(|known| known == key).unwrap_or(ORDER.len()));
    list
}

/// `total (ash) = 4 + 5 + trait (wits) 2 + help (brock) 1 = 12`,
/// `difference = attacker's A 6 − defender's D 5 = 1`, `effective die
/// (pikachu) = 3`: each piece once, each sign once ([`Sum::parts`]).
pub fn sum_line(sum: &Sum, lang: Lang) -> String {
    let who = sum.who.as_deref().map(|w| format!(" ({w})")).unwrap_or_default();
    if sum.is_bare() {
        return format!("{}{who} = {}", label(sum.key, lang), sum.value);
    }
    let mut text = String::new();
    for part in sum.parts() {
        if let Some(op) = part.op {
            text.push_str(&format!(" {op} "));
        }
        if let Some(name) = part.term.and_then(|term| term_name(term, lang)) {
            text.push_str(&name);
            text.push(' ');
        }
        text.push_str(&part.number);
    }
    format!("{}{who} = {text} = {}", label(sum.key, lang), sum.value)
}

/// A term's name as a sum shows it, with what it stands for; none for a
/// bare constant.
pub fn term_name(term: &Term, lang: Lang) -> Option<String> {
    if term.is_constant() {
        return None;
    }
    Some(match &term.detail {
        Some(detail) => format!("{} ({})", label(term.key, lang), label(detail, lang)),
        None => label(term.key, lang),
    })
}

/// `+2`, `−1` (a true minus sign), `0`.
pub fn signed(value: i64) -> String {
    match value {
        0 => "0".to_owned(),
        v if v > 0 => format!("+{v}"),
        v => format!("−{}", v.unsigned_abs()),
    }
}

/// A state value as text: `—` for none, `yes`/`no`, `name: n` lists.
pub fn value_text(value: &Value, lang: Lang) -> String {
    match value {
        Value::Null => "—".to_owned(),
        Value::Bool(true) => label("yes", lang),
        Value::Bool(false) => label("no", lang),
        Value::String(text) => text.clone(),
        Value::Number(n) => n.to_string(),
        Value::Array(items) if items.is_empty() => "—".to_owned(),
        Value::Array(items) => items.iter().map(|v| value_text(v, lang)).collect::<Vec<_>>().join(", "),
        Value::Object(map) if map.is_empty() => "—".to_owned(),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{}: {}", label(k, lang), value_text(v, lang)))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::sheet::OpenBattle;

    fn open(value: Value) -> Battle {
        let opening: OpenBattle = serde_json::from_value(value).expect("an opening");
        Battle::open(&opening).expect("opens")
    }

    #[test]
    fn a_pbta_move_names_its_trait_and_help() {
        let battle = open(json!({"ruleset": "pbta-2d6@1", "participants": [{"id": "ash", "traits": {"wits": 2}}]}));
        let action: Action =
            serde_json::from_value(json!({"type": "move", "actor": "ash", "trait": "wits", "helpers": ["brock"]}))
                .expect("an action");
        let resolution = battle.resolve(0, &action, &[4, 5]).expect("resolves");
        let explanation = explain(&battle, 0, &action, &[4, 5], &resolution.outcome);
        let lines = explanation.lines(Lang::En);
        assert!(lines.contains(&"total (ash) = 4 + 5 + trait (wits) 2 + help (brock) 1 = 12".to_owned()), "{lines:?}");
        assert!(lines.iter().any(|l| l.contains("total 10 or more → full success (docs/rules.md §4.1)")), "{lines:?}");
        let ru = explanation.lines(Lang::Ru);
        assert!(ru.contains(&"итог (ash) = 4 + 5 + черта (смекалка) 2 + помощь (brock) 1 = 12".to_owned()), "{ru:?}");
    }

    #[test]
    fn a_dodge_lists_the_dodges_it_used() {
        let battle = open(json!({"ruleset": "pokemon-d6@1", "participants": [{"id": "pikachu"}]}));
        let action: Action =
            serde_json::from_value(json!({"type": "dodge", "actor": "pikachu", "priority": true})).expect("an action");
        let resolution = battle.resolve(0, &action, &[4]).expect("resolves");
        let explanation = explain(&battle, 0, &action, &[4], &resolution.outcome);
        let lines = explanation.lines(Lang::En);
        assert!(lines.contains(&"effective die (pikachu) = 4 − priority 1 = 3".to_owned()), "{lines:?}");
        assert!(lines.contains(&"pikachu: dodges used 0 → 1".to_owned()), "{lines:?}");
        assert!(lines.contains(&"pikachu: dodges left 5 → 4".to_owned()), "{lines:?}");
        // Unchanged fields are not listed.
        assert!(!lines.iter().any(|l| l.contains("flinched")), "{lines:?}");
    }

    #[test]
    fn a_berserk_difference_names_the_experience_left_after_cancelling() {
        let battle = open(json!({"ruleset": "berserk@1", "participants": [{"id": "a"}, {"id": "b"}]}));
        let action: Action = serde_json::from_value(json!({"type": "strike", "kind": "simple",
            "attacker": {"id": "a", "attack_experience": 2, "die_modifier": 1},
            "defender": {"id": "b", "defense_experience": 1}}))
        .expect("an action");
        // a = 3, d = 4: A = 3 + 1 + (2 − 1) = 5, D = 4, diff +1.
        let resolution = battle.resolve(0, &action, &[3, 4]).expect("resolves");
        let lines = explain(&battle, 0, &action, &[3, 4], &resolution.outcome).lines(Lang::En);
        assert!(
            lines.contains(&"attacker's A (a) = 3 + die modifier 1 + experience (2 − 1) 1 = 5".to_owned()),
            "{lines:?}"
        );
        assert!(lines.contains(&"defender's D (b) = 4 + experience (1 − 2) 0 = 4".to_owned()), "{lines:?}");
        assert!(lines.contains(&"difference = attacker's A 5 − defender's D 4 = 1".to_owned()), "{lines:?}");
        assert!(lines.iter().any(|l| l.contains("difference +1 → attacker weak, defender misses")), "{lines:?}");
    }

    #[test]
    fn a_paralysis_die_that_fails_the_attack_is_named() {
        let battle = open(json!({"ruleset": "pokemon-d6@1", "participants": [{"id": "pikachu"}, {"id": "meowth"}]}));
        let wave: Action = serde_json::from_value(json!({"type": "status_move", "actor": "meowth",
            "target": "pikachu", "move": "Thunder Wave", "status": "paralysis"}))
        .expect("an action");
        let battle = battle.resolve(0, &wave, &[6]).expect("paralyses").battle;
        let attack: Action = serde_json::from_value(json!({"type": "attack", "actor": "pikachu",
            "target": "meowth", "move": "Tackle", "power": 40}))
        .expect("an action");
        let resolution = battle.resolve(1, &attack, &[5, 2]).expect("resolves");
        let explanation = explain(&battle, 1, &attack, &[5, 2], &resolution.outcome);
        let en = explanation.lines(Lang::En);
        assert!(
            en.contains(&"dice: 5 (pikachu: power d6), 2 (pikachu: paralysis d6): the move fails".to_owned()),
            "{en:?}"
        );
        assert!(en.iter().any(|l| l.contains("paralysis die 1–2 → the move fails (docs/rules.md §1.1)")), "{en:?}");
        assert!(en.contains(&"pikachu: statuses (turns left) paralysis: 4 → paralysis: 3".to_owned()), "{en:?}");
        let ru = explanation.lines(Lang::Ru);
        assert!(ru.iter().any(|l| l.contains("кубик паралича 1–2 → приём срывается")), "{ru:?}");
        let state = state_lines(&state_view(&resolution.battle), Lang::Ru);
        assert!(
            state.contains(
                &"pikachu: уклонений использовано 0, уклонений осталось 5, состояния (осталось ходов) паралич: 3, \
                  подготовка —, вздрогнул нет"
                    .to_owned()
            ),
            "{state:?}"
        );
    }

    #[test]
    fn a_ruling_that_uncounts_a_dodge_shows_the_dodge_given_back() {
        let battle = open(json!({"ruleset": "pokemon-d6@1", "participants": [{"id": "pikachu"}]}));
        let dodge: Action = serde_json::from_value(json!({"type": "dodge", "actor": "pikachu"})).expect("an action");
        let battle = battle.resolve(0, &dodge, &[3]).expect("a counted dodge").battle;
        let ruling: Action = serde_json::from_value(json!({"type": "ruling", "judge": "anna", "refers_to": 0,
            "text": "that one does not count", "override": {"counted": false}}))
        .expect("an action");
        let resolution = battle.resolve(1, &ruling, &[]).expect("rules");
        let lines = explain(&battle, 1, &ruling, &[], &resolution.outcome).lines(Lang::En);
        assert!(
            lines.iter().any(|l| l.contains("a judge's ruling replaces the outcome's fields (docs/rules.md §5.1)")),
            "{lines:?}"
        );
        assert!(lines.contains(&"pikachu: dodges used 1 → 0".to_owned()), "{lines:?}");
        assert!(lines.contains(&"pikachu: dodges left 4 → 5".to_owned()), "{lines:?}");
    }

    #[test]
    fn unknown_keys_are_their_own_label() {
        assert_eq!(label("Ареометизм", Lang::En), "Ареометизм");
        assert_eq!(label("trait", Lang::Ru), "черта");
        assert_eq!(signed(-3), "−3");
    }
}
