//! A revealed seed against its commitment, and a journaled roll against
//! its re-derivation from the revealed seed (docs/protocol.md §1–§2).

use std::collections::BTreeMap;

use battlelog_proto::battle::die_from_proto;
use battlelog_proto::v1::DiceRolled;

use super::Problem;

/// `SHA-256(revealed seed)` is the epoch's commitment.
pub(super) fn check_reveal(commitments: &BTreeMap<u32, String>, epoch: u32, seed_hex: &str) -> Result<(), Problem> {
    let seed = dice::ServerSeed::from_hex(seed_hex).map_err(|source| Problem::SeedMalformed { epoch, source })?;
    let Some(commitment) = commitments.get(&epoch) else {
        return Err(Problem::NeverCommitted { epoch });
    };
    if seed.commitment().to_string() != *commitment {
        return Err(Problem::SeedMismatch { epoch, commitment: commitment.clone() });
    }
    Ok(())
}

/// The roll's dice, total and evaluation error are what the revealed seed,
/// the client seed and the nonce give.
pub(super) fn rederive(seed_hex: &str, client_seed: &str, roll: &DiceRolled) -> Result<(), Problem> {
    let nonce = roll.nonce;
    // Only seeds that passed `check_reveal` get here; the error is kept
    // rather than assumed away.
    let seed =
        dice::ServerSeed::from_hex(seed_hex).map_err(|source| Problem::SeedMalformed { epoch: roll.epoch, source })?;
    let expression = dice::Expression::parse(&roll.expression).map_err(|source| Problem::RollExpression {
        nonce,
        expression: roll.expression.clone(),
        source,
    })?;
    let key = dice::RollKey::derive(&seed, client_seed);
    let (derived, total) = dice::evaluate_keeping_dice(&expression, &mut dice::RollStream::new(&key, nonce));
    let recorded: Vec<dice::Die> = roll.dice.iter().map(die_from_proto).collect();
    let derived_total = total.as_ref().copied().unwrap_or(0);
    let derived_error = total.err().map(|e| e.to_string()).unwrap_or_default();
    if derived != recorded || derived_total != roll.total || derived_error != roll.error {
        let faces = |dice: &[dice::Die]| dice.iter().map(|d| d.value.to_string()).collect::<Vec<_>>().join(", ");
        return Err(Problem::RollDiffers {
            nonce,
            expression: roll.expression.clone(),
            recorded: faces(&recorded),
            recorded_total: roll.total,
            derived: faces(&derived),
            derived_total,
        });
    }
    Ok(())
}
