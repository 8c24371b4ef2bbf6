//! `battlelog log-key`: the journal's log key (docs/protocol.md §5), the
//! verifier key its checkpoints are signed with. An operator publishes it
//! (`log-key`) and makes a new private one (`log-key generate`).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use battlelog_auth::Role;
use battlelog_proto::v1::GetCheckpointRequest;
use battlelog_tlog::{LogKey, VerifierKey};
use clap::{Args, Subcommand};

use crate::Output;
use crate::client::{self, ResolverEndpoint};

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct LogKeyArgs {
    #[command(subcommand)]
    command: Option<LogKeyCommand>,
    /// Read the verifier key from this private key file, offline, instead
    /// of asking the resolver.
    #[arg(long, value_name = "FILE")]
    key: Option<PathBuf>,
    #[command(flatten)]
    resolver: ResolverEndpoint,
    #[command(flatten)]
    tls: crate::tls::TlsArgs,
}

#[derive(Debug, Subcommand)]
enum LogKeyCommand {
    /// Write a new private log key (mode 0600) and print its verifier key:
    /// for the journal's `log_key_file`.
    Generate(GenerateArgs),
}

#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// The log's origin (its name in checkpoints): no spaces, `+` or newline.
    #[arg(long, default_value = battlelog_tlog::DEFAULT_ORIGIN)]
    origin: String,
    /// Where to write the private key; an existing file is never overwritten.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
}

pub async fn log_key(args: &LogKeyArgs) -> anyhow::Result<Output> {
    if let Some(LogKeyCommand::Generate(generate)) = &args.command {
        return generate_key(generate);
    }
    if let Some(path) = &args.key {
        let text = std::fs::read_to_string(path).with_context(|| format!("--key: cannot read {}", path.display()))?;
        let key = LogKey::parse(&text).map_err(|e| anyhow::anyhow!("--key: {}: {e}", path.display()))?;
        return Ok(Output::text(key.verifier_key().to_string()));
    }
    let mut resolver = client::resolver(&args.resolver, &args.tls, Role::Reader).await?;
    let reply = resolver
        .get_checkpoint(GetCheckpointRequest {})
        .await
        .map_err(|s| anyhow::anyhow!("resolver: {}", client::status_message(&s)))?
        .into_inner();
    // Read back before printing: a key that does not parse is no key to publish.
    let key = VerifierKey::parse(&reply.log_key).map_err(|e| anyhow::anyhow!("the journal's log key: {e}"))?;
    Ok(Output::text(key.to_string()))
}

fn generate_key(args: &GenerateArgs) -> anyhow::Result<Output> {
    anyhow::ensure!(!args.out.exists(), "{} exists; a log key is never overwritten", args.out.display());
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| anyhow::anyhow!("no randomness for a new key: {e}"))?;
    let key = LogKey::from_seed(&args.origin, seed).map_err(|e| anyhow::anyhow!("--origin: {e}"))?;
    write_private(&args.out, format!("{}\n", key.to_text()).as_bytes())
        .with_context(|| format!("cannot write {}", args.out.display()))?;
    Ok(Output::text(format!(
        "log key {} (keep it secret; the journal's log_key_file), verifier key {} (publish it)",
        args.out.display(),
        key.verifier_key()
    )))
}

/// Writes a new file readable by its owner alone (0600 on Unix), never over
/// an existing one.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(bytes).and_then(|()| file.sync_all())
}
