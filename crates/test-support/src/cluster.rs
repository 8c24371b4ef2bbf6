//! [`NatsCluster`]: three real `nats-server` processes with JetStream,
//! routed to each other on loopback, for the tests of what must survive a
//! node's crash or partition (the journal's JetStream backend).
//!
//! Each node writes every JetStream write to disk before acknowledging it
//! (`sync_interval: always`, as `deploy/nats/cluster/` ships), has its own
//! store directory, and keeps its client, route and monitoring ports for its
//! whole life, so that [`NatsCluster::restart`] brings it back where the
//! other nodes and the clients look for it. What the cluster thinks (who
//! leads the JetStream meta group or a stream, which replicas are current)
//! is read from the nodes' own monitoring endpoints (`/jsz`, `/routez`,
//! `/healthz`), never guessed from timing.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

use crate::{STARTUP_DEADLINE, nats_server_binary, temp_dir};

/// How many nodes a [`NatsCluster`] has: the smallest cluster whose
/// quorum (two) survives one node down.
pub const CLUSTER_NODES: usize = 3;

/// How long one monitoring request may take. A node stopped with SIGSTOP
/// still accepts connections (the kernel does) but never answers: without
/// this bound one question to it would hang the test.
const MONITOR_TIMEOUT: Duration = Duration::from_secs(1);

/// The stream [`NatsCluster::start`] creates (three replicas) and deletes to
/// know that the cluster can place one; never left behind.
pub const PROBE_STREAM: &str = "BATTLELOG_CLUSTER_PROBE";

/// How many times [`NatsCluster::start`] picks fresh route ports when a
/// node could not bind its own (another process took it in between), and
/// how many times [`NatsCluster::restart`] starts a node that hung.
const START_ATTEMPTS: usize = 3;

/// What the helper last did to a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NodeState {
    Running,
    /// SIGSTOP: alive, holding its sockets, answering nothing.
    Stopped,
    /// SIGKILL: gone until [`NatsCluster::restart`].
    Killed,
}

#[derive(Debug)]
struct Node {
    name: String,
    child: Option<Child>,
    state: NodeState,
    /// 0 until the first start has read the port the server picked.
    client_port: u16,
    /// 0 until the first start has read the port the server picked.
    http_port: u16,
    /// Chosen before the first start (every node's routes must name it),
    /// or read from the log for a given config.
    cluster_port: u16,
    /// Where the server runs (its working directory: a relative
    /// `store_dir` is under it) and keeps its config and log.
    dir: PathBuf,
    config: PathBuf,
    /// The config was given ([`NatsCluster::start_with_configs`]), not
    /// written from the ports: written once, never rewritten.
    given_config: bool,
    /// The `store_dir` of a written config.
    store: PathBuf,
    log: PathBuf,
    /// Started as `nats-server <args>` with these environment variables
    /// ([`NatsCluster::start_with_commands`]) instead of `-c <config>`.
    command: Option<NodeCommand>,
}

/// One node's command line as a deployment file gives it (`-c <file> -n
/// <name> --routes …`, its ports moved where the caller wants them), and
/// the environment its config reads (passwords).
#[derive(Debug, Clone)]
pub struct NodeCommand {
    /// The node's `server_name`, as its `-n` says.
    pub name: String,
    pub args: Vec<String>,
    pub envs: Vec<(String, String)>,
}

/// Three `nats-server -c <node.conf>` processes forming one JetStream
/// cluster on loopback. Every process is killed when this is dropped.
#[derive(Debug)]
pub struct NatsCluster {
    dir: TempDir,
    nodes: Vec<Node>,
    /// Whether [`Self::wait_formed`] places a probe stream: only where it
    /// may log in without a password (the configs this helper writes).
    probe: bool,
}

impl NatsCluster {
    /// Starts three nodes with JetStream (file storage, `sync_interval:
    /// always`) on free loopback ports, routed to each other, and returns
    /// once every node answers `/healthz`, all three agree on a JetStream
    /// meta leader of a three-node meta group, and a stream with three
    /// replicas can be placed (it creates and deletes [`PROBE_STREAM`]).
    /// `label` names the temp directory (stores, configs, logs). Panics
    /// with the nodes' logs after [`STARTUP_DEADLINE`].
    pub async fn start(label: &str) -> Self {
        Self::start_attempts(label, Self::spawn_all).await
    }

    /// Up to [`START_ATTEMPTS`] times: `spawn` starts the three nodes of an
    /// attempt; a node that fails to start (a port taken between pick and
    /// bind) ends the attempt, its nodes killed, and the next one goes
    /// again. Returns once a started cluster has formed.
    async fn start_attempts(label: &str, spawn: impl FnMut(&mut Self, usize) -> Result<(), String>) -> Self {
        Self::start_attempts_probing(label, true, spawn).await
    }

    async fn start_attempts_probing(
        label: &str,
        probe: bool,
        mut spawn: impl FnMut(&mut Self, usize) -> Result<(), String>,
    ) -> Self {
        let mut cluster = Self { dir: temp_dir(&format!("nats-cluster-{label}")), nodes: Vec::new(), probe };
        let mut failures = Vec::new();
        for attempt in 1..=START_ATTEMPTS {
            match spawn(&mut cluster, attempt) {
                Ok(()) => {
                    cluster.wait_formed().await;
                    return cluster;
                }
                Err(why) => {
                    for node in &mut cluster.nodes {
                        kill_child(node);
                    }
                    cluster.nodes.clear();
                    failures.push(why);
                }
            }
        }
        panic!("the NATS cluster did not start in {START_ATTEMPTS} attempts:\n{}", failures.join("\n\n"));
    }

    /// Starts the three nodes of start attempt `attempt`, each in its own
    /// directory under `attempt-<n>/` (a failed attempt's stores never leak
    /// into the next).
    fn spawn_all(&mut self, attempt: usize) -> Result<(), String> {
        // Route ports are picked here (every node's config lists all three)
        // by binding port 0 and letting go just before the servers bind
        // them; a port taken in between fails that node's start, and
        // `start` tries again with fresh ports. Client and monitoring ports
        // need no such race: each server picks its own (-1) and logs it.
        let cluster_ports = free_ports(CLUSTER_NODES);
        for (index, cluster_port) in cluster_ports.iter().enumerate() {
            let name = format!("node-{}", char::from(b'a' + index as u8));
            let node_dir = self.dir.path().join(format!("attempt-{attempt}")).join(&name);
            std::fs::create_dir_all(&node_dir).map_err(|e| format!("create {}: {e}", node_dir.display()))?;
            self.nodes.push(Node {
                name,
                child: None,
                state: NodeState::Killed,
                client_port: 0,
                http_port: 0,
                cluster_port: *cluster_port,
                config: node_dir.join("node.conf"),
                given_config: false,
                store: node_dir.join("store"),
                log: node_dir.join("nats.log"),
                dir: node_dir,
                command: None,
            });
        }
        for index in 0..CLUSTER_NODES {
            if let Err(why) = self.spawn(index) {
                return Err(format!("{why}\n{}", self.logs()));
            }
        }
        Ok(())
    }

    /// The config of node `index`: its ports (0 = let the server pick, on
    /// the first start), messages up to 8 MB (as `deploy/nats/cluster/`: one
    /// append of the journal's JetStream backend is one message), its store
    /// and routes to every node, itself
    /// included (a server ignores its own route, and JetStream's clustering
    /// wants the configured routes to count the whole cluster).
    fn config(&self, index: usize) -> String {
        let node = &self.nodes[index];
        let port = |p: u16| if p == 0 { "-1".to_owned() } else { p.to_string() };
        let routes: Vec<String> =
            self.nodes.iter().map(|n| format!("    nats-route://127.0.0.1:{}", n.cluster_port)).collect();
        format!(
            "server_name: {name}\nhost: 127.0.0.1\nport: {client}\nhttp_port: {http}\nmax_payload: 8MB\n\
             jetstream {{\n  store_dir: {store:?}\n  sync_interval: always\n}}\n\
             cluster {{\n  name: battlelog-test\n  listen: \"127.0.0.1:{cluster}\"\n  routes: [\n{routes}\n  ]\n}}\n",
            name = node.name,
            client = port(node.client_port),
            http = port(node.http_port),
            store = node.store.display().to_string(),
            cluster = node.cluster_port,
            routes = routes.join("\n"),
        )
    }

    /// Starts three nodes from the configs `configs` makes, e.g. the shipped
    /// `deploy/nats/cluster/node-*.conf` with their ports rewritten to free
    /// ones, and waits as [`Self::start`] does. Each must set `server_name`
    /// (that is how the nodes are told apart), and each server runs in a
    /// directory of its own, where a relative `store_dir` lands. Restarts
    /// reuse the same config. The ports are the caller's: a port taken
    /// between the caller's pick and the server's bind fails that start, and
    /// `configs` is asked again (fresh ports), up to three
    /// times, each attempt in directories of its own.
    pub async fn start_with_configs(label: &str, mut configs: impl FnMut() -> [String; CLUSTER_NODES]) -> Self {
        Self::start_attempts(label, |cluster, attempt| cluster.spawn_configs(attempt, configs())).await
    }

    /// Starts three nodes from the command lines `commands` makes, as a
    /// deployment file runs them (`-c <its config> -n <name> --routes …`,
    /// with the ports moved to free ones and every config file where its
    /// includes find theirs), each with the environment its config reads,
    /// and waits until every node is healthy and all three agree on a
    /// JetStream meta leader. No probe stream is placed: the deployment's
    /// users are the services', none of which may create one (its clients
    /// must retry a first "no suitable peers for placement", see
    /// [`Self::start`]). `commands` is asked again, for fresh ports, when a
    /// node cannot bind its own, up to three times.
    pub async fn start_with_commands(label: &str, mut commands: impl FnMut() -> [NodeCommand; CLUSTER_NODES]) -> Self {
        Self::start_attempts_probing(label, false, |cluster, attempt| cluster.spawn_commands(attempt, commands())).await
    }

    /// Starts the three nodes of start attempt `attempt` from `commands`,
    /// each in `attempt-<n>/<name>/`.
    fn spawn_commands(&mut self, attempt: usize, commands: [NodeCommand; CLUSTER_NODES]) -> Result<(), String> {
        for command in commands {
            let node_dir = self.dir.path().join(format!("attempt-{attempt}")).join(&command.name);
            std::fs::create_dir_all(&node_dir).map_err(|e| format!("create {}: {e}", node_dir.display()))?;
            self.nodes.push(Node {
                name: command.name.clone(),
                child: None,
                state: NodeState::Killed,
                client_port: 0,
                http_port: 0,
                cluster_port: 0,
                config: PathBuf::new(),
                given_config: true,
                store: node_dir.join("store"),
                log: node_dir.join("nats.log"),
                dir: node_dir,
                command: Some(command),
            });
        }
        for index in 0..CLUSTER_NODES {
            if let Err(why) = self.spawn(index) {
                return Err(format!("{why}\n{}", self.logs()));
            }
        }
        Ok(())
    }

    /// Starts the three nodes of start attempt `attempt` from `configs`,
    /// each in `attempt-<n>/<server_name>/`.
    fn spawn_configs(&mut self, attempt: usize, configs: [String; CLUSTER_NODES]) -> Result<(), String> {
        for config in configs {
            let name = config
                .lines()
                .find_map(|line| line.trim().strip_prefix("server_name:"))
                .map(|name| name.trim().trim_matches('"').to_owned())
                .unwrap_or_else(|| panic!("a config without server_name:\n{config}"));
            let node_dir = self.dir.path().join(format!("attempt-{attempt}")).join(&name);
            std::fs::create_dir_all(&node_dir).map_err(|e| format!("create {}: {e}", node_dir.display()))?;
            let config_path = node_dir.join("node.conf");
            std::fs::write(&config_path, config).map_err(|e| format!("write {}: {e}", config_path.display()))?;
            self.nodes.push(Node {
                name,
                child: None,
                state: NodeState::Killed,
                client_port: 0,
                http_port: 0,
                cluster_port: 0,
                config: config_path,
                given_config: true,
                store: node_dir.join("store"),
                log: node_dir.join("nats.log"),
                dir: node_dir,
                command: None,
            });
        }
        for index in 0..CLUSTER_NODES {
            if let Err(why) = self.spawn(index) {
                return Err(format!("{why}\n{}", self.logs()));
            }
        }
        Ok(())
    }

    /// Starts node `index` and waits until it is ready and listens for
    /// routes (which it logs after "Server is ready": a route port it
    /// cannot bind ends the process only then).
    fn spawn(&mut self, index: usize) -> Result<(), String> {
        if !self.nodes[index].given_config {
            let config = self.config(index);
            let path = &self.nodes[index].config;
            std::fs::write(path, config).map_err(|e| format!("write {}: {e}", path.display()))?;
        }
        let node = &mut self.nodes[index];
        // The log file is appended to across restarts: this start's lines
        // begin here.
        let log_start = std::fs::metadata(&node.log).map_or(0, |m| m.len() as usize);
        let binary = nats_server_binary();
        let mut command = Command::new(&binary);
        command.current_dir(&node.dir);
        match &node.command {
            Some(given) => command.args(&given.args).envs(given.envs.iter().map(|(k, v)| (k, v))),
            None => command.arg("-c").arg(&node.config),
        };
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
        let stderr = child.stderr.take().expect("piped stderr");
        node.child = Some(child);
        node.state = NodeState::Running;
        let rx = read_ports(stderr, node.log.clone());
        match rx.recv_timeout(STARTUP_DEADLINE) {
            Ok(Some((client, http, cluster))) => {
                node.client_port = client;
                node.http_port = http;
                node.cluster_port = cluster;
                Ok(())
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // Alive but not ready: ask Go for every goroutine's stack
                // (SIGQUIT prints them and exits), so the log says where
                // the server was stuck, then wait for the reader to see the
                // end of its output.
                let pid = node.child.as_ref().map(Child::id);
                if let Some(pid) = pid {
                    let _ = Command::new("kill").args(["-QUIT", &pid.to_string()]).status();
                }
                // Until the reader's end of output (`None`): a "ready" that
                // comes in meanwhile must not cut the dump short.
                let dumped = Instant::now() + Duration::from_secs(5);
                while let Some(left) = dumped.checked_duration_since(Instant::now()) {
                    if matches!(rx.recv_timeout(left), Ok(None) | Err(_)) {
                        break;
                    }
                }
                kill_child(node);
                let log = std::fs::read(&node.log).unwrap_or_default();
                let this_start = String::from_utf8_lossy(log.get(log_start..).unwrap_or_default());
                Err(format!(
                    "nats-server {} did not become ready in {STARTUP_DEADLINE:?}; where it was:\n{}",
                    node.name,
                    main_goroutine(&this_start)
                ))
            }
            other => {
                kill_child(node);
                Err(format!("nats-server {} did not become ready ({other:?})", node.name))
            }
        }
    }

    /// Waits until every node is healthy, all agree on a meta leader with
    /// both other nodes current in its meta group, and the meta leader can
    /// place a stream on all three. That last step is not visible on the
    /// monitoring endpoints: the leader places only on peers whose
    /// configuration and statistics it has received (their periodic
    /// server updates), which may follow the meta group's forming by a
    /// moment, and until then a three-replica stream is refused with "no
    /// suitable peers for placement, peer offline". So it is tried: a probe
    /// stream ([`PROBE_STREAM`]) is created with three replicas and deleted.
    async fn wait_formed(&self) {
        let start = Instant::now();
        let overdue = || {
            if start.elapsed() > STARTUP_DEADLINE {
                panic!("the NATS cluster did not form in {STARTUP_DEADLINE:?}:\n{}", self.logs());
            }
        };
        while !self.formed().await {
            overdue();
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if !self.probe {
            return;
        }
        let client = loop {
            match async_nats::connect(self.client_urls().as_slice()).await {
                Ok(client) => break client,
                Err(_) => overdue(),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let js = async_nats::jetstream::new(client);
        let probe = async_nats::jetstream::stream::Config {
            name: PROBE_STREAM.to_owned(),
            subjects: vec![format!("{PROBE_STREAM}.probe")],
            storage: async_nats::jetstream::stream::StorageType::File,
            num_replicas: CLUSTER_NODES,
            ..Default::default()
        };
        loop {
            let Err(error) = js.create_stream(probe.clone()).await else { break };
            if start.elapsed() > STARTUP_DEADLINE {
                panic!("the NATS cluster cannot place a {CLUSTER_NODES}-replica stream: {error}\n{}", self.logs());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        js.delete_stream(PROBE_STREAM).await.expect("delete the placement probe stream");
    }

    async fn formed(&self) -> bool {
        for index in 0..CLUSTER_NODES {
            if !self.healthy(index).await {
                return false;
            }
        }
        let Some(leader) = self.meta_leader().await else { return false };
        let Some(jsz) = self.monitor(leader, "/jsz").await else { return false };
        let meta = &jsz["meta_cluster"];
        let current = meta["replicas"].as_array().map_or(0, |r| r.iter().filter(|p| p["current"] == true).count());
        meta["cluster_size"] == CLUSTER_NODES && current == CLUSTER_NODES - 1
    }

    /// Every node's client URL (`nats://127.0.0.1:<port>`), in node order:
    /// what `async_nats::connect(urls.as_slice())` takes to know them all
    /// (async-nats 0.51 reads a single string as one address, so it does
    /// not split a comma-joined one).
    pub fn client_urls(&self) -> Vec<String> {
        (0..CLUSTER_NODES).map(|i| self.client_url(i)).collect()
    }

    /// [`Self::client_urls`] joined with commas, as a `--nats-url URL,URL,URL`
    /// flag takes them.
    pub fn client_urls_joined(&self) -> String {
        self.client_urls().join(",")
    }

    /// The client URL of node `index` alone.
    pub fn client_url(&self, index: usize) -> String {
        format!("nats://127.0.0.1:{}", self.nodes[index].client_port)
    }

    /// The `server_name` of node `index` (`node-a`, `node-b`, `node-c`), as
    /// the monitoring endpoints and `ServerInfo::server_name` name it.
    pub fn node_name(&self, index: usize) -> &str {
        &self.nodes[index].name
    }

    /// The index of the node named `name`.
    pub fn node_index(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }

    /// `http://127.0.0.1:<port>` of node `index`'s monitoring endpoints.
    pub fn monitor_url(&self, index: usize) -> String {
        format!("http://127.0.0.1:{}", self.nodes[index].http_port)
    }

    /// The OS process id of node `index`, unless it is killed.
    pub fn pid(&self, index: usize) -> Option<u32> {
        self.nodes[index].child.as_ref().map(Child::id)
    }

    /// Node `index`'s log so far (for assertion messages).
    pub fn log(&self, index: usize) -> String {
        std::fs::read_to_string(&self.nodes[index].log).unwrap_or_default()
    }

    /// Every node's log, headed by its name.
    pub fn logs(&self) -> String {
        (0..self.nodes.len()).map(|i| format!("--- {} ---\n{}", self.nodes[i].name, self.log(i))).collect()
    }

    /// `GET <monitor_url><path>` on node `index` as JSON, or `None` when the
    /// node is killed or stopped, does not answer within a second, or
    /// answers other than 200 with JSON.
    pub async fn monitor(&self, index: usize, path: &str) -> Option<Value> {
        if self.nodes[index].state != NodeState::Running {
            return None;
        }
        let (status, body) = get(&format!("{}{path}", self.monitor_url(index))).await?;
        if status != 200 {
            return None;
        }
        serde_json::from_str(&body).ok()
    }

    /// Whether node `index` answers `/healthz` with 200: it is running,
    /// JetStream is enabled, it is current with the meta leader and every
    /// stream and consumer it hosts is current.
    pub async fn healthy(&self, index: usize) -> bool {
        self.monitor(index, "/healthz").await.is_some_and(|v| v["status"] == "ok")
    }

    /// The node that leads the JetStream meta group, by the same rule as
    /// [`Self::stream_leader`].
    pub async fn meta_leader(&self) -> Option<usize> {
        let mut claims = [None; CLUSTER_NODES];
        for (index, claim) in claims.iter_mut().enumerate() {
            if let Some(jsz) = self.monitor(index, "/jsz").await {
                *claim = jsz["meta_cluster"]["leader"].as_str().and_then(|name| self.node_index(name));
            }
        }
        agreed_leader(&claims)
    }

    /// The node that leads stream `stream`: the one that names itself its
    /// leader in its own `/jsz?streams=true` (`cluster.leader`) and that a
    /// quorum of the nodes (two of three, itself included) name too. `None`
    /// while there is no such node: during an election, or while a deposed
    /// leader and the new one both answer. Killed and stopped nodes are not
    /// asked.
    pub async fn stream_leader(&self, stream: &str) -> Option<usize> {
        let mut claims = [None; CLUSTER_NODES];
        for (index, claim) in claims.iter_mut().enumerate() {
            if let Some(detail) = self.stream_detail(index, stream).await {
                *claim = detail["cluster"]["leader"].as_str().and_then(|name| self.node_index(name));
            }
        }
        agreed_leader(&claims)
    }

    /// How many of the stream's replicas are current, its leader included,
    /// as its leader (by [`Self::stream_leader`]) reports them: 3 once a
    /// restarted node has caught up, 2 while one is down or behind. `None`
    /// without a leader. (Only the leader tracks its followers: a follower
    /// reports the others as not current.)
    pub async fn stream_current_replicas(&self, stream: &str) -> Option<usize> {
        let leader = self.stream_leader(stream).await?;
        let detail = self.stream_detail(leader, stream).await?;
        let followers = detail["cluster"]["replicas"].as_array()?;
        Some(1 + followers.iter().filter(|r| r["current"] == true).count())
    }

    /// `stream`'s entry in node `index`'s `/jsz?streams=true`
    /// (`account_details[].stream_detail[]`, any account): its `cluster`
    /// (`leader`, `replicas[].{name,current}`) and `state`.
    pub async fn stream_detail(&self, index: usize, stream: &str) -> Option<Value> {
        let jsz = self.monitor(index, "/jsz?streams=true").await?;
        jsz["account_details"]
            .as_array()?
            .iter()
            .filter_map(|account| account["stream_detail"].as_array())
            .flatten()
            .find(|detail| detail["name"] == stream)
            .cloned()
    }

    /// SIGKILL node `index` (no shutdown code runs), waiting for it to exit
    /// so that its ports are free; its store stays for [`Self::restart`].
    pub fn kill(&mut self, index: usize) {
        kill_child(&mut self.nodes[index]);
    }

    /// SIGSTOP node `index`, then waits until every thread of it is
    /// stopped: it keeps its sockets but answers nothing, as a node cut off
    /// by a partition (or frozen) looks to the others. `kill` returns once
    /// the signal is queued; on a loaded machine the node went on answering
    /// for a moment after it (a CI run saw "a stopped node" answer).
    pub async fn stop(&mut self, index: usize) {
        self.signal(index, "-STOP");
        self.nodes[index].state = NodeState::Stopped;
        let pid = self.pid(index).unwrap_or_else(|| panic!("{} is not running", self.nodes[index].name));
        crate::poll_until(
            &format!("every thread of {} stopped", self.nodes[index].name),
            STARTUP_DEADLINE,
            || async move { crate::all_threads_stopped(pid).then_some(()) },
        )
        .await;
    }

    /// SIGCONT node `index` after [`Self::stop`].
    pub fn cont(&mut self, index: usize) {
        self.signal(index, "-CONT");
        self.nodes[index].state = NodeState::Running;
    }

    fn signal(&self, index: usize, signal: &str) {
        let pid = self.pid(index).unwrap_or_else(|| panic!("{} is not running", self.nodes[index].name));
        // `kill(1)`: the workspace forbids the unsafe code a libc call needs.
        let sent = Command::new("kill").args([signal, &pid.to_string()]).status().is_ok_and(|s| s.success());
        assert!(sent, "could not send {signal} to {} (pid {pid})", self.nodes[index].name);
    }

    /// Starts node `index` again (killing it first if it runs) with the same
    /// ports, store and routes, and waits until it is ready and has routes
    /// to every other running node: it has rejoined the cluster. Its
    /// streams catch up after that; [`Self::stream_current_replicas`] and
    /// [`Self::healthy`] say when.
    pub async fn restart(&mut self, index: usize) {
        kill_child(&mut self.nodes[index]);
        // A start that hangs is retried as a supervisor would retry it (a
        // nats-server restarted after SIGKILL was once seen never to get
        // ready in CI); each failure is printed, with where it hung.
        let mut failures = Vec::new();
        while let Err(why) = self.spawn(index) {
            eprintln!("restarting {}: {why}", self.nodes[index].name);
            failures.push(why);
            if failures.len() == START_ATTEMPTS {
                panic!("{}\n{}", failures.join("\n\n"), self.logs());
            }
        }
        let start = Instant::now();
        loop {
            if self.routed_to_running(index).await {
                return;
            }
            if start.elapsed() > STARTUP_DEADLINE {
                panic!("{} did not rejoin in {STARTUP_DEADLINE:?}:\n{}", self.nodes[index].name, self.logs());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Whether node `index` has a route to every other running node.
    async fn routed_to_running(&self, index: usize) -> bool {
        let Some(routez) = self.monitor(index, "/routez").await else { return false };
        let remotes: Vec<&str> = routez["routes"]
            .as_array()
            .map(|routes| routes.iter().filter_map(|r| r["remote_name"].as_str()).collect())
            .unwrap_or_default();
        self.nodes
            .iter()
            .enumerate()
            .filter(|(other, node)| *other != index && node.state == NodeState::Running)
            .all(|(_, node)| remotes.contains(&node.name.as_str()))
    }
}

impl Drop for NatsCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            kill_child(node);
        }
    }
}

/// The stack of goroutine 1 (the one that starts the server) from a Go
/// SIGQUIT dump in `log`, or the log's last lines if it holds none.
fn main_goroutine(log: &str) -> String {
    match log.find("goroutine 1 [") {
        Some(start) => log[start..].split("\n\n").next().unwrap_or_default().to_owned(),
        None => {
            let lines: Vec<&str> = log.lines().collect();
            lines[lines.len().saturating_sub(40)..].join("\n")
        }
    }
}

/// Copies a starting node's stderr to its log and sends its (client,
/// monitoring, route) ports once it is ready and listens for routes, or
/// `None` when its output ends first.
fn read_ports(stderr: std::process::ChildStderr, log: PathBuf) -> mpsc::Receiver<Option<(u16, u16, u16)>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&log).ok();
        let (mut client, mut http) = (None, None);
        let mut ready = false;
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(f) = file.as_mut() {
                use std::io::Write;
                let _ = writeln!(f, "{line}");
            }
            let port_after = |marker: &str| {
                line.split(marker).nth(1).and_then(|rest| rest.trim().rsplit(':').next()?.parse::<u16>().ok())
            };
            client = client.or_else(|| port_after("Listening for client connections on "));
            http = http.or_else(|| port_after("Starting http monitor on "));
            ready |= line.contains("Server is ready");
            if ready && let Some(cluster) = port_after("Listening for route connections on ") {
                let _ = tx.send(client.zip(http).map(|(client, http)| (client, http, cluster)));
            }
        }
        let _ = tx.send(None);
    });
    rx
}

/// SIGKILL (which also ends a stopped process) and wait.
fn kill_child(node: &mut Node) {
    if let Some(mut child) = node.child.take() {
        let _ = child.kill();
        let _ = child.wait();
    }
    node.state = NodeState::Killed;
}

/// The node that claims the leadership itself and that a quorum names.
fn agreed_leader(claims: &[Option<usize>; CLUSTER_NODES]) -> Option<usize> {
    (0..CLUSTER_NODES).find(|&candidate| {
        claims[candidate] == Some(candidate)
            && claims.iter().filter(|c| **c == Some(candidate)).count() > CLUSTER_NODES / 2
    })
}

/// `count` distinct free loopback ports, held together while picked so
/// none is handed out twice, then released for the caller to bind: for
/// configs that must name their ports before any server runs (routes, a
/// deploy file's peers). They are picked below the kernel's ephemeral range
/// (`ip_local_port_range`), from a random place: a port from that range
/// (port 0's) is soon taken again by any outgoing connection or another
/// test's listener, which failed a deploy run under load ("Address already
/// in use"); below it only another test picking the same way could take
/// one in between. Prefer letting a server pick its own (port -1) wherever
/// nothing else must know it first.
pub fn free_ports(count: usize) -> Vec<u16> {
    /// Where the picked ports start: above the well-known and the usual
    /// fixed service ports.
    const LOWEST: u16 = 10_000;
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(0);
    let span = ephemeral_low.saturating_sub(LOWEST);
    if usize::from(span) < count * 64 {
        // No room below the ephemeral range (or no /proc): the kernel's pick.
        let listeners: Vec<TcpListener> =
            (0..count).map(|_| TcpListener::bind("127.0.0.1:0").expect("bind a loopback port")).collect();
        return listeners.iter().map(|l| l.local_addr().expect("a bound address").port()).collect();
    }
    use std::hash::{BuildHasher, Hasher};
    // A random start without a dependency: std's hasher keys are random.
    let start = std::collections::hash_map::RandomState::new().build_hasher().finish() % u64::from(span);
    let mut held = Vec::with_capacity(count);
    for offset in 0..u64::from(span) {
        let port = LOWEST + ((start + offset) % u64::from(span)) as u16;
        if let Ok(listener) = TcpListener::bind(("127.0.0.1", port)) {
            held.push(listener);
            if held.len() == count {
                break;
            }
        }
    }
    assert_eq!(held.len(), count, "{count} free loopback ports below {ephemeral_low}");
    held.iter().map(|l| l.local_addr().expect("a bound address").port()).collect()
}

/// A plain HTTP GET on loopback with [`MONITOR_TIMEOUT`]: (status, body),
/// or `None` when it fails or times out.
async fn get(url: &str) -> Option<(u16, String)> {
    use http_body_util::BodyExt;
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Empty<tonic::codegen::Bytes>>();
    let uri: tonic::codegen::http::Uri = url.parse().ok()?;
    let request = async {
        let response = client.get(uri).await.ok()?;
        let status = response.status().as_u16();
        let body = response.into_body().collect().await.ok()?.to_bytes();
        Some((status, String::from_utf8_lossy(&body).into_owned()))
    };
    tokio::time::timeout(MONITOR_TIMEOUT, request).await.ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::{agreed_leader, main_goroutine};

    #[test]
    fn a_hung_start_is_told_by_the_stack_of_goroutine_1() {
        let dump = "[1] [INF] Starting JetStream\nSIGQUIT: quit\n\ngoroutine 7 [select]:\nmain.other()\n\n\
                    goroutine 1 [chan receive]:\nserver.(*Server).Start()\n\tserver.go:1\n\ngoroutine 9 [IO wait]:\n";
        assert_eq!(main_goroutine(dump), "goroutine 1 [chan receive]:\nserver.(*Server).Start()\n\tserver.go:1");
        // No dump (the process ended some other way): the log's tail.
        let log: String = (0..50).map(|i| format!("line {i}\n")).collect();
        let tail = main_goroutine(&log);
        assert!(tail.starts_with("line 10\n") && tail.ends_with("line 49"), "{tail}");
    }

    #[test]
    fn a_leader_names_itself_and_a_quorum_names_it() {
        assert_eq!(agreed_leader(&[Some(1), Some(1), None]), Some(1));
        assert_eq!(agreed_leader(&[Some(2), Some(2), Some(2)]), Some(2));
        // A deposed leader still naming itself, outvoted.
        assert_eq!(agreed_leader(&[Some(0), Some(1), Some(1)]), Some(1));
        // Named by two, but it does not say so itself (it is electing).
        assert_eq!(agreed_leader(&[Some(2), Some(2), None]), None);
        // Each names itself: no quorum.
        assert_eq!(agreed_leader(&[Some(0), Some(1), None]), None);
        assert_eq!(agreed_leader(&[None, None, None]), None);
    }
}
