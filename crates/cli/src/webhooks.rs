//! `battlelog webhooks parked` and `battlelog webhooks replay`: the
//! deliveries `battlelog-webhooks` parked, and putting them back in its
//! queue, over its HTTP port (`/v1/parked`, `/v1/replay`) with a `service`
//! token (`--token`, or one minted with `battlelog up`'s development key).

use anyhow::Context;
use battlelog_auth::Role;
use clap::{Args, Subcommand};
use http_body_util::BodyExt;
use serde_json::Value;

use crate::Output;

/// The port `battlelog-webhooks` and `battlelog up --webhook` listen on by default.
pub const DEFAULT_WEBHOOKS: &str = "http://127.0.0.1:50054";

#[derive(Debug, Args)]
pub struct WebhooksArgs {
    #[command(subcommand)]
    command: WebhooksCommand,
}

#[derive(Debug, Subcommand)]
enum WebhooksCommand {
    /// List the parked deliveries, by tenant, battle and version.
    Parked(Selection),
    /// Put parked deliveries back in the queue, each battle's in order.
    Replay(Selection),
}

#[derive(Debug, Args)]
struct Selection {
    /// Only this tenant's.
    #[arg(long)]
    tenant: Option<String>,
    /// Only this battle's.
    #[arg(long)]
    battle: Option<String>,
    /// The HTTP port of battlelog-webhooks.
    #[arg(long = "webhooks", env = "BATTLELOG_WEBHOOKS_URL", default_value = DEFAULT_WEBHOOKS)]
    url: String,
    #[command(flatten)]
    tls: crate::tls::TlsArgs,
}

impl Selection {
    fn query(&self) -> String {
        let pairs: Vec<String> = [("tenant", &self.tenant), ("battle", &self.battle)]
            .into_iter()
            .filter_map(|(key, value)| {
                let value = value.as_deref()?;
                Some(format!(
                    "{key}={}",
                    percent_encoding::utf8_percent_encode(value, percent_encoding::NON_ALPHANUMERIC)
                ))
            })
            .collect();
        if pairs.is_empty() { String::new() } else { format!("?{}", pairs.join("&")) }
    }
}

async fn call(args: &Selection, method: &str, path: &str) -> anyhow::Result<Value> {
    let token = args.tls.token_for(Role::Service, "battlelog-cli")?;
    let url = format!("{}{path}", args.url.trim_end_matches('/'));
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Empty<hyper::body::Bytes>>();
    let request = hyper::Request::builder()
        .method(method)
        .uri(&url)
        .header(hyper::header::AUTHORIZATION, format!("Bearer {token}"))
        .body(http_body_util::Empty::new())
        .with_context(|| format!("{url} is not a URL"))?;
    let response = client
        .request(request)
        .await
        .with_context(|| format!("cannot reach battlelog-webhooks at {} (is it running?)", args.url))?;
    let status = response.status();
    let body = response.into_body().collect().await.context("reading the answer")?.to_bytes();
    let text = String::from_utf8_lossy(&body);
    anyhow::ensure!(status.is_success(), "battlelog-webhooks answered {status}: {}", text.trim());
    serde_json::from_str(&text).context("battlelog-webhooks answered something that is not JSON")
}

fn line(entry: &Value) -> String {
    let text = |key: &str| entry[key].as_str().unwrap_or_default().to_owned();
    format!(
        "{} {} #{} {} id={} attempts={}: {}",
        text("tenant"),
        text("battle"),
        entry["version"],
        text("event_type"),
        text("webhook_id"),
        entry["attempts"],
        text("last_error")
    )
}

pub async fn run(args: &WebhooksArgs) -> anyhow::Result<Output> {
    match &args.command {
        WebhooksCommand::Parked(selection) => {
            let answer = call(selection, "GET", &format!("/v1/parked{}", selection.query())).await?;
            let entries = answer["parked"].as_array().cloned().unwrap_or_default();
            let mut lines: Vec<String> = entries.iter().map(line).collect();
            lines.push(format!("{} parked", entries.len()));
            Ok(Output::text(lines.join("\n")))
        }
        WebhooksCommand::Replay(selection) => {
            let answer = call(selection, "POST", &format!("/v1/replay{}", selection.query())).await?;
            let battles = answer["battles"].as_array().map_or(0, Vec::len);
            Ok(Output::text(format!("{} replayed, of {battles} battles", answer["replayed"])))
        }
    }
}
