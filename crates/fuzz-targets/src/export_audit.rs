//! Target `export_audit`: what `battlelog audit --file` does with a file —
//! `battlelog_verify::export::parse`, then the audit of what it read, as
//! the CLI calls it (the battle named by the first line).
//!
//! The first byte picks a mode, the rest is the file's text:
//! - bit 0 clear: the text as it is. Random text rarely chains, so the
//!   audit stops at its structural half for most inputs.
//! - bit 0 set: the records read are chained again before the audit, so
//!   that whatever the fuzzer did to records and events reaches the
//!   semantic half (commitments, signatures, nonces, rolls, re-resolution);
//!   with bit 1 set too, the export is also audited against head hashes
//!   (two more audits, so only for these inputs).
//!
//! Properties, beyond "no panic":
//! - an accepted export holds at least one record, and writing its records
//!   out as export lines and reading them back gives the same records;
//! - the report counts every record, lists findings in version order with
//!   their check, formats every message, serialises to JSON, and names the
//!   last line's hash as the head;
//! - a clean report means what a reader takes it to mean, checked here
//!   with the chain function and the decoders directly: versions 0, 1, 2 …
//!   in order, every hash follows from the previous one, every record
//!   decodes for this battle at its version, and the first event opens the
//!   battle;
//! - after chaining again, no chain finding is left; audited against its
//!   own last hash an export has no head finding, against another it has.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use battlelog_proto::battle;
use battlelog_proto::v1::JournalRecord;
use battlelog_proto::v1::battle_event::Event;
use battlelog_verify::audit::{AuditReport, AuditedRecord};
use battlelog_verify::chain::{Hash, chain_hash, genesis_hash};
use battlelog_verify::export::{self, ExportLine};
use battlelog_verify::{Check, Trusted, audit, audit_trusting};
use prost::Message;
use serde_json::Value;

/// Runs the target on one input.
pub fn run(data: &[u8]) {
    let (rechain, heads, text) = match data.split_first() {
        Some((mode, rest)) => (mode & 1 == 1, mode & 3 == 3, rest),
        None => (false, false, data),
    };
    // The CLI reads the file with `read_to_string`: text that is not UTF-8
    // never reaches the parser.
    let Ok(text) = std::str::from_utf8(text) else { return };
    let mut records = match export::parse(text) {
        Ok(records) => records,
        Err(error) => {
            assert!(!error.to_string().is_empty());
            return;
        }
    };
    assert!(!records.is_empty(), "an export of no record was accepted");
    check_round_trip(&records);

    let battle_id = records[0].stream.clone();
    if rechain {
        let mut previous = genesis_hash(&battle_id).to_vec();
        for record in &mut records {
            record.hash = chain_hash(&previous, &record.record).to_vec();
            previous.clone_from(&record.hash);
        }
    }
    let report = audit(&battle_id, &records);
    check_report(&report, &records);
    if report.ok() {
        check_clean(&battle_id, &records);
    }
    if rechain {
        assert!(!report.findings.iter().any(|f| f.check == Check::Chain), "a chained export has chain findings");
    }
    if heads {
        check_head(&battle_id, &records, &report);
    }
}

/// The records written out as export lines and read back are the same.
fn check_round_trip(records: &[AuditedRecord]) {
    let lines: Vec<ExportLine> = records
        .iter()
        .map(|record| ExportLine {
            stream: record.stream.clone(),
            version: record.version,
            hash: hex::encode(&record.hash),
            record: BASE64.encode(&record.record),
            event_id: String::new(),
            event_type: String::new(),
            recorded_at_unix_micros: 0,
            event: record.event.clone().unwrap_or(Value::Null),
        })
        .collect();
    let text = export::to_text(&lines).expect("export lines serialise");
    let again = export::parse(&text).expect("written export lines read back");
    assert_eq!(again, records, "records changed on the way out and back");
}

fn check_report(report: &AuditReport, records: &[AuditedRecord]) {
    assert_eq!(report.events, records.len() as u64, "the report does not count every record");
    assert!(report.findings.is_sorted_by_key(|f| f.version), "findings out of version order");
    for finding in &report.findings {
        assert_eq!(finding.check, finding.problem.check());
        assert!(!finding.problem.to_string().is_empty());
    }
    serde_json::to_string(report).expect("a report serialises");
    let last = records.last().expect("at least one record");
    assert_eq!(report.head_hash, hex::encode(&last.hash), "the head is not the last line's hash");
}

/// What a clean report promises, checked without the audit.
fn check_clean(battle_id: &str, records: &[AuditedRecord]) {
    let mut previous = genesis_hash(battle_id).to_vec();
    for (expected, line) in records.iter().enumerate() {
        assert_eq!(line.version, expected as u64, "clean, yet version {} is at place {expected}", line.version);
        assert_eq!(line.stream, battle_id, "clean, yet a line names another stream");
        assert_eq!(line.hash, chain_hash(&previous, &line.record), "clean, yet the chain breaks at {expected}");
        previous.clone_from(&line.hash);
        let record = JournalRecord::decode(line.record.as_slice()).expect("clean, yet a record does not decode");
        assert_eq!((record.stream_id.as_str(), record.version), (battle_id, line.version));
        let event = battle::decode(&record).expect("clean, yet an event does not decode");
        if let Some(shown) = &line.event {
            assert_eq!(*shown, battle::event_to_json(&event), "clean, yet the shown event differs");
        }
        if expected == 0 {
            assert!(matches!(event, Event::BattleOpened(_)), "clean, yet the battle does not start opened");
        }
    }
}

/// Against its own last hash, no head finding; against any other, one.
fn check_head(battle_id: &str, records: &[AuditedRecord], report: &AuditReport) {
    let Some(head) = records.last().and_then(|r| Hash::try_from(r.hash.as_slice()).ok()) else { return };
    let own = audit_trusting(battle_id, records, &Trusted { roller_key: None, head: Some(head) });
    assert_eq!(own.findings, report.findings, "its own head changed the findings");
    let mut other = head;
    other[0] ^= 1;
    let elsewhere = audit_trusting(battle_id, records, &Trusted { roller_key: None, head: Some(other) });
    let heads = elsewhere.findings.iter().filter(|f| f.check == Check::Head).count();
    assert_eq!(heads, 1, "another head gave {heads} head findings");
}
