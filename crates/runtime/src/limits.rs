//! Every input limit of the three services, and the checks of inputs
//! against them, in one place.
//!
//! A check answers with a [`FieldError`]: plain data naming the field, the
//! limit and what was wrong, with no gRPC type in it, so that the rules can
//! be used and tested away from a server (the CLI checks `--battle` with
//! [`battle_id`]). The service edge turns it into `INVALID_ARGUMENT` with a
//! google.rpc `BadRequest` detail (`impl From<FieldError> for Status` in
//! [`crate::grpc`]), so `limits::battle_id(id)?` works as it is in a
//! handler returning `Result<_, Status>`.
//!
//! The limits are chained: a resolver request id becomes a roller request
//! id (`act:<id>`), which becomes journal idempotency keys
//! (`roll:<id>:<index>`). The assertions at the end of this file keep each
//! link within the next one.

/// Battle ids become journal stream ids, NATS subject tokens and sled key
/// prefixes: hence the length and the charset ([`battle_id`]).
pub const MAX_BATTLE_ID_BYTES: usize = 128;

/// The one gRPC message ceiling: every battlelog server decodes and encodes,
/// and every battlelog client decodes, messages up to this many bytes. One
/// number for both ends, so that no reply a server may send is too large
/// for the client that asked for it (a page of a battle is bounded far
/// below it: [`MAX_PAGE_BYTES`]).
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// The largest encoded reply a read page may be (the journal's
/// `max_read_bytes` may only lower it): under 4 MiB, the default receive
/// limit of gRPC clients in most languages (tonic, grpcio), so that a
/// forum's own client reads every page of every battle at its defaults.
pub const MAX_PAGE_BYTES: usize = 4 * 1024 * 1024 - 64 * 1024;

/// Bytes a read page spends on one stored record of `record_bytes` bytes,
/// at most: a `RecordedEvent` carries the record twice (its exact bytes,
/// and decoded), its hash and global position, and the framing of each.
/// Pages are cut by this, not by the record bytes alone, so that the page
/// as encoded stays under its limit.
pub const fn recorded_event_wire_bytes(record_bytes: usize) -> usize {
    2 * record_bytes + RECORDED_EVENT_FRAMING_BYTES
}

/// The framing [`recorded_event_wire_bytes`] adds to twice the record: the
/// repeated field's tag and length (≤ 6), the position (≤ 11), the hash
/// (34), and the tag and length of each copy of the record (≤ 6 each).
pub const RECORDED_EVENT_FRAMING_BYTES: usize = 64;

/// What a page reply holds beyond its events (the head version, and room
/// for fields a reply may gain), at most.
pub const PAGE_FRAMING_BYTES: usize = 1024;

/// The journal's fixed limits (the configurable ones are the journal's
/// `Limits`).
pub mod journal {
    /// Longest stream id, in bytes: a stream id is a battle id.
    pub const MAX_STREAM_ID_BYTES: usize = super::MAX_BATTLE_ID_BYTES;
    /// Longest event type, in bytes.
    pub const MAX_EVENT_TYPE_BYTES: usize = 128;
    /// Longest idempotency key, in bytes.
    pub const MAX_IDEMPOTENCY_KEY_BYTES: usize = 128;
    /// The least `max_payload_bytes` a journal may be configured with:
    /// every event the services write fits in it (see
    /// [`super::roller::MAX_DICE_PER_REQUEST`]), so a configured limit
    /// can never refuse a legal action after its dice are journaled.
    pub const MIN_PAYLOAD_BYTES: usize = 256 * 1024;
    /// The journal decodes appends up to the one ceiling
    /// ([`super::MAX_MESSAGE_BYTES`]), so that an oversized append still
    /// decodes and is refused naming its field.
    pub const MAX_MESSAGE_BYTES: usize = super::MAX_MESSAGE_BYTES;
}

/// The roller's limits on one request.
pub mod roller {
    /// Most expressions in one request.
    pub const MAX_ROLLS_PER_REQUEST: usize = 16;
    /// Most dice one request (one action's rolls) may draw in the worst
    /// case, all expressions together, rerolls and explosions included.
    /// Checked before anything is journaled, it keeps every roll and its
    /// resolution — which lists each die and renders it in two languages —
    /// within [`super::journal::MIN_PAYLOAD_BYTES`], so that no roll is
    /// journaled whose resolution the journal would refuse (the resolver's
    /// tests encode the worst case). The dice language allows 10 000 dice
    /// in one expression (docs/protocol.md §3); this service takes fewer.
    pub const MAX_DICE_PER_REQUEST: u64 = 1_000;
    /// Longest `purpose` of one roll, in bytes.
    pub const MAX_PURPOSE_BYTES: usize = 200;
    /// Longest `actor`, in bytes.
    pub const MAX_ACTOR_BYTES: usize = 128;
    /// The resolver passes `act:<its request id>` here; `roll:<id>:<index>`
    /// must stay within the journal's 128-byte idempotency keys.
    pub const MAX_REQUEST_ID_BYTES: usize = 100;
}

/// The resolver's limits on one request.
pub mod resolver {
    /// Our keys add `dispute:` at most, and the roller's limit is 100 for
    /// `act:<request id>`.
    pub const MAX_REQUEST_ID_BYTES: usize = 90;
    /// Longest title, forum reference, name, reason or ruling, in bytes.
    pub const MAX_TEXT_BYTES: usize = 2_000;
    /// The roller's limits on a roll's `actor` and `purpose`, checked in the
    /// resolver too so that the caller hears about its own input.
    pub const MAX_ACTOR_BYTES: usize = super::roller::MAX_ACTOR_BYTES;
    /// See [`MAX_ACTOR_BYTES`].
    pub const MAX_PURPOSE_BYTES: usize = super::roller::MAX_PURPOSE_BYTES;
    /// Longest client seed, in bytes.
    pub const MAX_CLIENT_SEED_BYTES: usize = 1_000;
    /// Most participants in one battle.
    pub const MAX_PARTICIPANTS: usize = 64;
    /// An action or a sheet as JSON; generous for notes, small for the journal.
    pub const MAX_JSON_BYTES: usize = 16 * 1024;
    /// Levels of objects and lists in an action, a sheet or an override (the
    /// object itself is level 1). No ruleset needs more than a few; the bound
    /// keeps every recursive walk of caller JSON short. prost's own limit (100
    /// nested messages, three per JSON level) stops a request at 34 levels,
    /// answered as `INVALID_ARGUMENT` too (`grpc::undecodable_is_invalid`).
    pub const MAX_JSON_DEPTH: usize = 32;
}

// The chain of request ids and keys described in the module docs.
const _: () = assert!("act:".len() + resolver::MAX_REQUEST_ID_BYTES <= roller::MAX_REQUEST_ID_BYTES);
const _: () = assert!("dispute:".len() + resolver::MAX_REQUEST_ID_BYTES <= journal::MAX_IDEMPOTENCY_KEY_BYTES);
// `roll:<id>:<index>`, the index below MAX_ROLLS_PER_REQUEST (two digits).
const _: () = assert!("roll:".len() + roller::MAX_REQUEST_ID_BYTES + ":99".len() <= journal::MAX_IDEMPOTENCY_KEY_BYTES);
const _: () = assert!(roller::MAX_ROLLS_PER_REQUEST <= 100);
// A page and its framing fit in the one message ceiling.
const _: () = assert!(MAX_PAGE_BYTES + PAGE_FRAMING_BYTES <= MAX_MESSAGE_BYTES);

/// An input that breaks a limit: which field, and what was wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {violation}")]
pub struct FieldError {
    /// The field as the caller named it, e.g. `battle_id` or `rolls[2].purpose`.
    pub field: String,
    /// What was wrong, with the limit it broke.
    pub violation: Violation,
}

/// What was wrong with a field. The texts are the ones clients see after
/// `<field>: ` in an `INVALID_ARGUMENT`; tests and clients rely on them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Violation {
    /// An id that is empty or longer than `max` bytes.
    #[error("must be 1 to {max} bytes")]
    IdLength { max: usize },
    /// A required field that is empty or longer than `max` bytes.
    #[error("is required, 1 to {max} bytes")]
    RequiredLength { max: usize },
    /// A field of `len` bytes where at most `max` are taken.
    #[error("is {len} bytes; the limit is {max}")]
    TooLong { len: usize, max: usize },
    /// An id holding a character other than `[A-Za-z0-9_-]`.
    #[error("may hold only letters A-Z a-z, digits, '-' and '_'")]
    NotIdCharacters,
    /// A request id holding a space or a character outside printable ASCII.
    #[error("may hold only printable ASCII without spaces")]
    NotPrintableAscii,
    /// Text holding a control character it may not hold.
    #[error("may not hold control characters (U+{:04X} found)", u32::from(*found))]
    ControlCharacter { found: char },
}

impl Violation {
    /// The limit that was broken, where it is a number of bytes.
    pub fn limit(&self) -> Option<usize> {
        match self {
            Self::IdLength { max } | Self::RequiredLength { max } | Self::TooLong { max, .. } => Some(*max),
            Self::NotIdCharacters | Self::NotPrintableAscii | Self::ControlCharacter { .. } => None,
        }
    }
}

fn refused(field: &str, violation: Violation) -> Result<(), FieldError> {
    Err(FieldError { field: field.to_owned(), violation })
}

/// The one rule for battle ids, and for everything that becomes one (a
/// journal stream id): 1 to [`MAX_BATTLE_ID_BYTES`] bytes of `[A-Za-z0-9_-]`,
/// because the id is one NATS subject token (no `.`, `*`, `>` or spaces)
/// and a sled key prefix ended by 0x00. `field` is the caller's name for it.
pub fn battle_id_field(field: &str, battle_id: &str) -> Result<(), FieldError> {
    if battle_id.is_empty() || battle_id.len() > MAX_BATTLE_ID_BYTES {
        return refused(field, Violation::IdLength { max: MAX_BATTLE_ID_BYTES });
    }
    if !battle_id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        return refused(field, Violation::NotIdCharacters);
    }
    Ok(())
}

/// A request's `battle_id` ([`battle_id_field`]).
pub fn battle_id(battle_id: &str) -> Result<(), FieldError> {
    battle_id_field("battle_id", battle_id)
}

/// Request ids become idempotency keys with a short prefix (`act:` …), which
/// the journal takes up to 128 bytes: each service sets its `max` so that its
/// keys, and those it passes on, fit.
pub fn request_id(request_id: &str, max: usize) -> Result<(), FieldError> {
    if request_id.is_empty() || request_id.len() > max {
        return refused("request_id", Violation::RequiredLength { max });
    }
    if !request_id.bytes().all(|b| b.is_ascii_graphic()) {
        return refused("request_id", Violation::NotPrintableAscii);
    }
    Ok(())
}

/// Free text that may run over several lines (a reason, a ruling): at most
/// `max` bytes, no control characters but the line feed. Carriage returns,
/// tabs, escapes (ESC, BEL …), DEL and the C1 controls are refused: the text
/// is shown in forums, exports and terminals, where they could rewrite what
/// a reader sees; a `\r\n` from a client is refused rather than guessed at.
pub fn text(field: &str, text: &str, max: usize) -> Result<(), FieldError> {
    checked(field, text, max, |c| c.is_control() && c != '\n')
}

/// One line of text (a name, a title, a purpose, a forum reference): as
/// [`text`], but without line breaks either, because these are printed
/// inside other lines (`… by <name>: …`) and a break would forge one.
pub fn line(field: &str, text: &str, max: usize) -> Result<(), FieldError> {
    checked(field, text, max, char::is_control)
}

fn checked(field: &str, text: &str, max: usize, is_refused: impl Fn(char) -> bool) -> Result<(), FieldError> {
    if text.len() > max {
        return refused(field, Violation::TooLong { len: text.len(), max });
    }
    if let Some(found) = text.chars().find(|&c| is_refused(c)) {
        return refused(field, Violation::ControlCharacter { found });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn battle_ids_are_one_subject_token_of_1_to_128_bytes() {
        assert_eq!(battle_id("battle-1_A"), Ok(()));
        assert_eq!(battle_id(&"x".repeat(128)), Ok(()));
        for (bad, violation) in [
            ("", Violation::IdLength { max: 128 }),
            (&*"x".repeat(129), Violation::IdLength { max: 128 }),
            ("a.b", Violation::NotIdCharacters),
            ("a b", Violation::NotIdCharacters),
            ("a*", Violation::NotIdCharacters),
            ("a>", Violation::NotIdCharacters),
            ("é", Violation::NotIdCharacters),
        ] {
            assert_eq!(battle_id(bad), Err(FieldError { field: "battle_id".into(), violation }), "{bad:?}");
        }
        let error = battle_id_field("stream_id", "a.b").expect_err("a dot");
        assert_eq!(error.to_string(), "stream_id: may hold only letters A-Z a-z, digits, '-' and '_'");
    }

    #[test]
    fn request_ids_are_printable_ascii_within_the_given_limit() {
        assert_eq!(request_id("req-1/0", 10), Ok(()));
        let error = request_id("", 10).expect_err("empty");
        assert_eq!(error.to_string(), "request_id: is required, 1 to 10 bytes");
        assert_eq!(error.violation.limit(), Some(10));
        assert_eq!(
            request_id(&"r".repeat(11), 10).map_err(|e| e.violation),
            Err(Violation::RequiredLength { max: 10 })
        );
        assert_eq!(request_id("a b", 10).map_err(|e| e.violation), Err(Violation::NotPrintableAscii));
    }

    #[test]
    fn text_takes_line_feeds_and_no_other_control_character() {
        assert_eq!(text("reason", "first line\nsecond line", 100), Ok(()));
        for bad in ["esc \u{1b}[2J", "bell \u{7}", "del \u{7f}", "cr \r\n", "tab \t", "c1 \u{9b}"] {
            let error = text("reason", bad, 100).expect_err(bad);
            assert_eq!(error.field, "reason");
            assert!(error.to_string().starts_with("reason: may not hold control characters"), "{error}");
        }
        let error = text("reason", &"x".repeat(101), 100).expect_err("too long");
        assert_eq!(error.to_string(), "reason: is 101 bytes; the limit is 100");
    }

    #[test]
    fn a_line_takes_no_control_character_at_all() {
        assert_eq!(line("by", "Professor Oak", 100), Ok(()));
        let error = line("by", "oak\nJUDGE: forged", 100).expect_err("a line break");
        assert_eq!(error.to_string(), "by: may not hold control characters (U+000A found)");
        assert_eq!(error.violation, Violation::ControlCharacter { found: '\n' });
        assert!(line("by", "\u{1b}]0;title\u{7}", 100).is_err());
    }
}
