//! The sweeper of pending actions (roll-forward, ARCHITECTURE.md, invariant 8):
//! an action whose rolls are journaled and whose resolution is not — its
//! resolver crashed between the two, or its journal append failed — is
//! finished by the next command of its battle; this finishes the ones of
//! battles nobody touches. The journal's battle index says which battles
//! have one (`Journal.ListPendingActions`), so a resolver that restarted
//! after a crash finds what its predecessor left.
//!
//! Every replica may sweep: finishing is a resolution appended with the
//! stream's exact expected version under the action's own key, so two
//! sweepers, or a sweeper and the action's own `Act`, write it once.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use battlelog_proto::v1::PendingActionsRequest;
use battlelog_stream::downstream;
use tonic::Status;

use super::ResolverService;

/// How often the sweeper asks the journal, and how long after its roll an
/// action is left to its own `Act` before the sweeper finishes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PendingSweep {
    /// `pending_sweep_ms`.
    pub every: Duration,
    /// `pending_grace_ms`.
    pub grace: Duration,
}

/// The sweep when the configuration names no other: every 5 s, for actions
/// rolled 2 s ago or more (an `Act`'s resolution follows its roll within
/// milliseconds; a sweeper that came sooner would only race it).
pub const DEFAULT_PENDING_SWEEP: PendingSweep =
    PendingSweep { every: Duration::from_secs(5), grace: Duration::from_secs(2) };

impl ResolverService {
    /// Sweeps every `every` until the service begins to shut down.
    pub async fn sweep_pending(self) {
        let mut stopping = self.stopping.subscribe();
        let mut ticks = tokio::time::interval(self.sweep.every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = ticks.tick() => {}
                _ = stopping.wait_for(|stopping| *stopping) => return,
            }
            match self.sweep_once().await {
                Ok(0) => {}
                Ok(finished) => tracing::info!(finished, "finished pending actions nobody else did"),
                // A journal from before roll-forward (a rolling upgrade)
                // has no such list: nothing to sweep there.
                Err(status) if status.code() == tonic::Code::Unimplemented => {}
                Err(status) => tracing::warn!(code = ?status.code(), "sweeping pending actions: {}", status.message()),
            }
        }
    }

    /// One sweep: every battle whose pending action was rolled at least
    /// `grace` ago is finished. Answers how many were.
    pub async fn sweep_once(&self) -> Result<usize, Status> {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        let before = now.saturating_sub(self.sweep.grace);
        // 0 asks for every pending action; the epoch itself is never a roll's time.
        let rolled_before_unix_micros = i64::try_from(before.as_micros()).unwrap_or(i64::MAX).max(1);
        let pending = self
            .journal
            .clone()
            .list_pending_actions(PendingActionsRequest { rolled_before_unix_micros, max_count: 0 })
            .await
            .map_err(|status| downstream("journal", status))?
            .into_inner()
            .pending;
        let mut finished = 0;
        for action in pending {
            match self.finish_pending(&action.battle_id).await {
                Ok(()) => finished += 1,
                Err(status) => tracing::warn!(
                    battle_id = %action.battle_id,
                    version = action.version,
                    code = ?status.code(),
                    "cannot finish a pending action: {}",
                    status.message()
                ),
            }
        }
        Ok(finished)
    }
}
