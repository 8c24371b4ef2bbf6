//! `battlelog roll` and `battlelog commitment`: anyone can re-derive a roll
//! from the revealed seed, the client seed and the nonce. `battlelog
//! roller-key`: the operator's side, the public key to publish.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use dice::{ServerSeed, render};
use serde::Serialize;

#[derive(Debug, Args)]
pub struct RollArgs {
    /// The dice expression, e.g. `4d6kh3` or `2д10+1 # attack`.
    // Expressions may start with a minus (`-1d4`); that is not a flag.
    #[arg(allow_hyphen_values = true)]
    expression: String,
    /// The epoch's server seed, 64 hex digits.
    #[arg(long)]
    server_seed: String,
    /// The battle's client seed (any UTF-8 text, may be empty).
    #[arg(long)]
    client_seed: String,
    /// The roll's nonce within the battle: 0, 1, 2 …
    #[arg(long)]
    nonce: u64,
    /// Print one JSON object instead of the forum rendering.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub struct CommitmentArgs {
    /// The server seed, 64 hex digits.
    #[arg(long)]
    server_seed: String,
}

#[derive(Debug, Args)]
pub struct RollerKeyArgs {
    /// The roller's master key file (hex), as the roller reads it.
    #[arg(long, value_name = "FILE")]
    master_key_file: PathBuf,
}

#[derive(Debug, Serialize)]
struct RollJson<'a> {
    expression: &'a str,
    client_seed: &'a str,
    nonce: u64,
    commitment: String,
    total: i64,
    dice: &'a [dice::Die],
    rendering: String,
}

pub fn roll(args: &RollArgs) -> anyhow::Result<String> {
    let seed = ServerSeed::from_hex(&args.server_seed).context("--server-seed")?;
    let (expression, rolled) =
        dice::roll(&args.expression, &seed, &args.client_seed, args.nonce).context("invalid dice expression")?;
    let rendering = render(&expression, &rolled);
    if !args.json {
        return Ok(rendering);
    }
    let json = RollJson {
        expression: &args.expression,
        client_seed: &args.client_seed,
        nonce: args.nonce,
        commitment: seed.commitment().to_string(),
        total: rolled.total,
        dice: &rolled.dice,
        rendering,
    };
    Ok(serde_json::to_string(&json)?)
}

pub fn commitment(args: &CommitmentArgs) -> anyhow::Result<String> {
    let seed = ServerSeed::from_hex(&args.server_seed).context("--server-seed")?;
    Ok(seed.commitment().to_string())
}

/// The public key that signs the commitments of a roller with this master
/// key (docs/PROTOCOL-signatures.md), for the operator to publish.
pub fn roller_key(args: &RollerKeyArgs) -> anyhow::Result<String> {
    // The error already names its cause; anyhow's chain would repeat it.
    let master_key =
        battlelog_roller::MasterKey::read_file(&args.master_key_file).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(master_key.commitment_signer().roller_key().to_string())
}
