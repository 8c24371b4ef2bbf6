//! `battlelog export`, `battlelog audit` and `battlelog replay`: what a judge
//! does with a battle. The export format and the audit are
//! `battlelog-verify`'s: `audit --file` runs on it alone, with no server.

use std::fmt::Write;
use std::path::PathBuf;

use anyhow::Context;
use battlelog_proto::battle;
use battlelog_proto::v1::GetBattleRequest;
use battlelog_proto::v1::battle_event::Event;
use battlelog_verify::audit::{AuditReport, AuditedRecord, Trusted, audit, audit_trusting};
use battlelog_verify::judging::{FieldChange, RulingSeen};
use battlelog_verify::{Hash, export, hash_from_hex};
use clap::Args;
use serde_json::Value;

use crate::Output;
use crate::client::{self, ResolverEndpoint};
use battlelog_auth::Role;

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The battle id.
    battle: String,
    #[command(flatten)]
    resolver: ResolverEndpoint,
    #[command(flatten)]
    tls: crate::tls::TlsArgs,
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// The battle id, exported by the resolver and audited here.
    #[arg(required_unless_present = "file", conflicts_with = "file")]
    battle: Option<String>,
    /// An export (`battlelog export` output) to audit offline: no server needed.
    #[arg(long, value_name = "EXPORT")]
    file: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// The roller key the operator publishes (64 hex digits): every
    /// commitment must be signed by it. Without it, any one key is accepted
    /// and the report names it.
    #[arg(long, value_name = "HEX")]
    roller_key: Option<String>,
    /// The head hash the battle should end at (64 hex digits), e.g. the one
    /// the forum posted: an export that ends anywhere else, such as one cut
    /// short, is a finding.
    #[arg(long, value_name = "HASH", value_parser = hash_from_hex)]
    head: Option<Hash>,
    #[command(flatten)]
    resolver: ResolverEndpoint,
    #[command(flatten)]
    tls: crate::tls::TlsArgs,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The battle id.
    battle: String,
    /// Replay up to and including this version (default: the head).
    #[arg(long)]
    at: Option<u64>,
    #[command(flatten)]
    resolver: ResolverEndpoint,
    #[command(flatten)]
    tls: crate::tls::TlsArgs,
}

pub async fn export(args: &ExportArgs) -> anyhow::Result<Output> {
    let mut resolver = client::resolver(&args.resolver, &args.tls, Role::Reader).await?;
    let events = client::read_battle(&mut resolver, &args.battle).await?;
    Ok(Output::text(export::write(&args.battle, &events)?))
}

pub async fn audit_command(args: &AuditArgs) -> anyhow::Result<Output> {
    let trusted = args.roller_key.as_deref().map(dice::RollerKey::from_hex).transpose().context("--roller-key")?;
    let (battle_id, records) = match (&args.file, &args.battle) {
        (Some(path), _) => {
            let text =
                std::fs::read_to_string(path).with_context(|| format!("cannot read export {}", path.display()))?;
            let records = export::parse(&text).with_context(|| format!("{} is not an export", path.display()))?;
            (records[0].stream.clone(), records)
        }
        (None, Some(battle_id)) => {
            let mut resolver = client::resolver(&args.resolver, &args.tls, Role::Reader).await?;
            let events = client::read_battle(&mut resolver, battle_id).await?;
            let records = events.into_iter().map(|e| AuditedRecord::from_recorded(battle_id, e)).collect();
            (battle_id.clone(), records)
        }
        (None, None) => anyhow::bail!("name a battle or --file EXPORT"),
    };
    let report = audit_trusting(&battle_id, &records, &Trusted { roller_key: trusted.as_ref(), head: args.head });
    let text = if args.json {
        serde_json::to_string_pretty(&report)?
    } else {
        describe(&battle_id, &report, trusted.as_ref(), args.head.is_some())
    };
    Ok(Output { stdout: text, code: if report.ok() { 0 } else { 1 } })
}

fn describe(battle_id: &str, report: &AuditReport, trusted: Option<&dice::RollerKey>, head_given: bool) -> String {
    let mut text = String::new();
    for finding in &report.findings {
        let _ = writeln!(text, "version {}: {}: {}", finding.version, finding.check.as_str(), finding.problem);
    }
    // Disputes and rulings interleaved in version order, as they happened;
    // a ruling's changed fields follow it, indented.
    let mut judging: Vec<(u64, String)> = Vec::new();
    for dispute in &report.disputes {
        let by =
            dispute.by.as_ref().map_or("an unrecorded credential".to_owned(), |a| format!("{} {}", a.role, a.subject));
        let line = format!("dispute of #{} for {} by {by}: {}", dispute.contests, dispute.party, dispute.reason);
        judging.push((dispute.version, line));
    }
    for ruling in &report.rulings {
        let role = ruling.role.as_deref().unwrap_or("unrecorded credential");
        let mut line = format!("ruling on #{} by judge {} ({role}): {}", ruling.contests, ruling.judge, ruling.text);
        write_changes(&mut line, ruling);
        judging.push((ruling.version, line));
    }
    judging.sort_by_key(|(version, _)| *version);
    for (version, line) in judging {
        let _ = writeln!(text, "version {version}: {line}");
    }
    for (epoch, commitment) in &report.commitments {
        let _ = writeln!(text, "epoch {epoch} commitment {commitment}");
    }
    let _ = match (&report.roller_key, trusted) {
        (Some(key), None) => {
            writeln!(text, "roller key {key} signed the commitments (compare it with the one the operator publishes)")
        }
        (Some(key), Some(trusted)) if *key == trusted.to_string() => {
            writeln!(text, "roller key {key} signed the commitments: the one given with --roller-key")
        }
        (Some(key), Some(trusted)) => {
            writeln!(text, "roller key {key} signed the commitments, not the one given with --roller-key ({trusted})")
        }
        (None, _) => writeln!(text, "no roller key signed the commitments"),
    };
    let _ = if !head_given {
        writeln!(text, "head hash {} (compare it with the journal's, or the one the forum posted)", report.head_hash)
    } else if report.findings.iter().any(|f| f.check == battlelog_verify::Check::Head) {
        writeln!(text, "head hash {}: not the one given with --head", report.head_hash)
    } else {
        writeln!(text, "head hash {}: the one given with --head", report.head_hash)
    };
    let verdict = match (report.ok(), report.rolls_pending_reveal.len()) {
        (false, _) => "DOES NOT VERIFY".to_owned(),
        (true, 0) => "verifies".to_owned(),
        (true, pending) => format!("verifies as far as it can yet: {pending} rolls await their seed's reveal"),
    };
    let _ = write!(
        text,
        "battle {battle_id} {verdict}: {} events, chain checked, {} rolls re-derived, {} actions re-resolved, {} findings",
        report.events,
        report.rolls_verified,
        report.actions_verified,
        report.findings.len()
    );
    text
}

/// One indented line per outcome field a ruling's override changed,
/// `    field: before -> after` with the values as JSON, each after a newline.
fn write_changes(text: &mut String, ruling: &RulingSeen) {
    for FieldChange { field, before, after } in &ruling.changes {
        let _ = write!(text, "\n    {field}: {before} -> {after}");
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
    // What each ruling changed is the audit's to work out (one fold, the
    // same as `battlelog audit` shows); its findings are the audit's to report.
    let records: Vec<_> = shown.iter().map(|e| AuditedRecord::from_recorded(&args.battle, e.clone())).collect();
    let rulings = audit(&args.battle, &records).rulings;
    let mut text = String::new();
    for recorded in &shown {
        let Some(record) = &recorded.event else { continue };
        let line = match battle::decode(record) {
            Ok(event) => describe_event(&event),
            Err(e) => format!("undecodable: {e}"),
        };
        write!(text, "#{} {}", record.version, line)?;
        if let Some(ruling) = rulings.iter().find(|r| r.version == record.version) {
            write_changes(&mut text, ruling);
        }
        writeln!(text)?;
    }
    let state_json = state.state.as_ref().map(|s| Value::Object(battle::struct_to_json(s))).unwrap_or(Value::Null);
    writeln!(
        text,
        "state at version {} ({}, next nonce {}, epoch {}{}):",
        state.version,
        state.ruleset,
        state.next_nonce,
        state.epoch,
        if state.closed { ", closed" } else { "" }
    )?;
    write!(text, "{}", serde_json::to_string_pretty(&state_json)?)?;
    Ok(Output::text(text))
}

/// One line per event, in English, for a judge reading a replay; a command
/// event names the credential that caused it.
pub fn describe_event(event: &Event) -> String {
    let line = describe_event_only(event);
    match battle::credential(event) {
        Some(credential) => format!("{line} [{} {}]", credential.role, credential.subject),
        None => line,
    }
}

fn describe_event_only(event: &Event) -> String {
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
        Event::BattleClosed(e) => format!("closed by {}: {}", e.by, e.reason),
    }
}
