//! What the journal's benchmarks append, shared by `append` and
//! `transparency`: a bench battle's events, and the figures of many
//! clients' latencies.

use std::time::{Duration, Instant};

use battlelog_proto::v1 as pb;
use battlelog_test_support::bench::{Figures, figures};
use tokio::task::JoinHandle;

/// About the payload bytes of one event.
pub const PAYLOAD: usize = 100;

/// Version 0 of a bench battle.
pub fn opening() -> pb::NewEvent {
    let commitment = "0".repeat(64);
    let opened = pb::BattleOpened { ruleset: "pokemon-d6@1".into(), commitment, ..Default::default() };
    battlelog_proto::battle::new_event(pb::battle_event::Event::BattleOpened(opened), String::new())
}

/// A one-d20 roll with this nonce, its purpose padded so that the payload
/// is `PAYLOAD` bytes at nonce 0 (a byte or two more for larger nonces).
pub fn roll(nonce: u64) -> pb::NewEvent {
    let event = |purpose: String| {
        pb::battle_event::Event::DiceRolled(pb::DiceRolled {
            epoch: 0,
            nonce,
            expression: "1d20".into(),
            purpose,
            actor: "bench".into(),
            dice: vec![pb::Die { sides: 20, value: 17, kept: true, rerolled: false, exploded: false }],
            total: 17,
            error: String::new(),
            for_action: None,
        })
    };
    let bare = battlelog_proto::battle::new_event(event(String::new()), String::new()).payload.len();
    battlelog_proto::battle::new_event(event("p".repeat(PAYLOAD.saturating_sub(bare + 1))), String::new())
}

pub fn direct(event: pb::NewEvent) -> battlelog_journal::NewEvent {
    battlelog_journal::NewEvent { event_type: event.event_type, payload: event.payload, idempotency_key: None }
}

/// The figures of every client's latencies, over the time since `start`.
pub async fn gather(tasks: Vec<JoinHandle<Vec<Duration>>>, start: Instant) -> Figures {
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("client"));
    }
    figures(all, start.elapsed())
}
