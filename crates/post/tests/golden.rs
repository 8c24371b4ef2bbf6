//! Golden posts: each ruleset's action (`@1` and `@2`, resolved by the real
//! rules with fixed faces, so the summaries are the ruleset's own), a free
//! roll with a dropped die, and the open, dispute, ruling and close posts,
//! in every format and both languages, compared with the files under
//! `tests/golden/` (`{case}.{format}`, the Russian post then the English
//! one). The files were written once with `BLESS=1` and then read and
//! checked by hand; `BLESS=1 cargo test -p battlelog-post --test golden`
//! rewrites them after a deliberate change, to be read again before commit.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::PathBuf;

use dice::{Expression, WordSource};
use post::{DiceLine, Event, Format, Place, Revealed};
use rules::{Action, Battle, DiceRequest, OpenBattle};
use serde_json::{Value, json};

const HEAD: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
const FORMATS: [(Format, &str); 4] =
    [(Format::Plain, "plain"), (Format::Markdown, "markdown"), (Format::Bbcode, "bbcode"), (Format::Html, "html")];

/// Hands out the faces of a die roll as the words that draw them.
struct Faces<'a>(std::slice::Iter<'a, u32>);

impl WordSource for Faces<'_> {
    fn next_word(&mut self) -> u32 {
        self.0.next().map_or(0, |face| face - 1)
    }
}

/// The dice lines of `faces` drawn for `request`, as the roller would
/// record them (a free roll's purpose is its action's).
fn dice_lines(request: &DiceRequest, action: &Value, faces: &[u32]) -> Vec<DiceLine> {
    let specs: Vec<(String, String)> = match request {
        DiceRequest::Rolls(rolls) => rolls.iter().map(|r| (r.expression(), r.purpose.to_owned())).collect(),
        DiceRequest::Expression(expression) => {
            vec![(expression.clone(), action["purpose"].as_str().unwrap_or_default().to_owned())]
        }
    };
    let mut words = Faces(faces.iter());
    specs
        .into_iter()
        .map(|(expression, purpose)| {
            let parsed = Expression::parse(&expression).expect("the rules ask for valid dice");
            let roll = dice::evaluate(&parsed, &mut words).expect("evaluates");
            DiceLine { purpose, pieces: dice::pieces(&parsed, &roll) }
        })
        .collect()
}

/// Opens `ruleset` with `participants`, resolves every action of `script`
/// (JSON action, faces) in turn, and answers the post event of the last.
fn acted(ruleset: &str, participants: Value, actor: &str, script: &[(Value, &[u32])]) -> (Event, u64) {
    let opening: OpenBattle =
        serde_json::from_value(json!({"ruleset": ruleset, "participants": participants})).expect("an opening");
    let mut battle = Battle::open(&opening).expect("opens");
    let mut last = None;
    for (version, (action, faces)) in (0..).zip(script) {
        let json = action;
        let action: Action = serde_json::from_value(json.clone()).expect("an action");
        let request = battle.dice_needed(&action).expect("allowed");
        let resolution = battle.resolve(version, &action, faces).expect("resolves");
        battle = resolution.battle;
        last = Some((
            Event::Acted {
                actor: actor.to_owned(),
                summary_ru: resolution.summary.ru,
                summary_en: resolution.summary.en,
                dice: dice_lines(&request, json, faces),
            },
            version,
        ));
    }
    last.expect("a script with an action")
}

fn cases() -> Vec<(&'static str, Event, u64)> {
    let mut cases = Vec::new();
    let pokemon = json!([{"id": "pikachu"}, {"id": "meowth"}]);
    let (event, version) = acted(
        "pokemon-d6@1",
        pokemon.clone(),
        "meowth",
        &[(
            json!({"type": "attack", "actor": "meowth", "target": "pikachu", "move": "Quick Attack", "power": 80, "effect": "poison"}),
            &[6],
        )],
    );
    cases.push(("pokemon-d6@1.attack", event, version));
    let (event, version) = acted(
        "pokemon-d6@2",
        pokemon.clone(),
        "pikachu",
        &[
            (
                json!({"type": "attack", "actor": "meowth", "target": "pikachu", "move": "Razor Leaf", "power": 65}),
                &[4],
            ),
            (json!({"type": "dodge", "actor": "pikachu", "against": 0}), &[6]),
        ],
    );
    cases.push(("pokemon-d6@2.dodge", event, version));
    let (event, version) = acted(
        "pokemon-d6@1",
        pokemon,
        "pikachu",
        &[(
            json!({"type": "roll", "actor": "pikachu", "expression": "4d6kh3 # to hit", "purpose": "attack"}),
            &[6, 5, 3, 1],
        )],
    );
    cases.push(("pokemon-d6@1.roll", event, version));
    let arcana = json!([
        {"id": "mage", "abilities": {"Огненный шар": {}, "Молния": {"magical": true, "min_points": 8}}},
        {"id": "necro", "abilities": {"Рука крови": {"per_episode": 2}}}
    ]);
    let (event, version) = acted(
        "arcana-2d10@1",
        json!([{"id": "mage", "abilities": {"Огненный шар": {}}}, {"id": "necro", "abilities": {"Рука крови": {"per_episode": 2}}}]),
        "mage",
        &[(
            json!({"type": "cast", "actor": "mage", "ability": "Огненный шар", "skill_points": 7, "specialization_matches": true, "post": "p2", "berserk_bonus": 2}),
            &[4, 1],
        )],
    );
    cases.push(("arcana-2d10@1.cast", event, version));
    let (event, version) = acted(
        "arcana-2d10@2",
        arcana,
        "mage",
        &[(
            json!({"type": "cast", "actor": "mage", "ability": "Молния", "skill_points": 12, "specialization_matches": true, "post": "p3"}),
            &[8, 5],
        )],
    );
    cases.push(("arcana-2d10@2.cast", event, version));
    let (event, version) = acted(
        "berserk@1",
        json!([{"id": "a"}, {"id": "b"}]),
        "a",
        &[(
            json!({"type": "strike", "attacker": {"id": "a", "attack_experience": 0, "die_modifier": 1, "avoid_exchange": false, "strike": [1, 3, 4]}, "defender": {"id": "b", "defense_experience": 0, "die_modifier": 1, "closed": false, "avoid_exchange": true, "strike": [1, 2, 4]}, "kind": "simple", "own_squad": false}),
            &[4, 2],
        )],
    );
    cases.push(("berserk@1.strike", event, version));
    let (event, version) = acted(
        "berserk@2",
        json!([{"id": "a"}, {"id": "b"}]),
        "a",
        &[(
            json!({"type": "strike", "attacker": {"id": "a", "attack_experience": 1, "die_modifier": -1, "strike": [4, 5, 6]}, "defender": {"id": "b", "defense_experience": 1, "die_modifier": 0, "closed": false, "strike": [1, 5, 6]}, "kind": "simple", "own_squad": false}),
            &[5, 3],
        )],
    );
    cases.push(("berserk@2.strike", event, version));
    let (event, version) = acted(
        "pbta-2d6@1",
        json!([{"id": "ash", "traits": {"wits": -1}}, {"id": "misty", "traits": {"grace": 2}}]),
        "ash",
        &[(
            json!({"type": "move", "actor": "ash", "trait": "wits", "stakes": "сорвать замок", "trait_value": 0, "helpers": ["pikachu", "brock"]}),
            &[6, 6],
        )],
    );
    cases.push(("pbta-2d6@1.move", event, version));
    let (event, version) = acted(
        "pbta-2d6@2",
        json!([{"id": "ash", "traits": {"charm": 1}}, {"id": "misty", "traits": {"grace": 2}}]),
        "ash",
        &[(json!({"type": "move", "actor": "ash", "trait": "charm", "stakes": "сорвать замок"}), &[5, 5])],
    );
    cases.push(("pbta-2d6@2.move", event, version));
    cases.push((
        "open",
        Event::Opened {
            battle_id: "duel-1".into(),
            title: "Дуэль у озера".into(),
            ruleset: "pokemon-d6@1".into(),
            participants: vec!["pikachu".into(), "meowth".into()],
            commitment: "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae".into(),
        },
        0,
    ));
    cases.push((
        "dispute",
        Event::Disputed { by: "meowth".into(), refers_to: 1, reason: "the dodge came too late".into() },
        4,
    ));
    cases.push((
        "rule",
        Event::Ruled { judge: "judge-anna".into(), refers_to: 1, text: "The dodge stands.".into(), overrides: true },
        5,
    ));
    cases.push((
        "close",
        Event::Closed {
            by: "judge-anna".into(),
            reason: "victory of pikachu".into(),
            revealed: Some(Revealed {
                epoch: 0,
                server_seed: "fcde2b2edba56bf408601fb721fe9b5c338d10ee429ea04fae5511b68fbf8fb9".into(),
            }),
        },
        6,
    ));
    cases
}

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests").join("golden")
}

#[test]
fn posts_match_their_golden_files() {
    let bless = std::env::var_os("BLESS").is_some();
    let mut mismatches = Vec::new();
    let mut written = 0;
    for (name, event, version) in cases() {
        let permalink = format!("https://battles.example.org/battles/duel-1?k=s3cr3t#v{version}");
        // A close's head is the SeedRevealed written right after its
        // BattleClosed: the link points at the close, the head one later.
        let head_version = if name == "close" { version + 1 } else { version };
        let place = Place { head_version, permalink: &permalink, head_hash: HEAD };
        for (format, extension) in FORMATS {
            let rendered = post::render(format, &event, &place);
            let text = format!("{}\n\n{}\n", rendered.ru, rendered.en);
            let path = golden_dir().join(format!("{name}.{extension}"));
            if bless {
                std::fs::write(&path, &text).expect("write a golden file");
                continue;
            }
            written += 1;
            let expected = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e} (BLESS=1 writes it, to be checked by hand)", path.display()));
            if expected != text {
                mismatches.push(format!("{}:\n--- expected\n{expected}--- rendered\n{text}", path.display()));
            }
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    assert!(bless || written == 13 * 4, "every case in every format is checked");
}

#[test]
fn without_a_permalink_the_post_has_no_link() {
    let event = Event::Disputed { by: "meowth".into(), refers_to: 1, reason: String::new() };
    let place = Place { head_version: 2, permalink: "", head_hash: HEAD };
    for (format, _) in FORMATS {
        let post = post::render(format, &event, &place);
        for text in [&post.ru, &post.en] {
            assert!(!text.contains("http"), "{text}");
            assert!(text.contains(HEAD), "{text}");
        }
    }
}
