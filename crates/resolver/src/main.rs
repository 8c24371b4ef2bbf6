//! `battlelog-resolver`: the resolver's binary (battlelog_runtime::service::main).

// mimalloc: gRPC and sled allocate small buffers per request, and the
// system allocator costs about a sixth of the journal's throughput
// (BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    battlelog_runtime::service::main::<battlelog_resolver::Config>(
        "The battlelog resolver: battles' game logic over gRPC.",
    )
}
