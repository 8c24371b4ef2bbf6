//! System tests of the appeal window (issue 12): a closed battle still takes
//! disputes and rulings until its close, as the journal recorded it, is
//! `appeal_window_secs` old; then it is final. The real journal, roller and
//! resolver binaries, sled on disk, gRPC on loopback, and the real
//! `battlelog` CLI for `export` and `audit --file`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use battlelog_proto::v1 as pb;
use battlelog_proto::v1::battle_event::Event;
use battlelog_test_support::stack::*;
use battlelog_test_support::{StartOptions, TestAuth, poll_until};
use serde_json::{Value, json};
use tonic::{Code, Status};
use tonic_types::StatusExt;

/// Who [`TestAuth::judge`]'s token names: the ruling must carry it.
const JUDGE: &str = "judge-jenny";

/// A Pokémon battle with one dodge, disputed before the close, then closed:
/// (the dodge's reply, the close's version).
async fn disputed_then_closed(stack: &Stack, battle_id: &str) -> (pb::ActResponse, u64) {
    let mut forum = resolver_client(&stack.resolver).await;
    open(&mut forum, battle_id, "pokemon-d6@1", json!([{"id": "pikachu"}, {"id": "meowth"}]), "appeal seed").await;
    let dodge = json!({"type": "dodge", "actor": "meowth", "incoming_damage": 40});
    let dodged = act(&mut forum, battle_id, &dodge, "a-1").await.expect("dodge");
    forum.dispute(dispute(battle_id, dodged.version, "before-close")).await.expect("a dispute before the close");
    let closed = close(&mut forum, battle_id).await;
    (dodged, closed.version)
}

fn dispute(battle_id: &str, refers_to: u64, request_id: &str) -> pb::DisputeRequest {
    pb::DisputeRequest {
        battle_id: battle_id.into(),
        by: "meowth".into(),
        refers_to,
        reason: "I was behind a rock".into(),
        request_id: request_id.into(),
        ..Default::default()
    }
}

/// A ruling that turns the dodge's `counted` (docs/rules.md §1.3) around: the
/// only override whose effect shows in the state (meowth's dodges used).
fn counted_ruling(battle_id: &str, refers_to: u64, counted: bool, request_id: &str) -> pb::RuleRequest {
    pb::RuleRequest {
        battle_id: battle_id.into(),
        judge: String::new(),
        refers_to,
        text: "the rock was in the way: the dodge counts the other way".into(),
        r#override: Some(obj(json!({"counted": !counted}))),
        request_id: request_id.into(),
        ..Default::default()
    }
}

/// The `ErrorInfo` reason of a refusal, in battlelog's one domain.
fn precondition(status: &Status) -> String {
    let details = status.get_error_details();
    let info = details.error_info().unwrap_or_else(|| panic!("no ErrorInfo: {status:?}"));
    assert_eq!(info.domain, "battlelog.dev", "{status:?}");
    info.reason.clone()
}

async fn get_battle(stack: &Stack, battle_id: &str, at_version: Option<u64>) -> pb::GetBattleResponse {
    let mut forum = resolver_client(&stack.resolver).await;
    let request = pb::GetBattleRequest { battle_id: battle_id.into(), at_version };
    forum.get_battle(request).await.expect("get battle").into_inner()
}

/// Meowth's dodges used in a `GetBattle` state.
fn dodges_used(battle: &pb::GetBattleResponse) -> Value {
    struct_json(battle.state.as_ref())["pokemon"]["meowth"]["dodges_used"].clone()
}

/// Acceptance: dispute → close → a ruling with an override, inside the
/// (default, 14-day) window, is journaled after the close; its override
/// changes `GetBattle`'s state from its version on (not as of the close);
/// the export and `battlelog replay` show it with the judge's identity; the
/// battle still audits clean (RPC and `audit --file`); actions stay refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_ruling_after_the_close_within_the_window_is_journaled_and_audits_clean() {
    let stack = Stack::start("appeal-open", false).await;
    let battle_id = "appeal-within";
    let (dodged, close_version) = disputed_then_closed(&stack, battle_id).await;
    let (_, counted) = pokemon_dodge(faces(&dodged)[0]);
    let closed = get_battle(&stack, battle_id, None).await;
    assert!(closed.closed, "{closed:?}");
    assert_eq!(dodges_used(&closed), json!(u64::from(counted)), "before the ruling: {closed:?}");

    let mut judge = judge_client(&stack.resolver).await;
    let ruling = counted_ruling(battle_id, dodged.version, counted, "r-after-close");
    let ruled = judge.rule(ruling.clone()).await.expect("a ruling after the close").into_inner();
    // close, its reveal, then the ruling.
    assert_eq!(ruled.version, close_version + 2, "the ruling follows the close and its reveal");
    let mut forum = resolver_client(&stack.resolver).await;
    let disputed = forum.dispute(dispute(battle_id, dodged.version, "after-close")).await.expect("a dispute on appeal");
    assert_eq!(disputed.into_inner().version, ruled.version + 1);
    // The same request again answers what was journaled, and appends nothing.
    let again = judge.rule(ruling).await.expect("a retry");
    assert_eq!(again.into_inner().version, ruled.version);

    // The override counts from the ruling's version on (docs/rules.md §5.1).
    let after = get_battle(&stack, battle_id, None).await;
    assert!(after.closed && after.version == ruled.version + 1, "{after:?}");
    assert_eq!(dodges_used(&after), json!(u64::from(!counted)), "after the ruling: {after:?}");
    let at_close = get_battle(&stack, battle_id, Some(close_version)).await;
    assert_eq!(dodges_used(&at_close), json!(u64::from(counted)), "as of the close: {at_close:?}");
    let action = json!({"type": "pass", "actor": "pikachu"});
    let late = act(&mut forum, battle_id, &action, "act-after-close").await.unwrap_err();
    assert_eq!((late.code(), precondition(&late)), (Code::FailedPrecondition, "BATTLE_CLOSED".into()), "{late:?}");

    let events = journaled(&stack, battle_id).await;
    assert_eq!(events.len() as u64, after.version + 1, "nothing else was appended");
    let Event::JudgeRuling(journaled_ruling) = &events[ruled.version as usize].event else {
        panic!("version {} is not the ruling: {:?}", ruled.version, events[ruled.version as usize].event);
    };
    assert_eq!((journaled_ruling.judge.as_str(), journaled_ruling.refers_to), (JUDGE, dodged.version));

    assert_audit_rpc_ok(&mut forum, battle_id, events.len()).await;
    let file = stack.dir.path().join(format!("{battle_id}.jsonl"));
    let export = export_to(&stack.resolver.url(), battle_id, &file);
    let lines: Vec<Value> = export.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    let ruling_line = &lines[ruled.version as usize]["event"];
    assert_eq!(ruling_line["type"], json!("JudgeRuling"), "{ruling_line}");
    assert_eq!(ruling_line["judge"], json!(JUDGE), "{ruling_line}");
    assert_eq!(ruling_line["override"], json!({"counted": !counted}), "{ruling_line}");
    assert_audit_file_verifies(&file, battle_id);

    // `battlelog replay` folds the ruling after the close too.
    let reader = TestAuth::shared().reader();
    let (code, stdout, stderr) = cli(&["replay", battle_id, "--resolver", &stack.resolver.url(), "--token", &reader]);
    assert_eq!(code, Some(0), "replay: {stderr}");
    assert!(stdout.contains(JUDGE) && stdout.contains("the rock was in the way"), "replay shows the ruling:\n{stdout}");
    let change = format!("counted: {counted} -> {}", !counted);
    assert!(stdout.contains(&change), "replay shows the override's before and after ({change}):\n{stdout}");
    // Issue 21: the ruling is marked as made after the close, and the
    // state line names the appeal deadline the resolver holds to.
    let ruling_line = stdout
        .lines()
        .find(|l| l.starts_with(&format!("#{} ", ruled.version)))
        .unwrap_or_else(|| panic!("replay shows the ruling:\n{stdout}"));
    assert!(ruling_line.contains("(after the close, within the appeal window)"), "{ruling_line}");
    let deadline = after.appeal_deadline_unix_micros.expect("a closed battle has an appeal deadline");
    let close_recorded = events[close_version as usize].record.recorded_at_unix_micros;
    assert_eq!(deadline, close_recorded + 14 * 24 * 60 * 60 * 1_000_000, "the default window from the close");
    assert!(stdout.contains(", closed, appeals until "), "{stdout}");
    // `replay --final`: the dodge's outcome after the ruling, naming it.
    let (code, stdout, stderr) =
        cli(&["replay", battle_id, "--final", "--resolver", &stack.resolver.url(), "--token", &reader]);
    assert_eq!(code, Some(0), "replay --final: {stderr}");
    let dodge_line = stdout
        .lines()
        .find(|l| l.starts_with(&format!("#{} ", dodged.version)))
        .unwrap_or_else(|| panic!("replay --final shows the dodge:\n{stdout}"));
    assert!(dodge_line.ends_with(&format!("[ruling #{}]", ruled.version)), "{dodge_line}");
    assert!(dodge_line.contains(&format!("\"counted\":{}", !counted)), "the final outcome: {dodge_line}");
    assert!(!stdout.contains(&format!("#{} ", ruled.version)), "only actions in the final view:\n{stdout}");

    // The battle page shows the same: the ruling, who made it, what it
    // changed, linked to the action it rules on and the dispute beside it.
    let page = battle_page(&stack, battle_id).await;
    // The appeal deadline the resolver holds to, in UTC to the second.
    let deadline_at = time::OffsetDateTime::from_unix_timestamp(deadline / 1_000_000).expect("a time");
    let shown = format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
        deadline_at.year(),
        u8::from(deadline_at.month()),
        deadline_at.day(),
        deadline_at.hour(),
        deadline_at.minute(),
        deadline_at.second()
    );
    assert!(page.contains(&format!("id=\"appeal-deadline\">{shown}<")), "the appeal deadline {shown}:\n{page}");
    let ruling_html = event_html(&page, ruled.version);
    assert!(
        ruling_html.contains(&format!("<span class=\"judge forum-text\" translate=\"no\">{JUDGE}</span>")),
        "the judge:\n{ruling_html}"
    );
    assert!(
        ruling_html.contains(&format!("data-subject=\"{JUDGE}\" data-role=\"judge\"")),
        "the judge's credential:\n{ruling_html}"
    );
    assert!(ruling_html.contains(&format!("href=\"#v{}\"", dodged.version)), "links the action:\n{ruling_html}");
    // The field by its readable name, booleans as yes/no.
    let yes_no = |value: bool| if value { "yes" } else { "no" };
    let row = format!(
        "<tr data-field=\"counted\"><td><span data-field-name=\"counted\">counted</span></td>\
         <td class=\"before\">{}</td><td class=\"after\">{}</td></tr>",
        yes_no(counted),
        yes_no(!counted)
    );
    assert!(ruling_html.contains(&row), "the override's before and after ({row}):\n{ruling_html}");
    let action_html = event_html(&page, dodged.version);
    assert!(
        action_html.contains(&format!("href=\"#v{}\"", ruled.version)),
        "the action links its ruling:\n{action_html}"
    );
}

/// The battle's page from a real `battlelog-web` in front of the stack,
/// read with a judge's token.
async fn battle_page(stack: &Stack, battle_id: &str) -> String {
    let secret = stack.dir.path().join("share.secret");
    battlelog_auth::ShareSecret::read_or_create(&secret).expect("a share secret");
    let token_file = stack.dir.path().join("web-reader.token");
    std::fs::write(&token_file, TestAuth::shared().reader()).expect("write the web's token");
    let web =
        battlelog_test_support::web(&stack.resolver.url(), &secret, &token_file, &stack.dir.path().join("web.log"))
            .await;
    let judge = format!("Bearer {}", TestAuth::shared().judge());
    let (status, page) =
        battlelog_test_support::http_get(&format!("{}/battles/{battle_id}", web.url()), &[("authorization", &judge)])
            .await;
    assert_eq!(status, 200, "{page}");
    page
}

/// The element of event `version` on a battle page.
fn event_html(page: &str, version: u64) -> String {
    let start = page.find(&format!("id=\"v{version}\"")).unwrap_or_else(|| panic!("no #v{version} on the page"));
    let end = page[start..].find("</li>").map_or(page.len(), |end| start + end);
    page[start..end].to_owned()
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
    let (dodged, close_version) = disputed_then_closed(&stack, battle_id).await;
    let before = journaled(&stack, battle_id).await;
    let closed_at = before[close_version as usize].record.recorded_at_unix_micros;
    assert!(matches!(before[close_version as usize].event, Event::BattleClosed(_)));
    let window_end = closed_at + 1_000_000;
    poll_until("the clock to pass the appeal window's end", Duration::from_secs(10), || async {
        (unix_micros_now() > window_end).then_some(())
    })
    .await;

    let mut judge = judge_client(&stack.resolver).await;
    let refused = judge.rule(counted_ruling(battle_id, dodged.version, true, "r-too-late")).await.unwrap_err();
    assert_eq!((refused.code(), precondition(&refused)), (Code::FailedPrecondition, "BATTLE_FINAL".into()));
    // The window's end, RFC 3339 in UTC, as the journal's clock has it.
    let end_seconds = prost_types::Timestamp { seconds: window_end.div_euclid(1_000_000), nanos: 0 }.to_string();
    let end_prefix = end_seconds.trim_end_matches('Z');
    assert!(refused.message().contains(end_prefix), "names the window's end {end_prefix}: {:?}", refused.message());
    let mut forum = resolver_client(&stack.resolver).await;
    let refused = forum.dispute(dispute(battle_id, dodged.version, "d-too-late")).await.unwrap_err();
    assert_eq!((refused.code(), precondition(&refused)), (Code::FailedPrecondition, "BATTLE_FINAL".into()));

    let after = journaled(&stack, battle_id).await;
    assert_eq!(after.len(), before.len(), "a refused appeal appends nothing");
    assert_eq!(after.last().map(|e| e.recorded.hash.clone()), before.last().map(|e| e.recorded.hash.clone()));
}
