//! `battlelog up`: the whole stack in one process — the journal, the roller
//! and the resolver as three real gRPC servers on loopback, the web pages,
//! sled under the data directory, a development master key generated there
//! on first start. Each service runs as its own binary would
//! (battlelog_runtime::service::Service): its `Config` comes from its own
//! `Config::development` constructor, given what `up` decides (ports, peers'
//! URLs, NATS logins, TLS files, the development signing key's public half
//! as `auth_keys`), with its `/metrics` on a free loopback port, printed
//! under its line.
//!
//! The modules, by concern: `nats` (the flags that choose NATS and the
//! `nats-server` `up` starts), `secrets` (the private data dir, the
//! development keys and tokens), `services` (the listeners and each
//! service's development config), `running` (the services run, ready,
//! and stopped together); the banner is here.
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

mod nats;
mod running;
mod secrets;
mod services;

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use battlelog_runtime::edge::TenantRateLimit;
use battlelog_runtime::service::Shared;
use clap::Args;

use crate::Output;
use nats::Nats;
use running::Running;
use secrets::Secrets;
use services::{Listeners, Stack};

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

/// Runs the stack until Ctrl-C: checks the flags, keeps the data dir
/// private and locked, binds every port, makes the secrets, starts or
/// joins NATS, configures each service through its own constructor, runs
/// them, and prints the banner once all are ready.
pub async fn up(args: &UpArgs) -> anyhow::Result<Output> {
    // One subscriber for the services of this process; kept until `up`
    // returns (dropping it flushes the trace exporter, when there is one).
    let _telemetry = telemetry(args)?;
    let given_nats = check_flags(args)?;
    secrets::private_data_dir(&args.data_dir)?;
    // Before anything binds or opens: a second `up` here is told so in one
    // line, not by a port clash or sled's lock error. Held until `up` ends.
    let data_dir_lock = crate::endpoints::lock(&args.data_dir)?;
    // Four servers share this process's files: each stays under its own
    // connection limit (the services' defaults), which together need more
    // than a soft limit of 1 024.
    battlelog_runtime::raise_file_limit();
    let tls = crate::tls::UpTls::new(args.tls, &args.data_dir)?;
    let listeners = Listeners::bind(args, &tls).await?;
    let secrets = Secrets::make(&args.data_dir, tls.client_keys())?;
    let nats = Nats::start(args, given_nats).await?;
    let stack = Stack::configure(args, &tls, &secrets, &nats, &listeners).await?;
    let banner = Banner::new(args, &listeners, &nats, &secrets, &tls, &stack.roller_key);
    let (running, metrics_urls, webhooks_line) = Running::start(stack, listeners).await?;
    // Before the banner: a SIGTERM right after it shuts down gracefully.
    let shutdown = battlelog_runtime::shutdown_signal();
    // For the commands that talk to this stack: they find it on any port.
    data_dir_lock.publish(&banner.endpoints(&nats))?;
    // What the journal's stream is, now that the journal has made it.
    let stream = match (args.journal_backend, nats.journal_url()) {
        (JournalBackend::Jetstream, Some(url)) => {
            Some(nats::stream_line(url, JOURNAL_STREAM, args.journal_replicas.unwrap_or(1)).await)
        }
        _ => None,
    };
    banner.print(&metrics_urls, stream.as_deref(), webhooks_line.as_deref())?;
    let failed = running.until(shutdown).await;
    nats.stop().await;
    drop(data_dir_lock);
    if let Some(failed) = failed {
        anyhow::bail!(failed);
    }
    Ok(Output::text("battlelog stopped; every acknowledged event is on disk"))
}

/// Logs and traces for the whole stack, `--otlp-endpoint` checked as the
/// services check their own `otlp_endpoint`.
fn telemetry(args: &UpArgs) -> anyhow::Result<battlelog_runtime::telemetry::Telemetry> {
    let tracing = Shared { otlp_endpoint: args.otlp_endpoint.clone(), ..Shared::default() };
    tracing.validate()?;
    let format = battlelog_runtime::logging::LogFormat::Text;
    battlelog_runtime::telemetry::init("warn", format, "up", tracing.otlp_endpoint.as_deref())
        .map_err(anyhow::Error::msg)
}

/// The flags checked together before anything starts: a receiver's
/// address as the service's own config checks `tenants.<name>.url` (a typo
/// must not start a stack that parks every delivery), then the NATS flags.
fn check_flags(args: &UpArgs) -> anyhow::Result<Option<battlelog_runtime::nats_url::NatsUrls>> {
    if let Some(url) = &args.webhook
        && !(url.starts_with("http://") || url.starts_with("https://"))
    {
        anyhow::bail!("--webhook {url:?} must be an http:// or https:// URL");
    }
    nats::cluster_flags(args)
}

/// What the banner says once the stack is up.
struct Banner {
    data_dir: PathBuf,
    resolver_url: String,
    roller_url: String,
    journal_url: String,
    web_url: String,
    events_line: String,
    signing_key_path: PathBuf,
    ca: Option<PathBuf>,
    roller_key: String,
}

impl Banner {
    fn new(
        args: &UpArgs,
        listeners: &Listeners,
        nats: &Nats,
        secrets: &Secrets,
        tls: &crate::tls::UpTls,
        roller_key: &str,
    ) -> Self {
        Self {
            data_dir: args.data_dir.clone(),
            resolver_url: listeners.resolver.url.clone(),
            roller_url: listeners.roller.url.clone(),
            journal_url: listeners.journal.url.clone(),
            web_url: listeners.web.url.clone(),
            events_line: nats.events_line(args),
            signing_key_path: secrets.signing_key_path.clone(),
            ca: tls.pki.as_ref().map(|pki| pki.ca.clone()),
            roller_key: roller_key.to_owned(),
        }
    }

    /// The endpoints the other commands find the stack at.
    fn endpoints(&self, nats: &Nats) -> crate::endpoints::UpEndpoints {
        crate::endpoints::UpEndpoints {
            resolver: self.resolver_url.clone(),
            roller: self.roller_url.clone(),
            journal: self.journal_url.clone(),
            web: self.web_url.clone(),
            nats: nats.resolver_url().map(str::to_owned),
        }
    }

    /// Each service's line, with where its metrics are (`/metrics`,
    /// Prometheus text) indented under it; then the events, the stream,
    /// the webhooks, the keys; then the commands to try next.
    fn print(
        &self,
        metrics_urls: &std::collections::BTreeMap<String, String>,
        stream: Option<&str>,
        webhooks: Option<&str>,
    ) -> anyhow::Result<()> {
        let mut stdout = std::io::stdout().lock();
        let metrics_line = |service: &str| {
            metrics_urls.get(&format!("battlelog-{service}")).map(|url| format!("            metrics: {url}"))
        };
        writeln!(stdout, "battlelog is up; data in {}", self.data_dir.display())?;
        for (service, line) in [
            ("resolver", format!("  resolver  {}", self.resolver_url)),
            ("web", format!("  web       {}", self.web_url)),
            ("roller", format!("  roller    {}", self.roller_url)),
            ("journal", format!("  journal   {}", self.journal_url)),
        ] {
            writeln!(stdout, "{line}")?;
            if let Some(metrics) = metrics_line(service) {
                writeln!(stdout, "{metrics}")?;
            }
        }
        writeln!(stdout, "  events    {}", self.events_line)?;
        if let Some(line) = stream {
            writeln!(stdout, "  stream    {line}")?;
        }
        if let Some(line) = webhooks {
            writeln!(stdout, "  webhooks  {line}")?;
            if let Some(metrics) = metrics_line("webhooks") {
                writeln!(stdout, "{metrics}")?;
            }
        }
        self.print_keys(&mut stdout)?;
        self.print_next(&mut stdout)?;
        stdout.flush()?;
        Ok(())
    }

    /// Where the tokens' key, the revocation list and the CA are.
    fn print_keys(&self, out: &mut impl Write) -> anyhow::Result<()> {
        writeln!(
            out,
            "  auth      tokens signed by {} (tenant `{}` for the commands below; `battlelog token issue` mints others)",
            self.signing_key_path.display(),
            crate::dev_token::DEV_TENANT
        )?;
        writeln!(
            out,
            "  revoked   {} (`battlelog token revoke --data-dir` adds to it; no restart needed)",
            crate::dev_token::dev_revoked_tokens(&self.data_dir).display()
        )?;
        if let Some(ca) = &self.ca {
            writeln!(out, "  tls       CA {} (journal and roller also require its client certificate)", ca.display())?;
        }
        Ok(())
    }

    /// The commands to try next, with the endpoints spelled out when they
    /// are not the defaults the other commands assume.
    fn print_next(&self, out: &mut impl Write) -> anyhow::Result<()> {
        let resolver_flag = if self.resolver_url == crate::client::DEFAULT_RESOLVER {
            String::new()
        } else {
            format!(" --resolver {}", self.resolver_url)
        };
        // A data dir other than the default is where the other commands
        // find the development CA.
        let data_flag = if self.data_dir != Path::new("data") {
            format!(" --data-dir {}", self.data_dir.display())
        } else {
            String::new()
        };
        let flags = format!("{resolver_flag}{data_flag}");
        writeln!(out, "Try it: battlelog demo{flags}")?;
        writeln!(
            out,
            "  then: battlelog export <battle-id>{flags} > battle.jsonl && battlelog audit --file battle.jsonl \
             --roller-key {}",
            self.roller_key
        )?;
        writeln!(
            out,
            "  or open a battle's page (the demo prints its link) and watch your browser verify every roll; \
             {}/verify checks an export file",
            self.web_url
        )?;
        writeln!(out, "Ctrl-C stops the stack.")?;
        Ok(())
    }
}
