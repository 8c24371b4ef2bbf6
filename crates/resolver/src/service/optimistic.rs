//! The optimistic command, which `Act`, `Dispute`, `Rule` and `Close`
//! share: fold, check, (roll,) resolve, append; and on a stale head, fold
//! again and retry.
//!
//! A command holds its battle's view (one command per battle at a time on
//! this replica; across replicas the expected version decides) and tries
//! on it, each try a [`Command::attempt`]. The rules of the loop live here,
//! once:
//!
//! - A warm view is trusted until the journal says otherwise: it is not
//!   read again before the first try. The roller's expected head and the
//!   append's expected version catch a stale one, and the try answers
//!   [`Try::Stale`]; the view is caught up and the command tried again.
//! - A refusal is only answered from a view read in this request: one from
//!   a warm view ([`Try::Refused`]) is confirmed by catching up and trying
//!   again.
//! - After [`MAX_ATTEMPTS`] tries the command gives up with `BattleBusy`
//!   (the caller retries with the same request id, which finds whatever
//!   was recorded).

use battlelog_proto::error::{BattleReason, Error};
use battlelog_stream::MAX_ATTEMPTS;
use tonic::Status;

use super::ResolverService;
use crate::view::BattleView;

/// What one try of a command came to.
pub(super) enum Try<A> {
    /// The command's answer: appended now, or recorded before (a replay).
    Done(A),
    /// The view refuses the command. Answered when the view was read in
    /// this request; otherwise the view is caught up and tried again.
    Refused(Status),
    /// The view was stale (another writer got in first, or what was
    /// appended did not fold): caught up and tried again.
    Stale,
}

/// A command that tries on a battle's view until it is answered.
pub(super) trait Command {
    type Answer;

    /// One try on `battle`'s view, as it stands: check, (roll,) resolve and
    /// append. An error ends the command at once, whatever the view.
    async fn attempt(&mut self, battle: &mut Trying<'_>) -> Result<Try<Self::Answer>, Status>;
}

/// A command's battle during its tries.
pub(super) struct Trying<'a> {
    pub(super) service: &'a ResolverService,
    pub(super) battle_id: &'a str,
    /// The battle as this replica folded it, held for the command.
    pub(super) view: &'a mut BattleView,
    /// Whether `view` was read from the journal in this request.
    caught_up: bool,
}

impl Trying<'_> {
    /// Folds whatever the journal holds past the view; from here on, a
    /// refusal of this view is the journal's own and is answered.
    pub(super) async fn catch_up(&mut self) -> Result<(), Status> {
        self.service.catch_up(self.battle_id, self.view).await?;
        self.caught_up = true;
        Ok(())
    }
}

/// The battle cannot take the request now; the same request id may retry.
pub(super) fn busy(battle_id: &str, message: String) -> Status {
    Error::new(BattleReason::BattleBusy, message).with("battle_id", battle_id).into_status()
}

impl ResolverService {
    /// Runs `command` on `battle_id`'s view until a try answers, under the
    /// rules of this module.
    pub(super) async fn optimistic<C: Command>(&self, battle_id: &str, mut command: C) -> Result<C::Answer, Status> {
        let mut view = self.views.lock(battle_id).await;
        // An empty view has never been read (or was dropped): read it first.
        let cold = view.next_version() == 0;
        let mut battle = Trying { service: self, battle_id, view: &mut view, caught_up: false };
        for attempt in 0..MAX_ATTEMPTS {
            if cold || attempt > 0 {
                battle.catch_up().await?;
            }
            match command.attempt(&mut battle).await? {
                Try::Done(answer) => return Ok(answer),
                Try::Refused(refusal) if battle.caught_up => return Err(refusal),
                Try::Refused(_) | Try::Stale => {}
            }
        }
        Err(busy(battle_id, format!("battle {battle_id} is too busy; retry with the same request_id")))
    }
}
