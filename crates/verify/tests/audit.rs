//! The audit and the export, pure: a battle is built here event by event
//! the way the roller and the resolver journal one (signed commitment,
//! rolls drawn from the epoch's seed, actions resolved by the rules,
//! close, reveal: `built`), chained, exported and read back, then audited
//! whole and with one thing changed at a time. No service, no disk.

mod built;

use battlelog_proto::battle::struct_to_json;
use battlelog_proto::v1::{DisputeRaised, JudgeRuling, battle_event::Event};
use battlelog_verify::audit::{
    AuditReport, AuditedRecord, Check, DisputeSeen, Problem, Trusted, audit, audit_pinned, audit_trusting,
    audit_with_roller_key,
};
use battlelog_verify::export::{self, ExportError};
use battlelog_verify::judging::{Author, CloseSeen, FieldChange, FinalOutcome};
use built::{BATTLE, Built, MASTER_KEY, credential, ruling};
use serde_json::{Value, json};

fn problems(report: &AuditReport) -> Vec<(u64, Check)> {
    report.findings.iter().map(|f| (f.version, f.check)).collect()
}

#[test]
fn an_honest_battle_verifies_through_its_export() {
    let built = Built::played();
    let recorded = built.recorded();
    let lines = built.audited();
    assert_eq!(lines.len(), 7, "open, two rolls and actions, close, reveal");
    for (line, original) in lines.iter().zip(&recorded) {
        assert_eq!((line.stream.as_str(), &line.record, &line.hash), (BATTLE, &original.record, &original.hash));
        assert!(line.event.is_some(), "the export shows every event");
    }
    let report = audit(BATTLE, &lines);
    assert!(report.ok(), "{:?}", report.findings);
    assert_eq!((report.events, report.rolls_verified, report.actions_verified), (7, 2, 2));
    assert!(report.rolls_pending_reveal.is_empty());
    assert_eq!(report.head_hash, hex::encode(&recorded[6].hash));
    assert_eq!(report.commitments, vec![(0, built.seed.commitment().to_string())]);
    let ours = dice::CommitmentSigner::derive(&MASTER_KEY).roller_key();
    assert_eq!(report.roller_key, Some(ours.to_string()));
    assert!(audit_with_roller_key(BATTLE, &lines, Some(&ours)).ok());
}

#[test]
fn a_changed_face_is_a_roll_finding_at_its_version() {
    let mut built = Built::played();
    let Event::DiceRolled(roll) = &mut built.events[1] else { panic!("version 1 is the first roll") };
    roll.dice[0].value = roll.dice[0].value % i64::from(roll.dice[0].sides) + 1;
    let report = audit(BATTLE, &built.audited());
    assert!(
        report.findings.iter().any(|f| f.version == 1
            && matches!(&f.problem, Problem::RollDiffers { nonce: 0, expression, .. } if *expression == "2d6")),
        "{:?}",
        report.findings
    );
}

#[test]
fn a_removed_event_is_a_sequence_finding_where_it_is_missing() {
    let mut lines = Built::played().audited();
    lines.remove(3);
    let report = audit(BATTLE, &lines);
    let first = &report.findings[0];
    assert_eq!((first.version, &first.problem), (3, &Problem::VersionMissing { expected: 3, found: 4 }));
    assert!(problems(&report).contains(&(4, Check::Chain)), "{:?}", report.findings);
}

#[test]
fn an_edited_hash_breaks_its_own_link_and_the_next_one_only() {
    let mut lines = Built::played().audited();
    lines[2].hash[0] ^= 1;
    let report = audit(BATTLE, &lines);
    // Version 3 is chained on from the claimed (edited) hash, which its own
    // hash does not follow; from version 4 on the chain holds again.
    assert_eq!(problems(&report), vec![(2, Check::Chain), (3, Check::Chain)]);
}

#[test]
fn a_line_of_another_stream_and_a_shown_event_that_lies_are_found() {
    let mut lines = Built::played().audited();
    lines[1].stream = "other".into();
    lines[4].event = Some(json!({"type": "ActionResolved", "summary_en": "misty wins"}));
    let report = audit(BATTLE, &lines);
    assert_eq!(problems(&report), vec![(1, Check::Record), (4, Check::Event)]);
    assert_eq!(report.findings[1].problem, Problem::EventShownDiffers);
}

#[test]
fn an_edited_outcome_is_a_resolution_finding() {
    let mut built = Built::played();
    let Event::ActionResolved(resolved) = &mut built.events[2] else { panic!("version 2 resolves the first move") };
    resolved.summary_en = "misty fails".into();
    let report = audit(BATTLE, &built.audited());
    assert_eq!(
        report.findings.iter().map(|f| (f.version, &f.problem)).collect::<Vec<_>>(),
        vec![(2, &Problem::SummaryDiffers)]
    );
    assert_eq!(report.actions_verified, 1);
}

#[test]
fn a_roll_no_action_used_is_found() {
    let mut built = Built::open();
    built.act(json!({"type": "move", "actor": "misty", "trait": "grace", "stakes": "cross"}));
    built.roll("2d6");
    built.close();
    let report = audit(BATTLE, &built.audited());
    assert_eq!(
        report.findings.iter().map(|f| (f.version, &f.problem)).collect::<Vec<_>>(),
        vec![(3, &Problem::RollUnused { nonce: 1, expression: "2d6".into() })]
    );
}

#[test]
fn a_battle_closed_without_its_reveal_is_found_and_its_rolls_wait() {
    let mut built = Built::played();
    built.events.pop();
    let report = audit(BATTLE, &built.audited());
    assert_eq!(
        report.findings.iter().map(|f| (f.version, &f.problem)).collect::<Vec<_>>(),
        vec![(5, &Problem::ClosedUnrevealed { epoch: 0 })]
    );
    assert_eq!(report.rolls_pending_reveal, vec![1, 3]);
}

#[test]
fn another_roller_key_is_found_at_the_commitment() {
    let lines = Built::played().audited();
    let theirs = dice::CommitmentSigner::derive(&[9; 32]).roller_key();
    let report = audit_with_roller_key(BATTLE, &lines, Some(&theirs));
    assert_eq!(problems(&report), vec![(0, Check::Signature)]);
    assert!(matches!(&report.findings[0].problem, Problem::RollerKeyUntrusted { epoch: 0, trusted, .. }
        if *trusted == theirs.to_string()));
}

#[test]
fn pinned_to_a_set_of_keys_the_signer_must_be_one_of_them() {
    let lines = Built::played().audited();
    let ours = dice::CommitmentSigner::derive(&MASTER_KEY).roller_key();
    let (a, b) =
        (dice::CommitmentSigner::derive(&[9; 32]).roller_key(), dice::CommitmentSigner::derive(&[8; 32]).roller_key());
    assert!(audit_pinned(BATTLE, &lines, &[a, ours], None).ok(), "ours is among the trusted keys");
    let report = audit_pinned(BATTLE, &lines, &[a, b], None);
    assert_eq!(problems(&report), vec![(0, Check::Signature)]);
    assert!(
        matches!(&report.findings[0].problem, Problem::RollerKeyNotAmongTrusted { epoch: 0, key, trusted }
            if *key == ours.to_string() && *trusted == vec![a.to_string(), b.to_string()]),
        "{:?}",
        report.findings
    );
    let message = report.findings[0].problem.to_string();
    assert!(message.contains(&ours.to_string()) && message.contains(&a.to_string()), "{message}");
    assert!(audit_pinned(BATTLE, &lines, &[], None).ok(), "no key: any one key, as audit does");
}

#[test]
fn a_report_serializes_findings_with_their_check_and_message() {
    let mut lines = Built::played().audited();
    lines[2].hash[0] ^= 1;
    let report = serde_json::to_value(audit(BATTLE, &lines)).expect("json");
    assert_eq!(
        report["findings"][0],
        json!({"version": 2, "check": "chain", "message": "the hash does not follow from the previous hash and this record"})
    );
}

#[test]
fn what_is_not_an_export_is_refused_naming_the_line() {
    let text = export::write(BATTLE, &Built::played().recorded()).expect("written");
    let first = text.lines().next().expect("a line");
    assert_eq!(export::parse(&format!("{first}\n\n{first}")).map(|r| r.len()), Ok(2), "blank lines are skipped");
    assert!(matches!(export::parse(&format!("{first}\nnot json")), Err(ExportError::Line { line: 2, .. })));
    let bad_hash = first.replacen("\"hash\":\"", "\"hash\":\"zz", 1);
    assert!(matches!(export::parse(&bad_hash), Err(ExportError::Hash { line: 1, .. })), "{bad_hash}");
    let bad_record = first.replacen("\"record\":\"", "\"record\":\"*", 1);
    assert!(matches!(export::parse(&bad_record), Err(ExportError::Record { line: 1, .. })));
    assert_eq!(export::parse("\n  \n"), Err(ExportError::Empty));
}

#[test]
fn disputes_and_rulings_are_listed_with_their_author_and_what_each_override_changed() {
    let mut built = Built::open();
    // Version 1 rolls 2d6, version 2 resolves the move: misty's grace is 2.
    let faces = built.act(json!({"type": "move", "actor": "misty", "trait": "grace", "stakes": "cross"}));
    let total = i64::from(faces[0] + faces[1]) + 2;
    let band = match total {
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
    // The second ruling finds the first one's outcome, not the recorded one.
    built.command(ruling("oak", 2, "on reflection, a full success", json!({"result": "full_success"})));
    built.close();

    let report = audit(BATTLE, &built.audited());
    assert!(report.ok(), "{:?}", report.findings);
    assert_eq!(
        report.disputes,
        vec![DisputeSeen {
            version: 3,
            contests: 2,
            party: "brock".into(),
            reason: "she slipped".into(),
            by: Some(Author { subject: "forum-kanto".into(), role: "forum".into() }),
            after_close: false,
        }]
    );
    let seen: Vec<_> = report.rulings.iter().map(|r| (r.version, r.contests, r.judge.as_str(), &r.by)).collect();
    let oak = Some(Author { subject: "oak".into(), role: "judge".into() });
    assert_eq!(seen, vec![(4, 2, "oak", &oak), (5, 2, "oak", &oak)]);
    let change = |field: &str, before: Value, after: Value| FieldChange { field: field.into(), before, after };
    assert_eq!(
        report.rulings[0].changes,
        vec![change("help", json!(0), json!(1)), change("result", json!(band), json!("miss"))]
    );
    assert_eq!(report.rulings[1].changes, vec![change("result", json!("miss"), json!("full_success"))]);

    let json = serde_json::to_value(&report).expect("json");
    assert_eq!(
        json["rulings"][1],
        json!({
            "version": 5, "contests": 2, "judge": "oak", "role": "judge",
            "by": {"subject": "oak", "role": "judge"}, "text": "on reflection, a full success",
            "changes": [{"field": "result", "before": "miss", "after": "full_success"}],
            "after_close": false,
            // Names no dispute; no action was resolved between v2 and it.
            "answers_dispute": null, "affected": [],
        })
    );
    assert_eq!(json["disputes"][0]["by"], json!({"subject": "forum-kanto", "role": "forum"}));
}

/// The recorded outcome of the action at `version`, as JSON.
fn recorded_outcome(built: &Built, version: usize) -> serde_json::Map<String, Value> {
    let Event::ActionResolved(resolved) = &built.events[version] else { panic!("version {version} is no action") };
    struct_to_json(resolved.outcome.as_ref().expect("an outcome"))
}

/// Issue 21: a ruling that names a field and sets it to the value it had
/// changed nothing there; listing it read "— → —".
#[test]
fn a_field_an_override_leaves_as_it_was_is_not_listed_as_a_change() {
    let mut built = Built::open();
    built.act(json!({"type": "move", "actor": "misty", "trait": "grace", "stakes": "cross"}));
    let recorded = recorded_outcome(&built, 2);
    let result = recorded["result"].clone();
    built.command(ruling("oak", 2, "same band, with help", json!({"result": result, "help": 1})));
    let report = audit(BATTLE, &built.audited());
    assert!(report.ok(), "{:?}", report.findings);
    assert_eq!(
        report.rulings[0].changes,
        vec![FieldChange { field: "help".into(), before: json!(0), after: json!(1) }],
        "only help changed; the result named at its own value is no change"
    );
}

/// Issue 21: who closed is the recorded credential (the free text is a
/// note); a dispute or ruling after the close is marked; each action has
/// its final outcome after every ruling, with the rulings that changed it.
#[test]
fn the_close_names_its_credential_late_rulings_are_marked_and_final_outcomes_are_reported() {
    let mut built = Built::open();
    built.act(json!({"type": "move", "actor": "misty", "trait": "grace", "stakes": "cross"}));
    built.act(json!({"type": "move", "actor": "brock", "trait": "grit", "stakes": "hold the door"}));
    built.command(Event::DisputeRaised(DisputeRaised {
        by: "brock".into(),
        refers_to: 2,
        reason: "she slipped".into(),
        credential: credential("forum-kanto", "forum"),
    })); // 5
    built.close_as("judge-anna (judge)", credential("forum-pokeboard", "forum")); // 6, reveal 7
    built.command(ruling("oak", 2, "a miss, with help", json!({"result": "miss", "help": 1}))); // 8
    built.command(ruling("oak", 4, "it stands", json!({}))); // 9: names nothing, changes nothing

    let report = audit(BATTLE, &built.audited());
    assert!(report.ok(), "{:?}", report.findings);
    assert_eq!(
        report.closed,
        Some(CloseSeen {
            version: 6,
            by: Some(Author { subject: "forum-pokeboard".into(), role: "forum".into() }),
            note: "judge-anna (judge)".into(),
            reason: "done".into(),
        })
    );
    assert!(!report.disputes[0].after_close, "the dispute came before the close");
    let late: Vec<(u64, bool)> = report.rulings.iter().map(|r| (r.version, r.after_close)).collect();
    assert_eq!(late, vec![(8, true), (9, true)]);

    let mut ruled = recorded_outcome(&built, 2);
    ruled.insert("result".into(), json!("miss"));
    ruled.insert("help".into(), json!(1));
    let expected = std::collections::BTreeMap::from([
        (2, FinalOutcome { outcome: Value::Object(ruled), rulings: vec![8] }),
        (4, FinalOutcome { outcome: Value::Object(recorded_outcome(&built, 4)), rulings: vec![] }),
    ]);
    assert_eq!(report.final_outcomes, expected);

    let json = serde_json::to_value(&report).expect("json");
    assert_eq!(json["final_outcomes"]["2"]["rulings"], json!([8]));
    assert_eq!(json["final_outcomes"]["2"]["outcome"]["result"], json!("miss"));
    assert_eq!(json["rulings"][0]["after_close"], json!(true));
    assert_eq!(
        json["closed"],
        json!({"version": 6, "by": {"subject": "forum-pokeboard", "role": "forum"},
               "note": "judge-anna (judge)", "reason": "done"})
    );
}

#[test]
fn a_ruling_without_override_changes_nothing() {
    let mut built = Built::open();
    built.act(json!({"type": "move", "actor": "misty", "trait": "grace", "stakes": "cross"}));
    built.command(Event::JudgeRuling(JudgeRuling {
        judge: "oak".into(),
        refers_to: 2,
        text: "it stands".into(),
        r#override: None,
        credential: credential("oak", "judge"),
        answers_dispute: None,
    }));
    let report = audit(BATTLE, &built.audited());
    assert_eq!(report.rulings.len(), 1);
    assert_eq!((report.rulings[0].text.as_str(), report.rulings[0].changes.as_slice()), ("it stands", &[][..]));
}

#[test]
fn an_export_cut_short_is_a_finding_against_the_full_head() {
    // An open battle: open, then two moves of a roll and a resolution each
    // (versions 0 to 4); cut after the first move, it verifies as far as
    // it can yet, and only the head the forum posted tells.
    let mut built = Built::open();
    built.act(json!({"type": "move", "actor": "misty", "trait": "grace", "stakes": "cross"}));
    built.act(json!({"type": "move", "actor": "brock", "trait": "grit", "stakes": "hold the door"}));
    let full = built.audited();
    let head: [u8; 32] = full[4].hash.clone().try_into().expect("32 bytes");
    let against = |lines: &[AuditedRecord], head| audit_trusting(BATTLE, lines, &Trusted { roller_key: None, head });

    assert!(against(&full, Some(head)).ok(), "an export that ends at the head given is no finding");
    let truncated = &full[..3];
    let own_head: [u8; 32] = truncated[2].hash.clone().try_into().expect("32 bytes");
    assert!(audit(BATTLE, truncated).ok(), "cut short, it still chains");
    assert!(against(truncated, Some(own_head)).ok(), "and ends at its own last hash");

    let report = against(truncated, Some(head));
    assert_eq!(
        report.findings.iter().map(|f| (f.version, &f.problem)).collect::<Vec<_>>(),
        vec![(2, &Problem::HeadDiffers { found: hex::encode(own_head), expected: hex::encode(head) })]
    );
    assert_eq!(report.findings[0].check, Check::Head);
    let json = serde_json::to_value(&report).expect("json");
    assert_eq!(json["findings"][0]["check"], "head");
}

#[test]
fn a_head_is_64_hex_digits() {
    let head = [0xab; 32];
    assert_eq!(battlelog_verify::hash_from_hex(&"AB".repeat(32)), Ok(head));
    assert!(battlelog_verify::hash_from_hex(&"ab".repeat(31)).is_err());
    let error = battlelog_verify::hash_from_hex(&"zz".repeat(32)).expect_err("not hex");
    assert!(error.to_string().starts_with("a hash is 64 hex digits"), "{error}");
}

/// Issue 39: a ruling followed through. A dodge answers an attack before
/// the judge cuts the attack's damage; the dodge was resolved from the old
/// damage, so the ruling reaches it: resolved again with its own die, its
/// `damage_after` is the ruled damage less the same reduction
/// (docs/rules.md §1.3: round(incoming × (100 − reduction) / 100)). The
/// actions after the ruling, resolved on top of it, are not listed, nor is
/// anything for a ruling whose override changes no value.
#[test]
fn a_ruling_reaches_the_actions_resolved_from_what_it_changed() {
    let attack = |actor: &str, target: &str| json!({"type": "attack", "actor": actor, "target": target, "move": "Swift", "power": 90, "never_miss": true});
    let mut built = Built::open_as("pokemon-d6@2", vec![json!({"id": "pikachu"}), json!({"id": "meowth"})]);
    // Attack and dodge until a dodge leaves part of the damage (the seed is
    // fixed, so this is always the same battle).
    let (mut attacked, mut dodged, mut reduction) = (0, 0, 100);
    for turn in 0..8 {
        let (actor, target) = if turn % 2 == 0 { ("pikachu", "meowth") } else { ("meowth", "pikachu") };
        built.act(attack(actor, target));
        attacked = built.version() - 1;
        built.act(json!({"type": "dodge", "actor": target, "against": attacked}));
        dodged = built.version() - 1;
        let Event::ActionResolved(resolved) = &built.events[dodged as usize] else { unreachable!("just acted") };
        let outcome = battlelog_verify::fold::resolved_parts(resolved).expect("parts").1;
        let fields = serde_json::to_value(&outcome).expect("json");
        reduction = fields["reduction_percent"].as_u64().expect("a rolled dodge has a reduction");
        if fields["result"] == "rolled" && reduction < 100 {
            break;
        }
    }
    assert!(reduction < 100, "no dodge in 8 left any damage");
    let Event::ActionResolved(hit) = &built.events[attacked as usize] else { unreachable!("an attack") };
    let recorded_damage = battlelog_verify::fold::resolved_parts(hit).expect("parts").1;
    let recorded_damage = serde_json::to_value(&recorded_damage).expect("json")["damage"].as_u64().expect("damage");
    // Never a recorded damage (90 times a third-step multiplier: 30, 60, 90,
    // 180), and a multiple of 20: every reduction of the table (0, 5, 50,
    // 60 %) leaves a whole number, so no rounding rule is assumed here.
    let ruled = 40;
    assert_ne!(recorded_damage, ruled);
    let Event::ActionResolved(dodge) = &built.events[dodged as usize] else { unreachable!("a dodge") };
    let recorded_after = serde_json::to_value(battlelog_verify::fold::resolved_parts(dodge).expect("parts").1)
        .expect("json")["damage_after"]
        .clone();
    assert_eq!(ruled * (100 - reduction) % 100, 0);
    let again = ruled * (100 - reduction) / 100;
    // A ruling whose override sets the damage it already had: no change, so
    // nothing reached.
    built.command(ruling("oak", attacked, "it stands", json!({"damage": recorded_damage})));
    let standing = built.version() - 1;
    built.command(ruling("oak", attacked, "the rock halves it", json!({"damage": ruled})));
    let cutting = built.version() - 1;
    // After the ruling: resolved on top of it, never listed.
    built.act(attack("pikachu", "meowth"));
    built.close();
    let report = audit(BATTLE, &built.audited());
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    let seen = |version: u64| report.rulings.iter().find(|r| r.version == version).expect("listed");
    assert_eq!(seen(standing).affected, vec![]);
    let affected = &seen(cutting).affected;
    assert_eq!(affected.len(), 1, "{affected:?}");
    assert_eq!(affected[0].version, dodged);
    assert_eq!(affected[0].refused, None);
    let after = affected[0].changes.iter().find(|c| c.field == "damage_after").expect("damage_after changed");
    assert_eq!((after.before.clone(), after.after.clone()), (recorded_after, json!(again)));
}

/// Issue 39: a ruling names the dispute it answers; one that names anything
/// else (here the contested action itself) is a `ruling` finding at the
/// ruling, and one that names the dispute is none.
#[test]
fn a_ruling_that_answers_no_dispute_is_a_finding() {
    let answering = |answers: fn(u64) -> u64| {
        let mut built = Built::open();
        built.act(json!({"type": "move", "actor": "misty", "trait": "grace", "stakes": "cross"}));
        built.command(Event::DisputeRaised(DisputeRaised {
            by: "brock".into(),
            refers_to: 2,
            reason: "too lucky".into(),
            credential: credential("forum-pokeboard", "forum"),
        }));
        let dispute = built.version() - 1;
        built.command(Event::JudgeRuling(JudgeRuling {
            judge: "oak".into(),
            refers_to: 2,
            text: "it stands".into(),
            r#override: None,
            credential: credential("oak", "judge"),
            answers_dispute: Some(answers(dispute)),
        }));
        (built.version() - 1, audit(BATTLE, &built.audited()))
    };
    let (_, honest) = answering(|dispute| dispute);
    assert!(honest.ok(), "{:?}", honest.findings);
    let (ruling, forged) = answering(|_| 2);
    let findings: Vec<_> = forged.findings.iter().map(|f| (f.version, f.check, f.problem.to_string())).collect();
    assert_eq!(
        findings,
        [(
            ruling,
            Check::Ruling,
            "the ruling says it answers version 2, which is no dispute raised before it in this battle".to_owned()
        )]
    );
}
