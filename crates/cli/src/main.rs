//! `battlelog`: the command line of battlelog.
//!
//! - [`roll`]: `roll` and `commitment`, the offline verifier of PROTOCOL.md §1–3.
//! - [`rules`]: `rules play`, a battle script played offline through RULES.md.
//!
//! Every failure exits with status 2 and one line on stderr that names the
//! problem; stdout then stays empty, so a script never mistakes a half
//! answer for a result.

mod roll;
mod rules;

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "battlelog", version, about = "Provably fair dice and battle resolution for play-by-post forums")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Re-derive one roll from its seeds and nonce (PROTOCOL.md §2–3) and print it.
    Roll(roll::RollArgs),
    /// Print the commitment (SHA-256, hex) of a server seed.
    Commitment(roll::CommitmentArgs),
    /// Resolve battle actions under RULES.md offline (`rules play --script FILE`).
    Rules(rules::RulesArgs),
}

/// Exit status for every invalid input or failed command.
const EXIT_FAILURE: u8 = 2;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
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
        Command::Roll(args) => roll::roll(&args),
        Command::Commitment(args) => roll::commitment(&args),
        Command::Rules(args) => rules::run(&args),
    };
    match output {
        Ok(text) => {
            let mut stdout = std::io::stdout().lock();
            if writeln!(stdout, "{text}").and_then(|()| stdout.flush()).is_err() {
                return ExitCode::from(EXIT_FAILURE);
            }
            ExitCode::SUCCESS
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
