//! A battle stream's protocol state, folded in one place: whether it is
//! opened, its current epoch and that epoch's commitment, whether the
//! epoch's seed is revealed, the next nonce, whether an action is pending
//! (rolled, not yet resolved), and whether the battle is closed
//! (docs/protocol.md §1–§2 and §4's roll-forward; ARCHITECTURE.md,
//! invariants 3 and 8).
//!
//! The journal's battle guard refuses an append that breaks one of these
//! rules; the roller's ledger and the resolver's view fold what the journal
//! holds with them; the audit reports every rule a recorded event breaks
//! and goes on from what was recorded. All four use this fold, so a stream
//! the journal accepts is a stream the others read the same way.
//!
//! The fold works on [`StreamEvent`]: of each battle event, only what the
//! rules need (epochs, nonces, digests), so that the journal can take it
//! from a payload once, off its commit path, and the fold itself decodes
//! nothing and hashes nothing.

use std::fmt;

use battlelog_proto::v1::battle_event::Event;
use sha2::{Digest, Sha256};

use crate::chain::Hash;

/// What the fold needs of one battle event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEvent {
    /// `BattleOpened` with its epoch-0 commitment.
    Opened {
        /// SHA-256 of the epoch-0 seed.
        commitment: Hash,
    },
    /// `SeedCommitted`.
    Committed {
        /// The new epoch.
        epoch: u32,
        /// SHA-256 of its seed.
        commitment: Hash,
    },
    /// `DiceRolled`.
    Rolled {
        /// The epoch it claims.
        epoch: u32,
        /// Its nonce.
        nonce: u64,
        /// Whether it carries the action it is drawn for (`for_action`):
        /// the first roll of an action, which is pending from here until
        /// its `ActionResolved`.
        opens_action: bool,
    },
    /// `SeedRevealed`.
    Revealed {
        /// The epoch it reveals.
        epoch: u32,
        /// SHA-256 of the revealed seed.
        seed_hash: Hash,
    },
    /// `BattleClosed`.
    Closed,
    /// `DisputeRaised`, `JudgeRuling`: they change none of the stream's
    /// state, and may follow a close (the appeal window is the resolver's
    /// policy, kept by its clock; this fold has none).
    Appeal,
    /// `ActionResolved`: it ends a pending action.
    Resolved,
}

/// A commitment or seed that is not 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not 64 lowercase hex digits")]
pub struct Malformed {
    /// The field of the `BattleEvent`, e.g. `seed_revealed.server_seed`.
    pub field: &'static str,
    /// What it holds.
    pub text: String,
}

/// 64 lowercase hex digits (docs/protocol.md §1 writes commitments and seeds
/// so) as their 32 bytes.
pub fn digest(text: &str) -> Option<Hash> {
    let well_formed = text.len() == 64 && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    well_formed.then(|| hex::decode(text).ok()).flatten().and_then(|bytes| Hash::try_from(bytes).ok())
}

impl StreamEvent {
    /// What the fold needs of `event`: its epoch and nonce, its commitment,
    /// or the SHA-256 of the seed it reveals.
    pub fn of(event: &Event) -> Result<StreamEvent, Malformed> {
        let digest =
            |field: &'static str, text: &str| digest(text).ok_or_else(|| Malformed { field, text: text.to_owned() });
        Ok(match event {
            Event::BattleOpened(opened) => {
                StreamEvent::Opened { commitment: digest("battle_opened.commitment", &opened.commitment)? }
            }
            Event::SeedCommitted(committed) => StreamEvent::Committed {
                epoch: committed.epoch,
                commitment: digest("seed_committed.commitment", &committed.commitment)?,
            },
            Event::DiceRolled(rolled) => StreamEvent::rolled(rolled),
            Event::SeedRevealed(revealed) => {
                let seed = digest("seed_revealed.server_seed", &revealed.server_seed)?;
                StreamEvent::Revealed { epoch: revealed.epoch, seed_hash: Sha256::digest(seed).into() }
            }
            Event::BattleClosed(_) => StreamEvent::Closed,
            Event::DisputeRaised(_) | Event::JudgeRuling(_) => StreamEvent::Appeal,
            Event::ActionResolved(_) => StreamEvent::Resolved,
        })
    }

    /// What the fold needs of a `DiceRolled`.
    pub fn rolled(rolled: &battlelog_proto::v1::DiceRolled) -> StreamEvent {
        StreamEvent::Rolled { epoch: rolled.epoch, nonce: rolled.nonce, opens_action: rolled.for_action.is_some() }
    }
}

/// The event a [`Violation`] about an epoch is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EpochEvent {
    /// `DiceRolled`.
    DiceRolled,
    /// `SeedRevealed`.
    SeedRevealed,
    /// `SeedCommitted`.
    SeedCommitted,
}

impl EpochEvent {
    fn epoch_field(self) -> &'static str {
        match self {
            EpochEvent::DiceRolled => "dice_rolled.epoch",
            EpochEvent::SeedRevealed => "seed_revealed.epoch",
            EpochEvent::SeedCommitted => "seed_committed.epoch",
        }
    }
}

/// A rule of the stream an event breaks, with what was found against what
/// the rule wants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// The first event of a battle must be its `BattleOpened`.
    NotOpened,
    /// `BattleOpened` only once, first.
    AlreadyOpened,
    /// After `BattleClosed`, only the `SeedRevealed` of its last epoch and
    /// the appeal's `DisputeRaised` and `JudgeRuling`.
    Closed,
    /// An event for an epoch other than the one it must be for: a roll or
    /// a reveal not in the current epoch, a commitment not for the next.
    EpochMismatch {
        /// The event.
        event: EpochEvent,
        /// The epoch it names.
        epoch: u32,
        /// The battle's current epoch.
        current: u32,
    },
    /// A roll in, or a second reveal of, an epoch already revealed.
    EpochRevealed {
        /// The event.
        event: EpochEvent,
        /// The revealed epoch.
        epoch: u32,
    },
    /// A new epoch committed before the current one was revealed.
    EpochNotRevealed {
        /// The epoch committed.
        epoch: u32,
        /// The battle's current, unrevealed epoch.
        current: u32,
    },
    /// A `DiceRolled` nonce other than the battle's next one: 0, 1, 2 …
    /// across epochs, no gap, no reuse.
    NonceOutOfOrder {
        /// The nonce rolled.
        nonce: u64,
        /// The battle's next nonce.
        next: u64,
    },
    /// A revealed seed whose SHA-256 is not the epoch's commitment.
    SeedMismatch {
        /// The epoch revealed.
        epoch: u32,
        /// SHA-256 of the revealed seed.
        seed_hash: Hash,
        /// The epoch's commitment.
        commitment: Hash,
    },
    /// An action is pending (its first roll journaled, its `ActionResolved`
    /// not yet): only that action's further rolls and its resolution may
    /// follow (roll-forward). Anything else would leave a journaled roll
    /// behind, which is how dice would be peeked at and thrown away.
    ActionPending,
}

impl Violation {
    /// The field of the `BattleEvent` at fault (`dice_rolled.nonce` …), or
    /// `None` when it is the event itself: its kind, in this place.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            Violation::NotOpened | Violation::AlreadyOpened | Violation::Closed => None,
            Violation::EpochMismatch { event, .. } | Violation::EpochRevealed { event, .. } => {
                Some(event.epoch_field())
            }
            Violation::EpochNotRevealed { .. } => Some(EpochEvent::SeedCommitted.epoch_field()),
            Violation::NonceOutOfOrder { .. } => Some("dice_rolled.nonce"),
            Violation::SeedMismatch { .. } => Some("seed_revealed.server_seed"),
            Violation::ActionPending => None,
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::NotOpened => f.write_str("version 0 of a battle must be its BattleOpened"),
            Violation::AlreadyOpened => f.write_str("the battle is open already: BattleOpened only at version 0"),
            Violation::Closed => f.write_str(
                "the battle is closed: only the SeedRevealed of its last epoch, disputes and rulings may follow",
            ),
            Violation::EpochMismatch { event: EpochEvent::SeedCommitted, epoch, current } => {
                write!(f, "epoch {epoch} is not the next epoch after the current {current}")
            }
            Violation::EpochMismatch { epoch, current, .. } => {
                write!(f, "epoch {epoch} is not the battle's current epoch {current}")
            }
            Violation::EpochRevealed { event: EpochEvent::DiceRolled, epoch } => {
                write!(f, "the seed of epoch {epoch} is revealed: no roll may use it any more")
            }
            Violation::EpochRevealed { epoch, .. } => write!(f, "the seed of epoch {epoch} is revealed already"),
            Violation::EpochNotRevealed { epoch, current } => {
                write!(f, "epoch {current} must be revealed before epoch {epoch} is committed")
            }
            Violation::NonceOutOfOrder { nonce, next } => {
                write!(f, "nonce {nonce} is not the battle's next nonce {next} (0, 1, 2 … with no gap or reuse)")
            }
            Violation::SeedMismatch { epoch, seed_hash, commitment } => write!(
                f,
                "SHA-256 of the seed is {}, but epoch {epoch} committed to {}",
                hex::encode(seed_hash),
                hex::encode(commitment)
            ),
            Violation::ActionPending => f.write_str(
                "an action of this battle is rolled but not resolved: only its resolution (ActionResolved) may \
                 follow its rolls",
            ),
        }
    }
}

impl std::error::Error for Violation {}

/// A battle stream's state after the events folded so far. The default is
/// a stream without events.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamState {
    /// Whether the `BattleOpened` is folded.
    pub opened: bool,
    /// The current epoch.
    pub epoch: u32,
    /// SHA-256 of the current epoch's seed, as committed.
    pub commitment: Hash,
    /// Whether the current epoch's seed is revealed.
    pub revealed: bool,
    /// The nonce the next `DiceRolled` must carry.
    pub next_nonce: u64,
    /// Whether the battle is closed.
    pub closed: bool,
    /// Whether an action is pending: rolled (a `DiceRolled` with
    /// `for_action`) and not yet resolved.
    pub pending: bool,
}

impl StreamState {
    /// The current epoch is committed and its seed not yet revealed: rolls
    /// may be drawn from it.
    pub fn epoch_secret(&self) -> bool {
        self.opened && !self.revealed
    }

    /// Folds `event` if it breaks no rule; else the first rule it breaks
    /// (in the order of [`Self::violations`]), and the state is unchanged.
    pub fn apply(&mut self, event: &StreamEvent) -> Result<(), Violation> {
        if let Some(broken) = self.violations(event).into_iter().next() {
            return Err(broken);
        }
        self.advance(event);
        Ok(())
    }

    /// Every rule `event` breaks here, in this order: the opening; the
    /// close; then the event's epoch, whether that epoch is revealed, and
    /// its nonce or seed. An event before the opening is judged against
    /// the empty battle (epoch 0, nonce 0) too, so that a reader that goes
    /// on after [`Violation::NotOpened`] still sees the rest. Empty when
    /// the event may follow.
    pub fn violations(&self, event: &StreamEvent) -> Vec<Violation> {
        let mut broken = Vec::new();
        match event {
            StreamEvent::Opened { .. } if self.opened => broken.push(Violation::AlreadyOpened),
            StreamEvent::Opened { .. } => {}
            _ if !self.opened => broken.push(Violation::NotOpened),
            _ => {}
        }
        // A closed battle takes its last reveal and, on appeal, disputes and
        // rulings: they change no dice and no epoch, so the seed revealed at
        // the close still re-derives every roll.
        if self.closed && !matches!(event, StreamEvent::Revealed { .. } | StreamEvent::Appeal) {
            broken.push(Violation::Closed);
        }
        // A pending action takes its own further rolls (journaled with its
        // first, in one append) and its resolution; nothing else.
        if self.pending && !matches!(event, StreamEvent::Rolled { opens_action: false, .. } | StreamEvent::Resolved) {
            broken.push(Violation::ActionPending);
        }
        let current = self.epoch;
        match *event {
            StreamEvent::Rolled { epoch, nonce, .. } => {
                if epoch != current {
                    broken.push(Violation::EpochMismatch { event: EpochEvent::DiceRolled, epoch, current });
                }
                if self.revealed {
                    broken.push(Violation::EpochRevealed { event: EpochEvent::DiceRolled, epoch });
                }
                if nonce != self.next_nonce {
                    broken.push(Violation::NonceOutOfOrder { nonce, next: self.next_nonce });
                }
            }
            StreamEvent::Revealed { epoch, seed_hash } => {
                if epoch != current {
                    broken.push(Violation::EpochMismatch { event: EpochEvent::SeedRevealed, epoch, current });
                }
                if self.revealed {
                    broken.push(Violation::EpochRevealed { event: EpochEvent::SeedRevealed, epoch });
                }
                if seed_hash != self.commitment {
                    broken.push(Violation::SeedMismatch { epoch, seed_hash, commitment: self.commitment });
                }
            }
            StreamEvent::Committed { epoch, .. } => {
                if current.checked_add(1) != Some(epoch) {
                    broken.push(Violation::EpochMismatch { event: EpochEvent::SeedCommitted, epoch, current });
                }
                if !self.revealed {
                    broken.push(Violation::EpochNotRevealed { epoch, current });
                }
            }
            StreamEvent::Opened { .. } | StreamEvent::Closed | StreamEvent::Appeal | StreamEvent::Resolved => {}
        }
        broken
    }

    /// Folds `event` as recorded, whether or not it breaks a rule: what a
    /// reader that reports rather than refuses goes on from. For an event
    /// that breaks none, the state [`Self::apply`] leaves. Otherwise: a
    /// second opening changes nothing; a commitment starts its epoch
    /// whatever its number; a roll's nonce counts as used, and so do all
    /// before it; a reveal of another epoch than the current one reveals
    /// nothing.
    pub fn advance(&mut self, event: &StreamEvent) {
        match *event {
            StreamEvent::Opened { commitment } if !self.opened => {
                *self = StreamState { opened: true, commitment, ..StreamState::default() };
            }
            StreamEvent::Opened { .. } => {}
            StreamEvent::Committed { epoch, commitment } => {
                self.epoch = epoch;
                self.commitment = commitment;
                self.revealed = false;
            }
            StreamEvent::Rolled { nonce, opens_action, .. } => {
                self.next_nonce = self.next_nonce.max(nonce).saturating_add(1);
                self.pending |= opens_action;
            }
            StreamEvent::Revealed { epoch, .. } if epoch == self.epoch => self.revealed = true,
            StreamEvent::Revealed { .. } => {}
            StreamEvent::Closed => self.closed = true,
            StreamEvent::Resolved => self.pending = false,
            StreamEvent::Appeal => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use battlelog_proto::v1::{BattleOpened, DiceRolled, SeedCommitted, SeedRevealed};

    use super::*;

    // The known-answer pair of `vectors/rolls.json` (docs/protocol.md §1): a
    // server seed and its commitment, computed by an independent
    // implementation.
    const VECTOR_SEED: &str = "efa1f375d76194fa51a3556a97e641e61685f914d446979da50a551a4333ffd7";
    const VECTOR_COMMITMENT: &str = "315fc33dbdb63592565e8ed77eff5d3cf512638ea9b26631b7277cc73a3fc395";

    fn bytes(hex_text: &str) -> Hash {
        hex::decode(hex_text).expect("hex").try_into().expect("32 bytes")
    }

    /// The seed of `epoch` in these tests: 32 bytes of `epoch + 1`.
    fn seed(epoch: u32) -> Hash {
        [epoch as u8 + 1; 32]
    }

    /// docs/protocol.md §1: the commitment is SHA-256 of the seed.
    fn commitment(epoch: u32) -> Hash {
        Sha256::digest(seed(epoch)).into()
    }

    fn opened() -> StreamEvent {
        StreamEvent::Opened { commitment: commitment(0) }
    }

    fn committed(epoch: u32) -> StreamEvent {
        StreamEvent::Committed { epoch, commitment: commitment(epoch) }
    }

    fn rolled(epoch: u32, nonce: u64) -> StreamEvent {
        StreamEvent::Rolled { epoch, nonce, opens_action: false }
    }

    /// The first roll of an action: it carries the action (`for_action`).
    fn rolled_for_action(epoch: u32, nonce: u64) -> StreamEvent {
        StreamEvent::Rolled { epoch, nonce, opens_action: true }
    }

    /// A reveal of `epoch` with the seed of `of`.
    fn revealed_with(epoch: u32, of: u32) -> StreamEvent {
        StreamEvent::Revealed { epoch, seed_hash: commitment(of) }
    }

    fn revealed(epoch: u32) -> StreamEvent {
        revealed_with(epoch, epoch)
    }

    /// Applies `events` from an empty stream; the first refusal with its
    /// index.
    fn fold(events: &[StreamEvent]) -> Result<StreamState, (usize, Violation)> {
        let mut state = StreamState::default();
        for (i, event) in events.iter().enumerate() {
            state.apply(event).map_err(|v| (i, v))?;
        }
        Ok(state)
    }

    /// The rule `last` breaks after `events`, which must all fold; the
    /// state must not change.
    fn refused(events: &[StreamEvent], last: StreamEvent) -> Violation {
        let mut state = fold(events).expect("the events before fold");
        let before = state;
        let violation = state.apply(&last).expect_err("refused");
        assert_eq!(state, before, "a refused event changes nothing");
        violation
    }

    #[test]
    fn a_whole_battle_folds_to_its_last_epoch_revealed_and_closed() {
        let state = fold(&[
            opened(),
            rolled(0, 0),
            rolled(0, 1),
            StreamEvent::Resolved,
            revealed(0),
            committed(1),
            rolled(1, 2),
            StreamEvent::Resolved,
            StreamEvent::Appeal,
            StreamEvent::Closed,
            revealed(1),
            StreamEvent::Appeal,
            StreamEvent::Appeal,
        ])
        .expect("a legal battle");
        // Three rolls: nonces 0, 1, 2, so 3 is next; epoch 1 committed to
        // the seed of epoch 1 and revealed at the close.
        let expected = StreamState {
            opened: true,
            epoch: 1,
            commitment: commitment(1),
            revealed: true,
            next_nonce: 3,
            closed: true,
            pending: false,
        };
        assert_eq!(state, expected);
        assert!(!state.epoch_secret());
    }

    #[test]
    fn a_battle_opens_first_and_once() {
        assert_eq!(StreamState::default(), StreamState { opened: false, ..StreamState::default() });
        assert!(!StreamState::default().epoch_secret(), "nothing to roll from before the opening");
        for first in [rolled(0, 0), committed(1), revealed(0), StreamEvent::Closed, StreamEvent::Appeal] {
            assert_eq!(refused(&[], first.clone()), Violation::NotOpened, "{first:?}");
        }
        let state = fold(&[opened()]).expect("opened");
        assert_eq!(
            state,
            StreamState {
                opened: true,
                epoch: 0,
                commitment: commitment(0),
                revealed: false,
                next_nonce: 0,
                closed: false,
                pending: false
            }
        );
        assert!(state.epoch_secret(), "epoch 0 is committed by the opening");
        assert_eq!(refused(&[opened()], opened()), Violation::AlreadyOpened);
        let closed = [opened(), StreamEvent::Closed];
        assert_eq!(refused(&closed, opened()), Violation::AlreadyOpened);
        let state = fold(&closed).expect("closed");
        assert_eq!(state.violations(&opened()), vec![Violation::AlreadyOpened, Violation::Closed]);
    }

    #[test]
    fn nonces_run_0_1_2_across_epochs_with_no_gap_or_reuse() {
        assert_eq!(refused(&[opened()], rolled(0, 1)), Violation::NonceOutOfOrder { nonce: 1, next: 0 });
        let two = [opened(), rolled(0, 0), rolled(0, 1)];
        assert!(fold(&two).is_ok());
        assert_eq!(refused(&two, rolled(0, 3)), Violation::NonceOutOfOrder { nonce: 3, next: 2 }, "a gap");
        assert_eq!(refused(&two, rolled(0, 1)), Violation::NonceOutOfOrder { nonce: 1, next: 2 }, "a reuse");
        let new_epoch = [opened(), rolled(0, 0), revealed(0), committed(1)];
        assert_eq!(
            refused(&new_epoch, rolled(1, 0)),
            Violation::NonceOutOfOrder { nonce: 0, next: 1 },
            "a new epoch does not restart nonces"
        );
        assert_eq!(fold(&[new_epoch.to_vec(), vec![rolled(1, 1)]].concat()).map(|s| s.next_nonce), Ok(2));
    }

    #[test]
    fn rolls_use_the_current_epoch_while_its_seed_is_secret() {
        use EpochEvent::DiceRolled as Roll;
        assert_eq!(refused(&[opened()], rolled(1, 0)), Violation::EpochMismatch { event: Roll, epoch: 1, current: 0 });
        let second = [opened(), revealed(0), committed(1)];
        assert_eq!(refused(&second, rolled(0, 0)), Violation::EpochMismatch { event: Roll, epoch: 0, current: 1 });
        assert_eq!(refused(&second, rolled(2, 0)), Violation::EpochMismatch { event: Roll, epoch: 2, current: 1 });
        assert!(fold(&[second.to_vec(), vec![rolled(1, 0)]].concat()).is_ok());
        // Revealing ends the epoch: no roll may use it any more.
        assert_eq!(refused(&[opened(), revealed(0)], rolled(0, 0)), Violation::EpochRevealed { event: Roll, epoch: 0 });
    }

    #[test]
    fn a_reveal_is_the_seed_of_the_current_epoch_and_comes_once() {
        use EpochEvent::SeedRevealed as Reveal;
        // The protocol's own vector: SHA-256 of the seed is the commitment.
        let opened_at_vector = StreamEvent::Opened { commitment: bytes(VECTOR_COMMITMENT) };
        let vector_reveal = StreamEvent::of(&Event::SeedRevealed(SeedRevealed {
            epoch: 0,
            server_seed: VECTOR_SEED.into(),
            credential: None,
        }))
        .expect("well formed");
        let state = fold(&[opened_at_vector.clone(), vector_reveal]).expect("the vector's seed reveals");
        assert!(state.revealed && !state.epoch_secret());
        assert_eq!(
            refused(&[opened_at_vector], revealed(0)),
            Violation::SeedMismatch { epoch: 0, seed_hash: commitment(0), commitment: bytes(VECTOR_COMMITMENT) }
        );
        // Epoch 1's commitment is its SeedCommitted's, not the opening's.
        let second = [opened(), revealed(0), committed(1)];
        assert_eq!(
            refused(&second, revealed_with(1, 0)),
            Violation::SeedMismatch { epoch: 1, seed_hash: commitment(0), commitment: commitment(1) }
        );
        assert_eq!(refused(&[opened()], revealed(1)), Violation::EpochMismatch { event: Reveal, epoch: 1, current: 0 });
        assert_eq!(refused(&second, revealed(0)), Violation::EpochMismatch { event: Reveal, epoch: 0, current: 1 });
        assert_eq!(
            refused(&[opened(), revealed(0)], revealed(0)),
            Violation::EpochRevealed { event: Reveal, epoch: 0 }
        );
    }

    #[test]
    fn the_next_epoch_is_committed_only_once_the_current_one_is_revealed() {
        use EpochEvent::SeedCommitted as Commit;
        assert_eq!(refused(&[opened()], committed(1)), Violation::EpochNotRevealed { epoch: 1, current: 0 });
        let revealed0 = [opened(), revealed(0)];
        assert_eq!(refused(&revealed0, committed(2)), Violation::EpochMismatch { event: Commit, epoch: 2, current: 0 });
        assert_eq!(refused(&revealed0, committed(0)), Violation::EpochMismatch { event: Commit, epoch: 0, current: 0 });
        let state = fold(&[revealed0.to_vec(), vec![committed(1)]].concat()).expect("the next epoch");
        assert_eq!((state.epoch, state.commitment, state.revealed), (1, commitment(1), false));
        assert!(state.epoch_secret());
        let at_max = StreamState { opened: true, epoch: u32::MAX, revealed: true, ..StreamState::default() };
        assert_eq!(
            at_max.violations(&committed(0)),
            vec![Violation::EpochMismatch { event: Commit, epoch: 0, current: u32::MAX }],
            "no epoch follows the last one"
        );
    }

    #[test]
    fn after_the_close_only_its_reveal_and_the_appeal_follow() {
        let closed = [opened(), rolled(0, 0), StreamEvent::Resolved, StreamEvent::Closed];
        for after in [rolled(0, 1), StreamEvent::Resolved, StreamEvent::Closed, committed(1)] {
            assert_eq!(refused(&closed, after.clone()), Violation::Closed, "{after:?}");
        }
        assert!(fold(&[closed.to_vec(), vec![StreamEvent::Appeal, revealed(0), StreamEvent::Appeal]].concat()).is_ok());
        let after_reveal = [closed.to_vec(), vec![revealed(0)]].concat();
        assert_eq!(refused(&after_reveal, committed(1)), Violation::Closed, "no new epoch after the close");
        assert_eq!(
            refused(&after_reveal, revealed(0)),
            Violation::EpochRevealed { event: EpochEvent::SeedRevealed, epoch: 0 },
            "only one reveal"
        );
    }

    #[test]
    fn violations_lists_every_rule_broken_in_order_and_advance_goes_on_as_recorded() {
        let state = fold(&[opened(), rolled(0, 0), revealed(0), StreamEvent::Closed]).expect("closed");
        assert_eq!(
            state.violations(&rolled(2, 7)),
            vec![
                Violation::Closed,
                Violation::EpochMismatch { event: EpochEvent::DiceRolled, epoch: 2, current: 0 },
                Violation::EpochRevealed { event: EpochEvent::DiceRolled, epoch: 2 },
                Violation::NonceOutOfOrder { nonce: 7, next: 1 },
            ]
        );
        // Before the opening, the rest is judged against the empty battle.
        assert_eq!(
            StreamState::default().violations(&rolled(0, 2)),
            vec![Violation::NotOpened, Violation::NonceOutOfOrder { nonce: 2, next: 0 }]
        );
        let mut recorded = state;
        recorded.advance(&rolled(2, 7));
        assert_eq!(recorded.next_nonce, 8, "nonce 7 and all before it count as used");
        recorded.advance(&rolled(2, 3));
        assert_eq!(recorded.next_nonce, 9, "a reused nonce still counts one roll");
        recorded.advance(&committed(5));
        assert_eq!((recorded.epoch, recorded.revealed), (5, false), "a commitment starts its epoch");
        recorded.advance(&revealed(4));
        assert!(!recorded.revealed, "a reveal of another epoch reveals nothing");
        recorded.advance(&StreamEvent::Opened { commitment: [9; 32] });
        assert_eq!((recorded.epoch, recorded.commitment), (5, commitment(5)), "a second opening changes nothing");
    }

    #[test]
    fn commitments_and_seeds_are_64_lowercase_hex_digits() {
        assert_eq!(digest(VECTOR_COMMITMENT), Some(bytes(VECTOR_COMMITMENT)));
        for bad in
            [VECTOR_COMMITMENT.to_uppercase(), VECTOR_COMMITMENT[1..].to_owned(), format!("{VECTOR_COMMITMENT}0")]
        {
            assert_eq!(digest(&bad), None, "{bad}");
        }
        assert_eq!(digest(&"g".repeat(64)), None);
        let opened = Event::BattleOpened(BattleOpened { commitment: "ab".into(), ..Default::default() });
        let err = StreamEvent::of(&opened).unwrap_err();
        assert_eq!(
            (err.field, err.to_string().as_str()),
            ("battle_opened.commitment", "\"ab\" is not 64 lowercase hex digits")
        );
        let committed =
            Event::SeedCommitted(SeedCommitted { epoch: 1, commitment: String::new(), ..Default::default() });
        assert_eq!(StreamEvent::of(&committed).unwrap_err().field, "seed_committed.commitment");
        let reveal = Event::SeedRevealed(SeedRevealed { epoch: 0, server_seed: "x".into(), credential: None });
        assert_eq!(StreamEvent::of(&reveal).unwrap_err().field, "seed_revealed.server_seed");
        let roll = Event::DiceRolled(DiceRolled { epoch: 3, nonce: 9, ..Default::default() });
        assert_eq!(StreamEvent::of(&roll), Ok(StreamEvent::Rolled { epoch: 3, nonce: 9, opens_action: false }));
        let first_of_an_action = Event::DiceRolled(DiceRolled {
            epoch: 3,
            nonce: 9,
            for_action: Some(Default::default()),
            ..Default::default()
        });
        assert_eq!(StreamEvent::of(&first_of_an_action), Ok(rolled_for_action(3, 9)));
    }

    /// Roll-forward (ARCHITECTURE.md, invariant 8): from an action's first roll
    /// to its resolution, only that action's further rolls and its
    /// resolution may follow; every other event is refused, and the state
    /// is unchanged by the refusal.
    #[test]
    fn a_pending_action_takes_only_its_own_rolls_and_its_resolution() {
        let pending = [opened(), rolled_for_action(0, 0), rolled(0, 1)];
        let state = fold(&pending).expect("an action's rolls, the first carrying the action");
        assert!(state.pending);
        for next in [rolled_for_action(0, 2), StreamEvent::Appeal, StreamEvent::Closed, revealed(0), committed(1)] {
            assert_eq!(refused(&pending, next.clone()), Violation::ActionPending, "{next:?} while pending");
        }
        let resolved = fold(&[opened(), rolled_for_action(0, 0), rolled(0, 1), StreamEvent::Resolved])
            .expect("resolved with its rolls");
        assert!(!resolved.pending);
        // Once resolved, the battle goes on as before.
        let after = [opened(), rolled_for_action(0, 0), StreamEvent::Resolved];
        for next in [rolled_for_action(0, 1), StreamEvent::Appeal, StreamEvent::Closed, revealed(0)] {
            let mut events = after.to_vec();
            events.push(next.clone());
            fold(&events).unwrap_or_else(|e| panic!("{next:?} after the resolution: {e:?}"));
        }
        // Rolls without the action (journaled before roll-forward, or free
        // rolls asked of the roller directly) leave nothing pending.
        let legacy = fold(&[opened(), rolled(0, 0), StreamEvent::Appeal]).expect("a legacy roll, then a dispute");
        assert!(!legacy.pending);
        // A reader that reports rather than refuses goes on as recorded.
        let mut reader = fold(&pending).expect("pending");
        assert_eq!(reader.violations(&StreamEvent::Closed), vec![Violation::ActionPending]);
        reader.advance(&StreamEvent::Resolved);
        assert!(!reader.pending);
    }

    #[test]
    fn each_violation_names_its_field() {
        let fields: Vec<Option<&str>> = [
            Violation::NotOpened,
            Violation::Closed,
            Violation::EpochMismatch { event: EpochEvent::SeedCommitted, epoch: 2, current: 0 },
            Violation::EpochRevealed { event: EpochEvent::SeedRevealed, epoch: 0 },
            Violation::EpochNotRevealed { epoch: 1, current: 0 },
            Violation::NonceOutOfOrder { nonce: 1, next: 0 },
            Violation::SeedMismatch { epoch: 0, seed_hash: [0; 32], commitment: [1; 32] },
        ]
        .iter()
        .map(Violation::field)
        .collect();
        assert_eq!(
            fields,
            [
                None,
                None,
                Some("seed_committed.epoch"),
                Some("seed_revealed.epoch"),
                Some("seed_committed.epoch"),
                Some("dice_rolled.nonce"),
                Some("seed_revealed.server_seed")
            ]
        );
    }
}
