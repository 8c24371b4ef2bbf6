//! `AppendBatch` (issue 24) through the real journal binary, over gRPC on
//! loopback, on real sled:
//!
//! - each append of a batch is answered as if it had been sent alone: its
//!   own version, its own conflict with the `ErrorInfo` a lone `Append`
//!   carries, its own field-naming refusal, and one's failure leaves the
//!   others written;
//! - `max_appends_per_batch` and `max_append_bytes` hold at their edge: a
//!   batch at the limit is taken, one past it is refused as a whole,
//!   `INVALID_ARGUMENT` naming the field and the limit, with nothing
//!   written;
//! - the services' journal client (`battlelog_stream::StreamClient`) sends
//!   appends that queue up behind the calls in flight as `AppendBatch`
//!   calls (the journal's own request counts show them), answers each
//!   caller its own result and conflict, keeps its batches within
//!   `journal_append_batch` and the smallest byte limit a journal may have
//!   (a journal at exactly those limits refuses none), and falls back to
//!   one `Append` per append when the journal refuses its batches as too
//!   large.
//!
//! Who may call `AppendBatch` (the `service` role only, as every journal
//! RPC) is a row of `tests/auth_matrix.rs`.

use battlelog_proto::v1 as pb;
use battlelog_proto::v1::journal_client::JournalClient;
use battlelog_stream::{AppendLimits, StreamClient, StreamError};
use battlelog_test_support::journal_client::*;
use battlelog_test_support::{ServiceProcess, StartOptions, TestAuth, http_get, journal_with, temp_dir};
use tonic::Code;

fn options(envs: &[(&str, &str)]) -> StartOptions {
    StartOptions {
        envs: envs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
        ..StartOptions::default()
    }
}

fn request(stream: &str, expected: Option<pb::ExpectedVersion>, events: Vec<pb::NewEvent>) -> pb::AppendRequest {
    pb::AppendRequest { stream_id: stream.into(), expected_version: expected, events }
}

/// The status an `AppendBatch` result carries, rebuilt as the services'
/// client rebuilds it.
fn result_status(result: &pb::AppendResult) -> tonic::Status {
    match &result.result {
        Some(pb::append_result::Result::Error(e)) => {
            battlelog_proto::error::status_from_parts(e.code, e.message.clone(), e.details.clone())
        }
        other => panic!("expected an error, got {other:?}"),
    }
}

fn appended(result: &pb::AppendResult) -> &pb::AppendResponse {
    match &result.result {
        Some(pb::append_result::Result::Appended(a)) => a,
        other => panic!("expected an append, got {other:?}"),
    }
}

/// An `ActionResolved` whose payload weighs exactly `bytes` (its English
/// summary padded; around these sizes each character is one byte more).
fn weighing(bytes: usize) -> pb::NewEvent {
    let padded = |n: usize| {
        let resolved = pb::ActionResolved { summary_en: "x".repeat(n), ..Default::default() };
        battle_event(pb::battle_event::Event::ActionResolved(resolved), "")
    };
    let overhead = padded(bytes).payload.len() - bytes;
    let event = padded(bytes - overhead);
    assert_eq!(event.payload.len(), bytes, "the padding is exact");
    event
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_append_of_a_batch_is_answered_as_if_alone_and_the_limits_hold_at_their_edge() {
    let dir = temp_dir("append-batch");
    // The smallest byte limits a journal may have, so that the byte edge is
    // reached with two appends.
    let limit = battlelog_runtime::limits::journal::MIN_PAYLOAD_BYTES;
    let limit_text = limit.to_string();
    let server = journal_with(
        &dir.path().join("data"),
        None,
        &options(&[
            ("BATTLELOG_JOURNAL_MAX_APPENDS_PER_BATCH", "3"),
            ("BATTLELOG_JOURNAL_MAX_APPEND_BYTES", &limit_text),
            ("BATTLELOG_JOURNAL_MAX_PAYLOAD_BYTES", &limit_text),
        ]),
    )
    .await;
    let mut c = client(&server).await;
    append(&mut c, "taken", no_stream(), vec![opened("", "")]).await.expect("open taken");

    // Three appends, at the count limit: one written, one conflicting, one
    // malformed. Each answer is the one a lone Append gets.
    let batch = vec![
        request("fresh", no_stream(), vec![opened("", ""), resolved("first", "")]),
        request("taken", exact(Some(5)), vec![resolved("late", "")]),
        request("bad.stream", any(), vec![opened("", "")]),
    ];
    let results = c
        .append_batch(pb::AppendBatchRequest { appends: batch })
        .await
        .expect("a batch at the count limit")
        .into_inner()
        .results;
    assert_eq!(results.len(), 3, "one result per append");
    let fresh = appended(&results[0]);
    assert_eq!(fresh.events.iter().map(|e| e.version).collect::<Vec<_>>(), [0, 1]);
    assert!(!fresh.deduplicated);
    assert_eq!(conflict_actual_version(&result_status(&results[1])), Some(0));
    assert_eq!(invalid_field(&result_status(&results[2])), "stream_id");
    // What the batch wrote is what a lone Append would have: a chain that
    // verifies, and nothing for the refused ones.
    let stored = read_stream(&mut c, "fresh").await;
    assert_eq!(stored.len(), 2);
    check_chain("fresh", &stored);
    assert_eq!(head(&mut c, "taken").await, Some(0), "the conflicting append wrote nothing");

    // One past the count limit: refused whole, nothing written.
    let four: Vec<_> = (0..4).map(|i| request(&format!("four-{i}"), no_stream(), vec![opened("", "")])).collect();
    let err = c.append_batch(pb::AppendBatchRequest { appends: four }).await.expect_err("4 > 3");
    assert_eq!(invalid_field(&err), "appends");
    assert!(err.message().contains("max_appends_per_batch = 3"), "{err:?}");
    for i in 0..4 {
        assert_eq!(head(&mut c, &format!("four-{i}")).await, None, "nothing of a refused batch is written");
    }
    let err = c.append_batch(pb::AppendBatchRequest { appends: vec![] }).await.expect_err("empty");
    assert_eq!(invalid_field(&err), "appends");

    // The payloads of a whole batch weigh at most max_append_bytes: exactly
    // that is taken, one byte more is refused whole.
    let opening = opened("", "").payload.len();
    let heavy =
        |stream: &str, first: usize| request(stream, no_stream(), vec![opened("", ""), weighing(first - opening)]);
    let half = limit / 2;
    let at_edge = vec![heavy("edge-a", half), heavy("edge-b", limit - half)];
    let results = c
        .append_batch(pb::AppendBatchRequest { appends: at_edge })
        .await
        .expect("a batch of exactly max_append_bytes")
        .into_inner()
        .results;
    assert_eq!(appended(&results[0]).events.len(), 2);
    assert_eq!(appended(&results[1]).events.len(), 2);
    let past_edge = vec![heavy("past-a", half), heavy("past-b", limit - half + 1)];
    let err = c.append_batch(pb::AppendBatchRequest { appends: past_edge }).await.expect_err("one byte over");
    assert_eq!(invalid_field(&err), "appends");
    assert!(err.message().contains(&format!("max_append_bytes = {limit}")), "{err:?}");
    assert_eq!(head(&mut c, "past-a").await, None, "nothing of a refused batch is written");
    assert_eq!(head(&mut c, "past-b").await, None, "nothing of a refused batch is written");
}

/// The count of `method` calls the journal answered OK, from its `/metrics`.
async fn calls(process: &ServiceProcess, method: &str) -> f64 {
    answered(process, method, "OK").await
}

/// The count of `method` calls the journal answered with `code`.
async fn answered(process: &ServiceProcess, method: &str, code: &str) -> f64 {
    let url = process.metrics_url().expect("a metrics port announced");
    let (status, text) = http_get(&url, &[]).await;
    assert_eq!(status, 200, "{text}");
    let prefix = format!(
        "battlelog_grpc_server_requests_total{{service=\"battlelog.v1.Journal\",method=\"{method}\",code=\"{code}\"}} "
    );
    text.lines().find_map(|l| l.strip_prefix(&prefix)?.trim().parse().ok()).unwrap_or(0.0)
}

/// Appends `count` battles' openings and then `rounds` more events to each,
/// all battles at once through one `StreamClient`, each guarded by the
/// version it follows; then checks every stream holds exactly its events.
async fn append_concurrently(streams: &StreamClient, c: &mut Client, label: &str, count: usize, rounds: u64) {
    let mut tasks = Vec::new();
    for b in 0..count {
        let streams = streams.clone();
        let stream = format!("{label}-{b}");
        tasks.push(tokio::spawn(async move {
            let opened = streams.append(&stream, None, vec![opened("", "")]).await.expect("open");
            assert_eq!(opened.events[0].version, 0);
            for round in 0..rounds {
                let text = format!("{stream} round {round}");
                let wrote = streams.append(&stream, Some(round), vec![resolved(&text, "")]).await.expect("append");
                assert_eq!(wrote.events[0].version, round + 1, "{stream}: each caller gets its own result");
            }
            stream
        }));
    }
    for task in tasks {
        let stream = task.await.expect("an appender");
        let stored = read_stream(c, &stream).await;
        assert_eq!(stored.len() as u64, rounds + 1, "{stream}");
        check_chain(&stream, &stored);
        for (round, event) in stored.iter().skip(1).enumerate() {
            let record = event.event.as_ref().expect("a record");
            assert_eq!(event_text(&record.payload), format!("{stream} round {round}"), "{stream}: its own events");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_services_client_batches_what_queues_up_and_answers_each_caller_its_own() {
    let dir = temp_dir("client-batch");
    let server =
        journal_with(&dir.path().join("data"), None, &options(&[("BATTLELOG_JOURNAL_METRICS_LISTEN", "127.0.0.1:0")]))
            .await;
    let mut c = client(&server).await;
    let token = TestAuth::shared().service_token();
    let streams = StreamClient::new(JournalClient::new(server.authed(&token).await));

    // A lone append goes alone, as an Append.
    let batches_before = calls(&server, "AppendBatch").await;
    streams.append("lone", None, vec![opened("", "")]).await.expect("a lone append");
    assert_eq!(calls(&server, "AppendBatch").await, batches_before, "nothing to batch a lone append with");

    // 32 battles at once: more appends than calls in flight, so some go in
    // batches; every caller still gets its own version.
    append_concurrently(&streams, &mut c, "many", 32, 8).await;
    assert!(calls(&server, "AppendBatch").await > batches_before, "queued appends went out as AppendBatch calls");

    // At `journal_append_batch` 1, every append goes alone however many
    // queue up.
    let alone = streams.clone().with_append_limits(AppendLimits { max_batch: 1, ..AppendLimits::default() });
    let batches = calls(&server, "AppendBatch").await;
    append_concurrently(&alone, &mut c, "alone", 16, 4).await;
    assert_eq!(calls(&server, "AppendBatch").await, batches, "a batch of at most 1 is never sent");

    // A conflict in a batch reaches its caller with the actual version, as
    // a lone Append's does; the others of the batch are written.
    let mut tasks = Vec::new();
    for b in 0..16 {
        let streams = streams.clone();
        tasks.push(tokio::spawn(async move {
            let stream = format!("conflict-{b}");
            streams.append(&stream, None, vec![opened("", "")]).await.expect("open");
            // Even battles claim a head they do not have.
            let claimed = if b % 2 == 0 { Some(7) } else { Some(0) };
            (b, streams.append(&stream, claimed, vec![resolved("x", "")]).await)
        }));
    }
    for task in tasks {
        let (b, outcome) = task.await.expect("an appender");
        if b % 2 == 0 {
            match outcome {
                Err(StreamError::Conflict { actual, .. }) => assert_eq!(actual, Some(0), "battle {b}"),
                other => panic!("battle {b}: expected a conflict, got {other:?}"),
            }
        } else {
            assert_eq!(outcome.expect("the others are written").events[0].version, 1, "battle {b}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_journal_that_takes_smaller_batches_gets_each_append_alone() {
    let dir = temp_dir("client-fallback");
    let server = journal_with(
        &dir.path().join("data"),
        None,
        &options(&[
            ("BATTLELOG_JOURNAL_MAX_APPENDS_PER_BATCH", "1"),
            ("BATTLELOG_JOURNAL_METRICS_LISTEN", "127.0.0.1:0"),
        ]),
    )
    .await;
    let mut c = client(&server).await;
    let token = TestAuth::shared().service_token();
    // The client would batch up to 64; this journal refuses any batch of
    // more than one, and every append must still be written, once.
    let streams = StreamClient::new(JournalClient::new(server.authed(&token).await));
    append_concurrently(&streams, &mut c, "fallback", 24, 6).await;
    assert!(
        answered(&server, "AppendBatch", "INVALID_ARGUMENT").await > 0.0,
        "the client tried batches, and the journal refused them"
    );
    assert_eq!(calls(&server, "AppendBatch").await, 0.0, "no batch was taken");
    let err = c
        .append_batch(pb::AppendBatchRequest {
            appends: vec![request("x", any(), vec![opened("", "")]), request("y", any(), vec![opened("", "")])],
        })
        .await
        .expect_err("the journal's limit is 1");
    assert_eq!(err.code(), Code::InvalidArgument);
}

/// The client keeps within the journal's limits as configured: at most
/// `journal_append_batch` appends per batch, and no more payload bytes than
/// the smallest `max_append_bytes` a journal may have. A journal at exactly
/// those limits refuses none of its batches, and takes some.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_services_client_keeps_its_batches_within_the_journals_limits() {
    let dir = temp_dir("client-limits");
    let smallest = battlelog_runtime::limits::journal::MIN_PAYLOAD_BYTES.to_string();
    let server = journal_with(
        &dir.path().join("data"),
        None,
        &options(&[
            ("BATTLELOG_JOURNAL_MAX_APPENDS_PER_BATCH", "4"),
            ("BATTLELOG_JOURNAL_MAX_APPEND_BYTES", &smallest),
            ("BATTLELOG_JOURNAL_MAX_PAYLOAD_BYTES", &smallest),
            ("BATTLELOG_JOURNAL_METRICS_LISTEN", "127.0.0.1:0"),
        ]),
    )
    .await;
    let mut c = client(&server).await;
    let token = TestAuth::shared().service_token();
    let streams = StreamClient::new(JournalClient::new(server.authed(&token).await))
        .with_append_limits(AppendLimits { max_batch: 4, ..AppendLimits::default() });
    append_concurrently(&streams, &mut c, "capped", 24, 6).await;

    // Heavy appends: a byte over a third of the byte limit each, so that
    // at most two fit a batch, however many queue up (three would be
    // refused).
    let heavy = battlelog_runtime::limits::journal::MIN_PAYLOAD_BYTES / 3 + 1;
    let mut tasks = Vec::new();
    for b in 0..12 {
        let streams = streams.clone();
        tasks.push(tokio::spawn(async move {
            let stream = format!("heavy-{b}");
            streams.append(&stream, None, vec![opened("", "")]).await.expect("open");
            for round in 0..3 {
                streams.append(&stream, Some(round), vec![weighing(heavy)]).await.expect("a heavy append");
            }
            stream
        }));
    }
    for task in tasks {
        let stream = task.await.expect("an appender");
        assert_eq!(read_stream(&mut c, &stream).await.len(), 4, "{stream}");
    }
    assert!(calls(&server, "AppendBatch").await > 0.0, "the client batched");
    assert_eq!(
        answered(&server, "AppendBatch", "INVALID_ARGUMENT").await,
        0.0,
        "no batch of the client's went past the journal's limits"
    );
}
