//! The battle fold through the public API, as the resolver uses it:
//! opening, the dice an action needs, resolving, folding recorded outcomes,
//! rulings with overrides, disputes, free rolls and replay to a version.
//! The summaries' wording checked here is the code's own, locked (docs/rules.md
//! §5.3 asks for summaries but fixes no words).

use rules::{
    Action, Battle, DiceError, DiceRequest, OpenBattle, OpenError, Outcome, Rejection, ResolveError, RulesetError,
    RulesetId,
};
use serde_json::{Value, json};

fn open(ruleset: &str, participants: Value) -> Result<Battle, OpenError> {
    let opening: OpenBattle =
        serde_json::from_value(json!({"ruleset": ruleset, "participants": participants})).expect("an opening");
    Battle::open(&opening)
}

fn pokemon() -> Battle {
    open("pokemon-d6@1", json!([{"id": "pikachu"}, {"id": "meowth"}])).expect("opens")
}

fn action(json: Value) -> Action {
    serde_json::from_value(json).expect("a valid action")
}

fn fields(outcome: &Outcome) -> Value {
    serde_json::to_value(outcome).expect("serialises")
}

fn dodge(faces: u32) -> (Action, Vec<u32>) {
    (action(json!({"type": "dodge", "actor": "pikachu", "incoming_damage": 40})), vec![faces])
}

/// Resolves each `(action, faces)` at versions 0, 1, 2 …
fn play(mut battle: Battle, steps: &[(Action, Vec<u32>)]) -> Battle {
    for (action, faces) in steps {
        let at = battle.last_version().map_or(0, |last| last + 1);
        battle = battle.resolve(at, action, faces).expect("resolves").battle;
    }
    battle
}

#[test]
fn opening_checks_the_ruleset_and_the_sheets() {
    assert!(matches!(
        open("pokemon-d6@3", json!([{"id": "a"}])),
        Err(OpenError::Ruleset(RulesetError::UnknownVersion { .. }))
    ));
    assert!(matches!(open("go@1", json!([{"id": "a"}])), Err(OpenError::Ruleset(RulesetError::UnknownName { .. }))));
    assert_eq!(open("berserk@1", json!([])), Err(OpenError::NoParticipants));
    assert_eq!(
        open("berserk@1", json!([{"id": "a"}, {"id": "a"}])),
        Err(OpenError::DuplicateParticipant { id: "a".into() })
    );
    assert_eq!(open("berserk@1", json!([{"id": " "}])), Err(OpenError::EmptyId { index: 0 }));
    assert!(matches!(
        open("pbta-2d6@1", json!([{"id": "ash", "traits": {"luck": 2}}])),
        Err(OpenError::UnknownTrait { .. })
    ));
    assert!(matches!(
        open("pokemon-d6@1", json!([{"id": "ash", "traits": {"wits": 2}}])),
        Err(OpenError::SheetPartNotForRuleset { part: "traits", .. })
    ));
    assert!(matches!(
        open("pbta-2d6@1", json!([{"id": "ash", "abilities": {"x": {}}}])),
        Err(OpenError::SheetPartNotForRuleset { part: "abilities", .. })
    ));
    let battle = open("arcana-2d10@1", json!([{"id": "mage", "abilities": {"x": {"per_episode": 1}}}])).expect("opens");
    assert_eq!(battle.ruleset(), RulesetId::Arcana2d10V1);
    assert_eq!(battle.participant("mage").and_then(|p| p.abilities.get("x")).and_then(|a| a.per_episode), Some(1));
}

#[test]
fn an_action_of_another_ruleset_is_rejected() {
    let cast = action(json!({"type": "cast", "actor": "pikachu", "skill_points": 5, "post": "p"}));
    let refused = pokemon().dice_needed(&cast).expect_err("not a pokemon action");
    assert_eq!(refused, Rejection::WrongRuleset { action: "cast", ruleset: RulesetId::PokemonD6V1 });
    assert_eq!(refused.to_string(), "action `cast` is not part of pokemon-d6@1");
}

#[test]
fn wrong_dice_are_errors_and_change_nothing() {
    let battle = pokemon();
    let attack = action(json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Tackle"}));
    assert_eq!(battle.dice_needed(&attack).map(|request| request.expressions()), Ok(vec!["1d6".to_owned()]));
    for faces in [vec![], vec![3, 3], vec![0], vec![7], vec![u32::MAX]] {
        let error = battle.resolve(0, &attack, &faces).expect_err("wrong dice");
        assert!(matches!(error, ResolveError::Dice(DiceError::Count { .. } | DiceError::Face { .. })), "{faces:?}");
    }
    assert_eq!(battle.last_version(), None);
}

#[test]
fn versions_must_increase() {
    let battle = play(pokemon(), &[dodge(3)]);
    let (again, faces) = dodge(3);
    assert_eq!(battle.resolve(0, &again, &faces).expect_err("stale"), ResolveError::OutOfOrder { at: 0, last: 0 });
    battle.resolve(7, &again, &faces).expect("gaps are fine: journal versions also count dice events");
}

#[test]
fn folding_recorded_outcomes_gives_the_same_battle_as_resolving() {
    let steps = vec![
        (
            action(json!({"type": "status_move", "actor": "meowth", "target": "pikachu", "move": "x",
            "status": "confusion"})),
            vec![6],
        ),
        (
            action(json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Fly", "two_turn": true})),
            vec![],
        ),
        (
            action(json!({"type": "attack", "actor": "meowth", "target": "pikachu", "move": "Fake Out",
            "interrupt": true})),
            vec![6],
        ),
        dodge(5),
        (action(json!({"type": "pass", "actor": "pikachu"})), vec![]),
    ];
    let resolved = play(pokemon(), &steps);
    let mut folded = pokemon();
    for entry in resolved.entries() {
        folded = folded.apply(entry.version, &entry.action, &entry.outcome).expect("folds");
    }
    assert_eq!(folded, resolved);
    let pikachu = resolved.pokemon("pikachu").expect("pikachu");
    // The six broke Fly and flinched pikachu; passing is not a move, so the
    // flinch still waits for pikachu's next move.
    assert_eq!((pikachu.charging.as_deref(), pikachu.flinched, pikachu.dodges_used), (None, true, 1));

    // A recorded outcome of the wrong kind is refused.
    let pass = action(json!({"type": "pass", "actor": "pikachu"}));
    let wrong = resolved.entry(3).expect("the dodge").outcome.clone();
    assert!(matches!(pokemon().apply(0, &pass, &wrong), Err(ResolveError::OutcomeMismatch { .. })));
}

#[test]
fn replay_to_any_version() {
    let battle = play(pokemon(), &[dodge(3), dodge(4), dodge(6), dodge(2)]);
    assert_eq!(battle.pokemon("pikachu").map(|p| p.dodges_used), Some(3));
    for (version, used) in [(0, 1), (1, 2), (2, 2), (3, 3)] {
        let past = battle.as_of(version).expect("replays");
        assert_eq!(past.pokemon("pikachu").map(|p| p.dodges_used), Some(used), "as of {version}");
        assert_eq!(past.last_version(), Some(version));
    }
}

#[test]
fn a_ruling_override_reaches_every_later_action() {
    // Four counted dodges, then the judge rules the first one did not count.
    let battle = play(pokemon(), &[dodge(3), dodge(3), dodge(3), dodge(3)]);
    let ruling = action(json!({"type": "ruling", "judge": "Oak", "refers_to": 0,
        "text": "meowth is too slow to dodge Quick Attack", "override": {"counted": false, "reduction_percent": 0,
        "damage_after": 40}}));
    assert_eq!(battle.dice_needed(&ruling), Ok(DiceRequest::Rolls(vec![])));
    let resolution = battle.resolve(4, &ruling, &[]).expect("a valid ruling");
    assert_eq!(fields(&resolution.outcome), json!({"result": "ruling", "refers_to": 0, "overridden": true}));
    assert_eq!(
        resolution.summary.en,
        "Judge Oak's ruling on action #0: meowth is too slow to dodge Quick Attack (outcome overridden)"
    );
    let battle = resolution.battle;
    assert_eq!(battle.pokemon("pikachu").map(|p| p.dodges_used), Some(3));
    let first = battle.entry(0).expect("the first dodge");
    assert_eq!(fields(&first.outcome)["counted"], true, "the recorded outcome never changes");
    assert_eq!(
        fields(&first.effective),
        json!({"reduction_percent": 0, "counted": false, "dodges_left": 4,
        "damage_after": 40})
    );
    assert_eq!(first.rulings, vec![4]);
    // Two more dodges now fit under the limit of five.
    let battle = play(battle, &[dodge(3), dodge(3)]);
    let (sixth, faces) = dodge(3);
    assert!(matches!(battle.resolve(7, &sixth, &faces), Err(ResolveError::Rejected(Rejection::NoDodgesLeft { .. }))));
    // Replaying to before the ruling gives back the dodge.
    assert_eq!(battle.as_of(3).expect("replays").pokemon("pikachu").map(|p| p.dodges_used), Some(4));
    assert_eq!(battle.as_of(4).expect("replays").pokemon("pikachu").map(|p| p.dodges_used), Some(3));
}

#[test]
fn a_ruling_can_mend_concentration() {
    let battle = open("arcana-2d10@1", json!([{"id": "mage"}])).expect("opens");
    let cast = action(json!({"type": "cast", "actor": "mage", "skill_points": 5, "post": "p1"}));
    let battle = play(battle, &[(cast.clone(), vec![10, 9])]);
    assert!(matches!(battle.dice_needed(&cast), Err(Rejection::ConcentrationBroken)));
    let ruling = action(json!({"type": "ruling", "judge": "gm", "refers_to": 0, "text": "a distraction, not a slip",
        "override": {"result": "failure", "concentration_broken": false}}));
    let battle = battle.resolve(1, &ruling, &[]).expect("rules").battle;
    assert!(battle.dice_needed(&cast).is_ok());
}

#[test]
fn invalid_rulings_and_disputes_are_rejected() {
    let battle = play(pokemon(), &[dodge(3)]);
    let ruling = |refers_to: u64, replacement: Value| {
        action(json!({"type": "ruling", "judge": "Oak", "refers_to": refers_to, "text": "t", "override": replacement}))
    };
    assert_eq!(battle.dice_needed(&ruling(5, json!({}))), Err(Rejection::UnknownReference { refers_to: 5 }));
    // The refused field is named by its path in the override.
    let reason = |replacement: Value| match battle.dice_needed(&ruling(0, replacement)) {
        Err(Rejection::OverrideInvalid { reason, .. }) => reason,
        other => panic!("not an invalid override: {other:?}"),
    };
    assert_eq!(reason(json!({"counted": "yes"})), "override.counted: invalid type: string \"yes\", expected a boolean");
    assert!(reason(json!({"luck": 1})).starts_with("override.luck: unknown field `luck`"));
    let dispute = action(json!({"type": "dispute", "by": "ash", "refers_to": 0, "reason": "meowth is slow"}));
    let resolution = battle.resolve(1, &dispute, &[]).expect("disputes");
    assert_eq!(fields(&resolution.outcome), json!({"result": "disputed", "refers_to": 0}));
    assert_eq!(resolution.summary.ru, "ash оспаривает действие №0: meowth is slow");
    let battle = resolution.battle;
    assert_eq!(battle.entry(0).map(|entry| entry.disputes.clone()), Some(vec![1]));
    // A ruling may answer the dispute but cannot override it.
    assert!(matches!(
        battle.dice_needed(&ruling(1, json!({"result": "x"}))),
        Err(Rejection::OverrideNotAllowed { .. })
    ));
    let no_override = action(json!({"type": "ruling", "judge": "Oak", "refers_to": 1, "text": "the dodge stands"}));
    let battle = battle.resolve(2, &no_override, &[]).expect("rules").battle;
    assert_eq!(battle.entry(1).map(|entry| entry.rulings.clone()), Some(vec![2]));
    let missing = action(json!({"type": "dispute", "by": "ash", "refers_to": 9, "reason": "?"}));
    assert_eq!(battle.dice_needed(&missing), Err(Rejection::UnknownReference { refers_to: 9 }));
}

#[test]
fn free_rolls_take_any_expression_and_its_own_draw_order() {
    let battle = pokemon();
    let roll = action(json!({"type": "roll", "actor": "ash", "expression": "4d6kh3", "purpose": "Ареометизм"}));
    assert_eq!(battle.dice_needed(&roll), Ok(DiceRequest::Expression("4d6kh3".into())));
    let resolution = battle.resolve(0, &roll, &[6, 5, 3, 1]).expect("rolls");
    let outcome = fields(&resolution.outcome);
    assert_eq!(outcome["total"], 14);
    assert_eq!(outcome["dice"].as_array().map(Vec::len), Some(4));
    assert_eq!(
        outcome["dice"][3],
        json!({"sides": 6, "value": 1, "kept": false, "rerolled": false, "exploded": false})
    );
    assert_eq!(resolution.summary.ru, "ash бросает на «Ареометизм»: 4d6kh3: [6, 5, 3, ~~1~~] = 14");
    assert_eq!(resolution.summary.en, "ash rolls for Ареометизм: 4d6kh3: [6, 5, 3, ~~1~~] = 14");
    assert!(matches!(
        battle.resolve(0, &roll, &[6, 5, 3]),
        Err(ResolveError::Dice(DiceError::TooFewForExpression { .. }))
    ));
    let bad = action(json!({"type": "roll", "actor": "ash", "expression": "4d", "purpose": ""}));
    assert!(matches!(battle.dice_needed(&bad), Err(Rejection::InvalidExpression(_))));
}

#[test]
fn actions_keep_their_note_and_refuse_unknown_fields() {
    let noted = action(json!({"type": "pass", "actor": "pikachu", "note": "catching breath"}));
    assert_eq!(noted.note(), Some("catching breath"));
    let typo = serde_json::from_value::<Action>(
        json!({"type": "attack", "actor": "a", "target": "b", "move": "m", "never_mis": true}),
    );
    assert!(typo.is_err_and(|err| err.to_string().contains("never_mis")));
    let round_trip: Action = serde_json::from_value(serde_json::to_value(&noted).expect("serialises")).expect("parses");
    assert_eq!(round_trip, noted);
}
