//! A battle as the resolver sees it: the fold of its journal stream. Replay
//! trusts the recorded outcomes (the audit is what re-resolves them), so a
//! view can be rebuilt to any version from the records alone.

use std::collections::{BTreeMap, HashMap};

use battlelog_proto::battle::{self, EventError};
use battlelog_proto::v1::{BattleOpened, DiceRolled, JournalRecord, battle_event::Event};
use rules::Battle;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FoldError {
    #[error(transparent)]
    Event(#[from] EventError),
    #[error("version {version}: expected version {expected}")]
    VersionGap { version: u64, expected: u64 },
    #[error("version {version}: a battle stream starts with BattleOpened, and only once")]
    Opening { version: u64 },
    #[error("version {version}: {message}")]
    Invalid { version: u64, message: String },
}

// The pure fold helpers are battlelog-verify's, shared with the audit.
pub use battlelog_verify::fold::{PartsError, dispute_action, participants, resolved_parts, ruling_action};

#[derive(Debug, Clone, Default)]
pub struct BattleView {
    /// Every record folded, index = version.
    pub records: Vec<JournalRecord>,
    pub opened: Option<BattleOpened>,
    pub rules: Option<Battle>,
    /// The current epoch: its commitment is the latest.
    pub epoch: u32,
    pub commitments: BTreeMap<u32, String>,
    pub revealed: BTreeMap<u32, String>,
    /// Every roll by nonce, with its version.
    pub rolls: BTreeMap<u64, (u64, DiceRolled)>,
    pub closed: bool,
    /// Versions written under each idempotency key.
    pub keys: HashMap<String, u64>,
}

impl BattleView {
    /// The next version the stream will get.
    pub fn next_version(&self) -> u64 {
        self.records.len() as u64
    }

    pub fn head(&self) -> Option<u64> {
        self.next_version().checked_sub(1)
    }

    pub fn next_nonce(&self) -> u64 {
        self.rolls.len() as u64
    }

    /// Folds the next record.
    pub fn apply(&mut self, record: JournalRecord) -> Result<(), FoldError> {
        let version = record.version;
        if version != self.next_version() {
            return Err(FoldError::VersionGap { version, expected: self.next_version() });
        }
        let event = battle::decode(&record)?;
        let invalid = |message: String| FoldError::Invalid { version, message };
        match (&event, self.rules.as_ref()) {
            (Event::BattleOpened(opened), None) if version == 0 => {
                let ruleset = opened.ruleset.parse().map_err(|e: rules::RulesetError| invalid(e.to_string()))?;
                let sheets = participants(opened).map_err(|e| invalid(e.to_string()))?;
                self.rules = Some(Battle::new(ruleset, sheets).map_err(|e| invalid(e.to_string()))?);
                self.commitments.insert(0, opened.commitment.clone());
                self.opened = Some(opened.clone());
            }
            (Event::BattleOpened(_), _) | (_, None) => return Err(FoldError::Opening { version }),
            (Event::SeedCommitted(committed), Some(_)) => {
                self.epoch = committed.epoch;
                self.commitments.insert(committed.epoch, committed.commitment.clone());
            }
            (Event::DiceRolled(rolled), Some(_)) => {
                if rolled.nonce != self.next_nonce() {
                    return Err(invalid(format!("nonce {} where {} was next", rolled.nonce, self.next_nonce())));
                }
                self.rolls.insert(rolled.nonce, (version, rolled.clone()));
            }
            (Event::ActionResolved(resolved), Some(rules)) => {
                let (action, outcome) = resolved_parts(resolved).map_err(|e| invalid(e.to_string()))?;
                self.rules = Some(rules.apply(version, &action, &outcome).map_err(|e| invalid(e.to_string()))?);
            }
            (Event::DisputeRaised(dispute), Some(rules)) => {
                let resolution = rules.resolve(version, &dispute_action(dispute), &[]);
                self.rules = Some(resolution.map_err(|e| invalid(e.to_string()))?.battle);
            }
            (Event::JudgeRuling(ruling), Some(rules)) => {
                let resolution = rules.resolve(version, &ruling_action(ruling), &[]);
                self.rules = Some(resolution.map_err(|e| invalid(e.to_string()))?.battle);
            }
            (Event::SeedRevealed(revealed), Some(_)) => {
                self.revealed.insert(revealed.epoch, revealed.server_seed.clone());
            }
            (Event::BattleClosed(_), Some(_)) => self.closed = true,
        }
        if !record.idempotency_key.is_empty() {
            self.keys.insert(record.idempotency_key.clone(), version);
        }
        self.records.push(record);
        Ok(())
    }

    /// The view as it stood right after `version`.
    pub fn as_of(&self, version: u64) -> Result<BattleView, FoldError> {
        let mut view = BattleView::default();
        for record in self.records.iter().take_while(|r| r.version <= version) {
            view.apply(record.clone())?;
        }
        Ok(view)
    }

    /// The decoded event at `version`.
    pub fn event(&self, version: u64) -> Option<Event> {
        let record = self.records.get(usize::try_from(version).ok()?)?;
        battle::decode(record).ok()
    }

    /// The current epoch's seed is still secret: rolls may be drawn.
    pub fn epoch_secret(&self) -> bool {
        !self.revealed.contains_key(&self.epoch)
    }
}
