//! Why a `pbta-2d6` result is what it is (see [`crate::explain`]): the dice, the trait, help and the row.

use super::types as pbta;
use crate::action::Action;
use crate::explain::parts::{Case, Explanation, Sum, Term, die, row, term};
use crate::model::state::Battle;
use crate::outcome::Outcome;
use crate::ruleset::RulesetId;

/// Explains a `pbta-2d6` action's outcome, of the action's own kind, into
/// `explanation`.
pub(crate) fn explain(explanation: &mut Explanation, case: &Case<'_>) {
    // [`crate::explain::explain`] hands over only matching kinds.
    if let (Action::Move(act), Outcome::Move(out)) = (case.action, case.outcome) {
        explain_move(explanation, case.before, act, case.faces, out);
    }
}

fn explain_move(
    explanation: &mut Explanation,
    before: &Battle,
    act: &pbta::Move,
    faces: &[u32],
    out: &pbta::MoveOutcome,
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
