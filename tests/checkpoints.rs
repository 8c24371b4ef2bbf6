//! System tests of the journal's transparency log (docs/protocol.md §5): the real
//! `battlelog-journal` binary on sled on disk, over gRPC on loopback.
//! Checkpoints appear while the log grows and stay consistent across a
//! `kill -9`; proofs and signed heads verify with `battlelog_tlog`'s
//! verifiers against leaf hashes computed here from §5's text; the log key
//! comes from where the configuration says; only the `service` role asks.

use std::path::Path;
use std::time::{Duration, Instant};

use battlelog_proto::v1 as pb;
use battlelog_proto::v1::journal_client::JournalClient;
use battlelog_test_support::journal_client::*;
use battlelog_test_support::{StartOptions, TestAuth, journal, journal_with, poll_until, temp_dir};
use battlelog_tlog::{Checkpoint, LogKey, StreamHead, VerifierKey, verify_consistency, verify_head, verify_inclusion};
use sha2::{Digest, Sha256};
use tonic::Code;

const WAIT: Duration = Duration::from_secs(30);

/// The leaf hash of §5, built here from the protocol's text: SHA-256(0x00 ||
/// "battlelog/v1/leaf" || 0x00 || stream id || 0x00 || u64_le(version) ||
/// h(version)).
fn leaf(stream: &str, version: u64, hash: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(b"battlelog/v1/leaf");
    h.update([0u8]);
    h.update(stream.as_bytes());
    h.update([0u8]);
    h.update(version.to_le_bytes());
    h.update(hash);
    h.finalize().into()
}

fn hash32(bytes: &[u8]) -> [u8; 32] {
    bytes.try_into().unwrap_or_else(|_| panic!("a 32-byte hash, not {} bytes", bytes.len()))
}

fn hashes(proof: &[Vec<u8>]) -> Vec<[u8; 32]> {
    proof.iter().map(|h| hash32(h)).collect()
}

async fn get_checkpoint(c: &mut Client) -> pb::GetCheckpointResponse {
    c.get_checkpoint(pb::GetCheckpointRequest {}).await.expect("GetCheckpoint").into_inner()
}

/// Waits (asking the journal, no fixed pause) for a checkpoint of at least
/// `size` leaves, opened with the log key the journal names.
async fn checkpoint_of(c: &mut Client, size: u64, within: Duration) -> (Checkpoint, VerifierKey) {
    let reply = poll_until(&format!("a checkpoint of {size} leaves"), within, || {
        let mut c = c.clone();
        async move {
            Some(get_checkpoint(&mut c).await).filter(|r| r.checkpoint.as_ref().is_some_and(|cp| cp.tree_size >= size))
        }
    })
    .await;
    let key = VerifierKey::parse(&reply.log_key).expect("a signed-note verifier key");
    let wire = reply.checkpoint.expect("a checkpoint");
    let checkpoint = Checkpoint::open(&wire.note, &key).expect("the note is signed by the log key");
    assert_eq!((checkpoint.size, checkpoint.root.to_vec()), (wire.tree_size, wire.root_hash), "fields match the note");
    (checkpoint, key)
}

/// Opens battle `stream` (version 0) and rolls `rolls` times in it.
async fn battle(c: &mut Client, stream: &str, rolls: u64) {
    append(c, stream, no_stream(), vec![opened("", "")]).await.expect("open");
    for nonce in 0..rolls {
        append(c, stream, any(), vec![rolled(nonce, stream, "")]).await.expect("roll");
    }
}

/// Every record of the global log, in order.
async fn global_log(c: &mut Client) -> Vec<pb::RecordedEvent> {
    let mut log = Vec::new();
    let mut from = 0;
    loop {
        let page = c.read_all(pb::ReadAllRequest { from_position: from, max_count: 0 }).await.unwrap().into_inner();
        if page.events.is_empty() {
            return log;
        }
        from = page.next_position;
        log.extend(page.events);
    }
}

fn consistent(c: &Checkpoint, newer: &Checkpoint, proof: &pb::ConsistencyProofResponse) {
    verify_consistency(c.size, &c.root, newer.size, &newer.root, &hashes(&proof.proof))
        .unwrap_or_else(|e| panic!("{} -> {}: {e}", c.size, newer.size));
}

async fn consistency(c: &mut Client, old: u64, new: u64) -> pb::ConsistencyProofResponse {
    c.get_consistency_proof(pb::ConsistencyProofRequest { old_size: old, new_size: new }).await.unwrap().into_inner()
}

/// A checkpoint follows appends within about the default second; each is
/// consistent with every later one; `Append` replies carry the newest; and
/// every record's inclusion proof verifies at its global order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_follow_the_log_and_stay_consistent() {
    let dir = temp_dir("checkpoints-follow");
    let server = journal(&dir.path().join("data"), None).await;
    let mut c = client(&server).await;
    let empty = get_checkpoint(&mut c).await;
    assert_eq!(empty.checkpoint, None, "no checkpoint while the log is empty");
    assert!(empty.log_key.starts_with("battlelog.local/journal+"), "{}", empty.log_key);

    let mut kept: Vec<Checkpoint> = Vec::new();
    let mut size = 0;
    for round in 0..4u64 {
        battle(&mut c, &format!("round-{round}"), round).await;
        size += round + 1;
        let appended = Instant::now();
        let (checkpoint, _) = checkpoint_of(&mut c, size, WAIT).await;
        // The interval is 1 s; a busy machine gets some slack, not a minute.
        assert!(appended.elapsed() < Duration::from_secs(5), "took {:?}", appended.elapsed());
        assert_eq!(checkpoint.size, size, "nothing else was appended");
        kept.push(checkpoint);
    }
    let reply = append(&mut c, "round-0", any(), vec![resolved("after", "")]).await.unwrap();
    let carried = reply.checkpoint.expect("an append reply carries the newest checkpoint");
    assert!(carried.tree_size >= size, "{} < {size}", carried.tree_size);

    let (newest, key) = checkpoint_of(&mut c, size + 1, WAIT).await;
    kept.push(newest.clone());
    for (i, old) in kept.iter().enumerate() {
        for new in &kept[i..] {
            consistent(old, new, &consistency(&mut c, old.size, new.size).await);
        }
    }
    let to_newest = consistency(&mut c, kept[0].size, 0).await;
    assert_eq!(to_newest.new_size, newest.size, "0 asks for the newest");
    let note = to_newest.checkpoint.expect("the newest checkpoint comes with it").note;
    assert_eq!(Checkpoint::open(&note, &key).unwrap(), newest);

    let log = global_log(&mut c).await;
    assert_eq!(log.len() as u64, newest.size);
    for (i, event) in log.iter().enumerate() {
        let record = event.event.as_ref().expect("decoded");
        let request =
            pb::InclusionProofRequest { stream_id: record.stream_id.clone(), version: record.version, tree_size: 0 };
        let proof = c.get_inclusion_proof(request).await.unwrap().into_inner();
        assert_eq!((proof.leaf_index, proof.tree_size), (i as u64, newest.size));
        assert!(proof.checkpoint.is_some(), "at the newest size, the newest checkpoint");
        let leaf = leaf(&record.stream_id, record.version, &event.hash);
        verify_inclusion(i as u64, newest.size, &leaf, &hashes(&proof.proof), &newest.root)
            .unwrap_or_else(|e| panic!("{}@{}: {e}", record.stream_id, record.version));
    }
    // At an older checkpoint's size, against that checkpoint's root.
    let old = &kept[1];
    let first = &log[0];
    let record = first.event.as_ref().unwrap();
    let request = pb::InclusionProofRequest { stream_id: record.stream_id.clone(), version: 0, tree_size: old.size };
    let proof = c.get_inclusion_proof(request).await.unwrap().into_inner();
    assert_eq!(proof.checkpoint, None, "not the newest size");
    verify_inclusion(0, old.size, &leaf(&record.stream_id, 0, &first.hash), &hashes(&proof.proof), &old.root)
        .expect("verifies at the old size");
}

/// `kill -9` after several checkpoints; restarted on the same data dir, the
/// journal signs with the same generated key (`log.key`), and a consistency
/// proof from every checkpoint issued before the crash to its newest one
/// verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_before_a_crash_stay_provable_after_it() {
    let dir = temp_dir("checkpoints-crash");
    let data = dir.path().join("data");
    let server = journal(&data, None).await;
    let mut c = client(&server).await;
    let mut kept = Vec::new();
    let mut size = 0;
    let mut key_before = None;
    for round in 0..4u64 {
        battle(&mut c, &format!("crash-{round}"), 2).await;
        size += 3;
        let (checkpoint, key) = checkpoint_of(&mut c, size, WAIT).await;
        kept.push(checkpoint);
        key_before = Some(key);
    }
    // Appends after the last checkpoint, acknowledged, then the crash.
    battle(&mut c, "crash-last", 3).await;
    let log_text = server.log();
    let key_before = key_before.unwrap();
    assert!(log_text.contains(&format!("log key: {key_before}")), "the key is in the log:\n{log_text}");
    let key_file = std::fs::read_to_string(data.join("log.key")).expect("the generated key is kept in the data dir");
    assert_eq!(LogKey::parse(&key_file).expect("a signed-note private key").verifier_key(), key_before);
    server.kill_9();

    let server = journal(&data, None).await;
    let mut c = client(&server).await;
    let (newest, key_after) = checkpoint_of(&mut c, size + 4, WAIT).await;
    assert_eq!(key_after, key_before, "the generated log.key is reused");
    assert_eq!(newest.size, size + 4, "every acknowledged record, rebuilt from the log");
    for old in &kept {
        let proof = consistency(&mut c, old.size, 0).await;
        assert_eq!(proof.new_size, newest.size);
        consistent(old, &newest, &proof);
    }
}

/// A signed head: its signature verifies with the log key over §5's head
/// message, its inclusion proof at the checkpoint's size and root, and the
/// export trailer built from it checks against the stream's last event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_head_verifies_and_makes_a_trailer_that_checks() {
    let dir = temp_dir("checkpoints-head");
    let options = StartOptions {
        // A minute: the checkpoint that holds the head is issued on demand.
        envs: vec![("BATTLELOG_JOURNAL_CHECKPOINT_INTERVAL_MS".into(), "60000".into())],
        ..StartOptions::default()
    };
    let server = journal_with(&dir.path().join("data"), None, &options).await;
    let mut c = client(&server).await;
    battle(&mut c, "left", 2).await;
    battle(&mut c, "right", 1).await;
    append(&mut c, "left", any(), vec![rolled(2, "left", "")]).await.unwrap();
    assert_eq!(get_checkpoint(&mut c).await.checkpoint, None, "nothing signed yet: the log was empty at start");

    let reply = c.get_signed_head(pb::SignedHeadRequest { stream_id: "left".into() }).await.unwrap().into_inner();
    let key = VerifierKey::parse(&reply.log_key).unwrap();
    let checkpoint = Checkpoint::open(&reply.checkpoint.as_ref().unwrap().note, &key).expect("signed");
    assert_eq!(checkpoint.size, 6, "issued for it: the whole log");
    let last = read_stream(&mut c, "left").await.pop().unwrap();
    assert_eq!((reply.stream_id.as_str(), reply.version, &reply.hash), ("left", 3, &last.hash));
    assert_eq!(reply.leaf_index, 5);
    let head = StreamHead { stream_id: "left".into(), version: 3, hash: hash32(&last.hash) };
    verify_head(&key, &head, checkpoint.size, &reply.head_signature).expect("the head signature verifies");
    assert!(verify_head(&key, &head, checkpoint.size + 1, &reply.head_signature).is_err(), "bound to its size");
    let proof = hashes(&reply.inclusion_proof);
    verify_inclusion(5, checkpoint.size, &leaf("left", 3, &last.hash), &proof, &checkpoint.root).expect("included");

    use base64::Engine as _;
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let trailer = battlelog_tlog::Trailer {
        checkpoint: reply.checkpoint.unwrap().note,
        log_key: reply.log_key.clone(),
        head: battlelog_tlog::TrailerHead { stream: "left".into(), version: 3, hash: hex::encode(&last.hash) },
        head_signature: b64(&reply.head_signature),
        leaf_index: reply.leaf_index,
        inclusion_proof: reply.inclusion_proof.iter().map(|h| b64(h)).collect(),
    };
    assert_eq!(trailer.check(Some(&head), Some(&key)).expect("the trailer checks"), checkpoint);
    let earlier = StreamHead { stream_id: "left".into(), version: 2, hash: [0; 32] };
    assert!(trailer.check(Some(&earlier), Some(&key)).is_err(), "not the head of an export cut short");

    // The newest checkpoint now holds "right"'s head too: no new one.
    let right = c.get_signed_head(pb::SignedHeadRequest { stream_id: "right".into() }).await.unwrap().into_inner();
    assert_eq!(right.checkpoint.unwrap().tree_size, 6);
    assert_eq!((right.version, right.leaf_index), (1, 4));
}

/// Where the key comes from: `BATTLELOG_JOURNAL_LOG_KEY`, `log_key_file`;
/// a key of another origin than `log_origin` stops the journal at start,
/// naming both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_key_comes_from_the_environment_or_a_file() {
    let dir = temp_dir("checkpoints-keys");
    let key = LogKey::from_seed("forum.example/journal", [42; 32]).unwrap();
    let start = |name: &str, envs: Vec<(String, String)>| {
        let data = dir.path().join(name);
        async move { journal_with(&data, None, &StartOptions { envs, ..StartOptions::default() }).await }
    };
    let from_env = start("env", vec![("BATTLELOG_JOURNAL_LOG_KEY".into(), key.to_text())]).await;
    let mut c = client(&from_env).await;
    battle(&mut c, "keyed", 0).await;
    let (checkpoint, named) = checkpoint_of(&mut c, 1, WAIT).await;
    assert_eq!(named, key.verifier_key());
    assert_eq!(checkpoint.origin, "forum.example/journal");
    assert!(!dir.path().join("env").join("log.key").exists(), "nothing generated");
    drop(from_env);

    let file = dir.path().join("journal-log.key");
    std::fs::write(&file, format!("{}\n", key.to_text())).unwrap();
    let envs = vec![
        ("BATTLELOG_JOURNAL_LOG_KEY_FILE".into(), file.display().to_string()),
        ("BATTLELOG_JOURNAL_LOG_ORIGIN".into(), "forum.example/journal".into()),
    ];
    let from_file = start("file", envs).await;
    let mut c = client(&from_file).await;
    assert_eq!(get_checkpoint(&mut c).await.log_key, key.verifier_key().to_string());
    drop(from_file);

    let envs = [
        ("BATTLELOG_JOURNAL_LOG_KEY_FILE".to_owned(), file.display().to_string()),
        ("BATTLELOG_JOURNAL_LOG_ORIGIN".to_owned(), "battlelog.local/journal".to_owned()),
    ];
    let refused = refused_start(&dir.path().join("other"), &envs);
    assert!(
        refused.contains("log_origin")
            && refused.contains("forum.example/journal")
            && refused.contains("battlelog.local/journal"),
        "{refused}"
    );
    let envs = [("BATTLELOG_JOURNAL_LOG_KEY".to_owned(), "PRIVATE+KEY+nonsense".to_owned())];
    let refused = refused_start(&dir.path().join("garbage"), &envs);
    assert!(refused.contains("log_key_file") && refused.contains("BATTLELOG_JOURNAL_LOG_KEY"), "{refused}");
}

/// Runs the journal binary expecting it to refuse to start: its stderr.
fn refused_start(data: &Path, envs: &[(String, String)]) -> String {
    let output = std::process::Command::new(battlelog_test_support::service_binary("battlelog-journal"))
        .args(["--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data)
        .envs(TestAuth::shared().env("journal"))
        .envs(envs.iter().cloned())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run battlelog-journal");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "it started: {stderr}");
    assert!(!String::from_utf8_lossy(&output.stdout).contains("listening on"), "it never listened");
    stderr
}

/// Forum, judge and reader tokens are refused on the four RPCs; bad sizes
/// and versions are INVALID_ARGUMENT naming the field; an unknown stream
/// is NOT_FOUND.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_services_ask_and_bad_requests_name_their_field() {
    let dir = temp_dir("checkpoints-refusals");
    let server = journal(&dir.path().join("data"), None).await;
    let mut c = client(&server).await;
    battle(&mut c, "only", 2).await;
    let (checkpoint, _) = checkpoint_of(&mut c, 3, WAIT).await;

    let auth = TestAuth::shared();
    for (role, token) in [("forum", auth.forum()), ("judge", auth.judge()), ("reader", auth.reader())] {
        let mut other = JournalClient::new(server.authed(&token).await);
        let statuses = [
            other.get_checkpoint(pb::GetCheckpointRequest {}).await.map(|_| ()),
            other
                .get_inclusion_proof(pb::InclusionProofRequest { stream_id: "only".into(), version: 0, tree_size: 0 })
                .await
                .map(|_| ()),
            other.get_consistency_proof(pb::ConsistencyProofRequest { old_size: 1, new_size: 0 }).await.map(|_| ()),
            other.get_signed_head(pb::SignedHeadRequest { stream_id: "only".into() }).await.map(|_| ()),
        ];
        for (rpc, status) in
            ["GetCheckpoint", "GetInclusionProof", "GetConsistencyProof", "GetSignedHead"].iter().zip(statuses)
        {
            let status = status.expect_err("refused");
            assert_eq!(status.code(), Code::PermissionDenied, "{role} on {rpc}: {status:?}");
        }
    }

    let size = checkpoint.size;
    let inclusion =
        |stream: &str, version, tree_size| pb::InclusionProofRequest { stream_id: stream.into(), version, tree_size };
    let bad = c.get_inclusion_proof(inclusion("only", 0, size + 1)).await.expect_err("past the newest");
    assert_eq!(invalid_field(&bad), "tree_size");
    assert!(bad.message().contains(&(size + 1).to_string()) && bad.message().contains(&size.to_string()), "{bad:?}");
    let bad = c.get_inclusion_proof(inclusion("only", 3, 0)).await.expect_err("past the head");
    assert_eq!(invalid_field(&bad), "version");
    let bad = c.get_inclusion_proof(inclusion("bad id", 0, 0)).await.expect_err("not a stream id");
    assert_eq!(invalid_field(&bad), "stream_id");
    let missing = c.get_inclusion_proof(inclusion("nobody", 0, 0)).await.expect_err("unknown");
    assert_eq!(missing.code(), Code::NotFound, "{missing:?}");
    let missing = c.get_signed_head(pb::SignedHeadRequest { stream_id: "nobody".into() }).await.expect_err("unknown");
    assert_eq!(missing.code(), Code::NotFound, "{missing:?}");

    let request = |old_size, new_size| pb::ConsistencyProofRequest { old_size, new_size };
    let bad = c.get_consistency_proof(request(size, size - 1)).await.expect_err("old past new");
    assert_eq!(invalid_field(&bad), "old_size");
    let bad = c.get_consistency_proof(request(1, size + 1)).await.expect_err("past the newest");
    assert_eq!(invalid_field(&bad), "new_size");
    let bad = c.get_consistency_proof(request(u64::MAX, 0)).await.expect_err("u64::MAX");
    assert_eq!(invalid_field(&bad), "old_size");
    let empty = c.get_consistency_proof(request(0, 0)).await.expect("from the empty tree").into_inner();
    assert!(empty.proof.is_empty());
}

/// A log that no longer reads back whole (a record deleted on disk) does
/// not keep the journal from starting: the tree stops before the break and
/// `VerifyChain` names the version. The tree is then short of the
/// checkpoint signed before, so the journal signs nothing over it (a
/// smaller tree's root would be a second story about the records it
/// signed), serves that checkpoint still, and refuses proofs and appends
/// with `STORE_BEHIND_CHECKPOINT`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_log_still_starts_with_the_tree_before_the_break() {
    use battlelog_journal::store::layout;
    let dir = temp_dir("checkpoints-broken");
    let data = dir.path().join("data");
    let server = journal(&data, None).await;
    let mut c = client(&server).await;
    battle(&mut c, "t", 9).await;
    let (before, key) = checkpoint_of(&mut c, 10, WAIT).await;
    assert!(server.terminate().await, "graceful shutdown exits 0");
    {
        let db = open_sled(&data).await;
        let records = db.open_tree(layout::RECORDS).expect("tree");
        records.remove(layout::record_key("t", 6)).expect("remove");
        db.flush().expect("flush");
    }
    let server = journal(&data, None).await;
    let mut c = client(&server).await;
    let (after, same_key) = checkpoint_of(&mut c, 10, WAIT).await;
    assert_eq!((after, same_key), (before, key), "the checkpoint signed before, not one of the 6 records left");
    let past = c.get_consistency_proof(pb::ConsistencyProofRequest { old_size: 1, new_size: 0 }).await;
    assert_eq!(error_reason(&past.expect_err("behind")), "STORE_BEHIND_CHECKPOINT");
    let refused = append(&mut c, "t", any(), vec![resolved("after the break", "")]).await;
    assert_eq!(error_reason(&refused.expect_err("behind")), "STORE_BEHIND_CHECKPOINT");
    let verdict = verify(&mut c, "t").await;
    assert_eq!((verdict.ok, verdict.first_bad_version), (false, Some(6)));
    assert!(server.log().contains("the tree stops here"), "said in the log:\n{}", server.log());
    assert!(server.log().contains("records 6..10 are missing"), "said in the log:\n{}", server.log());
}
