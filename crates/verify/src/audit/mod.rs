//! The audit of docs/protocol.md §4, pure: recompute the chain from the record
//! bytes, decode every record and check its stream and version, check every
//! commitment against its revealed seed, re-derive every roll, and
//! re-resolve every action from its rolls against the recorded outcome.
//! Every difference is a [`Finding`] at the version where it is. Given the
//! head hash the battle should end at ([`Trusted`]), an export that ends
//! elsewhere is one too. The report also lists every dispute and ruling,
//! with what each ruling's override changed, the close with who made it,
//! and each action's final outcome after every ruling (`crate::judging`
//! documents those fields).
//!
//! It also checks that every commitment is signed by the roller
//! (`docs/PROTOCOL-signatures.md`): without that, whoever could append to
//! the journal could commit to a seed of their own, roll what they like,
//! reveal it, and every other check would pass.
//!
//! - this module: the report, the entry points and the structural half
//!   (sequence, chain, record, event) and the signatures;
//! - `problem` (private): every finding's typed [`Problem`] and its [`Check`];
//! - `replay` (private): the semantic half, one checker per event type;
//! - `rolls` (private): a reveal against its commitment, a roll against its
//!   re-derivation;
//! - [`proofs`]: docs/protocol.md §5 — the export's trailer (signed head,
//!   checkpoint, inclusion proof) and a kept checkpoint's consistency with
//!   the export's.

mod problem;
pub mod proofs;
mod replay;
mod rolls;

use std::collections::BTreeMap;

use battlelog_proto::battle::{self, event_to_json};
use battlelog_proto::v1::{JournalRecord, RecordedEvent, battle_event::Event};
use prost::Message;
use serde::{Serialize, Serializer};
use serde_json::Value;

pub use problem::{Check, Problem};
pub use proofs::{
    ConsistencySeen, LogTrust, NO_TRAILER, TrailerSeen, check_consistency, check_trailer, consistency_sizes,
};

pub use crate::judging::{CloseSeen, DisputeSeen, FinalOutcome, RulingSeen};

use crate::chain::{Hash, chain_hash, genesis_hash};

/// One event as an auditor receives it (from an export or the journal).
#[derive(Debug, Clone, PartialEq)]
pub struct AuditedRecord {
    pub stream: String,
    /// The version the export claims.
    pub version: u64,
    /// The claimed h(version).
    pub hash: Vec<u8>,
    /// The exact record bytes.
    pub record: Vec<u8>,
    /// The decoded event the export shows, if it shows one: it must agree
    /// with the record, or a reader could be shown something else.
    pub event: Option<Value>,
}

impl AuditedRecord {
    /// One event of `stream` as the journal returns it. It shows no decoded
    /// event: the audit decodes the record bytes itself.
    pub fn from_recorded(stream: &str, recorded: RecordedEvent) -> AuditedRecord {
        AuditedRecord {
            stream: stream.to_owned(),
            version: recorded.event.map(|r| r.version).unwrap_or_default(),
            hash: recorded.hash,
            record: recorded.record,
            event: None,
        }
    }
}

/// One difference, at the version where it is. Serialized as `version`,
/// `check` and `message` (the problem's text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub version: u64,
    /// Always `problem.check()`; a field so that reports can be read and
    /// filtered by it.
    pub check: Check,
    #[serde(rename = "message", serialize_with = "as_text")]
    pub problem: Problem,
}

impl Finding {
    fn new(version: u64, problem: Problem) -> Finding {
        Finding { version, check: problem.check(), problem }
    }
}

fn as_text<S: Serializer>(problem: &Problem, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(problem)
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AuditReport {
    pub events: u64,
    pub rolls_verified: u64,
    pub actions_verified: u64,
    /// Versions of rolls whose epoch's seed is not revealed yet: they cannot
    /// be re-derived until it is (an open battle's current epoch).
    pub rolls_pending_reveal: Vec<u64>,
    /// Sorted by version.
    pub findings: Vec<Finding>,
    /// Hex of the last hash of the chain as given. An export cut short
    /// still chains; compare this with the head the journal reports (or a
    /// forum post quoted) to know that nothing is missing at the end.
    pub head_hash: String,
    /// The commitment of every epoch, by epoch, as the battle published them.
    pub commitments: Vec<(u32, String)>,
    /// Lowercase hex of the roller key that signed the battle's first
    /// signed commitment (`None`: none is signed). Compare it with the key
    /// the operator publishes, or pass that key to the audit.
    pub roller_key: Option<String>,
    /// Every dispute, in version order: who contests what.
    pub disputes: Vec<DisputeSeen>,
    /// Every ruling, in version order: who ruled on what, and the before
    /// and after of each outcome field its override changed.
    pub rulings: Vec<RulingSeen>,
    /// The battle's close: who closed it (the recorded credential), the
    /// free-text note and the reason; `None` while it is open.
    pub closed: Option<CloseSeen>,
    /// By action version (JSON: the version as a string key), each action's
    /// outcome after every ruling and the rulings that changed it. Only
    /// actions the audit could fold (the battle opened under a known
    /// ruleset) are in it.
    pub final_outcomes: BTreeMap<u64, FinalOutcome>,
    /// What the export's trailer proved (docs/protocol.md §5), when it has one
    /// that checked ([`check_trailer`]).
    pub trailer: Option<TrailerSeen>,
    /// The kept checkpoint the export's was proved consistent with
    /// ([`check_consistency`]), when one was given.
    pub consistency: Option<ConsistencySeen>,
    /// What the audit could not check and says so, without it being a
    /// finding (e.g. [`NO_TRAILER`]).
    pub notices: Vec<String>,
}

impl AuditReport {
    /// Everything that could be checked verified.
    pub fn ok(&self) -> bool {
        self.findings.is_empty()
    }

    /// Records a problem at `version`.
    fn find(&mut self, version: u64, problem: impl Into<Problem>) {
        self.findings.push(Finding::new(version, problem.into()));
    }
}

/// Audits the events of `battle_id` in the order given. Commitments must be
/// signed, all by one roller key, whichever it is: the report names it.
pub fn audit(battle_id: &str, lines: &[AuditedRecord]) -> AuditReport {
    audit_with_roller_key(battle_id, lines, None)
}

/// [`audit`], and with `trusted` given, every commitment must be signed by
/// exactly that roller key.
pub fn audit_with_roller_key(
    battle_id: &str,
    lines: &[AuditedRecord],
    trusted: Option<&dice::RollerKey>,
) -> AuditReport {
    audit_trusting(battle_id, lines, &Trusted { roller_key: trusted, head: None })
}

/// What an auditor holds from outside the export, to audit it against.
#[derive(Debug, Clone, Copy, Default)]
pub struct Trusted<'a> {
    /// Every commitment must be signed by exactly this roller key.
    pub roller_key: Option<&'a dice::RollerKey>,
    /// The export must end at this head hash (the one the journal reports
    /// or a forum post quoted): an export cut short at the end still
    /// chains, and only this tells.
    pub head: Option<Hash>,
}

/// [`audit`] against what the auditor trusts.
pub fn audit_trusting(battle_id: &str, lines: &[AuditedRecord], trusted: &Trusted<'_>) -> AuditReport {
    audit_pinned(battle_id, lines, trusted.roller_key.map(std::slice::from_ref).unwrap_or_default(), trusted.head)
}

/// [`audit`] with the roller key pinned to a set: every commitment must be
/// signed by one of `roller_keys` (none given: any one key, as [`audit`]),
/// and with `head` given the export must end at it. A commitment signed by
/// another key is a `signature` finding naming it and the trusted key(s).
pub fn audit_pinned(
    battle_id: &str,
    lines: &[AuditedRecord],
    roller_keys: &[dice::RollerKey],
    head: Option<Hash>,
) -> AuditReport {
    let trusted = Trusted { roller_key: None, head };
    let mut report = AuditReport {
        events: lines.len() as u64,
        head_hash: hex::encode(lines.last().map_or(genesis_hash(battle_id).to_vec(), |l| l.hash.clone())),
        ..AuditReport::default()
    };
    let decoded = check_chain_and_records(&mut report, battle_id, lines);
    check_signatures(&mut report, battle_id, &decoded, roller_keys);
    replay::check_battle(&mut report, &decoded);
    if let Some(head) = trusted.head
        && report.head_hash != hex::encode(head)
    {
        let last = lines.last().map_or(0, |line| line.version);
        report.find(last, Problem::HeadDiffers { found: report.head_hash.clone(), expected: hex::encode(head) });
    }
    // Stable: findings at one version keep the order they were found in.
    report.findings.sort_by_key(|f| f.version);
    report
}

/// The structural half: sequence, chain, record and event. Returns the
/// events that decoded, with their versions, for the semantic half.
fn check_chain_and_records(report: &mut AuditReport, battle_id: &str, lines: &[AuditedRecord]) -> Vec<(u64, Event)> {
    let mut previous = genesis_hash(battle_id).to_vec();
    let mut expected = 0u64;
    let mut decoded = Vec::new();
    for line in lines {
        let version = line.version;
        if line.stream != battle_id {
            report.find(version, Problem::LineStream { named: line.stream.clone(), expected: battle_id.to_owned() });
        }
        if version > expected {
            report.find(expected, Problem::VersionMissing { expected, found: version });
        } else if version < expected {
            report.find(version, Problem::VersionRepeated { version, after: expected - 1 });
        }
        expected = version.saturating_add(1);

        if line.hash != chain_hash(&previous, &line.record) {
            report.find(version, Problem::ChainBroken);
        }
        // Go on from the claimed hash so that one broken link is one finding.
        previous.clone_from(&line.hash);

        let record = match JournalRecord::decode(line.record.as_slice()) {
            Ok(record) => record,
            Err(e) => {
                report.find(version, Problem::RecordUndecodable(e));
                continue;
            }
        };
        if record.stream_id != battle_id {
            report.find(version, Problem::RecordStream(record.stream_id.clone()));
        }
        if record.version != version {
            report.find(version, Problem::RecordVersion(record.version));
        }
        let event = match battle::decode(&record) {
            Ok(event) => event,
            Err(e) => {
                report.find(version, e);
                continue;
            }
        };
        if let Some(shown) = &line.event
            && *shown != event_to_json(&event)
        {
            report.find(version, Problem::EventShownDiffers);
        }
        decoded.push((record.version, event));
    }
    decoded
}

/// Every commitment (BattleOpened's for epoch 0, each SeedCommitted's) is
/// signed, verifies with the key it names, and that key is the battle's one
/// and, when given, the trusted one.
fn check_signatures(report: &mut AuditReport, battle_id: &str, events: &[(u64, Event)], trusted: &[dice::RollerKey]) {
    let mut battle_key: Option<dice::RollerKey> = None;
    for (version, event) in events {
        let version = *version;
        let (epoch, commitment, signature, key) = match event {
            Event::BattleOpened(e) => (0, &e.commitment, &e.commitment_signature, &e.roller_key),
            Event::SeedCommitted(e) => (e.epoch, &e.commitment, &e.commitment_signature, &e.roller_key),
            _ => continue,
        };
        if signature.is_empty() {
            report.find(version, Problem::SignatureMissing { epoch });
            continue;
        }
        if key.is_empty() {
            report.find(version, Problem::RollerKeyMissing { epoch });
            continue;
        }
        let key = match dice::RollerKey::from_bytes(key) {
            Ok(key) => key,
            Err(source) => {
                report.find(version, Problem::RollerKeyMalformed { epoch, source });
                continue;
            }
        };
        match battle_key {
            None => battle_key = Some(key),
            Some(first) if first != key => report
                .find(version, Problem::RollerKeyChanged { epoch, key: key.to_string(), first: first.to_string() }),
            Some(_) => {}
        }
        match trusted {
            [] => {}
            [trusted] if key != *trusted => report.find(
                version,
                Problem::RollerKeyUntrusted { epoch, key: key.to_string(), trusted: trusted.to_string() },
            ),
            keys if !keys.contains(&key) => report.find(
                version,
                Problem::RollerKeyNotAmongTrusted {
                    epoch,
                    key: key.to_string(),
                    trusted: keys.iter().map(ToString::to_string).collect(),
                },
            ),
            _ => {}
        }
        if let Err(source) = key.verify(battle_id, epoch, commitment, signature) {
            report.find(
                version,
                Problem::SignatureInvalid { epoch, commitment: commitment.clone(), key: key.to_string(), source },
            );
        }
    }
    report.roller_key = battle_key.map(|key| key.to_string());
}
