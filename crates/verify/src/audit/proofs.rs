//! The audit's half of docs/protocol.md §5: the export's trailer checked with
//! [`Trailer::check`] against the export's last event and the log key the
//! auditor trusts, and a checkpoint the auditor kept earlier held against
//! the export's by a consistency proof. Each failure is a finding naming
//! what failed; an export without a trailer gets a notice, and a finding
//! only when the auditor demands a trailer.

use battlelog_tlog::{Checkpoint, KeptCheckpoint, StreamHead, Trailer, TrailerError, VerifierKey, verify_consistency};
use serde::Serialize;

use super::{AuditReport, AuditedRecord, Problem};

/// What an export without a trailer is told: the §4 checks still hold,
/// but nothing shows that no event is missing at the end.
pub const NO_TRAILER: &str = "no trailer: verified only as far as §4 (an export cut short is not detectable)";

/// What the auditor holds of the journal's transparency log.
#[derive(Debug, Clone, Copy, Default)]
pub struct LogTrust<'a> {
    /// The log's verifier key as the operator publishes it: the trailer
    /// must name exactly this one.
    pub log_key: Option<&'a VerifierKey>,
    /// A missing trailer is a finding, not a notice (the auditor pinned a
    /// log key, so it expects the log's word on the export's end).
    pub require_trailer: bool,
}

/// What a trailer that checked proved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TrailerSeen {
    /// The log key the trailer names (its text form).
    pub log_key: String,
    /// Whether that key is the one the auditor trusts (`false`: none was given).
    pub log_key_pinned: bool,
    /// The checkpoint the head is proved in.
    pub tree_size: u64,
    /// Its root hash, lowercase hex.
    pub root_hash: String,
    /// The head record's place in the global log.
    pub leaf_index: u64,
    /// The head the journal signed: the export's last version.
    pub head_version: u64,
}

/// A kept checkpoint the export's checkpoint was proved consistent with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConsistencySeen {
    pub kept_size: u64,
    pub tree_size: u64,
}

/// The export's last event as the head a trailer must sign: `None` when it
/// has no events or its last hash is not 32 bytes (the chain check has
/// already said so).
fn last_event(lines: &[AuditedRecord]) -> Option<StreamHead> {
    let last = lines.last()?;
    let hash = <[u8; 32]>::try_from(last.hash.as_slice()).ok()?;
    Some(StreamHead { stream_id: last.stream.clone(), version: last.version, hash })
}

/// The finding for a trailer that does not check.
fn problem(error: TrailerError) -> Problem {
    match error {
        TrailerError::Malformed { field, message } => Problem::TrailerMalformed { field, message },
        TrailerError::LogKeyNotTrusted { found, trusted } => Problem::TrailerLogKeyNotTrusted { found, trusted },
        TrailerError::CheckpointSignature(message) => Problem::TrailerCheckpointSignature(message),
        error @ (TrailerError::HeadNotLastEvent { .. }
        | TrailerError::HeadStreamNotLastEvent { .. }
        | TrailerError::HeadHashNotLastEvent { .. }) => Problem::TrailerHeadNotLastEvent(error.to_string()),
        TrailerError::HeadSignature => Problem::TrailerHeadSignature,
        TrailerError::InclusionProof(error) => {
            Problem::TrailerInclusionProof { leaf_index: 0, message: error.to_string() }
        }
    }
}

/// Checks `trailer` (docs/protocol.md §5) against the export's `lines` and what
/// the auditor `trust`s, into `report`: a finding for each failure, the
/// trailer's proof in [`AuditReport::trailer`] when it checks, or the
/// [`NO_TRAILER`] notice (a finding when `trust.require_trailer`). Returns
/// the checkpoint the trailer proved the head in, for a consistency check
/// against a kept one.
pub fn check_trailer(
    report: &mut AuditReport,
    lines: &[AuditedRecord],
    trailer: Option<&Trailer>,
    trust: &LogTrust<'_>,
) -> Option<Checkpoint> {
    let at = lines.last().map_or(0, |line| line.version);
    let Some(trailer) = trailer else {
        if trust.require_trailer {
            report.find(at, Problem::TrailerMissing);
        } else {
            report.notices.push(NO_TRAILER.to_owned());
        }
        return None;
    };
    match trailer.check(last_event(lines).as_ref(), trust.log_key) {
        Ok(checkpoint) => {
            report.trailer = Some(TrailerSeen {
                log_key: trailer.log_key.clone(),
                log_key_pinned: trust.log_key.is_some(),
                tree_size: checkpoint.size,
                root_hash: hex::encode(checkpoint.root),
                leaf_index: trailer.leaf_index,
                head_version: trailer.head.version,
            });
            Some(checkpoint)
        }
        Err(error) => {
            let problem = match problem(error) {
                Problem::TrailerInclusionProof { message, .. } => {
                    Problem::TrailerInclusionProof { leaf_index: trailer.leaf_index, message }
                }
                other => other,
            };
            report.find(at, problem);
            None
        }
    }
}

/// The sizes a consistency proof between a kept checkpoint and the
/// export's runs between, older first: a judge may have kept one newer
/// than the export's, and the proof then runs the other way.
pub fn consistency_sizes(kept_size: u64, tree_size: u64) -> (u64, u64) {
    (kept_size.min(tree_size), kept_size.max(tree_size))
}

/// Holds `checkpoint` (the one the export's trailer proved) to `kept`, a
/// checkpoint the auditor kept earlier, with `proof` between their sizes
/// ([`consistency_sizes`]): a proof that fails means the log was rewritten
/// since (a finding at the export's last version); one that holds is in
/// [`AuditReport::consistency`].
pub fn check_consistency(
    report: &mut AuditReport,
    lines: &[AuditedRecord],
    kept: &KeptCheckpoint,
    checkpoint: &Checkpoint,
    proof: &[battlelog_tlog::Hash],
) {
    let at = lines.last().map_or(0, |line| line.version);
    let checked = if kept.size <= checkpoint.size {
        verify_consistency(kept.size, &kept.root, checkpoint.size, &checkpoint.root, proof)
    } else {
        verify_consistency(checkpoint.size, &checkpoint.root, kept.size, &kept.root, proof)
    };
    match checked {
        Ok(()) => report.consistency = Some(ConsistencySeen { kept_size: kept.size, tree_size: checkpoint.size }),
        Err(error) => report.find(
            at,
            Problem::LogRewritten { kept_size: kept.size, size: checkpoint.size, message: error.to_string() },
        ),
    }
}

/// A kept checkpoint the log cannot be held to because it no longer reaches
/// it: asked for a consistency proof up to the kept size, the log answered
/// that it holds fewer records, or that its store is behind what it signed
/// (`why`, as it said it). A finding, as a rewrite is: the judge's
/// checkpoint is not matched by the log shown.
pub fn log_short(report: &mut AuditReport, lines: &[AuditedRecord], kept: &KeptCheckpoint, why: &str) {
    let at = lines.last().map_or(0, |line| line.version);
    report.find(at, Problem::LogShort { kept_size: kept.size, message: why.to_owned() });
}

/// A kept checkpoint that cannot be held to the export's: the export has
/// no trailer that checked, so there is no checkpoint of its to compare.
pub fn consistency_unchecked(report: &mut AuditReport, lines: &[AuditedRecord], why: &str) {
    let at = lines.last().map_or(0, |line| line.version);
    report.find(at, Problem::KeptCheckpointUnchecked(why.to_owned()));
}
