//! A running `battlelog watch`, read line by line with bounded waits.

/// A running `battlelog watch`, its stdout and stderr line by line; killed
/// when dropped. Every wait is bounded by [`WATCH_WAIT`].
#[derive(Debug)]
pub struct WatchProcess {
    child: tokio::process::Child,
    stdout: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    // Kept open even when unread: a watch writing to a closed stderr dies of it.
    stderr: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStderr>>,
}

/// How long a watch may take to say something or show an event.
pub const WATCH_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

impl WatchProcess {
    /// Starts `battlelog watch <args>`.
    pub fn spawn(args: &[&str]) -> Self {
        use tokio::io::AsyncBufReadExt;
        let mut child = tokio::process::Command::new(crate::cli_binary())
            .arg("watch")
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("battlelog watch starts");
        let stdout = tokio::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
        let stderr = tokio::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
        Self { child, stdout, stderr }
    }

    /// Starts it and waits for its first line on stderr, which says what it
    /// watches (the subscription is then in place); returns that line too.
    pub async fn start(args: &[&str]) -> (Self, String) {
        let mut watch = Self::spawn(args);
        let line = watch.next_stderr().await;
        (watch, line)
    }

    /// The next line on stderr; panics when it ended or took too long.
    pub async fn next_stderr(&mut self) -> String {
        let line =
            tokio::time::timeout(WATCH_WAIT, self.stderr.next_line()).await.expect("watch says something in time");
        line.expect("stderr").expect("watch is still running")
    }

    /// The next line on stdout: `Err` after [`WATCH_WAIT`] without one,
    /// `Ok(None)` when the watch ended.
    pub async fn stdout_line(&mut self) -> Result<Option<String>, tokio::time::error::Elapsed> {
        tokio::time::timeout(WATCH_WAIT, self.stdout.next_line()).await.map(|line| line.expect("stdout"))
    }

    /// The next line on stdout; panics when it ended or took too long.
    pub async fn next_stdout(&mut self) -> String {
        self.stdout_line().await.expect("an event in time").expect("watch is still running")
    }

    /// Waits (bounded) for it to exit.
    pub async fn wait(&mut self) -> std::process::ExitStatus {
        tokio::time::timeout(WATCH_WAIT, self.child.wait()).await.expect("watch exits in time").expect("status")
    }
}
