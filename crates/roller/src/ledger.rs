//! What the roller knows of one battle, folded from its journal stream: the
//! client seed, the current epoch and whether its seed is still secret, the
//! next nonce, and where each request id it served was recorded (for
//! idempotent retries). Only versions are kept of those: a replay fetches
//! the recorded events from the journal, so the ledger does not grow with
//! the dice a battle rolled.

use std::collections::HashMap;

use battlelog_proto::v1::{JournalRecord, battle_event::Event};
use battlelog_stream::Fold;

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
    #[error("version {version}: a battle stream must start with BattleOpened")]
    NotOpenedFirst { version: u64 },
    #[error("version {version}: nonce {nonce} where {expected} was next")]
    NonceGap { version: u64, nonce: u64, expected: u64 },
}

#[derive(Debug, Default, Clone)]
pub struct Ledger {
    /// The next version to fold (the number of events folded).
    pub next_version: u64,
    /// Set by BattleOpened.
    pub client_seed: Option<String>,
    pub epoch: u32,
    /// The current epoch is committed and its seed not yet revealed: rolls
    /// may be drawn from it.
    pub epoch_secret: bool,
    pub next_nonce: u64,
    pub closed: bool,
    /// The version of each event written under one of the roller's
    /// idempotency keys, by key.
    pub recorded: HashMap<String, u64>,
}

impl Ledger {
    pub fn is_open(&self) -> bool {
        self.client_seed.is_some()
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
        match event {
            Event::BattleOpened(opened) => {
                if version != 0 {
                    return Err(LedgerError::NotOpenedFirst { version });
                }
                self.client_seed = Some(opened.client_seed.clone());
                self.epoch = 0;
                self.epoch_secret = true;
            }
            _ if version == 0 => return Err(LedgerError::NotOpenedFirst { version }),
            Event::SeedCommitted(committed) => {
                self.epoch = committed.epoch;
                self.epoch_secret = true;
            }
            Event::DiceRolled(rolled) => {
                if rolled.nonce != self.next_nonce {
                    return Err(LedgerError::NonceGap { version, nonce: rolled.nonce, expected: self.next_nonce });
                }
                self.next_nonce += 1;
            }
            Event::SeedRevealed(revealed) if revealed.epoch == self.epoch => self.epoch_secret = false,
            Event::BattleClosed(_) => self.closed = true,
            _ => {}
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
