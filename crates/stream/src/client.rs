//! [`StreamClient`]: the journal calls a fold needs, and nothing else.

use battlelog_auth::AuthChannel;
use battlelog_proto::v1::journal_client::JournalClient;
use battlelog_proto::v1::{
    AppendRequest, AppendedEvent, Checkpoint, ExpectedVersion, JournalRecord, NewEvent, ReadStreamRequest,
    ReadStreamResponse, RecordedEvent, expected_version,
};

use crate::Fold;
use crate::batch::{AppendLimits, AppendQueue};
use crate::error::StreamError;
use crate::metrics::CacheMetrics;

/// What an append wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Appended {
    /// One per requested event, in request order: version, hash, time.
    pub events: Vec<AppendedEvent>,
    /// Every key was a repeat: nothing was written, and `events` is what the
    /// first append of these keys wrote, wherever that was in the stream.
    pub deduplicated: bool,
    /// The journal's newest signed checkpoint when it replied (docs/protocol.md
    /// §5); it need not cover these events yet. `None` before the first one.
    pub checkpoint: Option<Checkpoint>,
}

impl Appended {
    /// Whether the events were written now, right after `head` (`None`: the
    /// stream was empty), so that the appender may fold them itself from
    /// what it sent instead of reading them back.
    pub fn follows(&self, head: Option<u64>) -> bool {
        let first = head.map_or(0, |h| h + 1);
        !self.deduplicated && self.events.iter().enumerate().all(|(i, e)| e.version == first + i as u64)
    }
}

/// A battle stream reader and writer over the journal's gRPC API.
#[derive(Debug, Clone)]
pub struct StreamClient {
    journal: JournalClient<AuthChannel>,
    appends: AppendQueue,
    metrics: CacheMetrics,
}

impl StreamClient {
    /// A client of `journal` that batches appends within the default
    /// [`AppendLimits`] ([`AppendQueue`]).
    pub fn new(journal: JournalClient<AuthChannel>) -> Self {
        let appends = AppendQueue::new(journal.clone(), AppendLimits::default());
        Self { journal, appends, metrics: CacheMetrics::default() }
    }

    /// The same client sending its appends within `limits` (a service's
    /// `journal_append_batch` and `journal_append_calls`).
    pub fn with_append_limits(mut self, limits: AppendLimits) -> Self {
        self.appends = AppendQueue::new(self.journal.clone(), limits);
        self
    }

    /// The same client counting its catch-up reads into `metrics`.
    pub fn with_metrics(mut self, metrics: CacheMetrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// Folds into `state` what the journal holds past it, up to the head the
    /// journal reports with each page: one read when the stream fits in a
    /// page, and no read of an empty page past the head. A record that does
    /// not fold leaves `state` empty (the next command starts afresh) and is
    /// [`StreamError::Fold`].
    pub async fn catch_up<S: Fold>(&self, stream_id: &str, state: &mut S) -> Result<(), StreamError> {
        loop {
            self.metrics.catch_up_read();
            let page = self.page(stream_id, state.next_version(), 0).await?;
            let fetched = page.events.len();
            for recorded in page.events {
                let Some(record) = recorded.event else {
                    return Err(StreamError::Journal(
                        battlelog_proto::error::Error::internal("journal sent an event without its record")
                            .into_status(),
                    ));
                };
                if let Err(error) = state.apply(&record) {
                    *state = S::default();
                    return Err(StreamError::Fold { stream_id: stream_id.to_owned(), message: error.to_string() });
                }
            }
            // Done at the head; an empty page would only repeat that.
            match page.head_version {
                Some(head) if state.next_version() <= head && fetched > 0 => continue,
                _ => return Ok(()),
            }
        }
    }

    /// Appends `events` after `head` (`None`: the stream must not exist yet).
    pub async fn append(
        &self,
        stream_id: &str,
        head: Option<u64>,
        events: Vec<NewEvent>,
    ) -> Result<Appended, StreamError> {
        let kind = match head {
            Some(version) => expected_version::Kind::Exact(version),
            None => expected_version::Kind::NoStream(Default::default()),
        };
        let request = AppendRequest {
            stream_id: stream_id.to_owned(),
            expected_version: Some(ExpectedVersion { kind: Some(kind) }),
            events,
        };
        let response = self.appends.append(request).await.map_err(|s| StreamError::from_status(stream_id, s))?;
        Ok(Appended { events: response.events, deduplicated: response.deduplicated, checkpoint: response.checkpoint })
    }

    /// The records at versions `from..=to` (fewer when the stream ends
    /// sooner): for the rare paths that need an old record as it was
    /// journaled, which no cache keeps.
    pub async fn records(&self, stream_id: &str, from: u64, to: u64) -> Result<Vec<JournalRecord>, StreamError> {
        let mut records = Vec::new();
        let mut next = from;
        while next <= to {
            let wanted = u32::try_from(to - next + 1).unwrap_or(u32::MAX);
            let page = self.page(stream_id, next, wanted).await?;
            if page.events.is_empty() {
                break;
            }
            for record in page.events.into_iter().filter_map(|e| e.event) {
                if record.version > to {
                    break;
                }
                next = record.version + 1;
                records.push(record);
            }
        }
        Ok(records)
    }

    /// One page of the stream from `from_version`, as stored (record bytes
    /// and hashes), with the head the journal reports; `max_count` 0 is the
    /// journal's own page size. The one read every other read here is made
    /// of.
    pub async fn page(
        &self,
        stream_id: &str,
        from_version: u64,
        max_count: u32,
    ) -> Result<ReadStreamResponse, StreamError> {
        let request = ReadStreamRequest { stream_id: stream_id.to_owned(), from_version, max_count };
        let response =
            self.journal.clone().read_stream(request).await.map_err(|s| StreamError::from_status(stream_id, s))?;
        Ok(response.into_inner())
    }

    /// Every stored event from `from_version` to the head the journal
    /// reports, page by page, with no empty read past the head: what an
    /// audit checks byte for byte.
    pub async fn recorded(&self, stream_id: &str, from_version: u64) -> Result<Vec<RecordedEvent>, StreamError> {
        let mut events: Vec<RecordedEvent> = Vec::new();
        loop {
            let next = from_version + events.len() as u64;
            let page = self.page(stream_id, next, 0).await?;
            let fetched = page.events.len();
            events.extend(page.events);
            match page.head_version {
                Some(head) if from_version + (events.len() as u64) <= head && fetched > 0 => continue,
                _ => return Ok(events),
            }
        }
    }
}
