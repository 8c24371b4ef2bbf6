//! The real things that battlelog's system tests run against, started and
//! waited for without sleeps.
//!
//! - [`NatsServer`]: a real `nats-server -js` on a free loopback port with a
//!   temp store, optionally with a config file (users and permissions) and
//!   the environment it reads passwords from; stoppable and restartable on
//!   the same port and store.
//! - [`mod@cluster`] / [`NatsCluster`]: three real `nats-server`s with
//!   JetStream routed on loopback (`sync_interval: always`), their stream
//!   leaders read from the monitoring endpoints; nodes killed, stopped
//!   (SIGSTOP, a partition), continued and restarted on the same ports.
//! - [`ServiceProcess`] / [`journal`]: a real service binary from the target
//!   dir (`target/<profile>/battlelog-journal`), its port read from its
//!   readiness line, then waited for over `grpc.health.v1`;
//!   [`StartOptions`] for a log level, a fixed port (a restart where its
//!   clients point) or config keys in the environment.
//! - [`TestPki`] / [`journal_tls`] / [`roller_tls`] / [`resolver_tls`]:
//!   the same services over mutual TLS, from a development PKI in a temp dir.
//! - [`auth`]: the tests' token signing key and tokens of every role; the
//!   starters configure every service with it.
//! - [`otlp`] / [`otlp::Collector`]: an OTLP/gRPC trace collector stand-in
//!   on a free loopback port, keeping the spans the services export.
//! - [`shipped_nats`]: a [`NatsServer`] with the shipped
//!   `deploy/nats/nats.conf`, every password it reads set.
//! - [`journal_client`]: calls against a running journal over gRPC, the
//!   records the tests append, and an independent chain check.
//! - [`journal_faults`] / [`journal_faults::FaultyJournal`]: a journal
//!   service in front of a real one that fails, delays or interrupts the
//!   calls a test chooses and passes the rest through.
//! - [`metrics`]: the metric families the services export, and a
//!   sample's value in a `/metrics` text.
//! - [`raw_grpc::Raw`]: a gRPC codec of raw bytes, for requests that do
//!   not decode.
//! - [`stack`] / [`stack::Stack`]: journal, roller and resolver as separate
//!   processes with a fixed master key, and what the battle tests check
//!   with (dice re-derived, exports, audits, JetStream, `battlelog up`).
//! - [`watch::WatchProcess`]: a running `battlelog watch`, read line by line.
//! - [`temp_dir`]: a temp directory for sled data.
//! - [`poll_until`]: waiting on a condition with a deadline;
//!   [`closed_by_server`]: waiting for the server to close a connection.
//! - [`mod@bench`]: rates and percentiles for the benchmarks.
//!
//! A missing `nats-server` or service binary panics with what to do: the
//! tests that need them must fail, never skip.

pub mod auth;
pub mod bench;
pub mod cluster;
pub mod journal_client;
pub mod journal_faults;
pub mod metrics;
pub mod otlp;
pub mod raw_grpc;
pub mod stack;
pub mod watch;

pub use auth::TestAuth;
pub use cluster::{NatsCluster, NodeCommand};

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use battlelog_runtime::tls::DevPki;
use tempfile::TempDir;
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

/// How long a server may take to become ready.
pub const STARTUP_DEADLINE: Duration = Duration::from_secs(30);

/// A temp directory, removed when dropped.
pub fn temp_dir(label: &str) -> TempDir {
    tempfile::Builder::new().prefix(&format!("battlelog-{label}-")).tempdir().expect("create a temp dir")
}

/// A process's resident set in bytes, from `/proc/<pid>/status`: what the
/// memory tests hold a service to.
pub fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc/<pid>/status");
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .expect("a VmRSS line in kB");
    kib * 1024
}

/// Whether every thread of process `pid` is stopped (state `T` in
/// `/proc/<pid>/task/<tid>/stat`). A thread that exits while it is read is
/// skipped; a process that is gone is a panic.
pub(crate) fn all_threads_stopped(pid: u32) -> bool {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap_or_else(|e| panic!("process {pid} has no /proc/{pid}/task: {e}"));
    tasks.filter_map(Result::ok).all(|task| {
        // The state is the first field after the command name, which is in
        // parentheses and may itself hold spaces or parentheses.
        std::fs::read_to_string(task.path().join("stat"))
            .map_or(true, |stat| stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('T')))
    })
}

/// Bytes in MiB, for the memory tests' messages.
pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Polls `check` every few milliseconds until it returns `Some`, or panics
/// with `what` after `deadline`. For waiting on arrival, never for ordering.
pub async fn poll_until<T, F, Fut>(what: &str, deadline: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(start.elapsed() < deadline, "timed out after {deadline:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// [`poll_until`] `counter` (counted by tasks under way) reaches `at_least`.
pub async fn until_counted(what: &str, deadline: Duration, counter: &std::sync::atomic::AtomicUsize, at_least: usize) {
    poll_until(what, deadline, || async {
        (counter.load(std::sync::atomic::Ordering::Relaxed) >= at_least).then_some(())
    })
    .await;
}

/// Finds `nats-server`: `$BATTLELOG_NATS_SERVER`, else on `PATH`. Panics when
/// absent, naming the installer.
pub fn nats_server_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("BATTLELOG_NATS_SERVER").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        assert!(path.is_file(), "BATTLELOG_NATS_SERVER={} does not exist; run scripts/install-tools", path.display());
        return path;
    }
    if let Some(path) = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|dir| dir.join("nats-server"))
        .find(|candidate| candidate.is_file())
    {
        return path;
    }
    panic!(
        "nats-server not found: set BATTLELOG_NATS_SERVER or put it on PATH \
         (scripts/install-tools installs it; scripts/test does both). NATS tests fail rather than skip."
    );
}

/// A running `nats-server` with JetStream.
#[derive(Debug)]
pub struct NatsServer {
    child: Option<Child>,
    port: u16,
    store: TempDir,
    log: PathBuf,
    /// `-c <file>` and the environment the file's `$VARIABLES` come from.
    config: Option<(PathBuf, Vec<(String, String)>)>,
}

impl NatsServer {
    /// Starts one on a free port with a fresh store.
    pub fn start() -> Self {
        Self::start_inner(None)
    }

    /// Starts one with the config file `config` (e.g. the shipped
    /// `deploy/nats/nats.conf`) and these environment variables (the
    /// passwords it references), on a free port with a fresh store: the
    /// flags override the file's ports (the HTTP monitor too, on a random
    /// port) and give the store, which the file must therefore not set.
    pub fn start_with_config(config: &Path, envs: &[(&str, &str)]) -> Self {
        let envs = envs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        Self::start_inner(Some((config.to_path_buf(), envs)))
    }

    fn start_inner(config: Option<(PathBuf, Vec<(String, String)>)>) -> Self {
        let store = temp_dir("nats");
        let log = store.path().join("nats.log");
        let mut server = Self { child: None, port: 0, store, log, config };
        server.spawn(None);
        server
    }

    /// The log so far (for assertion messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The client URL.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops it hard (SIGKILL); the port and store are kept for [`Self::restart`].
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port with the same store.
    pub fn restart(&mut self) {
        self.stop();
        let port = self.port;
        self.spawn(Some(port));
    }

    fn spawn(&mut self, port: Option<u16>) {
        let binary = nats_server_binary();
        let js_dir = self.store.path().join("jetstream");
        // Port -1 lets the server pick a free one and say which in its log,
        // so no port is guessed and raced for.
        let port_arg = port.map_or_else(|| "-1".to_owned(), |p| p.to_string());
        let mut command = Command::new(&binary);
        if let Some((config, envs)) = &self.config {
            command.arg("-c").arg(config).args(["-m", "-1"]).envs(envs.iter().map(|(k, v)| (k, v)));
        }
        let mut child = command
            .args(["-js", "-a", "127.0.0.1", "-p", &port_arg, "-sd"])
            .arg(&js_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let stderr = child.stderr.take().expect("piped stderr");
        self.child = Some(child);
        let (tx, rx) = mpsc::channel();
        let log = self.log.clone();
        std::thread::spawn(move || {
            let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&log).ok();
            let mut port = None;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(f) = file.as_mut() {
                    use std::io::Write;
                    let _ = writeln!(f, "{line}");
                }
                if let Some(rest) = line.split("Listening for client connections on ").nth(1) {
                    port = rest.trim().rsplit(':').next().and_then(|p| p.parse::<u16>().ok());
                }
                if line.contains("Server is ready") {
                    let _ = tx.send(port);
                }
            }
            let _ = tx.send(None);
        });
        match rx.recv_timeout(STARTUP_DEADLINE) {
            Ok(Some(p)) => self.port = p,
            other => {
                let log = std::fs::read_to_string(&self.log).unwrap_or_default();
                panic!("nats-server did not become ready ({other:?}); its log:\n{log}");
            }
        }
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A nats-server with the shipped `deploy/nats/nats.conf` (its users and
/// permissions), every password it reads set: `journal` `jp`, `resolver`
/// `rp`, `webhooks` `wp`, `forum-a` `ap`, `forum-b` `bp`.
pub fn shipped_nats() -> NatsServer {
    let config = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy/nats/nats.conf");
    let passwords = [
        ("JOURNAL_NATS_PASSWORD", "jp"),
        ("RESOLVER_NATS_PASSWORD", "rp"),
        ("WEBHOOKS_NATS_PASSWORD", "wp"),
        ("FORUM_A_NATS_PASSWORD", "ap"),
        ("FORUM_B_NATS_PASSWORD", "bp"),
    ];
    NatsServer::start_with_config(&config, &passwords)
}

/// Reads (and drops) whatever the server sends on `stream` until it closes
/// the connection (end of file or a reset); returns how long after `since`
/// that was, or `None` if it is still open at `deadline` after `since`.
pub async fn closed_by_server<R>(stream: &mut R, since: Instant, deadline: Duration) -> Option<Duration>
where
    R: tokio::io::AsyncRead + Unpin,
{
    use tokio::io::AsyncReadExt;
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.checked_sub(since.elapsed())?;
        match tokio::time::timeout(left, stream.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0) | Err(_)) => return Some(since.elapsed()),
            Ok(Ok(_)) => {}
        }
    }
}

/// Runs the workspace binary `binary` with `args` and `envs`, which must
/// refuse to start: exit at once with a failure status and no readiness
/// line. Its stderr, which says why.
pub async fn refused_start(binary: &str, args: &[String], envs: &[(String, String)]) -> String {
    let child = tokio::process::Command::new(service_binary(binary))
        .args(args)
        .envs(envs.iter().cloned())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // A service that starts anyway is stopped when the deadline drops it.
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("run {binary}: {e}"));
    let output = tokio::time::timeout(STARTUP_DEADLINE, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{binary} exits at once when it refuses, instead of serving"))
        .expect("its output");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "{binary} refuses {args:?}: {stderr}");
    assert!(output.stdout.is_empty(), "{binary}: no readiness line: {output:?}");
    stderr
}

/// Locates a workspace binary next to the running test executable
/// (`target/<profile>/deps/<test>` → `target/<profile>/<name>`). Panics with
/// the build command when it is missing.
pub fn service_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current test executable");
    let mut candidates = Vec::new();
    for dir in exe.ancestors().skip(1).take(2) {
        candidates.push(dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX)));
    }
    candidates.into_iter().find(|c| c.is_file()).unwrap_or_else(|| {
        panic!(
            "{name} binary not found next to {} — run `cargo build --workspace --bins` first \
             (scripts/test does)",
            exe.display()
        )
    })
}

/// A running service binary.
#[derive(Debug)]
pub struct ServiceProcess {
    child: Child,
    addr: SocketAddr,
    /// Its `/metrics` port, when it announced one (`metrics_listen`).
    metrics: Option<SocketAddr>,
    log: PathBuf,
    /// How to reach it when it serves TLS.
    tls: Option<ClientTlsConfig>,
}

impl ServiceProcess {
    /// Starts `binary` with `args` and `envs`, reads `<name> listening on
    /// <addr>` from its stdout, then waits until its health check says
    /// SERVING. Its stderr (the logs) goes to `log`.
    pub async fn start(binary: &Path, args: &[String], envs: &[(String, String)], log: &Path) -> Self {
        Self::start_tls(binary, args, envs, log, None).await
    }

    /// [`Self::start`] for a service that serves TLS: it is reached (health
    /// check, [`Self::url`], [`Self::channel`]) over `https://` with `tls`.
    pub async fn start_tls(
        binary: &Path,
        args: &[String],
        envs: &[(String, String)],
        log: &Path,
        tls: Option<ClientTlsConfig>,
    ) -> Self {
        Self::try_start_tls(binary, args, envs, log, tls).await.unwrap_or_else(|why| panic!("{why}"))
    }

    /// Starts a service that is not gRPC (the web pages): ready once it has
    /// printed its readiness line, which it does after binding.
    pub async fn start_http(binary: &Path, args: &[String], envs: &[(String, String)], log: &Path) -> Self {
        Self::start_unchecked(binary, args, envs, log, None).await
    }

    /// [`Self::start_tls`] for a start that may fail, as a supervisor
    /// (the kubelet, compose's `restart`) sees it: a process that exits, or
    /// prints no readiness line in time, is an `Err` with its log, and is
    /// gone.
    pub async fn try_start_tls(
        binary: &Path,
        args: &[String],
        envs: &[(String, String)],
        log: &Path,
        tls: Option<ClientTlsConfig>,
    ) -> Result<Self, String> {
        let process = Self::try_start_unchecked(binary, args, envs, log, tls).await?;
        process.wait_healthy().await;
        Ok(process)
    }

    async fn start_unchecked(
        binary: &Path,
        args: &[String],
        envs: &[(String, String)],
        log: &Path,
        tls: Option<ClientTlsConfig>,
    ) -> Self {
        Self::try_start_unchecked(binary, args, envs, log, tls).await.unwrap_or_else(|why| panic!("{why}"))
    }

    async fn try_start_unchecked(
        binary: &Path,
        args: &[String],
        envs: &[(String, String)],
        log: &Path,
        tls: Option<ClientTlsConfig>,
    ) -> Result<Self, String> {
        let log_file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .unwrap_or_else(|e| panic!("cannot open {}: {e}", log.display()));
        let mut child = Command::new(binary)
            .args(args)
            .envs(envs.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log_file)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            // `<name> metrics on http://<addr>/metrics` comes before the
            // readiness line, when the service serves its metrics.
            let mut metrics = None;
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(addr) = line
                    .split(" metrics on http://")
                    .nth(1)
                    .and_then(|a| a.trim().strip_suffix("/metrics")?.parse::<SocketAddr>().ok())
                {
                    metrics = Some(addr);
                }
                if let Some(addr) =
                    line.split(" listening on ").nth(1).and_then(|a| a.trim().parse::<SocketAddr>().ok())
                {
                    let _ = tx.send(Some((addr, metrics)));
                }
            }
            let _ = tx.send(None);
        });
        let addr =
            tokio::task::spawn_blocking(move || rx.recv_timeout(STARTUP_DEADLINE)).await.expect("join").ok().flatten();
        let Some((addr, metrics)) = addr else {
            let _ = child.kill();
            let _ = child.wait();
            let log = std::fs::read_to_string(log).unwrap_or_default();
            return Err(format!("{} printed no readiness line; its log:\n{log}", binary.display()));
        };
        Ok(Self { child, addr, metrics, log: log.to_path_buf(), tls })
    }

    async fn wait_healthy(&self) {
        let url = self.url();
        let log = self.log.clone();
        let start = Instant::now();
        loop {
            if let Ok(channel) = self.endpoint().connect().await {
                let mut health = HealthClient::new(channel);
                if let Ok(reply) = health.check(HealthCheckRequest { service: String::new() }).await
                    && reply.into_inner().status == ServingStatus::Serving as i32
                {
                    return;
                }
            }
            if start.elapsed() > STARTUP_DEADLINE {
                let log = std::fs::read_to_string(&log).unwrap_or_default();
                panic!("service at {url} not healthy after {STARTUP_DEADLINE:?}; its log:\n{log}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Its gRPC address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<addr>/metrics`, when it serves its metrics
    /// (`BATTLELOG_<SERVICE>_METRICS_LISTEN`).
    pub fn metrics_url(&self) -> Option<String> {
        self.metrics.map(|addr| format!("http://{addr}/metrics"))
    }

    /// `http://<addr>`, or `https://<addr>` when it serves TLS.
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    fn endpoint(&self) -> Endpoint {
        let endpoint = Endpoint::from_shared(self.url()).expect("url").tcp_nodelay(true);
        match &self.tls {
            Some(tls) => endpoint.tls_config(tls.clone()).expect("client TLS config"),
            None => endpoint,
        }
    }

    /// A fresh gRPC channel to it (over TLS, with the test PKI's CA and
    /// client certificate, when it serves TLS).
    pub async fn channel(&self) -> Channel {
        self.endpoint().connect().await.expect("connect")
    }

    /// [`Self::channel`] with `token` on every call.
    pub async fn authed(&self, token: &str) -> battlelog_auth::AuthChannel {
        battlelog_auth::authed(self.channel().await, token).expect("a token is ASCII")
    }

    /// The OS process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGSTOP, then waits (with a deadline) until every thread of the
    /// process is stopped: from then on it holds its sockets and answers
    /// nothing. `kill` returns once the signal is queued, not once it has
    /// taken effect: the kernel hands it to one thread, and only when that
    /// thread next runs does it stop the others. On a loaded machine it may
    /// wait for a CPU while the others go on serving; a test that froze the
    /// journal and then read through it saw its reads answered.
    pub async fn freeze(&self) {
        let pid = self.child.id();
        let sent = Command::new("kill").args(["-STOP", &pid.to_string()]).status().is_ok_and(|s| s.success());
        assert!(sent, "could not send SIGSTOP to {pid}");
        poll_until(&format!("every thread of {pid} stopped after SIGSTOP"), STARTUP_DEADLINE, || async move {
            all_threads_stopped(pid).then_some(())
        })
        .await;
    }

    /// SIGCONT after [`Self::freeze`]: it runs on where it stopped.
    pub fn thaw(&self) {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-CONT", &pid]).status().is_ok_and(|s| s.success());
        assert!(sent, "could not send SIGCONT to {pid}");
    }

    /// SIGKILL: no shutdown code runs.
    pub fn kill_9(mut self) {
        self.kill_9_in_place();
    }

    /// [`Self::kill_9`], keeping the handle: its address and log stay
    /// readable, e.g. to start the service again on the same port. Waits for
    /// the exit, so the port is free on return. A no-op once it has exited.
    pub fn kill_9_in_place(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, then waits (with a deadline) for it to exit; returns whether
    /// it exited 0.
    pub async fn terminate(mut self) -> bool {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status().is_ok_and(|s| s.success());
        assert!(sent, "could not send SIGTERM to {pid}");
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for the service") {
                if !status.success() {
                    // Say why in the test's output: a shutdown that fails is
                    // otherwise only a `false`.
                    eprintln!("the service exited {status} after SIGTERM:\n{}", self.log());
                }
                return status.success();
            }
            assert!(start.elapsed() < STARTUP_DEADLINE, "service did not exit after SIGTERM:\n{}", self.log());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The log so far (for assertion messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for ServiceProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What a starter may set beyond its defaults. `Default` is what the plain
/// starters ([`journal`], [`roller`], [`resolver`]) use.
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    /// The service's log filter; `None` is `info`.
    pub log: Option<String>,
    /// Where to listen; `None` is a free loopback port. A fixed one lets a
    /// restarted service come back where its clients already point.
    pub listen: Option<SocketAddr>,
    /// More environment, after the starter's own (so it wins): config keys
    /// a test sets, such as `BATTLELOG_JOURNAL_MAX_PAYLOAD_BYTES`.
    pub envs: Vec<(String, String)>,
}

impl StartOptions {
    /// Logging at `filter` (e.g. `debug`), everything else default.
    pub fn log(filter: &str) -> Self {
        Self { log: Some(filter.to_owned()), ..Self::default() }
    }

    fn listen_arg(&self) -> String {
        self.listen.map_or_else(|| "127.0.0.1:0".to_owned(), |addr| addr.to_string())
    }

    /// The log filter through the service's own key `<prefix>_LOG`, the
    /// environment layer, so that it is exercised too. A filter asked for
    /// explicitly is also `RUST_LOG`, which the services let win: an
    /// inherited `RUST_LOG` must not quietly lower what a test reads.
    fn log_envs(&self, prefix: &str) -> Vec<(String, String)> {
        let filter = self.log.clone().unwrap_or_else(|| "info".to_owned());
        let mut envs = vec![(format!("{prefix}_LOG"), filter.clone())];
        if self.log.is_some() {
            envs.push(("RUST_LOG".to_owned(), filter));
        }
        envs
    }
}

/// Starts the real `battlelog-journal` on a free loopback port with its data
/// in `data_dir` and, when given, NATS at `nats_url`.
pub async fn journal(data_dir: &Path, nats_url: Option<&str>) -> ServiceProcess {
    journal_with(data_dir, nats_url, &StartOptions::default()).await
}

/// [`journal`] with `options`. Its log goes to `<data_dir>.log` (appended
/// to, so a restart on the same data dir keeps one log).
pub async fn journal_with(data_dir: &Path, nats_url: Option<&str>, options: &StartOptions) -> ServiceProcess {
    try_journal_with(data_dir, nats_url, options).await.unwrap_or_else(|why| panic!("{why}"))
}

/// [`journal_with`] for a start that may fail: a journal that exits before
/// it is ready is an `Err` with its log.
pub async fn try_journal_with(
    data_dir: &Path,
    nats_url: Option<&str>,
    options: &StartOptions,
) -> Result<ServiceProcess, String> {
    let binary = service_binary("battlelog-journal");
    let mut args = vec!["--listen".to_owned(), options.listen_arg(), "--data-dir".to_owned()];
    args.push(data_dir.display().to_string());
    let mut envs = options.log_envs("BATTLELOG_JOURNAL");
    envs.extend(TestAuth::shared().env("journal"));
    if let Some(url) = nats_url {
        envs.push(("BATTLELOG_JOURNAL_NATS_URL".to_owned(), url.to_owned()));
    }
    envs.extend(options.envs.iter().cloned());
    let log = data_dir.with_extension("log");
    ServiceProcess::try_start_tls(&binary, &args, &envs, &log, None).await
}

/// The `battlelog` command-line binary (for `up`, `demo`, `export`, `audit`).
pub fn cli_binary() -> PathBuf {
    service_binary("battlelog")
}

/// Starts the real `battlelog-roller` on a free loopback port against the
/// journal at `journal_url`. With `master_key_hex` the key comes from
/// `BATTLELOG_ROLLER_MASTER_KEY` (so a test can derive the seeds itself);
/// without it the roller runs in dev mode with its key under `data_dir`.
/// Its log goes to `<data_dir>.log`.
pub async fn roller(data_dir: &Path, journal_url: &str, master_key_hex: Option<&str>) -> ServiceProcess {
    roller_with(data_dir, journal_url, master_key_hex, &StartOptions::default()).await
}

/// [`roller`] with `options`.
pub async fn roller_with(
    data_dir: &Path,
    journal_url: &str,
    master_key_hex: Option<&str>,
    options: &StartOptions,
) -> ServiceProcess {
    let binary = service_binary("battlelog-roller");
    let mut args: Vec<String> = vec!["--listen".to_owned(), options.listen_arg()];
    args.extend(["--journal-url", journal_url, "--data-dir"].iter().map(|s| (*s).to_owned()));
    args.push(data_dir.display().to_string());
    let mut envs = options.log_envs("BATTLELOG_ROLLER");
    envs.extend(TestAuth::shared().env("roller"));
    match master_key_hex {
        Some(key) => envs.push(("BATTLELOG_ROLLER_MASTER_KEY".to_owned(), key.to_owned())),
        None => args.extend(["--dev".to_owned(), "true".to_owned()]),
    }
    envs.extend(options.envs.iter().cloned());
    std::fs::create_dir_all(data_dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", data_dir.display()));
    ServiceProcess::start(&binary, &args, &envs, &data_dir.with_extension("log")).await
}

/// Starts the real `battlelog-resolver` on a free loopback port against the
/// journal and roller at these URLs, following NATS at `nats_url` when
/// given. Its log goes to `log`.
pub async fn resolver(log: &Path, journal_url: &str, roller_url: &str, nats_url: Option<&str>) -> ServiceProcess {
    resolver_with(log, journal_url, roller_url, nats_url, &StartOptions::default()).await
}

/// [`resolver`] with `options`.
pub async fn resolver_with(
    log: &Path,
    journal_url: &str,
    roller_url: &str,
    nats_url: Option<&str>,
    options: &StartOptions,
) -> ServiceProcess {
    let binary = service_binary("battlelog-resolver");
    let mut args: Vec<String> = vec!["--listen".to_owned(), options.listen_arg()];
    args.extend(["--journal-url", journal_url, "--roller-url", roller_url].iter().map(|s| (*s).to_owned()));
    if let Some(url) = nats_url {
        args.extend(["--nats-url".to_owned(), url.to_owned()]);
    }
    let mut envs = options.log_envs("BATTLELOG_RESOLVER");
    envs.extend(TestAuth::shared().env("resolver"));
    envs.extend(options.envs.iter().cloned());
    ServiceProcess::start(&binary, &args, &envs, log).await
}

/// `battlelog-web` reading from `resolver_url`: share links keyed by
/// `share_secret_file`, read as the reader whose token is in `token_file`.
pub async fn web(resolver_url: &str, share_secret_file: &Path, token_file: &Path, log: &Path) -> ServiceProcess {
    web_with(resolver_url, share_secret_file, token_file, log, &[]).await
}

/// [`web`] with more environment (`BATTLELOG_WEB_*` config keys).
pub async fn web_with(
    resolver_url: &str,
    share_secret_file: &Path,
    token_file: &Path,
    log: &Path,
    envs: &[(String, String)],
) -> ServiceProcess {
    let binary = service_binary("battlelog-web");
    let args: Vec<String> = [
        "--listen",
        "127.0.0.1:0",
        "--resolver-url",
        resolver_url,
        "--share-secret-file",
        &share_secret_file.display().to_string(),
        "--token-file",
        &token_file.display().to_string(),
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    ServiceProcess::start_http(&binary, &args, envs, log).await
}

/// A plain HTTP GET with `headers`: (status, body).
pub async fn http_get(url: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let (status, _, body) = http_get_raw(url, headers).await;
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// The same, with the answer's headers and its body's bytes as sent
/// (no decoding of a `Content-Encoding`).
pub async fn http_get_raw(url: &str, headers: &[(&str, &str)]) -> (u16, tonic::codegen::http::HeaderMap, Vec<u8>) {
    use http_body_util::BodyExt;
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Empty<tonic::codegen::Bytes>>();
    let mut request = tonic::codegen::http::Request::get(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(http_body_util::Empty::new()).expect("a request");
    let response = client.request(request).await.unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await.unwrap_or_else(|e| panic!("GET {url}: body: {e}")).to_bytes();
    (status, headers, body.to_vec())
}

/// A listener on a free loopback port and the `http://` URL that reaches
/// it, for an in-process server.
pub async fn loopback_listener() -> (tokio::net::TcpListener, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind a loopback port");
    let url = format!("http://{}", listener.local_addr().expect("the listener's address"));
    (listener, url)
}

/// A channel to `url` that connects on first use and carries `token`.
pub fn authed_channel(url: &str, token: &str) -> battlelog_auth::AuthChannel {
    let channel = Endpoint::from_shared(url.to_owned()).expect("a URL").connect_lazy();
    battlelog_auth::authed(channel, token).expect("an ASCII token")
}

/// [`http_get`] for a test that is not async.
pub fn http_get_blocking(url: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    runtime.block_on(http_get(url, headers))
}

/// A development PKI (`battlelog_runtime::tls::dev_pki`) in a temp dir:
/// a CA, a server certificate for `127.0.0.1` and a client certificate.
#[derive(Debug)]
pub struct TestPki {
    _dir: TempDir,
    pub pki: DevPki,
}

impl TestPki {
    pub fn generate(label: &str) -> Self {
        let dir = temp_dir(&format!("pki-{label}"));
        let pki = battlelog_runtime::tls::dev_pki(dir.path()).expect("generate a development PKI");
        Self { _dir: dir, pki }
    }

    /// Trusting the CA and presenting the client certificate.
    pub fn client(&self) -> ClientTlsConfig {
        self.pki.client().client_config().expect("client TLS config").expect("a CA")
    }

    /// Trusting the CA, with no client certificate.
    pub fn ca_only(&self) -> ClientTlsConfig {
        let keys = battlelog_runtime::tls::ClientTls { tls_ca: Some(self.pki.ca.clone()), ..Default::default() };
        keys.client_config().expect("client TLS config").expect("a CA")
    }

    fn path(path: &Path) -> String {
        path.display().to_string()
    }
}

/// [`journal`] serving mutual TLS from `pki`, configured through the
/// environment layer (`BATTLELOG_JOURNAL_TLS_*`).
pub async fn journal_tls(data_dir: &Path, nats_url: Option<&str>, pki: &TestPki) -> ServiceProcess {
    let binary = service_binary("battlelog-journal");
    let args = ["--listen", "127.0.0.1:0", "--data-dir", &TestPki::path(data_dir)].map(String::from).to_vec();
    let mut envs = vec![
        ("BATTLELOG_JOURNAL_LOG".to_owned(), "info".to_owned()),
        ("BATTLELOG_JOURNAL_TLS_CERT".to_owned(), TestPki::path(&pki.pki.server_cert)),
        ("BATTLELOG_JOURNAL_TLS_KEY".to_owned(), TestPki::path(&pki.pki.server_key)),
        ("BATTLELOG_JOURNAL_TLS_CLIENT_CA".to_owned(), TestPki::path(&pki.pki.ca)),
    ];
    envs.extend(TestAuth::shared().env("journal"));
    if let Some(url) = nats_url {
        envs.push(("BATTLELOG_JOURNAL_NATS_URL".to_owned(), url.to_owned()));
    }
    ServiceProcess::start_tls(&binary, &args, &envs, &data_dir.with_extension("log"), Some(pki.client())).await
}

/// [`roller`] serving mutual TLS from `pki` and calling the journal at the
/// `https://` `journal_url` with its client certificate, configured
/// through flags (`--tls-*`).
pub async fn roller_tls(data_dir: &Path, journal_url: &str, master_key_hex: &str, pki: &TestPki) -> ServiceProcess {
    let binary = service_binary("battlelog-roller");
    let p = &pki.pki;
    let args = [
        ("--listen", "127.0.0.1:0".to_owned()),
        ("--journal-url", journal_url.to_owned()),
        ("--data-dir", TestPki::path(data_dir)),
        ("--tls-cert", TestPki::path(&p.server_cert)),
        ("--tls-key", TestPki::path(&p.server_key)),
        ("--tls-client-ca", TestPki::path(&p.ca)),
        ("--tls-ca", TestPki::path(&p.ca)),
        ("--tls-client-cert", TestPki::path(&p.client_cert)),
        ("--tls-client-key", TestPki::path(&p.client_key)),
    ]
    .into_iter()
    .flat_map(|(flag, value)| [flag.to_owned(), value])
    .collect::<Vec<_>>();
    let mut envs = vec![
        ("BATTLELOG_ROLLER_LOG".to_owned(), "info".to_owned()),
        ("BATTLELOG_ROLLER_MASTER_KEY".to_owned(), master_key_hex.to_owned()),
    ];
    envs.extend(TestAuth::shared().env("roller"));
    std::fs::create_dir_all(data_dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", data_dir.display()));
    ServiceProcess::start_tls(&binary, &args, &envs, &data_dir.with_extension("log"), Some(pki.client())).await
}

/// [`resolver`] serving mutual TLS from `pki` and calling the `https://`
/// journal and roller with its client certificate, configured through a
/// TOML file (`--config`, written beside `log`).
pub async fn resolver_tls(
    log: &Path,
    journal_url: &str,
    roller_url: &str,
    nats_url: Option<&str>,
    pki: &TestPki,
) -> ServiceProcess {
    let binary = service_binary("battlelog-resolver");
    let p = &pki.pki;
    let mut config = format!(
        "listen = \"127.0.0.1:0\"\njournal_url = {journal_url:?}\nroller_url = {roller_url:?}\n\
         tls_cert = {:?}\ntls_key = {:?}\ntls_client_ca = {:?}\n\
         tls_ca = {:?}\ntls_client_cert = {:?}\ntls_client_key = {:?}\n",
        TestPki::path(&p.server_cert),
        TestPki::path(&p.server_key),
        TestPki::path(&p.ca),
        TestPki::path(&p.ca),
        TestPki::path(&p.client_cert),
        TestPki::path(&p.client_key),
    );
    if let Some(url) = nats_url {
        config.push_str(&format!("nats_url = {url:?}\n"));
    }
    let auth = TestAuth::shared();
    config.push_str(&format!(
        "auth_keys = [{:?}]\ntoken_file = {:?}\n",
        TestPki::path(&auth.public_key_file()),
        TestPki::path(&auth.service_token_file())
    ));
    let config_path = log.with_extension("toml");
    std::fs::write(&config_path, config).unwrap_or_else(|e| panic!("cannot write {}: {e}", config_path.display()));
    let args = vec!["--config".to_owned(), TestPki::path(&config_path)];
    let envs = vec![("BATTLELOG_RESOLVER_LOG".to_owned(), "info".to_owned())];
    ServiceProcess::start_tls(&binary, &args, &envs, log, Some(pki.client())).await
}
