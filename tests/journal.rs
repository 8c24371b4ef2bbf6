//! System tests of the journal: the real `battlelog-journal` binary, real sled
//! on disk, real gRPC on 127.0.0.1 and a real `nats-server -js`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use battlelog_proto::v1 as pb;
use battlelog_test_support::journal_client::*;
use battlelog_test_support::{NatsServer, journal, poll_until, temp_dir, until_counted};
use tokio::sync::Mutex;
use tonic::Code;

const WAIT: Duration = Duration::from_secs(30);

/// Many writers, one battle, every append guarded by the version the writer
/// last saw (and rolling the nonce that version implies): each version is
/// written exactly once, nobody's success is lost, and every stale writer is
/// told the actual version.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_on_one_stream_lose_nothing() {
    let dir = temp_dir("concurrency");
    let server = journal(&dir.path().join("data"), None).await;
    append(&mut client(&server).await, "hot", no_stream(), vec![opened("", "")]).await.expect("open the battle");
    const WRITERS: usize = 16;
    const PER_WRITER: usize = 15;
    let mut clients = Vec::new();
    for _ in 0..WRITERS {
        clients.push(client(&server).await);
    }
    let (acked, conflicts) = race_guarded_writers(clients, "hot", PER_WRITER).await;
    let total = WRITERS * PER_WRITER;
    assert_eq!(acked.len(), total);
    assert_eq!(acked.keys().copied().collect::<Vec<_>>(), (1..=total as u64).collect::<Vec<_>>());
    assert!(conflicts > 0, "16 racing writers must have met conflicts");

    let mut c = client(&server).await;
    let stored = read_stream(&mut c, "hot").await;
    assert_eq!(stored.len(), total + 1, "the opening and every roll");
    for e in &stored[1..] {
        let record = e.event.as_ref().expect("decoded");
        assert_eq!(acked[&record.version].as_slice(), record.payload.as_slice(), "the acknowledged payload is stored");
    }
    check_chain("hot", &stored);
    assert!(verify(&mut c, "hot").await.ok);
}

/// Writers on distinct streams never conflict, even while a hot stream is
/// hammered next to them, and they all complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn different_streams_do_not_block_each_other() {
    let dir = temp_dir("streams");
    let server = journal(&dir.path().join("data"), None).await;
    let mut tasks = Vec::new();
    for s in 0..8 {
        let mut c = client(&server).await;
        tasks.push(tokio::spawn(async move {
            let stream = format!("own-{s}");
            for v in 0..20u64 {
                let expected = if v == 0 { None } else { Some(v - 1) };
                let event = if v == 0 { opened("", "") } else { rolled(v - 1, &format!("{s}"), "") };
                let reply = append(&mut c, &stream, exact(expected), vec![event])
                    .await
                    .unwrap_or_else(|e| panic!("{stream}@{v}: a lone writer never conflicts: {e:?}"));
                assert_eq!(reply.events[0].version, v);
            }
        }));
    }
    append(&mut client(&server).await, "contended", no_stream(), vec![opened("", "")]).await.expect("open");
    let landed = Arc::new(AtomicUsize::new(0));
    for h in 0..8 {
        let mut c = client(&server).await;
        let landed = landed.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..20 {
                // Stale on purpose: most of these conflict on the hot stream.
                // Either the guard still held and the event landed right after
                // version i, or the conflict names a later head: this writer
                // alone has brought the head to at least i by now.
                match append(&mut c, "contended", exact(Some(i)), vec![resolved(&format!("{h}"), "")]).await {
                    Ok(reply) => {
                        assert_eq!(reply.events[0].version, i + 1, "a guarded append lands right after version {i}");
                        landed.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(status) => {
                        let actual = conflict_actual_version(&status);
                        assert!(actual > Some(i), "a conflict on exact({i}) names a later head: {actual:?}");
                    }
                }
                append(&mut c, "contended", any(), vec![resolved(&format!("{h}"), "")]).await.expect("any");
            }
        }));
    }
    for task in tasks {
        task.await.expect("writer");
    }
    let mut c = client(&server).await;
    for s in 0..8 {
        let stream = format!("own-{s}");
        assert_eq!(head(&mut c, &stream).await, Some(19));
        assert!(verify(&mut c, &stream).await.ok);
    }
    // The opening, 8 × 20 unguarded appends, and the guarded ones that landed.
    let landed = landed.load(Ordering::Relaxed) as u64;
    assert_eq!(head(&mut c, "contended").await, Some(8 * 20 + landed), "{landed} guarded appends landed");
    assert!(verify(&mut c, "contended").await.ok);
}

/// A multi-event append is all or nothing: invalid input anywhere in it, or a
/// stale guard, writes none of it; a good one writes all at consecutive versions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_are_all_or_nothing_and_bad_input_names_the_field() {
    let dir = temp_dir("atomic");
    let server = journal(&dir.path().join("data"), None).await;
    let mut c = client(&server).await;
    // Version 0 opens the battle; the rest are events any open battle takes.
    let ok = |i: usize| if i == 0 { opened("", "") } else { resolved(&format!("e{i}"), "") };

    let mut batch: Vec<_> = (0..5).map(ok).collect();
    batch[3].payload = vec![0; 256 * 1024 + 1];
    let err = append(&mut c, "a", no_stream(), batch).await.unwrap_err();
    assert_eq!(invalid_field(&err), "events[3].payload");
    assert!(err.message().contains("max_payload_bytes"), "{err:?}");
    assert_eq!(head(&mut c, "a").await, None, "nothing of a rejected batch is written");

    let long = "x".repeat(129);
    let cases: Vec<(&str, Option<pb::ExpectedVersion>, Vec<pb::NewEvent>, &str)> = vec![
        ("", any(), vec![ok(0)], "stream_id"),
        ("bad.stream", any(), vec![ok(0)], "stream_id"),
        (&long, any(), vec![ok(0)], "stream_id"),
        ("a", None, vec![ok(0)], "expected_version"),
        ("a", Some(pb::ExpectedVersion { kind: None }), vec![ok(0)], "expected_version"),
        ("a", any(), vec![], "events"),
        ("a", any(), (0..101).map(ok).collect(), "events"),
        ("a", any(), (0..5).map(|_| resolved(&"x".repeat(125 * 1024), "")).collect(), "events"),
        ("a", any(), vec![ok(0), event("", ok(1).payload, "")], "events[1].event_type"),
        ("a", any(), vec![opened("", "k"), resolved("y", "k")], "events[1].idempotency_key"),
    ];
    for (stream, expected, events, field) in cases {
        let err = append(&mut c, stream, expected, events).await.unwrap_err();
        assert_eq!(invalid_field(&err), field);
    }
    assert_eq!(head(&mut c, "a").await, None);

    let reply = append(&mut c, "a", no_stream(), (0..5).map(ok).collect()).await.expect("append");
    assert_eq!(reply.events.iter().map(|e| e.version).collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
    let err = append(&mut c, "a", exact(Some(3)), (5..10).map(ok).collect()).await.unwrap_err();
    assert_eq!(conflict_actual_version(&err), Some(4));
    let err = append(&mut c, "a", no_stream(), vec![ok(9)]).await.unwrap_err();
    assert_eq!(conflict_actual_version(&err), Some(4));
    let err = append(&mut c, "never", exact(Some(0)), vec![ok(9)]).await.unwrap_err();
    assert_eq!(conflict_actual_version(&err), None);
    let stored = read_stream(&mut c, "a").await;
    assert_eq!(stored.len(), 5);
    check_chain("a", &stored);
}

/// Appended by the crash test: what a client saw acknowledged.
#[derive(Debug, Clone)]
struct Acked {
    stream: String,
    version: u64,
    event_id: String,
    hash: Vec<u8>,
    payload: Vec<u8>,
}

/// kill -9 under load, five times over the same data: every acknowledged
/// event is there byte for byte, every chain verifies, and every 3-event
/// append is either wholly there or wholly absent.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_under_load_loses_no_acknowledged_event() {
    let dir = temp_dir("crash");
    let data = dir.path().join("data");
    let acked: Arc<Mutex<Vec<Acked>>> = Arc::default();
    const CLIENTS: usize = 6;
    const BATCH: usize = 3;
    for round in 0..5 {
        let server = journal(&data, None).await;
        if round == 0 {
            let mut c = client(&server).await;
            for stream in ["shared".to_owned()].into_iter().chain((1..CLIENTS).step_by(2).map(|w| format!("own-{w}"))) {
                append(&mut c, &stream, no_stream(), vec![opened("", "")]).await.expect("open the battles");
            }
        }
        let count_at_start = acked.lock().await.len();
        let killed = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::new();
        for w in 0..CLIENTS {
            let mut c = client(&server).await;
            let (acked, killed) = (acked.clone(), killed.clone());
            tasks.push(tokio::spawn(async move {
                // Half the writers share one stream (guard: any), half own one (guard: exact).
                let stream = if w % 2 == 0 { "shared".to_owned() } else { format!("own-{w}") };
                let info = c.stream_info(pb::StreamInfoRequest { stream_id: stream.clone() }).await;
                let mut seen = info.expect("the restarted journal answers").into_inner().head_version;
                for b in 0.. {
                    let events: Vec<_> =
                        (0..BATCH).map(|i| resolved(&format!("{stream}/r{round}/w{w}/b{b}/{i}/{BATCH}"), "")).collect();
                    let expected = if w % 2 == 0 { any() } else { exact(seen) };
                    match append(&mut c, &stream, expected, events.clone()).await {
                        Ok(reply) => {
                            let mut acked = acked.lock().await;
                            for (e, sent) in reply.events.iter().zip(&events) {
                                acked.push(Acked {
                                    stream: stream.clone(),
                                    version: e.version,
                                    event_id: e.event_id.clone(),
                                    hash: e.hash.clone(),
                                    payload: sent.payload.clone(),
                                });
                            }
                            seen = reply.events.last().map(|e| e.version);
                        }
                        // The server is gone: stop. (What was in flight is
                        // unacknowledged.) Read the flag after the error: it
                        // was set before the kill.
                        Err(status) => {
                            assert!(
                                killed.load(Ordering::SeqCst),
                                "{stream}: an append failed before the kill: {status:?}"
                            );
                            assert!(
                                server_went_away(&status, true),
                                "{stream}: not a killed server's error: {status:?}"
                            );
                            return;
                        }
                    }
                }
            }));
        }
        let target = count_at_start + 150 + round * 30;
        let acked_ref = acked.clone();
        poll_until("acknowledged appends under load", WAIT, || {
            let acked = acked_ref.clone();
            async move { (acked.lock().await.len() >= target).then_some(()) }
        })
        .await;
        killed.store(true, Ordering::SeqCst);
        server.kill_9();
        for task in tasks {
            task.await.expect("writer");
        }

        let server = journal(&data, None).await;
        let mut c = client(&server).await;
        let acked = acked.lock().await.clone();
        let streams: HashSet<String> = acked.iter().map(|a| a.stream.clone()).collect();
        let mut stored: HashMap<String, Vec<pb::RecordedEvent>> = HashMap::new();
        for stream in &streams {
            let events = read_stream(&mut c, stream).await;
            check_chain(stream, &events);
            let verdict = verify(&mut c, stream).await;
            assert!(verdict.ok, "round {round}: {stream} verifies: {verdict:?}");
            assert_eq!(verdict.verified_count, events.len() as u64);
            // Atomicity: the events of one append are consecutive and complete
            // (after version 0, the opening).
            let mut i = 1;
            while i < events.len() {
                let first = event_text(&events[i].event.as_ref().expect("decoded").payload);
                let prefix = first.rsplitn(3, '/').nth(2).expect("payload shape").to_owned();
                for k in 0..BATCH {
                    let e = events.get(i + k).unwrap_or_else(|| panic!("round {round}: {prefix} is cut short"));
                    let payload = event_text(&e.event.as_ref().expect("decoded").payload);
                    assert_eq!(payload, format!("{prefix}/{k}/{BATCH}"), "round {round}: append {prefix} is whole");
                }
                i += BATCH;
            }
            stored.insert(stream.clone(), events);
        }
        for a in &acked {
            let e = stored[&a.stream]
                .get(a.version as usize)
                .unwrap_or_else(|| panic!("round {round}: acknowledged {}@{} is lost", a.stream, a.version));
            let record = e.event.as_ref().expect("decoded");
            assert_eq!(record.payload, a.payload, "{}@{}", a.stream, a.version);
            assert_eq!(record.event_id, a.event_id);
            assert_eq!(e.hash, a.hash, "{}@{}: same record bytes as acknowledged", a.stream, a.version);
        }
        server.kill_9();
    }
}

/// Change a byte, delete a record, swap two records — directly in the sled
/// files while the journal is stopped — and verification names the first bad
/// version each time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tampering_is_found_at_the_first_bad_version() {
    use battlelog_journal::store::layout;
    let dir = temp_dir("tamper");
    let data = dir.path().join("data");
    let server = journal(&data, None).await;
    let mut c = client(&server).await;
    write_battle(&mut c, "t", 10, |i| format!("event number {i}")).await;
    let clean = verify(&mut c, "t").await;
    assert!(clean.ok && clean.verified_count == 10, "{clean:?}");
    assert!(server.terminate().await, "graceful shutdown exits 0");

    let original: Vec<Vec<u8>> = {
        let db = open_sled(&data).await;
        let records = db.open_tree(layout::RECORDS).expect("tree");
        (0..10).map(|v| records.get(layout::record_key("t", v)).expect("get").expect("present").to_vec()).collect()
    };
    type Tamper = Box<dyn Fn(&sled::Tree, &[Vec<u8>])>;
    let cases: Vec<(&str, Tamper, u64)> = vec![
        (
            "one byte of record 4 changed",
            Box::new(|records, original| {
                let mut value = original[4].clone();
                let last = value.len() - 1;
                value[last] ^= 0x01;
                records.insert(layout::record_key("t", 4), value).expect("insert");
            }),
            4,
        ),
        (
            "one byte of the hash of record 8 changed",
            Box::new(|records, original| {
                let mut value = original[8].clone();
                value[0] ^= 0x80;
                records.insert(layout::record_key("t", 8), value).expect("insert");
            }),
            8,
        ),
        (
            "record 6 deleted",
            Box::new(|records, _| {
                records.remove(layout::record_key("t", 6)).expect("remove");
            }),
            6,
        ),
        (
            "last record deleted",
            Box::new(|records, _| {
                records.remove(layout::record_key("t", 9)).expect("remove");
            }),
            9,
        ),
        (
            "records 2 and 7 swapped",
            Box::new(|records, original| {
                records.insert(layout::record_key("t", 2), original[7].clone()).expect("insert");
                records.insert(layout::record_key("t", 7), original[2].clone()).expect("insert");
            }),
            2,
        ),
    ];
    for (what, tamper, first_bad) in cases {
        {
            let db = open_sled(&data).await;
            let records = db.open_tree(layout::RECORDS).expect("tree");
            for (v, value) in original.iter().enumerate() {
                records.insert(layout::record_key("t", v as u64), value.clone()).expect("restore");
            }
            tamper(&records, &original);
            db.flush().expect("flush");
        }
        let server = journal(&data, None).await;
        let mut c = client(&server).await;
        let verdict = verify(&mut c, "t").await;
        assert!(!verdict.ok, "{what}: detected");
        assert_eq!(verdict.first_bad_version, Some(first_bad), "{what}: {verdict:?}");
        assert!(!verdict.reason.is_empty());
        assert!(server.terminate().await);
    }
}

/// The `heads` entry of a stream (crates/journal/README.md: head version,
/// head hash, battle state; the end the chain must reach) made to disagree
/// with the records, directly in the sled files while the journal is
/// stopped: VerifyChain fails at the first version where they part each
/// time — the head's own for a wrong hash, the first record past a head
/// set back, the first missing one for a head set forward — and a stream
/// without its head does not verify. Another stream is untouched and
/// verifies throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_head_that_disagrees_with_the_records_is_found() {
    use battlelog_journal::store::layout;
    let dir = temp_dir("heads");
    let data = dir.path().join("data");
    let server = journal(&data, None).await;
    let mut c = client(&server).await;
    write_battle(&mut c, "h", 10, |i| format!("event number {i}")).await;
    write_battle(&mut c, "other", 3, |i| format!("bystander {i}")).await;
    let clean = verify(&mut c, "h").await;
    assert!(clean.ok && clean.verified_count == 10, "{clean:?}");
    let stored = read_stream(&mut c, "h").await;
    check_chain("h", &stored);
    assert!(server.terminate().await, "graceful shutdown exits 0");

    let original = {
        let db = open_sled(&data).await;
        let heads = db.open_tree(layout::HEADS).expect("tree");
        heads.get("h").expect("get").expect("a head").to_vec()
    };
    assert_eq!(&original[..8], 9u64.to_be_bytes(), "the head is version 9");
    assert_eq!(&original[8..40], stored[9].hash.as_slice(), "with h(9)");
    let head_at = |version: u64| {
        let mut value = original.clone();
        value[..8].copy_from_slice(&version.to_be_bytes());
        value[8..40].copy_from_slice(&stored[version as usize].hash);
        value
    };
    let mut wrong_hash = original.clone();
    wrong_hash[39] ^= 0x01;
    let mut ahead = original.clone();
    ahead[..8].copy_from_slice(&12u64.to_be_bytes());
    // (what, the head put on disk (none: removed), the first bad version expected)
    type Case = (&'static str, Option<Vec<u8>>, Option<u64>);
    let cases: Vec<Case> = vec![
        ("the head hash changed", Some(wrong_hash), Some(9)),
        ("the head set back to version 7 with h(7)", Some(head_at(7)), Some(8)),
        ("the head set back to version 0 with h(0)", Some(head_at(0)), Some(1)),
        ("the head set forward to version 12", Some(ahead), Some(10)),
        ("the head removed", None, None),
    ];
    for (what, head, first_bad) in cases {
        {
            let db = open_sled(&data).await;
            let heads = db.open_tree(layout::HEADS).expect("tree");
            match head {
                Some(value) => heads.insert("h", value).expect("insert"),
                None => heads.remove("h").expect("remove"),
            };
            db.flush().expect("flush");
        }
        let server = journal(&data, None).await;
        let mut c = client(&server).await;
        let verdict = verify(&mut c, "h").await;
        assert!(!verdict.ok, "{what}: detected: {verdict:?}");
        if first_bad.is_some() {
            assert_eq!(verdict.first_bad_version, first_bad, "{what}: {verdict:?}");
        }
        assert!(!verdict.reason.is_empty(), "{what}: says why: {verdict:?}");
        let bystander = verify(&mut c, "other").await;
        assert!(bystander.ok && bystander.verified_count == 3, "{what}: {bystander:?}");
        assert!(server.terminate().await);
    }
    {
        let db = open_sled(&data).await;
        db.open_tree(layout::HEADS).expect("tree").insert("h", original).expect("restore");
        db.flush().expect("flush");
    }
    let server = journal(&data, None).await;
    let verdict = verify(&mut client(&server).await, "h").await;
    assert!(verdict.ok && verdict.verified_count == 10, "the head put back verifies: {verdict:?}");
}

/// A retried append (same idempotency key, same event) after a crash gets
/// the original versions and hashes and appends nothing; the same key with a
/// different payload is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotency_holds_across_a_restart() {
    let dir = temp_dir("idem");
    let data = dir.path().join("data");
    let server = journal(&data, None).await;
    let mut c = client(&server).await;
    let request = vec![opened("", "req-42/0"), rolled(0, "d20=17", "req-42/1")];
    let original = append(&mut c, "battle", no_stream(), request.clone()).await.expect("append");
    assert!(!original.deduplicated);
    server.kill_9();

    let server = journal(&data, None).await;
    let mut c = client(&server).await;
    // The retry's guard is stale by now; a retry must still get its result.
    let retry = append(&mut c, "battle", no_stream(), request.clone()).await.expect("retry");
    assert!(retry.deduplicated);
    assert_eq!(retry.events, original.events);
    let err = append(&mut c, "battle", any(), vec![opened("other", "req-42/0")]).await.unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition);
    assert!(err.message().contains("req-42/0"), "{err:?}");
    let err = append(&mut c, "battle", any(), vec![request[0].clone(), resolved("new", "req-43/0")]).await;
    let err = err.unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition);
    assert_eq!(error_reason(&err), "IDEMPOTENCY_PARTIAL_REPEAT");
    let stored = read_stream(&mut c, "battle").await;
    assert_eq!(stored.len(), 2, "nothing was appended by the retries");
    check_chain("battle", &stored);
}

/// NATS down at commit time (and a journal kill -9 meanwhile): appends still
/// succeed, and once NATS is back every event arrives exactly once, in
/// stream order, with Nats-Msg-Id = event id, on
/// `battlelog.events.<tenant>.<battle>` (docs/operating.md, *Security*; `_` for no tenant).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn events_reach_nats_once_in_order_after_nats_returns() {
    let mut nats = NatsServer::start();
    let dir = temp_dir("nats");
    let data = dir.path().join("data");
    let server = journal(&data, Some(&nats.url())).await;
    let mut c = client(&server).await;
    let mut appended: Vec<(String, u64, String)> = Vec::new();
    append_round_robin(&mut c, 6, "up", &mut appended).await;
    let nc = async_nats::connect(nats.url()).await.expect("connect to nats");
    let js = async_nats::jetstream::new(nc);
    let count = |js: async_nats::jetstream::Context| async move {
        let mut stream = js.get_stream("BATTLELOG_EVENTS").await.ok()?;
        Some(stream.info().await.ok()?.state.messages)
    };
    poll_until("the first events in JetStream", WAIT, || {
        let js = js.clone();
        async move { count(js).await.filter(|&n| n >= 6) }
    })
    .await;

    nats.stop();
    append_round_robin(&mut c, 9, "down", &mut appended).await;
    server.kill_9();
    let server = journal(&data, Some(&nats.url())).await;
    let mut c = client(&server).await;
    append_round_robin(&mut c, 6, "down-after-restart", &mut appended).await;
    nats.restart();

    let nc = async_nats::connect(nats.url()).await.expect("reconnect to nats");
    let js = async_nats::jetstream::new(nc);
    let total = appended.len() as u64;
    poll_until("every event in JetStream", WAIT, || {
        let js = js.clone();
        async move { count(js).await.filter(|&n| n >= total) }
    })
    .await;
    let stream = js.get_stream("BATTLELOG_EVENTS").await.expect("stream");
    let mut seen_ids = HashSet::new();
    let mut next_version: HashMap<String, u64> = HashMap::new();
    let mut by_id: HashMap<String, (String, u64)> = HashMap::new();
    for (s, v, id) in &appended {
        by_id.insert(id.clone(), (s.clone(), *v));
    }
    let messages = stream.get_info().await.expect("info").state.messages;
    assert_eq!(messages, total, "each event exactly once");
    for seq in 1..=total {
        let message = stream.get_raw_message(seq).await.expect("message");
        let id = message.headers.get("Nats-Msg-Id").expect("Nats-Msg-Id").as_str().to_owned();
        assert!(seen_ids.insert(id.clone()), "event {id} published twice");
        let (s, v) = by_id.get(&id).unwrap_or_else(|| panic!("unknown event {id}")).clone();
        assert_eq!(message.subject.as_str(), format!("battlelog.events.{}.{s}", subject_tenant(&s)));
        let expected = next_version.entry(s.clone()).or_insert(0);
        assert_eq!(v, *expected, "{s}: in stream order");
        *expected += 1;
        let record = <pb::JournalRecord as prost::Message>::decode(message.payload.as_ref()).expect("record payload");
        assert_eq!((record.stream_id.as_str(), record.version), (s.as_str(), v));
    }
    assert_eq!(seen_ids.len(), appended.len());
    drop(server);
}

/// The battles of the round-robin and their tenants ("" = none).
const ROUND_ROBIN: [(&str, &str); 3] = [("b1", "forum-a"), ("b2", "forum-b"), ("b3", "")];

/// The subject token of a round-robin battle's tenant: the tenant, or `_`.
fn subject_tenant(stream: &str) -> &'static str {
    match ROUND_ROBIN.iter().find(|(s, _)| *s == stream).expect("a round-robin battle").1 {
        "" => "_",
        tenant => tenant,
    }
}

/// Appends `n` single events round-robin over three battles (opening each
/// with its first event), recording (stream, version, event id) of each.
async fn append_round_robin(c: &mut Client, n: usize, label: &str, appended: &mut Vec<(String, u64, String)>) {
    for i in 0..n {
        let (stream, tenant) = ROUND_ROBIN[i % 3];
        let event = if appended.iter().any(|(s, _, _)| s == stream) {
            resolved(&format!("{label}-{i}"), "")
        } else {
            opened(tenant, "")
        };
        let reply = append(c, stream, any(), vec![event]).await.expect("append");
        appended.push((stream.to_owned(), reply.events[0].version, reply.events[0].event_id.clone()));
    }
}

/// A subscriber that starts behind catches up and goes live while a writer
/// keeps appending: it sees every version exactly once, in order, and the
/// all-streams subscription sees every global position once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn subscriptions_are_gap_free_across_catch_up_and_live() {
    let dir = temp_dir("subscribe");
    let server = journal(&dir.path().join("data"), None).await;
    let mut c = client(&server).await;
    write_battle(&mut c, "live", 50, |i| format!("{i}")).await;
    const TOTAL: u64 = 250;
    let mut sub = c
        .subscribe_stream(pb::SubscribeStreamRequest { stream_id: "live".into(), from_version: 10 })
        .await
        .expect("subscribe")
        .into_inner();
    let mut all = client(&server)
        .await
        .subscribe_all(pb::SubscribeAllRequest { from_position: 0 })
        .await
        .expect("all")
        .into_inner();
    let mut writer = client(&server).await;
    let writing = tokio::spawn(async move {
        for i in 50..TOTAL {
            // Two streams interleaved, so the global log is not just "live".
            append(&mut writer, "live", any(), vec![resolved(&format!("{i}"), "")]).await.expect("append");
            let other = if i == 50 { opened("", "") } else { resolved(&format!("{i}"), "") };
            append(&mut writer, "other", any(), vec![other]).await.expect("append");
        }
    });
    let mut received = Vec::new();
    while received.len() < (TOTAL - 10) as usize {
        let e = tokio::time::timeout(WAIT, sub.message())
            .await
            .expect("live events keep coming")
            .expect("stream")
            .expect("open");
        received.push(e);
    }
    writing.await.expect("writer");
    let versions: Vec<u64> = received.iter().map(|e| e.event.as_ref().expect("decoded").version).collect();
    assert_eq!(versions, (10..TOTAL).collect::<Vec<_>>(), "no gap, no duplicate");
    let full = read_stream(&mut c, "live").await;
    assert_eq!(&full[10..], received.as_slice(), "the subscription delivers the stored bytes");

    let total_all = TOTAL + (TOTAL - 50);
    let mut positions = Vec::new();
    while positions.len() < total_all as usize {
        let e =
            tokio::time::timeout(WAIT, all.message()).await.expect("all keeps coming").expect("stream").expect("open");
        positions.push(e.global_position);
    }
    assert_eq!(positions, (0..total_all).collect::<Vec<_>>());
}

/// Whether `status` is what a writer may see once its server was stopped:
/// the connection refused (UNAVAILABLE), a call cancelled as its connection
/// closed (CANCELLED), the journal's own refusal while it shuts down
/// (UNAVAILABLE), a call the server's GOAWAY refused ([`refused_by_goaway`])
/// and, only after a kill -9, a connection dropped mid-call (tonic reports
/// that as UNKNOWN with a transport or h2 error). Anything else — a
/// conflict on a stream the writer alone writes, an invalid argument, any
/// other internal error — is a bug, not the stop.
fn server_went_away(status: &tonic::Status, killed: bool) -> bool {
    match status.code() {
        Code::Unavailable | Code::Cancelled => true,
        Code::Internal => refused_by_goaway(status),
        Code::Unknown => {
            killed && ["transport error", "h2 protocol error"].iter().any(|m| status.message().contains(m))
        }
        _ => false,
    }
}

/// Whether the call failed because the server's graceful GOAWAY (reason
/// NO_ERROR) left its stream out: RFC 9113 §6.8, the server never
/// processed it. The server sends a first GOAWAY, then a PING, and once
/// the PING is answered a last GOAWAY naming the last stream it took. A
/// request the client queued just before it read the first GOAWAY may
/// leave after the PING's answer (h2 sends the answer first), so the
/// server never takes it. tonic 0.14 reports that as INTERNAL "h2 protocol
/// error", with the GOAWAY in the status's source.
fn refused_by_goaway(status: &tonic::Status) -> bool {
    let mut source = std::error::Error::source(status);
    while let Some(error) = source {
        if let Some(h2) = error.downcast_ref::<h2::Error>() {
            return h2.is_go_away() && h2.is_remote() && h2.reason() == Some(h2::Reason::NO_ERROR);
        }
        source = error.source();
    }
    false
}

/// Every event of the global log, paging through `ReadAll`.
async fn read_all_events(c: &mut Client) -> Vec<pb::RecordedEvent> {
    let mut events: Vec<pb::RecordedEvent> = Vec::new();
    loop {
        let from_position = events.last().map_or(0, |e| e.global_position + 1);
        let page = c.read_all(pb::ReadAllRequest { from_position, max_count: 0 }).await.expect("read all").into_inner();
        if page.events.is_empty() {
            return events;
        }
        events.extend(page.events);
    }
}

/// SIGTERM with appends in flight: every append that was answered OK is on
/// disk after a restart with the payload, event id and hash it was
/// acknowledged with; writers fail only after the signal and only as a
/// stopping server makes them, and an append its GOAWAY refused is not
/// stored; the open subscription delivers stored events
/// without a gap and then ends; the process exits 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn graceful_shutdown_finishes_in_flight_appends() {
    let dir = temp_dir("graceful");
    let data = dir.path().join("data");
    let server = journal(&data, None).await;
    let mut sub = client(&server)
        .await
        .subscribe_all(pb::SubscribeAllRequest { from_position: 0 })
        .await
        .expect("subscribe")
        .into_inner();
    let acked = Arc::new(AtomicUsize::new(0));
    let stopping = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for w in 0..16 {
        let mut c = client(&server).await;
        let (acked, stopping) = (acked.clone(), stopping.clone());
        tasks.push(tokio::spawn(async move {
            let mut ok = Vec::new();
            for i in 0.. {
                let event = if i == 0 { opened("", "") } else { resolved(&format!("g{w}/{i}"), "") };
                let payload = event.payload.clone();
                match append(&mut c, &format!("g{w}"), any(), vec![event]).await {
                    Ok(reply) => {
                        let e = &reply.events[0];
                        ok.push((e.version, e.event_id.clone(), e.hash.clone(), payload));
                        acked.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(status) => {
                        // Read the flag after the error: it was set before the signal.
                        assert!(stopping.load(Ordering::SeqCst), "g{w}: an append failed before SIGTERM: {status:?}");
                        assert!(server_went_away(&status, false), "g{w}: not a stopping server's error: {status:?}");
                        let never_taken = refused_by_goaway(&status).then_some(payload);
                        return (ok, never_taken);
                    }
                }
            }
            unreachable!()
        }));
    }
    until_counted("appends in flight", WAIT, &acked, 100).await;
    stopping.store(true, Ordering::SeqCst);
    assert!(server.terminate().await, "exits 0 after SIGTERM");
    // The subscription ends rather than hanging the shutdown, and what it
    // delivered before is the global log in order.
    let mut delivered = Vec::new();
    loop {
        let next = tokio::time::timeout(WAIT, sub.message()).await.expect("the subscription ends");
        match next {
            Ok(Some(e)) => delivered.push(e),
            Ok(None) => break,
            Err(status) => panic!("a graceful shutdown ends the subscription cleanly: {status:?}"),
        }
    }
    let mut answered = Vec::new();
    for task in tasks {
        answered.push(task.await.expect("writer"));
    }

    let server = journal(&data, None).await;
    let mut c = client(&server).await;
    for (w, (acknowledged, never_taken)) in answered.iter().enumerate() {
        let stream = format!("g{w}");
        let stored = read_stream(&mut c, &stream).await;
        check_chain(&stream, &stored);
        // A GOAWAY says the server never took the request: so it is not stored.
        if let Some(payload) = never_taken {
            assert!(
                stored.iter().all(|e| e.event.as_ref().is_none_or(|record| &record.payload != payload)),
                "{stream}: an append the server's GOAWAY refused is stored"
            );
        }
        assert!(!acknowledged.is_empty(), "{stream}: the writer had appended before the signal");
        for (version, event_id, hash, payload) in acknowledged {
            let e = stored
                .get(*version as usize)
                .unwrap_or_else(|| panic!("{stream}@{version}: acknowledged before SIGTERM, lost after"));
            let record = e.event.as_ref().expect("decoded");
            assert_eq!(&record.payload, payload, "{stream}@{version}: the acknowledged payload");
            assert_eq!(&record.event_id, event_id, "{stream}@{version}: the acknowledged event id");
            assert_eq!(&e.hash, hash, "{stream}@{version}: the acknowledged record bytes");
        }
    }
    let global = read_all_events(&mut c).await;
    let positions: Vec<u64> = delivered.iter().map(|e| e.global_position).collect();
    assert_eq!(positions, (0..delivered.len() as u64).collect::<Vec<_>>(), "delivered from 0 without a gap");
    assert!(delivered.len() <= global.len(), "nothing delivered that was not stored");
    assert_eq!(delivered.as_slice(), &global[..delivered.len()], "the subscription delivered the stored events");
}

/// The binary refuses a bad configuration at start, naming the key, and
/// serves health and reflection when configured well.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_is_validated_and_health_and_reflection_are_served() {
    let binary = battlelog_test_support::service_binary("battlelog-journal");
    let auth = battlelog_test_support::TestAuth::shared();
    let dir = temp_dir("config");
    let output = std::process::Command::new(&binary)
        .args(["--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path().join("data"))
        .env("BATTLELOG_JOURNAL_MAX_PAYLOAD_BYTES", "0")
        .output()
        .expect("run the binary");
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("max_payload_bytes"), "{output:?}");
    // Nothing is served without the keys that tokens are checked with.
    let unkeyed = std::process::Command::new(&binary)
        .args(["--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path().join("data"))
        .output()
        .expect("run the binary");
    assert!(!unkeyed.status.success());
    assert!(String::from_utf8_lossy(&unkeyed.stderr).contains("auth_keys"), "{unkeyed:?}");

    let file = dir.path().join("journal.toml");
    std::fs::write(&file, "max_events_per_append = 2\nlisten = \"127.0.0.1:1\"\n").expect("write config");
    let args: Vec<String> = ["--config", &file.display().to_string(), "--listen", "127.0.0.1:0", "--data-dir"]
        .iter()
        .map(|s| s.to_string())
        .chain([dir.path().join("data").display().to_string()])
        .collect();
    let server = battlelog_test_support::ServiceProcess::start(
        &binary,
        &args,
        &auth.env("journal"),
        &dir.path().join("journal.log"),
    )
    .await;
    let mut c = client(&server).await;
    let err = append(&mut c, "s", any(), vec![opened("", ""), resolved("a", ""), resolved("b", "")]).await.unwrap_err();
    assert_eq!(invalid_field(&err), "events", "the file's limit applies");
    assert!(err.message().contains("max_events_per_append = 2"), "{err:?}");

    // grpc.health.v1: the server as a whole and the Journal service serve;
    // a service it does not have is NOT_FOUND. Health needs no token.
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};
    let mut health = HealthClient::new(server.channel().await);
    for service in ["", "battlelog.v1.Journal"] {
        let reply = health.check(HealthCheckRequest { service: service.into() }).await;
        let status = reply.unwrap_or_else(|s| panic!("health of {service:?}: {s:?}")).into_inner().status;
        assert_eq!(status, ServingStatus::Serving as i32, "health of {service:?}");
    }
    let unknown = health.check(HealthCheckRequest { service: "battlelog.v1.Nothing".into() }).await;
    assert_eq!(unknown.expect_err("no such service").code(), Code::NotFound);

    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
    let mut reflection = ServerReflectionClient::new(server.channel().await);
    let request = tonic_reflection::pb::v1::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut replies =
        reflection.server_reflection_info(tokio_stream::iter([request])).await.expect("reflection").into_inner();
    let reply = replies.message().await.expect("reply").expect("one reply");
    let Some(MessageResponse::ListServicesResponse(list)) = reply.message_response else { panic!("{reply:?}") };
    let names: Vec<_> = list.service.iter().map(|s| s.name.as_str()).collect();
    assert!(names.contains(&"battlelog.v1.Journal"), "{names:?}");
}

/// The battle guard against the attacks of issue 8, on the real binary and
/// real sled: junk, a far-off nonce, a stray reveal with the wrong seed and a
/// second `BattleOpened` are refused naming the field and the rule, nothing
/// is written (stream head and global position unchanged), the battle still
/// takes its next valid event, and the guard's state survives a kill -9.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_that_would_brick_a_battle_are_refused_and_the_battle_goes_on() {
    let dir = temp_dir("guard");
    let data = dir.path().join("data");
    let server = journal(&data, None).await;
    let mut c = client(&server).await;
    append(&mut c, "guarded", no_stream(), vec![opened("forum-a", ""), rolled(0, "first", "")]).await.expect("open");
    let next_position = |c: &mut Client| {
        let mut c = c.clone();
        async move {
            let reply = c.read_all(pb::ReadAllRequest { from_position: 0, max_count: 0 }).await.expect("read all");
            reply.into_inner().next_position
        }
    };
    let position = next_position(&mut c).await;
    assert_eq!(position, 2);

    // A field-valid protobuf that is not a BattleEvent's encoding.
    let junk = event("DiceRolled", b"\x08\x96\x01 this is not a battle event".to_vec(), "");
    let cases: Vec<(&str, Vec<pb::NewEvent>, Code, &str, &str)> = vec![
        ("junk", vec![junk], Code::InvalidArgument, "EVENT_UNDECODABLE", "events[0].payload"),
        (
            "a far-off nonce",
            vec![rolled(1_000_000, "far", "")],
            Code::FailedPrecondition,
            "NONCE_OUT_OF_ORDER",
            "events[0].payload.dice_rolled.nonce",
        ),
        (
            "a stray reveal with the wrong seed",
            vec![revealed(0, seed_hex(7), "")],
            Code::FailedPrecondition,
            "SEED_MISMATCH",
            "events[0].payload.seed_revealed.server_seed",
        ),
        (
            "a second BattleOpened",
            vec![opened("forum-b", "")],
            Code::FailedPrecondition,
            "BATTLE_ALREADY_OPENED",
            "events[0].event_type",
        ),
        (
            "a good roll, then a reused nonce in the same request",
            vec![rolled(1, "good", ""), rolled(1, "again", "")],
            Code::FailedPrecondition,
            "NONCE_OUT_OF_ORDER",
            "events[1].payload.dice_rolled.nonce",
        ),
    ];
    for (what, events, code, reason, field) in cases {
        let err = append(&mut c, "guarded", any(), events).await.expect_err(what);
        assert_eq!(err.code(), code, "{what}: {err:?}");
        assert_eq!(error_reason(&err), reason, "{what}");
        assert!(err.message().contains(field), "{what}: the message names {field}: {err:?}");
        if code == Code::InvalidArgument {
            assert_eq!(invalid_field(&err), field, "{what}");
        }
        assert_eq!(head(&mut c, "guarded").await, Some(1), "{what}: the stream head is unchanged");
        assert_eq!(next_position(&mut c).await, position, "{what}: nothing reached the global log");
    }
    let err = append(&mut c, "unopened", no_stream(), vec![rolled(0, "x", "")]).await.expect_err("unopened");
    assert_eq!(error_reason(&err), "BATTLE_NOT_OPENED");
    assert_eq!(head(&mut c, "unopened").await, None);

    let reply = append(&mut c, "guarded", any(), vec![rolled(1, "second", "")]).await.expect("the next valid roll");
    assert_eq!(reply.events[0].version, 2, "the battle goes on");
    let stored = read_stream(&mut c, "guarded").await;
    check_chain("guarded", &stored);
    assert_eq!(stored.len(), 3);

    // The guard's state is durable with the head.
    server.kill_9();
    let server = journal(&data, None).await;
    let mut c = client(&server).await;
    let err = append(&mut c, "guarded", any(), vec![rolled(1, "reused", "")]).await.expect_err("nonce 1 is spent");
    assert_eq!(error_reason(&err), "NONCE_OUT_OF_ORDER");
    append(&mut c, "guarded", any(), vec![revealed(0, seed_hex(0), "")]).await.expect("the true seed reveals");
    let err = append(&mut c, "guarded", any(), vec![rolled(2, "late", "")]).await.expect_err("epoch 0 is revealed");
    assert_eq!(error_reason(&err), "EPOCH_REVEALED");
    assert!(verify(&mut c, "guarded").await.ok);
}
