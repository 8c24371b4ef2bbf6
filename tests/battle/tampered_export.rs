//! The audit catches a tampered export.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use battlelog_proto::battle;
use battlelog_proto::v1 as pb;
use battlelog_proto::v1::battle_event::Event;
use battlelog_test_support::journal_client;
use battlelog_test_support::stack::*;
use prost::Message;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

pub(crate) type Lines = Vec<serde_json::Map<String, Value>>;

fn record_of(line: &serde_json::Map<String, Value>) -> pb::JournalRecord {
    let bytes = BASE64.decode(line["record"].as_str().expect("record")).expect("base64");
    pb::JournalRecord::decode(bytes.as_slice()).expect("a JournalRecord")
}

/// Rewrites a line's record with `event` (and its shown `event` JSON).
fn set_event(line: &mut serde_json::Map<String, Value>, event: Event) {
    let mut record = record_of(line);
    record.payload = pb::BattleEvent { event: Some(event.clone()) }.encode_to_vec();
    line.insert("record".into(), json!(BASE64.encode(record.encode_to_vec())));
    line.insert("event".into(), battle::event_to_json(&event));
}

/// Recomputes every `hash` from the record bytes (docs/protocol.md §4), as a
/// forger who knows the chain would.
fn rechain(battle_id: &str, lines: &mut Lines) {
    let mut previous: Vec<u8> = journal_client::genesis(battle_id).to_vec();
    for line in lines.iter_mut() {
        let record = BASE64.decode(line["record"].as_str().expect("record")).expect("base64");
        let hash: [u8; 32] = Sha256::new().chain_update(&previous).chain_update(&record).finalize().into();
        line.insert("hash".into(), json!(hex::encode(hash)));
        previous = hash.to_vec();
    }
}

pub(crate) fn write_lines(path: &std::path::Path, lines: &Lines) {
    let text: String = lines.iter().map(|l| format!("{}\n", Value::Object(l.clone()))).collect();
    std::fs::write(path, text).expect("write");
}

fn event_at(lines: &Lines, version: usize) -> Event {
    battle::decode(&record_of(&lines[version])).expect("event")
}

/// Audits a tampered export: exit status 1 and a finding at `version`.
fn assert_caught(stack: &Stack, name: &str, lines: &Lines, version: usize, check: &str) {
    let path = stack.dir.path().join(format!("{name}.jsonl"));
    write_lines(&path, lines);
    let (code, output) = audit_file(&path);
    assert_eq!(code, Some(1), "{name}: the audit fails (and did not crash):\n{output}");
    assert!(output.contains("DOES NOT VERIFY"), "{name}:\n{output}");
    assert!(
        output.contains(&format!("version {version}: {check}")),
        "{name}: names version {version} ({check}):\n{output}"
    );
}

/// A closed pbta battle of four moves, exported and verified:
/// (stack, export lines). Versions: 0 opened, then (DiceRolled,
/// ActionResolved) × 4 at 1–8, 9 BattleClosed, 10 SeedRevealed.
pub(crate) async fn closed_battle_export(label: &str, battle_id: &str) -> (Stack, Lines) {
    let stack = Stack::start(label, false).await;
    let mut resolver = resolver_client(&stack.resolver).await;
    open(&mut resolver, battle_id, "pbta-2d6@1", json!([{"id": "misty"}, {"id": "brock"}]), "tamper").await;
    for i in 0..4 {
        let action = json!({"type": "move", "actor": "brock", "trait": "grit", "stakes": format!("{i}")});
        act(&mut resolver, battle_id, &action, &format!("t-{i}")).await.expect("act");
    }
    close(&mut resolver, battle_id).await;
    let file = stack.dir.path().join("original.jsonl");
    let export = export_to(&stack.resolver.url(), battle_id, &file);
    assert_audit_file_verifies(&file, battle_id);
    let lines: Lines = export.lines().map(|l| serde_json::from_str(l).expect("JSON object")).collect();
    assert_eq!(lines.len(), 11);
    assert!(matches!(event_at(&lines, 9), Event::BattleClosed(_)));
    assert!(matches!(event_at(&lines, 10), Event::SeedRevealed(_)));
    (stack, lines)
}

/// Acceptance: `battlelog audit --file` catches a changed die (with the
/// chain recomputed, so only re-deriving the roll can tell; and without),
/// a changed shown event, a removed event, two events swapped and a wrong
/// revealed seed, each named by version; the untouched export verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_audit_catches_a_tampered_export_by_version() {
    let battle_id = "tampered";
    let (stack, original) = closed_battle_export("tamper", battle_id).await;
    let roll_version = 3;
    let Event::DiceRolled(roll) = event_at(&original, roll_version) else { panic!("version 3 is a roll") };
    let reveal_version = 10;

    // A changed die, re-chained, the shown event and the total kept in
    // step: only the re-derivation from the revealed seed can tell.
    let mut forged = roll.clone();
    let old = forged.dice[0].value;
    forged.dice[0].value = old % 6 + 1;
    forged.total += forged.dice[0].value - old;
    let mut lines = original.clone();
    set_event(&mut lines[roll_version], Event::DiceRolled(forged));
    rechain(battle_id, &mut lines);
    assert_caught(&stack, "die-rechained", &lines, roll_version, "roll");
    let (_, output) = audit_file(&stack.dir.path().join("die-rechained.jsonl"));
    assert!(!output.contains(": chain:"), "the chain itself was recomputed, so it holds:\n{output}");

    // The same change without recomputing the hashes: the chain breaks there.
    let mut lines = original.clone();
    let mut forged = roll.clone();
    forged.dice[1].value = forged.dice[1].value % 6 + 1;
    set_event(&mut lines[roll_version], Event::DiceRolled(forged));
    assert_caught(&stack, "die-not-rechained", &lines, roll_version, "chain");

    // A removed event (the roll at version 5).
    let mut lines = original.clone();
    lines.remove(5);
    assert_caught(&stack, "removed", &lines, 5, "sequence");
    rechain(battle_id, &mut lines);
    assert_caught(&stack, "removed-rechained", &lines, 5, "sequence");

    // The shown event alone changed: a reader would be misled.
    let mut lines = original.clone();
    lines[roll_version].get_mut("event").expect("event")["dice"][0]["value"] = json!(0);
    assert_caught(&stack, "shown-event", &lines, roll_version, "event");

    // Two events swapped (versions 5 and 6: a roll and its resolution).
    let mut lines = original.clone();
    lines.swap(5, 6);
    assert_caught(&stack, "swapped", &lines, 5, "sequence");

    // A wrong revealed seed (a real seed, of another epoch), re-chained.
    let mut lines = original.clone();
    let wrong = pb::SeedRevealed { epoch: 0, server_seed: server_seed(battle_id, 1).to_hex(), credential: None };
    set_event(&mut lines[reveal_version], Event::SeedRevealed(wrong));
    rechain(battle_id, &mut lines);
    assert_caught(&stack, "wrong-seed", &lines, reveal_version, "commitment");
}

/// Splices `event` into an export as a forger would, at version `at`: the
/// displaced line's stream and time, a fresh event id, the type named, the
/// shown event in step, and every later line moved up one version (its
/// record re-encoded with the new version, so that only the hashes still
/// remember the old order). The hashes are left as they were: a forger who
/// knows the chain calls [`rechain`] after.
fn insert_event(lines: &mut Lines, at: usize, event: Event) {
    let mut record = record_of(&lines[at]);
    record.version = at as u64;
    let last = if record.event_id.ends_with('0') { "1" } else { "0" };
    record.event_id = format!("{}{last}", &record.event_id[..record.event_id.len() - 1]);
    record.event_type = battle::type_name(&event).into();
    record.idempotency_key = "act:forged".into();
    record.payload = pb::BattleEvent { event: Some(event.clone()) }.encode_to_vec();
    let mut line = lines[at].clone();
    line.insert("version".into(), json!(at));
    line.insert("record".into(), json!(BASE64.encode(record.encode_to_vec())));
    line.insert("event_id".into(), json!(record.event_id));
    line.insert("event_type".into(), json!(record.event_type));
    line.insert("event".into(), battle::event_to_json(&event));
    lines.insert(at, line);
    for (version, later) in lines.iter_mut().enumerate().skip(at + 1) {
        let mut record = record_of(later);
        record.version = version as u64;
        later.insert("version".into(), json!(version));
        later.insert("record".into(), json!(BASE64.encode(record.encode_to_vec())));
    }
}

/// Invariant 5 names insertion: a record spliced into an export is a
/// finding at its version. A forged roll (the nonce the next real roll
/// has, better faces) re-chained from there is caught by re-deriving it
/// from the revealed seed (docs/protocol.md §2); a real resolution copied in a
/// second time, re-chained, by its roll being used twice; the forged roll
/// without re-chaining, by the chain. Nothing else changed, and the
/// original export still verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_audit_catches_an_inserted_record_by_version() {
    let battle_id = "inserted";
    let (stack, original) = closed_battle_export("insert", battle_id).await;
    // Versions 1, 3, 5, 7 are the rolls of nonces 0–3; 2, 4, 6, 8 their resolutions.
    let Event::DiceRolled(real) = event_at(&original, 5) else { panic!("version 5 is a roll") };
    assert_eq!(real.nonce, 2);
    let mut forged = real.clone();
    let old = forged.dice[0].value;
    forged.dice[0].value = old % 6 + 1;
    forged.total += forged.dice[0].value - old;

    let mut lines = original.clone();
    insert_event(&mut lines, 5, Event::DiceRolled(forged.clone()));
    assert_eq!(lines.len(), original.len() + 1);
    rechain(battle_id, &mut lines);
    assert_caught(&stack, "roll-inserted-rechained", &lines, 5, "roll");
    let (_, output) = audit_file(&stack.dir.path().join("roll-inserted-rechained.jsonl"));
    assert!(!output.contains(": chain:") && !output.contains(": sequence:"), "re-chained and renumbered:\n{output}");

    let Event::ActionResolved(resolution) = event_at(&original, 4) else { panic!("version 4 resolves nonce 1") };
    assert_eq!(resolution.rolls, vec![1]);
    let mut lines = original.clone();
    insert_event(&mut lines, 5, Event::ActionResolved(resolution));
    rechain(battle_id, &mut lines);
    assert_caught(&stack, "resolution-inserted-rechained", &lines, 5, "resolution");

    let mut lines = original.clone();
    insert_event(&mut lines, 5, Event::DiceRolled(forged));
    assert_caught(&stack, "roll-inserted", &lines, 5, "chain");

    let path = stack.dir.path().join("untouched.jsonl");
    write_lines(&path, &original);
    assert_audit_file_verifies(&path, battle_id);
}

/// Audits an export that differs from a verified one only in what
/// `check` looks at: exit status 1, findings at `version`, and every
/// finding is of that check (the chain and shown event were kept in step).
fn assert_caught_only(stack: &Stack, name: &str, lines: &Lines, version: usize, check: &str) {
    assert_caught(stack, name, lines, version, check);
    // The findings of the JSON report: the text also lists the close (and
    // any dispute or ruling) by version.
    let path = stack.dir.path().join(format!("{name}.jsonl"));
    let (_, stdout, stderr) =
        cli(&["audit", "--file", &path.display().to_string(), "--roller-key", ROLLER_KEY_HEX, "--json"]);
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{name}: {e}: {stdout}{stderr}"));
    let findings = report["findings"].as_array().expect("findings");
    assert!(!findings.is_empty(), "{name}: {stdout}");
    for finding in findings {
        assert_eq!(
            (finding["version"].as_u64(), finding["check"].as_str()),
            (Some(version as u64), Some(check)),
            "{name}: only {check}:\n{stdout}"
        );
    }
}

/// Acceptance (docs/PROTOCOL-signatures.md §4): the audit checks the
/// signature of every commitment. The BattleOpened of a real battle's
/// export is edited — re-encoded, shown and re-chained, so that only the
/// signature check can tell — and each edit is a `signature` finding at
/// version 0: a flipped bit, no signature, no key, a signature of the
/// roller's own for another epoch or battle. Signed consistently by another
/// key, the export verifies on its own, but not against the roller's key.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_audit_checks_the_signature_of_every_commitment() {
    let battle_id = "signed";
    let (stack, original) = closed_battle_export("signed", battle_id).await;
    let Event::BattleOpened(opened) = event_at(&original, 0) else { panic!("version 0 opens the battle") };
    assert_eq!(opened.roller_key, roller_key().to_bytes());
    let edited = |name: &str, edit: &dyn Fn(&mut pb::BattleOpened)| {
        let mut forged = opened.clone();
        edit(&mut forged);
        let mut lines = original.clone();
        set_event(&mut lines[0], Event::BattleOpened(forged));
        rechain(battle_id, &mut lines);
        let path = stack.dir.path().join(format!("{name}.jsonl"));
        write_lines(&path, &lines);
        (lines, path)
    };

    let (lines, _) = edited("signature-bit", &|o| o.commitment_signature[5] ^= 0x10);
    assert_caught_only(&stack, "signature-bit", &lines, 0, "signature");
    let (lines, _) = edited("signature-removed", &|o| o.commitment_signature.clear());
    assert_caught_only(&stack, "signature-removed", &lines, 0, "signature");
    let (lines, _) = edited("unsigned", &|o| {
        o.commitment_signature.clear();
        o.roller_key.clear();
    });
    assert_caught_only(&stack, "unsigned", &lines, 0, "signature");
    let (_, output) = audit_file(&stack.dir.path().join("unsigned.jsonl"));
    assert!(output.contains("no roller key signed the commitments"), "{output}");
    // Genuine signatures by the roller's own key, of other messages.
    let roller = dice::CommitmentSigner::derive(&master_key());
    let (lines, _) =
        edited("other-epoch", &|o| o.commitment_signature = roller.sign(battle_id, 1, &o.commitment).to_vec());
    assert_caught_only(&stack, "other-epoch", &lines, 0, "signature");
    let (lines, _) =
        edited("other-battle", &|o| o.commitment_signature = roller.sign("tampered", 0, &o.commitment).to_vec());
    assert_caught_only(&stack, "other-battle", &lines, 0, "signature");

    // Another key, consistently: a forger's own key signs the commitment.
    let forger = dice::CommitmentSigner::derive(&[0x42; 32]);
    let forger_key = forger.roller_key().to_string();
    assert_ne!(forger_key, ROLLER_KEY_HEX);
    let (_, path) = edited("forger-key", &|o| {
        o.commitment_signature = forger.sign(battle_id, 0, &o.commitment).to_vec();
        o.roller_key = forger.roller_key().to_bytes().to_vec();
    });
    // Consistently signed, it passes every other check: without a pinned
    // key the audit says so and exits 3 (issue 21), never 0.
    let (code, output) = audit_file_unpinned(&path, &[]);
    assert_eq!(code, Some(3), "consistently signed, the key is not pinned:\n{output}");
    assert!(output.contains(&format!("roller key {forger_key} signed")), "the report names the key it saw:\n{output}");
    assert!(output.contains("NOT PINNED"), "{output}");
    let (code, output) = audit_file_unpinned(&path, &["--accept-any-roller-key"]);
    assert_eq!(code, Some(0), "any key accepted explicitly:\n{output}");
    let (code, output) = audit_file_with_key(&path, ROLLER_KEY_HEX);
    assert_eq!(code, Some(1), "not the roller's key:\n{output}");
    assert!(output.contains("DOES NOT VERIFY") && output.contains("version 0: signature: "), "{output}");
    assert!(output.contains(&format!("not the trusted one: expected {ROLLER_KEY_HEX}")), "{output}");

    // And the untouched export against someone else's key.
    let (code, output) = audit_file_with_key(&stack.dir.path().join("original.jsonl"), &forger_key);
    assert_eq!(code, Some(1), "{output}");
    assert!(output.contains("version 0: signature: "), "{output}");
    let (code, _, stderr) = cli(&["audit", "--file", "unused.jsonl", "--roller-key", "not-hex"]);
    assert_eq!(code, Some(2), "a malformed --roller-key is refused: {stderr}");
    assert!(stderr.contains("--roller-key"), "{stderr}");
}

/// The threat of issue 8: whoever can append to the journal opens a battle
/// with a commitment to a seed of their own (signed with their own key, or
/// not at all). The resolver's Audit RPC holds the battle to the key its
/// roller reports and flags the commitment.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_audit_rpc_refuses_commitments_its_roller_did_not_sign() {
    let stack = Stack::start("forged", false).await;
    let mut journal = stack.journal_client().await;
    let mut resolver = resolver_client(&stack.resolver).await;
    let forger_master_key = [0x42u8; 32];
    let forger = dice::CommitmentSigner::derive(&forger_master_key);
    for (battle_id, signed) in [("forged-signed", true), ("forged-unsigned", false)] {
        let commitment = dice::ServerSeed::derive(&forger_master_key, battle_id, 0).commitment().to_string();
        let mut opened = pb::BattleOpened {
            ruleset: "pbta-2d6@1".into(),
            participants: vec![obj(json!({"id": "misty"}))],
            client_seed: "forged".into(),
            commitment,
            tenant: battlelog_test_support::auth::TEST_TENANT.into(),
            ..Default::default()
        };
        if signed {
            opened.commitment_signature = forger.sign(battle_id, 0, &opened.commitment).to_vec();
            opened.roller_key = forger.roller_key().to_bytes().to_vec();
        }
        let event = battle::new_event(Event::BattleOpened(opened), String::new());
        journal_client::append(&mut journal, battle_id, journal_client::no_stream(), vec![event])
            .await
            .expect("the journal takes any well-formed append");
        let report =
            resolver.audit(pb::AuditRequest { battle_id: battle_id.into() }).await.expect("audit").into_inner();
        assert!(!report.ok, "{battle_id}: {report:?}");
        assert!(report.findings.iter().any(|f| (f.version, f.check.as_str()) == (0, "signature")), "{report:?}");
        let expected_key = if signed { forger.roller_key().to_string() } else { String::new() };
        assert_eq!(report.roller_key, expected_key, "{battle_id}: the report names the key it saw");
    }
}
