//! The semantic half of the audit: the battle replayed event by event, one
//! checker per event type, against commitments, nonces, rolls and rules.

use std::collections::{BTreeMap, HashSet};

use battlelog_proto::battle::die_from_proto;
use battlelog_proto::v1::{
    ActionResolved, BattleOpened, DiceRolled, JudgeRuling, SeedCommitted, SeedRevealed, battle_event::Event,
};
use rules::{Action, Battle, Outcome};

use super::rolls::{check_reveal, rederive};
use super::{AuditReport, DisputeSeen, Problem, RulingSeen};
use crate::fold::{dispute_action, participants, resolved_parts, ruling_action};

/// Checks the decoded events of a battle, in journal order.
pub(super) fn check_battle(report: &mut AuditReport, events: &[(u64, Event)]) {
    let mut replay = Replay::default();
    for (version, event) in events {
        replay.event(report, *version, event);
    }
    replay.finish(report);
}

/// What the audit knows of the battle so far.
#[derive(Default)]
struct Replay {
    /// The rules state, once the battle opened under a known ruleset.
    battle: Option<Battle>,
    client_seed: String,
    /// The current epoch.
    epoch: u32,
    commitments: BTreeMap<u32, String>,
    revealed: BTreeMap<u32, String>,
    /// By nonce, the latest journaled: what an action's nonce refers to.
    rolls: BTreeMap<u64, DiceRolled>,
    /// Every roll as journaled: each one is re-derived, even one whose
    /// nonce a later roll repeats (an inserted forgery must not hide behind
    /// the real roll it duplicates).
    journaled_rolls: Vec<(u64, DiceRolled)>,
    used_nonces: HashSet<u64>,
    next_nonce: u64,
    /// The close and the epoch current then: that epoch must be revealed.
    closed_at: Option<(u64, u32)>,
}

impl Replay {
    fn event(&mut self, report: &mut AuditReport, version: u64, event: &Event) {
        // A reveal is what closing does, and disputes and rulings may follow
        // in the appeal window (a policy of the resolver's clock, which an
        // offline audit cannot judge); anything else after it may not.
        let after_close_allowed =
            matches!(event, Event::SeedRevealed(_) | Event::DisputeRaised(_) | Event::JudgeRuling(_));
        if self.closed_at.is_some() && !after_close_allowed {
            report.find(version, Problem::AfterClose);
        }
        match event {
            Event::BattleOpened(opened) => self.battle_opened(report, version, opened),
            _ if self.battle.is_none() && version == 0 => report.find(version, Problem::NotOpened),
            Event::SeedCommitted(committed) => self.seed_committed(report, version, committed),
            Event::DiceRolled(rolled) => self.dice_rolled(report, version, rolled),
            Event::ActionResolved(resolved) => self.action_resolved(report, version, resolved),
            Event::DisputeRaised(dispute) => {
                report.disputes.push(DisputeSeen::new(version, dispute));
                self.fold_command(report, version, &dispute_action(dispute));
            }
            Event::JudgeRuling(ruling) => self.judge_ruling(report, version, ruling),
            Event::SeedRevealed(reveal) => self.seed_revealed(report, version, reveal),
            Event::BattleClosed(_) => self.closed_at = Some((version, self.epoch)),
        }
    }

    fn battle_opened(&mut self, report: &mut AuditReport, version: u64, opened: &BattleOpened) {
        if version != 0 || self.battle.is_some() {
            report.find(version, Problem::OpenedAgain);
            return;
        }
        self.client_seed.clone_from(&opened.client_seed);
        self.commitments.insert(0, opened.commitment.clone());
        match open(opened) {
            Ok(battle) => self.battle = Some(battle),
            Err(problem) => report.find(version, problem),
        }
    }

    fn seed_committed(&mut self, report: &mut AuditReport, version: u64, committed: &SeedCommitted) {
        let previous = self.epoch;
        if previous.checked_add(1) != Some(committed.epoch) {
            report.find(version, Problem::EpochOutOfOrder { epoch: committed.epoch, previous });
        }
        if !self.revealed.contains_key(&previous) {
            report.find(version, Problem::EpochBeforeReveal { epoch: committed.epoch, previous });
        }
        self.epoch = committed.epoch;
        self.commitments.insert(committed.epoch, committed.commitment.clone());
    }

    fn dice_rolled(&mut self, report: &mut AuditReport, version: u64, rolled: &DiceRolled) {
        if rolled.nonce != self.next_nonce {
            report.find(version, Problem::NonceOutOfOrder { nonce: rolled.nonce, next: self.next_nonce });
        }
        if rolled.epoch != self.epoch || self.revealed.contains_key(&rolled.epoch) {
            report.find(version, Problem::RollOutsideEpoch { epoch: rolled.epoch, current: self.epoch });
        }
        self.next_nonce = self.next_nonce.max(rolled.nonce).saturating_add(1);
        self.journaled_rolls.push((version, rolled.clone()));
        if self.rolls.insert(rolled.nonce, rolled.clone()).is_some() {
            report.find(version, Problem::NonceReused { nonce: rolled.nonce });
        }
    }

    /// Re-resolves the action from the faces of the rolls it names and
    /// compares with what was recorded; then goes on from what was
    /// recorded, so that one bad action is one finding.
    fn action_resolved(&mut self, report: &mut AuditReport, version: u64, resolved: &ActionResolved) {
        if self.battle.is_none() {
            return;
        }
        let (action, outcome) = match resolved_parts(resolved) {
            Ok(parts) => parts,
            Err(e) => return report.find(version, e),
        };
        let used = self.used_rolls(report, version, &resolved.rolls);
        let Some(current) = self.battle.as_ref() else { return };
        let fits = dice_fit(report, version, current, &action, &used.expressions);
        if used.usable && fits {
            match check_resolution(current, version, &action, &used.faces, &outcome, resolved) {
                Ok(()) => report.actions_verified += 1,
                Err(problem) => report.find(version, problem),
            }
        }
        match current.apply(version, &action, &outcome) {
            Ok(next) => self.battle = Some(next),
            Err(e) => report.find(version, Problem::CannotReplay(e)),
        }
    }

    /// The rolls an action names, in order. Each one that cannot be used
    /// is a finding; every journaled one counts as used from now on, so
    /// that it is not also reported as unused.
    fn used_rolls(&mut self, report: &mut AuditReport, version: u64, nonces: &[u64]) -> UsedRolls {
        let UsedRolls { mut faces, mut expressions, mut usable } = UsedRolls { usable: true, ..UsedRolls::default() };
        for &nonce in nonces {
            let Some(roll) = self.rolls.get(&nonce) else {
                usable = false;
                report.find(version, Problem::RollNotJournaled { nonce });
                continue;
            };
            if !self.used_nonces.insert(nonce) {
                usable = false;
                report.find(version, Problem::RollUsedTwice { nonce });
                continue;
            }
            expressions.push(roll.expression.clone());
            match dice::Expression::parse(&roll.expression) {
                Ok(expression) => {
                    let dice: Vec<dice::Die> = roll.dice.iter().map(die_from_proto).collect();
                    faces.extend(dice::raw_faces(&expression, &dice));
                }
                Err(source) => {
                    usable = false;
                    report.find(version, Problem::UsedRollExpression { nonce, source });
                }
            }
        }
        UsedRolls { faces, expressions, usable }
    }

    /// A dispute or a ruling: no dice, folded by the rules. False when it
    /// did not fold (a finding says why).
    fn fold_command(&mut self, report: &mut AuditReport, version: u64, action: &Action) -> bool {
        let Some(current) = self.battle.as_ref() else { return false };
        match current.resolve(version, action, &[]) {
            Ok(resolution) => {
                self.battle = Some(resolution.battle);
                true
            }
            Err(e) => {
                report.find(version, e);
                false
            }
        }
    }

    /// RULES.md §5.1: only a judge rules, and the ruling's judge is the
    /// credential's subject (the resolver takes it from the token).
    fn judge_ruling(&mut self, report: &mut AuditReport, version: u64, ruling: &JudgeRuling) {
        if let Some(credential) = &ruling.credential
            && (credential.role != "judge" || credential.subject != ruling.judge)
        {
            report.find(
                version,
                Problem::RulingCredential {
                    judge: ruling.judge.clone(),
                    role: credential.role.clone(),
                    subject: credential.subject.clone(),
                },
            );
        }
        // Cheap: a battle's history entries are shared, not copied.
        let before = self.battle.clone();
        let folded = self.fold_command(report, version, &ruling_action(ruling));
        let after = if folded { self.battle.as_ref() } else { None };
        report.rulings.push(RulingSeen::new(version, ruling, before.as_ref(), after));
    }

    fn seed_revealed(&mut self, report: &mut AuditReport, version: u64, reveal: &SeedRevealed) {
        match check_reveal(&self.commitments, reveal.epoch, &reveal.server_seed) {
            Ok(()) => {
                self.revealed.insert(reveal.epoch, reveal.server_seed.clone());
            }
            Err(problem) => report.find(version, problem),
        }
    }

    /// What can only be checked once every event is in: the close's reveal,
    /// rolls no action used, and every roll against its revealed seed.
    fn finish(self, report: &mut AuditReport) {
        // Closing reveals the seed; a closed battle without that reveal
        // hides rolls from re-derivation.
        if let Some((version, epoch)) = self.closed_at
            && !self.revealed.contains_key(&epoch)
        {
            report.find(version, Problem::ClosedUnrevealed { epoch });
        }
        for (version, roll) in &self.journaled_rolls {
            let (version, nonce) = (*version, roll.nonce);
            // Every roll is made for one action. A roll no action used is
            // what peeking at the dice and rolling again would leave behind.
            if !self.used_nonces.contains(&nonce) {
                report.find(version, Problem::RollUnused { nonce, expression: roll.expression.clone() });
            }
            let Some(seed) = self.revealed.get(&roll.epoch) else {
                report.rolls_pending_reveal.push(version);
                continue;
            };
            match rederive(seed, &self.client_seed, roll) {
                Ok(()) => report.rolls_verified += 1,
                Err(problem) => report.find(version, problem),
            }
        }
        report.commitments = self.commitments.into_iter().collect();
    }
}

/// The rolls an action used, as [`Replay::used_rolls`] read them.
#[derive(Default)]
struct UsedRolls {
    /// The raw faces, in draw order, for the rules.
    faces: Vec<u32>,
    /// The expressions of the usable rolls, in order.
    expressions: Vec<String>,
    /// Every roll named is journaled, unused before and parses.
    usable: bool,
}

/// The rules battle a `BattleOpened` starts.
fn open(opened: &BattleOpened) -> Result<Battle, Problem> {
    let ruleset = opened.ruleset.parse::<rules::RulesetId>()?;
    Ok(Battle::new(ruleset, participants(opened)?)?)
}

/// The rules allow the action here and ask for exactly the dice it used.
fn dice_fit(report: &mut AuditReport, version: u64, battle: &Battle, action: &Action, used: &[String]) -> bool {
    match battle.dice_needed(action) {
        Ok(request) if request.expressions() != used => {
            report.find(version, Problem::DiceMismatch { needed: request.expressions(), used: used.to_vec() });
            false
        }
        Ok(_) => true,
        Err(rejection) => {
            report.find(version, Problem::Forbidden(rejection));
            false
        }
    }
}

/// The rules, given the action's faces, give the recorded outcome and summary.
fn check_resolution(
    battle: &Battle,
    version: u64,
    action: &Action,
    faces: &[u32],
    recorded: &Outcome,
    resolved: &ActionResolved,
) -> Result<(), Problem> {
    let resolution = battle.resolve(version, action, faces)?;
    if resolution.outcome != *recorded {
        return Err(Problem::OutcomeDiffers {
            recorded: serde_json::to_string(recorded).unwrap_or_default(),
            derived: serde_json::to_string(&resolution.outcome).unwrap_or_default(),
        });
    }
    if resolution.summary.ru != resolved.summary_ru || resolution.summary.en != resolved.summary_en {
        return Err(Problem::SummaryDiffers);
    }
    Ok(())
}
