//! The largest events an action can make fit the journal's smallest payload
//! limit, so that no roll is ever journaled whose resolution the journal
//! would refuse (issue: a free roll of 3 000 dice answered INTERNAL and left
//! its roll in the journal for ever).
//!
//! The events are built as the roller and the resolver build them — the
//! roll's dice as proto `Die`s, the resolution through the rules with the
//! action, outcome and summaries — from the worst inputs the limits admit:
//! the most dice a request may draw, the longest expression, purpose, actor,
//! note and subject (the roll carries the action and its caller too, for
//! roll-forward), and faces that render longest (seven digits, struck
//! through, exploded, negative). Nothing is taken from a running service.

use battlelog_proto::battle::{die_to_proto, json_to_struct, new_event};
use battlelog_proto::v1::battle_event::Event;
use battlelog_proto::v1::{ActionResolved, Credential, DiceRolled, RequestedAction};
use battlelog_runtime::limits::journal::MIN_PAYLOAD_BYTES;
use battlelog_runtime::limits::resolver::{MAX_ACTOR_BYTES, MAX_JSON_BYTES, MAX_PURPOSE_BYTES};
use battlelog_runtime::limits::roller::MAX_DICE_PER_REQUEST;
use rules::{Action, Battle, Participant, RulesetId};
use serde_json::{Value, json};

/// The longest expression the language takes is 1000 bytes: the dice, then
/// a comment (rendered into both summaries) filling the rest.
const MAX_EXPRESSION_BYTES: usize = 1000;

fn padded(dice: &str) -> String {
    let mut expression = format!("{dice} # ");
    while expression.len() < MAX_EXPRESSION_BYTES {
        expression.push('щ'); // two bytes: the limit is in bytes
    }
    if expression.len() > MAX_EXPRESSION_BYTES {
        expression.pop();
    }
    expression
}

/// The payload bytes of (the roll, the resolution) of a free roll of
/// `dice` with these raw faces.
fn payloads(dice: &str, faces: &[u32]) -> (usize, usize) {
    let expression = padded(dice);
    let parsed = dice::Expression::parse(&expression).unwrap_or_else(|e| panic!("{expression}: {e}"));
    let actor = "a".repeat(MAX_ACTOR_BYTES);
    let purpose = "я".repeat(MAX_PURPOSE_BYTES / 2);
    // The note fills the action up to the JSON limit.
    let mut action = json!({"type": "roll", "actor": actor, "expression": expression, "purpose": purpose});
    let room = MAX_JSON_BYTES - serde_json::to_vec(&action).unwrap().len() - r#","note":"""#.len() - 8;
    action["note"] = Value::String("n".repeat(room));
    assert!(serde_json::to_vec(&action).unwrap().len() <= MAX_JSON_BYTES);
    let parsed_action: Action = serde_json::from_value(action).expect("a free roll");

    let battle = Battle::new(RulesetId::ALL[0], vec![Participant::new("p")]).expect("a battle");
    let resolution = battle.resolve(1, &parsed_action, faces).unwrap_or_else(|e| panic!("{dice}: {e}"));
    let outcome = serde_json::to_value(&resolution.outcome).unwrap();
    let dice_drawn: Vec<dice::Die> =
        serde_json::from_value(outcome["dice"].clone()).expect("a free roll's outcome lists its dice");
    assert_eq!(dice_drawn.len() as u64, parsed.max_dice(), "{dice}: the faces draw the worst case");

    let credential = Some(Credential { subject: "s".repeat(128), role: "forum".into() });
    let to_struct = |value: Value| json_to_struct(value.as_object().expect("an object"));
    // The first roll carries its action and caller too (roll-forward).
    let requested = RequestedAction {
        action: Some(to_struct(serde_json::to_value(&parsed_action).unwrap())),
        credential: credential.clone(),
    };
    let rolled = Event::DiceRolled(DiceRolled {
        epoch: u32::MAX,
        nonce: u64::MAX,
        expression: expression.clone(),
        purpose: purpose.clone(),
        actor: actor.clone(),
        dice: dice_drawn.iter().map(die_to_proto).collect(),
        total: i64::MIN,
        error: String::new(),
        for_action: Some(requested),
    });
    let resolved = Event::ActionResolved(ActionResolved {
        action: Some(to_struct(serde_json::to_value(&parsed_action).unwrap())),
        rolls: vec![u64::MAX],
        outcome: Some(to_struct(outcome)),
        summary_ru: resolution.summary.ru,
        summary_en: resolution.summary.en,
        credential,
    });
    (new_event(rolled, "r".repeat(128)).payload.len(), new_event(resolved, "a".repeat(128)).payload.len())
}

/// Faces of `n` dice of `sides`: all the highest.
fn highest(n: u64, sides: u32) -> Vec<u32> {
    vec![sides; n as usize]
}

#[test]
fn the_largest_roll_and_resolution_a_request_may_make_fit_the_smallest_payload_limit() {
    let n = MAX_DICE_PER_REQUEST;
    let cases: Vec<(String, Vec<u32>)> = vec![
        // Every die kept, seven digits each.
        (format!("{n}d1000000"), highest(n, 1_000_000)),
        // All but one struck through: "~~1000000~~".
        (format!("{n}d1000000kl1"), highest(n, 1_000_000)),
        // Explosions spent to the term's limit (100), every die marked "!".
        (format!("{}d1000000!kh1", n - 100), highest(n, 1_000_000)),
        // Every die rerolled once: a low face, then the highest.
        (format!("{}d1000000r<2kh1", n / 2), (0..n).map(|i| if i % 2 == 0 { 1 } else { 1_000_000 }).collect()),
        // Fudge dice at −1: ten-byte varints in the roll.
        (format!("{n}dF"), vec![1; n as usize]),
    ];
    for (dice, faces) in cases {
        let (roll, resolution) = payloads(&dice, &faces);
        assert!(roll <= MIN_PAYLOAD_BYTES, "{dice}: the roll takes {roll} bytes, over {MIN_PAYLOAD_BYTES}");
        assert!(
            resolution <= MIN_PAYLOAD_BYTES,
            "{dice}: the resolution takes {resolution} bytes, over {MIN_PAYLOAD_BYTES}"
        );
    }
}

/// Not vacuous: three times the dice would not fit, so the limit on dice is
/// what keeps the resolution within the payload limit.
#[test]
fn three_times_the_dice_would_not_fit() {
    let n = MAX_DICE_PER_REQUEST;
    let term = format!("{n}d1000000kl1");
    let dice = format!("{term}+{term}+{term}");
    let (_, resolution) = payloads(&dice, &highest(3 * n, 1_000_000));
    assert!(resolution > MIN_PAYLOAD_BYTES, "{resolution} bytes");
}
