//! `battlelog checkpoint`: the journal's transparency log (docs/protocol.md
//! §5) for judges. A judge keeps the newest checkpoint (`checkpoint`) and
//! later holds the journal to it (`checkpoint verify`); the consistency
//! proofs it asks for serve `battlelog audit --checkpoint` too. The log key
//! checkpoints are signed with is `battlelog log-key`'s ([`crate::log_key`]).

use std::path::{Path, PathBuf};

use anyhow::Context;
use battlelog_auth::{AuthChannel, Role};
use battlelog_proto::error::{Error, JournalReason};
use battlelog_proto::v1::resolver_client::ResolverClient;
use battlelog_proto::v1::{ConsistencyProofRequest, GetCheckpointRequest};
use battlelog_tlog::{Checkpoint, KeptCheckpoint, VerifierKey, verify_consistency};
use clap::{Args, Subcommand};

use crate::Output;
use crate::audit::{parse_log_key, read_proof};
use crate::client::{self, ResolverEndpoint};

/// What `battlelog checkpoint verify --help` says of its exit statuses.
pub const VERIFY_EXIT_CODES: &str = "\
Exit status:
  0  the new checkpoint extends the old one: the log was not rewritten
     (given in the other order, the larger extends the smaller: said so)
  1  it does not: the log was rewritten between them; or the log the
     resolver shows does not reach the larger checkpoint (it is shorter,
     or its journal's store is behind what it signed): records were lost
  2  the check could not run: bad arguments, an unreadable or malformed
     checkpoint or proof file, a signature that does not verify with
     --log-key, an unreachable resolver

A checkpoint file holds a signed note as `battlelog checkpoint` prints it,
or the \"<tree size> <root hash>\" a forum posts (base64 or hex root).";

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct CheckpointArgs {
    #[command(subcommand)]
    command: Option<CheckpointCommand>,
    /// Check the note's signature with this log key before printing it.
    #[arg(long, value_name = "VKEY", value_parser = parse_log_key)]
    log_key: Option<VerifierKey>,
    #[command(flatten)]
    resolver: ResolverEndpoint,
    #[command(flatten)]
    tls: crate::tls::TlsArgs,
}

#[derive(Debug, Subcommand)]
enum CheckpointCommand {
    /// Check that a newer checkpoint extends an older one (a consistency
    /// proof, from the resolver or --proof).
    #[command(after_help = VERIFY_EXIT_CODES)]
    Verify(VerifyArgs),
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The older checkpoint: a signed note, or "SIZE ROOT".
    #[arg(long, value_name = "FILE")]
    old: PathBuf,
    /// The newer checkpoint: a signed note, or "SIZE ROOT".
    #[arg(long, value_name = "FILE")]
    new: PathBuf,
    /// The journal's log key: signed notes must verify with it. Without
    /// it, notes are read without checking their signatures (and the
    /// output says so).
    #[arg(long, value_name = "VKEY", value_parser = parse_log_key)]
    log_key: Option<VerifierKey>,
    /// The consistency proof (a JSON list of base64 hashes, as
    /// GetConsistencyProof gives it), instead of asking the resolver.
    #[arg(long, value_name = "FILE")]
    proof: Option<PathBuf>,
    #[command(flatten)]
    resolver: ResolverEndpoint,
    #[command(flatten)]
    tls: crate::tls::TlsArgs,
}

/// What the log the resolver shows answers for a consistency proof.
#[derive(Debug)]
pub enum LogProof {
    /// The proof, as 32-byte hashes.
    Proof(Vec<battlelog_tlog::Hash>),
    /// The log does not reach the larger size: why, as one line. A finding
    /// (a checkpoint the log no longer holds), not a failure to check.
    Short(String),
}

/// The consistency proof from `old_size` to `new_size` from the log the
/// resolver shows, or why that log cannot give it because it does not reach
/// `new_size`: its newest checkpoint is smaller (the log lost records since,
/// or is another log), or its journal answers that its store is behind the
/// last checkpoint it signed (`STORE_BEHIND_CHECKPOINT`).
pub async fn proof_from_log(
    resolver: &mut ResolverClient<AuthChannel>,
    old_size: u64,
    new_size: u64,
) -> anyhow::Result<LogProof> {
    let newest = resolver
        .get_checkpoint(GetCheckpointRequest {})
        .await
        .map_err(|s| anyhow::anyhow!("resolver: {}", client::status_message(&s)))?
        .into_inner()
        .checkpoint
        .map_or(0, |c| c.tree_size);
    if newest < new_size {
        return Ok(LogProof::Short(format!(
            "the log's newest checkpoint has tree size {newest}, fewer records than {new_size}"
        )));
    }
    match consistency_proof(resolver, old_size, new_size).await {
        Ok(proof) => Ok(LogProof::Proof(proof)),
        Err(ProofError::StoreBehind(why)) => Ok(LogProof::Short(why)),
        Err(ProofError::Other(e)) => Err(e),
    }
}

/// Why [`consistency_proof`] gave no proof.
#[derive(Debug)]
enum ProofError {
    /// The journal's store is behind its last signed checkpoint: what it said.
    StoreBehind(String),
    /// Anything else: the check could not run.
    Other(anyhow::Error),
}

impl From<anyhow::Error> for ProofError {
    fn from(e: anyhow::Error) -> Self {
        ProofError::Other(e)
    }
}

/// The consistency proof between two tree sizes, from the resolver (and so
/// the journal), as 32-byte hashes.
async fn consistency_proof(
    resolver: &mut ResolverClient<AuthChannel>,
    old_size: u64,
    new_size: u64,
) -> Result<Vec<battlelog_tlog::Hash>, ProofError> {
    let reply = match resolver.get_consistency_proof(ConsistencyProofRequest { old_size, new_size }).await {
        Ok(reply) => reply.into_inner(),
        Err(status) => {
            let behind =
                Error::from_status(&status).is_some_and(|e| e.reason == JournalReason::StoreBehindCheckpoint.into());
            let message = client::status_message(&status);
            return Err(if behind {
                ProofError::StoreBehind(message)
            } else {
                ProofError::Other(anyhow::anyhow!("resolver: {message}"))
            });
        }
    };
    let hashes = reply
        .proof
        .iter()
        .enumerate()
        .map(|(i, hash)| {
            <[u8; 32]>::try_from(hash.as_slice())
                .map_err(|_| anyhow::anyhow!("resolver: consistency proof hash {i} has {} bytes, not 32", hash.len()))
        })
        .collect::<anyhow::Result<_>>()?;
    Ok(hashes)
}

pub async fn checkpoint(args: &CheckpointArgs) -> anyhow::Result<Output> {
    if let Some(CheckpointCommand::Verify(verify)) = &args.command {
        return verify_checkpoints(verify).await;
    }
    let mut resolver = client::resolver(&args.resolver, &args.tls, Role::Reader).await?;
    let reply = resolver
        .get_checkpoint(GetCheckpointRequest {})
        .await
        .map_err(|s| anyhow::anyhow!("resolver: {}", client::status_message(&s)))?
        .into_inner();
    let checkpoint = reply.checkpoint.context("the journal has issued no checkpoint yet: its log is empty")?;
    if let Some(key) = &args.log_key {
        Checkpoint::open(&checkpoint.note, key).map_err(|e| anyhow::anyhow!("the checkpoint: {e}"))?;
    }
    // The note exactly as signed; printing adds back its final newline.
    let note = checkpoint.note.strip_suffix('\n').unwrap_or(&checkpoint.note);
    Ok(Output::text(note))
}

fn read_kept(flag: &str, path: &Path, key: Option<&VerifierKey>) -> anyhow::Result<KeptCheckpoint> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{flag}: cannot read {}", path.display()))?;
    KeptCheckpoint::parse(&text, key).map_err(|e| anyhow::anyhow!("{flag}: {}: {e}", path.display()))
}

async fn verify_checkpoints(args: &VerifyArgs) -> anyhow::Result<Output> {
    let old = read_kept("--old", &args.old, args.log_key.as_ref())?;
    let new = read_kept("--new", &args.new, args.log_key.as_ref())?;
    // A log only grows, so the smaller checkpoint must be a prefix of the
    // larger whichever order they were given in; the proof runs from the
    // smaller (a judge's kept checkpoint may be larger than a new one, and
    // then the log the new one came from is what has to answer for it).
    let swapped = old.size > new.size;
    let (smaller, larger) = if swapped { (&new, &old) } else { (&old, &new) };
    let proof = match &args.proof {
        Some(path) => read_proof(path).context("--proof")?,
        // Nothing to ask: equal sizes need equal roots, and everything
        // extends the empty tree.
        None if smaller.size == larger.size || smaller.size == 0 => Vec::new(),
        None => {
            let mut resolver = client::resolver(&args.resolver, &args.tls, Role::Reader).await?;
            match proof_from_log(&mut resolver, smaller.size, larger.size).await? {
                LogProof::Proof(proof) => proof,
                LogProof::Short(why) => {
                    return Ok(Output {
                        stdout: format!(
                            "NOT CONSISTENT: the log does not reach the checkpoint of tree size {} ({}): {why}: \
                             records it covered are lost, or this is another log",
                            larger.size,
                            if swapped { "--old" } else { "--new" }
                        ),
                        code: 1,
                    });
                }
            }
        }
    };
    let signed = |kept: &KeptCheckpoint| match (&kept.note, &args.log_key) {
        (None, _) => "size and root only",
        (Some(_), Some(_)) => "signature checked with --log-key",
        (Some(_), None) => "signature NOT checked: give --log-key",
    };
    let (old_said, new_said) = (signed(&old), signed(&new));
    let (smaller_said, larger_said) = if swapped { (new_said, old_said) } else { (old_said, new_said) };
    Ok(match verify_consistency(smaller.size, &smaller.root, larger.size, &larger.root, &proof) {
        Ok(()) => Output::text(format!(
            "consistent: the checkpoint of tree size {} ({larger_said}) extends the one of tree size {} \
             ({smaller_said}): the log was not rewritten{}",
            larger.size,
            smaller.size,
            if swapped { " (--old is the larger of the two)" } else { "" }
        )),
        Err(error) => Output {
            stdout: format!(
                "NOT CONSISTENT: the log was rewritten between tree size {} and {}: {error}",
                smaller.size, larger.size
            ),
            code: 1,
        },
    })
}
