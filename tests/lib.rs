//! Helpers shared by the system tests: gRPC calls against a running journal
//! and an independent re-implementation of the chain check (docs/protocol.md §4)
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
    battlelog_test_support::poll_until(&what, std::time::Duration::from_secs(10), || async {
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
pub async fn client(process: &battlelog_test_support::ServiceProcess) -> Client {
    let token = battlelog_test_support::TestAuth::shared().service_token();
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

/// A running `battlelog watch`, its stdout and stderr line by line; killed
/// when dropped. Every wait is bounded by [`WATCH_WAIT`].
#[derive(Debug)]
pub struct WatchProcess {
    child: tokio::process::Child,
    stdout: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    // Kept open even when unread: a watch writing to a closed stderr dies of it.
    stderr: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStderr>>,
}

/// How long a watch may take to say something or show an event.
pub const WATCH_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

impl WatchProcess {
    /// Starts `battlelog watch <args>`.
    pub fn spawn(args: &[&str]) -> Self {
        use tokio::io::AsyncBufReadExt;
        let mut child = tokio::process::Command::new(battlelog_test_support::cli_binary())
            .arg("watch")
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("battlelog watch starts");
        let stdout = tokio::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
        let stderr = tokio::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
        Self { child, stdout, stderr }
    }

    /// Starts it and waits for its first line on stderr, which says what it
    /// watches (the subscription is then in place); returns that line too.
    pub async fn start(args: &[&str]) -> (Self, String) {
        let mut watch = Self::spawn(args);
        let line = watch.next_stderr().await;
        (watch, line)
    }

    /// The next line on stderr; panics when it ended or took too long.
    pub async fn next_stderr(&mut self) -> String {
        let line =
            tokio::time::timeout(WATCH_WAIT, self.stderr.next_line()).await.expect("watch says something in time");
        line.expect("stderr").expect("watch is still running")
    }

    /// The next line on stdout: `Err` after [`WATCH_WAIT`] without one,
    /// `Ok(None)` when the watch ended.
    pub async fn stdout_line(&mut self) -> Result<Option<String>, tokio::time::error::Elapsed> {
        tokio::time::timeout(WATCH_WAIT, self.stdout.next_line()).await.map(|line| line.expect("stdout"))
    }

    /// The next line on stdout; panics when it ended or took too long.
    pub async fn next_stdout(&mut self) -> String {
        self.stdout_line().await.expect("an event in time").expect("watch is still running")
    }

    /// Waits (bounded) for it to exit.
    pub async fn wait(&mut self) -> std::process::ExitStatus {
        tokio::time::timeout(WATCH_WAIT, self.child.wait()).await.expect("watch exits in time").expect("status")
    }
}

/// A nats-server with the shipped `deploy/nats/nats.conf` (its users and
/// permissions), every password it reads set: `journal` `jp`, `resolver`
/// `rp`, `webhooks` `wp`, `forum-a` `ap`, `forum-b` `bp`.
pub fn shipped_nats() -> battlelog_test_support::NatsServer {
    let config = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/nats/nats.conf");
    let passwords = [
        ("JOURNAL_NATS_PASSWORD", "jp"),
        ("RESOLVER_NATS_PASSWORD", "rp"),
        ("WEBHOOKS_NATS_PASSWORD", "wp"),
        ("FORUM_A_NATS_PASSWORD", "ap"),
        ("FORUM_B_NATS_PASSWORD", "bp"),
    ];
    battlelog_test_support::NatsServer::start_with_config(&config, &passwords)
}
