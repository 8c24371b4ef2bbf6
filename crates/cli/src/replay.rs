//! `battlelog replay`: a battle replayed to a version, its events and the
//! state then in words. The explanations and state are the verify crate's
//! fold (`battlelog_verify::explained`), rendered by `rules::explain`: the
//! same the battle page shows; the judging lines are the audit's
//! ([`crate::audit`]).

use std::fmt::Write;

use battlelog_proto::battle;
use battlelog_proto::v1::GetBattleRequest;
use battlelog_proto::v1::battle_event::Event;
use battlelog_verify::audit::{AuditReport, AuditedRecord, audit};
use battlelog_verify::explained;
use clap::{Args, ValueEnum};
use rules::explain::{Lang, state_lines, state_view};
use serde_json::Value;

use crate::Output;
use crate::audit::{after_close, note, ruling_list, write_changes};
use crate::client::{self, ResolverEndpoint};
use battlelog_auth::Role;

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The battle id.
    battle: String,
    /// Replay up to and including this version (default: the head).
    #[arg(long)]
    at: Option<u64>,
    /// Instead of every event, each action's final outcome after every
    /// ruling (up to --at), with the rulings that changed it.
    #[arg(long = "final")]
    final_outcomes: bool,
    /// The language of the explanations under each action and of the
    /// state in words.
    #[arg(long, value_enum, default_value_t = LangArg::En)]
    lang: LangArg,
    #[command(flatten)]
    resolver: ResolverEndpoint,
    #[command(flatten)]
    tls: crate::tls::TlsArgs,
}

/// `--lang`: the two languages the explanations are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LangArg {
    En,
    Ru,
}

impl From<LangArg> for Lang {
    fn from(lang: LangArg) -> Lang {
        match lang {
            LangArg::En => Lang::En,
            LangArg::Ru => Lang::Ru,
        }
    }
}

pub async fn replay(args: &ReplayArgs) -> anyhow::Result<Output> {
    let mut resolver = client::resolver(&args.resolver, &args.tls, Role::Reader).await?;
    let state = resolver
        .get_battle(GetBattleRequest { battle_id: args.battle.clone(), at_version: args.at })
        .await
        .map_err(|s| anyhow::anyhow!("resolver: {}", s.message()))?
        .into_inner();
    let events = client::read_battle(&mut resolver, &args.battle).await?;
    let shown: Vec<_> =
        events.into_iter().take_while(|e| e.event.as_ref().is_some_and(|r| r.version <= state.version)).collect();
    // What each ruling changed, and what the rulings left of each action,
    // are the audit's to work out (one fold, the same as `battlelog audit`
    // shows); its findings are the audit's to report.
    let records: Vec<_> = shown.iter().map(|e| AuditedRecord::from_recorded(&args.battle, e.clone())).collect();
    let report = audit(&args.battle, &records);
    let lang = Lang::from(args.lang);
    let why = Why::fold(&records, state.version, lang);
    let mut text = String::new();
    if args.final_outcomes {
        writeln!(text, "final outcomes after every ruling up to version {}:", state.version)?;
    }
    for recorded in &shown {
        let Some(record) = &recorded.event else { continue };
        let event = match battle::decode(record) {
            Ok(event) => event,
            Err(e) => {
                if !args.final_outcomes {
                    writeln!(text, "#{} undecodable: {e}", record.version)?;
                }
                continue;
            }
        };
        if args.final_outcomes {
            if let (Event::ActionResolved(resolved), Some(fin)) = (&event, report.final_outcomes.get(&record.version)) {
                let ruled =
                    if fin.rulings.is_empty() { String::new() } else { format!(" [{}]", ruling_list(&fin.rulings)) };
                writeln!(text, "#{} {}: {}{ruled}", record.version, resolved.summary_en, fin.outcome)?;
            }
            continue;
        }
        write!(text, "#{} {}", record.version, describe_event_at(&event, &report, record.version))?;
        write!(text, " [{}]", provenance(&event, record.recorded_at_unix_micros))?;
        if let Some(ruling) = report.rulings.iter().find(|r| r.version == record.version) {
            write_changes(&mut text, ruling);
        }
        if let Event::ActionResolved(resolved) = &event {
            // What contests it and what the rulings left of it come first
            // (scripts read them right under the action), then the why of
            // the recorded outcome.
            write_judged(&mut text, &report, record.version, resolved);
            why.write_explanation(&mut text, record.version);
        }
        writeln!(text)?;
    }
    // The state in words, indented so that the raw state (its header line
    // and JSON, which scripts parse) stays the output's last part.
    why.write_state(&mut text);
    let state_json = state.state.as_ref().map(|s| Value::Object(battle::struct_to_json(s))).unwrap_or(Value::Null);
    let appeal = state
        .appeal_deadline_unix_micros
        .map(|deadline| format!(", appeals until {}", rfc3339(deadline)))
        .unwrap_or_default();
    writeln!(
        text,
        "state at version {} ({}, next nonce {}, epoch {}{}{appeal}):",
        state.version,
        state.ruleset,
        state.next_nonce,
        state.epoch,
        if state.closed { ", closed" } else { "" }
    )?;
    write!(text, "{}", serde_json::to_string_pretty(&state_json)?)?;
    Ok(Output::text(text))
}

/// What the fold of the replayed records explains: each action's "why"
/// and the state in words, in one language.
struct Why {
    lang: Lang,
    /// Each `ActionResolved`'s explanation lines, by version.
    explanations: std::collections::BTreeMap<u64, Vec<String>>,
    /// The last version folded and the state right after it, in words.
    state: Option<(u64, Vec<String>)>,
    /// Where the fold stopped short (or could not start), and why.
    stopped: Option<explained::FoldError>,
}

impl Why {
    /// Folds `records` up to `until`. A record that does not fold stops
    /// the fold there: what came before is kept, and the stop is said.
    fn fold(records: &[AuditedRecord], until: u64, lang: Lang) -> Why {
        match explained::fold(records, Some(until)) {
            Ok(folded) => {
                let last = match &folded.stopped {
                    Some(stop) => stop.version.checked_sub(1),
                    None => Some(until),
                };
                Why {
                    lang,
                    explanations: folded
                        .explanations
                        .iter()
                        .map(|(version, explanation)| (*version, explanation.lines(lang)))
                        .collect(),
                    state: last.map(|last| (last, state_lines(&state_view(&folded.battle), lang))),
                    stopped: folded.stopped,
                }
            }
            Err(stop) => Why { lang, explanations: Default::default(), state: None, stopped: Some(stop) },
        }
    }

    /// The explanation of the action at `version`, one indented line a
    /// fact, each after a newline.
    fn write_explanation(&self, text: &mut String, version: u64) {
        for line in self.explanations.get(&version).into_iter().flatten() {
            let _ = write!(text, "\n    {}", one_line(line));
        }
    }

    /// Where the fold stopped, if it did, and the state in words.
    fn write_state(&self, text: &mut String) {
        let ru = self.lang == Lang::Ru;
        if let Some(stop) = &self.stopped {
            let _ = if ru {
                writeln!(text, "  объяснения обрываются на #{}: {}", stop.version, one_line(&stop.message))
            } else {
                writeln!(text, "  the explanations stop at #{}: {}", stop.version, one_line(&stop.message))
            };
        }
        if let Some((version, lines)) = &self.state {
            let _ = if ru {
                writeln!(text, "  состояние на #{version}:")
            } else {
                writeln!(text, "  state at #{version}:")
            };
            for line in lines {
                let _ = writeln!(text, "    {}", one_line(line));
            }
        }
    }
}

/// `line` with its control characters escaped: forum text (a Metronome
/// move, a status name) must not start a line of its own.
fn one_line(line: &str) -> String {
    line.chars().map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() }).collect()
}

/// Under an action, indented: the disputes and rulings that contest it
/// and, when rulings changed its outcome, the final outcome (with the
/// rulings that made it) and the recorded one it replaced.
fn write_judged(text: &mut String, report: &AuditReport, version: u64, resolved: &battlelog_proto::v1::ActionResolved) {
    let mut contested: Vec<String> =
        report.disputes.iter().filter(|d| d.contests == version).map(|d| format!("dispute #{}", d.version)).collect();
    contested.extend(report.rulings.iter().filter(|r| r.contests == version).map(|r| format!("ruling #{}", r.version)));
    if !contested.is_empty() {
        let _ = write!(text, "\n    contested by {}", contested.join(", "));
    }
    if let Some(fin) = report.final_outcomes.get(&version).filter(|fin| !fin.rulings.is_empty()) {
        let recorded =
            resolved.outcome.as_ref().map(|o| Value::Object(battle::struct_to_json(o))).unwrap_or(Value::Null);
        let _ = write!(text, "\n    final outcome after {}: {}", ruling_list(&fin.rulings), fin.outcome);
        let _ = write!(text, "\n    recorded outcome (overruled): {recorded}");
    }
}

/// Who and when: the event's recorded credential (role and subject), when
/// it has one, and the journal's time.
pub fn provenance(event: &Event, recorded_at_unix_micros: i64) -> String {
    let time = rfc3339(recorded_at_unix_micros);
    match battle::credential(event) {
        Some(credential) => format!("{} {}, {time}", credential.role, credential.subject),
        None => time,
    }
}

/// µs since the Unix epoch as RFC 3339, UTC.
fn rfc3339(micros: i64) -> String {
    prost_types::Timestamp {
        seconds: micros.div_euclid(1_000_000),
        nanos: i32::try_from(micros.rem_euclid(1_000_000) * 1_000).unwrap_or(0),
    }
    .to_string()
}

/// [`describe_event`], with a ruling or dispute marked when it came after
/// the close.
fn describe_event_at(event: &Event, report: &AuditReport, version: u64) -> String {
    let line = describe_event(event);
    let late = match event {
        Event::JudgeRuling(_) => report.rulings.iter().any(|r| r.version == version && r.after_close),
        Event::DisputeRaised(_) => report.disputes.iter().any(|d| d.version == version && d.after_close),
        _ => false,
    };
    if late { format!("{line}{}", after_close(true)) } else { line }
}

/// One line per event, in English, for a judge reading a replay. A
/// close names who closed it by its recorded credential; its free-text
/// `by` is only a note.
pub fn describe_event(event: &Event) -> String {
    match event {
        Event::BattleOpened(e) => format!("opened {} with {} participants", e.ruleset, e.participants.len()),
        Event::SeedCommitted(e) => format!("epoch {} committed: {}", e.epoch, e.commitment),
        Event::DiceRolled(e) => {
            format!("roll #{} for {} ({}): {}", e.nonce, e.actor, e.purpose, battle::rendering(e))
        }
        Event::ActionResolved(e) => e.summary_en.clone(),
        Event::DisputeRaised(e) => format!("{} disputes #{}: {}", e.by, e.refers_to, e.reason),
        Event::JudgeRuling(e) => format!("judge {} rules on #{}: {}", e.judge, e.refers_to, e.text),
        Event::SeedRevealed(e) => format!("epoch {} seed revealed: {}", e.epoch, e.server_seed),
        Event::BattleClosed(e) => {
            let by = e
                .credential
                .as_ref()
                .map_or("an unrecorded credential".to_owned(), |c| format!("{} {}", c.role, c.subject));
            format!("closed by {by}{}: {}", note(&e.by), e.reason)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use battlelog_proto::v1::JournalRecord;
    use battlelog_verify::export;
    use prost::Message;

    /// The closed `pokemon-d6@2` demo battle of the browser verifier's tests:
    /// its actions are versions 2, 4, 6, 7 and 9.
    const DEMO: &str = include_str!("../../../web/verifier/test/fixtures/demo-pokemon-closed.jsonl");

    fn written(why: &Why) -> String {
        let mut text = String::new();
        why.write_state(&mut text);
        text
    }

    /// An event that does not fold (here, bytes that decode to no event)
    /// stops the explanations there, on one line; what came before is kept,
    /// and the state shown is the one before it.
    #[test]
    fn a_bad_event_stops_the_explanations_and_keeps_what_came_before() {
        let mut records = export::parse(DEMO).expect("an export");
        let mut record = JournalRecord::decode(records[6].record.as_slice()).expect("a record");
        record.payload = vec![0xff, 0xff, 0xff];
        records[6].record = record.encode_to_vec();

        let why = Why::fold(&records, 9, Lang::En);
        assert_eq!(why.explanations.keys().copied().collect::<Vec<_>>(), vec![2, 4]);
        assert_eq!(why.stopped.as_ref().map(|s| s.version), Some(6));
        let text = written(&why);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("  the explanations stop at #6: "), "{text}");
        assert_eq!(lines.iter().filter(|l| l.contains("stop")).count(), 1, "one line: {text}");
        assert_eq!(lines[1], "  state at #5:", "{text}");
        // The state before the bad event is the untampered fold's at 5.
        let clean = Why::fold(&export::parse(DEMO).expect("an export"), 5, Lang::En);
        assert_eq!(clean.stopped, None);
        assert_eq!(written(&clean), lines[1..].iter().map(|l| format!("{l}\n")).collect::<String>());

        // Russian words for the same.
        let text = written(&Why::fold(&records, 9, Lang::Ru));
        assert!(text.starts_with("  объяснения обрываются на #6: "), "{text}");
        assert!(text.contains("\n  состояние на #5:\n"), "{text}");
    }

    /// Records that open no battle: the stop is said, nothing is explained,
    /// no state is made up, and nothing panics.
    #[test]
    fn records_that_open_no_battle_say_so() {
        let mut records = export::parse(DEMO).expect("an export");
        records.remove(0);
        let why = Why::fold(&records, 9, Lang::En);
        assert!(why.explanations.is_empty());
        assert_eq!(why.state, None);
        let text = written(&why);
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.starts_with("  the explanations stop at #1: "), "{text}");
    }

    /// A consistency proof file: a JSON list of base64 32-byte hashes; any
    /// other shape is refused naming the hash and what is wrong with it.
    #[test]
    fn forum_text_cannot_start_a_line() {
        assert_eq!(one_line("Thunder\n#5 forged"), "Thunder\\n#5 forged");
    }
}
