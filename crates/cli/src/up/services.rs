//! Each service of `up`'s stack: its listener bound, and its development
//! configuration built by its own constructor (`Config::development`) from
//! what `up` decides — ports, peers' URLs, NATS logins, TLS — then checked
//! as its binary checks it.

use std::net::SocketAddr;

use anyhow::Context;
use battlelog_auth::ShareSecret;
use battlelog_runtime::edge::TenantRateLimit;
use tokio::net::TcpListener;

use super::nats::Nats;
use super::secrets::{Secrets, webhook_secret};
use super::{JOURNAL_STREAM, JOURNAL_SUBJECT_PREFIX, JournalBackend, NATS_STREAM, NATS_SUBJECT_PREFIX, UpArgs};
use crate::tls::UpTls;

/// A service's listener and the URL it is reached at.
pub(super) struct Bound {
    pub(super) listener: TcpListener,
    pub(super) url: String,
}

impl Bound {
    async fn bind(addr: SocketAddr, what: &str, scheme: &str) -> anyhow::Result<Self> {
        let listener =
            TcpListener::bind(addr).await.with_context(|| format!("cannot listen on {addr} for the {what}"))?;
        let url = format!("{scheme}://{}", listener.local_addr()?);
        Ok(Self { listener, url })
    }

    fn addr(&self) -> anyhow::Result<SocketAddr> {
        Ok(self.listener.local_addr()?)
    }
}

/// The four listeners every stack has, bound before anything else starts.
pub(super) struct Listeners {
    pub(super) journal: Bound,
    pub(super) roller: Bound,
    pub(super) resolver: Bound,
    pub(super) web: Bound,
}

impl Listeners {
    pub(super) async fn bind(args: &UpArgs, tls: &UpTls) -> anyhow::Result<Self> {
        Ok(Self {
            journal: Bound::bind(args.journal_listen, "journal", tls.scheme()).await?,
            roller: Bound::bind(args.roller_listen, "roller", tls.scheme()).await?,
            resolver: Bound::bind(args.resolver_listen, "resolver", tls.scheme()).await?,
            // The pages are plain HTTP on loopback; a deployment puts its
            // TLS proxy in front (deploy/).
            web: Bound::bind(args.web_listen, "web pages", "http").await?,
        })
    }
}

/// Every service's configuration, checked, with the URLs the banner and
/// the other commands reach them at.
pub(super) struct Stack {
    pub(super) journal: battlelog_journal::Config,
    pub(super) roller: battlelog_roller::Config,
    pub(super) resolver: battlelog_resolver::Config,
    pub(super) web: battlelog_web::Config,
    /// With `--webhook`: its config, listener and banner line.
    pub(super) webhooks: Option<(battlelog_webhooks::Config, TcpListener, String)>,
    /// The key the web pages pin and a judge pins the audit to (what
    /// `battlelog roller-key` prints for the development master key).
    pub(super) roller_key: String,
}

impl Stack {
    /// Each service's development config, from its own constructor; the
    /// secrets each keeps under the data dir made on first start.
    pub(super) async fn configure(
        args: &UpArgs,
        tls: &UpTls,
        secrets: &Secrets,
        nats: &Nats,
        listeners: &Listeners,
    ) -> anyhow::Result<Self> {
        let dev = &secrets.development;
        let jetstream = args.journal_backend == JournalBackend::Jetstream;
        let log = match nats.journal_url() {
            Some(url) if jetstream => battlelog_journal::config::DevelopmentLog::Jetstream {
                nats_url: url.to_owned(),
                replicas: args.journal_replicas.unwrap_or(1),
            },
            url => battlelog_journal::config::DevelopmentLog::Sled { nats_url: url.map(str::to_owned) },
        };
        let journal =
            battlelog_journal::Config::development(dev, listeners.journal.addr()?, tls.internal_server(), log);
        let (journal_url, roller_url) = (&listeners.journal.url, &listeners.roller.url);
        let roller = battlelog_roller::Config::development(
            dev,
            listeners.roller.addr()?,
            tls.internal_server(),
            journal_url.clone(),
            args.cache_bytes / 4,
        );
        let roller_key = roller.master_key()?.commitment_signer().roller_key().to_string();
        let web_token_file = secrets.web_token_file.clone();
        let resolver_url = listeners.resolver.url.clone();
        let web_addr = listeners.web.addr()?;
        let web = battlelog_web::Config::development(dev, web_addr, resolver_url, web_token_file, roller_key.clone());
        // The web pages' share links are keyed by a secret the resolver
        // holds too.
        let share_secret_file = web.share_secret_file.clone().context("the web's share secret")?;
        ShareSecret::read_or_create(&share_secret_file)?;
        let subject_prefix = if jetstream { JOURNAL_SUBJECT_PREFIX } else { NATS_SUBJECT_PREFIX };
        let peers = battlelog_resolver::config::DevelopmentPeers {
            journal_url: journal_url.clone(),
            roller_url: roller_url.clone(),
            feed: nats.resolver_url().map(|url| (url.to_owned(), subject_prefix.to_owned())),
            web_url: listeners.web.url.clone(),
            share_secret_file,
        };
        let resolver = resolver_config(args, tls, secrets, &listeners.resolver, peers)?;
        journal.validate()?;
        roller.validate()?;
        resolver.validate()?;
        web.validate()?;
        let webhooks = webhooks(args, secrets, nats, journal_url).await?;
        Ok(Self { journal, roller, resolver, web, webhooks, roller_key })
    }
}

/// The resolver's development config, tuned by `up`'s flags, with its
/// battle-id secret made on first start.
fn resolver_config(
    args: &UpArgs,
    tls: &UpTls,
    secrets: &Secrets,
    bound: &Bound,
    peers: battlelog_resolver::config::DevelopmentPeers,
) -> anyhow::Result<battlelog_resolver::Config> {
    let tuning = battlelog_resolver::config::DevelopmentTuning {
        cache_bytes: args.cache_bytes / 4 * 3,
        appeal_window_secs: args.appeal_window_secs,
        rate_limit: TenantRateLimit {
            rate_limit_per_sec: args.rate_limit_per_sec,
            rate_limit_burst: args.rate_limit_burst,
            ..TenantRateLimit::default()
        },
    };
    let dev = &secrets.development;
    let resolver = battlelog_resolver::Config::development(dev, bound.addr()?, tls.public_server(), peers, tuning);
    if let Some(path) = &resolver.battle_id_secret_file {
        battlelog_resolver::battle_id::BattleIdSecret::read_or_create(path)?;
    }
    Ok(resolver)
}

/// With `--webhook URL`: battlelog-webhooks on its own port, POSTing the
/// development tenant's events to URL, signed with the secret under the
/// data dir (made on first start).
async fn webhooks(
    args: &UpArgs,
    secrets: &Secrets,
    nats: &Nats,
    journal_url: &str,
) -> anyhow::Result<Option<(battlelog_webhooks::Config, TcpListener, String)>> {
    let (Some(url), Some(nats_url)) = (&args.webhook, nats.webhooks_url(args)?) else {
        return Ok(None);
    };
    let bound = Bound::bind(args.webhooks_listen, "webhooks", "http").await?;
    let secret_path = args.data_dir.join("webhooks").join("secret");
    let secret = webhook_secret(&secret_path)?;
    let jetstream = args.journal_backend == JournalBackend::Jetstream;
    let feed = if jetstream { (JOURNAL_STREAM, JOURNAL_SUBJECT_PREFIX) } else { (NATS_STREAM, NATS_SUBJECT_PREFIX) };
    let endpoint = battlelog_webhooks::config::TenantEndpoint { url: url.clone(), secret };
    let config = battlelog_webhooks::Config::development(
        &secrets.development,
        bound.addr()?,
        nats_url,
        feed,
        journal_url.to_owned(),
        (crate::dev_token::DEV_TENANT.to_owned(), endpoint),
    );
    config.validate()?;
    let line = format!(
        "POST {url} (tenant `{}`), signed with the secret in {}; parked: battlelog webhooks parked --webhooks {}",
        crate::dev_token::DEV_TENANT,
        secret_path.display(),
        bound.url
    );
    Ok(Some((config, bound.listener, line)))
}
