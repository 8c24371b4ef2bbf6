//! Running `up`'s stack: each service spawned as its binary runs it
//! (battlelog_runtime::service::Service), ready once each has announced
//! itself, stopped together when one stops or on Ctrl-C.

use std::collections::{BTreeMap, BTreeSet};

use battlelog_runtime::Announced;
use battlelog_runtime::service::{Service, Shutdown};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::{JoinError, JoinSet};

use super::services::{Listeners, Stack};

/// A service's name and how it ended.
type Ended = (&'static str, anyhow::Result<()>);

/// The services running, and what stops them.
pub(super) struct Running {
    services: JoinSet<Ended>,
    stop: watch::Sender<bool>,
}

impl Running {
    /// Spawns every service of `stack` on its listener, then waits until
    /// each has announced that it is ready; returns with their metrics
    /// URLs by binary name (`battlelog-journal`). A service that stops
    /// before it is ready stops `up` with its error.
    pub(super) async fn start(
        stack: Stack,
        listeners: Listeners,
    ) -> anyhow::Result<(Self, BTreeMap<String, String>, Option<String>)> {
        // Every service announces its ports here, not on stdout: `up`
        // prints one banner once all of them are ready.
        let mut announced = battlelog_runtime::capture_announcements();
        let (stop, stopped) = watch::channel(false);
        let mut running = Self { services: JoinSet::new(), stop };
        running.spawn::<battlelog_journal::Config>(stack.journal, listeners.journal.listener, &stopped);
        running.spawn::<battlelog_roller::Config>(stack.roller, listeners.roller.listener, &stopped);
        running.spawn::<battlelog_resolver::Config>(stack.resolver, listeners.resolver.listener, &stopped);
        running.spawn::<battlelog_web::Config>(stack.web, listeners.web.listener, &stopped);
        let mut expected = 4;
        let webhooks_line = stack.webhooks.map(|(config, listener, line)| {
            running.spawn::<battlelog_webhooks::Config>(config, listener, &stopped);
            expected += 1;
            line
        });
        let mut metrics_urls = BTreeMap::new();
        let mut ready = BTreeSet::new();
        while ready.len() < expected {
            tokio::select! {
                announcement = announced.recv() => {
                    let Some(announcement) = announcement else { anyhow::bail!("the services' announcements stopped") };
                    match announcement.what {
                        Announced::Metrics => {
                            metrics_urls.insert(announcement.service, format!("http://{}/metrics", announcement.addr));
                        }
                        Announced::Listening => {
                            ready.insert(announcement.service);
                        }
                    }
                }
                Some(ended) = running.services.join_next() => {
                    running.stop.send_replace(true);
                    return Err(not_ready(ended));
                }
            }
        }
        Ok((running, metrics_urls, webhooks_line))
    }

    /// `S` run as its binary runs it, until `up` stops.
    fn spawn<S: Service>(&mut self, config: S, listener: TcpListener, stopped: &watch::Receiver<bool>) {
        let mut stopped = stopped.clone();
        let shutdown: Shutdown = Box::pin(async move {
            let _ = stopped.wait_for(|stop| *stop).await;
        });
        self.services.spawn(async move { (S::NAME, config.run(listener, shutdown).await.map_err(Into::into)) });
    }

    /// Runs until `shutdown` resolves (Ctrl-C) or a service stops on its
    /// own (the journal failing, most likely); then stops every service as
    /// its own binary stops (in-flight requests finish, the journal commits
    /// and flushes what was queued). What failed, if anything did.
    pub(super) async fn until(mut self, shutdown: impl Future<Output = ()>) -> Option<String> {
        let failed = tokio::select! {
            () = shutdown => None,
            Some(ended) = self.services.join_next() => Some(ended),
        };
        self.stop.send_replace(true);
        let mut errors = Vec::new();
        for ended in failed.into_iter().chain(self.services.join_all().await.into_iter().map(Ok)) {
            match ended {
                Ok((_, Ok(()))) => {}
                Ok((service, Err(error))) => errors.push(format!("the {service}: {error:#}")),
                Err(error) => errors.push(format!("a service failed: {error}")),
            }
        }
        (!errors.is_empty()).then(|| errors.join("; "))
    }
}

/// The error of a service that ended before it was ready.
fn not_ready(ended: Result<Ended, JoinError>) -> anyhow::Error {
    match ended {
        Ok((service, Err(error))) => error.context(format!("the {service} did not start")),
        Ok((service, Ok(()))) => anyhow::anyhow!("the {service} stopped before it was ready"),
        Err(error) => anyhow::anyhow!("a service failed: {error}"),
    }
}
