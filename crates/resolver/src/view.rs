//! A battle as the resolver sees it: the fold of its journal stream. Replay
//! trusts the recorded outcomes (the audit is what re-resolves them), so a
//! view can be rebuilt to any version from the records alone.
//!
//! A view keeps the folded state only — the rules state, the epoch, where
//! each roll and each of the resolver's own requests was recorded — never
//! the records: a cached battle costs what its state costs, and the rare
//! answer that needs a record as journaled (an idempotent replay, a battle
//! as of an old version) reads it from the journal.

use std::collections::HashMap;

use battlelog_proto::battle::{self, EventError};
use battlelog_proto::v1::{Credential, DiceRolled, JournalRecord, battle_event::Event};
use battlelog_stream::Fold;
use battlelog_verify::stream_state::{StreamEvent, StreamState, Violation};
use rules::Battle;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FoldError {
    #[error(transparent)]
    Event(#[from] EventError),
    #[error("version {version}: expected version {expected}")]
    VersionGap { version: u64, expected: u64 },
    #[error("version {version}: a battle stream starts with BattleOpened, and only once")]
    Opening { version: u64 },
    /// The event breaks a rule of the stream: the journal's guard would
    /// not have taken it.
    #[error("version {version}: {source}")]
    Stream { version: u64, source: Violation },
    #[error("version {version}: {message}")]
    Invalid { version: u64, message: String },
}

// The pure fold helpers are battlelog-verify's, shared with the audit.
pub use battlelog_verify::fold::{PartsError, dispute_action, participants, resolved_parts, ruling_action};

/// Whether `key` is one of the resolver's own idempotency keys (`open:`,
/// `act:`, `dispute:`, `rule:`, `close:`), the only ones it looks up; the
/// roller's (`roll:`, `reveal:`) are the roller's business.
pub fn is_resolver_key(key: &str) -> bool {
    ["open:", "act:", "dispute:", "rule:", "close:"].iter().any(|prefix| key.starts_with(prefix))
}

/// Bytes a resolved action, a dispute or a ruling costs in the rules
/// state's history, per byte of its journaled payload: the action, the
/// outcome and the effective outcome, decoded into owned values.
const HISTORY_BYTES_PER_PAYLOAD_BYTE: usize = 4;

fn history_bytes(event: &impl prost::Message) -> usize {
    event.encoded_len() * HISTORY_BYTES_PER_PAYLOAD_BYTE
}

/// An action whose rolls are journaled and whose resolution is not yet:
/// everything finishing it needs, as its rolls recorded it.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingAct {
    /// The resolver's idempotency key of the `Act` that asked for it
    /// (`act:<request id>`), read from its first roll's key
    /// (`roll:act:<request id>:0`): its resolution is journaled under it, so
    /// that the caller's retry finds it.
    pub key: String,
    /// The action as its first roll recorded it (`for_action.action`).
    pub action: prost_types::Struct,
    /// Who asked for it (`for_action.credential`).
    pub credential: Option<Credential>,
    /// Its rolls as journaled, with their versions, in draw order.
    pub rolls: Vec<(u64, DiceRolled)>,
}

/// The resolver's key of the request that wrote a roll under the roller's
/// key `roll:<request key>:<index>` (the roller's `ledger::roll_key`).
pub fn request_key_of_roll(key: &str) -> Option<&str> {
    key.strip_prefix("roll:")?.rsplit_once(':').map(|(request, _)| request)
}

#[derive(Debug, Clone, Default)]
pub struct BattleView {
    /// The next version the stream will get (the number of events folded).
    next_version: u64,
    /// The tenant that opened the battle; `None` until `BattleOpened`.
    pub tenant: Option<String>,
    pub rules: Option<Battle>,
    /// The current epoch, whether its seed is revealed, the next nonce,
    /// closed: the stream fold the journal's guard keeps too
    /// (`battlelog_verify::stream_state`).
    pub stream: StreamState,
    /// The version of every roll, by nonce.
    pub roll_versions: Vec<u64>,
    /// The version of the `BattleClosed`, once closed.
    pub closed_at: Option<u64>,
    /// When the journal committed the `BattleClosed` (µs since the Unix
    /// epoch, the record's `recorded_at_unix_micros`): the appeal window
    /// runs from it. The journal's time, never this replica's, so that every
    /// replica closes the window at the same instant.
    pub closed_at_unix_micros: Option<i64>,
    /// Versions written under each of the resolver's own idempotency keys.
    pub keys: HashMap<String, u64>,
    /// The action rolled and not yet resolved, if any (roll-forward): it is
    /// finished before any other command of the battle is taken.
    pub pending: Option<PendingAct>,
    /// What the rules state's history costs, estimated as it grows.
    history_bytes: usize,
}

impl BattleView {
    /// The next version the stream will get.
    pub fn next_version(&self) -> u64 {
        self.next_version
    }

    pub fn head(&self) -> Option<u64> {
        self.next_version().checked_sub(1)
    }

    pub fn next_nonce(&self) -> u64 {
        self.stream.next_nonce
    }

    pub fn closed(&self) -> bool {
        self.stream.closed
    }

    /// Folds the next record.
    pub fn apply(&mut self, record: &JournalRecord) -> Result<(), FoldError> {
        let event = battle::decode(record)?;
        self.apply_event(record.version, record.recorded_at_unix_micros, &event, &record.idempotency_key)
    }

    /// Folds the next event: read back from the journal, or as this
    /// resolver (or the roller, for it) appended it at `version`, which the
    /// journal committed at `recorded_at_unix_micros` (its append reply says).
    pub fn apply_event(
        &mut self,
        version: u64,
        recorded_at_unix_micros: i64,
        event: &Event,
        key: &str,
    ) -> Result<(), FoldError> {
        if version != self.next_version() {
            return Err(FoldError::VersionGap { version, expected: self.next_version() });
        }
        let invalid = |message: String| FoldError::Invalid { version, message };
        let step = StreamEvent::of(event).map_err(|e| invalid(e.to_string()))?;
        // The stream's rules first: a refused event changes nothing.
        let mut stream = self.stream;
        stream.apply(&step).map_err(|source| match source {
            Violation::NotOpened | Violation::AlreadyOpened => FoldError::Opening { version },
            source => FoldError::Stream { version, source },
        })?;
        match (event, self.rules.as_ref()) {
            (Event::BattleOpened(opened), _) => {
                let ruleset = opened.ruleset.parse().map_err(|e: rules::RulesetError| invalid(e.to_string()))?;
                let sheets = participants(opened).map_err(|e| invalid(e.to_string()))?;
                self.rules = Some(Battle::new(ruleset, sheets).map_err(|e| invalid(e.to_string()))?);
                self.tenant = Some(opened.tenant.clone());
                self.history_bytes += history_bytes(opened);
            }
            // Unreachable: the stream fold refuses any event before the
            // opening, and the opening sets the rules.
            (_, None) => return Err(FoldError::Opening { version }),
            (Event::DiceRolled(rolled), Some(_)) => {
                self.roll_versions.push(version);
                if let Some(requested) = &rolled.for_action {
                    self.pending = Some(PendingAct {
                        key: request_key_of_roll(key).unwrap_or_default().to_owned(),
                        action: requested.action.clone().unwrap_or_default(),
                        credential: requested.credential.clone(),
                        rolls: vec![(version, rolled.clone())],
                    });
                } else if let Some(pending) = &mut self.pending {
                    pending.rolls.push((version, rolled.clone()));
                }
            }
            (Event::ActionResolved(resolved), Some(rules)) => {
                self.pending = None;
                let (action, outcome) = resolved_parts(resolved).map_err(|e| invalid(e.to_string()))?;
                self.rules = Some(rules.apply(version, &action, &outcome).map_err(|e| invalid(e.to_string()))?);
                self.history_bytes += history_bytes(resolved);
            }
            (Event::DisputeRaised(dispute), Some(rules)) => {
                let resolution = rules.resolve(version, &dispute_action(dispute), &[]);
                self.rules = Some(resolution.map_err(|e| invalid(e.to_string()))?.battle);
                self.history_bytes += history_bytes(dispute);
            }
            (Event::JudgeRuling(ruling), Some(rules)) => {
                let resolution = rules.resolve(version, &ruling_action(ruling), &[]);
                self.rules = Some(resolution.map_err(|e| invalid(e.to_string()))?.battle);
                self.history_bytes += history_bytes(ruling);
            }
            (Event::BattleClosed(_), Some(_)) => {
                self.closed_at = Some(version);
                self.closed_at_unix_micros = Some(recorded_at_unix_micros);
            }
            (Event::SeedCommitted(_) | Event::SeedRevealed(_), Some(_)) => {}
        }
        self.stream = stream;
        if is_resolver_key(key) {
            self.keys.insert(key.to_owned(), version);
        }
        self.next_version += 1;
        Ok(())
    }

    /// When the appeal window of a closed battle ends (µs since the Unix
    /// epoch): its close's commit time plus `window`. `None` while open.
    pub fn appeal_ends_unix_micros(&self, window: std::time::Duration) -> Option<i64> {
        let window = i64::try_from(window.as_micros()).unwrap_or(i64::MAX);
        self.closed_at_unix_micros.map(|closed| closed.saturating_add(window))
    }
}

impl Fold for BattleView {
    type Error = FoldError;

    fn next_version(&self) -> u64 {
        self.next_version
    }

    fn apply(&mut self, record: &JournalRecord) -> Result<(), FoldError> {
        BattleView::apply(self, record)
    }

    fn weight(&self) -> usize {
        size_of::<Self>()
            + self.tenant.as_ref().map_or(0, String::capacity)
            + self.history_bytes
            + self.roll_versions.capacity() * size_of::<u64>()
            + self.keys.keys().map(|key| key.capacity() + 48).sum::<usize>()
            + self.pending.as_ref().map_or(0, |p| {
                p.key.capacity()
                    + prost::Message::encoded_len(&p.action) * 4
                    + p.rolls.iter().map(|(_, r)| prost::Message::encoded_len(r) * 2).sum::<usize>()
            })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use battlelog_proto::v1::{ActionResolved, BattleClosed, BattleOpened, DiceRolled, JudgeRuling, SeedRevealed};
    use serde_json::json;
    use sha2::Digest;

    use super::*;

    /// A record as the journal would hand it back: `event` at `version`,
    /// committed at `recorded_at_unix_micros`.
    fn record(version: u64, recorded_at_unix_micros: i64, event: Event) -> JournalRecord {
        let new = battle::new_event(event, String::new());
        JournalRecord {
            stream_id: "appeal".into(),
            version,
            event_type: new.event_type,
            recorded_at_unix_micros,
            payload: new.payload,
            ..Default::default()
        }
    }

    fn fields(value: serde_json::Value) -> prost_types::Struct {
        battle::json_to_struct(value.as_object().expect("an object"))
    }

    /// docs/protocol.md §1: the commitment is the lowercase hex of SHA-256 of
    /// the seed; here epoch 0's seed is 32 bytes of 1.
    fn seed() -> String {
        hex::encode([1u8; 32])
    }

    fn opened() -> Event {
        Event::BattleOpened(BattleOpened {
            commitment: hex::encode(sha2::Sha256::digest([1u8; 32])),
            ruleset: "pokemon-d6@1".into(),
            participants: vec![fields(json!({"id": "pikachu"})), fields(json!({"id": "meowth"}))],
            ..Default::default()
        })
    }

    /// docs/rules.md §1.5: a pass draws no die and its outcome is `{"result": "pass"}`.
    fn passed() -> Event {
        Event::ActionResolved(ActionResolved {
            action: Some(fields(json!({"type": "pass", "actor": "meowth"}))),
            outcome: Some(fields(json!({"result": "pass"}))),
            ..Default::default()
        })
    }

    #[test]
    fn the_appeal_window_runs_from_the_close_the_journal_recorded() {
        let mut view = BattleView::default();
        view.apply(&record(0, 1_000, opened())).expect("opened");
        view.apply(&record(1, 2_000, passed())).expect("a pass");
        assert_eq!(view.appeal_ends_unix_micros(Duration::from_secs(1)), None, "open: no window yet");
        let closed = Event::BattleClosed(BattleClosed { by: "judge".into(), ..Default::default() });
        view.apply(&record(2, 5_000_000, closed)).expect("closed");
        // A ruling after the close folds, and does not move the window.
        let ruling = Event::JudgeRuling(JudgeRuling { judge: "j".into(), refers_to: 1, ..Default::default() });
        view.apply(&record(3, 9_000_000, ruling)).expect("a ruling after the close folds");
        assert_eq!((view.closed_at, view.closed_at_unix_micros), (Some(2), Some(5_000_000)));
        assert_eq!(
            view.appeal_ends_unix_micros(Duration::from_secs(14 * 24 * 60 * 60)),
            Some(1_209_600_000_000 + 5_000_000),
            "14 days after the close"
        );
        assert_eq!(view.appeal_ends_unix_micros(Duration::MAX), Some(i64::MAX), "saturates");
    }

    #[test]
    fn the_view_folds_the_stream_by_the_rules_the_journal_guards_it_with() {
        let revealed = || Event::SeedRevealed(SeedRevealed { epoch: 0, server_seed: seed(), credential: None });
        let rolled = |nonce| Event::DiceRolled(DiceRolled { epoch: 0, nonce, ..Default::default() });
        let mut view = BattleView::default();
        for (version, event) in [opened(), rolled(0), passed(), revealed()].into_iter().enumerate() {
            view.apply(&record(version as u64, 0, event)).expect("a legal battle");
        }
        assert_eq!((view.next_nonce(), view.stream.epoch, view.stream.epoch_secret()), (1, 0, false));
        // A roll in the revealed epoch is what the journal refuses: it does
        // not fold, and changes nothing.
        let before = (view.next_version(), view.stream);
        let refused = view.apply(&record(4, 0, rolled(1))).unwrap_err();
        assert!(
            matches!(refused, FoldError::Stream { version: 4, source: Violation::EpochRevealed { epoch: 0, .. } }),
            "{refused:?}"
        );
        assert_eq!((view.next_version(), view.stream), before);
        assert!(matches!(view.apply(&record(4, 0, opened())), Err(FoldError::Opening { version: 4 })));
        let closed = Event::BattleClosed(BattleClosed { by: "judge".into(), ..Default::default() });
        view.apply(&record(4, 7, closed)).expect("the close");
        assert!(view.closed() && view.closed_at == Some(4));
        let after_close = view.apply(&record(5, 0, passed())).unwrap_err();
        assert!(matches!(after_close, FoldError::Stream { source: Violation::Closed, .. }), "{after_close:?}");
    }
}
