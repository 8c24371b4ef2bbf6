//! `battlelog watch`: the live feed of committed events, one line each, from
//! NATS (what the journal publishes after every commit) or, when no NATS is
//! reachable, from the journal's own subscription.

use std::io::Write;

use battlelog_proto::battle;
use battlelog_proto::v1::{JournalRecord, SubscribeAllRequest};
use clap::Args;
use prost::Message;
use tokio_stream::StreamExt;

use crate::Output;
use crate::client::{self, JournalEndpoint};
use crate::export::describe_event;
use crate::up::NATS_SUBJECT_PREFIX;

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Only this battle's events.
    #[arg(long)]
    battle: Option<String>,
    /// The NATS server the journal publishes to.
    #[arg(long, env = "BATTLELOG_NATS_URL", default_value = "nats://127.0.0.1:4222")]
    nats_url: String,
    /// Follow the journal's subscription from the start of the log instead of NATS.
    #[arg(long)]
    from_journal: bool,
    #[command(flatten)]
    journal: JournalEndpoint,
    #[command(flatten)]
    tls: crate::tls::TlsArgs,
}

fn line(record: &JournalRecord) -> String {
    let text = match battle::decode(record) {
        Ok(event) => describe_event(&event),
        Err(e) => format!("undecodable: {e}"),
    };
    format!("{} #{} {}: {}", record.stream_id, record.version, record.event_type, text)
}

fn print(line: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{line}")?;
    stdout.flush()?;
    Ok(())
}

pub async fn watch(args: &WatchArgs) -> anyhow::Result<Output> {
    if let Some(battle) = &args.battle {
        // A battle id is a subject token: anything else would never match.
        anyhow::ensure!(
            !battle.is_empty() && battle.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "--battle {battle:?}: a battle id holds only letters, digits, '-' and '_'"
        );
    }
    let wanted = |record: &JournalRecord| args.battle.as_ref().is_none_or(|b| *b == record.stream_id);
    if !args.from_journal {
        match async_nats::connect(&args.nats_url).await {
            Ok(nats) => {
                let subject = match &args.battle {
                    Some(battle) => format!("{NATS_SUBJECT_PREFIX}.{battle}"),
                    None => format!("{NATS_SUBJECT_PREFIX}.>"),
                };
                let mut messages = nats.subscribe(subject.clone()).await?;
                eprintln!("watching {subject} on {} (Ctrl-C stops)", args.nats_url);
                loop {
                    tokio::select! {
                        () = battlelog_runtime::shutdown_signal() => return Ok(Output::text("")),
                        message = messages.next() => {
                            let Some(message) = message else { anyhow::bail!("the NATS subscription ended") };
                            match JournalRecord::decode(message.payload.as_ref()) {
                                Ok(record) => print(&line(&record))?,
                                Err(e) => print(&format!("{}: not a journal record: {e}", message.subject))?,
                            }
                        }
                    }
                }
            }
            Err(error) => eprintln!("no NATS at {} ({error}); following the journal instead", args.nats_url),
        }
    }
    let mut journal = client::journal(&args.journal, &args.tls).await?;
    let mut events = journal
        .subscribe_all(SubscribeAllRequest { from_position: 0 })
        .await
        .map_err(|s| anyhow::anyhow!("journal: {}", s.message()))?
        .into_inner();
    eprintln!("watching the journal at {} from the start (Ctrl-C stops)", args.journal.journal_url);
    loop {
        tokio::select! {
            () = battlelog_runtime::shutdown_signal() => return Ok(Output::text("")),
            event = events.next() => {
                let event = event.ok_or_else(|| anyhow::anyhow!("the journal ended the subscription"))?;
                let event = event.map_err(|s| anyhow::anyhow!("journal: {}", s.message()))?;
                if let Some(record) = event.event.filter(|r| wanted(r)) {
                    print(&line(&record))?;
                }
            }
        }
    }
}
