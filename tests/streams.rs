//! issue 18, finding 2: server streams are bounded and released, through
//! the real binaries (journal, roller and resolver, each its own process).
//!
//! - 10 000 `Watch` streams opened and dropped by a reader, over four
//!   HTTP/2 connections, leave the resolver and the journal within 20 MB of
//!   their resident memory before, with no new event in the battles they
//!   watched (so nothing but the watchers leaving can release them);
//! - a `Watch` ends with `UNAUTHENTICATED` (`TOKEN_EXPIRED`) when its token
//!   expires, and with `DEADLINE_EXCEEDED` at its deadline, as does the
//!   journal's `SubscribeStream`;
//! - the caps on open watches per token and per connection admit up to
//!   their limit, refuse past it with `RESOURCE_EXHAUSTED`
//!   (`TOO_MANY_STREAMS`), and free a slot when its stream ends.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use battlelog_auth::{AuthChannel, Role, SigningKey};
use battlelog_proto::v1 as pb;
use battlelog_proto::v1::resolver_client::ResolverClient;
use battlelog_test_support::auth::TEST_TENANT;
use battlelog_test_support::stack;
use battlelog_test_support::stack::{Stack, resolver_as};
use battlelog_test_support::{StartOptions, TestAuth, mib, poll_until, rss_bytes};
use serde_json::json;
use tokio_stream::StreamExt;
use tonic::{Code, Status};
use tonic_types::StatusExt;

/// Watches opened (and dropped) in the memory test.
const WATCHES: usize = 10_000;
/// HTTP/2 connections they are spread over.
const CONNECTIONS: usize = 4;
/// Watches open at once on each connection: a batch is opened, then dropped.
/// Four times this stays under the default per-token limit (256) even if
/// the last batch were not yet released when the next opens.
const PER_BATCH: usize = 25;
/// How far the resident memory may stay above its level before.
const SLACK_BYTES: u64 = 20 * 1000 * 1000;

/// Opens a pbta battle as the test tenant's forum.
async fn open_battle(stack: &Stack, battle_id: &str) {
    let mut forum = stack::resolver_client(&stack.resolver).await;
    stack::open(&mut forum, battle_id, "pbta-2d6@1", json!([{"id": "ash", "traits": {"cool": 1}}]), battle_id).await;
}

fn watch_request(battle_id: &str) -> pb::WatchRequest {
    pb::WatchRequest { battle_id: battle_id.to_owned(), from_version: 0 }
}

/// Opens a watch and reads its first event (the battle's BattleOpened), so
/// the whole chain — resolver, journal subscription — is up when it returns.
async fn open_watch(
    client: &mut ResolverClient<AuthChannel>,
    request: tonic::Request<pb::WatchRequest>,
) -> Result<tonic::Streaming<pb::RecordedEvent>, Status> {
    let mut stream = client.watch(request).await?.into_inner();
    let first = stream.next().await.expect("a first event")?;
    assert_eq!(first.event.expect("a record").version, 0);
    Ok(stream)
}

/// The `ErrorInfo` reason and domain of `status`.
fn reason(status: &Status) -> (String, String) {
    let info = status.get_error_details().error_info().cloned().unwrap_or_else(|| panic!("no ErrorInfo: {status:?}"));
    (info.reason, info.domain)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_dropped_watches_are_released_without_a_new_event() {
    // One reader opens them all: its tenant's rate limit (issue 18) would
    // refuse it, and this test measures what dropped streams leave behind.
    let unlimited = StartOptions {
        envs: vec![("BATTLELOG_RESOLVER_RATE_LIMIT_PER_SEC".to_owned(), "0".to_owned())],
        ..StartOptions::default()
    };
    let stack = Stack::start_with("watch-memory", false, &unlimited).await;
    let battles: Vec<String> = (0..4).map(|b| format!("watched-{b}")).collect();
    for battle in &battles {
        open_battle(&stack, battle).await;
    }
    let reader = TestAuth::shared().reader();
    let mut clients = Vec::new();
    for _ in 0..CONNECTIONS {
        clients.push(resolver_as(&stack.resolver, &reader).await);
    }
    let pids = [stack.resolver.pid(), stack.journal.pid()];
    let rss = || pids.iter().map(|pid| rss_bytes(*pid)).sum::<u64>();

    // One batch first, so that the level before includes what the first
    // watches allocate once (buffers, the runtime's pools), not per watch.
    let run_batches = |batches: usize| {
        let (clients, battles) = (clients.clone(), battles.clone());
        async move {
            for batch in 0..batches {
                let mut tasks = Vec::new();
                for (c, client) in clients.iter().enumerate() {
                    for i in 0..PER_BATCH {
                        let mut client = client.clone();
                        let battle = battles[(c + i) % battles.len()].clone();
                        tasks.push(tokio::spawn(async move {
                            open_watch(&mut client, tonic::Request::new(watch_request(&battle))).await
                        }));
                    }
                }
                let mut streams = Vec::new();
                for task in tasks {
                    let opened = task.await.expect("a watch task");
                    streams.push(opened.unwrap_or_else(|s| panic!("batch {batch}: Watch refused: {s:?}")));
                }
                // The reader leaves: every stream of the batch is dropped.
                drop(streams);
            }
        }
    };
    run_batches(1).await;
    let before = rss();
    let started = Instant::now();
    let batches = WATCHES / (CONNECTIONS * PER_BATCH);
    run_batches(batches).await;
    let took = started.elapsed();
    let right_after = rss();
    println!(
        "{} Watch streams opened and dropped over {CONNECTIONS} connections in {:.1} s: resolver + journal RSS \
         before {:.1} MiB, right after {:.1} MiB",
        batches * CONNECTIONS * PER_BATCH,
        took.as_secs_f64(),
        mib(before),
        mib(right_after),
    );

    let events_before: Vec<u64> = {
        let mut journal = stack.journal_client().await;
        let mut heads = Vec::new();
        for battle in &battles {
            let info = journal
                .stream_info(pb::StreamInfoRequest { stream_id: battle.clone() })
                .await
                .expect("stream info")
                .into_inner();
            heads.push(info.head_version.expect("an opened battle has a head"));
        }
        heads
    };
    let settled = poll_until("the watches' memory to be released", Duration::from_secs(30), || async {
        let now = rss();
        (now <= before + SLACK_BYTES).then_some(now)
    })
    .await;
    println!("settled at {:.1} MiB (allowed {:.1} MiB)", mib(settled), mib(before + SLACK_BYTES));
    // Released by the watchers leaving, not by an event waking them.
    let mut journal = stack.journal_client().await;
    for (battle, head) in battles.iter().zip(events_before) {
        let info =
            journal.stream_info(pb::StreamInfoRequest { stream_id: battle.clone() }).await.expect("info").into_inner();
        assert_eq!(info.head_version, Some(head), "no event was appended to {battle}");
        assert_eq!(head, 0, "{battle} holds only its BattleOpened");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_ends_unauthenticated_when_its_token_expires_and_at_its_deadline() {
    let stack = Stack::start("watch-expiry", false).await;
    open_battle(&stack, "expiring").await;
    let key = SigningKey::read(&TestAuth::shared().signing_key_file()).expect("the test signing key");
    let now = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_secs();
    let exp = now + 3;
    let token = key.issue_at("short-lived", TEST_TENANT, Role::Reader, now, exp).expect("a token");
    let mut client = resolver_as(&stack.resolver, &token).await;
    let mut stream = open_watch(&mut client, tonic::Request::new(watch_request("expiring"))).await.expect("watch");
    let ended = tokio::time::timeout(Duration::from_secs(20), stream.next())
        .await
        .expect("the watch ends within 20 s of its start")
        .expect("an end status, not a silent end")
        .expect_err("no event came, so the next item is the end");
    let ended_at = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_secs();
    assert_eq!(ended.code(), Code::Unauthenticated, "{ended:?}");
    assert_eq!(reason(&ended), ("TOKEN_EXPIRED".to_owned(), "battlelog.dev".to_owned()));
    assert!(ended_at >= exp, "ended at {ended_at}, before the token's expiry {exp}");
    assert!(stream.next().await.is_none(), "nothing after the end");

    // A deadline ends a watch too (tonic's own timeout covers only the
    // response head), while the token is still good.
    let mut client = stack::resolver_client(&stack.resolver).await;
    let mut request = tonic::Request::new(watch_request("expiring"));
    request.set_timeout(Duration::from_millis(1500));
    let started = Instant::now();
    let mut stream = open_watch(&mut client, request).await.expect("watch");
    let ended = tokio::time::timeout(Duration::from_secs(20), stream.next())
        .await
        .expect("the watch ends at its deadline")
        .expect("an end status")
        .expect_err("the end");
    assert_eq!(ended.code(), Code::DeadlineExceeded, "{ended:?}");
    assert!(started.elapsed() >= Duration::from_millis(1400), "ended after {:?}", started.elapsed());

    // The journal's own subscriptions end at their deadline too.
    let mut journal = stack.journal_client().await;
    let mut request = tonic::Request::new(pb::SubscribeStreamRequest { stream_id: "expiring".into(), from_version: 0 });
    request.set_timeout(Duration::from_millis(1500));
    let started = Instant::now();
    let mut stream = journal.subscribe_stream(request).await.expect("subscribe").into_inner();
    assert_eq!(stream.next().await.expect("BattleOpened").expect("an event").event.expect("a record").version, 0);
    let ended = tokio::time::timeout(Duration::from_secs(20), stream.next())
        .await
        .expect("the subscription ends at its deadline")
        .expect("an end status")
        .expect_err("the end");
    assert_eq!(ended.code(), Code::DeadlineExceeded, "{ended:?}");
    assert!(started.elapsed() >= Duration::from_millis(1400), "ended after {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_caps_refuse_past_their_limits_and_free_a_slot_when_a_watch_ends() {
    let options = StartOptions {
        envs: vec![
            ("BATTLELOG_RESOLVER_MAX_WATCHES_PER_TOKEN".to_owned(), "3".to_owned()),
            ("BATTLELOG_RESOLVER_MAX_WATCHES_PER_CONNECTION".to_owned(), "2".to_owned()),
        ],
        ..StartOptions::default()
    };
    let stack = Stack::start_with("watch-caps", false, &options).await;
    open_battle(&stack, "capped").await;
    let reader = TestAuth::shared().reader();
    let watch = || tonic::Request::new(watch_request("capped"));
    let refused = |status: Status, per: &str| {
        assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
        let info = status.get_error_details().error_info().cloned().expect("an ErrorInfo");
        assert_eq!(info.reason, "TOO_MANY_STREAMS");
        assert_eq!(info.metadata.get("per").map(String::as_str), Some(per), "{status:?}");
    };

    // Connection A: two watches, its limit; a third is refused.
    let mut a = resolver_as(&stack.resolver, &reader).await;
    let a1 = open_watch(&mut a, watch()).await.expect("1st on A");
    let _a2 = open_watch(&mut a, watch()).await.expect("2nd on A: at the connection's limit");
    refused(open_watch(&mut a, watch()).await.expect_err("3rd on A: over it"), "connection");

    // Connection B: the token's third watch is its limit; a fourth is refused.
    let mut b = resolver_as(&stack.resolver, &reader).await;
    let _b1 = open_watch(&mut b, watch()).await.expect("the token's 3rd: at its limit");
    refused(open_watch(&mut b, watch()).await.expect_err("the token's 4th: over it"), "token");
    // Another reader has its own count (and B one slot left).
    let other = TestAuth::shared().token(Role::Reader, TEST_TENANT, "another-reader");
    let mut b_other = resolver_as(&stack.resolver, &other).await;
    let _other = open_watch(&mut b_other, watch()).await.expect("another token");

    // The watcher leaves one stream: its slot comes back.
    drop(a1);
    let mut c = resolver_as(&stack.resolver, &reader).await;
    let c1 = poll_until("a dropped watch's slot to be freed", Duration::from_secs(10), || {
        let mut c = c.clone();
        async move { open_watch(&mut c, watch()).await.ok() }
    })
    .await;

    // A watch that ends at its deadline frees its slot too, though its
    // watcher still holds it.
    drop(c1);
    let mut ending = poll_until("a slot for a watch with a deadline", Duration::from_secs(10), || {
        let mut c = c.clone();
        let mut request = watch();
        request.set_timeout(Duration::from_millis(800));
        async move { open_watch(&mut c, request).await.ok() }
    })
    .await;
    refused(open_watch(&mut c, watch()).await.expect_err("the token is at its limit again"), "token");
    let end = ending.next().await.expect("an end").expect_err("the deadline");
    assert_eq!(end.code(), Code::DeadlineExceeded);
    poll_until("the ended watch's slot to be freed", Duration::from_secs(10), || {
        let mut c = c.clone();
        async move { open_watch(&mut c, watch()).await.ok() }
    })
    .await;
    drop(ending);
}
