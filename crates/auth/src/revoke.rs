//! The revocation list: tokens refused before they expire, by their id
//! (`jti`) or by their subject, from a file each service re-reads while it
//! runs.
//!
//! The file is text, one entry a line:
//!
//! ```text
//! # a leaked forum token
//! jti 6f1c0e2a9d3b4c5e8f7a6b5c4d3e2f10
//! # every token of a forum that left
//! sub forum-b
//! ```
//!
//! Blank lines and lines starting with `#` are ignored. `battlelog token
//! revoke` appends entries. A service checks the file's size, modification
//! time and inode at most every `revoked_tokens_reload_ms` and re-reads it
//! when one changed, so a revocation takes effect within that interval,
//! without a restart.

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crate::claims::{Claims, MAX_SUBJECT_BYTES, token_id_ok};
use crate::token::TokenError;

/// How often a service looks at the file unless configured otherwise
/// (`revoked_tokens_reload_ms`).
pub const DEFAULT_RELOAD_EVERY: Duration = Duration::from_secs(1);

/// Why a revocation list cannot be used (at start) or written.
#[derive(Debug, thiserror::Error)]
pub enum RevocationError {
    #[error("cannot read revocation list {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("revocation list {path}, line {line}: {message}")]
    Line { path: PathBuf, line: usize, message: String },
    #[error("cannot write revocation list {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
}

/// One entry of the list.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Revocation {
    /// The token whose `jti` this is.
    TokenId(String),
    /// Every token whose `sub` this is, of any tenant.
    Subject(String),
}

impl Revocation {
    /// An entry, checked as the file's reader checks it.
    pub fn token_id(jti: &str) -> Result<Self, String> {
        if !token_id_ok(jti) {
            return Err(format!(
                "a token id must be 1 to {} bytes of printable ASCII without spaces",
                crate::claims::MAX_TOKEN_ID_BYTES
            ));
        }
        Ok(Revocation::TokenId(jti.to_owned()))
    }

    /// An entry for every token of `subject`.
    pub fn subject(subject: &str) -> Result<Self, String> {
        let trimmed = subject.trim();
        if trimmed.is_empty()
            || trimmed != subject
            || subject.len() > MAX_SUBJECT_BYTES
            || subject.chars().any(char::is_control)
        {
            return Err(format!(
                "a subject must be 1 to {MAX_SUBJECT_BYTES} printable bytes, without surrounding spaces"
            ));
        }
        Ok(Revocation::Subject(subject.to_owned()))
    }

    /// One line of the file (without `#` comments or blank lines).
    fn parse_line(line: &str) -> Result<Self, String> {
        match line.split_once(' ') {
            Some(("jti", id)) => Self::token_id(id.trim()),
            Some(("sub", subject)) => Self::subject(subject.trim()),
            _ => Err("expected `jti <token id>` or `sub <subject>`".into()),
        }
    }
}

impl fmt::Display for Revocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Revocation::TokenId(id) => write!(f, "jti {id}"),
            Revocation::Subject(subject) => write!(f, "sub {subject}"),
        }
    }
}

/// The entries of one version of the file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Revoked {
    token_ids: HashSet<String>,
    subjects: HashSet<String>,
}

impl Revoked {
    /// The entries of `text`, and each line that is not one (its number,
    /// from 1, and why).
    pub fn parse(text: &str) -> (Self, Vec<(usize, String)>) {
        let mut revoked = Self::default();
        let mut problems = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            match Revocation::parse_line(line) {
                Ok(entry) => revoked.insert(entry),
                Err(message) => problems.push((index + 1, message)),
            }
        }
        (revoked, problems)
    }

    pub fn insert(&mut self, entry: Revocation) {
        match entry {
            Revocation::TokenId(id) => self.token_ids.insert(id),
            Revocation::Subject(subject) => self.subjects.insert(subject),
        };
    }

    pub fn contains(&self, entry: &Revocation) -> bool {
        match entry {
            Revocation::TokenId(id) => self.token_ids.contains(id),
            Revocation::Subject(subject) => self.subjects.contains(subject),
        }
    }

    /// Refuses `claims` if their token id or subject is listed.
    pub fn check(&self, claims: &Claims) -> Result<(), TokenError> {
        if claims.jti.as_ref().is_some_and(|id| self.token_ids.contains(id)) {
            return Err(TokenError::Revoked { by: "token id (jti)" });
        }
        if self.subjects.contains(&claims.sub) {
            return Err(TokenError::Revoked { by: "subject" });
        }
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.token_ids.len() + self.subjects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What tells one version of the file from another without reading it.
/// `battlelog token revoke` appends, so the size always changes; an editor
/// that replaces the file changes its inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    inode: u64,
}

impl Stamp {
    fn of(metadata: &std::fs::Metadata) -> Self {
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(metadata);
        #[cfg(not(unix))]
        let inode = 0;
        Self { len: metadata.len(), modified: metadata.modified().ok(), inode }
    }
}

/// What a service logs when the list cannot be read while it runs.
const KEPT: &str = "cannot read the revocation list; keeping the last one read";

#[derive(Debug)]
struct State {
    revoked: Arc<Revoked>,
    stamp: Option<Stamp>,
    checked_at: Instant,
}

/// A service's revocation list: the file at `path`, re-read when it
/// changes, looked at no more often than every `reload_every`.
#[derive(Debug)]
pub struct RevocationList {
    path: PathBuf,
    reload_every: Duration,
    state: Mutex<State>,
}

impl RevocationList {
    /// Reads the list at `path`. At start the file must exist and every
    /// line must be an entry: a mistyped path or entry stops the service
    /// rather than leave a token it names accepted. (`battlelog up`
    /// creates its own, empty, first.)
    pub fn open(path: &Path, reload_every: Duration) -> Result<Self, RevocationError> {
        let read_error = |source| RevocationError::Read { path: path.to_owned(), source };
        let metadata = std::fs::metadata(path).map_err(read_error)?;
        let text = std::fs::read_to_string(path).map_err(read_error)?;
        let (revoked, problems) = Revoked::parse(&text);
        if let Some((line, message)) = problems.into_iter().next() {
            return Err(RevocationError::Line { path: path.to_owned(), line, message });
        }
        let state = State { revoked: Arc::new(revoked), stamp: Some(Stamp::of(&metadata)), checked_at: Instant::now() };
        Ok(Self { path: path.to_owned(), reload_every, state: Mutex::new(state) })
    }

    /// The list as it stands, re-read first if the file changed and the
    /// last look is `reload_every` old.
    pub fn current(&self) -> Arc<Revoked> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.checked_at.elapsed() >= self.reload_every {
            state.checked_at = Instant::now();
            self.reload(&mut state);
        }
        Arc::clone(&state.revoked)
    }

    /// Re-reads the file if it changed. While it cannot be read the last
    /// list stays (refusing every caller over a missing file would be an
    /// outage, accepting revoked tokens a hole); a line that is no entry is
    /// skipped and the others apply, since each only refuses more.
    fn reload(&self, state: &mut State) {
        let stamp = match std::fs::metadata(&self.path) {
            Ok(metadata) => Stamp::of(&metadata),
            Err(error) => {
                if state.stamp.take().is_some() {
                    tracing::error!(path = %self.path.display(), %error, "{KEPT}");
                }
                return;
            }
        };
        if state.stamp == Some(stamp) {
            return;
        }
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(error) => {
                tracing::error!(path = %self.path.display(), %error, "{KEPT}");
                return;
            }
        };
        let (revoked, problems) = Revoked::parse(&text);
        for (line, message) in problems {
            tracing::error!(path = %self.path.display(), line, %message, "revocation list line skipped");
        }
        tracing::info!(path = %self.path.display(), entries = revoked.len(), "revocation list reloaded");
        state.revoked = Arc::new(revoked);
        state.stamp = Some(stamp);
    }

    /// Refuses `claims` if the list names their token id or subject.
    pub fn check(&self, claims: &Claims) -> Result<(), TokenError> {
        self.current().check(claims)
    }

    /// How often, at most, the file is looked at again.
    pub fn reload_every(&self) -> Duration {
        self.reload_every
    }
}

/// Adds `entry` to the list at `path` (created if missing), unless it is
/// there already; says whether it was added. Appends with `O_APPEND`, so
/// two revocations at once both land and a reader sees whole lines.
pub fn append(path: &Path, entry: &Revocation) -> Result<bool, RevocationError> {
    use std::io::Write;
    let existing = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => return Err(RevocationError::Read { path: path.to_owned(), source }),
    };
    if Revoked::parse(&existing).0.contains(entry) {
        return Ok(false);
    }
    // A hand-edited last line without its newline would swallow the entry.
    let separator = if existing.is_empty() || existing.ends_with('\n') { "" } else { "\n" };
    let write_error = |source| RevocationError::Write { path: path.to_owned(), source };
    let mut file = std::fs::OpenOptions::new().append(true).create(true).open(path).map_err(write_error)?;
    file.write_all(format!("{separator}{entry}\n").as_bytes()).and_then(|()| file.sync_all()).map_err(write_error)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::Role;

    fn claims(sub: &str, jti: Option<&str>) -> Claims {
        Claims {
            sub: sub.into(),
            tenant: "t".into(),
            role: Role::Forum,
            exp: 2,
            iat: 1,
            nbf: None,
            jti: jti.map(str::to_owned),
            kid: "k".into(),
        }
    }

    #[test]
    fn the_file_names_token_ids_and_subjects() {
        let text = "# comment\n\njti abc123\nsub forum b\n  sub   padded  \n";
        let (revoked, problems) = Revoked::parse(text);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(revoked.len(), 3);
        assert_eq!(revoked.check(&claims("x", Some("abc123"))), Err(TokenError::Revoked { by: "token id (jti)" }));
        assert_eq!(revoked.check(&claims("forum b", Some("other"))), Err(TokenError::Revoked { by: "subject" }));
        assert_eq!(revoked.check(&claims("padded", None)), Err(TokenError::Revoked { by: "subject" }));
        assert_eq!(revoked.check(&claims("forum", Some("abc12"))), Ok(()));
        assert_eq!(revoked.check(&claims("forum", None)), Ok(()), "no jti: only its subject can revoke it");
    }

    #[test]
    fn lines_that_are_no_entry_are_named_by_number() {
        let (revoked, problems) = Revoked::parse("jti ok\njti\njti two words\nkid abc\nsub \u{7}bell\n");
        assert_eq!(revoked.len(), 1);
        assert_eq!(problems.iter().map(|(line, _)| *line).collect::<Vec<_>>(), [2, 3, 4, 5]);
    }

    #[test]
    fn appending_writes_whole_lines_once() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("revoked");
        let jti = Revocation::token_id("abc").expect("id");
        assert!(append(&path, &jti).expect("append"));
        assert!(!append(&path, &jti).expect("again"), "already listed");
        std::fs::write(&path, "jti abc\nsub no-newline").expect("hand edit");
        assert!(append(&path, &Revocation::subject("forum-b").expect("subject")).expect("append"));
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "jti abc\nsub no-newline\nsub forum-b\n");
        assert!(Revocation::subject(" padded").is_err());
        assert!(Revocation::token_id("two words").is_err());
    }

    #[test]
    fn a_list_is_reread_when_its_file_changes_and_kept_when_it_breaks() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("revoked");
        assert!(matches!(RevocationList::open(&path, Duration::ZERO), Err(RevocationError::Read { .. })));
        std::fs::write(&path, "jti a\nnonsense\n").expect("write");
        let error = RevocationList::open(&path, Duration::ZERO).expect_err("a bad line at start");
        assert!(error.to_string().ends_with("line 2: expected `jti <token id>` or `sub <subject>`"), "{error}");
        std::fs::write(&path, "jti a\n").expect("write");
        let list = RevocationList::open(&path, Duration::ZERO).expect("open");
        assert!(list.check(&claims("s", Some("a"))).is_err());
        append(&path, &Revocation::subject("s2").expect("subject")).expect("append");
        assert!(list.check(&claims("s2", None)).is_err(), "the appended entry is read");
        // A bad line is skipped; the entries around it apply.
        std::fs::write(&path, "jti b\nnonsense here\nsub s3\n").expect("write");
        assert!(list.check(&claims("s3", Some("b"))).is_err());
        assert!(list.check(&claims("s", Some("a"))).is_ok(), "the rewritten file no longer names it");
        std::fs::remove_file(&path).expect("remove");
        assert!(list.check(&claims("s3", None)).is_err(), "a vanished file keeps the last list");
    }

    #[test]
    fn between_looks_the_file_is_not_read() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("revoked");
        std::fs::write(&path, "").expect("write");
        let list = RevocationList::open(&path, Duration::from_secs(3600)).expect("open");
        append(&path, &Revocation::subject("s").expect("subject")).expect("append");
        assert!(list.check(&claims("s", None)).is_ok(), "not looked at again within the interval");
    }
}
