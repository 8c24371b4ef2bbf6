//! What an audit finding says: one typed problem per thing that can be
//! wrong, each belonging to one [`Check`].

use serde::Serialize;

use crate::fold::PartsError;

/// What a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    /// Versions missing, repeated or out of order; events in the wrong place.
    Sequence,
    /// The hash chain.
    Chain,
    /// The record bytes: undecodable, or the wrong stream or version inside.
    Record,
    /// The event: undecodable, or shown differently from the record.
    Event,
    /// A revealed seed against its commitment; epochs.
    Commitment,
    /// A commitment's signature: missing, not verifying, by a roller key
    /// that changes within the battle, or not by the trusted roller key.
    Signature,
    /// Nonces: 0, 1, 2 … with no gap and no reuse.
    Nonce,
    /// A roll against its re-derivation from the revealed seed.
    Roll,
    /// An action re-resolved from its rolls against the recorded outcome.
    Resolution,
    /// The export's last hash against the head hash given to audit it
    /// against.
    Head,
    /// A ruling whose recorded credential is not a judge's, or names
    /// another judge than the ruling does, or that says it answers what is
    /// no dispute of the battle.
    Ruling,
    /// The export's trailer (docs/protocol.md §5): missing when one is required,
    /// malformed, its checkpoint signature, its log key against the trusted
    /// one, its head against the last event, its head signature, its
    /// inclusion proof.
    Trailer,
    /// A checkpoint kept earlier against the export's: the consistency
    /// proof between them (docs/protocol.md §5, holding the operator to its past).
    Consistency,
}

impl Check {
    /// The snake_case name a report shows (`"roll"`, `"signature"` …).
    pub fn as_str(self) -> &'static str {
        match self {
            Check::Sequence => "sequence",
            Check::Chain => "chain",
            Check::Record => "record",
            Check::Event => "event",
            Check::Commitment => "commitment",
            Check::Signature => "signature",
            Check::Nonce => "nonce",
            Check::Roll => "roll",
            Check::Resolution => "resolution",
            Check::Ruling => "ruling",
            Check::Head => "head",
            Check::Trailer => "trailer",
            Check::Consistency => "consistency",
        }
    }
}

/// One thing found wrong at a version. The message names what and, where
/// there is one, the value against the one expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    // Sequence.
    #[error("version {expected} expected here, found version {found}: missing or out of order")]
    VersionMissing { expected: u64, found: u64 },
    #[error("version {version} comes again or out of order after version {after}")]
    VersionRepeated { version: u64, after: u64 },
    #[error("BattleOpened must be version 0, once")]
    OpenedAgain,
    #[error("a battle starts with BattleOpened")]
    NotOpened,
    #[error("an event after BattleClosed other than its reveal, a dispute or a ruling")]
    AfterClose,

    // Chain.
    #[error("the hash does not follow from the previous hash and this record")]
    ChainBroken,

    // Record.
    #[error("line names stream {named:?}, not {expected:?}")]
    LineStream { named: String, expected: String },
    #[error("the record bytes do not decode: {0}")]
    RecordUndecodable(prost::DecodeError),
    #[error("the record belongs to stream {0:?}")]
    RecordStream(String),
    #[error("the record says version {0}")]
    RecordVersion(u64),

    // Event.
    #[error(transparent)]
    EventUndecodable(#[from] battlelog_proto::battle::EventError),
    #[error("the event shown differs from the one in the record")]
    EventShownDiffers,

    // Commitment.
    #[error("epoch {epoch} follows epoch {previous}")]
    EpochOutOfOrder { epoch: u32, previous: u32 },
    #[error("epoch {epoch} begins before epoch {previous} is revealed")]
    EpochBeforeReveal { epoch: u32, previous: u32 },
    #[error("epoch {epoch}: {source}")]
    SeedMalformed { epoch: u32, source: dice::SeedError },
    #[error("epoch {epoch} was never committed")]
    NeverCommitted { epoch: u32 },
    #[error("the seed revealed for epoch {epoch} does not match its commitment {commitment}")]
    SeedMismatch { epoch: u32, commitment: String },
    #[error("the battle is closed but the seed of epoch {epoch} was never revealed")]
    ClosedUnrevealed { epoch: u32 },

    // Signature.
    #[error("the commitment of epoch {epoch} has no signature")]
    SignatureMissing { epoch: u32 },
    #[error("the commitment of epoch {epoch} has no roller key")]
    RollerKeyMissing { epoch: u32 },
    #[error("epoch {epoch}: {source}")]
    RollerKeyMalformed { epoch: u32, source: dice::SignatureError },
    #[error("epoch {epoch} is signed by roller key {key}, the battle's earlier commitments by {first}")]
    RollerKeyChanged { epoch: u32, key: String, first: String },
    #[error("epoch {epoch} is signed by roller key {key}, not by the trusted roller key {trusted}")]
    RollerKeyUntrusted { epoch: u32, key: String, trusted: String },
    #[error("epoch {epoch} is signed by roller key {key}, none of the trusted roller keys ({})", .trusted.join(", "))]
    RollerKeyNotAmongTrusted { epoch: u32, key: String, trusted: Vec<String> },
    #[error("epoch {epoch}: commitment {commitment} with roller key {key}: {source}")]
    SignatureInvalid { epoch: u32, commitment: String, key: String, source: dice::SignatureError },

    // Nonce.
    #[error("nonce {nonce} where {next} was next")]
    NonceOutOfOrder { nonce: u64, next: u64 },
    #[error("nonce {nonce} is used twice")]
    NonceReused { nonce: u64 },

    // Roll.
    #[error("rolled in epoch {epoch} while epoch {current} was the current, unrevealed one")]
    RollOutsideEpoch { epoch: u32, current: u32 },
    #[error("roll {nonce} ({expression}) was used by no action")]
    RollUnused { nonce: u64, expression: String },
    /// Roll-forward (docs/protocol.md §4): an event came between an
    /// action's rolls and its resolution. Only the operator's services write
    /// there, so this is the operator's finding, whoever went away.
    #[error(
        "roll {nonce} was drawn for an action that was not resolved before this event: a journaled roll was left without its resolution"
    )]
    RollLeftPending { nonce: u64 },
    #[error("the action resolved is not the action roll {nonce} was drawn for")]
    ActionNotTheRolled { nonce: u64 },
    #[error("the action was drawn rolls {drawn:?} but its resolution uses rolls {used:?}")]
    RollsNotTheDrawn { drawn: Vec<u64>, used: Vec<u64> },
    #[error("nonce {nonce}: the expression {expression:?}: {source}")]
    RollExpression { nonce: u64, expression: String, source: dice::ExprError },
    #[error(
        "nonce {nonce} ({expression}): recorded [{recorded}] = {recorded_total}, the revealed seed gives [{derived}] = {derived_total}"
    )]
    RollDiffers {
        nonce: u64,
        expression: String,
        /// The faces, comma-separated, in draw order.
        recorded: String,
        recorded_total: i64,
        derived: String,
        derived_total: i64,
    },

    // Resolution.
    #[error(transparent)]
    Parts(#[from] PartsError),
    #[error(transparent)]
    Ruleset(#[from] rules::RulesetError),
    #[error(transparent)]
    Opening(#[from] rules::OpenError),
    #[error("roll {nonce}: {source}")]
    UsedRollExpression { nonce: u64, source: dice::ExprError },
    #[error("roll {nonce} was already used by another action")]
    RollUsedTwice { nonce: u64 },
    #[error("roll {nonce} is not journaled before this action")]
    RollNotJournaled { nonce: u64 },
    #[error("the action needs {needed:?} but used rolls of {used:?}")]
    DiceMismatch { needed: Vec<String>, used: Vec<String> },
    #[error("the rules forbid this action here: {0}")]
    Forbidden(rules::Rejection),
    #[error("recorded outcome {recorded} but the rules give {derived}")]
    OutcomeDiffers {
        /// Both as JSON.
        recorded: String,
        derived: String,
    },
    #[error("the summary differs from the rules' summary")]
    SummaryDiffers,
    #[error(transparent)]
    Resolve(#[from] rules::ResolveError),
    #[error("cannot replay: {0}")]
    CannotReplay(rules::ResolveError),

    // Head.
    #[error(
        "the export ends at head hash {found}, not at the expected head {expected}: events are missing at the end, or it is another export"
    )]
    HeadDiffers { found: String, expected: String },

    // Ruling.
    #[error("the ruling names judge {judge:?} but was recorded for {role} {subject:?}")]
    RulingCredential { judge: String, role: String, subject: String },
    /// The resolver refuses a ruling whose `answers_dispute` is no dispute
    /// of the battle; one in an export was written past it. The browser's
    /// verifier words it the same (web/verifier/audit/rulings.js).
    #[error("the ruling says it answers version {answers}, which is no dispute raised before it in this battle")]
    RulingAnswersNoDispute { answers: u64 },

    // Trailer. The report shows each after its check's name, `trailer`.
    #[error("{}", crate::audit::proofs::NO_TRAILER)]
    TrailerMissing,
    #[error("malformed {field}: {message}")]
    TrailerMalformed { field: &'static str, message: String },
    #[error("checkpoint signature: {0}")]
    TrailerCheckpointSignature(String),
    #[error("log key not trusted: the trailer names {found}, the trusted log key is {trusted}")]
    TrailerLogKeyNotTrusted { found: String, trusted: String },
    #[error("head not the last event: {0}: events are missing at the end, or the trailer is another export's")]
    TrailerHeadNotLastEvent(String),
    #[error("head signature: it does not verify with the trailer's log key")]
    TrailerHeadSignature,
    #[error("inclusion proof of the head record (leaf {leaf_index}) against the checkpoint: {message}")]
    TrailerInclusionProof { leaf_index: u64, message: String },

    // Consistency.
    #[error(
        "the log was rewritten since the kept checkpoint (tree size {kept_size}): no consistency with the export's checkpoint (tree size {size}): {message}"
    )]
    LogRewritten { kept_size: u64, size: u64, message: String },
    #[error("the kept checkpoint cannot be checked: {0}")]
    KeptCheckpointUnchecked(String),
    #[error(
        "the log no longer holds the kept checkpoint (tree size {kept_size}): {message}: records it covered are lost, or this is another log"
    )]
    LogShort { kept_size: u64, message: String },
}

impl Problem {
    /// The check the problem belongs to.
    pub fn check(&self) -> Check {
        use Problem::*;
        match self {
            VersionMissing { .. } | VersionRepeated { .. } | OpenedAgain | NotOpened | AfterClose => Check::Sequence,
            ChainBroken => Check::Chain,
            LineStream { .. } | RecordUndecodable(_) | RecordStream(_) | RecordVersion(_) => Check::Record,
            EventUndecodable(_) | EventShownDiffers => Check::Event,
            EpochOutOfOrder { .. }
            | EpochBeforeReveal { .. }
            | SeedMalformed { .. }
            | NeverCommitted { .. }
            | SeedMismatch { .. }
            | ClosedUnrevealed { .. } => Check::Commitment,
            SignatureMissing { .. }
            | RollerKeyMissing { .. }
            | RollerKeyMalformed { .. }
            | RollerKeyChanged { .. }
            | RollerKeyUntrusted { .. }
            | RollerKeyNotAmongTrusted { .. }
            | SignatureInvalid { .. } => Check::Signature,
            NonceOutOfOrder { .. } | NonceReused { .. } => Check::Nonce,
            RollOutsideEpoch { .. }
            | RollUnused { .. }
            | RollLeftPending { .. }
            | RollExpression { .. }
            | RollDiffers { .. } => Check::Roll,
            Parts(_)
            | Ruleset(_)
            | Opening(_)
            | UsedRollExpression { .. }
            | RollUsedTwice { .. }
            | RollNotJournaled { .. }
            | ActionNotTheRolled { .. }
            | RollsNotTheDrawn { .. }
            | DiceMismatch { .. }
            | Forbidden(_)
            | OutcomeDiffers { .. }
            | SummaryDiffers
            | Resolve(_)
            | CannotReplay(_) => Check::Resolution,
            RulingCredential { .. } | RulingAnswersNoDispute { .. } => Check::Ruling,
            HeadDiffers { .. } => Check::Head,
            TrailerMissing
            | TrailerMalformed { .. }
            | TrailerCheckpointSignature(_)
            | TrailerLogKeyNotTrusted { .. }
            | TrailerHeadNotLastEvent(_)
            | TrailerHeadSignature
            | TrailerInclusionProof { .. } => Check::Trailer,
            LogRewritten { .. } | KeptCheckpointUnchecked(_) | LogShort { .. } => Check::Consistency,
        }
    }
}
