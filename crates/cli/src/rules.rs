//! `battlelog rules play`: plays a JSON Lines battle script offline through
//! the rules engine. The playing itself is `rules::script`; this module only
//! reads the file or stdin. `battlelog rules schemas` writes every ruleset
//! version's JSON Schemas (`rules::schema`) as files.

use std::io::Read;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct RulesArgs {
    #[command(subcommand)]
    command: RulesCommand,
}

#[derive(Debug, Subcommand)]
enum RulesCommand {
    /// Play a battle script offline: what would these dice have meant?
    #[command(after_long_help = PLAY_HELP)]
    Play(PlayArgs),
    /// Write every ruleset version's JSON Schemas (draft 2020-12):
    /// OUT/<ruleset@version>/{sheet,action,outcome}.schema.json, the same
    /// documents ListRulesets returns. The repository keeps them in
    /// docs/schemas (`battlelog rules schemas --out docs/schemas`).
    Schemas(SchemasArgs),
}

#[derive(Debug, Args)]
struct SchemasArgs {
    /// The directory to write into (created if missing).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

#[derive(Debug, Args)]
struct PlayArgs {
    /// The script, JSON Lines; `-` reads it from stdin.
    #[arg(long, value_name = "FILE")]
    script: PathBuf,
}

const PLAY_HELP: &str = r#"Script format (JSON Lines):
  first line:   {"open": {"ruleset": "pokemon-d6@1", "participants": [{"id": "pikachu"}, {"id": "meowth"}]}}
  then one per action:
                {"action": {"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Tackle"}, "dice": [4]}
Dice are the faces in draw order. Blank lines are skipped. `against` and
`refers_to` are the 0-based index of the referred action line (rejected lines
count too). Rulesets: pokemon-d6@1, pokemon-d6@2, arcana-2d10@1,
arcana-2d10@2, berserk@1, berserk@2, pbta-2d6@1, pbta-2d6@2; under
pokemon-d6@2 a dodge names the attack it answers, e.g.
{"type": "dodge", "actor": "meowth", "against": 0}, and under berserk@2 the
side that rolled higher answers a strike awaiting its choice, e.g.
{"type": "exchange_choice", "actor": "b", "against": 3, "avoid": true}.

Output: exactly one JSON line per action line, in order:
  {"outcome": {...}, "summary_ru": "...", "summary_en": "..."}
  {"rejected": "reason"}   the rules forbid the action, or cannot read it
                           (an unknown type or field, a value out of range:
                           "action.against: invalid value: ...", naming the
                           field as the resolver does); the state is unchanged
  {"error": "..."}         the dice do not fit the action (too few, too many,
                           a face out of range); the state is unchanged
and exit status 0.

A line that is not a script line (bad JSON, no "action", a field other than
"action" and "dice", dice that are not integers, a missing or invalid open
line) or an unreadable file fails the whole run: exit status 2, nothing on
stdout, one line on stderr naming the line number."#;

pub fn run(args: &RulesArgs) -> anyhow::Result<String> {
    match &args.command {
        RulesCommand::Play(play) => play_script(play),
        RulesCommand::Schemas(schemas) => write_schemas(schemas),
    }
}

fn write_schemas(args: &SchemasArgs) -> anyhow::Result<String> {
    let mut written = 0;
    for ruleset in ::rules::RulesetId::ALL {
        let dir = args.out.join(ruleset.as_str());
        std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for (name, text) in ::rules::schema::for_ruleset(ruleset).files() {
            let path = dir.join(name);
            std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
            written += 1;
        }
    }
    Ok(format!("wrote {written} schemas under {}", args.out.display()))
}

fn play_script(args: &PlayArgs) -> anyhow::Result<String> {
    let text = if args.script.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).context("cannot read the script from stdin")?;
        text
    } else {
        std::fs::read_to_string(&args.script)
            .with_context(|| format!("cannot read the script {}", args.script.display()))?
    };
    let lines = ::rules::script::play(&text).context("rules play")?;
    let json: Vec<String> = lines.iter().map(serde_json::to_string).collect::<Result<_, _>>()?;
    Ok(json.join("\n"))
}
