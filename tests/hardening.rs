//! Legal input cannot break a battle (issue 18), through the real binaries:
//! a battle filled to its budget still reads, closes, reveals and audits;
//! an action refused for any reason journals nothing, and a roll that was
//! journaled is always resolved by a retry; another tenant cannot take a
//! generated battle id.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use battlelog_auth::Role;
use battlelog_proto::v1 as pb;
use battlelog_proto::v1::battle_event::Event;
use battlelog_test_support::journal_client::error_reason;
use battlelog_test_support::stack::*;
use battlelog_test_support::{StartOptions, TestAuth, http_get};
use serde_json::json;
use sha2::{Digest, Sha256};
use tokio::net::{TcpListener, TcpStream};
use tonic::Code;
use tonic_types::StatusExt;

fn options(envs: &[(&str, String)]) -> StartOptions {
    StartOptions { envs: envs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect(), ..StartOptions::default() }
}

/// The field a BadRequest names (panics without one).
fn bad_field(status: &tonic::Status) -> String {
    let details = status.get_error_details();
    let bad = details.bad_request().unwrap_or_else(|| panic!("no BadRequest: {status:?}"));
    bad.field_violations[0].field.clone()
}

/// Every roll of the battle is used by the action journaled right after
/// it: no roll without its resolution.
fn assert_every_roll_resolved(battle_id: &str, events: &[Journaled]) {
    let used: Vec<u64> = resolutions_of(events).iter().flat_map(|(_, _, resolved)| resolved.rolls.clone()).collect();
    for (version, roll) in rolls_of(events) {
        assert!(used.contains(&roll.nonce), "{battle_id}: the roll at version {version} is used by no action");
    }
}

/// The largest free roll an action may make: 1 000 dice of a million sides,
/// all but one struck through in the summaries.
fn largest_roll() -> serde_json::Value {
    json!({"type": "roll", "actor": "ash", "expression": "1000d1000000kl1", "purpose": "a flood of dice"})
}

/// Reads the whole battle through the resolver's `Export` with a client at
/// gRPC's default receive limit (4 MiB), as a forum's own client would.
async fn export_pages(resolver: &battlelog_test_support::ServiceProcess, battle_id: &str) -> (usize, usize) {
    let mut reader = resolver_as(resolver, &TestAuth::shared().reader()).await;
    let (mut events, mut pages) = (0usize, 0usize);
    loop {
        let request = pb::ExportRequest { battle_id: battle_id.into(), from_version: events as u64 };
        let page = reader.export(request).await.unwrap_or_else(|s| panic!("export page {pages}: {s:?}")).into_inner();
        if page.events.is_empty() {
            return (events, pages);
        }
        events += page.events.len();
        pages += 1;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_battle_filled_to_its_budget_still_reads_closes_reveals_and_audits() {
    // 6 MiB: more than one 4 MiB page of records, read twice over on the
    // wire; the old page size made such a battle unreadable for good.
    let budget = 6 * 1024 * 1024;
    let stack =
        Stack::start_with("budget", false, &options(&[("BATTLELOG_JOURNAL_MAX_BATTLE_BYTES", budget.to_string())]))
            .await;
    let battle_id = "full-battle";
    let mut forum = resolver_client(&stack.resolver).await;
    open(&mut forum, battle_id, "pbta-2d6@1", json!([{"id": "misty", "traits": {"wits": 1}}]), "budget seed").await;
    let mut played = 0;
    let refusal = loop {
        match act(&mut forum, battle_id, &largest_roll(), &format!("flood-{played}")).await {
            Ok(_) => played += 1,
            Err(status) => break status,
        }
        assert!(played < 200, "the budget never refused");
    };
    let events = journaled(&stack, battle_id).await;
    let bytes: usize = events.iter().map(|e| e.recorded.record.len()).sum();
    assert!(bytes > 4 * 1024 * 1024, "the battle outgrew one page: {played} rolls, {bytes} bytes");
    assert_eq!(refusal.code(), Code::FailedPrecondition, "{refusal:?}");
    assert_eq!(error_reason(&refusal), "BATTLE_BUDGET_EXCEEDED", "{refusal:?}");
    assert!(refusal.message().contains("max_battle_bytes"), "names the key: {refusal:?}");
    assert!(matches!(events.last().map(|e| &e.event), Some(Event::ActionResolved(_))), "the refusal wrote nothing");
    assert_every_roll_resolved(battle_id, &events);
    let again = act(&mut forum, battle_id, &largest_roll(), &format!("flood-{played}")).await.unwrap_err();
    assert_eq!(error_reason(&again), "BATTLE_BUDGET_EXCEEDED", "a retry gets the same answer: {again:?}");
    assert_eq!(journaled(&stack, battle_id).await.len(), events.len());

    // A resolver that never saw the battle folds it from the journal.
    let fresh = battlelog_test_support::resolver_with(
        &stack.dir.path().join("cold.log"),
        &stack.journal.url(),
        &stack.roller.url(),
        None,
        &StartOptions::default(),
    )
    .await;
    let mut cold = resolver_client(&fresh).await;
    let got = cold.get_battle(pb::GetBattleRequest { battle_id: battle_id.into(), at_version: None }).await;
    let got = got.unwrap_or_else(|s| panic!("GetBattle of a full battle: {s:?}")).into_inner();
    assert_eq!(got.version, events.len() as u64 - 1);
    let (exported, pages) = export_pages(&fresh, battle_id).await;
    assert_eq!(exported, events.len(), "every event, page by page");
    assert!(pages > 1, "in more than one page");
    assert_audit_rpc_ok(&mut cold, battle_id, events.len()).await;

    // The web page reads it too.
    let secret = stack.dir.path().join("share.secret");
    battlelog_auth::ShareSecret::read_or_create(&secret).expect("a share secret");
    let token_file = stack.dir.path().join("web.token");
    std::fs::write(&token_file, TestAuth::shared().reader()).expect("the web's token");
    let web =
        battlelog_test_support::web(&stack.resolver.url(), &secret, &token_file, &stack.dir.path().join("web.log"))
            .await;
    let bearer = format!("Bearer {}", TestAuth::shared().reader());
    // Paged (the web's `page_events`): `?v=` shows the page holding it.
    let last = events.len() - 1;
    let (status, body) =
        http_get(&format!("{}/battles/{battle_id}?v={last}", web.url()), &[("authorization", &bearer)]).await;
    assert_eq!(status, 200, "the page of a full battle: {}", &body[..body.len().min(500)]);
    assert!(body.contains(&format!("id=\"v{last}\"")), "with its last event");

    // The close and its reveal fit in the room kept for them.
    let closed = close(&mut cold, battle_id).await;
    let after = journaled(&stack, battle_id).await;
    assert_eq!(closed.version, events.len() as u64);
    assert!(matches!(after[after.len() - 2].event, Event::BattleClosed(_)));
    assert!(matches!(after[after.len() - 1].event, Event::SeedRevealed(_)), "the seed is revealed");
    let export = stack.dir.path().join("full.jsonl");
    export_to(&stack.resolver.url(), battle_id, &export);
    assert_audit_file_verifies(&export, battle_id);
}

/// A TCP relay the test can cut: the resolver reaches the journal through
/// it, the roller directly, so the journal can "go away" for the resolver
/// alone between the roll and its resolution.
struct Relay {
    url: String,
    open: Arc<AtomicBool>,
    cut: tokio::sync::watch::Sender<u64>,
}

impl Relay {
    async fn start(upstream: std::net::SocketAddr) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind the relay");
        let url = format!("http://{}", listener.local_addr().expect("the relay's address"));
        let open = Arc::new(AtomicBool::new(true));
        let (cut, _) = tokio::sync::watch::channel(0u64);
        let (gate, cuts) = (open.clone(), cut.clone());
        tokio::spawn(async move {
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else { return };
                if !gate.load(Ordering::SeqCst) {
                    continue; // dropped: the connection is refused at once
                }
                let mut cut = cuts.subscribe();
                tokio::spawn(async move {
                    let Ok(mut outbound) = TcpStream::connect(upstream).await else { return };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = cut.changed() => {}
                    }
                });
            }
        });
        Relay { url, open, cut }
    }

    fn cut(&self) {
        self.open.store(false, Ordering::SeqCst);
        self.cut.send_modify(|n| *n += 1);
    }

    fn mend(&self) {
        self.open.store(true, Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_refused_action_journals_nothing_and_a_journaled_roll_is_always_resolved() {
    let mut stack = Stack::start("atomic-acts", false).await;
    let relay = Relay::start(stack.journal.addr()).await;
    let log = stack.dir.path().join("relayed-resolver.log");
    stack.resolver =
        battlelog_test_support::resolver_with(&log, &relay.url, &stack.roller.url(), None, &StartOptions::default())
            .await;
    let battle_id = "atomic";
    let mut forum = resolver_client(&stack.resolver).await;
    open(&mut forum, battle_id, "pbta-2d6@1", json!([{"id": "misty", "traits": {"wits": 1}}]), "atomic seed").await;
    let warm = json!({"type": "move", "actor": "misty", "trait": "wits", "stakes": "warm the view"});
    act(&mut forum, battle_id, &warm, "warm").await.expect("a first move");

    // Refused before any die is drawn: each refusal journals nothing, and
    // its retry is refused the same way.
    let refused = [
        (
            "one die over the limit",
            json!({"type": "roll", "actor": "ash", "expression": "1001d6", "purpose": "x"}),
            Code::InvalidArgument,
        ),
        (
            "rerolls counted",
            json!({"type": "roll", "actor": "ash", "expression": "501d6r1", "purpose": "x"}),
            Code::InvalidArgument,
        ),
        (
            "explosions counted",
            json!({"type": "roll", "actor": "ash", "expression": "901d6!", "purpose": "x"}),
            Code::InvalidArgument,
        ),
        // Before, the roller took up to 10 000 dice and journaled them; the
        // resolution then passed the payload limit: INTERNAL, and an orphan.
        (
            "the issue's 3 000 dice",
            json!({"type": "roll", "actor": "ash", "expression": "1000d1000000+1000d1000000+1000d1000000", "purpose": "x"}),
            Code::InvalidArgument,
        ),
        (
            "a rule refusal",
            json!({"type": "move", "actor": "misty", "trait": "luck", "stakes": "x"}),
            Code::FailedPrecondition,
        ),
    ];
    for (i, (what, action, code)) in refused.into_iter().enumerate() {
        let before = journaled(&stack, battle_id).await.len();
        for attempt in 0..2 {
            let status = act(&mut forum, battle_id, &action, &format!("refused-{i}")).await.unwrap_err();
            assert_eq!(status.code(), code, "{what}, attempt {attempt}: {status:?}");
            if code == Code::InvalidArgument {
                assert_eq!(bad_field(&status), "action.expression", "{what}");
                assert!(status.message().contains("1000"), "names the limit: {status:?}");
            }
        }
        let events = journaled(&stack, battle_id).await;
        assert_eq!(events.len(), before, "{what}: nothing journaled");
    }
    // At the edge: the largest legal roll is taken and resolved.
    let reply = act(&mut forum, battle_id, &largest_roll(), "edge").await.expect("1000 dice");
    assert_eq!(reply.rolls[0].roll.as_ref().map(|r| r.dice.len()), Some(1000));

    // The journal goes away for the resolver between the roll and its
    // resolution: the roller journals the roll, the resolution fails.
    relay.cut();
    let roll = json!({"type": "roll", "actor": "ash", "expression": "3d6", "purpose": "in the dark"});
    let status = act(&mut forum, battle_id, &roll, "outage").await.unwrap_err();
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    assert!(status.message().contains("journal"), "{status:?}");
    relay.mend();
    let first = act(&mut forum, battle_id, &roll, "outage").await.expect("the retry resolves the roll");
    let second = act(&mut forum, battle_id, &roll, "outage").await.expect("and again");
    assert_eq!(act_result(&first), act_result(&second), "the same answer (but for the newest checkpoint)");
    let events = journaled(&stack, battle_id).await;
    let rolled: Vec<_> = rolls_of(&events).into_iter().filter(|(_, r)| r.purpose == "in the dark").collect();
    assert_eq!(rolled.len(), 1, "rolled once, not again on the retry");
    assert_eq!(first.rolls[0].roll.as_ref(), Some(&rolled[0].1), "the recorded dice");
    assert_every_roll_resolved(battle_id, &events);
    assert_audit_rpc_ok(&mut forum, battle_id, events.len()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn another_tenant_cannot_take_a_generated_battle_id() {
    let secret = battlelog_test_support::temp_dir("battle-ids");
    let secret_file = secret.path().join("battle-id.secret");
    std::fs::write(&secret_file, format!("{}\n", "5a".repeat(32))).expect("a secret");
    let keyed = options(&[("BATTLELOG_RESOLVER_BATTLE_ID_SECRET_FILE", secret_file.display().to_string())]);
    let stack = Stack::start_with("battle-ids", false, &keyed).await;
    let auth = TestAuth::shared();
    let mut tenant_a = resolver_client(&stack.resolver).await;
    let mut tenant_b = resolver_as(&stack.resolver, &auth.token(Role::Forum, "other-forum", "squatter")).await;
    let open_request = |battle_id: &str, request_id: &str| pb::OpenBattleRequest {
        ruleset: "pbta-2d6@1".into(),
        title: "ids".into(),
        forum_ref: "forum:ids".into(),
        participants: vec![obj(json!({"id": "misty", "traits": {"wits": 1}}))],
        client_seed: "ids".into(),
        request_id: request_id.into(),
        battle_id: battle_id.into(),
        ..Default::default()
    };

    // Tenant B works out the id A's next open would have had when ids were
    // derived from the tenant and the request id alone, and opens it first.
    let predictable = {
        let digest = Sha256::digest(format!("battlelog/open\0{}\0a-open", battlelog_test_support::auth::TEST_TENANT));
        format!("b-{}", hex::encode(&digest[..16]))
    };
    let squat = tenant_b.open_battle(open_request(&predictable, "squat")).await.unwrap_err();
    assert_eq!(squat.code(), Code::InvalidArgument, "an id of the generated form is refused: {squat:?}");
    assert_eq!(bad_field(&squat), "battle_id");
    let mine = tenant_b.open_battle(open_request("b-mine", "own")).await.expect("B's own explicit id");
    assert_eq!(mine.into_inner().battle_id, "b-mine");

    // A's generated open, and its retry, find A's battle.
    let opened = tenant_a.open_battle(open_request("", "a-open")).await.expect("A's open").into_inner();
    assert_ne!(opened.battle_id, predictable, "not the predictable id");
    assert!(opened.battle_id.starts_with("b-") && opened.battle_id.len() == 34, "{}", opened.battle_id);
    let retry = tenant_a.open_battle(open_request("", "a-open")).await.expect("A's retry").into_inner();
    assert_eq!((&retry.battle_id, &retry.head_hash), (&opened.battle_id, &opened.head_hash), "the same opening");
    // B cannot take it either, now or ever, nor read it.
    let taken = tenant_b.open_battle(open_request(&opened.battle_id, "late")).await.unwrap_err();
    assert_eq!(taken.code(), Code::InvalidArgument, "{taken:?}");
    // B's own generated open with the same request id is another battle.
    let b_own = tenant_b.open_battle(open_request("", "a-open")).await.expect("B's generated open").into_inner();
    assert_ne!(b_own.battle_id, opened.battle_id);

    // A replica holding the same secret finds the same battle on a retry;
    // one with another secret would not.
    let replica = battlelog_test_support::resolver_with(
        &stack.dir.path().join("replica.log"),
        &stack.journal.url(),
        &stack.roller.url(),
        None,
        &keyed,
    )
    .await;
    let mut on_replica = resolver_client(&replica).await;
    let there = on_replica.open_battle(open_request("", "a-open")).await.expect("the retry on a replica");
    assert_eq!(there.into_inner().battle_id, opened.battle_id);
    let other_secret = battlelog_test_support::resolver_with(
        &stack.dir.path().join("unkeyed.log"),
        &stack.journal.url(),
        &stack.roller.url(),
        None,
        &StartOptions::default(),
    )
    .await;
    let elsewhere = resolver_client(&other_secret).await.open_battle(open_request("", "a-open")).await;
    assert_ne!(elsewhere.expect("a battle").into_inner().battle_id, opened.battle_id, "the id is keyed");
}
