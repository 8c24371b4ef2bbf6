//! The whole chain as separate real processes — `battlelog-journal`,
//! `battlelog-roller`, `battlelog-resolver` (and optionally a real
//! `nats-server -js`) — plus what the battle system tests check with.
//!
//! The roller's master key is fixed here, so a test derives every server
//! seed, commitment and die itself with the `dice` crate (docs/protocol.md §1–3)
//! instead of believing what the services say.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::{NatsServer, ServiceProcess, StartOptions, TestAuth, poll_until, temp_dir};
use battlelog_auth::AuthChannel;
use battlelog_proto::battle::{self, json_to_struct};
use battlelog_proto::v1 as pb;
use battlelog_proto::v1::battle_event::Event;
use battlelog_proto::v1::resolver_client::ResolverClient;
use battlelog_proto::v1::roller_client::RollerClient;
use serde_json::Value;
use tempfile::TempDir;
use tonic::Status;

pub const WAIT: Duration = Duration::from_secs(30);

/// The roller's master key in these tests (`BATTLELOG_ROLLER_MASTER_KEY`).
pub const MASTER_KEY_HEX: &str = "5b1e6c0d9a8f7e6d5c4b3a29181706f5e4d3c2b1a09f8e7d6c5b4a3928170605";

/// The roller key of MASTER_KEY_HEX, computed from
/// docs/PROTOCOL-signatures.md §1 by an independent implementation (Python
/// `hmac` and `cryptography`'s Ed25519), not by battlelog's code.
pub const ROLLER_KEY_HEX: &str = "d4274985d1199f4902a113b7f4a757f2d4346bf7c848b2d941656b54340c3024";

pub fn roller_key() -> dice::RollerKey {
    dice::RollerKey::from_hex(ROLLER_KEY_HEX).expect("a roller key")
}

pub fn master_key() -> Vec<u8> {
    hex::decode(MASTER_KEY_HEX).expect("hex master key")
}

/// docs/protocol.md §1's recommended seed derivation, computed by the test.
pub fn server_seed(battle_id: &str, epoch: u32) -> dice::ServerSeed {
    dice::ServerSeed::derive(&master_key(), battle_id, epoch)
}

/// The resolver's config for share links: its `web_url`, and a share
/// secret made (or read) in `secret_file`: (the secret, the options).
pub fn share_link_options(secret_file: &Path, web_url: &str) -> (battlelog_auth::ShareSecret, StartOptions) {
    let secret = battlelog_auth::ShareSecret::read_or_create(secret_file).expect("a share secret");
    let options = StartOptions {
        envs: vec![
            ("BATTLELOG_RESOLVER_WEB_URL".to_owned(), web_url.to_owned()),
            ("BATTLELOG_RESOLVER_SHARE_SECRET_FILE".to_owned(), secret_file.display().to_string()),
        ],
        ..StartOptions::default()
    };
    (secret, options)
}

/// The first client seed `"{prefix}{i}"` (`i` from 0) under which the
/// epoch-0 d6 of `battle_id` at each nonce (`d6(nonce)`) satisfies
/// `planned`: a test steers its dice into the branches it means to take,
/// and still works out what it expects from whatever dice come.
pub fn client_seed_where(battle_id: &str, prefix: &str, planned: impl Fn(&dyn Fn(u64) -> i64) -> bool) -> String {
    let seed = server_seed(battle_id, 0);
    (0..10_000)
        .map(|i| format!("{prefix}{i}"))
        .find(|client_seed| planned(&|nonce| dice::roll("1d6", &seed, client_seed, nonce).expect("1d6").1.total))
        .expect("a client seed with the planned dice")
}

/// journal + roller + resolver, each its own process, on loopback port 0.
#[derive(Debug)]
pub struct Stack {
    pub dir: TempDir,
    pub nats: Option<NatsServer>,
    pub journal: ServiceProcess,
    pub roller: ServiceProcess,
    pub resolver: ServiceProcess,
    extra: usize,
}

impl Stack {
    pub async fn start(label: &str, with_nats: bool) -> Stack {
        Self::start_with(label, with_nats, &StartOptions::default()).await
    }

    /// [`Self::start`] with `options` (a log level, config in the
    /// environment) for all three; a fixed `listen` would clash.
    pub async fn start_with(label: &str, with_nats: bool, options: &StartOptions) -> Stack {
        let dir = temp_dir(label);
        let nats = with_nats.then(NatsServer::start);
        let nats_url = nats.as_ref().map(NatsServer::url);
        let journal = crate::journal_with(&dir.path().join("journal"), nats_url.as_deref(), options).await;
        let roller =
            crate::roller_with(&dir.path().join("roller"), &journal.url(), Some(MASTER_KEY_HEX), options).await;
        let resolver = crate::resolver_with(
            &dir.path().join("resolver.log"),
            &journal.url(),
            &roller.url(),
            nats_url.as_deref(),
            options,
        )
        .await;
        Stack { dir, nats, journal, roller, resolver, extra: 0 }
    }

    /// Kills the journal (SIGKILL, if it still runs) and starts it again on
    /// the same data dir and port, with `envs` as config: the roller and the
    /// resolver find it where they left it.
    pub async fn restart_journal(&mut self, envs: &[(&str, &str)]) {
        self.journal.kill_9_in_place();
        let options = StartOptions {
            listen: Some(self.journal.addr()),
            envs: envs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
            ..StartOptions::default()
        };
        let data = self.dir.path().join("journal");
        self.journal = crate::journal_with(&data, self.nats_url().as_deref(), &options).await;
    }

    /// Kills the resolver (SIGKILL) and starts it again on the same port
    /// with the same `options`: its clients find it where they left it.
    pub async fn restart_resolver_in_place(&mut self, options: &StartOptions) {
        self.resolver.kill_9_in_place();
        self.extra += 1;
        let log = self.dir.path().join(format!("resolver-{}.log", self.extra));
        let options = StartOptions { listen: Some(self.resolver.addr()), ..options.clone() };
        self.resolver =
            crate::resolver_with(&log, &self.journal.url(), &self.roller.url(), self.nats_url().as_deref(), &options)
                .await;
    }

    /// Kills the roller (SIGKILL) and starts it again on the same port and
    /// data dir: the resolver finds it where it left it.
    pub async fn restart_roller_in_place(&mut self) {
        self.roller.kill_9_in_place();
        let options = StartOptions { listen: Some(self.roller.addr()), ..StartOptions::default() };
        let data = self.dir.path().join("roller");
        self.roller = crate::roller_with(&data, &self.journal.url(), Some(MASTER_KEY_HEX), &options).await;
    }

    pub fn nats_url(&self) -> Option<String> {
        self.nats.as_ref().map(NatsServer::url)
    }

    /// Another resolver process against `roller` (a replica, or the
    /// restarted one after a kill).
    pub async fn start_resolver(&mut self, roller_url: &str) -> ServiceProcess {
        self.extra += 1;
        let log = self.dir.path().join(format!("resolver-{}.log", self.extra));
        crate::resolver(&log, &self.journal.url(), roller_url, self.nats_url().as_deref()).await
    }

    /// Another roller process (a replica with the same master key).
    pub async fn start_roller(&mut self) -> ServiceProcess {
        self.extra += 1;
        let data = self.dir.path().join(format!("roller-{}", self.extra));
        crate::roller(&data, &self.journal.url(), Some(MASTER_KEY_HEX)).await
    }

    pub async fn journal_client(&self) -> crate::journal_client::Client {
        crate::journal_client::client(&self.journal).await
    }

    pub async fn roller_client(&self) -> RollerClient<AuthChannel> {
        RollerClient::new(self.roller.authed(&TestAuth::shared().service_token()).await)
    }
}

/// The resolver as a forum of the test tenant.
pub async fn resolver_client(process: &ServiceProcess) -> ResolverClient<AuthChannel> {
    resolver_as(process, &TestAuth::shared().forum()).await
}

/// The resolver as a judge of the test tenant.
pub async fn judge_client(process: &ServiceProcess) -> ResolverClient<AuthChannel> {
    resolver_as(process, &TestAuth::shared().judge()).await
}

/// The resolver called with `token`.
pub async fn resolver_as(process: &ServiceProcess, token: &str) -> ResolverClient<AuthChannel> {
    ResolverClient::new(process.authed(token).await)
}

/// A JSON object as a protobuf Struct.
pub fn obj(value: Value) -> prost_types::Struct {
    json_to_struct(value.as_object().expect("a JSON object"))
}

pub fn struct_json(fields: Option<&prost_types::Struct>) -> Value {
    Value::Object(battle::struct_to_json(fields.expect("a Struct")))
}

pub async fn open(
    resolver: &mut ResolverClient<AuthChannel>,
    battle_id: &str,
    ruleset: &str,
    participants: Value,
    client_seed: &str,
) -> pb::OpenBattleResponse {
    let participants = participants.as_array().expect("participants").iter().cloned().map(obj).collect();
    let request = pb::OpenBattleRequest {
        ruleset: ruleset.into(),
        title: format!("system test {battle_id}"),
        forum_ref: format!("forum:tests/thread/{battle_id}"),
        participants,
        client_seed: client_seed.into(),
        request_id: format!("open-{battle_id}"),
        battle_id: battle_id.into(),
        ..Default::default()
    };
    let opened = resolver.open_battle(request).await.unwrap_or_else(|s| panic!("open {battle_id}: {s:?}")).into_inner();
    assert_eq!(opened.battle_id, battle_id);
    let event = opened.opened.as_ref().expect("BattleOpened");
    assert_eq!(
        event.commitment,
        server_seed(battle_id, 0).commitment().to_string(),
        "the epoch-0 commitment is SHA-256 of the seed derived from the master key"
    );
    assert_eq!(event.roller_key, roller_key().to_bytes(), "the roller key derived from the master key");
    assert_eq!(
        roller_key().verify(battle_id, 0, &event.commitment, &event.commitment_signature),
        Ok(()),
        "the roller signed the epoch-0 commitment"
    );
    opened
}

pub async fn act(
    resolver: &mut ResolverClient<AuthChannel>,
    battle_id: &str,
    action: &Value,
    request_id: &str,
) -> Result<pb::ActResponse, Status> {
    let request = pb::ActRequest {
        battle_id: battle_id.into(),
        action: Some(obj(action.clone())),
        request_id: request_id.into(),
        ..Default::default()
    };
    resolver.act(request).await.map(tonic::Response::into_inner)
}

pub async fn close(resolver: &mut ResolverClient<AuthChannel>, battle_id: &str) -> pb::EventResponse {
    let request = pb::CloseRequest {
        battle_id: battle_id.into(),
        by: "judge".into(),
        reason: "the test is over".into(),
        request_id: format!("close-{battle_id}"),
        ..Default::default()
    };
    resolver.close(request).await.unwrap_or_else(|s| panic!("close {battle_id}: {s:?}")).into_inner()
}

/// One journaled event of a battle, decoded.
#[derive(Debug, Clone)]
pub struct Journaled {
    pub recorded: pb::RecordedEvent,
    pub record: pb::JournalRecord,
    pub event: Event,
}

impl Journaled {
    pub fn version(&self) -> u64 {
        self.record.version
    }
    pub fn key(&self) -> &str {
        &self.record.idempotency_key
    }
}

/// Every event of the battle's journal stream, decoded, with the chain
/// recomputed from the record bytes by the test's own code.
pub async fn journaled(stack: &Stack, battle_id: &str) -> Vec<Journaled> {
    let mut journal = stack.journal_client().await;
    let events = crate::journal_client::read_stream(&mut journal, battle_id).await;
    crate::journal_client::check_chain(battle_id, &events);
    events
        .into_iter()
        .map(|recorded| {
            let record = recorded.event.clone().expect("record");
            let event = battle::decode(&record).unwrap_or_else(|e| panic!("{battle_id}: {e}"));
            Journaled { recorded, record, event }
        })
        .collect()
}

pub fn rolls_of(events: &[Journaled]) -> Vec<(u64, pb::DiceRolled)> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::DiceRolled(roll) => Some((e.version(), roll.clone())),
            _ => None,
        })
        .collect()
}

pub fn resolutions_of(events: &[Journaled]) -> Vec<(u64, String, pb::ActionResolved)> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::ActionResolved(resolved) => Some((e.version(), e.key().to_owned(), resolved.clone())),
            _ => None,
        })
        .collect()
}

/// Invariant 3: the DiceRolled nonces are 0, 1, 2 … in journal order.
pub fn assert_nonces_consecutive(battle_id: &str, events: &[Journaled]) {
    let nonces: Vec<u64> = rolls_of(events).iter().map(|(_, r)| r.nonce).collect();
    assert_eq!(nonces, (0..nonces.len() as u64).collect::<Vec<_>>(), "{battle_id}: nonces 0, 1, 2 … in journal order");
}

/// Re-derives `roll` from the seed the test derives itself and the client
/// seed (docs/protocol.md §2–3): every die and the total must match.
pub fn assert_rederives(battle_id: &str, client_seed: &str, roll: &pb::DiceRolled) {
    let seed = server_seed(battle_id, roll.epoch);
    let (_, derived) = dice::roll(&roll.expression, &seed, client_seed, roll.nonce)
        .unwrap_or_else(|e| panic!("{battle_id} nonce {}: {e}", roll.nonce));
    let recorded: Vec<dice::Die> = roll
        .dice
        .iter()
        .map(|d| dice::Die { sides: d.sides, value: d.value, kept: d.kept, rerolled: d.rerolled, exploded: d.exploded })
        .collect();
    assert_eq!(recorded, derived.dice, "{battle_id} nonce {} ({}): dice re-derive", roll.nonce, roll.expression);
    assert_eq!(roll.total, derived.total, "{battle_id} nonce {}: total re-derives", roll.nonce);
}

/// Invariant 1 for one reply: each roll it returned is the DiceRolled the
/// journal holds at that version.
pub fn assert_reply_rolls_journaled(battle_id: &str, reply: &pb::ActResponse, events: &[Journaled]) {
    for recorded in &reply.rolls {
        let journaled = events
            .get(recorded.version as usize)
            .unwrap_or_else(|| panic!("{battle_id}: a reply's roll at version {} is not journaled", recorded.version));
        assert_eq!(
            Some(&journaled.event),
            recorded.roll.clone().map(Event::DiceRolled).as_ref(),
            "{battle_id}@{}: the roll a reply returned is the journaled one",
            recorded.version
        );
    }
    let at = &events[reply.version as usize].event;
    assert_eq!(Some(at), reply.resolved.clone().map(Event::ActionResolved).as_ref(), "the resolution is journaled");
    let nonces: Vec<u64> = reply.rolls.iter().map(|r| r.roll.as_ref().expect("roll").nonce).collect();
    assert_eq!(nonces, reply.resolved.as_ref().expect("resolved").rolls, "the reply's rolls are the ones it used");
}

/// The raw faces of a reply's rolls, in draw order.
pub fn faces(reply: &pb::ActResponse) -> Vec<i64> {
    reply.rolls.iter().flat_map(|r| r.roll.as_ref().expect("roll").dice.iter().map(|d| d.value)).collect()
}

pub fn outcome(reply: &pb::ActResponse) -> Value {
    struct_json(reply.resolved.as_ref().expect("resolved").outcome.as_ref())
}

/// Runs the `battlelog` binary; returns (exit code, stdout, stderr).
pub fn cli(args: &[&str]) -> (Option<i32>, String, String) {
    let output = Command::new(crate::cli_binary()).args(args).output().expect("run battlelog");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `battlelog ARGS --resolver <the stack's> --token <a judge's>`: (exit
/// code, stdout, stderr).
pub fn cli_as_judge(stack: &Stack, args: &[&str]) -> (Option<i32>, String, String) {
    let (url, token) = (stack.resolver.url(), TestAuth::shared().judge());
    let mut args = args.to_vec();
    args.extend(["--resolver", &url, "--token", &token]);
    cli(&args)
}

/// An Act reply without its checkpoint: that is the journal's newest when
/// the reply was made (docs/protocol.md §5), and a retry answered later may carry
/// a newer one; everything else a retry answers is the recorded result, the
/// same to the byte.
pub fn act_result(reply: &pb::ActResponse) -> pb::ActResponse {
    pb::ActResponse { checkpoint: None, ..reply.clone() }
}

/// [`act_result`] for a Dispute, Rule or Close reply.
pub fn event_result(reply: &pb::EventResponse) -> pb::EventResponse {
    pb::EventResponse { checkpoint: None, ..reply.clone() }
}

/// `battlelog export BATTLE --resolver URL --token <a reader's>` into `path`
/// (whole, its trailer line last: what the audits read); returns the event
/// lines, the trailer left off (docs/protocol.md §5: the one line without
/// `version`), for the tests that read every line as an event.
pub fn export_to(resolver_url: &str, battle_id: &str, path: &Path) -> String {
    let (events, trailer) = split_trailer(&export_full_to(resolver_url, battle_id, path));
    assert!(trailer.is_some(), "battlelog export ends with its trailer");
    events
}

/// [`export_to`], returning the whole export, trailer included.
pub fn export_full_to(resolver_url: &str, battle_id: &str, path: &Path) -> String {
    let token = TestAuth::shared().reader();
    let (code, stdout, stderr) = cli(&["export", battle_id, "--resolver", resolver_url, "--token", &token]);
    assert_eq!(code, Some(0), "export {battle_id}: {stderr}");
    std::fs::write(path, &stdout).expect("write the export");
    stdout
}

/// An export's event lines (with their newlines) and its trailer line, if
/// its last line has no `version`.
pub fn split_trailer(export: &str) -> (String, Option<String>) {
    let trimmed = export.trim_end();
    let (events, last) = trimmed.rsplit_once('\n').unwrap_or(("", trimmed));
    let is_trailer = serde_json::from_str::<Value>(last).is_ok_and(|v| v.is_object() && v.get("version").is_none());
    if is_trailer { (format!("{events}\n"), Some(last.to_owned())) } else { (export.to_owned(), None) }
}

/// `battlelog audit --file PATH --roller-key <the test stacks' roller key>`:
/// (exit code, stdout + stderr). The key pinned, as a judge runs it.
pub fn audit_file(path: &Path) -> (Option<i32>, String) {
    audit_file_with_key(path, ROLLER_KEY_HEX)
}

/// `battlelog audit --file PATH` with no roller key: exit 3 at best (the
/// key is not pinned).
pub fn audit_file_unpinned(path: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let path = path.display().to_string();
    let mut args = vec!["audit", "--file", path.as_str()];
    args.extend(extra);
    let (code, stdout, stderr) = cli(&args);
    (code, format!("{stdout}{stderr}"))
}

/// `battlelog audit --file PATH --roller-key KEY`: (exit code, stdout + stderr).
pub fn audit_file_with_key(path: &Path, roller_key: &str) -> (Option<i32>, String) {
    let (code, stdout, stderr) = cli(&["audit", "--file", &path.display().to_string(), "--roller-key", roller_key]);
    (code, format!("{stdout}{stderr}"))
}

/// The roller key of the development master key in a `battlelog up` data
/// dir, as `battlelog roller-key` prints it: what its operator publishes.
pub fn up_roller_key(data_dir: &Path) -> String {
    let master_key = data_dir.join("roller").join("master.key").display().to_string();
    let (code, stdout, stderr) = cli(&["roller-key", "--master-key-file", &master_key]);
    assert_eq!(code, Some(0), "roller-key: {stderr}");
    stdout.trim().to_owned()
}

/// `audit --file --roller-key ROLLER_KEY` verifies (e.g. a `battlelog up`'s
/// battle against [`up_roller_key`]). Returns the report.
pub fn assert_audit_file_clean(path: &Path, battle_id: &str, roller_key: &str) -> String {
    let (code, output) = audit_file_with_key(path, roller_key);
    assert_eq!(code, Some(0), "audit --file of {battle_id} --roller-key {roller_key} exits 0:\n{output}");
    assert!(output.contains(&format!("battle {battle_id} verifies")), "{output}");
    assert!(!output.contains("DOES NOT VERIFY"), "{output}");
    assert!(output.contains(&format!("roller key {roller_key} signed the commitments: pinned")), "{output}");
    // An export with its trailer (docs/protocol.md §5) has it checked too.
    let text = std::fs::read_to_string(path).expect("the export");
    if split_trailer(&text).1.is_some() {
        assert!(output.contains("trailer: head version"), "the trailer checks:\n{output}");
    } else {
        assert!(output.contains("no trailer: verified only as far as §4"), "{output}");
    }
    output
}

/// `audit --file` verifies against the roller key of [`MASTER_KEY_HEX`];
/// without a key it says the key is not pinned (exit 3).
pub fn assert_audit_file_verifies(path: &Path, battle_id: &str) {
    assert_audit_file_clean(path, battle_id, ROLLER_KEY_HEX);
    let (code, output) = audit_file_unpinned(path, &[]);
    assert_eq!(code, Some(3), "audit --file of {battle_id} without a roller key exits 3:\n{output}");
    assert!(output.contains("NOT PINNED"), "{output}");
}

/// The resolver's Audit RPC finds nothing.
pub async fn assert_audit_rpc_ok(resolver: &mut ResolverClient<AuthChannel>, battle_id: &str, events: usize) {
    let report = resolver
        .audit(pb::AuditRequest { battle_id: battle_id.into() })
        .await
        .unwrap_or_else(|s| panic!("audit {battle_id}: {s:?}"))
        .into_inner();
    assert!(report.ok && report.findings.is_empty(), "{battle_id}: the audit verifies: {report:?}");
    assert_eq!(report.events_checked, events as u64, "{battle_id}: every event audited");
    assert_eq!(report.roller_key, ROLLER_KEY_HEX, "{battle_id}: signed by the roller's key");
}

/// Every message in the JetStream stream `BATTLELOG_EVENTS`, once it holds
/// `total`: (subject, Nats-Msg-Id, payload) in stream order. Credentials in
/// `nats_url` log in (async-nats itself ignores a URL's userinfo).
pub async fn jetstream_messages(nats_url: &str, total: u64) -> Vec<(String, String, Vec<u8>)> {
    let url = battlelog_runtime::nats_url::NatsUrl::new(nats_url);
    let client = url.connect_options().connect(url.address()).await.expect("connect to nats");
    let js = async_nats::jetstream::new(client);
    let count = |js: async_nats::jetstream::Context| async move {
        let mut stream = js.get_stream("BATTLELOG_EVENTS").await.ok()?;
        Some(stream.info().await.ok()?.state.messages)
    };
    let arrived = poll_until("every event in JetStream", WAIT, || {
        let js = js.clone();
        async move { count(js).await.filter(|&n| n >= total) }
    })
    .await;
    assert_eq!(arrived, total, "each committed event reaches JetStream exactly once");
    let stream = js.get_stream("BATTLELOG_EVENTS").await.expect("stream");
    let mut messages = Vec::new();
    for seq in 1..=total {
        let message = stream.get_raw_message(seq).await.expect("message");
        let id = message.headers.get("Nats-Msg-Id").expect("Nats-Msg-Id").as_str().to_owned();
        messages.push((message.subject.to_string(), id, message.payload.to_vec()));
    }
    messages
}

/// Each battle's events reached `battlelog.events.<tenant>.<battle>` in
/// version order, as the exact record bytes, with Nats-Msg-Id = event id.
/// The tenant is the opening forum's: the tests' forum token is of
/// `TEST_TENANT`.
pub async fn assert_jetstream_has(nats_url: &str, battles: &HashMap<String, Vec<Journaled>>) {
    let total: usize = battles.values().map(Vec::len).sum();
    let messages = jetstream_messages(nats_url, total as u64).await;
    for (battle_id, events) in battles {
        let subject = format!("battlelog.events.{}.{battle_id}", crate::auth::TEST_TENANT);
        let received: Vec<_> = messages.iter().filter(|(s, _, _)| *s == subject).collect();
        assert_eq!(received.len(), events.len(), "{battle_id}: every event on {subject}");
        for (event, (_, id, payload)) in events.iter().zip(received) {
            assert_eq!(payload, &event.recorded.record, "{battle_id}@{}: in order, the stored bytes", event.version());
            assert_eq!(id, &event.record.event_id, "{battle_id}@{}: Nats-Msg-Id is the event id", event.version());
        }
    }
}

/// A running `battlelog up`: the banner it printed up to the "Try it"
/// line, and what it prints after that, line by line. Stopped when dropped:
/// SIGTERM first, so that it stops the nats-server it started (a SIGKILL
/// would leave that child running after the test), SIGKILL if it has not
/// exited within a deadline. A test that means a crash kills `child` itself.
#[derive(Debug)]
pub struct Up {
    pub child: std::process::Child,
    pub banner: Vec<String>,
    /// The resolver's endpoint from the banner.
    pub resolver: String,
    pub rest: std::sync::mpsc::Receiver<String>,
}

impl Drop for Up {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            while matches!(self.child.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Up {
    /// The banner's endpoint of `name` (`resolver`, `roller`, `journal`): a
    /// loopback URL on the port the OS gave, never `:0`.
    pub fn endpoint(&self, name: &str) -> String {
        self.banner
            .iter()
            .find_map(|l| l.strip_prefix(&format!("  {name}")).map(str::trim))
            .filter(|url| {
                (url.starts_with("http://127.0.0.1:") || url.starts_with("https://127.0.0.1:")) && !url.ends_with(":0")
            })
            .unwrap_or_else(|| panic!("no {name} endpoint in {:?}", self.banner))
            .to_owned()
    }
}

/// Runs `battlelog up` with every port 0, its data under `data_dir` (and
/// its working directory there, so nothing lands elsewhere) and `extra`
/// flags, and reads its banner up to the "Try it" line.
pub fn up(data_dir: &Path, extra: &[&str]) -> Up {
    use std::io::BufRead;
    let data = data_dir.display().to_string();
    let listen = [
        "--resolver-listen",
        "127.0.0.1:0",
        "--roller-listen",
        "127.0.0.1:0",
        "--journal-listen",
        "127.0.0.1:0",
        "--web-listen",
        "127.0.0.1:0",
    ];
    let mut child = Command::new(crate::cli_binary())
        .args(["up", "--data-dir", &data])
        .args(listen)
        .args(extra)
        .current_dir(data_dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(data_dir.join("up.stderr")).expect("create up.stderr"))
        .spawn()
        .expect("start battlelog up");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut banner = Vec::new();
    loop {
        match rx.recv_timeout(crate::STARTUP_DEADLINE) {
            Ok(line) => {
                let done = line.starts_with("Try it");
                banner.push(line);
                if done {
                    break;
                }
            }
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                let stderr = std::fs::read_to_string(data_dir.join("up.stderr")).unwrap_or_default();
                panic!("battlelog up {extra:?} printed no full banner ({e}): {banner:?}\nstderr: {stderr}");
            }
        }
    }
    let mut up = Up { child, banner, resolver: String::new(), rest: rx };
    up.resolver = up.endpoint("resolver");
    up.endpoint("journal");
    up.endpoint("roller");
    up
}

/// The password of `user` in a NATS config that `battlelog up` wrote
/// (`user: "journal", password: "…"`).
pub fn nats_password<'a>(config: &'a str, user: &str) -> &'a str {
    config
        .lines()
        .find(|l| l.contains(&format!(r#"user: "{user}""#)))
        .and_then(|l| l.split(r#"password: ""#).nth(1))
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no password of {user} in the NATS config"))
}

/// docs/rules.md §1.3: (reduction %, counted) for an effective dodge value,
/// written from the rules text (not from `crates/rules`).
pub fn pokemon_dodge(e: i64) -> (u64, bool) {
    match e {
        1 => (0, true),
        2 => (5, true),
        3 => (50, true),
        4 => (60, true),
        5 => (100, true),
        6 => (100, false),
        _ => panic!("a d6 showed {e}"),
    }
}
