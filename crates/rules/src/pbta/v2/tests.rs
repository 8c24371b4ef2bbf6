//! docs/rules.md §6.4 item by item. Totals are worked out by hand in the
//! comments (2d6 + the sheet's trait + 1 for any help); the summaries'
//! wording is the code's own (docs/rules.md §5.3 fixes no words).

use serde_json::{Value, json};

use super::*;
use crate::test_support::{fields, open, play, rejection, resolve, with_fields};

fn battle() -> Battle {
    open(
        "pbta-2d6@2",
        json!([{"id": "ash", "traits": {"brawn": 2, "wits": 1, "cool": -1, "grit": 0}}, {"id": "misty", "traits": {"grace": 2}}]),
    )
}

/// A move by ash on wits (1) with stakes, plus `extra`.
fn ash(extra: Value) -> Value {
    with_fields(json!({"type": "move", "actor": "ash", "trait": "wits", "stakes": "сорвать замок"}), extra)
}

fn roll(extra: Value, faces: &[u32]) -> Value {
    fields(&play(&mut battle(), ash(extra), faces))
}

// 1. The trait comes from the sheet.

#[test]
fn the_trait_value_is_the_sheets_and_may_not_be_sent() {
    // 2 + 3 + brawn 2 = 7; + cool −1 = 4; + grit 0 = 5 (a 0 on the sheet is given).
    assert_eq!(roll(json!({"trait": "brawn"}), &[2, 3])["total"], 7);
    assert_eq!(roll(json!({"trait": "cool"}), &[2, 3])["total"], 4);
    assert_eq!(roll(json!({"trait": "grit"}), &[2, 3])["total"], 5);
    for value in [0, 1, -2] {
        let refused = rejection(&battle(), ash(json!({"trait_value": value})), &[2, 3]);
        assert_eq!(refused, Rejection::TraitValueFromSheet);
        assert_eq!(refused.to_string(), "@2: the trait value comes from the sheet");
    }
}

#[test]
fn a_trait_the_sheet_does_not_give_is_refused() {
    // charm is one of the six, but ash's sheet does not give it.
    let refused = rejection(&battle(), ash(json!({"trait": "charm"})), &[2, 3]);
    assert_eq!(refused, Rejection::TraitNotOnSheet { actor: "ash".into(), name: "charm".into() });
    assert_eq!(refused.to_string(), "the actor's sheet has no such trait");
    // misty gives only grace.
    let misty = json!({"type": "move", "actor": "misty", "trait": "wits", "stakes": "s"});
    assert!(matches!(rejection(&battle(), misty, &[2, 3]), Rejection::TraitNotOnSheet { .. }));
    // A sheet with no traits at all gives none.
    let bare = open("pbta-2d6@2", json!([{"id": "brock"}]));
    let brock = json!({"type": "move", "actor": "brock", "trait": "brawn", "stakes": "s"});
    assert!(matches!(rejection(&bare, brock, &[2, 3]), Rejection::TraitNotOnSheet { .. }));
}

#[test]
fn an_unknown_trait_and_an_unknown_actor_are_refused() {
    let refused = rejection(&battle(), ash(json!({"trait": "luck"})), &[2, 3]);
    assert_eq!(refused, Rejection::NotATrait { name: "luck".into() });
    assert_eq!(refused.to_string(), "unknown trait");
    assert!(matches!(
        rejection(&battle(), ash(json!({"actor": "gary"})), &[2, 3]),
        Rejection::UnknownParticipant { .. }
    ));
}

// 2. The stakes are set before the roll.

#[test]
fn stakes_are_required_and_not_blank() {
    let missing = json!({"type": "move", "actor": "ash", "trait": "wits"});
    assert_eq!(rejection(&battle(), missing, &[2, 3]), Rejection::StakesRequired);
    for blank in ["", " ", "\t\n "] {
        let refused = rejection(&battle(), ash(json!({"stakes": blank})), &[2, 3]);
        assert_eq!(refused, Rejection::StakesRequired, "{blank:?}");
        assert_eq!(refused.to_string(), "stakes are required");
    }
    // 2 + 3 + wits 1 = 6.
    assert_eq!(roll(json!({"stakes": " x "}), &[2, 3])["total"], 6);
}

// 3. Help comes from someone else.

#[test]
fn helpers_are_others_each_once() {
    for helpers in
        [json!(["ash"]), json!(["pikachu", "ash"]), json!(["misty", "misty"]), json!(["pikachu", "brock", "pikachu"])]
    {
        let refused = rejection(&battle(), ash(json!({"helpers": helpers})), &[2, 3]);
        assert!(matches!(refused, Rejection::HelpersNotOthers { .. }), "{helpers}");
        assert_eq!(refused.to_string(), "helpers must be others, each once");
    }
    // Helpers need not be participants (a partner Pokémon): 2 + 3 + 1 + 1 = 7.
    let helped = roll(json!({"helpers": ["pikachu", "misty"]}), &[2, 3]);
    assert_eq!(helped, json!({"result": "success_with_cost", "total": 7, "help": 1, "exposed": ["pikachu", "misty"]}));
}

// 4. Only what goes wrong exposes the helpers.

#[test]
fn exposed_on_each_band() {
    let helpers = json!({"helpers": ["pikachu"]});
    // 4 + 4 + 1 + 1 = 10: full success, nobody exposed.
    assert_eq!(
        roll(helpers.clone(), &[4, 4]),
        json!({"result": "full_success", "total": 10, "help": 1, "exposed": []})
    );
    // 3 + 4 + 1 + 1 = 9 and 2 + 3 + 1 + 1 = 7: success with a cost, the helper exposed.
    for (faces, total) in [([3, 4], 9), ([2, 3], 7)] {
        assert_eq!(
            roll(helpers.clone(), &faces),
            json!({"result": "success_with_cost", "total": total, "help": 1, "exposed": ["pikachu"]})
        );
    }
    // 2 + 2 + 1 + 1 = 6: a miss, the helper exposed.
    assert_eq!(
        roll(helpers.clone(), &[2, 2]),
        json!({"result": "miss", "total": 6, "help": 1, "exposed": ["pikachu"]})
    );
    // Without helpers nobody is exposed on any band: 6 + 6 + 1 = 13, 1 + 1 + 1 = 3.
    assert_eq!(roll(json!({}), &[6, 6])["exposed"], json!([]));
    assert_eq!(roll(json!({}), &[1, 1])["exposed"], json!([]));
}

#[test]
fn under_v1_the_same_moves_are_allowed_and_helpers_always_exposed() {
    let mut v1 = open("pbta-2d6@1", json!([{"id": "ash", "traits": {"wits": 1}}]));
    // @1: trait_value 3 overrides; no stakes; the actor helps; 4 + 4 + 3 + 1 = 12, exposed anyway.
    let action = json!({"type": "move", "actor": "ash", "trait": "charm", "trait_value": 3, "helpers": ["ash", "ash"]});
    assert_eq!(
        fields(&play(&mut v1, action, &[4, 4])),
        json!({"result": "full_success", "total": 12, "help": 1, "exposed": ["ash", "ash"]})
    );
}

#[test]
fn checks_run_in_order() {
    // actor, trait_value, unknown trait, sheet, stakes, helpers: each move
    // breaks every later rule too.
    let cases = [
        (json!({"actor": "gary", "trait_value": 1}), "`gary` is not a participant"),
        (json!({"trait_value": 1, "trait": "luck"}), "@2: the trait value comes from the sheet"),
        (json!({"trait": "luck", "stakes": ""}), "unknown trait"),
        (json!({"trait": "charm", "stakes": "", "helpers": ["ash"]}), "the actor's sheet has no such trait"),
        (json!({"stakes": "", "helpers": ["ash"]}), "stakes are required"),
        (json!({"helpers": ["ash"]}), "helpers must be others, each once"),
    ];
    for (extra, message) in cases {
        let refused = rejection(&battle(), ash(extra.clone()), &[2, 3]);
        assert!(refused.to_string().contains(message), "{extra}: {refused}");
    }
}

#[test]
fn summaries_share_the_risk_only_when_it_goes_wrong() {
    let full = resolve(&battle(), ash(json!({"helpers": ["pikachu"]})), &[4, 4]).expect("resolves");
    assert_eq!(full.summary.en, "ash, wits: full success (10); helped by pikachu");
    assert_eq!(full.summary.ru, "ash, смекалка: полный успех (10); помогали pikachu");
    let cost = resolve(&battle(), ash(json!({"helpers": ["pikachu"]})), &[3, 4]).expect("resolves");
    assert_eq!(cost.summary.en, "ash, wits: success at a cost (9); helped by pikachu, who share the risk");
    assert_eq!(cost.summary.ru, "ash, смекалка: успех с ценой (9); помогали pikachu — они разделяют риск");
}
