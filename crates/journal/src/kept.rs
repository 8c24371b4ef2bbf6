//! The newest signed checkpoint, kept apart from the store, so that a journal
//! never starts on a store behind what it signed.
//!
//! The transparency log is rebuilt from the store at every start
//! ([`crate::merkle_log`]): a store that lost its tail (a cut sled file,
//! a data dir restored from an older backup, a JetStream stream deleted and
//! made again) would otherwise rebuild a shorter tree without a word, take
//! new appends over the lost records' places and sign, for a size it had
//! signed before, a second and different root: a split view, the one thing a
//! transparency log must never show. So every checkpoint the journal signs
//! is first written here ([`keep`]: aside, fsynced, renamed over, the
//! directory fsynced), and only then handed to anyone; at start the rebuilt
//! tree is held to it ([`StoreBehind::compare`]): it must reach the kept
//! size with the same root there. A journal whose store does not is
//! *behind*: it takes no appends and signs nothing
//! (`STORE_BEHIND_CHECKPOINT`), serves its reads and exports, and says once
//! in its log which records are missing.
//!
//! The file is `<data_dir>/signed-checkpoint` ([`KEPT_CHECKPOINT_FILE`]),
//! beside the generated log key, on both backends: on sled because the
//! store is there too, yet a separate file the store's own recovery never
//! rewrites; on JetStream because it is the one place that is this
//! journal's own (the stream, or a bucket beside it, could be lost or
//! replaced together with the log it should hold to account; and journals
//! sharing a stream sign each at its own pace, so each holds the log to
//! what it signed itself). Only the largest checkpoint is kept: a store
//! whose tree has the kept root at the kept size has the same leaves up to
//! it, and so the same root at every smaller size too.
//!
//! The operator's way out, when the records are gone for good, is
//! [`accept_loss`] (`battlelog journal accept-loss`): it records the fork in
//! `<data_dir>/checkpoint-forks.jsonl` ([`FORKS_FILE`], appended to, never
//! rewritten) and removes the kept checkpoint, so the next start signs anew
//! over what the store holds; every start says how many forks the file
//! records.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use battlelog_tlog::{Checkpoint, Hash, Tree};
use serde::{Deserialize, Serialize};

use crate::error::JournalError;
use crate::store::EventStore;

/// The kept checkpoint's file name in the data dir.
pub const KEPT_CHECKPOINT_FILE: &str = "signed-checkpoint";

/// The file of forks an operator accepted, in the data dir: one JSON object
/// a line ([`Fork`]).
pub const FORKS_FILE: &str = "checkpoint-forks.jsonl";

/// Reads the checkpoint kept at `path`; `None` when no file is there. Its
/// signature is not checked here: the store is held to it whatever key
/// signed it.
pub fn read(path: &Path) -> Result<Option<Checkpoint>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read the kept checkpoint {}: {e}", path.display())),
    };
    Checkpoint::parse_unverified(&text)
        .map(Some)
        .map_err(|e| format!("{} holds no signed checkpoint: {e}", path.display()))
}

/// Keeps `checkpoint` at `path`, whole or not at all: written to a file
/// beside it, fsynced, renamed over it, and the directory fsynced, so that a
/// crash leaves the old checkpoint or the new one, never a part, and a
/// checkpoint handed out after this returns is on disk.
pub fn keep(path: &Path, checkpoint: &Checkpoint) -> std::io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    file.write_all(checkpoint.note.as_bytes())?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|e| e.error)?;
    sync_dir(dir)
}

/// Makes a rename or a new file in `dir` durable (a no-op where a directory
/// cannot be opened to sync, as on Windows).
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    std::fs::File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// How a store falls short of the kept checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreBehind {
    /// Records (leaves) the store's tree holds.
    pub store_size: u64,
    /// The kept checkpoint's tree size.
    pub checkpoint_size: u64,
    /// The kept checkpoint's root.
    pub checkpoint_root: Hash,
    /// The store's root at `checkpoint_size`, when its tree reaches that
    /// far: then it differs from `checkpoint_root` (another log).
    pub store_root: Option<Hash>,
}

impl StoreBehind {
    /// Holds `tree` (rebuilt from the store) to `kept`: `None` when the tree
    /// reaches the kept size with the kept root there.
    pub fn compare(tree: &Tree, kept: &Checkpoint) -> Option<StoreBehind> {
        let behind = |store_root| StoreBehind {
            store_size: tree.size(),
            checkpoint_size: kept.size,
            checkpoint_root: kept.root,
            store_root,
        };
        if kept.size == 0 {
            return None;
        }
        if tree.size() < kept.size {
            return Some(behind(None));
        }
        match tree.root(kept.size) {
            Ok(root) if root == kept.root => None,
            Ok(root) => Some(behind(Some(root))),
            // Any size up to the tree's has a root: unreachable, and
            // answered as the worst case rather than as a match.
            Err(_) => Some(behind(None)),
        }
    }

    /// Whether the store may still grow into the checkpoint (it is only
    /// short; with another root at the kept size it never will).
    pub fn only_short(&self) -> bool {
        self.store_root.is_none()
    }
}

impl std::fmt::Display for StoreBehind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.store_root {
            None => write!(
                f,
                "the store has {} records, the last signed checkpoint covers {}: records {}..{} are missing ({} records, \
                 counted from 0 in the global log, the end excluded)",
                self.store_size,
                self.checkpoint_size,
                self.store_size,
                self.checkpoint_size,
                self.checkpoint_size - self.store_size
            ),
            Some(root) => write!(
                f,
                "the store has {} records, but its tree at the last signed checkpoint's size {} has root {}, not the \
                 signed {}: the store holds another log than the one signed",
                self.store_size,
                self.checkpoint_size,
                hex::encode(root),
                hex::encode(self.checkpoint_root)
            ),
        }
    }
}

/// The tree of every record in `store`'s global log, read page by page
/// (`page` records, `max_bytes`, as the journal reads it). A record that
/// does not read back fails it.
pub async fn tree_of(store: &dyn EventStore, page: usize, max_bytes: usize) -> Result<Tree, JournalError> {
    let mut tree = Tree::new();
    let mut from = 0;
    loop {
        let events = store.read_all(from, crate::limits::wire_page(page, max_bytes)).await?;
        let Some(last) = events.last().map(|e| e.global_position) else {
            return Ok(tree);
        };
        for event in events.iter().filter(|e| e.global_position >= from) {
            tree.push(battlelog_tlog::leaf_hash(&event.event.stream_id, event.event.version, &event.hash));
        }
        from = last + 1;
    }
}

/// One fork an operator accepted: the checkpoint abandoned and the store
/// the journal went on with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fork {
    /// When it was recorded, in seconds since the Unix epoch.
    pub recorded_at_unix_secs: u64,
    /// Who ran it (the operating system's user, as the command saw it).
    pub by: String,
    /// Why, in the operator's words.
    pub reason: String,
    /// The abandoned checkpoint's tree size.
    pub abandoned_size: u64,
    /// Its root, hex.
    pub abandoned_root: String,
    /// The abandoned checkpoint's signed note, whole.
    pub abandoned_checkpoint: String,
    /// The records the store held.
    pub store_size: u64,
    /// The store's root at its size (hex; empty for an empty store): what
    /// the next checkpoints extend.
    pub store_root: String,
}

/// The forks recorded in `data_dir` ([`FORKS_FILE`]), oldest first.
pub fn forks(data_dir: &Path) -> Result<Vec<Fork>, String> {
    let path = data_dir.join(FORKS_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line).map_err(|e| format!("{} line {}: not a fork record: {e}", path.display(), i + 1))
        })
        .collect()
}

/// Why [`accept_loss`] refused.
#[derive(Debug, thiserror::Error)]
pub enum AcceptError {
    /// No checkpoint is kept in the data dir.
    #[error("{0} holds no kept checkpoint: nothing to accept")]
    NothingKept(PathBuf),
    /// The kept checkpoint is not the one the operator named.
    #[error("the kept checkpoint has tree size {kept}, not {named}: name the size the journal's log line gives")]
    OtherSize {
        /// The kept one's size.
        kept: u64,
        /// The size named.
        named: u64,
    },
    /// The store holds the kept checkpoint's log: nothing is lost.
    #[error(
        "the store holds the log of the kept checkpoint (tree size {0}, the same root): nothing is lost, and it is \
         not abandoned"
    )]
    NotBehind(u64),
    /// The reason was empty.
    #[error("--reason must say why (it is recorded with the fork)")]
    NoReason,
    /// The kept checkpoint or the forks file could not be read or written.
    #[error("{0}")]
    File(String),
    /// The store could not be read.
    #[error("reading the store: {0}")]
    Store(#[from] JournalError),
}

/// The operator's override of a journal behind its kept checkpoint, run with
/// the journal stopped: when the kept checkpoint in `data_dir` has tree
/// size `checkpoint_size` and `store` does not hold its log, records the
/// fork in [`FORKS_FILE`] (fsynced before anything else changes) and
/// removes the kept checkpoint, so that the journal starts again on what
/// the store holds and signs anew. Judges who kept a checkpoint past the
/// store's size see the fork: theirs is not consistent with the new ones.
pub async fn accept_loss(
    store: &dyn EventStore,
    data_dir: &Path,
    checkpoint_size: u64,
    reason: &str,
    by: &str,
) -> Result<Fork, AcceptError> {
    if reason.trim().is_empty() {
        return Err(AcceptError::NoReason);
    }
    let path = data_dir.join(KEPT_CHECKPOINT_FILE);
    let kept = read(&path).map_err(AcceptError::File)?.ok_or_else(|| AcceptError::NothingKept(data_dir.into()))?;
    if kept.size != checkpoint_size {
        return Err(AcceptError::OtherSize { kept: kept.size, named: checkpoint_size });
    }
    let limits = crate::limits::Limits::default();
    let tree = tree_of(store, limits.max_read_count, limits.max_read_bytes).await?;
    if StoreBehind::compare(&tree, &kept).is_none() {
        return Err(AcceptError::NotBehind(kept.size));
    }
    let store_root = match tree.size() {
        0 => String::new(),
        size => hex::encode(tree.root(size).map_err(|e| AcceptError::File(format!("the store's root: {e}")))?),
    };
    let fork = Fork {
        recorded_at_unix_secs: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        by: by.to_owned(),
        reason: reason.trim().to_owned(),
        abandoned_size: kept.size,
        abandoned_root: hex::encode(kept.root),
        abandoned_checkpoint: kept.note.clone(),
        store_size: tree.size(),
        store_root,
    };
    let forks = data_dir.join(FORKS_FILE);
    let record = |fork: &Fork| -> std::io::Result<()> {
        let mut line = serde_json::to_string(fork).map_err(std::io::Error::other)?;
        line.push('\n');
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&forks)?;
        file.write_all(line.as_bytes())?;
        file.sync_all()?;
        sync_dir(data_dir)
    };
    record(&fork).map_err(|e| AcceptError::File(format!("cannot record the fork in {}: {e}", forks.display())))?;
    // Only once the fork is on disk: a crash in between leaves the journal
    // still refusing, and the command can be run again.
    std::fs::remove_file(&path)
        .and_then(|()| sync_dir(data_dir))
        .map_err(|e| AcceptError::File(format!("cannot remove {}: {e}", path.display())))?;
    Ok(fork)
}

#[cfg(test)]
mod tests {
    use battlelog_tlog::LogKey;

    use super::*;

    fn tree(leaves: u8) -> Tree {
        let mut tree = Tree::new();
        for i in 0..leaves {
            tree.push([i; 32]);
        }
        tree
    }

    fn key() -> LogKey {
        LogKey::from_seed("test.example/log", [3; 32]).unwrap()
    }

    /// Kept and read back whole; a second keep replaces the first; no file
    /// is none; a file that is no checkpoint is named.
    #[test]
    fn a_checkpoint_is_kept_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(KEPT_CHECKPOINT_FILE);
        assert_eq!(read(&path).unwrap(), None);
        let first = key().sign_checkpoint(4, &tree(4).root(4).unwrap());
        keep(&path, &first).unwrap();
        assert_eq!(read(&path).unwrap(), Some(first));
        let second = key().sign_checkpoint(6, &tree(6).root(6).unwrap());
        keep(&path, &second).unwrap();
        assert_eq!(read(&path).unwrap(), Some(second));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "nothing left beside it");
        std::fs::write(&path, "not a note").unwrap();
        let err = read(&path).unwrap_err();
        assert!(err.contains(KEPT_CHECKPOINT_FILE), "{err}");
    }

    /// A tree that reaches the kept size with its root is not behind, grown
    /// past it too; a shorter one is, naming the missing records; one with
    /// another root there is, for good.
    #[test]
    fn a_tree_is_held_to_the_kept_checkpoint() {
        let kept = key().sign_checkpoint(6, &tree(6).root(6).unwrap());
        assert_eq!(StoreBehind::compare(&tree(6), &kept), None);
        assert_eq!(StoreBehind::compare(&tree(9), &kept), None);
        let short = StoreBehind::compare(&tree(3), &kept).expect("behind");
        assert!(short.only_short());
        assert!(
            short
                .to_string()
                .starts_with("the store has 3 records, the last signed checkpoint covers 6: records 3..6 are missing"),
            "{short}"
        );
        let mut other = tree(5);
        other.push([9; 32]);
        other.push([9; 32]);
        let forked = StoreBehind::compare(&other, &kept).expect("another log");
        assert!(!forked.only_short());
        assert!(forked.to_string().contains("another log"), "{forked}");
        let empty = key().sign_checkpoint(0, &[0; 32]);
        assert_eq!(StoreBehind::compare(&Tree::new(), &empty), None);
    }
}
