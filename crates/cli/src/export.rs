//! `battlelog export`: a battle as JSON Lines (docs/protocol.md §4), ending
//! with the journal's signed head (§5), for `battlelog audit --file`
//! ([`crate::audit`]) to check with no server.

use battlelog_verify::export;
use clap::Args;

use crate::Output;
use crate::client::{self, ResolverEndpoint};
use battlelog_auth::Role;

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The battle id.
    battle: String,
    #[command(flatten)]
    resolver: ResolverEndpoint,
    #[command(flatten)]
    tls: crate::tls::TlsArgs,
}

/// The battle's events from the resolver, with the journal's signed head
/// as the trailer.
pub async fn export(args: &ExportArgs) -> anyhow::Result<Output> {
    let mut resolver = client::resolver(&args.resolver, &args.tls, Role::Reader).await?;
    let (events, signed_head) = client::read_export(&mut resolver, &args.battle).await?;
    let trailer = signed_head.as_ref().map(export::trailer_from);
    Ok(Output::text(export::write_with_trailer(&args.battle, &events, trailer.as_ref())?))
}
