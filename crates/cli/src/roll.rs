//! `battlelog roll` and `battlelog commitment`: anyone can re-derive a roll
//! from the revealed seed, the client seed and the nonce. `battlelog
//! roller-key`: the operator's side, the public key to publish.
//!
//! A roll whose arithmetic fails after its dice are drawn (`1d6/0`) is
//! re-derived as the roller journals it and the audit checks it
//! (docs/protocol.md §3): its dice, a total of 0 and the error, exit 0. One
//! that fails before any die is drawn (`1/0`) fails whatever the seed: an
//! invalid expression, exit 2, as the known-answer vectors hold.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use dice::{Expression, Roll, RollKey, RollStream, ServerSeed, render};
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
    /// What failed in the arithmetic, as the journal's `DiceRolled.error`
    /// says it; absent when nothing did.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

pub fn roll(args: &RollArgs) -> anyhow::Result<String> {
    let seed = ServerSeed::from_hex(&args.server_seed).context("--server-seed")?;
    let expression = Expression::parse(&args.expression).context("invalid dice expression")?;
    let key = RollKey::derive(&seed, &args.client_seed);
    // As the roller draws it: the dice drawn are kept even when the
    // arithmetic fails on them.
    let (dice, total) = dice::evaluate_keeping_dice(&expression, &mut RollStream::new(&key, args.nonce));
    let (total, error) = match total {
        Ok(total) => (total, None),
        // Nothing drawn: the expression fails on its own, whatever the seed.
        Err(error) if dice.is_empty() => return Err(anyhow::Error::new(error).context("invalid dice expression")),
        Err(error) => (0, Some(error.to_string())),
    };
    let rolled = Roll { total, dice };
    let rendering = render(&expression, &rolled);
    if !args.json {
        return Ok(match &error {
            None => rendering,
            Some(error) => format!(
                "{rendering}\nerror: {error} (the roll stands with these dice and a total of 0, as the journal \
                 records it: docs/protocol.md §3)"
            ),
        });
    }
    let json = RollJson {
        expression: &args.expression,
        client_seed: &args.client_seed,
        nonce: args.nonce,
        commitment: seed.commitment().to_string(),
        total: rolled.total,
        dice: &rolled.dice,
        rendering,
        error,
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
