//! The deploy files, proven to start (issue 22). No container engine runs
//! in CI, so this is the emulation: it reads `deploy/docker-compose.yml`
//! and `deploy/kubernetes/battlelog.yaml` and starts every battlelog
//! service they declare as the real binary from `target/debug`, with the
//! command, environment and config file they give and the files their
//! mounts hold (TLS certificates, tokens, keys and secrets, made the way
//! `deploy/README.md` says), beside a real nats-server running
//! `deploy/nats/nats.conf`. Then every health probe the files declare must
//! pass, and `battlelog demo` plays against the resolver over TLS with a
//! forum's token, one of its battles' pages opening on the web through
//! the link the resolver gave.
//!
//! A container and this emulation differ in exactly [`DIFFERENCES`]; anything
//! else the files say that the emulation does not understand (a key of a
//! compose service or of a container, a probe kind, an absolute path no
//! mount provides, a peer address no service answers) fails the test, so
//! that a change to the deploy files is either emulated or noticed.
//!
//! The Dockerfile test checks that the image holds what the emulation
//! starts: the same binary names, installed where the commands find them,
//! and the configs where the commands name them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use battlelog_test_support::{NatsServer, ServiceProcess, cluster::free_ports, temp_dir};
use serde_yaml_ng::Value;
use tempfile::TempDir;
use tonic::transport::{Certificate, ClientTlsConfig, Identity};

mod exported_metrics;
use exported_metrics::{EXPORTED, Kind as MetricKind};

/// The exported families that appear on `/metrics` only once something
/// happened to be counted under one of their label sets.
const BY_EVENT: &[&str] = &[
    "battlelog_grpc_server_auth_refusals_total",
    "battlelog_grpc_server_rate_limited_total",
    "battlelog_grpc_server_shed_total",
    "battlelog_grpc_server_open_streams",
];

/// Everything a container run by this test has that a real one would not.
const DIFFERENCES: &[&str] = &[
    "paths: a path inside the container is the host file its mount gives (the image's /etc/battlelog is \
     deploy/config, as the Dockerfile copies it); a config file's paths are rewritten accordingly",
    "network: a service's host:port (journal:50053, nats:4222, a published localhost:8080) is a free \
     loopback port, in config values and environment values alike",
    "listen: each service's `listen` is overridden with BATTLELOG_<SERVICE>_LISTEN=127.0.0.1:<its loopback port>, \
     and its `metrics_listen` with BATTLELOG_<SERVICE>_METRICS_LISTEN=127.0.0.1:<another>",
    "nats: nats-server listens on a free loopback port (client and monitor) with its store in a temp dir",
];

/// The repository's `deploy/` directory.
fn deploy_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The binaries the deploy files may start, and how each is reached: the
/// gRPC services over TLS with grpc.health.v1, the others over plain HTTP.
fn kind_of(binary: &str) -> Kind {
    match binary {
        "battlelog-journal" | "battlelog-roller" | "battlelog-resolver" => Kind::Grpc,
        "battlelog-web" | "battlelog-webhooks" => Kind::Http,
        other => panic!("the deploy files start {other:?}, which this emulation does not know"),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Grpc,
    Http,
}

/// A probe as the files declare it, with the container's port.
#[derive(Debug, Clone)]
enum Probe {
    /// Kubernetes `tcpSocket`.
    Tcp(u16),
    /// Kubernetes `httpGet`.
    HttpGet { path: String, port: u16 },
    /// A compose healthcheck `["CMD", "bash", "-c", script]`.
    Bash(String),
}

/// One container as a deploy file declares it.
#[derive(Debug, Default)]
struct Container {
    name: String,
    command: Vec<String>,
    env: Vec<(String, String)>,
    /// Container path → host path (the longest prefix wins).
    mounts: Vec<(String, PathBuf)>,
    /// The ports the file says it serves (containerPort, a published
    /// port's container side, a healthcheck's port).
    ports: Vec<u16>,
    probes: Vec<Probe>,
    /// Compose `depends_on` names; the Kubernetes manifests declare none.
    depends_on: Vec<String>,
}

impl Container {
    fn binary(&self) -> &str {
        self.command.first().unwrap_or_else(|| panic!("{}: no command", self.name))
    }

    /// `journal` of `battlelog-journal`: the service's env prefix.
    fn service(&self) -> String {
        self.binary()
            .strip_prefix("battlelog-")
            .unwrap_or_else(|| panic!("{}: not a battlelog binary", self.name))
            .into()
    }

    /// The host path of a container path, or `None` when nothing mounts it.
    fn host_path(&self, path: &str) -> Option<PathBuf> {
        self.mounts
            .iter()
            .filter(|(inside, _)| path == inside || path.starts_with(&format!("{}/", inside.trim_end_matches('/'))))
            .max_by_key(|(inside, _)| inside.len())
            .map(|(inside, host)| match path[inside.len()..].trim_start_matches('/') {
                "" => host.clone(),
                rest => host.join(rest),
            })
    }

    /// The config file its command names (`--config <path>`): its container path.
    fn config_path(&self) -> &str {
        let at = self.command.iter().position(|a| a == "--config").unwrap_or_else(|| {
            panic!(
                "{}: the emulation understands commands `<binary> --config <file>`, not {:?}",
                self.name, self.command
            )
        });
        assert_eq!(self.command.len(), 3, "{}: nothing but --config <file>, got {:?}", self.name, self.command);
        &self.command[at + 1]
    }

    /// The `listen` port its config file gives (`0.0.0.0:<port>`).
    fn config_listen_port(&self) -> u16 {
        self.config_port("listen").unwrap_or_else(|| panic!("{}: its config sets no listen address", self.name))
    }

    /// The port of the address `key` of its config file (`0.0.0.0:<port>`), if set.
    fn config_port(&self, key: &str) -> Option<u16> {
        let path = self.config_path();
        let host = self.host_path(path).unwrap_or_else(|| panic!("{}: nothing mounts {path}", self.name));
        let table: toml::Table = read(&host).parse().unwrap_or_else(|e| panic!("{}: {e}", host.display()));
        let address =
            table.get(key).map(|v| v.as_str().unwrap_or_else(|| panic!("{}: {key} is not a string", self.name)))?;
        // 0.0.0.0 in a container: the port must be reachable from the
        // other containers (and, published, from outside), and a
        // container's network namespace has only its own interfaces.
        let port = address.strip_prefix("0.0.0.0:").unwrap_or_else(|| {
            panic!("{}: {key} = {address:?}; the deploy configs bind 0.0.0.0:<port> (deploy/README.md)", self.name)
        });
        Some(port.parse().unwrap_or_else(|e| panic!("{}: {key} port {port:?}: {e}", self.name)))
    }
}

/// The files the deploy kit tells the operator to make before starting
/// (docker-compose.yml's header, deploy/README.md): certificates per
/// service, the token signing key and tokens (made with `battlelog token`),
/// the roller's master key, the journal's log key, the share and battle-id
/// secrets.
struct Material {
    dir: TempDir,
}

impl Material {
    fn generate() -> Self {
        let dir = temp_dir("deploy-material");
        let root = dir.path().to_path_buf();
        let material = Self { dir };
        material.tls(&["journal", "roller", "resolver"]);
        let auth = root.join("auth");
        std::fs::create_dir_all(&auth).expect("auth dir");
        let key = root.join("token-signing.pem");
        cli(&["token", "keygen", "--out", &key.display().to_string()]);
        std::fs::copy(root.join("token-signing.pem.pub"), auth.join("token-signing.pub")).expect("copy the public key");
        for (file, role, subject) in [
            ("roller.token", "service", "roller"),
            ("resolver.token", "service", "resolver"),
            ("web.token", "reader", "battlelog-web"),
        ] {
            let token = material.token(role, "battlelog", subject);
            std::fs::write(auth.join(file), token).expect("write a token");
        }
        write_secret(&root.join("master.key"));
        cli(&[
            "log-key",
            "generate",
            "--origin",
            "battlelog.example/journal",
            "--out",
            &root.join("log.key").display().to_string(),
        ]);
        write_secret(&root.join("web/share.secret"));
        write_secret(&root.join("resolver/battle-id.secret"));
        // The operator's webhooks.toml: the shipped one as it is (no tenant
        // configured: deliveries are queued for none).
        std::fs::create_dir_all(root.join("webhooks")).expect("webhooks dir");
        std::fs::copy(deploy_dir().join("config/webhooks.toml"), root.join("webhooks/webhooks.toml"))
            .expect("copy webhooks.toml");
        material
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    /// `battlelog token issue … --ttl 1h --key token-signing.pem`.
    fn token(&self, role: &str, tenant: &str, subject: &str) -> String {
        let key = self.root().join("token-signing.pem").display().to_string();
        let args =
            ["token", "issue", "--role", role, "--tenant", tenant, "--subject", subject, "--ttl", "1h", "--key", &key];
        cli(&args).trim().to_owned()
    }

    /// `tls/<service>/{tls.crt,tls.key,ca.crt}`: the layout of a
    /// kubernetes.io/tls secret with ca.crt. Each certificate names its
    /// service (the peer URLs' host) and, for this emulation's loopback,
    /// `localhost` and 127.0.0.1; it serves and calls (server and client auth).
    fn tls(&self, services: &[&str]) {
        use rcgen::{
            BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
            KeyUsagePurpose,
        };
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.distinguished_name.push(DnType::CommonName, "battlelog services CA (deploy test)");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
        let ca_key = KeyPair::generate().expect("CA key");
        let ca_pem = ca_params.self_signed(&ca_key).expect("CA certificate").pem();
        let issuer = Issuer::new(ca_params, ca_key);
        for service in services {
            let names = [*service, "localhost", "127.0.0.1"].map(String::from).to_vec();
            let mut params = CertificateParams::new(names).expect("leaf params");
            params.distinguished_name.push(DnType::CommonName, *service);
            params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
            params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
            let key = KeyPair::generate().expect("leaf key");
            let cert = params.signed_by(&key, &issuer).expect("leaf certificate");
            let dir = self.root().join("tls").join(service);
            std::fs::create_dir_all(&dir).expect("tls dir");
            std::fs::write(dir.join("tls.crt"), cert.pem()).expect("tls.crt");
            std::fs::write(dir.join("tls.key"), key.serialize_pem()).expect("tls.key");
            std::fs::write(dir.join("ca.crt"), &ca_pem).expect("ca.crt");
        }
    }

    /// How the test reaches a gRPC service: the services' CA, presenting
    /// the resolver's certificate (the journal and the roller want one).
    fn client_tls(&self) -> ClientTlsConfig {
        let dir = self.root().join("tls/resolver");
        ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(read(&dir.join("ca.crt"))))
            .identity(Identity::from_pem(read(&dir.join("tls.crt")), read(&dir.join("tls.key"))))
    }
}

/// 64 random hex digits (`openssl rand -hex 32`).
fn write_secret(path: &Path) {
    use std::io::Read;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes)).expect("random bytes");
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("secret dir");
    std::fs::write(path, hex::encode(bytes)).expect("write a secret");
}

/// `battlelog <args>`: its stdout; panics when it fails.
fn cli(args: &[&str]) -> String {
    let output =
        std::process::Command::new(battlelog_test_support::cli_binary()).args(args).output().expect("battlelog");
    assert!(output.status.success(), "battlelog {}: {}", args.join(" "), String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

/// Where each service's host:port, as the files name it, is on loopback.
#[derive(Debug, Default)]
struct Network {
    addresses: BTreeMap<String, u16>,
}

impl Network {
    /// `text` with every `<host>:<port>` of a known service in a URL
    /// replaced by its loopback address: `localhost`, since the peers'
    /// certificates name it (and the URL's host is what TLS checks).
    /// A URL naming a known host on a port nothing serves fails.
    fn map(&self, text: &str, known_hosts: &[String]) -> String {
        let Some((scheme, rest)) = text.split_once("://") else { return text.to_owned() };
        let (credentials, after) = match rest.split_once('@') {
            Some((user, after)) => (format!("{user}@"), after),
            None => (String::new(), rest),
        };
        let end = after.find('/').unwrap_or(after.len());
        let (authority, path) = after.split_at(end);
        let host = authority.rsplit_once(':').map_or(authority, |(h, _)| h);
        if !known_hosts.iter().any(|h| h == host) {
            return text.to_owned();
        }
        let port = self
            .addresses
            .get(authority)
            .unwrap_or_else(|| panic!("{text:?} names {authority}, which no service of the deploy file serves"));
        format!("{scheme}://{credentials}localhost:{port}{path}")
    }
}

/// A string of a config file or the environment, as the emulation gives it
/// to the process: an absolute path mapped to its mount's host file, a URL
/// of a known service to its loopback address.
fn rewrite(container: &Container, network: &Network, hosts: &[String], what: &str, value: &str) -> String {
    if value.starts_with('/') {
        let host = container.host_path(value).unwrap_or_else(|| {
            panic!("{}: {what} = {value:?}, a path no mount of the deploy file provides", container.name)
        });
        return host.display().to_string();
    }
    network.map(value, hosts)
}

fn rewrite_toml(container: &Container, network: &Network, hosts: &[String], key: &str, value: &mut toml::Value) {
    match value {
        toml::Value::String(s) => *s = rewrite(container, network, hosts, key, s),
        toml::Value::Array(items) => items.iter_mut().for_each(|v| rewrite_toml(container, network, hosts, key, v)),
        toml::Value::Table(table) => {
            table.iter_mut().for_each(|(k, v)| rewrite_toml(container, network, hosts, &format!("{key}.{k}"), v))
        }
        _ => {}
    }
}

/// A running emulated deployment.
struct Running {
    _nats: NatsServer,
    /// The rendered configs and the logs.
    _work: TempDir,
    processes: BTreeMap<String, ServiceProcess>,
    /// Container name → its loopback port.
    ports: BTreeMap<String, u16>,
    /// Container name → its metrics port, for those whose config sets one.
    metrics: BTreeMap<String, u16>,
    containers: Vec<Container>,
}

/// Starts `containers` in order (each one's dependencies first), every one
/// after the one before it is healthy.
async fn start(
    label: &str,
    nats: NatsServer,
    mut containers: Vec<Container>,
    mut network: Network,
    hosts: &[String],
    published: &[(String, String)],
    material: &Material,
) -> Running {
    let work = temp_dir(&format!("deploy-{label}"));
    // Every service's loopback port, before any starts: peers name each
    // other (and the resolver names the web's public URL) up front.
    let ports = free_ports(2 * containers.len());
    let mut loopback = BTreeMap::new();
    let mut metrics = BTreeMap::new();
    for (container, ports) in containers.iter().zip(ports.chunks(2)) {
        let (port, metrics_port) = (&ports[0], ports[1]);
        let listen = container.config_listen_port();
        // Every port the file declares for it (published, probed, a
        // containerPort) is one it listens on: its service port or its
        // metrics port.
        let own = [Some(listen), container.config_port("metrics_listen")];
        assert!(
            !container.ports.is_empty() && container.ports.iter().all(|p| own.contains(&Some(*p))),
            "{}: its config listens on {listen} (metrics: {:?}), the deploy file declares {:?}",
            container.name,
            own[1],
            container.ports
        );
        network.addresses.insert(format!("{}:{listen}", container.name), *port);
        loopback.insert(container.name.clone(), *port);
        if container.config_port("metrics_listen").is_some() {
            metrics.insert(container.name.clone(), metrics_port);
        }
    }
    for (host_side, service) in published {
        let port = loopback.get(service).unwrap_or_else(|| panic!("{host_side} is published for unknown {service}"));
        network.addresses.insert(host_side.clone(), *port);
    }
    order(&mut containers);
    let mut processes = BTreeMap::new();
    for container in &containers {
        let port = loopback[&container.name];
        let config = container.config_path().to_owned();
        let source =
            container.host_path(&config).unwrap_or_else(|| panic!("{}: nothing mounts {config}", container.name));
        let mut table: toml::Table = read(&source).parse().expect("a TOML config");
        for (key, value) in table.iter_mut() {
            if key != "listen" {
                rewrite_toml(container, &network, hosts, key, value);
            }
        }
        let rendered = work.path().join(format!("{}.toml", container.name));
        std::fs::write(&rendered, toml::to_string(&table).expect("TOML")).expect("write the rendered config");
        let args = vec!["--config".to_owned(), rendered.display().to_string()];
        let mut envs: Vec<(String, String)> =
            container.env.iter().map(|(k, v)| (k.clone(), rewrite(container, &network, hosts, k, v))).collect();
        let prefix = format!("BATTLELOG_{}", container.service().to_ascii_uppercase());
        envs.push((format!("{prefix}_LISTEN"), format!("127.0.0.1:{port}")));
        if let Some(metrics_port) = metrics.get(&container.name) {
            envs.push((format!("{prefix}_METRICS_LISTEN"), format!("127.0.0.1:{metrics_port}")));
        }
        let binary = battlelog_test_support::service_binary(container.binary());
        let log = work.path().join(format!("{}.log", container.name));
        let process = match kind_of(container.binary()) {
            Kind::Grpc => ServiceProcess::start_tls(&binary, &args, &envs, &log, Some(material.client_tls())).await,
            Kind::Http => ServiceProcess::start_http(&binary, &args, &envs, &log).await,
        };
        assert_eq!(process.addr().port(), port, "{} listens where it was told", container.name);
        for probe in &container.probes {
            probe_passes(container, probe, port, metrics.get(&container.name).copied()).await;
        }
        // Its metrics port answers as Prometheus scrapes it
        // (deploy/prometheus/prometheus.yml).
        if let Some(metrics_port) = metrics.get(&container.name) {
            let url = format!("http://127.0.0.1:{metrics_port}/metrics");
            let (status, body) = battlelog_test_support::http_get(&url, &[]).await;
            assert_eq!(status, 200, "{}: {url} answers: {body}", container.name);
        }
        processes.insert(container.name.clone(), process);
    }
    Running { _nats: nats, processes, ports: loopback, metrics, containers, _work: work }
}

/// Orders `containers` so that each comes after what it depends on
/// (compose's depends_on); a stable order otherwise (the file's).
fn order(containers: &mut Vec<Container>) {
    let mut ordered: Vec<Container> = Vec::new();
    while !containers.is_empty() {
        let ready = containers
            .iter()
            .position(|c| c.depends_on.iter().all(|d| d == "nats" || ordered.iter().any(|o| &o.name == d)))
            .unwrap_or_else(|| panic!("a dependency cycle or an unknown dependency among {containers:?}"));
        ordered.push(containers.remove(ready));
    }
    *containers = ordered;
}

/// Runs one declared probe against the running container (its container
/// port mapped to `port`), polling until it passes or the deadline passes,
/// as the kubelet and compose retry theirs.
/// `port` is where the service listens here, `metrics_port` where its
/// `/metrics` is (when its config sets `metrics_listen`): a probe may check
/// either, and nothing else.
async fn probe_passes(container: &Container, probe: &Probe, port: u16, metrics_port: Option<u16>) {
    let listen = container.config_listen_port();
    let metrics = container.config_port("metrics_listen");
    let what = format!("{}: {probe:?}", container.name);
    let here = |p: u16| match (p == listen, metrics == Some(p)) {
        (true, _) => port,
        (false, true) => metrics_port.expect("a metrics port"),
        (false, false) => panic!("{what}: probes port {p}, which the service does not listen on"),
    };
    match probe {
        Probe::Tcp(p) => {
            let port = here(*p);
            battlelog_test_support::poll_until(&what, Duration::from_secs(20), || async move {
                tokio::net::TcpStream::connect(("127.0.0.1", port)).await.ok().map(|_| ())
            })
            .await;
        }
        Probe::HttpGet { path, port: p } => {
            let url = format!("http://127.0.0.1:{}{path}", here(*p));
            battlelog_test_support::poll_until(&what, Duration::from_secs(20), || {
                let url = url.clone();
                // The kubelet counts 200..=399 as success.
                async move {
                    let (status, _) = battlelog_test_support::http_get(&url, &[]).await;
                    (200..400).contains(&status).then_some(())
                }
            })
            .await;
        }
        Probe::Bash(script) => {
            let checked: Vec<u16> = [Some(listen), metrics]
                .into_iter()
                .flatten()
                .filter(|p| script.contains(&format!("/dev/tcp/127.0.0.1/{p}")))
                .collect();
            assert!(!checked.is_empty(), "{what}: the healthcheck must check the service's port or its metrics port");
            let mut script = script.clone();
            for p in checked {
                script = script.replace(&format!("/dev/tcp/127.0.0.1/{p}"), &format!("/dev/tcp/127.0.0.1/{}", here(p)));
            }
            battlelog_test_support::poll_until(&what, Duration::from_secs(20), || {
                let script = script.clone();
                async move {
                    let status = tokio::process::Command::new("bash").args(["-c", &script]).status().await;
                    status.is_ok_and(|s| s.success()).then_some(())
                }
            })
            .await;
        }
    }
}

impl Running {
    /// `battlelog demo` against the resolver over TLS (the services' CA,
    /// which issued its certificate) with a forum's token; then one battle's
    /// page, at the link the resolver put in its reply, opens on the web
    /// (the web reads it from the resolver with its own reader token and
    /// the share secret both hold).
    async fn demo_plays(&self, material: &Material, resolver: &str, web: &str) {
        let resolver_port = self.ports[resolver];
        let forum = material.token("forum", "forum-a", "forum-a");
        let ca = material.root().join("tls/resolver/ca.crt").display().to_string();
        let data_dir = material.root().join("cli-data").display().to_string();
        let url = format!("https://localhost:{resolver_port}");
        let out = cli(&["demo", "--resolver", &url, "--ca-file", &ca, "--token", &forum, "--data-dir", &data_dir]);
        let exports = out.lines().filter(|l| l.starts_with("battlelog export ")).count();
        assert!(exports >= 4, "the demo played every ruleset's battle:\n{out}");
        let page = out
            .lines()
            .find_map(|l| l.strip_prefix("Page / Страница: "))
            .unwrap_or_else(|| panic!("the resolver links each battle to its web page:\n{out}"));
        // The link's host is the public address (a proxy in production);
        // its path and share key are what the web serves.
        let path = &page[page.find("/battles/").unwrap_or_else(|| panic!("a battle page link: {page}"))..];
        let (status, body) =
            battlelog_test_support::http_get(&format!("http://127.0.0.1:{}{path}", self.ports[web]), &[]).await;
        assert_eq!(status, 200, "the battle's page opens on the web through its share link: {body}");
    }
}

/// A YAML mapping's keys must all be understood.
fn only_keys(what: &str, value: &Value, known: &[&str]) {
    let map = value.as_mapping().unwrap_or_else(|| panic!("{what}: not a mapping"));
    for key in map.keys() {
        let key = key.as_str().unwrap_or_else(|| panic!("{what}: a key that is not a string"));
        assert!(known.contains(&key), "{what}: `{key}` is not understood by the deploy emulation (knows {known:?})");
    }
}

fn str_of<'a>(value: &'a Value, what: &str) -> &'a str {
    value.as_str().unwrap_or_else(|| panic!("{what}: not a string: {value:?}"))
}

fn strings(value: &Value, what: &str) -> Vec<String> {
    value
        .as_sequence()
        .unwrap_or_else(|| panic!("{what}: not a list"))
        .iter()
        .map(|v| str_of(v, what).to_owned())
        .collect()
}

// ---------------------------------------------------------------- compose

/// The NATS passwords compose interpolates (`${VAR:?…}`), test values.
const COMPOSE_VARIABLES: &[(&str, &str)] = &[
    ("JOURNAL_NATS_PASSWORD", "journal-pw"),
    ("RESOLVER_NATS_PASSWORD", "resolver-pw"),
    ("WEBHOOKS_NATS_PASSWORD", "webhooks-pw"),
    ("FORUM_A_NATS_PASSWORD", "forum-a-pw"),
    ("FORUM_B_NATS_PASSWORD", "forum-b-pw"),
];

/// Compose's `${VAR}`, `${VAR:?message}` and `${VAR:-default}`, with
/// [`COMPOSE_VARIABLES`]; an unset variable without a default fails.
fn interpolate(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let end = rest[at..].find('}').unwrap_or_else(|| panic!("unclosed ${{ in {text:?}")) + at;
        let expr = &rest[at + 2..end];
        let (name, default) = match expr.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (expr.split(":?").next().unwrap_or(expr), None),
        };
        let value = COMPOSE_VARIABLES.iter().find(|(n, _)| *n == name).map(|(_, v)| *v).or(default);
        out.push_str(value.unwrap_or_else(|| panic!("{text:?} needs ${name}, which the test does not set")));
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

/// The files the image holds at a path (the Dockerfile's `COPY <repo dir> <path>`).
fn image_copies() -> Vec<(String, PathBuf)> {
    let dockerfile = read(&deploy_dir().join("Dockerfile"));
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    dockerfile
        .lines()
        .filter_map(|l| l.strip_prefix("COPY "))
        .filter(|l| !l.starts_with("--from") && !l.starts_with(". "))
        .map(|l| {
            let parts: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(parts.len(), 2, "COPY <source> <dest>: {l}");
            (parts[1].to_owned(), repo.join(parts[0]))
        })
        .collect()
}

struct Compose {
    containers: Vec<Container>,
    /// The named volumes' directories.
    _volumes: TempDir,
    published: Vec<(String, String)>,
    nats_envs: Vec<(String, String)>,
    hosts: Vec<String>,
}

fn compose(material: &Material) -> Compose {
    let text = read(&deploy_dir().join("docker-compose.yml"));
    let file: Value = serde_yaml_ng::from_str(&text).expect("docker-compose.yml is YAML");
    only_keys("docker-compose.yml", &file, &["services", "secrets", "volumes"]);
    let volumes_dir = temp_dir("deploy-compose-volumes");
    let secrets = file["secrets"].as_mapping().expect("secrets");
    let services = file["services"].as_mapping().expect("services");
    // The services' names, and `localhost` for the published ports.
    let mut hosts: Vec<String> = services.keys().map(|k| str_of(k, "a service name").to_owned()).collect();
    hosts.push("localhost".to_owned());
    let host_file = |source: &str| -> PathBuf {
        let relative =
            source.strip_prefix("./").unwrap_or_else(|| panic!("a bind mount relative to deploy/: {source}"));
        // nats.conf is the repository's; everything else the operator makes.
        if relative.starts_with("nats/") { deploy_dir().join(relative) } else { material.root().join(relative) }
    };
    let mut containers = Vec::new();
    let mut published = Vec::new();
    let mut nats_envs = Vec::new();
    for (name, service) in services {
        let name = str_of(name, "a service name").to_owned();
        let what = format!("docker-compose.yml services.{name}");
        let env: Vec<(String, String)> = service
            .get("environment")
            .and_then(Value::as_mapping)
            .map(|m| m.iter().map(|(k, v)| (str_of(k, &what).to_owned(), interpolate(str_of(v, &what)))).collect())
            .unwrap_or_default();
        if name == "nats" {
            only_keys(&what, service, &["image", "command", "environment", "volumes"]);
            assert!(str_of(&service["image"], &what).starts_with("nats:"), "{what}: the nats image");
            assert_eq!(
                strings(&service["command"], &what),
                ["-c", "/etc/nats/nats.conf", "-sd", "/data"],
                "{what}: the command the emulation runs nats-server with"
            );
            assert!(
                strings(&service["volumes"], &what).contains(&"./nats/nats.conf:/etc/nats/nats.conf:ro".to_owned()),
                "{what}: mounts deploy/nats/nats.conf"
            );
            nats_envs = env;
            continue;
        }
        only_keys(
            &what,
            service,
            &["build", "image", "command", "environment", "volumes", "ports", "depends_on", "secrets", "healthcheck"],
        );
        assert_eq!(str_of(&service["image"], &what), "battlelog", "{what}: the image deploy/Dockerfile builds");
        let mut container = Container { name: name.clone(), env, ..Container::default() };
        container.command = strings(&service["command"], &what);
        container.mounts = image_copies();
        for volume in service.get("volumes").map(|v| strings(v, &what)).unwrap_or_default() {
            let parts: Vec<&str> = volume.split(':').collect();
            assert!(parts.len() == 2 || (parts.len() == 3 && parts[2] == "ro"), "{what}: volume {volume:?}");
            let host = if parts[0].starts_with("./") {
                host_file(parts[0])
            } else {
                // A named volume: an empty directory of its own.
                assert!(file["volumes"].get(parts[0]).is_some(), "{what}: undeclared volume {}", parts[0]);
                let dir = volumes_dir.path().join(parts[0]);
                std::fs::create_dir_all(&dir).expect("a volume");
                dir
            };
            assert!(
                host.exists(),
                "{what}: {volume}: {} is not there (the compose header says to make it)",
                host.display()
            );
            container.mounts.push((parts[1].to_owned(), host));
        }
        for secret in service.get("secrets").map(|v| strings(v, &what)).unwrap_or_default() {
            let file = secrets.get(secret.as_str()).and_then(|s| s.get("file")).expect("a file secret");
            container.mounts.push((format!("/run/secrets/{secret}"), host_file(str_of(file, &what))));
        }
        for port in service.get("ports").map(|v| strings(v, &what)).unwrap_or_default() {
            let (host, inside) = port.split_once(':').unwrap_or_else(|| panic!("{what}: ports {port:?}"));
            let inside: u16 = inside.parse().expect("a port");
            // Only the service port is published: never the metrics port,
            // which answers anyone who reaches it.
            assert_eq!(inside, container.config_listen_port(), "{what}: publishes {port}, not its service port");
            container.ports.push(inside);
            published.push((format!("localhost:{host}"), name.clone()));
        }
        if let Some(depends) = service.get("depends_on") {
            container.depends_on = match depends.as_mapping() {
                Some(map) => map
                    .iter()
                    .map(|(k, v)| {
                        let condition = v.get("condition").map(|c| str_of(c, &what));
                        assert!(
                            matches!(condition, Some("service_healthy" | "service_started")),
                            "{what}: depends_on condition {condition:?}"
                        );
                        str_of(k, &what).to_owned()
                    })
                    .collect(),
                None => strings(depends, &what),
            };
        }
        if let Some(check) = service.get("healthcheck") {
            only_keys(
                &format!("{what}.healthcheck"),
                check,
                &["test", "interval", "timeout", "retries", "start_period"],
            );
            let test = strings(&check["test"], &what);
            assert!(
                test.len() == 4 && test[..3] == ["CMD", "bash", "-c"],
                "{what}: the emulation runs healthchecks [\"CMD\", \"bash\", \"-c\", script], got {test:?}"
            );
            container.probes.push(Probe::Bash(test[3].clone()));
            let port = test[3]
                .split("/dev/tcp/127.0.0.1/")
                .nth(1)
                .and_then(|p| p.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|p| p.parse().ok())
                .unwrap_or_else(|| panic!("{what}: the healthcheck connects to /dev/tcp/127.0.0.1/<port>"));
            container.ports.push(port);
        }
        containers.push(container);
    }
    Compose { containers, published, nats_envs, hosts, _volumes: volumes_dir }
}

/// docker-compose.yml, started as compose would: nats, then every service
/// after what it depends on, each healthcheck passing; the demo plays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compose_starts_as_written_and_the_demo_plays() {
    eprintln!("differences from a container run: {DIFFERENCES:#?}");
    let material = Material::generate();
    let compose = compose(&material);
    let names: Vec<&str> = compose.containers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["journal", "roller", "resolver", "web", "webhooks"], "every service of the stack is in compose");
    for container in &compose.containers {
        assert!(!container.probes.is_empty(), "{}: compose declares a healthcheck", container.name);
    }
    // Internal services are not published: only the resolver (forums) and
    // the web (behind its proxy) are.
    let mut published: Vec<&str> = compose.published.iter().map(|(_, s)| s.as_str()).collect();
    published.sort_unstable();
    assert_eq!(published, ["resolver", "web"], "compose publishes the resolver and the web only");
    let envs: Vec<(&str, &str)> = compose.nats_envs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let nats = NatsServer::start_with_config(&deploy_dir().join("nats/nats.conf"), &envs);
    let mut network = Network::default();
    network.addresses.insert("nats:4222".into(), nats.port());
    let running =
        start("compose", nats, compose.containers, network, &compose.hosts, &compose.published, &material).await;
    running.demo_plays(&material, "resolver", "web").await;
    assert_eq!(running.processes.len(), running.containers.len());
    // battlelog-webhooks follows the journal's events with its own NATS
    // login: it received the demo's (its /metrics, with a service token as
    // Prometheus scrapes it, deploy/prometheus/prometheus.yml).
    let token = material.token("service", "battlelog", "prometheus");
    let bearer = format!("Bearer {token}");
    let url = format!("http://127.0.0.1:{}/metrics", running.ports["webhooks"]);
    battlelog_test_support::poll_until("webhooks receives the demo's events", Duration::from_secs(30), || {
        let (url, bearer) = (url.clone(), bearer.clone());
        async move {
            let (status, body) = battlelog_test_support::http_get(&url, &[("authorization", &bearer)]).await;
            // No tenant has an endpoint in the shipped webhooks.toml: each
            // event is received and counted as skipped.
            let counter = |name: &str| {
                body.lines()
                    .find_map(|l| l.strip_prefix(&format!("battlelog_webhooks_{name}_total ")))
                    .and_then(|n| n.trim().parse::<u64>().ok())
                    .unwrap_or(0)
            };
            let received = counter("received") + counter("skipped_no_endpoint");
            (status == 200 && received > 0).then_some(())
        }
    })
    .await;
    // Every metric family the dashboards and alerts may name
    // (exported_metrics.rs) is one these services declare on /metrics, with
    // its type: a renamed or retyped metric fails here, not on a dashboard.
    let mut scrapes = vec![battlelog_test_support::http_get(&url, &[("authorization", &bearer)]).await];
    for port in running.metrics.values() {
        scrapes.push(battlelog_test_support::http_get(&format!("http://127.0.0.1:{port}/metrics"), &[]).await);
    }
    let declared: BTreeMap<String, String> = scrapes
        .iter()
        .flat_map(|(status, body)| {
            assert_eq!(*status, 200, "a /metrics scrape: {body}");
            body.lines().filter_map(|line| {
                let mut words = line.strip_prefix("# TYPE ")?.split_whitespace();
                Some((words.next()?.to_owned(), words.next()?.to_owned()))
            })
        })
        .collect();
    for (name, kind) in EXPORTED {
        // Families keyed by what happened (a refusal's reason or tenant, a
        // stream's method) have no series, and so no declaration, until it
        // happens once; the demo refuses nothing and opens no stream.
        // tests/observe.rs and runtime's observe tests see each of them on
        // a real server's /metrics.
        if BY_EVENT.contains(name) && !declared.contains_key(name.strip_suffix("_total").unwrap_or(name)) {
            continue;
        }
        // OpenMetrics declares a counter's family without its `_total`.
        let (family, wanted) = match kind {
            MetricKind::Counter => (name.strip_suffix("_total").unwrap_or(name), "counter"),
            MetricKind::Gauge => (*name, "gauge"),
            MetricKind::Histogram => (*name, "histogram"),
        };
        assert_eq!(
            declared.get(family).map(String::as_str),
            Some(wanted),
            "{name}: the running services declare it as a {wanted} (they declare: {declared:?})"
        );
    }
}

// ------------------------------------------------------------- kubernetes

/// The secrets the manifests expect, as the header's `kubectl create secret`
/// lines make them: name → key → host file.
fn kubernetes_secrets(material: &Material, nats_passwords: &Path) -> BTreeMap<String, BTreeMap<String, PathBuf>> {
    let root = material.root();
    let mut secrets = BTreeMap::new();
    for service in ["journal", "roller", "resolver"] {
        let files = ["tls.crt", "tls.key", "ca.crt"].map(|f| (f.to_owned(), root.join("tls").join(service).join(f)));
        secrets.insert(format!("battlelog-{service}-tls"), files.into_iter().collect());
    }
    let auth = ["token-signing.pub", "roller.token", "resolver.token", "web.token"]
        .map(|f| (f.to_owned(), root.join("auth").join(f)));
    secrets.insert("battlelog-auth".to_owned(), auth.into_iter().collect());
    let one = |key: &str, path: PathBuf| [(key.to_owned(), path)].into_iter().collect();
    secrets.insert("battlelog-master-key".to_owned(), one("battlelog-master-key", root.join("master.key")));
    secrets.insert("battlelog-log-key".to_owned(), one("battlelog-log-key", root.join("log.key")));
    secrets.insert("battlelog-web-share".to_owned(), one("share.secret", root.join("web/share.secret")));
    secrets
        .insert("battlelog-resolver-ids".to_owned(), one("battle-id.secret", root.join("resolver/battle-id.secret")));
    let nats = COMPOSE_VARIABLES.iter().map(|(k, _)| ((*k).to_owned(), nats_passwords.join(k))).collect();
    secrets.insert("battlelog-nats".to_owned(), nats);
    secrets
}

struct Kubernetes {
    containers: Vec<Container>,
    /// The secrets' and volumes' directories.
    _dirs: [TempDir; 2],
    hosts: Vec<String>,
    /// Service name:port → the container behind it, by selector.
    services: Vec<(String, String)>,
}

fn kubernetes(material: &Material) -> Kubernetes {
    let text = read(&deploy_dir().join("kubernetes/battlelog.yaml"));
    let documents: Vec<Value> = serde_yaml_ng::Deserializer::from_str(&text)
        .map(|doc| <Value as serde::Deserialize>::deserialize(doc).expect("battlelog.yaml is YAML"))
        .collect();
    let passwords = temp_dir("deploy-k8s-nats");
    for (name, value) in COMPOSE_VARIABLES {
        std::fs::write(passwords.path().join(name), value).expect("a password");
    }
    let secrets = kubernetes_secrets(material, passwords.path());
    let mounted = temp_dir("deploy-k8s-volumes");
    let mut containers = Vec::new();
    let mut hosts = vec!["nats".to_owned()];
    let mut services = Vec::new();
    let mut labels_of = BTreeMap::new();
    for doc in &documents {
        let kind = str_of(&doc["kind"], "kind");
        let name = str_of(&doc["metadata"]["name"], "metadata.name").to_owned();
        let what = format!("battlelog.yaml {kind} {name}");
        match kind {
            "Service" => {
                only_keys(&format!("{what} spec"), &doc["spec"], &["selector", "ports"]);
                let app = str_of(&doc["spec"]["selector"]["app"], &what).to_owned();
                for port in doc["spec"]["ports"].as_sequence().expect("ports") {
                    only_keys(&what, port, &["name", "port"]);
                    let number = port["port"].as_u64().expect("a port number");
                    services.push((format!("{name}:{number}"), app.clone()));
                }
                hosts.push(name);
            }
            "Deployment" | "StatefulSet" => {
                let spec = &doc["spec"];
                only_keys(
                    &format!("{what} spec"),
                    spec,
                    &["replicas", "selector", "template", "serviceName", "volumeClaimTemplates"],
                );
                let pod = &spec["template"]["spec"];
                only_keys(&format!("{what} pod"), pod, &["containers", "volumes", "terminationGracePeriodSeconds"]);
                let app = str_of(&spec["template"]["metadata"]["labels"]["app"], &what).to_owned();
                let claims: Vec<String> = spec
                    .get("volumeClaimTemplates")
                    .and_then(Value::as_sequence)
                    .map(|s| s.iter().map(|c| str_of(&c["metadata"]["name"], &what).to_owned()).collect())
                    .unwrap_or_default();
                for c in pod["containers"].as_sequence().expect("containers") {
                    let cname = str_of(&c["name"], &what).to_owned();
                    let cwhat = format!("{what} container {cname}");
                    only_keys(
                        &cwhat,
                        c,
                        &[
                            "name",
                            "image",
                            "command",
                            "ports",
                            "env",
                            "readinessProbe",
                            "livenessProbe",
                            "volumeMounts",
                        ],
                    );
                    assert_eq!(str_of(&c["image"], &cwhat), "battlelog", "{cwhat}: the image deploy/Dockerfile builds");
                    let mut container = Container { name: cname.clone(), ..Container::default() };
                    container.command = strings(&c["command"], &cwhat);
                    // The image's own files, under whatever the pod mounts.
                    container.mounts = image_copies();
                    for port in c.get("ports").and_then(Value::as_sequence).into_iter().flatten() {
                        container.ports.push(port["containerPort"].as_u64().expect("containerPort") as u16);
                    }
                    for entry in c.get("env").and_then(Value::as_sequence).into_iter().flatten() {
                        only_keys(&cwhat, entry, &["name", "value", "valueFrom"]);
                        let key = str_of(&entry["name"], &cwhat).to_owned();
                        let value = match entry.get("value") {
                            Some(v) => expand(str_of(v, &cwhat), &container.env),
                            None => {
                                let reference = &entry["valueFrom"]["secretKeyRef"];
                                let secret = &secrets[str_of(&reference["name"], &cwhat)];
                                read(&secret[str_of(&reference["key"], &cwhat)])
                            }
                        };
                        container.env.push((key, value));
                    }
                    for (field, probe) in
                        [("readinessProbe", c.get("readinessProbe")), ("livenessProbe", c.get("livenessProbe"))]
                    {
                        let Some(probe) = probe else { continue };
                        let pwhat = format!("{cwhat} {field}");
                        only_keys(&pwhat, probe, &["tcpSocket", "httpGet", "periodSeconds"]);
                        if let Some(tcp) = probe.get("tcpSocket") {
                            container.probes.push(Probe::Tcp(tcp["port"].as_u64().expect("a port") as u16));
                        } else if let Some(http) = probe.get("httpGet") {
                            only_keys(&pwhat, http, &["path", "port"]);
                            let path = str_of(&http["path"], &pwhat).to_owned();
                            container
                                .probes
                                .push(Probe::HttpGet { path, port: http["port"].as_u64().expect("a port") as u16 });
                        } else {
                            panic!("{pwhat}: a probe the emulation does not run");
                        }
                    }
                    let volumes = pod["volumes"].as_sequence().expect("volumes");
                    for mount in c["volumeMounts"].as_sequence().expect("volumeMounts") {
                        only_keys(&cwhat, mount, &["name", "mountPath", "readOnly"]);
                        let vname = str_of(&mount["name"], &cwhat);
                        let path = str_of(&mount["mountPath"], &cwhat).to_owned();
                        let dir = mounted.path().join(&cname).join(vname);
                        std::fs::create_dir_all(&dir).expect("a volume dir");
                        if let Some(volume) = volumes.iter().find(|v| v["name"].as_str() == Some(vname)) {
                            only_keys(&cwhat, volume, &["name", "configMap", "secret"]);
                            if let Some(map) = volume.get("configMap") {
                                assert_eq!(str_of(&map["name"], &cwhat), "battlelog-config", "{cwhat}: the config map");
                                // `kubectl create configmap battlelog-config --from-file=deploy/config`
                                for entry in std::fs::read_dir(deploy_dir().join("config")).expect("deploy/config") {
                                    let entry = entry.expect("an entry");
                                    std::fs::copy(entry.path(), dir.join(entry.file_name())).expect("copy a config");
                                }
                            } else {
                                let secret = &volume["secret"];
                                only_keys(&cwhat, secret, &["secretName", "items"]);
                                let keys = &secrets[str_of(&secret["secretName"], &cwhat)];
                                let items: Vec<(String, String)> = match secret.get("items") {
                                    Some(items) => items
                                        .as_sequence()
                                        .expect("items")
                                        .iter()
                                        .map(|i| {
                                            (
                                                str_of(&i["key"], &cwhat).to_owned(),
                                                str_of(&i["path"], &cwhat).to_owned(),
                                            )
                                        })
                                        .collect(),
                                    None => keys.keys().map(|k| (k.clone(), k.clone())).collect(),
                                };
                                for (key, path) in items {
                                    let source = keys.get(&key).unwrap_or_else(|| panic!("{cwhat}: no key {key}"));
                                    std::fs::copy(source, dir.join(path)).expect("copy a secret");
                                }
                            }
                        } else {
                            assert!(claims.iter().any(|c| c == vname), "{cwhat}: mounts undeclared volume {vname}");
                        }
                        container.mounts.push((path, dir));
                    }
                    labels_of.insert(cname.clone(), app.clone());
                    containers.push(container);
                }
            }
            other => panic!("{what}: kind {other} is not understood by the deploy emulation"),
        }
    }
    // A Service reaches the containers its selector picks.
    let services = services
        .into_iter()
        .map(|(address, app)| {
            let container = labels_of
                .iter()
                .find(|(_, a)| **a == app)
                .map(|(c, _)| c.clone())
                .unwrap_or_else(|| panic!("Service {address} selects no pod"));
            (address, container)
        })
        .collect();
    Kubernetes { containers, hosts, services, _dirs: [passwords, mounted] }
}

/// Kubernetes' `$(VAR)` expansion from the container's earlier entries.
fn expand(value: &str, env: &[(String, String)]) -> String {
    let mut out = value.to_owned();
    for (name, v) in env {
        out = out.replace(&format!("$({name})"), v);
    }
    assert!(!out.contains("$("), "{value:?} references a variable not defined before it");
    out
}

/// kubernetes/battlelog.yaml, each Deployment's and StatefulSet's container
/// started as the kubelet would (in the file's order), its readiness and
/// liveness probes passing; the demo plays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubernetes_manifests_start_as_written_and_the_demo_plays() {
    eprintln!("differences from a pod run: {DIFFERENCES:#?}");
    let material = Material::generate();
    let k8s = kubernetes(&material);
    let names: Vec<&str> = k8s.containers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["journal", "roller", "resolver", "web"], "the manifests' containers");
    for container in &k8s.containers {
        assert!(!container.probes.is_empty(), "{}: a readiness probe", container.name);
    }
    // nats-server as the NATS Helm chart would run it, with deploy/nats's
    // config and the battlelog-nats secret as its environment.
    let envs: Vec<(&str, &str)> = COMPOSE_VARIABLES.to_vec();
    let nats = NatsServer::start_with_config(&deploy_dir().join("nats/nats.conf"), &envs);
    let mut network = Network::default();
    network.addresses.insert("nats:4222".into(), nats.port());
    // A Service's name:port is the container's: the emulation names each
    // container's address by the container name; alias the Services' names.
    let containers = k8s.containers;
    for (address, container) in &k8s.services {
        let (service, port) = address.split_once(':').expect("name:port");
        let c = containers.iter().find(|c| &c.name == container).expect("the selected container");
        assert_eq!(service, c.name, "Service {service} is named after its container, as the configs' peer URLs expect");
        // A Service exposes the service port only, never the metrics port.
        let port: u16 = port.parse().expect("a port");
        assert_eq!(port, c.config_listen_port(), "Service {address}: not its container's service port");
    }
    for c in &containers {
        if let Some(metrics) = c.config_port("metrics_listen") {
            assert!(c.ports.contains(&metrics), "{}: declares its metrics port {metrics} as a containerPort", c.name);
        }
    }
    let running = start("kubernetes", nats, containers, network, &k8s.hosts, &[], &material).await;
    running.demo_plays(&material, "resolver", "web").await;
}

// --------------------------------------------------------------- Dockerfile

/// The Dockerfile builds what the deploy files start: every binary a
/// command names is built (`--bin`) and copied to /usr/local/bin, a
/// workspace binary of that name exists, and the configs the commands
/// name are where the image (or the pod's config map, from the same
/// directory) puts deploy/config.
#[test]
fn the_dockerfile_builds_and_installs_what_the_deploy_files_start() {
    let dockerfile = read(&deploy_dir().join("Dockerfile"));
    let built: Vec<&str> = dockerfile
        .split_whitespace()
        .collect::<Vec<_>>()
        .windows(2)
        .filter(|w| w[0] == "--bin")
        .map(|w| w[1])
        .collect();
    // The runtime stage's `COPY --from=build <files…> /usr/local/bin/`.
    let copy = dockerfile
        .split("COPY --from=build ")
        .nth(1)
        .expect("a COPY --from=build")
        .split('\n')
        .scan(true, |go_on, line| {
            let keep = *go_on;
            *go_on = line.trim_end().ends_with('\\');
            keep.then_some(line)
        })
        .collect::<Vec<_>>()
        .join(" ")
        .replace('\\', " ");
    let words: Vec<&str> = copy.split_whitespace().collect();
    let (dest, sources) = words.split_last().expect("COPY sources and a destination");
    assert_eq!(*dest, "/usr/local/bin/", "binaries on the image's PATH");
    let installed: Vec<&str> = sources
        .iter()
        .map(|s| s.strip_prefix("/src/target/release/").unwrap_or_else(|| panic!("copied from the release build: {s}")))
        .collect();
    for binary in &installed {
        assert!(built.contains(binary), "{binary} is installed but not built (--bin)");
    }
    let material = Material::generate();
    let (compose, k8s) = (compose(&material), kubernetes(&material));
    let commands = compose.containers.iter().map(|c| ("docker-compose.yml", c));
    for (file, container) in commands.chain(k8s.containers.iter().map(|c| ("battlelog.yaml", c))) {
        let binary = container.binary();
        assert!(installed.contains(&binary), "{file} {}: {binary} is not installed by the Dockerfile", container.name);
        // A workspace binary of that name exists (the build made it).
        battlelog_test_support::service_binary(binary);
        let config = container.config_path();
        let host = container
            .host_path(config)
            .unwrap_or_else(|| panic!("{file} {}: nothing provides {config}", container.name));
        assert!(host.is_file(), "{file} {}: {config} is {}, not a file", container.name, host.display());
    }
    assert!(
        image_copies().iter().any(|(inside, host)| inside == "/etc/battlelog" && host.ends_with("deploy/config")),
        "the image holds deploy/config at /etc/battlelog"
    );
}
