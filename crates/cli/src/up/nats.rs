//! `up`'s NATS: the flags that choose it, the `nats-server` it starts
//! (with the users and permissions of `deploy/nats/`), the URL each
//! service logs in with, and what the banner says of it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;

use super::secrets::write_private;
use super::{JOURNAL_STREAM, JOURNAL_SUBJECT_PREFIX, JournalBackend, NATS_STREAM, UpArgs, WEBHOOKS_CONSUMER};

/// The NATS of the stack: the server `up` started, if it started one, and
/// the URLs the services log in with.
pub(super) struct Nats {
    server: Option<NatsServer>,
    /// (the journal's URL, the resolver's URL, what the banner shows): with
    /// credentials for the server `up` starts; a given URL serves both.
    urls: Option<(String, String, String)>,
}

/// Why there is no NATS, for the refusals and the banner.
fn why_none(args: &UpArgs) -> &'static str {
    if args.no_nats { "--no-nats was given" } else { "no NATS URL given and no nats-server found" }
}

impl Nats {
    /// The NATS the flags ask for: none with `--no-nats`, the one given
    /// with `--nats-url`, else a `nats-server` started here when one is
    /// found. The JetStream journal needs one.
    pub(super) async fn start(
        args: &UpArgs,
        given: Option<battlelog_runtime::nats_url::NatsUrls>,
    ) -> anyhow::Result<Self> {
        let mut server = None;
        let urls = match (&args.nats_url, args.no_nats, &given) {
            (_, true, _) => None,
            (Some(url), false, Some(given)) => Some((url.clone(), url.clone(), given.redacted())),
            (_, false, _) => match find_nats_server() {
                Some(binary) => {
                    let started = start_nats(&binary, &args.data_dir.join("nats"), args.nats_port).await?;
                    let shown = format!("{} (users and passwords in {})", started.url, started.config.display());
                    let urls = (started.journal_url.clone(), started.resolver_url.clone(), shown);
                    server = Some(started);
                    Some(urls)
                }
                None if args.nats_port.is_some() => {
                    anyhow::bail!("--nats-port is the port of the nats-server up starts, but no nats-server was found")
                }
                None => None,
            },
        };
        if args.journal_backend == JournalBackend::Jetstream && urls.is_none() {
            anyhow::bail!("--journal-backend jetstream keeps the journal in NATS, but {}", why_none(args));
        }
        Ok(Self { server, urls })
    }

    /// The journal's login.
    pub(super) fn journal_url(&self) -> Option<&str> {
        self.urls.as_ref().map(|(journal, _, _)| journal.as_str())
    }

    /// The resolver's login (and the commands', which only follow).
    pub(super) fn resolver_url(&self) -> Option<&str> {
        self.urls.as_ref().map(|(_, resolver, _)| resolver.as_str())
    }

    /// battlelog-webhooks' login, with `--webhook`: it follows the sled
    /// journal's JetStream fan-out, or the JetStream journal's log.
    pub(super) fn webhooks_url(&self, args: &UpArgs) -> anyhow::Result<Option<String>> {
        if args.webhook.is_none() {
            return Ok(None);
        }
        match (&self.server, &self.urls) {
            (Some(server), _) => Ok(Some(server.webhooks_url.clone())),
            (None, Some((url, _, _))) => Ok(Some(url.clone())),
            (None, None) => anyhow::bail!("--webhook follows the events in NATS JetStream, but {}", why_none(args)),
        }
    }

    /// The banner's `events` line.
    pub(super) fn events_line(&self, args: &UpArgs) -> String {
        let started = if self.server.is_some() { "started by battlelog up" } else { "given" };
        match &self.urls {
            Some((_, _, shown)) if args.journal_backend == JournalBackend::Jetstream => {
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
        }
    }

    /// Stops the server `up` started, if any.
    pub(super) async fn stop(self) {
        if let Some(mut server) = self.server {
            let _ = server.child.kill().await;
        }
    }
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

/// JetStream's range of a stream's replicas.
const REPLICAS: std::ops::RangeInclusive<usize> = 1..=5;

/// Checks the NATS flags together before anything starts, each refusal
/// naming its flags: the `--nats-url` list (read as every service reads
/// one), `--nats-port` only for the server `up` starts, and
/// `--journal-replicas` in JetStream's range, for the JetStream journal,
/// and above 1 only on a cluster given with `--nats-url` (the server `up`
/// starts is one node: JetStream would refuse the stream).
pub(super) fn cluster_flags(args: &UpArgs) -> anyhow::Result<Option<battlelog_runtime::nats_url::NatsUrls>> {
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
pub(super) async fn stream_line(urls: &str, stream: &str, asked: usize) -> String {
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
