//! The JSON Schemas (draft 2020-12) of what each ruleset version takes and
//! writes: a participant's sheet, the actions a forum sends to `Act`, and
//! their outcomes. Derived with `schemars` from the types the server reads
//! them with ([`crate::read`]), so field names, enum strings and
//! `deny_unknown_fields` (`additionalProperties: false`) are serde's own.
//!
//! The versions of a family share their Rust types, so the derived schema
//! is then narrowed to what one version accepts in one place,
//! `version_differences` (docs/rules.md §6): a schema also holds the rules a
//! version checks on a field's mere presence or form (a `@2` dodge needs
//! `against`, `@2` moves refuse `trait_value` …), which the server answers
//! as rule refusals (FAILED_PRECONDITION) rather than as unreadable input.
//!
//! The schemas are published by `ListRulesets` and, as files, by
//! `battlelog rules schemas --out docs/schemas`.

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value, json};

use crate::action::ActionKind;
use crate::model::sheet::Participant;
use crate::ruleset::{Family, RulesetId};
use crate::{arcana, berserk, common, pbta, pokemon};

/// The dialect every schema declares in `$schema`.
pub const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// One ruleset version's three schemas.
#[derive(Debug, Clone, PartialEq)]
pub struct Schemas {
    pub ruleset: RulesetId,
    /// One participant of `OpenBattleRequest.participants`.
    pub sheet: Value,
    /// `ActRequest.action`: one object whose `type` picks the action;
    /// each action's own schema is `$defs/<type>`.
    pub action: Value,
    /// An action's outcome (`ActionResolved.outcome`). An outcome does not
    /// name its action, so it is checked against `$defs/<action type>`;
    /// the document as a whole takes any of them.
    pub outcome: Value,
}

/// The files a [`Schemas`] is written as, under a directory named after the
/// ruleset (`pokemon-d6@1/sheet.schema.json` …), each with its text.
impl Schemas {
    pub fn files(&self) -> [(&'static str, String); 3] {
        [
            ("sheet.schema.json", text(&self.sheet)),
            ("action.schema.json", text(&self.action)),
            ("outcome.schema.json", text(&self.outcome)),
        ]
    }
}

/// A schema as published: pretty JSON with a final newline.
pub fn text(schema: &Value) -> String {
    let mut text = serde_json::to_string_pretty(schema).unwrap_or_default();
    text.push('\n');
    text
}

/// The three schemas of `ruleset`.
pub fn for_ruleset(ruleset: RulesetId) -> Schemas {
    Schemas { ruleset, sheet: sheet(ruleset), action: action(ruleset), outcome: outcome(ruleset) }
}

/// The kinds a forum sends to `Act` under `ruleset`: its family's (less
/// `exchange_choice` before `berserk@2`) and the free roll of §5.2.
/// Rulings and disputes have calls of their own (`Rule`, `Dispute`) with
/// their own fields.
pub fn action_kinds(ruleset: RulesetId) -> Vec<ActionKind> {
    ActionKind::ALL
        .into_iter()
        .filter(|kind| kind.family() == Some(ruleset.family()) || *kind == ActionKind::Roll)
        .filter(|kind| !(*kind == ActionKind::ExchangeChoice && ruleset == RulesetId::BerserkV1))
        .collect()
}

fn generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12().into_generator()
}

fn inline<T: JsonSchema>(generator: &mut SchemaGenerator) -> Value {
    T::json_schema(generator).to_value()
}

fn action_struct(kind: ActionKind, generator: &mut SchemaGenerator) -> Value {
    match kind {
        ActionKind::Attack => inline::<pokemon::Attack>(generator),
        ActionKind::StatusMove => inline::<pokemon::StatusMove>(generator),
        ActionKind::Dodge => inline::<pokemon::Dodge>(generator),
        ActionKind::Metronome => inline::<pokemon::Metronome>(generator),
        ActionKind::Pass => inline::<pokemon::Pass>(generator),
        ActionKind::Cast => inline::<arcana::Cast>(generator),
        ActionKind::Defend => inline::<arcana::Defend>(generator),
        ActionKind::StartEpisode => inline::<arcana::StartEpisode>(generator),
        ActionKind::Strike => inline::<berserk::Strike>(generator),
        ActionKind::Effect => inline::<berserk::Effect>(generator),
        ActionKind::ExchangeChoice => inline::<berserk::ExchangeChoice>(generator),
        ActionKind::Move => inline::<pbta::Move>(generator),
        ActionKind::Ruling => inline::<common::Ruling>(generator),
        ActionKind::Dispute => inline::<common::Dispute>(generator),
        ActionKind::Roll => inline::<common::FreeRoll>(generator),
    }
}

fn outcome_struct(kind: ActionKind, generator: &mut SchemaGenerator) -> Value {
    match kind {
        ActionKind::Attack => inline::<pokemon::AttackOutcome>(generator),
        ActionKind::StatusMove => inline::<pokemon::StatusMoveOutcome>(generator),
        ActionKind::Dodge => inline::<pokemon::DodgeOutcome>(generator),
        ActionKind::Metronome => inline::<pokemon::MetronomeOutcome>(generator),
        ActionKind::Pass => inline::<pokemon::PassOutcome>(generator),
        ActionKind::Cast => inline::<arcana::CastOutcome>(generator),
        ActionKind::Defend => inline::<arcana::DefendOutcome>(generator),
        ActionKind::StartEpisode => inline::<arcana::EpisodeOutcome>(generator),
        ActionKind::Strike => inline::<berserk::StrikeOutcome>(generator),
        ActionKind::Effect => inline::<berserk::EffectOutcome>(generator),
        ActionKind::ExchangeChoice => inline::<berserk::ExchangeOutcome>(generator),
        ActionKind::Move => inline::<pbta::MoveOutcome>(generator),
        ActionKind::Ruling => inline::<common::RulingOutcome>(generator),
        ActionKind::Dispute => inline::<common::DisputeOutcome>(generator),
        ActionKind::Roll => inline::<common::RollOutcome>(generator),
    }
}

/// A document: `top`'s keywords, then `$defs` with the generator's
/// definitions and `defs`.
fn document(
    title: String,
    description: &str,
    top: Value,
    generator: SchemaGenerator,
    defs: Map<String, Value>,
) -> Value {
    let mut document = json!({"$schema": DIALECT, "title": title, "description": description});
    let (Some(fields), Value::Object(top)) = (document.as_object_mut(), top) else { unreachable!("objects") };
    fields.extend(top);
    let mut all = generator.definitions().clone();
    all.extend(defs);
    if !all.is_empty() {
        fields.insert("$defs".to_owned(), Value::Object(all));
    }
    document
}

fn sheet(ruleset: RulesetId) -> Value {
    let mut generator = generator();
    let participant = inline::<Participant>(&mut generator);
    let mut document = document(
        format!("{ruleset} participant"),
        "One participant's sheet (OpenBattleRequest.participants[i]).",
        participant,
        generator,
        Map::new(),
    );
    version_differences(ruleset, Part::Sheet, &mut document);
    document
}

fn action(ruleset: RulesetId) -> Value {
    let mut generator = generator();
    let kinds = action_kinds(ruleset);
    let mut defs = Map::new();
    for kind in &kinds {
        let mut schema = action_struct(*kind, &mut generator);
        // The tag sits beside the variant's own fields.
        let fields = object(&mut schema, "");
        properties(fields).insert("type".to_owned(), json!({"const": kind.name()}));
        let required = fields.entry("required").or_insert_with(|| json!([]));
        if let Value::Array(required) = required {
            required.insert(0, json!("type"));
        }
        defs.insert(kind.name().to_owned(), schema);
    }
    let names: Vec<&str> = kinds.iter().map(|kind| kind.name()).collect();
    let pick: Vec<Value> = names
        .iter()
        .map(|name| {
            json!({
                "if": {"properties": {"type": {"const": name}}, "required": ["type"]},
                "then": {"$ref": format!("#/$defs/{name}")},
            })
        })
        .collect();
    let top = json!({
        "type": "object",
        "required": ["type"],
        "properties": {"type": {"enum": names}},
        "allOf": pick,
    });
    let mut document = document(
        format!("{ruleset} action"),
        "ActRequest.action: `type` picks the action, whose own schema is $defs/<type>.",
        top,
        generator,
        defs,
    );
    version_differences(ruleset, Part::Action, &mut document);
    document
}

fn outcome(ruleset: RulesetId) -> Value {
    let mut generator = generator();
    let kinds = action_kinds(ruleset);
    let mut defs = Map::new();
    for kind in &kinds {
        defs.insert(kind.name().to_owned(), outcome_struct(*kind, &mut generator));
    }
    let any: Vec<Value> = kinds.iter().map(|kind| json!({"$ref": format!("#/$defs/{}", kind.name())})).collect();
    let mut document = document(
        format!("{ruleset} outcome"),
        "ActionResolved.outcome of an action of type T: check it against $defs/T (an outcome does not name its action).",
        json!({"anyOf": any}),
        generator,
        defs,
    );
    version_differences(ruleset, Part::Outcome, &mut document);
    document
}

/// Which of a version's three documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Sheet,
    Action,
    Outcome,
}

/// What one ruleset version accepts beyond its family's shared types
/// (docs/rules.md §6, and each version module's doc), for one of its three
/// documents; a pointer the document does not hold is skipped.
fn version_differences(ruleset: RulesetId, part: Part, document: &mut Value) {
    let family = ruleset.family();
    let mut at = |pointer: &str, change: &dyn Fn(&mut Map<String, Value>)| {
        if let Some(Value::Object(schema)) = document.pointer_mut(pointer) {
            change(schema);
        }
    };
    // Sheets (§§1-4, §6.2.1): a sheet part only its family reads; an id
    // that is not blank; the six traits.
    if part == Part::Sheet {
        at("", &|sheet| {
            narrow(sheet, "id", json!({"pattern": "\\S"}));
            if family != Family::Arcana2d10 {
                narrow(sheet, "abilities", json!({"maxProperties": 0}));
            }
            if family == Family::Pbta2d6 {
                narrow(sheet, "traits", json!({"propertyNames": {"enum": pbta::TRAITS}}));
            } else {
                narrow(sheet, "traits", json!({"maxProperties": 0}));
            }
        });
        sheet_differences(ruleset, &mut at);
    }
    if part == Part::Action {
        action_differences(ruleset, &mut at);
    }
    if part == Part::Outcome {
        // The fields only `@2` writes are absent under `@1` and always
        // present under `@2` (see each family's `fits_version`); a
        // `pending_choice` is present as `null` when nobody may choose.
        let fields: &[(&str, &str, bool)] = match family {
            Family::PokemonD6 => &[("/$defs/dodge", "result", false), ("/$defs/status_move", "breaks_charge", false)],
            Family::Berserk => &[("/$defs/strike", "pending_choice", true)],
            Family::Arcana2d10 | Family::Pbta2d6 => &[],
        };
        let v2 = ruleset.version() >= 2;
        for &(pointer, field, nullable) in fields {
            at(pointer, &|outcome| match (v2, nullable) {
                (false, _) => forbid(outcome, field),
                (true, false) => require(outcome, field),
                (true, true) => present(outcome, field),
            });
        }
    }
}

/// Applies a change to the schema at a JSON pointer of the document.
type At<'a> = dyn FnMut(&str, &dyn Fn(&mut Map<String, Value>)) + 'a;

/// §6.2.1: `magical` and `min_points` came with `arcana-2d10@2`.
fn sheet_differences(ruleset: RulesetId, at: &mut At<'_>) {
    match ruleset {
        RulesetId::Arcana2d10V1 => at("/$defs/AbilitySheet", &|ability| {
            forbid(ability, "magical");
            forbid(ability, "min_points");
        }),
        RulesetId::Arcana2d10V2 => {
            at("/$defs/AbilitySheet", &|ability| narrow(ability, "min_points", json!({"minimum": 1, "maximum": 12})))
        }
        _ => {}
    }
}

/// What the rules check of an action's fields, noted on each field rather
/// than held as a constraint. A schema holds what the server reads — a value
/// it cannot read is `INVALID_ARGUMENT` naming the field — and the rules
/// decide the rest (ranges, a version's required or absent fields), refusing
/// with `FAILED_PRECONDITION` and the reason each note names (docs/errors.md).
/// So an action is valid under its schema exactly when the server reads it,
/// as every action line of the rules vectors is, the rejected ones included.
fn action_differences(ruleset: RulesetId, at: &mut At<'_>) {
    family_action_rules(ruleset.family(), at);
    version_action_rules(ruleset, at);
}

/// What every version of a family checks beyond its schema.
fn family_action_rules(family: Family, at: &mut At<'_>) {
    match family {
        Family::Arcana2d10 => {
            for kind in ["/$defs/cast", "/$defs/defend"] {
                at(kind, &|check| {
                    rule(
                        check,
                        "skill_points",
                        "The rules take 1 to 12 (docs/rules.md §2); else SKILL_POINTS_OUT_OF_RANGE.",
                    )
                });
            }
        }
        Family::Pbta2d6 => at("/$defs/move", &|action| {
            rule(
                action,
                "trait",
                "One of brawn, grace, charm, grit, wits, cool (docs/rules.md §4); else UNKNOWN_TRAIT (@2: the trait must be \
                 on the actor's sheet, else TRAIT_NOT_ON_SHEET).",
            )
        }),
        Family::PokemonD6 | Family::Berserk => {}
    }
}

/// What one version checks beyond its family's: fields it adds, requires
/// or refuses.
fn version_action_rules(ruleset: RulesetId, at: &mut At<'_>) {
    match ruleset {
        RulesetId::PokemonD6V1 => at("/$defs/dodge", &|dodge| {
            rule(
                dodge,
                "against",
                "Not part of @1 (docs/rules.md §6.1.3 adds it in @2): refused as FIELD_NOT_IN_VERSION.",
            )
        }),
        RulesetId::PokemonD6V2 => at("/$defs/dodge", &|dodge| {
            rule(
                dodge,
                "against",
                "Required by @2's rules (docs/rules.md §6.1.3): the version of the attack this dodge answers; without it, \
                 or naming no resolved attack, DODGE_NOT_AGAINST_AN_ATTACK.",
            )
        }),
        RulesetId::BerserkV1 => {
            for side in ["/$defs/Attacker", "/$defs/Defender"] {
                at(side, &|side| {
                    rule(
                        side,
                        "fixed_roll",
                        "@2 only (docs/rules.md §6.3.2): refused under @1 as FIELD_NOT_IN_VERSION.",
                    )
                });
            }
        }
        RulesetId::BerserkV2 => {
            for side in ["/$defs/Attacker", "/$defs/Defender"] {
                at(side, &|side| {
                    rule(
                        side,
                        "avoid_exchange",
                        "Not in @2, where the exchange is chosen after the roll with `exchange_choice` (docs/rules.md \
                         §6.3.1): refused as AVOID_EXCHANGE_BEFORE_ROLL.",
                    );
                    rule(
                        side,
                        "fixed_roll",
                        "The rules take an integer from 1 to 6 (docs/rules.md §6.3.2); else FIXED_ROLL_OUT_OF_RANGE.",
                    );
                });
            }
            at("/$defs/exchange_choice", &|choice| {
                rule(
                    choice,
                    "against",
                    "Required by the rules (docs/rules.md §6.3.1): the strike awaiting its choice; else NOT_AWAITING_CHOICE.",
                );
                rule(
                    choice,
                    "avoid",
                    "Required by the rules (docs/rules.md §6.3.1): true or false; else AVOID_NOT_BOOLEAN.",
                );
            });
        }
        RulesetId::Pbta2d6V2 => at("/$defs/move", &|action| {
            rule(
                action,
                "trait_value",
                "Not in @2, where the value comes from the sheet (docs/rules.md §6.4.1): refused as TRAIT_VALUE_FROM_SHEET.",
            );
            rule(action, "stakes", "Required by @2's rules, not blank (docs/rules.md §6.4.2); else STAKES_REQUIRED.");
            rule(
                action,
                "helpers",
                "Others than the actor, each once (docs/rules.md §6.4.3); else HELPERS_NOT_OTHERS.",
            );
        }),
        _ => {}
    }
}

/// Appends what the rules check of `field` to its description.
fn rule(schema: &mut Map<String, Value>, field: &str, note: &str) {
    if let Some(Value::Object(property)) = properties(schema).get_mut(field) {
        let description = match property.get("description").and_then(Value::as_str) {
            Some(existing) if !existing.is_empty() => format!("{existing} {note}"),
            _ => note.to_owned(),
        };
        property.insert("description".to_owned(), Value::String(description));
    }
}

fn object<'a>(schema: &'a mut Value, pointer: &str) -> &'a mut Map<String, Value> {
    match schema.pointer_mut(pointer) {
        Some(Value::Object(fields)) => fields,
        _ => unreachable!("a derived struct schema is an object"),
    }
}

fn properties(schema: &mut Map<String, Value>) -> &mut Map<String, Value> {
    match schema.entry("properties").or_insert_with(|| json!({})) {
        Value::Object(properties) => properties,
        _ => unreachable!("`properties` is an object"),
    }
}

/// The field is not part of this version: under `additionalProperties:
/// false`, sending it is refused.
fn forbid(schema: &mut Map<String, Value>, field: &str) {
    properties(schema).remove(field);
    if let Some(Value::Array(required)) = schema.get_mut("required") {
        required.retain(|name| name != field);
    }
}

/// The field must be there, `null` or not.
fn present(schema: &mut Map<String, Value>, field: &str) {
    match schema.entry("required").or_insert_with(|| json!([])) {
        Value::Array(required) if !required.iter().any(|name| name == field) => required.push(json!(field)),
        _ => {}
    }
}

/// The field must be sent, and not as `null`.
fn require(schema: &mut Map<String, Value>, field: &str) {
    if let Some(Value::Object(property)) = properties(schema).get_mut(field)
        && let Some(Value::Array(types)) = property.get_mut("type")
    {
        types.retain(|name| name != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            property.insert("type".to_owned(), only);
        }
    }
    if let Some(Value::Object(property)) = properties(schema).get_mut(field)
        && let Some(Value::Array(any)) = property.get_mut("anyOf")
    {
        any.retain(|choice| choice.get("type").and_then(Value::as_str) != Some("null"));
    }
    present(schema, field);
}

/// More keywords on a field's schema.
fn narrow(schema: &mut Map<String, Value>, field: &str, keywords: Value) {
    if let (Some(Value::Object(property)), Value::Object(keywords)) = (properties(schema).get_mut(field), keywords) {
        property.extend(keywords);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn property<'a>(document: &'a Value, pointer: &str, field: &str) -> Option<&'a Value> {
        document.pointer(pointer).and_then(|schema| schema.get("properties")).and_then(|p| p.get(field))
    }

    fn required(document: &Value, pointer: &str, field: &str) -> bool {
        document
            .pointer(&format!("{pointer}/required"))
            .and_then(Value::as_array)
            .is_some_and(|required| required.iter().any(|name| name == field))
    }

    #[test]
    fn every_version_has_its_own_three_documents() {
        for id in RulesetId::ALL {
            let schemas = for_ruleset(id);
            for (name, document) in
                [("sheet", &schemas.sheet), ("action", &schemas.action), ("outcome", &schemas.outcome)]
            {
                assert_eq!(document["$schema"], DIALECT, "{id} {name}");
                assert_eq!(document["title"], format!("{id} {name}").replace("sheet", "participant"));
            }
            let kinds: Vec<Value> = action_kinds(id).iter().map(|kind| json!(kind.name())).collect();
            assert_eq!(schemas.action["properties"]["type"]["enum"], Value::Array(kinds.clone()), "{id}");
            for kind in &kinds {
                let kind = kind.as_str().unwrap_or_default();
                let action = &schemas.action["$defs"][kind];
                assert_eq!(action["additionalProperties"], false, "{id} {kind}: deny_unknown_fields");
                assert_eq!(action["properties"]["type"]["const"], kind);
                assert!(schemas.outcome["$defs"].get(kind).is_some(), "{id} {kind} outcome");
            }
        }
    }

    #[test]
    fn rulings_and_disputes_are_not_act_actions() {
        for id in RulesetId::ALL {
            let kinds = action_kinds(id);
            assert!(kinds.contains(&ActionKind::Roll), "{id}");
            assert!(!kinds.contains(&ActionKind::Ruling) && !kinds.contains(&ActionKind::Dispute), "{id}");
        }
        assert!(!action_kinds(RulesetId::BerserkV1).contains(&ActionKind::ExchangeChoice));
        assert!(action_kinds(RulesetId::BerserkV2).contains(&ActionKind::ExchangeChoice));
    }

    fn note<'a>(document: &'a Value, pointer: &str, field: &str) -> &'a str {
        property(document, pointer, field).and_then(|p| p["description"].as_str()).unwrap_or_default()
    }

    #[test]
    fn versions_differ_where_rules_md_section_6_says() {
        // What the rules check is noted, never a constraint: the rules
        // refuse it (FAILED_PRECONDITION), the schema accepts what is read.
        let p1 = for_ruleset(RulesetId::PokemonD6V1);
        let p2 = for_ruleset(RulesetId::PokemonD6V2);
        assert!(note(&p1.action, "/$defs/dodge", "against").contains("FIELD_NOT_IN_VERSION"));
        assert!(!required(&p2.action, "/$defs/dodge", "against"));
        assert!(note(&p2.action, "/$defs/dodge", "against").contains("§6.1.3"));
        // An action's rules stay in the action's document.
        assert!(!required(&p2.outcome, "/$defs/dodge", "against"));
        assert!(property(&p1.outcome, "/$defs/dodge", "result").is_none());
        assert!(required(&p2.outcome, "/$defs/dodge", "result"));
        assert!(property(&p1.outcome, "/$defs/status_move", "breaks_charge").is_none());
        assert!(required(&p2.outcome, "/$defs/status_move", "breaks_charge"));

        let a1 = for_ruleset(RulesetId::Arcana2d10V1);
        let a2 = for_ruleset(RulesetId::Arcana2d10V2);
        assert!(property(&a1.sheet, "/$defs/AbilitySheet", "magical").is_none());
        assert!(property(&a1.sheet, "/$defs/AbilitySheet", "min_points").is_none());
        assert!(property(&a2.sheet, "/$defs/AbilitySheet", "magical").is_some());
        assert_eq!(property(&a2.sheet, "/$defs/AbilitySheet", "min_points").map(|m| &m["maximum"]), Some(&json!(12)));
        assert!(note(&a1.action, "/$defs/cast", "skill_points").contains("SKILL_POINTS_OUT_OF_RANGE"));

        let b1 = for_ruleset(RulesetId::BerserkV1);
        let b2 = for_ruleset(RulesetId::BerserkV2);
        assert!(note(&b1.action, "/$defs/Attacker", "fixed_roll").contains("FIELD_NOT_IN_VERSION"));
        assert!(property(&b1.action, "/$defs/Attacker", "avoid_exchange").is_some());
        assert!(note(&b2.action, "/$defs/Defender", "avoid_exchange").contains("AVOID_EXCHANGE_BEFORE_ROLL"));
        assert!(note(&b2.action, "/$defs/Defender", "fixed_roll").contains("FIXED_ROLL_OUT_OF_RANGE"));
        assert!(note(&b2.action, "/$defs/exchange_choice", "avoid").contains("§6.3.1"));
        assert!(property(&b1.outcome, "/$defs/strike", "pending_choice").is_none());
        assert!(required(&b2.outcome, "/$defs/strike", "pending_choice"));

        let m1 = for_ruleset(RulesetId::Pbta2d6V1);
        let m2 = for_ruleset(RulesetId::Pbta2d6V2);
        assert!(property(&m1.action, "/$defs/move", "trait_value").is_some());
        assert!(!note(&m1.action, "/$defs/move", "stakes").contains("STAKES_REQUIRED"));
        assert!(note(&m2.action, "/$defs/move", "trait_value").contains("TRAIT_VALUE_FROM_SHEET"));
        assert!(note(&m2.action, "/$defs/move", "stakes").contains("STAKES_REQUIRED"));
    }

    #[test]
    fn field_names_and_enum_strings_are_serdes() {
        let p1 = for_ruleset(RulesetId::PokemonD6V1);
        // `move_name` is read as `move`; `Prefer` as its snake_case strings.
        assert!(property(&p1.action, "/$defs/attack", "move").is_some());
        assert!(property(&p1.action, "/$defs/attack", "move_name").is_none());
        assert_eq!(p1.action["$defs"]["Prefer"]["enum"], json!(["crit", "effect"]));
        assert!(required(&p1.action, "/$defs/attack", "actor"));
        assert!(!required(&p1.action, "/$defs/attack", "power"), "serde(default) fields are optional");
        let m1 = for_ruleset(RulesetId::Pbta2d6V1);
        assert!(property(&m1.action, "/$defs/move", "trait").is_some());
    }
}
