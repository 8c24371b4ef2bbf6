//! Why a `arcana-2d10` result is what it is (see [`crate::explain`]): the check's dice, its points and bonuses and the row, and whether a defence stopped the attack.

use super::types as arcana;
use super::v1;
use crate::action::Action;
use crate::explain::parts::{Case, Explanation, Sum, Term, die, row, term};
use crate::outcome::Outcome;

/// Explains a `arcana-2d10` action's outcome, of the action's own kind, into
/// `explanation`.
pub(crate) fn explain(explanation: &mut Explanation, case: &Case<'_>) {
    let (before, faces) = (case.before, case.faces);
    match (case.action, case.outcome) {
        (Action::Cast(act), Outcome::Cast(out)) => {
            explain_check(explanation, &act.check(), faces, out.result, out.concentration_broken)
        }
        (Action::Defend(act), Outcome::Defend(out)) => {
            explain_check(explanation, &act.check(), faces, out.result, out.concentration_broken);
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
        // [`crate::explain::explain`] hands over only matching kinds.
        _ => {}
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
    let specialization = if check.specialization_matches { v1::specialization_bonus(check.skill_points) } else { 0 };
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
