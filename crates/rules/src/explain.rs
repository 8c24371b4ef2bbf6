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

use serde::Serialize;
use serde_json::{Value, json};

use crate::action::Action;
use crate::model::sheet::Version;
use crate::model::state::{Battle, RulesState};
use crate::fraction::{Fraction, round_half_up};
use crate::outcome::Outcome;
use crate::ruleset::{Family, RulesetId};
use crate::{arcana, berserk, pokemon};

/// The two languages of the judges' pages and of the CLI's explanations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lang {
    En,
    Ru,
}

/// One resolved action explained.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Explanation {
    /// `name@version` of the rules that gave the result.
    pub ruleset: String,
    /// The action's `type`.
    pub action: &'static str,
    /// The dice in draw order, each with its role and meaning.
    pub dice: Vec<DieUse>,
    /// Every sum the rules computed, with its dice and named terms.
    pub sums: Vec<Sum>,
    /// Products (damage, damage after a dodge): factors and the rounded value.
    pub products: Vec<Product>,
    /// The rules the result came from, in the order they were applied; the
    /// last row that gives a result gives the outcome's.
    pub rows: Vec<Row>,
    /// What the action changed in the state (see [`state_view`]).
    pub changes: Vec<Change>,
}

/// One die as the rules used it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DieUse {
    /// What the die is for: `die`, `power`, `paralysis`, `infatuation`,
    /// `confusion`, `dodge`, `attacker`, `defender`, `effect`, `metronome`.
    pub role: &'static str,
    pub face: u32,
    pub sides: u32,
    /// The participant whose die it is: a berserk defender's die is the
    /// defender's, whoever asked for the roll.
    pub who: Option<String>,
    /// What this face meant, when it decided something on its own
    /// (`condition.fails`, `condition.passes`, `confusion.self`, …).
    pub meaning: Option<&'static str>,
    /// The forum's own text the face picked (a Metronome move), as is.
    pub picked: Option<String>,
}

/// A named modifier added to a sum.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Term {
    pub key: &'static str,
    pub value: i64,
    /// The docs/rules.md section that names it.
    pub section: &'static str,
    /// What the term stands for, e.g. the trait's name or the helpers.
    pub detail: Option<String>,
    /// Subtracted rather than added (`diff` = A − D).
    pub minus: bool,
}

impl Term {
    /// What the term adds to its sum.
    pub fn contribution(&self) -> i64 {
        if self.minus { -self.value } else { self.value }
    }

    /// A bare number of the rule (`p − 2`'s 2): shown without a name.
    pub fn is_constant(&self) -> bool {
        self.key == "constant"
    }
}

/// One piece of a sum as a reader reads it: the operator before it (none
/// for the first piece), the term it shows (none for a die's face) and the
/// number written, so that `first op number op number …` evaluates to the
/// sum's value and no sign is ever doubled ("+ −2" is written "− 2").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part<'a> {
    pub op: Option<char>,
    pub term: Option<&'a Term>,
    /// `5`, `−3` (a first piece only), `(−1)` (a negative value subtracted).
    pub number: String,
}

/// `value` = the dice + every term.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Sum {
    /// `total`, `sum`, `total_skill`, `attacker_total`, `defender_total`,
    /// `diff`, `effective_die`, `effect_value`.
    pub key: &'static str,
    /// The participant it belongs to, when it is one side's.
    pub who: Option<String>,
    pub dice: Vec<u32>,
    pub terms: Vec<Term>,
    pub value: i64,
}

impl Sum {
    fn new(key: &'static str, who: Option<&str>, dice: Vec<u32>, terms: Vec<Term>) -> Sum {
        let value =
            dice.iter().map(|&face| i64::from(face)).sum::<i64>() + terms.iter().map(Term::contribution).sum::<i64>();
        Sum { key, who: who.map(str::to_owned), dice, terms, value }
    }

    /// The sum's pieces in reading order: the dice, then the terms.
    pub fn parts(&self) -> Vec<Part<'_>> {
        let mut parts: Vec<Part<'_>> = Vec::new();
        for &face in &self.dice {
            let op = (!parts.is_empty()).then_some('+');
            parts.push(Part { op, term: None, number: face.to_string() });
        }
        for term in &self.terms {
            let first = parts.is_empty();
            let (op, number) = match (first, term.minus, term.value < 0) {
                (true, false, _) => (None, signed_plain(term.value)),
                (_, true, false) => (Some('−'), term.value.to_string()),
                (_, true, true) => (Some('−'), format!("({})", signed_plain(term.value))),
                (false, false, false) => (Some('+'), term.value.to_string()),
                (false, false, true) => (Some('−'), term.value.unsigned_abs().to_string()),
            };
            parts.push(Part { op, term: Some(term), number });
        }
        parts
    }

    /// Whether writing the pieces out would only repeat the value ("effective
    /// die = 3 = 3"): a lone die and no term.
    pub fn is_bare(&self) -> bool {
        self.dice.len() == 1 && self.terms.is_empty()
    }
}

/// `5`, `−3`: a number with a true minus sign, no plus.
fn signed_plain(value: i64) -> String {
    if value < 0 { format!("−{}", value.unsigned_abs()) } else { value.to_string() }
}

/// `value` = round(product of the factors), as the rules round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Product {
    /// `damage`, `damage_after`.
    pub key: &'static str,
    /// Factor key and its value as written (`65`, `2/3`, `50%`).
    pub factors: Vec<(&'static str, String)>,
    pub value: i64,
}

/// The rule (a table row or a step of docs/rules.md) a result came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Row {
    pub key: &'static str,
    pub section: &'static str,
    /// The result this row gives, in the outcome's own words (`hit`,
    /// `full_success`, `medium/weak` for a berserk attacker/defender pair).
    pub gives: Option<String>,
}

/// One field of one participant (or of the battle, `who` = `None`) before
/// and after the action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    pub who: Option<String>,
    pub field: String,
    pub before: Value,
    pub after: Value,
}

fn term(key: &'static str, value: i64, section: &'static str) -> Term {
    Term { key, value, section, detail: None, minus: false }
}

fn row(key: &'static str, section: &'static str, gives: Option<&str>) -> Row {
    Row { key, section, gives: gives.map(str::to_owned) }
}

fn die(role: &'static str, face: u32, sides: u32, who: &str, meaning: Option<&'static str>) -> DieUse {
    DieUse { role, face, sides, who: Some(who.to_owned()), meaning, picked: None }
}

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
    let ruleset = before.ruleset();
    match (action, outcome) {
        (Action::Move(act), Outcome::Move(out)) => explain_move(&mut explanation, before, act, faces, out),
        (Action::Cast(act), Outcome::Cast(out)) => {
            explain_check(&mut explanation, &act.check(), faces, out.result, out.concentration_broken)
        }
        (Action::Defend(act), Outcome::Defend(out)) => {
            explain_check(&mut explanation, &act.check(), faces, out.result, out.concentration_broken);
            let attack = match before.entry(act.against).map(|entry| &entry.effective) {
                Some(Outcome::Cast(cast)) => Some(cast.result),
                _ => None,
            };
            let (key, gives) = match (attack, out.attack_lands) {
                (Some(arcana::CastResult::CriticalSuccess), true) if out.result.succeeded() => {
                    ("arcana.defend.crit_needs_crit", "attack_lands")
                }
                (_, true) => ("arcana.defend.lands", "attack_lands"),
                (Some(attack), false) if !attack.succeeded() => ("arcana.defend.attack_failed", "attack_stopped"),
                (_, false) => ("arcana.defend.stopped", "attack_stopped"),
            };
            explanation.rows.push(row(key, "2.2", Some(gives)));
        }
        (Action::StartEpisode(_), Outcome::StartEpisode(_)) => {
            explanation.rows.push(row("arcana.start_episode", "2.3", Some("episode_started")));
        }
        (Action::Strike(act), Outcome::Strike(out)) => explain_strike(&mut explanation, ruleset, act, faces, out),
        (Action::Effect(act), Outcome::Effect(_)) => {
            let face = faces.first().copied().unwrap_or(0);
            explanation.dice.push(die("effect", face, 6, &act.actor, None));
            let mut terms = Vec::new();
            if act.die_modifier != 0 {
                terms.push(term("die_modifier", i64::from(act.die_modifier), "3.2"));
            }
            let sum = Sum::new("effect_value", Some(&act.actor), vec![face], terms);
            let (key, gives, index) = match sum.value {
                ..=3 => ("berserk.effect.x", "x", 0),
                4 | 5 => ("berserk.effect.y", "y", 1),
                _ => ("berserk.effect.z", "z", 2),
            };
            explanation.sums.push(sum);
            explanation.rows.push(row(key, "3.2", Some(gives)));
            // The strength the row picks from the action's X-Y-Z.
            explanation.products.push(Product {
                key: "effect_strength",
                factors: vec![("effect_values", format!("{}-{}-{}", act.values[0], act.values[1], act.values[2]))],
                value: act.values[index],
            });
        }
        (Action::ExchangeChoice(act), Outcome::ExchangeChoice(out)) => {
            let (key, gives) = if act.avoid == Value::Bool(true) {
                ("berserk.choice.avoid", format!("{}/{}", tier(out.attacker_tier), tier(out.defender_tier)))
            } else {
                ("berserk.choice.keep", format!("{}/{}", tier(out.attacker_tier), tier(out.defender_tier)))
            };
            explanation.rows.push(Row { key, section: "6.3.1", gives: Some(gives) });
        }
        (Action::Attack(act), Outcome::Attack(out)) => explain_attack(&mut explanation, before, act, faces, out),
        (Action::StatusMove(act), Outcome::StatusMove(out)) => {
            explain_status_move(&mut explanation, before, act, faces, out)
        }
        (Action::Dodge(act), Outcome::Dodge(out)) => explain_dodge(&mut explanation, before, act, faces, out),
        (Action::Metronome(act), Outcome::Metronome(_)) => {
            let face = faces.first().copied().unwrap_or(0);
            let sides = u32::try_from(act.moves.len()).unwrap_or(u32::MAX);
            let picked = usize::try_from(face).ok().and_then(|k| k.checked_sub(1)).and_then(|k| act.moves.get(k));
            explanation.dice.push(DieUse {
                role: "metronome",
                face,
                sides,
                who: Some(act.actor.clone()),
                meaning: Some("metronome.picks"),
                picked: picked.cloned(),
            });
            explanation.rows.push(Row { key: "pokemon.metronome", section: "1.4", gives: picked.cloned() });
        }
        (Action::Pass(_), Outcome::Pass(_)) => {
            explanation.rows.push(row("pokemon.pass", "1.5", Some("pass")));
        }
        (Action::Ruling(ruling), _) => {
            let key = if ruling.replacement.is_some() { "common.ruling.override" } else { "common.ruling" };
            explanation.rows.push(row(key, "5.1", None));
        }
        (Action::Dispute(_), _) => explanation.rows.push(row("common.dispute", "5.1", None)),
        (Action::Roll(_), _) => explanation.rows.push(row("common.roll", "5.2", None)),
        // An outcome of another action's kind: nothing to explain but that.
        _ => explanation.rows.push(row("outcome_mismatch", "", None)),
    }
    if let Ok(after) = before.apply(version, action, outcome) {
        explanation.changes = changes(&state_view(before), &state_view(&after));
    }
    explanation
}

fn explain_move(
    explanation: &mut Explanation,
    before: &Battle,
    act: &crate::pbta::Move,
    faces: &[u32],
    out: &crate::pbta::MoveOutcome,
) {
    for &face in faces {
        explanation.dice.push(die("die", face, 6, &act.actor, None));
    }
    let sheet = before.participant(&act.actor).and_then(|p| p.traits.get(&act.trait_name).copied());
    let trait_value = act.trait_value.or(sheet).unwrap_or(0);
    let help = i64::from(!act.helpers.is_empty());
    let sum = Sum::new(
        "total",
        Some(&act.actor),
        faces.to_vec(),
        vec![Term { detail: Some(act.trait_name.clone()), ..term("trait", i64::from(trait_value), "4.1") }]
            .into_iter()
            // No helper, no help term: "+ help 0" adds nothing a judge needs.
            .chain(
                (!act.helpers.is_empty())
                    .then(|| Term { detail: Some(act.helpers.join(", ")), ..term("help", help, "4.1") }),
            )
            .collect(),
    );
    let (key, gives) = match sum.value {
        10.. => ("pbta.full_success", "full_success"),
        7..=9 => ("pbta.success_with_cost", "success_with_cost"),
        _ => ("pbta.miss", "miss"),
    };
    explanation.sums.push(sum);
    explanation.rows.push(row(key, "4.1", Some(gives)));
    if !out.exposed.is_empty() {
        let section = if before.ruleset() == RulesetId::Pbta2d6V2 { "6.4.4" } else { "4.1" };
        explanation.rows.push(row("pbta.helpers_exposed", section, None));
    }
}

fn explain_check(
    explanation: &mut Explanation,
    check: &arcana::Check<'_>,
    faces: &[u32],
    result: arcana::CastResult,
    broken: bool,
) {
    for &face in faces {
        explanation.dice.push(die("die", face, 10, check.actor, None));
    }
    let specialization =
        if check.specialization_matches { arcana::v1::specialization_bonus(check.skill_points) } else { 0 };
    let mut terms = vec![
        term("skill_points", check.skill_points, "2.1"),
        Term {
            detail: (!check.specialization_matches).then(|| "no_match".to_owned()),
            ..term("specialization", specialization, "2.1")
        },
    ];
    for (key, value) in [
        ("artifact_bonus", check.artifact_bonus),
        ("berserk_bonus", check.berserk_bonus),
        ("aux_bonus", check.aux_bonus),
    ] {
        if value != 0 {
            terms.push(term(key, i64::from(value), "2.1"));
        }
    }
    let total_skill = Sum::new("total_skill", Some(check.actor), Vec::new(), terms);
    let sum = Sum::new("sum", Some(check.actor), faces.to_vec(), Vec::new());
    let (s, skill, mastery) = (sum.value, total_skill.value, check.skill_points == 12);
    let (key, gives) = if s == 2 {
        ("arcana.sum_2", "critical_success")
    } else if s == 20 && mastery {
        ("arcana.sum_20_mastery", "ordinary_failure")
    } else if s == 20 {
        ("arcana.sum_20", "critical_failure")
    } else if s == 19 && !(mastery && skill >= 19) {
        ("arcana.sum_19", "ordinary_failure")
    } else if s <= skill {
        ("arcana.sum_within_skill", "success")
    } else {
        ("arcana.sum_over_skill", "failure")
    };
    explanation.sums.push(sum);
    explanation.sums.push(total_skill);
    explanation.rows.push(row(key, "2.1", Some(gives)));
    if broken && result.breaks_concentration() {
        explanation.rows.push(row("arcana.concentration_broken", "2.1", None));
    }
}

fn tier(tier: berserk::Tier) -> &'static str {
    match tier {
        berserk::Tier::Weak => "weak",
        berserk::Tier::Medium => "medium",
        berserk::Tier::Strong => "strong",
        berserk::Tier::Miss => "miss",
        berserk::Tier::None => "none",
    }
}

/// One side of a berserk fight: its die (or fixed roll), modifier and the
/// experience left after cancelling.
fn side_sum(
    key: &'static str,
    who: &str,
    face: Option<u32>,
    fixed: Option<u32>,
    modifier: i32,
    experience: Option<(i64, i64)>,
) -> Sum {
    let mut terms = Vec::new();
    if let Some(fixed) = fixed {
        terms.push(term("fixed_roll", i64::from(fixed), "6.3.2"));
    }
    if modifier != 0 {
        terms.push(term("die_modifier", i64::from(modifier), "3.1"));
    }
    if let Some((own, other)) = experience.filter(|(own, other)| *own != 0 || *other != 0) {
        let value = (own - other).max(0);
        terms.push(Term { detail: Some(format!("{own} − {other}")), ..term("experience", value, "3.1") });
    }
    Sum::new(key, Some(who), face.into_iter().collect(), terms)
}

fn explain_strike(
    explanation: &mut Explanation,
    ruleset: RulesetId,
    act: &berserk::Strike,
    faces: &[u32],
    out: &berserk::StrikeOutcome,
) {
    let v2 = ruleset == RulesetId::BerserkV2;
    let fixed = |value: Option<&Value>| {
        if v2 { value.and_then(Value::as_u64).and_then(|v| u32::try_from(v).ok()) } else { None }
    };
    let (attacker_fixed, defender_fixed) =
        (fixed(act.attacker.fixed_roll.as_ref()), fixed(act.defender.fixed_roll.as_ref()));
    let mut faces = faces.iter().copied();
    let attacker_die = if attacker_fixed.is_none() { faces.next() } else { None };
    if let Some(face) = attacker_die {
        explanation.dice.push(die("attacker", face, 6, &act.attacker.id, None));
    }
    let fight = act.kind == berserk::StrikeKind::Simple && !act.defender.closed && !act.own_squad;
    if !fight {
        let reason = match (act.kind, act.defender.closed) {
            (berserk::StrikeKind::Simple, true) => "berserk.no_fight.closed",
            (berserk::StrikeKind::Simple, false) => "berserk.no_fight.own_squad",
            _ => "berserk.no_fight.kind",
        };
        explanation.rows.push(row(reason, "3.1", None));
        let sum =
            side_sum("attacker_total", &act.attacker.id, attacker_die, attacker_fixed, act.attacker.die_modifier, None);
        let (key, gives) = match sum.value {
            ..=3 => ("berserk.closed.weak", "weak/none"),
            4 | 5 => ("berserk.closed.medium", "medium/none"),
            _ => ("berserk.closed.strong", "strong/none"),
        };
        explanation.sums.push(sum);
        explanation.rows.push(row(key, "3.1", Some(gives)));
    } else {
        let defender_die = if defender_fixed.is_none() { faces.next() } else { None };
        if let Some(face) = defender_die {
            explanation.dice.push(die("defender", face, 6, &act.defender.id, None));
        }
        let (x, y) = (i64::from(act.attacker.attack_experience), i64::from(act.defender.defense_experience));
        let a = side_sum(
            "attacker_total",
            &act.attacker.id,
            attacker_die,
            attacker_fixed,
            act.attacker.die_modifier,
            Some((x, y)),
        );
        let d = side_sum(
            "defender_total",
            &act.defender.id,
            defender_die,
            defender_fixed,
            act.defender.die_modifier,
            Some((y, x)),
        );
        let diff = Sum::new(
            "diff",
            None,
            Vec::new(),
            vec![
                term("attacker_total", a.value, "3.1"),
                Term { minus: true, ..term("defender_total", d.value, "3.1") },
            ],
        );
        let attacker_total = a.value;
        let table = |diff: i64| -> (&'static str, &'static str) {
            match diff {
                5.. => ("berserk.diff.ge5", "strong/miss"),
                4 => ("berserk.diff.p4", "strong/weak"),
                3 => ("berserk.diff.p3", "medium/miss"),
                2 => ("berserk.diff.p2", "medium/weak"),
                1 => ("berserk.diff.p1", "weak/miss"),
                0 if attacker_total <= 4 => ("berserk.diff.zero_low", "weak/miss"),
                0 => ("berserk.diff.zero_high", "miss/weak"),
                -1 => ("berserk.diff.m1", "weak/miss"),
                -2 => ("berserk.diff.m2", "miss/miss"),
                -3 => ("berserk.diff.m3", "miss/weak"),
                -4 => ("berserk.diff.m4", "weak/medium"),
                _ => ("berserk.diff.le_m5", "miss/medium"),
            }
        };
        let (key, gives) = table(diff.value);
        explanation.rows.push(row(key, "3.1", Some(gives)));
        if out.exchange_avoided {
            let (key, gives) = table(diff.value - diff.value.signum());
            let _ = key;
            explanation.rows.push(row("berserk.exchange_avoided", "3.1", Some(gives)));
        }
        if let Some(Some(side)) = out.pending_choice {
            let key = match side {
                berserk::Side::Attacker => "berserk.pending_choice.attacker",
                berserk::Side::Defender => "berserk.pending_choice.defender",
            };
            explanation.rows.push(row(key, "6.3.1", None));
        }
        explanation.sums.extend([a, d, diff]);
    }
    // Damage as the row gives it: the side's strike value for its tier.
    let tiers = explanation.rows.iter().rev().find_map(|row| row.gives.clone()).unwrap_or_default();
    let mut tiers = tiers.split('/').map(str::to_owned);
    let (attacker_tier, defender_tier) = (tiers.next().unwrap_or_default(), tiers.next().unwrap_or_default());
    for (key, tier_name, strike) in [
        ("attacker_damage", attacker_tier, act.attacker.strike),
        ("defender_damage", defender_tier, act.defender.strike),
    ] {
        if let Some(strike) = strike {
            let value = match tier_name.as_str() {
                "weak" => strike[0],
                "medium" => strike[1],
                "strong" => strike[2],
                _ => 0,
            };
            explanation.products.push(Product {
                key,
                factors: vec![
                    ("strike_values", format!("{}-{}-{}", strike[0], strike[1], strike[2])),
                    ("tier", tier_name.clone()),
                ],
                value: i64::from(value),
            });
        }
    }
}

fn condition_dice(
    explanation: &mut Explanation,
    who: &str,
    actor: Option<&pokemon::Pokemon>,
    faces: &mut impl Iterator<Item = u32>,
) {
    let conditions = actor.map(pokemon::v1::conditions).unwrap_or_default();
    for condition in conditions {
        let Some(face) = faces.next() else { break };
        let (role, meaning, fails) = match condition {
            pokemon::v1::Condition::Paralysis => {
                ("paralysis", if face <= 2 { "condition.fails" } else { "condition.passes" }, face <= 2)
            }
            pokemon::v1::Condition::Infatuation => {
                ("infatuation", if face % 2 == 1 { "condition.fails" } else { "condition.passes" }, face % 2 == 1)
            }
            pokemon::v1::Condition::Confusion => {
                ("confusion", if face % 2 == 1 { "confusion.self" } else { "confusion.target" }, false)
            }
        };
        explanation.dice.push(die(role, face, 6, who, Some(meaning)));
        if fails {
            let key = if role == "paralysis" { "pokemon.paralysis_fails" } else { "pokemon.infatuation_fails" };
            explanation.rows.push(row(key, "1.1", Some("failed")));
        }
    }
}

fn explain_attack(
    explanation: &mut Explanation,
    before: &Battle,
    act: &pokemon::Attack,
    faces: &[u32],
    out: &pokemon::AttackOutcome,
) {
    let v2 = before.ruleset() == RulesetId::PokemonD6V2;
    let actor = before.pokemon(&act.actor);
    match out.result {
        pokemon::AttackResult::Flinched => {
            explanation.rows.push(row("pokemon.flinched", "1.1", Some("flinched")));
            return;
        }
        pokemon::AttackResult::Charging => {
            explanation.rows.push(row("pokemon.charging", "1.1", Some("charging")));
            return;
        }
        _ => {}
    }
    let mut faces = faces.iter().copied();
    let Some(p) = faces.next() else { return };
    explanation.dice.push(die("power", p, 6, &act.actor, None));
    condition_dice(explanation, &act.actor, actor, &mut faces);
    if out.result == pokemon::AttackResult::Failed {
        return;
    }
    // The power row, from the flags docs/rules.md §1.1 (and §6.1.1) names.
    let has_effect = act.effect.is_some();
    let third = |n| Fraction::new(n, 3).unwrap_or(Fraction::ONE);
    let single = |p: u32| -> (&'static str, &'static str, Fraction) {
        if p == 1 && act.never_miss {
            return ("pokemon.power.never_miss", "hit", third(1));
        }
        if p <= 1 {
            return ("pokemon.power.p1", "miss", Fraction::ZERO);
        }
        if act.variable_power {
            return ("pokemon.power.variable", "hit", Fraction::new(p - 1, 5).unwrap_or(Fraction::ONE));
        }
        match p {
            2 => ("pokemon.power.p2", "hit", third(1)),
            3 => ("pokemon.power.p3", "hit", third(2)),
            4 => ("pokemon.power.p4", "hit", Fraction::ONE),
            5 if act.high_crit && !(has_effect && act.prefer == pokemon::Prefer::Effect) => {
                ("pokemon.power.high_crit", "crit", Fraction::TWO)
            }
            5 if act.high_crit => ("pokemon.power.high_crit_prefer_effect", "hit", Fraction::ONE),
            5 if has_effect => ("pokemon.power.p5_effect", "hit", Fraction::ONE),
            5 => ("pokemon.power.p5", "hit", Fraction::ONE),
            _ => ("pokemon.power.p6", "crit", Fraction::TWO),
        }
    };
    let p_eff = if p == 1 && act.never_miss { 2 } else { p };
    let (gives, multiplier, hits) = if act.multi_hit && !v2 && p_eff > 1 {
        // `@1`: the die sets the number of hits, each at full power.
        explanation.rows.push(row("pokemon.power.multi_hit", "1.1", Some("hit")));
        ("hit", Fraction::ONE, Some(p_eff - 1))
    } else {
        let (key, gives, multiplier) = single(p);
        explanation.rows.push(row(key, "1.1", Some(gives)));
        let hits = if act.multi_hit && v2 && gives != "miss" {
            explanation.rows.push(row("pokemon.power.multi_hit_v2", "6.1.1", Some(gives)));
            Some(p.saturating_sub(1).max(1))
        } else {
            None
        };
        (gives, multiplier, hits)
    };
    if out.result == pokemon::AttackResult::SelfHit && gives != "miss" {
        explanation.rows.push(row("pokemon.confusion_self_hit", "1.1", Some("self_hit")));
    }
    if let Some(effect) = out.effect() {
        let flinch = v2 && effect == pokemon::v1::FLINCH;
        let (key, section) = if flinch { ("pokemon.effect.flinch", "6.1.2") } else { ("pokemon.effect.status", "1.1") };
        explanation.rows.push(row(key, section, None));
    }
    if out.interrupts_target == Some(true) && act.interrupt {
        explanation.rows.push(row("pokemon.interrupt", "1.1", None));
    }
    if out.breaks_charge == Some(true) {
        explanation.rows.push(row("pokemon.breaks_charge", "1.1", None));
    }
    // Damage as the row gives it: round(power × multiplier × hits).
    if let Some(power) = act.power {
        let mut factors = vec![("power", power.to_string()), ("multiplier", multiplier.to_string())];
        if let Some(hits) = hits {
            factors.push(("hits", hits.to_string()));
        }
        let damage = multiplier.apply_rounded(u64::from(power), hits.unwrap_or(1));
        explanation.products.push(Product { key: "damage", factors, value: i64::try_from(damage).unwrap_or(i64::MAX) });
    }
}

fn explain_status_move(
    explanation: &mut Explanation,
    before: &Battle,
    act: &pokemon::StatusMove,
    faces: &[u32],
    out: &pokemon::StatusMoveOutcome,
) {
    if out.result == pokemon::StatusMoveResult::Flinched {
        explanation.rows.push(row("pokemon.flinched", "1.2", Some("flinched")));
        return;
    }
    let mut faces = faces.iter().copied();
    let Some(p) = faces.next() else { return };
    explanation.dice.push(die("power", p, 6, &act.actor, None));
    let before_rows = explanation.rows.len();
    condition_dice(explanation, &act.actor, before.pokemon(&act.actor), &mut faces);
    if explanation.rows.len() > before_rows {
        return;
    }
    if p <= 2 {
        explanation.rows.push(row("pokemon.status.failed", "1.2", Some("failed")));
        return;
    }
    explanation.sums.push(Sum::new("turns", Some(&act.actor), vec![p], vec![term("constant", -2, "1.2")]));
    explanation.rows.push(row("pokemon.status.turns", "1.2", Some("success")));
    if out.result == pokemon::StatusMoveResult::SelfHit {
        explanation.rows.push(row("pokemon.confusion_self_hit", "1.2", Some("self_hit")));
    }
    if out.breaks_charge == Some(true) {
        explanation.rows.push(row("pokemon.breaks_charge", "6.1.4", None));
    }
}

fn explain_dodge(
    explanation: &mut Explanation,
    before: &Battle,
    act: &pokemon::Dodge,
    faces: &[u32],
    out: &pokemon::DodgeOutcome,
) {
    match out.result {
        Some(pokemon::DodgeResult::NotNeeded) => {
            explanation.rows.push(row("pokemon.dodge.not_needed", "6.1.3", Some("not_needed")));
            return;
        }
        Some(pokemon::DodgeResult::Flinched) => {
            explanation.rows.push(row("pokemon.dodge.flinched_teleport", "6.1.3", Some("flinched")));
            return;
        }
        _ => {}
    }
    let Some(&face) = faces.first() else { return };
    explanation.dice.push(die("dodge", face, 6, &act.actor, None));
    // `@2` takes priority and damage from the attack it answers (§6.1.3).
    let attack = act.against.and_then(|against| before.entry(against)).and_then(|entry| {
        match (&entry.action, &entry.effective) {
            (Action::Attack(attack), Outcome::Attack(outcome)) => Some((attack.priority, outcome.damage)),
            _ => None,
        }
    });
    let (priority, incoming) = match attack {
        Some((priority, damage)) => (priority, damage),
        None => (act.priority, act.incoming_damage.map(u64::from)),
    };
    let terms = if priority { vec![term("priority", -1, "1.1")] } else { Vec::new() };
    let sum = Sum::new("effective_die", Some(&act.actor), vec![face], terms);
    let (key, reduction, counted) = match sum.value {
        ..=1 => ("pokemon.dodge.e1", 0u32, true),
        2 => ("pokemon.dodge.e2", 5, true),
        3 => ("pokemon.dodge.e3", 50, true),
        4 => ("pokemon.dodge.e4", 60, true),
        5 => ("pokemon.dodge.e5", 100, true),
        _ => ("pokemon.dodge.e6", 100, false),
    };
    explanation.sums.push(sum);
    let gives = format!("{reduction}%{}", if counted { "" } else { " not_counted" });
    explanation.rows.push(Row { key, section: "1.3", gives: Some(gives) });
    if let Some(incoming) = incoming {
        let after = round_half_up(u128::from(incoming) * u128::from(100 - reduction), 100);
        explanation.products.push(Product {
            key: "damage_after",
            factors: vec![("incoming_damage", incoming.to_string()), ("damage_kept", format!("{}%", 100 - reduction))],
            value: i64::try_from(after).unwrap_or(i64::MAX),
        });
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
                    fields
                        .insert("dodges_left".into(), json!(pokemon::v1::DODGE_LIMIT.saturating_sub(mon.dodges_used)));
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

/// The text of a key in `lang`; an unknown key is its own text (a status
/// name, an ability, a forum's word).
pub fn label(key: &str, lang: Lang) -> String {
    match known_label(key) {
        Some((en, ru)) => match lang {
            Lang::En => en,
            Lang::Ru => ru,
        }
        .to_owned(),
        None => key.to_owned(),
    }
}

/// Whether [`label`] knows `key` (else it shows the key as it is).
pub fn is_known(key: &str) -> bool {
    known_label(key).is_some()
}

fn known_label(key: &str) -> Option<(&'static str, &'static str)> {
    Some(match key {
        // words of the explanation itself
        "dice" => ("dice", "кости"),
        "rule" => ("rule", "правило"),
        "yes" => ("yes", "да"),
        "no" => ("no", "нет"),
        "state" => ("state", "состояние"),
        "battle" => ("battle", "бой"),
        "participants" => ("participants", "участники"),
        // die roles and meanings
        "die" => ("die", "кубик"),
        "power" => ("power", "сила"),
        "paralysis" => ("paralysis", "паралич"),
        "infatuation" => ("infatuation", "очарование"),
        "confusion" => ("confusion", "путаница"),
        "flinch" => ("flinch", "вздрагивание"),
        "dodge" => ("dodge", "уклонение"),
        "attacker" => ("attacker", "атакующий"),
        "defender" => ("defender", "защитник"),
        "effect" => ("effect", "эффект"),
        "metronome" => ("Metronome", "Метроном"),
        "condition.fails" => ("the move fails", "приём срывается"),
        "condition.passes" => ("no effect", "не мешает"),
        "confusion.self" => ("odd: hits itself", "нечёт: бьёт себя"),
        "confusion.target" => ("even: hits the target", "чёт: бьёт цель"),
        "metronome.picks" => ("picks the move", "выбирает приём"),
        // sums and terms
        "total" => ("total", "итог"),
        "sum" => ("sum of the dice", "сумма костей"),
        "total_skill" => ("total skill", "суммарный скилл"),
        "attacker_total" => ("attacker's A", "A атакующего"),
        "defender_total" => ("defender's D", "D защитника"),
        "diff" => ("difference", "разница"),
        "effective_die" => ("effective die", "итоговое значение кубика"),
        "effect_value" => ("effect die", "кубик эффекта"),
        "trait" => ("trait", "черта"),
        "trait_value" => ("trait value", "значение черты"),
        "help" => ("help", "помощь"),
        "helpers" => ("helpers", "помощники"),
        "experience" => ("experience", "опыт"),
        "attack_experience" => ("attack experience", "опыт атаки"),
        "defense_experience" => ("defence experience", "опыт защиты"),
        "specialization" => ("specialization", "специализация"),
        "specialization_matches" => ("specialization matches", "специализация подходит"),
        "no_match" => ("does not match", "не подходит"),
        "skill_points" => ("skill points", "очки умения"),
        "artifact_bonus" => ("artifact bonus", "бонус артефакта"),
        "berserk_bonus" => ("berserk bonus", "бонус берсерка"),
        "aux_bonus" => ("auxiliary bonus", "вспомогательный бонус"),
        "die_modifier" => ("die modifier", "модификатор кубика"),
        "fixed_roll" => ("fixed roll", "фиксированный бросок"),
        "priority" => ("priority", "приоритет"),
        "multiplier" => ("multiplier", "множитель"),
        "hits" => ("hits", "удары"),
        "damage" => ("damage", "урон"),
        "damage_after" => ("damage after the dodge", "урон после уклонения"),
        "damage_kept" => ("damage kept", "остаётся урона"),
        "turns" => ("turns", "ходов"),
        "incoming_damage" => ("incoming damage", "входящий урон"),
        "effect_strength" => ("effect strength", "сила эффекта"),
        "effect_values" => ("X-Y-Z", "X-Y-Z"),
        "strike_values" => ("strike values", "значения удара"),
        "attacker_damage" => ("attacker's damage", "урон атакующего"),
        "defender_damage" => ("defender's damage", "урон защитника"),
        "tier" => ("tier", "ступень"),
        "weak" => ("weak", "слабый"),
        "medium" => ("medium", "средний"),
        "strong" => ("strong", "сильный"),
        "miss" => ("miss", "промах"),
        "none" => ("none", "нет"),
        // pbta traits
        "brawn" => ("brawn", "сила"),
        "grace" => ("grace", "ловкость"),
        "charm" => ("charm", "обаяние"),
        "grit" => ("grit", "стойкость"),
        "wits" => ("wits", "смекалка"),
        "cool" => ("cool", "хладнокровие"),
        // state fields
        "dodges_used" => ("dodges used", "уклонений использовано"),
        "dodges_left" => ("dodges left", "уклонений осталось"),
        "statuses" => ("statuses (turns left)", "состояния (осталось ходов)"),
        "charging" => ("preparing", "подготовка"),
        "flinched" => ("flinched", "вздрогнул"),
        "uses" => ("uses this episode", "использований в эпизоде"),
        "uses_left" => ("uses left this episode", "осталось в эпизоде"),
        "concentration_broken_in" => ("concentration broken in posts", "концентрация сбита в постах"),
        "episode" => ("episode", "эпизод"),
        "traits" => ("traits", "черты"),
        "awaiting_choice" => ("strikes awaiting the exchange choice", "удары ждут выбора обмена"),
        "pokemon" => ("Pokémon", "покемоны"),
        "broken_posts" => ("concentration broken in posts", "концентрация сбита в постах"),
        // pbta rows
        "pbta.full_success" => ("total 10 or more → full success", "итог 10 и больше → полный успех"),
        "pbta.success_with_cost" => ("total 7–9 → success at a cost", "итог 7–9 → успех с ценой"),
        "pbta.miss" => ("total 6 or less → miss, the GM makes a move", "итог 6 и меньше → провал, ход ведущего"),
        "pbta.helpers_exposed" => ("the helpers share the risk", "помощники разделяют риск"),
        // arcana rows
        "arcana.sum_2" => ("sum 2 → critical success", "сумма 2 → критический успех"),
        "arcana.sum_20_mastery" => {
            ("sum 20 at 12 points → ordinary failure", "сумма 20 при 12 очках → обычная неудача")
        }
        "arcana.sum_20" => ("sum 20 → critical failure", "сумма 20 → критическая неудача"),
        "arcana.sum_19" => ("sum 19 → ordinary failure", "сумма 19 → обычная неудача"),
        "arcana.sum_within_skill" => ("sum ≤ total skill → success", "сумма ≤ суммарного скилла → успех"),
        "arcana.sum_over_skill" => ("sum > total skill → failure", "сумма > суммарного скилла → неудача"),
        "arcana.concentration_broken" => (
            "an ordinary or critical failure breaks concentration for this post",
            "обычная или критическая неудача сбивает концентрацию до конца поста",
        ),
        "arcana.defend.lands" => {
            ("the defence did not stop the attack → it lands", "защита не остановила атаку → атака проходит")
        }
        "arcana.defend.crit_needs_crit" => (
            "a critical success is stopped only by a critical-success defence → it lands",
            "критический успех останавливает только критический успех защиты → атака проходит",
        ),
        "arcana.defend.stopped" => ("the defence succeeded → the attack is stopped", "защита удалась → атака отражена"),
        "arcana.defend.attack_failed" => ("the attack had failed → it does not land", "атака не удалась → не проходит"),
        "arcana.start_episode" => ("a new episode resets per-episode uses", "новый эпизод сбрасывает лимиты"),
        // berserk rows
        "berserk.no_fight.kind" => {
            ("not a simple strike → resolved as against a closed card", "не простой удар → как по закрытой карте")
        }
        "berserk.no_fight.closed" => {
            ("the defender is closed → only the attacker rolls", "защитник закрыт → бросает только атакующий")
        }
        "berserk.no_fight.own_squad" => ("a strike on its own squad → no fight", "удар по своему отряду → без боя"),
        "berserk.closed.weak" => ("A ≤ 3 → weak strike", "A ≤ 3 → слабый удар"),
        "berserk.closed.medium" => ("A 4–5 → medium strike", "A 4–5 → средний удар"),
        "berserk.closed.strong" => ("A ≥ 6 → strong strike", "A ≥ 6 → сильный удар"),
        "berserk.diff.ge5" => {
            ("difference ≥ +5 → attacker strong, defender misses", "разница ≥ +5 → атакующий сильный, защитник промах")
        }
        "berserk.diff.p4" => {
            ("difference +4 → attacker strong, defender weak", "разница +4 → атакующий сильный, защитник слабый")
        }
        "berserk.diff.p3" => {
            ("difference +3 → attacker medium, defender misses", "разница +3 → атакующий средний, защитник промах")
        }
        "berserk.diff.p2" => {
            ("difference +2 → attacker medium, defender weak", "разница +2 → атакующий средний, защитник слабый")
        }
        "berserk.diff.p1" => {
            ("difference +1 → attacker weak, defender misses", "разница +1 → атакующий слабый, защитник промах")
        }
        "berserk.diff.zero_low" => (
            "difference 0, A ≤ 4 → attacker weak, defender misses",
            "разница 0, A ≤ 4 → атакующий слабый, защитник промах",
        ),
        "berserk.diff.zero_high" => (
            "difference 0, A ≥ 5 → attacker misses, defender weak",
            "разница 0, A ≥ 5 → атакующий промах, защитник слабый",
        ),
        "berserk.diff.m1" => {
            ("difference −1 → attacker weak, defender misses", "разница −1 → атакующий слабый, защитник промах")
        }
        "berserk.diff.m2" => ("difference −2 → both miss", "разница −2 → оба промах"),
        "berserk.diff.m3" => {
            ("difference −3 → attacker misses, defender weak", "разница −3 → атакующий промах, защитник слабый")
        }
        "berserk.diff.m4" => {
            ("difference −4 → attacker weak, defender medium", "разница −4 → атакующий слабый, защитник средний")
        }
        "berserk.diff.le_m5" => {
            ("difference ≤ −5 → attacker misses, defender medium", "разница ≤ −5 → атакующий промах, защитник средний")
        }
        "berserk.exchange_avoided" => (
            "the higher side steps one row up and takes no blow",
            "выбросивший больше сдвигается на строку вверх и не получает удара",
        ),
        "berserk.pending_choice.attacker" => {
            ("the attacker may still avoid the exchange", "атакующий ещё может уйти от обмена")
        }
        "berserk.pending_choice.defender" => {
            ("the defender may still avoid the exchange", "защитник ещё может уйти от обмена")
        }
        "berserk.choice.avoid" => ("the exchange is avoided: one row up", "обмен ударами отменён: строка вверх"),
        "berserk.choice.keep" => ("the exchange stands as rolled", "обмен ударами остаётся"),
        "berserk.effect.x" => ("value ≤ 3 → X", "значение ≤ 3 → X"),
        "berserk.effect.y" => ("value 4–5 → Y", "значение 4–5 → Y"),
        "berserk.effect.z" => ("value ≥ 6 → Z", "значение ≥ 6 → Z"),
        // pokemon rows
        "pokemon.flinched" => ("the actor flinched: the move fails", "покемон вздрогнул: приём срывается"),
        "pokemon.charging" => ("a two-turn move: this turn prepares it", "двухходовый приём: этот ход — подготовка"),
        "pokemon.paralysis_fails" => ("paralysis die 1–2 → the move fails", "кубик паралича 1–2 → приём срывается"),
        "pokemon.infatuation_fails" => {
            ("infatuation die odd → the move fails", "кубик очарования нечётный → приём срывается")
        }
        "pokemon.confusion_self_hit" => ("confusion die odd → it hits itself", "кубик путаницы нечётный → бьёт себя"),
        "pokemon.power.p1" => ("power 1 → miss (no dodge spent)", "сила 1 → промах (уклонение не тратится)"),
        "pokemon.power.never_miss" => ("power 1, never misses → hit ×1/3", "сила 1, без промаха → попадание ×1/3"),
        "pokemon.power.p2" => ("power 2 → hit ×1/3", "сила 2 → попадание ×1/3"),
        "pokemon.power.p3" => ("power 3 → hit ×2/3", "сила 3 → попадание ×2/3"),
        "pokemon.power.p4" => ("power 4 → hit ×1", "сила 4 → попадание ×1"),
        "pokemon.power.p5" => ("power 5 → hit ×1", "сила 5 → попадание ×1"),
        "pokemon.power.p5_effect" => ("power 5 → hit ×1 and the effect applies", "сила 5 → попадание ×1 и эффект"),
        "pokemon.power.p6" => ("power 6 → critical hit ×2", "сила 6 → критическая атака ×2"),
        "pokemon.power.high_crit" => (
            "power 5 with a high critical ratio → critical hit ×2",
            "сила 5, высокий шанс крита → критическая атака ×2",
        ),
        "pokemon.power.high_crit_prefer_effect" => (
            "power 5 with a high critical ratio, the effect preferred → hit ×1 and the effect",
            "сила 5, высокий шанс крита, выбран эффект → попадание ×1 и эффект",
        ),
        "pokemon.power.variable" => ("variable power → hit ×(p−1)/5", "переменная сила → попадание ×(p−1)/5"),
        "pokemon.power.multi_hit" => ("multi-hit → p−1 hits at ×1", "серия ударов → p−1 ударов по ×1"),
        "pokemon.power.multi_hit_v2" => (
            "multi-hit → max(1, p−1) hits at the row's multiplier",
            "серия ударов → max(1, p−1) ударов с множителем строки",
        ),
        "pokemon.effect.status" => ("the effect lands for 2 turns", "эффект накладывается на 2 хода"),
        "pokemon.effect.flinch" => {
            ("the flinch effect: the target's next move fails", "эффект вздрагивания: следующий приём цели сорвётся")
        }
        "pokemon.interrupt" => ("an interrupting move: the target flinches", "прерывающий приём: цель вздрагивает"),
        "pokemon.breaks_charge" => ("a 6 breaks the target's preparation", "шестёрка срывает подготовку цели"),
        "pokemon.status.failed" => ("power 1–2 → the status move fails", "сила 1–2 → приём состояния срывается"),
        "pokemon.status.turns" => ("power 3–6 → the status lasts p−2 turns", "сила 3–6 → состояние на p−2 ходов"),
        "pokemon.dodge.e1" => ("effective die 1 → cannot dodge (counted)", "итог 1 → не уклоняется (засчитано)"),
        "pokemon.dodge.e2" => ("effective die 2 → damage −5% (counted)", "итог 2 → урон −5 % (засчитано)"),
        "pokemon.dodge.e3" => ("effective die 3 → damage −50% (counted)", "итог 3 → урон −50 % (засчитано)"),
        "pokemon.dodge.e4" => ("effective die 4 → damage −60% (counted)", "итог 4 → урон −60 % (засчитано)"),
        "pokemon.dodge.e5" => ("effective die 5 → clean dodge (counted)", "итог 5 → чистое уклонение (засчитано)"),
        "pokemon.dodge.e6" => ("effective die 6 → clean dodge, not counted", "итог 6 → чистое уклонение, не засчитано"),
        "pokemon.dodge.not_needed" => {
            ("the attack missed: no dodge needed, not counted", "атака промахнулась: уклонение не нужно и не засчитано")
        }
        "pokemon.dodge.flinched_teleport" => {
            ("a flinched Teleport fails (counted)", "Телепорт вздрогнувшего срывается (засчитано)")
        }
        "pokemon.metronome" => ("face k picks the k-th move", "грань k выбирает k-й приём"),
        "pokemon.pass" => ("the turn is skipped; statuses tick", "ход пропущен; состояния убывают"),
        // common rows
        "common.ruling" => ("a judge's ruling", "решение судьи"),
        "common.ruling.override" => {
            ("a judge's ruling replaces the outcome's fields", "решение судьи заменяет поля исхода")
        }
        "common.dispute" => ("a participant contests a result", "участник оспаривает результат"),
        "common.roll" => (
            "a free roll: its total is the result, no rule table applies",
            "свободный бросок: итог — сумма выражения, таблицы правил не применяются",
        ),
        "outcome_mismatch" => ("the outcome is not of this action", "исход не от этого действия"),
        _ => return None,
    })
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
