//! `battlelog watch`: the live feed of committed events, one line each, from
//! NATS (what the journal publishes after every commit) or, when no NATS is
//! reachable, from the journal's own subscription (a `service` token's
//! view). With `--from-resolver` one battle is followed through the
//! resolver's `Watch`, as any forum, judge or reader of its tenant may.
//!
//! The journal publishes each event to `battlelog.events.<tenant>.<battle>`
//! (`_` for a battle without a tenant), so one battle is
//! `battlelog.events.*.<battle>`, one tenant's battles
//! `battlelog.events.<tenant>.>`; on the JetStream backend its log is
//! itself the feed, `battlelog.journal.<tenant>.<battle>`, one message per
//! append (a group of records). Both are followed. A tenant's NATS user may
//! subscribe only under its own tenant (`deploy/nats/`): it watches with
//! `--tenant`.
//!
//! The NATS feed is a hint, as it is to the resolver: anyone allowed to
//! publish on it could put there what the journal never committed. So each
//! event from NATS is shown only if it follows the chain (docs/protocol.md §4)
//! of what was shown of its battle — the next version, whose hash
//! `h(v) = SHA-256(h(v−1) || record)` is computed here from the bytes
//! received — or, for the first event of a battle and anything that does
//! not follow (a gap, a version seen before, a broken link), if the journal
//! holds exactly those bytes at that version, read through the resolver's
//! `Export` (any role that reads) or else the journal (a `service` token).
//! What the journal does not hold is dropped and said so on stderr; what
//! cannot be checked (neither is reachable with the command's token) is
//! shown marked as unconfirmed.

use std::collections::{HashMap, HashSet};
use std::io::Write;

use battlelog_auth::{AuthChannel, Role};
use battlelog_proto::battle;
use battlelog_proto::v1::battle_event::Event;
use battlelog_proto::v1::journal_client::JournalClient;
use battlelog_proto::v1::resolver_client::ResolverClient;
use battlelog_proto::v1::{ExportRequest, JournalRecord, ReadStreamRequest, RecordedEvent, SubscribeAllRequest};
use battlelog_runtime::nats_url::NatsUrls;
use battlelog_verify::chain::{Hash, chain_hash};
use clap::Args;
use prost::Message;
use tokio_stream::StreamExt;

use crate::Output;
use crate::client::{self, JournalEndpoint};
use crate::replay::{describe_event, provenance};
use crate::up::NATS_SUBJECT_PREFIX;
use battlelog_feed::subject::LOG_PREFIX as JOURNAL_SUBJECT_PREFIX;

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
    /// The NATS server the journal publishes to, or several comma-separated
    /// (any nodes of a cluster); credentials may be given in it
    /// (`nats://forum-a:<password>@host:4222`). Default: the NATS of the
    /// `battlelog up` running on --data-dir, else nats://127.0.0.1:4222.
    #[arg(long, env = "BATTLELOG_NATS_URL")]
    nats_url: Option<String>,
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
        Ok(event) => format!("{} [{}]", describe_event(&event), provenance(&event, record.recorded_at_unix_micros)),
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

/// The subject under `prefix` that carries what `battle` and `tenant` select.
fn subject(prefix: &str, battle: Option<&str>, tenant: Option<&str>) -> String {
    match (tenant, battle) {
        (tenant, Some(battle)) => format!("{prefix}.{}.{battle}", tenant.unwrap_or("*")),
        (Some(tenant), None) => format!("{prefix}.{tenant}.>"),
        (None, None) => format!("{prefix}.>"),
    }
}

/// A record's bytes as received and the chain hash claimed for it.
type Claimed = (Vec<u8>, Option<Hash>);

/// The records a NATS message carries, each with the hash it claims: one
/// from the sled journal's fan-out (payload = the record, hash in a
/// header), or a group from the JetStream journal's log
/// (battlelog_feed::log, hashes in its payload).
fn records_of(message: &async_nats::Message) -> Result<Vec<Claimed>, String> {
    let header = |name: &str| message.headers.as_ref().and_then(|h| h.get(name)).map(|v| v.as_str().to_owned());
    if header(battlelog_feed::headers::FIRST_VERSION).is_none() {
        return Ok(vec![(message.payload.to_vec(), claimed_hash(message))]);
    }
    battlelog_feed::log::LogMessage::decode(header, &message.payload)
        .map(|m| m.records.into_iter().map(|(hash, bytes)| (bytes, Some(hash))).collect())
        .map_err(|e| format!("not a journal message: {e}"))
}

pub async fn watch(args: &WatchArgs) -> anyhow::Result<Output> {
    check_filters(args)?;
    if let (true, Some(battle)) = (args.from_resolver, &args.battle) {
        return from_resolver(args, battle).await;
    }
    // A list given on the command line is read before anything else: a bad
    // entry is an error, not a fallback to the journal.
    let given = match &args.nats_url {
        Some(list) => Some(NatsUrls::parse(list).map_err(|e| anyhow::anyhow!("--nats-url: {e}"))?),
        None => None,
    };
    if !args.from_journal {
        let url = match given {
            Some(urls) => urls,
            None => {
                let found = crate::endpoints::running(&args.tls.data_dir).and_then(|up| up.nats);
                let list = found.unwrap_or_else(|| "nats://127.0.0.1:4222".to_owned());
                NatsUrls::parse(&list).map_err(|e| anyhow::anyhow!("the NATS URL of the running up: {e}"))?
            }
        };
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
            .connect(url.addresses())
            .await;
        match connected {
            Ok(nats) => return follow_nats(args, &nats, &url).await,
            Err(error) => eprintln!("no NATS at {} ({error}); following the journal instead", url.redacted()),
        }
    }
    follow_journal(args).await
}

/// `--battle` and `--tenant` as the journal would take them: one subject
/// token each.
fn check_filters(args: &WatchArgs) -> anyhow::Result<()> {
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
    Ok(())
}

/// Follows the NATS feed, each record checked before it is shown, until
/// Ctrl-C.
async fn follow_nats(args: &WatchArgs, nats: &async_nats::Client, url: &NatsUrls) -> anyhow::Result<Output> {
    // The sled journal's fan-out and the JetStream journal's
    // log: whichever the journal writes.
    let subject = subject(NATS_SUBJECT_PREFIX, args.battle.as_deref(), args.tenant.as_deref());
    let log = self::subject(JOURNAL_SUBJECT_PREFIX, args.battle.as_deref(), args.tenant.as_deref());
    let mut messages = nats.subscribe(subject.clone()).await?.merge(nats.subscribe(log.clone()).await?);
    // The server has the subscription once it answers a ping:
    // every event committed after the next line is shown.
    nats.flush().await?;
    eprintln!("watching {subject} and {log} on {} (Ctrl-C stops)", url.redacted());
    let mut checker = FeedCheck::new(Truth::new(args));
    loop {
        tokio::select! {
            () = battlelog_runtime::shutdown_signal() => return Ok(Output::text("")),
            message = messages.next() => {
                let Some(message) = message else { anyhow::bail!("the NATS subscription ended") };
                show_checked(&mut checker, &message).await?;
            }
        }
    }
}

/// The records of one NATS message, shown or dropped as the check says.
async fn show_checked(checker: &mut FeedCheck<'_>, message: &async_nats::Message) -> anyhow::Result<()> {
    let records = match records_of(message) {
        Ok(records) => records,
        Err(why) => {
            eprintln!("dropped from the NATS feed: {}: {why}", message.subject);
            return Ok(());
        }
    };
    for (payload, claimed) in records {
        match checker.check(&message.subject, &payload, claimed).await {
            Verdict::Show(record) => print(&line(&record))?,
            Verdict::Unconfirmed(record, why) => {
                print(&format!("{} [unconfirmed: {why}]", line(&record)))?;
            }
            Verdict::Drop(why) => {
                eprintln!("dropped from the NATS feed: {}: {why}", message.subject);
            }
        }
    }
    Ok(())
}

/// Follows the journal's own subscription from the start, until Ctrl-C.
async fn follow_journal(args: &WatchArgs) -> anyhow::Result<Output> {
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
    eprintln!("watching the journal at {} from the start (Ctrl-C stops)", args.journal.url(&args.tls));
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

/// What to do with one message of the NATS feed.
#[derive(Debug)]
enum Verdict {
    /// It follows what was shown, or the journal holds it.
    Show(JournalRecord),
    /// Nothing could say whether the journal holds it (why).
    Unconfirmed(JournalRecord, String),
    /// Not an event the journal holds (why).
    Drop(String),
}

/// Where the journal's truth is read: the resolver's `Export`, else the
/// journal itself, each connected at first need. A read that fails for the
/// command's token or endpoint falls through to the other.
struct Truth<'a> {
    args: &'a WatchArgs,
    resolver: Option<ResolverClient<AuthChannel>>,
    journal: Option<JournalClient<AuthChannel>>,
}

impl<'a> Truth<'a> {
    fn new(args: &'a WatchArgs) -> Self {
        Self { args, resolver: None, journal: None }
    }

    /// The record the journal holds at `version` of `battle`: `Ok(None)`
    /// when it holds none there; `Err` when neither read could answer.
    async fn held_at(&mut self, battle: &str, version: u64) -> Result<Option<RecordedEvent>, String> {
        let through_resolver = match self.read_resolver(battle, version).await {
            Ok(held) => return Ok(held),
            Err(error) => error,
        };
        match self.read_journal(battle, version).await {
            Ok(held) => Ok(held),
            Err(error) => Err(format!("resolver: {through_resolver}; journal: {error}")),
        }
    }

    async fn read_resolver(&mut self, battle: &str, version: u64) -> Result<Option<RecordedEvent>, String> {
        if self.resolver.is_none() {
            let client = client::resolver(&self.args.resolver, &self.args.tls, Role::Reader).await;
            self.resolver = Some(client.map_err(|e| e.to_string())?);
        }
        let resolver = self.resolver.as_mut().ok_or("no resolver")?;
        let request = ExportRequest { battle_id: battle.to_owned(), from_version: version };
        match resolver.export(request).await {
            // An opened battle this token reads: the page is the truth,
            // empty past its head.
            Ok(page) => Ok(page.into_inner().events.into_iter().next().filter(|e| at_version(e, version))),
            // NOT_FOUND is also the answer for another tenant's battle:
            // the journal may still hold it, so this read cannot tell.
            Err(status) => Err(client::status_message(&status)),
        }
    }

    async fn read_journal(&mut self, battle: &str, version: u64) -> Result<Option<RecordedEvent>, String> {
        if self.journal.is_none() {
            let client = client::journal(&self.args.journal, &self.args.tls).await;
            self.journal = Some(client.map_err(|e| e.to_string())?);
        }
        let journal = self.journal.as_mut().ok_or("no journal")?;
        let request = ReadStreamRequest { stream_id: battle.to_owned(), from_version: version, max_count: 1 };
        match journal.read_stream(request).await {
            Ok(page) => Ok(page.into_inner().events.into_iter().next().filter(|e| at_version(e, version))),
            Err(status) => Err(client::status_message(&status)),
        }
    }
}

fn at_version(recorded: &RecordedEvent, version: u64) -> bool {
    recorded.event.as_ref().is_some_and(|record| record.version == version)
}

/// The chain of each battle as far as it was shown: the last version and
/// its hash h(version).
struct FeedCheck<'a> {
    truth: Truth<'a>,
    heads: HashMap<String, (u64, Hash)>,
}

impl<'a> FeedCheck<'a> {
    fn new(truth: Truth<'a>) -> Self {
        Self { truth, heads: HashMap::new() }
    }

    /// Whether the message `payload` on `subject`, claiming the chain hash
    /// `claimed`, is shown, and how.
    async fn check(&mut self, subject: &str, payload: &[u8], claimed: Option<Hash>) -> Verdict {
        let record = match JournalRecord::decode(payload) {
            Ok(record) => record,
            Err(e) => return Verdict::Drop(format!("not a journal record: {e}")),
        };
        // The journal publishes a battle's events under its id, last.
        if subject.rsplit('.').next() != Some(record.stream_id.as_str()) {
            return Verdict::Drop(format!("a record of battle {} under another battle's subject", record.stream_id));
        }
        let battle = record.stream_id.clone();
        let version = record.version;
        // The link: the next version, and the hash it claims is the one
        // these bytes make after the last one shown.
        if let Some(&(head, head_hash)) = self.heads.get(&battle)
            && version == head + 1
            && let hash = chain_hash(&head_hash, payload)
            && claimed == Some(hash)
        {
            self.heads.insert(battle, (version, hash));
            return Verdict::Show(record);
        }
        // The first of its battle, or it does not follow what was shown:
        // only the journal can say.
        let shown = self.heads.get(&battle).copied();
        match self.truth.held_at(&battle, version).await {
            Ok(Some(held)) if held.record == payload => {
                let Ok(hash) = Hash::try_from(held.hash.as_slice()) else {
                    return Verdict::Unconfirmed(record, "the journal's hash is not 32 bytes".into());
                };
                if let Some((head, _)) = shown
                    && version <= head
                {
                    eprintln!(
                        "battle {battle}: #{version} as the journal holds it; what this feed showed from #{version} \
                         to #{head} was not the journal's"
                    );
                }
                self.heads.insert(battle, (version, hash));
                Verdict::Show(record)
            }
            Ok(held) => {
                let follows = match shown {
                    Some((head, _)) if version == head + 1 => format!("does not follow #{head} as shown, and "),
                    _ => String::new(),
                };
                let holds = if held.is_some() { "holds another record there" } else { "holds no such version" };
                Verdict::Drop(format!("#{version} {follows}the journal {holds} (the NATS feed is only a hint)"))
            }
            Err(error) => Verdict::Unconfirmed(record, format!("cannot read the journal ({error})")),
        }
    }
}

/// The hash a message claims for its event (the journal's
/// `Battlelog-Hash` header), if it carries a well-formed one.
fn claimed_hash(message: &async_nats::Message) -> Option<Hash> {
    let value = message.headers.as_ref()?.get(battlelog_feed::headers::HASH)?;
    battlelog_verify::chain::hash_from_hex(value.as_str()).ok()
}

/// One battle from the start, then live, through the resolver.
async fn from_resolver(args: &WatchArgs, battle: &str) -> anyhow::Result<Output> {
    let mut resolver = client::resolver(&args.resolver, &args.tls, Role::Reader).await?;
    let request = battlelog_proto::v1::WatchRequest { battle_id: battle.to_owned(), from_version: 0 };
    let mut events = resolver
        .watch(request)
        .await
        .map_err(|s| anyhow::anyhow!("resolver: {}", client::status_message(&s)))?
        .into_inner();
    eprintln!("watching battle {battle} at {} (Ctrl-C stops)", args.resolver.url(&args.tls));
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
        let p = NATS_SUBJECT_PREFIX;
        assert_eq!(subject(p, Some("b1"), None), "battlelog.events.*.b1");
        assert_eq!(subject(p, Some("b1"), Some("forum-a")), "battlelog.events.forum-a.b1");
        assert_eq!(subject(p, None, Some("forum-a")), "battlelog.events.forum-a.>");
        assert_eq!(subject(p, None, None), "battlelog.events.>");
        assert_eq!(subject(JOURNAL_SUBJECT_PREFIX, Some("b1"), None), "battlelog.journal.*.b1");
    }
}
