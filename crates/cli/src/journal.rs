//! `battlelog journal`: an operator's tools for a journal's log itself.
//!
//! `journal copy --from sled:DIR --to jetstream:URL[,URL…]` moves a journal
//! from one machine's sled onto a replicated JetStream log: every stream,
//! byte for byte, each chain verified on both sides (see
//! `battlelog_journal::copy`). Run it with the source journal stopped (sled
//! locks its directory); it can be run again to continue a copy cut short.

use std::sync::Arc;

use anyhow::Context;
use battlelog_journal::SledStore;
use battlelog_journal::copy::{self, StoreSpec};
use battlelog_journal::store::EventStore;
use battlelog_journal::store::jetstream::{JetStreamOptions, JetStreamStore};
use clap::{Args, Subcommand};

use crate::Output;

#[derive(Debug, Args)]
pub struct JournalArgs {
    #[command(subcommand)]
    command: JournalCommand,
}

#[derive(Debug, Subcommand)]
enum JournalCommand {
    /// Copy every stream from one store to another, verifying each chain on both sides.
    Copy(CopyArgs),
}

#[derive(Debug, Args)]
struct CopyArgs {
    /// Where from: sled:DIR (a stopped journal's data dir) or jetstream:URL[,URL...].
    #[arg(long)]
    from: StoreSpec,
    /// Where to: sled:DIR or jetstream:URL[,URL...].
    #[arg(long)]
    to: StoreSpec,
    /// The replicas of a JetStream stream this copy creates (3 on a
    /// three-node cluster); an existing stream is used as it is.
    #[arg(long, default_value_t = 1)]
    replicas: usize,
}

pub async fn run(args: &JournalArgs) -> anyhow::Result<Output> {
    match &args.command {
        JournalCommand::Copy(copy) => copy_command(copy).await,
    }
}

async fn copy_command(args: &CopyArgs) -> anyhow::Result<Output> {
    if args.from == args.to {
        anyhow::bail!("--from and --to name the same store");
    }
    let from = open(&args.from, "--from", true, args.replicas).await?;
    let to = open(&args.to, "--to", false, args.replicas).await?;
    let copied = copy::copy(&*from, &*to).await;
    // Closed either way, so that what was written is flushed and sled's
    // directory lock is let go.
    let closed = (from.close().await, to.close().await);
    let report = copied.context("copy")?;
    closed.0.context("--from: close")?;
    closed.1.context("--to: close")?;
    Ok(Output::text(format!(
        "copied {} events ({} already there) of {} streams; every chain verifies on both sides with the same head",
        report.copied, report.present, report.streams
    )))
}

async fn open(spec: &StoreSpec, flag: &str, must_exist: bool, replicas: usize) -> anyhow::Result<Arc<dyn EventStore>> {
    match spec {
        StoreSpec::Sled(dir) => {
            // sled creates what it opens: a mistyped source would copy nothing.
            if must_exist && !dir.join("conf").is_file() {
                anyhow::bail!("{flag}: {} is not a journal's sled directory", dir.display());
            }
            let dir = dir.clone();
            let store = tokio::task::spawn_blocking(move || SledStore::open(&dir, 64 * 1024 * 1024, 1024))
                .await
                .context("open task")?
                .with_context(|| format!("{flag}: open sled"))?;
            Ok(Arc::new(store))
        }
        StoreSpec::JetStream(urls) => {
            // The journal's defaults (stream name, limits): the same a
            // journal on it would use.
            let options = JetStreamOptions { replicas, ..JetStreamOptions::new(urls.join(",")) };
            let store = JetStreamStore::connect(options).await.with_context(|| format!("{flag}: open JetStream"))?;
            Ok(Arc::new(store))
        }
    }
}
