//! `battlelog beacon`: the development beacon of protocol v2
//! (docs/protocol.md §6.1) on its own — drand's HTTP API and scheme from a
//! key derived from a label, for machines without the internet and for
//! tests. It prints the chain info a verifier pins, then its readiness
//! line, and serves until interrupted. Production pins quicknet instead.

use std::net::SocketAddr;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context;
use battlelog_roller::beacon::DevBeacon;
use clap::Args;

/// The label the development key derives from when none is given. Anyone
/// can derive it: a development beacon proves nothing to a stranger.
pub const DEFAULT_LABEL: &str = "battlelog development beacon";

#[derive(Debug, Args)]
pub struct BeaconArgs {
    /// Where to serve drand's HTTP API (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Seconds between rounds (1 to 3600).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=3600))]
    period: u64,
    /// Unix seconds of round 1 (default: now).
    #[arg(long)]
    genesis_time: Option<u64>,
    /// The text the beacon's key derives from (SHA-256, mod the group order).
    #[arg(long, default_value = DEFAULT_LABEL)]
    label: String,
}

pub async fn run(args: &BeaconArgs) -> anyhow::Result<crate::Output> {
    let genesis =
        args.genesis_time.unwrap_or_else(|| SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()));
    let beacon = DevBeacon::new(&args.label, args.period, genesis);
    let (address, serving) =
        beacon.clone().spawn(args.listen).await.with_context(|| format!("--listen {}: cannot listen", args.listen))?;
    // The chain info first, as one JSON line: what `roller` and `audit` pin.
    println!("{}", serde_json::to_string(beacon.chain())?);
    battlelog_runtime::announce("battlelog-beacon", address)?;
    tokio::select! {
        served = serving => served.context("the beacon's server task")?.context("serving the beacon")?,
        () = battlelog_runtime::shutdown_signal() => {}
    }
    Ok(crate::Output::text(""))
}
