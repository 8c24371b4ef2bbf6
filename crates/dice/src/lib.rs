//! Provably fair dice for battlelog: everything in `docs/protocol.md` §1–3, bit for
//! bit, and nothing that touches a disk, a socket or a clock.
//!
//! - [`seed`]: server seeds, commitments and roll keys (commit–reveal, §1–2;
//!   the v2 roll key bound to a beacon round, §6.3).
//! - [`signature`]: the roller's Ed25519 signatures over its commitments
//!   (`docs/PROTOCOL-signatures.md`).
//! - [`stream`]: the ChaCha20 word stream of one roll and the
//!   rejection-sampled die drawn from it (§2).
//! - [`expr`]: the dice expression language v1 — parser, limits and the
//!   evaluation that fixes which word becomes which die (§3).
//! - [`record`]: the roll record that keeps every die with its flags.
//! - [`mod@render`]: the one-line human rendering pasted into forum posts.
//! - [`terms`]: which recorded die belongs to which term, and raw faces.
//!
//! Randomness comes only from [`stream::RollStream`]; no `rand` range or
//! distribution helper is used anywhere, because their output may change
//! between library versions and a roll must re-derive identically forever.

pub mod expr;
pub mod record;
pub mod render;
pub mod seed;
pub mod signature;
pub mod stream;
pub mod terms;

pub use expr::{EvalError, ExprError, Expression, Limits, evaluate, evaluate_keeping_dice};
pub use record::{Die, Roll};
pub use render::{Piece, pieces, render};
pub use seed::{Commitment, RollKey, SeedError, ServerSeed};
pub use signature::{CommitmentSigner, RollerKey, SignatureError, commitment_message};
pub use stream::{RollStream, WordSource, draw_die};
pub use terms::{raw_faces, split_by_term};

/// Parses `expression`, derives the roll's word stream from `server_seed`,
/// `client_seed` and `nonce`, and evaluates it: the whole of docs/protocol.md §2–3
/// in one call.
pub fn roll(
    expression: &str,
    server_seed: &ServerSeed,
    client_seed: &str,
    nonce: u64,
) -> Result<(Expression, Roll), RollError> {
    let parsed = Expression::parse(expression)?;
    let key = RollKey::derive(server_seed, client_seed);
    let mut words = RollStream::new(&key, nonce);
    let rolled = evaluate(&parsed, &mut words)?;
    Ok((parsed, rolled))
}

/// Why [`roll`] produced no roll: the expression is invalid, or its
/// evaluation hit a limit (division by zero, overflow).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RollError {
    #[error(transparent)]
    Expression(#[from] ExprError),
    #[error(transparent)]
    Evaluation(#[from] EvalError),
}
