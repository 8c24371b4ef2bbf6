//! Calls against a running journal over gRPC, the records the tests append
//! (battle events of fixed seeds), the journal's error details, and an
//! independent re-implementation of the chain check (docs/protocol.md §4)
//! written from the protocol text, not from the journal's code.

use battlelog_auth::AuthChannel;
use battlelog_proto::v1 as pb;
use battlelog_proto::v1::journal_client::JournalClient;
use sha2::{Digest, Sha256};
use tonic::{Code, Status};
use tonic_types::StatusExt;

/// A journal client.
pub type Client = JournalClient<AuthChannel>;

/// The journal's sled database in `dir`, opened for a test that reads or
/// edits the files directly while no journal runs on them. While sled finds
/// the directory's lock held it tries again, up to a deadline. A handle
/// dropped a moment ago may still hold the lock. So may a child process that
/// another test in this binary started meanwhile: it holds a copy of the
/// lock file's descriptor until its exec. The journal's own opening waits
/// the same way (`open_db` in its sled store).
pub async fn open_sled(dir: &std::path::Path) -> sled::Db {
    let what = format!("sled's lock on {} to come free", dir.display());
    crate::poll_until(&what, std::time::Duration::from_secs(10), || async {
        match sled::open(dir) {
            Ok(db) => Some(db),
            // sled 0.34 says so only in its message.
            Err(sled::Error::Io(e)) if e.to_string().contains("could not acquire lock") => None,
            Err(e) => panic!("open sled in {}: {e}", dir.display()),
        }
    })
    .await
}

/// Connects to a running journal.
pub async fn client(process: &crate::ServiceProcess) -> Client {
    let token = crate::TestAuth::shared().service_token();
    JournalClient::new(process.authed(&token).await).max_decoding_message_size(64 * 1024 * 1024)
}

/// Expected version `any`.
pub fn any() -> Option<pb::ExpectedVersion> {
    Some(pb::ExpectedVersion { kind: Some(pb::expected_version::Kind::Any(pb::expected_version::Any {})) })
}

/// Expected version `no_stream`.
pub fn no_stream() -> Option<pb::ExpectedVersion> {
    Some(pb::ExpectedVersion { kind: Some(pb::expected_version::Kind::NoStream(pb::expected_version::NoStream {})) })
}

/// Expected version `exact(v)`, or `no_stream` for `None`.
pub fn exact(version: Option<u64>) -> Option<pb::ExpectedVersion> {
    match version {
        Some(v) => Some(pb::ExpectedVersion { kind: Some(pb::expected_version::Kind::Exact(v)) }),
        None => no_stream(),
    }
}

/// A new event.
pub fn event(event_type: &str, payload: impl Into<Vec<u8>>, key: &str) -> pb::NewEvent {
    pb::NewEvent { event_type: event_type.into(), payload: payload.into(), idempotency_key: key.into() }
}

/// The epoch's server seed in these tests: 32 bytes of `epoch + 1`.
pub fn test_seed(epoch: u32) -> [u8; 32] {
    [epoch as u8 + 1; 32]
}

/// The seed as `SeedRevealed.server_seed` carries it: 64 lowercase hex digits.
pub fn seed_hex(epoch: u32) -> String {
    hex::encode(test_seed(epoch))
}

/// docs/protocol.md §1: `commitment = lowercase_hex(SHA-256(server_seed))`.
pub fn commitment_hex(epoch: u32) -> String {
    hex::encode(Sha256::digest(test_seed(epoch)))
}

/// A battle event as proto/battlelog/v1/battle.proto says a record carries
/// one: `event_type` names the event, the payload is a `BattleEvent` holding it.
pub fn battle_event(battle: pb::battle_event::Event, key: &str) -> pb::NewEvent {
    let event_type = battlelog_proto::battle::type_name(&battle);
    let payload = prost::Message::encode_to_vec(&pb::BattleEvent { event: Some(battle) });
    event(event_type, payload, key)
}

/// Version 0 of a battle of `tenant`, committed to [`test_seed`]`(0)`.
pub fn opened(tenant: &str, key: &str) -> pb::NewEvent {
    battle_event(
        pb::battle_event::Event::BattleOpened(pb::BattleOpened {
            ruleset: "pokemon-d6@1".into(),
            commitment: commitment_hex(0),
            tenant: tenant.into(),
            ..Default::default()
        }),
        key,
    )
}

/// A roll of epoch 0 with this nonce; `purpose` tells rolls apart.
pub fn rolled(nonce: u64, purpose: &str, key: &str) -> pb::NewEvent {
    battle_event(
        pb::battle_event::Event::DiceRolled(pb::DiceRolled {
            epoch: 0,
            nonce,
            expression: "1d20".into(),
            purpose: purpose.into(),
            ..Default::default()
        }),
        key,
    )
}

/// An event that any open battle takes at any point: an `ActionResolved`
/// whose English summary is `text` (so tests can tell events apart).
pub fn resolved(text: &str, key: &str) -> pb::NewEvent {
    battle_event(
        pb::battle_event::Event::ActionResolved(pb::ActionResolved {
            summary_en: text.into(),
            summary_ru: text.into(),
            ..Default::default()
        }),
        key,
    )
}

/// The `summary_en` of an [`resolved`] payload (or the `purpose` of a roll).
pub fn event_text(payload: &[u8]) -> String {
    use pb::battle_event::Event;
    match <pb::BattleEvent as prost::Message>::decode(payload).expect("a BattleEvent").event {
        Some(Event::ActionResolved(e)) => e.summary_en,
        Some(Event::DiceRolled(e)) => e.purpose,
        other => panic!("no text in {other:?}"),
    }
}

/// A `SeedRevealed` of `epoch` with `server_seed` (hex).
pub fn revealed(epoch: u32, server_seed: String, key: &str) -> pb::NewEvent {
    battle_event(pb::battle_event::Event::SeedRevealed(pb::SeedRevealed { epoch, server_seed, credential: None }), key)
}

/// The `ErrorInfo.reason` of a status (panics without one).
pub fn error_reason(status: &Status) -> String {
    let details = status.get_error_details();
    details.error_info().unwrap_or_else(|| panic!("no ErrorInfo: {status:?}")).reason.clone()
}

/// Opens `stream` (an [`opened`] battle of no tenant), then appends
/// `count` resolutions `r0`, `r1` … to it, one append each.
pub async fn open_and_resolve(client: &mut Client, stream: &str, count: usize) {
    write_battle(client, stream, count + 1, |i| format!("r{}", i - 1)).await;
}

/// Writes versions 0 to `events - 1` of `stream`, one append each: an
/// [`opened`] battle of no tenant, then resolutions whose text `text`
/// gives by version.
pub async fn write_battle(client: &mut Client, stream: &str, events: usize, text: impl Fn(usize) -> String) {
    for i in 0..events {
        let event = if i == 0 { opened("", "") } else { resolved(&text(i), "") };
        append(client, stream, any(), vec![event]).await.expect("append");
    }
}

/// Appends.
pub async fn append(
    client: &mut Client,
    stream: &str,
    expected: Option<pb::ExpectedVersion>,
    events: Vec<pb::NewEvent>,
) -> Result<pb::AppendResponse, Status> {
    client
        .append(pb::AppendRequest { stream_id: stream.into(), expected_version: expected, events })
        .await
        .map(tonic::Response::into_inner)
}

/// The head version of a stream (`None` when empty).
pub async fn head(client: &mut Client, stream: &str) -> Option<u64> {
    client
        .stream_info(pb::StreamInfoRequest { stream_id: stream.into() })
        .await
        .expect("stream info")
        .into_inner()
        .head_version
}

/// The journal's global head: the next position of its global log (the
/// number of events all streams hold), paging through `ReadAll`.
pub async fn global_head(client: &mut Client) -> u64 {
    let mut position = 0;
    loop {
        let page = client
            .read_all(pb::ReadAllRequest { from_position: position, max_count: 0 })
            .await
            .expect("read the global log")
            .into_inner();
        if page.events.is_empty() {
            return position;
        }
        position = page.next_position;
    }
}

/// Every durable event of a stream, paging through reads.
pub async fn read_stream(client: &mut Client, stream: &str) -> Vec<pb::RecordedEvent> {
    let mut out: Vec<pb::RecordedEvent> = Vec::new();
    loop {
        let from = out.len() as u64;
        let page = client
            .read_stream(pb::ReadStreamRequest { stream_id: stream.into(), from_version: from, max_count: 0 })
            .await
            .expect("read stream")
            .into_inner();
        if page.events.is_empty() {
            return out;
        }
        out.extend(page.events);
    }
}

/// Every event of a stream, paging through reads; the first error ends it
/// (for reads that may meet an outage, retried by the caller).
pub async fn try_read_stream(client: &mut Client, stream: &str) -> Result<Vec<pb::RecordedEvent>, Status> {
    let mut out: Vec<pb::RecordedEvent> = Vec::new();
    loop {
        let request = pb::ReadStreamRequest { stream_id: stream.into(), from_version: out.len() as u64, max_count: 0 };
        let page = client.read_stream(request).await?.into_inner();
        if page.events.is_empty() {
            return Ok(out);
        }
        out.extend(page.events);
    }
}

/// Verifies a stream over gRPC.
pub async fn verify(client: &mut Client, stream: &str) -> pb::VerifyChainResponse {
    client.verify_chain(pb::VerifyChainRequest { stream_id: stream.into() }).await.expect("verify chain").into_inner()
}

/// The `actual_version` of a wrong-expected-version error (`None` = "none").
pub fn conflict_actual_version(status: &Status) -> Option<u64> {
    assert_eq!(status.code(), Code::Aborted, "expected a conflict, got {status:?}");
    let details = status.get_error_details();
    let info = details.error_info().unwrap_or_else(|| panic!("conflict without ErrorInfo: {status:?}"));
    assert_eq!(info.reason, "WRONG_EXPECTED_VERSION");
    let actual = info.metadata.get("actual_version").expect("actual_version in the conflict");
    if actual == "none" { None } else { Some(actual.parse().expect("numeric actual_version")) }
}

/// The field named by an INVALID_ARGUMENT's BadRequest.
pub fn invalid_field(status: &Status) -> String {
    assert_eq!(status.code(), Code::InvalidArgument, "expected INVALID_ARGUMENT, got {status:?}");
    let details = status.get_error_details();
    let bad = details.bad_request().unwrap_or_else(|| panic!("no BadRequest details: {status:?}"));
    assert!(status.message().contains(&bad.field_violations[0].field), "message names the field: {status:?}");
    bad.field_violations[0].field.clone()
}

/// `h(−1)` per docs/protocol.md §4.
pub fn genesis(stream: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"battlelog/v1/stream");
    h.update([0u8]);
    h.update(stream.as_bytes());
    h.finalize().into()
}

/// Recomputes the chain of `events` (versions 0.. of `stream`) from their
/// record bytes, checking each stored hash and each decoded stream/version.
pub fn check_chain(stream: &str, events: &[pb::RecordedEvent]) {
    use prost::Message;
    let mut previous = genesis(stream);
    for (i, e) in events.iter().enumerate() {
        let decoded = pb::JournalRecord::decode(e.record.as_slice()).expect("record decodes");
        assert_eq!(decoded.stream_id, stream);
        assert_eq!(decoded.version, i as u64, "versions are consecutive from 0");
        assert_eq!(Some(&decoded), e.event.as_ref(), "decoded view matches the stored bytes");
        let mut h = Sha256::new();
        h.update(previous);
        h.update(&e.record);
        let hash: [u8; 32] = h.finalize().into();
        assert_eq!(hash.as_slice(), e.hash.as_slice(), "{stream}@{i}: hash chains");
        previous = hash;
    }
}

/// `clients.len()` writers racing on `stream` (an open battle), each
/// appending `per_writer` rolls, every append guarded by the version its
/// writer last saw (and rolling the nonce that version implies: version 0
/// is the opening, so version v carries nonce v - 1). A success must land
/// right after the expected version; a conflict must name a newer version,
/// which the writer takes and goes on from. Returns every acknowledged
/// version with the payload appended there (no version acknowledged twice)
/// and how many conflicts the writers met.
pub async fn race_guarded_writers(
    clients: Vec<Client>,
    stream: &str,
    per_writer: usize,
) -> (std::collections::BTreeMap<u64, Vec<u8>>, usize) {
    let mut tasks = Vec::new();
    for (w, mut c) in clients.into_iter().enumerate() {
        let stream = stream.to_owned();
        tasks.push(tokio::spawn(async move {
            let (mut mine, mut conflicts) = (Vec::new(), 0);
            let mut seen = head(&mut c, &stream).await;
            while mine.len() < per_writer {
                let nonce = seen.expect("the battle is open");
                let roll = rolled(nonce, &format!("w{w}-{}", mine.len()), "");
                let payload = roll.payload.clone();
                match append(&mut c, &stream, exact(seen), vec![roll]).await {
                    Ok(reply) => {
                        let version = reply.events[0].version;
                        assert_eq!(
                            Some(version),
                            seen.map(|v| v + 1),
                            "an append lands right after the expected version"
                        );
                        mine.push((version, payload));
                        seen = Some(version);
                    }
                    Err(status) => {
                        let actual = conflict_actual_version(&status);
                        assert!(actual > seen, "a conflict names a newer version than the stale one");
                        conflicts += 1;
                        seen = actual;
                    }
                }
            }
            (mine, conflicts)
        }));
    }
    let (mut acked, mut conflicts) = (std::collections::BTreeMap::new(), 0);
    for task in tasks {
        let (mine, met) = task.await.expect("writer");
        conflicts += met;
        for (version, payload) in mine {
            assert!(acked.insert(version, payload).is_none(), "version {version} acknowledged twice");
        }
    }
    (acked, conflicts)
}
