//! Why each result is what it is, and the state at any version, as HTML
//! (the judge's page) — rendered from `rules::explain`, which `battlelog
//! replay` renders as text from the same data.
//!
//! Folding: [`fold`] hands an export's lines to
//! `battlelog_verify::explained::fold`, which folds the record bytes the
//! way the resolver's view does for `battlelog replay --at` and explains
//! each `ActionResolved` on the way from the battle just before it and the
//! raw faces of the rolls it names.
//!
//! Markup, all `pub fn` over plain data, none of it bearing the DOM
//! contract's attributes (`data-face`, `data-summary`, `.roll`, `.total`,
//! `.event`), so the verifier's checks never count it:
//! - [`action`]`(lang, &Explanation)`: the dice, each term by translated
//!   name and signed value, the sums, the docs/rules.md row, the state changes.
//! - [`state_panel`]`(lang, &state)`: per participant (and the battle's own
//!   fields), the state of `rules::explain::state_view` with translated
//!   keys; unknown keys as they are.
//! - [`fields_table`]`(lang, &value)`: an action's or an outcome's fields as
//!   a translated key/value table, replacing the raw JSON "details"; the
//!   forum's own words (names, moves, stakes, notes) kept as they are in
//!   `span.forum-text`.
//! - [`calculation`]`(lang, lines, version)`: "show the calculation" of the
//!   roll at `version`: epoch, nonce, the roll key, every ChaCha20 word read
//!   and how it became a face (docs/protocol.md §2–3), once the epoch's seed is
//!   revealed.
//!
//! Where the lead wires them in `page.rs` (`BattlePage::render` and
//! `BattlePage::event`):
//! - once per page: `let folded = explain::fold(self.lines, None);` (an
//!   `Err` means the export does not fold — the audit reports why; show no
//!   explanations then);
//! - in the `"ActionResolved"` arm, instead of the raw-JSON `details`:
//!   `@if let Some(x) = folded.explanations.get(&line.version) {
//!   (explain::action(lang, x)) }` and `details { summary { … }
//!   (explain::fields_table(lang, &event["action"]))
//!   (explain::fields_table(lang, &event["outcome"])) }`;
//! - in the `"DiceRolled"` arm, after `roll(event, lang)`:
//!   `(explain::calculation(lang, self.lines, line.version))`;
//! - the state panel, after the timeline (or for `?at=N`):
//!   `(explain::state_panel(lang, &explain::state_view(&folded.battle)))`,
//!   or `explain::state_at(self.lines, n)` for the state right after
//!   version `n`.
//!
//! The class names used (`explanation`, `why`, `xdie`, `sum`, `term`,
//! `term-value`, `product`, `rule`, `change`, `state-panel`,
//! `participant-state`, `fields`, `forum-text`, `calculation`, `words`,
//! `word-face`, `mismatch`, `rejected`, `key-hex`) are for PAGE's style sheet; none is
//! one the DOM contract gives a meaning (`value`, `face`, `pip`, `total`,
//! `roll`, `event`).

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use battlelog_verify::AuditedRecord;
use battlelog_verify::export::ExportLine;
use maud::{Markup, html};
pub use rules::explain::state_view;
use rules::explain::{self as why, Explanation, signed};
use serde_json::Value;

use crate::i18n::Lang;

/// The rules crate's language for the page's.
pub fn rules_lang(lang: Lang) -> why::Lang {
    match lang {
        Lang::En => why::Lang::En,
        Lang::Ru => why::Lang::Ru,
    }
}

/// A key's text: the page's own words first, then the rules' labels; an
/// unknown key as it is.
pub fn label(key: &str, lang: Lang) -> String {
    let own = match key {
        "why" => Some(("Why this result", "Почему такой результат")),
        "state_panel" => Some(("State", "Состояние")),
        "state_after" => Some(("State after", "Состояние после")),
        "show_calculation" => Some(("Show the calculation", "Показать расчёт")),
        "epoch" => Some(("epoch", "эпоха")),
        "nonce" => Some(("nonce", "номер броска")),
        "expression" => Some(("expression", "выражение")),
        "server_seed" => Some(("server seed (revealed)", "серверный сид (раскрыт)")),
        "client_seed" => Some(("client seed", "клиентский сид")),
        "roll_key" => Some((
            "roll key = HMAC-SHA256(server seed, client seed)",
            "ключ броска = HMAC-SHA256(серверный сид, клиентский сид)",
        )),
        "word" => Some(("ChaCha20 word", "слово ChaCha20")),
        "limit" => Some(("limit", "граница")),
        "rejected" => Some(("≥ limit: discarded", "≥ границы: отброшено")),
        "face" => Some(("face", "грань")),
        "fudge" => Some(("fudge: face − 2", "fudge: грань − 2")),
        "recorded" => Some(("recorded", "записано")),
        "mismatch" => Some(("differs from the record", "не совпадает с записью")),
        "unrevealed" => Some((
            "The epoch's seed is not revealed yet: the calculation can be shown after the reveal.",
            "Сид эпохи ещё не раскрыт: расчёт можно показать после раскрытия.",
        )),
        "no_state" => Some(("This ruleset keeps no state.", "Эти правила не хранят состояния.")),
        "words_read" => Some(("words read", "прочитано слов")),
        "mod" => Some(("mod", "mod")),
        _ => None,
    };
    match own {
        Some((en, ru)) => match lang {
            Lang::En => en.to_owned(),
            Lang::Ru => ru.to_owned(),
        },
        None => why::label(key, rules_lang(lang)),
    }
}

pub use battlelog_verify::explained::{Explained as Folded, FoldError};

/// The export's lines as the audit's records (the record bytes decoded from
/// base64); a line whose record is not base64 keeps no bytes, so the fold
/// stops there.
fn records(lines: &[ExportLine]) -> Vec<AuditedRecord> {
    lines
        .iter()
        .map(|line| AuditedRecord {
            stream: line.stream.clone(),
            version: line.version,
            hash: Vec::new(),
            record: BASE64.decode(&line.record).unwrap_or_default(),
            event: None,
        })
        .collect()
}

/// Folds the export's `lines` up to and including `until` (all of them
/// when `None`), explaining every `ActionResolved` on the way
/// ([`battlelog_verify::explained::fold`], the fold `replay` uses too).
pub fn fold(lines: &[ExportLine], until: Option<u64>) -> Result<Folded, FoldError> {
    battlelog_verify::explained::fold(&records(lines), until)
}

/// The state right after `version` ([`state_view`] JSON), folded as
/// `battlelog replay --at` folds it.
pub fn state_at(lines: &[ExportLine], version: u64) -> Result<Value, FoldError> {
    battlelog_verify::explained::state_at(&records(lines), version)
}

/// One action's explanation: a compact list.
pub fn action(lang: Lang, explanation: &Explanation) -> Markup {
    html! {
        section.explanation aria-label=(label("why", lang)) {
            ul.why {
                @if !explanation.dice.is_empty() {
                    (dice_used(lang, &explanation.dice))
                }
                @for sum in &explanation.sums {
                    (sum_item(lang, sum))
                }
                @for product in &explanation.products {
                    li.product data-key=(product.key) {
                        span.key { (label(product.key, lang)) } " = "
                        @for (index, (key, value)) in product.factors.iter().enumerate() {
                            @if index > 0 { " × " }
                            (label(key, lang)) " " (label(value, lang))
                        }
                        " = " b.result { (product.value) }
                    }
                }
                @for row in &explanation.rows {
                    li.rule data-rule=(row.key) {
                        span.key { (label("rule", lang)) } ": " (label(row.key, lang))
                        @if !row.section.is_empty() { " " span.section { "(" code translate="no" { "docs/rules.md" } " §" (row.section) ")" } }
                    }
                }
                @for change in &explanation.changes {
                    li.change data-field=(change.field) {
                        @if let Some(who) = &change.who { span.forum-text { (who) } ": " }
                        (label(&change.field, lang)) " "
                        // Names inside (abilities, statuses) are the forum's own words.
                        span.before { (state_value(&change.field, &change.before, lang)) } " → "
                        span.after { (state_value(&change.field, &change.after, lang)) }
                    }
                }
            }
        }
    }
}

/// The dice an action used, each with whose it is, its role and meaning.
fn dice_used(lang: Lang, dice: &[why::DieUse]) -> Markup {
    html! {
        li.dice-used {
            span.key { (label("dice", lang)) } ": "
            @for (index, die) in dice.iter().enumerate() {
                @if index > 0 { ", " }
                // Whose die it is first: a berserk defender's die
                // is the defender's, whoever asked for the roll.
                span.xdie data-role=(die.role) data-who=[die.who.as_deref()] {
                    b { (die.face) } " ("
                    @if let Some(who) = &die.who { span.forum-text translate="no" { (who) } ": " }
                    (label(die.role, lang)) " d" (die.sides) ")"
                    @if let Some(meaning) = die.meaning { " — " (label(meaning, lang)) }
                    @if let Some(picked) = &die.picked { " " span.forum-text { (picked) } }
                }
            }
        }
    }
}

/// One sum: its key, whose, each piece once with its sign, and the result.
fn sum_item(lang: Lang, sum: &why::Sum) -> Markup {
    let rl = rules_lang(lang);
    html! {
        li.sum data-key=(sum.key) data-value=(sum.value) {
            span.key { (label(sum.key, lang)) }
            @if let Some(who) = &sum.who { " (" span.forum-text translate="no" { (who) } ")" }
            " = "
            // Each piece once, each sign once (rules::explain::Sum::parts);
            // a lone die is the value itself, not "3 = 3".
            @if !sum.is_bare() {
                @for part in sum.parts() {
                    @if let Some(op) = part.op { " " span.op { (op) } " " }
                    @match part.term {
                        Some(term) => span.term data-key=(term.key) data-value=(term.contribution()) title={ "docs/rules.md §" (term.section) } {
                            @if !term.is_constant() {
                                (label(term.key, lang))
                                // What it stands for: a rules' word translated (a
                                // trait, "does not match"), else the forum's own
                                // (the helpers' names, a trait the sheet named).
                                @if let Some(detail) = &term.detail {
                                    " ("
                                    @if why::is_known(detail) { (why::label(detail, rl)) }
                                    @else { span.forum-text translate="no" { (detail) } }
                                    ")"
                                }
                                " "
                            }
                            span.term-value { (part.number) }
                        },
                        None => span.face { (part.number) },
                    }
                }
                " = "
            }
            b.result { (sum.value) }
        }
    }
}

/// The state panel of a [`state_view`]: the battle's fields, then one
/// block per participant.
pub fn state_panel(lang: Lang, state: &Value) -> Markup {
    let rl = rules_lang(lang);
    let battle = state.get("battle").and_then(Value::as_object).filter(|fields| !fields.is_empty());
    let people = state.get("participants").and_then(Value::as_array).cloned().unwrap_or_default();
    let any_field = battle.is_some()
        || people.iter().any(|p| p.get("fields").and_then(Value::as_object).is_some_and(|f| !f.is_empty()));
    html! {
        section.state-panel aria-label=(label("state_panel", lang)) {
            h3 { (label("state_panel", lang)) }
            @if !any_field { p.muted { (label("no_state", lang)) } }
            @if let Some(fields) = battle {
                dl.state-battle {
                    @for (key, value) in fields {
                        dt data-key=(key) { (label(key, lang)) }
                        dd { (why::value_text(value, rl)) }
                    }
                }
            }
            @for person in &people {
                @let fields = person.get("fields").and_then(Value::as_object);
                @if let Some(fields) = fields.filter(|f| !f.is_empty()) {
                    div.participant-state data-participant=(person.get("id").and_then(Value::as_str).unwrap_or_default()) {
                        h4 { span.forum-text { (person.get("id").and_then(Value::as_str).unwrap_or_default()) } }
                        dl {
                            @for (key, value) in why::ordered_fields(fields) {
                                dt data-key=(key) { (label(key, lang)) }
                                dd { (state_value(key, value, lang)) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Maps (statuses, uses) show their names as the forum's own words.
fn state_value(key: &str, value: &Value, lang: Lang) -> Markup {
    let rl = rules_lang(lang);
    match value {
        Value::Object(map) if !map.is_empty() => html! {
            @for (index, (name, inner)) in map.iter().enumerate() {
                @if index > 0 { ", " }
                span.forum-text { (why::label(name, rl)) } ": " (why::value_text(inner, rl))
            }
        },
        Value::String(text) if key == "charging" => html! { span.forum-text { (text) } },
        Value::Array(items) if !items.is_empty() => html! {
            @for (index, item) in items.iter().enumerate() {
                @if index > 0 { ", " }
                span.forum-text { (why::value_text(item, rl)) }
            }
        },
        other => html! { (why::value_text(other, rl)) },
    }
}

/// Fields whose string values are the rules' own words (translated);
/// every other string is the forum's text, shown as it is.
const ENUM_FIELDS: [&str; 9] =
    ["type", "result", "attacker_tier", "defender_tier", "tier", "kind", "prefer", "pending_choice", "trait"];

/// The translated value words of [`ENUM_FIELDS`].
fn value_word(value: &str, lang: Lang) -> Option<&'static str> {
    let (en, ru) = match value {
        "full_success" => ("full success", "полный успех"),
        "success_with_cost" => ("success at a cost", "успех с ценой"),
        "miss" => ("miss", "промах"),
        "hit" => ("hit", "попадание"),
        "crit" => ("critical hit", "критическая атака"),
        "failed" => ("failed", "сорвалось"),
        "self_hit" => ("hit itself", "удар по себе"),
        "flinched" => ("flinched", "вздрогнул"),
        "charging" => ("charging", "подготовка"),
        "success" => ("success", "успех"),
        "pass" => ("pass", "пропуск"),
        "rolled" => ("rolled", "брошено"),
        "not_needed" => ("not needed", "не нужно"),
        "critical_success" => ("critical success", "критический успех"),
        "failure" => ("failure", "неудача"),
        "ordinary_failure" => ("ordinary failure", "обычная неудача"),
        "critical_failure" => ("critical failure", "критическая неудача"),
        "episode_started" => ("episode started", "эпизод начат"),
        "weak" => ("weak", "слабый"),
        "medium" => ("medium", "средний"),
        "strong" => ("strong", "сильный"),
        "none" => ("none", "нет"),
        "x" => ("X", "X"),
        "y" => ("Y", "Y"),
        "z" => ("Z", "Z"),
        "attacker" => ("attacker", "атакующий"),
        "defender" => ("defender", "защитник"),
        "simple" => ("simple", "простой"),
        "unanswerable" => ("unanswerable", "безответный"),
        "special" => ("special", "особый"),
        "magic" => ("magic", "магический"),
        "through_row" => ("through the row", "через ряд"),
        "shot" => ("shot", "выстрел"),
        "discharge" => ("discharge", "разряд"),
        "throw" => ("throw", "метание"),
        "effect" => ("effect", "эффект"),
        "attack" => ("attack", "атака"),
        "status_move" => ("status move", "приём состояния"),
        "dodge" => ("dodge", "уклонение"),
        "metronome" => ("Metronome", "Метроном"),
        "cast" => ("cast", "применение"),
        "defend" => ("defend", "защита"),
        "start_episode" => ("new episode", "новый эпизод"),
        "strike" => ("strike", "удар"),
        "exchange_choice" => ("exchange choice", "выбор обмена"),
        "move" => ("move", "ход"),
        "ruling" => ("ruling", "решение"),
        "dispute" => ("dispute", "спор"),
        "roll" => ("roll", "бросок"),
        "brawn" | "grace" | "charm" | "grit" | "wits" | "cool" => return None,
        _ => return None,
    };
    Some(match lang {
        Lang::En => en,
        Lang::Ru => ru,
    })
}

/// A recorded string of the field `key` that is the rules' own word (an
/// action's type, a result, a tier, a preference, a condition the rules
/// define), in `lang`; `None` for the forum's own text (names, moves, a
/// status the forum named).
pub fn rule_word(key: &str, value: &str, lang: Lang) -> Option<String> {
    if ENUM_FIELDS.contains(&key) {
        return value_word(value, lang).map(str::to_owned);
    }
    let condition = matches!(value, "paralysis" | "infatuation" | "confusion" | "flinch");
    if condition && matches!(key, "status" | "effect" | "effect_applied" | "statuses") {
        return Some(why::label(value, rules_lang(lang)));
    }
    None
}

/// Labels of action and outcome fields that the explanation's own keys do
/// not already name.
fn field_label(key: &str, lang: Lang) -> String {
    let pair = match key {
        "type" => ("action", "действие"),
        "actor" => ("actor", "кто"),
        "target" => ("target", "цель"),
        "move" => ("move", "приём"),
        "status" => ("status", "состояние"),
        "interrupt" => ("interrupts", "прерывает"),
        "multi_hit" => ("multi-hit", "серия ударов"),
        "two_turn" => ("two-turn", "двухходовый"),
        "variable_power" => ("variable power", "переменная сила"),
        "never_miss" => ("never misses", "без промаха"),
        "high_crit" => ("high critical ratio", "высокий шанс крита"),
        "prefer" => ("prefers", "предпочтение"),
        "against" => ("answers version", "отвечает на версию"),
        "teleport" => ("Teleport", "Телепорт"),
        "moves" => ("moves", "приёмы"),
        "note" => ("note", "заметка"),
        "ability" => ("ability", "способность"),
        "post" => ("post", "пост"),
        "id" => ("id", "участник"),
        "strike" => ("strike values", "значения удара"),
        "avoid_exchange" => ("avoid the exchange", "уйти от обмена"),
        "closed" => ("closed", "закрыт"),
        "kind" => ("strike kind", "вид удара"),
        "own_squad" => ("own squad", "свой отряд"),
        "values" => ("X-Y-Z", "X-Y-Z"),
        "avoid" => ("avoid", "уйти"),
        "stakes" => ("stakes", "ставки"),
        "judge" => ("judge", "судья"),
        "refers_to" => ("refers to version", "относится к версии"),
        "text" => ("text", "текст"),
        "override" => ("override", "замена"),
        "by" => ("by", "кто"),
        "reason" => ("reason", "причина"),
        "expression" => ("expression", "выражение"),
        "purpose" => ("purpose", "цель броска"),
        "result" => ("result", "результат"),
        "effect_applied" => ("effect applied", "наложен эффект"),
        "interrupts_target" => ("target flinches", "цель вздрагивает"),
        "breaks_charge" => ("breaks the preparation", "срывает подготовку"),
        "reduction_percent" => ("damage reduced by, %", "урон снижен на, %"),
        "counted" => ("counted", "засчитано"),
        "picked" => ("picked", "выбрано"),
        "concentration_broken" => ("concentration broken", "концентрация сбита"),
        "attack_lands" => ("the attack lands", "атака проходит"),
        "fight" => ("fight", "бой"),
        "attacker_tier" => ("attacker strikes", "удар атакующего"),
        "defender_tier" => ("defender strikes", "удар защитника"),
        "exchange_avoided" => ("exchange avoided", "обмен отменён"),
        "pending_choice" => ("awaits the choice of", "ждёт выбора"),
        "value" => ("value", "значение"),
        "exposed" => ("exposed", "под риском"),
        _ => return label(key, lang),
    };
    match lang {
        Lang::En => pair.0.to_owned(),
        Lang::Ru => pair.1.to_owned(),
    }
}

/// An action's or an outcome's fields as a translated table; nested
/// objects (a berserk side) as nested tables.
pub fn fields_table(lang: Lang, value: &Value) -> Markup {
    let Some(fields) = value.as_object() else {
        return html! { (field_value(lang, "", value)) };
    };
    html! {
        table.fields {
            @for (key, inner) in fields {
                tr data-key=(key) {
                    th scope="row" { (field_label(key, lang)) }
                    td { (field_value(lang, key, inner)) }
                }
            }
        }
    }
}

fn field_value(lang: Lang, key: &str, value: &Value) -> Markup {
    let rl = rules_lang(lang);
    match value {
        Value::Object(_) => fields_table(lang, value),
        Value::String(text) if ENUM_FIELDS.contains(&key) => match value_word(text, lang) {
            Some(word) => html! { span title=(text) { (word) } },
            None if key == "trait" && why::is_known(text) => html! { span title=(text) { (why::label(text, rl)) } },
            None => html! { span.forum-text { (text) } },
        },
        // Exact fractions are the rules' numbers, not the forum's words.
        Value::String(text) if key == "multiplier" => html! { (text) },
        Value::String(text) => html! { span.forum-text { (text) } },
        Value::Array(items) if items.iter().all(|item| item.is_string()) && !items.is_empty() => html! {
            @for (index, item) in items.iter().enumerate() {
                @if index > 0 { ", " }
                span.forum-text { (item.as_str().unwrap_or_default()) }
            }
        },
        Value::Array(items) if items.iter().any(Value::is_object) => html! {
            @for item in items { (fields_table(lang, item)) }
        },
        other => html! { (why::value_text(other, rl)) },
    }
}

/// Records every word a roll's stream hands out.
struct Recorder<'a, W> {
    inner: &'a mut W,
    words: Vec<u32>,
}

impl<W: dice::WordSource> dice::WordSource for Recorder<'_, W> {
    fn next_word(&mut self) -> u32 {
        let word = self.inner.next_word();
        self.words.push(word);
        word
    }
}

/// One word read and what it became.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WordUse {
    pub word: u32,
    pub sides: u32,
    /// `None`: at or above the limit, discarded.
    pub face: Option<u32>,
}

/// The words of a roll's ChaCha20 stream and their mapping to faces, for
/// `expression` at `nonce` under a revealed `server_seed` (hex) and the
/// battle's `client_seed`, with the recorded dice's sides giving each
/// word's die (docs/protocol.md §2–3); the roll key in hex, each word's use,
/// and the dice derived (in draw order).
pub fn derivation(
    server_seed: &str,
    client_seed: &str,
    expression: &str,
    nonce: u64,
) -> Result<(String, Vec<WordUse>, Vec<dice::Die>), String> {
    let seed = dice::ServerSeed::from_hex(server_seed).map_err(|e| e.to_string())?;
    let parsed = dice::Expression::parse(expression).map_err(|e| e.to_string())?;
    let key = dice::RollKey::derive(&seed, client_seed);
    let mut stream = dice::RollStream::new(&key, nonce);
    let mut recorder = Recorder { inner: &mut stream, words: Vec::new() };
    let (rolled, _) = dice::evaluate_keeping_dice(&parsed, &mut recorder);
    let words = std::mem::take(&mut recorder.words);
    // Replays the unbiased draw of §2 over the recorded words, die by die.
    let mut uses = Vec::new();
    let mut next = words.into_iter();
    for die in &rolled {
        let sides = die.sides;
        let span = 1u64 << 32;
        let limit = span - span % u64::from(sides.max(1));
        for word in next.by_ref() {
            if u64::from(word) < limit {
                uses.push(WordUse { word, sides, face: Some(1 + word % sides.max(1)) });
                break;
            }
            uses.push(WordUse { word, sides, face: None });
        }
    }
    Ok((key.to_hex(), uses, rolled))
}

fn text<'v>(event: &'v Value, field: &str) -> &'v str {
    event.get(field).and_then(Value::as_str).unwrap_or_default()
}

/// "Show the calculation" for the roll at `version` (a `DiceRolled` line
/// of `lines`): nothing for other lines; a note while its epoch's seed is
/// unrevealed.
pub fn calculation(lang: Lang, lines: &[ExportLine], version: u64) -> Markup {
    let Some(line) = lines.iter().find(|line| line.version == version && line.event_type == "DiceRolled") else {
        return html! {};
    };
    let event = &line.event;
    let epoch = event.get("epoch").and_then(Value::as_u64).unwrap_or_default();
    let nonce = event.get("nonce").and_then(Value::as_u64).unwrap_or_default();
    let expression = text(event, "expression");
    let client_seed = lines
        .iter()
        .find(|line| line.event_type == "BattleOpened")
        .map(|line| text(&line.event, "client_seed"))
        .unwrap_or_default();
    let seed = lines
        .iter()
        .filter(|line| line.event_type == "SeedRevealed")
        .find(|line| line.event.get("epoch").and_then(Value::as_u64) == Some(epoch))
        .map(|line| text(&line.event, "server_seed"));
    let recorded: Vec<i64> = event
        .get("dice")
        .and_then(Value::as_array)
        .map(|dice| dice.iter().filter_map(|d| d.get("value").and_then(Value::as_i64)).collect())
        .unwrap_or_default();
    html! {
        // Drawn only when asked for (`?calc=N`): open.
        details.calculation open {
            summary { (label("show_calculation", lang)) }
            dl {
                dt { (label("epoch", lang)) } dd { (epoch) }
                dt { (label("nonce", lang)) } dd { (nonce) }
                dt { (label("expression", lang)) } dd { code { (expression) } }
                dt { (label("client_seed", lang)) } dd { code { (client_seed) } }
                @if let Some(seed) = seed { dt { (label("server_seed", lang)) } dd { code { (seed) } } }
            }
            @match seed.map(|seed| derivation(seed, client_seed, expression, nonce)) {
                None => p.muted.unrevealed { (label("unrevealed", lang)) },
                Some(Err(problem)) => p.bad { (problem) },
                Some(Ok((roll_key, uses, derived))) => {
                    p { (label("roll_key", lang)) ": " code.key-hex { (roll_key) } }
                    p.muted { (label("words_read", lang)) ": " (uses.len()) }
                    // Scrolls sideways on a phone rather than break a word or a number.
                    div.scroll-box { table.words {
                        tr {
                            th { "#" } th { (label("word", lang)) } th { "d" } th { (label("limit", lang)) }
                            th { (label("face", lang)) }
                        }
                        @for (index, row) in word_rows(&uses, &derived, &recorded).iter().enumerate() {
                            tr.word data-word=(row.used.word) {
                                td { (index) }
                                td { code { (format!("0x{:08x}", row.used.word)) } " = " (row.used.word) }
                                td { (row.used.sides) }
                                td { (row.limit) }
                                @match row.used.face {
                                    None => td.rejected { (label("rejected", lang)) },
                                    Some(face) => td class=(if row.matches { "word-face" } else { "word-face mismatch" }) {
                                        "1 + " (row.used.word) " " (label("mod", lang)) " " (row.used.sides) " = " b { (face) }
                                        @if let Some(value) = row.shown.filter(|&value| value != i64::from(face)) {
                                            " → " (label("fudge", lang)) " = " b { (signed(value)) }
                                        }
                                        @if !row.matches { " — " (label("mismatch", lang)) }
                                    },
                                }
                            }
                        }
                    } }
                }
            }
        }
    }
}

/// One row of the words table.
struct WordRow {
    used: WordUse,
    limit: u64,
    /// The derived die's value (after the fudge shift) for an accepted word.
    shown: Option<i64>,
    /// Whether that value is the recorded die's.
    matches: bool,
}

fn word_rows(uses: &[WordUse], derived: &[dice::Die], recorded: &[i64]) -> Vec<WordRow> {
    let mut die_index = 0;
    uses.iter()
        .map(|used| {
            let limit = (1u64 << 32) - (1u64 << 32) % u64::from(used.sides.max(1));
            let (shown, matches) = match used.face {
                None => (None, true),
                Some(_) => {
                    let shown = derived.get(die_index).map(|die| die.value);
                    let matches = shown.is_some() && shown == recorded.get(die_index).copied();
                    die_index += 1;
                    (shown, matches)
                }
            };
            WordRow { used: used.clone(), limit, shown, matches }
        })
        .collect()
}

#[cfg(test)]
mod tests;
