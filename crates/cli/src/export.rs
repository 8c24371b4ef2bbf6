//! `battlelog export`, `battlelog audit` and `battlelog replay`: what a judge
//! does with a battle. The export format and the audit are
//! `battlelog-verify`'s: `audit --file` runs on it alone, with no server.
//! The export ends with the journal's signed head (docs/protocol.md §5), which
//! the audit checks; with a checkpoint the judge kept, it also asks for
//! (or is given) the consistency proof from it to the export's checkpoint.
//! `replay`'s explanations and state in words are the verify crate's fold
//! (`battlelog_verify::explained`), rendered by `rules::explain`: the same
//! the battle page shows.

use std::fmt::Write;
use std::path::PathBuf;

use anyhow::Context;
use battlelog_proto::battle;
use battlelog_proto::v1::GetBattleRequest;
use battlelog_proto::v1::battle_event::Event;
use battlelog_tlog::{KeptCheckpoint, VerifierKey};
use battlelog_verify::audit::transparency::{consistency_unchecked, log_short};
use battlelog_verify::audit::{
    AuditReport, AuditedRecord, LogTrust, audit, audit_pinned, check_consistency, check_trailer, consistency_sizes,
};
use battlelog_verify::explained;
use battlelog_verify::judging::{Author, FieldChange, RulingSeen};
use battlelog_verify::{Hash, export, hash_from_hex};
use clap::{Args, ValueEnum};
use rules::explain::{Lang, state_lines, state_view};
use serde_json::Value;

use crate::Output;
use crate::client::{self, ResolverEndpoint};
use crate::transparency::LogProof;
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

/// What `battlelog audit --help` says of its exit statuses (docs/judges.md,
/// *Auditing*, says the same).
pub const AUDIT_EXIT_CODES: &str = "\
Exit status:
  0  the battle verifies, signed by a pinned roller key (--roller-key or
     --trusted-roller-keys), or by any one key with --accept-any-roller-key
  1  it does not verify: a finding, including commitments signed by a key
     other than the pinned one(s), a trailer that does not check (or none
     with --log-key), a log rewritten since the --checkpoint kept, and a
     log that no longer reaches it (records lost since)
  2  the audit could not run: bad arguments, an unreadable export, keys,
     checkpoint or proof file, an unreachable resolver
  3  everything else verifies, but the roller key is not pinned: whoever
     re-signs a whole export with a key of their own passes every other
     check, so give the key the operator publishes (or accept any key
     explicitly)

A trusted-keys file holds one roller key (64 hex digits) per line; blank
lines and text after `#` are ignored.

An export's last line is its trailer (docs/protocol.md §5): the journal's signed
head, proved in a signed checkpoint. An export without one verifies only as
far as §4 and says so (a notice, not a finding, unless --log-key is given).";

/// `audit`'s exit status when everything verifies but nothing pinned the
/// roller key (see [`AUDIT_EXIT_CODES`]).
pub const EXIT_ROLLER_KEY_NOT_PINNED: u8 = 3;

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// The battle id, exported by the resolver and audited here.
    #[arg(required_unless_present = "file", conflicts_with = "file")]
    battle: Option<String>,
    /// An export (`battlelog export` output) to audit offline: no server needed.
    #[arg(long, value_name = "EXPORT")]
    file: Option<PathBuf>,
    /// Print the report as JSON (with `roller_key_status`: pinned,
    /// mismatch, unpinned or any).
    #[arg(long)]
    json: bool,
    /// The roller key the operator publishes (64 hex digits): every
    /// commitment must be signed by it.
    #[arg(long, value_name = "HEX", conflicts_with = "accept_any_roller_key")]
    roller_key: Option<String>,
    /// A file of trusted roller keys, one (64 hex digits) a line, `#`
    /// comments: every commitment must be signed by one of them. With
    /// --roller-key too, by one of either.
    #[arg(long, value_name = "FILE", conflicts_with = "accept_any_roller_key")]
    trusted_roller_keys: Option<PathBuf>,
    /// Accept whichever one key signed the commitments (the report names
    /// it). Without a pinned key a re-signed export verifies too: this says
    /// that you compare the key yourself.
    #[arg(long)]
    accept_any_roller_key: bool,
    /// The head hash the battle should end at (64 hex digits), e.g. the one
    /// the forum posted: an export that ends anywhere else, such as one cut
    /// short, is a finding.
    #[arg(long, value_name = "HASH", value_parser = hash_from_hex)]
    head: Option<Hash>,
    /// The journal's log key as the operator publishes it (a signed-note
    /// verifier key, `<origin>+<key id>+<base64>`): the export's trailer
    /// must be signed by it, and an export without a trailer is a finding.
    #[arg(long, value_name = "VKEY", value_parser = parse_log_key)]
    log_key: Option<VerifierKey>,
    /// A checkpoint kept earlier: a signed note the judge kept, or the
    /// "TREE_SIZE ROOT_HASH" (base64 or hex) a forum posted. The export's checkpoint
    /// must be consistent with it (the resolver gives the proof, or
    /// --consistency-proof): if not, the log was rewritten since.
    #[arg(long, value_name = "FILE")]
    checkpoint: Option<PathBuf>,
    /// With --checkpoint, offline: the consistency proof (a JSON list of
    /// base64 hashes, as GetConsistencyProof gives it) between the kept
    /// checkpoint's tree size and the export's, instead of asking the resolver.
    #[arg(long, value_name = "FILE", requires = "checkpoint")]
    consistency_proof: Option<PathBuf>,
    #[command(flatten)]
    resolver: ResolverEndpoint,
    #[command(flatten)]
    tls: crate::tls::TlsArgs,
}

/// `--log-key`: a signed-note verifier key.
pub fn parse_log_key(text: &str) -> Result<VerifierKey, String> {
    VerifierKey::parse(text.trim()).map_err(|e| e.to_string())
}

/// How the audit holds the roller key.
#[derive(Debug)]
enum Pin {
    /// Signed by one of these (from --roller-key and the keys file).
    Keys(Vec<dice::RollerKey>),
    /// --accept-any-roller-key.
    Any,
    /// Nothing given.
    Unpinned,
}

impl Pin {
    fn of(args: &AuditArgs) -> anyhow::Result<Pin> {
        if args.accept_any_roller_key {
            return Ok(Pin::Any);
        }
        let mut keys = Vec::new();
        if let Some(hex) = &args.roller_key {
            keys.push(dice::RollerKey::from_hex(hex).context("--roller-key")?);
        }
        if let Some(path) = &args.trusted_roller_keys {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("--trusted-roller-keys: cannot read {}", path.display()))?;
            let from_file =
                read_trusted_keys(&text).with_context(|| format!("--trusted-roller-keys: {}", path.display()))?;
            keys.extend(from_file);
        }
        Ok(if keys.is_empty() { Pin::Unpinned } else { Pin::Keys(keys) })
    }

    fn keys(&self) -> &[dice::RollerKey] {
        match self {
            Pin::Keys(keys) => keys,
            Pin::Any | Pin::Unpinned => &[],
        }
    }

    /// `pinned`, `mismatch`, `unpinned` or `any`: the words of the battle
    /// page's `data-roller-key`, and `any` for an explicit acceptance.
    fn status(&self, report: &AuditReport) -> &'static str {
        match self {
            Pin::Keys(keys) => {
                let signer = report.roller_key.as_deref();
                if signer.is_some_and(|signer| keys.iter().any(|k| k.to_string() == signer)) && !mismatched(report) {
                    "pinned"
                } else {
                    "mismatch"
                }
            }
            Pin::Any => "any",
            Pin::Unpinned => "unpinned",
        }
    }
}

/// Some commitment is signed by a key the auditor does not trust.
fn mismatched(report: &AuditReport) -> bool {
    report.findings.iter().any(|f| {
        matches!(
            f.problem,
            battlelog_verify::Problem::RollerKeyUntrusted { .. }
                | battlelog_verify::Problem::RollerKeyNotAmongTrusted { .. }
        )
    })
}

/// The keys of a trusted-keys file: one roller key (64 hex digits) a line;
/// blank lines and anything after `#` are skipped. A file with no key is
/// refused: it would pin nothing.
pub fn read_trusted_keys(text: &str) -> anyhow::Result<Vec<dice::RollerKey>> {
    let mut keys = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let key = line.split_once('#').map_or(line, |(key, _)| key).trim();
        if key.is_empty() {
            continue;
        }
        keys.push(dice::RollerKey::from_hex(key).with_context(|| format!("line {}", number + 1))?);
    }
    anyhow::ensure!(!keys.is_empty(), "names no roller key");
    Ok(keys)
}

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

pub async fn export(args: &ExportArgs) -> anyhow::Result<Output> {
    let mut resolver = client::resolver(&args.resolver, &args.tls, Role::Reader).await?;
    let (events, signed_head) = client::read_export(&mut resolver, &args.battle).await?;
    let trailer = signed_head.as_ref().map(export::trailer_from);
    Ok(Output::text(export::write_with_trailer(&args.battle, &events, trailer.as_ref())?))
}

pub async fn audit_command(args: &AuditArgs) -> anyhow::Result<Output> {
    let pin = Pin::of(args)?;
    let kept_text = match &args.checkpoint {
        Some(path) => Some(
            std::fs::read_to_string(path).with_context(|| format!("--checkpoint: cannot read {}", path.display()))?,
        ),
        None => None,
    };
    let offline_proof = match &args.consistency_proof {
        Some(path) => Some(read_proof(path).context("--consistency-proof")?),
        None => None,
    };
    let (battle_id, records, trailer) = match (&args.file, &args.battle) {
        (Some(path), _) => {
            let text =
                std::fs::read_to_string(path).with_context(|| format!("cannot read export {}", path.display()))?;
            let read = export::read(&text).with_context(|| format!("{} is not an export", path.display()))?;
            (read.records[0].stream.clone(), read.records, read.trailer)
        }
        (None, Some(battle_id)) => {
            let mut resolver = client::resolver(&args.resolver, &args.tls, Role::Reader).await?;
            let (events, signed_head) = client::read_export(&mut resolver, battle_id).await?;
            let records = events.into_iter().map(|e| AuditedRecord::from_recorded(battle_id, e)).collect();
            (battle_id.clone(), records, signed_head.as_ref().map(export::trailer_from))
        }
        (None, None) => anyhow::bail!("name a battle or --file EXPORT"),
    };
    let mut report = audit_pinned(&battle_id, &records, pin.keys(), args.head);
    let trust = LogTrust { log_key: args.log_key.as_ref(), require_trailer: args.log_key.is_some() };
    let proved = check_trailer(&mut report, &records, trailer.as_ref(), &trust);
    if let Some(kept_text) = &kept_text {
        // The kept note's signature is checked with the pinned log key, else
        // with the one the trailer names once the trailer checked.
        let key = match (&args.log_key, &trailer, &proved) {
            (Some(key), _, _) => Some(key.clone()),
            (None, Some(trailer), Some(_)) => VerifierKey::parse(&trailer.log_key).ok(),
            _ => None,
        };
        let kept = KeptCheckpoint::parse(kept_text, key.as_ref()).map_err(|e| anyhow::anyhow!("--checkpoint: {e}"))?;
        match &proved {
            Some(checkpoint) => {
                let proof = match &offline_proof {
                    Some(proof) => Some(proof.clone()),
                    None => match consistency_sizes(kept.size, checkpoint.size) {
                        // Equal sizes need equal roots, from size 0 anything
                        // follows: the proof is empty, nothing to ask.
                        (old_size, new_size) if old_size == new_size || old_size == 0 => Some(Vec::new()),
                        (old_size, new_size) => match ask_consistency(args, old_size, new_size).await? {
                            LogProof::Proof(proof) => Some(proof),
                            // The log no longer reaches the larger of the two
                            // (the kept one, as the export's is in it): a
                            // finding, not a check that could not run.
                            LogProof::Short(why) => {
                                log_short(&mut report, &records, &kept, &why);
                                None
                            }
                        },
                    },
                };
                if let Some(proof) = proof {
                    check_consistency(&mut report, &records, &kept, checkpoint, &proof);
                }
            }
            None => {
                // Exported just now from the log: ask it whether it still
                // holds the kept checkpoint at all (a journal whose store
                // is behind what it signed exports without a trailer, and
                // says why when asked for a proof).
                let short = match (&args.battle, kept.size) {
                    (Some(_), 1..) => match ask_consistency(args, kept.size, kept.size).await? {
                        LogProof::Short(why) => Some(why),
                        LogProof::Proof(_) => None,
                    },
                    _ => None,
                };
                match short {
                    Some(why) => log_short(&mut report, &records, &kept, &why),
                    None => consistency_unchecked(
                        &mut report,
                        &records,
                        "the export has no trailer that checks, so no checkpoint of its to prove consistent with the \
                         kept one",
                    ),
                }
            }
        }
    }
    // Stable: the §5 findings after the §4 ones at the same version.
    report.findings.sort_by_key(|f| f.version);
    let status = pin.status(&report);
    let text = if args.json {
        let mut json = serde_json::to_value(&report)?;
        if let Value::Object(fields) = &mut json {
            fields.insert("roller_key_status".into(), Value::from(status));
        }
        serde_json::to_string_pretty(&json)?
    } else {
        describe(&battle_id, &report, &pin, args.head.is_some())
    };
    let code = match (report.ok(), &pin) {
        (false, _) => 1,
        (true, Pin::Unpinned) => EXIT_ROLLER_KEY_NOT_PINNED,
        (true, _) => 0,
    };
    Ok(Output { stdout: text, code })
}

/// A consistency proof as GetConsistencyProof gives it in JSON: a list of
/// base64 32-byte hashes.
pub fn read_proof(path: &std::path::Path) -> anyhow::Result<Vec<battlelog_tlog::Hash>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse_proof(&text).with_context(|| path.display().to_string())
}

/// [`read_proof`]'s text: a JSON list of base64 32-byte hashes.
pub fn parse_proof(text: &str) -> anyhow::Result<Vec<battlelog_tlog::Hash>> {
    use base64::Engine;
    let hashes: Vec<String> = serde_json::from_str(text).context("not a JSON list of base64 hashes (strings)")?;
    hashes
        .iter()
        .enumerate()
        .map(|(i, hash)| {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(hash)
                .with_context(|| format!("hash {i}: not base64"))?;
            <[u8; 32]>::try_from(bytes.as_slice())
                .map_err(|_| anyhow::anyhow!("hash {i}: {} bytes, not 32", bytes.len()))
        })
        .collect()
}

/// The consistency proof between two tree sizes, from the log the resolver
/// shows, or why it does not reach `new_size`.
async fn ask_consistency(args: &AuditArgs, old_size: u64, new_size: u64) -> anyhow::Result<LogProof> {
    let mut resolver = client::resolver(&args.resolver, &args.tls, Role::Reader).await?;
    crate::transparency::proof_from_log(&mut resolver, old_size, new_size).await
}

fn describe(battle_id: &str, report: &AuditReport, pin: &Pin, head_given: bool) -> String {
    let mut text = String::new();
    for finding in &report.findings {
        let _ = writeln!(text, "version {}: {}: {}", finding.version, finding.check.as_str(), finding.problem);
    }
    // Disputes, rulings, the close and what the rulings left of each
    // action, interleaved in version order as they happened; a ruling's
    // changed fields follow it, indented.
    let mut judging: Vec<(u64, String)> = Vec::new();
    for dispute in &report.disputes {
        let line = format!(
            "dispute of #{} for {} by {}{}: {}",
            dispute.contests,
            dispute.party,
            who(dispute.by.as_ref()),
            after_close(dispute.after_close),
            dispute.reason
        );
        judging.push((dispute.version, line));
    }
    for ruling in &report.rulings {
        let role = ruling.role.as_deref().unwrap_or("unrecorded credential");
        let mut line = format!(
            "ruling on #{} by judge {} ({role}){}: {}",
            ruling.contests,
            ruling.judge,
            after_close(ruling.after_close),
            ruling.text
        );
        write_changes(&mut line, ruling);
        judging.push((ruling.version, line));
    }
    if let Some(closed) = &report.closed {
        judging.push((
            closed.version,
            format!("closed by {}{}: {}", who(closed.by.as_ref()), note(&closed.note), closed.reason),
        ));
    }
    for (version, fin) in &report.final_outcomes {
        if !fin.rulings.is_empty() {
            judging.push((*version, format!("final outcome after {}: {}", ruling_list(&fin.rulings), fin.outcome)));
        }
    }
    judging.sort_by_key(|(version, _)| *version);
    for (version, line) in judging {
        let _ = writeln!(text, "version {version}: {line}");
    }
    for (epoch, commitment) in &report.commitments {
        let _ = writeln!(text, "epoch {epoch} commitment {commitment}");
    }
    let keys = pin.keys().iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
    let _ = match (&report.roller_key, pin.status(report)) {
        (None, _) => writeln!(text, "no roller key signed the commitments"),
        (Some(key), "pinned") => writeln!(text, "roller key {key} signed the commitments: pinned, a trusted key"),
        (Some(key), "mismatch") => {
            writeln!(text, "roller key {key} signed the commitments, not the trusted one: expected {keys}")
        }
        (Some(key), "any") => writeln!(
            text,
            "roller key {key} signed the commitments; any key accepted (--accept-any-roller-key): compare it \
             with the one the operator publishes"
        ),
        (Some(key), _) => writeln!(
            text,
            "roller key {key} signed the commitments, but the roller key is NOT PINNED: a whole export re-signed \
             with someone else's key would verify too. Give the key the operator publishes with --roller-key HEX \
             or --trusted-roller-keys FILE (or --accept-any-roller-key to accept it as is)"
        ),
    };
    let _ = if !head_given {
        writeln!(text, "head hash {} (compare it with the journal's, or the one the forum posted)", report.head_hash)
    } else if report.findings.iter().any(|f| f.check == battlelog_verify::Check::Head) {
        writeln!(text, "head hash {}: not the one given with --head", report.head_hash)
    } else {
        writeln!(text, "head hash {}: the one given with --head", report.head_hash)
    };
    if let Some(trailer) = &report.trailer {
        let pinned = if trailer.log_key_pinned {
            "the pinned log key".to_owned()
        } else {
            "a log key NOT PINNED: compare it with the one the operator publishes, or give it with --log-key".to_owned()
        };
        let _ = writeln!(
            text,
            "trailer: head version {} signed and proved as leaf {} in the checkpoint of tree size {} (root {}), by log key {} ({pinned})",
            trailer.head_version, trailer.leaf_index, trailer.tree_size, trailer.root_hash, trailer.log_key
        );
    }
    if let Some(consistency) = &report.consistency {
        let _ = writeln!(
            text,
            "consistency: the kept checkpoint (tree size {}) and the export's (tree size {}) are one log: nothing rewritten",
            consistency.kept_size, consistency.tree_size
        );
    }
    for notice in &report.notices {
        let _ = writeln!(text, "{notice}");
    }
    let verdict = match (report.ok(), report.rolls_pending_reveal.len(), pin) {
        (false, _, _) => "DOES NOT VERIFY".to_owned(),
        (true, _, Pin::Unpinned) => "verifies only against its own roller key: the key is NOT PINNED".to_owned(),
        (true, 0, _) => "verifies".to_owned(),
        (true, pending, _) => format!("verifies as far as it can yet: {pending} rolls await their seed's reveal"),
    };
    let _ = write!(
        text,
        "battle {battle_id} {verdict}: {}, chain checked, {} re-derived, {} re-resolved, {}",
        counted(report.events, "event"),
        counted(report.rolls_verified, "roll"),
        counted(report.actions_verified, "action"),
        counted(report.findings.len() as u64, "finding")
    );
    text
}

/// A count with its noun in the right number ("1 finding", "2 findings"): the
/// summary line is read by judges, and "1 findings" reads as a slip.
fn counted(count: u64, noun: &str) -> String {
    if count == 1 { format!("1 {noun}") } else { format!("{count} {noun}s") }
}

/// Who made a command: its recorded credential's role and subject.
fn who(author: Option<&Author>) -> String {
    author.map_or("an unrecorded credential".to_owned(), |a| format!("{} {}", a.role, a.subject))
}

/// The mark of a dispute or ruling journaled after the close.
fn after_close(after: bool) -> &'static str {
    if after { " (after the close, within the appeal window)" } else { "" }
}

/// A close's free-text `by`, shown as the note it is.
fn note(note: &str) -> String {
    if note.trim().is_empty() { String::new() } else { format!(" (note: {note:?})") }
}

/// `ruling #12` or `rulings #12, #14`.
fn ruling_list(versions: &[u64]) -> String {
    let list = versions.iter().map(|v| format!("#{v}")).collect::<Vec<_>>().join(", ");
    if versions.len() == 1 { format!("ruling {list}") } else { format!("rulings {list}") }
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
    fn a_proof_file_is_a_list_of_base64_hashes() {
        let one = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=";
        assert_eq!(parse_proof(&format!("[\"{one}\"]")).expect("a proof"), vec![[1u8; 32]]);
        assert_eq!(parse_proof("[]").expect("an empty proof"), Vec::<[u8; 32]>::new());
        let error = |text: &str| format!("{:#}", parse_proof(text).expect_err(text));
        assert!(error("{}").contains("JSON list"), "{}", error("{}"));
        assert!(error(&format!("[\"{one}\", \"%%\"]")).contains("hash 1: not base64"));
        assert!(error("[\"AQID\"]").contains("hash 0: 3 bytes, not 32"));
    }

    #[test]
    fn forum_text_cannot_start_a_line() {
        assert_eq!(one_line("Thunder\n#5 forged"), "Thunder\\n#5 forged");
    }
}
