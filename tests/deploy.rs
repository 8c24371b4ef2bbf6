//! The deploy files, proven to start (issue 22). No container engine runs
//! in CI, so this is the emulation: it reads `deploy/docker-compose.yml`,
//! `deploy/docker-compose.jetstream.yml`, `deploy/kubernetes/battlelog.yaml`
//! and `deploy/kubernetes/battlelog-jetstream.yaml` and starts every
//! battlelog service they declare as the real binary from `target/debug`,
//! with the command, environment and config file they give and the files
//! their mounts hold (TLS certificates, tokens, keys and secrets, made the
//! way `deploy/README.md` says), beside real nats-servers run as the files
//! run them: one on `deploy/nats/nats.conf`, or the JetStream layout's
//! three-node cluster on `deploy/nats/jetstream.conf` with each node's
//! name and routes from its command line (issue 37). Then every health
//! probe the files declare must pass, and `battlelog demo` plays against
//! the resolver over TLS with a forum's token, one of its battles' pages
//! opening on the web through the link the resolver gave; on the JetStream
//! layout the journal's stream has its three replicas current, both
//! journals took appends, and the webhooks received the events, each
//! checked with the journal.
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

use std::cell::RefCell;

use battlelog_test_support::{NatsCluster, NatsServer, NodeCommand, ServiceProcess, cluster::free_ports, temp_dir};
use serde_yaml_ng::Value;
use tempfile::TempDir;
use tonic::transport::{Certificate, ClientTlsConfig, Identity};

use battlelog_test_support::metrics::{EXPORTED, Kind as MetricKind};

/// Everything a container run by this test has that a real one would not.
const DIFFERENCES: &[&str] = &[
    "paths: a path inside the container is the host file its mount gives (the image's /etc/battlelog is \
     deploy/config, as the Dockerfile copies it); a config file's paths are rewritten accordingly",
    "network: a service's host:port (journal:50053, nats:4222, a published localhost:8080) is a free \
     loopback port, in config values and environment values alike",
    "listen: each service's `listen` is overridden with BATTLELOG_<SERVICE>_LISTEN=127.0.0.1:<its loopback port>, \
     and its `metrics_listen` with BATTLELOG_<SERVICE>_METRICS_LISTEN=127.0.0.1:<another>",
    "nats: nats-server listens on a free loopback port (client and monitor) with its store in a temp dir; a \
     cluster node's client, monitoring and route ports are moved to free loopback ones with `-a 127.0.0.1 -p -1 -m \
     -1 --cluster nats://127.0.0.1:<port>` after its own flags, and its routes name those ports",
    "replicas: a workload of N replicas (compose `deploy.replicas`, a Deployment's `replicas`) runs min(N, 2) \
     processes, `<name>-1` and `<name>-2`; the address of their service reaches them in turn, one caller after \
     another (as DNS round-robin or a Service spreads connections)",
    "restarts: a process that exits before it is ready is started again, up to five times, where its file says \
     it would be (every Kubernetes container; a compose service with `restart:`)",
    "the image: its empty /var/lib/battlelog (the Dockerfile makes it, owned by the service's user) is a fresh \
     temp dir of each process, under whatever the file mounts",
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
#[derive(Debug, Default, Clone)]
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
    /// How many replicas the file asks for (compose `deploy.replicas`, a
    /// workload's `replicas`): 1 unless it says.
    replicas: usize,
    /// Whether a process that exits is started again (Kubernetes always;
    /// compose with `restart:`).
    restarts: bool,
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
        material.tls(&["journal", "roller", "resolver", "webhooks"]);
        let auth = root.join("auth");
        std::fs::create_dir_all(&auth).expect("auth dir");
        let key = root.join("token-signing.pem");
        cli(&["token", "keygen", "--out", &key.display().to_string()]);
        std::fs::copy(root.join("token-signing.pem.pub"), auth.join("token-signing.pub")).expect("copy the public key");
        for (file, role, subject) in [
            ("roller.token", "service", "roller"),
            ("resolver.token", "service", "resolver"),
            ("webhooks.token", "service", "webhooks"),
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

/// Where each service's host:port, as the files name it, is on loopback:
/// every replica's port, handed out in turn.
#[derive(Debug, Default)]
struct Network {
    addresses: BTreeMap<String, Vec<u16>>,
    /// How many URLs were mapped to each address so far: which of its
    /// replicas comes next.
    mapped: RefCell<BTreeMap<String, usize>>,
}

impl Network {
    fn insert(&mut self, address: impl Into<String>, port: u16) {
        self.addresses.entry(address.into()).or_default().push(port);
    }

    /// `text` with every `<host>:<port>` of a known service in a URL (or in
    /// each URL of a comma-separated list) replaced by its loopback
    /// address: `localhost`, since the peers' certificates name it (and the
    /// URL's host is what TLS checks). An address several replicas serve
    /// gives them in turn, one caller after another (the first replica of a
    /// caller reaches the first of its peer's). A URL naming a known host on
    /// a port nothing serves fails.
    fn map(&self, text: &str, known_hosts: &[String]) -> String {
        if text.contains(',') && text.contains("://") {
            return text.split(',').map(|url| self.map(url, known_hosts)).collect::<Vec<_>>().join(",");
        }
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
        let ports = self
            .addresses
            .get(authority)
            .unwrap_or_else(|| panic!("{text:?} names {authority}, which no service of the deploy file serves"));
        let mut mapped = self.mapped.borrow_mut();
        let turn = mapped.entry(authority.to_owned()).or_default();
        let port = ports[*turn % ports.len()];
        *turn += 1;
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

/// The NATS a deployment runs: one server, or the JetStream layout's
/// three-node cluster. Kept for the deployment's life.
enum Nats {
    One { _server: NatsServer },
    Cluster(NatsCluster),
}

/// A running emulated deployment.
struct Running {
    nats: Nats,
    /// The rendered configs and the logs, and each process's own empty
    /// /var/lib/battlelog (the image's).
    _work: TempDir,
    processes: BTreeMap<String, ServiceProcess>,
    /// Process name (the container's, `-1`/`-2` for replicas) → its loopback port.
    ports: BTreeMap<String, u16>,
    /// Process name → its metrics port, for those whose config sets one.
    metrics: BTreeMap<String, u16>,
    /// One per process, named as the processes are.
    containers: Vec<Container>,
    /// What the deploy files mount (Kubernetes' volumes, its secrets'
    /// files): it lives as long as the processes that use it.
    mounted: Vec<TempDir>,
}

/// How many processes the emulation runs for `replicas`: two show replicas
/// sharing the work; more add nothing here.
fn emulated_replicas(replicas: usize) -> usize {
    replicas.clamp(1, 2)
}

/// Starts `containers` in order (each one's dependencies first), every one
/// after the one before it is healthy; a container of several replicas as
/// that many processes (`<name>-1`, `<name>-2`), each healthy in turn.
async fn start(
    label: &str,
    nats: Nats,
    mut containers: Vec<Container>,
    mut network: Network,
    hosts: &[String],
    published: &[(String, String)],
    material: &Material,
) -> Running {
    let work = temp_dir(&format!("deploy-{label}"));
    order(&mut containers);
    // One entry per process, each knowing the container (the host name its
    // peers reach it by) it is a replica of.
    let containers: Vec<(String, Container)> = containers
        .into_iter()
        .flat_map(|container| {
            let count = emulated_replicas(container.replicas);
            (1..=count).map(move |i| {
                let mut process = container.clone();
                if count > 1 {
                    process.name = format!("{}-{i}", container.name);
                }
                (container.name.clone(), process)
            })
        })
        .collect();
    // Every process's loopback port, before any starts: peers name each
    // other (and the resolver names the web's public URL) up front.
    let ports = free_ports(2 * containers.len());
    let mut loopback = BTreeMap::new();
    let mut metrics = BTreeMap::new();
    for ((host, container), ports) in containers.iter().zip(ports.chunks(2)) {
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
        network.insert(format!("{host}:{listen}"), *port);
        loopback.insert(container.name.clone(), *port);
        if container.config_port("metrics_listen").is_some() {
            metrics.insert(container.name.clone(), metrics_port);
        }
        for (host_side, _) in published.iter().filter(|(_, service)| service == host) {
            network.insert(host_side.clone(), *port);
        }
    }
    for (host_side, service) in published {
        assert!(containers.iter().any(|(host, _)| host == service), "{host_side} is published for unknown {service}");
    }
    let mut processes = BTreeMap::new();
    for (_, container) in &containers {
        let port = loopback[&container.name];
        let config = container.config_path().to_owned();
        let source =
            container.host_path(&config).unwrap_or_else(|| panic!("{}: nothing mounts {config}", container.name));
        let mut container = container.clone();
        // The image's own empty /var/lib/battlelog, under whatever the file
        // mounts there (the longest mount wins; a volume, being later, wins
        // a tie).
        let image_data = work.path().join("image-data").join(&container.name);
        std::fs::create_dir_all(&image_data).expect("the image's data dir");
        container.mounts.insert(0, ("/var/lib/battlelog".to_owned(), image_data));
        let mut table: toml::Table = read(&source).parse().expect("a TOML config");
        for (key, value) in table.iter_mut() {
            if key != "listen" {
                rewrite_toml(&container, &network, hosts, key, value);
            }
        }
        let rendered = work.path().join(format!("{}.toml", container.name));
        std::fs::write(&rendered, toml::to_string(&table).expect("TOML")).expect("write the rendered config");
        let args = vec!["--config".to_owned(), rendered.display().to_string()];
        let mut envs: Vec<(String, String)> =
            container.env.iter().map(|(k, v)| (k.clone(), rewrite(&container, &network, hosts, k, v))).collect();
        let prefix = format!("BATTLELOG_{}", container.service().to_ascii_uppercase());
        envs.push((format!("{prefix}_LISTEN"), format!("127.0.0.1:{port}")));
        if let Some(metrics_port) = metrics.get(&container.name) {
            envs.push((format!("{prefix}_METRICS_LISTEN"), format!("127.0.0.1:{metrics_port}")));
        }
        let binary = battlelog_test_support::service_binary(container.binary());
        let log = work.path().join(format!("{}.log", container.name));
        let attempts = if container.restarts { 5 } else { 1 };
        let mut failures = Vec::new();
        let process = loop {
            let started = match kind_of(container.binary()) {
                Kind::Grpc => {
                    ServiceProcess::try_start_tls(&binary, &args, &envs, &log, Some(material.client_tls())).await
                }
                Kind::Http => Ok(ServiceProcess::start_http(&binary, &args, &envs, &log).await),
            };
            match started {
                Ok(process) => break process,
                Err(why) => {
                    failures.push(why);
                    assert!(failures.len() < attempts, "{} did not start:\n{}", container.name, failures.join("\n"));
                    eprintln!("{} exited before it was ready; started again, as its supervisor would", container.name);
                }
            }
        };
        assert_eq!(process.addr().port(), port, "{} listens where it was told", container.name);
        for probe in &container.probes {
            probe_passes(&container, probe, port, metrics.get(&container.name).copied()).await;
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
    let containers = containers.into_iter().map(|(_, container)| container).collect();
    Running { nats, processes, ports: loopback, metrics, containers, _work: work, mounted: Vec::new() }
}

/// Orders `containers` so that each comes after what it depends on
/// (compose's depends_on); a stable order otherwise (the file's).
fn order(containers: &mut Vec<Container>) {
    let mut ordered: Vec<Container> = Vec::new();
    // What is not a battlelog container is NATS, which runs first.
    let names: Vec<String> = containers.iter().map(|c| c.name.clone()).collect();
    while !containers.is_empty() {
        let ready = containers
            .iter()
            .position(|c| c.depends_on.iter().all(|d| !names.contains(d) || ordered.iter().any(|o| &o.name == d)))
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
    /// The port of `host`'s process, or of its first replica's.
    fn port_of(&self, host: &str) -> u16 {
        let port = self.ports.get(host).or_else(|| self.ports.get(&format!("{host}-1")));
        *port.unwrap_or_else(|| panic!("no process of {host} among {:?}", self.ports.keys()))
    }

    async fn demo_plays(&self, material: &Material, resolver: &str, web: &str) {
        let resolver_port = self.port_of(resolver);
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
            battlelog_test_support::http_get(&format!("http://127.0.0.1:{}{path}", self.port_of(web)), &[]).await;
        if status != 200 {
            panic!(
                "the battle's page opens on the web through its share link: {status} {body}\n{}",
                self.logs_of(&[resolver, web, "journal"])
            );
        }
    }

    /// The logs of `hosts`' processes (every replica's), for a failure's
    /// message: what a service said is what explains an answer.
    fn logs_of(&self, hosts: &[&str]) -> String {
        let mut out = String::new();
        for name in self.processes.keys() {
            let host = name.rsplit_once('-').filter(|(_, n)| n.parse::<u8>().is_ok()).map_or(name.as_str(), |(h, _)| h);
            if hosts.contains(&host) {
                let log = self._work.path().join(format!("{name}.log"));
                let text = std::fs::read_to_string(&log).unwrap_or_else(|e| format!("(unreadable: {e})"));
                out.push_str(&format!("--- {name}.log\n{text}\n"));
            }
        }
        out
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

/// A NATS server a deploy file declares: the container's command line
/// (`-c <config> …`, after the image's `nats-server`), its environment and
/// mounts, and the host names it is reached by.
#[derive(Debug)]
struct NatsNode {
    name: String,
    /// The names the others reach it by (`nats-a`; a pod's `nats-0.nats`).
    hosts: Vec<String>,
    command: Vec<String>,
    env: Vec<(String, String)>,
    /// Container path → host path.
    mounts: Vec<(String, PathBuf)>,
}

impl NatsNode {
    fn host_path(&self, path: &str) -> PathBuf {
        let container = Container { name: self.name.clone(), mounts: self.mounts.clone(), ..Container::default() };
        container.host_path(path).unwrap_or_else(|| panic!("{}: nothing mounts {path}", self.name))
    }
}

/// Starts the NATS the file declares, as it declares it: one node
/// (`-c <config> -sd /data`), or a three-node cluster (`-c <config> -n
/// <name> -sd /data --routes <all three>`), each node's ports moved to
/// free loopback ones ([`DIFFERENCES`]). Adds each node's `host:4222`, and
/// `service` (the Kubernetes Service in front of them all) if given, to
/// `network`.
async fn start_nats(label: &str, nodes: Vec<NatsNode>, service: Option<&str>, network: &mut Network) -> Nats {
    let clients = |network: &mut Network, node: &NatsNode, port: u16| {
        for host in node.hosts.iter().map(String::as_str).chain(service) {
            network.insert(format!("{host}:4222"), port);
        }
    };
    if let [node] = nodes.as_slice() {
        let [flag, config, store_flag, store] = node.command.as_slice() else {
            panic!("{}: the emulation runs one node as `-c <config> -sd <dir>`, not {:?}", node.name, node.command)
        };
        assert_eq!((flag.as_str(), store_flag.as_str()), ("-c", "-sd"), "{}: {:?}", node.name, node.command);
        node.host_path(store);
        let envs: Vec<(&str, &str)> = node.env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let nats = NatsServer::start_with_config(&node.host_path(config), &envs);
        clients(network, node, nats.port());
        return Nats::One { _server: nats };
    }
    assert_eq!(nodes.len(), battlelog_test_support::cluster::CLUSTER_NODES, "a NATS cluster of three nodes");
    let commands = || -> [NodeCommand; 3] {
        let route_ports = free_ports(nodes.len());
        let route_of = |host: &str| {
            let index = nodes
                .iter()
                .position(|n| n.hosts.iter().any(|h| h == host))
                .unwrap_or_else(|| panic!("a route names {host}, which no NATS node of the deploy file is"));
            route_ports[index]
        };
        let command = |(index, node): (usize, &NatsNode)| {
            let mut args = Vec::new();
            let mut name = None;
            for pair in node.command.chunks(2) {
                let [flag, value] = pair else { panic!("{}: {:?} is not flag-value pairs", node.name, node.command) };
                let value = match flag.as_str() {
                    "-c" | "-sd" => node.host_path(value).display().to_string(),
                    "-n" => {
                        name = Some(value.clone());
                        value.clone()
                    }
                    "--routes" => value
                        .split(',')
                        .map(|route| {
                            let authority = route
                                .strip_prefix("nats-route://")
                                .unwrap_or_else(|| panic!("{}: a route {route:?} not nats-route://", node.name));
                            let (host, port) = authority.rsplit_once(':').expect("host:port");
                            assert_eq!(port, "6222", "{}: routes go to the cluster port of jetstream.conf", node.name);
                            format!("nats-route://127.0.0.1:{}", route_of(host))
                        })
                        .collect::<Vec<_>>()
                        .join(","),
                    other => panic!("{}: nats-server flag {other} is not understood by the emulation", node.name),
                };
                args.extend([flag.clone(), value]);
            }
            let own = route_ports[index];
            args.extend(
                ["-a", "127.0.0.1", "-p", "-1", "-m", "-1", "--cluster", &format!("nats://127.0.0.1:{own}")]
                    .map(String::from),
            );
            let name = name.unwrap_or_else(|| panic!("{}: a cluster node names itself (-n)", node.name));
            NodeCommand { name, args, envs: node.env.clone() }
        };
        let commands: Vec<NodeCommand> = nodes.iter().enumerate().map(command).collect();
        commands.try_into().expect("three nodes")
    };
    let cluster = NatsCluster::start_with_commands(label, commands).await;
    for (index, node) in nodes.iter().enumerate() {
        let url = cluster.client_url(index);
        let port = url.rsplit(':').next().and_then(|p| p.parse().ok()).expect("a client port");
        clients(network, node, port);
    }
    Nats::Cluster(cluster)
}

struct Compose {
    containers: Vec<Container>,
    /// The named volumes' directories.
    _volumes: TempDir,
    published: Vec<(String, String)>,
    nats: Vec<NatsNode>,
    hosts: Vec<String>,
}

fn compose(material: &Material, file_name: &str) -> Compose {
    let text = read(&deploy_dir().join(file_name));
    let file: Value = serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{file_name} is YAML: {e}"));
    only_keys(file_name, &file, &["services", "secrets", "volumes"]);
    let volumes_dir = temp_dir("deploy-compose-volumes");
    let secrets = file["secrets"].as_mapping().expect("secrets");
    let services = file["services"].as_mapping().expect("services");
    // The services' names, and `localhost` for the published ports.
    let mut hosts: Vec<String> = services.keys().map(|k| str_of(k, "a service name").to_owned()).collect();
    hosts.push("localhost".to_owned());
    let host_file = |source: &str| -> PathBuf {
        let relative =
            source.strip_prefix("./").unwrap_or_else(|| panic!("a bind mount relative to deploy/: {source}"));
        // deploy/nats is the repository's; everything else the operator makes.
        if relative == "nats" || relative.starts_with("nats/") {
            deploy_dir().join(relative)
        } else {
            material.root().join(relative)
        }
    };
    let mounts_of = |what: &str, service: &Value| -> Vec<(String, PathBuf)> {
        let mut mounts = Vec::new();
        for volume in service.get("volumes").map(|v| strings(v, what)).unwrap_or_default() {
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
            mounts.push((parts[1].to_owned(), host));
        }
        mounts
    };
    let mut containers = Vec::new();
    let mut published = Vec::new();
    let mut nats = Vec::new();
    for (name, service) in services {
        let name = str_of(name, "a service name").to_owned();
        let what = format!("{file_name} services.{name}");
        let env: Vec<(String, String)> = service
            .get("environment")
            .and_then(Value::as_mapping)
            .map(|m| m.iter().map(|(k, v)| (str_of(k, &what).to_owned(), interpolate(str_of(v, &what)))).collect())
            .unwrap_or_default();
        if str_of(&service["image"], &what).starts_with("nats:") {
            only_keys(&what, service, &["image", "command", "environment", "volumes", "restart"]);
            let command = strings(&service["command"], &what);
            nats.push(NatsNode { hosts: vec![name.clone()], command, env, mounts: mounts_of(&what, service), name });
            continue;
        }
        only_keys(
            &what,
            service,
            &[
                "build",
                "image",
                "command",
                "environment",
                "volumes",
                "ports",
                "depends_on",
                "secrets",
                "healthcheck",
                "deploy",
                "restart",
            ],
        );
        assert_eq!(str_of(&service["image"], &what), "battlelog", "{what}: the image deploy/Dockerfile builds");
        let mut container = Container { name: name.clone(), env, replicas: 1, ..Container::default() };
        container.command = strings(&service["command"], &what);
        container.mounts = image_copies();
        container.mounts.extend(mounts_of(&what, service));
        if let Some(deploy) = service.get("deploy") {
            only_keys(&format!("{what}.deploy"), deploy, &["replicas"]);
            container.replicas = deploy["replicas"].as_u64().expect("a replica count") as usize;
        }
        if let Some(restart) = service.get("restart") {
            assert!(
                matches!(str_of(restart, &what), "unless-stopped" | "always" | "on-failure"),
                "{what}: restart {restart:?}"
            );
            container.restarts = true;
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
            for dependency in &container.depends_on {
                assert!(hosts.contains(dependency), "{what}: depends on {dependency}, which is no service");
            }
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
    Compose { containers, published, nats, hosts, _volumes: volumes_dir }
}

impl Running {
    /// battlelog-webhooks (`process`) follows the journal's events with its
    /// own NATS login and received the demo's: its admin /metrics, with a
    /// service token, as Prometheus scrapes it
    /// (deploy/prometheus/prometheus.yml). No tenant has an endpoint in the
    /// shipped webhooks.toml: each event is received and counted as
    /// skipped. None was refused as forged: with `journal_url`, each one
    /// was checked with the journal, which holds it. Returns that scrape.
    async fn webhooks_received_the_demo(&self, material: &Material, process: &str) -> (u16, String) {
        let token = material.token("service", "battlelog", "prometheus");
        let bearer = format!("Bearer {token}");
        let url = format!("http://127.0.0.1:{}/metrics", self.ports[process]);
        let counter = |body: &str, name: &str| {
            body.lines()
                .find_map(|l| l.strip_prefix(&format!("battlelog_webhooks_{name}_total ")))
                .and_then(|n| n.trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        battlelog_test_support::poll_until("webhooks receives the demo's events", Duration::from_secs(30), || {
            let (url, bearer) = (url.clone(), bearer.clone());
            async move {
                let (status, body) = battlelog_test_support::http_get(&url, &[("authorization", &bearer)]).await;
                (status == 200 && counter(&body, "received") + counter(&body, "skipped_no_endpoint") > 0).then_some(())
            }
        })
        .await;
        let scrape = battlelog_test_support::http_get(&url, &[("authorization", &bearer)]).await;
        assert_eq!(counter(&scrape.1, "forged"), 0, "the journal holds every event of the feed:\n{}", scrape.1);
        let log = self.processes[process].log();
        assert!(!log.contains("no journal_url"), "{process} checks the feed with the journal (journal_url):\n{log}");
        scrape
    }

    /// Every metric family the dashboards and alerts may name
    /// (exported_metrics.rs) is one these services declare on /metrics,
    /// with its type: a renamed or retyped metric fails here, not on a
    /// dashboard. Families counted by event (a refusal, a shed request, a
    /// stream) are declared from the start, at zero for every label set
    /// the service knows (tests/metrics_at_start.rs): none is skipped.
    async fn every_exported_family_is_declared(&self, mut scrapes: Vec<(u16, String)>) {
        for port in self.metrics.values() {
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

    /// The JetStream layout: the journal's stream has its three replicas,
    /// all current, one on each node; and every journal took appends of the
    /// demo (the services' configs name `journal`, which reaches them in
    /// turn), each on that one stream.
    async fn the_journal_log_is_replicated_and_both_journals_wrote_it(&self, journals: &[&str]) {
        let Nats::Cluster(cluster) = &self.nats else { panic!("the JetStream layout runs a NATS cluster") };
        battlelog_test_support::poll_until(
            "BATTLELOG_JOURNAL has three current replicas",
            Duration::from_secs(30),
            || async move { (cluster.stream_current_replicas("BATTLELOG_JOURNAL").await == Some(3)).then_some(()) },
        )
        .await;
        for index in 0..battlelog_test_support::cluster::CLUSTER_NODES {
            let jsz = cluster.monitor(index, "/jsz?streams=true&config=true").await.expect("the node's /jsz");
            let detail = jsz["account_details"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|account| account["stream_detail"].as_array())
                .flatten()
                .find(|detail| detail["name"] == "BATTLELOG_JOURNAL")
                .unwrap_or_else(|| panic!("BATTLELOG_JOURNAL on node {index}: {jsz}"));
            assert_eq!(detail["config"]["num_replicas"], 3, "R3, as the files ask: {detail}");
            assert_eq!(detail["config"]["storage"], "file", "{detail}");
            assert!(detail["state"]["messages"].as_u64().is_some_and(|m| m > 0), "the demo's appends: {detail}");
        }
        assert_eq!(journals.len(), 2, "two journals");
        for journal in journals {
            let port = self.metrics[*journal];
            let (_, body) = battlelog_test_support::http_get(&format!("http://127.0.0.1:{port}/metrics"), &[]).await;
            let committed = body
                .lines()
                .find_map(|l| l.strip_prefix("battlelog_journal_appends_total{result=\"committed\"} "))
                .and_then(|n| n.trim().parse::<f64>().ok())
                .unwrap_or(0.0);
            assert!(committed > 0.0, "{journal} took appends of the demo:\n{body}");
        }
    }
}

/// docker-compose.yml, started as compose would: nats, then every service
/// after what it depends on, each healthcheck passing; the demo plays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compose_starts_as_written_and_the_demo_plays() {
    eprintln!("differences from a container run: {DIFFERENCES:#?}");
    let material = Material::generate();
    let compose = compose(&material, "docker-compose.yml");
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
    let mut network = Network::default();
    assert_eq!(compose.nats.len(), 1, "one NATS node");
    let nats = start_nats("compose", compose.nats, None, &mut network).await;
    let running =
        start("compose", nats, compose.containers, network, &compose.hosts, &compose.published, &material).await;
    running.demo_plays(&material, "resolver", "web").await;
    assert_eq!(running.processes.len(), running.containers.len());
    let scrape = running.webhooks_received_the_demo(&material, "webhooks").await;
    running.every_exported_family_is_declared(vec![scrape]).await;
}

/// docker-compose.jetstream.yml (issue 37), started as compose would: the
/// three NATS nodes on jetstream.conf, each named and routed by its command
/// line; then two journals on the JetStream backend, the roller, the
/// resolver, the web and the webhooks, each after what it depends on. The
/// demo plays; the journal's log is a stream of three current replicas,
/// both journals wrote to it, and the webhooks received every event,
/// checked with the journal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compose_jetstream_runs_two_journals_on_an_r3_stream_and_the_demo_plays() {
    eprintln!("differences from a container run: {DIFFERENCES:#?}");
    let material = Material::generate();
    let compose = compose(&material, "docker-compose.jetstream.yml");
    let nats: Vec<&str> = compose.nats.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(nats, ["nats-a", "nats-b", "nats-c"], "three NATS nodes");
    let names: Vec<(&str, usize)> = compose.containers.iter().map(|c| (c.name.as_str(), c.replicas)).collect();
    assert_eq!(
        names,
        [("journal", 2), ("roller", 1), ("resolver", 1), ("web", 1), ("webhooks", 1)],
        "two journals and every other service"
    );
    for container in &compose.containers {
        assert!(!container.probes.is_empty(), "{}: compose declares a healthcheck", container.name);
        assert!(
            container.restarts,
            "{}: restarted when it exits (the journal's first start may race the cluster's forming)",
            container.name
        );
    }
    let mut published: Vec<&str> = compose.published.iter().map(|(_, s)| s.as_str()).collect();
    published.sort_unstable();
    assert_eq!(published, ["resolver", "web"], "compose publishes the resolver and the web only");
    let mut network = Network::default();
    let nats = start_nats("compose-jetstream", compose.nats, None, &mut network).await;
    let running =
        start("compose-js", nats, compose.containers, network, &compose.hosts, &compose.published, &material).await;
    running.demo_plays(&material, "resolver", "web").await;
    running.the_journal_log_is_replicated_and_both_journals_wrote_it(&["journal-1", "journal-2"]).await;
    let scrape = running.webhooks_received_the_demo(&material, "webhooks").await;
    running.every_exported_family_is_declared(vec![scrape]).await;
}

// ------------------------------------------------------------- kubernetes

/// The secrets the manifests expect, as the header's `kubectl create secret`
/// lines make them: name → key → host file.
fn kubernetes_secrets(material: &Material, nats_passwords: &Path) -> BTreeMap<String, BTreeMap<String, PathBuf>> {
    let root = material.root();
    let mut secrets = BTreeMap::new();
    for service in ["journal", "roller", "resolver", "webhooks"] {
        let files = ["tls.crt", "tls.key", "ca.crt"].map(|f| (f.to_owned(), root.join("tls").join(service).join(f)));
        secrets.insert(format!("battlelog-{service}-tls"), files.into_iter().collect());
    }
    let auth = ["token-signing.pub", "roller.token", "resolver.token", "webhooks.token", "web.token"]
        .map(|f| (f.to_owned(), root.join("auth").join(f)));
    secrets.insert("battlelog-auth".to_owned(), auth.into_iter().collect());
    let one = |key: &str, path: PathBuf| [(key.to_owned(), path)].into_iter().collect();
    secrets.insert("battlelog-master-key".to_owned(), one("battlelog-master-key", root.join("master.key")));
    secrets.insert("battlelog-log-key".to_owned(), one("battlelog-log-key", root.join("log.key")));
    secrets.insert("battlelog-web-share".to_owned(), one("share.secret", root.join("web/share.secret")));
    secrets
        .insert("battlelog-resolver-ids".to_owned(), one("battle-id.secret", root.join("resolver/battle-id.secret")));
    secrets.insert("battlelog-webhooks-config".to_owned(), one("webhooks.toml", root.join("webhooks/webhooks.toml")));
    let nats = COMPOSE_VARIABLES.iter().map(|(k, _)| ((*k).to_owned(), nats_passwords.join(k))).collect();
    secrets.insert("battlelog-nats".to_owned(), nats);
    secrets
}

/// The config maps the headers make: name → the files they hold.
fn kubernetes_config_maps() -> BTreeMap<&'static str, Vec<PathBuf>> {
    let files = |dir: &str, names: Option<&[&str]>| -> Vec<PathBuf> {
        let dir = deploy_dir().join(dir);
        match names {
            Some(names) => names.iter().map(|n| dir.join(n)).collect(),
            None => std::fs::read_dir(&dir).expect("deploy dir").map(|e| e.expect("an entry").path()).collect(),
        }
    };
    [
        // kubectl create configmap battlelog-config --from-file=deploy/config
        ("battlelog-config", files("config", None)),
        // … battlelog-nats-config --from-file=deploy/nats/jetstream.conf --from-file=deploy/nats/users.conf
        ("battlelog-nats-config", files("nats", Some(&["jetstream.conf", "users.conf"]))),
    ]
    .into_iter()
    .collect()
}

struct Kubernetes {
    containers: Vec<Container>,
    /// The NATS pods the manifest runs (none: NATS comes from elsewhere,
    /// as the Service `nats`).
    nats: Vec<NatsNode>,
    /// The secrets' and volumes' directories.
    dirs: [TempDir; 2],
    hosts: Vec<String>,
    /// Service name:port → the container behind it, by selector.
    services: Vec<(String, String)>,
}

fn kubernetes(material: &Material, file_name: &str) -> Kubernetes {
    let text = read(&deploy_dir().join("kubernetes").join(file_name));
    let documents: Vec<Value> = serde_yaml_ng::Deserializer::from_str(&text)
        .map(|doc| <Value as serde::Deserialize>::deserialize(doc).expect("the manifest is YAML"))
        .collect();
    let passwords = temp_dir("deploy-k8s-nats");
    for (name, value) in COMPOSE_VARIABLES {
        std::fs::write(passwords.path().join(name), value).expect("a password");
    }
    let secrets = kubernetes_secrets(material, passwords.path());
    let config_maps = kubernetes_config_maps();
    let mounted = temp_dir("deploy-k8s-volumes");
    let mut containers = Vec::new();
    let mut nats = Vec::new();
    let mut hosts = vec!["nats".to_owned()];
    let mut services = Vec::new();
    let mut labels_of = BTreeMap::new();
    for doc in &documents {
        let kind = str_of(&doc["kind"], "kind");
        let name = str_of(&doc["metadata"]["name"], "metadata.name").to_owned();
        let what = format!("{file_name} {kind} {name}");
        match kind {
            "Service" => {
                only_keys(
                    &format!("{what} spec"),
                    &doc["spec"],
                    &["selector", "ports", "clusterIP", "publishNotReadyAddresses"],
                );
                let app = str_of(&doc["spec"]["selector"]["app"], &what).to_owned();
                for port in doc["spec"]["ports"].as_sequence().expect("ports") {
                    only_keys(&what, port, &["name", "port"]);
                    let number = port["port"].as_u64().expect("a port number");
                    services.push((format!("{name}:{number}"), app.clone()));
                }
                if !hosts.contains(&name) {
                    hosts.push(name);
                }
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
                let replicas = spec.get("replicas").map_or(1, |r| r.as_u64().expect("a replica count") as usize);
                let claims: Vec<String> = spec
                    .get("volumeClaimTemplates")
                    .and_then(Value::as_sequence)
                    .map(|s| s.iter().map(|c| str_of(&c["metadata"]["name"], &what).to_owned()).collect())
                    .unwrap_or_default();
                let volumes = pod.get("volumes").and_then(Value::as_sequence).cloned().unwrap_or_default();
                // The files a container's mount gives it: a config map's, a
                // secret's (its items), a claim's or nothing yet.
                let mount = |cwhat: &str, dir_name: &str, mount: &Value| -> (String, PathBuf) {
                    only_keys(cwhat, mount, &["name", "mountPath", "readOnly"]);
                    let vname = str_of(&mount["name"], cwhat);
                    let path = str_of(&mount["mountPath"], cwhat).to_owned();
                    let dir = mounted.path().join(dir_name).join(vname);
                    std::fs::create_dir_all(&dir).expect("a volume dir");
                    if let Some(volume) = volumes.iter().find(|v| v["name"].as_str() == Some(vname)) {
                        only_keys(cwhat, volume, &["name", "configMap", "secret"]);
                        if let Some(map) = volume.get("configMap") {
                            let map_name = str_of(&map["name"], cwhat);
                            let files = config_maps
                                .get(map_name)
                                .unwrap_or_else(|| panic!("{cwhat}: config map {map_name}, which no header makes"));
                            for file in files {
                                std::fs::copy(file, dir.join(file.file_name().expect("a name"))).expect("copy");
                            }
                        } else {
                            let secret = &volume["secret"];
                            only_keys(cwhat, secret, &["secretName", "items"]);
                            let keys = secrets
                                .get(str_of(&secret["secretName"], cwhat))
                                .unwrap_or_else(|| panic!("{cwhat}: a secret no header makes"));
                            let items: Vec<(String, String)> = match secret.get("items") {
                                Some(items) => items
                                    .as_sequence()
                                    .expect("items")
                                    .iter()
                                    .map(|i| {
                                        (str_of(&i["key"], cwhat).to_owned(), str_of(&i["path"], cwhat).to_owned())
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
                    (path, dir)
                };
                // An entry of `env`: a value (with `$(VAR)` of the entries
                // before it), a secret's key, or the pod's own name.
                let env_value = |cwhat: &str, entry: &Value, env: &[(String, String)], pod: &str| -> String {
                    only_keys(cwhat, entry, &["name", "value", "valueFrom"]);
                    if let Some(value) = entry.get("value") {
                        return expand(str_of(value, cwhat), env);
                    }
                    let from = &entry["valueFrom"];
                    if let Some(field) = from.get("fieldRef") {
                        assert_eq!(str_of(&field["fieldPath"], cwhat), "metadata.name", "{cwhat}: a fieldRef");
                        return pod.to_owned();
                    }
                    let reference = &from["secretKeyRef"];
                    let secret = &secrets[str_of(&reference["name"], cwhat)];
                    read(&secret[str_of(&reference["key"], cwhat)])
                };
                for c in pod["containers"].as_sequence().expect("containers") {
                    let cname = str_of(&c["name"], &what).to_owned();
                    let cwhat = format!("{what} container {cname}");
                    let image = str_of(&c["image"], &cwhat);
                    if image.starts_with("nats:") {
                        // NATS pods, each with its stable name
                        // (`<set>-<i>.<serviceName>`) and its own volume.
                        only_keys(
                            &cwhat,
                            c,
                            &["name", "image", "args", "ports", "env", "envFrom", "readinessProbe", "volumeMounts"],
                        );
                        assert_eq!(kind, "StatefulSet", "{cwhat}: NATS nodes need stable names");
                        let service = str_of(&spec["serviceName"], &what);
                        let probe = &c["readinessProbe"]["tcpSocket"]["port"];
                        assert_eq!(probe.as_u64(), Some(4222), "{cwhat}: the readiness probe checks the client port");
                        for index in 0..replicas {
                            let pod_name = format!("{name}-{index}");
                            let mut env = Vec::new();
                            for from in c.get("envFrom").and_then(Value::as_sequence).into_iter().flatten() {
                                only_keys(&cwhat, from, &["secretRef"]);
                                let secret = &secrets[str_of(&from["secretRef"]["name"], &cwhat)];
                                env.extend(secret.iter().map(|(k, path)| (k.clone(), read(path))));
                            }
                            for entry in c.get("env").and_then(Value::as_sequence).into_iter().flatten() {
                                let key = str_of(&entry["name"], &cwhat).to_owned();
                                let value = env_value(&cwhat, entry, &env, &pod_name);
                                env.push((key, value));
                            }
                            let command = strings(&c["args"], &cwhat).iter().map(|a| expand(a, &env)).collect();
                            let mounts = c["volumeMounts"]
                                .as_sequence()
                                .expect("volumeMounts")
                                .iter()
                                .map(|m| mount(&cwhat, &pod_name, m))
                                .collect();
                            hosts.push(format!("{pod_name}.{service}"));
                            nats.push(NatsNode {
                                hosts: vec![format!("{pod_name}.{service}")],
                                name: pod_name,
                                command,
                                env,
                                mounts,
                            });
                        }
                        labels_of.insert(name.clone(), app.clone());
                        continue;
                    }
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
                    assert_eq!(image, "battlelog", "{cwhat}: the image deploy/Dockerfile builds");
                    // The kubelet starts an exited container again.
                    let mut container =
                        Container { name: cname.clone(), replicas, restarts: true, ..Container::default() };
                    container.command = strings(&c["command"], &cwhat);
                    // The image's own files, under whatever the pod mounts.
                    container.mounts = image_copies();
                    for port in c.get("ports").and_then(Value::as_sequence).into_iter().flatten() {
                        container.ports.push(port["containerPort"].as_u64().expect("containerPort") as u16);
                    }
                    for entry in c.get("env").and_then(Value::as_sequence).into_iter().flatten() {
                        let key = str_of(&entry["name"], &cwhat).to_owned();
                        let value = env_value(&cwhat, entry, &container.env, &cname);
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
                    for m in c["volumeMounts"].as_sequence().expect("volumeMounts") {
                        container.mounts.push(mount(&cwhat, &cname, m));
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
    Kubernetes { containers, nats, hosts, services, dirs: [passwords, mounted] }
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

/// Checks the Services of `k8s` against the containers they select, and
/// starts the manifest: its NATS pods if it has them (else nats-server as
/// the NATS Helm chart would run it, with deploy/nats/nats.conf and the
/// battlelog-nats secret as its environment), then every container as the
/// kubelet would (in the file's order), its probes passing.
async fn start_kubernetes(label: &str, k8s: Kubernetes, material: &Material) -> Running {
    let mut network = Network::default();
    let nats = if k8s.nats.is_empty() {
        let envs: Vec<(&str, &str)> = COMPOSE_VARIABLES.to_vec();
        let nats = NatsServer::start_with_config(&deploy_dir().join("nats/nats.conf"), &envs);
        network.insert("nats:4222", nats.port());
        Nats::One { _server: nats }
    } else {
        assert!(k8s.services.iter().any(|(address, _)| address == "nats:4222"), "the Service nats reaches the pods");
        start_nats(label, k8s.nats, Some("nats"), &mut network).await
    };
    // A Service's name:port is the container's: the emulation names each
    // container's address by the container name; alias the Services' names.
    let containers = k8s.containers;
    for (address, container) in k8s.services.iter().filter(|(address, _)| !address.starts_with("nats:")) {
        let (service, port) = address.split_once(':').expect("name:port");
        let c = containers.iter().find(|c| &c.name == container).expect("the selected container");
        assert_eq!(service, c.name, "Service {service} is named after its container, as the configs' peer URLs expect");
        // A Service exposes the service port only, never the metrics port.
        let port: u16 = port.parse().expect("a port");
        assert_eq!(port, c.config_listen_port(), "Service {address}: not its container's service port");
    }
    for c in &containers {
        assert!(!c.probes.is_empty(), "{}: a readiness probe", c.name);
        if let Some(metrics) = c.config_port("metrics_listen") {
            assert!(c.ports.contains(&metrics), "{}: declares its metrics port {metrics} as a containerPort", c.name);
        }
    }
    let mut running = start(label, nats, containers, network, &k8s.hosts, &[], material).await;
    // The volumes stay while the pods run: a journal writes new files into
    // its data dir long after it started (its kept signed checkpoint).
    running.mounted.extend(k8s.dirs);
    running
}

/// kubernetes/battlelog.yaml, each Deployment's and StatefulSet's container
/// started as the kubelet would (in the file's order), its readiness and
/// liveness probes passing; the demo plays, and the webhooks receive its
/// events, each checked with the journal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubernetes_manifests_start_as_written_and_the_demo_plays() {
    eprintln!("differences from a pod run: {DIFFERENCES:#?}");
    let material = Material::generate();
    let k8s = kubernetes(&material, "battlelog.yaml");
    let names: Vec<(&str, usize)> = k8s.containers.iter().map(|c| (c.name.as_str(), c.replicas)).collect();
    assert_eq!(
        names,
        [("journal", 1), ("roller", 2), ("resolver", 2), ("web", 2), ("webhooks", 1)],
        "the manifests' containers"
    );
    let running = start_kubernetes("kubernetes", k8s, &material).await;
    running.demo_plays(&material, "resolver", "web").await;
    let scrape = running.webhooks_received_the_demo(&material, "webhooks").await;
    running.every_exported_family_is_declared(vec![scrape]).await;
}

/// kubernetes/battlelog-jetstream.yaml (issue 37): the NATS StatefulSet's
/// three pods, each named by the kubelet and routed to the others by their
/// stable names; two journals on the JetStream backend; the roller, the
/// resolver, the web and the webhooks. The demo plays; the journal's log is
/// a stream of three current replicas, both journals wrote to it, and the
/// webhooks received every event, checked with the journal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubernetes_jetstream_runs_two_journals_on_an_r3_stream_and_the_demo_plays() {
    eprintln!("differences from a pod run: {DIFFERENCES:#?}");
    let material = Material::generate();
    let k8s = kubernetes(&material, "battlelog-jetstream.yaml");
    let nats: Vec<&str> = k8s.nats.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(nats, ["nats-0", "nats-1", "nats-2"], "three NATS pods");
    let names: Vec<(&str, usize)> = k8s.containers.iter().map(|c| (c.name.as_str(), c.replicas)).collect();
    assert_eq!(
        names,
        [("journal", 2), ("roller", 2), ("resolver", 2), ("web", 2), ("webhooks", 1)],
        "two journals and every other service"
    );
    let running = start_kubernetes("k8s-jetstream", k8s, &material).await;
    // Through each resolver replica: each reaches its own journal replica
    // (the Service spreads connections), and both hold the same secrets
    // (battle ids, share links).
    running.demo_plays(&material, "resolver-1", "web").await;
    running.demo_plays(&material, "resolver-2", "web").await;
    running.the_journal_log_is_replicated_and_both_journals_wrote_it(&["journal-1", "journal-2"]).await;
    let scrape = running.webhooks_received_the_demo(&material, "webhooks").await;
    running.every_exported_family_is_declared(vec![scrape]).await;
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
    // Each parsed file is kept: its mounts' directories live as long.
    let composes = ["docker-compose.yml", "docker-compose.jetstream.yml"].map(|f| (f, compose(&material, f)));
    let manifests = ["battlelog.yaml", "battlelog-jetstream.yaml"].map(|f| (f, kubernetes(&material, f)));
    let declared = composes
        .iter()
        .flat_map(|(file, parsed)| parsed.containers.iter().map(move |c| (*file, c)))
        .chain(manifests.iter().flat_map(|(file, parsed)| parsed.containers.iter().map(move |c| (*file, c))));
    for (file, container) in declared {
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
