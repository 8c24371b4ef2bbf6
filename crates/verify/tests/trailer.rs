//! The export's trailer (docs/protocol.md §5) through the verify crate: written
//! last from a signed head as the journal gives it, read back apart from
//! the events, and checked by the audit — every tampering a finding that
//! names what failed, an export without a trailer a notice (a finding when
//! a trailer is demanded), and a kept checkpoint held to the export's.
//! The log here is a `battlelog_tlog::Tree` over the battle's records with
//! another stream's records interleaved, as the journal's global log has
//! them, signed with a `LogKey` made from a fixed seed.

mod built;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use battlelog_proto::v1::{Checkpoint as PbCheckpoint, RecordedEvent, SignedHeadResponse};
use battlelog_tlog::{KeptCheckpoint, LogKey, StreamHead, Tree, leaf_hash};
use battlelog_verify::audit::{AuditReport, Check, LogTrust, NO_TRAILER, audit, check_consistency, check_trailer};
use battlelog_verify::export::{self, ExportError, trailer_from};
use built::{BATTLE, Built};

const ORIGIN: &str = "battlelog.test/journal";

fn key() -> LogKey {
    LogKey::from_seed(ORIGIN, [9; 32]).expect("a log key")
}

/// The journal's log: the battle's records, each after a record of another
/// stream (so that leaf indexes are not versions).
struct Log {
    tree: Tree,
    /// The battle's leaf indexes, by version.
    leaves: Vec<u64>,
}

impl Log {
    fn of(events: &[RecordedEvent]) -> Log {
        let mut tree = Tree::new();
        let mut leaves = Vec::new();
        for (i, event) in events.iter().enumerate() {
            tree.push(leaf_hash("another-battle", i as u64, &[i as u8; 32]));
            let version = event.event.as_ref().expect("a record").version;
            let hash: [u8; 32] = event.hash.as_slice().try_into().expect("32 bytes");
            leaves.push(tree.push(leaf_hash(BATTLE, version, &hash)));
        }
        Log { tree, leaves }
    }

    /// What the journal's GetSignedHead answers for the battle's head at
    /// the tree's current size.
    fn signed_head(&self, events: &[RecordedEvent], key: &LogKey) -> SignedHeadResponse {
        let last = events.last().expect("events");
        let version = last.event.as_ref().expect("a record").version;
        let size = self.tree.size();
        let root = self.tree.root(size).expect("a root");
        let checkpoint = key.sign_checkpoint(size, &root);
        let head = StreamHead { stream_id: BATTLE.into(), version, hash: last.hash.as_slice().try_into().expect("32") };
        let leaf_index = self.leaves[version as usize];
        SignedHeadResponse {
            checkpoint: Some(PbCheckpoint { note: checkpoint.note.clone(), tree_size: size, root_hash: root.to_vec() }),
            log_key: key.verifier_key().to_string(),
            stream_id: BATTLE.into(),
            version,
            hash: last.hash.clone(),
            head_signature: key.sign_head(&head, size).to_vec(),
            leaf_index,
            inclusion_proof: self
                .tree
                .inclusion_proof(leaf_index, size)
                .expect("a proof")
                .iter()
                .map(|h| h.to_vec())
                .collect(),
        }
    }
}

/// An honest export of the played battle with its trailer.
fn honest() -> (Vec<RecordedEvent>, Log, String) {
    let events = Built::played().recorded();
    let log = Log::of(&events);
    let trailer = trailer_from(&log.signed_head(&events, &key()));
    let text = export::write_with_trailer(BATTLE, &events, Some(&trailer)).expect("written");
    (events, log, text)
}

/// The audit of `text` with its trailer checked under `trust`.
fn audited(text: &str, trust: &LogTrust<'_>) -> (AuditReport, Option<battlelog_tlog::Checkpoint>) {
    let read = export::read(text).expect("an export");
    let mut report = audit(BATTLE, &read.records);
    let proved = check_trailer(&mut report, &read.records, read.trailer.as_ref(), trust);
    (report, proved)
}

fn trailer_findings(report: &AuditReport) -> Vec<String> {
    report.findings.iter().filter(|f| f.check == Check::Trailer).map(|f| f.problem.to_string()).collect()
}

/// `text` with its trailer line edited by `edit` (as JSON).
fn with_trailer(text: &str, edit: impl FnOnce(&mut serde_json::Value)) -> String {
    let (events, trailer) = text.rsplit_once('\n').expect("a trailer line");
    let mut value: serde_json::Value = serde_json::from_str(trailer).expect("JSON");
    edit(&mut value);
    format!("{events}\n{value}")
}

#[test]
fn the_trailer_is_the_last_line_and_reads_back_apart_from_the_events() {
    let (events, log, text) = honest();
    let last = text.lines().last().expect("lines");
    let value: serde_json::Value = serde_json::from_str(last).expect("JSON");
    // §5's field names, and no `version`.
    let mut fields: Vec<&str> = value.as_object().expect("an object").keys().map(String::as_str).collect();
    fields.sort_unstable();
    assert_eq!(fields, ["checkpoint", "head", "head_signature", "inclusion_proof", "leaf_index", "log_key"]);
    assert_eq!(value["head"]["stream"], BATTLE);
    assert_eq!(value["head"]["hash"], hex::encode(&events.last().expect("an event").hash));
    assert_eq!(value["leaf_index"], log.leaves[events.len() - 1]);
    assert_eq!(value["log_key"], key().verifier_key().to_string());
    let signed = log.signed_head(&events, &key());
    assert_eq!(value["head_signature"], BASE64.encode(&signed.head_signature));
    assert_eq!(value["checkpoint"], signed.checkpoint.expect("a checkpoint").note);

    let read = export::read(&text).expect("an export");
    assert_eq!(read.records.len(), events.len());
    assert!(read.trailer.is_some());
    // `parse` (the events alone) reads an export with a trailer too.
    assert_eq!(export::parse(&text).expect("events").len(), events.len());
    // Without a trailer: `None`, and the text is the plain export.
    let plain = export::write_with_trailer(BATTLE, &events, None).expect("written");
    assert_eq!(plain, export::write(BATTLE, &events).expect("written"));
    assert_eq!(export::read(&plain).expect("an export").trailer, None);
}

#[test]
fn a_line_without_version_is_a_trailer_only_as_the_last_line() {
    let (_, _, text) = honest();
    let mut lines: Vec<&str> = text.lines().collect();
    let trailer = lines.pop().expect("the trailer");
    let moved = format!("{trailer}\n{}", lines.join("\n"));
    match export::read(&moved) {
        Err(ExportError::Trailer { line: 1, message }) => assert!(message.contains("last line"), "{message}"),
        other => panic!("a trailer before the events: {other:?}"),
    }
    match export::read(&format!("{}\n{{\"stream\": \"x\"}}", lines.join("\n"))) {
        Err(ExportError::Trailer { line, .. }) => assert_eq!(line, lines.len() + 1),
        other => panic!("a malformed trailer: {other:?}"),
    }
    assert_eq!(export::read(trailer), Err(ExportError::Empty), "a trailer alone is no export");
}

#[test]
fn an_honest_export_checks_with_and_without_a_pinned_log_key() {
    let (events, log, text) = honest();
    let pinned = key().verifier_key();
    for trust in [LogTrust::default(), LogTrust { log_key: Some(&pinned), require_trailer: true }] {
        let (report, proved) = audited(&text, &trust);
        assert!(report.ok(), "{:?}", report.findings);
        assert!(report.notices.is_empty(), "{:?}", report.notices);
        let seen = report.trailer.expect("the trailer's proof");
        assert_eq!(seen.tree_size, log.tree.size());
        assert_eq!(seen.head_version, events.len() as u64 - 1);
        assert_eq!(seen.log_key_pinned, trust.log_key.is_some());
        assert_eq!(proved.expect("a checkpoint").size, log.tree.size());
    }
}

#[test]
fn an_export_cut_short_with_its_trailer_kept_is_a_finding() {
    let (events, _, text) = honest();
    let mut lines: Vec<&str> = text.lines().collect();
    let trailer = lines.pop().expect("the trailer");
    lines.truncate(lines.len() - 2);
    lines.push(trailer);
    let (report, proved) = audited(&lines.join("\n"), &LogTrust::default());
    assert_eq!(proved, None);
    let found = trailer_findings(&report);
    assert_eq!(found.len(), 1, "{found:?}");
    let last = events.len() - 1;
    assert!(found[0].starts_with("head not the last event"), "{}", found[0]);
    assert!(found[0].contains(&format!("version {last}")), "names the signed head: {}", found[0]);
    assert!(found[0].contains(&format!("version {}", last - 2)), "names the last event: {}", found[0]);
}

#[test]
fn an_export_without_a_trailer_gets_a_notice_or_a_finding_when_one_is_demanded() {
    let (_, _, text) = honest();
    let (cut, _) = text.rsplit_once('\n').expect("a trailer line");
    let (report, proved) = audited(cut, &LogTrust::default());
    assert!(report.ok(), "{:?}", report.findings);
    assert_eq!(proved, None);
    assert_eq!(report.notices, [NO_TRAILER]);
    assert_eq!(NO_TRAILER, "no trailer: verified only as far as §4 (an export cut short is not detectable)");

    let pinned = key().verifier_key();
    let (report, _) = audited(cut, &LogTrust { log_key: Some(&pinned), require_trailer: true });
    assert_eq!(trailer_findings(&report), [NO_TRAILER]);
    assert!(report.notices.is_empty());
}

#[test]
fn each_tampering_with_the_trailer_is_a_finding_naming_what_failed() {
    let (events, _, text) = honest();
    let other = LogKey::from_seed(ORIGIN, [10; 32]).expect("another key");
    let other_vkey = other.verifier_key();
    let flip = |text: &str| {
        let mut bytes = BASE64.decode(text).expect("base64");
        bytes[5] ^= 1;
        BASE64.encode(bytes)
    };
    let cases: Vec<(&str, String, Option<&battlelog_tlog::VerifierKey>)> = vec![
        (
            "head not the last event",
            with_trailer(&text, |t| t["head"]["version"] = serde_json::json!(events.len() - 2)),
            None,
        ),
        (
            "head not the last event",
            with_trailer(&text, |t| t["head"]["hash"] = serde_json::json!(hex::encode([3u8; 32]))),
            None,
        ),
        (
            "head signature",
            with_trailer(&text, |t| t["head_signature"] = flip(t["head_signature"].as_str().expect("text")).into()),
            None,
        ),
        (
            "inclusion proof",
            with_trailer(&text, |t| {
                t["inclusion_proof"][0] = flip(t["inclusion_proof"][0].as_str().expect("text")).into()
            }),
            None,
        ),
        (
            "inclusion proof",
            with_trailer(&text, |t| t["leaf_index"] = serde_json::json!(t["leaf_index"].as_u64().expect("n") - 1)),
            None,
        ),
        (
            "checkpoint signature",
            with_trailer(&text, |t| {
                let note = t["checkpoint"].as_str().expect("a note").replacen(ORIGIN, "battlelog.test/journax", 1);
                t["checkpoint"] = note.into();
            }),
            None,
        ),
        (
            "checkpoint signature",
            // Signed with another key than the log key the trailer names.
            with_trailer(&text, |t| {
                let root = [1u8; 32];
                t["checkpoint"] = other.sign_checkpoint(4, &root).note.into();
            }),
            None,
        ),
        ("log key not trusted", text.clone(), Some(&other_vkey)),
    ];
    for (expected, tampered, pinned) in cases {
        let (report, proved) = audited(&tampered, &LogTrust { log_key: pinned, require_trailer: pinned.is_some() });
        let found = trailer_findings(&report);
        assert_eq!(found.len(), 1, "{expected}: {found:?}");
        assert!(found[0].starts_with(expected), "expected {expected:?}, found {:?}", found[0]);
        assert_eq!(proved, None, "{expected}");
        assert_eq!(report.trailer, None, "{expected}");
    }
}

#[test]
fn a_kept_checkpoint_is_held_to_the_exports_and_a_rewritten_log_is_found() {
    let (events, log, text) = honest();
    // A judge kept the checkpoint of the log when it was smaller.
    let kept_size = log.tree.size() - 3;
    let kept_root = log.tree.root(kept_size).expect("a root");
    let kept_note = key().sign_checkpoint(kept_size, &kept_root).note;
    let kept = KeptCheckpoint::parse(&kept_note, Some(&key().verifier_key())).expect("a kept note");
    let (mut report, proved) = audited(&text, &LogTrust::default());
    let checkpoint = proved.expect("the trailer checks");
    let proof = log.tree.consistency_proof(kept_size, checkpoint.size).expect("a proof");
    let read = export::read(&text).expect("an export");
    check_consistency(&mut report, &read.records, &kept, &checkpoint, &proof);
    assert!(report.ok(), "{:?}", report.findings);
    let seen = report.consistency.expect("checked");
    assert_eq!((seen.kept_size, seen.tree_size), (kept_size, log.tree.size()));

    // The forum's "<size> <root>" form of the same.
    let posted = format!("{kept_size} {}", BASE64.encode(kept_root));
    let kept = KeptCheckpoint::parse(&posted, None).expect("a posted checkpoint");
    let (mut report, _) = audited(&text, &LogTrust::default());
    check_consistency(&mut report, &read.records, &kept, &checkpoint, &proof);
    assert!(report.ok(), "{:?}", report.findings);

    // The operator rewrote a record before the kept size and re-signed:
    // the kept root is another log's.
    let mut rewritten = Tree::new();
    for (i, event) in events.iter().enumerate() {
        let other_hash = if i == 1 { [0xee; 32] } else { [i as u8; 32] };
        rewritten.push(leaf_hash("another-battle", i as u64, &other_hash));
        let hash: [u8; 32] = event.hash.as_slice().try_into().expect("32");
        rewritten.push(leaf_hash(BATTLE, i as u64, &hash));
    }
    let forged = Log { tree: rewritten, leaves: log.leaves.clone() };
    let forged_text =
        export::write_with_trailer(BATTLE, &events, Some(&trailer_from(&forged.signed_head(&events, &key()))))
            .expect("written");
    let (mut report, proved) = audited(&forged_text, &LogTrust::default());
    assert!(report.ok(), "the rewritten log's own trailer checks: {:?}", report.findings);
    let checkpoint = proved.expect("a checkpoint");
    let proof = forged.tree.consistency_proof(kept_size, checkpoint.size).expect("a proof");
    let kept = KeptCheckpoint::parse(&kept_note, None).expect("a kept note");
    check_consistency(&mut report, &read.records, &kept, &checkpoint, &proof);
    let found: Vec<String> =
        report.findings.iter().filter(|f| f.check == Check::Consistency).map(|f| f.problem.to_string()).collect();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("the log was rewritten since the kept checkpoint"), "{}", found[0]);
    assert_eq!(report.consistency, None);
}

/// A kept checkpoint with nothing to hold it to (the export's trailer is
/// missing or does not check) is a `consistency` finding, not a pass.
#[test]
fn a_kept_checkpoint_without_a_trailer_that_checks_is_a_finding() {
    let (_, _, text) = honest();
    let (cut, _) = text.rsplit_once('\n').expect("a trailer line");
    let read = export::read(cut).expect("an export");
    let mut report = audit(BATTLE, &read.records);
    battlelog_verify::audit::proofs::consistency_unchecked(&mut report, &read.records, "no trailer");
    let found: Vec<(Check, String)> = report.findings.iter().map(|f| (f.check, f.problem.to_string())).collect();
    assert_eq!(found, [(Check::Consistency, "the kept checkpoint cannot be checked: no trailer".to_owned())]);
}
