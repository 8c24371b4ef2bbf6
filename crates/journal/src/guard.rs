//! The battle guard: the journal refuses any append after which its stream
//! would no longer fold as a battle (docs/operating.md, *Security*: "a
//! bad append bricking a battle").
//!
//! Every stream of this journal is a battle stream: each record's payload is
//! a `battlelog.v1.BattleEvent` (`proto/battlelog/v1/battle.proto`) and its
//! `event_type` names the event. There is no untyped stream kind; a caller
//! that wants one needs a journal of its own.
//!
//! Checking happens in two steps, both before anything is written:
//! - [`inspect`], on the caller's task: the payload decodes to exactly one
//!   event, the type names it, hex fields and the tenant are well formed. It
//!   keeps only what the second step needs ([`Checked`]), so the committer
//!   thread never decodes a payload.
//! - [`apply`], inside the group commit: the event against the stream's
//!   [`BattleState`] (next nonce, epoch, its commitment, revealed, closed),
//!   which lives beside the stream head and is rewritten with it, so it costs
//!   no extra read and survives restarts. Later events of the same request,
//!   and later appends of the same group, see the state the earlier ones left.
//!
//! The rules themselves are the stream fold of `battlelog_verify::stream_state`,
//! which the roller, the resolver and the audit fold battles with too; this
//! module adds what is the journal's own: the tenant as a subject token, the
//! payload's one canonical event, the battle's budget, the stored state's
//! bytes, and the reasons and fields of its refusals.

use battlelog_proto::battle;
use battlelog_proto::error::Reason;
use battlelog_proto::v1::BattleEvent;
use battlelog_proto::v1::battle_event::Event;
use battlelog_verify::stream_state::{StreamState, Violation as StreamViolation};
use prost::Message;

use crate::record::Hash;

/// Tenants as NATS subject tokens are the feed's format.
pub use battlelog_feed::subject::{MAX_TENANT_BYTES, TENANT_PLACEHOLDER, subject_token};

/// The rule an event broke. [`Rule::reason`] is the `ErrorInfo.reason` the
/// gRPC status carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// The payload is not exactly one `BattleEvent` (or holds fields this
    /// journal does not know).
    EventUndecodable,
    /// The record's `event_type` does not name the payload's event.
    EventTypeMismatch,
    /// A field that must be well formed is not (hex digests, the tenant).
    EventMalformed,
    /// Version 0 of a battle must be its `BattleOpened`.
    BattleNotOpened,
    /// `BattleOpened` only at version 0.
    BattleAlreadyOpened,
    /// A `DiceRolled` nonce other than the battle's next one.
    NonceOutOfOrder,
    /// An event for an epoch other than the one it must be for.
    EpochMismatch,
    /// A roll in, or a second reveal of, an epoch already revealed.
    EpochRevealed,
    /// A new epoch committed before the current one was revealed.
    EpochNotRevealed,
    /// A revealed seed whose SHA-256 is not the epoch's commitment.
    SeedMismatch,
    /// An action is rolled but not yet resolved: only its own rolls and its
    /// `ActionResolved` may follow (roll-forward).
    ActionPending,
    /// After `BattleClosed`, anything but the `SeedRevealed` of its last
    /// epoch and the appeal's `DisputeRaised` and `JudgeRuling`.
    BattleClosed,
    /// What the stream already holds (written before this guard existed) does
    /// not fold as a battle, so nothing can safely follow it.
    StreamNotABattle,
    /// The event would take the battle past its [`Budget`], or into the
    /// room kept for its close.
    BattleBudgetExceeded,
}

impl Rule {
    /// The `google.rpc.ErrorInfo` reason (battlelog_proto::error). A
    /// closed battle is the battle's own reason, the one the resolver and
    /// roller answer with too.
    pub fn reason(self) -> Reason {
        use battlelog_proto::error::{BattleReason, JournalReason as J};
        match self {
            Rule::EventUndecodable => J::EventUndecodable.into(),
            Rule::EventTypeMismatch => J::EventTypeMismatch.into(),
            Rule::EventMalformed => J::EventMalformed.into(),
            Rule::BattleNotOpened => J::BattleNotOpened.into(),
            Rule::BattleAlreadyOpened => J::BattleAlreadyOpened.into(),
            Rule::NonceOutOfOrder => J::NonceOutOfOrder.into(),
            Rule::EpochMismatch => J::EpochMismatch.into(),
            Rule::EpochRevealed => J::EpochRevealed.into(),
            Rule::EpochNotRevealed => J::EpochNotRevealed.into(),
            Rule::SeedMismatch => J::SeedMismatch.into(),
            Rule::ActionPending => J::ActionPending.into(),
            Rule::BattleClosed => BattleReason::BattleClosed.into(),
            Rule::StreamNotABattle => J::StreamNotABattle.into(),
            Rule::BattleBudgetExceeded => J::BattleBudgetExceeded.into(),
        }
    }

    /// Whether the event is bad whatever the stream holds (INVALID_ARGUMENT)
    /// rather than out of place in this stream now (FAILED_PRECONDITION).
    pub fn is_malformed_input(self) -> bool {
        matches!(self, Rule::EventUndecodable | Rule::EventTypeMismatch | Rule::EventMalformed)
    }
}

/// One refused event: the field at fault, the rule and the detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The request field, e.g. `events[1].payload.dice_rolled.nonce`.
    pub field: String,
    /// The rule broken.
    pub rule: Rule,
    /// What was found against what the rule wants.
    pub message: String,
}

fn violation(field: String, rule: Rule, message: impl Into<String>) -> Violation {
    Violation { field, rule, message: message.into() }
}

/// What [`apply`] needs of one event, taken from its payload by [`inspect`]:
/// the stream fold's own view of an event (`battlelog_verify::stream_state`).
pub use battlelog_verify::stream_state::StreamEvent as Checked;

/// Checks one event on its own: `events[index]` of a request.
pub fn inspect(index: usize, event_type: &str, payload: &[u8]) -> Result<Checked, Violation> {
    let field = |name: &str| format!("events[{index}].{name}");
    let decoded = BattleEvent::decode(payload).map_err(|e| {
        violation(field("payload"), Rule::EventUndecodable, format!("not a battlelog.v1.BattleEvent: {e}"))
    })?;
    // A payload naming two events decodes to the last one, and unknown fields
    // decode to nothing: both are longer than the event's own encoding. Such
    // bytes would be stored and hashed as they are, and read differently by
    // a decoder that keeps the first event or knows the field.
    let canonical = decoded.encoded_len();
    let Some(event) = decoded.event else {
        return Err(violation(field("payload"), Rule::EventUndecodable, "the BattleEvent holds no event"));
    };
    if canonical != payload.len() {
        return Err(violation(
            field("payload"),
            Rule::EventUndecodable,
            format!(
                "{} bytes where the {} they hold encodes to {canonical}: more than one event, or fields battlelog.v1 does not define",
                payload.len(),
                battle::type_name(&event)
            ),
        ));
    }
    let actual = battle::type_name(&event);
    if actual != event_type {
        return Err(violation(
            field("event_type"),
            Rule::EventTypeMismatch,
            format!("{event_type:?} but the payload holds a {actual}"),
        ));
    }
    if let Event::BattleOpened(opened) = &event {
        check_tenant(&field("payload.battle_opened.tenant"), &opened.tenant)?;
    }
    Checked::of(&event).map_err(|malformed| {
        let message = malformed.to_string();
        violation(field(&format!("payload.{}", malformed.field)), Rule::EventMalformed, message)
    })
}

/// A tenant becomes one NATS subject token (`battlelog.events.<tenant>.<battle>`),
/// so it must not hold what NATS reads as a separator or wildcard (the
/// rule is the feed's, `battlelog_feed::subject::tenant_problem`).
fn check_tenant(field: &str, tenant: &str) -> Result<(), Violation> {
    match battlelog_feed::subject::tenant_problem(tenant) {
        Some(message) => Err(violation(field.to_owned(), Rule::EventMalformed, message)),
        None => Ok(()),
    }
}

/// What the guard keeps per stream, beside its head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BattleState {
    /// The nonce the next `DiceRolled` must carry.
    pub next_nonce: u64,
    /// The current epoch.
    pub epoch: u32,
    /// SHA-256 of the current epoch's seed, as committed.
    pub commitment: Hash,
    /// Whether the current epoch's seed is revealed.
    pub revealed: bool,
    /// Whether the battle is closed.
    pub closed: bool,
    /// Whether an action is rolled and not yet resolved.
    pub pending: bool,
    /// Record bytes the battle holds, for its [`Budget`] (0 for a battle
    /// stored before the journal counted them).
    pub bytes: u64,
}

/// Bytes of an encoded [`BattleState`].
pub const STATE_BYTES: usize = STATE_BYTES_UNCOUNTED + 8;
/// Bytes of a [`BattleState`] stored before the journal counted a battle's
/// bytes (read as holding none).
pub const STATE_BYTES_UNCOUNTED: usize = 8 + 4 + 32 + 1;

const REVEALED: u8 = 1;
const CLOSED: u8 = 2;
/// Never set in a state stored before roll-forward: no action was pending.
const PENDING: u8 = 4;

impl BattleState {
    /// The stream fold's state this holds: a stored state is an opened
    /// battle's.
    pub fn stream(self) -> StreamState {
        StreamState {
            opened: true,
            epoch: self.epoch,
            commitment: self.commitment,
            revealed: self.revealed,
            next_nonce: self.next_nonce,
            closed: self.closed,
            pending: self.pending,
        }
    }

    /// `u64_be(next_nonce) || u32_be(epoch) || commitment (32) || flags ||
    /// u64_be(bytes)` (flags: bit 0 revealed, bit 1 closed, bit 2 an action
    /// pending).
    pub fn encode(&self) -> [u8; STATE_BYTES] {
        let mut out = [0u8; STATE_BYTES];
        out[..8].copy_from_slice(&self.next_nonce.to_be_bytes());
        out[8..12].copy_from_slice(&self.epoch.to_be_bytes());
        out[12..44].copy_from_slice(&self.commitment);
        out[44] = if self.revealed { REVEALED } else { 0 }
            | if self.closed { CLOSED } else { 0 }
            | if self.pending { PENDING } else { 0 };
        out[45..53].copy_from_slice(&self.bytes.to_be_bytes());
        out
    }

    /// The inverse of [`Self::encode`]; also reads the shorter form stored
    /// before bytes were counted.
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        if !matches!(bytes.len(), STATE_BYTES | STATE_BYTES_UNCOUNTED)
            || bytes[44] & !(REVEALED | CLOSED | PENDING) != 0
        {
            return None;
        }
        let counted = match bytes.get(45..53) {
            Some(counted) => u64::from_be_bytes(counted.try_into().ok()?),
            None => 0,
        };
        Some(Self {
            next_nonce: u64::from_be_bytes(bytes[..8].try_into().ok()?),
            epoch: u32::from_be_bytes(bytes[8..12].try_into().ok()?),
            commitment: bytes[12..44].try_into().ok()?,
            revealed: bytes[44] & REVEALED != 0,
            closed: bytes[44] & CLOSED != 0,
            pending: bytes[44] & PENDING != 0,
            bytes: counted,
        })
    }
}

/// The room one battle may fill (the journal's `max_battle_events` and
/// `max_battle_bytes`). Its close always fits: every other event must leave
/// [`CLOSING_RESERVE_EVENTS`] and [`CLOSING_RESERVE_BYTES`] free for the
/// `BattleClosed` and the `SeedRevealed` that follows it, so a battle filled
/// to its budget still closes and reveals its seed. And a roll always gets
/// its resolution: a `DiceRolled` must also leave room for one more event
/// of `resolution_bytes`, so no budget leaves a roll that no action uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Most events, the close included.
    pub max_events: u64,
    /// Most record bytes, the close included.
    pub max_bytes: u64,
    /// The largest record one event can make (the payload limit and the
    /// record's own fields): what a roll keeps free for its resolution.
    pub resolution_bytes: u64,
}

/// Events kept free for a close: the `BattleClosed` and its `SeedRevealed`.
pub const CLOSING_RESERVE_EVENTS: u64 = 2;
/// Record bytes kept free for a close. The resolver bounds a close's `by`
/// and `reason` to 2 000 bytes each; with the credential, the record's own
/// fields and the `SeedRevealed`, a close takes under 6 KiB.
pub const CLOSING_RESERVE_BYTES: u64 = 16 * 1024;

impl Budget {
    /// Checks that a battle can hold at least its opening append, a roll
    /// with its resolution, and its close.
    pub fn validate(&self, max_append_bytes: usize) -> Result<(), String> {
        let least_events = CLOSING_RESERVE_EVENTS + 3;
        if self.max_events < least_events {
            return Err(format!(
                "max_battle_events must be at least {least_events} (an opening, a roll, its resolution and the close)"
            ));
        }
        let least = CLOSING_RESERVE_BYTES + max_append_bytes as u64 + self.resolution_bytes;
        if self.max_bytes < least {
            return Err(format!(
                "max_battle_bytes must be at least {least} (max_append_bytes, room for a resolution and the {CLOSING_RESERVE_BYTES} bytes kept for the close)"
            ));
        }
        Ok(())
    }
}

/// Charges `events[index]` (stream version `version`, `record_bytes` as
/// stored) to `state`, the battle's state once the event is applied;
/// `closed_before` says whether the battle was closed before it (then its
/// `SeedRevealed` is the close's). The close's events may use the reserve;
/// every other event must leave it free.
pub fn charge(
    state: &mut BattleState,
    closed_before: bool,
    index: usize,
    event: &Checked,
    version: u64,
    record_bytes: usize,
    budget: &Budget,
) -> Result<(), Violation> {
    let closing = matches!(event, Checked::Closed) || (closed_before && matches!(event, Checked::Revealed { .. }));
    let (reserve_events, reserve_bytes) = match event {
        _ if closing => (0, 0),
        Checked::Rolled { .. } => (CLOSING_RESERVE_EVENTS + 1, CLOSING_RESERVE_BYTES + budget.resolution_bytes),
        _ => (CLOSING_RESERVE_EVENTS, CLOSING_RESERVE_BYTES),
    };
    let events = version.saturating_add(1);
    let bytes = state.bytes.saturating_add(record_bytes as u64);
    let over = |what: &str, have: u64, limit: u64, reserve: u64| {
        violation(
            format!("events[{index}]"),
            Rule::BattleBudgetExceeded,
            if reserve > 0 {
                format!(
                    "the battle would hold {have} {what}: max_battle_{what} is {limit}, of which the last {reserve} are kept for what must follow (a roll's resolution, the close); close the battle"
                )
            } else {
                format!("the battle would hold {have} {what}: max_battle_{what} is {limit}")
            },
        )
    };
    if events.saturating_add(reserve_events) > budget.max_events {
        return Err(over("events", events, budget.max_events, reserve_events));
    }
    if bytes.saturating_add(reserve_bytes) > budget.max_bytes {
        return Err(over("bytes", bytes, budget.max_bytes, reserve_bytes));
    }
    state.bytes = bytes;
    Ok(())
}

/// Applies `events[index]` (already [`inspect`]ed) to the stream's state;
/// `None` is a stream without events. Returns the state after it, or the
/// rule it breaks. The rules are the stream fold's
/// (`battlelog_verify::stream_state`), shared with the roller, the resolver
/// and the audit; the guard keeps only the budget and the stored form.
pub fn apply(state: Option<BattleState>, index: usize, event: &Checked) -> Result<BattleState, Violation> {
    let mut stream = state.map(BattleState::stream).unwrap_or_default();
    stream.apply(event).map_err(|broken| refusal(index, &broken))?;
    Ok(BattleState {
        next_nonce: stream.next_nonce,
        epoch: stream.epoch,
        commitment: stream.commitment,
        revealed: stream.revealed,
        closed: stream.closed,
        pending: stream.pending,
        bytes: state.map_or(0, |state| state.bytes),
    })
}

/// The journal's refusal of `events[index]` for a rule of the stream fold:
/// its reason, and its field in the request.
fn refusal(index: usize, broken: &StreamViolation) -> Violation {
    let rule = match broken {
        StreamViolation::NotOpened => Rule::BattleNotOpened,
        StreamViolation::AlreadyOpened => Rule::BattleAlreadyOpened,
        StreamViolation::Closed => Rule::BattleClosed,
        StreamViolation::EpochMismatch { .. } => Rule::EpochMismatch,
        StreamViolation::EpochRevealed { .. } => Rule::EpochRevealed,
        StreamViolation::EpochNotRevealed { .. } => Rule::EpochNotRevealed,
        StreamViolation::NonceOutOfOrder { .. } => Rule::NonceOutOfOrder,
        StreamViolation::SeedMismatch { .. } => Rule::SeedMismatch,
        StreamViolation::ActionPending => Rule::ActionPending,
    };
    let field = match broken.field() {
        Some(field) => format!("events[{index}].payload.{field}"),
        None => format!("events[{index}].event_type"),
    };
    violation(field, rule, broken.to_string())
}

#[cfg(test)]
mod tests {
    use battlelog_proto::v1::{
        ActionResolved, BattleClosed, BattleOpened, DiceRolled, DisputeRaised, JudgeRuling, SeedCommitted, SeedRevealed,
    };

    use sha2::{Digest, Sha256};

    use super::*;

    // Seeds and commitments written out as docs/protocol.md §1 defines them:
    // commitment = lowercase_hex(SHA-256(seed)), computed here independently.
    fn seed(epoch: u32) -> String {
        hex::encode([epoch as u8 + 1; 32])
    }

    fn commitment(epoch: u32) -> String {
        hex::encode(Sha256::digest([epoch as u8 + 1; 32]))
    }

    fn encoded(event: Event) -> (String, Vec<u8>) {
        let new = battle::new_event(event, String::new());
        (new.event_type, new.payload)
    }

    fn opened(tenant: &str) -> Event {
        Event::BattleOpened(BattleOpened { commitment: commitment(0), tenant: tenant.into(), ..Default::default() })
    }

    fn rolled(epoch: u32, nonce: u64) -> Event {
        Event::DiceRolled(DiceRolled { epoch, nonce, expression: "1d6".into(), ..Default::default() })
    }

    fn revealed(epoch: u32, seed: String) -> Event {
        Event::SeedRevealed(SeedRevealed { epoch, server_seed: seed, credential: None })
    }

    fn committed(epoch: u32) -> Event {
        Event::SeedCommitted(SeedCommitted { epoch, commitment: commitment(epoch), ..Default::default() })
    }

    fn closed() -> Event {
        Event::BattleClosed(BattleClosed { by: "judge".into(), reason: "over".into(), credential: None })
    }

    fn resolved() -> Event {
        Event::ActionResolved(ActionResolved { rolls: vec![0], summary_en: "hit".into(), ..Default::default() })
    }

    /// Folds `events` from an empty stream; the first refusal with its index.
    fn fold(events: Vec<Event>) -> Result<BattleState, (usize, Violation)> {
        let mut state = None;
        for (i, event) in events.into_iter().enumerate() {
            let (event_type, payload) = encoded(event);
            let checked = inspect(i, &event_type, &payload).map_err(|v| (i, v))?;
            state = Some(apply(state, i, &checked).map_err(|v| (i, v))?);
        }
        Ok(state.expect("at least one event"))
    }

    fn refused(events: Vec<Event>) -> (usize, Rule, String) {
        let (i, v) = fold(events).expect_err("refused");
        (i, v.rule, v.field)
    }

    #[test]
    fn a_whole_battle_with_a_mid_battle_reveal_folds() {
        let state = fold(vec![
            opened("forum-a"),
            rolled(0, 0),
            rolled(0, 1),
            resolved(),
            revealed(0, seed(0)),
            committed(1),
            rolled(1, 2),
            Event::JudgeRuling(JudgeRuling { judge: "j".into(), refers_to: 3, ..Default::default() }),
            closed(),
            revealed(1, seed(1)),
        ])
        .expect("a valid battle");
        let expected_commitment: Hash = Sha256::digest([2u8; 32]).into();
        assert_eq!(
            state,
            BattleState {
                next_nonce: 3,
                epoch: 1,
                commitment: expected_commitment,
                revealed: true,
                closed: true,
                pending: false,
                bytes: 0
            }
        );
        assert_eq!(BattleState::decode(&state.encode()), Some(state), "the stored form round-trips");
    }

    /// The first known-answer vector of `vectors/rolls.json` (docs/protocol.md §1).
    #[test]
    fn a_protocol_vector_seed_reveals_against_its_commitment() {
        let opened = Event::BattleOpened(BattleOpened {
            commitment: "315fc33dbdb63592565e8ed77eff5d3cf512638ea9b26631b7277cc73a3fc395".into(),
            ..Default::default()
        });
        let seed = "efa1f375d76194fa51a3556a97e641e61685f914d446979da50a551a4333ffd7".to_owned();
        assert!(fold(vec![opened.clone(), revealed(0, seed)]).is_ok());
        assert_eq!(refused(vec![opened, revealed(0, seed_of_other_battle())]).1, Rule::SeedMismatch);
    }

    fn seed_of_other_battle() -> String {
        seed(3)
    }

    /// The refusals' messages are part of the journal's answer: they say
    /// what was found against what the rule wants, as they always have.
    #[test]
    fn refusals_say_what_was_found_against_what_the_rule_wants() {
        let message = |events| fold(events).unwrap_err().1.message;
        assert_eq!(
            message(vec![opened(""), rolled(0, 0), rolled(0, 5)]),
            "nonce 5 is not the battle's next nonce 1 (0, 1, 2 … with no gap or reuse)"
        );
        assert_eq!(message(vec![opened(""), rolled(2, 0)]), "epoch 2 is not the battle's current epoch 0");
        assert_eq!(
            message(vec![opened(""), revealed(0, seed(0)), rolled(0, 0)]),
            "the seed of epoch 0 is revealed: no roll may use it any more"
        );
        assert_eq!(
            message(vec![opened(""), revealed(0, seed(0)), revealed(0, seed(0))]),
            "the seed of epoch 0 is revealed already"
        );
        assert_eq!(
            message(vec![opened(""), revealed(0, seed(0)), committed(3)]),
            "epoch 3 is not the next epoch after the current 0"
        );
        assert_eq!(message(vec![opened(""), committed(1)]), "epoch 0 must be revealed before epoch 1 is committed");
        assert_eq!(
            message(vec![opened(""), revealed(0, seed(1))]),
            format!("SHA-256 of the seed is {}, but epoch 0 committed to {}", commitment(1), commitment(0))
        );
        assert_eq!(message(vec![rolled(0, 0)]), "version 0 of a battle must be its BattleOpened");
        assert_eq!(message(vec![opened(""), opened("")]), "the battle is open already: BattleOpened only at version 0");
        assert_eq!(
            message(vec![opened(""), closed(), resolved()]),
            "the battle is closed: only the SeedRevealed of its last epoch, disputes and rulings may follow"
        );
        let (_, payload) = encoded(revealed(0, "AB".into()));
        let err = inspect(4, "SeedRevealed", &payload).unwrap_err();
        assert_eq!(
            (err.rule, err.field.as_str(), err.message.as_str()),
            (
                Rule::EventMalformed,
                "events[4].payload.seed_revealed.server_seed",
                "\"AB\" is not 64 lowercase hex digits"
            )
        );
    }

    #[test]
    fn junk_and_lying_payloads_are_refused_before_any_state() {
        let err = inspect(2, "DiceRolled", b"\xff\xff junk").unwrap_err();
        assert_eq!((err.rule, err.field.as_str()), (Rule::EventUndecodable, "events[2].payload"));
        let err = inspect(0, "DiceRolled", b"").unwrap_err();
        assert_eq!(err.rule, Rule::EventUndecodable, "an empty BattleEvent holds no event");
        let (_, payload) = encoded(rolled(0, 0));
        let err = inspect(1, "SeedRevealed", &payload).unwrap_err();
        assert_eq!((err.rule, err.field.as_str()), (Rule::EventTypeMismatch, "events[1].event_type"));
        assert!(Rule::EventUndecodable.is_malformed_input() && !Rule::NonceOutOfOrder.is_malformed_input());
    }

    #[test]
    fn a_payload_holding_two_events_or_unknown_fields_is_refused() {
        let (_, mut two) = encoded(closed());
        let (_, roll) = encoded(rolled(0, 0));
        two.extend_from_slice(&roll);
        let err = inspect(0, "DiceRolled", &two).unwrap_err();
        assert_eq!(err.rule, Rule::EventUndecodable, "{err:?}");
        let (_, mut unknown) = encoded(closed());
        // Field 99, varint 1: not part of BattleEvent.
        unknown.extend_from_slice(&[0x98, 0x06, 0x01]);
        assert_eq!(inspect(0, "BattleClosed", &unknown).unwrap_err().rule, Rule::EventUndecodable);
    }

    #[test]
    fn battle_opened_only_and_always_at_version_0() {
        assert_eq!(refused(vec![rolled(0, 0)]), (0, Rule::BattleNotOpened, "events[0].event_type".into()));
        assert_eq!(
            refused(vec![opened(""), opened("")]),
            (1, Rule::BattleAlreadyOpened, "events[1].event_type".into())
        );
    }

    #[test]
    fn nonces_run_0_1_2_across_epochs() {
        let field = "events[2].payload.dice_rolled.nonce".to_owned();
        assert_eq!(refused(vec![opened(""), rolled(0, 0), rolled(0, 5)]), (2, Rule::NonceOutOfOrder, field.clone()));
        assert_eq!(refused(vec![opened(""), rolled(0, 0), rolled(0, 0)]), (2, Rule::NonceOutOfOrder, field));
        assert_eq!(refused(vec![opened(""), rolled(0, 1)]).1, Rule::NonceOutOfOrder, "the first nonce is 0");
        let after_new_epoch = vec![opened(""), rolled(0, 0), revealed(0, seed(0)), committed(1), rolled(1, 0)];
        assert_eq!(refused(after_new_epoch).1, Rule::NonceOutOfOrder, "a new epoch does not restart nonces");
        assert!(fold(vec![opened(""), rolled(0, 0), revealed(0, seed(0)), committed(1), rolled(1, 1)]).is_ok());
    }

    #[test]
    fn rolls_use_the_current_unrevealed_epoch() {
        assert_eq!(refused(vec![opened(""), rolled(1, 0)]).1, Rule::EpochMismatch);
        assert_eq!(refused(vec![opened(""), revealed(0, seed(0)), rolled(0, 0)]).1, Rule::EpochRevealed);
        assert_eq!(refused(vec![opened(""), revealed(0, seed(0)), rolled(1, 0)]).1, Rule::EpochMismatch);
    }

    #[test]
    fn a_reveal_must_match_the_commitment_of_the_current_epoch() {
        let (i, v) = fold(vec![opened(""), revealed(0, seed(7))]).unwrap_err();
        assert_eq!(
            (i, v.rule, v.field.as_str()),
            (1, Rule::SeedMismatch, "events[1].payload.seed_revealed.server_seed")
        );
        assert_eq!(refused(vec![opened(""), revealed(1, seed(1))]).1, Rule::EpochMismatch);
        assert_eq!(refused(vec![opened(""), revealed(0, seed(0)), revealed(0, seed(0))]).1, Rule::EpochRevealed);
        // Epoch 1's commitment comes from its SeedCommitted, not BattleOpened.
        let wrong_epoch_seed = vec![opened(""), revealed(0, seed(0)), committed(1), revealed(1, seed(0))];
        assert_eq!(refused(wrong_epoch_seed).1, Rule::SeedMismatch);
        let upper = seed(9).to_uppercase(); // "0A0A…": hex digits, but not lowercase
        assert_eq!(refused(vec![opened(""), revealed(0, upper)]).1, Rule::EventMalformed);
        assert_eq!(refused(vec![opened(""), revealed(0, "ab".into())]).1, Rule::EventMalformed);
    }

    #[test]
    fn a_new_epoch_is_committed_only_once_the_current_one_is_revealed() {
        assert_eq!(refused(vec![opened(""), committed(1)]).1, Rule::EpochNotRevealed);
        assert_eq!(refused(vec![opened(""), revealed(0, seed(0)), committed(2)]).1, Rule::EpochMismatch);
        assert_eq!(refused(vec![opened(""), revealed(0, seed(0)), committed(0)]).1, Rule::EpochMismatch);
        let twice = vec![opened(""), revealed(0, seed(0)), committed(1), committed(2)];
        assert_eq!(refused(twice).1, Rule::EpochNotRevealed);
        let bad = Event::SeedCommitted(SeedCommitted { epoch: 1, commitment: "xyz".into(), ..Default::default() });
        assert_eq!(refused(vec![opened(""), revealed(0, seed(0)), bad]).1, Rule::EventMalformed);
    }

    fn disputed() -> Event {
        Event::DisputeRaised(DisputeRaised { by: "forum".into(), refers_to: 1, ..Default::default() })
    }

    fn ruled() -> Event {
        Event::JudgeRuling(JudgeRuling { judge: "j".into(), refers_to: 2, ..Default::default() })
    }

    #[test]
    fn disputes_and_rulings_follow_a_close_but_nothing_else_does() {
        let appeal = vec![opened(""), resolved(), closed(), revealed(0, seed(0)), disputed(), ruled()];
        let state = fold(appeal).expect("an appeal after the close");
        assert!(state.closed && state.revealed, "{state:?}");
        assert!(fold(vec![opened(""), closed(), ruled(), revealed(0, seed(0)), disputed()]).is_ok());
        assert_eq!(
            refused(vec![opened(""), closed(), ruled(), rolled(0, 0)]),
            (3, Rule::BattleClosed, "events[3].event_type".into())
        );
        assert_eq!(refused(vec![opened(""), closed(), disputed(), resolved()]).1, Rule::BattleClosed);
        assert_eq!(refused(vec![opened(""), closed(), ruled(), closed()]).1, Rule::BattleClosed);
    }

    #[test]
    fn only_the_last_reveal_follows_a_close() {
        assert_eq!(refused(vec![opened(""), closed(), rolled(0, 0)]).1, Rule::BattleClosed);
        assert_eq!(refused(vec![opened(""), closed(), resolved()]).1, Rule::BattleClosed);
        assert_eq!(refused(vec![opened(""), closed(), closed()]).1, Rule::BattleClosed);
        let new_epoch_after_close = vec![opened(""), closed(), revealed(0, seed(0)), committed(1)];
        assert_eq!(refused(new_epoch_after_close).1, Rule::BattleClosed);
        assert!(fold(vec![opened(""), closed(), revealed(0, seed(0))]).is_ok());
    }

    /// Folds `events` as [`fold`] does, charging each to `budget` with its
    /// payload's length as its record's.
    fn fold_within(budget: Budget, events: Vec<Event>) -> Result<BattleState, (usize, Violation)> {
        let mut state: Option<BattleState> = None;
        for (i, event) in events.into_iter().enumerate() {
            let (event_type, payload) = encoded(event);
            let checked = inspect(i, &event_type, &payload).map_err(|v| (i, v))?;
            let closed_before = state.is_some_and(|s| s.closed);
            let mut next = apply(state, i, &checked).map_err(|v| (i, v))?;
            charge(&mut next, closed_before, i, &checked, i as u64, payload.len(), &budget).map_err(|v| (i, v))?;
            state = Some(next);
        }
        Ok(state.expect("at least one event"))
    }

    #[test]
    fn a_battle_takes_events_up_to_its_budget_and_its_close_always_fits() {
        let budget = Budget { max_events: 6, max_bytes: u64::MAX, resolution_bytes: 0 };
        // Versions 0–3 leave the two kept for the close: just under the edge.
        let full = vec![opened(""), rolled(0, 0), resolved(), resolved()];
        assert!(fold_within(budget, full.clone()).is_ok());
        // Version 4 would eat into the reserve: at the edge, refused.
        let (i, v) = fold_within(budget, [full.clone(), vec![resolved()]].concat()).unwrap_err();
        assert_eq!((i, v.rule, v.field.as_str()), (4, Rule::BattleBudgetExceeded, "events[4]"));
        assert!(v.message.contains("max_battle_events is 6") && v.message.contains("close"), "{}", v.message);
        assert_eq!(Rule::BattleBudgetExceeded.reason().as_str(), "BATTLE_BUDGET_EXCEEDED");
        // The close and its reveal use the reserve: the battle fills exactly.
        let closed_battle = [full.clone(), vec![closed(), revealed(0, seed(0))]].concat();
        let state = fold_within(budget, closed_battle.clone()).expect("the close fits");
        assert!(state.closed && state.revealed);
        // Past the budget nothing fits, not even an appeal.
        assert_eq!(fold_within(budget, [closed_battle, vec![disputed()]].concat()).unwrap_err().0, 6);
        // A mid-battle reveal is no close: it must leave the reserve free.
        let mid = [full, vec![revealed(0, seed(0))]].concat();
        assert_eq!(fold_within(budget, mid).unwrap_err().1.rule, Rule::BattleBudgetExceeded);
    }

    #[test]
    fn a_battle_takes_bytes_up_to_its_budget_and_counts_them_in_its_state() {
        let sizes: Vec<usize> = [opened(""), resolved(), closed()].into_iter().map(|e| encoded(e).1.len()).collect();
        let (open, act, close) = (sizes[0] as u64, sizes[1] as u64, sizes[2] as u64);
        let room = |acts: u64| open + acts * act + CLOSING_RESERVE_BYTES;
        let budget = Budget { max_events: u64::MAX, max_bytes: room(2), resolution_bytes: 0 };
        let state = fold_within(budget, vec![opened(""), resolved(), resolved()]).expect("exactly at the edge");
        assert_eq!(state.bytes, open + 2 * act, "the state counts what the battle holds");
        assert_eq!(BattleState::decode(&state.encode()), Some(state), "with its bytes");
        let (i, v) = fold_within(budget, vec![opened(""), resolved(), resolved(), resolved()]).unwrap_err();
        assert_eq!((i, v.rule), (3, Rule::BattleBudgetExceeded));
        assert!(v.message.contains(&format!("max_battle_bytes is {}", room(2))), "{}", v.message);
        let closing = vec![opened(""), resolved(), resolved(), closed(), revealed(0, seed(0))];
        let state = fold_within(budget, closing).expect("the close fits in the reserve");
        assert!(state.bytes > open + 2 * act + close && state.bytes <= budget.max_bytes);
        // One byte less and the second act no longer fits.
        let tight = Budget { max_bytes: room(2) - 1, ..budget };
        assert_eq!(fold_within(tight, vec![opened(""), resolved(), resolved()]).unwrap_err().0, 2);
    }

    #[test]
    fn a_roll_keeps_room_for_its_resolution() {
        let act = encoded(resolved()).1.len() as u64;
        let budget = Budget { max_events: 7, max_bytes: u64::MAX, resolution_bytes: act };
        // Version 3, a roll: 4 events, 1 kept for its resolution, 2 for the close.
        let rolled_last = vec![opened(""), rolled(0, 0), resolved(), rolled(0, 1)];
        assert!(fold_within(budget, rolled_last.clone()).is_ok());
        let resolved_then = [rolled_last.clone(), vec![resolved(), closed(), revealed(0, seed(0))]].concat();
        assert!(fold_within(budget, resolved_then).is_ok(), "its resolution and the close fit");
        // A roll at version 4 would leave its resolution no room: refused,
        // though an action that rolls nothing still fits there.
        let (i, v) = fold_within(budget, [rolled_last.clone(), vec![resolved(), rolled(0, 2)]].concat()).unwrap_err();
        assert_eq!((i, v.rule), (5, Rule::BattleBudgetExceeded));
        let tight = Budget { max_events: 6, ..budget };
        assert_eq!(fold_within(tight, rolled_last.clone()).unwrap_err().0, 3);
        assert!(fold_within(tight, [rolled_last[..3].to_vec(), vec![resolved()]].concat()).is_ok());
        // The same in bytes: the roll must leave `resolution_bytes` free.
        let rolled_bytes = encoded(rolled(0, 0)).1.len() as u64;
        let open = encoded(opened("")).1.len() as u64;
        let exact = open + rolled_bytes + act + CLOSING_RESERVE_BYTES;
        let by_bytes = Budget { max_events: u64::MAX, max_bytes: exact, resolution_bytes: act };
        assert!(fold_within(by_bytes, vec![opened(""), rolled(0, 0), resolved()]).is_ok());
        let short = Budget { max_bytes: exact - 1, ..by_bytes };
        assert_eq!(fold_within(short, vec![opened(""), rolled(0, 0)]).unwrap_err().0, 1);
    }

    #[test]
    fn a_state_stored_before_bytes_were_counted_reads_as_holding_none() {
        let state = fold(vec![opened(""), rolled(0, 0)]).expect("a battle");
        let uncounted = &state.encode()[..STATE_BYTES_UNCOUNTED];
        assert_eq!(BattleState::decode(uncounted), Some(BattleState { bytes: 0, ..state }));
        assert_eq!(BattleState::decode(&state.encode()[..STATE_BYTES_UNCOUNTED + 3]), None);
    }

    #[test]
    fn budgets_too_small_for_an_opening_and_a_close_are_refused() {
        let budget = |max_events, max_bytes| Budget { max_events, max_bytes, resolution_bytes: 50 };
        assert!(budget(5, CLOSING_RESERVE_BYTES + 150).validate(100).is_ok());
        assert!(budget(4, u64::MAX).validate(100).unwrap_err().contains("max_battle_events"));
        let err = budget(5, CLOSING_RESERVE_BYTES + 149).validate(100).unwrap_err();
        assert!(err.contains("max_battle_bytes"), "{err}");
    }

    #[test]
    fn tenants_must_be_safe_subject_tokens() {
        for bad in ["a.b", "a*", ">", "a b", "a\tb", "_", &"t".repeat(129)] {
            let (i, v) = fold(vec![opened(bad)]).unwrap_err();
            assert_eq!(
                (i, v.rule, v.field.as_str()),
                (0, Rule::EventMalformed, "events[0].payload.battle_opened.tenant")
            );
        }
        assert!(fold(vec![opened("forum-rpg_1")]).is_ok());
        assert_eq!(subject_token(""), "_");
        assert_eq!(subject_token("a.b"), "_");
        assert_eq!(subject_token("forum-a"), "forum-a");
        let bad = Event::BattleOpened(BattleOpened { commitment: "00".into(), ..Default::default() });
        assert_eq!(refused(vec![bad]).1, Rule::EventMalformed);
    }
}
