//! `battlelog audit --file` as a judge runs it, the real binary on an
//! export written to disk: the roller key pinned (or the audit says it is
//! not, with its own exit status), disputes and rulings listed with who made
//! them and what each override changed, the close by its credential, and
//! `--head` against an export cut short. The battle is built by the verify
//! crate's test helpers, the way the services journal one.

#[path = "../../verify/tests/built/mod.rs"]
mod built;

use std::path::Path;
use std::process::{Command, Output};

use battlelog_proto::v1::{DisputeRaised, battle_event::Event};
use battlelog_verify::export;
use built::{BATTLE, Built, MASTER_KEY, credential, ruling};
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

/// The roller key of the built battles' master key: the key an operator
/// would publish.
fn ours() -> String {
    dice::CommitmentSigner::derive(&MASTER_KEY).roller_key().to_string()
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
    // misty's grace is 2; docs/rules.md's pbta bands: 10+, 7-9, 6-.
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
    // A forum's token closes, writing a judge's name as its free text.
    built.close_as("judge-anna (judge)", credential("forum-pokeboard", "forum"));
    // On appeal: the help named again at the value it has, no change.
    built.command(ruling("oak", 2, "on appeal, it stands", json!({"help": 1})));
    (built, band)
}

#[test]
fn the_audit_lists_each_dispute_and_ruling_with_its_author_and_changed_fields() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let (built, band) = judged();
    let text = export::write(BATTLE, &built.recorded()).expect("written");
    let path = write_export(dir.path(), "judged.jsonl", &text.lines().collect::<Vec<_>>());

    let ours = ours();
    let (code, stdout, stderr) = audit_file(&path, &["--roller-key", &ours]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    let ruling_at = lines.iter().position(|l| l.starts_with("version 4: ")).expect("the ruling's line");
    assert_eq!(lines[ruling_at - 1], "version 3: dispute of #2 for brock by forum forum-kanto: she slipped");
    assert_eq!(lines[ruling_at], "version 4: ruling on #2 by judge oak (judge): a miss, with help");
    assert_eq!(lines[ruling_at + 1], "    help: 0 -> 1");
    assert_eq!(lines[ruling_at + 2], format!("    result: \"{band}\" -> \"miss\""));
    // Issue 21: the close is the credential's, its free text a note; the
    // ruling after the close is marked and lists no unchanged field; the
    // action's final outcome names the ruling that made it.
    assert_eq!(lines[ruling_at + 3], "version 5: closed by forum forum-pokeboard (note: \"judge-anna (judge)\"): done");
    assert_eq!(
        lines[ruling_at + 4],
        "version 7: ruling on #2 by judge oak (judge) (after the close, within the appeal window): on appeal, it stands"
    );
    assert!(!lines[ruling_at + 5].starts_with(' '), "no change listed under the appeal's ruling: {stdout}");
    let fin = lines.iter().find(|l| l.starts_with("version 2: ")).expect("the action's final outcome");
    assert!(fin.starts_with("version 2: final outcome after ruling #4: {"), "{fin}");
    assert!(fin.contains("\"result\":\"miss\"") && fin.contains("\"help\":1"), "{fin}");

    let (code, stdout, _) = audit_file(&path, &["--json", "--roller-key", &ours]);
    assert_eq!(code, Some(0));
    let report: Value = serde_json::from_str(&stdout).expect("a JSON report");
    assert_eq!(
        report["disputes"],
        json!([{"version": 3, "contests": 2, "party": "brock", "reason": "she slipped",
                "by": {"subject": "forum-kanto", "role": "forum"}, "after_close": false}])
    );
    assert_eq!(report["rulings"][0]["by"], json!({"subject": "oak", "role": "judge"}));
    assert_eq!(
        (report["rulings"][0]["after_close"].clone(), report["rulings"][1]["after_close"].clone()),
        (json!(false), json!(true))
    );
    assert_eq!(report["rulings"][1]["changes"], json!([]));
    assert_eq!(report["closed"]["by"], json!({"subject": "forum-pokeboard", "role": "forum"}));
    assert_eq!(report["final_outcomes"]["2"]["rulings"], json!([4]));
    assert_eq!(report["roller_key_status"], json!("pinned"));
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

    let ours = ours();
    let (code, stdout, stderr) = audit_file(&full, &["--head", &head, "--roller-key", &ours]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains(&format!("head hash {head}: the one given with --head")), "{stdout}");
    let (code, stdout, _) = audit_file(&full, &["--head", &head.to_uppercase(), "--roller-key", &ours]);
    assert_eq!(code, Some(0), "a head in capitals is the same head:\n{stdout}");

    let (code, stdout, _) = audit_file(&cut, &["--roller-key", &ours]);
    assert_eq!(code, Some(0), "without --head, a cut export verifies as far as it can:\n{stdout}");

    // A finding outranks an unpinned key: exit 1 either way.
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

/// `export` of a built battle written to `name` in `dir`.
fn export_of(dir: &Path, name: &str, built: &Built) -> std::path::PathBuf {
    let text = export::write(BATTLE, &built.recorded()).expect("written");
    write_export(dir, name, &text.lines().collect::<Vec<_>>())
}

/// Issue 21, finding 3: an export re-signed end to end with someone else's
/// Ed25519 key (its commitment signed by a forger's key, the chain
/// recomputed) passes every check but the key's. Without a pinned key the
/// audit says so and exits 3; against the operator's key it is a finding
/// naming the signer and the expected key, exit 1; accepted explicitly it
/// verifies. The genuine export verifies against its key, from the flag or
/// a trusted-keys file.
#[test]
fn the_roller_key_is_pinned_or_the_audit_says_plainly_that_it_is_not() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let genuine_battle = Built::played();
    let genuine = export_of(dir.path(), "genuine.jsonl", &genuine_battle);
    let forger = dice::CommitmentSigner::derive(&[0x42; 32]);
    let forger_key = forger.roller_key().to_string();
    let mut resigned_battle = Built::played();
    let Event::BattleOpened(opened) = &mut resigned_battle.events[0] else { panic!("version 0 opens") };
    opened.commitment_signature = forger.sign(BATTLE, 0, &opened.commitment).to_vec();
    opened.roller_key = forger.roller_key().to_bytes().to_vec();
    let resigned = export_of(dir.path(), "resigned.jsonl", &resigned_battle);
    let ours = ours();
    assert_ne!(ours, forger_key);

    // No key: not pinned, said plainly, its own exit status.
    let (code, stdout, stderr) = audit_file(&resigned, &[]);
    assert_eq!(code, Some(3), "an unpinned key is exit 3:\n{stdout}{stderr}");
    assert!(
        stdout.contains(&format!("roller key {forger_key} signed the commitments, but the roller key is NOT PINNED")),
        "{stdout}"
    );
    assert!(stdout.contains("--roller-key HEX") && stdout.contains("--trusted-roller-keys FILE"), "{stdout}");
    assert!(!stdout.contains(&format!("battle {BATTLE} verifies:")), "never a plain 'verifies':\n{stdout}");
    let (code, stdout, _) = audit_file(&genuine, &[]);
    assert_eq!(code, Some(3), "the genuine export unpinned is exit 3 too:\n{stdout}");

    // The operator's key: a finding naming the signer and the expected key.
    let (code, stdout, _) = audit_file(&resigned, &["--roller-key", &ours]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "version 0: signature: epoch 0 is signed by roller key {forger_key}, not by the trusted roller key {ours}"
        )),
        "{stdout}"
    );
    assert!(
        stdout
            .contains(&format!("roller key {forger_key} signed the commitments, not the trusted one: expected {ours}")),
        "{stdout}"
    );
    assert!(stdout.contains("DOES NOT VERIFY"), "{stdout}");
    let (code, stdout, _) = audit_file(&resigned, &["--roller-key", &ours, "--json"]);
    assert_eq!(code, Some(1));
    let report: Value = serde_json::from_str(&stdout).expect("a JSON report");
    assert_eq!(
        (report["roller_key_status"].as_str(), report["roller_key"].as_str()),
        (Some("mismatch"), Some(forger_key.as_str()))
    );

    // Accepted explicitly: it verifies (all else is fine), naming the key.
    let (code, stdout, _) = audit_file(&resigned, &["--accept-any-roller-key"]);
    assert_eq!(code, Some(0), "{stdout}");
    assert!(stdout.contains(&format!("roller key {forger_key} signed the commitments; any key accepted")), "{stdout}");
    assert!(stdout.contains(&format!("battle {BATTLE} verifies: ")), "{stdout}");

    // The genuine export against its key.
    let (code, stdout, _) = audit_file(&genuine, &["--roller-key", &ours]);
    assert_eq!(code, Some(0), "{stdout}");
    assert!(stdout.contains(&format!("roller key {ours} signed the commitments: pinned")), "{stdout}");
    let (code, stdout, _) = audit_file(&genuine, &["--roller-key", &ours, "--json"]);
    assert_eq!(code, Some(0));
    assert_eq!(serde_json::from_str::<Value>(&stdout).expect("json")["roller_key_status"], json!("pinned"));

    // A trusted-keys file: one key a line, `#` comments, blank lines.
    let other = dice::CommitmentSigner::derive(&[0x43; 32]).roller_key().to_string();
    let keys = dir.path().join("roller-keys.txt");
    std::fs::write(&keys, format!("# the operator's keys\n\n{other}  # retired\n  {}\n", ours.to_uppercase()))
        .expect("written");
    let keys_arg = keys.to_str().expect("utf-8");
    let (code, stdout, _) = audit_file(&genuine, &["--trusted-roller-keys", keys_arg]);
    assert_eq!(code, Some(0), "{stdout}");
    let (code, stdout, _) = audit_file(&resigned, &["--trusted-roller-keys", keys_arg]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(stdout.contains(&format!("version 0: signature: epoch 0 is signed by roller key {forger_key}, none of the trusted roller keys ({other}, {ours})")), "{stdout}");

    // Refused: a keys file with a bad line, or none; pinning and accepting any.
    let bad = dir.path().join("bad-keys.txt");
    std::fs::write(&bad, format!("{ours}\nnot-a-key\n")).expect("written");
    let empty = dir.path().join("empty-keys.txt");
    std::fs::write(&empty, "# nothing yet\n").expect("written");
    for (args, names) in [
        (vec!["--trusted-roller-keys", bad.to_str().expect("utf-8")], "line 2"),
        (vec!["--trusted-roller-keys", empty.to_str().expect("utf-8")], "names no roller key"),
        (vec!["--trusted-roller-keys", "no-such-file.txt"], "no-such-file.txt"),
        (vec!["--roller-key", &ours, "--accept-any-roller-key"], "--accept-any-roller-key"),
    ] {
        let (code, stdout, stderr) = audit_file(&genuine, &args);
        assert_eq!(code, Some(2), "{args:?} is refused: {stderr}");
        assert!(stdout.is_empty(), "{stdout}");
        assert!(stderr.contains(names) && stderr.lines().count() == 1, "{args:?}: {stderr}");
    }
}

#[test]
fn the_help_of_audit_documents_every_exit_status() {
    let output = battlelog(&["audit", "--help"]);
    assert_eq!(output.status.code(), Some(0));
    let help = String::from_utf8(output.stdout).expect("utf-8");
    for status in [
        "  0  the battle verifies",
        "  1  it does not verify",
        "  2  the audit could not run",
        "  3  everything else verifies, but the roller key is not pinned",
    ] {
        assert!(help.contains(status), "{status:?} in:\n{help}");
    }
    assert!(help.contains("--trusted-roller-keys") && help.contains("--accept-any-roller-key"), "{help}");
}
