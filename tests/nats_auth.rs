//! NATS users and permissions (docs/operating.md, *Security*: "only the journal
//! publishes events; subscribers see their own tenant's subjects"), against a
//! real `nats-server` started with the shipped `deploy/nats/nats.conf`, the
//! passwords given through the environment as in production, and the real
//! `battlelog-journal` binary publishing as the `journal` user.

use std::path::PathBuf;
use std::time::Duration;

use async_nats::{ConnectErrorKind, ConnectOptions, Event, ServerError, Subscriber};
use battlelog_proto::v1 as pb;
use battlelog_test_support::journal_client::*;
use battlelog_test_support::watch::WatchProcess;
use battlelog_test_support::{NatsServer, journal, temp_dir};
use prost::Message;
use tokio::sync::mpsc;
use tokio_stream::StreamExt;

const WAIT: Duration = Duration::from_secs(30);

/// Test-only passwords, given to nats-server the way deploy/nats/README.md says.
const PASSWORDS: [(&str, &str, &str); 5] = [
    ("JOURNAL_NATS_PASSWORD", "journal", "journal-test-password"),
    ("RESOLVER_NATS_PASSWORD", "resolver", "resolver-test-password"),
    ("WEBHOOKS_NATS_PASSWORD", "webhooks", "webhooks-test-password"),
    ("FORUM_A_NATS_PASSWORD", "forum-a", "forum-a-test-password"),
    ("FORUM_B_NATS_PASSWORD", "forum-b", "forum-b-test-password"),
];

fn password(user: &str) -> &'static str {
    PASSWORDS.iter().find(|(_, u, _)| *u == user).expect("a configured user").2
}

fn shipped_config() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/nats/nats.conf")
}

fn start_nats() -> NatsServer {
    let envs: Vec<(&str, &str)> = PASSWORDS.iter().map(|(var, _, pw)| (*var, *pw)).collect();
    NatsServer::start_with_config(&shipped_config(), &envs)
}

/// A client logged in as `user`, and the events (server errors such as
/// permission violations) its connection reports.
async fn connect_as(nats: &NatsServer, user: &str) -> (async_nats::Client, mpsc::UnboundedReceiver<Event>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let client = ConnectOptions::with_user_and_password(user.into(), password(user).into())
        .event_callback(move |event| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(event);
            }
        })
        .connect(nats.url())
        .await
        .unwrap_or_else(|e| panic!("{user} logs in: {e}\n{}", nats.log()));
    (client, rx)
}

/// Waits for the server to report a permissions violation naming `what`
/// (e.g. `Publish to "battlelog.events.forum-b.x"`), skipping other events.
async fn violation(events: &mut mpsc::UnboundedReceiver<Event>, what: &str) {
    let wanted = format!("permissions violation for {what}").to_lowercase();
    let found = tokio::time::timeout(WAIT, async {
        while let Some(event) = events.recv().await {
            if let Event::ServerError(ServerError::Other(message)) = &event
                && message.to_lowercase().contains(&wanted)
            {
                return;
            }
        }
        panic!("the connection closed before reporting {what:?}");
    })
    .await;
    assert!(found.is_ok(), "no permissions violation reported for {what}");
}

/// The next message of `subscriber`, decoded.
async fn next_record(subscriber: &mut Subscriber, what: &str) -> (String, pb::JournalRecord) {
    let message = tokio::time::timeout(WAIT, subscriber.next())
        .await
        .unwrap_or_else(|_| panic!("{what}: timed out"))
        .unwrap_or_else(|| panic!("{what}: subscription ended"));
    let record = pb::JournalRecord::decode(message.payload.as_ref()).expect("the record bytes");
    (message.subject.to_string(), record)
}

/// Whether a message is already waiting in `subscriber` (without waiting).
async fn has_message(subscriber: &mut Subscriber) -> bool {
    matches!(tokio::time::timeout(Duration::ZERO, subscriber.next()).await, Ok(Some(_)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenants_see_only_their_events_and_only_the_journal_publishes() {
    let nats = start_nats();
    let dir = temp_dir("nats-auth");
    let journal_url = format!("nats://journal:{}@127.0.0.1:{}", password("journal"), nats.port());
    let server = journal(&dir.path().join("data"), Some(&journal_url)).await;
    let mut c = client(&server).await;

    // Tenant A's subscriber asks for its own subjects, for B's and for all.
    let (tenant_a, mut a_events) = connect_as(&nats, "forum-a").await;
    let mut a_own = tenant_a.subscribe("battlelog.events.forum-a.>").await.expect("subscribe");
    let mut a_to_b = tenant_a.subscribe("battlelog.events.forum-b.>").await.expect("subscribe");
    let mut a_to_all = tenant_a.subscribe("battlelog.events.>").await.expect("subscribe");
    tenant_a.flush().await.expect("flush");
    violation(&mut a_events, r#"Subscription to "battlelog.events.forum-b.>""#).await;
    violation(&mut a_events, r#"Subscription to "battlelog.events.>""#).await;
    let (resolver, mut resolver_events) = connect_as(&nats, "resolver").await;
    let mut resolver_all = resolver.subscribe("battlelog.events.>").await.expect("subscribe");
    resolver.flush().await.expect("flush");

    // B's battle first, then A's: the journal publishes in that order, so
    // once A's events reach A, any of B's that got through would be there.
    append(&mut c, "b-battle", no_stream(), vec![opened("forum-b", ""), rolled(0, "b0", ""), rolled(1, "b1", "")])
        .await
        .expect("B's battle");
    append(&mut c, "a-battle", no_stream(), vec![opened("forum-a", ""), rolled(0, "a0", "")])
        .await
        .expect("A's battle");

    for version in 0..2 {
        let (subject, record) = next_record(&mut a_own, "tenant A's own events").await;
        assert_eq!(subject, "battlelog.events.forum-a.a-battle");
        assert_eq!((record.stream_id.as_str(), record.version), ("a-battle", version));
    }
    assert!(!has_message(&mut a_to_b).await, "tenant A received one of tenant B's events");
    assert!(!has_message(&mut a_to_all).await, "tenant A received an event through battlelog.events.>");
    assert!(!has_message(&mut a_own).await, "tenant A received more than its two events");

    // The resolver sees both tenants, B's battle on B's subject.
    let mut seen = Vec::new();
    for _ in 0..5 {
        let (subject, record) = next_record(&mut resolver_all, "the resolver's feed").await;
        seen.push((subject, record.stream_id, record.version));
    }
    let expected: Vec<(String, String, u64)> = [("forum-b", "b-battle", 0), ("forum-b", "b-battle", 1)]
        .into_iter()
        .chain([("forum-b", "b-battle", 2), ("forum-a", "a-battle", 0), ("forum-a", "a-battle", 1)])
        .map(|(t, s, v)| (format!("battlelog.events.{t}.{s}"), s.to_owned(), v))
        .collect();
    assert_eq!(seen, expected, "every event, in journal order, on its tenant's subject");

    // Nobody but the journal publishes under battlelog.events: not a tenant
    // (not even on its own subjects), not the resolver.
    tenant_a.publish("battlelog.events.forum-a.a-battle", "forged".into()).await.expect("sent");
    tenant_a.publish("battlelog.events.forum-b.b-battle", "forged".into()).await.expect("sent");
    tenant_a.flush().await.expect("flush");
    violation(&mut a_events, r#"Publish to "battlelog.events.forum-a.a-battle""#).await;
    violation(&mut a_events, r#"Publish to "battlelog.events.forum-b.b-battle""#).await;
    resolver.publish("battlelog.events.forum-a.a-battle", "forged".into()).await.expect("sent");
    resolver.flush().await.expect("flush");
    violation(&mut resolver_events, r#"Publish to "battlelog.events.forum-a.a-battle""#).await;
    // None of the forgeries reached a subscriber: the next message anyone
    // sees is the journal's next event.
    append(&mut c, "a-battle", any(), vec![rolled(1, "a1", "")]).await.expect("A's next roll");
    let (_, record) = next_record(&mut a_own, "A's next roll").await;
    assert_eq!((record.stream_id.as_str(), record.version), ("a-battle", 2));
    let (_, record) = next_record(&mut resolver_all, "A's next roll").await;
    assert_eq!((record.stream_id.as_str(), record.version), ("a-battle", 2), "the forgeries did not arrive");

    // Nor can a tenant read the stream through JetStream's API.
    let mut js = async_nats::jetstream::new(tenant_a.clone());
    js.set_timeout(Duration::from_secs(2));
    assert!(js.get_stream("BATTLELOG_EVENTS").await.is_err(), "tenant A reached JetStream's API");
    violation(&mut a_events, r#"Publish to "$JS.API.STREAM.INFO.BATTLELOG_EVENTS""#).await;

    // No password in the journal's logs, though its URL carried one.
    assert!(!server.log().contains(password("journal")), "the journal logged its NATS password");
    assert!(server.log().contains("journal:***@"), "the journal logs its NATS URL masked:\n{}", server.log());
}

/// The `webhooks` user reads the fan-out only through its own durable
/// consumer (which the webhooks system test shows is enough): it may not
/// subscribe to event subjects, publish under them, delete the stream, or
/// make or read another consumer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_webhooks_user_reaches_nothing_but_its_own_consumer() {
    let nats = start_nats();
    let (webhooks, mut events) = connect_as(&nats, "webhooks").await;
    let _subscription = webhooks.subscribe("battlelog.events.>").await.expect("subscribe");
    webhooks.flush().await.expect("flush");
    violation(&mut events, r#"Subscription to "battlelog.events.>""#).await;
    for subject in [
        "battlelog.events.forum-a.a-battle",
        "battlelog.journal.forum-a.a-battle",
        "$JS.API.STREAM.DELETE.BATTLELOG_EVENTS",
        "$JS.API.CONSUMER.CREATE.BATTLELOG_EVENTS.someone-else",
        "$JS.API.CONSUMER.MSG.NEXT.BATTLELOG_EVENTS.someone-else",
    ] {
        webhooks.publish(subject, "forged".into()).await.expect("sent");
        webhooks.flush().await.expect("flush");
        violation(&mut events, &format!(r#"Publish to "{subject}""#)).await;
    }
}

/// Logging in takes the right password; and async-nats 0.51 ignores
/// credentials written in the URL (why `battlelog_runtime::nats_url::NatsUrl`
/// hands them over as connect options). Should async-nats start reading
/// them, the last assertion fails and that split becomes merely redundant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logins_need_the_right_password() {
    let nats = start_nats();
    let refused = |result: Result<async_nats::Client, async_nats::ConnectError>| match result {
        Ok(_) => panic!("logged in"),
        Err(e) => e.kind(),
    };
    assert_eq!(refused(async_nats::connect(nats.url()).await), ConnectErrorKind::AuthorizationViolation);
    let wrong = ConnectOptions::with_user_and_password("journal".into(), "wrong".into()).connect(nats.url()).await;
    assert_eq!(refused(wrong), ConnectErrorKind::AuthorizationViolation);
    let in_url = format!("nats://journal:{}@127.0.0.1:{}", password("journal"), nats.port());
    assert_eq!(refused(async_nats::connect(in_url).await), ConnectErrorKind::AuthorizationViolation);
    connect_as(&nats, "journal").await;
    // The monitoring endpoints need no password: the shipped config serves
    // them on loopback only (the harness only moves them to a free port).
    let log = nats.log();
    assert!(log.contains("Starting http monitor on 127.0.0.1:"), "monitoring on loopback only:\n{log}");
}

/// Version 0 of a berserk battle the resolver can fold (the commitment is
/// not checked by a fold).
fn foldable_opened(key: &str) -> pb::NewEvent {
    let participant =
        battlelog_proto::battle::json_to_struct(serde_json::json!({"id": "a"}).as_object().expect("an object"));
    battle_event(
        pb::battle_event::Event::BattleOpened(pb::BattleOpened {
            ruleset: "berserk@1".into(),
            participants: vec![participant],
            commitment: commitment_hex(0),
            ..Default::default()
        }),
        key,
    )
}

/// The standalone resolver follows NATS as the `resolver` user from the
/// credentials in its URL (which async-nats alone would ignore, and the
/// shipped config then refuses), and logs that URL with the password masked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_resolver_logs_in_to_nats_with_the_credentials_in_its_url() {
    use battlelog_proto::v1::resolver_server::Resolver;

    let nats = start_nats();
    let dir = temp_dir("nats-resolver");
    let journal_nats = format!("nats://journal:{}@127.0.0.1:{}", password("journal"), nats.port());
    let resolver_nats = format!("nats://resolver:{}@127.0.0.1:{}", password("resolver"), nats.port());
    let server = journal(&dir.path().join("data"), Some(&journal_nats)).await;
    let mut c = client(&server).await;
    append(&mut c, "warm", no_stream(), vec![foldable_opened("")]).await.expect("the battle");

    // The resolver's own NATS follower, in process, so that its cache shows.
    // The roller is never called: warming reads only the journal.
    let token = battlelog_test_support::TestAuth::shared().service_token();
    let service =
        battlelog_resolver::server::service_for(&server.url(), "http://127.0.0.1:9", None, &token).expect("a resolver");
    let get = pb::GetBattleRequest { battle_id: "warm".into(), at_version: None };
    // Called in process, past the authenticator: the caller it would have
    // left is the battle's own forum (this battle has no tenant).
    let mut request = tonic::Request::new(get);
    let forum = battlelog_auth::Caller {
        subject: "forum".into(),
        tenant: String::new(),
        role: battlelog_auth::Role::Forum,
        expires_at: u64::MAX,
    };
    request.extensions_mut().insert(forum);
    service.get_battle(request).await.expect("the battle is cached");
    assert_eq!(service.cached_head("warm"), Some(0));
    tokio::spawn(battlelog_resolver::server::warm_from_nats(
        service.clone(),
        resolver_nats.parse().expect("a NATS URL"),
        "battlelog.events.>".into(),
    ));
    // Core NATS drops what is published before the subscription is in
    // place, and nothing says when it is: journal rolls until one of them
    // reaches the resolver's cache through NATS (nothing else moves it).
    let mut nonce = 0;
    let head = battlelog_test_support::poll_until("an event through NATS to the resolver", WAIT, || {
        let cached = service.cached_head("warm");
        let mut c = c.clone();
        nonce += 1;
        let next = nonce - 1;
        async move {
            if cached.is_some_and(|head| head >= 1) {
                return cached;
            }
            append(&mut c, "warm", any(), vec![rolled(next, "hint", "")]).await.expect("a roll");
            None
        }
    })
    .await;
    assert!(head >= 1);

    // The binary logs the URL it follows, masked.
    let log = dir.path().join("resolver.log");
    let resolver =
        battlelog_test_support::resolver(&log, &server.url(), "http://127.0.0.1:9", Some(&resolver_nats)).await;
    let line = battlelog_test_support::poll_until("the resolver to follow NATS", WAIT, || {
        let line = resolver.log().lines().find(|l| l.contains("following the NATS event feed")).map(str::to_owned);
        async move { line }
    })
    .await;
    assert!(line.contains("resolver:***@127.0.0.1"), "{line}");
    assert!(!resolver.log().contains(password("resolver")), "the resolver logged its NATS password");
}

/// `battlelog watch --battle` follows the subject layout
/// `battlelog.events.<tenant>.<battle>`, logs in with the credentials in
/// its NATS URL (shown masked), and with `--tenant` works for a tenant's
/// own user, which may subscribe to nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_follows_one_battle_on_the_tenant_subjects_with_credentials() {
    let nats = start_nats();
    let dir = temp_dir("nats-watch");
    let url_of = |user: &str| format!("nats://{user}:{}@127.0.0.1:{}", password(user), nats.port());
    let server = journal(&dir.path().join("data"), Some(&url_of("journal"))).await;
    let mut c = client(&server).await;

    let resolver_url = url_of("resolver");
    let (mut any_tenant, said) = watch(&["--battle", "a-battle", "--nats-url", &resolver_url]).await;
    assert_eq!(
        said,
        format!(
            "watching battlelog.events.*.a-battle and battlelog.journal.*.a-battle on nats://resolver:***@127.0.0.1:{} (Ctrl-C stops)",
            nats.port()
        )
    );
    let tenant_url = url_of("forum-a");
    let args = ["--tenant", "forum-a", "--battle", "a-battle", "--nats-url", &tenant_url];
    let (mut own_tenant, said) = watch(&args).await;
    assert!(
        said.starts_with(
            "watching battlelog.events.forum-a.a-battle and battlelog.journal.forum-a.a-battle on nats://forum-a:***@"
        ),
        "{said}"
    );

    // B's battle first, then A's: the journal publishes in that order, so
    // a B event that got through would come before A's.
    append(&mut c, "b-battle", no_stream(), vec![opened("forum-b", ""), rolled(0, "b0", "")]).await.expect("B");
    append(&mut c, "a-battle", no_stream(), vec![opened("forum-a", ""), rolled(0, "a0", "")]).await.expect("A");
    for watch in [&mut any_tenant, &mut own_tenant] {
        assert!(watch.next_stdout().await.starts_with("a-battle #0 BattleOpened"));
        assert!(watch.next_stdout().await.starts_with("a-battle #1 DiceRolled"));
    }
    // Forum A's user asking for every tenant is refused, and told so (the
    // server's error and the "watching" line may come in either order).
    let (mut too_wide, mut said) = watch(&["--nats-url", &tenant_url]).await;
    while !said.to_lowercase().contains(r#"permissions violation for subscription to "battlelog.events.>""#) {
        said = too_wide.next_stderr().await;
    }
}

/// `battlelog watch <args>` on NATS only: never the journal, so a NATS that
/// does not work must fail here.
async fn watch(args: &[&str]) -> (WatchProcess, String) {
    let mut args = args.to_vec();
    args.extend(["--journal", "http://127.0.0.1:9"]);
    WatchProcess::start(&args).await
}
