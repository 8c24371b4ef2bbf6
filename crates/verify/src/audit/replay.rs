//! The semantic half of the audit: the battle replayed event by event, one
//! checker per event type, against commitments, nonces, rolls and rules.

use std::collections::{BTreeMap, HashSet};

use battlelog_proto::battle::die_from_proto;
use battlelog_proto::v1::{
    ActionResolved, BattleOpened, DiceRolled, JudgeRuling, RequestedAction, SeedCommitted, SeedRevealed,
    battle_event::Event,
};
use rules::{Action, Battle, Outcome};

use super::rolls::{check_reveal, rederive};
use super::{AuditReport, CloseSeen, DisputeSeen, FinalOutcome, Problem, RulingSeen};
use crate::chain::Hash;
use crate::fold::{dispute_action, participants, resolved_parts, ruling_action};
use crate::judging::AffectedAction;
use crate::stream_state::{StreamEvent, StreamState, Violation};

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
    /// Opened, the current epoch, whether it is revealed, the next nonce,
    /// closed: the stream's fold, as recorded. The audit reports the rules
    /// an event breaks and goes on from what was recorded.
    stream: StreamState,
    commitments: BTreeMap<u32, String>,
    /// The seeds revealed, by epoch, each against its epoch's commitment:
    /// what every roll is re-derived from.
    revealed: BTreeMap<u32, String>,
    /// By nonce, the latest journaled: what an action's nonce refers to.
    rolls: BTreeMap<u64, DiceRolled>,
    /// Every roll as journaled: each one is re-derived, even one whose
    /// nonce a later roll repeats (an inserted forgery must not hide behind
    /// the real roll it duplicates).
    journaled_rolls: Vec<(u64, DiceRolled)>,
    used_nonces: HashSet<u64>,
    /// The close and the epoch current then: that epoch must be revealed.
    closed_at: Option<(u64, u32)>,
    /// The versions of the actions folded, for their final outcomes.
    actions: Vec<u64>,
    /// Every version the rules folded (actions, disputes, rulings), in
    /// order, and the faces of each action whose rolls were usable: what a
    /// ruling's affected actions are resolved again from.
    folded: Vec<u64>,
    faces: BTreeMap<u64, Vec<u32>>,
    /// By ruling version, the effective outcome its override left on the
    /// action it rules on (only rulings that changed something).
    overrides: BTreeMap<u64, Outcome>,
    /// The action rolled and not yet resolved (roll-forward).
    pending: Option<PendingAction>,
    /// Rolls reported as left pending: not reported again as unused.
    left_pending: HashSet<u64>,
}

/// An action whose rolls are journaled and whose resolution is not yet:
/// its first roll carried it (`DiceRolled.for_action`).
struct PendingAction {
    /// The action and its caller, as its first roll recorded them.
    requested: RequestedAction,
    /// The nonces drawn for it, in order.
    nonces: Vec<u64>,
}

/// What the stream fold needs of `event`, for the audit. Its digests are
/// left out (zero): the audit checks each revealed seed against its own
/// epoch's commitment ([`check_reveal`], which also reports a seed that
/// is not hex), so it never asks the fold to compare them, and a
/// commitment that is not hex must not keep the fold from going on.
fn stream_event(event: &Event) -> StreamEvent {
    match event {
        Event::BattleOpened(_) => StreamEvent::Opened { commitment: Hash::default() },
        Event::SeedCommitted(committed) => {
            StreamEvent::Committed { epoch: committed.epoch, commitment: Hash::default() }
        }
        Event::DiceRolled(rolled) => StreamEvent::rolled(rolled),
        Event::SeedRevealed(revealed) => StreamEvent::Revealed { epoch: revealed.epoch, seed_hash: Hash::default() },
        Event::BattleClosed(_) => StreamEvent::Closed,
        Event::DisputeRaised(_) | Event::JudgeRuling(_) => StreamEvent::Appeal,
        Event::ActionResolved(_) => StreamEvent::Resolved,
    }
}

impl Replay {
    fn event(&mut self, report: &mut AuditReport, version: u64, event: &Event) {
        let step = stream_event(event);
        let broken = self.stream.violations(&step);
        // A reveal is what closing does, and disputes and rulings may follow
        // in the appeal window (a policy of the resolver's clock, which an
        // offline audit cannot judge); anything else after it may not.
        if broken.contains(&Violation::Closed) {
            report.find(version, Problem::AfterClose);
        }
        // Reported once, at the event that came too early; the audit then
        // goes on as if the action had been dropped there.
        if broken.contains(&Violation::ActionPending) {
            if let Some(pending) = self.pending.take() {
                report.find(version, Problem::RollLeftPending { nonce: pending.nonces[0] });
                self.left_pending.extend(pending.nonces);
            }
            self.stream.pending = false;
        }
        match event {
            // An opening out of place changes nothing.
            Event::BattleOpened(opened) => {
                if !self.battle_opened(report, version, opened, &broken) {
                    return;
                }
            }
            _ if !self.stream.opened && version == 0 => return report.find(version, Problem::NotOpened),
            Event::SeedCommitted(committed) => self.seed_committed(report, version, committed, &broken),
            Event::DiceRolled(rolled) => self.dice_rolled(report, version, rolled, &broken),
            Event::ActionResolved(resolved) => self.action_resolved(report, version, resolved),
            Event::DisputeRaised(dispute) => {
                report.disputes.push(DisputeSeen::new(version, dispute, self.closed_at.is_some()));
                self.fold_command(report, version, &dispute_action(dispute));
            }
            Event::JudgeRuling(ruling) => self.judge_ruling(report, version, ruling),
            // Only a reveal that matches its epoch's commitment reveals it.
            Event::SeedRevealed(reveal) => {
                if !self.seed_revealed(report, version, reveal) {
                    return;
                }
            }
            Event::BattleClosed(closed) => {
                // The first close is the battle's; a second one is a
                // finding (after the close) and changes nothing.
                if self.closed_at.is_none() {
                    report.closed = Some(CloseSeen::new(version, closed));
                    self.closed_at = Some((version, self.stream.epoch));
                }
            }
        }
        self.stream.advance(&step);
    }

    /// Whether this is the battle's opening: version 0, once (a finding
    /// says why not).
    fn battle_opened(
        &mut self,
        report: &mut AuditReport,
        version: u64,
        opened: &BattleOpened,
        broken: &[Violation],
    ) -> bool {
        if version != 0 || broken.contains(&Violation::AlreadyOpened) {
            report.find(version, Problem::OpenedAgain);
            return false;
        }
        self.client_seed.clone_from(&opened.client_seed);
        self.commitments.insert(0, opened.commitment.clone());
        match open(opened) {
            Ok(battle) => self.battle = Some(battle),
            Err(problem) => report.find(version, problem),
        }
        true
    }

    fn seed_committed(
        &mut self,
        report: &mut AuditReport,
        version: u64,
        committed: &SeedCommitted,
        broken: &[Violation],
    ) {
        let (epoch, previous) = (committed.epoch, self.stream.epoch);
        for violation in broken {
            match violation {
                Violation::EpochMismatch { .. } => report.find(version, Problem::EpochOutOfOrder { epoch, previous }),
                Violation::EpochNotRevealed { .. } => {
                    report.find(version, Problem::EpochBeforeReveal { epoch, previous })
                }
                _ => {}
            }
        }
        self.commitments.insert(epoch, committed.commitment.clone());
    }

    fn dice_rolled(&mut self, report: &mut AuditReport, version: u64, rolled: &DiceRolled, broken: &[Violation]) {
        if let Some(&Violation::NonceOutOfOrder { nonce, next }) =
            broken.iter().find(|v| matches!(v, Violation::NonceOutOfOrder { .. }))
        {
            report.find(version, Problem::NonceOutOfOrder { nonce, next });
        }
        // Outside the current epoch, or in it once it is revealed: one finding.
        if broken.iter().any(|v| matches!(v, Violation::EpochMismatch { .. } | Violation::EpochRevealed { .. })) {
            report.find(version, Problem::RollOutsideEpoch { epoch: rolled.epoch, current: self.stream.epoch });
        }
        if let Some(requested) = &rolled.for_action {
            self.pending = Some(PendingAction { requested: requested.clone(), nonces: vec![rolled.nonce] });
        } else if let Some(pending) = &mut self.pending {
            pending.nonces.push(rolled.nonce);
        }
        self.journaled_rolls.push((version, rolled.clone()));
        if self.rolls.insert(rolled.nonce, rolled.clone()).is_some() {
            report.find(version, Problem::NonceReused { nonce: rolled.nonce });
        }
    }

    /// Re-resolves the action from the faces of the rolls it names and
    /// compares with what was recorded; then goes on from what was
    /// recorded, so that one bad action is one finding.
    fn action_resolved(&mut self, report: &mut AuditReport, version: u64, resolved: &ActionResolved) {
        // The action resolved right after rolls drawn for an action must be
        // that action, with exactly those rolls: nobody may draw dice for
        // one action and spend them on another.
        if let Some(pending) = self.pending.take() {
            if pending.requested.action != resolved.action {
                report.find(version, Problem::ActionNotTheRolled { nonce: pending.nonces[0] });
            }
            if pending.nonces != resolved.rolls {
                report.find(version, Problem::RollsNotTheDrawn { drawn: pending.nonces, used: resolved.rolls.clone() });
            }
        }
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
            self.faces.insert(version, used.faces);
        }
        match current.apply(version, &action, &outcome) {
            Ok(next) => {
                self.battle = Some(next);
                self.folded.push(version);
            }
            Err(e) => report.find(version, Problem::CannotReplay(e)),
        }
        self.actions.push(version);
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
                self.folded.push(version);
                true
            }
            Err(e) => {
                report.find(version, e);
                false
            }
        }
    }

    /// docs/rules.md §5.1: only a judge rules, and the ruling's judge is the
    /// credential's subject (the resolver takes it from the token); a ruling
    /// that names the dispute it answers names one raised before it.
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
        if let Some(answers) = ruling.answers_dispute
            && !report.disputes.iter().any(|dispute| dispute.version == answers)
        {
            report.find(version, Problem::RulingAnswersNoDispute { answers });
        }
        // Cheap: a battle's history entries are shared, not copied.
        let before = self.battle.clone();
        let folded = self.fold_command(report, version, &ruling_action(ruling));
        let after = if folded { self.battle.as_ref() } else { None };
        let after_close = self.closed_at.is_some();
        let seen = RulingSeen::new(version, ruling, before.as_ref(), after, after_close);
        if let Some(entry) = after.and_then(|after| after.entry(ruling.refers_to))
            && !seen.changes.is_empty()
        {
            self.overrides.insert(version, entry.effective.clone());
        }
        report.rulings.push(seen);
    }

    /// Whether the seed matches its epoch's commitment (a finding says
    /// why not).
    fn seed_revealed(&mut self, report: &mut AuditReport, version: u64, reveal: &SeedRevealed) -> bool {
        match check_reveal(&self.commitments, reveal.epoch, &reveal.server_seed) {
            Ok(()) => {
                self.revealed.insert(reveal.epoch, reveal.server_seed.clone());
                true
            }
            Err(problem) => {
                report.find(version, problem);
                false
            }
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
            // An action still pending at the end (an export taken between
            // its roll and its resolution) is not finished yet, not
            // abandoned; one left behind is reported where it was.
            let pending = self.pending.as_ref().is_some_and(|p| p.nonces.contains(&nonce));
            if !self.used_nonces.contains(&nonce) && !pending && !self.left_pending.contains(&nonce) {
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
        if let Some(battle) = &self.battle {
            for ruling in &mut report.rulings {
                if let Some(effective) = self.overrides.get(&ruling.version) {
                    ruling.affected = affected_by(battle, &self.folded, &self.faces, ruling, effective);
                }
            }
        }
        // Each action's effective outcome once every ruling is in, and the
        // rulings that changed it: what a reader needs at the action itself.
        if let Some(battle) = &self.battle {
            for version in self.actions {
                let Some(entry) = battle.entry(version) else { continue };
                let rulings = report
                    .rulings
                    .iter()
                    .filter(|r| r.contests == version && !r.changes.is_empty())
                    .map(|r| r.version)
                    .collect();
                let outcome = serde_json::to_value(&entry.effective).unwrap_or_default();
                report.final_outcomes.insert(version, FinalOutcome { outcome, rulings });
            }
        }
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

/// The actions resolved between the action `ruling` rules on and the
/// ruling itself that come out otherwise when resolved again, with their
/// own dice, on the battle as the override leaves it (`effective` in place
/// of the ruled action's outcome). Those after the ruling were resolved on
/// top of it already; an action whose rolls could not be used (a finding
/// says why) is folded as recorded but not resolved again.
fn affected_by(
    battle: &Battle,
    folded: &[u64],
    faces: &BTreeMap<u64, Vec<u32>>,
    ruling: &RulingSeen,
    effective: &Outcome,
) -> Vec<AffectedAction> {
    let ruled = ruling.contests;
    let Ok(mut again) = battle.as_of(ruled).and_then(|b| b.with_effective(ruled, effective.clone())) else {
        return Vec::new();
    };
    let mut affected = Vec::new();
    for &version in folded.iter().filter(|&&v| v > ruled && v < ruling.version) {
        let Some(entry) = battle.entry(version) else { continue };
        if let Some(faces) = faces.get(&version) {
            let resolved = again.resolve(version, &entry.action, faces);
            let outcome = resolved.as_ref().map(|r| &r.outcome).map_err(ToString::to_string);
            affected.extend(AffectedAction::compare(version, &entry.outcome, outcome));
        }
        // On from what was recorded, as the battle went on.
        match again.apply(version, &entry.action, &entry.outcome) {
            Ok(next) => again = next,
            Err(_) => break,
        }
    }
    affected
}

#[cfg(test)]
mod tests {
    use battlelog_proto::v1::{BattleClosed, DisputeRaised};
    use sha2::{Digest, Sha256};

    use super::*;

    /// docs/protocol.md §1: the seed of epoch `e` here is 32 bytes of `e + 1`,
    /// its commitment the lowercase hex of its SHA-256.
    fn seed(epoch: u32) -> String {
        hex::encode([epoch as u8 + 1; 32])
    }

    fn commitment(epoch: u32) -> String {
        hex::encode(Sha256::digest([epoch as u8 + 1; 32]))
    }

    fn opened() -> Event {
        // No ruleset: the rules' findings stay out of the way.
        Event::BattleOpened(BattleOpened { commitment: commitment(0), ..Default::default() })
    }

    fn rolled(epoch: u32, nonce: u64) -> Event {
        Event::DiceRolled(DiceRolled { epoch, nonce, expression: "1d6".into(), ..Default::default() })
    }

    fn revealed(epoch: u32, seed: String) -> Event {
        Event::SeedRevealed(SeedRevealed { epoch, server_seed: seed, credential: None })
    }

    fn closed() -> Event {
        Event::BattleClosed(BattleClosed::default())
    }

    /// The findings about the stream's epochs, nonces, reveals and close.
    fn stream_findings(events: Vec<Event>) -> Vec<(u64, Problem)> {
        let mut report = AuditReport::default();
        let events: Vec<(u64, Event)> = events.into_iter().enumerate().map(|(v, e)| (v as u64, e)).collect();
        check_battle(&mut report, &events);
        report
            .findings
            .into_iter()
            .filter(|f| {
                use Problem::*;
                matches!(
                    f.problem,
                    OpenedAgain
                        | NotOpened
                        | AfterClose
                        | EpochOutOfOrder { .. }
                        | EpochBeforeReveal { .. }
                        | NonceOutOfOrder { .. }
                        | NonceReused { .. }
                        | RollOutsideEpoch { .. }
                        | SeedMismatch { .. }
                        | ClosedUnrevealed { .. }
                )
            })
            .map(|f| (f.version, f.problem))
            .collect()
    }

    #[test]
    fn every_rule_a_recorded_event_breaks_is_a_finding_and_the_audit_goes_on() {
        let committed =
            Event::SeedCommitted(SeedCommitted { epoch: 2, commitment: commitment(2), ..Default::default() });
        let dispute = Event::DisputeRaised(DisputeRaised { by: "forum".into(), refers_to: 1, ..Default::default() });
        let findings = stream_findings(vec![
            opened(),
            rolled(0, 1),         // 1: nonce 0 was next
            rolled(1, 2),         // 2: epoch 0 is current; nonce 1 counted as used, so 2 is next
            committed,            // 3: epoch 2 after 0, and 0 never revealed
            revealed(2, seed(2)), // 4: matches epoch 2's commitment
            closed(),             // 5
            rolled(2, 3),         // 6: after the close, in a revealed epoch
            opened(),             // 7: after the close, and again
            dispute,              // 8: the appeal may follow
            revealed(0, seed(1)), // 9: not epoch 0's seed
        ]);
        assert_eq!(
            findings,
            vec![
                (1, Problem::NonceOutOfOrder { nonce: 1, next: 0 }),
                (2, Problem::RollOutsideEpoch { epoch: 1, current: 0 }),
                (3, Problem::EpochOutOfOrder { epoch: 2, previous: 0 }),
                (3, Problem::EpochBeforeReveal { epoch: 2, previous: 0 }),
                (6, Problem::AfterClose),
                (6, Problem::RollOutsideEpoch { epoch: 2, current: 2 }),
                (7, Problem::AfterClose),
                (7, Problem::OpenedAgain),
                (9, Problem::SeedMismatch { epoch: 0, commitment: commitment(0) }),
            ]
        );
    }

    #[test]
    fn a_stream_that_does_not_open_is_found_once_and_its_dice_are_still_checked() {
        let findings = stream_findings(vec![rolled(0, 0), rolled(0, 0), opened(), rolled(0, 0), closed()]);
        assert_eq!(
            findings,
            vec![
                (0, Problem::NotOpened),
                // Version 0 is not folded: nonce 0 is next at version 1.
                (2, Problem::OpenedAgain),
                (3, Problem::NonceOutOfOrder { nonce: 0, next: 1 }),
                (3, Problem::NonceReused { nonce: 0 }),
                (4, Problem::ClosedUnrevealed { epoch: 0 }),
            ]
        );
    }

    /// The first roll of an action: it carries the action.
    fn rolled_for(epoch: u32, nonce: u64, action: &str) -> Event {
        let action = battlelog_proto::battle::json_to_struct(
            serde_json::json!({"type": action}).as_object().expect("an object"),
        );
        Event::DiceRolled(DiceRolled {
            epoch,
            nonce,
            expression: "1d6".into(),
            for_action: Some(RequestedAction { action: Some(action), credential: None }),
            ..Default::default()
        })
    }

    fn resolved(action: &str, rolls: Vec<u64>) -> Event {
        let action = battlelog_proto::battle::json_to_struct(
            serde_json::json!({"type": action}).as_object().expect("an object"),
        );
        Event::ActionResolved(ActionResolved { action: Some(action), rolls, ..Default::default() })
    }

    /// The roll-forward findings, and the rolls found unused. (The battle
    /// here has no ruleset, so no action uses a roll: every roll not
    /// exempted is unused.)
    fn roll_forward_findings(events: Vec<Event>) -> (Vec<(u64, Problem)>, Vec<u64>) {
        let mut report = AuditReport::default();
        let events: Vec<(u64, Event)> = events.into_iter().enumerate().map(|(v, e)| (v as u64, e)).collect();
        check_battle(&mut report, &events);
        let unused = report
            .findings
            .iter()
            .filter_map(|f| match f.problem {
                Problem::RollUnused { nonce, .. } => Some(nonce),
                _ => None,
            })
            .collect();
        let findings = report
            .findings
            .into_iter()
            .filter(|f| {
                use Problem::*;
                matches!(f.problem, RollLeftPending { .. } | ActionNotTheRolled { .. } | RollsNotTheDrawn { .. })
            })
            .map(|f| (f.version, f.problem))
            .collect();
        (findings, unused)
    }

    /// ARCHITECTURE.md, invariant 8, as an auditor sees it: a roll drawn for an
    /// action and followed by anything but that action's resolution is the
    /// operator's finding, reported where the next event came; a
    /// resolution of another action, or with other rolls, is one too; an
    /// action still pending at the end of the export is not.
    #[test]
    fn a_roll_left_without_its_resolution_is_a_finding_where_the_next_event_came() {
        let dispute = || Event::DisputeRaised(DisputeRaised { by: "forum".into(), refers_to: 1, ..Default::default() });
        let (left, unused) = roll_forward_findings(vec![
            opened(),
            rolled_for(0, 0, "attack"), // 1: pending
            rolled(0, 1),               // 2: the same action's second roll
            dispute(),                  // 3: before the resolution
            dispute(),                  // 4: reported once, at the first
            rolled_for(0, 2, "attack"), // 5: pending at the end
        ]);
        assert_eq!(left, vec![(3, Problem::RollLeftPending { nonce: 0 })]);
        assert_eq!(unused, Vec::<u64>::new(), "rolls left pending are not also unused, nor is one still pending");

        let (other, _) =
            roll_forward_findings(vec![opened(), rolled_for(0, 0, "attack"), rolled(0, 1), resolved("dodge", vec![0])]);
        assert_eq!(
            other,
            vec![
                (3, Problem::ActionNotTheRolled { nonce: 0 }),
                (3, Problem::RollsNotTheDrawn { drawn: vec![0, 1], used: vec![0] }),
            ]
        );

        let (clean, _) = roll_forward_findings(vec![
            opened(),
            rolled_for(0, 0, "attack"),
            resolved("attack", vec![0]),
            dispute(),
            rolled_for(0, 1, "attack"), // pending at the end of the export
        ]);
        assert_eq!(clean, vec![], "resolved in turn, and one still pending, are no findings");
    }
}
