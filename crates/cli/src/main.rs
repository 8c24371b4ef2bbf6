//! `battlelog`: the command line of battlelog.
//!
//! - [`roll`]: `roll` and `commitment`, the offline verifier of docs/protocol.md §1–3,
//!   and `roller-key`, the key that signs commitments.
//! - [`rules`]: `rules play`, a battle script played offline through docs/rules.md.
//! - [`up`]: the whole stack in one process; [`demo`]: a battle of every
//!   ruleset played against it.
//! - [`export`], [`audit`] and [`replay`]: `export`, `audit` and `replay`,
//!   for judges.
//! - [`checkpoint`]: `checkpoint` (print, `verify`), the journal's signed
//!   checkpoints (docs/protocol.md §5); [`log_key`]: `log-key` (print,
//!   `generate`), the key they are signed with.
//! - [`watch`]: the live feed of committed events.
//! - [`client`]: endpoints of a running stack, and a failed call's message.
//! - [`endpoints`]: the data dir's lock of a running `up` and the endpoints
//!   file it writes, which the other commands read.
//! - [`tls`]: `up --tls` and the client side of `https://` endpoints;
//!   [`dev_token`]: the development tokens of `up`, and the one a command
//!   calls with when given none.
//! - [`token`]: `token issue`, `token keygen` and `token revoke`, for operators.
//! - [`journal`]: `journal copy`, a journal from one store to another (sled to JetStream).
//! - [`webhooks`]: `webhooks parked` and `webhooks replay`, for operators of battlelog-webhooks.
//! - [`beacon`]: `beacon`, the development beacon of protocol v2 on its own.
//!
//! Every failure exits with status 2 and one line on stderr that names the
//! problem; stdout then stays empty, so a script never mistakes a half
//! answer for a result.

mod audit;
mod beacon;
mod checkpoint;
mod client;
#[cfg(test)]
mod config_doc;
mod demo;
mod dev_token;
mod endpoints;
mod export;
mod journal;
mod log_key;
mod replay;
mod roll;
mod rules;
mod tls;
mod token;
mod up;
mod watch;
mod webhooks;

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

// mimalloc: gRPC and sled allocate small buffers per request, and the
// system allocator costs about a sixth of the journal's throughput
// (BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(name = "battlelog", version, about = "Provably fair dice and battle resolution for play-by-post forums")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Re-derive one roll from its seeds and nonce (docs/protocol.md §2–3) and print it.
    Roll(roll::RollArgs),
    /// Print the commitment (SHA-256, hex) of a server seed.
    Commitment(roll::CommitmentArgs),
    /// Print the public key (hex) that signs a roller's commitments, from its master key file.
    RollerKey(roll::RollerKeyArgs),
    /// Resolve battle actions under docs/rules.md offline (`rules play --script FILE`).
    Rules(rules::RulesArgs),
    /// Run the whole stack in this process: journal, roller and resolver on loopback.
    Up(up::UpArgs),
    /// Play a short battle of every ruleset against a running stack and print the forum posts.
    Demo(demo::DemoArgs),
    /// Print a battle as JSON Lines (docs/protocol.md §4) for auditing.
    Export(export::ExportArgs),
    /// Audit a battle (from the journal, or an export with --file): exit 0 only when it verifies
    /// against a pinned roller key (see the exit statuses below).
    #[command(after_help = audit::AUDIT_EXIT_CODES)]
    Audit(Box<audit::AuditArgs>),
    /// Print the journal's newest signed checkpoint (docs/protocol.md §5), to keep; `checkpoint verify
    /// --old OLD --new NEW` checks that a newer one extends a kept one.
    Checkpoint(Box<checkpoint::CheckpointArgs>),
    /// Print the journal's log key (the verifier key checkpoints are signed with); `log-key generate
    /// --origin O --out FILE` makes a new private one for an operator.
    LogKey(Box<log_key::LogKeyArgs>),
    /// Show a battle replayed to a version: its events and the state then.
    Replay(replay::ReplayArgs),
    /// Follow committed events live (NATS, or the journal).
    Watch(watch::WatchArgs),
    /// Issue and revoke bearer tokens, and make the key pair that signs them.
    Token(token::TokenArgs),
    /// Operate on a journal's log itself: `journal copy --from sled:DIR --to jetstream:URL`.
    Journal(journal::JournalArgs),
    /// The deliveries battlelog-webhooks parked: `webhooks parked`, `webhooks replay [--tenant T] [--battle B]`.
    Webhooks(webhooks::WebhooksArgs),
    /// Serve a development randomness beacon (protocol v2, drand's HTTP API) from a key of its own;
    /// prints the chain info to pin. For machines without the internet and tests, never production.
    Beacon(beacon::BeaconArgs),
}

/// What a command prints on stdout, and the exit status.
#[derive(Debug)]
pub struct Output {
    pub stdout: String,
    pub code: u8,
}

impl Output {
    pub fn text(text: impl Into<String>) -> Self {
        Self { stdout: text.into(), code: 0 }
    }
}

fn block_on<F: Future<Output = anyhow::Result<Output>>>(command: F) -> anyhow::Result<Output> {
    tokio::runtime::Builder::new_multi_thread().enable_all().build()?.block_on(command)
}

/// Exit status for every invalid input or failed command.
const EXIT_FAILURE: u8 = 2;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) if err.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            return fail("a command is needed, e.g. `battlelog up` or `battlelog demo`; see `battlelog --help`");
        }
        Err(err) if !err.use_stderr() => {
            // --help and --version: print them as clap would.
            let _ = err.print();
            return ExitCode::SUCCESS;
        }
        // clap spreads one problem over several lines (the message, the
        // argument, usage): keep the part before the usage, on one line.
        Err(err) => {
            let text = err.to_string();
            let problem = text.split("\n\nUsage").next().unwrap_or_default();
            return fail(&problem.split_whitespace().collect::<Vec<_>>().join(" "));
        }
    };
    let output = match cli.command {
        Command::Roll(args) => roll::roll(&args).map(Output::text),
        Command::Commitment(args) => roll::commitment(&args).map(Output::text),
        Command::RollerKey(args) => roll::roller_key(&args).map(Output::text),
        Command::Rules(args) => rules::run(&args).map(Output::text),
        Command::Up(args) => block_on(up::up(&args)),
        Command::Demo(args) => block_on(demo::demo(&args)),
        Command::Export(args) => block_on(export::export(&args)),
        Command::Audit(args) => block_on(audit::audit_command(&args)),
        Command::Replay(args) => block_on(replay::replay(&args)),
        Command::Checkpoint(args) => block_on(checkpoint::checkpoint(&args)),
        Command::LogKey(args) => block_on(log_key::log_key(&args)),
        Command::Watch(args) => block_on(watch::watch(&args)),
        Command::Token(args) => token::run(&args),
        Command::Journal(args) => block_on(journal::run(&args)),
        Command::Webhooks(args) => block_on(webhooks::run(&args)),
        Command::Beacon(args) => block_on(beacon::run(&args)),
    };
    match output {
        Ok(output) => {
            let mut stdout = std::io::stdout().lock();
            if !output.stdout.is_empty() && writeln!(stdout, "{}", output.stdout).and_then(|()| stdout.flush()).is_err()
            {
                return ExitCode::from(EXIT_FAILURE);
            }
            ExitCode::from(output.code)
        }
        Err(err) => fail(&format!("{err:#}")),
    }
}

/// Prints the first line of `message` (clap adds usage lines) and fails.
fn fail(message: &str) -> ExitCode {
    let line = message.lines().find(|l| !l.trim().is_empty()).unwrap_or("failed");
    let line = line.strip_prefix("error: ").unwrap_or(line);
    eprintln!("battlelog: {line}");
    ExitCode::from(EXIT_FAILURE)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        super::Cli::command().debug_assert();
    }
}
