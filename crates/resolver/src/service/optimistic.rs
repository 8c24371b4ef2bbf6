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
//! - An action rolled and not yet resolved (the view's `pending`) is
//!   finished first, with the dice journaled for it, before the command is
//!   tried (roll-forward, ARCHITECTURE.md, invariant 8): no command of a battle is
//!   taken over a pending action, so a new request id never gets a new
//!   roll while one is pending.
//! - After [`MAX_ATTEMPTS`] tries the command gives up with `BattleBusy`
//!   (the caller retries with the same request id, which finds whatever
//!   was recorded).

use battlelog_proto::error::{BattleReason, Error, LimitReason};
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

    /// Resolves when the command's caller has gone away, for a command that
    /// outlives its call (`Act`): then it stops waiting for its battle. A
    /// command that ends with its call never resolves this.
    async fn caller_gone(&mut self) {
        std::future::pending().await
    }
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

/// The caller of a command that outlives its call went away before the
/// command did anything (`CALLER_GONE`): nobody reads this answer, but the
/// access line and the metrics count it.
pub(super) fn caller_gone(message: &str) -> Status {
    Error::new(LimitReason::CallerGone, message).into_status()
}

/// The battle cannot take the request now; the same request id may retry.
pub(super) fn busy(battle_id: &str, message: String) -> Status {
    Error::new(BattleReason::BattleBusy, message).with("battle_id", battle_id).into_status()
}

impl ResolverService {
    /// Runs `command` on `battle_id`'s view until a try answers, under the
    /// rules of this module.
    pub(super) async fn optimistic<C: Command>(&self, battle_id: &str, mut command: C) -> Result<C::Answer, Status> {
        let mut view = tokio::select! {
            view = self.views.lock(battle_id) => view,
            () = command.caller_gone() => return Err(caller_gone("the caller went away before its turn came")),
        };
        // An empty view has never been read (or was dropped): read it first.
        let cold = view.next_version() == 0;
        let mut battle = Trying { service: self, battle_id, view: &mut view, caught_up: false };
        for attempt in 0..MAX_ATTEMPTS {
            if cold || attempt > 0 {
                battle.catch_up().await?;
            }
            if battle.view.pending.is_some() && !battle.roll_forward().await? {
                continue;
            }
            match command.attempt(&mut battle).await? {
                Try::Done(answer) => return Ok(answer),
                Try::Refused(refusal) if battle.caught_up => return Err(refusal),
                Try::Refused(_) | Try::Stale => {}
            }
        }
        Err(busy(battle_id, format!("battle {battle_id} is too busy; retry with the same request_id")))
    }

    /// Finishes `battle_id`'s pending action, if it has one, from the
    /// journal as it stands: for the calls that write through the roller
    /// (a seed's reveal) and for the sweeper of battles nobody touches.
    pub(super) async fn finish_pending(&self, battle_id: &str) -> Result<(), Status> {
        let mut view = self.views.lock(battle_id).await;
        let mut battle = Trying { service: self, battle_id, view: &mut view, caught_up: false };
        for _ in 0..MAX_ATTEMPTS {
            battle.catch_up().await?;
            if battle.roll_forward().await? {
                return Ok(());
            }
        }
        Err(busy(battle_id, format!("battle {battle_id} is too busy to finish its pending action; retry")))
    }
}
