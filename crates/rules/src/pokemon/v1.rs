//! `pokemon-d6@1`: the tables and order of resolution of docs/rules.md §1.
//!
//! Where docs/rules.md is silent, these readings are ours (each has a test):
//! - `never_miss` reads a power die of 1 as a 2 on the move's own scale:
//!   `hit` at 1/3 on the general table (as docs/rules.md says), one hit for
//!   `multi_hit`, 1/5 for `variable_power`. `interrupt` still needs p > 1.
//! - `multi_hit` and `variable_power` moves never crit, `high_crit` or not;
//!   a power die of 6 still breaks the target's preparation (step 5 says p = 6).
//! - A `status_move` is a move that is not two-turn, so it abandons a
//!   preparation like any other; `pass`, `dodge` and `metronome` are not
//!   moves and leave `charging` and `flinched` alone (a flinch waits for the
//!   next attack or status move).
//! - A status that lands again replaces the turns left.
//!
//! `pokemon-d6@2` ([`super::v2`]) resolves through the same functions with
//! its own `Reading`; `READING` here is `@1`'s, and `@1` never sees a
//! field that only `@2` writes.

use super::types::{
    Act, Attack, AttackOutcome, AttackResult, Dodge, DodgeOutcome, Metronome, MetronomeOutcome, PassOutcome,
    PassResult, Pokemon, Prefer, State, StatusMove, StatusMoveOutcome, StatusMoveResult,
};
use crate::dice_request::{DiceError, DiceRequest, Faces, RollSpec};
use crate::error::{Rejection, ResolveError};
use crate::fraction::Fraction;
use crate::outcome::Outcome;
use crate::ruleset::RulesetId;
use crate::summary::{Summary, plural_ru, status_ru, turns_en, turns_ru};

/// Counted dodges a Pokémon may make in one battle.
pub const DODGE_LIMIT: u32 = 5;

/// Turns a status from an attack's secondary effect lasts.
pub const EFFECT_TURNS: u32 = 2;

/// The conditions that roll a die of their own on every move, in draw order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    Paralysis,
    Infatuation,
    Confusion,
}

impl Condition {
    pub const DRAW_ORDER: [Condition; 3] = [Condition::Paralysis, Condition::Infatuation, Condition::Confusion];

    pub fn status(self) -> &'static str {
        match self {
            Condition::Paralysis => "paralysis",
            Condition::Infatuation => "infatuation",
            Condition::Confusion => "confusion",
        }
    }
}

/// The conditions `pokemon` has, in draw order: one die each.
pub fn conditions(pokemon: &Pokemon) -> Vec<Condition> {
    Condition::DRAW_ORDER.into_iter().filter(|c| pokemon.statuses.contains_key(c.status())).collect()
}

/// Where the versions of `pokemon-d6` part ways inside the shared order of
/// resolution (docs/rules.md §6.1 items 1, 2 and 4; the dodge of item 3 is
/// [`super::v2`]'s own).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reading {
    /// §1.1 step 4: the power table with the move's flags.
    pub(crate) power_row: fn(u32, &Attack) -> PowerRow,
    /// §6.1.2: an `effect` named [`FLINCH`] interrupts the target instead of
    /// giving it a status.
    pub(crate) flinch_effect: bool,
    /// §6.1.4: a status move's 6 breaks the target's preparation, and its
    /// outcome always says whether it did.
    pub(crate) status_move_breaks_charge: bool,
}

/// How `pokemon-d6@1` reads docs/rules.md §1.
pub(crate) const READING: Reading = Reading { power_row, flinch_effect: false, status_move_breaks_charge: false };

/// The secondary effect that `@2` reads as an interruption (§6.1.2).
pub const FLINCH: &str = "flinch";

/// The row of the power table (with the move's flags) a power die selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PowerRow {
    pub result: AttackResult,
    pub multiplier: Fraction,
    /// `Some` for multi-hit moves that hit.
    pub hits: Option<u32>,
    /// The move's `effect` lands (on a `hit`).
    pub effect_may_apply: bool,
}

/// docs/rules.md §1.1 step 4: the power table and its modifications by flag.
pub fn power_row(power_die: u32, attack: &Attack) -> PowerRow {
    let p = if power_die == 1 && attack.never_miss { 2 } else { power_die };
    if attack.multi_hit && p > 1 {
        return PowerRow {
            result: AttackResult::Hit,
            multiplier: Fraction::ONE,
            hits: Some(p - 1),
            effect_may_apply: p == 5 && attack.effect.is_some(),
        };
    }
    single_hit_row(power_die, attack)
}

/// The power table for one hit, whatever `multi_hit` says: the general
/// table with `never_miss`, `high_crit` and `prefer`, or `variable_power`'s
/// steps. `@2` reads multi-hit moves on it too (§6.1.1).
pub fn single_hit_row(power_die: u32, attack: &Attack) -> PowerRow {
    let p = if power_die == 1 && attack.never_miss { 2 } else { power_die };
    let has_effect = attack.effect.is_some();
    let row = |result, multiplier, effect_may_apply| PowerRow { result, multiplier, hits: None, effect_may_apply };
    if p <= 1 {
        return row(AttackResult::Miss, Fraction::ZERO, false);
    }
    if attack.variable_power {
        let multiplier = Fraction::new(p - 1, 5).unwrap_or(Fraction::ONE);
        return row(AttackResult::Hit, multiplier, p == 5 && has_effect);
    }
    match p {
        2 => row(AttackResult::Hit, Fraction::ONE_THIRD, false),
        3 => row(AttackResult::Hit, Fraction::TWO_THIRDS, false),
        4 => row(AttackResult::Hit, Fraction::ONE, false),
        5 if attack.high_crit && !(has_effect && attack.prefer == Prefer::Effect) => {
            row(AttackResult::Crit, Fraction::TWO, false)
        }
        5 => row(AttackResult::Hit, Fraction::ONE, has_effect),
        _ => row(AttackResult::Crit, Fraction::TWO, false),
    }
}

/// docs/rules.md §1.2: turns a status move lasts by power die; `None` fails.
pub fn status_turns(power_die: u32) -> Option<u32> {
    match power_die {
        3..=6 => Some(power_die - 2),
        _ => None,
    }
}

/// docs/rules.md §1.3: damage reduction (percent) and whether the dodge counts,
/// by effective dodge value.
pub fn dodge_row(effective: u32) -> (u32, bool) {
    match effective {
        0 | 1 => (0, true),
        2 => (5, true),
        3 => (50, true),
        4 => (60, true),
        5 => (100, true),
        _ => (100, false),
    }
}

/// The dodge die as the table reads it: one less against a priority move,
/// never below 1.
pub fn effective_dodge(die: u32, priority: bool) -> u32 {
    if priority { die.saturating_sub(1).max(1) } else { die }
}

pub(crate) fn pokemon<'s>(state: &'s State, field: &'static str, id: &str) -> Result<&'s Pokemon, Rejection> {
    state.pokemon.get(id).ok_or_else(|| Rejection::UnknownParticipant { field, id: id.to_owned() })
}

/// Whether this attack is the preparation turn of a two-turn move.
fn prepares(attack: &Attack, actor: &Pokemon) -> bool {
    attack.two_turn && actor.charging.as_deref() != Some(attack.move_name.as_str())
}

fn power_and_conditions(actor: &Pokemon) -> DiceRequest {
    let mut rolls = vec![RollSpec::one(6, "power")];
    rolls.extend(conditions(actor).into_iter().map(|condition| RollSpec::one(6, condition.status())));
    DiceRequest::Rolls(rolls)
}

pub(crate) fn dice_needed(state: &State, act: Act<'_>) -> Result<DiceRequest, Rejection> {
    match act {
        Act::Attack(attack) => {
            let actor = pokemon(state, "actor", &attack.actor)?;
            pokemon(state, "target", &attack.target)?;
            if attack.multi_hit && attack.variable_power {
                return Err(Rejection::MultiHitWithVariablePower);
            }
            if actor.flinched || prepares(attack, actor) {
                return Ok(DiceRequest::none());
            }
            Ok(power_and_conditions(actor))
        }
        Act::StatusMove(status_move) => {
            let actor = pokemon(state, "actor", &status_move.actor)?;
            pokemon(state, "target", &status_move.target)?;
            if actor.flinched {
                return Ok(DiceRequest::none());
            }
            Ok(power_and_conditions(actor))
        }
        Act::Dodge(dodge) => {
            let actor = pokemon(state, "actor", &dodge.actor)?;
            // `against` came with `@2`; here it would be silently ignored.
            if dodge.against.is_some() {
                return Err(Rejection::FieldNotInVersion {
                    action: "dodge",
                    field: "against",
                    ruleset: RulesetId::PokemonD6V1,
                });
            }
            if actor.dodges_used >= DODGE_LIMIT {
                return Err(Rejection::NoDodgesLeft { actor: dodge.actor.clone(), limit: DODGE_LIMIT });
            }
            Ok(DiceRequest::Rolls(vec![RollSpec::one(6, "dodge")]))
        }
        Act::Metronome(metronome) => {
            pokemon(state, "actor", &metronome.actor)?;
            let count = metronome.moves.len();
            let sides = u32::try_from(count).ok().filter(|&sides| sides <= dice::stream::MAX_SIDES);
            match sides {
                _ if count == 0 => Err(Rejection::NoMoves),
                None => Err(Rejection::TooManyMoves { count, max: dice::stream::MAX_SIDES }),
                Some(sides) => Ok(DiceRequest::Rolls(vec![RollSpec::one(sides, "metronome")])),
            }
        }
        Act::Pass(pass) => {
            pokemon(state, "actor", &pass.actor)?;
            Ok(DiceRequest::none())
        }
    }
}

/// The outcome and summary of an action whose dice were checked against
/// [`dice_needed`] for the same state.
pub(crate) fn resolve(state: &State, act: Act<'_>, faces: &[u32]) -> Result<(Outcome, Summary), ResolveError> {
    resolve_with(&READING, state, act, faces)
}

/// [`resolve`] under any version's [`Reading`]; the dodge is `@1`'s.
pub(crate) fn resolve_with(
    reading: &Reading,
    state: &State,
    act: Act<'_>,
    faces: &[u32],
) -> Result<(Outcome, Summary), ResolveError> {
    let mut faces = Faces::new(faces);
    Ok(match act {
        Act::Attack(attack) => {
            let (outcome, summary) = resolve_attack(reading, state, attack, &mut faces)?;
            (Outcome::Attack(outcome), summary)
        }
        Act::StatusMove(status_move) => {
            let (outcome, summary) = resolve_status_move(reading, state, status_move, &mut faces)?;
            (Outcome::StatusMove(outcome), summary)
        }
        Act::Dodge(dodge) => {
            let (outcome, summary) = resolve_dodge(state, dodge, &mut faces)?;
            (Outcome::Dodge(outcome), summary)
        }
        Act::Metronome(metronome) => {
            let (outcome, summary) = resolve_metronome(metronome, &mut faces)?;
            (Outcome::Metronome(outcome), summary)
        }
        Act::Pass(pass) => (
            Outcome::Pass(PassOutcome { result: PassResult::Pass }),
            Summary::new(format!("{} пропускает ход", pass.actor), format!("{} passes", pass.actor)),
        ),
    })
}

/// What the condition dice decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ConditionDice {
    failed_by: Option<Condition>,
    hits_itself: bool,
}

fn roll_conditions(actor: &Pokemon, faces: &mut Faces<'_>) -> Result<ConditionDice, DiceError> {
    let mut decided = ConditionDice { failed_by: None, hits_itself: false };
    for condition in conditions(actor) {
        let face = faces.take()?;
        let odd = face % 2 == 1;
        match condition {
            Condition::Paralysis if face <= 2 => {
                decided.failed_by.get_or_insert(condition);
            }
            Condition::Infatuation if odd => {
                decided.failed_by.get_or_insert(condition);
            }
            Condition::Confusion => decided.hits_itself = odd,
            Condition::Paralysis | Condition::Infatuation => {}
        }
    }
    Ok(decided)
}

fn flinched_summary(actor: &str, move_name: &str) -> Summary {
    Summary::new(
        format!("{actor} вздрагивает — «{move_name}» срывается"),
        format!("{actor} flinches: {move_name} fails"),
    )
}

fn condition_failure_summary(actor: &str, move_name: &str, condition: Condition) -> Summary {
    let (ru, en) = match condition {
        Condition::Paralysis => ("паралич", "is paralysed"),
        Condition::Infatuation => ("очарование", "is infatuated"),
        Condition::Confusion => ("путаница", "is confused"),
    };
    Summary::new(format!("{actor}: {ru}, «{move_name}» срывается"), format!("{actor} {en}: {move_name} fails"))
}

fn resolve_attack(
    reading: &Reading,
    state: &State,
    attack: &Attack,
    faces: &mut Faces<'_>,
) -> Result<(AttackOutcome, Summary), ResolveError> {
    let actor = pokemon(state, "actor", &attack.actor)?;
    let target = pokemon(state, "target", &attack.target)?;
    let (me, them, name) = (&attack.actor, &attack.target, &attack.move_name);
    if actor.flinched {
        return Ok((AttackOutcome::bare(AttackResult::Flinched), flinched_summary(me, name)));
    }
    if prepares(attack, actor) {
        let summary = Summary::new(
            format!("{me} готовит «{name}»: удар на следующем ходу"),
            format!("{me} is charging {name}: it strikes next turn"),
        );
        return Ok((AttackOutcome::bare(AttackResult::Charging), summary));
    }
    let power_die = faces.take()?;
    let condition_dice = roll_conditions(actor, faces)?;
    if let Some(condition) = condition_dice.failed_by {
        return Ok((AttackOutcome::bare(AttackResult::Failed), condition_failure_summary(me, name, condition)));
    }
    let row = (reading.power_row)(power_die, attack);
    let damage = attack.power.map(|power| row.multiplier.apply_rounded(u64::from(power), row.hits.unwrap_or(1)));
    let mut outcome = AttackOutcome { multiplier: Some(row.multiplier), damage, ..AttackOutcome::bare(row.result) };
    if row.result == AttackResult::Miss {
        let summary = Summary::new(format!("{me} → {them}, «{name}»: промах"), format!("{me} → {them}, {name}: miss"));
        return Ok((outcome, summary));
    }
    outcome.hits = row.hits;
    let [(hits_ru, hits_en), (damage_ru, damage_en)] = amounts_text(row.hits, damage);
    let multiplier = row.multiplier;
    if condition_dice.hits_itself {
        outcome.result = AttackResult::SelfHit;
        let summary = Summary::new(
            format!("{me} в замешательстве бьёт себя: «{name}» ×{multiplier}{hits_ru}{damage_ru}"),
            format!("{me} is confused and hits itself: {name} ×{multiplier}{hits_en}{damage_en}"),
        );
        return Ok((outcome, summary));
    }
    let effect = if row.effect_may_apply { attack.effect.clone() } else { None };
    // §6.1.2: under `@2` a flinch effect is an interruption, not a status.
    let flinch_effect = reading.flinch_effect && effect.as_deref() == Some(FLINCH);
    let interrupts = (attack.interrupt && power_die > 1) || flinch_effect;
    let breaks_charge = power_die == 6 && target.charging.is_some();
    let (mut ru, mut en) = if row.result == AttackResult::Crit {
        let damage = damage.map(|damage| format!(" ({damage})")).unwrap_or_default();
        (
            format!("{me} → {them}, «{name}»: критическая атака — двойной урон{damage}"),
            format!("{me} → {them}, {name}: critical hit — double damage{damage}"),
        )
    } else {
        (
            format!("{me} → {them}, «{name}»: попадание ×{multiplier}{hits_ru}{damage_ru}"),
            format!("{me} → {them}, {name}: hit ×{multiplier}{hits_en}{damage_en}"),
        )
    };
    let status = effect.as_deref().filter(|_| !flinch_effect);
    let (after_ru, after_en) = after_hit_text(them, status, interrupts, breaks_charge);
    ru.push_str(&after_ru);
    en.push_str(&after_en);
    outcome.effect_applied = Some(effect);
    outcome.interrupts_target = Some(interrupts);
    outcome.breaks_charge = Some(breaks_charge);
    Ok((outcome, Summary::new(ru, en)))
}

/// The hits and the damage of a landed attack, as the summary's tail reads
/// them (`, 2 удара` / `, 2 hits`, `, урон 6` / `, 6 damage`); empty when
/// the attack has none.
fn amounts_text(hits: Option<u32>, damage: Option<u64>) -> [(String, String); 2] {
    let hits = match hits {
        Some(hits) => (
            format!(", {hits} {}", plural_ru(u64::from(hits), "удар", "удара", "ударов")),
            format!(", {hits} {}", if hits == 1 { "hit" } else { "hits" }),
        ),
        None => (String::new(), String::new()),
    };
    let damage = match damage {
        Some(damage) => (format!(", урон {damage}"), format!(", {damage} damage")),
        None => (String::new(), String::new()),
    };
    [hits, damage]
}

/// What a landed hit left on the target, in Russian and English: the
/// status it applied, a flinch, a broken preparation.
fn after_hit_text(them: &str, status: Option<&str>, interrupts: bool, breaks_charge: bool) -> (String, String) {
    let (mut ru, mut en) = (String::new(), String::new());
    if let Some(status) = status {
        ru.push_str(&format!("; {them}: {} на {}", status_ru(status), turns_ru(EFFECT_TURNS)));
        en.push_str(&format!("; {them}: {status} for {}", turns_en(EFFECT_TURNS)));
    }
    if interrupts {
        ru.push_str(&format!("; {them} вздрагивает: следующий приём сорвётся"));
        en.push_str(&format!("; {them} flinches: its next move fails"));
    }
    if breaks_charge {
        ru.push_str(&format!("; подготовка {them} сорвана"));
        en.push_str(&format!("; {them}'s preparation is broken"));
    }
    (ru, en)
}

fn resolve_status_move(
    reading: &Reading,
    state: &State,
    status_move: &StatusMove,
    faces: &mut Faces<'_>,
) -> Result<(StatusMoveOutcome, Summary), ResolveError> {
    let actor = pokemon(state, "actor", &status_move.actor)?;
    let target = pokemon(state, "target", &status_move.target)?;
    let (me, them, name, status) =
        (&status_move.actor, &status_move.target, &status_move.move_name, &status_move.status);
    // `@2` always reports whether a preparation broke; `@1` never does.
    let no_break = reading.status_move_breaks_charge.then_some(false);
    let failed =
        |summary| (StatusMoveOutcome { result: StatusMoveResult::Failed, turns: 0, breaks_charge: no_break }, summary);
    if actor.flinched {
        let outcome = StatusMoveOutcome { result: StatusMoveResult::Flinched, turns: 0, breaks_charge: no_break };
        return Ok((outcome, flinched_summary(me, name)));
    }
    let power_die = faces.take()?;
    let condition_dice = roll_conditions(actor, faces)?;
    if let Some(condition) = condition_dice.failed_by {
        return Ok(failed(condition_failure_summary(me, name, condition)));
    }
    let Some(turns) = status_turns(power_die) else {
        return Ok(failed(Summary::new(
            format!("{me} → {them}, «{name}»: приём сорвался"),
            format!("{me} → {them}, {name}: the move failed"),
        )));
    };
    if condition_dice.hits_itself {
        let outcome = StatusMoveOutcome { result: StatusMoveResult::SelfHit, turns, breaks_charge: no_break };
        let summary = Summary::new(
            format!("{me} в замешательстве накладывает на себя {} на {}", status_ru(status), turns_ru(turns)),
            format!("{me} is confused and inflicts {status} on itself for {}", turns_en(turns)),
        );
        return Ok((outcome, summary));
    }
    // §6.1.4 (`@2`): the opponent's 6 breaks a preparation, status moves too.
    let breaks_charge = reading.status_move_breaks_charge.then_some(power_die == 6 && target.charging.is_some());
    let outcome = StatusMoveOutcome { result: StatusMoveResult::Success, turns, breaks_charge };
    let mut ru = format!("{me} → {them}, «{name}»: {} на {}", status_ru(status), turns_ru(turns));
    let mut en = format!("{me} → {them}, {name}: {status} for {}", turns_en(turns));
    if breaks_charge == Some(true) {
        ru.push_str(&format!("; подготовка {them} сорвана"));
        en.push_str(&format!("; {them}'s preparation is broken"));
    }
    Ok((outcome, Summary::new(ru, en)))
}

fn resolve_dodge(state: &State, dodge: &Dodge, faces: &mut Faces<'_>) -> Result<(DodgeOutcome, Summary), ResolveError> {
    let actor = pokemon(state, "actor", &dodge.actor)?;
    let incoming = dodge.incoming_damage.map(u64::from);
    let outcome = rolled_dodge(actor, faces.take()?, dodge.priority, incoming);
    let summary = dodge_summary(&dodge.actor, dodge.teleport, &outcome, incoming);
    Ok((outcome, summary))
}

/// §1.3: the dodge die read on the table, against `incoming` damage when known.
pub(crate) fn rolled_dodge(actor: &Pokemon, die: u32, priority: bool, incoming: Option<u64>) -> DodgeOutcome {
    let (reduction_percent, counted) = dodge_row(effective_dodge(die, priority));
    let used = actor.dodges_used.saturating_add(u32::from(counted)).min(DODGE_LIMIT);
    let dodges_left = DODGE_LIMIT - used;
    let damage_after = incoming
        .map(|damage| crate::fraction::round_half_up(u128::from(damage) * u128::from(100 - reduction_percent), 100));
    DodgeOutcome { result: None, reduction_percent, counted, dodges_left, damage_after }
}

/// The forum line of a dodge that was read on the table of §1.3.
pub(crate) fn dodge_summary(me: &str, teleport: bool, outcome: &DodgeOutcome, incoming: Option<u64>) -> Summary {
    let DodgeOutcome { reduction_percent, counted, dodges_left, damage_after, .. } = *outcome;
    let (mut ru, mut en) = match reduction_percent {
        0 => (format!("{me} не может уклониться"), format!("{me} cannot dodge")),
        100 => (format!("{me} уклоняется без последствий"), format!("{me} dodges cleanly")),
        percent => (
            format!("{me} уклоняется: урон снижен на {percent} %"),
            format!("{me} dodges: damage reduced by {percent}%"),
        ),
    };
    if teleport {
        ru = format!("Телепорт: {ru}");
        en = format!("Teleport: {en}");
    }
    if let (Some(before), Some(after)) = (incoming, damage_after) {
        ru.push_str(&format!(" ({before} → {after})"));
        en.push_str(&format!(" ({before} → {after})"));
    }
    if counted {
        ru.push_str(&format!("; уклонение засчитано, осталось уклонений: {dodges_left}"));
        en.push_str(&format!("; dodge counted, {dodges_left} left"));
    } else {
        ru.push_str(&format!("; уклонение не засчитано, осталось уклонений: {dodges_left}"));
        en.push_str(&format!("; dodge not counted, {dodges_left} left"));
    }
    Summary::new(ru, en)
}

fn resolve_metronome(
    metronome: &Metronome,
    faces: &mut Faces<'_>,
) -> Result<(MetronomeOutcome, Summary), ResolveError> {
    let face = faces.take()?;
    let index = usize::try_from(face).ok().and_then(|face| face.checked_sub(1));
    let picked = index.and_then(|index| metronome.moves.get(index)).ok_or(DiceError::Face {
        position: 1,
        face,
        sides: u32::try_from(metronome.moves.len()).unwrap_or(u32::MAX),
        purpose: "metronome",
    })?;
    let me = &metronome.actor;
    let summary =
        Summary::new(format!("Метроном у {me}: выпадает «{picked}»"), format!("{me}'s Metronome picks {picked}"));
    Ok((MetronomeOutcome { picked: picked.clone() }, summary))
}

/// Folds an outcome (resolved now, or recorded and perhaps overridden by a
/// judge) into the state.
pub(crate) fn apply(state: &mut State, act: Act<'_>, outcome: &Outcome) -> Result<(), ResolveError> {
    apply_with(&READING, state, act, outcome)
}

/// [`apply`] under any version's [`Reading`].
pub(crate) fn apply_with(
    reading: &Reading,
    state: &mut State,
    act: Act<'_>,
    outcome: &Outcome,
) -> Result<(), ResolveError> {
    let mismatch = || ResolveError::OutcomeMismatch { action: act.kind_name(), outcome: outcome.kind_name() };
    match (act, outcome) {
        (Act::Attack(attack), Outcome::Attack(outcome)) => {
            let actor = pokemon_mut(state, "actor", &attack.actor)?;
            match outcome.result {
                AttackResult::Flinched => {
                    actor.flinched = false;
                    actor.charging = None;
                }
                AttackResult::Charging => actor.charging = Some(attack.move_name.clone()),
                _ => actor.charging = None,
            }
            if matches!(outcome.result, AttackResult::Hit | AttackResult::Crit) {
                let target = pokemon_mut(state, "target", &attack.target)?;
                match outcome.effect() {
                    Some(FLINCH) if reading.flinch_effect => target.flinched = true,
                    Some(status) => {
                        target.statuses.insert(status.to_owned(), EFFECT_TURNS);
                    }
                    None => {}
                }
                if outcome.interrupts_target == Some(true) {
                    target.flinched = true;
                }
                if outcome.breaks_charge == Some(true) {
                    target.charging = None;
                }
            }
            end_turn(pokemon_mut(state, "actor", &attack.actor)?);
        }
        (Act::StatusMove(status_move), Outcome::StatusMove(outcome)) => {
            let actor = pokemon_mut(state, "actor", &status_move.actor)?;
            actor.charging = None;
            if outcome.result == StatusMoveResult::Flinched {
                actor.flinched = false;
            }
            let receiver = match outcome.result {
                StatusMoveResult::Success => Some(&status_move.target),
                StatusMoveResult::SelfHit => Some(&status_move.actor),
                StatusMoveResult::Failed | StatusMoveResult::Flinched => None,
            };
            if let Some(receiver) = receiver.filter(|_| outcome.turns > 0) {
                pokemon_mut(state, "target", receiver)?.statuses.insert(status_move.status.clone(), outcome.turns);
            }
            let broke = outcome.result == StatusMoveResult::Success && outcome.breaks_charge == Some(true);
            if reading.status_move_breaks_charge && broke {
                pokemon_mut(state, "target", &status_move.target)?.charging = None;
            }
            end_turn(pokemon_mut(state, "actor", &status_move.actor)?);
        }
        (Act::Dodge(dodge), Outcome::Dodge(outcome)) => {
            let actor = pokemon_mut(state, "actor", &dodge.actor)?;
            if outcome.counted {
                actor.dodges_used = actor.dodges_used.saturating_add(1).min(DODGE_LIMIT);
            }
        }
        (Act::Metronome(metronome), Outcome::Metronome(_)) => {
            pokemon_mut(state, "actor", &metronome.actor)?;
        }
        (Act::Pass(pass), Outcome::Pass(_)) => end_turn(pokemon_mut(state, "actor", &pass.actor)?),
        _ => return Err(mismatch()),
    }
    Ok(())
}

pub(crate) fn pokemon_mut<'s>(
    state: &'s mut State,
    field: &'static str,
    id: &str,
) -> Result<&'s mut Pokemon, Rejection> {
    state.pokemon.get_mut(id).ok_or_else(|| Rejection::UnknownParticipant { field, id: id.to_owned() })
}

/// docs/rules.md §1.1 step 7: every status of the actor loses a turn; at 0 it is gone.
pub fn end_turn(pokemon: &mut Pokemon) {
    pokemon.statuses.retain(|_, turns| {
        *turns = turns.saturating_sub(1);
        *turns > 0
    });
}

impl Act<'_> {
    pub(crate) fn kind_name(self) -> &'static str {
        match self {
            Act::Attack(_) => "attack",
            Act::StatusMove(_) => "status_move",
            Act::Dodge(_) => "dodge",
            Act::Metronome(_) => "metronome",
            Act::Pass(_) => "pass",
        }
    }
}

#[cfg(test)]
mod tests;
