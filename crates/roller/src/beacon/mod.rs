//! Protocol v2's beacon as the stack meets it over HTTP (docs/protocol.md
//! §6.1), in drand's HTTP API: `/{chain hash}/info`,
//! `/{chain hash}/public/{round}` and `/{chain hash}/public/latest`.
//!
//! - [`client`]: [`BeaconClient`], what the roller asks for a round with:
//!   configured relays, the chain info pinned (never taken from a relay),
//!   every signature verified before use, a round not yet out waited for,
//!   relays tried in turn.
//! - [`dev`]: [`DevBeacon`], the development beacon `battlelog beacon` and
//!   `battlelog up` serve: the same API and scheme from a key of its own,
//!   for machines without the internet and for tests.
//!
//! The scheme itself (verification, randomness, the round rule, signing)
//! is the pure crate `battlelog-beacon`'s.

pub mod client;
pub mod dev;

pub use client::{BeaconClient, BeaconFailure, VerifiedRound};
pub use dev::DevBeacon;
