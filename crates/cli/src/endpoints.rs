//! What a running `battlelog up` tells the other commands through its data
//! directory: that it runs (an exclusive lock on `up.lock`, held for its
//! whole life) and where (`endpoints.json`: the resolver, roller, journal
//! and web URLs and the NATS URL `watch` may use, written once it listens).
//!
//! So the commands that talk to it (`demo`, `export`, `audit`, `replay`,
//! `watch`, …) find an `up` on other ports — port 0, `--resolver-listen` —
//! without flags, and a second `up` on the same data dir is refused in one
//! line before it touches anything. The lock, not the file's presence, says
//! whether `up` runs: a file left by a killed `up` is ignored, and the OS
//! releases the lock of a process however it ends.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

/// The lock file under the data dir.
const LOCK_FILE: &str = "up.lock";
/// The endpoints file under the data dir.
const ENDPOINTS_FILE: &str = "endpoints.json";

/// Where a running `up` listens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpEndpoints {
    pub resolver: String,
    pub roller: String,
    pub journal: String,
    pub web: String,
    /// A NATS URL that may subscribe to every battle's events (with the
    /// resolver's credentials for the server `up` started); none without
    /// NATS.
    pub nats: Option<String>,
}

/// `up`'s hold on its data dir; released (and the endpoints file removed)
/// when dropped.
#[derive(Debug)]
pub struct DataDirLock {
    _file: File,
    endpoints: PathBuf,
}

/// Takes the data dir for this `up`, or says in one line that another
/// `up` (its process id) has it.
pub fn lock(data_dir: &Path) -> anyhow::Result<DataDirLock> {
    let path = data_dir.join(LOCK_FILE);
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut pid = String::new();
            let _ = file.read_to_string(&mut pid);
            let pid = pid.trim();
            let by = if pid.is_empty() { String::new() } else { format!(" (process {pid})") };
            anyhow::bail!(
                "the data dir {} is in use by another `battlelog up`{by}: stop it, or pass another --data-dir",
                data_dir.display()
            );
        }
        Err(TryLockError::Error(e)) => return Err(e).with_context(|| format!("cannot lock {}", path.display())),
    }
    // For the refusal above, seen by the next `up`.
    file.set_len(0)?;
    file.rewind()?;
    write!(file, "{}", std::process::id())?;
    Ok(DataDirLock { _file: file, endpoints: data_dir.join(ENDPOINTS_FILE) })
}

impl DataDirLock {
    /// Writes where this `up` listens, whole or not at all (a reader never
    /// sees half a file).
    pub fn publish(&self, endpoints: &UpEndpoints) -> anyhow::Result<()> {
        let partial = self.endpoints.with_extension("json.partial");
        std::fs::write(&partial, serde_json::to_vec_pretty(endpoints)?)
            .with_context(|| format!("cannot write {}", partial.display()))?;
        std::fs::rename(&partial, &self.endpoints)
            .with_context(|| format!("cannot write {}", self.endpoints.display()))?;
        Ok(())
    }
}

impl Drop for DataDirLock {
    fn drop(&mut self) {
        // Before the lock goes (with the file, after this).
        let _ = std::fs::remove_file(&self.endpoints);
    }
}

/// Where the `up` running on `data_dir` listens; `None` when none runs
/// there (no lock held) or it has not published its endpoints yet.
pub fn running(data_dir: &Path) -> Option<UpEndpoints> {
    let file = File::open(data_dir.join(LOCK_FILE)).ok()?;
    match file.try_lock() {
        // Nobody holds it: no `up` runs here (and the lock goes with `file`).
        Ok(()) => None,
        Err(TryLockError::WouldBlock) => {
            let text = std::fs::read(data_dir.join(ENDPOINTS_FILE)).ok()?;
            serde_json::from_slice(&text).ok()
        }
        Err(TryLockError::Error(_)) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoints() -> UpEndpoints {
        UpEndpoints {
            resolver: "http://127.0.0.1:1".into(),
            roller: "http://127.0.0.1:2".into(),
            journal: "http://127.0.0.1:3".into(),
            web: "http://127.0.0.1:4".into(),
            nats: None,
        }
    }

    #[test]
    fn one_up_per_data_dir_and_its_endpoints_while_it_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(running(dir.path()), None, "nothing ran here");
        let held = lock(dir.path()).unwrap();
        assert_eq!(running(dir.path()), None, "locked, but nothing published yet");
        held.publish(&endpoints()).unwrap();
        assert_eq!(running(dir.path()), Some(endpoints()));

        let second = lock(dir.path()).unwrap_err().to_string();
        assert!(second.contains("in use by another `battlelog up`"), "{second}");
        assert!(second.contains(&format!("(process {})", std::process::id())), "{second}");
        assert_eq!(second.lines().count(), 1);

        drop(held);
        assert_eq!(running(dir.path()), None, "gone with the lock");
        assert!(!dir.path().join(ENDPOINTS_FILE).exists());
        // A file left behind by an `up` that was killed is not believed.
        std::fs::write(dir.path().join(ENDPOINTS_FILE), serde_json::to_vec(&endpoints()).unwrap()).unwrap();
        assert_eq!(running(dir.path()), None);
        lock(dir.path()).expect("free again");
    }
}
