//! The real things that battlelog's system tests run against, started and
//! waited for without sleeps.
//!
//! - [`NatsServer`]: a real `nats-server -js` on a free loopback port with a
//!   temp store, optionally with a config file (users and permissions) and
//!   the environment it reads passwords from; stoppable and restartable on
//!   the same port and store.
//! - [`ServiceProcess`] / [`journal`]: a real service binary from the target
//!   dir (`target/<profile>/battlelog-journal`), its port read from its
//!   readiness line, then waited for over `grpc.health.v1`.
//! - [`temp_dir`]: a temp directory for sled data.
//! - [`poll_until`]: waiting on a condition with a deadline.
//! - [`bench`]: rates and percentiles for the benchmarks.
//!
//! A missing `nats-server` or service binary panics with what to do: the
//! tests that need them must fail, never skip.

pub mod bench;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tempfile::TempDir;
use tonic::transport::{Channel, Endpoint};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

/// How long a server may take to become ready.
pub const STARTUP_DEADLINE: Duration = Duration::from_secs(30);

/// A temp directory, removed when dropped.
pub fn temp_dir(label: &str) -> TempDir {
    tempfile::Builder::new().prefix(&format!("battlelog-{label}-")).tempdir().expect("create a temp dir")
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
    log: PathBuf,
}

impl ServiceProcess {
    /// Starts `binary` with `args` and `envs`, reads `<name> listening on
    /// <addr>` from its stdout, then waits until its health check says
    /// SERVING. Its stderr (the logs) goes to `log`.
    pub async fn start(binary: &Path, args: &[String], envs: &[(String, String)], log: &Path) -> Self {
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
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(addr) =
                    line.split(" listening on ").nth(1).and_then(|a| a.trim().parse::<SocketAddr>().ok())
                {
                    let _ = tx.send(Some(addr));
                }
            }
            let _ = tx.send(None);
        });
        let addr =
            tokio::task::spawn_blocking(move || rx.recv_timeout(STARTUP_DEADLINE)).await.expect("join").ok().flatten();
        let Some(addr) = addr else {
            let _ = child.kill();
            let log = std::fs::read_to_string(log).unwrap_or_default();
            panic!("{} printed no readiness line; its log:\n{log}", binary.display());
        };
        let process = Self { child, addr, log: log.to_path_buf() };
        process.wait_healthy().await;
        process
    }

    async fn wait_healthy(&self) {
        let url = self.url();
        let log = self.log.clone();
        let start = Instant::now();
        loop {
            if let Ok(channel) = Endpoint::from_shared(url.clone()).expect("url").connect().await {
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

    /// `http://<addr>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A fresh gRPC channel to it.
    pub async fn channel(&self) -> Channel {
        Endpoint::from_shared(self.url()).expect("url").tcp_nodelay(true).connect().await.expect("connect")
    }

    /// The OS process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL: no shutdown code runs.
    pub fn kill_9(mut self) {
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

/// Starts the real `battlelog-journal` on a free loopback port with its data
/// in `data_dir` and, when given, NATS at `nats_url`.
pub async fn journal(data_dir: &Path, nats_url: Option<&str>) -> ServiceProcess {
    let binary = service_binary("battlelog-journal");
    let mut args = vec!["--listen".to_owned(), "127.0.0.1:0".to_owned(), "--data-dir".to_owned()];
    args.push(data_dir.display().to_string());
    // The environment layer, so that it is exercised too.
    let mut envs = vec![("BATTLELOG_JOURNAL_LOG".to_owned(), "info".to_owned())];
    if let Some(url) = nats_url {
        envs.push(("BATTLELOG_JOURNAL_NATS_URL".to_owned(), url.to_owned()));
    }
    let log = data_dir.with_extension("log");
    ServiceProcess::start(&binary, &args, &envs, &log).await
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
    let binary = service_binary("battlelog-roller");
    let mut args: Vec<String> = ["--listen", "127.0.0.1:0", "--journal-url", journal_url, "--data-dir"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    args.push(data_dir.display().to_string());
    let mut envs = vec![("BATTLELOG_ROLLER_LOG".to_owned(), "info".to_owned())];
    match master_key_hex {
        Some(key) => envs.push(("BATTLELOG_ROLLER_MASTER_KEY".to_owned(), key.to_owned())),
        None => args.extend(["--dev".to_owned(), "true".to_owned()]),
    }
    std::fs::create_dir_all(data_dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", data_dir.display()));
    ServiceProcess::start(&binary, &args, &envs, &data_dir.with_extension("log")).await
}

/// Starts the real `battlelog-resolver` on a free loopback port against the
/// journal and roller at these URLs, following NATS at `nats_url` when
/// given. Its log goes to `log`.
pub async fn resolver(log: &Path, journal_url: &str, roller_url: &str, nats_url: Option<&str>) -> ServiceProcess {
    let binary = service_binary("battlelog-resolver");
    let mut args: Vec<String> = ["--listen", "127.0.0.1:0", "--journal-url", journal_url, "--roller-url", roller_url]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    if let Some(url) = nats_url {
        args.extend(["--nats-url".to_owned(), url.to_owned()]);
    }
    let envs = vec![("BATTLELOG_RESOLVER_LOG".to_owned(), "info".to_owned())];
    ServiceProcess::start(&binary, &args, &envs, log).await
}
