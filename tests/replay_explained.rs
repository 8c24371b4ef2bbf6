//! System tests of `battlelog replay`'s explanations (issue 21, "every
//! result explained"): under each action, the dice, every modifier by name
//! and signed value, the rule row and the state changes; the state at the
//! replayed version in words; `--lang ru`. The real journal, roller and
//! resolver binaries and the real `battlelog` CLI.
//!
//! Expected values are worked out here from the action, the dice the
//! resolver returned and the sheets, by docs/rules.md, never read back from the
//! CLI's output.

use battlelog_proto::v1 as pb;
use battlelog_test_support::TestAuth;
use battlelog_test_support::stack::*;
use serde_json::{Value, json};

/// `battlelog replay BATTLE [extra…]` as a reader: its stdout.
fn replay(resolver_url: &str, battle_id: &str, extra: &[&str]) -> String {
    let reader = TestAuth::shared().reader();
    let mut args = vec!["replay", battle_id, "--resolver", resolver_url, "--token", &reader];
    args.extend(extra);
    let (code, stdout, stderr) = cli(&args);
    assert_eq!(code, Some(0), "replay {battle_id} {extra:?}: {stderr}");
    stdout
}

/// The indented lines under the event line of `version`, up to the next
/// line that is not indented.
fn under(stdout: &str, version: u64) -> Vec<String> {
    let mut lines = stdout.lines().skip_while(|l| !l.starts_with(&format!("#{version} ")));
    assert!(lines.next().is_some(), "replay shows #{version}:\n{stdout}");
    lines.take_while(|l| l.starts_with(' ')).map(str::to_owned).collect()
}

/// A term after the dice, each sign once: `+ trait (grace) 2`, `− trait
/// (grit) 1` (never `+ trait (grit) −1`).
fn term(name: &str, value: i64) -> String {
    if value < 0 { format!(" − {name} {}", -value) } else { format!(" + {name} {value}") }
}

/// A `pbta-2d6@1` battle: each move's explanation names the dice, the
/// trait (by name, with the sheet's value) and the help with their signed
/// values, adding up to the outcome's total, and the docs/rules.md §4.1 row for
/// that total; in English and, with `--lang ru`, in Russian.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replay_explains_each_move_with_modifiers_that_add_up_to_the_total() {
    let stack = Stack::start("replay-explained-pbta", false).await;
    let battle_id = "explained-pbta";
    let mut resolver = resolver_client(&stack.resolver).await;
    let sheets = json!([{"id": "misty", "traits": {"grace": 2}}, {"id": "brock", "traits": {"grit": -1}}]);
    open(&mut resolver, battle_id, "pbta-2d6@1", sheets, "explained pbta").await;
    // (action, its trait's name in English and Russian, the sheet's value, help)
    let moves = [
        (
            json!({"type": "move", "actor": "misty", "trait": "grace", "helpers": ["brock"], "stakes": "cross"}),
            ("grace", "ловкость"),
            2,
            1,
        ),
        (json!({"type": "move", "actor": "brock", "trait": "grit", "stakes": "hold"}), ("grit", "стойкость"), -1, 0),
        (json!({"type": "move", "actor": "brock", "trait": "wits", "stakes": "map"}), ("wits", "смекалка"), 0, 0),
    ];
    let mut played = Vec::new();
    for (i, (action, names, trait_value, help)) in moves.into_iter().enumerate() {
        let reply = act(&mut resolver, battle_id, &action, &format!("m-{i}")).await.expect("move");
        let dice = faces(&reply);
        assert_eq!(dice.len(), 2, "2d6: {reply:?}");
        let total = dice.iter().sum::<i64>() + trait_value + help;
        // docs/rules.md §4.1: the total is the dice, the trait and the help.
        assert_eq!(outcome(&reply)["total"], json!(total), "the outcome's total: {}", outcome(&reply));
        let actor = action["actor"].as_str().expect("actor").to_owned();
        // The help term names who helped.
        let helpers: Vec<&str> = action["helpers"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        let helped = if helpers.is_empty() { String::new() } else { format!(" ({})", helpers.join(", ")) };
        played.push((reply.version, actor, dice, names, trait_value, help, helped, total));
    }

    let english = replay(&stack.resolver.url(), battle_id, &[]);
    let russian = replay(&stack.resolver.url(), battle_id, &["--lang", "ru"]);
    for (version, actor, dice, (en, ru), trait_value, help, helped, total) in &played {
        let (d1, d2) = (dice[0], dice[1]);
        let lines = under(&english, *version);
        // Each die credited to whose it is.
        assert!(
            lines.contains(&format!("    dice: {d1} ({actor}: die d6), {d2} ({actor}: die d6)")),
            "#{version}: {lines:#?}"
        );
        // The help is named when someone helped (a "+ help 0" adds nothing).
        let help_en = if *help == 0 { String::new() } else { term(&format!("help{helped}"), *help) };
        let help_ru = if *help == 0 { String::new() } else { term(&format!("помощь{helped}"), *help) };
        let sum = format!(
            "    total ({actor}) = {d1} + {d2}{}{help_en} = {total}",
            term(&format!("trait ({en})"), *trait_value)
        );
        assert!(lines.contains(&sum), "#{version} shows {sum:?}: {lines:#?}");
        let row = match total {
            10.. => "total 10 or more → full success",
            7..=9 => "total 7–9 → success at a cost",
            _ => "total 6 or less → miss, the GM makes a move",
        };
        assert!(lines.contains(&format!("    rule: {row} (docs/rules.md §4.1)")), "#{version} row {row:?}: {lines:#?}");

        let lines = under(&russian, *version);
        let sum = format!(
            "    итог ({actor}) = {d1} + {d2}{}{help_ru} = {total}",
            term(&format!("черта ({ru})"), *trait_value)
        );
        assert!(lines.contains(&sum), "#{version} in Russian shows {sum:?}: {lines:#?}");
        assert!(lines.iter().any(|l| l.starts_with("    кости: ")), "#{version}: {lines:#?}");
        assert!(lines.iter().any(|l| l.starts_with("    правило: итог ")), "#{version}: {lines:#?}");
    }
    // The state in words, Russian labels under --lang ru.
    assert!(english.contains("\n    misty: traits grace: 2\n"), "{english}");
    assert!(russian.contains("\n    misty: черты ловкость: 2\n"), "{russian}");
    assert!(russian.contains("\n  состояние на #"), "{russian}");
}

/// The state lines of `replay --at N`: meowth's and pikachu's, as `GetBattle
/// { at_version: N }` holds them (dodges used and left of docs/rules.md §1.3's
/// five, statuses with their turns, preparing, flinched), at every version.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replay_at_a_version_shows_the_state_get_battle_holds_there() {
    let stack = Stack::start("replay-explained-pokemon", false).await;
    let battle_id = "explained-pokemon";
    // A client seed under which the burn lands for 3 or 4 turns (nonce 1,
    // the power die, at least 5) and the Fake Out hits (nonce 2 above 1),
    // so that statuses and the flinch show: the expected lines are still
    // read from GetBattle, whatever the dice.
    let client_seed = client_seed_where(battle_id, "explained, thread ", |d6| d6(1) >= 5 && d6(2) > 1);
    let mut resolver = resolver_client(&stack.resolver).await;
    open(&mut resolver, battle_id, "pokemon-d6@1", json!([{"id": "pikachu"}, {"id": "meowth"}]), &client_seed).await;
    let actions = [
        json!({"type": "dodge", "actor": "meowth", "incoming_damage": 40}),
        json!({"type": "status_move", "actor": "meowth", "target": "pikachu", "move": "Will-O-Wisp", "status": "burn"}),
        json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Fake Out", "power": 40, "interrupt": true}),
        json!({"type": "dodge", "actor": "meowth", "incoming_damage": 40}),
        json!({"type": "pass", "actor": "pikachu"}),
    ];
    let mut dodge_versions = Vec::new();
    for (i, action) in actions.iter().enumerate() {
        let reply = act(&mut resolver, battle_id, action, &format!("p-{i}")).await.expect("act");
        if action["type"] == "dodge" {
            dodge_versions.push((reply.version, pokemon_dodge(faces(&reply)[0]).1));
        }
    }
    let head = resolver
        .get_battle(pb::GetBattleRequest { battle_id: battle_id.into(), at_version: None })
        .await
        .expect("get battle")
        .into_inner()
        .version;
    // A state field as the state lines write it.
    let text = |value: &Value| match value {
        Value::Null => "—".to_owned(),
        Value::Bool(b) => (if *b { "yes" } else { "no" }).to_owned(),
        Value::Object(map) if map.is_empty() => "—".to_owned(),
        Value::Object(map) => map.iter().map(|(k, v)| format!("{k}: {v}")).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    };
    for v in 0..=head {
        let state = resolver
            .get_battle(pb::GetBattleRequest { battle_id: battle_id.into(), at_version: Some(v) })
            .await
            .expect("get battle at a version")
            .into_inner();
        let state = struct_json(state.state.as_ref());
        let stdout = replay(&stack.resolver.url(), battle_id, &["--at", &v.to_string()]);
        let words = stdout
            .split_once(&format!("\n  state at #{v}:\n"))
            .map(|(_, after)| after)
            .unwrap_or_else(|| panic!("replay --at {v} shows the state at #{v} in words:\n{stdout}"));
        for mon in ["pikachu", "meowth"] {
            let held = &state["pokemon"][mon];
            let used = held["dodges_used"].as_u64().expect("dodges_used");
            let line = format!(
                "    {mon}: dodges used {used}, dodges left {}, statuses (turns left) {}, preparing {}, flinched {}",
                5 - used,
                text(&held["statuses"]),
                text(&held["charging"]),
                text(&held["flinched"]),
            );
            assert!(words.lines().any(|l| l == line), "--at {v}: {line:?} in:\n{stdout}");
        }
    }
    let last = replay(&stack.resolver.url(), battle_id, &[]);
    assert!(last.contains(", statuses (turns left) burn: "), "the planned burn shows:\n{last}");
    assert!(last.contains(", flinched yes"), "the planned flinch shows:\n{last}");
    // Under each counted dodge, the count it changed.
    let stdout = replay(&stack.resolver.url(), battle_id, &[]);
    let mut used = 0;
    for (version, counted) in dodge_versions {
        let lines = under(&stdout, version);
        if counted {
            let change = format!("    meowth: dodges used {used} → {}", used + 1);
            assert!(lines.contains(&change), "#{version}: {change:?} in {lines:#?}");
            used += 1;
        } else {
            assert!(!lines.iter().any(|l| l.contains("dodges used")), "an uncounted dodge: {lines:#?}");
        }
        assert!(
            // The dodge die is the dodger's.
            lines.iter().any(|l| l.starts_with("    dice: ") && l.contains("(meowth: dodge d6)")),
            "#{version}: {lines:#?}"
        );
    }
}
