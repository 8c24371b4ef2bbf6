//! The audit of PROTOCOL.md §4, pure: recompute the chain from the record
//! bytes, decode every record and check its stream and version, check every
//! commitment against its revealed seed, re-derive every roll, and
//! re-resolve every action from its rolls against the recorded outcome.
//! Every difference is a finding at the version where it is.
//!
//! It also checks that every commitment is signed by the roller
//! (`docs/PROTOCOL-signatures.md`): without that, whoever could append to
//! the journal could commit to a seed of their own, roll what they like,
//! reveal it, and every other check would pass.

use std::collections::{BTreeMap, HashSet};

use battlelog_proto::battle::{self, die_from_proto, event_to_json};
use battlelog_proto::v1::{DiceRolled, JournalRecord, battle_event::Event};
use prost::Message;
use rules::Battle;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::view::{dispute_action, participants, resolved_parts, ruling_action};

/// One event as an auditor receives it (from an export or the journal).
#[derive(Debug, Clone, PartialEq)]
pub struct AuditedRecord {
    pub stream: String,
    /// The version the export claims.
    pub version: u64,
    /// The claimed h(version).
    pub hash: Vec<u8>,
    /// The exact record bytes.
    pub record: Vec<u8>,
    /// The decoded event the export shows, if it shows one: it must agree
    /// with the record, or a reader could be shown something else.
    pub event: Option<Value>,
}

/// What a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    /// Versions missing, repeated or out of order; events in the wrong place.
    Sequence,
    /// The hash chain.
    Chain,
    /// The record bytes: undecodable, or the wrong stream or version inside.
    Record,
    /// The event: undecodable, or shown differently from the record.
    Event,
    /// A revealed seed against its commitment; epochs.
    Commitment,
    /// A commitment's signature: missing, not verifying, by a roller key
    /// that changes within the battle, or not by the trusted roller key.
    Signature,
    /// Nonces: 0, 1, 2 … with no gap and no reuse.
    Nonce,
    /// A roll against its re-derivation from the revealed seed.
    Roll,
    /// An action re-resolved from its rolls against the recorded outcome.
    Resolution,
    /// A ruling whose recorded credential is not a judge's, or names
    /// another judge than the ruling does.
    Ruling,
}

/// Who ruled on what: a judge's ruling as the battle records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RulingSeen {
    pub version: u64,
    pub refers_to: u64,
    /// The ruling's judge: the subject of the judge's token.
    pub judge: String,
    /// The role of the credential recorded with it; `None` for rulings
    /// from before credentials were recorded.
    pub role: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub version: u64,
    pub check: Check,
    pub message: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AuditReport {
    pub events: u64,
    pub rolls_verified: u64,
    pub actions_verified: u64,
    /// Versions of rolls whose epoch's seed is not revealed yet: they cannot
    /// be re-derived until it is (an open battle's current epoch).
    pub rolls_pending_reveal: Vec<u64>,
    /// Sorted by version.
    pub findings: Vec<Finding>,
    /// Hex of the last hash of the chain as given. An export cut short
    /// still chains; compare this with the head the journal reports (or a
    /// forum post quoted) to know that nothing is missing at the end.
    pub head_hash: String,
    /// The commitment of every epoch, by epoch, as the battle published them.
    pub commitments: Vec<(u32, String)>,
    /// Lowercase hex of the roller key that signed the battle's first
    /// signed commitment (`None`: none is signed). Compare it with the key
    /// the operator publishes, or pass that key to the audit.
    pub roller_key: Option<String>,
    /// Every ruling, in version order: who ruled on what.
    pub rulings: Vec<RulingSeen>,
}

impl AuditReport {
    /// Everything that could be checked verified.
    pub fn ok(&self) -> bool {
        self.findings.is_empty()
    }
}

/// `h(−1) = SHA-256("battlelog/v1/stream" || 0x00 || stream_id)`.
pub fn genesis_hash(stream: &str) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(b"battlelog/v1/stream");
    hasher.update([0]);
    hasher.update(stream.as_bytes());
    hasher.finalize().into()
}

/// `h(v) = SHA-256(h(v−1) || record_v)`.
pub fn chain_hash(previous: &[u8], record: &[u8]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(previous);
    hasher.update(record);
    hasher.finalize().into()
}

struct Auditor {
    findings: Vec<Finding>,
    report: AuditReport,
}

impl Auditor {
    fn find(&mut self, version: u64, check: Check, message: impl Into<String>) {
        self.findings.push(Finding { version, check, message: message.into() });
    }
}

/// Audits the events of `battle_id` in the order given. Commitments must be
/// signed, all by one roller key, whichever it is: the report names it.
pub fn audit(battle_id: &str, lines: &[AuditedRecord]) -> AuditReport {
    audit_with_roller_key(battle_id, lines, None)
}

/// [`audit`], and with `trusted` given, every commitment must be signed by
/// exactly that roller key.
pub fn audit_with_roller_key(
    battle_id: &str,
    lines: &[AuditedRecord],
    trusted: Option<&dice::RollerKey>,
) -> AuditReport {
    let mut auditor = Auditor { findings: Vec::new(), report: AuditReport::default() };
    auditor.report.head_hash = hex::encode(lines.last().map_or(genesis_hash(battle_id).to_vec(), |l| l.hash.clone()));
    let decoded = check_chain_and_records(&mut auditor, battle_id, lines);
    check_signatures(&mut auditor, battle_id, &decoded, trusted);
    check_battle(&mut auditor, &decoded);
    let mut report = auditor.report;
    report.events = lines.len() as u64;
    report.findings = auditor.findings;
    report.findings.sort_by_key(|f| f.version);
    report
}

/// The structural half: sequence, chain, record and event. Returns the
/// events that decoded, with their versions, for the semantic half.
fn check_chain_and_records(auditor: &mut Auditor, battle_id: &str, lines: &[AuditedRecord]) -> Vec<(u64, Event)> {
    let mut previous = genesis_hash(battle_id).to_vec();
    let mut expected = 0u64;
    let mut decoded = Vec::new();
    for line in lines {
        let version = line.version;
        if line.stream != battle_id {
            auditor.find(version, Check::Record, format!("line names stream {:?}, not {battle_id:?}", line.stream));
        }
        if version != expected {
            let message = if version > expected {
                format!("version {expected} expected here, found version {version}: missing or out of order")
            } else {
                format!("version {version} comes again or out of order after version {}", expected - 1)
            };
            auditor.find(version.min(expected), Check::Sequence, message);
        }
        expected = version.saturating_add(1);

        let computed = chain_hash(&previous, &line.record);
        if line.hash != computed {
            auditor.find(version, Check::Chain, "the hash does not follow from the previous hash and this record");
        }
        // Go on from the claimed hash so that one broken link is one finding.
        previous.clone_from(&line.hash);

        let record = match JournalRecord::decode(line.record.as_slice()) {
            Ok(record) => record,
            Err(e) => {
                auditor.find(version, Check::Record, format!("the record bytes do not decode: {e}"));
                continue;
            }
        };
        if record.stream_id != battle_id {
            auditor.find(version, Check::Record, format!("the record belongs to stream {:?}", record.stream_id));
        }
        if record.version != version {
            auditor.find(version, Check::Record, format!("the record says version {}", record.version));
        }
        let event = match battle::decode(&record) {
            Ok(event) => event,
            Err(e) => {
                auditor.find(version, Check::Event, e.to_string());
                continue;
            }
        };
        if let Some(shown) = &line.event
            && *shown != event_to_json(&event)
        {
            auditor.find(version, Check::Event, "the event shown differs from the one in the record");
        }
        decoded.push((record.version, event));
    }
    decoded
}

/// Every commitment (BattleOpened's for epoch 0, each SeedCommitted's) is
/// signed, verifies with the key it names, and that key is the battle's one
/// and, when given, the trusted one.
fn check_signatures(
    auditor: &mut Auditor,
    battle_id: &str,
    events: &[(u64, Event)],
    trusted: Option<&dice::RollerKey>,
) {
    let mut battle_key: Option<dice::RollerKey> = None;
    for (version, event) in events {
        let version = *version;
        let (epoch, commitment, signature, key) = match event {
            Event::BattleOpened(e) => (0, &e.commitment, &e.commitment_signature, &e.roller_key),
            Event::SeedCommitted(e) => (e.epoch, &e.commitment, &e.commitment_signature, &e.roller_key),
            _ => continue,
        };
        if signature.is_empty() || key.is_empty() {
            let missing = if signature.is_empty() { "signature" } else { "roller key" };
            auditor.find(version, Check::Signature, format!("the commitment of epoch {epoch} has no {missing}"));
            continue;
        }
        let key = match dice::RollerKey::from_bytes(key) {
            Ok(key) => key,
            Err(e) => {
                auditor.find(version, Check::Signature, format!("epoch {epoch}: {e}"));
                continue;
            }
        };
        match battle_key {
            None => battle_key = Some(key),
            Some(first) if first != key => auditor.find(
                version,
                Check::Signature,
                format!("epoch {epoch} is signed by roller key {key}, the battle's earlier commitments by {first}"),
            ),
            Some(_) => {}
        }
        if let Some(trusted) = trusted
            && key != *trusted
        {
            auditor.find(
                version,
                Check::Signature,
                format!("epoch {epoch} is signed by roller key {key}, not by the trusted roller key {trusted}"),
            );
        }
        if let Err(e) = key.verify(battle_id, epoch, commitment, signature) {
            auditor.find(
                version,
                Check::Signature,
                format!("epoch {epoch}: commitment {commitment} with roller key {key}: {e}"),
            );
        }
    }
    auditor.report.roller_key = battle_key.map(|key| key.to_string());
}

/// The semantic half: commitments, nonces, rolls and rules.
fn check_battle(auditor: &mut Auditor, events: &[(u64, Event)]) {
    let mut battle: Option<Battle> = None;
    let mut client_seed = String::new();
    let mut epoch = 0u32;
    let mut commitments: BTreeMap<u32, String> = BTreeMap::new();
    let mut revealed: BTreeMap<u32, String> = BTreeMap::new();
    // By nonce, the latest journaled: what an action's nonce refers to.
    let mut rolls: BTreeMap<u64, (u64, DiceRolled)> = BTreeMap::new();
    // Every roll as journaled: each one is re-derived, even one whose nonce
    // a later roll repeats (an inserted forgery must not hide behind the
    // real roll it duplicates).
    let mut journaled_rolls: Vec<(u64, DiceRolled)> = Vec::new();
    let mut used_nonces: HashSet<u64> = HashSet::new();
    let mut next_nonce = 0u64;
    let mut closed = false;
    // The close and the epoch current then: that epoch must be revealed.
    let mut closed_at: Option<(u64, u32)> = None;

    for (version, event) in events {
        let version = *version;
        if closed && !matches!(event, Event::SeedRevealed(_)) {
            auditor.find(version, Check::Sequence, "an event after BattleClosed");
        }
        match event {
            Event::BattleOpened(opened) => {
                if version != 0 || battle.is_some() {
                    auditor.find(version, Check::Sequence, "BattleOpened must be version 0, once");
                    continue;
                }
                client_seed.clone_from(&opened.client_seed);
                commitments.insert(0, opened.commitment.clone());
                let opening = opened
                    .ruleset
                    .parse::<rules::RulesetId>()
                    .map_err(|e| e.to_string())
                    .and_then(|ruleset| Battle::new(ruleset, participants(opened)?).map_err(|e| e.to_string()));
                match opening {
                    Ok(opened) => battle = Some(opened),
                    Err(message) => auditor.find(version, Check::Resolution, message),
                }
            }
            _ if battle.is_none() && version == 0 => {
                auditor.find(version, Check::Sequence, "a battle starts with BattleOpened");
            }
            Event::SeedCommitted(committed) => {
                if epoch.checked_add(1) != Some(committed.epoch) {
                    auditor.find(
                        version,
                        Check::Commitment,
                        format!("epoch {} follows epoch {epoch}", committed.epoch),
                    );
                }
                if !revealed.contains_key(&epoch) {
                    auditor.find(
                        version,
                        Check::Commitment,
                        format!("epoch {} begins before epoch {epoch} is revealed", committed.epoch),
                    );
                }
                epoch = committed.epoch;
                commitments.insert(epoch, committed.commitment.clone());
            }
            Event::DiceRolled(rolled) => {
                if rolled.nonce != next_nonce {
                    auditor.find(version, Check::Nonce, format!("nonce {} where {next_nonce} was next", rolled.nonce));
                }
                if rolled.epoch != epoch || revealed.contains_key(&rolled.epoch) {
                    auditor.find(
                        version,
                        Check::Roll,
                        format!("rolled in epoch {} while epoch {epoch} was the current, unrevealed one", rolled.epoch),
                    );
                }
                next_nonce = next_nonce.max(rolled.nonce).saturating_add(1);
                journaled_rolls.push((version, rolled.clone()));
                if rolls.insert(rolled.nonce, (version, rolled.clone())).is_some() {
                    auditor.find(version, Check::Nonce, format!("nonce {} is used twice", rolled.nonce));
                }
            }
            Event::ActionResolved(resolved) => {
                let Some(current) = battle.as_ref() else { continue };
                let (action, outcome) = match resolved_parts(resolved) {
                    Ok(parts) => parts,
                    Err(message) => {
                        auditor.find(version, Check::Resolution, message);
                        continue;
                    }
                };
                let mut faces = Vec::new();
                let mut used_expressions = Vec::new();
                let mut rolls_ok = true;
                for nonce in &resolved.rolls {
                    match rolls.get(nonce) {
                        Some((_, roll)) if used_nonces.insert(*nonce) => {
                            used_expressions.push(roll.expression.clone());
                            match dice::Expression::parse(&roll.expression) {
                                Ok(expression) => {
                                    let dice: Vec<dice::Die> = roll.dice.iter().map(die_from_proto).collect();
                                    faces.extend(dice::raw_faces(&expression, &dice));
                                }
                                Err(e) => {
                                    rolls_ok = false;
                                    auditor.find(version, Check::Resolution, format!("roll {nonce}: {e}"));
                                }
                            }
                        }
                        Some(_) => {
                            rolls_ok = false;
                            auditor.find(
                                version,
                                Check::Resolution,
                                format!("roll {nonce} was already used by another action"),
                            );
                        }
                        None => {
                            rolls_ok = false;
                            auditor.find(
                                version,
                                Check::Resolution,
                                format!("roll {nonce} is not journaled before this action"),
                            );
                        }
                    }
                }
                match current.dice_needed(&action) {
                    Ok(request) if request.expressions() != used_expressions => {
                        rolls_ok = false;
                        auditor.find(
                            version,
                            Check::Resolution,
                            format!(
                                "the action needs {:?} but used rolls of {:?}",
                                request.expressions(),
                                used_expressions
                            ),
                        );
                    }
                    Ok(_) => {}
                    Err(rejection) => {
                        rolls_ok = false;
                        auditor.find(
                            version,
                            Check::Resolution,
                            format!("the rules forbid this action here: {rejection}"),
                        );
                    }
                }
                if rolls_ok {
                    match current.resolve(version, &action, &faces) {
                        Ok(resolution) if resolution.outcome != outcome => auditor.find(
                            version,
                            Check::Resolution,
                            format!(
                                "recorded outcome {} but the rules give {}",
                                serde_json::to_string(&outcome).unwrap_or_default(),
                                serde_json::to_string(&resolution.outcome).unwrap_or_default()
                            ),
                        ),
                        Ok(resolution)
                            if resolution.summary.ru != resolved.summary_ru
                                || resolution.summary.en != resolved.summary_en =>
                        {
                            auditor.find(version, Check::Resolution, "the summary differs from the rules' summary");
                        }
                        Ok(_) => auditor.report.actions_verified += 1,
                        Err(e) => auditor.find(version, Check::Resolution, e.to_string()),
                    }
                }
                // Go on from what was journaled, so one bad action is one finding.
                match current.apply(version, &action, &outcome) {
                    Ok(next) => battle = Some(next),
                    Err(e) => auditor.find(version, Check::Resolution, format!("cannot replay: {e}")),
                }
            }
            Event::DisputeRaised(dispute) => fold_common(auditor, &mut battle, version, &dispute_action(dispute)),
            Event::JudgeRuling(ruling) => {
                // RULES.md §5.1: only a judge rules, and the ruling's judge is
                // the credential's subject (the resolver takes it from the token).
                if let Some(credential) = &ruling.credential
                    && (credential.role != "judge" || credential.subject != ruling.judge)
                {
                    auditor.find(
                        version,
                        Check::Ruling,
                        format!(
                            "the ruling names judge {:?} but was recorded for {} {:?}",
                            ruling.judge, credential.role, credential.subject
                        ),
                    );
                }
                auditor.report.rulings.push(RulingSeen {
                    version,
                    refers_to: ruling.refers_to,
                    judge: ruling.judge.clone(),
                    role: ruling.credential.as_ref().map(|c| c.role.clone()),
                });
                fold_common(auditor, &mut battle, version, &ruling_action(ruling))
            }
            Event::SeedRevealed(reveal) => match check_reveal(&commitments, reveal.epoch, &reveal.server_seed) {
                Ok(()) => {
                    revealed.insert(reveal.epoch, reveal.server_seed.clone());
                }
                Err(message) => auditor.find(version, Check::Commitment, message),
            },
            Event::BattleClosed(_) => {
                closed = true;
                closed_at = Some((version, epoch));
            }
        }
    }

    // Closing reveals the seed; a closed battle without that reveal hides
    // rolls from re-derivation.
    if let Some((version, epoch)) = closed_at
        && !revealed.contains_key(&epoch)
    {
        auditor.find(
            version,
            Check::Commitment,
            format!("the battle is closed but the seed of epoch {epoch} was never revealed"),
        );
    }

    auditor.report.commitments = commitments.into_iter().collect();
    for (version, roll) in &journaled_rolls {
        let (version, nonce) = (*version, roll.nonce);
        // Every roll is made for one action. A roll no action used is what
        // peeking at the dice and rolling again would leave behind.
        if !used_nonces.contains(&nonce) {
            auditor.find(version, Check::Roll, format!("roll {nonce} ({}) was used by no action", roll.expression));
        }
        let Some(seed) = revealed.get(&roll.epoch) else {
            auditor.report.rolls_pending_reveal.push(version);
            continue;
        };
        match rederive(seed, &client_seed, nonce, roll) {
            Ok(()) => auditor.report.rolls_verified += 1,
            Err(message) => auditor.find(version, Check::Roll, message),
        }
    }
}

fn fold_common(auditor: &mut Auditor, battle: &mut Option<Battle>, version: u64, action: &rules::Action) {
    let Some(current) = battle.as_ref() else { return };
    match current.resolve(version, action, &[]) {
        Ok(resolution) => *battle = Some(resolution.battle),
        Err(e) => auditor.find(version, Check::Resolution, e.to_string()),
    }
}

fn check_reveal(commitments: &BTreeMap<u32, String>, epoch: u32, seed_hex: &str) -> Result<(), String> {
    let seed = dice::ServerSeed::from_hex(seed_hex).map_err(|e| format!("epoch {epoch}: {e}"))?;
    let Some(commitment) = commitments.get(&epoch) else {
        return Err(format!("epoch {epoch} was never committed"));
    };
    if seed.commitment().to_string() != *commitment {
        return Err(format!("the seed revealed for epoch {epoch} does not match its commitment {commitment}"));
    }
    Ok(())
}

fn rederive(seed_hex: &str, client_seed: &str, nonce: u64, roll: &DiceRolled) -> Result<(), String> {
    let seed = dice::ServerSeed::from_hex(seed_hex).map_err(|e| e.to_string())?;
    let expression = dice::Expression::parse(&roll.expression).map_err(|e| format!("expression: {e}"))?;
    let key = dice::RollKey::derive(&seed, client_seed);
    let (derived, total) = dice::evaluate_keeping_dice(&expression, &mut dice::RollStream::new(&key, nonce));
    let recorded: Vec<dice::Die> = roll.dice.iter().map(die_from_proto).collect();
    let derived_total = total.as_ref().copied().unwrap_or(0);
    let derived_error = total.err().map(|e| e.to_string()).unwrap_or_default();
    if derived != recorded || derived_total != roll.total || derived_error != roll.error {
        let faces = |dice: &[dice::Die]| dice.iter().map(|d| d.value.to_string()).collect::<Vec<_>>().join(", ");
        return Err(format!(
            "nonce {nonce} ({}): recorded [{}] = {}, the revealed seed gives [{}] = {}",
            roll.expression,
            faces(&recorded),
            roll.total,
            faces(&derived),
            derived_total
        ));
    }
    Ok(())
}
