//! `battlelog journal`: an operator's tools for a journal's log itself.
//!
//! `journal copy --from sled:DIR --to jetstream:URL[,URL…]` moves a journal
//! from one machine's sled onto a replicated JetStream log: every stream,
//! byte for byte, each chain verified on both sides (see
//! `battlelog_journal::copy`). Run it with the source journal stopped (sled
//! locks its directory); it can be run again to continue a copy cut short.
//!
//! `journal accept-loss --data-dir DIR --checkpoint-size N --reason TEXT` is
//! the operator's override for a journal whose store is behind the last
//! checkpoint it signed (`battlelog_journal::kept`), when no backup holds
//! the lost records: with the journal stopped, it records the fork in the
//! data dir and removes the kept checkpoint, so that the journal starts
//! again over what its store holds. Who may run it: whoever may write the
//! journal's data dir (owner-only, 0700) — the operator of that machine; it
//! calls no service, and a running journal's sled lock refuses it.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use battlelog_journal::SledStore;
use battlelog_journal::copy::{self, StoreSpec};
use battlelog_journal::kept;
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
    /// With the journal stopped: accept that its store lost records its last
    /// signed checkpoint covers, and record the fork (docs/operating.md).
    AcceptLoss(AcceptLossArgs),
}

#[derive(Debug, Args)]
struct AcceptLossArgs {
    /// The journal's data dir: its kept checkpoint and record of forks, and
    /// with the sled backend its store (the journal stopped).
    #[arg(long, value_name = "DIR")]
    data_dir: PathBuf,
    /// The store when it is not sled in --data-dir: jetstream:URL[,URL...]
    /// with the journal's NATS login.
    #[arg(long)]
    store: Option<StoreSpec>,
    /// The tree size of the checkpoint to abandon, as the journal's log line
    /// gives it ("the last signed checkpoint covers N"): it must be the kept one.
    #[arg(long, value_name = "N")]
    checkpoint_size: u64,
    /// Why the records are gone, recorded with the fork.
    #[arg(long)]
    reason: String,
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
        JournalCommand::AcceptLoss(accept) => accept_loss_command(accept).await,
    }
}

async fn accept_loss_command(args: &AcceptLossArgs) -> anyhow::Result<Output> {
    if !args.data_dir.is_dir() {
        anyhow::bail!("--data-dir: {} is not a directory", args.data_dir.display());
    }
    let spec = args.store.clone().unwrap_or_else(|| StoreSpec::Sled(args.data_dir.clone()));
    let store = open(&spec, "--store", true, 1).await?;
    // Who ran it, as far as this machine says: recorded with the fork.
    let by = ["USER", "LOGNAME"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
        .unwrap_or_else(|| "an unnamed user".to_owned());
    let accepted = kept::accept_loss(&*store, &args.data_dir, args.checkpoint_size, &args.reason, &by).await;
    // Closed either way: sled's lock let go.
    let closed = store.close().await;
    let fork = accepted?;
    closed.context("--store: close")?;
    Ok(Output::text(format!(
        "abandoned the checkpoint of tree size {} (root {}); the store holds {} records. Recorded in {}. At its next \
         start the journal signs anew over those records: a checkpoint kept past them no longer verifies against \
         the log, so tell the forums and judges",
        fork.abandoned_size,
        fork.abandoned_root,
        fork.store_size,
        args.data_dir.join(kept::FORKS_FILE).display()
    )))
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
