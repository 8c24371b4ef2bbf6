//! What a running `battlelog up` tells the other commands through its data
//! dir (issue 20's papercuts): the commands find an `up` listening on
//! ports other than the defaults with no endpoint flag, and a second `up` on
//! a data dir already in use is refused in one line, exiting non-zero,
//! before it binds or opens anything; a killed `up` leaves the data dir
//! free.

use std::process::Command;

use battlelog_test_support::stack;
use battlelog_test_support::temp_dir;

/// The command line without any endpoint from the environment, so that
/// only the data dir can tell the command where the stack is.
fn battlelog() -> Command {
    let mut command = Command::new(battlelog_test_support::cli_binary());
    for var in ["BATTLELOG_RESOLVER_URL", "BATTLELOG_JOURNAL_URL", "BATTLELOG_NATS_URL", "BATTLELOG_TOKEN"] {
        command.env_remove(var);
    }
    command
}

#[test]
fn commands_find_an_up_on_other_ports_through_its_data_dir() {
    let dir = temp_dir("up-endpoints");
    let up = stack::up(dir.path(), &["--no-nats"]);
    assert_ne!(up.resolver, "http://127.0.0.1:50051", "port 0 gave another port");
    let data = dir.path().display().to_string();

    let demo = battlelog().args(["demo", "--data-dir", &data]).output().expect("run battlelog demo");
    let stdout = String::from_utf8_lossy(&demo.stdout);
    assert_eq!(demo.status.code(), Some(0), "demo: {}", String::from_utf8_lossy(&demo.stderr));
    // The lines it suggests work as pasted: no --resolver needed.
    let export_line = stdout.lines().rfind(|l| l.starts_with("battlelog export ")).expect("an export line");
    assert!(!export_line.contains("--resolver"), "{export_line}");
    let battle = export_line.split_whitespace().nth(2).expect("a battle id");

    let export = battlelog().args(["export", battle, "--data-dir", &data]).output().expect("run battlelog export");
    assert_eq!(export.status.code(), Some(0), "export: {}", String::from_utf8_lossy(&export.stderr));
    let lines = String::from_utf8_lossy(&export.stdout).lines().count();
    assert!(lines > 1, "the battle's records, one a line: {lines}");
}

#[test]
fn a_second_up_on_a_data_dir_in_use_says_so_in_one_line() {
    let dir = temp_dir("up-twice");
    let first = stack::up(dir.path(), &["--no-nats"]);
    let data = dir.path().display().to_string();
    let second = battlelog()
        .args(["up", "--data-dir", &data, "--no-nats"])
        .args(["--resolver-listen", "127.0.0.1:0", "--roller-listen", "127.0.0.1:0"])
        .args(["--journal-listen", "127.0.0.1:0", "--web-listen", "127.0.0.1:0"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run a second battlelog up");
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr:?}");
    let pid = first.child.id();
    assert_eq!(
        stderr.trim_end(),
        format!(
            "battlelog: the data dir {data} is in use by another `battlelog up` (process {pid}): stop it, or pass \
             another --data-dir"
        )
    );
    assert!(String::from_utf8_lossy(&second.stdout).is_empty(), "no banner");
    // The first goes on serving.
    let demo = battlelog().args(["demo", "--data-dir", &data]).output().expect("run battlelog demo");
    assert_eq!(demo.status.code(), Some(0), "{}", String::from_utf8_lossy(&demo.stderr));
    // Killed (SIGKILL), it leaves its lock to the OS: the next `up` starts.
    let mut first = first;
    first.child.kill().expect("SIGKILL the first up");
    first.child.wait().expect("reap it");
    drop(first);
    let next = stack::up(dir.path(), &["--no-nats"]);
    assert_ne!(next.child.id(), pid);
}

/// `battlelog up --data-dir <a fresh dir> FLAGS`, which must refuse before
/// anything starts: a non-zero exit, one line on stderr (returned), no data
/// dir made.
fn up_refused(label: &str, flags: &[&str]) -> String {
    let dir = temp_dir(label);
    let data = dir.path().join("data");
    let refused = battlelog()
        .args(["up", "--data-dir", &data.display().to_string()])
        .args(flags)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run battlelog up");
    let stderr = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert_ne!(refused.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr:?}");
    assert!(!data.exists(), "nothing was made");
    stderr
}

/// `--webhook` takes an http:// or https:// URL, checked before anything
/// starts: one line naming the flag, a non-zero exit, no data dir made.
#[test]
fn up_refuses_a_webhook_that_is_not_an_http_url() {
    let stderr = up_refused("up-webhook-url", &["--webhook", "ftp://forum.example/hook"]);
    assert!(stderr.contains("--webhook \"ftp://forum.example/hook\" must be an http:// or https:// URL"), "{stderr}");
}

/// `--otlp-endpoint` is checked as the services' `otlp_endpoint` is, before
/// anything starts: one line naming the key, a non-zero exit, no data dir.
#[test]
fn up_refuses_an_otlp_endpoint_that_is_not_an_http_url() {
    let stderr = up_refused("up-otlp-url", &["--otlp-endpoint", "collector:4317"]);
    assert!(stderr.contains("otlp_endpoint") && stderr.contains("collector:4317"), "{stderr}");
}
