//! What the roller knows of one battle, folded from its journal stream: the
//! client seed, the stream's state (the current epoch and whether its seed
//! is still secret, the next nonce, closed: the stream fold the journal's
//! guard keeps too, `battlelog_verify::stream_state`), and where each
//! request id it served was recorded (for idempotent retries). Only
//! versions are kept of those: a replay fetches the recorded events from the
//! journal, so the ledger does not grow with the dice a battle rolled.

use std::collections::HashMap;

use battlelog_proto::v1::{JournalRecord, battle_event::Event};
use battlelog_stream::Fold;
use battlelog_verify::stream_state::{Malformed, StreamEvent, StreamState, Violation};

use battlelog_proto::battle::{self as events, EventError};

/// Idempotency keys the roller writes: `roll:<request id>:<index>` and
/// `reveal:<request id>:<index>`, one per event of the request.
pub fn roll_key(request_id: &str, index: usize) -> String {
    format!("roll:{request_id}:{index}")
}

pub fn reveal_key(request_id: &str, index: usize) -> String {
    format!("reveal:{request_id}:{index}")
}

/// Whether `key` is one the roller wrote (the only ones it looks up).
fn is_roller_key(key: &str) -> bool {
    key.starts_with("roll:") || key.starts_with("reveal:")
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LedgerError {
    #[error(transparent)]
    Event(#[from] EventError),
    #[error("version {version}: expected version {expected}; the stream skips or repeats a version")]
    VersionGap { version: u64, expected: u64 },
    #[error("version {version}: {source}")]
    Malformed { version: u64, source: Malformed },
    /// The event breaks a rule of the stream: the journal's guard would
    /// not have taken it.
    #[error("version {version}: {source}")]
    Stream { version: u64, source: Violation },
}

#[derive(Debug, Default, Clone)]
pub struct Ledger {
    /// The next version to fold (the number of events folded).
    pub next_version: u64,
    /// Set by BattleOpened.
    pub client_seed: Option<String>,
    /// The current epoch, whether its seed is still secret, the next
    /// nonce, closed.
    pub stream: StreamState,
    /// The version of each event written under one of the roller's
    /// idempotency keys, by key.
    pub recorded: HashMap<String, u64>,
}

impl Ledger {
    pub fn is_open(&self) -> bool {
        self.stream.opened
    }

    /// The head version, if the stream has any event.
    pub fn head(&self) -> Option<u64> {
        self.next_version.checked_sub(1)
    }

    /// Folds the next record of the stream.
    pub fn apply(&mut self, record: &JournalRecord) -> Result<(), LedgerError> {
        let event = events::decode(record)?;
        self.apply_event(record.version, &event, &record.idempotency_key)
    }

    /// Folds the next event, as read back or as this roller appended it.
    pub fn apply_event(&mut self, version: u64, event: &Event, key: &str) -> Result<(), LedgerError> {
        if version != self.next_version {
            return Err(LedgerError::VersionGap { version, expected: self.next_version });
        }
        let step = StreamEvent::of(event).map_err(|source| LedgerError::Malformed { version, source })?;
        self.stream.apply(&step).map_err(|source| LedgerError::Stream { version, source })?;
        if let Event::BattleOpened(opened) = event {
            self.client_seed = Some(opened.client_seed.clone());
        }
        if is_roller_key(key) {
            self.recorded.insert(key.to_owned(), version);
        }
        self.next_version += 1;
        Ok(())
    }

    /// The versions a request wrote, in order, if it was served before.
    pub fn recorded_for(&self, key: impl Fn(usize) -> String) -> Vec<u64> {
        (0..).map_while(|i| self.recorded.get(&key(i)).copied()).collect()
    }
}

impl Fold for Ledger {
    type Error = LedgerError;

    fn next_version(&self) -> u64 {
        self.next_version
    }

    fn apply(&mut self, record: &JournalRecord) -> Result<(), LedgerError> {
        Ledger::apply(self, record)
    }

    fn weight(&self) -> usize {
        // The struct, the client seed, and per recorded key its text, its
        // version and the map's slot.
        size_of::<Self>()
            + self.client_seed.as_ref().map_or(0, String::capacity)
            + self.recorded.keys().map(|key| key.capacity() + 48).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use battlelog_proto::v1::{BattleOpened, DiceRolled, SeedCommitted, SeedRevealed};

    use super::*;

    /// docs/protocol.md §1: a commitment is the lowercase hex of SHA-256 of the
    /// seed; here the seed of epoch `e` is 32 bytes of `e + 1`.
    fn seed(epoch: u32) -> String {
        hex::encode([epoch as u8 + 1; 32])
    }

    fn commitment(epoch: u32) -> String {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest([epoch as u8 + 1; 32]))
    }

    fn rolled(epoch: u32, nonce: u64) -> Event {
        Event::DiceRolled(DiceRolled { epoch, nonce, expression: "1d6".into(), ..Default::default() })
    }

    fn revealed(epoch: u32) -> Event {
        Event::SeedRevealed(SeedRevealed { epoch, server_seed: seed(epoch), credential: None })
    }

    fn fold(events: &[Event]) -> Result<Ledger, LedgerError> {
        let mut ledger = Ledger::default();
        for (version, event) in events.iter().enumerate() {
            ledger.apply_event(version as u64, event, &roll_key("r", version))?;
        }
        Ok(ledger)
    }

    #[test]
    fn the_ledger_folds_epochs_nonces_and_reveals_as_the_journal_guards_them() {
        let opened = Event::BattleOpened(BattleOpened {
            client_seed: "thread-1".into(),
            commitment: commitment(0),
            ..Default::default()
        });
        let committed =
            Event::SeedCommitted(SeedCommitted { epoch: 1, commitment: commitment(1), ..Default::default() });
        let battle = [opened.clone(), rolled(0, 0), revealed(0), committed, rolled(1, 1)];
        let ledger = fold(&battle).expect("a legal battle");
        assert_eq!(ledger.client_seed.as_deref(), Some("thread-1"));
        assert_eq!((ledger.stream.epoch, ledger.stream.next_nonce, ledger.stream.epoch_secret()), (1, 2, true));
        assert_eq!((ledger.head(), ledger.recorded_for(|i| roll_key("r", i)).len()), (Some(4), 5));
        // What the journal's guard refuses does not fold here either.
        let stale = fold(&[opened.clone(), rolled(0, 0), revealed(0), rolled(0, 1)]).unwrap_err();
        assert!(matches!(stale, LedgerError::Stream { version: 3, source: Violation::EpochRevealed { epoch: 0, .. } }));
        let wrong_seed = Event::SeedRevealed(SeedRevealed { epoch: 0, server_seed: seed(1), credential: None });
        let mismatch = fold(&[opened.clone(), wrong_seed]).unwrap_err();
        assert!(matches!(mismatch, LedgerError::Stream { version: 1, source: Violation::SeedMismatch { .. } }));
        let gap = fold(&[opened, rolled(0, 1)]).unwrap_err();
        assert!(matches!(gap, LedgerError::Stream { source: Violation::NonceOutOfOrder { nonce: 1, next: 0 }, .. }));
        assert!(matches!(fold(&[rolled(0, 0)]), Err(LedgerError::Stream { source: Violation::NotOpened, .. })));
    }
}
