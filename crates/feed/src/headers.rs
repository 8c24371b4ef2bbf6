//! Every header name of the feed: battlelog's own, and the NATS ones the
//! journal sets on what it publishes.

/// NATS: the message id JetStream deduplicates by within its window.
pub const MSG_ID: &str = "Nats-Msg-Id";
/// NATS 2.10: store only if the subject's last message is at this stream sequence.
pub const EXPECTED_LAST_SUBJECT_SEQUENCE: &str = "Nats-Expected-Last-Subject-Sequence";
/// NATS 2.11: the subject filter [`EXPECTED_LAST_SUBJECT_SEQUENCE`] is checked on.
pub const EXPECTED_LAST_SUBJECT_SEQUENCE_SUBJECT: &str = "Nats-Expected-Last-Subject-Sequence-Subject";

/// The stream (battle) id; on both kinds of message.
pub const STREAM: &str = "Battlelog-Stream";
/// An event's version in its stream.
pub const VERSION: &str = "Battlelog-Version";
/// An event's position in the journal's global log.
pub const POSITION: &str = "Battlelog-Global-Position";
/// An event's type.
pub const EVENT_TYPE: &str = "Battlelog-Event-Type";
/// Lowercase hex of an event's h(version).
pub const HASH: &str = "Battlelog-Hash";

/// The version of an append message's first record; its presence is what
/// tells an append message from an event message.
pub const FIRST_VERSION: &str = "Battlelog-First-Version";
/// How many records an append message holds.
pub const COUNT: &str = "Battlelog-Count";
/// Lowercase hex of h(last version) of an append message.
pub const LAST_HASH: &str = "Battlelog-Last-Hash";
/// Lowercase hex of the battle state after an append message's last record
/// (the journal's `guard::BattleState::encode`; opaque here).
pub const STATE: &str = "Battlelog-State";
