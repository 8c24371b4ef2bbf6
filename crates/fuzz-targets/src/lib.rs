//! Fuzz targets for what battlelog reads from outside: each target is a
//! plain function of one input's bytes that panics when a property fails.
//! Two runners call them: `cargo test` (tests/targets.rs: the checked-in
//! seeds plus a few thousand random inputs per target, in every CI run) and
//! libFuzzer, coverage-guided, for the long runs (the `fuzz-*` binaries,
//! built by `scripts/fuzz` with the `libfuzzer` feature; FUZZING.md).
//!
//! - [`dice_expr`]: the dice expression parser and evaluator.
//! - [`export_audit`]: an export file read and audited as
//!   `battlelog audit --file` does.
//! - [`token`]: the `authorization` header, down to the JWT and its
//!   signature with a real key.
//! - [`journal_decode`]: stored records, appended events, the guard's state
//!   and the store's write sets, decoded from bytes.
//! - [`runner`]: the random-input runner `cargo test` uses.
#![forbid(unsafe_code)]

pub mod dice_expr;
pub mod export_audit;
pub mod journal_decode;
pub mod runner;
pub mod token;

/// A target: one input in, a panic when a property does not hold.
pub type Target = fn(&[u8]);

/// Every target by the name its harness, seeds and figures go by.
pub const TARGETS: [(&str, Target); 4] = [
    ("dice_expression", dice_expr::run),
    ("export_audit", export_audit::run),
    ("bearer_token", token::run),
    ("journal_decode", journal_decode::run),
];
