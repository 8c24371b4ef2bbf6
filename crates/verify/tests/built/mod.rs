//! A battle built event by event the way the roller and the resolver
//! journal one (signed commitment, rolls drawn from the epoch's seed,
//! actions resolved by the rules, disputes and rulings with their
//! credentials, close, reveal), chained and exported. Shared by the verify
//! crate's tests and the CLI's (`#[path]`), each of which uses part of it.
#![allow(dead_code)]

use battlelog_proto::battle::{self, die_to_proto, json_to_struct};
use battlelog_proto::v1::{
    ActionResolved, BattleClosed, BattleEvent, BattleOpened, Credential, DiceRolled, JournalRecord, JudgeRuling,
    RecordedEvent, SeedRevealed, battle_event::Event,
};
use battlelog_verify::audit::AuditedRecord;
use battlelog_verify::chain::{chain_hash, genesis_hash};
use battlelog_verify::export;
use prost::Message;
use serde_json::{Value, json};

pub const BATTLE: &str = "pure-audit";
pub const CLIENT_SEED: &str = "Cerulean gym";
pub const MASTER_KEY: [u8; 32] = [7; 32];

pub fn object(value: Value) -> serde_json::Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// A battle as the services would journal it, kept as events so that a
/// test can change one and re-encode.
pub struct Built {
    pub events: Vec<Event>,
    pub rules: rules::Battle,
    pub seed: dice::ServerSeed,
    next_nonce: u64,
}

impl Built {
    pub fn open() -> Built {
        let sheets =
            vec![json!({"id": "misty", "traits": {"grace": 2}}), json!({"id": "brock", "traits": {"grit": -1}})];
        Built::open_as("pbta-2d6@1", sheets)
    }

    /// A battle of `ruleset` with these participants' sheets.
    pub fn open_as(ruleset: &str, sheets: Vec<Value>) -> Built {
        let seed = dice::ServerSeed::derive(&MASTER_KEY, BATTLE, 0);
        let signer = dice::CommitmentSigner::derive(&MASTER_KEY);
        let commitment = seed.commitment().to_string();
        let participants: Vec<rules::Participant> =
            sheets.iter().map(|s| serde_json::from_value(s.clone()).expect("a sheet")).collect();
        let opened = BattleOpened {
            ruleset: ruleset.into(),
            participants: sheets.into_iter().map(|s| json_to_struct(&object(s))).collect(),
            client_seed: CLIENT_SEED.into(),
            commitment_signature: signer.sign(BATTLE, 0, &commitment).to_vec(),
            roller_key: signer.roller_key().to_bytes().to_vec(),
            commitment,
            tenant: "dev".into(),
            ..Default::default()
        };
        let rules = rules::Battle::new(ruleset.parse().expect("a ruleset"), participants).expect("opens");
        Built { events: vec![Event::BattleOpened(opened)], rules, seed, next_nonce: 0 }
    }

    pub fn version(&self) -> u64 {
        self.events.len() as u64
    }

    /// Draws a roll of `expression` from the epoch's seed, as the roller does.
    pub fn roll(&mut self, expression: &str) -> (u64, Vec<u32>) {
        let nonce = self.next_nonce;
        self.next_nonce += 1;
        let parsed = dice::Expression::parse(expression).expect("an expression");
        let key = dice::RollKey::derive(&self.seed, CLIENT_SEED);
        let (drawn, total) = dice::evaluate_keeping_dice(&parsed, &mut dice::RollStream::new(&key, nonce));
        self.events.push(Event::DiceRolled(DiceRolled {
            epoch: 0,
            nonce,
            expression: expression.into(),
            actor: "misty".into(),
            dice: drawn.iter().map(die_to_proto).collect(),
            total: total.expect("no arithmetic error"),
            ..Default::default()
        }));
        (nonce, dice::raw_faces(&parsed, &drawn))
    }

    /// Rolls what the rules ask for and journals their resolution; returns
    /// the faces drawn.
    pub fn act(&mut self, action: Value) -> Vec<u32> {
        let action: rules::Action = serde_json::from_value(action).expect("an action");
        let needed = self.rules.dice_needed(&action).expect("allowed");
        let (mut nonces, mut faces) = (Vec::new(), Vec::new());
        for expression in needed.expressions() {
            let (nonce, drawn) = self.roll(&expression);
            nonces.push(nonce);
            faces.extend(drawn);
        }
        let resolution = self.rules.resolve(self.version(), &action, &faces).expect("resolves");
        self.events.push(Event::ActionResolved(ActionResolved {
            action: Some(json_to_struct(&object(serde_json::to_value(&action).expect("json")))),
            rolls: nonces,
            outcome: Some(json_to_struct(&object(serde_json::to_value(&resolution.outcome).expect("json")))),
            summary_ru: resolution.summary.ru,
            summary_en: resolution.summary.en,
            credential: None,
        }));
        self.rules = resolution.battle;
        faces
    }

    /// Journals a dispute or a ruling as the resolver does: folded by the
    /// rules, with the caller's credential.
    pub fn command(&mut self, event: Event) {
        let action = match &event {
            Event::DisputeRaised(dispute) => battlelog_verify::fold::dispute_action(dispute),
            Event::JudgeRuling(ruling) => battlelog_verify::fold::ruling_action(ruling),
            other => panic!("not a command: {other:?}"),
        };
        self.rules = self.rules.resolve(self.version(), &action, &[]).expect("folds").battle;
        self.events.push(event);
    }

    pub fn close(&mut self) {
        self.close_as("forum", None);
    }

    /// Closes with the request's free-text `by` and the caller's credential.
    pub fn close_as(&mut self, by: &str, credential: Option<Credential>) {
        self.events.push(Event::BattleClosed(BattleClosed { by: by.into(), reason: "done".into(), credential }));
        self.events.push(Event::SeedRevealed(SeedRevealed {
            epoch: 0,
            server_seed: self.seed.to_hex(),
            credential: None,
        }));
    }

    pub fn played() -> Built {
        let mut built = Built::open();
        built.act(json!({"type": "move", "actor": "misty", "trait": "grace", "stakes": "cross"}));
        built.act(json!({"type": "move", "actor": "brock", "trait": "grit", "stakes": "hold the door"}));
        built.close();
        built
    }

    /// The journal's view of the events: records, bytes and chain hashes.
    pub fn recorded(&self) -> Vec<RecordedEvent> {
        recorded(&self.events)
    }

    pub fn audited(&self) -> Vec<AuditedRecord> {
        export::parse(&export::write(BATTLE, &self.recorded()).expect("written")).expect("read back")
    }
}

pub fn recorded(events: &[Event]) -> Vec<RecordedEvent> {
    let mut previous = genesis_hash(BATTLE);
    events
        .iter()
        .enumerate()
        .map(|(version, event)| {
            let record = JournalRecord {
                stream_id: BATTLE.into(),
                version: version as u64,
                event_id: format!("event-{version}"),
                event_type: battle::type_name(event).into(),
                recorded_at_unix_micros: 1_700_000_000_000_000 + version as i64,
                idempotency_key: String::new(),
                payload: BattleEvent { event: Some(event.clone()) }.encode_to_vec(),
            };
            let bytes = record.encode_to_vec();
            previous = chain_hash(&previous, &bytes);
            RecordedEvent { event: Some(record), record: bytes, hash: previous.to_vec(), ..Default::default() }
        })
        .collect()
}

pub fn credential(subject: &str, role: &str) -> Option<Credential> {
    Some(Credential { subject: subject.into(), role: role.into() })
}

pub fn ruling(judge: &str, refers_to: u64, text: &str, replacement: Value) -> Event {
    Event::JudgeRuling(JudgeRuling {
        judge: judge.into(),
        refers_to,
        text: text.into(),
        r#override: Some(json_to_struct(&object(replacement))),
        credential: credential(judge, "judge"),
        answers_dispute: None,
    })
}
