//! `battlelog watch`: the live feed of committed events, one line each, from
//! NATS (what the journal publishes after every commit) or, when no NATS is
//! reachable, from the journal's own subscription (a `service` token's
//! view). With `--from-resolver` one battle is followed through the
//! resolver's `Watch`, as any forum, judge or reader of its tenant may.
//!
//! The journal publishes each event to `battlelog.events.<tenant>.<battle>`
//! (`_` for a battle without a tenant), so one battle is
//! `battlelog.events.*.<battle>`, one tenant's battles
//! `battlelog.events.<tenant>.>`. A tenant's NATS user may subscribe only
//! under its own tenant (`deploy/nats/`): it watches with `--tenant`.

use std::collections::HashSet;
use std::io::Write;

use battlelog_proto::battle;
use battlelog_proto::v1::battle_event::Event;
use battlelog_proto::v1::{JournalRecord, SubscribeAllRequest};
use battlelog_runtime::nats_url::NatsUrl;
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
    /// Only this tenant's battles (`_`: battles opened without a tenant).
    /// Needed when the NATS user is a tenant's, which may subscribe to
    /// nothing else.
    #[arg(long)]
    tenant: Option<String>,
    /// The NATS server the journal publishes to; credentials may be given
    /// in it (`nats://forum-a:<password>@host:4222`).
    #[arg(long, env = "BATTLELOG_NATS_URL", default_value = "nats://127.0.0.1:4222")]
    nats_url: String,
    /// Follow the journal's subscription from the start of the log instead of NATS.
    #[arg(long, conflicts_with = "from_resolver")]
    from_journal: bool,
    /// Follow --battle through the resolver's `Watch` (a token of the
    /// battle's tenant; any role that reads) instead of NATS.
    #[arg(long, requires = "battle")]
    from_resolver: bool,
    #[command(flatten)]
    journal: JournalEndpoint,
    #[command(flatten)]
    resolver: client::ResolverEndpoint,
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

/// The subject that carries what `battle` and `tenant` select.
fn subject(battle: Option<&str>, tenant: Option<&str>) -> String {
    match (tenant, battle) {
        (tenant, Some(battle)) => format!("{NATS_SUBJECT_PREFIX}.{}.{battle}", tenant.unwrap_or("*")),
        (Some(tenant), None) => format!("{NATS_SUBJECT_PREFIX}.{tenant}.>"),
        (None, None) => format!("{NATS_SUBJECT_PREFIX}.>"),
    }
}

pub async fn watch(args: &WatchArgs) -> anyhow::Result<Output> {
    if let Some(battle) = &args.battle {
        // A battle id is a subject token: anything else would never match.
        if let Err(error) = battlelog_runtime::limits::battle_id(battle) {
            anyhow::bail!("--battle {battle:?}: a battle id {}", error.violation);
        }
    }
    if let Some(tenant) = &args.tenant {
        // As the journal checks a tenant: one subject token.
        anyhow::ensure!(
            !tenant.is_empty()
                && !tenant.chars().any(|c| matches!(c, '.' | '*' | '>') || c.is_whitespace() || c.is_control()),
            "--tenant {tenant:?}: a tenant holds no '.', '*', '>', whitespace or control characters"
        );
    }
    if let (true, Some(battle)) = (args.from_resolver, &args.battle) {
        return from_resolver(args, battle).await;
    }
    if !args.from_journal {
        let url = NatsUrl::new(&args.nats_url);
        // A refused subscription (another tenant's subjects) is reported
        // by the server asynchronously: say so instead of staying silent.
        let connected = url
            .connect_options()
            .name("battlelog-watch")
            .event_callback(|event| async move {
                if let async_nats::Event::ServerError(error) = event {
                    eprintln!("NATS: {error}");
                }
            })
            .connect(url.address())
            .await;
        match connected {
            Ok(nats) => {
                let subject = subject(args.battle.as_deref(), args.tenant.as_deref());
                let mut messages = nats.subscribe(subject.clone()).await?;
                // The server has the subscription once it answers a ping:
                // every event committed after the next line is shown.
                nats.flush().await?;
                eprintln!("watching {subject} on {} (Ctrl-C stops)", url.redacted());
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
            Err(error) => eprintln!("no NATS at {} ({error}); following the journal instead", url.redacted()),
        }
    }
    // The journal's records do not name their tenant: its battles are
    // known from their BattleOpened, which comes first in the log.
    let mut tenant_battles = HashSet::new();
    let mut wanted = |record: &JournalRecord| {
        if let (Some(tenant), Ok(Event::BattleOpened(opened))) = (&args.tenant, battle::decode(record))
            && battlelog_journal::guard::subject_token(&opened.tenant) == tenant.as_str()
        {
            tenant_battles.insert(record.stream_id.clone());
        }
        args.battle.as_ref().is_none_or(|b| *b == record.stream_id)
            && (args.tenant.is_none() || tenant_battles.contains(&record.stream_id))
    };
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

/// One battle from the start, then live, through the resolver.
async fn from_resolver(args: &WatchArgs, battle: &str) -> anyhow::Result<Output> {
    let mut resolver = client::resolver(&args.resolver, &args.tls, battlelog_auth::Role::Reader).await?;
    let request = battlelog_proto::v1::WatchRequest { battle_id: battle.to_owned(), from_version: 0 };
    let mut events = resolver
        .watch(request)
        .await
        .map_err(|s| anyhow::anyhow!("resolver: {}", crate::tls::status_message(&s)))?
        .into_inner();
    eprintln!("watching battle {battle} at {} (Ctrl-C stops)", args.resolver.resolver_url);
    loop {
        tokio::select! {
            () = battlelog_runtime::shutdown_signal() => return Ok(Output::text("")),
            event = events.next() => {
                let event = event.ok_or_else(|| anyhow::anyhow!("the resolver ended the watch"))?;
                let event = event.map_err(|s| anyhow::anyhow!("resolver: {}", s.message()))?;
                if let Some(record) = event.event {
                    print(&line(&record))?;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_follow_the_tenant_layout() {
        assert_eq!(subject(Some("b1"), None), "battlelog.events.*.b1");
        assert_eq!(subject(Some("b1"), Some("forum-a")), "battlelog.events.forum-a.b1");
        assert_eq!(subject(None, Some("forum-a")), "battlelog.events.forum-a.>");
        assert_eq!(subject(None, None), "battlelog.events.>");
    }
}
