//! `battlelog audit --file` as a judge runs it, the real binary on an
//! export written to disk: disputes and rulings listed with who made them
//! and what each override changed, and `--head` against an export cut
//! short. The battle is built by the verify crate's test helpers, the way
//! the services journal one.

#[path = "../../verify/tests/built/mod.rs"]
mod built;

use std::path::Path;
use std::process::{Command, Output};

use battlelog_proto::v1::{DisputeRaised, battle_event::Event};
use battlelog_verify::export;
use built::{BATTLE, Built, credential, ruling};
use serde_json::{Value, json};

fn battlelog(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_battlelog")).args(args).output().expect("the battlelog binary runs")
}

fn audit_file(path: &Path, extra: &[&str]) -> (Option<i32>, String, String) {
    let mut args = vec!["audit", "--file", path.to_str().expect("a utf-8 path")];
    args.extend(extra);
    let output = battlelog(&args);
    let text = |bytes: Vec<u8>| String::from_utf8(bytes).expect("utf-8");
    (output.status.code(), text(output.stdout), text(output.stderr))
}

fn write_export(dir: &Path, name: &str, lines: &[&str]) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, lines.join("\n")).expect("export written");
    path
}

/// A pbta move at version 2 (its roll at 1), disputed at 3 and overruled
/// at 4 to a miss with one helper; closed and revealed at 5 and 6.
fn judged() -> (Built, &'static str) {
    let mut built = Built::open();
    let faces = built.act(json!({"type": "move", "actor": "misty", "trait": "grace", "stakes": "cross"}));
    // misty's grace is 2; RULES.md's pbta bands: 10+, 7-9, 6-.
    let band = match i64::from(faces[0] + faces[1]) + 2 {
        10.. => "full_success",
        7..=9 => "success_with_cost",
        _ => "miss",
    };
    built.command(Event::DisputeRaised(DisputeRaised {
        by: "brock".into(),
        refers_to: 2,
        reason: "she slipped".into(),
        credential: credential("forum-kanto", "forum"),
    }));
    built.command(ruling("oak", 2, "a miss, with help", json!({"result": "miss", "help": 1})));
    built.close();
    (built, band)
}

#[test]
fn the_audit_lists_each_dispute_and_ruling_with_its_author_and_changed_fields() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let (built, band) = judged();
    let text = export::write(BATTLE, &built.recorded()).expect("written");
    let path = write_export(dir.path(), "judged.jsonl", &text.lines().collect::<Vec<_>>());

    let (code, stdout, stderr) = audit_file(&path, &[]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    let ruling_at = lines.iter().position(|l| l.starts_with("version 4: ")).expect("the ruling's line");
    assert_eq!(lines[ruling_at - 1], "version 3: dispute of #2 for brock by forum forum-kanto: she slipped");
    assert_eq!(lines[ruling_at], "version 4: ruling on #2 by judge oak (judge): a miss, with help");
    assert_eq!(lines[ruling_at + 1], "    help: 0 -> 1");
    assert_eq!(lines[ruling_at + 2], format!("    result: \"{band}\" -> \"miss\""));

    let (code, stdout, _) = audit_file(&path, &["--json"]);
    assert_eq!(code, Some(0));
    let report: Value = serde_json::from_str(&stdout).expect("a JSON report");
    assert_eq!(
        report["disputes"],
        json!([{"version": 3, "contests": 2, "party": "brock", "reason": "she slipped",
                "by": {"subject": "forum-kanto", "role": "forum"}}])
    );
    assert_eq!(report["rulings"][0]["by"], json!({"subject": "oak", "role": "judge"}));
    assert_eq!(report["rulings"][0]["contests"], json!(2));
    assert_eq!(
        report["rulings"][0]["changes"],
        json!([{"field": "help", "before": 0, "after": 1}, {"field": "result", "before": band, "after": "miss"}])
    );
}

#[test]
fn an_export_cut_short_is_a_finding_against_the_head_the_forum_posted() {
    let dir = tempfile::tempdir().expect("a temp dir");
    // An open battle, versions 0 to 4: two moves of a roll and an action each.
    let mut built = Built::open();
    built.act(json!({"type": "move", "actor": "misty", "trait": "grace", "stakes": "cross"}));
    built.act(json!({"type": "move", "actor": "brock", "trait": "grit", "stakes": "hold the door"}));
    let text = export::write(BATTLE, &built.recorded()).expect("written");
    let lines: Vec<&str> = text.lines().collect();
    let hash_of =
        |line: &str| serde_json::from_str::<Value>(line).expect("a line")["hash"].as_str().expect("hex").to_owned();
    let head = hash_of(lines[4]);
    let full = write_export(dir.path(), "full.jsonl", &lines);
    let cut = write_export(dir.path(), "cut.jsonl", &lines[..3]);

    let (code, stdout, stderr) = audit_file(&full, &["--head", &head]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains(&format!("head hash {head}: the one given with --head")), "{stdout}");
    let (code, stdout, _) = audit_file(&full, &["--head", &head.to_uppercase()]);
    assert_eq!(code, Some(0), "a head in capitals is the same head:\n{stdout}");

    let (code, stdout, _) = audit_file(&cut, &[]);
    assert_eq!(code, Some(0), "without --head, a cut export verifies as far as it can:\n{stdout}");

    let (code, stdout, _) = audit_file(&cut, &["--head", &head]);
    assert_eq!(code, Some(1), "{stdout}");
    let cut_head = hash_of(lines[2]);
    assert!(
        stdout.contains(&format!(
            "version 2: head: the export ends at head hash {cut_head}, not at the expected head {head}"
        )),
        "{stdout}"
    );
    assert!(stdout.contains("DOES NOT VERIFY"), "{stdout}");
    let (code, stdout, _) = audit_file(&cut, &["--head", &head, "--json"]);
    assert_eq!(code, Some(1));
    let report: Value = serde_json::from_str(&stdout).expect("a JSON report");
    assert_eq!(
        (report["findings"][0]["version"].as_u64(), report["findings"][0]["check"].as_str()),
        (Some(2), Some("head"))
    );

    for bad in ["xyz", &head[..62]] {
        let (code, stdout, stderr) = audit_file(&cut, &["--head", bad]);
        assert_eq!(code, Some(2), "--head {bad:?} is refused: {stderr}");
        assert!(stdout.is_empty(), "{stdout}");
        assert_eq!(stderr.lines().count(), 1, "one line on stderr: {stderr:?}");
        assert!(stderr.contains("--head"), "{stderr}");
    }
}
