//! docs/rules.md §6.2 item by item, each against `@1` where they differ. The
//! expected values are worked out by hand from docs/rules.md §2.1's tables (the
//! arithmetic is in the comments), not taken from this code's output.

use serde_json::{Value, json};

use crate::error::{OpenError, Rejection};
use crate::model::sheet::AbilitySheet;
use crate::model::state::Battle;
use crate::test_support::{fields, open, play, rejection, with_fields};
use crate::{OpenBattle, RulesetId};

const SHEETS: &str = r#"[
    {"id": "mage", "abilities": {
        "Огненный шар": {},
        "Меч": {"magical": false},
        "Щит": {"magical": false, "min_points": 3},
        "Рука крови": {"min_points": 5, "per_episode": 1}
    }},
    {"id": "necro"}
]"#;

fn battle_of(ruleset: &str) -> Battle {
    open(ruleset, serde_json::from_str(SHEETS).expect("sheets"))
}

fn battle() -> Battle {
    battle_of("arcana-2d10@2")
}

/// The `@1` battle with the same sheets, less what `@1` does not know.
fn battle_v1() -> Battle {
    open(
        "arcana-2d10@1",
        json!([{"id": "mage", "abilities": {"Огненный шар": {}, "Меч": {}, "Рука крови": {"per_episode": 1}}}, {"id": "necro"}]),
    )
}

fn cast(actor: &str, points: i64, post: &str, extra: Value) -> Value {
    with_fields(json!({"type": "cast", "actor": actor, "skill_points": points, "post": post}), extra)
}

fn with(ability: &str) -> Value {
    json!({"ability": ability})
}

fn defend(actor: &str, points: i64, post: &str, against: u64, extra: Value) -> Value {
    let mut defend = cast(actor, points, post, extra);
    defend["type"] = json!("defend");
    defend["against"] = json!(against);
    defend
}

fn open_battle(ruleset: &str, participants: Value) -> Result<Battle, OpenError> {
    let opening: OpenBattle =
        serde_json::from_value(json!({"ruleset": ruleset, "participants": participants})).expect("an opening");
    Battle::open(&opening)
}

// §6.2.1 — abilities declare what they need.

#[test]
fn an_ability_below_its_min_points_is_refused() {
    let battle = battle();
    let refused = rejection(&battle, cast("mage", 4, "p1", with("Рука крови")), &[3, 4]);
    assert_eq!(refused, Rejection::BelowMinPoints { ability: "Рука крови".into(), min_points: 5, points: 4 });
    assert_eq!(refused.to_string(), "ability needs more skill points");
    // At 5 points: total 5 + 2 (5–7 points) = 7; 3 + 4 = 7 ≤ 7: success.
    let outcome = fields(&play(&mut battle.clone(), cast("mage", 5, "p1", with("Рука крови")), &[3, 4]));
    assert_eq!(outcome, json!({"result": "success", "sum": 7, "total_skill": 7, "concentration_broken": false}));
}

#[test]
fn min_points_counts_the_skill_points_not_the_bonuses() {
    // 4 points + 5 artifact = total 4 + 1 + 5 = 10, still 4 points < 5.
    let action = cast("mage", 4, "p1", json!({"ability": "Рука крови", "artifact_bonus": 5}));
    assert!(matches!(rejection(&battle(), action, &[1, 1]), Rejection::BelowMinPoints { .. }));
}

#[test]
fn a_defence_needs_the_points_too() {
    let mut battle = battle();
    // necro casts a plain check: 6 points, total 6 + 2 = 8; 2 + 3 = 5 ≤ 8: success.
    play(&mut battle, cast("necro", 6, "p1", json!({})), &[2, 3]);
    let refused = rejection(&battle, defend("mage", 2, "p2", 0, with("Щит")), &[1, 1]);
    assert_eq!(refused, Rejection::BelowMinPoints { ability: "Щит".into(), min_points: 3, points: 2 });
    // At 3 points: total 3 + 1 = 4; 1 + 1 = 2: critical success, which stops a plain success.
    let outcome = fields(&play(&mut battle, defend("mage", 3, "p2", 0, with("Щит")), &[1, 1]));
    assert_eq!(
        outcome,
        json!({"result": "critical_success", "sum": 2, "total_skill": 4, "concentration_broken": false,
               "attack_lands": false})
    );
}

#[test]
fn an_ability_off_the_sheet_has_no_minimum() {
    // necro's sheet lists nothing: 1 point is enough; total 1 + 0 = 1; 1 + 1 = 2: critical success.
    let outcome = fields(&play(&mut battle(), cast("necro", 1, "p1", with("Телепорт")), &[1, 1]));
    assert_eq!(outcome["result"], "critical_success");
}

#[test]
fn a_refused_use_counts_toward_nothing_and_min_points_comes_before_the_limit() {
    let mut battle = battle();
    let _ = rejection(&battle, cast("mage", 4, "p1", with("Рука крови")), &[3, 4]);
    // The one use of the episode is still there.
    play(&mut battle, cast("mage", 5, "p1", with("Рука крови")), &[3, 4]);
    assert!(matches!(
        rejection(&battle, cast("mage", 5, "p2", with("Рука крови")), &[3, 4]),
        Rejection::AbilityUsedUp { limit: 1, .. }
    ));
    // Used up and below its minimum: the minimum is named.
    assert!(matches!(
        rejection(&battle, cast("mage", 4, "p2", with("Рука крови")), &[3, 4]),
        Rejection::BelowMinPoints { .. }
    ));
}

#[test]
fn against_comes_before_min_points_and_has_its_own_wording() {
    let battle = battle();
    let refused = rejection(&battle, defend("mage", 2, "p1", 9, with("Щит")), &[1, 1]);
    assert_eq!(refused, Rejection::AgainstNotACast { against: 9 });
    assert_eq!(refused.to_string(), "against is not a resolved cast");
    // `@1` words it as it always did.
    let refused = rejection(&battle_v1(), defend("mage", 2, "p1", 9, json!({})), &[1, 1]);
    assert_eq!(refused.to_string(), "against 9: not a resolved cast of this battle");
}

#[test]
fn sheets_check_min_points_and_default_to_magical() {
    for min_points in [0, 13] {
        let sheets = json!([{"id": "mage", "abilities": {"x": {"min_points": min_points}}}]);
        assert_eq!(
            open_battle("arcana-2d10@2", sheets),
            Err(OpenError::MinPointsOutOfRange { id: "mage".into(), ability: "x".into(), min_points })
        );
    }
    let sheets =
        json!([{"id": "mage", "abilities": {"a": {"min_points": 1}, "b": {"min_points": 12, "magical": true}}}]);
    let battle = open_battle("arcana-2d10@2", sheets).expect("1 and 12 are in range");
    assert!(battle.participant("mage").is_some_and(|mage| mage.abilities.values().all(AbilitySheet::is_magical)));
    assert!(AbilitySheet::default().is_magical());
    assert!(!AbilitySheet { magical: Some(false), ..AbilitySheet::default() }.is_magical());
    // An `@1` sheet written before `@2` serialises as it always did.
    let plain = AbilitySheet { per_episode: Some(3), ..AbilitySheet::default() };
    assert_eq!(serde_json::to_value(&plain).expect("serialises"), json!({"per_episode": 3}));
}

#[test]
fn v1_sheets_refuse_what_only_v2_reads() {
    for (field, sheet) in [("magical", json!({"magical": false})), ("min_points", json!({"min_points": 5}))] {
        let sheets = json!([{"id": "mage", "abilities": {"x": sheet}}]);
        assert_eq!(
            open_battle("arcana-2d10@1", sheets),
            Err(OpenError::AbilityFieldNotInVersion {
                id: "mage".into(),
                ability: "x".into(),
                field,
                ruleset: RulesetId::Arcana2d10V1
            })
        );
    }
}

// §6.2.2 — broken concentration blocks magic only.

/// mage breaks its concentration in post p1: 6 points, total 6 + 2 = 8;
/// 10 + 9 = 19 (not 12 points): ordinary failure.
fn broken_in_p1(mut battle: Battle) -> Battle {
    let outcome = fields(&play(&mut battle, cast("mage", 6, "p1", with("Огненный шар")), &[10, 9]));
    assert_eq!(
        outcome,
        json!({"result": "ordinary_failure", "sum": 19, "total_skill": 8, "concentration_broken": true})
    );
    battle
}

#[test]
fn broken_concentration_refuses_magical_abilities_in_that_post() {
    let battle = broken_in_p1(battle());
    let refused = rejection(&battle, cast("mage", 6, "p1", with("Огненный шар")), &[2, 3]);
    assert_eq!(refused, Rejection::ConcentrationBrokenForMagic);
    assert_eq!(refused.to_string(), "concentration broken in this post: no magical abilities");
    // An ability off the sheet is magical.
    assert_eq!(
        rejection(&battle, cast("mage", 6, "p1", with("Телепорт")), &[2, 3]),
        Rejection::ConcentrationBrokenForMagic
    );
    // Another post is untouched: 2 + 3 = 5 ≤ 8: success.
    assert_eq!(
        fields(&play(&mut battle.clone(), cast("mage", 6, "p2", with("Огненный шар")), &[2, 3]))["result"],
        "success"
    );
}

#[test]
fn broken_concentration_allows_non_magical_abilities_and_plain_checks() {
    let mut battle = broken_in_p1(battle());
    // Меч is not magical: 6 points, total 8; 2 + 3 = 5 ≤ 8: success.
    let outcome = fields(&play(&mut battle, cast("mage", 6, "p1", with("Меч")), &[2, 3]));
    assert_eq!(outcome, json!({"result": "success", "sum": 5, "total_skill": 8, "concentration_broken": false}));
    // A plain skill check: 4 points, total 4 + 1 = 5; 3 + 3 = 6 > 5: failure.
    let outcome = fields(&play(&mut battle, cast("mage", 4, "p1", json!({})), &[3, 3]));
    assert_eq!(outcome, json!({"result": "failure", "sum": 6, "total_skill": 5, "concentration_broken": false}));
    // A defence with a non-magical ability against the broken cast (version 0): Меч at 6 points,
    // total 8, 4 + 4 = 8 ≤ 8: success; the attack failed anyway, so it does not land.
    let outcome = fields(&play(&mut battle, defend("mage", 6, "p1", 0, with("Меч")), &[4, 4]));
    assert_eq!((&outcome["result"], &outcome["attack_lands"]), (&json!("success"), &json!(false)));
}

#[test]
fn under_v1_broken_concentration_refuses_every_use() {
    let battle = broken_in_p1(battle_v1());
    assert_eq!(rejection(&battle, cast("mage", 4, "p1", json!({})), &[3, 3]), Rejection::ConcentrationBroken);
    assert_eq!(rejection(&battle, cast("mage", 6, "p1", with("Меч")), &[3, 3]), Rejection::ConcentrationBroken);
}

#[test]
fn any_use_breaks_concentration() {
    // A non-magical ability: 6 points, 10 + 10 = 20 (not 12 points): critical failure.
    let mut battle = battle();
    let outcome = fields(&play(&mut battle, cast("mage", 6, "p1", with("Меч")), &[10, 10]));
    assert_eq!((&outcome["result"], &outcome["concentration_broken"]), (&json!("critical_failure"), &json!(true)));
    assert_eq!(
        rejection(&battle, cast("mage", 6, "p1", with("Огненный шар")), &[1, 2]),
        Rejection::ConcentrationBrokenForMagic
    );
    // A plain check: 6 points, 9 + 10 = 19: ordinary failure.
    let mut battle = self::battle();
    let outcome = fields(&play(&mut battle, cast("mage", 6, "p3", json!({})), &[9, 10]));
    assert_eq!((&outcome["result"], &outcome["concentration_broken"]), (&json!("ordinary_failure"), &json!(true)));
    assert_eq!(
        rejection(&battle, cast("mage", 6, "p3", with("Огненный шар")), &[1, 2]),
        Rejection::ConcentrationBrokenForMagic
    );
    // A non-magical use that fails badly again in the broken post says so too (our reading).
    let outcome = fields(&play(&mut battle, cast("mage", 6, "p3", with("Меч")), &[10, 10]));
    assert_eq!((&outcome["result"], &outcome["concentration_broken"]), (&json!("critical_failure"), &json!(true)));
    // A new episode does not mend a post.
    play(&mut battle, json!({"type": "start_episode"}), &[]);
    assert_eq!(
        rejection(&battle, cast("mage", 6, "p3", with("Огненный шар")), &[1, 2]),
        Rejection::ConcentrationBrokenForMagic
    );
}

#[test]
fn min_points_is_checked_before_concentration() {
    let battle = broken_in_p1(battle());
    assert!(matches!(
        rejection(&battle, cast("mage", 4, "p1", with("Рука крови")), &[1, 2]),
        Rejection::BelowMinPoints { .. }
    ));
}

// §6.2.3 — the two exemptions at 12 points do not chain.

#[test]
fn a_twenty_at_twelve_points_is_an_ordinary_failure_whatever_the_total() {
    // 12 points + 4 specialization + 4 artifact = total 20; 10 + 10 = 20: the
    // "sum = 20 and points = 12" row comes before "sum ≤ total_skill".
    let outcome = fields(&play(&mut battle(), cast("mage", 12, "p1", json!({"artifact_bonus": 4})), &[10, 10]));
    assert_eq!(
        outcome,
        json!({"result": "ordinary_failure", "sum": 20, "total_skill": 20, "concentration_broken": true})
    );
    // Total 12 + 4 = 16: the same.
    let outcome = fields(&play(&mut battle(), cast("mage", 12, "p1", json!({})), &[10, 10]));
    assert_eq!(outcome["result"], "ordinary_failure");
    // The 19 exemption still holds alone: 12 points, total 12 + 4 + 3 = 19; 10 + 9 = 19 ≤ 19: success.
    let outcome = fields(&play(&mut battle(), cast("mage", 12, "p1", json!({"artifact_bonus": 3})), &[10, 9]));
    assert_eq!(outcome, json!({"result": "success", "sum": 19, "total_skill": 19, "concentration_broken": false}));
    // … and without total ≥ 19 a 19 is an ordinary failure: total 16.
    assert_eq!(fields(&play(&mut battle(), cast("mage", 12, "p1", json!({})), &[10, 9]))["result"], "ordinary_failure");
    // At 11 points a 20 is a critical failure.
    assert_eq!(
        fields(&play(&mut battle(), cast("mage", 11, "p1", json!({})), &[10, 10]))["result"],
        "critical_failure"
    );
}
