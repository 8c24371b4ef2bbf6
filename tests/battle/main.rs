//! System tests of the whole battle flow (issue 5): the real
//! `battlelog-journal`, `battlelog-roller` and `battlelog-resolver` binaries
//! as separate processes, real sled on disk, real gRPC on 127.0.0.1, a real
//! `nats-server -js` where the fan-out is under test, and the real
//! `battlelog` CLI for `export` and `audit --file`.
//!
//! Expected dice are re-derived by the test from the master key it gave the
//! roller (docs/protocol.md §1–3); expected outcomes come from docs/rules.md's tables.
//!
//! One test binary (each binary links the whole stack), a module per topic:
//! - [`rules_tables`]: docs/rules.md's tables, written out without the rules crate.
//! - [`full_battle`]: A full battle of each ruleset, audited, and fanned out over NATS.
//! - [`crash_retry`]: A crash between the roll and the resolution, then a retry.
//! - [`concurrency`]: Concurrent Acts, replicas, retry storms.
//! - [`reveal`]: A reveal mid-battle.
//! - [`tampered_export`]: The audit catches a tampered export.
//! - [`bad_input`]: Invariant 1 and bad input.
//! - [`seed_secrecy`]: Invariant 3: a seed is in nothing anyone can read until it is revealed.
//! - [`replay`]: Replay to a version, and the audit of a battle on the server.
//! - [`sigterm`]: SIGTERM of the roller or the resolver with Acts in flight.

mod bad_input;
mod concurrency;
mod crash_retry;
mod full_battle;
mod replay;
mod reveal;
mod rules_tables;
mod seed_secrecy;
mod sigterm;
mod tampered_export;
