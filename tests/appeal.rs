//! System tests of the appeal window (issue 12): a closed battle still takes
//! disputes and rulings until its close, as the journal recorded it, is
//! `appeal_window_secs` old; then it is final. The real journal, roller and
//! resolver binaries, sled on disk, gRPC on loopback, and the real
//! `battlelog` CLI for `export` and `audit --file`.

mod stack;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use battlelog_proto::v1 as pb;
use battlelog_proto::v1::battle_event::Event;
use battlelog_test_support::{StartOptions, poll_until};
use serde_json::{Value, json};
use stack::*;
use tonic::{Code, Status};
use tonic_types::StatusExt;

/// Who [`TestAuth::judge`]'s token names: the ruling must carry it.
const JUDGE: &str = "judge-jenny";

/// A Pokémon battle with one attack, disputed before the close, then closed:
/// (the attack's version, the close's version).
async fn disputed_then_closed(stack: &Stack, battle_id: &str) -> (u64, u64) {
    let mut forum = resolver_client(&stack.resolver).await;
    open(&mut forum, battle_id, "pokemon-d6@1", json!([{"id": "pikachu"}, {"id": "meowth"}]), "appeal seed").await;
    let attack = json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Tackle", "power": 40});
    let attacked = act(&mut forum, battle_id, &attack, "a-1").await.expect("attack");
    forum.dispute(dispute(battle_id, attacked.version, "before-close")).await.expect("a dispute before the close");
    let closed = close(&mut forum, battle_id).await;
    (attacked.version, closed.version)
}

fn dispute(battle_id: &str, refers_to: u64, request_id: &str) -> pb::DisputeRequest {
    pb::DisputeRequest {
        battle_id: battle_id.into(),
        by: "meowth".into(),
        refers_to,
        reason: "I was behind a rock".into(),
        request_id: request_id.into(),
    }
}

/// A ruling that turns the attack into a miss (RULES.md 1.1: a miss is
/// `{"result": "miss", "multiplier": "0", "damage": 0}`).
fn miss_ruling(battle_id: &str, refers_to: u64, request_id: &str) -> pb::RuleRequest {
    pb::RuleRequest {
        battle_id: battle_id.into(),
        judge: String::new(),
        refers_to,
        text: "the rock was big enough: a miss".into(),
        r#override: Some(obj(json!({"result": "miss", "multiplier": "0", "damage": 0}))),
        request_id: request_id.into(),
    }
}

/// The `PreconditionFailure` violation type of a refusal.
fn precondition(status: &Status) -> String {
    let details = status.get_error_details();
    let failure = details.precondition_failure().unwrap_or_else(|| panic!("no PreconditionFailure: {status:?}"));
    failure.violations.first().map(|v| v.r#type.clone()).unwrap_or_default()
}

async fn get_battle(stack: &Stack, battle_id: &str) -> pb::GetBattleResponse {
    let mut forum = resolver_client(&stack.resolver).await;
    let request = pb::GetBattleRequest { battle_id: battle_id.into(), at_version: None };
    forum.get_battle(request).await.expect("get battle").into_inner()
}

/// Acceptance: dispute → close → a ruling with an override, inside the
/// (default, 14-day) window, is journaled after the close, shows in
/// `GetBattle` and the export with the judge's identity, and the battle
/// still audits clean (RPC and `audit --file`); actions stay refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_ruling_after_the_close_within_the_window_is_journaled_and_audits_clean() {
    let stack = Stack::start("appeal-open", false).await;
    let battle_id = "appeal-within";
    let (attack_version, close_version) = disputed_then_closed(&stack, battle_id).await;
    let closed = get_battle(&stack, battle_id).await;
    assert!(closed.closed, "{closed:?}");

    let mut judge = judge_client(&stack.resolver).await;
    let ruled = judge.rule(miss_ruling(battle_id, attack_version, "r-after-close")).await.expect("ruling").into_inner();
    // close, its reveal, then the ruling.
    assert_eq!(ruled.version, close_version + 2, "the ruling follows the close and its reveal");
    let mut forum = resolver_client(&stack.resolver).await;
    let disputed = forum.dispute(dispute(battle_id, attack_version, "after-close")).await.expect("a dispute on appeal");
    assert_eq!(disputed.into_inner().version, ruled.version + 1);
    // The same request again answers what was journaled, and appends nothing.
    let again = judge.rule(miss_ruling(battle_id, attack_version, "r-after-close")).await.expect("a retry");
    assert_eq!(again.into_inner().version, ruled.version);

    let after = get_battle(&stack, battle_id).await;
    assert!(after.closed && after.version == ruled.version + 1, "{after:?}");
    let action = json!({"type": "pass", "actor": "pikachu"});
    let late = act(&mut forum, battle_id, &action, "act-after-close").await.unwrap_err();
    assert_eq!((late.code(), precondition(&late)), (Code::FailedPrecondition, "BATTLE_CLOSED".into()), "{late:?}");

    let events = journaled(&stack, battle_id).await;
    assert_eq!(events.len() as u64, after.version + 1, "nothing else was appended");
    let Event::JudgeRuling(journaled_ruling) = &events[ruled.version as usize].event else {
        panic!("version {} is not the ruling: {:?}", ruled.version, events[ruled.version as usize].event);
    };
    assert_eq!((journaled_ruling.judge.as_str(), journaled_ruling.refers_to), (JUDGE, attack_version));

    assert_audit_rpc_ok(&mut forum, battle_id, events.len()).await;
    let file = stack.dir.path().join(format!("{battle_id}.jsonl"));
    let export = export_to(&stack.resolver.url(), battle_id, &file);
    let lines: Vec<Value> = export.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    let ruling_line = &lines[ruled.version as usize]["event"];
    assert_eq!(ruling_line["type"], json!("JudgeRuling"), "{ruling_line}");
    assert_eq!(ruling_line["judge"], json!(JUDGE), "{ruling_line}");
    assert_eq!(ruling_line["override"], json!({"result": "miss", "multiplier": "0", "damage": 0}), "{ruling_line}");
    assert_audit_file_verifies(&file, battle_id);
}

fn unix_micros_now() -> i64 {
    let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH).expect("a clock after 1970");
    i64::try_from(since_epoch.as_micros()).expect("micros fit i64")
}

/// With a 1-second window, once the journal's recorded close time is more
/// than a second old (the test waits for the clock, then calls), a ruling
/// and a dispute are refused with `BATTLE_FINAL`, naming the window's end,
/// and the stream's head does not move.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn after_the_window_the_battle_is_final() {
    let options = StartOptions {
        envs: vec![("BATTLELOG_RESOLVER_APPEAL_WINDOW_SECS".into(), "1".into())],
        ..StartOptions::default()
    };
    let stack = Stack::start_with("appeal-final", false, &options).await;
    let battle_id = "appeal-final";
    let (attack_version, close_version) = disputed_then_closed(&stack, battle_id).await;
    let before = journaled(&stack, battle_id).await;
    let closed_at = before[close_version as usize].record.recorded_at_unix_micros;
    assert!(matches!(before[close_version as usize].event, Event::BattleClosed(_)));
    let window_end = closed_at + 1_000_000;
    poll_until("the clock to pass the appeal window's end", Duration::from_secs(10), || async {
        (unix_micros_now() > window_end).then_some(())
    })
    .await;

    let mut judge = judge_client(&stack.resolver).await;
    let refused = judge.rule(miss_ruling(battle_id, attack_version, "r-too-late")).await.unwrap_err();
    assert_eq!((refused.code(), precondition(&refused)), (Code::FailedPrecondition, "BATTLE_FINAL".into()));
    // The window's end, RFC 3339 in UTC, as the journal's clock has it.
    let end_seconds = prost_types::Timestamp { seconds: window_end.div_euclid(1_000_000), nanos: 0 }.to_string();
    let end_prefix = end_seconds.trim_end_matches('Z');
    assert!(refused.message().contains(end_prefix), "names the window's end {end_prefix}: {:?}", refused.message());
    let mut forum = resolver_client(&stack.resolver).await;
    let refused = forum.dispute(dispute(battle_id, attack_version, "d-too-late")).await.unwrap_err();
    assert_eq!((refused.code(), precondition(&refused)), (Code::FailedPrecondition, "BATTLE_FINAL".into()));

    let after = journaled(&stack, battle_id).await;
    assert_eq!(after.len(), before.len(), "a refused appeal appends nothing");
    assert_eq!(after.last().map(|e| e.recorded.hash.clone()), before.last().map(|e| e.recorded.hash.clone()));
}
