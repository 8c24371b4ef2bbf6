//! `battlelog up`: the whole stack in one process — the journal, the roller
//! and the resolver as three real gRPC servers on loopback, the web pages,
//! sled under the data directory, a development master key generated there
//! on first start. Each service runs as its own binary would: `up` builds
//! its `Config` (ports, data dirs, token files, TLS files, the development
//! signing key's public half as `auth_keys`) and calls its own `run`, with
//! its `/metrics` on a free loopback port, printed under its line.
//!
//! Events fan out over NATS JetStream when a URL is given (or several: the
//! nodes of a cluster, read as every service reads a list,
//! battlelog_runtime::nats_url) or a `nats-server` binary is found (then
//! `up` starts one on any free port, or `--nats-port`, storing under the
//! data directory, with users and permissions as in `deploy/nats/`);
//! otherwise nothing fans out (the resolver catches up from the journal at
//! each command), and `up` says so.
//!
//! `--journal-backend jetstream` keeps the journal's log in NATS JetStream
//! instead of sled (the stream `BATTLELOG_JOURNAL` on the server `up` starts
//! or is given, with `--journal-replicas` copies when `up` creates it): the
//! log is then itself the fan-out, and the resolver follows
//! `battlelog.journal.>`. The banner says what the stream is: its replicas
//! and the nodes that hold them.
//!
//! `--webhook URL` also runs `battlelog-webhooks` (see
//! battlelog_webhooks): every committed event of the development tenant
//! is POSTed to URL, signed with the secret in `<data-dir>/webhooks/secret`
//! (created on first start), through a durable consumer of the fan-out, as
//! its NATS user `webhooks`. It needs NATS: it follows the sled journal's
//! fan-out, or with `--journal-backend jetstream` the journal's log.
//!
//! With `--tls` every port serves TLS from a development PKI under the data
//! directory, mutual between the services (see [`crate::tls`]).
//!
//! The data directory is its owner's alone (0700), and so is everything
//! `up` creates in it: the journal, the keys, NATS's store.
//!
//! The services refuse the tokens on the revocation list under the data
//! directory (`battlelog token revoke --data-dir`), re-read while running.

use battlelog_runtime::Announced;
use battlelog_runtime::config::Observability;
use battlelog_runtime::edge::TenantRateLimit;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use battlelog_auth::{RevocationList, Role, ShareSecret, SigningKey};
use battlelog_roller::MasterKey;
use clap::Args;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::Output;

pub const NATS_STREAM: &str = "BATTLELOG_EVENTS";
pub const NATS_SUBJECT_PREFIX: &str = "battlelog.events";
/// The durable consumer of `--webhook`'s battlelog-webhooks.
const WEBHOOKS_CONSUMER: &str = "battlelog-webhooks";
/// The JetStream stream of the journal's log (`--journal-backend jetstream`).
const JOURNAL_STREAM: &str = battlelog_journal::store::jetstream::DEFAULT_STREAM;
const JOURNAL_SUBJECT_PREFIX: &str = battlelog_journal::store::jetstream::SUBJECT_PREFIX;
/// The services' own tokens are minted at every start and live as long as
/// a development stack plausibly runs.
const SERVICE_TOKEN_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

#[derive(Debug, Args)]
pub struct UpArgs {
    /// Where sled, the development master key and NATS's store live.
    #[arg(long, env = "BATTLELOG_DATA_DIR", default_value = "data")]
    data_dir: PathBuf,
    /// The resolver's listen address (port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:50051")]
    resolver_listen: SocketAddr,
    /// The roller's listen address.
    #[arg(long, default_value = "127.0.0.1:50052")]
    roller_listen: SocketAddr,
    /// The journal's listen address.
    #[arg(long, default_value = "127.0.0.1:50053")]
    journal_listen: SocketAddr,
    /// The web pages' listen address (battle pages, /verify).
    #[arg(long, default_value = "127.0.0.1:8080")]
    web_listen: SocketAddr,
    /// Use this NATS server (with JetStream) instead of starting one, or
    /// several comma-separated: any nodes of a cluster.
    #[arg(long, env = "BATTLELOG_NATS_URL")]
    nats_url: Option<String>,
    /// The port of the nats-server `up` starts; default: any free one (the
    /// banner prints it).
    #[arg(long)]
    nats_port: Option<u16>,
    /// No NATS, even when a URL is set or a nats-server binary is found:
    /// nothing is fanned out (the resolver catches up from the journal;
    /// `battlelog watch --from-journal` follows it).
    #[arg(long)]
    no_nats: bool,
    /// Serve TLS on every port (https:// endpoints) from a development CA
    /// generated under `<data-dir>/tls`; mutual TLS between the services.
    #[arg(long)]
    tls: bool,
    /// Bytes of folded battles kept in memory, all services together: three
    /// quarters for the resolver's views, a quarter for the roller's ledgers.
    #[arg(long, env = "BATTLELOG_CACHE_BYTES", default_value_t = battlelog_stream::DEFAULT_CACHE_BYTES)]
    cache_bytes: u64,
    /// Seconds after a battle's close during which disputes and rulings are
    /// still taken (the resolver's `appeal_window_secs`).
    #[arg(long, env = "BATTLELOG_APPEAL_WINDOW_SECS", default_value_t = battlelog_resolver::service::DEFAULT_APPEAL_WINDOW.as_secs())]
    appeal_window_secs: u64,
    /// Requests per second each tenant's tokens may make at the resolver
    /// (its `rate_limit_per_sec`); 0 turns the limit off, e.g. for a load
    /// test of one tenant.
    #[arg(long, env = "BATTLELOG_RATE_LIMIT_PER_SEC", default_value_t = TenantRateLimit::default().rate_limit_per_sec)]
    rate_limit_per_sec: u32,
    /// Requests a tenant may make at once above its rate (the resolver's
    /// `rate_limit_burst`).
    #[arg(long, env = "BATTLELOG_RATE_LIMIT_BURST", default_value_t = TenantRateLimit::default().rate_limit_burst)]
    rate_limit_burst: u32,
    /// Where the journal keeps its log: `sled` under the data dir, or
    /// `jetstream` in the NATS server (started or given).
    #[arg(long, value_enum, env = "BATTLELOG_JOURNAL_BACKEND", default_value = "sled")]
    journal_backend: JournalBackend,
    /// With `--journal-backend jetstream`: the replicas of the journal's
    /// stream when `up` creates it (the journal's `replicas`), 1..=5 and at
    /// most the nodes of the cluster given with `--nats-url`; default 1.
    #[arg(long, env = "BATTLELOG_JOURNAL_REPLICAS")]
    journal_replicas: Option<usize>,
    /// POST every committed event of tenant `dev` to this URL, signed the
    /// Standard Webhooks way with the secret in `<data-dir>/webhooks/secret`.
    #[arg(long, env = "BATTLELOG_WEBHOOK_URL")]
    webhook: Option<String>,
    /// The webhooks' HTTP port (`/metrics`, parked deliveries), with --webhook.
    #[arg(long, default_value = "127.0.0.1:50054")]
    webhooks_listen: SocketAddr,
    /// Export the traces of every service of the stack to this OTLP/gRPC
    /// collector (`http://127.0.0.1:4317`); none: no traces exported (the
    /// services' `otlp_endpoint`).
    #[arg(long, env = "BATTLELOG_OTLP_ENDPOINT")]
    otlp_endpoint: Option<String>,
}

/// `--journal-backend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum JournalBackend {
    Sled,
    Jetstream,
}

/// A `nats-server` binary: `BATTLELOG_NATS_SERVER`, then `PATH`, then the
/// one `scripts/install-tools` puts in `.tools/bin`.
fn find_nats_server() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("BATTLELOG_NATS_SERVER").map(PathBuf::from) {
        return path.is_file().then_some(path);
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join("nats-server"));
    on_path.chain([PathBuf::from(".tools/bin/nats-server")]).find(|path| path.is_file())
}

/// A `nats-server -js` on a free loopback port, stopped when dropped.
///
/// It runs with users and permissions as `deploy/nats/nats.conf` defines
/// them: `journal` alone publishes events, `resolver` follows them. Their
/// passwords are random, new at every start, and live only in the config
/// written under the data directory (mode 0600) and in this process.
struct NatsServer {
    child: tokio::process::Child,
    /// Without credentials: for people to read.
    url: String,
    /// As the `journal` user.
    journal_url: String,
    /// As the `resolver` user.
    resolver_url: String,
    /// As the `webhooks` user.
    webhooks_url: String,
    /// The config file, with the passwords.
    config: PathBuf,
}

/// The config `up` gives its own nats-server: `deploy/nats/nats.conf`'s
/// journal and resolver users (no tenant users: `up` is one developer's
/// stack), with these passwords.
fn nats_config(journal_password: &str, resolver_password: &str, webhooks_password: &str) -> String {
    // The webhooks' durable consumer on the fan-out or on the journal's log.
    let webhooks_allow = [NATS_STREAM, JOURNAL_STREAM]
        .iter()
        .flat_map(|stream| {
            let durable = WEBHOOKS_CONSUMER;
            [
                format!("\"$JS.API.STREAM.INFO.{stream}\""),
                format!("\"$JS.API.CONSUMER.INFO.{stream}.{durable}\""),
                format!("\"$JS.API.CONSUMER.CREATE.{stream}.{durable}\""),
                format!("\"$JS.API.CONSUMER.CREATE.{stream}.{durable}.>\""),
                format!("\"$JS.API.CONSUMER.DURABLE.CREATE.{stream}.{durable}\""),
                format!("\"$JS.API.CONSUMER.MSG.NEXT.{stream}.{durable}\""),
                format!("\"$JS.ACK.{stream}.{durable}.>\""),
            ]
        })
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        r#"# Written by `battlelog up` at every start, with fresh random passwords.
# The users and permissions of deploy/nats/nats.conf: the journal alone
# publishes battlelog.events.> (and, with --journal-backend jetstream, its
# log battlelog.journal.>), the resolver only follows them.
# One append is one message with the JetStream journal: up to about 1.1 MiB.
max_payload: 8MB
authorization {{
  users: [
    {{ user: "journal", password: "{journal_password}", permissions: {{ publish: {{ allow: ["battlelog.events.>", "$JS.API.STREAM.INFO.{NATS_STREAM}", "$JS.API.STREAM.CREATE.{NATS_STREAM}", "$JS.API.STREAM.MSG.GET.{NATS_STREAM}", "{JOURNAL_SUBJECT_PREFIX}.>", "$JS.API.STREAM.INFO.{JOURNAL_STREAM}", "$JS.API.STREAM.CREATE.{JOURNAL_STREAM}", "$JS.API.STREAM.MSG.GET.{JOURNAL_STREAM}", "$JS.API.CONSUMER.CREATE.{JOURNAL_STREAM}", "$JS.FC.>"] }}, subscribe: {{ allow: ["_INBOX.>"] }} }} }}
    {{ user: "resolver", password: "{resolver_password}", permissions: {{ publish: {{ deny: [">"] }}, subscribe: {{ allow: ["battlelog.events.>", "{JOURNAL_SUBJECT_PREFIX}.>"] }} }} }}
    {{ user: "webhooks", password: "{webhooks_password}", permissions: {{ publish: {{ allow: [{webhooks_allow}] }}, subscribe: {{ allow: ["_INBOX.>"] }} }} }}
  ]
}}
"#
    )
}

/// 32 random bytes in hex, from the operating system.
fn random_password() -> anyhow::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut bytes))
        .context("cannot read /dev/urandom for the NATS passwords")?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Writes `text` to `path` readable by the owner only (it holds passwords).
fn write_private(path: &Path, text: &str) -> anyhow::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        options.mode(0o600);
        // An older file keeps its mode through `create`: set it anyway.
        if path.exists() {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        }
    }
    let mut file = options.open(path).with_context(|| format!("cannot write {}", path.display()))?;
    file.write_all(text.as_bytes())?;
    Ok(())
}

/// The development webhook secret at `path`: read, or made (random,
/// `whsec_…`, owner-only) on first start, so that a receiver configured
/// with it keeps working across restarts.
fn webhook_secret(path: &Path) -> anyhow::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let secret = text.trim().to_owned();
            battlelog_webhooks::signature::Secret::parse(&secret)
                .map_err(|e| anyhow::anyhow!("{}: the webhook secret {e}", path.display()))?;
            Ok(secret)
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            let secret = battlelog_webhooks::signature::Secret::generate()
                .map_err(|e| anyhow::anyhow!("cannot make a webhook secret: {e}"))?;
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            write_private(path, &format!("{secret}\n"))?;
            Ok(secret)
        }
        Err(error) => Err(error).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Starts `binary` on `port`, or on any free port (which it picks itself,
/// so no port is guessed and raced for: NATS's usual 4222 is left to a
/// server the machine may run besides; the commands find this one through
/// the data dir). It writes the port it took to a ports file
/// (`--ports_file_dir`), read here; its log goes to `nats.log` beside its
/// store.
async fn start_nats(binary: &Path, store: &Path, port: Option<u16>) -> anyhow::Result<NatsServer> {
    std::fs::create_dir_all(store).with_context(|| format!("cannot create {}", store.display()))?;
    let journal_password = random_password()?;
    let resolver_password = random_password()?;
    let webhooks_password = random_password()?;
    let config = store.join("nats.conf");
    write_private(&config, &nats_config(&journal_password, &resolver_password, &webhooks_password))?;
    let log = store.join("nats.log");
    let port_arg = port.map_or_else(|| "-1".to_owned(), |p| p.to_string());
    let mut child = tokio::process::Command::new(binary)
        .arg("-c")
        .arg(&config)
        .args(["-js", "-a", "127.0.0.1", "-p", &port_arg, "-sd"])
        .arg(store)
        .arg("--ports_file_dir")
        .arg(store)
        .arg("-l")
        .arg(&log)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("cannot start {}", binary.display()))?;
    let pid = child.id().context("the nats-server exited at once")?;
    // Wait until it has written its ports file (it listens by then); give
    // up after ten seconds, or as soon as it exits.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let port = loop {
        if let Some(port) = ports_file_port(store, pid) {
            break port;
        }
        if let Some(status) = child.try_wait()? {
            let last = std::fs::read_to_string(&log).unwrap_or_default().lines().last().unwrap_or_default().to_owned();
            anyhow::bail!("{} exited at start ({status}): {last}", binary.display());
        }
        anyhow::ensure!(tokio::time::Instant::now() < deadline, "{} did not start listening", binary.display());
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    Ok(NatsServer {
        child,
        url: format!("nats://127.0.0.1:{port}"),
        journal_url: format!("nats://journal:{journal_password}@127.0.0.1:{port}"),
        resolver_url: format!("nats://resolver:{resolver_password}@127.0.0.1:{port}"),
        webhooks_url: format!("nats://webhooks:{webhooks_password}@127.0.0.1:{port}"),
        config,
    })
}

/// The client port in the ports file nats-server `pid` wrote under `dir`
/// (`<binary>_<pid>.ports`: `{"nats":["nats://127.0.0.1:<port>"],…}`), once
/// it is there whole; the file is then removed (a killed server leaves it).
fn ports_file_port(dir: &Path, pid: u32) -> Option<u16> {
    let suffix = format!("_{pid}.ports");
    let path = std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(&suffix)))?;
    let ports: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).ok()?).ok()?;
    let port = ports["nats"].as_array()?.first()?.as_str()?.rsplit(':').next()?.parse().ok()?;
    let _ = std::fs::remove_file(&path);
    Some(port)
}

async fn bind(addr: SocketAddr, what: &str, scheme: &str) -> anyhow::Result<(TcpListener, String)> {
    let listener = TcpListener::bind(addr).await.with_context(|| format!("cannot listen on {addr} for the {what}"))?;
    let url = format!("{scheme}://{}", listener.local_addr()?);
    Ok((listener, url))
}

/// Makes `data_dir` its owner's alone (0700), creating it if missing, and
/// every file and directory this process creates from now on (sled's, the
/// keys', NATS's, which inherits it): they hold the battles before their
/// seeds are revealed, and secrets.
fn private_data_dir(data_dir: &Path) -> anyhow::Result<()> {
    battlelog_runtime::private::owner_only_from_now_on();
    // A data dir from before, or made by hand, may be open to others.
    battlelog_runtime::private::private_dir(data_dir)
        .with_context(|| format!("cannot make the data dir {} owner-only (0700)", data_dir.display()))
}

/// `up`'s revocation list, created empty on first start.
fn revocation_list(data_dir: &Path) -> anyhow::Result<RevocationList> {
    let path = crate::tls::dev_revoked_tokens(data_dir);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
        Ok(mut file) => file.write_all(
            b"# Tokens battlelog up's services refuse, one `jti <token id>` or `sub <subject>` a line.\n\
              # `battlelog token revoke --data-dir <this data dir>` adds to it; no restart needed.\n",
        )?,
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(error) => return Err(error).with_context(|| format!("cannot create {}", path.display())),
    }
    Ok(RevocationList::open(&path, battlelog_auth::revoke::DEFAULT_RELOAD_EVERY)?)
}

/// JetStream's range of a stream's replicas.
const REPLICAS: std::ops::RangeInclusive<usize> = 1..=5;

/// Checks the NATS flags together before anything starts, each refusal
/// naming its flags: the `--nats-url` list (read as every service reads
/// one), `--nats-port` only for the server `up` starts, and
/// `--journal-replicas` in JetStream's range, for the JetStream journal,
/// and above 1 only on a cluster given with `--nats-url` (the server `up`
/// starts is one node: JetStream would refuse the stream).
fn cluster_flags(args: &UpArgs) -> anyhow::Result<Option<battlelog_runtime::nats_url::NatsUrls>> {
    let given = match &args.nats_url {
        Some(list) => {
            Some(battlelog_runtime::nats_url::NatsUrls::parse(list).map_err(|e| anyhow::anyhow!("--nats-url: {e}"))?)
        }
        None => None,
    };
    if let Some(port) = args.nats_port {
        if args.no_nats {
            anyhow::bail!("--nats-port {port} is the port of the nats-server up starts, but --no-nats was given");
        }
        if args.nats_url.is_some() {
            anyhow::bail!(
                "--nats-port {port} is the port of the nats-server up starts, but --nats-url names one it does not start"
            );
        }
    }
    if let Some(replicas) = args.journal_replicas {
        if !REPLICAS.contains(&replicas) {
            anyhow::bail!("--journal-replicas {replicas} is not in 1..=5 (JetStream's range)");
        }
        if args.journal_backend != JournalBackend::Jetstream {
            anyhow::bail!(
                "--journal-replicas sets the replicas of the journal's JetStream stream: it needs --journal-backend jetstream"
            );
        }
        if replicas > 1 && args.nats_url.is_none() {
            anyhow::bail!(
                "--journal-replicas {replicas} needs a NATS cluster of {replicas} nodes or more, given with --nats-url: the nats-server up starts is one node"
            );
        }
    }
    Ok(given)
}

/// What the journal's JetStream stream is, for the banner: its replicas and
/// the nodes holding them, as JetStream reports it (as `urls`, the
/// journal's login). Right after the stream is made its leader may still be
/// being elected: asked again for a few seconds until it is known.
async fn stream_line(urls: &str, stream: &str, asked: usize) -> String {
    let report = async {
        let urls = battlelog_runtime::nats_url::NatsUrls::parse(urls)?;
        let client = urls.connect_options().name("battlelog-up").connect(urls.addresses()).await?;
        let js = async_nats::jetstream::new(client);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            let info = js.get_stream(stream).await?.info().await?.clone();
            let cluster = info.cluster.clone().unwrap_or_default();
            let peers = cluster.replicas.len() + usize::from(cluster.leader.is_some());
            if (cluster.leader.is_some() && peers >= info.config.num_replicas) || tokio::time::Instant::now() > deadline
            {
                return Ok::<_, Box<dyn std::error::Error + Send + Sync>>((info.config.num_replicas, cluster));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    match tokio::time::timeout(Duration::from_secs(10), report).await {
        Ok(Ok((replicas, cluster))) => {
            let mut nodes: Vec<String> = cluster.leader.iter().map(|leader| format!("{leader} (leader)")).collect();
            nodes.extend(cluster.replicas.iter().map(|peer| peer.name.clone()));
            let plural = if replicas == 1 { "replica" } else { "replicas" };
            let on = if nodes.is_empty() { String::new() } else { format!(" on {}", nodes.join(", ")) };
            let existed = if replicas == asked {
                String::new()
            } else {
                format!(" (it existed: --journal-replicas {asked} applies to a stream up creates)")
            };
            format!("{stream}: {replicas} {plural}{on}{existed}")
        }
        Ok(Err(error)) => format!("{stream}: cannot read what it is ({error})"),
        Err(_) => format!("{stream}: cannot read what it is (no answer in 10 s)"),
    }
}

pub async fn up(args: &UpArgs) -> anyhow::Result<Output> {
    // One subscriber for the four services of this process; kept until `up`
    // returns (dropping it flushes the trace exporter, when there is one).
    // Checked as the services check their own `otlp_endpoint`.
    let tracing = Observability { otlp_endpoint: args.otlp_endpoint.clone(), ..Observability::default() };
    tracing.validate()?;
    let _telemetry = battlelog_runtime::telemetry::init(
        "warn",
        battlelog_runtime::logging::LogFormat::Text,
        "up",
        tracing.otlp_endpoint.as_deref(),
    )
    .map_err(anyhow::Error::msg)?;
    // A receiver's address is checked before anything starts, as the
    // service's own config checks `tenants.<name>.url`: a typo must not
    // start a stack that parks every delivery.
    if let Some(url) = &args.webhook
        && !(url.starts_with("http://") || url.starts_with("https://"))
    {
        anyhow::bail!("--webhook {url:?} must be an http:// or https:// URL");
    }
    let given_nats = cluster_flags(args)?;
    private_data_dir(&args.data_dir)?;
    // Before anything binds or opens: a second `up` here is told so in one
    // line, not by a port clash or sled's lock error. Held until `up` ends.
    let data_dir_lock = crate::endpoints::lock(&args.data_dir)?;
    // Four servers share this process's files: each stays under its own
    // connection limit (the services' defaults), which together need more
    // than a soft limit of 1 024.
    battlelog_runtime::raise_file_limit();
    let tls = crate::tls::UpTls::new(args.tls, &args.data_dir)?;
    let (journal_listener, journal_url) = bind(args.journal_listen, "journal", tls.scheme()).await?;
    let (roller_listener, roller_url) = bind(args.roller_listen, "roller", tls.scheme()).await?;
    let (resolver_listener, resolver_url) = bind(args.resolver_listen, "resolver", tls.scheme()).await?;
    // The pages are plain HTTP on loopback; a deployment puts its TLS proxy
    // in front (deploy/).
    let (web_listener, web_url) = bind(args.web_listen, "web pages", "http").await?;

    // The development token signing key: every service accepts the tokens
    // it signs (its public half, `auth_keys`), and the client commands mint
    // theirs with it (tenant `dev`).
    let signing_key_path = crate::tls::dev_signing_key(&args.data_dir);
    let signing_key = SigningKey::read_or_create(&signing_key_path)?;
    let auth_keys = vec![battlelog_auth::keys::public_path(&signing_key_path)];
    // Written at every start: a data dir from before may hold the private
    // half alone.
    write_private(&auth_keys[0], &signing_key.public_pem())?;
    let revoked_tokens_file = Some(crate::tls::dev_revoked_tokens(&args.data_dir));
    revocation_list(&args.data_dir)?;
    // The services' own tokens, minted at every start, each in a file as a
    // service's `token_file` is.
    let tokens = args.data_dir.join("tokens");
    std::fs::create_dir_all(&tokens)?;
    let service_token_file = tokens.join("service.token");
    write_private(
        &service_token_file,
        &signing_key.issue("battlelog-up", "battlelog", Role::Service, SERVICE_TOKEN_TTL)?,
    )?;
    // The web pages read a shared battle as a reader of the development
    // tenant; share links are keyed by a secret kept under the data dir.
    let web_token_file = tokens.join("web.token");
    write_private(
        &web_token_file,
        &signing_key.issue("battlelog-web", crate::tls::DEV_TENANT, Role::Reader, SERVICE_TOKEN_TTL)?,
    )?;
    let share_secret_file = args.data_dir.join("web").join("share.secret");
    ShareSecret::read_or_create(&share_secret_file)?;
    let battle_id_secret_file = args.data_dir.join("resolver").join("battle-id.secret");
    battlelog_resolver::battle_id::BattleIdSecret::read_or_create(&battle_id_secret_file)?;
    let master_key_file = args.data_dir.join("roller").join("master.key");
    let master_key = MasterKey::read_or_create(&master_key_file)?;
    // The key the web pages pin and a judge pins the audit to (what
    // `battlelog roller-key` prints for this master key).
    let roller_key = master_key.commitment_signer().roller_key().to_string();

    let mut nats_server = None;
    // (journal's URL, resolver's URL, what the banner shows): with
    // credentials for the server `up` starts; a given URL serves both.
    let nats_urls = match (&args.nats_url, args.no_nats, &given_nats) {
        (_, true, _) => None,
        (Some(url), false, Some(given)) => Some((url.clone(), url.clone(), given.redacted())),
        (_, false, _) => match find_nats_server() {
            Some(binary) => {
                let server = start_nats(&binary, &args.data_dir.join("nats"), args.nats_port).await?;
                let shown = format!("{} (users and passwords in {})", server.url, server.config.display());
                let urls = (server.journal_url.clone(), server.resolver_url.clone(), shown);
                nats_server = Some(server);
                Some(urls)
            }
            None if args.nats_port.is_some() => {
                anyhow::bail!("--nats-port is the port of the nats-server up starts, but no nats-server was found")
            }
            None => None,
        },
    };
    let jetstream = args.journal_backend == JournalBackend::Jetstream;
    let replicas = args.journal_replicas.unwrap_or(1);
    if jetstream && nats_urls.is_none() {
        let why = if args.no_nats { "--no-nats was given" } else { "no NATS URL given and no nats-server found" };
        anyhow::bail!("--journal-backend jetstream keeps the journal in NATS, but {why}");
    }
    // battlelog-webhooks follows the sled journal's JetStream fan-out, or
    // the JetStream journal's log.
    let webhooks_nats = match &args.webhook {
        None => None,
        Some(_) => match (&nats_server, &nats_urls) {
            (Some(server), _) => Some(server.webhooks_url.clone()),
            (None, Some((url, _, _))) => Some(url.clone()),
            (None, None) => {
                let why =
                    if args.no_nats { "--no-nats was given" } else { "no NATS URL given and no nats-server found" };
                anyhow::bail!("--webhook follows the events in NATS JetStream, but {why}");
            }
        },
    };
    let started = if nats_server.is_some() { "started by battlelog up" } else { "given" };
    let events_line = match &nats_urls {
        Some((_, _, shown)) if jetstream => {
            format!("{shown} (the journal's own JetStream stream {JOURNAL_STREAM}, {started})")
        }
        Some((_, _, shown)) => format!("{shown} (JetStream stream {NATS_STREAM}, {started})"),
        None => {
            let why = if args.no_nats { "--no-nats" } else { "no NATS URL given and no nats-server found" };
            format!(
                "in-process, none fanned out ({why}; the resolver catches up from the journal at each command; \
                 `battlelog watch --from-journal` follows the journal)"
            )
        }
    };

    // Each service as its own binary would run it: its own Config, built
    // here from `up`'s arguments, and its own `run`; `metrics_listen` on a
    // free loopback port for each.
    let metrics =
        Observability { metrics_listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))), ..Observability::default() };
    let (internal_tls, public_tls) = (tls.internal_server(), tls.public_server());
    let client_tls = tls.client_keys();
    let subject_prefix = if jetstream { JOURNAL_SUBJECT_PREFIX } else { NATS_SUBJECT_PREFIX };
    let journal_config = battlelog_journal::Config {
        listen: journal_listener.local_addr()?,
        backend: if jetstream {
            battlelog_journal::config::Backend::Jetstream
        } else {
            battlelog_journal::config::Backend::Sled
        },
        data_dir: args.data_dir.join("journal"),
        nats_url: nats_urls.as_ref().map(|(journal_nats, _, _)| journal_nats.clone()),
        nats_stream: NATS_STREAM.into(),
        nats_subject_prefix: NATS_SUBJECT_PREFIX.into(),
        jetstream_stream: JOURNAL_STREAM.into(),
        replicas,
        auth_keys: auth_keys.clone(),
        revoked_tokens_file: revoked_tokens_file.clone(),
        server_tls: internal_tls.clone(),
        observability: metrics.clone(),
        ..battlelog_journal::Config::default()
    };
    let roller_config = battlelog_roller::Config {
        listen: roller_listener.local_addr()?,
        journal_url: journal_url.clone(),
        master_key_file: Some(master_key_file),
        data_dir: args.data_dir.join("roller"),
        auth_keys: auth_keys.clone(),
        revoked_tokens_file: revoked_tokens_file.clone(),
        token_file: Some(service_token_file.clone()),
        cache_bytes: args.cache_bytes / 4,
        server_tls: internal_tls,
        client_tls: client_tls.clone(),
        observability: metrics.clone(),
        ..battlelog_roller::Config::default()
    };
    let resolver_config = battlelog_resolver::Config {
        listen: resolver_listener.local_addr()?,
        journal_url: journal_url.clone(),
        roller_url: roller_url.clone(),
        nats_url: nats_urls.as_ref().map(|(_, resolver_nats, _)| resolver_nats.clone()),
        nats_subject_prefix: subject_prefix.into(),
        auth_keys: auth_keys.clone(),
        revoked_tokens_file: revoked_tokens_file.clone(),
        token_file: Some(service_token_file.clone()),
        cache_bytes: args.cache_bytes / 4 * 3,
        appeal_window_secs: args.appeal_window_secs,
        web_url: Some(web_url.clone()),
        share_secret_file: Some(share_secret_file.clone()),
        battle_id_secret_file: Some(battle_id_secret_file),
        server_tls: public_tls,
        client_tls: client_tls.clone(),
        rate_limit: TenantRateLimit {
            rate_limit_per_sec: args.rate_limit_per_sec,
            rate_limit_burst: args.rate_limit_burst,
            ..TenantRateLimit::default()
        },
        observability: metrics.clone(),
        ..battlelog_resolver::Config::default()
    };
    let web_config = battlelog_web::config::Config {
        listen: web_listener.local_addr()?,
        resolver_url: resolver_url.clone(),
        token_file: Some(web_token_file),
        share_secret_file: Some(share_secret_file),
        trusted_roller_keys: vec![roller_key.clone()],
        client_tls: client_tls.clone(),
        observability: metrics.clone(),
        ..battlelog_web::config::Config::default()
    };
    journal_config.validate()?;
    roller_config.validate()?;
    resolver_config.validate()?;
    web_config.validate()?;
    let webhooks = match (&args.webhook, webhooks_nats) {
        (Some(url), Some(nats_url)) => {
            let (listener, admin_url) = bind(args.webhooks_listen, "webhooks", "http").await?;
            let secret_path = args.data_dir.join("webhooks").join("secret");
            let secret = webhook_secret(&secret_path)?;
            let stream = if jetstream { JOURNAL_STREAM } else { NATS_STREAM };
            let config = battlelog_webhooks::Config {
                listen: listener.local_addr()?,
                nats_url,
                nats_stream: stream.into(),
                nats_subject_prefix: subject_prefix.into(),
                consumer: WEBHOOKS_CONSUMER.into(),
                data_dir: args.data_dir.join("webhooks").join("store"),
                auth_keys: auth_keys.clone(),
                revoked_tokens_file: revoked_tokens_file.clone(),
                tenants: [(
                    crate::tls::DEV_TENANT.to_owned(),
                    battlelog_webhooks::config::TenantEndpoint { url: url.clone(), secret },
                )]
                .into(),
                observability: metrics.clone(),
                // Only what the journal holds is delivered (battlelog_webhooks::feed).
                journal_url: Some(journal_url.clone()),
                token_file: Some(service_token_file.clone()),
                client_tls: client_tls.clone(),
                ..battlelog_webhooks::Config::default()
            };
            config.validate()?;
            let line = format!(
                "POST {url} (tenant `{}`), signed with the secret in {}; parked: battlelog webhooks parked --webhooks {admin_url}",
                crate::tls::DEV_TENANT,
                secret_path.display()
            );
            Some((config, listener, line))
        }
        _ => None,
    };

    // Every service announces its ports here, not on stdout: `up` prints
    // one banner once all of them are ready.
    let mut announced = battlelog_runtime::capture_announcements();
    let (stop, stopped) = watch::channel(false);
    let until_stopped = |mut stopped: watch::Receiver<bool>| async move {
        let _ = stopped.wait_for(|stop| *stop).await;
    };
    let mut services: tokio::task::JoinSet<(&'static str, anyhow::Result<()>)> = tokio::task::JoinSet::new();
    {
        let shutdown = until_stopped(stopped.clone());
        services.spawn(async move {
            ("journal", battlelog_journal::run(&journal_config, journal_listener, shutdown).await.map_err(Into::into))
        });
        let shutdown = until_stopped(stopped.clone());
        services.spawn(async move {
            ("roller", battlelog_roller::run(&roller_config, roller_listener, shutdown).await.map_err(Into::into))
        });
        let shutdown = until_stopped(stopped.clone());
        services.spawn(async move {
            let served = battlelog_resolver::run(&resolver_config, resolver_listener, shutdown).await;
            ("resolver", served.map_err(Into::into))
        });
        let shutdown = until_stopped(stopped.clone());
        services.spawn(async move { ("web", battlelog_web::run(&web_config, web_listener, shutdown).await) });
    }
    let mut expected = vec!["battlelog-journal", "battlelog-roller", "battlelog-resolver", "battlelog-web"];
    let webhooks_line = match webhooks {
        Some((config, listener, line)) => {
            let shutdown = until_stopped(stopped.clone());
            services.spawn(async move { ("webhooks", battlelog_webhooks::run(&config, listener, shutdown).await) });
            expected.push("battlelog-webhooks");
            Some(line)
        }
        None => None,
    };
    // Each service's metrics URL, once all are ready; a service that stops
    // before it is ready stops `up` with its error.
    let mut metrics_urls = std::collections::BTreeMap::new();
    let mut ready = std::collections::BTreeSet::new();
    while ready.len() < expected.len() {
        tokio::select! {
            announcement = announced.recv() => {
                let Some(announcement) = announcement else { anyhow::bail!("the services' announcements stopped") };
                match announcement.what {
                    Announced::Metrics => {
                        metrics_urls.insert(announcement.service, format!("http://{}/metrics", announcement.addr));
                    }
                    Announced::Listening => {
                        ready.insert(announcement.service);
                    }
                }
            }
            Some(stopped) = services.join_next() => {
                stop.send_replace(true);
                match stopped {
                    Ok((service, Err(error))) => return Err(error.context(format!("the {service} did not start"))),
                    Ok((service, Ok(()))) => anyhow::bail!("the {service} stopped before it was ready"),
                    Err(error) => anyhow::bail!("a service failed: {error}"),
                }
            }
        }
    }
    let metrics_line = |service: &str| {
        metrics_urls.get(&format!("battlelog-{service}")).map(|url| format!("            metrics: {url}"))
    };

    // Before the banner: a SIGTERM right after it shuts down gracefully.
    let shutdown = battlelog_runtime::shutdown_signal();
    // For the commands that talk to this stack: they find it on any port.
    data_dir_lock.publish(&crate::endpoints::UpEndpoints {
        resolver: resolver_url.clone(),
        roller: roller_url.clone(),
        journal: journal_url.clone(),
        web: web_url.clone(),
        nats: nats_urls.as_ref().map(|(_, resolver_nats, _)| resolver_nats.clone()),
    })?;
    // What the journal's stream is, now that the journal has made it.
    let stream = match (jetstream, &nats_urls) {
        (true, Some((journal_nats, _, _))) => Some(stream_line(journal_nats, JOURNAL_STREAM, replicas).await),
        _ => None,
    };
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "battlelog is up; data in {}", args.data_dir.display())?;
    // Each service's line, then where its metrics are (`/metrics`,
    // Prometheus text), indented under it.
    for (service, line) in [
        ("resolver", format!("  resolver  {resolver_url}")),
        ("web", format!("  web       {web_url}")),
        ("roller", format!("  roller    {roller_url}")),
        ("journal", format!("  journal   {journal_url}")),
    ] {
        writeln!(stdout, "{line}")?;
        if let Some(metrics) = metrics_line(service) {
            writeln!(stdout, "{metrics}")?;
        }
    }
    writeln!(stdout, "  events    {events_line}")?;
    if let Some(line) = &stream {
        writeln!(stdout, "  stream    {line}")?;
    }
    if let Some(line) = &webhooks_line {
        writeln!(stdout, "  webhooks  {line}")?;
        if let Some(metrics) = metrics_line("webhooks") {
            writeln!(stdout, "{metrics}")?;
        }
    }
    writeln!(
        stdout,
        "  auth      tokens signed by {} (tenant `{}` for the commands below; `battlelog token issue` mints others)",
        signing_key_path.display(),
        crate::tls::DEV_TENANT
    )?;
    writeln!(
        stdout,
        "  revoked   {} (`battlelog token revoke --data-dir` adds to it; no restart needed)",
        crate::tls::dev_revoked_tokens(&args.data_dir).display()
    )?;
    if let Some(pki) = &tls.pki {
        writeln!(
            stdout,
            "  tls       CA {} (journal and roller also require its client certificate)",
            pki.ca.display()
        )?;
    }
    // The commands to try next, with the endpoints spelled out when they
    // are not the defaults the other commands assume.
    let resolver_flag = if resolver_url == crate::client::DEFAULT_RESOLVER {
        String::new()
    } else {
        format!(" --resolver {resolver_url}")
    };
    // A data dir other than the default is where the other commands find
    // the development CA.
    let data_flag = if args.data_dir != Path::new("data") {
        format!(" --data-dir {}", args.data_dir.display())
    } else {
        String::new()
    };
    let resolver_flag = format!("{resolver_flag}{data_flag}");
    writeln!(stdout, "Try it: battlelog demo{resolver_flag}")?;
    writeln!(
        stdout,
        "  then: battlelog export <battle-id>{resolver_flag} > battle.jsonl && battlelog audit --file battle.jsonl \
         --roller-key {roller_key}"
    )?;
    writeln!(
        stdout,
        "  or open a battle's page (the demo prints its link) and watch your browser verify every roll; \
         {web_url}/verify checks an export file"
    )?;
    writeln!(stdout, "Ctrl-C stops the stack.")?;
    stdout.flush()?;
    drop(stdout);

    // Until Ctrl-C, or until a service stops on its own (the journal
    // failing, most likely): then everything stops.
    let failed = tokio::select! {
        () = shutdown => None,
        Some(stopped) = services.join_next() => Some(stopped),
    };
    stop.send_replace(true);
    // Each service shuts down as its own binary does: in-flight requests
    // finish, the journal commits and flushes what was queued.
    let mut errors = Vec::new();
    for stopped in failed.into_iter().chain(services.join_all().await.into_iter().map(Ok)) {
        match stopped {
            Ok((_, Ok(()))) => {}
            Ok((service, Err(error))) => errors.push(format!("the {service}: {error:#}")),
            Err(error) => errors.push(format!("a service failed: {error}")),
        }
    }
    if let Some(mut server) = nats_server {
        let _ = server.child.kill().await;
    }
    drop(data_dir_lock);
    if let Some(failed) = failed_early(&errors) {
        anyhow::bail!(failed);
    }
    Ok(Output::text("battlelog stopped; every acknowledged event is on disk"))
}

/// What stopped the stack, if a service failed.
fn failed_early(errors: &[String]) -> Option<String> {
    (!errors.is_empty()).then(|| errors.join("; "))
}
