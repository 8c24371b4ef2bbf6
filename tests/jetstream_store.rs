//! The JetStream store (`battlelog_journal::store::jetstream`) against a
//! real nats-server: what it writes where, conflicts between journals
//! sharing one stream, and a journal that starts again finding every battle
//! as it was. The storage conformance suite runs it too
//! (`store_conformance.rs`); these are the JetStream-specific properties.
//!
//! Appends here are planned by a small planner of the test's own (the
//! journal's planner decides the same things above any store): the store
//! must take exactly what it is given.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_nats::jetstream;
use battlelog_journal::ExpectedVersion;
use battlelog_journal::chain::{self, ChainCheck};
use battlelog_journal::guard::BattleState;
use battlelog_journal::record::{self, Hash};
use battlelog_journal::store::conformance;
use battlelog_journal::store::jetstream::{JetStreamOptions, JetStreamStore, SUBJECT_PREFIX};
use battlelog_journal::store::{
    Conflict, EventStore, Head, KeyEntry, Page, PlannedAppend, PlannedRecord, StoreFuture, StoredEvent,
};
use battlelog_proto::v1::{BattleOpened, JournalRecord, battle_event::Event};
use battlelog_test_support::journal_client;
use battlelog_test_support::journal_client::{
    any, append, check_chain, client, exact, head, no_stream, opened as opened_event, race_guarded_writers,
    read_stream, resolved as resolved_event, rolled, verify,
};
use battlelog_test_support::stack;
use battlelog_test_support::{NatsServer, ServiceProcess, StartOptions, shipped_nats};
use tokio_stream::StreamExt;

/// A nats-server that takes the journal's largest append (the default
/// `max_payload` of 1 MiB does not).
fn nats() -> (NatsServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("nats.conf");
    std::fs::write(&config, "max_payload: 8MB\n").expect("write the NATS config");
    (NatsServer::start_with_config(&config, &[]), dir)
}

async fn store(url: &str) -> JetStreamStore {
    JetStreamStore::connect(JetStreamOptions::new(url)).await.expect("connect the JetStream store")
}

/// One event to plan: type, payload, idempotency key.
type Event3 = (String, Vec<u8>, Option<String>);

fn opening(tenant: &str, key: &str) -> Event3 {
    let opened = Event::BattleOpened(BattleOpened { tenant: tenant.into(), title: "t".into(), ..Default::default() });
    let new = battlelog_proto::battle::new_event(opened, key.into());
    (new.event_type, new.payload, Some(key.to_owned()))
}

fn note(text: &str, key: Option<&str>) -> Event3 {
    ("Note".to_owned(), text.as_bytes().to_vec(), key.map(str::to_owned))
}

fn state(n: u64) -> BattleState {
    BattleState {
        next_nonce: n,
        epoch: 1,
        commitment: [n as u8; 32],
        revealed: false,
        closed: false,
        pending: n % 2 == 1,
        bytes: n * 10,
    }
}

/// Plans `events` on `head` the way the journal does: the next versions,
/// the chain, the keys' fingerprints.
fn plan(stream_id: &str, head: Option<Head>, events: &[Event3]) -> PlannedAppend {
    let expected = head.map(|h| h.version);
    let mut previous: Hash = head.map_or_else(|| record::genesis_hash(stream_id), |h| h.hash);
    let first = expected.map_or(0, |v| v + 1);
    let records = events
        .iter()
        .enumerate()
        .map(|(i, (event_type, payload, key))| {
            let bytes = record::encode(&JournalRecord {
                stream_id: stream_id.into(),
                version: first + i as u64,
                event_id: format!("{stream_id}-{}-{}", first + i as u64, rand_suffix()),
                event_type: event_type.clone(),
                recorded_at_unix_micros: 1,
                idempotency_key: key.clone().unwrap_or_default(),
                payload: payload.clone(),
            });
            let hash = record::chain_hash(&previous, &bytes);
            previous = hash;
            let key = key.clone().map(|k| (k, record::fingerprint(event_type, payload)));
            PlannedRecord { bytes, hash, key }
        })
        .collect::<Vec<_>>();
    let last = first + records.len() as u64 - 1;
    PlannedAppend { stream_id: stream_id.into(), expected, records, state: state(last) }
}

/// Distinct event ids for plans of the same version (two journals racing
/// give their events different ids).
fn rand_suffix() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A fresh store on a fresh server, for the conformance suite.
async fn fresh_store() -> (Arc<dyn EventStore>, (NatsServer, tempfile::TempDir)) {
    let (nats, dir) = nats();
    let store = store(&nats.url()).await;
    (Arc::new(store), (nats, dir))
}

/// The storage conformance suite, unchanged, on a real nats-server.
mod suite {
    battlelog_journal::conformance_tests!(super::fresh_store());
}

/// The suite's reopen check: a new store on the same server finds
/// everything the last one held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_survives_reopen() {
    let (nats, _dir) = nats();
    let url = nats.url();
    conformance::survives_reopen(|| {
        let url = url.clone();
        async move { Arc::new(store(&url).await) as Arc<dyn EventStore> }
    })
    .await;
}

async fn append_one(store: &JetStreamStore, append: PlannedAppend) -> Result<Vec<u64>, Conflict> {
    let mut results = store.append(vec![append]).await.expect("the engine answers");
    assert_eq!(results.len(), 1);
    results.remove(0)
}

#[tokio::test]
async fn a_battle_is_one_subject_under_its_tenant_and_reads_back_exactly() {
    let (nats, _dir) = nats();
    let store = store(&nats.url()).await;
    let open = plan("b1", None, &[opening("forum-a", "open-1"), note("hello", None)]);
    let positions = append_one(&store, open.clone()).await.expect("a new battle");
    assert_eq!(positions.len(), 2);
    assert!(positions[0] < positions[1]);

    let head = store.head("b1").await.unwrap().expect("a head");
    assert_eq!((head.version, head.hash, head.state), (1, open.records[1].hash, Some(open.state)));
    let more = plan("b1", Some(head), &[note("a", Some("k-a")), note("b", Some("k-b")), note("c", None)]);
    let later = append_one(&store, more.clone()).await.expect("the next append");
    assert!(later[0] > positions[1], "positions increase in commit order");

    // The message sits on the battle's subject under its tenant.
    let client = async_nats::connect(nats.url()).await.unwrap();
    let js = jetstream::new(client);
    let raw = js.get_stream("BATTLELOG_JOURNAL").await.unwrap();
    let last = raw.get_last_raw_message_by_subject(&format!("{SUBJECT_PREFIX}.forum-a.b1")).await.unwrap();
    assert_eq!(last.headers.get("Battlelog-First-Version").map(|v| v.as_str()), Some("2"));
    let info = js.get_stream("BATTLELOG_JOURNAL").await.unwrap().info().await.unwrap().clone();
    assert_eq!(info.state.messages, 2, "one message per append");
    assert!(info.config.deny_delete && info.config.deny_purge && !info.config.allow_direct);

    // Keys, with the version and fingerprint they were recorded with.
    let keys = ["open-1", "k-b", "nope"].map(str::to_owned);
    let entries = store.idempotency("b1", &keys).await.unwrap();
    assert_eq!(entries[0].map(|e| e.version), Some(0));
    assert_eq!(entries[1].map(|e| (e.version, e.fingerprint)), Some((3, record::fingerprint("Note", b"b"))));
    assert_eq!(entries[2], None);

    // Reads: the exact bytes and hashes, from any version, bounded.
    let all: Vec<_> = open.records.iter().chain(&more.records).collect();
    let read = store.read_stream("b1", 0, Page::count(100)).await.unwrap();
    assert_eq!(
        read.iter().map(|e| (&e.record, e.hash)).collect::<Vec<_>>(),
        all.iter().map(|r| (&r.bytes, r.hash)).collect::<Vec<_>>()
    );
    let middle = store.read_stream("b1", 3, Page::count(1)).await.unwrap();
    assert_eq!(middle.iter().map(|e| e.event.version).collect::<Vec<_>>(), [3]);
    assert!(store.read_stream("b1", 5, Page::count(10)).await.unwrap().is_empty());
    // read_all from a position inside a message starts at that event; from
    // just past an event, at the next one.
    let global = store.read_all(0, Page::count(100)).await.unwrap();
    assert_eq!(global.len(), 5);
    let from = store.read_all(global[3].global_position, Page::count(100)).await.unwrap();
    assert_eq!(from.iter().map(|e| e.event.version).collect::<Vec<_>>(), [3, 4]);
    let past = store.read_all(global[1].global_position + 1, Page::count(1)).await.unwrap();
    assert_eq!(past.iter().map(|e| e.event.version).collect::<Vec<_>>(), [2]);
    assert!(store.read_all(global[4].global_position + 1, Page::count(10)).await.unwrap().is_empty());

    match chain::check(&store, "b1").await.unwrap() {
        ChainCheck::Ok { count, head_hash } => assert_eq!((count, head_hash), (5, more.records[2].hash)),
        broken => panic!("{broken:?}"),
    }
    assert!(matches!(chain::check(&store, "none").await.unwrap(), ChainCheck::Ok { count: 0, .. }));
    store.close().await.unwrap();
}

#[tokio::test]
async fn stale_plans_conflict_and_write_nothing() {
    let (nats, _dir) = nats();
    let a = store(&nats.url()).await;
    let b = store(&nats.url()).await;
    append_one(&a, plan("b2", None, &[opening("forum-a", "open")])).await.unwrap();
    // b never read the battle: its plan for a new stream, under another
    // tenant, is refused by JetStream's check across every tenant's subject.
    let fork = plan("b2", None, &[opening("forum-b", "open-b")]);
    assert_eq!(append_one(&b, fork).await, Err(Conflict { actual: Some(0) }));
    let head = b.head("b2").await.unwrap().unwrap();
    append_one(&b, plan("b2", Some(head), &[note("from b", None)])).await.unwrap();
    // a planned against version 0, which is no longer the head.
    let stale = plan("b2", Some(head), &[note("from a", None)]);
    assert_eq!(append_one(&a, stale).await, Err(Conflict { actual: Some(1) }));
    assert_eq!(a.read_stream("b2", 0, Page::count(10)).await.unwrap().len(), 2);
    assert!(matches!(chain::check(&a, "b2").await.unwrap(), ChainCheck::Ok { count: 2, .. }));
}

/// Two journals ("replicas") on one stream append to one battle at once:
/// every append either lands or conflicts, versions stay consecutive, the
/// chain holds.
#[tokio::test]
async fn two_journals_racing_on_one_battle_never_fork_it() {
    let (nats, _dir) = nats();
    let stores = [Arc::new(store(&nats.url()).await), Arc::new(store(&nats.url()).await)];
    append_one(&stores[0], plan("race", None, &[opening("forum-a", "open")])).await.unwrap();
    const PER_WRITER: u64 = 40;
    let conflicts = Arc::new(AtomicU64::new(0));
    let mut writers = Vec::new();
    for writer in 0..8u64 {
        let store = stores[(writer % 2) as usize].clone();
        let conflicts = conflicts.clone();
        writers.push(tokio::spawn(async move {
            let mut done = 0;
            while done < PER_WRITER {
                let head = store.head("race").await.unwrap();
                let key = format!("w{writer}-{done}");
                match append_one(&store, plan("race", head, &[note(&key, Some(&key))])).await {
                    Ok(_) => done += 1,
                    Err(Conflict { actual }) => {
                        assert!(actual > head.map(|h| h.version), "a conflict names a newer head");
                        conflicts.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }));
    }
    for writer in writers {
        writer.await.unwrap();
    }
    let events = stores[1].read_stream("race", 0, Page::count(10_000)).await.unwrap();
    assert_eq!(events.len() as u64, 1 + 8 * PER_WRITER, "every acknowledged append, once");
    for (i, event) in events.iter().enumerate() {
        assert_eq!(event.event.version, i as u64);
    }
    for store in &stores {
        assert!(
            matches!(chain::check(store.as_ref(), "race").await.unwrap(), ChainCheck::Ok { count, .. } if count == 1 + 8 * PER_WRITER)
        );
        assert_eq!(store.head("race").await.unwrap().map(|h| h.version), Some(8 * PER_WRITER));
    }
    assert!(conflicts.load(Ordering::Relaxed) > 0, "eight writers on one battle raced at least once");
    // The global log holds the same events (one battle here), read whole
    // (reading ahead) or page by page from each last position + 1.
    let log = stores[0].read_all(0, Page::count(10_000)).await.unwrap();
    assert_eq!(log, events);
    let mut paged: Vec<StoredEvent> = Vec::new();
    loop {
        let from = paged.last().map_or(0, |e| e.global_position + 1);
        let page = stores[1].read_all(from, Page::count(7)).await.unwrap();
        if page.is_empty() {
            break;
        }
        paged.extend(page);
    }
    assert_eq!(paged, events);
    let tail = stores[1].read_stream("race", 300, Page::count(10_000)).await.unwrap();
    assert_eq!(tail, events[300..]);
}

#[tokio::test]
async fn a_new_journal_on_the_same_nats_continues_every_battle() {
    let (mut nats, _dir) = nats();
    let first = store(&nats.url()).await;
    let mut heads = Vec::new();
    for battle in ["r1", "r2"] {
        append_one(&first, plan(battle, None, &[opening("forum-a", &format!("{battle}-open"))])).await.unwrap();
        let head = first.head(battle).await.unwrap();
        append_one(&first, plan(battle, head, &[note("x", Some("k1"))])).await.unwrap();
        heads.push(first.head(battle).await.unwrap().unwrap());
    }
    first.close().await.unwrap();
    // The server restarts too: file storage keeps the stream.
    nats.restart();
    let second = store(&nats.url()).await;
    for (battle, head) in ["r1", "r2"].into_iter().zip(heads) {
        assert_eq!(second.head(battle).await.unwrap(), Some(head));
        let keys = second.idempotency(battle, &["k1".to_owned(), format!("{battle}-open")]).await.unwrap();
        assert_eq!(keys.iter().map(|k| k.map(|k| k.version)).collect::<Vec<_>>(), [Some(1), Some(0)]);
        append_one(&second, plan(battle, Some(head), &[note("y", None)])).await.expect("it continues");
        assert!(matches!(chain::check(&second, battle).await.unwrap(), ChainCheck::Ok { count: 3, .. }));
    }
}

#[tokio::test]
async fn another_journals_append_moves_changes() {
    let (nats, _dir) = nats();
    let a = store(&nats.url()).await;
    let b = store(&nats.url()).await;
    let mut changes = b.changes();
    // The consumer behind it is created in the background; wait for its
    // first move (it moves once when it starts).
    tokio::time::timeout(Duration::from_secs(10), changes.changed()).await.expect("the watcher starts").unwrap();
    changes.borrow_and_update();
    append_one(&a, plan("w1", None, &[opening("forum-a", "open")])).await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), changes.changed()).await.expect("b sees a's append").unwrap();
    assert_eq!(b.read_all(0, Page::count(10)).await.unwrap().len(), 1, "what moved it is readable");
}

#[tokio::test]
async fn appends_are_fitted_under_the_servers_max_payload_at_connect() {
    // The default max_payload is 1 MiB; the default limits' largest append
    // weighs 1 102 624 bytes, 54 048 of them besides its payloads.
    let nats = NatsServer::start();
    let fitted = 1024 * 1024 - (1_102_624 - 1024 * 1024);
    let store = JetStreamStore::connect(JetStreamOptions::new(nats.url())).await.expect("fitted, not refused");
    assert_eq!(store.max_append_bytes(), fitted);
    // At the server's 1 MiB exactly, and below, kept as configured.
    let at = JetStreamOptions { max_append_bytes: fitted, ..JetStreamOptions::new(nats.url()) };
    assert_eq!(at.max_message_bytes(), 1024 * 1024);
    assert_eq!(JetStreamStore::connect(at.clone()).await.expect("within").max_append_bytes(), fitted);
    let below = JetStreamOptions { max_append_bytes: fitted - 1, ..at.clone() };
    assert_eq!(JetStreamStore::connect(below).await.expect("within").max_append_bytes(), fitted - 1);
    // One byte over: lowered by that byte.
    let over = JetStreamOptions { max_append_bytes: fitted + 1, ..at };
    assert_eq!(JetStreamStore::connect(over).await.expect("fitted").max_append_bytes(), fitted);
    // Not even one event of max_payload_bytes fits: refused, naming both.
    let big_events = JetStreamOptions { max_payload_bytes: fitted + 1, ..JetStreamOptions::new(nats.url()) };
    let error = JetStreamStore::connect(big_events).await.unwrap_err().to_string();
    assert!(error.contains("max_payload") && error.contains("max_payload_bytes"), "{error}");
    let too_many = JetStreamOptions { max_events_per_append: 65_537, ..JetStreamOptions::new(nats.url()) };
    let error = JetStreamStore::connect(too_many).await.unwrap_err().to_string();
    assert!(error.contains("max_events_per_append"), "{error}");
}

/// `battlelog journal copy` to or from a JetStream log is the journal's
/// NATS user's (under the shipped config): with a tenant's or the
/// resolver's credentials it fails with one line naming the store, and
/// nothing reaches the log; with the journal's it copies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_journals_nats_user_may_copy_a_journal() {
    let nats = shipped_nats();
    let port = nats.port();
    let dir = tempfile::tempdir().expect("temp dir");
    let sled_dir = dir.path().join("sled");
    let sled = battlelog_journal::Journal::open(battlelog_journal::JournalOptions::new(&sled_dir)).await.unwrap();
    sled.append("cp1".into(), ExpectedVersion::NoStream, vec![conformance::opened("forum-a")]).await.unwrap();
    sled.shutdown().await.unwrap();
    drop(sled);
    let sled_arg = format!("sled:{}", sled_dir.display());
    let copy = |from: String, to: String| async move {
        let args = ["journal".to_owned(), "copy".to_owned(), "--from".to_owned(), from, "--to".to_owned(), to];
        tokio::task::spawn_blocking(move || stack::cli(&args.iter().map(String::as_str).collect::<Vec<_>>()))
            .await
            .expect("copy")
    };
    for user in ["forum-a:ap", "resolver:rp"] {
        let url = format!("jetstream:nats://{user}@127.0.0.1:{port}");
        for (from, to, side) in [(sled_arg.clone(), url.clone(), "--to"), (url.clone(), sled_arg.clone(), "--from")] {
            let (code, stdout, stderr) = copy(from, to).await;
            assert_eq!(code, Some(2), "{user} {side}: {stdout}{stderr}");
            assert!(stdout.is_empty(), "{user} {side}: {stdout}");
            assert_eq!(stderr.trim_end().lines().count(), 1, "{user} {side}: one line: {stderr}");
            assert!(stderr.starts_with(&format!("battlelog: {side}")) || stderr.contains(side), "{user}: {stderr}");
        }
    }
    let journal_store = store(&format!("nats://journal:jp@127.0.0.1:{port}")).await;
    assert!(journal_store.read_all(0, Page::count(10)).await.unwrap().is_empty(), "nothing reached the log");
    let (code, stdout, stderr) = copy(sled_arg, format!("jetstream:nats://journal:jp@127.0.0.1:{port}")).await;
    assert_eq!(code, Some(0), "the journal's user copies: {stderr}");
    assert!(stdout.starts_with("copied 1 events"), "{stdout}");
    assert_eq!(journal_store.read_all(0, Page::count(10)).await.unwrap().len(), 1);
}

/// The shipped NATS config (`deploy/nats/nats.conf`) runs the JetStream
/// backend: its journal user may do what the backend does (no more than the
/// crate README lists), and a tenant's user reads that tenant's battles only.
#[tokio::test]
async fn the_shipped_nats_config_runs_the_jetstream_journal() {
    let nats = shipped_nats();
    let port = nats.port();
    let store = store(&format!("nats://journal:jp@127.0.0.1:{port}")).await;
    let mut changes = store.changes();
    let started = tokio::time::timeout(Duration::from_secs(10), changes.changed()).await;
    assert!(started.is_ok(), "the watcher starts; NATS says:\n{}", nats.log());
    let tenant = async_nats::ConnectOptions::with_user_and_password("forum-a".into(), "ap".into())
        .connect(format!("127.0.0.1:{port}"))
        .await
        .unwrap();
    let mut feed = tenant.subscribe("battlelog.journal.forum-a.>").await.unwrap();
    tenant.flush().await.unwrap();
    let resolver = async_nats::ConnectOptions::with_user_and_password("resolver".into(), "rp".into())
        .connect(format!("127.0.0.1:{port}"))
        .await
        .unwrap();
    let mut everything = resolver.subscribe("battlelog.journal.>").await.unwrap();
    resolver.flush().await.unwrap();
    for (battle, forum) in [("p1", "forum-b"), ("p2", "forum-a")] {
        append_one(&store, plan(battle, None, &[opening(forum, "open")])).await.expect("the journal may publish");
        let head = store.head(battle).await.unwrap();
        append_one(&store, plan(battle, head, &[note("n", Some("k"))])).await.unwrap();
    }
    assert_eq!(store.read_all(0, Page::count(10)).await.unwrap().len(), 4);
    tokio::time::timeout(Duration::from_secs(10), changes.changed()).await.expect("changes move").unwrap();
    let seen = tokio::time::timeout(Duration::from_secs(10), feed.next()).await.expect("forum-a's feed").unwrap();
    assert_eq!(seen.subject.as_str(), "battlelog.journal.forum-a.p2", "forum-a sees its battle, not forum-b's");
    let first = tokio::time::timeout(Duration::from_secs(10), everything.next()).await.expect("the resolver's feed");
    assert_eq!(first.unwrap().subject.as_str(), "battlelog.journal.forum-b.p1", "the resolver sees every tenant's");
}

// ----------------------------------------------------------------------------
// The real `battlelog-journal --backend jetstream` and `battlelog up`

/// A journal process with its log in the JetStream stream at `nats_url`.
async fn journal_process(dir: &std::path::Path, name: &str, nats_url: &str) -> ServiceProcess {
    let options = StartOptions {
        envs: vec![("BATTLELOG_JOURNAL_BACKEND".to_owned(), "jetstream".to_owned())],
        ..StartOptions::default()
    };
    battlelog_test_support::journal_with(&dir.join(name), Some(nats_url), &options).await
}

/// Two journal processes on one stream, writers spread over both, every
/// append guarded by the version its writer last saw: each version is
/// acknowledged once, versions are consecutive, both journals read the same
/// chain.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_journal_processes_on_one_stream_never_fork_a_battle() {
    let (nats, _nats_dir) = nats();
    let dir = tempfile::tempdir().expect("temp dir");
    let journals =
        [journal_process(dir.path(), "a", &nats.url()).await, journal_process(dir.path(), "b", &nats.url()).await];
    append(&mut client(&journals[0]).await, "hot", no_stream(), vec![opened_event("forum-a", "")]).await.expect("open");
    const WRITERS: usize = 8;
    const PER_WRITER: usize = 10;
    let mut clients = Vec::new();
    for w in 0..WRITERS {
        clients.push(client(&journals[w % 2]).await);
    }
    let (acked, conflicts) = race_guarded_writers(clients, "hot", PER_WRITER).await;
    let total = (WRITERS * PER_WRITER) as u64;
    assert_eq!(acked.into_keys().collect::<Vec<_>>(), (1..=total).collect::<Vec<_>>());
    assert!(conflicts > 0, "writers on two journals met conflicts");
    let a = read_stream(&mut client(&journals[0]).await, "hot").await;
    let b = read_stream(&mut client(&journals[1]).await, "hot").await;
    assert_eq!(a.len() as u64, total + 1);
    assert_eq!(a, b, "both journals read the same battle");
    check_chain("hot", &a);
    for journal in &journals {
        assert!(verify(&mut client(journal).await, "hot").await.ok);
    }
}

/// A journal process that stops, and another started on the same NATS:
/// every battle goes on from its head, and idempotency keys still answer
/// with the original versions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_journal_process_continues_every_battle() {
    let (nats, _nats_dir) = nats();
    let dir = tempfile::tempdir().expect("temp dir");
    let first = journal_process(dir.path(), "first", &nats.url()).await;
    let mut c = client(&first).await;
    let mut originals = Vec::new();
    for battle in ["r1", "r2"] {
        append(&mut c, battle, no_stream(), vec![opened_event("forum-a", &format!("{battle}-open"))])
            .await
            .expect("open");
        let reply = append(&mut c, battle, exact(Some(0)), vec![rolled(0, "first", &format!("{battle}-roll"))])
            .await
            .expect("roll");
        originals.push(reply);
    }
    first.kill_9();
    let second = journal_process(dir.path(), "second", &nats.url()).await;
    let mut c = client(&second).await;
    for (battle, original) in ["r1", "r2"].into_iter().zip(originals) {
        assert_eq!(head(&mut c, battle).await, Some(1));
        let repeat =
            append(&mut c, battle, any(), vec![rolled(0, "first", &format!("{battle}-roll"))]).await.expect("a retry");
        assert!(repeat.deduplicated, "the key outlived the process");
        assert_eq!(repeat.events, original.events);
        let next = append(&mut c, battle, exact(Some(1)), vec![rolled(1, "second", "")]).await.expect("it goes on");
        assert_eq!(next.events[0].version, 2);
        assert!(verify(&mut c, battle).await.ok);
    }
}

/// `battlelog up --journal-backend jetstream` with the nats-server it
/// starts itself (its users and permissions): the demo plays, every battle
/// exports and audits, and the journal's log is the JetStream stream — no
/// second copy of the events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn up_on_the_jetstream_journal_plays_the_demo_and_every_export_verifies() {
    battlelog_test_support::nats_server_binary();
    let dir = tempfile::tempdir().expect("temp dir");
    let up = stack::up(dir.path(), &["--journal-backend", "jetstream"]);
    let events = up.banner.iter().find(|l| l.trim_start().starts_with("events")).expect("an events line").clone();
    assert!(events.contains("BATTLELOG_JOURNAL") && events.contains("started by battlelog up"), "{events}");
    let data = dir.path().display().to_string();
    let resolver = up.resolver.clone();
    let battles = tokio::task::spawn_blocking(move || {
        let (code, stdout, stderr) = stack::cli(&["demo", "--resolver", &resolver, "--data-dir", &data]);
        assert_eq!(code, Some(0), "demo: {stderr}\n{stdout}");
        let exports: Vec<Vec<String>> = stdout
            .lines()
            .filter_map(|l| l.trim().strip_prefix("battlelog "))
            .map(|l| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
            .filter(|words| words.first().map(String::as_str) == Some("export") && words.len() == 6)
            .collect();
        assert_eq!(exports.len(), 4, "one export per ruleset:\n{stdout}");
        for words in &exports {
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            let (code, export, stderr) = stack::cli(&words);
            assert_eq!(code, Some(0), "export {}: {stderr}", words[1]);
            let file = std::path::Path::new(&data).join(format!("{}.jsonl", words[1]));
            std::fs::write(&file, &export).expect("write the export");
            let (code, output) = stack::audit_file_with_key(&file, &stack::up_roller_key(std::path::Path::new(&data)));
            assert_eq!(code, Some(0), "audit --file {}:\n{output}", words[1]);
        }
        exports.into_iter().map(|w| w[1].clone()).collect::<Vec<_>>()
    })
    .await
    .expect("demo");
    // As the journal user of the server up started (its password is in the
    // config up wrote): every battle is a chain in the journal's stream.
    let config = std::fs::read_to_string(dir.path().join("nats").join("nats.conf")).expect("the NATS config");
    let password = stack::nats_password(&config, "journal");
    let url = events.split_whitespace().nth(1).expect("the NATS URL");
    let journal_url = url.replacen("nats://", &format!("nats://journal:{password}@"), 1);
    let store = store(&journal_url).await;
    for battle in &battles {
        assert!(matches!(chain::check(&store, battle).await.unwrap(), ChainCheck::Ok { count, .. } if count > 0));
    }
    let client = battlelog_runtime::nats_url::NatsUrl::new(&journal_url);
    let js = jetstream::new(client.connect_options().connect(client.address()).await.unwrap());
    assert!(js.get_stream("BATTLELOG_EVENTS").await.is_err(), "no second copy of the events");
    // Ctrl-C stops up, and up stops the nats-server it started.
    let mut up = up;
    let pid = up.child.id().to_string();
    assert!(std::process::Command::new("kill").args(["-INT", &pid]).status().expect("kill").success());
    let status = tokio::task::spawn_blocking(move || up.child.wait().expect("wait for up")).await.expect("wait");
    assert!(status.success(), "up exits 0 on SIGINT: {status:?}");
    let port: u16 = url.rsplit(':').next().and_then(|p| p.parse().ok()).expect("a port");
    battlelog_test_support::poll_until("up's nats-server to stop", Duration::from_secs(10), || async move {
        tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err().then_some(())
    })
    .await;
}

/// `--journal-backend jetstream` without NATS is refused, saying why.
#[test]
fn up_on_the_jetstream_journal_needs_nats() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().display().to_string();
    let (code, stdout, stderr) = stack::cli(&[
        "up",
        "--data-dir",
        &data,
        "--journal-backend",
        "jetstream",
        "--no-nats",
        "--journal-listen",
        "127.0.0.1:0",
        "--roller-listen",
        "127.0.0.1:0",
        "--resolver-listen",
        "127.0.0.1:0",
        "--web-listen",
        "127.0.0.1:0",
    ]);
    assert_ne!(code, Some(0), "{stdout}");
    assert!(stderr.contains("--journal-backend jetstream") && stderr.contains("--no-nats"), "{stderr}");
}

/// A store that, right after answering the planner's first idempotency
/// lookup, lets another journal (on the same NATS) commit an append with
/// the same key: the answer it gives is then already stale.
#[derive(Debug)]
struct RacingStore {
    inner: JetStreamStore,
    other: battlelog_journal::Journal,
    raced: std::sync::atomic::AtomicBool,
}

impl EventStore for RacingStore {
    fn engine(&self) -> &'static str {
        self.inner.engine()
    }
    fn head<'a>(&'a self, stream_id: &'a str) -> StoreFuture<'a, Option<Head>> {
        self.inner.head(stream_id)
    }
    fn idempotency<'a>(&'a self, stream_id: &'a str, keys: &'a [String]) -> StoreFuture<'a, Vec<Option<KeyEntry>>> {
        Box::pin(async move {
            let answer = self.inner.idempotency(stream_id, keys).await?;
            if !self.raced.swap(true, Ordering::SeqCst) {
                let event = conformance::keyed(conformance::resolved("the other journal's"), "k");
                self.other.append(stream_id.into(), ExpectedVersion::Any, vec![event]).await.expect("the race");
            }
            Ok(answer)
        })
    }
    fn append(&self, appends: Vec<PlannedAppend>) -> StoreFuture<'_, Vec<Result<Vec<u64>, Conflict>>> {
        self.inner.append(appends)
    }
    fn read_stream<'a>(&'a self, s: &'a str, from: u64, page: Page) -> StoreFuture<'a, Vec<StoredEvent>> {
        self.inner.read_stream(s, from, page)
    }
    fn read_all(&self, from: u64, page: Page) -> StoreFuture<'_, Vec<StoredEvent>> {
        self.inner.read_all(from, page)
    }
    fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.changes()
    }
    fn close(&self) -> StoreFuture<'_, ()> {
        self.inner.close()
    }
}

/// Two journals commit the same idempotency key at once, one of them just
/// after the other's planner looked the key up: the key is written once,
/// and the late one answers the other's append as a repeat.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_committed_by_another_journal_mid_plan_is_not_written_twice() {
    let (nats, _dir) = nats();
    let other = conformance::journal_on(Arc::new(store(&nats.url()).await)).await;
    other.append("k1".into(), ExpectedVersion::NoStream, vec![conformance::opened("forum-a")]).await.unwrap();
    let racing = RacingStore { inner: store(&nats.url()).await, other: other.clone(), raced: Default::default() };
    let journal = conformance::journal_on(Arc::new(racing)).await;
    let event = conformance::keyed(conformance::resolved("the other journal's"), "k");
    let outcome = journal.append("k1".into(), ExpectedVersion::Any, vec![event]).await.expect("the append");
    assert!(outcome.deduplicated, "the key was already committed: {outcome:?}");
    assert_eq!(outcome.events.iter().map(|e| e.version).collect::<Vec<_>>(), [1]);
    let events = journal.read_stream("k1", 0, 100).await.unwrap();
    assert_eq!(events.len(), 2, "the opening and one keyed event, not two");
}

/// A message on a battle's subject that does not chain (anyone allowed to
/// publish there could write one) is found by the chain check at its first
/// version; reads refuse the battle rather than serve it.
#[tokio::test]
async fn a_message_that_does_not_chain_is_found_at_its_first_version() {
    let (nats, _dir) = nats();
    let store = store(&nats.url()).await;
    let open = plan("t1", None, &[opening("forum-a", "open"), note("a", None)]);
    append_one(&store, open.clone()).await.unwrap();
    // The next append as planned, but with one byte of its record changed
    // after hashing: the stored hash no longer matches the bytes. The store
    // does not write it; published by hand, it is stored.
    let head = store.head("t1").await.unwrap();
    let mut forged = plan("t1", head, &[note("b", None), note("c", None)]);
    let last = forged.records[1].bytes.len() - 1;
    forged.records[1].bytes[last] ^= 1;
    assert!(store.append(vec![forged.clone()]).await.is_err(), "the store writes nothing that does not chain");
    let client = async_nats::connect(nats.url()).await.unwrap();
    let js = jetstream::new(client);
    let records: Vec<(Hash, Vec<u8>)> = forged.records.iter().map(|r| (r.hash, r.bytes.clone())).collect();
    let (headers, payload) = journal_message("t1", 2, &records, None);
    js.publish_with_headers(format!("{SUBJECT_PREFIX}.forum-a.t1"), headers, payload.into())
        .await
        .unwrap()
        .await
        .unwrap();
    match chain::check(&store, "t1").await.unwrap() {
        ChainCheck::Broken { version, reason } => assert_eq!(version, 3, "{reason}"),
        ok => panic!("a broken chain verified: {ok:?}"),
    }
    // A message that is not a journal message at all, on the subject.
    js.publish(format!("{SUBJECT_PREFIX}.forum-a.t2"), "not a journal message".into()).await.unwrap().await.unwrap();
    assert!(matches!(chain::check(&store, "t2").await.unwrap(), ChainCheck::Broken { version: 0, .. }));
    let fresh = self::store(&nats.url()).await;
    assert!(fresh.read_stream("t2", 0, Page::count(10)).await.is_err(), "reads refuse what does not decode");
}

/// A journal message as the journal frames it (docs/protocol.md §4 records in
/// the layout of battlelog_journal::store::jetstream, written out here):
/// headers, and for each record h(version) ‖ u32_be(len) ‖ bytes.
fn journal_message(
    stream_id: &str,
    first_version: u64,
    records: &[(Hash, Vec<u8>)],
    state: Option<&str>,
) -> (async_nats::HeaderMap, Vec<u8>) {
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Battlelog-Stream", stream_id);
    headers.insert("Battlelog-First-Version", first_version.to_string().as_str());
    headers.insert("Battlelog-Count", records.len().to_string().as_str());
    headers.insert("Battlelog-Last-Hash", hex::encode(records.last().expect("a record").0).as_str());
    if let Some(state) = state {
        headers.insert("Battlelog-State", state);
    }
    let mut payload = Vec::new();
    for (hash, bytes) in records {
        payload.extend_from_slice(hash);
        payload.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
        payload.extend_from_slice(bytes);
    }
    (headers, payload)
}

/// Issue 35, finding 5: someone with the journal's NATS password publishes
/// a "next version" on a battle's subject, its headers copied from the
/// journal's own last message and its hash valid-looking (32 bytes) but not
/// chained. The real `battlelog-journal` refuses the next append on top of
/// it (`RECORD_CORRUPT`, naming the message), writes nothing, and
/// `VerifyChain` finds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_injected_message_that_does_not_chain_is_never_appended_on() {
    let nats = shipped_nats();
    let port = nats.port();
    let dir = tempfile::tempdir().expect("temp dir");
    let journal = journal_process(dir.path(), "j", &format!("nats://journal:jp@127.0.0.1:{port}")).await;
    let mut c = client(&journal).await;
    let battle = "injected";
    append(&mut c, battle, no_stream(), vec![opened_event("forum-a", "open")]).await.expect("open");
    append(&mut c, battle, exact(Some(0)), vec![rolled(0, "first", "r0")]).await.expect("roll");
    let real = read_stream(&mut c, battle).await;

    let attacker = async_nats::ConnectOptions::with_user_and_password("journal".into(), "jp".into())
        .connect(format!("127.0.0.1:{port}"))
        .await
        .expect("the journal's NATS user");
    let js = jetstream::new(attacker);
    let subject = format!("{SUBJECT_PREFIX}.forum-a.{battle}");
    let stream = js.get_stream("BATTLELOG_JOURNAL").await.expect("the journal's stream");
    let last = stream.get_last_raw_message_by_subject(&subject).await.expect("the last message");
    let state = last.headers.get("Battlelog-State").expect("a state header").as_str().to_owned();
    let mut record = real[1].event.clone().expect("version 1");
    record.version = 2;
    record.event_id = "forged".into();
    record.idempotency_key = "forged".into();
    let (headers, payload) = journal_message(battle, 2, &[([0x42; 32], record::encode(&record))], Some(&state));
    let forged = js.publish_with_headers(subject.clone(), headers, payload.into()).await.unwrap().await.unwrap();

    let refused = append(&mut c, battle, any(), vec![rolled(1, "second", "r1")]).await.expect_err("refused");
    assert_eq!(journal_client::error_reason(&refused), "RECORD_CORRUPT", "{refused:?}");
    let named = format!("message {} on {subject}", forged.sequence);
    assert!(refused.message().contains(&named), "names the message: {}", refused.message());
    let after = stream.get_last_raw_message_by_subject(&subject).await.expect("the last message");
    assert_eq!(after.sequence, forged.sequence, "nothing was appended on top of it");
    let check = verify(&mut c, battle).await;
    assert_eq!((check.ok, check.first_bad_version), (false, Some(2)), "{check:?}");
}

/// NATS down under a running journal: appends are `UNAVAILABLE` (retry
/// later), not `INTERNAL`; NATS back, the retry with the same key lands
/// once and the battle goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_are_unavailable_while_nats_is_down_and_resume_after() {
    let (mut nats, _nats_dir) = nats();
    let dir = tempfile::tempdir().expect("temp dir");
    let options = StartOptions {
        envs: vec![
            ("BATTLELOG_JOURNAL_BACKEND".to_owned(), "jetstream".to_owned()),
            ("BATTLELOG_JOURNAL_JETSTREAM_TIMEOUT_MS".to_owned(), "500".to_owned()),
        ],
        ..StartOptions::default()
    };
    let journal = battlelog_test_support::journal_with(&dir.path().join("j"), Some(&nats.url()), &options).await;
    let mut c = client(&journal).await;
    append(&mut c, "o1", no_stream(), vec![opened_event("forum-a", "open")]).await.expect("open");
    nats.stop();
    let status = append(&mut c, "o1", exact(Some(0)), vec![rolled(0, "during", "roll-0")]).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
    nats.restart();
    let landed = battlelog_test_support::poll_until("appends to resume", Duration::from_secs(20), || {
        let mut c = c.clone();
        async move { append(&mut c, "o1", exact(Some(0)), vec![rolled(0, "during", "roll-0")]).await.ok() }
    })
    .await;
    assert_eq!(landed.events[0].version, 1);
    let stored = read_stream(&mut c, "o1").await;
    assert_eq!(stored.len(), 2, "the roll once, however often it was tried");
    assert!(verify(&mut c, "o1").await.ok);
}

/// `battlelog watch` over NATS follows the JetStream journal's log: each
/// event of a group append, in order, each checked against the chain.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_over_nats_shows_the_jetstream_journals_events() {
    let (nats, _nats_dir) = nats();
    let dir = tempfile::tempdir().expect("temp dir");
    let journal = journal_process(dir.path(), "j", &nats.url()).await;
    let token = battlelog_test_support::TestAuth::shared().service_token();
    let journal_url = journal.url();
    let args = ["--battle", "w1", "--nats-url", &nats.url(), "--journal", &journal_url, "--token", &token];
    let (mut watch, said) = battlelog_test_support::watch::WatchProcess::start(&args).await;
    assert!(said.starts_with("watching battlelog.events.*.w1 and battlelog.journal.*.w1 on "), "{said}");
    let mut c = client(&journal).await;
    append(&mut c, "w1", no_stream(), vec![opened_event("forum-a", ""), rolled(0, "first", "")]).await.expect("open");
    append(&mut c, "w1", exact(Some(1)), vec![rolled(1, "second", "")]).await.expect("roll");
    for expected in ["w1 #0 BattleOpened", "w1 #1 DiceRolled", "w1 #2 DiceRolled"] {
        let line = watch.next_stdout().await;
        assert!(line.starts_with(expected) && !line.contains("unconfirmed"), "{expected}: {line}");
    }
}

/// `battlelog journal copy --from sled:DIR --to jetstream:URL`: every
/// battle arrives byte for byte, chains verify, and a journal on the
/// JetStream backend goes on with it (idempotency keys included).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sled_journal_copied_to_jetstream_goes_on_there() {
    let (nats, _nats_dir) = nats();
    let dir = tempfile::tempdir().expect("temp dir");
    let sled_dir = dir.path().join("sled");
    let sled = battlelog_journal::Journal::open(battlelog_journal::JournalOptions::new(&sled_dir)).await.unwrap();
    for battle in ["c1", "c2"] {
        sled.append(battle.into(), ExpectedVersion::NoStream, vec![conformance::opened("forum-a")]).await.unwrap();
        let roll = conformance::keyed(conformance::rolled(0, 0), "roll-0");
        sled.append(battle.into(), ExpectedVersion::Exact(0), vec![roll]).await.unwrap();
    }
    let originals: Vec<_> = records_of_battles(&sled, &["c1", "c2"]).await;
    sled.shutdown().await.unwrap();
    drop(sled);
    let args = [
        "journal".to_owned(),
        "copy".to_owned(),
        "--from".to_owned(),
        format!("sled:{}", sled_dir.display()),
        "--to".to_owned(),
        format!("jetstream:{}", nats.url()),
    ];
    let (code, stdout, stderr) =
        tokio::task::spawn_blocking(move || stack::cli(&args.iter().map(String::as_str).collect::<Vec<_>>()))
            .await
            .expect("copy");
    assert_eq!(code, Some(0), "copy: {stderr}\n{stdout}");
    let journal = conformance::journal_on(Arc::new(store(&nats.url()).await)).await;
    assert_eq!(records_of_battles(&journal, &["c1", "c2"]).await, originals, "byte for byte");
    for battle in ["c1", "c2"] {
        assert!(matches!(journal.verify_chain(battle).await.unwrap(), ChainCheck::Ok { count: 2, .. }));
        let repeat = conformance::keyed(conformance::rolled(0, 0), "roll-0");
        let again = journal.append(battle.into(), ExpectedVersion::Any, vec![repeat]).await.unwrap();
        assert!(again.deduplicated, "the key came along");
        let next = journal.append(battle.into(), ExpectedVersion::Exact(1), vec![conformance::rolled(0, 1)]).await;
        assert_eq!(next.unwrap().events[0].version, 2);
    }
}

/// Each battle's (version, hash, record bytes).
async fn records_of_battles(journal: &battlelog_journal::Journal, battles: &[&str]) -> Vec<(u64, Hash, Vec<u8>)> {
    let mut out = Vec::new();
    for battle in battles {
        for event in journal.read_stream(battle, 0, 0).await.unwrap() {
            out.push((event.event.version, event.hash, event.record));
        }
    }
    out
}

/// Two journal processes on a three-node cluster (replicas 3), writers on
/// both; the stream leader is killed mid-run. Appends
/// that fail meanwhile are `UNAVAILABLE` and retried with their key; none
/// acknowledged is lost or doubled, versions stay consecutive, the chain
/// verifies on every journal.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_journals_on_a_three_node_cluster_survive_a_killed_stream_leader() {
    let mut cluster = battlelog_test_support::NatsCluster::start("jetstream-journal").await;
    let dir = tempfile::tempdir().expect("temp dir");
    let options = StartOptions {
        envs: vec![
            ("BATTLELOG_JOURNAL_BACKEND".to_owned(), "jetstream".to_owned()),
            ("BATTLELOG_JOURNAL_REPLICAS".to_owned(), "3".to_owned()),
            ("BATTLELOG_JOURNAL_JETSTREAM_TIMEOUT_MS".to_owned(), "2000".to_owned()),
        ],
        ..StartOptions::default()
    };
    let urls = cluster.client_urls_joined();
    let journals = [
        battlelog_test_support::journal_with(&dir.path().join("a"), Some(&urls), &options).await,
        battlelog_test_support::journal_with(&dir.path().join("b"), Some(&urls), &options).await,
    ];
    append(&mut client(&journals[0]).await, "r3", no_stream(), vec![opened_event("forum-a", "open")]).await.unwrap();
    assert_eq!(cluster.stream_current_replicas("BATTLELOG_JOURNAL").await, Some(3), "replicas 3");
    const WRITERS: usize = 4;
    const PER_WRITER: usize = 15;
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let mut c = client(&journals[w % 2]).await;
        tasks.push(tokio::spawn(async move {
            let mut acked = Vec::new();
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            while acked.len() < PER_WRITER {
                assert!(std::time::Instant::now() < deadline, "writer {w} stalled at {}", acked.len());
                let key = format!("w{w}-{}", acked.len());
                match append(&mut c, "r3", any(), vec![resolved_event(&key, &key)]).await {
                    Ok(reply) => acked.push((reply.events[0].version, key)),
                    // An outage: the same key again (it lands once).
                    Err(status) if status.code() == tonic::Code::Unavailable => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    Err(status) => panic!("writer {w}: {status:?}"),
                }
            }
            acked
        }));
    }
    // Kill the stream's leader while they write: the other two elect one.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let leader = cluster.stream_leader("BATTLELOG_JOURNAL").await.expect("a stream leader");
    cluster.kill(leader);
    let mut acked = std::collections::BTreeMap::new();
    for task in tasks {
        for (version, key) in task.await.expect("writer") {
            assert!(acked.insert(version, key).is_none(), "version {version} acknowledged twice");
        }
    }
    assert_eq!(acked.len(), WRITERS * PER_WRITER);
    let cluster = &cluster;
    battlelog_test_support::poll_until("another node to lead the stream", Duration::from_secs(20), || async move {
        cluster.stream_leader("BATTLELOG_JOURNAL").await.filter(|&now| now != leader)
    })
    .await;
    for journal in &journals {
        let c = client(journal).await;
        // Reads too may meet the election's last moments: UNAVAILABLE, retried.
        let stored = battlelog_test_support::poll_until("the battle read whole", Duration::from_secs(30), || {
            let mut c = c.clone();
            async move { journal_client::try_read_stream(&mut c, "r3").await.ok() }
        })
        .await;
        assert_eq!(stored.len(), 1 + WRITERS * PER_WRITER, "every acknowledged append once, nothing else");
        for event in &stored[1..] {
            let record = event.event.as_ref().expect("decoded");
            assert_eq!(acked.get(&record.version), Some(&record.idempotency_key), "the acknowledged event is stored");
        }
        check_chain("r3", &stored);
        // As the read: UNAVAILABLE at the election's end is retried.
        let check = battlelog_test_support::poll_until("the chain verified", Duration::from_secs(30), || {
            let mut c = c.clone();
            async move {
                let request = battlelog_proto::v1::VerifyChainRequest { stream_id: "r3".into() };
                Some(c.verify_chain(request).await.ok()?.into_inner())
            }
        })
        .await;
        assert!(check.ok, "{}", check.reason);
    }
}

/// A journal on the JetStream backend with no NATS to reach exits at start,
/// non-zero, naming what it could not reach (it has no log without it).
#[tokio::test]
async fn a_jetstream_journal_without_nats_exits_at_start() {
    // A port nothing listens on: bound, then let go.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let output = tokio::process::Command::new(battlelog_test_support::service_binary("battlelog-journal"))
        .args(["--listen", "127.0.0.1:0", "--backend", "jetstream", "--jetstream-timeout-ms", "500"])
        .args(["--nats-url", &format!("nats://127.0.0.1:{port}")])
        .envs(battlelog_test_support::TestAuth::shared().env("journal"))
        .output();
    let output = tokio::time::timeout(Duration::from_secs(30), output).await.expect("it exits").expect("it runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("jetstream"), "it says what failed: {stderr}");
}

/// An `ActionResolved` whose payload weighs exactly `bytes`.
fn weighing(bytes: usize) -> battlelog_proto::v1::NewEvent {
    use battlelog_proto::v1 as pb;
    let padded = |n: usize| {
        let resolved = pb::ActionResolved { summary_en: "x".repeat(n), ..Default::default() };
        journal_client::battle_event(Event::ActionResolved(resolved), "")
    };
    let overhead = padded(bytes).payload.len() - bytes;
    let event = padded(bytes - overhead);
    assert_eq!(event.payload.len(), bytes, "the padding is exact");
    event
}

/// An append to a new battle whose payloads weigh exactly `total`: its
/// opening, then events of at most the default `max_payload_bytes` each.
fn appended_weighing(total: usize) -> Vec<battlelog_proto::v1::NewEvent> {
    const MAX_PAYLOAD: usize = 256 * 1024;
    let mut events = vec![opened_event("forum-a", "")];
    let mut left = total - events[0].payload.len();
    while left > 0 {
        let next = left.min(MAX_PAYLOAD);
        // The padding needs a few bytes of its own: never leave less.
        let next = if left - next > 0 && left - next < 16 { next - 16 } else { next };
        events.push(weighing(next));
        left -= next;
    }
    events
}

/// A stock nats-server (its default `max_payload`, 1 MiB) takes the
/// JetStream journal at its default limits: the journal reads the server's
/// `max_payload` and lowers `max_append_bytes` so that its largest append
/// (`max_events_per_append` records at their largest, and the headers) is
/// one message the server takes, and says so in one log line. An append of
/// exactly that is stored; one byte more is refused by name before NATS
/// sees it. A smaller configured limit wins, and is not logged as lowered;
/// a server too small for even one event of `max_payload_bytes` stops the
/// journal, naming both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stock_nats_server_takes_the_jetstream_journal_under_its_max_payload() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let journal = journal_process(dir.path(), "stock", &nats.url()).await;
    // The largest message at the default limits is 1 102 624 bytes: 1 MiB
    // of payloads and 54 048 bytes of what every record and the headers
    // add. Under a 1 MiB max_payload that leaves 1 MiB − 54 048 for payloads.
    let fitted = 1024 * 1024 - (1_102_624 - 1024 * 1024);
    let lowered = |log: String| -> Vec<String> {
        log.lines().filter(|l| l.contains("max_payload") && l.contains("max_append_bytes")).map(str::to_owned).collect()
    };
    let said = lowered(journal.log());
    assert_eq!(said.len(), 1, "one line says so: {said:?}");
    assert!(said[0].contains(&fitted.to_string()), "{said:?}");
    let mut c = client(&journal).await;
    let at_edge = appended_weighing(fitted);
    let reply = append(&mut c, "stock-edge", no_stream(), at_edge.clone()).await.expect("exactly the lowered limit");
    assert_eq!(reply.events.len(), at_edge.len());
    assert!(verify(&mut c, "stock-edge").await.ok);
    let error =
        append(&mut c, "stock-over", no_stream(), appended_weighing(fitted + 1)).await.expect_err("a byte over");
    assert_eq!(error.code(), tonic::Code::InvalidArgument, "{error:?}");
    assert!(error.message().contains(&format!("max_append_bytes = {fitted}")), "{error:?}");

    // A smaller configured limit is kept as it is.
    let smaller = 600_000usize;
    let options = StartOptions {
        envs: vec![
            ("BATTLELOG_JOURNAL_BACKEND".to_owned(), "jetstream".to_owned()),
            ("BATTLELOG_JOURNAL_MAX_APPEND_BYTES".to_owned(), smaller.to_string()),
        ],
        ..StartOptions::default()
    };
    let configured =
        battlelog_test_support::journal_with(&dir.path().join("smaller"), Some(&nats.url()), &options).await;
    assert_eq!(lowered(configured.log()), Vec::<String>::new(), "nothing lowered");
    let mut c = client(&configured).await;
    append(&mut c, "smaller-edge", no_stream(), appended_weighing(smaller)).await.expect("the configured limit");
    let error = append(&mut c, "smaller-over", no_stream(), appended_weighing(smaller + 1)).await.expect_err("over");
    assert!(error.message().contains(&format!("max_append_bytes = {smaller}")), "{error:?}");

    // A server whose messages cannot hold one event of max_payload_bytes
    // (256 KiB) with the rest of an append's weight.
    let config_dir = tempfile::tempdir().expect("temp dir");
    let config = config_dir.path().join("nats.conf");
    std::fs::write(&config, "max_payload: 300KB\n").expect("write the NATS config");
    let tiny = NatsServer::start_with_config(&config, &[]);
    let output = tokio::process::Command::new(battlelog_test_support::service_binary("battlelog-journal"))
        .args(["--listen", "127.0.0.1:0", "--backend", "jetstream", "--nats-url", &tiny.url()])
        .args(["--data-dir", &dir.path().join("tiny").display().to_string()])
        .envs(battlelog_test_support::TestAuth::shared().env("journal"))
        .output();
    let output = tokio::time::timeout(Duration::from_secs(30), output).await.expect("it exits").expect("it runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("max_payload") && stderr.contains("max_payload_bytes"), "{stderr}");
}
