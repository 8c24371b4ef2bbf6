//! The newcomer's path (issue 5): the real `battlelog up` brings the whole
//! stack up on free ports, `battlelog demo` plays a battle of every ruleset
//! against it, `battlelog export` + `battlelog audit --file` verify each
//! battle the demo names, and SIGTERM / SIGINT stop `up` cleanly — once with
//! no NATS (`--no-nats`) and once with a real `nats-server -js`; and
//! `battlelog watch` shows the demo's events each way it can follow them.

use std::path::Path;
use std::process::Command;

use battlelog_test_support::journal_client;
use battlelog_test_support::stack;
use battlelog_test_support::stack::{
    Up, audit_file_with_key, cli, jetstream_messages, split_trailer, up, up_roller_key,
};
use battlelog_test_support::{NatsServer, STARTUP_DEADLINE, temp_dir};

/// Sends `signal` to `up` and waits (with a deadline) for it to exit;
/// returns its exit status and what it printed after the banner.
fn stop(mut up: Up, signal: &str) -> (std::process::ExitStatus, String) {
    let pid = up.child.id().to_string();
    assert!(Command::new("kill").args([signal, &pid]).status().expect("kill").success());
    let mut printed = Vec::new();
    // The stdout pipe closes when the process exits.
    while let Ok(line) = up.rest.recv_timeout(STARTUP_DEADLINE) {
        printed.push(line);
    }
    let status = up.child.wait().expect("wait for battlelog up");
    (status, printed.join("\n"))
}

/// `battlelog demo` against `up`, then export and audit every battle it
/// names; returns how many events the exports held together.
fn demo_exports_verify(up: &Up, dir: &Path) -> usize {
    // The data dir is where up keeps its development token key: the demo
    // and the exports mint their tokens with it, no token in sight.
    let data = dir.display().to_string();
    let (code, stdout, stderr) = cli(&["demo", "--resolver", &up.resolver, "--data-dir", &data]);
    assert_eq!(code, Some(0), "demo: {stderr}\n{stdout}");
    // The demo's last lines are commands to run as printed:
    // `export <id> --resolver <url> --data-dir <dir>`.
    let exports: Vec<Vec<&str>> = stdout
        .lines()
        .filter_map(|l| l.trim().strip_prefix("battlelog "))
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|words| words.first() == Some(&"export") && words.len() == 6)
        .collect();
    assert_eq!(exports.len(), 4, "one export line per ruleset:\n{stdout}");
    for ruleset in ["pokemon-d6@2", "arcana-2d10@2", "berserk@1", "pbta-2d6@1"] {
        assert!(stdout.contains(ruleset), "the demo plays {ruleset}:\n{stdout}");
    }
    // It shows the posts a forum would paste (README.md's tour), in both
    // languages: the open's, each action's and the close's, as the
    // resolver wrote them (crates/post's plain text).
    for line in [
        "Battle opened: Pikachu vs Meowth",
        "Бой открыт: Pikachu vs Meowth",
        "Ruleset: pokemon-d6@2",
        "Action by pikachu",
        "Действие: pikachu",
        "Dice:",
        "Броски:",
    ] {
        assert!(stdout.lines().any(|l| l.trim() == line), "the demo shows the posts ({line:?} missing):\n{stdout}");
    }
    // The close's post names the credential that closed (the demo's token).
    for start in ["Battle closed by ", "Бой закрыт: ", "Head hash at version ", "Хеш журнала на версии "]
    {
        assert!(stdout.lines().any(|l| l.trim().starts_with(start)), "no {start:?}… line:\n{stdout}");
    }
    // Each battle's page on the web service `up` runs, with its share key.
    let web = up
        .banner
        .iter()
        .find_map(|l| l.trim_start().strip_prefix("web"))
        .map(str::trim)
        .unwrap_or_else(|| panic!("the banner names the web pages: {:?}", up.banner));
    let mut events = 0;
    for words in exports {
        let battle = words[1];
        let page = format!("Page / Страница: {web}/battles/{battle}?k=");
        assert!(stdout.contains(&page), "the demo links {battle}'s page ({page}):\n{stdout}");
        assert_eq!(
            words[2..],
            ["--resolver", up.resolver.as_str(), "--data-dir", data.as_str()],
            "the export line names the resolver and the data dir"
        );
        let (code, export, stderr) = cli(&words);
        assert_eq!(code, Some(0), "export {battle}: {stderr}");
        // Events only: the trailer line (docs/protocol.md §5) is no event.
        events += split_trailer(&export).0.lines().count();
        let file = dir.join(format!("{battle}.jsonl"));
        std::fs::write(&file, &export).expect("write the export");
        let (code, output) = audit_file_with_key(&file, &up_roller_key(dir));
        assert_eq!(code, Some(0), "audit --file {battle}:\n{output}");
        assert!(output.contains(&format!("battle {battle} verifies")), "{output}");
        assert!(!output.contains("await their seed"), "the demo closed the battle, so every roll re-derives: {output}");
    }
    events
}

/// `battlelog up --no-nats`: no fan-out (said so), the demo plays,
/// every export verifies, and SIGTERM stops it with status 0.
#[test]
fn up_demo_export_audit_then_sigterm_without_nats() {
    let dir = temp_dir("newcomer");
    let up = up(dir.path(), &["--no-nats"]);
    assert!(up.banner.iter().any(|l| l.contains("events") && l.contains("in-process")), "{:?}", up.banner);
    let events = demo_exports_verify(&up, dir.path());
    assert!(events > 4 * 3, "the demo's battles hold their events");
    let (status, printed) = stop(up, "-TERM");
    assert!(status.success(), "exits 0 on SIGTERM: {status:?}\n{printed}");
    assert!(printed.contains("battlelog stopped"), "says it stopped: {printed}");
    assert!(dir.path().join("roller").join("master.key").is_file(), "the dev master key lives in the data dir");
}

/// `battlelog up` runs each service through its own `run`, each with its
/// metrics on a loopback port of its own, and prints where under the
/// service's line; each answers with its own `battlelog_build_info`.
#[test]
fn up_prints_where_each_services_metrics_are_and_each_answers() {
    let dir = temp_dir("newcomer-metrics");
    let up = up(dir.path(), &["--no-nats"]);
    let mut urls = Vec::new();
    for service in ["resolver", "web", "roller", "journal"] {
        let at = up.banner.iter().position(|l| l.starts_with(&format!("  {service} "))).expect("its line");
        let url = up.banner[at + 1]
            .trim()
            .strip_prefix("metrics: ")
            .unwrap_or_else(|| panic!("no metrics line under {service}: {:?}", up.banner))
            .to_owned();
        assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/metrics") && !url.contains(":0/"), "{url}");
        urls.push((service, url));
    }
    for (service, url) in &urls {
        let (status, body) = battlelog_test_support::http_get_blocking(url, &[]);
        assert_eq!(status, 200, "{service}: {body}");
        let build =
            format!("battlelog_build_info{{service=\"{service}\",version=\"{}\"}} 1", env!("CARGO_PKG_VERSION"));
        assert!(body.lines().any(|l| l == build), "{service} at {url}: {body}");
    }
    let (status, printed) = stop(up, "-TERM");
    assert!(status.success(), "exits 0 on SIGTERM: {status:?}\n{printed}");
}

/// Every file and directory under `dir`, and whether each is owner-only.
#[cfg(unix)]
fn open_to_others(dir: &Path) -> (usize, Vec<String>) {
    use std::os::unix::fs::PermissionsExt;
    let mut seen = 0;
    let mut open = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).expect("read a dir") {
            let path = entry.expect("an entry").path();
            let mode = std::fs::metadata(&path).expect("metadata").permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                open.push(format!("{} {mode:o}", path.display()));
            }
            if path.is_dir() {
                pending.push(path.clone());
            }
            seen += 1;
        }
    }
    (seen, open)
}

/// Issue 35, finding 6: the standalone `battlelog-journal` and
/// `battlelog-webhooks`, started under umask 022 on data dirs that are
/// there already with mode 0755, make them 0700 and create nothing group
/// or others may read: `up` was fixed, the binaries alone were not.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_standalone_binaries_keep_their_data_dirs_to_their_owner() {
    use std::os::unix::fs::PermissionsExt;
    // What the services are started with in many a shell; the children
    // inherit it.
    let _ = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o022));
    let dir = temp_dir("standalone-modes");
    let mode = |path: &Path| std::fs::metadata(path).expect("metadata").permissions().mode() & 0o777;
    let journal_dir = dir.path().join("journal");
    let webhooks_dir = dir.path().join("webhooks");
    for data in [&journal_dir, &webhooks_dir] {
        std::fs::create_dir(data).expect("a data dir");
        std::fs::set_permissions(data, std::fs::Permissions::from_mode(0o755)).expect("open it to everyone");
    }
    let journal = battlelog_test_support::journal(&journal_dir, None).await;
    let mut client = journal_client::client(&journal).await;
    let opening = journal_client::opened("forum-a", "open");
    journal_client::append(&mut client, "modes", journal_client::no_stream(), vec![opening]).await.expect("an append");
    let mut envs = battlelog_test_support::TestAuth::shared().env("webhooks");
    envs.push(("BATTLELOG_WEBHOOKS_DATA_DIR".to_owned(), webhooks_dir.display().to_string()));
    let args = ["--listen", "127.0.0.1:0"].map(str::to_owned);
    let binary = battlelog_test_support::service_binary("battlelog-webhooks");
    let webhooks =
        battlelog_test_support::ServiceProcess::start_http(&binary, &args, &envs, &dir.path().join("webhooks.log"))
            .await;
    assert!(webhooks.terminate().await, "the webhooks stop");
    assert!(journal.terminate().await, "the journal stops");
    for data in [&journal_dir, &webhooks_dir] {
        assert_eq!(mode(data), 0o700, "{} is made owner-only", data.display());
        let (seen, open) = open_to_others(data);
        assert!(seen > 0, "{} holds the service's files", data.display());
        assert!(open.is_empty(), "open to others: {open:?}");
    }
}

/// `battlelog up`'s data dir holds the battles before their seeds are
/// revealed and the development keys: it is its owner's alone (0700, even
/// when it was there before with looser bits), and so is every file and
/// directory `up` makes in it, the journal's too; the signing key is 0600.
#[cfg(unix)]
#[test]
fn up_keeps_its_data_dir_to_its_owner() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir("newcomer-modes");
    let data = dir.path().join("data");
    std::fs::create_dir(&data).expect("a data dir");
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).expect("open it to everyone");
    let up = up(&data, &["--no-nats"]);
    let (code, stdout, stderr) = cli(&["demo", "--resolver", &up.resolver, "--data-dir", &data.display().to_string()]);
    assert_eq!(code, Some(0), "demo: {stderr}\n{stdout}");
    let (status, printed) = stop(up, "-TERM");
    assert!(status.success(), "{printed}");

    let mode = |path: &Path| std::fs::metadata(path).expect("metadata").permissions().mode() & 0o777;
    assert_eq!(mode(&data), 0o700, "the data dir is made owner-only");
    assert_eq!(mode(&data.join("auth").join("signing-key.pem")), 0o600);
    let mut seen = Vec::new();
    let mut pending = vec![data.clone()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).expect("read a dir") {
            let path = entry.expect("an entry").path();
            // The test's own capture of up's stderr, not up's.
            if path.file_name().is_some_and(|name| name == "up.stderr") {
                continue;
            }
            assert_eq!(mode(&path) & 0o077, 0, "{} is open to others: {:o}", path.display(), mode(&path));
            if path.is_dir() {
                pending.push(path.clone());
            }
            seen.push(path);
        }
    }
    let journal_files = seen.iter().filter(|p| p.starts_with(data.join("journal")) && p.is_file()).count();
    assert!(journal_files > 0, "the journal's files were checked: {seen:?}");
}

/// `battlelog up --nats-url` of a real nats-server: the banner names it,
/// the demo's events all reach JetStream, every export verifies, and
/// SIGINT (Ctrl-C) stops it with status 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn up_with_nats_demo_export_audit_then_sigint() {
    let nats = NatsServer::start();
    let dir = temp_dir("newcomer-nats");
    let up = up(dir.path(), &["--nats-url", &nats.url()]);
    assert!(up.banner.iter().any(|l| l.contains("events") && l.contains(&nats.url())), "{:?}", up.banner);
    let dir_path = dir.path().to_path_buf();
    let (up, events) = tokio::task::spawn_blocking(move || {
        let events = demo_exports_verify(&up, &dir_path);
        (up, events)
    })
    .await
    .expect("demo");
    let messages = jetstream_messages(&nats.url(), events as u64).await;
    assert!(messages.iter().all(|(subject, _, _)| subject.starts_with("battlelog.events.")), "{messages:?}");
    let (status, printed) = tokio::task::spawn_blocking(move || stop(up, "-INT")).await.expect("stop");
    assert!(status.success(), "exits 0 on SIGINT: {status:?}\n{printed}");
    assert!(printed.contains("battlelog stopped"), "says it stopped: {printed}");
}

/// The README's main path: `up` finds a nats-server binary (the harness's,
/// through BATTLELOG_NATS_SERVER), starts it, publishes to it, and stops it.
#[tokio::test]
async fn up_starts_its_own_nats_server_and_stops_it() {
    // `up` looks where the harness looks (BATTLELOG_NATS_SERVER, then PATH):
    // this fails loudly when no nats-server can be found, as every NATS test does.
    battlelog_test_support::nats_server_binary();
    let dir = temp_dir("newcomer-own-nats");
    let data = dir.path().display().to_string();
    let up = up(dir.path(), &[]);
    let events = up.banner.iter().find(|l| l.trim_start().starts_with("events")).expect("an events line").clone();
    assert!(events.contains("started by battlelog up"), "{events}");
    let url = events.split_whitespace().nth(1).expect("the NATS URL").to_owned();
    // The server up started takes logins only: the journal's password is in
    // the config up wrote (owner-only) under the data dir.
    let config_path = Path::new(&data).join("nats").join("nats.conf");
    assert!(events.contains(&config_path.display().to_string()), "the banner says where the users are: {events}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&config_path).expect("the NATS config").permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the NATS config holds passwords: owner only");
    }
    let config = std::fs::read_to_string(&config_path).expect("the NATS config");
    let password = stack::nats_password(&config, "journal");
    assert!(!up.banner.iter().any(|l| l.contains(password)), "the banner shows no password");
    assert!(async_nats::connect(&url).await.is_err(), "no anonymous login to the NATS server up started");
    let journal_url = url.replacen("nats://", &format!("nats://journal:{password}@"), 1);
    let dir_path = dir.path().to_path_buf();
    let (up, exported) = tokio::task::spawn_blocking(move || {
        let exported = demo_exports_verify(&up, &dir_path);
        (up, exported)
    })
    .await
    .expect("demo");
    let messages = jetstream_messages(&journal_url, exported as u64).await;
    assert_eq!(messages.len(), exported, "every exported event reached the NATS server up started");
    assert!(Path::new(&data).join("nats").is_dir(), "NATS stores under the data dir");
    let (status, printed) = tokio::task::spawn_blocking(move || stop(up, "-INT")).await.expect("stop");
    assert!(status.success(), "exits 0 on SIGINT: {status:?}\n{printed}");
    let port: u16 = url.rsplit(':').next().and_then(|p| p.parse().ok()).expect("a port");
    battlelog_test_support::poll_until(
        "the nats-server up started to stop",
        std::time::Duration::from_secs(10),
        || async move { tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err().then_some(()) },
    )
    .await;
}

/// A running `battlelog watch`, read line by line; killed when dropped.
struct Watching {
    process: battlelog_test_support::watch::WatchProcess,
    what: String,
}

impl Watching {
    /// Starts `battlelog watch <args>` and waits for the line on stderr that
    /// says what it watches: from then on it shows every committed event.
    async fn start(args: &[&str]) -> Self {
        let (process, what) = battlelog_test_support::watch::WatchProcess::start(args).await;
        assert!(what.starts_with("watching "), "watch {args:?}: {what}");
        Self { process, what }
    }

    /// The next `n` events it shows.
    async fn events(&mut self, n: usize) -> Vec<String> {
        let mut lines = Vec::with_capacity(n);
        while lines.len() < n {
            let line = self.process.stdout_line().await;
            let line =
                line.unwrap_or_else(|_| panic!("{}: {} of {n} events in time: {lines:#?}", self.what, lines.len()));
            lines.push(line.unwrap_or_else(|| panic!("{}: ended after {lines:#?}", self.what)));
        }
        lines
    }
}

/// Checks `shown` (a watch's lines, any battles interleaved) against the
/// journal's own records of `battles`: each battle's events, every one, in
/// version order, as `<battle> #<version> <event type>: …`, a resolution
/// showing its English summary.
fn assert_shows_in_order(
    what: &str,
    shown: &[String],
    battles: &std::collections::BTreeMap<String, Vec<stack::Journaled>>,
) {
    for (battle_id, events) in battles {
        let lines: Vec<&String> = shown.iter().filter(|l| l.split(' ').next() == Some(battle_id.as_str())).collect();
        assert_eq!(lines.len(), events.len(), "{what}: every event of {battle_id}, once: {lines:#?}");
        for (line, event) in lines.iter().zip(events) {
            let head = format!("{battle_id} #{} {}: ", event.version(), event.record.event_type);
            assert!(line.starts_with(&head), "{what}: {battle_id}@{} in order: {line}", event.version());
            if let battlelog_proto::v1::battle_event::Event::ActionResolved(resolved) = &event.event {
                assert!(line.contains(&resolved.summary_en), "{what}: shows the summary: {line}");
            }
        }
    }
    let known = |line: &&String| battles.keys().any(|b| line.split(' ').next() == Some(b.as_str()));
    assert!(shown.iter().all(|l| known(&l)), "{what}: nothing but the demo's battles: {shown:#?}");
}

/// `battlelog watch` shows every event of the demo's battles, in order,
/// each way it can follow them: NATS (a real nats-server the journal
/// publishes to), `--from-journal` (with a service token) and
/// `--from-resolver --battle` (with a reader's token), against the real
/// services, checked against what the journal holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_shows_every_event_of_the_demo_in_order_from_nats_the_journal_and_the_resolver() {
    let stack = stack::Stack::start("watch-demo", true).await;
    let auth = battlelog_test_support::TestAuth::shared();
    let nats_url = stack.nats_url().expect("NATS");
    let journal_url = stack.journal.url();
    let resolver_url = stack.resolver.url();
    // Never the journal: a NATS that does not work must fail this watch.
    let mut from_nats = Watching::start(&["--nats-url", &nats_url, "--journal", "http://127.0.0.1:9"]).await;
    assert_eq!(
        from_nats.what,
        format!("watching battlelog.events.> and battlelog.journal.> on {nats_url} (Ctrl-C stops)")
    );
    let service_token = auth.service_token();
    let mut from_journal =
        Watching::start(&["--from-journal", "--journal", &journal_url, "--token", &service_token]).await;

    let forum = auth.forum();
    let demo_args = ["demo", "--resolver", resolver_url.as_str(), "--token", forum.as_str()].map(str::to_owned);
    let (code, stdout, stderr) =
        tokio::task::spawn_blocking(move || cli(&demo_args.iter().map(String::as_str).collect::<Vec<_>>()))
            .await
            .expect("demo");
    assert_eq!(code, Some(0), "demo: {stderr}\n{stdout}");
    let mut battles = std::collections::BTreeMap::new();
    // The closing lines `battlelog export <id> --resolver <url>`, one per
    // battle (the indented one above them is a template).
    for line in stdout.lines().filter_map(|l| l.strip_prefix("battlelog export ")) {
        let battle_id = line.split_whitespace().next().expect("a battle id").to_owned();
        let events = stack::journaled(&stack, &battle_id).await;
        battles.insert(battle_id, events);
    }
    assert_eq!(battles.len(), 4, "the demo names one battle per ruleset:\n{stdout}");
    let total = battles.values().map(Vec::len).sum();

    assert_shows_in_order("watch (NATS)", &from_nats.events(total).await, &battles);
    assert_shows_in_order("watch --from-journal", &from_journal.events(total).await, &battles);
    let reader = auth.reader();
    for (battle_id, events) in &battles {
        let args = ["--from-resolver", "--battle", battle_id, "--resolver", &resolver_url, "--token", &reader];
        let mut from_resolver = Watching::start(&args).await;
        let what = format!("watch --from-resolver --battle {battle_id}");
        let one = std::collections::BTreeMap::from([(battle_id.clone(), events.clone())]);
        assert_shows_in_order(&what, &from_resolver.events(events.len()).await, &one);
    }
}
