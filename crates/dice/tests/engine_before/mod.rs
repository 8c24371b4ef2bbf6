//! The dice engine as it was before the optimisation of issue 24, kept as
//! the oracle of `tests/matches_before.rs`: its parser and evaluation verbatim,
//! its word stream `rand_chacha`'s generator, which docs/protocol.md §2 names.

pub mod eval;
pub mod parse;
