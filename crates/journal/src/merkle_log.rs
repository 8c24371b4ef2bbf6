//! The journal's transparency log (docs/protocol.md §5): an RFC 6962 Merkle tree
//! over the store's global log, signed checkpoints of it, inclusion and
//! consistency proofs, and signed stream heads.
//!
//! It sits above the storage seam, so sled, memory and JetStream stores all
//! get it alike: a follower reads the store's global log in order
//! ([`EventStore::read_all`] from the next position, woken by
//! [`EventStore::changes`]) and pushes `leaf_hash(stream, version, h(version))`
//! of each record into a [`battlelog_tlog::Tree`], keeping each leaf's global
//! position beside it. Leaf *i* is the *i*-th record in global order; a
//! JetStream store's positions are sparse, so a leaf index is not a global
//! position, and the positions (sorted, as the log is read in order) are
//! binary-searched.
//!
//! Nothing of it is stored: the tree is rebuilt from the global log at
//! start, before the journal takes calls (reading the whole log once), and
//! needs in memory per record about the tree's stored hashes (two 32-byte
//! hashes) plus 8 bytes for its position. The store shows only durable
//! records, so every checkpoint covers durable records only, and the tree
//! rebuilt after a crash extends every checkpoint issued before it: the
//! consistency proofs from them verify. A record that does not read back
//! (lost on disk) stops the tree before it without stopping the journal,
//! whose `VerifyChain` must still be there to name the break.
//!
//! Checkpoints: a task signs a new one every `checkpoint_interval_ms` while
//! the tree has grown since the last; the newest is kept in memory, and one
//! is signed right after the rebuild at start. With a file to keep it in
//! ([`TransparencyOptions::kept_checkpoint`], [`crate::kept`]) each is written
//! there before anyone sees it, and the tree rebuilt at start is held to the
//! one kept: a store behind it (lost records, or another log) takes no
//! appends and gets no checkpoint, proof or signed head until it holds that
//! log again or the operator accepts the loss. A signed head needs a
//! checkpoint that holds the head's record: one is issued on demand, once
//! the follower has reached that record.
//!
//! The log key comes from the configuration ([`crate::config::Config::log_key`]);
//! embedders pass it in [`TransparencyOptions`], or let `Journal::open` keep
//! one in `<data_dir>/log.key`.

use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

pub use battlelog_tlog::DEFAULT_ORIGIN;
use battlelog_tlog::{Checkpoint, Hash, LogKey, Tree, VerifierKey};
use tokio::sync::watch;
use tracing::{error, info, warn};

use crate::error::JournalError;
use crate::kept::{self, StoreBehind};
use crate::limits;
use crate::metrics::JournalMetrics;
use crate::store::{EventStore, StoredEvent};

/// How long a signed head waits for the follower to reach the head's record
/// before answering UNAVAILABLE: many checkpoint intervals, so that only a
/// follower held up (a record that does not read back, a log out of reach,
/// or the battle index it also feeds, when that must read a long stretch of
/// the log itself) ever meets it.
pub const FOLLOW_WAIT: Duration = Duration::from_secs(10);

/// The default of `checkpoint_interval_ms`: docs/protocol.md §5 promises a new
/// checkpoint at least every second while the log grows.
pub const DEFAULT_CHECKPOINT_INTERVAL: Duration = Duration::from_millis(1000);

/// The allowed `checkpoint_interval_ms`: below 10 ms signing would be most
/// of the work; above a minute a judge waits too long for a proof.
pub const CHECKPOINT_INTERVAL_MS: RangeInclusive<u64> = 10..=60_000;

/// The longest origin `log_origin` may be, in bytes.
pub const MAX_ORIGIN_BYTES: usize = 255;

/// Checks a log origin: non-empty, at most [`MAX_ORIGIN_BYTES`], and no
/// space, `+` or newline (the signed-note key and signature line formats).
pub fn check_origin(origin: &str) -> Result<(), String> {
    if origin.is_empty() {
        return Err("must not be empty".into());
    }
    if origin.len() > MAX_ORIGIN_BYTES {
        return Err(format!("is {} bytes; at most {MAX_ORIGIN_BYTES}", origin.len()));
    }
    if let Some(c) = origin.chars().find(|c| c.is_whitespace() || *c == '+' || c.is_control()) {
        return Err(format!("{origin:?} holds {c:?}: no spaces, `+` or newlines"));
    }
    Ok(())
}

/// Reads a signed-note private key file (`PRIVATE+KEY+<origin>+…`).
pub fn read_key_file(path: &Path) -> Result<LogKey, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    LogKey::parse(&text).map_err(|e| format!("{} holds no usable log key: {e}", path.display()))
}

/// Reads the key at `path`, or the first time generates one for `origin`
/// from the operating system's randomness and writes it there (owner-only,
/// written whole or not at all). For development and single-node journals:
/// production keys come from a secret store.
pub fn read_or_create_key(path: &Path, origin: &str) -> Result<LogKey, String> {
    if path.exists() {
        return read_key_file(path);
    }
    check_origin(origin).map_err(|e| format!("log origin {e}"))?;
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| format!("no randomness for a new log key: {e}"))?;
    let key = LogKey::from_seed(origin, seed).map_err(|e| format!("cannot make a log key: {e}"))?;
    let write_error = |e: std::io::Error| format!("cannot write the new log key to {}: {e}", path.display());
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(write_error)?;
    }
    // Written aside, then linked into place: a crash mid-write leaves no
    // half key that the next start would refuse, and a link never replaces
    // a file — of two journals started at once on one data dir, the second
    // finds the first one's key and uses it (a rename would overwrite it).
    let partial = path.with_extension(format!("key.partial.{}", std::process::id()));
    let _ = std::fs::remove_file(&partial);
    write_private(&partial, &key.to_text()).map_err(write_error)?;
    let linked = std::fs::hard_link(&partial, path);
    let _ = std::fs::remove_file(&partial);
    match linked {
        Ok(()) => Ok(key),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read_key_file(path),
        Err(e) => Err(write_error(e)),
    }
}

#[cfg(unix)]
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    file.write_all(text.as_bytes())?;
    file.write_all(b"\n")?;
    file.sync_all()
}

#[cfg(not(unix))]
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    std::fs::write(path, format!("{text}\n"))
}

/// A new key that lives as long as this process: for a journal on a store
/// that gave no place to keep one (an embedder's `open_on` without a key).
fn ephemeral_key() -> Result<LogKey, JournalError> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| std::io::Error::other(format!("no randomness for a log key: {e}")))?;
    LogKey::from_seed(DEFAULT_ORIGIN, seed)
        .map_err(|e| JournalError::InvalidArgument { field: "log_origin".into(), message: e.to_string() })
}

/// How a journal keeps its transparency log (`JournalOptions::transparency`).
#[derive(Clone)]
pub struct TransparencyOptions {
    /// False: no tree, no checkpoints, and the proofs and signed heads are
    /// refused. Only for measuring what the log costs (the append
    /// benchmark); no configuration key turns it off.
    pub enabled: bool,
    /// The log key. None: `Journal::open` (sled) keeps one in
    /// `<data_dir>/log.key`, generated the first time; `Journal::open_on`
    /// makes one for this run only (and says so in a warning).
    pub key: Option<Arc<LogKey>>,
    /// How often a new checkpoint is signed while the log grows.
    pub checkpoint_interval: Duration,
    /// Where each checkpoint signed is kept before anyone sees it, and what
    /// the store is held to at start ([`crate::kept`]). None: `Journal::open`
    /// (sled) keeps it in `<data_dir>/signed-checkpoint`; `Journal::open_on`
    /// keeps none (a store in memory has nothing to fall behind).
    pub kept_checkpoint: Option<PathBuf>,
}

impl Default for TransparencyOptions {
    fn default() -> Self {
        Self { enabled: true, key: None, checkpoint_interval: DEFAULT_CHECKPOINT_INTERVAL, kept_checkpoint: None }
    }
}

impl TransparencyOptions {
    /// The log on, with `key`, signing every `checkpoint_interval`.
    pub fn with_key(key: LogKey, checkpoint_interval: Duration) -> Self {
        Self { enabled: true, key: Some(Arc::new(key)), checkpoint_interval, kept_checkpoint: None }
    }

    /// The same, each signed checkpoint kept at `path` ([`crate::kept`]).
    pub fn keeping_at(mut self, path: impl Into<PathBuf>) -> Self {
        self.kept_checkpoint = Some(path.into());
        self
    }

    /// The log off (benchmarks only).
    pub fn off() -> Self {
        Self { enabled: false, ..Self::default() }
    }
}

// Never print a private key, not even in a debug log.
impl std::fmt::Debug for TransparencyOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransparencyOptions")
            .field("enabled", &self.enabled)
            .field("key", &self.key.as_ref().map(|k| k.verifier_key().to_string()))
            .field("checkpoint_interval", &self.checkpoint_interval)
            .field("kept_checkpoint", &self.kept_checkpoint)
            .finish()
    }
}

/// A record's inclusion proof (`Journal::inclusion_proof`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InclusionProof {
    /// The record's leaf index: its place in the global log, from 0.
    pub leaf_index: u64,
    /// The tree size it is proved at.
    pub tree_size: u64,
    /// RFC 9162 §2.1.3, leaf to root.
    pub proof: Vec<Hash>,
    /// The newest checkpoint, when `tree_size` is its size.
    pub checkpoint: Option<Checkpoint>,
}

/// A consistency proof between two tree sizes (`Journal::consistency_proof`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsistencyProof {
    /// The older size.
    pub old_size: u64,
    /// The newer size.
    pub new_size: u64,
    /// RFC 9162 §2.1.4.
    pub proof: Vec<Hash>,
    /// The newest checkpoint, when `new_size` is its size.
    pub checkpoint: Option<Checkpoint>,
}

/// A stream's head signed at a checkpoint that holds it
/// (`Journal::signed_head`): everything an export's trailer needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedHead {
    /// A checkpoint whose tree holds the head record.
    pub checkpoint: Checkpoint,
    /// The log's verifier key.
    pub log_key: VerifierKey,
    /// The stream, its last version and h(version).
    pub head: battlelog_tlog::StreamHead,
    /// Ed25519 by the log key over the §5 head message at the checkpoint's size.
    pub signature: [u8; 64],
    /// The head record's leaf index.
    pub leaf_index: u64,
    /// Its inclusion proof at the checkpoint's size.
    pub inclusion_proof: Vec<Hash>,
}

impl SignedHead {
    /// The export's trailer line (docs/protocol.md §5) this head makes.
    pub fn trailer(&self) -> battlelog_tlog::Trailer {
        use base64::Engine as _;
        let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
        battlelog_tlog::Trailer {
            checkpoint: self.checkpoint.note.clone(),
            log_key: self.log_key.to_string(),
            head: battlelog_tlog::TrailerHead {
                stream: self.head.stream_id.clone(),
                version: self.head.version,
                hash: hex::encode(self.head.hash),
            },
            head_signature: b64(&self.signature),
            leaf_index: self.leaf_index,
            inclusion_proof: self.inclusion_proof.iter().map(|h| b64(h)).collect(),
        }
    }
}

/// The tree and where each leaf sits in the global log.
#[derive(Default)]
struct Leaves {
    tree: Tree,
    /// Global position of each leaf, increasing.
    positions: Vec<u64>,
}

impl Leaves {
    fn index_of(&self, position: u64) -> Option<u64> {
        self.positions.binary_search(&position).ok().map(|i| i as u64)
    }
}

/// One journal's transparency log (see the module doc). Shared by the
/// journal handle, the follower task and the signer task.
pub(crate) struct TransparencyLog {
    key: Arc<LogKey>,
    verifier: VerifierKey,
    enabled: bool,
    leaves: RwLock<Leaves>,
    /// The next global position the follower reads from (one past the last
    /// record it pushed); waited on by signed heads.
    followed: watch::Sender<u64>,
    /// The newest checkpoint issued; only ever replaced by a larger one.
    /// Watchable, so that a caller can wait for one without polling.
    newest: watch::Sender<Option<Checkpoint>>,
    /// One reader of the log at a time pushes leaves (the rebuild, then the
    /// follower).
    reading: tokio::sync::Mutex<()>,
    /// One signer at a time, from signing to keeping to publishing, so that
    /// checkpoints reach the kept file in the order of their sizes.
    signing: tokio::sync::Mutex<()>,
    /// Where each signed checkpoint is kept, if anywhere.
    kept_path: Option<PathBuf>,
    /// The checkpoint the store is held to: the one kept at start, then
    /// each one kept since.
    kept: RwLock<Option<Checkpoint>>,
    /// How the store falls short of the kept checkpoint; `None` while it
    /// holds its log. Set after the rebuild at start; only ever cleared
    /// later (a short store that reads back in full after all), or turned
    /// into another log for good.
    behind: watch::Sender<Option<StoreBehind>>,
    /// Whether the journal takes appends: `behind` is `None` (for health).
    writable: watch::Sender<bool>,
    metrics: JournalMetrics,
}

impl std::fmt::Debug for TransparencyLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransparencyLog")
            .field("log_key", &self.verifier.to_string())
            .field("enabled", &self.enabled)
            .field("size", &self.size())
            .finish()
    }
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn invalid(field: &str, message: String) -> JournalError {
    JournalError::InvalidArgument { field: field.into(), message }
}

impl TransparencyLog {
    /// A log with `key` (a process-only one when none), empty until
    /// [`Self::catch_up`], holding the store to the checkpoint kept at
    /// `options.kept_checkpoint` (once [`Self::hold_to_kept`] is called).
    /// A kept file that cannot be read, or holds no checkpoint, stops it.
    pub(crate) fn new(options: &TransparencyOptions, metrics: JournalMetrics) -> Result<Self, JournalError> {
        let key = match &options.key {
            Some(key) => key.clone(),
            None => {
                if options.enabled {
                    warn!("no log key given: this run's checkpoints are signed with a key made for it alone");
                }
                Arc::new(ephemeral_key()?)
            }
        };
        let verifier = key.verifier_key();
        let (followed, _) = watch::channel(0);
        let kept_path = options.kept_checkpoint.clone().filter(|_| options.enabled);
        let kept = match &kept_path {
            Some(path) => kept::read(path).map_err(|message| JournalError::InvalidArgument {
                field: "data_dir".into(),
                message: format!("{message}; restore it from a backup with the data dir, or see docs/operating.md"),
            })?,
            None => None,
        };
        // The kept checkpoint is this log's newest until a larger one is
        // signed: what the journal vouched for last, served as it was.
        let newest = match &kept {
            Some(checkpoint) => match Checkpoint::open(&checkpoint.note, &verifier) {
                Ok(_) => Some(checkpoint.clone()),
                Err(e) => {
                    warn!(
                        error = %e,
                        size = checkpoint.size,
                        "the kept checkpoint is not signed by this journal's log key (was the key changed?): the \
                         store is held to it all the same, but it is not served"
                    );
                    None
                }
            },
            None => None,
        };
        metrics.set_store_behind(false);
        Ok(Self {
            key,
            verifier,
            enabled: options.enabled,
            leaves: RwLock::new(Leaves::default()),
            followed,
            newest: watch::channel(newest).0,
            reading: tokio::sync::Mutex::new(()),
            signing: tokio::sync::Mutex::new(()),
            kept_path,
            kept: RwLock::new(kept),
            behind: watch::channel(None).0,
            writable: watch::channel(true).0,
            metrics,
        })
    }

    /// Holds the tree (rebuilt from the store) to the kept checkpoint, and
    /// says so in one log line when it falls short; returns how. Called
    /// once, after the rebuild at start.
    pub(crate) fn hold_to_kept(&self) -> Option<StoreBehind> {
        let kept = read(&self.kept).clone()?;
        let behind = StoreBehind::compare(&read(&self.leaves).tree, &kept);
        if let Some(behind) = &behind {
            error!(
                store_size = behind.store_size,
                checkpoint_size = behind.checkpoint_size,
                "the journal's store is behind its last signed checkpoint: {behind}; it takes no appends and signs \
                 nothing until its data dir is restored from a backup or the loss is accepted with `battlelog \
                 journal accept-loss` (docs/operating.md)"
            );
        }
        self.set_behind(behind.clone());
        behind
    }

    fn set_behind(&self, behind: Option<StoreBehind>) {
        let writable = behind.is_none();
        self.behind.send_replace(behind);
        self.writable.send_replace(writable);
        self.metrics.set_store_behind(!writable);
    }

    /// How the store falls short of the kept checkpoint, if it does.
    pub(crate) fn behind(&self) -> Option<StoreBehind> {
        self.behind.borrow().clone()
    }

    /// True while the journal takes appends (its store is not behind).
    pub(crate) fn watch_writable(&self) -> watch::Receiver<bool> {
        self.writable.subscribe()
    }

    /// `Err(StoreBehind)` while the store is behind the kept checkpoint.
    pub(crate) fn check_not_behind(&self) -> Result<(), JournalError> {
        match self.behind() {
            Some(behind) => Err(JournalError::StoreBehind(behind)),
            None => Ok(()),
        }
    }

    /// After the follower pushed more leaves: a store that was only short
    /// may have read back in full after all (a stream out of reach at
    /// start), or turned out to hold another log.
    fn recheck_kept(&self) {
        let Some(before) = self.behind().filter(StoreBehind::only_short) else {
            return;
        };
        let Some(kept) = read(&self.kept).clone() else {
            return;
        };
        let now = StoreBehind::compare(&read(&self.leaves).tree, &kept);
        match &now {
            None => info!(
                size = kept.size,
                "the store holds the last signed checkpoint's log after all: taking appends again"
            ),
            Some(now) if now.only_short() => return,
            Some(now) => error!(
                store_size = now.store_size,
                checkpoint_size = now.checkpoint_size,
                "the journal's store is behind its last signed checkpoint: {now}; it takes no appends and signs \
                 nothing until its data dir is restored or the loss is accepted (docs/operating.md)"
            ),
        }
        if now.as_ref() != Some(&before) {
            self.set_behind(now);
        }
    }

    pub(crate) fn enabled(&self) -> bool {
        self.enabled
    }

    pub(crate) fn verifier_key(&self) -> VerifierKey {
        self.verifier.clone()
    }

    /// Leaves in the tree.
    pub(crate) fn size(&self) -> u64 {
        read(&self.leaves).tree.size()
    }

    /// About the memory the tree and the positions take.
    pub(crate) fn memory_bytes(&self) -> usize {
        let leaves = read(&self.leaves);
        leaves.tree.memory_bytes() + leaves.positions.capacity() * size_of::<u64>()
    }

    pub(crate) fn newest(&self) -> Option<Checkpoint> {
        self.newest.borrow().clone()
    }

    pub(crate) fn watch_newest(&self) -> watch::Receiver<Option<Checkpoint>> {
        self.newest.subscribe()
    }

    fn off(&self) -> Result<(), JournalError> {
        if self.enabled { Ok(()) } else { Err(JournalError::TransparencyOff) }
    }

    /// Pushes every record of the global log past the last one followed,
    /// until the store has no more: page by page, each leaf hashed outside
    /// the lock. A record that does not read back stops it there (with the
    /// store's error), every record before it pushed.
    ///
    /// Each page read goes, with the position it was read from, to `also`
    /// too: the journal feeds the battle index from the same read rather
    /// than reading every record twice.
    pub(crate) async fn catch_up(
        &self,
        store: &dyn EventStore,
        page: usize,
        max_bytes: usize,
        mut also: impl FnMut(u64, &[StoredEvent]),
    ) -> Result<(), JournalError> {
        let _reading = self.reading.lock().await;
        let full_page = page;
        let mut page = page;
        loop {
            let from = *self.followed.borrow();
            let events = match store.read_all(from, limits::wire_page(page, max_bytes)).await {
                Ok(events) => events,
                // A page holding a record that does not read back: one
                // record at a time, so that the tree takes every record
                // before the bad one.
                Err(_) if page > 1 => {
                    page = 1;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            // Past the bad record (or a passing failure): full pages again,
            // or a long rebuild would go on one record a call.
            page = full_page;
            let Some(last) = events.last().map(|e| e.global_position) else {
                return Ok(());
            };
            also(from, &events);
            let hashed: Vec<(u64, Hash)> = events
                .iter()
                // Never a second leaf for a record (a store answers from
                // `from` on; this only guards the invariant).
                .filter(|e| e.global_position >= from)
                .map(|e| (e.global_position, battlelog_tlog::leaf_hash(&e.event.stream_id, e.event.version, &e.hash)))
                .collect();
            {
                let mut leaves = write(&self.leaves);
                for (position, leaf) in hashed {
                    if leaves.positions.last().is_some_and(|&p| p >= position) {
                        continue;
                    }
                    leaves.tree.push(leaf);
                    leaves.positions.push(position);
                }
            }
            self.followed.send_replace(last + 1);
            self.recheck_kept();
        }
    }

    /// Signs a checkpoint of the whole tree now if it has grown past the
    /// newest one, keeps it (when a file is given) and only then publishes
    /// it; returns the newest (`None` while the log is empty). Signs
    /// nothing while the store is behind the kept checkpoint: any root it
    /// signed could contradict the one kept.
    pub(crate) async fn issue(&self) -> Result<Option<Checkpoint>, JournalError> {
        if self.behind().is_some() {
            return Ok(self.newest());
        }
        let _signing = self.signing.lock().await;
        let newest_size = self.newest.borrow().as_ref().map_or(0, |c| c.size);
        let (size, root) = {
            let leaves = read(&self.leaves);
            let size = leaves.tree.size();
            if size <= newest_size {
                return Ok(self.newest());
            }
            match leaves.tree.root(size) {
                Ok(root) => (size, root),
                Err(e) => {
                    // Any size up to the tree's is provable: a bug if not.
                    warn!(error = %e, size, "the tree gave no root for its own size");
                    return Ok(self.newest());
                }
            }
        };
        let checkpoint = self.key.sign_checkpoint(size, &root);
        if let Some(path) = &self.kept_path {
            // On disk before anyone sees it: a checkpoint handed out and then
            // lost in a crash could not hold the next start to account.
            let (path, kept) = (path.clone(), checkpoint.clone());
            let kept_at = path.display().to_string();
            tokio::task::spawn_blocking(move || kept::keep(&path, &kept))
                .await
                .map_err(|e| JournalError::Io(std::io::Error::other(format!("keeping the checkpoint: {e}"))))?
                .map_err(|e| {
                    JournalError::Io(std::io::Error::new(
                        e.kind(),
                        format!("cannot keep the signed checkpoint in {kept_at}: {e}"),
                    ))
                })?;
            *write(&self.kept) = Some(checkpoint.clone());
        }
        // Only one signer at a time: nothing larger can have come meanwhile.
        self.newest.send_if_modified(|newest| {
            let larger = newest.as_ref().is_none_or(|c| c.size < checkpoint.size);
            if larger {
                *newest = Some(checkpoint);
            }
            larger
        });
        Ok(self.newest())
    }

    /// The newest checkpoint's size, or the one asked for when it is not
    /// past it (`field` names the request's field).
    fn size_at(&self, field: &str, asked: Option<u64>) -> Result<(u64, Option<Checkpoint>), JournalError> {
        // No proof from a store that is not the log signed.
        self.check_not_behind()?;
        let newest = self.newest();
        let newest_size = newest.as_ref().map_or(0, |c| c.size);
        match asked {
            None if newest.is_none() => {
                Err(invalid(field, "no checkpoint has been issued yet (the log is empty)".into()))
            }
            None => Ok((newest_size, newest)),
            Some(size) if size > newest_size => {
                Err(invalid(field, format!("{size} is past the newest checkpoint's tree size {newest_size}")))
            }
            Some(size) => Ok((size, newest.filter(|c| c.size == size))),
        }
    }

    /// The inclusion proof of the record at `position` (`stream_id@version`,
    /// for messages) at `tree_size` (`None`: the newest checkpoint's).
    pub(crate) fn inclusion_proof(
        &self,
        stream_id: &str,
        version: u64,
        position: u64,
        tree_size: Option<u64>,
    ) -> Result<InclusionProof, JournalError> {
        self.off()?;
        let (size, checkpoint) = self.size_at("tree_size", tree_size)?;
        let leaves = read(&self.leaves);
        let index = leaves.index_of(position).filter(|&i| i < size).ok_or_else(|| {
            invalid(
                "tree_size",
                format!(
                    "{stream_id}@{version} is not in the tree at size {size} \
                     (a checkpoint holding it follows within checkpoint_interval_ms)"
                ),
            )
        })?;
        let proof = leaves.tree.inclusion_proof(index, size).map_err(|e| invalid("tree_size", e.to_string()))?;
        Ok(InclusionProof { leaf_index: index, tree_size: size, proof, checkpoint })
    }

    pub(crate) fn consistency_proof(
        &self,
        old_size: u64,
        new_size: Option<u64>,
    ) -> Result<ConsistencyProof, JournalError> {
        self.off()?;
        let (new_size, checkpoint) = self.size_at("new_size", new_size)?;
        if old_size > new_size {
            return Err(invalid("old_size", format!("{old_size} is past new_size {new_size}")));
        }
        let proof = if old_size == 0 {
            // Every tree extends the empty one: nothing to prove.
            Vec::new()
        } else {
            read(&self.leaves)
                .tree
                .consistency_proof(old_size, new_size)
                .map_err(|e| invalid("old_size", e.to_string()))?
        };
        Ok(ConsistencyProof { old_size, new_size, proof, checkpoint })
    }

    /// Waits until the follower has pushed the record at `position`.
    async fn followed_past(&self, position: u64, closing: &mut watch::Receiver<bool>) -> Result<(), JournalError> {
        let mut followed = self.followed.subscribe();
        tokio::select! {
            reached = followed.wait_for(|next| *next > position) => {
                reached.map(|_| ()).map_err(|_| JournalError::ShuttingDown)
            }
            _ = closing.wait_for(|closing| *closing) => Err(JournalError::ShuttingDown),
            // A follower held up (a record that does not read back, a log
            // out of reach) must not hold every export of the battle with it.
            _ = tokio::time::sleep(FOLLOW_WAIT) => Err(JournalError::FollowerStalled { position, waited_secs: FOLLOW_WAIT.as_secs() }),
        }
    }

    /// `stream_id`'s head signed at a checkpoint that holds it (see the
    /// module doc). The head is read from the store, the follower awaited
    /// up to its record, a checkpoint issued when the newest does not hold
    /// it, and the head read again: when the stream moved meanwhile and its
    /// next record is in that checkpoint's tree, the head would be false
    /// there, so it is signed at the tree that ends at its own leaf.
    pub(crate) async fn signed_head(
        &self,
        store: &dyn EventStore,
        stream_id: &str,
        max_bytes: usize,
        mut closing: watch::Receiver<bool>,
    ) -> Result<SignedHead, JournalError> {
        self.off()?;
        limits::validate_stream_id("stream_id", stream_id)?;
        self.check_not_behind()?;
        let head = store.head(stream_id).await?.ok_or_else(|| not_found(stream_id))?;
        let position = position_of(store, stream_id, head.version, max_bytes).await?;
        self.followed_past(position, &mut closing).await?;
        let index = read(&self.leaves).index_of(position).ok_or_else(|| {
            JournalError::Poisoned(format!("{stream_id}@{}: followed but not in the tree", head.version))
        })?;
        let mut checkpoint =
            match self.newest() {
                Some(newest) if newest.size > index => newest,
                _ => self.issue().await?.filter(|c| c.size > index).ok_or_else(|| {
                    JournalError::Poisoned(format!("no checkpoint holds leaf {index} of {stream_id}"))
                })?,
            };
        let now = store.head(stream_id).await?.map(|h| h.version);
        if now != Some(head.version) {
            let next = position_of(store, stream_id, head.version + 1, max_bytes).await?;
            let in_tree = read(&self.leaves).index_of(next).is_some_and(|i| i < checkpoint.size);
            if in_tree {
                // The stream moved on inside that checkpoint. The tree of
                // the head's leaf and those before it ends the stream at
                // the head: sign there instead of racing the stream
                // (every size of one append-only tree is a checkpoint
                // as good as any, consistent with all the others).
                let root = read(&self.leaves)
                    .tree
                    .root(index + 1)
                    .map_err(|e| JournalError::Poisoned(format!("root at {}: {e}", index + 1)))?;
                checkpoint = self.key.sign_checkpoint(index + 1, &root);
            }
        }
        let tlog_head =
            battlelog_tlog::StreamHead { stream_id: stream_id.to_owned(), version: head.version, hash: head.hash };
        let inclusion_proof = read(&self.leaves)
            .tree
            .inclusion_proof(index, checkpoint.size)
            .map_err(|e| JournalError::Poisoned(format!("inclusion proof of leaf {index}: {e}")))?;
        let signature = self.key.sign_head(&tlog_head, checkpoint.size);
        Ok(SignedHead {
            checkpoint,
            log_key: self.verifier.clone(),
            head: tlog_head,
            signature,
            leaf_index: index,
            inclusion_proof,
        })
    }
}

fn not_found(stream_id: &str) -> JournalError {
    JournalError::StreamNotFound { stream_id: stream_id.to_owned() }
}

/// The global position of `stream_id@version`, which must be stored.
pub(crate) async fn position_of(
    store: &dyn EventStore,
    stream_id: &str,
    version: u64,
    max_bytes: usize,
) -> Result<u64, JournalError> {
    let events = store.read_stream(stream_id, version, limits::wire_page(1, max_bytes)).await?;
    match events.first() {
        Some(event) if event.event.version == version => Ok(event.global_position),
        _ => match store.head(stream_id).await? {
            None => Err(not_found(stream_id)),
            Some(head) => {
                Err(invalid("version", format!("{version} is past the stream's head version {}", head.version)))
            }
        },
    }
}

/// Signs a checkpoint every `interval` while the tree grows; ends at shutdown.
pub(crate) async fn sign(log: Arc<TransparencyLog>, interval: Duration, mut closing: watch::Receiver<bool>) {
    // The first tick a whole interval from now: the journal signed one at open.
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticks.tick() => {
                if let Err(e) = log.issue().await {
                    warn!(error = %e, "no checkpoint signed this interval");
                }
            }
            _ = closing.changed() => return,
        }
        if *closing.borrow() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use battlelog_tlog::{verify_consistency, verify_head, verify_inclusion};

    use super::*;
    use crate::journal::tests::{opened, rolled};
    use crate::store::{Conflict, PlannedAppend, StoreFuture, StoredEvent};
    use crate::{ExpectedVersion, Journal, JournalOptions, MemoryStore};

    const WAIT: Duration = Duration::from_secs(20);

    fn key() -> LogKey {
        LogKey::from_seed("test.example/log", [7; 32]).expect("a key")
    }

    fn options(interval_ms: u64) -> JournalOptions {
        JournalOptions {
            transparency: TransparencyOptions::with_key(key(), Duration::from_millis(interval_ms)),
            ..JournalOptions::new("unused")
        }
    }

    /// Waits (on the watch, no polling) for a checkpoint of at least `size`.
    async fn checkpoint_of(journal: &Journal, size: u64) -> Checkpoint {
        let mut newest = journal.watch_checkpoints();
        let reached = tokio::time::timeout(WAIT, newest.wait_for(|c| c.as_ref().is_some_and(|c| c.size >= size)))
            .await
            .unwrap_or_else(|_| panic!("no checkpoint of {size} leaves within {WAIT:?}"))
            .expect("the journal is open");
        reached.clone().expect("a checkpoint")
    }

    /// Opens battles `a` and `b` and rolls in them alternately: `rolls`
    /// each, one append per roll.
    async fn interleaved(journal: &Journal, rolls: u64) {
        for stream in ["a", "b"] {
            journal.append(stream.into(), ExpectedVersion::NoStream, vec![opened("")]).await.unwrap();
        }
        for nonce in 0..rolls {
            for stream in ["a", "b"] {
                journal.append(stream.into(), ExpectedVersion::Any, vec![rolled(0, nonce)]).await.unwrap();
            }
        }
    }

    /// Leaf i is the i-th record of the global log: every record's proof
    /// verifies at its global order, with the leaf hash of its stream,
    /// version and chain hash.
    #[tokio::test]
    async fn leaves_are_the_global_log_in_order() {
        let journal = Journal::open_on(Arc::new(MemoryStore::new()), options(10)).await.unwrap();
        interleaved(&journal, 5).await;
        let log = journal.read_all(0, 0).await.unwrap();
        assert_eq!(log.len(), 12);
        let checkpoint = checkpoint_of(&journal, 12).await;
        let opened = Checkpoint::open(&checkpoint.note, &journal.log_key()).expect("signed by the log key");
        assert_eq!((opened.size, opened.root), (12, checkpoint.root));
        for (i, event) in log.iter().enumerate() {
            let record = &event.event;
            let proof = journal.inclusion_proof(&record.stream_id, record.version, Some(12)).await.unwrap();
            assert_eq!(proof.leaf_index, i as u64, "{}@{}", record.stream_id, record.version);
            assert_eq!(proof.checkpoint.as_ref(), Some(&checkpoint), "12 is the newest checkpoint's size");
            let leaf = battlelog_tlog::leaf_hash(&record.stream_id, record.version, &event.hash);
            verify_inclusion(i as u64, 12, &leaf, &proof.proof, &checkpoint.root).expect("the proof verifies");
            // The same leaf at another index does not.
            let other = (i as u64 + 1) % 12;
            assert!(verify_inclusion(other, 12, &leaf, &proof.proof, &checkpoint.root).is_err());
        }
        journal.shutdown().await.unwrap();
    }

    /// Checkpoints only grow, each signed by the log key, and every one is
    /// consistent with every later one.
    #[tokio::test]
    async fn checkpoints_grow_and_stay_consistent() {
        let journal = Journal::open_on(Arc::new(MemoryStore::new()), options(10)).await.unwrap();
        assert_eq!(journal.checkpoint(), None, "none while the log is empty");
        let mut kept = Vec::new();
        journal.append("c".into(), ExpectedVersion::NoStream, vec![opened("")]).await.unwrap();
        kept.push(checkpoint_of(&journal, 1).await);
        for nonce in 0..6 {
            journal.append("c".into(), ExpectedVersion::Any, vec![rolled(0, nonce)]).await.unwrap();
            kept.push(checkpoint_of(&journal, nonce + 2).await);
        }
        let key = journal.log_key();
        for (i, old) in kept.iter().enumerate() {
            Checkpoint::open(&old.note, &key).expect("signed");
            for new in &kept[i..] {
                assert!(new.size >= old.size);
                let proof = journal.consistency_proof(old.size, Some(new.size)).unwrap();
                verify_consistency(old.size, &old.root, new.size, &new.root, &proof.proof)
                    .unwrap_or_else(|e| panic!("{} -> {}: {e}", old.size, new.size));
            }
        }
        let newest = journal.checkpoint().unwrap();
        let proof = journal.consistency_proof(kept[0].size, None).unwrap();
        assert_eq!((proof.new_size, proof.checkpoint), (newest.size, Some(newest)));
        journal.shutdown().await.unwrap();
    }

    /// A second journal over the same log rebuilds the same tree at open:
    /// its first checkpoint extends the first journal's.
    #[tokio::test]
    async fn a_rebuilt_tree_extends_the_checkpoints_before_it() {
        let store = Arc::new(MemoryStore::new());
        let first = Journal::open_on(store.clone(), options(10)).await.unwrap();
        interleaved(&first, 3).await;
        let before = checkpoint_of(&first, 8).await;
        let second = Journal::open_on(store, options(60_000)).await.unwrap();
        let rebuilt = second.checkpoint().expect("signed at open, not a minute later");
        assert_eq!(rebuilt.size, 8);
        assert_eq!(rebuilt.root, before.root, "the same leaves, the same root");
        second.append("a".into(), ExpectedVersion::Any, vec![rolled(0, 3)]).await.unwrap();
        let head = second.signed_head("a").await.unwrap();
        let proof = second.consistency_proof(before.size, Some(head.checkpoint.size)).unwrap();
        verify_consistency(before.size, &before.root, head.checkpoint.size, &head.checkpoint.root, &proof.proof)
            .expect("consistent");
        first.shutdown().await.unwrap();
        second.shutdown().await.unwrap();
    }

    /// A signed head: issued on demand (the periodic signer would take a
    /// minute here), its signature and inclusion proof verify, and its
    /// trailer checks against the stream's last event.
    #[tokio::test]
    async fn a_signed_head_proves_the_head_at_its_checkpoint() {
        let journal = Journal::open_on(Arc::new(MemoryStore::new()), options(60_000)).await.unwrap();
        interleaved(&journal, 2).await;
        assert_eq!(journal.checkpoint(), None, "nothing signed yet: the log was empty at open");
        // b@2 is the last record: the follower must have pushed all six.
        let head = journal.signed_head("b").await.unwrap();
        assert_eq!(head.checkpoint.size, 6, "a checkpoint issued for it holds the whole tree");
        assert_eq!(journal.checkpoint().as_ref(), Some(&head.checkpoint), "and is the newest now");
        let last = journal.read_stream("b", 2, 1).await.unwrap().remove(0);
        let expected = battlelog_tlog::StreamHead { stream_id: "b".into(), version: 2, hash: last.hash };
        assert_eq!(head.head, expected);
        assert_eq!(head.leaf_index, 5, "b@2 is the sixth record");
        verify_head(&journal.log_key(), &head.head, 6, &head.signature).expect("the head signature verifies");
        let leaf = battlelog_tlog::leaf_hash("b", 2, &last.hash);
        verify_inclusion(5, 6, &leaf, &head.inclusion_proof, &head.checkpoint.root).expect("included");
        // a@2 (leaf 4): the newest checkpoint already holds it.
        let earlier = journal.signed_head("a").await.unwrap();
        assert_eq!((earlier.leaf_index, earlier.checkpoint.size), (4, 6));
        let trusted = journal.log_key();
        let checked = head.trailer().check(Some(&expected), Some(&trusted)).expect("the trailer checks");
        assert_eq!(checked.size, 6);
        journal.shutdown().await.unwrap();
    }

    /// Bad sizes and versions are refused naming the field; an unknown
    /// stream is not found; with the log off everything but the key is.
    #[tokio::test]
    async fn bad_requests_name_their_field() {
        let journal = Journal::open_on(Arc::new(MemoryStore::new()), options(60_000)).await.unwrap();
        fn field<T: std::fmt::Debug>(result: Result<T, JournalError>) -> (String, String) {
            match result {
                Err(JournalError::InvalidArgument { field, message }) => (field, message),
                other => panic!("expected InvalidArgument, got {other:?}"),
            }
        }
        let (f, _) = field(journal.consistency_proof(0, None));
        assert_eq!(f, "new_size", "no checkpoint yet");
        interleaved(&journal, 1).await;
        let newest = journal.signed_head("b").await.unwrap().checkpoint;
        assert_eq!(newest.size, 4);
        let (f, m) = field(journal.inclusion_proof("a", 0, Some(5)).await);
        assert_eq!(f, "tree_size");
        assert!(m.contains('5') && m.contains('4'), "names the size and the limit: {m}");
        let (f, m) = field(journal.inclusion_proof("a", 2, None).await);
        assert_eq!(f, "version");
        assert!(m.contains("head version 1"), "{m}");
        let (f, _) = field(journal.inclusion_proof("b", 0, Some(1)).await);
        assert_eq!(f, "tree_size", "b@0 is leaf 1, not in a tree of 1");
        journal.inclusion_proof("b", 0, Some(2)).await.expect("b@0 is in a tree of 2");
        let (f, m) = field(journal.consistency_proof(3, Some(2)));
        assert_eq!(f, "old_size");
        assert!(m.contains('3') && m.contains('2'), "{m}");
        let (f, _) = field(journal.consistency_proof(1, Some(5)));
        assert_eq!(f, "new_size");
        let (f, _) = field(journal.consistency_proof(u64::MAX, None));
        assert_eq!(f, "old_size");
        assert!(journal.consistency_proof(0, Some(4)).unwrap().proof.is_empty());
        assert!(journal.consistency_proof(4, Some(4)).unwrap().proof.is_empty());
        let unknown = journal.inclusion_proof("nobody", 0, None).await;
        assert!(matches!(unknown, Err(JournalError::StreamNotFound { .. })), "{unknown:?}");
        let unknown = journal.signed_head("nobody").await;
        assert!(matches!(unknown, Err(JournalError::StreamNotFound { .. })), "{unknown:?}");
        let (f, _) = field(journal.signed_head("not a stream").await.map(|_| ()));
        assert_eq!(f, "stream_id");
        journal.shutdown().await.unwrap();

        let off = JournalOptions { transparency: TransparencyOptions::off(), ..JournalOptions::new("unused") };
        let journal = Journal::open_on(Arc::new(MemoryStore::new()), off).await.unwrap();
        interleaved(&journal, 1).await;
        assert_eq!((journal.checkpoint(), journal.tree_size()), (None, 0));
        assert!(matches!(journal.signed_head("a").await, Err(JournalError::TransparencyOff)));
        assert!(matches!(journal.inclusion_proof("a", 0, None).await, Err(JournalError::TransparencyOff)));
        assert!(matches!(journal.consistency_proof(0, None), Err(JournalError::TransparencyOff)));
        journal.shutdown().await.unwrap();
    }

    /// A store whose global positions are sparse, as JetStream's are: the
    /// memory store's position p shows as 3p + 5.
    #[derive(Debug)]
    struct Sparse(MemoryStore);

    const fn spread(p: u64) -> u64 {
        3 * p + 5
    }

    fn spread_events(events: Vec<StoredEvent>) -> Vec<StoredEvent> {
        events.into_iter().map(|e| StoredEvent { global_position: spread(e.global_position), ..e }).collect()
    }

    impl EventStore for Sparse {
        fn engine(&self) -> &'static str {
            "sparse"
        }
        fn head<'a>(&'a self, stream_id: &'a str) -> StoreFuture<'a, Option<crate::store::Head>> {
            self.0.head(stream_id)
        }
        fn idempotency<'a>(
            &'a self,
            stream_id: &'a str,
            keys: &'a [String],
        ) -> StoreFuture<'a, Vec<Option<crate::store::KeyEntry>>> {
            self.0.idempotency(stream_id, keys)
        }
        fn append(&self, appends: Vec<PlannedAppend>) -> StoreFuture<'_, Vec<Result<Vec<u64>, Conflict>>> {
            Box::pin(async move {
                let outcomes = self.0.append(appends).await?;
                Ok(outcomes.into_iter().map(|o| o.map(|ps| ps.into_iter().map(spread).collect())).collect())
            })
        }
        fn read_stream<'a>(
            &'a self,
            stream_id: &'a str,
            from_version: u64,
            page: crate::store::Page,
        ) -> StoreFuture<'a, Vec<StoredEvent>> {
            Box::pin(async move { Ok(spread_events(self.0.read_stream(stream_id, from_version, page).await?)) })
        }
        fn read_all(&self, from_position: u64, page: crate::store::Page) -> StoreFuture<'_, Vec<StoredEvent>> {
            // The first inner position whose spread one is at or past `from`.
            let inner = from_position.saturating_sub(5).div_ceil(3);
            Box::pin(async move { Ok(spread_events(self.0.read_all(inner, page).await?)) })
        }
        fn changes(&self) -> watch::Receiver<u64> {
            self.0.changes()
        }
        fn close(&self) -> StoreFuture<'_, ()> {
            self.0.close()
        }
    }

    /// With sparse global positions a leaf index is the record's place in
    /// the log, not its position, and proofs still verify.
    #[tokio::test]
    async fn sparse_positions_map_to_dense_leaves() {
        let journal = Journal::open_on(Arc::new(Sparse(MemoryStore::new())), options(10)).await.unwrap();
        interleaved(&journal, 3).await;
        let log = journal.read_all(0, 0).await.unwrap();
        assert_eq!(log.iter().map(|e| e.global_position).collect::<Vec<_>>(), [5, 8, 11, 14, 17, 20, 23, 26]);
        let checkpoint = checkpoint_of(&journal, 8).await;
        for (i, event) in log.iter().enumerate() {
            let record = &event.event;
            let proof = journal.inclusion_proof(&record.stream_id, record.version, None).await.unwrap();
            assert_eq!(proof.leaf_index, i as u64);
            assert_ne!(proof.leaf_index, event.global_position);
            let leaf = battlelog_tlog::leaf_hash(&record.stream_id, record.version, &event.hash);
            verify_inclusion(i as u64, 8, &leaf, &proof.proof, &checkpoint.root).expect("verifies");
        }
        let head = journal.signed_head("b").await.unwrap();
        assert_eq!(head.leaf_index, 7);
        journal.shutdown().await.unwrap();
    }

    /// A store whose global log does not read back while `failing` is set
    /// (a JetStream stream out of reach at start, say).
    #[derive(Debug)]
    struct Unreadable {
        inner: MemoryStore,
        failing: std::sync::atomic::AtomicBool,
    }

    impl EventStore for Unreadable {
        fn engine(&self) -> &'static str {
            "unreadable"
        }
        fn head<'a>(&'a self, stream_id: &'a str) -> StoreFuture<'a, Option<crate::store::Head>> {
            self.inner.head(stream_id)
        }
        fn idempotency<'a>(
            &'a self,
            stream_id: &'a str,
            keys: &'a [String],
        ) -> StoreFuture<'a, Vec<Option<crate::store::KeyEntry>>> {
            self.inner.idempotency(stream_id, keys)
        }
        fn append(&self, appends: Vec<PlannedAppend>) -> StoreFuture<'_, Vec<Result<Vec<u64>, Conflict>>> {
            self.inner.append(appends)
        }
        fn read_stream<'a>(
            &'a self,
            stream_id: &'a str,
            from_version: u64,
            page: crate::store::Page,
        ) -> StoreFuture<'a, Vec<StoredEvent>> {
            self.inner.read_stream(stream_id, from_version, page)
        }
        fn read_all(&self, from_position: u64, page: crate::store::Page) -> StoreFuture<'_, Vec<StoredEvent>> {
            if self.failing.load(std::sync::atomic::Ordering::SeqCst) {
                return Box::pin(async { Err(crate::store::StorageError::fatal("unreadable", "out of reach")) });
            }
            self.inner.read_all(from_position, page)
        }
        fn changes(&self) -> watch::Receiver<u64> {
            self.inner.changes()
        }
        fn close(&self) -> StoreFuture<'_, ()> {
            self.inner.close()
        }
    }

    /// Each checkpoint is kept before it is seen; a journal whose store
    /// does not read back up to the kept one refuses appends, signs
    /// nothing and proves nothing, and takes appends again once the store
    /// reads back in full and holds the kept log.
    #[tokio::test]
    async fn a_store_short_of_the_kept_checkpoint_is_held_until_it_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let kept_at = dir.path().join(kept::KEPT_CHECKPOINT_FILE);
        let keeping = |interval_ms| {
            let mut options = options(interval_ms);
            options.transparency.kept_checkpoint = Some(kept_at.clone());
            options
        };
        let store = Arc::new(Unreadable { inner: MemoryStore::new(), failing: false.into() });
        let first = Journal::open_on(store.clone(), keeping(10)).await.unwrap();
        interleaved(&first, 2).await;
        let signed = checkpoint_of(&first, 6).await;
        assert_eq!(kept::read(&kept_at).unwrap(), Some(signed.clone()), "kept before it was seen");

        store.failing.store(true, std::sync::atomic::Ordering::SeqCst);
        let second = Journal::open_on(store.clone(), keeping(10)).await.unwrap();
        let behind = second.store_behind().expect("nothing read back: behind the kept checkpoint");
        assert_eq!((behind.store_size, behind.checkpoint_size), (0, 6));
        assert!(!*second.watch_writable().borrow());
        let refused = second.append("a".into(), ExpectedVersion::Any, vec![rolled(0, 2)]).await;
        assert!(matches!(refused, Err(JournalError::StoreBehind(_))), "{refused:?}");
        let batch = second.append_batch(vec![("a".into(), ExpectedVersion::Any, vec![rolled(0, 2)])]).await;
        assert!(matches!(batch[0], Err(JournalError::StoreBehind(_))), "{batch:?}");
        assert!(matches!(second.consistency_proof(1, None), Err(JournalError::StoreBehind(_))));
        assert!(matches!(second.signed_head("a").await, Err(JournalError::StoreBehind(_))));
        assert_eq!(second.checkpoint(), Some(signed.clone()), "the kept one is served, nothing new is signed");

        store.failing.store(false, std::sync::atomic::Ordering::SeqCst);
        let mut writable = second.watch_writable();
        tokio::time::timeout(WAIT, writable.wait_for(|w| *w)).await.expect("writable again").unwrap();
        assert_eq!(second.store_behind(), None);
        second.append("a".into(), ExpectedVersion::Any, vec![rolled(0, 2)]).await.expect("taken again");
        let grown = checkpoint_of(&second, 7).await;
        let proof = second.consistency_proof(6, Some(7)).unwrap();
        verify_consistency(6, &signed.root, 7, &grown.root, &proof.proof).expect("extends the kept one");
        // The first journal shares the store: it closes it last.
        second.shutdown().await.unwrap();
        first.shutdown().await.unwrap();
    }

    #[test]
    fn origins_are_checked_at_their_edges() {
        assert!(check_origin(DEFAULT_ORIGIN).is_ok());
        assert!(check_origin(&"o".repeat(MAX_ORIGIN_BYTES)).is_ok());
        let long = check_origin(&"o".repeat(MAX_ORIGIN_BYTES + 1)).unwrap_err();
        assert!(long.contains("256") && long.contains("255"), "{long}");
        for bad in ["", "a b", "a+b", "a\nb", "a\tb"] {
            assert!(check_origin(bad).is_err(), "{bad:?}");
        }
    }

    /// The generated key is written once, owner-only, and read back the same.
    #[test]
    fn a_generated_key_is_kept_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested").join("log.key");
        let first = read_or_create_key(&path, "dev.example/log").unwrap();
        assert_eq!(first.origin(), "dev.example/log");
        let again = read_or_create_key(&path, "ignored.example/log").unwrap();
        assert_eq!(again.verifier_key(), first.verifier_key(), "an existing key is read, not replaced");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        std::fs::write(&path, "PRIVATE+KEY+garbage").unwrap();
        let err = read_or_create_key(&path, "dev.example/log").unwrap_err();
        assert!(err.contains("log.key"), "names the file: {err}");
        assert!(read_or_create_key(&dir.path().join("other.key"), "bad origin").is_err());
    }
}
