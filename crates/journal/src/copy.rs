//! Copying a journal from one store to another (`battlelog journal copy
//! --from sled:DIR --to jetstream:URL`): the migration path from one
//! machine's sled to a replicated log.
//!
//! A copy is not a replay through the planner: the planner would give every
//! event a new id and commit time, hence new record bytes and a new chain.
//! It hands the destination the source's exact record bytes and hashes,
//! each stream's records in version order at the head the destination has,
//! with the battle state folded from them; the destination assigns its own
//! global positions. Every stream's chain is then verified on both sides
//! and must end in the same head hash.
//!
//! A copy can be resumed: a stream the destination already holds up to some
//! version is continued after it, if its record there has the source's
//! hash; a destination with another history for a stream stops the copy.

use std::collections::{BTreeMap, HashMap};

use crate::chain::{self, ChainCheck};
use crate::error::JournalError;
use crate::guard::BattleState;
use crate::planner::fold_stored;
use crate::record::{self, Hash};
use crate::store::{EventStore, Page, PlannedAppend, PlannedRecord, StoredEvent};

/// Events read from the source per step.
const PAGE: usize = 512;

/// What a copy did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopyReport {
    /// Streams in the source (every one verified on both sides).
    pub streams: u64,
    /// Events written to the destination.
    pub copied: u64,
    /// Events the destination already had (a resumed copy).
    pub present: u64,
}

/// Why a copy stopped.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    /// A store failed.
    #[error("{side}: {source}")]
    Store {
        /// `source` or `destination`.
        side: &'static str,
        /// What it said.
        #[source]
        source: JournalError,
    },
    /// A chain does not verify (or the two sides end differently).
    #[error("stream {stream_id:?}: {problem}")]
    Chain {
        /// The stream.
        stream_id: String,
        /// What is wrong, and where.
        problem: String,
    },
}

fn source(e: impl Into<JournalError>) -> CopyError {
    CopyError::Store { side: "source", source: e.into() }
}

fn destination(e: impl Into<JournalError>) -> CopyError {
    CopyError::Store { side: "destination", source: e.into() }
}

/// Where the destination stands on one stream.
#[derive(Debug, Clone, Copy)]
struct Copied {
    /// The last version it holds.
    version: Option<u64>,
    /// The battle state after it.
    state: Option<BattleState>,
}

/// Appends one page's planned appends to the destination; how many records
/// it took. A destination that moved meanwhile stops the copy.
async fn write_page(to: &dyn EventStore, plans: Vec<PlannedAppend>) -> Result<u64, CopyError> {
    let count: usize = plans.iter().map(|p| p.records.len()).sum();
    let outcomes = to.append(plans.clone()).await.map_err(destination)?;
    for (plan, outcome) in plans.iter().zip(outcomes) {
        if let Err(conflict) = outcome {
            return Err(CopyError::Chain {
                stream_id: plan.stream_id.clone(),
                problem: format!(
                    "the destination moved during the copy: expected its head at {:?}, found {:?}",
                    plan.expected, conflict.actual
                ),
            });
        }
    }
    Ok(count as u64)
}

/// Copies every stream of `from` into `to`, then verifies every chain on
/// both sides.
pub async fn copy(from: &dyn EventStore, to: &dyn EventStore) -> Result<CopyReport, CopyError> {
    let mut report = CopyReport::default();
    let mut streams: HashMap<String, Copied> = HashMap::new();
    let mut cursor = 0u64;
    loop {
        let page = from.read_all(cursor, Page::count(PAGE)).await.map_err(source)?;
        let Some(last) = page.last() else { break };
        cursor = last.global_position + 1;
        let mut plans: Vec<PlannedAppend> = Vec::new();
        for stored in page {
            let stream_id = stored.event.stream_id.clone();
            if !streams.contains_key(&stream_id) {
                let at = resume_point(from, to, &stream_id).await?;
                streams.insert(stream_id.clone(), at);
            }
            let Some(at) = streams.get_mut(&stream_id) else { continue };
            let version = stored.event.version;
            if at.version.is_some_and(|v| version <= v) {
                report.present += 1;
                continue;
            }
            if version != at.version.map_or(0, |v| v + 1) {
                return Err(CopyError::Chain {
                    stream_id,
                    problem: format!("the source's global log skips to version {version}"),
                });
            }
            let state = fold_stored(at.state, &stored.event, stored.record.len()).map_err(|v| CopyError::Chain {
                stream_id: stream_id.clone(),
                problem: format!("version {version} does not fold as a battle: {}: {}", v.rule.reason(), v.message),
            })?;
            // Consecutive records of one stream go in one planned append.
            match plans.last_mut() {
                Some(plan) if plan.stream_id == stream_id && plan.last_version() + 1 == version => {
                    plan.records.push(planned_record(stored));
                    plan.state = state;
                }
                _ => plans.push(PlannedAppend {
                    stream_id,
                    expected: at.version,
                    records: vec![planned_record(stored)],
                    state,
                }),
            }
            *at = Copied { version: Some(version), state: Some(state) };
        }
        report.copied += write_page(to, plans).await?;
    }
    let ids: BTreeMap<_, _> = streams.into_iter().collect();
    for stream_id in ids.keys() {
        let (a, b) = (
            chain::check(from, stream_id).await.map_err(source)?,
            chain::check(to, stream_id).await.map_err(destination)?,
        );
        match (&a, &b) {
            (ChainCheck::Ok { count: n, head_hash: h }, ChainCheck::Ok { count: m, head_hash: k })
                if n == m && h == k => {}
            _ => {
                return Err(CopyError::Chain {
                    stream_id: stream_id.clone(),
                    problem: format!("source {a:?}, destination {b:?}"),
                });
            }
        }
    }
    report.streams = ids.len() as u64;
    Ok(report)
}

fn planned_record(stored: StoredEvent) -> PlannedRecord {
    let key = (!stored.event.idempotency_key.is_empty()).then(|| {
        (stored.event.idempotency_key.clone(), record::fingerprint(&stored.event.event_type, &stored.event.payload))
    });
    PlannedRecord { bytes: stored.record, hash: stored.hash, key }
}

/// Where to continue a stream: after the destination's head, if that
/// record is the source's (same hash); a new stream starts at version 0.
async fn resume_point(from: &dyn EventStore, to: &dyn EventStore, stream_id: &str) -> Result<Copied, CopyError> {
    let Some(head) = to.head(stream_id).await.map_err(destination)? else {
        return Ok(Copied { version: None, state: None });
    };
    let theirs: Option<Hash> =
        from.read_stream(stream_id, head.version, Page::count(1)).await.map_err(source)?.first().map(|e| e.hash);
    if theirs != Some(head.hash) {
        return Err(CopyError::Chain {
            stream_id: stream_id.to_owned(),
            problem: format!("the destination holds another history (its version {} differs)", head.version),
        });
    }
    let state = match head.state {
        Some(state) => state,
        None => {
            return Err(CopyError::Chain {
                stream_id: stream_id.to_owned(),
                problem: "the destination's head has no battle state".into(),
            });
        }
    };
    Ok(Copied { version: Some(head.version), state: Some(state) })
}

/// A store named on a command line: `sled:DIR` or `jetstream:URL[,URL…]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreSpec {
    /// A sled directory (a stopped journal's `data_dir`).
    Sled(std::path::PathBuf),
    /// A NATS JetStream log, by its servers' URLs.
    JetStream(Vec<String>),
}

impl std::str::FromStr for StoreSpec {
    type Err = String;

    fn from_str(spec: &str) -> Result<Self, String> {
        match spec.split_once(':') {
            Some(("sled", dir)) if !dir.is_empty() => Ok(StoreSpec::Sled(dir.into())),
            Some(("jetstream", urls)) if !urls.is_empty() => {
                // Read as every NATS URL list is, so that a bad entry is named here.
                battlelog_runtime::nats_url::NatsUrls::parse(urls).map_err(|e| format!("jetstream: {e}"))?;
                Ok(StoreSpec::JetStream(
                    urls.split(',').map(str::trim).filter(|u| !u.is_empty()).map(str::to_owned).collect(),
                ))
            }
            _ => Err(format!("{spec:?} is not sled:DIR or jetstream:URL[,URL...]")),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::limits::ExpectedVersion;
    use crate::store::MemoryStore;
    use crate::store::conformance::{journal_on, keyed, opened, resolved, rolled};

    /// Everything arrives byte for byte, keys still deduplicate, a second run
    /// copies nothing, and a destination with another history is refused.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_copy_is_exact_resumable_and_refuses_another_history() {
        let from: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
        let to: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
        let j = journal_on(from.clone()).await;
        j.append("a".into(), ExpectedVersion::NoStream, vec![keyed(opened("t"), "open-a"), rolled(0, 0)])
            .await
            .unwrap();
        j.append("b".into(), ExpectedVersion::NoStream, vec![opened("")]).await.unwrap();
        j.append("a".into(), ExpectedVersion::Any, vec![resolved("x")]).await.unwrap();

        let report = copy(&*from, &*to).await.unwrap();
        assert_eq!(report, CopyReport { streams: 2, copied: 4, present: 0 });
        for stream in ["a", "b"] {
            let a = from.read_stream(stream, 0, Page::count(100)).await.unwrap();
            let b = to.read_stream(stream, 0, Page::count(100)).await.unwrap();
            let bytes = |events: &[StoredEvent]| events.iter().map(|e| (e.record.clone(), e.hash)).collect::<Vec<_>>();
            assert_eq!(bytes(&a), bytes(&b), "{stream}: the same records and hashes");
        }
        // The copy is a working journal: keys, guard state and heads came along.
        let copied = journal_on(to.clone()).await;
        let repeat =
            copied.append("a".into(), ExpectedVersion::NoStream, vec![keyed(opened("t"), "open-a")]).await.unwrap();
        assert!(repeat.deduplicated);
        let next = copied.append("a".into(), ExpectedVersion::Exact(2), vec![rolled(0, 1)]).await.unwrap();
        assert_eq!(next.events[0].version, 3, "the next nonce is 1 in the copy too");

        // Resumed: the source grew; only the new events go.
        j.append("b".into(), ExpectedVersion::Any, vec![resolved("y")]).await.unwrap();
        let more = copy(&*from, &*to).await;
        assert!(matches!(more, Err(CopyError::Chain { ref stream_id, .. }) if stream_id == "a"), "{more:?}");
        let fresh: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
        copy(&*from, &*fresh).await.unwrap();
        j.append("b".into(), ExpectedVersion::Any, vec![resolved("z")]).await.unwrap();
        assert_eq!(copy(&*from, &*fresh).await.unwrap(), CopyReport { streams: 2, copied: 1, present: 5 });
        j.shutdown().await.unwrap();
        copied.shutdown().await.unwrap();
    }
}
