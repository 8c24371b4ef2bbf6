//! `battlelog demo`: plays a short battle of every ruleset through the gRPC
//! API of a running stack, as a forum would, closes them, and prints the
//! posts a forum would make — the very `post` of each reply (the open's,
//! every action's, the close's), in Russian and English, in plain text —
//! each battle with the link to its web page when the resolver gives one.
//! It ends with one line per battle: the command that exports it, for
//! `battlelog audit --file`.

use std::fmt::Write;

use battlelog_auth::{AuthChannel, Role};
use battlelog_proto::battle::{json_to_struct, struct_to_json};
use battlelog_proto::v1::resolver_client::ResolverClient;
use battlelog_proto::v1::{ActRequest, CloseRequest, OpenBattleRequest, Post, PostFormat};
use clap::Args;
use serde_json::{Value, json};

use crate::Output;
use crate::client::{self, ResolverEndpoint};

#[derive(Debug, Args)]
pub struct DemoArgs {
    #[command(flatten)]
    resolver: ResolverEndpoint,
    #[command(flatten)]
    tls: crate::tls::TlsArgs,
}

struct Demo {
    title: &'static str,
    ruleset: &'static str,
    participants: Value,
    /// Actions in order; `"against": "@N"` refers to the version of the
    /// N-th action's resolution.
    actions: Vec<Value>,
}

fn battles() -> Vec<Demo> {
    vec![
        Demo {
            title: "Pikachu vs Meowth",
            ruleset: "pokemon-d6@2",
            participants: json!([{"id": "pikachu"}, {"id": "meowth"}]),
            actions: vec![
                json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Thunderbolt", "power": 90, "effect": "paralysis"}),
                // Answers the Thunderbolt: its damage and priority come from it.
                json!({"type": "dodge", "actor": "meowth", "against": "@0"}),
                json!({"type": "attack", "actor": "meowth", "target": "pikachu", "move": "Fake Out", "power": 40, "interrupt": true, "priority": true}),
                json!({"type": "status_move", "actor": "pikachu", "target": "meowth", "move": "Thunder Wave", "status": "paralysis"}),
                json!({"type": "roll", "actor": "ash", "expression": "1d20+2", "purpose": "Pokédex check"}),
            ],
        },
        Demo {
            title: "The duel at the tower",
            ruleset: "arcana-2d10@2",
            participants: json!([
                {"id": "mage", "abilities": {"fireball": {"per_episode": 2, "min_points": 5}}},
                {"id": "knight", "abilities": {"shield": {"per_episode": 3, "magical": false}}}
            ]),
            actions: vec![
                json!({"type": "cast", "actor": "mage", "ability": "fireball", "skill_points": 8, "post": "post-1"}),
                json!({"type": "defend", "actor": "knight", "ability": "shield", "skill_points": 6, "post": "post-2", "against": "@0"}),
                json!({"type": "start_episode"}),
            ],
        },
        Demo {
            title: "Berserk: the bridge",
            ruleset: "berserk@1",
            participants: json!([{"id": "gnome"}, {"id": "troll"}]),
            actions: vec![
                json!({"type": "strike", "kind": "simple",
                       "attacker": {"id": "gnome", "strike": [1, 2, 3], "attack_experience": 1},
                       "defender": {"id": "troll", "strike": [2, 3, 4]}}),
                json!({"type": "effect", "actor": "gnome", "values": [1, 2, 3]}),
            ],
        },
        Demo {
            title: "Trainers at Cerulean",
            ruleset: "pbta-2d6@1",
            participants: json!([{"id": "misty", "traits": {"cool": 1, "grace": 2}}, {"id": "brock", "traits": {"grit": 2}}]),
            actions: vec![
                json!({"type": "move", "actor": "misty", "trait": "grace", "helpers": ["brock"], "stakes": "cross the rapids"}),
                json!({"type": "move", "actor": "brock", "trait": "grit", "stakes": "hold the door"}),
            ],
        },
    ]
}

fn object(value: &Value) -> prost_types::Struct {
    json_to_struct(&value.as_object().cloned().unwrap_or_default())
}

/// Replaces `"@N"` references with the version of the N-th action.
fn resolve_references(action: &Value, versions: &[u64]) -> Value {
    let mut action = action.clone();
    if let Some(fields) = action.as_object_mut() {
        for value in fields.values_mut() {
            if let Some(index) = value.as_str().and_then(|s| s.strip_prefix('@')).and_then(|n| n.parse::<usize>().ok())
                && let Some(version) = versions.get(index)
            {
                *value = json!(version);
            }
        }
    }
    action
}

async fn play(
    resolver: &mut ResolverClient<AuthChannel>,
    demo: &Demo,
    run: &str,
    out: &mut String,
) -> anyhow::Result<String> {
    let participants = demo.participants.as_array().map(|p| p.iter().map(object).collect()).unwrap_or_default();
    let opened = resolver
        .open_battle(OpenBattleRequest {
            ruleset: demo.ruleset.into(),
            title: demo.title.into(),
            forum_ref: format!("forum:demo/{run}"),
            participants,
            client_seed: format!("forum:demo/{run}/{}", demo.ruleset),
            request_id: format!("{run}-{}-open", demo.ruleset),
            battle_id: String::new(),
            post_format: PostFormat::Plain.into(),
        })
        .await
        .map_err(|s| anyhow::anyhow!("open {}: {}", demo.ruleset, client::status_message(&s)))?
        .into_inner();
    let battle_id = opened.battle_id;
    writeln!(out, "\n=== {} ({}) — battle {battle_id}", demo.title, demo.ruleset)?;
    write_post(out, opened.post.as_ref())?;

    let mut versions = Vec::new();
    for (i, action) in demo.actions.iter().enumerate() {
        let action = resolve_references(action, &versions);
        let request = ActRequest {
            battle_id: battle_id.clone(),
            action: Some(object(&action)),
            request_id: format!("{run}-{}-{i}", demo.ruleset),
            post_format: PostFormat::Plain.into(),
        };
        match resolver.act(request).await {
            Ok(response) => {
                let response = response.into_inner();
                versions.push(response.version);
                writeln!(out, "\n[#{}] {}", response.version, action["type"].as_str().unwrap_or("action"))?;
                write_post(out, response.post.as_ref())?;
                // What a forum's code reads, beside the post it pastes.
                let outcome = response
                    .resolved
                    .and_then(|resolved| resolved.outcome)
                    .map(|s| Value::Object(struct_to_json(&s)))
                    .unwrap_or(Value::Null);
                writeln!(out, "  outcome: {outcome}")?;
            }
            Err(status) => {
                versions.push(0);
                writeln!(
                    out,
                    "\n[rejected] {}: {}",
                    action["type"].as_str().unwrap_or("action"),
                    client::status_message(&status)
                )?;
            }
        }
    }
    let closed = resolver
        .close(CloseRequest {
            battle_id: battle_id.clone(),
            by: "demo judge".into(),
            reason: "the demo is over".into(),
            request_id: format!("{run}-{}-close", demo.ruleset),
            post_format: PostFormat::Plain.into(),
        })
        .await
        .map_err(|s| anyhow::anyhow!("close {battle_id}: {}", client::status_message(&s)))?
        .into_inner();
    writeln!(out, "\n[close]")?;
    write_post(out, closed.post.as_ref())?;
    // The whole battle's page, not the close's place on it: the link a forum
    // puts at the top of the thread.
    if let Some(page) = page_link(&closed.permalink) {
        writeln!(out, "\nPage / Страница: {page}")?;
    }
    Ok(battle_id)
}

pub async fn demo(args: &DemoArgs) -> anyhow::Result<Output> {
    // The demo is a forum: it opens, acts and closes (with a development
    // token of tenant `dev`, unless --token gives one).
    let mut resolver = client::resolver(&args.resolver, &args.tls, Role::Forum).await?;
    let run = format!("demo-{}", uuid_like());
    let mut out = String::new();
    let mut battle_ids = Vec::new();
    for demo in battles() {
        battle_ids.push(play(&mut resolver, &demo, &run, &mut out).await?);
    }
    writeln!(out, "\nExport a battle, then audit the export offline (no server needed), against the roller key")?;
    writeln!(
        out,
        "the operator publishes (`battlelog up` prints it; `battlelog roller-key` reads it from a master key):"
    )?;
    writeln!(out, "  battlelog export BATTLE > BATTLE.jsonl && battlelog audit --file BATTLE.jsonl --roller-key KEY")?;
    // Spell out a resolver that is not the default one, so the lines work as pasted.
    // (One found through the running `up` is found again the same way.)
    let resolver = match &args.resolver.resolver_url {
        Some(url) if url != client::DEFAULT_RESOLVER => format!(" --resolver {url}"),
        _ => String::new(),
    };
    let tls = args.tls.flags();
    for battle_id in &battle_ids {
        write!(out, "\nbattlelog export {battle_id}{resolver}{tls}")?;
    }
    Ok(Output::text(out.trim_start()))
}

/// The reply's post as a forum would paste it: the Russian text, then the
/// English, each line indented under the action it tells of.
fn write_post(out: &mut String, post: Option<&Post>) -> std::fmt::Result {
    let Some(post) = post else {
        return writeln!(out, "  (the resolver sent no post)");
    };
    for text in [&post.ru, &post.en].into_iter().filter(|text| !text.is_empty()) {
        writeln!(out)?;
        for line in text.lines() {
            writeln!(out, "  {line}")?;
        }
    }
    Ok(())
}

/// A permalink without its `#v…` fragment; none when the resolver links to
/// no web page.
fn page_link(permalink: &str) -> Option<&str> {
    let page = permalink.split_once('#').map_or(permalink, |(page, _)| page);
    (!page.is_empty()).then_some(page)
}

/// A run id unique enough for request ids: the clock in nanoseconds.
fn uuid_like() -> String {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or_default();
    format!("{nanos:x}")
}

#[cfg(test)]
mod tests {
    use super::page_link;

    #[test]
    fn the_page_link_is_the_permalink_without_its_fragment() {
        assert_eq!(
            page_link("http://127.0.0.1:8080/battles/b-1?k=abc#v12"),
            Some("http://127.0.0.1:8080/battles/b-1?k=abc")
        );
        assert_eq!(page_link("http://w/battles/b-1?k=abc"), Some("http://w/battles/b-1?k=abc"));
        assert_eq!(page_link(""), None, "no web service: no line");
    }
}
