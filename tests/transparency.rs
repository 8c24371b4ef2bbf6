//! docs/protocol.md §5 end to end through the real binaries: `battlelog-journal`
//! (sled on disk, a log key given in its environment), `battlelog-roller`,
//! `battlelog-resolver`, and the `battlelog` command line a judge runs —
//! `export` (the trailer last), `audit --file` (each tampering a finding
//! that names what failed), `checkpoint`, `checkpoint verify`, `log-key`.
//! The last test rewrites a battle's past offline in the stopped journal's
//! sled data, re-chains it, restarts the journal on it with the same log
//! key, and the audit against a checkpoint kept before finds it.

use std::path::{Path, PathBuf};

use battlelog_journal::SledStore;
use battlelog_journal::store::{EventStore, PlannedAppend, PlannedRecord};
use battlelog_proto::v1 as pb;
use battlelog_test_support::stack::*;
use battlelog_test_support::{StartOptions, TestAuth, poll_until};
use battlelog_tlog::{Checkpoint, LogKey};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tonic::Code;

const ORIGIN: &str = "transparency.test/journal";

fn log_key() -> LogKey {
    LogKey::from_seed(ORIGIN, [23; 32]).expect("a log key")
}

/// The stack with the test's log key and checkpoints every 50 ms.
fn options() -> StartOptions {
    StartOptions { envs: journal_envs(), ..StartOptions::default() }
}

fn journal_envs() -> Vec<(String, String)> {
    vec![
        ("BATTLELOG_JOURNAL_LOG_KEY".into(), log_key().to_text()),
        ("BATTLELOG_JOURNAL_CHECKPOINT_INTERVAL_MS".into(), "50".into()),
    ]
}

/// `battlelog ARGS` against the stack's resolver, as a judge: exit status
/// and stdout (stderr in the panic message when it is not wanted).
fn battlelog(stack: &Stack, args: &[&str]) -> (i32, String, String) {
    let (code, stdout, stderr) = cli_as_judge(stack, args);
    (code.unwrap_or(-1), stdout, stderr)
}

/// `battlelog` with no server (files only).
fn offline(args: &[&str]) -> (i32, String, String) {
    let (code, stdout, stderr) = cli(args);
    (code.unwrap_or(-1), stdout, stderr)
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("written");
    path
}

/// `battlelog audit --file PATH --roller-key … EXTRA`: status and stdout.
fn audit(stack: &Stack, path: &Path, extra: &[&str]) -> (i32, String) {
    let mut args = vec!["audit", "--file", path.to_str().expect("utf-8"), "--roller-key", ROLLER_KEY_HEX];
    args.extend(extra);
    let (code, stdout, stderr) = battlelog(stack, &args);
    (code, format!("{stdout}{stderr}"))
}

/// A pokemon battle of three attacks.
async fn play(stack: &Stack, battle_id: &str) -> Vec<pb::ActResponse> {
    let mut forum = resolver_client(&stack.resolver).await;
    open(&mut forum, battle_id, "pokemon-d6@1", json!([{"id": "pikachu"}, {"id": "meowth"}]), "seed").await;
    let mut replies = Vec::new();
    for i in 0..3 {
        let attack = json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Tackle", "power": 40});
        replies.push(act(&mut forum, battle_id, &attack, &format!("{battle_id}-{i}")).await.expect("an attack"));
    }
    replies
}

/// The newest checkpoint through the resolver, once it holds `size` leaves.
async fn checkpoint_of(stack: &Stack, size: u64) -> pb::Checkpoint {
    let reader = resolver_as(&stack.resolver, &TestAuth::shared().reader()).await;
    poll_until(&format!("a checkpoint of {size} leaves"), WAIT, || {
        let mut reader = reader.clone();
        async move {
            let reply = reader.get_checkpoint(pb::GetCheckpointRequest {}).await.expect("GetCheckpoint").into_inner();
            reply.checkpoint.filter(|c| c.tree_size >= size)
        }
    })
    .await
}

/// `text`'s last line (the trailer) edited as JSON by `edit`.
fn edit_trailer(text: &str, edit: impl FnOnce(&mut Value)) -> String {
    let (events, trailer) = text.trim_end().rsplit_once('\n').expect("a trailer line");
    let mut value: Value = serde_json::from_str(trailer).expect("JSON");
    edit(&mut value);
    format!("{events}\n{value}")
}

/// The export's lines, the trailer last.
fn lines(text: &str) -> Vec<&str> {
    text.trim_end().lines().collect()
}

/// The only callers of GetCheckpoint and GetConsistencyProof are forum,
/// judge and reader tokens; a service token is refused, as on every
/// Resolver call. Bad sizes are INVALID_ARGUMENT naming the field. Act
/// replies carry the journal's checkpoint; Export attaches the signed head
/// past the head only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_resolver_forwards_checkpoints_and_proofs_to_readers_only() {
    let stack = Stack::start_with("transparency-rpcs", false, &options()).await;
    let mut forum = resolver_client(&stack.resolver).await;
    open(&mut forum, "rpcs", "pokemon-d6@1", json!([{"id": "pikachu"}, {"id": "meowth"}]), "seed").await;
    // The opening in a checkpoint, before the attack.
    let first = checkpoint_of(&stack, 1).await;
    let attack = json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Tackle", "power": 40});
    let acted = act(&mut forum, "rpcs", &attack, "rpcs-1").await.expect("an attack");
    let carried = acted.checkpoint.expect("an Act reply carries the journal's checkpoint");
    Checkpoint::open(&carried.note, &log_key().verifier_key()).expect("signed by the log key");
    // A repeat of the request: the newest checkpoint, asked for.
    let again = act(&mut forum, "rpcs", &attack, "rpcs-1").await.expect("the same attack");
    assert_eq!(again.version, acted.version);
    assert!(again.checkpoint.is_some_and(|c| c.tree_size >= carried.tree_size));

    // Dispute, Rule and Close replies carry one too, signed by the log key.
    let vkey = log_key().verifier_key();
    let dispute = pb::DisputeRequest {
        battle_id: "rpcs".into(),
        by: "meowth".into(),
        refers_to: acted.version,
        reason: "too fast".into(),
        request_id: "rpcs-dispute".into(),
        ..Default::default()
    };
    let disputed = forum.dispute(dispute).await.expect("a dispute").into_inner();
    let mut judge = judge_client(&stack.resolver).await;
    let rule = pb::RuleRequest {
        battle_id: "rpcs".into(),
        refers_to: acted.version,
        text: "it stands".into(),
        request_id: "rpcs-rule".into(),
        ..Default::default()
    };
    let ruled = judge.rule(rule).await.expect("a ruling").into_inner();
    let closed = close(&mut forum, "rpcs").await;
    for (what, reply) in [("Dispute", &disputed), ("Rule", &ruled), ("Close", &closed)] {
        let checkpoint = reply.checkpoint.as_ref().unwrap_or_else(|| panic!("a {what} reply carries a checkpoint"));
        Checkpoint::open(&checkpoint.note, &vkey).unwrap_or_else(|e| panic!("{what}: {e}"));
    }

    let auth = TestAuth::shared();
    for (role, token) in [("forum", auth.forum()), ("judge", auth.judge()), ("reader", auth.reader())] {
        let mut client = resolver_as(&stack.resolver, &token).await;
        let reply =
            client.get_checkpoint(pb::GetCheckpointRequest {}).await.unwrap_or_else(|s| panic!("{role}: {s:?}"));
        assert_eq!(reply.into_inner().log_key, log_key().verifier_key().to_string(), "{role}");
        let request = pb::ConsistencyProofRequest { old_size: first.tree_size, new_size: 0 };
        let proof = client.get_consistency_proof(request).await.unwrap_or_else(|s| panic!("{role}: {s:?}"));
        assert_eq!(proof.into_inner().old_size, first.tree_size, "{role}");
    }
    let mut service = resolver_as(&stack.resolver, &auth.service_token()).await;
    let refused = service.get_checkpoint(pb::GetCheckpointRequest {}).await.expect_err("a service token");
    assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");
    let request = pb::ConsistencyProofRequest { old_size: 1, new_size: 0 };
    let refused = service.get_consistency_proof(request).await.expect_err("a service token");
    assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");

    let mut reader = resolver_as(&stack.resolver, &auth.reader()).await;
    let backwards = pb::ConsistencyProofRequest { old_size: 3, new_size: 2 };
    let refused = reader.get_consistency_proof(backwards).await.expect_err("old past new");
    assert_eq!(refused.code(), Code::InvalidArgument, "{refused:?}");
    assert!(refused.message().contains("old_size"), "{refused:?}");
    let beyond = pb::ConsistencyProofRequest { old_size: 1, new_size: u64::MAX };
    let refused = reader.get_consistency_proof(beyond).await.expect_err("past the newest checkpoint");
    assert_eq!(refused.code(), Code::InvalidArgument, "the caller's size, not the resolver's fault: {refused:?}");

    // Export: no signed head within the battle, the head's one past it.
    let page = |from_version| pb::ExportRequest { battle_id: "rpcs".into(), from_version };
    let within = reader.export(page(0)).await.expect("a page").into_inner();
    assert!(!within.events.is_empty() && within.signed_head.is_none());
    // The whole battle fits in a page: its last event is the head.
    let head = within.events.last().and_then(|e| e.event.as_ref()).map(|r| r.version).expect("a head");
    assert_eq!(head, closed.version + 1, "the close's SeedRevealed");
    let past = reader.export(page(head + 1)).await.expect("past the head").into_inner();
    assert!(past.events.is_empty());
    let signed = past.signed_head.expect("the signed head past the head");
    assert_eq!((signed.stream_id.as_str(), signed.version), ("rpcs", head));
    let further = reader.export(page(head + 2)).await.expect("further").into_inner();
    assert!(further.signed_head.is_none(), "only one past the head");
}

/// The export's trailer through `battlelog export` and `battlelog audit`:
/// honest, it checks against the pinned log key; cut short, edited, badly
/// signed or under another key, it is a finding naming what failed; an
/// export without it verifies only as far as §4 and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_finds_every_tampering_with_an_export_and_its_trailer() {
    let stack = Stack::start_with("transparency-audit", false, &options()).await;
    play(&stack, "judged").await;
    let dir = stack.dir.path();
    let vkey = log_key().verifier_key().to_string();

    let (code, exported, stderr) = battlelog(&stack, &["export", "judged"]);
    assert_eq!(code, 0, "{stderr}");
    let all = lines(&exported);
    let trailer: Value = serde_json::from_str(all.last().expect("lines")).expect("a JSON trailer");
    assert!(trailer.get("version").is_none(), "the trailer has no version: {trailer}");
    assert_eq!(trailer["log_key"], vkey);
    let last: Value = serde_json::from_str(all[all.len() - 2]).expect("the last event");
    assert_eq!(trailer["head"]["version"], last["version"]);
    assert_eq!(trailer["head"]["hash"], last["hash"]);

    let honest = write(dir, "honest.jsonl", &exported);
    let (code, out) = audit(&stack, &honest, &["--log-key", &vkey]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(&format!("trailer: head version {} signed and proved", last["version"])), "{out}");
    assert!(out.contains("(the pinned log key)"), "{out}");
    assert!(!out.contains("no trailer"), "{out}");

    // From the resolver rather than a file: the same trailer, checked.
    let (code, out, err) = battlelog(&stack, &["audit", "judged", "--roller-key", ROLLER_KEY_HEX, "--log-key", &vkey]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("(the pinned log key)"), "{out}");

    // Cut short, the trailer kept: the head signed is not the last event.
    let mut cut: Vec<&str> = all[..all.len() - 3].to_vec();
    cut.push(all[all.len() - 1]);
    let (code, out) = audit(&stack, &write(dir, "cut-kept.jsonl", &cut.join("\n")), &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("trailer: head not the last event: the signed head is version"), "{out}");
    assert!(out.contains("events are missing at the end"), "{out}");

    // Cut short, the trailer dropped: a notice; with --log-key a finding.
    let dropped = write(dir, "cut-dropped.jsonl", &all[..all.len() - 3].join("\n"));
    let notice = "no trailer: verified only as far as §4 (an export cut short is not detectable)";
    let (code, out) = audit(&stack, &dropped, &[]);
    assert_eq!(code, 0, "a notice is not a finding: {out}");
    assert!(out.contains(notice), "{out}");
    let (code, out) = audit(&stack, &dropped, &["--log-key", &vkey]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains(&format!("trailer: {notice}")), "a finding: {out}");

    // The trailer edited: its head's version or hash.
    let older = edit_trailer(&exported, |t| t["head"]["version"] = json!(t["head"]["version"].as_u64().unwrap() - 1));
    let (code, out) = audit(&stack, &write(dir, "head-version.jsonl", &older), &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("trailer: head not the last event: the signed head is version"), "{out}");
    let rehashed = edit_trailer(&exported, |t| t["head"]["hash"] = json!(hex::encode([7u8; 32])));
    let (code, out) = audit(&stack, &write(dir, "head-hash.jsonl", &rehashed), &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("trailer: head not the last event: the signed head's hash"), "{out}");

    // A bad head signature.
    let forged = edit_trailer(&exported, |t| {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut signature = b64.decode(t["head_signature"].as_str().unwrap()).unwrap();
        signature[0] ^= 0x80;
        t["head_signature"] = json!(b64.encode(signature));
    });
    let (code, out) = audit(&stack, &write(dir, "head-signature.jsonl", &forged), &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("trailer: head signature: it does not verify"), "{out}");

    // Another log key pinned.
    let other = LogKey::from_seed(ORIGIN, [24; 32]).expect("a key").verifier_key().to_string();
    let (code, out) = audit(&stack, &honest, &["--log-key", &other]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!(
            "trailer: log key not trusted: the trailer names {vkey}, the trusted log key is {other}"
        )),
        "{out}"
    );

    // The same checks with --json: the report names the check.
    let (code, out) = audit(&stack, &honest, &["--json", "--log-key", &vkey]);
    assert_eq!(code, 0, "{out}");
    let report: Value = serde_json::from_str(&out).expect("a JSON report");
    assert_eq!(report["trailer"]["log_key"], vkey);
    assert_eq!(report["trailer"]["log_key_pinned"], true);
    let (_, out) = audit(&stack, &dropped, &["--json", "--log-key", &vkey]);
    let report: Value = serde_json::from_str(&out).expect("a JSON report");
    assert_eq!(report["findings"][0]["check"], "trailer", "{report}");
}

/// `battlelog checkpoint` prints the signed note exactly; `log-key` the
/// verifier key (from the resolver, or offline from the key file);
/// `checkpoint verify` holds a newer checkpoint to a kept one, and a
/// tampered one is not consistent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_and_the_log_key_from_the_command_line() {
    let stack = Stack::start_with("transparency-cli", false, &options()).await;
    play(&stack, "kept").await;
    let dir = stack.dir.path();
    let vkey = log_key().verifier_key().to_string();

    let (code, out, err) = battlelog(&stack, &["log-key"]);
    assert_eq!((code, out.trim_end()), (0, vkey.as_str()), "{err}");
    let key_file = write(dir, "log.key", &log_key().to_text());
    let (code, out, err) = offline(&["log-key", "--key", key_file.to_str().unwrap()]);
    assert_eq!((code, out.trim_end()), (0, vkey.as_str()), "{err}");

    let wire = checkpoint_of(&stack, 1).await;
    let (code, printed, err) = battlelog(&stack, &["checkpoint", "--log-key", &vkey]);
    assert_eq!(code, 0, "{err}");
    let note = Checkpoint::open(&printed, &log_key().verifier_key()).expect("the printed note is signed");
    assert!(note.size >= wire.tree_size);
    assert!(printed.ends_with("\n") && !printed.ends_with("\n\n"), "the note exactly: {printed:?}");
    let old = write(dir, "old.note", &printed);

    play(&stack, "later").await;
    let grown = checkpoint_of(&stack, note.size + 1).await;
    let new = write(dir, "new.note", &grown.note);
    let (code, out, err) = battlelog(
        &stack,
        &["checkpoint", "verify", "--old", old.to_str().unwrap(), "--new", new.to_str().unwrap(), "--log-key", &vkey],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with("consistent: "), "{out}");
    // The forum's form of the old one: "<size> <root>".
    use base64::Engine;
    let posted = format!("{} {}\n", note.size, base64::engine::general_purpose::STANDARD.encode(note.root));
    let posted = write(dir, "posted.txt", &posted);
    let (code, out, err) =
        battlelog(&stack, &["checkpoint", "verify", "--old", posted.to_str().unwrap(), "--new", new.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    // Another root at the old size: the log would have been rewritten.
    let rewritten = write(dir, "rewritten.txt", &format!("{} {}\n", note.size, hex::encode([5u8; 32])));
    let (code, out, err) = battlelog(
        &stack,
        &["checkpoint", "verify", "--old", rewritten.to_str().unwrap(), "--new", new.to_str().unwrap()],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.starts_with("NOT CONSISTENT: the log was rewritten between tree size"), "{out}");
    // A note under another key than the pinned one cannot be checked at all.
    let other = LogKey::from_seed(ORIGIN, [25; 32]).unwrap().verifier_key().to_string();
    let (code, _, err) = battlelog(
        &stack,
        &["checkpoint", "verify", "--old", old.to_str().unwrap(), "--new", new.to_str().unwrap(), "--log-key", &other],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--old"), "{err}");

    // log-key generate: a private key file only its owner reads.
    let generated = dir.join("generated.key");
    let (code, out, err) =
        offline(&["log-key", "generate", "--origin", "forum.example/log", "--out", generated.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let made = LogKey::parse(&std::fs::read_to_string(&generated).unwrap()).expect("a log key file");
    assert_eq!(made.origin(), "forum.example/log");
    assert!(out.contains(&made.verifier_key().to_string()), "{out}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&generated).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let (code, _, err) = offline(&["log-key", "generate", "--out", generated.to_str().unwrap()]);
    assert_eq!(code, 2, "never overwritten: {err}");
    let (code, _, err) =
        offline(&["log-key", "generate", "--origin", "with space", "--out", dir.join("x.key").to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--origin"), "{err}");
}

/// h(−1) of docs/protocol.md §4, from its text: SHA-256("battlelog/v1/stream" ||
/// 0x00 || stream id).
fn genesis(stream: &str) -> [u8; 32] {
    Sha256::new()
        .chain_update(b"battlelog/v1/stream")
        .chain_update([0u8])
        .chain_update(stream.as_bytes())
        .finalize()
        .into()
}

/// Copies the stopped journal's sled data in `from` to `to`, the record at
/// `version` of `battle_id` changed (its recorded time, one microsecond
/// on: the event itself still reads the same, so only the log's history
/// tells) and that stream's chain recomputed after it, as an operator
/// rewriting a battle's past would.
async fn rewrite(from: &Path, to: &Path, battle_id: &str, version: u64) {
    let source = SledStore::open(from, 8 << 20, 64).expect("the old data");
    let destination = SledStore::open(to, 8 << 20, 64).expect("new data");
    let mut heads: std::collections::HashMap<String, (u64, [u8; 32], battlelog_journal::guard::BattleState)> =
        Default::default();
    let mut cursor = 0;
    loop {
        let page = source.read_all(cursor, battlelog_journal::store::Page::count(256)).await.expect("read the old log");
        let Some(last) = page.last() else { break };
        cursor = last.global_position + 1;
        for stored in page {
            let stream = stored.event.stream_id.clone();
            let mut event = stored.event.clone();
            let mut bytes = stored.record.clone();
            if stream == battle_id && event.version == version {
                event.recorded_at_unix_micros += 1;
                bytes = battlelog_journal::record::encode(&event);
                assert_ne!(bytes, stored.record);
            }
            let previous = heads.get(&stream).map_or_else(|| genesis(&stream), |(_, hash, _)| *hash);
            let hash: [u8; 32] = Sha256::new().chain_update(previous).chain_update(&bytes).finalize().into();
            let state = battlelog_journal::planner::fold_stored(
                heads.get(&stream).map(|(_, _, state)| *state),
                &event,
                bytes.len(),
            )
            .expect("the record still folds");
            let key = (!event.idempotency_key.is_empty()).then(|| {
                (
                    event.idempotency_key.clone(),
                    battlelog_journal::record::fingerprint(&event.event_type, &event.payload),
                )
            });
            let plan = PlannedAppend {
                stream_id: stream.clone(),
                expected: heads.get(&stream).map(|(v, _, _)| *v),
                records: vec![PlannedRecord { bytes, hash, key }],
                state,
            };
            let outcome = destination.append(vec![plan]).await.expect("appended");
            assert!(outcome[0].is_ok(), "{outcome:?}");
            heads.insert(stream, (event.version, hash, state));
        }
    }
    source.close().await.expect("the old data closed");
    destination.close().await.expect("the new data closed");
}

/// The operator rewrites a battle's past and re-chains it: the new export
/// verifies by §4 and its own trailer (the journal signs the rewritten log
/// with the same key), but the checkpoint a judge kept before is not
/// consistent with it — `audit --checkpoint` finds the rewrite, asking the
/// resolver for the proof or given it offline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewritten_past_is_found_against_a_checkpoint_kept_before() {
    let mut stack = Stack::start_with("transparency-rewrite", false, &options()).await;
    play(&stack, "rewritten").await;
    let dir = stack.dir.path().to_owned();
    let vkey = log_key().verifier_key().to_string();

    let (code, before, err) = battlelog(&stack, &["export", "rewritten"]);
    assert_eq!(code, 0, "{err}");
    let trailer: Value = serde_json::from_str(lines(&before).last().unwrap()).unwrap();
    let size = Checkpoint::parse_unverified(trailer["checkpoint"].as_str().unwrap()).unwrap().size;
    let kept_note = checkpoint_of(&stack, size).await.note;
    let kept = write(&dir, "kept.note", &kept_note);
    let honest = write(&dir, "before.jsonl", &before);
    let (code, out) = audit(&stack, &honest, &["--log-key", &vkey, "--checkpoint", kept.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("consistency: the kept checkpoint"), "{out}");

    // Stop the journal, rewrite version 1 of the battle, start it again on
    // the rewritten data with the same key, where the others find it.
    stack.journal.kill_9_in_place();
    let data = dir.join("journal");
    let old = dir.join("journal-before");
    std::fs::rename(&data, &old).expect("moved aside");
    rewrite(&old, &data, "rewritten", 1).await;
    stack.restart_journal(&journal_envs().iter().map(|(k, v)| (k.as_str(), v.as_str())).collect::<Vec<_>>()).await;

    let (code, after, err) = battlelog(&stack, &["export", "rewritten"]);
    assert_eq!(code, 0, "{err}");
    assert_ne!(lines(&after)[1], lines(&before)[1], "version 1 was rewritten");
    let rewritten = write(&dir, "after.jsonl", &after);
    // By itself the rewritten export verifies: chain, rolls and trailer.
    let (code, out) = audit(&stack, &rewritten, &["--log-key", &vkey]);
    assert_eq!(code, 0, "{out}");
    // Against the checkpoint kept before, it does not.
    let (code, out) = audit(&stack, &rewritten, &["--log-key", &vkey, "--checkpoint", kept.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    let findings: Vec<&str> = out.lines().filter(|l| l.starts_with("version ")).collect();
    assert_eq!(findings.len(), 1, "{out}");
    assert!(findings[0].contains("consistency: the log was rewritten since the kept checkpoint"), "{out}");

    // Offline, with the proof the journal gives between the two sizes.
    let new_size = Checkpoint::parse_unverified(
        serde_json::from_str::<Value>(lines(&after).last().unwrap()).unwrap()["checkpoint"].as_str().unwrap(),
    )
    .unwrap()
    .size;
    let mut reader = resolver_as(&stack.resolver, &TestAuth::shared().reader()).await;
    let request = pb::ConsistencyProofRequest { old_size: size, new_size };
    let proof = reader.get_consistency_proof(request).await.expect("a proof").into_inner().proof;
    use base64::Engine;
    let b64: Vec<String> = proof.iter().map(|h| base64::engine::general_purpose::STANDARD.encode(h)).collect();
    let proof_file = write(&dir, "proof.json", &serde_json::to_string(&b64).unwrap());
    let (code, out, err) = offline(&[
        "audit",
        "--file",
        rewritten.to_str().unwrap(),
        "--roller-key",
        ROLLER_KEY_HEX,
        "--checkpoint",
        kept.to_str().unwrap(),
        "--consistency-proof",
        proof_file.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("consistency: the log was rewritten since the kept checkpoint"), "{out}");
}
