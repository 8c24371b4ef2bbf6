//! Issue 8's forgeries, each tried over the real binaries and refused at
//! its door: the roller and the journal take only battlelog's own services,
//! a ruling's judge is who the token says, and one tenant's battles do not
//! exist for another. (NATS poisoning is tests/nats_auth.rs's and the
//! resolver tests'.)
//!
//! One stack serves every forgery; each works on battles of its own.

use battlelog_auth::Role;
use battlelog_proto::v1 as pb;
use battlelog_proto::v1::battle_event::Event;
use battlelog_proto::v1::journal_client::JournalClient;
use battlelog_proto::v1::roller_client::RollerClient;
use battlelog_test_support::TestAuth;
use battlelog_test_support::auth::{OTHER_TENANT, TEST_TENANT};
use battlelog_test_support::journal_client::{battle_event, commitment_hex, exact, global_head, invalid_field};
use battlelog_test_support::stack::*;
use battlelog_test_support::watch::WatchProcess;
use serde_json::json;
use tonic::Code;

/// A judge whose name the tests choose, so that the expected `judge` of a
/// ruling comes from here and not from the test helpers.
const JUDGE: &str = "judge-bulbasaur";

fn token(role: Role, tenant: &str, subject: &str) -> String {
    TestAuth::shared().token(role, tenant, subject)
}

/// The global head, as battlelog's own services read it.
async fn head(stack: &Stack) -> u64 {
    global_head(&mut stack.journal_client().await).await
}

/// A plain attack: docs/rules.md §1.1, one power die.
fn tackle() -> serde_json::Value {
    json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Tackle", "power": 40})
}

async fn open_battle(stack: &Stack, battle_id: &str) {
    let mut forum = resolver_client(&stack.resolver).await;
    open(&mut forum, battle_id, "pokemon-d6@1", json!([{"id": "pikachu"}, {"id": "meowth"}]), "forgeries").await;
}

/// (a) Peek, then decide: a forum asks the roller for the dice its next
/// action would get (under the key the resolver will use, `act:<id>`), and
/// acts only if it likes them. The roller does not take a forum's call, so
/// there is nothing to peek at: the action later draws dice of its own.
async fn peek_then_decide(stack: &Stack) {
    let battle_id = "forgery-peek";
    open_battle(stack, battle_id).await;
    let before = head(stack).await;
    for role in [Role::Forum, Role::Judge, Role::Reader] {
        let mut roller = RollerClient::new(stack.roller.authed(&token(role, TEST_TENANT, "peeker")).await);
        let peek = pb::RollRequest {
            battle_id: battle_id.into(),
            rolls: vec![pb::RollSpec { expression: "1d6".into(), purpose: "power die".into() }],
            actor: "pikachu".into(),
            request_id: "act:peek-1".into(),
            expected_head: None,
            for_action: None,
        };
        let status = roller.roll(peek).await.expect_err("the roller refuses a peek");
        assert_eq!(status.code(), Code::PermissionDenied, "Roller.Roll as {role}: {status:?}");
    }
    assert_eq!(head(stack).await, before, "no peeked roll was journaled");

    // The action the forum then submits draws the battle's first die, right
    // after BattleOpened: no roll was waiting under its key.
    let mut forum = resolver_client(&stack.resolver).await;
    let reply = act(&mut forum, battle_id, &tackle(), "peek-1").await.expect("the action itself");
    let first = &reply.rolls[0];
    assert_eq!(first.roll.as_ref().expect("a roll").nonce, 0, "the battle's first nonce");
    assert_eq!(first.version, 1, "rolled by the action, right after BattleOpened");
}

/// (b) Forge an epoch: reveal the seed early (closing, so that no next
/// epoch is committed) through the roller, or write a commitment of one's
/// own into the journal. Both doors admit only the service role.
async fn forge_an_epoch(stack: &Stack) {
    let battle_id = "forgery-epoch";
    open_battle(stack, battle_id).await;
    let before = head(stack).await;
    for role in [Role::Forum, Role::Judge] {
        let credential = token(role, TEST_TENANT, "forger");
        let mut roller = RollerClient::new(stack.roller.authed(&credential).await);
        let reveal = pb::RevealRequest {
            battle_id: battle_id.into(),
            closing: true,
            request_id: "close:forged".into(),
            requested_by: Some(pb::Credential { subject: "forger".into(), role: role.as_str().into() }),
        };
        let status = roller.reveal(reveal).await.expect_err("the roller refuses the reveal");
        assert_eq!(status.code(), Code::PermissionDenied, "Roller.Reveal(closing) as {role}: {status:?}");

        let mut journal = JournalClient::new(stack.journal.authed(&credential).await);
        let commitment = pb::SeedCommitted { epoch: 1, commitment: commitment_hex(1), ..Default::default() };
        let append = pb::AppendRequest {
            stream_id: battle_id.into(),
            expected_version: exact(Some(0)),
            events: vec![battle_event(Event::SeedCommitted(commitment), "forged-epoch")],
        };
        let status = journal.append(append).await.expect_err("the journal refuses the append");
        // PERMISSION_DENIED, not the battle guard's FAILED_PRECONDITION:
        // the door refused it before anything looked at the event.
        assert_eq!(status.code(), Code::PermissionDenied, "Journal.Append(SeedCommitted) as {role}: {status:?}");
    }
    assert_eq!(head(stack).await, before, "no forged reveal or commitment was journaled");
    let events = journaled(stack, battle_id).await;
    assert_eq!(events.len(), 1, "the battle holds its BattleOpened alone");
    let mut reader = resolver_as(&stack.resolver, &TestAuth::shared().reader()).await;
    let state = reader
        .get_battle(pb::GetBattleRequest { battle_id: battle_id.into(), at_version: None })
        .await
        .expect("get battle")
        .into_inner();
    assert_eq!((state.closed, state.epoch), (false, 0), "still open, in its first epoch");
}

/// (c) Rule as anyone: a forum cannot rule, and a judge cannot rule under
/// another name; the judge journaled is the token's subject.
async fn rule_as_anyone(stack: &Stack) {
    let battle_id = "forgery-rule";
    open_battle(stack, battle_id).await;
    let mut forum = resolver_client(&stack.resolver).await;
    let refers_to = act(&mut forum, battle_id, &tackle(), "rule-1").await.expect("attack").version;
    let ruling = |judge: &str, request_id: &str| pb::RuleRequest {
        battle_id: battle_id.into(),
        judge: judge.into(),
        refers_to,
        text: "the tackle stands".into(),
        r#override: None,
        request_id: request_id.into(),
        ..Default::default()
    };
    let before = head(stack).await;

    let status = forum.rule(ruling("", "rule-forum")).await.expect_err("a forum cannot rule");
    assert_eq!(status.code(), Code::PermissionDenied, "Rule as a forum: {status:?}");

    let mut judge = resolver_as(&stack.resolver, &token(Role::Judge, TEST_TENANT, JUDGE)).await;
    let status = judge.rule(ruling("squirtle", "rule-squirtle")).await.expect_err("a judge cannot rule as another");
    assert_eq!(invalid_field(&status), "judge", "the refusal names the field: {status:?}");
    assert_eq!(head(stack).await, before, "neither refused ruling was journaled");

    let ruled = judge.rule(ruling("", "rule-judge")).await.expect("the judge rules under its own name").into_inner();
    let events = journaled(stack, battle_id).await;
    let Event::JudgeRuling(journaled_ruling) = &events[ruled.version as usize].event else {
        panic!("version {} is not a JudgeRuling: {:?}", ruled.version, events[ruled.version as usize].event);
    };
    assert_eq!(journaled_ruling.judge, JUDGE, "the judge is the token's subject");
    assert_eq!(
        journaled_ruling.credential,
        Some(pb::Credential { subject: JUDGE.into(), role: "judge".into() }),
        "the ruling records the judge's credential"
    );
    assert_eq!(journaled_ruling.refers_to, refers_to);

    let reader = TestAuth::shared().reader();
    let (code, stdout, stderr) = cli(&["replay", battle_id, "--resolver", &stack.resolver.url(), "--token", &reader]);
    assert_eq!(code, Some(0), "battlelog replay: {stderr}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with(&format!("#{} ", ruled.version)))
        .unwrap_or_else(|| panic!("replay shows version {}:\n{stdout}", ruled.version));
    assert!(line.contains(JUDGE), "replay names the judge: {line}");
    assert!(!stdout.contains("squirtle"), "the refused name appears nowhere:\n{stdout}");
}

/// (d) Another tenant's forum finds nothing of the battle, and a generated
/// battle id is the tenant's own: the same request id under two tenants
/// opens two battles.
async fn another_tenant(stack: &Stack) {
    let battle_id = "forgery-tenant";
    open_battle(stack, battle_id).await;
    let mut stranger = resolver_as(&stack.resolver, &token(Role::Forum, OTHER_TENANT, "other-forum")).await;
    let before = head(stack).await;
    let status = act(&mut stranger, battle_id, &tackle(), "stranger-1").await.expect_err("no acting on it");
    assert_eq!(status.code(), Code::NotFound, "Act: {status:?}");
    let status = stranger
        .get_battle(pb::GetBattleRequest { battle_id: battle_id.into(), at_version: None })
        .await
        .expect_err("no reading it");
    assert_eq!(status.code(), Code::NotFound, "GetBattle: {status:?}");
    let status = stranger
        .export(pb::ExportRequest { battle_id: battle_id.into(), from_version: 0 })
        .await
        .expect_err("no exporting it");
    assert_eq!(status.code(), Code::NotFound, "Export: {status:?}");
    assert_eq!(head(stack).await, before, "the stranger's calls journaled nothing");

    let mut home = resolver_client(&stack.resolver).await;
    let generated = |request_id: &str| pb::OpenBattleRequest {
        ruleset: "pokemon-d6@1".into(),
        title: "a generated id".into(),
        forum_ref: "forum:tests/thread/generated".into(),
        participants: vec![obj(json!({"id": "pikachu"})), obj(json!({"id": "meowth"}))],
        client_seed: String::new(),
        request_id: request_id.into(),
        battle_id: String::new(),
        ..Default::default()
    };
    let ours = home.open_battle(generated("same-request")).await.expect("open in our tenant").into_inner();
    let theirs = stranger.open_battle(generated("same-request")).await.expect("open in theirs").into_inner();
    assert_ne!(ours.battle_id, theirs.battle_id, "one request id, two tenants: two battles");
    assert_eq!(ours.opened.as_ref().expect("opened").tenant, TEST_TENANT);
    assert_eq!(theirs.opened.as_ref().expect("opened").tenant, OTHER_TENANT);
    let again = home.open_battle(generated("same-request")).await.expect("a retry").into_inner();
    assert_eq!(again.battle_id, ours.battle_id, "a retry in the same tenant finds its battle");
    assert_eq!(journaled(stack, &ours.battle_id).await.len(), 1, "and opens nothing more");
    for (client, own, foreign) in
        [(&mut home, &ours.battle_id, &theirs.battle_id), (&mut stranger, &theirs.battle_id, &ours.battle_id)]
    {
        client
            .get_battle(pb::GetBattleRequest { battle_id: own.clone(), at_version: None })
            .await
            .unwrap_or_else(|s| panic!("{own} is its opener's: {s:?}"));
        let status = client
            .get_battle(pb::GetBattleRequest { battle_id: foreign.clone(), at_version: None })
            .await
            .expect_err("the other tenant's generated battle");
        assert_eq!(status.code(), Code::NotFound, "{foreign}: {status:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_forgery_is_refused_at_its_door() {
    let stack = Stack::start("forgeries", false).await;
    peek_then_decide(&stack).await;
    forge_an_epoch(&stack).await;
    rule_as_anyone(&stack).await;
    another_tenant(&stack).await;
}

/// `battlelog watch --from-resolver`: a reader of the battle's tenant
/// follows it through the resolver's `Watch` — what was committed, then
/// what is committed next, live; a reader of another tenant is told the
/// battle does not exist.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_watches_a_battle_through_the_resolver() {
    let stack = Stack::start("watch-resolver", false).await;
    open_battle(&stack, "watched").await;
    let url = stack.resolver.url();
    let reader = TestAuth::shared().reader();
    let args = |token: &str| {
        ["--from-resolver", "--battle", "watched", "--resolver", &url, "--token", token].map(str::to_owned)
    };
    let (mut watch, said) = WatchProcess::start(&args(&reader).each_ref().map(String::as_str)).await;
    assert_eq!(said, format!("watching battle watched at {url} (Ctrl-C stops)"));
    let first = watch.next_stdout().await;
    assert!(first.starts_with("watched #0 BattleOpened"), "the watch starts at the opening: {first}");
    let mut forum = resolver_client(&stack.resolver).await;
    let acted = act(&mut forum, "watched", &tackle(), "watched-1").await.expect("attack");
    let mut last = String::new();
    while !last.starts_with(&format!("watched #{} ActionResolved", acted.version)) {
        last = watch.next_stdout().await;
    }

    let eve = token(Role::Reader, OTHER_TENANT, "eve");
    let mut outsider = WatchProcess::spawn(&args(&eve).each_ref().map(String::as_str));
    assert_eq!(outsider.wait().await.code(), Some(2));
    let said = outsider.next_stderr().await;
    assert_eq!(said, "battlelog: resolver: battle watched has not been opened");
}
