//! What one ruleset version answers to the fold: the [`Engine`] trait. Each
//! family's `mod.rs` implements it once over its `vN` modules (a `static`
//! per version),
//! and [`crate::registry`] names every implementation once, so the fold in
//! [`crate::battle`] never matches on a ruleset itself.

use crate::action::Action;
use crate::dice_request::DiceRequest;
use crate::error::{Rejection, ResolveError};
use crate::model::state::{Battle, RulesState};
use crate::outcome::Outcome;
use crate::ruleset::RulesetId;
use crate::summary::Summary;

/// One ruleset version's rules. An action or state of another family is
/// refused with [`wrong_ruleset`]; §5's common actions never reach it.
pub(crate) trait Engine: Sync {
    /// The dice `action` needs now, in draw order, or why the rules forbid it.
    fn dice_needed(&self, battle: &Battle, action: &Action) -> Result<DiceRequest, Rejection>;

    /// The outcome and summary of `action` with `faces`, already checked
    /// against [`Engine::dice_needed`].
    fn resolve(&self, battle: &Battle, action: &Action, faces: &[u32]) -> Result<(Outcome, Summary), ResolveError>;

    /// Folds one recorded (or effective) outcome into the ruleset's state.
    fn apply(&self, state: &mut RulesState, action: &Action, outcome: &Outcome) -> Result<(), ResolveError>;

    /// Whether an outcome has the shape this version writes: a judge's
    /// override may replace fields, but not give an outcome a field of
    /// another version nor take one away. Most versions accept every shape.
    fn fits_version(&self, _outcome: &Outcome) -> Result<(), String> {
        Ok(())
    }
}

/// The refusal of an action that belongs to another ruleset.
pub(crate) fn wrong_ruleset(ruleset: RulesetId, action: &Action) -> Rejection {
    Rejection::WrongRuleset { action: action.kind().name(), ruleset }
}

/// What a stateless ruleset's fold checks: only that the outcome is of the
/// action's kind.
pub(crate) fn same_kind(action: &Action, outcome: &Outcome) -> Result<(), ResolveError> {
    if outcome.kind() == action.kind() {
        Ok(())
    } else {
        Err(ResolveError::OutcomeMismatch { action: action.kind().name(), outcome: outcome.kind_name() })
    }
}
