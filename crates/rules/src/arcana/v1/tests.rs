//! docs/rules.md §2 boundary by boundary; expected outcome fields and numbers
//! worked out by hand from its tables. The wording of the forum summaries in
//! `summaries_name_the_ability_and_the_roll` is the code's own, locked here
//! (docs/rules.md §5.3 fixes no words); only the numbers in it come from the
//! tables.

use serde_json::{Value, json};

use super::*;
use crate::arcana::CastResult::{CriticalFailure, CriticalSuccess, Failure, OrdinaryFailure, Success};
use crate::test_support::{fields, open, play, rejection, resolve, with_fields};

fn battle() -> Battle {
    open(
        "arcana-2d10@1",
        json!([
            {"id": "mage", "abilities": {"Ареометизм": {"per_episode": 3}, "Огненный шар": {}}},
            {"id": "necro", "abilities": {"Рука крови": {"per_episode": 2}}}
        ]),
    )
}

fn cast(actor: &str, points: i64, extra: Value) -> Value {
    with_fields(json!({"type": "cast", "actor": actor, "skill_points": points, "post": "p1"}), extra)
}

fn outcome(action: Value, faces: &[u32]) -> Value {
    fields(&play(&mut battle(), action, faces))
}

#[test]
fn specialization_bonus_boundaries() {
    let table = [(1, 0), (2, 1), (3, 1), (4, 1), (5, 2), (6, 2), (7, 2), (8, 3), (9, 3), (10, 4), (11, 4), (12, 4)];
    for (points, bonus) in table {
        assert_eq!(specialization_bonus(points), bonus, "{points} points");
        // Through a cast: 5 + 5 = 10 never decides anything special here.
        let total = outcome(cast("mage", points, json!({})), &[5, 5])["total_skill"].clone();
        assert_eq!(total, json!(points + bonus), "{points} points");
        let total = outcome(cast("mage", points, json!({"specialization_matches": false})), &[5, 5]);
        assert_eq!(total["total_skill"], json!(points), "{points} points without the specialization");
    }
}

#[test]
fn total_skill_adds_points_specialization_artifact_berserk_and_aux() {
    // The seed's examples: 9 + 3 + 2 = 14, and with berserk +2, 16.
    assert_eq!(outcome(cast("mage", 9, json!({"artifact_bonus": 2})), &[6, 5])["total_skill"], 14);
    assert_eq!(outcome(cast("mage", 9, json!({"artifact_bonus": 2, "berserk_bonus": 2})), &[6, 5])["total_skill"], 16);
    assert_eq!(outcome(cast("mage", 9, json!({"aux_bonus": 1})), &[6, 5])["total_skill"], 13);
    // Only one artifact counts: a list is its maximum.
    assert_eq!(outcome(cast("mage", 9, json!({"artifact_bonus": [1, 3, 2]})), &[6, 5])["total_skill"], 15);
    assert_eq!(outcome(cast("mage", 9, json!({"artifact_bonus": []})), &[6, 5])["total_skill"], 12);
}

#[test]
fn result_table_boundaries() {
    // (sum, points, total_skill) → result, checked in docs/rules.md's order.
    let rows = [
        ((2, 1, 1), CriticalSuccess),
        ((2, 12, 30), CriticalSuccess),
        ((20, 12, 30), OrdinaryFailure),
        ((20, 12, 16), OrdinaryFailure),
        ((20, 11, 30), CriticalFailure),
        ((20, 1, 1), CriticalFailure),
        ((19, 12, 19), Success),
        ((19, 12, 25), Success),
        ((19, 12, 18), OrdinaryFailure),
        ((19, 11, 19), OrdinaryFailure),
        ((19, 11, 25), OrdinaryFailure),
        ((11, 9, 11), Success),
        ((12, 9, 11), Failure),
        ((3, 1, 3), Success),
        ((4, 1, 3), Failure),
        ((18, 12, 18), Success),
    ];
    for ((sum, points, total), result) in rows {
        assert_eq!(cast_result(sum, points, total), result, "sum {sum}, {points} points, total {total}");
    }
}

#[test]
fn boundaries_through_whole_casts() {
    // 2: critical success whatever the skill.
    assert_eq!(
        outcome(cast("mage", 1, json!({})), &[1, 1]),
        json!({"result": "critical_success", "sum": 2, "total_skill": 1, "concentration_broken": false})
    );
    // 19 with mastery: 12 points + 4 + 3 = 19 ≥ 19, an ordinary success.
    assert_eq!(outcome(cast("mage", 12, json!({"artifact_bonus": 3})), &[10, 9])["result"], "success");
    // 19 with 12 points but a total of 18 (no specialization, artifact 6).
    let short = cast("mage", 12, json!({"specialization_matches": false, "artifact_bonus": 6}));
    assert_eq!(outcome(short, &[10, 9])["result"], "ordinary_failure");
    // 19 without 12 points, however high the total.
    assert_eq!(outcome(cast("mage", 11, json!({"artifact_bonus": 9})), &[9, 10])["result"], "ordinary_failure");
    // 20 with and without 12 points.
    assert_eq!(outcome(cast("mage", 12, json!({})), &[10, 10])["result"], "ordinary_failure");
    assert_eq!(outcome(cast("mage", 11, json!({})), &[10, 10])["result"], "critical_failure");
    // A sum exactly equal to the total succeeds; one more fails.
    assert_eq!(outcome(cast("mage", 7, json!({})), &[4, 5])["result"], "success");
    assert_eq!(outcome(cast("mage", 7, json!({})), &[5, 5])["result"], "failure");
}

#[test]
fn skill_points_outside_one_to_twelve_are_rejected() {
    for points in [0, 13, -1] {
        let refused = rejection(&battle(), cast("mage", points, json!({})), &[5, 5]);
        assert_eq!(refused, Rejection::SkillPointsOutOfRange { points });
    }
}

#[test]
fn ordinary_and_critical_failures_break_concentration_for_the_post() {
    for faces in [[10, 9], [10, 10]] {
        let mut battle = battle();
        assert_eq!(fields(&play(&mut battle, cast("mage", 5, json!({})), &faces))["concentration_broken"], true);
        let again = rejection(&battle, cast("mage", 5, json!({})), &[1, 1]);
        assert_eq!(again.to_string(), "concentration broken in this post");
        let defend = json!({"type": "defend", "actor": "mage", "skill_points": 5, "post": "p1", "against": 0});
        assert_eq!(rejection(&battle, defend, &[1, 1]), Rejection::ConcentrationBroken);
        // Another post, or another actor in the same post, is unaffected.
        resolve(&battle, cast("mage", 5, json!({"post": "p2"})), &[1, 1]).expect("another post");
        resolve(&battle, cast("necro", 5, json!({})), &[1, 1]).expect("another actor");
        // A new episode does not mend a broken post.
        play(&mut battle, json!({"type": "start_episode"}), &[]);
        assert_eq!(rejection(&battle, cast("mage", 5, json!({})), &[1, 1]), Rejection::ConcentrationBroken);
    }
    let mut battle = battle();
    assert_eq!(fields(&play(&mut battle, cast("mage", 5, json!({})), &[10, 8]))["concentration_broken"], false);
    resolve(&battle, cast("mage", 5, json!({})), &[1, 1]).expect("a plain failure keeps concentration");
}

#[test]
fn per_episode_limits_count_every_use_and_reset_with_the_episode() {
    let mut battle = battle();
    let field = |post: &str| cast("mage", 5, json!({"ability": "Ареометизм", "post": post}));
    // Three uses whatever their result (a failure, a success, a critical success).
    play(&mut battle, field("p1"), &[9, 9]);
    play(&mut battle, field("p2"), &[2, 3]);
    play(
        &mut battle,
        json!({"type": "defend", "actor": "mage", "ability": "Ареометизм", "skill_points": 5,
        "post": "p3", "against": 1}),
        &[1, 1],
    );
    let refused = rejection(&battle, field("p4"), &[2, 3]);
    assert_eq!(refused, Rejection::AbilityUsedUp { actor: "mage".into(), ability: "Ареометизм".into(), limit: 3 });
    // Unlimited abilities, and abilities not on the actor's own sheet, have no limit.
    for _ in 0..5 {
        play(&mut battle, cast("mage", 5, json!({"ability": "Огненный шар", "post": "p5"})), &[2, 3]);
        play(&mut battle, cast("mage", 5, json!({"ability": "Рука крови", "post": "p5"})), &[2, 3]);
    }
    play(&mut battle, json!({"type": "start_episode"}), &[]);
    assert_eq!(battle.arcana().map(|state| state.episode), Some(1));
    resolve(&battle, field("p4"), &[2, 3]).expect("a new episode resets the counter");
}

#[test]
fn exchange_of_blows() {
    // (attack dice, defence dice) → attack lands
    let rows = [
        ([2, 3], [9, 9], true),  // success against a failed defence
        ([2, 3], [2, 3], false), // success stopped by a successful defence
        ([2, 3], [1, 1], false), // and by a critical one
        ([1, 1], [2, 3], true),  // a critical success beats an ordinary success
        ([1, 1], [1, 1], false), // "2" against "2"
        ([9, 9], [9, 9], false), // a failed attack never lands
        ([10, 10], [9, 9], false),
    ];
    for (attack_faces, defence_faces, lands) in rows {
        let mut battle = battle();
        play(&mut battle, cast("mage", 8, json!({})), &attack_faces);
        let defend = json!({"type": "defend", "actor": "necro", "skill_points": 8, "post": "p9", "against": 0});
        let outcome = fields(&play(&mut battle, defend, &defence_faces));
        assert_eq!(outcome["attack_lands"], lands, "attack {attack_faces:?}, defence {defence_faces:?}");
        assert_eq!(outcome["sum"], defence_faces[0] + defence_faces[1]);
    }
    assert!(attack_lands(Success, Failure));
    assert!(attack_lands(CriticalSuccess, Success));
    assert!(!attack_lands(CriticalSuccess, CriticalSuccess));
    assert!(!attack_lands(OrdinaryFailure, CriticalFailure));
}

#[test]
fn a_defence_must_refer_to_a_resolved_cast() {
    let mut battle = battle();
    let defend =
        |against: u64| json!({"type": "defend", "actor": "necro", "skill_points": 8, "post": "p9", "against": against});
    assert_eq!(rejection(&battle, defend(0), &[1, 2]), Rejection::NotACast { against: 0 });
    play(&mut battle, cast("mage", 8, json!({})), &[2, 3]);
    play(&mut battle, defend(0), &[9, 9]);
    play(&mut battle, json!({"type": "start_episode"}), &[]);
    assert_eq!(rejection(&battle, defend(1), &[1, 2]), Rejection::NotACast { against: 1 });
    assert_eq!(rejection(&battle, defend(2), &[1, 2]), Rejection::NotACast { against: 2 });
    assert_eq!(rejection(&battle, defend(7), &[1, 2]), Rejection::NotACast { against: 7 });
}

#[test]
fn summaries_name_the_ability_and_the_roll() {
    let resolution = resolve(&battle(), cast("mage", 7, json!({"ability": "Огненный шар"})), &[10, 9]).expect("ok");
    assert_eq!(
        resolution.summary.ru,
        "mage, «Огненный шар»: обычная неудача — выпало 19 при суммарном скилле 9; концентрация сбита до конца поста"
    );
    assert_eq!(
        resolution.summary.en,
        "mage, Огненный шар: ordinary failure — rolled 19 against total skill 9; \
         concentration broken for the rest of the post"
    );
    let resolution = resolve(&battle(), cast("necro", 3, json!({})), &[1, 1]).expect("ok");
    assert_eq!(resolution.summary.en, "necro, skill check: critical success — rolled 2 against total skill 4");
}
