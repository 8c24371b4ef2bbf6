//! System test of issue 20's schemas over real gRPC: the real journal,
//! roller and resolver processes on loopback. `ListRulesets` publishes the
//! committed docs/schemas documents; a refused action or sheet names the
//! field by its JSON path (message and google.rpc.BadRequest) and writes
//! nothing; `ActResponse.outcome_json` and `GetBattleResponse.state_json`
//! carry whole numbers as integers where the Struct holds doubles.

use std::path::PathBuf;

use battlelog_proto::v1 as pb;
use battlelog_test_support::stack::*;
use serde_json::{Value, json};
use tonic::Code;
use tonic_types::StatusExt;

fn committed(ruleset: &str, name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/schemas").join(ruleset).join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The code, the BadRequest field and the message of a refusal.
fn refusal(status: &tonic::Status) -> (Code, String, String) {
    let details = status.get_details_bad_request().unwrap_or_else(|| panic!("no BadRequest: {status:?}"));
    let field = details.field_violations.first().expect("a violation").field.clone();
    (status.code(), field, status.message().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_rulesets_publishes_every_version_s_committed_schemas() {
    let stack = Stack::start("schemas-list", false).await;
    let mut resolver = resolver_client(&stack.resolver).await;
    let listed = resolver.list_rulesets(pb::ListRulesetsRequest {}).await.expect("list").into_inner();
    let ids: Vec<&str> = listed.ruleset_infos.iter().map(|info| info.id.as_str()).collect();
    assert_eq!(ids, listed.rulesets.iter().map(String::as_str).collect::<Vec<_>>(), "the same rulesets in order");
    assert_eq!(ids.len(), 8);
    for info in &listed.ruleset_infos {
        assert_eq!(info.sheet_schema, committed(&info.id, "sheet.schema.json"), "{}", info.id);
        assert_eq!(info.action_schema, committed(&info.id, "action.schema.json"), "{}", info.id);
        assert_eq!(info.outcome_schema, committed(&info.id, "outcome.schema.json"), "{}", info.id);
        let action: Value = serde_json::from_str(&info.action_schema).expect("JSON");
        assert_eq!(action["$schema"], "https://json-schema.org/draft/2020-12/schema");
    }
    // A version's own vocabulary: `exchange_choice` is berserk@2's alone.
    let action_of = |id: &str| {
        let info = listed.ruleset_infos.iter().find(|info| info.id == id).expect("listed");
        serde_json::from_str::<Value>(&info.action_schema).expect("JSON")
    };
    assert!(action_of("berserk@1")["$defs"].get("exchange_choice").is_none());
    assert!(action_of("berserk@2")["$defs"].get("exchange_choice").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_name_the_field_by_its_json_path_and_write_nothing() {
    let stack = Stack::start("schemas-paths", false).await;
    let mut resolver = resolver_client(&stack.resolver).await;
    open(&mut resolver, "paths-pokemon", "pokemon-d6@1", json!([{"id": "pikachu"}, {"id": "meowth"}]), "s").await;
    open(&mut resolver, "paths-berserk", "berserk@1", json!([{"id": "a"}, {"id": "d"}]), "s").await;

    let thunder = |extra: Value| {
        let mut action = json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Thunder"});
        action.as_object_mut().expect("object").extend(extra.as_object().expect("object").clone());
        action
    };
    let cases = [
        (
            "paths-pokemon",
            thunder(json!({"power": "ninety"})),
            "action.power",
            "invalid type: string \"ninety\", expected u32",
        ),
        (
            "paths-pokemon",
            json!({"type": "attack", "actor": "pikachu", "move": "Thunder"}),
            "action",
            "missing field `target`",
        ),
        (
            "paths-pokemon",
            json!({"type": "pass", "actor": "pikachu", "never_mis": true}),
            "action.never_mis",
            "unknown field `never_mis`",
        ),
        ("paths-pokemon", thunder(json!({"prefer": "both"})), "action.prefer", "unknown variant `both`"),
        ("paths-pokemon", thunder(json!({"power": -5})), "action.power", "invalid value: integer `-5`, expected u32"),
        ("paths-pokemon", json!({"type": "fly", "actor": "pikachu"}), "action.type", "unknown variant `fly`"),
        (
            "paths-berserk",
            json!({"type": "strike", "kind": "simple", "attacker": {"id": "a", "strike": [1, "two", 3]}, "defender": {"id": "d"}}),
            "action.attacker.strike[1]",
            "invalid type: string \"two\"",
        ),
    ];
    for (i, (battle, action, path, says)) in cases.into_iter().enumerate() {
        let status = act(&mut resolver, battle, &action, &format!("bad-{i}")).await.expect_err("refused");
        let (code, field, message) = refusal(&status);
        assert_eq!((code, field.as_str()), (Code::InvalidArgument, path), "{action}: {status:?}");
        assert!(message.starts_with(&format!("{path}: {says}")), "{action}: {message}");
    }
    // The message the issue asked for, word for word.
    let status = act(&mut resolver, "paths-pokemon", &thunder(json!({"power": "ninety"})), "ninety").await;
    assert_eq!(status.expect_err("refused").message(), "action.power: invalid type: string \"ninety\", expected u32");

    // Sheets: a value the type refuses, and a field the version does not have.
    let sheets = [
        (
            "arcana-2d10@2",
            json!([{"id": "mage"}, {"id": "necro", "abilities": {"Рука крови": {"per_episode": "two"}}}]),
            "participants[1].abilities.Рука крови.per_episode",
        ),
        (
            "arcana-2d10@1",
            json!([{"id": "mage", "abilities": {"Огненный шар": {"magical": false}}}]),
            "participants[0].abilities.Огненный шар.magical",
        ),
        (
            "arcana-2d10@2",
            json!([{"id": "mage", "abilities": {"Щит": {"min_points": 13}}}]),
            "participants[0].abilities.Щит.min_points",
        ),
        ("pbta-2d6@1", json!([{"id": "ash", "traits": {"luck": 1}}]), "participants[0].traits"),
        ("pokemon-d6@1", json!([{"id": "pikachu"}, {"id": "pikachu"}]), "participants[1].id"),
    ];
    for (i, (ruleset, participants, path)) in sheets.into_iter().enumerate() {
        let request = pb::OpenBattleRequest {
            ruleset: ruleset.into(),
            participants: participants.as_array().expect("list").iter().cloned().map(obj).collect(),
            request_id: format!("open-bad-{i}"),
            battle_id: format!("paths-sheet-{i}"),
            ..Default::default()
        };
        let status = resolver.open_battle(request).await.expect_err("refused");
        let (code, field, message) = refusal(&status);
        assert_eq!((code, field.as_str()), (Code::InvalidArgument, path), "{participants}: {status:?}");
        assert!(message.starts_with(&format!("{path}: ")), "{message}");
        let got =
            resolver.get_battle(pb::GetBattleRequest { battle_id: format!("paths-sheet-{i}"), at_version: None }).await;
        assert_eq!(got.expect_err("never opened").code(), Code::NotFound);
    }

    // Nothing was written: each battle holds its opening alone.
    for battle in ["paths-pokemon", "paths-berserk"] {
        assert_eq!(journaled(&stack, battle).await.len(), 1, "{battle}");
    }
}

/// Every number in `value` is an integer.
fn all_integers(value: &Value) -> bool {
    match value {
        Value::Number(n) => n.is_i64() || n.is_u64(),
        Value::Array(items) => items.iter().all(all_integers),
        Value::Object(fields) => fields.values().all(all_integers),
        _ => true,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outcomes_and_state_carry_whole_numbers_as_integers() {
    let stack = Stack::start("schemas-integers", false).await;
    let mut resolver = resolver_client(&stack.resolver).await;
    let battle = "integers";
    open(&mut resolver, battle, "pokemon-d6@1", json!([{"id": "pikachu"}, {"id": "meowth"}]), "integers").await;
    let dodge = json!({"type": "dodge", "actor": "meowth", "incoming_damage": 90});
    let reply = act(&mut resolver, battle, &dodge, "dodge").await.expect("a dodge");

    // The Struct holds doubles: that is what clients decoding it see.
    let recorded = reply.resolved.as_ref().and_then(|r| r.outcome.as_ref()).expect("an outcome");
    let dodges_left = recorded.fields.get("dodges_left").and_then(|v| v.kind.clone());
    assert!(matches!(dodges_left, Some(prost_types::value::Kind::NumberValue(n)) if n == 4.0 || n == 5.0));
    // The mirror carries the same values, as integers.
    let text: Value = serde_json::from_str(&reply.outcome_json).expect("outcome_json is JSON");
    assert_eq!(text, outcome(&reply), "the same fields and values as the Struct");
    assert!(all_integers(&text), "{}", reply.outcome_json);
    assert!(text["dodges_left"].is_u64() && text["reduction_percent"].is_u64(), "{}", reply.outcome_json);
    assert!(!reply.outcome_json.contains(".0"), "{}", reply.outcome_json);

    // A retry answers from the journal with the same text.
    let again = act(&mut resolver, battle, &dodge, "dodge").await.expect("a retry");
    assert_eq!(again.outcome_json, reply.outcome_json);

    let got = resolver
        .get_battle(pb::GetBattleRequest { battle_id: battle.into(), at_version: None })
        .await
        .expect("get")
        .into_inner();
    let state: Value = serde_json::from_str(&got.state_json).expect("state_json is JSON");
    assert_eq!(state, struct_json(got.state.as_ref()));
    let counted = u64::from(text["counted"] == json!(true));
    assert_eq!(state["pokemon"]["meowth"]["dodges_used"], json!(counted), "{}", got.state_json);
    assert!(all_integers(&state));
}
