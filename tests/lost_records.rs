//! A journal never starts on a store behind what it signed (issue 37: a sled
//! journal cut short restarted with half its records, said nothing, took new
//! appends and later signed a second root for a size it had signed before).
//!
//! Through the real binaries (`battlelog-journal` on sled on disk, the
//! roller, the resolver, the `battlelog` command line): the journal's data
//! is restored from a backup taken before its last checkpoint — the lost
//! tail of the finding, made deterministic — while the checkpoint it kept
//! stays in place. It then starts, says once which records are missing,
//! refuses every append with `STORE_BEHIND_CHECKPOINT`, shows it in
//! `/metrics` and health, serves reads and exports (without a trailer),
//! never signs a root other than the kept one, and a judge's `audit
//! --checkpoint` and `checkpoint verify` find it (exit 1). The operator's
//! `battlelog journal accept-loss` is refused while the journal runs or
//! when it names another checkpoint, records the fork, and the journal then
//! signs anew over what its store holds, saying so at every start. A normal
//! restart and a crash do not trip it.

use std::path::{Path, PathBuf};

use battlelog_proto::error::Error;
use battlelog_proto::v1 as pb;
use battlelog_test_support::journal_client;
use battlelog_test_support::journal_client::{any, append, error_reason, global_head, open_and_resolve, resolved};
use battlelog_test_support::stack::*;
use battlelog_test_support::{ServiceProcess, StartOptions, http_get, journal_with, poll_until, temp_dir};
use battlelog_tlog::{Checkpoint, LogKey};
use serde_json::{Value, json};
use tonic::Code;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

const ORIGIN: &str = "lost-records.test/journal";

/// The checkpoint a journal keeps in its data dir (docs/operating.md).
const KEPT_FILE: &str = "signed-checkpoint";
/// Where `accept-loss` records the forks (docs/operating.md).
const FORKS_FILE: &str = "checkpoint-forks.jsonl";
const REASON: &str = "STORE_BEHIND_CHECKPOINT";

fn log_key() -> LogKey {
    LogKey::from_seed(ORIGIN, [37; 32]).expect("a log key")
}

/// The journal's key, checkpoints every 50 ms, and its `/metrics`.
fn journal_envs() -> Vec<(String, String)> {
    vec![
        ("BATTLELOG_JOURNAL_LOG_KEY".into(), log_key().to_text()),
        ("BATTLELOG_JOURNAL_CHECKPOINT_INTERVAL_MS".into(), "50".into()),
        ("BATTLELOG_JOURNAL_METRICS_LISTEN".into(), "127.0.0.1:0".into()),
    ]
}

fn envs() -> Vec<(String, String)> {
    journal_envs()
}

fn env_refs(envs: &[(String, String)]) -> Vec<(&str, &str)> {
    envs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

/// `battlelog ARGS` against the stack's resolver as a judge: status, stdout, stderr.
fn battlelog(stack: &Stack, args: &[&str]) -> (i32, String, String) {
    let (code, stdout, stderr) = cli_as_judge(stack, args);
    (code.unwrap_or(-1), stdout, stderr)
}

/// `battlelog ARGS` with no server.
fn offline(args: &[&str]) -> (i32, String, String) {
    let (code, stdout, stderr) = cli(args);
    (code.unwrap_or(-1), stdout, stderr)
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("written");
    path
}

fn attack() -> Value {
    json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Tackle", "power": 40})
}

/// Opens `battle_id` and attacks `attacks` times in it.
async fn play(stack: &Stack, battle_id: &str, attacks: usize) {
    let mut forum = resolver_client(&stack.resolver).await;
    open(&mut forum, battle_id, "pokemon-d6@1", json!([{"id": "pikachu"}, {"id": "meowth"}]), "seed").await;
    for i in 0..attacks {
        act(&mut forum, battle_id, &attack(), &format!("{battle_id}-{i}")).await.expect("an attack");
    }
}

/// The journal's newest checkpoint, asked of the journal itself.
async fn newest(journal: &ServiceProcess) -> Option<pb::Checkpoint> {
    let mut c = journal_client::client(journal).await;
    c.get_checkpoint(pb::GetCheckpointRequest {}).await.expect("GetCheckpoint").into_inner().checkpoint
}

/// Waits for a checkpoint of exactly the whole log, `size` records.
async fn checkpoint_of(journal: &ServiceProcess, size: u64) -> pb::Checkpoint {
    poll_until(&format!("a checkpoint of {size} records"), WAIT, || async move {
        newest(journal).await.filter(|c| c.tree_size == size)
    })
    .await
}

/// Copies a directory tree, leaving out the files named in `except`.
fn copy_dir(from: &Path, to: &Path, except: &[&str]) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let name = entry.file_name();
        if except.iter().any(|e| name == *e) {
            continue;
        }
        let target = to.join(&name);
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target, except);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// Empties a directory but for the files named in `keep`.
fn empty_dir(dir: &Path, keep: &[&str]) {
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let entry = entry.expect("entry");
        if keep.iter().any(|k| entry.file_name() == *k) {
            continue;
        }
        if entry.file_type().expect("type").is_dir() {
            std::fs::remove_dir_all(entry.path()).expect("rm -r");
        } else {
            std::fs::remove_file(entry.path()).expect("rm");
        }
    }
}

/// `service`'s health as the journal answers it.
async fn health(journal: &ServiceProcess, service: &str) -> i32 {
    let mut client = HealthClient::new(journal.channel().await);
    let request = HealthCheckRequest { service: service.into() };
    client.check(request).await.expect("health answers").into_inner().status
}

/// The value of a metric sample on the journal's `/metrics`.
async fn metric(journal: &ServiceProcess, name: &str) -> Option<f64> {
    let (status, text) = http_get(&journal.metrics_url().expect("a metrics port"), &[]).await;
    assert_eq!(status, 200, "{text}");
    text.lines().find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// What a journal restored from too old a backup leaves a judge with.
struct Behind {
    stack: Stack,
    /// Records the store still holds.
    held: u64,
    /// Records the last signed checkpoint covers.
    signed: u64,
    /// That checkpoint, as the judge kept it (the signed note).
    kept: PathBuf,
    /// The checkpoint of the `held` records, kept when the backup was taken.
    earlier: PathBuf,
    /// Where the journal's log was before the restart onto the old data.
    log_before: usize,
}

/// Plays a battle, backs the stopped journal's data up, plays another, and
/// restores the journal's store (not its kept checkpoint) from the backup:
/// the later battle's records are gone, as after the finding's cut file.
async fn behind(label: &str) -> Behind {
    let mut stack = Stack::start_with(label, false, &StartOptions { envs: envs(), ..StartOptions::default() }).await;
    let dir = stack.dir.path().to_owned();
    let data = dir.join("journal");
    play(&stack, "kept", 2).await;
    let mut c = stack.journal_client().await;
    let held = global_head(&mut c).await;
    let earlier = checkpoint_of(&stack.journal, held).await;
    let earlier = write(&dir, "earlier.note", &earlier.note);

    stack.journal.kill_9_in_place();
    copy_dir(&data, &dir.join("backup"), &[]);
    stack.restart_journal(&env_refs(&journal_envs())).await;
    play(&stack, "lost", 3).await;
    let mut c = stack.journal_client().await;
    let signed = global_head(&mut c).await;
    assert!(signed > held + 3, "the lost battle wrote records: {held} then {signed}");
    let kept = checkpoint_of(&stack.journal, signed).await;
    let kept = write(&dir, "kept.note", &kept.note);

    // The store from the backup; the kept checkpoint of the journal stays.
    stack.journal.kill_9_in_place();
    empty_dir(&data, &[KEPT_FILE]);
    copy_dir(&dir.join("backup"), &data, &[KEPT_FILE]);
    let log_before = stack.journal.log().len();
    stack.restart_journal(&env_refs(&journal_envs())).await;
    Behind { stack, held, signed, kept, earlier, log_before }
}

/// The status's battlelog error, which must be `STORE_BEHIND_CHECKPOINT`
/// naming both sizes.
fn assert_behind(status: &tonic::Status, held: u64, signed: u64, what: &str) {
    assert_eq!(status.code(), Code::FailedPrecondition, "{what}: {status:?}");
    assert_eq!(error_reason(status), REASON, "{what}: {status:?}");
    let error = Error::from_status(status).expect("a battlelog error");
    assert_eq!(error.metadata.get("store_size").map(String::as_str), Some(held.to_string().as_str()), "{what}");
    assert_eq!(error.metadata.get("checkpoint_size").map(String::as_str), Some(signed.to_string().as_str()), "{what}");
    assert!(
        status.message().contains(&format!("records {held}..{signed} are missing")),
        "{what}: {}",
        status.message()
    );
}

/// The journal starts on the older store, refuses appends with the reason,
/// logs one line naming the missing records, shows it in its metrics and
/// health, serves reads and exports (without a trailer), keeps serving the
/// checkpoint it signed and signs nothing else; the judge's commands exit 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_journal_whose_store_lost_records_refuses_appends_and_signs_nothing_new() {
    let Behind { stack, held, signed, kept, earlier, log_before } = behind("lost-records-behind").await;
    let kept_note = std::fs::read_to_string(&kept).unwrap();
    let mut c = stack.journal_client().await;
    assert_eq!(global_head(&mut c).await, held, "the store holds what the backup held");

    // One line in the log says which records are missing.
    let log = stack.journal.log()[log_before..].to_owned();
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("behind its last signed checkpoint")).collect();
    assert_eq!(lines.len(), 1, "{log}");
    let said = format!(
        "the store has {held} records, the last signed checkpoint covers {signed}: records {held}..{signed} are missing"
    );
    assert!(lines[0].contains(&said), "{}", lines[0]);

    // Appends are refused with the reason, directly and through the resolver.
    let refused = append(&mut c, "kept", any(), vec![resolved("after the loss", "")]).await.unwrap_err();
    assert_behind(&refused, held, signed, "Append");
    let batch = pb::AppendBatchRequest {
        appends: vec![pb::AppendRequest {
            stream_id: "kept".into(),
            expected_version: any(),
            events: vec![resolved("in a batch", "")],
        }],
    };
    let answered = c.append_batch(batch).await.expect("a batch is answered per append").into_inner();
    match &answered.results[0].result {
        Some(pb::append_result::Result::Error(e)) => {
            let status = battlelog_proto::error::status_from_parts(e.code, e.message.clone(), e.details.clone());
            assert_behind(&status, held, signed, "AppendBatch");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    let mut forum = resolver_client(&stack.resolver).await;
    let act_refused = act(&mut forum, "kept", &attack(), "kept-after").await.unwrap_err();
    assert_eq!(error_reason(&act_refused), REASON, "{act_refused:?}");
    assert_eq!(global_head(&mut c).await, held, "nothing was written");

    // Metrics and health show it; the server itself still answers.
    assert_eq!(metric(&stack.journal, "battlelog_journal_store_behind_checkpoint").await, Some(1.0));
    assert_eq!(health(&stack.journal, "battlelog.v1.Journal").await, ServingStatus::NotServing as i32);
    assert_eq!(health(&stack.journal, "").await, ServingStatus::Serving as i32);

    // Reads serve: the battle that survived, exported without a trailer.
    let (code, export, err) = battlelog(&stack, &["export", "kept"]);
    assert_eq!(code, 0, "{err}");
    let (events, trailer) = split_trailer(&export);
    assert_eq!(trailer, None, "nothing signs its head: {export}");
    let stored = journal_client::read_stream(&mut c, "kept").await;
    assert_eq!(events.lines().count(), stored.len(), "every record of the battle: {export}");

    // The checkpoint served is still the one signed before; no other root is
    // signed for any size (the export above asked for a signed head), and
    // the kept file is the same; proofs are refused with the reason.
    let served = newest(&stack.journal).await.expect("the kept checkpoint is served");
    assert_eq!(served.note, kept_note, "the checkpoint signed before, not a new one");
    let on_disk = std::fs::read_to_string(stack.dir.path().join("journal").join(KEPT_FILE)).unwrap();
    assert_eq!(on_disk, kept_note);
    let proof = c.get_consistency_proof(pb::ConsistencyProofRequest { old_size: 1, new_size: 0 }).await.unwrap_err();
    assert_behind(&proof, held, signed, "GetConsistencyProof");
    let head = c.get_signed_head(pb::SignedHeadRequest { stream_id: "kept".into() }).await.unwrap_err();
    assert_behind(&head, held, signed, "GetSignedHead");
    let key = log_key().verifier_key();
    assert_eq!(Checkpoint::open(&served.note, &key).expect("signed").size, signed);

    // The judge who kept the last checkpoint: the audit finds it (exit 1,
    // not 2), and so does checkpoint verify against the earlier one.
    let (code, out, err) =
        battlelog(&stack, &["audit", "kept", "--roller-key", ROLLER_KEY_HEX, "--checkpoint", kept.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}{err}");
    let findings: Vec<&str> = out.lines().filter(|l| l.starts_with("version ")).collect();
    assert_eq!(findings.len(), 1, "{out}");
    assert!(findings[0].contains("no longer holds the kept checkpoint"), "{out}");
    assert!(findings[0].contains(&format!("records {held}..{signed} are missing")), "{out}");
    let (code, out, err) = battlelog(
        &stack,
        &["checkpoint", "verify", "--old", kept.to_str().unwrap(), "--new", earlier.to_str().unwrap()],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(out.lines().count(), 1, "one line: {out}");
    assert!(
        out.starts_with(&format!("NOT CONSISTENT: the log does not reach the checkpoint of tree size {signed}")),
        "{out}"
    );
}

/// The operator's override: refused while the journal runs, for another
/// checkpoint than the kept one, without a reason; then it records the
/// fork, and the journal starts taking appends and signing anew, saying at
/// start that its log was forked. The judge's kept checkpoint no longer
/// verifies against the log (exit 1), the earlier one still does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accepting_the_loss_is_recorded_and_the_journal_signs_anew() {
    let Behind { mut stack, held, signed, kept, earlier, .. } = behind("lost-records-accept").await;
    let kept_note = std::fs::read_to_string(&kept).unwrap();
    let data = stack.dir.path().join("journal");
    let data_arg = data.to_str().unwrap().to_owned();
    let signed_arg = signed.to_string();
    let accept = |size: &str, reason: &str| {
        offline(&["journal", "accept-loss", "--data-dir", &data_arg, "--checkpoint-size", size, "--reason", reason])
    };

    let (code, _, err) = accept(&signed_arg, "the disk was cut");
    assert_eq!(code, 2, "refused while the journal holds its data: {err}");
    assert!(err.contains("in use"), "{err}");
    stack.journal.kill_9_in_place();
    let (code, _, err) = accept(&held.to_string(), "the disk was cut");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("tree size {signed}")), "names the kept one: {err}");
    let (code, _, err) = accept(&signed_arg, " ");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--reason"), "{err}");
    assert!(data.join(KEPT_FILE).is_file(), "nothing changed yet");
    assert!(!data.join(FORKS_FILE).exists(), "nothing recorded yet");

    let (code, out, err) = accept(&signed_arg, "the disk was cut; no backup holds the lost records");
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(FORKS_FILE), "{out}");
    let record = std::fs::read_to_string(data.join(FORKS_FILE)).unwrap();
    let forks: Vec<Value> = record.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    assert_eq!(forks.len(), 1, "{record}");
    assert_eq!(forks[0]["abandoned_size"], signed);
    assert_eq!(forks[0]["store_size"], held);
    assert_eq!(forks[0]["abandoned_checkpoint"], kept_note.as_str());
    assert_eq!(forks[0]["reason"], "the disk was cut; no backup holds the lost records");
    assert!(!data.join(KEPT_FILE).exists(), "the abandoned checkpoint is no longer kept");
    let (code, _, err) = accept(&signed_arg, "again");
    assert_eq!(code, 2, "nothing kept, nothing to accept: {err}");

    let log_before = stack.journal.log().len();
    stack.restart_journal(&env_refs(&journal_envs())).await;
    let log = stack.journal.log()[log_before..].to_owned();
    assert!(log.contains("forked by its operator 1 time(s)"), "{log}");
    assert!(!log.contains("behind its last signed checkpoint"), "{log}");
    assert_eq!(health(&stack.journal, "battlelog.v1.Journal").await, ServingStatus::Serving as i32);
    assert_eq!(metric(&stack.journal, "battlelog_journal_store_behind_checkpoint").await, Some(0.0));

    // Signed anew over the records held, the same log as the earlier
    // checkpoint; then appends are taken and checkpoints follow them.
    let anew = checkpoint_of(&stack.journal, held).await;
    assert_eq!(anew.note, std::fs::read_to_string(&earlier).unwrap(), "the same records, the same root");
    let mut forum = resolver_client(&stack.resolver).await;
    act(&mut forum, "kept", &attack(), "kept-after-the-fork").await.expect("appends are taken again");
    let mut c = stack.journal_client().await;
    let size = global_head(&mut c).await;
    let grown = checkpoint_of(&stack.journal, size).await;
    assert_eq!(std::fs::read_to_string(data.join(KEPT_FILE)).unwrap(), grown.note, "the new checkpoints are kept");
    let grown = write(stack.dir.path(), "grown.note", &grown.note);
    let (code, out, err) = battlelog(
        &stack,
        &["checkpoint", "verify", "--old", earlier.to_str().unwrap(), "--new", grown.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{out}{err}");
    // The judge's checkpoint of the lost records is not this log's.
    let (code, out, err) =
        battlelog(&stack, &["checkpoint", "verify", "--old", kept.to_str().unwrap(), "--new", grown.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.starts_with("NOT CONSISTENT"), "{out}");
    let (code, out, err) =
        battlelog(&stack, &["audit", "kept", "--roller-key", ROLLER_KEY_HEX, "--checkpoint", kept.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.lines().any(|l| l.starts_with("version ") && l.contains("consistency:")), "{out}");
}

/// A journal stopped and started again, or killed and started again, on its
/// own data: nothing is behind, appends go on, nothing is logged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_normal_restart_or_a_crash_does_not_trip_it() {
    let dir = temp_dir("lost-records-restart");
    let data = dir.path().join("data");
    let options = StartOptions { envs: journal_envs(), ..StartOptions::default() };
    let journal = journal_with(&data, None, &options).await;
    let mut c = journal_client::client(&journal).await;
    open_and_resolve(&mut c, "b", 5).await;
    checkpoint_of(&journal, 6).await;
    assert!(data.join(KEPT_FILE).is_file(), "the checkpoint is kept in the data dir");
    assert!(journal.terminate().await, "a graceful stop");

    let journal = journal_with(&data, None, &options).await;
    let mut c = journal_client::client(&journal).await;
    append(&mut c, "b", any(), vec![resolved("after a stop", "")]).await.expect("appends after a stop");
    checkpoint_of(&journal, 7).await;
    assert_eq!(metric(&journal, "battlelog_journal_store_behind_checkpoint").await, Some(0.0));
    // Killed right after a checkpoint was signed: it was kept before anyone
    // saw it, and the store holds every record it covers.
    append(&mut c, "b", any(), vec![resolved("before a crash", "")]).await.expect("append");
    checkpoint_of(&journal, 8).await;
    journal.kill_9();
    // Nothing is lost: the override refuses to abandon the kept checkpoint.
    let (code, _, err) = offline(&[
        "journal",
        "accept-loss",
        "--data-dir",
        data.to_str().unwrap(),
        "--checkpoint-size",
        "8",
        "--reason",
        "a mistake",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("nothing is lost"), "{err}");
    assert!(data.join(KEPT_FILE).is_file() && !data.join(FORKS_FILE).exists(), "nothing changed");

    let journal = journal_with(&data, None, &options).await;
    let mut c = journal_client::client(&journal).await;
    append(&mut c, "b", any(), vec![resolved("after a crash", "")]).await.expect("appends after a crash");
    assert_eq!(health(&journal, "battlelog.v1.Journal").await, ServingStatus::Serving as i32);
    assert_eq!(metric(&journal, "battlelog_journal_store_behind_checkpoint").await, Some(0.0));
    assert!(!journal.log().contains("behind its last signed checkpoint"), "{}", journal.log());
}

/// The finding's own recipe: the stopped journal's sled file `db` cut to
/// half its length. sled recovers what is left, a prefix of the log; the
/// journal starts on it behind its kept checkpoint and takes no append.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sled_file_cut_in_half_leaves_the_journal_behind() {
    let dir = temp_dir("lost-records-cut");
    let data = dir.path().join("data");
    let options = StartOptions { envs: journal_envs(), ..StartOptions::default() };
    let journal = journal_with(&data, None, &options).await;
    let mut c = journal_client::client(&journal).await;
    open_and_resolve(&mut c, "b", 93).await;
    let signed = checkpoint_of(&journal, 94).await;
    assert!(journal.terminate().await, "a graceful stop");
    let db = data.join("db");
    let length = std::fs::metadata(&db).expect("sled's db file").len();
    std::fs::OpenOptions::new().write(true).open(&db).expect("open db").set_len(length / 2).expect("cut");

    let log_before = std::fs::read_to_string(data.with_extension("log")).unwrap().len();
    let journal = journal_with(&data, None, &options).await;
    let mut c = journal_client::client(&journal).await;
    let held = global_head(&mut c).await;
    assert!(held < 94, "half the file holds fewer records: {held}");
    let log = journal.log()[log_before..].to_owned();
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("behind its last signed checkpoint")).collect();
    assert_eq!(lines.len(), 1, "{log}");
    assert!(lines[0].contains(&format!("records {held}..94 are missing")), "{}", lines[0]);
    let refused = append(&mut c, "b", any(), vec![resolved("after the cut", "")]).await.unwrap_err();
    assert_behind(&refused, held, 94, "Append");
    assert_eq!(newest(&journal).await.expect("the kept checkpoint").note, signed.note, "nothing new signed");
    assert_eq!(metric(&journal, "battlelog_journal_store_behind_checkpoint").await, Some(1.0));
}

/// On the JetStream backend the checkpoint is kept in the journal's own data
/// dir, not in NATS, so a stream deleted and made again (every record gone)
/// cannot take the record of what was signed with it: the journal starts
/// behind and refuses appends; `accept-loss --store jetstream:URL` lets it go
/// on, recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jetstream_stream_made_again_leaves_the_journal_behind() {
    let dir = temp_dir("lost-records-jetstream");
    let config = dir.path().join("nats.conf");
    std::fs::write(&config, "max_payload: 8MB\n").expect("write the NATS config");
    let nats = battlelog_test_support::NatsServer::start_with_config(&config, &[]);
    let data = dir.path().join("journal");
    let mut envs = journal_envs();
    envs.push(("BATTLELOG_JOURNAL_BACKEND".into(), "jetstream".into()));
    let options = StartOptions { envs, ..StartOptions::default() };
    let journal = journal_with(&data, Some(&nats.url()), &options).await;
    let mut c = journal_client::client(&journal).await;
    open_and_resolve(&mut c, "j", 4).await;
    checkpoint_of(&journal, 5).await;
    assert!(data.join(KEPT_FILE).is_file(), "kept in the journal's data dir");
    assert!(journal.terminate().await, "a graceful stop");

    let js = async_nats::jetstream::new(async_nats::connect(nats.url()).await.expect("connect"));
    js.delete_stream("BATTLELOG_JOURNAL").await.expect("the stream deleted");
    let journal = journal_with(&data, Some(&nats.url()), &options).await;
    let mut c = journal_client::client(&journal).await;
    assert_eq!(global_head(&mut c).await, 0, "a new, empty stream");
    let refused =
        append(&mut c, "j", journal_client::no_stream(), vec![journal_client::opened("", "")]).await.unwrap_err();
    assert_behind(&refused, 0, 5, "Append");
    assert_eq!(health(&journal, "battlelog.v1.Journal").await, ServingStatus::NotServing as i32);
    assert!(journal.terminate().await, "a graceful stop");

    let store = format!("jetstream:{}", nats.url());
    let data_arg = data.to_str().unwrap();
    let (code, out, err) = offline(&[
        "journal",
        "accept-loss",
        "--data-dir",
        data_arg,
        "--store",
        &store,
        "--checkpoint-size",
        "5",
        "--reason",
        "the stream was deleted",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(data.join(FORKS_FILE).is_file());
    let journal = journal_with(&data, Some(&nats.url()), &options).await;
    let mut c = journal_client::client(&journal).await;
    append(&mut c, "j", journal_client::no_stream(), vec![journal_client::opened("", "")])
        .await
        .expect("appends are taken again");
    assert_eq!(health(&journal, "battlelog.v1.Journal").await, ServingStatus::Serving as i32);
}
