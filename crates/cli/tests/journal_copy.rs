//! `battlelog journal copy` through the real binary: a sled journal written
//! by the journal library, copied to another sled directory, read back
//! byte for byte; bad store names and a missing source fail with one line.

use std::process::{Command, Output};

use battlelog_journal::store::conformance::{keyed, opened, resolved, rolled};
use battlelog_journal::{ExpectedVersion, Journal, JournalOptions};

fn battlelog(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_battlelog")).args(args).output().expect("the battlelog binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Every stream's (record bytes, hash) in version order.
async fn contents(dir: &std::path::Path) -> Vec<(String, Vec<(Vec<u8>, [u8; 32])>)> {
    let journal = Journal::open(JournalOptions::new(dir)).await.expect("open");
    let mut out = Vec::new();
    for stream in ["alpha", "beta"] {
        let events = journal.read_stream(stream, 0, 0).await.expect("read");
        out.push((stream.to_owned(), events.into_iter().map(|e| (e.record, e.hash)).collect()));
    }
    journal.shutdown().await.expect("shutdown");
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sled_journal_is_copied_byte_for_byte_and_a_rerun_copies_nothing() {
    let root = tempfile::tempdir().expect("temp dir");
    let (from, to) = (root.path().join("from"), root.path().join("to"));
    {
        let journal = Journal::open(JournalOptions::new(&from)).await.expect("open");
        journal
            .append("alpha".into(), ExpectedVersion::NoStream, vec![keyed(opened("forum"), "k"), rolled(0, 0)])
            .await
            .expect("append");
        journal.append("beta".into(), ExpectedVersion::NoStream, vec![opened("")]).await.expect("append");
        journal.append("alpha".into(), ExpectedVersion::Any, vec![resolved("hit")]).await.expect("append");
        journal.shutdown().await.expect("shutdown");
    }
    let (from_arg, to_arg) = (format!("sled:{}", from.display()), format!("sled:{}", to.display()));
    let run = battlelog(&["journal", "copy", "--from", &from_arg, "--to", &to_arg]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert_eq!(
        text(&run.stdout).trim(),
        "copied 4 events (0 already there) of 2 streams; every chain verifies on both sides with the same head"
    );
    let (a, b) = (contents(&from).await, contents(&to).await);
    assert_eq!(a, b);
    assert_eq!(a[0].1.len(), 3);

    let again = battlelog(&["journal", "copy", "--from", &from_arg, "--to", &to_arg]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert!(
        text(&again.stdout).starts_with("copied 0 events (4 already there) of 2 streams"),
        "{}",
        text(&again.stdout)
    );
}

#[test]
fn bad_store_names_and_a_missing_source_fail_with_one_line() {
    let root = tempfile::tempdir().expect("temp dir");
    let missing = format!("sled:{}", root.path().join("nothing").display());
    let to = format!("sled:{}", root.path().join("to").display());
    for (args, expected) in [
        (vec!["--from", "disk:/x", "--to", to.as_str()], "is not sled:DIR or jetstream:URL"),
        (vec!["--from", missing.as_str(), "--to", to.as_str()], "--from:"),
        (vec!["--from", to.as_str(), "--to", to.as_str()], "--from and --to name the same store"),
    ] {
        let mut all = vec!["journal", "copy"];
        all.extend(args);
        let run = battlelog(&all);
        assert_eq!(run.status.code(), Some(2), "{all:?}");
        assert!(run.stdout.is_empty());
        let stderr = text(&run.stderr);
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(expected), "{all:?}: {stderr}");
    }
    assert!(!root.path().join("nothing").exists(), "a missing source is not created");
}
