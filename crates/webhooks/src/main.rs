//! `battlelog-webhooks`: the webhooks' binary (battlelog_runtime::service::main).

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    battlelog_runtime::service::main::<battlelog_webhooks::Config>(
        "The battlelog webhooks: committed events POSTed to each tenant's endpoint, signed, in order.",
    )
}
