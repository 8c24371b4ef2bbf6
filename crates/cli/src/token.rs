//! `battlelog token`: the operator's side of authentication — a signing key
//! pair for tokens, tokens signed with it, and the revocation list.
//!
//! The signing key stays with the operator; services get the public key
//! (`auth_keys`) and callers get tokens. A token that must stop working
//! before it expires goes on the revocation list (`revoked_tokens_file`),
//! by its id or its subject. `battlelog up` keeps a development key and
//! list under its data dir, which `--data-dir` uses.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use battlelog_auth::{Revocation, Role, SigningKey, validate_tenant};
use clap::{Args, Subcommand};

use crate::Output;

#[derive(Debug, Args)]
pub struct TokenArgs {
    #[command(subcommand)]
    command: TokenCommand,
}

#[derive(Debug, Subcommand)]
enum TokenCommand {
    /// Print a signed token on stdout.
    Issue(IssueArgs),
    /// Write a new signing key (PKCS#8 PEM, mode 0600) and its public key (`<file>.pub`).
    Keygen(KeygenArgs),
    /// Put a token id (jti) or a subject on a revocation list; services re-read it while running.
    Revoke(RevokeArgs),
}

#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("signer").required(true).args(["key", "data_dir"]))]
struct IssueArgs {
    /// forum, judge, reader or service.
    #[arg(long)]
    role: Role,
    /// The forum platform whose battles the token reaches (1–64 of [A-Za-z0-9_-]).
    #[arg(long)]
    tenant: String,
    /// Who: a forum's name, a judge's handle, a service's name (recorded in events).
    #[arg(long)]
    subject: String,
    /// How long the token is valid, e.g. 30m, 1h, 7d.
    #[arg(long, default_value = "1h", value_parser = parse_ttl)]
    ttl: Duration,
    /// The signing key (PKCS#8 PEM).
    #[arg(long)]
    key: Option<PathBuf>,
    /// The data dir of `battlelog up`: use its development signing key.
    #[arg(long)]
    data_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("what").required(true).args(["jti", "subject"]))]
#[command(group = clap::ArgGroup::new("where").required(true).args(["list", "data_dir"]))]
struct RevokeArgs {
    /// The id (jti claim) of the one token to refuse.
    #[arg(long)]
    jti: Option<String>,
    /// Refuse every token of this subject, of any tenant.
    #[arg(long)]
    subject: Option<String>,
    /// The revocation list file the services are configured with
    /// (`revoked_tokens_file`); created if missing.
    #[arg(long)]
    list: Option<PathBuf>,
    /// The data dir of `battlelog up`: its own list.
    #[arg(long)]
    data_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct KeygenArgs {
    /// Where to write the signing key; the public key goes to `<file>.pub`.
    #[arg(long)]
    out: PathBuf,
}

/// The longest token this command issues: a year. Longer-lived secrets are
/// a rotation waiting to fail.
const MAX_TTL: Duration = Duration::from_secs(366 * 24 * 3600);

fn parse_ttl(text: &str) -> Result<Duration, String> {
    let (number, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len()));
    let count: u64 = number.parse().map_err(|_| format!("{text:?} is not a duration like 30m, 1h or 7d"))?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("{text:?}: the unit must be s, m, h or d")),
    };
    let ttl = Duration::from_secs(count.saturating_mul(seconds));
    if ttl.is_zero() || ttl > MAX_TTL {
        return Err(format!("{text:?} must be more than 0 and at most 366d"));
    }
    Ok(ttl)
}

pub fn run(args: &TokenArgs) -> anyhow::Result<Output> {
    match &args.command {
        TokenCommand::Issue(args) => issue(args),
        TokenCommand::Keygen(args) => keygen(args),
        TokenCommand::Revoke(args) => revoke(args),
    }
}

fn revoke(args: &RevokeArgs) -> anyhow::Result<Output> {
    let entry = match (&args.jti, &args.subject) {
        (Some(jti), _) => Revocation::token_id(jti).map_err(|e| anyhow::anyhow!("--jti: {e}"))?,
        (None, Some(subject)) => Revocation::subject(subject).map_err(|e| anyhow::anyhow!("--subject: {e}"))?,
        (None, None) => anyhow::bail!("--jti or --subject is required"),
    };
    let list = match (&args.list, &args.data_dir) {
        (Some(list), _) => list.clone(),
        (None, Some(data_dir)) => {
            anyhow::ensure!(
                crate::dev_token::dev_signing_key(data_dir).is_file(),
                "no development stack in {}: run `battlelog up` first",
                data_dir.display()
            );
            crate::dev_token::dev_revoked_tokens(data_dir)
        }
        (None, None) => anyhow::bail!("--list or --data-dir is required"),
    };
    let added = battlelog_auth::revoke::append(&list, &entry)?;
    let what = match &entry {
        Revocation::TokenId(id) => format!("token id {id}"),
        Revocation::Subject(subject) => format!("every token of subject {subject:?}"),
    };
    Ok(Output::text(if added {
        format!("revoked {what} in {}; services re-read it within revoked_tokens_reload_ms", list.display())
    } else {
        format!("{what} was already revoked in {}", list.display())
    }))
}

fn issue(args: &IssueArgs) -> anyhow::Result<Output> {
    validate_tenant(&args.tenant).context("--tenant")?;
    anyhow::ensure!(
        !args.subject.is_empty() && args.subject.len() <= battlelog_auth::claims::MAX_SUBJECT_BYTES,
        "--subject must be 1 to {} bytes",
        battlelog_auth::claims::MAX_SUBJECT_BYTES
    );
    anyhow::ensure!(!args.subject.chars().any(char::is_control), "--subject must not hold control characters");
    let path = match (&args.key, &args.data_dir) {
        (Some(key), _) => key.clone(),
        (None, Some(data_dir)) => crate::dev_token::dev_signing_key(data_dir),
        (None, None) => anyhow::bail!("--key or --data-dir is required"),
    };
    let key = SigningKey::read(&path).with_context(|| {
        if args.data_dir.is_some() { "no development key there yet: run `battlelog up` first" } else { "--key" }
    })?;
    Ok(Output::text(key.issue(&args.subject, &args.tenant, args.role, args.ttl)?))
}

fn keygen(args: &KeygenArgs) -> anyhow::Result<Output> {
    anyhow::ensure!(!args.out.exists(), "{} exists; a signing key is never overwritten", args.out.display());
    let key = SigningKey::generate()?;
    key.write(&args.out)?;
    Ok(Output::text(format!(
        "signing key {} (keep it secret), public key {} (give it to the services as auth_keys), kid {}",
        args.out.display(),
        battlelog_auth::keys::public_path(&args.out).display(),
        key.kid()
    )))
}

#[cfg(test)]
mod tests {
    use super::parse_ttl;
    use std::time::Duration;

    #[test]
    fn durations_read_as_operators_write_them() {
        assert_eq!(parse_ttl("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_ttl("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(parse_ttl("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_ttl("7d"), Ok(Duration::from_secs(7 * 86_400)));
        for bad in ["", "h", "1", "1w", "0h", "400d", "-1h", "1.5h"] {
            assert!(parse_ttl(bad).is_err(), "{bad:?}");
        }
    }
}
