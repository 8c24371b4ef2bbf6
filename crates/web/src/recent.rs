//! The battles a page read last, kept for the export the page's verifier
//! asks for a moment later (issue 39). Without them every battle page read
//! its battle twice from the resolver, once for the page and once for its
//! `export.jsonl`, and the second read, paged through the resolver and the
//! journal while the browser was busy with the page, was what the page's
//! check waited on. The file is written once, while the page is drawn (the
//! machine is then waiting for the browser, not the other way round).
//!
//! Nothing here decides who may read: an export answered from here is
//! answered only after the resolver has admitted the caller for that battle
//! anew (`GetBattle`, the same refusals as `Export`), and only while the
//! battle's head is still the version kept (a battle that moved on is read
//! again). Bounded by the files' bytes (config key `recent_exports_bytes`;
//! 0 keeps none): the oldest go first, and a file bigger than the bound is
//! not kept.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use battlelog_verify::export;
use sha2::Digest;
use tokio::sync::watch;

use crate::error::PageError;
use crate::source::Export;

/// A battle's `export.jsonl` as served: its text, the head it ends at and
/// the text's ETag, and, once kept for a page, the same text compressed
/// with brotli (compressing 3 MB on the request's path was most of what a
/// big battle's check waited for).
#[derive(Debug)]
pub struct ExportFile {
    pub text: Bytes,
    pub etag: String,
    /// The version of its last event (None: no event at all).
    pub head_version: Option<u64>,
    /// `text` as brotli (quality 4, as the service's compression layer).
    pub brotli: Option<Bytes>,
}

/// Brotli's quality and window for a kept export: the compression layer's
/// own (tower-http's default), so the bytes cost what they would have.
const BROTLI_QUALITY: u32 = 4;
const BROTLI_WINDOW_BITS: u32 = 22;

impl ExportFile {
    /// `export` of `battle_id` as its file: the lines, then the trailer
    /// when the journal signed the head (what a judge downloads is what
    /// the page checked).
    pub fn write(battle_id: &str, export: &Export) -> Result<Self, PageError> {
        let cannot_write = |e: serde_json::Error| PageError::Internal(format!("cannot write the export: {e}"));
        let mut text = export::write(battle_id, &export.events).map_err(cannot_write)?;
        text.push('\n');
        if let Some(head) = &export.signed_head {
            text.push_str(&export::trailer_line(&export::trailer_from(head)).map_err(cannot_write)?);
            text.push('\n');
        }
        let etag = format!("\"{}\"", hex::encode(&sha2::Sha256::digest(text.as_bytes())[..16]));
        let head_version = export.events.last().and_then(|e| e.event.as_ref()).map(|record| record.version);
        Ok(Self { text: Bytes::from(text), etag, head_version, brotli: None })
    }

    /// The same, with its brotli form (for a file to keep).
    pub fn compressed(mut self) -> Self {
        let mut writer = brotli::CompressorWriter::new(Vec::new(), 64 * 1024, BROTLI_QUALITY, BROTLI_WINDOW_BITS);
        // Writing to a Vec cannot fail.
        if std::io::Write::write_all(&mut writer, &self.text).is_ok() {
            self.brotli = Some(Bytes::from(writer.into_inner()));
        }
        self
    }

    /// What it weighs kept: its text and its compressed form.
    fn bytes(&self) -> usize {
        self.text.len() + self.brotli.as_ref().map_or(0, Bytes::len)
    }
}

/// Whether an `Accept-Encoding` header admits brotli (`br`, not at `q=0`).
pub fn accepts_brotli(accept_encoding: &str) -> bool {
    accept_encoding.split(',').any(|coding| {
        let mut parts = coding.split(';').map(str::trim);
        let name = parts.next().unwrap_or_default();
        let refused =
            parts.any(|p| p.strip_prefix("q=").and_then(|q| q.trim().parse::<f32>().ok()).is_some_and(|q| q <= 0.0));
        name.eq_ignore_ascii_case("br") && !refused
    })
}

/// The battles read last, newest at the back, within `max_bytes`.
#[derive(Clone, Default)]
pub struct RecentExports {
    max_bytes: usize,
    kept: Arc<Mutex<Kept>>,
}

#[derive(Default)]
struct Kept {
    entries: VecDeque<Entry>,
    bytes: usize,
    /// Files being written for a page just sent (at most one a battle):
    /// an export asked for meanwhile waits for its file, not for a read.
    pending: Vec<(String, u64, FileBeingWritten)>,
}

/// Where a file being written arrives (None until it does).
type FileBeingWritten = watch::Receiver<Option<Arc<ExportFile>>>;

/// A file promised for a battle at a head: [`Promise::fulfil`] keeps it
/// and hands it to whoever waits; dropped unfulfilled, those read again.
#[derive(Debug)]
pub struct Promise {
    recent: RecentExports,
    battle_id: String,
    head_version: u64,
    sender: watch::Sender<Option<Arc<ExportFile>>>,
}

impl Promise {
    /// Keeps `file` and hands it to the exports waiting for it.
    pub fn fulfil(self, file: ExportFile) {
        let file = Arc::new(file);
        self.recent.keep(&self.battle_id, Arc::clone(&file));
        self.sender.send_replace(Some(file));
    }
}

impl Drop for Promise {
    fn drop(&mut self) {
        let mut kept = self.recent.lock();
        kept.pending.retain(|(battle, head, _)| !(battle == &self.battle_id && *head == self.head_version));
    }
}

struct Entry {
    battle_id: String,
    file: Arc<ExportFile>,
}

impl RecentExports {
    /// Keeping at most `max_bytes` of export text (0: none).
    pub fn new(max_bytes: usize) -> Self {
        Self { max_bytes, kept: Arc::default() }
    }

    /// What is kept (a panic elsewhere while holding it leaves it usable:
    /// it is a cache, checked against the resolver at every use).
    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether anything is kept at all (a bound of 0 keeps nothing).
    pub fn enabled(&self) -> bool {
        self.max_bytes > 0
    }

    /// Keeps `file` of `battle_id` (replacing an older one), unless it
    /// alone is bigger than the bound or holds no event; the oldest go to
    /// make room.
    pub fn keep(&self, battle_id: &str, file: Arc<ExportFile>) {
        let bytes = file.bytes();
        if bytes > self.max_bytes || file.head_version.is_none() {
            return;
        }
        let mut kept = self.lock();
        kept.remove(battle_id);
        while kept.bytes + bytes > self.max_bytes {
            let Some(oldest) = kept.entries.pop_front() else { break };
            kept.bytes -= oldest.file.bytes();
        }
        kept.bytes += bytes;
        kept.entries.push_back(Entry { battle_id: battle_id.to_owned(), file });
    }

    /// The export of `battle_id` kept, if it ends at `head_version` (the
    /// battle's head as the resolver just said it).
    pub fn at_head(&self, battle_id: &str, head_version: u64) -> Option<Arc<ExportFile>> {
        let kept = self.lock();
        let entry = kept.entries.iter().find(|e| e.battle_id == battle_id)?;
        (entry.file.head_version == Some(head_version)).then(|| Arc::clone(&entry.file))
    }

    /// Whether an export of `battle_id` is kept or being written (at whatever head).
    pub fn holds(&self, battle_id: &str) -> bool {
        let kept = self.lock();
        kept.entries.iter().any(|e| e.battle_id == battle_id) || kept.pending.iter().any(|(b, _, _)| b == battle_id)
    }

    /// A promise of the file of `battle_id` at `head_version`, being
    /// written: until it is fulfilled (or dropped), [`Self::wait_at_head`]
    /// waits for it.
    pub fn promise(&self, battle_id: &str, head_version: u64) -> Promise {
        let (sender, receiver) = watch::channel(None);
        let mut kept = self.lock();
        kept.pending.retain(|(battle, _, _)| battle != battle_id);
        kept.pending.push((battle_id.to_owned(), head_version, receiver));
        drop(kept);
        Promise { recent: self.clone(), battle_id: battle_id.to_owned(), head_version, sender }
    }

    /// The export of `battle_id` at `head_version`: kept, or, while one is
    /// being written for a page, once it is (None: neither, or its writing
    /// failed).
    pub async fn wait_at_head(&self, battle_id: &str, head_version: u64) -> Option<Arc<ExportFile>> {
        if let Some(file) = self.at_head(battle_id, head_version) {
            return Some(file);
        }
        let mut receiver = {
            let kept = self.lock();
            let (_, _, receiver) = kept.pending.iter().find(|(b, h, _)| b == battle_id && *h == head_version)?;
            receiver.clone()
        };
        receiver.wait_for(Option::is_some).await.ok().and_then(|arrived| arrived.clone())
    }
}

impl std::fmt::Debug for RecentExports {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = self.lock();
        f.debug_struct("RecentExports")
            .field("max_bytes", &self.max_bytes)
            .field("battles", &kept.entries.len())
            .field("bytes", &kept.bytes)
            .finish()
    }
}

impl Kept {
    fn remove(&mut self, battle_id: &str) {
        if let Some(at) = self.entries.iter().position(|e| e.battle_id == battle_id) {
            let gone = self.entries.remove(at).map_or(0, |e| e.file.bytes());
            self.bytes -= gone;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use battlelog_proto::v1::{JournalRecord, RecordedEvent};

    /// A file of `versions`, `bytes` long.
    fn export_of(versions: std::ops::Range<u64>, bytes: usize) -> Arc<ExportFile> {
        let head_version = versions.end.checked_sub(1).filter(|_| !versions.is_empty());
        Arc::new(ExportFile { text: Bytes::from(vec![b'x'; bytes]), etag: String::new(), head_version, brotli: None })
    }

    #[test]
    fn a_file_is_the_export_as_a_judge_downloads_it() {
        let events = (0..2)
            .map(|version| RecordedEvent {
                record: vec![7; 3],
                event: Some(JournalRecord { version, stream_id: "b-1".into(), ..Default::default() }),
                ..Default::default()
            })
            .collect();
        let export = Export { events, signed_head: None };
        let file = ExportFile::write("b-1", &export).expect("written");
        assert_eq!(file.head_version, Some(1));
        let text = std::str::from_utf8(&file.text).expect("UTF-8");
        assert_eq!(text, format!("{}\n", export::write("b-1", &export.events).expect("lines")));
        assert_eq!(file.etag.len(), 34, "a quoted 128-bit hex tag: {}", file.etag);
        let empty = ExportFile::write("b-1", &Export::default()).expect("written");
        assert_eq!(empty.head_version, None);
        // Its brotli form gives the same text back (decoded by the crate's
        // own decoder, not by the code under test).
        let file = file.compressed();
        let packed = file.brotli.clone().expect("compressed");
        let mut unpacked = Vec::new();
        std::io::Read::read_to_end(&mut brotli::Decompressor::new(&packed[..], 4096), &mut unpacked).expect("brotli");
        assert_eq!(unpacked, file.text.to_vec());
        assert_eq!(file.bytes(), file.text.len() + packed.len());
    }

    #[tokio::test]
    async fn an_export_asked_for_while_its_file_is_written_waits_for_it() {
        let recent = RecentExports::new(1 << 20);
        let promise = recent.promise("b-1", 1);
        assert!(recent.holds("b-1"));
        let waiting = tokio::spawn({
            let recent = recent.clone();
            async move { recent.wait_at_head("b-1", 1).await }
        });
        // Another head is not waited for.
        assert!(recent.wait_at_head("b-1", 2).await.is_none());
        let file = Arc::try_unwrap(export_of(0..2, 10)).expect("one owner");
        promise.fulfil(file);
        let got = waiting.await.expect("joined").expect("the file");
        assert_eq!(got.head_version, Some(1));
        assert!(recent.at_head("b-1", 1).is_some(), "and kept");
        // A promise dropped unfulfilled (its writing failed): the waiter
        // reads again, and nothing is held.
        let promise = recent.promise("b-2", 0);
        let waiting = tokio::spawn({
            let recent = recent.clone();
            async move { recent.wait_at_head("b-2", 0).await }
        });
        drop(promise);
        assert!(waiting.await.expect("joined").is_none());
        assert!(!recent.holds("b-2"));
    }

    #[test]
    fn brotli_is_sent_only_to_a_client_that_admits_it() {
        for (header, admits) in [
            ("gzip, deflate, br, zstd", true),
            ("br", true),
            ("BR;q=0.5", true),
            ("gzip, br;q=0", false),
            ("br; q=0.0", false),
            ("gzip", false),
            ("", false),
            ("brotli, gzip", false),
        ] {
            assert_eq!(accepts_brotli(header), admits, "{header:?}");
        }
    }

    #[test]
    fn an_export_is_answered_only_at_the_head_it_ends_at() {
        let recent = RecentExports::new(1 << 20);
        recent.keep("b-1", export_of(0..3, 10));
        assert!(recent.at_head("b-1", 2).is_some());
        assert!(recent.at_head("b-1", 3).is_none(), "the battle moved on: read it again");
        assert!(recent.at_head("b-1", 1).is_none());
        assert!(recent.at_head("b-2", 2).is_none());
        // A newer read replaces the older one.
        recent.keep("b-1", export_of(0..4, 10));
        assert!(recent.at_head("b-1", 3).is_some() && recent.at_head("b-1", 2).is_none());
    }

    #[test]
    fn the_bound_holds_at_its_edge_and_the_oldest_go_first() {
        let one = 100;
        // Exactly the bound: kept; one byte over: not.
        let recent = RecentExports::new(one);
        recent.keep("b-1", export_of(0..2, 100));
        assert!(recent.holds("b-1"));
        let recent = RecentExports::new(one - 1);
        recent.keep("b-1", export_of(0..2, 100));
        assert!(!recent.holds("b-1"));
        // Room for two: a third pushes out the oldest.
        let recent = RecentExports::new(2 * one);
        for battle in ["b-1", "b-2", "b-3"] {
            recent.keep(battle, export_of(0..2, 100));
        }
        assert!(!recent.holds("b-1") && recent.holds("b-2") && recent.holds("b-3"));
        // 0 keeps nothing.
        let recent = RecentExports::new(0);
        recent.keep("b-1", export_of(0..1, 1));
        assert!(!recent.enabled() && !recent.holds("b-1"));
        // An export of no event is not kept (there is no head to match).
        let recent = RecentExports::new(1 << 20);
        recent.keep("b-1", export_of(0..0, 1));
        assert!(!recent.holds("b-1"));
    }
}
