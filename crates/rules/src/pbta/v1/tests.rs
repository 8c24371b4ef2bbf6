//! docs/rules.md §4: the three bands and where the trait comes from.

use serde_json::{Value, json};

use super::*;
use crate::error::Rejection;
use crate::test_support::{fields, open, play, rejection, with_fields};

fn battle() -> Battle {
    open("pbta-2d6@1", json!([{"id": "ash", "traits": {"brawn": 2, "grit": -1}}, {"id": "misty"}]))
}

fn roll(extra: Value, faces: &[u32]) -> Value {
    let action =
        with_fields(json!({"type": "move", "actor": "ash", "trait": "wits", "stakes": "сорвать замок"}), extra);
    fields(&play(&mut battle(), action, faces))
}

#[test]
fn bands_at_six_seven_nine_and_ten() {
    for (faces, total, result) in [
        ([1, 1], 2, "miss"),
        ([3, 3], 6, "miss"),
        ([3, 4], 7, "success_with_cost"),
        ([4, 5], 9, "success_with_cost"),
        ([4, 6], 10, "full_success"),
        ([6, 6], 12, "full_success"),
    ] {
        assert_eq!(roll(json!({}), &faces), json!({"result": result, "total": total, "help": 0, "exposed": []}));
    }
    assert_eq!(band(6), MoveResult::Miss);
    assert_eq!(band(7), MoveResult::SuccessWithCost);
    assert_eq!(band(9), MoveResult::SuccessWithCost);
    assert_eq!(band(10), MoveResult::FullSuccess);
    assert_eq!(band(-3), MoveResult::Miss);
}

#[test]
fn the_trait_comes_from_the_action_then_the_sheet_then_zero() {
    assert_eq!(roll(json!({"trait": "brawn"}), &[2, 3])["total"], 7);
    assert_eq!(roll(json!({"trait": "grit"}), &[2, 3])["total"], 4);
    assert_eq!(roll(json!({"trait": "brawn", "trait_value": -2}), &[2, 3])["total"], 3);
    assert_eq!(roll(json!({"trait": "charm"}), &[2, 3])["total"], 5);
    let misty = json!({"type": "move", "actor": "misty", "trait": "cool"});
    assert_eq!(fields(&play(&mut battle(), misty, &[4, 4]))["total"], 8);
}

#[test]
fn any_help_is_plus_one_and_helpers_share_the_risk() {
    assert_eq!(
        roll(json!({"helpers": ["pikachu"]}), &[3, 3]),
        json!({"result": "success_with_cost", "total": 7, "help": 1, "exposed": ["pikachu"]})
    );
    let crowd = roll(json!({"helpers": ["pikachu", "brock", "misty"]}), &[3, 3]);
    assert_eq!((&crowd["total"], &crowd["help"]), (&json!(7), &json!(1)));
    assert_eq!(crowd["exposed"], json!(["pikachu", "brock", "misty"]));
}

#[test]
fn unknown_traits_and_actors_are_rejected() {
    let action = json!({"type": "move", "actor": "ash", "trait": "luck"});
    assert_eq!(rejection(&battle(), action, &[3, 3]), Rejection::UnknownTrait { name: "luck".into() });
    let action = json!({"type": "move", "actor": "brock", "trait": "wits"});
    assert!(matches!(rejection(&battle(), action, &[3, 3]), Rejection::UnknownParticipant { .. }));
}
